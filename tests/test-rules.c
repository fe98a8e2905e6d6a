/* test-rules.c - rule files (engine/rules/, docs/rules.md).
 *
 *  - Dogfood: the built-in split/cat passes and two batch rules written as rules
 *    (data/rules/builtin-*.rules) against their C versions on hand-made graphs, the
 *    property-test generator's graphs and the real corpus (skipped when absent): the applied
 *    steps (pass, rule, anchor, matched, removed, added, provenance, edit script, check
 *    statuses), the rejected attempts (pass, rule, anchor, candidates; not their wording) and
 *    the counters must be identical. The batch rows must equal the built-in rows.
 *  - Examples: every rule file of data/rules/ fires on its test graph with the expected trace
 *    (golden, tests/data/rules/NAME.expected; OPTIMUS_UPDATE_GOLDEN=1 rewrites them), every
 *    applied step passes the numeric check (passed, not skipped), the whole graph computes the
 *    same values before and after, and on its negative control it applies nothing and says
 *    why (golden too).
 *  - Errors: located messages for bad tokens, unknown ops, unknown captures, type errors in
 *    guards, duplicate names ...; a file with an error loads nothing.
 *  - The CLI: optimize --rules (repeatable), explain --rules, a bad rule file.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "ir/ox_buf.h"
#include "load/ox_load.h"
#include "ops/ox_interp.h"
#include "ops/ox_shape.h"
#include "passes/ox_batch.h"
#include "passes/ox_pass.h"
#include "rules/ox_rules.h"
#include "write/ox_write.h"

#include "gen-graphs.h"

/* ------------------------------------------------------------------ paths and loading */

static char *src_path(const char *rel) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  return g_build_filename(root && *root ? root : "..", rel, NULL);
}

static char *corpus_dir(void) {
  const char *shared = g_getenv("OPTIMUS_SHARED");
  char *base = shared && *shared ? g_strdup(shared) : src_path("../shared");
  char *dir = g_build_filename(base, "corpus", "fx-real", NULL);
  g_free(base);
  return dir;
}

static OxRuleSet *load_rules(const char *rel) {
  char *path = src_path(rel);
  OxDiagList d;
  ox_diags_init(&d, path);
  OxRuleSet *rs = NULL;
  int rc = ox_rules_load(path, &rs, &d);
  if (rc != 0) {
    ox_diags_print(&d, stderr);
    g_error("%s does not load", path);
  }
  ox_diags_clear(&d);
  g_free(path);
  return rs;
}

/* the first graph of a dump, with meta inferred */
static OxGraph *load_graph(const char *rel) {
  char *path = src_path(rel);
  OxDiagList d;
  ox_diags_init(&d, path);
  OxDoc *doc = NULL;
  if (ox_load_file(path, OX_FMT_UNKNOWN, NULL, &doc, &d) != 0) {
    ox_diags_print(&d, stderr);
    g_error("%s does not load", path);
  }
  OxGraph *g = ox_graph_clone(doc->graphs[0]);
  ox_doc_free(doc);
  ox_diags_clear(&d);
  ox_shape_infer_graph(g, NULL, NULL);
  g_free(path);
  return g;
}

static const OxPassInfo *rule_pass(const OxRuleSet *rs, const char *name) {
  for (uint32_t i = 0; i < ox_rules_pass_count(rs); i++)
    if (strcmp(ox_rules_pass(rs, i)->name, name) == 0) return ox_rules_pass(rs, i);
  return NULL;
}

static void pipeline_add(OxPipeline *p, const OxPassInfo *pass, const OxPassOptions *opt) {
  p->entries = g_realloc(p->entries, (p->n + 1) * sizeof *p->entries);
  p->entries[p->n].pass = pass;
  if (opt)
    p->entries[p->n].opt = *opt;
  else
    ox_pass_options_default(&p->entries[p->n].opt);
  p->n++;
}

/* ------------------------------------------------------------------ traces as text */

enum { T_EDITS = 1, T_REJECTED = 2, T_LOC = 4, T_REASON = 8 };

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

static void put_names(GString *s, const char *what, const char **names, uint32_t n) {
  if (!n) return;
  g_string_append_printf(s, "  %s:", what);
  for (uint32_t i = 0; i < n; i++)
    g_string_append_printf(s, " %s", names[i]);
  g_string_append_c(s, '\n');
}

static void put_value(GString *s, const OxTrace *t, const OxValue *v) {
  char buf[4096];
  g_string_append(s, ox_value_format(t->pool, v, buf, sizeof buf));
}

static void put_edits(GString *s, const OxTrace *t, const OxStep *st) {
  static const char *const kinds[] = {"add", "erase", "args", "move", "meta", "rename", "replace_input"};
  for (uint32_t i = 0; i < st->n_edits; i++) {
    const OxTraceEdit *e = &st->edits[i];
    char meta[256] = "";
    if (e->has_meta) ox_meta_format(&e->data->meta, meta, sizeof meta); /* dtype and shape only */
    if (e->kind == OX_TEDIT_MOVE && !e->name) {
      g_string_append(s, "    toposort\n");
      continue;
    }
    g_string_append_printf(s, "    %s %s", kinds[e->kind], e->name ? e->name : "-");
    if (e->kind == OX_TEDIT_ADD || e->kind == OX_TEDIT_MOVE)
      g_string_append_printf(s, " after %s", e->after ? e->after : "-");
    if (e->kind == OX_TEDIT_RENAME) g_string_append_printf(s, " to %s", e->new_name);
    if (e->kind == OX_TEDIT_REPLACE) g_string_append_printf(s, " %s -> %s", e->from, e->to);
    if (e->kind == OX_TEDIT_ADD) g_string_append_printf(s, " %s %s", ox_op_name((OxOp)e->op), e->target);
    if (e->kind == OX_TEDIT_ADD || e->kind == OX_TEDIT_ARGS) {
      g_string_append_c(s, ' ');
      put_value(s, t, &e->data->args);
      g_string_append_c(s, ' ');
      put_value(s, t, &e->data->kwargs);
    }
    if (e->has_meta) g_string_append_printf(s, " meta %s", meta);
    g_string_append_c(s, '\n');
  }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void trace_text(const OxTrace *t, unsigned flags, GString *s) {
  static const char *const kinds[] = {"applied", "rejected", "check_failed"};
  for (uint32_t i = 0; i < t->n_steps; i++) {
    const OxStep *st = &t->steps[i];
    if (st->kind == OX_STEP_REJECTED && !(flags & T_REJECTED)) continue;
    g_string_append_printf(s, "%s %s/%s", kinds[st->kind], st->pass ? st->pass : "?",
                           st->rule ? st->rule : "?");
    if ((flags & T_LOC) && st->rule_file)
      g_string_append_printf(s, " @%s:%u", base_name(st->rule_file), st->rule_line);
    g_string_append_printf(s, " anchor=%s\n", st->anchor ? st->anchor : "-");
    if (st->kind != OX_STEP_APPLIED && (flags & T_REASON)) {
      char *why = ox_reason_format(&st->reason);
      g_string_append_printf(s, "  why: %s\n", why);
      free(why);
    }
    put_names(s, st->kind == OX_STEP_APPLIED ? "matched" : "candidates", st->matched, st->n_matched);
    put_names(s, "removed", st->removed, st->n_removed);
    put_names(s, "added", st->added, st->n_added);
    if (st->kind == OX_STEP_REJECTED) continue;
    if (st->n_prov) {
      g_string_append(s, "  provenance:");
      for (uint32_t k = 0; k < st->n_prov; k++)
        g_string_append_printf(s, " %s->%s", st->prov_old[k], st->prov_new[k]);
      g_string_append_c(s, '\n');
    }
    if (st->n_scaffold) put_names(s, "scaffolding (from every matched node)", st->scaffold, st->n_scaffold);
    g_string_append_printf(s, "  checks: structure=%s shape=%s numeric=%s\n",
                           ox_check_status_name((OxCheckStatus)st->checks[OX_CHECK_STRUCTURE].status),
                           ox_check_status_name((OxCheckStatus)st->checks[OX_CHECK_SHAPE].status),
                           ox_check_status_name((OxCheckStatus)st->checks[OX_CHECK_NUMERIC].status));
    if (flags & T_EDITS) put_edits(s, t, st);
  }
  g_string_append(s, "counters:");
  /* counters in name order: the two runs may meet them in another order */
  const char **names = g_new0(const char *, t->n_counters + 1);
  for (uint32_t i = 0; i < t->n_counters; i++)
    names[i] = t->counter_names[i];
  qsort(names, t->n_counters, sizeof *names, cmp_str);
  for (uint32_t i = 0; i < t->n_counters; i++)
    for (uint32_t k = 0; k < t->n_counters; k++)
      if (t->counter_names[k] == names[i])
        g_string_append_printf(s, " %s=%lld", names[i], (long long)t->counter_values[k]);
  g_free(names);
  g_string_append_c(s, '\n');
}

/* The first line where a and b differ, for messages. */
static char *first_diff(const char *a, const char *b) {
  gchar **la = g_strsplit(a, "\n", -1), **lb = g_strsplit(b, "\n", -1);
  char *r = NULL;
  for (guint i = 0;; i++) {
    if (!la[i] || !lb[i] || strcmp(la[i], lb[i]) != 0) {
      r = g_strdup_printf("line %u:\n  C:     %s\n  rules: %s", i + 1, la[i] ? la[i] : "<end>",
                          lb[i] ? lb[i] : "<end>");
      break;
    }
  }
  g_strfreev(la);
  g_strfreev(lb);
  return r;
}

static uint32_t count_applied(const OxTrace *t, const char *pass) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < t->n_steps; i++)
    if (t->steps[i].kind == OX_STEP_APPLIED && (!pass || strcmp(t->steps[i].pass, pass) == 0)) n++;
  return n;
}

/* ------------------------------------------------------------------ dogfood */

static const char *const dogfood_passes[] = {"normalization_pass", "remove_split_with_size_one_pass",
                                             "merge_splits_pass",  "mutate_cat_pass",
                                             "batch_tanh",         "batch_aten_mul"};
enum { N_DOGFOOD = sizeof dogfood_passes / sizeof dogfood_passes[0] };

typedef struct Dogfood {
  OxRuleSet *splitcat, *batch;
  OxPipeline c, rules;
  uint32_t applied[N_DOGFOOD];
  uint32_t graphs, rejected_c, rejected_rules;
} Dogfood;

static void dogfood_init(Dogfood *df) {
  memset(df, 0, sizeof *df);
  df->splitcat = load_rules("data/rules/builtin-splitcat.rules");
  df->batch = load_rules("data/rules/builtin-batch.rules");
  for (size_t i = 0; i < N_DOGFOOD; i++) {
    const OxPassInfo *c = ox_pass_find(dogfood_passes[i]);
    const OxPassInfo *r = rule_pass(df->splitcat, dogfood_passes[i]);
    if (!r) r = rule_pass(df->batch, dogfood_passes[i]);
    g_assert_nonnull(c);
    g_assert_nonnull(r);
    g_assert_true(ox_rules_of_pass(r) != NULL);
    g_assert_null(ox_rules_of_pass(c));
    pipeline_add(&df->c, c, NULL);
    pipeline_add(&df->rules, r, NULL);
  }
}

static void dogfood_fini(Dogfood *df) {
  ox_pipeline_free(&df->c);
  ox_pipeline_free(&df->rules);
  ox_rules_free(df->splitcat);
  ox_rules_free(df->batch);
}

/* Runs both pipelines on copies of g; NULL when the traces agree, else a message. */
static char *dogfood_compare(Dogfood *df, const OxGraph *g, const OxCheckConfig *checks) {
  OxGraph *a = ox_graph_clone(g), *b = ox_graph_clone(g);
  OxTrace *ta = ox_trace_new(), *tb = ox_trace_new();
  OxDiagList d;
  ox_diags_init(&d, "dogfood");
  OxOptimizeResult ra, rb;
  char *fail = NULL;
  int rca = ox_optimize(a, &df->c, checks, ta, &ra, &d);
  int rcb = ox_optimize(b, &df->rules, checks, tb, &rb, &d);
  if (rca != rcb) fail = g_strdup_printf("optimize returned %d (C) and %d (rules)", rca, rcb);
  GString *sa = g_string_new(NULL), *sb = g_string_new(NULL);
  /* rejections too (anchor, rule, candidates); their reasons are worded by each side */
  unsigned fl = g_getenv("OPTIMUS_RULES_REASONS") ? T_EDITS | T_REJECTED | T_REASON : T_EDITS | T_REJECTED;
  trace_text(ta, fl, sa);
  trace_text(tb, fl, sb);
  if (!fail && strcmp(sa->str, sb->str) != 0) fail = first_diff(sa->str, sb->str);
  if (!fail && ox_graph_structure_hash(a) != ox_graph_structure_hash(b))
    fail = g_strdup("the optimized graphs differ");
  for (size_t i = 0; i < N_DOGFOOD; i++)
    df->applied[i] += count_applied(ta, dogfood_passes[i]);
  df->graphs++;
  df->rejected_c += ta->n_rejected;
  df->rejected_rules += tb->n_rejected;
  g_string_free(sa, TRUE);
  g_string_free(sb, TRUE);
  ox_trace_free(ta);
  ox_trace_free(tb);
  ox_graph_free(a);
  ox_graph_free(b);
  ox_diags_clear(&d);
  return fail;
}

static void dogfood_report(const Dogfood *df, const char *where) {
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "%s: %u graphs identical; applied steps:", where, df->graphs);
  for (size_t i = 0; i < N_DOGFOOD; i++)
    g_string_append_printf(s, " %s=%u", dogfood_passes[i], df->applied[i]);
  g_string_append_printf(s, "; rejections recorded: C %u, rules %u", df->rejected_c, df->rejected_rules);
  g_test_message("%s", s->str);
  g_string_free(s, TRUE);
}

static void test_dogfood_handmade(void) {
  Dogfood df;
  dogfood_init(&df);
  OxCheckConfig checks;
  ox_check_config_default(&checks);
  const char *graphs[] = {"tests/data/rules/dogfood-splitcat.txt", "tests/data/rules/dogfood-batch.txt",
                          "tests/data/rules/dogfood-batch-post.txt"};
  for (size_t i = 0; i < G_N_ELEMENTS(graphs); i++) {
    OxGraph *g = load_graph(graphs[i]);
    char *fail = dogfood_compare(&df, g, &checks);
    if (fail) g_test_fail_printf("%s: the C passes and their rules differ at %s", graphs[i], fail);
    g_free(fail);
    ox_graph_free(g);
  }
  dogfood_report(&df, "hand-made graphs");
  /* every dogfood pass fired somewhere, so the comparison is not vacuous */
  for (size_t i = 0; i < N_DOGFOOD; i++)
    if (!df.applied[i]) g_test_fail_printf("%s never fired on the hand-made graphs", dogfood_passes[i]);
  dogfood_fini(&df);
}

static void test_dogfood_property(void) {
  Dogfood df;
  dogfood_init(&df);
  OxCheckConfig checks;
  ox_check_config_default(&checks);
  const char *env = g_getenv("OPTIMUS_RULES_GRAPHS");
  uint32_t n = env ? (uint32_t)atoi(env) : 300, failures = 0;
  for (uint64_t seed = 1; seed <= n; seed++) {
    bool post;
    OxGraph *g = gen_graph(seed, &post);
    g_assert_nonnull(g);
    char *fail = dogfood_compare(&df, g, &checks);
    if (fail) {
      if (!failures)
        g_test_fail_printf("property graph seed %" G_GUINT64_FORMAT ": C and rules differ at %s", seed, fail);
      failures++;
    }
    g_free(fail);
    ox_graph_free(g);
  }
  dogfood_report(&df, "property graphs");
  if (failures) g_test_message("%u of %u property graphs differ", failures, n);
  for (size_t i = 0; i < 4; i++) /* the split/cat passes fire on generated graphs too */
    if (!df.applied[i]) g_test_fail_printf("%s never fired on the property graphs", dogfood_passes[i]);
  dogfood_fini(&df);
}

static void test_dogfood_corpus(void) {
  char *dir = corpus_dir();
  GDir *gd = g_dir_open(dir, 0, NULL);
  if (!gd) {
    char *msg = g_strdup_printf("corpus not found: no %s (set OPTIMUS_SHARED)", dir);
    g_test_skip(msg);
    g_free(msg);
    g_free(dir);
    return;
  }
  GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
  for (const char *f; (f = g_dir_read_name(gd));)
    if (g_str_has_suffix(f, ".txt")) g_ptr_array_add(files, g_strdup(f));
  g_dir_close(gd);
  qsort(files->pdata, files->len, sizeof(char *), cmp_str);
  Dogfood df;
  dogfood_init(&df);
  OxCheckConfig checks;
  ox_check_config_default(&checks);
  for (guint i = 0; i < files->len; i++) {
    char *path = g_build_filename(dir, files->pdata[i], NULL);
    OxDiagList d;
    ox_diags_init(&d, path);
    OxDoc *doc = NULL;
    if (ox_load_file(path, OX_FMT_UNKNOWN, NULL, &doc, &d) == 0) {
      for (uint32_t k = 0; k < doc->n_graphs; k++) {
        OxGraph *g = ox_graph_clone(doc->graphs[k]);
        ox_shape_infer_graph(g, NULL, NULL);
        char *fail = dogfood_compare(&df, g, &checks);
        if (fail)
          g_test_fail_printf("%s graph %u: C and rules differ at %s", (char *)files->pdata[i], k + 1, fail);
        g_free(fail);
        ox_graph_free(g);
      }
    }
    ox_doc_free(doc);
    ox_diags_clear(&d);
    g_free(path);
  }
  dogfood_report(&df, "corpus");
  g_assert_cmpuint(df.graphs, >=, files->len);
  dogfood_fini(&df);
  g_ptr_array_free(files, TRUE);
  g_free(dir);
}

/* the batch blocks compile to the built-in rows */
static void test_dogfood_batch_rows(void) {
  OxRuleSet *rs = load_rules("data/rules/builtin-batch.rules");
  const char *names[] = {"batch_tanh", "batch_aten_mul"};
  for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
    const OxBatchRule *want = ox_batch_rule_find(names[i]);
    const OxPassInfo *pi = rule_pass(rs, names[i]);
    g_assert_nonnull(want);
    g_assert_nonnull(pi);
    g_assert_cmpint(pi->engine, ==, OX_ENGINE_BATCH);
    g_assert_cmpint(pi->phase, ==, want->phase);
    const OxBatchRule *got = NULL;
    for (uint32_t k = 0; k < ox_rules_pass_count(rs); k++)
      if (ox_rules_pass(rs, k) == pi) got = ox_rules_pass_batch(rs, k);
    g_assert_nonnull(got);
    g_assert_cmpstr(got->name, ==, want->name);
    g_assert_cmpint(got->phase, ==, want->phase);
    g_assert_cmpint(got->op, ==, want->op);
    g_assert_cmpint(got->op2, ==, want->op2);
    g_assert_cmpuint(got->levels, ==, want->levels);
    g_assert_cmpint(got->tmpl, ==, want->tmpl);
    g_assert_cmpuint(got->n_tensors, ==, want->n_tensors);
    g_assert_cmpuint(got->key, ==, want->key);
    g_assert_cmpuint(got->guards, ==, want->guards);
    g_assert_cmpstr(got->emit, ==, want->emit);
    for (int e = 0; e < OX_BATCH_MAX_EXTRAS; e++)
      g_assert_cmpstr(got->extras[e], ==, want->extras[e]);
    /* run the rule pass on an empty graph: nothing happens, and it must not crash */
    OxGraph *g = ox_graph_new();
    OxPipeline p = {0};
    pipeline_add(&p, pi, NULL);
    OxCheckConfig checks;
    ox_check_config_default(&checks);
    OxOptimizeResult res;
    OxDiagList d;
    ox_diags_init(&d, "empty");
    g_assert_cmpint(ox_optimize(g, &p, &checks, NULL, &res, &d), ==, 0);
    ox_diags_clear(&d);
    ox_pipeline_free(&p);
    ox_graph_free(g);
  }
  ox_rules_free(rs);
}

/* ------------------------------------------------------------------ example rules */

typedef struct Example {
  const char *name;     /* data/rules/NAME.rules, tests/data/rules/NAME.txt, NAME-negative.txt */
  uint32_t min_applied; /* on the positive graph */
} Example;

static const Example examples[] = {
    {"batch-gelu", 1}, {"transpose", 3}, {"view", 2}, {"cat", 1}, {"recsys-pooling", 2}, {"swish", 2},
};

/* the outputs of a graph in the interpreter */
static OxInterp *run_graph(const OxGraph *g, uint64_t seed) {
  OxInterp *in = ox_interp_new(g, seed);
  char err[512];
  if (ox_interp_run(in, NULL, 0, err, sizeof err) != 0) g_error("graph does not run: %s", err);
  return in;
}

/* NULL when a and b compute the same outputs on the same seeded inputs, else why not */
static char *same_outputs(const OxGraph *a, const OxGraph *b) {
  char *fail = NULL;
  for (uint64_t seed = 1; seed <= 2 && !fail; seed++) {
    OxInterp *ia = run_graph(a, seed), *ib = run_graph(b, seed);
    const OxRtValue *va = ox_interp_value(ia, ox_graph_output(a)),
                    *vb = ox_interp_value(ib, ox_graph_output(b));
    if (!va || !vb || va->kind != OX_RT_TUPLE || vb->kind != OX_RT_TUPLE || va->n != vb->n) {
      fail = g_strdup("the outputs differ in structure");
    } else {
      for (uint32_t i = 0; i < va->n && !fail; i++) {
        OxCompare cmp;
        if (va->u.items[i]->kind != OX_RT_TENSOR || vb->u.items[i]->kind != OX_RT_TENSOR ||
            !ox_tensor_compare(vb->u.items[i]->u.t, va->u.items[i]->u.t, NULL, &cmp))
          fail = g_strdup_printf("output %u differs", i);
      }
    }
    ox_interp_free(ia);
    ox_interp_free(ib);
  }
  return fail;
}

static OxTrace *run_rules(const OxRuleSet *rs, OxGraph *g) {
  OxPipeline p = {0};
  ox_rules_append(rs, &p);
  g_assert_cmpuint(p.n, ==, ox_rules_pass_count(rs));
  OxCheckConfig checks;
  ox_check_config_default(&checks);
  OxTrace *t = ox_trace_new();
  OxOptimizeResult res;
  OxDiagList d;
  ox_diags_init(&d, "rules");
  g_assert_cmpint(ox_optimize(g, &p, &checks, t, &res, &d), ==, 0);
  g_assert_cmpuint(res.check_failures, ==, 0);
  ox_diags_clear(&d);
  ox_pipeline_free(&p);
  return t;
}

static void check_golden(const char *rel, const char *text) {
  char *path = src_path(rel);
  if (g_getenv("OPTIMUS_UPDATE_GOLDEN")) {
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    g_test_message("wrote %s", path);
  }
  char *want = NULL;
  if (!g_file_get_contents(path, &want, NULL, NULL)) {
    g_test_fail_printf("missing golden %s (run with OPTIMUS_UPDATE_GOLDEN=1):\n%s", path, text);
  } else if (strcmp(want, text) != 0) {
    char *diff = first_diff(want, text);
    g_test_fail_printf("%s differs (expected, then got) at %s", path, diff);
    g_free(diff);
  }
  g_free(want);
  g_free(path);
}

static void test_example(gconstpointer data) {
  const Example *ex = data;
  char *rules_rel = g_strdup_printf("data/rules/%s.rules", ex->name);
  char *pos_rel = g_strdup_printf("tests/data/rules/%s.txt", ex->name);
  char *neg_rel = g_strdup_printf("tests/data/rules/%s-negative.txt", ex->name);
  OxRuleSet *rs = load_rules(rules_rel);
  /* fires where it should */
  OxGraph *orig = load_graph(pos_rel), *g = ox_graph_clone(orig);
  OxTrace *t = run_rules(rs, g);
  GString *s = g_string_new(NULL);
  trace_text(t, T_REJECTED | T_LOC | T_REASON, s);
  char *golden = g_strdup_printf("tests/data/rules/%s.expected", ex->name);
  check_golden(golden, s->str);
  g_assert_cmpuint(count_applied(t, NULL), >=, ex->min_applied);
  OxDiagList d;
  ox_diags_init(&d, "verify");
  g_assert_cmpint(ox_graph_verify(g, true, &d), ==, 0);
  ox_diags_clear(&d);
  char *fail = same_outputs(orig, g);
  if (fail) g_test_fail_printf("%s: the optimized graph computes other values: %s", pos_rel, fail);
  g_free(fail);
  /* every applied step is numerically checked: by the per-step check, or (a step that only
     re-points users at an existing node, which the step protocol does not pair as a
     replacement: "the step replaced no value") by the whole graph before and after it */
  for (uint32_t i = 0; i < t->n_steps; i++) {
    const OxStep *st = &t->steps[i];
    if (st->kind != OX_STEP_APPLIED) continue;
    g_assert_nonnull(st->rule_file);
    g_assert_cmpuint(st->rule_line, >, 0);
    const OxCheckResult *num = &st->checks[OX_CHECK_NUMERIC];
    if (num->status == OX_CHECK_PASSED) continue;
    if (num->status != OX_CHECK_SKIPPED || strcmp(num->detail, "the step replaced no value") != 0) {
      g_test_fail_printf("%s step %u (%s): numeric check %s: %s", pos_rel, i, st->rule,
                         ox_check_status_name((OxCheckStatus)num->status), num->detail ? num->detail : "");
      continue;
    }
    g_assert_cmpuint(st->n_added, ==, 0);
    OxGraph *before = ox_graph_clone(orig), *after = ox_graph_clone(orig);
    ox_diags_init(&d, "replay");
    g_assert_cmpint(ox_replay(before, t, st->applied_index - 1, &d), ==, 0);
    g_assert_cmpint(ox_replay(after, t, st->applied_index, &d), ==, 0);
    ox_diags_clear(&d);
    fail = same_outputs(before, after);
    if (fail) g_test_fail_printf("%s step %u (%s) changes the values: %s", pos_rel, i, st->rule, fail);
    g_free(fail);
    ox_graph_free(before);
    ox_graph_free(after);
  }
  ox_trace_free(t);
  ox_graph_free(g);
  ox_graph_free(orig);
  g_free(golden);
  /* and not where it should not, saying why */
  g = load_graph(neg_rel);
  t = run_rules(rs, g);
  g_string_truncate(s, 0);
  trace_text(t, T_REJECTED | T_LOC | T_REASON, s);
  golden = g_strdup_printf("tests/data/rules/%s-negative.expected", ex->name);
  check_golden(golden, s->str);
  g_assert_cmpuint(count_applied(t, NULL), ==, 0);
  g_assert_cmpuint(t->n_rejected, >, 0);
  for (uint32_t i = 0; i < t->n_steps; i++) { /* every rejection points into the rule file */
    g_assert_nonnull(t->steps[i].rule_file);
    g_assert_cmpuint(t->steps[i].rule_line, >, 0);
  }
  ox_trace_free(t);
  ox_graph_free(g);
  g_free(golden);
  g_string_free(s, TRUE);
  ox_rules_free(rs);
  g_free(rules_rel);
  g_free(pos_rel);
  g_free(neg_rel);
}

/* ------------------------------------------------------------------ errors */

/* Loads text; asserts it fails, loads nothing, and reports `want` ("LINE:COL: message
 * start") among its errors. Returns the number of errors. */
static size_t expect_error(const char *text, const char *want) {
  OxDiagList d;
  ox_diags_init(&d, "bad.rules");
  OxRuleSet *rs = (OxRuleSet *)(uintptr_t)1;
  int rc = ox_rules_load_buffer(text, strlen(text), "bad.rules", &rs, &d);
  g_assert_cmpint(rc, ==, -1);
  g_assert_null(rs);
  g_assert_cmpuint(d.n_errors, >, 0);
  bool found = false;
  GString *all = g_string_new(NULL);
  for (size_t i = 0; i < d.n; i++) {
    char *m = ox_diag_format(&d, &d.items[i]);
    g_string_append_printf(all, "  %s\n", m);
    char *at = g_strdup_printf("bad.rules:%s", want);
    if (g_str_has_prefix(m, "bad.rules:") && strstr(m, ": error: ")) {
      /* "bad.rules:L:C: error: msg" against "L:C: msg" */
      const char *colon = strstr(want, ": ");
      char *loc = g_strndup(want, (gsize)(colon - want));
      char *head = g_strdup_printf("bad.rules:%s: error: %s", loc, colon + 2);
      if (g_str_has_prefix(m, head)) found = true;
      g_free(loc);
      g_free(head);
    }
    g_free(at);
    free(m);
  }
  if (!found) {
    g_printerr("expected an error %s, got:\n%s", want, all->str);
    g_test_fail();
  }
  g_string_free(all, TRUE);
  size_t n = d.n_errors;
  ox_diags_clear(&d);
  return n;
}

static void test_error_files(void) {
  char *dir = src_path("tests/data/rules");
  GDir *gd = g_dir_open(dir, 0, NULL);
  g_assert_nonnull(gd);
  uint32_t n = 0;
  for (const char *f; (f = g_dir_read_name(gd));) {
    if (!g_str_has_prefix(f, "bad-") || !g_str_has_suffix(f, ".rules")) continue;
    char *path = g_build_filename(dir, f, NULL), *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    g_assert_true(g_str_has_prefix(text, "# expect: "));
    char *want = g_strndup(text + 10, strcspn(text + 10, "\n"));
    size_t errs = expect_error(text, want);
    if (strcmp(f, "bad-many.rules") == 0) g_assert_cmpuint(errs, >=, 3); /* every error, not just the first */
    /* the same through the file loader: located in the file's own name */
    OxDiagList d;
    ox_diags_init(&d, NULL);
    OxRuleSet *rs = NULL;
    g_assert_cmpint(ox_rules_load(path, &rs, &d), ==, -1);
    g_assert_null(rs);
    g_assert_cmpstr(d.file, ==, path);
    ox_diags_clear(&d);
    g_free(want);
    g_free(text);
    g_free(path);
    n++;
  }
  g_dir_close(gd);
  g_free(dir);
  g_assert_cmpuint(n, >=, 7);
}

static void test_errors_inline(void) {
  static const struct {
    const char *text, *want;
  } cases[] = {
      /* syntax */
      {"rule r {\n  match: relu(x\n  replace: r => x\n}\n", "3:3: expected ')'"},
      {"rule r {\n  match: r @ relu(x)\n  replace: r => \"abc\n}\n", "3:17: unterminated string"},
      {"rule {\n}\n", "1:6: expected a rule name"},
      {"frobnicate\n", "1:1: expected 'rule', 'batch' or 'pass'"},
      {"rule r {\n  match: r @ relu(x)\n  replace: r => x\n", "4:1: missing '}'"},
      {"rule r {\n  match: r @ relu(x)\n  oops: 1\n}\n", "3:3: expected a clause"},
      {"rule r {\n  where: True\n  match: r @ relu(x)\n  replace: r => x\n}\n",
       "2:3: where: must come after match:"},
      /* patterns */
      {"rule r {\n  match: r @ relu(x, y=z, w)\n  replace: r => x\n}\n",
       "2:27: positional argument after keyword"},
      {"rule r {\n  match: r @ relu(x) users=two\n  replace: r => x\n}\n",
       "2:28: users= takes a count or '*'"},
      {"rule r {\n  match: r @ relu(x) normalized\n  replace: r => x\n}\n",
       "2:22: 'normalized' applies to split"},
      {"rule r {\n  match: x @ y\n  replace: x => y\n}\n", "2:10: 'x @' binds a call pattern"},
      {"rule r {\n  match: c @ cat(each(x), dim=x)\n  replace: c => c\n}\n",
       "2:31: capture 'x' is used both inside and outside"},
      {"rule r {\n  match: c @ cat([a, b])\n  replace: c => c\n}\n",
       "2:19: a list in a pattern holds constants only"},
      /* names and types */
      {"rule r {\n  match: r @ relu(x)\n  where: frob(x)\n  replace: r => x\n}\n",
       "3:10: unknown function or op 'frob'"},
      {"rule r {\n  match: r @ relu(x)\n  where: relu(x) == x\n  replace: r => x\n}\n",
       "3:10: 'relu(...)' creates a node"},
      {"rule r {\n  match: r @ relu(x)\n  where: dtype(x) == 3\n  replace: r => x\n}\n",
       "3:10: cannot compare dtype with int"},
      {"rule r {\n  match: r @ relu(x)\n  where: rank(x) and True\n  replace: r => x\n}\n",
       "3:10: 'and' needs booleans, got int and bool"},
      {"rule r {\n  match: r @ relu(x)\n  where: shape(x) + [1] == [2]\n  replace: r => x\n}\n",
       "3:10: '+' needs numbers, got list and list (use ++ to join lists)"},
      {"rule r {\n  match: r @ relu(x)\n  where: rank(x, 1) == 2\n  replace: r => x\n}\n",
       "3:10: rank() takes 1 argument, got 2"},
      /* found by fuzz-rules (issue 21): a number among extras passed a NULL name to strcmp */
      {"batch b {\n  op: gelu\n  extras: approximate 1\n}\n", "3:23: extras: expected an argument name, found '1'"},
      {"rule r {\n  match: r @ relu(x)\n  where: len(3) == 2\n  replace: r => x\n}\n",
       "3:14: argument 1 of len() must be a list or a string, got int"},
      {"rule r {\n  match: r @ relu(x)\n  where: rank(x) == 2\n}\n", "1:6: rule 'r' has no replace: clause"},
      {"rule r {\n  match: r @ relu(x)\n  replace: y => x\n}\n", "3:12: unknown capture 'y'"},
      {"rule r {\n  match: r @ relu(x)\n  replace: r => rank(x)\n}\n",
       "3:17: a replacement must be a node, got int"},
      {"rule r {\n  match: c @ cat(some(g @ relu(_)), dim=_)\n  replace: g => c\n}\n",
       "3:12: 'g' is a list, not a node"},
      {"rule r {\n  match: r @ relu(x)\n  let k = 1\n  let k = 2\n  replace: r => x\n}\n",
       "4:7: 'k' is already defined (line 3)"},
      {"rule r {\n  match: r @ relu(x)\n  replace: r => slice_dim(x, 0, 0, 1)\n  where: slice_dim(x, 0, 0, "
       "1) == x\n}\n",
       "4:10: slice_dim() creates a node"},
      /* batch */
      {"batch b {\n  op: frob\n}\n", "2:7: unknown op 'frob'"},
      {"batch b {\n  op: gelu\n  key: slots, colour\n}\n", "3:15: unknown key field"},
      {"batch b {\n  op: gelu\n  size: 3\n}\n", "3:3: unknown batch key 'size'"},
      {"batch b {\n  phase: post\n  op: gelu\n  template: stack_unbind\n}\n",
       "1:7: template stack_unbind emits torch-level nodes"},
      {"batch b {\n  op: gelu\n  emit: torch.tanh\n}\n", "3:9: emit: torch.tanh is not a spelling of gelu"},
      {"batch b {\n  op: gelu\n  template: linear\n}\n", "2:7: template linear fuses linear ops"},
      {"batch b {\n  op: gelu\n  min_fuse_set_size: -1\n}\n", "3:22: unexpected '-' in a batch rule"},
      /* duplicates */
      {"batch b {\n  op: gelu\n}\nrule b {\n  match: r @ relu(x)\n  replace: r => x\n}\n",
       "4:6: duplicate name 'b'"},
      {"pass p {\n  rule p {\n    match: r @ relu(x)\n    replace: r => x\n  }\n}\n",
       "2:8: duplicate name 'p' (pass defined at line 1)"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
    expect_error(cases[i].text, cases[i].want);
}

/* a file with one bad rule among good ones loads nothing */
static void test_error_all_or_nothing(void) {
  const char *text = "rule good {\n  match: r @ relu(x)\n  replace: r => x\n}\n"
                     "rule bad {\n  match: r @ relu(x)\n  where: nope(x)\n  replace: r => x\n}\n";
  expect_error(text, "7:10: unknown function or op 'nope'");
  OxDiagList d;
  ox_diags_init(&d, "missing.rules");
  OxRuleSet *rs = NULL;
  g_assert_cmpint(ox_rules_load("/nonexistent/missing.rules", &rs, &d), ==, -1);
  g_assert_null(rs);
  g_assert_cmpuint(d.n_errors, ==, 1);
  ox_diags_clear(&d);
  /* and an empty file is a valid, empty rule set */
  g_assert_cmpint(ox_rules_load_buffer("# nothing\n", 10, "empty.rules", &rs, NULL), ==, 0);
  g_assert_cmpuint(ox_rules_pass_count(rs), ==, 0);
  ox_rules_free(rs);
}

/* ------------------------------------------------------------------ the matching vocabulary */

static const char vocab_rules[] =
    "# repeat(): every squeezed piece of a split into ones is one unbind\n"
    "rule split_squeeze_to_unbind {\n"
    "  match: repeat(q @ function squeeze(getitem(s @ function split(x, _, dim=d) users=*, k), d))\n"
    "  let secs = sections(s[0])\n"
    "  where: all([z == 1 for z in secs]) and len(q) == len(secs)\n"
    "  replace:\n"
    "    u = unbind(x[0], dim=d[0])\n"
    "    for j in range(len(q)): q[j] => u[k[j]]\n"
    "}\n"
    "# two outputs: the same op on the same input twice (common subexpression)\n"
    "rule same_neg_twice {\n"
    "  match: a @ neg(x), b @ neg(x)\n"
    "  replace:\n"
    "    b => a\n"
    "}\n"
    "# getitem access and a constant list\n"
    "rule relu_of_first_half {\n"
    "  match: r @ relu((s @ split(x, [4, 4], dim=1) users=*)[0])\n"
    "  replace:\n"
    "    r => relu(slice_dim(x, 1, 0, 4))\n"
    "}\n"
    "# an exact spelling with keyword arguments and a constant\n"
    "rule eval_dropout {\n"
    "  match: m @ torch.nn.functional.dropout(x, p=_, training=False)\n"
    "  replace:\n"
    "    m => x\n"
    "}\n"
    "# a method call, any number of users\n"
    "rule drop_contiguous {\n"
    "  match: c @ method contiguous(x) users=*\n"
    "  replace:\n"
    "    c => x\n"
    "}\n";

static const char vocab_graph[] =
    "graph():\n"
    "    %x : Tensor \"f32[4, 3]\"[num_users=1] = placeholder[target=x]\n"
    "    %y : Tensor \"f32[4, 8]\"[num_users=4] = placeholder[target=y]\n"
    "    %split : [num_users=3] = call_function[target=torch.split](args = (%x, [1, 1, 1]), kwargs = {dim: "
    "1})\n"
    "    %getitem : [num_users=1] = call_function[target=operator.getitem](args = (%split, 0), kwargs = {})\n"
    "    %getitem_1 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 1), kwargs = "
    "{})\n"
    "    %getitem_2 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 2), kwargs = "
    "{})\n"
    "    %squeeze : [num_users=1] = call_function[target=torch.squeeze](args = (%getitem, 1), kwargs = {})\n"
    "    %squeeze_1 : [num_users=1] = call_function[target=torch.squeeze](args = (%getitem_1, 1), kwargs = "
    "{})\n"
    "    %squeeze_2 : [num_users=1] = call_function[target=torch.squeeze](args = (%getitem_2, 1), kwargs = "
    "{})\n"
    "    %neg : [num_users=2] = call_function[target=torch.neg](args = (%y,), kwargs = {})\n"
    "    %exp : [num_users=1] = call_function[target=torch.exp](args = (%neg,), kwargs = {})\n"
    "    %neg_1 : [num_users=1] = call_function[target=torch.neg](args = (%y,), kwargs = {})\n"
    "    %split_1 : [num_users=1] = call_function[target=torch.split](args = (%y, [4, 4]), kwargs = {dim: "
    "1})\n"
    "    %getitem_3 : [num_users=1] = call_function[target=operator.getitem](args = (%split_1, 0), kwargs = "
    "{})\n"
    "    %relu : [num_users=1] = call_function[target=torch.relu](args = (%getitem_3,), kwargs = {})\n"
    "    %dropout : [num_users=1] = call_function[target=torch.nn.functional.dropout](args = (%y,), kwargs = "
    "{p: 0.5, training: False})\n"
    "    %contiguous : [num_users=2] = call_method[target=contiguous](args = (%dropout,), kwargs = {})\n"
    "    %sigmoid : [num_users=1] = call_function[target=torch.sigmoid](args = (%contiguous,), kwargs = {})\n"
    "    return (squeeze, squeeze_1, squeeze_2, neg, neg_1, relu, sigmoid, contiguous, exp)\n";

static void test_vocabulary(void) {
  OxDiagList d;
  ox_diags_init(&d, "vocab.rules");
  OxRuleSet *rs = NULL;
  if (ox_rules_load_buffer(vocab_rules, strlen(vocab_rules), "vocab.rules", &rs, &d) != 0)
    ox_diags_print(&d, stderr);
  g_assert_nonnull(rs);
  ox_diags_clear(&d);
  ox_diags_init(&d, "vocab.txt");
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_buffer(vocab_graph, strlen(vocab_graph), OX_FMT_UNKNOWN, NULL, &doc, &d), ==, 0);
  ox_diags_clear(&d);
  OxGraph *orig = ox_graph_clone(doc->graphs[0]);
  ox_doc_free(doc);
  ox_shape_infer_graph(orig, NULL, NULL);
  OxGraph *g = ox_graph_clone(orig);
  OxTrace *t = run_rules(rs, g);
  GString *s = g_string_new(NULL);
  trace_text(t, T_REJECTED | T_LOC | T_REASON, s);
  g_test_message("%s", s->str);
  const char *want[] = {"split_squeeze_to_unbind", "same_neg_twice", "relu_of_first_half", "eval_dropout",
                        "drop_contiguous"};
  for (size_t i = 0; i < G_N_ELEMENTS(want); i++)
    if (count_applied(t, want[i]) != 1)
      g_test_fail_printf("%s applied %u times, want 1:\n%s", want[i], count_applied(t, want[i]), s->str);
  /* one unbind replaces the split and its squeezes */
  OxNodeId ids[8];
  g_assert_cmpuint(ox_graph_find_nodes(g, OX_OP_CALL_FUNCTION, "torch.unbind", ids, 8), ==, 1);
  g_assert_cmpuint(ox_graph_find_nodes(g, OX_OP_CALL_FUNCTION, "torch.squeeze", ids, 8), ==, 0);
  g_assert_cmpuint(ox_graph_find_nodes(g, OX_OP_CALL_FUNCTION, "torch.neg", ids, 8), ==, 1);
  /* exp read the erased neg and now reads the later neg_1: the step re-sorted the graph */
  g_assert_true(ox_graph_before(g, ox_graph_find(g, "neg_1"), ox_graph_find(g, "exp")));
  ox_diags_init(&d, "verify");
  g_assert_cmpint(ox_graph_verify(g, true, &d), ==, 0);
  ox_diags_clear(&d);
  char *fail = same_outputs(orig, g);
  if (fail) g_test_fail_printf("the vocabulary rules changed values: %s", fail);
  g_free(fail);
  g_string_free(s, TRUE);
  ox_trace_free(t);
  ox_graph_free(g);
  ox_graph_free(orig);
  ox_rules_free(rs);
}

/* ------------------------------------------------------------------ the CLI */

static int run_cli(char **out, char **err, ...) {
  const char *cli = g_getenv("OPTIMUS_CLI");
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (gpointer)(cli ? cli : "optimus"));
  va_list ap;
  va_start(ap, err);
  for (const char *a; (a = va_arg(ap, const char *));)
    g_ptr_array_add(argv, (gpointer)a);
  va_end(ap);
  g_ptr_array_add(argv, NULL);
  int status = -1;
  GError *e = NULL;
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  if (!g_spawn_sync(root && *root ? root : "..", (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, out,
                    err, &status, &e))
    g_error("cannot run %s: %s", cli, e->message);
  g_ptr_array_free(argv, TRUE);
  return g_spawn_check_wait_status(status, NULL) ? 0 : WEXITSTATUS(status);
}

static void test_cli(void) {
  if (!g_getenv("OPTIMUS_CLI")) {
    g_test_skip("OPTIMUS_CLI is not set (meson test sets it)");
    return;
  }
  char *dir = g_dir_make_tmp("rules-cli-XXXXXX", NULL);
  char *out_path = g_build_filename(dir, "out.txt", NULL), *trace = g_build_filename(dir, "t.json", NULL);
  char *out = NULL, *err = NULL;
  /* two rule files, only the rules (an empty pass list) */
  int rc = run_cli(&out, &err, "optimize", "tests/data/rules/swish.txt", "-o", out_path, "--passes", "",
                   "--rules", "data/rules/swish.rules", "--rules", "data/rules/transpose.rules", "--trace",
                   trace, "--json", NULL);
  g_assert_cmpint(rc, ==, 0);
  g_assert_nonnull(strstr(out, "\"swish_to_silu\": 1"));
  g_assert_nonnull(strstr(out, "\"swish_to_silu_reversed\": 1"));
  char *text = NULL;
  g_assert_true(g_file_get_contents(trace, &text, NULL, NULL));
  g_assert_nonnull(strstr(text, "\"rule_file\":\"data/rules/swish.rules\",\"rule_line\":3"));
  g_free(text);
  g_free(out);
  g_free(err);
  /* explain says which rule, where, and why not */
  rc = run_cli(&out, &err, "explain", "tests/data/rules/swish-negative.txt", "--node", "mul", "--passes", "",
               "--rules", "data/rules/swish.rules", NULL);
  g_assert_cmpint(rc, ==, 0);
  g_assert_nonnull(strstr(out, "rule: data/rules/swish.rules:4"));
  g_assert_nonnull(strstr(out, "why: capture x bound to %y and %h"));
  g_free(out);
  g_free(err);
  /* a bad rule file: located errors, exit 1, nothing written */
  rc = run_cli(&out, &err, "optimize", "tests/data/rules/swish.txt", "-o", out_path, "--rules",
               "tests/data/rules/bad-unknown-op.rules", NULL);
  g_assert_cmpint(rc, ==, 1);
  g_assert_nonnull(strstr(err, "tests/data/rules/bad-unknown-op.rules:3:14: error: unknown op 'frobnicate'"));
  g_free(out);
  g_free(err);
  /* options reach rule passes like built-in ones */
  rc = run_cli(&out, &err, "optimize", "tests/data/rules/batch-gelu.txt", "-o", out_path, "--passes", "",
               "--rules", "data/rules/batch-gelu.rules", "--option", "batch_gelu.min_fuse_set_size=5",
               "--json", NULL);
  g_assert_cmpint(rc, ==, 0);
  g_assert_null(strstr(out, "\"batch_gelu\": 1"));
  g_free(out);
  g_free(err);
  g_remove(out_path);
  g_remove(trace);
  g_rmdir(dir);
  g_free(out_path);
  g_free(trace);
  g_free(dir);
}


/* ------------------------------------------------------------------ nesting bounds (issue 21) */

static char *repeat_str(const char *unit, uint32_t n) {
  GString *s = g_string_new(NULL);
  for (uint32_t i = 0; i < n; i++) g_string_append(s, unit);
  return g_string_free(s, FALSE);
}

/* One rule "rule deep {" / LINE2 / LINE3 / "}" where some line nests a construct n levels deep. */
typedef struct DeepCase {
  const char *name;
  const char *pre, *open, *mid, *close, *post; /* the deep line: pre open^n mid close^n post */
  uint32_t line;                               /* of the deep line */
  const char *what;                            /* "pattern", "expression", "constant" */
} DeepCase;

static const DeepCase deep_cases[] = {
    {"pattern-calls", "rule deep {\n  match: m @ ", "relu(", "x", ")", "\n  replace:\n    m => x\n}\n", 2, "pattern"},
    {"pattern-parens", "rule deep {\n  match: m @ relu(", "(", "x", ")", ")\n  replace:\n    m => x\n}\n", 2, "pattern"},
    {"pattern-each", "rule deep {\n  match: m @ cat(", "each(", "x", ")", ")\n  replace:\n    m => m\n}\n", 2, "pattern"},
    {"pattern-getitems", "rule deep {\n  match: m @ relu(x", "", "", "[0]", ")\n  replace:\n    m => x\n}\n", 2, "pattern"},
    {"pattern-constant", "rule deep {\n  match: m @ relu(", "[", "1", "]", ")\n  replace:\n    m => m\n}\n", 2, "constant"},
    {"where-parens", "rule deep {\n  match: m @ relu(x)\n  where: ", "(", "True", ")", "\n  replace:\n    m => x\n}\n", 3, "expression"},
    {"where-lists", "rule deep {\n  match: m @ relu(x)\n  where: len(", "[", "1", "]", ") == 1\n  replace:\n    m => x\n}\n", 3, "expression"},
    {"where-if-chain", "rule deep {\n  match: m @ relu(x)\n  where: ", "if True then True else ", "True", "", "\n  replace:\n    m => x\n}\n", 3, "expression"},
    {"where-nots", "rule deep {\n  match: m @ relu(x)\n  where: ", "not ", "True", "", "\n  replace:\n    m => x\n}\n", 3, "expression"},
    {"where-negations", "rule deep {\n  match: m @ relu(x)\n  where: ", "-(", "rank(x)", ")", " == 1\n  replace:\n    m => x\n}\n", 3, "expression"},
    {"where-index-chain", "rule deep {\n  match: m @ relu(x)\n  where: x", "", "", "[0]", " == 1\n  replace:\n    m => x\n}\n", 3, "expression"},
    {"where-sum-chain", "rule deep {\n  match: m @ relu(x)\n  where: 1", "", "", " + 1", " == 1\n  replace:\n    m => x\n}\n", 3, "expression"},
    {"replace-calls", "rule deep {\n  match: m @ relu(x)\n  replace:\n    m => ", "relu(", "x", ")", "\n}\n", 4, "expression"},
};

static char *deep_text(const DeepCase *c, uint32_t n) {
  char *o = repeat_str(c->open, n), *cl = repeat_str(c->close, n);
  char *t = g_strconcat(c->pre, o, c->mid, cl, c->post, NULL);
  g_free(o);
  g_free(cl);
  return t;
}

/* Files that are not rule files: a binary (NUL bytes) is one located error, not a lexer error
 * per byte; a long text of garbage (here 20,000 lines of unexpected characters, as a Python
 * script or a log given by mistake) reports at most OX_RULES_MAX_ERRORS errors and one note. */
static void test_errors_not_rules(void) {
  static const char bin[] = "ab\ncd\x7f" "ELF\0\x01\x02 rule x";
  OxDiagList d;
  ox_diags_init(&d, "bin.rules");
  OxRuleSet *rs = NULL;
  g_assert_cmpint(ox_rules_load_buffer(bin, sizeof bin - 1, "bin.rules", &rs, &d), ==, -1);
  g_assert_null(rs);
  g_assert_cmpuint(d.n_errors, ==, 1);
  g_assert_cmpuint(d.items[0].line, ==, 2);
  g_assert_cmpuint(d.items[0].col, ==, 7);
  g_assert_nonnull(strstr(d.items[0].msg, "binary"));
  ox_diags_clear(&d);

  GString *g = g_string_new(NULL);
  for (int i = 0; i < 20000; i++)
    g_string_append(g, "$$ ? ` !\n");
  ox_diags_init(&d, "junk.rules");
  g_assert_cmpint(ox_rules_load_buffer(g->str, g->len, "junk.rules", &rs, &d), ==, -1);
  g_assert_null(rs);
  g_assert_cmpuint(d.n_errors, ==, 25);
  g_assert_cmpuint(d.n, ==, 26);
  g_assert_cmpint(d.items[25].sev, ==, OX_SEV_NOTE);
  g_assert_nonnull(strstr(d.items[25].msg, "too many errors"));
  g_assert_cmpuint(d.items[0].line, ==, 1);
  ox_diags_clear(&d);
  g_string_free(g, TRUE);
}

/* Every recursive construct of the rule language, nested 257, 5,000 and 100,000 levels: a
 * located error ("... nested deeper than 256 levels" on the deep line), never a stack
 * overflow; 200 levels load (the bound is not in the way of real rules) and, where the rule
 * can run, run on a graph without trouble. */
static void test_errors_depth(void) {
  static const uint32_t depths[] = {257, 5000, 100000};
  for (size_t i = 0; i < G_N_ELEMENTS(deep_cases); i++) {
    const DeepCase *c = &deep_cases[i];
    for (size_t k = 0; k < G_N_ELEMENTS(depths); k++) {
      char *text = deep_text(c, depths[k]);
      OxDiagList d;
      ox_diags_init(&d, "deep.rules");
      OxRuleSet *rs = NULL;
      g_assert_cmpint(ox_rules_load_buffer(text, strlen(text), "deep.rules", &rs, &d), ==, -1);
      g_assert_null(rs);
      char *want = g_strdup_printf("%s nested deeper than 256 levels", c->what);
      bool found = false;
      for (size_t j = 0; j < d.n; j++)
        if (d.items[j].sev == OX_SEV_ERROR && d.items[j].line == c->line && d.items[j].col > 0 &&
            strstr(d.items[j].msg, want))
          found = true;
      if (!found) {
        g_printerr("%s at %u levels: no '%s' on line %u\n", c->name, depths[k], want, c->line);
        ox_diags_print(&d, stderr);
        g_test_fail();
      }
      g_assert_cmpuint(d.n_errors, <=, 3); /* one error, not one per level */
      g_free(want);
      ox_diags_clear(&d);
      g_free(text);
    }
    char *text = deep_text(c, 200);
    OxDiagList d;
    ox_diags_init(&d, "deep.rules");
    OxRuleSet *rs = NULL;
    int rc = ox_rules_load_buffer(text, strlen(text), "deep.rules", &rs, &d);
    if (rc != 0) {
      g_printerr("%s at 200 levels does not load\n", c->name);
      ox_diags_print(&d, stderr);
      g_test_fail();
    } else {
      /* run it: guards and templates 200 deep evaluate (or reject) without trouble */
      static const char graph[] = "graph():\n"
                                  "    %x : [num_users=1] = placeholder[target=x]\n"
                                  "    %relu : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})\n"
                                  "    return relu\n";
      OxDoc *doc = NULL;
      OxDiagList gd;
      ox_diags_init(&gd, "g");
      g_assert_cmpint(ox_load_buffer(graph, strlen(graph), OX_FMT_UNKNOWN, NULL, &doc, &gd), ==, 0);
      OxGraph *g = ox_graph_clone(doc->graphs[0]);
      ox_shape_infer_graph(g, NULL, NULL);
      OxTrace *t = run_rules(rs, g);
      OxDiagList vd;
      ox_diags_init(&vd, "v");
      g_assert_cmpint(ox_graph_verify(g, true, &vd), ==, 0);
      ox_diags_clear(&vd);
      ox_trace_free(t);
      ox_graph_free(g);
      ox_doc_free(doc);
      ox_diags_clear(&gd);
      ox_rules_free(rs);
    }
    ox_diags_clear(&d);
    g_free(text);
  }
}

/* A replacement that nests its own arguments one level deeper each time it applies stops at
 * 128 levels with a recorded rejection; the graph still verifies and writes text that loads. */
static void test_deep_values(void) {
  static const char rules[] = "rule deepen {\n  match: m @ cat(xs, d)\n  replace:\n    m => cat([xs], d)\n}\n";
  static const char graph[] = "graph():\n"
                              "    %x : [num_users=1] = placeholder[target=x]\n"
                              "    %cat : [num_users=1] = call_function[target=torch.cat](args = ([%x, %x],), kwargs = {dim: 0})\n"
                              "    return cat\n";
  OxDiagList d;
  ox_diags_init(&d, "deepen.rules");
  OxRuleSet *rs = NULL;
  g_assert_cmpint(ox_rules_load_buffer(rules, strlen(rules), "deepen.rules", &rs, &d), ==, 0);
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_buffer(graph, strlen(graph), OX_FMT_UNKNOWN, NULL, &doc, &d), ==, 0);
  OxGraph *g = ox_graph_clone(doc->graphs[0]);
  OxPipeline p = {0};
  ox_rules_append(rs, &p);
  p.entries[0].opt.counter = 300;
  OxCheckConfig checks;
  ox_check_config_parse("none", &checks, NULL, 0);
  OxTrace *t = ox_trace_new();
  OxOptimizeResult res;
  g_assert_cmpint(ox_optimize(g, &p, &checks, t, &res, &d), ==, 0);
  g_assert_cmpuint(res.applied, ==, 126);
  bool said = false;
  for (uint32_t i = 0; i < t->n_steps; i++) {
    char *why = ox_reason_format(&t->steps[i].reason);
    if (why && strstr(why, "nested deeper than 128 levels")) said = true;
    free(why);
  }
  g_assert_true(said);
  g_assert_cmpint(ox_graph_verify(g, true, &d), ==, 0);
  OxBuf b;
  ox_buf_init(&b);
  ox_write_fx_text(g, &b);
  OxDoc *back = NULL;
  g_assert_cmpint(ox_load_buffer(b.data, b.len, OX_FMT_UNKNOWN, NULL, &back, &d), ==, 0);
  g_assert_cmpuint(d.n_errors, ==, 0);
  ox_doc_free(back);
  ox_buf_free(&b);
  ox_trace_free(t);
  ox_pipeline_free(&p);
  ox_graph_free(g);
  ox_doc_free(doc);
  ox_rules_free(rs);
  ox_diags_clear(&d);
}


/* ------------------------------------------------------------------ budgets (issue 21) */

static const char budget_graph[] = "graph():\n"
                                   "    %x : [num_users=1] = placeholder[target=x]\n"
                                   "    %relu : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})\n"
                                   "    return relu\n";

/* Runs rule text (one pass, repeated `counter` times) on budget_graph under budget b; returns the
 * optimized graph, its trace and the result. */
static OxGraph *run_budget(const char *rules, int counter, const OxBudget *b, OxTrace **t, OxOptimizeResult *res,
                           OxDiagList *d) {
  OxRuleSet *rs = NULL;
  g_assert_cmpint(ox_rules_load_buffer(rules, strlen(rules), "budget.rules", &rs, d), ==, 0);
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_buffer(budget_graph, strlen(budget_graph), OX_FMT_UNKNOWN, NULL, &doc, d), ==, 0);
  OxGraph *g = ox_graph_clone(doc->graphs[0]);
  ox_doc_free(doc);
  OxPipeline p = {0};
  ox_rules_append(rs, &p);
  p.entries[0].opt.counter = counter;
  if (b) p.budget = *b;
  OxCheckConfig checks;
  ox_check_config_default(&checks);
  *t = ox_trace_new();
  g_assert_cmpint(ox_optimize(g, &p, &checks, *t, res, d), ==, 0);
  ox_pipeline_free(&p);
  ox_rules_free(rs);
  return g;
}

/* the last record must be the pass's BUDGET rejection naming `what` */
static void assert_budget_record(const OxTrace *t, const char *what, const char *text) {
  const OxStep *s = &t->steps[t->n_steps - 1];
  g_assert_cmpint(s->kind, ==, OX_STEP_REJECTED);
  uint32_t rejected = 0; /* counted once (the driver used to count the BUDGET record twice) */
  for (uint32_t i = 0; i < t->n_steps; i++) rejected += t->steps[i].kind == OX_STEP_REJECTED;
  g_assert_cmpuint(t->n_rejected, ==, rejected);
  g_assert_cmpint(s->reason.code, ==, OX_REASON_BUDGET);
  g_assert_cmpstr(s->rule, ==, "budget");
  g_assert_cmpstr(s->reason.args[0], ==, what);
  char *why = ox_reason_format(&s->reason);
  if (!strstr(why, text)) g_error("budget record '%s' does not say '%s'", why, text);
  free(why);
}

/* The rule: every repetition doubles the relus, 2^40 with counter=40. The growth budget
 * (4x the pass's input or 1000 more nodes) stops it after 1001 steps with a warning and a BUDGET
 * record; the graph verifies, and the trace reads back and replays to the same graph. A rule that
 * does not grow stops at the step budget or the time budget. */
static void test_budgets(void) {
  static const char grow[] = "rule grow {\n  match: m @ relu(x)\n  replace: m => relu(relu(x))\n}\n";
  static const char same[] = "rule same {\n  match: m @ relu(x)\n  replace: m => relu(x)\n}\n";
  OxDiagList d;
  ox_diags_init(&d, "budget");
  OxTrace *t = NULL;
  OxOptimizeResult res;
  OxGraph *g = run_budget(grow, 40, NULL, &t, &res, &d);
  g_assert_cmpuint(res.budget_stops, ==, 1);
  g_assert_cmpuint(res.applied, ==, 1001);
  g_assert_cmpuint(g->n_live, ==, 1004); /* 1003 nodes and the output */
  assert_budget_record(t, "growth", "growth budget: graph grew 502x (2 -> 1003 nodes");
  g_assert_cmpuint(d.n_warnings, ==, 1);
  g_assert_nonnull(strstr(d.items[0].msg, "pass grow stopped after 1001 applied steps: growth budget"));
  g_assert_cmpint(ox_graph_verify(g, true, &d), ==, 0);
  OxBuf b;
  ox_buf_init(&b);
  ox_trace_write_json(t, &b);
  OxTrace *back = NULL;
  g_assert_cmpint(ox_trace_read_json(b.data, b.len, "t.json", &back, &d), ==, 0);
  assert_budget_record(back, "growth", "graph grew 502x");
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_buffer(budget_graph, strlen(budget_graph), OX_FMT_UNKNOWN, NULL, &doc, &d), ==, 0);
  g_assert_cmpint(ox_replay(doc->graphs[0], back, UINT32_MAX, &d), ==, 0);
  g_assert_cmpuint(ox_graph_structure_hash(doc->graphs[0]), ==, ox_graph_structure_hash(g));
  ox_doc_free(doc);
  ox_trace_free(back);
  ox_buf_free(&b);
  ox_trace_free(t);
  ox_graph_free(g);
  ox_diags_clear(&d);

  /* a budget of growth 2 on the same rule: 1002 nodes is still the floor (input + 1000) */
  OxBudget tight = {.max_growth = 2};
  g = run_budget(grow, 40, &tight, &t, &res, &d);
  g_assert_cmpuint(res.applied, ==, 1001);
  ox_trace_free(t);
  ox_graph_free(g);
  ox_diags_clear(&d);

  /* no growth: the step budget */
  OxBudget steps = {.max_steps = 500};
  g = run_budget(same, 100000, &steps, &t, &res, &d);
  g_assert_cmpuint(res.budget_stops, ==, 1);
  g_assert_cmpuint(res.applied, ==, 500);
  assert_budget_record(t, "step", "step budget: 500 applied steps (at most 500 per pass)");
  ox_trace_free(t);
  ox_graph_free(g);
  ox_diags_clear(&d);

  /* no growth, steps unbounded for this test's purpose: the time budget */
  OxBudget time = {.max_seconds = 0.2, .max_steps = 4000000000u};
  g = run_budget(same, 1000000000, &time, &t, &res, &d);
  g_assert_cmpuint(res.budget_stops, ==, 1);
  assert_budget_record(t, "time", "time budget: the pass ran");
  g_assert_cmpint(ox_graph_verify(g, true, &d), ==, 0);
  ox_trace_free(t);
  ox_graph_free(g);
  ox_diags_clear(&d);

  /* the CLI: the command ends with a warning, exit 0, budget_stops in --json; --budget */
  if (!g_getenv("OPTIMUS_CLI")) {
    g_test_skip("OPTIMUS_CLI is not set (meson test sets it)");
    return;
  }
  char *dir = g_dir_make_tmp("budget-XXXXXX", NULL);
  char *gp = g_build_filename(dir, "g.txt", NULL), *rp = g_build_filename(dir, "grow.rules", NULL),
       *op = g_build_filename(dir, "out.txt", NULL), *tp = g_build_filename(dir, "t.json", NULL);
  g_assert_true(g_file_set_contents(gp, budget_graph, -1, NULL));
  g_assert_true(g_file_set_contents(rp, grow, -1, NULL));
  char *out = NULL, *err = NULL;
  int rc = run_cli(&out, &err, "optimize", gp, "-o", op, "--trace", tp, "--rules", rp, "--option", "grow.counter=40",
                   "--json", NULL);
  g_assert_cmpint(rc, ==, 0);
  g_assert_nonnull(strstr(err, "warning: pass grow stopped after 1001 applied steps: growth budget: graph grew 502x"));
  g_assert_nonnull(strstr(out, "\"budget_stops\": 1"));
  g_free(out);
  g_free(err);
  rc = run_cli(&out, &err, "optimize", gp, "-o", op, "--rules", rp, "--option", "grow.counter=40", "--budget",
               "growth=1,steps=10", NULL);
  g_assert_cmpint(rc, ==, 0);
  g_assert_nonnull(strstr(err, "step budget: 10 applied steps"));
  g_free(out);
  g_free(err);
  rc = run_cli(&out, &err, "optimize", gp, "-o", op, "--budget", "growth=0.5", NULL);
  g_assert_cmpint(rc, ==, 2);
  g_assert_nonnull(strstr(err, "--budget: expected steps=N"));
  g_free(out);
  g_free(err);
  g_remove(gp);
  g_remove(rp);
  g_remove(op);
  g_remove(tp);
  g_rmdir(dir);
  g_free(gp);
  g_free(rp);
  g_free(op);
  g_free(tp);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/rules/dogfood/batch-rows", test_dogfood_batch_rows);
  g_test_add_func("/engine/rules/dogfood/hand-made", test_dogfood_handmade);
  g_test_add_func("/engine/rules/dogfood/property-graphs", test_dogfood_property);
  g_test_add_func("/engine/rules/dogfood/corpus", test_dogfood_corpus);
  g_test_add_func("/engine/rules/vocabulary", test_vocabulary);
  g_test_add_func("/engine/rules/cli", test_cli);
  g_test_add_func("/engine/rules/errors/files", test_error_files);
  g_test_add_func("/engine/rules/errors/inline", test_errors_inline);
  g_test_add_func("/engine/rules/errors/all-or-nothing", test_error_all_or_nothing);
  g_test_add_func("/engine/rules/errors/depth", test_errors_depth);
  g_test_add_func("/engine/rules/errors/not-rules", test_errors_not_rules);
  g_test_add_func("/engine/rules/deep-values", test_deep_values);
  g_test_add_func("/engine/rules/budgets", test_budgets);
  for (size_t i = 0; i < G_N_ELEMENTS(examples); i++) {
    char *path = g_strdup_printf("/engine/rules/example/%s", examples[i].name);
    g_test_add_data_func(path, &examples[i], test_example);
    g_free(path);
  }
  return g_test_run();
}
