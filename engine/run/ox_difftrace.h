/* ox_difftrace.h - a diff of two graphs as a pseudo-trace: one applied step per region of
 * ox_graph_diff, taking A to B, so the tools made for recorded runs (replay, explain, the
 * debugger's stepping and inspector) work on a difference no run produced (`optimus diff A B
 * --trace T`, the debugger's Diff with Graph…).
 *
 *     OxGraphDiff d;
 *     ox_graph_diff(a, b, &d);
 *     OxGraph *end = NULL;
 *     OxTrace *t = ox_diff_trace(a, b, &d, &end, &diags);   // NULL with diagnostics
 *
 * Each step belongs to the pass "diff" with rule "region N" (1-based, the diff's numbering),
 * anchored at the region's first node of A (its first new node for a region only B has); its
 * matched nodes are the region's nodes of A, up to OX_DIFF_TRACE_MAX_MATCHED of them (a larger
 * region lists none: matched nodes are the provenance of every new node that replaces none, and
 * a batched model's one region of 50k nodes would give each new node 50k sources). Within a step: B's added nodes are created (B's names, targets,
 * arguments with node references mapped through the matching, B's meta), a changed node whose
 * op or target differs is replaced by a new node of B's kind under its name (the old one renamed
 * out of the way, its users moved over, then erased), a changed node whose arguments differ gets
 * B's arguments (and B's meta when B has one), A's removed nodes are erased (users first), and
 * the graph is put back in topological order. The steps are recorded by the step protocol with
 * the structural check, so the trace replays exactly from A (its input hash is A's) and the
 * graph it ends with equals B up to node order (tested: ox_graph_diff of the two finds nothing).
 *
 * Pure C; a, b and d are only read. The returned trace and *out (the graph after the last step,
 * when out is not NULL) are owned by the caller.
 */
#ifndef OX_DIFFTRACE_H
#define OX_DIFFTRACE_H

#include "ir/ox_diag.h"
#include "ir/ox_graph_diff.h"
#include "run/ox_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OX_DIFF_TRACE_MAX_MATCHED 256

OxTrace *ox_diff_trace(const OxGraph *a, const OxGraph *b, const OxGraphDiff *d, OxGraph **out, OxDiagList *diags);

#ifdef __cplusplus
}
#endif
#endif
