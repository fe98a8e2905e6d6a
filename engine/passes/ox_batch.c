/* ox_batch.c - the batch ("horizontal") fusion engine: every batch rule of spec 2.3, run by
 * the search of spec 3.1-3.3.
 *
 * One rule = one OxBatchRule (data): matched op(s) and spelling levels, guards, key fields,
 * replacement template. apply sweeps roots from the last node to the first; from each root
 * (getitems excluded) a BFS walks producers up to max_fuse_search_depth hops, stopping at
 * matching nodes (a match is a frontier), and groups the matches by key in insertion order.
 * Each group of at least min_fuse_set_size nodes is split into greedy independent subsets;
 * every subset is fused as ONE step of the step protocol and counts once under the rule's
 * (PyTorch) name.
 *
 * Invariants:
 *  - the graph's list order stays topological after every fuse, and e->ord.pos[] is a
 *    topological numbering of all live nodes at all times. A fuse makes every user of a
 *    member depend on every input of every member; when some input sits after some user,
 *    the upstream closure of those inputs that lies after the first user (set B) moves,
 *    in order, to just before that user, and the new nodes follow (a Pearce-Kelly style
 *    local reorder: B cannot contain a downstream node because members are independent).
 *    The sweep's cursor is downstream of every member, hence never in B and never moved.
 *  - ancestor searches never descend below the smallest candidate position, so the
 *    greedy costs the region between the candidates, not the whole graph (upstream's
 *    unbounded DFS is O(k^2 (V+E)) per group).
 *  - rejection records are deduplicated per (rule, code, nodes): the BFS meets the same
 *    node from many roots, the trace stays proportional to the graph.
 *  - the search's input lists (in_ids) are the graph's inputs of every listed node after every
 *    step (mark_dirty lists again what a step rewired or created), so the next batch pass of
 *    the run may take them over (OxBatchShare: the driver forgets them before any other pass).
 * Requires: ctx->g toposorted (the driver sorts before each pass). Preserves: acyclicity,
 * topological list order, meta on every new node (inferred, device carried over).
 */
#include "passes/ox_batch.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"
#include "ops/ox_shape.h"

/* ------------------------------------------------------------------ node-indexed scratch */

typedef struct Stamp {
  uint32_t *v;
  uint32_t epoch;
} Stamp;

typedef struct Scratch {
  uint32_t cap;
  Stamp visit, inlist, insub, indeps, cidx, tmp, tmpb, path;
  OxNodeId *owner; /* indeps: the chosen node whose ancestor set holds the node */
  uint32_t *cidx_v; /* candidate index of a node (valid when cidx stamp matches) */
  OxNodeId *par;    /* path search: the node we came from */
  OxNodeId *stack;
  uint32_t n_stack, cap_stack;
} Scratch;

static void stamp_grow(Stamp *s, uint32_t old, uint32_t cap) {
  s->v = ox_xrealloc(s->v, cap * sizeof *s->v);
  memset(s->v + old, 0, (cap - old) * sizeof *s->v);
}

static uint32_t stamp_new(Stamp *s, uint32_t cap) {
  if (++s->epoch == 0) { /* wrapped: forget every old mark */
    memset(s->v, 0, cap * sizeof *s->v);
    s->epoch = 1;
  }
  return s->epoch;
}

static inline bool stamp_has(const Stamp *s, OxNodeId id) { return s->v[id] == s->epoch; }
static inline void stamp_set(Stamp *s, OxNodeId id) { s->v[id] = s->epoch; }

static void scratch_grow(Scratch *s, uint32_t need) {
  if (need <= s->cap) return;
  uint32_t cap = s->cap ? s->cap : 64;
  while (cap < need) cap *= 2;
  Stamp *all[] = {&s->visit, &s->inlist, &s->insub, &s->indeps, &s->cidx, &s->tmp, &s->tmpb, &s->path};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) stamp_grow(all[i], s->cap, cap);
  s->owner = ox_xrealloc(s->owner, cap * sizeof *s->owner);
  s->cidx_v = ox_xrealloc(s->cidx_v, cap * sizeof *s->cidx_v);
  s->par = ox_xrealloc(s->par, cap * sizeof *s->par);
  s->cap = cap;
}

static void scratch_free(Scratch *s) {
  Stamp *all[] = {&s->visit, &s->inlist, &s->insub, &s->indeps, &s->cidx, &s->tmp, &s->tmpb, &s->path};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]->v);
  free(s->owner);
  free(s->cidx_v);
  free(s->par);
  free(s->stack);
  memset(s, 0, sizeof *s);
}

static void push_id(OxNodeId **a, uint32_t *n, uint32_t *cap, OxNodeId id) {
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 16;
    *a = ox_xrealloc(*a, *cap * sizeof **a);
  }
  (*a)[(*n)++] = id;
}

/* Calls fn on every node reference of n's args and kwargs (duplicates included). */
static void for_inputs(const OxGraph *g, OxNodeId n, OxValueNodeFn fn, void *ud) {
  ox_value_foreach_node(&g->nodes[n].args, fn, ud);
  ox_value_foreach_node(&g->nodes[n].kwargs, fn, ud);
}

/* ------------------------------------------------------------------ positions */

static void order_grow(OxBatchOrder *o, uint32_t need) {
  if (need <= o->cap) return;
  uint32_t cap = o->cap ? o->cap : 64;
  while (cap < need) cap *= 2;
  o->pos = ox_xrealloc(o->pos, cap * sizeof *o->pos);
  for (uint32_t i = o->cap; i < cap; i++) o->pos[i] = 0.0;
  o->cap = cap;
}

void ox_batch_order_init(OxBatchOrder *o, const OxGraph *g) {
  order_grow(o, g->n_nodes);
  double k = 1.0;
  OX_GRAPH_FOREACH(g, id) o->pos[id] = k++;
}

void ox_batch_order_free(OxBatchOrder *o) {
  free(o->pos);
  o->pos = NULL;
  o->cap = 0;
}

/* ------------------------------------------------------------------ ancestor path */

typedef struct PathCtx {
  Scratch *s;
  const double *pos;
  double floor;
  OxNodeId from;
} PathCtx;

static void path_cb(OxNodeId x, void *ud) {
  PathCtx *p = ud;
  Scratch *s = p->s;
  if (stamp_has(&s->path, x) || p->pos[x] < p->floor) return;
  stamp_set(&s->path, x);
  s->par[x] = p->from;
  push_id(&s->stack, &s->n_stack, &s->cap_stack, x);
}

/* BFS upstream from b to a (nodes below pos[a] cannot lead to a); par[] walks back to b. */
static char *path_with(Scratch *s, OxGraph *g, const OxBatchOrder *o, OxNodeId a, OxNodeId b) {
  scratch_grow(s, g->n_nodes);
  stamp_new(&s->path, s->cap);
  s->n_stack = 0;
  stamp_set(&s->path, b);
  s->par[b] = 0;
  push_id(&s->stack, &s->n_stack, &s->cap_stack, b);
  PathCtx p = {s, o->pos, o->pos[a], 0};
  bool found = false;
  for (uint32_t head = 0; head < s->n_stack && !found; head++) {
    OxNodeId m = s->stack[head];
    if (m == a) {
      found = true;
      break;
    }
    p.from = m;
    for_inputs(g, m, path_cb, &p);
  }
  if (!found && !stamp_has(&s->path, a)) return NULL;
  /* a -> par[a] -> ... -> b */
  OxNodeId chain[64];
  uint32_t n = 0, total = 0;
  for (OxNodeId x = a; x; x = s->par[x]) {
    if (n < 64) chain[n++] = x;
    total++;
  }
  OxBuf buf;
  ox_buf_init(&buf);
  if (total <= 8) {
    for (uint32_t i = 0; i < n; i++) {
      if (i) ox_buf_puts(&buf, " → ");
      ox_buf_puts(&buf, g->nodes[chain[i]].name);
    }
  } else {
    /* keep three nodes at each end */
    OxNodeId tail[3];
    uint32_t k = 0;
    for (OxNodeId x = a; x; x = s->par[x]) {
      tail[k % 3] = x;
      k++;
    }
    for (uint32_t i = 0; i < 3; i++) {
      if (i) ox_buf_puts(&buf, " → ");
      ox_buf_puts(&buf, g->nodes[chain[i]].name);
    }
    ox_buf_printf(&buf, " → … (%u more) …", total - 6);
    for (uint32_t i = 0; i < 3; i++) {
      ox_buf_puts(&buf, " → ");
      ox_buf_puts(&buf, g->nodes[tail[(k + i) % 3]].name);
    }
  }
  return buf.data;
}

char *ox_batch_path(OxGraph *g, const OxBatchOrder *order, OxNodeId a, OxNodeId b) {
  Scratch s;
  memset(&s, 0, sizeof s);
  char *r = path_with(&s, g, order, a, b);
  scratch_free(&s);
  return r;
}

/* ------------------------------------------------------------------ greedy subsets */

typedef struct DepList {
  OxNodeId *ids;
  uint32_t n, cap;
  bool valid;
} DepList;

struct OxBatchGreedy {
  OxGraph *g;
  const OxBatchOrder *ord;
  Scratch *s;
  bool own_scratch;
  OxBatchGreedyHooks hooks;
  int min, max;
  OxNodeId *cands;
  uint32_t n_cands;
  uint32_t cidx_epoch;
  DepList *cache; /* per candidate index */
  OxNodeId *list, *next, *subset;
  uint32_t n_list, n_next, n_subset;
  DepList cur;
  double floor; /* smallest position among the round's candidates */
};

static void greedy_init(OxBatchGreedy *gr, OxGraph *g, const OxBatchOrder *ord, Scratch *s, const OxNodeId *cands,
                        uint32_t n, int min, int max, const OxBatchGreedyHooks *hooks) {
  memset(gr, 0, sizeof *gr);
  gr->g = g;
  gr->ord = ord;
  gr->s = s;
  gr->min = min;
  gr->max = max > 0 ? max : 1;
  if (hooks) gr->hooks = *hooks;
  scratch_grow(s, g->n_nodes);
  gr->cands = ox_xcalloc(n ? n : 1, sizeof *gr->cands);
  gr->list = ox_xcalloc(n ? n : 1, sizeof *gr->list);
  gr->next = ox_xcalloc(n ? n : 1, sizeof *gr->next);
  gr->subset = ox_xcalloc(n ? n : 1, sizeof *gr->subset);
  gr->cache = ox_xcalloc(n ? n : 1, sizeof *gr->cache);
  gr->cidx_epoch = stamp_new(&s->cidx, s->cap);
  for (uint32_t i = 0; i < n; i++) { /* ordered set: first occurrence wins */
    if (stamp_has(&s->cidx, cands[i])) continue;
    stamp_set(&s->cidx, cands[i]);
    s->cidx_v[cands[i]] = gr->n_cands;
    gr->cands[gr->n_cands++] = cands[i];
  }
  memcpy(gr->list, gr->cands, gr->n_cands * sizeof *gr->list);
  gr->n_list = gr->n_cands;
}

static void greedy_fini(OxBatchGreedy *gr) {
  for (uint32_t i = 0; i < gr->n_cands; i++) free(gr->cache[i].ids);
  free(gr->cache);
  free(gr->cands);
  free(gr->list);
  free(gr->next);
  free(gr->subset);
  free(gr->cur.ids);
}

static DepList *cache_of(OxBatchGreedy *gr, OxNodeId id) {
  return gr->s->cidx.v[id] == gr->cidx_epoch ? &gr->cache[gr->s->cidx_v[id]] : NULL;
}

typedef struct AncCtx {
  OxBatchGreedy *gr;
  DepList *deps;
} AncCtx;

static void anc_cb(OxNodeId x, void *ud) {
  AncCtx *a = ud;
  Scratch *s = a->gr->s;
  if (stamp_has(&s->visit, x)) return;
  stamp_set(&s->visit, x);
  if (stamp_has(&s->inlist, x)) push_id(&a->deps->ids, &a->deps->n, &a->deps->cap, x);
  /* a node at or below the smallest candidate position has no candidate above it */
  if (a->gr->ord->pos[x] > a->gr->floor) push_id(&s->stack, &s->n_stack, &s->cap_stack, x);
}

/* Ancestors of n among the round's candidates (upstream's ancestors_in, bounded). */
static void ancestors_in(OxBatchGreedy *gr, OxNodeId n, DepList *out) {
  Scratch *s = gr->s;
  out->n = 0;
  stamp_new(&s->visit, s->cap);
  s->n_stack = 0;
  stamp_set(&s->visit, n);
  push_id(&s->stack, &s->n_stack, &s->cap_stack, n);
  AncCtx a = {gr, out};
  while (s->n_stack) {
    OxNodeId m = s->stack[--s->n_stack];
    for_inputs(gr->g, m, anc_cb, &a);
  }
}

static void deps_move(DepList *dst, DepList *src) {
  free(dst->ids);
  *dst = *src;
  dst->valid = true;
  memset(src, 0, sizeof *src);
}

static bool greedy_next(OxBatchGreedy *gr, const OxNodeId **subset, uint32_t *n) {
  Scratch *s = gr->s;
  while (gr->n_list) {
    /* the caller may have rewritten the graph since the last yield */
    scratch_grow(s, gr->g->n_nodes);
    const double *pos = gr->ord->pos;
    stamp_new(&s->inlist, s->cap);
    gr->floor = 0;
    for (uint32_t i = 0; i < gr->n_list; i++) {
      stamp_set(&s->inlist, gr->list[i]);
      if (i == 0 || pos[gr->list[i]] < gr->floor) gr->floor = pos[gr->list[i]];
    }
    stamp_new(&s->insub, s->cap);
    stamp_new(&s->indeps, s->cap);
    gr->n_subset = gr->n_next = 0;
    for (uint32_t i = 0; i < gr->n_list; i++) {
      OxNodeId c = gr->list[i];
      bool is_dep = stamp_has(&s->indeps, c);
      if ((int)gr->n_subset >= gr->max || is_dep) {
        gr->next[gr->n_next++] = c;
        if (is_dep && gr->hooks.on_ancestor) gr->hooks.on_ancestor(gr->hooks.ud, c, s->owner[c]);
        continue;
      }
      DepList *cached = cache_of(gr, c);
      DepList *deps = &gr->cur;
      if (cached && cached->valid) {
        deps_move(&gr->cur, cached);
        cached->valid = false;
        cached->ids = NULL;
        cached->n = cached->cap = 0;
      } else {
        ancestors_in(gr, c, &gr->cur);
      }
      OxNodeId conflict = 0;
      for (uint32_t k = 0; k < deps->n && !conflict; k++)
        if (stamp_has(&s->insub, deps->ids[k])) conflict = deps->ids[k];
      if (!conflict) {
        gr->subset[gr->n_subset++] = c;
        stamp_set(&s->insub, c);
        for (uint32_t k = 0; k < deps->n; k++) {
          OxNodeId d = deps->ids[k];
          if (!stamp_has(&s->indeps, d)) {
            stamp_set(&s->indeps, d);
            s->owner[d] = c;
          }
        }
      } else {
        gr->next[gr->n_next++] = c;
        if (cached) deps_move(cached, &gr->cur);
        if (gr->hooks.on_ancestor) gr->hooks.on_ancestor(gr->hooks.ud, conflict, c);
      }
    }
    /* list := next */
    OxNodeId *t = gr->list;
    gr->list = gr->next;
    gr->next = t;
    gr->n_list = gr->n_next;
    if ((int)gr->n_subset >= gr->min && gr->n_subset > 0) {
      /* the caller fuses this subset now: ancestor sets that mention it go stale */
      for (uint32_t i = 0; i < gr->n_list; i++) {
        DepList *d = cache_of(gr, gr->list[i]);
        if (!d || !d->valid) continue;
        for (uint32_t k = 0; k < d->n; k++)
          if (stamp_has(&s->insub, d->ids[k])) {
            d->valid = false;
            break;
          }
      }
      *subset = gr->subset;
      *n = gr->n_subset;
      return true;
    }
    if (gr->n_subset && gr->hooks.on_dropped) gr->hooks.on_dropped(gr->hooks.ud, gr->subset, gr->n_subset);
  }
  return false;
}

OxBatchGreedy *ox_batch_greedy_new(OxGraph *g, const OxBatchOrder *order, const OxNodeId *cands, uint32_t n,
                                   int min, int max, const OxBatchGreedyHooks *hooks) {
  OxBatchGreedy *gr = ox_xcalloc(1, sizeof *gr);
  Scratch *s = ox_xcalloc(1, sizeof *s);
  greedy_init(gr, g, order, s, cands, n, min, max, hooks);
  gr->own_scratch = true;
  return gr;
}

bool ox_batch_greedy_next(OxBatchGreedy *gr, const OxNodeId **subset, uint32_t *n) {
  return greedy_next(gr, subset, n);
}

void ox_batch_greedy_free(OxBatchGreedy *gr) {
  if (!gr) return;
  greedy_fini(gr);
  if (gr->own_scratch) {
    scratch_free(gr->s);
    free(gr->s);
  }
  free(gr);
}

/* ------------------------------------------------------------------ the rules (data) */

#define LV(l) (1u << OX_LEVEL_##l)
#define PRE_LEVELS (LV(TORCH) | LV(METHOD) | LV(MODULE))

static const OxBatchRule rules[] = {
  /* pre-grad */
  {"batch_linear", OX_PHASE_PRE, OX_OPID_LINEAR, OX_OPID_NONE, LV(TORCH), OX_BT_LINEAR, 0, OX_BK_USERS,
   OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, NULL, {NULL},
   "linears with equal input/weight shapes -> stack, bmm/baddbmm, unbind"},
  {"batch_linear_lhs", OX_PHASE_PRE, OX_OPID_LINEAR, OX_OPID_NONE, LV(TORCH), OX_BT_LINEAR_LHS, 0, 0,
   OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, NULL, {NULL},
   "linears sharing one input -> cat weights, mm/addmm, split by output widths"},
  {"batch_layernorm", OX_PHASE_PRE, OX_OPID_LAYER_NORM, OX_OPID_NONE, LV(TORCH), OX_BT_LAYER_NORM, 0,
   OX_BK_SLOTS | OX_BK_USERS, OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, NULL, {NULL},
   "layer_norms with equal shapes and eps -> stack, one layer_norm, mul/add stacked affine, unbind"},
  {"batch_tanh", OX_PHASE_PRE, OX_OPID_TANH, OX_OPID_NONE, PRE_LEVELS, OX_BT_STACK_UNBIND, 1,
   OX_BK_SLOTS | OX_BK_PARENT, OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, "torch.tanh", {NULL},
   "tanh of equal shapes -> stack, tanh, unbind"},
  {"batch_sigmoid", OX_PHASE_PRE, OX_OPID_SIGMOID, OX_OPID_NONE, PRE_LEVELS, OX_BT_STACK_UNBIND, 1,
   OX_BK_SLOTS | OX_BK_PARENT, OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, "torch.sigmoid", {NULL},
   "sigmoid of equal shapes -> stack, sigmoid, unbind"},
  {"batch_relu", OX_PHASE_PRE, OX_OPID_RELU, OX_OPID_NONE, PRE_LEVELS, OX_BT_STACK_UNBIND, 1,
   OX_BK_SLOTS | OX_BK_PARENT, OX_BG_NOT_INPLACE | OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, "torch.relu",
   {NULL}, "relu of equal shapes -> stack, relu, unbind"},
  {"batch_detach", OX_PHASE_PRE, OX_OPID_DETACH, OX_OPID_NONE, PRE_LEVELS, OX_BT_STACK_UNBIND, 1,
   OX_BK_SLOTS | OX_BK_FIRST_USER, OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, "torch.detach", {NULL},
   "detach of equal shapes -> stack, detach, unbind"},
  {"batch_nan_to_num", OX_PHASE_PRE, OX_OPID_NAN_TO_NUM, OX_OPID_NONE, PRE_LEVELS, OX_BT_STACK_UNBIND, 1,
   OX_BK_SLOTS | OX_BK_FIRST_USER, OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, "torch.nan_to_num",
   {"nan", "posinf", "neginf", NULL}, "nan_to_num with equal shapes and arguments -> stack, nan_to_num, unbind"},
  {"batch_clamp", OX_PHASE_PRE, OX_OPID_CLAMP, OX_OPID_NONE, PRE_LEVELS, OX_BT_STACK_UNBIND, 1,
   OX_BK_SLOTS | OX_BK_FIRST_USER, OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, "torch.clamp",
   {"min", "max", NULL}, "clamp with equal shapes and bounds -> stack, clamp, unbind"},
  {"batch_dropout", OX_PHASE_PRE, OX_OPID_DROPOUT, OX_OPID_NONE, PRE_LEVELS, OX_BT_STACK_UNBIND, 1,
   OX_BK_SLOTS | OX_BK_FIRST_USER, OX_BG_NOT_INPLACE | OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED,
   "torch.nn.functional.dropout", {"p", "training", NULL},
   "dropout with equal shapes and p -> stack, dropout, unbind (equal in distribution only)"},
  /* post-grad */
  {"batch_linear_post_grad", OX_PHASE_POST, OX_OPID_MM, OX_OPID_ADDMM, LV(ATEN), OX_BT_LINEAR_POST, 0, OX_BK_USERS,
   OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, NULL, {NULL},
   "mm/addmm with equal m, k, n -> unsqueeze+cat, bmm, select (+ add bias)"},
  {"batch_aten_add", OX_PHASE_POST, OX_OPID_ADD, OX_OPID_NONE, LV(ATEN), OX_BT_CAT_SELECT, 2,
   OX_BK_SLOTS | OX_BK_SEL_PARENT, OX_BG_EQUAL_SHAPES | OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED,
   "aten.add.Tensor", {"alpha", NULL}, "add.Tensor of equal shapes -> unsqueeze+cat both operands, add, select"},
  {"batch_aten_sub", OX_PHASE_POST, OX_OPID_SUB, OX_OPID_NONE, LV(ATEN), OX_BT_CAT_SELECT, 2,
   OX_BK_SLOTS | OX_BK_SEL_PARENT, OX_BG_EQUAL_SHAPES | OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED,
   "aten.sub.Tensor", {"alpha", NULL}, "sub.Tensor of equal shapes -> unsqueeze+cat both operands, sub, select"},
  {"batch_aten_mul", OX_PHASE_POST, OX_OPID_MUL, OX_OPID_NONE, LV(ATEN), OX_BT_CAT_SELECT, 2,
   OX_BK_SLOTS | OX_BK_SEL_PARENT, OX_BG_EQUAL_SHAPES | OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED,
   "aten.mul.Tensor", {NULL}, "mul.Tensor of equal shapes -> unsqueeze+cat both operands, mul, select"},
  {"batch_aten_div", OX_PHASE_POST, OX_OPID_DIV, OX_OPID_NONE, LV(ATEN), OX_BT_CAT_SELECT, 2,
   OX_BK_SLOTS | OX_BK_SEL_PARENT, OX_BG_EQUAL_SHAPES | OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED,
   "aten.div.Tensor", {"rounding_mode", NULL},
   "div.Tensor of equal shapes -> unsqueeze+cat both operands, div, select"},
  {"batch_aten_tanh", OX_PHASE_POST, OX_OPID_TANH, OX_OPID_NONE, LV(ATEN), OX_BT_CAT_SELECT, 1,
   OX_BK_SLOTS | OX_BK_PARENT, OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, "aten.tanh.default", {NULL},
   "tanh of equal shapes -> unsqueeze+cat, tanh, select"},
  {"batch_aten_sigmoid", OX_PHASE_POST, OX_OPID_SIGMOID, OX_OPID_NONE, LV(ATEN), OX_BT_CAT_SELECT, 1,
   OX_BK_SLOTS | OX_BK_PARENT, OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, "aten.sigmoid.default", {NULL},
   "sigmoid of equal shapes -> unsqueeze+cat, sigmoid, select"},
  {"batch_aten_relu", OX_PHASE_POST, OX_OPID_RELU, OX_OPID_NONE, LV(ATEN), OX_BT_CAT_SELECT, 1,
   OX_BK_SLOTS | OX_BK_PARENT, OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, "aten.relu.default", {NULL},
   "relu of equal shapes -> unsqueeze+cat, relu, select"},
  {"group_linear", OX_PHASE_POST, OX_OPID_MM, OX_OPID_ADDMM, LV(ATEN), OX_BT_GROUP_LINEAR, 0, 0,
   OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED, NULL, {NULL},
   "mm/addmm of any shapes (even dims, <= max_fuse_tensor_size_group_linear) -> one optimus.grouped_mm"},
};

const OxBatchRule *ox_batch_rules(size_t *count) {
  *count = sizeof rules / sizeof rules[0];
  return rules;
}

const OxBatchRule *ox_batch_rule_find(const char *name) {
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (strcmp(rules[i].name, name) == 0) return &rules[i];
  return NULL;
}

/* ------------------------------------------------------------------ engine state */

#define KEY_UNKNOWN (-2)
#define KEY_NONE (-1)

typedef struct Group {
  int32_t key;
  OxNodeId *ids;
  uint32_t n, cap;
} Group;

/* Candidates' metas are mostly the graph's shared copies (a handful of distinct shapes), so their
 * key text is cached by pointer for the pass: the graph's arena frees no meta while it runs. */
enum { META_TEXT_CACHE = 64 };
typedef struct MetaText {
  const OxTensorMeta *t;
  char s[72];
} MetaText;

enum { IN_GRAPH = UINT16_MAX };
typedef struct NodeState {
  uint32_t bfs;      /* == bfs_epoch: queued by the current search */
  int32_t key;       /* KEY_UNKNOWN, KEY_NONE or key id (cached until the neighbourhood changes) */
  uint32_t in_start; /* inputs snapshot */
  uint16_t in_cnt;   /* or IN_GRAPH */
  uint8_t fused;
  uint8_t near;      /* root pruning: a lower bound on the hops from the node, through its inputs,
                        to the nearest node of the rule's op (NEAR_FAR: none in reach; 0: unknown) */
} NodeState;

typedef struct Eng {
  OxPassCtx *c;
  OxGraph *g;
  const OxBatchRule *r;
  const OxPassOptions *o;
  bool rec; /* record rejections */
  OxBatchOrder ord;
  Scratch s;
  /* per node: what one BFS visit reads, in one 16-byte slot (one cache miss, not five) */
  uint32_t cap;
  NodeState *ns;
  uint32_t bfs_epoch;
  uint32_t dirty_serial; /* mark_dirty calls: a node too wide for the list is tried once per step */
  /* the inputs of every node when the pass began, in the BFS's visit order (args then kwargs,
   * depth first, duplicates kept): in_ids[ns.in_start .. + ns.in_cnt]; a node a step rewired or
   * created is listed again at the end (mark_dirty). A node with more inputs than in_cnt holds
   * has in_cnt IN_GRAPH: read from the graph. */
  OxNodeId *in_ids;
  uint32_t n_in, cap_in;
  bool lists_kept; /* in_ids and the ns lists came from the run's previous batch pass, up to date */
  /* keys */
  char **keys;
  uint32_t n_keys, cap_keys;
  int32_t *ktab; /* open addressing: key ids, -1 empty */
  uint32_t ktab_cap;
  uint32_t *grp_stamp, *grp_idx; /* per key: group of the current root */
  uint32_t root_serial;
  /* groups of the current root */
  Group *groups;
  uint32_t n_groups, cap_groups;
  /* BFS queue */
  OxNodeId *q;
  uint8_t *qd;
  uint32_t cap_q;
  /* rejection dedupe (open addressing of 64-bit hashes, 0 = empty) */
  uint64_t *seen;
  uint32_t n_seen, cap_seen;
  /* fuse in progress */
  OxNodeId anchor;     /* new nodes go right before it (0: at the end) */
  uint32_t first_new;  /* ids >= first_new were created by this fuse */
  bool emit_ok;
  char emit_err[512];
  OxNodeId *moved;     /* B, in order */
  double *moved_pos;
  uint32_t n_moved, cap_moved;
  OxNodeId *aw;        /* inputs (A) then users (W) of the members, for cache invalidation */
  uint32_t n_aw, cap_aw;
  OxNodeId root;
  MetaText meta_text[META_TEXT_CACHE];
} Eng;

static void eng_grow(Eng *e) {
  uint32_t need = e->g->n_nodes;
  scratch_grow(&e->s, need);
  order_grow(&e->ord, need);
  if (need <= e->cap) return;
  uint32_t cap = e->cap ? e->cap : 64;
  while (cap < need) cap *= 2;
  e->ns = ox_xrealloc(e->ns, cap * sizeof *e->ns);
  for (uint32_t i = e->cap; i < cap; i++) /* nodes created during the pass: near unknown, never pruned */
    e->ns[i] = (NodeState){.bfs = 0, .key = KEY_UNKNOWN, .in_start = 0, .in_cnt = IN_GRAPH, .fused = 0, .near = 0};
  e->cap = cap;
}

static void eng_free(Eng *e) {
  ox_batch_order_free(&e->ord);
  scratch_free(&e->s);
  free(e->ns);
  free(e->in_ids);
  for (uint32_t i = 0; i < e->n_keys; i++) free(e->keys[i]);
  free(e->keys);
  free(e->ktab);
  free(e->grp_stamp);
  free(e->grp_idx);
  for (uint32_t i = 0; i < e->cap_groups; i++) free(e->groups[i].ids);
  free(e->groups);
  free(e->q);
  free(e->qd);
  free(e->seen);
  free(e->moved);
  free(e->moved_pos);
  free(e->aw);
}

struct OxBatchShare {
  Eng *e; /* NULL: nothing kept */
};

OxBatchShare *ox_batch_share_new(void) { return ox_xcalloc(1, sizeof(OxBatchShare)); }

void ox_batch_share_forget(OxBatchShare *share) {
  if (!share || !share->e) return;
  eng_free(share->e);
  free(share->e);
  share->e = NULL;
}

void ox_batch_share_free(OxBatchShare *share) {
  ox_batch_share_forget(share);
  free(share);
}

/* A kept engine made ready for another rule: what belongs to a pass (keys, groups, rejection
 * dedupe, the step in progress, each node's key, fused flag and pruning bound) is reset; the
 * arrays, epochs and the input lists stay. */
static void eng_reset_for_pass(Eng *e) {
  for (uint32_t i = 0; i < e->n_keys; i++) free(e->keys[i]);
  e->n_keys = 0;
  for (uint32_t i = 0; i < e->ktab_cap; i++) e->ktab[i] = -1;
  e->n_groups = 0;
  if (e->seen) memset(e->seen, 0, e->cap_seen * sizeof *e->seen);
  e->n_seen = 0;
  e->anchor = 0;
  e->first_new = 0;
  e->emit_ok = true;
  e->emit_err[0] = 0;
  e->n_moved = 0;
  e->n_aw = 0;
  e->root = 0;
  memset(e->meta_text, 0, sizeof e->meta_text);
  for (uint32_t i = 0; i < e->cap; i++) {
    e->ns[i].key = KEY_UNKNOWN;
    e->ns[i].fused = 0;
    e->ns[i].near = 0;
  }
}

static int32_t key_intern(Eng *e, const char *s) {
  uint64_t h = ox_hash_bytes(s, strlen(s));
  if (e->n_keys * 2 + 2 > e->ktab_cap) {
    uint32_t cap = e->ktab_cap ? e->ktab_cap * 2 : 64;
    int32_t *t = ox_xrealloc(NULL, cap * sizeof *t);
    for (uint32_t i = 0; i < cap; i++) t[i] = -1;
    for (uint32_t k = 0; k < e->n_keys; k++) {
      uint64_t hk = ox_hash_bytes(e->keys[k], strlen(e->keys[k]));
      uint32_t j = (uint32_t)hk & (cap - 1);
      while (t[j] >= 0) j = (j + 1) & (cap - 1);
      t[j] = (int32_t)k;
    }
    free(e->ktab);
    e->ktab = t;
    e->ktab_cap = cap;
  }
  uint32_t j = (uint32_t)h & (e->ktab_cap - 1);
  while (e->ktab[j] >= 0) {
    if (strcmp(e->keys[e->ktab[j]], s) == 0) return e->ktab[j];
    j = (j + 1) & (e->ktab_cap - 1);
  }
  if (e->n_keys == e->cap_keys) {
    e->cap_keys = e->cap_keys ? e->cap_keys * 2 : 32;
    e->keys = ox_xrealloc(e->keys, e->cap_keys * sizeof *e->keys);
    e->grp_stamp = ox_xrealloc(e->grp_stamp, e->cap_keys * sizeof *e->grp_stamp);
    e->grp_idx = ox_xrealloc(e->grp_idx, e->cap_keys * sizeof *e->grp_idx);
  }
  e->keys[e->n_keys] = ox_xstrdup(s);
  e->grp_stamp[e->n_keys] = 0;
  e->ktab[j] = (int32_t)e->n_keys;
  return (int32_t)e->n_keys++;
}

/* true the first time (h) is seen */
static bool seen_first(Eng *e, uint64_t h) {
  if (!h) h = 1;
  if ((e->n_seen + 1) * 2 > e->cap_seen) {
    uint32_t cap = e->cap_seen ? e->cap_seen * 2 : 256;
    uint64_t *t = ox_xcalloc(cap, sizeof *t);
    for (uint32_t i = 0; i < e->cap_seen; i++) {
      if (!e->seen[i]) continue;
      uint32_t j = (uint32_t)e->seen[i] & (cap - 1);
      while (t[j]) j = (j + 1) & (cap - 1);
      t[j] = e->seen[i];
    }
    free(e->seen);
    e->seen = t;
    e->cap_seen = cap;
  }
  uint32_t j = (uint32_t)h & (e->cap_seen - 1);
  while (e->seen[j]) {
    if (e->seen[j] == h) return false;
    j = (j + 1) & (e->cap_seen - 1);
  }
  e->seen[j] = h;
  e->n_seen++;
  return true;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

/* ------------------------------------------------------------------ rejections */

static void reject_node(Eng *e, OxNodeId cand, OxReasonCode code, const char *const *args, const bool *is_node,
                        uint32_t n) {
  if (!e->rec) return;
  if (!seen_first(e, mix(mix(0x6a09e667u, code), cand))) return;
  OxReason rs = ox_reason_nodes(e->c, code, args, n, is_node);
  ox_step_reject(e->c, e->r->name, cand, &cand, 1, &rs);
}

static const char *nm(Eng *e, OxNodeId id) { return e->g->nodes[id].name; }

static void reject1(Eng *e, OxNodeId cand, OxReasonCode code, const char *a0, bool n0) {
  const char *args[1] = {a0};
  bool isn[1] = {n0};
  reject_node(e, cand, code, args, isn, 1);
}

static void reject2(Eng *e, OxNodeId cand, OxReasonCode code, const char *a0, bool n0, const char *a1, bool n1) {
  const char *args[2] = {a0, a1};
  bool isn[2] = {n0, n1};
  reject_node(e, cand, code, args, isn, 2);
}

static void reject_set(Eng *e, const OxNodeId *ids, uint32_t n) {
  if (!e->rec) return;
  uint64_t h = mix(0xbb67ae85u, OX_REASON_SET_TOO_SMALL);
  for (uint32_t i = 0; i < n; i++) h = mix(h, ids[i]);
  if (!seen_first(e, h)) return;
  char a[32], b[32];
  snprintf(a, sizeof a, "%u", n);
  /* the minimum in force: a subset of one is never a batch, whatever the option says */
  snprintf(b, sizeof b, "%d", e->o->min_fuse_set_size > 2 ? e->o->min_fuse_set_size : 2);
  OxReason rs = ox_reason(e->c, OX_REASON_SET_TOO_SMALL, a, b, NULL);
  ox_step_reject(e->c, e->r->name, e->root, ids, n, &rs);
}

static void hook_ancestor(void *ud, OxNodeId anc, OxNodeId desc) {
  Eng *e = ud;
  if (!e->rec) return;
  if (!seen_first(e, mix(mix(mix(0x3c6ef372u, OX_REASON_ANCESTOR), anc), desc))) return;
  char *path = path_with(&e->s, e->g, &e->ord, anc, desc);
  const char *args[3] = {nm(e, anc), nm(e, desc), path ? path : "path not found"};
  bool isn[3] = {true, true, false};
  OxReason rs = ox_reason_nodes(e->c, OX_REASON_ANCESTOR, args, 3, isn);
  OxNodeId both[2] = {anc, desc};
  ox_step_reject(e->c, e->r->name, e->root, both, 2, &rs);
  free(path);
}

static void hook_dropped(void *ud, const OxNodeId *ids, uint32_t n) { reject_set(ud, ids, n); }

/* ------------------------------------------------------------------ matching helpers */

enum { M_OK = 0, M_NOMATCH, M_REJECT };

static void fmt_meta(const OxTensorMeta *t, char *buf, size_t cap) { ox_tensor_meta_format(t, false, true, buf, cap); }

/* A tensor operand of candidate `cand`: a node with a static tensor meta. */
static int operand(Eng *e, OxNodeId cand, const OxValue *v, const OxTensorMeta **out) {
  if (!v || v->kind != OX_V_NODE) return M_NOMATCH;
  const OxNode *x = &e->g->nodes[v->u.node];
  if (x->meta.kind == OX_META_SYMINT || x->meta.kind == OX_META_SCALAR || x->meta.kind == OX_META_TUPLE)
    return M_NOMATCH;
  const OxTensorMeta *t = ox_node_tensor_meta(x);
  if (!t || t->rank < 0) {
    reject1(e, cand, OX_REASON_META_MISSING, x->name, true);
    return M_REJECT;
  }
  for (int32_t i = 0; i < t->rank; i++)
    if (t->shape[i].sym) {
      reject2(e, cand, OX_REASON_SYMBOLIC, x->name, true, t->shape[i].sym, false);
      return M_REJECT;
    }
  *out = t;
  return M_OK;
}

static int need_rank(Eng *e, OxNodeId cand, OxNodeId x, const OxTensorMeta *t, int rank) {
  if (t->rank == rank) return M_OK;
  if (e->rec) {
    char a[16], b[16];
    snprintf(a, sizeof a, "%d", t->rank);
    snprintf(b, sizeof b, "%d", rank);
    const char *args[3] = {nm(e, x), a, b};
    bool isn[3] = {true, false, false};
    reject_node(e, cand, OX_REASON_RANK, args, isn, 3);
  }
  return M_REJECT;
}

static int same_dtype(Eng *e, OxNodeId cand, OxNodeId x, const OxTensorMeta *tx, OxNodeId y,
                      const OxTensorMeta *ty) {
  if (tx->dtype == ty->dtype) return M_OK;
  if (e->rec) {
    char a[160], b[160];
    snprintf(a, sizeof a, "%s (%s)", ox_dtype_abbr(tx->dtype), nm(e, x));
    snprintf(b, sizeof b, "%s (%s)", ox_dtype_abbr(ty->dtype), nm(e, y));
    reject2(e, cand, OX_REASON_DTYPE_DIFFERS, a, false, b, false);
  }
  return M_REJECT;
}

static int slot_index(OxOpId op, const char *name) {
  const OxOpInfo *info = ox_op_info(op);
  if (!info) return -1;
  for (uint32_t i = 0; i < info->n_slots; i++)
    if (strcmp(info->slot_names[i], name) == 0) return (int)i;
  return -1;
}

static bool is_true(const OxValue *v) {
  return v && ((v->kind == OX_V_BOOL && v->u.b) || (v->kind == OX_V_INT && v->u.i != 0));
}

static bool is_none(const OxValue *v) { return !v || v->kind == OX_V_NONE; }

static bool is_one(const OxValue *v) {
  return is_none(v) || (v->kind == OX_V_INT && v->u.i == 1) || (v->kind == OX_V_FLOAT && v->u.f == 1.0);
}

static const char *const inplace_ops[] = {"iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow",
                                          "imatmul", "iand", "ior", "ixor", "ilshift", "irshift", "iconcat"};

static bool is_inplace_op_name(const char *s, size_t n) {
  for (size_t i = 0; i < sizeof inplace_ops / sizeof inplace_ops[0]; i++)
    if (strlen(inplace_ops[i]) == n && strncmp(inplace_ops[i], s, n) == 0) return true;
  return false;
}

/* Does user u write in place into its first argument? (name ends with '_' like add_ or
 * copy_, operator.iadd / __iadd__, or inplace=True). */
static bool mutates_self(const OxGraph *g, const OxNode *u) {
  if (u->op != OX_OP_CALL_FUNCTION && u->op != OX_OP_CALL_METHOD) return false;
  const char *t = u->target;
  const char *name = t;
  size_t len;
  const char *aten = strstr(t, "aten.");
  if (aten) {
    name = aten + 5;
    const char *dot = strchr(name, '.');
    len = dot ? (size_t)(dot - name) : strlen(name);
  } else {
    const char *dot = strrchr(t, '.');
    name = dot ? dot + 1 : t;
    len = strlen(name);
  }
  if (len >= 4 && name[0] == '_' && name[1] == '_' && name[len - 1] == '_' && name[len - 2] == '_') {
    if (is_inplace_op_name(name + 2, len - 4)) return true;
  } else if (len > 1 && name[len - 1] == '_') {
    return true;
  }
  if ((!strncmp(t, "operator.", 9) || !strncmp(t, "_operator.", 10)) && is_inplace_op_name(name, len)) return true;
  OxOpArgs a;
  char err[64];
  OxOpId op = ox_op_of_node(g, u, NULL);
  if (op == OX_OPID_NONE) return false;
  int k = slot_index(op, "inplace");
  if (k < 0 || ox_op_normalize(g, u, &a, err, sizeof err) != 0) return false;
  return is_true(a.slot[k]);
}

static OxNodeId arg0_node(const OxNode *u) {
  if (u->args.kind == OX_V_TUPLE && u->args.n && u->args.u.items[0].kind == OX_V_NODE) return u->args.u.items[0].u.node;
  return 0;
}

typedef struct MutCtx {
  Eng *e;
  OxNodeId cand;
  bool bad;
} MutCtx;

static void in_mut_cb(OxNodeId x, void *ud) {
  MutCtx *m = ud;
  if (m->bad) return;
  const OxGraph *g = m->e->g;
  const OxNode *xn = &g->nodes[x];
  for (uint32_t i = 0; i < xn->n_users; i++) {
    const OxNode *u = &g->nodes[xn->users[i]];
    if (xn->users[i] == m->cand || arg0_node(u) != x || !mutates_self(g, u)) continue;
    reject2(m->e, m->cand, OX_REASON_MUTATED, xn->name, true, u->name, true);
    m->bad = true;
    return;
  }
}

static int mutation_guards(Eng *e, OxNodeId cand) {
  const OxGraph *g = e->g;
  const OxNode *n = &g->nodes[cand];
  if (e->r->guards & OX_BG_OUT_NOT_MUTATED) {
    for (uint32_t i = 0; i < n->n_users; i++) {
      const OxNode *u = &g->nodes[n->users[i]];
      if (!mutates_self(g, u)) continue;
      if (arg0_node(u) == cand) {
        reject2(e, cand, OX_REASON_MUTATED, n->name, true, u->name, true);
      } else if (e->rec) {
        char msg[256];
        snprintf(msg, sizeof msg, "user %s of %s writes in place", u->name, n->name);
        reject2(e, cand, OX_REASON_GUARD_FAILED, "no-mutating-user", false, msg, false);
      }
      return M_REJECT;
    }
  }
  if (e->r->guards & OX_BG_IN_NOT_MUTATED) {
    MutCtx m = {e, cand, false};
    for_inputs(g, cand, in_mut_cb, &m);
    if (m.bad) return M_REJECT;
  }
  return M_OK;
}

static void key_users(Eng *e, OxBuf *k, OxNodeId id) {
  const OxNode *n = &e->g->nodes[id];
  ox_buf_puts(k, "|users=[");
  for (uint32_t i = 0; i < n->n_users; i++) {
    if (i) ox_buf_putc(k, ',');
    ox_buf_puts(k, e->g->nodes[n->users[i]].target);
  }
  ox_buf_putc(k, ']');
}

/* "|label=value" (appended piece by piece: the keys are built for every candidate) */
static void key_kv(OxBuf *k, const char *label, const char *value) {
  ox_buf_putc(k, '|');
  ox_buf_puts(k, label);
  ox_buf_putc(k, '=');
  ox_buf_puts(k, value ? value : "(null)"); /* what printf's %s made of a missing target */
}

static void key_value(Eng *e, OxBuf *k, const char *label, const OxValue *v) {
  char buf[256];
  key_kv(k, label, v ? ox_value_format(e->g, v, buf, sizeof buf) : "None");
}

static void key_meta(Eng *e, OxBuf *k, const char *label, const OxTensorMeta *t) {
  MetaText *meta_text = e->meta_text;
  char buf[256];
  const char *txt = buf;
  if (!t) {
    txt = "None";
  } else {
    unsigned h = (unsigned)(((uintptr_t)t >> 4) % META_TEXT_CACHE);
    if (meta_text[h].t == t) {
      txt = meta_text[h].s;
    } else {
      fmt_meta(t, buf, sizeof buf);
      size_t n = strlen(buf);
      if (n < sizeof meta_text[h].s) {
        memcpy(meta_text[h].s, buf, n + 1);
        meta_text[h].t = t;
      }
    }
  }
  ox_buf_puts(k, "|");
  ox_buf_puts(k, label);
  ox_buf_puts(k, "=");
  ox_buf_puts(k, txt);
}

/* ------------------------------------------------------------------ key builders */

static int key_pointwise(Eng *e, OxNodeId id, const OxOpArgs *a, OxBuf *k) {
  const OxBatchRule *r = e->r;
  const OxTensorMeta *t[2] = {NULL, NULL};
  int rc;
  for (uint32_t j = 0; j < r->n_tensors && j < 2; j++) {
    if ((rc = operand(e, id, a->slot[j], &t[j])) != M_OK) return rc;
    char lab[8];
    snprintf(lab, sizeof lab, "x%u", j);
    key_meta(e, k, lab, t[j]);
  }
  if ((r->guards & OX_BG_EQUAL_SHAPES) && r->n_tensors == 2) {
    bool eq = t[0]->rank == t[1]->rank;
    for (int32_t i = 0; eq && i < t[0]->rank; i++) eq = t[0]->shape[i].v == t[1]->shape[i].v;
    if (!eq) {
      if (e->rec) {
        char s0[256], s1[256];
        fmt_meta(t[0], s0, sizeof s0);
        fmt_meta(t[1], s1, sizeof s1);
        reject2(e, id, OX_REASON_SHAPE_DIFFERS, s0, false, s1, false);
      }
      return M_REJECT;
    }
  }
  if (r->guards & OX_BG_NOT_INPLACE) {
    int ki = slot_index(a->op, "inplace");
    if (ki >= 0 && is_true(a->slot[ki])) {
      if (e->rec) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s has inplace=True: batching would not write into its input",
                 e->g->nodes[id].name);
        reject2(e, id, OX_REASON_GUARD_FAILED, "not-inplace", false, msg, false);
      }
      return M_REJECT;
    }
  }
  if ((rc = mutation_guards(e, id)) != M_OK) return rc;
  const OxOpInfo *info = ox_op_info(a->op);
  if (r->key & OX_BK_SLOTS)
    for (uint32_t j = r->n_tensors; j < a->n_slots; j++) key_value(e, k, info->slot_names[j], a->slot[j]);
  if ((r->key & OX_BK_PARENT) && e->o->fuse_nodes_with_same_parent)
    key_kv(k, "parent", e->g->nodes[a->slot[0]->u.node].target);
  if ((r->key & OX_BK_SEL_PARENT) && e->o->fuse_nodes_with_same_parent)
    for (uint32_t j = 0; j < r->n_tensors; j++) {
      const OxNode *x = &e->g->nodes[a->slot[j]->u.node];
      if (ox_op_of_node(e->g, x, NULL) == OX_OPID_SELECT) {
        OxNodeId src = arg0_node(x);
        ox_buf_printf(k, "|sel%u=%s", j, src ? e->g->nodes[src].name : "?");
      }
    }
  if ((r->key & OX_BK_USERS) && e->o->fuse_nodes_with_same_users) key_users(e, k, id);
  if (r->key & OX_BK_FIRST_USER) {
    const OxNode *n = &e->g->nodes[id];
    key_kv(k, "first_user", n->n_users ? e->g->nodes[n->users[0]].target : "");
  }
  return M_OK;
}

/* linear(input, weight, bias): input and weight 2-D, bias 1-D, one dtype */
static int linear_operands(Eng *e, OxNodeId id, const OxOpArgs *a, const OxTensorMeta **tx, const OxTensorMeta **tw,
                           const OxTensorMeta **tb) {
  int rc;
  *tb = NULL;
  if ((rc = operand(e, id, a->slot[0], tx)) || (rc = operand(e, id, a->slot[1], tw))) return rc;
  if (!is_none(a->slot[2]) && (rc = operand(e, id, a->slot[2], tb))) return rc;
  OxNodeId x = a->slot[0]->u.node, w = a->slot[1]->u.node;
  if ((rc = need_rank(e, id, x, *tx, 2)) || (rc = need_rank(e, id, w, *tw, 2))) return rc;
  if (*tb && (rc = need_rank(e, id, a->slot[2]->u.node, *tb, 1))) return rc;
  if ((rc = same_dtype(e, id, x, *tx, w, *tw))) return rc;
  if (*tb && (rc = same_dtype(e, id, x, *tx, a->slot[2]->u.node, *tb))) return rc;
  return mutation_guards(e, id);
}

static int key_linear(Eng *e, OxNodeId id, const OxOpArgs *a, OxBuf *k) {
  const OxTensorMeta *tx, *tw, *tb;
  int rc = linear_operands(e, id, a, &tx, &tw, &tb);
  if (rc) return rc;
  const OxNode *x = &e->g->nodes[a->slot[0]->u.node];
  OxNodeId src = ox_op_of_node(e->g, x, NULL) == OX_OPID_GETITEM ? arg0_node(x) : 0;
  key_kv(k, "src", src ? e->g->nodes[src].name : "None");
  key_meta(e, k, "x", tx);
  key_meta(e, k, "w", tw);
  key_meta(e, k, "b", tb);
  if (e->o->fuse_nodes_with_same_users) key_users(e, k, id);
  return M_OK;
}

static int key_linear_lhs(Eng *e, OxNodeId id, const OxOpArgs *a, OxBuf *k) {
  const OxTensorMeta *tx, *tw, *tb;
  int rc = linear_operands(e, id, a, &tx, &tw, &tb);
  if (rc) return rc;
  key_kv(k, "input", e->g->nodes[a->slot[0]->u.node].name);
  key_meta(e, k, "x", tx);
  ox_buf_printf(k, "|w=%s%s|bias=%s", ox_dtype_abbr(tw->dtype), tw->device ? tw->device : "", tb ? "True" : "False");
  return M_OK;
}

static int key_layer_norm(Eng *e, OxNodeId id, const OxOpArgs *a, OxBuf *k) {
  const OxTensorMeta *tx, *tw = NULL, *tb = NULL;
  int rc;
  if ((rc = operand(e, id, a->slot[0], &tx))) return rc;
  const OxValue *ns = a->slot[1];
  if (!ns || (ns->kind != OX_V_LIST && ns->kind != OX_V_TUPLE) || ns->n == 0 || (int32_t)ns->n > tx->rank)
    return M_NOMATCH;
  for (uint32_t i = 0; i < ns->n; i++)
    if (ns->u.items[i].kind != OX_V_INT) return M_NOMATCH;
  if (!is_none(a->slot[2]) && (rc = operand(e, id, a->slot[2], &tw))) return rc;
  if (!is_none(a->slot[3]) && (rc = operand(e, id, a->slot[3], &tb))) return rc;
  OxNodeId x = a->slot[0]->u.node;
  if (tw && (rc = same_dtype(e, id, x, tx, a->slot[2]->u.node, tw))) return rc;
  if (tb && (rc = same_dtype(e, id, x, tx, a->slot[3]->u.node, tb))) return rc;
  if ((rc = mutation_guards(e, id))) return rc;
  key_meta(e, k, "x", tx);
  key_meta(e, k, "w", tw);
  key_meta(e, k, "b", tb);
  key_value(e, k, "normalized_shape", ns);
  key_value(e, k, "eps", a->slot[4]);
  if (e->o->fuse_nodes_with_same_users) key_users(e, k, id);
  return M_OK;
}

/* mm(mat1, mat2) / addmm(bias, mat1, mat2, beta=1, alpha=1) */
typedef struct MmParts {
  const OxValue *bias, *x, *w;
  const OxTensorMeta *tb, *tx, *tw;
} MmParts;

static int mm_operands(Eng *e, OxNodeId id, const OxOpArgs *a, MmParts *p) {
  int rc;
  memset(p, 0, sizeof *p);
  if (a->op == OX_OPID_ADDMM) {
    if (!is_one(a->slot[3]) || !is_one(a->slot[4])) return M_NOMATCH;
    p->bias = a->slot[0];
    p->x = a->slot[1];
    p->w = a->slot[2];
  } else {
    p->x = a->slot[0];
    p->w = a->slot[1];
  }
  if ((rc = operand(e, id, p->x, &p->tx)) || (rc = operand(e, id, p->w, &p->tw))) return rc;
  if (p->bias && (rc = operand(e, id, p->bias, &p->tb))) return rc;
  if ((rc = need_rank(e, id, p->x->u.node, p->tx, 2)) || (rc = need_rank(e, id, p->w->u.node, p->tw, 2))) return rc;
  if ((rc = same_dtype(e, id, p->x->u.node, p->tx, p->w->u.node, p->tw))) return rc;
  if (p->tb && (rc = same_dtype(e, id, p->x->u.node, p->tx, p->bias->u.node, p->tb))) return rc;
  return mutation_guards(e, id);
}

static int key_linear_post(Eng *e, OxNodeId id, const OxOpArgs *a, OxBuf *k) {
  MmParts p;
  int rc = mm_operands(e, id, a, &p);
  if (rc) return rc;
  key_meta(e, k, "x", p.tx);
  key_meta(e, k, "w", p.tw);
  key_kv(k, "bias", p.bias ? "True" : "False");
  if (e->o->fuse_nodes_with_same_users) key_users(e, k, id);
  return M_OK;
}

static int key_group_linear(Eng *e, OxNodeId id, const OxOpArgs *a, OxBuf *k) {
  MmParts p;
  int rc = mm_operands(e, id, a, &p);
  if (rc) return rc;
  int64_t dims[4] = {p.tx->shape[0].v, p.tx->shape[1].v, p.tw->shape[0].v, p.tw->shape[1].v};
  for (int i = 0; i < 4; i++) {
    const char *why = dims[i] % 2 ? "even-dims" : dims[i] > e->o->max_fuse_tensor_size_group_linear ? "max-size" : NULL;
    if (!why) continue;
    if (e->rec) {
      char msg[256];
      if (dims[i] % 2)
        snprintf(msg, sizeof msg, "%s multiplies [%lld, %lld] by [%lld, %lld]: every dim must be even",
                 e->g->nodes[id].name, (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3]);
      else
        snprintf(msg, sizeof msg, "%s has a dim of %lld > max_fuse_tensor_size_group_linear %d", e->g->nodes[id].name,
                 (long long)dims[i], e->o->max_fuse_tensor_size_group_linear);
      reject2(e, id, OX_REASON_GUARD_FAILED, why, false, msg, false);
    }
    return M_REJECT;
  }
  if (p.tb) {
    if ((rc = need_rank(e, id, p.bias->u.node, p.tb, 1))) return rc;
    if (p.tb->shape[0].v != dims[3]) {
      if (e->rec) {
        char s0[128], s1[128];
        fmt_meta(p.tb, s0, sizeof s0);
        snprintf(s1, sizeof s1, "[%lld]", (long long)dims[3]);
        reject2(e, id, OX_REASON_SHAPE_DIFFERS, s0, false, s1, false);
      }
      return M_REJECT;
    }
  }
  ox_buf_printf(k, "|dtype=%s%s|bias=%s", ox_dtype_abbr(p.tx->dtype), p.tx->device ? p.tx->device : "",
                p.bias ? "True" : "False");
  return M_OK;
}

/* The rule's key of node id, or KEY_NONE; cached until the node's neighbourhood changes. */
static int32_t match(Eng *e, OxNodeId id) {
  if (e->ns[id].key != KEY_UNKNOWN) return e->ns[id].key;
  const OxBatchRule *r = e->r;
  OxGraph *g = e->g;
  int32_t key = KEY_NONE;
  /* the op index answers for the nodes of other ops (most of those a search visits) without
   * reading them: the first visit of each node was a cache miss per node and pass */
  const OxSpelling *sp = ox_opix_spelling(ox_op_index(g, id));
  OxOpId op = sp ? sp->op : OX_OPID_NONE;
  if (op != OX_OPID_NONE && (op == r->op || op == r->op2) && (r->levels & (1u << sp->level))) {
    const OxNode *n = &g->nodes[id];
    OxOpArgs a;
    char err[256];
    if (ox_op_normalize(g, n, &a, err, sizeof err) != 0) {
      reject2(e, id, OX_REASON_GUARD_FAILED, "arguments", false, err, false);
    } else {
      OxBuf k;
      ox_buf_init(&k);
      ox_buf_puts(&k, r->name);
      int rc = M_NOMATCH;
      switch (r->tmpl) {
      case OX_BT_STACK_UNBIND:
      case OX_BT_CAT_SELECT: rc = key_pointwise(e, id, &a, &k); break;
      case OX_BT_LINEAR: rc = key_linear(e, id, &a, &k); break;
      case OX_BT_LINEAR_LHS: rc = key_linear_lhs(e, id, &a, &k); break;
      case OX_BT_LAYER_NORM: rc = key_layer_norm(e, id, &a, &k); break;
      case OX_BT_LINEAR_POST: rc = key_linear_post(e, id, &a, &k); break;
      case OX_BT_GROUP_LINEAR: rc = key_group_linear(e, id, &a, &k); break;
      }
      if (rc == M_OK) key = key_intern(e, k.data);
      ox_buf_free(&k);
    }
  }
  e->ns[id].key = key;
  return key;
}

/* ------------------------------------------------------------------ emitting nodes */

static void carry_device(OxGraph *g, OxMeta *m, const char *dev) {
  if (!dev) return;
  if (m->kind == OX_META_TENSOR || m->kind == OX_META_TUPLE)
    for (uint32_t i = 0; i < m->n; i++)
      if (!m->t[i].device) m->t[i].device = ox_graph_intern(g, dev);
}

typedef struct DevCtx {
  const OxGraph *g;
  const char *dev;
} DevCtx;

static void dev_cb(OxNodeId x, void *ud) {
  DevCtx *d = ud;
  if (d->dev) return;
  const OxMeta *m = &d->g->nodes[x].meta;
  if ((m->kind == OX_META_TENSOR || m->kind == OX_META_TUPLE) && m->n && m->t[0].device) d->dev = m->t[0].device;
}

/* Creates call_function target(args, kwargs) at the insertion point and infers its meta. */
static OxNodeId emit(Eng *e, const char *target, OxValue args, OxValue kwargs) {
  OxGraph *g = e->g;
  OxNodeId id = e->anchor ? ox_graph_insert_before(g, e->anchor, OX_OP_CALL_FUNCTION, NULL, target, args, kwargs)
                          : ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, target, args, kwargs);
  OxMeta m;
  char err[256];
  if (ox_shape_infer_node(g, id, &m, err, sizeof err) == 0) {
    m.inferred = true;
    DevCtx d = {g, NULL};
    for_inputs(g, id, dev_cb, &d);
    carry_device(g, &m, d.dev);
    ox_graph_set_meta_shared(g, id, &m);
  } else if (e->emit_ok) {
    e->emit_ok = false;
    snprintf(e->emit_err, sizeof e->emit_err, "%s: %s", g->nodes[id].name, err);
  }
  return id;
}

static OxValue vnode(OxNodeId id) { return ox_value_node(id); }

static OxValue vtuple(Eng *e, uint32_t n, const OxValue *items) {
  return ox_graph_value_seq(e->g, OX_V_TUPLE, items, n);
}

static OxValue vlist_nodes(Eng *e, const OxNodeId *ids, uint32_t n) {
  OxValue *items = ox_xcalloc(n ? n : 1, sizeof *items);
  for (uint32_t i = 0; i < n; i++) items[i] = vnode(ids[i]);
  OxValue v = ox_graph_value_seq(e->g, OX_V_LIST, items, n);
  free(items);
  return v;
}

static OxValue no_kwargs(void) { return ox_value_none(); }

static OxNodeId emit1(Eng *e, const char *target, OxValue a0) {
  OxValue a[1] = {a0};
  return emit(e, target, vtuple(e, 1, a), no_kwargs());
}

static OxNodeId emit2(Eng *e, const char *target, OxValue a0, OxValue a1) {
  OxValue a[2] = {a0, a1};
  return emit(e, target, vtuple(e, 2, a), no_kwargs());
}

/* torch.unbind in the canonical form of normalization_pass (dim as a keyword, >= 0), so the
 * split/cat passes that follow (unbind_stack_pass ...) recognise the scaffolding. */
static OxNodeId emit_unbind(Eng *e, OxValue x, int64_t dim) {
  const OxTensorMeta *t = x.kind == OX_V_NODE ? ox_node_tensor_meta(&e->g->nodes[x.u.node]) : NULL;
  if (dim < 0 && t && t->rank > 0) dim += t->rank;
  const char *key = "dim";
  OxValue d = ox_value_int(dim);
  return emit(e, "torch.unbind", vtuple(e, 1, &x), ox_graph_value_dict(e->g, &key, &d, 1));
}

static OxNodeId emit3(Eng *e, const char *target, OxValue a0, OxValue a1, OxValue a2) {
  OxValue a[3] = {a0, a1, a2};
  return emit(e, target, vtuple(e, 3, a), no_kwargs());
}

/* Member i's uses go to replacement r; member erased. The replacement keeps the member's
 * device when inference had none. */
static void replace_member(Eng *e, OxNodeId m, OxNodeId r) {
  OxGraph *g = e->g;
  const OxTensorMeta *mt = ox_node_tensor_meta(&g->nodes[m]);
  if (mt && mt->device && g->nodes[r].meta.kind == OX_META_TENSOR && !g->nodes[r].meta.t[0].device) {
    OxMeta copy = g->nodes[r].meta;
    OxTensorMeta t = copy.t[0];
    t.device = mt->device;
    copy.t = &t;
    ox_graph_set_meta_shared(g, r, &copy);
  }
  ox_graph_replace_all_uses(g, m, r);
  bool erased = ox_graph_erase(g, m);
  if (!erased && e->emit_ok) {
    e->emit_ok = false;
    snprintf(e->emit_err, sizeof e->emit_err, "%s still has users after the rewrite", g->nodes[m].name);
  }
}

/* "torch.ops." of "torch.ops.aten.add.Tensor": post-grad nodes are emitted in the spelling
 * family of the matched node. */
static const char *aten_target(Eng *e, OxNodeId like, const char *aten_name, char *buf, size_t cap) {
  const char *t = e->g->nodes[like].target;
  const char *p = strstr(t, "aten.");
  snprintf(buf, cap, "%.*s%s", p ? (int)(p - t) : 0, t, aten_name);
  return buf;
}

static void norm_args(Eng *e, OxNodeId id, OxOpArgs *a) {
  char err[256];
  int rc = ox_op_normalize(e->g, &e->g->nodes[id], a, err, sizeof err);
  (void)rc;
  assert(rc == 0); /* match() normalized this very node */
}

/* ------------------------------------------------------------------ templates */

static void fuse_stack_unbind(Eng *e, const OxNodeId *sub, uint32_t n) {
  OxNodeId *xs = ox_xcalloc(n, sizeof *xs);
  OxOpArgs a0;
  for (uint32_t i = 0; i < n; i++) {
    OxOpArgs a;
    norm_args(e, sub[i], &a);
    xs[i] = a.slot[0]->u.node;
  }
  norm_args(e, sub[0], &a0);
  OxNodeId s = emit2(e, "torch.stack", vlist_nodes(e, xs, n), ox_value_int(0));
  const char *keys[OX_BATCH_MAX_EXTRAS];
  OxValue vals[OX_BATCH_MAX_EXTRAS];
  uint32_t nk = 0;
  for (int j = 0; j < OX_BATCH_MAX_EXTRAS && e->r->extras[j]; j++) {
    int k = slot_index(a0.op, e->r->extras[j]);
    if (k < 0 || is_none(a0.slot[k])) continue;
    keys[nk] = e->r->extras[j];
    vals[nk++] = ox_graph_value_copy(e->g, a0.slot[k]);
  }
  OxValue args[1] = {vnode(s)};
  OxNodeId b = emit(e, e->r->emit, vtuple(e, 1, args), ox_graph_value_dict(e->g, keys, vals, nk));
  OxNodeId u = emit_unbind(e, vnode(b), 0);
  for (uint32_t i = 0; i < n; i++)
    replace_member(e, sub[i], emit2(e, "operator.getitem", vnode(u), ox_value_int((int64_t)i)));
  free(xs);
}

/* Post-grad scaffolding is spelled as upstream spells it: decompose_stack's unsqueeze and cat,
 * the bmm, the select and the bias add are overload packets (torch.ops.aten.cat, not
 * aten.cat.default), so patterns registered on an overload (normalization_aten_pass on
 * aten.cat.default) do not see them, and unbind_stack_aten_pass recognizes its own selects. */
static void fuse_cat_select(Eng *e, const OxNodeId *sub, uint32_t n) {
  char t_uns[160], t_cat[160], t_op[160], t_sel[160];
  aten_target(e, sub[0], "aten.unsqueeze", t_uns, sizeof t_uns);
  aten_target(e, sub[0], "aten.cat", t_cat, sizeof t_cat);
  aten_target(e, sub[0], "aten.select", t_sel, sizeof t_sel);
  OxOpArgs a0;
  norm_args(e, sub[0], &a0);
  uint32_t nt = e->r->n_tensors;
  OxNodeId cats[2] = {0, 0};
  OxNodeId *us = ox_xcalloc(n, sizeof *us);
  for (uint32_t j = 0; j < nt; j++) {
    for (uint32_t i = 0; i < n; i++) {
      OxOpArgs a;
      norm_args(e, sub[i], &a);
      us[i] = emit2(e, t_uns, vnode(a.slot[j]->u.node), ox_value_int(0));
    }
    cats[j] = emit2(e, t_cat, vlist_nodes(e, us, n), ox_value_int(0));
  }
  free(us);
  const char *keys[OX_BATCH_MAX_EXTRAS];
  OxValue vals[OX_BATCH_MAX_EXTRAS];
  uint32_t nk = 0;
  const char *emit_name = e->r->emit;
  for (int j = 0; j < OX_BATCH_MAX_EXTRAS && e->r->extras[j]; j++) {
    int k = slot_index(a0.op, e->r->extras[j]);
    if (k < 0 || is_none(a0.slot[k])) continue;
    if (a0.op == OX_OPID_DIV) emit_name = "aten.div.Tensor_mode"; /* the overload that takes rounding_mode */
    if ((a0.op == OX_OPID_ADD || a0.op == OX_OPID_SUB) && is_one(a0.slot[k])) continue; /* alpha=1 */
    keys[nk] = e->r->extras[j];
    vals[nk++] = ox_graph_value_copy(e->g, a0.slot[k]);
  }
  aten_target(e, sub[0], emit_name, t_op, sizeof t_op);
  OxValue args[2] = {vnode(cats[0]), vnode(cats[1])};
  OxNodeId b = emit(e, t_op, vtuple(e, nt, args), ox_graph_value_dict(e->g, keys, vals, nk));
  for (uint32_t i = 0; i < n; i++)
    replace_member(e, sub[i], emit3(e, t_sel, vnode(b), ox_value_int(0), ox_value_int((int64_t)i)));
}

static void fuse_linear(Eng *e, const OxNodeId *sub, uint32_t n) {
  OxNodeId *xs = ox_xcalloc(n, sizeof *xs), *ws = ox_xcalloc(n, sizeof *ws), *bs = ox_xcalloc(n, sizeof *bs);
  bool bias = false;
  for (uint32_t i = 0; i < n; i++) {
    OxOpArgs a;
    norm_args(e, sub[i], &a);
    xs[i] = a.slot[0]->u.node;
    ws[i] = a.slot[1]->u.node;
    bs[i] = is_none(a.slot[2]) ? 0 : a.slot[2]->u.node;
    bias = bs[i] != 0;
  }
  OxNodeId si = emit2(e, "torch.stack", vlist_nodes(e, xs, n), ox_value_int(0));
  OxNodeId sw = emit2(e, "torch.stack", vlist_nodes(e, ws, n), ox_value_int(0));
  OxNodeId wt = emit3(e, "torch.transpose", vnode(sw), ox_value_int(1), ox_value_int(2));
  OxNodeId bm;
  if (bias) {
    OxNodeId sb = emit2(e, "torch.stack", vlist_nodes(e, bs, n), ox_value_int(0));
    OxNodeId ub = emit2(e, "torch.unsqueeze", vnode(sb), ox_value_int(1));
    bm = emit3(e, "torch.baddbmm", vnode(ub), vnode(si), vnode(wt));
  } else {
    bm = emit2(e, "torch.bmm", vnode(si), vnode(wt));
  }
  OxNodeId u = emit_unbind(e, vnode(bm), 0);
  for (uint32_t i = 0; i < n; i++)
    replace_member(e, sub[i], emit2(e, "operator.getitem", vnode(u), ox_value_int((int64_t)i)));
  free(xs);
  free(ws);
  free(bs);
}

static void fuse_linear_lhs(Eng *e, const OxNodeId *sub, uint32_t n) {
  OxNodeId *ws = ox_xcalloc(n, sizeof *ws), *bs = ox_xcalloc(n, sizeof *bs);
  OxValue *rows = ox_xcalloc(n, sizeof *rows);
  OxNodeId x = 0;
  bool bias = false;
  for (uint32_t i = 0; i < n; i++) {
    OxOpArgs a;
    norm_args(e, sub[i], &a);
    x = a.slot[0]->u.node;
    ws[i] = a.slot[1]->u.node;
    bs[i] = is_none(a.slot[2]) ? 0 : a.slot[2]->u.node;
    bias = bs[i] != 0;
    /* section widths come from each weight's meta (upstream bug: uneven widths) */
    rows[i] = ox_value_int(ox_node_tensor_meta(&e->g->nodes[ws[i]])->shape[0].v);
  }
  OxNodeId cw = emit2(e, "torch.cat", vlist_nodes(e, ws, n), ox_value_int(0));
  OxNodeId wt = emit3(e, "torch.transpose", vnode(cw), ox_value_int(0), ox_value_int(1));
  OxNodeId mm;
  if (bias) {
    OxNodeId cb = emit2(e, "torch.cat", vlist_nodes(e, bs, n), ox_value_int(0));
    mm = emit3(e, "torch.addmm", vnode(cb), vnode(x), vnode(wt));
  } else {
    mm = emit2(e, "torch.mm", vnode(x), vnode(wt));
  }
  OxNodeId sp = emit3(e, "torch.split", vnode(mm), ox_graph_value_seq(e->g, OX_V_LIST, rows, n), ox_value_int(1));
  for (uint32_t i = 0; i < n; i++)
    replace_member(e, sub[i], emit2(e, "operator.getitem", vnode(sp), ox_value_int((int64_t)i)));
  free(ws);
  free(bs);
  free(rows);
}

static void fuse_layer_norm(Eng *e, const OxNodeId *sub, uint32_t n) {
  OxNodeId *xs = ox_xcalloc(n, sizeof *xs), *ws = ox_xcalloc(n, sizeof *ws), *bs = ox_xcalloc(n, sizeof *bs);
  OxOpArgs a0;
  norm_args(e, sub[0], &a0);
  for (uint32_t i = 0; i < n; i++) {
    OxOpArgs a;
    norm_args(e, sub[i], &a);
    xs[i] = a.slot[0]->u.node;
    ws[i] = is_none(a.slot[2]) ? 0 : a.slot[2]->u.node;
    bs[i] = is_none(a.slot[3]) ? 0 : a.slot[3]->u.node;
  }
  const OxTensorMeta *tx = ox_node_tensor_meta(&e->g->nodes[xs[0]]);
  /* upstream stacks at -1 - len(normalized_shape); the same dim, normalized */
  int64_t d = (int64_t)tx->rank - (int64_t)a0.slot[1]->n;
  OxNodeId s = emit2(e, "torch.stack", vlist_nodes(e, xs, n), ox_value_int(d));
  const char *k[1] = {"eps"};
  OxValue v[1] = {ox_graph_value_copy(e->g, a0.slot[4])};
  OxValue args[2] = {vnode(s), ox_graph_value_copy(e->g, a0.slot[1])};
  OxNodeId cur = emit(e, "torch.nn.functional.layer_norm", vtuple(e, 2, args), ox_graph_value_dict(e->g, k, v, 1));
  if (ws[0]) {
    OxNodeId sw = emit2(e, "torch.stack", vlist_nodes(e, ws, n), ox_value_int(0));
    cur = emit2(e, "torch.mul", vnode(sw), vnode(cur));
  }
  if (bs[0]) {
    OxNodeId sb = emit2(e, "torch.stack", vlist_nodes(e, bs, n), ox_value_int(0));
    cur = emit2(e, "torch.add", vnode(sb), vnode(cur));
  }
  OxNodeId u = emit_unbind(e, vnode(cur), d);
  for (uint32_t i = 0; i < n; i++)
    replace_member(e, sub[i], emit2(e, "operator.getitem", vnode(u), ox_value_int((int64_t)i)));
  free(xs);
  free(ws);
  free(bs);
}

static void fuse_linear_post(Eng *e, const OxNodeId *sub, uint32_t n) {
  char t_uns[160], t_cat[160], t_bmm[160], t_sel[160], t_add[160], t_exp[160];
  aten_target(e, sub[0], "aten.unsqueeze", t_uns, sizeof t_uns);
  aten_target(e, sub[0], "aten.cat", t_cat, sizeof t_cat);
  aten_target(e, sub[0], "aten.bmm", t_bmm, sizeof t_bmm);
  aten_target(e, sub[0], "aten.select", t_sel, sizeof t_sel);
  /* upstream: aten.add(bias, sel), or with shape_broadcast_batch_linear
   * aten.add.Tensor(aten.broadcast_to.default(bias, [m, n]), sel) */
  aten_target(e, sub[0], e->o->shape_broadcast_batch_linear ? "aten.add.Tensor" : "aten.add", t_add, sizeof t_add);
  aten_target(e, sub[0], "aten.broadcast_to.default", t_exp, sizeof t_exp);
  MmParts *p = ox_xcalloc(n, sizeof *p);
  OxNodeId *us = ox_xcalloc(n, sizeof *us);
  for (uint32_t i = 0; i < n; i++) {
    OxOpArgs a;
    norm_args(e, sub[i], &a);
    int rc = mm_operands(e, sub[i], &a, &p[i]);
    (void)rc;
    assert(rc == M_OK);
  }
  for (uint32_t i = 0; i < n; i++) us[i] = emit2(e, t_uns, vnode(p[i].x->u.node), ox_value_int(0));
  OxNodeId cx = emit2(e, t_cat, vlist_nodes(e, us, n), ox_value_int(0));
  for (uint32_t i = 0; i < n; i++) us[i] = emit2(e, t_uns, vnode(p[i].w->u.node), ox_value_int(0));
  OxNodeId cw = emit2(e, t_cat, vlist_nodes(e, us, n), ox_value_int(0));
  OxNodeId bmm = emit2(e, t_bmm, vnode(cx), vnode(cw));
  for (uint32_t i = 0; i < n; i++) {
    OxNodeId r = emit3(e, t_sel, vnode(bmm), ox_value_int(0), ox_value_int((int64_t)i));
    if (p[i].bias) {
      OxNodeId b = p[i].bias->u.node;
      if (e->o->shape_broadcast_batch_linear) {
        OxValue size[2] = {ox_value_int(p[i].tx->shape[0].v), ox_value_int(p[i].tw->shape[1].v)};
        b = emit2(e, t_exp, vnode(b), ox_graph_value_seq(e->g, OX_V_LIST, size, 2));
      }
      r = emit2(e, t_add, vnode(b), vnode(r));
    }
    replace_member(e, sub[i], r);
  }
  free(p);
  free(us);
}

/* mat2 = t(W) / transpose(W, 0, 1) / permute(W, [1, 0]) used only by this mm -> W (the
 * transpose dies with the step, so the step's regions have the same boundary), else a new
 * t(mat2). */
static OxNodeId weight_of_mat2(Eng *e, OxNodeId sub0, OxNodeId w, bool *bypassed) {
  OxGraph *g = e->g;
  const OxNode *n = &g->nodes[w];
  OxOpArgs a;
  char err[64];
  OxOpId op = ox_op_of_node(g, n, NULL);
  *bypassed = false;
  if (n->n_users == 1 && (op == OX_OPID_T || op == OX_OPID_TRANSPOSE || op == OX_OPID_PERMUTE) &&
      ox_op_normalize(g, n, &a, err, sizeof err) == 0 && a.slot[0]->kind == OX_V_NODE) {
    const OxTensorMeta *src = ox_node_tensor_meta(&g->nodes[a.slot[0]->u.node]);
    bool swap = false;
    if (op == OX_OPID_T) {
      swap = true;
    } else if (op == OX_OPID_TRANSPOSE) {
      const OxValue *d0 = a.slot[1], *d1 = a.slot[2];
      if (d0->kind == OX_V_INT && d1->kind == OX_V_INT) {
        int64_t x = d0->u.i < 0 ? d0->u.i + 2 : d0->u.i, y = d1->u.i < 0 ? d1->u.i + 2 : d1->u.i;
        swap = (x == 0 && y == 1) || (x == 1 && y == 0);
      }
    } else {
      const OxValue *p = a.slot[1];
      if ((p->kind == OX_V_LIST || p->kind == OX_V_TUPLE) && p->n == 2 && p->u.items[0].kind == OX_V_INT &&
          p->u.items[1].kind == OX_V_INT) {
        int64_t x = p->u.items[0].u.i < 0 ? p->u.items[0].u.i + 2 : p->u.items[0].u.i;
        int64_t y = p->u.items[1].u.i < 0 ? p->u.items[1].u.i + 2 : p->u.items[1].u.i;
        swap = x == 1 && y == 0;
      }
    }
    if (swap && src && src->rank == 2) {
      *bypassed = true;
      return a.slot[0]->u.node;
    }
  }
  char t[160];
  return emit1(e, aten_target(e, sub0, "aten.t.default", t, sizeof t), vnode(w));
}

static void fuse_group_linear(Eng *e, const OxNodeId *sub, uint32_t n) {
  OxNodeId *xs = ox_xcalloc(n, sizeof *xs), *ws = ox_xcalloc(n, sizeof *ws), *bs = ox_xcalloc(n, sizeof *bs);
  OxNodeId *dead = ox_xcalloc(n, sizeof *dead);
  bool bias = false;
  for (uint32_t i = 0; i < n; i++) {
    OxOpArgs a;
    MmParts p;
    norm_args(e, sub[i], &a);
    int rc = mm_operands(e, sub[i], &a, &p);
    (void)rc;
    assert(rc == M_OK);
    xs[i] = p.x->u.node;
    bool bypassed;
    ws[i] = weight_of_mat2(e, sub[0], p.w->u.node, &bypassed);
    dead[i] = bypassed ? p.w->u.node : 0;
    bs[i] = p.bias ? p.bias->u.node : 0;
    bias = p.bias != NULL;
  }
  OxValue args[3] = {vlist_nodes(e, xs, n), vlist_nodes(e, ws, n), bias ? vlist_nodes(e, bs, n) : ox_value_none()};
  OxNodeId gm = emit(e, "optimus.grouped_mm", vtuple(e, 3, args), no_kwargs());
  for (uint32_t i = 0; i < n; i++)
    replace_member(e, sub[i], emit2(e, "operator.getitem", vnode(gm), ox_value_int((int64_t)i)));
  for (uint32_t i = 0; i < n; i++)
    if (dead[i]) ox_graph_erase(e->g, dead[i]);
  free(dead);
  free(xs);
  free(ws);
  free(bs);
}

/* ------------------------------------------------------------------ placement */

typedef struct CollectCtx {
  Eng *e;
  Stamp *st;
} CollectCtx;

static void collect_a_cb(OxNodeId x, void *ud) {
  CollectCtx *c = ud;
  if (stamp_has(c->st, x)) return;
  stamp_set(c->st, x);
  push_id(&c->e->aw, &c->e->n_aw, &c->e->cap_aw, x);
}

typedef struct BCtx {
  Eng *e;
  double lo;
} BCtx;

static void b_cb(OxNodeId x, void *ud) {
  BCtx *b = ud;
  Eng *e = b->e;
  if (stamp_has(&e->s.tmpb, x) || e->ord.pos[x] < b->lo) return;
  stamp_set(&e->s.tmpb, x);
  if (e->n_moved == e->cap_moved) {
    e->cap_moved = e->cap_moved ? e->cap_moved * 2 : 16;
    e->moved = ox_xrealloc(e->moved, e->cap_moved * sizeof *e->moved);
    e->moved_pos = ox_xrealloc(e->moved_pos, e->cap_moved * sizeof *e->moved_pos);
  }
  e->moved[e->n_moved] = x;
  e->moved_pos[e->n_moved++] = e->ord.pos[x];
  push_id(&e->s.stack, &e->s.n_stack, &e->s.cap_stack, x);
}

typedef struct PosId {
  double pos;
  OxNodeId id;
} PosId;

static int cmp_pos_id(const void *a, const void *b) {
  double x = ((const PosId *)a)->pos, y = ((const PosId *)b)->pos;
  return x < y ? -1 : x > y;
}

/* Chooses where the new nodes go and moves B (inputs' upstream closure after the first user)
 * so that the list stays topological. Sets e->anchor; fills e->aw with A then W. */
static void place(Eng *e, const OxNodeId *sub, uint32_t n) {
  OxGraph *g = e->g;
  const double *pos = e->ord.pos;
  e->n_aw = 0;
  e->n_moved = 0;
  stamp_new(&e->s.tmp, e->s.cap);
  for (uint32_t i = 0; i < n; i++) stamp_set(&e->s.tmp, sub[i]); /* members are neither A nor W */
  CollectCtx cc = {e, &e->s.tmp};
  for (uint32_t i = 0; i < n; i++) for_inputs(g, sub[i], collect_a_cb, &cc);
  uint32_t n_a = e->n_aw;
  for (uint32_t i = 0; i < n; i++) {
    const OxNode *m = &g->nodes[sub[i]];
    for (uint32_t k = 0; k < m->n_users; k++) collect_a_cb(m->users[k], &cc);
  }
  double hi = -1e300, lo = 1e300;
  OxNodeId first_user = 0, last_in = 0;
  for (uint32_t i = 0; i < n_a; i++)
    if (pos[e->aw[i]] > hi) {
      hi = pos[e->aw[i]];
      last_in = e->aw[i];
    }
  for (uint32_t i = n_a; i < e->n_aw; i++)
    if (pos[e->aw[i]] < lo) {
      lo = pos[e->aw[i]];
      first_user = e->aw[i];
    }
  if (!first_user) {
    /* members without users (only reachable when called from outside a sweep): after the
       last input, or after the last member */
    OxNodeId after = last_in;
    for (uint32_t i = 0; i < n; i++)
      if (!after || pos[sub[i]] > pos[after]) after = sub[i];
    OxNodeId nx = after ? g->link[after].next : 0;
    e->anchor = nx;
    return;
  }
  e->anchor = first_user;
  if (hi < lo) return;
  /* B: upstream closure of the inputs at positions >= lo; it holds no user (acyclic) */
  stamp_new(&e->s.tmpb, e->s.cap);
  e->s.n_stack = 0;
  BCtx bc = {e, lo};
  for (uint32_t i = 0; i < n_a; i++) b_cb(e->aw[i], &bc);
  while (e->s.n_stack) {
    OxNodeId m = e->s.stack[--e->s.n_stack];
    for_inputs(g, m, b_cb, &bc);
  }
  PosId *order = ox_xcalloc(e->n_moved ? e->n_moved : 1, sizeof *order);
  for (uint32_t i = 0; i < e->n_moved; i++) order[i] = (PosId){pos[e->moved[i]], e->moved[i]};
  qsort(order, e->n_moved, sizeof *order, cmp_pos_id);
  for (uint32_t i = 0; i < e->n_moved; i++) {
    e->moved[i] = order[i].id;
    e->moved_pos[i] = order[i].pos;
  }
  free(order);
  for (uint32_t i = 0; i < e->n_moved; i++) ox_graph_move_before(g, e->moved[i], first_user);
}

/* Gives the moved and new nodes (now just before the anchor) positions between their live
 * neighbours; renumbers everything when the gap is exhausted. */
static void assign_positions(Eng *e) {
  OxGraph *g = e->g;
  eng_grow(e);
  double *pos = e->ord.pos;
  OxNodeId hi_node = e->anchor;
  OxNodeId p = hi_node ? g->link[hi_node].prev : g->tail;
  uint32_t cnt = 0;
  OxNodeId lo_node = 0;
  for (; p; p = g->link[p].prev) {
    if (g->nodes[p].erased) continue;
    bool fresh = p >= e->first_new || (e->n_moved && stamp_has(&e->s.tmpb, p));
    if (!fresh) {
      lo_node = p;
      break;
    }
    cnt++;
  }
  double lo = lo_node ? pos[lo_node] : (hi_node ? pos[hi_node] - 1.0 : 0.0);
  double hi = hi_node ? pos[hi_node] : lo + (double)cnt + 1.0;
  double gap = (hi - lo) / (double)(cnt + 1);
  if (!(gap > 1e-6)) {
    ox_batch_order_init(&e->ord, g);
    return;
  }
  double x = lo;
  for (OxNodeId q = lo_node ? g->link[lo_node].next : g->head; q && q != hi_node; q = g->link[q].next) {
    if (g->nodes[q].erased) continue;
    x += gap;
    pos[q] = x;
  }
}

static bool shortcuts;
static void csr_value(Eng *e, const OxValue *v);

/* Node id's inputs were appended at in_ids[s0..n_in): they are its list from now on; or, 65535
 * or more, they are dropped and it is read from the graph (false). */
static bool csr_commit(Eng *e, OxNodeId id, uint32_t s0) {
  if (e->n_in - s0 >= IN_GRAPH) {
    e->n_in = s0;
    return false;
  }
  e->ns[id].in_start = s0;
  e->ns[id].in_cnt = (uint16_t)(e->n_in - s0);
  return true;
}

/* After a step (kept or rolled back): room for the nodes it created, and those nodes and the
 * nodes whose inputs it changed get their inputs listed (again), at the end of the input list
 * (old entries are left unused): the searches keep reading a flat list, not the node's argument tree (a rewired
 * 128-input cat was read through its tree by every later search that passed it, half of a
 * pointwise batch pass's instructions). Without shortcuts they are read from the graph. */
static void mark_dirty(Eng *e) {
  eng_grow(e);
  uint32_t n;
  const OxEdit *ed = ox_graph_txn_edits(e->g, &n);
  for (uint32_t i = 0; i < n; i++)
    if (ed[i].kind == OX_EDIT_ARGS || ed[i].kind == OX_EDIT_REPLACE) e->ns[ed[i].node].in_cnt = IN_GRAPH;
  if (!shortcuts || !e->in_ids) return;
  if (++e->dirty_serial == UINT32_MAX) e->dirty_serial = 1; /* in_start of an IN_GRAPH node is free */
  for (uint32_t i = 0; i < n; i++) {
    if (ed[i].kind != OX_EDIT_ARGS && ed[i].kind != OX_EDIT_REPLACE && ed[i].kind != OX_EDIT_ADD) continue;
    OxNodeId id = ed[i].node;
    const OxNode *x = &e->g->nodes[id];
    /* listed already in this step, or found too wide for the list */
    if (e->ns[id].in_cnt != IN_GRAPH || x->erased || e->ns[id].in_start == e->dirty_serial) continue;
    uint32_t s0 = e->n_in;
    csr_value(e, &x->args);
    csr_value(e, &x->kwargs);
    if (!csr_commit(e, id, s0)) e->ns[id].in_start = e->dirty_serial;
  }
}

/* ------------------------------------------------------------------ one fused subset */

static bool fuse(Eng *e, const OxNodeId *sub, uint32_t n, int32_t key) {
  OxGraph *g = e->g;
  OxPassCtx *c = e->c;
  ox_step_begin(c, e->r->name, e->root);
  ox_step_matched(c, sub, n);
  ox_step_key(c, e->keys[key]);
  bool rec = e->rec;
  e->rec = false; /* no rejection record may be written while the step is open */
  e->first_new = g->n_nodes;
  e->emit_ok = true;
  e->emit_err[0] = 0;
  place(e, sub, n);
  switch (e->r->tmpl) {
  case OX_BT_STACK_UNBIND: fuse_stack_unbind(e, sub, n); break;
  case OX_BT_CAT_SELECT: fuse_cat_select(e, sub, n); break;
  case OX_BT_LINEAR: fuse_linear(e, sub, n); break;
  case OX_BT_LINEAR_LHS: fuse_linear_lhs(e, sub, n); break;
  case OX_BT_LAYER_NORM: fuse_layer_norm(e, sub, n); break;
  case OX_BT_LINEAR_POST: fuse_linear_post(e, sub, n); break;
  case OX_BT_GROUP_LINEAR: fuse_group_linear(e, sub, n); break;
  }
  e->rec = rec;
  if (!e->emit_ok) {
    ox_step_abort(c);
    mark_dirty(e);
    for (uint32_t i = 0; i < e->n_moved; i++) e->ord.pos[e->moved[i]] = e->moved_pos[i];
    if (e->rec) {
      const char *args[2] = {"shape", e->emit_err};
      OxReason rs = ox_reason_nodes(c, OX_REASON_GUARD_FAILED, args, 2, NULL);
      ox_step_reject(c, e->r->name, e->root, sub, n, &rs);
    }
    return false;
  }
  assign_positions(e);
  /* the subset's names are read by commit; keep ids for bookkeeping */
  OxNodeId *members = ox_xcalloc(n, sizeof *members);
  memcpy(members, sub, n * sizeof *members);
  bool ok = ox_step_commit(c);
  mark_dirty(e);
  if (ok) {
    for (uint32_t i = 0; i < n; i++) e->ns[members[i]].fused = 1;
    /* keys that read users, parents or getitem sources may have changed around the rewrite */
    for (uint32_t i = 0; i < e->n_aw; i++) e->ns[e->aw[i]].key = KEY_UNKNOWN;
    ox_counter_add(c, e->r->name, 1);
  } else {
    /* rolled back: B is where it was */
    for (uint32_t i = 0; i < e->n_moved; i++) e->ord.pos[e->moved[i]] = e->moved_pos[i];
  }
  free(members);
  return ok;
}

/* ------------------------------------------------------------------ the sweep */

static inline void q_push(Eng *e, uint32_t *n, OxNodeId id, uint8_t d) {
  if (*n == e->cap_q) {
    e->cap_q = e->cap_q ? e->cap_q * 2 : 256;
    e->q = ox_xrealloc(e->q, e->cap_q * sizeof *e->q);
    e->qd = ox_xrealloc(e->qd, e->cap_q);
  }
  e->q[*n] = id;
  e->qd[(*n)++] = d;
}

typedef struct BfsCtx {
  Eng *e;
  uint32_t *n;
  uint8_t d;
} BfsCtx;

/* The BFS's inner loop (every node's inputs, from every root): the visit order of
 * ox_value_foreach_node over args then kwargs, without a callback per reference. */
/* inline: a visit per input of every node a search passes (millions a pass) */
static inline void bfs_visit(BfsCtx *b, OxNodeId x) {
  if (b->e->ns[x].bfs != b->e->bfs_epoch) {
    b->e->ns[x].bfs = b->e->bfs_epoch;
    q_push(b->e, b->n, x, b->d);
  }
}

static void bfs_value(BfsCtx *b, const OxValue *v) {
  if (v->kind == OX_V_NODE) {
    bfs_visit(b, v->u.node);
  } else if (v->kind == OX_V_LIST || v->kind == OX_V_TUPLE || v->kind == OX_V_DICT || v->kind == OX_V_SLICE) {
    for (uint32_t i = 0; i < v->n; i++) bfs_value(b, &v->u.items[i]);
  }
}

static void bfs_inputs(BfsCtx *b, OxNodeId n) {
  Eng *e = b->e;
  if (e->ns[n].in_cnt != IN_GRAPH) {
    const OxNodeId *in = e->in_ids + e->ns[n].in_start;
    for (uint32_t i = 0, cnt = e->ns[n].in_cnt; i < cnt; i++) bfs_visit(b, in[i]);
    return;
  }
  const OxNode *x = &e->g->nodes[n];
  bfs_value(b, &x->args);
  bfs_value(b, &x->kwargs);
}

static void group_add(Eng *e, int32_t key, OxNodeId id) {
  uint32_t gi;
  if (e->grp_stamp[key] == e->root_serial) {
    gi = e->grp_idx[key];
  } else {
    if (e->n_groups == e->cap_groups) {
      uint32_t cap = e->cap_groups ? e->cap_groups * 2 : 8;
      e->groups = ox_xrealloc(e->groups, cap * sizeof *e->groups);
      memset(e->groups + e->cap_groups, 0, (cap - e->cap_groups) * sizeof *e->groups);
      e->cap_groups = cap;
    }
    gi = e->n_groups++;
    e->groups[gi].key = key;
    e->groups[gi].n = 0;
    e->grp_stamp[key] = e->root_serial;
    e->grp_idx[key] = gi;
  }
  Group *gr = &e->groups[gi];
  push_id(&gr->ids, &gr->n, &gr->cap, id);
}

/* Spec 3.2: producers of root within max_fuse_search_depth hops; a match is a frontier. */
static void candidate_search(Eng *e, OxNodeId root) {
  e->n_groups = 0;
  if (++e->root_serial == 0) {
    for (uint32_t k = 0; k < e->n_keys; k++) e->grp_stamp[k] = 0;
    e->root_serial = 1;
  }
  if (++e->bfs_epoch == 0) { /* wrapped: forget every old mark */
    for (uint32_t i = 0; i < e->cap; i++) e->ns[i].bfs = 0;
    e->bfs_epoch = 1;
  }
  uint32_t n = 0;
  BfsCtx b = {e, &n, 1};
  bfs_inputs(&b, root);
  int depth = e->o->max_fuse_search_depth;
  for (uint32_t head = 0; head < n; head++) {
    OxNodeId x = e->q[head];
    uint8_t d = e->qd[head];
    if (e->ns[x].fused) continue;
    int32_t key = match(e, x);
    if (key >= 0) {
      group_add(e, key, x);
    } else if (d < depth) {
      b.d = (uint8_t)(d + 1 < 255 ? d + 1 : 255);
      bfs_inputs(&b, x);
    }
  }
}

/* ------------------------------------------------------------------ root pruning
 *
 * Most roots have no node of the rule's op within max_fuse_search_depth hops upstream: their BFS
 * finds nothing, groups nothing and records nothing. One walk in list order computes, for every
 * node, near = min over its inputs y of (y has the op ? 1 : near[y] + 1), a lower bound on the
 * hop count of any node the BFS could match (the BFS also stops at matches and fused nodes,
 * which only removes candidates); a root with near > depth is skipped.
 *
 * The bound stays valid while the sweep rewrites the graph: a fuse only rewires users of its
 * members, each of which had the op (so the user had near 1), to outputs of new chains at least
 * two hops long ending at a new node of the op or at the members' inputs; no path gets shorter.
 * Nodes created by fuses have near 0 (unknown) and are always searched. Turning the pruning and
 * the input snapshot off (ox_batch_set_shortcuts, for tests) must give the same trace. */

enum { NEAR_FAR = 255 };
static bool shortcuts = true;

void ox_batch_set_shortcuts(bool on) { shortcuts = on; }

static void csr_value(Eng *e, const OxValue *v) {
  if (v->kind == OX_V_NODE) {
    if (e->n_in == e->cap_in) {
      e->cap_in = e->cap_in ? e->cap_in * 2 : 1024;
      e->in_ids = ox_xrealloc(e->in_ids, e->cap_in * sizeof *e->in_ids);
    }
    e->in_ids[e->n_in++] = v->u.node;
  } else if (v->kind == OX_V_LIST || v->kind == OX_V_TUPLE || v->kind == OX_V_DICT || v->kind == OX_V_SLICE) {
    for (uint32_t i = 0; i < v->n; i++) csr_value(e, &v->u.items[i]);
  }
}

/* One walk in list order: the topological positions of ox_batch_order_init, every node's
 * inputs (the BFS reads them from here, not from the graph) and, with has_op, near. */
static void order_near_init(Eng *e, const uint8_t *has_op) {
  OxGraph *g = e->g;
  double k = 1.0;
  double *pos = e->ord.pos;
  if (!shortcuts) { /* every search reads the graph (in_cnt stays IN_GRAPH; tests compare the traces) */
    ox_batch_order_init(&e->ord, g);
    return;
  }
  NodeState *ns = e->ns;
  bool kept = e->lists_kept;
  if (!kept) e->n_in = 0;
  /* the list holds live nodes only: walked through the links alone, a node with a kept list is
   * not read at all */
  for (OxNodeId id = g->head; id; id = g->link[id].next) {
    assert(ox_op_index(g, id) != OX_OPIX_ERASED); /* asked without reading the node */
    pos[id] = k++;
    /* a kept list is this node's inputs (the previous batch pass kept it up to date) */
    uint32_t s0, s1;
    bool listed = kept && ns[id].in_cnt != IN_GRAPH;
    if (listed) {
      s0 = ns[id].in_start;
      s1 = s0 + ns[id].in_cnt;
    } else {
      const OxNode *n = &g->nodes[id];
      s0 = e->n_in;
      csr_value(e, &n->args);
      csr_value(e, &n->kwargs);
      s1 = e->n_in;
    }
    if (has_op) {
      uint8_t d = NEAR_FAR;
      for (uint32_t i = s0; i < s1 && d > 1; i++) {
        OxNodeId x = e->in_ids[i];
        uint8_t dx = has_op[x] ? 1 : (uint8_t)(ns[x].near >= NEAR_FAR - 1 ? NEAR_FAR : ns[x].near + 1);
        if (dx < d) d = dx;
      }
      ns[id].near = d;
    }
    if (!listed) csr_commit(e, id, s0);
  }
}

/* By the op index, which spares reading the node on every root of every batch pass. */
static bool is_getitem_node(OxGraph *g, OxNodeId id) {
  const OxSpelling *sp = ox_opix_spelling(ox_op_index(g, id));
  return sp && sp->op == OX_OPID_GETITEM && ox_spelling_kind(sp) == OX_OP_CALL_FUNCTION;
}

int ox_batch_apply(OxPassCtx *c, const OxBatchRule *r) {
  OxGraph *g = c->g;
  OxPassOptions defaults;
  if (!c->opt) ox_pass_options_default(&defaults);
  const OxPassOptions *o = c->opt ? c->opt : &defaults;
  bool rec = c->trace && c->record_rejections;
  /* a subset of one is not a batch, and fusing it again and again would never end */
  int min = o->min_fuse_set_size > 2 ? o->min_fuse_set_size : 2;
  int max = o->max_fuse_set_size > min ? o->max_fuse_set_size : min;
  /* nothing to do unless the rule's op occurs */
  uint32_t present = 0;
  uint8_t *has_op = ox_xcalloc(g->n_nodes ? g->n_nodes : 1, 1);
  for (OxNodeId id = 1; id < g->n_nodes; id++) { /* the op index: a count needs no list order */
    const OxSpelling *sp = ox_opix_spelling(ox_op_index(g, id));
    if (sp && (sp->op == r->op || sp->op == r->op2) && (r->levels & (1u << sp->level))) {
      present++;
      has_op[id] = 1;
    }
  }
  if (present == 0 || (!rec && (int)present < min)) {
    free(has_op);
    return 0;
  }
  /* the engine of the run's previous batch pass, if the driver kept one for this graph */
  OxBatchShare *share = c->batch_share;
  if (share && share->e && share->e->g != g) ox_batch_share_forget(share);
  Eng *ep = share && share->e ? share->e : ox_xcalloc(1, sizeof *ep);
  Eng e = *ep; /* on the stack while the pass runs; the share holds nothing meanwhile */
  if (share && share->e) {
    eng_reset_for_pass(&e);
    share->e = NULL;
  }
  e.c = c;
  e.g = g;
  e.r = r;
  e.o = o;
  e.rec = rec;
  eng_grow(&e);
  int depth = e.o->max_fuse_search_depth;
  bool prune = shortcuts && depth < NEAR_FAR - 1;
  order_near_init(&e, prune ? has_op : NULL);
  free(has_op);
  int applied = 0;
  OxBatchGreedyHooks hooks = {hook_ancestor, hook_dropped, &e};
  for (OxNodeId root = g->tail; root && !ox_pass_stopped(c); root = g->link[root].prev) {
    assert(ox_op_index(g, root) != OX_OPIX_ERASED); /* the list holds live nodes only (asked without reading the node) */
    if ((prune && e.ns[root].near > depth) || is_getitem_node(g, root)) continue;
    e.root = root;
    candidate_search(&e, root);
    for (uint32_t gi = 0; gi < e.n_groups; gi++) {
      Group *grp = &e.groups[gi];
      if ((int)grp->n < min) {
        reject_set(&e, grp->ids, grp->n);
        continue;
      }
      OxBatchGreedy gr;
      greedy_init(&gr, g, &e.ord, &e.s, grp->ids, grp->n, min, max, &hooks);
      const OxNodeId *sub;
      uint32_t ns;
      while (!c->stop && greedy_next(&gr, &sub, &ns)) {
        OxNodeId *copy = ox_xcalloc(ns, sizeof *copy);
        memcpy(copy, sub, ns * sizeof *copy);
        if (fuse(&e, copy, ns, grp->key)) applied++;
        free(copy);
        grp = &e.groups[gi];
      }
      greedy_fini(&gr);
    }
  }
  if (share) { /* kept for the next batch pass: every step's changes are listed (mark_dirty) */
    e.lists_kept = shortcuts && e.in_ids;
    e.c = NULL;
    *ep = e;
    share->e = ep;
  } else {
    eng_free(&e);
    free(ep);
  }
  return applied;
}

int ox_batch_pass_run(OxPassCtx *c) {
  const OxBatchRule *r = c->pass ? ox_batch_rule_find(c->pass->name) : NULL;
  if (!r) return -1;
  return ox_batch_apply(c, r);
}
