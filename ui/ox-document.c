/* ox-document.c - the debugger's document model (see ox-document.h).
 *
 * Invariants: when a graph is loaded, history != NULL, g_after is the graph after graph step
 * k_after and g_before the graph after k_before (= k_after when the shown record did not change
 * the graph, else k_after - 1). Both are working graphs moved by the history's edit scripts, never
 * rebuilt per step. states always describe the shown frame; the full edge list is computed only
 * when asked for (views ask for the in-edges of the nodes they show).
 * Worker threads never touch the document: the optimization task works on its own clone of the
 * input and hands back a trace; results are installed on the main thread, and a generation
 * counter drops the results of a task started before a newer load.
 */
#include "ox-document.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <stdatomic.h>
#include <string.h>

#include "layout/ox_layout.h"
#include "ops/ox_ops.h"
#include "ops/ox_shape.h"
#include "write/ox_write.h"

/* ------------------------------------------------------------------ op families */

static const char *const family_names[OX_FAMILY_COUNT] = {
  "unknown", "matmul", "norm", "pointwise", "plumbing", "view", "reduction", "input", "output",
};

static const guint32 family_colors[OX_FAMILY_COUNT] = {
  0xd9d9d9, /* unknown: grey */
  0x8fb8ed, /* matmul: blue */
  0xc6a4e8, /* norm: lilac */
  0xa8e0a0, /* pointwise: green-ish */
  0xf5c16c, /* plumbing: amber */
  0xf2e394, /* view: pale yellow */
  0xf0a3a3, /* reduction: salmon */
  0xffffff, /* input: white */
  0xb0b0b0, /* output: mid grey */
};

const char *ox_family_name(OxFamily f) { return f < OX_FAMILY_COUNT ? family_names[f] : "unknown"; }
guint32 ox_family_color(OxFamily f) { return f < OX_FAMILY_COUNT ? family_colors[f] : family_colors[0]; }

gboolean ox_family_from_name(const char *s, OxFamily *out) {
  for (int i = 0; i < OX_FAMILY_COUNT; i++)
    if (g_ascii_strcasecmp(s, family_names[i]) == 0) {
      *out = (OxFamily)i;
      return TRUE;
    }
  if (g_ascii_strcasecmp(s, "linear") == 0) {
    *out = OX_FAMILY_MATMUL;
    return TRUE;
  }
  if (g_ascii_strcasecmp(s, "activation") == 0) {
    *out = OX_FAMILY_POINTWISE;
    return TRUE;
  }
  return FALSE;
}

OxFamily ox_node_family(const OxGraph *g, const OxNode *n) {
  switch ((OxOp)n->op) {
  case OX_OP_PLACEHOLDER:
  case OX_OP_GET_ATTR: return OX_FAMILY_INPUT;
  case OX_OP_OUTPUT: return OX_FAMILY_OUTPUT;
  default: break;
  }
  OxOpId id = ox_op_of_node(g, n, NULL);
  const OxOpInfo *info = id ? ox_op_info(id) : NULL;
  if (!info) return OX_FAMILY_UNKNOWN;
  switch (id) {
  case OX_OPID_LINEAR: case OX_OPID_ADDMM: case OX_OPID_MM: case OX_OPID_BMM: case OX_OPID_BADDBMM:
  case OX_OPID_MATMUL: case OX_OPID_GROUPED_MM: case OX_OPID_CONV2D: case OX_OPID_EMBEDDING:
  case OX_OPID_EMBEDDING_BAG:
    return OX_FAMILY_MATMUL;
  case OX_OPID_LAYER_NORM: case OX_OPID_NATIVE_LAYER_NORM: case OX_OPID_BATCH_NORM:
    return OX_FAMILY_NORM;
  case OX_OPID_SOFTMAX: case OX_OPID_MAX_POOL2D: case OX_OPID_ADAPTIVE_AVG_POOL2D:
    return OX_FAMILY_REDUCTION;
  default: break;
  }
  if (info->flags & OX_OPF_PLUMBING) return OX_FAMILY_PLUMBING;
  if (info->flags & OX_OPF_VIEW) return OX_FAMILY_VIEW;
  if (info->flags & OX_OPF_REDUCTION) return OX_FAMILY_REDUCTION;
  if (info->flags & OX_OPF_POINTWISE) return OX_FAMILY_POINTWISE;
  return OX_FAMILY_UNKNOWN;
}

/* ------------------------------------------------------------------ timeline rows */

G_DEFINE_FINAL_TYPE(OxStepItem, ox_step_item, G_TYPE_OBJECT)

static void ox_step_item_finalize(GObject *o) {
  OxStepItem *self = OX_STEP_ITEM(o);
  g_free(self->title);
  g_free(self->subtitle);
  G_OBJECT_CLASS(ox_step_item_parent_class)->finalize(o);
}
static void ox_step_item_class_init(OxStepItemClass *k) { G_OBJECT_CLASS(k)->finalize = ox_step_item_finalize; }
static void ox_step_item_init(OxStepItem *self) { (void)self; }

/* A timeline row shows one line of each text, ellipsized; but a label shapes its whole text
 * before it ellipsizes, and a rejection reason can list thousands of nodes ("[%arg_1, %arg_11,
 * ...]"): rows keep at most this many bytes (the Why panel has the full text). */
enum { ROW_TEXT_MAX = 160 };

static char *row_text(char *s) {
  if (!s || strlen(s) <= ROW_TEXT_MAX) return s;
  /* cut at a word or item boundary with "…", never inside a name */
  ox_text_clip_cut(s, ROW_TEXT_MAX + 1, ROW_TEXT_MAX);
  return s;
}

static OxStepItem *step_item_new(gboolean header, guint position, guint8 kind, char *title, char *subtitle) {
  title = row_text(title);
  subtitle = row_text(subtitle);
  OxStepItem *it = g_object_new(OX_TYPE_STEP_ITEM, NULL);
  it->header = header;
  it->position = position;
  it->kind = kind;
  it->title = title;
  it->subtitle = subtitle;
  return it;
}

/* ------------------------------------------------------------------ the document */

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
};

G_DEFINE_FINAL_TYPE(OxDocument, ox_document, G_TYPE_OBJECT)

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
  PROP_BUSY,
  PROP_PROGRESS,
  PROP_STATUS,
  N_PROPS
};
static GParamSpec *props[N_PROPS];

enum { SIGNAL_HISTORY_CHANGED, SIGNAL_FRAME_CHANGED, SIGNAL_WHATIF_DONE, N_SIGNALS };
static guint signals[N_SIGNALS];

static void document_refresh(OxDocument *self);
static void whatif_reset(OxDocument *self);
static void set_busy(OxDocument *self, gboolean busy);
static void timeline_rebuild(OxDocument *self);
static void search_update(OxDocument *self);

OxDocument *ox_document_new(void) { return g_object_new(OX_TYPE_DOCUMENT, NULL); }

static void set_status(OxDocument *self, const char *status) {
  if (g_strcmp0(self->status, status) == 0) return;
  g_free(self->status);
  self->status = g_strdup(status);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_STATUS]);
}

/* ---- graphs of the current position */

static void positions_to_gsteps(OxDocument *self, guint *ka, guint *kb) {
  *ka = *kb = 0;
  if (!self->history || !self->position) return;
  const OxHistory *h = self->history;
  guint seq = self->position - 1;
  *ka = h->gstep_after_seq[seq];
  guint ai = h->trace->steps[seq].applied_index;
  *kb = (ai && ai == *ka) ? ai - 1 : *ka;
  if (*ka > h->n_graph_steps) *ka = h->n_graph_steps; /* history truncated by a replay error */
  if (*kb > h->n_graph_steps) *kb = h->n_graph_steps;
}

/* Moves *g (the graph after graph step *k) to graph step want: by seeking (edits in between,
 * either direction) or, when that is dearer, from a fresh copy of the input (a clone costs about
 * as much as replaying a quarter of its node count in edits). */
/* A working graph at graph step 0 may be the history's input itself (not a copy): opening a
 * 100k-node graph then costs no clone until the first step changes it. */
static void graph_release(OxDocument *self, OxGraph **g) {
  if (*g && (!self->history || *g != self->history->input)) ox_graph_free(*g);
  *g = NULL;
}

/* Replays leave a working graph the ids of every node they erased (tombstones: the ids stay,
 * since the provenance of later nodes names them) and the values they installed, so going back
 * and forth grows it (~30k ids per 200 steps and two jumps at 100k nodes). A grown graph starts
 * afresh from the input at a move that costs about as much as a fresh start (a long jump); one
 * grown past three times the input's ids, at the next move whatever it costs. */
static gboolean working_graph_restart(const OxHistory *h, const OxGraph *g, guint64 seek, guint64 fresh) {
  if (!g || g == h->input || !seek) return FALSE;
  guint32 n = h->input->n_nodes;
  if (g->n_nodes > 3 * n + 4096) return TRUE;
  return g->n_nodes > n + n / 2 + 4096 && fresh <= 2 * seek;
}

/* Working graphs share the string table of the trace they replay (faster replays, and no table
 * of their own); they are only ever used on the main thread. */
static OxGraph *working_strings(const OxHistory *h) { return h->trace ? h->trace->pool : NULL; }

static void cursor_move(OxDocument *self, OxGraph **g, guint *k, guint want) {
  const OxHistory *h = self->history;
  if (*g && *k == want) return;
  if (want == 0) {
    graph_release(self, g);
    *g = h->input;
    *k = 0;
    return;
  }
  if (*g == h->input) *g = ox_graph_clone_lean(h->input, working_strings(h)); /* copy on first write */
  guint64 seek = *g ? ox_history_edits_between(h, *k, want) : G_MAXUINT64;
  guint64 fresh = h->input->n_live / 4 + ox_history_edits_between(h, 0, want);
  GError *err = NULL;
  if (seek > fresh || working_graph_restart(h, *g, seek, fresh)) {
    graph_release(self, g);
    *g = ox_graph_clone_lean(h->input, working_strings(h));
    *k = 0;
  }
  if (!ox_history_seek(h, *g, *k, want, &err)) {
    set_status(self, err ? err->message : "replay failed");
    g_clear_error(&err);
    graph_release(self, g);
    *g = h->input;
    want = 0;
  }
  *k = want;
}

static void graphs_update(OxDocument *self) {
  guint ka, kb;
  positions_to_gsteps(self, &ka, &kb);
  /* two working graphs, each moved by the edits between its old and new step; when they swap
   * roles (one step forward: the old after is the new before) no edit is replayed at all */
  if (self->g_after && ka != self->k_after && kb == self->k_after) {
    OxGraph *t = self->g_after;
    guint tk = self->k_after;
    if (self->g_before) {
      self->g_after = self->g_before;
      self->k_after = self->k_before;
    } else {
      /* the before graph was never needed so far: the new after starts as a copy */
      self->g_after = t == self->history->input ? t : ox_graph_clone_lean(t, working_strings(self->history));
      self->k_after = tk;
    }
    self->g_before = t;
    self->k_before = tk;
  }
  cursor_move(self, &self->g_after, &self->k_after, ka);
  /* the before graph exists only while it differs from the after graph; after a jump it is
   * cheapest as a copy of the after graph taken back by one step (a clone and a step, instead of
   * a second clone of the input and a second replay of every edit up to here) */
  if (kb != ka) {
    const OxHistory *h = self->history;
    guint64 seek = self->g_before && self->g_before != h->input ? ox_history_edits_between(h, self->k_before, kb)
                                                                : G_MAXUINT64;
    guint64 via_after = h->input->n_live / 4 + ox_history_edits_between(h, ka, kb);
    guint64 fresh = h->input->n_live / 4 + ox_history_edits_between(h, 0, kb);
    if (self->g_after != h->input && via_after < seek && via_after < fresh) {
      graph_release(self, &self->g_before);
      self->g_before = ox_graph_clone_lean(self->g_after, working_strings(h));
      self->k_before = ka;
    }
    cursor_move(self, &self->g_before, &self->k_before, kb);
  }
  /* a record that changes nothing (a rejection): the before graph is not shown, but the next
   * applied step needs it at this step (the swap above); it follows unless that costs more than
   * the copy the swap would make without it */
  else if (self->g_before && self->k_before != kb &&
           ox_history_edits_between(self->history, self->k_before, kb) > self->history->input->n_live / 4)
    graph_release(self, &self->g_before), self->k_before = kb;
  else if (self->g_before)
    cursor_move(self, &self->g_before, &self->k_before, kb);
  else
    self->k_before = kb;
}

OxGraph *ox_document_get_graph_after(OxDocument *self) { return self->g_after; }
OxGraph *ox_document_get_graph_before(OxDocument *self) {
  return self->k_before != self->k_after ? self->g_before : self->g_after;
}
OxGraph *ox_document_get_graph(OxDocument *self) {
  return self->show_before ? ox_document_get_graph_before(self) : self->g_after;
}
guint ox_document_get_shown_gstep(OxDocument *self) { return self->show_before ? self->k_before : self->k_after; }

/* ---- frame */

static guint8 base_state(const OxHistory *h, guint32 uid, guint ka, guint kb, gboolean before, gboolean stepping) {
  gboolean a = ox_history_alive(h, uid, ka), b = ox_history_alive(h, uid, kb);
  gboolean visible = before ? b : (a || b);
  if (!visible) return OX_NS_HIDDEN;
  if (!stepping) return OX_NS_NORMAL;
  if (b && !a) return OX_NS_REMOVED;
  if (a && !b) return OX_NS_ADDED;
  return OX_NS_DIMMED;
}

static void dirty_range(OxDocument *self, guint lo, guint hi) {
  const OxHistory *h = self->history;
  hi = MIN(hi, h->n_graph_steps);
  for (guint a = lo + 1; a <= hi; a++) {
    for (guint32 i = h->born_idx[a]; i < h->born_idx[a + 1]; i++) g_array_append_val(self->dirty, h->born_at[i]);
    for (guint32 i = h->died_idx[a]; i < h->died_idx[a + 1]; i++) g_array_append_val(self->dirty, h->died_at[i]);
  }
}

/* States are kept up to date incrementally: a frame recomputes only the uids born or dying
 * between the old and new graph steps and the previous and new step's highlighted nodes (all
 * uids only when stepping starts or stops, or before/after flips). */
static void frame_update(OxDocument *self) {
  const OxHistory *h = self->history;
  self->edges_dirty = TRUE;
  self->anchor_uid = 0;
  if (!h) {
    self->n_states = 0;
    return;
  }
  guint n = h->u->n_nodes;
  const OxStep *s = ox_document_get_step(self);
  gboolean before = self->show_before, stepping = s != NULL;
  guint ka = self->k_after, kb = self->k_before;
  gboolean full = self->n_states != n || self->frame_before != before || self->frame_stepping != stepping;
  g_array_set_size(self->dirty, 0);
  if (full) {
    self->states = g_renew(guint8, self->states, n);
    self->n_states = n;
    self->states[0] = OX_NS_HIDDEN;
    for (guint uid = 1; uid < n; uid++) self->states[uid] = base_state(h, uid, ka, kb, before, stepping);
  } else {
    guint lo = MIN(MIN(ka, kb), MIN(self->frame_ka, self->frame_kb));
    guint hi = MAX(MAX(ka, kb), MAX(self->frame_ka, self->frame_kb));
    dirty_range(self, lo, hi);
    g_array_append_vals(self->dirty, self->overlay->data, self->overlay->len);
    for (guint i = 0; i < self->dirty->len; i++) {
      guint32 uid = g_array_index(self->dirty, guint32, i);
      self->states[uid] = base_state(h, uid, ka, kb, before, stepping);
    }
  }
  self->frame_ka = ka;
  self->frame_kb = kb;
  self->frame_before = before;
  self->frame_stepping = stepping;
  g_array_set_size(self->overlay, 0);
  if (s) {
    for (guint32 i = 0; i < s->n_matched; i++) {
      guint32 uid = ox_history_uid(h, s->matched[i], kb);
      if (uid && self->states[uid] != OX_NS_HIDDEN && self->states[uid] != OX_NS_REMOVED &&
          self->states[uid] != OX_NS_ADDED) {
        self->states[uid] = OX_NS_MATCHED;
        g_array_append_val(self->overlay, uid);
      }
    }
    if (s->anchor) {
      self->anchor_uid = ox_history_uid(h, s->anchor, kb);
      if (self->anchor_uid && self->states[self->anchor_uid] != OX_NS_HIDDEN &&
          self->states[self->anchor_uid] != OX_NS_REMOVED) {
        self->states[self->anchor_uid] = OX_NS_ANCHOR;
        g_array_append_val(self->overlay, self->anchor_uid);
      }
    }
  }
}

/* In-edges of uid in the shown frame: its inputs in the shown graph, and in the after view the
 * dashed "ghost" edges of removed nodes (a removed node's old inputs; a removed producer of a
 * surviving user). */
guint ox_document_in_edges(OxDocument *self, guint32 uid, OxFrameEdge *out, guint cap) {
  const OxHistory *h = self->history;
  if (!h || !uid || uid >= self->n_states || self->states[uid] == OX_NS_HIDDEN) return 0;
  guint n = 0;
  OxNodeId ins[256];
  const char *name = h->name[uid];
  gboolean ghosts = !self->show_before && self->k_before != self->k_after;
  OxGraph *g = ox_document_get_graph(self);
  guint k = ox_document_get_shown_gstep(self);
  gboolean removed = self->states[uid] == OX_NS_REMOVED && !self->show_before;
  if (!removed) {
    OxNodeId id = ox_graph_find(g, name);
    guint32 m = id ? MIN(ox_graph_inputs(g, id, ins, G_N_ELEMENTS(ins)), G_N_ELEMENTS(ins)) : 0;
    for (guint32 i = 0; i < m; i++) {
      guint32 from = ox_history_uid(h, g->nodes[ins[i]].name, k);
      if (from && n < cap) out[n++] = (OxFrameEdge){from, uid, FALSE};
    }
  }
  if (ghosts) {
    OxGraph *gb = self->g_before;
    OxNodeId id = ox_graph_find(gb, name);
    if (id && ox_history_uid(h, name, self->k_before) == uid) {
      guint32 m = MIN(ox_graph_inputs(gb, id, ins, G_N_ELEMENTS(ins)), G_N_ELEMENTS(ins));
      for (guint32 i = 0; i < m; i++) {
        guint32 from = ox_history_uid(h, gb->nodes[ins[i]].name, self->k_before);
        if (from && (removed || self->states[from] == OX_NS_REMOVED) && n < cap) out[n++] = (OxFrameEdge){from, uid, TRUE};
      }
    }
  }
  return n;
}

static void edges_update(OxDocument *self) {
  g_array_set_size(self->edges, 0);
  self->edges_dirty = FALSE;
  if (!self->history) return;
  OxFrameEdge buf[512];
  for (guint32 uid = 1; uid < self->n_states; uid++) {
    if (self->states[uid] == OX_NS_HIDDEN) continue;
    guint m = ox_document_in_edges(self, uid, buf, G_N_ELEMENTS(buf));
    g_array_append_vals(self->edges, buf, m);
  }
}

const guint8 *ox_document_get_node_states(OxDocument *self, guint *n_uids) {
  *n_uids = self->n_states;
  return self->states;
}
const OxFrameEdge *ox_document_get_edges(OxDocument *self, guint *n_edges) {
  if (self->edges_dirty) edges_update(self);
  *n_edges = self->edges->len;
  return (const OxFrameEdge *)(void *)self->edges->data;
}
guint32 ox_document_get_anchor_uid(OxDocument *self) { return self->anchor_uid; }
guint32 ox_document_uid_of(OxDocument *self, const char *name) {
  return self->history && name ? ox_history_uid(self->history, name, ox_document_get_shown_gstep(self)) : 0;
}

/* Recomputes graphs, frame and search after position/show-before changes; emits frame-changed. */
static void document_refresh(OxDocument *self) {
  if (self->history) {
    graphs_update(self);
    frame_update(self);
    search_update(self);
  }
  g_signal_emit(self, signals[SIGNAL_FRAME_CHANGED], 0);
}

/* ---- loading */

static void document_install(OxDocument *self, OxHistory *h) {
  if (h != self->history) whatif_reset(self);
  /* the working graphs may alias the old history's input: release them while it lives */
  graph_release(self, &self->g_after);
  graph_release(self, &self->g_before);
  g_clear_pointer(&self->history, ox_history_unref);
  self->history = h;
  self->n_states = 0; /* a full frame next */
  self->position = 0;
  self->k_after = self->k_before = 0;
  g_clear_pointer(&self->selected, g_free);
  g_clear_pointer(&self->filter_pass, g_free);
  self->filter_touching = FALSE;
  g_hash_table_remove_all(self->touching);
  graphs_update(self);
  frame_update(self);
  search_update(self);
  timeline_rebuild(self);
  g_object_freeze_notify(G_OBJECT(self));
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_PATH]);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_N_STEPS]);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_POSITION]);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_SELECTED]);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_FILTER_PASS]);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_FILTER_TOUCHING]);
  g_object_thaw_notify(G_OBJECT(self));
  if (h->error) set_status(self, h->error);
  g_signal_emit(self, signals[SIGNAL_HISTORY_CHANGED], 0);
  g_signal_emit(self, signals[SIGNAL_FRAME_CHANGED], 0);
#ifdef __GLIBC__
  /* the trace text, the parser's scratch and the old history were freed on worker threads'
   * malloc arenas, which keep freed memory: hand it back (a 100k-node trace leaves ~150 MB) */
  malloc_trim(0);
#endif
}

static char *diags_text(const OxDiagList *d) {
  GString *s = g_string_new(NULL);
  for (size_t i = 0; i < d->n; i++) {
    if (d->items[i].sev != OX_SEV_ERROR) continue;
    char *line = ox_diag_format(d, &d->items[i]);
    if (s->len) g_string_append_c(s, '\n');
    g_string_append(s, line);
    if (d->items[i].snippet) g_string_append_printf(s, "\n    %s", d->items[i].snippet);
    free(line);
    if (s->len > 4000) break;
  }
  if (!s->len) g_string_append(s, "unknown error");
  return g_string_free(s, FALSE);
}

/* ---- the graphs of the dump */

static void entry_free(gpointer p) {
  OxGraphEntry *e = p;
  g_free(e->name);
  g_free(e->owner);
  g_free(e->label);
  g_free(e);
}

static guint count_nodes(const OxGraph *g) {
  guint n = 0;
  OX_GRAPH_FOREACH(g, id) n += g->nodes[id].op != OX_OP_OUTPUT;
  return n;
}

static void entries_add(GPtrArray *a, const OxGraph *g, guint top, guint depth, guint parent, guint sub) {
  OxGraphEntry *e = g_new0(OxGraphEntry, 1);
  e->top = top;
  e->depth = depth;
  e->parent = depth ? parent : a->len;
  e->sub = sub;
  e->n_nodes = count_nodes(g);
  e->name = g_strdup(g->name && *g->name ? g->name : "graph");
  e->owner = g_strdup(g->sub_owner);
  if (depth)
    e->label = g_strdup_printf("%s%s%s · %u nodes", e->name, e->owner ? " of " : "", e->owner ? e->owner : "", e->n_nodes);
  else
    e->label = g_strdup_printf("graph %u: %s · %u nodes", top + 1, e->name, e->n_nodes);
  guint me = a->len;
  g_ptr_array_add(a, e);
  for (uint32_t i = 0; i < g->n_subgraphs; i++) entries_add(a, g->subgraphs[i], top, depth + 1, me, i);
}

guint ox_document_get_n_graph_entries(OxDocument *self) { return self->entries ? self->entries->len : 0; }
const OxGraphEntry *ox_document_get_graph_entry(OxDocument *self, guint i) {
  return self->entries && i < self->entries->len ? g_ptr_array_index(self->entries, i) : NULL;
}
guint ox_document_get_graph_entry_index(OxDocument *self) { return self->entry; }

guint ox_document_find_subgraph_entry(OxDocument *self, const char *owner) {
  if (!owner || !self->entries) return G_MAXUINT;
  for (guint i = 0; i < self->entries->len; i++) {
    const OxGraphEntry *e = g_ptr_array_index(self->entries, i);
    if (e->depth && e->parent == self->entry && e->owner && !strcmp(e->owner, owner)) return i;
  }
  return G_MAXUINT;
}

void ox_document_set_pending_graph(OxDocument *self, guint index) { self->pending_graph = index; }

/* The graph of entry i as it is now: a top-level graph in the doc, or held by the history that
 * showed it (the shown one, or one kept from before), then down its subgraphs. */
static const OxGraph *entry_graph(OxDocument *self, guint i) {
  const OxGraphEntry *e = g_ptr_array_index(self->entries, i);
  if (e->depth) {
    const OxGraph *p = entry_graph(self, e->parent);
    return p && e->sub < p->n_subgraphs ? p->subgraphs[e->sub] : NULL;
  }
  if (i == self->entry && self->history) return self->history->input;
  OxHistory *h = g_hash_table_lookup(self->entry_hist, GUINT_TO_POINTER(i));
  if (h) return h->input;
  return e->top < self->doc->n_graphs ? self->doc->graphs[e->top] : NULL;
}

gboolean ox_document_show_graph_entry(OxDocument *self, guint i, GError **error) {
  if (!self->entries || i >= self->entries->len) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "no graph %u in this dump (it has %u)", i + 1,
                self->entries ? self->entries->len : 0);
    return FALSE;
  }
  if (i == self->entry) return TRUE;
  OxHistory *back = g_hash_table_lookup(self->entry_hist, GUINT_TO_POINTER(i));
  OxHistory *h = back ? ox_history_ref(back) : NULL;
  if (!h) {
    const OxGraph *g = entry_graph(self, i);
    if (!g) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "graph %u is no longer available", i + 1);
      return FALSE;
    }
    h = ox_history_new(ox_graph_clone(g), NULL);
  }
  /* keep the one shown for coming back (its graph also holds the subgraphs shown from it) */
  if (self->history)
    g_hash_table_insert(self->entry_hist, GUINT_TO_POINTER(self->entry), ox_history_ref(self->history));
  self->entry = i;
  self->gen++;
  set_status(self, back ? (h->trace ? NULL : "not optimized yet") : "not optimized yet");
  document_install(self, h);
  return TRUE;
}

gboolean ox_document_set_doc(OxDocument *self, OxDoc *doc, guint graph_index, OxTrace *trace, const char *path,
                             GError **error) {
  g_return_val_if_fail(doc && graph_index < doc->n_graphs, FALSE);
  /* the history takes the loaded graph itself (no copy: 100k nodes cost ~0.4 s to clone); a
   * second install of the same doc copies the current input */
  gboolean steal = doc->graphs[graph_index] != NULL;
  OxGraph *input = steal ? doc->graphs[graph_index] : ox_graph_clone(self->history->input);
  if (trace && !trace->input_hash) { /* a trace file with "hash": "": nothing would check it (issue 21) */
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                "the trace has no input hash, so nothing checks it was recorded on %s", path ? path : "this graph");
    if (!steal) ox_graph_free(input);
    ox_trace_free(trace);
    if (doc != self->doc) ox_doc_free(doc);
    return FALSE;
  }
  if (trace && trace->input_hash) {
    char hash[32];
    g_snprintf(hash, sizeof hash, "%016llx", (unsigned long long)ox_graph_structure_hash(input));
    if (strcmp(hash, trace->input_hash) != 0) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                  "%s: the trace was recorded on another graph (structure hash %s, this graph has %s)",
                  path ? path : "graph", trace->input_hash, hash);
      if (!steal) ox_graph_free(input);
      ox_trace_free(trace);
      if (doc != self->doc) ox_doc_free(doc);
      return FALSE;
    }
  }
  if (self->doc != doc) {
    /* a new dump: its graphs, none shown before */
    g_clear_pointer(&self->entries, g_ptr_array_unref);
    self->entries = g_ptr_array_new_with_free_func(entry_free);
    for (guint i = 0; i < doc->n_graphs; i++)
      if (doc->graphs[i]) entries_add(self->entries, doc->graphs[i], i, 0, 0, 0);
    g_hash_table_remove_all(self->entry_hist);
    self->entry = 0;
    for (guint i = 0; i < self->entries->len; i++) {
      const OxGraphEntry *e = g_ptr_array_index(self->entries, i);
      if (!e->depth && e->top == graph_index) self->entry = i;
    }
  }
  if (steal) doc->graphs[graph_index] = NULL;
  self->gen++;
  if (self->doc != doc) g_clear_pointer(&self->doc, ox_doc_free);
  self->doc = doc;
  self->graph_index = graph_index;
  if (path != self->path) {
    g_free(self->path);
    self->path = g_strdup(path);
  }
  OxHistory *h = ox_history_new(input, trace);
  set_status(self, trace ? (trace->n_steps ? NULL : "the trace has no steps") : "not optimized yet");
  document_install(self, h);
  return TRUE;
}

const char *ox_document_get_shapes_note(OxDocument *self) { return self->shapes_note; }
const char *const *ox_document_get_loaded_specs(OxDocument *self) { return (const char *const *)self->loaded_specs; }
const char *ox_document_get_loaded_shapes_file(OxDocument *self) { return self->loaded_shapes_file; }
const char *ox_document_get_trace_path(OxDocument *self) { return self->history && self->history->trace ? self->trace_path : NULL; }
guint ox_document_get_top_index(OxDocument *self) {
  const OxGraphEntry *e = ox_document_get_graph_entry(self, self->entry);
  return e ? e->top : 0;
}

#define MAX_KEPT_WARNINGS 2000

static void warning_clear(gpointer p) {
  OxLoadWarning *w = p;
  g_free(w->text);
  g_free(w->snippet);
}

/* The warnings of d into a new array (errors fail the load and are shown otherwise; notes are
 * not kept); *n counts them all. */
static GArray *collect_warnings(const OxDiagList *d, guint *n) {
  GArray *a = g_array_new(FALSE, TRUE, sizeof(OxLoadWarning));
  g_array_set_clear_func(a, warning_clear);
  *n = 0;
  for (size_t i = 0; i < d->n; i++) {
    const OxDiag *x = &d->items[i];
    if (x->sev != OX_SEV_WARNING) continue;
    (*n)++;
    if (a->len >= MAX_KEPT_WARNINGS) continue;
    char *t = ox_diag_format(d, x);
    OxLoadWarning w = {x->line, x->col, g_strdup(t), g_strdup(x->snippet)};
    free(t);
    g_array_append_val(a, w);
  }
  *n += (guint)d->n_dropped;
  return a;
}

guint ox_document_get_n_load_warnings(OxDocument *self) { return self->n_warnings; }
guint ox_document_get_load_serial(OxDocument *self) { return self->load_serial; }
guint ox_document_get_n_kept_load_warnings(OxDocument *self) { return self->warnings->len; }
const OxLoadWarning *ox_document_get_load_warning(OxDocument *self, guint i) {
  return i < self->warnings->len ? &g_array_index(self->warnings, OxLoadWarning, i) : NULL;
}

const char *ox_document_node_at_line(OxDocument *self, guint line) {
  if (!self->history || !line) return NULL;
  const OxGraph *g = self->history->input;
  const OxNode *best = NULL, *before = NULL; /* at or after the line; else the last before it */
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    if (!n->src_line) continue;
    if (n->src_line >= line && (!best || n->src_line < best->src_line)) best = n;
    if (n->src_line < line && (!before || n->src_line > before->src_line)) before = n;
  }
  if (!best) best = before;
  return best ? best->name : NULL;
}

gboolean ox_document_has_pending_shapes(OxDocument *self) { return self->shape_specs || self->shapes_file; }

void ox_document_set_pending_shapes(OxDocument *self, const char *const *specs, guint n_specs, const char *shapes_file) {
  g_strfreev(self->shape_specs);
  self->shape_specs = g_new0(char *, n_specs + 1);
  for (guint i = 0; i < n_specs; i++) self->shape_specs[i] = g_strdup(specs[i]);
  g_free(self->shapes_file);
  self->shapes_file = shapes_file && *shapes_file ? g_strdup(shapes_file) : NULL;
}

/* The pending --shapes / --input-shape on graph g (then forgotten: they belong to the file
 * given with them), parameters inferred from their uses; FALSE with error on a bad spec or
 * file. *summary: what was inferred, for the status line. */
static gboolean apply_pending_shapes(OxDocument *self, OxGraph *g, const char *path, char **summary, char ***specs_out,
                                     char **file_out, GError **error) {
  char **specs = g_steal_pointer(&self->shape_specs);
  char *file = g_steal_pointer(&self->shapes_file);
  *specs_out = specs ? g_strdupv(specs) : NULL;
  *file_out = g_strdup(file);
  guint n = specs ? g_strv_length(specs) : 0;
  gboolean ok = TRUE;
  *summary = NULL;
  if (n || file) {
    OxDiagList d;
    ox_diags_init(&d, file ? file : path);
    OxShapeList sl;
    ox_shape_list_init(&sl);
    if (file && ox_shapes_load_file(file, &sl, &d) != 0) ok = FALSE;
    if (ok) {
      ox_shapes_apply(g, &sl, &d, NULL);
      if (ox_shape_apply_input_specs(g, (const char *const *)specs, n, &d) != 0) ok = FALSE;
    }
    if (ok) {
      OxParamShapes ps;
      ox_shape_infer_params(g, NULL, 0, &ps);
      OxShapeStats st;
      ox_shape_infer_graph(g, NULL, &st);
      const char *pl = ps.inferred == 1 ? "" : "s";
      *summary = ps.unknown ? g_strdup_printf("shapes: %u parameter%s inferred from their uses, %u without a shape",
                                              ps.inferred, pl, ps.unknown)
                            : g_strdup_printf("shapes: %u parameter%s inferred from their uses", ps.inferred, pl);
    } else {
      char *msg = diags_text(&d);
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s", msg);
      g_free(msg);
    }
    ox_shape_list_free(&sl);
    ox_diags_clear(&d);
  }
  g_strfreev(specs);
  g_free(file);
  return ok;
}

gboolean ox_document_load_file(OxDocument *self, const char *path, const char *trace_path, GError **error) {
  OxDiagList d;
  ox_diags_init(&d, path);
  OxDoc *doc = NULL;
  if (ox_load_file(path, OX_FMT_UNKNOWN, NULL, &doc, &d) != 0 || !doc || !doc->n_graphs) {
    char *msg = diags_text(&d);
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s", msg);
    g_free(msg);
    ox_diags_clear(&d);
    ox_doc_free(doc);
    return FALSE;
  }
  guint n_warnings = 0;
  g_autoptr(GArray) warnings = collect_warnings(&d, &n_warnings);
  ox_diags_clear(&d);
  guint top = self->pending_graph == G_MAXUINT ? 0 : self->pending_graph;
  self->pending_graph = G_MAXUINT;
  if (top >= doc->n_graphs) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "%s: --graph %u is out of range: the input has %u graph%s",
                path, top + 1, doc->n_graphs, doc->n_graphs == 1 ? "" : "s");
    ox_doc_free(doc);
    return FALSE;
  }
  char *shapes_summary = NULL, **specs = NULL, *shapes_file = NULL;
  if (!apply_pending_shapes(self, doc->graphs[top], path, &shapes_summary, &specs, &shapes_file, error)) {
    g_strfreev(specs);
    g_free(shapes_file);
    ox_doc_free(doc);
    return FALSE;
  }
  OxTrace *trace = NULL;
  if (trace_path) {
    char err[512];
    size_t len = 0;
    char *text = ox_read_file(trace_path, &len, (size_t)1 << 30, err, sizeof err);
    if (!text) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", err);
      ox_doc_free(doc);
      return FALSE;
    }
    ox_diags_init(&d, trace_path);
    int rc = ox_trace_read_json(text, len, trace_path, &trace, &d);
    free(text);
    if (rc != 0 || !trace) {
      char *msg = diags_text(&d);
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s", msg);
      g_free(msg);
      ox_diags_clear(&d);
      ox_doc_free(doc);
      return FALSE;
    }
    ox_diags_clear(&d);
  }
  /* in place before the install, so that the window finds them when the new history arrives */
  GArray *prev = self->warnings;
  guint prev_n = self->n_warnings;
  self->warnings = g_steal_pointer(&warnings);
  self->n_warnings = n_warnings;
  self->load_serial++;
  gboolean ok = ox_document_set_doc(self, doc, top, trace, path, error);
  if (!ok) {
    g_array_unref(self->warnings);
    self->warnings = prev;
    self->n_warnings = prev_n;
    self->load_serial--;
  } else {
    g_array_unref(prev);
    g_free(self->shapes_note);
    self->shapes_note = g_steal_pointer(&shapes_summary);
    g_strfreev(self->loaded_specs);
    self->loaded_specs = g_steal_pointer(&specs);
    g_free(self->loaded_shapes_file);
    self->loaded_shapes_file = g_steal_pointer(&shapes_file);
    g_free(self->trace_path);
    self->trace_path = g_strdup(trace_path);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_STATUS]);
  }
  g_free(shapes_summary);
  g_strfreev(specs);
  g_free(shapes_file);
  return ok;
}

/* ---- trace loading off the main thread: at 100k nodes a trace is ~120 MB of JSON and takes
 * tens of seconds to parse; the graph is shown (and usable) meanwhile. */

typedef struct TraceJob {
  OxDocument *self;   /* ref; main thread only */
  guint gen;
  char *path;
  OxHistory *base;    /* the history whose input the trace is for (ref; its input is immutable) */
  OxHistory *result;
} TraceJob;

static void trace_job_free(gpointer p) {
  TraceJob *j = p;
  g_clear_object(&j->self);
  g_free(j->path);
  ox_history_unref(j->base);
  ox_history_unref(j->result);
  g_free(j);
}

static void trace_thread(GTask *task, gpointer src, gpointer data, GCancellable *c) {
  (void)src;
  TraceJob *j = data;
  char err[512];
  size_t len = 0;
  char *text = ox_read_file(j->path, &len, (size_t)1 << 30, err, sizeof err);
  if (!text) {
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", err);
    return;
  }
  OxDiagList d;
  ox_diags_init(&d, j->path);
  OxTrace *trace = NULL;
  gint64 t0 = g_get_monotonic_time();
  int rc = ox_trace_read_json(text, len, j->path, &trace, &d);
  free(text);
  g_debug("trace %s: parsed in %.0f ms", j->path, (g_get_monotonic_time() - t0) / 1000.0);
  if (rc != 0 || !trace) {
    char *msg = diags_text(&d);
    ox_diags_clear(&d);
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s", msg);
    g_free(msg);
    return;
  }
  ox_diags_clear(&d);
  if (g_cancellable_is_cancelled(c)) {
    ox_trace_free(trace);
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "cancelled");
    return;
  }
  const OxGraph *input = j->base->input;
  if (!trace->input_hash) { /* "hash": "" (issue 21) */
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "%s: the trace has no input hash, so nothing checks it was recorded on this graph",
                            j->path);
    ox_trace_free(trace);
    return;
  }
  if (trace->input_hash) {
    char hash[32];
    g_snprintf(hash, sizeof hash, "%016llx", (unsigned long long)ox_graph_structure_hash(input));
    if (strcmp(hash, trace->input_hash) != 0) {
      g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                              "%s: the trace was recorded on another graph (structure hash %s, this graph has %s)",
                              j->path, trace->input_hash, hash);
      ox_trace_free(trace);
      return;
    }
  }
  gint64 t1 = g_get_monotonic_time();
  j->result = ox_history_new_on(j->base, trace);
  g_debug("trace %s: history built in %.0f ms", j->path, (g_get_monotonic_time() - t1) / 1000.0);
  g_task_return_boolean(task, TRUE);
}

void ox_document_load_trace_async(OxDocument *self, const char *trace_path, GCancellable *cancellable,
                                  GAsyncReadyCallback cb, gpointer user_data) {
  GTask *task = g_task_new(self, cancellable, cb, user_data);
  g_task_set_source_tag(task, ox_document_load_trace_async);
  if (!self->history || self->busy) {
    g_task_return_new_error(task, G_IO_ERROR, self->busy ? G_IO_ERROR_BUSY : G_IO_ERROR_NOT_INITIALIZED, "%s",
                            self->busy ? "the document is busy" : "no graph loaded");
    g_object_unref(task);
    return;
  }
  TraceJob *j = g_new0(TraceJob, 1);
  j->self = g_object_ref(self);
  j->gen = self->gen;
  j->path = g_strdup(trace_path);
  j->base = ox_history_ref(self->history);
  g_task_set_task_data(task, j, trace_job_free);
  set_busy(self, TRUE);
  set_status(self, "loading the trace…");
  g_task_run_in_thread(task, trace_thread);
  g_object_unref(task);
}

gboolean ox_document_load_trace_finish(OxDocument *self, GAsyncResult *res, GError **error) {
  g_return_val_if_fail(g_task_is_valid(res, self), FALSE);
  TraceJob *j = g_task_get_task_data(G_TASK(res));
  gboolean ok = g_task_propagate_boolean(G_TASK(res), error);
  if (!j) return ok;
  if (j->gen != self->gen) {
    if (ok) g_set_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "the graph was replaced");
    return FALSE;
  }
  set_busy(self, FALSE);
  if (!ok) {
    set_status(self, "the trace could not be loaded");
    return FALSE;
  }
  OxHistory *h = g_steal_pointer(&j->result);
  const OxTrace *t = h->trace;
  set_status(self, t->n_steps ? NULL : "the trace has no steps");
  g_free(self->trace_path);
  self->trace_path = g_strdup(j->path);
  document_install(self, h);
  if (h->error) set_status(self, h->error);
  return TRUE;
}

gboolean ox_document_has_graph(OxDocument *self) { return self->history != NULL; }
const char *ox_document_get_path(OxDocument *self) { return self->path; }
OxDoc *ox_document_get_doc(OxDocument *self) { return self->doc; }
OxHistory *ox_document_get_history(OxDocument *self) { return self->history; }
const OxTrace *ox_document_get_trace(OxDocument *self) { return self->history ? self->history->trace : NULL; }
guint ox_document_get_n_steps(OxDocument *self) {
  const OxTrace *t = ox_document_get_trace(self);
  return t ? t->n_steps : 0;
}

/* ---- optimization */

void ox_document_set_pipeline(OxDocument *self, OxPipeline *pipeline, const OxCheckConfig *checks) {
  if (self->pipeline) {
    ox_pipeline_free(self->pipeline);
    g_free(self->pipeline);
  }
  self->pipeline = pipeline;
  if (checks)
    self->checks = *checks;
  else
    ox_check_config_default(&self->checks);
}

typedef struct OptJob {
  OxDocument *self;      /* ref; only touched on the main thread */
  guint gen;
  OxGraph *g;            /* the worker's own clone of the input */
  OxPipelineEntry *entries;
  guint32 n_entries;
  OxCheckConfig checks;
  OxTrace *trace;
} OptJob;

static void opt_job_free(gpointer p) {
  OptJob *j = p;
  g_clear_object(&j->self);
  ox_graph_free(j->g);
  g_free(j->entries);
  ox_trace_free(j->trace);
  g_free(j);
}

typedef struct OptProgress {
  OxDocument *self;
  guint gen;
  double fraction;
  char *text;
} OptProgress;

static gboolean opt_progress_main(gpointer p) {
  OptProgress *pr = p;
  if (pr->gen == pr->self->gen && pr->self->busy) {
    pr->self->progress = pr->fraction;
    g_object_notify_by_pspec(G_OBJECT(pr->self), props[PROP_PROGRESS]);
    set_status(pr->self, pr->text);
  }
  g_object_unref(pr->self);
  g_free(pr->text);
  g_free(pr);
  return G_SOURCE_REMOVE;
}

/* Runs on the worker (or the caller's thread for the synchronous variant). */
/* "structure,shape,numeric", as `optimus optimize` records it (trace->checks) */
static char *checks_text(const OxCheckConfig *c) {
  GString *s = g_string_new(NULL);
  const char *names[3] = {"structure", "shape", "numeric"};
  gboolean on[3] = {c->structure, c->shape, c->numeric};
  for (int i = 0; i < 3; i++)
    if (on[i]) g_string_append_printf(s, "%s%s", s->len ? "," : "", names[i]);
  if (!s->len) g_string_append(s, "none");
  return g_string_free(s, FALSE);
}

static gboolean opt_job_run(OptJob *j, GCancellable *cancellable, gboolean report, GError **error) {
  j->trace = ox_trace_new_for(j->g);
  /* the configuration in force, as the CLI records it: exports and what-ifs re-run from it */
  OxPipeline whole = {.entries = j->entries, .n = j->n_entries};
  OxBuf cfg;
  ox_buf_init(&cfg);
  ox_pipeline_to_json(&whole, &cfg);
  j->trace->config = ox_trace_intern(j->trace, cfg.data ? cfg.data : "{}");
  ox_buf_free(&cfg);
  char *ct = checks_text(&j->checks);
  j->trace->checks = ox_trace_intern(j->trace, ct);
  g_free(ct);
  for (guint32 i = 0; i < j->n_entries; i++) {
    if (g_cancellable_set_error_if_cancelled(cancellable, error)) return FALSE;
    if (report) {
      OptProgress *pr = g_new0(OptProgress, 1);
      pr->self = g_object_ref(j->self);
      pr->gen = j->gen;
      pr->fraction = (double)i / j->n_entries;
      pr->text = g_strdup_printf("optimizing: pass %u/%u %s", i + 1, j->n_entries, j->entries[i].pass->name);
      g_idle_add(opt_progress_main, pr);
    }
    OxPipeline one = {.entries = &j->entries[i], .n = 1};
    OxOptimizeResult res;
    OxDiagList d;
    ox_diags_init(&d, NULL);
    int rc = ox_optimize(j->g, &one, &j->checks, j->trace, &res, &d);
    if (rc != 0) {
      char *msg = diags_text(&d);
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "optimization failed: %s", msg);
      g_free(msg);
      ox_diags_clear(&d);
      return FALSE;
    }
    ox_diags_clear(&d);
  }
  return TRUE;
}

static void opt_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable) {
  (void)source;
  OptJob *j = data;
  GError *err = NULL;
  if (opt_job_run(j, cancellable, TRUE, &err))
    g_task_return_boolean(task, TRUE);
  else
    g_task_return_error(task, err);
}

static OptJob *opt_job_new(OxDocument *self) {
  OptJob *j = g_new0(OptJob, 1);
  j->self = g_object_ref(self);
  j->gen = self->gen;
  j->g = ox_graph_clone(self->history->input);
  OxPipeline def = {0};
  const OxPipeline *p = self->pipeline;
  if (!p) {
    ox_pipeline_default(self->history->input, &def);
    p = &def;
  }
  j->entries = g_memdup2(p->entries, p->n * sizeof *p->entries);
  j->n_entries = p->n;
  if (p == &def) ox_pipeline_free(&def);
  j->checks = self->checks;
  return j;
}

static void opt_install(OxDocument *self, OptJob *j) {
  OxTrace *t = g_steal_pointer(&j->trace);
  g_clear_pointer(&self->trace_path, g_free);
  OxHistory *h = ox_history_new_on(self->history, t);
  char *msg = g_strdup_printf("%u steps: %u applied, %u rejected, %u check failures", t->n_steps, t->n_applied,
                              t->n_rejected, t->n_check_failed);
  document_install(self, h);
  set_status(self, h->error ? h->error : msg);
  g_free(msg);
}

static void set_busy(OxDocument *self, gboolean busy) {
  if (self->busy == busy) return;
  self->busy = busy;
  self->progress = busy ? 0.0 : 1.0;
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_BUSY]);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_PROGRESS]);
}

void ox_document_optimize_async(OxDocument *self, GCancellable *cancellable, GAsyncReadyCallback cb,
                                gpointer user_data) {
  GTask *task = g_task_new(self, cancellable, cb, user_data);
  g_task_set_source_tag(task, ox_document_optimize_async);
  if (!self->history || self->busy) {
    g_task_return_new_error(task, G_IO_ERROR, self->busy ? G_IO_ERROR_BUSY : G_IO_ERROR_NOT_INITIALIZED, "%s",
                            self->busy ? "an optimization is already running" : "no graph loaded");
    g_object_unref(task);
    return;
  }
  OptJob *j = opt_job_new(self);
  g_task_set_task_data(task, j, opt_job_free);
  set_busy(self, TRUE);
  set_status(self, "optimizing…");
  g_task_run_in_thread(task, opt_thread);
  g_object_unref(task);
}

gboolean ox_document_optimize_finish(OxDocument *self, GAsyncResult *res, GError **error) {
  g_return_val_if_fail(g_task_is_valid(res, self), FALSE);
  GTask *task = G_TASK(res);
  OptJob *j = g_task_get_task_data(task);
  GError *local = NULL;
  gboolean ok = g_task_propagate_boolean(task, &local);
  if (j && j->gen != self->gen) {
    /* a newer load replaced the graph meanwhile: drop this result */
    if (ok) g_set_error(&local, G_IO_ERROR, G_IO_ERROR_CANCELLED, "the graph was replaced");
    ok = FALSE;
  } else if (j) {
    set_busy(self, FALSE);
    if (ok)
      opt_install(self, j);
    else if (!local || g_error_matches(local, G_IO_ERROR, G_IO_ERROR_CANCELLED))
      set_status(self, "optimization cancelled"); /* the status says which: a cancel, or the engine's error */
    else
      set_status(self, local->message);
  }
  if (local) g_propagate_error(error, local);
  return ok;
}

gboolean ox_document_optimize(OxDocument *self, GCancellable *cancellable, GError **error) {
  if (!self->history) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED, "no graph loaded");
    return FALSE;
  }
  OptJob *j = opt_job_new(self);
  gboolean ok = opt_job_run(j, cancellable, FALSE, error);
  if (ok) opt_install(self, j);
  opt_job_free(j);
  return ok;
}

/* ---- what-if re-runs */

gboolean ox_document_whatif_pipeline(OxDocument *self, OxPipeline *out, OxCheckConfig *checks, char **why) {
  memset(out, 0, sizeof *out);
  if (why) *why = NULL;
  const OxTrace *t = ox_document_get_trace(self);
  if (!self->history) {
    if (why) *why = g_strdup("no graph loaded");
    return FALSE;
  }
  *checks = self->checks;
  if (self->pipeline) {
    /* malloc'ed, as ox_pipeline_free frees it */
    out->n = self->pipeline->n;
    out->entries = malloc((out->n + 1) * sizeof *out->entries);
    memcpy(out->entries, self->pipeline->entries, out->n * sizeof *out->entries);
    return TRUE;
  }
  if (t && t->config && *t->config) {
    OxDiagList d;
    ox_diags_init(&d, "the trace's configuration");
    int rc = ox_pipeline_from_config(t->config, strlen(t->config), "the trace's configuration", out, &d);
    if (rc != 0) {
      if (why) {
        char *msg = diags_text(&d);
        *why = g_strdup_printf("the trace's configuration cannot be re-run: %s", msg);
        g_free(msg);
      }
      ox_diags_clear(&d);
      return FALSE;
    }
    ox_diags_clear(&d);
    if (t->checks && *t->checks) {
      char err[256];
      OxCheckConfig c = *checks;
      if (ox_check_config_parse(t->checks, &c, err, sizeof err) == 0) *checks = c;
    }
    return TRUE;
  }
  ox_pipeline_default(self->history->input, out);
  return TRUE;
}

gboolean ox_document_whatif(OxDocument *self, const OxWhatifSpec *spec, OxWhatifResult *out, GError **error) {
  memset(out, 0, sizeof *out);
  OxPipeline p;
  OxCheckConfig checks;
  char *why = NULL;
  if (!ox_document_whatif_pipeline(self, &p, &checks, &why)) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "%s", why);
    g_free(why);
    return FALSE;
  }
  OxDiagList d;
  ox_diags_init(&d, NULL);
  int rc = ox_whatif_run(self->history->input, &p, &checks, self->history->trace, spec, out, &d);
  if (rc != 0) {
    char *msg = diags_text(&d);
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", msg);
    g_free(msg);
  }
  ox_diags_clear(&d);
  ox_pipeline_free(&p);
  return rc == 0;
}

typedef enum { WHATIF_QUEUED, WHATIF_RUNNING, WHATIF_DONE, WHATIF_FAILED } WhatifState;

typedef struct WhatifEntry {
  WhatifState state;
  OxWhatifResult res;
  OxHistory *h;     /* keeps the base trace the result points at alive */
  char *error;
} WhatifEntry;

static void whatif_entry_free(gpointer p) {
  WhatifEntry *e = p;
  ox_whatif_result_free(&e->res);
  ox_history_unref(e->h);
  g_free(e->error);
  g_free(e);
}

typedef struct WhatifJob {
  guint gen;
  char *option;
  OxHistory *h;           /* ref: input and base trace, read-only on the worker */
  OxPipeline p;
  OxCheckConfig checks;
  atomic_bool cancel;
  OxWhatifResult res;
  char *error;
} WhatifJob;

static void whatif_job_free(gpointer p) {
  WhatifJob *j = p;
  g_free(j->option);
  ox_history_unref(j->h);
  ox_pipeline_free(&j->p);
  ox_whatif_result_free(&j->res);
  g_free(j->error);
  g_free(j);
}

static void whatif_thread(GTask *task, gpointer src, gpointer data, GCancellable *c) {
  (void)src;
  (void)c;
  WhatifJob *j = data;
  const char *opts[1] = {j->option};
  OxWhatifSpec spec = {.options = opts, .n_options = 1, .cancel = &j->cancel};
  OxDiagList d;
  ox_diags_init(&d, NULL);
  if (ox_whatif_run(j->h->input, &j->p, &j->checks, j->h->trace, &spec, &j->res, &d) == 0) {
    ox_graph_free(j->res.graph); /* hints need the decisions and counts, not the graph */
    j->res.graph = NULL;
  } else {
    j->error = diags_text(&d);
  }
  ox_diags_clear(&d);
  g_task_return_boolean(task, TRUE);
}

static void whatif_pump(OxDocument *self);

static void whatif_done(GObject *src, GAsyncResult *res, gpointer data) {
  (void)data;
  OxDocument *self = OX_DOCUMENT(src);
  WhatifJob *j = g_task_get_task_data(G_TASK(res));
  if (self->whatif_job == j) self->whatif_job = NULL;
  WhatifEntry *e = j->gen == self->whatif_gen ? g_hash_table_lookup(self->whatif, j->option) : NULL;
  if (e) {
    self->whatif_runs++;
    if (j->error) {
      e->state = WHATIF_FAILED;
      e->error = g_steal_pointer(&j->error);
    } else {
      e->state = WHATIF_DONE;
      e->res = j->res;
      memset(&j->res, 0, sizeof j->res);
      e->h = ox_history_ref(j->h);
    }
    g_signal_emit(self, signals[SIGNAL_WHATIF_DONE], 0, j->option);
  }
  whatif_pump(self);
}

static void whatif_pump(OxDocument *self) {
  while (!self->whatif_job && !g_queue_is_empty(self->whatif_queue)) {
    char *option = g_queue_pop_head(self->whatif_queue);
    WhatifEntry *e = g_hash_table_lookup(self->whatif, option);
    if (!e || e->state != WHATIF_QUEUED) {
      g_free(option);
      continue;
    }
    WhatifJob *j = g_new0(WhatifJob, 1);
    char *why = NULL;
    if (!self->history || !ox_document_whatif_pipeline(self, &j->p, &j->checks, &why)) {
      e->state = WHATIF_FAILED;
      e->error = why ? why : g_strdup("no graph loaded");
      whatif_job_free(j);
      g_signal_emit(self, signals[SIGNAL_WHATIF_DONE], 0, option);
      g_free(option);
      continue;
    }
    e->state = WHATIF_RUNNING;
    j->gen = self->whatif_gen;
    j->option = option;
    j->h = ox_history_ref(self->history);
    atomic_init(&j->cancel, false);
    self->whatif_job = j;
    GTask *task = g_task_new(self, NULL, whatif_done, NULL);
    g_task_set_task_data(task, j, whatif_job_free);
    g_task_run_in_thread(task, whatif_thread);
    g_object_unref(task);
  }
}

/* The shown history changed: its what-ifs are dropped (a running one is cancelled between
 * passes and its result ignored). */
static void whatif_reset(OxDocument *self) {
  self->whatif_gen++;
  if (self->whatif_job) atomic_store(&self->whatif_job->cancel, true);
  self->whatif_job = NULL;
  g_hash_table_remove_all(self->whatif);
  g_queue_clear_full(self->whatif_queue, g_free);
}

const OxWhatifResult *ox_document_get_whatif(OxDocument *self, const char *option, gboolean start,
                                             const char **error) {
  if (error) *error = NULL;
  if (!option || !self->history || !self->history->trace) return NULL;
  WhatifEntry *e = g_hash_table_lookup(self->whatif, option);
  if (!e) {
    if (!start) return NULL;
    e = g_new0(WhatifEntry, 1);
    e->state = WHATIF_QUEUED;
    g_hash_table_insert(self->whatif, g_strdup(option), e);
    g_queue_push_tail(self->whatif_queue, g_strdup(option));
    whatif_pump(self);
    e = g_hash_table_lookup(self->whatif, option); /* a failure may have been recorded at once */
  }
  if (e && e->state == WHATIF_FAILED && error) *error = e->error;
  return e && e->state == WHATIF_DONE ? &e->res : NULL;
}

guint ox_document_get_whatif_runs(OxDocument *self) { return self->whatif_runs; }

void ox_document_whatif_drop_queued(OxDocument *self) {
  char *option;
  while ((option = g_queue_pop_head(self->whatif_queue))) {
    WhatifEntry *e = g_hash_table_lookup(self->whatif, option);
    if (e && e->state == WHATIF_QUEUED) g_hash_table_remove(self->whatif, option);
    g_free(option);
  }
}

gboolean ox_document_add_option(OxDocument *self, const char *option, GError **error) {
  OxPipeline p;
  OxCheckConfig checks;
  char *why = NULL;
  if (!ox_document_whatif_pipeline(self, &p, &checks, &why)) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "%s", why);
    g_free(why);
    return FALSE;
  }
  OxDiagList d;
  ox_diags_init(&d, NULL);
  if (ox_pipeline_set_option(&p, option, &d) != 0) {
    char *msg = diags_text(&d);
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "%s", msg);
    g_free(msg);
    ox_diags_clear(&d);
    ox_pipeline_free(&p);
    return FALSE;
  }
  ox_diags_clear(&d);
  OxPipeline *heap = g_new0(OxPipeline, 1);
  *heap = p;
  ox_document_set_pipeline(self, heap, &checks);
  return TRUE;
}

gboolean ox_document_get_busy(OxDocument *self) { return self->busy; }
double ox_document_get_progress(OxDocument *self) { return self->progress; }
const char *ox_document_get_status(OxDocument *self) { return self->status; }

/* ---- stepping */

guint ox_document_get_position(OxDocument *self) { return self->position; }

const OxStep *ox_document_get_step(OxDocument *self) {
  const OxTrace *t = ox_document_get_trace(self);
  return (t && self->position && self->position <= t->n_steps) ? &t->steps[self->position - 1] : NULL;
}

void ox_document_set_position(OxDocument *self, guint position) {
  guint n = ox_document_get_n_steps(self);
  if (position > n) position = n;
  if (position == self->position) return;
  self->position = position;
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_POSITION]);
  document_refresh(self);
}

gboolean ox_document_step_visible(OxDocument *self, guint position) {
  const OxTrace *t = ox_document_get_trace(self);
  if (!t || position == 0 || position > t->n_steps) return FALSE;
  const OxStep *s = &t->steps[position - 1];
  guint bit = s->kind == OX_STEP_APPLIED ? OX_FILTER_APPLIED
              : s->kind == OX_STEP_REJECTED ? OX_FILTER_REJECTED
                                            : OX_FILTER_CHECK_FAILED;
  if (!(self->filter_kinds & bit)) return FALSE;
  if (self->filter_pass && g_strcmp0(self->filter_pass, s->pass) != 0) return FALSE;
  if (self->filter_touching && !g_hash_table_contains(self->touching, GUINT_TO_POINTER(position))) return FALSE;
  return TRUE;
}

gboolean ox_document_step_next(OxDocument *self) {
  guint n = ox_document_get_n_steps(self);
  for (guint p = self->position + 1; p <= n; p++)
    if (ox_document_step_visible(self, p)) {
      ox_document_set_position(self, p);
      return TRUE;
    }
  return FALSE;
}

gboolean ox_document_step_prev(OxDocument *self) {
  if (self->position == 0) return FALSE;
  for (guint p = self->position - 1; p > 0; p--)
    if (ox_document_step_visible(self, p)) {
      ox_document_set_position(self, p);
      return TRUE;
    }
  ox_document_set_position(self, 0); /* before every visible step: the input graph */
  return TRUE;
}

gboolean ox_document_step_first(OxDocument *self) {
  if (self->position == 0) return FALSE;
  ox_document_set_position(self, 0);
  return TRUE;
}

gboolean ox_document_step_last(OxDocument *self) {
  guint n = ox_document_get_n_steps(self);
  for (guint p = n; p > 0; p--)
    if (ox_document_step_visible(self, p)) {
      if (p == self->position) return FALSE;
      ox_document_set_position(self, p);
      return TRUE;
    }
  return FALSE;
}

gboolean ox_document_get_show_before(OxDocument *self) { return self->show_before; }
void ox_document_set_show_before(OxDocument *self, gboolean before) {
  before = !!before;
  if (before == self->show_before) return;
  self->show_before = before;
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_SHOW_BEFORE]);
  document_refresh(self);
}

/* ---- selection */

const char *ox_document_get_selected(OxDocument *self) { return self->selected; }

static void touching_update(OxDocument *self) {
  g_hash_table_remove_all(self->touching);
  const OxTrace *t = ox_document_get_trace(self);
  if (!t || !self->selected) return;
  GArray *a = ox_document_explain(self, self->selected);
  for (guint i = 0; i < a->len; i++) g_hash_table_add(self->touching, GUINT_TO_POINTER(g_array_index(a, guint, i)));
  g_array_free(a, TRUE);
}

gboolean ox_document_select(OxDocument *self, const char *name) {
  if (name && !*name) name = NULL;
  if (name && (!self->history || !g_hash_table_contains(self->history->by_name, name))) return FALSE;
  if (g_strcmp0(name, self->selected) == 0) return TRUE;
  g_free(self->selected);
  self->selected = g_strdup(name);
  touching_update(self);
  if (self->filter_touching) timeline_rebuild(self);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_SELECTED]);
  g_signal_emit(self, signals[SIGNAL_FRAME_CHANGED], 0);
  return TRUE;
}

/* ---- search */

typedef enum { SEARCH_TEXT, SEARCH_REGEX, SEARCH_FAMILY, SEARCH_NAME, SEARCH_TARGET } SearchMode;

/* Case-insensitive substring test of an ASCII needle already folded to lower case, without
 * allocating: a search runs over every node of a 100k-node graph on every keystroke. */
static inline char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c; }

static gboolean ascii_contains(const char *hay, const char *needle) {
  if (!*needle) return TRUE;
  char c0 = needle[0];
  for (const char *h = hay; *h; h++) {
    if (lower_ascii(*h) != c0) continue;
    const char *a = h + 1, *b = needle + 1;
    while (*b && *a && lower_ascii(*a) == *b) a++, b++;
    if (!*b) return TRUE;
  }
  return FALSE;
}

static gint cmp_by_label(gconstpointer a, gconstpointer b, gpointer lab) {
  guint64 x = ((const guint64 *)lab)[*(const OxNodeId *)a], y = ((const guint64 *)lab)[*(const OxNodeId *)b];
  return x < y ? -1 : x > y;
}

static void search_update(OxDocument *self) {
  guint old = self->hits->len;
  g_ptr_array_set_size(self->hits, 0);
  g_hash_table_remove_all(self->hit_uids);
  g_clear_pointer(&self->search_error, g_free);
  const char *q = self->search_text;
  OxGraph *g = self->history ? ox_document_get_graph(self) : NULL;
  if (q && *q && g) {
    SearchMode mode = SEARCH_TEXT;
    GRegex *re = NULL;
    OxFamily fam = OX_FAMILY_UNKNOWN;
    size_t ql = strlen(q);
    if (g_str_has_prefix(q, "re:") || (ql > 2 && q[0] == '/' && q[ql - 1] == '/')) {
      char *pat = q[0] == '/' ? g_strndup(q + 1, ql - 2) : g_strdup(q + 3);
      GError *err = NULL;
      re = g_regex_new(pat, G_REGEX_OPTIMIZE, 0, &err);
      g_free(pat);
      if (!re) {
        self->search_error = g_strdup(err->message);
        g_error_free(err);
      }
      mode = SEARCH_REGEX;
    } else if (g_str_has_prefix(q, "op:")) {
      mode = SEARCH_FAMILY;
      if (!ox_family_from_name(q + 3, &fam))
        self->search_error = g_strdup_printf("unknown op family '%s' (matmul, norm, pointwise, plumbing, view, "
                                             "reduction, input, output, unknown)",
                                             q + 3);
    } else if (g_str_has_prefix(q, "name:")) {
      mode = SEARCH_NAME;
    } else if (g_str_has_prefix(q, "target:")) {
      mode = SEARCH_TARGET;
    }
    char *needle = g_utf8_casefold(mode == SEARCH_NAME ? q + 5 : mode == SEARCH_TARGET ? q + 7 : q, -1);
    guint k = ox_document_get_shown_gstep(self);
    gboolean ascii = TRUE;
    for (const char *c = needle; *c && ascii; c++) ascii = !((guchar)*c & 0x80);
    if (!self->search_error) {
      /* Nodes are visited in memory order (the list order scatters over the node array: a cache
       * miss per node at 100k), targets (interned, shared by many nodes) are tested once each,
       * and the hits are put in graph order at the end. */
      GArray *found = g_array_new(FALSE, FALSE, sizeof(OxNodeId));
      enum { TCACHE = 256 };
      const char *tkey[TCACHE] = {0};
      gboolean tval[TCACHE] = {0};
      for (OxNodeId id = 1; id < g->n_nodes; id++) {
        const OxNode *n = &g->nodes[id];
        if (n->erased) continue;
        gboolean hit = FALSE;
        switch (mode) {
        case SEARCH_REGEX: hit = g_regex_match(re, n->name, 0, NULL) || g_regex_match(re, n->target, 0, NULL); break;
        case SEARCH_FAMILY: hit = ox_node_family(g, n) == fam; break;
        case SEARCH_TEXT:
        case SEARCH_NAME:
        case SEARCH_TARGET: {
          const char *fields[2] = {mode == SEARCH_TARGET ? NULL : n->name, mode == SEARCH_NAME ? NULL : n->target};
          for (int f = 0; f < 2 && !hit; f++) {
            if (!fields[f]) continue;
            guint slot = (guint)(((guintptr)fields[f] >> 4) % TCACHE);
            if (f == 1 && tkey[slot] == fields[f]) {
              hit = tval[slot];
              continue;
            }
            if (ascii) {
              hit = ascii_contains(fields[f], needle);
            } else {
              char *hay = g_utf8_casefold(fields[f], -1);
              hit = strstr(hay, needle) != NULL;
              g_free(hay);
            }
            if (f == 1) {
              tkey[slot] = fields[f];
              tval[slot] = hit;
            }
          }
          break;
        }
        }
        if (hit) g_array_append_val(found, id);
      }
      const guint64 *lab = ox_graph_order_labels(g);
      g_array_sort_with_data(found, cmp_by_label, (gpointer)lab);
      for (guint i = 0; i < found->len; i++) {
        const OxNode *n = &g->nodes[g_array_index(found, OxNodeId, i)];
        g_ptr_array_add(self->hits, (gpointer)n->name);
        guint32 uid = ox_history_uid(self->history, n->name, k);
        if (uid) g_hash_table_add(self->hit_uids, GUINT_TO_POINTER(uid));
      }
      g_array_free(found, TRUE);
    }
    g_free(needle);
    if (re) g_regex_unref(re);
  }
  if (old != self->hits->len || self->hits->len) g_object_notify_by_pspec(G_OBJECT(self), props[PROP_N_HITS]);
}

void ox_document_set_search_text(OxDocument *self, const char *text) {
  if (text && !*text) text = NULL;
  if (g_strcmp0(text, self->search_text) == 0) return;
  g_free(self->search_text);
  self->search_text = g_strdup(text);
  search_update(self);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_SEARCH_TEXT]);
  g_signal_emit(self, signals[SIGNAL_FRAME_CHANGED], 0);
}

const char *ox_document_get_search_text(OxDocument *self) { return self->search_text; }
const char *ox_document_get_search_error(OxDocument *self) { return self->search_error; }
guint ox_document_get_n_hits(OxDocument *self) { return self->hits->len; }
const char *ox_document_get_hit(OxDocument *self, guint i) {
  return i < self->hits->len ? g_ptr_array_index(self->hits, i) : NULL;
}
gboolean ox_document_is_hit(OxDocument *self, guint32 uid) {
  return g_hash_table_contains(self->hit_uids, GUINT_TO_POINTER(uid));
}

static gint hit_index(OxDocument *self) {
  for (guint i = 0; i < self->hits->len && self->selected; i++)
    if (strcmp(g_ptr_array_index(self->hits, i), self->selected) == 0) return (gint)i;
  return -1;
}

gboolean ox_document_search_next(OxDocument *self) {
  guint n = self->hits->len;
  if (!n) return FALSE;
  gint i = hit_index(self);
  return ox_document_select(self, g_ptr_array_index(self->hits, i < 0 ? 0 : (guint)(i + 1) % n));
}

gboolean ox_document_search_prev(OxDocument *self) {
  guint n = self->hits->len;
  if (!n) return FALSE;
  gint i = hit_index(self);
  return ox_document_select(self, g_ptr_array_index(self->hits, i <= 0 ? n - 1 : (guint)i - 1));
}

/* ---- timeline */

static const char *kind_word(guint8 kind) {
  return kind == OX_STEP_APPLIED ? "applied" : kind == OX_STEP_REJECTED ? "rejected" : "check failed";
}

static void timeline_rebuild(OxDocument *self) {
  const OxTrace *t = ox_document_get_trace(self);
  GPtrArray *rows = g_ptr_array_new_with_free_func(g_object_unref);
  guint n = t ? t->n_steps : 0;
  for (guint i = 0; i < n;) {
    /* one group per contiguous run of a pass (a pass runs once per pipeline entry) */
    guint j = i;
    guint counts[3] = {0, 0, 0}, shown = 0;
    while (j < n && g_strcmp0(t->steps[j].pass, t->steps[i].pass) == 0 &&
           g_strcmp0(t->steps[j].phase, t->steps[i].phase) == 0) {
      counts[MIN(t->steps[j].kind, 2)]++;
      if (ox_document_step_visible(self, j + 1)) shown++;
      j++;
    }
    if (shown) {
      GString *sub = g_string_new(NULL);
      for (int k = 0; k < 3; k++)
        if (counts[k]) g_string_append_printf(sub, "%s%u %s", sub->len ? " · " : "", counts[k], kind_word((guint8)k));
      g_ptr_array_add(rows, step_item_new(TRUE, i + 1, 0, g_strdup_printf("%s (%s)", t->steps[i].pass,
                                                                       t->steps[i].phase ? t->steps[i].phase : "?"),
                                          g_string_free(sub, FALSE)));
      for (guint k = i; k < j; k++) {
        if (!ox_document_step_visible(self, k + 1)) continue;
        const OxStep *s = &t->steps[k];
        char *title;
        if (s->rule_file) {
          /* a user rule's step says where the rule is written (docs/rules.md) */
          char *base = g_path_get_basename(s->rule_file);
          title = g_strdup_printf("#%u %s %s · %s:%u", k + 1, s->rule ? s->rule : s->pass, s->anchor ? s->anchor : "",
                                  base, s->rule_line);
          g_free(base);
        } else {
          title = g_strdup_printf("#%u %s %s", k + 1, s->rule ? s->rule : s->pass, s->anchor ? s->anchor : "");
        }
        char *subtitle;
        if (s->kind == OX_STEP_APPLIED) {
          subtitle = g_strdup_printf("applied: −%u +%u nodes", s->n_removed, s->n_added);
        } else {
          char *why = ox_reason_format(&s->reason);
          subtitle = g_strdup_printf("%s: %s", kind_word(s->kind), why ? why : "");
          free(why);
        }
        g_ptr_array_add(rows, step_item_new(FALSE, k + 1, s->kind, title, subtitle));
      }
    }
    i = j;
  }
  g_list_store_splice(self->timeline, 0, g_list_model_get_n_items(G_LIST_MODEL(self->timeline)), rows->pdata,
                      rows->len);
  g_ptr_array_unref(rows);
}

GListModel *ox_document_get_timeline(OxDocument *self) { return G_LIST_MODEL(self->timeline); }

guint ox_document_timeline_row(OxDocument *self, guint position) {
  guint n = g_list_model_get_n_items(G_LIST_MODEL(self->timeline));
  for (guint i = 0; i < n; i++) {
    g_autoptr(OxStepItem) it = g_list_model_get_item(G_LIST_MODEL(self->timeline), i);
    if (!it->header && it->position == position) return i;
  }
  return G_MAXUINT;
}

guint ox_document_get_filter_kinds(OxDocument *self) { return self->filter_kinds; }
void ox_document_set_filter_kinds(OxDocument *self, guint kinds) {
  kinds &= OX_FILTER_ALL;
  if (kinds == self->filter_kinds) return;
  self->filter_kinds = kinds;
  timeline_rebuild(self);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_FILTER_KINDS]);
}

const char *ox_document_get_filter_pass(OxDocument *self) { return self->filter_pass; }
void ox_document_set_filter_pass(OxDocument *self, const char *pass) {
  if (pass && !*pass) pass = NULL;
  if (g_strcmp0(pass, self->filter_pass) == 0) return;
  g_free(self->filter_pass);
  self->filter_pass = g_strdup(pass);
  timeline_rebuild(self);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_FILTER_PASS]);
}

gboolean ox_document_get_filter_touching(OxDocument *self) { return self->filter_touching; }
void ox_document_set_filter_touching(OxDocument *self, gboolean touching) {
  touching = !!touching;
  if (touching == self->filter_touching) return;
  self->filter_touching = touching;
  timeline_rebuild(self);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_FILTER_TOUCHING]);
}

GArray *ox_document_explain(OxDocument *self, const char *name) {
  GArray *a = g_array_new(FALSE, FALSE, sizeof(guint));
  const OxTrace *t = ox_document_get_trace(self);
  if (!t || !name) return a;
  uint32_t n = ox_trace_steps_for_node(t, name, NULL, 0);
  if (!n) return a;
  uint32_t *idx = g_new(uint32_t, n);
  ox_trace_steps_for_node(t, name, idx, n);
  for (uint32_t i = 0; i < n; i++) {
    guint p = idx[i] + 1;
    g_array_append_val(a, p);
  }
  g_free(idx);
  return a;
}

/* ---- export */

GBytes *ox_export_bytes(const OxGraph *g, const OxTrace *t, const char *format, gboolean edge_shapes,
                        char **note_out, GError **error) {
  OxBuf b;
  ox_buf_init(&b);
  if (strcmp(format, "trace") == 0) {
    if (!t) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "there is no trace to export");
      return NULL;
    }
    ox_trace_write_json(t, &b);
  } else if (!g) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "there is no graph to export");
    return NULL;
  } else if (strcmp(format, "json") == 0) {
    OxGraph *one = (OxGraph *)g;
    OxDoc doc = {.format = OX_FMT_JSON, .graphs = &one, .n_graphs = 1, .record = NULL};
    ox_write_json(&doc, &b);
  } else if (strcmp(format, "fx") == 0) {
    ox_write_fx_text(g, &b);
  } else if (strcmp(format, "dot") == 0 || strcmp(format, "svg") == 0 || strcmp(format, "png") == 0) {
    OxDotOptions o = {.edge_shapes = edge_shapes, .highlight = NULL, .rankdir = "TB"};
    if (strcmp(format, "dot") == 0) {
      ox_write_dot(g, &o, &b);
    } else {
      /* Graphviz in the helper within 10 s, else our layered layout drawn by it: a 100k-node
       * graph exports in seconds instead of hanging the export */
      char err[512] = "", note[300] = "";
      OxLayoutOptions lo = {.time_budget = 10};
      if (note_out) *note_out = NULL;
      if (ox_render_auto(g, &o, format, &lo, &b, note, sizeof note, err, sizeof err) != 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", err);
        ox_buf_free(&b);
        return NULL;
      }
      if (note_out && note[0]) *note_out = g_strdup(note);
    }
  } else {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "unknown export format '%s'", format);
    return NULL;
  }
  GBytes *bytes = g_bytes_new(b.data ? b.data : "", b.len);
  ox_buf_free(&b);
  return bytes;
}


/* A value of graph `from` copied into graph `to`, node references resolved by name (a name `to`
 * does not have becomes None). */
static OxValue remap_value(const OxGraph *from, OxGraph *to, const OxValue *v) {
  if (v->kind == OX_V_NODE) {
    const OxNode *n = ox_graph_node(from, v->u.node);
    OxNodeId id = n ? ox_graph_find(to, n->name) : 0;
    return id ? ox_value_node(id) : ox_value_none();
  }
  if ((v->kind == OX_V_LIST || v->kind == OX_V_TUPLE || v->kind == OX_V_SLICE || v->kind == OX_V_DICT) && v->n) {
    OxValue *items = g_new(OxValue, v->n);
    for (guint32 i = 0; i < v->n; i++) items[i] = remap_value(from, to, &v->u.items[i]);
    OxValue r = v->kind == OX_V_DICT ? ox_graph_value_dict(to, (const char *const *)v->keys, items, v->n)
                                     : ox_graph_value_seq(to, (OxValueKind)v->kind, items, v->n);
    g_free(items);
    return r;
  }
  return ox_graph_value_copy(to, v);
}

static guint8 state_mark(guint8 st) {
  switch ((OxNodeState)st) {
  case OX_NS_ANCHOR: return OX_DOT_MARK_ANCHOR;
  case OX_NS_MATCHED: return OX_DOT_MARK_MATCHED;
  case OX_NS_REMOVED: return OX_DOT_MARK_REMOVED;
  case OX_NS_ADDED: return OX_DOT_MARK_ADDED;
  case OX_NS_DIMMED: return OX_DOT_MARK_DIMMED;
  default: return OX_DOT_MARK_NONE;
  }
}

OxGraph *ox_document_step_picture(OxDocument *self, guint8 **marks, guint32 **fills) {
  *marks = NULL;
  *fills = NULL;
  if (!self->history) return NULL;
  const OxHistory *h = self->history;
  OxGraph *shown = ox_document_get_graph(self);
  OxGraph *pic = ox_graph_clone(shown);
  guint k = ox_document_get_shown_gstep(self);
  const OxStep *st = ox_document_get_step(self);
  /* the after view of a rewrite shows the nodes it removed too: add them, wired to their inputs */
  GHashTable *removed = g_hash_table_new(g_str_hash, g_str_equal);
  if (st && !self->show_before && self->k_before != self->k_after && st->n_removed && self->g_before) {
    OxGraph *gb = self->g_before;
    for (guint32 i = 0; i < st->n_removed; i++) g_hash_table_add(removed, (gpointer)st->removed[i]);
    OX_GRAPH_FOREACH(gb, id) {
      const OxNode *n = &gb->nodes[id];
      if (!g_hash_table_contains(removed, n->name)) continue;
      OxValue args = remap_value(gb, pic, &n->args), kwargs = remap_value(gb, pic, &n->kwargs);
      OxNodeId nid = ox_graph_add_node(pic, (OxOp)n->op, n->name, n->target, args, kwargs);
      ox_graph_set_meta(pic, nid, &n->meta);
    }
  }
  guint n_st;
  const guint8 *states = ox_document_get_node_states(self, &n_st);
  *marks = g_new0(guint8, pic->n_nodes + 1);
  *fills = g_new0(guint32, pic->n_nodes + 1);
  OX_GRAPH_FOREACH(pic, id) {
    const OxNode *n = &pic->nodes[id];
    gboolean gone = g_hash_table_contains(removed, n->name) && !ox_graph_find(shown, n->name);
    guint32 uid = ox_history_uid(h, n->name, gone ? self->k_before : k);
    guint8 state = uid && uid < n_st ? states[uid] : OX_NS_NORMAL;
    if (gone) state = OX_NS_REMOVED;
    guint32 fill = ox_family_color(ox_node_family(pic, n));
    if (state == OX_NS_REMOVED) fill = OX_FILL_REMOVED;
    if (state == OX_NS_ADDED) fill = OX_FILL_ADDED;
    if (state == OX_NS_DIMMED) {
      /* the canvas draws untouched nodes at 35 % over its background */
      guint32 r = (fill >> 16) & 0xff, g = (fill >> 8) & 0xff, b = fill & 0xff;
      fill = (((r * 35 + 250 * 65) / 100) << 16) | (((g * 35 + 250 * 65) / 100) << 8) | ((b * 35 + 247 * 65) / 100);
    }
    (*marks)[id] = state_mark(state);
    (*fills)[id] = OX_DOT_RGB(fill);
  }
  g_hash_table_destroy(removed);
  return pic;
}

GBytes *ox_export_picture_bytes(const OxGraph *g, const guint8 *marks, const guint32 *fills, const char *format,
                                gboolean edge_shapes, char **note_out, GError **error) {
  if (note_out) *note_out = NULL;
  if (strcmp(format, "svg") != 0 && strcmp(format, "png") != 0)
    return ox_export_bytes(g, NULL, format, edge_shapes, note_out, error);
  /* the families drawn, in the legend with the canvas's colours */
  gboolean present[OX_FAMILY_COUNT] = {FALSE};
  OX_GRAPH_FOREACH(g, id) present[ox_node_family(g, &g->nodes[id])] = TRUE;
  const char *names[OX_FAMILY_COUNT];
  guint32 colors[OX_FAMILY_COUNT];
  guint n_fam = 0;
  for (int f = 0; f < OX_FAMILY_COUNT; f++)
    if (present[f]) {
      names[n_fam] = ox_family_name((OxFamily)f);
      colors[n_fam++] = ox_family_color((OxFamily)f);
    }
  static const guint32 mark_rgb[OX_DOT_MARKS] = {0x555555, OX_COLOR_MATCH, OX_COLOR_REMOVED, OX_COLOR_ADDED,
                                                OX_COLOR_MATCH, OX_COLOR_DIMMED};
  OxDotOptions o = {.edge_shapes = edge_shapes, .highlight = marks, .rankdir = "TB", .fill = fills,
                    .mark_rgb = mark_rgb, .legend = TRUE, .legend_fill_names = names, .legend_fills = colors,
                    .n_legend_fills = n_fam};
  OxBuf b;
  ox_buf_init(&b);
  char err[512] = "", note[300] = "";
  OxLayoutOptions lo = {.time_budget = 10};
  if (ox_render_auto(g, &o, format, &lo, &b, note, sizeof note, err, sizeof err) != 0) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", err);
    ox_buf_free(&b);
    return NULL;
  }
  if (note_out && note[0]) *note_out = g_strdup(note);
  GBytes *bytes = g_bytes_new(b.data ? b.data : "", b.len);
  ox_buf_free(&b);
  return bytes;
}

gboolean ox_document_export(OxDocument *self, const char *format, const char *path, GError **error) {
  GBytes *bytes = NULL;
  if ((!strcmp(format, "svg") || !strcmp(format, "png")) && self->history) {
    /* a picture keeps what the canvas shows: the step's marks in its palette */
    guint8 *marks;
    guint32 *fills;
    OxGraph *pic = ox_document_step_picture(self, &marks, &fills);
    bytes = ox_export_picture_bytes(pic, marks, fills, format, FALSE, NULL, error);
    ox_graph_free(pic);
    g_free(marks);
    g_free(fills);
  } else {
    bytes = ox_export_bytes(self->history ? ox_document_get_graph(self) : NULL, ox_document_get_trace(self), format,
                            FALSE, NULL, error);
  }
  if (!bytes) return FALSE;
  char err[512];
  gsize len;
  const void *data = g_bytes_get_data(bytes, &len);
  gboolean ok = ox_write_file_atomic(path, data, len, err, sizeof err);
  if (!ok) g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", err);
  g_bytes_unref(bytes);
  return ok;
}

/* ---- GObject */

static void ox_document_get_property(GObject *o, guint id, GValue *v, GParamSpec *ps) {
  OxDocument *self = OX_DOCUMENT(o);
  switch (id) {
  case PROP_PATH: g_value_set_string(v, self->path); break;
  case PROP_N_STEPS: g_value_set_uint(v, ox_document_get_n_steps(self)); break;
  case PROP_POSITION: g_value_set_uint(v, self->position); break;
  case PROP_SHOW_BEFORE: g_value_set_boolean(v, self->show_before); break;
  case PROP_SELECTED: g_value_set_string(v, self->selected); break;
  case PROP_SEARCH_TEXT: g_value_set_string(v, self->search_text); break;
  case PROP_N_HITS: g_value_set_uint(v, self->hits->len); break;
  case PROP_FILTER_KINDS: g_value_set_uint(v, self->filter_kinds); break;
  case PROP_FILTER_PASS: g_value_set_string(v, self->filter_pass); break;
  case PROP_FILTER_TOUCHING: g_value_set_boolean(v, self->filter_touching); break;
  case PROP_BUSY: g_value_set_boolean(v, self->busy); break;
  case PROP_PROGRESS: g_value_set_double(v, self->progress); break;
  case PROP_STATUS: g_value_set_string(v, self->status); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(o, id, ps);
  }
}

static void ox_document_set_property(GObject *o, guint id, const GValue *v, GParamSpec *ps) {
  OxDocument *self = OX_DOCUMENT(o);
  switch (id) {
  case PROP_POSITION: ox_document_set_position(self, g_value_get_uint(v)); break;
  case PROP_SHOW_BEFORE: ox_document_set_show_before(self, g_value_get_boolean(v)); break;
  case PROP_SELECTED: ox_document_select(self, g_value_get_string(v)); break;
  case PROP_SEARCH_TEXT: ox_document_set_search_text(self, g_value_get_string(v)); break;
  case PROP_FILTER_KINDS: ox_document_set_filter_kinds(self, g_value_get_uint(v)); break;
  case PROP_FILTER_PASS: ox_document_set_filter_pass(self, g_value_get_string(v)); break;
  case PROP_FILTER_TOUCHING: ox_document_set_filter_touching(self, g_value_get_boolean(v)); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(o, id, ps);
  }
}

static void ox_document_dispose(GObject *o) {
  OxDocument *self = OX_DOCUMENT(o);
  whatif_reset(self);
  g_clear_object(&self->timeline);
  G_OBJECT_CLASS(ox_document_parent_class)->dispose(o);
}

static void ox_document_finalize(GObject *o) {
  OxDocument *self = OX_DOCUMENT(o);
  ox_doc_free(self->doc);
  g_free(self->path);
  graph_release(self, &self->g_after);
  graph_release(self, &self->g_before);
  ox_history_unref(self->history);
  ox_document_set_pipeline(self, NULL, NULL);
  g_free(self->status);
  g_strfreev(self->shape_specs);
  g_free(self->shapes_file);
  g_free(self->shapes_note);
  g_strfreev(self->loaded_specs);
  g_free(self->loaded_shapes_file);
  g_free(self->trace_path);
  g_clear_pointer(&self->entries, g_ptr_array_unref);
  g_hash_table_destroy(self->entry_hist);
  g_array_unref(self->warnings);
  g_free(self->states);
  g_array_free(self->edges, TRUE);
  g_array_free(self->overlay, TRUE);
  g_array_free(self->dirty, TRUE);
  g_free(self->selected);
  g_free(self->search_text);
  g_free(self->search_error);
  g_ptr_array_free(self->hits, TRUE);
  g_hash_table_destroy(self->hit_uids);
  g_free(self->filter_pass);
  g_hash_table_destroy(self->touching);
  g_hash_table_destroy(self->whatif);
  g_queue_free_full(self->whatif_queue, g_free);
  G_OBJECT_CLASS(ox_document_parent_class)->finalize(o);
}

static void ox_document_class_init(OxDocumentClass *k) {
  GObjectClass *oc = G_OBJECT_CLASS(k);
  oc->get_property = ox_document_get_property;
  oc->set_property = ox_document_set_property;
  oc->dispose = ox_document_dispose;
  oc->finalize = ox_document_finalize;
  GParamFlags ro = G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;
  GParamFlags rw = G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;
  props[PROP_PATH] = g_param_spec_string("path", NULL, NULL, NULL, ro);
  props[PROP_N_STEPS] = g_param_spec_uint("n-steps", NULL, NULL, 0, G_MAXUINT, 0, ro);
  props[PROP_POSITION] = g_param_spec_uint("position", NULL, NULL, 0, G_MAXUINT, 0, rw);
  props[PROP_SHOW_BEFORE] = g_param_spec_boolean("show-before", NULL, NULL, FALSE, rw);
  props[PROP_SELECTED] = g_param_spec_string("selected", NULL, NULL, NULL, rw);
  props[PROP_SEARCH_TEXT] = g_param_spec_string("search-text", NULL, NULL, NULL, rw);
  props[PROP_N_HITS] = g_param_spec_uint("n-hits", NULL, NULL, 0, G_MAXUINT, 0, ro);
  props[PROP_FILTER_KINDS] = g_param_spec_uint("filter-kinds", NULL, NULL, 0, OX_FILTER_ALL, OX_FILTER_ALL, rw);
  props[PROP_FILTER_PASS] = g_param_spec_string("filter-pass", NULL, NULL, NULL, rw);
  props[PROP_FILTER_TOUCHING] = g_param_spec_boolean("filter-touching", NULL, NULL, FALSE, rw);
  props[PROP_BUSY] = g_param_spec_boolean("busy", NULL, NULL, FALSE, ro);
  props[PROP_PROGRESS] = g_param_spec_double("progress", NULL, NULL, 0, 1, 0, ro);
  props[PROP_STATUS] = g_param_spec_string("status", NULL, NULL, NULL, ro);
  g_object_class_install_properties(oc, N_PROPS, props);
  signals[SIGNAL_HISTORY_CHANGED] =
    g_signal_new("history-changed", G_TYPE_FROM_CLASS(k), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  signals[SIGNAL_FRAME_CHANGED] =
    g_signal_new("frame-changed", G_TYPE_FROM_CLASS(k), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  signals[SIGNAL_WHATIF_DONE] = g_signal_new("whatif-done", G_TYPE_FROM_CLASS(k), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                             NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void ox_document_init(OxDocument *self) {
  self->edges = g_array_new(FALSE, FALSE, sizeof(OxFrameEdge));
  self->overlay = g_array_new(FALSE, FALSE, sizeof(guint32));
  self->dirty = g_array_new(FALSE, FALSE, sizeof(guint32));
  self->hits = g_ptr_array_new();
  self->hit_uids = g_hash_table_new(NULL, NULL);
  self->touching = g_hash_table_new(NULL, NULL);
  self->timeline = g_list_store_new(OX_TYPE_STEP_ITEM);
  self->filter_kinds = OX_FILTER_ALL;
  ox_check_config_default(&self->checks);
  self->entry_hist = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)ox_history_unref);
  self->pending_graph = G_MAXUINT;
  self->warnings = g_array_new(FALSE, TRUE, sizeof(OxLoadWarning));
  g_array_set_clear_func(self->warnings, warning_clear);
  self->whatif = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, whatif_entry_free);
  self->whatif_queue = g_queue_new();
}
