/* ox_check_numeric.c - the per-step numeric check.
 *
 * While the step's transaction is still open, the nodes the step removed (tombstones keep
 * their args) form the region BEFORE and the nodes it added form the region AFTER. Each
 * region is copied into a small standalone graph: its inputs from outside become
 * placeholders named like the nodes they stand for (get_attr inputs stay get_attr, so
 * parameters are drawn by path), so both graphs draw identical seeded random values for
 * identical boundary names. Both run in the reference interpreter; every value the step
 * replaced is compared with its replacement using dtype-aware tolerances, over several
 * trials with different seeds.
 *
 * The check is SKIPPED, with the reason, when it cannot run: nothing was replaced, a kernel
 * is missing, sizes are symbolic, an op is random, a boundary has no meta, or the regions
 * need more work than the budget. It FAILS only on a real disagreement, or when the AFTER
 * region cannot execute although BEFORE could (a broken rewrite).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "ops/ox_interp.h"
#include "ops/ox_ops.h"
#include "ops/ox_shape.h"
#include "passes/ox_pass.h"

/* ---- node id maps
 *
 * A check touches a few hundred nodes of a graph that may have 100k: the sets and maps of
 * node ids below hash the ids they hold instead of spanning the graph (an array per node
 * zeroed for every check cost more than the small regions' work). Nothing iterates over a
 * map, so the order of work, and the check, do not depend on the hashing. */
typedef struct {
  uint32_t *keys; /* 0 = empty slot (node id 0 is none) */
  uint32_t *vals;
  uint32_t cap, n; /* cap: 0 or a power of two */
} IdMap;

static uint32_t idmap_slot(const IdMap *m, uint32_t key) {
  uint32_t i = (key * 0x9e3779b1u) & (m->cap - 1);
  while (m->keys[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
  return i;
}

/* The value of key; 0 if it has none. */
static uint32_t idmap_get(const IdMap *m, uint32_t key) {
  if (!m->n) return 0;
  uint32_t i = idmap_slot(m, key);
  return m->keys[i] ? m->vals[i] : 0;
}

static void idmap_put(IdMap *m, uint32_t key, uint32_t val) {
  if (2 * (m->n + 1) > m->cap) {
    IdMap g = {0};
    g.cap = m->cap ? 2 * m->cap : 64;
    g.keys = ox_xcalloc(g.cap, sizeof *g.keys);
    g.vals = ox_xcalloc(g.cap, sizeof *g.vals);
    for (uint32_t i = 0; i < m->cap; i++)
      if (m->keys[i]) {
        uint32_t j = idmap_slot(&g, m->keys[i]);
        g.keys[j] = m->keys[i];
        g.vals[j] = m->vals[i];
        g.n++;
      }
    free(m->keys);
    free(m->vals);
    *m = g;
  }
  uint32_t i = idmap_slot(m, key);
  if (!m->keys[i]) {
    m->keys[i] = key;
    m->n++;
  }
  m->vals[i] = val;
}

static void idmap_free(IdMap *m) {
  free(m->keys);
  free(m->vals);
  *m = (IdMap){0};
}

typedef struct {
  const OxGraph *src;
  OxGraph *dst;
  IdMap *map; /* src id -> dst id */
} Remap;

/* Same dtype and shape as a tensor meta (a value drawn for a node of that meta). */
static bool value_fits(const OxRtValue *v, const OxMeta *m) {
  if (!v || v->kind != OX_RT_TENSOR || m->kind != OX_META_TENSOR || m->n != 1) return false;
  const OxTensor *t = v->u.t;
  const OxTensorMeta *tm = &m->t[0];
  if (t->dtype != tm->dtype || t->rank != tm->rank) return false;
  /* floating point only: integer inputs are drawn below a bound read from their users
   * (an embedding's size), which may differ between the regions */
  OxStorage st = ox_dtype_storage(t->dtype);
  if (st != OX_ST_F32 && st != OX_ST_F64) return false;
  for (int32_t i = 0; i < t->rank; i++)
    if (tm->shape[i].sym || tm->shape[i].v != t->shape[i]) return false;
  return true;
}

/* The inputs (placeholders, parameters) BEFORE's run drew that AFTER has too, under the same
 * name or path and meta: AFTER's node ids and new references to the values. Returns how many. */
static uint32_t shared_inputs(const OxGraph *before, const OxGraph *after, const OxInterp *ib, OxNodeId *to,
                              OxRtValue **v) {
  uint32_t n = 0;
  for (OxNodeId id = before->head; id; id = before->link[id].next) {
    const OxNode *b = &before->nodes[id];
    if (b->erased || (b->op != OX_OP_PLACEHOLDER && b->op != OX_OP_GET_ATTR)) continue;
    const OxRtValue *val = ox_interp_value(ib, id);
    OxNodeId aid = ox_graph_find(after, b->name);
    const OxNode *a = ox_graph_node(after, aid);
    if (!val || !a || a->erased || a->op != b->op || !value_fits(val, &a->meta) || !value_fits(val, &b->meta)) continue;
    if (b->op == OX_OP_GET_ATTR && (!a->target || !b->target || strcmp(a->target, b->target) != 0)) continue;
    to[n] = aid;
    v[n++] = ox_rt_ref((OxRtValue *)val);
  }
  return n;
}

/* A boundary value that is an int the shapes fix (x.shape[0], x.size(1) * 4): it becomes that
 * constant in the region instead of an input, which would need a value nobody has. */
static bool boundary_int(const OxGraph *g, OxNodeId id, int64_t *v) {
  const OxNode *n = ox_graph_node(g, id);
  if (!n || n->meta.kind == OX_META_TENSOR || n->meta.kind == OX_META_TUPLE) return false;
  return ox_shape_node_int(g, id, v);
}

static bool is_container(const OxValue *v) {
  return v->kind == OX_V_LIST || v->kind == OX_V_TUPLE || v->kind == OX_V_DICT || v->kind == OX_V_SLICE;
}

static OxValue remap_value(Remap *r, const OxValue *v) {
  if (v->kind == OX_V_NODE) {
    int64_t k;
    OxNodeId to = idmap_get(r->map, v->u.node);
    if (!to && boundary_int(r->src, v->u.node, &k)) return ox_value_int(k);
    return ox_value_node(to);
  }
  OxValue out = *v;
  if (v->s) out.s = ox_graph_intern(r->dst, v->s);
  if (is_container(v)) {
    out.u.items = v->n ? ox_graph_alloc(r->dst, v->n * sizeof(OxValue)) : NULL;
    for (uint32_t i = 0; i < v->n; i++) out.u.items[i] = remap_value(r, &v->u.items[i]);
    if (v->kind == OX_V_DICT) {
      out.keys = v->n ? ox_graph_alloc(r->dst, v->n * sizeof(char *)) : NULL;
      for (uint32_t i = 0; i < v->n; i++) out.keys[i] = ox_graph_intern(r->dst, v->keys[i]);
    }
  }
  return out;
}

typedef struct {
  OxNodeId *ids;
  uint32_t n, cap;
} Ids;

static void ids_cb(OxNodeId id, void *data) {
  Ids *l = data;
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 8;
    l->ids = ox_xrealloc(l->ids, l->cap * sizeof *l->ids);
  }
  l->ids[l->n++] = id;
}

static void node_refs(const OxNode *n, Ids *out) {
  out->n = 0;
  ox_value_foreach_node(&n->args, ids_cb, out);
  ox_value_foreach_node(&n->kwargs, ids_cb, out);
}

/* Adds the stand-in for a node outside the region. */
static void add_boundary(Remap *r, OxNodeId id) {
  if (idmap_get(r->map, id)) return;
  const OxNode *s = &r->src->nodes[id];
  OxNodeId nid;
  if (s->op == OX_OP_GET_ATTR)
    nid = ox_graph_add_node(r->dst, OX_OP_GET_ATTR, s->name, s->target, ox_value_none(), ox_value_none());
  else
    nid = ox_graph_add_node(r->dst, OX_OP_PLACEHOLDER, s->name, s->name, ox_value_none(), ox_value_none());
  ox_graph_set_meta(r->dst, nid, &s->meta);
  idmap_put(r->map, id, nid);
}

/* Copies the region (any order; erased nodes allowed) into a fresh graph in a topological
 * order of its own edges. Returns NULL with err on a cycle. */
static OxGraph *extract(const OxGraph *g, const OxNodeId *nodes, uint32_t n, const OxNodeId *extra, uint32_t n_extra,
                        IdMap *map, char *err, size_t errcap) {
  OxGraph *t = ox_graph_new();
  IdMap in_region = {0}, done = {0};
  for (uint32_t i = 0; i < n; i++) idmap_put(&in_region, nodes[i], 1);
  Remap r = {g, t, map};
  Ids refs = {0};
  uint32_t placed = 0;
  /* repeated sweeps: place every region node whose region inputs are placed (regions are small) */
  bool progress = true;
  while (placed < n && progress) {
    progress = false;
    for (uint32_t i = 0; i < n; i++) {
      OxNodeId id = nodes[i];
      if (idmap_get(&done, id)) continue;
      const OxNode *s = &g->nodes[id];
      node_refs(s, &refs);
      bool ready = true;
      for (uint32_t k = 0; k < refs.n && ready; k++)
        if (idmap_get(&in_region, refs.ids[k]) && !idmap_get(&done, refs.ids[k])) ready = false;
      if (!ready) continue;
      for (uint32_t k = 0; k < refs.n; k++) {
        int64_t iv;
        if (!idmap_get(&in_region, refs.ids[k]) && !boundary_int(g, refs.ids[k], &iv)) add_boundary(&r, refs.ids[k]);
      }
      OxValue args = remap_value(&r, &s->args), kwargs = remap_value(&r, &s->kwargs);
      OxNodeId nid = ox_graph_add_node(t, (OxOp)s->op, s->name, s->target, args, kwargs);
      OxNode *d = &t->nodes[nid];
      d->module_type = ox_graph_intern(t, s->module_type);
      ox_graph_opix_stale(t, nid);
      ox_graph_set_meta(t, nid, &s->meta);
      idmap_put(map, id, nid);
      idmap_put(&done, id, 1);
      placed++;
      progress = true;
    }
  }
  for (uint32_t i = 0; i < n_extra; i++)
    if (!idmap_get(&in_region, extra[i])) add_boundary(&r, extra[i]);
  free(refs.ids);
  idmap_free(&in_region);
  idmap_free(&done);
  if (placed < n) {
    snprintf(err, errcap, "the region has a cycle");
    ox_graph_free(t);
    return NULL;
  }
  return t;
}

/* ---- closing the regions over a common boundary
 *
 * Both regions must read the same values. When one region reads a node that is computed from
 * a node the other region reads (mutate_cat: BEFORE reads getitem_0, getitem_1 of split(x);
 * AFTER reads x), random values for both would disagree, so the derived node is computed
 * instead: it joins its region and its own inputs become boundary. Repeat until no boundary
 * node has another boundary node upstream of it (searched up to a few hops). */

typedef struct {
  OxNodeId *ids;
  uint32_t n, cap;
  IdMap in; /* the members */
} Set;

static bool set_has(const Set *s, OxNodeId id) { return idmap_get(&s->in, id) != 0; }

static void set_free(Set *s) {
  free(s->ids);
  idmap_free(&s->in);
}

static void set_add(Set *s, OxNodeId id) {
  if (set_has(s, id)) return;
  idmap_put(&s->in, id, 1);
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 16;
    s->ids = ox_xrealloc(s->ids, s->cap * sizeof *s->ids);
  }
  s->ids[s->n++] = id;
}

/* Stamps per node id for the searches below, kept from one check to the next (a map cleared per
 * check would cost more than the searches at 100k nodes): a node is marked when its stamp is the
 * current one, so starting a new search is bumping the stamp. One pair per thread (the debugger
 * runs checks on workers), freed when the thread ends. */
typedef struct {
  uint32_t *stamp;
  uint32_t cap, now;
} Stamps;

/* The node references of each node the searches visit, collected once per close_regions (the
 * graph does not change during it): a boundary node's search walks much of what its
 * neighbours' searches walked, and collecting a node's references means walking its argument
 * tree (a 300-input cat). refs.stamp marks the nodes whose span off[id], len[id] in pool is
 * filled. */
typedef struct {
  Stamps stamp;
  uint32_t *off, *len, cap;
  OxNodeId *pool;
  size_t n_pool, cap_pool;
} RefCache;

typedef struct {
  Stamps seen, all;
  RefCache refs;
} SearchScratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p) {
  SearchScratch *s = p;
  free(s->seen.stamp);
  free(s->all.stamp);
  free(s->refs.stamp.stamp);
  free(s->refs.off);
  free(s->refs.len);
  free(s->refs.pool);
  free(s);
}

static void scratch_key_init(void) {
  if (pthread_key_create(&scratch_key, scratch_free) != 0) abort();
}

static SearchScratch *search_scratch(void) {
  pthread_once(&scratch_once, scratch_key_init);
  SearchScratch *s = pthread_getspecific(scratch_key);
  if (!s) {
    s = ox_xcalloc(1, sizeof *s);
    if (pthread_setspecific(scratch_key, s) != 0) abort();
  }
  return s;
}

/* A new, empty marking for ids below n. */
static void stamps_begin(Stamps *s, uint32_t n) {
  if (n > s->cap) {
    uint32_t cap = n + n / 4 + 64;
    s->stamp = ox_xrealloc(s->stamp, (size_t)cap * sizeof *s->stamp);
    memset(s->stamp + s->cap, 0, (size_t)(cap - s->cap) * sizeof *s->stamp);
    s->cap = cap;
  }
  if (++s->now == 0) { /* wrapped: old stamps would read as current */
    memset(s->stamp, 0, (size_t)s->cap * sizeof *s->stamp);
    s->now = 1;
  }
}

static bool stamps_has(const Stamps *s, OxNodeId id) { return id < s->cap && s->stamp[id] == s->now; }
static void stamps_mark(Stamps *s, OxNodeId id) { s->stamp[id] = s->now; }

/* Forgets every cached span (a new search over graph g). */
static void refs_begin(RefCache *c, const OxGraph *g) {
  stamps_begin(&c->stamp, g->n_nodes);
  if (c->cap < c->stamp.cap) {
    c->off = ox_xrealloc(c->off, (size_t)c->stamp.cap * sizeof *c->off);
    c->len = ox_xrealloc(c->len, (size_t)c->stamp.cap * sizeof *c->len);
    c->cap = c->stamp.cap;
  }
  c->n_pool = 0;
}

static void refs_cb(OxNodeId id, void *data) {
  RefCache *c = data;
  if (c->n_pool == c->cap_pool) {
    c->cap_pool = c->cap_pool ? c->cap_pool * 2 : 1024;
    c->pool = ox_xrealloc(c->pool, c->cap_pool * sizeof *c->pool);
  }
  c->pool[c->n_pool++] = id;
}

/* The references of node id (as node_refs lists them: args then kwargs, repeats kept); *n gets
 * their count. The pointer is good until the next call. */
static void refs_fill(RefCache *c, const OxGraph *g, OxNodeId id) {
  size_t start = c->n_pool;
  ox_value_foreach_node(&g->nodes[id].args, refs_cb, c);
  ox_value_foreach_node(&g->nodes[id].kwargs, refs_cb, c);
  c->off[id] = (uint32_t)start;
  c->len[id] = (uint32_t)(c->n_pool - start);
  stamps_mark(&c->stamp, id);
}

static inline const OxNodeId *refs_of(RefCache *c, const OxGraph *g, OxNodeId id, uint32_t *n) {
  if (!stamps_has(&c->stamp, id)) refs_fill(c, g, id); /* the searches mostly meet cached nodes */
  *n = c->len[id];
  return c->pool + c->off[id];
}

/* boundary of region r: inputs of its nodes that are not in it */
static void boundary(const OxGraph *g, const Set *r, Set *out, RefCache *c) {
  for (uint32_t i = 0; i < r->n; i++) {
    uint32_t nr;
    const OxNodeId *refs = refs_of(c, g, r->ids[i], &nr);
    for (uint32_t k = 0; k < nr; k++)
      if (!set_has(r, refs[k])) set_add(out, refs[k]);
  }
}

/* Is another member of the boundary (the ids sc->all marks) upstream of node x (within
 * max_hops)? A breadth-first search; a node is visited once. */
static bool derived_from_boundary(const OxGraph *g, OxNodeId x, uint32_t max_hops, SearchScratch *sc) {
  OxNodeId frontier[512], next[512];
  uint32_t nf = 0, nn;
  frontier[nf++] = x;
  Stamps *seen = &sc->seen;
  stamps_begin(seen, g->n_nodes);
  for (uint32_t h = 0; h < max_hops && nf; h++) {
    nn = 0;
    for (uint32_t i = 0; i < nf; i++) {
      uint32_t nr;
      const OxNodeId *r = refs_of(&sc->refs, g, frontier[i], &nr);
      for (uint32_t k = 0; k < nr; k++) {
        OxNodeId y = r[k];
        if (stamps_has(seen, y)) continue;
        stamps_mark(seen, y);
        if (stamps_has(&sc->all, y)) return true;
        if (nn < 512) next[nn++] = y;
      }
    }
    memcpy(frontier, next, nn * sizeof *next);
    nf = nn;
  }
  return false;
}

/* Grows before/after until their boundaries are closed. Returns false if it needed more
 * than max_nodes nodes. */
static bool close_regions(const OxGraph *g, Set *before, Set *after, const OxNodeId *extra, uint32_t n_extra,
                          uint32_t max_nodes) {
  bool ok = true;
  SearchScratch *sc = search_scratch();
  refs_begin(&sc->refs, g);
  for (int round = 0; round < 64; round++) {
    Set bb = {0}, ba = {0}, all = {0};
    boundary(g, before, &bb, &sc->refs);
    boundary(g, after, &ba, &sc->refs);
    for (uint32_t i = 0; i < n_extra; i++)
      if (!set_has(after, extra[i])) set_add(&ba, extra[i]);
    for (uint32_t i = 0; i < bb.n; i++) set_add(&all, bb.ids[i]);
    for (uint32_t i = 0; i < ba.n; i++) set_add(&all, ba.ids[i]);
    stamps_begin(&sc->all, g->n_nodes);
    for (uint32_t i = 0; i < all.n; i++) stamps_mark(&sc->all, all.ids[i]);
    bool changed = false;
    for (uint32_t i = 0; i < all.n; i++) {
      OxNodeId x = all.ids[i];
      const OxNode *n = &g->nodes[x];
      if (n->op == OX_OP_PLACEHOLDER || n->op == OX_OP_GET_ATTR) continue;
      /* an int the shapes fix is a constant of the region, not a value to compute */
      int64_t iv;
      if (boundary_int(g, x, &iv)) continue;
      if (!derived_from_boundary(g, x, 6, sc)) continue;
      if (set_has(&bb, x)) set_add(before, x);
      if (set_has(&ba, x)) set_add(after, x);
      changed = true;
    }
    set_free(&bb);
    set_free(&ba);
    set_free(&all);
    if (before->n + after->n > max_nodes) {
      ok = false;
      break;
    }
    if (!changed) break;
  }
  return ok;
}

/* ---- work estimate and reduced sizes */

/* Work of a region graph: the interpreter's FLOP estimate plus the elements of every
 * tensor it must draw at random (placeholders), which costs more than a FLOP each. */
static uint64_t region_work(const OxGraph *r) {
  uint64_t w = ox_interp_estimate_flops(r, NULL, 0);
  OX_GRAPH_FOREACH(r, id) {
    const OxNode *n = &r->nodes[id];
    const OxTensorMeta *t = ox_node_tensor_meta(n);
    if ((n->op != OX_OP_PLACEHOLDER && n->op != OX_OP_GET_ATTR) || !t || t->rank < 0) continue;
    uint64_t e = 1;
    for (int32_t i = 0; i < t->rank; i++) e *= t->shape[i].sym ? 1 : (uint64_t)(t->shape[i].v > 0 ? t->shape[i].v : 1);
    w += 4 * e;
  }
  return w;
}

static int64_t norm_dim(const OxGraph *g, const OxValue *dimv, const OxValue *tensor_ref) {
  if (!dimv || dimv->kind != OX_V_INT) return INT64_MIN;
  int64_t d = dimv->u.i;
  if (d >= 0) return d;
  const OxValue *ref = tensor_ref;
  if (ref && (ref->kind == OX_V_LIST || ref->kind == OX_V_TUPLE) && ref->n) ref = &ref->u.items[0];
  if (!ref || ref->kind != OX_V_NODE) return INT64_MIN;
  const OxTensorMeta *t = ox_node_tensor_meta(&g->nodes[ref->u.node]);
  return t && t->rank >= 0 ? d + t->rank : INT64_MIN;
}

/* Which placeholder dims every op of the region treats independently (so the region can run
 * with those dims shrunk): pointwise ops treat every dim so; split/cat/slice/narrow/chunk
 * only touch their own dim; rank-changing ops (stack, unbind, unsqueeze, squeeze, select)
 * keep the indices of dims below their dim. Anything else (matmul, views with explicit
 * sizes, reductions, tensor indexing) makes the region irreducible: returns false. */
static bool scan_reducible(const OxGraph *g, uint8_t *bad, int32_t *limit) {
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    if (n->op == OX_OP_PLACEHOLDER || n->op == OX_OP_GET_ATTR || n->op == OX_OP_OUTPUT) continue;
    OxOpArgs a;
    char err[128];
    if (ox_op_normalize(g, n, &a, err, sizeof err) != 0) return false;
    const OxOpInfo *info = ox_op_info(a.op);
    if (!info) return false;
    int64_t d;
    switch (a.op) {
    case OX_OPID_SPLIT:
    case OX_OPID_SPLIT_WITH_SIZES:
    case OX_OPID_CHUNK:
      d = norm_dim(g, a.slot[2], a.slot[0]);
      if (d < 0 || d >= 64) return false;
      bad[d] = 1;
      break;
    case OX_OPID_CAT:
    case OX_OPID_SLICE:
    case OX_OPID_NARROW:
      d = norm_dim(g, a.slot[1], a.slot[0]);
      if (d < 0 || d >= 64) return false;
      bad[d] = 1;
      break;
    case OX_OPID_UNBIND:
    case OX_OPID_STACK:
    case OX_OPID_UNSQUEEZE:
    case OX_OPID_SELECT:
    case OX_OPID_SQUEEZE:
      d = norm_dim(g, a.slot[1], a.slot[0]);
      if (d < 0) return false;
      if (d < *limit) *limit = (int32_t)d;
      break;
    case OX_OPID_GETITEM:
      if (!a.slot[1] || a.slot[1]->kind != OX_V_INT) return false; /* tuple access only */
      break;
    default:
      if (!(info->flags & OX_OPF_POINTWISE)) return false;
      /* pointwise with broadcasting: every tensor input must have the output's rank */
      {
        const OxTensorMeta *out = ox_node_tensor_meta(n);
        if (!out) return false;
        OxNodeId ins[16];
        uint32_t k = ox_graph_inputs(g, id, ins, 16);
        for (uint32_t i = 0; i < k && i < 16; i++) {
          const OxTensorMeta *t = ox_node_tensor_meta(&g->nodes[ins[i]]);
          if (t && t->rank != out->rank && t->rank != 0) return false;
        }
      }
      break;
    }
  }
  return true;
}

/* Shrinks the reducible dims of every placeholder of both regions to 2 and re-infers the
 * regions' shapes. Returns false when the regions cannot be reduced; the graphs are then
 * unusable if *touched was set (it is set before the first change). */
static bool reduce_regions(OxGraph *a, OxGraph *b, char *desc, size_t cap, bool *touched) {
  OxGraph *gs[2] = {a, b};
  int32_t rank = -1;
  uint8_t bad[64] = {0};
  int32_t limit = 64;
  const OxTensorMeta *first = NULL;
  for (int k = 0; k < 2; k++) {
    OX_GRAPH_FOREACH(gs[k], id) {
      const OxNode *n = &gs[k]->nodes[id];
      if (n->op != OX_OP_PLACEHOLDER) continue;
      const OxTensorMeta *t = ox_node_tensor_meta(n);
      if (!t || t->rank < 1 || t->rank > 64) return false;
      if (rank < 0) rank = t->rank;
      if (t->rank != rank) return false;
      for (int32_t i = 0; i < t->rank; i++)
        if (t->shape[i].sym) return false;
      if (!first) first = t;
    }
    if (!scan_reducible(gs[k], bad, &limit)) return false;
  }
  if (rank < 1 || !first) return false;
  bool any = false;
  for (int32_t i = 0; i < rank && i < limit; i++) any |= !bad[i] && first->shape[i].v > 2;
  if (!any) return false;
  char was[160], now[160];
  ox_tensor_meta_format(first, false, false, was, sizeof was);
  *touched = true;
  for (int k = 0; k < 2; k++) {
    OX_GRAPH_FOREACH(gs[k], id) {
      OxNode *n = &gs[k]->nodes[id];
      if (n->op == OX_OP_PLACEHOLDER) {
        const OxTensorMeta *t = ox_node_tensor_meta(n);
        OxTensorMeta *nt = ox_graph_tensor_meta_new(gs[k], t->dtype, t->rank);
        nt->device = t->device;
        for (int32_t i = 0; i < t->rank; i++)
          nt->shape[i].v = (i < limit && !bad[i] && t->shape[i].v > 2) ? 2 : t->shape[i].v;
        OxMeta m = {.kind = OX_META_TENSOR, .n = 1, .t = nt};
        ox_graph_set_meta(gs[k], id, &m);
      } else if (n->op != OX_OP_GET_ATTR) {
        OxMeta none = {0};
        ox_graph_set_meta(gs[k], id, &none);
      }
    }
    OxShapeStats st;
    ox_shape_infer_graph(gs[k], NULL, &st);
    if (st.unknown || st.inconsistent || st.disagreed) return false;
  }
  OX_GRAPH_FOREACH(a, id) {
    if (a->nodes[id].op != OX_OP_PLACEHOLDER) continue;
    ox_tensor_meta_format(ox_node_tensor_meta(&a->nodes[id]), false, false, now, sizeof now);
    break;
  }
  snprintf(desc, cap, "checked at %s, dump has %s", now, was);
  return true;
}

/* Shrinks placeholder dims by a uniform rule and keeps the result only if shape inference
 * accepts both regions at the new sizes: every node inferred, nothing inconsistent. A rewrite
 * that is valid for the dump's sizes but spells a size out (split sections, view sizes,
 * normalized_shape) fails inference at other sizes and is not shrunk. Modes: 0 = every dim
 * above 4 becomes 4; 1 = only the leading dim, to 2 (rows of a linear, batch of a norm); 2 =
 * every dim but the leading one above 4 becomes 4 (an unbind, select or slice along the leading
 * dim with its indices spelled out: unbind_stack_to_slices, merge_unbind_stack).
 * *touched as for reduce_regions. */
static bool shrink_uniform(OxGraph *a, OxGraph *b, int mode, char *desc, size_t cap, bool *touched) {
  OxGraph *gs[2] = {a, b};
  char was[160] = "", now[160] = "";
  bool any = false;
  for (int k = 0; k < 2; k++) {
    OX_GRAPH_FOREACH(gs[k], id) {
      OxNode *n = &gs[k]->nodes[id];
      if (n->op == OX_OP_PLACEHOLDER || n->op == OX_OP_GET_ATTR) {
        const OxTensorMeta *t = ox_node_tensor_meta(n);
        if (!t) return false;
        if (t->rank < 1) continue;
        *touched = true;
        OxTensorMeta *nt = ox_graph_tensor_meta_new(gs[k], t->dtype, t->rank);
        nt->device = t->device;
        for (int32_t i = 0; i < t->rank; i++) {
          if (t->shape[i].sym) return false;
          int64_t v = t->shape[i].v;
          if (mode == 0 && v > 4) v = 4;
          if (mode == 1 && i == 0 && t->rank >= 2 && v > 2) v = 2; /* weights and biases (rank 1) keep their size */
          if (mode == 2 && i > 0 && v > 4) v = 4; /* the leading dim keeps its size: unbind/select/slice along it */
          any |= v != t->shape[i].v;
          nt->shape[i].v = v;
        }
        if (!was[0] && n->op == OX_OP_PLACEHOLDER) {
          ox_tensor_meta_format(t, false, false, was, sizeof was);
          ox_tensor_meta_format(nt, false, false, now, sizeof now);
        }
        OxMeta m = {.kind = OX_META_TENSOR, .n = 1, .t = nt};
        ox_graph_set_meta(gs[k], id, &m);
      } else if (n->op != OX_OP_OUTPUT) {
        *touched = true;
        OxMeta none = {0};
        ox_graph_set_meta(gs[k], id, &none);
      }
    }
  }
  if (!any) return false;
  for (int k = 0; k < 2; k++) {
    OxShapeStats st;
    ox_shape_infer_graph(gs[k], NULL, &st);
    if (st.unknown || st.inconsistent || st.disagreed) return false;
  }
  snprintf(desc, cap, "checked at %s, dump has %s", now, was);
  return true;
}

static bool skippable(const char *msg) {
  return strstr(msg, "no kernel") || strstr(msg, "symbolic") || strstr(msg, "random op") || strstr(msg, "budget") ||
         strstr(msg, "no shape") || strstr(msg, "not supported") || strstr(msg, "unsupported");
}

typedef struct {
  double max_abs, max_rel, tol;
  bool fail;
  char why[256];
} Cmp;

static void compare_values(const OxRtValue *got, const OxRtValue *want, Cmp *c) {
  if (!got || !want) {
    c->fail = true;
    snprintf(c->why, sizeof c->why, "a value is missing");
    return;
  }
  if (want->kind == OX_RT_TENSOR && got->kind == OX_RT_TENSOR) {
    OxCompare r;
    bool ok = ox_tensor_compare(got->u.t, want->u.t, NULL, &r);
    if (r.max_abs > c->max_abs) c->max_abs = r.max_abs;
    if (r.max_rel > c->max_rel) c->max_rel = r.max_rel;
    double tol = r.tol.atol * r.scale;
    if (tol > c->tol) c->tol = tol;
    if (!ok && !c->fail) {
      c->fail = true;
      snprintf(c->why, sizeof c->why, "%s", r.why);
    }
    return;
  }
  if ((want->kind == OX_RT_TUPLE || want->kind == OX_RT_LIST) && (got->kind == OX_RT_TUPLE || got->kind == OX_RT_LIST)) {
    if (want->n != got->n) {
      c->fail = true;
      snprintf(c->why, sizeof c->why, "%u values vs %u", got->n, want->n);
      return;
    }
    for (uint32_t i = 0; i < want->n; i++) compare_values(got->u.items[i], want->u.items[i], c);
    return;
  }
  if (ox_rt_is_scalar(want) && ox_rt_is_scalar(got)) {
    if (ox_rt_scalar(want) != ox_rt_scalar(got)) {
      c->fail = true;
      snprintf(c->why, sizeof c->why, "scalar %g vs %g", ox_rt_scalar(got), ox_rt_scalar(want));
    }
    return;
  }
  if (want->kind != got->kind) {
    c->fail = true;
    snprintf(c->why, sizeof c->why, "%s vs %s", ox_rt_kind_name(got->kind), ox_rt_kind_name(want->kind));
  }
}

void ox_check_numeric(OxPassCtx *c, OxCheckResult *r) {
  OxGraph *g = c->g;
  char err[512], msg[900];
  const char *why_skip = NULL;
  if (!c->n_step_replaced) {
    r->status = OX_CHECK_SKIPPED;
    r->detail = c->trace ? ox_trace_intern(c->trace, "the step replaced no value") : NULL;
    return;
  }
  /* the replacements that are not added nodes still need stand-ins in AFTER */
  OxNodeId *extra = ox_xcalloc(c->n_step_replaced + 1, sizeof *extra);
  uint32_t n_extra = 0;
  for (uint32_t i = 0; i < c->n_step_replaced; i++) extra[n_extra++] = c->step_prov_new[i];
  Set sb = {0}, sa = {0};
  for (uint32_t i = 0; i < c->n_step_removed; i++) set_add(&sb, c->step_removed[i]);
  for (uint32_t i = 0; i < c->n_step_added; i++) set_add(&sa, c->step_added[i]);
  bool closed = close_regions(g, &sb, &sa, extra, n_extra, 4096);
  IdMap map_b = {0}, map_a = {0};
  OxGraph *before = NULL, *after = NULL;
  if (closed) {
    before = extract(g, sb.ids, sb.n, NULL, 0, &map_b, err, sizeof err);
    after = before ? extract(g, sa.ids, sa.n, extra, n_extra, &map_a, err, sizeof err) : NULL;
  }
  free(extra);
  set_free(&sb);
  set_free(&sa);
  if (!closed) {
    r->status = OX_CHECK_SKIPPED;
    r->detail = c->trace ? ox_trace_intern(c->trace, "the regions do not share their inputs within 4096 nodes") : NULL;
    return;
  }
  if (!before || !after) {
    snprintf(msg, sizeof msg, "cannot extract the regions: %s", err);
    r->status = OX_CHECK_FAILED;
    r->detail = c->trace ? ox_trace_intern(c->trace, msg) : NULL;
    ox_graph_free(before);
    idmap_free(&map_b);
    idmap_free(&map_a);
    return;
  }
  uint64_t flops = region_work(before) + region_work(after);
  uint64_t budget = c->checks->numeric_budget ? c->checks->numeric_budget : 50000000ull;
  Cmp cmp = {0};
  uint32_t trials = c->checks->numeric_trials ? c->checks->numeric_trials : 3;
  uint32_t t;
  char reduced[400] = "";
  if (flops > 65536) {
    /* Where every op of both regions treats some dims independently (the op table says which),
     * shrinking those dims checks the same rewrite at a fraction of the cost, so it is done
     * whenever the regions are not already tiny; the record says so. Otherwise the regions
     * run at full size within the budget, or the check is skipped. */
    /* The attempts change metas only, inside a transaction on each region: a failed attempt
     * is rolled back (cheaper than working on copies: a region graph costs ~100k instructions
     * to clone, three attempts a check at 100k nodes). */
    bool touched = false;
    ox_graph_txn_begin(before);
    ox_graph_txn_begin(after);
    bool ok = reduce_regions(before, after, reduced, sizeof reduced, &touched);
    for (int mode = 0; mode < 3 && !ok; mode++) {
      if (touched) { /* a failed attempt that changed nothing leaves the regions as they were */
        ox_graph_txn_rollback(before);
        ox_graph_txn_rollback(after);
        ox_graph_txn_begin(before);
        ox_graph_txn_begin(after);
        touched = false;
      }
      ok = shrink_uniform(before, after, mode, reduced, sizeof reduced, &touched);
    }
    uint64_t reduced_work = ok ? region_work(before) + region_work(after) : 0;
    if (ok && reduced_work <= budget) {
      ox_graph_txn_commit(before);
      ox_graph_txn_commit(after);
      flops = reduced_work;
      r->checked_shape = c->trace ? ox_trace_intern(c->trace, reduced) : NULL;
    } else {
      reduced[0] = 0;
      ox_graph_txn_rollback(before);
      ox_graph_txn_rollback(after);
    }
  }
  if (flops > budget) {
    snprintf(msg, sizeof msg, "the regions need about %llu FLOPs, over the budget of %llu (--numeric-budget)",
             (unsigned long long)flops, (unsigned long long)budget);
    why_skip = msg;
    trials = 0;
  }
  /* before and after run one at a time: only the values to compare outlive the before run,
   * so the check's peak is the larger region, not both (a 44-way batch_linear at full size
   * holds ~10 MB of tensors per region) */
  OxRtValue **want = ox_xcalloc(c->n_step_replaced ? c->n_step_replaced : 1, sizeof *want);
  /* the AFTER region's inputs that BEFORE drew already: the same node name (or parameter path)
   * gives the same seeded values in both runs, so they are handed over instead of drawn again
   * (a boundary such as the [64, 8192] input of a split costs as much to draw as the regions
   * cost to run); values are never written by the kernels */
  OxNodeId *share_to = ox_xcalloc(before->n_nodes + 1, sizeof *share_to);
  OxRtValue **share_v = ox_xcalloc(before->n_nodes + 1, sizeof *share_v);
  uint32_t n_share = 0;
  for (t = 0; t < trials && !why_skip && !cmp.fail; t++) {
    uint64_t seed = c->checks->seed + t * 7919u;
    OxInterp *ib = ox_interp_new(before, seed);
    if (ox_interp_run(ib, NULL, 0, err, sizeof err) != 0) {
      snprintf(msg, sizeof msg, "before: %s", err);
      why_skip = msg;
    } else {
      for (uint32_t i = 0; i < c->n_step_replaced; i++) {
        const OxRtValue *v = ox_interp_value(ib, idmap_get(&map_b, c->step_prov_old[i]));
        want[i] = v ? ox_rt_ref((OxRtValue *)v) : NULL;
      }
      n_share = shared_inputs(before, after, ib, share_to, share_v);
    }
    ox_interp_free(ib);
    if (!why_skip) {
      OxInterp *ia = ox_interp_new(after, seed);
      for (uint32_t i = 0; i < n_share; i++) {
        ox_interp_set_value(ia, share_to[i], share_v[i]); /* takes the reference */
        share_v[i] = NULL;
      }
      n_share = 0;
      if (ox_interp_run(ia, NULL, 0, err, sizeof err) != 0) {
        snprintf(msg, sizeof msg, "after: %s", err);
        if (skippable(err)) {
          why_skip = msg;
        } else {
          cmp.fail = true;
          snprintf(cmp.why, sizeof cmp.why, "after: %.200s", err);
        }
      } else {
        for (uint32_t i = 0; i < c->n_step_replaced && !cmp.fail; i++) {
          OxNodeId o = c->step_prov_old[i], nw = c->step_prov_new[i];
          const OxRtValue *got = ox_interp_value(ia, idmap_get(&map_a, nw));
          compare_values(got, want[i], &cmp);
          if (cmp.fail) {
            char tmp[256];
            snprintf(tmp, sizeof tmp, "%s", cmp.why);
            snprintf(cmp.why, sizeof cmp.why, "%.60s vs %.60s: %.120s", g->nodes[nw].name, g->nodes[o].name, tmp);
          }
        }
      }
      ox_interp_free(ia);
    }
    for (uint32_t i = 0; i < c->n_step_replaced; i++) {
      ox_rt_unref(want[i]);
      want[i] = NULL;
    }
  }
  for (uint32_t i = 0; i < n_share; i++) ox_rt_unref(share_v[i]);
  free(share_to);
  free(share_v);
  free(want);
  r->trials = t;
  r->max_abs = cmp.max_abs;
  r->max_rel = cmp.max_rel;
  r->tol = cmp.tol;
  if (cmp.fail) {
    r->status = OX_CHECK_FAILED;
    snprintf(msg, sizeof msg, "%s (trial %u)", cmp.why, t);
  } else if (why_skip) {
    r->status = OX_CHECK_SKIPPED;
    if (why_skip != msg) snprintf(msg, sizeof msg, "%s", why_skip);
  } else {
    r->status = OX_CHECK_PASSED;
    snprintf(msg, sizeof msg, "%u values equal over %u trials: max abs %.3g, max rel %.3g (tol %.3g)%s%s",
             c->n_step_replaced, t, cmp.max_abs, cmp.max_rel, cmp.tol, reduced[0] ? "; " : "", reduced);
  }
  r->detail = c->trace ? ox_trace_intern(c->trace, msg) : NULL;
  ox_graph_free(before);
  ox_graph_free(after);
  idmap_free(&map_b);
  idmap_free(&map_a);
}
