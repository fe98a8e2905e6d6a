/* fuzz-optimize.c - libFuzzer harness: load -> optimize. Any input that loads (any format,
 * detected) and is small enough gets shape inference and the default pipeline of its level with
 * every check; then the optimized graph must verify and the trace must read back and replay to
 * the same graph (fuzz_optimize_check). */
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return -1;
  char *text = fuzz_text(data, size);
  OxDoc *doc = fuzz_load(text, size, OX_FMT_UNKNOWN, "optimize");
  free(text);
  if (!doc) return 0;
  OxGraph *g = doc->graphs[0];
  if (g->n_live <= 3000) {
    ox_shape_infer_graph(g, NULL, NULL);
    fuzz_verify_graph(g, "optimize: after shape inference");
    OxPipeline p;
    ox_pipeline_default(g, &p);
    fuzz_optimize_check(g, &p, "optimize");
    ox_pipeline_free(&p);
  }
  ox_doc_free(doc);
  return 0;
}
