/* ox-window-files.c - the main window's file work (ox-window-private.h): opening graphs and
 * traces (dialogs, recent files, drag and drop, the trace parsed off the main thread), input
 * shapes (--shapes), rule files (open, watch, reload) and export on a worker thread.
 */
#include "ox-window-private.h"

#include <string.h>

#include "rules/ox_rules.h"

/* ------------------------------------------------------------------ open */

/* What the window remembers of a file, in the recent-files store (GtkRecentManager, the same
 * ~/.local/share/recently-used.xbel every GTK app uses; there are no GSettings schemas to rely
 * on): each graph the window opened is an item of group "optimus-graph" whose command line for
 * this app reopens it as it was last shown: its trace, graph index and shapes. Rule files are
 * items of group "optimus-rules" (the Open Rules dialog starts in the newest one's folder).
 * The command line is written with every argument shell-quoted and '%' doubled (the store
 * expands %f and %u). */
#define RECENT_GRAPH_GROUP "optimus-graph"
#define RECENT_RULES_GROUP "optimus-rules"

typedef struct Remembered {
  char *trace;      /* or NULL */
  guint top;        /* 0-based top-level graph */
  char **specs;     /* --input-shape, or NULL */
  char *shapes;     /* --shapes, or NULL */
} Remembered;

static void remembered_clear(Remembered *r) {
  g_free(r->trace);
  g_strfreev(r->specs);
  g_free(r->shapes);
  memset(r, 0, sizeof *r);
}

static char *path_uri(const char *path) {
  char *abs = g_canonicalize_filename(path, NULL);
  char *uri = g_filename_to_uri(abs, NULL, NULL);
  g_free(abs);
  return uri;
}

static void exec_arg(GString *s, const char *arg) {
  char *q = g_shell_quote(arg);
  g_string_append_c(s, ' ');
  for (const char *c = q; *c; c++) {
    if (*c == '%') g_string_append_c(s, '%'); /* the store expands %f and %u: "%%" reads back as "%" */
    g_string_append_c(s, *c);
  }
  g_free(q);
}

static void recent_add(const char *path, const char *group, const char *exec) {
  char *uri = path_uri(path);
  if (!uri) return;
  char *base = g_path_get_basename(path);
  char *groups[] = {(char *)group, NULL};
  GtkRecentData data = {.display_name = base,
                        .mime_type = (char *)(g_str_has_suffix(path, ".json") ? "application/json" : "text/plain"),
                        .app_name = (char *)g_get_application_name(),
                        .app_exec = (char *)exec,
                        .groups = groups};
  gtk_recent_manager_add_full(gtk_recent_manager_get_default(), uri, &data);
  g_free(base);
  g_free(uri);
}

/* Remembers how the shown file is open now. */
static void recent_remember(OxWindow *self) {
  const char *path = ox_document_get_path(self->doc);
  if (!path) return;
  GString *exec = g_string_new("optimus-debugger");
  guint top = ox_document_get_top_index(self->doc);
  if (top) {
    char n[16];
    g_snprintf(n, sizeof n, "%u", top + 1);
    exec_arg(exec, "--graph");
    exec_arg(exec, n);
  }
  const char *const *specs = ox_document_get_loaded_specs(self->doc);
  for (guint i = 0; specs && specs[i]; i++) {
    exec_arg(exec, "--input-shape");
    exec_arg(exec, specs[i]);
  }
  const char *shapes = ox_document_get_loaded_shapes_file(self->doc);
  if (shapes) {
    char *abs = g_canonicalize_filename(shapes, NULL);
    exec_arg(exec, "--shapes");
    exec_arg(exec, abs);
    g_free(abs);
  }
  exec_arg(exec, "--");
  char *abs = g_canonicalize_filename(path, NULL);
  exec_arg(exec, abs);
  g_free(abs);
  const char *trace = ox_document_get_trace_path(self->doc);
  if (trace) {
    abs = g_canonicalize_filename(trace, NULL);
    exec_arg(exec, abs);
    g_free(abs);
  }
  recent_add(path, RECENT_GRAPH_GROUP, exec->str);
  g_string_free(exec, TRUE);
}

/* How path was last open, from the store; FALSE when it is not there. */
static gboolean recent_lookup(const char *path, Remembered *out) {
  memset(out, 0, sizeof *out);
  char *uri = path_uri(path);
  GtkRecentInfo *info = uri ? gtk_recent_manager_lookup_item(gtk_recent_manager_get_default(), uri, NULL) : NULL;
  g_free(uri);
  if (!info) return FALSE;
  const char *exec = NULL;
  guint count;
  GDateTime *stamp;
  gboolean ok = gtk_recent_info_has_group(info, RECENT_GRAPH_GROUP) &&
                gtk_recent_info_get_application_info(info, g_get_application_name(), &exec, &count, &stamp) && exec;
  char **argv = NULL;
  int argc = 0;
  if (ok) ok = g_shell_parse_argv(exec, &argc, &argv, NULL);
  gtk_recent_info_unref(info);
  if (!ok) return FALSE;
  GPtrArray *specs = g_ptr_array_new();
  int i = 1, positional = 0;
  for (; i < argc; i++) {
    if (!strcmp(argv[i], "--")) {
      i++;
      break;
    }
    if (i + 1 >= argc) break;
    if (!strcmp(argv[i], "--input-shape"))
      g_ptr_array_add(specs, g_strdup(argv[++i]));
    else if (!strcmp(argv[i], "--shapes"))
      g_free(out->shapes), out->shapes = g_strdup(argv[++i]);
    else if (!strcmp(argv[i], "--graph"))
      out->top = (guint)MAX(1, g_ascii_strtoll(argv[++i], NULL, 10)) - 1;
  }
  for (; i < argc; i++, positional++)
    if (positional == 1) g_free(out->trace), out->trace = g_strdup(argv[i]);
  if (specs->len) {
    g_ptr_array_add(specs, NULL);
    out->specs = (char **)g_ptr_array_free(specs, FALSE);
  } else {
    g_ptr_array_free(specs, TRUE);
  }
  g_strfreev(argv);
  return TRUE;
}

/* "~/models/x" for a folder under the home directory */
static char *folder_label(const char *path) {
  char *dir = g_path_get_dirname(path);
  const char *home = g_get_home_dir();
  size_t hl = home ? strlen(home) : 0;
  char *r = hl && g_str_has_prefix(dir, home) && (dir[hl] == '/' || !dir[hl]) ? g_strconcat("~", dir + hl, NULL)
                                                                               : g_strdup(dir);
  g_free(dir);
  return r;
}

/* Menu labels read '_' as a mnemonic mark: "a_b.txt" must be written "a__b.txt". */
static char *menu_escape(const char *s) {
  GString *r = g_string_new(NULL);
  for (; *s; s++) {
    if (*s == '_') g_string_append_c(r, '_');
    g_string_append_c(r, *s);
  }
  return g_string_free(r, FALSE);
}

void ox_window_recent_rebuild(OxWindow *self) {
  g_menu_remove_all(self->recent_menu);
  GtkRecentManager *rm = gtk_recent_manager_get_default();
  GList *items = gtk_recent_manager_get_items(rm);
  guint n = 0;
  for (GList *l = items; l && n < 10; l = l->next) {
    GtkRecentInfo *info = l->data;
    if (!gtk_recent_info_has_application(info, g_get_application_name()) ||
        gtk_recent_info_has_group(info, RECENT_RULES_GROUP))
      continue;
    char *path = g_filename_from_uri(gtk_recent_info_get_uri(info), NULL, NULL);
    if (!path) continue;
    Remembered r;
    recent_lookup(path, &r);
    char *base = g_path_get_basename(path), *folder = folder_label(path);
    GString *label = g_string_new(NULL);
    g_string_append_printf(label, "%s — %s", base, folder);
    if (r.trace) g_string_append(label, " · with its trace");
    if (r.specs || r.shapes) g_string_append(label, " · with shapes");
    if (r.top) g_string_append_printf(label, " · graph %u", r.top + 1);
    char *esc = menu_escape(label->str);
    GMenuItem *it = g_menu_item_new(esc, NULL);
    g_menu_item_set_action_and_target_value(it, "win.open-recent", g_variant_new_string(path));
    g_menu_append_item(self->recent_menu, it);
    g_object_unref(it);
    g_free(esc);
    g_string_free(label, TRUE);
    g_free(base);
    g_free(folder);
    g_free(path);
    remembered_clear(&r);
    n++;
  }
  g_list_free_full(items, (GDestroyNotify)gtk_recent_info_unref);
}

GMenuModel *ox_window_get_recent_menu(OxWindow *self) { return G_MENU_MODEL(self->recent_menu); }

static void set_note(OxWindow *self, const char *note) {
  g_free(self->note);
  self->note = g_strdup(note);
  ox_window_update_status(self);
}

static void on_optimized(GObject *src, GAsyncResult *res, gpointer data) {
  OxWindow *self = data;
  GError *err = NULL;
  if (!ox_document_optimize_finish(OX_DOCUMENT(src), res, &err) && err &&
      !g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    ox_window_show_error(self, "Optimization failed", err->message);
  g_clear_error(&err);
  if (self->optimize && g_cancellable_is_cancelled(self->optimize)) {
    /* keep the window usable on the unoptimized graph */
  }
  g_clear_object(&self->optimize);
  ox_window_update_actions(self);
  g_object_unref(self);
}

void ox_window_start_optimize(OxWindow *self) {
  g_clear_object(&self->optimize);
  self->optimize = g_cancellable_new();
  ox_document_optimize_async(self->doc, self->optimize, on_optimized, g_object_ref(self));
}

static void on_trace_loaded(GObject *src, GAsyncResult *res, gpointer data) {
  OxWindow *self = data;
  GError *err = NULL;
  gboolean ok = ox_document_load_trace_finish(OX_DOCUMENT(src), res, &err);
  if (!ok && err && !g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    ox_window_show_error(self, "Cannot open the trace", err->message);
  g_clear_error(&err);
  if (ok) {
    recent_remember(self); /* Open Recent brings the trace back with the graph */
    ox_window_recent_rebuild(self);
  }
  g_clear_object(&self->optimize);
  ox_window_update_actions(self);
  g_object_unref(self);
}

gboolean ox_window_open(OxWindow *self, const char *graph_path, const char *trace_path) {
  if (self->optimize) g_cancellable_cancel(self->optimize);
  GError *err = NULL;
  /* shapes given for this load (command line, Shapes dialog) win; else those it had last time */
  gboolean from_memory = FALSE;
  if (!ox_document_has_pending_shapes(self->doc)) {
    Remembered r;
    if (recent_lookup(graph_path, &r) && (r.specs || r.shapes)) {
      ox_document_set_pending_shapes(self->doc, (const char *const *)r.specs,
                                     r.specs ? g_strv_length(r.specs) : 0, r.shapes);
      from_memory = TRUE;
    }
    remembered_clear(&r);
  }
  g_clear_pointer(&self->note, g_free);
  /* the graph first (shown at once), its trace on a worker: large traces take seconds to parse.
   * The trace's reading starts now, on a thread of its own, so that it overlaps the graph's. */
  ox_document_prefetch_trace(self->doc, trace_path);
  gboolean ok = ox_document_load_file(self->doc, graph_path, NULL, &err);
  if (!ok && from_memory) {
    /* the file changed since: open it without them, and say so */
    char *first = g_strndup(err->message, strcspn(err->message, "\n"));
    char *note = g_strdup_printf("the shapes remembered for this file no longer apply (%s); opened without them", first);
    g_free(first);
    g_clear_error(&err);
    ok = ox_document_load_file(self->doc, graph_path, NULL, &err);
    if (ok) self->note = note;
    else g_free(note);
  }
  if (!ok) {
    ox_document_prefetch_trace(self->doc, NULL); /* drop it */
    char *title = g_strdup_printf("Cannot open %s", graph_path);
    ox_window_show_error(self, title, err->message);
    g_free(title);
    g_error_free(err);
    return FALSE;
  }
  g_clear_pointer(&self->last_error, g_free);
  recent_remember(self);
  ox_window_recent_rebuild(self);
  ox_window_update_status(self);
  if (!trace_path) {
    ox_window_start_optimize(self);
  } else {
    g_clear_object(&self->optimize);
    self->optimize = g_cancellable_new();
    ox_document_load_trace_async(self->doc, trace_path, self->optimize, on_trace_loaded, g_object_ref(self));
  }
  return TRUE;
}

/* Opens a file as it was last open (Open Recent): its trace, graph and shapes. */
gboolean ox_window_open_recent(OxWindow *self, const char *path) {
  Remembered r;
  gboolean known = recent_lookup(path, &r);
  if (known) {
    ox_document_set_pending_shapes(self->doc, (const char *const *)r.specs,
                                   r.specs ? g_strv_length(r.specs) : 0, r.shapes);
    if (r.top) ox_document_set_pending_graph(self->doc, r.top);
  }
  const char *trace = r.trace && g_file_test(r.trace, G_FILE_TEST_IS_REGULAR) ? r.trace : NULL;
  gboolean ok = ox_window_open(self, path, trace);
  if (ok && r.trace && !trace) {
    char *base = g_path_get_basename(r.trace);
    char *note = g_strdup_printf("its trace %s is gone: optimized again", base);
    set_note(self, note);
    g_free(note);
    g_free(base);
  }
  remembered_clear(&r);
  return ok;
}

gboolean ox_window_open_trace_file(OxWindow *self, const char *trace_path) {
  const char *path = ox_document_get_path(self->doc);
  if (!path) return FALSE;
  /* the graph again as it is shown: its shapes and graph index */
  const char *const *specs = ox_document_get_loaded_specs(self->doc);
  ox_document_set_pending_shapes(self->doc, specs, specs ? g_strv_length((char **)specs) : 0,
                                 ox_document_get_loaded_shapes_file(self->doc));
  ox_document_set_pending_graph(self->doc, ox_document_get_top_index(self->doc));
  char *graph = g_strdup(path);
  gboolean ok = ox_window_open(self, graph, trace_path);
  g_free(graph);
  return ok;
}

/* ------------------------------------------------------------------ shapes */

/* Opens the shown file again with these input/parameter shapes (as --input-shape / --shapes;
 * none: without shapes) and optimizes it; remembered for the file. */
gboolean ox_window_apply_shapes(OxWindow *self, const char *const *specs, const char *shapes_file) {
  const char *path = ox_document_get_path(self->doc);
  if (!path) {
    ox_window_show_error(self, "Open a graph first", "Shapes are given for the open graph.");
    return FALSE;
  }
  guint n = 0;
  while (specs && specs[n]) n++;
  ox_document_set_pending_shapes(self->doc, specs, n, shapes_file && *shapes_file ? shapes_file : NULL);
  ox_document_set_pending_graph(self->doc, ox_document_get_top_index(self->doc));
  char *graph = g_strdup(path);
  gboolean ok = ox_window_open(self, graph, NULL);
  g_free(graph);
  return ok;
}

/* win.apply-shapes((ass)): specs, shapes file ("" for none) */
void ox_window_act_apply_shapes(GSimpleAction *a, GVariant *p, gpointer data) {
  OxWindow *self = OX_WINDOW(data);
  (void)a;
  const char **specs = NULL;
  const char *file = NULL;
  g_variant_get(p, "(^a&s&s)", &specs, &file);
  ox_window_apply_shapes(self, specs, file);
  g_free(specs);
}

typedef struct ShapesDialog {
  OxWindow *self;
  GtkWidget *window, *specs, *file;
} ShapesDialog;

static void shapes_apply_clicked(GtkButton *b, ShapesDialog *sd) {
  (void)b;
  GtkTextBuffer *buf = gtk_text_view_get_buffer(GTK_TEXT_VIEW(sd->specs));
  GtkTextIter s0, s1;
  gtk_text_buffer_get_bounds(buf, &s0, &s1);
  char *text = gtk_text_buffer_get_text(buf, &s0, &s1, FALSE);
  /* one spec per line (or separated by spaces): "x=64,224" */
  GPtrArray *specs = g_ptr_array_new_with_free_func(g_free);
  char **parts = g_strsplit_set(text, "\n ;", -1);
  for (char **q = parts; *q; q++) {
    char *t = g_strstrip(*q);
    if (*t) g_ptr_array_add(specs, g_strdup(t));
  }
  g_strfreev(parts);
  g_ptr_array_add(specs, NULL);
  const char *file = gtk_editable_get_text(GTK_EDITABLE(sd->file));
  char *f = g_strstrip(g_strdup(file));
  if (ox_window_apply_shapes(sd->self, (const char *const *)specs->pdata, f))
    gtk_window_destroy(GTK_WINDOW(sd->window));
  g_free(f);
  g_ptr_array_free(specs, TRUE);
  g_free(text);
}

static void shapes_cancel_clicked(GtkButton *b, ShapesDialog *sd) {
  (void)b;
  gtk_window_destroy(GTK_WINDOW(sd->window));
}

static void on_shapes_file_chosen(GtkNativeDialog *d, int response, ShapesDialog *sd) {
  if (response == GTK_RESPONSE_ACCEPT) {
    GFile *f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
    char *path = f ? g_file_get_path(f) : NULL;
    if (path) gtk_editable_set_text(GTK_EDITABLE(sd->file), path);
    g_free(path);
    if (f) g_object_unref(f);
  }
  g_object_unref(d);
}

static void shapes_choose_clicked(GtkButton *b, ShapesDialog *sd) {
  (void)b;
  GtkFileChooserNative *d = gtk_file_chooser_native_new("Shapes File", GTK_WINDOW(sd->window),
                                                        GTK_FILE_CHOOSER_ACTION_OPEN, "_Open", "_Cancel");
  GtkFileFilter *ff = gtk_file_filter_new();
  gtk_file_filter_set_name(ff, "Shapes (*.json, *.safetensors)");
  gtk_file_filter_add_pattern(ff, "*.json");
  gtk_file_filter_add_pattern(ff, "*.safetensors");
  gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(d), ff);
  g_object_unref(ff);
  ox_window_chooser_in_graph_folder(sd->self, GTK_FILE_CHOOSER(d));
  g_signal_connect(d, "response", G_CALLBACK(on_shapes_file_chosen), sd);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}

/* The Shapes dialog: the input and parameter shapes of the open graph, as on the command line,
 * prefilled with those it was opened with. */
GtkWidget *ox_window_shapes_dialog_new(OxWindow *self) {
  ShapesDialog *sd = g_new0(ShapesDialog, 1);
  sd->self = self;
  GtkWidget *w = gtk_window_new();
  sd->window = w;
  g_object_set_data_full(G_OBJECT(w), "shapes-dialog", sd, g_free);
  gtk_window_set_title(GTK_WINDOW(w), "Input and Parameter Shapes");
  gtk_window_set_transient_for(GTK_WINDOW(w), GTK_WINDOW(self));
  gtk_window_set_modal(GTK_WINDOW(w), TRUE);
  gtk_window_set_default_size(GTK_WINDOW(w), 520, 340);
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
  gtk_widget_set_margin_start(box, 12);
  gtk_widget_set_margin_end(box, 12);
  gtk_widget_set_margin_top(box, 12);
  gtk_widget_set_margin_bottom(box, 12);
  GtkWidget *l1 = gtk_label_new(NULL);
  gtk_label_set_markup(GTK_LABEL(l1), "<b>Input shapes</b>, one per line, as <tt>--input-shape</tt>: "
                                      "<tt>x=64,224</tt>, <tt>i=i64:4</tt>, <tt>layers.0.weight=f32:32,32</tt>");
  gtk_label_set_wrap(GTK_LABEL(l1), TRUE);
  gtk_label_set_xalign(GTK_LABEL(l1), 0);
  gtk_box_append(GTK_BOX(box), l1);
  sd->specs = gtk_text_view_new();
  gtk_text_view_set_monospace(GTK_TEXT_VIEW(sd->specs), TRUE);
  const char *const *specs = ox_document_get_loaded_specs(self->doc);
  if (specs) {
    char *joined = g_strjoinv("\n", (char **)specs);
    gtk_text_buffer_set_text(gtk_text_view_get_buffer(GTK_TEXT_VIEW(sd->specs)), joined, -1);
    g_free(joined);
  }
  GtkWidget *sw = gtk_scrolled_window_new();
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), sd->specs);
  gtk_widget_set_vexpand(sw, TRUE);
  gtk_widget_add_css_class(sw, "frame");
  gtk_box_append(GTK_BOX(box), sw);
  GtkWidget *l2 = gtk_label_new(NULL);
  gtk_label_set_markup(GTK_LABEL(l2), "<b>Shapes file</b>, as <tt>--shapes</tt>: a JSON object of names to shapes, "
                                      "or a <tt>.safetensors</tt> file (only its header is read)");
  gtk_label_set_wrap(GTK_LABEL(l2), TRUE);
  gtk_label_set_xalign(GTK_LABEL(l2), 0);
  gtk_box_append(GTK_BOX(box), l2);
  GtkWidget *row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  sd->file = gtk_entry_new();
  gtk_widget_set_hexpand(sd->file, TRUE);
  const char *sf = ox_document_get_loaded_shapes_file(self->doc);
  if (sf) gtk_editable_set_text(GTK_EDITABLE(sd->file), sf);
  gtk_box_append(GTK_BOX(row), sd->file);
  GtkWidget *choose = gtk_button_new_with_mnemonic("_Choose…");
  g_signal_connect(choose, "clicked", G_CALLBACK(shapes_choose_clicked), sd);
  gtk_box_append(GTK_BOX(row), choose);
  gtk_box_append(GTK_BOX(box), row);
  GtkWidget *l3 = gtk_label_new("Parameters neither gives are inferred from their uses; the graph is optimized again, "
                                "and the shapes are remembered for this file.");
  gtk_label_set_wrap(GTK_LABEL(l3), TRUE);
  gtk_label_set_xalign(GTK_LABEL(l3), 0);
  gtk_widget_add_css_class(l3, "dim-label");
  gtk_box_append(GTK_BOX(box), l3);
  GtkWidget *buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_widget_set_halign(buttons, GTK_ALIGN_END);
  GtkWidget *cancel = gtk_button_new_with_mnemonic("_Cancel");
  g_signal_connect(cancel, "clicked", G_CALLBACK(shapes_cancel_clicked), sd);
  GtkWidget *apply = gtk_button_new_with_mnemonic("_Apply and Re-run");
  gtk_widget_add_css_class(apply, "suggested-action");
  g_signal_connect(apply, "clicked", G_CALLBACK(shapes_apply_clicked), sd);
  gtk_box_append(GTK_BOX(buttons), cancel);
  gtk_box_append(GTK_BOX(buttons), apply);
  gtk_box_append(GTK_BOX(box), buttons);
  gtk_window_set_child(GTK_WINDOW(w), box);
  return w;
}

void ox_window_act_shapes(GSimpleAction *a, GVariant *p, gpointer data) {
  (void)a;
  (void)p;
  gtk_window_present(GTK_WINDOW(ox_window_shapes_dialog_new(OX_WINDOW(data))));
}

/* ------------------------------------------------------------------ rule files */

/* Loads the rule file and re-runs the default pipeline plus its rules. A file with errors
 * loads nothing: the previous rules stay in force and the located errors are shown. */
/* Where text stops being text: the offset of the first NUL, other control byte (tab, newlines
 * and form feed aside) or byte that is not UTF-8; -1 for text. */
static gssize binary_offset(const char *text, gsize len) {
  const char *end = NULL;
  gsize valid = g_utf8_validate_len(text, len, &end) ? len : (gsize)(end - text);
  for (gsize i = 0; i < valid; i++) {
    guchar c = (guchar)text[i];
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') || c == 0x7f) return (gssize)i;
  }
  return valid < len ? (gssize)valid : -1;
}

enum { RULE_ERRORS_SHOWN = 10 };

/* Loads the rule file and re-runs the default pipeline plus its rules. A file with errors
 * loads nothing: the previous rules stay in force and the located errors are shown (the first
 * ten, then how many more); a file that is not text is refused with one error. */
static gboolean apply_rules(OxWindow *self) {
  OxGraph *g = ox_document_get_graph(self->doc);
  if (!g) {
    ox_window_show_error(self, "Open a graph first",
                         "Rules run on the open graph; open a dump, then its rule file.");
    return FALSE;
  }
  char rerr[512];
  size_t len = 0;
  char *text = ox_read_file(self->rules_path, &len, 16u << 20, rerr, sizeof rerr);
  if (!text) {
    ox_window_show_error(self, "Cannot read the rule file; the previous rules stay in force", rerr);
    return FALSE;
  }
  gssize bin = binary_offset(text, len);
  if (bin >= 0) {
    char *msg = g_strdup_printf("%s is not a rule file: it holds binary data (byte 0x%02x at offset %" G_GSSIZE_FORMAT
                                "). Rule files are UTF-8 text (docs/rules.md).",
                                self->rules_path, (guchar)text[bin], bin);
    ox_window_show_error(self, "Not a rule file; the previous rules stay in force", msg);
    g_free(msg);
    free(text);
    return FALSE;
  }
  OxDiagList d;
  ox_diags_init(&d, self->rules_path);
  OxRuleSet *rs = NULL;
  int rc = ox_rules_load_buffer(text, len, self->rules_path, &rs, &d);
  free(text);
  if (rc != 0) {
    GString *msg = g_string_new(NULL);
    size_t shown = 0, errors = d.n_errors ? d.n_errors : d.n;
    for (size_t i = 0; i < d.n && shown < RULE_ERRORS_SHOWN; i++) {
      if (d.items[i].sev != OX_SEV_ERROR && d.n_errors) continue;
      char *line = ox_diag_format(&d, &d.items[i]);
      g_string_append_printf(msg, "%s\n", line);
      free(line);
      shown++;
    }
    size_t more = errors + d.n_dropped > shown ? errors + d.n_dropped - shown : 0;
    if (more) g_string_append_printf(msg, "… and %zu more error%s (%zu in all)\n", more, more == 1 ? "" : "s",
                                     errors + d.n_dropped);
    ox_window_show_error(self, "The rule file has errors; the previous rules stay in force", msg->str);
    g_string_free(msg, TRUE);
    ox_diags_clear(&d);
    return FALSE;
  }
  ox_diags_clear(&d);
  OxPipeline *p = g_new0(OxPipeline, 1);
  ox_pipeline_default(g, p);
  ox_rules_append(rs, p);
  g_ptr_array_add(self->rule_sets, rs);
  self->n_rule_loads++;
  if (self->optimize) g_cancellable_cancel(self->optimize);
  ox_document_set_pipeline(self->doc, p, NULL);
  ox_window_start_optimize(self);
  return TRUE;
}

static gboolean rules_reload_cb(gpointer data) {
  OxWindow *self = data;
  self->rules_reload_source = 0;
  apply_rules(self);
  return G_SOURCE_REMOVE;
}

/* Editors write in bursts (or replace the file): coalesce the events of one save. */
static void on_rules_changed(GFileMonitor *m, GFile *f, GFile *other, GFileMonitorEvent ev, OxWindow *self) {
  (void)m;
  (void)f;
  (void)other;
  if (ev != G_FILE_MONITOR_EVENT_CHANGED && ev != G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT &&
      ev != G_FILE_MONITOR_EVENT_CREATED && ev != G_FILE_MONITOR_EVENT_MOVED_IN && ev != G_FILE_MONITOR_EVENT_RENAMED)
    return;
  if (self->rules_reload_source) g_source_remove(self->rules_reload_source);
  self->rules_reload_source = g_timeout_add(250, rules_reload_cb, self);
}

gboolean ox_window_open_rules(OxWindow *self, const char *path) {
  g_free(self->rules_path);
  self->rules_path = g_strdup(path);
  /* the next Open Rules starts in this folder */
  if (g_file_test(path, G_FILE_TEST_IS_REGULAR)) recent_add(path, RECENT_RULES_GROUP, "optimus-debugger");
  if (self->rules_monitor) {
    g_signal_handlers_disconnect_by_data(self->rules_monitor, self);
    g_clear_object(&self->rules_monitor);
  }
  GFile *f = g_file_new_for_path(path);
  self->rules_monitor = g_file_monitor_file(f, G_FILE_MONITOR_WATCH_MOVES, NULL, NULL);
  g_object_unref(f);
  if (self->rules_monitor) g_signal_connect(self->rules_monitor, "changed", G_CALLBACK(on_rules_changed), self);
  return apply_rules(self);
}

/* Re-reads the open rule file now (what the file monitor does after a save). */
gboolean ox_window_reload_rules(OxWindow *self) { return self->rules_path ? apply_rules(self) : FALSE; }

guint ox_window_get_rule_loads(OxWindow *self) { return self->n_rule_loads; }

/* The folder the Open Rules dialog starts in: the open rule file's, else the newest rule file's
 * the store remembers, else the graph's. NULL when there is none. */
static GFile *rules_folder(OxWindow *self) {
  char *dir = NULL;
  if (self->rules_path) dir = g_path_get_dirname(self->rules_path);
  if (!dir) {
    GList *items = gtk_recent_manager_get_items(gtk_recent_manager_get_default());
    time_t best = 0;
    for (GList *l = items; l; l = l->next) {
      GtkRecentInfo *info = l->data;
      if (!gtk_recent_info_has_group(info, RECENT_RULES_GROUP)) continue;
      GDateTime *t = gtk_recent_info_get_modified(info);
      time_t when = t ? (time_t)g_date_time_to_unix(t) : 0;
      char *path = g_filename_from_uri(gtk_recent_info_get_uri(info), NULL, NULL);
      char *d = path ? g_path_get_dirname(path) : NULL;
      if (d && g_file_test(d, G_FILE_TEST_IS_DIR) && (!dir || when >= best)) {
        g_free(dir);
        dir = g_steal_pointer(&d);
        best = when;
      }
      g_free(d);
      g_free(path);
    }
    g_list_free_full(items, (GDestroyNotify)gtk_recent_info_unref);
  }
  if (!dir && ox_document_get_path(self->doc)) {
    char *abs = g_canonicalize_filename(ox_document_get_path(self->doc), NULL);
    dir = g_path_get_dirname(abs);
    g_free(abs);
  }
  GFile *f = dir ? g_file_new_for_path(dir) : NULL;
  g_free(dir);
  return f;
}

/* The folder a dialog about the open graph starts in (its trace, an export): the graph's. */
void ox_window_chooser_in_graph_folder(OxWindow *self, GtkFileChooser *fc) {
  const char *path = ox_document_get_path(self->doc);
  if (!path) return;
  char *abs = g_canonicalize_filename(path, NULL);
  char *dir = g_path_get_dirname(abs);
  GFile *f = g_file_new_for_path(dir);
  gtk_file_chooser_set_current_folder(fc, f, NULL);
  g_object_unref(f);
  g_free(dir);
  g_free(abs);
}

char *ox_window_get_rules_folder(OxWindow *self) {
  GFile *f = rules_folder(self);
  char *p = f ? g_file_get_path(f) : NULL;
  if (f) g_object_unref(f);
  return p;
}

GtkNativeDialog *ox_window_rules_dialog_new(OxWindow *self) {
  GtkFileChooserNative *d = gtk_file_chooser_native_new("Open Rule File", GTK_WINDOW(self), GTK_FILE_CHOOSER_ACTION_OPEN,
                                                        "_Open", "_Cancel");
  GtkFileFilter *rules = gtk_file_filter_new();
  gtk_file_filter_set_name(rules, "Rule files (*.rules)");
  gtk_file_filter_add_pattern(rules, "*.rules");
  GtkFileFilter *all = gtk_file_filter_new();
  gtk_file_filter_set_name(all, "All files");
  gtk_file_filter_add_pattern(all, "*");
  gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(d), rules);
  gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(d), all);
  gtk_file_chooser_set_filter(GTK_FILE_CHOOSER(d), rules);
  g_object_unref(rules);
  g_object_unref(all);
  /* a folder to start in, not Recent: a name typed there resolves against it */
  GFile *folder = rules_folder(self);
  if (folder) {
    gtk_file_chooser_set_current_folder(GTK_FILE_CHOOSER(d), folder, NULL);
    g_object_unref(folder);
  }
  return GTK_NATIVE_DIALOG(d);
}

static void on_rules_response(GtkNativeDialog *d, int response, OxWindow *self) {
  if (response == GTK_RESPONSE_ACCEPT) {
    GFile *f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
    char *path = f ? g_file_get_path(f) : NULL;
    if (path && g_file_test(path, G_FILE_TEST_IS_DIR)) {
      ox_window_show_error(self, "Not a rule file", "That is a folder; choose a .rules file in it.");
    } else if (path) {
      ox_window_open_rules(self, path);
    } else if (f) {
      char *uri = g_file_get_uri(f);
      char *msg = g_strdup_printf("%s is not a local file; rule files are read from disk.", uri);
      ox_window_show_error(self, "Cannot open the rule file", msg);
      g_free(msg);
      g_free(uri);
    }
    g_free(path);
    if (f) g_object_unref(f);
  }
  g_object_unref(d);
}

void ox_window_act_open_rules(GSimpleAction *a, GVariant *p, gpointer data) {
  (void)a;
  (void)p;
  OxWindow *self = data;
  GtkNativeDialog *d = ox_window_rules_dialog_new(self);
  g_signal_connect(d, "response", G_CALLBACK(on_rules_response), self);
  gtk_native_dialog_show(d);
}

static void on_open_response(GtkNativeDialog *d, int response, OxWindow *self) {
  gboolean trace = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(d), "trace"));
  if (response == GTK_RESPONSE_ACCEPT) {
    GFile *f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
    char *path = g_file_get_path(f);
    if (path) {
      if (trace)
        ox_window_open_trace_file(self, path);
      else
        ox_window_open(self, path, NULL);
    }
    g_free(path);
    g_object_unref(f);
  }
  g_object_unref(d);
}

void ox_window_open_dialog(OxWindow *self, gboolean trace) {
  GtkFileChooserNative *d = gtk_file_chooser_native_new(trace ? "Open Trace" : "Open Graph Dump", GTK_WINDOW(self),
                                                        GTK_FILE_CHOOSER_ACTION_OPEN, "_Open", "_Cancel");
  g_object_set_data(G_OBJECT(d), "trace", GINT_TO_POINTER(trace));
  ox_window_chooser_in_graph_folder(self, GTK_FILE_CHOOSER(d));
  g_signal_connect(d, "response", G_CALLBACK(on_open_response), self);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}

gboolean ox_window_on_drop(GtkDropTarget *t, const GValue *value, double x, double y, OxWindow *self) {
  (void)t;
  (void)x;
  (void)y;
  if (!G_VALUE_HOLDS(value, GDK_TYPE_FILE_LIST)) return FALSE;
  GSList *files = g_value_get_boxed(value);
  if (!files) return FALSE;
  char *p1 = g_file_get_path(files->data);
  char *p2 = files->next ? g_file_get_path(files->next->data) : NULL;
  gboolean ok = FALSE;
  if (p1) {
    /* two files: a dump and its trace; one file ending in .trace.json onto a loaded graph: a trace */
    if (!p2 && g_str_has_suffix(p1, ".trace.json") && ox_document_has_graph(self->doc))
      ok = ox_window_open_trace_file(self, p1);
    else
      ok = ox_window_open(self, p1, p2);
  }
  g_free(p1);
  g_free(p2);
  return ok;
}

/* ------------------------------------------------------------------ export */

typedef struct ExportJob {
  OxGraph *g;        /* a clone of the shown graph (a picture: the step as the canvas shows it) */
  guint8 *marks;     /* a picture's step marks and fills per node id of g */
  guint32 *fills;
  OxHistory *h;      /* for the trace */
  char *format, *path;
  gboolean edge_shapes;
  char *note;        /* which layout drew a picture, when it was not dot */
} ExportJob;

static void export_job_free(gpointer p) {
  ExportJob *j = p;
  ox_graph_free(j->g);
  g_free(j->marks);
  g_free(j->fills);
  ox_history_unref(j->h);
  g_free(j->format);
  g_free(j->path);
  g_free(j->note);
  g_free(j);
}

static void export_thread(GTask *task, gpointer src, gpointer data, GCancellable *c) {
  (void)src;
  (void)c;
  ExportJob *j = data;
  GError *err = NULL;
  GBytes *b = j->marks ? ox_export_picture_bytes(j->g, j->marks, j->fills, j->format, j->edge_shapes, &j->note, &err)
                       : ox_export_bytes(j->g, j->h ? j->h->trace : NULL, j->format, j->edge_shapes, &j->note, &err);
  if (!b) {
    g_task_return_error(task, err);
    return;
  }
  char msg[512];
  gsize len;
  const void *d = g_bytes_get_data(b, &len);
  gboolean ok = ox_write_file_atomic(j->path, d, len, msg, sizeof msg);
  g_bytes_unref(b);
  if (ok)
    g_task_return_boolean(task, TRUE);
  else
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", msg);
}

static void export_done(GObject *src, GAsyncResult *res, gpointer data) {
  (void)data;
  OxWindow *self = OX_WINDOW(src);
  GError *err = NULL;
  ExportJob *j = g_task_get_task_data(G_TASK(res));
  if (!g_task_propagate_boolean(G_TASK(res), &err)) {
    ox_window_show_error(self, "Export failed", err->message);
    g_error_free(err);
  } else {
    char *base = g_path_get_basename(j->path);
    char *msg = j->note ? g_strdup_printf("exported %s (%s)", base, j->note) : g_strdup_printf("exported %s", base);
    gtk_label_set_text(GTK_LABEL(self->status_label), msg);
    g_free(msg);
    g_free(base);
  }
  self->n_exports++;
}

void ox_window_export_start(OxWindow *self, const char *format, const char *path) {
  ExportJob *j = g_new0(ExportJob, 1);
  if (strcmp(format, "trace") == 0) {
    j->h = ox_document_get_history(self->doc) ? ox_history_ref(ox_document_get_history(self->doc)) : NULL;
  } else if (ox_document_has_graph(self->doc) && (!strcmp(format, "svg") || !strcmp(format, "png"))) {
    /* a picture of the step as the canvas shows it (marks, palette, legend) */
    j->g = ox_document_step_picture(self->doc, &j->marks, &j->fills);
  } else if (ox_document_has_graph(self->doc)) {
    j->g = ox_graph_clone(ox_document_get_graph(self->doc));
  }
  j->format = g_strdup(format);
  j->path = g_strdup(path);
  j->edge_shapes = ox_graph_view_get_edge_labels(OX_GRAPH_VIEW(self->view));
  GTask *task = g_task_new(self, NULL, export_done, NULL);
  g_task_set_task_data(task, j, export_job_free);
  g_task_run_in_thread(task, export_thread);
  g_object_unref(task);
}

static const char *export_ext(const char *format) {
  if (!strcmp(format, "fx")) return "txt";
  if (!strcmp(format, "trace")) return "trace.json";
  return format;
}

static void on_export_response(GtkNativeDialog *d, int response, OxWindow *self) {
  const char *format = g_object_get_data(G_OBJECT(d), "format");
  if (response == GTK_RESPONSE_ACCEPT) {
    GFile *f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
    char *path = g_file_get_path(f);
    if (path) ox_window_export_start(self, format, path);
    g_free(path);
    g_object_unref(f);
  }
  g_object_unref(d);
}

void ox_window_export_dialog(OxWindow *self, const char *format) {
  GtkFileChooserNative *d = gtk_file_chooser_native_new("Export", GTK_WINDOW(self), GTK_FILE_CHOOSER_ACTION_SAVE,
                                                        "_Export", "_Cancel");
  g_object_set_data_full(G_OBJECT(d), "format", g_strdup(format), g_free);
  const char *path = ox_document_get_path(self->doc);
  char *base = path ? g_path_get_basename(path) : g_strdup("graph");
  char *dot = strrchr(base, '.');
  if (dot) *dot = 0;
  char *name =
      strcmp(format, "trace") == 0
          ? g_strdup_printf("%s.%s", base, export_ext(format))
          : g_strdup_printf("%s-step%u.%s", base, ox_document_get_position(self->doc), export_ext(format));
  ox_window_chooser_in_graph_folder(self, GTK_FILE_CHOOSER(d));
  gtk_file_chooser_set_current_name(GTK_FILE_CHOOSER(d), name);
  g_free(name);
  g_free(base);
  g_signal_connect(d, "response", G_CALLBACK(on_export_response), self);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}
