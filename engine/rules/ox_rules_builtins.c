/* ox_rules_builtins.c - the rule language's builtins: graph queries, node creation for
 * templates, and the builtin table (name, arity, parameter letters, result type, function).
 *
 * Queries read the graph and the match; node creation (templates only) adds nodes before the
 * step's insertion point with inferred meta and records them, so the runner can erase the ones
 * left unused. Every builtin checks its arguments at run time too and fails with a reason
 * rather than reading out of bounds.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/ox_rules_private.h"

/* ------------------------------------------------------------------ graph queries */

static bool want_node(Ev *ev, const RV *v, const char *fn, OxNodeId *out) {
  if (v->k != V_NODE) {
    char b[96];
    return ox_rules_everr(ev, "%s() needs a node, got %s %s", fn, ox_rules_rv_kind_name(v),
                          ox_rules_rv_text(ev, v, b, sizeof b));
  }
  const OxNode *n = ox_graph_node(ev->g, v->u.node);
  if (!n || n->erased) return ox_rules_everr(ev, "%s(): node %s no longer exists", fn, n ? n->name : "?");
  *out = v->u.node;
  return true;
}

bool ox_rules_want_int(Ev *ev, const RV *v, const char *what, int64_t *out) {
  if (v->k != V_INT) {
    char b[96];
    return ox_rules_everr(ev, "%s needs an int, got %s %s", what, ox_rules_rv_kind_name(v),
                          ox_rules_rv_text(ev, v, b, sizeof b));
  }
  *out = v->u.i;
  return true;
}

bool ox_rules_want_list(Ev *ev, const RV *v, const char *what) {
  if (v->k == V_LIST) return true;
  char b[96];
  return ox_rules_everr(ev, "%s needs a list, got %s %s", what, ox_rules_rv_kind_name(v),
                        ox_rules_rv_text(ev, v, b, sizeof b));
}

/* tensor meta of a node; with static = every dim concrete */
static const OxTensorMeta *meta_of(Ev *ev, OxNodeId id, bool need_static) {
  const OxNode *n = &ev->g->nodes[id];
  if (n->meta.kind != OX_META_TENSOR || !n->meta.t || n->meta.t->rank < 0) {
    ox_rules_evfail(ev, OX_REASON_META_MISSING, "n", n->name);
    return NULL;
  }
  if (need_static)
    for (int32_t i = 0; i < n->meta.t->rank; i++)
      if (n->meta.t->shape[i].sym) {
        ox_rules_evfail(ev, OX_REASON_SYMBOLIC, "nx", n->name, n->meta.t->shape[i].sym);
        return NULL;
      }
  return n->meta.t;
}

bool ox_rules_node_is_aten(const OxGraph *g, OxNodeId id) {
  const OxSpelling *sp = NULL;
  const OxNode *n = ox_graph_node(g, id);
  if (!n || !ox_op_of_node(g, n, &sp) || !sp) return false;
  return sp->level == OX_LEVEL_ATEN;
}

static bool in_matched(const Ev *ev, OxNodeId id) {
  for (uint32_t i = 0; i < ev->m->n_nodes; i++)
    if (ev->m->nodes[i] == id) return true;
  return false;
}

/* split / split_with_sizes / unbind: input, normalized dim and sections, the way the
 * built-in passes read them (sections from the outputs' meta, else from the arguments and
 * the input shape with a short last chunk, never size * count: upstream #197080). */
typedef struct SplitInfo {
  OxNodeId input;
  int64_t dim;
  int64_t *sec;
  uint32_t n;
} SplitInfo;

static bool split_info(Ev *ev, OxNodeId s, SplitInfo *si, const char *fn) {
  const OxGraph *g = ev->g;
  const OxNode *n = &g->nodes[s];
  OxOpId op = ox_op_of_node(g, n, NULL);
  if (op != OX_OPID_SPLIT && op != OX_OPID_SPLIT_WITH_SIZES && op != OX_OPID_UNBIND)
    return ox_rules_everr(ev, "%s(): %s is not a split or unbind", fn, n->name);
  OxOpArgs oa;
  char err[160];
  if (ox_op_normalize(g, n, &oa, err, sizeof err) != 0) return ox_rules_everr(ev, "%s(): %s", fn, err);
  if (oa.slot[0]->kind != OX_V_NODE)
    return ox_rules_everr(ev, "%s(): the input of %s is not a node", fn, n->name);
  si->input = oa.slot[0]->u.node;
  const OxTensorMeta *in = meta_of(ev, si->input, true);
  if (!in) return false;
  const OxValue *dv = oa.slot[op == OX_OPID_UNBIND ? 1 : 2];
  if (dv->kind != OX_V_INT) return ox_rules_everr(ev, "%s(): the dim of %s is not an int", fn, n->name);
  si->dim = dv->u.i < 0 ? dv->u.i + in->rank : dv->u.i;
  if (si->dim < 0 || si->dim >= in->rank)
    return ox_rules_everr(ev, "%s(): the dim of %s is out of range", fn, n->name);
  int64_t size = in->shape[si->dim].v;
  if (op == OX_OPID_UNBIND) {
    if (size > EV_MAX_LIST) return ox_rules_everr(ev, "%s(): %s has too many outputs", fn, n->name);
    si->n = (uint32_t)size;
    si->sec = ox_arena_alloc(&ev->arena, (si->n + 1) * sizeof *si->sec);
    for (uint32_t i = 0; i < si->n; i++)
      si->sec[i] = 1;
    return true;
  }
  if (n->meta.kind == OX_META_TUPLE && n->meta.n > 0) {
    si->n = n->meta.n;
    si->sec = ox_arena_alloc(&ev->arena, (si->n + 1) * sizeof *si->sec);
    for (uint32_t i = 0; i < si->n; i++) {
      const OxTensorMeta *t = &n->meta.t[i];
      if (t->rank != in->rank || t->shape[si->dim].sym)
        return ox_rules_everr(ev, "%s(): the meta of %s output %u is unusable", fn, n->name, i);
      si->sec[i] = t->shape[si->dim].v;
    }
    return true;
  }
  const OxValue *sz = oa.slot[1];
  if (sz->kind == OX_V_INT && sz->u.i > 0) {
    int64_t cnt = (size + sz->u.i - 1) / sz->u.i;
    if (cnt > EV_MAX_LIST) return ox_rules_everr(ev, "%s(): %s has too many outputs", fn, n->name);
    si->n = cnt ? (uint32_t)cnt : 1;
    si->sec = ox_arena_alloc(&ev->arena, (si->n + 1) * sizeof *si->sec);
    for (uint32_t i = 0; i < si->n; i++) {
      int64_t left = size - (int64_t)i * sz->u.i;
      si->sec[i] = left < sz->u.i ? left : sz->u.i;
    }
    return true;
  }
  if (sz->kind == OX_V_LIST || sz->kind == OX_V_TUPLE) {
    si->n = sz->n;
    si->sec = ox_arena_alloc(&ev->arena, (si->n + 1) * sizeof *si->sec);
    for (uint32_t i = 0; i < si->n; i++) {
      if (sz->u.items[i].kind != OX_V_INT)
        return ox_rules_everr(ev, "%s(): symbolic sections on %s", fn, n->name);
      si->sec[i] = sz->u.items[i].u.i;
    }
    return true;
  }
  return ox_rules_everr(ev, "%s(): the sections of %s are not static", fn, n->name);
}

/* The normalized dim of a cat / stack (against the rank of its first input that is not a
 * 1-D empty tensor; stack: that rank + 1), as the built-in passes read it. */
static bool cat_dim_of(Ev *ev, OxNodeId id, int64_t *out) {
  const OxGraph *g = ev->g;
  const OxNode *n = &g->nodes[id];
  OxOpId op = ox_op_of_node(g, n, NULL);
  if (op != OX_OPID_CAT && op != OX_OPID_STACK)
    return ox_rules_everr(ev, "cat_dim(): %s is not a cat or stack", n->name);
  OxOpArgs oa;
  char err[160];
  if (ox_op_normalize(g, n, &oa, err, sizeof err) != 0) return ox_rules_everr(ev, "cat_dim(): %s", err);
  const OxValue *t = oa.slot[0];
  if ((t->kind != OX_V_LIST && t->kind != OX_V_TUPLE) || !t->n || oa.slot[1]->kind != OX_V_INT)
    return ox_rules_everr(ev, "cat_dim(): the tensors or the dim of %s are not static", n->name);
  const OxTensorMeta *first = NULL;
  for (uint32_t i = 0; i < t->n && !first; i++) {
    if (t->u.items[i].kind != OX_V_NODE) continue;
    const OxNode *x = &g->nodes[t->u.items[i].u.node];
    const OxTensorMeta *tm = x->meta.kind == OX_META_TENSOR ? x->meta.t : NULL;
    bool stat = tm && tm->rank >= 0;
    for (int32_t k = 0; stat && k < tm->rank; k++)
      stat = !tm->shape[k].sym;
    if (stat && !(tm->rank == 1 && tm->shape[0].v == 0)) first = tm;
  }
  if (!first) return ox_rules_evfail(ev, OX_REASON_META_MISSING, "x", "the inputs of the cat");
  int64_t rank = op == OX_OPID_STACK ? first->rank + 1 : first->rank;
  int64_t d = oa.slot[1]->u.i < 0 ? oa.slot[1]->u.i + rank : oa.slot[1]->u.i;
  if (d < 0 || d >= rank) return ox_rules_everr(ev, "cat_dim(): the dim of %s is out of range", n->name);
  *out = d;
  return true;
}

/* ------------------------------------------------------------------ creating nodes (templates) */

static void push_created(Ev *ev, OxNodeId id) {
  if (ev->n_created == ev->cap_created) {
    ev->cap_created = ev->cap_created ? ev->cap_created * 2 : 16;
    ev->created = ox_xrealloc(ev->created, ev->cap_created * sizeof *ev->created);
  }
  ev->created[ev->n_created++] = id;
}

static bool was_created(const Ev *ev, OxNodeId id) {
  for (uint32_t i = 0; i < ev->n_created; i++)
    if (ev->created[i] == id) return true;
  return false;
}

static void infer_meta(OxGraph *g, OxNodeId id) {
  OxMeta m;
  char err[256];
  if (ox_shape_infer_node(g, id, &m, err, sizeof err) == 0) {
    m.inferred = true;
    ox_graph_set_meta_shared(g, id, &m);
  }
}

/* A created call must make sense to the op table (arity, keywords). */
static bool check_created(Ev *ev, OxNodeId id) {
  const OxNode *n = &ev->g->nodes[id];
  if (ox_op_of_node(ev->g, n, NULL) == OX_OPID_NONE) return true;
  OxOpArgs oa;
  char err[200];
  if (ox_op_normalize(ev->g, n, &oa, err, sizeof err) != 0) return ox_rules_everr(ev, "replace: %s", err);
  return true;
}

/* Values a replacement puts into a node are at most this deep, well within what every loader
 * reads back (256 levels, JSON counting its own structure too): a rule applied again and again
 * to its own output (m => f([args(m)])) cannot grow a tree the writers, the trace and the
 * loaders would have to recurse through without bound. */
#define EV_MAX_VALUE_DEPTH 128

/* Whether v is nested deeper than `left` levels; recurses at most left + 1 deep. */
static bool value_too_deep(const OxValue *v, uint32_t left) {
  if (v->kind != OX_V_LIST && v->kind != OX_V_TUPLE && v->kind != OX_V_DICT) return false;
  if (!left) return true;
  for (uint32_t i = 0; i < v->n; i++)
    if (value_too_deep(&v->u.items[i], left - 1)) return true;
  return false;
}

OxNodeId ox_rules_create(Ev *ev, OxOp kind, const char *target, OxValue args, OxValue kwargs) {
  if (value_too_deep(&args, EV_MAX_VALUE_DEPTH) || value_too_deep(&kwargs, EV_MAX_VALUE_DEPTH)) {
    ox_rules_everr(ev, "the arguments of a new %s are nested deeper than %u levels", target,
                   EV_MAX_VALUE_DEPTH);
    return 0;
  }
  OxNodeId id = ev->before ? ox_graph_insert_before(ev->g, ev->before, kind, NULL, target, args, kwargs)
                           : ox_graph_add_node(ev->g, kind, NULL, target, args, kwargs);
  infer_meta(ev->g, id);
  push_created(ev, id);
  return check_created(ev, id) ? id : 0;
}

const char *ox_rules_aten_spelled(Ev *ev, const char *bare) {
  if (!ev->torch_ops) return ox_graph_intern(ev->g, bare);
  char b[200];
  snprintf(b, sizeof b, "torch.ops.%s", bare);
  return ox_graph_intern(ev->g, b);
}

/* getitem(base, k), placed after base (after the getitems made for base in this step) */
OxNodeId ox_rules_project(Ev *ev, OxNodeId base, int64_t k) {
  if (!ox_rules_tick(ev)) return 0;
  const OxNode *b = ox_graph_node(ev->g, base);
  if (!b || b->erased) return ox_rules_everr(ev, "getitem of a node that no longer exists"), 0;
  OxNodeId after = base;
  uint32_t slot = ev->n_proj;
  for (uint32_t i = 0; i < ev->n_proj; i++)
    if (ev->proj_base[i] == base) {
      slot = i;
      if (!ev->g->nodes[ev->proj_last[i]].erased) after = ev->proj_last[i];
    }
  OxValue a[2] = {ox_value_node(base), ox_value_int(k)};
  OxNodeId id = ox_graph_insert_after(ev->g, after, OX_OP_CALL_FUNCTION, NULL, "operator.getitem",
                                      ox_graph_value_seq(ev->g, OX_V_TUPLE, a, 2), ox_value_none());
  infer_meta(ev->g, id);
  push_created(ev, id);
  if (slot == ev->n_proj) {
    if (ev->n_proj == ev->cap_proj) {
      ev->cap_proj = ev->cap_proj ? ev->cap_proj * 2 : 8;
      ev->proj_base = ox_xrealloc(ev->proj_base, ev->cap_proj * sizeof *ev->proj_base);
      ev->proj_last = ox_xrealloc(ev->proj_last, ev->cap_proj * sizeof *ev->proj_last);
    }
    ev->proj_base[ev->n_proj++] = base;
  }
  ev->proj_last[slot] = id;
  return id;
}

/* Erases a node; the insertion point moves past it first. */
void ox_rules_erase_node(Ev *ev, OxNodeId id) {
  OxGraph *g = ev->g;
  if (id == ev->before) {
    OxNodeId nx = g->link[id].next;
    while (nx && g->nodes[nx].erased)
      nx = g->link[nx].next;
    ev->before = nx;
  }
  if (ox_graph_erase(g, id)) ev->changed = true;
}

/* Every use of t becomes a use of v; t is erased when nothing uses it any more. */
void ox_rules_replace_uses(Ev *ev, OxNodeId t, OxNodeId v) {
  OxGraph *g = ev->g;
  if (t == v) return;
  uint32_t nu = g->nodes[t].n_users;
  OxNodeId *us = ox_xcalloc(nu + 1, sizeof *us);
  memcpy(us, g->nodes[t].users, nu * sizeof *us);
  if (ox_graph_replace_all_uses(g, t, v)) ev->changed = true;
  for (uint32_t i = 0; i < nu && !ev->need_sort; i++) /* a replacement defined after a user of t */
    if (us[i] != v && !g->nodes[us[i]].erased && !ox_graph_before(g, v, us[i])) ev->need_sort = true;
  free(us);
  /* a created replacement whose meta could not be inferred computes t's value: t's meta */
  if (was_created(ev, v) && g->nodes[v].meta.kind == OX_META_NONE && g->nodes[t].meta.kind != OX_META_NONE) {
    OxMeta m = g->nodes[t].meta;
    ox_graph_set_meta_shared(g, v, &m);
  }
  if (!g->nodes[t].n_users && !ox_pat_is_mutating(g, t)) ox_rules_erase_node(ev, t);
}

/* ------------------------------------------------------------------ builtins */

#define BI(name) static bool bi_##name(Ev *ev, const Expr *x, RV *a, uint32_t n, RV *out)
#define UNUSED_BI (void)x, (void)n

BI(len) {
  UNUSED_BI;
  if (a[0].k == V_STR) return *out = ox_rules_rv_int((int64_t)strlen(a[0].u.s)), true;
  if (!ox_rules_want_list(ev, &a[0], "len()")) return false;
  *out = ox_rules_rv_int(a[0].n);
  return true;
}

static bool fold(Ev *ev, const RV *l, bool prod, RV *out, const char *fn) {
  if (!ox_rules_want_list(ev, l, fn)) return false;
  bool flt = false;
  int64_t ai = prod ? 1 : 0;
  double af = prod ? 1 : 0;
  for (uint32_t i = 0; i < l->n; i++) {
    const RV *v = &l->u.items[i];
    if (!ox_rules_is_num(v))
      return ox_rules_everr(ev, "%s needs numbers, item %u is %s", fn, i, ox_rules_rv_kind_name(v));
    if (v->k == V_FLOAT) flt = true;
    af = prod ? af * ox_rules_num(v) : af + ox_rules_num(v);
    if (v->k == V_INT &&
        (prod ? __builtin_mul_overflow(ai, v->u.i, &ai) : __builtin_add_overflow(ai, v->u.i, &ai)))
      return ox_rules_everr(ev, "%s overflows", fn);
  }
  *out = flt ? (RV){.k = V_FLOAT, .u.f = af} : ox_rules_rv_int(ai);
  return true;
}

BI(sum) {
  UNUSED_BI;
  return fold(ev, &a[0], false, out, "sum()");
}
BI(prod) {
  UNUSED_BI;
  return fold(ev, &a[0], true, out, "prod()");
}

static bool minmax(Ev *ev, RV *a, uint32_t n, bool mx, RV *out, const char *fn) {
  RV *items = a;
  uint32_t cnt = n;
  if (n == 1) {
    if (!ox_rules_want_list(ev, &a[0], fn)) return false;
    items = a[0].u.items;
    cnt = a[0].n;
  }
  if (!cnt) return ox_rules_everr(ev, "%s of an empty list", fn);
  const RV *best = NULL;
  for (uint32_t i = 0; i < cnt; i++) {
    if (!ox_rules_is_num(&items[i]))
      return ox_rules_everr(ev, "%s needs numbers, got %s", fn, ox_rules_rv_kind_name(&items[i]));
    if (!best ||
        (mx ? ox_rules_num(&items[i]) > ox_rules_num(best) : ox_rules_num(&items[i]) < ox_rules_num(best)))
      best = &items[i];
  }
  *out = *best;
  out->src = NULL;
  return true;
}

BI(min) {
  (void)x;
  return minmax(ev, a, n, false, out, "min()");
}
BI(max) {
  (void)x;
  return minmax(ev, a, n, true, out, "max()");
}

BI(abs) {
  UNUSED_BI;
  if (a[0].k == V_INT) return *out = ox_rules_rv_int(a[0].u.i < 0 ? -a[0].u.i : a[0].u.i), true;
  if (a[0].k == V_FLOAT) return *out = (RV){.k = V_FLOAT, .u.f = fabs(a[0].u.f)}, true;
  return ox_rules_everr(ev, "abs() needs a number, got %s", ox_rules_rv_kind_name(&a[0]));
}

BI(range) {
  (void)x;
  int64_t lo = 0, hi = 0;
  if (n == 2) {
    if (!ox_rules_want_int(ev, &a[0], "range()", &lo) || !ox_rules_want_int(ev, &a[1], "range()", &hi))
      return false;
  } else if (!ox_rules_want_int(ev, &a[0], "range()", &hi)) {
    return false;
  }
  int64_t cnt = hi > lo ? hi - lo : 0;
  if (cnt > EV_MAX_LIST) return ox_rules_everr(ev, "range() of %lld items is too long", (long long)cnt);
  RV *it = ox_rules_rv_alloc(ev, (uint32_t)cnt);
  for (int64_t i = 0; i < cnt; i++)
    it[i] = ox_rules_rv_int(lo + i);
  *out = ox_rules_rv_list(it, (uint32_t)cnt);
  return true;
}

static bool allany(Ev *ev, const RV *l, bool all, RV *out, const char *fn) {
  if (!ox_rules_want_list(ev, l, fn)) return false;
  for (uint32_t i = 0; i < l->n; i++) {
    if (l->u.items[i].k != V_BOOL)
      return ox_rules_everr(ev, "%s needs booleans, item %u is %s", fn, i,
                            ox_rules_rv_kind_name(&l->u.items[i]));
    if (l->u.items[i].u.b != all) {
      if (all) snprintf(ev->evidence, sizeof ev->evidence, "item %u is False", i);
      *out = ox_rules_rv_bool(!all);
      return true;
    }
  }
  if (!all) snprintf(ev->evidence, sizeof ev->evidence, "no item of %u is True", l->n);
  *out = ox_rules_rv_bool(all);
  return true;
}

BI(all) {
  UNUSED_BI;
  return allany(ev, &a[0], true, out, "all()");
}
BI(any) {
  UNUSED_BI;
  return allany(ev, &a[0], false, out, "any()");
}

BI(all_equal) {
  UNUSED_BI;
  if (!ox_rules_want_list(ev, &a[0], "all_equal()")) return false;
  for (uint32_t i = 1; i < a[0].n; i++)
    if (!ox_rules_rv_eq(&a[0].u.items[0], &a[0].u.items[i])) {
      char b1[96], b2[96];
      snprintf(ev->evidence, sizeof ev->evidence, "item 0 is %s, item %u is %s",
               ox_rules_rv_text(ev, &a[0].u.items[0], b1, sizeof b1), i,
               ox_rules_rv_text(ev, &a[0].u.items[i], b2, sizeof b2));
      return *out = ox_rules_rv_bool(false), true;
    }
  *out = ox_rules_rv_bool(true);
  return true;
}

BI(consecutive) {
  UNUSED_BI;
  if (!ox_rules_want_list(ev, &a[0], "consecutive()")) return false;
  for (uint32_t i = 0; i < a[0].n; i++) {
    int64_t v = 0;
    if (!ox_rules_want_int(ev, &a[0].u.items[i], "consecutive()", &v)) return false;
    if (i && v != a[0].u.items[i - 1].u.i + 1) {
      char b[200];
      snprintf(ev->evidence, sizeof ev->evidence, "indices %s are not consecutive and increasing",
               ox_rules_rv_text(ev, &a[0], b, sizeof b));
      return *out = ox_rules_rv_bool(false), true;
    }
  }
  *out = ox_rules_rv_bool(true);
  return true;
}

BI(unique) {
  UNUSED_BI;
  if (!ox_rules_want_list(ev, &a[0], "unique()")) return false;
  RV *it = ox_rules_rv_alloc(ev, a[0].n);
  uint32_t k = 0;
  for (uint32_t i = 0; i < a[0].n; i++) {
    bool dup = false;
    for (uint32_t j = 0; j < k && !dup; j++)
      dup = ox_rules_rv_eq(&it[j], &a[0].u.items[i]);
    if (!ox_rules_tick(ev)) return false;
    if (!dup) it[k++] = a[0].u.items[i];
  }
  *out = ox_rules_rv_list(it, k);
  return true;
}

BI(concat) {
  UNUSED_BI;
  if (!ox_rules_want_list(ev, &a[0], "concat()")) return false;
  uint64_t total = 0;
  for (uint32_t i = 0; i < a[0].n; i++) {
    if (!ox_rules_want_list(ev, &a[0].u.items[i], "concat() item")) return false;
    total += a[0].u.items[i].n;
  }
  if (total > EV_MAX_LIST) return ox_rules_everr(ev, "concat(): list too long");
  RV *it = ox_rules_rv_alloc(ev, (uint32_t)total);
  uint32_t k = 0;
  for (uint32_t i = 0; i < a[0].n; i++)
    for (uint32_t j = 0; j < a[0].u.items[i].n; j++)
      it[k++] = a[0].u.items[i].u.items[j];
  *out = ox_rules_rv_list(it, k);
  return true;
}

BI(list) {
  UNUSED_BI;
  if (!ox_rules_want_list(ev, &a[0], "list()")) return false;
  *out = a[0];
  out->src = NULL; /* a list, even if it was a tuple */
  return true;
}

BI(norm_dim) {
  UNUSED_BI;
  int64_t d = 0, r = 0;
  if (!ox_rules_want_int(ev, &a[0], "norm_dim()", &d) || !ox_rules_want_int(ev, &a[1], "norm_dim()", &r))
    return false;
  int64_t v = d < 0 ? d + r : d;
  if (v < 0 || v >= (r ? r : 1))
    return ox_rules_everr(ev, "dim %lld is out of range for rank %lld", (long long)d, (long long)r);
  *out = ox_rules_rv_int(v);
  return true;
}

BI(shape) {
  UNUSED_BI;
  OxNodeId id;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "shape", &id) || !(t = meta_of(ev, id, true))) return false;
  RV *it = ox_rules_rv_alloc(ev, (uint32_t)t->rank);
  for (int32_t i = 0; i < t->rank; i++)
    it[i] = ox_rules_rv_int(t->shape[i].v);
  *out = ox_rules_rv_list(it, (uint32_t)t->rank);
  return true;
}

BI(stride) {
  UNUSED_BI;
  OxNodeId id;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "stride", &id) || !(t = meta_of(ev, id, false))) return false;
  if (!t->has_stride)
    return ox_rules_everr(ev, "stride(): %s has no strides in its meta", ox_rules_node_name(ev, id));
  RV *it = ox_rules_rv_alloc(ev, (uint32_t)t->rank);
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->stride[i].sym)
      return ox_rules_evfail(ev, OX_REASON_SYMBOLIC, "nx", ox_rules_node_name(ev, id), t->stride[i].sym);
    it[i] = ox_rules_rv_int(t->stride[i].v);
  }
  *out = ox_rules_rv_list(it, (uint32_t)t->rank);
  return true;
}

BI(rank) {
  UNUSED_BI;
  OxNodeId id;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "rank", &id) || !(t = meta_of(ev, id, false))) return false;
  *out = ox_rules_rv_int(t->rank);
  return true;
}

BI(size) {
  UNUSED_BI;
  OxNodeId id;
  int64_t d = 0;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "size", &id) || !ox_rules_want_int(ev, &a[1], "size()", &d) ||
      !(t = meta_of(ev, id, false)))
    return false;
  int64_t k = d < 0 ? d + t->rank : d;
  if (k < 0 || k >= t->rank)
    return ox_rules_everr(ev, "size(): dim %lld out of range for %s of rank %d", (long long)d,
                          ox_rules_node_name(ev, id), t->rank);
  if (t->shape[k].sym)
    return ox_rules_evfail(ev, OX_REASON_SYMBOLIC, "nx", ox_rules_node_name(ev, id), t->shape[k].sym);
  *out = ox_rules_rv_int(t->shape[k].v);
  return true;
}

BI(numel) {
  UNUSED_BI;
  OxNodeId id;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "numel", &id) || !(t = meta_of(ev, id, true))) return false;
  int64_t v = 1;
  for (int32_t i = 0; i < t->rank; i++)
    if (__builtin_mul_overflow(v, t->shape[i].v, &v)) return ox_rules_everr(ev, "numel() overflows");
  *out = ox_rules_rv_int(v);
  return true;
}

BI(dtype) {
  UNUSED_BI;
  OxNodeId id;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "dtype", &id) || !(t = meta_of(ev, id, false))) return false;
  *out = (RV){.k = V_DTYPE, .u.dt = t->dtype};
  return true;
}

BI(device) {
  UNUSED_BI;
  OxNodeId id;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "device", &id) || !(t = meta_of(ev, id, false))) return false;
  *out = ox_rules_rv_str(t->device ? t->device : "");
  return true;
}

BI(has_meta) {
  UNUSED_BI;
  if (a[0].k != V_NODE) return *out = ox_rules_rv_bool(false), true;
  const OxNode *nd = ox_graph_node(ev->g, a[0].u.node);
  const OxTensorMeta *t = nd && nd->meta.kind == OX_META_TENSOR ? nd->meta.t : NULL;
  bool ok = t && t->rank >= 0;
  for (int32_t i = 0; ok && i < t->rank; i++)
    ok = !t->shape[i].sym;
  if (!ok) snprintf(ev->evidence, sizeof ev->evidence, "%s has no static tensor meta", nd ? nd->name : "?");
  *out = ox_rules_rv_bool(ok);
  return true;
}

BI(is_float) {
  UNUSED_BI;
  if (a[0].k != V_DTYPE)
    return ox_rules_everr(ev, "is_float() needs a dtype, got %s", ox_rules_rv_kind_name(&a[0]));
  *out = ox_rules_rv_bool(ox_dtype_is_float(a[0].u.dt));
  return true;
}

BI(users) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "users", &id)) return false;
  *out = ox_rules_rv_int(ev->g->nodes[id].n_users);
  return true;
}

BI(user_list) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "user_list", &id)) return false;
  const OxNode *nd = &ev->g->nodes[id];
  RV *it = ox_rules_rv_alloc(ev, nd->n_users);
  for (uint32_t i = 0; i < nd->n_users; i++)
    it[i] = ox_rules_rv_node(nd->users[i]);
  *out = ox_rules_rv_list(it, nd->n_users);
  return true;
}

BI(no_other_users) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "no_other_users", &id)) return false;
  const OxNode *nd = &ev->g->nodes[id];
  for (uint32_t i = 0; i < nd->n_users; i++)
    if (!in_matched(ev, nd->users[i])) {
      snprintf(ev->evidence, sizeof ev->evidence, "%s is also used by %s, outside the match", nd->name,
               ox_rules_node_name(ev, nd->users[i]));
      return *out = ox_rules_rv_bool(false), true;
    }
  *out = ox_rules_rv_bool(true);
  return true;
}

BI(not_mutated) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "not_mutated", &id)) return false;
  const OxNode *nd = &ev->g->nodes[id];
  for (uint32_t i = 0; i < nd->n_users; i++)
    if (ox_pat_is_mutating(ev->g, nd->users[i])) {
      snprintf(ev->evidence, sizeof ev->evidence, "%s is mutated by %s", nd->name,
               ox_rules_node_name(ev, nd->users[i]));
      return *out = ox_rules_rv_bool(false), true;
    }
  *out = ox_rules_rv_bool(true);
  return true;
}

BI(is_mutating) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "is_mutating", &id)) return false;
  *out = ox_rules_rv_bool(ox_pat_is_mutating(ev->g, id));
  return true;
}

BI(target) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "target", &id)) return false;
  *out = ox_rules_rv_str(ev->g->nodes[id].target);
  return true;
}

BI(op) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "op", &id)) return false;
  OxOpId op = ox_op_of_node(ev->g, &ev->g->nodes[id], NULL);
  const OxOpInfo *in = op ? ox_op_info(op) : NULL;
  *out = ox_rules_rv_str(in ? in->name : "");
  return true;
}

BI(kind) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "kind", &id)) return false;
  *out = ox_rules_rv_str(ox_op_name((OxOp)ev->g->nodes[id].op));
  return true;
}

BI(n_args) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "n_args", &id)) return false;
  *out = ox_rules_rv_int(ev->g->nodes[id].args.n);
  return true;
}

BI(args) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "args", &id)) return false;
  *out = ox_rules_rv_from_value(ev, &ev->g->nodes[id].args, false);
  out->k = V_LIST;
  return true;
}

BI(kw_names) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "kw_names", &id)) return false;
  const OxValue *kw = &ev->g->nodes[id].kwargs;
  uint32_t nk = kw->kind == OX_V_DICT ? kw->n : 0;
  RV *it = ox_rules_rv_alloc(ev, nk);
  for (uint32_t i = 0; i < nk; i++)
    it[i] = ox_rules_rv_str(kw->keys[i]);
  *out = ox_rules_rv_list(it, nk);
  return true;
}

BI(kwarg) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "kwarg", &id)) return false;
  if (a[1].k != V_STR) return ox_rules_everr(ev, "kwarg() needs a keyword name");
  const OxValue *kw = &ev->g->nodes[id].kwargs;
  for (uint32_t i = 0; kw->kind == OX_V_DICT && i < kw->n; i++)
    if (strcmp(kw->keys[i], a[1].u.s) == 0)
      return *out = ox_rules_rv_from_value(ev, &kw->u.items[i], true), true;
  *out = (RV){.k = V_NONE};
  return true;
}

BI(arg) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "arg", &id)) return false;
  const OxNode *nd = &ev->g->nodes[id];
  OxOpArgs oa;
  char err[200];
  if (ox_op_normalize(ev->g, nd, &oa, err, sizeof err) != 0) return ox_rules_everr(ev, "arg(): %s", err);
  const OxOpInfo *info = ox_op_info(oa.op);
  int64_t k = -1;
  if (a[1].k == V_INT) {
    k = a[1].u.i;
  } else if (a[1].k == V_STR) {
    for (uint32_t s = 0; info && s < info->n_slots; s++)
      if (strcmp(info->slot_names[s], a[1].u.s) == 0) k = s;
    if (k < 0)
      return ox_rules_everr(ev, "arg(): %s has no argument '%s' (op %s)", nd->name, a[1].u.s,
                            info ? info->name : "?");
  } else {
    return ox_rules_everr(ev, "arg() takes an argument name or position");
  }
  if (k < 0 || k >= (int64_t)oa.n_slots)
    return ox_rules_everr(ev, "arg(): %s has no argument %lld", nd->name, (long long)k);
  /* a packed varargs slot lives in oa: do not keep a pointer to it */
  *out = ox_rules_rv_from_value(ev, oa.slot[k], oa.slot[k] != &oa.packed);
  return true;
}

BI(input) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "input", &id)) return false;
  const OxNode *nd = &ev->g->nodes[id];
  OxOpArgs oa;
  char err[200];
  if (ox_op_normalize(ev->g, nd, &oa, err, sizeof err) != 0) return ox_rules_everr(ev, "input(): %s", err);
  if (!oa.n_slots || oa.slot[0]->kind != OX_V_NODE)
    return ox_rules_everr(ev, "input(): the first argument of %s is not a node", nd->name);
  *out = ox_rules_rv_node(oa.slot[0]->u.node);
  return true;
}

BI(is_aten) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "is_aten", &id)) return false;
  *out = ox_rules_rv_bool(ox_rules_node_is_aten(ev->g, id));
  return true;
}

BI(sections) {
  UNUSED_BI;
  OxNodeId id;
  SplitInfo si;
  if (!want_node(ev, &a[0], "sections", &id) || !split_info(ev, id, &si, "sections")) return false;
  RV *it = ox_rules_rv_alloc(ev, si.n);
  for (uint32_t i = 0; i < si.n; i++)
    it[i] = ox_rules_rv_int(si.sec[i]);
  *out = ox_rules_rv_list(it, si.n);
  return true;
}

BI(split_dim) {
  UNUSED_BI;
  OxNodeId id;
  SplitInfo si;
  if (!want_node(ev, &a[0], "split_dim", &id) || !split_info(ev, id, &si, "split_dim")) return false;
  *out = ox_rules_rv_int(si.dim);
  return true;
}

BI(cat_dim) {
  UNUSED_BI;
  OxNodeId id;
  int64_t d = 0;
  if (!want_node(ev, &a[0], "cat_dim", &id) || !cat_dim_of(ev, id, &d)) return false;
  *out = ox_rules_rv_int(d);
  return true;
}

BI(is_node) {
  UNUSED_BI;
  (void)ev;
  *out = ox_rules_rv_bool(a[0].k == V_NODE);
  return true;
}
BI(is_int) {
  UNUSED_BI;
  (void)ev;
  *out = ox_rules_rv_bool(a[0].k == V_INT);
  return true;
}
BI(is_list) {
  UNUSED_BI;
  (void)ev;
  *out = ox_rules_rv_bool(a[0].k == V_LIST);
  return true;
}
BI(is_none) {
  UNUSED_BI;
  (void)ev;
  *out = ox_rules_rv_bool(a[0].k == V_NONE);
  return true;
}

static bool has_node(const RV *v) {
  if (v->k == V_NODE) return true;
  for (uint32_t i = 0; v->k == V_LIST && i < v->n; i++)
    if (has_node(&v->u.items[i])) return true;
  return false;
}

BI(is_const) {
  UNUSED_BI;
  (void)ev;
  *out = ox_rules_rv_bool(!has_node(&a[0]));
  return true;
}
BI(is_tuple) {
  UNUSED_BI;
  (void)ev;
  *out = ox_rules_rv_bool(a[0].k == V_LIST && a[0].src && a[0].src->kind == OX_V_TUPLE);
  return true;
}
BI(is_sym) {
  UNUSED_BI;
  (void)ev;
  *out = ox_rules_rv_bool(a[0].k == V_RAW && a[0].src && a[0].src->kind == OX_V_SYM);
  return true;
}

/* the op table can map the node's arguments onto its op's slots */
BI(well_formed) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "well_formed", &id)) return false;
  OxOpArgs oa;
  char err[200];
  bool ok = ox_op_normalize(ev->g, &ev->g->nodes[id], &oa, err, sizeof err) == 0;
  if (!ok) snprintf(ev->evidence, sizeof ev->evidence, "%s", err);
  *out = ox_rules_rv_bool(ok);
  return true;
}

/* x[..., start:end] along dim: pre-grad a getitem with slices, post-grad aten.slice.Tensor */
BI(slice_dim) {
  UNUSED_BI;
  OxNodeId src;
  int64_t d = 0, s0 = 0, s1 = 0;
  if (!want_node(ev, &a[0], "slice_dim", &src) || !ox_rules_want_int(ev, &a[1], "slice_dim() dim", &d) ||
      !ox_rules_want_int(ev, &a[2], "slice_dim() start", &s0) ||
      !ox_rules_want_int(ev, &a[3], "slice_dim() end", &s1))
    return false;
  if (d < 0 || d > 64)
    return ox_rules_everr(ev, "slice_dim(): dim %lld must be a normalized dim", (long long)d);
  OxNodeId id;
  if (ev->aten) {
    OxValue v[4] = {ox_value_node(src), ox_value_int(d), ox_value_int(s0), ox_value_int(s1)};
    id = ox_rules_create(ev, OX_OP_CALL_FUNCTION, ox_rules_aten_spelled(ev, "aten.slice.Tensor"),
                         ox_graph_value_seq(ev->g, OX_V_TUPLE, v, 4), ox_value_none());
  } else {
    OxValue sl[65];
    for (int64_t i = 0; i <= d; i++) {
      OxValue t[3] = {ox_value_none(), ox_value_none(), ox_value_none()};
      if (i == d) {
        t[0] = ox_value_int(s0);
        t[1] = ox_value_int(s1);
      }
      sl[i] = ox_graph_value_seq(ev->g, OX_V_SLICE, t, 3);
    }
    OxValue v[2] = {ox_value_node(src), ox_graph_value_seq(ev->g, OX_V_TUPLE, sl, (uint32_t)d + 1)};
    id = ox_rules_create(ev, OX_OP_CALL_FUNCTION, "operator.getitem",
                         ox_graph_value_seq(ev->g, OX_V_TUPLE, v, 2), ox_value_none());
  }
  if (!id) return false;
  *out = ox_rules_rv_node(id);
  return true;
}

const Builtin ox_rules_builtins[] = {
    {"len", 1, 1, "q", TY_INT, 0, false, false, bi_len},
    {"sum", 1, 1, "l", TY_INT, 0, false, true, bi_sum},
    {"prod", 1, 1, "l", TY_INT, 0, false, true, bi_prod},
    {"min", 1, 16, "x", TY_INT, 0, false, true, bi_min},
    {"max", 1, 16, "x", TY_INT, 0, false, true, bi_max},
    {"abs", 1, 1, "x", TY_INT, 0, false, true, bi_abs},
    {"range", 1, 2, "i", TY_LIST, TY_INT, false, false, bi_range},
    {"all", 1, 1, "l", TY_BOOL, 0, false, false, bi_all},
    {"any", 1, 1, "l", TY_BOOL, 0, false, false, bi_any},
    {"all_equal", 1, 1, "l", TY_BOOL, 0, false, false, bi_all_equal},
    {"consecutive", 1, 1, "l", TY_BOOL, 0, false, false, bi_consecutive},
    {"unique", 1, 1, "l", TY_LIST, 0, false, false, bi_unique},
    {"concat", 1, 1, "l", TY_LIST, 0, false, false, bi_concat},
    {"list", 1, 1, "l", TY_LIST, 0, false, false, bi_list},
    {"norm_dim", 2, 2, "i", TY_INT, 0, false, false, bi_norm_dim},
    {"shape", 1, 1, "n", TY_LIST, TY_INT, false, false, bi_shape},
    {"stride", 1, 1, "n", TY_LIST, TY_INT, false, false, bi_stride},
    {"rank", 1, 1, "n", TY_INT, 0, false, false, bi_rank},
    {"size", 2, 2, "ni", TY_INT, 0, false, false, bi_size},
    {"numel", 1, 1, "n", TY_INT, 0, false, false, bi_numel},
    {"dtype", 1, 1, "n", TY_DTYPE, 0, false, false, bi_dtype},
    {"device", 1, 1, "n", TY_STR, 0, false, false, bi_device},
    {"has_meta", 1, 1, "a", TY_BOOL, 0, false, false, bi_has_meta},
    {"is_float", 1, 1, "d", TY_BOOL, 0, false, false, bi_is_float},
    {"users", 1, 1, "n", TY_INT, 0, false, false, bi_users},
    {"user_list", 1, 1, "n", TY_LIST, TY_NODE, false, false, bi_user_list},
    {"no_other_users", 1, 1, "n", TY_BOOL, 0, false, false, bi_no_other_users},
    {"not_mutated", 1, 1, "n", TY_BOOL, 0, false, false, bi_not_mutated},
    {"is_mutating", 1, 1, "n", TY_BOOL, 0, false, false, bi_is_mutating},
    {"target", 1, 1, "n", TY_STR, 0, false, false, bi_target},
    {"op", 1, 1, "n", TY_STR, 0, false, false, bi_op},
    {"kind", 1, 1, "n", TY_STR, 0, false, false, bi_kind},
    {"n_args", 1, 1, "n", TY_INT, 0, false, false, bi_n_args},
    {"args", 1, 1, "n", TY_LIST, 0, false, false, bi_args},
    {"kw_names", 1, 1, "n", TY_LIST, TY_STR, false, false, bi_kw_names},
    {"kwarg", 2, 2, "ns", TY_ANY, 0, false, false, bi_kwarg},
    {"arg", 2, 2, "nk", TY_ANY, 0, false, false, bi_arg},
    {"input", 1, 1, "n", TY_NODE, 0, false, false, bi_input},
    {"is_aten", 1, 1, "n", TY_BOOL, 0, false, false, bi_is_aten},
    {"sections", 1, 1, "n", TY_LIST, TY_INT, false, false, bi_sections},
    {"split_dim", 1, 1, "n", TY_INT, 0, false, false, bi_split_dim},
    {"cat_dim", 1, 1, "n", TY_INT, 0, false, false, bi_cat_dim},
    {"is_node", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_node},
    {"is_int", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_int},
    {"is_list", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_list},
    {"is_none", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_none},
    {"is_const", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_const},
    {"is_tuple", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_tuple},
    {"is_sym", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_sym},
    {"well_formed", 1, 1, "n", TY_BOOL, 0, false, false, bi_well_formed},
    {"slice_dim", 4, 4, "niii", TY_NODE, 0, true, false, bi_slice_dim},
};

int ox_rules_builtin_find(const char *name) {
  for (size_t i = 0; i < sizeof ox_rules_builtins / sizeof ox_rules_builtins[0]; i++)
    if (strcmp(ox_rules_builtins[i].name, name) == 0) return (int)i;
  return -1;
}
