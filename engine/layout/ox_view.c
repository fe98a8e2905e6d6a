/* ox_view.c - focus neighbourhoods and the cluster hierarchy of large graphs.
 *
 * Cluster paths come from the dump where it has them (module paths), else from names:
 * parameters and submodule calls carry their module path in their name
 * ("layers_0_towers_3_linear0_weight", "layer1_0_conv1"), as (word, number) pairs followed by
 * at least one more token. Call nodes named after their op ("linear_16", "relu_3") carry no
 * path; they join the cluster of their parameter inputs, else of their producers when those
 * agree (their lowest common cluster), walking the graph in order, so a tower's linear ->
 * layer_norm -> tanh chain lands in the tower's cluster; plumbing left at the top (a split
 * feeding every tower) then joins the lowest common cluster of its users. All work is linear
 * in the nodes and edges (times the hierarchy depth).
 */
#include "layout/ox_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "ops/ox_ops.h"

/* ------------------------------------------------------------------ neighbourhood */

uint32_t ox_view_neighborhood(const OxGraph *g, const OxNodeId *seeds, uint32_t n_seeds, uint32_t radius,
                              uint32_t max_nodes, OxNodeId *out, uint32_t max_out) {
  return ox_view_neighborhood_skip(g, seeds, n_seeds, radius, max_nodes, NULL, out, max_out);
}

uint32_t ox_view_neighborhood_skip(const OxGraph *g, const OxNodeId *seeds, uint32_t n_seeds, uint32_t radius,
                                   uint32_t max_nodes, const uint8_t *skip, OxNodeId *out, uint32_t max_out) {
  uint32_t *dist = ox_xcalloc(g->n_nodes + 1, sizeof *dist); /* 0 = unseen, else distance + 1 */
  OxNodeId *queue = ox_xcalloc(g->n_live + n_seeds + 1, sizeof *queue);
  uint32_t qh = 0, qt = 0, found = 0;
  OxNodeId ins[256];
  for (uint32_t i = 0; i < n_seeds; i++) {
    OxNodeId s = seeds[i];
    const OxNode *n = ox_graph_node(g, s);
    if (!n || n->erased || dist[s] || (skip && skip[s])) continue;
    dist[s] = 1;
    queue[qt++] = s;
  }
  while (qh < qt && (!max_nodes || found < max_nodes)) {
    OxNodeId x = queue[qh++];
    if (found < max_out) out[found] = x;
    found++;
    uint32_t d = dist[x] - 1;
    if (d >= radius) continue;
    const OxNode *n = &g->nodes[x];
    uint32_t k = ox_graph_inputs_r(g, x, ins, 256);
    for (uint32_t i = 0; i < k; i++)
      if (!dist[ins[i]] && !g->nodes[ins[i]].erased && !(skip && skip[ins[i]])) {
        dist[ins[i]] = d + 2;
        queue[qt++] = ins[i];
      }
    for (uint32_t i = 0; i < n->n_users; i++) {
      OxNodeId u = n->users[i];
      if (!dist[u] && !g->nodes[u].erased && !(skip && skip[u])) {
        dist[u] = d + 2;
        queue[qt++] = u;
      }
    }
  }
  free(dist);
  free(queue);
  return found;
}

uint32_t ox_view_fit_radius(const OxGraph *g, const OxNodeId *seeds, uint32_t n_seeds, uint32_t max_radius,
                            uint32_t budget) {
  uint32_t best = 0;
  for (uint32_t r = 1; r <= max_radius; r++) {
    uint32_t n = ox_view_neighborhood(g, seeds, n_seeds, r, budget + 1, NULL, 0);
    if (n > budget) break;
    best = r;
  }
  return best;
}

/* ------------------------------------------------------------------ folded parameters */

/* A topological order of the live nodes (Kahn over inputs; what is left in a cycle, in id
 * order). Returns the count; order has capacity g->n_nodes. */
static uint32_t topo_order(const OxGraph *g, OxNodeId *order) {
  uint32_t *indeg = ox_xcalloc(g->n_nodes + 1, sizeof *indeg);
  uint8_t *done = ox_xcalloc(g->n_nodes + 1, 1);
  OxNodeId ins[256];
  uint32_t live = 0, qh = 0, qt = 0;
  OX_GRAPH_FOREACH(g, id) {
    live++;
    uint32_t k = ox_graph_inputs_r(g, id, ins, 256);
    for (uint32_t j = 0; j < k; j++)
      if (!g->nodes[ins[j]].erased) indeg[id]++;
  }
  OX_GRAPH_FOREACH(g, id) if (!indeg[id]) order[qt++] = id;
  OxNodeId scan = 1;
  while (qh < live) {
    if (qh == qt) {
      while (scan < g->n_nodes && (g->nodes[scan].erased || done[scan] || !indeg[scan])) scan++;
      if (scan >= g->n_nodes) break;
      indeg[scan] = 0;
      order[qt++] = scan;
    }
    OxNodeId x = order[qh++];
    done[x] = 1;
    const OxNode *n = &g->nodes[x];
    for (uint32_t i = 0; i < n->n_users; i++) {
      OxNodeId u = n->users[i];
      if (!done[u] && indeg[u] && --indeg[u] == 0) order[qt++] = u;
    }
  }
  free(indeg);
  free(done);
  return qh;
}

/* Ops that compute from their inputs (a matmul, a norm, a convolution, a random draw), as
 * opposed to moving, casting or combining them elementwise: never part of a parameter. */
static bool computes(const OxGraph *g, const OxNode *n) {
  const OxSpelling *sp;
  OxOpId id = ox_op_of_node(g, n, &sp);
  if (id != OX_OPID_NONE) {
    unsigned f = ox_op_info(id)->flags;
    return (f & OX_OPF_RANDOM) || !(f & (OX_OPF_POINTWISE | OX_OPF_VIEW | OX_OPF_PLUMBING));
  }
  static const char *const heavy[] = {"conv", "embedding", "mm", "linear", "norm", "attention", "lstm", "gru",
                                      "random", "rand", "dropout", "seed", "softmax", "triton", NULL};
  const char *t = n->op == OX_OP_CALL_MODULE && n->module_type ? n->module_type : n->target;
  for (const char *const *h = heavy; t && *h; h++)
    if (strstr(t, *h)) return true;
  return false;
}

static bool plumbing(const OxGraph *g, const OxNode *n) {
  const OxSpelling *sp;
  OxOpId id = ox_op_of_node(g, n, &sp);
  return id != OX_OPID_NONE && (ox_op_info(id)->flags & OX_OPF_PLUMBING);
}

uint32_t ox_view_fold_params(const OxGraph *g, uint32_t *fold, uint16_t *n_params) {
  memset(fold, 0, g->n_nodes * sizeof *fold);
  if (n_params) memset(n_params, 0, g->n_nodes * sizeof *n_params);
  OxNodeId *order = ox_xcalloc(g->n_nodes + 1, sizeof *order);
  uint32_t n = topo_order(g, order);
  uint8_t *like = ox_xcalloc(g->n_nodes + 1, 1); /* parameter-like */
  uint8_t *data = ox_xcalloc(g->n_nodes + 1, 1); /* has a data input */
  OxNodeId ins[256];
  for (uint32_t i = 0; i < n; i++) {
    OxNodeId x = order[i];
    const OxNode *nd = &g->nodes[x];
    uint32_t k = ox_graph_inputs_r(g, x, ins, 256), n_like = 0;
    for (uint32_t j = 0; j < k; j++) n_like += like[ins[j]];
    data[x] = n_like < k;
    if (nd->op == OX_OP_PLACEHOLDER || nd->op == OX_OP_GET_ATTR)
      like[x] = 1;
    else if (nd->op != OX_OP_OUTPUT && k >= 1 && n_like == k && nd->n_users == 1 && !computes(g, nd) &&
             (k <= 2 || plumbing(g, nd)))
      like[x] = 1;
  }
  uint32_t folded = 0;
  for (uint32_t i = n; i-- > 0;) {
    OxNodeId x = order[i];
    const OxNode *nd = &g->nodes[x];
    if (!like[x] || !nd->n_users) continue;
    bool ok = true;
    for (uint32_t j = 0; j < nd->n_users && ok; j++) {
      OxNodeId u = nd->users[j];
      ok = like[u] ? fold[u] != 0 : data[u];
    }
    if (!ok) continue;
    OxNodeId u = nd->users[0];
    fold[x] = like[u] ? fold[u] : u;
    folded++;
  }
  /* A node computed from a drawn node (a padding mask ids == 0 of the model's input ids) is no
   * parameter: folding it would hide that its consumer depends on the drawn one. Unfolded in
   * program order, so a chain (ids -> eq -> logical_not) is drawn whole. */
  for (uint32_t i = 0; i < n; i++) {
    OxNodeId x = order[i];
    const OxNode *nd = &g->nodes[x];
    if (!fold[x] || nd->op == OX_OP_PLACEHOLDER || nd->op == OX_OP_GET_ATTR) continue;
    uint32_t k = ox_graph_inputs_r(g, x, ins, 256);
    for (uint32_t j = 0; j < k; j++)
      if (!fold[ins[j]] && !g->nodes[ins[j]].erased) {
        fold[x] = 0;
        folded--;
        break;
      }
  }
  if (n_params)
    for (uint32_t i = 0; i < n; i++) {
      OxNodeId x = order[i];
      const OxNode *nd = &g->nodes[x];
      if (!fold[x] || (nd->op != OX_OP_PLACEHOLDER && nd->op != OX_OP_GET_ATTR)) continue;
      /* every drawn consumer it reaches through folded nodes */
      for (uint32_t j = 0; j < nd->n_users; j++) {
        OxNodeId u = nd->users[j];
        for (uint32_t hops = 0; fold[u] && hops < 64; hops++) u = g->nodes[u].n_users ? g->nodes[u].users[0] : fold[u];
        if (!fold[u] && n_params[u] < UINT16_MAX) n_params[u]++;
      }
    }
  free(order);
  free(like);
  free(data);
  return folded;
}

/* ------------------------------------------------------------------ cluster paths */

static bool all_digits(const char *s, size_t n) {
  if (!n) return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

const char *ox_view_cluster_path(const OxNode *n, char *buf, size_t cap) {
  buf[0] = 0;
  if (n->module_path && n->module_path[0]) {
    snprintf(buf, cap, "%s", n->module_path);
    return buf;
  }
  /* call_module targets and get_attr targets are dotted paths already */
  const char *src = n->name;
  if ((n->op == OX_OP_CALL_MODULE || n->op == OX_OP_GET_ATTR) && strchr(n->target, '.')) {
    /* the module that owns it: drop the last component ("layer1.0.conv1" -> "layer1.0") */
    const char *dot = strrchr(n->target, '.');
    size_t len = (size_t)(dot - n->target);
    if (len >= cap) len = cap - 1;
    memcpy(buf, n->target, len);
    buf[len] = 0;
    /* "layer1.0" keeps only (word, number) pairs: "fc.weight" -> "" */
    bool ok = false;
    for (size_t i = 0; i < len; i++) ok |= buf[i] >= '0' && buf[i] <= '9';
    if (!ok) buf[0] = 0;
    return buf;
  }
  static const char *const prefixes[] = {"l__self___", "L__self___", "self_", "p_", "b_", "l_", "L_", NULL};
  for (const char *const *p = prefixes; *p; p++)
    if (strncmp(src, *p, strlen(*p)) == 0) {
      src += strlen(*p);
      break;
    }
  /* tokens split on '_' */
  const char *tok[64];
  size_t len[64];
  int nt = 0;
  for (const char *q = src; *q && nt < 64;) {
    const char *e = strchr(q, '_');
    size_t l = e ? (size_t)(e - q) : strlen(q);
    if (l) {
      tok[nt] = q;
      len[nt++] = l;
    }
    q = e ? e + 1 : q + l;
  }
  int pairs = 0;
  while (2 * pairs + 1 < nt && !all_digits(tok[2 * pairs], len[2 * pairs]) &&
         all_digits(tok[2 * pairs + 1], len[2 * pairs + 1]))
    pairs++;
  if (!pairs || 2 * pairs >= nt) return buf; /* a path must leave a name behind */
  size_t o = 0;
  for (int i = 0; i < 2 * pairs && o + 1 < cap; i++) {
    int w = snprintf(buf + o, cap - o, "%s%.*s", i ? "." : "", (int)len[i], tok[i]);
    if (w < 0) break;
    o += (size_t)w;
  }
  if (o >= cap) buf[cap - 1] = 0;
  return buf;
}

/* ------------------------------------------------------------------ hierarchy */

typedef struct {
  char **keys;
  uint32_t *vals;
  uint32_t cap, count;
} SMap;

static uint32_t smap_get(const SMap *m, const char *k) {
  size_t j = ox_hash_bytes(k, strlen(k)) & (m->cap - 1);
  while (m->keys[j]) {
    if (strcmp(m->keys[j], k) == 0) return m->vals[j];
    j = (j + 1) & (m->cap - 1);
  }
  return UINT32_MAX;
}

static void smap_put(SMap *m, char *k, uint32_t v) {
  if ((m->count + 1) * 2 > m->cap) {
    SMap n = {ox_xcalloc(m->cap * 2, sizeof(char *)), ox_xcalloc(m->cap * 2, sizeof(uint32_t)), m->cap * 2, 0};
    for (uint32_t i = 0; i < m->cap; i++)
      if (m->keys[i]) smap_put(&n, m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    *m = n;
  }
  size_t j = ox_hash_bytes(k, strlen(k)) & (m->cap - 1);
  while (m->keys[j]) j = (j + 1) & (m->cap - 1);
  m->keys[j] = k;
  m->vals[j] = v;
  m->count++;
}

typedef struct {
  OxCluster *c;
  uint32_t n, cap;
  SMap map;
  char **owned;
  uint32_t n_owned, cap_owned;
} Builder;

static char *own(Builder *b, const char *s, size_t n) {
  char *r = ox_xcalloc(n + 1, 1);
  memcpy(r, s, n);
  if (b->n_owned == b->cap_owned) {
    b->cap_owned = b->cap_owned ? b->cap_owned * 2 : 64;
    b->owned = ox_xrealloc(b->owned, b->cap_owned * sizeof *b->owned);
  }
  b->owned[b->n_owned++] = r;
  return r;
}

/* Index of the cluster for path, creating it and its ancestors. */
static uint32_t cluster_of(Builder *b, const char *path) {
  uint32_t idx = smap_get(&b->map, path);
  if (idx != UINT32_MAX) return idx;
  const char *dot = strrchr(path, '.');
  uint32_t parent = 0;
  if (dot) {
    char *pp = own(b, path, (size_t)(dot - path));
    parent = cluster_of(b, pp);
  }
  if (b->n == b->cap) {
    b->cap *= 2;
    b->c = ox_xrealloc(b->c, b->cap * sizeof *b->c);
  }
  idx = b->n++;
  OxCluster *c = &b->c[idx];
  memset(c, 0, sizeof *c);
  c->path = own(b, path, strlen(path));
  c->label = dot ? dot + 1 - path + c->path : c->path;
  c->parent = (int32_t)parent;
  c->depth = b->c[parent].depth + 1;
  smap_put(&b->map, (char *)c->path, idx);
  return idx;
}

/* Lowest common ancestor of two clusters (0 = the root). */
static int32_t lca(const OxCluster *c, int32_t a, int32_t b) {
  while (a != b) {
    if (c[a].depth >= c[b].depth)
      a = c[a].parent;
    else
      b = c[b].parent;
    if (a < 0 || b < 0) return 0;
  }
  return a;
}

OxHierarchy *ox_view_hierarchy(const OxGraph *g) {
  Builder b = {0};
  b.cap = 64;
  b.c = ox_xcalloc(b.cap, sizeof *b.c);
  b.map.cap = 64;
  b.map.keys = ox_xcalloc(b.map.cap, sizeof(char *));
  b.map.vals = ox_xcalloc(b.map.cap, sizeof(uint32_t));
  b.n = 1;
  b.c[0].path = own(&b, "", 0);
  b.c[0].label = "(top)";
  b.c[0].parent = -1;
  smap_put(&b.map, (char *)b.c[0].path, 0);
  OxHierarchy *h = ox_xcalloc(1, sizeof *h);
  h->n_node_ids = g->n_nodes;
  h->node_cluster = ox_xcalloc(g->n_nodes + 1, sizeof *h->node_cluster);
  for (uint32_t i = 0; i < g->n_nodes; i++) h->node_cluster[i] = -1;
  char buf[512];
  OxNodeId ins[64];
  /* pass 1, in order: own path, else the common cluster of the parameters, else of the producers */
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    ox_view_cluster_path(n, buf, sizeof buf);
    int32_t c = 0;
    if (buf[0]) {
      c = (int32_t)cluster_of(&b, buf);
    } else if (n->op != OX_OP_PLACEHOLDER && n->op != OX_OP_OUTPUT) {
      uint32_t k = ox_graph_inputs(g, id, ins, 64);
      if (k > 64) k = 64;
      int32_t param = -1, prod = -1;
      for (uint32_t i = 0; i < k; i++) {
        const OxNode *in = &g->nodes[ins[i]];
        int32_t ic = h->node_cluster[ins[i]];
        if (ic <= 0) continue;
        bool is_param = in->op == OX_OP_GET_ATTR || in->op == OX_OP_PLACEHOLDER;
        int32_t *slot = is_param ? &param : &prod;
        *slot = *slot < 0 ? ic : lca(b.c, *slot, ic);
      }
      c = param > 0 ? param : prod > 0 ? prod : 0;
    }
    h->node_cluster[id] = c;
  }
  /* pass 2, in reverse: plumbing still at the top (split, getitem feeding towers) joins the
   * common cluster of its users */
  for (OxNodeId id = g->tail; id; id = g->link[id].prev) {
    const OxNode *n = &g->nodes[id];
    if (n->erased || h->node_cluster[id] != 0 || n->op == OX_OP_PLACEHOLDER || n->op == OX_OP_OUTPUT) continue;
    int32_t c = -1;
    for (uint32_t i = 0; i < n->n_users; i++) {
      int32_t uc = h->node_cluster[n->users[i]];
      if (uc <= 0) continue;
      c = c < 0 ? uc : lca(b.c, c, uc);
    }
    if (c > 0) h->node_cluster[id] = c;
  }
  free(b.map.keys);
  free(b.map.vals);
  h->clusters = b.c;
  h->n_clusters = b.n;
  b.owned = ox_xrealloc(b.owned, (b.n_owned + 1) * sizeof *b.owned);
  b.owned[b.n_owned] = NULL;
  h->owned = b.owned;
  ox_view_hierarchy_refine(h, g, OX_VIEW_FAN);
  return h;
}

void ox_view_hierarchy_reindex(OxHierarchy *h) {
  OxCluster *c = h->clusters;
  for (uint32_t i = 0; i < h->n_clusters; i++) c[i].n_direct = c[i].n_total = c[i].n_children = 0;
  for (uint32_t i = 0; i < h->n_node_ids; i++) {
    int32_t x = h->node_cluster[i];
    if (x < 0) continue;
    c[x].n_direct++;
    for (; x >= 0; x = c[x].parent) c[x].n_total++;
  }
  /* children, contiguous per parent, in creation order */
  free(h->child_index);
  h->child_index = ox_xcalloc(h->n_clusters + 1, sizeof *h->child_index);
  uint32_t *cnt = ox_xcalloc(h->n_clusters + 1, sizeof *cnt);
  for (uint32_t i = 1; i < h->n_clusters; i++) cnt[c[i].parent]++;
  uint32_t pos = 0;
  for (uint32_t i = 0; i < h->n_clusters; i++) {
    c[i].first_child = pos;
    pos += cnt[i];
  }
  for (uint32_t i = 1; i < h->n_clusters; i++) {
    OxCluster *p = &c[c[i].parent];
    h->child_index[p->first_child + p->n_children++] = i;
  }
  free(cnt);
}

void ox_view_hierarchy_free(OxHierarchy *h) {
  if (!h) return;
  for (char **p = h->owned; p && *p; p++) free(*p);
  free(h->owned);
  free(h->clusters);
  free(h->child_index);
  free(h->node_cluster);
  free(h);
}

/* ------------------------------------------------------------------ overview */

uint32_t ox_view_overview_size(const OxHierarchy *h, const uint8_t *open) {
  uint32_t n = h->clusters[0].n_direct + h->clusters[0].n_children;
  for (uint32_t c = 1; c < h->n_clusters; c++) {
    /* a cluster's items are shown only when it and every ancestor are open */
    bool shown = true;
    for (int32_t x = (int32_t)c; x > 0 && shown; x = h->clusters[x].parent) shown = open && open[x];
    if (shown) n += h->clusters[c].n_direct + h->clusters[c].n_children - 1;
  }
  return n;
}

uint32_t ox_view_auto_open(const OxHierarchy *h, uint32_t budget, uint8_t *open) {
  memset(open, 0, h->n_clusters);
  open[0] = 1;
  uint32_t size = h->clusters[0].n_direct + h->clusters[0].n_children;
  /* breadth-first over open clusters' children: a queue of candidates, shallowest first */
  uint32_t *queue = ox_xcalloc(h->n_clusters + 1, sizeof *queue);
  uint32_t qh = 0, qt = 0;
  for (uint32_t i = 0; i < h->clusters[0].n_children; i++) queue[qt++] = h->child_index[h->clusters[0].first_child + i];
  while (qh < qt) {
    uint32_t c = queue[qh++];
    const OxCluster *cl = &h->clusters[c];
    uint32_t grow = cl->n_direct + cl->n_children - 1;
    if (size + grow > budget) continue;
    open[c] = 1;
    size += grow;
    for (uint32_t i = 0; i < cl->n_children; i++) queue[qt++] = h->child_index[cl->first_child + i];
  }
  free(queue);
  return size;
}

OxGraph *ox_view_overview(const OxGraph *g, const OxHierarchy *h, const uint8_t *open) {
  return ox_view_overview_map(g, h, open, NULL, NULL);
}

OxGraph *ox_view_overview_map(const OxGraph *g, const OxHierarchy *h, const uint8_t *open, uint32_t *node_item,
                              int32_t *item_cluster) {
  return ox_view_overview_map_fold(g, h, open, NULL, node_item, item_cluster);
}

OxGraph *ox_view_overview_map_fold(const OxGraph *g, const OxHierarchy *h, const uint8_t *open, const uint32_t *fold,
                                   uint32_t *node_item, int32_t *item_cluster) {
  /* item of a node: the shallowest closed cluster on its path below the root, else the node */
  uint32_t *item = ox_xcalloc(g->n_nodes + 1, sizeof *item);          /* overview node id */
  uint32_t *cluster_item = ox_xcalloc(h->n_clusters + 1, sizeof *cluster_item);
  int32_t chain[256];
  OxGraph *o = ox_graph_new();
  o->name = ox_graph_intern(o, "overview");
  OX_GRAPH_FOREACH(g, id) {
    if (fold && fold[id]) continue; /* drawn in its consumer's item (below) */
    int32_t c = h->node_cluster[id];
    int depth = 0;
    for (int32_t x = c; x > 0 && depth < 256; x = h->clusters[x].parent) chain[depth++] = x;
    int32_t closed = -1;
    for (int i = depth - 1; i >= 0; i--)
      if (!open || !open[chain[i]]) {
        closed = chain[i];
        break;
      }
    const OxNode *n = &g->nodes[id];
    if (closed < 0) {
      OxNodeId nid = ox_graph_add_node(o, (OxOp)n->op == OX_OP_OUTPUT ? OX_OP_CALL_FUNCTION : (OxOp)n->op, n->name,
                                       n->target, ox_value_none(), ox_value_none());
      ox_graph_set_meta(o, nid, &n->meta);
      ox_graph_add_provenance(o, nid, id);
      item[id] = nid;
      if (item_cluster) item_cluster[nid] = -1;
    } else {
      if (!cluster_item[closed]) {
        const OxCluster *cl = &h->clusters[closed];
        char name[600];
        snprintf(name, sizeof name, "%s", cl->path);
        for (char *p = name; *p; p++)
          if (*p == '.') *p = '_';
        char target[640];
        snprintf(target, sizeof target, "%s [%u nodes]", cl->kind == OX_CLUSTER_MODULE ? cl->path : cl->label,
                 cl->n_total);
        OxNodeId nid = ox_graph_add_node(o, OX_OP_CALL_MODULE, name, target, ox_value_none(), ox_value_none());
        o->nodes[nid].module_type = ox_graph_intern(o, "cluster");
        ox_graph_opix_stale(o, nid);
        cluster_item[closed] = nid;
        if (item_cluster) item_cluster[nid] = closed;
      }
      item[id] = cluster_item[closed];
    }
  }
  if (fold)
    OX_GRAPH_FOREACH(g, id) if (fold[id] && fold[id] < g->n_nodes) item[id] = item[fold[id]];
  /* edges: producer item -> consumer item, once */
  uint32_t n_items = o->n_nodes;
  OxNodeId **ins = ox_xcalloc(n_items + 1, sizeof *ins);
  uint32_t *n_ins = ox_xcalloc(n_items + 1, sizeof *n_ins), *cap_ins = ox_xcalloc(n_items + 1, sizeof *cap_ins);
  OxNodeId buf[256];
  OX_GRAPH_FOREACH(g, id) {
    uint32_t k = ox_graph_inputs(g, id, buf, 256);
    if (k > 256) k = 256;
    OxNodeId to = item[id];
    for (uint32_t i = 0; i < k; i++) {
      if (fold && fold[buf[i]]) continue; /* a folded parameter is part of its consumer: no edge */
      OxNodeId from = item[buf[i]];
      if (!from || from == to) continue;
      bool dup = false;
      for (uint32_t j = 0; j < n_ins[to] && !dup; j++) dup = ins[to][j] == from;
      if (dup) continue;
      if (n_ins[to] == cap_ins[to]) {
        cap_ins[to] = cap_ins[to] ? cap_ins[to] * 2 : 4;
        ins[to] = ox_xrealloc(ins[to], cap_ins[to] * sizeof **ins);
      }
      ins[to][n_ins[to]++] = from;
    }
  }
  for (uint32_t i = 1; i < n_items; i++) {
    if (!n_ins[i]) continue;
    OxValue *vals = ox_xcalloc(n_ins[i], sizeof *vals);
    for (uint32_t j = 0; j < n_ins[i]; j++) vals[j] = ox_value_node(ins[i][j]);
    ox_graph_set_args(o, i, ox_graph_value_seq(o, OX_V_TUPLE, vals, n_ins[i]));
    free(vals);
    free(ins[i]);
  }
  free(ins);
  free(n_ins);
  free(cap_ins);
  if (node_item) memcpy(node_item, item, g->n_nodes * sizeof *item);
  free(item);
  free(cluster_item);
  return o;
}

/* ------------------------------------------------------------------ structural refinement */

enum { HUB_DEGREE = 16, MAX_REFINE_DEPTH = 32 };
#define HUB_WEIGHT ((int64_t)1 << 20) /* a non-hub edge crossing a band boundary counts this much */

typedef struct Vec {
  uint32_t *v;
  uint32_t n, cap;
} Vec;

static void vec_push(Vec *a, uint32_t x) {
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 8;
    a->v = ox_xrealloc(a->v, a->cap * sizeof *a->v);
  }
  a->v[a->n++] = x;
}

typedef struct Refine {
  OxHierarchy *h;
  const OxGraph *g;
  uint32_t fan, cap;       /* cap: capacity of the cluster arrays */
  Vec *members;            /* per cluster: its direct nodes, in program order */
  Vec *kids;               /* per cluster: its children, in creation order */
  uint32_t *n_struct;      /* per cluster: structural children made so far (their path numbers) */
  uint32_t n_owned;
  Vec queue;
  uint32_t *local;         /* node id -> local index + 1 (scratch, cleared after use) */
} Refine;

static const char *r_own(Refine *r, const char *s) {
  size_t n = strlen(s);
  char *c = ox_xcalloc(n + 1, 1);
  memcpy(c, s, n);
  r->h->owned = ox_xrealloc(r->h->owned, (r->n_owned + 2) * sizeof *r->h->owned);
  r->h->owned[r->n_owned++] = c;
  r->h->owned[r->n_owned] = NULL;
  return c;
}

static int32_t r_new(Refine *r, int32_t parent, OxClusterKind kind, const char *label) {
  OxHierarchy *h = r->h;
  if (h->n_clusters == r->cap) {
    uint32_t old = r->cap;
    r->cap *= 2;
    h->clusters = ox_xrealloc(h->clusters, r->cap * sizeof *h->clusters);
    r->members = ox_xrealloc(r->members, r->cap * sizeof *r->members);
    r->kids = ox_xrealloc(r->kids, r->cap * sizeof *r->kids);
    r->n_struct = ox_xrealloc(r->n_struct, r->cap * sizeof *r->n_struct);
    memset(r->members + old, 0, (r->cap - old) * sizeof *r->members);
    memset(r->kids + old, 0, (r->cap - old) * sizeof *r->kids);
    memset(r->n_struct + old, 0, (r->cap - old) * sizeof *r->n_struct);
  }
  uint32_t idx = h->n_clusters++;
  OxCluster *c = &h->clusters[idx];
  memset(c, 0, sizeof *c);
  const OxCluster *p = &h->clusters[parent];
  char path[640];
  snprintf(path, sizeof path, "%s%s~%u", p->path, p->path[0] ? "." : "", ++r->n_struct[parent]);
  c->path = r_own(r, path);
  c->label = r_own(r, label);
  c->kind = kind;
  c->parent = parent;
  c->depth = p->depth + 1;
  vec_push(&r->kids[parent], idx);
  vec_push(&r->queue, idx);
  return (int32_t)idx;
}

static void r_move(Refine *r, uint32_t id, int32_t to) {
  r->h->node_cluster[id] = to;
  vec_push(&r->members[to], id);
}

static bool is_leaf_op(const OxNode *n) { return n->op == OX_OP_PLACEHOLDER || n->op == OX_OP_GET_ATTR; }

/* "first … last" of nodes (program order), preferring computing nodes over parameters. */
static void span_label(const OxGraph *g, const uint32_t *ids, uint32_t n, char *buf, size_t cap) {
  uint32_t first = ids[0], last = ids[n - 1];
  for (uint32_t i = 0; i < n; i++)
    if (!is_leaf_op(&g->nodes[ids[i]])) {
      first = ids[i];
      break;
    }
  if (first == last || n == 1)
    snprintf(buf, cap, "%s", g->nodes[first].name);
  else
    snprintf(buf, cap, "%s \xe2\x80\xa6 %s", g->nodes[first].name, g->nodes[last].name);
}

/* "addmm" from "torch.ops.aten.addmm.default", "linear" from "torch.nn.functional.linear". */
static void op_word(const OxNode *n, char *buf, size_t cap) {
  if (n->op == OX_OP_PLACEHOLDER) {
    snprintf(buf, cap, "placeholder");
    return;
  }
  if (n->op == OX_OP_GET_ATTR) {
    snprintf(buf, cap, "get_attr");
    return;
  }
  if (n->op == OX_OP_OUTPUT) {
    snprintf(buf, cap, "output");
    return;
  }
  const char *t = n->op == OX_OP_CALL_MODULE && n->module_type ? n->module_type : n->target;
  char tmp[256];
  snprintf(tmp, sizeof tmp, "%s", t ? t : "?");
  size_t len = strlen(tmp);
  static const char *const overloads[] = {".default", ".Tensor", ".Scalar", ".int", ".dim", ".self", NULL};
  for (const char *const *o = overloads; *o; o++) {
    size_t k = strlen(*o);
    if (len > k && strcmp(tmp + len - k, *o) == 0) {
      tmp[len - k] = 0;
      break;
    }
  }
  const char *dot = strrchr(tmp, '.');
  snprintf(buf, cap, "%s", dot ? dot + 1 : tmp);
}

static uint64_t hash_str(const char *s) { return ox_hash_bytes(s, strlen(s)); }

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static uint32_t uf_find(uint32_t *p, uint32_t x) {
  while (p[x] != x) {
    p[x] = p[p[x]];
    x = p[x];
  }
  return x;
}

/* The subgraph of a cluster's direct nodes: local edges, hubs, a topological order, depths. */
typedef struct Sub {
  uint32_t n;
  const uint32_t *ids;     /* local -> node id */
  uint32_t *eu, *ev, ne;   /* edges u -> v (local) */
  uint8_t *hub;
  int32_t *depth;
  int32_t max_depth;
} Sub;

static void sub_free(Sub *s) {
  free(s->eu);
  free(s->ev);
  free(s->hub);
  free(s->depth);
}

static void sub_build(Refine *r, const uint32_t *ids, uint32_t n, Sub *s) {
  const OxGraph *g = r->g;
  memset(s, 0, sizeof *s);
  s->n = n;
  s->ids = ids;
  for (uint32_t i = 0; i < n; i++) r->local[ids[i]] = i + 1;
  uint32_t cap = 2 * n + 8;
  s->eu = ox_xcalloc(cap, sizeof *s->eu);
  s->ev = ox_xcalloc(cap, sizeof *s->ev);
  OxNodeId ins[256];
  for (uint32_t v = 0; v < n; v++) {
    uint32_t k = ox_graph_inputs_r(g, ids[v], ins, 256);
    for (uint32_t j = 0; j < k; j++) {
      uint32_t u = ins[j] < g->n_nodes ? r->local[ins[j]] : 0;
      if (!u || u - 1 == v) continue;
      if (s->ne == cap) {
        cap *= 2;
        s->eu = ox_xrealloc(s->eu, cap * sizeof *s->eu);
        s->ev = ox_xrealloc(s->ev, cap * sizeof *s->ev);
      }
      s->eu[s->ne] = u - 1;
      s->ev[s->ne++] = v;
    }
  }
  for (uint32_t i = 0; i < n; i++) r->local[ids[i]] = 0;
  uint32_t *deg = ox_xcalloc(n + 1, sizeof *deg), *indeg = ox_xcalloc(n + 1, sizeof *indeg);
  for (uint32_t e = 0; e < s->ne; e++) {
    deg[s->eu[e]]++;
    deg[s->ev[e]]++;
    indeg[s->ev[e]]++;
  }
  s->hub = ox_xcalloc(n + 1, 1);
  for (uint32_t i = 0; i < n; i++) s->hub[i] = deg[i] >= HUB_DEGREE;
  /* CSR out-edges, topological order (Kahn; a cycle is broken at its lowest node) */
  uint32_t *off = ox_xcalloc(n + 2, sizeof *off), *adj = ox_xcalloc(s->ne + 1, sizeof *adj);
  for (uint32_t e = 0; e < s->ne; e++) off[s->eu[e] + 1]++;
  for (uint32_t i = 0; i < n; i++) off[i + 1] += off[i];
  uint32_t *fill = ox_xcalloc(n + 1, sizeof *fill);
  for (uint32_t e = 0; e < s->ne; e++) adj[off[s->eu[e]] + fill[s->eu[e]]++] = s->ev[e];
  free(fill);
  uint32_t *order = ox_xcalloc(n + 1, sizeof *order);
  uint8_t *done = ox_xcalloc(n + 1, 1);
  uint32_t qh = 0, qt = 0, scan = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!indeg[i]) order[qt++] = i;
  while (qh < n) {
    if (qh == qt) {
      while (scan < n && (done[scan] || !indeg[scan])) scan++;
      if (scan >= n) break;
      indeg[scan] = 0;
      order[qt++] = scan;
    }
    uint32_t x = order[qh++];
    done[x] = 1;
    for (uint32_t k = off[x]; k < off[x + 1]; k++)
      if (!done[adj[k]] && indeg[adj[k]] && --indeg[adj[k]] == 0) order[qt++] = adj[k];
  }
  /* longest path, then a node with at least as many consumers as (non-hub) producers moves down
   * to just above its nearest consumer: parameters sit at their use, not at depth 0 */
  s->depth = ox_xcalloc(n + 1, sizeof *s->depth);
  uint32_t *nin = ox_xcalloc(n + 1, sizeof *nin);
  for (uint32_t e = 0; e < s->ne; e++)
    if (!s->hub[s->eu[e]]) nin[s->ev[e]]++;
  for (uint32_t i = 0; i < qh; i++) {
    uint32_t x = order[i];
    for (uint32_t k = off[x]; k < off[x + 1]; k++)
      if (s->depth[adj[k]] < s->depth[x] + 1 && done[adj[k]]) s->depth[adj[k]] = s->depth[x] + 1;
  }
  for (uint32_t i = qh; i-- > 0;) {
    uint32_t x = order[i], nout = off[x + 1] - off[x];
    if (!nout || nin[x] > nout || s->hub[x]) continue;
    int32_t m = INT32_MAX;
    for (uint32_t k = off[x]; k < off[x + 1]; k++)
      if (s->depth[adj[k]] < m) m = s->depth[adj[k]];
    if (m - 1 > s->depth[x]) s->depth[x] = m - 1;
  }
  s->max_depth = 0;
  for (uint32_t i = 0; i < n; i++)
    if (s->depth[i] > s->max_depth) s->max_depth = s->depth[i];
  free(nin);
  free(order);
  free(done);
  free(off);
  free(adj);
  free(deg);
  free(indeg);
}

/* Bands of consecutive depths: about fan nodes each, cut at the boundary with the fewest crossing
 * edges near each equal-count target; `forced` accepts any cut, else only narrow ones (at most a
 * quarter of the median crossing, or 3). Returns true when it made at least two bands. */
static bool make_bands(Refine *r, int32_t c, Sub *s, bool forced) {
  uint32_t n = s->n;
  int32_t D = s->max_depth + 1;
  if (D < 3) return false;
  uint32_t *cnt = ox_xcalloc((size_t)D + 1, sizeof *cnt);
  int64_t *cross = ox_xcalloc((size_t)D + 2, sizeof *cross); /* boundary b: between depth b and b + 1 */
  for (uint32_t i = 0; i < n; i++) cnt[s->depth[i]]++;
  for (uint32_t e = 0; e < s->ne; e++) {
    /* a hub's edges cross everywhere (a size used by every block, an output taking every saved
     * tensor): they say nothing about where the graph narrows */
    int64_t w = (s->hub[s->eu[e]] || s->hub[s->ev[e]]) ? 1 : HUB_WEIGHT; /* hub edges only break ties */
    int32_t a = s->depth[s->eu[e]], b = s->depth[s->ev[e]];
    if (a > b) {
      int32_t t = a;
      a = b;
      b = t;
    }
    if (a == b) continue;
    cross[a] += w;
    cross[b] -= w;
  }
  for (int32_t b = 1; b < D; b++) cross[b] += cross[b - 1];
  int64_t *sorted = ox_xcalloc((size_t)D + 1, sizeof *sorted);
  memcpy(sorted, cross, (size_t)(D - 1) * sizeof *sorted);
  qsort(sorted, (size_t)(D - 1), sizeof *sorted, cmp_u64);
  int64_t median = D > 1 ? sorted[(D - 1) / 2] / HUB_WEIGHT : 0, limit = median / 4 > 3 ? median / 4 : 3;
  limit = limit * HUB_WEIGHT + HUB_WEIGHT - 1;
  free(sorted);
  uint32_t B = (n + r->fan - 1) / r->fan;
  if (B < 2) B = 2;
  if (B > r->fan) B = r->fan;
  /* cut boundaries */
  uint8_t *cut = ox_xcalloc((size_t)D + 1, 1);
  uint32_t n_cuts = 0, min_band = n / (4 * B) > 3 ? n / (4 * B) : 3;
  if (!forced) {
    /* every narrow boundary, one per run of them too close together to hold a band between */
    int32_t best = -1;
    uint32_t since = 0, total = 0;
    for (int32_t x = 0; x + 1 < D; x++) {
      since += cnt[x];
      total += cnt[x];
      if (cross[x] > limit) continue;
      if (best >= 0 && since < min_band) {
        /* the same run: keep the narrower */
        if (cross[x] < cross[best]) {
          cut[best] = 0;
          cut[x] = 1;
          best = x;
          since = 0;
        }
        continue;
      }
      if (total < min_band || n - total < min_band) continue;
      cut[x] = 1;
      best = x;
      since = 0;
      n_cuts++;
    }
    if (n_cuts + 1 > r->fan) {
      /* too many natural bands: keep the narrow cuts nearest to equal-count targets */
      uint8_t *keep = ox_xcalloc((size_t)D + 1, 1);
      uint32_t acc = 0, kept = 0;
      int32_t x = 0;
      for (uint32_t k = 1; k < r->fan; k++) {
        uint64_t target = (uint64_t)k * n / r->fan;
        while (x < D - 1 && acc + cnt[x] <= target) acc += cnt[x++];
        int32_t lo = x, hi = x;
        while (lo >= 0 && !cut[lo]) lo--;
        while (hi < D - 1 && !cut[hi]) hi++;
        int32_t pick = lo >= 0 && (hi >= D - 1 || x - lo <= hi - x) ? lo : hi < D - 1 ? hi : -1;
        if (pick >= 0 && !keep[pick]) {
          keep[pick] = 1;
          kept++;
        }
      }
      memcpy(cut, keep, (size_t)D + 1);
      free(keep);
      n_cuts = kept;
    }
  } else {
    uint32_t acc = 0;
    int32_t d = 0;
    for (uint32_t k = 1; k < B; k++) {
      uint64_t target = (uint64_t)k * n / B;
      while (d < D - 1 && acc + cnt[d] <= target) acc += cnt[d++];
      int32_t win = D / (int32_t)(2 * B) + 1, best = -1;
      for (int32_t x = d - win; x <= d + win; x++) {
        if (x < 0 || x >= D - 1) continue;
        if (best < 0 || cross[x] < cross[best] || (cross[x] == cross[best] && abs(x - d) < abs(best - d))) best = x;
      }
      if (best >= 0 && !cut[best]) {
        cut[best] = 1;
        n_cuts++;
      }
    }
  }
  bool made = false;
  if (n_cuts) {
    /* band index per depth */
    int32_t *band_of = ox_xcalloc((size_t)D + 1, sizeof *band_of);
    /* a band of a handful of nodes (the input before the first layer, a lone cat) joins the
     * next one: cut only where both sides have some size */
    uint32_t run = 0, total = 0;
    for (int32_t x = 0; x < D; x++) {
      run += cnt[x];
      total += cnt[x];
      if (!cut[x]) continue;
      if (run < min_band || n - total < min_band)
        cut[x] = 0;
      else
        run = 0;
    }
    int32_t nb = 0;
    for (int32_t x = 0; x < D; x++) {
      band_of[x] = nb;
      if (cut[x]) nb++;
    }
    nb++;
    Vec *bm = ox_xcalloc((size_t)nb + 1, sizeof *bm);
    for (uint32_t i = 0; i < n; i++) vec_push(&bm[band_of[s->depth[i]]], s->ids[i]);
    uint32_t nonempty = 0, biggest = 0;
    for (int32_t b = 0; b < nb; b++) {
      nonempty += bm[b].n > 0;
      if (bm[b].n > biggest) biggest = bm[b].n;
    }
    /* narrow cuts that leave one band with nearly everything are no division at all: the
     * forced bands (equal counts) serve better then */
    bool lopsided = !forced && biggest > r->fan && (uint64_t)biggest * 4 > (uint64_t)n * 3;
    if (nonempty >= 2 && !lopsided) {
      for (int32_t b = 0; b < nb; b++) {
        if (!bm[b].n) continue;
        char label[400];
        span_label(r->g, bm[b].v, bm[b].n, label, sizeof label);
        int32_t nc = r_new(r, c, OX_CLUSTER_BAND, label);
        for (uint32_t i = 0; i < bm[b].n; i++) r_move(r, bm[b].v[i], nc);
      }
      made = true;
    }
    for (int32_t b = 0; b < nb; b++) free(bm[b].v);
    free(bm);
    free(band_of);
  }
  free(cut);
  free(cnt);
  free(cross);
  return made;
}

/* An open-addressing map from 64-bit keys to a first index, for grouping by op or signature. */
typedef struct KeyMap {
  uint64_t *k;
  uint32_t *v; /* value + 1; 0 = empty */
  uint32_t cap;
} KeyMap;

static void keymap_init(KeyMap *m, uint32_t n) {
  m->cap = 64;
  while (m->cap < 2 * n + 2) m->cap *= 2;
  m->k = ox_xcalloc(m->cap, sizeof *m->k);
  m->v = ox_xcalloc(m->cap, sizeof *m->v);
}

/* The value stored for key, storing v first if absent. */
static uint32_t keymap_get_or_put(KeyMap *m, uint64_t key, uint32_t v) {
  uint32_t j = (uint32_t)(key ^ (key >> 29)) & (m->cap - 1);
  while (m->v[j]) {
    if (m->k[j] == key) return m->v[j] - 1;
    j = (j + 1) & (m->cap - 1);
  }
  m->k[j] = key;
  m->v[j] = v + 1;
  return v;
}

static void keymap_free(KeyMap *m) {
  free(m->k);
  free(m->v);
}

/* Ops that move data around without computing: left out of group labels when there is more. */
static bool is_plumbing(const OxNode *n) {
  static const char *const words[] = {"getitem", "t", "permute", "view", "reshape", "transpose", "expand",
                                      "unsqueeze", "squeeze", "contiguous", "clone", "_to_copy",
                                      "convert_element_type", "split", "split_with_sizes", "cat", "stack",
                                      "unbind", "slice", "select", "alias", "_unsafe_view", NULL};
  char w[128];
  op_word(n, w, sizeof w);
  for (const char *const *p = words; *p; p++)
    if (strcmp(w, *p) == 0) return true;
  return false;
}

static uint64_t op_key(const OxNode *n) {
  char w[128];
  op_word(n, w, sizeof w);
  return hash_str(w);
}

/* Weakly connected parts (hubs left out of the connections): each part of two or more nodes
 * becomes a cluster, hubs and single nodes stay direct. When that still leaves more than fan
 * items, parts with the same ops go under a group cluster and single nodes of one op (three or
 * more) under a kind cluster. Returns false, changing nothing, when one part dominates (more
 * than half of the nodes and over fan nodes): bands suit that better. */
static bool make_parts(Refine *r, int32_t c, Sub *s) {
  uint32_t n = s->n, fan = r->fan;
  const OxGraph *g = r->g;
  uint32_t *par = ox_xcalloc(n + 1, sizeof *par);
  for (uint32_t i = 0; i < n; i++) par[i] = i;
  for (uint32_t e = 0; e < s->ne; e++) {
    if (s->hub[s->eu[e]] || s->hub[s->ev[e]]) continue;
    uint32_t a = uf_find(par, s->eu[e]), b = uf_find(par, s->ev[e]);
    if (a != b) par[a > b ? a : b] = a > b ? b : a;
  }
  uint32_t *size = ox_xcalloc(n + 1, sizeof *size);
  uint32_t largest = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t root = uf_find(par, i);
    if (!s->hub[i] && ++size[root] > largest) largest = size[root];
  }
  if (largest > fan && largest * 2 > n) {
    free(par);
    free(size);
    return false;
  }
  /* parts in order of their first node */
  uint32_t *part = ox_xcalloc(n + 1, sizeof *part); /* node -> part + 1, 0 = loose */
  uint32_t *root_part = ox_xcalloc(n + 1, sizeof *root_part);
  uint32_t n_parts = 0, n_loose = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t root = uf_find(par, i);
    if (s->hub[i] || size[root] < 2) {
      n_loose++;
      continue;
    }
    if (!root_part[root]) root_part[root] = ++n_parts;
    part[i] = root_part[root];
  }
  Vec *pm = ox_xcalloc(n_parts + 1, sizeof *pm);
  for (uint32_t i = 0; i < n; i++)
    if (part[i]) vec_push(&pm[part[i] - 1], s->ids[i]);
  bool crowded = r->kids[c].n + n_loose + n_parts > fan;
  /* groups of parts with the same ops (sorted multiset of op words) */
  uint32_t *lead = ox_xcalloc(n_parts + 1, sizeof *lead), *lead_n = ox_xcalloc(n_parts + 1, sizeof *lead_n);
  for (uint32_t p = 0; p < n_parts; p++) lead[p] = p;
  if (crowded && n_parts) {
    KeyMap km;
    keymap_init(&km, n_parts);
    for (uint32_t p = 0; p < n_parts; p++) {
      uint64_t *hs = ox_xcalloc(pm[p].n + 1, sizeof *hs);
      for (uint32_t i = 0; i < pm[p].n; i++) hs[i] = op_key(&g->nodes[pm[p].v[i]]);
      qsort(hs, pm[p].n, sizeof *hs, cmp_u64);
      uint64_t sig = 0x9e3779b97f4a7c15ull ^ pm[p].n;
      for (uint32_t i = 0; i < pm[p].n; i++) sig = (sig ^ hs[i]) * 0x100000001b3ull;
      free(hs);
      lead[p] = keymap_get_or_put(&km, sig, p);
      lead_n[lead[p]]++;
    }
    keymap_free(&km);
  }
  /* kinds of loose nodes (not hubs): op word -> first node */
  uint32_t *kind = ox_xcalloc(n + 1, sizeof *kind), *kind_n = ox_xcalloc(n + 1, sizeof *kind_n);
  if (crowded) {
    KeyMap km;
    keymap_init(&km, n_loose);
    for (uint32_t i = 0; i < n; i++) {
      if (part[i] || s->hub[i]) continue;
      kind[i] = keymap_get_or_put(&km, op_key(&g->nodes[s->ids[i]]), i);
      kind_n[kind[i]]++;
    }
    keymap_free(&km);
  }
  /* no progress: everything would land in one new cluster (one part, or one kind of loose node) */
  bool single_kind = false;
  if (crowded && !n_parts) {
    single_kind = true;
    for (uint32_t i = 0; i < n && single_kind; i++)
      if (!part[i] && (s->hub[i] || kind[i] != kind[0])) single_kind = false;
  }
  int32_t *kind_cluster = NULL, *group_cluster = NULL; /* cluster + 1 */
  bool made = !((n_parts == 1 && n_loose == 0) || single_kind || (n_parts == 0 && !crowded));
  if (!made) goto done;
  /* loose nodes, in order: direct, or under their kind's cluster */
  kind_cluster = ox_xcalloc(n + 1, sizeof *kind_cluster);
  for (uint32_t i = 0; i < n; i++) {
    if (part[i]) continue;
    uint32_t k = kind[i];
    if (crowded && !s->hub[i] && kind_n[k] >= 3) {
      if (!kind_cluster[k]) {
        char w[128], label[200];
        op_word(&g->nodes[s->ids[k]], w, sizeof w);
        bool plural = strcmp(w, "placeholder") == 0 || strcmp(w, "get_attr") == 0;
        snprintf(label, sizeof label, "%u %s%s", kind_n[k], w, plural ? "s" : " nodes");
        kind_cluster[k] = r_new(r, c, OX_CLUSTER_KIND, label) + 1;
      }
      r_move(r, s->ids[i], kind_cluster[k] - 1);
    } else {
      r_move(r, s->ids[i], c);
    }
  }
  /* parts, under their group's cluster when the group has several */
  group_cluster = ox_xcalloc(n_parts + 1, sizeof *group_cluster);
  for (uint32_t p = 0; p < n_parts; p++) {
    int32_t parent = c;
    uint32_t l = lead[p];
    if (crowded && lead_n[l] >= 2) {
      if (!group_cluster[l]) {
        /* "12 × addmm · native_layer_norm · tanh": the leader's distinct ops, program order */
        char label[300];
        size_t o = (size_t)snprintf(label, sizeof label, "%u \xc3\x97 ", lead_n[l]);
        uint64_t seen[4];
        uint32_t ns = 0;
        for (uint32_t i = 0, pass = 0; pass < 2 && ns < 3; i++) {
          if (i == pm[l].n) {
            /* nothing but plumbing: take that */
            if (ns) break;
            i = 0;
            pass++;
            if (pass == 2) break;
          }
          const OxNode *x = &g->nodes[pm[l].v[i]];
          if (is_leaf_op(x) || (pass == 0 && is_plumbing(x))) continue;
          uint64_t hk = op_key(x);
          bool dup = false;
          for (uint32_t k = 0; k < ns; k++) dup |= seen[k] == hk;
          if (dup) continue;
          seen[ns++] = hk;
          char w[128];
          op_word(x, w, sizeof w);
          if (o < sizeof label) o += (size_t)snprintf(label + o, sizeof label - o, "%s%s", ns > 1 ? " \xc2\xb7 " : "", w);
        }
        group_cluster[l] = r_new(r, c, OX_CLUSTER_GROUP, label) + 1;
      }
      parent = group_cluster[l] - 1;
    }
    char label[400];
    span_label(g, pm[p].v, pm[p].n, label, sizeof label);
    int32_t pc = r_new(r, parent, OX_CLUSTER_PART, label);
    for (uint32_t i = 0; i < pm[p].n; i++) r_move(r, pm[p].v[i], pc);
  }
done:
  for (uint32_t p = 0; p < n_parts; p++) free(pm[p].v);
  free(pm);
  free(par);
  free(size);
  free(part);
  free(root_part);
  free(lead);
  free(lead_n);
  free(kind);
  free(kind_n);
  free(kind_cluster);
  free(group_cluster);
  return made;
}

/* Chunks of consecutive direct nodes (at most fan each) when loose nodes alone are too many. */
static void chunk_members(Refine *r, int32_t c) {
  Vec m = r->members[c];
  r->members[c] = (Vec){0};
  uint32_t fan = r->fan, k = (m.n + fan - 1) / fan;
  if (k > fan) k = fan;
  for (uint32_t j = 0; j < k; j++) {
    uint32_t a = (uint32_t)((uint64_t)j * m.n / k), b = (uint32_t)((uint64_t)(j + 1) * m.n / k);
    char label[400];
    span_label(r->g, m.v + a, b - a, label, sizeof label);
    int32_t nc = r_new(r, c, OX_CLUSTER_CHUNK, label);
    for (uint32_t i = a; i < b; i++) r_move(r, m.v[i], nc);
  }
  free(m.v);
}

/* Children in consecutive chunks under new clusters, when a cluster has too many children. */
static void chunk_kids(Refine *r, int32_t c) {
  Vec kids = r->kids[c];
  r->kids[c] = (Vec){0};
  uint32_t fan = r->fan, room = fan > r->members[c].n ? fan - r->members[c].n : 1;
  uint32_t k = (kids.n + fan - 1) / fan;
  if (k > room) k = room;
  if (k < 2) k = 2;
  for (uint32_t j = 0; j < k; j++) {
    uint32_t a = (uint32_t)((uint64_t)j * kids.n / k), b = (uint32_t)((uint64_t)(j + 1) * kids.n / k);
    if (a == b) continue;
    char label[400];
    const OxCluster *x = &r->h->clusters[kids.v[a]], *y = &r->h->clusters[kids.v[b - 1]];
    if (b - a == 1)
      snprintf(label, sizeof label, "%s", x->kind == OX_CLUSTER_MODULE ? x->path : x->label);
    else
      snprintf(label, sizeof label, "%s \xe2\x80\xa6 %s", x->kind == OX_CLUSTER_MODULE ? x->path : x->label,
               y->kind == OX_CLUSTER_MODULE ? y->path : y->label);
    int32_t nc = r_new(r, c, OX_CLUSTER_CHUNK, label);
    for (uint32_t i = a; i < b; i++) {
      r->h->clusters[kids.v[i]].parent = nc;
      vec_push(&r->kids[nc], kids.v[i]);
    }
  }
  free(kids.v);
}

void ox_view_hierarchy_refine(OxHierarchy *h, const OxGraph *g, uint32_t fan) {
  if (fan < 4) fan = 4;
  Refine r = {0};
  r.h = h;
  r.g = g;
  r.fan = fan;
  r.cap = h->n_clusters + 16;
  h->clusters = ox_xrealloc(h->clusters, r.cap * sizeof *h->clusters);
  r.members = ox_xcalloc(r.cap, sizeof *r.members);
  r.kids = ox_xcalloc(r.cap, sizeof *r.kids);
  r.n_struct = ox_xcalloc(r.cap, sizeof *r.n_struct);
  for (char **p = h->owned; p && *p; p++) r.n_owned++;
  r.local = ox_xcalloc(g->n_nodes + 1, sizeof *r.local);
  OX_GRAPH_FOREACH(g, id) {
    if (id < h->n_node_ids && h->node_cluster[id] >= 0) vec_push(&r.members[h->node_cluster[id]], id);
  }
  for (uint32_t i = 1; i < h->n_clusters; i++) vec_push(&r.kids[h->clusters[i].parent], i);
  for (uint32_t i = 0; i < h->n_clusters; i++) vec_push(&r.queue, i);
  for (uint32_t qi = 0; qi < r.queue.n; qi++) {
    int32_t c = (int32_t)r.queue.v[qi];
    for (int round = 0; round < 3; round++) {
      uint32_t items = r.members[c].n + r.kids[c].n;
      if (items <= fan || h->clusters[c].depth > MAX_REFINE_DEPTH) break;
      if (r.members[c].n > 1 && round == 0) {
        Vec m = r.members[c];
        Sub sb;
        sub_build(&r, m.v, m.n, &sb);
        r.members[c] = (Vec){0}; /* what stays direct is pushed back */
        bool made = make_bands(&r, c, &sb, false) || make_parts(&r, c, &sb) || make_bands(&r, c, &sb, true);
        sub_free(&sb);
        if (made) {
          free(m.v);
        } else {
          free(r.members[c].v);
          r.members[c] = m;
        }
        continue;
      }
      if (r.members[c].n > fan / 2) {
        chunk_members(&r, c);
        continue;
      }
      if (r.kids[c].n > 1) chunk_kids(&r, c);
      else break;
    }
  }
  for (uint32_t i = 0; i < r.cap; i++) {
    free(r.members[i].v);
    free(r.kids[i].v);
  }
  free(r.members);
  free(r.kids);
  free(r.n_struct);
  free(r.queue.v);
  free(r.local);
  /* depths after any re-parenting (a chunk is created after the children it takes) */
  for (uint32_t i = 0; i < h->n_clusters; i++) {
    uint32_t d = 0;
    for (int32_t x = h->clusters[i].parent; x >= 0 && d < 1000000; x = h->clusters[x].parent) d++;
    h->clusters[i].depth = d;
  }
  ox_view_hierarchy_reindex(h);
}
