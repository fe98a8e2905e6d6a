/* ox-document-private.h - what the files of OxDocument share (ui/ only): the instance struct,
 * its properties and signals, and the functions one file defines and another calls.
 *
 *   ox-document.c         op families, timeline rows, the graphs and states of the shown frame,
 *                         stepping, selection, search, the timeline, the GObject boilerplate
 *   ox-document-load.c    loading a dump, its graphs, loading a trace off the main thread
 *   ox-document-run.c     optimization and what-if re-runs on worker threads
 *   ox-document-export.c  exports: graph or trace bytes, step pictures (SVG/PNG)
 */
#ifndef OX_DOCUMENT_PRIVATE_H
#define OX_DOCUMENT_PRIVATE_H

#include "ox-document.h"

G_BEGIN_DECLS

struct _OxDocument {
  GObject parent_instance;

  /* owned */
  OxDoc *doc;
  char *path;
  OxHistory *history;
  OxPipeline *pipeline;
  OxCheckConfig checks;
  char *status;
  OxGraph *g_after, *g_before;
  guint8 *states;
  guint n_states;
  GArray *overlay;        /* uids the last frame highlighted (anchor, matched) */
  GArray *dirty;          /* scratch */
  GArray *edges;          /* OxFrameEdge, valid unless edges_dirty */
  char *selected;
  char *search_text, *search_error;
  GPtrArray *hits;        /* node names of the shown graph (borrowed from it) */
  GHashTable *hit_uids;   /* uid set */
  GListStore *timeline;
  char *filter_pass;
  /* the coverage filter (ox_document_set_filter_coverage): filter_cov set, the steps of one
   * phase, pass and rule (rule may be NULL: steps without one), optionally refused for one reason
   * code (-1: any kind) and decided by one value */
  gboolean filter_cov;
  char *filter_phase, *filter_rule, *filter_detail, *filter_cov_text;
  int filter_reason;
  GHashTable *touching;   /* positions that mention the selected node */

  /* plain state */
  guint graph_index;
  gboolean busy;
  double progress;
  guint position;
  gboolean show_before;
  guint k_after, k_before;
  char **shape_specs;     /* --input-shape for the next load (NULL-terminated) */
  char *shapes_file;      /* --shapes for the next load */
  char *shapes_note;      /* what the last load inferred of its parameters' shapes, or NULL */
  char **loaded_specs;    /* the --input-shape specs and --shapes file the shown file was loaded with */
  char *loaded_shapes_file;
  char *trace_path;       /* the trace file the shown history came from, or NULL (optimized here) */
  GPtrArray *entries;     /* OxGraphEntry: every graph of the dump */
  guint entry;            /* the one shown */
  GHashTable *entry_hist; /* entry index -> OxHistory (ref) of a graph shown before */
  guint pending_graph;    /* --graph N - 1 for the next load; G_MAXUINT: none */
  GArray *warnings;       /* OxLoadWarning of the last load */
  guint n_warnings;       /* all, kept or not */
  guint load_serial;
  guint32 anchor_uid;
  guint frame_ka, frame_kb;           /* what states were computed for */
  gboolean frame_before, frame_stepping;
  gboolean edges_dirty;
  guint filter_kinds;
  gboolean filter_touching;
  guint gen;              /* bumped by every load; stale async results are dropped */
  /* what-if re-runs of one option each, for the shown history (whatif_gen: bumped when it changes) */
  GHashTable *whatif;     /* option -> WhatifEntry */
  GQueue *whatif_queue;   /* options asked for, not started (owned strings) */
  struct WhatifJob *whatif_job; /* the running one (owned by its task), or NULL */
  guint whatif_gen, whatif_runs;
  struct TracePrefetch *prefetch; /* a trace being read while the graph loads (ref), or NULL */
};
void ox_document_prefetch_unref(struct TracePrefetch *p);
enum {
  PROP_0,
  PROP_PATH,
  PROP_N_STEPS,
  PROP_POSITION,
  PROP_SHOW_BEFORE,
  PROP_SELECTED,
  PROP_SEARCH_TEXT,
  PROP_N_HITS,
  PROP_FILTER_KINDS,
  PROP_FILTER_PASS,
  PROP_FILTER_TOUCHING,
  PROP_FILTER_COVERAGE,
  PROP_BUSY,
  PROP_PROGRESS,
  PROP_STATUS,
  N_PROPS
};
enum { SIGNAL_HISTORY_CHANGED, SIGNAL_FRAME_CHANGED, SIGNAL_WHATIF_DONE, N_SIGNALS };

/* ox-document.c */
extern GParamSpec *ox_document_props[N_PROPS];
extern guint ox_document_signals[N_SIGNALS];
void ox_document_set_status(OxDocument *self, const char *status);
void ox_document_graph_release(OxDocument *self, OxGraph **g);
void ox_document_graphs_update(OxDocument *self);
void ox_document_frame_update(OxDocument *self);
void ox_document_search_update(OxDocument *self);
void ox_document_timeline_rebuild(OxDocument *self);
void ox_document_filter_coverage_reset(OxDocument *self); /* notifies "filter-coverage" if one was set */

/* ox-document-load.c */
void ox_document_install(OxDocument *self, OxHistory *h);
char *ox_document_diags_text(const OxDiagList *d);
void ox_document_warning_clear(gpointer p);

/* ox-document-run.c */
void ox_document_set_busy(OxDocument *self, gboolean busy);
void ox_document_whatif_entry_free(gpointer p);
void ox_document_whatif_reset(OxDocument *self);

G_END_DECLS

#endif
