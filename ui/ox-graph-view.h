/* ox-graph-view.h - the graph canvas: draws the document's current frame on the layout of its
 * OxScene (the whole union graph when it fits the node budget, else a focus neighbourhood or the
 * cluster overview; see ox-scene.h), so untouched nodes never move between steps, with zoom,
 * pan, fit, selection by click, double-click to expand a cluster or focus on a node, hover
 * tooltips and optional edge shape labels.
 *
 * Layouts run on a worker thread (GTask; Graphviz itself is serialised by the engine's lock);
 * the canvas shows a "laying out" note meanwhile and stays responsive.
 */
#ifndef OX_GRAPH_VIEW_H
#define OX_GRAPH_VIEW_H

#include <gtk/gtk.h>

#include "ox-document.h"
#include "ox-scene.h"
#include "layout/ox_layout.h"

G_BEGIN_DECLS

#define OX_TYPE_GRAPH_VIEW (ox_graph_view_get_type())
G_DECLARE_FINAL_TYPE(OxGraphView, ox_graph_view, OX, GRAPH_VIEW, GtkWidget)

GtkWidget *ox_graph_view_new(OxDocument *doc);
OxDocument *ox_graph_view_get_document(OxGraphView *self);

void ox_graph_view_zoom_in(OxGraphView *self);
void ox_graph_view_zoom_out(OxGraphView *self);
void ox_graph_view_zoom_reset(OxGraphView *self);
void ox_graph_view_fit(OxGraphView *self);
/* Whether the view is as fit left it (no zoom, pan or centring since): resizing then fits again. */
gboolean ox_graph_view_get_fitted(OxGraphView *self);
gboolean ox_graph_view_zoom_to_selection(OxGraphView *self);
gboolean ox_graph_view_center_on_step(OxGraphView *self);
double ox_graph_view_get_zoom(OxGraphView *self);

gboolean ox_graph_view_get_edge_labels(OxGraphView *self);
void ox_graph_view_set_edge_labels(OxGraphView *self, gboolean on);

/* Layout state (tests, status bar). */
gboolean ox_graph_view_is_laid_out(OxGraphView *self);
const OxLayout *ox_graph_view_get_layout(OxGraphView *self);
/* The layout node budget (default 2500); over it the canvas shows the overview / focus views. */
void ox_graph_view_set_node_budget(OxGraphView *self, guint budget);
guint ox_graph_view_get_n_layouts(OxGraphView *self); /* layouts requested so far */
OxScene *ox_graph_view_get_scene(OxGraphView *self);
/* Widget-coordinate box of a node of the layout (by uid); FALSE if not laid out. */
gboolean ox_graph_view_node_bounds(OxGraphView *self, guint32 uid, graphene_rect_t *out);
/* The uid under a widget point, or 0 (also 0 over a cluster of the overview). */
guint32 ox_graph_view_hit(OxGraphView *self, double x, double y);
/* The scene item (ox-scene.h) under a widget point, or 0. */
guint32 ox_graph_view_hit_item(OxGraphView *self, double x, double y);
/* Viewport in scene coordinates, and centring on a scene point (the minimap's two needs);
 * "viewport-changed" is emitted on every pan, zoom, resize and new scene. */
void ox_graph_view_get_visible(OxGraphView *self, graphene_rect_t *out);
void ox_graph_view_center_at(OxGraphView *self, double x, double y);
/* Frames drawn so far (benchmark: a step counts once the frame after it is painted). */
guint ox_graph_view_get_n_paints(OxGraphView *self);

G_END_DECLS
#endif
