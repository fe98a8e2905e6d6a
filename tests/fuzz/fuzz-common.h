/* fuzz-common.h - what the libFuzzer harnesses share (tests/fuzz, docs/fuzzing.md).
 *
 * A harness feeds one input to one loader (or to load -> optimize) and checks invariants that
 * must hold for ANY input; a broken invariant aborts with a message, which libFuzzer reports as
 * a crash with the input saved. Besides the sanitizers' own findings (ASan, UBSan, leaks), the
 * invariants are:
 *   - a loader either fails with at least one located error, or returns graphs the structural
 *     verifier accepts;
 *   - what we write reads back: FX text reloads and writes the same text again (a fixed point
 *     after one round), JSON reloads to the same JSON bytes;
 *   - a trace that reads writes back, and reads again to the same bytes.
 */
#ifndef OX_FUZZ_COMMON_H
#define OX_FUZZ_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_diag.h"
#include "ir/ox_graph.h"
#include "load/ox_load.h"
#include "ops/ox_shape.h"
#include "passes/ox_pass.h"
#include "run/ox_trace.h"
#include "write/ox_write.h"

/* Inputs above this are not interesting (the loaders' size limits have their own tests) and
 * only slow the search down. */
#define FUZZ_MAX_INPUT (1u << 20)

/* libFuzzer's data is not NUL-terminated; every loader wants text[len] == 0 (load/ox_load.h). */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
  char *t = malloc(size + 1);
  if (!t) abort();
  if (size) memcpy(t, data, size);
  t[size] = 0;
  return t;
}

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static inline void fuzz_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fuzz invariant broken: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  abort();
}

static inline void fuzz_print_diags(const OxDiagList *d) {
  for (size_t i = 0; i < d->n && i < 8; i++) {
    char *s = ox_diag_format(d, &d->items[i]);
    fprintf(stderr, "  %s\n", s);
    free(s);
  }
}

/* Every graph of doc (and its subgraphs) passes the verifier's structural checks: order,
 * definitions before uses, users, names, outputs. A malformed getitem (getitem(x), getitem(3, 0),
 * an index past its tuple) is content the dump holds, which `optimus check` reports and passes
 * must survive (fuzz-optimize runs them on such graphs), so it is not a broken invariant here. */
static inline void fuzz_verify_graph(OxGraph *g, const char *what) {
  OxDiagList d;
  ox_diags_init(&d, what);
  ox_graph_verify(g, false, &d);
  for (size_t i = 0; i < d.n; i++)
    if (d.items[i].sev == OX_SEV_ERROR && strncmp(d.items[i].msg, "getitem ", 8) != 0) {
      fuzz_print_diags(&d);
      fuzz_fail("%s: a loaded graph fails the verifier", what);
    }
  ox_diags_clear(&d);
  for (uint32_t i = 0; i < g->n_subgraphs; i++) fuzz_verify_graph(g->subgraphs[i], what);
}

static inline void fuzz_verify_doc(OxDoc *doc, const char *what) {
  for (uint32_t i = 0; i < doc->n_graphs; i++) fuzz_verify_graph(doc->graphs[i], what);
}

/* Loads text as fmt; enforces "fails with an error, or every graph verifies". */
static inline OxDoc *fuzz_load(const char *text, size_t len, OxFormat fmt, const char *what) {
  OxLoadOptions opt = {0};
  OxDiagList d;
  ox_diags_init(&d, what);
  d.max_items = 64;
  OxDoc *doc = NULL;
  int rc = ox_load_buffer(text, len, fmt, &opt, &doc, &d);
  if (rc != 0) {
    if (doc) fuzz_fail("%s: a failed load returned a document", what);
    if (!d.n_errors) fuzz_fail("%s: a failed load reported no error", what);
    ox_diags_clear(&d);
    return NULL;
  }
  if (!doc || !doc->n_graphs) fuzz_fail("%s: a successful load returned no graph", what);
  ox_diags_clear(&d);
  fuzz_verify_doc(doc, what);
  return doc;
}

/* The FX text of graph g, as a malloc'ed string. */
static inline char *fuzz_fx_text(const OxGraph *g, size_t *len) {
  OxBuf b;
  ox_buf_init(&b);
  ox_write_fx_text(g, &b);
  *len = b.len;
  return b.data ? b.data : calloc(1, 1);
}

/* FX text round trip of every graph: writing, reading and writing again gives the same text
 * after the first round (the first write normalizes: names, spacing, annotations). */
static inline void fuzz_fx_roundtrip(OxDoc *doc, const char *what) {
  for (uint32_t i = 0; i < doc->n_graphs; i++) {
    size_t n1, n2, n3;
    char *t1 = fuzz_fx_text(doc->graphs[i], &n1);
    OxDoc *d1 = fuzz_load(t1, n1, OX_FMT_FX_TEXT, "written FX text");
    if (!d1) {
      fprintf(stderr, "--- written:\n%s\n", t1);
      fuzz_fail("%s: graph %u written as FX text does not load again", what, i + 1);
    }
    char *t2 = fuzz_fx_text(d1->graphs[0], &n2);
    OxDoc *d2 = fuzz_load(t2, n2, OX_FMT_FX_TEXT, "rewritten FX text");
    if (!d2) fuzz_fail("%s: graph %u rewritten as FX text does not load again", what, i + 1);
    char *t3 = fuzz_fx_text(d2->graphs[0], &n3);
    if (n2 != n3 || memcmp(t2, t3, n2) != 0) {
      fprintf(stderr, "--- second write:\n%s\n--- third write:\n%s\n", t2, t3);
      fuzz_fail("%s: graph %u: FX text is not stable after one round trip", what, i + 1);
    }
    free(t1);
    free(t2);
    free(t3);
    ox_doc_free(d1);
    ox_doc_free(d2);
  }
}

/* JSON round trip: the document written, read and written again gives the same bytes. */
static inline void fuzz_json_roundtrip(OxDoc *doc, const char *what) {
  OxBuf b1, b2;
  ox_buf_init(&b1);
  ox_buf_init(&b2);
  ox_write_json(doc, &b1);
  OxDoc *back = fuzz_load(b1.data, b1.len, OX_FMT_JSON, "written JSON");
  if (!back) fuzz_fail("%s: the document written as JSON does not load again", what);
  ox_write_json(back, &b2);
  if (b1.len != b2.len || memcmp(b1.data, b2.data, b1.len) != 0) fuzz_fail("%s: JSON does not round-trip", what);
  ox_doc_free(back);
  ox_buf_free(&b1);
  ox_buf_free(&b2);
}

/* Runs pipeline p on a copy of `input` with every check, then: the result verifies; the trace
 * writes, reads back and writes the same bytes; replaying the read trace on another copy of
 * `input` gives the same graph (FX text). Budgets keep a run short. */
static inline void fuzz_optimize_check(const OxGraph *input, OxPipeline *p, const char *what) {
  OxCheckConfig checks;
  ox_check_config_default(&checks);
  checks.numeric_budget = 1000000; /* FLOPs per step: regions of a fuzzed graph stay small */
  p->budget.max_seconds = 5;
  p->budget.max_steps = 2000;
  OxGraph *g = ox_graph_clone(input);
  bool had_output = ox_graph_output(g) != 0;
  OxTrace *t = ox_trace_new_for(g);
  OxOptimizeResult res;
  OxDiagList d;
  ox_diags_init(&d, what);
  d.max_items = 64;
  int rc = ox_optimize(g, p, &checks, t, &res, &d);
  if (rc != 0) {
    /* the driver fails only on a cycle it finds or a pass's internal error: neither may happen */
    fuzz_print_diags(&d);
    fuzz_fail("%s: optimize failed", what);
  }
  ox_diags_clear(&d);
  ox_diags_clear(&d);
  fuzz_verify_graph(g, "the optimized graph");
  if (had_output && !ox_graph_output(g)) fuzz_fail("%s: optimizing lost the output node", what);
  OxBuf b1, b2;
  ox_buf_init(&b1);
  ox_buf_init(&b2);
  ox_trace_write_json(t, &b1);
  OxTrace *back = NULL;
  if (ox_trace_read_json(b1.data, b1.len, "trace.json", &back, &d) != 0) {
    fuzz_print_diags(&d);
    fuzz_fail("%s: the trace does not read back", what);
  }
  ox_diags_clear(&d);
  ox_trace_write_json(back, &b2);
  if (b1.len != b2.len || memcmp(b1.data, b2.data, b1.len) != 0) fuzz_fail("%s: the trace does not round-trip", what);
  OxGraph *re = ox_graph_clone(input);
  if (ox_replay(re, back, UINT32_MAX, &d) != 0) {
    fuzz_print_diags(&d);
    fuzz_fail("%s: the trace does not replay on its input", what);
  }
  ox_diags_clear(&d);
  size_t n1, n2;
  char *a = fuzz_fx_text(g, &n1), *c = fuzz_fx_text(re, &n2);
  if (n1 != n2 || memcmp(a, c, n1) != 0) {
    fprintf(stderr, "--- optimized:\n%s\n--- replayed:\n%s\n", a, c);
    fuzz_fail("%s: replaying the trace gives another graph than the run", what);
  }
  free(a);
  free(c);
  ox_graph_free(re);
  ox_trace_free(back);
  ox_buf_free(&b1);
  ox_buf_free(&b2);
  ox_trace_free(t);
  ox_graph_free(g);
}

#endif
