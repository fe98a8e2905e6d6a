/* ox-window.c - the debugger's main window (see ox-window.h).
 *
 * The window owns one OxDocument and reflects it: document notify:: signals update labels,
 * panels and action states; user input goes through win.* actions into the document. Long work
 * (optimization, layout, export) runs on worker threads; the window stays responsive and shows
 * progress. Letter shortcuts (n, p, b, f ...) live on a bubble-phase controller of the main
 * pane so typing in the search entry never triggers them; Ctrl shortcuts are application
 * accelerators (ox-application.c).
 */
#include "ox-window.h"

#include "rules/ox_rules.h"

#include <string.h>

#include "ox-minimap.h"
#include "ox-step-row.h"

#include "write/ox_write.h"

struct _OxWindow {
  GtkApplicationWindow parent_instance;

  /* widgets (borrowed: owned by the widget tree) */
  GtkWidget *view;
  GtkWidget *minimap;
  GtkWidget *step_label, *status_label, *hits_label;
  GtkWidget *search_bar, *search_entry;
  GtkWidget *progress_revealer, *progress_bar;
  GtkWidget *list_view;
  GtkWidget *pass_dropdown;
  GtkWidget *stack;
  GtkWidget *panel_label[3]; /* node, why, checks */
  GtkWidget *main_pane;
  GtkWidget *graph_dropdown, *graph_parent; /* the dump's graphs; back to the enclosing one */
  GtkWidget *warn_bar, *warn_label, *warn_revealer, *warn_list, *warn_toggle;

  /* owned */
  OxDocument *doc;
  GSimpleActionGroup *group_unused;
  GtkSingleSelection *selection;
  GtkStringList *pass_list;
  GCancellable *optimize;
  GMenu *recent_menu;
  char *last_error;
  char *note;            /* said on the status line until the next open ("the remembered trace is gone") */
  char *panel_markup[3];

  /* what the panels were last built for */
  OxHistory *frame_history; /* borrowed, compared only */
  guint frame_position;
  gboolean frame_before;
  char *frame_selected;

  /* rule files (issue 7): the open one, its monitor, and every set loaded so far (kept alive:
   * pipelines and running jobs borrow their passes) */
  char *rules_path;
  GFileMonitor *rules_monitor;
  guint rules_reload_source;
  GPtrArray *rule_sets;
  guint n_rule_loads;

  GtkWidget *play_button;
  GtkWidget *right_pane, *panels; /* canvas | panels */

  /* plain state */
  guint play_source;
  guint refocus_source;    /* moving the keyboard focus to the current step's timeline row */
  guint refocus_tries;
  gboolean panels_placed;
  guint hint_auto_max;     /* graphs up to this many nodes get their hints checked at once */
  guint n_exports;
  gboolean syncing_list;
  gboolean syncing_passes;
  gboolean syncing_graphs;
  GtkStringList *graph_list;
  guint warn_serial; /* the load the warning bar shows */
};

G_DEFINE_FINAL_TYPE(OxWindow, ox_window, GTK_TYPE_APPLICATION_WINDOW)

static const char *const panel_names[3] = {"node", "why", "checks"};

static void window_update_actions(OxWindow *self);
static void window_update_panels(OxWindow *self);
static void refocus_row(OxWindow *self);
static void chooser_in_graph_folder(OxWindow *self, GtkFileChooser *fc);

/* ------------------------------------------------------------------ helpers */

static GAction *win_action(OxWindow *self, const char *name) {
  return g_action_map_lookup_action(G_ACTION_MAP(self), name);
}

static OxScene *window_scene(OxWindow *self) { return ox_graph_view_get_scene(OX_GRAPH_VIEW(self->view)); }

static void action_enable(OxWindow *self, const char *name, gboolean on) {
  GAction *a = win_action(self, name);
  if (a) g_simple_action_set_enabled(G_SIMPLE_ACTION(a), on);
}

static void action_set_bool(OxWindow *self, const char *name, gboolean on) {
  GAction *a = win_action(self, name);
  if (a) g_simple_action_set_state(G_SIMPLE_ACTION(a), g_variant_new_boolean(on));
}

static void show_error(OxWindow *self, const char *title, const char *message) {
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
static void append_node_link(GString *out, const char *name) {
  char *m = g_markup_printf_escaped("<a href=\"node:%s\"><tt>%s</tt></a>", name, name);
  g_string_append(out, m);
  g_free(m);
}

static void append_step_link(GString *out, guint position) {
  g_string_append_printf(out, "<a href=\"step:%u\">#%u</a>", position, position);
}

/* "%name" references in a formatted value (shown in monospace) become node links; the rest is
 * escaped. */
static void append_linked(GString *out, const char *text, const OxGraph *g) {
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
static void append_node_links(GString *out, const char *const *names, guint n, guint max) {
  for (guint i = 0; i < n && i < max; i++) {
    if (i) g_string_append_c(out, ' ');
    append_node_link(out, names[i]);
  }
  if (n > max) g_string_append_printf(out, " and %u more", n - max);
}

/* ------------------------------------------------------------------ panels */

static void panel_node(OxWindow *self, GString *s) {
  OxHistory *h = ox_document_get_history(self->doc);
  const char *sel = ox_document_get_selected(self->doc);
  if (!h || !sel) {
    g_string_append(s, "<i>Click a node to inspect it.</i>");
    return;
  }
  OxGraph *g = ox_document_get_graph(self->doc);
  OxNodeId id = ox_graph_find(g, sel);
  guint k = ox_document_get_shown_gstep(self->doc);
  guint32 uid = ox_document_uid_of(self->doc, sel);
  if (!uid) {
    /* not alive here: the newest identity with this name */
    guint32 e = ox_history_named(h, sel);
    if (e) uid = h->named[e].uid;
  }
  const OxNode *n = id ? &g->nodes[id] : (uid ? &h->u->nodes[uid] : NULL);
  char *m = g_markup_printf_escaped("<big><b>%s</b></big>\n", sel);
  g_string_append(s, m);
  g_free(m);
  if (!n) return;
  if (!id) g_string_append(s, "<span foreground=\"#c01c28\">not in the graph at this step</span>\n");
  m = g_markup_printf_escaped("<b>op</b> %s   <b>family</b> %s\n<b>target</b> <tt>%s</tt>\n", ox_op_name((OxOp)n->op),
                              ox_family_name(ox_node_family(id ? g : h->u, n)), n->target);
  g_string_append(s, m);
  g_free(m);
  /* a lowered module / submodule whose graph the dump carries: open it */
  guint sub = ox_document_find_subgraph_entry(self->doc, n->target);
  if (sub == G_MAXUINT) sub = ox_document_find_subgraph_entry(self->doc, n->name);
  if (sub == G_MAXUINT && id && n->args.n && n->args.u.items[0].kind == OX_V_NODE) {
    const OxNode *a0 = ox_graph_node(g, n->args.u.items[0].u.node);
    if (a0) sub = ox_document_find_subgraph_entry(self->doc, a0->target);
  }
  if (sub != G_MAXUINT) {
    const OxGraphEntry *e = ox_document_get_graph_entry(self->doc, sub);
    m = g_markup_printf_escaped("<b>graph</b> <a href=\"graph:%u\">%s</a>\n", sub, e->label);
    g_string_append(s, m);
    g_free(m);
  }
  if (id) {
    OxBuf b;
    ox_buf_init(&b);
    ox_write_fx_value(g, &n->args, &b);
    g_string_append(s, "<b>args</b> <tt>");
    append_linked(s, b.data ? b.data : "()", g);
    g_string_append(s, "</tt>\n");
    b.len = 0;
    ox_write_fx_value(g, &n->kwargs, &b);
    g_string_append(s, "<b>kwargs</b> <tt>");
    append_linked(s, b.data ? b.data : "{}", g);
    g_string_append(s, "</tt>\n");
    ox_buf_free(&b);
  }
  if (n->meta.kind == OX_META_TENSOR || n->meta.kind == OX_META_TUPLE) {
    for (guint32 i = 0; i < n->meta.n; i++) {
      char buf[256];
      const OxTensorMeta *t = &n->meta.t[i];
      char shape[200];
      OxTensorMeta t2 = *t;
      t2.has_stride = false;
      t2.device = NULL;
      ox_tensor_meta_format(&t2, false, false, shape, sizeof shape);
      g_snprintf(buf, sizeof buf, "%s", shape);
      GString *line = g_string_new(NULL);
      g_string_append_printf(line, "<b>meta%s</b> dtype %s, shape <tt>", n->meta.n > 1 ? "" : "",
                             ox_dtype_abbr(t->dtype));
      char *e = g_markup_escape_text(buf, -1);
      g_string_append(line, e);
      g_free(e);
      g_string_append(line, "</tt>");
      if (t->has_stride) {
        char full[256];
        ox_tensor_meta_format(t, true, false, full, sizeof full);
        const char *st = strchr(full, ']');
        e = g_markup_escape_text(st ? st + 1 : "", -1);
        g_string_append_printf(line, ", stride <tt>%s</tt>", e);
        g_free(e);
      }
      if (t->device) {
        e = g_markup_escape_text(t->device, -1);
        g_string_append_printf(line, ", device %s", e);
        g_free(e);
      }
      g_string_append(s, line->str);
      g_string_append_c(s, '\n');
      g_string_free(line, TRUE);
    }
  } else if (n->meta.kind == OX_META_SYMINT) {
    m = g_markup_printf_escaped("<b>meta</b> SymInt %s\n", n->meta.sym ? n->meta.sym : "");
    g_string_append(s, m);
    g_free(m);
  } else {
    g_string_append(s, "<b>meta</b> <i>unknown</i>\n");
  }
  if (id) {
    g_string_append_printf(s, "<b>users</b> (%u) ", n->n_users);
    for (guint32 i = 0; i < n->n_users; i++) {
      if (i) g_string_append(s, ", ");
      append_node_link(s, g->nodes[n->users[i]].name);
    }
    g_string_append_c(s, '\n');
  }
  if (n->module_path) {
    m = g_markup_printf_escaped("<b>module</b> <tt>%s</tt>%s%s\n", n->module_path, n->module_type ? " " : "",
                                n->module_type ? n->module_type : "");
    g_string_append(s, m);
    g_free(m);
  }
  /* provenance and lifetime */
  if (uid) {
    g_string_append(s, "\n<b>history</b> ");
    if (h->born[uid] == 0)
      g_string_append(s, "in the input graph");
    else {
      g_string_append(s, "created by ");
      append_step_link(s, h->seq_of_gstep[h->born[uid]] + 1);
    }
    if (h->died[uid] != OX_HISTORY_NEVER) {
      g_string_append(s, ", removed by ");
      append_step_link(s, h->seq_of_gstep[h->died[uid]] + 1);
    }
    g_string_append_c(s, '\n');
  }
  (void)k;
  if (id && n->n_provenance) {
    g_string_append(s, "<b>comes from</b> ");
    for (guint32 i = 0; i < n->n_provenance; i++) {
      const OxNode *o = ox_graph_node(h->input, n->provenance[i]);
      if (i) g_string_append(s, ", ");
      if (o) append_node_link(s, o->name);
    }
    g_string_append_c(s, '\n');
  }
  if (n->stack_trace) {
    m = g_markup_printf_escaped("\n<b>stack trace</b>\n<tt><small>%s</small></tt>\n", n->stack_trace);
    g_string_append(s, m);
    g_free(m);
  }
}

static const char *kind_color(guint8 kind) {
  return kind == OX_STEP_APPLIED ? "#26a269" : kind == OX_STEP_REJECTED ? "#9a9996" : "#c01c28";
}

/* The rule file and line of a user rule's step ("my.rules:12"), or NULL. */
static char *rule_location(const OxStep *st) {
  if (!st->rule_file) return NULL;
  char *base = g_path_get_basename(st->rule_file);
  char *r = st->rule_line ? g_strdup_printf("%s:%u", base, st->rule_line) : g_strdup(base);
  g_free(base);
  return r;
}

/* One record: "● #4 batch_linear / batch_linear  rejected: set of 3 < min_fuse_set_size 5". */
static void append_step_title(GString *s, const OxStep *st) {
  char *m = g_markup_printf_escaped("<span foreground=\"%s\">●</span> ", kind_color(st->kind));
  g_string_append(s, m);
  g_free(m);
  append_step_link(s, st->seq + 1);
  gboolean rule = st->rule && strcmp(st->rule, st->pass) != 0;
  m = g_markup_printf_escaped(" <b>%s</b>%s%s", st->pass, rule ? " / " : "", rule ? st->rule : "");
  g_string_append(s, m);
  g_free(m);
  char *loc = rule_location(st);
  if (loc) {
    m = g_markup_printf_escaped(" <small>(rule at <tt>%s</tt>)</small>", loc);
    g_string_append(s, m);
    g_free(m);
    g_free(loc);
  }
  if (st->kind == OX_STEP_APPLIED) {
    g_string_append_printf(s, "  applied: −%u +%u nodes", st->n_removed, st->n_added);
  } else {
    char *why = ox_reason_format(&st->reason);
    /* the guard that failed, its values, and its code (docs/trace-format.md) */
    m = g_markup_printf_escaped("  %s: %s <small>[%s]</small>", st->kind == OX_STEP_REJECTED ? "rejected" : "check failed",
                                why ? why : "", ox_reason_code_name((OxReasonCode)st->reason.code));
    g_string_append(s, m);
    g_free(m);
    free(why);
  }
  g_string_append_c(s, '\n');
}

/* Anchor and candidates (matched nodes) of a record, the selected node marked. */
static void append_step_nodes(GString *s, const OxStep *st, const char *sel) {
  if (st->anchor) {
    g_string_append(s, "    anchor ");
    append_node_link(s, st->anchor);
    if (sel && !strcmp(sel, st->anchor)) g_string_append(s, " <i>(this node)</i>");
  }
  if (st->n_matched) {
    gboolean in = FALSE;
    for (guint i = 0; sel && i < st->n_matched && !in; i++) in = !strcmp(st->matched[i], sel);
    g_string_append_printf(s, "%s%u %s%s: ", st->anchor ? " · " : "    ", st->n_matched,
                           st->kind == OX_STEP_APPLIED ? "matched" : st->n_matched == 1 ? "candidate" : "candidates",
                           in ? " <i>(this node among them)</i>" : "");
    append_node_links(s, st->matched, st->n_matched, 12);
  }
  if (st->anchor || st->n_matched) g_string_append_c(s, '\n');
  /* other nodes the reason names */
  gboolean any = FALSE;
  for (guint i = 0; i < st->reason.n_args; i++) {
    const char *nm = st->reason.nodes[i];
    if (!nm || (st->anchor && !strcmp(nm, st->anchor))) continue;
    g_string_append(s, any ? " " : "    named in the reason: ");
    append_node_link(s, nm);
    any = TRUE;
  }
  if (any) g_string_append_c(s, '\n');
}

static void append_step_summary(GString *s, const OxStep *st) {
  append_step_title(s, st);
  append_step_nodes(s, st, NULL);
}

/* The alternative's own record of s's pass and anchor (what the re-run said instead), or NULL. */
static const OxStep *alt_record(const OxWhatifResult *r, const OxStep *s) {
  for (guint i = 0; r->trace && i < r->trace->n_steps; i++) {
    const OxStep *a = &r->trace->steps[i];
    if (!g_strcmp0(a->pass, s->pass) && !g_strcmp0(a->anchor, s->anchor)) return a;
  }
  return NULL;
}

/* Graphs up to this size get their hints checked as soon as the panel shows them; larger ones
 * (a re-run takes seconds) when the user asks ("check by a re-run"). */
enum { HINT_AUTO_MAX_NODES = 50000 };

/* The "what would make it fire" of a rejected record: each option its reason suggests, checked by
 * a what-if re-run in the background (ox_document_get_whatif); only a re-run that applies the
 * group is offered as a hint. Returns how many re-runs it asked for (pending). */
static guint append_hint(OxWindow *self, GString *s, const OxStep *st, const OxPipeline *p, gboolean start) {
  if (st->kind != OX_STEP_REJECTED) return 0;
  char c[4][OX_WHATIF_OPTION_MAX];
  guint n = ox_whatif_candidates(p, st, c, 4);
  if (!n) {
    g_string_append(s, "    <i>no option controls this guard</i>\n");
    return 0;
  }
  guint pending = 0, helped = 0, refuted = 0;
  for (guint i = 0; i < n; i++) {
    const char *err = NULL;
    const OxWhatifResult *r = ox_document_get_whatif(self->doc, c[i], start, &err);
    char *m;
    if (err) {
      m = g_markup_printf_escaped("    <i>could not check <tt>--option %s</tt>: %s</i>\n", c[i], err);
      g_string_append(s, m);
      g_free(m);
      continue;
    }
    if (!r && !start) {
      /* a large graph: a re-run costs seconds, so it runs when asked */
      m = g_markup_printf_escaped("    <tt>--option %s</tt> might make it fire: <a href=\"whatif:%s\">check by a re-run</a>\n",
                                  c[i], c[i]);
      g_string_append(s, m);
      g_free(m);
      continue;
    }
    if (!r) {
      m = g_markup_printf_escaped("    <i>checking <tt>--option %s</tt> by a re-run…</i>\n", c[i]);
      g_string_append(s, m);
      g_free(m);
      pending++;
      continue;
    }
    guint32 at = ox_whatif_fires(r, st);
    if (at != OX_WHATIF_NONE) {
      const OxStep *a = &r->trace->steps[at];
      helped++;
      m = g_markup_printf_escaped("    <span foreground=\"#26a269\">✔</span> <b>with <tt>--option %s</tt> this %s</b>\n"
                                  "      checked by a re-run: %s applies at <tt>%s</tt> (−%u +%u nodes); in all %u "
                                  "more and %u fewer rewrites, %u → %u nodes · ",
                                  c[i], st->n_matched > 1 ? "group would fuse" : "would fire", a->pass,
                                  a->anchor ? a->anchor : "?", a->n_removed, a->n_added, r->n_newly_applied,
                                  r->n_newly_rejected, r->base_nodes, r->alt_nodes);
      g_string_append(s, m);
      g_free(m);
      m = g_markup_printf_escaped("<a href=\"rerun:%s\">re-run with this option</a>\n", c[i]);
      g_string_append(s, m);
      g_free(m);
    } else {
      refuted++;
      const OxStep *a = alt_record(r, st);
      char *why = a && a->kind != OX_STEP_APPLIED ? ox_reason_format(&a->reason) : NULL;
      m = g_markup_printf_escaped("    <span foreground=\"#9a9996\">✘</span> <tt>--option %s</tt> does not make it "
                                  "fire\n      checked by a re-run: %s%s\n",
                                  c[i], why ? "rejected again: " : "the group is not rewritten", why ? why : "");
      g_string_append(s, m);
      g_free(m);
      free(why);
    }
  }
  if (!pending && !helped && refuted)
    g_string_append(s, "    <i>no option change makes this fire</i>\n");
  return pending;
}

static void panel_why(OxWindow *self, GString *s) {
  const char *sel = ox_document_get_selected(self->doc);
  const OxTrace *t = ox_document_get_trace(self->doc);
  if (!sel) {
    g_string_append(s, "<i>Select a node to see every pass that considered it, and why it did or did not fire.</i>");
    return;
  }
  char *m = g_markup_printf_escaped("<big><b>Why not? — %s</b></big>\n", sel);
  g_string_append(s, m);
  g_free(m);
  if (!t) {
    g_string_append(s, "<i>No trace yet.</i>");
    return;
  }
  GArray *a = ox_document_explain(self->doc, sel);
  guint counts[3] = {0, 0, 0};
  for (guint i = 0; i < a->len; i++) counts[MIN(t->steps[g_array_index(a, guint, i) - 1].kind, 2)]++;
  if (!a->len)
    g_string_append(s, "No pass recorded anything about this node: no pattern anchored on it or matched it.\n");
  else
    g_string_append_printf(s, "%u record%s mention it (%u applied, %u rejected, %u check failed):\n\n", a->len,
                           a->len == 1 ? "" : "s", counts[0], counts[1], counts[2]);
  OxPipeline p;
  OxCheckConfig checks;
  char *why = NULL;
  gboolean can_rerun = ox_document_whatif_pipeline(self->doc, &p, &checks, &why);
  guint hinted = 0;
  /* the re-runs this panel asks for replace those the previous node asked for and did not get */
  ox_document_whatif_drop_queued(self->doc);
  const OxHistory *hist = ox_document_get_history(self->doc);
  gboolean automatic = hist && hist->input->n_live <= self->hint_auto_max;
  for (guint i = 0; i < a->len && i < 400; i++) {
    const OxStep *st = &t->steps[g_array_index(a, guint, i) - 1];
    append_step_title(s, st);
    append_step_nodes(s, st, sel);
    if (st->kind == OX_STEP_REJECTED) {
      if (!can_rerun) {
        m = g_markup_printf_escaped("    <i>hints need a re-run: %s</i>\n", why ? why : "");
        g_string_append(s, m);
        g_free(m);
      } else {
        /* re-runs are asked for the first records only; the rest say so until these are done */
        append_hint(self, s, st, &p, automatic && hinted < 16);
        hinted++;
      }
    }
    g_string_append_c(s, '\n');
  }
  if (a->len > 400) g_string_append_printf(s, "<i>… and %u more records</i>\n", a->len - 400);
  if (can_rerun) ox_pipeline_free(&p);
  g_free(why);
  g_array_free(a, TRUE);
}

static void panel_checks(OxWindow *self, GString *s) {
  const OxStep *st = ox_document_get_step(self->doc);
  if (!st) {
    g_string_append(s, "<i>Step to a record (n / Right) to see its semantic checks.</i>");
    return;
  }
  append_step_summary(s, st);
  char *loc = rule_location(st);
  if (loc) {
    char *m = g_markup_printf_escaped("    rule <b>%s</b> written at <tt>%s</tt>\n", st->rule ? st->rule : st->pass, loc);
    g_string_append(s, m);
    g_free(m);
    g_free(loc);
  }
  g_string_append_c(s, '\n');
  if (st->kind == OX_STEP_REJECTED) {
    g_string_append(s, "<i>Rejected before rewriting: no checks ran.</i>\n");
    return;
  }
  static const char *const status_color[] = {"#77767b", "#26a269", "#c01c28", "#c64600"};
  for (int k = 0; k < OX_CHECK_KINDS; k++) {
    const OxCheckResult *r = &st->checks[k];
    guint stt = MIN(r->status, 3u);
    char *m = g_markup_printf_escaped("<b>%s</b>  <span foreground=\"%s\"><b>%s</b></span>", ox_check_kind_name((OxCheckKind)k),
                                      status_color[stt], ox_check_status_name((OxCheckStatus)r->status));
    g_string_append(s, m);
    g_free(m);
    if (r->seconds > 0) g_string_append_printf(s, "  <small>%.2f ms</small>", r->seconds * 1000);
    g_string_append_c(s, '\n');
    if (k == OX_CHECK_NUMERIC && (r->status == OX_CHECK_PASSED || r->status == OX_CHECK_FAILED))
      g_string_append_printf(s, "    max abs error %.3g, max rel error %.3g, tolerance %.3g, %u trials\n", r->max_abs,
                             r->max_rel, r->tol, r->trials);
    if (r->checked_shape) {
      m = g_markup_printf_escaped("    %s\n", r->checked_shape);
      g_string_append(s, m);
      g_free(m);
    }
    if (r->detail && *r->detail) {
      m = g_markup_printf_escaped("    %s\n", r->detail);
      g_string_append(s, m);
      g_free(m);
    }
  }
}

static void window_update_panels(OxWindow *self) {
  void (*fill[3])(OxWindow *, GString *) = {panel_node, panel_why, panel_checks};
  for (int i = 0; i < 3; i++) {
    GString *s = g_string_new(NULL);
    fill[i](self, s);
    /* a label given new text is measured again (wrapped text: shaped at least twice), at a cost
     * that grows with the text; most steps leave two of the three panels as they were */
    if (self->panel_markup[i] && strcmp(self->panel_markup[i], s->str) == 0) {
      g_string_free(s, TRUE);
      continue;
    }
    g_free(self->panel_markup[i]);
    self->panel_markup[i] = g_string_free(s, FALSE);
    gtk_label_set_markup(GTK_LABEL(self->panel_label[i]), self->panel_markup[i]);
  }
}

const char *ox_window_get_panel_markup(OxWindow *self, const char *panel) {
  for (int i = 0; i < 3; i++)
    if (strcmp(panel, panel_names[i]) == 0) return self->panel_markup[i];
  return NULL;
}

void ox_window_show_panel(OxWindow *self, const char *panel) {
  gtk_stack_set_visible_child_name(GTK_STACK(self->stack), panel);
}

static gboolean on_activate_link(GtkLabel *label, const char *uri, OxWindow *self) {
  (void)label;
  if (g_str_has_prefix(uri, "node:")) {
    gtk_widget_activate_action(GTK_WIDGET(self), "win.select-node", "s", uri + 5);
    return TRUE;
  }
  if (g_str_has_prefix(uri, "step:")) {
    gtk_widget_activate_action(GTK_WIDGET(self), "win.goto-step", "u", (guint)g_ascii_strtoull(uri + 5, NULL, 10));
    return TRUE;
  }
  if (g_str_has_prefix(uri, "graph:")) {
    gtk_widget_activate_action(GTK_WIDGET(self), "win.graph", "u", (guint)g_ascii_strtoull(uri + 6, NULL, 10));
    return TRUE;
  }
  if (g_str_has_prefix(uri, "whatif:")) {
    gtk_widget_activate_action(GTK_WIDGET(self), "win.check-option", "s", uri + 7);
    return TRUE;
  }
  if (g_str_has_prefix(uri, "rerun:")) {
    gtk_widget_activate_action(GTK_WIDGET(self), "win.optimize-with", "s", uri + 6);
    return TRUE;
  }
  return FALSE;
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
  if (n) gtk_drop_down_set_selected(GTK_DROP_DOWN(self->graph_dropdown), ox_document_get_graph_entry_index(self->doc));
  gtk_widget_set_visible(self->graph_dropdown, n > 1);
  const OxGraphEntry *cur = n ? ox_document_get_graph_entry(self->doc, ox_document_get_graph_entry_index(self->doc)) : NULL;
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
  guint n = ox_document_get_n_load_warnings(self->doc), kept = ox_document_get_n_kept_load_warnings(self->doc);
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

static void start_optimize(OxWindow *self);

/* Shows graph entry i; one never optimized gets the default optimization, as a file opened
 * without a trace does. */
static gboolean show_graph(OxWindow *self, guint i) {
  if (i == ox_document_get_graph_entry_index(self->doc)) return TRUE;
  if (self->optimize) g_cancellable_cancel(self->optimize);
  GError *err = NULL;
  if (!ox_document_show_graph_entry(self->doc, i, &err)) {
    show_error(self, "Cannot show that graph", err->message);
    g_error_free(err);
    return FALSE;
  }
  if (!ox_document_get_trace(self->doc)) start_optimize(self);
  return TRUE;
}

static void on_graph_selected(GtkDropDown *dd, GParamSpec *ps, OxWindow *self) {
  (void)ps;
  if (self->syncing_graphs) return;
  guint i = gtk_drop_down_get_selected(dd);
  if (i != GTK_INVALID_LIST_POSITION) show_graph(self, i);
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
    g_snprintf(buf, sizeof buf, "step %u / %u%s", p, n, ox_document_get_show_before(self->doc) ? " (before)" : "");
  gtk_label_set_text(GTK_LABEL(self->step_label), buf);
}

static void update_status(OxWindow *self) {
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
    guint nodes = 0;
    OX_GRAPH_FOREACH(g, id) nodes += g->nodes[id].op != OX_OP_OUTPUT;
    g_string_append_printf(s, " · %u nodes", nodes);
  }
  const char *sn = ox_document_get_shapes_note(self->doc);
  if (sn) g_string_append_printf(s, " · %s", sn);
  const char *st = ox_document_get_status(self->doc);
  if (st) g_string_append_printf(s, " · %s", st);
  if (g) g_string_append_printf(s, " · %s view", ox_view_mode_name(ox_scene_get_shown_mode(window_scene(self))));
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
  else if (ox_document_get_search_text(self->doc))
    g_snprintf(buf, sizeof buf, "%u matches", ox_document_get_n_hits(self->doc));
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

static void window_update_actions(OxWindow *self) {
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
  const OxGraphEntry *ge = has ? ox_document_get_graph_entry(self->doc, ox_document_get_graph_entry_index(self->doc)) : NULL;
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
  action_enable(self, "open-trace", has && !busy);
  action_enable(self, "open-rules", has);
  action_enable(self, "optimize", has && !busy);
  action_enable(self, "optimize-with", has && !busy);
  action_enable(self, "shapes", has);
  action_enable(self, "apply-shapes", has);
  action_enable(self, "cancel", busy);
  action_enable(self, "filter-touching", ox_document_get_selected(self->doc) != NULL || ox_document_get_filter_touching(self->doc));
  if (self->play_source && !any_after) {
    g_source_remove(self->play_source);
    self->play_source = 0;
    action_set_bool(self, "play", FALSE);
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
  update_status(self);
  if (!same) {
    self->frame_history = h;
    self->frame_position = pos;
    self->frame_before = before;
    g_free(self->frame_selected);
    self->frame_selected = g_strdup(sel);
    sync_list_selection(self);
    window_update_panels(self);
  }
  window_update_actions(self);
}

static void on_doc_notify(OxDocument *doc, GParamSpec *ps, OxWindow *self) {
  (void)doc;
  const char *name = g_param_spec_get_name(ps);
  if (!strcmp(name, "show-before")) action_set_bool(self, "before", ox_document_get_show_before(self->doc));
  if (!strcmp(name, "n-hits") || !strcmp(name, "search-text")) update_hits(self);
  if (!strcmp(name, "filter-touching")) action_set_bool(self, "filter-touching", ox_document_get_filter_touching(self->doc));
  if (!strcmp(name, "filter-kinds")) {
    guint k = ox_document_get_filter_kinds(self->doc);
    action_set_bool(self, "filter-applied", k & OX_FILTER_APPLIED);
    action_set_bool(self, "filter-rejected", k & OX_FILTER_REJECTED);
    action_set_bool(self, "filter-check-failed", k & OX_FILTER_CHECK_FAILED);
  }
  if (!strcmp(name, "busy")) {
    gboolean busy = ox_document_get_busy(self->doc);
    gtk_revealer_set_reveal_child(GTK_REVEALER(self->progress_revealer), busy);
  }
  if (!strcmp(name, "progress"))
    gtk_progress_bar_set_fraction(GTK_PROGRESS_BAR(self->progress_bar), ox_document_get_progress(self->doc));
  if (!strcmp(name, "status")) {
    const char *st = ox_document_get_status(self->doc);
    gtk_progress_bar_set_text(GTK_PROGRESS_BAR(self->progress_bar), st ? st : "");
    update_status(self);
  }
  if (!strcmp(name, "path")) {
    const char *path = ox_document_get_path(self->doc);
    char *base = path ? g_path_get_basename(path) : NULL;
    char *title = g_strdup_printf("%s%sOptimus Debugger", base ? base : "", base ? " — " : "");
    gtk_window_set_title(GTK_WINDOW(self), title);
    g_free(title);
    g_free(base);
  }
  window_update_actions(self);
}

static void on_history_changed(OxWindow *self) {
  self->frame_history = NULL;
  graphs_rebuild(self);
  warnings_rebuild(self);
  rebuild_pass_list(self);
  on_doc_frame_changed(self);
}

/* a hint's re-run finished: the Why not? panel says what it found */
static void on_whatif_done(OxDocument *doc, const char *option, OxWindow *self) {
  (void)doc;
  (void)option;
  window_update_panels(self);
}

static void on_view_notify(OxWindow *self) {
  update_status(self);
  window_update_actions(self);
}

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

static void recent_rebuild(OxWindow *self) {
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
  update_status(self);
}

static void on_optimized(GObject *src, GAsyncResult *res, gpointer data) {
  OxWindow *self = data;
  GError *err = NULL;
  if (!ox_document_optimize_finish(OX_DOCUMENT(src), res, &err) && err &&
      !g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    show_error(self, "Optimization failed", err->message);
  g_clear_error(&err);
  if (self->optimize && g_cancellable_is_cancelled(self->optimize)) {
    /* keep the window usable on the unoptimized graph */
  }
  g_clear_object(&self->optimize);
  window_update_actions(self);
  g_object_unref(self);
}

static void start_optimize(OxWindow *self) {
  g_clear_object(&self->optimize);
  self->optimize = g_cancellable_new();
  ox_document_optimize_async(self->doc, self->optimize, on_optimized, g_object_ref(self));
}

static void on_trace_loaded(GObject *src, GAsyncResult *res, gpointer data) {
  OxWindow *self = data;
  GError *err = NULL;
  gboolean ok = ox_document_load_trace_finish(OX_DOCUMENT(src), res, &err);
  if (!ok && err && !g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    show_error(self, "Cannot open the trace", err->message);
  g_clear_error(&err);
  if (ok) {
    recent_remember(self); /* Open Recent brings the trace back with the graph */
    recent_rebuild(self);
  }
  g_clear_object(&self->optimize);
  window_update_actions(self);
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
      ox_document_set_pending_shapes(self->doc, (const char *const *)r.specs, r.specs ? g_strv_length(r.specs) : 0,
                                     r.shapes);
      from_memory = TRUE;
    }
    remembered_clear(&r);
  }
  g_clear_pointer(&self->note, g_free);
  /* the graph first (shown at once), its trace on a worker: large traces take seconds to parse */
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
    char *title = g_strdup_printf("Cannot open %s", graph_path);
    show_error(self, title, err->message);
    g_free(title);
    g_error_free(err);
    return FALSE;
  }
  g_clear_pointer(&self->last_error, g_free);
  recent_remember(self);
  recent_rebuild(self);
  update_status(self);
  if (!trace_path) {
    start_optimize(self);
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
    ox_document_set_pending_shapes(self->doc, (const char *const *)r.specs, r.specs ? g_strv_length(r.specs) : 0,
                                   r.shapes);
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

static gboolean open_trace(OxWindow *self, const char *trace_path) {
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
    show_error(self, "Open a graph first", "Shapes are given for the open graph.");
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
static void act_apply_shapes(GSimpleAction *a, GVariant *p, gpointer data) {
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
  if (ox_window_apply_shapes(sd->self, (const char *const *)specs->pdata, f)) gtk_window_destroy(GTK_WINDOW(sd->window));
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
  chooser_in_graph_folder(sd->self, GTK_FILE_CHOOSER(d));
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

static void act_shapes(GSimpleAction *a, GVariant *p, gpointer data) {
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
    show_error(self, "Open a graph first", "Rules run on the open graph; open a dump, then its rule file.");
    return FALSE;
  }
  char rerr[512];
  size_t len = 0;
  char *text = ox_read_file(self->rules_path, &len, 16u << 20, rerr, sizeof rerr);
  if (!text) {
    show_error(self, "Cannot read the rule file; the previous rules stay in force", rerr);
    return FALSE;
  }
  gssize bin = binary_offset(text, len);
  if (bin >= 0) {
    char *msg = g_strdup_printf("%s is not a rule file: it holds binary data (byte 0x%02x at offset %" G_GSSIZE_FORMAT
                                "). Rule files are UTF-8 text (docs/rules.md).",
                                self->rules_path, (guchar)text[bin], bin);
    show_error(self, "Not a rule file; the previous rules stay in force", msg);
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
    show_error(self, "The rule file has errors; the previous rules stay in force", msg->str);
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
  start_optimize(self);
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
static void chooser_in_graph_folder(OxWindow *self, GtkFileChooser *fc) {
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
      show_error(self, "Not a rule file", "That is a folder; choose a .rules file in it.");
    } else if (path) {
      ox_window_open_rules(self, path);
    } else if (f) {
      char *uri = g_file_get_uri(f);
      char *msg = g_strdup_printf("%s is not a local file; rule files are read from disk.", uri);
      show_error(self, "Cannot open the rule file", msg);
      g_free(msg);
      g_free(uri);
    }
    g_free(path);
    if (f) g_object_unref(f);
  }
  g_object_unref(d);
}

static void act_open_rules(GSimpleAction *a, GVariant *p, gpointer data) {
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
        open_trace(self, path);
      else
        ox_window_open(self, path, NULL);
    }
    g_free(path);
    g_object_unref(f);
  }
  g_object_unref(d);
}

static void open_dialog(OxWindow *self, gboolean trace) {
  GtkFileChooserNative *d = gtk_file_chooser_native_new(trace ? "Open Trace" : "Open Graph Dump", GTK_WINDOW(self),
                                                        GTK_FILE_CHOOSER_ACTION_OPEN, "_Open", "_Cancel");
  g_object_set_data(G_OBJECT(d), "trace", GINT_TO_POINTER(trace));
  chooser_in_graph_folder(self, GTK_FILE_CHOOSER(d));
  g_signal_connect(d, "response", G_CALLBACK(on_open_response), self);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}

static gboolean on_drop(GtkDropTarget *t, const GValue *value, double x, double y, OxWindow *self) {
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
      ok = open_trace(self, p1);
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
    show_error(self, "Export failed", err->message);
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

static void export_start(OxWindow *self, const char *format, const char *path) {
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
    if (path) export_start(self, format, path);
    g_free(path);
    g_object_unref(f);
  }
  g_object_unref(d);
}

static void export_dialog(OxWindow *self, const char *format) {
  GtkFileChooserNative *d = gtk_file_chooser_native_new("Export", GTK_WINDOW(self), GTK_FILE_CHOOSER_ACTION_SAVE,
                                                        "_Export", "_Cancel");
  g_object_set_data_full(G_OBJECT(d), "format", g_strdup(format), g_free);
  const char *path = ox_document_get_path(self->doc);
  char *base = path ? g_path_get_basename(path) : g_strdup("graph");
  char *dot = strrchr(base, '.');
  if (dot) *dot = 0;
  char *name = strcmp(format, "trace") == 0
                 ? g_strdup_printf("%s.%s", base, export_ext(format))
                 : g_strdup_printf("%s-step%u.%s", base, ox_document_get_position(self->doc), export_ext(format));
  chooser_in_graph_folder(self, GTK_FILE_CHOOSER(d));
  gtk_file_chooser_set_current_name(GTK_FILE_CHOOSER(d), name);
  g_free(name);
  g_free(base);
  g_signal_connect(d, "response", G_CALLBACK(on_export_response), self);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}

/* ------------------------------------------------------------------ actions */

#define SELF OxWindow *self = OX_WINDOW(data); (void)a; (void)p

static void act_open(GSimpleAction *a, GVariant *p, gpointer data) { SELF; open_dialog(self, FALSE); }
static void act_open_trace(GSimpleAction *a, GVariant *p, gpointer data) { SELF; open_dialog(self, TRUE); }
static void act_open_recent(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_window_open_recent(self, g_variant_get_string(p, NULL));
}
static void act_optimize(GSimpleAction *a, GVariant *p, gpointer data) { SELF; start_optimize(self); }
/* win.check-option('pass.key=value'): check a hint by a what-if re-run now (large graphs) */
static void act_check_option(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_document_get_whatif(self->doc, g_variant_get_string(p, NULL), TRUE, NULL);
  window_update_panels(self);
}

/* win.optimize-with('pass.key=value'): the optimization again with one more option (a hint's
 * "re-run with this option") */
static void act_optimize_with(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  GError *err = NULL;
  if (!ox_document_add_option(self->doc, g_variant_get_string(p, NULL), &err)) {
    show_error(self, "Cannot re-run with that option", err->message);
    g_error_free(err);
    return;
  }
  start_optimize(self);
}
static void act_graph(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  show_graph(self, g_variant_get_uint32(p));
}
static void act_graph_parent(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  const OxGraphEntry *e = ox_document_get_graph_entry(self->doc, ox_document_get_graph_entry_index(self->doc));
  if (e && e->depth) show_graph(self, e->parent);
}
static void act_cancel(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  if (self->optimize) g_cancellable_cancel(self->optimize);
}
static void act_export(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  export_dialog(self, g_variant_get_string(p, NULL));
}
static void act_export_trace(GSimpleAction *a, GVariant *p, gpointer data) { SELF; export_dialog(self, "trace"); }
static void act_export_to(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  const char *format, *path;
  g_variant_get(p, "(&s&s)", &format, &path);
  export_start(self, format, path);
}
static void act_step_next(GSimpleAction *a, GVariant *p, gpointer data) { SELF; ox_document_step_next(self->doc); }
static void act_step_prev(GSimpleAction *a, GVariant *p, gpointer data) { SELF; ox_document_step_prev(self->doc); }
static void act_step_first(GSimpleAction *a, GVariant *p, gpointer data) { SELF; ox_document_step_first(self->doc); }
static void act_step_last(GSimpleAction *a, GVariant *p, gpointer data) { SELF; ox_document_step_last(self->doc); }
static void act_goto_step(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_document_set_position(self->doc, g_variant_get_uint32(p));
}

static gboolean play_tick(gpointer data) {
  OxWindow *self = data;
  if (ox_document_step_next(self->doc)) return G_SOURCE_CONTINUE;
  self->play_source = 0;
  action_set_bool(self, "play", FALSE);
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

/* The width the panels open with (their minimum, the three panel buttons, may be larger). */
enum { PANEL_WIDTH = 380 };

static gboolean place_panels(gpointer data) {
  OxWindow *self = data;
  int w = gtk_widget_get_width(self->right_pane);
  if (w > 0) gtk_paned_set_position(GTK_PANED(self->right_pane), MAX(w - PANEL_WIDTH, 100));
  g_object_unref(self);
  return G_SOURCE_REMOVE;
}

static void on_right_pane_allocated(GtkPaned *paned, GParamSpec *ps, OxWindow *self) {
  (void)ps;
  if (self->panels_placed || gtk_widget_get_width(GTK_WIDGET(paned)) <= 1) return;
  self->panels_placed = TRUE;
  g_idle_add(place_panels, g_object_ref(self));
}

/* The play button shows what a click does: pause while playing. */
static void on_play_state(GObject *action, GParamSpec *ps, OxWindow *self) {
  (void)ps;
  GVariant *st = g_action_get_state(G_ACTION(action));
  gboolean on = st && g_variant_get_boolean(st);
  if (st) g_variant_unref(st);
  gtk_button_set_icon_name(GTK_BUTTON(self->play_button), on ? "media-playback-pause-symbolic" : "media-playback-start-symbolic");
  gtk_widget_set_tooltip_text(self->play_button, on ? "Pause (space)" : "Play (space)");
}

void ox_window_set_hint_auto_max(OxWindow *self, guint nodes) { self->hint_auto_max = nodes; }

int ox_window_get_panel_width(OxWindow *self) { return gtk_widget_get_width(self->panels); }
const char *ox_window_get_status_text(OxWindow *self) { return gtk_label_get_text(GTK_LABEL(self->status_label)); }

const char *ox_window_get_play_icon(OxWindow *self) { return gtk_button_get_icon_name(GTK_BUTTON(self->play_button)); }

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
static void act_close(GSimpleAction *a, GVariant *p, gpointer data) { SELF; gtk_window_close(GTK_WINDOW(self)); }

static void on_scene_mode(OxWindow *self) {
  GAction *a = win_action(self, "view-mode");
  if (a) g_simple_action_set_state(G_SIMPLE_ACTION(a), g_variant_new_string(ox_view_mode_name(ox_scene_get_mode(window_scene(self)))));
  update_status(self);
}

/* win.view-mode('auto'|'full'|'focus'|'overview') */
static void act_view_mode(GSimpleAction *a, GVariant *p, gpointer data) {
  OxWindow *self = OX_WINDOW(data);
  OxViewMode m;
  if (!ox_view_mode_from_name(g_variant_get_string(p, NULL), &m)) return;
  g_simple_action_set_state(a, p);
  ox_scene_set_mode(window_scene(self), m);
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
  ox_scene_set_engine(window_scene(self), e);
}

/* win.focus-radius(u): 0 = automatic */
static void act_focus_radius(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_scene_set_radius(window_scene(self), g_variant_get_uint32(p));
}
static void act_radius_step(OxWindow *self, int d) {
  OxScene *sc = window_scene(self);
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
  ox_scene_expand(window_scene(self), g_variant_get_uint32(p));
}
static void act_collapse_cluster(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  ox_scene_collapse(window_scene(self), g_variant_get_uint32(p));
}
static void act_collapse_selection(GSimpleAction *a, GVariant *p, gpointer data) {
  SELF;
  OxScene *sc = window_scene(self);
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
  {"open-rules", act_open_rules, NULL, NULL, NULL, {0}},
  {"open-recent", act_open_recent, "s", NULL, NULL, {0}},
  {"optimize", act_optimize, NULL, NULL, NULL, {0}},
  {"optimize-with", act_optimize_with, "s", NULL, NULL, {0}},
  {"check-option", act_check_option, "s", NULL, NULL, {0}},
  {"shapes", act_shapes, NULL, NULL, NULL, {0}},
  {"apply-shapes", act_apply_shapes, "(ass)", NULL, NULL, {0}},
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
  {"select-node", act_select_node, "s", NULL, NULL, {0}},
  {"fit", act_fit, NULL, NULL, NULL, {0}},
  {"zoom-in", act_zoom_in, NULL, NULL, NULL, {0}},
  {"zoom-out", act_zoom_out, NULL, NULL, NULL, {0}},
  {"zoom-reset", act_zoom_reset, NULL, NULL, NULL, {0}},
  {"zoom-selection", act_zoom_selection, NULL, NULL, NULL, {0}},
  {"center-step", act_center_step, NULL, NULL, NULL, {0}},
  {"search", act_search, NULL, NULL, NULL, {0}},
  {"search-next", act_search_next, NULL, NULL, NULL, {0}},
  {"search-prev", act_search_prev, NULL, NULL, NULL, {0}},
  {"panel", act_panel, "s", NULL, NULL, {0}},
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
  {"k", "win.panel", "checks"},
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
  (void)data;
  OxStepItem *it = gtk_list_item_get_item(li);
  GdkRGBA dot;
  gdk_rgba_parse(&dot, kind_color(it->kind));
  ox_step_row_set(OX_STEP_ROW(gtk_list_item_get_child(li)), it->header, it->header ? NULL : &dot, it->title,
                  it->subtitle);
  g_object_set_data(G_OBJECT(gtk_list_item_get_child(li)), "position", GUINT_TO_POINTER(it->header ? 0 : it->position));
  gtk_list_item_set_selectable(li, !it->header);
  gtk_list_item_set_activatable(li, !it->header);
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
  self->selection = gtk_single_selection_new(g_object_ref(ox_document_get_timeline(self->doc)));
  gtk_single_selection_set_autoselect(self->selection, FALSE);
  gtk_single_selection_set_can_unselect(self->selection, TRUE);
  g_signal_connect(self->selection, "notify::selected", G_CALLBACK(on_list_selected), self);
  GtkListItemFactory *f = gtk_signal_list_item_factory_new();
  g_signal_connect(f, "setup", G_CALLBACK(row_setup), NULL);
  g_signal_connect(f, "bind", G_CALLBACK(row_bind), NULL);
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
  gtk_widget_set_size_request(box, 300, -1);
  self->stack = gtk_stack_new();
  /* sized by the visible panel only: a homogeneous stack measures the hidden panels' wrapped
   * labels at every step too */
  gtk_stack_set_hhomogeneous(GTK_STACK(self->stack), FALSE);
  gtk_stack_set_vhomogeneous(GTK_STACK(self->stack), FALSE);
  const char *titles[3] = {"Node", "Why not?", "Checks"};
  for (int i = 0; i < 3; i++) {
    GtkWidget *l = gtk_label_new(NULL);
    gtk_label_set_xalign(GTK_LABEL(l), 0);
    gtk_label_set_yalign(GTK_LABEL(l), 0);
    gtk_label_set_wrap(GTK_LABEL(l), TRUE);
    gtk_label_set_wrap_mode(GTK_LABEL(l), PANGO_WRAP_WORD_CHAR);
    gtk_label_set_selectable(GTK_LABEL(l), FALSE);
    gtk_widget_set_margin_start(l, 8);
    gtk_widget_set_margin_end(l, 8);
    gtk_widget_set_margin_top(l, 6);
    g_signal_connect(l, "activate-link", G_CALLBACK(on_activate_link), self);
    self->panel_label[i] = l;
    GtkWidget *sw = gtk_scrolled_window_new();
    gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
    gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), l);
    gtk_stack_add_titled(GTK_STACK(self->stack), sw, panel_names[i], titles[i]);
  }
  gtk_widget_set_vexpand(self->stack, TRUE);
  GtkWidget *sw = gtk_stack_switcher_new();
  gtk_stack_switcher_set_stack(GTK_STACK_SWITCHER(sw), GTK_STACK(self->stack));
  gtk_widget_set_halign(sw, GTK_ALIGN_CENTER);
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
  gtk_window_set_title(GTK_WINDOW(self), "Optimus Debugger");
  gtk_window_set_default_size(GTK_WINDOW(self), 1280, 800);
  gtk_window_set_icon_name(GTK_WINDOW(self), "io.github.optimus.Debugger");
  g_action_map_add_action_entries(G_ACTION_MAP(self), win_entries, G_N_ELEMENTS(win_entries), self);

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
  g_signal_connect(win_action(self, "play"), "notify::state", G_CALLBACK(on_play_state), self);
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
  g_object_set(self->search_entry, "placeholder-text", "name, target, op:matmul, /regex/", NULL);
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
  gtk_paned_set_start_child(GTK_PANED(right), overlay);
  self->panels = build_panels(self);
  gtk_paned_set_end_child(GTK_PANED(right), self->panels);
  gtk_paned_set_resize_end_child(GTK_PANED(right), FALSE);
  gtk_paned_set_shrink_end_child(GTK_PANED(right), FALSE);
  /* the panels' width is set once the paned knows its own (a position given before the first
   * allocation counts from the left, so a larger window gave the panels all the extra width);
   * after that the canvas takes every change of the window's width */
  g_signal_connect(right, "notify::max-position", G_CALLBACK(on_right_pane_allocated), self);
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
  g_signal_connect(drop, "drop", G_CALLBACK(on_drop), self);
  gtk_widget_add_controller(GTK_WIDGET(self), GTK_EVENT_CONTROLLER(drop));

  g_signal_connect_swapped(self->doc, "frame-changed", G_CALLBACK(on_doc_frame_changed), self);
  g_signal_connect_swapped(self->doc, "history-changed", G_CALLBACK(on_history_changed), self);
  g_signal_connect(self->doc, "whatif-done", G_CALLBACK(on_whatif_done), self);
  g_signal_connect(self->doc, "notify", G_CALLBACK(on_doc_notify), self);
  g_signal_connect_swapped(self->view, "notify::laid-out", G_CALLBACK(on_view_notify), self);
  g_signal_connect_swapped(window_scene(self), "notify::mode", G_CALLBACK(on_scene_mode), self);
  g_signal_connect_swapped(window_scene(self), "notify::shown-mode", G_CALLBACK(on_scene_mode), self);
  install_help_overlay(self);
  recent_rebuild(self);
  window_update_panels(self);
  window_update_actions(self);
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
  for (int i = 0; i < 3; i++) g_free(self->panel_markup[i]);
  G_OBJECT_CLASS(ox_window_parent_class)->finalize(o);
}

static void ox_window_class_init(OxWindowClass *k) {
  G_OBJECT_CLASS(k)->dispose = ox_window_dispose;
  G_OBJECT_CLASS(k)->finalize = ox_window_finalize;
}

OxWindow *ox_window_new(GtkApplication *app) { return g_object_new(OX_TYPE_WINDOW, "application", app, NULL); }
OxDocument *ox_window_get_document(OxWindow *self) { return self->doc; }
OxGraphView *ox_window_get_view(OxWindow *self) { return OX_GRAPH_VIEW(self->view); }
GtkWidget *ox_window_get_minimap(OxWindow *self) { return self->minimap; }
const char *ox_window_get_last_error(OxWindow *self) { return self->last_error; }
guint ox_window_get_n_exports(OxWindow *self) { return self->n_exports; }
