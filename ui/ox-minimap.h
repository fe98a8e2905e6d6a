/* ox-minimap.h - a small map of the canvas's whole laid-out scene with the visible rectangle;
 * click or drag on it to move the canvas there (issue 6). Shown over the canvas's corner. */
#ifndef OX_MINIMAP_H
#define OX_MINIMAP_H

#include <gtk/gtk.h>

#include "ox-graph-view.h"

G_BEGIN_DECLS

#define OX_TYPE_MINIMAP (ox_minimap_get_type())
G_DECLARE_FINAL_TYPE(OxMinimap, ox_minimap, OX, MINIMAP, GtkWidget)

GtkWidget *ox_minimap_new(OxGraphView *view);
/* Moves the canvas so that the scene point under minimap point (x, y) is centred (what a click
 * does). FALSE when there is no scene. */
gboolean ox_minimap_move_to(OxMinimap *self, double x, double y);
/* The minimap point showing scene point (sx, sy) (tests). */
gboolean ox_minimap_scene_to_map(OxMinimap *self, double sx, double sy, double *x, double *y);

G_END_DECLS
#endif
