/* ox_interp.c - the reference interpreter (see ox_interp.h for the value rules).
 *
 * Execution walks the graph's live order and runs the nodes of the region. For a call node
 * it normalizes the arguments onto the op's canonical slots (ox_op_normalize), converts
 * each slot value into a runtime value (node references resolve to the referenced node's
 * value; literals become scalars, lists, dtypes, slices ...), and calls the op's kernel.
 *
 * Invariants: vals[id] holds one reference per node value; parameters are held as runtime
 * values so get_attr nodes and module calls share them without copying. Nothing here
 * prints or aborts on bad input: every problem becomes an error message naming the node.
 * Requires the graph to be in topological order (a region input that has not been computed
 * yet and lies inside the region is reported, not guessed).
 */
#include "ops/ox_interp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "ops/ox_kernels.h"
#include "ops/ox_ops.h"
#include "ops/ox_shape.h"

typedef struct Param {
  char *path;
  OxRtValue *v; /* TENSOR */
} Param;

struct OxInterp {
  const OxGraph *g;
  uint64_t seed;
  OxRtValue **vals; /* per node id */
  uint32_t n_vals;
  Param *params;
  uint32_t n_params, cap_params;
  int64_t max_elems;
  int64_t int_high;
  OxNodeId failed;
};

OxInterp *ox_interp_new(const OxGraph *g, uint64_t seed) {
  OxInterp *in = ox_xcalloc(1, sizeof *in);
  in->g = g;
  in->seed = seed;
  in->max_elems = OX_KERNEL_DEFAULT_MAX_ELEMS;
  in->int_high = 8;
  return in;
}

void ox_interp_free(OxInterp *in) {
  if (!in) return;
  for (uint32_t i = 0; i < in->n_vals; i++) ox_rt_unref(in->vals[i]);
  free(in->vals);
  for (uint32_t i = 0; i < in->n_params; i++) {
    free(in->params[i].path);
    ox_rt_unref(in->params[i].v);
  }
  free(in->params);
  free(in);
}

void ox_interp_set_max_elems(OxInterp *in, int64_t m) { in->max_elems = m > 0 ? m : OX_KERNEL_DEFAULT_MAX_ELEMS; }

void ox_interp_set_int_high(OxInterp *in, int64_t h) { in->int_high = h > 0 ? h : 8; }

static void grow(OxInterp *in) {
  uint32_t need = in->g->n_nodes;
  if (need <= in->n_vals) return;
  in->vals = ox_xrealloc(in->vals, need * sizeof *in->vals);
  memset(in->vals + in->n_vals, 0, (need - in->n_vals) * sizeof *in->vals);
  in->n_vals = need;
}

void ox_interp_set_value(OxInterp *in, OxNodeId id, OxRtValue *v) {
  grow(in);
  if (id == 0 || id >= in->n_vals) {
    ox_rt_unref(v);
    return;
  }
  ox_rt_unref(in->vals[id]);
  in->vals[id] = v;
}

static Param *find_param(const OxInterp *in, const char *path) {
  for (uint32_t i = 0; i < in->n_params; i++)
    if (strcmp(in->params[i].path, path) == 0) return &in->params[i];
  return NULL;
}

void ox_interp_set_param(OxInterp *in, const char *path, OxTensor *t) {
  if (!path || !t) {
    ox_tensor_free(t);
    return;
  }
  Param *p = find_param(in, path);
  if (p) {
    ox_rt_unref(p->v);
    p->v = ox_rt_tensor(t);
    return;
  }
  if (in->n_params == in->cap_params) {
    in->cap_params = in->cap_params ? 2 * in->cap_params : 16;
    in->params = ox_xrealloc(in->params, in->cap_params * sizeof *in->params);
  }
  in->params[in->n_params].path = ox_xstrdup(path);
  in->params[in->n_params].v = ox_rt_tensor(t);
  in->n_params++;
}

const OxTensor *ox_interp_param(const OxInterp *in, const char *path) {
  Param *p = find_param(in, path);
  return p ? p->v->u.t : NULL;
}

const OxRtValue *ox_interp_value(const OxInterp *in, OxNodeId id) {
  return (id && id < in->n_vals) ? in->vals[id] : NULL;
}

OxNodeId ox_interp_failed_node(const OxInterp *in) { return in->failed; }

/* ------------------------------------------------------------------ errors */

typedef struct Err {
  char *buf;
  size_t cap;
} Err;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int efail(Err *e, const OxNode *n, const char *fmt, ...) {
  if (!e->buf || !e->cap) return -1;
  int k = snprintf(e->buf, e->cap, "node %s: ", n && n->name ? n->name : "?");
  if (k < 0) k = 0;
  if ((size_t)k < e->cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->buf + k, e->cap - (size_t)k, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* ------------------------------------------------------------------ synthesized values */

/* First symbolic dim of a tensor meta, or NULL. */
static const char *meta_sym(const OxTensorMeta *t) {
  for (int32_t i = 0; i < t->rank; i++)
    if (t->shape[i].sym) return t->shape[i].sym;
  return NULL;
}

static int64_t weight_rows(OxInterp *in, const OxNode *user, const OxValue *w) {
  if (!w) return -1;
  if (ox_op_is_module_param(w)) {
    if (!user->target) return -1;
    char path[512];
    snprintf(path, sizeof path, "%s.weight", user->target);
    const OxTensor *t = ox_interp_param(in, path);
    return (t && t->rank == 2) ? t->shape[0] : -1;
  }
  if (w->kind != OX_V_NODE) return -1;
  const OxNode *wn = ox_graph_node(in->g, w->u.node);
  if (!wn) return -1;
  if (wn->op == OX_OP_GET_ATTR) {
    const OxTensor *t = ox_interp_param(in, wn->target);
    if (t && t->rank == 2) return t->shape[0];
  }
  if (w->u.node < in->n_vals && in->vals[w->u.node] && in->vals[w->u.node]->kind == OX_RT_TENSOR) {
    const OxTensor *t = in->vals[w->u.node]->u.t;
    if (t->rank == 2) return t->shape[0];
  }
  const OxTensorMeta *m = ox_node_tensor_meta(wn);
  if (m && m->rank == 2 && !m->shape[0].sym) return m->shape[0].v;
  return -1;
}

/* Range of random ints for node id: the smallest embedding table it indexes, else int_high. */
static int64_t int_range(OxInterp *in, OxNodeId id) {
  const OxNode *n = ox_graph_node(in->g, id);
  int64_t best = -1;
  for (uint32_t i = 0; n && i < n->n_users; i++) {
    const OxNode *u = ox_graph_node(in->g, n->users[i]);
    if (!u || u->erased) continue;
    OxOpId op = ox_op_of_node(in->g, u, NULL);
    if (op != OX_OPID_EMBEDDING && op != OX_OPID_EMBEDDING_BAG) continue;
    OxOpArgs a;
    char e[160];
    if (ox_op_normalize(in->g, u, &a, e, sizeof e) != 0) continue;
    const OxValue *ix = a.slot[1];
    if (!ix || ix->kind != OX_V_NODE || ix->u.node != id) continue;
    int64_t rows = weight_rows(in, u, a.slot[0]);
    if (rows > 0 && (best < 0 || rows < best)) best = rows;
  }
  return best > 0 ? best : in->int_high;
}

static int random_tensor(OxInterp *in, OxNodeId id, const OxTensorMeta *t, uint64_t seed, const char *what,
                         OxRtValue **out, Err *e) {
  const OxNode *n = ox_graph_node(in->g, id);
  if (t->rank < 0) return efail(e, n, "no shape for %s %s", what, n->name);
  const char *sym = meta_sym(t);
  if (sym) return efail(e, n, "symbolic size %s", sym);
  if (t->rank > OX_TENSOR_MAX_RANK) return efail(e, n, "rank %d exceeds the maximum of %d", t->rank, OX_TENSOR_MAX_RANK);
  if (t->dtype == OX_DT_UNKNOWN) return efail(e, n, "no dtype for %s %s", what, n->name);
  if (!ox_tensor_dtype_supported(t->dtype))
    return efail(e, n, "unsupported dtype %s for %s %s", ox_dtype_abbr(t->dtype), what, n->name);
  int64_t shape[OX_TENSOR_MAX_RANK];
  for (int32_t i = 0; i < t->rank; i++) shape[i] = t->shape[i].v;
  int64_t numel = ox_shape_numel(t->rank, shape);
  if (numel < 0) return efail(e, n, "invalid shape for %s %s", what, n->name);
  if (numel > in->max_elems)
    return efail(e, n, "%s %s of %lld elements exceeds the budget of %lld elements", what, n->name, (long long)numel,
                 (long long)in->max_elems);
  OxTensor *x = ox_tensor_new_unset(t->dtype, t->rank, shape); /* the fill writes every element */
  if (!x) return efail(e, n, "out of memory for %lld elements", (long long)numel);
  OxRng r;
  ox_rng_seed(&r, seed);
  int64_t hi = ox_dtype_storage(t->dtype) == OX_ST_I64 ? int_range(in, id) : 2;
  ox_tensor_fill_random(x, &r, -1.0, 1.0, 0, hi);
  *out = ox_rt_tensor(x);
  return 0;
}

/* A value for a node from its meta (placeholder, parameter without a registered value,
 * boundary input without a given value). */
static int synthesize(OxInterp *in, OxNodeId id, uint64_t seed, const char *what, OxRtValue **out, Err *e) {
  const OxNode *n = ox_graph_node(in->g, id);
  const OxMeta *m = &n->meta;
  switch (m->kind) {
  case OX_META_TENSOR:
    if (m->n < 1) break;
    return random_tensor(in, id, &m->t[0], seed, what, out, e);
  case OX_META_TUPLE: {
    OxRtValue *tup = ox_rt_seq(OX_RT_TUPLE, m->n);
    for (uint32_t i = 0; i < m->n; i++)
      if (random_tensor(in, id, &m->t[i], seed + i, what, &tup->u.items[i], e) != 0) {
        ox_rt_unref(tup);
        return -1;
      }
    *out = tup;
    return 0;
  }
  case OX_META_SYMINT: return efail(e, n, "symbolic size %s", m->sym ? m->sym : "?");
  default: break;
  }
  return efail(e, n, "no shape for %s %s", what, n->name);
}

/* ------------------------------------------------------------------ argument conversion */

static int resolve(OxInterp *in, const OxNode *n, const OxValue *v, OxRtValue **out, Err *e) {
  switch (v->kind) {
  case OX_V_NONE: *out = ox_rt_none(); return 0;
  case OX_V_BOOL: *out = ox_rt_bool(v->u.b); return 0;
  case OX_V_INT: *out = ox_rt_int(v->u.i); return 0;
  case OX_V_FLOAT: *out = ox_rt_float(v->u.f); return 0;
  case OX_V_STR: *out = ox_rt_text(OX_RT_STR, v->s); return 0;
  case OX_V_DEVICE:
  case OX_V_ENUM: *out = ox_rt_text(OX_RT_OPAQUE, v->s); return 0;
  case OX_V_RAW: return efail(e, n, "cannot evaluate expression '%s'", v->s ? v->s : "");
  case OX_V_ELLIPSIS: *out = ox_rt_ellipsis(); return 0;
  case OX_V_SYM: return efail(e, n, "symbolic size %s", v->s ? v->s : "?");
  case OX_V_DTYPE: {
    OxRtValue *d = ox_rt_dtype(v->u.dtype);
    if (v->s) d->s = ox_xstrdup(v->s);
    *out = d;
    return 0;
  }
  case OX_V_NODE: {
    OxRtValue *x = v->u.node < in->n_vals ? in->vals[v->u.node] : NULL;
    if (!x) {
      const OxNode *src = ox_graph_node(in->g, v->u.node);
      return efail(e, n, "input %s has no value (is the graph in topological order?)", src && src->name ? src->name : "?");
    }
    *out = ox_rt_ref(x);
    return 0;
  }
  case OX_V_DICT:
    /* a graph's output may be a dict (torchvision's segmentation models return {"out": ...}):
     * its values in order, as the bridge flattens them into the record; elsewhere unsupported */
    if (n->op != OX_OP_OUTPUT) return efail(e, n, "dict arguments are not supported");
    /* fall through */
  case OX_V_LIST:
  case OX_V_TUPLE:
  case OX_V_SLICE: {
    OxRtKind k = v->kind == OX_V_LIST ? OX_RT_LIST : v->kind == OX_V_SLICE ? OX_RT_SLICE : OX_RT_TUPLE;
    OxRtValue *s = ox_rt_seq(k, v->n);
    for (uint32_t i = 0; i < v->n; i++)
      if (resolve(in, n, &v->u.items[i], &s->u.items[i], e) != 0) {
        ox_rt_unref(s);
        return -1;
      }
    *out = s;
    return 0;
  }
  default: return efail(e, n, "unsupported argument kind %d", v->kind);
  }
}

/* ------------------------------------------------------------------ node execution */

static const char *node_target(const OxNode *n) {
  if (n->op == OX_OP_CALL_MODULE && n->module_type) return n->module_type;
  return n->target ? n->target : "?";
}

static int module_param(OxInterp *in, const OxNode *n, const OxOpArgs *a, uint32_t slot, OxRtValue **out, Err *e) {
  const OxOpInfo *info = ox_op_info(a->op);
  const char *sname = info && slot < info->n_slots ? info->slot_names[slot] : "weight";
  char path[512];
  if (!strcmp(sname, "params")) {
    /* a sequence module's parameters (transformer_encoder, gru ...): every registered one under
     * "<module path>.", as (relative name, tensor) pairs in registration order */
    int pl = snprintf(path, sizeof path, "%s.", a->module_path ? a->module_path : n->target);
    if (pl <= 0 || (size_t)pl >= sizeof path) return efail(e, n, "module path too long");
    uint32_t cnt = 0;
    for (uint32_t i = 0; i < in->n_params; i++) cnt += !strncmp(in->params[i].path, path, (size_t)pl);
    OxRtValue *list = ox_rt_seq(OX_RT_LIST, cnt);
    for (uint32_t i = 0, j = 0; i < in->n_params; i++) {
      if (strncmp(in->params[i].path, path, (size_t)pl)) continue;
      OxRtValue *pair = ox_rt_seq(OX_RT_TUPLE, 2);
      pair->u.items[0] = ox_rt_text(OX_RT_STR, in->params[i].path + pl);
      pair->u.items[1] = ox_rt_ref(in->params[i].v);
      list->u.items[j++] = pair;
    }
    *out = list;
    return 0;
  }
  /* attention's out_proj_weight / out_proj_bias are its submodule's out_proj.weight / .bias */
  bool sub = !strncmp(sname, "out_proj_", 9);
  snprintf(path, sizeof path, "%s.%s%s", a->module_path ? a->module_path : n->target, sub ? "out_proj." : "",
           sub ? sname + 9 : sname);
  Param *p = find_param(in, path);
  if (p) {
    *out = ox_rt_ref(p->v);
    return 0;
  }
  /* A module without bias, an affine-free norm, or a norm without running stats simply
   * has no such parameter; the kernel decides whether None is acceptable. Projections and
   * lookups cannot run without their weight. */
  size_t sl = strlen(sname);
  /* attention has either in_proj_weight or the three q/k/v ones (its kernel says which is missing) */
  bool optional = (sl >= 4 && strcmp(sname + sl - 4, "bias") == 0) || strcmp(sname, "running_mean") == 0 ||
                  (a->op == OX_OPID_MULTI_HEAD_ATTENTION && sl >= 11 && !strcmp(sname + sl - 11, "proj_weight") &&
                   strcmp(sname, "out_proj_weight") != 0) ||
                  strcmp(sname, "running_var") == 0 ||
                  (strcmp(sname, "weight") == 0 && (a->op == OX_OPID_LAYER_NORM || a->op == OX_OPID_BATCH_NORM));
  if (optional) {
    *out = ox_rt_none();
    return 0;
  }
  return efail(e, n, "no value for parameter %s", path);
}

/* x.shape as traced: getattr(x, 'shape') -> the sizes, as x.size() gives them; x.dim() -> the
 * rank. True when n is one (*rc says how it went). */
static bool run_shape_attr(OxInterp *in, OxNodeId id, const OxNode *n, Err *e, int *rc) {
  bool dim = n->op == OX_OP_CALL_METHOD && (!strcmp(n->target, "dim") || !strcmp(n->target, "ndimension")) &&
             n->args.n == 1 && !n->kwargs.n;
  if (!dim && (n->op != OX_OP_CALL_FUNCTION || (strcmp(n->target, "builtins.getattr") && strcmp(n->target, "getattr")) ||
               n->args.n != 2 || n->kwargs.n || n->args.u.items[1].kind != OX_V_STR ||
               strcmp(n->args.u.items[1].s, "shape")))
    return false;
  OxRtValue *x = NULL;
  *rc = resolve(in, n, &n->args.u.items[0], &x, e);
  if (*rc) return true;
  if (!x || x->kind != OX_RT_TENSOR) {
    ox_rt_unref(x);
    *rc = efail(e, n, "%s of a value that is not a tensor", dim ? "dim()" : "getattr(..., 'shape')");
    return true;
  }
  OxRtValue *res;
  if (dim) {
    res = ox_rt_int(x->u.t->rank);
  } else {
    res = ox_rt_seq(OX_RT_TUPLE, (uint32_t)x->u.t->rank);
    for (int i = 0; i < x->u.t->rank; i++) res->u.items[i] = ox_rt_int(x->u.t->shape[i]);
  }
  ox_rt_unref(x);
  ox_interp_set_value(in, id, res);
  return true;
}

static bool rt_number(const OxRtValue *v, double *d) {
  if (!v) return false;
  if (v->kind == OX_RT_INT) *d = (double)v->u.i;
  else if (v->kind == OX_RT_FLOAT) *d = v->u.f;
  else if (v->kind == OX_RT_BOOL) *d = v->u.b;
  else return false;
  return true;
}

/* Python-level checks a trace keeps (vit: torch._assert(h == self.image_size, "Wrong image
 * height!")): comparisons of ints and floats, and torch._assert, which fails the run when its
 * condition is false. True when n is one (*rc says how it went). */
static bool run_python_check(OxInterp *in, OxNodeId id, const OxNode *n, Err *e, int *rc) {
  static const char *const cmps[] = {"operator.eq", "operator.ne", "operator.lt", "operator.le", "operator.gt",
                                     "operator.ge", NULL};
  int which = -1;
  for (int i = 0; cmps[i]; i++)
    if (n->op == OX_OP_CALL_FUNCTION && !strcmp(n->target, cmps[i])) which = i;
  bool is_assert = n->op == OX_OP_CALL_FUNCTION && !strcmp(n->target, "torch._assert");
  if ((which < 0 && !is_assert) || n->args.n < (is_assert ? 1u : 2u) || n->kwargs.n) return false;
  OxRtValue *a = NULL, *b = NULL;
  *rc = resolve(in, n, &n->args.u.items[0], &a, e);
  if (*rc == 0 && n->args.n > 1) *rc = resolve(in, n, &n->args.u.items[1], &b, e);
  double x, y;
  if (*rc == 0 && is_assert) {
    if (!rt_number(a, &x)) {
      *rc = efail(e, n, "torch._assert of a value that is not a Python bool");
    } else if (x == 0) {
      *rc = efail(e, n, "assertion failed: %s", b && b->s ? b->s : "(no message)");
    } else {
      ox_interp_set_value(in, id, ox_rt_none());
    }
  } else if (*rc == 0) {
    if ((a && a->kind == OX_RT_TENSOR) || (b && b->kind == OX_RT_TENSOR)) {
      ox_rt_unref(a); /* a tensor comparison (ids == 0): the eq / lt ... kernels */
      ox_rt_unref(b);
      return false;
    }
    if (!rt_number(a, &x) || !rt_number(b, &y)) {
      *rc = efail(e, n, "no kernel for %s on these operands (only Python numbers)", n->target);
    } else {
      bool r = which == 0 ? x == y : which == 1 ? x != y : which == 2 ? x < y : which == 3 ? x <= y
             : which == 4 ? x > y : x >= y;
      ox_interp_set_value(in, id, ox_rt_bool(r));
    }
  }
  ox_rt_unref(a);
  ox_rt_unref(b);
  return true;
}

static int run_call(OxInterp *in, OxNodeId id, Err *e) {
  const OxNode *n = ox_graph_node(in->g, id);
  int rc0;
  if (run_shape_attr(in, id, n, e, &rc0) || run_python_check(in, id, n, e, &rc0)) return rc0;
  const OxSpelling *sp = NULL;
  OxOpId op = ox_op_of_node(in->g, n, &sp);
  if (op == OX_OPID_NONE) return efail(e, n, "no kernel for %s", node_target(n));
  OxOpArgs a;
  char msg[512];
  if (ox_op_normalize(in->g, n, &a, msg, sizeof msg) != 0) return efail(e, n, "%s", msg);
  if (!ox_kernel_exists(a.op)) return efail(e, n, "no kernel for %s", node_target(n));
  OxRtValue *slots[OX_MAX_SLOTS] = {0};
  int rc = 0;
  uint32_t ns = a.n_slots < OX_MAX_SLOTS ? a.n_slots : OX_MAX_SLOTS;
  for (uint32_t i = 0; i < ns && rc == 0; i++) {
    if (!a.slot[i]) continue;
    if (ox_op_is_module_param(a.slot[i]))
      rc = module_param(in, n, &a, i, &slots[i], e);
    else
      rc = resolve(in, n, a.slot[i], &slots[i], e);
  }
  OxRtValue *out = NULL;
  if (rc == 0) {
    OxKernelCtx k = {0};
    k.max_elems = in->max_elems;
    k.module_call = n->op == OX_OP_CALL_MODULE;
    k.outputs = ox_spelling_outputs(a.spelling ? a.spelling : sp);
    k.err = msg;
    k.errcap = sizeof msg;
    if (ox_kernel_run(&k, a.op, slots, ns, &out) != 0) rc = efail(e, n, "%s", msg);
  }
  for (uint32_t i = 0; i < ns; i++) ox_rt_unref(slots[i]);
  if (rc == 0) ox_interp_set_value(in, id, out);
  return rc;
}

static int run_node(OxInterp *in, OxNodeId id, Err *e) {
  const OxNode *n = ox_graph_node(in->g, id);
  switch (n->op) {
  case OX_OP_PLACEHOLDER: {
    if (in->vals[id]) return 0; /* given by the caller */
    OxRtValue *v;
    if (synthesize(in, id, ox_seed_mix(in->seed, n->name), "placeholder", &v, e) != 0) return -1;
    in->vals[id] = v;
    return 0;
  }
  case OX_OP_GET_ATTR: {
    Param *p = n->target ? find_param(in, n->target) : NULL;
    if (p) {
      ox_interp_set_value(in, id, ox_rt_ref(p->v));
      return 0;
    }
    if (in->vals[id]) return 0;
    OxRtValue *v;
    if (synthesize(in, id, ox_seed_mix(in->seed, n->target ? n->target : n->name), "parameter", &v, e) != 0) return -1;
    in->vals[id] = v;
    return 0;
  }
  case OX_OP_OUTPUT: {
    OxRtValue *v = NULL;
    const OxValue *args = &n->args;
    int rc;
    if (args->kind == OX_V_TUPLE && args->n == 1)
      rc = resolve(in, n, &args->u.items[0], &v, e);
    else
      rc = resolve(in, n, args, &v, e);
    if (rc != 0) return -1;
    ox_interp_set_value(in, id, v);
    return 0;
  }
  default: return run_call(in, id, e);
  }
}

typedef struct BoundaryCtx {
  OxInterp *in;
  const uint8_t *mask;
  OxNodeId user;
  Err *e;
  int rc;
} BoundaryCtx;

/* A region input from outside the region without a value gets one from its meta. */
static void boundary_cb(OxNodeId id, void *data) {
  BoundaryCtx *c = data;
  if (c->rc != 0 || id >= c->in->n_vals || c->mask[id] || c->in->vals[id]) return;
  const OxNode *src = ox_graph_node(c->in->g, id);
  if (!src || src->erased) {
    c->rc = efail(c->e, ox_graph_node(c->in->g, c->user), "input %u is not a live node", id);
    return;
  }
  if (src->op == OX_OP_PLACEHOLDER || src->op == OX_OP_GET_ATTR) {
    c->rc = run_node(c->in, id, c->e);
    if (c->rc != 0) c->in->failed = id;
    return;
  }
  OxRtValue *v;
  c->rc = synthesize(c->in, id, ox_seed_mix(c->in->seed, src->name), "boundary input", &v, c->e);
  if (c->rc == 0)
    c->in->vals[id] = v;
  else
    c->in->failed = id;
}

int ox_interp_run(OxInterp *in, const OxNodeId *region, uint32_t n, char *err, size_t errcap) {
  Err e = {err, errcap};
  if (errcap) err[0] = 0;
  in->failed = 0;
  grow(in);
  const OxGraph *g = in->g;
  uint8_t *mask = ox_xcalloc(in->n_vals ? in->n_vals : 1, 1);
  if (region) {
    for (uint32_t i = 0; i < n; i++) {
      const OxNode *x = ox_graph_node(g, region[i]);
      if (!x || x->erased) {
        free(mask);
        if (errcap) snprintf(err, errcap, "region node %u is not a live node", region[i]);
        return -1;
      }
      mask[region[i]] = 1;
    }
  } else {
    OX_GRAPH_FOREACH(g, id) mask[id] = 1;
  }
  /* Region nodes are recomputed: drop stale values of computed nodes first, so an input
   * that lies later in the order is reported instead of silently reading an old value.
   * Placeholder values given by the caller are kept. */
  OX_GRAPH_FOREACH(g, id) {
    if (!mask[id]) continue;
    uint8_t op = g->nodes[id].op;
    if (op != OX_OP_PLACEHOLDER && op != OX_OP_GET_ATTR) ox_interp_set_value(in, id, NULL);
  }
  int rc = 0;
  OX_GRAPH_FOREACH(g, id) {
    if (!mask[id]) continue;
    const OxNode *x = &g->nodes[id];
    BoundaryCtx c = {in, mask, id, &e, 0};
    ox_value_foreach_node(&x->args, boundary_cb, &c);
    if (c.rc == 0) ox_value_foreach_node(&x->kwargs, boundary_cb, &c);
    if (c.rc != 0) {
      rc = -1;
      break;
    }
    if (run_node(in, id, &e) != 0) {
      in->failed = id;
      rc = -1;
      break;
    }
  }
  free(mask);
  return rc;
}

/* ------------------------------------------------------------------ work estimate */

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static uint64_t sat_mul(uint64_t a, uint64_t b) { return (a && b > UINT64_MAX / a) ? UINT64_MAX : a * b; }

/* numel of a concrete tensor meta, 0 if unknown/symbolic */
static uint64_t tm_numel(const OxTensorMeta *t) {
  if (!t || t->rank < 0) return 0;
  uint64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->shape[i].sym || t->shape[i].v < 0) return 0;
    n = sat_mul(n, (uint64_t)t->shape[i].v);
  }
  return n;
}

static uint64_t meta_numel(const OxMeta *m) {
  uint64_t n = 0;
  if (m->kind == OX_META_TENSOR || m->kind == OX_META_TUPLE)
    for (uint32_t i = 0; i < m->n; i++) n = sat_add(n, tm_numel(&m->t[i]));
  return n;
}

static const OxTensorMeta *slot_meta(const OxGraph *g, const OxValue *v) {
  if (!v || v->kind != OX_V_NODE) return NULL;
  const OxNode *s = ox_graph_node(g, v->u.node);
  return s ? ox_node_tensor_meta(s) : NULL;
}

static int64_t last_dim(const OxTensorMeta *t, int from_end) {
  if (!t || t->rank < from_end) return -1;
  const OxDim *d = &t->shape[t->rank - from_end];
  return d->sym ? -1 : d->v;
}

static int64_t kwarg_int(const OxNode *n, const char *key, int64_t def, int which) {
  const OxValue *kw = &n->kwargs;
  for (uint32_t i = 0; kw->kind == OX_V_DICT && i < kw->n; i++) {
    if (strcmp(kw->keys[i], key) != 0) continue;
    const OxValue *v = &kw->u.items[i];
    if (v->kind == OX_V_INT) return v->u.i;
    if ((v->kind == OX_V_LIST || v->kind == OX_V_TUPLE) && v->n > (uint32_t)which && v->u.items[which].kind == OX_V_INT)
      return v->u.items[which].u.i;
  }
  return def;
}

uint64_t ox_interp_node_flops(const OxGraph *g, const OxNode *n) {
  if (n->op == OX_OP_PLACEHOLDER || n->op == OX_OP_GET_ATTR || n->op == OX_OP_OUTPUT) return 0;
  uint64_t out = meta_numel(&n->meta);
  OxOpId op = ox_op_of_node(g, n, NULL);
  if (op == OX_OPID_NONE) return out;
  OxOpArgs a;
  char e[160];
  if (ox_op_normalize(g, n, &a, e, sizeof e) != 0) return out;
  int64_t kd = -1;
  switch (a.op) {
  case OX_OPID_LINEAR: kd = last_dim(slot_meta(g, a.slot[0]), 1); break;
  case OX_OPID_MM:
  case OX_OPID_BMM:
  case OX_OPID_MATMUL: kd = last_dim(slot_meta(g, a.slot[0]), 1); break;
  case OX_OPID_ADDMM:
  case OX_OPID_BADDBMM: kd = last_dim(slot_meta(g, a.slot[1]), 1); break;
  case OX_OPID_EINSUM: { /* the product of the summed subscripts' sizes */
    const OxValue *ops = a.slot[1];
    OxEinsum e;
    char err[160];
    int ranks[OX_EINSUM_MAX_OPS];
    const OxTensorMeta *tm[OX_EINSUM_MAX_OPS];
    if (a.slot[0]->kind != OX_V_STR || (ops->kind != OX_V_LIST && ops->kind != OX_V_TUPLE) || !ops->n ||
        ops->n > OX_EINSUM_MAX_OPS)
      break;
    for (uint32_t i = 0; i < ops->n; i++) {
      tm[i] = slot_meta(g, &ops->u.items[i]);
      if (!tm[i]) return out;
      ranks[i] = tm[i]->rank;
    }
    if (!ox_einsum_parse(a.slot[0]->s, ops->n, ranks, &e, err, sizeof err)) break;
    bool seen[128] = {false};
    kd = 1;
    for (uint32_t i = 0; i < ops->n; i++)
      for (int d = 0; d < e.rank[i]; d++) {
        unsigned char ch = (unsigned char)e.sub[i][d];
        if (seen[ch] || memchr(e.out, ch, (size_t)e.out_rank)) continue;
        seen[ch] = true;
        kd = tm[i]->shape[d].sym ? -1 : kd * tm[i]->shape[d].v;
        if (kd < 0) return out;
      }
    break;
  }
  case OX_OPID_GROUPED_MM: {
    uint64_t f = 0;
    const OxValue *xs = a.slot[0];
    if (xs && (xs->kind == OX_V_LIST || xs->kind == OX_V_TUPLE))
      for (uint32_t i = 0; i < xs->n; i++) {
        const OxTensorMeta *t = slot_meta(g, &xs->u.items[i]);
        int64_t k = last_dim(t, 1);
        if (k > 0 && n->meta.kind == OX_META_TUPLE && i < n->meta.n)
          f = sat_add(f, sat_mul(2 * (uint64_t)k, tm_numel(&n->meta.t[i])));
      }
    return f ? f : out;
  }
  case OX_OPID_CONV2D: {
    const OxTensorMeta *w = slot_meta(g, a.slot[1]);
    if (w && w->rank == 4) {
      kd = 1;
      for (int i = 1; i < 4; i++) kd = w->shape[i].sym ? -1 : kd * w->shape[i].v;
    } else if (n->op == OX_OP_CALL_MODULE) {
      int64_t cin = kwarg_int(n, "in_channels", -1, 0), grp = kwarg_int(n, "groups", 1, 0);
      int64_t kh = kwarg_int(n, "kernel_size", -1, 0), kw = kwarg_int(n, "kernel_size", -1, 1);
      if (cin > 0 && grp > 0 && kh > 0 && kw > 0) kd = cin / grp * kh * kw;
    }
    break;
  }
  case OX_OPID_AVG_POOL2D: {
    const OxValue *ks = a.slot[1];
    if (ks->kind == OX_V_INT) kd = ks->u.i * ks->u.i;
    else if ((ks->kind == OX_V_LIST || ks->kind == OX_V_TUPLE) && ks->n >= 1 && ks->u.items[0].kind == OX_V_INT &&
             ks->u.items[ks->n - 1].kind == OX_V_INT)
      kd = ks->u.items[0].u.i * ks->u.items[ks->n - 1].u.i;
    return kd > 0 ? sat_mul((uint64_t)kd, out) : out;
  }
  case OX_OPID_MULTI_HEAD_ATTENTION: { /* in-projections (q: E -> E, k: kdim -> E, v: vdim -> E),
                                          q k^T and p v per head, out-projection */
    const OxTensorMeta *qm = slot_meta(g, a.slot[0]), *km = slot_meta(g, a.slot[1]), *vm = slot_meta(g, a.slot[2]);
    int64_t e = last_dim(qm, 1), kd = last_dim(km, 1), vd = last_dim(vm, 1);
    uint64_t q = tm_numel(qm), k = tm_numel(km);
    if (!q || !k || e <= 0 || kd <= 0 || vd <= 0 || km->rank < 2) return out;
    bool bf = a.slot[10]->kind == OX_V_BOOL && a.slot[10]->u.b;
    OxDim nb = km->rank == 3 ? km->shape[bf ? 0 : 1] : (OxDim){1, NULL};
    if (nb.sym || nb.v <= 0) return out;
    uint64_t tq = q / (uint64_t)e, tk = k / (uint64_t)kd, klen = tk / (uint64_t)nb.v, E = (uint64_t)e;
    uint64_t proj = sat_mul(2 * E, sat_add(sat_add(sat_mul(2 * E, tq), sat_mul((uint64_t)kd, tk)), sat_mul((uint64_t)vd, tk)));
    return sat_add(proj, sat_mul(4, sat_mul(tq, sat_mul(E, klen))));
  }
  case OX_OPID_TRANSFORMER_ENCODER_LAYER:
  case OX_OPID_TRANSFORMER_ENCODER: { /* per layer: attention as above (q, k, v alike) and the
                                         feed-forward pair 2 T E F twice; 0 (unknown) without
                                         dim_feedforward or the sizes */
    const OxTensorMeta *x = slot_meta(g, a.slot[0]);
    int64_t e = last_dim(x, 1), f = kwarg_int(n, "dim_feedforward", -1, 0), layers = 1;
    if (a.op == OX_OPID_TRANSFORMER_ENCODER) layers = a.slot[2]->kind == OX_V_INT ? a.slot[2]->u.i : -1;
    bool bf = a.op == OX_OPID_TRANSFORMER_ENCODER ? a.slot[6]->kind == OX_V_BOOL && a.slot[6]->u.b
                                                  : a.slot[5]->kind == OX_V_BOOL && a.slot[5]->u.b;
    uint64_t t = tm_numel(x);
    if (!t || e <= 0 || f <= 0 || layers <= 0 || !x || x->rank < 2) return 0;
    OxDim len = x->shape[x->rank == 3 && bf ? 1 : 0];
    if (len.sym) return 0;
    t /= (uint64_t)e; /* tokens */
    uint64_t attn = sat_add(sat_mul(8 * (uint64_t)e, sat_mul((uint64_t)e, t)), sat_mul(4, sat_mul(t, sat_mul((uint64_t)e, (uint64_t)len.v))));
    uint64_t ff = sat_mul(4, sat_mul(t, sat_mul((uint64_t)e, (uint64_t)f)));
    return sat_mul((uint64_t)layers, sat_add(attn, ff));
  }
  case OX_OPID_GRU:
  case OX_OPID_LSTM:
  case OX_OPID_RNN: { /* per layer and direction: 2 T N G H (in + H), G gates (3, 4, 1) */
    const OxTensorMeta *x = slot_meta(g, a.slot[0]);
    int64_t in = last_dim(x, 1), h = a.slot[2]->kind == OX_V_INT ? a.slot[2]->u.i : -1;
    int64_t layers = a.slot[4]->kind == OX_V_INT ? a.slot[4]->u.i : -1;
    uint64_t d = a.slot[7]->kind == OX_V_BOOL && a.slot[7]->u.b ? 2 : 1, gates = a.op == OX_OPID_GRU ? 3 : a.op == OX_OPID_LSTM ? 4 : 1;
    uint64_t t = tm_numel(x);
    if (!t || in <= 0 || h <= 0 || layers <= 0) return 0;
    t /= (uint64_t)in; /* steps x batch */
    uint64_t total = 0;
    for (int64_t l = 0; l < layers; l++) {
      uint64_t il = l ? d * (uint64_t)h : (uint64_t)in;
      total = sat_add(total, sat_mul(d, sat_mul(2 * t, sat_mul(gates * (uint64_t)h, il + (uint64_t)h))));
    }
    return total;
  }
  case OX_OPID_SHIFTED_WINDOW_ATTENTION: { /* qkv and proj over the padded map, q k^T and p v per window */
    const OxTensorMeta *x = slot_meta(g, a.slot[0]);
    const OxValue *ws = a.slot[4];
    if (!x || x->rank != 4 || (ws->kind != OX_V_LIST && ws->kind != OX_V_TUPLE) || ws->n != 2 ||
        ws->u.items[0].kind != OX_V_INT || ws->u.items[1].kind != OX_V_INT)
      return out;
    for (int i = 0; i < 4; i++)
      if (x->shape[i].sym) return out;
    int64_t w0 = ws->u.items[0].u.i, w1 = ws->u.items[1].u.i, c = x->shape[3].v;
    if (w0 <= 0 || w1 <= 0 || c <= 0) return out;
    int64_t ph = x->shape[1].v + (w0 - x->shape[1].v % w0) % w0, pw = x->shape[2].v + (w1 - x->shape[2].v % w1) % w1;
    uint64_t tokens = sat_mul((uint64_t)x->shape[0].v, sat_mul((uint64_t)ph, (uint64_t)pw));
    uint64_t proj = sat_mul(sat_mul(8, tokens), sat_mul((uint64_t)c, (uint64_t)c));           /* 3C + C outputs */
    return sat_add(proj, sat_mul(sat_mul(4, tokens), sat_mul((uint64_t)(w0 * w1), (uint64_t)c))); /* N keys each */
  }
  case OX_OPID_LAYER_NORM:
  case OX_OPID_NATIVE_LAYER_NORM:
  case OX_OPID_BATCH_NORM:
  case OX_OPID_SOFTMAX: return sat_mul(5, out);
  case OX_OPID_SUM:
  case OX_OPID_MEAN: {
    uint64_t x = tm_numel(slot_meta(g, a.slot[0]));
    return x ? x : out;
  }
  default: return out;
  }
  return kd > 0 ? sat_mul(sat_mul(2, (uint64_t)kd), out) : out;
}

uint64_t ox_interp_estimate_flops(const OxGraph *g, const OxNodeId *region, uint32_t n) {
  uint64_t total = 0;
  if (region) {
    for (uint32_t i = 0; i < n; i++) {
      const OxNode *x = ox_graph_node(g, region[i]);
      if (x && !x->erased) total = sat_add(total, ox_interp_node_flops(g, x));
    }
  } else {
    OX_GRAPH_FOREACH(g, id) total = sat_add(total, ox_interp_node_flops(g, &g->nodes[id]));
  }
  return total;
}
