/* test-ui-budget.c - bounded views of large graphs (issue 6), without a display (suite ui-model).
 *
 * Drives OxScene (what the canvas lays out) on a generated 20k-node recommendation graph,
 * optimized in-process so it has a trace, with a node budget of 300: opening, stepping, jumping,
 * expanding and collapsing clusters, focusing on far nodes, changing the radius and asking for
 * the whole graph must never send Graphviz a request above the budget (a hook sees every
 * request). Also: expand/collapse change the overview graph, the focus radius is honoured, the
 * layout cache serves a scene seen before, and the history's inverse scripts take a graph back
 * and forth between any two steps exactly. Not timed.
 */
#include <glib/gstdio.h>
#include <string.h>

#include "ox-scene.h"
#include "write/ox_write.h"

#define BUDGET 300

typedef struct {
  guint max, count;
  GArray *sizes;
} Hook;

static void on_request(guint n, gpointer data) {
  Hook *h = data;
  h->max = MAX(h->max, n);
  h->count++;
  g_array_append_val(h->sizes, n);
}

static gboolean wait_idle(OxScene *s) {
  gint64 end = g_get_monotonic_time() + 120 * G_USEC_PER_SEC;
  while (ox_scene_get_busy(s) || g_main_context_pending(NULL)) {
    if (g_get_monotonic_time() > end) return FALSE;
    g_main_context_iteration(NULL, ox_scene_get_busy(s));
  }
  return TRUE;
}

static char *big_dir, *big_path;

/* Generates the 20k-node graph once (tools/gen-recsys); NULL (and a skip) without the tool. */
static const char *graph_path(void) {
  if (big_path) return big_path;
  const char *gen = g_getenv("OX_GEN_RECSYS");
  if (!gen || !g_file_test(gen, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("OX_GEN_RECSYS (tools/gen-recsys) not available");
    return NULL;
  }
  big_dir = g_dir_make_tmp("ox-budget-XXXXXX", NULL);
  char *path = g_build_filename(big_dir, "recsys.txt", NULL);
  const char *argv[] = {gen, "--nodes", "20000", "--seed", "5", "-o", path, NULL};
  int status = 0;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, NULL, &status,
                             NULL));
  g_assert_true(g_spawn_check_wait_status(status, NULL));
  big_path = path;
  return big_path;
}

/* Loads the graph into d and optimizes it with the default pipeline: a real trace. */
static gboolean load_big(OxDocument *d) {
  const char *path = graph_path();
  if (!path) return FALSE;
  g_assert_true(ox_document_load_file(d, path, NULL, NULL));
  g_assert_true(ox_document_optimize(d, NULL, NULL));
  return TRUE;
}

static OxDocument *shared_doc;

static OxDocument *doc_or_skip(void) {
  if (!shared_doc) {
    OxDocument *d = ox_document_new();
    if (!load_big(d)) {
      g_object_unref(d);
      return NULL;
    }
    shared_doc = d;
  }
  return shared_doc;
}

/* ---- the budget holds for every view and every action */

static void test_budget_everywhere(void) {
  /* a document of its own, watched from before it has a graph: the hook sees every request,
   * the first overview included, and the optimization's history replaces the first one */
  OxDocument *d = ox_document_new();
  Hook hk = {0, 0, g_array_new(FALSE, FALSE, sizeof(guint))};
  OxScene *s = ox_scene_new(d);
  ox_scene_set_request_hook(s, on_request, &hk);
  ox_scene_set_budget(s, BUDGET);
  if (!load_big(d)) {
    g_object_unref(s);
    g_object_unref(d);
    g_array_free(hk.sizes, TRUE);
    return;
  }
  g_assert_true(wait_idle(s));
  g_assert_cmpstr(ox_view_mode_name(ox_scene_get_shown_mode(s)), ==, "overview");
  g_assert_nonnull(ox_scene_get_layout(s));
  g_assert_cmpuint(hk.count, >=, 1);
  /* step: the first 80 steps one by one, then jumps across the trace */
  guint n = ox_document_get_n_steps(d);
  g_assert_cmpuint(n, >, 100);
  for (guint p = 1; p <= 80; p++) {
    ox_document_set_position(d, p);
    g_assert_true(wait_idle(s));
  }
  g_assert_cmpstr(ox_view_mode_name(ox_scene_get_shown_mode(s)), ==, "focus");
  for (guint k = 0; k < 12; k++) {
    ox_document_set_position(d, (k * 7919u) % n + 1);
    g_assert_true(wait_idle(s));
  }
  /* a step laid out while another layout is running: the first is cancelled */
  ox_document_set_position(d, n / 3);
  ox_document_set_position(d, 2 * n / 3);
  g_assert_true(wait_idle(s));
  /* focus on far nodes, every radius */
  OxHistory *h = ox_document_get_history(d);
  for (guint r = 1; r <= 6; r++) {
    ox_scene_set_radius(s, r);
    g_assert_true(wait_idle(s));
    ox_scene_focus_uid(s, h->u->n_nodes - 1 - r * 977);
    g_assert_true(wait_idle(s));
  }
  ox_scene_set_radius(s, 0);
  /* the whole graph is over the budget: shown as a focus view, never requested whole */
  ox_scene_set_mode(s, OX_VIEW_FULL);
  g_assert_true(wait_idle(s));
  /* overview: expand everything that fits, then collapse */
  ox_scene_set_mode(s, OX_VIEW_OVERVIEW);
  g_assert_true(wait_idle(s));
  const OxHierarchy *hier = ox_scene_get_hierarchy(s);
  guint refused = 0, expanded = 0;
  for (guint32 c = 1; c < hier->n_clusters; c++) {
    if (ox_scene_cluster_is_open(s, c)) continue;
    if (ox_scene_expand(s, c))
      expanded++;
    else
      refused++;
    g_assert_true(wait_idle(s));
    g_assert_cmpuint(ox_scene_get_overview_size(s), <=, BUDGET);
  }
  g_test_message("%u expanded, %u refused; %u requests, largest %u nodes", expanded, refused, hk.count, hk.max);
  g_assert_cmpuint(refused, >, 0); /* a 20k graph cannot be opened whole within 300 */
  for (guint32 c = hier->n_clusters; c-- > 1;) ox_scene_collapse(s, c);
  g_assert_true(wait_idle(s));
  /* every request, and the statistics, within the budget */
  for (guint i = 0; i < hk.sizes->len; i++) g_assert_cmpuint(g_array_index(hk.sizes, guint, i), <=, BUDGET);
  g_assert_cmpuint(hk.max, <=, BUDGET);
  g_assert_cmpuint(ox_scene_get_stats(s)->max_request, <=, BUDGET);
  g_assert_cmpuint(hk.count, >, 10);
  g_object_unref(s);
  g_object_unref(d);
  g_array_free(hk.sizes, TRUE);
}

/* ---- expand / collapse change the overview graph; the cache serves what it has seen */

static void test_expand_collapse(void) {
  OxDocument *d = doc_or_skip();
  if (!d) return;
  ox_document_set_position(d, 0);
  OxScene *s = ox_scene_new(d);
  ox_scene_set_budget(s, 2500);
  g_assert_true(wait_idle(s));
  g_assert_true(ox_scene_is_overview(s));
  const OxHierarchy *hier = ox_scene_get_hierarchy(s);
  guint before = ox_scene_get_overview_size(s);
  g_assert_cmpuint(ox_scene_get_layout(s)->n_nodes, ==, before);
  /* a closed cluster shown as one item */
  guint nb;
  const OxLayoutNode *b = ox_scene_get_boxes(s, &nb);
  gint32 c = -1;
  for (guint i = 0; i < nb && c < 0; i++) {
    gint32 x = ox_scene_item_cluster(s, b[i].id);
    if (x >= 0 && hier->clusters[x].n_children + hier->clusters[x].n_direct > 1 &&
        before + hier->clusters[x].n_direct + hier->clusters[x].n_children - 1 <= 2500)
      c = x;
  }
  if (c < 0)
    for (guint i = 0; i < nb; i++) {
      gint32 x = ox_scene_item_cluster(s, b[i].id);
      g_test_message("item %u cluster %d %s", b[i].id, x, x >= 0 ? hier->clusters[x].path : "");
    }
  g_assert_cmpint(c, >=, 0);
  const OxCluster *cl = &hier->clusters[c];
  g_assert_true(ox_scene_expand(s, (guint32)c));
  g_assert_true(wait_idle(s));
  guint after = ox_scene_get_overview_size(s);
  g_assert_cmpuint(after, ==, before + cl->n_direct + cl->n_children - 1);
  g_assert_cmpuint(ox_scene_get_layout(s)->n_nodes, ==, after);
  /* its children are items now, the cluster itself is not */
  b = ox_scene_get_boxes(s, &nb);
  guint children = 0;
  gboolean self_shown = FALSE;
  for (guint i = 0; i < nb; i++) {
    gint32 x = ox_scene_item_cluster(s, b[i].id);
    if (x == c) self_shown = TRUE;
    if (x >= 0 && hier->clusters[x].parent == c) children++;
  }
  g_assert_false(self_shown);
  g_assert_cmpuint(children, ==, cl->n_children);
  /* collapse: back to the first overview, served from the cache */
  guint hits = ox_scene_get_stats(s)->n_cache_hits, req = ox_scene_get_stats(s)->n_requests;
  g_assert_true(ox_scene_collapse(s, (guint32)c));
  g_assert_true(wait_idle(s));
  g_assert_cmpuint(ox_scene_get_overview_size(s), ==, before);
  g_assert_cmpuint(ox_scene_get_stats(s)->n_cache_hits, ==, hits + 1);
  g_assert_cmpuint(ox_scene_get_stats(s)->n_requests, ==, req);
  g_assert_false(ox_scene_collapse(s, (guint32)c)); /* already closed */
  g_object_unref(s);
}

/* ---- focus radius: the scene holds the radius-k neighbourhood of the focus */

static void test_focus_radius(void) {
  OxDocument *d = doc_or_skip();
  if (!d) return;
  ox_document_set_position(d, 0);
  OxScene *s = ox_scene_new(d);
  g_assert_true(wait_idle(s));
  OxHistory *h = ox_document_get_history(d);
  /* folded parameters are drawn in their consumers: they take no room and are no focus */
  guint8 *folded = g_new0(guint8, h->u->n_nodes + 1);
  guint n_folded = 0;
  for (guint32 id = 1; id < h->u->n_nodes; id++) n_folded += folded[id] = ox_scene_drawn_uid(s, id) != id;
  g_assert_cmpuint(n_folded, >, 0);
  guint32 far = ox_scene_drawn_uid(s, h->u->n_nodes / 2);
  /* the neighbourhood is walked in the graph shown (step 0 here): nodes that are not alive there
   * (the union graph holds every step's) are neither counted nor walked through */
  guint8 *skip = g_new0(guint8, h->u->n_nodes + 1);
  guint n_dead = 0;
  for (guint32 id = 1; id < h->u->n_nodes; id++) {
    skip[id] = folded[id] || !ox_history_alive(h, id, 0);
    n_dead += !ox_history_alive(h, id, 0);
  }
  g_assert_cmpuint(n_dead, >, 0);
  skip[far] = 0; /* the focus itself is shown whatever */
  for (guint r = 1; r <= 3; r++) {
    ox_scene_set_radius(s, r);
    ox_scene_focus_uid(s, far);
    g_assert_true(wait_idle(s));
    g_assert_cmpuint(ox_scene_get_shown_mode(s), ==, OX_VIEW_FOCUS);
    g_assert_cmpuint(ox_scene_get_shown_radius(s), ==, r);
    /* the neighbourhood of radius r is in the scene when it fits the budget */
    guint cap = ox_scene_get_budget(s);
    OxNodeId *nb = g_new(OxNodeId, cap + 1);
    guint n = ox_view_neighborhood_skip(h->u, &far, 1, r, cap + 1, skip, nb, cap + 1);
    if (n <= cap)
      for (guint i = 0; i < n; i++) g_assert_cmpuint(ox_scene_uid_item(s, nb[i]), ==, nb[i]);
    /* and nothing dead at the shown step is laid out (holes, scattered live nodes) */
    guint nbox;
    const OxLayoutNode *boxes = ox_scene_get_boxes(s, &nbox);
    for (guint i = 0; i < nbox; i++)
      if (boxes[i].id != far) g_assert_true(ox_history_alive(h, boxes[i].id, 0));
    /* the parameters folded into them are shown by their boxes */
    for (guint i = 0; i < n && n <= cap; i++) {
      OxNodeId ins[64];
      guint k = MIN(ox_graph_inputs(h->u, nb[i], ins, 64), 64);
      for (guint j = 0; j < k; j++)
        if (folded[ins[j]] && ox_scene_drawn_uid(s, ins[j]) == nb[i])
          g_assert_cmpuint(ox_scene_uid_item(s, ins[j]), ==, nb[i]);
    }
    /* and a node just outside it is not, unless the scene had it before */
    g_free(nb);
  }
  /* automatic radius: the largest <= 4 within the focus size */
  ox_scene_set_radius(s, 0);
  ox_scene_set_mode(s, OX_VIEW_OVERVIEW);
  g_assert_true(wait_idle(s));
  ox_scene_focus_uid(s, far);
  g_assert_true(wait_idle(s));
  guint r = ox_scene_get_shown_radius(s), want = 0;
  for (guint k = 1; k <= OX_SCENE_MAX_RADIUS; k++) {
    guint size = ox_scene_get_focus_size(s);
    if (ox_view_neighborhood_skip(h->u, &far, 1, k, size + 1, skip, NULL, 0) > size) break;
    want = k;
  }
  g_assert_cmpuint(r, ==, MAX(want, 1));
  g_free(folded);
  g_free(skip);
  /* a node already in the scene: focusing on it lays nothing out */
  const OxLayout *l = ox_scene_get_layout(s);
  guint req = ox_scene_get_stats(s)->n_requests - ox_scene_get_stats(s)->n_prefetches;
  ox_scene_focus_uid(s, far);
  g_assert_false(ox_scene_get_busy(s));
  g_assert_true(wait_idle(s));
  g_assert_true(ox_scene_get_layout(s) == l);
  g_assert_cmpuint(ox_scene_get_stats(s)->n_requests - ox_scene_get_stats(s)->n_prefetches, ==, req);
  g_object_unref(s);
}

/* ---- stepping keeps positions, reuses layouts, places few new nodes without Graphviz */

static void test_stepping_reuse(void) {
  OxDocument *d = doc_or_skip();
  if (!d) return;
  ox_document_set_position(d, 0);
  OxScene *s = ox_scene_new(d);
  g_assert_true(wait_idle(s));
  guint n = MIN(ox_document_get_n_steps(d), 150);
  double px = 0, py = 0;
  guint32 probe = 0;
  for (guint p = 1; p <= n; p++) {
    const OxLayout *before = ox_scene_get_layout(s);
    ox_document_set_position(d, p);
    g_assert_true(wait_idle(s));
    /* a node that stays in the scene keeps its position while the scene's layout is the same */
    double x, y, w, hh;
    if (probe && ox_scene_get_layout(s) == before && ox_scene_box(s, probe, &x, &y, &w, &hh)) {
      g_assert_cmpfloat(x, ==, px);
      g_assert_cmpfloat(y, ==, py);
    }
    guint nb;
    const OxLayoutNode *b = ox_scene_get_boxes(s, &nb);
    g_assert_cmpuint(nb, >, 0);
    probe = b[0].id;
    px = b[0].x;
    py = b[0].y;
    /* the step's anchor is in the scene */
    guint32 a = ox_document_get_anchor_uid(d);
    if (a) g_assert_cmpuint(ox_scene_uid_item(s, a), ==, a);
  }
  const OxSceneStats *st = ox_scene_get_stats(s);
  g_test_message("%u steps: %u layouts (%u prefetched, %u adopted), %u reused, %u placed, %u cache hits", n,
                 st->n_requests, st->n_prefetches, st->n_prefetch_hits, st->n_reused, st->n_placed, st->n_cache_hits);
  g_assert_cmpuint(st->n_reused, >, 0);
  g_assert_cmpuint(st->n_requests - st->n_prefetches, <, n);
  /* back to a step seen before: its scene comes from the cache */
  guint hits = st->n_cache_hits;
  ox_document_set_position(d, 1);
  g_assert_true(wait_idle(s));
  ox_document_set_position(d, n);
  g_assert_true(wait_idle(s));
  ox_document_set_position(d, 1);
  g_assert_true(wait_idle(s));
  g_assert_cmpuint(ox_scene_get_stats(s)->n_cache_hits, >, hits);
  g_object_unref(s);
}

/* ---- cache keys */

static void test_subgraph_key(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "x", "x", ox_value_none(), ox_value_none());
  OxValue a = ox_value_node(x);
  OxNodeId r = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "relu", "torch.relu", ox_graph_value_seq(g, OX_V_TUPLE, &a, 1),
                                 ox_value_none());
  OxNodeId t = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "tanh", "torch.tanh", ox_graph_value_seq(g, OX_V_TUPLE, &a, 1),
                                 ox_value_none());
  guint32 s1[] = {x, r, t}, s2[] = {t, x, r}, s3[] = {x, r};
  guint64 k1 = ox_scene_subgraph_key(g, s1, 3, NULL, 1);
  g_assert_cmpuint(k1, ==, ox_scene_subgraph_key(g, s2, 3, NULL, 1)); /* order does not matter */
  g_assert_cmpuint(k1, !=, ox_scene_subgraph_key(g, s3, 2, NULL, 1)); /* nodes do */
  g_assert_cmpuint(k1, !=, ox_scene_subgraph_key(g, s1, 3, NULL, 2)); /* options do */
  guint64 before = ox_scene_subgraph_key(g, s1, 3, NULL, 1);
  OxValue b = ox_value_node(r);
  ox_graph_set_args(g, t, ox_graph_value_seq(g, OX_V_TUPLE, &b, 1)); /* edges do */
  g_assert_cmpuint(before, !=, ox_scene_subgraph_key(g, s1, 3, NULL, 1));
  ox_graph_free(g);
}

/* ---- the history's inverse scripts */

static void test_history_seek(void) {
  OxDocument *d = doc_or_skip();
  if (!d) return;
  OxHistory *h = ox_document_get_history(d);
  g_assert_null(h->error);
  g_assert_cmpuint(h->n_graph_steps, >, 10);
  guint32 k = h->n_graph_steps;
  OxGraph *g = ox_history_graph_at(h, k, NULL);
  g_assert_nonnull(g);
  /* the document's kind of working graph: a lean copy sharing the trace's strings, so replays
   * look names up by pointer; it must end up the same graph, text for text */
  OxGraph *gs = ox_graph_clone_lean(h->input, h->trace->pool);
  g_assert_true(ox_graph_shares_strings(gs, h->trace->pool));
  g_assert_true(ox_history_seek(h, gs, 0, k, NULL));
  GRand *rnd = g_rand_new_with_seed(11);
  for (int i = 0; i < 24; i++) {
    guint32 to = i % 3 == 0 ? (k ? k - 1 : 1) : (guint32)g_rand_int_range(rnd, 0, (gint32)h->n_graph_steps + 1);
    GError *err = NULL;
    g_assert_true(ox_history_seek(h, g, k, to, &err));
    g_assert_no_error(err);
    g_assert_true(ox_history_seek(h, gs, k, to, &err));
    g_assert_no_error(err);
    OxGraph *ref = ox_history_graph_at(h, to, NULL);
    g_assert_cmpuint(ref->n_live, ==, g->n_live);
    g_assert_cmpuint(ox_graph_structure_hash(ref), ==, ox_graph_structure_hash(g));
    g_assert_cmpint(ox_graph_verify(g, true, NULL), ==, 0);
    g_assert_cmpint(ox_graph_verify(gs, true, NULL), ==, 0);
    OxBuf a, b;
    ox_buf_init(&a);
    ox_buf_init(&b);
    ox_write_fx_text(ref, &a);
    ox_write_fx_text(gs, &b);
    g_assert_cmpstr(a.data, ==, b.data);
    ox_buf_free(&a);
    ox_buf_free(&b);
    ox_graph_free(ref);
    k = to;
  }
  g_rand_free(rnd);
  ox_graph_free(g);
  ox_graph_free(gs);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/ui/budget/subgraph-key", test_subgraph_key);
  g_test_add_func("/ui/budget/no-request-over-budget", test_budget_everywhere);
  g_test_add_func("/ui/budget/expand-collapse", test_expand_collapse);
  g_test_add_func("/ui/budget/focus-radius", test_focus_radius);
  g_test_add_func("/ui/budget/stepping-reuse", test_stepping_reuse);
  g_test_add_func("/ui/budget/history-seek", test_history_seek);
  int rc = g_test_run();
  g_clear_object(&shared_doc);
  if (big_path) g_unlink(big_path);
  if (big_dir) g_rmdir(big_dir);
  g_free(big_path);
  g_free(big_dir);
  return rc;
}
