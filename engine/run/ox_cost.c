/* ox_cost.c - estimated cost of nodes from their metas and the op table (ox_cost.h,
 * docs/cost-model.md). Pure: reads the graph, never changes it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "ops/ox_interp.h"
#include "ops/ox_ops.h"
#include "ops/ox_shape.h"
#include "run/ox_cost.h"

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static uint64_t sat_mul(uint64_t a, uint64_t b) {
  if (a && b > UINT64_MAX / a) return UINT64_MAX;
  return a * b;
}

/* Elements of a tensor meta; false when the shape is unknown or symbolic. */
static bool tm_numel(const OxTensorMeta *t, uint64_t *out) {
  if (!t || t->rank < 0) return false;
  uint64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->shape[i].sym || t->shape[i].v < 0) return false;
    n = sat_mul(n, (uint64_t)t->shape[i].v);
  }
  *out = n;
  return true;
}

static bool tm_bytes(const OxTensorMeta *t, uint64_t *out) {
  uint64_t n;
  size_t es = t ? ox_dtype_size(t->dtype) : 0;
  if (!es || !tm_numel(t, &n)) return false;
  *out = sat_mul(n, es);
  return true;
}

/* Bytes of a node's value: tensors at their size, scalars and SymInts 0; false if unknown. */
static bool meta_bytes(const OxMeta *m, uint64_t *out) {
  *out = 0;
  switch (m->kind) {
  case OX_META_SYMINT:
  case OX_META_SCALAR: return true;
  case OX_META_TENSOR:
  case OX_META_TUPLE:
    if (!m->t || !m->n) return false;
    for (uint32_t i = 0; i < m->n; i++) {
      uint64_t b;
      if (!tm_bytes(&m->t[i], &b)) return false;
      *out = sat_add(*out, b);
    }
    return true;
  default: return false;
  }
}

static bool meta_numel(const OxMeta *m, uint64_t *out) {
  *out = 0;
  if ((m->kind != OX_META_TENSOR && m->kind != OX_META_TUPLE) || !m->t || !m->n) return false;
  for (uint32_t i = 0; i < m->n; i++) {
    uint64_t e;
    if (!tm_numel(&m->t[i], &e)) return false;
    *out = sat_add(*out, e);
  }
  return true;
}

static const OxTensorMeta *node_tm(const OxGraph *g, OxNodeId id) {
  const OxNode *n = ox_graph_node(g, id);
  return n ? ox_node_tensor_meta(n) : NULL;
}

static const OxTensorMeta *slot_tm(const OxGraph *g, const OxValue *v) {
  return v && v->kind == OX_V_NODE ? node_tm(g, v->u.node) : NULL;
}

static bool slot_int(const OxValue *v, int64_t *out) {
  if (!v || v->kind != OX_V_INT) return false;
  *out = v->u.i;
  return true;
}

/* The op table answers for live nodes only; a tombstone of the open step (its args and meta
 * intact) is read through a copy of it that is not marked erased. */
static const OxNode *readable(const OxNode *n, OxNode *tmp) {
  if (!n || !n->erased) return n;
  *tmp = *n;
  tmp->erased = false;
  return tmp;
}

/* ---------------------------------------------------------------- contiguity */

/* From recorded strides: whether they differ from the contiguous ones (size-1 dims ignored).
 * -1 = no strides recorded (or a symbolic size). */
static int strides_noncontig(const OxTensorMeta *t) {
  if (!t || !t->has_stride || t->rank < 0) return -1;
  int64_t want = 1;
  for (int32_t i = t->rank; i-- > 0;) {
    if (t->shape[i].sym || t->stride[i].sym) return -1;
    if (t->shape[i].v != 1 && t->stride[i].v != want) return 1;
    want *= t->shape[i].v;
  }
  return 0;
}

/* Elements before dim d of tensor t (1 when none): a slice along d of a tensor with more than
 * one of them is not contiguous. */
static bool leading_gt1(const OxTensorMeta *t, int64_t d) {
  if (!t || t->rank < 0) return false;
  if (d < 0) d += t->rank;
  int64_t p = 1;
  for (int64_t i = 0; i < d && i < t->rank; i++) p *= t->shape[i].sym ? 2 : t->shape[i].v;
  return p > 1;
}

/* Whether node id's value is (probably) not contiguous: its recorded strides say so, or it is
 * a permuting or expanding view, or a piece along a non-leading dim (a getitem of a split,
 * chunk or unbind; a slice, narrow or select), or a shape view of such a value. Without strides
 * anything else counts as contiguous. */
static bool noncontig(const OxGraph *g, OxNodeId id, int depth) {
  OxNode tmp, tmp2;
  const OxNode *n = readable(ox_graph_node(g, id), &tmp);
  if (!n || depth > 16) return false;
  int s = strides_noncontig(ox_node_tensor_meta(n));
  if (s >= 0) return s == 1;
  OxOpId op = ox_op_of_node(g, n, NULL);
  if (op == OX_OPID_NONE) return false;
  OxOpArgs a;
  char err[160];
  if (ox_op_normalize(g, n, &a, err, sizeof err) != 0) return false;
  int64_t d = 0;
  switch (op) {
  case OX_OPID_PERMUTE:
  case OX_OPID_TRANSPOSE:
  case OX_OPID_MOVEDIM:
  case OX_OPID_EXPAND: return true;
  case OX_OPID_T: {
    const OxTensorMeta *t = slot_tm(g, a.slot[0]);
    return !t || t->rank >= 2;
  }
  case OX_OPID_SLICE:
  case OX_OPID_NARROW:
  case OX_OPID_SELECT:
    if (!slot_int(a.slot[1], &d)) return false;
    return leading_gt1(slot_tm(g, a.slot[0]), d) || (a.slot[0]->kind == OX_V_NODE && noncontig(g, a.slot[0]->u.node, depth + 1));
  case OX_OPID_GETITEM: {
    if (!a.slot[0] || a.slot[0]->kind != OX_V_NODE) return false;
    const OxNode *src = readable(ox_graph_node(g, a.slot[0]->u.node), &tmp2);
    OxOpId sop = src ? ox_op_of_node(g, src, NULL) : OX_OPID_NONE;
    if (sop != OX_OPID_SPLIT && sop != OX_OPID_SPLIT_WITH_SIZES && sop != OX_OPID_CHUNK && sop != OX_OPID_UNBIND)
      return false;
    OxOpArgs sa;
    if (ox_op_normalize(g, src, &sa, err, sizeof err) != 0) return false;
    int dslot = sop == OX_OPID_UNBIND ? 1 : 2;
    if (!slot_int(sa.slot[dslot], &d)) return false;
    const OxTensorMeta *t = slot_tm(g, sa.slot[0]);
    return leading_gt1(t, d) || (sa.slot[0]->kind == OX_V_NODE && noncontig(g, sa.slot[0]->u.node, depth + 1));
  }
  case OX_OPID_VIEW:
  case OX_OPID_SQUEEZE:
  case OX_OPID_UNSQUEEZE:
  case OX_OPID_DETACH:
    return a.slot[0] && a.slot[0]->kind == OX_V_NODE && noncontig(g, a.slot[0]->u.node, depth + 1);
  default: return false;
  }
}

/* ---------------------------------------------------------------- one node */

/* The distinct node inputs of one node: a linear scan while there are few, then a hash set
 * (a cat of 300 inputs scanned its list once per input: ~45k comparisons, 7% of the cost
 * model's time at 100k nodes). */
typedef struct {
  OxNodeId *ids; /* local until it outgrows it, then malloc'ed */
  OxNodeId local[16];
  uint32_t n, cap;
  uint32_t *table; /* ids + 1, 0 = empty; NULL while n <= 16 */
  uint32_t mask;
} InputSet;

static bool input_table_add(InputSet *s, OxNodeId id) {
  uint32_t h = (id * 2654435761u) & s->mask;
  while (s->table[h]) {
    if (s->table[h] == id + 1) return false;
    h = (h + 1) & s->mask;
  }
  s->table[h] = id + 1;
  return true;
}

static void input_cb(OxNodeId id, void *data) {
  InputSet *s = data;
  if (s->table) {
    if (!input_table_add(s, id)) return;
  } else {
    for (uint32_t i = 0; i < s->n; i++)
      if (s->ids[i] == id) return;
  }
  if (s->n == s->cap) {
    s->cap *= 2;
    if (s->ids == s->local) {
      s->ids = ox_xrealloc(NULL, s->cap * sizeof *s->ids);
      memcpy(s->ids, s->local, sizeof s->local);
    } else {
      s->ids = ox_xrealloc(s->ids, s->cap * sizeof *s->ids);
    }
    /* (re)build the table at 4x the capacity: load <= 1/4 */
    free(s->table);
    s->mask = s->cap * 4 - 1;
    s->table = ox_xcalloc(s->cap * 4, sizeof *s->table);
    for (uint32_t i = 0; i < s->n; i++) input_table_add(s, s->ids[i]);
    if (!input_table_add(s, id)) return; /* not reached: id was not among them */
  }
  s->ids[s->n++] = id;
}

/* Bytes of the node's distinct node inputs (tensors at their size, scalars 0); false if one is
 * unknown. */
static bool input_bytes(const OxGraph *g, const OxNode *n, uint64_t *out) {
  InputSet s;
  s.ids = s.local;
  s.n = 0;
  s.cap = 16;
  s.table = NULL;
  s.mask = 0;
  ox_value_foreach_node(&n->args, input_cb, &s);
  ox_value_foreach_node(&n->kwargs, input_cb, &s);
  *out = 0;
  bool ok = true;
  for (uint32_t i = 0; i < s.n && ok; i++) {
    const OxNode *x = ox_graph_node(g, s.ids[i]);
    uint64_t b;
    if (!x || !meta_bytes(&x->meta, &b)) ok = false;
    else *out = sat_add(*out, b);
  }
  if (s.ids != s.local) free(s.ids);
  free(s.table);
  return ok;
}

/* A node whose work is a copy of its input (cat, stack, a forced reshape, contiguous, clone):
 * one launch, input + output bytes, no FLOPs. */
static void add_copy(const OxGraph *g, const OxNode *n, OxCost *acc) {
  acc->launches = sat_add(acc->launches, 1);
  uint64_t in, out;
  if (input_bytes(g, n, &in) && meta_bytes(&n->meta, &out)) acc->bytes = sat_add(acc->bytes, sat_add(in, out));
  else acc->unknown |= OX_COST_BYTES;
}

static int64_t last_dim(const OxTensorMeta *t) {
  if (!t || t->rank < 1 || t->shape[t->rank - 1].sym) return -1;
  return t->shape[t->rank - 1].v;
}

/* FLOPs of a compute node; false when a size it needs is unknown. */
static bool node_flops(const OxGraph *g, const OxNode *n, const OxOpArgs *a, uint64_t *out) {
  if (a->op == OX_OPID_MULTI_HEAD_ATTENTION || a->op == OX_OPID_TRANSFORMER_ENCODER_LAYER ||
      a->op == OX_OPID_TRANSFORMER_ENCODER || a->op == OX_OPID_GRU || a->op == OX_OPID_LSTM || a->op == OX_OPID_RNN) {
    /* from their inputs and settings (attention's weights may be None; an LSTM's state is a
     * nested tuple the meta cannot hold): the interpreter's count, 0 when a size is unknown */
    *out = ox_interp_node_flops(g, n);
    return *out > 0;
  }
  uint64_t numel;
  if (!meta_numel(&n->meta, &numel)) return false;
  int64_t k = -1;
  switch (a->op) {
  case OX_OPID_LINEAR:
  case OX_OPID_MM:
  case OX_OPID_BMM:
  case OX_OPID_MATMUL: k = last_dim(slot_tm(g, a->slot[0])); break;
  case OX_OPID_ADDMM:
  case OX_OPID_BADDBMM: k = last_dim(slot_tm(g, a->slot[1])); break;
  case OX_OPID_GROUPED_MM: {
    const OxValue *xs = a->slot[0];
    if (!xs || (xs->kind != OX_V_LIST && xs->kind != OX_V_TUPLE) || n->meta.kind != OX_META_TUPLE ||
        n->meta.n != xs->n)
      return false;
    uint64_t f = 0;
    for (uint32_t i = 0; i < xs->n; i++) {
      int64_t ki = last_dim(slot_tm(g, &xs->u.items[i]));
      uint64_t e;
      if (ki < 0 || !tm_numel(&n->meta.t[i], &e)) return false;
      f = sat_add(f, sat_mul(2 * (uint64_t)ki, e));
    }
    *out = f;
    return true;
  }
  case OX_OPID_LAYER_NORM:
  case OX_OPID_NATIVE_LAYER_NORM:
  case OX_OPID_BATCH_NORM:
  case OX_OPID_SOFTMAX: *out = sat_mul(5, numel); return true;
  case OX_OPID_SUM:
  case OX_OPID_MEAN: {
    uint64_t e;
    if (!tm_numel(slot_tm(g, a->slot[0]), &e)) return false;
    *out = e;
    return true;
  }
  case OX_OPID_EINSUM:
  case OX_OPID_CONV2D:
  case OX_OPID_AVG_POOL2D:
  case OX_OPID_SHIFTED_WINDOW_ATTENTION: *out = ox_interp_node_flops(g, n); return true; /* the interpreter's estimate */
  case OX_OPID_EMBEDDING:
  case OX_OPID_EMBEDDING_BAG:
  case OX_OPID_MAX_POOL2D:
  case OX_OPID_ADAPTIVE_AVG_POOL2D:
  default: *out = numel; return true;
  }
  if (k < 0) return false;
  *out = sat_mul(sat_mul(2, (uint64_t)k), numel);
  return true;
}

/* Bytes of parameters a call_module reads that are no nodes (nn.Linear's weight and bias,
 * nn.Conv2d's weight); other modules' parameters (norm scales) are not counted. */
static bool module_param_bytes(const OxGraph *g, const OxNode *n, const OxOpArgs *a, uint64_t *out) {
  *out = 0;
  const OxTensorMeta *o = ox_node_tensor_meta(n);
  size_t es = o ? ox_dtype_size(o->dtype) : 0;
  if (a->op == OX_OPID_LINEAR) {
    int64_t k = last_dim(slot_tm(g, a->slot[0])), m = last_dim(o);
    if (k < 0 || m < 0 || !es) return false;
    if (ox_op_is_module_param(a->slot[1])) *out = sat_add(*out, sat_mul((uint64_t)(k * m), es));
    if (a->slot[2] && ox_op_is_module_param(a->slot[2])) *out = sat_add(*out, sat_mul((uint64_t)m, es));
  } else if (a->op == OX_OPID_MULTI_HEAD_ATTENTION) { /* in_proj [3E, E] (or q [E, E], k [E, kdim],
                                                          v [E, vdim]), out_proj [E, E], their biases */
    const OxTensorMeta *q = slot_tm(g, a->slot[0]);
    int64_t e = last_dim(q), kd = last_dim(slot_tm(g, a->slot[1])), vd = last_dim(slot_tm(g, a->slot[2]));
    if (e < 0 || kd < 0 || vd < 0 || !q) return false;
    uint64_t w = sat_mul((uint64_t)e, 2 * (uint64_t)e + (uint64_t)kd + (uint64_t)vd);
    for (int s = 5; s <= 7; s += 2)
      if (a->slot[s] && ox_op_is_module_param(a->slot[s])) w = sat_add(w, s == 5 ? 3 * (uint64_t)e : (uint64_t)e);
    *out = sat_mul(w, ox_dtype_size(q->dtype));
  } else if (a->op == OX_OPID_TRANSFORMER_ENCODER_LAYER || a->op == OX_OPID_TRANSFORMER_ENCODER) {
    /* per layer: attention 4E^2 + 4E, linear1 / linear2 2EF + F + E, two norms 4E; the final norm 2E */
    const OxTensorMeta *x = slot_tm(g, a->slot[0]);
    int64_t e = last_dim(x), f = -1, layers = 1;
    bool final_norm = a->op == OX_OPID_TRANSFORMER_ENCODER && a->slot[8] && a->slot[8]->kind != OX_V_NONE;
    for (uint32_t i = 0; n->kwargs.kind == OX_V_DICT && i < n->kwargs.n; i++)
      if (!strcmp(n->kwargs.keys[i], "dim_feedforward") && n->kwargs.u.items[i].kind == OX_V_INT) f = n->kwargs.u.items[i].u.i;
    if (a->op == OX_OPID_TRANSFORMER_ENCODER) layers = a->slot[2]->kind == OX_V_INT ? a->slot[2]->u.i : -1;
    if (e < 0 || f < 0 || layers < 1 || !es) return false;
    uint64_t E = (uint64_t)e, Fd = (uint64_t)f;
    uint64_t per = sat_add(sat_add(4 * E * E + 4 * E, 2 * E * Fd + Fd + E), 4 * E);
    *out = sat_mul(sat_add(sat_mul((uint64_t)layers, per), final_norm ? 2 * E : 0), es);
  } else if (a->op == OX_OPID_GRU || a->op == OX_OPID_LSTM || a->op == OX_OPID_RNN) {
    /* per layer and direction: weight_ih [G H, in], weight_hh [G H, H], two biases [G H] */
    const OxTensorMeta *x = slot_tm(g, a->slot[0]);
    int64_t in = last_dim(x), h = a->slot[2]->kind == OX_V_INT ? a->slot[2]->u.i : -1;
    int64_t layers = a->slot[4]->kind == OX_V_INT ? a->slot[4]->u.i : -1;
    bool bias = !(a->slot[5]->kind == OX_V_BOOL && !a->slot[5]->u.b);
    uint64_t d = a->slot[7]->kind == OX_V_BOOL && a->slot[7]->u.b ? 2 : 1, gh = (a->op == OX_OPID_GRU ? 3 : a->op == OX_OPID_LSTM ? 4 : 1);
    if (in < 0 || h <= 0 || layers < 1 || !x) return false;
    gh *= (uint64_t)h;
    uint64_t w = 0;
    for (int64_t l = 0; l < layers; l++) {
      uint64_t il = l ? d * (uint64_t)h : (uint64_t)in;
      w = sat_add(w, sat_mul(d, sat_mul(gh, il + (uint64_t)h) + (bias ? 2 * gh : 0)));
    }
    *out = sat_mul(w, ox_dtype_size(x->dtype));
  } else if (a->op == OX_OPID_CONV2D && ox_op_is_module_param(a->slot[1])) {
    int64_t cin = -1, kh = -1, kw = -1, grp = 1;
    for (uint32_t i = 0; n->kwargs.kind == OX_V_DICT && i < n->kwargs.n; i++) {
      const OxValue *v = &n->kwargs.u.items[i];
      const char *key = n->kwargs.keys[i];
      if (!strcmp(key, "in_channels") && v->kind == OX_V_INT) cin = v->u.i;
      if (!strcmp(key, "groups") && v->kind == OX_V_INT) grp = v->u.i;
      if (!strcmp(key, "kernel_size")) {
        if (v->kind == OX_V_INT) kh = kw = v->u.i;
        else if ((v->kind == OX_V_TUPLE || v->kind == OX_V_LIST) && v->n == 2 && v->u.items[0].kind == OX_V_INT &&
                 v->u.items[1].kind == OX_V_INT) {
          kh = v->u.items[0].u.i;
          kw = v->u.items[1].u.i;
        }
      }
    }
    if (!o || o->rank != 4 || o->shape[1].sym || cin <= 0 || kh <= 0 || kw <= 0 || grp <= 0 || !es) return false;
    *out = sat_mul((uint64_t)(o->shape[1].v * (cin / grp) * kh * kw), es);
  }
  return true;
}

typedef struct ScalarWalk {
  const OxGraph *g;
  int depth;
  bool all;
} ScalarWalk;

static bool python_scalar_op(const OxGraph *g, const OxNode *n, int depth);

static void scalar_input_cb(OxNodeId id, void *data) {
  ScalarWalk *w = data;
  const OxNode *x = ox_graph_node(w->g, id);
  if (!w->all) return;
  if (!x || (x->meta.kind != OX_META_SCALAR && x->meta.kind != OX_META_SYMINT && !python_scalar_op(w->g, x, w->depth + 1)))
    w->all = false;
}

/* Python arithmetic or a comparison (operator.*) whose node inputs are all Python numbers or
 * SymInts, or such arithmetic themselves (h // 16 * (w // 16), a == 224, up to 8 deep): it
 * makes a number and launches no kernel, whatever meta it has. */
static bool python_scalar_op(const OxGraph *g, const OxNode *n, int depth) {
  if (depth > 8 || n->op != OX_OP_CALL_FUNCTION || !n->target || strncmp(n->target, "operator.", 9) != 0) return false;
  ScalarWalk w = {g, depth, true};
  ox_value_foreach_node(&n->args, scalar_input_cb, &w);
  ox_value_foreach_node(&n->kwargs, scalar_input_cb, &w);
  return w.all;
}

void ox_cost_add_node(const OxGraph *g, OxNodeId id, OxCost *acc) {
  OxNode tmp;
  const OxNode *n = readable(ox_graph_node(g, id), &tmp);
  if (!n || n->op == OX_OP_PLACEHOLDER || n->op == OX_OP_GET_ATTR || n->op == OX_OP_OUTPUT) return;
  OxOpId op = ox_op_of_node(g, n, NULL);
  const OxOpInfo *info = op != OX_OPID_NONE ? ox_op_info(op) : NULL;
  /* views, shape queries, copies and pointwise ops need no slot: normalize only for the others
   * (a whole graph's cost is mostly such nodes) */
  bool free_view = info && (info->flags & OX_OPF_VIEW) && op != OX_OPID_RESHAPE && op != OX_OPID_FLATTEN;
  if (free_view || op == OX_OPID_SIZE || op == OX_OPID_DETACH) return;
  /* Python arithmetic on sizes (vit: h // 16 * (w // 16)) makes an int, not a tensor: no kernel */
  if (n->meta.kind == OX_META_SCALAR || n->meta.kind == OX_META_SYMINT || python_scalar_op(g, n, 0)) return;
  if (op == OX_OPID_CAT || op == OX_OPID_STACK || op == OX_OPID_CLONE) {
    add_copy(g, n, acc);
    return;
  }
  OxOpArgs a;
  memset(&a, 0, sizeof a);
  a.op = op;
  char err[160];
  bool pointwise = info && (info->flags & OX_OPF_POINTWISE) && op != OX_OPID_TO && op != OX_OPID_CONTIGUOUS;
  if (op != OX_OPID_NONE && !pointwise && ox_op_normalize(g, n, &a, err, sizeof err) != 0) op = OX_OPID_NONE;
  if (op == OX_OPID_NONE) {
    /* an unknown call making a tensor is taken as one launch whose work is unknown (Python
     * arithmetic on sizes returned above) */
    /* a traced Python check (torch._assert(h == 224, "...")) launches nothing */
    if (n->op == OX_OP_CALL_FUNCTION && n->target && !strcmp(n->target, "torch._assert")) return;
    uint64_t in, out;
    if (n->meta.kind == OX_META_TENSOR || n->meta.kind == OX_META_TUPLE) {
      acc->launches = sat_add(acc->launches, 1);
      if (input_bytes(g, n, &in) && meta_bytes(&n->meta, &out)) acc->bytes = sat_add(acc->bytes, sat_add(in, out));
      else acc->unknown |= OX_COST_BYTES;
      acc->unknown |= OX_COST_FLOPS;
    } else {
      acc->unknown |= OX_COST_ALL;
    }
    return;
  }
  switch (op) {
  case OX_OPID_RESHAPE:
  case OX_OPID_FLATTEN:
  case OX_OPID_CONTIGUOUS:
    if (a.slot[0] && a.slot[0]->kind == OX_V_NODE && noncontig(g, a.slot[0]->u.node, 0)) add_copy(g, n, acc);
    return;
  case OX_OPID_TO: {
    const OxTensorMeta *in = slot_tm(g, a.slot[0]), *out = ox_node_tensor_meta(n);
    if (in && out && in->dtype == out->dtype && in->dtype != OX_DT_UNKNOWN) return; /* no conversion */
    break;
  }
  default: break;
  }
  /* a compute op */
  uint64_t launches = 1;
  if (op == OX_OPID_TRANSFORMER_ENCODER && a.slot[2] && a.slot[2]->kind == OX_V_INT && a.slot[2]->u.i > 0)
    launches = (uint64_t)a.slot[2]->u.i; /* eager eval runs each layer as one fused op */
  if (op == OX_OPID_GROUPED_MM) {
    /* eager PyTorch (the bridge) runs one linear per group */
    const OxValue *xs = a.slot[0];
    if (xs && (xs->kind == OX_V_LIST || xs->kind == OX_V_TUPLE)) launches = xs->n;
  }
  acc->launches = sat_add(acc->launches, launches);
  uint64_t in, out, par = 0;
  OxMeta outm = n->meta;
  /* attention's weights output is None (nothing known) with need_weights=False: the output only */
  if (op == OX_OPID_MULTI_HEAD_ATTENTION && outm.kind == OX_META_TUPLE && outm.n == 2 && outm.t[1].rank < 0 &&
      outm.t[1].dtype == OX_DT_UNKNOWN)
    outm.n = 1;
  /* an LSTM's result holds (h_n, c_n), a nested tuple no meta holds (the bridge writes none): its
   * bytes from the input's shape and the settings, output [T, N, D H] and two [D layers, N, H] */
  uint64_t lstm_out = 0;
  if (op == OX_OPID_LSTM) {
    const OxTensorMeta *x = slot_tm(g, a.slot[0]);
    int64_t h = a.slot[2]->kind == OX_V_INT ? a.slot[2]->u.i : -1, layers = a.slot[4]->kind == OX_V_INT ? a.slot[4]->u.i : -1;
    uint64_t d = a.slot[7]->kind == OX_V_BOOL && a.slot[7]->u.b ? 2 : 1, xn;
    int64_t in_f = last_dim(x);
    OxDim nb = x && x->rank == 3 ? x->shape[a.slot[6]->kind == OX_V_BOOL && a.slot[6]->u.b ? 0 : 1] : (OxDim){1, NULL};
    outm.n = 0;
    if (!x || h <= 0 || layers <= 0 || in_f <= 0 || nb.sym || !tm_numel(x, &xn)) {
      acc->unknown |= OX_COST_BYTES;
    } else {
      uint64_t es = ox_dtype_size(x->dtype), tokens = xn / (uint64_t)in_f;
      lstm_out = sat_mul(es, sat_add(sat_mul(tokens, d * (uint64_t)h),
                                     sat_mul(2 * d * (uint64_t)layers, sat_mul((uint64_t)nb.v, (uint64_t)h))));
    }
  }
  if (input_bytes(g, n, &in) && (outm.n == 0 ? (out = 0, true) : meta_bytes(&outm, &out)) &&
      (n->op != OX_OP_CALL_MODULE || module_param_bytes(g, n, &a, &par)))
    acc->bytes = sat_add(acc->bytes, sat_add(sat_add(sat_add(in, out), par), lstm_out));
  else
    acc->unknown |= OX_COST_BYTES;
  uint64_t f;
  if (node_flops(g, n, &a, &f)) acc->flops = sat_add(acc->flops, f);
  else acc->unknown |= OX_COST_FLOPS;
}

OxCost ox_cost_nodes(const OxGraph *g, const OxNodeId *ids, uint32_t n) {
  OxCost c;
  memset(&c, 0, sizeof c);
  for (uint32_t i = 0; i < n; i++)
    if (ids[i]) ox_cost_add_node(g, ids[i], &c);
  return c;
}

OxCost ox_cost_graph(const OxGraph *g) {
  OxCost c;
  memset(&c, 0, sizeof c);
  /* the sums are saturating sums of counts and the unknown bits an OR, so any order gives the
   * same cost: the node array in memory order (streamed) rather than the program order (a cache
   * miss per node once passes have spliced new nodes in) */
  for (OxNodeId id = 1; id < g->n_nodes; id++)
    if (!g->nodes[id].erased) ox_cost_add_node(g, id, &c);
  return c;
}

/* ---------------------------------------------------------------- estimate and guard */

double ox_cost_time_us(const OxCost *c) {
  return (double)c->launches * OX_COST_LAUNCH_US + (double)c->bytes / OX_COST_BYTES_PER_US +
         (double)c->flops / OX_COST_FLOPS_PER_US;
}

double ox_cost_payoff(const OxCostPair *p) {
  double b = ox_cost_time_us(&p->before), a = ox_cost_time_us(&p->after);
  if (b <= 0) return a > 0 ? -INFINITY : a < 0 ? INFINITY : 0;
  return (b - a) / b;
}

static const char *signed_bytes(int64_t d, char *buf, size_t cap) {
  char t[32];
  ox_cost_format_bytes((uint64_t)(d < 0 ? -d : d), t, sizeof t);
  snprintf(buf, cap, "%s%s", d < 0 ? "-" : "+", t);
  return buf;
}

static const char *flops_text(uint64_t f, char *buf, size_t cap) {
  if (f >= 1000000000ull) snprintf(buf, cap, "%.1f GFLOP", (double)f / 1e9);
  else if (f >= 1000000ull) snprintf(buf, cap, "%.1f MFLOP", (double)f / 1e6);
  else if (f >= 1000ull) snprintf(buf, cap, "%.1f kFLOP", (double)f / 1e3);
  else snprintf(buf, cap, "%llu FLOP", (unsigned long long)f);
  return buf;
}

bool ox_cost_guard(const OxCostPair *p, double min_payoff, char *what, size_t what_cap, char *why, size_t why_cap) {
  if (!p->set || (p->before.unknown | p->after.unknown)) return true;
  double pay = ox_cost_payoff(p);
  if (!(pay < min_payoff)) return true;
  double tb = ox_cost_time_us(&p->before), ta = ox_cost_time_us(&p->after);
  char bb[40], ff[40];
  int64_t db = (int64_t)p->after.bytes - (int64_t)p->before.bytes;
  int64_t dl = (int64_t)p->after.launches - (int64_t)p->before.launches;
  int64_t df = (int64_t)p->after.flops - (int64_t)p->before.flops;
  flops_text((uint64_t)(df < 0 ? -df : df), ff, sizeof ff);
  snprintf(what, what_cap, "%s moved, %+lld launches, %s%s (%+.1f us)", signed_bytes(db, bb, sizeof bb), (long long)dl,
           df < 0 ? "-" : "+", ff, ta - tb);
  if (isfinite(pay))
    snprintf(why, why_cap, "min_payoff %g: saves %.1f%% of %.1f us", min_payoff, pay * 100, tb);
  else
    snprintf(why, why_cap, "min_payoff %g: %.1f us where there were none", min_payoff, ta);
  return false;
}

/* ---------------------------------------------------------------- formatting */

const char *ox_cost_format_bytes(uint64_t b, char *buf, size_t cap) {
  if (b >= 1000000000ull) snprintf(buf, cap, "%.1f GB", (double)b / 1e9);
  else if (b >= 1000000ull) snprintf(buf, cap, "%.1f MB", (double)b / 1e6);
  else if (b >= 1000ull) snprintf(buf, cap, "%.1f kB", (double)b / 1e3);
  else snprintf(buf, cap, "%llu B", (unsigned long long)b);
  return buf;
}

const char *ox_cost_format(const OxCost *c, char *buf, size_t cap) {
  char l[32], b[32], f[32];
  if (c->unknown & OX_COST_LAUNCHES) snprintf(l, sizeof l, "?");
  else snprintf(l, sizeof l, "%llu", (unsigned long long)c->launches);
  if (c->unknown & OX_COST_BYTES) snprintf(b, sizeof b, "? B");
  else ox_cost_format_bytes(c->bytes, b, sizeof b);
  if (c->unknown & OX_COST_FLOPS) snprintf(f, sizeof f, "? FLOP");
  else flops_text(c->flops, f, sizeof f);
  snprintf(buf, cap, "%s launches, %s, %s", l, b, f);
  return buf;
}

const char *ox_cost_format_pair(const OxCostPair *p, char *buf, size_t cap) {
  char lb[32], la[32], bb[32], ba[32], fb[32], fa[32];
  const OxCost *x[2] = {&p->before, &p->after};
  char *l[2] = {lb, la}, *b[2] = {bb, ba}, *f[2] = {fb, fa};
  for (int i = 0; i < 2; i++) {
    if (x[i]->unknown & OX_COST_LAUNCHES) snprintf(l[i], 32, "?");
    else snprintf(l[i], 32, "%llu", (unsigned long long)x[i]->launches);
    if (x[i]->unknown & OX_COST_BYTES) snprintf(b[i], 32, "? B");
    else ox_cost_format_bytes(x[i]->bytes, b[i], 32);
    if (x[i]->unknown & OX_COST_FLOPS) snprintf(f[i], 32, "? FLOP");
    else flops_text(x[i]->flops, f[i], 32);
  }
  int k = snprintf(buf, cap, "%s -> %s launches, %s -> %s, %s -> %s", lb, la, bb, ba, fb, fa);
  if (k > 0 && (size_t)k < cap) {
    if (p->before.unknown | p->after.unknown)
      snprintf(buf + k, cap - (size_t)k, " (no time estimate: a metric is unknown)");
    else
      snprintf(buf + k, cap - (size_t)k, " (est. %.1f -> %.1f us)", ox_cost_time_us(&p->before),
               ox_cost_time_us(&p->after));
  }
  return buf;
}
