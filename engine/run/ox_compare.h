/* ox_compare.h - two recorded runs of one input graph compared step by step (`optimus
 * compare-runs`): two configurations, two rule sets, or two versions of the engine.
 *
 * Records are aligned by phase, pass, rule and anchor, the anchor named canonically
 * (run/ox_canon.h), so a node an earlier rewrite created matches across the runs even when its
 * creation-order name differs. The k-th record of a key in A is aligned with the k-th of that key
 * in B (a pass that runs twice, or a rejection retried in a later round). An aligned pair whose
 * outcome differs is listed: applied in one and rejected (or check-failed) in the other; both
 * applied but on other matched nodes or with other node counts; both refused for other reason
 * codes. Records without a partner are only in A or only in B.
 *
 *     OxCompareResult r;
 *     ox_compare_traces(a, b, &r);
 *     for (i = 0; i < r.n; i++) r.entries[i].kind, a->steps[r.entries[i].a_seq] ...
 *     ox_compare_result_free(&r);
 *
 * Pure C; a and b are only read.
 */
#ifndef OX_COMPARE_H
#define OX_COMPARE_H

#include "run/ox_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum OxCompareKind {
  OX_COMPARE_ONLY_A = 0, /* a record of A no record of B aligns with */
  OX_COMPARE_ONLY_B,     /* a record of B no record of A aligns with */
  OX_COMPARE_DIFFERS     /* aligned, with another outcome */
} OxCompareKind;

#define OX_COMPARE_NONE UINT32_MAX

typedef struct OxCompareEntry {
  uint8_t kind;          /* OxCompareKind */
  uint32_t a_seq, b_seq; /* 0-based records, OX_COMPARE_NONE when absent */
} OxCompareEntry;

typedef struct OxCompareResult {
  OxCompareEntry *entries; /* only-in-A and differing in A's order, then only-in-B in B's order */
  uint32_t n;
  uint32_t n_only_a, n_only_b, n_differs, n_same; /* n_same: aligned pairs with the same outcome */
  uint32_t n_only_a_applied, n_only_b_applied;    /* of those only in one run, applied steps */
  uint32_t *a_to_b;        /* a->n_steps entries: the record of B aligned with A's, or OX_COMPARE_NONE */
  uint32_t *b_to_a;        /* b->n_steps entries: the other way (a debugger stepping both runs together) */
} OxCompareResult;

/* Compares the records of a and b (never fails: allocation failure aborts, as everywhere). */
void ox_compare_traces(const OxTrace *a, const OxTrace *b, OxCompareResult *out);
void ox_compare_result_free(OxCompareResult *r);

/* The kind of a record in words: "applied", "rejected", "check failed". */
const char *ox_step_kind_text(const OxStep *s);

#ifdef __cplusplus
}
#endif
#endif
