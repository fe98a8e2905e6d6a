/* ox_layered.c - our own layered ("Sugiyama") layout: the fallback when dot would take too
 * long, and the engine for requests too large for dot. Near-linear in the nodes, edges and
 * virtual nodes; no fonts, no Graphviz.
 *
 * Phases (each linear or n log n):
 *   1. subgraph (ox_lsub_build): nodes sorted by id, box sizes (given, or estimated from the
 *      label text with DejaVu Sans advances), edges among them collected with
 *      ox_graph_inputs_r (no graph scratch: workers lay out a graph the UI thread also reads);
 *   2. orientation: Kahn's algorithm; when only cycles remain, the remaining node with the
 *      lowest id takes its remaining in-edges as reversed (an FX graph is a DAG, but the
 *      debugger's union of every step's edges need not be);
 *   3. ranks: longest path from the sources, then, in reverse topological order, every node with
 *      at least as many consumers as producers moved down to just above its nearest consumer
 *      (weights, constants and the casts of them sit next to their use, not in a top row);
 *   4. stubs: the edges of a node with >= hub_users users (a fan-out hub) or into one with as
 *      many inputs (a fan-in hub) that span more than two ranks become stubs, in a few rounds of
 *      re-ranking; if long edges would still need more than 3 virtual nodes per node, the
 *      longest are stubbed too;
 *   5. virtual nodes on every remaining edge spanning several ranks;
 *   6. ordering: an initial depth-first order, then barycentric sweeps down and up; the
 *      ordering with the fewest crossings (counted per rank pair with a Fenwick tree) is kept;
 *   7. x: per rank, weighted isotonic regression (pool adjacent violators) of the neighbours'
 *      mean positions under the minimum-separation constraints: no overlaps, edges as
 *      straight as the order allows (long edges weigh more); down, up, then both;
 *   8. folding to the target aspect ratio: a run of ranks wider than the aspect asks for (the
 *      towers between a split and its cat) is cut by x into strips laid one under the other,
 *      each tower in one piece; a deep graph is cut into side-by-side columns of ranks; edges
 *      leaving their strip or column become stubs;
 *   9. geometry: edges as smooth cubic splines through their virtual nodes with an arrow into
 *      the consumer, stubs as short splines above their consumer (or below their producer).
 * Loose nodes (no edge at all; at least 8 of them) are left out of all this and fill rows under
 * the laid-out graph, as wide as it or as the target aspect asks.
 * LR layouts are laid out TB with width and height swapped, then transposed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/ox_mem.h"
#include "layout/ox_layout_sub.h"
#include "write/ox_write.h"

/* ------------------------------------------------------------------ text metrics */

/* DejaVu Sans advance widths of ' '..'~' in units of 1/2048 em. */
static const unsigned short advances[95] = {
  651,  821,  942,  1716, 1303, 1946, 1597, 563,  799,  799,  1024, 1716, 651,  739,  651,  690,  /*  !"#$%&'()*+,-./ */
  1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 690,  690,  1716, 1716, 1716, 1087, /* 0-9:;<=>? */
  2048, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604,  604,  1343, 1141, 1767, 1532, 1612, /* @A-O */
  1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, 799,  690,  799,  1716, 1024, /* P-Z[\]^_ */
  1024, 1255, 1300, 1126, 1300, 1260, 721,  1300, 1298, 569,  569,  1186, 569,  1995, 1298, 1253, /* `a-o */
  1300, 1300, 842,  1067, 803,  1298, 1212, 1675, 1212, 1212, 1075, 1303, 690,  1303, 1716,       /* p-z{|}~ */
};

double ox_layout_text_width(const char *s, double pt) {
  double u = 0;
  for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
    if (*p >= 32 && *p < 127)
      u += advances[*p - 32];
    else if (*p < 0x80 || *p >= 0xc0)
      u += 1300; /* a control character or the first byte of a UTF-8 sequence: one glyph */
  }
  return u * pt / 2048.0;
}

void ox_layout_label(const OxGraph *g, OxNodeId id, bool with_shapes, char lines[3][160]) {
  const OxNode *n = &g->nodes[id];
  snprintf(lines[0], 160, "%s", n->name);
  if (n->op == OX_OP_CALL_FUNCTION || n->op == OX_OP_CALL_METHOD || n->op == OX_OP_CALL_MODULE) {
    char t[160];
    ox_short_target(n->module_type && n->op == OX_OP_CALL_MODULE ? n->module_type : n->target, t, sizeof t);
    snprintf(lines[1], 160, "%s", t);
  } else {
    snprintf(lines[1], 160, "%s", ox_op_name((OxOp)n->op));
  }
  lines[2][0] = 0;
  if (with_shapes) ox_meta_text(&n->meta, lines[2], 160);
}

void ox_layout_label_size(const char lines[3][160], double *w, double *h) {
  double mw = 0;
  int k = 0;
  for (int i = 0; i < 3; i++) {
    if (!lines[i][0]) continue;
    double tw = ox_layout_text_width(lines[i], 10.0);
    if (tw > mw) mw = tw;
    k++;
  }
  *w = mw + 18.0;               /* dot's margin 0.12 in each side, rounded up */
  *h = (k ? k : 1) * 12.0 + 8.0; /* 1.2 line height + 0.04 in each side */
}

/* ------------------------------------------------------------------ results */

static int cmp_layout_node(const void *a, const void *b) {
  const OxLayoutNode *x = a, *y = b;
  return x->id < y->id ? -1 : x->id > y->id;
}

int32_t ox_layout_find(const OxLayout *l, OxNodeId id) {
  int32_t lo = 0, hi = (int32_t)l->n_nodes - 1;
  while (lo <= hi) {
    int32_t mid = (lo + hi) / 2;
    if (l->nodes[mid].id == id) return mid;
    if (l->nodes[mid].id < id)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

void ox_layout_free(OxLayout *l) {
  if (!l) return;
  for (uint32_t i = 0; i < l->n_edges; i++) free(l->edges[i].pts);
  free(l->edges);
  free(l->nodes);
  free(l);
}

/* ------------------------------------------------------------------ the subgraph */

void ox_lsub_free(OxLSub *s) {
  free(s->ids);
  free(s->w);
  free(s->h);
  free(s->efrom);
  free(s->eto);
  free(s->estub);
  free(s->erev);
  free(s->rank);
  free(s->hub);
  memset(s, 0, sizeof *s);
}

/* CSR adjacency over the oriented, non-stub edges: succ/pred lists of edge indices. */
typedef struct Adj {
  uint32_t *off, *e; /* off[n+1], e[] edge indices */
} Adj;

static void adj_free(Adj *a) {
  free(a->off);
  free(a->e);
}

/* out = true: edges leaving a node (after orientation), else entering. */
static void adj_build(const OxLSub *s, bool out, Adj *a) {
  a->off = ox_xcalloc(s->n + 2, sizeof *a->off);
  a->e = ox_xcalloc(s->n_edges + 1, sizeof *a->e);
  for (uint32_t i = 0; i < s->n_edges; i++) {
    if (s->estub[i]) continue;
    uint32_t from = s->erev[i] ? s->eto[i] : s->efrom[i], to = s->erev[i] ? s->efrom[i] : s->eto[i];
    a->off[(out ? from : to) + 1]++;
  }
  for (uint32_t v = 0; v < s->n; v++) a->off[v + 1] += a->off[v];
  uint32_t *fill = ox_xcalloc(s->n + 1, sizeof *fill);
  for (uint32_t i = 0; i < s->n_edges; i++) {
    if (s->estub[i]) continue;
    uint32_t from = s->erev[i] ? s->eto[i] : s->efrom[i], to = s->erev[i] ? s->efrom[i] : s->eto[i];
    uint32_t v = out ? from : to;
    a->e[a->off[v] + fill[v]++] = i;
  }
  free(fill);
}

static inline uint32_t e_src(const OxLSub *s, uint32_t i) { return s->erev[i] ? s->eto[i] : s->efrom[i]; }
static inline uint32_t e_dst(const OxLSub *s, uint32_t i) { return s->erev[i] ? s->efrom[i] : s->eto[i]; }

/* Orientation (erev) by Kahn's algorithm over the non-stub edges: when only cycles remain, the
 * unprocessed node with the lowest index reverses its remaining in-edges. Fills order (a
 * topological order of the oriented graph). */
static void orient(OxLSub *s, uint32_t *order) {
  uint32_t n = s->n;
  memset(s->erev, 0, s->n_edges);
  uint32_t *indeg = ox_xcalloc(n + 1, sizeof *indeg);
  for (uint32_t i = 0; i < s->n_edges; i++)
    if (!s->estub[i]) indeg[s->eto[i]]++;
  Adj out, in; /* by original direction (erev is all zero now) */
  adj_build(s, true, &out);
  adj_build(s, false, &in);
  uint8_t *done = ox_xcalloc(n + 1, 1);
  uint32_t qh = 0, qt = 0, scan = 0;
  for (uint32_t v = 0; v < n; v++)
    if (!indeg[v]) order[qt++] = v;
  while (qh < n) {
    if (qh == qt) {
      /* only cycles left: break at the lowest unprocessed node */
      while (scan < n && (done[scan] || indeg[scan] == 0)) scan++;
      uint32_t x = scan;
      for (uint32_t k = in.off[x]; k < in.off[x + 1]; k++) {
        uint32_t e = in.e[k];
        if (!done[s->efrom[e]] && !s->erev[e]) {
          s->erev[e] = 1; /* ranked as x -> from */
          indeg[s->efrom[e]]++;
        }
      }
      indeg[x] = 0;
      order[qt++] = x;
    }
    uint32_t x = order[qh++];
    done[x] = 1;
    for (uint32_t k = out.off[x]; k < out.off[x + 1]; k++) {
      uint32_t e = out.e[k];
      if (s->erev[e]) continue;
      uint32_t y = s->eto[e];
      if (!done[y] && --indeg[y] == 0) order[qt++] = y;
    }
    for (uint32_t k = in.off[x]; k < in.off[x + 1]; k++) {
      uint32_t e = in.e[k];
      if (!s->erev[e]) continue;
      uint32_t y = s->efrom[e];
      if (!done[y] && --indeg[y] == 0) order[qt++] = y;
    }
  }
  adj_free(&out);
  adj_free(&in);
  free(indeg);
  free(done);
}

/* Longest-path ranks over the oriented non-stub edges (order topological), then sources pulled
 * down to just above their nearest consumer; a node whose every edge is a stub sits above the
 * first of its stub consumers. */
static void assign_ranks(OxLSub *s, const uint32_t *order) {
  uint32_t n = s->n;
  Adj out, in;
  adj_build(s, true, &out);
  adj_build(s, false, &in);
  for (uint32_t v = 0; v < n; v++) s->rank[v] = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t x = order[i];
    for (uint32_t k = out.off[x]; k < out.off[x + 1]; k++) {
      uint32_t y = e_dst(s, out.e[k]);
      if (s->rank[y] < s->rank[x] + 1) s->rank[y] = s->rank[x] + 1;
    }
  }
  /* pull down, in reverse topological order: a node with at least as many consumers as
   * producers moves to just above its nearest consumer (that shortens its out-edges at least as
   * much as it stretches its in-edges), so weights, constants and the small chains that prepare
   * them sit next to their use instead of in a top row */
  for (uint32_t i = n; i-- > 0;) {
    uint32_t x = order[i];
    uint32_t nin = 0, nout = out.off[x + 1] - out.off[x];
    /* a hub's edges weigh nothing here: they become stubs once long */
    for (uint32_t k = in.off[x]; k < in.off[x + 1]; k++) nin += !s->hub[e_src(s, in.e[k])];
    if (!nout || nin > nout) continue;
    int32_t m = INT32_MAX;
    for (uint32_t k = out.off[x]; k < out.off[x + 1]; k++) {
      int32_t r = s->rank[e_dst(s, out.e[k])];
      if (r < m) m = r;
    }
    if (m - 1 > s->rank[x]) s->rank[x] = m - 1;
  }
  /* isolated by stubs: above the nearest consumer (or below the nearest producer) of its stubs */
  int32_t *iso = ox_xcalloc(n + 1, sizeof *iso);
  for (uint32_t v = 0; v < n; v++) iso[v] = INT32_MIN;
  for (uint32_t i = 0; i < s->n_edges; i++) {
    if (!s->estub[i]) continue;
    for (int end = 0; end < 2; end++) {
      uint32_t x = end ? s->eto[i] : s->efrom[i], o = end ? s->efrom[i] : s->eto[i];
      if (in.off[x + 1] != in.off[x] || out.off[x + 1] != out.off[x]) continue;
      int32_t r = end ? s->rank[o] + 1 : s->rank[o] - 1;
      if (iso[x] == INT32_MIN || (end ? r > iso[x] : r < iso[x])) iso[x] = r;
    }
  }
  for (uint32_t v = 0; v < n; v++)
    if (iso[v] != INT32_MIN) s->rank[v] = iso[v];
  free(iso);
  /* normalise to start at 0 */
  int32_t lo = INT32_MAX;
  for (uint32_t v = 0; v < n; v++)
    if (s->rank[v] < lo) lo = s->rank[v];
  for (uint32_t v = 0; v < n; v++) s->rank[v] -= lo;
  adj_free(&out);
  adj_free(&in);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

int ox_lsub_build(const OxGraph *g, const OxNodeId *subset, uint32_t n, const OxLayoutOptions *opt, OxLSub *s,
                  char *err, size_t errcap) {
  memset(s, 0, sizeof *s);
  if (err && errcap) err[0] = 0;
  uint32_t budget = opt && opt->max_nodes ? opt->max_nodes : 3000;
  /* local index + 1 per node id; for a subset, first the subset position + 1 (sizes) */
  uint32_t *local = ox_xcalloc(g->n_nodes + 1, sizeof *local);
  uint32_t count = 0;
  if (subset) {
    for (uint32_t i = 0; i < n; i++) {
      const OxNode *x = ox_graph_node(g, subset[i]);
      if (x && !x->erased && !local[subset[i]]) {
        local[subset[i]] = i + 1;
        count++;
      }
    }
  } else {
    OX_GRAPH_FOREACH(g, id) {
      local[id] = id + 1;
      count++;
    }
  }
  if (count > budget) {
    if (err) snprintf(err, errcap, "over the node budget: %u > %u nodes", count, budget);
    free(local);
    return -1;
  }
  s->n = count;
  s->ids = ox_xcalloc(count + 1, sizeof *s->ids);
  s->w = ox_xcalloc(count + 1, sizeof *s->w);
  s->h = ox_xcalloc(count + 1, sizeof *s->h);
  s->rank = ox_xcalloc(count + 1, sizeof *s->rank);
  uint32_t k = 0;
  if (subset) {
    /* sorted by id without touching every id of a large graph: sort the subset's ids */
    OxNodeId *tmp = ox_xcalloc(count + 1, sizeof *tmp);
    for (uint32_t i = 0, j = 0; i < n; i++)
      if (ox_graph_node(g, subset[i]) && local[subset[i]] == i + 1) tmp[j++] = subset[i];
    qsort(tmp, count, sizeof *tmp, cmp_u32);
    memcpy(s->ids, tmp, count * sizeof *tmp);
    free(tmp);
  } else {
    OX_GRAPH_FOREACH(g, id) s->ids[k++] = id;
    k = 0;
  }
  bool with_shapes = opt && opt->with_shapes;
  for (uint32_t i = 0; i < count; i++) {
    OxNodeId id = s->ids[i];
    uint32_t src = local[id] - 1; /* subset position, or id */
    if (opt && opt->sizes) {
      s->w[i] = opt->sizes[2 * (size_t)src];
      s->h[i] = opt->sizes[2 * (size_t)src + 1];
    } else {
      char lines[3][160];
      double w, h;
      ox_layout_label(g, id, with_shapes, lines);
      ox_layout_label_size((const char(*)[160])lines, &w, &h);
      s->w[i] = (float)w;
      s->h[i] = (float)h;
    }
    if (!(s->w[i] > 1)) s->w[i] = 1;
    if (!(s->h[i] > 1)) s->h[i] = 1;
    local[id] = i + 1;
  }
  /* edges */
  uint32_t cap = count * 2 + 16;
  s->efrom = ox_xcalloc(cap, sizeof *s->efrom);
  s->eto = ox_xcalloc(cap, sizeof *s->eto);
  OxNodeId ins[256];
  for (uint32_t v = 0; v < count; v++) {
    uint32_t m = ox_graph_inputs_r(g, s->ids[v], ins, 256);
    for (uint32_t j = 0; j < m; j++) {
      uint32_t u = local[ins[j]];
      if (!u || u - 1 == v) continue;
      if (s->n_edges == cap) {
        cap *= 2;
        s->efrom = ox_xrealloc(s->efrom, cap * sizeof *s->efrom);
        s->eto = ox_xrealloc(s->eto, cap * sizeof *s->eto);
      }
      s->efrom[s->n_edges] = u - 1;
      s->eto[s->n_edges] = v;
      s->n_edges++;
    }
  }
  free(local);
  s->estub = ox_xcalloc(s->n_edges + 1, 1);
  s->erev = ox_xcalloc(s->n_edges + 1, 1);
  s->hub = ox_xcalloc(count + 1, 1);
  uint32_t *order = ox_xcalloc(count + 1, sizeof *order);
  orient(s, order);
  /* hubs: their long edges become stubs (a symbolic size used by 117 nodes; an output taking
   * 300 saved tensors) */
  uint32_t hub = opt && opt->hub_users ? opt->hub_users : 12;
  uint32_t *outdeg = ox_xcalloc(count + 1, sizeof *outdeg), *indeg = ox_xcalloc(count + 1, sizeof *indeg);
  for (uint32_t i = 0; i < s->n_edges; i++) {
    outdeg[s->efrom[i]]++;
    indeg[s->eto[i]]++;
  }
  for (uint32_t v = 0; v < count; v++) s->hub[v] = outdeg[v] >= hub;
  assign_ranks(s, order);
  /* a hub edge can become long only once the ranks move: a few rounds of stubbing and re-ranking */
  for (int round = 0; round < 3; round++) {
    bool changed = false;
    for (uint32_t i = 0; i < s->n_edges; i++) {
      bool fan_out = outdeg[s->efrom[i]] >= hub, fan_in = indeg[s->eto[i]] >= hub;
      if (s->estub[i] || (!fan_out && !fan_in)) continue;
      int32_t span = s->rank[s->eto[i]] - s->rank[s->efrom[i]];
      if (span > 2 || span < -2) {
        /* at the hub's far end: a fan-out's stub sits above its consumer, a fan-in's below its
         * producer */
        s->estub[i] = fan_out && (!fan_in || outdeg[s->efrom[i]] >= indeg[s->eto[i]]) ? OX_STUB_AT_TO : OX_STUB_AT_FROM;
        changed = true;
      }
    }
    if (!changed) break;
    assign_ranks(s, order);
  }
  free(outdeg);
  free(indeg);
  /* long edges: at most ~3 virtual nodes per node; the longest are stubbed beyond that */
  for (int pass = 0; pass < 2; pass++) {
    uint64_t virt = 0;
    for (uint32_t i = 0; i < s->n_edges; i++) {
      if (s->estub[i]) continue;
      int32_t span = abs(s->rank[s->eto[i]] - s->rank[s->efrom[i]]);
      if (span > 1) virt += (uint64_t)span - 1;
    }
    uint64_t limit = 3 * (uint64_t)count + 1000;
    if (virt <= limit) break;
    /* the threshold span: stub every edge longer than it */
    uint32_t *spans = ox_xcalloc(s->n_edges + 1, sizeof *spans);
    uint32_t ns = 0;
    for (uint32_t i = 0; i < s->n_edges; i++)
      if (!s->estub[i]) spans[ns++] = (uint32_t)abs(s->rank[s->eto[i]] - s->rank[s->efrom[i]]);
    qsort(spans, ns, sizeof *spans, cmp_u32);
    uint64_t acc = 0;
    uint32_t thr = 2;
    for (uint32_t i = 0; i < ns; i++) {
      if (spans[i] > 1) acc += spans[i] - 1;
      if (acc > limit) {
        thr = spans[i] > 2 ? spans[i] - 1 : 2;
        break;
      }
    }
    free(spans);
    for (uint32_t i = 0; i < s->n_edges; i++)
      if (!s->estub[i] && (uint32_t)abs(s->rank[s->eto[i]] - s->rank[s->efrom[i]]) > thr) s->estub[i] = OX_STUB_AT_TO;
    assign_ranks(s, order);
  }
  for (uint32_t i = 0; i < s->n_edges; i++) s->n_stubs += s->estub[i] != 0;
  free(order);
  return 0;
}

/* ------------------------------------------------------------------ layered layout */

enum { ITER_MAX = 8 };
#define NODESEP 18.0 /* between boxes in a row */
#define RANKSEP 34.0 /* between ranks */
#define VIRT_W 8.0   /* width a virtual node (an edge passing through) takes in its row */
#define MARGIN 8.0
#define ARROW 7.0

typedef struct L {
  uint32_t n_real, n; /* real nodes first, then virtual */
  int32_t *rank;
  double *w, *h, *x, *y;
  uint32_t n_ranks;
  /* segments between consecutive ranks: up (to rank - 1) and down (to rank + 1) neighbours */
  uint32_t *up_off, *up, *dn_off, *dn;
  float *up_wt, *dn_wt;
  /* per rank: its nodes in order */
  uint32_t *rk_off, *rk;
  uint32_t *pos;      /* index of a node within its rank */
  /* edge chains: per original edge, the nodes from its top to its bottom */
  uint32_t *ch_off, *ch;
} L;

static void l_free(L *l) {
  free(l->rank);
  free(l->w);
  free(l->h);
  free(l->x);
  free(l->y);
  free(l->up_off);
  free(l->up);
  free(l->dn_off);
  free(l->dn);
  free(l->up_wt);
  free(l->dn_wt);
  free(l->rk_off);
  free(l->rk);
  free(l->pos);
  free(l->ch_off);
  free(l->ch);
}

/* Fenwick tree inversion count of seq (values < m). */
static uint64_t inversions(const uint32_t *seq, uint32_t len, uint32_t m, uint32_t *tree) {
  memset(tree, 0, (m + 1) * sizeof *tree);
  uint64_t inv = 0;
  for (uint32_t i = 0; i < len; i++) {
    uint32_t v = seq[i] + 1;
    /* count earlier values greater than v: i - (earlier values <= v) */
    uint64_t le = 0;
    for (uint32_t j = v; j > 0; j -= j & (~j + 1)) le += tree[j];
    inv += i - le;
    for (uint32_t j = v; j <= m; j += j & (~j + 1)) tree[j]++;
  }
  return inv;
}

static uint64_t crossings(const L *l, uint32_t *seq, uint32_t *tree) {
  uint64_t total = 0;
  for (uint32_t r = 0; r + 1 < l->n_ranks; r++) {
    uint32_t len = 0;
    for (uint32_t i = l->rk_off[r]; i < l->rk_off[r + 1]; i++) {
      uint32_t v = l->rk[i];
      uint32_t start = len;
      for (uint32_t k = l->dn_off[v]; k < l->dn_off[v + 1]; k++) seq[len++] = l->pos[l->dn[k]];
      /* a node's own edges do not cross each other: sort its targets */
      if (len - start > 1) qsort(seq + start, len - start, sizeof *seq, cmp_u32);
    }
    uint32_t m = l->rk_off[r + 2] - l->rk_off[r + 1];
    total += inversions(seq, len, m, tree);
  }
  return total;
}

typedef struct KeyIdx {
  double key;
  uint32_t pos, v;
} KeyIdx;

static int cmp_key(const void *a, const void *b) {
  const KeyIdx *x = a, *y = b;
  if (x->key < y->key) return -1;
  if (x->key > y->key) return 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Reorders rank r by the mean position of each node's neighbours in the adjacent rank (down =
 * use up-neighbours); a node without neighbours there keeps its place. */
static void sweep_rank(L *l, uint32_t r, bool use_up, KeyIdx *buf) {
  uint32_t a = l->rk_off[r], b = l->rk_off[r + 1];
  for (uint32_t i = a; i < b; i++) {
    uint32_t v = l->rk[i];
    const uint32_t *off = use_up ? l->up_off : l->dn_off, *nb = use_up ? l->up : l->dn;
    double sum = 0;
    uint32_t cnt = off[v + 1] - off[v];
    for (uint32_t k = off[v]; k < off[v + 1]; k++) sum += l->pos[nb[k]];
    buf[i - a].key = cnt ? sum / cnt : (double)(i - a);
    buf[i - a].pos = i - a;
    buf[i - a].v = v;
  }
  qsort(buf, b - a, sizeof *buf, cmp_key);
  for (uint32_t i = a; i < b; i++) {
    l->rk[i] = buf[i - a].v;
    l->pos[l->rk[i]] = i - a;
  }
}

/* Weighted isotonic regression with separations: minimise sum wt_i (x_i - d_i)^2 subject to
 * x_{i+1} - x_i >= sep_i. With c_i the prefix sums of sep, y_i = x_i - c_i must be
 * non-decreasing: pool adjacent violators on t_i = d_i - c_i. */
static void place_row(double *x, const double *d, const double *wt, const double *sep, uint32_t m, double *blk_w,
                      double *blk_s, uint32_t *blk_len) {
  if (!m) return;
  double c = 0;
  uint32_t nb = 0;
  for (uint32_t i = 0; i < m; i++) {
    if (i) c += sep[i - 1];
    double t = d[i] - c;
    blk_w[nb] = wt[i];
    blk_s[nb] = wt[i] * t;
    blk_len[nb] = 1;
    nb++;
    while (nb > 1 && blk_s[nb - 2] / blk_w[nb - 2] > blk_s[nb - 1] / blk_w[nb - 1]) {
      blk_w[nb - 2] += blk_w[nb - 1];
      blk_s[nb - 2] += blk_s[nb - 1];
      blk_len[nb - 2] += blk_len[nb - 1];
      nb--;
    }
  }
  c = 0;
  uint32_t i = 0;
  for (uint32_t b = 0; b < nb; b++) {
    double y = blk_s[b] / blk_w[b];
    for (uint32_t k = 0; k < blk_len[b]; k++, i++) {
      if (i) c += sep[i - 1];
      x[i] = y + c;
    }
  }
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Cubic pieces through the points: vertical tangents at every point (smooth through virtual
 * nodes, like dot's splines). pts receives 1 + 3(m - 1) points. */
static uint32_t spline_through(const double *px, const double *py, uint32_t m, double *pts) {
  uint32_t o = 0;
  pts[o++] = px[0];
  pts[o++] = py[0];
  for (uint32_t i = 0; i + 1 < m; i++) {
    double dy = py[i + 1] - py[i];
    pts[o++] = px[i];
    pts[o++] = py[i] + dy * 0.45;
    pts[o++] = px[i + 1];
    pts[o++] = py[i + 1] - dy * 0.45;
    pts[o++] = px[i + 1];
    pts[o++] = py[i + 1];
  }
  return o / 2;
}

void ox_lsub_add_stubs(const OxLSub *s, const uint8_t *kind, OxLayout *lay, bool lr) {
  if (!kind) kind = s->estub;
  uint32_t n_stubs = 0;
  for (uint32_t i = 0; i < s->n_edges; i++) n_stubs += kind[i] != 0;
  if (!n_stubs) return;
  /* stubs per box end, to fan several out: [2v] above v (AT_TO), [2v+1] below v (AT_FROM) */
  uint32_t *cnt = ox_xcalloc(2 * (size_t)s->n + 2, sizeof *cnt), *seen = ox_xcalloc(2 * (size_t)s->n + 2, sizeof *seen);
  for (uint32_t i = 0; i < s->n_edges; i++) {
    if (kind[i] == OX_STUB_AT_TO) cnt[2 * s->eto[i]]++;
    if (kind[i] == OX_STUB_AT_FROM) cnt[2 * s->efrom[i] + 1]++;
  }
  lay->edges = ox_xrealloc(lay->edges, (lay->n_edges + n_stubs + 1) * sizeof *lay->edges);
  double min_y = 0, max_y = lr ? lay->width : lay->height;
  for (uint32_t i = 0; i < s->n_edges; i++) {
    if (!kind[i]) continue;
    bool at_to = kind[i] == OX_STUB_AT_TO;
    uint32_t v = at_to ? s->eto[i] : s->efrom[i];
    int32_t li = ox_layout_find(lay, s->ids[v]);
    if (li < 0) continue;
    const OxLayoutNode *b = &lay->nodes[li];
    /* in TB terms: x across the ranks, y along them; LR swaps them */
    double across = lr ? b->h : b->w, x = lr ? b->y : b->x;
    double top = lr ? b->x - b->w / 2 : b->y - b->h / 2, bot = lr ? b->x + b->w / 2 : b->y + b->h / 2;
    uint32_t slot = 2 * v + (at_to ? 0 : 1), k = cnt[slot], j = seen[slot]++;
    double step = across / (k + 1);
    if (step > 16) step = 16;
    double off = ((double)j - (k - 1) / 2.0) * step;
    OxLayoutEdge *e = &lay->edges[lay->n_edges++];
    memset(e, 0, sizeof *e);
    e->from = s->ids[s->efrom[i]];
    e->to = s->ids[s->eto[i]];
    e->stub = kind[i];
    e->has_arrow = true;
    e->n_pts = 4;
    e->pts = ox_xcalloc(8, sizeof *e->pts);
    /* above the consumer: from 26 pt over it to the arrow; below the producer: from its edge down */
    double y0 = at_to ? top - 26 : bot, y1 = at_to ? top - ARROW : bot + 26 - ARROW, tip = at_to ? top : bot + 26;
    for (int p = 0; p < 4; p++) {
      double yy = y0 + (y1 - y0) * p / 3.0;
      e->pts[2 * p] = lr ? yy : x + off;
      e->pts[2 * p + 1] = lr ? x + off : yy;
    }
    e->ax = lr ? tip : x + off;
    e->ay = lr ? x + off : tip;
    if (y0 < min_y) min_y = y0;
    if (tip + 12 > max_y) max_y = tip + 12; /* room for the label under it */
  }
  lay->n_stubs = n_stubs;
  free(cnt);
  free(seen);
  double d = min_y < 0 ? -min_y + 4 : 0;
  if (d > 0) {
    /* make room above (left of) the first rank for its stubs */
    for (uint32_t i = 0; i < lay->n_nodes; i++) *(lr ? &lay->nodes[i].x : &lay->nodes[i].y) += d;
    for (uint32_t i = 0; i < lay->n_edges; i++) {
      OxLayoutEdge *e = &lay->edges[i];
      for (uint32_t p = 0; p < e->n_pts; p++) e->pts[2 * p + (lr ? 0 : 1)] += d;
      *(lr ? &e->ax : &e->ay) += d;
    }
  }
  double extent = max_y + d;
  if (lr) {
    if (extent > lay->width) lay->width = extent;
  } else if (extent > lay->height) {
    lay->height = extent;
  }
}

static int lsub_layered_core(const OxLSub *s, const OxLayoutOptions *opt, OxLayout **out, char *err, size_t errcap) {
  *out = NULL;
  double t0 = now_s();
  bool lr = opt && opt->rankdir && (strcmp(opt->rankdir, "LR") == 0 || strcmp(opt->rankdir, "RL") == 0);
  L l = {0};
  /* ------------------------------------------------ virtual nodes */
  uint64_t n_virt = 0;
  for (uint32_t i = 0; i < s->n_edges; i++) {
    if (s->estub[i]) continue;
    int32_t span = abs(s->rank[s->eto[i]] - s->rank[s->efrom[i]]);
    if (span > 1) n_virt += (uint64_t)span - 1;
  }
  l.n_real = s->n;
  l.n = s->n + (uint32_t)n_virt;
  l.rank = ox_xcalloc(l.n + 1, sizeof *l.rank);
  l.w = ox_xcalloc(l.n + 1, sizeof *l.w);
  l.h = ox_xcalloc(l.n + 1, sizeof *l.h);
  l.x = ox_xcalloc(l.n + 1, sizeof *l.x);
  l.y = ox_xcalloc(l.n + 1, sizeof *l.y);
  for (uint32_t v = 0; v < s->n; v++) {
    l.rank[v] = s->rank[v];
    l.w[v] = lr ? s->h[v] : s->w[v];
    l.h[v] = lr ? s->w[v] : s->h[v];
  }
  /* chains: top node, virtual nodes, bottom node (by rank) */
  l.ch_off = ox_xcalloc(s->n_edges + 2, sizeof *l.ch_off);
  for (uint32_t i = 0; i < s->n_edges; i++) {
    uint32_t len = 0;
    if (!s->estub[i]) len = (uint32_t)abs(s->rank[s->eto[i]] - s->rank[s->efrom[i]]) + 1;
    l.ch_off[i + 1] = l.ch_off[i] + len;
  }
  l.ch = ox_xcalloc(l.ch_off[s->n_edges] + 1, sizeof *l.ch);
  uint32_t nv = s->n;
  uint64_t n_segs = 0;
  for (uint32_t i = 0; i < s->n_edges; i++) {
    if (s->estub[i]) continue;
    uint32_t top = e_src(s, i), bot = e_dst(s, i);
    uint32_t o = l.ch_off[i], len = l.ch_off[i + 1] - o;
    l.ch[o] = top;
    for (uint32_t k = 1; k + 1 < len; k++) {
      l.rank[nv] = s->rank[top] + (int32_t)k;
      l.w[nv] = VIRT_W;
      l.h[nv] = 0;
      l.ch[o + k] = nv++;
    }
    l.ch[o + len - 1] = bot;
    n_segs += len - 1;
  }
  /* segments */
  l.up_off = ox_xcalloc(l.n + 2, sizeof *l.up_off);
  l.dn_off = ox_xcalloc(l.n + 2, sizeof *l.dn_off);
  for (uint32_t i = 0; i < s->n_edges; i++)
    for (uint32_t k = l.ch_off[i]; k + 1 < l.ch_off[i + 1]; k++) {
      l.dn_off[l.ch[k] + 1]++;
      l.up_off[l.ch[k + 1] + 1]++;
    }
  for (uint32_t v = 0; v < l.n; v++) {
    l.dn_off[v + 1] += l.dn_off[v];
    l.up_off[v + 1] += l.up_off[v];
  }
  l.up = ox_xcalloc(n_segs + 1, sizeof *l.up);
  l.dn = ox_xcalloc(n_segs + 1, sizeof *l.dn);
  l.up_wt = ox_xcalloc(n_segs + 1, sizeof *l.up_wt);
  l.dn_wt = ox_xcalloc(n_segs + 1, sizeof *l.dn_wt);
  {
    uint32_t *fu = ox_xcalloc(l.n + 1, sizeof *fu), *fd = ox_xcalloc(l.n + 1, sizeof *fd);
    for (uint32_t i = 0; i < s->n_edges; i++)
      for (uint32_t k = l.ch_off[i]; k + 1 < l.ch_off[i + 1]; k++) {
        uint32_t a = l.ch[k], b = l.ch[k + 1];
        /* dot's weights: long edges (between virtual nodes) pull hardest towards straightness */
        float wt = (a >= l.n_real && b >= l.n_real) ? 8.0f : (a >= l.n_real || b >= l.n_real) ? 2.0f : 1.0f;
        l.dn[l.dn_off[a] + fd[a]] = b;
        l.dn_wt[l.dn_off[a] + fd[a]++] = wt;
        l.up[l.up_off[b] + fu[b]] = a;
        l.up_wt[l.up_off[b] + fu[b]++] = wt;
      }
    free(fu);
    free(fd);
  }
  /* ------------------------------------------------ initial order: depth first from the sources */
  for (uint32_t v = 0; v < l.n; v++)
    if ((uint32_t)l.rank[v] + 1 > l.n_ranks) l.n_ranks = (uint32_t)l.rank[v] + 1;
  if (!l.n_ranks) l.n_ranks = 1;
  l.rk_off = ox_xcalloc(l.n_ranks + 2, sizeof *l.rk_off);
  l.rk = ox_xcalloc(l.n + 1, sizeof *l.rk);
  l.pos = ox_xcalloc(l.n + 1, sizeof *l.pos);
  for (uint32_t v = 0; v < l.n; v++) l.rk_off[l.rank[v] + 1]++;
  for (uint32_t r = 0; r < l.n_ranks; r++) l.rk_off[r + 1] += l.rk_off[r];
  {
    uint32_t *fill = ox_xcalloc(l.n_ranks + 1, sizeof *fill);
    uint8_t *seen = ox_xcalloc(l.n + 1, 1);
    uint32_t *stack = ox_xcalloc(l.n + n_segs + 2, sizeof *stack);
    for (uint32_t root = 0; root < l.n; root++) {
      /* roots in id order: nodes without up-neighbours first, the rest (reached or not) after */
      if (seen[root] || (root < l.n_real && l.up_off[root + 1] != l.up_off[root])) continue;
      if (root >= l.n_real) continue;
      uint32_t sp = 0;
      stack[sp++] = root;
      while (sp) {
        uint32_t v = stack[--sp];
        if (seen[v]) continue;
        seen[v] = 1;
        uint32_t r = (uint32_t)l.rank[v];
        l.pos[v] = fill[r];
        l.rk[l.rk_off[r] + fill[r]++] = v;
        /* push children in reverse so the first child is visited first */
        for (uint32_t k = l.dn_off[v + 1]; k-- > l.dn_off[v];)
          if (!seen[l.dn[k]]) stack[sp++] = l.dn[k];
      }
    }
    for (uint32_t v = 0; v < l.n; v++)
      if (!seen[v]) {
        uint32_t r = (uint32_t)l.rank[v];
        l.pos[v] = fill[r];
        l.rk[l.rk_off[r] + fill[r]++] = v;
      }
    free(fill);
    free(seen);
    free(stack);
  }
  if (ox_layout_cancelled(opt)) goto cancelled;
  /* ------------------------------------------------ ordering sweeps */
  {
    uint32_t widest = 0;
    for (uint32_t r = 0; r < l.n_ranks; r++)
      if (l.rk_off[r + 1] - l.rk_off[r] > widest) widest = l.rk_off[r + 1] - l.rk_off[r];
    KeyIdx *buf = ox_xcalloc(widest + 1, sizeof *buf);
    uint32_t *seq = ox_xcalloc(n_segs + 1, sizeof *seq), *tree = ox_xcalloc(widest + 2, sizeof *tree);
    uint32_t *best = ox_xcalloc(l.n + 1, sizeof *best);
    memcpy(best, l.rk, l.n * sizeof *best);
    uint64_t best_c = crossings(&l, seq, tree);
    int iters = l.n > 40000 ? 4 : ITER_MAX;
    for (int it = 0; it < iters && best_c > 0; it++) {
      if (it % 2 == 0)
        for (uint32_t r = 1; r < l.n_ranks; r++) sweep_rank(&l, r, true, buf);
      else
        for (uint32_t r = l.n_ranks - 1; r-- > 0;) sweep_rank(&l, r, false, buf);
      uint64_t c = crossings(&l, seq, tree);
      if (c < best_c) {
        best_c = c;
        memcpy(best, l.rk, l.n * sizeof *best);
      }
      if (ox_layout_cancelled(opt)) break;
    }
    memcpy(l.rk, best, l.n * sizeof *best);
    for (uint32_t r = 0; r < l.n_ranks; r++)
      for (uint32_t i = l.rk_off[r]; i < l.rk_off[r + 1]; i++) l.pos[l.rk[i]] = i - l.rk_off[r];
    free(buf);
    free(seq);
    free(tree);
    free(best);
  }
  if (ox_layout_cancelled(opt)) goto cancelled;
  /* ------------------------------------------------ rows (wrapping) */
  double *rank_h = ox_xcalloc(l.n_ranks + 1, sizeof *rank_h);
  for (uint32_t v = 0; v < l.n; v++)
    if (l.h[v] > rank_h[l.rank[v]]) rank_h[l.rank[v]] = l.h[v];
  for (uint32_t r = 0; r < l.n_ranks; r++)
    if (rank_h[r] < 4) rank_h[r] = 4; /* a rank of virtual nodes only */
  double aspect = opt ? opt->aspect : 0;
  if (lr && aspect > 0) aspect = 1.0 / aspect;
  /* one row per rank (wide stretches are cut into strips after placement) */
  uint32_t n_rows = l.n_ranks;
  uint32_t *row_off = ox_xcalloc(n_rows + 2, sizeof *row_off); /* into rk */
  memcpy(row_off, l.rk_off, (n_rows + 1) * sizeof *row_off);
  double *row_h = rank_h;
  /* ------------------------------------------------ x: isotonic placement per row */
  {
    double *d = ox_xcalloc(l.n + 1, sizeof *d), *wt = ox_xcalloc(l.n + 1, sizeof *wt),
           *sep = ox_xcalloc(l.n + 1, sizeof *sep), *xr = ox_xcalloc(l.n + 1, sizeof *xr);
    double *bw = ox_xcalloc(l.n + 1, sizeof *bw), *bs = ox_xcalloc(l.n + 1, sizeof *bs);
    uint32_t *bl = ox_xcalloc(l.n + 1, sizeof *bl);
    /* initial: rows packed and centred */
    for (uint32_t q = 0; q < n_rows; q++) {
      double acc = 0;
      for (uint32_t i = row_off[q]; i < row_off[q + 1]; i++) {
        uint32_t v = l.rk[i];
        l.x[v] = acc + l.w[v] / 2;
        acc += l.w[v] + NODESEP;
      }
      for (uint32_t i = row_off[q]; i < row_off[q + 1]; i++) l.x[l.rk[i]] -= acc / 2;
    }
    int passes = 6;
    for (int p = 0; p < passes; p++) {
      int mode = p == passes - 1 ? 2 : p % 2; /* 0 down (up-neighbours), 1 up, 2 both */
      for (uint32_t qq = 0; qq < n_rows; qq++) {
        uint32_t q = mode == 1 ? n_rows - 1 - qq : qq;
        uint32_t a = row_off[q], m = row_off[q + 1] - a;
        for (uint32_t i = 0; i < m; i++) {
          uint32_t v = l.rk[a + i];
          double sum = 0, ws = 0;
          if (mode != 1)
            for (uint32_t k = l.up_off[v]; k < l.up_off[v + 1]; k++) {
              sum += l.up_wt[k] * l.x[l.up[k]];
              ws += l.up_wt[k];
            }
          if (mode != 0)
            for (uint32_t k = l.dn_off[v]; k < l.dn_off[v + 1]; k++) {
              sum += l.dn_wt[k] * l.x[l.dn[k]];
              ws += l.dn_wt[k];
            }
          d[i] = ws > 0 ? sum / ws : l.x[v];
          wt[i] = ws > 0 ? ws : 0.25;
          if (i + 1 < m) sep[i] = (l.w[v] + l.w[l.rk[a + i + 1]]) / 2 + NODESEP;
        }
        place_row(xr, d, wt, sep, m, bw, bs, bl);
        for (uint32_t i = 0; i < m; i++) l.x[l.rk[a + i]] = xr[i];
      }
      if (ox_layout_cancelled(opt)) break;
    }
    free(d);
    free(wt);
    free(sep);
    free(xr);
    free(bw);
    free(bs);
    free(bl);
  }
  /* ------------------------------------------------ y, with wide stretches cut into strips */
  /* Runs of consecutive ranks wider than the width the aspect ratio asks for (the towers between
   * a split and its cat) are cut, by x, into strips laid one under the other: a tower stays in
   * one piece, and only edges that leave their strip (to the cat collecting every tower) become
   * stubs. Narrow ranks above and below keep their places. */
  uint8_t *kind = ox_xcalloc(s->n_edges + 1, 1); /* the stubs: s->estub plus edges between strips or columns */
  memcpy(kind, s->estub, s->n_edges);
  bool folded = false;
  {
    uint32_t *strip = ox_xcalloc(l.n + 1, sizeof *strip);
    double *rminx = ox_xcalloc(n_rows + 1, sizeof *rminx), *rmaxx = ox_xcalloc(n_rows + 1, sizeof *rmaxx);
    double area = 0, widest = 0;
    for (uint32_t q = 0; q < n_rows; q++) {
      rminx[q] = INFINITY;
      rmaxx[q] = -INFINITY;
      for (uint32_t i = row_off[q]; i < row_off[q + 1]; i++) {
        uint32_t v = l.rk[i];
        rminx[q] = fmin(rminx[q], l.x[v] - l.w[v] / 2);
        rmaxx[q] = fmax(rmaxx[q], l.x[v] + l.w[v] / 2);
      }
      double rw = rmaxx[q] > rminx[q] ? rmaxx[q] - rminx[q] : 0;
      area += rw * (row_h[q] + RANKSEP);
      widest = fmax(widest, rw);
    }
    double target = aspect > 0 && !lr ? sqrt(area * aspect) : INFINITY;
    double y = MARGIN;
    for (uint32_t q = 0; q < n_rows;) {
      double rw = rmaxx[q] - rminx[q];
      if (!(target < INFINITY) || !(rw > target * 1.3) || widest <= target * 1.3) {
        if (q) y += RANKSEP;
        for (uint32_t i = row_off[q]; i < row_off[q + 1]; i++) l.y[l.rk[i]] = y + row_h[q] / 2;
        y += row_h[q];
        q++;
        continue;
      }
      /* the run of wide ranks q..q2-1 */
      uint32_t q2 = q;
      double x0 = INFINITY, x1 = -INFINITY, run_h = 0;
      while (q2 < n_rows && rmaxx[q2] - rminx[q2] > target * 1.3) {
        x0 = fmin(x0, rminx[q2]);
        x1 = fmax(x1, rmaxx[q2]);
        q2++;
      }
      uint32_t K = (uint32_t)ceil((x1 - x0) / target);
      if (K < 2) K = 2;
      double sw = (x1 - x0) / K;
      for (uint32_t p = q; p < q2; p++) run_h += row_h[p] + (p > q ? RANKSEP : 0);
      if (q) y += RANKSEP;
      for (uint32_t p = q; p < q2; p++)
        for (uint32_t i = row_off[p]; i < row_off[p + 1]; i++) {
          uint32_t v = l.rk[i];
          uint32_t j = (uint32_t)((l.x[v] - x0) / sw);
          strip[v] = (j < K ? j : K - 1) + 1;
        }
      (void)run_h;
      double yy = y;
      for (uint32_t j = 0; j < K; j++) {
        if (j) yy += RANKSEP * 1.5;
        bool any_row = false;
        for (uint32_t p = q; p < q2; p++) {
          /* a rank with nothing of this strip takes no room in it */
          double h = 0;
          bool any = false;
          for (uint32_t i = row_off[p]; i < row_off[p + 1]; i++) {
            uint32_t v = l.rk[i];
            if (strip[v] != j + 1) continue;
            any = true;
            h = fmax(h, l.h[v]);
          }
          if (!any) continue;
          if (any_row) yy += RANKSEP;
          any_row = true;
          h = fmax(h, 4);
          for (uint32_t i = row_off[p]; i < row_off[p + 1]; i++) {
            uint32_t v = l.rk[i];
            if (strip[v] != j + 1) continue;
            l.y[v] = yy + h / 2;
            l.x[v] -= j * sw;
          }
          yy += h;
        }
      }
      y = yy;
      q = q2;
      folded = true;
    }
    if (folded) {
      /* an edge whose path leaves its strip is a stub: at the producer when the consumer collects
       * many (a cat of every tower), else at the consumer */
      uint32_t *indeg = ox_xcalloc(s->n + 1, sizeof *indeg), *outdeg = ox_xcalloc(s->n + 1, sizeof *outdeg);
      for (uint32_t i = 0; i < s->n_edges; i++) {
        indeg[s->eto[i]]++;
        outdeg[s->efrom[i]]++;
      }
      for (uint32_t i = 0; i < s->n_edges; i++) {
        if (kind[i]) continue;
        bool cross = false;
        uint32_t first = 0;
        for (uint32_t k = l.ch_off[i]; k < l.ch_off[i + 1] && !cross; k++) {
          uint32_t st = strip[l.ch[k]];
          if (!st) continue; /* outside any run */
          if (!first)
            first = st;
          else
            cross = st != first;
        }
        /* into or out of a run from a strip other than the first: the path would cross strips */
        if (!cross && first > 1) {
          uint32_t a = strip[l.ch[l.ch_off[i]]], b = strip[l.ch[l.ch_off[i + 1] - 1]];
          cross = !a || !b;
        }
        if (cross) kind[i] = indeg[s->eto[i]] > outdeg[s->efrom[i]] ? OX_STUB_AT_FROM : OX_STUB_AT_TO;
      }
      free(indeg);
      free(outdeg);
    }
    free(strip);
    free(rminx);
    free(rmaxx);
  }
  free(row_off);
  free(row_h);
  /* ------------------------------------------------ columns: a deep graph folded to the aspect */
  if (!folded && !lr && aspect > 0 && l.n_ranks >= 6 && l.n) {
    double minx = INFINITY, maxx = -INFINITY, maxy = 0;
    for (uint32_t v = 0; v < l.n; v++) {
      minx = fmin(minx, l.x[v] - l.w[v] / 2);
      maxx = fmax(maxx, l.x[v] + l.w[v] / 2);
      maxy = fmax(maxy, l.y[v] + l.h[v] / 2);
    }
    double W = maxx - minx + 2 * MARGIN, H = maxy + MARGIN;
    if (H / W > 1.5 / aspect) {
      uint32_t K = (uint32_t)lround(sqrt(aspect * H / W));
      if (K > l.n_ranks / 3) K = l.n_ranks / 3;
      if (K >= 2) {
        /* per rank: its top and bottom */
        double *rtop = ox_xcalloc(l.n_ranks + 1, sizeof *rtop), *rbot = ox_xcalloc(l.n_ranks + 1, sizeof *rbot);
        for (uint32_t r = 0; r < l.n_ranks; r++) {
          rtop[r] = INFINITY;
          rbot[r] = -INFINITY;
        }
        for (uint32_t v = 0; v < l.n; v++) {
          uint32_t r = (uint32_t)l.rank[v];
          rtop[r] = fmin(rtop[r], l.y[v] - l.h[v] / 2);
          rbot[r] = fmax(rbot[r], l.y[v] + l.h[v] / 2);
        }
        uint32_t *col = ox_xcalloc(l.n_ranks + 1, sizeof *col);
        double per = H / K;
        uint32_t c = 0;
        double start = rtop[0];
        for (uint32_t r = 0; r < l.n_ranks; r++) {
          if (c + 1 < K && rbot[r] - start > per && r > 0) {
            c++;
            start = rtop[r];
          }
          col[r] = c;
        }
        uint32_t ncol = c + 1;
        double *cminx = ox_xcalloc(ncol + 1, sizeof *cminx), *cmaxx = ox_xcalloc(ncol + 1, sizeof *cmaxx),
               *ctop = ox_xcalloc(ncol + 1, sizeof *ctop), *off = ox_xcalloc(ncol + 1, sizeof *off);
        for (uint32_t k = 0; k < ncol; k++) {
          cminx[k] = ctop[k] = INFINITY;
          cmaxx[k] = -INFINITY;
        }
        for (uint32_t v = 0; v < l.n; v++) {
          uint32_t k = col[l.rank[v]];
          cminx[k] = fmin(cminx[k], l.x[v] - l.w[v] / 2);
          cmaxx[k] = fmax(cmaxx[k], l.x[v] + l.w[v] / 2);
          ctop[k] = fmin(ctop[k], l.y[v] - l.h[v] / 2);
        }
        /* room above each column's first rank for the stubs that continue it */
        for (uint32_t k = 1; k < ncol; k++) off[k] = off[k - 1] + (cmaxx[k - 1] - cminx[k - 1]) + 3 * NODESEP;
        for (uint32_t v = 0; v < l.n; v++) {
          uint32_t k = col[l.rank[v]];
          l.x[v] += off[k] - cminx[k];
          l.y[v] -= ctop[k] - MARGIN - (k ? 30 : 0);
        }
        /* an edge between columns is a stub into its consumer, labelled with its producer */
        for (uint32_t i = 0; i < s->n_edges; i++)
          if (!kind[i] && col[l.rank[s->efrom[i]]] != col[l.rank[s->eto[i]]]) kind[i] = OX_STUB_AT_TO;
        free(rtop);
        free(rbot);
        free(col);
        free(cminx);
        free(cmaxx);
        free(ctop);
        free(off);
      }
    }
  }
  /* ------------------------------------------------ result */
  {
    double minx = INFINITY, maxx = -INFINITY, maxy = 0;
    for (uint32_t v = 0; v < l.n; v++) {
      if (l.x[v] - l.w[v] / 2 < minx) minx = l.x[v] - l.w[v] / 2;
      if (l.x[v] + l.w[v] / 2 > maxx) maxx = l.x[v] + l.w[v] / 2;
      if (l.y[v] + l.h[v] / 2 > maxy) maxy = l.y[v] + l.h[v] / 2;
    }
    if (!l.n) minx = maxx = 0;
    for (uint32_t v = 0; v < l.n; v++) l.x[v] += MARGIN - minx;
    OxLayout *lay = ox_xcalloc(1, sizeof *lay);
    lay->engine = OX_LAYOUT_LAYERED;
    lay->width = maxx - minx + 2 * MARGIN;
    lay->height = maxy + MARGIN;
    lay->nodes = ox_xcalloc(s->n + 1, sizeof *lay->nodes);
    for (uint32_t v = 0; v < s->n; v++) {
      OxLayoutNode *b = &lay->nodes[lay->n_nodes++];
      b->id = s->ids[v];
      b->x = lr ? l.y[v] : l.x[v];
      b->y = lr ? l.x[v] : l.y[v];
      b->w = s->w[v];
      b->h = s->h[v];
    }
    if (lr) {
      double t = lay->width;
      lay->width = lay->height;
      lay->height = t;
    }
    lay->edges = ox_xcalloc(s->n_edges + 1, sizeof *lay->edges);
    double *px = ox_xcalloc(l.n_ranks + 3, sizeof *px), *py = ox_xcalloc(l.n_ranks + 3, sizeof *py);
    for (uint32_t i = 0; i < s->n_edges; i++) {
      if (kind[i]) continue;
      uint32_t o = l.ch_off[i], len = l.ch_off[i + 1] - o;
      /* in TB coordinates, from the producer's box side to ARROW short of the consumer's */
      bool rev = s->erev[i];
      uint32_t m = 0;
      for (uint32_t k = 0; k < len; k++) {
        uint32_t v = l.ch[rev ? o + len - 1 - k : o + k];
        double yy = l.y[v];
        if (k == 0) yy += rev ? -l.h[v] / 2 : l.h[v] / 2;
        if (k == len - 1) yy += rev ? l.h[v] / 2 + ARROW : -l.h[v] / 2 - ARROW;
        px[m] = l.x[v];
        py[m++] = yy;
      }
      OxLayoutEdge *e = &lay->edges[lay->n_edges++];
      e->from = s->ids[s->efrom[i]];
      e->to = s->ids[s->eto[i]];
      e->pts = ox_xcalloc(2 * (1 + 3 * (size_t)(m - 1)) + 2, sizeof *e->pts);
      e->n_pts = spline_through(px, py, m, e->pts);
      uint32_t last = l.ch[rev ? o : o + len - 1];
      e->has_arrow = true;
      e->ax = l.x[last];
      e->ay = l.y[last] + (rev ? l.h[last] / 2 : -l.h[last] / 2);
      if (lr) {
        for (uint32_t p = 0; p < e->n_pts; p++) {
          double t = e->pts[2 * p];
          e->pts[2 * p] = e->pts[2 * p + 1];
          e->pts[2 * p + 1] = t;
        }
        double t = e->ax;
        e->ax = e->ay;
        e->ay = t;
      }
    }
    free(px);
    free(py);
    qsort(lay->nodes, lay->n_nodes, sizeof *lay->nodes, cmp_layout_node);
    ox_lsub_add_stubs(s, kind, lay, lr);
    free(kind);
    lay->seconds = now_s() - t0;
    l_free(&l);
    *out = lay;
    return 0;
  }
cancelled:
  l_free(&l);
  if (err && errcap) snprintf(err, errcap, "cancelled");
  return -1;
}

/* Loose nodes (no edge to any other node of the request: an unused parameter, a placeholder
 * the graph never reads; executorch's outer graphs keep dozens) would all share the top rank
 * and stretch the picture into a line. They are laid out apart: the rest as a graph, then they
 * fill rows under it, as wide as the graph or as the target aspect asks, in id order. */
enum { LOOSE_MIN = 8 };

int ox_lsub_layered(const OxLSub *s, const OxLayoutOptions *opt, OxLayout **out, char *err, size_t errcap) {
  *out = NULL;
  uint8_t *linked = ox_xcalloc(s->n + 1, 1);
  for (uint32_t i = 0; i < s->n_edges; i++) linked[s->efrom[i]] = linked[s->eto[i]] = 1;
  uint32_t n_loose = 0;
  for (uint32_t v = 0; v < s->n; v++) n_loose += !linked[v];
  if (n_loose < LOOSE_MIN || n_loose == s->n) {
    free(linked);
    return lsub_layered_core(s, opt, out, err, errcap);
  }
  /* the linked part, its nodes renumbered */
  OxLSub t = {0};
  uint32_t *local = ox_xcalloc(s->n + 1, sizeof *local);
  t.n = s->n - n_loose;
  t.ids = ox_xcalloc(t.n + 1, sizeof *t.ids);
  t.w = ox_xcalloc(t.n + 1, sizeof *t.w);
  t.h = ox_xcalloc(t.n + 1, sizeof *t.h);
  t.rank = ox_xcalloc(t.n + 1, sizeof *t.rank);
  t.hub = ox_xcalloc(t.n + 1, sizeof *t.hub);
  for (uint32_t v = 0, k = 0; v < s->n; v++) {
    if (!linked[v]) continue;
    local[v] = k;
    t.ids[k] = s->ids[v];
    t.w[k] = s->w[v];
    t.h[k] = s->h[v];
    t.rank[k] = s->rank[v];
    t.hub[k] = s->hub ? s->hub[v] : 0;
    k++;
  }
  /* ranks were tightened with the loose nodes in rank 0: start the linked ones at 0 again */
  int32_t rmin = INT32_MAX;
  for (uint32_t k = 0; k < t.n; k++) rmin = t.rank[k] < rmin ? t.rank[k] : rmin;
  for (uint32_t k = 0; k < t.n; k++) t.rank[k] -= rmin;
  t.n_edges = s->n_edges;
  t.efrom = ox_xcalloc(t.n_edges + 1, sizeof *t.efrom);
  t.eto = ox_xcalloc(t.n_edges + 1, sizeof *t.eto);
  t.estub = ox_xcalloc(t.n_edges + 1, 1);
  t.erev = ox_xcalloc(t.n_edges + 1, 1);
  for (uint32_t i = 0; i < s->n_edges; i++) {
    t.efrom[i] = local[s->efrom[i]];
    t.eto[i] = local[s->eto[i]];
    t.estub[i] = s->estub[i];
    t.erev[i] = s->erev[i];
  }
  t.n_stubs = s->n_stubs;
  OxLayout *lay = NULL;
  int rc = lsub_layered_core(&t, opt, &lay, err, errcap);
  ox_lsub_free(&t);
  free(local);
  if (rc != 0) {
    free(linked);
    return rc;
  }
  /* the loose ones in rows under it */
  double area = lay->width * lay->height, loose_w = 0;
  for (uint32_t v = 0; v < s->n; v++)
    if (!linked[v]) {
      area += ((double)s->w[v] + NODESEP) * ((double)s->h[v] + RANKSEP / 2);
      loose_w = fmax(loose_w, s->w[v]);
    }
  double aspect = opt && opt->aspect > 0 ? opt->aspect : 1.5;
  double row_w = fmax(fmax(lay->width - 2 * MARGIN, sqrt(area * aspect)), loose_w);
  lay->nodes = ox_xrealloc(lay->nodes, (lay->n_nodes + n_loose + 1) * sizeof *lay->nodes);
  double x = MARGIN, y = lay->height + RANKSEP, row_h = 0, width = lay->width;
  for (uint32_t v = 0; v < s->n; v++) {
    if (linked[v]) continue;
    if (x > MARGIN && x + s->w[v] > MARGIN + row_w) {
      x = MARGIN;
      y += row_h + RANKSEP / 2;
      row_h = 0;
    }
    OxLayoutNode *b = &lay->nodes[lay->n_nodes++];
    b->id = s->ids[v];
    b->w = s->w[v];
    b->h = s->h[v];
    b->x = x + b->w / 2;
    b->y = y + b->h / 2;
    x += b->w + NODESEP;
    row_h = fmax(row_h, b->h);
    width = fmax(width, x - NODESEP + MARGIN);
  }
  lay->width = width;
  lay->height = y + row_h + MARGIN;
  qsort(lay->nodes, lay->n_nodes, sizeof *lay->nodes, cmp_layout_node);
  free(linked);
  *out = lay;
  return 0;
}

int ox_layout_layered(const OxGraph *g, const OxNodeId *subset, uint32_t n, const OxLayoutOptions *opt,
                      OxLayout **out, char *err, size_t errcap) {
  *out = NULL;
  OxLSub s;
  if (ox_lsub_build(g, subset, n, opt, &s, err, errcap) != 0) return -1;
  if (ox_layout_cancelled(opt)) {
    ox_lsub_free(&s);
    if (err && errcap) snprintf(err, errcap, "cancelled");
    return -1;
  }
  int rc = ox_lsub_layered(&s, opt, out, err, errcap);
  ox_lsub_free(&s);
  return rc;
}
