/* ox_graph.c - the graph IR: values, nodes, mutation, ordering and the verifier.
 *
 * Invariants (see ox_graph.h): users[] of every live node lists exactly the live nodes
 * that reference it, once each, in the order the uses were added; names of live nodes are
 * unique and indexed in g->name_ids. Every mutation keeps both. Adding a user never scans the
 * list (a node with 1e6 users loads in linear time): callers add a user only where it is not
 * listed yet, and a repeated input of one node is always the last entry. Dicts hold each key
 * once (ox_graph_value_dict).
 *
 * Ownership of value trees: a node takes the value trees passed to it as they are (no
 * copy, so loading stays cheap). Containers must not be shared between two nodes, because
 * replace_all_uses rewrites node references in place; a pass that reuses part of one
 * node's args in another node copies it with ox_graph_value_copy.
 *
 * Erasing unlinks the node from the order but keeps its own prev/next, so an iterator
 * standing on it can continue (torch.fx does the same).
 */
#include "ir/ox_graph.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"

/* ------------------------------------------------------------------ ops */

static const char *const op_names[OX_OP_COUNT] = {
  "placeholder", "get_attr", "call_function", "call_method", "call_module", "output",
};

const char *ox_op_name(OxOp op) { return (unsigned)op < OX_OP_COUNT ? op_names[op] : "?"; }

bool ox_op_from_name(const char *s, size_t n, OxOp *out) {
  for (int i = 0; i < OX_OP_COUNT; i++) {
    if (strlen(op_names[i]) == n && memcmp(op_names[i], s, n) == 0) {
      *out = (OxOp)i;
      return true;
    }
  }
  return false;
}

/* ------------------------------------------------------------------ values */

OxValue ox_value_none(void) {
  OxValue v;
  memset(&v, 0, sizeof v);
  return v;
}

OxValue ox_value_bool(bool b) {
  OxValue v = ox_value_none();
  v.kind = OX_V_BOOL;
  v.u.b = b;
  return v;
}

OxValue ox_value_int(int64_t i) {
  OxValue v = ox_value_none();
  v.kind = OX_V_INT;
  v.u.i = i;
  return v;
}

OxValue ox_value_float(double f) {
  OxValue v = ox_value_none();
  v.kind = OX_V_FLOAT;
  v.u.f = f;
  return v;
}

OxValue ox_value_node(OxNodeId id) {
  OxValue v = ox_value_none();
  v.kind = OX_V_NODE;
  v.u.node = id;
  return v;
}

OxValue ox_value_dtype(OxDType t) {
  OxValue v = ox_value_none();
  v.kind = OX_V_DTYPE;
  v.u.dtype = t;
  return v;
}

static bool str_eq(const char *a, const char *b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return strcmp(a, b) == 0;
}

bool ox_value_equal(const OxValue *a, const OxValue *b) {
  if (a->kind != b->kind) return false;
  switch ((OxValueKind)a->kind) {
  case OX_V_NONE:
  case OX_V_ELLIPSIS: return true;
  case OX_V_BOOL: return a->u.b == b->u.b;
  case OX_V_INT: return a->u.i == b->u.i;
  case OX_V_FLOAT:
    if (isnan(a->u.f)) return isnan(b->u.f);
    return a->u.f == b->u.f && signbit(a->u.f) == signbit(b->u.f);
  case OX_V_NODE: return a->u.node == b->u.node;
  case OX_V_DTYPE: return a->u.dtype == b->u.dtype && str_eq(a->s, b->s);
  case OX_V_STR:
  case OX_V_SYM:
  case OX_V_DEVICE:
  case OX_V_ENUM:
  case OX_V_RAW: return str_eq(a->s, b->s);
  case OX_V_LIST:
  case OX_V_TUPLE:
  case OX_V_SLICE:
  case OX_V_DICT:
    if (a->n != b->n) return false;
    for (uint32_t i = 0; i < a->n; i++) {
      if (a->kind == OX_V_DICT && !str_eq(a->keys[i], b->keys[i])) return false;
      if (!ox_value_equal(&a->u.items[i], &b->u.items[i])) return false;
    }
    return true;
  }
  return false;
}

static bool is_container(const OxValue *v) {
  return v->kind == OX_V_LIST || v->kind == OX_V_TUPLE || v->kind == OX_V_DICT ||
         v->kind == OX_V_SLICE;
}

void ox_value_foreach_node(const OxValue *v, OxValueNodeFn fn, void *data) {
  if (v->kind == OX_V_NODE) {
    fn(v->u.node, data);
  } else if (is_container(v)) {
    for (uint32_t i = 0; i < v->n; i++) ox_value_foreach_node(&v->u.items[i], fn, data);
  }
}

static void txn_clear(OxGraph *g);
static void metatab_free(struct OxMetaTab *m);

/* ------------------------------------------------------------------ graph lifetime */

/* The node array and the order links grow together (cap_nodes entries each). */
static void nodes_resize(OxGraph *g, uint32_t cap) {
  g->nodes = ox_big_realloc(g->nodes, (size_t)g->cap_nodes * sizeof *g->nodes, (size_t)cap * sizeof *g->nodes);
  g->link = ox_big_realloc(g->link, (size_t)g->cap_nodes * sizeof *g->link, (size_t)cap * sizeof *g->link);
  g->cap_nodes = cap;
}

static OxGraph *graph_new(OxStrTab *strings) {
  OxGraph *g = ox_xcalloc(1, sizeof *g);
  g->cap_nodes = 64;
  g->nodes = ox_big_realloc(NULL, 0, g->cap_nodes * sizeof *g->nodes);
  memset(g->nodes, 0, g->cap_nodes * sizeof *g->nodes);
  g->link = ox_xcalloc(g->cap_nodes, sizeof *g->link);
  g->n_nodes = 1; /* id 0 = none */
  /* strings in the table's own arena, so that another graph (a trace's pool) can share them */
  g->strings = strings ? ox_strtab_ref(strings) : ox_strtab_new(NULL);
  g->strings_tag = ox_strtab_tag(g->strings);
  g->name_counters = ox_namemap_new();
  g->name = ox_graph_intern(g, "graph");
  return g;
}

OxGraph *ox_graph_new(void) { return graph_new(NULL); }

OxGraph *ox_graph_new_sharing_strings(OxGraph *other) { return graph_new(other->strings); }

void ox_graph_free(OxGraph *g) {
  if (!g) return;
  for (uint32_t i = 0; i < g->n_subgraphs; i++) ox_graph_free(g->subgraphs[i]);
  free(g->subgraphs);
  ox_big_free(g->nodes, (size_t)g->cap_nodes * sizeof *g->nodes);
  ox_big_free(g->link, (size_t)g->cap_nodes * sizeof *g->link);
  free(g->mark);
  for (int k = 0; k < OX_GRAPH_KEYSLOTS; k++) {
    free(g->keyslots[k].gen);
    free(g->keyslots[k].val);
  }
  free(g->olab);
  free(g->opix);
  metatab_free(g->metatab);
  txn_clear(g);
  free(g->txn);
  free(g->txn_mark);
  free(g->txn_args_mark);
  free(g->ref_names);
  ox_arena_free(&g->shape_scratch);
  ox_arena_free(&g->txn_scratch);
  ox_strtab_free(g->strings);
  free(g->name_ids);
  ox_namemap_free(g->foreign_names);
  ox_namemap_free(g->name_counters);
  ox_arena_free(&g->arena);
  free(g);
}

const char *ox_graph_intern_n(OxGraph *g, const char *s, size_t n) {
  return ox_strtab_intern(g->strings, s, n);
}

const char *ox_graph_intern(OxGraph *g, const char *s) {
  return s ? ox_strtab_intern(g->strings, s, strlen(s)) : NULL;
}

void *ox_graph_alloc(OxGraph *g, size_t size) { return ox_arena_alloc(&g->arena, size); }

/* Epoch marks: a fresh epoch makes every mark stale in O(1). */
static uint32_t mark_begin(OxGraph *g) {
  if (g->mark_cap < g->n_nodes) {
    uint32_t cap = g->cap_nodes;
    g->mark = ox_xrealloc(g->mark, cap * sizeof *g->mark);
    memset(g->mark + g->mark_cap, 0, (cap - g->mark_cap) * sizeof *g->mark);
    g->mark_cap = cap;
  }
  if (++g->epoch == 0) {
    memset(g->mark, 0, g->mark_cap * sizeof *g->mark);
    g->epoch = 1;
  }
  return g->epoch;
}

/* ------------------------------------------------------------------ key slots */

void ox_graph_keyslot_grow(OxGraph *g, int k, uint32_t keys, bool values) {
  struct OxKeySlot *s = &g->keyslots[k];
  if (keys > s->cap) {
    uint32_t cap = s->cap ? s->cap : 1024;
    while (cap < keys) cap = cap <= UINT32_MAX / 2 ? cap * 2 : keys;
    s->gen = ox_xrealloc(s->gen, (size_t)cap * sizeof *s->gen);
    memset(s->gen + s->cap, 0, (size_t)(cap - s->cap) * sizeof *s->gen);
    if (s->val) s->val = ox_xrealloc(s->val, (size_t)cap * sizeof *s->val);
    s->cap = cap;
  }
  if (values && !s->val) s->val = ox_xrealloc(NULL, (size_t)s->cap * sizeof *s->val);
}

void ox_graph_keyslot_clear(OxGraph *g, int k) {
  struct OxKeySlot *s = &g->keyslots[k];
  if (++s->epoch == 0) { /* wrapped: forget every old mark */
    if (s->cap) memset(s->gen, 0, (size_t)s->cap * sizeof *s->gen);
    s->epoch = 1;
  }
}

int ox_graph_keyslot_acquire(OxGraph *g, uint32_t keys) {
  for (int k = 0; k < OX_GRAPH_KEYSLOTS; k++) {
    if (g->keyslots[k].busy) continue;
    g->keyslots[k].busy = true;
    ox_graph_keyslot_grow(g, k, keys, false);
    ox_graph_keyslot_clear(g, k);
    return k;
  }
  return -1;
}

void ox_graph_keyslot_release(OxGraph *g, int k) {
  if (k >= 0 && k < OX_GRAPH_KEYSLOTS) g->keyslots[k].busy = false;
}

/* ------------------------------------------------------------------ transaction log */

static OxEdit *txn_push(OxGraph *g, OxEditKind kind, OxNodeId node) {
  if (g->n_txn == g->cap_txn) {
    g->cap_txn = g->cap_txn ? g->cap_txn * 2 : 32;
    g->txn = ox_xrealloc(g->txn, g->cap_txn * sizeof *g->txn);
  }
  OxEdit *e = &g->txn[g->n_txn++];
  memset(e, 0, sizeof *e);
  e->kind = (uint8_t)kind;
  e->node = node;
  return e;
}

static bool txn_logging(const OxGraph *g) { return g->txn_active && !g->txn_replaying; }

/* Slot of node id in a per-node serial array (grown to the node capacity, zero-filled). */
static uint32_t *serial_slot(const OxGraph *g, uint32_t **arr, uint32_t *cap, OxNodeId id) {
  if (*cap <= id) {
    uint32_t c = g->cap_nodes > id ? g->cap_nodes : id + 1;
    *arr = ox_xrealloc(*arr, c * sizeof **arr);
    memset(*arr + *cap, 0, (c - *cap) * sizeof **arr);
    *cap = c;
  }
  return &(*arr)[id];
}

/* A copy of ids[0, n) for the transaction log, in txn_scratch (a malloc and a free per
 * snapshot were ~2 % of an optimization: 214k snapshots at 100k nodes). */
static OxNodeId *txn_ids(OxGraph *g, const OxNodeId *ids, uint32_t n) {
  OxNodeId *r = ox_arena_alloc(&g->txn_scratch, (n ? n : 1) * sizeof *r);
  if (n) memcpy(r, ids, n * sizeof *r);
  return r;
}

static void txn_snapshot_users(OxGraph *g, OxNodeId id) {
  if (!txn_logging(g)) return;
  uint32_t *m = serial_slot(g, &g->txn_mark, &g->txn_mark_cap, id);
  if (*m == g->txn_serial) return;
  *m = g->txn_serial;
  OxNode *n = &g->nodes[id];
  OxEdit *e = txn_push(g, OX_EDIT_USERS, id);
  e->old_n = n->n_users;
  e->old_ids = txn_ids(g, n->users, n->n_users);
}

static void txn_clear(OxGraph *g) {
  g->n_txn = 0; /* the logged id arrays are in txn_scratch, rewound at the next begin */
}

void ox_graph_txn_begin(OxGraph *g) {
  assert(!g->txn_active);
  txn_clear(g);
  ox_arena_rewind(&g->txn_scratch);
  g->txn_active = true;
  g->txn_topo_known = g->topo_known;
  if (++g->txn_serial == 0) {
    if (g->txn_mark) memset(g->txn_mark, 0, g->txn_mark_cap * sizeof *g->txn_mark);
    if (g->txn_args_mark) memset(g->txn_args_mark, 0, g->txn_args_mark_cap * sizeof *g->txn_args_mark);
    g->txn_serial = 1;
  }
}

void ox_graph_txn_commit(OxGraph *g) {
  g->txn_active = false;
  /* the log stays readable (ox_graph_txn_edits) until the next begin */
}

const OxEdit *ox_graph_txn_edits(const OxGraph *g, uint32_t *n) {
  *n = g->n_txn;
  return g->txn;
}

/* ------------------------------------------------------------------ values in the arena */

OxValue ox_graph_value_str(OxGraph *g, OxValueKind kind, const char *s) {
  OxValue v = ox_value_none();
  v.kind = (uint8_t)kind;
  v.s = ox_graph_intern(g, s ? s : "");
  return v;
}

OxValue ox_graph_value_seq(OxGraph *g, OxValueKind kind, const OxValue *items, uint32_t n) {
  OxValue v = ox_value_none();
  v.kind = (uint8_t)kind;
  v.n = n;
  v.u.items = n ? ox_arena_alloc(&g->arena, n * sizeof(OxValue)) : NULL;
  if (n) memcpy(v.u.items, items, n * sizeof(OxValue));
  return v;
}

typedef struct KeyAt {
  const char *key; /* interned: equal keys are equal pointers */
  uint32_t at;
} KeyAt;

static int cmp_key_at(const void *a, const void *b) {
  const KeyAt *x = a, *y = b;
  if (x->key != y->key) return (uintptr_t)x->key < (uintptr_t)y->key ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

OxValue ox_graph_value_dict(OxGraph *g, const char *const *keys, const OxValue *items, uint32_t n) {
  OxValue v = ox_graph_value_seq(g, OX_V_DICT, items, n);
  v.keys = n ? ox_arena_alloc(&g->arena, n * sizeof(char *)) : NULL;
  for (uint32_t i = 0; i < n; i++) v.keys[i] = ox_graph_intern(g, keys[i]);
  if (n < 2) return v;
  /* A key given twice keeps its first place and its last value, as a Python dict literal does
   * (a damaged dump, a hand-made JSON file): a dict never holds a key twice, so every writer and
   * reader sees the same dict. Sorted copies of (key, index) find repeats in O(n log n). */
  KeyAt *ka = ox_xrealloc(NULL, n * sizeof *ka);
  for (uint32_t i = 0; i < n; i++) ka[i] = (KeyAt){v.keys[i], i};
  qsort(ka, n, sizeof *ka, cmp_key_at);
  bool dup = false;
  uint8_t *drop = NULL;
  for (uint32_t i = 0; i < n;) {
    uint32_t j = i;
    while (j + 1 < n && ka[j + 1].key == ka[i].key) j++;
    if (j > i) {
      if (!drop) drop = ox_xcalloc(n, 1);
      dup = true;
      v.u.items[ka[i].at] = v.u.items[ka[j].at]; /* first place, last value */
      for (uint32_t k = i + 1; k <= j; k++) drop[ka[k].at] = 1;
    }
    i = j + 1;
  }
  if (dup) {
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
      if (!drop[i]) {
        v.u.items[m] = v.u.items[i];
        v.keys[m++] = v.keys[i];
      }
    v.n = m;
  }
  free(drop);
  free(ka);
  return v;
}

/* Structural copy of a tree of g into arena a; its strings are g's and stay shared. */
static OxValue value_dup(OxArena *a, const OxValue *src) {
  OxValue v = *src;
  if (is_container(src)) {
    v.u.items = src->n ? ox_arena_alloc(a, src->n * sizeof(OxValue)) : NULL;
    for (uint32_t i = 0; i < src->n; i++) v.u.items[i] = value_dup(a, &src->u.items[i]);
    if (src->kind == OX_V_DICT && src->n) {
      v.keys = ox_arena_alloc(a, src->n * sizeof(char *));
      memcpy(v.keys, src->keys, src->n * sizeof(char *));
    }
  }
  return v;
}

/* intern: false when src's strings are already g's (the same string table) */
static OxValue value_copy(OxGraph *g, const OxValue *src, bool intern) {
  OxValue v = *src;
  if (src->s && intern) v.s = ox_graph_intern(g, src->s);
  if (is_container(src)) {
    v.u.items = src->n ? ox_arena_alloc(&g->arena, src->n * sizeof(OxValue)) : NULL;
    for (uint32_t i = 0; i < src->n; i++) v.u.items[i] = value_copy(g, &src->u.items[i], intern);
    if (src->kind == OX_V_DICT) {
      v.keys = src->n ? ox_arena_alloc(&g->arena, src->n * sizeof(char *)) : NULL;
      for (uint32_t i = 0; i < src->n; i++) v.keys[i] = intern ? ox_graph_intern(g, src->keys[i]) : src->keys[i];
    }
  }
  return v;
}

OxValue ox_graph_value_copy(OxGraph *g, const OxValue *src) { return value_copy(g, src, true); }

bool ox_value_remap_nodes(OxValue *v, const OxNodeId *map, uint32_t n) {
  if (v->kind == OX_V_NODE) {
    if (v->u.node >= n || !map[v->u.node]) return false;
    v->u.node = map[v->u.node];
    return true;
  }
  if (is_container(v))
    for (uint32_t i = 0; i < v->n; i++)
      if (!ox_value_remap_nodes(&v->u.items[i], map, n)) return false;
  return true;
}

/* ------------------------------------------------------------------ users */

/* Appends user to nid's users in amortized O(1): no scan of the list (a node with 1e6 users
 * loads in linear time). Callers guarantee user is not already listed, except for a node that
 * references the same input twice (add(x, x)): node_uses visits x twice in one call, and
 * since only this user is appended meanwhile, a repeat is always the last entry. */
/* Users arrays live in the graph's arena: a grown array leaves its old copy there (at most as
 * much again as the arrays hold), and none is freed one by one (a malloc, realloc and free per
 * node were ~2 % of an optimization at 100k nodes). */
static void users_reserve(OxGraph *g, OxNode *n, uint32_t cap) {
  if (cap <= n->cap_users) return;
  OxNodeId *u = ox_arena_alloc(&g->arena, (size_t)cap * sizeof *u);
  if (n->n_users) memcpy(u, n->users, n->n_users * sizeof *u);
  n->users = u;
  n->cap_users = cap;
}

static void users_add(OxGraph *g, OxNodeId nid, OxNodeId user) {
  OxNode *n = &g->nodes[nid];
  if (n->n_users && n->users[n->n_users - 1] == user) return;
  txn_snapshot_users(g, nid);
  n = &g->nodes[nid];
  if (n->n_users == n->cap_users) users_reserve(g, n, n->cap_users ? n->cap_users * 2 : 2);
  n->users[n->n_users++] = user;
}

static void users_remove(OxGraph *g, OxNodeId nid, OxNodeId user) {
  OxNode *n = &g->nodes[nid];
  for (uint32_t i = 0; i < n->n_users; i++) {
    if (n->users[i] == user) {
      txn_snapshot_users(g, nid);
      memmove(n->users + i, n->users + i + 1, (n->n_users - i - 1) * sizeof *n->users);
      n->n_users--;
      return;
    }
  }
}

typedef struct {
  OxGraph *g;
  uint32_t epoch;
  OxNodeId *out;
  uint32_t n, max;
} CollectCtx;

static void collect_cb(OxNodeId id, void *data) {
  CollectCtx *c = data;
  if (!id || id >= c->g->n_nodes) return;
  if (c->g->mark[id] == c->epoch) return;
  c->g->mark[id] = c->epoch;
  if (c->n < c->max) c->out[c->n] = id;
  c->n++;
}

uint32_t ox_graph_inputs(const OxGraph *cg, OxNodeId id, OxNodeId *out, uint32_t max) {
  OxGraph *g = (OxGraph *)cg; /* marks are scratch, not observable state */
  OxNode *n = ox_graph_node(g, id);
  if (!n) return 0;
  CollectCtx c = {g, mark_begin(g), out, 0, max};
  ox_value_foreach_node(&n->args, collect_cb, &c);
  ox_value_foreach_node(&n->kwargs, collect_cb, &c);
  return c.n;
}

typedef struct {
  uint32_t n_nodes;
  OxNodeId *out;
  uint32_t n, max;
} CollectRCtx;

static void collect_r_cb(OxNodeId id, void *data) {
  CollectRCtx *c = data;
  if (!id || id >= c->n_nodes || c->n == c->max) return;
  for (uint32_t i = 0; i < c->n; i++)
    if (c->out[i] == id) return;
  c->out[c->n++] = id;
}

uint32_t ox_graph_inputs_r(const OxGraph *g, OxNodeId id, OxNodeId *out, uint32_t max) {
  const OxNode *n = ox_graph_node(g, id);
  if (!n) return 0;
  CollectRCtx c = {g->n_nodes, out, 0, max};
  ox_value_foreach_node(&n->args, collect_r_cb, &c);
  ox_value_foreach_node(&n->kwargs, collect_r_cb, &c);
  return c.n;
}

static bool value_has_node(const OxValue *v, OxNodeId id) {
  if (v->kind == OX_V_NODE) return v->u.node == id;
  if (is_container(v))
    for (uint32_t i = 0; i < v->n; i++)
      if (value_has_node(&v->u.items[i], id)) return true;
  return false;
}

bool ox_graph_has_input(const OxGraph *g, OxNodeId id, OxNodeId input) {
  const OxNode *n = ox_graph_node(g, id);
  return n && input && (value_has_node(&n->args, input) || value_has_node(&n->kwargs, input));
}

typedef struct {
  OxGraph *g;
  OxNodeId user;
  bool add;
} UseCtx;

static void use_cb(OxNodeId id, void *data) {
  UseCtx *c = data;
  if (!ox_graph_node(c->g, id)) return;
  if (c->add)
    users_add(c->g, id, c->user);
  else
    users_remove(c->g, id, c->user);
}

/* Precondition for add: id is listed as a user of none of its inputs (a new node, a node
 * whose uses were just removed, an erased node brought back). A repeated input is then the
 * last entry of its users (users_add skips it); users_remove is called for every reference,
 * harmless since the user is present at most once. */
static void node_uses(OxGraph *g, OxNodeId id, bool add) {
  OxNode *n = &g->nodes[id];
  UseCtx c = {g, id, add};
  OxValue args = n->args, kwargs = n->kwargs;
  ox_value_foreach_node(&args, use_cb, &c);
  ox_value_foreach_node(&kwargs, use_cb, &c);
}

/* ------------------------------------------------------------------ naming */

static bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Base name from a target, as torch.fx derives it: torch.ops.aten.split_with_sizes.default
 * -> split_with_sizes, operator.getitem -> getitem, layer1.0.conv -> layer1_0_conv. */
static void base_from_target(OxOp op, const char *target, char *out, size_t cap) {
  const char *t = target ? target : "node";
  const char *src; /* the part of the target the name is made of: src[0, len) */
  size_t len;
  if (op == OX_OP_CALL_MODULE || op == OX_OP_GET_ATTR || op == OX_OP_PLACEHOLDER) {
    src = t;
    len = strlen(t);
  } else if (strncmp(t, "torch.ops.", 10) == 0) {
    /* torch.ops.NS.OP[.OVERLOAD] */
    const char *p = t + 10;
    const char *dot = strchr(p, '.');
    src = dot ? dot + 1 : p;
    const char *end = strchr(src, '.');
    len = end ? (size_t)(end - src) : strlen(src);
  } else {
    const char *dot = strrchr(t, '.');
    src = dot ? dot + 1 : t;
    len = strlen(src);
  }
  if (len > 255) len = 255; /* as long as names made from targets ever were */
  size_t o = 0;
  for (size_t i = 0; i < len && o + 1 < cap; i++) out[o++] = is_ident_char(src[i]) ? src[i] : '_';
  if (o == 0 || (out[0] >= '0' && out[0] <= '9')) {
    memmove(out + 1, out, o < cap - 1 ? o : cap - 2);
    out[0] = '_';
    o = o + 1 < cap ? o + 1 : cap - 1;
  }
  out[o] = 0;
}

/* interned: want is a string of g's table already */
/* ------------------------------------------------------------------ names
 *
 * The live name -> id map is an array indexed by the name's id in the graph's string table
 * (every name is interned there). A string of another table (none should come here: the
 * sanitizer build would report reading its head) is kept in a pointer-keyed map instead. */

static inline uint32_t names_get(const OxGraph *g, const char *interned) {
  uint32_t k = ox_strtab_id(g->strings_tag, interned);
  if (!k) return g->foreign_names ? ox_namemap_get(g->foreign_names, interned) : 0;
  return k < g->cap_name_ids ? g->name_ids[k] : 0;
}

static void names_set(OxGraph *g, const char *interned, OxNodeId id) {
  uint32_t k = ox_strtab_id(g->strings_tag, interned);
  if (!k) {
    if (!g->foreign_names) g->foreign_names = ox_namemap_new();
    ox_namemap_set(g->foreign_names, interned, id);
    return;
  }
  if (k >= g->cap_name_ids) {
    uint32_t cap = g->cap_name_ids ? g->cap_name_ids : 64, want = ox_strtab_id_limit(ox_strtab_count(g->strings));
    while (cap <= k) cap *= 2;
    if (cap < want) cap = want;
    g->name_ids = ox_xrealloc(g->name_ids, (size_t)cap * sizeof *g->name_ids);
    memset(g->name_ids + g->cap_name_ids, 0, (size_t)(cap - g->cap_name_ids) * sizeof *g->name_ids);
    g->cap_name_ids = cap;
  }
  g->name_ids[k] = id;
}

void ox_graph_reserve_names(OxGraph *g, size_t n) {
  size_t want = ox_strtab_id_limit(ox_strtab_count(g->strings)) + n;
  if (want <= g->cap_name_ids || want >= UINT32_MAX) return;
  g->name_ids = ox_xrealloc(g->name_ids, want * sizeof *g->name_ids);
  memset(g->name_ids + g->cap_name_ids, 0, (want - g->cap_name_ids) * sizeof *g->name_ids);
  g->cap_name_ids = (uint32_t)want;
}

static inline void names_del(OxGraph *g, const char *interned) {
  uint32_t k = ox_strtab_id(g->strings_tag, interned);
  if (!k) {
    if (g->foreign_names) ox_namemap_del(g->foreign_names, interned);
  } else if (k < g->cap_name_ids) {
    g->name_ids[k] = 0;
  }
}

static const char *unique_name(OxGraph *g, const char *want, bool interned) {
  size_t len = strlen(want);
  const char *w = interned ? want : ox_graph_intern_n(g, want, len);
  if (!names_get(g, w)) return w;
  /* strip a trailing _N so "add_1" taken yields "add_2", not "add_1_1" */
  size_t j = len;
  while (j > 0 && want[j - 1] >= '0' && want[j - 1] <= '9') j--;
  size_t base_len = len;
  if (j < len && j > 1 && want[j - 1] == '_') base_len = j - 1;
  const char *base = base_len == len ? w : ox_graph_intern_n(g, want, base_len);
  uint32_t k = ox_namemap_get(g->name_counters, base);
  if (k == 0) k = 1;
  char small[128];
  char *buf = base_len + 12 <= sizeof small ? small : ox_xrealloc(NULL, base_len + 12);
  memcpy(buf, want, base_len);
  buf[base_len] = '_';
  for (;;) {
    char digits[10];
    size_t nd = 0;
    for (uint32_t v = k; v; v /= 10) digits[nd++] = (char)('0' + v % 10);
    for (size_t i = 0; i < nd; i++) buf[base_len + 1 + i] = digits[nd - 1 - i];
    size_t n = base_len + 1 + nd;
    k++;
    /* interned at once (one probe, not a lookup and then an insert): a taken candidate is some
     * node's name, interned already, so no string is made for the taken ones */
    const char *cand = ox_graph_intern_n(g, buf, n);
    if (!names_get(g, cand)) {
      ox_namemap_set(g->name_counters, base, k);
      /* the next name of this base is most likely base_k: a pass makes its nodes in runs of
       * one kind (a getitem per member), so its string table slot is fetched now */
      if (n + 1 < sizeof small && buf == small) {
        nd = 0;
        for (uint32_t v = k; v; v /= 10) digits[nd++] = (char)('0' + v % 10);
        for (size_t i = 0; i < nd; i++) buf[base_len + 1 + i] = digits[nd - 1 - i];
        ox_strtab_prefetch(g->strings, buf, base_len + 1 + nd);
      }
      if (buf != small) free(buf);
      return cand;
    }
  }
}

bool ox_graph_rename(OxGraph *g, OxNodeId id, const char *name) {
  OxNode *n = ox_graph_node(g, id);
  if (!n || n->erased) return false;
  const char *w = ox_graph_intern(g, name);
  uint32_t other = names_get(g, w);
  if (other && other != id) return false;
  if (txn_logging(g)) txn_push(g, OX_EDIT_RENAME, id)->old_name = n->name;
  names_del(g, n->name);
  n->name = w;
  names_set(g, w, id);
  return true;
}

/* ------------------------------------------------------------------ creating nodes */

static void olab_place(OxGraph *g, OxNodeId id);

static void link_after(OxGraph *g, OxNodeId id, OxNodeId prev) {
  OxLink *n = &g->link[id];
  OxNodeId next = prev ? g->link[prev].next : g->head;
  n->prev = prev;
  n->next = next;
  if (prev)
    g->link[prev].next = id;
  else
    g->head = id;
  if (next)
    g->link[next].prev = id;
  else
    g->tail = id;
  g->order_dirty = true;
  olab_place(g, id);
}

static void unlink_node(OxGraph *g, OxNodeId id) {
  const OxLink *n = &g->link[id];
  if (n->prev)
    g->link[n->prev].next = n->next;
  else
    g->head = n->next;
  if (n->next)
    g->link[n->next].prev = n->prev;
  else
    g->tail = n->prev;
  g->order_dirty = true;
}

/* ------------------------------------------------------------------ order labels
 *
 * olab[id] strictly increases along the live order. A full labelling spaces labels 2^32 apart
 * (room for 2^32 nodes); an insertion takes the midpoint of its neighbours, or the neighbour's
 * label +- 2^32 at the ends. When neighbours are adjacent integers, a window around the node
 * doubles on both sides until its label range leaves every node of it a gap of at least 2^20,
 * and the window is relabelled evenly (or, if it covers the whole list, everything is). Erased
 * nodes keep stale labels that nobody reads. */

#define OLAB_SPACING ((uint64_t)1 << 32)
#define OLAB_MIN_GAP ((uint64_t)1 << 20)

static void olab_reserve(OxGraph *g) {
  if (g->olab_cap >= g->cap_nodes) return;
  g->olab = ox_xrealloc(g->olab, (size_t)g->cap_nodes * sizeof *g->olab);
  g->olab_cap = g->cap_nodes;
}

static void olab_relabel_all(OxGraph *g) {
  olab_reserve(g);
  uint64_t l = 0;
  for (OxNodeId id = g->head; id; id = g->link[id].next) g->olab[id] = (l += OLAB_SPACING);
  g->olab_on = true;
}

/* id has just been linked between its prev and next. */
static void olab_place(OxGraph *g, OxNodeId id) {
  if (!g->olab_on) return;
  olab_reserve(g);
  const OxLink *n = &g->link[id];
  uint64_t lo = n->prev ? g->olab[n->prev] : 0;
  uint64_t hi = n->next ? g->olab[n->next] : UINT64_MAX;
  if (!n->next && UINT64_MAX - lo > 2 * OLAB_SPACING) {
    g->olab[id] = lo + OLAB_SPACING;
    return;
  }
  if (!n->prev && hi > 2 * OLAB_SPACING) {
    g->olab[id] = hi - OLAB_SPACING;
    return;
  }
  if (hi - lo >= 2) {
    g->olab[id] = lo + (hi - lo) / 2;
    return;
  }
  OxNodeId a = id, b = id;
  uint64_t m = 1;
  for (uint32_t k = 1;; k *= 2) {
    for (uint32_t i = 0; i < k && g->link[a].prev; i++, m++) a = g->link[a].prev;
    for (uint32_t i = 0; i < k && g->link[b].next; i++, m++) b = g->link[b].next;
    bool all = !g->link[a].prev && !g->link[b].next;
    uint64_t L = g->link[a].prev ? g->olab[g->link[a].prev] : 0;
    uint64_t R = g->link[b].next ? g->olab[g->link[b].next] : UINT64_MAX;
    uint64_t step = (R - L) / (m + 1);
    if (all && step < OLAB_SPACING) {
      olab_relabel_all(g);
      return;
    }
    if (step >= OLAB_MIN_GAP) {
      uint64_t l = L;
      for (OxNodeId x = a;; x = g->link[x].next) {
        g->olab[x] = (l += step);
        if (x == b) break;
      }
      return;
    }
  }
}

const uint64_t *ox_graph_order_labels(OxGraph *g) {
  if (!g->olab_on) olab_relabel_all(g);
  return g->olab;
}

bool ox_graph_order_known_topological(const OxGraph *g) { return g->topo_known; }
bool ox_graph_txn_began_topological(const OxGraph *g) { return g->txn_active && g->txn_topo_known; }
void ox_graph_mark_order_topological(OxGraph *g) { g->topo_known = true; }

typedef struct {
  const OxGraph *g;
  uint64_t lab;
  bool ok;
} FwdCtx;

static void fwd_cb(OxNodeId in, void *data) {
  FwdCtx *c = data;
  if (!c->ok || !in || in >= c->g->n_nodes || c->g->nodes[in].erased) return;
  if (c->g->olab[in] >= c->lab) c->ok = false;
}

/* The uses of node id (its inputs) were just set or id was just placed: topo_known survives
 * only if every input precedes it. */
static void topo_note_inputs(OxGraph *g, OxNodeId id) {
  if (!g->topo_known) return;
  if (!g->olab_on) {
    g->topo_known = false;
    return;
  }
  if (g->nodes[id].erased) return;
  FwdCtx c = {g, g->olab[id], true};
  ox_value_foreach_node(&g->nodes[id].args, fwd_cb, &c);
  ox_value_foreach_node(&g->nodes[id].kwargs, fwd_cb, &c);
  if (!c.ok) g->topo_known = false;
}

/* id moved: its inputs must precede it and its users follow it. */
static void topo_note_moved(OxGraph *g, OxNodeId id) {
  topo_note_inputs(g, id);
  if (!g->topo_known) return;
  const OxNode *n = &g->nodes[id];
  for (uint32_t i = 0; i < n->n_users; i++)
    if (!g->nodes[n->users[i]].erased && g->olab[n->users[i]] <= g->olab[id]) {
      g->topo_known = false;
      return;
    }
}

void ox_graph_reserve(OxGraph *g, uint32_t n) {
  if (n >= UINT32_MAX - 1) n = UINT32_MAX - 2;
  uint32_t want = n + 1; /* id 0 is unused */
  if (want <= g->cap_nodes) return;
  nodes_resize(g, want);
  if (g->olab_on) olab_reserve(g);
  /* every node has a name: size the name map and the string table for them too. A loader that
   * interned the names while parsing has them in the table already (the FX text parser: 100k
   * names, and reserving 100k more rehashed 100k strings into 8 MB of slots for nothing), so
   * the table is sized for n strings, or what it holds if that is more */
  ox_graph_reserve_names(g, 0);
  size_t have = ox_strtab_count(g->strings);
  ox_strtab_reserve(g->strings, have > n ? have : n);
}

static OxNodeId new_node(OxGraph *g, OxOp op, const char *name, const char *target, OxValue args,
                         OxValue kwargs, bool interned) {
  if (g->n_nodes == g->cap_nodes) {
    nodes_resize(g, g->cap_nodes * 2);
    if (g->olab_on) olab_reserve(g);
  }
  OxNodeId id = g->n_nodes++;
  ox_graph_opix_stale(g, id);
  OxNode *n = &g->nodes[id];
  memset(n, 0, sizeof *n);
  n->id = id;
  n->op = (uint8_t)op;
  n->declared_users = -1;
  n->target = interned && target ? target : ox_graph_intern(g, target ? target : (op == OX_OP_OUTPUT ? "output" : ""));
  if (name && name[0]) {
    n->name = unique_name(g, name, interned); /* any length: names from dumps must survive intact */
  } else {
    char base[256];
    base_from_target(op, n->target, base, sizeof base);
    n->name = unique_name(g, base, false);
  }
  names_set(g, n->name, id);
  if (args.kind == OX_V_NONE) args = ox_graph_value_seq(g, OX_V_TUPLE, NULL, 0);
  if (kwargs.kind == OX_V_NONE) kwargs = ox_graph_value_dict(g, NULL, NULL, 0);
  assert(args.kind == OX_V_TUPLE && kwargs.kind == OX_V_DICT);
  n->args = args;
  n->kwargs = kwargs;
  g->n_live++;
  node_uses(g, id, true);
  if (txn_logging(g)) txn_push(g, OX_EDIT_ADD, id);
  return id;
}

/* Links a fresh node and records where it went, for the trace's edit script. */
static void place_new(OxGraph *g, OxNodeId id, OxNodeId prev) {
  link_after(g, id, prev);
  topo_note_inputs(g, id);
  if (txn_logging(g) && g->n_txn && g->txn[g->n_txn - 1].kind == OX_EDIT_ADD && g->txn[g->n_txn - 1].node == id)
    g->txn[g->n_txn - 1].now_prev = prev;
}

OxNodeId ox_graph_add_node(OxGraph *g, OxOp op, const char *name, const char *target, OxValue args,
                           OxValue kwargs) {
  OxNodeId id = new_node(g, op, name, target, args, kwargs, false);
  place_new(g, id, g->tail);
  return id;
}

OxNodeId ox_graph_add_node_interned(OxGraph *g, OxOp op, const char *name, const char *target, OxValue args,
                                    OxValue kwargs) {
  OxNodeId id = new_node(g, op, name, target, args, kwargs, true);
  place_new(g, id, g->tail);
  return id;
}

OxNodeId ox_graph_insert_before(OxGraph *g, OxNodeId anchor, OxOp op, const char *name,
                                const char *target, OxValue args, OxValue kwargs) {
  OxNodeId id = new_node(g, op, name, target, args, kwargs, false);
  place_new(g, id, anchor ? g->link[anchor].prev : g->tail);
  return id;
}

OxNodeId ox_graph_insert_after(OxGraph *g, OxNodeId anchor, OxOp op, const char *name,
                               const char *target, OxValue args, OxValue kwargs) {
  OxNodeId id = new_node(g, op, name, target, args, kwargs, false);
  place_new(g, id, anchor ? anchor : g->tail);
  return id;
}

void ox_graph_move_before(OxGraph *g, OxNodeId id, OxNodeId anchor) {
  if (id == anchor) return;
  OxEdit *e = txn_logging(g) ? txn_push(g, OX_EDIT_MOVE, id) : NULL;
  if (e) e->prev = g->link[id].prev;
  unlink_node(g, id);
  OxNodeId to = g->link[anchor].prev;
  link_after(g, id, to);
  if (e) g->txn[g->n_txn - 1].now_prev = to;
  topo_note_moved(g, id);
}

void ox_graph_move_after(OxGraph *g, OxNodeId id, OxNodeId anchor) {
  if (id == anchor) return;
  OxEdit *e = txn_logging(g) ? txn_push(g, OX_EDIT_MOVE, id) : NULL;
  if (e) e->prev = g->link[id].prev;
  unlink_node(g, id);
  link_after(g, id, anchor);
  if (e) g->txn[g->n_txn - 1].now_prev = anchor;
  topo_note_moved(g, id);
}

/* ------------------------------------------------------------------ mutation */

/* Logs the node's current trees before a change. A set_args/set_kwargs installs a new tree and
 * leaves the old one untouched, so the log keeps the old pointer; the tree just installed is not
 * snapshotted, so the node's args mark is cleared. */
static void txn_log_args(OxGraph *g, OxNodeId id) {
  if (!txn_logging(g)) return;
  OxEdit *e = txn_push(g, OX_EDIT_ARGS, id);
  OxNode *n = &g->nodes[id];
  e->old_args = n->args;
  e->old_kwargs = n->kwargs;
  if (g->txn_args_mark_cap > id) g->txn_args_mark[id] = 0;
}

void ox_graph_set_args(OxGraph *g, OxNodeId id, OxValue args) {
  txn_log_args(g, id);
  node_uses(g, id, false);
  if (args.kind == OX_V_NONE) args = ox_graph_value_seq(g, OX_V_TUPLE, NULL, 0);
  g->nodes[id].args = args;
  node_uses(g, id, true);
  topo_note_inputs(g, id);
}

void ox_graph_set_kwargs(OxGraph *g, OxNodeId id, OxValue kwargs) {
  txn_log_args(g, id);
  node_uses(g, id, false);
  if (kwargs.kind == OX_V_NONE) kwargs = ox_graph_value_dict(g, NULL, NULL, 0);
  g->nodes[id].kwargs = kwargs;
  ox_graph_opix_stale(g, id);
  node_uses(g, id, true);
  topo_note_inputs(g, id);
}

/* Rewrites references old -> new in one walk; *had_new tells whether new was referenced before
 * (positions are visited once, so a reference seen as new_id is an original one). */
static uint32_t value_rewire(OxValue *v, OxNodeId old_id, OxNodeId new_id, bool *had_new) {
  if (v->kind == OX_V_NODE) {
    if (new_id && v->u.node == new_id) *had_new = true;
    else if (v->u.node == old_id) {
      v->u.node = new_id;
      return 1;
    }
    return 0;
  }
  uint32_t c = 0;
  if (is_container(v))
    for (uint32_t i = 0; i < v->n; i++) c += value_rewire(&v->u.items[i], old_id, new_id, had_new);
  return c;
}

void ox_graph_replace_input(OxGraph *g, OxNodeId user, OxNodeId old_id, OxNodeId new_id) {
  if (old_id == new_id) return;
  assert(new_id && "replace_input needs a node to rewire to");
  uint32_t at = UINT32_MAX;
  if (txn_logging(g)) {
    /* The rewrite is in place. The first one of a node in a transaction logs a copy of its
     * trees as they were (what rollback restores); later ones log only (node, from, to). */
    uint32_t *m = serial_slot(g, &g->txn_args_mark, &g->txn_args_mark_cap, user);
    OxEdit *e;
    if (*m == g->txn_serial) {
      e = txn_push(g, OX_EDIT_REPLACE, user);
    } else {
      e = txn_push(g, OX_EDIT_ARGS, user);
      e->old_args = value_dup(&g->txn_scratch, &g->nodes[user].args);
      e->old_kwargs = value_dup(&g->txn_scratch, &g->nodes[user].kwargs);
      *m = g->txn_serial;
    }
    e->replace = true;
    e->from = old_id;
    e->to = new_id;
    at = g->n_txn - 1;
  }
  OxNode *u = &g->nodes[user];
  bool had_new = false;
  uint32_t c = value_rewire(&u->args, old_id, new_id, &had_new) + value_rewire(&u->kwargs, old_id, new_id, &had_new);
  if (at != UINT32_MAX) g->txn[at].to_was_input = had_new;
  if (!c) return;
  users_remove(g, old_id, user);
  if (new_id && !had_new) users_add(g, new_id, user); /* had_new: already a user of new */
  if (g->topo_known && new_id && new_id < g->n_nodes && !g->nodes[new_id].erased &&
      (!g->olab_on || g->olab[new_id] >= g->olab[user]))
    g->topo_known = false;
}

uint32_t ox_graph_replace_all_uses(OxGraph *g, OxNodeId old_id, OxNodeId new_id) {
  if (old_id == new_id) return 0;
  OxNode *old = &g->nodes[old_id];
  uint32_t n = old->n_users;
  OxNodeId *users = ox_xrealloc(NULL, (n ? n : 1) * sizeof *users);
  if (n) memcpy(users, old->users, n * sizeof *users);
  uint32_t changed = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (users[i] == new_id) continue; /* new may consume old (x -> f(x) replacing x) */
    ox_graph_replace_input(g, users[i], old_id, new_id);
    changed++;
  }
  free(users);
  return changed;
}

bool ox_graph_erase(OxGraph *g, OxNodeId id) {
  OxNode *n = ox_graph_node(g, id);
  if (!n || n->erased || n->n_users) return false;
  if (txn_logging(g)) txn_push(g, OX_EDIT_ERASE, id)->prev = g->link[id].prev;
  node_uses(g, id, false);
  unlink_node(g, id);
  n->erased = true;
  ox_graph_opix_stale(g, id);
  names_del(g, n->name);
  g->n_live--;
  return true;
}

/* ------------------------------------------------------------------ shared tensor metas
 *
 * A 100k-node graph has a handful of distinct tensor metas ("f32[64, 64][64, 1]cpu"), so the
 * graph keeps ONE arena copy of each distinct array of tensor metas (a node's t[0..n)) and
 * every node with that meta points at it. Symbols and devices are interned, so content
 * equality compares them by pointer. Shared arrays are read-only, so only callers that never
 * write through n->meta.t use them: the fx-text loader (ox_graph_meta_intern) and the trace
 * pool (ox_graph_set_meta_shared). ox_graph_set_meta keeps its contract of a private deep copy,
 * because existing code (tests) adjusts a node's meta in place after setting it. Either way a
 * meta change installs another array and never writes into the old one (the transaction log
 * keeps the old pointer, so rollback is exact). */

struct OxMetaTab {
  OxTensorMeta **slots;
  uint32_t *n, *hash;
  uint32_t cap, count;
};

static uint64_t mix64(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint32_t tmeta_hash(const OxTensorMeta *t, uint32_t n) {
  uint64_t h = n;
  for (uint32_t i = 0; i < n; i++) {
    const OxTensorMeta *x = &t[i];
    h = mix64(h, (uint64_t)x->dtype | ((uint64_t)(uint32_t)x->rank << 8) | ((uint64_t)x->has_stride << 40));
    h = mix64(h, (uint64_t)(uintptr_t)x->device);
    for (int32_t k = 0; k < x->rank; k++) {
      h = mix64(h, (uint64_t)x->shape[k].v ^ (uint64_t)(uintptr_t)x->shape[k].sym);
      if (x->stride) h = mix64(h, (uint64_t)x->stride[k].v ^ ((uint64_t)(uintptr_t)x->stride[k].sym << 1));
    }
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return (uint32_t)h;
}

static bool dims_same(const OxDim *a, const OxDim *b, int32_t n) {
  for (int32_t k = 0; k < n; k++)
    if (a[k].v != b[k].v || a[k].sym != b[k].sym) return false;
  return true;
}

static bool tmeta_same(const OxTensorMeta *a, const OxTensorMeta *b, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    const OxTensorMeta *x = &a[i], *y = &b[i];
    if (x->dtype != y->dtype || x->rank != y->rank || x->has_stride != y->has_stride || x->device != y->device)
      return false;
    if (x->rank > 0 && !dims_same(x->shape, y->shape, x->rank)) return false;
    if (x->rank > 0 && (!x->stride) != (!y->stride)) return false;
    if (x->rank > 0 && x->stride && !dims_same(x->stride, y->stride, x->rank)) return false;
  }
  return true;
}

static void metatab_insert(struct OxMetaTab *m, OxTensorMeta *t, uint32_t n, uint32_t h) {
  if ((m->count + 1) * 2 > m->cap) {
    struct OxMetaTab nt = {0};
    nt.cap = m->cap ? m->cap * 2 : 32;
    nt.slots = ox_xcalloc(nt.cap, sizeof *nt.slots);
    nt.n = ox_xcalloc(nt.cap, sizeof *nt.n);
    nt.hash = ox_xcalloc(nt.cap, sizeof *nt.hash);
    for (uint32_t i = 0; i < m->cap; i++)
      if (m->slots[i]) {
        uint32_t j = m->hash[i] & (nt.cap - 1);
        while (nt.slots[j]) j = (j + 1) & (nt.cap - 1);
        nt.slots[j] = m->slots[i];
        nt.n[j] = m->n[i];
        nt.hash[j] = m->hash[i];
      }
    nt.count = m->count;
    free(m->slots);
    free(m->n);
    free(m->hash);
    *m = nt;
  }
  uint32_t j = h & (m->cap - 1);
  while (m->slots[j]) j = (j + 1) & (m->cap - 1);
  m->slots[j] = t;
  m->n[j] = n;
  m->hash[j] = h;
  m->count++;
}

static void metatab_free(struct OxMetaTab *m) {
  if (!m) return;
  free(m->slots);
  free(m->n);
  free(m->hash);
  free(m);
}

/* t's strings must already be interned in g (pointer comparison). */
static OxTensorMeta *meta_share_interned(OxGraph *g, const OxTensorMeta *t, uint32_t n) {
  if (!g->metatab) g->metatab = ox_xcalloc(1, sizeof *g->metatab);
  struct OxMetaTab *m = g->metatab;
  uint32_t h = tmeta_hash(t, n);
  if (m->cap)
    for (uint32_t j = h & (m->cap - 1); m->slots[j]; j = (j + 1) & (m->cap - 1))
      if (m->hash[j] == h && m->n[j] == n && tmeta_same(m->slots[j], t, n)) return m->slots[j];
  OxTensorMeta *r = ox_arena_alloc(&g->arena, n * sizeof *r);
  for (uint32_t i = 0; i < n; i++) {
    r[i] = t[i];
    r[i].shape = r[i].stride = NULL;
    if (t[i].rank > 0) {
      r[i].shape = ox_arena_alloc(&g->arena, (size_t)t[i].rank * sizeof(OxDim));
      memcpy(r[i].shape, t[i].shape, (size_t)t[i].rank * sizeof(OxDim));
      if (t[i].stride) {
        r[i].stride = ox_arena_alloc(&g->arena, (size_t)t[i].rank * sizeof(OxDim));
        memcpy(r[i].stride, t[i].stride, (size_t)t[i].rank * sizeof(OxDim));
      }
    }
  }
  metatab_insert(m, r, n, h);
  return r;
}

/* Normalized copy of s with strings interned in g, into caller scratch (dims into dims[]). */
static OxTensorMeta norm_tmeta(OxGraph *g, const OxTensorMeta *s, OxDim *dims) {
  OxTensorMeta t = *s;
  t.device = s->device ? ox_graph_intern(g, s->device) : NULL;
  t.shape = t.stride = NULL;
  if (s->rank > 0) {
    t.shape = dims;
    for (int32_t i = 0; i < s->rank; i++) {
      t.shape[i] = s->shape[i];
      if (s->shape[i].sym) t.shape[i].sym = ox_graph_intern(g, s->shape[i].sym);
    }
    if (s->has_stride && s->stride) {
      t.stride = dims + s->rank;
      for (int32_t i = 0; i < s->rank; i++) {
        t.stride[i] = s->stride[i];
        if (s->stride[i].sym) t.stride[i].sym = ox_graph_intern(g, s->stride[i].sym);
      }
    }
  }
  if (!t.stride && t.rank > 0) t.has_stride = false; /* rank 0: "f32[][]" has (empty) strides */
  return t;
}

OxTensorMeta *ox_graph_meta_intern(OxGraph *g, const OxTensorMeta *t, uint32_t n) {
  if (!n || !t) return NULL;
  size_t ndims = 0;
  for (uint32_t i = 0; i < n; i++)
    if (t[i].rank > 0) ndims += 2 * (size_t)t[i].rank;
  OxTensorMeta stack_t[4];
  OxDim stack_d[32];
  OxTensorMeta *tmp = n <= 4 ? stack_t : ox_xrealloc(NULL, n * sizeof *tmp);
  OxDim *dims = ndims <= 32 ? stack_d : ox_xrealloc(NULL, ndims * sizeof *dims);
  size_t o = 0;
  for (uint32_t i = 0; i < n; i++) {
    tmp[i] = norm_tmeta(g, &t[i], dims + o);
    if (t[i].rank > 0) o += 2 * (size_t)t[i].rank;
  }
  OxTensorMeta *r = meta_share_interned(g, tmp, n);
  if (tmp != stack_t) free(tmp);
  if (dims != stack_d) free(dims);
  return r;
}

/* A private deep copy: the node may later be written in place (tests and older callers do). */
static OxTensorMeta *meta_copy_private(OxGraph *g, const OxTensorMeta *t, uint32_t n) {
  OxTensorMeta *r = ox_arena_alloc(&g->arena, n * sizeof *r);
  for (uint32_t i = 0; i < n; i++) {
    OxDim dims[2 * 64];
    OxDim *d = t[i].rank > 64 ? ox_xrealloc(NULL, 2 * (size_t)t[i].rank * sizeof *d) : dims;
    r[i] = norm_tmeta(g, &t[i], d);
    if (r[i].rank > 0) {
      OxDim *sh = ox_arena_alloc(&g->arena, (size_t)r[i].rank * sizeof(OxDim));
      memcpy(sh, r[i].shape, (size_t)r[i].rank * sizeof(OxDim));
      r[i].shape = sh;
      if (r[i].stride) {
        OxDim *st = ox_arena_alloc(&g->arena, (size_t)r[i].rank * sizeof(OxDim));
        memcpy(st, r[i].stride, (size_t)r[i].rank * sizeof(OxDim));
        r[i].stride = st;
      }
    }
    if (d != dims) free(d);
  }
  return r;
}

static OxMeta copy_meta(OxGraph *g, const OxMeta *m, bool shared) {
  OxMeta r = *m;
  r.sym = m->sym ? ox_graph_intern(g, m->sym) : NULL;
  r.t = NULL;
  if (m->n && m->t)
    r.t = shared ? ox_graph_meta_intern(g, m->t, m->n) : meta_copy_private(g, m->t, m->n);
  else
    r.n = 0;
  return r;
}

void ox_graph_set_meta(OxGraph *g, OxNodeId id, const OxMeta *m) {
  if (txn_logging(g)) txn_push(g, OX_EDIT_META, id)->old_meta = g->nodes[id].meta;
  g->nodes[id].meta = copy_meta(g, m, false);
}

/* The node points at the graph's shared copy (see "shared tensor metas" above). */
void ox_graph_set_meta_shared(OxGraph *g, OxNodeId id, const OxMeta *m) {
  if (txn_logging(g)) txn_push(g, OX_EDIT_META, id)->old_meta = g->nodes[id].meta;
  g->nodes[id].meta = copy_meta(g, m, true);
}

/* Logs node id's provenance list before a change (rollback restores it). */
static void txn_log_provenance(OxGraph *g, OxNodeId id) {
  if (!txn_logging(g)) return;
  const OxNode *n = &g->nodes[id];
  uint32_t old_n = n->n_provenance;
  const OxNodeId *old = n->provenance;
  OxEdit *e = txn_push(g, OX_EDIT_PROVENANCE, id);
  e->old_n = old_n;
  e->old_ids = txn_ids(g, old, old_n);
}

void ox_graph_add_provenance(OxGraph *g, OxNodeId id, OxNodeId from) {
  OxNode *n = &g->nodes[id];
  for (uint32_t i = 0; i < n->n_provenance; i++)
    if (n->provenance[i] == from) return;
  txn_log_provenance(g, id);
  n = &g->nodes[id];
  OxNodeId *p = ox_arena_alloc(&g->arena, (n->n_provenance + 1) * sizeof *p);
  if (n->n_provenance) memcpy(p, n->provenance, n->n_provenance * sizeof *p);
  p[n->n_provenance] = from;
  n = &g->nodes[id];
  n->provenance = p;
  n->n_provenance++;
}

void ox_graph_set_provenance(OxGraph *g, OxNodeId id, const OxNodeId *ids, uint32_t count) {
  txn_log_provenance(g, id);
  OxNode *n = &g->nodes[id];
  OxNodeId *p = count ? ox_arena_alloc(&g->arena, count * sizeof *p) : NULL;
  if (count) memcpy(p, ids, count * sizeof *p);
  n->provenance = p;
  n->n_provenance = count;
}

OxNodeId ox_graph_name_ref(OxGraph *g, const char *name) {
  return ox_graph_name_ref_interned(g, ox_graph_intern(g, name ? name : "?"));
}

OxNodeId ox_graph_name_ref_interned(OxGraph *g, const char *w) {
  OxNodeId id = names_get(g, w);
  if (id) return id;
  if (g->n_refs + 1 >= g->cap_refs) {
    g->cap_refs = g->cap_refs ? g->cap_refs * 2 : 256;
    g->ref_names = ox_xrealloc(g->ref_names, g->cap_refs * sizeof *g->ref_names);
  }
  id = ++g->n_refs;
  g->ref_names[id] = w;
  names_set(g, w, id);
  return id;
}

const char *ox_graph_ref_name(const OxGraph *g, OxNodeId id) {
  if (!g) return NULL;
  if (g->ref_names) return id && id <= g->n_refs ? g->ref_names[id] : NULL;
  const OxNode *n = ox_graph_node(g, id);
  return n ? n->name : NULL;
}

OxMeta ox_graph_meta_share(OxGraph *g, const OxMeta *m) { return copy_meta(g, m, true); }

void ox_graph_share_provenance(OxGraph *g, OxNodeId id, const OxNodeId *ids, uint32_t count) {
  txn_log_provenance(g, id);
  OxNode *n = &g->nodes[id];
  n->provenance = count ? (OxNodeId *)ids : NULL;
  n->n_provenance = count;
}

void ox_graph_add_subgraph(OxGraph *g, OxGraph *sub) {
  g->subgraphs = ox_xrealloc(g->subgraphs, (g->n_subgraphs + 1) * sizeof *g->subgraphs);
  g->subgraphs[g->n_subgraphs++] = sub;
}

/* ------------------------------------------------------------------ rollback */

static void relink_order(OxGraph *g, const OxNodeId *ids, uint32_t n) {
  OxNodeId prev = 0;
  g->head = 0;
  for (uint32_t i = 0; i < n; i++) {
    OxNodeId id = ids[i];
    g->link[id].prev = prev;
    if (prev)
      g->link[prev].next = id;
    else
      g->head = id;
    prev = id;
  }
  if (prev) g->link[prev].next = 0;
  g->tail = prev;
  g->order_dirty = true;
  if (g->olab_on) olab_relabel_all(g);
}

void ox_graph_txn_rollback(OxGraph *g) {
  assert(g->txn_active);
  g->txn_replaying = true;
  /* Pass 1: undo everything but users snapshots, newest first. Undoing may shuffle users
   * arrays; pass 2 puts every touched users array back exactly as it was. */
  for (uint32_t i = g->n_txn; i-- > 0;) {
    OxEdit *e = &g->txn[i];
    OxNode *n = &g->nodes[e->node];
    ox_graph_opix_stale(g, e->node);
    switch ((OxEditKind)e->kind) {
    case OX_EDIT_ADD:
      node_uses(g, e->node, false);
      unlink_node(g, e->node);
      n = &g->nodes[e->node];
      n->erased = true;
      n->n_users = 0;
      names_del(g, n->name);
      g->n_live--;
      break;
    case OX_EDIT_ERASE:
      n->erased = false;
      link_after(g, e->node, e->prev);
      names_set(g, g->nodes[e->node].name, e->node);
      g->n_live++;
      node_uses(g, e->node, true);
      break;
    case OX_EDIT_ARGS: {
      /* Touch only the inputs that differ: an input used before and after keeps its users
       * array untouched (it has no snapshot to be restored from). */
      uint32_t nc = ox_graph_inputs(g, e->node, NULL, 0);
      OxNodeId *cur = ox_xrealloc(NULL, (nc + 1) * sizeof *cur);
      ox_graph_inputs(g, e->node, cur, nc);
      n = &g->nodes[e->node];
      /* a copy made for an in-place rewire lives in txn_scratch: restore a copy of it */
      n->args = e->replace ? value_dup(&g->arena, &e->old_args) : e->old_args;
      n->kwargs = e->replace ? value_dup(&g->arena, &e->old_kwargs) : e->old_kwargs;
      uint32_t no = ox_graph_inputs(g, e->node, NULL, 0);
      OxNodeId *old = ox_xrealloc(NULL, (no + 1) * sizeof *old);
      ox_graph_inputs(g, e->node, old, no);
      uint32_t ep = mark_begin(g);
      for (uint32_t b = 0; b < no; b++) g->mark[old[b]] = ep;
      for (uint32_t a = 0; a < nc; a++)
        if (g->mark[cur[a]] != ep) users_remove(g, cur[a], e->node);
      ep = mark_begin(g);
      for (uint32_t a = 0; a < nc; a++) g->mark[cur[a]] = ep;
      for (uint32_t b = 0; b < no; b++)
        if (g->mark[old[b]] != ep) users_add(g, old[b], e->node);
      free(cur);
      free(old);
      break;
    }
    case OX_EDIT_MOVE:
      unlink_node(g, e->node);
      link_after(g, e->node, e->prev);
      break;
    case OX_EDIT_RENAME:
      names_del(g, n->name);
      n->name = e->old_name;
      names_set(g, n->name, e->node);
      break;
    case OX_EDIT_META: n->meta = e->old_meta; break;
    case OX_EDIT_PROVENANCE:
      /* a fresh copy: the array now in place may be shorter than the old list */
      n->n_provenance = e->old_n;
      n->provenance = e->old_n ? ox_arena_alloc(&g->arena, e->old_n * sizeof(OxNodeId)) : NULL;
      if (e->old_n) memcpy(n->provenance, e->old_ids, e->old_n * sizeof(OxNodeId));
      break;
    case OX_EDIT_ORDER: relink_order(g, e->old_ids, e->old_n); break;
    case OX_EDIT_USERS: break;
    case OX_EDIT_REPLACE: break; /* the node's earlier ARGS entry (a copy) restores its trees */
    }
  }
  for (uint32_t i = 0; i < g->n_txn; i++) {
    OxEdit *e = &g->txn[i];
    if (e->kind != OX_EDIT_USERS) continue;
    OxNode *n = &g->nodes[e->node];
    users_reserve(g, n, e->old_n);
    if (e->old_n) memcpy(n->users, e->old_ids, e->old_n * sizeof *n->users);
    n->n_users = e->old_n;
  }
  g->txn_replaying = false;
  g->txn_active = false;
  /* the order and every edge are back as they were when the transaction began */
  g->topo_known = g->txn_topo_known;
  txn_clear(g);
}

/* ------------------------------------------------------------------ clone */

static void copy_counter(const char *key, uint32_t val, void *ud) {
  OxGraph *g = ud;
  ox_namemap_set(g->name_counters, ox_graph_intern(g, key), val);
}

/* lean: tensor metas shared by content (ox_graph_meta_intern) instead of private copies, and
 * erased slots kept as bare tombstones (name, op, target; no values, meta, users or provenance) */
static OxGraph *graph_clone(const OxGraph *src, bool lean, OxGraph *strings) {
  OxGraph *g = strings ? ox_graph_new_sharing_strings(strings) : ox_graph_new();
  /* the next fresh names the clone picks are the ones the source would pick */
  ox_namemap_foreach(src->name_counters, copy_counter, g);
  g->name = ox_graph_intern(g, src->name);
  g->src_line = src->src_line;
  g->sub_owner = ox_graph_intern(g, src->sub_owner);
  if (g->cap_nodes < src->n_nodes) nodes_resize(g, src->n_nodes);
  memcpy(g->link, src->link, (size_t)src->n_nodes * sizeof *g->link);
  g->n_nodes = src->n_nodes;
  g->head = src->head;
  g->tail = src->tail;
  g->n_live = src->n_live;
  g->order_dirty = true;
  const OxNodeId *last_src_prov = NULL;
  OxNodeId *last_dst_prov = NULL;
  uint32_t last_n_prov = 0;
  /* the same string table: every string of src is the clone's already (no hashing) */
  bool intern = g->strings != src->strings;
#define CLONE_STR(x) (intern ? ox_graph_intern(g, (x)) : (x))
  ox_graph_reserve_names(g, intern ? src->n_live : 0);
  for (uint32_t i = 1; i < src->n_nodes; i++) {
    const OxNode *s = &src->nodes[i];
    OxNode *n = &g->nodes[i];
    *n = *s;
    n->name = CLONE_STR(s->name);
    n->target = CLONE_STR(s->target);
    if (lean && s->erased) {
      n->type_ann = n->stack_trace = n->module_path = n->module_type = n->default_value = NULL;
      n->args = n->kwargs = (OxValue){.kind = OX_V_NONE};
      memset(&n->meta, 0, sizeof n->meta);
      n->users = NULL;
      n->n_users = n->cap_users = 0;
      n->provenance = NULL;
      n->n_provenance = 0;
      continue;
    }
    n->type_ann = CLONE_STR(s->type_ann);
    n->stack_trace = CLONE_STR(s->stack_trace);
    n->module_path = CLONE_STR(s->module_path);
    n->module_type = CLONE_STR(s->module_type);
    n->default_value = CLONE_STR(s->default_value);
    n->args = value_copy(g, &s->args, intern);
    n->kwargs = value_copy(g, &s->kwargs, intern);
    n->meta = copy_meta(g, &s->meta, lean);
    n->users = NULL;
    n->n_users = n->cap_users = 0;
    users_reserve(g, n, s->n_users);
    if (s->n_users) memcpy(n->users, s->users, s->n_users * sizeof *n->users);
    n->n_users = s->n_users;
    n->provenance = NULL;
    if (s->n_provenance && s->provenance == last_src_prov && s->n_provenance <= last_n_prov) {
      n->provenance = last_dst_prov; /* shared in src (copy-on-write arrays): shared in the clone */
    } else if (s->n_provenance) {
      n->provenance = ox_arena_alloc(&g->arena, s->n_provenance * sizeof(OxNodeId));
      memcpy(n->provenance, s->provenance, s->n_provenance * sizeof(OxNodeId));
      last_src_prov = s->provenance;
      last_dst_prov = n->provenance;
      last_n_prov = s->n_provenance;
    }
    if (!s->erased) names_set(g, n->name, i);
  }
#undef CLONE_STR
  for (uint32_t i = 0; i < src->n_subgraphs; i++)
    ox_graph_add_subgraph(g, graph_clone(src->subgraphs[i], lean, strings));
  return g;
}

OxGraph *ox_graph_clone(const OxGraph *src) { return graph_clone(src, false, NULL); }
OxGraph *ox_graph_clone_lean(const OxGraph *src, OxGraph *strings) { return graph_clone(src, true, strings); }

/* ------------------------------------------------------------------ queries */

OxNodeId ox_graph_find_interned(const OxGraph *g, const char *name) {
  return name ? names_get(g, name) : 0;
}

OxNodeId ox_graph_find(const OxGraph *g, const char *name) {
  if (!name) return 0;
  /* Only interned pointers are keys: look the string up without inserting it. */
  const char *w = ox_strtab_lookup(g->strings, name, strlen(name));
  return w ? names_get(g, w) : 0;
}

OxNodeId ox_graph_output(const OxGraph *g) {
  for (OxNodeId id = g->tail; id; id = g->link[id].prev)
    if (!g->nodes[id].erased && g->nodes[id].op == OX_OP_OUTPUT) return id;
  return 0;
}

uint32_t ox_graph_find_nodes(const OxGraph *g, OxOp op, const char *target, OxNodeId *out,
                             uint32_t max) {
  uint32_t c = 0;
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    if (n->op != op) continue;
    if (target && strcmp(n->target, target) != 0) continue;
    if (c < max) out[c] = id;
    c++;
  }
  return c;
}

void ox_graph_renumber(OxGraph *g) {
  uint32_t p = 0;
  for (uint32_t i = 1; i < g->n_nodes; i++)
    if (g->nodes[i].erased) g->nodes[i].pos = UINT32_MAX;
  OX_GRAPH_FOREACH(g, id) g->nodes[id].pos = p++;
  g->order_dirty = false;
}

bool ox_graph_before(OxGraph *g, OxNodeId a, OxNodeId b) {
  if (g->olab_on && !g->nodes[a].erased && !g->nodes[b].erased) return g->olab[a] < g->olab[b];
  if (g->order_dirty) ox_graph_renumber(g);
  return g->nodes[a].pos < g->nodes[b].pos;
}

/* ------------------------------------------------------------------ stable toposort */

bool ox_graph_stable_toposort(OxGraph *g) {
  /* Follows spec 1.5: walk the order; a node whose inputs are not all placed yet waits
   * on its last missing input and is re-checked when that input is placed. An order known
   * to be topological is its own stable toposort: nothing moves, nothing is logged. */
  if (g->topo_known) return true;
  uint32_t nn = g->n_nodes;
  OxNodeId *order = ox_xcalloc(g->n_live + 1, sizeof *order);
  uint32_t n_order = 0;
  OX_GRAPH_FOREACH(g, id) order[n_order++] = id;
  uint8_t *ready = ox_xcalloc(nn, 1);
  /* waiting lists as linked lists: head per node, next per waiting node */
  OxNodeId *wait_head = ox_xcalloc(nn, sizeof *wait_head);
  OxNodeId *wait_tail = ox_xcalloc(nn, sizeof *wait_tail);
  OxNodeId *wait_next = ox_xcalloc(nn, sizeof *wait_next);
  OxNodeId *stack = ox_xcalloc(n_order + 1, sizeof *stack);
  OxNodeId *result = ox_xcalloc(n_order + 1, sizeof *result);
  OxNodeId *inputs = NULL;
  uint32_t inputs_cap = 0;
  uint32_t sp = 0, n_res = 0;
  for (uint32_t i = n_order; i-- > 0;) stack[sp++] = order[i];
  OxNodeId *tmp = ox_xcalloc(n_order + 1, sizeof *tmp);
  while (sp) {
    OxNodeId n = stack[--sp];
    uint32_t k = ox_graph_inputs(g, n, inputs, inputs_cap);
    if (k > inputs_cap) {
      inputs_cap = k;
      inputs = ox_xrealloc(inputs, inputs_cap * sizeof *inputs);
      k = ox_graph_inputs(g, n, inputs, inputs_cap);
    }
    OxNodeId last_missing = 0;
    for (uint32_t i = 0; i < k; i++)
      if (!g->nodes[inputs[i]].erased && !ready[inputs[i]]) last_missing = inputs[i];
    if (last_missing) {
      if (wait_tail[last_missing])
        wait_next[wait_tail[last_missing]] = n;
      else
        wait_head[last_missing] = n;
      wait_tail[last_missing] = n;
      wait_next[n] = 0;
      continue;
    }
    ready[n] = 1;
    result[n_res++] = n;
    /* push waiting dependants so that they are popped in original order */
    uint32_t t = 0;
    for (OxNodeId w = wait_head[n]; w; w = wait_next[w]) tmp[t++] = w;
    wait_head[n] = wait_tail[n] = 0;
    while (t) stack[sp++] = tmp[--t];
  }
  bool ok = n_res == n_order;
  if (ok && txn_logging(g)) {
    OxEdit *e = txn_push(g, OX_EDIT_ORDER, 0);
    e->old_n = n_order;
    e->old_ids = txn_ids(g, order, n_order);
  }
  if (ok) {
    /* relink in result order (only pointers change; stable when already sorted) */
    OxNodeId prev = 0;
    for (uint32_t i = 0; i < n_res; i++) {
      OxNodeId id = result[i];
      g->link[id].prev = prev;
      if (prev)
        g->link[prev].next = id;
      else
        g->head = id;
      prev = id;
    }
    if (prev) g->link[prev].next = 0;
    g->tail = prev;
    if (!n_res) g->head = g->tail = 0;
    g->order_dirty = true;
    olab_relabel_all(g);
    g->topo_known = true;
  }
  free(order);
  free(ready);
  free(wait_head);
  free(wait_tail);
  free(wait_next);
  free(stack);
  free(result);
  free(inputs);
  free(tmp);
  return ok;
}

/* ------------------------------------------------------------------ verifier */

typedef struct {
  OxGraph *g;
  OxNodeId user;
  OxDiagList *d;
  int errors;
  const uint64_t *listed; /* (node << 32 | user) for every users entry, sorted */
  size_t n_listed;
} VerifyCtx;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static bool listed_has(const VerifyCtx *c, OxNodeId node, OxNodeId user) {
  uint64_t key = (uint64_t)node << 32 | user;
  size_t lo = 0, hi = c->n_listed;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c->listed[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < c->n_listed && c->listed[lo] == key;
}

static void verify_ref(OxNodeId id, void *data) {
  VerifyCtx *c = data;
  OxGraph *g = c->g;
  OxNode *u = &g->nodes[c->user];
  if (!id || id >= g->n_nodes) {
    ox_diag_add(c->d, OX_SEV_ERROR, u->src_line, 0, NULL, "node %s refers to a node id %u that does not exist",
                u->name, id);
    c->errors++;
    return;
  }
  OxNode *in = &g->nodes[id];
  if (in->erased) {
    ox_diag_add(c->d, OX_SEV_ERROR, u->src_line, 0, NULL, "node %s uses erased node %s", u->name, in->name);
    c->errors++;
    return;
  }
  if (in->pos >= u->pos) {
    ox_diag_add(c->d, OX_SEV_ERROR, u->src_line, 0, NULL, "node %s uses %s before its definition", u->name,
                in->name);
    c->errors++;
  }
  if (!listed_has(c, id, c->user)) {
    ox_diag_add(c->d, OX_SEV_ERROR, u->src_line, 0, NULL, "users of %s do not list %s, which uses it",
                in->name, u->name);
    c->errors++;
  }
}

static bool is_getitem(const char *t) {
  return strcmp(t, "operator.getitem") == 0 || strcmp(t, "_operator.getitem") == 0;
}

int ox_graph_verify(OxGraph *g, bool require_output, OxDiagList *d) {
  int errors = 0;
  ox_graph_renumber(g);
  uint32_t n_out = 0;
  OxNodeId last = 0;
  OxNodeId *inputs = NULL;
  uint32_t inputs_cap = 0;
  /* seen[u] == id + 1: u is already listed among id's users (duplicates in O(1), so a node
   * with 1e6 users verifies in linear time) */
  uint32_t *seen = ox_xcalloc(g->n_nodes ? g->n_nodes : 1, sizeof *seen);
  /* walk the order checking links both ways, so a corrupted list is reported, not looped */
  uint32_t steps = 0;
  OxNodeId prev = 0;
  for (OxNodeId id = g->head; id; id = g->link[id].next) {
    if (++steps > g->n_nodes) {
      ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "node order list is cyclic");
      free(inputs);
      free(seen);
      return errors + 1;
    }
    if (g->link[id].prev != prev) {
      ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "node order links are inconsistent at %s", g->nodes[id].name);
      errors++;
    }
    prev = id;
  }
  if (steps != g->n_live) {
    ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "order holds %u nodes but %u are live", steps, g->n_live);
    errors++;
  }
  /* every (node, user) pair the users arrays list, sorted: "does in list u" is a binary
   * search, not a scan of in's users (a hub with 1e6 users verifies in O(E log E)) */
  size_t n_listed = 0;
  OX_GRAPH_FOREACH(g, id) n_listed += g->nodes[id].n_users;
  uint64_t *listed = ox_xrealloc(NULL, (n_listed ? n_listed : 1) * sizeof *listed);
  n_listed = 0;
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    for (uint32_t i = 0; i < n->n_users; i++) listed[n_listed++] = (uint64_t)id << 32 | n->users[i];
  }
  qsort(listed, n_listed, sizeof *listed, cmp_u64);
  OX_GRAPH_FOREACH(g, id) {
    OxNode *n = &g->nodes[id];
    last = id;
    if (names_get(g, n->name) != id) {
      ox_diag_add(d, OX_SEV_ERROR, n->src_line, 0, NULL, "name %s is not unique or not indexed", n->name);
      errors++;
    }
    if (n->args.kind != OX_V_TUPLE || n->kwargs.kind != OX_V_DICT) {
      ox_diag_add(d, OX_SEV_ERROR, n->src_line, 0, NULL, "node %s: args must be a tuple and kwargs a dict",
                  n->name);
      errors++;
      continue;
    }
    VerifyCtx c = {g, id, d, 0, listed, n_listed};
    ox_value_foreach_node(&n->args, verify_ref, &c);
    ox_value_foreach_node(&n->kwargs, verify_ref, &c);
    errors += c.errors;
    /* users: each listed user is live and actually references n; no duplicates */
    for (uint32_t i = 0; i < n->n_users; i++) {
      OxNodeId u = n->users[i];
      if (!u || u >= g->n_nodes || g->nodes[u].erased) {
        ox_diag_add(d, OX_SEV_ERROR, n->src_line, 0, NULL, "users of %s list a node that is not live", n->name);
        errors++;
        continue;
      }
      uint32_t k = ox_graph_inputs(g, u, inputs, inputs_cap);
      if (k > inputs_cap) {
        inputs_cap = k;
        inputs = ox_xrealloc(inputs, inputs_cap * sizeof *inputs);
        k = ox_graph_inputs(g, u, inputs, inputs_cap);
      }
      bool refs = false;
      for (uint32_t j = 0; j < k; j++)
        if (inputs[j] == id) refs = true;
      if (!refs) {
        ox_diag_add(d, OX_SEV_ERROR, n->src_line, 0, NULL, "users of %s list %s, which does not use it",
                    n->name, g->nodes[u].name);
        errors++;
      }
      if (seen[u] == id + 1) {
        ox_diag_add(d, OX_SEV_ERROR, n->src_line, 0, NULL, "users of %s list %s twice", n->name,
                    g->nodes[u].name);
        errors++;
      }
      seen[u] = id + 1;
    }
    if (n->op == OX_OP_OUTPUT) {
      n_out++;
      if (n->n_users) {
        ox_diag_add(d, OX_SEV_ERROR, n->src_line, 0, NULL, "output node %s has users", n->name);
        errors++;
      }
    }
    if (n->op == OX_OP_CALL_FUNCTION && is_getitem(n->target)) {
      if (n->args.n != 2 || n->args.u.items[0].kind != OX_V_NODE) {
        ox_diag_add(d, OX_SEV_ERROR, n->src_line, 0, NULL,
                    "getitem %s must have two arguments, the first a node", n->name);
        errors++;
      } else {
        const OxValue *idx = &n->args.u.items[1];
        const OxNode *src = ox_graph_node(g, n->args.u.items[0].u.node);
        if (idx->kind == OX_V_INT && src && src->meta.kind == OX_META_TUPLE) {
          int64_t k = idx->u.i, cnt = src->meta.n;
          if (k < -cnt || k >= cnt) {
            ox_diag_add(d, OX_SEV_ERROR, n->src_line, 0, NULL,
                        "getitem %s takes index %lld of %s, which has %lld outputs", n->name,
                        (long long)k, src->name, (long long)cnt);
            errors++;
          }
        }
      }
    }
  }
  if (require_output && n_out != 1) {
    ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "graph %s has %u output nodes, expected exactly one",
                g->name ? g->name : "", n_out);
    errors++;
  } else if (n_out > 1) {
    ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "graph %s has %u output nodes", g->name ? g->name : "", n_out);
    errors++;
  }
  if (n_out == 1 && last && g->nodes[last].op != OX_OP_OUTPUT) {
    ox_diag_add(d, OX_SEV_ERROR, g->nodes[last].src_line, 0, NULL, "output is not the last node (%s follows it)",
                g->nodes[last].name);
    errors++;
  }
  free(inputs);
  free(seen);
  free(listed);
  return errors;
}

/* ------------------------------------------------------------------ meta helpers */

OxTensorMeta *ox_graph_tensor_meta_new(OxGraph *g, OxDType dt, int32_t rank) {
  OxTensorMeta *t = ox_arena_alloc(&g->arena, sizeof *t);
  t->dtype = dt;
  t->rank = rank;
  if (rank > 0) t->shape = ox_arena_alloc(&g->arena, (size_t)rank * sizeof(OxDim));
  return t;
}

const OxTensorMeta *ox_node_tensor_meta(const OxNode *n) {
  return (n->meta.kind == OX_META_TENSOR && n->meta.n >= 1) ? &n->meta.t[0] : NULL;
}

static int fmt_dim(const OxDim *d, char *buf, size_t cap) {
  if (d->sym) return snprintf(buf, cap, "%s", d->sym);
  if (cap >= 21) return ox_fmt_i64(buf, d->v);
  return snprintf(buf, cap, "%lld", (long long)d->v);
}

/* A symbolic size that reads as a number: 0 = no, 1 = an integer too large to read (loaders keep
 * those as text), 2 = another number (a point, an exponent: 1e23). */
static int looks_numeric(const char *s) {
  bool digit = false, other = false;
  const char *p = s;
  if (*p == '-' || *p == '+') p++;
  for (; *p; p++) {
    if (*p >= '0' && *p <= '9')
      digit = true;
    else if (*p == '-' || *p == '+' || *p == '.' || *p == 'e' || *p == 'E')
      other = true;
    else
      return 0;
  }
  return digit ? (other ? 2 : 1) : 0;
}

bool ox_meta_absurd(const OxTensorMeta *t, char *buf, size_t cap) {
  if (!t || t->rank <= 0) return false;
  int64_t numel = 1;
  bool zero = false;
  for (int32_t i = 0; i < t->rank; i++) {
    const OxDim *d = &t->shape[i];
    if (d->sym) {
      if (!d->sym[0]) { /* text that is not a size at all (NUL bytes in a damaged annotation) */
        snprintf(buf, cap, "dim %d has an empty size", (int)i);
        return true;
      }
      int k = looks_numeric(d->sym);
      if (k) {
        snprintf(buf, cap, "size %.40s (dim %d) is %s", d->sym, (int)i,
                 k == 1 ? (d->sym[0] == '-' ? "negative" : "more than 2^50 elements") : "not an integer");
        return true;
      }
      continue;
    }
    if (d->v < 0) {
      snprintf(buf, cap, "size %lld (dim %d) is negative", (long long)d->v, (int)i);
      return true;
    }
    if (d->v == 0) {
      zero = true;
      continue;
    }
    /* the product of the non-zero sizes: a zero elsewhere must not hide an absurd one */
    if (__builtin_mul_overflow(numel, d->v, &numel) || numel > OX_NUMEL_MAX) {
      snprintf(buf, cap, "size %lld (dim %d) makes %s than 2^50 elements", (long long)d->v, (int)i,
               zero ? "a zero-size tensor of more" : "more");
      return true;
    }
  }
  if (t->has_stride && t->stride)
    for (int32_t i = 0; i < t->rank; i++) {
      const OxDim *d = &t->stride[i];
      if (d->sym && (!d->sym[0] || looks_numeric(d->sym))) {
        snprintf(buf, cap, "stride %.40s (dim %d) is not an integer", d->sym, (int)i);
        return true;
      }
      if (!d->sym && (d->v < 0 || d->v > OX_NUMEL_MAX)) {
        snprintf(buf, cap, "stride %lld (dim %d) is %s", (long long)d->v, (int)i,
                 d->v < 0 ? "negative" : "larger than 2^50");
        return true;
      }
    }
  return false;
}

int ox_tensor_meta_format(const OxTensorMeta *t, bool with_stride, bool with_device, char *buf, size_t cap) {
  size_t o = 0;
  char tmp[128];
#define PUT(str)                                                \
  do {                                                          \
    const char *s_ = (str);                                     \
    size_t l_ = strlen(s_);                                     \
    if (o < cap) {                                              \
      size_t c_ = o + l_ < cap ? l_ : (cap > o + 1 ? cap - o - 1 : 0); \
      memcpy(buf + o, s_, c_);                                  \
    }                                                           \
    o += l_;                                                    \
  } while (0)
  PUT(ox_dtype_abbr(t->dtype));
  if (t->rank < 0) goto done; /* shape unknown: dtype only */
  PUT("[");
  /* a symbolic size is put whole (through tmp it was cut at 127 bytes, and the cut text, ending
   * in blanks or inside a character, did not read back as itself) */
#define PUT_DIM(d)                           \
  do {                                       \
    if ((d)->sym) {                          \
      PUT((d)->sym);                         \
    } else {                                 \
      fmt_dim((d), tmp, sizeof tmp);         \
      PUT(tmp);                              \
    }                                        \
  } while (0)
  for (int32_t i = 0; i < t->rank; i++) {
    if (i) PUT(", ");
    PUT_DIM(&t->shape[i]);
  }
  PUT("]");
  if (with_stride && t->has_stride) {
    PUT("[");
    for (int32_t i = 0; i < t->rank; i++) {
      if (i) PUT(", ");
      PUT_DIM(&t->stride[i]);
    }
    PUT("]");
  }
done:
  if (with_device && t->device) PUT(t->device);
#undef PUT_DIM
#undef PUT
  if (cap) buf[o < cap ? o : cap - 1] = 0;
  return (int)o;
}
