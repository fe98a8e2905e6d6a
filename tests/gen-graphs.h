/* gen-graphs.h - random well-formed graphs over the supported ops, for property tests. */
#ifndef GEN_GRAPHS_H
#define GEN_GRAPHS_H

#include <glib.h>

#include "ir/ox_graph.h"

/* Builds one graph for a seed: input x [B, T*D] -> a family (towers, split/cat network,
 * chain + towers) -> output, with meta inferred everywhere. *post_out tells whether it uses
 * post-grad aten targets. Returns NULL if meta could not be inferred everywhere (a
 * generator bug: callers fail). */
OxGraph *gen_graph(uint64_t seed, bool *post_out);

/* How many generated graphs a heavier property test runs: a quarter of OPTIMUS_PROPERTY_GRAPHS
 * when it is set (the property suite's own count; CI sets 1000), else default_n. */
uint32_t gen_graph_count(uint32_t default_n);

#endif
