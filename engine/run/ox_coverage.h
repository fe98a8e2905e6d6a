/* ox_coverage.h - pattern coverage of a recorded run: per pass and rule, how often it was tried,
 * how often it applied, and why it was refused (reason codes, and for the codes that have one, the
 * value that decided: the sub-pattern a match failed at, the op found where the pattern wanted
 * another, the size of a set too small to fuse), each with the first step that shows it.
 * `optimus info TRACE` prints it; the debugger's Passes panel shows it and filters the timeline by
 * its entries. Computed from the trace alone (docs/cli.md, docs/debugger.md).
 */
#ifndef OX_COVERAGE_H
#define OX_COVERAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/ox_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most distinct values kept per reason; the rest are counted together in n_other. */
#define OX_COVERAGE_MAX_DETAILS 8

typedef struct OxCoverageDetail {
  char *text;        /* what decided, as people read it (ox_coverage_detail_of); owned */
  uint32_t count;
  uint32_t first;    /* 0-based step index of the first record with it */
} OxCoverageDetail;

typedef struct OxCoverageReason {
  uint16_t code;     /* OxReasonCode */
  uint32_t count;    /* rejected and check-failed records with this code */
  uint32_t first;    /* 0-based step index of the first */
  /* what decided (ox_coverage_detail_of), its distinct values, most frequent first
   * (ties: first seen first); n_other records had a value beyond the first OX_COVERAGE_MAX_DETAILS */
  OxCoverageDetail details[OX_COVERAGE_MAX_DETAILS];
  uint32_t n_details, n_other;
} OxCoverageReason;

typedef struct OxCoverageRow {
  const char *phase, *pass, *rule; /* strings of the trace; rule NULL when the records have none */
  uint32_t attempts;                /* records of this pass and rule, of any kind */
  uint32_t applied, rejected, check_failed;
  uint32_t first;                   /* 0-based step index of its first record */
  uint32_t first_applied;           /* of its first applied record, UINT32_MAX if none */
  double step_seconds;              /* the time its applied and check-failed records took */
  OxCoverageReason *reasons;        /* most frequent first (ties: in code order) */
  uint32_t n_reasons;
} OxCoverageRow;

typedef struct OxCoverage {
  OxCoverageRow *rows;              /* in the order of their first record */
  uint32_t n_rows;
  uint32_t n_steps;                 /* the trace's, when computed */
} OxCoverage;

/* The coverage of t (never NULL; an empty trace gives no rows). Strings point into t: free the
 * coverage before the trace. */
OxCoverage *ox_coverage_of(const OxTrace *t);
void ox_coverage_free(OxCoverage *c);
/* What decided a refusal, as people read it, into buf; false when the code has no such value.
 * NO_MATCH and TARGET_MISMATCH: what the pattern wanted and what it found there
 * ("wants getitem(...), found torch.cat"; "found a graph input" for a node whose target is its
 * own name, a placeholder, unless that name is a method's (the first x.view(...) is named view); "found a parameter or buffer" for one named after its dotted target, an
 * attribute; a list that failed for another reason: "at getitem(...)");
 * SET_TOO_SMALL "set of 3"; SYMBOLIC "symbolic size s0"; DTYPE_DIFFERS "f32 and bf16";
 * ARITY "2 positional args"; MULTIPLE_USERS "3 users"; BUDGET the
 * budget; CHECK_FAILED the check; OPTION the option. */
bool ox_coverage_detail_of(const OxStep *s, char *buf, size_t cap);
/* A row as people name it, into buf: "batch_linear (pre)", or with the rule when it is not the
 * pass's own name: "split_cat_pass (pre) simplify_split_cat" (phase NULL: "pre"). */
const char *ox_coverage_row_title(const char *phase, const char *pass, const char *rule, char *buf, size_t cap);
/* Two runs' coverages side by side (compare-runs, the debugger beside a second run): the row of
 * c with this phase, pass and rule (rule NULL: the row without one), or NULL; the reason of a row
 * with this code (row may be NULL), or NULL; how many records a reason's listed value has (0 when
 * not listed, or the reason is NULL); and whether two rows (or reasons) differ in any count,
 * either side NULL meaning "none" (a row only one run has differs unless all its counts are 0). */
const OxCoverageRow *ox_coverage_find_row(const OxCoverage *c, const char *phase, const char *pass, const char *rule);
const OxCoverageReason *ox_coverage_find_reason(const OxCoverageRow *r, uint16_t code);
uint32_t ox_coverage_detail_count(const OxCoverageReason *x, const char *text);
bool ox_coverage_rows_differ(const OxCoverageRow *a, const OxCoverageRow *b);
bool ox_coverage_reasons_differ(const OxCoverageReason *a, const OxCoverageReason *b);
/* The wall time of a pass (all its runs) from the trace's per-pass table, or -1 if the table does
 * not list it (traces written before it existed). */
double ox_coverage_pass_seconds(const OxTrace *t, const char *pass, const char *phase);

#ifdef __cplusplus
}
#endif
#endif
