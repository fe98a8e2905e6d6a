/* ox-window-private.h - what the files of OxWindow share (ui/ only): the instance struct and
 * the functions one file defines and another calls.
 *
 *   ox-window.c          the type, helpers, the dump's graphs, load warnings, labels and state,
 *                        action enablement, keys, construction and the public getters
 *   ox-window-panels.c   the right-hand panels: node inspector, "why not?", checks
 *   ox-window-files.c    open (files, recent, drag and drop, traces), --shapes, rule files, export
 *   ox-window-actions.c  the win.* actions and their table
 *   ox-window-whatif.c   the "What if?" tab and the timeline's what-if marks
 *   ox-window-compare.c  a second run of the graph side by side (compare with trace)
 */
#ifndef OX_WINDOW_PRIVATE_H
#define OX_WINDOW_PRIVATE_H

#include "ox-window.h"
#include "run/ox_compare.h"
#include "run/ox_coverage.h"

#define OX_WINDOW_N_PANELS 4 /* the markup panels: node, why, checks, passes */

G_BEGIN_DECLS

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
  GtkWidget *panel_label[OX_WINDOW_N_PANELS]; /* node, why, checks, passes */
  GtkWidget *cov_bar, *cov_label;               /* the timeline's coverage filter, when one is set */
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
  char *panel_markup[OX_WINDOW_N_PANELS];
  OxCoverage *coverage;   /* of the shown trace, made when the Passes panel first needs it */
  OxCoverage *cmp_coverage;        /* of the run beside it (Compare with Trace), likewise */
  const OxTrace *cmp_cov_trace;    /* the trace cmp_coverage was made of (compared only) */

  /* what the panels were last built for */
  OxHistory *frame_history; /* borrowed, compared only */
  guint frame_position;
  gboolean frame_before;
  char *frame_selected;
  /* the status line's node count, counted once per shown graph state (a count is a pass over
   * every node: at 100k nodes, redone on each notify, it was a third of the debugger's time) */
  struct {
    const OxGraph *graph;
    OxHistory *history;
    guint position, n_live, nodes;
    gboolean before;
  } count_key;

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

  /* the "What if?" tab (ox-window-whatif.c) */
  GtkWidget *whatif_entry, *whatif_refused, *whatif_status, *whatif_grid;
  char *whatif_key;                 /* asked for (ox_document_whatif_key), or NULL */
  GArray *whatif_skip;              /* guint seqs of refused applied steps, ascending */
  const OxHistory *whatif_history;  /* the history they are about (compared only) */
  const OxWhatifResult *whatif_rendered; /* what the grid shows (compared only) */
  guint whatif_rendered_state;      /* 0 nothing, 1 running, 2 done, 3 failed */
  GHashTable *whatif_marks;         /* position -> OX_WHATIF_MARK_* */
  GHashTable *whatif_rows;          /* bound timeline rows (set) */
  GString *whatif_text;             /* the tab's text, for tests */

  /* compare with another trace (ox-window-compare.c) */
  GtkWidget *canvas_split;          /* this run's canvas | the other run's pane */
  GtkWidget *cmp_pane, *cmp_view, *cmp_header, *cmp_list;
  OxDocument *cmp_doc;              /* the other run (owned), or NULL */
  char *cmp_trace_path, *cmp_error, *cmp_last_sel;
  GCancellable *cmp_cancel;
  OxCompareResult cmp;
  gboolean cmp_ready;
  const OxHistory *cmp_hist_a, *cmp_hist_b; /* what cmp was computed for (compared only) */
  guint cmp_last_pa;
  GHashTable *cmp_marks;            /* position of A -> OX_WHATIF_MARK_ONLY / _DIFFERS */
  GString *cmp_text;
  char *pending_trace, *pending_note; /* a diff's trace to open once the document is idle */
};
/* The panels' width when the window opens, and the least they can be dragged to. */
enum { OX_WINDOW_PANEL_WIDTH = 380, OX_WINDOW_PANEL_MIN_WIDTH = 300 };
/* Graphs up to this size get their hints checked as soon as the panel shows them; larger ones
 * (a re-run takes seconds) when the user asks ("check by a re-run"). */
enum { HINT_AUTO_MAX_NODES = 50000 };

/* ox-window.c */
extern const char *const ox_window_panel_names[OX_WINDOW_N_PANELS]; /* "node", "why", "checks", "passes" */
GAction *ox_window_action(OxWindow *self, const char *name);
OxScene *ox_window_scene(OxWindow *self);
void ox_window_action_set_bool(OxWindow *self, const char *name, gboolean on);
void ox_window_show_error(OxWindow *self, const char *title, const char *message);
void ox_window_append_node_link(GString *out, const char *name);
void ox_window_append_step_link(GString *out, guint position);
void ox_window_append_linked(GString *out, const char *text, const OxGraph *g);
void ox_window_append_node_links(GString *out, const char *const *names, guint n, guint max);
gboolean ox_window_show_graph(OxWindow *self, guint i);
void ox_window_update_status(OxWindow *self);
void ox_window_update_actions(OxWindow *self);

/* ox-window-panels.c */
const char *ox_window_kind_color(guint8 kind);
void ox_window_update_panels(OxWindow *self);
/* The Passes panel's drill-down: "" clears the coverage filter; "R", "R:J", "R:J:K" filter the
 * timeline to coverage row R (its pass and rule), its J-th reason, that reason's K-th value, and
 * go to the first step shown. FALSE for an index out of range. */
gboolean ox_window_filter_coverage(OxWindow *self, const char *spec);
void ox_window_coverage_forget(OxWindow *self);
/* Rebuilds the Passes panel alone (the other run of Compare with Trace came in or went). */
void ox_window_update_passes_panel(OxWindow *self);
gboolean ox_window_on_activate_link(GtkLabel *label, const char *uri, OxWindow *self);

/* ox-window-files.c */
void ox_window_recent_rebuild(OxWindow *self);
/* The shown graph opened again (its shapes and graph index) with this trace. */
gboolean ox_window_open_trace_file(OxWindow *self, const char *trace_path);
void ox_window_start_optimize(OxWindow *self);
void ox_window_act_apply_shapes(GSimpleAction *a, GVariant *p, gpointer data);
void ox_window_act_shapes(GSimpleAction *a, GVariant *p, gpointer data);
void ox_window_chooser_in_graph_folder(OxWindow *self, GtkFileChooser *fc);
void ox_window_act_open_rules(GSimpleAction *a, GVariant *p, gpointer data);
void ox_window_open_dialog(OxWindow *self, gboolean trace);
gboolean ox_window_on_drop(GtkDropTarget *t, const GValue *value, double x, double y, OxWindow *self);
void ox_window_export_start(OxWindow *self, const char *format, const char *path);
void ox_window_export_dialog(OxWindow *self, const char *format);

/* ox-window-whatif.c */
enum {
  OX_WHATIF_MARK_NONE = 0,
  OX_WHATIF_MARK_LOST,
  OX_WHATIF_MARK_GAINED,
  OX_WHATIF_MARK_REFUSED,
  OX_WHATIF_MARK_ONLY,   /* compare: a record only this run has */
  OX_WHATIF_MARK_DIFFERS /* compare: a record the other run ends otherwise */
};
void ox_window_whatif_remark(OxWindow *self); /* the bound rows' marks again */
GtkWidget *ox_window_whatif_build(OxWindow *self);
void ox_window_whatif_dispose(OxWindow *self);
void ox_window_whatif_refresh(OxWindow *self);
gboolean ox_window_whatif_run(OxWindow *self);
gboolean ox_window_whatif_toggle_refused(OxWindow *self, guint position);
guint ox_window_whatif_mark(OxWindow *self, guint position);
void ox_window_whatif_row_bound(OxWindow *self, GtkWidget *row, guint position);
void ox_window_whatif_row_unbound(OxWindow *self, GtkWidget *row);

/* ox-window-compare.c */
void ox_window_compare_init(OxWindow *self);
void ox_window_compare_dispose(OxWindow *self);
void ox_window_compare_finalize(OxWindow *self);
void ox_window_compare_refresh(OxWindow *self);
void ox_window_compare_dialog(OxWindow *self);
void ox_window_diff_dialog(OxWindow *self);
void ox_window_open_pending_trace(OxWindow *self); /* the document became idle */
gboolean ox_window_open_pending_trace_now(OxWindow *self);
gboolean ox_window_compare_goto_b(OxWindow *self, guint position);
guint ox_window_compare_mark(OxWindow *self, guint position);

/* ox-window-actions.c */
void ox_window_on_right_pane_allocated(GtkPaned *paned, GParamSpec *ps, OxWindow *self);
void ox_window_on_play_state(GObject *action, GParamSpec *ps, OxWindow *self);
void ox_window_on_scene_mode(OxWindow *self);
void ox_window_actions_init(OxWindow *self);

G_END_DECLS

#endif
