/* ox_equiv.h - whether a rewritten graph still computes what the original computes, by the
 * reference interpreter on the same inputs (`optimus bisect --check numeric`).
 *
 * Both graphs run on the same inputs: the record's (inputs and parameters) when one is given,
 * else the interpreter's seeded random tensors, which depend only on the seed and a
 * placeholder's name / a parameter's target, so a rewritten graph that keeps its placeholders
 * gets the very same inputs. Their outputs, flattened (tuples and lists in order), are compared
 * pairwise with the tolerances of ox_tensor_compare (by the original's dtype).
 *
 * The check of one rewrite before it commits (ox_check_numeric.c) runs the step's regions; this
 * runs whole graphs, so it sees what a sequence of steps did together.
 */
#ifndef OX_EQUIV_H
#define OX_EQUIV_H

#include "ir/ox_graph.h"
#include "run/ox_record.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct OxEquivReport {
  bool pass;           /* every output within tolerance, the same number of outputs */
  uint32_t n_outputs;  /* the original's flattened outputs */
  uint32_t n_compared; /* tensor or scalar pairs compared */
  double max_abs;      /* largest |difference| over the compared pairs */
  char why[256];       /* the first failure: "output 2: element 4: 0.5 vs 0.25", "node x: no kernel ..." */
} OxEquivReport;

/* Runs ref and g (rec may be NULL; seed for the random inputs) and compares. Returns 0 when
 * the comparison was made (rep->pass says how it came out; g failing to run is a failure with
 * the interpreter's message), -1 when the original itself cannot run (err says why). */
int ox_equiv_outputs(const OxGraph *ref, const OxGraph *g, const OxRecord *rec, uint64_t seed, OxEquivReport *rep,
                     char *err, size_t errcap);

#ifdef __cplusplus
}
#endif
#endif
