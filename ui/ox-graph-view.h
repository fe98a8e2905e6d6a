/* ox-graph-view.h - the graph canvas: draws the document's current frame from a Graphviz layout
 * of the union graph (so untouched nodes never move between steps), with zoom, pan, fit,
 * selection by click, hover tooltips and optional edge shape labels.
 *
 * Layout runs on a worker thread (GTask; Graphviz itself is serialised by the engine's lock);
 * the canvas shows a "laying out" note meanwhile and stays responsive. Graphs whose union is
 * over the node budget are laid out as a bounded focus view around the current step or the
 * selection (issue 6), re-laid out when the focus leaves it.
 */
#ifndef OX_GRAPH_VIEW_H
#define OX_GRAPH_VIEW_H

#include <gtk/gtk.h>

#include "ox-document.h"
#include "ox_layout.h"

G_BEGIN_DECLS

#define OX_TYPE_GRAPH_VIEW (ox_graph_view_get_type())
G_DECLARE_FINAL_TYPE(OxGraphView, ox_graph_view, OX, GRAPH_VIEW, GtkWidget)

GtkWidget *ox_graph_view_new(OxDocument *doc);
OxDocument *ox_graph_view_get_document(OxGraphView *self);

void ox_graph_view_zoom_in(OxGraphView *self);
void ox_graph_view_zoom_out(OxGraphView *self);
void ox_graph_view_zoom_reset(OxGraphView *self);
void ox_graph_view_fit(OxGraphView *self);
gboolean ox_graph_view_zoom_to_selection(OxGraphView *self);
gboolean ox_graph_view_center_on_step(OxGraphView *self);
double ox_graph_view_get_zoom(OxGraphView *self);

gboolean ox_graph_view_get_edge_labels(OxGraphView *self);
void ox_graph_view_set_edge_labels(OxGraphView *self, gboolean on);

/* Layout state (tests, status bar). */
gboolean ox_graph_view_is_laid_out(OxGraphView *self);
const OxLayout *ox_graph_view_get_layout(OxGraphView *self);
/* The layout node budget (default 2500); over it the canvas shows a focus view. */
void ox_graph_view_set_node_budget(OxGraphView *self, guint budget);
guint ox_graph_view_get_n_layouts(OxGraphView *self); /* layouts computed so far */
/* Widget-coordinate box of a node of the layout (by uid); FALSE if not laid out. */
gboolean ox_graph_view_node_bounds(OxGraphView *self, guint32 uid, graphene_rect_t *out);
/* The uid under a widget point, or 0. */
guint32 ox_graph_view_hit(OxGraphView *self, double x, double y);

G_END_DECLS
#endif
