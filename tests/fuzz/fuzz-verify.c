/* fuzz-verify.c - libFuzzer harness: load -> the interpreter on the whole graph. Any input that
 * loads (any format; records come with JSON) and is small enough is run by `optimus verify`'s
 * code on its recorded inputs and parameters (ox_verify_record) with the kernels' default element
 * budget: every kernel must refuse what it cannot compute with a message, never crash, read out
 * of bounds or leak, whatever the settings, shapes and values the input gives it (a GRU whose
 * hidden_size disagrees with its weights, a mask of the wrong shape, -inf in a masked_fill). */
#include "fuzz-common.h"
#include "run/ox_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Elements a record holds (its tensors, fills and data kept as text alike): above a million the
 * run would measure the kernels' speed under the sanitizers (resnet18's 11.7M parameters), not
 * find faults. */
static int64_t record_elements(const OxRecord *r) {
  const OxRecordTensor *sets[2] = {r->inputs, r->params};
  uint32_t ns[2] = {r->n_inputs, r->n_params};
  int64_t total = 0;
  for (int s = 0; s < 2; s++)
    for (uint32_t i = 0; i < ns[s]; i++) {
      const OxRecordTensor *e = &sets[s][i];
      int64_t n = 1;
      if (e->t) {
        n = e->t->numel;
      } else {
        for (int32_t d = 0; d < e->fill.rank && d < OX_TENSOR_MAX_RANK; d++)
          n = e->fill.shape[d] > 0 && n <= INT64_MAX / e->fill.shape[d] ? n * e->fill.shape[d] : INT64_MAX;
      }
      total = n > INT64_MAX - total ? INT64_MAX : total + n;
    }
  return total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return -1;
  char *text = fuzz_text(data, size);
  OxDoc *doc = fuzz_load(text, size, OX_FMT_UNKNOWN, "verify");
  free(text);
  if (!doc) return 0;
  if (doc->record && doc->graphs[0]->n_live <= 3000 && record_elements(doc->record) <= (1 << 20)) {
    OxVerifyReport rep;
    memset(&rep, 0, sizeof rep);
    char err[512];
    err[0] = 0;
    int rc = ox_verify_record(doc, 0, &rep, err, sizeof err);
    if (rc != 0 && !err[0]) fuzz_fail("verify: the interpreter could not run and said nothing");
    if (rc == 0 && rep.n_outputs && !rep.outputs) fuzz_fail("verify: a report without its outputs");
    ox_verify_report_clear(&rep);
  }
  ox_doc_free(doc);
  return 0;
}
