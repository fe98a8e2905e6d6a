/* ox-window-compare.c - two recorded runs of one graph side by side (the debugger's end of
 * `optimus compare-runs`).
 *
 * Compare with Trace… (win.compare-trace, or `optimus-debugger GRAPH TRACE --compare TRACE_B`)
 * opens a second document on the same graph with the other trace and splits the canvas: this run
 * (A) on the left, the other (B) on the right, under B a list of the records that differ
 * (engine/run/ox_compare.h: only in A, only in B, another outcome). Stepping A steps B to the
 * aligned record (the last record of A at or before the current one that has a partner in B),
 * and the node selected in A is selected in B when B has it; a "#N in B" link moves B alone
 * until A moves again. A's timeline marks its records that are only in A (blue) or end
 * otherwise in B (orange). The graph is read again for B (a document owns its graph); B's trace
 * loads on a worker like any trace. Close Comparison (win.compare-close) removes the pane.
 *
 * Diff with Graph… (win.diff-graph, `--diff GRAPH_B`) shows the difference between the shown
 * graph and another dump of the model as a run: ox_diff_trace makes one step per region of the
 * diff (pass "diff", rule "region N"), written to the user's cache folder and opened as this
 * graph's trace, so stepping, highlighting, the inspector and export work on it.
 */
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_graph_diff.h"
#include "load/ox_load.h"
#include "ox-graph-view.h"
#include "run/ox_difftrace.h"
#include "ox-window-private.h"
#include "run/ox_compare.h"

static const OxTrace *trace_a(OxWindow *self) { return ox_document_get_trace(self->doc); }
static const OxTrace *trace_b(OxWindow *self) { return self->cmp_doc ? ox_document_get_trace(self->cmp_doc) : NULL; }

gboolean ox_window_compare_active(OxWindow *self) { return self->cmp_doc != NULL; }

/* The B position aligned with A's position pa: after the last record of A at or before it that
 * has a partner in B. */
static guint aligned_b(OxWindow *self, guint pa) {
  if (!self->cmp_ready) return 0;
  const OxTrace *a = trace_a(self);
  for (guint s = MIN(pa, a ? a->n_steps : 0); s > 0; s--)
    if (self->cmp.a_to_b[s - 1] != OX_COMPARE_NONE) return self->cmp.a_to_b[s - 1] + 1;
  return 0;
}

guint ox_window_compare_mark(OxWindow *self, guint position) {
  if (!self->cmp_ready || !self->cmp_marks) return OX_WHATIF_MARK_NONE;
  return GPOINTER_TO_UINT(g_hash_table_lookup(self->cmp_marks, GUINT_TO_POINTER(position)));
}

static void append_rec(GString *s, const OxStep *st, const char *prefix) {
  char *m = g_markup_printf_escaped("<a href=\"%s:%u\">#%u%s</a> <b>%s</b>", prefix, st->seq + 1, st->seq + 1,
                                    prefix[0] == 'b' ? " in B" : "", st->pass);
  g_string_append(s, m);
  g_free(m);
  if (st->anchor) {
    g_string_append(s, " at ");
    ox_window_append_node_link(s, st->anchor);
  }
  if (st->kind == OX_STEP_APPLIED) {
    g_string_append_printf(s, " <span foreground=\"#26a269\">applied</span> −%u +%u", st->n_removed, st->n_added);
  } else {
    char *why = ox_reason_format(&st->reason);
    m = g_markup_printf_escaped(" <span foreground=\"%s\">%s</span>: %s", ox_window_kind_color(st->kind),
                                ox_step_kind_text(st), why ? why : "");
    g_string_append(s, m);
    g_free(m);
    free(why);
  }
}

static void render_text(OxWindow *self) {
  g_string_assign(self->cmp_text, gtk_label_get_label(GTK_LABEL(self->cmp_header)));
  g_string_append_c(self->cmp_text, '\n');
  g_string_append(self->cmp_text, gtk_label_get_label(GTK_LABEL(self->cmp_list)));
}

static void render_header(OxWindow *self) {
  GString *s = g_string_new(NULL);
  const OxTrace *b = trace_b(self);
  char *base = self->cmp_trace_path ? g_path_get_basename(self->cmp_trace_path) : g_strdup("?");
  if (self->cmp_error) {
    char *m = g_markup_printf_escaped("<b>B: %s</b> — <span foreground=\"#c01c28\">%s</span>", base, self->cmp_error);
    g_string_append(s, m);
    g_free(m);
  } else if (!self->cmp_ready) {
    char *m = g_markup_printf_escaped("<b>B: %s</b> — <i>%s</i>", base,
                                      !b ? "loading the trace…" : "waiting for this window's trace…");
    g_string_append(s, m);
    g_free(m);
  } else {
    char *m = g_markup_printf_escaped("<b>B: %s</b> — step %u / %u", base, ox_document_get_position(self->cmp_doc),
                                      b->n_steps);
    g_string_append(s, m);
    g_free(m);
    g_string_append_printf(s,
                           "\n%u records agree; %u only here in A (%u applied), %u only in B (%u applied), "
                           "%u end otherwise",
                           self->cmp.n_same, self->cmp.n_only_a, self->cmp.n_only_a_applied, self->cmp.n_only_b,
                           self->cmp.n_only_b_applied, self->cmp.n_differs);
  }
  g_free(base);
  gtk_label_set_markup(GTK_LABEL(self->cmp_header), s->str);
  g_string_free(s, TRUE);
  render_text(self);
}

/* the header and the list (the list only changes with the comparison) */
static void render(OxWindow *self) {
  const OxTrace *a = trace_a(self), *b = trace_b(self);
  GString *l = g_string_new(NULL);
  if (self->cmp_ready) {
    guint shown = 0;
    for (guint i = 0; i < self->cmp.n && shown < 400; i++) {
      const OxCompareEntry *e = &self->cmp.entries[i];
      /* records refused in both runs for other reasons are counted, listed only when applied
       * somewhere (what changed the graph) or when one run has no such record */
      if (e->kind == OX_COMPARE_DIFFERS && a->steps[e->a_seq].kind != OX_STEP_APPLIED &&
          b->steps[e->b_seq].kind != OX_STEP_APPLIED)
        continue;
      if (e->kind != OX_COMPARE_DIFFERS && (e->kind == OX_COMPARE_ONLY_A ? a->steps[e->a_seq].kind
                                                                          : b->steps[e->b_seq].kind) != OX_STEP_APPLIED)
        continue;
      shown++;
      if (e->kind == OX_COMPARE_ONLY_A) {
        g_string_append(l, "<span foreground=\"#1c71d8\">only in A</span>  ");
        append_rec(l, &a->steps[e->a_seq], "step");
      } else if (e->kind == OX_COMPARE_ONLY_B) {
        g_string_append(l, "<span foreground=\"#1c71d8\">only in B</span>  ");
        append_rec(l, &b->steps[e->b_seq], "bstep");
      } else {
        g_string_append(l, "<span foreground=\"#c64600\">otherwise</span>  ");
        append_rec(l, &a->steps[e->a_seq], "step");
        g_string_append(l, "\n      B: ");
        append_rec(l, &b->steps[e->b_seq], "bstep");
      }
      g_string_append_c(l, '\n');
    }
    if (!shown) g_string_append(l, "<i>The two runs make the same rewrites.</i>");
  }
  gtk_label_set_markup(GTK_LABEL(self->cmp_list), l->str);
  g_string_free(l, TRUE);
  render_header(self);
}

static void rebuild_marks(OxWindow *self) {
  g_hash_table_remove_all(self->cmp_marks);
  if (self->cmp_ready) {
    for (guint i = 0; i < self->cmp.n; i++) {
      const OxCompareEntry *e = &self->cmp.entries[i];
      if (e->kind == OX_COMPARE_ONLY_B) continue;
      g_hash_table_insert(self->cmp_marks, GUINT_TO_POINTER(e->a_seq + 1),
                          GUINT_TO_POINTER(e->kind == OX_COMPARE_ONLY_A ? OX_WHATIF_MARK_ONLY : OX_WHATIF_MARK_DIFFERS));
    }
  }
  ox_window_whatif_remark(self);
}

/* Follows A: B's position and selection, when A's changed since the last time. */
static void follow(OxWindow *self, gboolean force) {
  if (!self->cmp_ready) return;
  guint pa = ox_document_get_position(self->doc);
  const char *sel = ox_document_get_selected(self->doc);
  if (force || pa != self->cmp_last_pa) {
    self->cmp_last_pa = pa;
    ox_document_set_position(self->cmp_doc, aligned_b(self, pa));
  }
  if (force || g_strcmp0(sel, self->cmp_last_sel) != 0) {
    g_free(self->cmp_last_sel);
    self->cmp_last_sel = g_strdup(sel);
    if (sel) ox_document_select(self->cmp_doc, sel);
  }
}

/* Compares when both traces are in; again when either history changed. */
void ox_window_compare_refresh(OxWindow *self) {
  if (!self->cmp_doc) return;
  const OxHistory *ha = ox_document_get_history(self->doc), *hb = ox_document_get_history(self->cmp_doc);
  const OxTrace *a = trace_a(self), *b = trace_b(self);
  if (ha != self->cmp_hist_a || hb != self->cmp_hist_b) {
    self->cmp_hist_a = ha;
    self->cmp_hist_b = hb;
    if (self->cmp_ready) ox_compare_result_free(&self->cmp);
    self->cmp_ready = FALSE;
    if (a && b && !self->cmp_error) {
      ox_compare_traces(a, b, &self->cmp);
      self->cmp_ready = TRUE;
    }
    render(self);
    rebuild_marks(self);
    follow(self, TRUE);
    ox_window_update_passes_panel(self); /* its counts beside this run's */
    return;
  }
  follow(self, FALSE);
  if (self->cmp_ready) render_header(self); /* B's step */
}

static void on_b_trace_loaded(GObject *src, GAsyncResult *res, gpointer data) {
  OxWindow *self = data;
  GError *err = NULL;
  if (!ox_document_load_trace_finish(OX_DOCUMENT(src), res, &err)) {
    if (!g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CANCELLED) && self->cmp_doc == OX_DOCUMENT(src)) {
      g_free(self->cmp_error);
      self->cmp_error = g_strdup(err->message);
      render(self);
    }
    g_error_free(err);
  } else if (self->cmp_doc == OX_DOCUMENT(src)) {
    ox_window_compare_refresh(self);
  }
  g_object_unref(self);
}

void ox_window_compare_close(OxWindow *self) {
  if (!self->cmp_doc) return;
  if (self->cmp_cancel) g_cancellable_cancel(self->cmp_cancel);
  g_clear_object(&self->cmp_cancel);
  gtk_paned_set_end_child(GTK_PANED(self->canvas_split), NULL);
  self->cmp_pane = self->cmp_view = self->cmp_header = self->cmp_list = NULL;
  g_clear_object(&self->cmp_doc);
  if (self->cmp_ready) ox_compare_result_free(&self->cmp);
  self->cmp_ready = FALSE;
  self->cmp_hist_a = self->cmp_hist_b = NULL;
  g_clear_pointer(&self->cmp_trace_path, g_free);
  g_clear_pointer(&self->cmp_error, g_free);
  g_clear_pointer(&self->cmp_last_sel, g_free);
  if (self->cmp_marks) g_hash_table_remove_all(self->cmp_marks);
  ox_window_update_passes_panel(self);
  ox_window_whatif_remark(self);
  ox_window_update_actions(self);
}

static GtkWidget *build_pane(OxWindow *self) {
  GtkWidget *top = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
  self->cmp_header = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(self->cmp_header), 0);
  gtk_label_set_wrap(GTK_LABEL(self->cmp_header), TRUE);
  gtk_widget_set_margin_start(self->cmp_header, 6);
  gtk_widget_set_margin_top(self->cmp_header, 4);
  gtk_widget_set_margin_bottom(self->cmp_header, 4);
  gtk_box_append(GTK_BOX(top), self->cmp_header);
  self->cmp_view = ox_graph_view_new(self->cmp_doc);
  gtk_widget_set_vexpand(self->cmp_view, TRUE);
  gtk_widget_set_hexpand(self->cmp_view, TRUE);
  gtk_box_append(GTK_BOX(top), self->cmp_view);
  self->cmp_list = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(self->cmp_list), 0);
  gtk_label_set_yalign(GTK_LABEL(self->cmp_list), 0);
  gtk_label_set_wrap(GTK_LABEL(self->cmp_list), TRUE);
  gtk_label_set_wrap_mode(GTK_LABEL(self->cmp_list), PANGO_WRAP_WORD_CHAR);
  gtk_widget_set_margin_start(self->cmp_list, 6);
  gtk_widget_set_margin_end(self->cmp_list, 6);
  g_signal_connect(self->cmp_list, "activate-link", G_CALLBACK(ox_window_on_activate_link), self);
  GtkWidget *sw = gtk_scrolled_window_new();
  gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), self->cmp_list);
  gtk_widget_set_size_request(sw, -1, 120);
  GtkWidget *pane = gtk_paned_new(GTK_ORIENTATION_VERTICAL);
  gtk_paned_set_start_child(GTK_PANED(pane), top);
  gtk_paned_set_end_child(GTK_PANED(pane), sw);
  gtk_paned_set_resize_end_child(GTK_PANED(pane), FALSE);
  gtk_paned_set_shrink_end_child(GTK_PANED(pane), FALSE);
  gtk_widget_add_css_class(pane, "view");
  return pane;
}

gboolean ox_window_compare_open(OxWindow *self, const char *trace_path, GError **error) {
  const char *path = ox_document_get_path(self->doc);
  if (!path || !ox_document_has_graph(self->doc)) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED, "open a graph first: a comparison is of two runs of it");
    return FALSE;
  }
  ox_window_compare_close(self);
  OxDocument *b = ox_document_new();
  ox_document_set_pending_graph(b, ox_document_get_top_index(self->doc));
  const char *const *specs = ox_document_get_loaded_specs(self->doc);
  const char *shapes = ox_document_get_loaded_shapes_file(self->doc);
  if ((specs && specs[0]) || shapes)
    ox_document_set_pending_shapes(b, specs, specs ? g_strv_length((char **)specs) : 0, shapes);
  ox_document_prefetch_trace(b, trace_path); /* read while the graph loads (dropped with b) */
  if (!ox_document_load_file(b, path, NULL, error)) {
    g_object_unref(b);
    return FALSE;
  }
  guint entry = ox_document_get_graph_entry_index(self->doc);
  if (entry != ox_document_get_graph_entry_index(b) && !ox_document_show_graph_entry(b, entry, error)) {
    g_object_unref(b);
    return FALSE;
  }
  self->cmp_doc = b;
  self->cmp_trace_path = g_strdup(trace_path);
  self->cmp_last_pa = G_MAXUINT;
  self->cmp_pane = build_pane(self);
  gtk_paned_set_end_child(GTK_PANED(self->canvas_split), self->cmp_pane);
  int w = gtk_widget_get_width(self->canvas_split);
  if (w > 0) gtk_paned_set_position(GTK_PANED(self->canvas_split), w / 2);
  render(self);
  self->cmp_cancel = g_cancellable_new();
  ox_document_load_trace_async(b, trace_path, self->cmp_cancel, on_b_trace_loaded, g_object_ref(self));
  ox_window_update_actions(self);
  return TRUE;
}

gboolean ox_window_compare_goto_b(OxWindow *self, guint position) {
  if (!self->cmp_doc) return FALSE;
  ox_document_set_position(self->cmp_doc, position);
  if (self->cmp_ready) render_header(self);
  return TRUE;
}

const char *ox_window_get_compare_text(OxWindow *self) { return self->cmp_text ? self->cmp_text->str : ""; }
OxDocument *ox_window_get_compare_document(OxWindow *self) { return self->cmp_doc; }

static void on_compare_response(GtkNativeDialog *d, int response, OxWindow *self) {
  if (response == GTK_RESPONSE_ACCEPT) {
    GFile *f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
    char *path = f ? g_file_get_path(f) : NULL;
    GError *err = NULL;
    if (path && !ox_window_compare_open(self, path, &err)) {
      ox_window_show_error(self, "Cannot compare", err->message);
      g_error_free(err);
    }
    g_free(path);
    if (f) g_object_unref(f);
  }
  g_object_unref(d);
}

void ox_window_compare_dialog(OxWindow *self) {
  GtkFileChooserNative *d = gtk_file_chooser_native_new("Compare with Trace", GTK_WINDOW(self),
                                                        GTK_FILE_CHOOSER_ACTION_OPEN, "_Compare", "_Cancel");
  ox_window_chooser_in_graph_folder(self, GTK_FILE_CHOOSER(d));
  g_signal_connect(d, "response", G_CALLBACK(on_compare_response), self);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}

gboolean ox_window_diff_open(OxWindow *self, const char *path_b, GError **error) {
  const char *path = ox_document_get_path(self->doc);
  OxHistory *h = ox_document_get_history(self->doc);
  if (!path || !h) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED, "open a graph first: the diff is from it to the other");
    return FALSE;
  }
  const OxGraphEntry *ge = ox_document_get_graph_entry(self->doc, ox_document_get_graph_entry_index(self->doc));
  if (ge && ge->depth > 0) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                "a diff is shown for a top-level graph; this is a subgraph (%s)", ge->label);
    return FALSE;
  }
  OxDiagList dl;
  ox_diags_init(&dl, path_b);
  OxDoc *db = NULL;
  if (ox_load_file(path_b, OX_FMT_UNKNOWN, NULL, &db, &dl) != 0 || !db->n_graphs) {
    char *msg = NULL;
    for (size_t i = 0; i < dl.n && !msg; i++)
      if (dl.items[i].sev == OX_SEV_ERROR) msg = ox_diag_format(&dl, &dl.items[i]);
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", msg ? msg : "no graph in it");
    free(msg);
    ox_diags_clear(&dl);
    ox_doc_free(db);
    return FALSE;
  }
  guint top = ox_document_get_top_index(self->doc);
  const OxGraph *gb = db->graphs[top < db->n_graphs ? top : 0];
  OxGraphDiff d;
  ox_graph_diff(h->input, gb, &d);
  OxTrace *t = ox_diff_trace(h->input, gb, &d, NULL, &dl);
  gboolean ok = FALSE;
  if (!t) {
    char *msg = dl.n ? ox_diag_format(&dl, &dl.items[dl.n - 1]) : NULL;
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "the diff cannot be made a run: %s", msg ? msg : "?");
    free(msg);
  } else {
    t->input_file = ox_trace_intern(t, path);
    char *dir = g_build_filename(g_get_user_cache_dir(), "optimus", "diffs", NULL);
    char *ba = g_path_get_basename(path), *bb = g_path_get_basename(path_b);
    char *name = g_strdup_printf("%s-vs-%s.trace.json", ba, bb);
    char *file = g_build_filename(dir, name, NULL);
    OxBuf buf;
    ox_buf_init(&buf);
    ox_trace_write_json(t, &buf);
    char err[1024];
    if (g_mkdir_with_parents(dir, 0700) != 0)
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot make %s", dir);
    else if (!ox_write_file_atomic(file, buf.data, buf.len, err, sizeof err))
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", err);
    else {
      /* a document still optimizing (a graph opened without a trace) is stopped first; the
       * trace opens when it is idle */
      g_free(self->pending_trace);
      g_free(self->pending_note);
      self->pending_trace = g_strdup(file);
      self->pending_note = g_strdup_printf("diff to %s: %u region%s, %u added, %u removed, %u changed", bb,
                                           d.n_regions, d.n_regions == 1 ? "" : "s", d.n_added, d.n_removed,
                                           d.n_changed);
      ok = TRUE;
      if (ox_document_get_busy(self->doc)) {
        if (self->optimize) g_cancellable_cancel(self->optimize);
      } else {
        ok = ox_window_open_pending_trace_now(self);
      }
    }
    if (!ok && error && !*error) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", ox_window_get_last_error(self));
    }
    ox_buf_free(&buf);
    g_free(file);
    g_free(name);
    g_free(ba);
    g_free(bb);
    g_free(dir);
    ox_trace_free(t);
  }
  ox_graph_diff_free(&d);
  ox_diags_clear(&dl);
  ox_doc_free(db);
  return ok;
}

gboolean ox_window_open_pending_trace_now(OxWindow *self) {
  char *file = g_steal_pointer(&self->pending_trace), *note = g_steal_pointer(&self->pending_note);
  gboolean ok = file && ox_window_open_trace_file(self, file);
  if (ok) {
    g_free(self->note);
    self->note = g_steal_pointer(&note);
    ox_window_update_status(self);
  }
  g_free(note);
  g_free(file);
  return ok;
}

void ox_window_open_pending_trace(OxWindow *self) {
  if (!self->pending_trace || ox_document_get_busy(self->doc)) return;
  if (!ox_window_open_pending_trace_now(self) && ox_window_get_last_error(self) == NULL)
    ox_window_show_error(self, "Cannot show the diff", "its trace could not be opened");
}

static void on_diff_response(GtkNativeDialog *d, int response, OxWindow *self) {
  if (response == GTK_RESPONSE_ACCEPT) {
    GFile *f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
    char *path = f ? g_file_get_path(f) : NULL;
    GError *err = NULL;
    if (path && !ox_window_diff_open(self, path, &err)) {
      ox_window_show_error(self, "Cannot show the diff", err->message);
      g_error_free(err);
    }
    g_free(path);
    if (f) g_object_unref(f);
  }
  g_object_unref(d);
}

void ox_window_diff_dialog(OxWindow *self) {
  GtkFileChooserNative *d = gtk_file_chooser_native_new("Diff with Graph", GTK_WINDOW(self),
                                                        GTK_FILE_CHOOSER_ACTION_OPEN, "_Diff", "_Cancel");
  ox_window_chooser_in_graph_folder(self, GTK_FILE_CHOOSER(d));
  g_signal_connect(d, "response", G_CALLBACK(on_diff_response), self);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}

void ox_window_compare_init(OxWindow *self) {
  self->cmp_marks = g_hash_table_new(NULL, NULL);
  self->cmp_text = g_string_new(NULL);
}

void ox_window_compare_dispose(OxWindow *self) {
  if (self->cmp_cancel) g_cancellable_cancel(self->cmp_cancel);
  g_clear_object(&self->cmp_cancel);
  g_clear_object(&self->cmp_doc);
  if (self->cmp_ready) ox_compare_result_free(&self->cmp);
  self->cmp_ready = FALSE;
  g_clear_pointer(&self->cmp_trace_path, g_free);
  g_clear_pointer(&self->cmp_error, g_free);
  g_clear_pointer(&self->cmp_last_sel, g_free);
}

void ox_window_compare_finalize(OxWindow *self) {
  g_clear_pointer(&self->pending_trace, g_free);
  g_clear_pointer(&self->pending_note, g_free);
  g_clear_pointer(&self->cmp_marks, g_hash_table_destroy);
  if (self->cmp_text) g_string_free(self->cmp_text, TRUE);
  self->cmp_text = NULL;
}
