/* fuzz-fx-text.c - libFuzzer harness: the print(graph) text loader (engine/load/ox_parse_fx.c).
 * Any input: fails with a located error, or loads graphs that verify, whose FX text reloads
 * and is stable after one round, and whose JSON round-trips (fuzz-common.h). */
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return -1;
  char *text = fuzz_text(data, size);
  OxDoc *doc = fuzz_load(text, size, OX_FMT_FX_TEXT, "fx-text");
  free(text);
  if (!doc) return 0;
  fuzz_fx_roundtrip(doc, "fx-text");
  fuzz_json_roundtrip(doc, "fx-text");
  ox_doc_free(doc);
  return 0;
}
