/* ox_step.c - the step protocol every pass uses (ox_pass.h).
 *
 * A step is a graph transaction: ox_step_begin opens it, the pass rewrites the graph with the
 * ordinary ox_graph API, ox_step_commit reads the transaction log to learn what changed
 * (added, removed, rewired nodes, provenance), turns it into a name-based edit script for
 * replay, runs the semantic checks, and commits or rolls back. Rejections never open a
 * transaction: they are one record with a reason.
 *
 * Provenance: an added node that took over the users of a removed matched node (the
 * replace_all_uses pattern) comes from that node; other added nodes (scaffolding such as a
 * stack) come from every matched node. Provenance ids are transitive to the input graph:
 * a node created by an earlier step passes on its own provenance.
 *
 * Budgets: every kept step is charged to the pass's budget (c->budget, set by the driver);
 * when one is spent, c->stop is set and the pass loops (ox_pass_stopped) return at their next
 * anchor. The step that crossed the line stays: it passed its checks.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/ox_mem.h"
#include "ops/ox_shape.h"
#include "passes/ox_pass.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ox_pass_ctx_clear(OxPassCtx *c) {
  free(c->matched_ids);
  c->matched_ids = NULL;
  c->n_matched_ids = c->cap_matched_ids = 0;
  free(c->counter_names);
  free(c->counter_values);
  c->counter_names = NULL;
  c->counter_values = NULL;
  c->n_counters = c->cap_counters = 0;
}

void ox_counter_add(OxPassCtx *c, const char *name, int64_t delta) {
  for (uint32_t i = 0; i < c->n_counters; i++) {
    if (strcmp(c->counter_names[i], name) == 0) {
      c->counter_values[i] += delta;
      return;
    }
  }
  if (c->n_counters == c->cap_counters) {
    c->cap_counters = c->cap_counters ? c->cap_counters * 2 : 8;
    c->counter_names = ox_xrealloc(c->counter_names, c->cap_counters * sizeof *c->counter_names);
    c->counter_values = ox_xrealloc(c->counter_values, c->cap_counters * sizeof *c->counter_values);
  }
  /* counter names are string literals or trace-interned: they outlive the context */
  c->counter_names[c->n_counters] = c->trace ? ox_trace_intern(c->trace, name) : name;
  c->counter_values[c->n_counters++] = delta;
}

static const char **names_of(OxPassCtx *c, const OxGraph *g, const OxNodeId *ids, uint32_t n) {
  if (!c->trace || !n) return NULL;
  const char **r = ox_trace_edit_alloc(c->trace, n * sizeof *r); /* used again with the edits */
  for (uint32_t i = 0; i < n; i++) {
    const OxNode *x = ox_graph_node(g, ids[i]);
    r[i] = x ? ox_trace_intern_from(c->trace, g, x->name) : ox_trace_intern(c->trace, "?");
  }
  return r;
}

/* ---------------------------------------------------------------- budgets */

static bool budget_time(OxPassCtx *c, double now) {
  OxPassBudget *b = c->budget;
  if (now <= b->deadline) return false;
  b->spent = "time";
  snprintf(b->why, sizeof b->why, "the pass ran %.1f s (at most %.0f s per pass)", now - b->t0, b->deadline - b->t0);
  c->stop = true;
  return true;
}

/* After a kept step: counts it, and stops the pass when a budget is spent. */
static void budget_charge(OxPassCtx *c) {
  OxPassBudget *b = c->budget;
  if (!b || c->stop) return;
  b->steps++;
  uint32_t live = c->g->n_live - b->uncounted;
  if (live > b->max_nodes) {
    double f = b->nodes_in ? (double)live / b->nodes_in : (double)live;
    b->spent = "growth";
    snprintf(b->why, sizeof b->why, "graph grew %.*fx (%u -> %u nodes; at most %u per pass: %gx its input or %u more)",
             f < 10 ? 1 : 0, f, b->nodes_in, live, b->max_nodes, b->growth, OX_BUDGET_HEADROOM);
    c->stop = true;
  } else if (b->steps >= b->max_steps) {
    b->spent = "step";
    snprintf(b->why, sizeof b->why, "%u applied steps (at most %u per pass)", b->steps, b->max_steps);
    c->stop = true;
  } else {
    budget_time(c, now_s());
  }
}

bool ox_pass_stopped(OxPassCtx *c) {
  if (c->stop) return true;
  if (!c->budget || (++c->budget->polls & 63)) return false;
  return budget_time(c, now_s());
}

void ox_step_begin(OxPassCtx *c, const char *rule, OxNodeId anchor) {
  memset(&c->staged, 0, sizeof c->staged);
  c->in_step = true;
  c->anchor_id = anchor;
  c->n_matched_ids = 0;
  c->t_start = now_s();
  OxStep *s = &c->staged;
  c->vetoed = NULL;
  if (c->n_vetoes && c->pass) {
    /* decided now, while the anchor is certainly live under its name */
    const OxNode *a = ox_graph_node(c->g, anchor);
    for (uint32_t i = 0; i < c->n_vetoes && a && !c->vetoed; i++) {
      const OxStepVeto *v = &c->vetoes[i];
      if (v->pass && strcmp(v->pass, c->pass->name) == 0 && v->anchor && strcmp(v->anchor, a->name) == 0 &&
          (!v->rule || (rule && strcmp(v->rule, rule) == 0)))
        c->vetoed = v;
    }
  }
  s->pass = c->trace ? ox_trace_intern(c->trace, c->pass ? c->pass->name : "?") : NULL;
  s->phase = c->pass && c->pass->phase == OX_PHASE_POST ? "post" : "pre";
  if (c->trace) {
    s->rule = ox_trace_intern(c->trace, rule);
    const OxNode *a = ox_graph_node(c->g, anchor);
    s->anchor = a ? ox_trace_intern(c->trace, a->name) : NULL;
  }
  ox_graph_txn_begin(c->g);
}

void ox_step_matched(OxPassCtx *c, const OxNodeId *nodes, uint32_t n) {
  if (c->n_matched_ids + n > c->cap_matched_ids) {
    c->cap_matched_ids = (c->n_matched_ids + n) * 2;
    c->matched_ids = ox_xrealloc(c->matched_ids, c->cap_matched_ids * sizeof *c->matched_ids);
  }
  memcpy(c->matched_ids + c->n_matched_ids, nodes, n * sizeof *nodes);
  c->n_matched_ids += n;
}

void ox_step_key(OxPassCtx *c, const char *key) {
  if (c->trace) c->staged.key = ox_trace_intern(c->trace, key);
}

void ox_step_abort(OxPassCtx *c) {
  if (!c->in_step) return;
  ox_graph_txn_rollback(c->g);
  c->in_step = false;
  c->vetoed = NULL;
}

/* ---------------------------------------------------------------- reading the log
 *
 * A step's log can hold thousands of edits (a batch fusion of 300 nodes adds, rewires and
 * erases each of them), so nothing here scans the log per edit: one backward pass links every
 * edit to the next edit of the same node that changes its args, meta or name, and membership
 * questions go to hash sets sized to the step. Reading the log is O(edits + values). */

/* Open-addressing map from a 64-bit key (never 0) to a 32-bit value, sized to the step; or, made
 * with keymap_dense, one of the graph's key slots (keys are node ids, or node ids + 1): an
 * array read, no hashing, no allocation per step (the hashed maps were ~4 % of an optimization
 * of 100k nodes). Both behave the same. */
typedef struct KeyMap {
  uint64_t *keys;
  uint32_t *vals;
  uint32_t cap, count;
  OxGraph *dg; /* dense: the graph whose key slot `slot` this is */
  int slot;
} KeyMap;

/* A dense map for keys up to the graph's node capacity + 1; a hashed one when the graph's key
 * slots are all in use. */
static KeyMap keymap_dense(OxGraph *g) {
  KeyMap m = {0};
  m.slot = g ? ox_graph_keyslot_acquire(g, g->cap_nodes + 2) : -1;
  if (m.slot >= 0) m.dg = g;
  return m;
}

static uint32_t key_hash(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (uint32_t)x;
}

static void keymap_free(KeyMap *m) {
  if (m->dg) ox_graph_keyslot_release(m->dg, m->slot);
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* Empties m, keeping its memory. */
static void keymap_clear(KeyMap *m) {
  if (m->dg) ox_graph_keyslot_clear(m->dg, m->slot);
  else if (m->cap) memset(m->keys, 0, m->cap * sizeof *m->keys);
  m->count = 0;
}

static bool dense_has(const KeyMap *m, uint64_t key) {
  const struct OxKeySlot *s = &m->dg->keyslots[m->slot];
  return key < s->cap && s->gen[key] == s->epoch;
}

/* Adds key to a dense map; returns true if it was new. */
static bool dense_add(KeyMap *m, uint64_t key, bool values) {
  struct OxKeySlot *s = &m->dg->keyslots[m->slot];
  if (key >= s->cap || (values && !s->val)) {
    if (key >= UINT32_MAX) abort(); /* node ids are 32-bit */
    ox_graph_keyslot_grow(m->dg, m->slot, key >= s->cap ? (uint32_t)key + 1 : s->cap, values);
  }
  if (s->gen[key] == s->epoch) return false;
  s->gen[key] = s->epoch;
  if (s->val) s->val[key] = values ? 0 : 1; /* as the hashed map: a set's members hold 1 */
  m->count++;
  return true;
}

/* Returns a pointer to the value slot of key, inserting it (value 0) when absent if add. */
static uint32_t *keymap_slot(KeyMap *m, uint64_t key, bool add) {
  if (m->dg) {
    if (!dense_has(m, key)) {
      if (!add) return NULL;
      dense_add(m, key, true);
    } else if (!m->dg->keyslots[m->slot].val) { /* a set read as a map: its members hold 1 */
      struct OxKeySlot *sl = &m->dg->keyslots[m->slot];
      ox_graph_keyslot_grow(m->dg, m->slot, 0, true);
      for (uint32_t i = 0; i < sl->cap; i++) sl->val[i] = 1;
    }
    return &m->dg->keyslots[m->slot].val[key];
  }
  if (add && (m->count + 1) * 2 > m->cap) {
    KeyMap n = {0};
    n.cap = m->cap ? m->cap * 2 : 64;
    n.keys = ox_xcalloc(n.cap, sizeof *n.keys);
    n.vals = ox_xcalloc(n.cap, sizeof *n.vals);
    for (uint32_t i = 0; i < m->cap; i++)
      if (m->keys[i]) {
        uint32_t j = key_hash(m->keys[i]) & (n.cap - 1);
        while (n.keys[j]) j = (j + 1) & (n.cap - 1);
        n.keys[j] = m->keys[i];
        n.vals[j] = m->vals[i];
        n.count++;
      }
    keymap_free(m);
    *m = n;
  }
  if (!m->cap) return NULL;
  uint32_t j = key_hash(key) & (m->cap - 1);
  while (m->keys[j]) {
    if (m->keys[j] == key) return &m->vals[j];
    j = (j + 1) & (m->cap - 1);
  }
  if (!add) return NULL;
  m->keys[j] = key;
  m->count++;
  return &m->vals[j];
}

static uint32_t keymap_get(const KeyMap *m, uint64_t key) {
  if (m->dg) {
    if (!dense_has(m, key)) return 0;
    const uint32_t *v = m->dg->keyslots[m->slot].val;
    return v ? v[key] : 1;
  }
  uint32_t *v = keymap_slot((KeyMap *)m, key, false);
  return v ? *v : 0;
}

/* Adds key; returns true if it was new. */
static bool keyset_add(KeyMap *m, uint64_t key) {
  if (m->dg) return dense_add(m, key, false);
  uint32_t before = m->count;
  *keymap_slot(m, key, true) = 1;
  return m->count != before;
}

static bool keyset_has(const KeyMap *m, uint64_t key) {
  if (m->dg) return dense_has(m, key);
  return keymap_get(m, key) != 0;
}

/* For edit i: the index of the next edit (after i) of the same node of kind ARGS / META, n if
 * none; renames of a node are chained the same way from the node's first one. */
typedef struct LogIndex {
  const OxEdit *e;
  uint32_t n;
  uint32_t *next_args, *next_meta;
  KeyMap first_rename; /* node id -> 1 + index of its first RENAME */
  KeyMap created;      /* node id + 1 of nodes ADDed in the log */
  uint32_t *next_rename;
  bool any_rename;
} LogIndex;

static void log_index_build(OxGraph *g, LogIndex *x, const OxEdit *e, uint32_t n) {
  memset(x, 0, sizeof *x);
  x->first_rename = keymap_dense(g);
  x->created = keymap_dense(g);
  x->e = e;
  x->n = n;
  x->next_args = ox_xrealloc(NULL, (n + 1) * sizeof *x->next_args);
  x->next_meta = ox_xrealloc(NULL, (n + 1) * sizeof *x->next_meta);
  x->next_rename = ox_xrealloc(NULL, (n + 1) * sizeof *x->next_rename);
  KeyMap last_args = keymap_dense(g), last_meta = keymap_dense(g);
  for (uint32_t i = n; i-- > 0;) {
    uint64_t node = (uint64_t)e[i].node + 1;
    uint32_t la = keymap_get(&last_args, node), lm = keymap_get(&last_meta, node);
    x->next_args[i] = la ? la - 1 : n;
    x->next_meta[i] = lm ? lm - 1 : n;
    x->next_rename[i] = n;
    if (e[i].kind == OX_EDIT_ARGS) *keymap_slot(&last_args, node, true) = i + 1;
    if (e[i].kind == OX_EDIT_META) *keymap_slot(&last_meta, node, true) = i + 1;
    if (e[i].kind == OX_EDIT_ADD) keyset_add(&x->created, node);
    if (e[i].kind == OX_EDIT_RENAME) {
      uint32_t *f = keymap_slot(&x->first_rename, node, true);
      x->next_rename[i] = *f ? *f - 1 : n;
      *f = i + 1;
      x->any_rename = true;
    }
  }
  keymap_free(&last_args);
  keymap_free(&last_meta);
}

static void log_index_free(LogIndex *x) {
  free(x->next_args);
  free(x->next_meta);
  free(x->next_rename);
  keymap_free(&x->first_rename);
  keymap_free(&x->created);
}

typedef struct {
  OxNodeId *added, *removed, *rewired;
  uint32_t n_added, n_removed, n_rewired;
  KeyMap added_set, removed_set;
} Changes;

static void collect_changes(OxGraph *g, Changes *ch) {
  uint32_t n;
  const OxEdit *e = ox_graph_txn_edits(g, &n);
  memset(ch, 0, sizeof *ch);
  ch->added = ox_xcalloc(n + 1, sizeof(OxNodeId));
  ch->removed = ox_xcalloc(n + 1, sizeof(OxNodeId));
  ch->rewired = ox_xcalloc(n + 1, sizeof(OxNodeId));
  ch->added_set = keymap_dense(g);
  ch->removed_set = keymap_dense(g);
  KeyMap created = keymap_dense(g), rewired = keymap_dense(g);
  /* nodes created inside the transaction (live or not) */
  for (uint32_t i = 0; i < n; i++)
    if (e[i].kind == OX_EDIT_ADD) {
      keyset_add(&created, e[i].node);
      if (!g->nodes[e[i].node].erased) {
        ch->added[ch->n_added++] = e[i].node;
        keyset_add(&ch->added_set, e[i].node);
      }
    }
  for (uint32_t i = 0; i < n; i++) {
    if (e[i].kind != OX_EDIT_ERASE) continue;
    OxNodeId x = e[i].node;
    if (!keyset_has(&created, x) && g->nodes[x].erased && keyset_add(&ch->removed_set, x))
      ch->removed[ch->n_removed++] = x;
  }
  /* live pre-existing nodes whose inputs changed */
  for (uint32_t i = 0; i < n; i++) {
    if (e[i].kind != OX_EDIT_ARGS) continue;
    OxNodeId x = e[i].node;
    if (g->nodes[x].erased || keyset_has(&ch->added_set, x) || !keyset_add(&rewired, x)) continue;
    ch->rewired[ch->n_rewired++] = x;
  }
  keymap_free(&created);
  keymap_free(&rewired);
}

static void changes_free(Changes *ch) {
  free(ch->added);
  free(ch->removed);
  free(ch->rewired);
  keymap_free(&ch->added_set);
  keymap_free(&ch->removed_set);
}

/* New nodes get meta (upstream bug #120974: created nodes lacking example_value made later
 * passes skip them): infer it where the pass did not set it. Inside the transaction, so a
 * rollback drops it and the edit script carries it. */
static void fill_added_meta(OxGraph *g, const Changes *ch) {
  for (uint32_t i = 0; i < ch->n_added; i++) {
    OxNodeId id = ch->added[i];
    if (g->nodes[id].meta.kind != OX_META_NONE) continue;
    OxMeta m;
    char err[256];
    if (ox_shape_infer_node(g, id, &m, err, sizeof err) == 0) {
      m.inferred = true;
      ox_graph_set_meta_shared(g, id, &m);
    }
  }
}

/* Pairs (old removed node -> new added node) from rewired users: an ARGS edit whose old
 * tree referenced a removed node and whose next state references an added node. */
typedef struct {
  const OxGraph *g;
  OxNodeId *ids;
  uint32_t n, cap;
} IdList;

static void idlist_cb(OxNodeId id, void *data) {
  IdList *l = data;
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 8;
    l->ids = ox_xrealloc(l->ids, l->cap * sizeof *l->ids);
  }
  l->ids[l->n++] = id;
}

typedef struct Pairs {
  OxNodeId *po, *pn;
  uint32_t n, cap;
  OxNodeId *scaffold;  /* added nodes with no replacement pair: they came from every matched node */
  uint32_t n_scaffold;
  KeyMap seen; /* (old, new) */
  KeyMap news; /* new ids that have a pair */
} Pairs;

static void add_pair(Pairs *p, OxNodeId o, OxNodeId nw) {
  if (!keyset_add(&p->seen, ((uint64_t)o << 32) | nw)) return;
  keyset_add(&p->news, nw);
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 16;
    p->po = ox_xrealloc(p->po, p->cap * sizeof *p->po);
    p->pn = ox_xrealloc(p->pn, p->cap * sizeof *p->pn);
  }
  p->po[p->n] = o;
  p->pn[p->n] = nw;
  p->n++;
}

static uint32_t provenance_pairs(OxPassCtx *c, const Changes *ch, const LogIndex *lx, Pairs *p) {
  OxGraph *g = c->g;
  uint32_t n = lx->n;
  const OxEdit *e = lx->e;
  memset(p, 0, sizeof *p);
  p->news = keymap_dense(g);
  IdList before = {g, NULL, 0, 0}, after = {g, NULL, 0, 0};
  KeyMap in_before = keymap_dense(g), in_after = keymap_dense(g);
  for (uint32_t i = 0; i < n; i++) {
    if (e[i].kind != OX_EDIT_ARGS && e[i].kind != OX_EDIT_REPLACE) continue;
    if (e[i].replace) {
      /* a rewire from -> to: `from` left the node's inputs, `to` entered them unless it was
       * there already */
      OxNodeId f = e[i].from, to = e[i].to;
      if (to && keyset_has(&ch->removed_set, f) && !e[i].to_was_input && !g->nodes[to].erased) add_pair(p, f, to);
      continue;
    }
    before.n = after.n = 0;
    ox_value_foreach_node(&e[i].old_args, idlist_cb, &before);
    ox_value_foreach_node(&e[i].old_kwargs, idlist_cb, &before);
    /* state after this edit: the next ARGS edit's old trees, or the node's current trees */
    const OxValue *na = &g->nodes[e[i].node].args, *nk = &g->nodes[e[i].node].kwargs;
    uint32_t j = lx->next_args[i];
    if (j < n) {
      na = &e[j].old_args;
      nk = &e[j].old_kwargs;
    }
    ox_value_foreach_node(na, idlist_cb, &after);
    ox_value_foreach_node(nk, idlist_cb, &after);
    bool any_removed = false;
    for (uint32_t a = 0; a < before.n && !any_removed; a++) any_removed = keyset_has(&ch->removed_set, before.ids[a]);
    if (!any_removed) continue;
    /* membership sets are rebuilt per edit, reusing their slot arrays */
    keymap_clear(&in_before);
    keymap_clear(&in_after);
    for (uint32_t a = 0; a < before.n; a++) keyset_add(&in_before, before.ids[a]);
    for (uint32_t b = 0; b < after.n; b++) keyset_add(&in_after, after.ids[b]);
    for (uint32_t a = 0; a < before.n; a++) {
      if (!keyset_has(&ch->removed_set, before.ids[a]) || keyset_has(&in_after, before.ids[a])) continue;
      for (uint32_t b = 0; b < after.n; b++)
        /* the replacement may be a node the step added or one already in the graph (a cat
         * replaced by its split's input): both are checked; only added nodes get provenance */
        if (!g->nodes[after.ids[b]].erased && !keyset_has(&in_before, after.ids[b]))
          add_pair(p, before.ids[a], after.ids[b]);
    }
  }
  free(before.ids);
  free(after.ids);
  keymap_free(&in_before);
  keymap_free(&in_after);
  /* added nodes with no pair come from every matched node (scaffolding): listed once, not as
   * added x matched pairs (a split-cat rewrite adds hundreds of nodes over ~100 matched ones) */
  p->scaffold = ox_xcalloc(ch->n_added + 1, sizeof *p->scaffold);
  for (uint32_t k = 0; k < ch->n_added; k++)
    if (!keyset_has(&p->news, ch->added[k])) p->scaffold[p->n_scaffold++] = ch->added[k];
  return p->n;
}

/* Name of node id as it was just after log position i (the first rename of id later in the
 * log holds it). */
static const char *name_at(OxGraph *g, const LogIndex *lx, uint32_t i, OxNodeId id) {
  if (!id) return NULL;
  if (lx->any_rename) {
    uint32_t f = keymap_get(&lx->first_rename, (uint64_t)id + 1);
    for (uint32_t j = f ? f - 1 : lx->n; j < lx->n; j = lx->next_rename[j])
      if (j > i) return lx->e[j].old_name;
  }
  return g->nodes[id].name;
}

typedef struct {
  OxTrace *t;
  OxGraph *g;
  const LogIndex *lx;
  uint32_t i;
} NameCtx;

static OxValue conv_value(NameCtx *k, const OxValue *v) {
  if (v->kind == OX_V_NODE) {
    const char *nm = name_at(k->g, k->lx, k->i, v->u.node);
    return ox_value_node(nm ? ox_trace_name_ref_from(k->t, k->g, nm) : ox_trace_name_ref(k->t, "?"));
  }
  OxValue r = *v;
  if (v->s) r.s = ox_trace_intern(k->t, v->s);
  if (v->kind == OX_V_LIST || v->kind == OX_V_TUPLE || v->kind == OX_V_DICT || v->kind == OX_V_SLICE) {
    r.u.items = v->n ? ox_trace_edit_alloc(k->t, v->n * sizeof(OxValue)) : NULL;
    for (uint32_t j = 0; j < v->n; j++) r.u.items[j] = conv_value(k, &v->u.items[j]);
    if (v->kind == OX_V_DICT) {
      r.keys = v->n ? ox_trace_edit_alloc(k->t, v->n * sizeof(char *)) : NULL;
      for (uint32_t j = 0; j < v->n; j++) r.keys[j] = ox_trace_intern(k->t, v->keys[j]);
    }
  }
  return r;
}

static OxValue value_at_names(OxTrace *t, OxGraph *g, const OxValue *v, const LogIndex *lx, uint32_t i) {
  NameCtx k = {t, g, lx, i};
  return conv_value(&k, v);
}

/* The args a node had just after log position i (i is an edit of that node). */
static void args_after(OxGraph *g, const LogIndex *lx, uint32_t i, OxNodeId id, const OxValue **a,
                       const OxValue **k) {
  uint32_t j = lx->next_args[i];
  *a = j < lx->n ? &lx->e[j].old_args : &g->nodes[id].args;
  *k = j < lx->n ? &lx->e[j].old_kwargs : &g->nodes[id].kwargs;
}

static const OxMeta *meta_after(OxGraph *g, const LogIndex *lx, uint32_t i, OxNodeId id) {
  uint32_t j = lx->next_meta[i];
  return j < lx->n ? &lx->e[j].old_meta : &g->nodes[id].meta;
}

static OxMeta copy_meta_to_pool(OxTrace *t, const OxMeta *m) {
  /* the pool graph owns the copy: one per distinct meta (thousands of steps add nodes of the
   * same few shapes) */
  return ox_graph_meta_share(t->pool, m); /* trace metas are never written in place */
}

static void build_edits(OxPassCtx *c, OxStep *s, const LogIndex *lx) {
  OxTrace *t = c->trace;
  OxGraph *g = c->g;
  uint32_t n = lx->n;
  const OxEdit *e = lx->e;
  /* allocated at its exact size: most log entries (users snapshots, provenance, metas folded
   * into adds) are not edits, and a scratch array of the log's size would be fresh memory (page
   * faults) on every large step */
  uint32_t count = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint8_t kd = e[i].kind;
    if (kd == OX_EDIT_PROVENANCE || kd == OX_EDIT_USERS) continue;
    if (kd == OX_EDIT_META && keyset_has(&lx->created, (uint64_t)e[i].node + 1)) continue;
    count++;
  }
  OxTraceEdit *out = ox_trace_edit_alloc(t, (count + 1) * sizeof *out); /* +1: out[k] is formed for skipped entries too */
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) {
    const OxEdit *x = &e[i];
    OxTraceEdit *o = &out[k]; /* zeroed by the arena */
    switch ((OxEditKind)x->kind) {
    case OX_EDIT_ADD: {
      o->kind = OX_TEDIT_ADD;
      o->name = ox_trace_intern_from(t, g, name_at(g, lx, i, x->node));
      o->after = ox_trace_intern_from(t, g, name_at(g, lx, i, x->now_prev));
      o->op = g->nodes[x->node].op;
      o->target = ox_trace_intern(t, g->nodes[x->node].target);
      /* creation args = the args before the node's first later ARGS edit */
      const OxValue *a, *kw;
      args_after(g, lx, i, x->node, &a, &kw);
      OxTraceEditData *d = ox_trace_edit_data(t, o);
      d->args = value_at_names(t, g, a, lx, i);
      d->kwargs = value_at_names(t, g, kw, lx, i);
      /* the node's meta as the step leaves it: its META edits in this step are folded in here
       * (replay never reads a meta mid-step; the shape check inferred most of them) */
      const OxMeta *m = &g->nodes[x->node].meta;
      if (m->kind != OX_META_NONE) {
        d->meta = copy_meta_to_pool(t, m);
        o->has_meta = true;
      }
      k++;
      break;
    }
    case OX_EDIT_ERASE:
      o->kind = OX_TEDIT_ERASE;
      o->name = ox_trace_intern_from(t, g, name_at(g, lx, i, x->node));
      k++;
      break;
    case OX_EDIT_REPLACE:
    case OX_EDIT_ARGS: {
      if (x->replace) { /* REPLACE, and the ARGS entry (a copy for rollback) of a node's first rewire */
        o->kind = OX_TEDIT_REPLACE;
        o->name = ox_trace_intern_from(t, g, name_at(g, lx, i, x->node));
        o->from = ox_trace_intern_from(t, g, name_at(g, lx, i, x->from));
        o->to = ox_trace_intern_from(t, g, name_at(g, lx, i, x->to));
        k++;
        break;
      }
      o->kind = OX_TEDIT_ARGS;
      o->name = ox_trace_intern_from(t, g, name_at(g, lx, i, x->node));
      const OxValue *a, *kw;
      args_after(g, lx, i, x->node, &a, &kw);
      OxTraceEditData *d = ox_trace_edit_data(t, o);
      d->args = value_at_names(t, g, a, lx, i);
      d->kwargs = value_at_names(t, g, kw, lx, i);
      k++;
      break;
    }
    case OX_EDIT_MOVE:
      o->kind = OX_TEDIT_MOVE;
      o->name = ox_trace_intern_from(t, g, name_at(g, lx, i, x->node));
      o->after = ox_trace_intern_from(t, g, name_at(g, lx, i, x->now_prev));
      k++;
      break;
    case OX_EDIT_META: {
      if (keyset_has(&lx->created, (uint64_t)x->node + 1)) break; /* folded into its ADD */
      o->kind = OX_TEDIT_META;
      o->name = ox_trace_intern_from(t, g, name_at(g, lx, i, x->node));
      ox_trace_edit_data(t, o)->meta = copy_meta_to_pool(t, meta_after(g, lx, i, x->node));
      o->has_meta = true;
      k++;
      break;
    }
    case OX_EDIT_RENAME:
      o->kind = OX_TEDIT_RENAME;
      o->name = ox_trace_intern(t, x->old_name);
      o->new_name = ox_trace_intern_from(t, g, name_at(g, lx, i, x->node));
      k++;
      break;
    case OX_EDIT_ORDER:
      /* replay re-runs the (deterministic) stable toposort */
      o->kind = OX_TEDIT_MOVE;
      o->name = NULL; /* MOVE without a name = toposort */
      k++;
      break;
    case OX_EDIT_PROVENANCE:
    case OX_EDIT_USERS: break; /* derived state */
    }
  }
  assert(k == count);
  (void)count;
  s->edits = k ? out : NULL;
  s->n_edits = k;
}

/* Transitive provenance in the graph itself: each new node gets, once, the provenance of every
 * node it came from (or that node's id when it has none), in pair order, deduplicated: the
 * list add_provenance would build one id at a time, with one logged edit per node. Pairs whose
 * new side is not in `added` are skipped (an existing node keeps its own history). Scaffolding
 * nodes came from every source: the union is built once and shared (provenance arrays are
 * copy-on-write). */
void ox_provenance_apply(OxGraph *g, const OxNodeId *po, const OxNodeId *pn, uint32_t n_pairs,
                         const OxNodeId *added, uint32_t n_added, const OxNodeId *scaffold, uint32_t n_scaffold,
                         const OxNodeId *sources, uint32_t n_sources) {
  KeyMap added_set = keymap_dense(g);
  for (uint32_t i = 0; i < n_added; i++)
    if (added[i]) keyset_add(&added_set, added[i]);
  KeyMap group = keymap_dense(g); /* new id -> 1 + group index */
  uint32_t *gcount = ox_xcalloc(n_pairs + 1, sizeof *gcount);
  OxNodeId *gnode = ox_xcalloc(n_pairs + 1, sizeof *gnode);
  uint32_t n_groups = 0;
  for (uint32_t i = 0; i < n_pairs; i++) {
    if (!po[i] || !pn[i] || !keyset_has(&added_set, pn[i])) continue;
    uint32_t *slot = keymap_slot(&group, pn[i], true);
    if (!*slot) {
      gnode[n_groups] = pn[i];
      *slot = ++n_groups;
    }
    gcount[*slot - 1]++;
  }
  uint32_t *start = ox_xcalloc(n_groups + 1, sizeof *start);
  for (uint32_t k = 0; k < n_groups; k++) start[k + 1] = start[k] + gcount[k];
  uint32_t *order = ox_xcalloc(n_pairs + 1, sizeof *order);
  memset(gcount, 0, (n_pairs + 1) * sizeof *gcount);
  for (uint32_t i = 0; i < n_pairs; i++) {
    if (!po[i] || !pn[i] || !keyset_has(&added_set, pn[i])) continue;
    uint32_t k = keymap_get(&group, pn[i]) - 1;
    order[start[k] + gcount[k]++] = i;
  }
  OxNodeId *list = NULL;
  uint32_t cap = 0, len = 0;
  KeyMap seen = keymap_dense(g);
#define PUSH_ID(x)                                                  \
  do {                                                              \
    OxNodeId x_ = (x);                                              \
    if (!keyset_add(&seen, x_)) break;                              \
    if (len == cap) {                                               \
      cap = cap ? cap * 2 : 16;                                     \
      list = ox_xrealloc(list, cap * sizeof *list);                 \
    }                                                               \
    list[len++] = x_;                                               \
  } while (0)
#define RESET_LIST()                                                   \
  do {                                                                 \
    len = 0;                                                           \
    keymap_clear(&seen);                                               \
  } while (0)
#define PUSH_SOURCE(id)                                                         \
  do {                                                                          \
    const OxNode *o_ = &g->nodes[(id)];                                         \
    if (o_->n_provenance)                                                       \
      for (uint32_t j_ = 0; j_ < o_->n_provenance; j_++) PUSH_ID(o_->provenance[j_]); \
    else                                                                        \
      PUSH_ID((id));                                                            \
  } while (0)
  for (uint32_t k = 0; k < n_groups; k++) {
    OxNodeId nw = gnode[k];
    RESET_LIST();
    const OxNode *nn = &g->nodes[nw];
    for (uint32_t j = 0; j < nn->n_provenance; j++) PUSH_ID(nn->provenance[j]);
    uint32_t had = len;
    for (uint32_t q = start[k]; q < start[k + 1]; q++) PUSH_SOURCE(po[order[q]]);
    if (len != had) ox_graph_set_provenance(g, nw, list, len);
  }
  if (n_scaffold && n_sources) {
    RESET_LIST();
    for (uint32_t m = 0; m < n_sources; m++)
      if (sources[m]) PUSH_SOURCE(sources[m]);
    const OxNodeId *shared = NULL;
    uint32_t n_shared = len;
    for (uint32_t k = 0; k < n_scaffold; k++) {
      OxNodeId nw = scaffold[k];
      if (!nw || !keyset_has(&added_set, nw) || !n_shared) continue;
      const OxNode *nn = &g->nodes[nw];
      if (nn->n_provenance) {
        /* rare: the pass gave it provenance of its own; those ids come first */
        OxNodeId *mine = ox_xrealloc(NULL, (nn->n_provenance + n_shared) * sizeof *mine);
        uint32_t m = 0;
        KeyMap dup = keymap_dense(g);
        for (uint32_t j = 0; j < nn->n_provenance; j++)
          if (keyset_add(&dup, nn->provenance[j])) mine[m++] = nn->provenance[j];
        uint32_t had = m;
        for (uint32_t j = 0; j < n_shared; j++)
          if (keyset_add(&dup, list[j])) mine[m++] = list[j];
        if (m != had) ox_graph_set_provenance(g, nw, mine, m);
        keymap_free(&dup);
        free(mine);
      } else if (!shared) {
        ox_graph_set_provenance(g, nw, list, n_shared);
        shared = g->nodes[nw].provenance;
      } else {
        ox_graph_share_provenance(g, nw, shared, n_shared);
      }
    }
  }
#undef PUSH_ID
#undef RESET_LIST
#undef PUSH_SOURCE
  free(list);
  keymap_free(&seen);
  keymap_free(&group);
  keymap_free(&added_set);
  free(gcount);
  free(gnode);
  free(start);
  free(order);
}

/* A vetoed step (what-if): nothing of it is kept; the attempt is recorded as rejected with the
 * veto's text and the nodes the pass matched. */
/* Rolls the open step back and, when record (and there is a trace), records it as rejected
 * under the step's pass, rule, anchor, key and matched nodes; returns that record (the caller
 * sets its reason) or NULL. */
static OxStep *rollback_as_rejected(OxPassCtx *c, bool record) {
  ox_graph_txn_rollback(c->g);
  c->in_step = false;
  if (!c->trace || !record) return NULL;
  OxStep *s = ox_trace_add_step(c->trace, OX_STEP_REJECTED);
  s->pass = c->staged.pass;
  s->phase = c->staged.phase;
  s->rule = c->staged.rule;
  s->anchor = c->staged.anchor;
  s->key = c->staged.key;
  if (c->trace->no_rejections) return s; /* counted, not kept */
  s->matched = names_of(c, c->g, c->matched_ids, c->n_matched_ids);
  s->n_matched = c->n_matched_ids;
  s->seconds = now_s() - c->t_start;
  return s;
}

static bool commit_vetoed(OxPassCtx *c) {
  const OxStepVeto *v = c->vetoed;
  c->vetoed = NULL;
  OxStep *s = rollback_as_rejected(c, true); /* the what-if compares these: always recorded */
  if (!s) return false;
  const char *why = v->why ? v->why : "skipped by the what-if";
  s->reason = ox_reason_nodes(c, OX_REASON_OTHER, &why, 1, NULL);
  return false;
}

/* A step the payoff guard refuses: rolled back, recorded as rejected with reason PAYOFF and
 * the cost estimate that decided it. */
static bool commit_payoff(OxPassCtx *c, const char *what, const char *why) {
  OxStep *s = rollback_as_rejected(c, c->record_rejections);
  if (!s) return false;
  s->cost = c->staged.cost;
  const char *args[2] = {what, why};
  s->reason = ox_reason_nodes(c, OX_REASON_PAYOFF, args, 2, NULL);
  return false;
}

bool ox_step_commit(OxPassCtx *c) {
  OxGraph *g = c->g;
  OxStep *s = &c->staged;
  if (c->vetoed) return commit_vetoed(c);
  Changes ch;
  collect_changes(g, &ch);
  fill_added_meta(g, &ch);
  /* the estimated cost of what the step removes and adds (tombstones keep their meta), and the
   * payoff guard, before anything else is spent on the step; a trace nobody reads (no_edits:
   * optimize without --trace) has no use for it (~3 % of such a run at 100k nodes) */
  bool guard = c->opt && c->opt->has_min_payoff;
  if ((c->trace && !c->trace->no_edits) || guard) {
    s->cost.set = true;
    s->cost.before = ox_cost_nodes(g, ch.removed, ch.n_removed);
    s->cost.after = ox_cost_nodes(g, ch.added, ch.n_added);
  }
  char what[160], why[160];
  if (guard && !ox_cost_guard(&s->cost, c->opt->min_payoff, what, sizeof what, why, sizeof why)) {
    changes_free(&ch);
    return commit_payoff(c, what, why);
  }
  uint32_t n_log;
  const OxEdit *log = ox_graph_txn_edits(g, &n_log);
  LogIndex lx;
  log_index_build(g, &lx, log, n_log);
  Pairs pairs;
  uint32_t n_replaced = provenance_pairs(c, &ch, &lx, &pairs);
  if (c->trace) {
    s->matched = names_of(c, g, c->matched_ids, c->n_matched_ids);
    s->n_matched = c->n_matched_ids;
    s->added = names_of(c, g, ch.added, ch.n_added);
    s->n_added = ch.n_added;
    s->removed = names_of(c, g, ch.removed, ch.n_removed);
    s->n_removed = ch.n_removed;
    s->prov_old = names_of(c, g, pairs.po, pairs.n);
    s->prov_new = names_of(c, g, pairs.pn, pairs.n);
    s->n_prov = pairs.n;
    s->scaffold = names_of(c, g, pairs.scaffold, pairs.n_scaffold);
    s->n_scaffold = pairs.n_scaffold;
    /* reads the log as indexed: the provenance edits below are not part of it */
    if (!c->trace->no_edits) build_edits(c, s, &lx);
  }
  log_index_free(&lx);
  ox_provenance_apply(g, pairs.po, pairs.pn, pairs.n, ch.added, ch.n_added, pairs.scaffold, pairs.n_scaffold,
                      c->matched_ids, c->n_matched_ids);
  c->step_added = ch.added;
  c->n_step_added = ch.n_added;
  c->step_removed = ch.removed;
  c->n_step_removed = ch.n_removed;
  c->step_rewired = ch.rewired;
  c->n_step_rewired = ch.n_rewired;
  c->step_prov_old = pairs.po;
  c->step_prov_new = pairs.pn;
  c->n_step_prov = pairs.n;
  c->n_step_replaced = n_replaced;
  bool ok = c->checks ? ox_checks_run(c, s) : true;
  c->step_added = c->step_removed = c->step_rewired = c->step_prov_old = c->step_prov_new = NULL;
  c->n_step_added = c->n_step_removed = c->n_step_rewired = c->n_step_prov = c->n_step_replaced = 0;
  bool keep = ok || (c->checks && c->checks->keep_failed);
  if (!ok) {
    for (int k = 0; k < OX_CHECK_KINDS; k++)
      if (s->checks[k].status == OX_CHECK_FAILED) {
        s->reason = ox_reason(c, OX_REASON_CHECK_FAILED, ox_check_kind_name((OxCheckKind)k),
                              s->checks[k].detail ? s->checks[k].detail : "", NULL);
        break;
      }
  }
  if (keep)
    ox_graph_txn_commit(g);
  else
    ox_graph_txn_rollback(g);
  if (keep) budget_charge(c);
  s->seconds = now_s() - c->t_start;
  if (c->trace) {
    OxStep *dst = ox_trace_add_step(c->trace, ok ? OX_STEP_APPLIED : OX_STEP_CHECK_FAILED);
    uint32_t seq = dst->seq;
    *dst = *s;
    dst->seq = seq;
    dst->kind = (uint8_t)(ok ? OX_STEP_APPLIED : OX_STEP_CHECK_FAILED);
    if (keep) dst->applied_index = ++c->trace->n_graph_steps;
  }
  changes_free(&ch);
  free(pairs.po);
  free(pairs.pn);
  free(pairs.scaffold);
  keymap_free(&pairs.seen);
  keymap_free(&pairs.news);
  c->in_step = false;
  return ok;
}

void ox_step_reject(OxPassCtx *c, const char *rule, OxNodeId anchor, const OxNodeId *nodes, uint32_t n,
                    const OxReason *reason) {
  if (!c->trace || !c->record_rejections) return;
  OxStep *s = ox_trace_add_step(c->trace, OX_STEP_REJECTED);
  if (c->trace->no_rejections) return; /* counted, not kept */
  s->pass = ox_trace_intern(c->trace, c->pass ? c->pass->name : "?");
  s->phase = c->pass && c->pass->phase == OX_PHASE_POST ? "post" : "pre";
  s->rule = ox_trace_intern(c->trace, rule);
  const OxNode *a = ox_graph_node(c->g, anchor);
  s->anchor = a ? ox_trace_intern(c->trace, a->name) : NULL;
  s->matched = names_of(c, c->g, nodes, n);
  s->n_matched = n;
  if (reason) s->reason = *reason;
}

OxReason ox_reason_nodes(OxPassCtx *c, OxReasonCode code, const char *const *args, uint32_t n, const bool *is_node) {
  OxReason r;
  memset(&r, 0, sizeof r);
  r.code = (uint16_t)code;
  if (n > OX_REASON_MAX_ARGS) n = OX_REASON_MAX_ARGS;
  r.n_args = (uint8_t)n;
  for (uint32_t i = 0; i < n; i++) {
    r.args[i] = c->trace ? ox_trace_intern(c->trace, args[i] ? args[i] : "") : NULL;
    r.nodes[i] = (is_node && is_node[i]) ? r.args[i] : NULL;
  }
  return r;
}

OxReason ox_reason_va(OxPassCtx *c, OxReasonCode code, bool mark_nodes, va_list ap) {
  const char *args[OX_REASON_MAX_ARGS];
  uint32_t n = 0;
  for (;;) {
    const char *a = va_arg(ap, const char *);
    if (!a || n == OX_REASON_MAX_ARGS) break;
    args[n++] = a;
  }
  if (!mark_nodes) return ox_reason_nodes(c, code, args, n, NULL);
  /* an argument that names a live node is a node reference (a link in the debugger) */
  bool is_node[OX_REASON_MAX_ARGS] = {false};
  for (uint32_t i = 0; i < n; i++) is_node[i] = c->g && args[i] && ox_graph_find(c->g, args[i]) != 0;
  return ox_reason_nodes(c, code, args, n, is_node);
}

OxReason ox_reason(OxPassCtx *c, OxReasonCode code, ...) {
  va_list ap;
  va_start(ap, code);
  OxReason r = ox_reason_va(c, code, true, ap);
  va_end(ap);
  return r;
}
