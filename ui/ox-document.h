/* ox-document.h - the debugger's document model: one loaded graph, its optimization trace, the
 * current step, selection, search and timeline filters. A plain GObject with no widgets, so
 * tests drive it without a display.
 *
 * Positions: 0 is the input graph; position p (1..n_steps) shows trace record p-1. The graph
 * shown at p is the graph after every graph step up to that record ("after"), or, with
 * show-before, the graph before the record. Every state change emits notify:: for its property
 * and then "frame-changed" once, which views use to redraw.
 */
#ifndef OX_DOCUMENT_H
#define OX_DOCUMENT_H

#include <gio/gio.h>

#include "ox-history.h"
#include "load/ox_load.h"
#include "passes/ox_pass.h"
#include "run/ox_whatif.h"

G_BEGIN_DECLS

/* ------------------------------------------------------------------ op families */

typedef enum OxFamily {
  OX_FAMILY_UNKNOWN = 0,
  OX_FAMILY_MATMUL,     /* linear, mm, addmm, bmm, matmul, conv, embedding */
  OX_FAMILY_NORM,       /* layer_norm, batch_norm */
  OX_FAMILY_POINTWISE,  /* activations and elementwise arithmetic */
  OX_FAMILY_PLUMBING,   /* split, cat, stack, getitem, select */
  OX_FAMILY_VIEW,       /* view, reshape, permute ... */
  OX_FAMILY_REDUCTION,  /* sum, mean, softmax, pooling */
  OX_FAMILY_INPUT,      /* placeholder, get_attr */
  OX_FAMILY_OUTPUT,
  OX_FAMILY_COUNT
} OxFamily;

OxFamily ox_node_family(const OxGraph *g, const OxNode *n);
const char *ox_family_name(OxFamily f); /* "matmul", "norm", ... as typed in search ("op:norm") */
gboolean ox_family_from_name(const char *s, OxFamily *out);
/* Fill colour of a family as 0xRRGGBB. */
guint32 ox_family_color(OxFamily f);

/* The step palette the canvas draws with (and exports keep): borders of the step's nodes and
 * the fills of removed and added ones. */
#define OX_COLOR_REMOVED 0xe01b24
#define OX_COLOR_ADDED 0x26a269
#define OX_COLOR_MATCH 0xff7800   /* anchor (with a halo) and matched nodes */
#define OX_COLOR_DIMMED 0xb0b0b0
#define OX_FILL_REMOVED 0xf6b9b9
#define OX_FILL_ADDED 0xb5e8b0

/* ------------------------------------------------------------------ frame states */

typedef enum OxNodeState {
  OX_NS_HIDDEN = 0,  /* not alive in the shown graph */
  OX_NS_NORMAL,      /* no step shown */
  OX_NS_DIMMED,      /* untouched by the current step */
  OX_NS_MATCHED,     /* matched / candidate node of the step */
  OX_NS_ANCHOR,      /* the step's anchor */
  OX_NS_REMOVED,     /* removed by the step (red) */
  OX_NS_ADDED        /* added by the step (green) */
} OxNodeState;

typedef struct OxFrameEdge {
  guint32 from, to;  /* uids */
  gboolean ghost;    /* an edge of a removed node, drawn dashed */
} OxFrameEdge;

/* Timeline filter bits (filter-kinds). */
typedef enum OxStepFilter {
  OX_FILTER_APPLIED = 1 << 0,
  OX_FILTER_REJECTED = 1 << 1,
  OX_FILTER_CHECK_FAILED = 1 << 2,
  OX_FILTER_ALL = 7
} OxStepFilter;

/* ------------------------------------------------------------------ timeline rows */

#define OX_TYPE_STEP_ITEM (ox_step_item_get_type())
G_DECLARE_FINAL_TYPE(OxStepItem, ox_step_item, OX, STEP_ITEM, GObject)

struct _OxStepItem {
  GObject parent_instance;
  gboolean header;   /* a pass header row ("batch_linear  3 applied · 5 rejected") */
  guint position;    /* step rows: the document position (seq + 1) */
  guint8 kind;       /* step rows: OxStepKind */
  char *title, *subtitle;
};

/* ------------------------------------------------------------------ the document */

#define OX_TYPE_DOCUMENT (ox_document_get_type())
G_DECLARE_FINAL_TYPE(OxDocument, ox_document, OX, DOCUMENT, GObject)

OxDocument *ox_document_new(void);

/* Loading. load_file reads a dump (any format the engine loads) and, if trace_path is given, a
 * trace JSON recorded on it. Errors carry the engine's located message. On error the document
 * is unchanged. */
gboolean ox_document_load_file(OxDocument *self, const char *path, const char *trace_path, GError **error);
/* --input-shape specs and a --shapes file (either may be empty/NULL) for the next
 * ox_document_load_file only: applied to its shown graph, parameters then inferred from their
 * uses (ox_shape_infer_params); a bad spec or file fails that load. */
void ox_document_set_pending_shapes(OxDocument *self, const char *const *specs, guint n_specs, const char *shapes_file);
/* Whether shapes were set for the next load (even none: an empty set means "without shapes"). */
gboolean ox_document_has_pending_shapes(OxDocument *self);
/* ---- the graphs of a dump: every top-level graph and, nested under it, every subgraph (an
 * executorch "lowered graph" of a lowered_module, a TRT submodule graph), in file order. */
typedef struct OxGraphEntry {
  guint top;            /* index of the top-level graph */
  guint depth;          /* 0: a top-level graph; k: a subgraph k levels down */
  guint parent;         /* entry index of the graph it is nested in (itself for top-level) */
  guint sub;            /* index among its parent's subgraphs */
  guint n_nodes;
  char *name;           /* "graph", "lowered graph 0" */
  char *owner;          /* the node owning a subgraph ("lowered_module_0"), or NULL */
  char *label;          /* "graph 2: forward · 463 nodes", "lowered graph 0 of lowered_module_0 · 463 nodes" */
} OxGraphEntry;

guint ox_document_get_n_graph_entries(OxDocument *self);
const OxGraphEntry *ox_document_get_graph_entry(OxDocument *self, guint i);
guint ox_document_get_graph_entry_index(OxDocument *self); /* the one shown */
/* The subgraph entry owned by node name (a lowered_module / call_module of the shown graph),
 * or G_MAXUINT. */
guint ox_document_find_subgraph_entry(OxDocument *self, const char *owner);
/* Shows entry i: a graph seen before comes back with its history (steps, trace); another
 * starts unoptimized (the caller optimizes it, as after opening a file without a trace). FALSE
 * with error if i is out of range. */
gboolean ox_document_show_graph_entry(OxDocument *self, guint i, GError **error);
/* The top-level graph (0-based) the next ox_document_load_file shows (--graph N), then forgotten;
 * out of range fails that load. */
void ox_document_set_pending_graph(OxDocument *self, guint index);

/* ---- what the loader warned about (a damaged line skipped, a name loaded as an external
 * input), kept from the last ox_document_load_file: at most 2000, the rest counted. */
typedef struct OxLoadWarning {
  guint line, col;      /* 1-based; 0 = unknown */
  char *text;           /* "FILE:LINE:COL: warning: message" */
  char *snippet;        /* the offending text, or NULL */
} OxLoadWarning;

guint ox_document_get_n_load_warnings(OxDocument *self);   /* all of them, kept or not */
guint ox_document_get_load_serial(OxDocument *self);        /* bumped by every successful load */
guint ox_document_get_n_kept_load_warnings(OxDocument *self);
const OxLoadWarning *ox_document_get_load_warning(OxDocument *self, guint i);
/* The node of the shown graph defined at or after source line `line` (the first; else the last
 * one before it), or NULL. */
const char *ox_document_node_at_line(OxDocument *self, guint line);

/* "shapes: 60 parameters inferred from their uses, 16 without a shape" after a load that had
 * pending shapes; NULL otherwise. */
const char *ox_document_get_shapes_note(OxDocument *self);
/* What the shown file was loaded with (to open it the same way again): its --input-shape specs
 * (NULL-terminated, or NULL) and --shapes file (or NULL), the top-level graph shown (0-based),
 * and the trace file its steps came from (NULL when optimized here). */
const char *const *ox_document_get_loaded_specs(OxDocument *self);
const char *ox_document_get_loaded_shapes_file(OxDocument *self);
guint ox_document_get_top_index(OxDocument *self);
const char *ox_document_get_trace_path(OxDocument *self);
/* Takes ownership of doc and trace (either may be replaced later); shows graph graph_index. */
gboolean ox_document_set_doc(OxDocument *self, OxDoc *doc, guint graph_index, OxTrace *trace, const char *path,
                             GError **error);
/* Loads a trace for the loaded graph on a worker thread (reading, parsing, checking the input
 * hash and building the history all happen there) and installs it on the main thread; busy
 * meanwhile. The graph stays shown and usable while the trace loads. */
void ox_document_load_trace_async(OxDocument *self, const char *trace_path, GCancellable *cancellable,
                                  GAsyncReadyCallback cb, gpointer user_data);
gboolean ox_document_load_trace_finish(OxDocument *self, GAsyncResult *res, GError **error);
/* Starts reading and parsing trace_path on a thread of its own now, before the graph it belongs
 * to is loaded; the next ox_document_load_trace_async of the same path takes the parsed trace
 * (or its error) instead of reading the file again. Reading the trace and loading the graph
 * then overlap. A prefetch nobody takes is dropped by the next one and by the document. */
void ox_document_prefetch_trace(OxDocument *self, const char *trace_path);
/* Whether a prefetched trace (or its error) is held and its reading has finished (for tests). */
gboolean ox_document_trace_prefetched(OxDocument *self);
gboolean ox_document_has_graph(OxDocument *self);
const char *ox_document_get_path(OxDocument *self);
OxDoc *ox_document_get_doc(OxDocument *self);

/* Optimization (when no trace was given). The pipeline defaults to ox_pipeline_default with all
 * checks; set_pipeline takes ownership (NULL = default again). Runs on a GTask worker thread on
 * a clone of the input; progress/status notify on the main thread; cancellable between passes. */
void ox_document_set_pipeline(OxDocument *self, OxPipeline *pipeline, const OxCheckConfig *checks);
void ox_document_optimize_async(OxDocument *self, GCancellable *cancellable, GAsyncReadyCallback cb,
                                gpointer user_data);
gboolean ox_document_optimize_finish(OxDocument *self, GAsyncResult *res, GError **error);
gboolean ox_document_optimize(OxDocument *self, GCancellable *cancellable, GError **error); /* synchronous */
gboolean ox_document_get_busy(OxDocument *self);
double ox_document_get_progress(OxDocument *self);
const char *ox_document_get_status(OxDocument *self);

/* What-if re-runs (engine/run/ox_whatif.h) of the shown graph against its trace. The pipeline and
 * checks they re-run: the document's pipeline when it ran the optimization (set_pipeline), else
 * the configuration the trace recorded (a trace written by `optimus optimize`), else the
 * default; FALSE with *why (caller frees) when the trace's configuration cannot be rebuilt (it
 * names passes of a rule file that is not open). out is freed with ox_pipeline_free. */
gboolean ox_document_whatif_pipeline(OxDocument *self, OxPipeline *out, OxCheckConfig *checks, char **why);
/* A what-if run now, on the calling thread (tests, small graphs). FALSE with error. */
gboolean ox_document_whatif(OxDocument *self, const OxWhatifSpec *spec, OxWhatifResult *out, GError **error);
/* The what-if of one option ("pass.key=value", as --option), or of a key made by
 * ox_document_whatif_key, on the shown history, run once in
 * the background (one at a time, in the order asked) and kept until the history changes.
 * Returns the result when done (borrowed; its graph is dropped, its trace and counts kept);
 * NULL while it is queued or running (with start, asks for it) or when it failed (*error then
 * says why; borrowed). "whatif-done" (option) is emitted on the main thread when one finishes. */
const OxWhatifResult *ox_document_get_whatif(OxDocument *self, const char *option, gboolean start,
                                             const char **error);
guint ox_document_get_whatif_runs(OxDocument *self); /* what-ifs run so far (for tests) */
/* The key of a what-if with several options ("pass.key=value") and refused steps (0-based
 * seqs of applied steps of the shown trace) for ox_document_get_whatif: one line per option in
 * the order given, then "skip:SEQ" lines, ascending. Caller frees. */
char *ox_document_whatif_key(const char *const *options, guint n_options, const guint *skip, guint n_skip);
gint ox_document_compare_guint(gconstpointer a, gconstpointer b);
/* Forgets the what-ifs asked for but not started (the panel asking for them shows another node
 * now); the running one finishes. */
void ox_document_whatif_drop_queued(OxDocument *self);
/* Runs the optimization again with one more option in the what-if pipeline (the "re-run with
 * this option" of a hint): sets the pipeline; the caller starts ox_document_optimize_async. */
gboolean ox_document_add_option(OxDocument *self, const char *option, GError **error);

/* History and graphs. */
OxHistory *ox_document_get_history(OxDocument *self); /* borrowed; NULL before a load */
const OxTrace *ox_document_get_trace(OxDocument *self);
guint ox_document_get_n_steps(OxDocument *self);
OxGraph *ox_document_get_graph(OxDocument *self);        /* the shown graph (borrowed) */
OxGraph *ox_document_get_graph_after(OxDocument *self);
OxGraph *ox_document_get_graph_before(OxDocument *self);
guint ox_document_get_shown_gstep(OxDocument *self);     /* graph step of the shown graph */

/* Stepping. Next/prev/first/last move among the steps the timeline filters let through. */
guint ox_document_get_position(OxDocument *self);
void ox_document_set_position(OxDocument *self, guint position);
gboolean ox_document_step_next(OxDocument *self);
gboolean ox_document_step_prev(OxDocument *self);
gboolean ox_document_step_first(OxDocument *self);
gboolean ox_document_step_last(OxDocument *self);
const OxStep *ox_document_get_step(OxDocument *self); /* NULL at position 0 */
gboolean ox_document_get_show_before(OxDocument *self);
void ox_document_set_show_before(OxDocument *self, gboolean before);

/* Frame: per-uid state and the edges of the shown graph. */
const guint8 *ox_document_get_node_states(OxDocument *self, guint *n_uids);
const OxFrameEdge *ox_document_get_edges(OxDocument *self, guint *n_edges);
/* The frame's in-edges of one uid (what get_edges lists with .to == uid), without computing
 * every edge: views of large graphs ask only for the nodes they show. Returns how many there
 * are; at most cap are stored (a caller with less room asks again with more). */
guint ox_document_in_edges(OxDocument *self, guint32 uid, OxFrameEdge *out, guint cap);
/* All of them: into stack (room for cap) when they fit, else into a new array (g_free it when it
 * is not stack); *n their count. A cat of hundreds of inputs has every edge. */
OxFrameEdge *ox_document_in_edges_all(OxDocument *self, guint32 uid, OxFrameEdge *stack, guint cap, guint *n);
guint32 ox_document_get_anchor_uid(OxDocument *self);
guint32 ox_document_uid_of(OxDocument *self, const char *name); /* in the shown graph, 0 if none */

/* Selection: a node name of the shown graph (NULL = none). Returns FALSE for unknown names. */
const char *ox_document_get_selected(OxDocument *self);
gboolean ox_document_select(OxDocument *self, const char *name);

/* Search: "name", "target", "op:FAMILY", "/regex/" or "re:regex"; plain text matches name or
 * target (case-insensitive). Hits are nodes of the shown graph in graph order. */
void ox_document_set_search_text(OxDocument *self, const char *text);
const char *ox_document_get_search_text(OxDocument *self);
const char *ox_document_get_search_error(OxDocument *self); /* bad regex, unknown family */
guint ox_document_get_n_hits(OxDocument *self);
const char *ox_document_get_hit(OxDocument *self, guint i);
gboolean ox_document_is_hit(OxDocument *self, guint32 uid);
gboolean ox_document_search_next(OxDocument *self); /* selects the next hit (wraps) */
gboolean ox_document_search_prev(OxDocument *self);

/* Timeline: rows (OxStepItem) grouped by pass, filtered. */
GListModel *ox_document_get_timeline(OxDocument *self);
guint ox_document_get_filter_kinds(OxDocument *self);
void ox_document_set_filter_kinds(OxDocument *self, guint kinds);
const char *ox_document_get_filter_pass(OxDocument *self);
void ox_document_set_filter_pass(OxDocument *self, const char *pass); /* NULL or "" = all passes */
/* The coverage filter (the Passes panel's drill-down): the steps of one pass and rule (phase,
 * pass; rule NULL = the steps that have none), optionally only those refused for reason code
 * `reason` (-1: every kind; a reason turns the rejected and check-failed kinds on), optionally
 * only those whose deciding value (ox_coverage_detail_of) is `detail`. It sets the pass filter
 * too; pass NULL clears it (and the pass filter), and so does choosing another pass. */
void ox_document_set_filter_coverage(OxDocument *self, const char *phase, const char *pass, const char *rule,
                                     int reason, const char *detail);
/* A one-line description of the coverage filter ("simplify_split_cat · NO_MATCH · wants
 * getitem(...), found torch.cat"), or NULL when none is set ("filter-coverage" property). */
const char *ox_document_get_filter_coverage(OxDocument *self);
/* The first step position the filters let through, or 0. */
guint ox_document_first_visible(OxDocument *self);
gboolean ox_document_get_filter_touching(OxDocument *self);
void ox_document_set_filter_touching(OxDocument *self, gboolean touching);
gboolean ox_document_step_visible(OxDocument *self, guint position);
/* Row index of position in the timeline, or G_MAXUINT if filtered out. */
guint ox_document_timeline_row(OxDocument *self, guint position);

/* Explain ("why not?"): positions (seq + 1) of every record mentioning name. Caller frees. */
GArray *ox_document_explain(OxDocument *self, const char *name);

/* Export of the shown graph ("json", "fx", "dot", "svg", "png") or the trace ("trace"), written
 * atomically. Thread-safe with respect to the document only if called on the main thread; the
 * window runs it on a worker with ox_document_export_data. */
gboolean ox_document_export(OxDocument *self, const char *format, const char *path, GError **error);
/* Renders the bytes of an export of graph g / trace t (either may be NULL as fitting). */
GBytes *ox_export_bytes(const OxGraph *g, const OxTrace *t, const char *format, gboolean edge_shapes,
                        char **note, GError **error);
/* The shown step as the canvas draws it, for a picture: a copy of the shown graph (in the after
 * view of a rewrite also the nodes it removed, wired to their inputs), and per node id of that
 * copy its mark (OX_DOT_MARK_*: anchor, matched, removed, added, dimmed) and its fill
 * (OX_DOT_RGB of the canvas's colour). NULL without a graph. Caller frees all three. */
OxGraph *ox_document_step_picture(OxDocument *self, guint8 **marks, guint32 **fills);
/* SVG or PNG of a step picture in the canvas's palette, with a legend of its marks and
 * families at the top right (SVG classes: ox-anchor, ox-matched, ox-removed, ox-added,
 * ox-dimmed, ox-legend). Safe on a worker thread (it owns nothing of the document). */
GBytes *ox_export_picture_bytes(const OxGraph *g, const guint8 *marks, const guint32 *fills, const char *format,
                                gboolean edge_shapes, char **note, GError **error);

G_END_DECLS
#endif
