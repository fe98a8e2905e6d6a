/* Tests for what-if re-runs (engine/run/ox_whatif.h) on the bundled example
 * (data/examples/recsys-towers.txt: parallel towers whose batch fusions are rejected with sets
 * of 1 to 4 below min_fuse_set_size 5), checked against plain ox_optimize runs with the same
 * change, and for the bounded text of reasons (ox_text_clip). */
#include <glib.h>
#include <string.h>

#include "load/ox_load.h"
#include "ops/ox_shape.h"
#include "passes/ox_pass.h"
#include "run/ox_compare.h"
#include "run/ox_whatif.h"

typedef struct Fixture {
  OxDoc *doc;
  const OxGraph *input;
  OxPipeline p;
  OxCheckConfig checks;
  OxTrace *base;
  uint32_t base_nodes;
} Fixture;

static uint32_t count_nodes(const OxGraph *g) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id) n += g->nodes[id].op != OX_OP_OUTPUT;
  return n;
}

static char *example_path(void) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  return g_build_filename(root ? root : ".", "data", "examples", "recsys-towers.txt", NULL);
}

static void fixture_init(Fixture *f) {
  memset(f, 0, sizeof *f);
  g_autofree char *path = example_path();
  OxDiagList d;
  ox_diags_init(&d, path);
  g_assert_cmpint(ox_load_file(path, OX_FMT_UNKNOWN, NULL, &f->doc, &d), ==, 0);
  ox_diags_clear(&d);
  f->input = f->doc->graphs[0];
  ox_pipeline_default(f->input, &f->p);
  ox_check_config_default(&f->checks);
  f->checks.numeric = FALSE; /* structure and shape: the decisions do not depend on it, and it is 10x faster */
  OxGraph *g = ox_graph_clone(f->input);
  f->base = ox_trace_new_for(g);
  OxOptimizeResult res;
  ox_diags_init(&d, NULL);
  g_assert_cmpint(ox_optimize(g, &f->p, &f->checks, f->base, &res, &d), ==, 0);
  ox_diags_clear(&d);
  f->base_nodes = count_nodes(g);
  ox_graph_free(g);
}

static void fixture_clear(Fixture *f) {
  ox_trace_free(f->base);
  ox_pipeline_free(&f->p);
  ox_doc_free(f->doc);
}

/* The graph and trace of a plain run of the default pipeline with `option` set (NULL: none). */
static OxGraph *plain_run(Fixture *f, const char *option, OxTrace **trace_out) {
  OxPipeline p;
  ox_pipeline_default(f->input, &p);
  OxDiagList d;
  ox_diags_init(&d, NULL);
  if (option) g_assert_cmpint(ox_pipeline_set_option(&p, option, &d), ==, 0);
  OxGraph *g = ox_graph_clone(f->input);
  OxTrace *t = ox_trace_new_for(g);
  OxOptimizeResult res;
  g_assert_cmpint(ox_optimize(g, &p, &f->checks, t, &res, &d), ==, 0);
  ox_diags_clear(&d);
  ox_pipeline_free(&p);
  if (trace_out)
    *trace_out = t;
  else
    ox_trace_free(t);
  return g;
}

/* The base's rejection of `pass` anchored at `anchor` with reason code `code`. */
static const OxStep *find_rejection(const OxTrace *t, const char *pass, const char *anchor, OxReasonCode code,
                                    const char *arg0) {
  for (uint32_t i = 0; i < t->n_steps; i++) {
    const OxStep *s = &t->steps[i];
    if (s->kind == OX_STEP_REJECTED && !g_strcmp0(s->pass, pass) && (!anchor || !g_strcmp0(s->anchor, anchor)) &&
        s->reason.code == code && (!arg0 || (s->reason.n_args && !strcmp(s->reason.args[0], arg0))))
      return s;
  }
  return NULL;
}

static gboolean has_name(const char *const *names, uint32_t n, const char *x) {
  for (uint32_t i = 0; i < n; i++)
    if (!strcmp(names[i], x)) return TRUE;
  return FALSE;
}

static int run(Fixture *f, const OxWhatifSpec *spec, OxWhatifResult *r, char **err) {
  OxDiagList d;
  ox_diags_init(&d, NULL);
  int rc = ox_whatif_run(f->input, &f->p, &f->checks, f->base, spec, r, &d);
  if (err) {
    GString *s = g_string_new(NULL);
    for (size_t i = 0; i < d.n; i++) g_string_append_printf(s, "%s\n", d.items[i].msg);
    *err = g_string_free(s, FALSE);
  }
  ox_diags_clear(&d);
  return rc;
}

/* batch_linear rejected relu_11's three linears (set of 3 < 5): with min_fuse_set_size=3 the
 * re-run fuses them, and its counts are those of a plain run with the option. */
static void test_option(void) {
  Fixture f;
  fixture_init(&f);
  const OxStep *rej = find_rejection(f.base, "batch_linear", "relu_11", OX_REASON_SET_TOO_SMALL, "3");
  g_assert_nonnull(rej);
  g_assert_cmpuint(rej->n_matched, ==, 3);
  const char *opts[] = {"batch_linear.min_fuse_set_size=3"};
  OxWhatifSpec spec = {.options = opts, .n_options = 1};
  OxWhatifResult r;
  g_assert_cmpint(run(&f, &spec, &r, NULL), ==, 0);
  OxBuf b;
  ox_buf_init(&b);
  ox_whatif_format(&r, &spec, &b);
  g_test_message("%s", b.data);
  g_assert_cmpuint(r.n_newly_applied, >=, 1);
  g_assert_cmpuint(r.base_nodes, ==, f.base_nodes);
  /* the rejected group now fuses */
  uint32_t fired = ox_whatif_fires(&r, rej);
  g_assert_cmpuint(fired, !=, OX_WHATIF_NONE);
  const OxStep *a = &r.trace->steps[fired];
  g_assert_cmpint(a->kind, ==, OX_STEP_APPLIED);
  g_assert_cmpstr(a->pass, ==, "batch_linear");
  for (uint32_t i = 0; i < rej->n_matched; i++) g_assert_true(has_name(a->matched, a->n_matched, rej->matched[i]));
  /* the decision list names it, with the base's rejection beside it */
  gboolean listed = FALSE;
  for (uint32_t i = 0; i < r.n_decisions; i++) {
    const OxWhatifDecision *x = &r.decisions[i];
    if (x->change != OX_WHATIF_NEWLY_APPLIED || x->alt_seq != fired) continue;
    listed = TRUE;
    const OxStep *bs = ox_whatif_base_step(&r, x);
    g_assert_nonnull(bs);
    g_assert_cmpint(bs->reason.code, ==, OX_REASON_SET_TOO_SMALL);
  }
  g_assert_true(listed);
  g_assert_nonnull(strstr(b.data, "+ batch_linear / batch_linear at"));
  /* the same numbers as a plain run with the option */
  OxTrace *pt;
  OxGraph *pg = plain_run(&f, opts[0], &pt);
  g_assert_cmpuint(r.alt_nodes, ==, count_nodes(pg));
  g_assert_cmpuint(r.alt_applied, ==, pt->n_applied);
  g_assert_cmpuint(r.base_applied, ==, f.base->n_applied);
  /* the passes before batch_linear were replayed, not re-run */
  g_assert_cmpuint(r.first_entry, >, 0);
  g_assert_cmpuint(r.alt_from, >, 0);
  g_assert_cmpstr(r.pipeline.entries[r.first_entry].pass->name, ==, "batch_linear");
  ox_trace_free(pt);
  ox_graph_free(pg);
  ox_buf_free(&b);
  ox_whatif_result_free(&r);
  fixture_clear(&f);
}

/* Replaying the unaffected prefix gives what a run from the input gives. */
static void test_full_equals_replayed(void) {
  Fixture f;
  fixture_init(&f);
  const char *opts[] = {"batch_linear.min_fuse_set_size=2", "batch_relu.min_fuse_set_size=2"};
  OxWhatifSpec spec = {.options = opts, .n_options = 2};
  OxWhatifResult a, b;
  g_assert_cmpint(run(&f, &spec, &a, NULL), ==, 0);
  spec.full = true;
  g_assert_cmpint(run(&f, &spec, &b, NULL), ==, 0);
  g_assert_cmpuint(a.alt_from, >, 0);
  g_assert_cmpuint(b.alt_from, ==, 0);
  g_assert_cmpuint(a.alt_nodes, ==, b.alt_nodes);
  g_assert_cmpuint(a.alt_applied, ==, b.alt_applied);
  g_assert_cmpuint(a.n_newly_applied, ==, b.n_newly_applied);
  g_assert_cmpuint(a.n_newly_rejected, ==, b.n_newly_rejected);
  g_assert_cmpuint(a.n_decisions, ==, b.n_decisions);
  for (uint32_t i = 0; i < a.n_decisions; i++) {
    const OxStep *x = ox_whatif_alt_step(&a, &a.decisions[i]), *y = ox_whatif_alt_step(&b, &b.decisions[i]);
    g_assert_cmpint(a.decisions[i].change, ==, b.decisions[i].change);
    g_assert_cmpint(x != NULL, ==, y != NULL);
    if (x) {
      g_assert_cmpstr(x->pass, ==, y->pass);
      g_assert_cmpstr(x->anchor, ==, y->anchor);
    }
  }
  g_test_message("%u newly applied, %u newly rejected, %u -> %u nodes", a.n_newly_applied, a.n_newly_rejected,
                 a.base_nodes, a.alt_nodes);
  ox_whatif_result_free(&a);
  ox_whatif_result_free(&b);
  fixture_clear(&f);
}

/* No change: nothing differs, nothing is re-run. */
static void test_no_change(void) {
  Fixture f;
  fixture_init(&f);
  OxWhatifResult r;
  g_assert_cmpint(run(&f, NULL, &r, NULL), ==, 0);
  g_assert_cmpuint(r.n_decisions, ==, 0);
  g_assert_cmpuint(r.first_entry, ==, f.p.n);
  g_assert_cmpuint(r.alt_from, ==, f.base->n_steps);
  g_assert_cmpuint(r.alt_nodes, ==, r.base_nodes);
  g_assert_cmpuint(r.trace->n_steps, ==, 0);
  ox_whatif_result_free(&r);
  /* and from the input: the same decisions as the base, so again none differ */
  OxWhatifSpec spec = {.full = true};
  g_assert_cmpint(run(&f, &spec, &r, NULL), ==, 0);
  g_assert_cmpuint(r.n_decisions, ==, 0);
  g_assert_cmpuint(r.trace->n_steps, ==, f.base->n_steps);
  g_assert_cmpuint(r.alt_nodes, ==, f.base_nodes);
  ox_whatif_result_free(&r);
  fixture_clear(&f);
}

/* Skipping an applied step: it is refused with a reason, the rest follows. */
static void test_skip(void) {
  Fixture f;
  fixture_init(&f);
  uint32_t seq = UINT32_MAX;
  for (uint32_t i = 0; i < f.base->n_steps && seq == UINT32_MAX; i++)
    if (f.base->steps[i].kind == OX_STEP_APPLIED && !strcmp(f.base->steps[i].pass, "batch_linear")) seq = i;
  g_assert_cmpuint(seq, !=, UINT32_MAX);
  const OxStep *s = &f.base->steps[seq];
  OxWhatifSpec spec = {.skip = &seq, .n_skip = 1};
  OxWhatifResult r;
  g_assert_cmpint(run(&f, &spec, &r, NULL), ==, 0);
  OxBuf b;
  ox_buf_init(&b);
  ox_whatif_format(&r, &spec, &b);
  g_test_message("%s", b.data);
  gboolean found = FALSE;
  for (uint32_t i = 0; i < r.n_decisions; i++) {
    const OxWhatifDecision *x = &r.decisions[i];
    if (x->change != OX_WHATIF_NEWLY_REJECTED || x->base_seq != seq) continue;
    found = TRUE;
    const OxStep *a = ox_whatif_alt_step(&r, x);
    g_assert_nonnull(a);
    g_assert_cmpint(a->kind, ==, OX_STEP_REJECTED);
    g_assert_cmpstr(a->anchor, ==, s->anchor);
    char *why = ox_reason_format(&a->reason);
    g_autofree char *want = g_strdup_printf("skipped by the what-if (step #%u of the base run)", seq + 1);
    g_assert_cmpstr(why, ==, want);
    free(why);
  }
  g_assert_true(found);
  /* the re-run never made that rewrite */
  for (uint32_t i = 0; i < r.trace->n_steps; i++) {
    const OxStep *a = &r.trace->steps[i];
    g_assert_false(a->kind == OX_STEP_APPLIED && !strcmp(a->pass, s->pass) && !g_strcmp0(a->anchor, s->anchor));
  }
  /* from the input: the same */
  spec.full = true;
  OxWhatifResult r2;
  g_assert_cmpint(run(&f, &spec, &r2, NULL), ==, 0);
  g_assert_cmpuint(r2.alt_nodes, ==, r.alt_nodes);
  g_assert_cmpuint(r2.n_newly_rejected, ==, r.n_newly_rejected);
  ox_whatif_result_free(&r2);
  ox_buf_free(&b);
  ox_whatif_result_free(&r);
  fixture_clear(&f);
}

/* Bad changes are located errors that leave nothing behind. */
static void test_errors(void) {
  Fixture f;
  fixture_init(&f);
  OxWhatifResult r;
  char *err = NULL;
  const char *bad[] = {"batch_linear.min_fuse_size=3"};
  OxWhatifSpec spec = {.options = bad, .n_options = 1};
  g_assert_cmpint(run(&f, &spec, &r, &err), ==, -1);
  g_assert_nonnull(strstr(err, "unknown option 'min_fuse_size'"));
  g_assert_null(r.trace);
  g_free(err);
  const char *absent[] = {"batch_linear_post_grad.min_fuse_set_size=3"};
  spec.options = absent;
  g_assert_cmpint(run(&f, &spec, &r, &err), ==, -1);
  g_assert_nonnull(strstr(err, "is not in the pipeline"));
  g_free(err);
  const OxStep *rej = find_rejection(f.base, "batch_linear", NULL, OX_REASON_SET_TOO_SMALL, NULL);
  uint32_t seq = rej->seq;
  OxWhatifSpec skip = {.skip = &seq, .n_skip = 1};
  g_assert_cmpint(run(&f, &skip, &r, &err), ==, -1);
  g_assert_nonnull(strstr(err, "is not an applied step"));
  g_free(err);
  /* a base recorded on another graph */
  OxGraph *other = ox_graph_clone(f.input);
  OxNodeId first = other->head;
  g_assert_true(ox_graph_rename(other, first, "renamed_input"));
  OxDiagList d;
  ox_diags_init(&d, NULL);
  g_assert_cmpint(ox_whatif_run(other, &f.p, &f.checks, f.base, NULL, &r, &d), ==, -1);
  g_assert_nonnull(strstr(d.items[0].msg, "recorded on another graph"));
  ox_diags_clear(&d);
  ox_graph_free(other);
  fixture_clear(&f);
}

/* Without a base, one is recorded: the same answers. */
static void test_no_base(void) {
  Fixture f;
  fixture_init(&f);
  const char *opts[] = {"batch_linear.min_fuse_set_size=3"};
  OxWhatifSpec spec = {.options = opts, .n_options = 1};
  OxWhatifResult a, b;
  g_assert_cmpint(run(&f, &spec, &a, NULL), ==, 0);
  OxDiagList d;
  ox_diags_init(&d, NULL);
  g_assert_cmpint(ox_whatif_run(f.input, &f.p, &f.checks, NULL, &spec, &b, &d), ==, 0);
  ox_diags_clear(&d);
  g_assert_nonnull(b.base_own);
  g_assert_cmpuint(b.base->n_steps, ==, f.base->n_steps);
  g_assert_cmpuint(b.base_nodes, ==, a.base_nodes);
  g_assert_cmpuint(b.alt_nodes, ==, a.alt_nodes);
  g_assert_cmpuint(b.n_decisions, ==, a.n_decisions);
  ox_whatif_result_free(&a);
  ox_whatif_result_free(&b);
  fixture_clear(&f);
}

/* "Why not?" hints: the candidate read from a rejection is checked by a re-run; one that the
 * re-run does not confirm (a set of 1: the batch engine never fuses fewer than 2) is not a
 * hint; a guard no option controls has no candidate. */
static void test_candidates(void) {
  Fixture f;
  fixture_init(&f);
  char c[4][OX_WHATIF_OPTION_MAX];
  const OxStep *three = find_rejection(f.base, "batch_linear", "relu_11", OX_REASON_SET_TOO_SMALL, "3");
  g_assert_cmpuint(ox_whatif_candidates(&f.p, three, c, 4), ==, 1);
  g_assert_cmpstr(c[0], ==, "batch_linear.min_fuse_set_size=3");
  const char *opt[] = {c[0]};
  OxWhatifSpec spec = {.options = opt, .n_options = 1};
  OxWhatifResult r;
  g_assert_cmpint(run(&f, &spec, &r, NULL), ==, 0);
  g_assert_cmpuint(ox_whatif_fires(&r, three), !=, OX_WHATIF_NONE);
  ox_whatif_result_free(&r);
  /* every set-too-small rejection of the example, each candidate checked by a re-run (one per
   * distinct option): some are confirmed, some are not (a set of 1 is never fused alone) */
  GHashTable *runs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GPtrArray *results = g_ptr_array_new();
  guint confirmed = 0, refuted = 0, refuted_one = 0;
  for (uint32_t i = 0; i < f.base->n_steps; i++) {
    const OxStep *s = &f.base->steps[i];
    if (s->kind != OX_STEP_REJECTED || s->reason.code != OX_REASON_SET_TOO_SMALL) continue;
    g_assert_cmpuint(ox_whatif_candidates(&f.p, s, c, 4), ==, 1);
    g_autofree char *want = g_strdup_printf("%s.min_fuse_set_size=%s", s->pass, s->reason.args[0]);
    g_assert_cmpstr(c[0], ==, want);
    OxWhatifResult *rr = g_hash_table_lookup(runs, c[0]);
    if (!rr) {
      rr = g_new(OxWhatifResult, 1);
      const char *o1[] = {c[0]};
      OxWhatifSpec sp = {.options = o1, .n_options = 1};
      g_assert_cmpint(run(&f, &sp, rr, NULL), ==, 0);
      g_hash_table_insert(runs, g_strdup(c[0]), rr);
      g_ptr_array_add(results, rr);
    }
    uint32_t at = ox_whatif_fires(rr, s);
    if (at == OX_WHATIF_NONE) {
      refuted++;
      refuted_one += !strcmp(s->reason.args[0], "1");
      continue;
    }
    confirmed++;
    /* confirmed: the re-run fused every candidate in one applied step of the same pass */
    const OxStep *a = &rr->trace->steps[at];
    g_assert_cmpint(a->kind, ==, OX_STEP_APPLIED);
    g_assert_cmpstr(a->pass, ==, s->pass);
    for (uint32_t j = 0; j < s->n_matched; j++) g_assert_true(has_name(a->matched, a->n_matched, s->matched[j]));
  }
  g_test_message("set-too-small hints: %u confirmed by a re-run, %u not (%u of them sets of 1), %u re-runs", confirmed,
                 refuted, refuted_one, results->len);
  g_assert_cmpuint(confirmed, >, 0);
  g_assert_cmpuint(refuted, >, 0);
  for (guint i = 0; i < results->len; i++) {
    ox_whatif_result_free(results->pdata[i]);
    g_free(results->pdata[i]);
  }
  g_ptr_array_free(results, TRUE);
  g_hash_table_destroy(runs);
  const OxStep *tm = NULL;
  for (uint32_t i = 0; i < f.base->n_steps && !tm; i++)
    if (f.base->steps[i].kind == OX_STEP_REJECTED && f.base->steps[i].reason.code == OX_REASON_TARGET_MISMATCH)
      tm = &f.base->steps[i];
  g_assert_nonnull(tm);
  g_assert_cmpuint(ox_whatif_candidates(&f.p, tm, c, 4), ==, 0);
  /* applied steps have none either */
  for (uint32_t i = 0; i < f.base->n_steps; i++)
    if (f.base->steps[i].kind == OX_STEP_APPLIED) g_assert_cmpuint(ox_whatif_candidates(&f.p, &f.base->steps[i], c, 4), ==, 0);
  fixture_clear(&f);
}

/* A set below threshold_to_cat in a split/cat pass asks for threshold_to_cat, a capped set for
 * a larger max_fuse_set_size, group_linear's size guard for the dim it saw. */
static void test_candidate_kinds(void) {
  OxPipeline p;
  OxGraph *g = ox_graph_new();
  ox_pipeline_default(g, &p);
  OxTrace *t = ox_trace_new();
  OxStep *s = ox_trace_add_step(t, OX_STEP_REJECTED);
  s->pass = ox_trace_intern(t, "split_cat_aten_pass");
  s->reason.code = OX_REASON_SET_TOO_SMALL;
  s->reason.n_args = 2;
  s->reason.args[0] = "4";
  s->reason.args[1] = "10";
  char c[4][OX_WHATIF_OPTION_MAX];
  g_assert_cmpuint(ox_whatif_candidates(&p, s, c, 4), ==, 1);
  g_assert_cmpstr(c[0], ==, "split_cat_aten_pass.threshold_to_cat=4");
  s->pass = ox_trace_intern(t, "batch_tanh");
  s->reason.code = OX_REASON_SET_CAPPED;
  s->reason.args[0] = "300";
  s->reason.args[1] = "12";
  g_assert_cmpuint(ox_whatif_candidates(&p, s, c, 4), ==, 1);
  g_assert_cmpstr(c[0], ==, "batch_tanh.max_fuse_set_size=312");
  s->pass = ox_trace_intern(t, "group_linear");
  s->reason.code = OX_REASON_GUARD_FAILED;
  s->reason.args[0] = "max-size";
  s->reason.args[1] = "mm_3 has a dim of 8192 > max_fuse_tensor_size_group_linear 4096";
  g_assert_cmpuint(ox_whatif_candidates(&p, s, c, 4), ==, 1);
  g_assert_cmpstr(c[0], ==, "group_linear.max_fuse_tensor_size_group_linear=8192");
  s->reason.args[0] = "even-dims";
  g_assert_cmpuint(ox_whatif_candidates(&p, s, c, 4), ==, 0);
  ox_trace_free(t);
  ox_pipeline_free(&p);
  ox_graph_free(g);
}

/* Bounded text never cuts a word or a name: it ends at a boundary with "…". */
static void test_clip(void) {
  char buf[32];
  g_assert_cmpuint(ox_text_clip(buf, sizeof buf, "short", 5), ==, 5);
  g_assert_cmpstr(buf, ==, "short");
  const char *s = "function_mismatch: linear0.weight is a parameter, pattern wants getitem(...)";
  ox_text_clip(buf, sizeof buf, s, strlen(s));
  g_assert_cmpstr(buf, ==, "function_mismatch: …");
  char big[60];
  ox_text_clip(big, sizeof big, s, strlen(s));
  g_assert_cmpstr(big, ==, "function_mismatch: linear0.weight is a parameter, …");
  const char *list = "[%p_layers_1_towers_0_norm_bias, %p_layers_1_towers_2_norm_bias, %p_layers_1_towers_5]";
  ox_text_clip(big, sizeof big, list, strlen(list));
  g_assert_cmpstr(big, ==, "[%p_layers_1_towers_0_norm_bias, …");
  /* one word longer than the slot: cut, but between UTF-8 characters */
  const char *word = "ééééééééééééééééééééééééééééééé";
  ox_text_clip(buf, 12, word, strlen(word));
  g_assert_true(g_utf8_validate(buf, -1, NULL));
  g_assert_true(g_str_has_suffix(buf, "…"));
  /* tiny slots */
  ox_text_clip(buf, 3, "abcdef", 6);
  g_assert_cmpstr(buf, ==, "ab");
  /* a value list is cut between items and keeps its bracket */
  OxGraph *g = ox_graph_new();
  OxValue items[12];
  for (int i = 0; i < 12; i++) {
    char name[40];
    g_snprintf(name, sizeof name, "layers_0_towers_%d_linear0_weight", i);
    items[i] = ox_value_node(ox_graph_add_node(g, OX_OP_PLACEHOLDER, name, name, ox_value_none(), ox_value_none()));
  }
  OxValue v = ox_graph_value_seq(g, OX_V_LIST, items, 12);
  char vb[96];
  ox_value_format(g, &v, vb, sizeof vb);
  g_test_message("%s", vb);
  g_assert_true(g_str_has_suffix(vb, ", …]"));
  g_assert_true(g_str_has_prefix(vb, "[%layers_0_towers_0_linear0_weight, %layers_0_towers_1_linear0_weight"));
  ox_graph_free(g);
}

/* No reason the example's run records is cut inside a word. */
static void test_reasons_whole_words(void) {
  Fixture f;
  fixture_init(&f);
  uint32_t clipped = 0;
  for (uint32_t i = 0; i < f.base->n_steps; i++) {
    const OxReason *r = &f.base->steps[i].reason;
    for (uint32_t k = 0; k < r->n_args; k++) {
      const char *a = r->args[k];
      size_t n = strlen(a);
      if (n && strchr(")]}", a[n - 1])) n--; /* a value list keeps its closer: "[%a, %b, …]" */
      if (n < 4 || strncmp(a + n - 3, "…", 3) != 0) {
        g_assert_false(g_str_has_suffix(a, "...") && n > 90); /* the old mid-name "..." */
        continue;
      }
      clipped++;
      char before = a[n - 4];
      g_assert_true(before == ' ' || before == ',' || before == ';');
    }
  }
  g_test_message("%u reason arguments clipped at a boundary", clipped);
  g_assert_cmpuint(clipped, >, 0);
  fixture_clear(&f);
}

/* compare-runs' engine (ox_compare.h): a run against itself aligns every record; against a run
 * with min_fuse_set_size 7, batch_linear's two fusions are aligned with their rejections, and
 * swapping the runs swaps only-in-A and only-in-B. */
static void test_compare_runs(void) {
  Fixture f;
  fixture_init(&f);
  OxCompareResult r;
  ox_compare_traces(f.base, f.base, &r);
  g_assert_cmpuint(r.n, ==, 0);
  g_assert_cmpuint(r.n_same, ==, f.base->n_steps);
  for (uint32_t i = 0; i < f.base->n_steps; i++) { /* a run aligns with itself record by record */
    g_assert_cmpuint(r.a_to_b[i], ==, i);
    g_assert_cmpuint(r.b_to_a[i], ==, i);
  }
  ox_compare_result_free(&r);
  OxTrace *t7 = NULL;
  OxGraph *g7 = plain_run(&f, "batch_linear.min_fuse_set_size=7", &t7);
  ox_compare_traces(f.base, t7, &r);
  g_assert_cmpuint(r.n, ==, r.n_only_a + r.n_only_b + r.n_differs);
  g_assert_cmpuint(r.n_same + r.n_differs + r.n_only_a, ==, f.base->n_steps);
  g_assert_cmpuint(r.n_same + r.n_differs + r.n_only_b, ==, t7->n_steps);
  uint32_t linear = 0;
  for (uint32_t i = 0; i < r.n; i++) {
    const OxCompareEntry *e = &r.entries[i];
    if (e->kind != OX_COMPARE_DIFFERS) continue;
    const OxStep *a = &f.base->steps[e->a_seq], *b = &t7->steps[e->b_seq];
    g_assert_cmpstr(a->pass, ==, b->pass);
    /* an anchor that is a node of the input has its name in both runs; a node a rewrite made
     * may be named otherwise (stack_6 and stack), aligned by its canonical name */
    if (ox_graph_find(f.input, a->anchor)) g_assert_cmpstr(a->anchor, ==, b->anchor);
    if (strcmp(a->pass, "batch_linear") != 0) continue;
    linear++;
    g_assert_cmpint(a->kind, ==, OX_STEP_APPLIED);
    g_assert_cmpint(b->kind, ==, OX_STEP_REJECTED);
    g_assert_cmpint(b->reason.code, ==, OX_REASON_SET_TOO_SMALL);
  }
  g_assert_cmpuint(linear, ==, 2);
  /* the alignment maps: inverse of each other, NONE exactly for the records only in one run,
   * the differing pairs aligned, every aligned pair of the same pass */
  uint32_t aligned = 0;
  for (uint32_t i = 0; i < f.base->n_steps; i++) {
    uint32_t j = r.a_to_b[i];
    if (j == OX_COMPARE_NONE) continue;
    aligned++;
    g_assert_cmpuint(j, <, t7->n_steps);
    g_assert_cmpuint(r.b_to_a[j], ==, i);
    g_assert_cmpstr(f.base->steps[i].pass, ==, t7->steps[j].pass);
  }
  g_assert_cmpuint(aligned, ==, r.n_same + r.n_differs);
  for (uint32_t i = 0; i < r.n; i++) {
    const OxCompareEntry *e = &r.entries[i];
    if (e->kind == OX_COMPARE_ONLY_A) g_assert_cmpuint(r.a_to_b[e->a_seq], ==, OX_COMPARE_NONE);
    if (e->kind == OX_COMPARE_ONLY_B) g_assert_cmpuint(r.b_to_a[e->b_seq], ==, OX_COMPARE_NONE);
    if (e->kind == OX_COMPARE_DIFFERS) g_assert_cmpuint(r.a_to_b[e->a_seq], ==, e->b_seq);
  }
  /* entries: A's (only in A, differing) in A's order, then only in B in B's order */
  for (uint32_t i = 1; i < r.n; i++) {
    const OxCompareEntry *p = &r.entries[i - 1], *e = &r.entries[i];
    if (p->kind != OX_COMPARE_ONLY_B && e->kind != OX_COMPARE_ONLY_B) g_assert_cmpuint(p->a_seq, <, e->a_seq);
    if (p->kind == OX_COMPARE_ONLY_B) g_assert_cmpint(e->kind, ==, OX_COMPARE_ONLY_B);
    if (p->kind == OX_COMPARE_ONLY_B) g_assert_cmpuint(p->b_seq, <, e->b_seq);
  }
  OxCompareResult back;
  ox_compare_traces(t7, f.base, &back);
  g_assert_cmpuint(back.n_only_a, ==, r.n_only_b);
  g_assert_cmpuint(back.n_only_b, ==, r.n_only_a);
  g_assert_cmpuint(back.n_differs, ==, r.n_differs);
  g_assert_cmpuint(back.n_same, ==, r.n_same);
  ox_compare_result_free(&back);
  ox_compare_result_free(&r);
  ox_trace_free(t7);
  ox_graph_free(g7);
  fixture_clear(&f);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/whatif/option", test_option);
  g_test_add_func("/engine/whatif/full-equals-replayed", test_full_equals_replayed);
  g_test_add_func("/engine/whatif/no-change", test_no_change);
  g_test_add_func("/engine/whatif/skip", test_skip);
  g_test_add_func("/engine/whatif/errors", test_errors);
  g_test_add_func("/engine/whatif/no-base", test_no_base);
  g_test_add_func("/engine/whatif/candidates", test_candidates);
  g_test_add_func("/engine/whatif/candidate-kinds", test_candidate_kinds);
  g_test_add_func("/engine/whatif/text-clip", test_clip);
  g_test_add_func("/engine/whatif/reasons-whole-words", test_reasons_whole_words);
  g_test_add_func("/engine/compare-runs/align", test_compare_runs);
  return g_test_run();
}
