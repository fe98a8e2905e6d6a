/* ox-window.c - the debugger's main window (see ox-window.h).
 *
 * The window owns one OxDocument and reflects it: document notify:: signals update labels,
 * panels and action states; user input goes through win.* actions into the document. Long work
 * (optimization, layout, export) runs on worker threads; the window stays responsive and shows
 * progress. Letter shortcuts (n, p, b, f ...) live on a bubble-phase controller of the main
 * pane so typing in the search entry never triggers them; Ctrl shortcuts are application
 * accelerators (ox-application.c).
 */
#include "ox-window-private.h"

#include <string.h>

#include "rules/ox_rules.h"

#include "ox-minimap.h"
#include "ox-step-row.h"

G_DEFINE_FINAL_TYPE(OxWindow, ox_window, GTK_TYPE_APPLICATION_WINDOW)

const char *const ox_window_panel_names[OX_WINDOW_N_PANELS] = {"node", "why", "checks", "passes"};

static void refocus_row(OxWindow *self);

/* ------------------------------------------------------------------ helpers */

GAction *ox_window_action(OxWindow *self, const char *name) {
  return g_action_map_lookup_action(G_ACTION_MAP(self), name);
}

OxScene *ox_window_scene(OxWindow *self) { return ox_graph_view_get_scene(OX_GRAPH_VIEW(self->view)); }

static void action_enable(OxWindow *self, const char *name, gboolean on) {
  GAction *a = ox_window_action(self, name);
  if (a) g_simple_action_set_enabled(G_SIMPLE_ACTION(a), on);
}

void ox_window_action_set_bool(OxWindow *self, const char *name, gboolean on) {
  GAction *a = ox_window_action(self, name);
  if (a) g_simple_action_set_state(G_SIMPLE_ACTION(a), g_variant_new_boolean(on));
}

void ox_window_show_error(OxWindow *self, const char *title, const char *message) {
  g_free(self->last_error);
  self->last_error = g_strdup(message);
  GtkWidget *d = gtk_message_dialog_new(GTK_WINDOW(self), GTK_DIALOG_MODAL | GTK_DIALOG_DESTROY_WITH_PARENT,
                                        GTK_MESSAGE_ERROR, GTK_BUTTONS_CLOSE, "%s", title);
  gtk_message_dialog_format_secondary_text(GTK_MESSAGE_DIALOG(d), "%s", message);
  g_signal_connect(d, "response", G_CALLBACK(gtk_window_destroy), NULL);
  gtk_window_present(GTK_WINDOW(d));
}

/* Links look the same in every panel: a node is its name in monospace (`linear_3`, in a value
 * `%linear_3`), a step is `#12`, a graph its label; an action says what it does. */
void ox_window_append_node_link(GString *out, const char *name) {
  char *m = g_markup_printf_escaped("<a href=\"node:%s\"><tt>%s</tt></a>", name, name);
  g_string_append(out, m);
  g_free(m);
}

void ox_window_append_step_link(GString *out, guint position) {
  g_string_append_printf(out, "<a href=\"step:%u\">#%u</a>", position, position);
}

/* "%name" references in a formatted value (shown in monospace) become node links; the rest is
 * escaped. */
void ox_window_append_linked(GString *out, const char *text, const OxGraph *g) {
  const char *p = text;
  while (*p) {
    if (*p == '%') {
      const char *q = p + 1;
      while (*q && (g_ascii_isalnum(*q) || *q == '_' || *q == '.')) q++;
      char *name = g_strndup(p + 1, (gsize)(q - p - 1));
      if (*name && (!g || ox_graph_find(g, name))) {
        char *m = g_markup_printf_escaped("<a href=\"node:%s\">%%%s</a>", name, name);
        g_string_append(out, m);
        g_free(m);
        g_free(name);
        p = q;
        continue;
      }
      g_free(name);
    }
    const char *next = g_utf8_next_char(p);
    char *esc = g_markup_escape_text(p, next - p);
    g_string_append(out, esc);
    g_free(esc);
    p = next;
  }
}

/* up to max node links, then "and N more" */
void ox_window_append_node_links(GString *out, const char *const *names, guint n, guint max) {
  for (guint i = 0; i < n && i < max; i++) {
    if (i) g_string_append_c(out, ' ');
    ox_window_append_node_link(out, names[i]);
  }
  if (n > max) g_string_append_printf(out, " and %u more", n - max);
}

/* ------------------------------------------------------------------ the dump's graphs */

/* The switcher lists every graph of the dump (subgraphs indented under theirs); shown only when
 * there is more than one. */
static void graphs_rebuild(OxWindow *self) {
  guint n = ox_document_get_n_graph_entries(self->doc);
  self->syncing_graphs = TRUE;
  GPtrArray *labels = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < n; i++) {
    const OxGraphEntry *e = ox_document_get_graph_entry(self->doc, i);
    GString *l = g_string_new(NULL);
    for (guint d = 0; d < e->depth; d++) g_string_append(l, d + 1 == e->depth ? "  ↳ " : "    ");
    g_string_append(l, e->label);
    g_ptr_array_add(labels, g_string_free(l, FALSE));
  }
  g_ptr_array_add(labels, NULL);
  guint old = g_list_model_get_n_items(G_LIST_MODEL(self->graph_list));
  gtk_string_list_splice(self->graph_list, 0, old, (const char *const *)labels->pdata);
  g_ptr_array_free(labels, TRUE);
  if (n)
    gtk_drop_down_set_selected(GTK_DROP_DOWN(self->graph_dropdown),
                               ox_document_get_graph_entry_index(self->doc));
  gtk_widget_set_visible(self->graph_dropdown, n > 1);
  const OxGraphEntry *cur =
      n ? ox_document_get_graph_entry(self->doc, ox_document_get_graph_entry_index(self->doc)) : NULL;
  gtk_widget_set_visible(self->graph_parent, cur && cur->depth > 0);
  if (cur && cur->depth) {
    const OxGraphEntry *up = ox_document_get_graph_entry(self->doc, cur->parent);
    char *tip = g_strdup_printf("Back to %s (Alt+Up)", up->label);
    gtk_widget_set_tooltip_text(self->graph_parent, tip);
    g_free(tip);
  }
  self->syncing_graphs = FALSE;
}

/* ------------------------------------------------------------------ load warnings */

/* The loader's located warnings (a damaged line skipped, names loaded as external inputs) in a
 * bar over the canvas: the count, and the list on demand; a row selects the node defined at
 * or after its line. */
static void warnings_rebuild(OxWindow *self) {
  guint serial = ox_document_get_load_serial(self->doc);
  if (serial == self->warn_serial) return;
  self->warn_serial = serial;
  GtkWidget *c;
  while ((c = gtk_widget_get_first_child(self->warn_list))) gtk_list_box_remove(GTK_LIST_BOX(self->warn_list), c);
  guint n = ox_document_get_n_load_warnings(self->doc),
        kept = ox_document_get_n_kept_load_warnings(self->doc);
  gtk_widget_set_visible(self->warn_bar, n > 0);
  gtk_revealer_set_reveal_child(GTK_REVEALER(self->warn_revealer), FALSE);
  gtk_button_set_label(GTK_BUTTON(self->warn_toggle), "Show");
  if (!n) return;
  const char *path = ox_document_get_path(self->doc);
  char *base = path ? g_path_get_basename(path) : g_strdup("the file");
  char *msg = g_strdup_printf("%u warning%s while loading %s", n, n == 1 ? "" : "s", base);
  gtk_label_set_text(GTK_LABEL(self->warn_label), msg);
  g_free(msg);
  g_free(base);
  for (guint i = 0; i < kept; i++) {
    const OxLoadWarning *w = ox_document_get_load_warning(self->doc, i);
    GtkWidget *l = gtk_label_new(w->text);
    gtk_label_set_xalign(GTK_LABEL(l), 0);
    gtk_label_set_ellipsize(GTK_LABEL(l), PANGO_ELLIPSIZE_END);
    gtk_label_set_selectable(GTK_LABEL(l), FALSE);
    if (w->snippet) gtk_widget_set_tooltip_text(l, w->snippet);
    gtk_list_box_append(GTK_LIST_BOX(self->warn_list), l);
  }
  if (kept < n) {
    char *more = g_strdup_printf("… and %u more (optimus info FILE lists them all)", n - kept);
    GtkWidget *l = gtk_label_new(more);
    gtk_label_set_xalign(GTK_LABEL(l), 0);
    gtk_widget_add_css_class(l, "dim-label");
    gtk_list_box_append(GTK_LIST_BOX(self->warn_list), l);
    g_free(more);
  }
}

static void on_warn_toggle(GtkButton *b, OxWindow *self) {
  gboolean open = !gtk_revealer_get_reveal_child(GTK_REVEALER(self->warn_revealer));
  gtk_revealer_set_reveal_child(GTK_REVEALER(self->warn_revealer), open);
  gtk_button_set_label(b, open ? "Hide" : "Show");
}

static void on_warn_close(GtkInfoBar *bar, int response, OxWindow *self) {
  (void)response;
  (void)self;
  gtk_widget_set_visible(GTK_WIDGET(bar), FALSE);
}

static void on_warn_row(GtkListBox *box, GtkListBoxRow *row, OxWindow *self) {
  (void)box;
  const OxLoadWarning *w = ox_document_get_load_warning(self->doc, (guint)gtk_list_box_row_get_index(row));
  const char *name = w ? ox_document_node_at_line(self->doc, w->line) : NULL;
  if (name) gtk_widget_activate_action(GTK_WIDGET(self), "win.select-node", "s", name);
}

const char *ox_window_get_warning_bar_text(OxWindow *self) {
  return gtk_widget_get_visible(self->warn_bar) ? gtk_label_get_text(GTK_LABEL(self->warn_label)) : NULL;
}

gboolean ox_window_activate_warning(OxWindow *self, guint i) {
  GtkListBoxRow *row = gtk_list_box_get_row_at_index(GTK_LIST_BOX(self->warn_list), (int)i);
  if (!row || !gtk_widget_get_visible(self->warn_bar)) return FALSE;
  g_signal_emit_by_name(self->warn_list, "row-activated", row);
  return TRUE;
}

static GtkWidget *build_warning_bar(OxWindow *self) {
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
  self->warn_bar = gtk_info_bar_new();
  gtk_info_bar_set_message_type(GTK_INFO_BAR(self->warn_bar), GTK_MESSAGE_WARNING);
  gtk_info_bar_set_show_close_button(GTK_INFO_BAR(self->warn_bar), TRUE);
  self->warn_label = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(self->warn_label), 0);
  gtk_widget_set_hexpand(self->warn_label, TRUE);
  gtk_info_bar_add_child(GTK_INFO_BAR(self->warn_bar), self->warn_label);
  self->warn_toggle = gtk_button_new_with_label("Show");
  g_signal_connect(self->warn_toggle, "clicked", G_CALLBACK(on_warn_toggle), self);
  gtk_info_bar_add_child(GTK_INFO_BAR(self->warn_bar), self->warn_toggle);
  g_signal_connect(self->warn_bar, "response", G_CALLBACK(on_warn_close), self);
  gtk_widget_set_visible(self->warn_bar, FALSE);
  gtk_box_append(GTK_BOX(box), self->warn_bar);
  self->warn_revealer = gtk_revealer_new();
  GtkWidget *sw = gtk_scrolled_window_new();
  gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_max_content_height(GTK_SCROLLED_WINDOW(sw), 180);
  gtk_scrolled_window_set_propagate_natural_height(GTK_SCROLLED_WINDOW(sw), TRUE);
  self->warn_list = gtk_list_box_new();
  gtk_list_box_set_activate_on_single_click(GTK_LIST_BOX(self->warn_list), TRUE);
  g_signal_connect(self->warn_list, "row-activated", G_CALLBACK(on_warn_row), self);
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), self->warn_list);
  gtk_revealer_set_child(GTK_REVEALER(self->warn_revealer), sw);
  gtk_box_append(GTK_BOX(box), self->warn_revealer);
  return box;
}

/* Shows graph entry i; one never optimized gets the default optimization, as a file opened
 * without a trace does. */
gboolean ox_window_show_graph(OxWindow *self, guint i) {
  if (i == ox_document_get_graph_entry_index(self->doc)) return TRUE;
  if (self->optimize) g_cancellable_cancel(self->optimize);
  GError *err = NULL;
  if (!ox_document_show_graph_entry(self->doc, i, &err)) {
    ox_window_show_error(self, "Cannot show that graph", err->message);
    g_error_free(err);
    return FALSE;
  }
  if (!ox_document_get_trace(self->doc)) ox_window_start_optimize(self);
  return TRUE;
}

static void on_graph_selected(GtkDropDown *dd, GParamSpec *ps, OxWindow *self) {
  (void)ps;
  if (self->syncing_graphs) return;
  guint i = gtk_drop_down_get_selected(dd);
  if (i != GTK_INVALID_LIST_POSITION) ox_window_show_graph(self, i);
}

/* ------------------------------------------------------------------ labels and state */

static void update_step_label(OxWindow *self) {
  guint n = ox_document_get_n_steps(self->doc), p = ox_document_get_position(self->doc);
  char buf[160];
  if (!ox_document_has_graph(self->doc))
    g_snprintf(buf, sizeof buf, "no graph");
  else if (p == 0)
    g_snprintf(buf, sizeof buf, "input · %u steps", n);
  else
    g_snprintf(buf, sizeof buf, "step %u / %u%s", p, n,
               ox_document_get_show_before(self->doc) ? " (before)" : "");
  gtk_label_set_text(GTK_LABEL(self->step_label), buf);
}

/* Nodes of the shown graph as optimus info counts them (the output node is not one), counted
 * again only when the shown state (history, position, before/after, graph) changes. */
static guint shown_node_count(OxWindow *self, const OxGraph *g) {
  OxHistory *h = ox_document_get_history(self->doc);
  guint pos = ox_document_get_position(self->doc);
  gboolean before = ox_document_get_show_before(self->doc);
  if (self->count_key.graph != g || self->count_key.history != h || self->count_key.position != pos ||
      self->count_key.before != before || self->count_key.n_live != g->n_live) {
    /* from the history's per-step counts when it has them (a walk of 100k nodes in list order
     * was a third of the time of a step) */
    guint nodes = ox_history_count_nodes(h, g, ox_document_get_shown_gstep(self->doc));
    self->count_key.graph = g;
    self->count_key.history = h;
    self->count_key.position = pos;
    self->count_key.before = before;
    self->count_key.n_live = g->n_live;
    self->count_key.nodes = nodes;
  }
  return self->count_key.nodes;
}

void ox_window_update_status(OxWindow *self) {
  GString *s = g_string_new(NULL);
  OxGraph *g = ox_document_has_graph(self->doc) ? ox_document_get_graph(self->doc) : NULL;
  const char *path = ox_document_get_path(self->doc);
  if (path) {
    char *base = g_path_get_basename(path);
    g_string_append(s, base);
    g_free(base);
  }
  if (g) {
    /* counted as optimus info counts: the output node is not one */
    g_string_append_printf(s, " · %u nodes", shown_node_count(self, g));
  }
  const char *sn = ox_document_get_shapes_note(self->doc);
  if (sn) g_string_append_printf(s, " · %s", sn);
  const char *st = ox_document_get_status(self->doc);
  if (st) g_string_append_printf(s, " · %s", st);
  if (g)
    g_string_append_printf(s, " · %s view",
                           ox_view_mode_name(ox_scene_get_shown_mode(ox_window_scene(self))));
  if (!ox_graph_view_is_laid_out(OX_GRAPH_VIEW(self->view)) && g) g_string_append(s, " · laying out…");
  if (self->note) g_string_append_printf(s, " · %s", self->note);
  gtk_label_set_text(GTK_LABEL(self->status_label), s->str);
  g_string_free(s, TRUE);
}

static void update_hits(OxWindow *self) {
  const char *err = ox_document_get_search_error(self->doc);
  char buf[300];
  if (err)
    g_snprintf(buf, sizeof buf, "%s", err);
  else if (ox_document_get_search_text(self->doc)) {
    const char *q = ox_document_get_search_text(self->doc);
    guint n = ox_document_get_n_hits(self->doc);
    const char *where = g_str_has_prefix(q, "up:")        ? "upstream"
                        : g_str_has_prefix(q, "down:")    ? "downstream"
                        : g_str_has_prefix(q, "near:")    ? "near it"
                        : g_str_has_prefix(q, "anchors:") ? "anchoring the steps listed"
                                                          : NULL;
    if (where)
      g_snprintf(buf, sizeof buf, "%u node%s %s", n, n == 1 ? "" : "s", where);
    else
      g_snprintf(buf, sizeof buf, "%u matches", n);
  }
  else
    buf[0] = 0;
  gtk_label_set_text(GTK_LABEL(self->hits_label), buf);
}

static void sync_list_selection(OxWindow *self) {
  guint p = ox_document_get_position(self->doc);
  guint row = p ? ox_document_timeline_row(self->doc, p) : G_MAXUINT;
  self->syncing_list = TRUE;
  if (row == G_MAXUINT) {
    gtk_single_selection_set_selected(self->selection, GTK_INVALID_LIST_POSITION);
  } else {
    gtk_single_selection_set_selected(self->selection, row);
    gtk_widget_activate_action(self->list_view, "list.scroll-to-item", "u", row);
    refocus_row(self);
  }
  self->syncing_list = FALSE;
}

static void rebuild_pass_list(OxWindow *self) {
  const OxTrace *t = ox_document_get_trace(self->doc);
  self->syncing_passes = TRUE;
  guint n = g_list_model_get_n_items(G_LIST_MODEL(self->pass_list));
  GPtrArray *names = g_ptr_array_new();
  g_ptr_array_add(names, (gpointer) "All passes");
  for (guint i = 0; t && i < t->n_steps; i++) {
    gboolean seen = FALSE;
    for (guint j = 1; j < names->len && !seen; j++) seen = strcmp(names->pdata[j], t->steps[i].pass) == 0;
    if (!seen) g_ptr_array_add(names, (gpointer)t->steps[i].pass);
  }
  g_ptr_array_add(names, NULL);
  gtk_string_list_splice(self->pass_list, 0, n, (const char *const *)names->pdata);
  g_ptr_array_free(names, TRUE);
  gtk_drop_down_set_selected(GTK_DROP_DOWN(self->pass_dropdown), 0);
  self->syncing_passes = FALSE;
}

void ox_window_update_actions(OxWindow *self) {
  gboolean has = ox_document_has_graph(self->doc);
  gboolean busy = ox_document_get_busy(self->doc);
  guint n = ox_document_get_n_steps(self->doc), p = ox_document_get_position(self->doc);
  gboolean laid = ox_graph_view_is_laid_out(OX_GRAPH_VIEW(self->view));
  gboolean any_after = FALSE;
  for (guint q = p + 1; q <= n && !any_after; q++) any_after = ox_document_step_visible(self->doc, q);
  action_enable(self, "step-next", has && any_after);
  action_enable(self, "step-prev", has && p > 0);
  action_enable(self, "step-first", has && p > 0);
  action_enable(self, "step-last", has && any_after);
  action_enable(self, "play", has && n > 0);
  action_enable(self, "goto-step", has && n > 0);
  action_enable(self, "before", has && ox_document_get_step(self->doc) != NULL);
  action_enable(self, "select-node", has);
  action_enable(self, "graph", has && ox_document_get_n_graph_entries(self->doc) > 1);
  const OxGraphEntry *ge =
      has ? ox_document_get_graph_entry(self->doc, ox_document_get_graph_entry_index(self->doc)) : NULL;
  action_enable(self, "graph-parent", ge && ge->depth > 0);
  action_enable(self, "fit", laid);
  action_enable(self, "zoom-in", laid);
  action_enable(self, "zoom-out", laid);
  action_enable(self, "zoom-reset", laid);
  action_enable(self, "zoom-selection", laid && ox_document_get_selected(self->doc));
  action_enable(self, "center-step", laid && ox_document_get_step(self->doc) != NULL);
  action_enable(self, "search", has);
  action_enable(self, "search-next", ox_document_get_n_hits(self->doc) > 0);
  action_enable(self, "search-prev", ox_document_get_n_hits(self->doc) > 0);
  action_enable(self, "export", has);
  action_enable(self, "export-to", has);
  action_enable(self, "export-trace", n > 0);
  const OxStep *cur = ox_document_get_step(self->doc);
  action_enable(self, "whatif-refuse", cur && cur->kind == OX_STEP_APPLIED);
  action_enable(self, "whatif-run", n > 0);
  action_enable(self, "compare-trace", has);
  action_enable(self, "compare-close", self->cmp_doc != NULL);
  action_enable(self, "diff-graph", has);
  action_enable(self, "open-trace", has && !busy);
  action_enable(self, "open-rules", has);
  action_enable(self, "optimize", has && !busy);
  action_enable(self, "optimize-with", has && !busy);
  action_enable(self, "shapes", has);
  action_enable(self, "apply-shapes", has);
  action_enable(self, "cancel", busy);
  action_enable(self, "filter-touching",
                ox_document_get_selected(self->doc) != NULL || ox_document_get_filter_touching(self->doc));
  if (self->play_source && !any_after) {
    g_source_remove(self->play_source);
    self->play_source = 0;
    ox_window_action_set_bool(self, "play", FALSE);
  }
}

static void on_doc_frame_changed(OxWindow *self) {
  /* panels and the timeline follow position, before/after and selection; a frame for a new
   * search (every keystroke) changes none of them, and rebuilding them scans the whole trace */
  guint pos = ox_document_get_position(self->doc);
  gboolean before = ox_document_get_show_before(self->doc);
  const char *sel = ox_document_get_selected(self->doc);
  OxHistory *h = ox_document_get_history(self->doc);
  gboolean same = self->frame_history == h && self->frame_position == pos && self->frame_before == before &&
                  g_strcmp0(self->frame_selected, sel) == 0;
  update_step_label(self);
  ox_window_update_status(self);
  if (!same) {
    self->frame_history = h;
    self->frame_position = pos;
    self->frame_before = before;
    g_free(self->frame_selected);
    self->frame_selected = g_strdup(sel);
    sync_list_selection(self);
    ox_window_update_panels(self);
  }
  ox_window_update_actions(self);
}

static gboolean open_pending_idle(gpointer data) {
  OxWindow *self = data;
  if (self->doc) ox_window_open_pending_trace(self);
  g_object_unref(self);
  return G_SOURCE_REMOVE;
}

/* the drop-down shows the document's pass filter (set by the Passes panel too) */
static void sync_pass_dropdown(OxWindow *self) {
  const char *pass = ox_document_get_filter_pass(self->doc);
  guint n = g_list_model_get_n_items(G_LIST_MODEL(self->pass_list)), want = 0;
  for (guint i = 1; pass && i < n && !want; i++)
    if (strcmp(gtk_string_list_get_string(self->pass_list, i), pass) == 0) want = i;
  if (gtk_drop_down_get_selected(GTK_DROP_DOWN(self->pass_dropdown)) == want) return;
  self->syncing_passes = TRUE;
  gtk_drop_down_set_selected(GTK_DROP_DOWN(self->pass_dropdown), want);
  self->syncing_passes = FALSE;
}

static void on_doc_notify(OxDocument *doc, GParamSpec *ps, OxWindow *self) {
  (void)doc;
  const char *name = g_param_spec_get_name(ps);
  if (!strcmp(name, "show-before"))
    ox_window_action_set_bool(self, "before", ox_document_get_show_before(self->doc));
  if (!strcmp(name, "n-hits") || !strcmp(name, "search-text")) update_hits(self);
  if (!strcmp(name, "filter-touching"))
    ox_window_action_set_bool(self, "filter-touching", ox_document_get_filter_touching(self->doc));
  if (!strcmp(name, "filter-pass")) sync_pass_dropdown(self);
  if (!strcmp(name, "filter-coverage")) {
    const char *c = ox_document_get_filter_coverage(self->doc);
    if (c) {
      char *m = g_markup_printf_escaped("<small>only <b>%s</b></small>", c);
      gtk_label_set_markup(GTK_LABEL(self->cov_label), m);
      g_free(m);
    }
    gtk_widget_set_visible(self->cov_bar, c != NULL);
    ox_window_update_panels(self);
    ox_window_update_actions(self);
  }
  if (!strcmp(name, "filter-kinds")) {
    guint k = ox_document_get_filter_kinds(self->doc);
    ox_window_action_set_bool(self, "filter-applied", k & OX_FILTER_APPLIED);
    ox_window_action_set_bool(self, "filter-rejected", k & OX_FILTER_REJECTED);
    ox_window_action_set_bool(self, "filter-check-failed", k & OX_FILTER_CHECK_FAILED);
  }
  if (!strcmp(name, "busy")) {
    gboolean busy = ox_document_get_busy(self->doc);
    gtk_revealer_set_reveal_child(GTK_REVEALER(self->progress_revealer), busy);
    if (!busy && self->pending_trace) g_idle_add(open_pending_idle, g_object_ref(self)); /* not inside the notify */
  }
  if (!strcmp(name, "progress"))
    gtk_progress_bar_set_fraction(GTK_PROGRESS_BAR(self->progress_bar), ox_document_get_progress(self->doc));
  if (!strcmp(name, "status")) {
    const char *st = ox_document_get_status(self->doc);
    gtk_progress_bar_set_text(GTK_PROGRESS_BAR(self->progress_bar), st ? st : "");
    ox_window_update_status(self);
  }
  if (!strcmp(name, "path")) {
    const char *path = ox_document_get_path(self->doc);
    char *base = path ? g_path_get_basename(path) : NULL;
    char *title = g_strdup_printf("%s%sOptimus Debugger", base ? base : "", base ? " — " : "");
    gtk_window_set_title(GTK_WINDOW(self), title);
    g_free(title);
    g_free(base);
  }
  ox_window_update_actions(self);
}

static void on_history_changed(OxWindow *self) {
  self->frame_history = NULL;
  ox_window_coverage_forget(self);
  graphs_rebuild(self);
  warnings_rebuild(self);
  rebuild_pass_list(self);
  on_doc_frame_changed(self);
}

/* a hint's re-run finished: the Why not? panel says what it found */
static void on_whatif_done(OxDocument *doc, const char *option, OxWindow *self) {
  (void)doc;
  (void)option;
  ox_window_update_panels(self);
}

static void on_view_notify(OxWindow *self) {
  ox_window_update_status(self);
  ox_window_update_actions(self);
}

/* Letter keys, active while focus is in the main pane (not in the search entry). */
static const struct {
  const char *trigger, *action, *target;
} pane_keys[] = {
  {"n", "win.step-next", NULL},    {"Right", "win.step-next", NULL}, {"p", "win.step-prev", NULL},
  {"Left", "win.step-prev", NULL}, {"Home", "win.step-first", NULL}, {"End", "win.step-last", NULL},
  {"space", "win.play", NULL},     {"b", "win.before", NULL},        {"f", "win.fit", NULL},
  {"plus", "win.zoom-in", NULL},   {"equal", "win.zoom-in", NULL},   {"KP_Add", "win.zoom-in", NULL},
  {"minus", "win.zoom-out", NULL}, {"KP_Subtract", "win.zoom-out", NULL}, {"1", "win.zoom-reset", NULL},
  {"z", "win.zoom-selection", NULL}, {"c", "win.center-step", NULL}, {"e", "win.edge-labels", NULL},
  {"slash", "win.search", NULL},   {"i", "win.panel", "node"},      {"w", "win.panel", "why"},
  {"k", "win.panel", "checks"},    {"a", "win.panel", "whatif"},    {"r", "win.panel", "passes"},     {"d", "win.whatif-refuse", NULL},
  {"o", "win.view-mode", "overview"}, {"x", "win.view-mode", "focus"}, {"g", "win.view-mode", "full"},
  {"v", "win.view-mode", "auto"},     {"bracketright", "win.radius-more", NULL},
  {"bracketleft", "win.radius-less", NULL}, {"m", "win.minimap", NULL}, {"u", "win.collapse-selection", NULL},
};

/* ------------------------------------------------------------------ construction */

static void on_search_changed(GtkSearchEntry *e, OxWindow *self) {
  ox_document_set_search_text(self->doc, gtk_editable_get_text(GTK_EDITABLE(e)));
}
static void on_search_activate(GtkSearchEntry *e, OxWindow *self) {
  (void)e;
  gtk_widget_activate_action(GTK_WIDGET(self), "win.search-next", NULL);
}

static void on_list_selected(GtkSingleSelection *sel, GParamSpec *ps, OxWindow *self) {
  (void)ps;
  if (self->syncing_list) return;
  OxStepItem *it = gtk_single_selection_get_selected_item(sel);
  if (it) ox_document_set_position(self->doc, it->position);
}

static void on_pass_selected(GtkDropDown *dd, GParamSpec *ps, OxWindow *self) {
  (void)ps;
  if (self->syncing_passes) return;
  guint i = gtk_drop_down_get_selected(dd);
  const char *name = i && i != GTK_INVALID_LIST_POSITION ? gtk_string_list_get_string(self->pass_list, i) : NULL;
  ox_document_set_filter_pass(self->doc, name);
}

/* ---- the timeline's keyboard: once a row has the focus, the stepping keys step (the list view
 * would otherwise take the arrows, Home, End and Space to move its cursor), and the focus
 * follows the current step's row. */

static const struct {
  const char *trigger, *action;
} list_keys[] = {
  {"Down", "win.step-next"}, {"KP_Down", "win.step-next"}, {"Right", "win.step-next"}, {"KP_Right", "win.step-next"},
  {"Up", "win.step-prev"},   {"KP_Up", "win.step-prev"},   {"Left", "win.step-prev"},  {"KP_Left", "win.step-prev"},
  {"Home", "win.step-first"}, {"KP_Home", "win.step-first"}, {"End", "win.step-last"}, {"KP_End", "win.step-last"},
  {"space", "win.play"},
};

/* The list item widget showing position, if it is built (rows are built as they scroll in). */
static GtkWidget *row_widget(OxWindow *self, guint position) {
  for (GtkWidget *c = gtk_widget_get_first_child(self->list_view); c; c = gtk_widget_get_next_sibling(c)) {
    GtkWidget *row = gtk_widget_get_first_child(c);
    if (row && OX_IS_STEP_ROW(row) && GPOINTER_TO_UINT(g_object_get_data(G_OBJECT(row), "position")) == position &&
        gtk_widget_get_mapped(c))
      return c;
  }
  return NULL;
}

static gboolean refocus_cb(gpointer data) {
  OxWindow *self = data;
  GtkWidget *focus = gtk_root_get_focus(GTK_ROOT(self));
  guint p = ox_document_get_position(self->doc);
  if (!p || !focus || !gtk_widget_is_ancestor(focus, self->list_view)) {
    self->refocus_source = 0;
    return G_SOURCE_REMOVE;
  }
  GtkWidget *w = row_widget(self, p);
  if (w) {
    if (focus != w) gtk_widget_grab_focus(w);
    self->refocus_source = 0;
    return G_SOURCE_REMOVE;
  }
  if (++self->refocus_tries > 20) { /* the row was never built (filtered out, or no frames) */
    self->refocus_source = 0;
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

/* after a step: the row scrolled into view is built at the next layout; focus it then */
static void refocus_row(OxWindow *self) {
  GtkWidget *focus = gtk_root_get_focus(GTK_ROOT(self));
  if (!focus || !gtk_widget_is_ancestor(focus, self->list_view)) return;
  self->refocus_tries = 0;
  if (!self->refocus_source) self->refocus_source = g_timeout_add(16, refocus_cb, self);
}

static void row_setup(GtkSignalListItemFactory *f, GtkListItem *li, gpointer data) {
  (void)f;
  (void)data;
  gtk_list_item_set_child(li, ox_step_row_new());
}

static void row_bind(GtkSignalListItemFactory *f, GtkListItem *li, gpointer data) {
  (void)f;
  OxStepItem *it = gtk_list_item_get_item(li);
  GdkRGBA dot;
  gdk_rgba_parse(&dot, ox_window_kind_color(it->kind));
  ox_step_row_set(OX_STEP_ROW(gtk_list_item_get_child(li)), it->header, it->header ? NULL : &dot, it->title,
                  it->subtitle);
  g_object_set_data(G_OBJECT(gtk_list_item_get_child(li)), "position", GUINT_TO_POINTER(it->header ? 0 : it->position));
  gtk_list_item_set_selectable(li, !it->header);
  gtk_list_item_set_activatable(li, !it->header);
  ox_window_whatif_row_bound(data, gtk_list_item_get_child(li), it->header ? 0 : it->position);
}

static void row_unbind(GtkSignalListItemFactory *f, GtkListItem *li, gpointer data) {
  (void)f;
  ox_window_whatif_row_unbound(data, gtk_list_item_get_child(li));
}

static GtkWidget *toggle_button(const char *label, const char *action, const char *tip) {
  GtkWidget *b = gtk_toggle_button_new_with_label(label);
  gtk_actionable_set_action_name(GTK_ACTIONABLE(b), action);
  gtk_widget_set_tooltip_text(b, tip);
  gtk_widget_add_css_class(b, "flat");
  return b;
}

static GtkWidget *icon_button(const char *icon, const char *action, const char *tip) {
  GtkWidget *b = gtk_button_new_from_icon_name(icon);
  gtk_actionable_set_action_name(GTK_ACTIONABLE(b), action);
  gtk_widget_set_tooltip_text(b, tip);
  return b;
}

static GMenuModel *build_menu(OxWindow *self) {
  GMenu *menu = g_menu_new();
  GMenu *file = g_menu_new();
  g_menu_append(file, "_Open…", "win.open");
  g_menu_append(file, "Open _Trace…", "win.open-trace");
  g_menu_append(file, "Open _Rules… (re-runs on save)", "win.open-rules");
  g_menu_append(file, "Input _Shapes…", "win.shapes");
  g_menu_append(file, "_Compare with Trace…", "win.compare-trace");
  g_menu_append(file, "C_lose Comparison", "win.compare-close");
  g_menu_append(file, "_Diff with Graph…", "win.diff-graph");
  g_menu_append_submenu(file, "Open _Recent", G_MENU_MODEL(self->recent_menu));
  g_menu_append_section(menu, NULL, G_MENU_MODEL(file));
  GMenu *exp = g_menu_new();
  g_menu_append(exp, "Graph as _JSON…", "win.export::json");
  g_menu_append(exp, "Graph as _FX Text…", "win.export::fx");
  g_menu_append(exp, "Graph as _DOT…", "win.export::dot");
  g_menu_append(exp, "Graph as _SVG…", "win.export::svg");
  g_menu_append(exp, "Graph as _PNG…", "win.export::png");
  g_menu_append(exp, "_Trace as JSON…", "win.export-trace");
  GMenu *exps = g_menu_new();
  g_menu_append_submenu(exps, "_Export Current Step", G_MENU_MODEL(exp));
  g_menu_append_section(menu, NULL, G_MENU_MODEL(exps));
  GMenu *view = g_menu_new();
  g_menu_append(view, "_Automatic View", "win.view-mode::auto");
  g_menu_append(view, "_Whole Graph", "win.view-mode::full");
  g_menu_append(view, "_Focus on Step / Selection", "win.view-mode::focus");
  g_menu_append(view, "_Overview of Clusters", "win.view-mode::overview");
  GMenu *engines = g_menu_new();
  g_menu_append(engines, "_Automatic (dot for small graphs, built-in for the rest)", "win.layout-engine::auto");
  g_menu_append(engines, "Graphviz _dot (within 2 s, else built-in)", "win.layout-engine::dot");
  g_menu_append(engines, "_Built-in Layered", "win.layout-engine::layered");
  g_menu_append_submenu(view, "_Layout", G_MENU_MODEL(engines));
  g_object_unref(engines);
  g_menu_append(view, "_Minimap", "win.minimap");
  g_menu_append(view, "Edge _Shapes", "win.edge-labels");
  g_menu_append(view, "Show _Before Step", "win.before");
  g_menu_append(view, "Re-run _Optimization", "win.optimize");
  g_menu_append_section(menu, NULL, G_MENU_MODEL(view));
  GMenu *app = g_menu_new();
  g_menu_append(app, "_Keyboard Shortcuts", "win.show-help-overlay");
  g_menu_append(app, "_About Optimus Debugger", "app.about");
  g_menu_append(app, "_Quit", "app.quit");
  g_menu_append_section(menu, NULL, G_MENU_MODEL(app));
  g_object_unref(file);
  g_object_unref(exp);
  g_object_unref(exps);
  g_object_unref(view);
  g_object_unref(app);
  return G_MENU_MODEL(menu);
}

static GtkWidget *build_timeline(OxWindow *self) {
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);
  gtk_widget_set_size_request(box, 260, -1);
  GtkWidget *filters = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 2);
  gtk_widget_set_margin_start(filters, 4);
  gtk_widget_set_margin_top(filters, 4);
  gtk_box_append(GTK_BOX(filters), toggle_button("applied", "win.filter-applied", "Show applied steps"));
  gtk_box_append(GTK_BOX(filters), toggle_button("rejected", "win.filter-rejected", "Show rejected attempts"));
  gtk_box_append(GTK_BOX(filters), toggle_button("failed", "win.filter-check-failed", "Show steps whose check failed"));
  gtk_box_append(GTK_BOX(filters), toggle_button("node", "win.filter-touching", "Only steps that mention the selected node"));
  gtk_box_append(GTK_BOX(box), filters);
  self->pass_list = gtk_string_list_new(NULL);
  self->pass_dropdown = gtk_drop_down_new(G_LIST_MODEL(g_object_ref(self->pass_list)), NULL);
  gtk_widget_set_margin_start(self->pass_dropdown, 4);
  gtk_widget_set_margin_end(self->pass_dropdown, 4);
  g_signal_connect(self->pass_dropdown, "notify::selected", G_CALLBACK(on_pass_selected), self);
  gtk_box_append(GTK_BOX(box), self->pass_dropdown);
  /* the Passes panel's drill-down, while one is set: what it shows, and a way back to all */
  self->cov_bar = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 4);
  gtk_widget_set_margin_start(self->cov_bar, 6);
  gtk_widget_set_margin_end(self->cov_bar, 4);
  self->cov_label = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(self->cov_label), 0);
  gtk_label_set_wrap(GTK_LABEL(self->cov_label), TRUE);
  gtk_label_set_wrap_mode(GTK_LABEL(self->cov_label), PANGO_WRAP_WORD_CHAR);
  gtk_widget_set_hexpand(self->cov_label, TRUE);
  gtk_box_append(GTK_BOX(self->cov_bar), self->cov_label);
  GtkWidget *clear = gtk_button_new_from_icon_name("window-close-symbolic");
  gtk_widget_add_css_class(clear, "flat");
  gtk_widget_set_valign(clear, GTK_ALIGN_START);
  gtk_widget_set_tooltip_text(clear, "Show every step again");
  gtk_actionable_set_action_name(GTK_ACTIONABLE(clear), "win.filter-coverage");
  gtk_actionable_set_action_target(GTK_ACTIONABLE(clear), "s", "");
  gtk_box_append(GTK_BOX(self->cov_bar), clear);
  gtk_widget_set_visible(self->cov_bar, FALSE);
  gtk_box_append(GTK_BOX(box), self->cov_bar);
  self->selection = gtk_single_selection_new(g_object_ref(ox_document_get_timeline(self->doc)));
  gtk_single_selection_set_autoselect(self->selection, FALSE);
  gtk_single_selection_set_can_unselect(self->selection, TRUE);
  g_signal_connect(self->selection, "notify::selected", G_CALLBACK(on_list_selected), self);
  GtkListItemFactory *f = gtk_signal_list_item_factory_new();
  g_signal_connect(f, "setup", G_CALLBACK(row_setup), NULL);
  g_signal_connect(f, "bind", G_CALLBACK(row_bind), self);
  g_signal_connect(f, "unbind", G_CALLBACK(row_unbind), self);
  self->list_view = gtk_list_view_new(GTK_SELECTION_MODEL(g_object_ref(self->selection)), f);
  gtk_widget_add_css_class(self->list_view, "navigation-sidebar");
  GtkEventController *keys = gtk_shortcut_controller_new();
  gtk_event_controller_set_propagation_phase(keys, GTK_PHASE_CAPTURE);
  for (guint i = 0; i < G_N_ELEMENTS(list_keys); i++)
    gtk_shortcut_controller_add_shortcut(GTK_SHORTCUT_CONTROLLER(keys),
                                         gtk_shortcut_new(gtk_shortcut_trigger_parse_string(list_keys[i].trigger),
                                                          gtk_named_action_new(list_keys[i].action)));
  gtk_widget_add_controller(self->list_view, keys);
  GtkWidget *sw = gtk_scrolled_window_new();
  gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), self->list_view);
  gtk_widget_set_vexpand(sw, TRUE);
  gtk_box_append(GTK_BOX(box), sw);
  return box;
}

static GtkWidget *build_panels(OxWindow *self) {
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);
  gtk_widget_set_size_request(box, OX_WINDOW_PANEL_WIDTH, -1); /* until placed (place_panels) */
  self->stack = gtk_stack_new();
  /* sized by the visible panel only: a homogeneous stack measures the hidden panels' wrapped
   * labels at every step too */
  gtk_stack_set_hhomogeneous(GTK_STACK(self->stack), FALSE);
  gtk_stack_set_vhomogeneous(GTK_STACK(self->stack), FALSE);
  const char *titles[OX_WINDOW_N_PANELS] = {"Node", "Why not?", "Checks", "Passes"};
  for (int i = 0; i < OX_WINDOW_N_PANELS; i++) {
    if (i == 3) /* What if? sits between Checks and Passes */
      gtk_stack_add_titled(GTK_STACK(self->stack), ox_window_whatif_build(self), "whatif", "What if?");
    GtkWidget *l = gtk_label_new(NULL);
    gtk_label_set_xalign(GTK_LABEL(l), 0);
    gtk_label_set_yalign(GTK_LABEL(l), 0);
    gtk_label_set_wrap(GTK_LABEL(l), TRUE);
    gtk_label_set_wrap_mode(GTK_LABEL(l), PANGO_WRAP_WORD_CHAR);
    gtk_label_set_selectable(GTK_LABEL(l), FALSE);
    gtk_widget_set_margin_start(l, 8);
    gtk_widget_set_margin_end(l, 8);
    gtk_widget_set_margin_top(l, 6);
    g_signal_connect(l, "activate-link", G_CALLBACK(ox_window_on_activate_link), self);
    self->panel_label[i] = l;
    GtkWidget *sw = gtk_scrolled_window_new();
    gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
    gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), l);
    gtk_stack_add_titled(GTK_STACK(self->stack), sw, ox_window_panel_names[i], titles[i]);
  }
  gtk_widget_set_vexpand(self->stack, TRUE);
  GtkWidget *sw = gtk_stack_switcher_new();
  gtk_stack_switcher_set_stack(GTK_STACK_SWITCHER(sw), GTK_STACK(self->stack));
  gtk_widget_set_halign(sw, GTK_ALIGN_CENTER);
  gtk_widget_add_css_class(sw, "panel-switcher");
  gtk_widget_set_margin_top(sw, 4);
  gtk_box_append(GTK_BOX(box), sw);
  gtk_box_append(GTK_BOX(box), self->stack);
  return box;
}

static const char shortcuts_ui[] =
  "<interface><object class='GtkShortcutsWindow' id='help_overlay'><property name='modal'>1</property>"
  "<child><object class='GtkShortcutsSection'><property name='section-name'>main</property>"
  "%s</object></child></object></interface>";

static void add_shortcut(GString *s, const char *accel, const char *title) {
  char *a = g_markup_escape_text(accel, -1), *t = g_markup_escape_text(title, -1);
  g_string_append_printf(s,
                         "<child><object class='GtkShortcutsShortcut'><property name='accelerator'>%s</property>"
                         "<property name='title'>%s</property></object></child>",
                         a, t);
  g_free(a);
  g_free(t);
}

static void install_help_overlay(OxWindow *self) {
  GString *g = g_string_new(NULL);
  g_string_append(g, "<child><object class='GtkShortcutsGroup'><property name='title'>Steps</property>");
  add_shortcut(g, "n Right", "Next step");
  add_shortcut(g, "p Left", "Previous step");
  add_shortcut(g, "Home", "Input graph");
  add_shortcut(g, "End", "Last step");
  add_shortcut(g, "space", "Play / pause");
  add_shortcut(g, "b", "Toggle before / after the step");
  add_shortcut(g, "c", "Centre on the step");
  g_string_append(g, "</object></child>");
  g_string_append(g, "<child><object class='GtkShortcutsGroup'><property name='title'>Canvas</property>");
  add_shortcut(g, "f", "Fit graph");
  add_shortcut(g, "plus equal", "Zoom in");
  add_shortcut(g, "minus", "Zoom out");
  add_shortcut(g, "1", "Zoom 100%");
  add_shortcut(g, "z", "Zoom to selection");
  add_shortcut(g, "e", "Edge shapes on / off");
  add_shortcut(g, "o", "Overview of clusters (double-click a cluster to expand)");
  add_shortcut(g, "x", "Focus view around the step / selection");
  add_shortcut(g, "g", "Whole graph (when it fits the node budget)");
  add_shortcut(g, "v", "Automatic view");
  add_shortcut(g, "bracketleft bracketright", "Focus radius − / +");
  add_shortcut(g, "u", "Collapse the cluster holding the selection");
  add_shortcut(g, "m", "Minimap on / off");
  add_shortcut(g, "<ctrl>", "Ctrl+scroll: zoom; drag or scroll: pan");
  g_string_append(g, "</object></child>");
  g_string_append(g, "<child><object class='GtkShortcutsGroup'><property name='title'>Search and panels</property>");
  add_shortcut(g, "<ctrl>f slash", "Search (name, target, op:family, /regex/)");
  add_shortcut(g, "<ctrl>g", "Next match");
  add_shortcut(g, "<ctrl><shift>g", "Previous match");
  add_shortcut(g, "i", "Node inspector");
  add_shortcut(g, "w", "Why not? panel");
  add_shortcut(g, "k", "Checks panel");
  add_shortcut(g, "a", "What if? panel");
  add_shortcut(g, "r", "Passes panel: what each pass tried, applied and refused");
  add_shortcut(g, "d", "Refuse / take back the current step in the what-if");
  add_shortcut(g, "<Control>Return", "Run the what-if");
  g_string_append(g, "</object></child>");
  g_string_append(g, "<child><object class='GtkShortcutsGroup'><property name='title'>Files</property>");
  add_shortcut(g, "<ctrl>o", "Open a graph dump");
  add_shortcut(g, "<ctrl><shift>o", "Open a trace for this graph");
  add_shortcut(g, "<ctrl>s", "Export the current step as JSON");
  add_shortcut(g, "<ctrl><shift>e", "Export the trace");
  add_shortcut(g, "<ctrl>period", "Cancel the optimization");
  add_shortcut(g, "<alt>Up", "Back to the enclosing graph");
  add_shortcut(g, "<ctrl>w", "Close window");
  add_shortcut(g, "<ctrl>q", "Quit");
  add_shortcut(g, "<ctrl>question", "Keyboard shortcuts");
  g_string_append(g, "</object></child>");
  char *ui = g_strdup_printf(shortcuts_ui, g->str);
  GtkBuilder *b = gtk_builder_new_from_string(ui, -1);
  gtk_application_window_set_help_overlay(GTK_APPLICATION_WINDOW(self),
                                          GTK_SHORTCUTS_WINDOW(gtk_builder_get_object(b, "help_overlay")));
  g_object_unref(b);
  g_free(ui);
  g_string_free(g, TRUE);
}

static void ox_window_init(OxWindow *self) {
  self->doc = ox_document_new();
  self->hint_auto_max = HINT_AUTO_MAX_NODES;
  self->rule_sets = g_ptr_array_new_with_free_func((GDestroyNotify)ox_rules_free);
  self->recent_menu = g_menu_new();
  ox_window_compare_init(self);
  gtk_window_set_title(GTK_WINDOW(self), "Optimus Debugger");
  gtk_window_set_default_size(GTK_WINDOW(self), 1280, 800);
  gtk_window_set_icon_name(GTK_WINDOW(self), "io.github.optimus.Debugger");
  ox_window_actions_init(self);

  /* header bar */
  GtkWidget *hb = gtk_header_bar_new();
  gtk_header_bar_pack_start(GTK_HEADER_BAR(hb), icon_button("document-open-symbolic", "win.open", "Open (Ctrl+O)"));
  GtkWidget *steps = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 0);
  gtk_widget_add_css_class(steps, "linked");
  gtk_box_append(GTK_BOX(steps), icon_button("go-first-symbolic", "win.step-first", "Input graph (Home)"));
  gtk_box_append(GTK_BOX(steps), icon_button("go-previous-symbolic", "win.step-prev", "Previous step (p, Left)"));
  GtkWidget *play = gtk_toggle_button_new();
  self->play_button = play;
  gtk_button_set_icon_name(GTK_BUTTON(play), "media-playback-start-symbolic");
  gtk_actionable_set_action_name(GTK_ACTIONABLE(play), "win.play");
  gtk_widget_set_tooltip_text(play, "Play (space)");
  gtk_box_append(GTK_BOX(steps), play);
  g_signal_connect(ox_window_action(self, "play"), "notify::state", G_CALLBACK(ox_window_on_play_state),
                   self);
  gtk_box_append(GTK_BOX(steps), icon_button("go-next-symbolic", "win.step-next", "Next step (n, Right)"));
  gtk_box_append(GTK_BOX(steps), icon_button("go-last-symbolic", "win.step-last", "Last step (End)"));
  gtk_header_bar_pack_start(GTK_HEADER_BAR(hb), steps);
  self->step_label = gtk_label_new("no graph");
  gtk_widget_set_size_request(self->step_label, 150, -1);
  gtk_header_bar_pack_start(GTK_HEADER_BAR(hb), self->step_label);
  self->graph_parent = icon_button("go-up-symbolic", "win.graph-parent", "Back to the enclosing graph (Alt+Up)");
  gtk_widget_set_visible(self->graph_parent, FALSE);
  gtk_header_bar_pack_start(GTK_HEADER_BAR(hb), self->graph_parent);
  self->graph_list = gtk_string_list_new(NULL);
  self->graph_dropdown = gtk_drop_down_new(G_LIST_MODEL(g_object_ref(self->graph_list)), NULL);
  gtk_widget_set_tooltip_text(self->graph_dropdown, "The graphs of this dump, subgraphs under theirs");
  gtk_widget_set_visible(self->graph_dropdown, FALSE);
  g_signal_connect(self->graph_dropdown, "notify::selected", G_CALLBACK(on_graph_selected), self);
  gtk_header_bar_pack_start(GTK_HEADER_BAR(hb), self->graph_dropdown);
  GtkWidget *before = gtk_toggle_button_new_with_label("Before");
  gtk_actionable_set_action_name(GTK_ACTIONABLE(before), "win.before");
  gtk_widget_set_tooltip_text(before, "Show the graph before the step (b)");
  gtk_header_bar_pack_start(GTK_HEADER_BAR(hb), before);
  GtkWidget *menu = gtk_menu_button_new();
  gtk_menu_button_set_icon_name(GTK_MENU_BUTTON(menu), "open-menu-symbolic");
  GMenuModel *model = build_menu(self);
  gtk_menu_button_set_menu_model(GTK_MENU_BUTTON(menu), model);
  g_object_unref(model);
  gtk_header_bar_pack_end(GTK_HEADER_BAR(hb), menu);
  gtk_header_bar_pack_end(GTK_HEADER_BAR(hb), icon_button("edit-find-symbolic", "win.search", "Search (Ctrl+F)"));
  gtk_header_bar_pack_end(GTK_HEADER_BAR(hb), icon_button("zoom-fit-best-symbolic", "win.fit", "Fit (f)"));
  gtk_window_set_titlebar(GTK_WINDOW(self), hb);

  /* body */
  GtkWidget *vbox = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
  self->search_bar = gtk_search_bar_new();
  GtkWidget *sbox = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  self->search_entry = gtk_search_entry_new();
  gtk_widget_set_size_request(self->search_entry, 360, -1);
  g_object_set(self->search_entry, "placeholder-text", "name, target, op:matmul, /regex/, up:NAME", NULL);
  g_signal_connect(self->search_entry, "search-changed", G_CALLBACK(on_search_changed), self);
  g_signal_connect(self->search_entry, "activate", G_CALLBACK(on_search_activate), self);
  gtk_box_append(GTK_BOX(sbox), self->search_entry);
  gtk_box_append(GTK_BOX(sbox), icon_button("go-up-symbolic", "win.search-prev", "Previous match (Ctrl+Shift+G)"));
  gtk_box_append(GTK_BOX(sbox), icon_button("go-down-symbolic", "win.search-next", "Next match (Ctrl+G)"));
  self->hits_label = gtk_label_new(NULL);
  gtk_box_append(GTK_BOX(sbox), self->hits_label);
  gtk_search_bar_set_child(GTK_SEARCH_BAR(self->search_bar), sbox);
  gtk_search_bar_connect_entry(GTK_SEARCH_BAR(self->search_bar), GTK_EDITABLE(self->search_entry));
  gtk_box_append(GTK_BOX(vbox), self->search_bar);

  self->progress_revealer = gtk_revealer_new();
  GtkWidget *pbox = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_widget_set_margin_start(pbox, 8);
  gtk_widget_set_margin_end(pbox, 8);
  gtk_widget_set_margin_top(pbox, 4);
  gtk_widget_set_margin_bottom(pbox, 4);
  self->progress_bar = gtk_progress_bar_new();
  gtk_progress_bar_set_show_text(GTK_PROGRESS_BAR(self->progress_bar), TRUE);
  gtk_widget_set_hexpand(self->progress_bar, TRUE);
  gtk_widget_set_valign(self->progress_bar, GTK_ALIGN_CENTER);
  gtk_box_append(GTK_BOX(pbox), self->progress_bar);
  GtkWidget *cancel = gtk_button_new_with_label("Cancel");
  gtk_actionable_set_action_name(GTK_ACTIONABLE(cancel), "win.cancel");
  gtk_box_append(GTK_BOX(pbox), cancel);
  gtk_revealer_set_child(GTK_REVEALER(self->progress_revealer), pbox);
  gtk_box_append(GTK_BOX(vbox), self->progress_revealer);
  gtk_box_append(GTK_BOX(vbox), build_warning_bar(self));

  self->view = ox_graph_view_new(self->doc);
  gtk_widget_set_hexpand(self->view, TRUE);
  gtk_widget_set_vexpand(self->view, TRUE);
  GtkWidget *overlay = gtk_overlay_new();
  gtk_overlay_set_child(GTK_OVERLAY(overlay), self->view);
  self->minimap = ox_minimap_new(OX_GRAPH_VIEW(self->view));
  gtk_widget_set_halign(self->minimap, GTK_ALIGN_END);
  gtk_widget_set_valign(self->minimap, GTK_ALIGN_END);
  gtk_widget_set_margin_end(self->minimap, 10);
  gtk_widget_set_margin_bottom(self->minimap, 10);
  gtk_overlay_add_overlay(GTK_OVERLAY(overlay), self->minimap);
  GtkWidget *right = gtk_paned_new(GTK_ORIENTATION_HORIZONTAL);
  self->right_pane = right;
  self->canvas_split = gtk_paned_new(GTK_ORIENTATION_HORIZONTAL);
  gtk_paned_set_start_child(GTK_PANED(self->canvas_split), overlay);
  gtk_paned_set_shrink_start_child(GTK_PANED(self->canvas_split), FALSE);
  gtk_paned_set_start_child(GTK_PANED(right), self->canvas_split);
  self->panels = build_panels(self);
  gtk_paned_set_end_child(GTK_PANED(right), self->panels);
  gtk_paned_set_resize_end_child(GTK_PANED(right), FALSE);
  gtk_paned_set_shrink_end_child(GTK_PANED(right), FALSE);
  /* the panels' width is set once the paned knows its own (a position given before the first
   * allocation counts from the left, so a larger window gave the panels all the extra width);
   * after that the canvas takes every change of the window's width */
  g_signal_connect(right, "notify::max-position", G_CALLBACK(ox_window_on_right_pane_allocated), self);
  self->main_pane = gtk_paned_new(GTK_ORIENTATION_HORIZONTAL);
  gtk_paned_set_start_child(GTK_PANED(self->main_pane), build_timeline(self));
  gtk_paned_set_end_child(GTK_PANED(self->main_pane), right);
  gtk_paned_set_resize_start_child(GTK_PANED(self->main_pane), FALSE);
  gtk_paned_set_shrink_start_child(GTK_PANED(self->main_pane), FALSE);
  gtk_paned_set_position(GTK_PANED(self->main_pane), 270);
  gtk_widget_set_vexpand(self->main_pane, TRUE);
  gtk_box_append(GTK_BOX(vbox), self->main_pane);

  GtkEventController *keys = gtk_shortcut_controller_new();
  gtk_event_controller_set_propagation_phase(keys, GTK_PHASE_BUBBLE);
  for (guint i = 0; i < G_N_ELEMENTS(pane_keys); i++) {
    GtkShortcutAction *act = gtk_named_action_new(pane_keys[i].action);
    GtkShortcut *sc = gtk_shortcut_new(gtk_shortcut_trigger_parse_string(pane_keys[i].trigger), act);
    if (pane_keys[i].target) gtk_shortcut_set_arguments(sc, g_variant_new_string(pane_keys[i].target));
    gtk_shortcut_controller_add_shortcut(GTK_SHORTCUT_CONTROLLER(keys), sc);
  }
  gtk_widget_add_controller(self->main_pane, keys);

  self->status_label = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(self->status_label), 0);
  gtk_label_set_ellipsize(GTK_LABEL(self->status_label), PANGO_ELLIPSIZE_END);
  gtk_widget_set_margin_start(self->status_label, 8);
  gtk_widget_set_margin_top(self->status_label, 3);
  gtk_widget_set_margin_bottom(self->status_label, 3);
  gtk_widget_add_css_class(self->status_label, "dim-label");
  gtk_box_append(GTK_BOX(vbox), gtk_separator_new(GTK_ORIENTATION_HORIZONTAL));
  gtk_box_append(GTK_BOX(vbox), self->status_label);
  gtk_window_set_child(GTK_WINDOW(self), vbox);

  GtkDropTarget *drop = gtk_drop_target_new(GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);
  g_signal_connect(drop, "drop", G_CALLBACK(ox_window_on_drop), self);
  gtk_widget_add_controller(GTK_WIDGET(self), GTK_EVENT_CONTROLLER(drop));

  g_signal_connect_swapped(self->doc, "frame-changed", G_CALLBACK(on_doc_frame_changed), self);
  g_signal_connect_swapped(self->doc, "history-changed", G_CALLBACK(on_history_changed), self);
  g_signal_connect(self->doc, "whatif-done", G_CALLBACK(on_whatif_done), self);
  g_signal_connect(self->doc, "notify", G_CALLBACK(on_doc_notify), self);
  g_signal_connect_swapped(self->view, "notify::laid-out", G_CALLBACK(on_view_notify), self);
  g_signal_connect_swapped(ox_window_scene(self), "notify::mode", G_CALLBACK(ox_window_on_scene_mode), self);
  g_signal_connect_swapped(ox_window_scene(self), "notify::shown-mode", G_CALLBACK(ox_window_on_scene_mode),
                           self);
  install_help_overlay(self);
  ox_window_recent_rebuild(self);
  ox_window_update_panels(self);
  ox_window_update_actions(self);
  gtk_widget_grab_focus(self->view);
}

static void ox_window_dispose(GObject *o) {
  OxWindow *self = OX_WINDOW(o);
  if (self->play_source) g_source_remove(self->play_source);
  self->play_source = 0;
  if (self->refocus_source) g_source_remove(self->refocus_source);
  self->refocus_source = 0;
  if (self->optimize) g_cancellable_cancel(self->optimize);
  g_clear_object(&self->optimize);
  if (self->doc) g_signal_handlers_disconnect_by_data(self->doc, self);
  ox_window_compare_dispose(self);
  if (self->rules_reload_source) g_source_remove(self->rules_reload_source);
  self->rules_reload_source = 0;
  if (self->rules_monitor) g_signal_handlers_disconnect_by_data(self->rules_monitor, self);
  g_clear_object(&self->rules_monitor);
  G_OBJECT_CLASS(ox_window_parent_class)->dispose(o);
  g_clear_object(&self->selection);
  g_clear_object(&self->pass_list);
  g_clear_object(&self->graph_list);
  g_clear_object(&self->recent_menu);
  g_clear_object(&self->doc);
}

static void ox_window_finalize(GObject *o) {
  OxWindow *self = OX_WINDOW(o);
  g_free(self->rules_path);
  if (self->rule_sets) g_ptr_array_free(self->rule_sets, TRUE);
  g_free(self->last_error);
  g_free(self->note);
  g_free(self->frame_selected);
  for (int i = 0; i < OX_WINDOW_N_PANELS; i++) g_free(self->panel_markup[i]);
  ox_window_coverage_forget(self);
  ox_window_whatif_dispose(self); /* after the widgets: rows unbound during dispose use it */
  ox_window_compare_finalize(self);
  G_OBJECT_CLASS(ox_window_parent_class)->finalize(o);
}

static void ox_window_class_init(OxWindowClass *k) {
  G_OBJECT_CLASS(k)->dispose = ox_window_dispose;
  G_OBJECT_CLASS(k)->finalize = ox_window_finalize;
}

OxWindow *ox_window_new(GtkApplication *app) {
  return g_object_new(OX_TYPE_WINDOW, "application", app, NULL);
}
OxDocument *ox_window_get_document(OxWindow *self) { return self->doc; }
OxGraphView *ox_window_get_view(OxWindow *self) { return OX_GRAPH_VIEW(self->view); }
GtkWidget *ox_window_get_minimap(OxWindow *self) { return self->minimap; }
const char *ox_window_get_last_error(OxWindow *self) { return self->last_error; }
guint ox_window_get_n_exports(OxWindow *self) { return self->n_exports; }
