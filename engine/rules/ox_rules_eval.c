/* ox_rules_eval.c - the rule language's runtime values and evaluator of guards and templates.
 *
 * Values (RV) are ints, floats, bools, strings, dtypes, None, nodes and lists, allocated in the
 * attempt's arena (Ev). Every evaluation step ticks a budget (EV_BUDGET) and lists are bounded
 * (EV_MAX_LIST), so a guard always terminates. Guards only read the graph; templates create
 * nodes through ox_rules_builtins.c inside the running step. The first, innermost failure is
 * kept as a reason code with its arguments (ox_rules_evfail); explain_false says why a guard
 * was false.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/ox_rules_private.h"

/* Records a failure (spec: one char per argument, 'n' = a node name); returns false. */
bool ox_rules_evfail(Ev *ev, OxReasonCode code, const char *spec, ...) {
  if (ev->failed) return false; /* keep the first, innermost failure */
  ev->failed = true;
  ev->code = (uint16_t)code;
  ev->n_args = 0;
  va_list ap;
  va_start(ap, spec);
  for (const char *s = spec; *s && ev->n_args < OX_REASON_MAX_ARGS; s++) {
    const char *a = va_arg(ap, const char *);
    snprintf(ev->args[ev->n_args], sizeof ev->args[0], "%s", a ? a : "");
    ev->is_node[ev->n_args++] = *s == 'n';
  }
  va_end(ap);
  return false;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
bool
ox_rules_everr(Ev *ev, const char *fmt, ...) {
  char msg[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ox_rules_evfail(ev, OX_REASON_OTHER, "x", msg);
}

bool ox_rules_tick(Ev *ev) {
  if (++ev->steps <= EV_BUDGET) return true;
  return ox_rules_everr(ev, "evaluation budget of %u steps exceeded", EV_BUDGET);
}

RV *ox_rules_rv_alloc(Ev *ev, uint32_t n) { return ox_arena_alloc(&ev->arena, (n ? n : 1) * sizeof(RV)); }

RV ox_rules_rv_int(int64_t i) { return (RV){.k = V_INT, .u.i = i}; }
RV ox_rules_rv_bool(bool b) { return (RV){.k = V_BOOL, .u.b = b}; }
RV ox_rules_rv_node(OxNodeId id) { return (RV){.k = V_NODE, .u.node = id}; }
RV ox_rules_rv_str(const char *s) { return (RV){.k = V_STR, .u.s = s}; }
RV ox_rules_rv_list(RV *items, uint32_t n) { return (RV){.k = V_LIST, .n = n, .u.items = items}; }

const char *ox_rules_node_name(const Ev *ev, OxNodeId id) {
  const OxNode *n = ox_graph_node(ev->g, id);
  return n ? n->name : "?";
}

RV ox_rules_rv_from_value(Ev *ev, const OxValue *v, bool keep_src) {
  RV r;
  memset(&r, 0, sizeof r);
  r.src = keep_src ? v : NULL;
  switch ((OxValueKind)v->kind) {
  case OX_V_NONE:
    r.k = V_NONE;
    break;
  case OX_V_BOOL:
    r.k = V_BOOL;
    r.u.b = v->u.b;
    break;
  case OX_V_INT:
    r.k = V_INT;
    r.u.i = v->u.i;
    break;
  case OX_V_FLOAT:
    r.k = V_FLOAT;
    r.u.f = v->u.f;
    break;
  case OX_V_STR:
    r.k = V_STR;
    r.u.s = v->s;
    break;
  case OX_V_NODE:
    r.k = V_NODE;
    r.u.node = v->u.node;
    break;
  case OX_V_DTYPE:
    if (v->u.dtype != OX_DT_UNKNOWN) {
      r.k = V_DTYPE;
      r.u.dt = v->u.dtype;
    } else {
      r.k = V_RAW;
      r.src = v;
    }
    break;
  case OX_V_LIST:
  case OX_V_TUPLE:
    r.k = V_LIST;
    r.n = v->n;
    r.u.items = ox_rules_rv_alloc(ev, v->n);
    for (uint32_t i = 0; i < v->n; i++)
      r.u.items[i] = ox_rules_rv_from_value(ev, &v->u.items[i], true);
    break;
  default:
    r.k = V_RAW;
    r.src = v;
    break;
  }
  return r;
}

static bool rv_to_value(Ev *ev, const RV *r, OxValue *out) {
  if (r->src && r->k != V_NODE) {
    *out = ox_graph_value_copy(ev->g, r->src);
    return true;
  }
  switch (r->k) {
  case V_NONE:
    *out = ox_value_none();
    return true;
  case V_BOOL:
    *out = ox_value_bool(r->u.b);
    return true;
  case V_INT:
    *out = ox_value_int(r->u.i);
    return true;
  case V_FLOAT:
    *out = ox_value_float(r->u.f);
    return true;
  case V_STR:
    *out = ox_graph_value_str(ev->g, OX_V_STR, r->u.s);
    return true;
  case V_DTYPE:
    *out = ox_value_dtype(r->u.dt);
    return true;
  case V_NODE: {
    const OxNode *n = ox_graph_node(ev->g, r->u.node);
    if (!n || n->erased)
      return ox_rules_everr(ev, "node %s was erased by an earlier statement", n ? n->name : "?");
    *out = ox_value_node(r->u.node);
    return true;
  }
  case V_LIST: {
    OxValue *items = ox_arena_alloc(&ev->arena, (r->n ? r->n : 1) * sizeof *items);
    for (uint32_t i = 0; i < r->n; i++)
      if (!rv_to_value(ev, &r->u.items[i], &items[i])) return false;
    *out = ox_graph_value_seq(ev->g, OX_V_LIST, items, r->n);
    return true;
  }
  default:
    return ox_rules_everr(ev, "an unset value");
  }
}

static void fmt_rv(const Ev *ev, const RV *r, OxBuf *b, int depth) {
  switch (r->k) {
  case V_NONE:
    ox_buf_puts(b, "None");
    break;
  case V_BOOL:
    ox_buf_puts(b, r->u.b ? "True" : "False");
    break;
  case V_INT:
    ox_buf_printf(b, "%lld", (long long)r->u.i);
    break;
  case V_FLOAT:
    ox_buf_put_pyfloat(b, r->u.f);
    break;
  case V_STR:
    ox_buf_put_quoted(b, r->u.s);
    break;
  case V_DTYPE:
    ox_buf_puts(b, ox_dtype_abbr(r->u.dt));
    break;
  case V_NODE:
    ox_buf_puts(b, ox_rules_node_name(ev, r->u.node));
    break;
  case V_LIST:
    ox_buf_putc(b, '[');
    for (uint32_t i = 0; i < r->n; i++) {
      if (i) ox_buf_puts(b, ", ");
      if (b->len > 120 || depth > 3) {
        ox_buf_puts(b, "...");
        break;
      }
      fmt_rv(ev, &r->u.items[i], b, depth + 1);
    }
    ox_buf_putc(b, ']');
    break;
  case V_RAW: {
    char buf[96];
    ox_buf_puts(b, ox_value_format(ev->g, r->src, buf, sizeof buf));
    break;
  }
  default:
    ox_buf_puts(b, "?");
    break;
  }
}

const char *ox_rules_rv_text(const Ev *ev, const RV *r, char *buf, size_t cap) {
  OxBuf b;
  ox_buf_init(&b);
  fmt_rv(ev, r, &b, 0);
  snprintf(buf, cap, "%s", b.data ? b.data : "");
  ox_buf_free(&b);
  return buf;
}

const char *ox_rules_rv_kind_name(const RV *r) {
  static const char *const names[] = {"None",  "bool", "int",  "float", "string",
                                      "dtype", "node", "list", "value", "unset"};
  return names[r->k];
}

bool ox_rules_is_num(const RV *r) { return r->k == V_INT || r->k == V_FLOAT; }
double ox_rules_num(const RV *r) { return r->k == V_INT ? (double)r->u.i : r->u.f; }

bool ox_rules_rv_eq(const RV *a, const RV *b) {
  if (ox_rules_is_num(a) && ox_rules_is_num(b)) {
    if (a->k == V_INT && b->k == V_INT) return a->u.i == b->u.i;
    return ox_rules_num(a) == ox_rules_num(b);
  }
  if (a->k != b->k) return false;
  switch (a->k) {
  case V_NONE:
    return true;
  case V_BOOL:
    return a->u.b == b->u.b;
  case V_STR:
    return strcmp(a->u.s, b->u.s) == 0;
  case V_DTYPE:
    return a->u.dt == b->u.dt;
  case V_NODE:
    return a->u.node == b->u.node;
  case V_LIST:
    if (a->n != b->n) return false;
    for (uint32_t i = 0; i < a->n; i++)
      if (!ox_rules_rv_eq(&a->u.items[i], &b->u.items[i])) return false;
    return true;
  case V_RAW:
    return ox_value_equal(a->src, b->src);
  default:
    return false;
  }
}

/* ------------------------------------------------------------------ evaluation */

bool ox_rules_want_bool(Ev *ev, const Expr *x, const RV *v, bool *b) {
  if (v->k != V_BOOL) {
    char buf[96];
    return ox_rules_everr(ev, "%.*s needs a boolean, got %s %s", 60, x->s ? x->s : "a condition",
                          ox_rules_rv_kind_name(v), ox_rules_rv_text(ev, v, buf, sizeof buf));
  }
  *b = v->u.b;
  return true;
}

static bool eval_call(Ev *ev, const Expr *x, RV *out) {
  RV args[32], kv[16];
  for (uint32_t i = 0; i < x->n; i++)
    if (!ox_rules_eval(ev, x->a[i], &args[i])) return false;
  for (uint32_t i = 0; i < x->nk; i++)
    if (!ox_rules_eval(ev, x->kv[i], &kv[i])) return false;
  if (x->builtin >= 0) return ox_rules_builtins[x->builtin].fn(ev, x, args, x->n, out);
  if (!ev->tmpl) return ox_rules_everr(ev, "%s(...) creates a node: only in replace:", x->s);
  const char *target = ev->aten ? x->post_target : x->pre_target;
  OxOp kind = (OxOp)(ev->aten ? x->post_kind : x->pre_kind);
  bool aten_spelling = (x->i >> (ev->aten ? 1 : 0)) & 1;
  if (!target)
    return ox_rules_everr(ev, "op %s has no %s spelling to create", x->s,
                          ev->aten ? "aten (post-grad)" : "torch (pre-grad)");
  if (aten_spelling) target = ox_rules_aten_spelled(ev, target);
  OxValue vals[32], kvals[16];
  for (uint32_t i = 0; i < x->n; i++)
    if (!rv_to_value(ev, &args[i], &vals[i])) return false;
  for (uint32_t i = 0; i < x->nk; i++)
    if (!rv_to_value(ev, &kv[i], &kvals[i])) return false;
  OxValue kwargs = x->nk ? ox_graph_value_dict(ev->g, x->kw, kvals, x->nk) : ox_value_none();
  OxNodeId id = ox_rules_create(ev, kind, target, ox_graph_value_seq(ev->g, OX_V_TUPLE, vals, x->n), kwargs);
  if (!id) return false;
  *out = ox_rules_rv_node(id);
  return true;
}

static bool arith(Ev *ev, uint8_t op, const RV *a, const RV *b, RV *out) {
  if (!ox_rules_is_num(a) || !ox_rules_is_num(b))
    return ox_rules_everr(ev, "'%s' needs numbers, got %s and %s", ox_rules_bin_names[op],
                          ox_rules_rv_kind_name(a), ox_rules_rv_kind_name(b));
  if (op == B_DIV) {
    if (ox_rules_num(b) == 0) return ox_rules_everr(ev, "division by zero");
    *out = (RV){.k = V_FLOAT, .u.f = ox_rules_num(a) / ox_rules_num(b)};
    return true;
  }
  if (a->k == V_INT && b->k == V_INT) {
    int64_t x = a->u.i, y = b->u.i, r = 0;
    bool ovf = false;
    switch (op) {
    case B_ADD:
      ovf = __builtin_add_overflow(x, y, &r);
      break;
    case B_SUB:
      ovf = __builtin_sub_overflow(x, y, &r);
      break;
    case B_MUL:
      ovf = __builtin_mul_overflow(x, y, &r);
      break;
    case B_FDIV:
    case B_MOD:
      if (y == 0) return ox_rules_everr(ev, "division by zero");
      if (x == INT64_MIN && y == -1) {
        ovf = true;
        break;
      }
      r = op == B_FDIV ? x / y : x % y;
      if (op == B_FDIV && (x % y != 0) && ((x < 0) != (y < 0))) r--; /* Python's floor division */
      if (op == B_MOD && r != 0 && ((r < 0) != (y < 0))) r += y;
      break;
    default:
      break;
    }
    if (ovf) return ox_rules_everr(ev, "integer overflow in '%s'", ox_rules_bin_names[op]);
    *out = ox_rules_rv_int(r);
    return true;
  }
  double x = ox_rules_num(a), y = ox_rules_num(b), r = 0;
  switch (op) {
  case B_ADD:
    r = x + y;
    break;
  case B_SUB:
    r = x - y;
    break;
  case B_MUL:
    r = x * y;
    break;
  case B_FDIV:
  case B_MOD:
    if (y == 0) return ox_rules_everr(ev, "division by zero");
    r = op == B_FDIV ? floor(x / y) : x - y * floor(x / y);
    break;
  default:
    break;
  }
  *out = (RV){.k = V_FLOAT, .u.f = r};
  return true;
}

static bool eval_bin(Ev *ev, const Expr *x, RV *out) {
  RV a, b;
  if (x->op == B_AND || x->op == B_OR) {
    bool va = false, vb = false;
    if (!ox_rules_eval(ev, x->a[0], &a) || !ox_rules_want_bool(ev, x->a[0], &a, &va)) return false;
    if (x->op == B_AND ? !va : va) return *out = ox_rules_rv_bool(va), true;
    if (!ox_rules_eval(ev, x->a[1], &b) || !ox_rules_want_bool(ev, x->a[1], &b, &vb)) return false;
    return *out = ox_rules_rv_bool(vb), true;
  }
  if (!ox_rules_eval(ev, x->a[0], &a) || !ox_rules_eval(ev, x->a[1], &b)) return false;
  switch (x->op) {
  case B_EQ:
    *out = ox_rules_rv_bool(ox_rules_rv_eq(&a, &b));
    return true;
  case B_NE:
    *out = ox_rules_rv_bool(!ox_rules_rv_eq(&a, &b));
    return true;
  case B_LT:
  case B_LE:
  case B_GT:
  case B_GE: {
    int c;
    if (ox_rules_is_num(&a) && ox_rules_is_num(&b))
      c = ox_rules_num(&a) < ox_rules_num(&b) ? -1 : ox_rules_num(&a) > ox_rules_num(&b) ? 1 : 0;
    else if (a.k == V_STR && b.k == V_STR)
      c = strcmp(a.u.s, b.u.s);
    else
      return ox_rules_everr(ev, "'%s' needs numbers, got %s and %s", ox_rules_bin_names[x->op],
                            ox_rules_rv_kind_name(&a), ox_rules_rv_kind_name(&b));
    bool r = x->op == B_LT ? c < 0 : x->op == B_LE ? c <= 0 : x->op == B_GT ? c > 0 : c >= 0;
    *out = ox_rules_rv_bool(r);
    return true;
  }
  case B_IN:
    if (b.k == V_STR && a.k == V_STR) return *out = ox_rules_rv_bool(strstr(b.u.s, a.u.s) != NULL), true;
    if (!ox_rules_want_list(ev, &b, "'in'")) return false;
    for (uint32_t i = 0; i < b.n; i++)
      if (ox_rules_rv_eq(&a, &b.u.items[i])) return *out = ox_rules_rv_bool(true), true;
    *out = ox_rules_rv_bool(false);
    return true;
  case B_CAT: {
    if (a.k == V_STR && b.k == V_STR) {
      size_t la = strlen(a.u.s), lb = strlen(b.u.s);
      char *s = ox_arena_alloc(&ev->arena, la + lb + 1);
      memcpy(s, a.u.s, la);
      memcpy(s + la, b.u.s, lb + 1);
      return *out = ox_rules_rv_str(s), true;
    }
    if (!ox_rules_want_list(ev, &a, "'++'") || !ox_rules_want_list(ev, &b, "'++'")) return false;
    if ((uint64_t)a.n + b.n > EV_MAX_LIST) return ox_rules_everr(ev, "'++': list too long");
    RV *it = ox_rules_rv_alloc(ev, a.n + b.n);
    if (a.n) memcpy(it, a.u.items, a.n * sizeof *it);
    if (b.n) memcpy(it + a.n, b.u.items, b.n * sizeof *it);
    *out = ox_rules_rv_list(it, a.n + b.n);
    return true;
  }
  default:
    return arith(ev, x->op, &a, &b, out);
  }
}

static bool list_index(Ev *ev, const RV *l, int64_t k, RV *out) {
  int64_t i = k < 0 ? k + l->n : k;
  if (i < 0 || i >= (int64_t)l->n)
    return ox_rules_everr(ev, "index %lld is out of range for a list of %u", (long long)k, l->n);
  *out = l->u.items[i];
  return true;
}

bool ox_rules_eval(Ev *ev, const Expr *x, RV *out) {
  if (!ox_rules_tick(ev)) return false;
  switch (x->k) {
  case X_INT:
    *out = ox_rules_rv_int(x->i);
    return true;
  case X_FLOAT:
    *out = (RV){.k = V_FLOAT, .u.f = x->f};
    return true;
  case X_STR:
    *out = ox_rules_rv_str(x->s);
    return true;
  case X_BOOL:
    *out = ox_rules_rv_bool(x->i != 0);
    return true;
  case X_NONE:
    *out = (RV){.k = V_NONE};
    return true;
  case X_DTYPE:
    *out = (RV){.k = V_DTYPE, .u.dt = x->dt};
    return true;
  case X_NAME:
    if (ev->env[x->slot].k == V_UNSET) return ox_rules_everr(ev, "'%s' is not bound in this match", x->s);
    *out = ev->env[x->slot];
    return true;
  case X_LIST: {
    RV *it = ox_rules_rv_alloc(ev, x->n);
    for (uint32_t i = 0; i < x->n; i++)
      if (!ox_rules_eval(ev, x->a[i], &it[i])) return false;
    *out = ox_rules_rv_list(it, x->n);
    return true;
  }
  case X_CALL:
    return eval_call(ev, x, out);
  case X_BIN:
    return eval_bin(ev, x, out);
  case X_NOT: {
    RV a;
    bool b = false;
    if (!ox_rules_eval(ev, x->a[0], &a) || !ox_rules_want_bool(ev, x->a[0], &a, &b)) return false;
    *out = ox_rules_rv_bool(!b);
    return true;
  }
  case X_NEG: {
    RV a;
    if (!ox_rules_eval(ev, x->a[0], &a)) return false;
    if (a.k == V_INT && a.u.i != INT64_MIN) return *out = ox_rules_rv_int(-a.u.i), true;
    if (a.k == V_FLOAT) return *out = (RV){.k = V_FLOAT, .u.f = -a.u.f}, true;
    return ox_rules_everr(ev, "'-' needs a number, got %s", ox_rules_rv_kind_name(&a));
  }
  case X_IF: {
    RV c;
    bool b = false;
    if (!ox_rules_eval(ev, x->a[0], &c) || !ox_rules_want_bool(ev, x->a[0], &c, &b)) return false;
    return ox_rules_eval(ev, x->a[b ? 1 : 2], out);
  }
  case X_INDEX: {
    RV base, idx;
    int64_t k = 0;
    if (!ox_rules_eval(ev, x->a[0], &base) || !ox_rules_eval(ev, x->a[1], &idx) ||
        !ox_rules_want_int(ev, &idx, "an index", &k))
      return false;
    if (base.k == V_LIST) return list_index(ev, &base, k, out);
    if (base.k == V_NODE) {
      if (!ev->tmpl)
        return ox_rules_everr(
            ev, "indexing node %s creates a getitem: only in replace:", ox_rules_node_name(ev, base.u.node));
      OxNodeId id = ox_rules_project(ev, base.u.node, k);
      if (!id) return false;
      *out = ox_rules_rv_node(id);
      return true;
    }
    return ox_rules_everr(ev, "cannot index %s", ox_rules_rv_kind_name(&base));
  }
  case X_SLICE: {
    RV base, lo, hi;
    int64_t a = 0, b = 0;
    if (!ox_rules_eval(ev, x->a[0], &base) || !ox_rules_want_list(ev, &base, "slicing")) return false;
    b = base.n;
    if (x->a[1] && (!ox_rules_eval(ev, x->a[1], &lo) || !ox_rules_want_int(ev, &lo, "a slice bound", &a)))
      return false;
    if (x->a[2] && (!ox_rules_eval(ev, x->a[2], &hi) || !ox_rules_want_int(ev, &hi, "a slice bound", &b)))
      return false;
    int64_t n = base.n;
    if (a < 0) a = a + n < 0 ? 0 : a + n;
    if (b < 0) b = b + n < 0 ? 0 : b + n;
    if (a > n) a = n;
    if (b > n) b = n;
    if (b < a) b = a;
    *out = ox_rules_rv_list(base.u.items + a, (uint32_t)(b - a));
    return true;
  }
  case X_COMP: {
    RV l;
    if (!ox_rules_eval(ev, x->a[1], &l) || !ox_rules_want_list(ev, &l, "a comprehension")) return false;
    RV *it = ox_rules_rv_alloc(ev, l.n);
    uint32_t k = 0;
    for (uint32_t i = 0; i < l.n; i++) {
      ev->env[x->slot] = l.u.items[i];
      if (x->n == 3) {
        RV c;
        bool b = false;
        if (!ox_rules_eval(ev, x->a[2], &c) || !ox_rules_want_bool(ev, x->a[2], &c, &b)) return false;
        if (!b) continue;
      }
      if (!ox_rules_eval(ev, x->a[0], &it[k++])) return false;
    }
    ev->env[x->slot] = (RV){.k = V_UNSET};
    *out = ox_rules_rv_list(it, k);
    return true;
  }
  default:
    return ox_rules_everr(ev, "bad expression");
  }
}

/* Why a guard is false: the failing conjunct, with the values of both sides of a comparison. */
void ox_rules_explain_false(Ev *ev, const Expr *x, const char *src, OxBuf *b) {
  if (x->k == X_BIN && x->op == B_AND) {
    RV a;
    bool va = ox_rules_eval(ev, x->a[0], &a) && a.k == V_BOOL && a.u.b;
    ox_rules_explain_false(ev, va ? x->a[1] : x->a[0], src, b);
    return;
  }
  if (x->k == X_BIN && x->op >= B_EQ && x->op <= B_IN) {
    size_t len0 = b->len;
    for (int side = 0; side < 2; side++) {
      const Expr *s = x->a[side];
      if (s->k == X_INT || s->k == X_FLOAT || s->k == X_STR || s->k == X_BOOL || s->k == X_NONE) continue;
      RV v = {0};
      char buf[160];
      if (!ox_rules_eval(ev, s, &v)) continue;
      if (b->len > len0) ox_buf_puts(b, ", ");
      ox_buf_printf(b, "%.*s is %s", (int)(s->end - s->off > 80 ? 80 : s->end - s->off), src + s->off,
                    ox_rules_rv_text(ev, &v, buf, sizeof buf));
    }
    if (b->len > len0) return;
  }
  if (x->k == X_CALL && x->builtin >= 0 && x->n == 1 && x->a[0]->k == X_COMP &&
      (!strcmp(x->s, "all") || !strcmp(x->s, "any"))) {
    /* all([cond for v in list]): the first element that fails, with v bound */
    const Expr *cp = x->a[0];
    RV l;
    bool all = !strcmp(x->s, "all");
    if (all && ox_rules_eval(ev, cp->a[1], &l) && l.k == V_LIST) {
      for (uint32_t i = 0; i < l.n; i++) {
        ev->env[cp->slot] = l.u.items[i];
        RV c = {0}, e = {0};
        if (cp->n == 3 && !(ox_rules_eval(ev, cp->a[2], &c) && c.k == V_BOOL && c.u.b)) continue;
        if (!ox_rules_eval(ev, cp->a[0], &e) || e.k != V_BOOL || e.u.b) continue;
        char buf[160];
        ox_buf_printf(b, "for %s = %s: ", cp->s, ox_rules_rv_text(ev, &l.u.items[i], buf, sizeof buf));
        ox_rules_explain_false(ev, cp->a[0], src, b);
        ev->env[cp->slot] = (RV){.k = V_UNSET};
        return;
      }
      ev->env[cp->slot] = (RV){.k = V_UNSET};
    }
  }
  if (x->k == X_NOT) {
    ox_buf_printf(b, "%.*s is True",
                  (int)(x->a[0]->end - x->a[0]->off > 100 ? 100 : x->a[0]->end - x->a[0]->off),
                  src + x->a[0]->off);
    return;
  }
  ev->evidence[0] = 0;
  RV v = {0};
  if (ox_rules_eval(ev, x, &v) && ev->evidence[0]) {
    ox_buf_puts(b, ev->evidence);
    return;
  }
  ox_buf_puts(b, "it is False");
}
