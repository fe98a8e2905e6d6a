/* ox_shape_params.c - parameter shapes solved from their uses (ox_shape_infer_params in
 * ox_shape.h).
 *
 * A print(graph) paste carries no shapes for its parameters, and without them the batch
 * passes' guards (same weight shapes) never hold. The constraints to solve them are in the
 * graph: linear(x, w) fixes w's in-features from x, and its out-features are fixed by whatever
 * the output must be downstream (a layer_norm's normalized_shape, a linear that reads it with
 * a known weight, a cat partner, a view to concrete sizes) or by the bias or the node's own
 * recorded meta. Rounds alternate solving parameters and filling the call nodes' metas
 * (ox_shape_infer_node) until nothing changes. A parameter is only given a shape that a rule
 * fixes exactly; broadcast operands and embedding tables (whose row count no use tells) stay
 * unknown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ox_ops.h"
#include "ops/ox_shape.h"

#define MAX_DEPTH 8

static const OxTensorMeta *known_node(const OxNode *n) {
  if (!n || n->erased || n->meta.kind != OX_META_TENSOR || n->meta.n < 1 || n->meta.t[0].rank < 0) return NULL;
  return &n->meta.t[0];
}

static const OxTensorMeta *known(const OxGraph *g, const OxValue *v) {
  return v && v->kind == OX_V_NODE ? known_node(ox_graph_node(g, v->u.node)) : NULL;
}

static bool is_ref(const OxValue *v, OxNodeId id) { return v && v->kind == OX_V_NODE && v->u.node == id; }

static bool concrete_last(const OxTensorMeta *t, int64_t *v) {
  if (!t || t->rank < 1 || t->shape[t->rank - 1].sym) return false;
  *v = t->shape[t->rank - 1].v;
  return true;
}

static const char *fmt_t(const OxTensorMeta *t, char *buf, size_t cap) {
  ox_tensor_meta_format(t, false, false, buf, cap);
  return buf;
}

/* Concrete ints of a list value ([32], (4, 8)); false if any is not a plain int. */
static bool int_list(const OxValue *v, int64_t *out, int *n, int cap) {
  if (v && v->kind == OX_V_INT) {
    out[0] = v->u.i;
    *n = 1;
    return true;
  }
  if (!v || (v->kind != OX_V_LIST && v->kind != OX_V_TUPLE) || v->n > (uint32_t)cap) return false;
  for (uint32_t i = 0; i < v->n; i++) {
    if (v->u.items[i].kind != OX_V_INT) return false;
    out[i] = v->u.items[i].u.i;
  }
  *n = (int)v->n;
  return true;
}

static bool normalized(const OxGraph *g, OxNodeId id, OxOpArgs *a) {
  char e[160];
  const OxNode *n = ox_graph_node(g, id);
  if (!n || n->erased) return false;
  return ox_op_normalize(g, n, a, e, sizeof e) == 0;
}

/* Ops whose output has the input's shape (slot 0). */
static bool shape_preserving(OxOpId op) {
  switch (op) {
  case OX_OPID_TANH: case OX_OPID_SIGMOID: case OX_OPID_RELU: case OX_OPID_GELU: case OX_OPID_SILU:
  case OX_OPID_DROPOUT: case OX_OPID_CLAMP: case OX_OPID_NAN_TO_NUM: case OX_OPID_DETACH: case OX_OPID_CLONE:
  case OX_OPID_CONTIGUOUS: case OX_OPID_NEG: case OX_OPID_EXP: case OX_OPID_LOG: case OX_OPID_SQRT:
  case OX_OPID_RSQRT: case OX_OPID_SOFTMAX: case OX_OPID_TO: case OX_OPID_LAYER_NORM: case OX_OPID_BATCH_NORM:
    return true;
  default: return false;
  }
}

/* x OP scalar: the output has x's shape. */
static bool scalar_binary(OxOpId op, const OxOpArgs *a, OxNodeId id) {
  if (op != OX_OPID_ADD && op != OX_OPID_SUB && op != OX_OPID_MUL && op != OX_OPID_DIV) return false;
  const OxValue *o = is_ref(a->slot[0], id) ? a->slot[1] : is_ref(a->slot[1], id) ? a->slot[0] : NULL;
  return o && (o->kind == OX_V_INT || o->kind == OX_V_FLOAT || o->kind == OX_V_BOOL);
}

/* What node id's output's last dim must be, from its users (or the shape-preserving chain
 * below it); false if no user says. why: what said it. */
static bool need_last(const OxGraph *g, OxNodeId id, int depth, int64_t *out, char *why, size_t cap) {
  const OxNode *n = ox_graph_node(g, id);
  if (!n || depth > MAX_DEPTH) return false;
  char b[128];
  for (uint32_t i = 0; i < n->n_users; i++) {
    OxNodeId uid = n->users[i];
    const OxNode *u = ox_graph_node(g, uid);
    OxOpArgs a;
    if (!normalized(g, uid, &a)) continue;
    OxOpId op = a.op;
    if ((op == OX_OPID_LAYER_NORM || op == OX_OPID_NATIVE_LAYER_NORM) && is_ref(a.slot[0], id)) {
      int64_t ns[16];
      int k;
      if (int_list(a.slot[1], ns, &k, 16) && k > 0) {
        *out = ns[k - 1];
        snprintf(why, cap, "%s's normalized_shape %s", u->name, ox_value_format(g, a.slot[1], b, sizeof b));
        return true;
      }
    }
    if (op == OX_OPID_LINEAR && is_ref(a.slot[0], id)) {
      const OxTensorMeta *w = known(g, a.slot[1]);
      if (w && w->rank == 2 && !w->shape[1].sym) {
        *out = w->shape[1].v;
        snprintf(why, cap, "%s's weight %s", u->name, fmt_t(w, b, sizeof b));
        return true;
      }
    }
    if ((op == OX_OPID_MM && is_ref(a.slot[0], id)) || (op == OX_OPID_ADDMM && is_ref(a.slot[1], id))) {
      const OxTensorMeta *m2 = known(g, op == OX_OPID_MM ? a.slot[1] : a.slot[2]);
      if (m2 && m2->rank == 2 && !m2->shape[0].sym) {
        *out = m2->shape[0].v;
        snprintf(why, cap, "%s's mat2 %s", u->name, fmt_t(m2, b, sizeof b));
        return true;
      }
    }
    if ((op == OX_OPID_CAT || op == OX_OPID_STACK) && a.slot[0] &&
        (a.slot[0]->kind == OX_V_LIST || a.slot[0]->kind == OX_V_TUPLE)) {
      const OxValue *l = a.slot[0];
      bool member = false;
      const OxTensorMeta *partner = NULL;
      for (uint32_t k = 0; k < l->n; k++) {
        if (is_ref(&l->u.items[k], id)) member = true;
        else if (!partner) partner = known(g, &l->u.items[k]);
      }
      int64_t dim = 0;
      if (member && partner && partner->rank >= 1 && a.slot[1] && a.slot[1]->kind == OX_V_INT) {
        dim = a.slot[1]->u.i;
        int r = partner->rank + (op == OX_OPID_STACK ? 1 : 0);
        if (dim < 0) dim += r;
        /* stack: every member the same shape; cat: all but the cat dim */
        if ((op == OX_OPID_STACK || dim != partner->rank - 1) && concrete_last(partner, out)) {
          snprintf(why, cap, "%s's member %s", u->name, fmt_t(partner, b, sizeof b));
          return true;
        }
      }
    }
    if ((shape_preserving(op) && is_ref(a.slot[0], id)) || scalar_binary(op, &a, id)) {
      const OxTensorMeta *t = known_node(u);
      if (t && u->meta.kind == OX_META_TENSOR && concrete_last(t, out)) {
        snprintf(why, cap, "%s's %s %s", u->name, u->meta.inferred ? "shape" : "recorded shape", fmt_t(t, b, sizeof b));
        return true;
      }
      if (need_last(g, uid, depth + 1, out, why, cap)) return true;
    }
  }
  return false;
}

/* The element count node id's output must have: a view/reshape of it to concrete sizes
 * (through shape-preserving ops). */
static bool need_numel(const OxGraph *g, OxNodeId id, int depth, int64_t *out, char *why, size_t cap) {
  const OxNode *n = ox_graph_node(g, id);
  if (!n || depth > MAX_DEPTH) return false;
  char b[128];
  for (uint32_t i = 0; i < n->n_users; i++) {
    OxNodeId uid = n->users[i];
    OxOpArgs a;
    if (!normalized(g, uid, &a)) continue;
    if ((a.op == OX_OPID_VIEW || a.op == OX_OPID_RESHAPE) && is_ref(a.slot[0], id)) {
      int64_t sz[16];
      int k;
      if (int_list(a.slot[1], sz, &k, 16)) {
        int64_t p = 1;
        bool ok = true;
        for (int j = 0; j < k && ok; j++) {
          ok = sz[j] >= 0;
          p *= sz[j];
        }
        if (ok) {
          *out = p;
          snprintf(why, cap, "%s's sizes %s", ox_graph_node(g, uid)->name, ox_value_format(g, a.slot[1], b, sizeof b));
          return true;
        }
      }
    }
    if ((shape_preserving(a.op) && is_ref(a.slot[0], id)) || scalar_binary(a.op, &a, id))
      if (need_numel(g, uid, depth + 1, out, why, cap)) return true;
  }
  return false;
}

/* The out-features of linear-like node uid (its output's last dim): from a known bias, its own
 * recorded meta, what its users need, or a view of it to concrete sizes. */
static bool out_features(const OxGraph *g, OxNodeId uid, const OxTensorMeta *x, const OxValue *bias, int64_t *out,
                         char *why, size_t cap) {
  char b[128];
  const OxTensorMeta *bt = known(g, bias);
  if (bt && bt->rank == 1 && !bt->shape[0].sym) {
    *out = bt->shape[0].v;
    snprintf(why, cap, "the bias %s", fmt_t(bt, b, sizeof b));
    return true;
  }
  const OxNode *u = ox_graph_node(g, uid);
  const OxTensorMeta *own = known_node(u);
  if (own && concrete_last(own, out)) {
    snprintf(why, cap, "%s's recorded shape %s", u->name, fmt_t(own, b, sizeof b));
    return true;
  }
  if (need_last(g, uid, 0, out, why, cap)) return true;
  int64_t numel;
  if (x && need_numel(g, uid, 0, &numel, why, cap)) {
    int64_t lead = 1;
    for (int i = 0; i < x->rank - 1; i++) {
      if (x->shape[i].sym) return false;
      lead *= x->shape[i].v;
    }
    if (lead > 0 && numel % lead == 0) {
      *out = numel / lead;
      return true;
    }
  }
  return false;
}

static void set_param(OxGraph *g, OxNodeId p, OxDType dt, const int64_t *dims, int rank) {
  OxTensorMeta *t = ox_graph_tensor_meta_new(g, dt, rank);
  for (int i = 0; i < rank; i++) t->shape[i] = (OxDim){dims[i], NULL};
  OxMeta m = {.kind = OX_META_TENSOR, .n = 1, .t = t, .inferred = true};
  ox_graph_set_meta(g, p, &m);
}

/* Solves parameter p from its use by uid; true with p's meta set and why filled. */
static bool solve(OxGraph *g, OxNodeId p, OxNodeId uid, char *why, size_t cap) {
  OxOpArgs a;
  if (!normalized(g, uid, &a)) return false;
  const OxNode *u = ox_graph_node(g, uid);
  char b[128], w2[200];
  switch (a.op) {
  case OX_OPID_LINEAR: {
    const OxTensorMeta *x = known(g, a.slot[0]);
    int64_t in, out;
    if (!x || !concrete_last(x, &in)) return false;
    if (is_ref(a.slot[1], p)) {
      if (!out_features(g, uid, x, a.slot[2], &out, w2, sizeof w2)) return false;
      int64_t d[2] = {out, in};
      snprintf(why, cap, "from %s (in: %s %s; out: %s)", u->name, ox_graph_node(g, a.slot[0]->u.node)->name,
               fmt_t(x, b, sizeof b), w2);
      set_param(g, p, x->dtype, d, 2);
      return true;
    }
    if (is_ref(a.slot[2], p)) {
      const OxTensorMeta *w = known(g, a.slot[1]);
      if (w && w->rank == 2 && !w->shape[0].sym) {
        out = w->shape[0].v;
        snprintf(w2, sizeof w2, "the weight %s", fmt_t(w, b, sizeof b));
      } else if (!out_features(g, uid, x, NULL, &out, w2, sizeof w2)) {
        return false;
      }
      snprintf(why, cap, "from %s (out: %s)", u->name, w2);
      set_param(g, p, x->dtype, &out, 1);
      return true;
    }
    return false;
  }
  case OX_OPID_LAYER_NORM: {
    if (!is_ref(a.slot[2], p) && !is_ref(a.slot[3], p)) return false;
    int64_t ns[16];
    int k;
    const OxTensorMeta *x = known(g, a.slot[0]);
    if (!x || !int_list(a.slot[1], ns, &k, 16) || k < 1) return false;
    snprintf(why, cap, "from %s (normalized_shape %s)", u->name, ox_value_format(g, a.slot[1], b, sizeof b));
    set_param(g, p, x->dtype, ns, k);
    return true;
  }
  case OX_OPID_BATCH_NORM: {
    bool used = false;
    for (int s = 1; s <= 4; s++) used |= is_ref(a.slot[s], p);
    const OxTensorMeta *x = known(g, a.slot[0]);
    if (!used || !x || x->rank < 2 || x->shape[1].sym) return false;
    int64_t c = x->shape[1].v;
    snprintf(why, cap, "from %s (channels of %s)", u->name, fmt_t(x, b, sizeof b));
    set_param(g, p, x->dtype, &c, 1);
    return true;
  }
  case OX_OPID_MM: {
    const OxTensorMeta *x = known(g, a.slot[0]);
    int64_t k, n;
    if (!is_ref(a.slot[1], p) || !x || x->rank != 2 || x->shape[1].sym) return false;
    k = x->shape[1].v;
    if (!out_features(g, uid, NULL, NULL, &n, w2, sizeof w2)) return false;
    int64_t d[2] = {k, n};
    snprintf(why, cap, "from %s (rows: %s; columns: %s)", u->name, fmt_t(x, b, sizeof b), w2);
    set_param(g, p, x->dtype, d, 2);
    return true;
  }
  case OX_OPID_STACK:
  case OX_OPID_CAT: {
    const OxValue *l = a.slot[0];
    if (!l || (l->kind != OX_V_LIST && l->kind != OX_V_TUPLE)) return false;
    const OxTensorMeta *partner = NULL;
    uint32_t unknown = 0, mine = 0;
    int64_t sum = 0;
    int64_t dim = a.slot[1] && a.slot[1]->kind == OX_V_INT ? a.slot[1]->u.i : 0;
    for (uint32_t i = 0; i < l->n; i++) {
      if (is_ref(&l->u.items[i], p)) {
        mine++;
        continue;
      }
      const OxTensorMeta *t = known(g, &l->u.items[i]);
      if (!t) {
        unknown++;
        continue;
      }
      if (!partner) partner = t;
    }
    if (!mine || !partner || partner->rank < 1) return false;
    int r = partner->rank;
    int64_t d[64];
    for (int i = 0; i < r; i++) {
      if (partner->shape[i].sym) return false;
      d[i] = partner->shape[i].v;
    }
    if (a.op == OX_OPID_STACK) {
      snprintf(why, cap, "from %s (stacked with %s)", u->name, fmt_t(partner, b, sizeof b));
      set_param(g, p, partner->dtype, d, r);
      return true;
    }
    /* cat: the cat dim from the output's recorded size, when p is the only unknown member */
    if (dim < 0) dim += r;
    const OxTensorMeta *o = known_node(u);
    if (unknown || mine != 1 || dim < 0 || dim >= r || !o || o->rank != r || o->shape[dim].sym) return false;
    for (uint32_t i = 0; i < l->n; i++) {
      if (is_ref(&l->u.items[i], p)) continue;
      const OxTensorMeta *t = known(g, &l->u.items[i]);
      if (t->rank != r || t->shape[dim].sym) return false;
      sum += t->shape[dim].v;
    }
    if (o->shape[dim].v - sum < 0) return false;
    d[dim] = o->shape[dim].v - sum;
    snprintf(why, cap, "from %s (its recorded shape %s less the other members)", u->name, fmt_t(o, b, sizeof b));
    set_param(g, p, partner->dtype, d, r);
    return true;
  }
  default: return false;
  }
}

static bool is_param(const OxNode *n) {
  return !n->erased && (n->op == OX_OP_PLACEHOLDER || n->op == OX_OP_GET_ATTR) && n->n_users &&
         n->meta.kind == OX_META_NONE;
}

/* The shape of getitem node id when it takes chunk k of split(t, s, dim) or
 * split_with_sizes(t, sizes, dim) of a t whose shape is not known but whose other dims are:
 * t = cat(members, dim) with a known member. A chunk has exactly s elements along dim when a
 * later chunk is used too (split), or exactly sizes[k] (split_with_sizes). */
static bool split_chunk(const OxGraph *g, OxNodeId id, OxMeta *m, OxTensorMeta *t, OxDim *dims) {
  OxOpArgs ga, sa, ca;
  if (!normalized(g, id, &ga) || ga.op != OX_OPID_GETITEM || ga.slot[0]->kind != OX_V_NODE ||
      ga.slot[1]->kind != OX_V_INT)
    return false;
  OxNodeId sid = ga.slot[0]->u.node;
  int64_t k = ga.slot[1]->u.i;
  if (k < 0 || !normalized(g, sid, &sa) || (sa.op != OX_OPID_SPLIT && sa.op != OX_OPID_SPLIT_WITH_SIZES)) return false;
  const OxNode *sn = ox_graph_node(g, sid);
  if (sn->meta.kind != OX_META_NONE || sa.slot[0]->kind != OX_V_NODE) return false;
  OxNodeId tid = sa.slot[0]->u.node;
  if (known_node(ox_graph_node(g, tid)) || !normalized(g, tid, &ca) || ca.op != OX_OPID_CAT) return false;
  const OxValue *l = ca.slot[0];
  if (!l || (l->kind != OX_V_LIST && l->kind != OX_V_TUPLE)) return false;
  const OxTensorMeta *partner = NULL;
  for (uint32_t i = 0; i < l->n && !partner; i++) partner = known(g, &l->u.items[i]);
  if (!partner || partner->rank < 1 || partner->rank > 64) return false;
  int r = partner->rank;
  int64_t cdim = ca.slot[1]->kind == OX_V_INT ? ca.slot[1]->u.i : 0, sdim = sa.slot[2]->kind == OX_V_INT ? sa.slot[2]->u.i : 0;
  if (cdim < 0) cdim += r;
  if (sdim < 0) sdim += r;
  if (cdim != sdim || cdim < 0 || cdim >= r) return false;
  int64_t size;
  if (sa.op == OX_OPID_SPLIT) {
    if (sa.slot[1]->kind != OX_V_INT || sa.slot[1]->u.i <= 0) return false;
    size = sa.slot[1]->u.i;
    /* the chunk is full only if a later one exists */
    bool later = false;
    for (uint32_t i = 0; i < sn->n_users && !later; i++) {
      OxOpArgs ua;
      if (normalized(g, sn->users[i], &ua) && ua.op == OX_OPID_GETITEM && is_ref(ua.slot[0], sid) &&
          ua.slot[1]->kind == OX_V_INT && ua.slot[1]->u.i > k)
        later = true;
    }
    if (!later) return false;
  } else {
    int64_t sizes[256];
    int n;
    if (!int_list(sa.slot[1], sizes, &n, 256) || k >= n) return false;
    size = sizes[k];
  }
  memset(t, 0, sizeof *t);
  t->dtype = partner->dtype;
  t->rank = r;
  t->shape = dims;
  t->device = partner->device;
  for (int i = 0; i < r; i++) dims[i] = i == cdim ? (OxDim){size, NULL} : partner->shape[i];
  memset(m, 0, sizeof *m);
  m->kind = OX_META_TENSOR;
  m->n = 1;
  m->t = t;
  m->inferred = true;
  return true;
}

/* Fills the meta of every call node that has none and whose rule can now say. */
static uint32_t fill(OxGraph *g) {
  uint32_t filled = 0;
  char err[256];
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    if (n->op != OX_OP_CALL_FUNCTION && n->op != OX_OP_CALL_METHOD && n->op != OX_OP_CALL_MODULE) continue;
    if (n->meta.kind != OX_META_NONE) continue;
    OxMeta m;
    OxTensorMeta t;
    OxDim dims[64];
    if (ox_shape_infer_node(g, id, &m, err, sizeof err) == 0) {
      m.inferred = true;
      ox_graph_set_meta(g, id, &m);
      filled++;
    } else if (split_chunk(g, id, &m, &t, dims)) {
      ox_graph_set_meta(g, id, &m);
      filled++;
    }
  }
  return filled;
}

int ox_shape_infer_params(OxGraph *g, OxDiagList *d, uint32_t max_notes, OxParamShapes *st) {
  OxParamShapes r = {0, 0, 0};
  char why[400];
  fill(g);
  while (r.rounds < 64) {
    r.rounds++;
    uint32_t solved = 0;
    OX_GRAPH_FOREACH(g, id) {
      if (!is_param(&g->nodes[id])) continue;
      for (uint32_t i = 0; i < g->nodes[id].n_users; i++) {
        if (!solve(g, id, g->nodes[id].users[i], why, sizeof why)) continue;
        solved++;
        if (d && r.inferred < max_notes) {
          char m[96];
          ox_meta_format(&g->nodes[id].meta, m, sizeof m);
          ox_diag_add(d, OX_SEV_NOTE, g->nodes[id].src_line, 0, NULL, "%s: %s inferred %s",
                      g->nodes[id].name, m, why);
        }
        r.inferred++;
        break;
      }
    }
    if (!solved) break;
    fill(g);
  }
  char names[320] = "";
  size_t o = 0;
  OX_GRAPH_FOREACH(g, id) {
    if (!is_param(&g->nodes[id])) continue;
    if (r.unknown < 6 && o + 1 < sizeof names) {
      int k = snprintf(names + o, sizeof names - o, "%s%s", o ? ", " : "", g->nodes[id].name);
      if (k > 0) o += (size_t)k;
      if (o >= sizeof names) o = sizeof names - 1;
    }
    r.unknown++;
  }
  if (d && (r.inferred || r.unknown)) {
    if (r.unknown)
      ox_diag_add(d, OX_SEV_NOTE, 0, 0, NULL,
                  "shapes: %u parameter%s inferred from their uses%s; %u without a shape (no use fixes it): %s%s",
                  r.inferred, r.inferred == 1 ? "" : "s", r.inferred > max_notes ? " (the first listed above)" : "",
                  r.unknown, names, r.unknown > 6 ? ", ..." : "");
    else
      ox_diag_add(d, OX_SEV_NOTE, 0, 0, NULL, "shapes: %u parameter%s inferred from their uses%s", r.inferred,
                  r.inferred == 1 ? "" : "s", r.inferred > max_notes ? " (the first listed above)" : "");
  }
  if (st) *st = r;
  return (int)r.inferred;
}
