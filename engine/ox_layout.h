/* ox_layout.h - Graphviz "dot" layout of a graph (or a subset of its nodes) into plain
 * structs the UI draws itself (cairo), so nothing outside ox_render.c touches Graphviz.
 *
 * Coordinates are in points with y growing DOWN (Graphviz's y is flipped for the UI), origin
 * at the top-left of the bounding box. Node boxes are centred at (x, y). Edge splines are
 * cubic Bezier control points (1 + 3k points) from the producer to the consumer, plus the
 * arrow tip when Graphviz drew one.
 *
 * Thread safety: like ox_render, every call takes the process-wide Graphviz lock, so layouts
 * may run on a worker thread while the UI thread draws previous results. A layout refuses
 * to start above max_nodes (the node budget) and can be cancelled between phases.
 */
#ifndef OX_LAYOUT_H
#define OX_LAYOUT_H

#include <stdatomic.h>

#include "ox_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct OxLayoutNode {
  OxNodeId id;
  double x, y, w, h;   /* centre and size, points */
} OxLayoutNode;

typedef struct OxLayoutEdge {
  OxNodeId from, to;   /* producer -> consumer */
  uint32_t n_pts;
  double *pts;         /* x0,y0,x1,y1,... (n_pts points) */
  bool has_arrow;
  double ax, ay;       /* arrow tip */
} OxLayoutEdge;

typedef struct OxLayout {
  double width, height;
  OxLayoutNode *nodes; uint32_t n_nodes;
  OxLayoutEdge *edges; uint32_t n_edges;
  double seconds;      /* time spent in gvLayout */
} OxLayout;

typedef struct OxLayoutOptions {
  const char *rankdir;     /* "TB" (default) or "LR" */
  uint32_t max_nodes;      /* node budget; 0 = 3000. Over it the layout is refused. */
  atomic_bool *cancel;     /* optional; checked before and after the layout phase */
  bool with_shapes;        /* size nodes for a third label line with the shape */
} OxLayoutOptions;

/* Lays out the live nodes in subset (n ids; NULL = every live node). Edges between included
 * nodes only. Returns 0 and *out, or -1 with err ("over the node budget: 4200 > 3000",
 * "cancelled", a Graphviz message). */
int ox_layout_compute(const OxGraph *g, const OxNodeId *subset, uint32_t n, const OxLayoutOptions *opt,
                      OxLayout **out, char *err, size_t errcap);
void ox_layout_free(OxLayout *l);
/* Index of node id in l->nodes, or -1 (binary search; nodes are sorted by id). */
int32_t ox_layout_find(const OxLayout *l, OxNodeId id);
/* The label lines the layout sized the box for: line 0 name, line 1 short target, line 2 shape. */
void ox_layout_label(const OxGraph *g, OxNodeId id, bool with_shapes, char lines[3][160]);

#ifdef __cplusplus
}
#endif
#endif
