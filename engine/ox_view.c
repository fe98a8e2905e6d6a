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
#include "ox_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox_mem.h"

/* ------------------------------------------------------------------ neighbourhood */

uint32_t ox_view_neighborhood(const OxGraph *g, const OxNodeId *seeds, uint32_t n_seeds, uint32_t radius,
                              uint32_t max_nodes, OxNodeId *out, uint32_t max_out) {
  uint32_t *dist = ox_xcalloc(g->n_nodes + 1, sizeof *dist); /* 0 = unseen, else distance + 1 */
  OxNodeId *queue = ox_xcalloc(g->n_live + n_seeds + 1, sizeof *queue);
  uint32_t qh = 0, qt = 0, found = 0;
  OxNodeId ins[256];
  for (uint32_t i = 0; i < n_seeds; i++) {
    OxNodeId s = seeds[i];
    const OxNode *n = ox_graph_node(g, s);
    if (!n || n->erased || dist[s]) continue;
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
    uint32_t k = ox_graph_inputs(g, x, ins, 256);
    if (k > 256) k = 256;
    for (uint32_t i = 0; i < k; i++)
      if (!dist[ins[i]] && !g->nodes[ins[i]].erased) {
        dist[ins[i]] = d + 2;
        queue[qt++] = ins[i];
      }
    for (uint32_t i = 0; i < n->n_users; i++) {
      OxNodeId u = n->users[i];
      if (!dist[u] && !g->nodes[u].erased) {
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
  for (OxNodeId id = g->tail; id; id = g->nodes[id].prev) {
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
  /* counts */
  for (uint32_t i = 0; i < g->n_nodes; i++) {
    if (h->node_cluster[i] < 0) continue;
    int32_t c = h->node_cluster[i];
    b.c[c].n_direct++;
    for (; c >= 0; c = b.c[c].parent) b.c[c].n_total++;
  }
  /* children, contiguous per parent, in creation order */
  h->child_index = ox_xcalloc(b.n + 1, sizeof *h->child_index);
  uint32_t *cnt = ox_xcalloc(b.n + 1, sizeof *cnt);
  for (uint32_t i = 1; i < b.n; i++) cnt[b.c[i].parent]++;
  uint32_t pos = 0;
  for (uint32_t i = 0; i < b.n; i++) {
    b.c[i].first_child = pos;
    pos += cnt[i];
  }
  for (uint32_t i = 1; i < b.n; i++) {
    OxCluster *p = &b.c[b.c[i].parent];
    h->child_index[p->first_child + p->n_children++] = i;
  }
  free(cnt);
  free(b.map.keys);
  free(b.map.vals);
  h->clusters = b.c;
  h->n_clusters = b.n;
  b.owned = ox_xrealloc(b.owned, (b.n_owned + 1) * sizeof *b.owned);
  b.owned[b.n_owned] = NULL;
  h->owned = b.owned;
  return h;
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
  /* item of a node: the shallowest closed cluster on its path below the root, else the node */
  uint32_t *item = ox_xcalloc(g->n_nodes + 1, sizeof *item);          /* overview node id */
  uint32_t *cluster_item = ox_xcalloc(h->n_clusters + 1, sizeof *cluster_item);
  int32_t chain[256];
  OxGraph *o = ox_graph_new();
  o->name = ox_graph_intern(o, "overview");
  OX_GRAPH_FOREACH(g, id) {
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
        snprintf(target, sizeof target, "%s [%u nodes]", cl->path, cl->n_total);
        OxNodeId nid = ox_graph_add_node(o, OX_OP_CALL_MODULE, name, target, ox_value_none(), ox_value_none());
        o->nodes[nid].module_type = ox_graph_intern(o, "cluster");
        ox_graph_opix_stale(o, nid);
        cluster_item[closed] = nid;
        if (item_cluster) item_cluster[nid] = closed;
      }
      item[id] = cluster_item[closed];
    }
  }
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
