/* ox_shape.c - dtype/shape rules for every op in the op table, whole-graph inference and
 * --input-shape specs.
 *
 * A rule reads normalized slots (ox_op_normalize) and the meta of the nodes they reference,
 * and either produces meta (0), gives up (1: no rule, an input's shape is unknown, or a
 * symbolic size would need arithmetic) or reports inconsistent inputs (-1) with a message
 * naming the op and the shapes involved. Rules never guess: a dim that cannot be computed
 * makes the whole result unknown. Type promotion follows torch.result_type: dimensioned
 * tensors, then zero-dim tensors, then Python scalars, each tier only raising the category
 * (bool < int < float); f16 + bf16 -> f32.
 *
 * Requires: input meta as the loaders or an earlier inference step left it. Preserves: the
 * graph's nodes and values; only meta is written (ox_shape_infer_graph, input specs).
 * Inferred meta has no strides; device is taken from the first tensor input.
 */
#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"
#include "ops/ox_ops.h"
#include "ops/ox_shape.h"

#define MAXR OX_SHAPE_MAX_RANK
#define BIG_END 4611686018427387904LL /* slice ends >= this mean "to the end" (sys.maxsize prints) */

typedef struct Ctx {
  OxGraph *g;
  OxNodeId id;
  OxOpArgs a;
  const char *op; /* canonical op name for messages */
  char *err;
  size_t errcap;
} Ctx;

static int say(Ctx *c, int rc, const char *fmt, ...) {
  if (c->errcap) {
    int k = snprintf(c->err, c->errcap, "%s: ", c->op);
    if (k < 0) k = 0;
    if ((size_t)k < c->errcap) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(c->err + k, c->errcap - (size_t)k, fmt, ap);
      va_end(ap);
    }
  }
  return rc;
}

static const char *tfmt(const OxTensorMeta *t, char *buf, size_t cap) {
  if (t->rank < 0) snprintf(buf, cap, "%s[?]", ox_dtype_abbr(t->dtype));
  else ox_tensor_meta_format(t, false, false, buf, cap);
  return buf;
}

static bool dim_eq(OxDim a, OxDim b) {
  if (a.sym || b.sym) return a.sym && b.sym && !strcmp(a.sym, b.sym);
  return a.v == b.v;
}

static OxDim cdim(int64_t v) { return (OxDim){v, NULL}; }

/* Size arithmetic is checked: sizes and arguments come from dumps and are not trusted (a
 * product that overflows int64 is refused, never undefined). */
static bool mul_ok(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }
static bool add_ok(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }
/* ceil(a / b) for a >= 0, b > 0, without the a + b - 1 that overflows */
static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

static const OxTensorMeta *node_tensor(const OxNode *n) {
  if (!n || n->meta.kind != OX_META_TENSOR || n->meta.n < 1 || n->meta.t[0].rank < 0) return NULL;
  return &n->meta.t[0];
}

/* A tensor operand given as value v (named `what` in messages). */
static int val_tensor(Ctx *c, const OxValue *v, const char *what, const OxTensorMeta **t) {
  char b[96];
  if (ox_op_is_module_param(v))
    return say(c, 1, "module parameter %s.%s has no shape", c->a.module_path ? c->a.module_path : "?", what);
  if (!v || v->kind != OX_V_NODE)
    return say(c, -1, "%s must be a tensor, got %s", what, v ? ox_value_format(c->g, v, b, sizeof b) : "nothing");
  const OxNode *n = ox_graph_node(c->g, v->u.node);
  *t = node_tensor(n);
  if (!*t) return say(c, 1, "input %s has no known shape", n ? n->name : "?");
  return 0;
}

static int arg_tensor(Ctx *c, int s, const OxTensorMeta **t) {
  return val_tensor(c, c->a.slot[s], ox_op_info(c->a.op)->slot_names[s], t);
}

/* The tensor node whose whole size n is: x.size(), aten.sym_size.default(x), or x.shape
 * (traced as getattr(x, 'shape')); 0 if n is none of them. */
static OxNodeId whole_size_of(const OxGraph *g, const OxNode *n) {
  if (!n) return 0;
  if (n->op == OX_OP_CALL_FUNCTION && (!strcmp(n->target, "builtins.getattr") || !strcmp(n->target, "getattr"))) {
    if (n->args.n == 2 && n->args.u.items[0].kind == OX_V_NODE && n->args.u.items[1].kind == OX_V_STR &&
        !strcmp(n->args.u.items[1].s, "shape") && !n->kwargs.n)
      return n->args.u.items[0].u.node;
    return 0;
  }
  const OxSpelling *sp;
  if (ox_op_of_node(g, n, &sp) != OX_OPID_SIZE) return 0;
  OxOpArgs a;
  char e[128];
  if (ox_op_normalize(g, n, &a, e, sizeof e) || a.slot[1]->kind != OX_V_NONE || a.slot[0]->kind != OX_V_NODE) return 0;
  return a.slot[0]->u.node;
}

/* The dim a size-query node stands for: x.size(d), aten.sym_size.int(x, d), x.size()[d] or
   x.shape[d]. Returns false if n is not one (or x's shape is unknown). */
static bool size_query_dim(Ctx *c, const OxNode *n, OxDim *out) {
  OxOpArgs a;
  char e[128];
  const OxSpelling *sp;
  OxOpId op = ox_op_of_node(c->g, n, &sp);
  int64_t k = 0;
  if (op == OX_OPID_GETITEM) {
    if (ox_op_normalize(c->g, n, &a, e, sizeof e) || a.slot[0]->kind != OX_V_NODE || a.slot[1]->kind != OX_V_INT)
      return false;
    k = a.slot[1]->u.i;
    OxNodeId src = whole_size_of(c->g, ox_graph_node(c->g, a.slot[0]->u.node));
    if (!src) return false;
    const OxTensorMeta *x = node_tensor(ox_graph_node(c->g, src));
    if (!x || k < -x->rank || k >= x->rank) return false;
    *out = x->shape[k < 0 ? k + x->rank : k];
    return true;
  } else if (op == OX_OPID_SIZE) {
    if (ox_op_normalize(c->g, n, &a, e, sizeof e) || a.slot[1]->kind != OX_V_INT) return false;
    k = a.slot[1]->u.i;
  } else {
    return false;
  }
  if (a.slot[0]->kind != OX_V_NODE) return false;
  const OxTensorMeta *x = node_tensor(ox_graph_node(c->g, a.slot[0]->u.node));
  if (!x || k < -x->rank || k >= x->rank) return false;
  *out = x->shape[k < 0 ? k + x->rank : k];
  return true;
}

/* Python int arithmetic on sizes (x.size(1) * 4, d.size(-1) - 3, operator.floordiv ...):
 * evaluates a node to a concrete int when its operands resolve, at most 16 levels deep. */
static bool int_of_value(Ctx *c, const OxValue *v, int depth, int64_t *out);

static bool int_of_node(Ctx *c, const OxNode *n, int depth, int64_t *out) {
  OxDim d;
  if (size_query_dim(c, n, &d)) {
    if (d.sym) return false;
    *out = d.v;
    return true;
  }
  if (depth > 16 || n->op != OX_OP_CALL_FUNCTION) return false;
  static const struct {
    const char *target;
    char op;
  } ops[] = {{"operator.mul", '*'}, {"operator.add", '+'}, {"operator.sub", '-'}, {"operator.floordiv", '/'},
             {"operator.mod", '%'}, {"operator.neg", 'n'}, {"torch.sym_int", 'i'}};
  char op = 0;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(n->target, ops[i].target) == 0) op = ops[i].op;
  if (!op || n->kwargs.n) return false;
  int64_t a = 0, b = 0;
  if (n->args.n < 1 || !int_of_value(c, &n->args.u.items[0], depth + 1, &a)) return false;
  if (op == 'n') {
    if (a == INT64_MIN) return false;
    *out = -a;
    return n->args.n == 1;
  }
  if (op == 'i') {
    *out = a;
    return n->args.n == 1;
  }
  if (n->args.n != 2 || !int_of_value(c, &n->args.u.items[1], depth + 1, &b)) return false;
  switch (op) {
  case '*': return mul_ok(a, b, out);
  case '+': return add_ok(a, b, out);
  case '-': return !__builtin_sub_overflow(a, b, out);
  case '/':
    if (!b || (a == INT64_MIN && b == -1)) return false;
    *out = a / b - ((a % b != 0) && ((a < 0) != (b < 0))); /* Python floors */
    return true;
  case '%':
    if (!b) return false;
    if (b == -1) { /* INT64_MIN % -1 is undefined in C; the answer is 0 */
      *out = 0;
      return true;
    }
    *out = a % b;
    if (*out != 0 && ((*out < 0) != (b < 0))) *out += b; /* Python's sign */
    return true;
  }
  return false;
}

static bool int_of_value(Ctx *c, const OxValue *v, int depth, int64_t *out) {
  if (v->kind == OX_V_INT) {
    *out = v->u.i;
    return true;
  }
  if (v->kind != OX_V_NODE) return false;
  const OxNode *n = ox_graph_node(c->g, v->u.node);
  return n && int_of_node(c, n, depth, out);
}

bool ox_shape_node_int(const OxGraph *g, OxNodeId id, int64_t *out) {
  const OxNode *n = ox_graph_node(g, id);
  if (!n || n->erased) return false;
  /* the rules only read the graph through Ctx.g */
  Ctx c = {.g = (OxGraph *)(uintptr_t)g, .id = id, .op = "int", .err = NULL, .errcap = 0};
  return int_of_node(&c, n, 0, out);
}

/* An int from a value: INT/BOOL, or a SymInt node / SYM (1: symbolic). */
static int val_int(Ctx *c, const OxValue *v, const char *what, int64_t *out) {
  char b[96];
  if (v->kind == OX_V_INT) { *out = v->u.i; return 0; }
  if (v->kind == OX_V_BOOL) { *out = v->u.b; return 0; }
  if (v->kind == OX_V_SYM) return say(c, 1, "symbolic size %s in %s", v->s, what);
  if (v->kind == OX_V_NODE) {
    const OxNode *n = ox_graph_node(c->g, v->u.node);
    OxDim d;
    if (n && size_query_dim(c, n, &d)) {
      if (d.sym) return say(c, 1, "symbolic size %s in %s", d.sym, what);
      *out = d.v;
      return 0;
    }
    if (n && int_of_node(c, n, 0, out)) return 0;
    if (n && n->meta.kind == OX_META_SYMINT && n->meta.sym) return say(c, 1, "symbolic size %s in %s", n->meta.sym, what);
    return say(c, 1, "%s comes from %s, whose value is unknown", what, n ? n->name : "?");
  }
  return say(c, -1, "%s must be an int, got %s", what, ox_value_format(c->g, v, b, sizeof b));
}

static int slot_int(Ctx *c, int s, int64_t *out) {
  return val_int(c, c->a.slot[s], ox_op_info(c->a.op)->slot_names[s], out);
}

/* A dim from a value: INT, SYM text, or a node whose meta is a SymInt. */
static int val_dim(Ctx *c, const OxValue *v, const char *what, OxDim *d) {
  char b[96];
  if (v->kind == OX_V_INT) { *d = cdim(v->u.i); return 0; }
  if (v->kind == OX_V_SYM) { *d = (OxDim){0, v->s}; return 0; }
  if (v->kind == OX_V_NODE) {
    const OxNode *n = ox_graph_node(c->g, v->u.node);
    if (n && size_query_dim(c, n, d)) return 0;
    int64_t iv;
    if (n && int_of_node(c, n, 0, &iv)) { *d = cdim(iv); return 0; }
    if (n && n->meta.kind == OX_META_SYMINT && n->meta.sym) { *d = (OxDim){0, n->meta.sym}; return 0; }
    return say(c, 1, "%s comes from %s, whose value is unknown", what, n ? n->name : "?");
  }
  return say(c, -1, "%s must be an int, got %s", what, ox_value_format(c->g, v, b, sizeof b));
}

/* An int list (or a single int, broadcast when want > 0). */
static int val_ints(Ctx *c, const OxValue *v, const char *what, int64_t *out, int *n, int max) {
  if (v->kind == OX_V_LIST || v->kind == OX_V_TUPLE) {
    if ((int)v->n > max) return say(c, -1, "%s has too many entries (%u)", what, v->n);
    for (uint32_t i = 0; i < v->n; i++) {
      int rc = val_int(c, &v->u.items[i], what, &out[i]);
      if (rc) return rc;
    }
    *n = (int)v->n;
    return 0;
  }
  int rc = val_int(c, v, what, &out[0]);
  *n = 1;
  return rc;
}

static int val_dims(Ctx *c, const OxValue *v, const char *what, OxDim *out, int *n, int max) {
  if (v->kind == OX_V_LIST || v->kind == OX_V_TUPLE) {
    if ((int)v->n > max) return say(c, -1, "%s has too many entries (%u)", what, v->n);
    for (uint32_t i = 0; i < v->n; i++) {
      int rc = val_dim(c, &v->u.items[i], what, &out[i]);
      if (rc) return rc;
    }
    *n = (int)v->n;
    return 0;
  }
  int rc = val_dim(c, v, what, &out[0]);
  *n = 1;
  return rc;
}

static int wrap_dim(Ctx *c, int64_t d, int rank, int *out) {
  int r = rank > 0 ? rank : 1;
  *out = 0;
  if (d < -r || d >= r)
    return say(c, -1, "dim %lld out of range for a tensor of rank %d", (long long)d, rank);
  *out = (int)(d < 0 ? d + r : d);
  return 0;
}

static int sym_fail(Ctx *c, OxDim d) { return say(c, 1, "symbolic size %s in %s", d.sym, c->op); }

/* ------------------------------------------------------------------ meta builders */

/* Results live in the graph's shape scratch arena (see OxGraph.shape_scratch). */
static void *salloc(Ctx *c, size_t n) { return ox_arena_alloc(&c->g->shape_scratch, n); }

static OxTensorMeta *new_t(Ctx *c, OxDType dt, int rank, const OxTensorMeta *like) {
  OxTensorMeta *t = salloc(c, sizeof *t);
  t->dtype = dt;
  t->rank = rank;
  if (rank > 0) t->shape = salloc(c, (size_t)rank * sizeof(OxDim));
  if (like) t->device = like->device;
  return t;
}

static void set_tensor(OxMeta *out, OxTensorMeta *t) {
  memset(out, 0, sizeof *out);
  out->kind = OX_META_TENSOR;
  out->n = 1;
  out->t = t;
}

static OxTensorMeta *set_tuple(Ctx *c, OxMeta *out, uint32_t n) {
  memset(out, 0, sizeof *out);
  out->kind = OX_META_TUPLE;
  out->n = n;
  out->t = n ? salloc(c, n * sizeof(OxTensorMeta)) : NULL;
  return out->t;
}

/* Fills tuple entry i with dtype/rank (shape zeroed; rank -1 = unknown shape). */
static OxTensorMeta *tuple_at(Ctx *c, OxMeta *out, uint32_t i, OxDType dt, int rank, const OxTensorMeta *like) {
  OxTensorMeta *t = &out->t[i];
  t->dtype = dt;
  t->rank = rank;
  t->shape = rank > 0 ? salloc(c, (size_t)rank * sizeof(OxDim)) : NULL;
  if (like) t->device = like->device;
  return t;
}

static OxTensorMeta *copy_shape(Ctx *c, const OxTensorMeta *in, OxDType dt) {
  OxTensorMeta *t = new_t(c, dt, in->rank, in);
  for (int i = 0; i < in->rank; i++) t->shape[i] = in->shape[i];
  return t;
}

static OxTensorMeta *from_dims(Ctx *c, OxDType dt, const OxDim *d, int n, const OxTensorMeta *like) {
  OxTensorMeta *t = new_t(c, dt, n, like);
  for (int i = 0; i < n; i++) t->shape[i] = d[i];
  return t;
}

/* ------------------------------------------------------------------ type promotion */

static int category(OxDType t) {
  switch (t) {
  case OX_DT_BOOL: return 0;
  case OX_DT_I64: case OX_DT_I32: case OX_DT_I16: case OX_DT_I8:
  case OX_DT_U8: case OX_DT_U16: case OX_DT_U32: case OX_DT_U64: return 1;
  case OX_DT_C32: case OX_DT_C64: case OX_DT_C128: return 3;
  case OX_DT_UNKNOWN: return -1;
  default: return ox_dtype_is_float(t) ? 2 : -1;
  }
}

static bool is_signed_int(OxDType t) {
  return t == OX_DT_I64 || t == OX_DT_I32 || t == OX_DT_I16 || t == OX_DT_I8;
}

static OxDType signed_of_size(size_t s) {
  return s <= 1 ? OX_DT_I8 : s == 2 ? OX_DT_I16 : s == 4 ? OX_DT_I32 : OX_DT_I64;
}

static OxDType promote2(OxDType a, OxDType b) {
  if (a == b) return a;
  if (a == OX_DT_UNKNOWN || b == OX_DT_UNKNOWN) return OX_DT_UNKNOWN;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) {
    size_t sa = ox_dtype_size(a), sb = ox_dtype_size(b);
    if (is_signed_int(a) == is_signed_int(b)) return sa >= sb ? a : b;
    OxDType s = is_signed_int(a) ? a : b, u = is_signed_int(a) ? b : a;
    if (ox_dtype_size(s) > ox_dtype_size(u)) return s;
    return signed_of_size(ox_dtype_size(u) * 2);
  }
  if (ca == 2) {
    if (a == OX_DT_F64 || b == OX_DT_F64) return OX_DT_F64;
    return OX_DT_F32; /* f32 with anything smaller, f16 + bf16, float8 mixes */
  }
  if (ca == 3) return ox_dtype_size(a) >= ox_dtype_size(b) ? a : b;
  return OX_DT_UNKNOWN;
}

typedef struct Promo {
  OxDType dim, zero, scalar; /* per tier; UNKNOWN = tier empty */
  bool has_dim, has_zero, has_scalar, unknown;
} Promo;

static void promo_tensor(Promo *p, const OxTensorMeta *t) {
  if (t->dtype == OX_DT_UNKNOWN) { p->unknown = true; return; }
  if (t->rank == 0) {
    p->zero = p->has_zero ? promote2(p->zero, t->dtype) : t->dtype;
    p->has_zero = true;
  } else {
    p->dim = p->has_dim ? promote2(p->dim, t->dtype) : t->dtype;
    p->has_dim = true;
  }
}

static void promo_scalar(Promo *p, OxDType t) {
  p->scalar = p->has_scalar ? promote2(p->scalar, t) : t;
  p->has_scalar = true;
}

static OxDType promo_result(const Promo *p) {
  if (p->unknown) return OX_DT_UNKNOWN;
  OxDType r = OX_DT_UNKNOWN;
  bool have = false;
  if (p->has_dim) { r = p->dim; have = true; }
  if (p->has_zero) {
    if (!have || category(p->zero) > category(r)) r = p->zero;
    have = true;
  }
  if (p->has_scalar) {
    int cs = category(p->scalar);
    if (!have) r = p->scalar == OX_DT_F64 ? OX_DT_F32 : p->scalar;
    else if (cs > category(r)) r = cs == 2 ? OX_DT_F32 : cs == 1 ? OX_DT_I64 : p->scalar;
  }
  return r;
}

/* Adds operand v (tensor node, number, SymInt node) to p; tensors also to ts[]. */
static int promo_value(Ctx *c, Promo *p, const OxValue *v, const char *what, const OxTensorMeta **t) {
  char b[96];
  *t = NULL;
  switch (v->kind) {
  case OX_V_BOOL: promo_scalar(p, OX_DT_BOOL); return 0;
  case OX_V_INT: promo_scalar(p, OX_DT_I64); return 0;
  case OX_V_FLOAT: promo_scalar(p, OX_DT_F64); return 0;
  case OX_V_SYM: promo_scalar(p, OX_DT_I64); return 0;
  case OX_V_NODE: {
    const OxNode *n = ox_graph_node(c->g, v->u.node);
    if (n && n->meta.kind == OX_META_SYMINT) { promo_scalar(p, OX_DT_I64); return 0; }
    int rc = val_tensor(c, v, what, t);
    if (rc) return rc;
    promo_tensor(p, *t);
    return 0;
  }
  default: return say(c, -1, "%s must be a tensor or a number, got %s", what, ox_value_format(c->g, v, b, sizeof b));
  }
}

/* ------------------------------------------------------------------ broadcasting */

static int broadcast(Ctx *c, const OxTensorMeta *a, const OxTensorMeta *b, OxDim *out, int *rank) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  char ba[96], bb[96];
  for (int i = 0; i < r; i++) {
    int ia = a->rank - r + i, ib = b->rank - r + i;
    OxDim da = ia >= 0 ? a->shape[ia] : cdim(1), db = ib >= 0 ? b->shape[ib] : cdim(1);
    if (dim_eq(da, db)) out[i] = da;
    else if (!da.sym && da.v == 1) out[i] = db;
    else if (!db.sym && db.v == 1) out[i] = da;
    else if (da.sym) return sym_fail(c, da);
    else if (db.sym) return sym_fail(c, db);
    else
      return say(c, -1, "shapes %s and %s are not broadcastable", tfmt(a, ba, sizeof ba), tfmt(b, bb, sizeof bb));
  }
  *rank = r;
  return 0;
}

/* Broadcast the shapes of up to 3 tensors (NULL entries skipped) into out. */
static int broadcast_n(Ctx *c, const OxTensorMeta **ts, int n, OxDim *out, int *rank) {
  OxTensorMeta acc = {0};
  OxDim buf[MAXR];
  bool have = false;
  for (int i = 0; i < n; i++) {
    if (!ts[i]) continue;
    if (ts[i]->rank > MAXR) return say(c, 1, "rank %d is beyond %d", ts[i]->rank, MAXR);
    if (!have) {
      acc = *ts[i];
      if (ts[i]->rank) memcpy(buf, ts[i]->shape, (size_t)ts[i]->rank * sizeof(OxDim));
      acc.shape = buf;
      have = true;
      continue;
    }
    OxDim tmp[MAXR];
    int r = 0;
    int rc = broadcast(c, &acc, ts[i], tmp, &r);
    if (rc) return rc;
    if (r) memcpy(buf, tmp, (size_t)r * sizeof(OxDim));
    acc.rank = r;
  }
  if (have && acc.rank) memcpy(out, buf, (size_t)acc.rank * sizeof(OxDim));
  *rank = have ? acc.rank : 0;
  return 0;
}

/* ------------------------------------------------------------------ pointwise */

static int rule_unary_same(Ctx *c, OxMeta *out) {
  const OxTensorMeta *t;
  int rc = arg_tensor(c, 0, &t);
  if (rc) return rc;
  if (c->a.op == OX_OPID_NEG && t->dtype == OX_DT_BOOL) return say(c, -1, "negation of a bool tensor is not supported");
  set_tensor(out, copy_shape(c, t, t->dtype));
  return 0;
}

static int rule_unary_float(Ctx *c, OxMeta *out) {
  const OxTensorMeta *t;
  int rc = arg_tensor(c, 0, &t);
  if (rc) return rc;
  OxDType dt = t->dtype;
  if (category(dt) == 0 || category(dt) == 1) {
    if (c->a.op == OX_OPID_GELU || c->a.op == OX_OPID_SILU || c->a.op == OX_OPID_HARDSWISH ||
        c->a.op == OX_OPID_HARDSIGMOID)
      return say(c, -1, "needs a floating-point input, got %s", ox_dtype_abbr(dt));
    dt = OX_DT_F32; /* int -> default float, as torch's unary float ops do */
  }
  set_tensor(out, copy_shape(c, t, dt));
  return 0;
}

static int rule_to(Ctx *c, OxMeta *out) {
  const OxTensorMeta *t;
  int rc = arg_tensor(c, 0, &t);
  if (rc) return rc;
  const OxValue *d = c->a.slot[1];
  OxDType dt = t->dtype;
  if (d->kind == OX_V_DTYPE) dt = d->u.dtype;
  else if (d->kind != OX_V_NONE) {
    char b[96];
    return say(c, -1, "dtype must be a torch dtype, got %s", ox_value_format(c->g, d, b, sizeof b));
  }
  set_tensor(out, copy_shape(c, t, dt));
  return 0;
}

/* Binary/ternary pointwise with promotion: slots listed in `slots` are operands. */
static int pointwise_n(Ctx *c, OxMeta *out, const int *slots, int n, OxDType *dt_out, OxDim *shape, int *rank,
                       const OxTensorMeta **first) {
  Promo p = {0};
  const OxTensorMeta *ts[3] = {0};
  const OxOpInfo *info = ox_op_info(c->a.op);
  for (int i = 0; i < n; i++) {
    int rc = promo_value(c, &p, c->a.slot[slots[i]], info->slot_names[slots[i]], &ts[i]);
    if (rc) return rc;
  }
  *first = NULL;
  for (int i = 0; i < n && !*first; i++) *first = ts[i];
  if (!*first) return say(c, 1, "no tensor operand (SymInt arithmetic is not inferred)");
  int rc = broadcast_n(c, ts, n, shape, rank);
  if (rc) return rc;
  *dt_out = promo_result(&p);
  (void)out;
  return 0;
}

static int rule_binary(Ctx *c, OxMeta *out) {
  static const int s2[2] = {0, 1};
  OxDType dt;
  OxDim shape[MAXR];
  int rank = 0;
  const OxTensorMeta *first;
  int rc = pointwise_n(c, out, s2, 2, &dt, shape, &rank, &first);
  if (rc) return rc;
  OxOpId op = c->a.op;
  if (op == OX_OPID_ADD || op == OX_OPID_SUB) {
    const OxValue *al = c->a.slot[2];
    if (al->kind == OX_V_FLOAT && (category(dt) == 1 || category(dt) == 0))
      return say(c, -1, "alpha=%g must not be a float for integral inputs", al->u.f);
    if (op == OX_OPID_SUB && dt == OX_DT_BOOL) return say(c, -1, "subtraction of bool tensors is not supported");
  }
  if (op == OX_OPID_DIV && c->a.slot[2]->kind == OX_V_NONE && (category(dt) == 0 || category(dt) == 1))
    dt = OX_DT_F32; /* true division of integers gives the default float dtype */
  if (op >= OX_OPID_EQ && op <= OX_OPID_GE) dt = OX_DT_BOOL; /* comparisons */
  if ((op == OX_OPID_BITWISE_AND || op == OX_OPID_BITWISE_OR || op == OX_OPID_BITWISE_XOR) && category(dt) == 2)
    return say(c, -1, "takes bools or integers, not %s (torch refuses floating point too)", ox_dtype_abbr(dt));
  set_tensor(out, from_dims(c, dt, shape, rank, first));
  return 0;
}

static int rule_where(Ctx *c, OxMeta *out) {
  const OxTensorMeta *cond;
  int rc = arg_tensor(c, 0, &cond);
  if (rc) return rc;
  if (cond->dtype != OX_DT_BOOL && cond->dtype != OX_DT_U8 && cond->dtype != OX_DT_UNKNOWN)
    return say(c, -1, "condition must be bool, got %s", ox_dtype_abbr(cond->dtype));
  static const int s2[2] = {1, 2};
  OxDType dt;
  OxDim shape[MAXR];
  int rank = 0;
  const OxTensorMeta *first;
  Promo p = {0};
  const OxTensorMeta *ts[3] = {cond, NULL, NULL};
  for (int i = 0; i < 2; i++) {
    rc = promo_value(c, &p, c->a.slot[s2[i]], i ? "other" : "self", &ts[i + 1]);
    if (rc) return rc;
  }
  rc = broadcast_n(c, ts, 3, shape, &rank);
  if (rc) return rc;
  dt = promo_result(&p);
  first = ts[1] ? ts[1] : ts[2] ? ts[2] : cond;
  set_tensor(out, from_dims(c, dt, shape, rank, first));
  return 0;
}

/* logical_not: same shape, bool; bitwise_not: same shape and dtype, not for floats */
static int rule_not(Ctx *c, OxMeta *out) {
  const OxTensorMeta *t;
  int rc = arg_tensor(c, 0, &t);
  if (rc) return rc;
  bool logical = c->a.op == OX_OPID_LOGICAL_NOT;
  if (!logical && category(t->dtype) == 2) return say(c, -1, "takes bools or integers, not %s (torch refuses floating point too)", ox_dtype_abbr(t->dtype));
  set_tensor(out, copy_shape(c, t, logical ? OX_DT_BOOL : t->dtype));
  return 0;
}

/* masked_fill: self's shape and dtype; a bool mask that broadcasts to it */
static int rule_masked_fill(Ctx *c, OxMeta *out) {
  const OxTensorMeta *t, *m;
  int rc;
  if ((rc = arg_tensor(c, 0, &t)) || (rc = arg_tensor(c, 1, &m))) return rc;
  if (m->dtype != OX_DT_BOOL && m->dtype != OX_DT_UNKNOWN) return say(c, -1, "mask must be bool, got %s", ox_dtype_abbr(m->dtype));
  const OxTensorMeta *ts[2] = {t, m};
  OxDim shape[MAXR];
  int rank = 0;
  if ((rc = broadcast_n(c, ts, 2, shape, &rank))) return rc;
  char b[96], b2[96];
  if (rank != t->rank) return say(c, -1, "mask %s does not broadcast to self %s", tfmt(m, b, sizeof b), tfmt(t, b2, sizeof b2));
  set_tensor(out, copy_shape(c, t, t->dtype));
  return 0;
}

/* triu / tril: same shape and dtype, at least 2-D */
static int rule_tri(Ctx *c, OxMeta *out) {
  const OxTensorMeta *t;
  int rc = arg_tensor(c, 0, &t);
  if (rc) return rc;
  if (t->rank < 2) return say(c, -1, "input tensor must have at least 2 dimensions");
  set_tensor(out, copy_shape(c, t, t->dtype));
  return 0;
}

/* ones / zeros / full: the size given; dtype given, or float32 (full: after fill_value) */
static int rule_fill(Ctx *c, OxMeta *out) {
  OxDim d[MAXR];
  int n = 0, rc;
  if ((rc = val_dims(c, c->a.slot[0], "size", d, &n, MAXR))) return rc;
  bool full = c->a.op == OX_OPID_FULL;
  const OxValue *dv = c->a.slot[full ? 2 : 1];
  OxDType dt = OX_DT_F32;
  if (dv->kind == OX_V_DTYPE) {
    dt = dv->u.dtype;
  } else if (dv->kind != OX_V_NONE) {
    char b[96];
    return say(c, -1, "dtype must be a torch dtype, got %s", ox_value_format(c->g, dv, b, sizeof b));
  } else if (full) {
    const OxValue *f = c->a.slot[1];
    if (f->kind == OX_V_BOOL) dt = OX_DT_BOOL;
    else if (f->kind == OX_V_INT) dt = OX_DT_I64;
    else if (f->kind != OX_V_FLOAT) return say(c, 1, "fill_value is not a Python number: its dtype is not inferred");
  }
  for (int i = 0; i < n; i++)
    if (!d[i].sym && d[i].v < 0) return say(c, -1, "negative dimension %lld", (long long)d[i].v);
  set_tensor(out, from_dims(c, dt, d, n, NULL));
  return 0;
}

/* arange: [ceil((end - start) / step)], int64 for int bounds, else float32 (or the dtype given) */
static int rule_arange(Ctx *c, OxMeta *out) {
  const OxValue *v[3] = {c->a.slot[0], c->a.slot[1], c->a.slot[2]};
  double x[3] = {0, 0, 1};
  bool ints = true;
  int from = v[1]->kind == OX_V_NONE ? 1 : 0; /* arange(n): the single bound is the end */
  for (int i = 0; i < 3; i++) {
    const OxValue *a = i == 0 ? (from ? NULL : v[0]) : i == 1 ? (from ? v[0] : v[1]) : v[2];
    if (!a) continue;
    if (a->kind == OX_V_INT) x[i] = (double)a->u.i;
    else if (a->kind == OX_V_FLOAT) x[i] = a->u.f, ints = false;
    else if (a->kind == OX_V_NODE || a->kind == OX_V_SYM) return say(c, 1, "a bound is not a constant: the length is not inferred");
    else return say(c, -1, "bounds must be numbers");
  }
  if (x[2] == 0.0) return say(c, -1, "step must be nonzero");
  double n = ceil((x[1] - x[0]) / x[2]);
  if (!(n >= 0.0)) return say(c, -1, "upper bound and larger bound inconsistent with step sign");
  const OxValue *dv = c->a.slot[3];
  OxDType dt = dv->kind == OX_V_DTYPE ? dv->u.dtype : ints ? OX_DT_I64 : OX_DT_F32;
  OxDim d = cdim((int64_t)n);
  set_tensor(out, from_dims(c, dt, &d, 1, NULL));
  return 0;
}

static int rule_clamp(Ctx *c, OxMeta *out) {
  static const int s3[3] = {0, 1, 2};
  int slots[3], n = 0;
  for (int i = 0; i < 3; i++)
    if (i == 0 || c->a.slot[s3[i]]->kind != OX_V_NONE) slots[n++] = s3[i];
  OxDType dt;
  OxDim shape[MAXR];
  int rank = 0;
  const OxTensorMeta *first;
  int rc = pointwise_n(c, out, slots, n, &dt, shape, &rank, &first);
  if (rc) return rc;
  set_tensor(out, from_dims(c, dt, shape, rank, first));
  return 0;
}

/* ------------------------------------------------------------------ linear algebra */

static int same_dtype(Ctx *c, const OxTensorMeta *a, const OxTensorMeta *b) {
  if (a->dtype != b->dtype && a->dtype != OX_DT_UNKNOWN && b->dtype != OX_DT_UNKNOWN)
    return say(c, -1, "operands must have the same dtype, got %s and %s", ox_dtype_abbr(a->dtype),
               ox_dtype_abbr(b->dtype));
  return 0;
}

static int need_rank(Ctx *c, const OxTensorMeta *t, int rank, const char *what) {
  char b[96];
  if (t->rank != rank) return say(c, -1, "%s must be %d-D, got %s", what, rank, tfmt(t, b, sizeof b));
  return 0;
}

static int need_eq(Ctx *c, OxDim a, OxDim b, const OxTensorMeta *ta, const OxTensorMeta *tb) {
  char x[96], y[96];
  if (dim_eq(a, b)) return 0;
  if (a.sym) return sym_fail(c, a);
  if (b.sym) return sym_fail(c, b);
  return say(c, -1, "sizes do not match: %s and %s", tfmt(ta, x, sizeof x), tfmt(tb, y, sizeof y));
}

/* self must broadcast to `shape` (addmm, baddbmm). */
static int broadcast_to(Ctx *c, const OxTensorMeta *self, const OxDim *shape, int rank) {
  OxTensorMeta target = {.dtype = self->dtype, .rank = rank, .shape = (OxDim *)shape};
  OxDim tmp[MAXR];
  int r = 0;
  int rc = broadcast(c, self, &target, tmp, &r);
  if (rc) return rc;
  char a[96], b[96];
  if (r != rank) return say(c, -1, "%s does not broadcast to %s", tfmt(self, a, sizeof a), tfmt(&target, b, sizeof b));
  for (int i = 0; i < r; i++)
    if (!dim_eq(tmp[i], shape[i]))
      return say(c, -1, "%s does not broadcast to %s", tfmt(self, a, sizeof a), tfmt(&target, b, sizeof b));
  return 0;
}

static int rule_mm(Ctx *c, OxMeta *out) {
  const OxTensorMeta *a, *b;
  int rc;
  if ((rc = arg_tensor(c, 0, &a)) || (rc = arg_tensor(c, 1, &b))) return rc;
  if ((rc = need_rank(c, a, 2, "self")) || (rc = need_rank(c, b, 2, "mat2"))) return rc;
  if ((rc = need_eq(c, a->shape[1], b->shape[0], a, b)) || (rc = same_dtype(c, a, b))) return rc;
  OxDim d[2] = {a->shape[0], b->shape[1]};
  set_tensor(out, from_dims(c, a->dtype, d, 2, a));
  return 0;
}

static int rule_bmm(Ctx *c, OxMeta *out) {
  const OxTensorMeta *a, *b;
  int rc;
  if ((rc = arg_tensor(c, 0, &a)) || (rc = arg_tensor(c, 1, &b))) return rc;
  if ((rc = need_rank(c, a, 3, "self")) || (rc = need_rank(c, b, 3, "mat2"))) return rc;
  if ((rc = need_eq(c, a->shape[0], b->shape[0], a, b)) || (rc = need_eq(c, a->shape[2], b->shape[1], a, b)) ||
      (rc = same_dtype(c, a, b)))
    return rc;
  OxDim d[3] = {a->shape[0], a->shape[1], b->shape[2]};
  set_tensor(out, from_dims(c, a->dtype, d, 3, a));
  return 0;
}

static int rule_addmm(Ctx *c, OxMeta *out) {
  const OxTensorMeta *s, *a, *b;
  int rc;
  if ((rc = arg_tensor(c, 0, &s)) || (rc = arg_tensor(c, 1, &a)) || (rc = arg_tensor(c, 2, &b))) return rc;
  if ((rc = need_rank(c, a, 2, "mat1")) || (rc = need_rank(c, b, 2, "mat2"))) return rc;
  if ((rc = need_eq(c, a->shape[1], b->shape[0], a, b)) || (rc = same_dtype(c, a, b)) || (rc = same_dtype(c, s, a)))
    return rc;
  OxDim d[2] = {a->shape[0], b->shape[1]};
  if ((rc = broadcast_to(c, s, d, 2))) return rc;
  set_tensor(out, from_dims(c, a->dtype, d, 2, a));
  return 0;
}

static int rule_baddbmm(Ctx *c, OxMeta *out) {
  const OxTensorMeta *s, *a, *b;
  int rc;
  if ((rc = arg_tensor(c, 0, &s)) || (rc = arg_tensor(c, 1, &a)) || (rc = arg_tensor(c, 2, &b))) return rc;
  if ((rc = need_rank(c, a, 3, "batch1")) || (rc = need_rank(c, b, 3, "batch2"))) return rc;
  if ((rc = need_eq(c, a->shape[0], b->shape[0], a, b)) || (rc = need_eq(c, a->shape[2], b->shape[1], a, b)) ||
      (rc = same_dtype(c, a, b)) || (rc = same_dtype(c, s, a)))
    return rc;
  OxDim d[3] = {a->shape[0], a->shape[1], b->shape[2]};
  if ((rc = broadcast_to(c, s, d, 3))) return rc;
  set_tensor(out, from_dims(c, a->dtype, d, 3, a));
  return 0;
}

static int matmul_shape(Ctx *c, const OxTensorMeta *a, const OxTensorMeta *b, OxDim *out, int *rank) {
  int rc;
  if (a->rank == 0 || b->rank == 0) return say(c, -1, "both arguments to matmul need to be at least 1-D");
  if (a->rank == 1 && b->rank == 1) {
    if ((rc = need_eq(c, a->shape[0], b->shape[0], a, b))) return rc;
    *rank = 0;
    return 0;
  }
  if (b->rank == 1) { /* [..., n, k] @ [k] -> [..., n] */
    if ((rc = need_eq(c, a->shape[a->rank - 1], b->shape[0], a, b))) return rc;
    for (int i = 0; i < a->rank - 1; i++) out[i] = a->shape[i];
    *rank = a->rank - 1;
    return 0;
  }
  OxDim k_a = a->shape[a->rank - 1], k_b = b->shape[b->rank - 2];
  if ((rc = need_eq(c, k_a, k_b, a, b))) return rc;
  OxTensorMeta ba = {.rank = a->rank >= 2 ? a->rank - 2 : 0, .shape = a->shape, .dtype = a->dtype};
  OxTensorMeta bb = {.rank = b->rank - 2, .shape = b->shape, .dtype = b->dtype};
  OxDim batch[MAXR];
  int br = 0;
  if ((rc = broadcast(c, &ba, &bb, batch, &br))) return rc;
  int r = 0;
  for (int i = 0; i < br; i++) out[r++] = batch[i];
  if (a->rank >= 2) out[r++] = a->shape[a->rank - 2];
  out[r++] = b->shape[b->rank - 1];
  *rank = r;
  return 0;
}

/* ------------------------------------------------------------------ einsum */

bool ox_einsum_parse(const char *eq, uint32_t n_ops, const int *ranks, OxEinsum *e, char *err, size_t cap) {
  memset(e, 0, sizeof *e);
  if (!eq) {
    snprintf(err, cap, "einsum: the equation must be a string");
    return false;
  }
  if (n_ops == 0 || n_ops > OX_EINSUM_MAX_OPS) {
    snprintf(err, cap, "einsum: %u operands (1 to %d supported)", n_ops, OX_EINSUM_MAX_OPS);
    return false;
  }
  uint32_t op = 0;
  int len = 0;
  bool arrow = false;
  char *cur = e->sub[0];
  for (const char *p = eq; *p; p++) {
    char ch = *p;
    if (ch == ' ') continue;
    if (ch == '.') {
      snprintf(err, cap, "einsum: '...' in \"%s\" is not supported", eq);
      return false;
    }
    if (ch == ',' && !arrow) {
      if (++op >= n_ops) {
        snprintf(err, cap, "einsum: \"%s\" has more subscript groups than the %u operands", eq, n_ops);
        return false;
      }
      cur = e->sub[op];
      len = 0;
      continue;
    }
    if (ch == '-' && p[1] == '>' && !arrow) {
      arrow = true;
      p++;
      cur = e->out;
      len = 0;
      continue;
    }
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))) {
      snprintf(err, cap, "einsum: unexpected '%c' in \"%s\"", ch, eq);
      return false;
    }
    if (len >= OX_EINSUM_MAX_RANK) {
      snprintf(err, cap, "einsum: more than %d subscripts in one group of \"%s\"", OX_EINSUM_MAX_RANK, eq);
      return false;
    }
    if (memchr(cur, ch, (size_t)len)) {
      snprintf(err, cap, "einsum: subscript '%c' repeated in one group of \"%s\" is not supported", ch, eq);
      return false;
    }
    cur[len++] = ch;
    if (arrow) e->out_rank = len;
    else e->rank[op] = len;
  }
  if (op + 1 != n_ops) {
    snprintf(err, cap, "einsum: \"%s\" has %u subscript groups for %u operands", eq, op + 1, n_ops);
    return false;
  }
  e->n_ops = n_ops;
  int count[128] = {0};
  for (uint32_t i = 0; i < n_ops; i++)
    for (int k = 0; k < e->rank[i]; k++) count[(unsigned char)e->sub[i][k]]++;
  if (arrow) {
    for (int k = 0; k < e->out_rank; k++)
      if (!count[(unsigned char)e->out[k]]) {
        snprintf(err, cap, "einsum: output subscript '%c' of \"%s\" is in no operand", e->out[k], eq);
        return false;
      }
  } else {
    for (int ch = 0; ch < 128; ch++)
      if (count[ch] == 1) e->out[e->out_rank++] = (char)ch;
  }
  for (uint32_t i = 0; ranks && i < n_ops; i++)
    if (ranks[i] != e->rank[i]) {
      snprintf(err, cap, "einsum: operand %u has %d dims but \"%s\" gives it %d subscripts", i, ranks[i], eq,
               e->rank[i]);
      return false;
    }
  return true;
}

static int rule_einsum(Ctx *c, OxMeta *out) {
  const OxValue *eqv = c->a.slot[0], *ops = c->a.slot[1];
  char b[96];
  if (eqv->kind != OX_V_STR) return say(c, -1, "equation must be a string, got %s", ox_value_format(c->g, eqv, b, sizeof b));
  if (ops->kind != OX_V_LIST && ops->kind != OX_V_TUPLE)
    return say(c, -1, "operands must be tensors, got %s", ox_value_format(c->g, ops, b, sizeof b));
  if (ops->n == 0 || ops->n > OX_EINSUM_MAX_OPS) return say(c, -1, "%u operands (1 to %d supported)", ops->n, OX_EINSUM_MAX_OPS);
  const OxTensorMeta *t[OX_EINSUM_MAX_OPS];
  int ranks[OX_EINSUM_MAX_OPS];
  OxDType dt = OX_DT_UNKNOWN;
  for (uint32_t i = 0; i < ops->n; i++) {
    int rc = val_tensor(c, &ops->u.items[i], "operands", &t[i]);
    if (rc) return rc;
    ranks[i] = t[i]->rank;
    if (i && t[i]->dtype != t[0]->dtype) return say(c, -1, "operands must have the same dtype");
    dt = t[i]->dtype;
  }
  OxEinsum e;
  char err[160];
  if (!ox_einsum_parse(eqv->s, ops->n, ranks, &e, err, sizeof err)) return say(c, -1, "%s", err + 8);
  OxDim size[128];
  bool seen[128] = {false};
  for (uint32_t i = 0; i < ops->n; i++)
    for (int k = 0; k < e.rank[i]; k++) {
      unsigned char ch = (unsigned char)e.sub[i][k];
      OxDim d = t[i]->shape[k];
      if (!seen[ch]) {
        seen[ch] = true;
        size[ch] = d;
      } else if (!dim_eq(size[ch], d)) {
        if (d.sym || size[ch].sym) return sym_fail(c, d.sym ? d : size[ch]);
        return say(c, -1, "subscript '%c' has sizes %lld and %lld", ch, (long long)size[ch].v, (long long)d.v);
      }
    }
  OxTensorMeta *o = new_t(c, dt, e.out_rank, t[0]);
  for (int k = 0; k < e.out_rank; k++) o->shape[k] = size[(unsigned char)e.out[k]];
  set_tensor(out, o);
  return 0;
}

static int rule_matmul(Ctx *c, OxMeta *out) {
  const OxTensorMeta *a, *b;
  int rc;
  if ((rc = arg_tensor(c, 0, &a)) || (rc = arg_tensor(c, 1, &b))) return rc;
  if ((rc = same_dtype(c, a, b))) return rc;
  OxDim d[MAXR];
  int r = 0;
  if ((rc = matmul_shape(c, a, b, d, &r))) return rc;
  set_tensor(out, from_dims(c, a->dtype, d, r, a));
  return 0;
}

static const OxValue *kwarg(const OxNode *n, const char *name) {
  for (uint32_t i = 0; n->kwargs.kind == OX_V_DICT && i < n->kwargs.n; i++)
    if (!strcmp(n->kwargs.keys[i], name)) return &n->kwargs.u.items[i];
  return NULL;
}

/* A module hyper-parameter written by the bridge as a kwarg of the call_module node. */
static int module_int(Ctx *c, const char *name, int64_t *v) {
  const OxValue *x = kwarg(ox_graph_node(c->g, c->id), name);
  if (!x) return say(c, 1, "module %s: no %s given (the bridge writes it as a kwarg)", c->a.module_path, name);
  return val_int(c, x, name, v);
}

/* out[..., O] = x[..., I] @ w[O, I].T (+ b[O]) */
static int linear_shape(Ctx *c, const OxTensorMeta *x, const OxValue *wv, const OxValue *bv, OxTensorMeta **res) {
  int rc;
  if (x->rank < 1) return say(c, -1, "input must be at least 1-D");
  OxDim o;
  bool no_out = false;
  if (ox_op_is_module_param(wv)) {
    int64_t in_f, out_f;
    if ((rc = module_int(c, "out_features", &out_f))) return rc;
    if (!module_int(c, "in_features", &in_f) && !x->shape[x->rank - 1].sym && x->shape[x->rank - 1].v != in_f)
      return say(c, -1, "input has %lld features, module expects in_features=%lld",
                 (long long)x->shape[x->rank - 1].v, (long long)in_f);
    o = cdim(out_f);
  } else {
    const OxTensorMeta *w;
    if ((rc = val_tensor(c, wv, "weight", &w))) return rc;
    if (w->rank == 1) {
      if ((rc = need_eq(c, x->shape[x->rank - 1], w->shape[0], x, w))) return rc;
      no_out = true;
      o = cdim(0);
    } else {
      if ((rc = need_rank(c, w, 2, "weight"))) return rc;
      if ((rc = need_eq(c, x->shape[x->rank - 1], w->shape[1], x, w)) || (rc = same_dtype(c, x, w))) return rc;
      o = w->shape[0];
    }
    if (bv && bv->kind == OX_V_NODE) {
      const OxTensorMeta *b;
      if ((rc = val_tensor(c, bv, "bias", &b))) return rc;
      if (!no_out && b->rank == 1 && !dim_eq(b->shape[0], o) && !b->shape[0].sym && !o.sym)
        return say(c, -1, "bias %s does not match %lld output features", ox_dtype_abbr(b->dtype), (long long)o.v);
    }
  }
  int r = no_out ? x->rank - 1 : x->rank;
  OxTensorMeta *t = new_t(c, x->dtype, r, x);
  for (int i = 0; i < x->rank - 1; i++) t->shape[i] = x->shape[i];
  if (!no_out) t->shape[r - 1] = o;
  *res = t;
  return 0;
}

static int rule_linear(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  OxTensorMeta *t;
  if ((rc = linear_shape(c, x, c->a.slot[1], c->a.slot[2], &t))) return rc;
  set_tensor(out, t);
  return 0;
}

static int rule_grouped_mm(Ctx *c, OxMeta *out) {
  const OxValue *xs = c->a.slot[0], *ws = c->a.slot[1], *bs = c->a.slot[2];
  bool xl = xs->kind == OX_V_LIST || xs->kind == OX_V_TUPLE, wl = ws->kind == OX_V_LIST || ws->kind == OX_V_TUPLE;
  if (!xl || !wl) return say(c, -1, "inputs and weights must be lists of tensors");
  bool bl = bs->kind == OX_V_LIST || bs->kind == OX_V_TUPLE;
  if (xs->n != ws->n || (bl && bs->n != xs->n))
    return say(c, -1, "group counts differ: %u inputs, %u weights, %u biases", xs->n, ws->n, bl ? bs->n : 0);
  OxTensorMeta *ts = set_tuple(c, out, xs->n);
  for (uint32_t i = 0; i < xs->n; i++) {
    const OxTensorMeta *x;
    int rc;
    if ((rc = val_tensor(c, &xs->u.items[i], "inputs", &x))) return rc;
    OxTensorMeta *t;
    if ((rc = linear_shape(c, x, &ws->u.items[i], bl ? &bs->u.items[i] : NULL, &t))) return rc;
    ts[i] = *t;
  }
  return 0;
}

/* ------------------------------------------------------------------ normalization */

static int check_normalized(Ctx *c, const OxTensorMeta *x, int *k) {
  int64_t ns[MAXR];
  int rc = val_ints(c, c->a.slot[1], "normalized_shape", ns, k, MAXR);
  if (rc) return rc;
  char b[96];
  if (*k > x->rank) return say(c, -1, "normalized_shape has %d dims but input is %s", *k, tfmt(x, b, sizeof b));
  for (int i = 0; i < *k; i++) {
    OxDim d = x->shape[x->rank - *k + i];
    if (d.sym) return sym_fail(c, d);
    if (d.v != ns[i])
      return say(c, -1, "normalized_shape %s does not match the trailing dims of %s",
                 ox_value_format(c->g, c->a.slot[1], b, sizeof b), tfmt(x, (char[96]){0}, 96));
  }
  return 0;
}

static int rule_layer_norm(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc, k;
  if ((rc = arg_tensor(c, 0, &x)) || (rc = check_normalized(c, x, &k))) return rc;
  set_tensor(out, copy_shape(c, x, x->dtype));
  return 0;
}

static int rule_native_layer_norm(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc, k;
  if ((rc = arg_tensor(c, 0, &x)) || (rc = check_normalized(c, x, &k))) return rc;
  set_tuple(c, out, 3);
  OxTensorMeta *o = tuple_at(c, out, 0, x->dtype, x->rank, x);
  for (int i = 0; i < x->rank; i++) o->shape[i] = x->shape[i];
  /* mean/rstd: reduced dims kept as 1; accumulated in f32 on CUDA for half types */
  OxDType sdt = x->dtype;
  if ((sdt == OX_DT_F16 || sdt == OX_DT_BF16) && x->device && !strncmp(x->device, "cuda", 4)) sdt = OX_DT_F32;
  for (uint32_t j = 1; j < 3; j++) {
    OxTensorMeta *s = tuple_at(c, out, j, sdt, x->rank, x);
    for (int i = 0; i < x->rank; i++) s->shape[i] = i < x->rank - k ? x->shape[i] : cdim(1);
  }
  return 0;
}

static int rule_batch_norm(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  char b[96];
  if (x->rank < 2) return say(c, -1, "input must be at least 2-D, got %s", tfmt(x, b, sizeof b));
  const OxValue *rm = c->a.slot[1];
  if (rm->kind == OX_V_NODE) {
    const OxTensorMeta *m;
    if ((rc = val_tensor(c, rm, "running_mean", &m))) return rc;
    if (m->rank != 1 || !dim_eq(m->shape[0], x->shape[1]))
      if (!(m->rank == 1 && (m->shape[0].sym || x->shape[1].sym)))
        return say(c, -1, "running_mean %s does not match %s channels", tfmt(m, b, sizeof b),
                   tfmt(x, (char[96]){0}, 96));
  }
  int outs = ox_spelling_outputs(c->a.spelling);
  if (outs == 3) {
    set_tuple(c, out, 3);
    OxTensorMeta *o = tuple_at(c, out, 0, x->dtype, x->rank, x);
    for (int i = 0; i < x->rank; i++) o->shape[i] = x->shape[i];
    tuple_at(c, out, 1, x->dtype, -1, x); /* save_mean/save_rstd: backend-dependent, unknown */
    tuple_at(c, out, 2, x->dtype, -1, x);
    return 0;
  }
  set_tensor(out, copy_shape(c, x, x->dtype));
  return 0;
}

/* ------------------------------------------------------------------ reductions */

static int reduce_dims(Ctx *c, const OxTensorMeta *x, const OxValue *dv, bool *mask) {
  for (int i = 0; i < x->rank; i++) mask[i] = false;
  int64_t ds[MAXR];
  int n = 0, rc;
  if (dv->kind == OX_V_NONE || ((dv->kind == OX_V_LIST || dv->kind == OX_V_TUPLE) && dv->n == 0)) {
    for (int i = 0; i < x->rank; i++) mask[i] = true;
    return 0;
  }
  if ((rc = val_ints(c, dv, "dim", ds, &n, MAXR))) return rc;
  for (int i = 0; i < n; i++) {
    int d = 0;
    if ((rc = wrap_dim(c, ds[i], x->rank, &d))) return rc;
    if (x->rank == 0) continue;
    if (mask[d]) return say(c, -1, "dim %d appears twice in the reduction dims", d);
    mask[d] = true;
  }
  return 0;
}

static int rule_reduce(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  if (x->rank > MAXR) return say(c, 1, "rank %d is beyond %d", x->rank, MAXR);
  bool mask[MAXR];
  if ((rc = reduce_dims(c, x, c->a.slot[1], mask))) return rc;
  const OxValue *kd = c->a.slot[2], *dtv = c->a.slot[3];
  bool keep = kd->kind == OX_V_BOOL && kd->u.b;
  OxDType dt = x->dtype;
  if (dtv->kind == OX_V_DTYPE) dt = dtv->u.dtype;
  else if (c->a.op == OX_OPID_SUM && (category(dt) == 0 || category(dt) == 1)) dt = OX_DT_I64;
  else if (c->a.op == OX_OPID_MEAN && (category(dt) == 0 || category(dt) == 1))
    return say(c, -1, "could not infer output dtype for %s input (pass dtype=)", ox_dtype_abbr(dt));
  OxDim d[MAXR];
  int r = 0;
  for (int i = 0; i < x->rank; i++) {
    if (!mask[i]) d[r++] = x->shape[i];
    else if (keep) d[r++] = cdim(1);
  }
  set_tensor(out, from_dims(c, dt, d, r, x));
  return 0;
}

static int rule_softmax(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc, d;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  const OxValue *dv = c->a.slot[1];
  if (dv->kind == OX_V_NONE) d = (x->rank == 0 || x->rank == 1 || x->rank == 3) ? 0 : 1; /* torch's legacy */
  else {
    int64_t v;
    if ((rc = slot_int(c, 1, &v)) || (rc = wrap_dim(c, v, x->rank, &d))) return rc;
  }
  OxDType dt = x->dtype;
  if (c->a.slot[2]->kind == OX_V_DTYPE) dt = c->a.slot[2]->u.dtype;
  else if (category(dt) == 0 || category(dt) == 1)
    return say(c, -1, "needs a floating-point input, got %s", ox_dtype_abbr(dt));
  set_tensor(out, copy_shape(c, x, dt));
  return 0;
}

/* ------------------------------------------------------------------ split / cat plumbing */

static int split_out(Ctx *c, OxMeta *out, const OxTensorMeta *x, int d, const int64_t *sizes, int n) {
  set_tuple(c, out, (uint32_t)n);
  for (int k = 0; k < n; k++) {
    OxTensorMeta *t = tuple_at(c, out, (uint32_t)k, x->dtype, x->rank, x);
    for (int i = 0; i < x->rank; i++) t->shape[i] = i == d ? cdim(sizes[k]) : x->shape[i];
  }
  return 0;
}

static int split_setup(Ctx *c, const OxTensorMeta **x, int dslot, int *d) {
  int64_t dv;
  int rc;
  if ((rc = arg_tensor(c, 0, x)) || (rc = slot_int(c, dslot, &dv)) || (rc = wrap_dim(c, dv, (*x)->rank, d))) return rc;
  if ((*x)->rank == 0) return say(c, -1, "cannot split a 0-d tensor");
  if ((*x)->shape[*d].sym) return sym_fail(c, (*x)->shape[*d]);
  return 0;
}

static int rule_split(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int d = 0, rc;
  if ((rc = split_setup(c, &x, 2, &d))) return rc;
  int64_t size = x->shape[d].v;
  const OxValue *sv = c->a.slot[1];
  if (sv->kind == OX_V_LIST || sv->kind == OX_V_TUPLE) {
    int64_t *sizes = salloc(c, (sv->n + 1) * sizeof(int64_t));
    int64_t sum = 0;
    for (uint32_t i = 0; i < sv->n; i++) {
      if ((rc = val_int(c, &sv->u.items[i], "split_sizes", &sizes[i]))) return rc;
      if (sizes[i] < 0) return say(c, -1, "split size %lld is negative", (long long)sizes[i]);
      if (!add_ok(sum, sizes[i], &sum)) return say(c, -1, "split sizes overflow");
    }
    char b[96];
    if (sum != size)
      return say(c, -1, "sizes %s sum to %lld but dim %d has size %lld", ox_value_format(c->g, sv, b, sizeof b),
                 (long long)sum, d, (long long)size);
    return split_out(c, out, x, d, sizes, (int)sv->n);
  }
  int64_t ss;
  if ((rc = slot_int(c, 1, &ss))) return rc;
  if (ss < 0 || (ss == 0 && size != 0))
    return say(c, -1, "split_size %lld is invalid for dim %d of size %lld", (long long)ss, d, (long long)size);
  int64_t n = size == 0 ? 1 : ceil_div(size, ss);
  if (n > 65536) return say(c, 1, "%lld outputs is too many", (long long)n);
  int64_t *sizes = salloc(c, (size_t)n * sizeof(int64_t));
  for (int64_t k = 0; k < n; k++) sizes[k] = k < n - 1 ? ss : size - ss * (n - 1);
  return split_out(c, out, x, d, sizes, (int)n);
}

static int rule_chunk(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int d = 0, rc;
  int64_t chunks;
  if ((rc = slot_int(c, 1, &chunks))) return rc;
  if (chunks <= 0) return say(c, -1, "chunks must be positive, got %lld", (long long)chunks);
  if ((rc = split_setup(c, &x, 2, &d))) return rc;
  int64_t size = x->shape[d].v;
  if (chunks > 65536) return say(c, 1, "%lld outputs is too many", (long long)chunks);
  int64_t cs = ceil_div(size, chunks);
  int64_t n;
  int64_t *sizes;
  if (cs == 0) { /* empty dim: `chunks` empty pieces, as torch does */
    n = chunks;
    sizes = salloc(c, (size_t)n * sizeof(int64_t));
  } else {
    n = ceil_div(size, cs);
    sizes = salloc(c, (size_t)n * sizeof(int64_t));
    for (int64_t k = 0; k < n; k++) sizes[k] = k < n - 1 ? cs : size - cs * (n - 1);
  }
  return split_out(c, out, x, d, sizes, (int)n);
}

static int rule_unbind(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int d = 0, rc;
  if ((rc = split_setup(c, &x, 1, &d))) return rc;
  int64_t n = x->shape[d].v;
  if (n > 65536) return say(c, 1, "%lld outputs is too many", (long long)n);
  set_tuple(c, out, (uint32_t)n);
  for (int64_t k = 0; k < n; k++) {
    OxTensorMeta *t = tuple_at(c, out, (uint32_t)k, x->dtype, x->rank - 1, x);
    for (int i = 0, j = 0; i < x->rank; i++)
      if (i != d) t->shape[j++] = x->shape[i];
  }
  return 0;
}

static int tensor_list(Ctx *c, const OxTensorMeta ***ts, uint32_t *n) {
  const OxValue *v = c->a.slot[0];
  char b[96];
  if (v->kind != OX_V_LIST && v->kind != OX_V_TUPLE)
    return say(c, -1, "tensors must be a list, got %s", ox_value_format(c->g, v, b, sizeof b));
  if (v->n == 0) return say(c, -1, "expects a non-empty list of tensors");
  *ts = salloc(c, v->n * sizeof **ts);
  for (uint32_t i = 0; i < v->n; i++) {
    int rc = val_tensor(c, &v->u.items[i], "tensors", &(*ts)[i]);
    if (rc) return rc;
  }
  *n = v->n;
  return 0;
}

static int rule_cat(Ctx *c, OxMeta *out) {
  const OxTensorMeta **ts;
  uint32_t n;
  int rc;
  if ((rc = tensor_list(c, &ts, &n))) return rc;
  /* legacy: 1-D empty tensors are skipped when concatenating higher-rank tensors */
  const OxTensorMeta *ref = NULL;
  for (uint32_t i = 0; i < n && !ref; i++)
    if (!(ts[i]->rank == 1 && !ts[i]->shape[0].sym && ts[i]->shape[0].v == 0)) ref = ts[i];
  if (!ref) ref = ts[0];
  if (ref->rank == 0) return say(c, -1, "zero-dimensional tensors cannot be concatenated");
  int64_t dv;
  int d = 0;
  if ((rc = slot_int(c, 1, &dv)) || (rc = wrap_dim(c, dv, ref->rank, &d))) return rc;
  OxTensorMeta *t = copy_shape(c, ref, ref->dtype);
  int64_t total = 0;
  const char *sym = NULL;
  OxDType dt = ref->dtype;
  char a[96], b[96];
  for (uint32_t i = 0; i < n; i++) {
    const OxTensorMeta *x = ts[i];
    if (x != ref && x->rank == 1 && !x->shape[0].sym && x->shape[0].v == 0) continue;
    dt = promote2(dt, x->dtype);
    if (x->rank != ref->rank)
      return say(c, -1, "tensors must have the same rank: %s vs %s", tfmt(ref, a, sizeof a), tfmt(x, b, sizeof b));
    for (int k = 0; k < ref->rank; k++) {
      if (k == d) continue;
      if (!dim_eq(x->shape[k], ref->shape[k])) {
        if (x->shape[k].sym) return sym_fail(c, x->shape[k]);
        if (ref->shape[k].sym) return sym_fail(c, ref->shape[k]);
        return say(c, -1, "dim %d sizes differ: %s vs %s", k, tfmt(ref, a, sizeof a), tfmt(x, b, sizeof b));
      }
    }
    if (x->shape[d].sym) sym = x->shape[d].sym;
    else if (!add_ok(total, x->shape[d].v, &total)) return say(c, -1, "cat sizes overflow");
  }
  if (sym) return say(c, 1, "symbolic size %s in %s", sym, c->op);
  t->shape[d] = cdim(total);
  t->dtype = dt;
  set_tensor(out, t);
  return 0;
}

static int rule_stack(Ctx *c, OxMeta *out) {
  const OxTensorMeta **ts;
  uint32_t n;
  int rc;
  if ((rc = tensor_list(c, &ts, &n))) return rc;
  int64_t dv;
  int d = 0;
  if ((rc = slot_int(c, 1, &dv)) || (rc = wrap_dim(c, dv, ts[0]->rank + 1, &d))) return rc;
  char a[96], b[96];
  OxDType dt = ts[0]->dtype;
  for (uint32_t i = 1; i < n; i++) {
    bool same = ts[i]->rank == ts[0]->rank;
    for (int k = 0; same && k < ts[0]->rank; k++) same = dim_eq(ts[i]->shape[k], ts[0]->shape[k]);
    if (!same)
      return say(c, -1, "tensors must have the same shape: %s vs %s", tfmt(ts[0], a, sizeof a),
                 tfmt(ts[i], b, sizeof b));
    dt = promote2(dt, ts[i]->dtype);
  }
  OxTensorMeta *t = new_t(c, dt, ts[0]->rank + 1, ts[0]);
  for (int i = 0, j = 0; i <= ts[0]->rank; i++) t->shape[i] = i == d ? cdim(n) : ts[0]->shape[j++];
  set_tensor(out, t);
  return 0;
}

/* Python slice length for concrete size; start/stop may be absent. */
static int64_t slice_len(int64_t size, bool has_start, int64_t start, bool has_stop, int64_t stop, int64_t step) {
  if (!has_start) start = 0;
  if (!has_stop || stop > size) stop = size;
  if (start < 0) start += size;
  if (stop < 0) stop += size;
  if (start < 0) start = 0;
  if (stop < 0) stop = 0;
  if (start > size) start = size;
  if (stop <= start) return 0;
  return ceil_div(stop - start, step);
}

/* One slice on dim size d: start/stop/step values (NONE allowed). */
static int apply_slice(Ctx *c, OxDim d, const OxValue *sv, const OxValue *ev, const OxValue *stv, OxDim *res) {
  int64_t start = 0, stop = 0, step = 1;
  bool hs = sv && sv->kind != OX_V_NONE, he = ev && ev->kind != OX_V_NONE;
  int rc;
  if (stv && stv->kind != OX_V_NONE) {
    if ((rc = val_int(c, stv, "step", &step))) return rc;
    if (step <= 0) return say(c, -1, "slice step must be positive, got %lld", (long long)step);
  }
  if (hs && (rc = val_int(c, sv, "start", &start))) return rc;
  bool end_is_dim = false;
  if (he) {
    OxDim e;
    if ((rc = val_dim(c, ev, "end", &e))) return rc;
    if (e.sym) {
      if (!(d.sym && !strcmp(d.sym, e.sym))) return say(c, 1, "symbolic size %s in %s", e.sym, c->op);
      end_is_dim = true;
    } else if (e.v >= BIG_END) {
      he = false;
    } else {
      stop = e.v;
    }
  }
  if (end_is_dim) he = false;
  if (d.sym) {
    if ((!hs || start == 0) && !he && step == 1) { *res = d; return 0; }
    return sym_fail(c, d);
  }
  *res = cdim(slice_len(d.v, hs, start, he, stop, step));
  return 0;
}

/* x[index] for a tensor x: ints, slices, None, Ellipsis (and tuples of them). */
static int tensor_index(Ctx *c, const OxTensorMeta *x, const OxValue *idx, OxMeta *out) {
  const OxValue *items = idx;
  uint32_t n = 1;
  if (idx->kind == OX_V_TUPLE) { items = idx->u.items; n = idx->n; }
  int consumed = 0, ellipsis = -1;
  char b[96];
  for (uint32_t i = 0; i < n; i++) {
    const OxValue *it = &items[i];
    if (it->kind == OX_V_INT || it->kind == OX_V_SLICE || it->kind == OX_V_SYM) consumed++;
    else if (it->kind == OX_V_NONE) {
    } else if (it->kind == OX_V_ELLIPSIS) {
      if (ellipsis >= 0) return say(c, -1, "an index can only have a single ellipsis");
      ellipsis = (int)i;
    } else if (it->kind == OX_V_NODE) {
      const OxNode *m = ox_graph_node(c->g, it->u.node);
      if (m && (m->meta.kind == OX_META_SYMINT || m->meta.kind == OX_META_SCALAR)) consumed++;
      else return say(c, 1, "advanced (tensor) indexing is not inferred");
    } else if (it->kind == OX_V_LIST) {
      return say(c, 1, "advanced (list) indexing is not inferred");
    } else {
      return say(c, -1, "bad index %s", ox_value_format(c->g, it, b, sizeof b));
    }
  }
  if (consumed > x->rank) return say(c, -1, "too many indices (%d) for a tensor of rank %d", consumed, x->rank);
  OxDim d[MAXR];
  int r = 0, src = 0;
  for (uint32_t i = 0; i < n; i++) {
    const OxValue *it = &items[i];
    if (r >= MAXR) return say(c, 1, "rank is beyond %d", MAXR);
    if (it->kind == OX_V_NONE) { d[r++] = cdim(1); continue; }
    if (it->kind == OX_V_ELLIPSIS) {
      for (int k = 0; k < x->rank - consumed; k++) d[r++] = x->shape[src++];
      continue;
    }
    OxDim sz = x->shape[src++];
    if (it->kind == OX_V_SLICE) {
      int rc = apply_slice(c, sz, &it->u.items[0], &it->u.items[1], &it->u.items[2], &d[r]);
      if (rc) return rc;
      r++;
    } else if (it->kind == OX_V_INT && !sz.sym && (it->u.i >= sz.v || it->u.i < -sz.v)) {
      return say(c, -1, "index %lld is out of bounds for dim %d with size %lld", (long long)it->u.i, src - 1,
                 (long long)sz.v);
    }
  }
  while (src < x->rank) d[r++] = x->shape[src++];
  set_tensor(out, from_dims(c, x->dtype, d, r, x));
  return 0;
}

/* An LSTM's second output, (h_n, c_n): its meta cannot hold a nested tuple, so getitem(lstm, 1)
 * reads the LSTM's input and settings: two [D * num_layers, N, H] ([D * num_layers, H] unbatched) */
static int lstm_state(Ctx *c, const OxNode *lstm, OxMeta *out) {
  OxOpArgs a;
  char err[160];
  if (ox_op_normalize(c->g, lstm, &a, err, sizeof err) != 0) return say(c, -1, "%s: %s", lstm->name, err);
  const OxValue *xv = a.slot[0];
  const OxNode *xn = xv && xv->kind == OX_V_NODE ? ox_graph_node(c->g, xv->u.node) : NULL;
  const OxTensorMeta *x = xn ? node_tensor(xn) : NULL;
  if (!x || (x->rank != 2 && x->rank != 3)) return say(c, 1, "the input of %s has no known shape", lstm->name);
  if (a.slot[2]->kind != OX_V_INT || a.slot[4]->kind != OX_V_INT || a.slot[2]->u.i <= 0 || a.slot[4]->u.i <= 0)
    return say(c, 1, "%s: hidden_size or num_layers unknown", lstm->name);
  int64_t d = a.slot[7]->kind == OX_V_BOOL && a.slot[7]->u.b ? 2 : 1;
  bool batched = x->rank == 3, bf = a.slot[6]->kind == OX_V_BOOL && a.slot[6]->u.b;
  set_tuple(c, out, 2);
  for (uint32_t i = 0; i < 2; i++) {
    OxTensorMeta *t = tuple_at(c, out, i, x->dtype, batched ? 3 : 2, x);
    t->shape[0] = cdim(d * a.slot[4]->u.i);
    if (batched) t->shape[1] = x->shape[bf ? 0 : 1];
    t->shape[batched ? 2 : 1] = cdim(a.slot[2]->u.i);
  }
  return 0;
}

static int rule_getitem(Ctx *c, OxMeta *out) {
  const OxValue *sv = c->a.slot[0], *iv = c->a.slot[1];
  char b[96];
  if (sv->kind != OX_V_NODE)
    return say(c, 1, "indexing a constant %s is not inferred", ox_value_format(c->g, sv, b, sizeof b));
  const OxNode *src = ox_graph_node(c->g, sv->u.node);
  if (!src) return say(c, -1, "indexes a missing node");
  if (ox_op_of_node(c->g, src, NULL) == OX_OPID_LSTM && iv->kind == OX_V_INT && (iv->u.i == 1 || iv->u.i == -1))
    return lstm_state(c, src, out);
  if (src->meta.kind == OX_META_TUPLE) {
    int64_t k;
    int rc;
    if ((rc = val_int(c, iv, "index", &k))) return rc;
    int64_t n = src->meta.n;
    if (k < -n || k >= n) return say(c, -1, "index %lld out of range for %s with %lld outputs", (long long)k, src->name, (long long)n);
    if (k < 0) k += n;
    const OxTensorMeta *t = &src->meta.t[k];
    if (t->rank < 0) return say(c, 1, "output %lld of %s has no known shape", (long long)k, src->name);
    OxTensorMeta *o = new_t(c, t->dtype, t->rank, t);
    for (int i = 0; i < t->rank; i++) o->shape[i] = t->shape[i];
    set_tensor(out, o);
    return 0;
  }
  if (src->meta.kind == OX_META_TENSOR) {
    const OxTensorMeta *x = node_tensor(src);
    if (!x) return say(c, 1, "input %s has no known shape", src->name);
    return tensor_index(c, x, iv, out);
  }
  /* x.size()[k], x.shape[k] */
  OxNodeId whole = whole_size_of(c->g, src);
  if (whole) {
    {
      const OxTensorMeta *x = node_tensor(ox_graph_node(c->g, whole));
      if (!x) return say(c, 1, "input of %s has no known shape", src->name);
      if (iv->kind == OX_V_SLICE) { /* x.shape[-2:]: a torch.Size, a Python value */
        memset(out, 0, sizeof *out);
        out->kind = OX_META_SCALAR;
        return 0;
      }
      int64_t k;
      int d = 0, rc;
      if ((rc = val_int(c, iv, "index", &k)) || (rc = wrap_dim(c, k, x->rank, &d))) return rc;
      memset(out, 0, sizeof *out);
      if (x->shape[d].sym) {
        out->kind = OX_META_SYMINT;
        out->sym = x->shape[d].sym;
      } else {
        out->kind = OX_META_SCALAR;
      }
      return 0;
    }
  }
  return say(c, 1, "input %s has no known shape", src->name);
}

static int rule_select(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int64_t dv, idx;
  int d = 0, rc;
  if ((rc = arg_tensor(c, 0, &x)) || (rc = slot_int(c, 1, &dv))) return rc;
  if (x->rank == 0) return say(c, -1, "cannot select on a 0-d tensor");
  if ((rc = wrap_dim(c, dv, x->rank, &d))) return rc;
  OxDim sz = x->shape[d];
  rc = slot_int(c, 2, &idx);
  if (rc < 0) return rc;
  if (rc == 0 && !sz.sym && (idx >= sz.v || idx < -sz.v))
    return say(c, -1, "index %lld out of range for dim %d of size %lld", (long long)idx, d, (long long)sz.v);
  OxTensorMeta *t = new_t(c, x->dtype, x->rank - 1, x);
  for (int i = 0, j = 0; i < x->rank; i++)
    if (i != d) t->shape[j++] = x->shape[i];
  set_tensor(out, t);
  return 0;
}

static int rule_slice(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int64_t dv;
  int d = 0, rc;
  if ((rc = arg_tensor(c, 0, &x)) || (rc = slot_int(c, 1, &dv)) || (rc = wrap_dim(c, dv, x->rank, &d))) return rc;
  if (x->rank == 0) return say(c, -1, "cannot slice a 0-d tensor");
  OxTensorMeta *t = copy_shape(c, x, x->dtype);
  if ((rc = apply_slice(c, x->shape[d], c->a.slot[2], c->a.slot[3], c->a.slot[4], &t->shape[d]))) return rc;
  set_tensor(out, t);
  return 0;
}

static int rule_narrow(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int64_t dv, start, len;
  int d = 0, rc;
  if ((rc = arg_tensor(c, 0, &x)) || (rc = slot_int(c, 1, &dv)) || (rc = wrap_dim(c, dv, x->rank, &d)) ||
      (rc = slot_int(c, 3, &len)))
    return rc;
  if (x->rank == 0) return say(c, -1, "cannot narrow a 0-d tensor");
  OxDim sz = x->shape[d];
  rc = slot_int(c, 2, &start);
  if (rc < 0) return rc;
  if (len < 0) return say(c, -1, "length %lld is negative", (long long)len);
  if (rc == 0 && !sz.sym) {
    if (start < -sz.v || start > sz.v) return say(c, -1, "start %lld out of range for size %lld", (long long)start, (long long)sz.v);
    if (start < 0) start += sz.v;
    if (len > sz.v - start)
      return say(c, -1, "start (%lld) + length (%lld) exceeds dim %d of size %lld", (long long)start,
                 (long long)len, d, (long long)sz.v);
  }
  OxTensorMeta *t = copy_shape(c, x, x->dtype);
  t->shape[d] = cdim(len);
  set_tensor(out, t);
  return 0;
}

/* ------------------------------------------------------------------ shape / layout views */

static int rule_squeeze(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  if (x->rank > MAXR) return say(c, 1, "rank %d is beyond %d", x->rank, MAXR);
  bool drop[MAXR] = {0};
  const OxValue *dv = c->a.slot[1];
  if (dv->kind == OX_V_NONE) {
    for (int i = 0; i < x->rank; i++) drop[i] = !x->shape[i].sym && x->shape[i].v == 1;
  } else {
    int64_t ds[MAXR];
    int n;
    if ((rc = val_ints(c, dv, "dim", ds, &n, MAXR))) return rc;
    for (int k = 0; k < n; k++) {
      int d = 0;
      if ((rc = wrap_dim(c, ds[k], x->rank, &d))) return rc;
      if (x->rank == 0) continue;
      if (x->shape[d].sym) return sym_fail(c, x->shape[d]);
      drop[d] = x->shape[d].v == 1;
    }
  }
  OxDim d[MAXR];
  int r = 0;
  for (int i = 0; i < x->rank; i++)
    if (!drop[i]) d[r++] = x->shape[i];
  set_tensor(out, from_dims(c, x->dtype, d, r, x));
  return 0;
}

static int rule_unsqueeze(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int64_t dv;
  int d = 0, rc;
  if ((rc = arg_tensor(c, 0, &x)) || (rc = slot_int(c, 1, &dv)) || (rc = wrap_dim(c, dv, x->rank + 1, &d))) return rc;
  OxTensorMeta *t = new_t(c, x->dtype, x->rank + 1, x);
  for (int i = 0, j = 0; i <= x->rank; i++) t->shape[i] = i == d ? cdim(1) : x->shape[j++];
  set_tensor(out, t);
  return 0;
}

static int rule_view(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc, n;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  const OxValue *sv = c->a.slot[1];
  if (sv->kind == OX_V_DTYPE) return say(c, 1, "view(dtype) is not inferred");
  OxDim d[MAXR];
  if ((rc = val_dims(c, sv, "size", d, &n, MAXR))) return rc;
  int infer = -1;
  int64_t known = 1;
  char b0[96];
  const char *tsyms[MAXR];
  int nts = 0;
  for (int i = 0; i < n; i++) {
    if (d[i].sym) { tsyms[nts++] = d[i].sym; continue; }
    if (d[i].v == -1) {
      if (infer >= 0) return say(c, -1, "only one dimension can be inferred");
      infer = i;
    } else if (d[i].v < 0) {
      return say(c, -1, "invalid shape dimension %lld", (long long)d[i].v);
    } else if (!mul_ok(known, d[i].v, &known)) {
      return say(c, -1, "shape %s overflows", ox_value_format(c->g, sv, b0, sizeof b0));
    }
  }
  int64_t numel = 1;
  const char *isyms[MAXR];
  int nis = 0;
  for (int i = 0; i < x->rank; i++) {
    if (x->shape[i].sym) isyms[nis++] = x->shape[i].sym;
    else if (!mul_ok(numel, x->shape[i].v, &numel)) return say(c, -1, "the input's sizes overflow");
  }
  char b[96], e[96];
  if (nis || nts) {
    if (infer < 0) { /* trust the printed shape: it already names its symbols */
      set_tensor(out, from_dims(c, x->dtype, d, n, x));
      return 0;
    }
    /* cancel target symbols against input symbols; one leftover symbol may fill -1 */
    bool used[MAXR] = {0};
    for (int j = 0; j < nts; j++) {
      bool found = false;
      for (int i = 0; i < nis && !found; i++)
        if (!used[i] && !strcmp(isyms[i], tsyms[j])) used[i] = found = true;
      if (!found) return say(c, 1, "symbolic size %s in %s", tsyms[j], c->op);
    }
    const char *left = NULL;
    int nleft = 0;
    for (int i = 0; i < nis; i++)
      if (!used[i]) { left = isyms[i]; nleft++; }
    if (nleft == 0 && known && numel % known == 0) d[infer] = cdim(numel / known);
    else if (nleft == 1 && known == numel) d[infer] = (OxDim){0, left};
    else return say(c, 1, "symbolic size %s in %s", left ? left : isyms[0], c->op);
    set_tensor(out, from_dims(c, x->dtype, d, n, x));
    return 0;
  }
  if (infer >= 0) {
    if (known == 0 || numel % known)
      return say(c, -1, "shape %s is invalid for input %s", ox_value_format(c->g, sv, b, sizeof b), tfmt(x, e, sizeof e));
    d[infer] = cdim(numel / known);
  } else if (known != numel) {
    return say(c, -1, "shape %s is invalid for input %s", ox_value_format(c->g, sv, b, sizeof b), tfmt(x, e, sizeof e));
  }
  set_tensor(out, from_dims(c, x->dtype, d, n, x));
  return 0;
}

static int rule_flatten(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int64_t s0, e0;
  int s, e, rc;
  if ((rc = arg_tensor(c, 0, &x)) || (rc = slot_int(c, 1, &s0)) || (rc = slot_int(c, 2, &e0))) return rc;
  if (x->rank == 0) {
    OxDim one = cdim(1);
    set_tensor(out, from_dims(c, x->dtype, &one, 1, x));
    return 0;
  }
  if ((rc = wrap_dim(c, s0, x->rank, &s)) || (rc = wrap_dim(c, e0, x->rank, &e))) return rc;
  if (s > e) return say(c, -1, "start_dim %d comes after end_dim %d", s, e);
  OxDim d[MAXR];
  int r = 0;
  for (int i = 0; i < s; i++) d[r++] = x->shape[i];
  if (s == e) d[r++] = x->shape[s];
  else {
    int64_t p = 1;
    for (int i = s; i <= e; i++) {
      if (x->shape[i].sym) return sym_fail(c, x->shape[i]);
      if (!mul_ok(p, x->shape[i].v, &p)) return say(c, -1, "the flattened size overflows");
    }
    d[r++] = cdim(p);
  }
  for (int i = e + 1; i < x->rank; i++) d[r++] = x->shape[i];
  set_tensor(out, from_dims(c, x->dtype, d, r, x));
  return 0;
}

static int rule_unflatten(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int64_t dv;
  int d, rc, n;
  if ((rc = arg_tensor(c, 0, &x)) || (rc = slot_int(c, 1, &dv)) || (rc = wrap_dim(c, dv, x->rank, &d))) return rc;
  if (x->rank == 0) return say(c, -1, "cannot unflatten a 0-d tensor");
  OxDim sz[MAXR];
  if ((rc = val_dims(c, c->a.slot[2], "sizes", sz, &n, MAXR))) return rc;
  if (x->rank - 1 + n > MAXR) return say(c, 1, "rank is beyond %d", MAXR);
  if (x->shape[d].sym) {
    if (n == 1 && (sz[0].sym ? !strcmp(sz[0].sym, x->shape[d].sym) : sz[0].v == -1)) sz[0] = x->shape[d];
    else return sym_fail(c, x->shape[d]);
  } else {
    int infer = -1;
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
      if (sz[i].sym) return sym_fail(c, sz[i]);
      if (sz[i].v == -1) {
        if (infer >= 0) return say(c, -1, "only one dimension can be inferred");
        infer = i;
      } else if (!mul_ok(p, sz[i].v, &p)) {
        return say(c, -1, "sizes overflow");
      }
    }
    char b[96];
    if (infer >= 0) {
      if (p == 0 || x->shape[d].v % p) return say(c, -1, "sizes %s do not divide dim %d of size %lld",
                                                  ox_value_format(c->g, c->a.slot[2], b, sizeof b), d, (long long)x->shape[d].v);
      sz[infer] = cdim(x->shape[d].v / p);
    } else if (p != x->shape[d].v) {
      return say(c, -1, "sizes %s do not multiply to dim %d of size %lld",
                 ox_value_format(c->g, c->a.slot[2], b, sizeof b), d, (long long)x->shape[d].v);
    }
  }
  OxTensorMeta *t = new_t(c, x->dtype, x->rank - 1 + n, x);
  int r = 0;
  for (int i = 0; i < x->rank; i++) {
    if (i == d) for (int k = 0; k < n; k++) t->shape[r++] = sz[k];
    else t->shape[r++] = x->shape[i];
  }
  set_tensor(out, t);
  return 0;
}

static int rule_permute(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc, n;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  int64_t ds[MAXR];
  if ((rc = val_ints(c, c->a.slot[1], "dims", ds, &n, MAXR))) return rc;
  char b[96];
  if (n != x->rank)
    return say(c, -1, "dims %s do not match a tensor of rank %d", ox_value_format(c->g, c->a.slot[1], b, sizeof b), x->rank);
  bool seen[MAXR] = {0};
  OxTensorMeta *t = new_t(c, x->dtype, x->rank, x);
  for (int i = 0; i < n; i++) {
    int d = 0;
    if ((rc = wrap_dim(c, ds[i], x->rank, &d))) return rc;
    if (seen[d]) return say(c, -1, "dim %d repeats in %s", d, ox_value_format(c->g, c->a.slot[1], b, sizeof b));
    seen[d] = true;
    t->shape[i] = x->shape[d];
  }
  set_tensor(out, t);
  return 0;
}

static int rule_transpose(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int64_t a0, b0;
  int a, b, rc;
  if ((rc = arg_tensor(c, 0, &x)) || (rc = slot_int(c, 1, &a0)) || (rc = slot_int(c, 2, &b0)) ||
      (rc = wrap_dim(c, a0, x->rank, &a)) || (rc = wrap_dim(c, b0, x->rank, &b)))
    return rc;
  OxTensorMeta *t = copy_shape(c, x, x->dtype);
  if (x->rank > 0) {
    t->shape[a] = x->shape[b];
    t->shape[b] = x->shape[a];
  }
  set_tensor(out, t);
  return 0;
}

static int rule_t(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  if (x->rank > 2) return say(c, -1, "expects a tensor with <= 2 dimensions, got %d", x->rank);
  OxTensorMeta *t = copy_shape(c, x, x->dtype);
  if (x->rank == 2) {
    t->shape[0] = x->shape[1];
    t->shape[1] = x->shape[0];
  }
  set_tensor(out, t);
  return 0;
}

static int rule_movedim(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc, ns, nd;
  int64_t s0[MAXR], d0[MAXR];
  if ((rc = arg_tensor(c, 0, &x)) || (rc = val_ints(c, c->a.slot[1], "source", s0, &ns, MAXR)) ||
      (rc = val_ints(c, c->a.slot[2], "destination", d0, &nd, MAXR)))
    return rc;
  if (ns != nd) return say(c, -1, "source and destination have different lengths (%d vs %d)", ns, nd);
  int perm[MAXR];
  bool src_used[MAXR] = {0}, dst_used[MAXR] = {0};
  for (int i = 0; i < x->rank; i++) perm[i] = -1;
  for (int i = 0; i < ns; i++) {
    int s, d;
    if ((rc = wrap_dim(c, s0[i], x->rank, &s)) || (rc = wrap_dim(c, d0[i], x->rank, &d))) return rc;
    if (src_used[s] || dst_used[d]) return say(c, -1, "repeated dim in source or destination");
    src_used[s] = dst_used[d] = true;
    perm[d] = s;
  }
  int next = 0;
  for (int i = 0; i < x->rank; i++) {
    if (perm[i] >= 0) continue;
    while (src_used[next]) next++;
    perm[i] = next++;
  }
  OxTensorMeta *t = new_t(c, x->dtype, x->rank, x);
  for (int i = 0; i < x->rank; i++) t->shape[i] = x->shape[perm[i]];
  set_tensor(out, t);
  return 0;
}

static int rule_expand(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc, n;
  OxDim d[MAXR];
  if ((rc = arg_tensor(c, 0, &x)) || (rc = val_dims(c, c->a.slot[1], "size", d, &n, MAXR))) return rc;
  char a[96], b[96];
  if (n < x->rank)
    return say(c, -1, "size %s has fewer dims than %s", ox_value_format(c->g, c->a.slot[1], b, sizeof b), tfmt(x, a, sizeof a));
  int lead = n - x->rank;
  for (int i = 0; i < n; i++) {
    if (i < lead) {
      if (!d[i].sym && d[i].v < 0) return say(c, -1, "-1 is not allowed for a new leading dim");
      continue;
    }
    OxDim s = x->shape[i - lead];
    if (!d[i].sym && d[i].v == -1) d[i] = s;
    else if (dim_eq(d[i], s)) {
    } else if (!s.sym && s.v == 1) {
    } else if (s.sym || d[i].sym) {
      return sym_fail(c, s.sym ? s : d[i]);
    } else {
      return say(c, -1, "cannot expand %s to %s", tfmt(x, a, sizeof a), ox_value_format(c->g, c->a.slot[1], b, sizeof b));
    }
  }
  set_tensor(out, from_dims(c, x->dtype, d, n, x));
  return 0;
}

/* ------------------------------------------------------------------ embeddings */

static int embed_dim(Ctx *c, int wslot, OxDim *D, OxDType *dt, const OxTensorMeta **like) {
  const OxValue *wv = c->a.slot[wslot];
  int rc;
  if (ox_op_is_module_param(wv)) {
    int64_t v;
    if ((rc = module_int(c, "embedding_dim", &v))) return rc;
    *D = cdim(v);
    *dt = OX_DT_F32; /* nn.Embedding/EmbeddingBag default parameter dtype */
    const OxValue *dv = kwarg(ox_graph_node(c->g, c->id), "dtype");
    if (dv && dv->kind == OX_V_DTYPE) *dt = dv->u.dtype;
    *like = NULL;
    return 0;
  }
  const OxTensorMeta *w;
  if ((rc = val_tensor(c, wv, "weight", &w))) return rc;
  if ((rc = need_rank(c, w, 2, "weight"))) return rc;
  *D = w->shape[1];
  *dt = w->dtype;
  *like = w;
  return 0;
}

static int need_int_indices(Ctx *c, const OxTensorMeta *ix) {
  if (ix->dtype != OX_DT_I64 && ix->dtype != OX_DT_I32 && ix->dtype != OX_DT_UNKNOWN)
    return say(c, -1, "indices must be int64 or int32, got %s", ox_dtype_abbr(ix->dtype));
  return 0;
}

static int rule_embedding(Ctx *c, OxMeta *out) {
  const OxTensorMeta *ix, *like;
  OxDim D;
  OxDType dt;
  int rc;
  if ((rc = arg_tensor(c, 1, &ix)) || (rc = need_int_indices(c, ix)) || (rc = embed_dim(c, 0, &D, &dt, &like))) return rc;
  OxTensorMeta *t = new_t(c, dt, ix->rank + 1, like ? like : ix);
  for (int i = 0; i < ix->rank; i++) t->shape[i] = ix->shape[i];
  t->shape[ix->rank] = D;
  set_tensor(out, t);
  return 0;
}

static int rule_embedding_bag(Ctx *c, OxMeta *out) {
  const OxTensorMeta *ix, *like;
  OxDim D, B;
  OxDType dt;
  int rc;
  if ((rc = arg_tensor(c, 1, &ix)) || (rc = need_int_indices(c, ix)) || (rc = embed_dim(c, 0, &D, &dt, &like))) return rc;
  const OxValue *ov = c->a.slot[2], *ilo = c->a.slot[5];
  bool last = ilo->kind == OX_V_BOOL && ilo->u.b;
  char b[96];
  if (ix->rank == 2) {
    if (ov->kind != OX_V_NONE) return say(c, -1, "offsets must be None for 2-D indices");
    B = ix->shape[0];
  } else if (ix->rank == 1) {
    const OxTensorMeta *o;
    if (ov->kind == OX_V_NONE) return say(c, -1, "offsets are required for 1-D indices");
    if ((rc = val_tensor(c, ov, "offsets", &o))) return rc;
    if (o->rank != 1) return say(c, -1, "offsets must be 1-D, got %s", tfmt(o, b, sizeof b));
    B = o->shape[0];
    if (last) {
      if (B.sym) return sym_fail(c, B);
      B.v -= 1;
    }
  } else {
    return say(c, -1, "indices must be 1-D or 2-D, got %s", tfmt(ix, b, sizeof b));
  }
  OxDim d[2] = {B, D};
  if (ox_spelling_outputs(c->a.spelling) == 4) {
    set_tuple(c, out, 4);
    OxTensorMeta *o = tuple_at(c, out, 0, dt, 2, like ? like : ix);
    o->shape[0] = B;
    o->shape[1] = D;
    /* offset2bag, bag_size, max_indices, with the CPU kernel's sizes (our interpreter is a CPU
     * reference): offset2bag is empty on the sum fast path without per-sample weights, else
     * one entry per index; bag_size one per bag; max_indices [bags, D] for max, else [bags] */
    const OxValue *mode = c->a.slot[3], *psw = c->a.slot[4];
    bool is_sum = mode->kind == OX_V_STR && mode->s && strcmp(mode->s, "sum") == 0;
    bool is_max = mode->kind == OX_V_STR && mode->s && strcmp(mode->s, "max") == 0;
    OxDim nidx = ix->shape[0];
    if (ix->rank == 2) {
      if (ix->shape[0].sym || ix->shape[1].sym) nidx = (OxDim){0, ix->shape[0].sym ? ix->shape[0].sym : ix->shape[1].sym};
      else {
        int64_t k;
        if (!mul_ok(ix->shape[0].v, ix->shape[1].v, &k)) return say(c, -1, "indices sizes overflow");
        nidx = cdim(k);
      }
    }
    OxTensorMeta *o2b = tuple_at(c, out, 1, ix->dtype, 1, ix);
    o2b->shape[0] = (is_sum && psw->kind == OX_V_NONE) ? cdim(0) : nidx;
    OxTensorMeta *bs = tuple_at(c, out, 2, ix->dtype, 1, ix);
    bs->shape[0] = B;
    OxTensorMeta *mi = tuple_at(c, out, 3, ix->dtype, is_max ? 2 : 1, ix);
    mi->shape[0] = B;
    if (is_max) mi->shape[1] = D;
    return 0;
  }
  set_tensor(out, from_dims(c, dt, d, 2, like ? like : ix));
  return 0;
}

/* ------------------------------------------------------------------ convolution / pooling */

/* int or list broadcast to n spatial values. */
static int spatial(Ctx *c, const OxValue *v, const char *what, int n, int64_t *out) {
  int64_t tmp[MAXR];
  int k, rc;
  if ((rc = val_ints(c, v, what, tmp, &k, MAXR))) return rc;
  if (k == 1) for (int i = 0; i < n; i++) out[i] = tmp[0];
  else if (k == n) for (int i = 0; i < n; i++) out[i] = tmp[i];
  else return say(c, -1, "%s has %d values for %d spatial dims", what, k, n);
  return 0;
}

static int rule_conv(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  int64_t groups;
  if ((rc = slot_int(c, 6, &groups))) return rc;
  if (groups <= 0) return say(c, -1, "groups must be positive, got %lld", (long long)groups);
  OxDim cout;
  int64_t kern[MAXR];
  int nsp;
  int64_t cin_w;
  char b[96], e[96];
  const OxValue *wv = c->a.slot[1];
  if (ox_op_is_module_param(wv)) {
    int64_t oc, ic;
    if ((rc = module_int(c, "out_channels", &oc)) || (rc = module_int(c, "in_channels", &ic))) return rc;
    nsp = 2;
    const OxValue *ks = kwarg(ox_graph_node(c->g, c->id), "kernel_size");
    if (!ks) return say(c, 1, "module %s: no kernel_size given", c->a.module_path);
    if ((rc = spatial(c, ks, "kernel_size", nsp, kern))) return rc;
    cout = cdim(oc);
    cin_w = ic / groups;
  } else {
    const OxTensorMeta *w;
    if ((rc = val_tensor(c, wv, "weight", &w))) return rc;
    if (w->rank < 3) return say(c, -1, "weight must be at least 3-D, got %s", tfmt(w, b, sizeof b));
    nsp = w->rank - 2;
    for (int i = 0; i < w->rank; i++)
      if (w->shape[i].sym) return sym_fail(c, w->shape[i]);
    cout = w->shape[0];
    cin_w = w->shape[1].v;
    for (int i = 0; i < nsp; i++) kern[i] = w->shape[2 + i].v;
    if ((rc = same_dtype(c, x, w))) return rc;
  }
  bool batched = x->rank == nsp + 2;
  if (!batched && x->rank != nsp + 1)
    return say(c, -1, "input %s does not match a %d-D convolution", tfmt(x, b, sizeof b), nsp);
  int ch = batched ? 1 : 0;
  OxDim cin = x->shape[ch];
  if (cin.sym) return sym_fail(c, cin);
  int64_t cin_all;
  if (!mul_ok(cin_w, groups, &cin_all)) return say(c, -1, "groups=%lld overflows the channel count", (long long)groups);
  if (cin.v != cin_all)
    return say(c, -1, "input %s has %lld channels, weight expects %lld (groups=%lld)", tfmt(x, e, sizeof e),
               (long long)cin.v, (long long)cin_all, (long long)groups);
  if (!cout.sym && cout.v % groups)
    return say(c, -1, "%lld output channels are not divisible by groups=%lld", (long long)cout.v, (long long)groups);
  int64_t st[MAXR], pd[MAXR], dl[MAXR];
  bool same = false;
  const OxValue *pv = c->a.slot[4];
  if ((rc = spatial(c, c->a.slot[3], "stride", nsp, st)) || (rc = spatial(c, c->a.slot[5], "dilation", nsp, dl)))
    return rc;
  if (pv->kind == OX_V_STR) {
    if (!strcmp(pv->s, "valid")) for (int i = 0; i < nsp; i++) pd[i] = 0;
    else if (!strcmp(pv->s, "same")) same = true;
    else return say(c, -1, "padding='%s' is not 'same' or 'valid'", pv->s);
  } else if ((rc = spatial(c, pv, "padding", nsp, pd))) {
    return rc;
  }
  OxTensorMeta *t = new_t(c, x->dtype, x->rank, x);
  if (batched) t->shape[0] = x->shape[0];
  t->shape[ch] = cout;
  for (int i = 0; i < nsp; i++) {
    OxDim in = x->shape[ch + 1 + i];
    if (same) { t->shape[ch + 1 + i] = in; continue; }
    if (in.sym) return sym_fail(c, in);
    if (st[i] <= 0) return say(c, -1, "stride must be positive");
    int64_t eff, padded, num;
    if (!mul_ok(dl[i], kern[i] - 1, &eff) || !add_ok(eff, 1, &eff) || !mul_ok(pd[i], 2, &padded) ||
        !add_ok(in.v, padded, &padded) || __builtin_sub_overflow(padded, eff, &num))
      return say(c, -1, "kernel, dilation or padding sizes overflow");
    if (num < 0)
      return say(c, -1, "kernel size %lld (dilated %lld) is larger than padded input %lld", (long long)kern[i],
                 (long long)eff, (long long)padded);
    t->shape[ch + 1 + i] = cdim(num / st[i] + 1);
  }
  set_tensor(out, t);
  return 0;
}

/* Output sizes of a 2-D pooling window over x's last two dims: (H + 2p - d(k - 1) - 1) / s + 1,
 * rounded up with ceil_mode unless the last window would start in the right padding; slots 1-3
 * are kernel_size, stride (None or [] = the kernel) and padding, dil_slot the dilation (-1: 1). */
static int pool_shape(Ctx *c, const OxTensorMeta *x, int dil_slot, int ceil_slot, OxTensorMeta **res) {
  char b[96];
  int rc;
  if (x->rank != 3 && x->rank != 4) return say(c, -1, "input must be 3-D or 4-D, got %s", tfmt(x, b, sizeof b));
  int64_t k[2], s[2], p[2], d[2] = {1, 1};
  const OxValue *sv = c->a.slot[2];
  if ((rc = spatial(c, c->a.slot[1], "kernel_size", 2, k))) return rc;
  if (sv->kind == OX_V_NONE || ((sv->kind == OX_V_LIST || sv->kind == OX_V_TUPLE) && sv->n == 0)) {
    s[0] = k[0];
    s[1] = k[1];
  } else if ((rc = spatial(c, sv, "stride", 2, s))) {
    return rc;
  }
  if ((rc = spatial(c, c->a.slot[3], "padding", 2, p)) || (dil_slot >= 0 && (rc = spatial(c, c->a.slot[dil_slot], "dilation", 2, d))))
    return rc;
  bool ceil_mode = c->a.slot[ceil_slot]->kind == OX_V_BOOL && c->a.slot[ceil_slot]->u.b;
  OxTensorMeta *t = copy_shape(c, x, x->dtype);
  for (int i = 0; i < 2; i++) {
    OxDim in = x->shape[x->rank - 2 + i];
    if (in.sym) return sym_fail(c, in);
    if (k[i] <= 0 || s[i] <= 0 || d[i] <= 0) return say(c, -1, "kernel_size, stride and dilation must be positive");
    if (p[i] < 0 || p[i] > k[i] / 2) return say(c, -1, "padding %lld should be at most half of kernel size %lld", (long long)p[i], (long long)k[i]);
    int64_t span, num; /* in + 2p - d(k - 1) - 1, checked: p <= k/2 keeps 2p below k */
    if (!mul_ok(d[i], k[i] - 1, &span) || !add_ok(in.v, 2 * p[i], &num) || __builtin_sub_overflow(num, span, &num) ||
        __builtin_sub_overflow(num, 1, &num))
      return say(c, -1, "kernel, dilation or padding sizes overflow");
    if (num < 0) return say(c, -1, "output size is too small for input %s", tfmt(x, b, sizeof b));
    int64_t o = (ceil_mode ? ceil_div(num, s[i]) : num / s[i]) + 1;
    /* last window must start inside the input: (o - 1) * s >= in + p, with o - 1 <= num / s + 1 */
    int64_t last;
    if (ceil_mode && (!mul_ok(o - 1, s[i], &last) || last >= in.v + p[i])) o--;
    t->shape[x->rank - 2 + i] = cdim(o);
  }
  *res = t;
  return 0;
}

static int rule_max_pool(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  OxTensorMeta *t;
  int rc;
  if ((rc = arg_tensor(c, 0, &x)) || (rc = pool_shape(c, x, 4, 5, &t))) return rc;
  if (ox_spelling_outputs(c->a.spelling) == 2) {
    set_tuple(c, out, 2);
    out->t[0] = *t;
    out->t[1] = *t;
    out->t[1].dtype = OX_DT_I64;
    return 0;
  }
  set_tensor(out, t);
  return 0;
}

/* The dims a node holds when it is a slice of a tensor's whole size (x.shape[-2:],
 * x.size()[2:4]): true with them in d[*n] (at most max), false when it is not one. */
static bool size_slice_dims(Ctx *c, const OxValue *v, OxDim *d, int *n, int max) {
  if (v->kind != OX_V_NODE) return false;
  const OxNode *g = ox_graph_node(c->g, v->u.node);
  if (!g || g->op != OX_OP_CALL_FUNCTION || strcmp(g->target, "operator.getitem") != 0 || g->args.n != 2 ||
      g->args.u.items[0].kind != OX_V_NODE || g->args.u.items[1].kind != OX_V_SLICE || g->args.u.items[1].n != 3)
    return false;
  OxNodeId whole = whole_size_of(c->g, ox_graph_node(c->g, g->args.u.items[0].u.node));
  const OxTensorMeta *x = whole ? node_tensor(ox_graph_node(c->g, whole)) : NULL;
  if (!x) return false;
  const OxValue *sl = g->args.u.items[1].u.items;
  int64_t r = x->rank, lo = 0, hi = r, step = 1;
  for (int i = 0; i < 3; i++)
    if (sl[i].kind != OX_V_NONE && sl[i].kind != OX_V_INT) return false;
  if (sl[2].kind == OX_V_INT) step = sl[2].u.i;
  if (step != 1) return false;
  if (sl[0].kind == OX_V_INT) lo = sl[0].u.i < 0 ? sl[0].u.i + r : sl[0].u.i;
  if (sl[1].kind == OX_V_INT) hi = sl[1].u.i < 0 ? sl[1].u.i + r : sl[1].u.i;
  lo = lo < 0 ? 0 : lo > r ? r : lo;
  hi = hi < lo ? lo : hi > r ? r : hi;
  if (hi - lo > max) return false;
  *n = (int)(hi - lo);
  for (int64_t i = lo; i < hi; i++) d[i - lo] = x->shape[i];
  return true;
}

/* interpolate: the last 1 ('nearest') or 2 dims become size, or floor(in * scale_factor) */
static int rule_interpolate(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  char b[96];
  const OxValue *mode = c->a.slot[3];
  if (mode->kind != OX_V_STR) return say(c, -1, "mode must be a string");
  bool bilinear = !strcmp(mode->s, "bilinear");
  if (!bilinear && strcmp(mode->s, "nearest") != 0) return say(c, 1, "mode '%s' has no shape rule", mode->s);
  int sp = x->rank - 2;
  if (sp < 1 || sp > 2 || (bilinear && sp != 2))
    return say(c, -1, "%s needs a %s input, got %s", mode->s, bilinear ? "4-D" : "3-D or 4-D", tfmt(x, b, sizeof b));
  if (category(x->dtype) != 2) return say(c, -1, "needs a floating-point input, got %s", ox_dtype_abbr(x->dtype));
  const OxValue *size = c->a.slot[1], *sf = c->a.slot[2];
  OxTensorMeta *t = copy_shape(c, x, x->dtype);
  if (size->kind != OX_V_NONE) {
    OxDim d[4];
    int n = 0;
    if (!size_slice_dims(c, size, d, &n, 4) && (rc = val_dims(c, size, "size", d, &n, 4))) return rc;
    if (n != 1 && n != sp) return say(c, -1, "size has %d entries for %d spatial dims", n, sp);
    for (int i = 0; i < sp; i++) t->shape[2 + i] = d[n == 1 ? 0 : i];
  } else if (sf->kind != OX_V_NONE) {
    for (int i = 0; i < sp; i++) {
      const OxValue *f = sf->kind == OX_V_LIST || sf->kind == OX_V_TUPLE ? (i < (int)sf->n ? &sf->u.items[i] : NULL) : sf;
      double v = !f ? -1 : f->kind == OX_V_FLOAT ? f->u.f : f->kind == OX_V_INT ? (double)f->u.i : -1;
      if (!(v > 0)) return say(c, -1, "scale_factor must be a positive number per spatial dim");
      OxDim in = x->shape[2 + i];
      if (in.sym) return sym_fail(c, in);
      t->shape[2 + i] = cdim((int64_t)floor((double)in.v * v));
    }
  } else {
    return say(c, -1, "either size or scale_factor should be defined");
  }
  set_tensor(out, t);
  return 0;
}

/* avg_pool2d: as max_pool2d without dilation; a floating-point input */
static int rule_avg_pool(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  OxTensorMeta *t;
  int rc;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  if (category(x->dtype) != 2 && (x->rank == 3 || x->rank == 4))
    return say(c, -1, "needs a floating-point input, got %s", ox_dtype_abbr(x->dtype));
  if ((rc = pool_shape(c, x, -1, 4, &t))) return rc;
  set_tensor(out, t);
  return 0;
}

/* multi_head_attention: (output shaped as query, weights [N, L, S] or [N, heads, L, S] (no N
 * unbatched) or None); query [L, N, E] ([N, L, E] batch_first), key and value [S, N, E] alike;
 * the module form reads embed_dim and num_heads from its kwargs */
static int rule_mha(Ctx *c, OxMeta *out) {
  const OxTensorMeta *q, *k, *v;
  int rc;
  if ((rc = arg_tensor(c, 0, &q)) || (rc = arg_tensor(c, 1, &k)) || (rc = arg_tensor(c, 2, &v))) return rc;
  char b[96], b2[96];
  if (q->rank != 2 && q->rank != 3) return say(c, -1, "query must be 2-D (unbatched) or 3-D, got %s", tfmt(q, b, sizeof b));
  if (k->rank != q->rank || v->rank != q->rank)
    return say(c, -1, "query %s and key %s: ranks differ", tfmt(q, b, sizeof b), tfmt(k, b2, sizeof b2));
  if (category(q->dtype) != 2) return say(c, -1, "needs a floating-point query, got %s", ox_dtype_abbr(q->dtype));
  if (k->dtype != q->dtype || v->dtype != q->dtype) return say(c, -1, "query, key and value dtypes differ");
  int64_t heads;
  if ((rc = slot_int(c, 3, &heads))) return rc;
  const OxDim e = q->shape[q->rank - 1];
  if (e.sym) return sym_fail(c, e);
  if (heads <= 0 || e.v % heads) return say(c, -1, "embed_dim %lld is not divisible by num_heads %lld", (long long)e.v, (long long)heads);
  int64_t ed;
  if (c->a.module_path && !module_int(c, "embed_dim", &ed) && ed != e.v)
    return say(c, -1, "query %s: last dim is not embed_dim %lld", tfmt(q, b, sizeof b), (long long)ed);
  bool bf = c->a.slot[10]->kind == OX_V_BOOL && c->a.slot[10]->u.b;
  bool batched = q->rank == 3;
  int bd = bf ? 0 : 1, sd = bf ? 1 : 0;
  /* the module's kdim / vdim (separate q/k/v projections) when the bridge wrote them, else embed_dim */
  int64_t kd = e.v, vd = e.v;
  const OxNode *self = ox_graph_node(c->g, c->id);
  if (c->a.module_path && kwarg(self, "kdim") && kwarg(self, "kdim")->kind == OX_V_INT) kd = kwarg(self, "kdim")->u.i;
  if (c->a.module_path && kwarg(self, "vdim") && kwarg(self, "vdim")->kind == OX_V_INT) vd = kwarg(self, "vdim")->u.i;
  for (int i = 0; i < k->rank; i++) {
    OxDim a = k->shape[i], d = v->shape[i];
    bool last = i == k->rank - 1;
    if (!a.sym && !d.sym && (last ? a.v != kd || d.v != vd : a.v != d.v))
      return say(c, -1, "key %s and value %s: shapes differ", tfmt(k, b, sizeof b), tfmt(v, b2, sizeof b2));
  }
  OxDim kb = batched ? k->shape[bd] : cdim(1), qb = batched ? q->shape[bd] : cdim(1);
  if (!kb.sym && !qb.sym && kb.v != qb.v)
    return say(c, -1, "query %s and key %s: batch or embedding sizes differ", tfmt(q, b, sizeof b), tfmt(k, b2, sizeof b2));
  bool need_w = !(c->a.slot[8]->kind == OX_V_BOOL && !c->a.slot[8]->u.b);
  bool avg = !(c->a.slot[9]->kind == OX_V_BOOL && !c->a.slot[9]->u.b);
  set_tuple(c, out, 2);
  out->t[0] = *copy_shape(c, q, q->dtype);
  if (!need_w) { /* None: nothing known about it */
    out->t[1].dtype = OX_DT_UNKNOWN;
    out->t[1].rank = -1;
    return 0;
  }
  int r = (batched ? 1 : 0) + (avg ? 0 : 1) + 2, j = 0;
  OxTensorMeta *w = tuple_at(c, out, 1, q->dtype, r, q);
  if (batched) w->shape[j++] = qb;
  if (!avg) w->shape[j++] = cdim(heads);
  w->shape[j++] = batched ? q->shape[sd] : q->shape[0];
  w->shape[j++] = batched ? k->shape[sd] : k->shape[0];
  return 0;
}

/* Attention's result: x's shape and dtype, once the size d divides into the heads of slot
 * heads_slot (what_dim formats d for the message, "%lld channels"). */
static int split_heads(Ctx *c, const OxTensorMeta *x, OxDim d, int heads_slot, const char *what_dim,
                       const char *heads_name, OxMeta *out) {
  int64_t heads;
  int rc;
  if ((rc = slot_int(c, heads_slot, &heads))) return rc;
  if (d.sym) return sym_fail(c, d);
  if (heads <= 0 || d.v % heads) {
    char w[64];
    snprintf(w, sizeof w, what_dim, (long long)d.v);
    return say(c, -1, "%s %s not divisible by %s %lld", w, strstr(what_dim, "channels") ? "are" : "is", heads_name,
               (long long)heads);
  }
  set_tensor(out, copy_shape(c, x, x->dtype));
  return 0;
}

static bool slot_true(const Ctx *c, int s) { return c->a.slot[s] && c->a.slot[s]->kind == OX_V_BOOL && c->a.slot[s]->u.b; }

/* A sequence module's input: 2-D (unbatched) or 3-D, floating point; its feature size checked
 * against the module's `feature_kwarg` when the bridge wrote it. */
static int seq_input(Ctx *c, const char *what, const char *feature_kwarg, const OxTensorMeta **x) {
  int rc;
  char b[96];
  if ((rc = arg_tensor(c, 0, x))) return rc;
  if ((*x)->rank != 2 && (*x)->rank != 3) return say(c, -1, "%s must be 2-D (unbatched) or 3-D, got %s", what, tfmt(*x, b, sizeof b));
  if (category((*x)->dtype) != 2) return say(c, -1, "needs a floating-point %s, got %s", what, ox_dtype_abbr((*x)->dtype));
  OxDim f = (*x)->shape[(*x)->rank - 1];
  int64_t want;
  if (c->a.module_path && !f.sym && kwarg(ox_graph_node(c->g, c->id), feature_kwarg) && !module_int(c, feature_kwarg, &want) &&
      want != f.v)
    return say(c, -1, "%s %s: last dim is not %s %lld", what, tfmt(*x, b, sizeof b), feature_kwarg, (long long)want);
  return 0;
}

/* transformer_encoder(_layer): src's shape and dtype; d_model divisible by nhead */
static int rule_encoder(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = seq_input(c, "src", "d_model", &x))) return rc;
  return split_heads(c, x, x->shape[x->rank - 1], c->a.op == OX_OPID_TRANSFORMER_ENCODER ? 3 : 2, "d_model %lld",
                     "nhead", out);
}

/* gru / lstm / rnn: (output [L, N, D * H] ([N, L, D * H] batch_first; [L, D * H] unbatched),
 * h_n [D * num_layers, N, H] ([D * num_layers, H])); the LSTM's second item is (h_n, c_n), a
 * nested tuple this meta cannot hold: unknown here, getitem(lstm, 1) infers it (lstm_state) */
static int rule_rnn(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = seq_input(c, "input", "input_size", &x))) return rc;
  int64_t h, layers;
  if ((rc = slot_int(c, 2, &h)) || (rc = slot_int(c, 4, &layers))) return rc;
  if (h <= 0 || layers <= 0) return say(c, -1, "hidden_size %lld and num_layers %lld must be positive", (long long)h, (long long)layers);
  int64_t d = slot_true(c, 7) ? 2 : 1;
  bool batched = x->rank == 3, bf = slot_true(c, 6);
  set_tuple(c, out, 2);
  OxTensorMeta *o = tuple_at(c, out, 0, x->dtype, x->rank, x);
  for (int i = 0; i < x->rank - 1; i++) o->shape[i] = x->shape[i];
  o->shape[x->rank - 1] = cdim(d * h);
  if (c->a.op == OX_OPID_LSTM) {
    tuple_at(c, out, 1, OX_DT_UNKNOWN, -1, x);
    return 0;
  }
  OxTensorMeta *hn = tuple_at(c, out, 1, x->dtype, batched ? 3 : 2, x);
  hn->shape[0] = cdim(d * layers);
  if (batched) hn->shape[1] = x->shape[bf ? 0 : 1];
  hn->shape[batched ? 2 : 1] = cdim(h);
  return 0;
}

/* shifted_window_attention: [B, H, W, C] unchanged; C divisible by num_heads */
static int rule_swin_attention(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  char b[96];
  if (x->rank != 4) return say(c, -1, "input must be [B, H, W, C], got %s", tfmt(x, b, sizeof b));
  if (category(x->dtype) != 2) return say(c, -1, "needs a floating-point input, got %s", ox_dtype_abbr(x->dtype));
  return split_heads(c, x, x->shape[3], 5, "%lld channels", "num_heads", out);
}

/* relative_position_bias: table [entries, heads] -> [1, heads, N, N], N = window_size[0] * [1] */
static int rule_rel_pos_bias(Ctx *c, OxMeta *out) {
  const OxTensorMeta *t;
  int rc;
  if ((rc = arg_tensor(c, 0, &t))) return rc;
  char b[96];
  if (t->rank != 2) return say(c, -1, "relative_position_bias_table must be 2-D, got %s", tfmt(t, b, sizeof b));
  int64_t ws[2];
  if ((rc = spatial(c, c->a.slot[2], "window_size", 2, ws))) return rc;
  if (ws[0] <= 0 || ws[1] <= 0) return say(c, -1, "window_size must be positive");
  int64_t n;
  if (!mul_ok(ws[0], ws[1], &n)) return say(c, -1, "window_size overflows");
  OxTensorMeta *o = salloc(c, sizeof *o);
  memset(o, 0, sizeof *o);
  o->dtype = t->dtype;
  o->rank = 4;
  o->device = t->device;
  o->shape = salloc(c, 4 * sizeof(OxDim));
  o->shape[0] = cdim(1), o->shape[1] = t->shape[1], o->shape[2] = cdim(n), o->shape[3] = cdim(n);
  set_tensor(out, o);
  return 0;
}

/* patch_merging_pad: [..., H, W, C] -> [..., ceil(H / 2), ceil(W / 2), 4C] */
static int rule_patch_merging_pad(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  char b[96];
  if (x->rank < 3) return say(c, -1, "x must be [..., H, W, C], got %s", tfmt(x, b, sizeof b));
  OxTensorMeta *t = copy_shape(c, x, x->dtype);
  for (int i = x->rank - 3; i < x->rank; i++) {
    OxDim d = x->shape[i];
    if (d.sym) return sym_fail(c, d);
    int64_t v;
    if (i == x->rank - 1 ? !mul_ok(d.v, 4, &v) : !add_ok(d.v, 1, &v)) return say(c, -1, "sizes overflow");
    t->shape[i] = cdim(i == x->rank - 1 ? v : v / 2);
  }
  set_tensor(out, t);
  return 0;
}

static int rule_adaptive_avg_pool(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  char b[96];
  if (x->rank != 3 && x->rank != 4) return say(c, -1, "input must be 3-D or 4-D, got %s", tfmt(x, b, sizeof b));
  const OxValue *ov = c->a.slot[1];
  OxTensorMeta *t = copy_shape(c, x, x->dtype);
  const OxValue *items = ov;
  uint32_t n = 1;
  if (ov->kind == OX_V_LIST || ov->kind == OX_V_TUPLE) { items = ov->u.items; n = ov->n; }
  if (n != 1 && n != 2) return say(c, -1, "output_size must have 1 or 2 values, got %u", n);
  for (int i = 0; i < 2; i++) {
    const OxValue *v = &items[n == 1 ? 0 : i];
    if (v->kind == OX_V_NONE) continue; /* None keeps the input size */
    int64_t o;
    if ((rc = val_int(c, v, "output_size", &o))) return rc;
    if (o < 0) return say(c, -1, "output_size %lld is negative", (long long)o);
    t->shape[x->rank - 2 + i] = cdim(o);
  }
  set_tensor(out, t);
  return 0;
}

static int rule_size(Ctx *c, OxMeta *out) {
  const OxTensorMeta *x;
  int rc;
  if ((rc = arg_tensor(c, 0, &x))) return rc;
  memset(out, 0, sizeof *out);
  if (c->a.slot[1]->kind == OX_V_NONE) {
    out->kind = OX_META_SCALAR; /* torch.Size; getitem on it looks through to x */
    return 0;
  }
  int64_t dv;
  int d = 0;
  if ((rc = slot_int(c, 1, &dv)) || (rc = wrap_dim(c, dv, x->rank, &d))) return rc;
  if (x->rank == 0) return say(c, -1, "a 0-d tensor has no dims");
  if (x->shape[d].sym) {
    out->kind = OX_META_SYMINT;
    out->sym = x->shape[d].sym;
  } else {
    out->kind = OX_META_SCALAR;
  }
  return 0;
}

/* ------------------------------------------------------------------ rule table */

typedef int (*RuleFn)(Ctx *c, OxMeta *out);

typedef struct Rule {
  RuleFn fn;
  const char *summary;
} Rule;

static const Rule rules[OX_OPID_COUNT] = {
  [OX_OPID_LINEAR] = {rule_linear, "input [*, in] @ weight [out, in].T (+ bias [out]) -> [*, out]; dtypes must match; "
                                   "module form reads in_features/out_features"},
  [OX_OPID_ADDMM] = {rule_addmm, "mat1 [n, m] @ mat2 [m, p] -> [n, p]; self must broadcast to [n, p]"},
  [OX_OPID_MM] = {rule_mm, "[n, m] @ [m, p] -> [n, p]; same dtype"},
  [OX_OPID_BMM] = {rule_bmm, "[b, n, m] @ [b, m, p] -> [b, n, p]; same dtype"},
  [OX_OPID_BADDBMM] = {rule_baddbmm, "batch1 [b, n, m] @ batch2 [b, m, p] -> [b, n, p]; self broadcasts to it"},
  [OX_OPID_MATMUL] = {rule_matmul, "torch.matmul: 1-D dot, matrix-vector, batched with broadcast batch dims"},
  [OX_OPID_EINSUM] = {rule_einsum, "explicit subscripts (\"abc,abcd->abd\"); each subscript's size from the operands that have it"},
  [OX_OPID_GROUPED_MM] = {rule_grouped_mm, "tuple: out[i] = linear(inputs[i], weights[i], biases[i]) per group"},
  [OX_OPID_LAYER_NORM] = {rule_layer_norm, "same shape and dtype; normalized_shape must equal the trailing dims"},
  [OX_OPID_NATIVE_LAYER_NORM] = {rule_native_layer_norm,
                                 "(out, mean, rstd): out like input; stats keep leading dims, normalized dims become 1 "
                                 "(f32 for half inputs on CUDA)"},
  [OX_OPID_TANH] = {rule_unary_float, "same shape; int/bool inputs give f32"},
  [OX_OPID_SIGMOID] = {rule_unary_float, "same shape; int/bool inputs give f32"},
  [OX_OPID_RELU] = {rule_unary_same, "same shape and dtype"},
  [OX_OPID_GELU] = {rule_unary_float, "same shape and dtype; floating-point input required"},
  [OX_OPID_SILU] = {rule_unary_float, "same shape and dtype; floating-point input required"},
  [OX_OPID_DROPOUT] = {rule_unary_same, "same shape and dtype"},
  [OX_OPID_CLAMP] = {rule_clamp, "broadcast of self with tensor bounds; dtype promoted with min/max (scalars only raise the category)"},
  [OX_OPID_NAN_TO_NUM] = {rule_unary_same, "same shape and dtype"},
  [OX_OPID_DETACH] = {rule_unary_same, "same shape and dtype"},
  [OX_OPID_CLONE] = {rule_unary_same, "same shape and dtype"},
  [OX_OPID_CONTIGUOUS] = {rule_unary_same, "same shape and dtype"},
  [OX_OPID_NEG] = {rule_unary_same, "same shape and dtype; bool is an error"},
  [OX_OPID_EXP] = {rule_unary_float, "same shape; int/bool inputs give f32"},
  [OX_OPID_LOG] = {rule_unary_float, "same shape; int/bool inputs give f32"},
  [OX_OPID_SQRT] = {rule_unary_float, "same shape; int/bool inputs give f32"},
  [OX_OPID_RSQRT] = {rule_unary_float, "same shape; int/bool inputs give f32"},
  [OX_OPID_ADD] = {rule_binary, "broadcast; torch type promotion (tensor > zero-dim > scalar tiers); float alpha with int inputs is an error"},
  [OX_OPID_SUB] = {rule_binary, "broadcast; type promotion; bool - bool is an error"},
  [OX_OPID_MUL] = {rule_binary, "broadcast; type promotion"},
  [OX_OPID_DIV] = {rule_binary, "broadcast; type promotion; int / int gives f32 unless rounding_mode is set"},
  [OX_OPID_POW] = {rule_binary, "broadcast; type promotion of self and exponent"},
  [OX_OPID_EQ] = {rule_binary, "broadcast of self and other; bool"},
  [OX_OPID_NE] = {rule_binary, "broadcast of self and other; bool"},
  [OX_OPID_LT] = {rule_binary, "broadcast of self and other; bool"},
  [OX_OPID_LE] = {rule_binary, "broadcast of self and other; bool"},
  [OX_OPID_GT] = {rule_binary, "broadcast of self and other; bool"},
  [OX_OPID_GE] = {rule_binary, "broadcast of self and other; bool"},
  [OX_OPID_LOGICAL_NOT] = {rule_not, "same shape; bool"},
  [OX_OPID_BITWISE_NOT] = {rule_not, "same shape and dtype; floating point is an error"},
  [OX_OPID_BITWISE_AND] = {rule_binary, "broadcast; promoted dtype (bool or integer); floating point is an error"},
  [OX_OPID_BITWISE_OR] = {rule_binary, "broadcast; promoted dtype (bool or integer); floating point is an error"},
  [OX_OPID_BITWISE_XOR] = {rule_binary, "broadcast; promoted dtype (bool or integer); floating point is an error"},
  [OX_OPID_MASKED_FILL] = {rule_masked_fill, "self's shape and dtype; a bool mask broadcasting to it"},
  [OX_OPID_TRIU] = {rule_tri, "same shape and dtype; at least 2-D"},
  [OX_OPID_TRIL] = {rule_tri, "same shape and dtype; at least 2-D"},
  [OX_OPID_ONES] = {rule_fill, "size; dtype given or float32"},
  [OX_OPID_ZEROS] = {rule_fill, "size; dtype given or float32"},
  [OX_OPID_FULL] = {rule_fill, "size; dtype given, else bool / int64 / float32 after fill_value"},
  [OX_OPID_ARANGE] = {rule_arange, "[ceil((end - start) / step)]; int64 for int bounds, else float32"},
  [OX_OPID_WHERE] = {rule_where, "broadcast of condition (bool), self, other; dtype promoted from self and other"},
  [OX_OPID_SUM] = {rule_reduce, "reduces dim (None or [] = all), keepdim keeps 1s; bool/int give i64 unless dtype"},
  [OX_OPID_MEAN] = {rule_reduce, "reduces dim (None or [] = all), keepdim keeps 1s; int input needs dtype"},
  [OX_OPID_SOFTMAX] = {rule_softmax, "same shape; dtype slot or input dtype (floating point); dim=None uses torch's legacy choice"},
  [OX_OPID_SPLIT] = {rule_split, "tuple of ceil(size/split_size) pieces along dim, the last smaller; a list acts as split_with_sizes"},
  [OX_OPID_SPLIT_WITH_SIZES] = {rule_split, "tuple, one piece per size; sizes must sum to the dim's size"},
  [OX_OPID_CHUNK] = {rule_chunk, "tuple of ceil(size/chunks)-sized pieces (possibly fewer than chunks)"},
  [OX_OPID_UNBIND] = {rule_unbind, "tuple of size(dim) tensors with dim removed"},
  [OX_OPID_CAT] = {rule_cat, "same rank, other dims equal, dim sizes summed; dtypes promoted; legacy empty 1-D inputs skipped"},
  [OX_OPID_STACK] = {rule_stack, "equal shapes; new dim of size len(tensors) inserted at dim"},
  [OX_OPID_GETITEM] = {rule_getitem, "tuple: the k-th output; tensor: ints drop dims, slices resize, None adds 1, ... fills; size()[k]: that dim"},
  [OX_OPID_SELECT] = {rule_select, "removes dim; index checked against its size"},
  [OX_OPID_SLICE] = {rule_slice, "Python slice length on dim (clamped start/end, positive step)"},
  [OX_OPID_NARROW] = {rule_narrow, "dim becomes length; start + length must fit"},
  [OX_OPID_SQUEEZE] = {rule_squeeze, "drops size-1 dims (all, or the given dims that are 1)"},
  [OX_OPID_UNSQUEEZE] = {rule_unsqueeze, "inserts a 1 at dim (range rank+1)"},
  [OX_OPID_VIEW] = {rule_view, "the given size, one -1 inferred from the element count (checked)"},
  [OX_OPID_RESHAPE] = {rule_view, "the given shape, one -1 inferred from the element count (checked)"},
  [OX_OPID_FLATTEN] = {rule_flatten, "dims start_dim..end_dim multiplied into one; 0-d gives [1]"},
  [OX_OPID_UNFLATTEN] = {rule_unflatten, "dim split into sizes (one -1 allowed); product must match"},
  [OX_OPID_PERMUTE] = {rule_permute, "dims reordered; dims must be a permutation"},
  [OX_OPID_TRANSPOSE] = {rule_transpose, "dim0 and dim1 swapped"},
  [OX_OPID_T] = {rule_t, "2-D transposed; 0-D/1-D unchanged; more dims is an error"},
  [OX_OPID_MOVEDIM] = {rule_movedim, "source dims moved to destination, the others keep their order"},
  [OX_OPID_EXPAND] = {rule_expand, "size with -1 = keep; only size-1 dims grow; new leading dims allowed"},
  [OX_OPID_EMBEDDING] = {rule_embedding, "indices.shape + [embedding_dim], weight dtype; int indices"},
  [OX_OPID_EMBEDDING_BAG] = {rule_embedding_bag, "[bags, embedding_dim]: bags = len(offsets) (-1 with include_last_offset) or "
                                                 "indices.shape[0] for 2-D; aten form: 4-tuple, outputs 1-3 shape unknown"},
  [OX_OPID_CONV2D] = {rule_conv, "[N, C_out, (H + 2p - d(k - 1) - 1) / s + 1, ...]; channels checked against weight and "
                                 "groups; padding 'same'/'valid'"},
  [OX_OPID_BATCH_NORM] = {rule_batch_norm, "same shape and dtype; running stats must match channels; aten legit form: "
                                           "3-tuple (stats shapes unknown)"},
  [OX_OPID_MAX_POOL2D] = {rule_max_pool, "(H + 2p - d(k - 1) - 1) / s + 1 (ceil_mode rounds up); stride defaults to kernel; "
                                         "with_indices: (out, i64 indices)"},
  [OX_OPID_ADAPTIVE_AVG_POOL2D] = {rule_adaptive_avg_pool, "last two dims become output_size (None keeps a dim)"},
  [OX_OPID_INTERPOLATE] = {rule_interpolate, "last 1 (nearest) or 2 dims become size or floor(in * scale_factor)"},
  [OX_OPID_AVG_POOL2D] = {rule_avg_pool, "(H + 2p - k) / s + 1 (ceil_mode rounds up); stride defaults to kernel; "
                                         "floating-point input"},
  [OX_OPID_MULTI_HEAD_ATTENTION] = {rule_mha, "(query's shape, weights [N, L, S] averaged or [N, heads, L, S]; None "
                                              "with need_weights=False); embed_dim divisible by num_heads"},
  [OX_OPID_TRANSFORMER_ENCODER_LAYER] = {rule_encoder, "src's shape and dtype; d_model divisible by nhead"},
  [OX_OPID_TRANSFORMER_ENCODER] = {rule_encoder, "src's shape and dtype; d_model divisible by nhead"},
  [OX_OPID_GRU] = {rule_rnn, "(output [L, N, D * hidden], h_n [D * layers, N, hidden]); batch_first: [N, L, ...]; "
                             "unbatched: no N; D = 2 when bidirectional"},
  [OX_OPID_LSTM] = {rule_rnn, "as gru; the second item, (h_n, c_n), is left unknown"},
  [OX_OPID_RNN] = {rule_rnn, "as gru"},
  [OX_OPID_SHIFTED_WINDOW_ATTENTION] = {rule_swin_attention, "input's shape [B, H, W, C]; C divisible by num_heads"},
  [OX_OPID_RELATIVE_POSITION_BIAS] = {rule_rel_pos_bias, "[1, heads, N, N] from a table [entries, heads], N = window tokens"},
  [OX_OPID_PATCH_MERGING_PAD] = {rule_patch_merging_pad, "[..., H, W, C] -> [..., ceil(H / 2), ceil(W / 2), 4C]"},
  [OX_OPID_IDENTITY] = {rule_unary_same, "same shape and dtype"},
  [OX_OPID_HARDSWISH] = {rule_unary_float, "same shape and dtype; floating-point input required"},
  [OX_OPID_HARDSIGMOID] = {rule_unary_float, "same shape and dtype; floating-point input required"},
  [OX_OPID_STOCHASTIC_DEPTH] = {rule_unary_same, "same shape and dtype"},
  [OX_OPID_TO] = {rule_to, "same shape; dtype slot (None keeps the dtype)"},
  [OX_OPID_SIZE] = {rule_size, "size(dim): SymInt for a symbolic dim, else an int; size(): torch.Size"},
};

const char *ox_shape_rule_summary(OxOpId id) {
  return (id > OX_OPID_NONE && id < OX_OPID_COUNT) ? rules[id].summary : NULL;
}

bool ox_shape_has_rule(OxOpId id) {
  return id > OX_OPID_NONE && id < OX_OPID_COUNT && rules[id].fn && rules[id].summary;
}

int ox_shape_infer_node(OxGraph *g, OxNodeId id, OxMeta *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  ox_arena_reset(&g->shape_scratch); /* the previous call's result is dropped here */
  if (errcap) err[0] = 0;
  const OxNode *n = ox_graph_node(g, id);
  if (!n || n->erased) {
    if (errcap) snprintf(err, errcap, "no node %u", id);
    return 1;
  }
  if (n->op != OX_OP_CALL_FUNCTION && n->op != OX_OP_CALL_METHOD && n->op != OX_OP_CALL_MODULE) {
    if (errcap) snprintf(err, errcap, "%s: a %s takes its meta from the dump or --input-shape", n->name, ox_op_name((OxOp)n->op));
    return 1;
  }
  Ctx c = {.g = g, .id = id, .err = err, .errcap = errcap};
  const OxSpelling *sp;
  OxOpId op = ox_op_of_node(g, n, &sp);
  if (!op || !ox_shape_has_rule(op)) {
    const char *t = n->op == OX_OP_CALL_MODULE ? (n->module_type ? n->module_type : n->target) : n->target;
    if (errcap) snprintf(err, errcap, "no shape rule for %s", t ? t : "?");
    return 1;
  }
  char nerr[256];
  if (ox_op_normalize(g, n, &c.a, nerr, sizeof nerr) != 0) {
    if (errcap) snprintf(err, errcap, "%s", nerr);
    return -1;
  }
  c.op = ox_op_info(c.a.op)->name;
  int rc = rules[c.a.op].fn(&c, out);
  /* arguments can ask for sizes no tensor has (expand(x, 2**62, ...), arange(1e18)): refused
   * here, so no inferred meta is absurd either (loaded ones are checked by the loaders) */
  for (uint32_t i = 0; rc == 0 && (out->kind == OX_META_TENSOR || out->kind == OX_META_TUPLE) && i < out->n; i++) {
    char why[160];
    if (ox_meta_absurd(&out->t[i], why, sizeof why)) rc = say(&c, -1, "inferred %s", why);
  }
  if (rc != 0) memset(out, 0, sizeof *out);
  return rc;
}

/* ------------------------------------------------------------------ whole graph */

static bool tmeta_equal(const OxTensorMeta *a, const OxTensorMeta *b) {
  if (a->rank < 0 || b->rank < 0) return true; /* nothing to compare */
  if (a->dtype != b->dtype && a->dtype != OX_DT_UNKNOWN && b->dtype != OX_DT_UNKNOWN) return false;
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (!dim_eq(a->shape[i], b->shape[i])) return false;
  return true;
}

bool ox_shape_meta_equal(const OxMeta *a, const OxMeta *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case OX_META_TENSOR:
  case OX_META_TUPLE:
    if (a->n != b->n) return false;
    for (uint32_t i = 0; i < a->n; i++)
      if (!tmeta_equal(&a->t[i], &b->t[i])) return false;
    return true;
  case OX_META_SYMINT: return (!a->sym && !b->sym) || (a->sym && b->sym && !strcmp(a->sym, b->sym));
  default: return true;
  }
}

int ox_meta_format(const OxMeta *m, char *buf, size_t cap) {
  char t[256];
  switch (m->kind) {
  case OX_META_TENSOR: return snprintf(buf, cap, "%s", tfmt(&m->t[0], t, sizeof t));
  case OX_META_SYMINT: return snprintf(buf, cap, "Sym(%s)", m->sym ? m->sym : "?");
  case OX_META_SCALAR: return snprintf(buf, cap, "scalar");
  case OX_META_TUPLE: {
    size_t o = 0;
    o += (size_t)snprintf(buf, cap, "(");
    for (uint32_t i = 0; i < m->n; i++) {
      o += (size_t)snprintf(o < cap ? buf + o : NULL, o < cap ? cap - o : 0, "%s%s", i ? ", " : "",
                            tfmt(&m->t[i], t, sizeof t));
    }
    o += (size_t)snprintf(o < cap ? buf + o : NULL, o < cap ? cap - o : 0, m->n == 1 ? ",)" : ")");
    return (int)o;
  }
  default: return snprintf(buf, cap, "?");
  }
}

/* Does the dump's meta say anything we can compare against (a tensor with a shape, a
   tuple, a SymInt)? Tuple-valued nodes normally carry no annotation. */
static bool has_dump_meta(const OxNode *n) {
  if (n->meta.inferred) return false;
  if (n->meta.kind == OX_META_TENSOR) return n->meta.n >= 1 && n->meta.t[0].rank >= 0;
  return n->meta.kind == OX_META_TUPLE || n->meta.kind == OX_META_SYMINT;
}

int ox_shape_infer_graph(OxGraph *g, OxDiagList *d, OxShapeStats *stats) {
  OxShapeStats st = {0};
  char err[512], a[256], b[256];
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    if (n->op != OX_OP_CALL_FUNCTION && n->op != OX_OP_CALL_METHOD && n->op != OX_OP_CALL_MODULE) continue;
    OxMeta m;
    int rc = ox_shape_infer_node(g, id, &m, err, sizeof err);
    n = &g->nodes[id];
    if (rc == 1) {
      st.unknown++;
      continue;
    }
    if (rc < 0) {
      st.inconsistent++;
      if (d) ox_diag_add(d, OX_SEV_WARNING, n->src_line, 0, n->name, "%s: %s", n->name, err);
      continue;
    }
    if (has_dump_meta(n)) {
      if (ox_shape_meta_equal(&n->meta, &m)) st.agreed++;
      else {
        st.disagreed++;
        ox_meta_format(&n->meta, a, sizeof a);
        ox_meta_format(&m, b, sizeof b);
        if (d) ox_diag_add(d, OX_SEV_WARNING, n->src_line, 0, n->name, "%s: dump says %s, inferred %s", n->name, a, b);
      }
      continue;
    }
    /* keep what the dump knew beyond shape (device, strides) when it only lacked a shape */
    m.inferred = true;
    ox_graph_set_meta(g, id, &m);
    st.inferred++;
  }
  if (stats) *stats = st;
  return (int)(st.disagreed + st.inconsistent);
}

/* ------------------------------------------------------------------ --input-shape */

static int spec_fail(char *err, size_t cap, const char *spec, const char *fmt, ...) {
  if (cap) {
    int k = snprintf(err, cap, "--input-shape %s: ", spec);
    if (k < 0) k = 0;
    if ((size_t)k < cap) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(err + k, cap - (size_t)k, fmt, ap);
      va_end(ap);
    }
  }
  return -1;
}

int ox_input_shape_parse(const char *spec, OxInputSpec *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  if (errcap) err[0] = 0;
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec) return spec_fail(err, errcap, spec, "expected NAME=D0,D1,... (e.g. x=16,256)");
  size_t nl = (size_t)(eq - spec);
  if (nl >= sizeof out->name) return spec_fail(err, errcap, spec, "name is too long");
  memcpy(out->name, spec, nl);
  const char *p = eq + 1;
  const char *colon = strchr(p, ':');
  if (colon) {
    out->dtype = ox_dtype_from_abbr(p, (size_t)(colon - p));
    if (out->dtype == OX_DT_UNKNOWN) out->dtype = ox_dtype_from_torch_name(p, (size_t)(colon - p));
    if (out->dtype == OX_DT_UNKNOWN)
      return spec_fail(err, errcap, spec, "unknown dtype '%.*s' (use f32, f16, bf16, i64, b8 ...)", (int)(colon - p), p);
    p = colon + 1;
  }
  if (!*p) return 0; /* 0-dim */
  while (1) {
    const char *q = p;
    while (*q && *q != ',') q++;
    size_t len = (size_t)(q - p);
    if (out->rank >= OX_SHAPE_MAX_RANK) return spec_fail(err, errcap, spec, "more than %d dims", OX_SHAPE_MAX_RANK);
    if (len == 0) return spec_fail(err, errcap, spec, "empty size");
    if (isdigit((unsigned char)p[0])) {
      int64_t v = 0;
      for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)p[i]) || v > (INT64_MAX - 9) / 10)
          return spec_fail(err, errcap, spec, "bad size '%.*s'", (int)len, p);
        v = v * 10 + (p[i] - '0');
      }
      if (v > OX_NUMEL_MAX)
        return spec_fail(err, errcap, spec, "size %.*s is more than 2^50 elements", (int)len, p);
      out->dims[out->rank] = v;
    } else {
      bool ok = len < sizeof out->syms[0] && (p[0] == 's' || p[0] == 'u') && len > 1;
      for (size_t i = 1; ok && i < len; i++) ok = isdigit((unsigned char)p[i]);
      if (!ok) return spec_fail(err, errcap, spec, "bad size '%.*s' (an int or a symbol like s0)", (int)len, p);
      memcpy(out->syms[out->rank], p, len);
    }
    out->rank++;
    if (!*q) break;
    p = q + 1;
  }
  int64_t numel = 1;
  for (int i = 0; i < out->rank; i++)
    if (!out->syms[i][0] && out->dims[i] && (__builtin_mul_overflow(numel, out->dims[i], &numel) || numel > OX_NUMEL_MAX))
      return spec_fail(err, errcap, spec, "the sizes make more than 2^50 elements");
  return 0;
}

int ox_shape_apply_input_specs(OxGraph *g, const char *const *specs, size_t n, OxDiagList *d) {
  int errors = 0;
  char err[512];
  for (size_t i = 0; i < n; i++) {
    OxInputSpec s;
    if (ox_input_shape_parse(specs[i], &s, err, sizeof err)) {
      if (d) ox_diag_add(d, OX_SEV_ERROR, 0, 0, specs[i], "%s", err);
      errors++;
      continue;
    }
    OxNodeId hit = 0;
    OX_GRAPH_FOREACH(g, id) {
      const OxNode *nd = &g->nodes[id];
      if ((nd->op == OX_OP_PLACEHOLDER || nd->op == OX_OP_GET_ATTR) &&
          (!strcmp(nd->name, s.name) || (nd->target && !strcmp(nd->target, s.name)))) {
        hit = id;
        break;
      }
    }
    if (!hit) {
      char names[256] = "";
      size_t o = 0;
      OX_GRAPH_FOREACH(g, id) {
        const OxNode *nd = &g->nodes[id];
        if (nd->op != OX_OP_PLACEHOLDER || o >= sizeof names - 1) continue;
        int k = snprintf(names + o, sizeof names - o, "%s%s", o ? ", " : "", nd->name);
        if (k > 0) o += (size_t)k;
      }
      if (d)
        ox_diag_add(d, OX_SEV_ERROR, 0, 0, specs[i],
                    "--input-shape %s: no placeholder or get_attr named %s (placeholders: %s)", specs[i], s.name,
                    o ? names : "none");
      errors++;
      continue;
    }
    const OxTensorMeta *old = ox_node_tensor_meta(&g->nodes[hit]);
    OxDType dt = s.dtype ? s.dtype : old && old->dtype ? old->dtype : OX_DT_F32;
    OxTensorMeta *t = ox_graph_tensor_meta_new(g, dt, s.rank);
    if (old) t->device = old->device;
    for (int k = 0; k < s.rank; k++)
      t->shape[k] = s.syms[k][0] ? (OxDim){0, ox_graph_intern(g, s.syms[k])} : cdim(s.dims[k]);
    OxMeta m = {.kind = OX_META_TENSOR, .n = 1, .t = t};
    ox_graph_set_meta(g, hit, &m);
  }
  return errors;
}

/* ------------------------------------------------------------------ --shapes FILE */

void ox_shape_list_init(OxShapeList *l) {
  memset(l, 0, sizeof *l);
  l->pool = ox_graph_new();
}

void ox_shape_list_free(OxShapeList *l) {
  if (!l) return;
  free(l->items);
  ox_graph_free(l->pool);
  memset(l, 0, sizeof *l);
}

static uint64_t le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

int ox_shapes_load_file(const char *path, OxShapeList *out, OxDiagList *d) {
  char err[512];
  size_t len = 0;
  char *text = ox_map_file(path, &len, ox_input_cap((size_t)1 << 30), err, sizeof err);
  if (!text) {
    ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "%s", err);
    return 1;
  }
  const unsigned char *u = (const unsigned char *)text;
  size_t at = 0;
  while (at < len && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) at++;
  int errors;
  if (at < len && text[at] == '{') {
    errors = ox_shapes_read_json(text, len, out, d);
  } else if (len >= 8) {
    /* safetensors: an 8-byte little-endian header length, the JSON header, then the data */
    uint64_t n = le64(u);
    if (n < 2 || n > len - 8 || n > ((uint64_t)100 << 20) || text[8] != '{') {
      ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL,
                  "not a shapes file: neither a JSON object nor a .safetensors file (its first 8 bytes give a header "
                  "of %llu bytes in a file of %zu)",
                  (unsigned long long)n, len);
      ox_text_free(text);
      return 1;
    }
    char *hdr = ox_xrealloc(NULL, (size_t)n + 1);
    memcpy(hdr, text + 8, (size_t)n);
    hdr[n] = 0;
    /* the header may be padded with spaces */
    errors = ox_shapes_read_json(hdr, (size_t)n, out, d);
    free(hdr);
  } else {
    ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "not a shapes file: %zu bytes, neither a JSON object nor safetensors", len);
    errors = 1;
  }
  ox_text_free(text);
  return errors;
}

/* "layers.0.weight" -> "layers_0_weight": how export names a state_dict entry's placeholder
 * (p_layers_0_weight, b_... for buffers) or a get_attr node (layers_0_weight). */
static void mangle(const char *key, char *buf, size_t cap) {
  size_t i = 0;
  for (; key[i] && i + 1 < cap; i++) buf[i] = key[i] == '.' || key[i] == '-' ? '_' : key[i];
  buf[i] = 0;
}

int ox_shapes_apply(OxGraph *g, const OxShapeList *l, OxDiagList *d, OxShapesApplied *st) {
  OxShapesApplied r = {0, 0};
  char miss[320] = "";
  size_t mo = 0;
  for (uint32_t i = 0; i < l->n; i++) {
    const OxShapeEntry *e = &l->items[i];
    char m[512], alt[3][520];
    mangle(e->key, m, sizeof m);
    snprintf(alt[0], sizeof alt[0], "%s", m);
    snprintf(alt[1], sizeof alt[1], "p_%s", m);
    snprintf(alt[2], sizeof alt[2], "b_%s", m);
    uint32_t hits = 0;
    for (int pass = 0; pass < 2 && !hits; pass++)
      OX_GRAPH_FOREACH(g, id) {
        const OxNode *nd = &g->nodes[id];
        if (nd->op != OX_OP_PLACEHOLDER && nd->op != OX_OP_GET_ATTR) continue;
        bool match = pass == 0 ? (!strcmp(nd->name, e->key) || (nd->target && !strcmp(nd->target, e->key)))
                               : (!strcmp(nd->name, alt[0]) || !strcmp(nd->name, alt[1]) || !strcmp(nd->name, alt[2]));
        if (!match) continue;
        const OxTensorMeta *old = ox_node_tensor_meta(nd);
        OxDType dt = e->dtype ? e->dtype : old && old->dtype ? old->dtype : OX_DT_F32;
        OxTensorMeta *t = ox_graph_tensor_meta_new(g, dt, e->rank);
        if (old) t->device = old->device;
        for (int32_t k = 0; k < e->rank; k++)
          t->shape[k] = e->shape[k].sym ? (OxDim){0, ox_graph_intern(g, e->shape[k].sym)} : e->shape[k];
        OxMeta mm = {.kind = OX_META_TENSOR, .n = 1, .t = t};
        ox_graph_set_meta(g, id, &mm);
        hits++;
      }
    if (hits) {
      r.applied += hits;
    } else {
      if (r.unmatched < 5 && mo + 1 < sizeof miss) {
        int k = snprintf(miss + mo, sizeof miss - mo, "%s%s", mo ? ", " : "", e->key);
        if (k > 0) mo += (size_t)k;
        if (mo >= sizeof miss) mo = sizeof miss - 1;
      }
      r.unmatched++;
    }
  }
  if (r.unmatched && d)
    ox_diag_add(d, OX_SEV_WARNING, 0, 0, NULL, "--shapes: %u of %u entries name no placeholder or get_attr: %s%s",
                r.unmatched, l->n, miss, r.unmatched > 5 ? ", ..." : "");
  if (st) *st = r;
  return 0;
}
