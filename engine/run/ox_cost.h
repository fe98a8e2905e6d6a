/* ox_cost.h - the estimated cost of a set of nodes (docs/cost-model.md).
 *
 * From the nodes' metas and the op table, per node: kernel launches (views, getitem and shape
 * queries 0; a compute op 1; cat/stack 1 copy; a reshape or contiguous of a non-contiguous
 * input 1 copy; grouped_mm one per group, as eager PyTorch runs it), bytes read and written
 * (the tensor inputs and outputs at their dtype's size) and FLOPs (2*M*N*K for the matmul
 * family, a few per element for norms, one per output element for pointwise ops). A metric
 * that needs a shape or an op the engine does not know is marked unknown, never guessed as 0.
 *
 * Every applied step records the cost of its BEFORE region (the nodes it removed) and its
 * AFTER region (the nodes it added); a run records the whole graph's cost before and after.
 * The payoff guard (the pass option min_payoff, `optimize --cost-guard`) turns a pair into one
 * estimated time with the constants below and rejects steps that do not save enough of it.
 */
#ifndef OX_COST_H
#define OX_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ox_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bits of OxCost.unknown: the metric could not be estimated for some node of the set. */
enum { OX_COST_LAUNCHES = 1u << 0, OX_COST_BYTES = 1u << 1, OX_COST_FLOPS = 1u << 2, OX_COST_ALL = 7u };

typedef struct OxCost {
  uint64_t launches, bytes, flops; /* the known part (saturating sums) */
  uint8_t unknown;                 /* OX_COST_* bits: metrics some node left unknown */
} OxCost;

/* A step's (or a run's) cost before and after; set = false when none was recorded. */
typedef struct OxCostPair {
  bool set;
  OxCost before, after;
} OxCostPair;

/* Constants of the estimated time: eager PyTorch 1.13 on one CPU thread, fitted to the
 * measurements of docs/benchmarks.md ("Does the rewrite pay?"; docs/cost-model.md). */
#define OX_COST_LAUNCH_US 8.0        /* per kernel launch: Python, dispatcher and call overhead */
#define OX_COST_BYTES_PER_US 3.0e3   /* 3 GB/s of memory traffic */
#define OX_COST_FLOPS_PER_US 2.5e3   /* 2.5 GFLOP/s */

/* Adds the cost of node id (live or a tombstone of an open step: erased nodes keep their args
 * and meta) to *acc. */
void ox_cost_add_node(const OxGraph *g, OxNodeId id, OxCost *acc);
/* The cost of a set of nodes (each id once; 0 ids are skipped). */
OxCost ox_cost_nodes(const OxGraph *g, const OxNodeId *ids, uint32_t n);
/* The cost of every live node of g. */
OxCost ox_cost_graph(const OxGraph *g);

/* Estimated microseconds of a cost (known part only). */
double ox_cost_time_us(const OxCost *c);
/* The payoff of a pair: the fraction of the BEFORE estimate the step saves
 * ((before - after) / before); +/-INFINITY when before is 0 and after is not, 0 when both are. */
double ox_cost_payoff(const OxCostPair *p);

/* The payoff guard: false when the pair's estimate is complete and its payoff is below
 * min_payoff; then `what` says the change ("+12.0 MB moved, -127 launches, +0 FLOP
 * (+35.1 us)") and `why` the threshold ("min_payoff 0: saves -43.8% of 80.2 us"). A pair
 * with an unknown metric always passes (the guard only rejects what it can estimate). */
bool ox_cost_guard(const OxCostPair *p, double min_payoff, char *what, size_t what_cap, char *why, size_t why_cap);

/* "12 launches, 3.1 MB, 4.5 MFLOP" with "?" for unknown metrics. Returns buf. */
const char *ox_cost_format(const OxCost *c, char *buf, size_t cap);
/* "12 -> 4 launches, 3.1 -> 3.4 MB, 4.5 -> 4.5 MFLOP (est. 83 -> 54 us)". Returns buf. */
const char *ox_cost_format_pair(const OxCostPair *p, char *buf, size_t cap);
/* Byte and FLOP counts for people: "3.1 MB", "812 B", "4.5 MFLOP". */
const char *ox_cost_format_bytes(uint64_t b, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
