/* fuzz-trace.c - libFuzzer harness: the trace reader (engine/json/ox_json_trace.c) and replay.
 * The graph is the bundled example (data/examples/recsys-towers.txt, found through
 * OPTIMUS_SOURCE_ROOT), whose trace is the seed. Any input: fails with a located error, or reads a trace that writes
 * back and reads again to the same bytes; explain's queries and info's coverage run on it; and when its hash is the
 * example's, replay either fails with an error or leaves a graph that passes the verifier's
 * structural checks (fuzz_verify_graph). Whenever the fast read of version 3 to 5 steps (no json-c)
 * takes a step, of the input or of the trace written again, the json-c read agrees with it. */
#include "fuzz-common.h"
#include "load/ox_parse.h"
#include "run/ox_coverage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static OxGraph *graph;

static void load_graph(void) {
  const char *root = getenv("OPTIMUS_SOURCE_ROOT");
  char path[4096];
  snprintf(path, sizeof path, "%s/data/examples/recsys-towers.txt", root && *root ? root : ".");
  OxDiagList d;
  ox_diags_init(&d, path);
  OxDoc *doc = NULL;
  if (ox_load_file(path, OX_FMT_UNKNOWN, NULL, &doc, &d) != 0)
    fuzz_fail("trace: cannot load %s (set OPTIMUS_SOURCE_ROOT to the project's root)", path);
  ox_diags_clear(&d);
  graph = ox_graph_clone(doc->graphs[0]);
  ox_doc_free(doc);
  ox_shape_infer_graph(graph, NULL, NULL);
}

/* One read, the fast read of version 3 to 5 steps on or off: status, every diagnostic, the trace
 * written again. */
static void read_summary(const char *text, size_t size, bool fast, OxBuf *out) {
  ox_json_set_streaming(fast);
  OxDiagList d;
  ox_diags_init(&d, "trace.json");
  d.max_items = 64;
  OxTrace *t = NULL;
  int rc = ox_trace_read_json(text, size, "trace.json", &t, &d);
  ox_json_set_streaming(true);
  ox_buf_printf(out, "rc=%d\n", rc);
  for (size_t i = 0; i < d.n; i++) {
    char *m = ox_diag_format(&d, &d.items[i]);
    ox_buf_printf(out, "%s\n", m);
    free(m);
  }
  if (t) {
    ox_trace_write_json(t, out);
    for (uint32_t i = 0; i < t->n_steps; i++) ox_buf_printf(out, "%u ", t->steps[i].src_line);
  }
  ox_diags_clear(&d);
  ox_trace_free(t);
}

/* When the fast read (engine/json/ox_json_trace.c, our own tokenizer) takes a step of text, the
 * json-c read of every step agrees: the same status, diagnostics, trace and lines. */
static void fuzz_fast_equals_json_c(const char *text, size_t size) {
  unsigned long before = ox_trace_fast_steps();
  OxBuf a, b;
  ox_buf_init(&a);
  ox_buf_init(&b);
  read_summary(text, size, true, &a);
  if (ox_trace_fast_steps() != before) {
    read_summary(text, size, false, &b);
    if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0) {
      fprintf(stderr, "--- fast read\n%.*s\n--- json-c read\n%.*s\n", (int)(a.len < 4000 ? a.len : 4000), a.data,
              (int)(b.len < 4000 ? b.len : 4000), b.data);
      fuzz_fail("trace: the fast read differs from the json-c read");
    }
  }
  ox_buf_free(&a);
  ox_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return -1;
  if (!graph) load_graph();
  {
    char *text = fuzz_text(data, size);
    fuzz_fast_equals_json_c(text, size);
    free(text);
  }
  OxDiagList d;
  ox_diags_init(&d, "trace.json");
  d.max_items = 64;
  OxTrace *t = NULL;
  char *text = fuzz_text(data, size);
  int rc = ox_trace_read_json(text, size, "trace.json", &t, &d);
  free(text);
  if (rc != 0) {
    if (t) fuzz_fail("trace: a failed read returned a trace");
    if (!d.n_errors) fuzz_fail("trace: a failed read reported no error");
    ox_diags_clear(&d);
    return 0;
  }
  ox_diags_clear(&d);
  OxBuf b1, b2;
  ox_buf_init(&b1);
  ox_buf_init(&b2);
  ox_trace_write_json(t, &b1);
  fuzz_fast_equals_json_c(b1.data, b1.len); /* what optimus writes is what the fast read is for */
  OxTrace *back = NULL;
  if (ox_trace_read_json(b1.data, b1.len, "written.json", &back, &d) != 0) {
    fuzz_print_diags(&d);
    fuzz_fail("trace: a trace that read does not read again once written");
  }
  ox_diags_clear(&d);
  ox_trace_write_json(back, &b2);
  if (b1.len != b2.len || memcmp(b1.data, b2.data, b1.len) != 0) fuzz_fail("trace: does not round-trip");
  ox_trace_free(back);
  back = NULL;
  /* through versions 2 to 4 (optimize --trace-format 2, 3, 4): the same trace again */
  for (int v = 2; v <= 4; v++) {
    if (back) ox_trace_free(back);
    back = NULL;
    b2.len = 0;
    ox_trace_write_json_version(t, v, &b2);
    if (ox_trace_read_json(b2.data, b2.len, "written-old.json", &back, &d) != 0) {
      fuzz_print_diags(&d);
      fuzz_fail("trace: a trace that read does not read again once written as version %d", v);
    }
    ox_diags_clear(&d);
    b2.len = 0;
    ox_trace_write_json(back, &b2);
    if (b1.len != b2.len || memcmp(b1.data, b2.data, b1.len) != 0) fuzz_fail("trace: does not round-trip through version %d", v);
  }
  /* explain's queries */
  const char *unknown[4];
  ox_trace_unknown_names(t, graph, unknown, 4);
  uint32_t idx[8];
  ox_trace_steps_for_node(t, "relu", idx, 8);
  for (uint32_t i = 0; i < t->n_steps && i < 64; i++) free(ox_reason_format(&t->steps[i].reason));
  /* info's coverage: rows add up to the records, every value is one the records name */
  OxCoverage *cov = ox_coverage_of(t);
  uint32_t rows_total = 0;
  for (uint32_t i = 0; i < cov->n_rows; i++) {
    const OxCoverageRow *r = &cov->rows[i];
    rows_total += r->attempts;
    if (r->attempts != r->applied + r->rejected + r->check_failed) fuzz_fail("trace: a coverage row does not add up");
    for (uint32_t j = 0; j < r->n_reasons; j++)
      for (uint32_t k = 0; k < r->reasons[j].n_details; k++) {
        char dd[320];
        const OxCoverageDetail *x = &r->reasons[j].details[k];
        if (x->first >= t->n_steps || !ox_coverage_detail_of(&t->steps[x->first], dd, sizeof dd) ||
            strcmp(dd, x->text) != 0)
          fuzz_fail("trace: a coverage value is not its first record's");
      }
  }
  if (rows_total != t->n_steps) fuzz_fail("trace: the coverage rows do not add up to the records");
  ox_coverage_free(cov);
  /* replay: a located error, or a graph that verifies */
  if (t->input_hash) {
    OxGraph *g = ox_graph_clone(graph);
    if (ox_replay(g, t, UINT32_MAX, &d) == 0) {
      /* structure as for a loaded graph: a damaged edit may make a malformed getitem, which is
       * content (optimus check reports it), not a broken graph */
      fuzz_verify_graph(g, "trace: the replayed graph");
    } else if (!d.n_errors) {
      fuzz_fail("trace: replay failed without an error");
    }
    ox_diags_clear(&d);
    ox_graph_free(g);
  }
  ox_buf_free(&b1);
  ox_buf_free(&b2);
  ox_trace_free(back);
  ox_trace_free(t);
  return 0;
}
