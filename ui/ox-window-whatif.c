/* ox-window-whatif.c - the "What if?" tab: the shown run against an alternative with other pass
 * options and/or some applied steps refused, side by side, and the timeline rows whose outcome
 * differs marked.
 *
 * The user types options ("batch_linear.min_fuse_set_size=3", as --option; several separated by
 * spaces) and refuses applied steps with d (win.whatif-refuse: the current step; again to take
 * it back). Run (Enter in the entry, win.whatif-run) asks the document for the what-if of that
 * key (ox_document_whatif_key); it runs in the background like the hints' re-runs, and
 * "whatif-done" brings the result. The grid shows one row per differing decision: the original
 * run's record (a step link) on the left, what the alternative did instead on the right. Rows
 * of the timeline whose step the alternative does not make are tinted red ("whatif-lost"),
 * rejected records whose rewrite it makes green ("whatif-gained"), refused steps grey.
 *
 * What is shown belongs to one history: a new run or another graph clears options and refusals
 * (step numbers would name other steps).
 */
#include <string.h>

#include "ox-window-private.h"

static const char whatif_css[] = ".whatif-lost { background-color: alpha(#c01c28, 0.20); }\n"
                                 ".whatif-gained { background-color: alpha(#26a269, 0.22); }\n"
                                 ".whatif-refused { background-color: alpha(#77767b, 0.30); }\n"
                                 ".compare-only { background-color: alpha(#1c71d8, 0.18); }\n"
                                 ".compare-differs { background-color: alpha(#c64600, 0.20); }\n"
                                 /* four tabs in the panels' switcher: compact buttons keep the
                                  * panels narrow enough for a 1000 px window */
                                 ".panel-switcher > button { padding-left: 6px; padding-right: 6px; min-width: 0; }\n";

static void install_css(void) {
  static gboolean done;
  GdkDisplay *dpy = gdk_display_get_default();
  if (done || !dpy) return;
  done = TRUE;
  GtkCssProvider *p = gtk_css_provider_new();
  gtk_css_provider_load_from_data(p, whatif_css, -1);
  gtk_style_context_add_provider_for_display(dpy, GTK_STYLE_PROVIDER(p), GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
  g_object_unref(p);
}

static void remark_rows(OxWindow *self);

static void mark_row(OxWindow *self, GtkWidget *row, guint position) {
  static const char *const classes[] = {NULL, "whatif-lost", "whatif-gained", "whatif-refused", "compare-only",
                                        "compare-differs"};
  guint m = ox_window_whatif_mark(self, position);
  if (!m) m = ox_window_compare_mark(self, position);
  for (guint i = 1; i < G_N_ELEMENTS(classes); i++) {
    if (i == m)
      gtk_widget_add_css_class(row, classes[i]);
    else
      gtk_widget_remove_css_class(row, classes[i]);
  }
}

void ox_window_whatif_row_bound(OxWindow *self, GtkWidget *row, guint position) {
  if (!self->whatif_rows) return;
  g_hash_table_add(self->whatif_rows, row);
  mark_row(self, row, position);
}

void ox_window_whatif_row_unbound(OxWindow *self, GtkWidget *row) {
  if (self->whatif_rows) g_hash_table_remove(self->whatif_rows, row);
}

void ox_window_whatif_remark(OxWindow *self) {
  if (self->whatif_rows) remark_rows(self);
}

static void remark_rows(OxWindow *self) {
  GHashTableIter it;
  gpointer row;
  g_hash_table_iter_init(&it, self->whatif_rows);
  while (g_hash_table_iter_next(&it, &row, NULL))
    mark_row(self, row, GPOINTER_TO_UINT(g_object_get_data(G_OBJECT(row), "position")));
}

guint ox_window_whatif_mark(OxWindow *self, guint position) {
  if (!position) return OX_WHATIF_MARK_NONE;
  gpointer v = g_hash_table_lookup(self->whatif_marks, GUINT_TO_POINTER(position));
  return GPOINTER_TO_UINT(v);
}

/* ------------------------------------------------------------------ state */

static const OxHistory *shown_history(OxWindow *self) { return ox_document_get_history(self->doc); }

static gboolean is_refused(OxWindow *self, guint seq) {
  for (guint i = 0; i < self->whatif_skip->len; i++)
    if (g_array_index(self->whatif_skip, guint, i) == seq) return TRUE;
  return FALSE;
}

/* The result of the key asked for, when done (borrowed), else NULL with *err when it failed. */
static const OxWhatifResult *current_result(OxWindow *self, const char **err) {
  *err = NULL;
  if (!self->whatif_key) return NULL;
  /* start: asks again when the "why not?" panel dropped it from the queue before it ran */
  return ox_document_get_whatif(self->doc, self->whatif_key, TRUE, err);
}

static void rebuild_marks(OxWindow *self, const OxWhatifResult *r) {
  g_hash_table_remove_all(self->whatif_marks);
  for (guint i = 0; i < self->whatif_skip->len; i++)
    g_hash_table_insert(self->whatif_marks, GUINT_TO_POINTER(g_array_index(self->whatif_skip, guint, i) + 1),
                        GUINT_TO_POINTER(OX_WHATIF_MARK_REFUSED));
  for (guint i = 0; r && i < r->n_decisions; i++) {
    const OxWhatifDecision *x = &r->decisions[i];
    if (x->base_seq == OX_WHATIF_NONE) continue;
    gpointer key = GUINT_TO_POINTER(x->base_seq + 1);
    if (g_hash_table_contains(self->whatif_marks, key)) continue; /* refused by the user: says so */
    g_hash_table_insert(self->whatif_marks, key,
                        GUINT_TO_POINTER(x->change == OX_WHATIF_NEWLY_REJECTED ? OX_WHATIF_MARK_LOST
                                                                                : OX_WHATIF_MARK_GAINED));
  }
  remark_rows(self);
}

/* ------------------------------------------------------------------ the grid */

static GtkWidget *cell(OxWindow *self, const char *markup, gboolean heading) {
  GtkWidget *l = gtk_label_new(NULL);
  gtk_label_set_markup(GTK_LABEL(l), markup);
  gtk_label_set_xalign(GTK_LABEL(l), 0);
  gtk_label_set_yalign(GTK_LABEL(l), 0);
  gtk_label_set_wrap(GTK_LABEL(l), TRUE);
  gtk_label_set_wrap_mode(GTK_LABEL(l), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_width_chars(GTK_LABEL(l), 16);
  gtk_label_set_max_width_chars(GTK_LABEL(l), 40);
  gtk_widget_set_hexpand(l, TRUE);
  if (heading) gtk_widget_add_css_class(l, "heading");
  g_signal_connect(l, "activate-link", G_CALLBACK(ox_window_on_activate_link), self);
  return l;
}

/* One record as a cell: "#14 batch_linear at relu_11 applied −3 +9" or its rejection. link:
 * the record is a step of the shown trace (a link to it), else the alternative's own record. */
static void append_record(GString *s, const OxStep *st, gboolean link) {
  if (link) {
    ox_window_append_step_link(s, st->seq + 1);
    g_string_append_c(s, ' ');
  }
  char *m = g_markup_printf_escaped("<b>%s</b>", st->pass);
  g_string_append(s, m);
  g_free(m);
  if (st->rule && strcmp(st->rule, st->pass) != 0) {
    m = g_markup_printf_escaped(" / %s", st->rule);
    g_string_append(s, m);
    g_free(m);
  }
  if (st->anchor) {
    g_string_append(s, " at ");
    ox_window_append_node_link(s, st->anchor);
  }
  g_string_append_c(s, '\n');
  if (st->kind == OX_STEP_APPLIED) {
    g_string_append_printf(s, "<span foreground=\"#26a269\">applied</span>: −%u +%u nodes", st->n_removed,
                           st->n_added);
    if (st->n_matched > 1) g_string_append_printf(s, ", %u matched", st->n_matched);
  } else {
    char *why = ox_reason_format(&st->reason);
    m = g_markup_printf_escaped("<span foreground=\"%s\">%s</span>: %s", ox_window_kind_color(st->kind),
                                st->kind == OX_STEP_REJECTED ? "rejected" : "check failed", why ? why : "");
    g_string_append(s, m);
    g_free(m);
    free(why);
  }
}

static void clear_grid(OxWindow *self) {
  GtkWidget *c;
  while ((c = gtk_widget_get_first_child(self->whatif_grid))) gtk_grid_remove(GTK_GRID(self->whatif_grid), c);
}

static void add_row(OxWindow *self, guint row, const char *left, const char *right, gboolean heading) {
  gtk_grid_attach(GTK_GRID(self->whatif_grid), cell(self, left, heading), 0, (int)row, 1, 1);
  gtk_grid_attach(GTK_GRID(self->whatif_grid), cell(self, right, heading), 1, (int)row, 1, 1);
  g_string_append_printf(self->whatif_text, "%s | %s\n", left, right);
}

static void render(OxWindow *self, const OxWhatifResult *r, const char *err) {
  clear_grid(self);
  g_string_truncate(self->whatif_text, 0);
  GString *st = g_string_new(NULL);
  const OxTrace *t = ox_document_get_trace(self->doc);
  if (!self->whatif_key) {
    g_string_append(st, t ? "<i>Type pass options (as <tt>--option</tt>) and/or refuse applied steps (<b>d</b> on a "
                            "step), then Run: the re-run is compared decision by decision with this one.</i>"
                          : "<i>No trace: a what-if compares a re-run with a recorded run.</i>");
  } else if (err) {
    char *m = g_markup_printf_escaped("<span foreground=\"#c01c28\">What-if failed:</span> %s", err);
    g_string_append(st, m);
    g_free(m);
  } else if (!r) {
    g_string_append(st, "<i>Re-running…</i>");
  } else {
    int delta = (int)r->alt_nodes - (int)r->base_nodes;
    g_string_append_printf(st,
                           "<b>%u more and %u fewer rewrites</b>; nodes %u → %u (%+d); applied steps %u → %u; "
                           "re-run in %.2f s",
                           r->n_newly_applied, r->n_newly_rejected, r->base_nodes, r->alt_nodes, delta, r->base_applied,
                           r->alt_applied, r->seconds);
    if (!r->n_decisions) g_string_append(st, "\n<i>The alternative makes exactly the same rewrites.</i>");
    guint row = 0;
    if (r->n_decisions) add_row(self, row++, "<b>This run</b>", "<b>What-if</b>", TRUE);
    for (guint i = 0; i < r->n_decisions && i < 500; i++) {
      const OxWhatifDecision *x = &r->decisions[i];
      const OxStep *b = ox_whatif_base_step(r, x), *a = ox_whatif_alt_step(r, x);
      GString *ls = g_string_new(NULL), *rs = g_string_new(NULL);
      if (b)
        append_record(ls, b, TRUE);
      else
        g_string_append(ls, "<i>this run has no record of that pass at that anchor</i>");
      if (x->base_seq != OX_WHATIF_NONE && is_refused(self, x->base_seq))
        g_string_append(rs, "<span foreground=\"#77767b\"><b>refused</b></span> by you\n");
      if (a)
        append_record(rs, a, FALSE);
      else if (x->change == OX_WHATIF_NEWLY_REJECTED)
        g_string_append(rs, "<i>not applied; the re-run has no record of this anchor</i>");
      add_row(self, row++, ls->str, rs->str, FALSE);
      g_string_free(ls, TRUE);
      g_string_free(rs, TRUE);
    }
    if (r->n_decisions > 500) g_string_append_printf(st, "\n<i>first 500 of %u decisions shown</i>", r->n_decisions);
  }
  gtk_label_set_markup(GTK_LABEL(self->whatif_status), st->str);
  g_string_prepend_c(self->whatif_text, '\n');
  g_string_prepend(self->whatif_text, st->str);
  g_string_free(st, TRUE);
  rebuild_marks(self, err ? NULL : r);
}

static void update_refused_label(OxWindow *self) {
  GString *s = g_string_new("Refused steps: ");
  if (!self->whatif_skip->len) g_string_append(s, "<i>none (d on an applied step)</i>");
  for (guint i = 0; i < self->whatif_skip->len; i++) {
    if (i) g_string_append(s, ", ");
    ox_window_append_step_link(s, g_array_index(self->whatif_skip, guint, i) + 1);
  }
  gtk_label_set_markup(GTK_LABEL(self->whatif_refused), s->str);
  g_string_free(s, TRUE);
}

/* The shown history changed (a new run, another graph): what the tab showed is about steps
 * that are gone. */
static void forget(OxWindow *self) {
  g_clear_pointer(&self->whatif_key, g_free);
  g_array_set_size(self->whatif_skip, 0);
  self->whatif_rendered = NULL;
  self->whatif_rendered_state = 0;
  update_refused_label(self);
  render(self, NULL, NULL);
}

void ox_window_whatif_refresh(OxWindow *self) {
  if (!self->whatif_grid) return;
  const OxHistory *h = shown_history(self);
  if (h != self->whatif_history) {
    self->whatif_history = h;
    forget(self);
    return;
  }
  if (!self->whatif_key) return;
  const char *err = NULL;
  const OxWhatifResult *r = current_result(self, &err);
  guint state = r ? 2 : err ? 3 : 1;
  if (r == self->whatif_rendered && state == self->whatif_rendered_state) return;
  self->whatif_rendered = r;
  self->whatif_rendered_state = state;
  render(self, r, err);
}

/* ------------------------------------------------------------------ actions */

gboolean ox_window_whatif_run(OxWindow *self) {
  const char *text = gtk_editable_get_text(GTK_EDITABLE(self->whatif_entry));
  char **words = g_strsplit_set(text, " \t\n,", -1);
  GPtrArray *opts = g_ptr_array_new();
  for (char **w = words; *w; w++)
    if (**w) g_ptr_array_add(opts, *w);
  if (!opts->len && !self->whatif_skip->len) {
    gtk_label_set_markup(GTK_LABEL(self->whatif_status),
                         "<i>Nothing to change: type an option such as "
                         "<tt>batch_linear.min_fuse_set_size=3</tt> or refuse a step (d).</i>");
    g_ptr_array_free(opts, TRUE);
    g_strfreev(words);
    return FALSE;
  }
  g_free(self->whatif_key);
  self->whatif_key = ox_document_whatif_key((const char *const *)opts->pdata, opts->len,
                                            (const guint *)(void *)self->whatif_skip->data, self->whatif_skip->len);
  g_ptr_array_free(opts, TRUE);
  g_strfreev(words);
  self->whatif_history = shown_history(self);
  const char *err = NULL;
  const OxWhatifResult *r = ox_document_get_whatif(self->doc, self->whatif_key, TRUE, &err);
  self->whatif_rendered = r;
  self->whatif_rendered_state = r ? 2 : err ? 3 : 1;
  render(self, r, err);
  ox_window_show_panel(self, "whatif");
  return TRUE;
}

gboolean ox_window_whatif_toggle_refused(OxWindow *self, guint position) {
  const OxTrace *t = ox_document_get_trace(self->doc);
  if (!t || !position || position > t->n_steps) return FALSE;
  guint seq = position - 1;
  if (t->steps[seq].kind != OX_STEP_APPLIED) {
    char *m = g_markup_printf_escaped("<i>Step #%u was not applied: only an applied step can be refused.</i>", position);
    gtk_label_set_markup(GTK_LABEL(self->whatif_status), m);
    g_free(m);
    ox_window_show_panel(self, "whatif");
    return FALSE;
  }
  self->whatif_history = shown_history(self);
  gboolean removed = FALSE;
  for (guint i = 0; i < self->whatif_skip->len; i++)
    if (g_array_index(self->whatif_skip, guint, i) == seq) {
      g_array_remove_index(self->whatif_skip, i);
      removed = TRUE;
      break;
    }
  if (!removed) {
    g_array_append_val(self->whatif_skip, seq);
    g_array_sort(self->whatif_skip, ox_document_compare_guint);
  }
  update_refused_label(self);
  /* the marks show the refusal at once; the comparison comes with Run */
  const char *err = NULL;
  rebuild_marks(self, self->whatif_key ? current_result(self, &err) : NULL);
  ox_window_show_panel(self, "whatif");
  return TRUE;
}

const char *ox_window_get_whatif_text(OxWindow *self) { return self->whatif_text->str; }

void ox_window_set_whatif_options(OxWindow *self, const char *options) {
  gtk_editable_set_text(GTK_EDITABLE(self->whatif_entry), options ? options : "");
}

static void on_entry_activate(GtkEntry *e, OxWindow *self) {
  (void)e;
  ox_window_whatif_run(self);
}

static void on_clear(GtkButton *b, OxWindow *self) {
  (void)b;
  gtk_editable_set_text(GTK_EDITABLE(self->whatif_entry), "");
  forget(self);
}

GtkWidget *ox_window_whatif_build(OxWindow *self) {
  install_css();
  self->whatif_rows = g_hash_table_new(NULL, NULL);
  self->whatif_marks = g_hash_table_new(NULL, NULL);
  self->whatif_skip = g_array_new(FALSE, FALSE, sizeof(guint));
  self->whatif_text = g_string_new(NULL);
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
  gtk_widget_set_margin_start(box, 8);
  gtk_widget_set_margin_end(box, 8);
  gtk_widget_set_margin_top(box, 6);
  GtkWidget *l = gtk_label_new("Pass options (as --option, separated by spaces):");
  gtk_label_set_xalign(GTK_LABEL(l), 0);
  gtk_label_set_wrap(GTK_LABEL(l), TRUE);
  gtk_box_append(GTK_BOX(box), l);
  self->whatif_entry = gtk_entry_new();
  gtk_entry_set_placeholder_text(GTK_ENTRY(self->whatif_entry), "batch_linear.min_fuse_set_size=3");
  gtk_widget_set_tooltip_text(self->whatif_entry, "Enter runs the what-if");
  g_signal_connect(self->whatif_entry, "activate", G_CALLBACK(on_entry_activate), self);
  gtk_box_append(GTK_BOX(box), self->whatif_entry);
  self->whatif_refused = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(self->whatif_refused), 0);
  gtk_label_set_wrap(GTK_LABEL(self->whatif_refused), TRUE);
  g_signal_connect(self->whatif_refused, "activate-link", G_CALLBACK(ox_window_on_activate_link), self);
  gtk_box_append(GTK_BOX(box), self->whatif_refused);
  GtkWidget *buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *refuse = gtk_button_new_with_mnemonic("Refuse _Step");
  gtk_actionable_set_action_name(GTK_ACTIONABLE(refuse), "win.whatif-refuse");
  gtk_widget_set_tooltip_text(refuse, "Refuse the current applied step in the what-if, or take it back (d)");
  GtkWidget *run = gtk_button_new_with_mnemonic("_Run What-if");
  gtk_actionable_set_action_name(GTK_ACTIONABLE(run), "win.whatif-run");
  gtk_widget_add_css_class(run, "suggested-action");
  GtkWidget *clear = gtk_button_new_with_label("Clear");
  g_signal_connect(clear, "clicked", G_CALLBACK(on_clear), self);
  gtk_box_append(GTK_BOX(buttons), refuse);
  gtk_box_append(GTK_BOX(buttons), run);
  gtk_box_append(GTK_BOX(buttons), clear);
  gtk_box_append(GTK_BOX(box), buttons);
  self->whatif_status = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(self->whatif_status), 0);
  gtk_label_set_wrap(GTK_LABEL(self->whatif_status), TRUE);
  gtk_label_set_wrap_mode(GTK_LABEL(self->whatif_status), PANGO_WRAP_WORD_CHAR);
  gtk_box_append(GTK_BOX(box), self->whatif_status);
  self->whatif_grid = gtk_grid_new();
  gtk_grid_set_column_spacing(GTK_GRID(self->whatif_grid), 12);
  gtk_grid_set_row_spacing(GTK_GRID(self->whatif_grid), 8);
  gtk_grid_set_column_homogeneous(GTK_GRID(self->whatif_grid), TRUE);
  gtk_box_append(GTK_BOX(box), self->whatif_grid);
  update_refused_label(self);
  render(self, NULL, NULL);
  GtkWidget *sw = gtk_scrolled_window_new();
  gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), box);
  return sw;
}

void ox_window_whatif_dispose(OxWindow *self) {
  g_clear_pointer(&self->whatif_rows, g_hash_table_destroy);
  g_clear_pointer(&self->whatif_marks, g_hash_table_destroy);
  if (self->whatif_skip) g_array_free(self->whatif_skip, TRUE);
  self->whatif_skip = NULL;
  if (self->whatif_text) g_string_free(self->whatif_text, TRUE);
  self->whatif_text = NULL;
  g_clear_pointer(&self->whatif_key, g_free);
}
