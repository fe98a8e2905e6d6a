/* test-ui.c - the debugger's widgets under Xvfb (suite ui).
 *
 * Constructs the real OxWindow, drives it only through its win.* actions (as the keyboard and
 * menus do), and asserts document state, action state, notify counts, panel contents and
 * pixels: a selected node must be drawn with the selection colour. The end-to-end test opens
 * the bundled example (data/examples/recsys-towers.txt with its trace when present, else the
 * small relu chain with a test pass), steps through every step and exports every format.
 * Without a display it prints "1..0 # SKIP no display" and exits 0.
 */
#include <gtk/gtk.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "ox-minimap.h"
#include "ox-step-row.h"
#include "ox-window.h"
#include "ir/ox_graph_diff.h"
#include "load/ox_load.h"
#include "run/ox_compare.h"
#include "run/ox_coverage.h"
#include "test-common.h"
#include "ui-test-pass.h"

/* the test pass shared with test-ui-model.c: relu(relu(x)) -> relu(x), others rejected */
static OxPipeline *test_pipeline(void) { return ui_test_pipeline(); }

/* ---- helpers */

static char *src_path(const char *a, const char *b, const char *c) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  return g_build_filename(root ? root : ".", a, b, c, NULL);
}

static void drain(void) {
  while (g_main_context_iteration(NULL, FALSE));
}

static gboolean wait_until(gboolean (*cond)(gpointer), gpointer data, guint timeout_ms) {
  gint64 end = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
  while (!cond(data)) {
    if (g_get_monotonic_time() > end) return FALSE;
    g_main_context_iteration(NULL, FALSE);
    g_usleep(1000);
  }
  return TRUE;
}

static gboolean cond_ready(gpointer w) {
  OxDocument *d = ox_window_get_document(w);
  return ox_document_has_graph(d) && !ox_document_get_busy(d) && ox_graph_view_is_laid_out(ox_window_get_view(w));
}

static gboolean cond_laid_out(gpointer w) { return ox_graph_view_is_laid_out(ox_window_get_view(w)); }

static OxWindow *new_window(void) {
  OxWindow *w = ox_window_new(NULL);
  gtk_window_set_default_size(GTK_WINDOW(w), 1200, 800);
  gtk_window_present(GTK_WINDOW(w));
  drain();
  return w;
}

/* Opens the relu chain, optimized in the background with the test pass; waits for the layout. */
static OxWindow *window_with_relu_chain(void) {
  OxWindow *w = new_window();
  OxCheckConfig checks;
  ox_check_config_default(&checks);
  ox_document_set_pipeline(ox_window_get_document(w), test_pipeline(), &checks);
  g_autofree char *path = src_path("tests", "data", "ui/relu-chain.txt");
  g_assert_true(ox_window_open(w, path, NULL));
  g_assert_true(wait_until(cond_ready, w, 20000));
  g_assert_cmpuint(ox_document_get_n_steps(ox_window_get_document(w)), ==, 4);
  return w;
}

static gboolean action_enabled(OxWindow *w, const char *name) {
  return g_action_group_get_action_enabled(G_ACTION_GROUP(w), name);
}

static void count_notify(GObject *o, GParamSpec *ps, gpointer data) {
  (void)o;
  (void)ps;
  (*(guint *)data)++;
}

/* Counts pixels of colour rgb (±tol per channel) inside rect of the widget's rendering. */
static guint count_pixels(GtkWidget *widget, const graphene_rect_t *rect, guint32 rgb, int tol) {
  GdkPaintable *paintable = gtk_widget_paintable_new(widget);
  gtk_widget_queue_draw(widget);
  gtk_test_widget_wait_for_draw(widget);
  drain();
  int w = gtk_widget_get_width(widget), h = gtk_widget_get_height(widget);
  GtkSnapshot *snap = gtk_snapshot_new();
  gdk_paintable_snapshot(paintable, snap, w, h);
  GskRenderNode *node = gtk_snapshot_free_to_node(snap);
  g_assert_nonnull(node);
  GskRenderer *r = gtk_native_get_renderer(gtk_widget_get_native(widget));
  GdkTexture *tex = gsk_renderer_render_texture(r, node, &GRAPHENE_RECT_INIT(0, 0, (float)w, (float)h));
  int tw = gdk_texture_get_width(tex), th = gdk_texture_get_height(tex);
  if (g_getenv("OX_TEST_SAVE_CANVAS")) gdk_texture_save_to_png(tex, g_getenv("OX_TEST_SAVE_CANVAS"));
  guchar *px = g_malloc((gsize)tw * th * 4);
  gdk_texture_download(tex, px, (gsize)tw * 4);
  guint count = 0;
  int x0 = MAX(0, (int)rect->origin.x - 6), y0 = MAX(0, (int)rect->origin.y - 6);
  int x1 = MIN(tw, (int)(rect->origin.x + rect->size.width) + 6), y1 = MIN(th, (int)(rect->origin.y + rect->size.height) + 6);
  int R = (rgb >> 16) & 0xff, G = (rgb >> 8) & 0xff, B = rgb & 0xff;
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) {
      const guchar *p = px + ((gsize)y * tw + x) * 4; /* B, G, R, A */
      if (abs(p[2] - R) <= tol && abs(p[1] - G) <= tol && abs(p[0] - B) <= tol) count++;
    }
  g_free(px);
  g_object_unref(tex);
  gsk_render_node_unref(node);
  g_object_unref(paintable);
  return count;
}

/* ---- tests */

static void test_construct(void) {
  OxWindow *w = new_window();
  OxDocument *d = ox_window_get_document(w);
  g_assert_false(ox_document_has_graph(d));
  g_assert_false(action_enabled(w, "step-next"));
  g_assert_false(action_enabled(w, "export"));
  g_assert_true(action_enabled(w, "open"));
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
}

static void test_actions(void) {
  OxWindow *w = window_with_relu_chain();
  OxDocument *d = ox_window_get_document(w);
  guint pos_notifies = 0;
  g_signal_connect(d, "notify::position", G_CALLBACK(count_notify), &pos_notifies);
  g_assert_true(action_enabled(w, "step-next"));
  g_assert_false(action_enabled(w, "step-prev"));
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.step-next", NULL));
  g_assert_cmpuint(ox_document_get_position(d), ==, 1);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.step-last", NULL));
  g_assert_cmpuint(ox_document_get_position(d), ==, 4);
  g_assert_false(action_enabled(w, "step-next"));
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.step-prev", NULL));
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.step-first", NULL));
  g_assert_cmpuint(ox_document_get_position(d), ==, 0);
  g_assert_cmpuint(pos_notifies, ==, 4);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.goto-step", "u", 2);
  g_assert_cmpuint(ox_document_get_position(d), ==, 2);
  /* before/after toggle: action state and document agree */
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.before", NULL));
  g_assert_true(ox_document_get_show_before(d));
  GVariant *st = g_action_group_get_action_state(G_ACTION_GROUP(w), "before");
  g_assert_true(g_variant_get_boolean(st));
  g_variant_unref(st);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.before", NULL);
  g_assert_false(ox_document_get_show_before(d));
  /* checks panel shows the applied step's checks */
  const char *checks = ox_window_get_panel_markup(w, "checks");
  g_assert_nonnull(strstr(checks, "structure"));
  g_assert_nonnull(strstr(checks, "passed"));
  /* selection through the action; inspector and why-not panels follow */
  guint sel_notifies = 0;
  g_signal_connect(d, "notify::selected", G_CALLBACK(count_notify), &sel_notifies);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.select-node", "s", "sigmoid"));
  g_assert_cmpstr(ox_document_get_selected(d), ==, "sigmoid");
  g_assert_cmpuint(sel_notifies, ==, 1);
  const char *node = ox_window_get_panel_markup(w, "node");
  g_assert_nonnull(strstr(node, "torch.sigmoid"));
  g_assert_nonnull(strstr(node, "href=\"node:relu_fused\"")); /* its input, as a link */
  g_assert_nonnull(strstr(node, "users"));
  /* lineage links: the search bar opens with the query, its hits are the node's inputs' closure */
  g_assert_nonnull(strstr(node, "href=\"search:up:sigmoid\""));
  g_assert_nonnull(strstr(node, "href=\"search:near:sigmoid:2\""));
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.search-for", "s", "up:sigmoid"));
  g_assert_cmpstr(ox_document_get_search_text(d), ==, "up:sigmoid");
  g_assert_cmpuint(ox_document_get_n_hits(d), >=, 3);
  ox_document_set_search_text(d, NULL);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.select-node", "s", "relu_2");
  const char *why = ox_window_get_panel_markup(w, "why");
  g_assert_nonnull(strstr(why, "2 records mention it"));
  g_assert_nonnull(strstr(why, "does not match"));
  g_assert_nonnull(strstr(why, "href=\"step:3\""));
  /* filters through actions */
  gtk_widget_activate_action(GTK_WIDGET(w), "win.filter-applied", NULL);
  g_assert_cmpuint(ox_document_get_filter_kinds(d), ==, OX_FILTER_REJECTED | OX_FILTER_CHECK_FAILED);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.filter-applied", NULL);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.filter-touching", NULL);
  g_assert_true(ox_document_get_filter_touching(d));
  g_assert_cmpuint(g_list_model_get_n_items(ox_document_get_timeline(d)), ==, 3); /* header + 2 */
  gtk_widget_activate_action(GTK_WIDGET(w), "win.filter-touching", NULL);
  /* search */
  ox_document_set_position(d, 0);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.select-node", "s", "");
  ox_document_set_search_text(d, "op:pointwise");
  g_assert_true(action_enabled(w, "search-next"));
  gtk_widget_activate_action(GTK_WIDGET(w), "win.search-next", NULL);
  g_assert_cmpstr(ox_document_get_selected(d), ==, "relu");
  /* zoom actions change the zoom */
  OxGraphView *v = ox_window_get_view(w);
  double z = ox_graph_view_get_zoom(v);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.zoom-in", NULL);
  g_assert_cmpfloat(ox_graph_view_get_zoom(v), >, z);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.fit", NULL);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.edge-labels", NULL);
  g_assert_true(ox_graph_view_get_edge_labels(v));
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
}

static void test_pixels(void) {
  OxWindow *w = window_with_relu_chain();
  OxDocument *d = ox_window_get_document(w);
  OxGraphView *v = ox_window_get_view(w);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.zoom-reset", NULL);
  g_assert_true(ox_document_select(d, "linear"));
  g_assert_true(ox_graph_view_zoom_to_selection(v));
  graphene_rect_t r;
  guint32 uid = ox_document_uid_of(d, "linear");
  g_assert_true(ox_graph_view_node_bounds(v, uid, &r));
  guint selected = count_pixels(GTK_WIDGET(v), &r, 0x1c71d8, 40);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.select-node", "s", ""));
  g_assert_null(ox_document_get_selected(d));
  guint unselected = count_pixels(GTK_WIDGET(v), &r, 0x1c71d8, 40);
  g_test_message("selection-colour pixels: %u selected, %u unselected", selected, unselected);
  g_assert_cmpuint(unselected, ==, 0);
  g_assert_cmpuint(selected, >, 30);
  /* hit-testing maps the node's centre back to it */
  g_assert_cmpuint(ox_graph_view_hit(v, r.origin.x + r.size.width / 2, r.origin.y + r.size.height / 2), ==, uid);
  /* a removed node is drawn red at its step */
  ox_document_set_position(d, 2);
  guint32 gone = ox_history_uid(ox_document_get_history(d), "relu_1", 0);
  g_assert_true(ox_graph_view_node_bounds(v, gone, &r));
  g_assert_cmpuint(count_pixels(GTK_WIDGET(v), &r, 0xe01b24, 40), >, 20);
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
}

static void test_bad_file(void) {
  OxWindow *w = window_with_relu_chain();
  g_autofree char *bad = src_path("tests", "data", "ui/bad.txt");
  g_assert_false(ox_window_open(w, bad, NULL));
  const char *err = ox_window_get_last_error(w);
  g_assert_nonnull(err);
  g_assert_nonnull(strstr(err, "bad.txt:1:1: error"));
  /* the window keeps its graph and stays usable */
  OxDocument *d = ox_window_get_document(w);
  g_assert_true(ox_document_has_graph(d));
  g_assert_cmpuint(ox_document_get_n_steps(d), ==, 4);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.step-next", NULL));
  /* close the error dialog */
  GListModel *tops = gtk_window_get_toplevels();
  for (guint i = 0; i < g_list_model_get_n_items(tops); i++) {
    GtkWindow *t = g_list_model_get_item(tops, i);
    if (GTK_IS_MESSAGE_DIALOG(t)) gtk_window_destroy(t);
    g_object_unref(t);
  }
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
}

typedef struct {
  OxWindow *w;
  guint n;
} ExportWait;

static gboolean cond_exports(gpointer p) {
  ExportWait *e = p;
  return ox_window_get_n_exports(e->w) >= e->n;
}

/* Opens the bundled example, steps through every step by action, exports every format. */
static void test_end_to_end(void) {
  g_autofree char *example = src_path("data", "examples", "recsys-towers.txt");
  g_autofree char *example_trace = src_path("data", "examples", "recsys-towers.trace.json");
  OxWindow *w;
  if (g_file_test(example, G_FILE_TEST_EXISTS) && g_file_test(example_trace, G_FILE_TEST_EXISTS)) {
    w = new_window();
    g_assert_true(ox_window_open(w, example, example_trace));
    g_assert_true(wait_until(cond_ready, w, 60000));
  } else {
    g_test_message("data/examples/recsys-towers.* not present: using tests/data/ui/relu-chain.txt");
    w = window_with_relu_chain();
  }
  OxDocument *d = ox_window_get_document(w);
  guint n = ox_document_get_n_steps(d);
  g_assert_cmpuint(n, >, 0);
  guint steps = 0;
  gint64 worst = 0;
  while (action_enabled(w, "step-next")) {
    guint before = ox_document_get_position(d);
    gint64 t0 = g_get_monotonic_time();
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.step-next", NULL));
    gint64 dt = g_get_monotonic_time() - t0;
    worst = MAX(worst, dt);
    g_assert_cmpuint(ox_document_get_position(d), ==, before + 1);
    OxGraph *g = ox_document_get_graph(d);
    g_assert_cmpint(ox_graph_verify(g, true, NULL), ==, 0);
    steps++;
    if (steps % 16 == 0) drain();
  }
  g_assert_cmpuint(steps, ==, n);
  g_test_message("stepped %u steps, slowest step action %.1f ms", steps, worst / 1000.0);
  g_assert_true(wait_until(cond_laid_out, w, 60000));
  g_autofree char *dir = g_dir_make_tmp("ox-ui-e2e-XXXXXX", NULL);
  const char *formats[] = {"json", "fx", "dot", "svg", "png", "trace"};
  ExportWait e = {w, ox_window_get_n_exports(w)};
  for (guint i = 0; i < G_N_ELEMENTS(formats); i++) {
    g_autofree char *path = g_strdup_printf("%s/export.%s", dir, formats[i]);
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.export-to", "(ss)", formats[i], path));
    e.n++;
  }
  g_assert_true(wait_until(cond_exports, &e, 60000));
  g_assert_null(ox_window_get_last_error(w));
  for (guint i = 0; i < G_N_ELEMENTS(formats); i++) {
    g_autofree char *path = g_strdup_printf("%s/export.%s", dir, formats[i]);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(path, &text, &len, NULL));
    g_assert_cmpuint(len, >, 20);
    if (!strcmp(formats[i], "png")) g_assert_true(memcmp(text, "\x89PNG", 4) == 0);
    if (!strcmp(formats[i], "svg")) g_assert_nonnull(strstr(text, "<svg"));
    if (!strcmp(formats[i], "dot")) g_assert_nonnull(strstr(text, "digraph"));
    if (!strcmp(formats[i], "json") || !strcmp(formats[i], "fx")) {
      /* the exported graph loads and equals the graph at the last step */
      g_autoptr(OxDocument) back = ox_document_new();
      g_assert_true(ox_document_load_file(back, path, NULL, NULL));
      g_assert_cmpuint(ox_document_get_graph(back)->n_live, ==, ox_document_get_graph(d)->n_live);
    }
    if (!strcmp(formats[i], "trace")) {
      /* the exported trace replays on the original graph */
      g_autoptr(OxDocument) back = ox_document_new();
      g_assert_true(ox_document_load_file(back, ox_document_get_path(d), path, NULL));
      g_assert_cmpuint(ox_document_get_n_steps(back), ==, n);
    }
    g_unlink(path);
  }
  g_rmdir(dir);
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
}

/* View switcher, focus radius and the minimap, through the window's actions. */
static void test_views(void) {
  OxWindow *w = window_with_relu_chain();
  OxGraphView *v = ox_window_get_view(w);
  OxScene *sc = ox_graph_view_get_scene(v);
  /* a small graph: the whole of it */
  g_assert_cmpuint(ox_scene_get_shown_mode(sc), ==, OX_VIEW_FULL);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.view-mode", "s", "overview"));
  g_assert_true(wait_until(cond_laid_out, w, 20000));
  g_assert_cmpuint(ox_scene_get_shown_mode(sc), ==, OX_VIEW_OVERVIEW);
  g_assert_true(ox_scene_is_overview(sc));
  GVariant *st = g_action_group_get_action_state(G_ACTION_GROUP(w), "view-mode");
  g_assert_cmpstr(g_variant_get_string(st, NULL), ==, "overview");
  g_variant_unref(st);
  /* focus with an explicit radius around the selection */
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.select-node", "s", "sigmoid"));
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.focus-radius", "u", 1));
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.view-mode", "s", "focus"));
  g_assert_true(wait_until(cond_laid_out, w, 20000));
  g_assert_cmpuint(ox_scene_get_shown_mode(sc), ==, OX_VIEW_FOCUS);
  g_assert_cmpuint(ox_scene_get_radius(sc), ==, 1);
  guint32 sig = ox_document_uid_of(ox_window_get_document(w), "sigmoid");
  g_assert_cmpuint(ox_scene_uid_item(sc, sig), ==, sig);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.radius-more", NULL));
  g_assert_cmpuint(ox_scene_get_radius(sc), ==, 2);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.view-mode", "s", "auto"));
  g_assert_true(wait_until(cond_laid_out, w, 20000));
  g_assert_cmpuint(ox_scene_get_shown_mode(sc), ==, OX_VIEW_FULL);
  /* minimap: a click centres the canvas on the scene point under it */
  GtkWidget *map = ox_window_get_minimap(w);
  g_assert_true(gtk_widget_get_visible(map));
  drain();
  for (int i = 0; i < 6; i++) gtk_widget_activate_action(GTK_WIDGET(w), "win.zoom-in", NULL);
  double sw, sh, mx, my;
  ox_scene_get_size(sc, &sw, &sh);
  g_assert_true(ox_minimap_scene_to_map(OX_MINIMAP(map), sw * 0.25, sh * 0.75, &mx, &my));
  g_assert_true(ox_minimap_move_to(OX_MINIMAP(map), mx, my));
  graphene_rect_t vis;
  ox_graph_view_get_visible(v, &vis);
  g_assert_cmpfloat(fabs(vis.origin.x + vis.size.width / 2 - sw * 0.25), <, 2.0);
  g_assert_cmpfloat(fabs(vis.origin.y + vis.size.height / 2 - sh * 0.75), <, 2.0);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.minimap", NULL));
  g_assert_false(gtk_widget_get_visible(map));
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
}

static gboolean cond_steps_from_rule(gpointer w) {
  OxDocument *d = ox_window_get_document(w);
  if (!ox_document_has_graph(d) || ox_document_get_busy(d)) return FALSE;
  const OxTrace *t = ox_document_get_trace(d);
  if (!t) return FALSE;
  for (uint32_t i = 0; i < t->n_steps; i++)
    if (t->steps[i].kind == OX_STEP_APPLIED && t->steps[i].rule_file) return TRUE;
  return FALSE;
}

static void close_dialogs(void) {
  GListModel *tops = gtk_window_get_toplevels();
  for (guint i = 0; i < g_list_model_get_n_items(tops); i++) {
    GtkWindow *t = g_list_model_get_item(tops, i);
    if (GTK_IS_MESSAGE_DIALOG(t)) gtk_window_destroy(t);
    g_object_unref(t);
  }
}

/* Issue 7 in the debugger: open a rule file, the run includes its rules; a save with an error
 * keeps the previous rules and shows the located error; a good save re-runs. */
static void test_rules_file(void) {
  OxWindow *w = new_window();
  g_autofree char *graph = src_path("tests", "data", "rules/batch-gelu.txt");
  g_assert_true(ox_window_open(w, graph, NULL));
  g_assert_true(wait_until(cond_ready, w, 20000));
  g_autofree char *src = src_path("data", "rules", "batch-gelu.rules");
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(src, &text, NULL, NULL));
  g_autofree char *dir = g_dir_make_tmp("oxui-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "my.rules", NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  g_assert_true(action_enabled(w, "open-rules"));
  g_assert_true(ox_window_open_rules(w, path));
  g_assert_true(wait_until(cond_steps_from_rule, w, 20000));
  g_assert_cmpuint(ox_window_get_rule_loads(w), ==, 1);
  /* a broken save: nothing new loads, the error names the file and line */
  g_assert_true(g_file_set_contents(path, "rule broken {\n  match: ???\n}\n", -1, NULL));
  g_assert_false(ox_window_reload_rules(w));
  g_assert_cmpuint(ox_window_get_rule_loads(w), ==, 1);
  const char *err = ox_window_get_last_error(w);
  g_assert_nonnull(err);
  g_assert_nonnull(strstr(err, "my.rules:2:"));
  close_dialogs();
  /* the file monitor picks up the fixed save by itself */
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  guint before = ox_window_get_rule_loads(w);
  gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
  while (ox_window_get_rule_loads(w) == before && g_get_monotonic_time() < end) {
    g_main_context_iteration(NULL, FALSE);
    g_usleep(2000);
  }
  g_assert_cmpuint(ox_window_get_rule_loads(w), ==, before + 1);
  g_assert_true(wait_until(cond_steps_from_rule, w, 20000));
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
  g_unlink(path);
  g_rmdir(dir);
}

/* The corpus's ViT fp16 dump, whose shape kept dot busy for minutes and hung the window: opened
 * as a user opens it (no trace: optimized in the background), the first view is an overview
 * that is painted, with cluster boxes and text in them, and no "nothing to show" note. */
static gboolean cond_idle(gpointer w) {
  return ox_graph_view_is_laid_out(ox_window_get_view(w)) && !ox_document_get_busy(ox_window_get_document(w));
}

static void test_large_corpus(void) {
  char *path = test_corpus_file_or_skip(24);
  if (!path) return;
  OxWindow *w = ox_window_new(NULL);
  gtk_window_set_default_size(GTK_WINDOW(w), 1200, 800);
  gtk_window_present(GTK_WINDOW(w));
  drain();
  g_assert_true(ox_window_open(w, path, NULL));
  g_assert_true(wait_until(cond_idle, w, 60000));
  OxGraphView *v = ox_window_get_view(w);
  OxScene *sc = ox_graph_view_get_scene(v);
  g_assert_null(ox_scene_get_error(sc));
  g_assert_cmpuint(ox_scene_get_shown_mode(sc), ==, OX_VIEW_OVERVIEW);
  const OxLayout *l = ox_scene_get_layout(sc);
  g_assert_nonnull(l);
  g_assert_cmpuint(l->n_nodes, <=, 60);
  /* painted: cluster boxes (their face colour) over a good part of the canvas */
  GtkWidget *canvas = GTK_WIDGET(v);
  graphene_rect_t all = GRAPHENE_RECT_INIT(0, 0, (float)gtk_widget_get_width(canvas), (float)gtk_widget_get_height(canvas));
  guint face = count_pixels(canvas, &all, 0xdce6f2, 3);
  g_test_message("ViT overview: %u items, %u cluster-face pixels", l->n_nodes, face);
  g_assert_cmpuint(face, >, 8000);
  /* and labelled: dark text pixels inside the boxes of the clusters */
  guint nb, text = 0;
  const OxLayoutNode *b = ox_scene_get_boxes(sc, &nb);
  double zoom = ox_graph_view_get_zoom(v);
  graphene_rect_t vis;
  ox_graph_view_get_visible(v, &vis);
  for (guint i = 0; i < nb && text < 200; i++) {
    if (ox_scene_item_cluster(sc, b[i].id) < 0) continue;
    /* the middle of the box (count_pixels widens the rectangle by 6; the border is blue) */
    double cx = (b[i].x - vis.origin.x) * zoom, cy = (b[i].y - vis.origin.y) * zoom;
    graphene_rect_t r = GRAPHENE_RECT_INIT((float)(cx - b[i].w * zoom / 2 + 7), (float)(cy - 1),
                                           (float)(b[i].w * zoom - 14), 2);
    if (r.size.width > 1) text += count_pixels(canvas, &r, 0x404040, 64);
  }
  g_assert_cmpuint(text, >, 50);
  /* stepping from here goes to a focus view that is laid out too */
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.step-next", NULL));
  g_assert_true(wait_until(cond_idle, w, 60000));
  g_assert_cmpuint(ox_scene_get_shown_mode(sc), ==, OX_VIEW_FOCUS);
  g_assert_null(ox_scene_get_error(sc));
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
  g_free(path);
}

/* After every step the canvas shows the step: the box its anchor is drawn in (the anchor's own,
 * or its consumer's when the anchor is a folded parameter) lies in the visible rectangle and is
 * drawn highlighted. On a graph with flat names, folded weights and hubs (gen-recsys --shape
 * flat), through the first steps, a sample of the rest and End. */
static void test_step_in_view(void) {
  const char *gen = g_getenv("OX_GEN_RECSYS"), *cli = g_getenv("OPTIMUS_CLI");
  if (!gen || !cli || !g_file_test(gen, G_FILE_TEST_IS_EXECUTABLE) || !g_file_test(cli, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("OX_GEN_RECSYS (tools/gen-recsys) or OPTIMUS_CLI (optimus) not available");
    return;
  }
  char *dir = g_dir_make_tmp("ox-ui-step-XXXXXX", NULL);
  char *path = g_build_filename(dir, "flat.txt", NULL), *opt = g_build_filename(dir, "opt.json", NULL),
       *trace = g_build_filename(dir, "trace.json", NULL);
  const char *ga[] = {gen, "--nodes", "6000", "--shape", "flat", "--seed", "2", "-o", path, NULL};
  const char *oa[] = {cli, "optimize", path, "-o", opt, "--trace", trace, "--checks", "structure,shape", NULL};
  int st1 = 1, st2 = 1;
  g_assert_true(g_spawn_sync(NULL, (char **)ga, NULL, G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                             NULL, NULL, NULL, &st1, NULL));
  g_assert_true(g_spawn_check_wait_status(st1, NULL));
  g_assert_true(g_spawn_sync(NULL, (char **)oa, NULL, G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                             NULL, NULL, NULL, &st2, NULL));
  g_assert_true(g_spawn_check_wait_status(st2, NULL));
  OxWindow *w = ox_window_new(NULL);
  gtk_window_set_default_size(GTK_WINDOW(w), 1200, 800);
  gtk_window_present(GTK_WINDOW(w));
  drain();
  g_assert_true(ox_window_open(w, path, trace));
  g_assert_true(wait_until(cond_idle, w, 60000));
  OxDocument *d = ox_window_get_document(w);
  OxGraphView *v = ox_window_get_view(w);
  OxScene *sc = ox_graph_view_get_scene(v);
  guint n = ox_document_get_n_steps(d), checked = 0, folded = 0;
  g_assert_cmpuint(n, >, 20);
  for (guint i = 0; i < 40; i++) {
    guint p = i < 20 ? i + 1 : i == 39 ? n : 20 + (i - 20) * (n - 20) / 19;
    if (p == n)
      g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.step-last", NULL));
    else
      g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.goto-step", "u", p));
    g_assert_true(wait_until(cond_idle, w, 60000));
    drain();
    const OxStep *s = ox_document_get_step(d);
    g_assert_nonnull(s);
    /* the anchor as the frame shows it (removed by the step: still drawn, in red) */
    const OxHistory *h = ox_document_get_history(d);
    guint ns;
    const guint8 *states = ox_document_get_node_states(d, &ns);
    guint32 uid = 0;
    for (guint32 e = ox_history_named(h, s->anchor); e && !uid; e = h->named[e].next)
      if (h->named[e].uid < ns && states[h->named[e].uid] != OX_NS_HIDDEN) uid = h->named[e].uid;
    if (!uid) {
      g_test_message("step %u: anchor %s not in the frame", p, s->anchor ? s->anchor : "(none)");
      continue;
    }
    guint32 drawn = ox_scene_drawn_uid(sc, uid);
    folded += drawn != uid;
    graphene_rect_t box; /* widget coordinates */
    if (!ox_graph_view_node_bounds(v, drawn, &box)) {
      g_test_message("step %u: anchor %s not in the scene (%s view)", p, s->anchor,
                     ox_view_mode_name(ox_scene_get_shown_mode(sc)));
      continue;
    }
    graphene_rect_t vis = GRAPHENE_RECT_INIT(0, 0, (float)gtk_widget_get_width(GTK_WIDGET(v)),
                                             (float)gtk_widget_get_height(GTK_WIDGET(v)));
    if (!graphene_rect_intersection(&box, &vis, NULL))
      g_test_message("step %u (%s): anchor %s drawn as %u at %.0f,%.0f, view %.0f,%.0f %.0fx%.0f", p, s->rule ? s->rule : s->pass,
                     s->anchor, drawn, box.origin.x, box.origin.y, vis.origin.x, vis.origin.y, vis.size.width, vis.size.height);
    g_assert_true(graphene_rect_intersection(&box, &vis, NULL));
    checked++;
  }
  g_test_message("%u steps' anchors in view, %u of them folded into their consumer", checked, folded);
  g_assert_cmpuint(checked, >=, 30);
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
  g_unlink(path);
  g_unlink(opt);
  g_unlink(trace);
  g_rmdir(dir);
  g_free(path);
  g_free(opt);
  g_free(trace);
  g_free(dir);
}

/* Every graph of a multi-graph dump is reachable: the switcher (win.graph) shows each entry
 * with its own node count, optimized on first sight; a lowered module's node links to its
 * subgraph and win.graph-parent comes back. Corpus 02 and 03 (executorch, nested lowered graphs),
 * 09 and 10 (three TRT submodule graphs), 26 (two graphs from TORCH_LOGS), 28 (a nested submodule). */
static void test_graphs(void) {
  static const int files[] = {2, 3, 9, 10, 26, 28};
  guint with_sub = 0;
  for (guint f = 0; f < G_N_ELEMENTS(files); f++) {
    char *path = test_corpus_file_or_skip(files[f]);
    if (!path) return;
    OxWindow *w = new_window();
    g_assert_true(ox_window_open(w, path, NULL));
    g_assert_true(wait_until(cond_idle, w, 60000));
    OxDocument *d = ox_window_get_document(w);
    guint n = ox_document_get_n_graph_entries(d);
    g_test_message("%s: %u graphs", path, n);
    g_assert_cmpuint(n, >=, 2);
    g_assert_true(action_enabled(w, "graph"));
    for (guint i = 0; i < n; i++) {
      const OxGraphEntry *e = ox_document_get_graph_entry(d, i);
      g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.graph", "u", i));
      g_assert_true(wait_until(cond_idle, w, 60000));
      g_assert_cmpuint(ox_document_get_graph_entry_index(d), ==, i);
      OxGraph *g = ox_document_get_graph(d);
      g_assert_nonnull(g);
      guint nodes = 0;
      OX_GRAPH_FOREACH(ox_document_get_history(d)->input, id) nodes += ox_document_get_history(d)->input->nodes[id].op != OX_OP_OUTPUT;
      g_assert_cmpuint(nodes, ==, e->n_nodes);
      g_assert_null(ox_scene_get_error(ox_graph_view_get_scene(ox_window_get_view(w))));
      g_assert_cmpint(action_enabled(w, "graph-parent"), ==, e->depth > 0);
      if (e->depth && e->owner) {
        /* back up, then in again through the owner's link in the node panel */
        g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.graph-parent", NULL));
        g_assert_true(wait_until(cond_idle, w, 60000));
        g_assert_cmpuint(ox_document_get_graph_entry_index(d), ==, e->parent);
        if (!ox_graph_find(ox_document_get_graph(d), e->owner)) {
          /* a submodule class no node calls (Thunder nests `_model` in thunder_0 unused): only
           * the switcher reaches it */
          g_test_message("%s: graph %u (%s) has no owner node in its parent", path, i, e->label);
          g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.graph", "u", i));
          g_assert_true(wait_until(cond_idle, w, 60000));
          continue;
        }
        g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.select-node", "s", e->owner));
        g_autofree char *link = g_strdup_printf("href=\"graph:%u\"", i);
        g_assert_nonnull(strstr(ox_window_get_panel_markup(w, "node"), link));
        g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.graph", "u", i));
        g_assert_true(wait_until(cond_idle, w, 60000));
        g_assert_cmpuint(ox_document_get_graph_entry_index(d), ==, i);
        with_sub++;
      }
    }
    /* a graph seen before comes back with its steps */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.graph", "u", 0));
    g_assert_true(wait_until(cond_idle, w, 60000));
    g_assert_nonnull(ox_document_get_history(d));
    gtk_window_destroy(GTK_WINDOW(w));
    drain();
    g_free(path);
  }
  g_assert_cmpuint(with_sub, >, 0); /* 02's lowered graphs were opened through their owner */
}

/* A damaged dump says so: the loader's located warnings in the bar, a row selects the node
 * near its line. The first 5000 bytes of the example (its last line cut), and corpus 18 with
 * hundreds of names loaded as external inputs. */
static void test_load_warnings(void) {
  g_autofree char *example = src_path("data", "examples", "recsys-towers.txt");
  g_autofree char *text = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(example, &text, &len, NULL));
  g_assert_cmpuint(len, >, 5000);
  g_autofree char *dir = g_dir_make_tmp("ox-ui-warn-XXXXXX", NULL);
  g_autofree char *trunc = g_build_filename(dir, "trunc.txt", NULL);
  g_assert_true(g_file_set_contents(trunc, text, 5000, NULL));
  OxWindow *w = new_window();
  g_assert_true(ox_window_open(w, trunc, NULL));
  g_assert_true(wait_until(cond_idle, w, 60000));
  OxDocument *d = ox_window_get_document(w);
  const char *bar = ox_window_get_warning_bar_text(w);
  g_assert_nonnull(bar);
  g_test_message("bar: %s", bar);
  g_assert_true(g_str_has_suffix(bar, "while loading trunc.txt"));
  g_assert_cmpuint(ox_document_get_n_load_warnings(d), >=, 1);
  const OxLoadWarning *lw = ox_document_get_load_warning(d, 0);
  g_assert_nonnull(strstr(lw->text, "trunc.txt:"));
  g_assert_nonnull(strstr(lw->text, "warning: skipped damaged line"));
  g_assert_cmpuint(lw->line, >, 1);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.select-node", "s", "");
  g_assert_true(ox_window_activate_warning(w, 0));
  g_assert_nonnull(ox_document_get_selected(d));
  g_assert_false(ox_window_activate_warning(w, 9999));
  /* a clean file clears the bar */
  g_assert_true(ox_window_open(w, example, NULL));
  g_assert_true(wait_until(cond_idle, w, 60000));
  g_assert_null(ox_window_get_warning_bar_text(w));
  char *c18 = test_corpus_file_or_skip(18);
  if (c18) {
    g_assert_true(ox_window_open(w, c18, NULL));
    g_assert_true(wait_until(cond_idle, w, 60000));
    guint n = ox_document_get_n_load_warnings(d);
    g_test_message("corpus 18: %u warnings, bar: %s", n, ox_window_get_warning_bar_text(w));
    g_assert_cmpuint(n, >, 100);
    g_autofree char *want = g_strdup_printf("%u warnings while loading", n);
    g_assert_true(g_str_has_prefix(ox_window_get_warning_bar_text(w), want));
    g_assert_nonnull(strstr(ox_document_get_load_warning(d, 0)->text, "external input"));
    g_assert_true(ox_window_activate_warning(w, 5));
    g_assert_nonnull(ox_document_get_selected(d));
    g_free(c18);
  }
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
  g_unlink(trunc);
  g_rmdir(dir);
}

/* ---- issue 14 */

static void settle(guint ms) {
  gint64 end = g_get_monotonic_time() + ms * 1000;
  while (g_get_monotonic_time() < end) {
    g_main_context_iteration(NULL, FALSE);
    g_usleep(2000);
  }
}

static char *example(const char *name) { return src_path("data", "examples", name); }

static OxWindow *window_with_example(void) {
  OxWindow *w = new_window();
  g_autofree char *graph = example("recsys-towers.txt");
  g_autofree char *trace = example("recsys-towers.trace.json");
  g_assert_true(ox_window_open(w, graph, trace));
  g_assert_true(wait_until(cond_idle, w, 30000));
  g_assert_nonnull(ox_document_get_trace(ox_window_get_document(w)));
  return w;
}

static gboolean cond_hints_done(gpointer w) {
  const char *m = ox_window_get_panel_markup(w, "why");
  return m && !strstr(m, "by a re-run…");
}

/* The record block of the Why not? markup that starts with step link #pos (up to the next record). */
static char *record_block(const char *markup, guint pos) {
  g_autofree char *head = g_strdup_printf("href=\"step:%u\">#%u</a>", pos, pos);
  const char *a = strstr(markup, head);
  if (!a) return NULL;
  const char *b = strstr(a + strlen(head), "href=\"step:");
  return b ? g_strndup(a, (gsize)(b - a)) : g_strdup(a);
}

/* Issue 18: the Checks panel shows the step's estimated cost, before -> after. In the bundled
 * example's first batch_linear step five linears (5 launches) become three stacks and a
 * baddbmm (4); its layer_norms have no cost line before the first step. */
static void test_step_cost(void) {
  OxWindow *w = window_with_example();
  OxDocument *d = ox_window_get_document(w);
  const OxTrace *t = ox_document_get_trace(d);
  g_assert_true(t->cost.set);
  guint pos = 0;
  for (guint i = 0; i < t->n_steps && !pos; i++)
    if (t->steps[i].kind == OX_STEP_APPLIED && !strcmp(t->steps[i].pass, "batch_linear")) pos = i + 1;
  g_assert_cmpuint(pos, >, 0);
  const OxStep *st = &t->steps[pos - 1];
  g_assert_true(st->cost.set);
  g_assert_cmpuint(st->cost.before.launches, ==, 5);
  g_assert_cmpuint(st->cost.after.launches, ==, 4);
  ox_window_show_panel(w, "checks");
  ox_document_set_position(d, 0);
  g_assert_null(strstr(ox_window_get_panel_markup(w, "checks"), "estimated cost"));
  ox_document_set_position(d, pos);
  g_assert_true(ox_document_get_step(d) == st);
  const char *m = ox_window_get_panel_markup(w, "checks");
  g_test_message("%s", m);
  g_assert_nonnull(strstr(m, "<b>estimated cost</b>  5 -&gt; 4 launches, 103.0 kB -&gt; 227.2 kB, 655.4 kFLOP -&gt; "
                             "655.4 kFLOP (est. "));
  /* a rejected record without a cost has no line */
  guint rej = 0;
  for (guint i = 0; i < t->n_steps && !rej; i++)
    if (t->steps[i].kind == OX_STEP_REJECTED && !t->steps[i].cost.set) rej = i + 1;
  g_assert_cmpuint(rej, >, 0);
  ox_document_set_position(d, rej);
  g_assert_null(strstr(ox_window_get_panel_markup(w, "checks"), "estimated cost"));
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
}

/* Why not? teaches: for relu_11, batch_linear's rejection (a set of 3 < min_fuse_set_size 5)
 * gets a hint that a real re-run confirmed, and applying it fuses the group; the sets of one
 * get no hint (the re-run refuted it); a guard no option controls says so. Links: nodes in
 * monospace, steps as #N. */
static void test_why_not_hints(void) {
  OxWindow *w = window_with_example();
  OxDocument *d = ox_window_get_document(w);
  const OxTrace *t = ox_document_get_trace(d);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.select-node", "s", "relu_11"));
  ox_window_show_panel(w, "why");
  g_assert_true(wait_until(cond_hints_done, w, 60000));
  const char *m = ox_window_get_panel_markup(w, "why");
  g_assert_cmpuint(ox_document_get_whatif_runs(d), >=, 2);
  /* the rejection of the three linears */
  guint pos3 = 0, pos1 = 0;
  for (guint i = 0; i < t->n_steps; i++) {
    const OxStep *st = &t->steps[i];
    if (st->kind != OX_STEP_REJECTED || st->reason.code != OX_REASON_SET_TOO_SMALL || g_strcmp0(st->anchor, "relu_11"))
      continue;
    if (!strcmp(st->pass, "batch_linear") && !strcmp(st->reason.args[0], "3")) pos3 = i + 1;
    if (!strcmp(st->reason.args[0], "1") && !pos1) pos1 = i + 1;
  }
  g_assert_cmpuint(pos3, >, 0);
  g_assert_cmpuint(pos1, >, 0);
  g_autofree char *b3 = record_block(m, pos3);
  g_assert_nonnull(b3);
  g_test_message("%s", b3);
  g_assert_nonnull(strstr(b3, "set of 3 &lt; min_fuse_set_size 5"));
  g_assert_nonnull(strstr(b3, "anchor <a href=\"node:relu_11\"><tt>relu_11</tt></a> <i>(this node)</i>"));
  g_assert_nonnull(strstr(b3, "3 candidates: <a href=\"node:linear_18\"><tt>linear_18</tt></a>"));
  g_assert_nonnull(strstr(b3, "with <tt>--option batch_linear.min_fuse_set_size=3</tt> this group would fuse"));
  g_assert_nonnull(strstr(b3, "checked by a re-run"));
  g_assert_nonnull(strstr(b3, "href=\"rerun:batch_linear.min_fuse_set_size=3\""));
  /* a set of one: refuted, no hint */
  g_autofree char *b1 = record_block(m, pos1);
  g_assert_nonnull(b1);
  g_test_message("%s", b1);
  g_assert_null(strstr(b1, "would fuse"));
  g_assert_null(strstr(b1, "href=\"rerun:"));
  g_assert_nonnull(strstr(b1, "does not make it fire"));
  g_assert_nonnull(strstr(b1, "no option change makes this fire"));
  /* the hinted option, checked independently: a plain run with it fuses relu_11's linears */
  {
    OxPipeline p;
    ox_pipeline_default(ox_document_get_history(d)->input, &p);
    OxDiagList dl;
    ox_diags_init(&dl, NULL);
    g_assert_cmpint(ox_pipeline_set_option(&p, "batch_linear.min_fuse_set_size=3", &dl), ==, 0);
    OxGraph *g = ox_graph_clone(ox_document_get_history(d)->input);
    OxTrace *pt = ox_trace_new_for(g);
    OxCheckConfig cc;
    ox_check_config_default(&cc);
    OxOptimizeResult res;
    g_assert_cmpint(ox_optimize(g, &p, &cc, pt, &res, &dl), ==, 0);
    gboolean fused = FALSE;
    for (guint i = 0; i < pt->n_steps; i++)
      fused |= pt->steps[i].kind == OX_STEP_APPLIED && !strcmp(pt->steps[i].pass, "batch_linear") &&
               !g_strcmp0(pt->steps[i].anchor, "relu_11");
    g_assert_true(fused);
    ox_trace_free(pt);
    ox_graph_free(g);
    ox_diags_clear(&dl);
    ox_pipeline_free(&p);
  }
  /* consistent links: every node link in monospace, every step link "#N" */
  for (const char *q = strstr(m, "href=\"node:"); q; q = strstr(q + 1, "href=\"node:")) {
    const char *gt = strchr(q, '>');
    g_assert_true(g_str_has_prefix(gt + 1, "<tt>"));
  }
  for (const char *q = strstr(m, "href=\"step:"); q; q = strstr(q + 1, "href=\"step:")) {
    const char *gt = strchr(q, '>');
    g_assert_cmpint(gt[1], ==, '#');
  }
  /* a guard no option controls: a pattern that does not match */
  const char *nomatch = NULL;
  for (guint i = 0; i < t->n_steps && !nomatch; i++)
    if (t->steps[i].kind == OX_STEP_REJECTED && t->steps[i].reason.code == OX_REASON_TARGET_MISMATCH) nomatch = t->steps[i].anchor;
  g_assert_nonnull(nomatch);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.select-node", "s", nomatch));
  g_assert_true(wait_until(cond_hints_done, w, 60000));
  g_assert_nonnull(strstr(ox_window_get_panel_markup(w, "why"), "no option controls this guard"));
  /* on a large graph a hint is checked when asked (here: every graph counts as large) */
  ox_window_set_hint_auto_max(w, 0);
  guint runs = ox_document_get_whatif_runs(d);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.optimize-with", "s", "batch_linear_lhs.counter=1"));
  g_assert_true(wait_until(cond_idle, w, 60000)); /* a new trace: the re-runs' answers are dropped */
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.select-node", "s", "relu_11"));
  settle(200);
  m = ox_window_get_panel_markup(w, "why");
  g_assert_nonnull(strstr(m, "href=\"whatif:batch_linear.min_fuse_set_size=3\">check by a re-run</a>"));
  g_assert_null(strstr(m, "would fuse"));
  g_assert_cmpuint(ox_document_get_whatif_runs(d), ==, runs);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.check-option", "s", "batch_linear.min_fuse_set_size=3"));
  g_assert_true(wait_until(cond_hints_done, w, 60000));
  gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  while (!strstr(ox_window_get_panel_markup(w, "why"), "would fuse") && g_get_monotonic_time() < end) settle(20);
  g_assert_nonnull(strstr(ox_window_get_panel_markup(w, "why"), "this group would fuse"));
  g_assert_cmpuint(ox_document_get_whatif_runs(d), ==, runs + 1);
  ox_window_set_hint_auto_max(w, 50000);
  /* the hint applied: the group fuses in the new run */
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.optimize-with", "s", "batch_linear.min_fuse_set_size=3"));
  g_assert_true(wait_until(cond_idle, w, 60000));
  t = ox_document_get_trace(d);
  gboolean fused = FALSE;
  for (guint i = 0; i < t->n_steps; i++)
    fused |= t->steps[i].kind == OX_STEP_APPLIED && !strcmp(t->steps[i].pass, "batch_linear") &&
             !g_strcmp0(t->steps[i].anchor, "relu_11");
  g_assert_true(fused);
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
}

#ifdef GDK_WINDOWING_X11
#include <gdk/x11/gdkx.h>
#endif

/* Runs xdotool with args on the window (its X id substituted for %W); FALSE when it cannot. */
static gboolean xdotool(OxWindow *w, const char *args) {
#ifdef GDK_WINDOWING_X11
  GdkSurface *surf = gtk_native_get_surface(GTK_NATIVE(w));
  if (!GDK_IS_X11_SURFACE(surf)) return FALSE;
  g_autofree char *xid = g_strdup_printf("%lu", (unsigned long)gdk_x11_surface_get_xid(surf));
  g_autoptr(GString) cmd = g_string_new("xdotool ");
  g_string_append(cmd, args);
  g_string_replace(cmd, "%W", xid, 0);
  int status = 1;
  gboolean ran = g_spawn_command_line_sync(cmd->str, NULL, NULL, &status, NULL);
  drain();
  return ran && g_spawn_check_wait_status(status, NULL);
#else
  (void)w;
  (void)args;
  return FALSE;
#endif
}

static GtkWidget *find_widget(GtkWidget *root, GType type) {
  if (G_TYPE_CHECK_INSTANCE_TYPE(root, type)) return root;
  for (GtkWidget *c = gtk_widget_get_first_child(root); c; c = gtk_widget_get_next_sibling(c)) {
    GtkWidget *r = find_widget(c, type);
    if (r) return r;
  }
  return NULL;
}

/* The timeline: the list view whose rows are OxStepRows (drop-downs have list views too). */
static GtkWidget *find_timeline(GtkWidget *root) {
  if (GTK_IS_LIST_VIEW(root)) {
    GtkWidget *c = gtk_widget_get_first_child(root);
    if (c && gtk_widget_get_first_child(c) && OX_IS_STEP_ROW(gtk_widget_get_first_child(c))) return root;
  }
  for (GtkWidget *c = gtk_widget_get_first_child(root); c; c = gtk_widget_get_next_sibling(c)) {
    GtkWidget *r = find_timeline(c);
    if (r) return r;
  }
  return NULL;
}

static gboolean cond_position(gpointer data) {
  gpointer *a = data;
  return ox_document_get_position(ox_window_get_document(a[0])) == GPOINTER_TO_UINT(a[1]);
}

/* Keys in the timeline, as a user types them (real X events through xdotool): after a click on
 * a row, Down/Right step forward, Up/Left back, End to the last step, Home to the input graph,
 * Space plays (the button shows pause) and pauses. */
static void test_timeline_keys(void) {
  if (!g_find_program_in_path("xdotool")) {
    g_test_skip("xdotool is not installed (tools/dev.sh installs it): no way to send real key events");
    return;
  }
  OxWindow *w = window_with_example();
  OxDocument *d = ox_window_get_document(w);
  if (!xdotool(w, "windowfocus --sync %W")) {
    g_test_skip("xdotool cannot focus the window (not an X11 display?)");
    gtk_window_destroy(GTK_WINDOW(w));
    return;
  }
  /* click the row of step 2 */
  GtkWidget *list = find_timeline(GTK_WIDGET(w));
  g_assert_nonnull(list);
  GtkWidget *row = NULL;
  for (GtkWidget *c = gtk_widget_get_first_child(list); c && !row; c = gtk_widget_get_next_sibling(c)) {
    GtkWidget *r = gtk_widget_get_first_child(c);
    if (r && GPOINTER_TO_UINT(g_object_get_data(G_OBJECT(r), "position")) == 2) row = c;
  }
  g_assert_nonnull(row);
  graphene_point_t pt;
  g_assert_true(gtk_widget_compute_point(row, GTK_WIDGET(w), &GRAPHENE_POINT_INIT(20, 8), &pt));
  /* widget coordinates of the window include its CSD shadow: the surface's are what X sees */
  double sx, sy;
  gtk_native_get_surface_transform(GTK_NATIVE(w), &sx, &sy);
  g_autofree char *click = g_strdup_printf("mousemove --window %%W %d %d click 1", (int)(pt.x + sx), (int)(pt.y + sy));
  g_assert_true(xdotool(w, click));
  gpointer want[2] = {w, GUINT_TO_POINTER(2)};
  g_assert_true(wait_until(cond_position, want, 5000));
  GtkWidget *focus = gtk_root_get_focus(GTK_ROOT(w));
  g_assert_nonnull(focus);
  g_assert_true(focus == list || gtk_widget_is_ancestor(focus, list));
  struct {
    const char *key;
    guint pos;
  } seq[] = {{"Down", 3}, {"Down", 4}, {"Right", 5}, {"Up", 4}, {"Left", 3}, {"End", ox_document_get_n_steps(d)},
             {"Home", 0}, {"Right", 1}, {"Down", 2}};
  for (guint i = 0; i < G_N_ELEMENTS(seq); i++) {
    g_autofree char *k = g_strdup_printf("key %s", seq[i].key);
    g_assert_true(xdotool(w, k));
    want[1] = GUINT_TO_POINTER(seq[i].pos);
    if (!wait_until(cond_position, want, 5000))
      g_test_message("after %s: position %u, want %u", seq[i].key, ox_document_get_position(d), seq[i].pos);
    g_assert_cmpuint(ox_document_get_position(d), ==, seq[i].pos);
    /* the focus stays in the timeline, on the current step's row once it is built */
    focus = gtk_root_get_focus(GTK_ROOT(w));
    g_assert_true(focus && (focus == list || gtk_widget_is_ancestor(focus, list)));
  }
  settle(200);
  focus = gtk_root_get_focus(GTK_ROOT(w));
  GtkWidget *frow = focus ? gtk_widget_get_first_child(focus) : NULL;
  g_assert_true(frow && OX_IS_STEP_ROW(frow));
  g_assert_cmpuint(GPOINTER_TO_UINT(g_object_get_data(G_OBJECT(frow), "position")), ==, 2);
  /* Space plays and pauses; the button says which */
  g_assert_cmpstr(ox_window_get_play_icon(w), ==, "media-playback-start-symbolic");
  g_assert_true(xdotool(w, "key space"));
  GVariant *st = g_action_group_get_action_state(G_ACTION_GROUP(w), "play");
  g_assert_true(g_variant_get_boolean(st));
  g_variant_unref(st);
  g_assert_cmpstr(ox_window_get_play_icon(w), ==, "media-playback-pause-symbolic");
  want[1] = GUINT_TO_POINTER(3);
  g_assert_true(wait_until(cond_position, want, 5000)); /* one step per 0.7 s */
  g_assert_true(xdotool(w, "key space"));
  st = g_action_group_get_action_state(G_ACTION_GROUP(w), "play");
  g_assert_false(g_variant_get_boolean(st));
  g_variant_unref(st);
  g_assert_cmpstr(ox_window_get_play_icon(w), ==, "media-playback-start-symbolic");
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
}

static gboolean cond_resized(gpointer data) {
  gpointer *a = data;
  return gtk_widget_get_width(GTK_WIDGET(a[0])) == GPOINTER_TO_INT(a[1]);
}

/* The window's layout holds still: the panels open at their width whatever the window's width
 * (they took all the extra width of a large window) and keep it while the optimization runs;
 * after a cancel the status says so; a fitted view fits again when the window is resized, a
 * zoomed one keeps its zoom. */
static void test_layout_stable(void) {
  g_autofree char *dir = g_dir_make_tmp("ox-ui-layout-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "r.txt", NULL);
  g_autofree char *cmd = g_strdup_printf("%s --nodes 30000 --seed 3 -o %s", g_getenv("OX_GEN_RECSYS"), path);
  g_assert_true(g_spawn_command_line_sync(cmd, NULL, NULL, NULL, NULL));
  int widths[] = {1000, 1500, 1900};
  int panel0 = 0;
  for (guint k = 0; k < G_N_ELEMENTS(widths); k++) {
    OxWindow *w = ox_window_new(NULL);
    gtk_window_set_default_size(GTK_WINDOW(w), widths[k], 800);
    gtk_window_present(GTK_WINDOW(w));
    drain();
    OxDocument *d = ox_window_get_document(w);
    g_assert_true(ox_window_open(w, path, NULL));
    int lo = G_MAXINT, hi = 0;
    gint64 end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while ((ox_document_get_busy(d) || !ox_graph_view_is_laid_out(ox_window_get_view(w))) &&
           g_get_monotonic_time() < end) {
      g_main_context_iteration(NULL, FALSE);
      int pw = ox_window_get_panel_width(w);
      if (pw > 1) {
        lo = MIN(lo, pw);
        hi = MAX(hi, pw);
      }
    }
    g_assert_false(ox_document_get_busy(d));
    settle(100);
    int pw = ox_window_get_panel_width(w);
    g_test_message("window %d px: panels %d..%d px during the optimization, %d after", widths[k], lo, hi, pw);
    if (lo <= hi) g_assert_cmpint(hi - lo, <=, 1);
    g_assert_cmpint(pw, ==, hi);
    if (!k) panel0 = pw;
    g_assert_cmpint(pw, ==, panel0);                /* the same width in every window size */
    g_assert_cmpint(pw, <, widths[k] * 45 / 100);   /* never half the window */
    if (k == 1) {
      /* cancel: the status says "cancelled", not "cancelled or failed" */
      g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.optimize", NULL));
      g_assert_true(ox_document_get_busy(d));
      g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.cancel", NULL));
      g_assert_true(wait_until(cond_idle, w, 60000));
      g_test_message("status after cancel: %s", ox_window_get_status_text(w));
      g_assert_cmpstr(ox_document_get_status(d), ==, "optimization cancelled");
      g_assert_nonnull(strstr(ox_window_get_status_text(w), "optimization cancelled"));
      g_assert_null(strstr(ox_window_get_status_text(w), "or failed"));
    }
    if (k == 2) {
      /* resizing: a fitted view fits again, a zoomed one keeps its zoom */
      OxGraphView *v = ox_window_get_view(w);
      g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.fit", NULL));
      g_assert_true(ox_graph_view_get_fitted(v));
      double z0 = ox_graph_view_get_zoom(v);
      int vw0 = gtk_widget_get_width(GTK_WIDGET(v));
      gtk_window_set_default_size(GTK_WINDOW(w), 1200, 650);
      gpointer want[2] = {v, GINT_TO_POINTER(vw0 - 700)};
      if (!wait_until(cond_resized, want, 3000) && !xdotool(w, "windowsize --sync %W 1200 650")) {
        g_test_message("the window could not be resized here (%d px canvas)", gtk_widget_get_width(GTK_WIDGET(v)));
      }
      settle(300);
      int vw1 = gtk_widget_get_width(GTK_WIDGET(v));
      g_test_message("canvas %d -> %d px, zoom %.3f -> %.3f", vw0, vw1, z0, ox_graph_view_get_zoom(v));
      g_assert_cmpint(vw1, <, vw0);
      g_assert_true(ox_graph_view_get_fitted(v));
      g_assert_cmpfloat(ox_graph_view_get_zoom(v), <, z0);
      g_assert_cmpint(ox_window_get_panel_width(w), ==, panel0); /* the canvas took the change */
      g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.zoom-in", NULL));
      g_assert_false(ox_graph_view_get_fitted(v));
      double z1 = ox_graph_view_get_zoom(v);
      gtk_window_set_default_size(GTK_WINDOW(w), 1500, 800);
      if (!xdotool(w, "windowsize --sync %W 1500 800")) settle(300);
      settle(300);
      g_assert_cmpfloat(fabs(ox_graph_view_get_zoom(v) - z1), <, 1e-9);
    }
    gtk_window_destroy(GTK_WINDOW(w));
    drain();
  }
  g_unlink(path);
  g_rmdir(dir);
}

/* The example with every shape annotation stripped: a print(graph) paste. */
static char *write_paste(const char *dir) {
  g_autofree char *src = example("recsys-towers.txt");
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(src, &text, NULL, NULL));
  GRegex *re = g_regex_new(" Tensor \"[^\"]*\"", 0, 0, NULL);
  g_autofree char *plain = g_regex_replace_literal(re, text, -1, 0, "", 0, NULL);
  g_regex_unref(re);
  char *path = g_build_filename(dir, "paste_towers.txt", NULL);
  g_assert_true(g_file_set_contents(path, plain, -1, NULL));
  return path;
}

static guint count_applied_batch(const OxTrace *t, guint *meta_missing) {
  guint n = 0;
  *meta_missing = 0;
  for (guint i = 0; t && i < t->n_steps; i++) {
    n += t->steps[i].kind == OX_STEP_APPLIED && g_str_has_prefix(t->steps[i].pass, "batch_");
    *meta_missing += t->steps[i].reason.code == OX_REASON_META_MISSING;
  }
  return n;
}

static const char *menu_label_for(GMenuModel *m, const char *path) {
  static char label[512];
  for (int i = 0; i < g_menu_model_get_n_items(m); i++) {
    GVariant *target = g_menu_model_get_item_attribute_value(m, i, G_MENU_ATTRIBUTE_TARGET, G_VARIANT_TYPE_STRING);
    gboolean hit = target && !strcmp(g_variant_get_string(target, NULL), path);
    if (target) g_variant_unref(target);
    char *l = NULL;
    if (hit && g_menu_model_get_item_attribute(m, i, G_MENU_ATTRIBUTE_LABEL, "s", &l)) {
      g_strlcpy(label, l, sizeof label);
      g_free(l);
      return label;
    }
  }
  return NULL;
}

/* Shapes in the window: a paste without shapes batches nothing (meta missing); given x's shape
 * in the window (the same spec as --input-shape) it is optimized again and batches; the shapes
 * are remembered for the file (a later open applies them, the dialog shows them, Open Recent
 * says so); shapes that no longer apply open the file without them, saying so. */
static void test_shapes(void) {
  g_autofree char *dir = g_dir_make_tmp("ox-ui-shapes-XXXXXX", NULL);
  g_autofree char *paste = write_paste(dir);
  OxWindow *w = new_window();
  OxDocument *d = ox_window_get_document(w);
  g_assert_true(ox_window_open(w, paste, NULL));
  g_assert_true(wait_until(cond_idle, w, 30000));
  guint mm = 0, applied = count_applied_batch(ox_document_get_trace(d), &mm);
  g_test_message("without shapes: %u batch steps, %u 'meta missing'", applied, mm);
  g_assert_cmpuint(applied, ==, 0);
  g_assert_cmpuint(mm, >, 0);
  g_assert_true(action_enabled(w, "shapes"));
  const char *specs[] = {"x=64,224", NULL};
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.apply-shapes", "(^ass)", specs, ""));
  g_assert_true(wait_until(cond_idle, w, 30000));
  applied = count_applied_batch(ox_document_get_trace(d), &mm);
  g_test_message("with x=64,224: %u batch steps; status %s", applied, ox_window_get_status_text(w));
  g_assert_cmpuint(applied, >, 0);
  g_assert_nonnull(strstr(ox_window_get_status_text(w), "parameters inferred from their uses"));
  /* remembered: another window opening the file gets them */
  OxWindow *w2 = new_window();
  OxDocument *d2 = ox_window_get_document(w2);
  g_assert_true(ox_window_open(w2, paste, NULL));
  g_assert_true(wait_until(cond_idle, w2, 30000));
  const char *const *ls = ox_document_get_loaded_specs(d2);
  g_assert_nonnull(ls);
  g_assert_cmpstr(ls[0], ==, "x=64,224");
  g_assert_cmpuint(count_applied_batch(ox_document_get_trace(d2), &mm), ==, applied);
  /* the dialog shows them */
  GtkWidget *dlg = ox_window_shapes_dialog_new(w2);
  GtkWidget *tv = find_widget(dlg, GTK_TYPE_TEXT_VIEW);
  GtkTextIter a, b;
  GtkTextBuffer *buf = gtk_text_view_get_buffer(GTK_TEXT_VIEW(tv));
  gtk_text_buffer_get_bounds(buf, &a, &b);
  g_autofree char *shown = gtk_text_buffer_get_text(buf, &a, &b, FALSE);
  g_assert_cmpstr(shown, ==, "x=64,224");
  gtk_window_destroy(GTK_WINDOW(dlg));
  /* Open Recent names the folder and says the shapes go with it */
  g_autofree char *abs = g_canonicalize_filename(paste, NULL);
  const char *label = menu_label_for(ox_window_get_recent_menu(w2), abs);
  g_assert_nonnull(label);
  g_test_message("Open Recent: %s", label);
  g_autofree char *base = g_path_get_basename(dir);
  g_assert_nonnull(strstr(label, "paste__towers.txt — ")); /* '_' doubled: not a mnemonic */
  g_assert_nonnull(strstr(label, base));
  g_assert_nonnull(strstr(label, "with shapes"));
  /* a spec that no longer fits the file: opened without, and the status says why */
  const char *bad[] = {"no_such_input=3", NULL};
  g_assert_false(ox_window_apply_shapes(w2, bad, NULL)); /* refused: the file stays as it was */
  close_dialogs();
  g_assert_cmpstr(ox_document_get_loaded_specs(d2)[0], ==, "x=64,224");
  /* the file changes so that the remembered shapes no longer apply: it opens without them */
  g_assert_true(g_file_set_contents(paste,
                                    "graph():\n"
                                    "    %y : [num_users=1] = placeholder[target=y]\n"
                                    "    %r : [num_users=1] = call_function[target=torch.relu](args = (%y,), kwargs = {})\n"
                                    "    return (r,)\n",
                                    -1, NULL));
  g_assert_true(ox_window_open(w2, paste, NULL));
  g_assert_true(wait_until(cond_idle, w2, 30000));
  g_test_message("changed file: %s", ox_window_get_status_text(w2));
  g_assert_nonnull(strstr(ox_window_get_status_text(w2), "the shapes remembered for this file no longer apply"));
  g_assert_null(ox_document_get_loaded_specs(d2));
  gtk_window_destroy(GTK_WINDOW(w2));
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
  g_unlink(paste);
  g_rmdir(dir);
}

/* Open Recent brings back the trace that went with the graph; a trace that is gone is said so
 * and the graph is optimized again. The status line counts nodes as `optimus info` does. */
static void test_recent_trace(void) {
  g_autofree char *dir = g_dir_make_tmp("ox-ui-recent-XXXXXX", NULL);
  g_autofree char *graph = g_build_filename(dir, "towers.txt", NULL);
  g_autofree char *trace = g_build_filename(dir, "towers.trace.json", NULL);
  g_autofree char *sg = example("recsys-towers.txt"), *st = example("recsys-towers.trace.json");
  g_autofree char *gt = NULL, *tt = NULL;
  g_assert_true(g_file_get_contents(sg, &gt, NULL, NULL));
  g_assert_true(g_file_get_contents(st, &tt, NULL, NULL));
  g_assert_true(g_file_set_contents(graph, gt, -1, NULL));
  g_assert_true(g_file_set_contents(trace, tt, -1, NULL));
  OxWindow *w = new_window();
  OxDocument *d = ox_window_get_document(w);
  g_assert_true(ox_window_open(w, graph, trace));
  g_assert_true(wait_until(cond_idle, w, 30000));
  g_assert_nonnull(ox_document_get_trace_path(d));
  g_autofree char *abs = g_canonicalize_filename(graph, NULL);
  const char *label = menu_label_for(ox_window_get_recent_menu(w), abs);
  g_assert_nonnull(label);
  g_test_message("Open Recent: %s", label);
  g_assert_nonnull(strstr(label, "with its trace"));
  /* something else, then back through Open Recent */
  g_autofree char *other = src_path("tests", "data", "ui/relu-chain.txt");
  g_assert_true(ox_window_open(w, other, NULL));
  g_assert_true(wait_until(cond_idle, w, 30000));
  g_assert_null(ox_document_get_trace_path(d));
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.open-recent", "s", abs));
  g_assert_true(wait_until(cond_idle, w, 30000));
  g_assert_nonnull(ox_document_get_trace_path(d));
  g_autofree char *tabs = g_canonicalize_filename(trace, NULL);
  g_assert_cmpstr(ox_document_get_trace_path(d), ==, tabs);
  /* the status line's count is optimus info's */
  g_autofree char *cmd = g_strdup_printf("%s info --json %s", g_getenv("OPTIMUS_CLI"), graph);
  g_autofree char *out = NULL;
  g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, NULL, NULL));
  const char *nodes = strstr(out, "\n  \"nodes\": ");
  g_assert_nonnull(nodes);
  guint info_nodes = (guint)g_ascii_strtoull(nodes + 12, NULL, 10);
  g_autofree char *want = g_strdup_printf(" · %u nodes", info_nodes);
  g_test_message("status: %s (optimus info: %u nodes)", ox_window_get_status_text(w), info_nodes);
  g_assert_nonnull(strstr(ox_window_get_status_text(w), want));
  /* the trace removed: the graph opens, optimized again, and the status says why */
  g_unlink(trace);
  g_assert_true(ox_window_open(w, other, NULL));
  g_assert_true(wait_until(cond_idle, w, 30000));
  g_assert_true(ox_window_open_recent(w, abs));
  g_assert_true(wait_until(cond_idle, w, 30000));
  g_assert_null(ox_document_get_trace_path(d));
  g_assert_nonnull(ox_document_get_trace(d));
  g_assert_nonnull(strstr(ox_window_get_status_text(w), "its trace towers.trace.json is gone"));
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
  g_unlink(graph);
  g_rmdir(dir);
}

static guint count_lines(const char *s) {
  guint n = 0;
  for (; s && *s; s++) n += *s == '\n';
  return n;
}

/* Open Rules: the dialog filters *.rules and starts in the last rules folder (in a new window
 * too, from the recent-files store); a binary file is one clear error; a file with many errors
 * shows ten and counts the rest; a user rule's steps carry its file:line in the timeline and the
 * Checks panel. */
static void test_rules_dialog(void) {
  OxWindow *w = new_window();
  g_autofree char *graph = src_path("tests", "data", "rules/batch-gelu.txt");
  g_assert_true(ox_window_open(w, graph, NULL));
  g_assert_true(wait_until(cond_ready, w, 20000));
  g_autofree char *dir = g_dir_make_tmp("ox-ui-rules-XXXXXX", NULL);
  g_autofree char *src = src_path("data", "rules", "batch-gelu.rules");
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(src, &text, NULL, NULL));
  g_autofree char *path = g_build_filename(dir, "mine.rules", NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  g_assert_true(ox_window_open_rules(w, path));
  g_assert_true(wait_until(cond_steps_from_rule, w, 20000));
  /* file:line of the rule in the row and in the Checks panel */
  OxDocument *d = ox_window_get_document(w);
  const OxTrace *t = ox_document_get_trace(d);
  guint pos = 0;
  for (guint i = 0; i < t->n_steps && !pos; i++)
    if (t->steps[i].kind == OX_STEP_APPLIED && t->steps[i].rule_file) pos = i + 1;
  const OxStep *st = &t->steps[pos - 1];
  g_autofree char *loc = g_strdup_printf("mine.rules:%u", st->rule_line);
  g_assert_cmpuint(st->rule_line, >, 0);
  GListModel *tl = ox_document_get_timeline(d);
  guint row = ox_document_timeline_row(d, pos);
  g_autoptr(OxStepItem) it = g_list_model_get_item(tl, row);
  g_test_message("row: %s / %s", it->title, it->subtitle);
  g_assert_nonnull(strstr(it->title, loc));
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.goto-step", "u", pos));
  g_autofree char *written = g_strdup_printf("written at <tt>%s</tt>", loc);
  g_assert_nonnull(strstr(ox_window_get_panel_markup(w, "checks"), written));
  /* the dialog: *.rules first, then everything; in this folder */
  GtkNativeDialog *dlg = ox_window_rules_dialog_new(w);
  drain(); /* the chooser settles on its folder in the main loop */
  GtkFileFilter *f = gtk_file_chooser_get_filter(GTK_FILE_CHOOSER(dlg));
  g_assert_nonnull(f);
  g_assert_cmpstr(gtk_file_filter_get_name(f), ==, "Rule files (*.rules)");
  g_assert_cmpuint(g_list_model_get_n_items(gtk_file_chooser_get_filters(GTK_FILE_CHOOSER(dlg))), ==, 2);
  g_autofree char *rdir = g_canonicalize_filename(dir, NULL);
  g_autofree char *fp = ox_window_get_rules_folder(w);
  g_assert_cmpstr(fp, ==, rdir);
  g_object_unref(dlg);
  /* a new window remembers it (the recent-files store) */
  OxWindow *w2 = new_window();
  g_assert_true(ox_window_open(w2, graph, NULL));
  g_assert_true(wait_until(cond_ready, w2, 20000));
  g_autofree char *fp2 = ox_window_get_rules_folder(w2);
  g_assert_cmpstr(fp2, ==, rdir);
  /* a binary file: one error */
  g_autofree char *bin = g_build_filename(dir, "a.out.rules", NULL);
  const char elf[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0\x01\0\0\0";
  g_assert_true(g_file_set_contents(bin, elf, sizeof elf, NULL));
  g_assert_false(ox_window_open_rules(w2, bin));
  const char *err = ox_window_get_last_error(w2);
  g_test_message("binary: %s", err);
  g_assert_nonnull(strstr(err, "is not a rule file: it holds binary data (byte 0x7f at offset 0)"));
  g_assert_cmpuint(count_lines(err), ==, 0);
  close_dialogs();
  /* many errors: ten, then a count */
  GString *many = g_string_new(NULL);
  for (int i = 0; i < 25; i++) g_string_append_printf(many, "rule r%d {\n  match: relu(x) ?\n  replace: x\n}\n", i);
  g_autofree char *mp = g_build_filename(dir, "many.rules", NULL);
  g_assert_true(g_file_set_contents(mp, many->str, -1, NULL));
  g_string_free(many, TRUE);
  g_assert_false(ox_window_open_rules(w2, mp));
  err = ox_window_get_last_error(w2);
  g_test_message("many: %s", err);
  guint shown = 0;
  for (const char *q = strstr(err, "many.rules:"); q; q = strstr(q + 1, "many.rules:")) shown++;
  g_assert_cmpuint(shown, ==, 10);
  g_assert_nonnull(strstr(err, "more errors ("));
  close_dialogs();
  gtk_window_destroy(GTK_WINDOW(w2));
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
  g_unlink(path);
  g_unlink(bin);
  g_unlink(mp);
  g_rmdir(dir);
}

static gboolean cond_whatif_done(gpointer w) {
  const char *t = ox_window_get_whatif_text(w);
  return strstr(t, "fewer rewrites") || strstr(t, "What-if failed");
}

/* The timeline row widget bound to position pos (NULL when it is not bound: off screen). */
static GtkWidget *timeline_row(GtkWidget *root, guint pos) {
  if (OX_IS_STEP_ROW(root) && GPOINTER_TO_UINT(g_object_get_data(G_OBJECT(root), "position")) == pos) return root;
  for (GtkWidget *c = gtk_widget_get_first_child(root); c; c = gtk_widget_get_next_sibling(c)) {
    GtkWidget *r = timeline_row(c, pos);
    if (r) return r;
  }
  return NULL;
}

/* The What if? tab: an option typed in the entry re-runs in the background and the tab shows
 * the same decisions as ox_whatif_run computes directly (the batch_linear group of three at
 * relu_11 fuses with min_fuse_set_size=3); its record in the timeline turns green; refusing an
 * applied step (win.whatif-refuse) makes it newly rejected, shown as refused and grey; a bad
 * option is an error in the tab; a rejected record cannot be refused. */
static void test_whatif_tab(void) {
  OxWindow *w = window_with_example();
  OxDocument *d = ox_window_get_document(w);
  const OxTrace *t = ox_document_get_trace(d);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.panel", "s", "whatif"));
  g_assert_nonnull(strstr(ox_window_get_whatif_text(w), "Type pass options"));

  /* an option */
  ox_window_set_whatif_options(w, "batch_linear.min_fuse_set_size=3");
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.whatif-run", NULL));
  g_assert_true(wait_until(cond_whatif_done, w, 60000));
  const char *m = ox_window_get_whatif_text(w);
  g_test_message("%s", m);
  const char *opts[] = {"batch_linear.min_fuse_set_size=3"};
  OxWhatifSpec spec = {.options = opts, .n_options = 1};
  OxWhatifResult r;
  GError *err = NULL;
  g_assert_true(ox_document_whatif(d, &spec, &r, &err));
  g_assert_cmpuint(r.n_newly_applied, >=, 1);
  g_autofree char *head = g_strdup_printf("<b>%u more and %u fewer rewrites</b>; nodes %u → %u", r.n_newly_applied,
                                          r.n_newly_rejected, r.base_nodes, r.alt_nodes);
  g_assert_nonnull(strstr(m, head));
  g_assert_nonnull(strstr(m, "<b>This run</b> | <b>What-if</b>"));
  /* every decision is a row; the gained one's base record is batch_linear's rejection at relu_11 */
  guint gained = 0;
  for (guint i = 0; i < r.n_decisions; i++) {
    const OxStep *b = ox_whatif_base_step(&r, &r.decisions[i]);
    if (r.decisions[i].change == OX_WHATIF_NEWLY_APPLIED && b && b->kind == OX_STEP_REJECTED &&
        !g_strcmp0(b->pass, "batch_linear") && !g_strcmp0(b->anchor, "relu_11"))
      gained = b->seq + 1;
  }
  g_assert_cmpuint(gained, >, 0);
  g_autofree char *link = g_strdup_printf("href=\"step:%u\"", gained);
  g_assert_nonnull(strstr(m, link));
  g_assert_nonnull(strstr(m, "applied</span>: −"));
  ox_whatif_result_free(&r);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.goto-step", "u", gained));
  settle(300);
  GtkWidget *row = timeline_row(GTK_WIDGET(w), gained);
  g_assert_nonnull(row);
  g_assert_true(gtk_widget_has_css_class(row, "whatif-gained"));

  /* a rejected record cannot be refused */
  g_assert_false(g_action_group_get_action_enabled(G_ACTION_GROUP(w), "whatif-refuse"));

  /* refuse the first applied step, no option */
  guint applied = 0;
  for (guint i = 0; i < t->n_steps && !applied; i++)
    if (t->steps[i].kind == OX_STEP_APPLIED) applied = i + 1;
  g_assert_cmpuint(applied, >, 0);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.goto-step", "u", applied));
  settle(200);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.whatif-refuse", NULL));
  settle(100);
  row = timeline_row(GTK_WIDGET(w), applied);
  g_assert_nonnull(row);
  g_assert_true(gtk_widget_has_css_class(row, "whatif-refused"));
  ox_window_set_whatif_options(w, "");
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.whatif-run", NULL));
  g_assert_true(wait_until(cond_whatif_done, w, 60000));
  m = ox_window_get_whatif_text(w);
  g_test_message("%s", m);
  g_assert_null(strstr(m, "What-if failed"));
  g_assert_nonnull(strstr(m, "refused</b></span> by you"));
  g_autofree char *alink = g_strdup_printf("href=\"step:%u\"", applied);
  g_assert_nonnull(strstr(m, alink));
  /* the same refusal through the engine: as many fewer rewrites */
  uint32_t skip = applied - 1;
  OxWhatifSpec spec2 = {.skip = &skip, .n_skip = 1};
  g_assert_true(ox_document_whatif(d, &spec2, &r, &err));
  g_assert_cmpuint(r.n_newly_rejected, >=, 1);
  g_autofree char *head2 = g_strdup_printf("<b>%u more and %u fewer rewrites</b>", r.n_newly_applied, r.n_newly_rejected);
  g_assert_nonnull(strstr(m, head2));
  ox_whatif_result_free(&r);
  /* taking it back */
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.whatif-refuse", NULL));
  settle(100);
  row = timeline_row(GTK_WIDGET(w), applied);
  g_assert_nonnull(row);
  g_assert_false(gtk_widget_has_css_class(row, "whatif-refused"));

  /* a bad option */
  ox_window_set_whatif_options(w, "batch_linear.no_such_option=1");
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.whatif-run", NULL));
  g_assert_true(wait_until(cond_whatif_done, w, 60000));
  m = ox_window_get_whatif_text(w);
  g_test_message("%s", m);
  g_assert_nonnull(strstr(m, "What-if failed"));
  g_assert_nonnull(strstr(m, "no_such_option"));
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
}

static gboolean cond_compared(gpointer w) {
  const char *t = ox_window_get_compare_text(w);
  return strstr(t, "records agree") || strstr(t, "#c01c28");
}

/* Compare with another trace: B (batch_linear.min_fuse_set_size=3, made by the CLI) opens
 * beside A; the header counts what ox_compare_traces counts; stepping A moves B to the aligned
 * record; selecting in A selects in B; A's differing records are marked in the timeline; a trace
 * that cannot be read is an error in the pane; close removes it. */
static void test_compare_traces(void) {
  OxWindow *w = window_with_example();
  OxDocument *d = ox_window_get_document(w);
  g_autofree char *dir = g_dir_make_tmp("ox-ui-compare-XXXXXX", NULL);
  g_autofree char *graph = example("recsys-towers.txt");
  g_autofree char *out = g_build_filename(dir, "b.txt", NULL);
  g_autofree char *tb = g_build_filename(dir, "b.trace.json", NULL);
  const char *argv[] = {g_getenv("OPTIMUS_CLI"), "optimize", graph, "-o", out, "--trace", tb,
                        "--option", "batch_linear.min_fuse_set_size=3", NULL};
  if (!argv[0]) {
    g_test_skip("OPTIMUS_CLI is not set (meson test sets it)");
    gtk_window_destroy(GTK_WINDOW(w));
    return;
  }
  int status = -1;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                             NULL, NULL, NULL, &status, NULL));
  g_assert_cmpint(status, ==, 0);
  g_assert_false(ox_window_compare_active(w));
  GError *err = NULL;
  g_assert_true(ox_window_compare_open(w, tb, &err));
  g_assert_no_error(err);
  g_assert_true(ox_window_compare_active(w));
  g_assert_true(wait_until(cond_compared, w, 60000));
  const char *m = ox_window_get_compare_text(w);
  g_test_message("%s", m);
  OxDocument *b = ox_window_get_compare_document(w);
  g_assert_nonnull(b);
  const OxTrace *ta = ox_document_get_trace(d), *tbt = ox_document_get_trace(b);
  g_assert_nonnull(tbt);
  OxCompareResult r;
  ox_compare_traces(ta, tbt, &r);
  g_assert_cmpuint(r.n_only_a + r.n_only_b + r.n_differs, >, 0);
  g_autofree char *counts = g_strdup_printf("%u records agree; %u only here in A (%u applied), %u only in B (%u applied), "
                                            "%u end otherwise",
                                            r.n_same, r.n_only_a, r.n_only_a_applied, r.n_only_b, r.n_only_b_applied,
                                            r.n_differs);
  g_assert_nonnull(strstr(m, counts));
  /* the Passes panel gives the other run's counts where they differ: batch_linear applies more
   * with min_fuse_set_size 3 */
  {
    OxCoverage *ca = ox_coverage_of(ta), *cb = ox_coverage_of(tbt);
    const OxCoverageRow *la = ox_coverage_find_row(ca, "pre", "batch_linear", "batch_linear"),
                        *lb = ox_coverage_find_row(cb, "pre", "batch_linear", "batch_linear");
    g_assert_nonnull(la);
    g_assert_nonnull(lb);
    g_assert_cmpuint(lb->applied, >, la->applied);
    const char *pm = ox_window_get_panel_markup(w, "passes");
    g_assert_nonnull(strstr(pm, "beside <b>b.trace.json</b>"));
    g_autofree char *moved = g_strdup_printf("%u applied</span> → <b>%u</b>", la->applied, lb->applied);
    g_assert_nonnull(strstr(pm, moved));
    ox_coverage_free(ca);
    ox_coverage_free(cb);
  }
  /* stepping A moves B to the aligned record */
  guint checked = 0, marked = 0;
  for (guint s = 0; s < ta->n_steps && checked < 6; s++) {
    if (r.a_to_b[s] == OX_COMPARE_NONE || ta->steps[s].kind != OX_STEP_APPLIED) continue;
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.goto-step", "u", s + 1));
    drain();
    g_assert_cmpuint(ox_document_get_position(b), ==, r.a_to_b[s] + 1);
    checked++;
  }
  g_assert_cmpuint(checked, >, 0);
  /* a differing record of A is marked in its timeline row */
  for (guint i = 0; i < r.n && !marked; i++) {
    const OxCompareEntry *e = &r.entries[i];
    if (e->kind == OX_COMPARE_ONLY_B) continue;
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.goto-step", "u", e->a_seq + 1));
    settle(250);
    GtkWidget *row = timeline_row(GTK_WIDGET(w), e->a_seq + 1);
    g_assert_nonnull(row);
    g_assert_true(gtk_widget_has_css_class(row, e->kind == OX_COMPARE_ONLY_A ? "compare-only" : "compare-differs"));
    /* B shows the aligned record before it (or the input graph) */
    guint want = 0;
    for (guint s = e->a_seq + 1; s > 0 && !want; s--)
      if (r.a_to_b[s - 1] != OX_COMPARE_NONE) want = r.a_to_b[s - 1] + 1;
    g_assert_cmpuint(ox_document_get_position(b), ==, want);
    marked++;
  }
  g_assert_cmpuint(marked, ==, 1);
  /* selection follows */
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.select-node", "s", "relu_11"));
  drain();
  g_assert_cmpstr(ox_document_get_selected(b), ==, "relu_11");
  ox_compare_result_free(&r);
  /* close */
  g_assert_true(g_action_group_get_action_enabled(G_ACTION_GROUP(w), "compare-close"));
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.compare-close", NULL));
  g_assert_null(strstr(ox_window_get_panel_markup(w, "passes"), "beside <b>")); /* this run's alone again */
  drain();
  g_assert_false(ox_window_compare_active(w));
  g_assert_null(ox_window_get_compare_document(w));
  /* a trace that is not there: the pane says why */
  g_autofree char *missing = g_build_filename(dir, "missing.trace.json", NULL);
  g_assert_true(ox_window_compare_open(w, missing, &err));
  g_assert_true(wait_until(cond_compared, w, 30000));
  m = ox_window_get_compare_text(w);
  g_test_message("%s", m);
  g_assert_nonnull(strstr(m, "missing.trace.json"));
  g_assert_nonnull(strstr(m, "#c01c28"));
  ox_window_compare_close(w);
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
  g_unlink(tb);
  g_unlink(out);
  g_rmdir(dir);
}

static gboolean cond_diff_trace(gpointer w) {
  OxDocument *d = ox_window_get_document(w);
  const OxTrace *t = ox_document_get_trace(d);
  return !ox_document_get_busy(d) && t && t->n_steps && !g_strcmp0(t->steps[0].pass, "diff");
}

/* Diff with Graph: the example against its optimized dump (made by the CLI) becomes this graph's
 * run, one step per region of the diff; its last step shows a graph with no difference left from
 * the optimized dump; the status line says what the diff is. */
static void test_diff_graph(void) {
  const char *cli = g_getenv("OPTIMUS_CLI");
  if (!cli) {
    g_test_skip("OPTIMUS_CLI is not set (meson test sets it)");
    return;
  }
  OxWindow *w = window_with_example();
  OxDocument *d = ox_window_get_document(w);
  g_autofree char *dir = g_dir_make_tmp("ox-ui-diff-XXXXXX", NULL);
  g_autofree char *graph = example("recsys-towers.txt");
  g_autofree char *out = g_build_filename(dir, "optimized.txt", NULL);
  const char *argv[] = {cli, "optimize", graph, "-o", out, NULL};
  int status = -1;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                             NULL, NULL, NULL, &status, NULL));
  g_assert_cmpint(status, ==, 0);
  GError *err = NULL;
  g_assert_true(ox_window_diff_open(w, out, &err));
  g_assert_no_error(err);
  g_assert_true(wait_until(cond_diff_trace, w, 60000));
  const OxTrace *t = ox_document_get_trace(d);
  OxDiagList dl;
  ox_diags_init(&dl, out);
  OxDoc *b = NULL;
  g_assert_cmpint(ox_load_file(out, OX_FMT_UNKNOWN, NULL, &b, &dl), ==, 0);
  OxGraphDiff gd;
  ox_graph_diff(ox_document_get_history(d)->input, b->graphs[0], &gd);
  g_assert_cmpuint(t->n_steps, ==, gd.n_regions);
  g_assert_cmpuint(t->n_applied, ==, gd.n_regions);
  g_autofree char *note = g_strdup_printf("diff to optimized.txt: %u region", gd.n_regions);
  g_test_message("%s", ox_window_get_status_text(w));
  g_assert_nonnull(strstr(ox_window_get_status_text(w), note));
  ox_graph_diff_free(&gd);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.step-last", NULL));
  drain();
  ox_graph_diff(ox_document_get_graph(d), b->graphs[0], &gd);
  g_assert_cmpuint(gd.n_changed + gd.n_added + gd.n_removed, ==, 0);
  ox_graph_diff_free(&gd);
  /* asked while the graph, opened without a trace, is still being optimized (optimus-debugger
   * GRAPH --diff B): the optimization stops and the diff opens when the document is idle */
  OxWindow *w2 = new_window();
  g_assert_true(ox_window_open(w2, graph, NULL));
  g_assert_true(ox_document_get_busy(ox_window_get_document(w2)));
  g_assert_true(ox_window_diff_open(w2, out, &err));
  g_assert_no_error(err);
  g_assert_true(wait_until(cond_diff_trace, w2, 60000));
  g_assert_cmpuint(ox_document_get_trace(ox_window_get_document(w2))->n_steps, ==, t->n_steps);
  gtk_window_destroy(GTK_WINDOW(w2));
  drain();
  /* a file that is not a graph */
  g_assert_false(ox_window_diff_open(w, "/nonexistent/graph.txt", &err));
  g_assert_nonnull(err);
  g_test_message("%s", err->message);
  g_clear_error(&err);
  ox_doc_free(b);
  ox_diags_clear(&dl);
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
  g_unlink(out);
  g_rmdir(dir);
}

/* Export Current Step as SVG from the window (win.export-to, as the menu's dialog does): the
 * step's highlight classes, the canvas's colours and a legend. */
static void test_export_step(void) {
  OxWindow *w = window_with_example();
  OxDocument *d = ox_window_get_document(w);
  const OxTrace *t = ox_document_get_trace(d);
  guint pos = 0;
  for (guint i = 0; i < t->n_steps && !pos; i++) {
    const OxStep *st = &t->steps[i];
    gboolean anchor_stays = st->anchor != NULL;
    for (guint k = 0; k < st->n_removed && anchor_stays; k++) anchor_stays = strcmp(st->removed[k], st->anchor) != 0;
    if (st->kind == OX_STEP_APPLIED && st->n_removed && st->n_added && anchor_stays) pos = i + 1;
  }
  g_assert_cmpuint(pos, >, 0);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.goto-step", "u", pos));
  g_autofree char *dir = g_dir_make_tmp("ox-ui-export-XXXXXX", NULL);
  g_autofree char *svg = g_build_filename(dir, "step.svg", NULL);
  guint before = ox_window_get_n_exports(w);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.export-to", "(ss)", "svg", svg));
  ExportWait want = {w, before + 1};
  g_assert_true(wait_until(cond_exports, &want, 60000));
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(svg, &text, NULL, NULL));
  g_autoptr(GString) dec = g_string_new(text);
  g_string_replace(dec, "&#45;", "-", 0);
  const char *classes[] = {" ox-anchor\"", " ox-removed\"", " ox-added\"", " ox-dimmed\"", "\"node ox-legend\""};
  for (guint i = 0; i < G_N_ELEMENTS(classes); i++) {
    if (!strstr(dec->str, classes[i])) g_test_message("step %u: no %s in the SVG", pos, classes[i]);
    g_assert_nonnull(strstr(dec->str, classes[i]));
  }
  char hex[16];
  g_snprintf(hex, sizeof hex, "#%06x", OX_COLOR_MATCH);
  g_assert_nonnull(strstr(dec->str, hex));
  g_assert_nonnull(strstr(dec->str, "added by the step"));
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
  g_unlink(svg);
  g_rmdir(dir);
}

/* A step row's tooltip is its title and subtitle, made when GTK asks for it (query-tooltip):
 * nothing is set on each bind (gtk_widget_set_tooltip_text re-queries the tooltip under the
 * pointer, a pick of the window, and the step list rebinds rows on every step). */
static void test_step_row_tooltip(void) {
  GtkWidget *row = g_object_ref_sink(ox_step_row_new());
  g_assert_true(gtk_widget_get_has_tooltip(row));
  GtkTooltip *tip = g_object_new(GTK_TYPE_TOOLTIP, NULL);
  gboolean shown = TRUE;
  g_signal_emit_by_name(row, "query-tooltip", 1, 1, FALSE, tip, &shown);
  g_assert_false(shown); /* an empty row has nothing to say */
  ox_step_row_set(OX_STEP_ROW(row), FALSE, NULL, "#5 batch_linear", "applied: 5 linears");
  g_signal_emit_by_name(row, "query-tooltip", 1, 1, FALSE, tip, &shown);
  g_assert_true(shown);
  char *text = ox_step_row_full_text(OX_STEP_ROW(row));
  g_assert_cmpstr(text, ==, "#5 batch_linear\napplied: 5 linears");
  g_free(text);
  g_assert_null(gtk_widget_get_tooltip_text(row)); /* no property set on bind */
  ox_step_row_set(OX_STEP_ROW(row), TRUE, NULL, "pre-grad passes", NULL);
  text = ox_step_row_full_text(OX_STEP_ROW(row));
  g_assert_cmpstr(text, ==, "pre-grad passes");
  g_free(text);
  g_object_unref(tip);
  g_object_unref(row);
}


/* The label under root whose markup holds `needle` (depth-first), or NULL. */
static GtkWidget *find_label(GtkWidget *root, const char *needle) {
  if (GTK_IS_LABEL(root) && strstr(gtk_label_get_label(GTK_LABEL(root)), needle)) return root;
  for (GtkWidget *c = gtk_widget_get_first_child(root); c; c = gtk_widget_get_next_sibling(c)) {
    GtkWidget *l = find_label(c, needle);
    if (l) return l;
  }
  return NULL;
}

/* The steps the timeline lets through: each matches the coverage entry (pass, rule, phase;
 * reason code and value when given); returns how many. */
static guint visible_matching(OxDocument *d, const OxCoverageRow *r, const OxCoverageReason *x, const char *detail) {
  const OxTrace *t = ox_document_get_trace(d);
  guint n = 0;
  for (guint p = 1; p <= t->n_steps; p++) {
    if (!ox_document_step_visible(d, p)) continue;
    const OxStep *st = &t->steps[p - 1];
    g_assert_cmpstr(st->pass, ==, r->pass);
    g_assert_cmpstr(st->rule, ==, r->rule);
    if (x) {
      g_assert_cmpuint(st->kind, !=, OX_STEP_APPLIED);
      g_assert_cmpuint(st->reason.code, ==, x->code);
    }
    if (detail) {
      char dd[320];
      g_assert_true(ox_coverage_detail_of(st, dd, sizeof dd));
      g_assert_cmpstr(dd, ==, detail);
    }
    n++;
  }
  guint rows = 0, items = g_list_model_get_n_items(ox_document_get_timeline(d));
  for (guint i = 0; i < items; i++) {
    g_autoptr(OxStepItem) it = g_list_model_get_item(ox_document_get_timeline(d), i);
    if (!it->header) rows++;
  }
  g_assert_cmpuint(rows, ==, n); /* the timeline lists exactly those */
  return n;
}

/* The Passes panel: the run's coverage (what each pass and rule tried, applied, refused and why),
 * each entry a filter of the timeline (win.filter-coverage, the panel's links), which stepping
 * keeps to; "" or another pass in the drop-down shows everything again; links are followed after
 * the label's "activate-link" (the panel is rebuilt by them). */
static void test_passes_panel(void) {
  OxWindow *w = window_with_example();
  OxDocument *d = ox_window_get_document(w);
  const OxTrace *t = ox_document_get_trace(d);
  ox_window_show_panel(w, "passes");
  const char *m = ox_window_get_panel_markup(w, "passes");
  g_autofree char *head = g_strdup_printf("<b>%u records</b> · %u applied", t->n_steps, t->n_applied);
  g_assert_nonnull(strstr(m, head));
  for (guint i = 0; i < t->n_steps; i++) {
    g_autofree char *pass = g_strdup_printf("<b>%s</b>", t->steps[i].pass);
    g_assert_nonnull(strstr(m, pass));
  }
  OxCoverage *c = ox_coverage_of(t);
  guint R = G_MAXUINT;
  for (guint i = 0; i < c->n_rows && R == G_MAXUINT; i++)
    if (!strcmp(c->rows[i].pass, "split_cat_pass")) R = i;
  g_assert_cmpuint(R, !=, G_MAXUINT);
  const OxCoverageRow *r = &c->rows[R];
  g_assert_cmpuint(r->applied, >, 0);
  g_assert_cmpuint(r->n_reasons, >, 0);
  const OxCoverageReason *x = &r->reasons[0];
  g_assert_cmpuint(x->n_details, >=, 2);
  g_assert_cmpuint(x->details[1].count, >=, 2);
  g_autofree char *link = g_strdup_printf("href=\"cov:%u:0:1\"", R);
  g_assert_nonnull(strstr(m, link));

  /* a value of a reason: its records only, from the first, and stepping stays among them */
  g_autofree char *spec = g_strdup_printf("%u:0:1", R);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.filter-coverage", "s", spec));
  const char *f = ox_document_get_filter_coverage(d);
  g_assert_nonnull(f);
  g_assert_nonnull(strstr(f, "NO_MATCH"));
  g_assert_nonnull(strstr(f, x->details[1].text));
  g_assert_cmpstr(ox_document_get_filter_pass(d), ==, "split_cat_pass");
  g_assert_cmpuint(visible_matching(d, r, x, x->details[1].text), ==, x->details[1].count);
  g_assert_cmpuint(ox_document_get_position(d), ==, x->details[1].first + 1);
  g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.step-next", NULL));
  const OxStep *st = ox_document_get_step(d);
  g_assert_cmpuint(st->reason.code, ==, x->code);
  g_assert_cmpuint(st->seq, >, x->details[1].first);
  g_assert_nonnull(strstr(ox_window_get_panel_markup(w, "passes"), "href=\"cov:\">show all</a>"));
  g_assert_nonnull(strstr(ox_window_get_panel_markup(w, "passes"), "▶ <a href=\"cov:"));
  /* the reason, then the whole row */
  g_free(spec);
  spec = g_strdup_printf("%u:0", R);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.filter-coverage", "s", spec);
  g_assert_cmpuint(visible_matching(d, r, x, NULL), ==, x->count);
  g_free(spec);
  spec = g_strdup_printf("%u", R);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.filter-coverage", "s", spec);
  g_assert_cmpuint(visible_matching(d, r, NULL, NULL), ==, r->attempts);
  g_assert_cmpuint(ox_document_get_position(d), ==, r->first + 1);
  /* entries that do not exist change nothing */
  gtk_widget_activate_action(GTK_WIDGET(w), "win.filter-coverage", "s", "9999");
  gtk_widget_activate_action(GTK_WIDGET(w), "win.filter-coverage", "s", "0:99");
  gtk_widget_activate_action(GTK_WIDGET(w), "win.filter-coverage", "s", "x");
  g_assert_cmpuint(visible_matching(d, r, NULL, NULL), ==, r->attempts);
  /* another pass in the drop-down drops it */
  ox_document_set_filter_pass(d, "batch_linear");
  g_assert_null(ox_document_get_filter_coverage(d));
  ox_document_set_filter_pass(d, NULL);
  /* "" shows everything again (after a reason turned the rejected steps back on) */
  ox_document_set_filter_kinds(d, OX_FILTER_APPLIED);
  g_free(spec);
  spec = g_strdup_printf("%u:0", R);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.filter-coverage", "s", spec);
  g_assert_cmpuint(ox_document_get_filter_kinds(d) & OX_FILTER_REJECTED, !=, 0);
  g_assert_cmpuint(visible_matching(d, r, x, NULL), ==, x->count);
  gtk_widget_activate_action(GTK_WIDGET(w), "win.filter-coverage", "s", "");
  g_assert_null(ox_document_get_filter_coverage(d));
  g_assert_null(ox_document_get_filter_pass(d));
  g_assert_null(strstr(ox_window_get_panel_markup(w, "passes"), "show all"));
  /* a link of the panel: followed once the label's signal is over */
  GtkWidget *label = find_label(GTK_WIDGET(w), "records</b>");
  g_assert_nonnull(label);
  gboolean handled = FALSE;
  g_autofree char *uri = g_strdup_printf("cov:%u:0", R);
  g_signal_emit_by_name(label, "activate-link", uri, &handled);
  g_assert_true(handled);
  g_assert_null(ox_document_get_filter_coverage(d)); /* not yet */
  drain();
  g_assert_nonnull(ox_document_get_filter_coverage(d));
  g_assert_cmpuint(visible_matching(d, r, x, NULL), ==, x->count);
  /* Why not? of a node refused that way links to all the records refused like it */
  {
    const OxStep *first = &t->steps[x->details[1].first];
    g_assert_nonnull(first->anchor);
    g_assert_true(ox_document_select(d, first->anchor));
    g_autofree char *like = g_strdup_printf("href=\"cov:%u:0:1\">%u refused like this</a>", R, x->details[1].count);
    g_assert_nonnull(strstr(ox_window_get_panel_markup(w, "why"), like));
    ox_document_select(d, NULL);
  }
  /* "nodes": the same filter, and the anchors of its records as search hits */
  g_free(uri);
  uri = g_strdup_printf("covn:%u:0:1", R);
  g_assert_nonnull(strstr(ox_window_get_panel_markup(w, "passes"), uri));
  g_signal_emit_by_name(find_label(GTK_WIDGET(w), "records</b>"), "activate-link", uri, &handled);
  drain();
  g_assert_cmpstr(ox_document_get_search_text(d), ==, "anchors:");
  g_assert_cmpuint(visible_matching(d, r, x, x->details[1].text), ==, x->details[1].count);
  g_assert_cmpuint(ox_document_get_n_hits(d), >, 0);
  g_assert_cmpuint(ox_document_get_n_hits(d), <=, x->details[1].count);
  for (guint i = 0; i < ox_document_get_n_hits(d); i++) {
    gboolean anchors = FALSE;
    for (guint p = 1; p <= t->n_steps && !anchors; p++)
      anchors = ox_document_step_visible(d, p) && !g_strcmp0(t->steps[p - 1].anchor, ox_document_get_hit(d, i));
    g_assert_true(anchors);
  }
  ox_coverage_free(c);
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
}

int main(int argc, char **argv) {
  if (!g_getenv("DISPLAY") && !g_getenv("WAYLAND_DISPLAY")) {
    printf("1..0 # SKIP no display (run under xvfb-run -a)\n");
    return 0;
  }
  /* the recent-files store (where the window remembers traces, shapes and the rules folder)
   * goes to a directory of this run, not the user's */
  g_autofree char *data_home = g_dir_make_tmp("ox-ui-data-XXXXXX", NULL);
  g_setenv("XDG_DATA_HOME", data_home, TRUE);
  gtk_test_init(&argc, &argv, NULL);
  g_test_add_func("/ui/window/construct", test_construct);
  g_test_add_func("/ui/step-row/tooltip", test_step_row_tooltip);
  g_test_add_func("/ui/window/actions", test_actions);
  g_test_add_func("/ui/window/pixels", test_pixels);
  g_test_add_func("/ui/window/bad-file", test_bad_file);
  g_test_add_func("/ui/window/views", test_views);
  g_test_add_func("/ui/window/end-to-end", test_end_to_end);
  g_test_add_func("/ui/window/rules-file", test_rules_file);
  g_test_add_func("/ui/window/large-corpus", test_large_corpus);
  g_test_add_func("/ui/window/step-in-view", test_step_in_view);
  g_test_add_func("/ui/window/graphs", test_graphs);
  g_test_add_func("/ui/window/load-warnings", test_load_warnings);
  g_test_add_func("/ui/window/why-not-hints", test_why_not_hints);
  g_test_add_func("/ui/window/step-cost", test_step_cost);
  g_test_add_func("/ui/window/passes-panel", test_passes_panel);
  g_test_add_func("/ui/window/timeline-keys", test_timeline_keys);
  g_test_add_func("/ui/window/layout-stable", test_layout_stable);
  g_test_add_func("/ui/window/shapes", test_shapes);
  g_test_add_func("/ui/window/recent-trace", test_recent_trace);
  g_test_add_func("/ui/window/rules-dialog", test_rules_dialog);
  g_test_add_func("/ui/window/export-step", test_export_step);
  g_test_add_func("/ui/window/whatif-tab", test_whatif_tab);
  g_test_add_func("/ui/window/compare-traces", test_compare_traces);
  g_test_add_func("/ui/window/diff-graph", test_diff_graph);
  return g_test_run();
}
