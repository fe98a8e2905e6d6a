/* test-ui-large.c - the debugger's views on graphs shaped unlike our generator's towers, without
 * a display (suite ui-model): a 100k-node dump whose names carry no module path (made by
 * `gen-recsys --shape flat` in the test, with a hub used by a quarter of the towers and
 * 128-way fan-outs, its trace by `optimus optimize`), and the corpus's ViT fp16 (1,242 nodes, a
 * symbolic size with 117 users) and Llama-3-8B post-grad (3,282 nodes) dumps, which hung the
 * debugger before. For each: the first view is no failure, the overview holds at most the items
 * the automatic overview opens (60) and every cluster at most OX_VIEW_FAN, no layout request
 * exceeds the budget, expanding a cluster and stepping (focus views) work, far nodes come into
 * view. Every dump of the corpus opens too. Behaviour only: timings are in docs/benchmarks.md. */
#include <glib/gstdio.h>
#include <string.h>

#include "ox-scene.h"
#include "test-common.h"

typedef struct {
  guint max, count;
} Hook;

static void on_request(guint n, gpointer data) {
  Hook *h = data;
  h->max = MAX(h->max, n);
  h->count++;
}

static gboolean wait_idle(OxScene *s) {
  gint64 end = g_get_monotonic_time() + 120 * G_USEC_PER_SEC;
  while (ox_scene_get_busy(s) || g_main_context_pending(NULL)) {
    if (g_get_monotonic_time() > end) return FALSE;
    g_main_context_iteration(NULL, ox_scene_get_busy(s));
  }
  return TRUE;
}

static gboolean spawn_ok(const char *const *argv) {
  int status = 0;
  GError *e = NULL;
  char *err = NULL;
  gboolean ok = g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err, &status, &e);
  if (!ok || !g_spawn_check_wait_status(status, NULL)) {
    g_test_message("%s failed: %s", argv[0], e ? e->message : err ? err : "");
    ok = FALSE;
  }
  g_clear_error(&e);
  g_free(err);
  return ok;
}

/* The invariants of any view, checked on the scene as it is now. */
static void check_scene(OxScene *s, const Hook *hk, const char *what) {
  g_assert_true(wait_idle(s));
  if (ox_scene_get_error(s)) g_test_message("%s: %s", what, ox_scene_get_error(s));
  g_assert_null(ox_scene_get_error(s));
  g_assert_nonnull(ox_scene_get_layout(s));
  g_assert_cmpuint(hk->max, <=, ox_scene_get_budget(s));
  const OxHierarchy *h = ox_scene_get_hierarchy(s);
  for (guint32 c = 0; c < h->n_clusters; c++)
    g_assert_cmpuint(h->clusters[c].n_direct + h->clusters[c].n_children, <=, OX_VIEW_FAN);
}

/* The status line's node count (the history's per-step count) is the shown graph's own. */
static void check_count(OxDocument *d) {
  const OxGraph *g = ox_document_get_graph(d);
  guint32 walked = 0;
  OX_GRAPH_FOREACH(g, id) walked += g->nodes[id].op != OX_OP_OUTPUT;
  const OxHistory *h = ox_document_get_history(d);
  guint32 k = ox_document_get_shown_gstep(d);
  g_assert_cmpuint(h->live_at[k], ==, g->n_live);
  g_assert_cmpuint(ox_history_count_nodes(h, g, k), ==, walked);
}

/* The whole tour: first view, overview bounds, an expansion, steps, a jump, a far node. */
static void tour(OxDocument *d, const char *what) {
  OxScene *s = ox_scene_new(d);
  Hook hk = {0};
  ox_scene_set_request_hook(s, on_request, &hk);
  ox_scene_set_viewport(s, 1000, 700);
  ox_document_set_position(d, 0);
  /* the scene laid out on creation: from now on every request is seen */
  check_scene(s, &hk, what);
  g_assert_cmpuint(ox_scene_get_shown_mode(s), ==, OX_VIEW_OVERVIEW);
  guint items = ox_scene_get_layout(s)->n_nodes;
  g_test_message("%s: first view %s, %u items", what, ox_view_mode_name(ox_scene_get_shown_mode(s)), items);
  g_assert_cmpuint(items, >, 1);
  g_assert_cmpuint(items, <=, 60);
  /* every item has a label that is not empty, and a cluster's count is in it */
  guint nb;
  const OxLayoutNode *b = ox_scene_get_boxes(s, &nb);
  char l1[320], l2[320];
  gint32 cluster = -1;
  for (guint i = 0; i < nb; i++) {
    ox_scene_item_label(s, b[i].id, l1, sizeof l1, l2, sizeof l2);
    g_assert_true(l1[0] && l2[0]);
    gint32 c = ox_scene_item_cluster(s, b[i].id);
    if (c >= 0) {
      g_assert_nonnull(strstr(l2, "node"));
      if (cluster < 0 && ox_scene_get_hierarchy(s)->clusters[c].n_children) cluster = c;
    }
  }
  /* expand a cluster: within the budget, with its children */
  if (cluster >= 0) {
    if (ox_scene_expand(s, (guint32)cluster)) check_scene(s, &hk, what);
    g_assert_true(ox_scene_cluster_is_open(s, (guint32)cluster) ||
                  ox_scene_get_overview_size(s) + OX_VIEW_FAN > ox_scene_get_budget(s));
  }
  /* stepping switches to focus views */
  guint n = ox_document_get_n_steps(d);
  g_assert_cmpuint(n, >, 0);
  for (guint p = 1; p <= MIN(n, 15); p++) {
    ox_document_set_position(d, p);
    check_scene(s, &hk, what);
    check_count(d);
    g_assert_cmpuint(ox_scene_get_shown_mode(s), ==, OX_VIEW_FOCUS);
    /* the step's anchor is in the view (as itself, or as the node it is folded into) */
    const OxStep *st = ox_document_get_step(d);
    if (st && st->anchor) {
      guint32 uid = ox_document_uid_of(d, st->anchor);
      if (uid) g_assert_cmpuint(ox_scene_uid_item(s, uid), !=, 0);
    }
  }
  ox_document_set_position(d, n);
  check_scene(s, &hk, what);
  check_count(d);
  ox_document_set_position(d, n / 2);
  check_scene(s, &hk, what);
  check_count(d);
  /* a far node */
  const OxHistory *h = ox_document_get_history(d);
  guint32 far = ox_scene_drawn_uid(s, h->u->n_nodes - 2);
  ox_scene_focus_uid(s, far);
  check_scene(s, &hk, what);
  g_assert_cmpuint(ox_scene_uid_item(s, far), !=, 0);
  g_test_message("%s: %u layout requests, largest %u", what, hk.count, hk.max);
  g_object_unref(s);
}

static void test_flat_100k(void) {
  const char *gen = g_getenv("OX_GEN_RECSYS"), *cli = g_getenv("OPTIMUS_CLI");
  if (!gen || !cli || !g_file_test(gen, G_FILE_TEST_IS_EXECUTABLE) || !g_file_test(cli, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("OX_GEN_RECSYS (tools/gen-recsys) or OPTIMUS_CLI (optimus) not available");
    return;
  }
  char *dir = g_dir_make_tmp("ox-large-XXXXXX", NULL);
  char *path = g_build_filename(dir, "flat.txt", NULL), *opt = g_build_filename(dir, "opt.json", NULL),
       *trace = g_build_filename(dir, "trace.json", NULL);
  const char *ga[] = {gen, "--nodes", "100000", "--shape", "flat", "--seed", "2", "-o", path, NULL};
  g_assert_true(spawn_ok(ga));
  /* names carry no module path: nothing for the name-based hierarchy to use */
  gsize len;
  char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, &len, NULL));
  g_assert_null(strstr(text, "layers_"));
  g_assert_nonnull(strstr(text, "%scale"));
  g_free(text);
  const char *oa[] = {cli, "optimize", path, "-o", opt, "--trace", trace, "--checks", "structure,shape", NULL};
  g_assert_true(spawn_ok(oa));
  OxDocument *d = ox_document_new();
  GError *e = NULL;
  g_assert_true(ox_document_load_file(d, path, trace, &e));
  g_assert_no_error(e);
  g_assert_cmpuint(ox_document_get_history(d)->input->n_live, ==, 100000);
  tour(d, "flat 100k");
  g_object_unref(d);
  g_unlink(path);
  g_unlink(opt);
  g_unlink(trace);
  g_rmdir(dir);
  g_free(path);
  g_free(opt);
  g_free(trace);
  g_free(dir);
}

static void corpus_tour(int nn) {
  char *path = test_corpus_file_or_skip(nn);
  if (!path) return;
  OxDocument *d = ox_document_new();
  GError *e = NULL;
  g_assert_true(ox_document_load_file(d, path, NULL, &e));
  g_assert_no_error(e);
  g_assert_true(ox_document_optimize(d, NULL, &e));
  g_assert_no_error(e);
  tour(d, path);
  g_object_unref(d);
  g_free(path);
}

/* Every dump of the corpus opens: a first view that is laid out, no error, within the bounds. */
static void test_corpus_opens(void) {
  char *dir = test_corpus_dir();
  char *sources = g_build_filename(dir, "SOURCES.md", NULL);
  gboolean have = g_file_test(sources, G_FILE_TEST_IS_REGULAR);
  g_free(sources);
  g_free(dir);
  if (!have) {
    g_test_skip("corpus not found (set OPTIMUS_SHARED)");
    return;
  }
  for (int nn = 1; nn <= 29; nn++) {
    char *path = test_corpus_file_or_skip(nn);
    g_assert_nonnull(path);
    OxDocument *d = ox_document_new();
    GError *e = NULL;
    g_assert_true(ox_document_load_file(d, path, NULL, &e));
    g_assert_no_error(e);
    OxScene *s = ox_scene_new(d);
    ox_scene_set_viewport(s, 1000, 700);
    g_assert_true(wait_idle(s));
    if (ox_scene_get_error(s)) g_test_message("%s: %s", path, ox_scene_get_error(s));
    g_assert_null(ox_scene_get_error(s));
    const OxLayout *l = ox_scene_get_layout(s);
    g_assert_nonnull(l);
    OxViewMode m = ox_scene_get_shown_mode(s);
    g_assert_true(m == OX_VIEW_FULL || m == OX_VIEW_OVERVIEW);
    if (m == OX_VIEW_OVERVIEW) g_assert_cmpuint(l->n_nodes, <=, 60);
    g_assert_cmpuint(l->n_nodes, <=, ox_scene_get_budget(s));
    g_object_unref(s);
    g_object_unref(d);
    g_free(path);
  }
}

static void test_vit(void) { corpus_tour(24); }
static void test_llama(void) { corpus_tour(25); }

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/ui/large/flat-100k", test_flat_100k);
  g_test_add_func("/ui/large/corpus-opens", test_corpus_opens);
  g_test_add_func("/ui/large/vit-fp16", test_vit);
  g_test_add_func("/ui/large/llama3-8b", test_llama);
  return g_test_run();
}
