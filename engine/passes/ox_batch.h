/* ox_batch.h - the batch ("horizontal") fusion engine (spec 2.3, 3.1-3.3).
 *
 * A batch rule is DATA: the op it matches (by op-table id, so every spelling is covered), the
 * spelling levels it accepts, which guards run, which fields make up the grouping key, and a
 * replacement template. One engine interprets every rule: reverse sweep over roots, bounded
 * upstream BFS, grouping by key, greedy independent subsets, one step per fused subset.
 *
 * The greedy subset search and the topological positions it prunes with are exposed for the
 * unit tests (spec 6, G1-G4) and for tools that want the "how much could be batched" report.
 */
#ifndef OX_BATCH_H
#define OX_BATCH_H

#include "ops/ox_ops.h"
#include "passes/ox_pass.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a fused subset is rewritten. The two generic templates cover every pointwise rule;
 * the others are the linear-algebra replacements that need their own arithmetic. */
typedef enum OxBatchTemplate {
  OX_BT_STACK_UNBIND = 0, /* pre-grad: stack(x_i, 0) -> op(s, extras) -> unbind(0) -> getitem(i) */
  OX_BT_CAT_SELECT,       /* post-grad: per operand unsqueeze(x_i, 0) + cat(0) -> op -> select(0, i) */
  OX_BT_LINEAR,           /* batch_linear: stack inputs/weights, transpose, bmm | baddbmm, unbind */
  OX_BT_LINEAR_LHS,       /* batch_linear_lhs: cat weights, transpose, mm | addmm, split by widths */
  OX_BT_LAYER_NORM,       /* batch_layernorm: stack at -1-len(normalized_shape), layer_norm, mul, add */
  OX_BT_LINEAR_POST,      /* batch_linear_post_grad: unsqueeze+cat inputs and mat2s, bmm, select, add bias */
  OX_BT_GROUP_LINEAR      /* group_linear: optimus.grouped_mm(inputs, weights, biases) -> getitem(i) */
} OxBatchTemplate;

/* Key fields (OxBatchRule.key). Dtype and device of every tensor operand are always part of
 * the key (upstream keys lacked them: PR #197069). */
enum {
  OX_BK_SLOTS = 1u << 0,      /* values of the non-tensor slots (inplace, alpha, min/max, eps ...) */
  OX_BK_PARENT = 1u << 1,     /* target of the first operand, when fuse_nodes_with_same_parent */
  OX_BK_SEL_PARENT = 1u << 2, /* source of operands that are select nodes, when fuse_nodes_with_same_parent */
  OX_BK_USERS = 1u << 3,      /* user targets, when fuse_nodes_with_same_users */
  OX_BK_FIRST_USER = 1u << 4, /* target of the first user (upstream's math-op key) */
};

/* Guards (OxBatchRule.guards) beyond meta validity, which every rule checks. */
enum {
  OX_BG_EQUAL_SHAPES = 1u << 0, /* all tensor operands have equal shapes (post-grad binary ops) */
  OX_BG_NOT_INPLACE = 1u << 1,  /* an inplace=True slot would mutate the input being stacked */
  OX_BG_OUT_NOT_MUTATED = 1u << 2, /* no user mutates in place (autograd forbids mutating unbind outputs) */
  OX_BG_IN_NOT_MUTATED = 1u << 3,  /* no operand is mutated by another node (batching moves the read) */
};

#define OX_BATCH_MAX_EXTRAS 4

typedef struct OxBatchRule {
  const char *name;     /* PyTorch's pass name = counter name */
  OxPhase phase;
  OxOpId op, op2;       /* matched op(s); op2 = OX_OPID_NONE if one */
  unsigned levels;      /* mask of 1u << OxOpLevel accepted */
  OxBatchTemplate tmpl;
  uint8_t n_tensors;    /* leading slots batched by the generic templates (1 unary, 2 binary) */
  unsigned key;         /* OX_BK_* */
  unsigned guards;      /* OX_BG_* */
  /* generic templates: the batched op's target (pre-grad: full target; post-grad: "aten.X.Y",
     prefixed like the matched node's target) and the slots passed on as keywords (None
     values are left out) */
  const char *emit;
  const char *extras[OX_BATCH_MAX_EXTRAS];
  const char *summary;
} OxBatchRule;

/* The built-in rules, pre-grad then post-grad. */
const OxBatchRule *ox_batch_rules(size_t *count);
const OxBatchRule *ox_batch_rule_find(const char *name);

/* Runs one rule over ctx->g (spec 3.1). Returns the number of fused subsets (applied steps),
 * or -1 on an internal error. */
int ox_batch_apply(OxPassCtx *ctx, const OxBatchRule *rule);

/* Search shortcuts, on by default: roots with no node of the rule's op within
 * max_fuse_search_depth hops upstream are skipped (they cannot find a candidate), and the BFS
 * reads inputs from a compact snapshot taken at the start of the pass (nodes a step rewired or
 * created are read from the graph). Tests turn them off to check the trace is the same. */
void ox_batch_set_shortcuts(bool on);
/* OxPassFn for every built-in batch pass: looks the rule up by ctx->pass->name. */
int ox_batch_pass_run(OxPassCtx *ctx);

/* The batch engine's state kept from one batch pass to the next of a run (ctx->batch_share):
 * its per-node arrays and the search's input lists, which a pass keeps right through its own
 * steps. The driver makes one per run and forgets it before any other kind of pass (which may
 * change the graph behind the lists), and frees it at the end; without one (NULL) each pass
 * builds its state afresh (tests compare the two). */
typedef struct OxBatchShare OxBatchShare;
OxBatchShare *ox_batch_share_new(void);
void ox_batch_share_forget(OxBatchShare *share); /* frees what it holds; may be reused */
void ox_batch_share_free(OxBatchShare *share);

/* ------------------------------------------------------------------ positions */

/* Topological positions of the nodes of a graph (indexed by node id): pos[a] < pos[b] for
 * every edge a -> b. The engine keeps them valid across its own rewrites (new nodes get
 * positions between their neighbours); after any other mutation call ox_batch_order_init
 * again (the graph's list order must then be topological). */
typedef struct OxBatchOrder {
  double *pos;
  uint32_t cap;
} OxBatchOrder;

void ox_batch_order_init(OxBatchOrder *o, const OxGraph *g);
void ox_batch_order_free(OxBatchOrder *o);

/* ------------------------------------------------------------------ greedy subsets */

/* Greedy independent subsets (spec 3.3) as a generator: each call to next yields the next
 * subset of at least min nodes in which no node is an ancestor of another (order within a
 * subset = candidate order), or returns false when the candidates are exhausted. The caller
 * may rewrite the graph between calls (then refresh the order); dependency sets cached from
 * earlier rounds that intersect the yielded subset are dropped before it is yielded.
 * Ancestor sets are computed only among the current round's candidates, by a search that
 * never goes below the smallest candidate position. */
typedef struct OxBatchGreedy OxBatchGreedy;

/* Called when a candidate is deferred because `anc` is an ancestor of `desc` (one of them
 * the candidate, the other already chosen), and when a round's subset is dropped because it
 * has fewer than min nodes. Either may be NULL. */
typedef struct OxBatchGreedyHooks {
  void (*on_ancestor)(void *ud, OxNodeId anc, OxNodeId desc);
  void (*on_dropped)(void *ud, const OxNodeId *subset, uint32_t n);
  void *ud;
} OxBatchGreedyHooks;

OxBatchGreedy *ox_batch_greedy_new(OxGraph *g, const OxBatchOrder *order, const OxNodeId *cands, uint32_t n,
                                   int min, int max, const OxBatchGreedyHooks *hooks);
/* Next subset (borrowed until the next call); false when done. */
bool ox_batch_greedy_next(OxBatchGreedy *gr, const OxNodeId **subset, uint32_t *n);
void ox_batch_greedy_free(OxBatchGreedy *gr);

/* The path a -> ... -> b along data edges, as node names joined by " → " (malloc'ed), or
 * NULL if a is not an ancestor of b. Long paths keep both ends and elide the middle. */
char *ox_batch_path(OxGraph *g, const OxBatchOrder *order, OxNodeId a, OxNodeId b);

#ifdef __cplusplus
}
#endif
#endif
