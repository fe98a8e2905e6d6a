/* ox_check.c - semantic checks run on every step before it is committed.
 *
 *  structure: the nodes the step added or rewired refer only to live nodes, their users lists
 *             agree with the references, getitems are well formed, and the step created no
 *             cycle (argument below).
 *  shape:     every value the step replaced and its replacement agree on dtype and shape, and
 *             every added node's meta agrees with what inference derives from its inputs.
 *  numeric:   ox_check_numeric.c (the region before and after run in the interpreter).
 *
 * A check that cannot run is SKIPPED with its reason; it never reports a pass.
 *
 * Acyclicity without walking the graph. A graph whose live order is topological (every edge
 * u -> v, "v uses u", has u before v) is acyclic. The graph keeps order labels (O(1) "a before
 * b") and a flag "order known topological" that survives a mutation only when the edges the
 * mutation added or moved go forward (ox_graph.h). So, in order of cost:
 *   1. flag set after the step: the order is topological, hence acyclic. O(1).
 *   2. flag clear, but the order was topological when the step's transaction began (or at its
 *      last toposort, an ORDER edit): an edge of the graph now can go backwards only if it was
 *      added or moved by the step, i.e. it enters a node the step added, rewired (ARGS) or
 *      moved, or leaves a moved node: every other edge existed at that point between two nodes
 *      whose relative order no later edit changed (inserting or unlinking OTHER nodes keeps
 *      relative order). Compare those edges' labels, O(edges touched).
 *      - none backwards: the order is topological again (flag set), acyclic.
 *      - some backwards, u -> v with label(u) >= label(v): every cycle contains a backward
 *        edge; the cycle's lowest-labelled node is entered by a backward edge (so it is the v
 *        of one) and its highest-labelled node leaves by one (so it is the u of one). Hence every
 *        cycle lies in the label window [min label(v), max label(u)], and a three-colour DFS
 *        upstream from the backward edges' u, restricted to that window, finds a cycle iff
 *        there is one. Cost: the window, the region between the displaced edges (the
 *        "affected region" of Pearce-Kelly), not the graph.
 *   3. nothing known about the order before the step (a pass left it unsorted, or the
 *      structure check was off for earlier steps): DFS over the upstream closure of the
 *      touched nodes (every new cycle passes through a touched node). Correct, O(closure).
 */
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

static const char *intern(OxPassCtx *c, const char *s) { return c->trace ? ox_trace_intern(c->trace, s) : NULL; }

static bool is_getitem(const char *t) { return strcmp(t, "operator.getitem") == 0; }

typedef struct {
  OxGraph *g;
  OxNodeId user;
  char *err;
  size_t cap;
  bool bad;
} RefCtx;

static void ref_cb(OxNodeId id, void *data) {
  RefCtx *r = data;
  if (r->bad) return;
  const OxNode *in = ox_graph_node(r->g, id);
  if (!in || in->erased) {
    snprintf(r->err, r->cap, "%s refers to %s, which is not live", r->g->nodes[r->user].name, in ? in->name : "?");
    r->bad = true;
    return;
  }
  for (uint32_t i = 0; i < in->n_users; i++)
    if (in->users[i] == r->user) return;
  snprintf(r->err, r->cap, "users of %s do not list %s", in->name, r->g->nodes[r->user].name);
  r->bad = true;
}

static bool check_node_local(OxGraph *g, OxNodeId id, char *err, size_t cap) {
  const OxNode *n = &g->nodes[id];
  RefCtx r = {g, id, err, cap, false};
  ox_value_foreach_node(&n->args, ref_cb, &r);
  ox_value_foreach_node(&n->kwargs, ref_cb, &r);
  if (r.bad) return false;
  for (uint32_t i = 0; i < n->n_users; i++) {
    const OxNode *u = ox_graph_node(g, n->users[i]);
    if (!u || u->erased) {
      snprintf(err, cap, "users of %s list a node that is not live", n->name);
      return false;
    }
  }
  if (n->op == OX_OP_CALL_FUNCTION && is_getitem(n->target)) {
    if (n->args.n != 2 || n->args.u.items[0].kind != OX_V_NODE) {
      snprintf(err, cap, "getitem %s must take (node, index)", n->name);
      return false;
    }
    const OxNode *src = ox_graph_node(g, n->args.u.items[0].u.node);
    const OxValue *k = &n->args.u.items[1];
    if (src && k->kind == OX_V_INT && src->meta.kind == OX_META_TUPLE &&
        (k->u.i < -(int64_t)src->meta.n || k->u.i >= (int64_t)src->meta.n)) {
      snprintf(err, cap, "getitem %s takes index %lld of %s, which has %u outputs", n->name, (long long)k->u.i,
               src->name, src->meta.n);
      return false;
    }
  }
  return true;
}

/* Iterative three-colour DFS over the upstream closure of the roots: a grey node met again
 * closes a cycle. Every cycle through a root lies in that closure. Returns the node on the
 * cycle, or 0. */
static OxNodeId find_cycle(OxGraph *g, const OxNodeId *const *lists, const uint32_t *counts, int n_lists) {
  uint8_t *color = ox_xcalloc(g->n_nodes + 1, 1); /* 0 white, 1 grey, 2 black */
  uint32_t cap = 256, sp = 0;
  OxNodeId *stack = ox_xrealloc(NULL, cap * sizeof *stack);
  uint32_t *next_in = ox_xrealloc(NULL, cap * sizeof *next_in);
  OxNodeId *ins = NULL;
  uint32_t ins_cap = 0;
  OxNodeId found = 0;
  for (int l = 0; l < n_lists && !found; l++)
    for (uint32_t r = 0; r < counts[l] && !found; r++) {
      OxNodeId root = lists[l][r];
      if (color[root]) continue;
      color[root] = 1;
      stack[0] = root;
      next_in[0] = 0;
      sp = 1;
      while (sp && !found) {
        OxNodeId x = stack[sp - 1];
        uint32_t k = ox_graph_inputs(g, x, NULL, 0);
        if (k > ins_cap) {
          ins_cap = k * 2;
          ins = ox_xrealloc(ins, ins_cap * sizeof *ins);
        }
        ox_graph_inputs(g, x, ins, k);
        if (next_in[sp - 1] >= k) {
          color[x] = 2;
          sp--;
          continue;
        }
        OxNodeId y = ins[next_in[sp - 1]++];
        if (color[y] == 1) {
          found = y;
          break;
        }
        if (color[y] == 2) continue;
        color[y] = 1;
        if (sp == cap) {
          cap *= 2;
          stack = ox_xrealloc(stack, cap * sizeof *stack);
          next_in = ox_xrealloc(next_in, cap * sizeof *next_in);
        }
        stack[sp] = y;
        next_in[sp] = 0;
        sp++;
      }
    }
  free(color);
  free(stack);
  free(next_in);
  free(ins);
  return found;
}

/* ---------------------------------------------------------------- id sets (open addressing) */

/* Node id -> small value (0 = absent), sized to what is inserted: per-step scratch must not
 * cost O(graph). */
typedef struct IdMap {
  OxNodeId *keys;
  uint8_t *vals;
  uint32_t cap, count;
} IdMap;

static uint32_t id_hash(OxNodeId x) { return (uint32_t)((x * 2654435761u) ^ (x >> 16)); }

static void idmap_free(IdMap *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

static uint8_t idmap_get(const IdMap *m, OxNodeId x) {
  if (!m->cap) return 0;
  for (uint32_t j = id_hash(x) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1))
    if (m->keys[j] == x) return m->vals[j];
  return 0;
}

static void idmap_set(IdMap *m, OxNodeId x, uint8_t v) {
  if ((m->count + 1) * 2 > m->cap) {
    IdMap n = {0};
    n.cap = m->cap ? m->cap * 2 : 64;
    n.keys = ox_xcalloc(n.cap, sizeof *n.keys);
    n.vals = ox_xcalloc(n.cap, sizeof *n.vals);
    for (uint32_t i = 0; i < m->cap; i++)
      if (m->keys[i]) {
        uint32_t j = id_hash(m->keys[i]) & (n.cap - 1);
        while (n.keys[j]) j = (j + 1) & (n.cap - 1);
        n.keys[j] = m->keys[i];
        n.vals[j] = m->vals[i];
        n.count++;
      }
    idmap_free(m);
    *m = n;
  }
  uint32_t j = id_hash(x) & (m->cap - 1);
  while (m->keys[j] && m->keys[j] != x) j = (j + 1) & (m->cap - 1);
  if (!m->keys[j]) {
    m->keys[j] = x;
    m->count++;
  }
  m->vals[j] = v;
}

/* ---------------------------------------------------------------- acyclicity, cases 2 and 3 */

typedef struct {
  OxNodeId *ids;
  uint32_t n, cap;
} IdVec;

static void idvec_push(IdVec *v, OxNodeId x) {
  if (v->n == v->cap) {
    v->cap = v->cap ? v->cap * 2 : 16;
    v->ids = ox_xrealloc(v->ids, v->cap * sizeof *v->ids);
  }
  v->ids[v->n++] = x;
}

typedef struct {
  const OxGraph *g;
  const uint64_t *lab;
  OxNodeId consumer;
  IdVec *back;       /* backward edges' producers */
  uint64_t lo, hi;   /* label window */
} BackCtx;

static void back_edge(BackCtx *b, OxNodeId u, OxNodeId v) {
  if (b->lab[u] < b->lab[v]) return;
  idvec_push(b->back, u);
  if (b->lab[v] < b->lo) b->lo = b->lab[v];
  if (b->lab[u] > b->hi) b->hi = b->lab[u];
}

static void back_in_cb(OxNodeId u, void *data) {
  BackCtx *b = data;
  const OxNode *n = ox_graph_node(b->g, u);
  if (n && !n->erased) back_edge(b, u, b->consumer);
}

/* Three-colour DFS upstream from roots over live nodes whose label lies in [lo, hi]. Returns
 * a node on a cycle, or 0. Colours live in a hash map: the cost is the nodes visited. */
static OxNodeId window_cycle(OxGraph *g, const uint64_t *lab, const IdVec *roots, uint64_t lo, uint64_t hi,
                             uint32_t *visited) {
  IdMap colour = {0}; /* 1 grey, 2 black */
  IdVec stack = {0};
  uint32_t *next_in = NULL, cap_next = 0;
  OxNodeId *ins = NULL;
  uint32_t ins_cap = 0;
  OxNodeId found = 0;
  for (uint32_t r = 0; r < roots->n && !found; r++) {
    OxNodeId root = roots->ids[r];
    if (idmap_get(&colour, root)) continue;
    idmap_set(&colour, root, 1);
    stack.n = 0;
    idvec_push(&stack, root);
    if (cap_next < stack.cap) {
      cap_next = stack.cap;
      next_in = ox_xrealloc(next_in, cap_next * sizeof *next_in);
    }
    next_in[0] = 0;
    while (stack.n && !found) {
      OxNodeId x = stack.ids[stack.n - 1];
      uint32_t k = ox_graph_inputs(g, x, NULL, 0);
      if (k > ins_cap) {
        ins_cap = k * 2;
        ins = ox_xrealloc(ins, ins_cap * sizeof *ins);
      }
      ox_graph_inputs(g, x, ins, k);
      OxNodeId y = 0;
      while (next_in[stack.n - 1] < k) {
        OxNodeId c = ins[next_in[stack.n - 1]++];
        const OxNode *cn = ox_graph_node(g, c);
        if (cn && !cn->erased && lab[c] >= lo && lab[c] <= hi) {
          y = c;
          break;
        }
      }
      if (!y) {
        idmap_set(&colour, x, 2);
        stack.n--;
        continue;
      }
      uint8_t cy = idmap_get(&colour, y);
      if (cy == 1) {
        found = y;
        break;
      }
      if (cy == 2) continue;
      idmap_set(&colour, y, 1);
      idvec_push(&stack, y);
      if (cap_next < stack.cap) {
        cap_next = stack.cap;
        next_in = ox_xrealloc(next_in, cap_next * sizeof *next_in);
      }
      next_in[stack.n - 1] = 0;
    }
  }
  *visited = colour.count;
  idmap_free(&colour);
  free(stack.ids);
  free(next_in);
  free(ins);
  return found;
}

/* Case 2 of the header. Returns 1 when it decided (cycle node in *cyc, 0 if acyclic; *how
 * says which way), 0 when the premise does not hold and case 3 must run. */
static int incremental_cycle(OxGraph *g, OxNodeId *cyc, char *how, size_t howcap) {
  uint32_t n;
  const OxEdit *e = ox_graph_txn_edits(g, &n);
  uint32_t from = 0;
  bool premise = ox_graph_txn_began_topological(g);
  for (uint32_t i = n; i-- > 0;)
    if (e[i].kind == OX_EDIT_ORDER) {
      /* a successful toposort inside the step: the order was topological right after it */
      from = i + 1;
      premise = true;
      break;
    }
  if (!premise) return 0;
  const uint64_t *lab = ox_graph_order_labels(g);
  IdVec back = {0};
  IdMap seen = {0}; /* 1: in-edges examined, 2: also out-edges */
  BackCtx b = {g, lab, 0, &back, UINT64_MAX, 0};
  uint32_t examined = 0;
  for (uint32_t i = from; i < n; i++) {
    uint8_t kind = e[i].kind;
    if (kind != OX_EDIT_ADD && kind != OX_EDIT_ARGS && kind != OX_EDIT_REPLACE && kind != OX_EDIT_MOVE) continue;
    OxNodeId x = e[i].node;
    const OxNode *xn = ox_graph_node(g, x);
    if (!xn || xn->erased) continue;
    uint8_t want = kind == OX_EDIT_MOVE ? 2 : 1, have = idmap_get(&seen, x);
    if (have >= want) continue;
    if (!have) {
      b.consumer = x;
      ox_value_foreach_node(&xn->args, back_in_cb, &b);
      ox_value_foreach_node(&xn->kwargs, back_in_cb, &b);
      examined++;
    }
    if (want == 2)
      for (uint32_t k = 0; k < xn->n_users; k++) {
        const OxNode *u = ox_graph_node(g, xn->users[k]);
        if (u && !u->erased) back_edge(&b, x, xn->users[k]);
      }
    idmap_set(&seen, x, want);
  }
  idmap_free(&seen);
  if (!back.n) {
    ox_graph_mark_order_topological(g);
    *cyc = 0;
    snprintf(how, howcap, "order topological (%u touched nodes' edges compared)", examined);
    free(back.ids);
    return 1;
  }
  uint32_t visited = 0;
  *cyc = window_cycle(g, lab, &back, b.lo, b.hi, &visited);
  snprintf(how, howcap, "%u backward edges, %u nodes searched between them", back.n, visited);
  free(back.ids);
  return 1;
}

static void check_structure(OxPassCtx *c, OxCheckResult *r) {
  OxGraph *g = c->g;
  char err[512];
  const OxNodeId *lists[2] = {c->step_added, c->step_rewired};
  uint32_t counts[2] = {c->n_step_added, c->n_step_rewired};
  for (int l = 0; l < 2; l++)
    for (uint32_t i = 0; i < counts[l]; i++)
      if (!check_node_local(g, lists[l][i], err, sizeof err)) {
        r->status = OX_CHECK_FAILED;
        r->detail = intern(c, err);
        return;
      }
  /* users of removed nodes must be gone */
  for (uint32_t i = 0; i < c->n_step_removed; i++) {
    const OxNode *n = &g->nodes[c->step_removed[i]];
    if (n->n_users) {
      snprintf(err, sizeof err, "removed node %s still has users", n->name);
      r->status = OX_CHECK_FAILED;
      r->detail = intern(c, err);
      return;
    }
  }
  /* acyclicity (header: cases 1-3) */
  char how[160];
  OxNodeId cyc = 0;
  if (ox_graph_order_known_topological(g)) {
    snprintf(how, sizeof how, "order topological");
  } else if (!incremental_cycle(g, &cyc, how, sizeof how)) {
    /* a new cycle passes through an added or rewired node */
    cyc = find_cycle(g, lists, counts, 2);
    snprintf(how, sizeof how, "upstream closure searched");
  }
  if (cyc) {
    snprintf(err, sizeof err, "the step created a cycle through %s", g->nodes[cyc].name);
    r->status = OX_CHECK_FAILED;
    r->detail = intern(c, err);
    return;
  }
  snprintf(err, sizeof err, "%u added, %u rewired, %u removed nodes consistent and acyclic (%s)", c->n_step_added,
           c->n_step_rewired, c->n_step_removed, how);
  r->status = OX_CHECK_PASSED;
  r->detail = intern(c, err);
}

static void check_shape(OxPassCtx *c, OxCheckResult *r) {
  OxGraph *g = c->g;
  char err[512], a[160], b[160];
  uint32_t compared = 0;
  /* added nodes: the meta they carry must be what their inputs imply */
  for (uint32_t i = 0; i < c->n_step_added; i++) {
    OxNodeId id = c->step_added[i];
    const OxNode *n = &g->nodes[id];
    OxMeta m;
    int rc = ox_shape_infer_node(g, id, &m, err, sizeof err);
    if (rc < 0) {
      char msg[700];
      snprintf(msg, sizeof msg, "%s: %s", n->name, err);
      r->status = OX_CHECK_FAILED;
      r->detail = intern(c, msg);
      return;
    }
    if (rc > 0) {
      char msg[700];
      snprintf(msg, sizeof msg, "cannot infer %s: %s", n->name, err);
      r->status = OX_CHECK_SKIPPED;
      r->detail = intern(c, msg);
      return;
    }
    if (n->meta.kind != OX_META_NONE && !ox_shape_meta_equal(&n->meta, &m)) {
      ox_meta_format(&n->meta, a, sizeof a);
      ox_meta_format(&m, b, sizeof b);
      char msg[700];
      snprintf(msg, sizeof msg, "%s carries %s but its inputs give %s", n->name, a, b);
      r->status = OX_CHECK_FAILED;
      r->detail = intern(c, msg);
      return;
    }
    compared++;
  }
  /* replaced values: each removed node and the node that took over its users agree */
  for (uint32_t i = 0; i < c->n_step_replaced; i++) {
    const OxNode *o = &g->nodes[c->step_prov_old[i]];
    const OxNode *n = &g->nodes[c->step_prov_new[i]];
    if (o->meta.kind == OX_META_NONE || n->meta.kind == OX_META_NONE) {
      char msg[700];
      snprintf(msg, sizeof msg, "meta missing on %s", o->meta.kind == OX_META_NONE ? o->name : n->name);
      r->status = OX_CHECK_SKIPPED;
      r->detail = intern(c, msg);
      return;
    }
    if (!ox_shape_meta_equal(&o->meta, &n->meta)) {
      ox_meta_format(&o->meta, a, sizeof a);
      ox_meta_format(&n->meta, b, sizeof b);
      char msg[700];
      snprintf(msg, sizeof msg, "%s (%s) was replaced by %s (%s)", o->name, a, n->name, b);
      r->status = OX_CHECK_FAILED;
      r->detail = intern(c, msg);
      return;
    }
    compared++;
  }
  snprintf(err, sizeof err, "%u values agree (added nodes with their inputs, replacements with what they replace)", compared);
  r->status = OX_CHECK_PASSED;
  r->detail = intern(c, err);
}

bool ox_checks_run(OxPassCtx *c, OxStep *step) {
  const OxCheckConfig *cfg = c->checks;
  bool ok = true;
  if (cfg->structure) {
    double t = now_s();
    check_structure(c, &step->checks[OX_CHECK_STRUCTURE]);
    step->checks[OX_CHECK_STRUCTURE].seconds = now_s() - t;
    ok &= step->checks[OX_CHECK_STRUCTURE].status != OX_CHECK_FAILED;
  }
  if (cfg->shape && ok) {
    double t = now_s();
    check_shape(c, &step->checks[OX_CHECK_SHAPE]);
    step->checks[OX_CHECK_SHAPE].seconds = now_s() - t;
    ok &= step->checks[OX_CHECK_SHAPE].status != OX_CHECK_FAILED;
  }
  if (cfg->numeric && ok) {
    double t = now_s();
    ox_check_numeric(c, &step->checks[OX_CHECK_NUMERIC]);
    step->checks[OX_CHECK_NUMERIC].seconds = now_s() - t;
    ok &= step->checks[OX_CHECK_NUMERIC].status != OX_CHECK_FAILED;
  }
  return ok;
}
