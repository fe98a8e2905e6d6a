/* ox_whatif.h - what-if re-runs: the pipeline run again on the same input with some options
 * changed and/or some recorded rewrites refused, compared decision by decision with the run it
 * departs from (the base).
 *
 *     OxWhatifSpec spec = {0};
 *     const char *opts[] = {"batch_linear.min_fuse_set_size=3"};
 *     spec.options = opts; spec.n_options = 1;          // as `--option`
 *     OxWhatifResult r;
 *     if (ox_whatif_run(input, &pipeline, &checks, base_trace, &spec, &r, &diags) == 0) {
 *       r.n_newly_applied, r.n_newly_rejected, r.alt_nodes - r.base_nodes ...
 *       for each r.decisions[i]: its base record (base_trace->steps[base_seq]) and its
 *       alternative record (r.trace->steps[alt_seq]), either may be absent
 *       ox_whatif_result_free(&r);
 *     }
 *
 * The base is the trace of `pipeline` on `input` (given, or recorded here when NULL). The
 * alternative shares the base's work up to the first pass the change can affect: the base's
 * rewrites before that pass are replayed from its edit scripts (no matching, no checks), and
 * the passes from there on are run for real, with the changed options and the vetoes
 * (OxStepVeto: a skipped step is refused wherever the re-run reaches the same pass and anchor).
 * `full` runs the alternative from the input instead (its trace then covers the whole run);
 * both give the same decisions, the same graph and the same counts (tested).
 *
 * Decisions are compared as applied rewrites: two applied steps are the same decision when
 * they have the same pass, rule, anchor and matched nodes, named canonically (a node an earlier
 * rewrite created is named after that rewrite, not by its creation-order name such as
 * stack_12, which shifts once the runs differ). An applied step of the alternative
 * that the base did not make is NEWLY_APPLIED (its base record: the base's rejection of the
 * same pass and anchor, if any); an applied step of the base that the alternative did not make
 * is NEWLY_REJECTED (its alternative record: the alternative's rejection of the same pass and
 * anchor, if any, whose reason says why).
 *
 * "Why not?" hints: ox_whatif_candidates lists the option changes that might make a rejected
 * step fire, read from its reason and the actual values in it (a set of 3 below
 * min_fuse_set_size 5: min_fuse_set_size=3); they are guesses until a re-run with the change
 * applies the step, which ox_whatif_fires checks. Front ends offer only checked hints.
 *
 * Pure C; the result owns its trace and graph. Not thread-safe per result; input, pipeline and
 * base are only read, so several what-ifs may run at once on the same input.
 */
#ifndef OX_WHATIF_H
#define OX_WHATIF_H

#include <stdatomic.h>

#include "ir/ox_buf.h"
#include "ir/ox_diag.h"
#include "passes/ox_pass.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What to change. */
typedef struct OxWhatifSpec {
  const char *const *options;  /* "pass.key=value" assignments, as --option (the pass must be in the pipeline) */
  uint32_t n_options;
  const uint32_t *skip;        /* steps of the base trace (0-based seq) whose rewrite is refused: applied steps only */
  uint32_t n_skip;
  bool full;                   /* run the alternative from the input, not from the replayed prefix */
  atomic_bool *cancel;         /* optional; checked between passes (-1 with "cancelled") */
} OxWhatifSpec;

typedef enum OxWhatifChange {
  OX_WHATIF_NEWLY_APPLIED = 0, /* the alternative makes a rewrite the base did not */
  OX_WHATIF_NEWLY_REJECTED     /* the base made a rewrite the alternative does not */
} OxWhatifChange;

#define OX_WHATIF_NONE UINT32_MAX

typedef struct OxWhatifDecision {
  uint8_t change;              /* OxWhatifChange */
  uint32_t base_seq;           /* the base's record (applied, or its rejection of the same pass and anchor), or OX_WHATIF_NONE */
  uint32_t alt_seq;            /* the alternative's record (applied, or its rejection), or OX_WHATIF_NONE */
} OxWhatifDecision;

typedef struct OxWhatifResult {
  OxTrace *trace;              /* the alternative run (owned): from alt_from on, or whole with spec.full */
  OxGraph *graph;              /* the alternative's optimized graph (owned) */
  OxPipeline pipeline;         /* the alternative's pipeline (owned entries) */
  uint32_t first_entry;        /* first pipeline entry the change can affect (p->n when none) */
  uint32_t alt_from;           /* base records before this seq were replayed, not re-run (0 with spec.full) */
  uint32_t base_nodes, alt_nodes; /* optimized graphs' node counts, as `optimus info` counts (no output node) */
  uint32_t base_applied, alt_applied; /* applied steps of the base and of the alternative (whole runs) */
  OxWhatifDecision *decisions; /* in alternative order (newly applied) then base order (newly rejected) */
  uint32_t n_decisions;
  uint32_t n_newly_applied, n_newly_rejected;
  const OxTrace *base;         /* the base compared with (the caller's, or base_own) */
  OxTrace *base_own;           /* the base recorded here when none was given (owned) */
  OxStepVeto *vetoes;          /* owned: the refused rewrites */
  uint32_t n_vetoes;
  double seconds;              /* time of the re-run (and of the base, when recorded here) */
} OxWhatifResult;

/* Runs the alternative of spec on input (not modified). p and checks are those the base was
 * (or is to be) recorded with; base may be NULL. Returns 0 and fills *out, or -1 with located
 * errors in d (an unknown option or pass, a step that is not an applied step of the base, a
 * base the input does not fit, "cancelled"); *out is then empty. */
int ox_whatif_run(const OxGraph *input, const OxPipeline *p, const OxCheckConfig *checks, const OxTrace *base,
                  const OxWhatifSpec *spec, OxWhatifResult *out, OxDiagList *d);
void ox_whatif_result_free(OxWhatifResult *r);

/* The records of a decision (NULL when absent). */
const OxStep *ox_whatif_base_step(const OxWhatifResult *r, const OxWhatifDecision *x);
const OxStep *ox_whatif_alt_step(const OxWhatifResult *r, const OxWhatifDecision *x);

/* Whether the alternative applied the decision base step s stands for: an applied step of the
 * same pass that rewrote every node s matched (its candidates) together, or, for a record
 * without matched nodes, one anchored at or matching s's anchor. Returns its seq in r->trace,
 * or OX_WHATIF_NONE. */
uint32_t ox_whatif_fires(const OxWhatifResult *r, const OxStep *s);

/* Option changes that might make the rejected step s fire, from its reason and the values in
 * it, as "pass.key=value" (p says which engine the pass is: a set too small is
 * min_fuse_set_size for batch passes, threshold_to_cat for split/cat passes). Returns how many
 * it wrote to out (at most max); 0 when no option controls the guard that failed. */
#define OX_WHATIF_OPTION_MAX 160
uint32_t ox_whatif_candidates(const OxPipeline *p, const OxStep *s, char (*out)[OX_WHATIF_OPTION_MAX], uint32_t max);

/* A readable report: the change, the node counts and one line per decision
 *   + #14 batch_linear / batch_linear at relu_11: applied, -3 +9 nodes (base #4: rejected: set of 3 < ...)
 *   - #21 split_cat_pass / ... at cat_2: not applied (alternative #19: rejected: ...) */
void ox_whatif_format(const OxWhatifResult *r, const OxWhatifSpec *spec, OxBuf *out);

#ifdef __cplusplus
}
#endif
#endif
