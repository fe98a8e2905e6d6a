/* fuzz-fx-readable.c - libFuzzer harness: the print_readable() / graph_code loader
 * (engine/load/ox_parse_py.c), which parses Python and must never execute it. Any input: fails with
 * a located error, or loads graphs that verify and round-trip through FX text and JSON. */
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return -1;
  char *text = fuzz_text(data, size);
  OxDoc *doc = fuzz_load(text, size, OX_FMT_FX_READABLE, "fx-readable");
  free(text);
  if (!doc) return 0;
  fuzz_fx_roundtrip(doc, "fx-readable");
  fuzz_json_roundtrip(doc, "fx-readable");
  ox_doc_free(doc);
  return 0;
}
