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
#include "ox-document-private.h"

#include <string.h>

#include "ops/ox_ops.h"
#include "run/ox_coverage.h"

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
  case OX_OPID_EMBEDDING_BAG: case OX_OPID_EINSUM: case OX_OPID_MULTI_HEAD_ATTENTION:
  case OX_OPID_SHIFTED_WINDOW_ATTENTION: case OX_OPID_TRANSFORMER_ENCODER_LAYER: case OX_OPID_TRANSFORMER_ENCODER:
  case OX_OPID_GRU: case OX_OPID_LSTM: case OX_OPID_RNN:
    return OX_FAMILY_MATMUL;
  case OX_OPID_LAYER_NORM: case OX_OPID_NATIVE_LAYER_NORM: case OX_OPID_BATCH_NORM:
    return OX_FAMILY_NORM;
  case OX_OPID_SOFTMAX: case OX_OPID_MAX_POOL2D: case OX_OPID_ADAPTIVE_AVG_POOL2D: case OX_OPID_AVG_POOL2D:
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

G_DEFINE_FINAL_TYPE(OxDocument, ox_document, G_TYPE_OBJECT)

GParamSpec *ox_document_props[N_PROPS];

guint ox_document_signals[N_SIGNALS];

static void document_refresh(OxDocument *self);

OxDocument *ox_document_new(void) { return g_object_new(OX_TYPE_DOCUMENT, NULL); }

void ox_document_set_status(OxDocument *self, const char *status) {
  if (g_strcmp0(self->status, status) == 0) return;
  g_free(self->status);
  self->status = g_strdup(status);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_STATUS]);
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
void ox_document_graph_release(OxDocument *self, OxGraph **g) {
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
    ox_document_graph_release(self, g);
    *g = h->input;
    *k = 0;
    return;
  }
  if (*g == h->input) *g = ox_graph_clone_lean(h->input, working_strings(h)); /* copy on first write */
  guint64 seek = *g ? ox_history_edits_between(h, *k, want) : G_MAXUINT64;
  guint64 fresh = h->input->n_live / 4 + ox_history_edits_between(h, 0, want);
  GError *err = NULL;
  if (seek > fresh || working_graph_restart(h, *g, seek, fresh)) {
    ox_document_graph_release(self, g);
    *g = ox_graph_clone_lean(h->input, working_strings(h));
    *k = 0;
  }
  if (!ox_history_seek(h, *g, *k, want, &err)) {
    ox_document_set_status(self, err ? err->message : "replay failed");
    g_clear_error(&err);
    ox_document_graph_release(self, g);
    *g = h->input;
    want = 0;
  }
  *k = want;
}

void ox_document_graphs_update(OxDocument *self) {
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
      ox_document_graph_release(self, &self->g_before);
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
    ox_document_graph_release(self, &self->g_before), self->k_before = kb;
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
guint ox_document_get_shown_gstep(OxDocument *self) {
  return self->show_before ? self->k_before : self->k_after;
}

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
void ox_document_frame_update(OxDocument *self) {
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
  guint n = 0; /* edges found: those past cap are counted, not stored */
  OxNodeId stack_ins[256], *ins = stack_ins;
  const char *name = h->name[uid];
  gboolean ghosts = !self->show_before && self->k_before != self->k_after;
  OxGraph *g = ox_document_get_graph(self);
  guint k = ox_document_get_shown_gstep(self);
  gboolean removed = self->states[uid] == OX_NS_REMOVED && !self->show_before;
  if (!removed) {
    OxNodeId id = ox_graph_find(g, name);
    guint32 m = id ? ox_ui_inputs(g, id, stack_ins, G_N_ELEMENTS(stack_ins), &ins) : 0;
    for (guint32 i = 0; i < m; i++) {
      guint32 from = ox_history_uid(h, g->nodes[ins[i]].name, k);
      if (from && n++ < cap) out[n - 1] = (OxFrameEdge){from, uid, FALSE};
    }
    if (ins != stack_ins) g_free(ins);
  }
  if (ghosts) {
    OxGraph *gb = self->g_before;
    OxNodeId id = ox_graph_find(gb, name);
    if (id && ox_history_uid(h, name, self->k_before) == uid) {
      guint32 m = ox_ui_inputs(gb, id, stack_ins, G_N_ELEMENTS(stack_ins), &ins);
      for (guint32 i = 0; i < m; i++) {
        guint32 from = ox_history_uid(h, gb->nodes[ins[i]].name, self->k_before);
        if (from && (removed || self->states[from] == OX_NS_REMOVED) && n++ < cap) out[n - 1] = (OxFrameEdge){from, uid, TRUE};
      }
      if (ins != stack_ins) g_free(ins);
    }
  }
  return n;
}

OxFrameEdge *ox_document_in_edges_all(OxDocument *self, guint32 uid, OxFrameEdge *stack, guint cap, guint *n) {
  guint m = ox_document_in_edges(self, uid, stack, cap);
  if (m <= cap) {
    *n = m;
    return stack;
  }
  OxFrameEdge *all = g_new(OxFrameEdge, m); /* a node with more in-edges than stack holds */
  *n = MIN(m, ox_document_in_edges(self, uid, all, m));
  return all;
}

static void edges_update(OxDocument *self) {
  g_array_set_size(self->edges, 0);
  self->edges_dirty = FALSE;
  if (!self->history) return;
  OxFrameEdge buf[512];
  for (guint32 uid = 1; uid < self->n_states; uid++) {
    if (self->states[uid] == OX_NS_HIDDEN) continue;
    guint m;
    OxFrameEdge *fe = ox_document_in_edges_all(self, uid, buf, G_N_ELEMENTS(buf), &m);
    g_array_append_vals(self->edges, fe, m);
    if (fe != buf) g_free(fe);
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
    ox_document_graphs_update(self);
    ox_document_frame_update(self);
    ox_document_search_update(self);
  }
  g_signal_emit(self, ox_document_signals[SIGNAL_FRAME_CHANGED], 0);
}

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
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_POSITION]);
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
  if (self->filter_cov) {
    if (g_strcmp0(self->filter_rule, s->rule) != 0) return FALSE;
    if (g_strcmp0(self->filter_phase, s->phase ? s->phase : "pre") != 0) return FALSE;
    if (self->filter_reason >= 0) {
      if (s->kind == OX_STEP_APPLIED || s->reason.code != self->filter_reason) return FALSE;
      char d[320];
      if (self->filter_detail && (!ox_coverage_detail_of(s, d, sizeof d) || strcmp(d, self->filter_detail) != 0))
        return FALSE;
    }
  }
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
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_SHOW_BEFORE]);
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
  if (self->filter_touching) ox_document_timeline_rebuild(self);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_SELECTED]);
  g_signal_emit(self, ox_document_signals[SIGNAL_FRAME_CHANGED], 0);
  return TRUE;
}

/* ---- search */

typedef enum { SEARCH_TEXT, SEARCH_REGEX, SEARCH_FAMILY, SEARCH_NAME, SEARCH_TARGET, SEARCH_LINEAGE, SEARCH_ANCHORS } SearchMode;

/* "anchors:": the nodes the steps the timeline shows started from (its filters: kinds, pass,
 * node, the Passes panel's entry), alive in the shown graph, each once */
static gboolean is_anchors_query(const char *q) {
  if (!q || !g_str_has_prefix(q, "anchors:")) return FALSE;
  for (q += 8; *q; q++)
    if (!g_ascii_isspace(*q)) return FALSE;
  return TRUE;
}

static GArray *step_anchors(OxDocument *self, const OxGraph *g) {
  GArray *found = g_array_new(FALSE, FALSE, sizeof(OxNodeId));
  const OxTrace *t = ox_document_get_trace(self);
  guint8 *seen = g_new0(guint8, g->n_nodes);
  for (guint p = 1; t && p <= t->n_steps; p++) {
    const char *a = t->steps[p - 1].anchor;
    if (!a || !ox_document_step_visible(self, p)) continue;
    OxNodeId id = ox_graph_find(g, a);
    if (!id || seen[id]) continue;
    seen[id] = 1;
    g_array_append_val(found, id);
  }
  g_free(seen);
  return found;
}

/* ---- lineage queries: up:NAME (what NAME depends on), down:NAME (what depends on it),
 * near:NAME (both), each optionally within N hops (up:NAME:2; near: defaults to 1) */

typedef struct {
  GArray *queue;   /* OxNodeId */
  guint32 *depth;  /* per node id: hops from the start, G_MAXUINT32 = not reached */
  guint32 next;    /* the depth being pushed */
} Walk;

static void walk_push(OxNodeId id, void *data) {
  Walk *w = data;
  if (w->depth[id] != G_MAXUINT32) return;
  w->depth[id] = w->next;
  g_array_append_val(w->queue, id);
}

/* The nodes of g reached from the query's node (not the node itself), or NULL with *err set. */
static GArray *lineage(const OxGraph *g, const char *q, char **err) {
  gboolean up = g_str_has_prefix(q, "up:") || g_str_has_prefix(q, "near:");
  gboolean down = g_str_has_prefix(q, "down:") || g_str_has_prefix(q, "near:");
  const char *rest = strchr(q, ':') + 1;
  char *name = g_strstrip(g_strdup(rest));
  guint32 max_depth = g_str_has_prefix(q, "near:") ? 1 : G_MAXUINT32;
  char *colon = strrchr(name, ':');
  if (colon) {
    char *end = NULL;
    guint64 v = g_ascii_strtoull(colon + 1, &end, 10);
    if (end == colon + 1 || *end || v == 0 || v > 1000000) {
      *err = g_strdup_printf("'%s' is not a number of hops (up:NAME:N counts from 1)", colon + 1);
      g_free(name);
      return NULL;
    }
    max_depth = (guint32)v;
    *colon = 0;
    g_strchomp(name);
  }
  OxNodeId start = *name ? ox_graph_find(g, name) : 0;
  if (!start) {
    *err = *name ? g_strdup_printf("no node '%s' in the graph at this step", name)
                 : g_strdup("up:, down: and near: take a node name (up:linear_3, near:relu_1:2)");
    g_free(name);
    return NULL;
  }
  g_free(name);
  Walk w = {g_array_new(FALSE, FALSE, sizeof(OxNodeId)), g_new(guint32, g->n_nodes), 0};
  memset(w.depth, 0xff, g->n_nodes * sizeof *w.depth);
  walk_push(start, &w);
  for (guint head = 0; head < w.queue->len; head++) {
    OxNodeId id = g_array_index(w.queue, OxNodeId, head);
    if (w.depth[id] >= max_depth) continue;
    const OxNode *n = &g->nodes[id];
    w.next = w.depth[id] + 1;
    if (up) {
      ox_value_foreach_node(&n->args, walk_push, &w);
      ox_value_foreach_node(&n->kwargs, walk_push, &w);
    }
    if (down)
      for (guint32 i = 0; i < n->n_users; i++) walk_push(n->users[i], &w);
  }
  g_free(w.depth);
  g_array_remove_index(w.queue, 0); /* the node itself */
  return w.queue;
}

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

void ox_document_search_update(OxDocument *self) {
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
    } else if (g_str_has_prefix(q, "up:") || g_str_has_prefix(q, "down:") || g_str_has_prefix(q, "near:")) {
      mode = SEARCH_LINEAGE;
    } else if (is_anchors_query(q)) {
      mode = SEARCH_ANCHORS;
    } else if (g_str_has_prefix(q, "anchors:")) {
      self->search_error = g_strdup("anchors: takes nothing after it (the timeline's filters choose the steps)");
    } else if (g_str_has_prefix(q, "name:")) {
      mode = SEARCH_NAME;
    } else if (g_str_has_prefix(q, "target:")) {
      mode = SEARCH_TARGET;
    }
    char *needle = g_utf8_casefold(mode == SEARCH_NAME ? q + 5 : mode == SEARCH_TARGET ? q + 7 : q, -1);
    guint k = ox_document_get_shown_gstep(self);
    gboolean ascii = TRUE;
    for (const char *c = needle; *c && ascii; c++) ascii = !((guchar)*c & 0x80);
    GArray *reached = mode == SEARCH_LINEAGE   ? lineage(g, q, &self->search_error)
                      : mode == SEARCH_ANCHORS ? step_anchors(self, g)
                                               : NULL;
    if (!self->search_error) {
      /* Nodes are visited in memory order (the list order scatters over the node array: a cache
       * miss per node at 100k), targets (interned, shared by many nodes) are tested once each,
       * and the hits are put in graph order at the end. */
      GArray *found = reached ? reached : g_array_new(FALSE, FALSE, sizeof(OxNodeId));
      enum { TCACHE = 256 };
      const char *tkey[TCACHE] = {0};
      gboolean tval[TCACHE] = {0};
      for (OxNodeId id = 1; id < g->n_nodes && !reached; id++) {
        const OxNode *n = &g->nodes[id];
        if (n->erased) continue;
        gboolean hit = FALSE;
        switch (mode) {
        case SEARCH_LINEAGE:
        case SEARCH_ANCHORS: break;
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
  if (old != self->hits->len || self->hits->len)
    g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_N_HITS]);
}

void ox_document_set_search_text(OxDocument *self, const char *text) {
  if (text && !*text) text = NULL;
  if (g_strcmp0(text, self->search_text) == 0) return;
  g_free(self->search_text);
  self->search_text = g_strdup(text);
  ox_document_search_update(self);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_SEARCH_TEXT]);
  g_signal_emit(self, ox_document_signals[SIGNAL_FRAME_CHANGED], 0);
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

/* The pass's entry in the trace's per-pass table, or NULL (a trace written before it existed). */
static const OxPassStat *pass_stat(const OxTrace *t, const char *pass, const char *phase) {
  for (uint32_t i = 0; t && pass && i < t->n_pass_stats; i++)
    if (strcmp(t->pass_stats[i].pass, pass) == 0 && g_strcmp0(t->pass_stats[i].phase, phase ? phase : "pre") == 0)
      return &t->pass_stats[i];
  return NULL;
}

void ox_document_timeline_rebuild(OxDocument *self) {
  const OxTrace *t = ox_document_get_trace(self);
  GPtrArray *rows = g_ptr_array_new_with_free_func(g_object_unref);
  guint n = t ? t->n_steps : 0;
  GHashTable *timed = g_hash_table_new(NULL, NULL); /* pass entries whose time a header shows */
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
      /* the pass's wall time (the trace's "passes" table), on its first group only: a pass that
       * ran more than once has one total */
      const OxPassStat *ps = pass_stat(t, t->steps[i].pass, t->steps[i].phase);
      if (ps && !g_hash_table_contains(timed, ps)) {
        g_hash_table_add(timed, (gpointer)ps);
        g_string_append(sub, sub->len ? " · " : "");
        char took[32];
        g_string_append(sub, ox_fmt_duration(ps->seconds, took, sizeof took));
      }
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
  g_hash_table_unref(timed);
  if (is_anchors_query(self->search_text) && self->history) { /* its hits follow the filters */
    ox_document_search_update(self);
    g_signal_emit(self, ox_document_signals[SIGNAL_FRAME_CHANGED], 0);
  }
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
  ox_document_timeline_rebuild(self);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_FILTER_KINDS]);
}

const char *ox_document_get_filter_pass(OxDocument *self) { return self->filter_pass; }

/* drops the coverage filter's fields; TRUE if one was set */
static gboolean coverage_clear(OxDocument *self) {
  gboolean was = self->filter_cov;
  self->filter_cov = FALSE;
  g_clear_pointer(&self->filter_phase, g_free);
  g_clear_pointer(&self->filter_rule, g_free);
  g_clear_pointer(&self->filter_detail, g_free);
  g_clear_pointer(&self->filter_cov_text, g_free);
  self->filter_reason = -1;
  return was;
}

void ox_document_filter_coverage_reset(OxDocument *self) {
  if (coverage_clear(self)) g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_FILTER_COVERAGE]);
}

void ox_document_set_filter_pass(OxDocument *self, const char *pass) {
  if (pass && !*pass) pass = NULL;
  if (g_strcmp0(pass, self->filter_pass) == 0) return;
  gboolean cov = coverage_clear(self);
  g_free(self->filter_pass);
  self->filter_pass = g_strdup(pass);
  ox_document_timeline_rebuild(self);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_FILTER_PASS]);
  if (cov) g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_FILTER_COVERAGE]);
}

void ox_document_set_filter_coverage(OxDocument *self, const char *phase, const char *pass, const char *rule,
                                     int reason, const char *detail) {
  coverage_clear(self);
  g_clear_pointer(&self->filter_pass, g_free);
  if (pass && *pass) {
    self->filter_cov = TRUE;
    self->filter_pass = g_strdup(pass);
    self->filter_phase = g_strdup(phase && *phase ? phase : "pre");
    self->filter_rule = g_strdup(rule);
    self->filter_reason = reason >= 0 && reason < OX_REASON_COUNT ? reason : -1;
    self->filter_detail = self->filter_reason >= 0 && detail && *detail ? g_strdup(detail) : NULL;
    char title[512];
    GString *t = g_string_new(ox_coverage_row_title(self->filter_phase, pass, rule, title, sizeof title));
    if (self->filter_reason >= 0) {
      g_string_append_printf(t, " · %s", ox_reason_code_name((OxReasonCode)self->filter_reason));
      self->filter_kinds |= OX_FILTER_REJECTED | OX_FILTER_CHECK_FAILED;
    }
    if (self->filter_detail) g_string_append_printf(t, " · %s", self->filter_detail);
    self->filter_cov_text = g_string_free(t, FALSE);
  }
  ox_document_timeline_rebuild(self);
  g_object_freeze_notify(G_OBJECT(self));
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_FILTER_PASS]);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_FILTER_KINDS]);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_FILTER_COVERAGE]);
  g_object_thaw_notify(G_OBJECT(self));
}

const char *ox_document_get_filter_coverage(OxDocument *self) { return self->filter_cov ? self->filter_cov_text : NULL; }

guint ox_document_first_visible(OxDocument *self) {
  guint n = ox_document_get_n_steps(self);
  for (guint p = 1; p <= n; p++)
    if (ox_document_step_visible(self, p)) return p;
  return 0;
}

gboolean ox_document_get_filter_touching(OxDocument *self) { return self->filter_touching; }
void ox_document_set_filter_touching(OxDocument *self, gboolean touching) {
  touching = !!touching;
  if (touching == self->filter_touching) return;
  self->filter_touching = touching;
  ox_document_timeline_rebuild(self);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_FILTER_TOUCHING]);
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
  case PROP_FILTER_COVERAGE: g_value_set_string(v, ox_document_get_filter_coverage(self)); break;
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
  ox_document_whatif_reset(self);
  g_clear_object(&self->timeline);
  G_OBJECT_CLASS(ox_document_parent_class)->dispose(o);
}

static void ox_document_finalize(GObject *o) {
  OxDocument *self = OX_DOCUMENT(o);
  ox_doc_free(self->doc);
  g_free(self->path);
  ox_document_graph_release(self, &self->g_after);
  ox_document_graph_release(self, &self->g_before);
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
  coverage_clear(self);
  g_hash_table_destroy(self->touching);
  g_hash_table_destroy(self->whatif);
  g_queue_free_full(self->whatif_queue, g_free);
  g_clear_pointer(&self->prefetch, ox_document_prefetch_unref);
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
  ox_document_props[PROP_PATH] = g_param_spec_string("path", NULL, NULL, NULL, ro);
  ox_document_props[PROP_N_STEPS] = g_param_spec_uint("n-steps", NULL, NULL, 0, G_MAXUINT, 0, ro);
  ox_document_props[PROP_POSITION] = g_param_spec_uint("position", NULL, NULL, 0, G_MAXUINT, 0, rw);
  ox_document_props[PROP_SHOW_BEFORE] = g_param_spec_boolean("show-before", NULL, NULL, FALSE, rw);
  ox_document_props[PROP_SELECTED] = g_param_spec_string("selected", NULL, NULL, NULL, rw);
  ox_document_props[PROP_SEARCH_TEXT] = g_param_spec_string("search-text", NULL, NULL, NULL, rw);
  ox_document_props[PROP_N_HITS] = g_param_spec_uint("n-hits", NULL, NULL, 0, G_MAXUINT, 0, ro);
  ox_document_props[PROP_FILTER_KINDS] =
      g_param_spec_uint("filter-kinds", NULL, NULL, 0, OX_FILTER_ALL, OX_FILTER_ALL, rw);
  ox_document_props[PROP_FILTER_PASS] = g_param_spec_string("filter-pass", NULL, NULL, NULL, rw);
  ox_document_props[PROP_FILTER_TOUCHING] = g_param_spec_boolean("filter-touching", NULL, NULL, FALSE, rw);
  ox_document_props[PROP_FILTER_COVERAGE] = g_param_spec_string("filter-coverage", NULL, NULL, NULL, ro);
  ox_document_props[PROP_BUSY] = g_param_spec_boolean("busy", NULL, NULL, FALSE, ro);
  ox_document_props[PROP_PROGRESS] = g_param_spec_double("progress", NULL, NULL, 0, 1, 0, ro);
  ox_document_props[PROP_STATUS] = g_param_spec_string("status", NULL, NULL, NULL, ro);
  g_object_class_install_properties(oc, N_PROPS, ox_document_props);
  ox_document_signals[SIGNAL_HISTORY_CHANGED] =
    g_signal_new("history-changed", G_TYPE_FROM_CLASS(k), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  ox_document_signals[SIGNAL_FRAME_CHANGED] =
    g_signal_new("frame-changed", G_TYPE_FROM_CLASS(k), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  ox_document_signals[SIGNAL_WHATIF_DONE] =
      g_signal_new("whatif-done", G_TYPE_FROM_CLASS(k), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE,
                   1, G_TYPE_STRING);
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
  self->filter_reason = -1;
  ox_check_config_default(&self->checks);
  self->entry_hist = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)ox_history_unref);
  self->pending_graph = G_MAXUINT;
  self->warnings = g_array_new(FALSE, TRUE, sizeof(OxLoadWarning));
  g_array_set_clear_func(self->warnings, ox_document_warning_clear);
  self->whatif = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, ox_document_whatif_entry_free);
  self->whatif_queue = g_queue_new();
}
