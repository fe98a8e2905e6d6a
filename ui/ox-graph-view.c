/* ox-graph-view.c - the graph canvas (see ox-graph-view.h).
 *
 * Coordinates: layout points (y down) map to widget pixels by p * scale + offset. The layout is
 * of the history's union graph, computed once per history (or per focus region over the node
 * budget); each frame draws the uids the document marks visible at those fixed positions, and
 * only the edges of the shown graph. Layout jobs own a reference to the history they lay out
 * and a cancel flag; a finished job whose history is no longer current is dropped.
 */
#include "ox-graph-view.h"

#include <math.h>
#include <string.h>

#define MIN_SCALE 0.02
#define MAX_SCALE 8.0
#define FOCUS_RADIUS 4

struct _OxGraphView {
  GtkWidget parent_instance;

  /* owned */
  OxDocument *doc;
  OxHistory *history;     /* the history the current layout belongs to */
  OxLayout *layout;
  gint32 *layout_idx;     /* uid -> index in layout->nodes, -1 if not laid out */
  guint32 n_idx;
  GHashTable *edge_idx;   /* (from << 32 | to) -> edge index + 1 */
  guint8 *family;         /* uid -> OxFamily */
  GCancellable *job;      /* the running layout job */
  atomic_bool *job_cancel;
  char *layout_error;

  /* plain state */
  double scale, ox, oy;
  double drag_ox, drag_oy;
  double pointer_x, pointer_y;
  double zoom_begin_scale;
  gboolean edge_labels;
  gboolean fit_pending;
  gboolean center_pending;
  gboolean focus_mode;
  guint budget;
  guint n_layouts;
  guint last_position;
  gulong sig_history, sig_frame;
};

G_DEFINE_FINAL_TYPE(OxGraphView, ox_graph_view, GTK_TYPE_WIDGET)

enum { PROP_0, PROP_DOCUMENT, PROP_ZOOM, PROP_EDGE_LABELS, PROP_LAID_OUT, N_PROPS };
static GParamSpec *props[N_PROPS];

/* ------------------------------------------------------------------ layout jobs */

typedef struct LayoutJob {
  OxHistory *h;
  OxNodeId *subset;   /* NULL = whole union */
  guint32 n_subset;
  atomic_bool *cancel; /* shared with the view until the job finishes; freed with the job */
  gboolean edge_labels;
  char *error;
} LayoutJob;

static void layout_job_free(gpointer p) {
  LayoutJob *j = p;
  ox_history_unref(j->h);
  g_free(j->subset);
  g_free(j->cancel);
  g_free(j->error);
  g_free(j);
}

static void layout_thread(GTask *task, gpointer src, gpointer data, GCancellable *c) {
  (void)src;
  (void)c;
  LayoutJob *j = data;
  OxLayoutOptions opt = {.rankdir = "TB", .max_nodes = 0, .cancel = j->cancel, .with_shapes = FALSE};
  opt.max_nodes = j->subset ? j->n_subset + 1 : j->h->u->n_live + 1;
  OxLayout *l = NULL;
  char err[512] = "";
  if (ox_layout_compute(j->h->u, j->subset, j->subset ? j->n_subset : 0, &opt, &l, err, sizeof err) != 0) {
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", err[0] ? err : "layout failed");
    return;
  }
  g_task_return_pointer(task, l, (GDestroyNotify)ox_layout_free);
}

static void view_index_layout(OxGraphView *self) {
  const OxHistory *h = self->history;
  self->n_idx = h->u->n_nodes;
  self->layout_idx = g_renew(gint32, self->layout_idx, self->n_idx);
  for (guint32 i = 0; i < self->n_idx; i++) self->layout_idx[i] = -1;
  g_hash_table_remove_all(self->edge_idx);
  if (!self->layout) return;
  for (guint32 i = 0; i < self->layout->n_nodes; i++)
    if (self->layout->nodes[i].id < self->n_idx) self->layout_idx[self->layout->nodes[i].id] = (gint32)i;
  for (guint32 i = 0; i < self->layout->n_edges; i++) {
    const OxLayoutEdge *e = &self->layout->edges[i];
    guint64 key = ((guint64)e->from << 32) | e->to;
    g_hash_table_insert(self->edge_idx, (gpointer)(guintptr)key, GUINT_TO_POINTER(i + 1));
  }
}

static void layout_done(GObject *src, GAsyncResult *res, gpointer data) {
  (void)data;
  OxGraphView *self = OX_GRAPH_VIEW(src);
  GTask *task = G_TASK(res);
  LayoutJob *j = g_task_get_task_data(task);
  GError *err = NULL;
  OxLayout *l = g_task_propagate_pointer(task, &err);
  gboolean current = j->cancel == self->job_cancel;
  if (current) {
    self->job_cancel = NULL; /* the job frees it */
    g_clear_object(&self->job);
  }
  if (!current || j->h != self->history) {
    ox_layout_free(l);
    g_clear_error(&err);
    return;
  }
  g_clear_pointer(&self->layout_error, g_free);
  if (!l) {
    self->layout_error = g_strdup(err ? err->message : "layout failed");
    g_clear_error(&err);
  }
  ox_layout_free(self->layout);
  self->layout = l;
  self->n_layouts++;
  view_index_layout(self);
  if (self->fit_pending) {
    self->fit_pending = FALSE;
    ox_graph_view_fit(self);
  }
  if (self->center_pending) {
    self->center_pending = FALSE;
    ox_graph_view_center_on_step(self);
  }
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_LAID_OUT]);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

/* Seeds of a focus view: the current step's nodes, else the selection, else the first node. */
static GArray *focus_seeds(OxGraphView *self) {
  GArray *s = g_array_new(FALSE, FALSE, sizeof(guint32));
  guint n;
  const guint8 *st = ox_document_get_node_states(self->doc, &n);
  for (guint32 uid = 1; uid < n; uid++)
    if (st[uid] == OX_NS_ANCHOR || st[uid] == OX_NS_MATCHED || st[uid] == OX_NS_ADDED || st[uid] == OX_NS_REMOVED)
      g_array_append_val(s, uid);
  guint32 sel = ox_document_uid_of(self->doc, ox_document_get_selected(self->doc));
  if (sel) g_array_append_val(s, sel);
  if (!s->len) {
    for (guint32 uid = 1; uid < n; uid++)
      if (st[uid] != OX_NS_HIDDEN) {
        g_array_append_val(s, uid);
        break;
      }
  }
  return s;
}

/* Breadth-first neighbourhood in the union graph, at most radius hops and budget nodes. */
static OxNodeId *focus_subset(OxGraphView *self, guint32 *n_out) {
  const OxGraph *u = self->history->u;
  GArray *seeds = focus_seeds(self);
  guint8 *seen = g_new0(guint8, u->n_nodes);
  OxNodeId *out = g_new(OxNodeId, self->budget);
  guint32 *dist = g_new0(guint32, u->n_nodes);
  guint32 n = 0, head = 0;
  for (guint i = 0; i < seeds->len && n < self->budget; i++) {
    guint32 id = g_array_index(seeds, guint32, i);
    if (!seen[id]) {
      seen[id] = 1;
      out[n++] = id;
    }
  }
  OxNodeId ins[256];
  while (head < n && n < self->budget) {
    OxNodeId id = out[head++];
    if (dist[id] >= FOCUS_RADIUS) continue;
    guint32 n_in = ox_graph_inputs(u, id, ins, G_N_ELEMENTS(ins));
    n_in = MIN(n_in, G_N_ELEMENTS(ins));
    for (guint32 k = 0; k < n_in + u->nodes[id].n_users && n < self->budget; k++) {
      OxNodeId nb = k < n_in ? ins[k] : u->nodes[id].users[k - n_in];
      if (seen[nb]) continue;
      seen[nb] = 1;
      dist[nb] = dist[id] + 1;
      out[n++] = nb;
    }
  }
  g_array_free(seeds, TRUE);
  g_free(seen);
  g_free(dist);
  *n_out = n;
  return out;
}

static void view_start_layout(OxGraphView *self) {
  if (self->job_cancel) atomic_store(self->job_cancel, true);
  if (self->job) g_cancellable_cancel(self->job);
  g_clear_object(&self->job);
  self->job_cancel = NULL;
  if (!self->history) return;
  LayoutJob *j = g_new0(LayoutJob, 1);
  j->h = ox_history_ref(self->history);
  j->cancel = g_new0(atomic_bool, 1);
  atomic_init(j->cancel, false);
  self->focus_mode = self->history->u->n_live > self->budget;
  if (self->focus_mode) j->subset = focus_subset(self, &j->n_subset);
  self->job = g_cancellable_new();
  self->job_cancel = j->cancel;
  GTask *task = g_task_new(self, self->job, layout_done, NULL);
  g_task_set_task_data(task, j, layout_job_free);
  g_task_run_in_thread(task, layout_thread);
  g_object_unref(task);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_LAID_OUT]);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void on_history_changed(OxGraphView *self) {
  ox_history_unref(self->history);
  self->history = ox_document_get_history(self->doc);
  if (self->history) ox_history_ref(self->history);
  ox_layout_free(self->layout);
  self->layout = NULL;
  g_clear_pointer(&self->family, g_free);
  if (self->history) {
    const OxGraph *u = self->history->u;
    self->family = g_new0(guint8, u->n_nodes);
    for (guint32 id = 1; id < u->n_nodes; id++) self->family[id] = (guint8)ox_node_family(u, &u->nodes[id]);
    self->n_idx = 0;
    view_index_layout(self);
  }
  self->fit_pending = TRUE;
  self->last_position = 0;
  view_start_layout(self);
}

static void on_frame_changed(OxGraphView *self) {
  guint pos = ox_document_get_position(self->doc);
  if (pos != self->last_position) {
    self->last_position = pos;
    if (self->focus_mode && self->layout) {
      /* re-focus when the step left the laid-out region */
      guint32 a = ox_document_get_anchor_uid(self->doc);
      if (a && (a >= self->n_idx || self->layout_idx[a] < 0)) {
        self->center_pending = TRUE;
        view_start_layout(self);
      }
    }
    if (!self->job) ox_graph_view_center_on_step(self);
  }
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

/* ------------------------------------------------------------------ geometry */

static gboolean layout_box(OxGraphView *self, guint32 uid, double *x, double *y, double *w, double *h) {
  if (!self->layout || uid >= self->n_idx || self->layout_idx[uid] < 0) return FALSE;
  const OxLayoutNode *n = &self->layout->nodes[self->layout_idx[uid]];
  *x = n->x;
  *y = n->y;
  *w = n->w;
  *h = n->h;
  return TRUE;
}

gboolean ox_graph_view_node_bounds(OxGraphView *self, guint32 uid, graphene_rect_t *out) {
  double x, y, w, h;
  if (!layout_box(self, uid, &x, &y, &w, &h)) return FALSE;
  graphene_rect_init(out, (float)((x - w / 2) * self->scale + self->ox), (float)((y - h / 2) * self->scale + self->oy),
                     (float)(w * self->scale), (float)(h * self->scale));
  return TRUE;
}

guint32 ox_graph_view_hit(OxGraphView *self, double px, double py) {
  if (!self->layout) return 0;
  guint n;
  const guint8 *st = ox_document_get_node_states(self->doc, &n);
  double lx = (px - self->ox) / self->scale, ly = (py - self->oy) / self->scale;
  for (guint32 i = 0; i < self->layout->n_nodes; i++) {
    const OxLayoutNode *ln = &self->layout->nodes[i];
    if (ln->id >= n || st[ln->id] == OX_NS_HIDDEN) continue;
    if (fabs(lx - ln->x) <= ln->w / 2 && fabs(ly - ln->y) <= ln->h / 2) return ln->id;
  }
  return 0;
}

static void set_scale_at(OxGraphView *self, double scale, double px, double py) {
  scale = CLAMP(scale, MIN_SCALE, MAX_SCALE);
  /* keep the layout point under (px, py) fixed */
  double lx = (px - self->ox) / self->scale, ly = (py - self->oy) / self->scale;
  self->scale = scale;
  self->ox = px - lx * scale;
  self->oy = py - ly * scale;
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_ZOOM]);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void center_on(OxGraphView *self, double lx, double ly) {
  double w = gtk_widget_get_width(GTK_WIDGET(self)), h = gtk_widget_get_height(GTK_WIDGET(self));
  self->ox = w / 2 - lx * self->scale;
  self->oy = h / 2 - ly * self->scale;
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void zoom_to_box(OxGraphView *self, double x0, double y0, double x1, double y1, double max_scale) {
  double w = gtk_widget_get_width(GTK_WIDGET(self)), h = gtk_widget_get_height(GTK_WIDGET(self));
  if (w <= 1 || h <= 1) {
    self->fit_pending = TRUE; /* not allocated yet: fit at the first allocation */
    return;
  }
  double bw = MAX(x1 - x0, 1) + 40, bh = MAX(y1 - y0, 1) + 40;
  self->scale = CLAMP(MIN(w / bw, h / bh), MIN_SCALE, max_scale);
  center_on(self, (x0 + x1) / 2, (y0 + y1) / 2);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_ZOOM]);
}

void ox_graph_view_fit(OxGraphView *self) {
  if (!self->layout) {
    self->fit_pending = TRUE;
    return;
  }
  zoom_to_box(self, 0, 0, self->layout->width, self->layout->height, 1.5);
}

void ox_graph_view_zoom_in(OxGraphView *self) {
  set_scale_at(self, self->scale * 1.25, gtk_widget_get_width(GTK_WIDGET(self)) / 2.0,
               gtk_widget_get_height(GTK_WIDGET(self)) / 2.0);
}
void ox_graph_view_zoom_out(OxGraphView *self) {
  set_scale_at(self, self->scale / 1.25, gtk_widget_get_width(GTK_WIDGET(self)) / 2.0,
               gtk_widget_get_height(GTK_WIDGET(self)) / 2.0);
}
void ox_graph_view_zoom_reset(OxGraphView *self) {
  set_scale_at(self, 1.0, gtk_widget_get_width(GTK_WIDGET(self)) / 2.0,
               gtk_widget_get_height(GTK_WIDGET(self)) / 2.0);
}
double ox_graph_view_get_zoom(OxGraphView *self) { return self->scale; }

gboolean ox_graph_view_zoom_to_selection(OxGraphView *self) {
  double x, y, w, h;
  guint32 uid = ox_document_uid_of(self->doc, ox_document_get_selected(self->doc));
  if (!layout_box(self, uid, &x, &y, &w, &h)) return FALSE;
  zoom_to_box(self, x - w * 4, y - h * 6, x + w * 4, y + h * 6, 1.2);
  return TRUE;
}

gboolean ox_graph_view_center_on_step(OxGraphView *self) {
  if (!self->layout) {
    self->center_pending = TRUE;
    return FALSE;
  }
  guint n;
  const guint8 *st = ox_document_get_node_states(self->doc, &n);
  double x0 = G_MAXDOUBLE, y0 = G_MAXDOUBLE, x1 = -G_MAXDOUBLE, y1 = -G_MAXDOUBLE;
  for (guint32 uid = 1; uid < n; uid++) {
    if (st[uid] < OX_NS_MATCHED) continue;
    double x, y, w, h;
    if (!layout_box(self, uid, &x, &y, &w, &h)) continue;
    x0 = MIN(x0, x - w / 2);
    y0 = MIN(y0, y - h / 2);
    x1 = MAX(x1, x + w / 2);
    y1 = MAX(y1, y + h / 2);
  }
  if (x0 > x1) return FALSE;
  if (self->scale < 0.6) {
    /* labels are unreadable below ~0.3: zoom in on the step, never past 100% */
    zoom_to_box(self, x0, y0, x1, y1, 1.0);
    return TRUE;
  }
  center_on(self, (x0 + x1) / 2, (y0 + y1) / 2);
  return TRUE;
}

gboolean ox_graph_view_get_edge_labels(OxGraphView *self) { return self->edge_labels; }
void ox_graph_view_set_edge_labels(OxGraphView *self, gboolean on) {
  on = !!on;
  if (on == self->edge_labels) return;
  self->edge_labels = on;
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_EDGE_LABELS]);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

gboolean ox_graph_view_is_laid_out(OxGraphView *self) { return self->layout != NULL && !self->job; }
const OxLayout *ox_graph_view_get_layout(OxGraphView *self) { return self->layout; }
void ox_graph_view_set_node_budget(OxGraphView *self, guint budget) { self->budget = MAX(budget, 10); }
guint ox_graph_view_get_n_layouts(OxGraphView *self) { return self->n_layouts; }
OxDocument *ox_graph_view_get_document(OxGraphView *self) { return self->doc; }

/* ------------------------------------------------------------------ drawing */

static void set_rgb(cairo_t *cr, guint32 rgb, double alpha) {
  cairo_set_source_rgba(cr, ((rgb >> 16) & 0xff) / 255.0, ((rgb >> 8) & 0xff) / 255.0, (rgb & 0xff) / 255.0, alpha);
}

static void rounded_rect(cairo_t *cr, double x, double y, double w, double h, double r) {
  r = MIN(r, MIN(w, h) / 2);
  cairo_new_sub_path(cr);
  cairo_arc(cr, x + w - r, y + r, r, -G_PI / 2, 0);
  cairo_arc(cr, x + w - r, y + h - r, r, 0, G_PI / 2);
  cairo_arc(cr, x + r, y + h - r, r, G_PI / 2, G_PI);
  cairo_arc(cr, x + r, y + r, r, G_PI, 3 * G_PI / 2);
  cairo_close_path(cr);
}

static const char *short_target(const char *t) {
  const char *dot = strrchr(t, '.');
  /* aten overloads: "torch.ops.aten.mm.default" -> "mm.default" */
  if (dot && (g_str_has_suffix(t, ".default") || g_str_has_suffix(t, ".Tensor") || g_str_has_suffix(t, ".int"))) {
    const char *p = dot;
    while (p > t && p[-1] != '.') p--;
    if (p > t) {
      p--;
      while (p > t && p[-1] != '.') p--;
    }
    return p;
  }
  return dot ? dot + 1 : t;
}

#define COLOR_REMOVED 0xe01b24
#define COLOR_ADDED 0x26a269
#define COLOR_MATCH 0xff7800
#define COLOR_SELECT 0x1c71d8
#define COLOR_HIT 0xf6d32d

static void draw_edge(OxGraphView *self, cairo_t *cr, const OxFrameEdge *fe, const guint8 *st, gboolean stepping,
                      PangoLayout *pl, const OxGraph *g, guint k) {
  guint64 key = ((guint64)fe->from << 32) | fe->to;
  guint idx = GPOINTER_TO_UINT(g_hash_table_lookup(self->edge_idx, (gpointer)(guintptr)key));
  double x0 = 0, y0 = 0, w0 = 0, h0 = 0, x1 = 0, y1 = 0, w1 = 0, h1 = 0;
  const OxLayoutEdge *e = idx ? &self->layout->edges[idx - 1] : NULL;
  if (!e && !(layout_box(self, fe->from, &x0, &y0, &w0, &h0) && layout_box(self, fe->to, &x1, &y1, &w1, &h1)))
    return;
  gboolean hot = !stepping || st[fe->from] >= OX_NS_MATCHED || st[fe->to] >= OX_NS_MATCHED;
  if (fe->ghost)
    set_rgb(cr, COLOR_REMOVED, 0.7);
  else
    cairo_set_source_rgba(cr, 0.25, 0.25, 0.3, hot ? 0.9 : 0.25);
  double lw = 1.2 / MAX(self->scale, 0.3);
  cairo_set_line_width(cr, lw);
  if (fe->ghost) {
    double dash[2] = {4, 3};
    cairo_set_dash(cr, dash, 2, 0);
  }
  double ex, ey, px, py;
  if (e && e->n_pts >= 4) {
    cairo_move_to(cr, e->pts[0], e->pts[1]);
    for (guint32 i = 1; i + 2 < e->n_pts; i += 3)
      cairo_curve_to(cr, e->pts[2 * i], e->pts[2 * i + 1], e->pts[2 * i + 2], e->pts[2 * i + 3], e->pts[2 * i + 4],
                     e->pts[2 * i + 5]);
    ex = e->has_arrow ? e->ax : e->pts[2 * (e->n_pts - 1)];
    ey = e->has_arrow ? e->ay : e->pts[2 * (e->n_pts - 1) + 1];
    px = e->pts[2 * (e->n_pts - 1)];
    py = e->pts[2 * (e->n_pts - 1) + 1];
    if (e->has_arrow) cairo_line_to(cr, ex, ey);
  } else {
    /* an edge the union layout has no spline for (only in focus views): straight line */
    cairo_move_to(cr, x0, y0 + h0 / 2);
    ex = x1;
    ey = y1 - h1 / 2;
    px = x0;
    py = y0 + h0 / 2;
    cairo_line_to(cr, ex, ey);
  }
  cairo_stroke(cr);
  cairo_set_dash(cr, NULL, 0, 0);
  /* arrowhead */
  double dx = ex - px, dy = ey - py, len = sqrt(dx * dx + dy * dy);
  if (len > 0.01) {
    dx /= len;
    dy /= len;
    double s = 7;
    cairo_move_to(cr, ex, ey);
    cairo_line_to(cr, ex - dx * s - dy * s * 0.5, ey - dy * s + dx * s * 0.5);
    cairo_line_to(cr, ex - dx * s + dy * s * 0.5, ey - dy * s - dx * s * 0.5);
    cairo_close_path(cr);
    cairo_fill(cr);
  }
  if (self->edge_labels && e && e->n_pts >= 4 && g && self->scale > 0.35) {
    const char *name = self->history->name[fe->from];
    OxNodeId id = ox_graph_find(g, name);
    const OxTensorMeta *tm = id ? ox_node_tensor_meta(&g->nodes[id]) : NULL;
    (void)k;
    if (tm) {
      char buf[160];
      ox_tensor_meta_format(tm, false, false, buf, sizeof buf);
      guint32 mid = (e->n_pts / 2);
      pango_layout_set_width(pl, -1);
      pango_layout_set_text(pl, buf, -1);
      cairo_set_source_rgba(cr, 0.1, 0.3, 0.6, hot ? 1 : 0.4);
      cairo_move_to(cr, e->pts[2 * mid] + 4, e->pts[2 * mid + 1] - 6);
      pango_cairo_show_layout(cr, pl);
    }
  }
}

static void draw_node(OxGraphView *self, cairo_t *cr, guint32 uid, guint8 state, gboolean selected, gboolean hit,
                      PangoLayout *pl_name, PangoLayout *pl_small, gboolean text) {
  double x, y, w, h;
  if (!layout_box(self, uid, &x, &y, &w, &h)) return;
  double x0 = x - w / 2, y0 = y - h / 2;
  double alpha = state == OX_NS_DIMMED ? 0.35 : 1.0;
  guint32 fill = ox_family_color((OxFamily)self->family[uid]);
  if (state == OX_NS_REMOVED) fill = 0xf6b9b9;
  if (state == OX_NS_ADDED) fill = 0xb5e8b0;
  if (hit) {
    rounded_rect(cr, x0 - 6, y0 - 6, w + 12, h + 12, 10);
    set_rgb(cr, COLOR_HIT, 0.9);
    cairo_fill(cr);
  }
  if (state == OX_NS_ANCHOR) {
    rounded_rect(cr, x0 - 5, y0 - 5, w + 10, h + 10, 10);
    set_rgb(cr, COLOR_MATCH, 0.35);
    cairo_fill(cr);
  }
  rounded_rect(cr, x0, y0, w, h, 6);
  set_rgb(cr, fill, alpha);
  cairo_fill_preserve(cr);
  double lw = 1.0;
  guint32 border = 0x303030;
  switch ((OxNodeState)state) {
  case OX_NS_REMOVED: border = COLOR_REMOVED; lw = 3; break;
  case OX_NS_ADDED: border = COLOR_ADDED; lw = 3; break;
  case OX_NS_ANCHOR: border = COLOR_MATCH; lw = 4; break;
  case OX_NS_MATCHED: border = COLOR_MATCH; lw = 3; break;
  default: break;
  }
  if (state == OX_NS_REMOVED && !ox_document_get_show_before(self->doc)) {
    double dash[2] = {5, 3};
    cairo_set_dash(cr, dash, 2, 0);
  }
  set_rgb(cr, border, state == OX_NS_DIMMED ? 0.35 : 1.0);
  cairo_set_line_width(cr, lw);
  cairo_stroke(cr);
  cairo_set_dash(cr, NULL, 0, 0);
  if (selected) {
    rounded_rect(cr, x0 - 3, y0 - 3, w + 6, h + 6, 8);
    set_rgb(cr, COLOR_SELECT, 1.0);
    cairo_set_line_width(cr, 4);
    cairo_stroke(cr);
  }
  if (!text) return;
  const OxNode *un = &self->history->u->nodes[uid];
  cairo_set_source_rgba(cr, 0.05, 0.05, 0.05, state == OX_NS_DIMMED ? 0.45 : 1.0);
  /* long names are ellipsized to the box Graphviz sized with its own font metrics */
  pango_layout_set_width(pl_name, (int)((w - 6) * PANGO_SCALE));
  pango_layout_set_width(pl_small, (int)((w - 6) * PANGO_SCALE));
  pango_layout_set_text(pl_name, self->history->name[uid], -1);
  int tw, th;
  pango_layout_get_pixel_size(pl_name, &tw, &th);
  cairo_move_to(cr, x - tw / 2.0, y - th + 1);
  pango_cairo_show_layout(cr, pl_name);
  const char *sub = un->op == OX_OP_CALL_FUNCTION || un->op == OX_OP_CALL_METHOD ? short_target(un->target)
                                                                                 : ox_op_name((OxOp)un->op);
  pango_layout_set_text(pl_small, sub, -1);
  pango_layout_get_pixel_size(pl_small, &tw, &th);
  cairo_move_to(cr, x - tw / 2.0, y + 1);
  pango_cairo_show_layout(cr, pl_small);
}

static void ox_graph_view_snapshot(GtkWidget *w, GtkSnapshot *snap) {
  OxGraphView *self = OX_GRAPH_VIEW(w);
  double width = gtk_widget_get_width(w), height = gtk_widget_get_height(w);
  cairo_t *cr = gtk_snapshot_append_cairo(snap, &GRAPHENE_RECT_INIT(0, 0, (float)width, (float)height));
  cairo_set_source_rgb(cr, 0.98, 0.98, 0.97);
  cairo_paint(cr);
  PangoLayout *msg = gtk_widget_create_pango_layout(w, NULL);
  const char *note = NULL;
  char buf[256];
  if (!self->history)
    note = "Open a graph dump (Ctrl+O) or drop a file here";
  else if (!self->layout && self->job) {
    g_snprintf(buf, sizeof buf, "Laying out %u nodes…", self->history->u->n_live);
    note = buf;
  } else if (!self->layout && self->layout_error) {
    g_snprintf(buf, sizeof buf, "Layout failed: %s", self->layout_error);
    note = buf;
  }
  if (note) {
    pango_layout_set_text(msg, note, -1);
    int tw, th;
    pango_layout_get_pixel_size(msg, &tw, &th);
    cairo_set_source_rgb(cr, 0.4, 0.4, 0.4);
    cairo_move_to(cr, (width - tw) / 2, (height - th) / 2);
    pango_cairo_show_layout(cr, msg);
  }
  if (self->layout && self->history) {
    guint n;
    const guint8 *st = ox_document_get_node_states(self->doc, &n);
    gboolean stepping = ox_document_get_step(self->doc) != NULL;
    guint32 sel = ox_document_uid_of(self->doc, ox_document_get_selected(self->doc));
    cairo_save(cr);
    cairo_translate(cr, self->ox, self->oy);
    cairo_scale(cr, self->scale, self->scale);
    /* visible layout rectangle, for culling */
    double vx0 = -self->ox / self->scale, vy0 = -self->oy / self->scale;
    double vx1 = vx0 + width / self->scale, vy1 = vy0 + height / self->scale;
    PangoLayout *pl_name = gtk_widget_create_pango_layout(w, NULL);
    PangoLayout *pl_small = gtk_widget_create_pango_layout(w, NULL);
    PangoFontDescription *fd = pango_font_description_from_string("Sans Bold 9");
    pango_layout_set_font_description(pl_name, fd);
    pango_font_description_free(fd);
    fd = pango_font_description_from_string("Sans 8");
    pango_layout_set_font_description(pl_small, fd);
    pango_font_description_free(fd);
    pango_layout_set_ellipsize(pl_name, PANGO_ELLIPSIZE_MIDDLE);
    pango_layout_set_ellipsize(pl_small, PANGO_ELLIPSIZE_END);
    guint ne;
    const OxFrameEdge *edges = ox_document_get_edges(self->doc, &ne);
    const OxGraph *g = ox_document_get_graph(self->doc);
    for (guint i = 0; i < ne; i++) draw_edge(self, cr, &edges[i], st, stepping, pl_small, g, 0);
    gboolean text = self->scale > 0.3;
    for (guint32 i = 0; i < self->layout->n_nodes; i++) {
      const OxLayoutNode *ln = &self->layout->nodes[i];
      if (ln->id >= n || st[ln->id] == OX_NS_HIDDEN) continue;
      if (ln->x + ln->w < vx0 || ln->x - ln->w > vx1 || ln->y + ln->h < vy0 || ln->y - ln->h > vy1) continue;
      draw_node(self, cr, ln->id, st[ln->id], ln->id == sel, ox_document_is_hit(self->doc, ln->id), pl_name, pl_small,
                text);
    }
    g_object_unref(pl_name);
    g_object_unref(pl_small);
    cairo_restore(cr);
    if (self->focus_mode) {
      g_snprintf(buf, sizeof buf, "focus view: %u of %u nodes around the step (radius %d)", self->layout->n_nodes,
                 self->history->u->n_live, FOCUS_RADIUS);
      pango_layout_set_text(msg, buf, -1);
      cairo_set_source_rgb(cr, 0.35, 0.35, 0.4);
      cairo_move_to(cr, 8, 6);
      pango_cairo_show_layout(cr, msg);
    }
  }
  g_object_unref(msg);
  cairo_destroy(cr);
}

/* ------------------------------------------------------------------ input */

static void select_uid(OxGraphView *self, guint32 uid) {
  const char *name = uid ? self->history->name[uid] : "";
  if (!gtk_widget_activate_action(GTK_WIDGET(self), "win.select-node", "s", name))
    ox_document_select(self->doc, *name ? name : NULL);
}

static void on_click(GtkGestureClick *g, int n_press, double x, double y, OxGraphView *self) {
  (void)n_press;
  GtkWidget *w = GTK_WIDGET(self);
  gtk_widget_grab_focus(w);
  if (!self->history) return;
  GdkEventSequence *seq = gtk_gesture_single_get_current_sequence(GTK_GESTURE_SINGLE(g));
  (void)seq;
  select_uid(self, ox_graph_view_hit(self, x, y));
}

static void on_drag_begin(GtkGestureDrag *g, double x, double y, OxGraphView *self) {
  (void)g;
  (void)x;
  (void)y;
  self->drag_ox = self->ox;
  self->drag_oy = self->oy;
}

static void on_drag_update(GtkGestureDrag *g, double dx, double dy, OxGraphView *self) {
  (void)g;
  self->ox = self->drag_ox + dx;
  self->oy = self->drag_oy + dy;
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

static gboolean on_scroll(GtkEventControllerScroll *c, double dx, double dy, OxGraphView *self) {
  GdkModifierType mods = gtk_event_controller_get_current_event_state(GTK_EVENT_CONTROLLER(c));
  if (mods & GDK_CONTROL_MASK) {
    set_scale_at(self, self->scale * pow(1.15, -dy), self->pointer_x, self->pointer_y);
  } else {
    if (mods & GDK_SHIFT_MASK) {
      double t = dx;
      dx = dy;
      dy = t;
    }
    self->ox -= dx * 40;
    self->oy -= dy * 40;
    gtk_widget_queue_draw(GTK_WIDGET(self));
  }
  return TRUE;
}

static void on_motion(GtkEventControllerMotion *c, double x, double y, OxGraphView *self) {
  (void)c;
  self->pointer_x = x;
  self->pointer_y = y;
}

static void on_zoom_begin(GtkGesture *g, GdkEventSequence *s, OxGraphView *self) {
  (void)g;
  (void)s;
  self->zoom_begin_scale = self->scale;
}

static void on_zoom_changed(GtkGestureZoom *g, double scale, OxGraphView *self) {
  double cx, cy;
  if (!gtk_gesture_get_bounding_box_center(GTK_GESTURE(g), &cx, &cy)) {
    cx = gtk_widget_get_width(GTK_WIDGET(self)) / 2.0;
    cy = gtk_widget_get_height(GTK_WIDGET(self)) / 2.0;
  }
  set_scale_at(self, self->zoom_begin_scale * scale, cx, cy);
}

static gboolean on_query_tooltip(GtkWidget *w, int x, int y, gboolean kb, GtkTooltip *tip, gpointer data) {
  (void)data;
  (void)kb;
  OxGraphView *self = OX_GRAPH_VIEW(w);
  guint32 uid = ox_graph_view_hit(self, x, y);
  if (!uid) return FALSE;
  const char *name = self->history->name[uid];
  const OxGraph *g = ox_document_get_graph(self->doc);
  OxNodeId id = ox_graph_find(g, name);
  const OxNode *n = id ? &g->nodes[id] : &self->history->u->nodes[uid];
  char shape[200] = "shape unknown";
  const OxTensorMeta *tm = ox_node_tensor_meta(n);
  if (tm) ox_tensor_meta_format(tm, true, true, shape, sizeof shape);
  char *text = g_markup_printf_escaped("<b>%s</b>\n%s  <tt>%s</tt>\n%s%s", name, ox_op_name((OxOp)n->op), n->target,
                                       shape, id ? "" : "\n(not in the shown graph)");
  gtk_tooltip_set_markup(tip, text);
  g_free(text);
  return TRUE;
}

static void ox_graph_view_size_allocate(GtkWidget *w, int width, int height, int baseline) {
  OxGraphView *self = OX_GRAPH_VIEW(w);
  (void)baseline;
  if (width > 1 && height > 1 && self->fit_pending && self->layout) {
    self->fit_pending = FALSE;
    ox_graph_view_fit(self);
  }
}

static void ox_graph_view_measure(GtkWidget *w, GtkOrientation o, int for_size, int *min, int *nat, int *min_b,
                                  int *nat_b) {
  (void)w;
  (void)for_size;
  *min = 100;
  *nat = o == GTK_ORIENTATION_HORIZONTAL ? 700 : 500;
  *min_b = *nat_b = -1;
}

/* ------------------------------------------------------------------ GObject */

GtkWidget *ox_graph_view_new(OxDocument *doc) { return g_object_new(OX_TYPE_GRAPH_VIEW, "document", doc, NULL); }

static void view_set_document(OxGraphView *self, OxDocument *doc) {
  g_assert(!self->doc);
  self->doc = g_object_ref(doc);
  self->sig_history = g_signal_connect_swapped(doc, "history-changed", G_CALLBACK(on_history_changed), self);
  self->sig_frame = g_signal_connect_swapped(doc, "frame-changed", G_CALLBACK(on_frame_changed), self);
  if (ox_document_get_history(doc)) on_history_changed(self);
}

static void ox_graph_view_get_property(GObject *o, guint id, GValue *v, GParamSpec *ps) {
  OxGraphView *self = OX_GRAPH_VIEW(o);
  switch (id) {
  case PROP_DOCUMENT: g_value_set_object(v, self->doc); break;
  case PROP_ZOOM: g_value_set_double(v, self->scale); break;
  case PROP_EDGE_LABELS: g_value_set_boolean(v, self->edge_labels); break;
  case PROP_LAID_OUT: g_value_set_boolean(v, ox_graph_view_is_laid_out(self)); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(o, id, ps);
  }
}

static void ox_graph_view_set_property(GObject *o, guint id, const GValue *v, GParamSpec *ps) {
  OxGraphView *self = OX_GRAPH_VIEW(o);
  switch (id) {
  case PROP_DOCUMENT: view_set_document(self, g_value_get_object(v)); break;
  case PROP_EDGE_LABELS: ox_graph_view_set_edge_labels(self, g_value_get_boolean(v)); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(o, id, ps);
  }
}

static void ox_graph_view_dispose(GObject *o) {
  OxGraphView *self = OX_GRAPH_VIEW(o);
  if (self->job_cancel) atomic_store(self->job_cancel, true);
  self->job_cancel = NULL;
  if (self->job) g_cancellable_cancel(self->job);
  g_clear_object(&self->job);
  if (self->doc) {
    g_clear_signal_handler(&self->sig_history, self->doc);
    g_clear_signal_handler(&self->sig_frame, self->doc);
  }
  g_clear_object(&self->doc);
  G_OBJECT_CLASS(ox_graph_view_parent_class)->dispose(o);
}

static void ox_graph_view_finalize(GObject *o) {
  OxGraphView *self = OX_GRAPH_VIEW(o);
  ox_history_unref(self->history);
  ox_layout_free(self->layout);
  g_free(self->layout_idx);
  g_hash_table_destroy(self->edge_idx);
  g_free(self->family);
  g_free(self->layout_error);
  G_OBJECT_CLASS(ox_graph_view_parent_class)->finalize(o);
}

static void ox_graph_view_class_init(OxGraphViewClass *k) {
  GObjectClass *oc = G_OBJECT_CLASS(k);
  GtkWidgetClass *wc = GTK_WIDGET_CLASS(k);
  oc->get_property = ox_graph_view_get_property;
  oc->set_property = ox_graph_view_set_property;
  oc->dispose = ox_graph_view_dispose;
  oc->finalize = ox_graph_view_finalize;
  wc->snapshot = ox_graph_view_snapshot;
  wc->measure = ox_graph_view_measure;
  wc->size_allocate = ox_graph_view_size_allocate;
  props[PROP_DOCUMENT] = g_param_spec_object("document", NULL, NULL, OX_TYPE_DOCUMENT,
                                             G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  props[PROP_ZOOM] = g_param_spec_double("zoom", NULL, NULL, MIN_SCALE, MAX_SCALE, 1.0,
                                         G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  props[PROP_EDGE_LABELS] = g_param_spec_boolean("edge-labels", NULL, NULL, FALSE,
                                                 G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  props[PROP_LAID_OUT] = g_param_spec_boolean("laid-out", NULL, NULL, FALSE,
                                              G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties(oc, N_PROPS, props);
  gtk_widget_class_set_css_name(wc, "oxgraphview");
  gtk_widget_class_set_accessible_role(wc, GTK_ACCESSIBLE_ROLE_IMG);
}

static void ox_graph_view_init(OxGraphView *self) {
  GtkWidget *w = GTK_WIDGET(self);
  self->scale = 1.0;
  self->budget = 2500;
  self->edge_idx = g_hash_table_new(g_direct_hash, g_direct_equal);
  gtk_widget_set_focusable(w, TRUE);
  gtk_widget_set_overflow(w, GTK_OVERFLOW_HIDDEN);
  gtk_widget_set_has_tooltip(w, TRUE);
  g_signal_connect(w, "query-tooltip", G_CALLBACK(on_query_tooltip), NULL);

  GtkGesture *click = gtk_gesture_click_new();
  gtk_gesture_single_set_button(GTK_GESTURE_SINGLE(click), GDK_BUTTON_PRIMARY);
  g_signal_connect(click, "released", G_CALLBACK(on_click), self);
  gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(click));

  GtkGesture *drag = gtk_gesture_drag_new();
  g_signal_connect(drag, "drag-begin", G_CALLBACK(on_drag_begin), self);
  g_signal_connect(drag, "drag-update", G_CALLBACK(on_drag_update), self);
  gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(drag));

  GtkEventController *scroll = gtk_event_controller_scroll_new(GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
  g_signal_connect(scroll, "scroll", G_CALLBACK(on_scroll), self);
  gtk_widget_add_controller(w, scroll);

  GtkEventController *motion = gtk_event_controller_motion_new();
  g_signal_connect(motion, "motion", G_CALLBACK(on_motion), self);
  gtk_widget_add_controller(w, motion);

  GtkGesture *zoom = gtk_gesture_zoom_new();
  g_signal_connect(zoom, "begin", G_CALLBACK(on_zoom_begin), self);
  g_signal_connect(zoom, "scale-changed", G_CALLBACK(on_zoom_changed), self);
  gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(zoom));
}
