/* test-splitcat.c - the split/cat passes on the spec's golden cases G12-G25 (section 6), built
 * with the ox_graph API (shapes as given, except G23 whose batch dim 1024 is cut to 64 to keep
 * the interpreter fast), plus negative controls.
 *
 * Every rewrite test runs the passes through ox_optimize with all checks on (structure, shape,
 * numeric), asserts that no step failed a check, that every applied step that replaced
 * values passed the numeric check (not skipped), runs the verifier on the result, and runs
 * the whole graph before and after in the interpreter on the same seeded inputs.
 */
#include <glib.h>
#include <stdarg.h>
#include <string.h>

#include "ops/ox_interp.h"
#include "ops/ox_shape.h"
#include "passes/ox_pass.h"
#include "passes/ox_pattern.h"

static OxGraph *g;

static void infer(OxNodeId id) {
  OxMeta m;
  char err[256];
  if (ox_shape_infer_node(g, id, &m, err, sizeof err) == 0) {
    m.inferred = true;
    ox_graph_set_meta(g, id, &m);
  }
}

static OxNodeId ph(const char *name, int rank, ...) {
  OxNodeId id = ox_graph_add_node(g, OX_OP_PLACEHOLDER, name, name, ox_value_none(), ox_value_none());
  OxMeta m = {0};
  m.kind = OX_META_TENSOR;
  m.n = 1;
  m.t = ox_graph_tensor_meta_new(g, OX_DT_F32, rank);
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) m.t->shape[i].v = va_arg(ap, int64_t);
  va_end(ap);
  ox_graph_set_meta(g, id, &m);
  return id;
}

static OxNodeId fn(const char *target, OxValue args, OxValue kwargs) {
  OxNodeId id = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, target, args, kwargs);
  infer(id);
  return id;
}

static OxNodeId meth(const char *target, OxValue args, OxValue kwargs) {
  OxNodeId id = ox_graph_add_node(g, OX_OP_CALL_METHOD, NULL, target, args, kwargs);
  infer(id);
  return id;
}

static OxValue A(uint32_t n, ...) {
  OxValue items[16];
  va_list ap;
  va_start(ap, n);
  for (uint32_t i = 0; i < n; i++) items[i] = va_arg(ap, OxValue);
  va_end(ap);
  return ox_graph_value_seq(g, OX_V_TUPLE, items, n);
}

static OxValue N(OxNodeId id) { return ox_value_node(id); }
static OxValue Iv(int64_t i) { return ox_value_int(i); }
static OxValue NONE(void) { return ox_value_none(); }

static OxValue LI(uint32_t n, const int64_t *a) {
  OxValue items[64];
  for (uint32_t i = 0; i < n; i++) items[i] = ox_value_int(a[i]);
  return ox_graph_value_seq(g, OX_V_LIST, items, n);
}

static OxValue LN(uint32_t n, const OxNodeId *a) {
  OxValue items[64];
  for (uint32_t i = 0; i < n; i++) items[i] = ox_value_node(a[i]);
  return ox_graph_value_seq(g, OX_V_LIST, items, n);
}

static OxValue KW(const char *k, OxValue v) { return ox_graph_value_dict(g, &k, &v, 1); }

static OxNodeId gi(OxNodeId x, int64_t k) { return fn("operator.getitem", A(2, N(x), Iv(k)), NONE()); }

static void out(uint32_t n, const OxNodeId *ids) {
  OxValue items[64];
  for (uint32_t i = 0; i < n; i++) items[i] = ox_value_node(ids[i]);
  OxValue t = ox_graph_value_seq(g, OX_V_TUPLE, items, n);
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", A(1, t), NONE());
}

static void begin(void) { g = ox_graph_new(); }

/* ---------------------------------------------------------------- running and checking */

static void compare_rt(const OxRtValue *a, const OxRtValue *b, const char *where) {
  g_assert_nonnull(a);
  g_assert_nonnull(b);
  g_assert_cmpint(a->kind, ==, b->kind);
  if (a->kind == OX_RT_TENSOR) {
    OxCompare res;
    if (!ox_tensor_compare(b->u.t, a->u.t, NULL, &res)) g_error("%s: values differ: %s", where, res.why);
  } else if (a->kind == OX_RT_TUPLE || a->kind == OX_RT_LIST) {
    g_assert_cmpuint(a->n, ==, b->n);
    for (uint32_t i = 0; i < a->n; i++) compare_rt(a->u.items[i], b->u.items[i], where);
  }
}

/* whole graph before vs after, same seeded placeholders */
static void numeric_equal(const OxGraph *before, const OxGraph *after) {
  OxInterp *ia = ox_interp_new(before, 1337), *ib = ox_interp_new(after, 1337);
  char err[256];
  if (ox_interp_run(ia, NULL, 0, err, sizeof err) != 0) g_error("before: %s", err);
  if (ox_interp_run(ib, NULL, 0, err, sizeof err) != 0) g_error("after: %s", err);
  compare_rt(ox_interp_value(ia, ox_graph_output(before)), ox_interp_value(ib, ox_graph_output(after)), "output");
  ox_interp_free(ia);
  ox_interp_free(ib);
}

/* Every rewrite runs with the per-step numeric check on (STEP) and, where it matters, the
 * whole-graph interpreter comparison (WHOLE). Rewrites that read an ancestor of what the
 * replaced nodes read (mutate_cat: x[0:100] instead of cat(getitem_0, getitem_1);
 * split_cat_aten; move_view_after_cat) exercise the check's closing of the two regions over
 * a common boundary (ox_check_numeric.c). */
typedef struct Run {
  OxTrace *tr;
  OxGraph *before;
} Run;

/* Runs the comma-separated passes with options "pass.key=value" (NULL-terminated list). */
/* flags: WHOLE = whole-graph interpreter comparison; STEP = per-step numeric check on. */
enum { WHOLE = 1, STEP = 2 };
static Run run_opts(const char *passes, int flags, ...) {
  bool numeric_whole = (flags & WHOLE) != 0;
  Run r;
  r.before = ox_graph_clone(g);
  OxPipeline p;
  OxDiagList d;
  ox_diags_init(&d, "test");
  if (passes[0]) {
    g_assert_cmpint(ox_pipeline_from_list(passes, &p, &d), ==, 0);
  } else {
    memset(&p, 0, sizeof p);
  }
  va_list ap;
  va_start(ap, flags);
  for (const char *o; (o = va_arg(ap, const char *)) != NULL;) g_assert_cmpint(ox_pipeline_set_option(&p, o, &d), ==, 0);
  va_end(ap);
  OxCheckConfig checks;
  ox_check_config_default(&checks);
  checks.numeric = (flags & STEP) != 0;
  r.tr = ox_trace_new();
  OxOptimizeResult res;
  g_assert_cmpint(ox_optimize(g, &p, &checks, r.tr, &res, &d), ==, 0);
  ox_pipeline_free(&p);
  /* no step failed a check; every applied step that replaced values passed numerically */
  for (uint32_t i = 0; i < r.tr->n_steps; i++) {
    const OxStep *s = &r.tr->steps[i];
    if (s->kind == OX_STEP_CHECK_FAILED) {
      char *why = ox_reason_format(&s->reason);
      g_error("step %u (%s/%s at %s) failed a check: %s", s->seq, s->pass, s->rule, s->anchor, why);
    }
    if (s->kind != OX_STEP_APPLIED) continue;
    for (int k = 0; k < OX_CHECK_KINDS; k++) g_assert_cmpint(s->checks[k].status, !=, OX_CHECK_FAILED);
    g_assert_cmpint(s->checks[OX_CHECK_STRUCTURE].status, ==, OX_CHECK_PASSED);
    if ((flags & STEP) && s->n_removed > 0 && s->n_prov > 0 && s->checks[OX_CHECK_NUMERIC].status != OX_CHECK_PASSED)
      g_error("step %u (%s/%s at %s): numeric check %s: %s", s->seq, s->pass, s->rule, s->anchor,
              ox_check_status_name((OxCheckStatus)s->checks[OX_CHECK_NUMERIC].status),
              s->checks[OX_CHECK_NUMERIC].detail ? s->checks[OX_CHECK_NUMERIC].detail : "");
  }
  if (g_getenv("OX_TEST_DUMP"))
    for (uint32_t i = 0; i < r.tr->n_steps; i++) {
      const OxStep *s = &r.tr->steps[i];
      char *why = s->kind == OX_STEP_APPLIED ? NULL : ox_reason_format(&s->reason);
      g_printerr("step %u %s %s/%s at %s: %s\n", s->seq, s->kind == OX_STEP_APPLIED ? "applied" : "rejected", s->pass,
                 s->rule, s->anchor, why ? why : "");
      g_free(why);
    }
  OxDiagList vd;
  ox_diags_init(&vd, "verify");
  int errs = ox_graph_verify(g, true, &vd);
  if (errs) g_error("verify: %s", vd.items[0].msg);
  ox_diags_clear(&vd);
  ox_diags_clear(&d);
  if (numeric_whole) numeric_equal(r.before, g);
  return r;
}

#define run(passes) run_opts(passes, WHOLE | STEP, NULL)

static void run_free(Run *r) {
  ox_trace_free(r->tr);
  ox_graph_free(r->before);
  ox_graph_free(g);
  g = NULL;
}

static int64_t ctr(const Run *r, const char *name) {
  for (uint32_t i = 0; i < r->tr->n_counters; i++)
    if (!strcmp(r->tr->counter_names[i], name)) return r->tr->counter_values[i];
  return 0;
}

static void assert_scmerge(const Run *r, int64_t split_added, int64_t split_removed, int64_t cat_added,
                           int64_t cat_removed, int64_t sections_removed) {
  g_assert_cmpint(ctr(r, "scmerge_split_added"), ==, split_added);
  g_assert_cmpint(ctr(r, "scmerge_split_removed"), ==, split_removed);
  g_assert_cmpint(ctr(r, "scmerge_cat_added"), ==, cat_added);
  g_assert_cmpint(ctr(r, "scmerge_cat_removed"), ==, cat_removed);
  g_assert_cmpint(ctr(r, "scmerge_split_sections_removed"), ==, sections_removed);
}

static uint32_t count_op(OxOpId op) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id) {
    if (ox_op_of_node(g, &g->nodes[id], NULL) == op) n++;
  }
  return n;
}

/* the k-th output value's node */
static OxNodeId out_arg(uint32_t k) {
  const OxNode *o = &g->nodes[ox_graph_output(g)];
  const OxValue *t = &o->args.u.items[0];
  g_assert_cmpuint(k, <, t->n);
  g_assert_cmpint(t->u.items[k].kind, ==, OX_V_NODE);
  return t->u.items[k].u.node;
}

static OxOpId opat(OxNodeId id) { return ox_op_of_node(g, &g->nodes[id], NULL); }

static OxNodeId arg_node(OxNodeId id, uint32_t i) {
  g_assert_cmpint(g->nodes[id].args.u.items[i].kind, ==, OX_V_NODE);
  return g->nodes[id].args.u.items[i].u.node;
}

/* the only live split node */
static OxNodeId the_split(void) {
  OxNodeId s = 0;
  OX_GRAPH_FOREACH(g, id) {
    OxOpId op = opat(id);
    if (op == OX_OPID_SPLIT || op == OX_OPID_SPLIT_WITH_SIZES) {
      g_assert_cmpuint(s, ==, 0);
      s = id;
    }
  }
  g_assert_cmpuint(s, !=, 0);
  return s;
}

static void assert_sections(OxNodeId s, uint32_t n, const int64_t *want) {
  const OxValue *l = &g->nodes[s].args.u.items[1];
  g_assert_cmpuint(l->n, ==, n);
  for (uint32_t i = 0; i < n; i++) g_assert_cmpint(l->u.items[i].u.i, ==, want[i]);
}

/* ---------------------------------------------------------------- G12 normalization */

static int64_t kwarg_dim(OxNodeId n);

/* split(x, ...) and getitems of every piece to the output */
static void split_all_out(OxNodeId s, uint32_t pieces) {
  OxNodeId o[64];
  for (uint32_t i = 0; i < pieces; i++) o[i] = gi(s, i);
  out(pieces, o);
}

static void test_g12_normalization(void) {
  struct {
    const char *what;
    int64_t want;
  } cases[] = {{"split(x,2,1)", 1},  {"split(x,2,0)", 1},       {"kwargs", 1}, {"tensor= dim=-1", 1},
               {"canonical", 0},     {"x.split(3,1)", 1},       {"x.split([16,16],dim=-1)", 1}};
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    begin();
    OxNodeId x = ph("x", 2, (int64_t)2, (int64_t)32), s;
    uint32_t pieces = 16;
    int64_t sec16[] = {16, 16};
    switch (c) {
    case 0: s = fn("torch.split", A(3, N(x), Iv(2), Iv(1)), NONE()); break;
    case 1: s = fn("torch.split", A(3, N(x), Iv(2), Iv(0)), NONE()); pieces = 1; break;
    case 2: {
      const char *k[] = {"split_size_or_sections", "dim"};
      OxValue v[] = {Iv(2), Iv(1)};
      s = fn("torch.split", A(1, N(x)), ox_graph_value_dict(g, k, v, 2));
      break;
    }
    case 3: {
      const char *k[] = {"tensor", "split_size_or_sections", "dim"};
      OxValue v[] = {N(x), Iv(2), Iv(-1)};
      s = fn("torch.split", A(0), ox_graph_value_dict(g, k, v, 3));
      break;
    }
    case 4: s = fn("torch.split", A(2, N(x), LI(2, sec16)), KW("dim", Iv(1))); pieces = 2; break;
    case 5: s = meth("split", A(3, N(x), Iv(3), Iv(1)), NONE()); pieces = 11; break;
    default: s = meth("split", A(2, N(x), LI(2, sec16)), KW("dim", Iv(-1))); pieces = 2; break;
    }
    split_all_out(s, pieces);
    Run r = run("normalization_pass");
    if (ctr(&r, "normalization_pass") != cases[c].want)
      g_error("%s: normalization_pass %lld, want %lld", cases[c].what, (long long)ctr(&r, "normalization_pass"),
              (long long)cases[c].want);
    OxNodeId ns = the_split();
    g_assert_cmpstr(g->nodes[ns].target, ==, "torch.split");
    g_assert_cmpint(kwarg_dim(ns), >=, 0);
    if (c == 3) g_assert_cmpint(kwarg_dim(ns), ==, 1);
    if (c == 5) { /* sections read from meta, short last chunk (#197080) */
      int64_t want[] = {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2};
      assert_sections(ns, 11, want);
    }
    run_free(&r);
  }
}

static void test_g12_nested_and_dynamic(void) {
  /* nested [split(s,2,1) for s in split(x,2,1)] -> 17 */
  begin();
  OxNodeId x = ph("x", 2, (int64_t)2, (int64_t)32);
  OxNodeId s = fn("torch.split", A(3, N(x), Iv(2), Iv(1)), NONE());
  OxNodeId o[16];
  for (int i = 0; i < 16; i++) {
    OxNodeId inner = fn("torch.split", A(3, N(gi(s, i)), Iv(2), Iv(1)), NONE());
    o[i] = gi(inner, 0);
  }
  out(16, o);
  Run r = run("normalization_pass");
  g_assert_cmpint(ctr(&r, "normalization_pass"), ==, 17);
  run_free(&r);

  /* x.reshape(4, 16) with a dynamic dim is left alone */
  begin();
  OxNodeId y = ph("y", 2, (int64_t)2, (int64_t)32);
  g->nodes[y].meta.t->shape[0].sym = ox_graph_intern(g, "s0");
  OxNodeId rs = meth("reshape", A(3, N(y), Iv(4), Iv(16)), NONE());
  out(1, &rs);
  r = run_opts("normalization_pass", STEP, NULL);
  g_assert_cmpint(ctr(&r, "normalization_pass"), ==, 0);
  g_assert_cmpint(g->nodes[out_arg(0)].op, ==, OX_OP_CALL_METHOD);
  run_free(&r);
}

static int64_t kwarg_dim(OxNodeId n) {
  const OxNode *x = &g->nodes[n];
  for (uint32_t i = 0; i < x->kwargs.n; i++)
    if (!strcmp(x->kwargs.keys[i], "dim")) return x->kwargs.u.items[i].u.i;
  return -99;
}

/* ---------------------------------------------------------------- G13 merge_splits */

static void test_g13_merge_splits(void) {
  begin();
  OxNodeId x = ph("x", 2, (int64_t)2, (int64_t)32);
  int64_t s1[] = {10, 10, 12}, a[] = {4, 6}, b[] = {6, 4}, c[] = {4, 4, 4};
  OxNodeId fs = fn("torch.split", A(3, N(x), LI(3, s1), Iv(1)), NONE());
  OxNodeId i0 = meth("split", A(2, N(gi(fs, 0)), LI(2, a)), KW("dim", Iv(1)));
  OxNodeId i1 = meth("split", A(2, N(gi(fs, 1)), LI(2, b)), KW("dim", Iv(1)));
  OxNodeId i2 = meth("split", A(2, N(gi(fs, 2)), LI(3, c)), KW("dim", Iv(1)));
  OxNodeId o[7];
  uint32_t k = 0;
  for (int i = 0; i < 2; i++) o[k++] = fn("torch.relu", A(1, N(gi(i0, i))), NONE());
  for (int i = 0; i < 2; i++) o[k++] = fn("torch.relu", A(1, N(gi(i1, i))), NONE());
  for (int i = 0; i < 3; i++) o[k++] = fn("torch.relu", A(1, N(gi(i2, i))), NONE());
  out(k, o);
  Run r = run("normalization_pass,remove_split_with_size_one_pass,merge_splits_pass");
  g_assert_cmpint(ctr(&r, "merge_splits_pass"), ==, 3);
  int64_t want[] = {4, 6, 6, 4, 4, 4, 4};
  assert_sections(the_split(), 7, want);
  g_assert_cmpint(kwarg_dim(the_split()), ==, 1);
  run_free(&r);
}

static void test_g13_merge_splits_negative(void) {
  /* split(s, 2, dim=0) of a dim-1 split: dims differ */
  begin();
  OxNodeId x = ph("x", 2, (int64_t)4, (int64_t)32);
  OxNodeId s = fn("torch.split", A(3, N(x), Iv(16), Iv(1)), NONE());
  OxNodeId in = fn("torch.split", A(2, N(gi(s, 0)), Iv(2)), KW("dim", Iv(0)));
  OxNodeId o[] = {gi(in, 0), gi(in, 1), gi(s, 1)};
  out(3, o);
  Run r = run("normalization_pass,remove_split_with_size_one_pass,merge_splits_pass");
  g_assert_cmpint(ctr(&r, "merge_splits_pass"), ==, 0);
  /* the rejection names the dim conflict */
  bool seen = false;
  for (uint32_t i = 0; i < r.tr->n_steps; i++)
    if (r.tr->steps[i].kind == OX_STEP_REJECTED && !strcmp(r.tr->steps[i].pass, "merge_splits_pass") &&
        r.tr->steps[i].reason.code == OX_REASON_CAPTURE_CONFLICT)
      seen = true;
  g_assert_true(seen);
  run_free(&r);

  /* [split(s,2,1) for s in split(x,2,1)]: inner splits have one section, removed first -> 0;
   * [split(s,1,1) for s in split(x,2,1)] -> 16 */
  for (int variant = 0; variant < 2; variant++) {
    begin();
    x = ph("x", 2, (int64_t)2, (int64_t)32);
    s = fn("torch.split", A(3, N(x), Iv(2), Iv(1)), NONE());
    OxNodeId os[32];
    uint32_t k = 0;
    for (int i = 0; i < 16; i++) {
      OxNodeId inner = fn("torch.split", A(3, N(gi(s, i)), Iv(variant ? 1 : 2), Iv(1)), NONE());
      for (int j = 0; j < (variant ? 2 : 1); j++) os[k++] = gi(inner, j);
    }
    out(k, os);
    r = run("normalization_pass,remove_split_with_size_one_pass,merge_splits_pass");
    g_assert_cmpint(ctr(&r, "merge_splits_pass"), ==, variant ? 16 : 0);
    g_assert_cmpint(ctr(&r, "remove_split_with_size_one_pass"), ==, variant ? 0 : 16);
    run_free(&r);
  }

  /* split(x,[16,16],1) then split(s,2,1) of both -> 2 */
  begin();
  x = ph("x", 2, (int64_t)2, (int64_t)32);
  int64_t sec[] = {16, 16};
  s = fn("torch.split", A(3, N(x), LI(2, sec), Iv(1)), NONE());
  OxNodeId os[16];
  for (int i = 0; i < 2; i++) {
    OxNodeId inner = fn("torch.split", A(3, N(gi(s, i)), Iv(2), Iv(1)), NONE());
    for (int j = 0; j < 8; j++) os[i * 8 + j] = gi(inner, j);
  }
  out(16, os);
  r = run("normalization_pass,remove_split_with_size_one_pass,merge_splits_pass");
  g_assert_cmpint(ctr(&r, "merge_splits_pass"), ==, 2);
  run_free(&r);
}

/* ---------------------------------------------------------------- G14 mutate_cat */

static void test_g14_mutate_cat(void) {
  begin();
  OxNodeId x = ph("x", 2, (int64_t)500, (int64_t)500);
  int64_t sec[] = {50, 50, 200, 20, 20, 20, 20, 20, 40, 10, 50};
  OxNodeId l = fn("torch.split", A(3, N(x), LI(11, sec), Iv(0)), NONE());
  OxNodeId p[11];
  for (int i = 0; i < 11; i++) p[i] = gi(l, i);
  OxNodeId c_all = fn("torch.cat", A(2, LN(11, p), Iv(0)), NONE());
  OxNodeId two[] = {p[0], p[1]}, gap[] = {p[0], p[10]};
  OxNodeId c01 = fn("torch.cat", A(2, LN(2, two), Iv(0)), NONE());
  OxNodeId c0a = fn("torch.cat", A(2, LN(2, gap), Iv(0)), NONE());
  OxNodeId o[] = {c_all, c01, c0a};
  out(3, o);
  Run r = run_opts("normalization_pass,merge_getitem_cat_pass,mutate_cat_pass", WHOLE | STEP, NULL);
  g_assert_cmpint(ctr(&r, "mutate_cat_pass"), ==, 2);
  g_assert_cmpint(ctr(&r, "merge_getitem_cat_pass"), ==, 0);
  g_assert_cmpstr(g->nodes[out_arg(0)].name, ==, "x");
  g_assert_cmpint(opat(out_arg(1)), ==, OX_OPID_GETITEM); /* x[0:100] */
  g_assert_cmpstr(g->nodes[arg_node(out_arg(1), 0)].name, ==, "x");
  g_assert_cmpint(opat(out_arg(2)), ==, OX_OPID_CAT); /* non-consecutive: untouched */
  run_free(&r);
}

static void test_g14_contrast_merge_getitem_cat(void) {
  begin();
  OxNodeId x = ph("x", 2, (int64_t)2, (int64_t)32);
  OxNodeId s = fn("torch.split", A(2, N(x), Iv(4)), KW("dim", Iv(1)));
  OxNodeId p[8];
  for (int i = 0; i < 8; i++) p[i] = gi(s, i);
  OxNodeId c = fn("torch.cat", A(1, LN(8, p)), KW("dim", Iv(1)));
  out(1, &c);
  Run r = run("normalization_pass,merge_getitem_cat_pass,merge_splits_pass,mutate_cat_pass,split_cat_pass");
  g_assert_cmpint(ctr(&r, "merge_getitem_cat_pass"), ==, 1);
  assert_scmerge(&r, 0, 0, 0, 0, 0);
  OxNodeId o = out_arg(0);
  g_assert_cmpint(opat(o), ==, OX_OPID_GETITEM);
  int64_t want[] = {32};
  assert_sections(arg_node(o, 0), 1, want);
  run_free(&r);
}

/* ---------------------------------------------------------------- G15-G17 split_cat */

static void test_g15_split_cat_dim_mismatch(void) {
  begin();
  OxNodeId x = ph("x", 4, (int64_t)2, (int64_t)32, (int64_t)32, (int64_t)16);
  OxNodeId s = fn("torch.split", A(2, N(x), Iv(4)), KW("dim", Iv(1)));
  OxNodeId p[8];
  for (int i = 0; i < 8; i++) p[i] = gi(s, i);
  OxNodeId c = fn("torch.cat", A(1, LN(8, p)), KW("dim", Iv(-2)));
  out(1, &c);
  Run r = run("normalization_pass,split_cat_pass");
  assert_scmerge(&r, 0, 1, 0, 1, 7);
  g_assert_cmpint(ctr(&r, "split_cat_pass"), ==, 1);
  OxNodeId f = out_arg(0);
  g_assert_cmpint(opat(f), ==, OX_OPID_FLATTEN);
  OxNodeId mv = arg_node(f, 0);
  g_assert_cmpint(opat(mv), ==, OX_OPID_MOVEDIM);
  OxNodeId uf = arg_node(mv, 0);
  g_assert_cmpint(opat(uf), ==, OX_OPID_UNFLATTEN);
  g_assert_cmpstr(g->nodes[arg_node(uf, 0)].name, ==, "x");
  char buf[64];
  ox_meta_format(&g->nodes[f].meta, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "f32[2, 4, 256, 16]");
  g_assert_cmpuint(count_op(OX_OPID_SPLIT) + count_op(OX_OPID_SPLIT_WITH_SIZES), ==, 0);
  run_free(&r);
}

static void test_g16_split_stack(void) {
  begin();
  OxNodeId x = ph("x", 4, (int64_t)2, (int64_t)32, (int64_t)32, (int64_t)16);
  OxNodeId s = fn("torch.split", A(2, N(x), Iv(4)), KW("dim", Iv(1)));
  OxNodeId p[8];
  for (int i = 0; i < 8; i++) p[i] = gi(s, i);
  OxNodeId c = fn("torch.stack", A(1, LN(8, p)), KW("dim", Iv(1)));
  out(1, &c);
  Run r = run("normalization_pass,split_cat_pass");
  assert_scmerge(&r, 0, 1, 0, 1, 7);
  OxNodeId uf = out_arg(0);
  g_assert_cmpint(opat(uf), ==, OX_OPID_UNFLATTEN);
  char buf[64];
  ox_meta_format(&g->nodes[uf].meta, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "f32[2, 8, 4, 32, 16]");
  run_free(&r);
}

static void test_g17_input_shuffling(void) {
  begin();
  OxNodeId x = ph("x", 4, (int64_t)2, (int64_t)32, (int64_t)32, (int64_t)16);
  OxNodeId ones = ph("ones", 4, (int64_t)2, (int64_t)4, (int64_t)32, (int64_t)16);
  OxNodeId s = fn("torch.split", A(2, N(x), Iv(4)), KW("dim", Iv(1)));
  OxNodeId in[] = {ones, gi(s, 1), gi(s, 2), gi(s, 3), ones, gi(s, 5), gi(s, 6), gi(s, 7), ones};
  OxNodeId c = fn("torch.cat", A(1, LN(9, in)), KW("dim", Iv(1)));
  out(1, &c);
  Run r = run("normalization_pass,split_cat_pass");
  assert_scmerge(&r, 1, 1, 1, 1, 4);
  int64_t want[] = {4, 12, 4, 12};
  assert_sections(the_split(), 4, want);
  OxNodeId nc = out_arg(0);
  g_assert_cmpint(opat(nc), ==, OX_OPID_CAT);
  const OxValue *l = &g->nodes[nc].args.u.items[0];
  g_assert_cmpuint(l->n, ==, 5);
  g_assert_cmpuint(l->u.items[0].u.node, ==, ones);
  g_assert_cmpuint(l->u.items[2].u.node, ==, ones);
  g_assert_cmpint(g->nodes[l->u.items[1].u.node].args.u.items[1].u.i, ==, 1);
  g_assert_cmpint(g->nodes[l->u.items[3].u.node].args.u.items[1].u.i, ==, 3);
  run_free(&r);
}

static void test_g17_multi_user(void) {
  begin();
  OxNodeId x = ph("x", 4, (int64_t)2, (int64_t)32, (int64_t)32, (int64_t)16);
  OxNodeId o4 = ph("o", 4, (int64_t)2, (int64_t)4, (int64_t)32, (int64_t)16);
  OxNodeId s = fn("torch.split", A(2, N(x), Iv(4)), KW("dim", Iv(1)));
  OxNodeId p[8];
  for (int i = 0; i < 8; i++) p[i] = gi(s, i);
  OxNodeId ci[] = {o4, p[0], p[1], p[2], o4};
  OxNodeId c = fn("torch.cat", A(1, LN(5, ci)), KW("dim", Iv(2)));
  OxNodeId si[] = {o4, p[4], p[5]};
  OxNodeId st = fn("torch.stack", A(1, LN(3, si)), KW("dim", Iv(1)));
  OxNodeId rl = fn("torch.relu", A(1, N(p[6])), NONE());
  OxNodeId o[] = {c, st, rl};
  out(3, o);
  Run r = run("normalization_pass,split_cat_pass");
  assert_scmerge(&r, 1, 1, 2, 2, 3);
  int64_t want[] = {12, 4, 8, 4, 4};
  assert_sections(the_split(), 5, want);
  run_free(&r);
}

/* ---------------------------------------------------------------- G18 unbind/stack */

static void test_g18_unbind_stack(void) {
  for (int variant = 0; variant < 4; variant++) {
    begin();
    OxNodeId x = ph("x", 4, (int64_t)2, (int64_t)32, (int64_t)32, (int64_t)16);
    OxNodeId ones = ph("ones", 3, (int64_t)2, (int64_t)32, (int64_t)16);
    OxNodeId u = fn("torch.unbind", A(2, N(x), Iv(1)), NONE());
    OxNodeId p[34];
    uint32_t k = 0;
    if (variant == 2) p[k++] = ones;
    for (int i = 0; i < 32; i++) p[k++] = gi(u, i);
    if (variant == 2) p[k++] = ones;
    OxNodeId res;
    OxNodeId extra = 0;
    if (variant == 2) res = fn("torch.cat", A(1, LN(k, p)), KW("dim", Iv(1)));
    else res = fn("torch.stack", A(2, LN(k, p), Iv(variant == 1 ? 0 : 1)), NONE());
    if (variant == 3) extra = fn("torch.relu", A(1, N(p[3])), NONE()); /* another user of a raw piece */
    OxNodeId o[] = {res, extra};
    out(variant == 3 ? 2 : 1, o);
    Run r = run("normalization_pass,unbind_stack_pass");
    if (variant == 3) {
      g_assert_cmpint(ctr(&r, "unbind_stack_pass"), ==, 0);
      g_assert_cmpint(opat(out_arg(0)), ==, OX_OPID_STACK);
    } else {
      g_assert_cmpint(ctr(&r, "unbind_stack_pass"), ==, 1);
      assert_scmerge(&r, 0, 1, variant == 2 ? 1 : 0, 1, 31);
      g_assert_cmpint(ctr(&r, "normalization_pass"), ==, variant == 2 ? 1 : 2);
    }
    if (variant == 0) g_assert_cmpuint(out_arg(0), ==, x);
    if (variant == 1) {
      g_assert_cmpint(opat(out_arg(0)), ==, OX_OPID_MOVEDIM);
      g_assert_cmpuint(arg_node(out_arg(0), 0), ==, x);
    }
    if (variant == 2) {
      OxNodeId c = out_arg(0);
      const OxValue *l = &g->nodes[c].args.u.items[0];
      g_assert_cmpuint(l->n, ==, 3);
      OxNodeId f = l->u.items[1].u.node;
      g_assert_cmpint(opat(f), ==, OX_OPID_FLATTEN);
      char buf[64];
      ox_meta_format(&g->nodes[f].meta, buf, sizeof buf);
      g_assert_cmpstr(buf, ==, "f32[2, 1024, 16]");
    }
    run_free(&r);
  }
}

/* ---------------------------------------------------------------- G19 split + squeeze */

static void test_g19_split_squeeze(void) {
  /* 0: positive; 1: squeeze() without dim; 2: split size 2; 3: squeeze dim 0; 4: extra user */
  for (int variant = 0; variant < 5; variant++) {
    begin();
    OxNodeId x = ph("x", 2, (int64_t)2, (int64_t)32);
    OxNodeId s = fn("torch.split", A(2, N(x), Iv(variant == 2 ? 2 : 1)), KW("dim", Iv(1)));
    uint32_t n = variant == 2 ? 16 : 32;
    OxNodeId q[33];
    OxNodeId extra = 0;
    for (uint32_t i = 0; i < n; i++) {
      OxNodeId p = gi(s, i);
      if (variant == 1) q[i] = fn("torch.squeeze", A(1, N(p)), NONE());
      else q[i] = fn("torch.squeeze", A(2, N(p), Iv(variant == 3 ? 0 : 1)), NONE());
      if (variant == 4 && i == 5) extra = fn("torch.relu", A(1, N(p)), NONE());
    }
    OxNodeId st = variant == 3 ? fn("torch.cat", A(1, LN(n, q)), KW("dim", Iv(0)))
                               : fn("torch.stack", A(1, LN(n, q)), NONE());
    OxNodeId o[] = {st, extra};
    out(variant == 4 ? 2 : 1, o);
    Run r = run("normalization_pass,split_cat_pass");
    g_assert_cmpint(ctr(&r, "split_cat_pass"), ==, variant == 0 ? 1 : 0);
    if (variant == 0) {
      g_assert_cmpuint(count_op(OX_OPID_UNBIND), ==, 1);
      g_assert_cmpuint(count_op(OX_OPID_SQUEEZE), ==, 0);
      g_assert_cmpuint(count_op(OX_OPID_SPLIT) + count_op(OX_OPID_SPLIT_WITH_SIZES), ==, 0);
    } else {
      g_assert_cmpuint(count_op(OX_OPID_UNBIND), ==, 0);
    }
    run_free(&r);
  }
}

/* ---------------------------------------------------------------- G20 merge_getitem_cat */

static void test_g20_merge_getitem_cat(void) {
  begin();
  OxNodeId x = ph("x", 2, (int64_t)500, (int64_t)500);
  int64_t sec[] = {200, 50, 50, 20, 20, 20, 20, 20, 20, 50, 30};
  OxNodeId l = fn("torch.split", A(2, N(x), LI(11, sec)), KW("dim", Iv(1)));
  OxNodeId p[11];
  for (int i = 0; i < 11; i++) p[i] = gi(l, i);
  OxNodeId a[] = {p[0], p[1]}, b[] = {p[9], p[10]};
  OxNodeId c1 = fn("torch.cat", A(2, LN(2, a), Iv(1)), NONE());
  OxNodeId c2 = fn("torch.cat", A(2, LN(2, b), Iv(1)), NONE());
  OxNodeId o[9];
  o[0] = c1;
  for (int i = 2; i <= 8; i++) o[i - 1] = p[i];
  o[8] = c2;
  out(9, o);
  Run r = run("normalization_pass,merge_getitem_cat_pass");
  g_assert_cmpint(ctr(&r, "merge_getitem_cat_pass"), ==, 2);
  int64_t want[] = {250, 50, 20, 20, 20, 20, 20, 20, 80};
  OxNodeId s = the_split();
  assert_sections(s, 9, want);
  g_assert_cmpint(g->nodes[out_arg(0)].args.u.items[1].u.i, ==, 0);
  g_assert_cmpint(g->nodes[out_arg(8)].args.u.items[1].u.i, ==, 8);
  g_assert_cmpuint(count_op(OX_OPID_CAT), ==, 0);
  run_free(&r);
}

/* ---------------------------------------------------------------- G21 split_cat_to_slices */

static void test_g21_split_cat_to_slices(void) {
  begin();
  OxNodeId x = ph("x", 2, (int64_t)500, (int64_t)500);
  OxNodeId other = ph("other", 2, (int64_t)10, (int64_t)500);
  OxNodeId xc = fn("torch.clone", A(1, N(x)), NONE());
  OxNodeId xc2 = fn("torch.clone", A(1, N(x)), NONE());
  int64_t s50[10], s100[5];
  for (int i = 0; i < 10; i++) s50[i] = 50;
  for (int i = 0; i < 5; i++) s100[i] = 100;
  OxNodeId l1 = fn("torch.split", A(2, N(x), LI(10, s50)), KW("dim", Iv(0)));
  OxNodeId l2 = fn("torch.split", A(2, N(xc), LI(10, s50)), KW("dim", Iv(0)));
  OxNodeId l3 = fn("torch.split", A(2, N(xc2), LI(5, s100)), KW("dim", Iv(0)));
  OxNodeId in[26];
  uint32_t k = 0;
  in[k++] = other;
  for (int i = 0; i < 10; i++) in[k++] = gi(l1, i);
  OxNodeId l2p[10];
  for (int i = 0; i < 10; i++) l2p[i] = gi(l2, i);
  for (int i = 4; i < 10; i++) in[k++] = l2p[i];
  for (int i = 0; i < 4; i++) in[k++] = l2p[i];
  for (int i = 0; i < 5; i++) in[k++] = gi(l3, i);
  OxNodeId c = fn("torch.cat", A(1, LN(k, in)), KW("dim", Iv(0)));
  out(1, &c);
  Run r = run("split_cat_to_slices_pass");
  g_assert_cmpint(ctr(&r, "split_cat_to_slices_pass"), ==, 1);
  OxNodeId nc = out_arg(0);
  const OxValue *l = &g->nodes[nc].args.u.items[0];
  g_assert_cmpuint(l->n, ==, 13);
  g_assert_cmpuint(l->u.items[0].u.node, ==, other);
  g_assert_cmpuint(l->u.items[1].u.node, ==, x);
  g_assert_cmpuint(l->u.items[12].u.node, ==, xc2);
  g_assert_cmpuint(l->u.items[2].u.node, ==, l2p[4]);
  run_free(&r);
}

/* ---------------------------------------------------------------- G22 split_cat_aten */

static void test_g22_split_cat_aten(void) {
  for (int variant = 0; variant < 2; variant++) {
    begin();
    OxNodeId x = ph("x", 2, (int64_t)1024, (int64_t)128), y = ph("y", 2, (int64_t)1024, (int64_t)128);
    OxNodeId z = ph("z", 2, (int64_t)1024, (int64_t)32);
    OxNodeId xy[] = {x, y};
    OxNodeId c = fn("torch.ops.aten.cat.default", A(2, LN(2, xy), Iv(1)), NONE());
    OxNodeId s = fn("torch.ops.aten.split.Tensor", A(3, N(c), Iv(32), Iv(1)), NONE());
    OxNodeId p[8];
    for (int i = 0; i < 8; i++) p[i] = gi(s, i);
    OxNodeId res;
    if (variant == 0) {
      OxNodeId c1 = fn("torch.ops.aten.cat.default", A(2, LN(8, p), Iv(1)), NONE());
      OxNodeId s0z[] = {p[0], z};
      OxNodeId c2 = fn("torch.ops.aten.cat.default", A(2, LN(2, s0z), Iv(1)), NONE());
      OxNodeId cc[] = {c1, c2};
      res = fn("torch.ops.aten.cat.default", A(2, LN(2, cc), Iv(1)), NONE());
      OxNodeId o[] = {res, c2};
      out(2, o);
      Run r = run_opts("normalization_aten_pass,split_cat_aten_pass", WHOLE | STEP, "split_cat_aten_pass.threshold_to_cat=5", NULL);
      g_assert_cmpint(ctr(&r, "normalization_aten_pass"), ==, 5);
      g_assert_cmpint(ctr(&r, "split_cat_aten_pass"), ==, 1);
      OxNodeId nc1 = g->nodes[out_arg(0)].args.u.items[0].u.items[0].u.node; /* the rewritten c1 */
      const OxValue *l = &g->nodes[nc1].args.u.items[0];
      g_assert_cmpint(opat(nc1), ==, OX_OPID_CAT);
      g_assert_cmpuint(l->n, ==, 1);
      g_assert_cmpuint(l->u.items[0].u.node, ==, c);
      g_assert_cmpuint(g->nodes[c2].args.u.items[0].n, ==, 2); /* 2 inputs < threshold */
      for (int i = 1; i < 8; i++) g_assert_true(g->nodes[p[i]].erased);
      g_assert_false(g->nodes[p[0]].erased);
      run_free(&r);
    } else {
      OxNodeId one[] = {p[0]};
      OxNodeId c1 = fn("torch.ops.aten.cat.default", A(2, LN(1, one), Iv(1)), NONE());
      OxNodeId cz[] = {c1, z};
      res = fn("torch.ops.aten.cat.default", A(2, LN(2, cz), Iv(1)), NONE());
      OxNodeId o[8];
      o[0] = res;
      for (int i = 1; i < 8; i++) o[i] = p[i];
      out(8, o);
      Run r = run_opts("normalization_aten_pass,split_cat_aten_pass", WHOLE | STEP, "split_cat_aten_pass.threshold_to_cat=5", NULL);
      g_assert_cmpint(ctr(&r, "normalization_aten_pass"), ==, 4);
      g_assert_cmpint(ctr(&r, "split_cat_aten_pass"), ==, 0);
      run_free(&r);
    }
  }
}

static void test_aten_split_short_chunk(void) {
  /* #197080: split(x[*, 10], 4) has sections [4, 4, 2], not [4, 4, 4] */
  begin();
  OxNodeId x = ph("x", 2, (int64_t)3, (int64_t)10);
  OxNodeId s = fn("torch.ops.aten.split.Tensor", A(3, N(x), Iv(4), Iv(-1)), NONE());
  OxNodeId o[] = {gi(s, 0), gi(s, 1), gi(s, 2)};
  out(3, o);
  Run r = run("normalization_aten_pass");
  g_assert_cmpint(ctr(&r, "normalization_aten_pass"), ==, 1);
  OxNodeId ns = the_split();
  g_assert_cmpstr(g->nodes[ns].target, ==, "torch.ops.aten.split_with_sizes.default");
  int64_t want[] = {4, 4, 2};
  assert_sections(ns, 3, want);
  g_assert_cmpint(g->nodes[ns].args.u.items[2].u.i, ==, 1);
  run_free(&r);
}

/* ---------------------------------------------------------------- G23 select_cat_aten */

static void test_g23_select_cat_aten(void) {
  begin();
  OxNodeId t[4];
  const char *names[] = {"x", "x2", "x3", "y"};
  for (int i = 0; i < 4; i++) t[i] = ph(names[i], 3, (int64_t)64, (int64_t)6, (int64_t)128);
  OxNodeId res[4];
  /* x: all 6 selects; x2: 0..4 of 6; x3: 0,2,4; y: 0..4 only (5 users) */
  int which[4][6] = {{0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, -1}, {0, 2, 4, -1, -1, -1}, {0, 1, 2, 3, 4, -1}};
  for (int j = 0; j < 4; j++) {
    OxNodeId sel[6];
    uint32_t n = 0;
    for (int i = 0; i < 6 && which[j][i] >= 0; i++)
      sel[n++] = fn("torch.ops.aten.select.int", A(3, N(t[j]), Iv(1), Iv(which[j][i])), NONE());
    if (j == 1) fn("torch.ops.aten.select.int", A(3, N(t[j]), Iv(1), Iv(5)), NONE()); /* the 6th, unused by the cat */
    res[j] = fn("torch.ops.aten.cat.default", A(2, LN(n, sel), Iv(1)), NONE());
  }
  out(4, res);
  Run r = run("normalization_aten_pass,select_cat_aten_pass");
  g_assert_cmpint(ctr(&r, "normalization_aten_pass"), ==, 4);
  g_assert_cmpint(ctr(&r, "select_cat_aten_pass"), ==, 1);
  OxNodeId v = out_arg(0);
  g_assert_cmpint(opat(v), ==, OX_OPID_VIEW);
  g_assert_cmpuint(arg_node(v, 0), ==, t[0]);
  for (int j = 1; j < 4; j++) g_assert_cmpint(opat(out_arg((uint32_t)j)), ==, OX_OPID_CAT);
  run_free(&r);
}

/* ---------------------------------------------------------------- G24 move_view_after_cat_aten */

static void test_g24_move_view_after_cat(void) {
  begin();
  OxNodeId x = ph("x", 3, (int64_t)7, (int64_t)8, (int64_t)96);
  int64_t ones[7] = {1, 1, 1, 1, 1, 1, 1}, shp[] = {8, 96};
  OxNodeId s = fn("torch.ops.aten.split_with_sizes.default", A(3, N(x), LI(7, ones), Iv(0)), NONE());
  OxNodeId v[7];
  for (int i = 0; i < 7; i++) v[i] = fn("torch.ops.aten.reshape.default", A(2, N(gi(s, i)), LI(2, shp)), NONE());
  OxNodeId c = fn("torch.ops.aten.cat.default", A(2, LN(7, v), Iv(1)), NONE());
  OxNodeId cl = fn("torch.ops.aten.clone.default", A(1, N(v[1])), NONE());
  OxNodeId o[] = {c, cl};
  out(2, o);
  Run r = run_opts("normalization_aten_pass,move_view_after_cat_aten_pass", WHOLE | STEP, NULL);
  g_assert_cmpint(ctr(&r, "move_view_after_cat_aten_pass"), ==, 1);
  OxNodeId rs = out_arg(0);
  g_assert_cmpint(opat(rs), ==, OX_OPID_RESHAPE);
  OxNodeId pm = arg_node(rs, 0);
  g_assert_cmpint(opat(pm), ==, OX_OPID_PERMUTE);
  const OxValue *perm = &g->nodes[pm].args.u.items[1];
  g_assert_cmpint(perm->u.items[0].u.i, ==, 1);
  g_assert_cmpint(perm->u.items[1].u.i, ==, 0);
  g_assert_cmpint(perm->u.items[2].u.i, ==, 2);
  char buf[64];
  ox_meta_format(&g->nodes[rs].meta, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "f32[8, 672]");
  run_free(&r);
}

/* ---------------------------------------------------------------- G25 negative controls */

static void test_g25_negative_controls(void) {
  /* (a) empty options: nothing runs even on a mergeable graph */
  begin();
  OxNodeId x = ph("x", 2, (int64_t)2, (int64_t)32);
  int64_t s1[] = {16, 16};
  OxNodeId fs = fn("torch.split", A(3, N(x), LI(2, s1), Iv(1)), NONE());
  OxNodeId in = fn("torch.split", A(3, N(gi(fs, 0)), Iv(8), Iv(1)), NONE());
  OxNodeId o[] = {gi(in, 0), gi(in, 1), gi(fs, 1)};
  out(3, o);
  Run r = run("");
  g_assert_cmpint(ctr(&r, "merge_splits_pass"), ==, 0);
  g_assert_cmpint(ctr(&r, "normalization_pass"), ==, 0);
  g_assert_cmpuint(r.tr->n_steps, ==, 0);
  run_free(&r);

  /* (b) splits[1].copy_(splits[0]); cat(splits, 1): not simplified across the mutation */
  begin();
  x = ph("x", 2, (int64_t)4, (int64_t)32);
  OxNodeId s = fn("torch.split", A(3, N(x), Iv(8), Iv(1)), NONE());
  OxNodeId p[4];
  for (int i = 0; i < 4; i++) p[i] = gi(s, i);
  meth("copy_", A(2, N(p[1]), N(p[0])), NONE());
  OxNodeId c = fn("torch.cat", A(2, LN(4, p), Iv(1)), NONE());
  out(1, &c);
  r = run_opts("normalization_pass,split_cat_pass", STEP, NULL);
  g_assert_cmpint(ctr(&r, "scmerge_split_removed"), ==, 0);
  g_assert_cmpint(ctr(&r, "scmerge_cat_removed"), ==, 0);
  g_assert_cmpint(opat(out_arg(0)), ==, OX_OPID_CAT);
  bool barrier = false;
  for (uint32_t i = 0; i < r.tr->n_steps; i++)
    if (r.tr->steps[i].kind == OX_STEP_REJECTED &&
        (r.tr->steps[i].reason.code == OX_REASON_MUTATION_BARRIER || r.tr->steps[i].reason.code == OX_REASON_MUTATED))
      barrier = true;
  g_assert_true(barrier);
  run_free(&r);

  /* a split with one section is removed; a getitem of a chunk is rewired to the input */
  begin();
  x = ph("x", 2, (int64_t)4, (int64_t)32);
  s = fn("torch.split", A(3, N(x), Iv(32), Iv(1)), NONE());
  OxNodeId rl = fn("torch.relu", A(1, N(gi(s, 0))), NONE());
  out(1, &rl);
  r = run("normalization_pass,remove_split_with_size_one_pass");
  g_assert_cmpint(ctr(&r, "remove_split_with_size_one_pass"), ==, 1);
  g_assert_cmpuint(arg_node(out_arg(0), 0), ==, x);
  run_free(&r);
}

/* ---------------------------------------------------------------- the other passes */

static void test_merge_stack_tahn_unbind(void) {
  begin();
  OxNodeId x = ph("x", 2, (int64_t)4, (int64_t)12);
  OxNodeId s = fn("torch.split", A(3, N(x), Iv(3), Iv(1)), NONE());
  OxNodeId p[4];
  for (int i = 0; i < 4; i++) p[i] = gi(s, i);
  OxNodeId mid[] = {p[1], p[2]};
  OxNodeId st = fn("torch.stack", A(2, LN(2, mid), Iv(-1)), NONE());
  OxNodeId th = fn("torch.tanh", A(1, N(st)), NONE());
  OxNodeId ub = fn("torch.unbind", A(2, N(th), Iv(-1)), NONE());
  OxNodeId o[] = {p[0], fn("torch.relu", A(1, N(gi(ub, 0))), NONE()), fn("torch.relu", A(1, N(gi(ub, 1))), NONE()), p[3]};
  out(4, o);
  Run r = run("normalization_pass,merge_stack_tahn_unbind_pass");
  g_assert_cmpint(ctr(&r, "merge_stack_tahn_unbind_pass"), ==, 1);
  g_assert_cmpuint(count_op(OX_OPID_STACK), ==, 0);
  g_assert_cmpuint(count_op(OX_OPID_UNBIND), ==, 0);
  g_assert_cmpuint(count_op(OX_OPID_TANH), ==, 1);
  run_free(&r);
}

static void test_unbind_cat_to_view(void) {
  begin();
  OxNodeId x = ph("x", 3, (int64_t)3, (int64_t)12, (int64_t)5);
  OxNodeId o4 = ph("o", 2, (int64_t)3, (int64_t)4);
  OxNodeId u = fn("torch.unbind", A(1, N(x)), KW("dim", Iv(1)));
  OxNodeId in[13];
  in[0] = o4;
  for (int i = 0; i < 12; i++) in[i + 1] = gi(u, i);
  OxNodeId c = fn("torch.cat", A(1, LN(13, in)), KW("dim", Iv(1)));
  out(1, &c);
  Run r = run("unbind_cat_to_view_pass");
  g_assert_cmpint(ctr(&r, "unbind_cat_to_view_pass"), ==, 1);
  g_assert_cmpuint(count_op(OX_OPID_UNBIND), ==, 0);
  run_free(&r);
}

static void test_split_stack_to_cats(void) {
  begin();
  OxNodeId x = ph("x", 2, (int64_t)4, (int64_t)20);
  OxNodeId s = fn("torch.split", A(2, N(x), LI(10, (int64_t[]){2, 2, 2, 2, 2, 2, 2, 2, 2, 2})), KW("dim", Iv(1)));
  OxNodeId p[10];
  for (int i = 0; i < 10; i++) p[i] = gi(s, i);
  OxNodeId st = fn("torch.stack", A(1, LN(10, p)), KW("dim", Iv(0)));
  out(1, &st);
  Run r = run("split_stack_to_cats_pass");
  g_assert_cmpint(ctr(&r, "split_stack_to_cats_pass"), ==, 1);
  g_assert_cmpuint(count_op(OX_OPID_SPLIT) + count_op(OX_OPID_SPLIT_WITH_SIZES), ==, 0);
  run_free(&r);
}

static void test_unbind_stack_to_slices(void) {
  begin();
  OxNodeId x = ph("x", 3, (int64_t)3, (int64_t)12, (int64_t)5);
  OxNodeId o2 = ph("o", 2, (int64_t)3, (int64_t)5);
  OxNodeId u = fn("torch.unbind", A(1, N(x)), KW("dim", Iv(1)));
  OxNodeId in[13];
  for (int i = 0; i < 12; i++) in[i] = gi(u, i);
  in[12] = o2;
  OxNodeId st = fn("torch.stack", A(1, LN(13, in)), KW("dim", Iv(2)));
  out(1, &st);
  Run r = run("unbind_stack_to_slices_pass");
  g_assert_cmpint(ctr(&r, "unbind_stack_to_slices_pass"), ==, 1);
  g_assert_cmpuint(count_op(OX_OPID_UNBIND), ==, 0);
  run_free(&r);
}

static void test_move_reshape_out_of_split_stack(void) {
  begin();
  OxNodeId x = ph("x", 2, (int64_t)4, (int64_t)6);
  OxNodeId s = fn("torch.split", A(2, N(x), LI(3, (int64_t[]){2, 2, 2})), KW("dim", Iv(1)));
  OxNodeId rs[3];
  for (int i = 0; i < 3; i++) rs[i] = fn("torch.reshape", A(2, N(gi(s, i)), LI(1, (int64_t[]){8})), NONE());
  OxNodeId st = fn("torch.stack", A(1, LN(3, rs)), KW("dim", Iv(1)));
  out(1, &st);
  Run r = run("move_reshape_out_of_split_stack_pass");
  g_assert_cmpint(ctr(&r, "move_reshape_out_of_split_stack_pass"), ==, 1);
  g_assert_cmpuint(count_op(OX_OPID_RESHAPE), ==, 1);
  run_free(&r);
}

static const OxValue *kwarg_of_node(const OxGraph *gr, OxNodeId id, const char *key) {
  const OxNode *n = &gr->nodes[id];
  for (uint32_t k = 0; n->kwargs.kind == OX_V_DICT && k < n->kwargs.n; k++)
    if (!strcmp(n->kwargs.keys[k], key)) return &n->kwargs.u.items[k];
  return NULL;
}

/* the rejections of pass with a reason containing `what` */
static uint32_t rejected_with(const Run *r, const char *pass, const char *what) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < r->tr->n_steps; i++) {
    const OxStep *s = &r->tr->steps[i];
    if (s->kind != OX_STEP_REJECTED || strcmp(s->pass, pass) != 0) continue;
    char *why = ox_reason_format(&s->reason);
    if (strstr(why, what)) n++;
    g_free(why);
  }
  return n;
}

static void build_unbind_stack_aten(const char *select_target) {
  begin();
  OxNodeId p = ph("p", 2, (int64_t)5, (int64_t)4);
  OxNodeId us[5];
  for (int i = 0; i < 5; i++) {
    OxNodeId sel = fn(select_target, A(3, N(p), Iv(0), Iv(i)), NONE());
    us[i] = fn("torch.ops.aten.unsqueeze", A(2, N(sel), Iv(0)), NONE());
  }
  OxNodeId c = fn("torch.ops.aten.cat", A(2, LN(5, us), Iv(0)), NONE());
  OxNodeId rl = fn("torch.ops.aten.relu.default", A(1, N(c)), NONE());
  out(1, &rl);
}

/* unbind_stack_aten_pass takes the generic aten.select the post-grad batch fusions create (the
 * overload packet), as upstream's target == torch.ops.aten.select; a model's own
 * aten.select.int only with match_select_overload. */
static void test_unbind_stack_aten(void) {
  build_unbind_stack_aten("torch.ops.aten.select");
  OxNodeId p = 0;
  OX_GRAPH_FOREACH(g, id) {
    if (g->nodes[id].op == OX_OP_PLACEHOLDER) p = id;
  }
  Run r = run("unbind_stack_aten_pass");
  g_assert_cmpint(ctr(&r, "unbind_stack_aten_pass"), ==, 1);
  g_assert_cmpuint(arg_node(out_arg(0), 0), ==, p);
  run_free(&r);

  build_unbind_stack_aten("torch.ops.aten.select.int");
  r = run("unbind_stack_aten_pass");
  g_assert_cmpint(ctr(&r, "unbind_stack_aten_pass"), ==, 0);
  g_assert_cmpuint(rejected_with(&r, "unbind_stack_aten_pass", "is torch.ops.aten.select.int, pattern wants torch.ops.aten.select"),
                   ==, 1);
  run_free(&r);

  build_unbind_stack_aten("torch.ops.aten.select.int");
  r = run_opts("unbind_stack_aten_pass", WHOLE | STEP, "unbind_stack_aten_pass.match_select_overload=true", NULL);
  g_assert_cmpint(ctr(&r, "unbind_stack_aten_pass"), ==, 1);
  run_free(&r);
}

/* normalization_pass rewrites and counts every unbind and stack, canonical or not (upstream
 * returns early only for split and cat); torch.functional.split is torch.split. */
static void test_normalization_counts_unbind_stack(void) {
  begin();
  OxNodeId x = ph("x", 3, (int64_t)2, (int64_t)3, (int64_t)4);
  OxNodeId u = fn("torch.unbind", A(1, N(x)), KW("dim", Iv(1)));
  OxNodeId it[3] = {gi(u, 0), gi(u, 1), gi(u, 2)};
  OxNodeId st = fn("torch.stack", A(1, LN(3, it)), KW("dim", Iv(0)));
  OxNodeId c = fn("torch.cat", A(1, LN(3, it)), KW("dim", Iv(1)));
  OxNodeId o[2] = {st, c};
  out(2, o);
  Run r = run("normalization_pass");
  /* the canonical unbind and stack count; the canonical cat does not */
  g_assert_cmpint(ctr(&r, "normalization_pass"), ==, 2);
  g_assert_cmpuint(count_op(OX_OPID_UNBIND), ==, 1);
  g_assert_false(ox_graph_find(g, "unbind")); /* replaced by a new node, as upstream does */
  g_assert_true(ox_graph_find(g, "cat"));
  run_free(&r);

  begin();
  x = ph("x", 2, (int64_t)2, (int64_t)32);
  int64_t sec[] = {16, 16};
  OxNodeId s1 = fn("torch.functional.split", A(2, N(x), LI(2, sec)), KW("dim", Iv(1)));
  OxNodeId s2 = fn("torch.functional.split", A(3, N(x), Iv(8), Iv(1)), NONE());
  OxNodeId o2[6] = {gi(s1, 0), gi(s1, 1), gi(s2, 0), gi(s2, 1), gi(s2, 2), gi(s2, 3)};
  out(6, o2);
  r = run("normalization_pass");
  /* canonical spelled torch.functional.split: left alone; the other one normalized */
  g_assert_cmpint(ctr(&r, "normalization_pass"), ==, 1);
  g_assert_true(ox_graph_find(g, "split"));
  g_assert_false(ox_graph_find(g, "split_1"));
  run_free(&r);
}

/* normalization_aten_pass sees aten.cat.default only: the overload packet aten.cat that the
 * post-grad batch fusions emit is neither rewritten nor counted (upstream's registration). */
static void test_normalization_aten_ignores_packet_cat(void) {
  begin();
  OxNodeId x = ph("x", 2, (int64_t)4, (int64_t)3), y = ph("y", 2, (int64_t)4, (int64_t)3);
  OxNodeId a = fn("torch.ops.aten.cat", A(2, LN(2, (OxNodeId[]){x, y}), Iv(-1)), NONE());
  OxNodeId b = fn("torch.ops.aten.cat.default", A(2, LN(2, (OxNodeId[]){x, y}), Iv(-1)), NONE());
  OxNodeId o[2] = {a, b};
  out(2, o);
  Run r = run("normalization_aten_pass");
  g_assert_cmpint(ctr(&r, "normalization_aten_pass"), ==, 1);
  g_assert_cmpstr(g->nodes[out_arg(0)].target, ==, "torch.ops.aten.cat");
  g_assert_cmpint(g->nodes[out_arg(0)].args.u.items[1].u.i, ==, -1);
  g_assert_cmpint(g->nodes[out_arg(1)].args.u.items[1].u.i, ==, 1);
  run_free(&r);
}

/* upstream's test_split_cat_new_patterns/move_reshape_out_of_split_stack at a smaller size:
 * a stack mixing clones with reshapes of every piece of a split -> stack of the clones, one
 * view of the split input, a cat */
static void mixed_reshape_stack(int64_t rows, int64_t sec, int64_t pieces, int64_t used_from, int64_t used_to) {
  begin();
  OxNodeId x = ph("x", 2, rows, sec * pieces);
  int64_t secs[8];
  for (int64_t i = 0; i < pieces; i++) secs[i] = sec;
  OxNodeId s = fn("torch.split", A(2, N(x), LI((uint32_t)pieces, secs)), KW("dim", Iv(1)));
  OxNodeId in[12];
  uint32_t n = 0;
  OxNodeId rs[8];
  for (int64_t i = 0; i < pieces; i++)
    rs[i] = meth("reshape", A(3, N(gi(s, i)), Iv(-1), Iv(pieces)), NONE());
  in[n++] = meth("clone", A(1, N(rs[0])), NONE());
  in[n++] = meth("clone", A(1, N(rs[1])), NONE());
  for (int64_t i = used_from; i < used_to; i++) in[n++] = rs[i];
  in[n++] = meth("clone", A(1, N(rs[pieces - 1])), NONE());
  OxNodeId st = fn("torch.stack", A(1, LN(n, in)), KW("dim", Iv(0)));
  out(1, &st);
}

static void test_move_reshape_mixed_stack(void) {
  /* sections of 1 (upstream's test) */
  mixed_reshape_stack(20, 1, 5, 0, 5);
  Run r = run("move_reshape_out_of_split_stack_pass");
  g_assert_cmpint(ctr(&r, "move_reshape_out_of_split_stack_pass"), ==, 1);
  g_assert_cmpint(opat(out_arg(0)), ==, OX_OPID_CAT);
  g_assert_cmpuint(count_op(OX_OPID_STACK), ==, 2); /* the leading clones, the trailing clone */
  g_assert_cmpuint(count_op(OX_OPID_UNFLATTEN), ==, 1);
  run_free(&r);
  /* sections of 2: upstream's permute + view would interleave the pieces; the whole-graph
   * comparison proves this form right */
  mixed_reshape_stack(6, 2, 4, 0, 4);
  r = run("move_reshape_out_of_split_stack_pass");
  g_assert_cmpint(ctr(&r, "move_reshape_out_of_split_stack_pass"), ==, 1);
  run_free(&r);
  /* a run of 2 of 4 pieces is neither the whole split nor threshold_to_cat long: untouched */
  mixed_reshape_stack(6, 2, 4, 1, 3);
  r = run("move_reshape_out_of_split_stack_pass");
  g_assert_cmpint(ctr(&r, "move_reshape_out_of_split_stack_pass"), ==, 0);
  g_assert_cmpuint(rejected_with(&r, "move_reshape_out_of_split_stack_pass", "reaches threshold_to_cat 10 (longest run 2)"),
                   ==, 1);
  run_free(&r);
  /* ... unless threshold_to_cat allows it: a slice of the input */
  mixed_reshape_stack(6, 2, 4, 1, 3);
  r = run_opts("move_reshape_out_of_split_stack_pass", WHOLE | STEP, "move_reshape_out_of_split_stack_pass.threshold_to_cat=2",
               NULL);
  g_assert_cmpint(ctr(&r, "move_reshape_out_of_split_stack_pass"), ==, 1);
  run_free(&r);
}

/* numpy_compat_normalization: NumPy-style keywords of torch functions renamed where the
 * function takes torch's name (upstream's misc_patterns; also torch functions the op table
 * lacks, from their signatures); methods and aten overloads untouched. After it,
 * normalization_pass sees the stack's dim. */
static void test_numpy_compat_normalization(void) {
  begin();
  OxNodeId x = ph("x", 2, (int64_t)4, (int64_t)4), y = ph("y", 2, (int64_t)4, (int64_t)4);
  OxNodeId a = fn("torch.stack", A(1, LN(2, (OxNodeId[]){x, y})), KW("axis", Iv(1)));
  OxNodeId b = fn("torch.mul", A(1, N(x)), KW("x2", N(y)));
  const char *mk[] = {"dim", "keepdims"};
  OxValue mv[] = {Iv(1), ox_value_bool(true)};
  OxNodeId e = fn("torch.max", A(1, N(x)), ox_graph_value_dict(g, mk, mv, 2));
  const char *dk[] = {"x", "p", "train"};
  OxValue dv[] = {N(x), ox_value_float(0.5), ox_value_bool(false)};
  OxNodeId f = fn("torch.dropout", A(0), ox_graph_value_dict(g, dk, dv, 3));
  OxNodeId m = meth("sum", A(1, N(x)), KW("axis", Iv(1))); /* a method: left alone */
  OxNodeId o[5] = {a, b, gi(e, 0), f, m};
  out(5, o);
  Run r = run_opts("numpy_compat_normalization,normalization_pass", 0, NULL);
  g_assert_cmpint(ctr(&r, "numpy_compat_normalization"), ==, 4);
  g_assert_cmpint(ctr(&r, "normalization_pass"), ==, 1); /* the stack, now with dim=1 */
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    if (n->op != OX_OP_CALL_FUNCTION) continue;
    for (uint32_t k = 0; n->kwargs.kind == OX_V_DICT && k < n->kwargs.n; k++) {
      const char *key = n->kwargs.keys[k];
      g_assert_true(strcmp(key, "axis") && strcmp(key, "keepdims") && strcmp(key, "x") && strcmp(key, "x2"));
    }
  }
  g_assert_nonnull(kwarg_of_node(g, out_arg(4), "axis"));
  run_free(&r);
}

/* a placeholder with a device */
static OxNodeId ph_dev(const char *name, const char *device, int64_t d0, int64_t d1, int64_t d2) {
  OxNodeId id = d2 ? ph(name, 3, d0, d1, d2) : d1 ? ph(name, 2, d0, d1) : ph(name, 1, d0);
  if (device) {
    OxMeta m = g->nodes[id].meta;
    OxTensorMeta t = m.t[0];
    t.device = ox_graph_intern(g, device);
    m.t = &t;
    ox_graph_set_meta(g, id, &m);
  }
  return id;
}

/* einsum_to_pointwise_pass (opt-in): einsum("abc,abcd->abd", x, w) that feeds an add ->
 * sum(unsqueeze(x, -1) * w, -2); the other einsums are rejected with the guard. */
static void test_einsum_to_pointwise(void) {
  for (int k = 0; k < 3; k++) {
    begin();
    OxNodeId x = ph("x", 3, (int64_t)2, (int64_t)3, (int64_t)4), w = ph("w", 4, (int64_t)2, (int64_t)3, (int64_t)4,
                                                                          (int64_t)5);
    OxNodeId z = k == 2 ? ph("z", 3, (int64_t)2, (int64_t)5, (int64_t)3) : ph("z", 3, (int64_t)2, (int64_t)3, (int64_t)5);
    const char *eq = k == 2 ? "abc,abcd->adb" : "abc,abcd->abd";
    OxNodeId e = fn("torch.functional.einsum", A(3, ox_graph_value_str(g, OX_V_STR, eq), N(x), N(w)), NONE());
    OxNodeId o = k == 1 ? fn("torch.relu", A(1, N(e)), NONE()) : meth("add", A(2, N(e), N(z)), NONE());
    out(1, &o);
    Run r = run("einsum_to_pointwise_pass");
    g_assert_cmpint(ctr(&r, "einsum_to_pointwise_pass"), ==, k == 0 ? 1 : 0);
    g_assert_cmpuint(count_op(OX_OPID_EINSUM), ==, k == 0 ? 0 : 1);
    if (k == 0) {
      g_assert_cmpuint(count_op(OX_OPID_SUM), ==, 1);
      g_assert_cmpuint(count_op(OX_OPID_UNSQUEEZE), ==, 1);
    } else {
      g_assert_cmpuint(rejected_with(&r, "einsum_to_pointwise_pass", k == 1 ? "no user of einsum is an add"
                                                                            : "is not of the form \"abc,abcd->abd\""),
                       ==, 1);
    }
    run_free(&r);
  }
}

/* decompose_mm_pass (opt-in): memory-bound aten matmuls under upstream's per-device
 * thresholds; counters decompose_mm / decompose_addmm / decompose_bmm */
static void test_decompose_mm(void) {
  /* cpu mm, 1 row */
  begin();
  OxNodeId a = ph_dev("a", "cpu", 1, 64, 0), b = ph_dev("b", "cpu", 64, 16, 0), bias = ph_dev("bias", "cpu", 16, 0, 0);
  OxNodeId mm = fn("torch.ops.aten.mm.default", A(2, N(a), N(b)), NONE());
  OxNodeId am = fn("torch.ops.aten.addmm.default", A(3, N(bias), N(a), N(b)), NONE());
  OxNodeId o[2] = {mm, am};
  out(2, o);
  Run r = run("decompose_mm_pass");
  g_assert_cmpint(ctr(&r, "decompose_mm"), ==, 1);
  g_assert_cmpint(ctr(&r, "decompose_addmm"), ==, 1);
  g_assert_cmpint(ctr(&r, "decompose_mm_pass"), ==, 0);
  g_assert_cmpuint(count_op(OX_OPID_MM) + count_op(OX_OPID_ADDMM), ==, 0);
  run_free(&r);
  /* cpu bmm, batch 1; cuda mm with 10240 rows and narrow mat2 */
  begin();
  OxNodeId x = ph_dev("x", "cpu", 1, 8, 16), y = ph_dev("y", "cpu", 1, 16, 4);
  OxNodeId u = ph_dev("u", "cuda:0", 10240, 16, 0), v = ph_dev("v", "cuda:0", 16, 8, 0);
  OxNodeId o2[2] = {fn("torch.ops.aten.bmm.default", A(2, N(x), N(y)), NONE()),
                    fn("torch.ops.aten.mm.default", A(2, N(u), N(v)), NONE())};
  out(2, o2);
  r = run("decompose_mm_pass");
  g_assert_cmpint(ctr(&r, "decompose_bmm"), ==, 1);
  g_assert_cmpint(ctr(&r, "decompose_mm"), ==, 1);
  run_free(&r);
  /* not decomposed, with the threshold or guard named */
  begin();
  OxNodeId c4 = ph_dev("c4", "cpu", 4, 64, 0), d = ph_dev("d", "cpu", 64, 16, 0);
  OxNodeId nd = ph("nd", 2, (int64_t)1, (int64_t)64), nd2 = ph("nd2", 2, (int64_t)64, (int64_t)16);
  OxNodeId bb = ph_dev("bb", "cpu", 16, 0, 0);
  OxNodeId o3[3] = {fn("torch.ops.aten.mm.default", A(2, N(c4), N(d)), NONE()),
                    fn("torch.ops.aten.mm.default", A(2, N(nd), N(nd2)), NONE()),
                    fn("torch.ops.aten.addmm.default", A(3, N(bb), N(c4), N(d)), KW("beta", Iv(2)))};
  out(3, o3);
  r = run("decompose_mm_pass");
  g_assert_cmpint(ctr(&r, "decompose_mm") + ctr(&r, "decompose_addmm"), ==, 0);
  g_assert_cmpuint(rejected_with(&r, "decompose_mm_pass", "cpu: needs rows <= 1"), ==, 1);
  g_assert_cmpuint(rejected_with(&r, "decompose_mm_pass", "an unknown device"), ==, 1);
  g_assert_cmpuint(rejected_with(&r, "decompose_mm_pass", "not addmm with 3 positional arguments and no keywords"), ==, 1);
  run_free(&r);
  /* the options move the thresholds */
  begin();
  c4 = ph_dev("c4", "cpu", 4, 64, 0);
  d = ph_dev("d", "cpu", 64, 16, 0);
  OxNodeId o4 = fn("torch.ops.aten.mm.default", A(2, N(c4), N(d)), NONE());
  out(1, &o4);
  r = run_opts("decompose_mm_pass", WHOLE | STEP, "decompose_mm_pass.cpu_max_first_dimension_decomposition=4", NULL);
  g_assert_cmpint(ctr(&r, "decompose_mm"), ==, 1);
  run_free(&r);
}

/* --config runs in PyTorch's driver order: pre-grad numpy_compat_normalization (always),
 * normalization_pass, the batch fusions, the other passes (each group in file order); post-grad batch fusions (require_fbgemm ones last),
 * then the other passes. --passes keeps its literal order. */
static void test_config_driver_order(void) {
  const char *cfg =
    "{\"pre_grad_fusion_options\": {\"split_cat_pass\": {}, \"batch_relu\": {}, \"normalization_pass\": {},"
    " \"batch_tanh\": {}, \"unbind_stack_pass\": {}},"
    " \"post_grad_fusion_options\": {\"unbind_stack_aten_pass\": {}, \"group_linear\": {\"require_fbgemm\": true},"
    " \"batch_aten_add\": {}, \"normalization_aten_pass\": {}}}";
  /* a pre-grad section also runs numpy_compat_normalization first, as upstream's driver does */
  const char *want[] = {"numpy_compat_normalization", "normalization_pass", "batch_relu", "batch_tanh", "split_cat_pass", "unbind_stack_pass",
                        "batch_aten_add", "group_linear", "unbind_stack_aten_pass", "normalization_aten_pass"};
  OxPipeline p;
  OxDiagList d;
  ox_diags_init(&d, "cfg");
  g_assert_cmpint(ox_pipeline_from_config(cfg, strlen(cfg), "cfg.json", &p, &d), ==, 0);
  g_assert_cmpuint(p.n, ==, G_N_ELEMENTS(want));
  for (uint32_t i = 0; i < p.n; i++) g_assert_cmpstr(p.entries[i].pass->name, ==, want[i]);
  g_assert_true(p.entries[7].opt.require_fbgemm);
  ox_pipeline_free(&p);
  g_assert_cmpint(ox_pipeline_from_list("split_cat_pass,normalization_pass", &p, &d), ==, 0);
  g_assert_cmpstr(p.entries[0].pass->name, ==, "split_cat_pass");
  ox_pipeline_free(&p);
  ox_diags_clear(&d);

  /* the order decides: split_cat_pass only sees normalized splits */
  for (int literal = 0; literal < 2; literal++) {
    begin();
    OxNodeId x = ph("x", 2, (int64_t)2, (int64_t)8);
    OxNodeId sp = fn("torch.split", A(3, N(x), Iv(2), Iv(1)), NONE());
    OxNodeId it[4] = {gi(sp, 0), gi(sp, 1), gi(sp, 2), gi(sp, 3)};
    OxNodeId st = fn("torch.stack", A(1, LN(4, it)), KW("dim", Iv(1)));
    out(1, &st);
    OxGraph *before = ox_graph_clone(g);
    const char *c2 = "{\"pre_grad_fusion_options\": {\"split_cat_pass\": {}, \"normalization_pass\": {}}}";
    OxDiagList d2;
    ox_diags_init(&d2, "cfg");
    if (literal)
      g_assert_cmpint(ox_pipeline_from_list("split_cat_pass,normalization_pass", &p, &d2), ==, 0);
    else
      g_assert_cmpint(ox_pipeline_from_config(c2, strlen(c2), "c2.json", &p, &d2), ==, 0);
    OxCheckConfig checks;
    ox_check_config_default(&checks);
    OxTrace *tr = ox_trace_new();
    OxOptimizeResult res;
    g_assert_cmpint(ox_optimize(g, &p, &checks, tr, &res, &d2), ==, 0);
    int64_t sc = 0;
    for (uint32_t i = 0; i < tr->n_counters; i++)
      if (!strcmp(tr->counter_names[i], "split_cat_pass")) sc = tr->counter_values[i];
    g_assert_cmpint(sc, ==, literal ? 0 : 1);
    numeric_equal(before, g);
    ox_trace_free(tr);
    ox_pipeline_free(&p);
    ox_diags_clear(&d2);
    ox_graph_free(before);
    ox_graph_free(g);
    g = NULL;
  }
}

static void test_default_pipeline_registered(void) {
  const char *names[] = {"normalization_pass", "remove_split_with_size_one_pass", "merge_getitem_cat_pass",
                         "merge_splits_pass", "mutate_cat_pass", "split_cat_pass", "unbind_stack_pass",
                         "merge_stack_tahn_unbind_pass", "split_cat_to_slices_pass", "unbind_cat_to_view_pass",
                         "split_stack_to_cats_pass", "unbind_stack_to_slices_pass",
                         "move_reshape_out_of_split_stack_pass", "normalization_aten_pass", "split_cat_aten_pass",
                         "select_cat_aten_pass", "unbind_stack_aten_pass", "move_view_after_cat_aten_pass"};
  for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
    const OxPassInfo *p = ox_pass_find(names[i]);
    g_assert_nonnull(p);
    g_assert_cmpint(p->engine, ==, OX_ENGINE_PATTERN);
    g_assert_cmpint(p->phase, ==, strstr(names[i], "aten") ? OX_PHASE_POST : OX_PHASE_PRE);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/splitcat/registry", test_default_pipeline_registered);
  g_test_add_func("/engine/splitcat/g12-normalization", test_g12_normalization);
  g_test_add_func("/engine/splitcat/g12-nested-and-dynamic", test_g12_nested_and_dynamic);
  g_test_add_func("/engine/splitcat/g13-merge-splits", test_g13_merge_splits);
  g_test_add_func("/engine/splitcat/g13-merge-splits-negative", test_g13_merge_splits_negative);
  g_test_add_func("/engine/splitcat/g14-mutate-cat", test_g14_mutate_cat);
  g_test_add_func("/engine/splitcat/g14-contrast-merge-getitem-cat", test_g14_contrast_merge_getitem_cat);
  g_test_add_func("/engine/splitcat/g15-split-cat-dim-mismatch", test_g15_split_cat_dim_mismatch);
  g_test_add_func("/engine/splitcat/g16-split-stack", test_g16_split_stack);
  g_test_add_func("/engine/splitcat/g17-input-shuffling", test_g17_input_shuffling);
  g_test_add_func("/engine/splitcat/g17-multi-user", test_g17_multi_user);
  g_test_add_func("/engine/splitcat/g18-unbind-stack", test_g18_unbind_stack);
  g_test_add_func("/engine/splitcat/g19-split-squeeze", test_g19_split_squeeze);
  g_test_add_func("/engine/splitcat/g20-merge-getitem-cat", test_g20_merge_getitem_cat);
  g_test_add_func("/engine/splitcat/g21-split-cat-to-slices", test_g21_split_cat_to_slices);
  g_test_add_func("/engine/splitcat/g22-split-cat-aten", test_g22_split_cat_aten);
  g_test_add_func("/engine/splitcat/aten-split-short-chunk", test_aten_split_short_chunk);
  g_test_add_func("/engine/splitcat/g23-select-cat-aten", test_g23_select_cat_aten);
  g_test_add_func("/engine/splitcat/g24-move-view-after-cat-aten", test_g24_move_view_after_cat);
  g_test_add_func("/engine/splitcat/g25-negative-controls", test_g25_negative_controls);
  g_test_add_func("/engine/splitcat/merge-stack-tahn-unbind", test_merge_stack_tahn_unbind);
  g_test_add_func("/engine/splitcat/unbind-cat-to-view", test_unbind_cat_to_view);
  g_test_add_func("/engine/splitcat/split-stack-to-cats", test_split_stack_to_cats);
  g_test_add_func("/engine/splitcat/unbind-stack-to-slices", test_unbind_stack_to_slices);
  g_test_add_func("/engine/splitcat/move-reshape-out-of-split-stack", test_move_reshape_out_of_split_stack);
  g_test_add_func("/engine/splitcat/unbind-stack-aten", test_unbind_stack_aten);
  g_test_add_func("/engine/splitcat/normalization-counts-unbind-stack", test_normalization_counts_unbind_stack);
  g_test_add_func("/engine/splitcat/normalization-aten-ignores-packet-cat", test_normalization_aten_ignores_packet_cat);
  g_test_add_func("/engine/splitcat/move-reshape-mixed-stack", test_move_reshape_mixed_stack);
  g_test_add_func("/engine/splitcat/config-driver-order", test_config_driver_order);
  g_test_add_func("/engine/splitcat/einsum-to-pointwise", test_einsum_to_pointwise);
  g_test_add_func("/engine/splitcat/numpy-compat-normalization", test_numpy_compat_normalization);
  g_test_add_func("/engine/splitcat/decompose-mm", test_decompose_mm);
  return g_test_run();
}
