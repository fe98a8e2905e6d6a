/* ox_interp.h - the reference interpreter: runs a graph, or a region of it, on CPU with
 * the kernels of ox_kernels.c.
 *
 * Values. Every node gets a runtime value (OxRtValue: tensor, tuple, scalar, None).
 * Placeholders take the value given with ox_interp_set_value, else a seeded random tensor
 * built from their meta (shape/dtype); get_attr nodes take the parameter registered under
 * their target with ox_interp_set_param, else a seeded random tensor from their meta;
 * call_module nodes read "<module path>.weight/.bias/.running_mean/.running_var" from the
 * registered parameters (a missing bias, or a missing norm weight, means None).
 *
 * Random inputs are deterministic: a placeholder's values depend only on (seed, node name),
 * a parameter's on (seed, target), so a rewritten graph that keeps placeholder names gets
 * the same inputs as the original. Floats are uniform in [-1, 1); integer tensors are
 * uniform in [0, 8), or in [0, rows) when the tensor feeds the indices of an embedding /
 * embedding_bag whose weight has a known first dim (rows); bool tensors are fair coins.
 * Offsets of embedding_bag are not synthesized sensibly: record them.
 *
 * Regions. ox_interp_run with a node set runs those nodes in graph order. Their inputs
 * from outside the set (the boundary) use values set with ox_interp_set_value or computed
 * by an earlier run; a boundary node with no value gets a seeded random tensor from its
 * meta, like a placeholder.
 *
 * Refusals (never crashes): unknown op -> "no kernel for <target>"; a symbolic dim ->
 * "symbolic size s0"; a tensor above the element budget (default 64M elements) -> "...
 * exceeds the budget of N elements"; dropout with training=True -> "random op"; a
 * placeholder without value or meta -> "no shape for placeholder x". Messages are
 * prefixed with the node name: "node add_1: no kernel for torch.foo".
 */
#ifndef OX_INTERP_H
#define OX_INTERP_H

#include "ir/ox_graph.h"
#include "ops/ox_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct OxInterp OxInterp;

/* The interpreter borrows g; g must outlive it. Nodes added to g later are handled
 * (arrays grow on demand). */
OxInterp *ox_interp_new(const OxGraph *g, uint64_t seed);
void ox_interp_free(OxInterp *in); /* NULL is a no-op */

/* Per-tensor element budget (default OX_KERNEL_DEFAULT_MAX_ELEMS = 64M); <= 0 = default. */
void ox_interp_set_max_elems(OxInterp *in, int64_t max_elems);
/* Upper bound (exclusive) for random integer inputs without a known embedding size (default 8). */
void ox_interp_set_int_high(OxInterp *in, int64_t high);

/* Gives node id the value v (takes over the caller's reference; v NULL clears it). Used for
 * placeholders and region boundary inputs. */
void ox_interp_set_value(OxInterp *in, OxNodeId id, OxRtValue *v);
/* Registers a parameter / buffer / constant by path ("fc.weight", "_tensor_constant0");
 * takes ownership of t (replaces an earlier one with the same path). */
void ox_interp_set_param(OxInterp *in, const char *path, OxTensor *t);
const OxTensor *ox_interp_param(const OxInterp *in, const char *path); /* NULL if absent */

/* Runs the nodes of region (n ids, any order; NULL = every live node) in graph order.
 * Returns 0, or -1 with err ("node x: message") and the failing node in
 * ox_interp_failed_node. */
int ox_interp_run(OxInterp *in, const OxNodeId *region, uint32_t n, char *err, size_t errcap);
OxNodeId ox_interp_failed_node(const OxInterp *in);

/* The value of a node after a run (borrowed; NULL if it has none). The output node's value
 * is its argument (usually a tuple). */
const OxRtValue *ox_interp_value(const OxInterp *in, OxNodeId id);

/* Estimated floating-point work of a region (NULL = whole graph) from node meta: 2*M*N*K
 * for matmul-like ops and convolutions, a few flops per element for norms/softmax, one per
 * output element for everything else; nodes whose meta is unknown or symbolic count 0.
 * Saturates at UINT64_MAX. Used to budget numeric checks. */
uint64_t ox_interp_estimate_flops(const OxGraph *g, const OxNodeId *region, uint32_t n);
/* The same estimate for one node, erased or not (run/ox_cost.c reads a step's tombstones). */
uint64_t ox_interp_node_flops(const OxGraph *g, const OxNode *n);

#ifdef __cplusplus
}
#endif
#endif
