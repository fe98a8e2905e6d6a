/* trace-compare.h - field-by-field comparison of two in-memory traces, for tests. */
#ifndef OX_TRACE_COMPARE_H
#define OX_TRACE_COMPARE_H

#include "run/ox_trace.h"

/* NULL when a and b hold the same information (everything a trace file carries: the header,
 * every step's fields, reasons, checks, costs, edits with their values and metas; not where
 * they were read from, src_line); else a g_malloc'ed description of the first difference
 * ("steps[12].edits[3].after: 'x' != 'y'"). */
char *trace_first_difference(const OxTrace *a, const OxTrace *b);

/* Sets every timing of t to 0 (the run's, each step's, each check's): what may differ between
 * two runs that should record the same. */
void trace_zero_timings(OxTrace *t);

/* The trace t of a run on input (left unchanged), written as versions 2, 3 and 4 and read
 * back: each reads the same as t, record by record; writing any read trace in any version
 * gives the bytes written from t; all replay input to the same graph (want_fx when not NULL:
 * the fx text of the run's result). Fails the test (naming `what`) otherwise. Returns the
 * number of version 4 bytes (to report the encoding's size). */
size_t trace_check_versions(const OxTrace *t, const OxGraph *input, const char *want_fx, const char *what);

#endif
