/* fuzz-json.c - libFuzzer harness: our JSON loader (engine/json/ox_json.c). Any input: fails with a
 * located error, or loads graphs that verify, whose JSON round-trips byte for byte and whose FX
 * text reloads and is stable after one round. And the fast read (engine/json/ox_json_fast.c, our
 * own tokenizer) agrees with the json-c tree read on every input it takes, and on the document
 * written again: the same status, the same diagnostics in the same order, the same document. */
#include "fuzz-common.h"
#include "load/ox_parse.h"
#include "run/ox_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One read, fast read on or off: status, every diagnostic, the document written again. */
static void read_summary(const char *text, size_t size, bool fast, OxBuf *out) {
  ox_json_set_streaming(fast);
  OxDiagList d;
  ox_diags_init(&d, "fuzz.json");
  OxDoc *doc = NULL;
  int rc = ox_load_buffer(text, size, OX_FMT_JSON, NULL, &doc, &d);
  ox_buf_printf(out, "rc=%d\n", rc);
  for (size_t i = 0; i < d.n; i++) {
    char *m = ox_diag_format(&d, &d.items[i]);
    ox_buf_printf(out, "%s [node %s]\n", m, d.items[i].node ? d.items[i].node : "-");
    free(m);
  }
  /* data the fast read kept as text is written as it came, the tree read's as %.17g numbers:
   * compare values */
  if (rc == 0 && doc->record && !ox_record_materialize(doc->record)) fuzz_fail("json: out of memory");
  if (rc == 0) ox_write_json(doc, out);
  ox_doc_free(doc);
  ox_diags_clear(&d);
  ox_json_set_streaming(true);
}

static void fuzz_fast_equals_tree(const char *text, size_t size) {
  unsigned long before = ox_json_streamed_reads();
  OxBuf a, b;
  ox_buf_init(&a);
  ox_buf_init(&b);
  read_summary(text, size, true, &a);
  if (ox_json_streamed_reads() != before) { /* the fast read took it: the tree read must agree */
    read_summary(text, size, false, &b);
    if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0) {
      fprintf(stderr, "--- fast read\n%.*s\n--- tree read\n%.*s\n", (int)(a.len < 4000 ? a.len : 4000), a.data,
              (int)(b.len < 4000 ? b.len : 4000), b.data);
      fuzz_fail("json: the fast read differs from the tree read");
    }
  }
  ox_buf_free(&a);
  ox_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return -1;
  char *text = fuzz_text(data, size);
  fuzz_fast_equals_tree(text, size);
  OxDoc *doc = fuzz_load(text, size, OX_FMT_JSON, "json");
  free(text);
  if (!doc) return 0;
  /* what optimus writes is what the fast read is for (a mutated input rarely stays clean): both
   * reads of the document written again agree too */
  OxBuf w;
  ox_buf_init(&w);
  ox_write_json(doc, &w);
  fuzz_fast_equals_tree(w.data, w.len);
  ox_buf_free(&w);
  fuzz_json_roundtrip(doc, "json");
  fuzz_fx_roundtrip(doc, "json");
  ox_doc_free(doc);
  return 0;
}
