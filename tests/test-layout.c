/* Tests for layouts of any shape (engine/layout/ox_layout.h, ox_layered.c, ox_layout.c): the layered
 * layout's invariants (every node, no two boxes overlapping, edges leaving their producer and
 * arriving at their consumer, hubs as stubs, cycles survived, the window's aspect reached by
 * strips and columns, deterministic), the helper process (a layout through it equals the
 * in-process one; a helper that hangs is killed at the budget, one that crashes is reported,
 * garbage answers are refused), ox_layout_auto's fallback, the protocol's parser, folded
 * parameters, and the structural hierarchy on graphs nobody here wrote (the corpus) and on flat
 * names: no cluster ever shows more than OX_VIEW_FAN items. Not timed. */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gen-graphs.h"
#include "layout/ox_layout.h"
#include "layout/ox_view.h"
#include "test-common.h"

static OxValue tup(OxGraph *g, const OxNodeId *ids, uint32_t n) {
  OxValue v[300];
  for (uint32_t i = 0; i < n; i++) v[i] = ox_value_node(ids[i]);
  return ox_graph_value_seq(g, OX_V_TUPLE, v, n);
}

static OxNodeId ph(OxGraph *g, const char *name) {
  return ox_graph_add_node(g, OX_OP_PLACEHOLDER, name, name, ox_value_none(), ox_value_none());
}

static OxNodeId call(OxGraph *g, const char *target, const OxNodeId *ins, uint32_t n) {
  return ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, target, tup(g, ins, n), ox_value_none());
}

/* x -> split -> T towers of depth D (relu chains, every tower's first op also reads its weight
 * w_i) -> cat: flat names, a T-way fan-out and fan-in. */
static OxGraph *towers(uint32_t T, uint32_t D) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxNodeId split = call(g, "torch.split", &x, 1);
  OxNodeId outs[300];
  for (uint32_t t = 0; t < T; t++) {
    char wn[32];
    g_snprintf(wn, sizeof wn, "w_%u", t);
    OxNodeId w = ox_graph_add_node(g, OX_OP_GET_ATTR, wn, wn, ox_value_none(), ox_value_none());
    OxNodeId in[2] = {split, w};
    OxNodeId h = call(g, "torch.mul", in, 2);
    for (uint32_t d = 1; d < D; d++) h = call(g, "torch.relu", &h, 1);
    outs[t] = h;
  }
  OxNodeId cat = call(g, "torch.cat", outs, T);
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, &cat, 1), ox_value_none());
  return g;
}

/* A chain of n relus. */
static OxGraph *chain(uint32_t n) {
  OxGraph *g = ox_graph_new();
  OxNodeId h = ph(g, "x");
  for (uint32_t i = 0; i < n; i++) h = call(g, "torch.relu", &h, 1);
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, &h, 1), ox_value_none());
  return g;
}

static const OxLayoutEdge *find_edge(const OxLayout *l, OxNodeId from, OxNodeId to) {
  for (uint32_t i = 0; i < l->n_edges; i++)
    if (l->edges[i].from == from && l->edges[i].to == to) return &l->edges[i];
  return NULL;
}

/* The invariants every layout keeps, whatever the engine. */
static void check_layout(const OxGraph *g, const OxLayout *l, bool want_all_nodes) {
  uint32_t live = 0;
  OX_GRAPH_FOREACH(g, id) live++;
  if (want_all_nodes) g_assert_cmpuint(l->n_nodes, ==, live);
  for (uint32_t i = 0; i < l->n_nodes; i++) {
    const OxLayoutNode *a = &l->nodes[i];
    if (i) g_assert_cmpuint(l->nodes[i - 1].id, <, a->id); /* sorted for ox_layout_find */
    g_assert_true(isfinite(a->x) && isfinite(a->y));
    g_assert_cmpfloat(a->w, >, 0);
    g_assert_cmpfloat(a->h, >, 0);
    /* inside the bounding box */
    g_assert_cmpfloat(a->x - a->w / 2, >=, -0.5);
    g_assert_cmpfloat(a->y - a->h / 2, >=, -0.5);
    g_assert_cmpfloat(a->x + a->w / 2, <=, l->width + 0.5);
    g_assert_cmpfloat(a->y + a->h / 2, <=, l->height + 0.5);
    /* no two boxes overlap */
    for (uint32_t j = 0; j < i; j++) {
      const OxLayoutNode *b = &l->nodes[j];
      bool apart = fabs(a->x - b->x) >= (a->w + b->w) / 2 - 0.01 || fabs(a->y - b->y) >= (a->h + b->h) / 2 - 0.01;
      if (!apart) g_test_message("boxes of %u and %u overlap", a->id, b->id);
      g_assert_true(apart);
    }
  }
  /* every edge between laid-out nodes is there once, with a spline or a stub */
  OxNodeId ins[256];
  uint32_t n_edges = 0;
  for (uint32_t i = 0; i < l->n_nodes; i++) {
    OxNodeId v = l->nodes[i].id;
    uint32_t k = ox_graph_inputs_r(g, v, ins, 256);
    for (uint32_t j = 0; j < k; j++) {
      if (ox_layout_find(l, ins[j]) < 0 || ins[j] == v) continue;
      n_edges++;
      const OxLayoutEdge *e = find_edge(l, ins[j], v);
      g_assert_nonnull(e);
      g_assert_cmpuint(e->n_pts, >=, 4);
      g_assert_cmpuint((e->n_pts - 1) % 3, ==, 0);
      for (uint32_t p = 0; p < 2 * e->n_pts; p++) g_assert_true(isfinite(e->pts[p]));
      if (!e->stub && e->has_arrow) {
        /* the arrow tip touches the consumer's box */
        const OxLayoutNode *b = &l->nodes[ox_layout_find(l, v)];
        g_assert_cmpfloat(fabs(e->ax - b->x), <=, b->w / 2 + 1);
        g_assert_cmpfloat(fabs(e->ay - b->y), <=, b->h / 2 + 1);
      }
    }
  }
  g_assert_cmpuint(l->n_edges, ==, n_edges);
}

static OxLayout *layered(const OxGraph *g, double aspect) {
  OxLayoutOptions o = {.max_nodes = UINT32_MAX, .aspect = aspect, .engine = OX_LAYOUT_LAYERED};
  OxLayout *l = NULL;
  char err[256];
  g_assert_cmpint(ox_layout_layered(g, NULL, 0, &o, &l, err, sizeof err), ==, 0);
  g_assert_nonnull(l);
  g_assert_cmpint(l->engine, ==, OX_LAYOUT_LAYERED);
  return l;
}

static void test_layered_invariants(void) {
  OxGraph *gs[] = {towers(8, 4), towers(40, 3), chain(60)};
  for (size_t k = 0; k < G_N_ELEMENTS(gs); k++) {
    for (int a = 0; a < 3; a++) {
      OxLayout *l = layered(gs[k], a == 0 ? 0 : a == 1 ? 1.6 : 0.5);
      check_layout(gs[k], l, true);
      ox_layout_free(l);
    }
    ox_graph_free(gs[k]);
  }
  /* random graphs of the supported ops, as the property tests make them */
  for (uint64_t seed = 1; seed <= 25; seed++) {
    bool post = false;
    OxGraph *g = gen_graph(seed, &post);
    g_assert_nonnull(g);
    OxLayout *l = layered(g, seed % 2 ? 1.6 : 0);
    check_layout(g, l, true);
    ox_layout_free(l);
    ox_graph_free(g);
  }
}

static void test_layered_ranks(void) {
  /* without wrapping, producers sit above their consumers, and the chain is one column */
  OxGraph *g = chain(10);
  OxLayout *l = layered(g, 0);
  OX_GRAPH_FOREACH(g, id) {
    OxNodeId ins[4];
    uint32_t k = ox_graph_inputs_r(g, id, ins, 4);
    for (uint32_t j = 0; j < k; j++)
      g_assert_cmpfloat(l->nodes[ox_layout_find(l, ins[j])].y, <, l->nodes[ox_layout_find(l, id)].y);
  }
  g_assert_cmpfloat(l->width, <, 200);
  ox_layout_free(l);
  /* weights sit just above their consumer, not in a top row with the input */
  OxGraph *t = towers(4, 6);
  l = layered(t, 0);
  OxNodeId w = ox_graph_find(t, "w_2"), x = ox_graph_find(t, "x");
  OxNodeId mul = t->nodes[w].users[0];
  const OxLayoutNode *bw = &l->nodes[ox_layout_find(l, w)], *bm = &l->nodes[ox_layout_find(l, mul)],
                     *bx = &l->nodes[ox_layout_find(l, x)];
  g_assert_cmpfloat(bw->y, >, bx->y);
  g_assert_cmpfloat(bm->y - bw->y, <, 100);
  ox_layout_free(l);
  ox_graph_free(t);
  ox_graph_free(g);
}

static void test_layered_aspect(void) {
  /* a 128-way fan-out: without a target it is a hairline, with one it is cut into strips */
  OxGraph *g = towers(128, 3);
  OxLayout *wide = layered(g, 0), *fit = layered(g, 1.6);
  g_assert_cmpfloat(wide->width / wide->height, >, 8);
  double r = fit->width / fit->height;
  g_test_message("128 towers: %.0f x %.0f unfolded, %.0f x %.0f at aspect 1.6", wide->width, wide->height, fit->width,
                 fit->height);
  g_assert_cmpfloat(r, >, 1.6 / 2.5);
  g_assert_cmpfloat(r, <, 1.6 * 2.5);
  /* the edges strips cut are stubs: into the cat, from the split */
  g_assert_cmpuint(fit->n_stubs, >, 0);
  ox_layout_free(wide);
  ox_layout_free(fit);
  ox_graph_free(g);
  /* a deep chain is folded into columns */
  g = chain(400);
  OxLayout *deep = layered(g, 0), *cols = layered(g, 1.6);
  g_assert_cmpfloat(deep->height / deep->width, >, 50);
  r = cols->width / cols->height;
  g_test_message("chain of 400: %.0f x %.0f unfolded, %.0f x %.0f at aspect 1.6", deep->width, deep->height,
                 cols->width, cols->height);
  g_assert_cmpfloat(r, >, 1.6 / 3);
  g_assert_cmpfloat(r, <, 1.6 * 3);
  check_layout(g, cols, true);
  ox_layout_free(deep);
  ox_layout_free(cols);
  ox_graph_free(g);
}

/* Loose nodes (no edge: unused parameters, as executorch's outer graphs have dozens) fill rows
 * under the graph instead of one top rank as wide as all of them. */
static void test_layered_loose(void) {
  OxGraph *g = chain(6);
  for (int i = 0; i < 53; i++) {
    char name[32];
    g_snprintf(name, sizeof name, "b_features_%d_num_batches_tracked", i);
    ph(g, name);
  }
  OxLayout *l = layered(g, 1.6);
  check_layout(g, l, true);
  double r = l->width / l->height;
  g_test_message("6-chain + 53 loose: %.0f x %.0f", l->width, l->height);
  g_assert_cmpfloat(r, >, 1.6 / 3);
  g_assert_cmpfloat(r, <, 1.6 * 3);
  /* the chain on top, the loose ones under it */
  double chain_bottom = 0, loose_top = INFINITY;
  OX_GRAPH_FOREACH(g, id) {
    const OxLayoutNode *b = &l->nodes[ox_layout_find(l, id)];
    gboolean loose = g->nodes[id].n_users == 0 && g->nodes[id].op == OX_OP_PLACEHOLDER;
    if (loose) loose_top = fmin(loose_top, b->y - b->h / 2);
    else chain_bottom = fmax(chain_bottom, b->y + b->h / 2);
  }
  g_assert_cmpfloat(loose_top, >, chain_bottom);
  ox_layout_free(l);
  ox_graph_free(g);
}

static void test_layered_hubs(void) {
  /* a size used by 40 nodes spread down a chain: drawn as 40 stubs, not 40 long edges */
  OxGraph *g = ox_graph_new();
  OxNodeId s = ph(g, "s77"), h = ph(g, "x");
  for (uint32_t i = 0; i < 40; i++) {
    OxNodeId in[2] = {h, s};
    h = call(g, "torch.mul", in, 2);
    h = call(g, "torch.relu", &h, 1);
  }
  OxLayout *l = layered(g, 0);
  check_layout(g, l, true);
  uint32_t stubs = 0;
  for (uint32_t i = 0; i < l->n_edges; i++)
    if (l->edges[i].from == s) {
      const OxLayoutNode *b = &l->nodes[ox_layout_find(l, l->edges[i].to)];
      if (!l->edges[i].stub) {
        /* only the uses right under it keep a real edge */
        g_assert_cmpfloat(fabs(b->y - l->nodes[ox_layout_find(l, s)].y), <, 250);
        continue;
      }
      g_assert_cmpuint(l->edges[i].stub, ==, OX_STUB_AT_TO);
      stubs++;
      /* short: above its consumer */
      g_assert_cmpfloat(fabs(l->edges[i].pts[1] - b->y), <, 60);
    }
  g_assert_cmpuint(stubs, >=, 36);
  g_assert_cmpuint(l->n_stubs, ==, stubs);
  ox_layout_free(l);
  /* hub_users = never: edges are routed, but for the longest, past the bound of ~3 virtual
   * nodes per node */
  OxLayoutOptions o = {.max_nodes = UINT32_MAX, .hub_users = UINT32_MAX};
  char err[128];
  g_assert_cmpint(ox_layout_layered(g, NULL, 0, &o, &l, err, sizeof err), ==, 0);
  g_assert_cmpuint(l->n_stubs, <, stubs / 4);
  check_layout(g, l, true);
  ox_layout_free(l);
  ox_graph_free(g);
}

static void test_layered_cycles_and_subsets(void) {
  /* the union of a run's edges need not be acyclic: a -> b -> c -> a */
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxNodeId a = call(g, "torch.relu", &x, 1), b = call(g, "torch.relu", &a, 1), c = call(g, "torch.relu", &b, 1);
  OxNodeId in[2] = {x, c};
  ox_graph_set_args(g, a, tup(g, in, 2));
  OxLayout *l = layered(g, 1.6);
  check_layout(g, l, true);
  ox_layout_free(l);
  /* a subset: only its nodes and the edges among them; the budget refuses more */
  OxNodeId sub[2] = {a, b};
  OxLayoutOptions o = {.max_nodes = 2};
  char err[128];
  g_assert_cmpint(ox_layout_layered(g, sub, 2, &o, &l, err, sizeof err), ==, 0);
  g_assert_cmpuint(l->n_nodes, ==, 2);
  g_assert_cmpuint(l->n_edges, ==, 1);
  ox_layout_free(l);
  g_assert_cmpint(ox_layout_layered(g, NULL, 0, &o, &l, err, sizeof err), ==, -1);
  g_assert_nonnull(strstr(err, "over the node budget"));
  /* cancelled before it starts */
  atomic_bool cancel = true;
  o = (OxLayoutOptions){.cancel = &cancel};
  g_assert_cmpint(ox_layout_layered(g, NULL, 0, &o, &l, err, sizeof err), ==, -1);
  g_assert_cmpstr(err, ==, "cancelled");
  /* deterministic */
  OxGraph *t = towers(30, 4);
  OxLayout *l1 = layered(t, 1.6), *l2 = layered(t, 1.6);
  l1->seconds = l2->seconds = 0; /* the one thing that may differ */
  OxBuf b1, b2;
  ox_buf_init(&b1);
  ox_buf_init(&b2);
  ox_layout_serialize(l1, &b1);
  ox_layout_serialize(l2, &b2);
  g_assert_cmpuint(b1.len, ==, b2.len);
  g_assert_true(memcmp(b1.data, b2.data, b1.len) == 0);
  ox_buf_free(&b1);
  ox_buf_free(&b2);
  ox_layout_free(l1);
  ox_layout_free(l2);
  ox_graph_free(t);
  ox_graph_free(g);
}

/* ------------------------------------------------------------------ the helper process */

static char *tmp_dir;

static char *script(const char *name, const char *body) {
  char *p = g_build_filename(tmp_dir, name, NULL);
  char *text = g_strdup_printf("#!/bin/sh\n%s\n", body);
  g_assert_true(g_file_set_contents(p, text, -1, NULL));
  g_chmod(p, 0755);
  g_free(text);
  return p;
}

static const char *real_helper(void) {
  static char buf[4096];
  const char *h = ox_layout_helper_path(buf, sizeof buf);
  if (!h) g_test_skip("the optimus-layout helper is not built (OX_LAYOUT_HELPER unset)");
  return h;
}

static void test_helper_roundtrip(void) {
  const char *helper = real_helper();
  if (!helper) return;
  OxGraph *g = towers(6, 3);
  OxLayoutOptions o = {.helper = helper, .time_budget = 20};
  OxLayout *child = NULL, *inproc = NULL;
  char err[512];
  g_assert_cmpint(ox_layout_dot(g, NULL, 0, &o, &child, err, sizeof err), ==, 0);
  g_assert_cmpint(child->engine, ==, OX_LAYOUT_DOT);
  check_layout(g, child, true);
  /* the same dot run in this process gives the same positions */
  g_assert_cmpint(ox_layout_compute(g, NULL, 0, &o, &inproc, err, sizeof err), ==, 0);
  g_assert_cmpuint(child->n_nodes, ==, inproc->n_nodes);
  for (uint32_t i = 0; i < child->n_nodes; i++) {
    g_assert_cmpuint(child->nodes[i].id, ==, inproc->nodes[i].id);
    g_assert_cmpfloat(fabs(child->nodes[i].x - inproc->nodes[i].x), <, 0.01);
    g_assert_cmpfloat(fabs(child->nodes[i].y - inproc->nodes[i].y), <, 0.01);
  }
  ox_layout_free(child);
  ox_layout_free(inproc);
  /* ox_layout_auto takes dot's answer for a small graph when no aspect asks otherwise */
  OxLayout *l = NULL;
  g_assert_cmpint(ox_layout_auto(g, NULL, 0, &o, &l, err, sizeof err), ==, 0);
  g_assert_cmpint(l->engine, ==, OX_LAYOUT_DOT);
  g_assert_cmpstr(l->note, ==, "");
  ox_layout_free(l);
  ox_graph_free(g);
}

static void test_helper_failures(void) {
  OxBuf out;
  ox_buf_init(&out);
  char err[512];
  bool timed_out = false;
  /* hangs: killed at the budget */
  char *hang = script("hang.sh", "exec sleep 60");
  gint64 t0 = g_get_monotonic_time();
  g_assert_cmpint(ox_layout_run_helper(hang, "layout TB\n", 10, 0.4, NULL, &out, &timed_out, err, sizeof err), ==, -1);
  double took = (g_get_monotonic_time() - t0) / 1e6;
  g_assert_true(timed_out);
  g_assert_nonnull(strstr(err, "did not finish within 0.4 s"));
  g_assert_cmpfloat(took, <, 3.0);
  /* cancelled from another thread's flag */
  atomic_bool cancel = true;
  g_assert_cmpint(ox_layout_run_helper(hang, "x\n", 2, 30, &cancel, &out, &timed_out, err, sizeof err), ==, -1);
  g_assert_false(timed_out);
  g_assert_cmpstr(err, ==, "cancelled");
  /* crashes: reported, never taken for an answer */
  char *crash = script("crash.sh", "cat >/dev/null; kill -SEGV $$");
  g_assert_cmpint(ox_layout_run_helper(crash, "layout TB\n", 10, 10, NULL, &out, NULL, err, sizeof err), ==, -1);
  g_assert_nonnull(strstr(err, "crashed (signal 11)"));
  /* fails: its message */
  char *fail = script("fail.sh", "cat >/dev/null; echo 'optimus-layout: graphviz could not parse' >&2; exit 1");
  g_assert_cmpint(ox_layout_run_helper(fail, "layout TB\n", 10, 10, NULL, &out, NULL, err, sizeof err), ==, -1);
  g_assert_cmpstr(err, ==, "optimus-layout: graphviz could not parse");
  /* stops reading its input early: no SIGPIPE for us, a clean error */
  char *deaf = script("deaf.sh", "exit 3");
  GString *big = g_string_new("layout TB\n");
  for (int i = 0; i < 200000; i++) g_string_append(big, "n1 -> n2;\n");
  g_assert_cmpint(ox_layout_run_helper(deaf, big->str, big->len, 10, NULL, &out, NULL, err, sizeof err), ==, -1);
  g_string_free(big, TRUE);
  /* missing */
  g_assert_cmpint(ox_layout_run_helper(NULL, "x", 1, 1, NULL, &out, NULL, err, sizeof err), ==, -1);
  g_assert_nonnull(strstr(err, "not found"));
  /* ox_layout_auto falls back to the layered layout and says why */
  OxGraph *g = towers(5, 3);
  OxLayoutOptions o = {.helper = hang, .time_budget = 0.3};
  OxLayout *l = NULL;
  g_assert_cmpint(ox_layout_auto(g, NULL, 0, &o, &l, err, sizeof err), ==, 0);
  g_assert_cmpint(l->engine, ==, OX_LAYOUT_LAYERED);
  g_assert_true(l->dot_timed_out);
  g_assert_nonnull(strstr(l->note, "dot did not finish within 0.3 s; drawn with the built-in layered layout"));
  check_layout(g, l, true);
  ox_layout_free(l);
  o.helper = crash;
  g_assert_cmpint(ox_layout_auto(g, NULL, 0, &o, &l, err, sizeof err), ==, 0);
  g_assert_cmpint(l->engine, ==, OX_LAYOUT_LAYERED);
  g_assert_false(l->dot_timed_out);
  g_assert_nonnull(strstr(l->note, "crashed"));
  ox_layout_free(l);
  /* ... but DOT alone does not fall back */
  o.engine = OX_LAYOUT_DOT;
  g_assert_cmpint(ox_layout_auto(g, NULL, 0, &o, &l, err, sizeof err), ==, -1);
  g_assert_null(l);
  /* an answer for other nodes is refused */
  char *liar = script("liar.sh", "cat >/dev/null; printf 'oxlayout 1\\nsize 10 10 1 0\\nn 999 1 1 1 1\\nend\\n'");
  o = (OxLayoutOptions){.helper = liar, .time_budget = 5, .engine = OX_LAYOUT_DOT};
  g_assert_cmpint(ox_layout_auto(g, NULL, 0, &o, &l, err, sizeof err), ==, -1);
  g_assert_nonnull(strstr(err, "other nodes"));
  ox_graph_free(g);
  ox_buf_free(&out);
  g_free(hang);
  g_free(crash);
  g_free(fail);
  g_free(deaf);
  g_free(liar);
}

static void test_protocol(void) {
  OxGraph *g = towers(4, 2);
  OxLayout *l = layered(g, 0);
  OxBuf b;
  ox_buf_init(&b);
  ox_layout_serialize(l, &b);
  char err[256];
  OxLayout *p = ox_layout_parse(b.data, b.len, err, sizeof err);
  g_assert_nonnull(p);
  g_assert_cmpuint(p->n_nodes, ==, l->n_nodes);
  g_assert_cmpuint(p->n_edges, ==, l->n_edges);
  for (uint32_t i = 0; i < l->n_nodes; i++) g_assert_cmpfloat(fabs(p->nodes[i].x - l->nodes[i].x), <, 0.001);
  for (uint32_t i = 0; i < l->n_edges; i++) g_assert_cmpuint(p->edges[i].n_pts, ==, l->edges[i].n_pts);
  ox_layout_free(p);
  /* every prefix of a valid answer is refused, never read past */
  for (size_t cut = 0; cut + 4 < b.len; cut += 7) {
    char *copy = g_memdup2(b.data, cut + 1);
    p = ox_layout_parse(copy, cut, err, sizeof err);
    g_assert_null(p);
    g_assert_nonnull(strstr(err, "malformed"));
    g_free(copy);
  }
  const char *bad[] = {"oxlayout 2\nsize 1 1 0 0\nend\n", "oxlayout 1\nsize 1 nan 0 0\nend\n",
                       "oxlayout 1\nsize 1 1 99999999 0\nend\n", "oxlayout 1\nsize 1 1 2 0\nn 5 1 1 1 1\nn 3 1 1 1 1\nend\n",
                       "oxlayout 1\nsize 1 1 0 1\ne 1 2 1 0 0 4000000000\nend\n"};
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) g_assert_null(ox_layout_parse(bad[i], strlen(bad[i]), err, sizeof err));
  ox_buf_free(&b);
  ox_layout_free(l);
  ox_graph_free(g);
}

/* ------------------------------------------------------------------ folded parameters */

static void test_fold_params(void) {
  OxGraph *g = towers(3, 2);
  uint32_t *fold = g_new0(uint32_t, g->n_nodes + 1);
  uint16_t *np = g_new0(uint16_t, g->n_nodes + 1);
  g_assert_cmpuint(ox_view_fold_params(g, fold, np), ==, 3);
  OxNodeId w = ox_graph_find(g, "w_1"), x = ox_graph_find(g, "x");
  g_assert_cmpuint(fold[w], ==, g->nodes[w].users[0]); /* into its mul */
  g_assert_cmpuint(np[g->nodes[w].users[0]], ==, 1);
  g_assert_cmpuint(fold[x], ==, 0); /* the model's input stays */
  /* a weight used by its linear and by a stack of weights (a batch fusion in a union graph):
   * folded into both, the stack counting every weight it stacks */
  OxNodeId ws[3] = {ox_graph_find(g, "w_0"), ox_graph_find(g, "w_1"), ox_graph_find(g, "w_2")};
  OxNodeId stack = call(g, "torch.stack", ws, 3);
  OxNodeId act = g->nodes[g->nodes[ws[0]].users[0]].users[0]; /* a tower's relu: computed data */
  OxNodeId in[2] = {act, stack};
  OxNodeId bmm = call(g, "torch.bmm", in, 2);
  g_free(fold);
  g_free(np);
  fold = g_new0(uint32_t, g->n_nodes + 1);
  np = g_new0(uint16_t, g->n_nodes + 1);
  ox_view_fold_params(g, fold, np);
  g_assert_cmpuint(fold[stack], ==, bmm);
  g_assert_cmpuint(fold[ws[0]], !=, 0);
  g_assert_cmpuint(np[bmm], ==, 3);
  /* a matmul of parameters only computes: it is no parameter */
  OxNodeId mm = call(g, "torch.mm", ws, 2);
  OxNodeId r = call(g, "torch.relu", &mm, 1);
  (void)r;
  g_free(fold);
  g_free(np);
  fold = g_new0(uint32_t, g->n_nodes + 1);
  ox_view_fold_params(g, fold, NULL);
  g_assert_cmpuint(fold[mm], ==, 0);
  /* a mask computed from the model's input (ids == 0 into an encoder) is drawn, with its edges:
   * the input stays, so its mask is no parameter */
  OxNodeId ids = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "ids", "ids", ox_value_none(), ox_value_none());
  OxNodeId eq = call(g, "torch.eq", &ids, 1);
  OxNodeId emb_in[2] = {ids, ws[2]};
  OxNodeId emb = call(g, "torch.nn.functional.embedding", emb_in, 2);
  OxNodeId enc_in[2] = {emb, eq};
  OxNodeId enc = call(g, "torch.bmm", enc_in, 2);
  (void)enc;
  g_free(fold);
  fold = g_new0(uint32_t, g->n_nodes + 1);
  ox_view_fold_params(g, fold, NULL);
  g_assert_cmpuint(fold[ids], ==, 0);
  g_assert_cmpuint(fold[eq], ==, 0);
  g_free(fold);
  ox_graph_free(g);
}

/* ------------------------------------------------------------------ hierarchy bounds */

static void check_hierarchy(const OxGraph *g, const OxHierarchy *h, const char *what) {
  uint32_t live = 0;
  OX_GRAPH_FOREACH(g, id) {
    live++;
    g_assert_cmpint(h->node_cluster[id], >=, 0);
    g_assert_cmpint(h->node_cluster[id], <, (int32_t)h->n_clusters);
  }
  g_assert_cmpuint(h->clusters[0].n_total, ==, live);
  for (uint32_t c = 0; c < h->n_clusters; c++) {
    const OxCluster *cl = &h->clusters[c];
    uint32_t items = cl->n_direct + cl->n_children;
    if (items > OX_VIEW_FAN) g_test_message("%s: cluster %u '%s' shows %u items", what, c, cl->label, items);
    g_assert_cmpuint(items, <=, OX_VIEW_FAN);
    g_assert_true(cl->label && cl->label[0]);
    if (c) g_assert_cmpuint(cl->depth, ==, h->clusters[cl->parent].depth + 1);
    /* a child's total is part of its parent's */
    uint32_t sum = cl->n_direct;
    for (uint32_t k = 0; k < cl->n_children; k++) sum += h->clusters[h->child_index[cl->first_child + k]].n_total;
    g_assert_cmpuint(sum, ==, cl->n_total);
  }
  /* the automatic overview fits the budget the debugger opens with */
  uint8_t *open = g_new0(uint8_t, h->n_clusters + 1);
  g_assert_cmpuint(ox_view_auto_open(h, 60, open), <=, 60);
  OxGraph *o = ox_view_overview(g, h, open);
  g_assert_cmpuint(o->n_live, <=, 60);
  ox_graph_free(o);
  g_free(open);
}

static void test_hierarchy_flat(void) {
  /* 300 towers of flat names between one split and one cat: groups and parts, never 300 items */
  OxGraph *g = towers(300, 4);
  OxHierarchy *h = ox_view_hierarchy(g);
  check_hierarchy(g, h, "300 towers");
  g_assert_cmpuint(h->n_clusters, >, 10);
  bool group = false;
  for (uint32_t c = 0; c < h->n_clusters; c++) group |= h->clusters[c].kind == OX_CLUSTER_GROUP;
  g_assert_true(group);
  ox_view_hierarchy_free(h);
  ox_graph_free(g);
  /* a chain of 2,000: bands */
  g = chain(2000);
  h = ox_view_hierarchy(g);
  check_hierarchy(g, h, "chain");
  g_assert_cmpint(h->clusters[h->child_index[h->clusters[0].first_child]].kind, ==, OX_CLUSTER_BAND);
  ox_view_hierarchy_free(h);
  ox_graph_free(g);
  /* 500 unconnected placeholders: chunks */
  g = ox_graph_new();
  for (int i = 0; i < 500; i++) {
    char n[16];
    g_snprintf(n, sizeof n, "arg%d", i);
    ph(g, n);
  }
  h = ox_view_hierarchy(g);
  check_hierarchy(g, h, "placeholders");
  ox_view_hierarchy_free(h);
  ox_graph_free(g);
}

static void test_hierarchy_corpus(void) {
  char *dir = test_corpus_dir();
  GDir *d = g_dir_open(dir, 0, NULL);
  if (!d) {
    char *msg = g_strdup_printf("corpus not found at %s (set OPTIMUS_SHARED)", dir);
    g_test_skip(msg);
    g_free(msg);
    g_free(dir);
    return;
  }
  g_dir_close(d);
  g_free(dir);
  for (int nn = 1; nn <= 29; nn++) {
    char *path = NULL;
    OxDoc *doc = test_corpus_load(nn, "hierarchy", &path);
    if (!doc) {
      g_free(path);
      continue;
    }
    for (uint32_t gi = 0; gi < doc->n_graphs; gi++) {
      const OxGraph *g = doc->graphs[gi];
      OxHierarchy *h = ox_view_hierarchy(g);
      check_hierarchy(g, h, path);
      ox_view_hierarchy_free(h);
      /* and its layered layout keeps the invariants, at the window's shape */
      OxLayout *l = layered(g, 1.6);
      check_layout(g, l, true);
      ox_layout_free(l);
    }
    ox_doc_free(doc);
    g_free(path);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmp_dir = g_dir_make_tmp("ox-layout-XXXXXX", NULL);
  g_test_add_func("/engine/layout/layered-invariants", test_layered_invariants);
  g_test_add_func("/engine/layout/layered-ranks", test_layered_ranks);
  g_test_add_func("/engine/layout/layered-aspect", test_layered_aspect);
  g_test_add_func("/engine/layout/layered-hubs", test_layered_hubs);
  g_test_add_func("/engine/layout/layered-loose", test_layered_loose);
  g_test_add_func("/engine/layout/layered-cycles-subsets", test_layered_cycles_and_subsets);
  g_test_add_func("/engine/layout/helper-roundtrip", test_helper_roundtrip);
  g_test_add_func("/engine/layout/helper-failures", test_helper_failures);
  g_test_add_func("/engine/layout/protocol", test_protocol);
  g_test_add_func("/engine/layout/fold-params", test_fold_params);
  g_test_add_func("/engine/layout/hierarchy-flat", test_hierarchy_flat);
  g_test_add_func("/engine/layout/hierarchy-corpus", test_hierarchy_corpus);
  int rc = g_test_run();
  char *cmd[] = {"rm", "-rf", tmp_dir, NULL};
  g_spawn_sync(NULL, cmd, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL, NULL);
  g_free(tmp_dir);
  return rc;
}
