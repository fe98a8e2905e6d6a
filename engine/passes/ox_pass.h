/* ox_pass.h - passes, configuration and the greedy driver.
 *
 * A pass is one named unit of the pipeline with PyTorch's name (normalization_pass,
 * batch_linear, split_cat_pass ...). Two engines implement passes:
 *   - the batch-fusion engine (ox_batch.c): bounded upstream BFS from every root, grouping by
 *     key, greedy independent subsets, one fused replacement per subset (spec 3.1-3.3);
 *   - the pattern engine (ox_pattern.c + ox_splitcat.c): patterns kept as DATA (OxPat trees)
 *     interpreted by one matcher, with a handler per entry (spec 3.4-3.5).
 * Both report every step through the step protocol below, which wraps each rewrite in a graph
 * transaction, runs the semantic checks, rolls back on a failed check, and records the trace.
 *
 * Determinism: passes iterate in graph order (or its reverse) and never over hash tables.
 */
#ifndef OX_PASS_H
#define OX_PASS_H

#include <stdarg.h>

#include "ir/ox_buf.h"
#include "ir/ox_graph.h"
#include "run/ox_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ options */

/* Options of one pass (spec 2.3 defaults). Unknown keys in a config file are an error. */
typedef struct OxPassOptions {
  int min_fuse_set_size;         /* 5 */
  int max_fuse_set_size;         /* 300 */
  int max_fuse_search_depth;     /* 5 */
  int max_fuse_tensor_size_group_linear; /* 4096 */
  bool fuse_nodes_with_same_parent;      /* false */
  bool fuse_nodes_with_same_users;       /* false */
  bool shape_broadcast_batch_linear;     /* false */
  bool require_fbgemm;                   /* false: our grouped_mm needs no fbgemm */
  int threshold_to_cat;          /* 10 (pre), split_cat_aten default 10, select_cat 10 */
  int counter;                   /* repeat the pass N times (pre-grad "counter"), default 1 */
  /* options one pass reads (a config file shows them for that pass only) */
  bool match_select_overload;    /* unbind_stack_aten_pass: also the model's aten.select.int; false */
  int cat_traffic_floor_bytes;   /* cat_linear: M*K*bytes of the cat at least this; 512 MiB */
  int min_first_dimension_decomposition;     /* decompose_mm_pass, CUDA: 10240 */
  int max_other_dimension_decomposition;     /* decompose_mm_pass, CUDA: 32 */
  int cpu_max_first_dimension_decomposition; /* decompose_mm_pass, CPU: 1 */
  int cpu_max_other_dimension_decomposition; /* decompose_mm_pass, CPU: 2048 */
  bool skip_dynamic_shape_dim_check;         /* decompose_mm_pass: false */
  /* the payoff guard (any pass; off by default): a step whose estimated time (run/ox_cost.h)
   * saves less than this fraction of its BEFORE region's is rejected (reason PAYOFF); 0 =
   * reject steps whose estimate grows. Set by min_payoff=X or `optimize --cost-guard`. */
  bool has_min_payoff;
  double min_payoff;
} OxPassOptions;

void ox_pass_options_default(OxPassOptions *o);
/* Sets one option by its PyTorch name; 0 ok, -1 unknown key, -2 bad value. */
int ox_pass_option_set(OxPassOptions *o, const char *key, const char *value);

typedef enum OxPhase { OX_PHASE_PRE = 0, OX_PHASE_POST } OxPhase;
typedef enum OxEngineKind { OX_ENGINE_BATCH = 0, OX_ENGINE_PATTERN } OxEngineKind;

typedef struct OxPassCtx OxPassCtx;
typedef int (*OxPassFn)(OxPassCtx *ctx); /* returns number of applied steps, or -1 on internal error */

typedef struct OxPassInfo {
  const char *name;      /* PyTorch's name, also its counter name */
  OxPhase phase;
  OxEngineKind engine;
  OxPassFn run;
  const char *summary;   /* one line for --help / docs */
} OxPassInfo;

/* All built-in passes in the spec's default order (pre-grad then post-grad). */
const OxPassInfo *ox_passes(size_t *count);
const OxPassInfo *ox_pass_find(const char *name);
/* Built-in passes upstream runs only when a config names them and that are therefore not in
 * the default pipeline (cat_linear, einsum_to_pointwise_pass, decompose_mm_pass). */
bool ox_pass_opt_in(const OxPassInfo *p);

/* A pipeline: the ordered passes to run, each with its options. */
typedef struct OxPipelineEntry {
  const OxPassInfo *pass;
  OxPassOptions opt;
} OxPipelineEntry;

/* A rewrite a run must not make (what-if runs, ox_whatif.h; ox_optimize_vetoed): a step of pass `pass` anchored at
 * node `anchor` (with rule `rule`, or any rule when NULL) is refused when it would commit: the
 * transaction is rolled back and the attempt recorded as rejected ("skipped by the what-if"). */
typedef struct OxStepVeto {
  const char *pass;
  const char *rule;     /* NULL: any rule of the pass */
  const char *anchor;
  const char *why;      /* the rejection's text ("what-if: skip step #12"); NULL: a default */
} OxStepVeto;
/* Budgets of one pass (a pipeline entry with all its repetitions), so that no pass runs without
 * bound: a rule that grows its own matches (m => relu(relu(x)), repeated) doubles the graph on
 * every repetition. A pass that spends one stops at its next anchor; the driver records a
 * rejection with code BUDGET ("growth budget: graph grew 501x ...") and a warning, and goes
 * on with the next pass. Zero fields take the defaults, generous enough that no real pass
 * comes near them (docs/cli.md). */
typedef struct OxBudget {
  uint32_t max_steps;  /* applied steps; 0 = OX_BUDGET_STEPS */
  double max_growth;   /* live nodes at most max(max_growth x the pass's input, input +
                          OX_BUDGET_HEADROOM); 0 = OX_BUDGET_GROWTH */
  double max_seconds;  /* wall time; 0 = OX_BUDGET_SECONDS */
} OxBudget;

#define OX_BUDGET_STEPS 1000000u
#define OX_BUDGET_GROWTH 4.0
#define OX_BUDGET_HEADROOM 1000u
#define OX_BUDGET_SECONDS 300.0

typedef struct OxPipeline {
  OxPipelineEntry *entries;
  uint32_t n;
  OxBudget budget; /* per pass; zero = defaults */
} OxPipeline;

/* Default pipeline for a graph: every pass whose phase fits the graph's level (aten targets
 * → post-grad, else pre-grad), in spec order, except the opt-in ones. */
void ox_pipeline_default(const OxGraph *g, OxPipeline *out);
/* From a JSON config shaped like PyTorch's options:
 *   {"pre_grad_fusion_options": {"batch_linear": {"min_fuse_set_size": 3}, ...},
 *    "post_grad_fusion_options": {...}}
 * Presence enables a pass; order = execution order within a phase. Errors are located. */
int ox_pipeline_from_config(const char *text, size_t len, const char *file, OxPipeline *out, OxDiagList *d);
/* Reorders a pipeline read from a config file the way PyTorch's drivers run
 * pre_grad_fusion_options / post_grad_fusion_options (the file's order within each group):
 * pre-grad numpy_compat_normalization, normalization_pass, then the pre-grad batch fusions,
 * then the other pre-grad passes; post-grad batch fusions without require_fbgemm, then those
 * with it, then the other post-grad passes. Stable. (--passes keeps its literal order.) */
void ox_pipeline_order_like_pytorch(OxPipeline *p);
/* --passes a,b,c (comma list) */
int ox_pipeline_from_list(const char *list, OxPipeline *out, OxDiagList *d);
/* --option pass.key=value */
int ox_pipeline_set_option(OxPipeline *p, const char *assignment, OxDiagList *d);
void ox_pipeline_free(OxPipeline *p);
/* The pipeline as a config file in PyTorch's shape, every option spelled out. */
void ox_pipeline_to_json(const OxPipeline *p, OxBuf *out);

/* ------------------------------------------------------------------ checks configuration */

typedef struct OxCheckConfig {
  bool structure, shape, numeric;
  uint64_t numeric_budget;     /* FLOPs per step; default 50e6 */
  uint32_t numeric_trials;     /* default 3 */
  uint64_t seed;               /* default 1337 */
  bool keep_failed;            /* keep steps whose check failed (debugging the checks) */
} OxCheckConfig;

void ox_check_config_default(OxCheckConfig *c);
int ox_check_config_parse(const char *list, OxCheckConfig *c, char *err, size_t errcap); /* "structure,shape" | all | none */

/* ------------------------------------------------------------------ pass context & step protocol */

/* A pass's budget while it runs (ox_optimize fills it; ox_step_commit charges it). */
typedef struct OxPassBudget {
  uint32_t steps, max_steps;
  uint32_t nodes_in, max_nodes, uncounted;
  double growth; /* the factor max_nodes came from */
  double t0, deadline;
  uint32_t polls;
  const char *spent; /* "step", "growth" or "time" once a budget ran out, else NULL */
  char why[200];     /* what happened: "graph grew 501x (2 -> 1002 nodes; ...)" */
} OxPassBudget;

struct OxPassCtx {
  OxGraph *g;
  const OxPassInfo *pass;
  const OxPassOptions *opt;
  const OxCheckConfig *checks;
  OxTrace *trace;              /* may be NULL: nothing recorded */
  bool record_rejections;      /* record rejected attempts (default true) */
  /* counters of this run (PyTorch names: pass name, scmerge_* ...) */
  const char **counter_names;
  int64_t *counter_values;
  uint32_t n_counters, cap_counters;
  /* step in progress (staged here, appended to the trace at commit) */
  bool in_step;
  OxStep staged;
  OxNodeId anchor_id;
  /* filled during ox_step_commit for the checks: what the open step changed */
  const OxNodeId *step_added, *step_removed, *step_rewired, *step_prov_old, *step_prov_new;
  uint32_t n_step_added, n_step_removed, n_step_rewired, n_step_prov;
  uint32_t n_step_replaced; /* the first n pairs are replacements (new took over old's users); the rest scaffolding */
  OxNodeId *matched_ids;
  uint32_t n_matched_ids, cap_matched_ids;
  double t_start;
  /* what-if vetoes (ox_optimize_vetoed) and the one the open step matches */
  const OxStepVeto *vetoes;
  uint32_t n_vetoes;
  const OxStepVeto *vetoed;
  /* the pass's budget (NULL = none). When it is spent, stop is set and the pass returns at
   * its next anchor or root (loops ask ox_pass_stopped). */
  OxPassBudget *budget;
  bool stop;
  /* batch passes: the engine state kept from the run's previous batch pass (ox_batch.h); NULL:
   * none */
  struct OxBatchShare *batch_share;
};

/* Whether the pass must return now (a budget ran out; the wall clock is read every 64 calls). */
bool ox_pass_stopped(OxPassCtx *c);

/* Runs the configured checks on the open step (ox_check.c). Fills step->checks; returns false
 * if any check FAILED (skipped checks do not fail a step). */
bool ox_checks_run(OxPassCtx *c, OxStep *step);
/* Numeric check (ox_check_numeric.c): region before vs after in the interpreter. */
void ox_check_numeric(OxPassCtx *c, OxCheckResult *r);
/* Frees per-context scratch (matched ids, counters); the trace is not touched. */
void ox_pass_ctx_clear(OxPassCtx *c);

/* Opens a step anchored at `anchor`: starts a graph transaction. The pass then mutates the graph
 * freely with the ox_graph API. */
void ox_step_begin(OxPassCtx *c, const char *rule, OxNodeId anchor);
/* Records the matched nodes of the open step (names are taken now, before any erase). */
void ox_step_matched(OxPassCtx *c, const OxNodeId *nodes, uint32_t n);
void ox_step_key(OxPassCtx *c, const char *key);
/* Closes the step: collects added/removed/provenance and the edit script from the transaction
 * log, runs the configured checks, and either commits (returns true, step APPLIED) or rolls back
 * (returns false, step CHECK_FAILED, graph unchanged unless keep_failed). A step a veto names
 * (ox_optimize_vetoed) is rolled back and recorded as REJECTED; returns false. */
bool ox_step_commit(OxPassCtx *c);
/* Abandons an open step without a record (the pass found nothing to do after all): rollback. */
void ox_step_abort(OxPassCtx *c);
/* Records a rejected attempt (no step may be open). nodes = candidate set / partial match. */
void ox_step_reject(OxPassCtx *c, const char *rule, OxNodeId anchor, const OxNodeId *nodes, uint32_t n,
                    const OxReason *reason);
/* Builds a reason; args are copied (interned into the trace). Use NULL-terminated varargs of
 * const char*; an argument that names a live node of the graph is also listed in
 * reason.nodes (use ox_reason_nodes to say explicitly which arguments are nodes). */
OxReason ox_reason(OxPassCtx *c, OxReasonCode code, ...);
/* ox_reason's body: the NULL-terminated string arguments in ap; mark_nodes says whether
 * arguments naming live nodes become node references. */
OxReason ox_reason_va(OxPassCtx *c, OxReasonCode code, bool mark_nodes, va_list ap);
OxReason ox_reason_nodes(OxPassCtx *c, OxReasonCode code, const char *const *args, uint32_t n, const bool *is_node);

void ox_counter_add(OxPassCtx *c, const char *name, int64_t delta);

/* ------------------------------------------------------------------ the driver */

typedef struct OxOptimizeResult {
  uint32_t applied, rejected, check_failures;
  uint32_t budget_stops; /* passes stopped by a budget (each also a warning in d and a BUDGET record) */
  double seconds;
  const char **counter_names; int64_t *counter_values; uint32_t n_counters; /* owned by the trace */
} OxOptimizeResult;

/* Runs the pipeline on g (mutated in place), recording into trace (may be NULL). */
int ox_optimize(OxGraph *g, const OxPipeline *p, const OxCheckConfig *checks, OxTrace *trace,
                OxOptimizeResult *res, OxDiagList *d);
/* The same, refusing the rewrites the vetoes name (what-if runs: ox_whatif.h). */
int ox_optimize_vetoed(OxGraph *g, const OxPipeline *p, const OxStepVeto *vetoes, uint32_t n_vetoes,
                       const OxCheckConfig *checks, OxTrace *trace, OxOptimizeResult *res, OxDiagList *d);

/* Hash of the graph's structure (order, names, ops, targets): a trace refuses to replay on
 * a graph with another hash. */
uint64_t ox_graph_structure_hash(const OxGraph *g);

/* Replays the first k applied steps of trace on g (the input graph); k = UINT32_MAX: all.
 * Refused when t->input_hash differs from g's; with a hash, the result is also checked to be in
 * topological order (a damaged trace fails here instead of leaving a graph with uses before
 * definitions). A NULL input_hash is not checked: for replaying a range of steps from a mid-run
 * graph (the debugger's views). A trace read from a file without a hash must be refused by the
 * caller (ox_trace_read_json warns about it). */
int ox_replay(OxGraph *g, const OxTrace *trace, uint32_t k, OxDiagList *d);

/* explain: every recorded step (applied or rejected) that mentions node `name` as anchor,
 * matched node, or reason argument, in trace order. Returns count, fills up to max indices. */
uint32_t ox_trace_steps_for_node(const OxTrace *t, const char *name, uint32_t *out, uint32_t max);

/* Node names the trace's steps mention (anchor, matched, removed, reason arguments) that are
 * neither nodes of g nor made by one of its steps (added, renamed to): a trace of another graph.
 * Returns how many distinct ones (at most OX_UNKNOWN_NAMES_MAX: the scan stops there); fills up
 * to max of them (in trace order). */
#define OX_UNKNOWN_NAMES_MAX 4096u
uint32_t ox_trace_unknown_names(const OxTrace *t, const OxGraph *g, const char **out, uint32_t max);

#ifdef __cplusplus
}
#endif
#endif
