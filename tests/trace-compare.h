/* trace-compare.h - field-by-field comparison of two in-memory traces, for tests. */
#ifndef OX_TRACE_COMPARE_H
#define OX_TRACE_COMPARE_H

#include "run/ox_trace.h"

/* NULL when a and b hold the same information (everything a trace file carries: the header,
 * every step's fields, reasons, checks, costs, edits with their values and metas; not where
 * they were read from, src_line); else a g_malloc'ed description of the first difference
 * ("steps[12].edits[3].after: 'x' != 'y'"). */
char *trace_first_difference(const OxTrace *a, const OxTrace *b);

/* The same for b read from a written in the current version (5): the steps' and checks'
 * seconds compared to the 3 significant digits version 5 writes. */
char *trace_first_difference_current(const OxTrace *a, const OxTrace *b);

/* Sets every timing of t to 0 (the run's, each step's, each check's): what may differ between
 * two runs that should record the same. */
void trace_zero_timings(OxTrace *t);

/* The trace t of a run on input (left unchanged), written as versions 2 to 5 and read back:
 * each reads the same as t, record by record (version 5: the steps' and checks' seconds to 3
 * significant digits); writing any read trace in any version gives the bytes written from t
 * (read from version 5 and written in an earlier one: the same version 5 text once read and
 * written again); all replay input to the same graph (want_fx when not NULL: the fx text of the
 * run's result). Fails the test (naming `what`) otherwise. Returns the number of version 5
 * bytes (to report the encoding's size). */
size_t trace_check_versions(const OxTrace *t, const OxGraph *input, const char *want_fx, const char *what);

#endif
