/* ox-scene.c - bounded views of large graphs and their layouts (see ox-scene.h).
 *
 * Invariants: `cur` is the entry shown (NULL before the first layout); boxes/box_idx/edge_idx/
 * uid_item always describe cur plus the boxes placed since it was installed. Every layout
 * request goes through request_layout(), which refuses anything over the budget, so the budget
 * holds by construction. Entries in the cache own their layout and (overview) graph; the entry
 * shown is never evicted. Worker threads only run ox_layout_compute on data the job owns or on
 * the history's union graph, which is immutable; everything else happens on the main thread.
 */
#include "ox-scene.h"

#include <math.h>
#include <pango/pangocairo.h>
#include <stdlib.h>
#include <string.h>

#include "write/ox_write.h"

#define FOCUS_LOOKAHEAD 24   /* following steps a focus scene tries to include */
#define PLACE_MAX 48         /* missing step nodes placed next to neighbours before re-laying out */
#define OVERVIEW_SIZE 60     /* items the automatic overview opens up to: readable when fitted */

static const char *const mode_names[] = {"auto", "full", "focus", "overview"};

const char *ox_view_mode_name(OxViewMode m) { return (guint)m < G_N_ELEMENTS(mode_names) ? mode_names[m] : "auto"; }
gboolean ox_view_mode_from_name(const char *s, OxViewMode *out) {
  for (guint i = 0; i < G_N_ELEMENTS(mode_names); i++)
    if (g_strcmp0(s, mode_names[i]) == 0) {
      *out = (OxViewMode)i;
      return TRUE;
    }
  return FALSE;
}

typedef struct Entry {
  guint64 key;
  OxViewMode kind;        /* FULL, FOCUS or OVERVIEW */
  OxLayout *layout;
  OxGraph *graph;         /* overview graph (owned), NULL = the union graph */
  guint32 *item_uid;      /* overview: per item, uid or 0 */
  gint32 *item_cluster;   /* overview: per item, cluster or -1 */
  guint32 *node_item;     /* overview: per uid, the item standing for it */
  guint n_items;          /* capacity of the per-item arrays (graph n_nodes) */
  guint radius;           /* focus */
  guint64 used;           /* LRU tick */
} Entry;

static void entry_free(Entry *e) {
  if (!e) return;
  ox_layout_free(e->layout);
  ox_graph_free(e->graph);
  g_free(e->item_uid);
  g_free(e->item_cluster);
  g_free(e->node_item);
  g_free(e);
}

struct _OxScene {
  GObject parent_instance;

  /* owned */
  OxDocument *doc;
  OxHistory *history;
  OxHierarchy *hier;
  guint8 *open;            /* per cluster */
  Entry *cache[OX_SCENE_CACHE];
  Entry *pending;          /* borrowed: the entry the running (or deferred) job owns and will fill */
  Entry *def_e;            /* owned: a layout asked for, to start when the main loop is idle */
  OxNodeId *def_subset;
  guint32 def_n;
  guint def_source;
  GArray *boxes;           /* OxLayoutNode */
  gint32 *box_idx;         /* item -> index in boxes, -1 */
  guint n_box_idx;
  guint32 *uid_item;       /* uid -> item, 0 */
  guint n_uid_item;
  GHashTable *edge_idx;    /* (from << 32 | to) -> edge index + 1 */
  GCancellable *job;
  atomic_bool *job_cancel;
  GCancellable *pre_job;   /* a prefetch: the focus layout of the next step, cached when done */
  atomic_bool *pre_cancel;
  Entry *pre_entry;        /* borrowed: owned by the prefetch job */
  guint64 pre_key;
  char *note, *error;
  char *last_selected;
  guint32 *fold;           /* per uid: the uid a folded parameter is drawn in (ox_view_fold_params), 0 */
  guint16 *n_params;       /* per uid: folded parameters feeding it (the "+3 params" badge) */
  guint8 *folded;          /* per uid: 1 when folded (the skip mask of neighbourhoods) */

  /* borrowed */
  Entry *cur;

  /* plain state */
  OxViewMode mode, shown;
  OxLayoutEngine engine;   /* AUTO: dot for whole-graph scenes within the time budget, layered for the others */
  double time_budget;      /* seconds dot may take before the layered layout is used instead */
  guint dot_max;           /* requests above this go to the layered layout directly */
  guint dot_slow_at;       /* dot timed out at this many nodes in this history: larger requests skip it */
  double view_w, view_h;   /* the canvas size: layered layouts aim at its aspect ratio */
  guint n_drawn;           /* live union nodes that are not folded */
  guint budget, focus_size, radius, shown_radius;
  guint overview_size;
  double width, height;
  guint64 tick;
  guint last_position;
  OxSceneStats stats;
  OxSceneHook hook;
  gpointer hook_data;
  gulong sig_history, sig_frame;
};

G_DEFINE_FINAL_TYPE(OxScene, ox_scene, G_TYPE_OBJECT)

enum { PROP_0, PROP_MODE, PROP_SHOWN_MODE, PROP_BUSY, PROP_RADIUS, N_PROPS };
static GParamSpec *props[N_PROPS];
enum { SIGNAL_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];


/* ------------------------------------------------------------------ keys */

static guint64 mix(guint64 h, guint64 v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0x100000001b3ull;
}

static int cmp_u32(const void *a, const void *b) {
  guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;
  return x < y ? -1 : x > y;
}

guint64 ox_scene_subgraph_key(const OxGraph *g, const guint32 *ids, guint n, const guint32 *identity,
                              guint64 options) {
  guint32 *sorted = g_memdup2(ids, MAX(n, 1) * sizeof *ids);
  qsort(sorted, n, sizeof *sorted, cmp_u32);
  guint8 *in = g_new0(guint8, g->n_nodes + 1);
  for (guint i = 0; i < n; i++) in[sorted[i]] = 1;
  guint64 h = mix(0xcbf29ce484222325ull, options);
  h = mix(h, n);
  OxNodeId stack_ins[256], *ins;
  for (guint i = 0; i < n; i++) {
    guint32 id = sorted[i];
    h = mix(h, identity ? identity[id] : id);
    guint32 k = ox_ui_inputs(g, id, stack_ins, G_N_ELEMENTS(stack_ins), &ins); /* every input: the key */
    for (guint32 j = 0; j < k; j++)
      if (in[ins[j]]) h = mix(h, ((guint64)(identity ? identity[ins[j]] : ins[j]) << 32) | 0x5eedu);
    if (ins != stack_ins) g_free(ins);
  }
  g_free(in);
  g_free(sorted);
  return h;
}

/* ------------------------------------------------------------------ labels and their boxes */

/* Advance widths of ' '..'~' in the canvas's two fonts, measured once with Pango (the same
 * fonts the canvas draws with), so a box is sized for exactly the text drawn in it. */
typedef struct Metrics {
  float bold[95], small[95];
  float bold_h, small_h;
} Metrics;
static Metrics metrics;
static gsize metrics_ready;

static void metrics_init(void) {
  if (!g_once_init_enter(&metrics_ready)) return;
  PangoContext *ctx = pango_font_map_create_context(pango_cairo_font_map_get_default());
  PangoLayout *pl = pango_layout_new(ctx);
  for (int f = 0; f < 2; f++) {
    PangoFontDescription *fd = pango_font_description_from_string(f ? OX_SCENE_FONT_SMALL : OX_SCENE_FONT_NAME);
    pango_layout_set_font_description(pl, fd);
    pango_font_description_free(fd);
    float *adv = f ? metrics.small : metrics.bold;
    for (int c = 32; c < 127; c++) {
      char t[2] = {(char)c, 0};
      pango_layout_set_text(pl, t, 1);
      int w, h;
      pango_layout_get_size(pl, &w, &h);
      adv[c - 32] = (float)w / PANGO_SCALE;
      if (c == 'M') *(f ? &metrics.small_h : &metrics.bold_h) = (float)h / PANGO_SCALE;
    }
  }
  g_object_unref(pl);
  g_object_unref(ctx);
  g_once_init_leave(&metrics_ready, 1);
}

double ox_scene_text_width(const char *text, gboolean bold) {
  metrics_init();
  const float *adv = bold ? metrics.bold : metrics.small;
  double w = 0;
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
    if (*p >= 32 && *p < 127)
      w += adv[*p - 32];
    else if (*p < 0x80 || *p >= 0xc0)
      w += adv['M' - 32]; /* one glyph of a UTF-8 sequence (or a control character) */
  }
  return w;
}

/* "161,592" */
static void thousands(guint v, char *buf, gsize cap) {
  char raw[32];
  g_snprintf(raw, sizeof raw, "%u", v);
  gsize n = strlen(raw), o = 0;
  for (gsize i = 0; i < n && o + 2 < cap; i++) {
    if (i && (n - i) % 3 == 0) buf[o++] = ',';
    buf[o++] = raw[i];
  }
  buf[o] = 0;
}

/* The two lines of an item: a node's name and its op, or a cluster's label and node count. */
static void item_label(OxScene *self, const OxGraph *g, const gint32 *item_cluster, const guint32 *item_uid,
                       guint32 item, char *l1, gsize c1, char *l2, gsize c2) {
  gint32 c = item_cluster ? item_cluster[item] : -1;
  if (c >= 0) {
    const OxCluster *cl = &self->hier->clusters[c];
    g_snprintf(l1, c1, "%s", cl->kind == OX_CLUSTER_MODULE ? (cl->path[0] ? cl->path : "(top)") : cl->label);
    char n[32];
    thousands(cl->n_total, n, sizeof n);
    g_snprintf(l2, c2, "%s node%s", n, cl->n_total == 1 ? "" : "s");
    return;
  }
  guint32 uid = item_uid ? item_uid[item] : item;
  const OxGraph *u = self->history->u;
  const OxNode *n = uid && uid < u->n_nodes ? &u->nodes[uid] : (g && item < g->n_nodes ? &g->nodes[item] : NULL);
  if (!n) {
    l1[0] = l2[0] = 0;
    return;
  }
  g_snprintf(l1, c1, "%s", uid ? self->history->name[uid] : n->name);
  if (n->op == OX_OP_CALL_FUNCTION || n->op == OX_OP_CALL_METHOD || n->op == OX_OP_CALL_MODULE)
    ox_short_target(n->op == OX_OP_CALL_MODULE && n->module_type ? n->module_type : n->target, l2, c2);
  else
    g_snprintf(l2, c2, "%s", ox_op_name((OxOp)n->op));
}

void ox_scene_item_label(OxScene *self, guint32 item, char *l1, gsize c1, char *l2, gsize c2) {
  Entry *e = self->cur;
  if (!e || !self->history) {
    l1[0] = l2[0] = 0;
    return;
  }
  item_label(self, e->graph, e->graph ? e->item_cluster : NULL, e->graph ? e->item_uid : NULL, item, l1, c1, l2, c2);
}

guint ox_scene_item_params(OxScene *self, guint32 item) {
  guint32 uid = ox_scene_item_uid(self, item);
  return self->n_params && uid && uid < self->history->u->n_nodes ? self->n_params[uid] : 0;
}

/* Box sizes (w, h pairs) for the items of a request, parallel to ids. */
static float *item_sizes(OxScene *self, Entry *e, const OxNodeId *ids, guint n) {
  metrics_init();
  float *sz = g_new(float, 2 * (gsize)n + 2);
  char l1[320], l2[320];
  float h = metrics.bold_h + metrics.small_h + 10;
  for (guint i = 0; i < n; i++) {
    item_label(self, e->graph, e->graph ? e->item_cluster : NULL, e->graph ? e->item_uid : NULL, ids[i], l1,
               sizeof l1, l2, sizeof l2);
    gboolean cluster = e->graph && e->item_cluster[ids[i]] >= 0;
    double w1 = ox_scene_text_width(l1, TRUE), w2 = ox_scene_text_width(l2, FALSE);
    /* names are elided past the widest box; a cluster's count never is */
    double w = MIN(w1, OX_SCENE_BOX_MAX);
    w = MAX(w, w2) + (cluster ? 22 : 16);
    sz[2 * i] = (float)MAX(w, 36);
    sz[2 * i + 1] = cluster ? h + 4 : h;
  }
  return sz;
}

/* ------------------------------------------------------------------ current scene */

static void set_note(OxScene *self, char *note) {
  g_free(self->note);
  self->note = note;
}

static void boxes_index(OxScene *self) {
  Entry *e = self->cur;
  guint n_items = e ? (e->graph ? e->graph->n_nodes : self->history->u->n_nodes) : 0;
  if (self->n_box_idx < n_items + 1) {
    self->box_idx = g_renew(gint32, self->box_idx, n_items + 1);
    self->n_box_idx = n_items + 1;
  }
  for (guint i = 0; i < self->n_box_idx; i++) self->box_idx[i] = -1;
  for (guint i = 0; i < self->boxes->len; i++) {
    const OxLayoutNode *b = &g_array_index(self->boxes, OxLayoutNode, i);
    if (b->id < self->n_box_idx) self->box_idx[b->id] = (gint32)i;
  }
  /* uid -> item */
  guint nu = self->history ? self->history->u->n_nodes : 0;
  if (self->n_uid_item < nu + 1) {
    self->uid_item = g_renew(guint32, self->uid_item, nu + 1);
    self->n_uid_item = nu + 1;
  }
  memset(self->uid_item, 0, self->n_uid_item * sizeof *self->uid_item);
  if (!e) return;
  if (e->graph) {
    for (guint uid = 1; uid < nu; uid++) self->uid_item[uid] = e->node_item[uid];
  } else {
    for (guint i = 0; i < self->boxes->len; i++) {
      guint32 id = g_array_index(self->boxes, OxLayoutNode, i).id;
      if (id < nu) self->uid_item[id] = id;
    }
    /* a folded parameter is shown by its consumer's box */
    if (self->fold)
      for (guint uid = 1; uid < nu; uid++)
        if (self->fold[uid] && self->uid_item[self->fold[uid]]) self->uid_item[uid] = self->fold[uid];
  }
}

static void scene_install(OxScene *self, Entry *e) {
  self->cur = e;
  e->used = ++self->tick;
  g_array_set_size(self->boxes, 0);
  g_hash_table_remove_all(self->edge_idx);
  if (e->layout) {
    g_array_append_vals(self->boxes, e->layout->nodes, e->layout->n_nodes);
    for (guint32 i = 0; i < e->layout->n_edges; i++) {
      const OxLayoutEdge *le = &e->layout->edges[i];
      guint64 k = ((guint64)le->from << 32) | le->to;
      g_hash_table_insert(self->edge_idx, (gpointer)(guintptr)k, GUINT_TO_POINTER(i + 1));
    }
    self->width = e->layout->width;
    self->height = e->layout->height;
  }
  boxes_index(self);
  if (e->kind == OX_VIEW_FOCUS) self->shown_radius = e->radius;
  char nu[32], shown[32];
  thousands(self->history->u->n_live, nu, sizeof nu);
  thousands(e->layout->n_nodes, shown, sizeof shown);
  const char *why = e->layout->note[0] ? e->layout->note : NULL;
  if (e->kind == OX_VIEW_FOCUS)
    set_note(self, g_strdup_printf("focus: %s of %s nodes, radius %u", shown, nu, e->radius));
  else if (e->kind == OX_VIEW_OVERVIEW)
    set_note(self, g_strdup_printf("overview: %s items for %s nodes (double-click a cluster to expand)%s%s", shown,
                                   nu, why ? " · " : "", why ? why : ""));
  else
    set_note(self, why ? g_strdup(why) : NULL);
  g_signal_emit(self, signals[SIGNAL_CHANGED], 0);
}

static void cache_put(OxScene *self, Entry *e) {
  guint victim = 0;
  for (guint i = 0; i < OX_SCENE_CACHE; i++) {
    if (!self->cache[i]) {
      victim = i;
      break;
    }
    if (self->cache[i] == self->cur) continue;
    if (self->cache[victim] == self->cur || self->cache[i]->used < self->cache[victim]->used) victim = i;
  }
  if (self->cache[victim] && self->cache[victim] != self->cur) entry_free(self->cache[victim]);
  self->cache[victim] = e;
}

static Entry *cache_get(OxScene *self, guint64 key) {
  for (guint i = 0; i < OX_SCENE_CACHE; i++)
    if (self->cache[i] && self->cache[i]->key == key) return self->cache[i];
  return NULL;
}

static void cache_clear(OxScene *self) {
  for (guint i = 0; i < OX_SCENE_CACHE; i++) g_clear_pointer(&self->cache[i], entry_free);
  self->cur = NULL;
}

static void maybe_prefetch(OxScene *self);

/* ------------------------------------------------------------------ layout jobs */

typedef struct Job {
  OxHistory *h;
  Entry *e;              /* owned until installed: a cancelled job frees it with itself */
  const OxGraph *graph;  /* e's overview graph or the union graph */
  OxNodeId *subset;
  guint32 n;
  float *sizes;          /* parallel to subset */
  atomic_bool *cancel;
  guint budget;
  gboolean prefetch;
  OxLayoutEngine engine;
  double time_budget, aspect;
  guint dot_max;
} Job;

static void job_free(gpointer p) {
  Job *j = p;
  ox_history_unref(j->h);
  entry_free(j->e);
  g_free(j->subset);
  g_free(j->sizes);
  g_free(j->cancel);
  g_free(j);
}

static void job_thread(GTask *task, gpointer src, gpointer data, GCancellable *c) {
  (void)src;
  (void)c;
  Job *j = data;
  OxLayoutOptions opt = {.rankdir = "TB",
                         .max_nodes = j->budget,
                         .cancel = j->cancel,
                         .engine = j->engine,
                         .time_budget = j->time_budget,
                         .dot_max_nodes = j->dot_max,
                         .aspect = j->aspect,
                         .sizes = j->sizes};
  OxLayout *l = NULL;
  char err[512] = "";
  if (ox_layout_auto(j->graph, j->subset, j->n, &opt, &l, err, sizeof err) != 0) {
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", err[0] ? err : "layout failed");
    return;
  }
  g_task_return_pointer(task, l, (GDestroyNotify)ox_layout_free);
}

static void job_done(GObject *src, GAsyncResult *res, gpointer data) {
  (void)data;
  OxScene *self = OX_SCENE(src);
  Job *j = g_task_get_task_data(G_TASK(res));
  GError *err = NULL;
  OxLayout *l = g_task_propagate_pointer(G_TASK(res), &err);
  gboolean current = j->cancel == self->job_cancel;
  if (j->prefetch && j->cancel == self->pre_cancel) {
    /* a prefetch nobody asked for yet: into the cache */
    self->pre_cancel = NULL;
    self->pre_entry = NULL;
    g_clear_object(&self->pre_job);
    if (l && j->h == self->history) {
      Entry *e = g_steal_pointer(&j->e);
      e->layout = l;
      e->used = ++self->tick;
      cache_put(self, e);
    } else {
      ox_layout_free(l);
    }
    g_clear_error(&err);
    return;
  }
  if (!current || j->h != self->history) {
    ox_layout_free(l);
    g_clear_error(&err);
    return;
  }
  self->job_cancel = NULL; /* the job frees it */
  g_clear_object(&self->job);
  Entry *e = g_steal_pointer(&j->e);
  self->pending = NULL;
  g_clear_pointer(&self->error, g_free);
  if (!l) {
    self->error = g_strdup(err ? err->message : "layout failed");
    g_clear_error(&err);
    entry_free(e);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_BUSY]);
    g_signal_emit(self, signals[SIGNAL_CHANGED], 0);
    return;
  }
  e->layout = l;
  if (l->dot_timed_out) self->dot_slow_at = MIN(self->dot_slow_at, j->n);
  cache_put(self, e);
  scene_install(self, e);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_BUSY]);
  maybe_prefetch(self);
}

static void prefetch_cancel(OxScene *self) {
  if (self->pre_cancel) atomic_store(self->pre_cancel, true);
  self->pre_cancel = NULL;
  self->pre_entry = NULL;
  if (self->pre_job) g_cancellable_cancel(self->pre_job);
  g_clear_object(&self->pre_job);
}

static void deferred_clear(OxScene *self) {
  g_clear_handle_id(&self->def_source, g_source_remove);
  g_clear_pointer(&self->def_e, entry_free);
  g_clear_pointer(&self->def_subset, g_free);
  self->def_n = 0;
}

static void job_cancel(OxScene *self) {
  deferred_clear(self);
  if (self->job_cancel) {
    atomic_store(self->job_cancel, true);
    self->stats.n_cancelled++;
  }
  self->job_cancel = NULL;
  if (self->job) g_cancellable_cancel(self->job);
  g_clear_object(&self->job);
  self->pending = NULL; /* owned by the cancelled job */
}

static Job *job_start(OxScene *self, Entry *e, OxNodeId *subset, guint32 n, gboolean prefetch);

static gboolean start_deferred(gpointer data) {
  OxScene *self = data;
  self->def_source = 0;
  Entry *e = g_steal_pointer(&self->def_e);
  OxNodeId *subset = g_steal_pointer(&self->def_subset);
  if (e) job_start(self, e, subset, self->def_n, FALSE);
  return G_SOURCE_REMOVE;
}

/* Which engine lays out a request of n items for an entry of this kind. */
static OxLayoutEngine request_engine(OxScene *self, const Entry *e, guint32 n) {
  if (self->engine == OX_LAYOUT_LAYERED) return OX_LAYOUT_LAYERED;
  /* stepping re-lays out focus scenes: only our own layout answers within a frame; overviews
   * are folded to the window's shape, which dot cannot do */
  if (self->engine == OX_LAYOUT_AUTO && e->kind != OX_VIEW_FULL) return OX_LAYOUT_LAYERED;
  /* dot already missed its budget on a request this large in this history */
  if (n >= self->dot_slow_at) return OX_LAYOUT_LAYERED;
  return OX_LAYOUT_AUTO;
}

/* The cache key of e's layout of subset (the sorted items, their edges, the kind and engine). */
static void entry_key(OxScene *self, Entry *e, const OxNodeId *subset, guint32 n) {
  const OxGraph *g = e->graph ? e->graph : self->history->u;
  guint32 count = n;
  const guint32 *ids = subset;
  /* identity of an item across graphs: uid, or cluster index tagged */
  guint32 *identity = NULL;
  if (e->graph) {
    identity = g_new(guint32, g->n_nodes + 1);
    for (guint32 i = 0; i < g->n_nodes; i++)
      identity[i] = e->item_cluster[i] >= 0 ? (0x80000000u | (guint32)e->item_cluster[i]) : e->item_uid[i];
  }
  guint64 options = ((guint64)e->kind << 8) | ((guint64)request_engine(self, e, n) << 16) | 1u /* TB */;
  e->key = ox_scene_subgraph_key(g, ids, count, identity, options);
  g_free(identity);
}

static Job *job_start(OxScene *self, Entry *e, OxNodeId *subset, guint32 n, gboolean prefetch) {
  const OxGraph *g = e->graph ? e->graph : self->history->u;
  guint32 count = n;
  self->stats.n_requests++;
  self->stats.max_request = MAX(self->stats.max_request, count);
  if (self->hook) self->hook(count, self->hook_data);
  Job *j = g_new0(Job, 1);
  j->h = ox_history_ref(self->history);
  j->graph = g;
  j->e = e;
  j->subset = subset;
  j->n = n;
  j->sizes = item_sizes(self, e, subset, n);
  j->budget = self->budget;
  j->prefetch = prefetch;
  j->engine = request_engine(self, e, n);
  j->time_budget = self->time_budget;
  j->dot_max = self->dot_max;
  j->aspect = self->view_w > 1 && self->view_h > 1 ? self->view_w / self->view_h : 1.6;
  j->cancel = g_new0(atomic_bool, 1);
  atomic_init(j->cancel, false);
  GCancellable *c = g_cancellable_new();
  if (prefetch) {
    self->pre_job = c;
    self->pre_cancel = j->cancel;
    self->pre_entry = e;
    self->pre_key = e->key;
  } else {
    self->pending = e;
    self->job = c;
    self->job_cancel = j->cancel;
  }
  GTask *task = g_task_new(self, c, job_done, NULL);
  g_task_set_task_data(task, j, job_free);
  g_task_run_in_thread(task, job_thread);
  g_object_unref(task);
  return j;
}

/* The one place a layout is requested: takes e (maps filled) and the subset of e's graph to lay
 * out. Serves it from the cache, adopts a prefetch of the same subgraph,
 * or starts a job; refuses anything over the budget. */
static void request_layout(OxScene *self, Entry *e, OxNodeId *subset, guint32 n) {
  guint32 count = n;
  entry_key(self, e, subset, n);
  Entry *hit = cache_get(self, e->key);
  if (hit) {
    job_cancel(self);
    entry_free(e);
    g_free(subset);
    self->stats.n_cache_hits++;
    scene_install(self, hit);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_BUSY]);
    return;
  }
  if (count > self->budget) {
    g_free(self->error);
    self->error = g_strdup_printf("%u nodes are over the layout budget of %u", count, self->budget);
    entry_free(e);
    g_free(subset);
    g_signal_emit(self, signals[SIGNAL_CHANGED], 0);
    return;
  }
  job_cancel(self);
  if (self->pre_job && self->pre_key == e->key) {
    /* the prefetch is this very layout: it becomes the current job */
    self->job = g_steal_pointer(&self->pre_job);
    self->job_cancel = self->pre_cancel;
    self->pending = self->pre_entry;
    self->pre_cancel = NULL;
    self->pre_entry = NULL;
    self->stats.n_prefetch_hits++;
    entry_free(e);
    g_free(subset);
    /* job_done sees j->cancel == job_cancel: installed like any layout */
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_BUSY]);
    return;
  }
  prefetch_cancel(self);
  /* started once the main loop has handled its events: of a burst of steps (a held key) only
   * the last asks for a layout; the frame in between shows the old one */
  self->def_e = e;
  self->def_subset = subset;
  self->def_n = n;
  self->pending = e;
  self->def_source = g_idle_add_full(G_PRIORITY_DEFAULT_IDLE, start_deferred, self, NULL);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_BUSY]);
}

/* ------------------------------------------------------------------ the three scenes */

/* The whole union graph but its folded parameters. */
static void request_full(OxScene *self) {
  const OxGraph *u = self->history->u;
  Entry *e = g_new0(Entry, 1);
  e->kind = OX_VIEW_FULL;
  OxNodeId *ids = g_new(OxNodeId, u->n_live + 1);
  guint32 n = 0;
  OX_GRAPH_FOREACH(u, id) if (!self->folded[id]) ids[n++] = id;
  request_layout(self, e, ids, n);
}

static void request_overview(OxScene *self) {
  const OxGraph *u = self->history->u;
  Entry *e = g_new0(Entry, 1);
  e->kind = OX_VIEW_OVERVIEW;
  e->node_item = g_new0(guint32, u->n_nodes + 1);
  gint32 *item_cluster = g_new(gint32, u->n_nodes + self->hier->n_clusters + 2);
  e->graph = ox_view_overview_map_fold(u, self->hier, self->open, self->fold, e->node_item, item_cluster);
  e->n_items = e->graph->n_nodes;
  e->item_cluster = g_new(gint32, e->n_items + 1);
  e->item_uid = g_new0(guint32, e->n_items + 1);
  for (guint i = 0; i < e->n_items; i++) {
    e->item_cluster[i] = i ? item_cluster[i] : -1;
    const OxNode *n = &e->graph->nodes[i];
    if (i && item_cluster[i] < 0 && n->n_provenance) e->item_uid[i] = n->provenance[0];
  }
  g_free(item_cluster);
  OxNodeId *ids = g_new(OxNodeId, e->graph->n_live + 1);
  guint32 n = 0;
  OX_GRAPH_FOREACH(e->graph, id) ids[n++] = id;
  request_layout(self, e, ids, n);
}

/* Seeds of the step at position p: its anchor, matched, added and removed nodes. */
static void step_seeds(OxScene *self, guint position, GArray *out) {
  const OxTrace *t = ox_document_get_trace(self->doc);
  const OxHistory *h = self->history;
  if (!t || !position || position > t->n_steps) return;
  const OxStep *s = &t->steps[position - 1];
  guint ka = h->gstep_after_seq[position - 1], ai = s->applied_index;
  guint kb = (ai && ai == ka) ? ai - 1 : ka;
  const char *const *lists[3] = {s->matched, s->removed, s->added};
  guint32 ns[3] = {s->n_matched, s->n_removed, s->n_added};
  guint32 uid = s->anchor ? ox_scene_drawn_uid(self, ox_history_uid(h, s->anchor, kb)) : 0;
  if (uid) g_array_append_val(out, uid);
  for (int l = 0; l < 3; l++)
    for (guint32 i = 0; i < ns[l]; i++) {
      uid = ox_scene_drawn_uid(self, ox_history_uid(h, lists[l][i], l == 2 ? ka : kb));
      if (uid) g_array_append_val(out, uid);
    }
}

guint32 ox_scene_drawn_uid(OxScene *self, guint32 uid) {
  if (!self->fold || !uid || !self->history || uid >= self->history->u->n_nodes) return uid;
  return self->fold[uid] ? self->fold[uid] : uid;
}

static guint fit_radius(OxScene *self, const guint32 *seeds, guint n, const guint8 *skip) {
  if (self->radius) return self->radius;
  guint target = MIN(self->focus_size, self->budget);
  guint r = 0;
  for (guint k = 1; k <= OX_SCENE_MAX_RADIUS; k++) {
    if (ox_view_neighborhood_skip(self->history->u, seeds, n, k, target + 1, skip, NULL, 0) > target) break;
    r = k;
  }
  return MAX(r, 1);
}

/* The focus subset for seeds at trace position p: the radius-r neighbourhood, extended with the
 * neighbourhoods of the following steps while it stays within the focus size. */
static OxNodeId *focus_subset(OxScene *self, const guint32 *seeds, guint n_seeds, guint p, gboolean lookahead,
                              guint *n_out, guint *r_out) {
  const OxHistory *h = self->history;
  const OxGraph *u = h->u;
  guint budget = self->budget;
  /* the neighbourhood in the graphs shown from step p to the last step looked ahead to: the
   * union graph holds every node of every step, and walking through the nodes that are dead
   * there would lay out holes (hidden boxes) and leave the live nodes scattered far apart */
  guint nsteps = ox_document_get_n_steps(self->doc);
  guint kmin = 0, kmax = 0;
  if (p && p <= nsteps) {
    const OxStep *s = &h->trace->steps[p - 1];
    guint ka = h->gstep_after_seq[p - 1];
    kmin = (s->applied_index && s->applied_index == ka) ? ka - 1 : ka;
    guint q = lookahead ? MIN(p + FOCUS_LOOKAHEAD, nsteps) : p;
    kmax = h->gstep_after_seq[q - 1];
  }
  guint8 *skip = g_new(guint8, u->n_nodes + 1);
  skip[0] = 1;
  for (guint32 uid = 1; uid < u->n_nodes; uid++)
    skip[uid] = self->folded[uid] || !(h->born[uid] <= kmax && h->died[uid] > kmin);
  /* the seeds are shown whatever (a step's removed nodes die at its graph step) */
  for (guint i = 0; i < n_seeds; i++)
    if (seeds[i] < u->n_nodes) skip[seeds[i]] = 0;
  guint r = fit_radius(self, seeds, n_seeds, skip);
  /* with an explicit radius the scene may grow to the budget; the automatic one stays within the
   * focus size (nearest nodes first when even radius 1 is larger) */
  guint cap = self->radius ? budget : MIN(self->focus_size, budget);
  OxNodeId *out = g_new(OxNodeId, budget + 1);
  guint n = ox_view_neighborhood_skip(u, seeds, n_seeds, r, cap, skip, out, budget);
  if (lookahead) {
    /* the next steps of the trace, while the scene stays within the focus size: stepping then
     * mostly stays inside one layout */
    guint target = MAX(cap, n);
    GArray *all = g_array_new(FALSE, FALSE, sizeof(guint32));
    g_array_append_vals(all, seeds, n_seeds);
    OxNodeId *tmp = g_new(OxNodeId, budget + 1);
    for (guint q = p + 1; q <= nsteps && q <= p + FOCUS_LOOKAHEAD; q++) {
      guint before = all->len;
      step_seeds(self, q, all);
      if (all->len == before) continue;
      for (guint i = before; i < all->len; i++) skip[g_array_index(all, guint32, i)] = 0;
      guint m = ox_view_neighborhood_skip(u, (const OxNodeId *)(void *)all->data, all->len, r, target + 1,
                                          skip, tmp, budget);
      if (m > target) break;
      memcpy(out, tmp, m * sizeof *out);
      n = m;
    }
    g_free(tmp);
    g_array_free(all, TRUE);
  }
  g_free(skip);
  *n_out = n;
  *r_out = r;
  return out;
}

static void request_focus(OxScene *self, const guint32 *seeds, guint n_seeds, gboolean lookahead) {
  guint n, r;
  OxNodeId *out = focus_subset(self, seeds, n_seeds, ox_document_get_position(self->doc), lookahead, &n, &r);
  Entry *e = g_new0(Entry, 1);
  e->kind = OX_VIEW_FOCUS;
  e->radius = r;
  request_layout(self, e, out, n);
}

/* While nothing is being laid out, lays out (into the cache) the focus scene the next step
 * that leaves the current scene will ask for, so that stepping finds it ready. */
static void maybe_prefetch(OxScene *self) {
  if (!self->history || self->job || self->def_e || self->pre_job || !self->cur || self->cur->kind != OX_VIEW_FOCUS) return;
  guint p = ox_document_get_position(self->doc), nsteps = ox_document_get_n_steps(self->doc);
  GArray *seeds = g_array_new(FALSE, FALSE, sizeof(guint32));
  for (guint q = p + 1; q <= nsteps && q <= p + FOCUS_LOOKAHEAD; q++) {
    g_array_set_size(seeds, 0);
    step_seeds(self, q, seeds);
    if (!seeds->len) continue;
    guint in = 0;
    for (guint i = 0; i < seeds->len; i++) in += ox_scene_uid_item(self, g_array_index(seeds, guint32, i)) != 0;
    if (in == seeds->len) continue; /* shown already */
    if (in > 0 && seeds->len - in <= PLACE_MAX) break; /* will be placed, no layout */
    guint n, r;
    OxNodeId *out = focus_subset(self, (const guint32 *)(void *)seeds->data, seeds->len, q, TRUE, &n, &r);
    Entry *e = g_new0(Entry, 1);
    e->kind = OX_VIEW_FOCUS;
    e->radius = r;
    entry_key(self, e, out, n);
    if (cache_get(self, e->key) || n > self->budget) {
      entry_free(e);
      g_free(out);
    } else {
      self->stats.n_prefetches++;
      job_start(self, e, out, n, TRUE);
    }
    break;
  }
  g_array_free(seeds, TRUE);
}

/* Places missing uids next to their laid-out neighbours in the union graph: under the mean of
 * their producers (or above their users), moved right until free. FALSE if one has no laid-out
 * neighbour or there are too many. */
static gboolean place_missing(OxScene *self, const guint32 *miss, guint n) {
  if (n > PLACE_MAX) return FALSE;
  const OxGraph *u = self->history->u;
  OxNodeId ins[256];
  double mw = 0, mh = 0;
  for (guint i = 0; i < self->boxes->len && i < 64; i++) {
    mw += g_array_index(self->boxes, OxLayoutNode, i).w;
    mh += g_array_index(self->boxes, OxLayoutNode, i).h;
  }
  guint nb = MIN(self->boxes->len, 64);
  if (!nb) return FALSE;
  mw /= nb;
  mh /= nb;
  GArray *placed = g_array_new(FALSE, FALSE, sizeof(OxLayoutNode));
  for (guint i = 0; i < n; i++) {
    guint32 x = miss[i];
    double px = 0, py = -G_MAXDOUBLE, ux = 0, uy = G_MAXDOUBLE;
    guint np = 0, nu = 0;
    guint32 k = MIN(ox_graph_inputs(u, x, ins, G_N_ELEMENTS(ins)), G_N_ELEMENTS(ins));
    for (guint32 j = 0; j < k; j++) {
      double bx, by, bw, bh;
      if (!ox_scene_box(self, ins[j], &bx, &by, &bw, &bh)) continue;
      px += bx;
      py = MAX(py, by);
      np++;
    }
    for (guint32 j = 0; j < u->nodes[x].n_users; j++) {
      double bx, by, bw, bh;
      if (!ox_scene_box(self, u->nodes[x].users[j], &bx, &by, &bw, &bh)) continue;
      ux += bx;
      uy = MIN(uy, by);
      nu++;
    }
    if (!np && !nu) {
      g_array_free(placed, TRUE);
      return FALSE;
    }
    OxLayoutNode b = {x, np ? px / np : ux / nu, np ? py + mh * 2 : uy - mh * 2, mw, mh};
    /* move right past any box it overlaps */
    for (gboolean moved = TRUE; moved;) {
      moved = FALSE;
      for (guint j = 0; j < self->boxes->len + placed->len; j++) {
        const OxLayoutNode *o = j < self->boxes->len ? &g_array_index(self->boxes, OxLayoutNode, j)
                                                     : &g_array_index(placed, OxLayoutNode, j - self->boxes->len);
        if (fabs(o->x - b.x) < (o->w + b.w) / 2 + 8 && fabs(o->y - b.y) < (o->h + b.h) / 2 + 8) {
          b.x = o->x + (o->w + b.w) / 2 + 12;
          moved = TRUE;
        }
      }
    }
    g_array_append_val(placed, b);
    /* visible to ox_scene_box for the next missing node */
    g_array_append_val(self->boxes, b);
    if (x < self->n_box_idx) self->box_idx[x] = (gint32)self->boxes->len - 1;
    self->uid_item[x] = x;
    g_array_set_size(placed, 0);
    self->width = MAX(self->width, b.x + b.w / 2);
    self->height = MAX(self->height, b.y + b.h / 2);
    self->stats.n_placed++;
  }
  g_array_free(placed, TRUE);
  return TRUE;
}

/* Shows seeds in a focus scene: nothing if they are all in it, placement if a few are missing
 * next to it, else a new focus layout. */
static void focus_on(OxScene *self, const guint32 *seeds, guint n, gboolean lookahead) {
  if (!n) return;
  if (self->cur && self->cur->kind != OX_VIEW_OVERVIEW && !self->pending) {
    GArray *miss = g_array_new(FALSE, FALSE, sizeof(guint32));
    for (guint i = 0; i < n; i++)
      if (!self->uid_item[seeds[i]]) g_array_append_val(miss, seeds[i]);
    gboolean ok = miss->len == 0;
    if (ok) self->stats.n_reused++;
    /* a far jump (nothing of the step in the scene) is a new focus, not a patch */
    if (!ok && miss->len < n) ok = place_missing(self, (const guint32 *)(void *)miss->data, miss->len);
    g_array_free(miss, TRUE);
    if (ok) {
      g_signal_emit(self, signals[SIGNAL_CHANGED], 0);
      maybe_prefetch(self);
      return;
    }
  }
  request_focus(self, seeds, n, lookahead);
}

static OxViewMode resolve_mode(OxScene *self) {
  if (!self->history) return OX_VIEW_FULL;
  /* the whole graph when it is small enough to read when fitted, else the overview */
  gboolean small = self->n_drawn <= MIN(self->budget, OX_SCENE_FULL_MAX);
  switch (self->mode) {
  case OX_VIEW_FULL: return small ? OX_VIEW_FULL : OX_VIEW_FOCUS;
  case OX_VIEW_FOCUS: return OX_VIEW_FOCUS;
  case OX_VIEW_OVERVIEW: return OX_VIEW_OVERVIEW;
  case OX_VIEW_AUTO: break;
  }
  if (small) return OX_VIEW_FULL;
  /* large: the overview until there is something to focus on */
  if (self->shown == OX_VIEW_FOCUS) return OX_VIEW_FOCUS;
  return ox_document_get_position(self->doc) ? OX_VIEW_FOCUS : OX_VIEW_OVERVIEW;
}

static void current_seeds(OxScene *self, GArray *seeds) {
  step_seeds(self, ox_document_get_position(self->doc), seeds);
  guint32 sel = ox_scene_drawn_uid(self, ox_document_uid_of(self->doc, ox_document_get_selected(self->doc)));
  if (sel && !seeds->len) g_array_append_val(seeds, sel);
  if (!seeds->len) {
    /* the first node of the shown graph */
    OxGraph *g = ox_document_get_graph(self->doc);
    if (g && g->head) {
      guint32 uid = ox_scene_drawn_uid(self, ox_document_uid_of(self->doc, g->nodes[g->head].name));
      if (uid) g_array_append_val(seeds, uid);
    }
  }
}

static void scene_refresh(OxScene *self, gboolean force) {
  if (!self->history) return;
  OxViewMode m = resolve_mode(self);
  gboolean changed = m != self->shown;
  self->shown = m;
  if (changed) g_object_notify_by_pspec(G_OBJECT(self), props[PROP_SHOWN_MODE]);
  if (m == OX_VIEW_FULL) {
    if (changed || force || !self->cur) request_full(self);
  } else if (m == OX_VIEW_OVERVIEW) {
    if (changed || force || !self->cur) request_overview(self);
  } else {
    GArray *seeds = g_array_new(FALSE, FALSE, sizeof(guint32));
    current_seeds(self, seeds);
    if (changed || force || !self->cur || self->cur->kind != OX_VIEW_FOCUS) {
      if (self->cur && self->cur->kind == OX_VIEW_FOCUS && !force && !changed)
        focus_on(self, (const guint32 *)(void *)seeds->data, seeds->len, TRUE);
      else
        request_focus(self, (const guint32 *)(void *)seeds->data, seeds->len, TRUE);
    } else {
      focus_on(self, (const guint32 *)(void *)seeds->data, seeds->len, TRUE);
    }
    g_array_free(seeds, TRUE);
  }
}

/* ------------------------------------------------------------------ hierarchy */

/* The cluster hierarchy of the input graph (module paths / names), extended to the union
 * graph: an input node keeps its cluster; a node a step created joins the cluster of its first
 * input that has one (union-graph order is creation order, so inputs come first). Placing
 * created nodes by their first input rather than by the common ancestor of all inputs keeps a
 * batch fusion across 80 layers from filling the top cluster with thousands of nodes, which
 * would make the overview unreadable (one closed cluster) at any budget. */
static OxHierarchy *union_hierarchy(const OxHistory *h) {
  OxHierarchy *hier = ox_view_hierarchy(h->input);
  const OxGraph *u = h->u;
  /* malloc'ed: ox_view_hierarchy_free frees it with free() */
  gint32 *nc = malloc((u->n_nodes + 1) * sizeof *nc);
  g_assert(nc);
  for (guint32 i = 0; i <= u->n_nodes; i++) nc[i] = -1;
  OxNodeId ins[64];
  for (guint32 uid = 1; uid < u->n_nodes; uid++) {
    gint32 c = 0;
    if (h->born[uid] == 0) {
      OxNodeId id = ox_graph_find(h->input, h->name[uid]);
      if (id && id < hier->n_node_ids && hier->node_cluster[id] >= 0) c = hier->node_cluster[id];
    } else {
      guint32 k = MIN(ox_graph_inputs(u, uid, ins, G_N_ELEMENTS(ins)), G_N_ELEMENTS(ins));
      for (guint32 j = 0; j < k && c <= 0; j++)
        if (nc[ins[j]] > 0) c = nc[ins[j]];
    }
    nc[uid] = c;
  }
  /* created plumbing still at the top (a new split of the input and its getitems) joins the
   * cluster of its first user that has one, walking back so users are placed first */
  for (guint32 uid = u->n_nodes; uid-- > 1;) {
    if (nc[uid] != 0 || h->born[uid] == 0) continue;
    const OxNode *n = &u->nodes[uid];
    for (guint32 j = 0; j < n->n_users && nc[uid] <= 0; j++)
      if (nc[n->users[j]] > 0) nc[uid] = nc[n->users[j]];
  }
  free(hier->node_cluster);
  hier->node_cluster = (int32_t *)nc;
  hier->n_node_ids = u->n_nodes;
  /* the nodes steps created may have crowded a cluster past what it shows: subdivide again */
  ox_view_hierarchy_refine(hier, u, OX_VIEW_FAN);
  return hier;
}

/* ------------------------------------------------------------------ document signals */

static void on_history_changed(OxScene *self) {
  job_cancel(self);
  prefetch_cancel(self);
  cache_clear(self);
  ox_history_unref(self->history);
  self->history = ox_document_get_history(self->doc);
  if (self->history) ox_history_ref(self->history);
  ox_view_hierarchy_free(self->hier);
  self->hier = NULL;
  g_clear_pointer(&self->open, g_free);
  g_array_set_size(self->boxes, 0);
  self->width = self->height = 0;
  self->last_position = 0;
  self->shown = OX_VIEW_AUTO;
  g_clear_pointer(&self->fold, g_free);
  g_clear_pointer(&self->n_params, g_free);
  g_clear_pointer(&self->folded, g_free);
  self->n_drawn = 0;
  self->dot_slow_at = G_MAXUINT;
  if (!self->history) return;
  const OxGraph *u = self->history->u;
  self->fold = g_new0(guint32, u->n_nodes + 1);
  self->n_params = g_new0(guint16, u->n_nodes + 1);
  self->folded = g_new0(guint8, u->n_nodes + 1);
  ox_view_fold_params(u, self->fold, self->n_params);
  OX_GRAPH_FOREACH(u, id) {
    self->folded[id] = self->fold[id] != 0;
    self->n_drawn += !self->folded[id];
  }
  self->hier = union_hierarchy(self->history);
  self->open = g_new0(guint8, self->hier->n_clusters + 1);
  self->overview_size = ox_view_auto_open(self->hier, MIN(self->budget, OVERVIEW_SIZE), self->open);
  boxes_index(self);
  scene_refresh(self, TRUE);
}

static void on_frame_changed(OxScene *self) {
  if (!self->history) return;
  guint pos = ox_document_get_position(self->doc);
  if (pos == self->last_position) return;
  self->last_position = pos;
  scene_refresh(self, FALSE);
}

/* ------------------------------------------------------------------ public API */

OxScene *ox_scene_new(OxDocument *doc) {
  OxScene *self = g_object_new(OX_TYPE_SCENE, NULL);
  self->doc = g_object_ref(doc);
  self->sig_history = g_signal_connect_swapped(doc, "history-changed", G_CALLBACK(on_history_changed), self);
  self->sig_frame = g_signal_connect_swapped(doc, "frame-changed", G_CALLBACK(on_frame_changed), self);
  if (ox_document_get_history(doc)) on_history_changed(self);
  return self;
}

OxDocument *ox_scene_get_document(OxScene *self) { return self->doc; }

void ox_scene_set_mode(OxScene *self, OxViewMode mode) {
  if (mode == self->mode) return;
  self->mode = mode;
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_MODE]);
  if (mode == OX_VIEW_AUTO) self->shown = OX_VIEW_AUTO;
  scene_refresh(self, FALSE);
}
OxViewMode ox_scene_get_mode(OxScene *self) { return self->mode; }
OxViewMode ox_scene_get_shown_mode(OxScene *self) { return self->shown; }

void ox_scene_set_budget(OxScene *self, guint budget) {
  self->budget = MAX(budget, 10);
  if (self->history) {
    self->overview_size = ox_view_auto_open(self->hier, MIN(self->budget, OVERVIEW_SIZE), self->open);
    job_cancel(self);
    prefetch_cancel(self);
    cache_clear(self);
    g_array_set_size(self->boxes, 0);
    self->shown = OX_VIEW_AUTO;
    scene_refresh(self, TRUE);
  }
}
guint ox_scene_get_budget(OxScene *self) { return self->budget; }
void ox_scene_set_focus_size(OxScene *self, guint n) { self->focus_size = MAX(n, 10); }
guint ox_scene_get_focus_size(OxScene *self) { return self->focus_size; }

void ox_scene_set_radius(OxScene *self, guint radius) {
  radius = MIN(radius, 16);
  if (radius == self->radius) return;
  self->radius = radius;
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_RADIUS]);
  if (self->history && self->shown == OX_VIEW_FOCUS) {
    GArray *seeds = g_array_new(FALSE, FALSE, sizeof(guint32));
    current_seeds(self, seeds);
    request_focus(self, (const guint32 *)(void *)seeds->data, seeds->len, TRUE);
    g_array_free(seeds, TRUE);
  }
}
guint ox_scene_get_radius(OxScene *self) { return self->radius; }
guint ox_scene_get_shown_radius(OxScene *self) { return self->shown_radius; }

void ox_scene_focus_uid(OxScene *self, guint32 uid) {
  if (!self->history || !uid) return;
  uid = ox_scene_drawn_uid(self, uid);
  if (self->shown == OX_VIEW_FULL) return; /* everything is laid out */
  if (self->shown != OX_VIEW_FOCUS) {
    if (self->mode == OX_VIEW_OVERVIEW) self->mode = OX_VIEW_AUTO;
    self->shown = OX_VIEW_FOCUS;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_SHOWN_MODE]);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_MODE]);
    request_focus(self, &uid, 1, FALSE);
    return;
  }
  focus_on(self, &uid, 1, FALSE);
}

const OxHierarchy *ox_scene_get_hierarchy(OxScene *self) { return self->hier; }
gboolean ox_scene_cluster_is_open(OxScene *self, guint32 c) {
  return self->hier && c < self->hier->n_clusters && self->open[c];
}

gboolean ox_scene_expand(OxScene *self, guint32 c) {
  if (!self->hier || c >= self->hier->n_clusters) return FALSE;
  /* open the cluster and its ancestors */
  guint8 *open = g_memdup2(self->open, self->hier->n_clusters + 1);
  for (gint32 x = (gint32)c; x >= 0; x = self->hier->clusters[x].parent) open[x] = 1;
  guint size = ox_view_overview_size(self->hier, open);
  if (size > self->budget) {
    g_free(open);
    set_note(self, g_strdup_printf("%s: expanding would show %u items, over the budget of %u; focus on a node "
                                   "inside instead",
                                   self->hier->clusters[c].path, size, self->budget));
    g_signal_emit(self, signals[SIGNAL_CHANGED], 0);
    return FALSE;
  }
  g_free(self->open);
  self->open = open;
  self->overview_size = size;
  if (self->shown == OX_VIEW_OVERVIEW) request_overview(self);
  return TRUE;
}

gboolean ox_scene_collapse(OxScene *self, guint32 c) {
  if (!self->hier || c == 0 || c >= self->hier->n_clusters || !self->open[c]) return FALSE;
  for (guint32 x = 1; x < self->hier->n_clusters; x++) {
    for (gint32 y = (gint32)x; y > 0; y = self->hier->clusters[y].parent)
      if ((guint32)y == c) {
        self->open[x] = 0;
        break;
      }
  }
  self->overview_size = ox_view_overview_size(self->hier, self->open);
  if (self->shown == OX_VIEW_OVERVIEW) request_overview(self);
  return TRUE;
}
guint ox_scene_get_overview_size(OxScene *self) { return self->overview_size; }

const OxLayoutNode *ox_scene_get_boxes(OxScene *self, guint *n) {
  *n = self->cur ? self->boxes->len : 0;
  return (const OxLayoutNode *)(void *)self->boxes->data;
}

gboolean ox_scene_box(OxScene *self, guint32 item, double *x, double *y, double *w, double *h) {
  if (!self->cur || item >= self->n_box_idx || self->box_idx[item] < 0) return FALSE;
  const OxLayoutNode *b = &g_array_index(self->boxes, OxLayoutNode, self->box_idx[item]);
  *x = b->x;
  *y = b->y;
  *w = b->w;
  *h = b->h;
  return TRUE;
}

const OxLayoutEdge *ox_scene_edge(OxScene *self, guint32 from, guint32 to) {
  if (!self->cur) return NULL;
  guint64 k = ((guint64)from << 32) | to;
  guint i = GPOINTER_TO_UINT(g_hash_table_lookup(self->edge_idx, (gpointer)(guintptr)k));
  return i ? &self->cur->layout->edges[i - 1] : NULL;
}

const OxLayout *ox_scene_get_layout(OxScene *self) { return self->cur ? self->cur->layout : NULL; }
void ox_scene_get_size(OxScene *self, double *width, double *height) {
  *width = self->width;
  *height = self->height;
}
gboolean ox_scene_is_overview(OxScene *self) { return self->cur && self->cur->graph != NULL; }
const OxGraph *ox_scene_get_graph(OxScene *self) {
  return self->cur && self->cur->graph ? self->cur->graph : (self->history ? self->history->u : NULL);
}

guint32 ox_scene_item_uid(OxScene *self, guint32 item) {
  if (!self->cur) return 0;
  if (!self->cur->graph) return item;
  return item < self->cur->n_items ? self->cur->item_uid[item] : 0;
}
gint32 ox_scene_item_cluster(OxScene *self, guint32 item) {
  if (!self->cur || !self->cur->graph) return -1;
  return item < self->cur->n_items ? self->cur->item_cluster[item] : -1;
}
guint32 ox_scene_uid_item(OxScene *self, guint32 uid) {
  return self->cur && uid < self->n_uid_item ? self->uid_item[uid] : 0;
}

void ox_scene_set_engine(OxScene *self, OxLayoutEngine engine) {
  if (engine == OX_LAYOUT_DOT_INPROC) engine = OX_LAYOUT_DOT;
  if (engine == self->engine) return;
  self->engine = engine;
  if (self->history) {
    job_cancel(self);
    prefetch_cancel(self);
    scene_refresh(self, TRUE);
  }
}
OxLayoutEngine ox_scene_get_engine(OxScene *self) { return self->engine; }
void ox_scene_set_time_budget(OxScene *self, double seconds) { self->time_budget = seconds > 0 ? seconds : 2.0; }
void ox_scene_set_viewport(OxScene *self, double width, double height) {
  self->view_w = width;
  self->view_h = height;
}

gboolean ox_scene_get_busy(OxScene *self) { return self->job != NULL || self->def_e != NULL; }
const char *ox_scene_get_note(OxScene *self) { return self->note; }
const char *ox_scene_get_error(OxScene *self) { return self->error; }
const OxSceneStats *ox_scene_get_stats(OxScene *self) { return &self->stats; }
void ox_scene_set_request_hook(OxScene *self, OxSceneHook hook, gpointer data) {
  self->hook = hook;
  self->hook_data = data;
}

/* ------------------------------------------------------------------ GObject */

static void ox_scene_get_property(GObject *o, guint id, GValue *v, GParamSpec *ps) {
  OxScene *self = OX_SCENE(o);
  switch (id) {
  case PROP_MODE: g_value_set_string(v, ox_view_mode_name(self->mode)); break;
  case PROP_SHOWN_MODE: g_value_set_string(v, ox_view_mode_name(self->shown)); break;
  case PROP_BUSY: g_value_set_boolean(v, ox_scene_get_busy(self)); break;
  case PROP_RADIUS: g_value_set_uint(v, self->radius); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(o, id, ps);
  }
}

static void ox_scene_dispose(GObject *o) {
  OxScene *self = OX_SCENE(o);
  job_cancel(self);
  prefetch_cancel(self);
  if (self->doc) {
    g_clear_signal_handler(&self->sig_history, self->doc);
    g_clear_signal_handler(&self->sig_frame, self->doc);
  }
  g_clear_object(&self->doc);
  G_OBJECT_CLASS(ox_scene_parent_class)->dispose(o);
}

static void ox_scene_finalize(GObject *o) {
  OxScene *self = OX_SCENE(o);
  cache_clear(self);
  ox_history_unref(self->history);
  ox_view_hierarchy_free(self->hier);
  g_free(self->open);
  g_array_free(self->boxes, TRUE);
  g_free(self->box_idx);
  g_free(self->uid_item);
  g_hash_table_destroy(self->edge_idx);
  g_free(self->note);
  g_free(self->error);
  g_free(self->last_selected);
  g_free(self->fold);
  g_free(self->n_params);
  g_free(self->folded);
  G_OBJECT_CLASS(ox_scene_parent_class)->finalize(o);
}

static void ox_scene_class_init(OxSceneClass *k) {
  GObjectClass *oc = G_OBJECT_CLASS(k);
  oc->get_property = ox_scene_get_property;
  oc->dispose = ox_scene_dispose;
  oc->finalize = ox_scene_finalize;
  GParamFlags ro = G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;
  props[PROP_MODE] = g_param_spec_string("mode", NULL, NULL, "auto", ro);
  props[PROP_SHOWN_MODE] = g_param_spec_string("shown-mode", NULL, NULL, "auto", ro);
  props[PROP_BUSY] = g_param_spec_boolean("busy", NULL, NULL, FALSE, ro);
  props[PROP_RADIUS] = g_param_spec_uint("radius", NULL, NULL, 0, 16, 0, ro);
  g_object_class_install_properties(oc, N_PROPS, props);
  signals[SIGNAL_CHANGED] =
    g_signal_new("changed", G_TYPE_FROM_CLASS(k), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void ox_scene_init(OxScene *self) {
  self->budget = 2500;
  self->time_budget = 2.0;
  self->dot_max = 600;
  self->dot_slow_at = G_MAXUINT;
  self->focus_size = 300;
  self->boxes = g_array_new(FALSE, FALSE, sizeof(OxLayoutNode));
  self->edge_idx = g_hash_table_new(g_direct_hash, g_direct_equal);
}
