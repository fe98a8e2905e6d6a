/* ox-window.h - the debugger's main window: header bar with step controls, the step timeline
 * (left), the graph canvas (centre), and the node inspector / "why not?" / checks panels
 * (right), search bar, progress bar for a background optimization, status line.
 *
 * Every user action is a GAction on the window (win.*), listed in docs/debugger.md with its
 * accelerator; enablement is computed in one place (window_update_actions).
 */
#ifndef OX_WINDOW_H
#define OX_WINDOW_H

#include <gtk/gtk.h>

#include "ox-document.h"
#include "ox-graph-view.h"

G_BEGIN_DECLS

#define OX_TYPE_WINDOW (ox_window_get_type())
G_DECLARE_FINAL_TYPE(OxWindow, ox_window, OX, WINDOW, GtkApplicationWindow)

OxWindow *ox_window_new(GtkApplication *app);
OxDocument *ox_window_get_document(OxWindow *self);
OxGraphView *ox_window_get_view(OxWindow *self);
GtkWidget *ox_window_get_minimap(OxWindow *self); /* the OxMinimap over the canvas */

/* Opens a dump (and optionally a trace). Without a trace the default optimization starts in
 * the background. On failure shows a dialog with the engine's located error and returns FALSE;
 * the window keeps what it had. */
gboolean ox_window_open(OxWindow *self, const char *graph_path, const char *trace_path);
/* Opens a file as it was last open in this app (Open Recent, win.open-recent): with its trace,
 * graph index and shapes, remembered in the recent-files store. Without a trace (or when it is
 * gone) it is optimized again. Shapes are also remembered per file by ox_window_open. */
gboolean ox_window_open_recent(OxWindow *self, const char *path);
GMenuModel *ox_window_get_recent_menu(OxWindow *self); /* Open Recent's items */
/* Opens the shown file again with input/parameter shapes (as --input-shape / --shapes; none:
 * without shapes), optimizes it, and remembers them for the file (win.apply-shapes((ass))). */
gboolean ox_window_apply_shapes(OxWindow *self, const char *const *specs, const char *shapes_file);
/* The Shapes dialog (win.shapes), prefilled with the shapes the file was opened with. */
GtkWidget *ox_window_shapes_dialog_new(OxWindow *self);
/* Opens a rule file (docs/rules.md): runs the default pipeline plus its rules on the open graph,
 * and again whenever the file is saved. A file with errors keeps the previous rules and shows
 * the located errors. */
gboolean ox_window_open_rules(OxWindow *self, const char *path);
gboolean ox_window_reload_rules(OxWindow *self); /* what the file monitor does after a save */
/* The Open Rules dialog (win.open-rules) before it is shown: a *.rules filter (and All files),
 * starting in the open rule file's folder, else the last one opened, else the graph's. */
GtkNativeDialog *ox_window_rules_dialog_new(OxWindow *self);
char *ox_window_get_rules_folder(OxWindow *self); /* the folder it starts in (caller frees), or NULL */
guint ox_window_get_rule_loads(OxWindow *self);  /* rule sets loaded successfully so far */
const char *ox_window_get_last_error(OxWindow *self); /* last error shown in a dialog, or NULL */
guint ox_window_get_n_exports(OxWindow *self);        /* exports finished (ok or not) */
/* Panel texts (Pango markup), for tests and screenshots. */
const char *ox_window_get_panel_markup(OxWindow *self, const char *panel); /* "node", "why", "checks" */
/* The "What if?" tab ("whatif" for ox_window_show_panel): its status and side-by-side rows as
 * text ("left | right" per row); the options entry. The tab runs win.whatif-run and refuses the
 * current step with win.whatif-refuse. */
const char *ox_window_get_whatif_text(OxWindow *self);
/* Compare with another trace of the shown graph: a second canvas beside this one whose run steps
 * with this one (aligned records) and selects what this one selects; the records that differ
 * listed under it and marked in the timeline. The graph is read again; the trace loads in the
 * background. FALSE with error when there is no graph or it cannot be read again. */
gboolean ox_window_compare_open(OxWindow *self, const char *trace_path, GError **error);
void ox_window_compare_close(OxWindow *self);
/* The difference between the shown (top-level) graph and graph_b's dump as this graph's run: one
 * step per region (engine/run/ox_difftrace.h), the trace written to the user's cache folder and
 * opened (in the background, as any trace). FALSE with error when B cannot be read or the shown
 * graph is a subgraph. */
gboolean ox_window_diff_open(OxWindow *self, const char *graph_b, GError **error);
gboolean ox_window_compare_active(OxWindow *self);
OxDocument *ox_window_get_compare_document(OxWindow *self); /* the other run, or NULL */
const char *ox_window_get_compare_text(OxWindow *self);   /* its header and list, markup */
void ox_window_set_whatif_options(OxWindow *self, const char *options);
void ox_window_show_panel(OxWindow *self, const char *panel);
/* The load-warning bar: its text when shown ("3 warnings while loading trunc.txt"), else NULL;
 * ox_window_activate_warning does what a click on row i of its list does. */
const char *ox_window_get_warning_bar_text(OxWindow *self);
const char *ox_window_get_play_icon(OxWindow *self); /* the play button's icon name */
int ox_window_get_panel_width(OxWindow *self);       /* the right panels' allocated width */
/* Graphs of at most this many nodes (default 50,000) get their Why not? hints checked by re-runs
 * at once; larger ones when asked (win.check-option). */
void ox_window_set_hint_auto_max(OxWindow *self, guint nodes);
const char *ox_window_get_status_text(OxWindow *self); /* the status line */
gboolean ox_window_activate_warning(OxWindow *self, guint i);

G_END_DECLS
#endif
