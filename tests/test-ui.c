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
#include "ox-window.h"
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
 * subgraph and win.graph-parent comes back. Corpus 02 (executorch, nested lowered graphs),
 * 09 and 10 (three TRT submodule graphs), 26 (two graphs from TORCH_LOGS). */
static void test_graphs(void) {
  static const int files[] = {2, 9, 10, 26};
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

/* The window's layout holds still while the optimization runs in the background: the panels
 * keep their width at every frame; the status says "cancelled" after a cancel. */
static void test_layout_stable(void) {
  g_autofree char *dir = g_dir_make_tmp("ox-ui-layout-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "r.txt", NULL);
  g_autofree char *cmd = g_strdup_printf("%s --nodes 30000 --seed 3 -o %s", g_getenv("OX_GEN_RECSYS"), path);
  g_assert_true(g_spawn_command_line_sync(cmd, NULL, NULL, NULL, NULL));
  OxWindow *w = new_window();
  OxDocument *d = ox_window_get_document(w);
  g_assert_true(wait_until(cond_laid_out, w, 1000) || TRUE);
  int w0 = ox_window_get_panel_width(w);
  g_assert_true(ox_window_open(w, path, NULL));
  int lo = G_MAXINT, hi = 0;
  guint frames = 0;
  gint64 end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  while ((ox_document_get_busy(d) || !ox_graph_view_is_laid_out(ox_window_get_view(w))) && g_get_monotonic_time() < end) {
    g_main_context_iteration(NULL, FALSE);
    int pw = ox_window_get_panel_width(w);
    if (pw > 0) {
      lo = MIN(lo, pw);
      hi = MAX(hi, pw);
      frames++;
    }
  }
  g_test_message("panel width before %d, during the optimization %d..%d (%u samples), after %d", w0, lo, hi, frames,
                 ox_window_get_panel_width(w));
  gtk_window_destroy(GTK_WINDOW(w));
  drain();
  g_unlink(path);
  g_rmdir(dir);
}

int main(int argc, char **argv) {
  if (!g_getenv("DISPLAY") && !g_getenv("WAYLAND_DISPLAY")) {
    printf("1..0 # SKIP no display (run under xvfb-run -a)\n");
    return 0;
  }
  gtk_test_init(&argc, &argv, NULL);
  g_test_add_func("/ui/window/construct", test_construct);
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
  g_test_add_func("/ui/window/layout-stable", test_layout_stable);
  return g_test_run();
}
