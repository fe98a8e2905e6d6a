/* ox_graph_diff.h - the difference between two graphs of one model (`optimus diff`): two dumps
 * from before and after PyTorch's own passes, our result against PyTorch's, two runs.
 *
 * Nodes are matched first by name, then by structure: an unmatched node of B matches an
 * unmatched node of A with the same op, target, constant arguments and inputs that are matched
 * to each other (walked in B's order, so a chain of renamed nodes matches link by link). A pair
 * matched by name whose op, target, args or kwargs differ (node arguments compared through the
 * matching) is CHANGED; nodes of A without a match are REMOVED, nodes of B without one ADDED.
 * Meta (shapes) is not compared: one dump may carry it and the other not.
 *
 * The differing nodes are grouped into regions: connected components of the graph whose
 * vertices are the removed and changed nodes of A and the added and changed nodes of B, with
 * an edge where one consumes the other in its graph and between the two sides of a changed
 * pair. Regions are numbered in the order they first appear in A, then in B.
 *
 *     OxGraphDiff d;
 *     ox_graph_diff(a, b, &d);
 *     OX_GRAPH_FOREACH(b, id) if (d.b_state[id] == OX_DIFF_ADDED) ... d.b_region[id] ...
 *     ox_graph_diff_free(&d);
 *
 * Pure C; a and b are only read. Linear in the graphs' size plus a sort of the unmatched nodes.
 */
#ifndef OX_GRAPH_DIFF_H
#define OX_GRAPH_DIFF_H

#include "ir/ox_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum OxDiffState {
  OX_DIFF_SAME = 0,  /* matched, same op, target and arguments */
  OX_DIFF_CHANGED,   /* matched by name, something differs (a_fields says what) */
  OX_DIFF_REMOVED,   /* a node of A without a match */
  OX_DIFF_ADDED      /* a node of B without a match */
} OxDiffState;

enum { OX_DIFF_BY_NAME = 1, OX_DIFF_BY_STRUCTURE = 2 }; /* how a pair was matched */
enum { OX_DIFF_F_OP = 1, OX_DIFF_F_TARGET = 2, OX_DIFF_F_ARGS = 4, OX_DIFF_F_KWARGS = 8 }; /* what changed */

#define OX_DIFF_NO_REGION UINT32_MAX

typedef struct OxGraphDiff {
  uint32_t na, nb;         /* sizes of the per-id arrays (a->n_nodes, b->n_nodes) */
  OxNodeId *a_to_b, *b_to_a; /* the matching (0: none) */
  uint8_t *a_state, *b_state; /* OxDiffState of each live node */
  uint8_t *a_how;          /* OX_DIFF_BY_NAME / OX_DIFF_BY_STRUCTURE for matched nodes of A */
  uint8_t *a_fields;       /* OX_DIFF_F_* for changed nodes of A */
  uint32_t *a_region, *b_region; /* region of a differing node, else OX_DIFF_NO_REGION */
  uint32_t n_regions;
  uint32_t n_same, n_changed, n_removed, n_added; /* nodes (pairs for same / changed) */
  uint32_t n_by_name, n_by_structure;             /* matched pairs */
} OxGraphDiff;

/* Diffs a against b into *out (always succeeds; allocation failure aborts as everywhere). */
void ox_graph_diff(const OxGraph *a, const OxGraph *b, OxGraphDiff *out);
void ox_graph_diff_free(OxGraphDiff *d);

#ifdef __cplusplus
}
#endif
#endif
