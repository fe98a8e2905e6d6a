/* fuzz-json.c - libFuzzer harness: our JSON loader (engine/json/ox_json.c). Any input: fails with a
 * located error, or loads graphs that verify, whose JSON round-trips byte for byte and whose FX
 * text reloads and is stable after one round. */
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return -1;
  char *text = fuzz_text(data, size);
  OxDoc *doc = fuzz_load(text, size, OX_FMT_JSON, "json");
  free(text);
  if (!doc) return 0;
  fuzz_json_roundtrip(doc, "json");
  fuzz_fx_roundtrip(doc, "json");
  ox_doc_free(doc);
  return 0;
}
