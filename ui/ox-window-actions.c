/* ox-window-actions.c - the main window's win.* actions (ox-window-private.h): one callback per
 * action and the action table ox_window_actions_init adds. Enablement is computed in one place,
 * ox_window_update_actions, and the letter and timeline keys are installed with the window's
 * construction (both in ox-window.c).
 */
#include "ox-window-private.h"

#include <string.h>

/* ------------------------------------------------------------------ actions */

#define SELF OxWindow *self = OX_WINDOW(data); (void)a; (void)p

static void act_open(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_open_dialog(self, FALSE);
}
static void act_open_trace(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_open_dialog(self, TRUE);
}
static void act_open_recent(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_open_recent(self, g_variant_get_string(p, NULL));
}
static void act_optimize(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_start_optimize(self);
}
/* win.check-option('pass.key=value'): check a hint by a what-if re-run now (large graphs) */
static void act_check_option(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_document_get_whatif(self->doc, g_variant_get_string(p, NULL), TRUE, NULL);
  ox_window_update_panels(self);
}

/* win.optimize-with('pass.key=value'): the optimization again with one more option (a hint's
 * "re-run with this option") */
static void act_optimize_with(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  GError *err = NULL;
  if (!ox_document_add_option(self->doc, g_variant_get_string(p, NULL), &err)) {
    ox_window_show_error(self, "Cannot re-run with that option", err->message);
    g_error_free(err);
    return;
  }
  ox_window_start_optimize(self);
}
static void act_graph(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_show_graph(self, g_variant_get_uint32(p));
}
static void act_graph_parent(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  const OxGraphEntry *e =
      ox_document_get_graph_entry(self->doc, ox_document_get_graph_entry_index(self->doc));
  if (e && e->depth) ox_window_show_graph(self, e->parent);
}
static void act_cancel(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  if (self->optimize) g_cancellable_cancel(self->optimize);
}
static void act_export(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_export_dialog(self, g_variant_get_string(p, NULL));
}
static void act_export_trace(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_export_dialog(self, "trace");
}
static void act_export_to(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  const char *format, *path;
  g_variant_get(p, "(&s&s)", &format, &path);
  ox_window_export_start(self, format, path);
}
static void act_step_next(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_document_step_next(self->doc);
}
static void act_step_prev(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_document_step_prev(self->doc);
}
static void act_step_first(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_document_step_first(self->doc);
}
static void act_step_last(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_document_step_last(self->doc);
}
static void act_goto_step(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_document_set_position(self->doc, g_variant_get_uint32(p));
}

static gboolean play_tick(gpointer data) {
  OxWindow *self = data;
  if (ox_document_step_next(self->doc)) return G_SOURCE_CONTINUE;
  self->play_source = 0;
  ox_window_action_set_bool(self, "play", FALSE);
  return G_SOURCE_REMOVE;
}

static void act_play(GSimpleAction *a, GVariant *p, gpointer data) {
  OxWindow *self = OX_WINDOW(data);
  GVariant *st = g_action_get_state(G_ACTION(a));
  gboolean on = p ? g_variant_get_boolean(p) : !g_variant_get_boolean(st);
  g_variant_unref(st);
  g_simple_action_set_state(a, g_variant_new_boolean(on));
  if (self->play_source) g_source_remove(self->play_source);
  self->play_source = on ? g_timeout_add(700, play_tick, self) : 0;
}

/* The panels open at OX_WINDOW_PANEL_WIDTH (their size request until they are placed, so the
 * first frames show them at that width too) and may then be dragged down to
 * OX_WINDOW_PANEL_MIN_WIDTH. */
static gboolean place_panels(gpointer data) {
  OxWindow *self = data;
  int w = gtk_widget_get_width(self->right_pane);
  if (w > 0) {
    /* the handle's width: what the two children do not cover */
    GtkWidget *start = gtk_paned_get_start_child(GTK_PANED(self->right_pane));
    int handle = w - gtk_widget_get_width(start) - gtk_widget_get_width(self->panels);
    if (handle < 0 || handle > 16) handle = 1;
    gtk_paned_set_position(GTK_PANED(self->right_pane), MAX(w - OX_WINDOW_PANEL_WIDTH - handle, 100));
    gtk_widget_set_size_request(self->panels, OX_WINDOW_PANEL_MIN_WIDTH, -1);
  }
  g_object_unref(self);
  return G_SOURCE_REMOVE;
}

void ox_window_on_right_pane_allocated(GtkPaned *paned, GParamSpec *ps, OxWindow *self) {
  (void)ps;
  if (self->panels_placed || gtk_widget_get_width(GTK_WIDGET(paned)) <= 1) return;
  self->panels_placed = TRUE;
  g_idle_add(place_panels, g_object_ref(self));
}

/* The play button shows what a click does: pause while playing. */
void ox_window_on_play_state(GObject *action, GParamSpec *ps, OxWindow *self) {
  (void)ps;
  GVariant *st = g_action_get_state(G_ACTION(action));
  gboolean on = st && g_variant_get_boolean(st);
  if (st) g_variant_unref(st);
  gtk_button_set_icon_name(GTK_BUTTON(self->play_button), on ? "media-playback-pause-symbolic" : "media-playback-start-symbolic");
  gtk_widget_set_tooltip_text(self->play_button, on ? "Pause (space)" : "Play (space)");
}

void ox_window_set_hint_auto_max(OxWindow *self, guint nodes) { self->hint_auto_max = nodes; }

int ox_window_get_panel_width(OxWindow *self) { return gtk_widget_get_width(self->panels); }
const char *ox_window_get_status_text(OxWindow *self) {
  return gtk_label_get_text(GTK_LABEL(self->status_label));
}

const char *ox_window_get_play_icon(OxWindow *self) {
  return gtk_button_get_icon_name(GTK_BUTTON(self->play_button));
}

static void toggle_state(GSimpleAction *a, GVariant *p, gboolean *out) {
  GVariant *st = g_action_get_state(G_ACTION(a));
  *out = p ? g_variant_get_boolean(p) : !g_variant_get_boolean(st);
  g_variant_unref(st);
  g_simple_action_set_state(a, g_variant_new_boolean(*out));
}

static void act_before(GSimpleAction *a, GVariant *p, gpointer data) {
  OxWindow *self = OX_WINDOW(data);
  gboolean on;
  toggle_state(a, p, &on);
  ox_document_set_show_before(self->doc, on);
}

static void act_edge_labels(GSimpleAction *a, GVariant *p, gpointer data) {
  OxWindow *self = OX_WINDOW(data);
  gboolean on;
  toggle_state(a, p, &on);
  ox_graph_view_set_edge_labels(OX_GRAPH_VIEW(self->view), on);
}

static void filter_toggle(OxWindow *self, GSimpleAction *a, GVariant *p, guint bit) {
  gboolean on;
  toggle_state(a, p, &on);
  guint k = ox_document_get_filter_kinds(self->doc);
  ox_document_set_filter_kinds(self->doc, on ? (k | bit) : (k & ~bit));
}
static void act_filter_applied(GSimpleAction *a, GVariant *p, gpointer data) {
  filter_toggle(OX_WINDOW(data), a, p, OX_FILTER_APPLIED);
}
static void act_filter_rejected(GSimpleAction *a, GVariant *p, gpointer data) {
  filter_toggle(OX_WINDOW(data), a, p, OX_FILTER_REJECTED);
}
static void act_filter_check_failed(GSimpleAction *a, GVariant *p, gpointer data) {
  filter_toggle(OX_WINDOW(data), a, p, OX_FILTER_CHECK_FAILED);
}
static void act_filter_touching(GSimpleAction *a, GVariant *p, gpointer data) {
  OxWindow *self = OX_WINDOW(data);
  gboolean on;
  toggle_state(a, p, &on);
  ox_document_set_filter_touching(self->doc, on);
}

static void act_select_node(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  const char *name = g_variant_get_string(p, NULL);
  ox_document_select(self->doc, *name ? name : NULL);
}

static void act_fit(GSimpleAction *a, GVariant *p, gpointer data) { SELF; ox_graph_view_fit(OX_GRAPH_VIEW(self->view)); }
static void act_zoom_in(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_graph_view_zoom_in(OX_GRAPH_VIEW(self->view));
}
static void act_zoom_out(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_graph_view_zoom_out(OX_GRAPH_VIEW(self->view));
}
static void act_zoom_reset(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_graph_view_zoom_reset(OX_GRAPH_VIEW(self->view));
}
static void act_zoom_selection(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_graph_view_zoom_to_selection(OX_GRAPH_VIEW(self->view));
}
static void act_center_step(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_graph_view_center_on_step(OX_GRAPH_VIEW(self->view));
}

static void act_search(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  gboolean on = !gtk_search_bar_get_search_mode(GTK_SEARCH_BAR(self->search_bar));
  gtk_search_bar_set_search_mode(GTK_SEARCH_BAR(self->search_bar), on);
  if (on) gtk_widget_grab_focus(self->search_entry);
}
/* the search bar open with this query (a panel's lineage links) */
static void act_search_for(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  gtk_search_bar_set_search_mode(GTK_SEARCH_BAR(self->search_bar), TRUE);
  gtk_editable_set_text(GTK_EDITABLE(self->search_entry), g_variant_get_string(p, NULL));
  ox_document_set_search_text(self->doc, g_variant_get_string(p, NULL)); /* now, not after the entry's delay */
}
static void act_search_next(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  if (ox_document_search_next(self->doc)) ox_graph_view_zoom_to_selection(OX_GRAPH_VIEW(self->view));
}
static void act_search_prev(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  if (ox_document_search_prev(self->doc)) ox_graph_view_zoom_to_selection(OX_GRAPH_VIEW(self->view));
}
static void act_panel(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_show_panel(self, g_variant_get_string(p, NULL));
}
static void act_filter_coverage(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  if (!ox_window_filter_coverage(self, g_variant_get_string(p, NULL)))
    g_debug("win.filter-coverage: no entry '%s' in the Passes panel", g_variant_get_string(p, NULL));
}
static void act_whatif_refuse(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_whatif_toggle_refused(self, ox_document_get_position(self->doc));
}
static void act_whatif_run(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_whatif_run(self);
}
static void act_compare_trace(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_compare_dialog(self);
}
static void act_diff_graph(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_diff_dialog(self);
}
static void act_compare_close(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_compare_close(self);
}
static void act_close(GSimpleAction *a, GVariant *p, gpointer data) { SELF; gtk_window_close(GTK_WINDOW(self)); }

void ox_window_on_scene_mode(OxWindow *self) {
  GAction *a = ox_window_action(self, "view-mode");
  if (a)
    g_simple_action_set_state(G_SIMPLE_ACTION(a), g_variant_new_string(ox_view_mode_name(
                                                      ox_scene_get_mode(ox_window_scene(self)))));
  ox_window_update_status(self);
}

/* win.view-mode('auto'|'full'|'focus'|'overview') */
static void act_view_mode(GSimpleAction *a, GVariant *p, gpointer data) {
  OxWindow *self = OX_WINDOW(data);
  OxViewMode m;
  if (!ox_view_mode_from_name(g_variant_get_string(p, NULL), &m)) return;
  g_simple_action_set_state(a, p);
  ox_scene_set_mode(ox_window_scene(self), m);
}

/* win.layout-engine('auto'|'dot'|'layered'): which layout draws the views (ox_scene_set_engine) */
static void act_layout_engine(GSimpleAction *a, GVariant *p, gpointer data) {
  OxWindow *self = OX_WINDOW(data);
  const char *name = g_variant_get_string(p, NULL);
  OxLayoutEngine e;
  if (!strcmp(name, "auto"))
    e = OX_LAYOUT_AUTO;
  else if (!strcmp(name, "dot"))
    e = OX_LAYOUT_DOT;
  else if (!strcmp(name, "layered"))
    e = OX_LAYOUT_LAYERED;
  else
    return;
  g_simple_action_set_state(a, p);
  ox_scene_set_engine(ox_window_scene(self), e);
}

/* win.focus-radius(u): 0 = automatic */
static void act_focus_radius(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_scene_set_radius(ox_window_scene(self), g_variant_get_uint32(p));
}
static void act_radius_step(OxWindow *self, int d) {
  OxScene *sc = ox_window_scene(self);
  guint r = ox_scene_get_radius(sc) ? ox_scene_get_radius(sc) : ox_scene_get_shown_radius(sc);
  r = (guint)CLAMP((int)r + d, 1, 16);
  gtk_widget_activate_action(GTK_WIDGET(self), "win.focus-radius", "u", r);
}
static void act_radius_more(GSimpleAction *a, GVariant *p, gpointer data) { SELF; act_radius_step(self, 1); }
static void act_radius_less(GSimpleAction *a, GVariant *p, gpointer data) { SELF; act_radius_step(self, -1); }

/* win.expand-cluster(u) / win.collapse-cluster(u): cluster indices of the hierarchy;
 * collapse-selection folds the cluster holding the selected node */
static void act_expand_cluster(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_scene_expand(ox_window_scene(self), g_variant_get_uint32(p));
}
static void act_collapse_cluster(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_scene_collapse(ox_window_scene(self), g_variant_get_uint32(p));
}
static void act_collapse_selection(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  OxScene *sc = ox_window_scene(self);
  const OxHierarchy *h = ox_scene_get_hierarchy(sc);
  guint32 uid = ox_document_uid_of(self->doc, ox_document_get_selected(self->doc));
  if (!h || !uid || uid >= h->n_node_ids) return;
  /* the innermost open cluster holding it */
  for (gint32 c = h->node_cluster[uid]; c > 0; c = h->clusters[c].parent)
    if (ox_scene_cluster_is_open(sc, (guint32)c)) {
      ox_scene_collapse(sc, (guint32)c);
      return;
    }
}
static void act_minimap(GSimpleAction *a, GVariant *p, gpointer data) {
  OxWindow *self = OX_WINDOW(data);
  gboolean on;
  toggle_state(a, p, &on);
  gtk_widget_set_visible(self->minimap, on);
}

static const GActionEntry win_entries[] = {
  {"open", act_open, NULL, NULL, NULL, {0}},
  {"open-trace", act_open_trace, NULL, NULL, NULL, {0}},
  {"open-rules", ox_window_act_open_rules, NULL, NULL, NULL, {0}},
  {"open-recent", act_open_recent, "s", NULL, NULL, {0}},
  {"optimize", act_optimize, NULL, NULL, NULL, {0}},
  {"optimize-with", act_optimize_with, "s", NULL, NULL, {0}},
  {"check-option", act_check_option, "s", NULL, NULL, {0}},
  {"shapes", ox_window_act_shapes, NULL, NULL, NULL, {0}},
  {"apply-shapes", ox_window_act_apply_shapes, "(ass)", NULL, NULL, {0}},
  {"graph", act_graph, "u", NULL, NULL, {0}},
  {"graph-parent", act_graph_parent, NULL, NULL, NULL, {0}},
  {"cancel", act_cancel, NULL, NULL, NULL, {0}},
  {"export", act_export, "s", NULL, NULL, {0}},
  {"export-trace", act_export_trace, NULL, NULL, NULL, {0}},
  {"export-to", act_export_to, "(ss)", NULL, NULL, {0}},
  {"step-next", act_step_next, NULL, NULL, NULL, {0}},
  {"step-prev", act_step_prev, NULL, NULL, NULL, {0}},
  {"step-first", act_step_first, NULL, NULL, NULL, {0}},
  {"step-last", act_step_last, NULL, NULL, NULL, {0}},
  {"goto-step", act_goto_step, "u", NULL, NULL, {0}},
  {"play", act_play, NULL, "false", NULL, {0}},
  {"before", act_before, NULL, "false", NULL, {0}},
  {"edge-labels", act_edge_labels, NULL, "false", NULL, {0}},
  {"filter-applied", act_filter_applied, NULL, "true", NULL, {0}},
  {"filter-rejected", act_filter_rejected, NULL, "true", NULL, {0}},
  {"filter-check-failed", act_filter_check_failed, NULL, "true", NULL, {0}},
  {"filter-touching", act_filter_touching, NULL, "false", NULL, {0}},
  {"filter-coverage", act_filter_coverage, "s", NULL, NULL, {0}},
  {"select-node", act_select_node, "s", NULL, NULL, {0}},
  {"fit", act_fit, NULL, NULL, NULL, {0}},
  {"zoom-in", act_zoom_in, NULL, NULL, NULL, {0}},
  {"zoom-out", act_zoom_out, NULL, NULL, NULL, {0}},
  {"zoom-reset", act_zoom_reset, NULL, NULL, NULL, {0}},
  {"zoom-selection", act_zoom_selection, NULL, NULL, NULL, {0}},
  {"center-step", act_center_step, NULL, NULL, NULL, {0}},
  {"search", act_search, NULL, NULL, NULL, {0}},
  {"search-for", act_search_for, "s", NULL, NULL, {0}},
  {"search-next", act_search_next, NULL, NULL, NULL, {0}},
  {"search-prev", act_search_prev, NULL, NULL, NULL, {0}},
  {"panel", act_panel, "s", NULL, NULL, {0}},
  {"whatif-refuse", act_whatif_refuse, NULL, NULL, NULL, {0}},
  {"whatif-run", act_whatif_run, NULL, NULL, NULL, {0}},
  {"compare-trace", act_compare_trace, NULL, NULL, NULL, {0}},
  {"compare-close", act_compare_close, NULL, NULL, NULL, {0}},
  {"diff-graph", act_diff_graph, NULL, NULL, NULL, {0}},
  {"close", act_close, NULL, NULL, NULL, {0}},
  {"view-mode", act_view_mode, "s", "'auto'", NULL, {0}},
  {"layout-engine", act_layout_engine, "s", "'auto'", NULL, {0}},
  {"focus-radius", act_focus_radius, "u", NULL, NULL, {0}},
  {"radius-more", act_radius_more, NULL, NULL, NULL, {0}},
  {"radius-less", act_radius_less, NULL, NULL, NULL, {0}},
  {"expand-cluster", act_expand_cluster, "u", NULL, NULL, {0}},
  {"collapse-cluster", act_collapse_cluster, "u", NULL, NULL, {0}},
  {"collapse-selection", act_collapse_selection, NULL, NULL, NULL, {0}},
  {"minimap", act_minimap, NULL, "true", NULL, {0}},
};

/* Adds the win.* actions above to the window (ox_window_init). */
void ox_window_actions_init(OxWindow *self) {
  g_action_map_add_action_entries(G_ACTION_MAP(self), win_entries, G_N_ELEMENTS(win_entries), self);
}
