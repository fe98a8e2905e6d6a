/* Tests for the graph diff (engine/ir/ox_graph_diff.h): matching by name and by structure,
 * changed fields, regions, on small graphs written as print(graph) text, and on the bundled
 * example against itself renamed. */
#include <glib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_graph_diff.h"
#include "passes/ox_pass.h"
#include "run/ox_difftrace.h"
#include "load/ox_load.h"

static OxDoc *load_text(const char *text) {
  OxDiagList d;
  ox_diags_init(&d, "<test>");
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_buffer(text, strlen(text), OX_FMT_UNKNOWN, NULL, &doc, &d), ==, 0);
  ox_diags_clear(&d);
  return doc;
}

static OxNodeId id_of(const OxGraph *g, const char *name) {
  OxNodeId id = ox_graph_find(g, name);
  g_assert_cmpuint(id, !=, 0);
  return id;
}

/* x -> relu -> add(relu, x) -> mul(add, 2); x -> neg -> sub(neg, 1); output (mul, sub) */
static const char base_fx[] =
  "graph():\n"
  "    %x : [num_users=3] = placeholder[target=x]\n"
  "    %relu : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})\n"
  "    %add : [num_users=1] = call_function[target=operator.add](args = (%relu, %x), kwargs = {})\n"
  "    %mul : [num_users=1] = call_function[target=operator.mul](args = (%add, 2), kwargs = {})\n"
  "    %neg : [num_users=1] = call_function[target=torch.neg](args = (%x,), kwargs = {})\n"
  "    %sub : [num_users=1] = call_function[target=operator.sub](args = (%neg, 1), kwargs = {})\n"
  "    return (mul, sub)\n";

static void test_identical(void) {
  OxDoc *a = load_text(base_fx), *b = load_text(base_fx);
  OxGraphDiff d;
  ox_graph_diff(a->graphs[0], b->graphs[0], &d);
  g_assert_cmpuint(d.n_same, ==, 7);
  g_assert_cmpuint(d.n_changed + d.n_added + d.n_removed + d.n_regions, ==, 0);
  g_assert_cmpuint(d.n_by_name, ==, 7);
  ox_graph_diff_free(&d);
  ox_doc_free(a);
  ox_doc_free(b);
}

/* Two independent rewrites (relu -> sigmoid in one branch, neg's constant in the other) are two
 * regions; the output, which reads neither changed node directly, is untouched. */
static void test_regions(void) {
  OxDoc *a = load_text(base_fx);
  OxDoc *b = load_text("graph():\n"
                       "    %x : [num_users=3] = placeholder[target=x]\n"
                       "    %sigmoid : [num_users=1] = call_function[target=torch.sigmoid](args = (%x,), kwargs = {})\n"
                       "    %add : [num_users=1] = call_function[target=operator.add](args = (%sigmoid, %x), kwargs = {})\n"
                       "    %mul : [num_users=1] = call_function[target=operator.mul](args = (%add, 2), kwargs = {})\n"
                       "    %neg : [num_users=1] = call_function[target=torch.neg](args = (%x,), kwargs = {})\n"
                       "    %sub : [num_users=1] = call_function[target=operator.sub](args = (%neg, 3), kwargs = {})\n"
                       "    return (mul, sub)\n");
  const OxGraph *ga = a->graphs[0], *gb = b->graphs[0];
  OxGraphDiff d;
  ox_graph_diff(ga, gb, &d);
  g_assert_cmpuint(d.n_removed, ==, 1);
  g_assert_cmpuint(d.n_added, ==, 1);
  g_assert_cmpuint(d.n_changed, ==, 2);
  g_assert_cmpuint(d.n_regions, ==, 2);
  OxNodeId relu = id_of(ga, "relu"), add = id_of(ga, "add"), sub = id_of(ga, "sub");
  OxNodeId sig = id_of(gb, "sigmoid");
  g_assert_cmpint(d.a_state[relu], ==, OX_DIFF_REMOVED);
  g_assert_cmpint(d.b_state[sig], ==, OX_DIFF_ADDED);
  g_assert_cmpint(d.a_state[add], ==, OX_DIFF_CHANGED);
  g_assert_cmpint(d.a_fields[add], ==, OX_DIFF_F_ARGS);
  g_assert_cmpint(d.a_state[sub], ==, OX_DIFF_CHANGED);
  g_assert_cmpint(d.a_fields[sub], ==, OX_DIFF_F_ARGS);
  /* relu, sigmoid and add together (first in A's order: region 0); sub alone */
  g_assert_cmpuint(d.a_region[relu], ==, 0);
  g_assert_cmpuint(d.b_region[sig], ==, 0);
  g_assert_cmpuint(d.a_region[add], ==, 0);
  g_assert_cmpuint(d.b_region[id_of(gb, "add")], ==, 0);
  g_assert_cmpuint(d.a_region[sub], ==, 1);
  g_assert_cmpuint(d.a_region[id_of(ga, "x")], ==, OX_DIFF_NO_REGION);
  g_assert_cmpuint(d.a_region[id_of(ga, "mul")], ==, OX_DIFF_NO_REGION);
  ox_graph_diff_free(&d);
  ox_doc_free(a);
  ox_doc_free(b);
}

/* Every node renamed: matched by structure link by link from the placeholder (whose target is
 * its argument name); a changed target under the same name is a changed node. */
static void test_structure(void) {
  OxDoc *a = load_text(base_fx);
  OxDoc *b = load_text("graph():\n"
                       "    %inp : [num_users=3] = placeholder[target=x]\n"
                       "    %r : [num_users=1] = call_function[target=torch.relu](args = (%inp,), kwargs = {})\n"
                       "    %s : [num_users=1] = call_function[target=operator.add](args = (%r, %inp), kwargs = {})\n"
                       "    %m : [num_users=1] = call_function[target=operator.mul](args = (%s, 2), kwargs = {})\n"
                       "    %neg : [num_users=1] = call_function[target=torch.abs](args = (%inp,), kwargs = {})\n"
                       "    %t : [num_users=1] = call_function[target=operator.sub](args = (%neg, 1), kwargs = {})\n"
                       "    return (m, t)\n");
  const OxGraph *ga = a->graphs[0], *gb = b->graphs[0];
  OxGraphDiff d;
  ox_graph_diff(ga, gb, &d);
  g_assert_cmpuint(d.n_by_name, ==, 2); /* neg and output */
  g_assert_cmpuint(d.n_by_structure, ==, 5);
  g_assert_cmpuint(d.a_to_b[id_of(ga, "add")], ==, id_of(gb, "s"));
  g_assert_cmpuint(d.a_to_b[id_of(ga, "sub")], ==, id_of(gb, "t"));
  g_assert_cmpint(d.a_how[id_of(ga, "mul")], ==, OX_DIFF_BY_STRUCTURE);
  OxNodeId neg = id_of(ga, "neg");
  g_assert_cmpint(d.a_state[neg], ==, OX_DIFF_CHANGED);
  g_assert_cmpint(d.a_fields[neg], ==, OX_DIFF_F_TARGET);
  g_assert_cmpuint(d.n_changed, ==, 1);
  g_assert_cmpuint(d.n_added + d.n_removed, ==, 0);
  g_assert_cmpuint(d.n_regions, ==, 1);
  ox_graph_diff_free(&d);
  ox_doc_free(a);
  ox_doc_free(b);
}

/* The bundled example against a copy with every call renamed: nothing differs. */
static void test_example_renamed(void) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  g_autofree char *path = g_build_filename(root ? root : ".", "data", "examples", "recsys-towers.txt", NULL);
  OxDiagList dl;
  ox_diags_init(&dl, path);
  OxDoc *a = NULL;
  g_assert_cmpint(ox_load_file(path, OX_FMT_UNKNOWN, NULL, &a, &dl), ==, 0);
  ox_diags_clear(&dl);
  OxGraph *b = ox_graph_clone(a->graphs[0]);
  uint32_t renamed = 0;
  OX_GRAPH_FOREACH(b, id) {
    if (b->nodes[id].op != OX_OP_CALL_FUNCTION) continue;
    char name[256];
    g_snprintf(name, sizeof name, "renamed_%u", id);
    g_assert_true(ox_graph_rename(b, id, name));
    renamed++;
  }
  g_assert_cmpuint(renamed, >, 50);
  OxGraphDiff d;
  ox_graph_diff(a->graphs[0], b, &d);
  g_assert_cmpuint(d.n_by_structure, ==, renamed);
  g_assert_cmpuint(d.n_changed + d.n_added + d.n_removed, ==, 0);
  ox_graph_diff_free(&d);
  ox_graph_free(b);
  ox_doc_free(a);
}

/* No difference left between g and b (names may differ where nodes match by structure). */
static void assert_no_diff(const OxGraph *g, const OxGraph *b) {
  OxGraphDiff d;
  ox_graph_diff(g, b, &d);
  if (d.n_changed + d.n_added + d.n_removed) {
    g_printerr("left: %u changed, %u added, %u removed\n", d.n_changed, d.n_added, d.n_removed);
    g_test_fail();
  }
  ox_graph_diff_free(&d);
}

/* The diff of a and b as a pseudo-trace: one applied step per region; its end graph is b; it
 * survives a JSON round trip and replays from a (hash-checked) to b, in topological order. */
static void check_difftrace(const OxGraph *a, const OxGraph *b, uint32_t want_regions) {
  OxGraphDiff d;
  ox_graph_diff(a, b, &d);
  g_assert_cmpuint(d.n_regions, ==, want_regions);
  OxDiagList dl;
  ox_diags_init(&dl, "diff");
  OxGraph *end = NULL;
  OxTrace *t = ox_diff_trace(a, b, &d, &end, &dl);
  if (!t) ox_diags_print(&dl, stderr);
  g_assert_nonnull(t);
  g_assert_nonnull(end);
  g_assert_cmpuint(t->n_steps, ==, d.n_regions);
  g_assert_cmpuint(t->n_applied, ==, d.n_regions);
  for (uint32_t i = 0; i < t->n_steps; i++) {
    const OxStep *s = &t->steps[i];
    g_assert_cmpstr(s->pass, ==, "diff");
    g_autofree char *rule = g_strdup_printf("region %u", i + 1);
    g_assert_cmpstr(s->rule, ==, rule);
    g_assert_nonnull(s->anchor);
    g_assert_cmpint(s->checks[OX_CHECK_STRUCTURE].status, ==, OX_CHECK_PASSED);
  }
  assert_no_diff(end, b);
  OxDiagList vd;
  ox_diags_init(&vd, "end");
  g_assert_cmpint(ox_graph_verify(end, true, &vd), ==, 0);
  ox_diags_clear(&vd);
  /* JSON round trip, replay from a */
  OxBuf buf;
  ox_buf_init(&buf);
  ox_trace_write_json(t, &buf);
  ox_buf_putc(&buf, 0);
  OxTrace *back = NULL;
  g_assert_cmpint(ox_trace_read_json(buf.data, buf.len - 1, "diff.trace.json", &back, &dl), ==, 0);
  OxGraph *g = ox_graph_clone(a);
  g_assert_cmpint(ox_replay(g, back, UINT32_MAX, &dl), ==, 0);
  assert_no_diff(g, b);
  g_assert_cmpuint(ox_graph_structure_hash(g), ==, ox_graph_structure_hash(end));
  ox_graph_free(g);
  ox_trace_free(back);
  ox_buf_free(&buf);
  ox_trace_free(t);
  ox_graph_free(end);
  ox_diags_clear(&dl);
  ox_graph_diff_free(&d);
}

/* Small diffs: a removed node, an added one, changed arguments (two regions); a changed target
 * under the same name with the other nodes renamed (a node replaced in place). */
static void test_difftrace_small(void) {
  OxDoc *a = load_text(base_fx);
  OxDoc *b = load_text("graph():\n"
                       "    %x : [num_users=3] = placeholder[target=x]\n"
                       "    %sigmoid : [num_users=1] = call_function[target=torch.sigmoid](args = (%x,), kwargs = {})\n"
                       "    %add : [num_users=1] = call_function[target=operator.add](args = (%sigmoid, %x), kwargs = {})\n"
                       "    %mul : [num_users=1] = call_function[target=operator.mul](args = (%add, 2), kwargs = {})\n"
                       "    %neg : [num_users=1] = call_function[target=torch.neg](args = (%x,), kwargs = {})\n"
                       "    %sub : [num_users=1] = call_function[target=operator.sub](args = (%neg, 3), kwargs = {})\n"
                       "    return (mul, sub)\n");
  check_difftrace(a->graphs[0], b->graphs[0], 2);
  OxDoc *c = load_text("graph():\n"
                       "    %inp : [num_users=3] = placeholder[target=x]\n"
                       "    %r : [num_users=1] = call_function[target=torch.relu](args = (%inp,), kwargs = {})\n"
                       "    %s : [num_users=1] = call_function[target=operator.add](args = (%r, %inp), kwargs = {})\n"
                       "    %m : [num_users=1] = call_function[target=operator.mul](args = (%s, 2), kwargs = {})\n"
                       "    %neg : [num_users=1] = call_function[target=torch.abs](args = (%inp,), kwargs = {})\n"
                       "    %t : [num_users=1] = call_function[target=operator.sub](args = (%neg, 1), kwargs = {})\n"
                       "    %extra : [num_users=1] = call_function[target=torch.tanh](args = (%t,), kwargs = {})\n"
                       "    return (m, extra)\n");
  check_difftrace(a->graphs[0], c->graphs[0], 2);
  /* and back: B to A */
  check_difftrace(b->graphs[0], a->graphs[0], 2);
  ox_doc_free(a);
  ox_doc_free(b);
  ox_doc_free(c);
}

/* The bundled example against its own optimized graph (the default pipeline): every rewrite
 * the run made, as regions of the diff, replays to the optimized graph. */
static void test_difftrace_example(void) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  g_autofree char *path = g_build_filename(root ? root : ".", "data", "examples", "recsys-towers.txt", NULL);
  OxDiagList dl;
  ox_diags_init(&dl, path);
  OxDoc *a = NULL;
  g_assert_cmpint(ox_load_file(path, OX_FMT_UNKNOWN, NULL, &a, &dl), ==, 0);
  OxGraph *b = ox_graph_clone(a->graphs[0]);
  OxPipeline p;
  ox_pipeline_default(b, &p);
  OxCheckConfig checks;
  ox_check_config_default(&checks);
  OxOptimizeResult res;
  g_assert_cmpint(ox_optimize(b, &p, &checks, NULL, &res, &dl), ==, 0);
  g_assert_cmpuint(res.applied, >, 3);
  OxGraphDiff d;
  ox_graph_diff(a->graphs[0], b, &d);
  g_test_message("example: %u regions, %u added, %u removed, %u changed", d.n_regions, d.n_added, d.n_removed,
                 d.n_changed);
  g_assert_cmpuint(d.n_regions, >, 0);
  uint32_t regions = d.n_regions;
  ox_graph_diff_free(&d);
  check_difftrace(a->graphs[0], b, regions);
  ox_pipeline_free(&p);
  ox_graph_free(b);
  ox_doc_free(a);
  ox_diags_clear(&dl);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/graph-diff/identical", test_identical);
  g_test_add_func("/engine/graph-diff/regions", test_regions);
  g_test_add_func("/engine/graph-diff/structure", test_structure);
  g_test_add_func("/engine/graph-diff/example-renamed", test_example_renamed);
  g_test_add_func("/engine/graph-diff/pseudo-trace-small", test_difftrace_small);
  g_test_add_func("/engine/graph-diff/pseudo-trace-example", test_difftrace_example);
  return g_test_run();
}
