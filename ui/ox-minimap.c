/* ox-minimap.c - the canvas's minimap (see ox-minimap.h).
 *
 * Draws every box of the scene as a small rectangle (the scene is bounded by the node budget,
 * so this is a few thousand rectangles at most) scaled to fit, the step's nodes in orange, and
 * the canvas's visible rectangle. Redrawn on the view's "viewport-changed" and on document
 * frames; never lays anything out itself. While the canvas shows the whole scene it draws
 * nothing and lets clicks through: it would only hide part of the picture.
 */
#include "ox-minimap.h"

struct _OxMinimap {
  GtkWidget parent_instance;
  OxGraphView *view;     /* owned ref */
  double drag_x, drag_y;
  gulong sig_viewport, sig_frame;
};

G_DEFINE_FINAL_TYPE(OxMinimap, ox_minimap, GTK_TYPE_WIDGET)

#define PAD 4.0

/* scene -> map transform: map = scene * s + (ox, oy) */
static gboolean transform(OxMinimap *self, double *s, double *ox, double *oy) {
  OxScene *scene = ox_graph_view_get_scene(self->view);
  if (!ox_scene_get_layout(scene)) return FALSE;
  double sw, sh;
  ox_scene_get_size(scene, &sw, &sh);
  double w = gtk_widget_get_width(GTK_WIDGET(self)) - 2 * PAD, h = gtk_widget_get_height(GTK_WIDGET(self)) - 2 * PAD;
  if (w <= 1 || h <= 1 || sw <= 0 || sh <= 0) return FALSE;
  *s = MIN(w / sw, h / sh);
  *ox = PAD + (w - sw * *s) / 2;
  *oy = PAD + (h - sh * *s) / 2;
  return TRUE;
}

gboolean ox_minimap_scene_to_map(OxMinimap *self, double sx, double sy, double *x, double *y) {
  double s, ox, oy;
  if (!transform(self, &s, &ox, &oy)) return FALSE;
  *x = sx * s + ox;
  *y = sy * s + oy;
  return TRUE;
}

gboolean ox_minimap_move_to(OxMinimap *self, double x, double y) {
  double s, ox, oy;
  if (!transform(self, &s, &ox, &oy)) return FALSE;
  ox_graph_view_center_at(self->view, (x - ox) / s, (y - oy) / s);
  return TRUE;
}

/* Whether the canvas shows the whole scene: then the map would only cover part of it. */
static gboolean shows_everything(OxMinimap *self) {
  double sw, sh;
  ox_scene_get_size(ox_graph_view_get_scene(self->view), &sw, &sh);
  graphene_rect_t v;
  ox_graph_view_get_visible(self->view, &v);
  return v.origin.x <= 1 && v.origin.y <= 1 && v.origin.x + v.size.width >= sw - 1 && v.origin.y + v.size.height >= sh - 1;
}

static void on_viewport(OxMinimap *self) {
  /* out of the way (drawn empty, clicks pass through) while everything is in view */
  gtk_widget_set_can_target(GTK_WIDGET(self), !shows_everything(self));
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void ox_minimap_snapshot(GtkWidget *w, GtkSnapshot *snap) {
  OxMinimap *self = OX_MINIMAP(w);
  double width = gtk_widget_get_width(w), height = gtk_widget_get_height(w);
  double s, ox, oy;
  if (!transform(self, &s, &ox, &oy) || shows_everything(self)) return;
  cairo_t *cr = gtk_snapshot_append_cairo(snap, &GRAPHENE_RECT_INIT(0, 0, (float)width, (float)height));
  cairo_set_source_rgba(cr, 1, 1, 1, 0.92);
  cairo_paint(cr);
  cairo_set_source_rgba(cr, 0.4, 0.4, 0.45, 1);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, 0.5, 0.5, width - 1, height - 1);
  cairo_stroke(cr);
  OxScene *scene = ox_graph_view_get_scene(self->view);
  OxDocument *doc = ox_graph_view_get_document(self->view);
  guint n_boxes, n;
  const OxLayoutNode *b = ox_scene_get_boxes(scene, &n_boxes);
  const guint8 *st = ox_document_get_node_states(doc, &n);
  for (guint i = 0; i < n_boxes; i++) {
    guint32 uid = ox_scene_item_uid(scene, b[i].id);
    gboolean cluster = ox_scene_item_cluster(scene, b[i].id) >= 0;
    if (!cluster && (!uid || uid >= n || st[uid] == OX_NS_HIDDEN)) continue;
    guint8 state = cluster ? OX_NS_NORMAL : st[uid];
    if (state >= OX_NS_MATCHED)
      cairo_set_source_rgb(cr, 1.0, 0.47, 0.0);
    else if (cluster)
      cairo_set_source_rgb(cr, 0.24, 0.35, 0.5);
    else
      cairo_set_source_rgba(cr, 0.3, 0.3, 0.35, state == OX_NS_DIMMED ? 0.35 : 0.8);
    double bw = MAX(b[i].w * s, 1.5), bh = MAX(b[i].h * s, 1.5);
    cairo_rectangle(cr, b[i].x * s + ox - bw / 2, b[i].y * s + oy - bh / 2, bw, bh);
    cairo_fill(cr);
  }
  graphene_rect_t v;
  ox_graph_view_get_visible(self->view, &v);
  cairo_set_source_rgba(cr, 0.11, 0.44, 0.85, 0.15);
  cairo_rectangle(cr, v.origin.x * s + ox, v.origin.y * s + oy, v.size.width * s, v.size.height * s);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 0.11, 0.44, 0.85);
  cairo_set_line_width(cr, 1.5);
  cairo_stroke(cr);
  cairo_destroy(cr);
}

static void on_pressed(GtkGestureClick *g, int n, double x, double y, OxMinimap *self) {
  (void)g;
  (void)n;
  ox_minimap_move_to(self, x, y);
}

static void on_drag_begin(GtkGestureDrag *g, double x, double y, OxMinimap *self) {
  (void)g;
  self->drag_x = x;
  self->drag_y = y;
  ox_minimap_move_to(self, x, y);
}

static void on_drag_update(GtkGestureDrag *g, double dx, double dy, OxMinimap *self) {
  (void)g;
  ox_minimap_move_to(self, self->drag_x + dx, self->drag_y + dy);
}

static void ox_minimap_measure(GtkWidget *w, GtkOrientation o, int for_size, int *min, int *nat, int *min_b,
                               int *nat_b) {
  (void)w;
  (void)for_size;
  *min = *nat = o == GTK_ORIENTATION_HORIZONTAL ? 220 : 150;
  *min_b = *nat_b = -1;
}

GtkWidget *ox_minimap_new(OxGraphView *view) {
  OxMinimap *self = g_object_new(OX_TYPE_MINIMAP, NULL);
  self->view = g_object_ref(view);
  self->sig_viewport = g_signal_connect_swapped(view, "viewport-changed", G_CALLBACK(on_viewport), self);
  self->sig_frame = g_signal_connect_swapped(ox_graph_view_get_document(view), "frame-changed",
                                             G_CALLBACK(gtk_widget_queue_draw), self);
  return GTK_WIDGET(self);
}

static void ox_minimap_dispose(GObject *o) {
  OxMinimap *self = OX_MINIMAP(o);
  if (self->view) {
    g_clear_signal_handler(&self->sig_viewport, self->view);
    g_clear_signal_handler(&self->sig_frame, ox_graph_view_get_document(self->view));
  }
  g_clear_object(&self->view);
  G_OBJECT_CLASS(ox_minimap_parent_class)->dispose(o);
}

static void ox_minimap_class_init(OxMinimapClass *k) {
  G_OBJECT_CLASS(k)->dispose = ox_minimap_dispose;
  GTK_WIDGET_CLASS(k)->snapshot = ox_minimap_snapshot;
  GTK_WIDGET_CLASS(k)->measure = ox_minimap_measure;
  gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(k), "oxminimap");
}

static void ox_minimap_init(OxMinimap *self) {
  GtkWidget *w = GTK_WIDGET(self);
  gtk_widget_set_overflow(w, GTK_OVERFLOW_HIDDEN);
  gtk_widget_set_cursor_from_name(w, "crosshair");
  GtkGesture *click = gtk_gesture_click_new();
  g_signal_connect(click, "pressed", G_CALLBACK(on_pressed), self);
  gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(click));
  GtkGesture *drag = gtk_gesture_drag_new();
  g_signal_connect(drag, "drag-begin", G_CALLBACK(on_drag_begin), self);
  g_signal_connect(drag, "drag-update", G_CALLBACK(on_drag_update), self);
  gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(drag));
}
