/* The real-dump corpus (/work/shared/corpus/fx-real, 29 files described in SOURCES.md):
 * every file loads leniently, every graph and subgraph passes the verifier, the node count
 * is pinned, and the strict-mode outcome (loads, or fails with a located error) is pinned.
 * A file added to or removed from the folder, or to SOURCES.md's table, fails the
 * inventory test until the table below is updated.
 *
 * Corpus path: $OPTIMUS_SHARED/corpus/fx-real, OPTIMUS_SHARED defaulting to
 * "$OPTIMUS_SOURCE_ROOT/../shared". When it is absent every test is skipped with the
 * path it looked at, never passed silently. */
#include <glib.h>
#include <string.h>

#include "ir/ox_graph.h"
#include "load/ox_load.h"
#include "ops/ox_ops.h"
#include "ops/ox_shape.h"
#include "passes/ox_pass.h"
#include "run/ox_trace.h"
#include "trace-compare.h"
#include "write/ox_write.h"

typedef enum { STRICT_LOADS, STRICT_FAILS } StrictOutcome;

typedef struct CorpusCase {
  const char *file;
  int sources;   /* node count given by SOURCES.md (output/return lines excluded) */
  int ours;      /* live nodes the loader makes, output nodes excluded, all graphs and subgraphs */
  int graphs;    /* top-level graphs in the document */
  int subgraphs; /* nested graphs, all levels */
  StrictOutcome strict;
} CorpusCase;

/* Where ours != sources, the comment says why: either a documented loader convention
 * (docs/format-fx-text.md "Names: two passes, externals, markers, duplicates" and "Damaged
 * input"; docs/format-fx-readable.md "Aliases") or a miscount in SOURCES.md (24, 25), checked
 * by recounting the file. SOURCES.md counts node lines / statements; we count the nodes the
 * loader makes. */
static const CorpusCase cases[] = {
  {"01-export-mlp-sigmoid-training-joint-fwd-bwd.txt", 72, 72, 1, 0, STRICT_LOADS},
  /* outer graph + 2 nested "lowered graph():" blocks hung off their get_attr nodes */
  {"02-executorch-mobilenetv2-delegated-nested-lowered-graphs.txt", 529, 529, 1, 2, STRICT_LOADS},
  /* 10 lines + 3 external placeholders for names the headerless paste uses but never defines
   * (one warning each, so strict fails); the indented "lowered graph():" is a subgraph */
  {"03-executorch-nanogpt-delegated-fragment-no-header.txt", 10, 13, 1, 1, STRICT_FAILS},
  {"04-trt-acc-tracer-reshape-kwargs-only-nested-tuple.txt", 5, 5, 1, 0, STRICT_LOADS},
  {"05-trt-post-export-graph-prefixed-sym-size.txt", 4, 4, 1, 0, STRICT_LOADS},
  /* 20 lines + 9 externals (%getitem_13, %mm_default_35, %primals_1 ...: defined outside the fragment) */
  {"06-inductor-fragment-vit-dropout-layernorm-oldstyle.txt", 20, 29, 1, 0, STRICT_FAILS},
  {"07-resnet18-symbolic-trace-call-module-oldstyle.txt", 70, 70, 1, 0, STRICT_LOADS},
  /* 14 lines + 3 externals: the hand-edited doc uses %t_default, %t_default_1, %t_default_2
   * without defining them */
  {"08-executorch-v0.1-edge-linear-relu-get-attr-oldstyle.txt", 14, 17, 1, 0, STRICT_FAILS},
  {"09-trt-notebook-three-split-submodule-graphs-oldstyle.txt", 9, 9, 3, 0, STRICT_LOADS},
  /* 9 lines, of which 3 (not 2 as SOURCES.md says: linear_1, relu_1, linalg_norm_1) are truncated
   * to "(args = (), ..." and skipped with a warning; the returns of graphs 1 and 2 then name
   * nodes that no longer exist, so relu_1 and linalg_norm_1 become externals: 4 + 2 + 2 = 8 */
  {"10-trt-example-three-graphs-truncated-lines-oldstyle.txt", 9, 8, 3, 0, STRICT_FAILS},
  /* no return line: a fragment without an output node, which is not a warning, so strict loads */
  {"11-colossalai-linear-aten-placeholder-default-no-output.txt", 17, 17, 1, 0, STRICT_LOADS},
  {"12-colossalai-conv-bias-call-method-view-get-attr-oldstyle.txt", 7, 7, 1, 0, STRICT_LOADS},
  /* 35 lines, 14 of them PlaceHolder markers; 4 markers (add_537, mul_1075, rsqrt_9, rsqrt_10 —
   * SOURCES.md names 3) are merged into the real definition of the same name: 31 nodes, plus
   * 1 external */
  {"13-inductor-fragment-layernorm-sigmoid-var-mean-PREFIXED.txt", 35, 32, 1, 0, STRICT_FAILS},
  /* 8 lines (3 markers) + 18 externals: flex_attention_backward's operands come from outside */
  {"14-inductor-fragment-flex-attention-backward-tuple-dict-args.txt", 8, 26, 1, 0, STRICT_FAILS},
  /* every name the fragment uses is defined by a line or a PlaceHolder marker: no warning */
  {"15-inductor-fragment-patch-embed-cat-iota-unfold-none-index.txt", 23, 23, 1, 0, STRICT_LOADS},
  /* 19 lines + 2 externals (%getitem_5, %getitem_6 of a split outside the fragment) */
  {"16-inductor-fragment-rope-split-getitem-neg-cat.txt", 19, 21, 1, 0, STRICT_FAILS},
  /* 10 lines + 1 external */
  {"17-inductor-fragment-symbolic-s2-slice-select-scatter.txt", 10, 11, 1, 0, STRICT_FAILS},
  /* 1749 lines; each of the 149 PlaceHolder markers names a node the fragment also defines, so all
   * merge (1600 nodes); 417 names are used but defined outside the fragment: externals */
  {"18-inductor-fragment-fused-elementwise-1750-lines.txt", 1749, 2017, 1, 0, STRICT_FAILS},
  /* the PlaceHolder marker of %mm merges into the call_function that defines mm: 5 lines, 4 nodes */
  {"19-inductor-fragment-bf16-mm-relu-duplicate-placeholder-name.txt", 5, 4, 1, 0, STRICT_LOADS},
  {"20-dlrm-inference-embedding-bag-cat-index-readable.txt", 82, 82, 1, 0, STRICT_LOADS},
  {"21-dlrm-train-backward-embedding-bag-backward-readable.txt", 137, 137, 1, 0, STRICT_LOADS},
  {"22-mnist-cnn-aot-forward-fx-graph-readable.txt", 42, 42, 1, 0, STRICT_LOADS},
  {"23-distilgpt2-inference-lambda-class-fx-graph-readable.txt", 483, 483, 1, 0, STRICT_LOADS},
  /* SOURCES.md miscounts the placeholders (159): forward() has 165 parameters, 153 annotated and
   * 12 unannotated fwd_rng_state_0 .. fwd_rng_state_11; 165 + 1077 statements = 1242 */
  {"24-vit-fp16-symbolic-s77-forward-fx-graph-readable-large.txt", 1236, 1242, 1, 0, STRICT_LOADS},
  /* SOURCES.md miscounts the placeholders (333): forward() has 331 parameters (counted splitting
   * at commas outside the quoted annotations); 331 + 2950 statements = 3281 */
  {"25-llama3-8b-tlparse-post-grad-strides-device-triton-wrapper-large.txt", 3283, 3281, 1, 0, STRICT_LOADS},
  /* the 4 alias statements "l_a_ = L_a_" / "l_b_ = L_b_" (2 per graph) make no node: the loader
   * folds each into its placeholder (docs/format-fx-readable.md "Aliases"); (2+2) + (3+4) = 11 */
  {"26-torch-logs-graph-code-two-graphs-PREFIXED.txt", 15, 11, 2, 0, STRICT_LOADS},
  {"27-megatron-gpt-tp2-collectives-apex-layernorm-readable.txt", 194, 194, 1, 0, STRICT_LOADS},
  {"28-sglang-deepseek-rope-nested-submodule-slices-stack.txt", 74, 74, 1, 2, STRICT_LOADS},
  {"29-mobilevit-s-cnn-transformer-unbind-lambda-readable-large.txt", 1387, 1387, 1, 0, STRICT_LOADS},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* ------------------------------------------------------------------ corpus location */

static char *corpus_dir(void) {
  const char *shared = g_getenv("OPTIMUS_SHARED");
  char *base;
  if (shared && *shared) {
    base = g_strdup(shared);
  } else {
    const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
    base = g_build_filename(root && *root ? root : ".", "..", "shared", NULL);
  }
  char *dir = g_build_filename(base, "corpus", "fx-real", NULL);
  g_free(base);
  return dir;
}

/* Returns the corpus directory, or NULL after marking the test skipped. */
static char *corpus_or_skip(void) {
  char *dir = corpus_dir();
  char *sources = g_build_filename(dir, "SOURCES.md", NULL);
  bool ok = g_file_test(sources, G_FILE_TEST_IS_REGULAR);
  g_free(sources);
  if (!ok) {
    char *msg = g_strdup_printf("corpus not found: no %s/SOURCES.md (set OPTIMUS_SHARED)", dir);
    g_test_skip(msg);
    g_free(msg);
    g_free(dir);
    return NULL;
  }
  return dir;
}

static const CorpusCase *find_case(const char *file) {
  for (size_t i = 0; i < N_CASES; i++)
    if (strcmp(cases[i].file, file) == 0) return &cases[i];
  return NULL;
}

/* ------------------------------------------------------------------ per-file checks */

typedef struct Tally {
  int nodes;      /* live, non-output */
  int externals;  /* OX_NODE_EXTERNAL placeholders among them */
  int markers;    /* OX_NODE_MARKER nodes among them */
  int subgraphs;
  int verify_errors;
} Tally;

static void check_graph(OxGraph *g, const char *file, Tally *t, bool nested) {
  OxDiagList d;
  ox_diags_init(&d, file);
  bool has_output = ox_graph_output(g) != 0;
  int e = ox_graph_verify(g, has_output, &d);
  if (e) {
    for (size_t i = 0; i < d.n; i++) {
      char *s = ox_diag_format(&d, &d.items[i]);
      g_test_message("verify %s (graph %s): %s", file, g->name ? g->name : "?", s);
      free(s);
    }
  }
  t->verify_errors += e;
  ox_diags_clear(&d);
  if (nested) t->subgraphs++;
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    if (n->op == OX_OP_OUTPUT) continue;
    t->nodes++;
    if (n->flags & OX_NODE_EXTERNAL) t->externals++;
    if (n->flags & OX_NODE_MARKER) t->markers++;
  }
  for (uint32_t i = 0; i < g->n_subgraphs; i++) check_graph(g->subgraphs[i], file, t, true);
}

static void print_diags(const char *what, const OxDiagList *d) {
  for (size_t i = 0; i < d->n; i++) {
    char *s = ox_diag_format(d, &d->items[i]);
    g_test_message("%s: %s", what, s);
    free(s);
  }
}

static void test_file(gconstpointer data) {
  const CorpusCase *c = data;
  char *dir = corpus_or_skip();
  if (!dir) return;
  char *path = g_build_filename(dir, c->file, NULL);
  g_free(dir);
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    g_test_message("%s is listed in the test table but missing from the corpus", path);
    g_test_fail();
    g_free(path);
    return;
  }

  /* lenient: must load */
  OxDiagList d;
  ox_diags_init(&d, c->file);
  OxDoc *doc = NULL;
  OxLoadOptions lenient = {0};
  int rc = ox_load_file(path, OX_FMT_UNKNOWN, &lenient, &doc, &d);
  if (rc != 0 || g_test_verbose()) print_diags("lenient", &d);
  g_assert_cmpint(rc, ==, 0);
  g_assert_nonnull(doc);
  g_assert_cmpuint(d.n_errors, ==, 0);
  size_t lenient_warnings = d.n_warnings;
  ox_diags_clear(&d);

  Tally t = {0};
  for (uint32_t i = 0; i < doc->n_graphs; i++) check_graph(doc->graphs[i], c->file, &t, false);
  g_test_message("%s: %s, %u graph(s), %d subgraph(s), %d nodes (%d external, %d marker), "
                 "%zu warning(s); SOURCES.md says %d",
                 c->file, ox_format_name(doc->format), doc->n_graphs, t.subgraphs, t.nodes, t.externals,
                 t.markers, lenient_warnings, c->sources);
  g_assert_cmpint(t.verify_errors, ==, 0);
  g_assert_cmpint((int)doc->n_graphs, ==, c->graphs);
  g_assert_cmpint(t.subgraphs, ==, c->subgraphs);
  g_assert_cmpint(t.nodes, ==, c->ours);

  /* the default optimization runs on every real graph with every check, fails no check,
   * leaves a graph the verifier accepts, and its trace replays to the same graph */
  for (uint32_t i = 0; i < doc->n_graphs; i++) {
    OxGraph *g = doc->graphs[i];
    ox_shape_infer_graph(g, NULL, NULL);
    OxGraph *input = ox_graph_clone(g);
    OxPipeline p;
    ox_pipeline_default(g, &p);
    OxCheckConfig cc;
    ox_check_config_default(&cc);
    OxTrace *tr = ox_trace_new();
    OxOptimizeResult res;
    ox_diags_init(&d, c->file);
    g_assert_cmpint(ox_optimize(g, &p, &cc, tr, &res, &d), ==, 0);
    g_assert_cmpuint(res.budget_stops, ==, 0); /* the default budgets are far from real passes */
    /* the op index the scans read agrees with the nodes after every rewrite and rollback */
    g_assert_cmpuint(ox_op_index_check(g), ==, 0);
    if (res.check_failures) {
      for (uint32_t k = 0; k < tr->n_steps; k++)
        if (tr->steps[k].kind == OX_STEP_CHECK_FAILED) {
          char *why = ox_reason_format(&tr->steps[k].reason);
          g_test_message("%s: step %u (%s) failed a check: %s", c->file, k, tr->steps[k].pass, why);
          free(why);
        }
    }
    g_assert_cmpuint(res.check_failures, ==, 0);
    g_assert_cmpint(ox_graph_verify(g, ox_graph_output(g) != 0, &d), ==, 0);
    /* the trace in version 2 and version 3: read back the same, record by record, written
     * again to the same bytes, replayed to the same graph (input is left as it is) */
    OxBuf want;
    ox_buf_init(&want);
    ox_write_fx_text(g, &want);
    size_t v4 = trace_check_versions(tr, input, want.data, c->file);
    g_test_message("%s graph %u: version 4 trace %zu bytes", c->file, i + 1, v4);
    ox_buf_free(&want);
    /* replayed from the trace as written to JSON and read back */
    OxBuf js;
    ox_buf_init(&js);
    ox_trace_write_json(tr, &js);
    OxTrace *back = NULL;
    g_assert_cmpint(ox_trace_read_json(js.data, js.len, "trace.json", &back, &d), ==, 0);
    ox_buf_free(&js);
    g_assert_cmpint(ox_replay(input, back, UINT32_MAX, &d), ==, 0);
    ox_trace_free(back);
    OxBuf a, b;
    ox_buf_init(&a);
    ox_buf_init(&b);
    ox_write_fx_text(g, &a);
    ox_write_fx_text(input, &b);
    g_assert_cmpstr(a.data, ==, b.data);
    /* and every node came from the same input nodes */
    OX_GRAPH_FOREACH(g, id) {
      OxNodeId r = ox_graph_find(input, g->nodes[id].name);
      g_assert_cmpuint(r, !=, 0);
      const OxNode *x = &g->nodes[id], *y = &input->nodes[r];
      if (x->n_provenance != y->n_provenance)
        g_test_message("%s: %s has %u provenance ids optimized, %u replayed", c->file, x->name, x->n_provenance,
                       y->n_provenance);
      g_assert_cmpuint(x->n_provenance, ==, y->n_provenance);
      for (uint32_t q = 0; q < x->n_provenance; q++) g_assert_cmpuint(x->provenance[q], ==, y->provenance[q]);
    }
    g_test_message("%s graph %u: %u applied, %u rejected", c->file, i + 1, res.applied, res.rejected);
    ox_buf_free(&a);
    ox_buf_free(&b);
    ox_diags_clear(&d);
    ox_trace_free(tr);
    ox_pipeline_free(&p);
    ox_graph_free(input);
  }
  ox_doc_free(doc);

  /* strict: loads, or fails with at least one error that has a source line */
  OxLoadOptions strict = {.strict = true};
  ox_diags_init(&d, c->file);
  doc = NULL;
  rc = ox_load_file(path, OX_FMT_UNKNOWN, &strict, &doc, &d);
  if (g_test_verbose()) print_diags("strict", &d);
  if (c->strict == STRICT_LOADS) {
    if (rc != 0) print_diags("strict", &d);
    g_assert_cmpint(rc, ==, 0);
    g_assert_nonnull(doc);
    g_assert_cmpuint(d.n_errors, ==, 0);
    g_assert_cmpuint(d.n_warnings, ==, 0);
  } else {
    g_assert_cmpint(rc, ==, -1);
    g_assert_null(doc);
    g_assert_cmpuint(d.n_errors, >, 0);
    bool located = false;
    for (size_t i = 0; i < d.n; i++)
      if (d.items[i].sev == OX_SEV_ERROR && d.items[i].line > 0) located = true;
    if (!located) print_diags("strict (no located error)", &d);
    g_assert_true(located);
  }
  ox_diags_clear(&d);
  ox_doc_free(doc);
  g_free(path);
}

/* ------------------------------------------------------------------ inventory */

/* The folder holds exactly SOURCES.md's files, and this table pins each of them. */
static void test_inventory(void) {
  char *dir = corpus_or_skip();
  if (!dir) return;

  GError *err = NULL;
  GDir *gd = g_dir_open(dir, 0, &err);
  g_assert_no_error(err);
  GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
  const char *name;
  while ((name = g_dir_read_name(gd))) {
    if (strcmp(name, "SOURCES.md") == 0) continue;
    g_ptr_array_add(files, g_strdup(name));
  }
  g_dir_close(gd);

  int unpinned = 0;
  for (guint i = 0; i < files->len; i++) {
    const char *f = files->pdata[i];
    if (!find_case(f)) {
      g_test_message("corpus file %s has no pinned entry: add it to cases[] in tests/test-corpus.c "
                     "with its SOURCES.md node count, graph counts and strict outcome",
                     f);
      unpinned++;
    }
  }
  int missing = 0;
  for (size_t i = 0; i < N_CASES; i++) {
    char *p = g_build_filename(dir, cases[i].file, NULL);
    if (!g_file_test(p, G_FILE_TEST_IS_REGULAR)) {
      g_test_message("pinned corpus file %s is missing from %s", cases[i].file, dir);
      missing++;
    }
    g_free(p);
  }

  /* SOURCES.md's table rows start with "| `NAME` |" */
  char *src_path = g_build_filename(dir, "SOURCES.md", NULL);
  char *text = NULL;
  g_assert_true(g_file_get_contents(src_path, &text, NULL, &err));
  g_assert_no_error(err);
  int listed = 0, listed_unknown = 0;
  char **lines = g_strsplit(text, "\n", -1);
  for (char **l = lines; *l; l++) {
    if (!g_str_has_prefix(*l, "| `")) continue;
    const char *s = *l + 3;
    const char *e = strchr(s, '`');
    if (!e) continue;
    char *f = g_strndup(s, (gsize)(e - s));
    listed++;
    bool in_dir = false;
    for (guint i = 0; i < files->len; i++)
      if (strcmp(files->pdata[i], f) == 0) in_dir = true;
    if (!in_dir || !find_case(f)) {
      g_test_message("SOURCES.md lists %s, which is %s", f,
                     !in_dir ? "not in the corpus folder" : "not pinned in tests/test-corpus.c");
      listed_unknown++;
    }
    g_free(f);
  }
  g_strfreev(lines);
  g_free(text);
  g_free(src_path);

  g_assert_cmpint(unpinned, ==, 0);
  g_assert_cmpint(missing, ==, 0);
  g_assert_cmpint(listed_unknown, ==, 0);
  g_assert_cmpint(listed, ==, 29);
  g_assert_cmpuint(files->len, ==, 29);
  g_assert_cmpint(N_CASES, ==, 29);
  g_ptr_array_free(files, TRUE);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/corpus/inventory", test_inventory);
  for (size_t i = 0; i < N_CASES; i++) {
    char *p = g_strdup_printf("/engine/corpus/%s", cases[i].file);
    g_test_add_data_func(p, &cases[i], test_file);
    g_free(p);
  }
  return g_test_run();
}
