/* fuzz-rules.c - libFuzzer harness: the rule language (engine/rules/). Any input: loads
 * nothing with at least one located error, or loads a rule set whose passes then run on a small
 * graph of common ops (split, getitem, linear, layer_norm, relu, sigmoid, mul, add, cat, view)
 * with every check and budgets, followed by fuzz_optimize_check's invariants. */
#include "fuzz-common.h"
#include "rules/ox_rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char graph_text[] =
    "graph():\n"
    "    %x : Tensor \"f32[8, 16]\" = placeholder[target=x]\n"
    "    %w : Tensor \"f32[4, 4]\" = placeholder[target=w]\n"
    "    %b : Tensor \"f32[4]\" = placeholder[target=b]\n"
    "    %split : Tensor \"(f32[8, 4], f32[8, 4], f32[8, 4], f32[8, 4])\" = call_function[target=torch.split](args = (%x, 4), kwargs = {dim: 1})\n"
    "    %g0 : Tensor \"f32[8, 4]\" = call_function[target=operator.getitem](args = (%split, 0), kwargs = {})\n"
    "    %g1 : Tensor \"f32[8, 4]\" = call_function[target=operator.getitem](args = (%split, 1), kwargs = {})\n"
    "    %g2 : Tensor \"f32[8, 4]\" = call_function[target=operator.getitem](args = (%split, 2), kwargs = {})\n"
    "    %g3 : Tensor \"f32[8, 4]\" = call_function[target=operator.getitem](args = (%split, 3), kwargs = {})\n"
    "    %l0 : Tensor \"f32[8, 4]\" = call_function[target=torch.nn.functional.linear](args = (%g0, %w, %b), kwargs = {})\n"
    "    %l1 : Tensor \"f32[8, 4]\" = call_function[target=torch.nn.functional.linear](args = (%g1, %w, %b), kwargs = {})\n"
    "    %n0 : Tensor \"f32[8, 4]\" = call_function[target=torch.nn.functional.layer_norm](args = (%l0, [4]), kwargs = {})\n"
    "    %r0 : Tensor \"f32[8, 4]\" = call_function[target=torch.relu](args = (%n0,), kwargs = {})\n"
    "    %s1 : Tensor \"f32[8, 4]\" = call_function[target=torch.sigmoid](args = (%l1,), kwargs = {})\n"
    "    %m1 : Tensor \"f32[8, 4]\" = call_function[target=operator.mul](args = (%l1, %s1), kwargs = {})\n"
    "    %a2 : Tensor \"f32[8, 4]\" = call_function[target=operator.add](args = (%g2, %g3), kwargs = {})\n"
    "    %t3 : Tensor \"f32[8, 4]\" = call_function[target=torch.tanh](args = (%g3,), kwargs = {})\n"
    "    %cat : Tensor \"f32[8, 16]\" = call_function[target=torch.cat](args = ([%r0, %m1, %a2, %t3],), kwargs = {dim: 1})\n"
    "    %v : Tensor \"f32[128]\" = call_method[target=view](args = (%cat, -1), kwargs = {})\n"
    "    return (v,)\n";

static OxGraph *graph;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return -1;
  if (!graph) {
    OxDoc *doc = fuzz_load(graph_text, strlen(graph_text), OX_FMT_FX_TEXT, "rules: the graph");
    if (!doc) fuzz_fail("rules: the harness's own graph does not load");
    graph = ox_graph_clone(doc->graphs[0]);
    ox_doc_free(doc);
    ox_shape_infer_graph(graph, NULL, NULL);
  }
  OxDiagList d;
  ox_diags_init(&d, "fuzz.rules");
  d.max_items = 64;
  OxRuleSet *rs = NULL;
  char *text = fuzz_text(data, size);
  int rc = ox_rules_load_buffer(text, size, "fuzz.rules", &rs, &d);
  free(text);
  if (rc != 0) {
    if (rs) fuzz_fail("rules: a failed load returned a rule set");
    if (!d.n_errors) fuzz_fail("rules: a failed load reported no error");
    for (size_t i = 0; i < d.n; i++)
      if (d.items[i].sev == OX_SEV_ERROR && !d.items[i].line) fuzz_fail("rules: an error without a line: %s", d.items[i].msg);
    ox_diags_clear(&d);
    return 0;
  }
  ox_diags_clear(&d);
  OxPipeline p = {0};
  ox_rules_append(rs, &p);
  for (uint32_t i = 0; i < p.n; i++)
    if (p.entries[i].opt.counter > 3) p.entries[i].opt.counter = 3; /* budgets bound it anyway; this keeps runs fast */
  fuzz_optimize_check(graph, &p, "rules");
  ox_pipeline_free(&p);
  ox_rules_free(rs);
  return 0;
}
