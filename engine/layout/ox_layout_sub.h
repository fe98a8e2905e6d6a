/* ox_layout_sub.h - internal to the layout files (ox_layered.c, ox_layout.c): the subgraph a
 * layout request names, with its edges oriented acyclically, ranks, and the edges drawn as
 * stubs. Both engines start from it, so dot and the layered layout agree on which edges are
 * stubs and never differ in what they were asked to lay out.
 */
#ifndef OX_LAYOUT_SUB_H
#define OX_LAYOUT_SUB_H

#include "layout/ox_layout.h"

typedef struct OxLSub {
  uint32_t n;            /* nodes, sorted by id */
  OxNodeId *ids;         /* local index -> node id */
  float *w, *h;          /* box sizes, points */
  uint32_t n_edges;
  uint32_t *efrom, *eto; /* local indices, producer -> consumer */
  uint8_t *estub;        /* drawn as a stub (OX_STUB_AT_*): left out of both engines */
  uint8_t *erev;         /* reversed to break a cycle (ranked as consumer -> producer) */
  int32_t *rank;         /* per node, after orientation, stubs and source tightening */
  uint8_t *hub;          /* per node: has at least hub_users users */
  uint32_t n_stubs;
} OxLSub;

/* Builds the subgraph: refuses over the budget (err "over the node budget: N > B"), sizes from
 * opt->sizes or the labels, edges among the nodes, ranks, stubs. Returns 0 or -1. */
int ox_lsub_build(const OxGraph *g, const OxNodeId *subset, uint32_t n, const OxLayoutOptions *opt, OxLSub *s,
                  char *err, size_t errcap);
void ox_lsub_free(OxLSub *s);
/* Lays out a built subgraph with the layered engine. */
int ox_lsub_layered(const OxLSub *s, const OxLayoutOptions *opt, OxLayout **out, char *err, size_t errcap);
/* Adds the stub edges of s to l (whose nodes must hold every node of s): short splines above
 * their consumers. */
void ox_lsub_add_stubs(const OxLSub *s, const uint8_t *kind, OxLayout *l, bool lr); /* kind NULL = s->estub */

/* The helper's request for s: fixed-size unlabelled boxes named n<ID>, stub edges left out. */
void ox_lsub_request_dot(const OxLSub *s, const OxLayoutOptions *opt, OxBuf *out);

static inline bool ox_layout_cancelled(const OxLayoutOptions *o) { return o && o->cancel && atomic_load(o->cancel); }

#endif
