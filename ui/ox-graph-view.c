/* ox-graph-view.c - the graph canvas (see ox-graph-view.h).
 *
 * Coordinates: scene points (y down) map to widget pixels by p * scale + offset. What is laid
 * out is the OxScene's business (full union graph, focus neighbourhood or cluster overview,
 * each within the node budget); the canvas draws the scene's boxes with the document's frame
 * states, and for union-graph scenes only the edges of the shown graph among the nodes in the
 * scene (asked per node, never for the whole graph). Drawing culls to the visible rectangle.
 */
#include "ox-graph-view.h"

#include <math.h>
#include <string.h>

#define MIN_SCALE 0.01
#define MAX_SCALE 8.0
#define READABLE_SCALE 0.8 /* the zoom a step is shown at, at least: labels read there */

/* A stub's label on screen: clicking it selects the node at the stub's far end. */
typedef struct StubHit {
  double x, y, w, h;
  guint32 item;
} StubHit;

struct _OxGraphView {
  GtkWidget parent_instance;

  /* owned */
  OxDocument *doc;
  OxScene *scene;
  OxHistory *history;     /* the history family colours belong to */
  guint8 *family;         /* uid -> OxFamily */
  GArray *step_items;     /* overview: items holding the step's nodes */
  GHashTable *promoted;   /* drawn uid -> step state of a node folded into it (a parameter that
                             is the step's anchor highlights its consumer's box) */
  GArray *stub_hits;      /* StubHit, from the last frame */

  /* plain state */
  double scale, ox, oy;
  double drag_ox, drag_oy;
  double pointer_x, pointer_y;
  double zoom_begin_scale;
  gboolean edge_labels;
  gboolean fit_pending;
  gboolean fitted;         /* the view is as fit left it: a resize fits it again */
  int alloc_w, alloc_h;
  gboolean center_pending;
  gboolean select_pending; /* zoom to the selection once the scene holding it is laid out */
  guint last_position;
  guint n_paints;
  gulong sig_history, sig_frame, sig_scene, sig_busy, sig_mode;
};

G_DEFINE_FINAL_TYPE(OxGraphView, ox_graph_view, GTK_TYPE_WIDGET)

enum { PROP_0, PROP_DOCUMENT, PROP_ZOOM, PROP_EDGE_LABELS, PROP_LAID_OUT, N_PROPS };
static GParamSpec *props[N_PROPS];
enum { SIGNAL_VIEWPORT_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void viewport_changed(OxGraphView *self) {
  gtk_widget_queue_draw(GTK_WIDGET(self));
  g_signal_emit(self, signals[SIGNAL_VIEWPORT_CHANGED], 0);
}

/* ------------------------------------------------------------------ scene and document */

static void on_scene_changed(OxGraphView *self) {
  if (self->fit_pending && ox_scene_get_layout(self->scene)) {
    self->fit_pending = FALSE;
    ox_graph_view_fit(self);
  }
  if (self->select_pending && ox_graph_view_zoom_to_selection(self)) self->select_pending = FALSE;
  if (self->center_pending && ox_scene_get_layout(self->scene) && !ox_scene_get_busy(self->scene)) {
    self->center_pending = FALSE;
    ox_graph_view_center_on_step(self);
  }
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_LAID_OUT]);
  viewport_changed(self);
}

static void on_scene_busy(OxGraphView *self) {
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_LAID_OUT]);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void on_scene_mode(OxGraphView *self) {
  /* a different kind of scene: frame it whole once it is there */
  if (ox_scene_get_shown_mode(self->scene) == OX_VIEW_OVERVIEW) self->fit_pending = TRUE;
}

static void on_history_changed(OxGraphView *self) {
  ox_history_unref(self->history);
  self->history = ox_document_get_history(self->doc);
  if (self->history) ox_history_ref(self->history);
  g_clear_pointer(&self->family, g_free);
  if (self->history) {
    const OxGraph *u = self->history->u;
    self->family = g_new0(guint8, u->n_nodes);
    for (guint32 id = 1; id < u->n_nodes; id++) self->family[id] = (guint8)ox_node_family(u, &u->nodes[id]);
  }
  self->fit_pending = TRUE;
  self->last_position = 0;
  g_hash_table_remove_all(self->promoted);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

/* Every identity of every node the shown step names (anchor first, then matched, removed,
 * added), that is not hidden in the frame; cheap: a step names a handful of nodes. */
static void step_uids(OxGraphView *self, GArray *out) {
  const OxStep *s = ox_document_get_step(self->doc);
  if (!s || !self->history) return;
  guint n;
  const guint8 *st = ox_document_get_node_states(self->doc, &n);
  const char *const *lists[3] = {s->matched, s->removed, s->added};
  guint32 ns[3] = {s->n_matched, s->n_removed, s->n_added};
  for (int l = -1; l < 3; l++) {
    guint32 cnt = l < 0 ? (s->anchor ? 1 : 0) : ns[l];
    for (guint32 i = 0; i < cnt; i++) {
      const char *name = l < 0 ? s->anchor : lists[l][i];
      for (guint32 e = ox_history_named(self->history, name); e; e = self->history->named[e].next) {
        guint32 uid = self->history->named[e].uid;
        if (uid < n && st[uid] != OX_NS_HIDDEN) g_array_append_val(out, uid);
      }
    }
  }
}

static void step_items_update(OxGraphView *self) {
  g_array_set_size(self->step_items, 0);
  if (!ox_scene_is_overview(self->scene)) return;
  GArray *uids = g_array_new(FALSE, FALSE, sizeof(guint32));
  step_uids(self, uids);
  for (guint i = 0; i < uids->len; i++) {
    guint32 it = ox_scene_uid_item(self->scene, g_array_index(uids, guint32, i));
    if (it) g_array_append_val(self->step_items, it);
  }
  g_array_free(uids, TRUE);
}

/* The step's nodes that are folded into another box (parameters into their consumer) lend it
 * their state: the strongest, the anchor first. */
static guint state_rank(guint8 st) {
  return st == OX_NS_ANCHOR ? 4 : st == OX_NS_REMOVED ? 3 : st == OX_NS_ADDED ? 2 : st == OX_NS_MATCHED ? 1 : 0;
}

static void promoted_update(OxGraphView *self) {
  g_hash_table_remove_all(self->promoted);
  guint n;
  const guint8 *st = ox_document_get_node_states(self->doc, &n);
  GArray *uids = g_array_new(FALSE, FALSE, sizeof(guint32));
  step_uids(self, uids);
  for (guint i = 0; i < uids->len; i++) {
    guint32 uid = g_array_index(uids, guint32, i), d = ox_scene_drawn_uid(self->scene, uid);
    if (!state_rank(st[uid]) || d == uid || d >= n) continue;
    guint8 old = (guint8)GPOINTER_TO_UINT(g_hash_table_lookup(self->promoted, GUINT_TO_POINTER(d)));
    if (state_rank(st[uid]) > state_rank(old))
      g_hash_table_insert(self->promoted, GUINT_TO_POINTER(d), GUINT_TO_POINTER((guint)st[uid]));
  }
  g_array_free(uids, TRUE);
}

/* uid's state as drawn: its own, or that of a step node folded into it */
static guint8 shown_state(OxGraphView *self, const guint8 *st, guint32 uid) {
  guint8 own = st[uid];
  if (own == OX_NS_HIDDEN || !g_hash_table_size(self->promoted)) return own;
  guint8 p = (guint8)GPOINTER_TO_UINT(g_hash_table_lookup(self->promoted, GUINT_TO_POINTER(uid)));
  return state_rank(p) > state_rank(own) ? p : own;
}

static void on_frame_changed(OxGraphView *self) {
  guint pos = ox_document_get_position(self->doc);
  step_items_update(self);
  promoted_update(self);
  if (pos != self->last_position) {
    self->last_position = pos;
    if (ox_scene_get_busy(self->scene))
      self->center_pending = TRUE;
    else
      ox_graph_view_center_on_step(self);
  }
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

/* ------------------------------------------------------------------ geometry */

static gboolean uid_box(OxGraphView *self, guint32 uid, double *x, double *y, double *w, double *h) {
  guint32 it = ox_scene_uid_item(self->scene, uid);
  if (!it) return FALSE;
  if (ox_scene_is_overview(self->scene) && ox_scene_item_uid(self->scene, it) != uid) return FALSE;
  return ox_scene_box(self->scene, it, x, y, w, h);
}

gboolean ox_graph_view_node_bounds(OxGraphView *self, guint32 uid, graphene_rect_t *out) {
  double x, y, w, h;
  if (!uid_box(self, uid, &x, &y, &w, &h)) return FALSE;
  graphene_rect_init(out, (float)((x - w / 2) * self->scale + self->ox), (float)((y - h / 2) * self->scale + self->oy),
                     (float)(w * self->scale), (float)(h * self->scale));
  return TRUE;
}

guint32 ox_graph_view_hit_item(OxGraphView *self, double px, double py) {
  guint n_boxes, n;
  const OxLayoutNode *b = ox_scene_get_boxes(self->scene, &n_boxes);
  const guint8 *st = ox_document_get_node_states(self->doc, &n);
  double lx = (px - self->ox) / self->scale, ly = (py - self->oy) / self->scale;
  for (guint32 i = 0; i < n_boxes; i++) {
    guint32 uid = ox_scene_item_uid(self->scene, b[i].id);
    if (uid && (uid >= n || st[uid] == OX_NS_HIDDEN)) continue;
    if (fabs(lx - b[i].x) <= b[i].w / 2 && fabs(ly - b[i].y) <= b[i].h / 2) return b[i].id;
  }
  return 0;
}

guint32 ox_graph_view_hit(OxGraphView *self, double px, double py) {
  guint32 it = ox_graph_view_hit_item(self, px, py);
  return it ? ox_scene_item_uid(self->scene, it) : 0;
}

static void set_scale_at(OxGraphView *self, double scale, double px, double py) {
  self->fitted = FALSE;
  scale = CLAMP(scale, MIN_SCALE, MAX_SCALE);
  /* keep the layout point under (px, py) fixed */
  double lx = (px - self->ox) / self->scale, ly = (py - self->oy) / self->scale;
  self->scale = scale;
  self->ox = px - lx * scale;
  self->oy = py - ly * scale;
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_ZOOM]);
  viewport_changed(self);
}

void ox_graph_view_center_at(OxGraphView *self, double lx, double ly) {
  self->fitted = FALSE;
  double w = gtk_widget_get_width(GTK_WIDGET(self)), h = gtk_widget_get_height(GTK_WIDGET(self));
  self->ox = w / 2 - lx * self->scale;
  self->oy = h / 2 - ly * self->scale;
  viewport_changed(self);
}

void ox_graph_view_get_visible(OxGraphView *self, graphene_rect_t *out) {
  double w = gtk_widget_get_width(GTK_WIDGET(self)), h = gtk_widget_get_height(GTK_WIDGET(self));
  graphene_rect_init(out, (float)(-self->ox / self->scale), (float)(-self->oy / self->scale), (float)(w / self->scale),
                     (float)(h / self->scale));
}

static void zoom_to_box(OxGraphView *self, double x0, double y0, double x1, double y1, double max_scale) {
  double w = gtk_widget_get_width(GTK_WIDGET(self)), h = gtk_widget_get_height(GTK_WIDGET(self));
  if (w <= 1 || h <= 1) {
    self->fit_pending = TRUE; /* not allocated yet: fit at the first allocation */
    return;
  }
  double bw = MAX(x1 - x0, 1) + 40, bh = MAX(y1 - y0, 1) + 40;
  self->scale = CLAMP(MIN(w / bw, h / bh), MIN_SCALE, max_scale);
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_ZOOM]);
  ox_graph_view_center_at(self, (x0 + x1) / 2, (y0 + y1) / 2);
}

void ox_graph_view_fit(OxGraphView *self) {
  if (!ox_scene_get_layout(self->scene)) {
    self->fit_pending = TRUE;
    return;
  }
  double sw, sh;
  ox_scene_get_size(self->scene, &sw, &sh);
  zoom_to_box(self, 0, 0, sw, sh, 1.5);
  self->fitted = !self->fit_pending;
}

gboolean ox_graph_view_get_fitted(OxGraphView *self) { return self->fitted; }

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
  if (!uid) return FALSE;
  if (!uid_box(self, uid, &x, &y, &w, &h) || ox_scene_get_busy(self->scene)) {
    /* not in the scene: focus on it; zoom once that layout is in */
    self->select_pending = TRUE;
    if (!ox_scene_get_busy(self->scene)) ox_scene_focus_uid(self->scene, uid);
    if (!uid_box(self, uid, &x, &y, &w, &h) || ox_scene_get_busy(self->scene)) return FALSE;
    self->select_pending = FALSE;
  }
  zoom_to_box(self, x - w * 4, y - h * 6, x + w * 4, y + h * 6, 1.2);
  return TRUE;
}

gboolean ox_graph_view_center_on_step(OxGraphView *self) {
  if (!ox_scene_get_layout(self->scene)) {
    self->center_pending = TRUE;
    return FALSE;
  }
  double x0 = G_MAXDOUBLE, y0 = G_MAXDOUBLE, x1 = -G_MAXDOUBLE, y1 = -G_MAXDOUBLE;
  GArray *items = g_array_new(FALSE, FALSE, sizeof(guint32));
  const OxStep *s = ox_document_get_step(self->doc);
  if (ox_scene_is_overview(self->scene)) {
    g_array_append_vals(items, self->step_items->data, self->step_items->len);
  } else if (s && self->history) {
    /* the step's nodes (a folded parameter is drawn as part of its consumer) */
    guint n;
    const guint8 *st = ox_document_get_node_states(self->doc, &n);
    step_uids(self, items);
    guint k = 0;
    for (guint i = 0; i < items->len; i++) {
      guint32 uid = g_array_index(items, guint32, i);
      if (st[uid] >= OX_NS_MATCHED) g_array_index(items, guint32, k++) = ox_scene_drawn_uid(self->scene, uid);
    }
    g_array_set_size(items, k);
  }
  /* the anchor's box (the first item when the step has one) */
  double ax0 = G_MAXDOUBLE, ay0 = G_MAXDOUBLE, ax1 = -G_MAXDOUBLE, ay1 = -G_MAXDOUBLE;
  for (guint i = 0; i < items->len; i++) {
    double x, y, w, h;
    if (!ox_scene_box(self->scene, g_array_index(items, guint32, i), &x, &y, &w, &h)) continue;
    if (ax0 > ax1) {
      ax0 = x - w / 2;
      ax1 = x + w / 2;
      ay0 = y - h / 2;
      ay1 = y + h / 2;
    }
    x0 = MIN(x0, x - w / 2);
    y0 = MIN(y0, y - h / 2);
    x1 = MAX(x1, x + w / 2);
    y1 = MAX(y1, y + h / 2);
  }
  g_array_free(items, TRUE);
  if (x0 > x1) return FALSE;
  double ww = gtk_widget_get_width(GTK_WIDGET(self)), wh = gtk_widget_get_height(GTK_WIDGET(self));
  double vw = ww / self->scale, vh = wh / self->scale;
  if (self->scale < READABLE_SCALE || x1 - x0 + 40 > vw || y1 - y0 + 40 > vh) {
    /* zoom to the step, never past 100% and never below the zoom where labels read: a step
     * larger than the view is centred on its anchor (pan, or use the minimap, for the rest) */
    double fit = MIN(ww / (x1 - x0 + 40), wh / (y1 - y0 + 40));
    if (fit >= READABLE_SCALE) {
      zoom_to_box(self, x0, y0, x1, y1, 1.0);
      return TRUE;
    }
    self->scale = READABLE_SCALE;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_ZOOM]);
    ox_graph_view_center_at(self, ax0 <= ax1 ? (ax0 + ax1) / 2 : (x0 + x1) / 2, ay0 <= ay1 ? (ay0 + ay1) / 2 : (y0 + y1) / 2);
    return TRUE;
  }
  ox_graph_view_center_at(self, (x0 + x1) / 2, (y0 + y1) / 2);
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

gboolean ox_graph_view_is_laid_out(OxGraphView *self) {
  return ox_scene_get_layout(self->scene) != NULL && !ox_scene_get_busy(self->scene);
}
const OxLayout *ox_graph_view_get_layout(OxGraphView *self) { return ox_scene_get_layout(self->scene); }
void ox_graph_view_set_node_budget(OxGraphView *self, guint budget) { ox_scene_set_budget(self->scene, budget); }
guint ox_graph_view_get_n_layouts(OxGraphView *self) { return ox_scene_get_stats(self->scene)->n_requests; }
OxDocument *ox_graph_view_get_document(OxGraphView *self) { return self->doc; }
OxScene *ox_graph_view_get_scene(OxGraphView *self) { return self->scene; }
guint ox_graph_view_get_n_paints(OxGraphView *self) { return self->n_paints; }

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

#define COLOR_REMOVED OX_COLOR_REMOVED
#define COLOR_ADDED OX_COLOR_ADDED
#define COLOR_MATCH OX_COLOR_MATCH
#define COLOR_SELECT 0x1c71d8
#define COLOR_HIT 0xf6d32d
#define COLOR_CLUSTER 0xdce6f2
#define COLOR_STUB 0x8a6d3b

/* Text is drawn in screen pixels, after the shapes: sized with the zoom, never below a
 * readable minimum; a box too small for both lines shows the one that says most (a node's op,
 * a cluster's node count); a box too small for that shows none. */
#define NAME_PX 12.0   /* "Sans Bold 9" at 96 dpi: the size the scene sized boxes for */
#define SMALL_PX 10.7  /* "Sans 8" */
#define MIN_PX 7.0     /* below this text is noise: it is clamped, and elided to fit */

typedef struct TextPass {
  PangoLayout *name, *small, *badge;
  double name_h, small_h, badge_h;
  double px_scale;     /* screen font size / the size at zoom 1 */
} TextPass;

static void text_pass_init(TextPass *tp, GtkWidget *w, double scale) {
  tp->px_scale = MAX(scale, MIN_PX / SMALL_PX);
  PangoLayout **pls[3] = {&tp->name, &tp->small, &tp->badge};
  const char *fonts[3] = {OX_SCENE_FONT_NAME, OX_SCENE_FONT_SMALL, "Sans Bold 7"};
  double *hs[3] = {&tp->name_h, &tp->small_h, &tp->badge_h};
  for (int i = 0; i < 3; i++) {
    *pls[i] = gtk_widget_create_pango_layout(w, NULL);
    PangoFontDescription *fd = pango_font_description_from_string(fonts[i]);
    double base = i == 0 ? NAME_PX : i == 1 ? SMALL_PX : 9.3;
    /* badges do not grow past their zoom-1 size */
    double px = base * (i == 2 ? MIN(tp->px_scale, 1.0) : tp->px_scale);
    pango_font_description_set_absolute_size(fd, MAX(px, i == 2 ? 7.0 : MIN_PX) * PANGO_SCALE);
    pango_layout_set_font_description(*pls[i], fd);
    pango_font_description_free(fd);
    pango_layout_set_text(*pls[i], "Mg", -1);
    int tw, th;
    pango_layout_get_pixel_size(*pls[i], &tw, &th);
    *hs[i] = th;
  }
  pango_layout_set_ellipsize(tp->name, PANGO_ELLIPSIZE_MIDDLE);
  pango_layout_set_ellipsize(tp->small, PANGO_ELLIPSIZE_END);
}

static void text_pass_clear(TextPass *tp) {
  g_clear_object(&tp->name);
  g_clear_object(&tp->small);
  g_clear_object(&tp->badge);
}

/* Centres one line in [x0, x0 + w]; elided to w unless `whole` (a count is never cut: it is
 * left out when it does not fit). Returns FALSE when nothing was drawn. */
static int text_px(PangoLayout *pl, const char *text) {
  pango_layout_set_text(pl, text, -1);
  int tw, th;
  pango_layout_get_pixel_size(pl, &tw, &th);
  return tw;
}

/* One name elided to fit w, keeping what tells it from its siblings: its numbered end
 * ("tanh_200_5" -> "ta…_200_5", never "ta…0_5"), then as much of its start as fits. */
static void elide_name(PangoLayout *pl, const char *name, double w, GString *out) {
  gsize len = strlen(name);
  if (text_px(pl, name) <= w) {
    g_string_append(out, name);
    return;
  }
  /* the tail: everything after the last letter (digits and separators), else the last 3 bytes */
  gsize t = len;
  while (t > 0 && !g_ascii_isalpha(name[t - 1])) t--;
  if (t == len || t == 0) t = len > 3 ? len - 3 : 0;
  while (t > 0 && (name[t] & 0xc0) == 0x80) t--;
  GString *c = g_string_new(NULL);
  gsize lo = 0, hi = t, best = G_MAXSIZE;
  while (lo <= hi) { /* the longest start that fits before "…tail" */
    gsize k = (lo + hi) / 2, kk = k;
    while (kk > 0 && (name[kk] & 0xc0) == 0x80) kk--;
    g_string_truncate(c, 0);
    g_string_append_len(c, name, (gssize)kk);
    g_string_append(c, "\xe2\x80\xa6");
    g_string_append(c, name + t);
    if (text_px(pl, c->str) <= w) {
      best = kk;
      lo = k + 1;
    } else {
      if (k == 0) break;
      hi = k - 1;
    }
  }
  if (best != G_MAXSIZE && (best >= 3 || best == t)) {
    g_string_append_len(out, name, (gssize)best);
    g_string_append(out, "\xe2\x80\xa6");
    g_string_append(out, name + t);
  } else {
    /* too small to keep the whole end with a readable start: as much of the start and of the
     * end as fits, balanced (ASCII names; a multi-byte character is never cut) */
    gsize lo2 = 0, hi2 = len, keep = 0;
    while (lo2 <= hi2) {
      gsize n = (lo2 + hi2) / 2, k = (n + 1) / 2, m = n - k;
      while (k > 0 && (name[k] & 0xc0) == 0x80) k--;
      gsize e = len - m;
      while (e < len && (name[e] & 0xc0) == 0x80) e++;
      g_string_truncate(c, 0);
      g_string_append_len(c, name, (gssize)k);
      g_string_append(c, "\xe2\x80\xa6");
      g_string_append(c, name + e);
      if (text_px(pl, c->str) <= w) {
        keep = n;
        lo2 = n + 1;
      } else {
        if (n == 0) break;
        hi2 = n - 1;
      }
    }
    if (keep) {
      gsize k = (keep + 1) / 2, m = keep - k, e = len - m;
      while (k > 0 && (name[k] & 0xc0) == 0x80) k--;
      while (e < len && (name[e] & 0xc0) == 0x80) e++;
      g_string_append_len(out, name, (gssize)k);
      g_string_append(out, "\xe2\x80\xa6");
      g_string_append(out, name + e);
    }
  }
  g_string_free(c, TRUE);
}

/* A label elided to w: "first … last" labels elide each name on its own. */
static char *elide_label(PangoLayout *pl, const char *text, double w) {
  pango_layout_set_width(pl, -1);
  pango_layout_set_ellipsize(pl, PANGO_ELLIPSIZE_NONE);
  GString *out = g_string_new(NULL);
  const char *sep = strstr(text, " \xe2\x80\xa6 ");
  if (sep && text_px(pl, text) > w) {
    char *a = g_strndup(text, (gsize)(sep - text));
    double ws = text_px(pl, " \xe2\x80\xa6 "), room = w - ws;
    /* the shorter name keeps what it needs, up to half; the other gets the rest */
    double pa = text_px(pl, a), pb = text_px(pl, sep + 5);
    double wa = pa <= pb ? MIN(pa, room / 2) : room - MIN(pb, room / 2);
    if (MIN(wa, room - wa) < text_px(pl, "mmmmm")) {
      /* no room for two readable names: the first one, with an ellipsis for the rest */
      elide_name(pl, a, w - text_px(pl, " \xe2\x80\xa6"), out);
      if (out->len) g_string_append(out, " \xe2\x80\xa6");
    } else {
      elide_name(pl, a, wa, out);
      g_string_append(out, " \xe2\x80\xa6 ");
      elide_name(pl, sep + 5, room - wa, out);
    }
    g_free(a);
  } else {
    elide_name(pl, text, w, out);
  }
  return g_string_free(out, FALSE);
}

static gboolean show_line(cairo_t *cr, PangoLayout *pl, const char *text, double cx, double y, double w,
                          gboolean whole) {
  if (!text || !*text || w < 8) return FALSE;
  char *fitted = whole ? NULL : elide_label(pl, text, w);
  if (fitted && !*fitted) {
    g_free(fitted);
    return FALSE;
  }
  pango_layout_set_width(pl, -1);
  pango_layout_set_ellipsize(pl, PANGO_ELLIPSIZE_NONE);
  pango_layout_set_text(pl, fitted ? fitted : text, -1);
  g_free(fitted);
  int tw, th;
  pango_layout_get_pixel_size(pl, &tw, &th);
  if (whole && tw > w) return FALSE;
  cairo_move_to(cr, cx - tw / 2.0, y);
  pango_cairo_show_layout(cr, pl);
  return TRUE;
}

/* The label lines of a box, in screen space (sx, sy centre; sw, sh size). */
static void draw_box_text(cairo_t *cr, TextPass *tp, double sx, double sy, double sw, double sh, const char *l1,
                          const char *l2, gboolean cluster, double alpha) {
  double inner = sw - 8, need2 = tp->name_h + tp->small_h;
  cairo_set_source_rgba(cr, 0.05, 0.05, 0.05, alpha);
  if (sh >= need2 - 1) {
    double top = sy - need2 / 2;
    show_line(cr, tp->name, l1, sx, top, inner, FALSE);
    if (!show_line(cr, tp->small, l2, sx, top + tp->name_h, inner, cluster) && cluster) {
      /* the count alone, shorter: "161,592" */
      char num[64];
      g_snprintf(num, sizeof num, "%s", l2);
      char *sp = strchr(num, ' ');
      if (sp) *sp = 0;
      show_line(cr, tp->small, num, sx, top + tp->name_h, inner, TRUE);
    }
  } else if (sh >= tp->small_h + 1) {
    /* one line: what the node does; a cluster's label, elided, and its count, whole */
    double y = sy - tp->small_h / 2;
    if (!cluster) {
      show_line(cr, tp->small, l2, sx, y, inner, FALSE);
      return;
    }
    char num[64];
    g_snprintf(num, sizeof num, " \xc2\xb7 %s", l2);
    char *sp = strchr(num + 4, ' '); /* " · 42 nodes" -> " · 42" */
    if (sp) *sp = 0;
    pango_layout_set_width(tp->small, -1);
    pango_layout_set_text(tp->small, num, -1);
    int nw, nh, lw, lh;
    pango_layout_get_pixel_size(tp->small, &nw, &nh);
    double room = inner - nw;
    if (room < 24) {
      show_line(cr, tp->small, num + 4, sx, y, inner, TRUE);
      return;
    }
    char *fitted = elide_label(tp->small, l1, room);
    pango_layout_set_text(tp->small, fitted, -1);
    g_free(fitted);
    pango_layout_get_pixel_size(tp->small, &lw, &lh);
    double x0 = sx - (lw + nw) / 2.0;
    cairo_move_to(cr, x0, y);
    pango_cairo_show_layout(cr, tp->small);
    pango_layout_set_text(tp->small, num, -1);
    cairo_move_to(cr, x0 + lw, y);
    pango_cairo_show_layout(cr, tp->small);
  }
}

/* "+3 params" in a pill on the box's top right corner. */
static void draw_badge(cairo_t *cr, TextPass *tp, double sx1, double sy0, guint n) {
  char text[32];
  g_snprintf(text, sizeof text, "+%u param%s", n, n == 1 ? "" : "s");
  pango_layout_set_width(tp->badge, -1);
  pango_layout_set_text(tp->badge, text, -1);
  int tw, th;
  pango_layout_get_pixel_size(tp->badge, &tw, &th);
  double x = sx1 - tw - 6, y = sy0 - th / 2.0 - 1;
  rounded_rect(cr, x - 3, y, tw + 6, th + 1, (th + 1) / 2.0);
  set_rgb(cr, 0x5e5c64, 0.9);
  cairo_fill(cr);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_move_to(cr, x, y + 0.5);
  pango_cairo_show_layout(cr, tp->badge);
}

/* Draws an edge between items from -> to: the layout's spline when it has one, else a straight
 * line between the boxes (edges of a step that the union layout never saw, placed nodes). A
 * stub is a short edge into (or out of) its box; its far end's name is drawn by the text pass. */
static const OxLayoutEdge *draw_edge(OxGraphView *self, cairo_t *cr, guint32 from, guint32 to, gboolean ghost,
                                     gboolean hot) {
  const OxLayoutEdge *e = ox_scene_edge(self->scene, from, to);
  double x0 = 0, y0 = 0, w0 = 0, h0 = 0, x1 = 0, y1 = 0, w1 = 0, h1 = 0;
  if (!e && !(ox_scene_box(self->scene, from, &x0, &y0, &w0, &h0) && ox_scene_box(self->scene, to, &x1, &y1, &w1, &h1)))
    return NULL;
  if (ghost)
    set_rgb(cr, COLOR_REMOVED, 0.7);
  else if (e && e->stub)
    set_rgb(cr, COLOR_STUB, hot ? 0.95 : 0.5);
  else
    cairo_set_source_rgba(cr, 0.25, 0.25, 0.3, hot ? 0.9 : 0.25);
  cairo_set_line_width(cr, 1.2 / MAX(self->scale, 0.3));
  if (ghost || (e && e->stub)) {
    double dash[2] = {4, 3};
    cairo_set_dash(cr, dash, e && e->stub && !ghost ? 0 : 2, 0);
  }
  double ex, ey, px, py;
  if (e && e->n_pts >= 4) {
    cairo_move_to(cr, e->pts[0], e->pts[1]);
    for (guint32 i = 1; i + 2 < e->n_pts; i += 3)
      cairo_curve_to(cr, e->pts[2 * i], e->pts[2 * i + 1], e->pts[2 * i + 2], e->pts[2 * i + 3], e->pts[2 * i + 4],
                     e->pts[2 * i + 5]);
    ex = e->has_arrow ? e->ax : e->pts[2 * (e->n_pts - 1)];
    ey = e->has_arrow ? e->ay : e->pts[2 * (e->n_pts - 1) + 1];
    /* the arrow's direction: from the spline's last control point that differs from its end */
    guint32 k = e->n_pts - 1;
    px = e->pts[2 * k];
    py = e->pts[2 * k + 1];
    for (guint32 q = k; q-- > 0 && fabs(px - ex) + fabs(py - ey) < 0.01;) {
      px = e->pts[2 * q];
      py = e->pts[2 * q + 1];
    }
    if (e->has_arrow) cairo_line_to(cr, ex, ey);
  } else {
    if (!e) {
      ox_scene_box(self->scene, from, &x0, &y0, &w0, &h0);
      ox_scene_box(self->scene, to, &x1, &y1, &w1, &h1);
    }
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
  return e;
}

static void draw_node(OxGraphView *self, cairo_t *cr, const OxLayoutNode *b, guint32 uid, guint8 state,
                      gboolean selected, gboolean hit) {
  double x = b->x, y = b->y, w = b->w, h = b->h;
  double x0 = x - w / 2, y0 = y - h / 2;
  double alpha = state == OX_NS_DIMMED ? 0.35 : 1.0;
  guint32 fill = ox_family_color((OxFamily)self->family[uid]);
  if (state == OX_NS_REMOVED) fill = OX_FILL_REMOVED;
  if (state == OX_NS_ADDED) fill = OX_FILL_ADDED;
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
  /* borders stay visible when zoomed far out */
  cairo_set_line_width(cr, MAX(lw, lw / MAX(self->scale, 0.05) * 0.5));
  cairo_stroke(cr);
  cairo_set_dash(cr, NULL, 0, 0);
  if (selected) {
    rounded_rect(cr, x0 - 3, y0 - 3, w + 6, h + 6, 8);
    set_rgb(cr, COLOR_SELECT, 1.0);
    cairo_set_line_width(cr, MAX(4, 2 / MAX(self->scale, 0.05)));
    cairo_stroke(cr);
  }
}

/* A collapsed cluster of the overview: a stacked box. */
static void draw_cluster(OxGraphView *self, cairo_t *cr, const OxLayoutNode *b, gboolean hot, gboolean selected) {
  double x0 = b->x - b->w / 2, y0 = b->y - b->h / 2;
  for (int k = 2; k >= 0; k--) {
    rounded_rect(cr, x0 + k * 3, y0 - k * 3, b->w, b->h, 6);
    set_rgb(cr, k ? 0xc2d3e8 : COLOR_CLUSTER, 1.0);
    cairo_fill_preserve(cr);
    set_rgb(cr, 0x3d5a80, 1.0);
    cairo_set_line_width(cr, MAX(1.2, 0.6 / MAX(self->scale, 0.05)));
    cairo_stroke(cr);
  }
  if (hot) {
    rounded_rect(cr, x0 - 2, y0 - 2, b->w + 4, b->h + 4, 8);
    set_rgb(cr, COLOR_MATCH, 1.0);
    cairo_set_line_width(cr, MAX(4, 2 / MAX(self->scale, 0.05)));
    cairo_stroke(cr);
  }
  if (selected) {
    rounded_rect(cr, x0 - 5, y0 - 5, b->w + 10, b->h + 10, 9);
    set_rgb(cr, COLOR_SELECT, 1.0);
    cairo_set_line_width(cr, 3);
    cairo_stroke(cr);
  }
}

static gboolean in_view(const OxLayoutNode *b, double vx0, double vy0, double vx1, double vy1) {
  return !(b->x + b->w < vx0 || b->x - b->w > vx1 || b->y + b->h < vy0 || b->y - b->h > vy1);
}

/* The name at a stub's far end, at its loose end: clickable (it selects that node). */
static void draw_stub_label(OxGraphView *self, cairo_t *cr, TextPass *tp, const OxLayoutEdge *e) {
  guint32 far_item = e->stub == OX_STUB_AT_TO ? e->from : e->to;
  char l1[320], l2[320];
  ox_scene_item_label(self->scene, far_item, l1, sizeof l1, l2, sizeof l2);
  if (!l1[0]) return;
  /* loose end: the first point of a stub into a box, the arrow tip of a stub out of one */
  double lx = e->stub == OX_STUB_AT_TO ? e->pts[0] : e->ax, ly = e->stub == OX_STUB_AT_TO ? e->pts[1] : e->ay;
  double sx = lx * self->scale + self->ox, sy = ly * self->scale + self->oy;
  pango_layout_set_width(tp->badge, -1);
  pango_layout_set_text(tp->badge, l1, -1);
  int tw, th;
  pango_layout_get_pixel_size(tp->badge, &tw, &th);
  double x = sx - tw / 2.0, y = e->stub == OX_STUB_AT_TO ? sy - th - 1 : sy + 1;
  /* many stubs to one far node (every tower into a cat) share a label per stretch of a row */
  for (guint i = 0; i < self->stub_hits->len; i++) {
    const StubHit *h = &g_array_index(self->stub_hits, StubHit, i);
    if (h->item == far_item && fabs(h->y - y) < th && fabs(h->x + h->w / 2 - sx) < h->w + 80) return;
  }
  set_rgb(cr, 0xfaf4e6, 0.92);
  cairo_rectangle(cr, x - 2, y, tw + 4, th);
  cairo_fill(cr);
  set_rgb(cr, COLOR_STUB, 1.0);
  cairo_move_to(cr, x, y);
  pango_cairo_show_layout(cr, tp->badge);
  if (self->stub_hits->len < 4096) {
    StubHit hit = {x - 2, y, tw + 4, th, far_item};
    g_array_append_val(self->stub_hits, hit);
  }
}


static void ox_graph_view_snapshot(GtkWidget *w, GtkSnapshot *snap) {
  OxGraphView *self = OX_GRAPH_VIEW(w);
  self->n_paints++;
  g_array_set_size(self->stub_hits, 0);
  double width = gtk_widget_get_width(w), height = gtk_widget_get_height(w);
  cairo_t *cr = gtk_snapshot_append_cairo(snap, &GRAPHENE_RECT_INIT(0, 0, (float)width, (float)height));
  cairo_set_source_rgb(cr, 0.98, 0.98, 0.97);
  cairo_paint(cr);
  PangoLayout *msg = gtk_widget_create_pango_layout(w, NULL);
  const char *note = NULL;
  char buf[700];
  const OxLayout *layout = ox_scene_get_layout(self->scene);
  gboolean busy = ox_scene_get_busy(self->scene);
  const char *err = ox_scene_get_error(self->scene);
  if (!self->history)
    note = "Open a graph dump (Ctrl+O) or drop a file here";
  else if (!layout && busy) {
    g_snprintf(buf, sizeof buf, "Laying out (%s view of %u nodes)…",
               ox_view_mode_name(ox_scene_get_shown_mode(self->scene)), self->history->u->n_live);
    note = buf;
  } else if (!layout && err) {
    g_snprintf(buf, sizeof buf, "Nothing to show yet: %s", err);
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
  if (layout && self->history) {
    guint n;
    const guint8 *st = ox_document_get_node_states(self->doc, &n);
    gboolean stepping = ox_document_get_step(self->doc) != NULL;
    guint32 sel = ox_scene_drawn_uid(self->scene, ox_document_uid_of(self->doc, ox_document_get_selected(self->doc)));
    guint32 sel_item = ox_scene_uid_item(self->scene, sel);
    gboolean overview = ox_scene_is_overview(self->scene);
    cairo_save(cr);
    cairo_translate(cr, self->ox, self->oy);
    cairo_scale(cr, self->scale, self->scale);
    /* visible layout rectangle, for culling */
    double vx0 = -self->ox / self->scale, vy0 = -self->oy / self->scale;
    double vx1 = vx0 + width / self->scale, vy1 = vy0 + height / self->scale;
    guint n_boxes;
    const OxLayoutNode *boxes = ox_scene_get_boxes(self->scene, &n_boxes);
    GPtrArray *stubs = g_ptr_array_new();
    if (overview) {
      /* the overview's edges are its own (between clusters and shown nodes) */
      for (guint32 i = 0; i < layout->n_edges; i++) {
        const OxLayoutEdge *e = &layout->edges[i];
        double bx, by, bw, bh, cx, cy, cw, ch;
        if (!ox_scene_box(self->scene, e->from, &bx, &by, &bw, &bh) || !ox_scene_box(self->scene, e->to, &cx, &cy, &cw, &ch))
          continue;
        if (MAX(bx, cx) < vx0 || MIN(bx, cx) > vx1 || MAX(by, cy) < vy0 || MIN(by, cy) > vy1) continue;
        const OxLayoutEdge *d = draw_edge(self, cr, e->from, e->to, FALSE, TRUE);
        if (d && d->stub) g_ptr_array_add(stubs, (gpointer)d);
      }
    } else {
      /* the shown graph's edges among the scene's nodes, asked per node */
      OxFrameEdge stack_fe[256];
      for (guint i = 0; i < n_boxes; i++) {
        guint32 uid = boxes[i].id;
        if (uid >= n || st[uid] == OX_NS_HIDDEN) continue;
        guint m;
        OxFrameEdge *fe = ox_document_in_edges_all(self->doc, uid, stack_fe, G_N_ELEMENTS(stack_fe), &m);
        for (guint j = 0; j < m; j++) {
          double bx, by, bw, bh;
          if (!ox_scene_box(self->scene, fe[j].from, &bx, &by, &bw, &bh)) continue;
          if (MAX(bx, boxes[i].x) < vx0 - 40 || MIN(bx, boxes[i].x) > vx1 + 40 || MAX(by, boxes[i].y) < vy0 - 40 ||
              MIN(by, boxes[i].y) > vy1 + 40)
            continue;
          gboolean hot = !stepping || shown_state(self, st, fe[j].from) >= OX_NS_MATCHED ||
                         shown_state(self, st, uid) >= OX_NS_MATCHED;
          const OxLayoutEdge *d = draw_edge(self, cr, fe[j].from, uid, fe[j].ghost, hot);
          if (d && d->stub) g_ptr_array_add(stubs, (gpointer)d);
        }
        if (fe != stack_fe) g_free(fe);
      }
    }
    for (guint32 i = 0; i < n_boxes; i++) {
      const OxLayoutNode *b = &boxes[i];
      if (!in_view(b, vx0, vy0, vx1, vy1)) continue;
      gint32 c = ox_scene_item_cluster(self->scene, b->id);
      if (c >= 0) {
        gboolean hot = FALSE;
        for (guint k = 0; k < self->step_items->len && !hot; k++) hot = g_array_index(self->step_items, guint32, k) == b->id;
        draw_cluster(self, cr, b, hot, b->id == sel_item);
        continue;
      }
      guint32 uid = ox_scene_item_uid(self->scene, b->id);
      if (!uid || uid >= n || st[uid] == OX_NS_HIDDEN) continue;
      draw_node(self, cr, b, uid, shown_state(self, st, uid), uid == sel, ox_document_is_hit(self->doc, uid));
    }
    cairo_restore(cr);
    /* text, in screen pixels */
    TextPass tp;
    text_pass_init(&tp, w, self->scale);
    char l1[320], l2[320];
    for (guint32 i = 0; i < n_boxes; i++) {
      const OxLayoutNode *b = &boxes[i];
      if (!in_view(b, vx0, vy0, vx1, vy1)) continue;
      double sw = b->w * self->scale, sh = b->h * self->scale;
      if (sh < MIN_PX || sw < 16) continue;
      gint32 c = ox_scene_item_cluster(self->scene, b->id);
      guint32 uid = c >= 0 ? 0 : ox_scene_item_uid(self->scene, b->id);
      if (c < 0 && (!uid || uid >= n || st[uid] == OX_NS_HIDDEN)) continue;
      ox_scene_item_label(self->scene, b->id, l1, sizeof l1, l2, sizeof l2);
      double sx = b->x * self->scale + self->ox, sy = b->y * self->scale + self->oy;
      double alpha = c < 0 && shown_state(self, st, uid) == OX_NS_DIMMED ? 0.45 : 1.0;
      draw_box_text(cr, &tp, sx, sy, sw, sh, l1, l2, c >= 0, alpha);
      guint np = c < 0 ? ox_scene_item_params(self->scene, b->id) : 0;
      if (np && sw >= 40) draw_badge(cr, &tp, sx + sw / 2, sy - sh / 2, np);
    }
    if (self->scale >= 0.45)
      for (guint i = 0; i < stubs->len; i++) draw_stub_label(self, cr, &tp, g_ptr_array_index(stubs, i));
    if (self->edge_labels && !overview && self->scale > 0.35) {
      /* shapes along the edges of the shown graph */
      const OxGraph *g = ox_document_get_graph(self->doc);
      OxFrameEdge stack_fe[256];
      for (guint i = 0; i < n_boxes && g; i++) {
        guint32 uid = boxes[i].id;
        if (uid >= n || st[uid] == OX_NS_HIDDEN || !in_view(&boxes[i], vx0, vy0, vx1, vy1)) continue;
        guint m;
        OxFrameEdge *fe = ox_document_in_edges_all(self->doc, uid, stack_fe, G_N_ELEMENTS(stack_fe), &m);
        for (guint j = 0; j < m; j++) {
          const OxLayoutEdge *e = ox_scene_edge(self->scene, fe[j].from, uid);
          if (!e || e->stub || e->n_pts < 4) continue;
          OxNodeId id = ox_graph_find(g, self->history->name[fe[j].from]);
          const OxTensorMeta *tm = id ? ox_node_tensor_meta(&g->nodes[id]) : NULL;
          if (!tm) continue;
          char shape[160];
          ox_tensor_meta_format(tm, false, false, shape, sizeof shape);
          guint32 mid = e->n_pts / 2;
          gboolean hot = !stepping || st[fe[j].from] >= OX_NS_MATCHED || st[uid] >= OX_NS_MATCHED;
          pango_layout_set_width(tp.small, -1);
          pango_layout_set_text(tp.small, shape, -1);
          cairo_set_source_rgba(cr, 0.1, 0.3, 0.6, hot ? 1 : 0.4);
          cairo_move_to(cr, e->pts[2 * mid] * self->scale + self->ox + 4, e->pts[2 * mid + 1] * self->scale + self->oy - 6);
          pango_cairo_show_layout(cr, tp.small);
        }
        if (fe != stack_fe) g_free(fe);
      }
    }
    text_pass_clear(&tp);
    g_ptr_array_free(stubs, TRUE);
    const char *line = ox_scene_get_note(self->scene);
    if (busy) {
      g_snprintf(buf, sizeof buf, "%s%slaying out the %s view…", line ? line : "", line ? " · " : "",
                 ox_view_mode_name(ox_scene_get_shown_mode(self->scene)));
      line = buf;
    }
    if (line) {
      pango_layout_set_width(msg, (int)((width - 16) * PANGO_SCALE));
      pango_layout_set_ellipsize(msg, PANGO_ELLIPSIZE_END);
      pango_layout_set_text(msg, line, -1);
      int tw, th;
      pango_layout_get_pixel_size(msg, &tw, &th);
      cairo_set_source_rgba(cr, 0.98, 0.98, 0.97, 0.85);
      cairo_rectangle(cr, 4, 4, tw + 8, th + 4);
      cairo_fill(cr);
      cairo_set_source_rgb(cr, 0.3, 0.3, 0.38);
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
  (void)g;
  gtk_widget_grab_focus(GTK_WIDGET(self));
  if (!self->history) return;
  /* a stub's label: go to the node at its far end */
  for (guint i = 0; i < self->stub_hits->len && n_press == 1; i++) {
    const StubHit *hit = &g_array_index(self->stub_hits, StubHit, i);
    if (x < hit->x || x > hit->x + hit->w || y < hit->y || y > hit->y + hit->h) continue;
    guint32 far = ox_scene_item_uid(self->scene, hit->item);
    if (!far) return;
    select_uid(self, far);
    ox_graph_view_zoom_to_selection(self);
    return;
  }
  guint32 item = ox_graph_view_hit_item(self, x, y);
  guint32 uid = item ? ox_scene_item_uid(self->scene, item) : 0;
  gint32 c = item ? ox_scene_item_cluster(self->scene, item) : -1;
  if (n_press == 2) {
    /* double-click: expand a cluster, or focus on a node */
    if (c >= 0)
      ox_scene_expand(self->scene, (guint32)c);
    else if (uid)
      ox_scene_focus_uid(self->scene, uid);
    return;
  }
  if (c >= 0) return; /* a cluster is not a node of the graph: nothing to select */
  select_uid(self, uid);
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
  if (dx != 0 || dy != 0) self->fitted = FALSE;
  viewport_changed(self);
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
    self->fitted = FALSE;
    viewport_changed(self);
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
  guint32 item = ox_graph_view_hit_item(self, x, y);
  if (!item) return FALSE;
  gint32 c = ox_scene_item_cluster(self->scene, item);
  if (c >= 0) {
    const OxCluster *cl = &ox_scene_get_hierarchy(self->scene)->clusters[c];
    static const char *const kinds[] = {"module", "band of consecutive depths", "connected part", "parts with the same ops",
                                        "nodes of one op", "consecutive items"};
    char *text = g_markup_printf_escaped("<b>%s</b>\n%s · %u nodes (%u directly), %u sub-clusters\n<i>double-click to "
                                         "expand</i>",
                                         cl->kind == OX_CLUSTER_MODULE ? cl->path : cl->label,
                                         kinds[MIN((guint)cl->kind, G_N_ELEMENTS(kinds) - 1)], cl->n_total,
                                         cl->n_direct, cl->n_children);
    gtk_tooltip_set_markup(tip, text);
    g_free(text);
    return TRUE;
  }
  guint32 uid = ox_scene_item_uid(self->scene, item);
  if (!uid) return FALSE;
  const char *name = self->history->name[uid];
  const OxGraph *g = ox_document_get_graph(self->doc);
  OxNodeId id = ox_graph_find(g, name);
  const OxNode *n = id ? &g->nodes[id] : &self->history->u->nodes[uid];
  char shape[200] = "shape unknown";
  const OxTensorMeta *tm = ox_node_tensor_meta(n);
  if (tm) ox_tensor_meta_format(tm, true, true, shape, sizeof shape);
  /* the folded parameters it is drawn with */
  GString *params = g_string_new(NULL);
  guint np = ox_scene_item_params(self->scene, item);
  if (np) {
    const OxNode *un = &self->history->u->nodes[uid];
    OxNodeId ins[64];
    guint k = MIN(ox_graph_inputs(self->history->u, uid, ins, G_N_ELEMENTS(ins)), G_N_ELEMENTS(ins)), shown = 0;
    (void)un;
    for (guint i = 0; i < k && shown < 8; i++)
      if (ox_scene_drawn_uid(self->scene, ins[i]) != ins[i]) {
        g_string_append_printf(params, "%s%s", shown ? ", " : "", self->history->name[ins[i]]);
        shown++;
      }
    if (np > shown && shown) g_string_append(params, ", …");
  }
  char *text = g_markup_printf_escaped("<b>%s</b>\n%s  <tt>%s</tt>\n%s%s%s%s", name, ox_op_name((OxOp)n->op), n->target,
                                       shape, params->len ? "\nwith " : "", params->str,
                                       id ? "" : "\n(not in the shown graph)");
  g_string_free(params, TRUE);
  gtk_tooltip_set_markup(tip, text);
  g_free(text);
  return TRUE;
}

static void ox_graph_view_size_allocate(GtkWidget *w, int width, int height, int baseline) {
  OxGraphView *self = OX_GRAPH_VIEW(w);
  (void)baseline;
  ox_scene_set_viewport(self->scene, width, height);
  gboolean resized = width != self->alloc_w || height != self->alloc_h;
  self->alloc_w = width;
  self->alloc_h = height;
  if (width > 1 && height > 1 && (self->fit_pending || (resized && self->fitted)) && ox_scene_get_layout(self->scene)) {
    /* fit at the first allocation; and a view the user left fitted stays fitted as the window changes */
    self->fit_pending = FALSE;
    ox_graph_view_fit(self);
  }
  g_signal_emit(self, signals[SIGNAL_VIEWPORT_CHANGED], 0);
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
  /* the view's handlers run after the scene's (connected first), so a frame sees its scene */
  self->scene = ox_scene_new(doc);
  self->sig_history = g_signal_connect_swapped(doc, "history-changed", G_CALLBACK(on_history_changed), self);
  self->sig_frame = g_signal_connect_swapped(doc, "frame-changed", G_CALLBACK(on_frame_changed), self);
  self->sig_scene = g_signal_connect_swapped(self->scene, "changed", G_CALLBACK(on_scene_changed), self);
  self->sig_busy = g_signal_connect_swapped(self->scene, "notify::busy", G_CALLBACK(on_scene_busy), self);
  self->sig_mode = g_signal_connect_swapped(self->scene, "notify::shown-mode", G_CALLBACK(on_scene_mode), self);
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
  if (self->doc) {
    g_clear_signal_handler(&self->sig_history, self->doc);
    g_clear_signal_handler(&self->sig_frame, self->doc);
  }
  if (self->scene) {
    g_clear_signal_handler(&self->sig_scene, self->scene);
    g_clear_signal_handler(&self->sig_busy, self->scene);
    g_clear_signal_handler(&self->sig_mode, self->scene);
    g_object_run_dispose(G_OBJECT(self->scene));
  }
  g_clear_object(&self->scene);
  g_clear_object(&self->doc);
  G_OBJECT_CLASS(ox_graph_view_parent_class)->dispose(o);
}

static void ox_graph_view_finalize(GObject *o) {
  OxGraphView *self = OX_GRAPH_VIEW(o);
  ox_history_unref(self->history);
  g_free(self->family);
  g_array_free(self->step_items, TRUE);
  g_hash_table_destroy(self->promoted);
  g_array_free(self->stub_hits, TRUE);
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
  signals[SIGNAL_VIEWPORT_CHANGED] = g_signal_new("viewport-changed", G_TYPE_FROM_CLASS(k), G_SIGNAL_RUN_LAST, 0, NULL,
                                                  NULL, NULL, G_TYPE_NONE, 0);
  gtk_widget_class_set_css_name(wc, "oxgraphview");
  gtk_widget_class_set_accessible_role(wc, GTK_ACCESSIBLE_ROLE_IMG);
}

static void ox_graph_view_init(OxGraphView *self) {
  GtkWidget *w = GTK_WIDGET(self);
  self->scale = 1.0;
  self->step_items = g_array_new(FALSE, FALSE, sizeof(guint32));
  self->promoted = g_hash_table_new(NULL, NULL);
  self->stub_hits = g_array_new(FALSE, FALSE, sizeof(StubHit));
  gtk_widget_set_focusable(w, TRUE);
  gtk_widget_set_overflow(w, GTK_OVERFLOW_HIDDEN);
  gtk_widget_set_has_tooltip(w, TRUE);
  g_signal_connect(w, "query-tooltip", G_CALLBACK(on_query_tooltip), NULL);

  GtkGesture *click = gtk_gesture_click_new();
  gtk_gesture_single_set_button(GTK_GESTURE_SINGLE(click), GDK_BUTTON_PRIMARY);
  g_signal_connect(click, "pressed", G_CALLBACK(on_click), self);
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
