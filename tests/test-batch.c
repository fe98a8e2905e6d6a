/* test-batch.c - the batch-fusion engine (engine/passes/ox_batch.c).
 *
 * The greedy-subset unit tests G1-G4 of the spec exactly; the golden cases G5-G11 built with
 * the ox_graph API (meta inferred from placeholder shapes, so the shapes are the spec's),
 * asserting the structure after the pass (targets and shapes of new nodes, which nodes are
 * gone) and the counters the upstream tests assert; negative controls (G25 c/d, dependent
 * nodes, sets below the minimum, mismatched shapes, dtype mismatch, mutation) with the
 * reason texts the trace shows. Every rewrite runs through ox_optimize with all checks on:
 * the graph must verify and every applied step's structure, shape and numeric checks must
 * report passed (numeric may be skipped only for dropout, which is random).
 */
#include <glib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ox_shape.h"
#include "passes/ox_batch.h"
#include "passes/ox_pass.h"

/* ------------------------------------------------------------------ graph building */

static OxGraph *G;

static void begin(void) { G = ox_graph_new(); }
static void end(void) {
  ox_graph_free(G);
  G = NULL;
}

static OxValue vN(OxNodeId id) { return ox_value_node(id); }
static OxValue vI(int64_t i) { return ox_value_int(i); }
static OxValue vF(double f) { return ox_value_float(f); }
static OxValue vB(bool b) { return ox_value_bool(b); }
static OxValue vNone(void) { return ox_value_none(); }

static OxValue seqv(OxValueKind kind, int n, va_list ap) {
  OxValue items[16];
  g_assert_cmpint(n, <=, 16);
  for (int i = 0; i < n; i++) items[i] = va_arg(ap, OxValue);
  return ox_graph_value_seq(G, kind, items, (uint32_t)n);
}

static OxValue vT(int n, ...) {
  va_list ap;
  va_start(ap, n);
  OxValue v = seqv(OX_V_TUPLE, n, ap);
  va_end(ap);
  return v;
}

static OxValue vL(int n, ...) {
  va_list ap;
  va_start(ap, n);
  OxValue v = seqv(OX_V_LIST, n, ap);
  va_end(ap);
  return v;
}

static OxValue vNodes(const OxNodeId *ids, int n) {
  OxValue items[64];
  g_assert_cmpint(n, <=, 64);
  for (int i = 0; i < n; i++) items[i] = vN(ids[i]);
  return ox_graph_value_seq(G, OX_V_LIST, items, (uint32_t)n);
}

/* kw(2, "min", vF(-1), "max", vF(1)) */
static OxValue kw(int n, ...) {
  const char *keys[8];
  OxValue vals[8];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) {
    keys[i] = va_arg(ap, const char *);
    vals[i] = va_arg(ap, OxValue);
  }
  va_end(ap);
  return ox_graph_value_dict(G, keys, vals, (uint32_t)n);
}

static OxNodeId ph_dt(const char *name, OxDType dt, int rank, const int64_t *dims) {
  OxNodeId id = ox_graph_add_node(G, OX_OP_PLACEHOLDER, name, name, vNone(), vNone());
  OxTensorMeta *t = ox_graph_tensor_meta_new(G, dt, rank);
  for (int i = 0; i < rank; i++) t->shape[i].v = dims[i];
  t->device = ox_graph_intern(G, "cpu");
  OxMeta m = {.kind = OX_META_TENSOR, .n = 1, .t = t};
  ox_graph_set_meta(G, id, &m);
  return id;
}

#define DIMS(...) (int64_t[]){__VA_ARGS__}, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define PH(name, ...) ph_dt(name, OX_DT_F32, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define PH16(name, ...) ph_dt(name, OX_DT_F16, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

static OxNodeId node_op(OxOp op, const char *name, const char *target, OxValue args, OxValue kwargs, bool infer) {
  OxNodeId id = ox_graph_add_node(G, op, name, target, args, kwargs);
  if (name) g_assert_cmpstr(G->nodes[id].name, ==, name);
  if (infer) {
    OxMeta m;
    char err[256] = "";
    int rc = ox_shape_infer_node(G, id, &m, err, sizeof err);
    if (rc != 0) g_error("infer %s: %s", G->nodes[id].name, err);
    ox_graph_set_meta(G, id, &m);
  }
  return id;
}

static OxNodeId C(const char *name, const char *target, OxValue args, OxValue kwargs) {
  return node_op(OX_OP_CALL_FUNCTION, name, target, args, kwargs, true);
}

static OxNodeId M(const char *name, const char *method, OxValue args, OxValue kwargs) {
  return node_op(OX_OP_CALL_METHOD, name, method, args, kwargs, true);
}

static void OUT(OxValue v) { ox_graph_add_node(G, OX_OP_OUTPUT, "output", "output", vT(1, v), vNone()); }

static OxNodeId find(const char *name) { return ox_graph_find(G, name); }

static const char *shape_of(OxNodeId id) {
  static char buf[8][128];
  static int k;
  char *b = buf[k++ % 8];
  const OxMeta *m = &G->nodes[id].meta;
  if (m->kind != OX_META_TENSOR) {
    snprintf(b, 128, "?");
    return b;
  }
  ox_tensor_meta_format(&m->t[0], false, false, b, 128);
  return b;
}

static uint32_t live_with_target(const char *target, OxNodeId *out, uint32_t max) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(G, id) {
    if (strcmp(G->nodes[id].target, target) != 0) continue;
    if (n < max) out[n] = id;
    n++;
  }
  return n;
}

static uint32_t count_target(const char *target) { return live_with_target(target, NULL, 0); }

static OxNodeId only(const char *target) {
  OxNodeId id = 0;
  uint32_t n = live_with_target(target, &id, 1);
  if (n != 1) g_error("expected one live %s, found %u", target, n);
  return id;
}

/* ------------------------------------------------------------------ running passes */

typedef struct Run {
  OxTrace *t;
  OxOptimizeResult res;
} Run;

static bool allow_numeric_skip;

/* Runs the comma list of passes with options "pass.key=value" (NULL-terminated), all checks
 * on; the graph must verify and every applied step must pass its checks. */
static void run(Run *r, const char *passes, ...) {
  OxDiagList d;
  ox_diags_init(&d, "test");
  OxPipeline p;
  g_assert_cmpint(ox_pipeline_from_list(passes, &p, &d), ==, 0);
  va_list ap;
  va_start(ap, passes);
  for (const char *o; (o = va_arg(ap, const char *));) g_assert_cmpint(ox_pipeline_set_option(&p, o, &d), ==, 0);
  va_end(ap);
  OxCheckConfig ck;
  ox_check_config_default(&ck);
  r->t = ox_trace_new();
  int rc = ox_optimize(G, &p, &ck, r->t, &r->res, &d);
  for (size_t i = 0; i < d.n; i++) g_test_message("diag: %s", d.items[i].msg);
  g_assert_cmpint(rc, ==, 0);
  ox_pipeline_free(&p);
  ox_diags_clear(&d);
  int errs = ox_graph_verify(G, true, &d);
  for (size_t i = 0; i < d.n; i++) g_test_message("verify: %s", d.items[i].msg);
  g_assert_cmpint(errs, ==, 0);
  ox_diags_clear(&d);
  for (uint32_t i = 0; i < r->t->n_steps; i++) {
    const OxStep *s = &r->t->steps[i];
    if (s->kind == OX_STEP_CHECK_FAILED) {
      char *why = ox_reason_format(&s->reason);
      g_error("step %u (%s) failed its checks: %s", s->seq, s->pass, why);
    }
    if (s->kind != OX_STEP_APPLIED) continue;
    g_assert_cmpint(s->checks[OX_CHECK_STRUCTURE].status, ==, OX_CHECK_PASSED);
    g_assert_cmpint(s->checks[OX_CHECK_SHAPE].status, ==, OX_CHECK_PASSED);
    const OxCheckResult *nc = &s->checks[OX_CHECK_NUMERIC];
    if (nc->status != OX_CHECK_PASSED && !(allow_numeric_skip && nc->status == OX_CHECK_SKIPPED))
      g_error("step %u (%s): numeric check %s: %s", s->seq, s->pass, ox_check_status_name((OxCheckStatus)nc->status),
              nc->detail ? nc->detail : "");
  }
  allow_numeric_skip = false;
}

static void run_free(Run *r) {
  ox_trace_free(r->t);
  r->t = NULL;
}

static int64_t counter(const Run *r, const char *name) {
  for (uint32_t i = 0; i < r->t->n_counters; i++)
    if (strcmp(r->t->counter_names[i], name) == 0) return r->t->counter_values[i];
  return 0;
}

/* The rejected step of `pass` whose formatted reason is exactly `text`, or NULL. */
static const OxStep *rejection(const Run *r, const char *pass, const char *text) {
  for (uint32_t i = 0; i < r->t->n_steps; i++) {
    const OxStep *s = &r->t->steps[i];
    if (s->kind != OX_STEP_REJECTED || strcmp(s->pass, pass) != 0) continue;
    char *f = ox_reason_format(&s->reason);
    bool eq = strcmp(f, text) == 0;
    free(f);
    if (eq) return s;
  }
  return NULL;
}

static void dump_rejections(const Run *r) {
  for (uint32_t i = 0; i < r->t->n_steps; i++) {
    const OxStep *s = &r->t->steps[i];
    if (s->kind != OX_STEP_REJECTED) continue;
    char *f = ox_reason_format(&s->reason);
    g_test_message("rejected %s at %s: %s", s->pass, s->anchor ? s->anchor : "-", f);
    free(f);
  }
}

static const OxStep *must_reject(const Run *r, const char *pass, const char *text) {
  const OxStep *s = rejection(r, pass, text);
  if (!s) {
    dump_rejections(r);
    g_error("no %s rejection \"%s\"", pass, text);
  }
  return s;
}

static bool step_lists(const OxStep *s, const char *name) {
  for (uint32_t i = 0; i < s->n_matched; i++)
    if (strcmp(s->matched[i], name) == 0) return true;
  return false;
}

static uint32_t n_rejections(const Run *r, const char *pass, OxReasonCode code, const char *anchor) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < r->t->n_steps; i++) {
    const OxStep *s = &r->t->steps[i];
    if (s->kind == OX_STEP_REJECTED && !strcmp(s->pass, pass) && s->reason.code == code &&
        (!anchor || (s->anchor && !strcmp(s->anchor, anchor))))
      n++;
  }
  return n;
}

/* ------------------------------------------------------------------ G1-G4 greedy */

static OxNodeId DAGN[32];

/* nodes n0..n(k-1) in order; deps[i] = -1-terminated inputs */
static void build_dag(int k, const int deps[][10]) {
  for (int i = 0; i < k; i++) {
    char name[16];
    snprintf(name, sizeof name, "n%d", i);
    OxValue items[10];
    int m = 0;
    for (; deps[i][m] >= 0; m++) items[m] = vN(DAGN[deps[i][m]]);
    DAGN[i] = node_op(OX_OP_CALL_FUNCTION, name, "test.op", ox_graph_value_seq(G, OX_V_TUPLE, items, (uint32_t)m), vNone(),
                      false);
  }
}

static char *subset_str(const OxNodeId *s, uint32_t n) {
  GString *b = g_string_new("[");
  for (uint32_t i = 0; i < n; i++) g_string_append_printf(b, "%s%s", i ? "," : "", G->nodes[s[i]].name);
  g_string_append_c(b, ']');
  return g_string_free(b, FALSE);
}

static char *greedy_all(const int *cands, int nc, int min, int max) {
  OxBatchOrder ord = {NULL, 0};
  ox_batch_order_init(&ord, G);
  OxNodeId ids[32];
  for (int i = 0; i < nc; i++) ids[i] = DAGN[cands[i]];
  OxBatchGreedy *gr = ox_batch_greedy_new(G, &ord, ids, (uint32_t)nc, min, max, NULL);
  GString *all = g_string_new("[");
  const OxNodeId *sub;
  uint32_t n;
  bool first = true;
  while (ox_batch_greedy_next(gr, &sub, &n)) {
    char *s = subset_str(sub, n);
    g_string_append_printf(all, "%s%s", first ? "" : ",", s);
    g_free(s);
    first = false;
  }
  g_string_append_c(all, ']');
  ox_batch_greedy_free(gr);
  ox_batch_order_free(&ord);
  return g_string_free(all, FALSE);
}

static void test_greedy_g1(void) {
  begin();
  static const int deps[][10] = {{-1}, {-1}, {0, -1}, {-1}, {0, 1, 2, -1}, {0, 2, 4, -1}, {3, -1}, {4, 5, 6, 1, 3, -1},
                                {7, 1, 3, 5, 0, -1}, {3, 4, 8, 6, 5, 2, 0, 7, -1}, {0, -1}, {4, 0, 2, 3, 1, 9, -1},
                                {2, 3, 10, 6, 9, -1}};
  build_dag(13, deps);
  char *r = greedy_all((int[]){10, 5, 3, 4, 9}, 5, 0, 100);
  g_assert_cmpstr(r, ==, "[[n10,n5,n3],[n4],[n9]]");
  g_free(r);
  end();
}

static void test_greedy_g2(void) {
  begin();
  static const int deps[][10] = {{-1}, {-1}, {-1}, {2, 1, -1}, {2, 3, 1, -1}, {3, 1, -1}, {1, -1}, {5, 4, -1}, {6, 2, -1}};
  build_dag(9, deps);
  char *r = greedy_all((int[]){4, 3, 1, 8, 5, 6, 2}, 7, 0, 100);
  g_assert_cmpstr(r, ==, "[[n4,n8,n5],[n3,n6],[n1,n2]]");
  g_free(r);
  end();
}

static void test_greedy_g3(void) {
  begin();
  static const int deps[][10] = {{-1}, {-1}, {-1}, {1, 2, -1}, {1, -1}, {-1}, {5, -1}, {1, 6, 5, 2, 3, 0, -1},
                                {5, 7, 2, 6, -1}, {1, -1}, {9, -1}, {3, 4, 0, 2, -1}, {8, 9, 5, 1, -1},
                                {11, 4, 12, 1, 9, 3, 0, -1}};
  build_dag(14, deps);
  const int c[] = {9, 2, 8, 10, 5, 6, 13, 7, 3, 0, 4};
  char *r = greedy_all(c, 11, 0, 100);
  g_assert_cmpstr(r, ==, "[[n9,n2,n5,n0,n4],[n8,n10],[n6,n3],[n13],[n7]]");
  g_free(r);
  r = greedy_all(c, 11, 2, 10);
  g_assert_cmpstr(r, ==, "[[n9,n2,n5,n0,n4],[n8,n10],[n6,n3]]");
  g_free(r);
  r = greedy_all(c, 11, 0, 3);
  g_assert_cmpstr(r, ==, "[[n9,n2,n5],[n8,n10,n4],[n6,n3,n0],[n13],[n7]]");
  g_free(r);
  end();
}

/* G4: the caller rewrites the graph between yields; stale ancestor sets must not be used. */
static void test_greedy_g4(void) {
  begin();
  static const int deps[][10] = {{-1}, {-1}, {0, -1}, {1, -1}, {2, -1}, {-1}};
  build_dag(6, deps);
  OxBatchOrder ord = {NULL, 0};
  ox_batch_order_init(&ord, G);
  OxNodeId ids[6];
  const int c[] = {2, 3, 4, 0, 1, 5};
  for (int i = 0; i < 6; i++) ids[i] = DAGN[c[i]];
  OxBatchGreedy *gr = ox_batch_greedy_new(G, &ord, ids, 6, 0, 100, NULL);
  const OxNodeId *sub;
  uint32_t n;
  g_assert_true(ox_batch_greedy_next(gr, &sub, &n));
  char *s = subset_str(sub, n);
  g_assert_cmpstr(s, ==, "[n2,n3,n5]");
  g_free(s);
  /* replace n2 and n3 by one node (n0, n1) */
  OxNodeId m = ox_graph_insert_before(G, DAGN[2], OX_OP_CALL_FUNCTION, "n2_n3", "test.op",
                                      vT(2, vN(DAGN[0]), vN(DAGN[1])), vNone());
  ox_graph_replace_all_uses(G, DAGN[2], m);
  ox_graph_replace_all_uses(G, DAGN[3], m);
  g_assert_true(ox_graph_erase(G, DAGN[2]));
  g_assert_true(ox_graph_erase(G, DAGN[3]));
  ox_batch_order_init(&ord, G);
  g_assert_true(ox_batch_greedy_next(gr, &sub, &n));
  s = subset_str(sub, n);
  g_assert_cmpstr(s, ==, "[n4]");
  g_free(s);
  g_assert_true(ox_batch_greedy_next(gr, &sub, &n));
  s = subset_str(sub, n);
  g_assert_cmpstr(s, ==, "[n0,n1]");
  g_free(s);
  g_assert_false(ox_batch_greedy_next(gr, &sub, &n));
  ox_batch_greedy_free(gr);
  ox_batch_order_free(&ord);
  end();
}

/* ------------------------------------------------------------------ cat_linear */

/* linear(cat(parts, dim), W[n, k_total], b) with parts of the given widths, rows x width */
static OxNodeId cat_linear_graph(int nparts, const int64_t *widths, int64_t rows, int64_t n, int64_t dim, bool bias,
                                 bool second_user) {
  begin();
  OxNodeId parts[4];
  int64_t total = 0;
  for (int i = 0; i < nparts; i++) {
    char name[8];
    snprintf(name, sizeof name, "x%d", i);
    parts[i] = PH(name, rows, widths[i]);
    total += widths[i];
  }
  OxNodeId w = PH("w", n, dim == 0 ? widths[0] : total);
  OxNodeId b = bias ? PH("b", n) : 0;
  OxNodeId cat = C("cat", "torch.cat", vT(1, vNodes(parts, nparts)), kw(1, "dim", vI(dim)));
  OxNodeId lin = C("linear", "torch._C._nn.linear", vT(3, vN(cat), vN(w), b ? vN(b) : vNone()), vNone());
  if (second_user) {
    OxNodeId s = C("s", "torch.sum", vT(1, vN(cat)), vNone());
    OUT(vT(2, vN(lin), vN(s)));
  } else {
    OUT(vN(lin));
  }
  return lin;
}

/* upstream's TestCatLinearFusion shapes: the rewrite, each gate's rejection, the cat-traffic
 * floor option, opt-in (not in the default pipeline), slices shared by two linears of one W */
static void test_cat_linear(void) {
  Run r;
  cat_linear_graph(2, (int64_t[]){16, 16}, 4, 32, -1, true, false);
  run(&r, "cat_linear", "cat_linear.cat_traffic_floor_bytes=0", NULL);
  g_assert_cmpint(counter(&r, "cat_linear"), ==, 1);
  g_assert_cmpuint(count_target("torch.cat"), ==, 0);
  g_assert_cmpuint(count_target("torch.nn.functional.linear"), ==, 2);
  g_assert_cmpuint(count_target("operator.add"), ==, 1);
  g_assert_cmpuint(count_target("operator.getitem"), ==, 2); /* W[:, 0:16], W[:, 16:32] */
  g_assert_cmpuint(count_target("contiguous"), ==, 2);
  /* the bias rides on the first piece only */
  OxNodeId l[2];
  live_with_target("torch.nn.functional.linear", l, 2);
  g_assert_cmpint(G->nodes[l[0]].args.u.items[2].kind, ==, OX_V_NODE);
  g_assert_cmpint(G->nodes[l[1]].args.u.items[2].kind, ==, OX_V_NONE);
  run_free(&r);
  end();

  cat_linear_graph(3, (int64_t[]){16, 16, 16}, 4, 32, -1, false, false);
  run(&r, "cat_linear", "cat_linear.cat_traffic_floor_bytes=0", NULL);
  g_assert_cmpint(counter(&r, "cat_linear"), ==, 1);
  g_assert_cmpuint(count_target("torch.nn.functional.linear"), ==, 3);
  g_assert_cmpuint(count_target("operator.add"), ==, 2);
  run_free(&r);
  end();

  struct {
    int nparts;
    int64_t widths[4], rows, n, dim;
    bool second_user;
    const char *floor, *why;
  } rejected[] = {
    {2, {16, 16}, 4, 32, -1, false, NULL,
     "cat traffic 4 x 32 x 4 B = 512 B < cat_traffic_floor_bytes 536870912"},
    {4, {16, 16, 16, 16}, 4, 32, -1, false, "cat_linear.cat_traffic_floor_bytes=0",
     "cat has 4 parts; cat_linear takes 2 to 3"},
    {2, {16, 16}, 4, 16, 0, false, "cat_linear.cat_traffic_floor_bytes=0",
     "cat concatenates on dim 0, not the last dim (1)"},
    {2, {64, 64}, 4, 128, -1, false, "cat_linear.cat_traffic_floor_bytes=0",
     "output width 128 > 96 (a wide output is compute-bound)"},
    {2, {4, 16}, 4, 32, -1, false, "cat_linear.cat_traffic_floor_bytes=0", "part x0 is 4 wide, thinner than 8"},
    {2, {16, 16}, 4, 32, -1, true, "cat_linear.cat_traffic_floor_bytes=0", "cat has 2 users, expected 1"},
    {2, {200, 200}, 4, 32, -1, false, "cat_linear.cat_traffic_floor_bytes=0", "total width 400 > 384"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(rejected); i++) {
    cat_linear_graph(rejected[i].nparts, rejected[i].widths, rejected[i].rows, rejected[i].n, rejected[i].dim, true,
                     rejected[i].second_user);
    if (rejected[i].floor)
      run(&r, "cat_linear", rejected[i].floor, NULL);
    else
      run(&r, "cat_linear", NULL);
    g_assert_cmpint(counter(&r, "cat_linear"), ==, 0);
    must_reject(&r, "cat_linear", rejected[i].why);
    g_assert_cmpuint(count_target("torch.cat"), ==, 1);
    run_free(&r);
    end();
  }

  /* two linears over cats of equal widths sharing W: the weight slices are made once */
  begin();
  OxNodeId a0 = PH("a0", 4, 16), a1 = PH("a1", 4, 16), b0 = PH("b0", 4, 16), b1 = PH("b1", 4, 16);
  OxNodeId w = PH("w", 8, 32);
  OxNodeId c0 = C("cat0", "torch.cat", vT(1, vL(2, vN(a0), vN(a1))), kw(1, "dim", vI(1)));
  OxNodeId c1 = C("cat1", "torch.cat", vT(1, vL(2, vN(b0), vN(b1))), kw(1, "dim", vI(-1)));
  OxNodeId l0 = C("lin0", "torch.nn.functional.linear", vT(2, vN(c0), vN(w)), vNone());
  OxNodeId l1 = C("lin1", "torch.nn.functional.linear", vT(2, vN(c1), vN(w)), vNone());
  OUT(vT(2, vN(l0), vN(l1)));
  run(&r, "cat_linear", "cat_linear.cat_traffic_floor_bytes=0", NULL);
  g_assert_cmpint(counter(&r, "cat_linear"), ==, 2);
  g_assert_cmpuint(count_target("contiguous"), ==, 2);
  run_free(&r);
  end();

  /* opt-in: not in a default pre-grad pipeline */
  cat_linear_graph(2, (int64_t[]){16, 16}, 4, 32, -1, true, false);
  OxPipeline p;
  ox_pipeline_default(G, &p);
  for (uint32_t i = 0; i < p.n; i++) g_assert_cmpstr(p.entries[i].pass->name, !=, "cat_linear");
  g_assert_true(ox_pass_opt_in(ox_pass_find("cat_linear")));
  g_assert_false(ox_pass_opt_in(ox_pass_find("batch_linear")));
  ox_pipeline_free(&p);
  end();
}

/* ------------------------------------------------------------------ upstream greedy cases */

/* PyTorch's TestFindIndependentSubsetGreedy.test_find_independent_subset_greedy, every verify()
 * call: the DAG ("nK:inputs;..."), the candidates, min, max and the expected subsets. The
 * companion test_find_independent_subset_greedy_fuse is greedy-g4 above. */
static const struct {
  const char *dag, *cands;
  int min, max;
  const char *want;
} upstream_greedy[] = {
  {"n0:;n1:",
   "n0", 0, 100, "[[n0]]"},
  {"n0:;n1:;n2:n0",
   "n1,n2", 0, 100, "[[n1,n2]]"},
  {"n0:;n1:;n2:n0;n3:;n4:n0,n1,n2;n5:n0,n2,n4;n6:n3;n7:n4,n5,n6,n1,n3;n8:n7,n1,n3,n5,n0;n9:n3,n4,n8,n6,n5,n2,n0,n7;n10:n0;n11:n4,n0,n2,n3,n1,n9;n12:n2,n3,n10,n6,n9",
   "n10,n5,n3,n4,n9", 0, 100, "[[n10,n5,n3],[n4],[n9]]"},
  {"n0:;n1:;n2:n0",
   "n2", 0, 100, "[[n2]]"},
  {"n0:;n1:;n2:;n3:;n4:n3,n1,n0;n5:n1,n2,n4,n0;n6:n0,n3,n2;n7:n6,n1,n5,n4,n3,n0;n8:n2,n7,n3;n9:n3,n5,n6,n7,n2,n1;n10:n8,n0,n2,n4,n6,n3;n11:n6,n5,n8,n1,n3,n10,n2;n12:n7,n4",
   "n7", 0, 100, "[[n7]]"},
  {"n0:;n1:;n2:;n3:n1,n2;n4:n1;n5:;n6:n5;n7:n1,n6,n5,n2,n3,n0;n8:n5,n7,n2,n6;n9:n1;n10:n9;n11:n3,n4,n0,n2;n12:n8,n9,n5,n1;n13:n11,n4,n12,n1,n9,n3,n0",
   "n9,n2,n8,n10,n5,n6,n13,n7,n3,n0,n4", 0, 100, "[[n9,n2,n5,n0,n4],[n8,n10],[n6,n3],[n13],[n7]]"},
  {"n0:",
   "n0", 0, 100, "[[n0]]"},
  {"n0:;n1:;n2:;n3:;n4:n1,n2;n5:n0,n4,n1;n6:n1,n5;n7:;n8:n7,n1,n3,n5,n6;n9:n2,n1,n8,n0,n4,n7,n6,n5;n10:n4,n7,n2,n3,n8;n11:;n12:n9,n7,n5,n11,n8;n13:n5,n6,n12,n3,n9,n8,n4,n11,n2,n10,n1;n14:n7,n3,n12,n10,n2,n0,n4,n5;n15:n9,n5,n1,n13,n8,n10,n12,n7,n11,n3;n16:n2,n4,n15,n5,n0,n6,n3,n8,n14,n12,n9,n10,n7,n13",
   "n0,n3,n2,n11,n1,n6,n12,n5,n4,n15,n8", 0, 100, "[[n0,n3,n2,n11,n1],[n6],[n12],[n5],[n4],[n15],[n8]]"},
  {"n0:;n1:;n2:;n3:n2,n1;n4:n2,n3,n1;n5:n3,n1;n6:n1;n7:n5,n4;n8:n6,n2",
   "n4,n3,n1,n8,n5,n6,n2", 0, 100, "[[n4,n8,n5],[n3,n6],[n1,n2]]"},
  {"n0:;n1:;n2:;n3:n1,n0;n4:n0;n5:n1,n4;n6:n2,n1,n4;n7:n0,n3;n8:n5,n0,n6,n1,n4,n2,n3;n9:n1,n4,n8,n7,n5;n10:n9,n8,n0,n2,n7,n1,n3,n5;n11:n9,n2,n6,n0,n3;n12:n1,n4,n7,n10,n5,n2,n11,n6;n13:n9,n2,n3,n0,n7,n5,n10,n11;n14:n8,n0,n3,n6,n10,n1,n5,n9,n12,n11,n4;n15:n3,n10,n0,n4,n9,n11,n2,n13,n12,n8,n5,n14;n16:n6;n17:n4,n3,n14,n8,n15,n16,n2,n5,n7,n12,n1,n0,n11",
   "n17,n16,n10,n4,n8,n12,n6,n1", 0, 100, "[[n17],[n16,n10],[n4,n1],[n8],[n12],[n6]]"},
  {"n0:;n1:;n2:n0;n3:n0,n1;n4:n0;n5:n0;n6:n5,n3,n0,n2;n7:;n8:n2,n5,n3,n1,n7,n6,n0;n9:n4;n10:n4,n5,n1,n2,n0,n6,n8,n9,n7;n11:n3,n0,n9,n10,n5,n1,n2,n7,n4,n6;n12:n9,n5",
   "n8,n3,n1,n12,n2,n5,n11,n4,n10,n6,n0", 0, 100, "[[n8,n12],[n3,n2,n5,n4],[n1,n0],[n11],[n10],[n6]]"},
  {"n0:;n1:;n2:;n3:;n4:n2,n3;n5:n1,n3,n2,n4;n6:n5,n4,n1,n3;n7:n5;n8:n5,n4,n1;n9:n2,n3,n1,n5,n7,n0,n8;n10:n5,n3,n1,n7,n8,n9;n11:n1,n4,n2,n0,n8,n9;n12:n4,n3,n9;n13:n6,n10,n4,n8,n0,n11,n12,n7,n3,n2,n1;n14:n4,n13,n2;n15:n11,n7,n6,n10,n14;n16:n15,n3;n17:n10,n2,n7,n0,n5,n6,n9;n18:n16,n8,n6,n9,n11,n12,n14,n5,n13,n4,n1",
   "n1,n0,n16,n6,n15,n9,n7,n4,n3,n11,n13,n17,n12,n18", 0, 100, "[[n1,n0,n4],[n16,n17],[n6,n9],[n15],[n7],[n3],[n11,n12],[n13],[n18]]"},
  {"n0:;n1:;n2:;n3:n2;n4:n1;n5:;n6:n1,n4;n7:n5,n1;n8:n6;n9:n6,n1,n2,n0;n10:n0,n7;n11:n0,n4,n3,n5;n12:n9,n8,n7,n4,n0",
   "n8,n9,n11,n2,n4,n0,n7,n5,n1", 0, 100, "[[n8,n9,n11,n7],[n2,n4,n0,n5],[n1]]"},
  {"n0:;n1:;n2:;n3:n0;n4:n3",
   "n1,n2,n4", 0, 100, "[[n1,n2,n4]]"},
  {"n0:;n1:;n2:n1;n3:n2,n1;n4:n3;n5:;n6:n1,n5;n7:;n8:n4,n5;n9:n0,n3,n6,n4,n5,n8,n7,n1;n10:n3,n0,n6,n9,n7;n11:;n12:n1,n8,n3,n6,n7,n0,n10,n5,n9,n11;n13:n9,n11,n4;n14:;n15:n6,n12;n16:n1,n7,n10,n3,n9,n0,n2,n5,n8,n13,n14,n15,n4,n6",
   "n11,n16,n5,n12,n7,n2,n0,n6,n3,n9,n8,n15,n14,n4,n13,n1", 0, 100, "[[n11,n5,n7,n2,n0,n14],[n16],[n12,n13],[n6,n3],[n9],[n8],[n15],[n4],[n1]]"},
  {"n0:;n1:",
   "n1", 0, 100, "[[n1]]"},
  {"n0:;n1:;n2:n1;n3:;n4:n0,n2,n3;n5:n2,n3;n6:n3",
   "n6,n2,n3,n1", 0, 100, "[[n6,n2],[n3,n1]]"},
  {"n0:;n1:;n2:;n3:n2;n4:n0;n5:n1,n2;n6:n2,n3,n1,n0,n5;n7:n6,n2,n0,n4,n5,n1;n8:n4;n9:n4,n6,n7,n1,n2",
   "n8,n6,n2,n4,n7,n5,n3,n9", 0, 100, "[[n8,n6],[n2,n4],[n7],[n5,n3],[n9]]"},
  {"n0:;n1:;n2:;n3:n1,n2;n4:n0;n5:n2,n3,n0,n1;n6:n4,n1;n7:n5;n8:n7,n1,n5,n6,n3,n4,n0;n9:n2,n8",
   "n1,n7,n4,n2,n0,n8,n3,n5", 0, 100, "[[n1,n4,n2],[n7],[n0,n3],[n8],[n5]]"},
  {"n0:;n1:;n2:n0;n3:n1;n4:n2,n1;n5:;n6:n0;n7:n6,n3,n2,n1,n0;n8:n0,n2;n9:n6,n5,n8,n4,n0;n10:n1,n7,n5,n8,n6,n2,n4,n9",
   "n0", 0, 100, "[[n0]]"},
  {"n0:;n1:;n2:;n3:n1,n2;n4:n1;n5:;n6:n5;n7:n1,n6,n5,n2,n3,n0;n8:n5,n7,n2,n6;n9:n1;n10:n9;n11:n3,n4,n0,n2;n12:n8,n9,n5,n1;n13:n11,n4,n12,n1,n9,n3,n0",
   "n9,n2,n8,n10,n5,n6,n13,n7,n3,n0,n4", 2, 10, "[[n9,n2,n5,n0,n4],[n8,n10],[n6,n3]]"},
  {"n0:;n1:;n2:;n3:n1,n2;n4:n1;n5:;n6:n5;n7:n1,n6,n5,n2,n3,n0;n8:n5,n7,n2,n6;n9:n1;n10:n9;n11:n3,n4,n0,n2;n12:n8,n9,n5,n1;n13:n11,n4,n12,n1,n9,n3,n0",
   "n9,n2,n8,n10,n5,n6,n13,n7,n3,n0,n4", 0, 3, "[[n9,n2,n5],[n8,n10,n4],[n6,n3,n0],[n13],[n7]]"},
};

static int dag_index(const char *name, size_t len) {
  g_assert_true(len >= 2 && name[0] == 'n');
  return atoi(name + 1);
}

/* builds "n0:;n1:;n2:n0" (nodes in order; each node's inputs after the colon) */
static void build_dag_text(const char *text) {
  gchar **nodes = g_strsplit(text, ";", -1);
  for (int i = 0; nodes[i]; i++) {
    char *colon = strchr(nodes[i], ':');
    g_assert_nonnull(colon);
    g_assert_cmpint(dag_index(nodes[i], (size_t)(colon - nodes[i])), ==, i);
    OxValue items[16];
    uint32_t m = 0;
    if (colon[1]) {
      gchar **deps = g_strsplit(colon + 1, ",", -1);
      for (int k = 0; deps[k]; k++) items[m++] = vN(DAGN[dag_index(deps[k], strlen(deps[k]))]);
      g_strfreev(deps);
    }
    char name[16];
    snprintf(name, sizeof name, "n%d", i);
    DAGN[i] = node_op(OX_OP_CALL_FUNCTION, name, "test.op", ox_graph_value_seq(G, OX_V_TUPLE, items, m), vNone(), false);
  }
  g_strfreev(nodes);
}

static void test_upstream_greedy(gconstpointer data) {
  size_t k = GPOINTER_TO_SIZE(data);
  begin();
  build_dag_text(upstream_greedy[k].dag);
  gchar **c = g_strsplit(upstream_greedy[k].cands, ",", -1);
  int cands[32], nc = 0;
  for (; c[nc]; nc++) cands[nc] = dag_index(c[nc], strlen(c[nc]));
  g_strfreev(c);
  char *r = greedy_all(cands, nc, upstream_greedy[k].min, upstream_greedy[k].max);
  g_assert_cmpstr(r, ==, upstream_greedy[k].want);
  g_free(r);
  end();
}

static void test_path(void) {
  begin();
  static const int deps[][10] = {{-1}, {0, -1}, {1, -1}, {0, -1}, {2, 3, -1}};
  build_dag(5, deps);
  OxBatchOrder ord = {NULL, 0};
  ox_batch_order_init(&ord, G);
  char *p = ox_batch_path(G, &ord, DAGN[0], DAGN[4]);
  g_assert_nonnull(p);
  /* the BFS finds a shortest path */
  g_assert_cmpstr(p, ==, "n0 → n3 → n4");
  free(p);
  g_assert_null(ox_batch_path(G, &ord, DAGN[4], DAGN[0]));
  g_assert_null(ox_batch_path(G, &ord, DAGN[1], DAGN[3]));
  ox_batch_order_free(&ord);
  end();
}

/* ------------------------------------------------------------------ G5 batch_linear */

/* x:[50,500] -> split(x,100,dim=1) -> 5 x [50,100] -> linear(g_i, W_i:[50,100], b_i) -> cat -> tanh */
static void build_g5(bool bias, const char *linear_target) {
  OxNodeId x = PH("x", 50, 500);
  OxNodeId w[5], b[5], l[5];
  for (int i = 0; i < 5; i++) {
    char n[16];
    snprintf(n, sizeof n, "w_%d", i);
    w[i] = PH(n, 50, 100);
    snprintf(n, sizeof n, "b_%d", i);
    b[i] = PH(n, 50);
  }
  OxNodeId s = C("split", "torch.split", vT(2, vN(x), vI(100)), kw(1, "dim", vI(1)));
  for (int i = 0; i < 5; i++) {
    char n[16];
    snprintf(n, sizeof n, "getitem_%d", i);
    OxNodeId gi = C(n, "operator.getitem", vT(2, vN(s), vI(i)), vNone());
    snprintf(n, sizeof n, "linear_%d", i);
    l[i] = bias ? C(n, linear_target, vT(3, vN(gi), vN(w[i]), vN(b[i])), vNone())
                : C(n, linear_target, vT(2, vN(gi), vN(w[i])), vNone());
  }
  OxNodeId c = C("cat", "torch.cat", vT(2, vNodes(l, 5), vI(1)), vNone());
  OxNodeId t = C("tanh", "torch.tanh", vT(1, vN(c)), vNone());
  OUT(vN(t));
}

static void test_g5_batch_linear(void) {
  for (int bias = 1; bias >= 0; bias--) {
    begin();
    build_g5(bias, "torch.nn.functional.linear");
    Run r;
    run(&r, "batch_linear", NULL);
    g_assert_cmpint(counter(&r, "batch_linear"), ==, 1);
    for (int i = 0; i < 5; i++) {
      char n[16];
      snprintf(n, sizeof n, "linear_%d", i);
      g_assert_cmpuint(find(n), ==, 0);
    }
    OxNodeId st[3];
    g_assert_cmpuint(live_with_target("torch.stack", st, 3), ==, bias ? 3 : 2);
    g_assert_cmpstr(shape_of(st[0]), ==, "f32[5, 50, 100]");
    g_assert_cmpstr(shape_of(st[1]), ==, "f32[5, 50, 100]");
    g_assert_cmpstr(shape_of(only("torch.transpose")), ==, "f32[5, 100, 50]");
    if (bias) {
      g_assert_cmpstr(shape_of(st[2]), ==, "f32[5, 50]");
      g_assert_cmpstr(shape_of(only("torch.unsqueeze")), ==, "f32[5, 1, 50]");
      g_assert_cmpstr(shape_of(only("torch.baddbmm")), ==, "f32[5, 50, 50]");
      g_assert_cmpuint(count_target("torch.bmm"), ==, 0);
    } else {
      g_assert_cmpstr(shape_of(only("torch.bmm")), ==, "f32[5, 50, 50]");
      g_assert_cmpuint(count_target("torch.baddbmm"), ==, 0);
    }
    OxNodeId u = only("torch.unbind");
    g_assert_cmpuint(G->nodes[u].n_users, ==, 5);
    /* the cat now reads getitem(unbind, i) in order */
    OxNodeId cat = find("cat");
    const OxValue *lst = &G->nodes[cat].args.u.items[0];
    for (uint32_t i = 0; i < 5; i++) {
      const OxNode *gi = &G->nodes[lst->u.items[i].u.node];
      g_assert_cmpstr(gi->target, ==, "operator.getitem");
      g_assert_cmpuint(gi->args.u.items[0].u.node, ==, u);
      g_assert_cmpint(gi->args.u.items[1].u.i, ==, i);
      g_assert_cmpstr(shape_of(lst->u.items[i].u.node), ==, "f32[50, 50]");
    }
    run_free(&r);
    end();
  }
}

/* ------------------------------------------------------------------ G6 batch_linear_lhs */

/* 10 linears of one input, out widths 10,9,8,7,6,10,9,8,7,6, then cat(l, 1) */
static OxNodeId lhs_layer(int layer, OxNodeId in, const char *target) {
  OxNodeId l[10];
  for (int i = 0; i < 10; i++) {
    char n[32];
    snprintf(n, sizeof n, "w%d_%d", layer, i);
    OxNodeId w = PH(n, 10 - i % 5, 10);
    snprintf(n, sizeof n, "b%d_%d", layer, i);
    OxNodeId b = PH(n, 10 - i % 5);
    snprintf(n, sizeof n, "linear%d_%d", layer, i);
    l[i] = C(n, target, vT(3, vN(in), vN(w), vN(b)), vNone());
  }
  char n[32];
  snprintf(n, sizeof n, "cat%d", layer);
  return C(n, "torch.cat", vT(2, vNodes(l, 10), vI(1)), vNone());
}

static void test_g6_batch_linear_lhs(void) {
  begin();
  OxNodeId x = PH("x", 20, 10);
  OxNodeId x1 = C("x1", "torch.add", vT(2, vN(x), vF(1.2)), vNone());
  OxNodeId c1 = lhs_layer(1, x1, "torch.nn.functional.linear");
  g_assert_cmpstr(shape_of(c1), ==, "f32[20, 80]");
  /* second layer input: cat(split(cat(l), 10, 1), 0) : [160, 10]; Dynamo's spelling of linear */
  OxNodeId sp = C("split2", "torch.split", vT(3, vN(c1), vI(10), vI(1)), vNone());
  OxNodeId pieces[8];
  for (int i = 0; i < 8; i++) {
    char n[16];
    snprintf(n, sizeof n, "piece_%d", i);
    pieces[i] = C(n, "operator.getitem", vT(2, vN(sp), vI(i)), vNone());
  }
  OxNodeId in2 = C("in2", "torch.cat", vT(2, vNodes(pieces, 8), vI(0)), vNone());
  g_assert_cmpstr(shape_of(in2), ==, "f32[160, 10]");
  OxNodeId c2 = lhs_layer(2, in2, "torch._C._nn.linear");
  OUT(vN(c2));
  Run r;
  run(&r, "batch_linear_lhs", NULL);
  g_assert_cmpint(counter(&r, "batch_linear_lhs"), ==, 2);
  OxNodeId cats[8];
  /* per layer: cat of weights [80, 10] and of biases [80], plus the model's 3 cats */
  g_assert_cmpuint(live_with_target("torch.cat", cats, 8), ==, 3 + 4);
  OxNodeId tr[2], mm[2], spl[3];
  g_assert_cmpuint(live_with_target("torch.transpose", tr, 2), ==, 2);
  g_assert_cmpstr(shape_of(tr[0]), ==, "f32[10, 80]");
  g_assert_cmpuint(live_with_target("torch.addmm", mm, 2), ==, 2);
  g_assert_cmpuint(live_with_target("torch.split", spl, 3), ==, 3);
  /* the split of layer 1's addmm has the uneven widths read from the weights' meta */
  const char *want[2] = {"f32[20, 80]", "f32[160, 80]"};
  for (int k = 0; k < 2; k++) {
    g_assert_cmpstr(shape_of(mm[k]), ==, want[k]);
    bool found = false;
    for (int j = 0; j < 3; j++) {
      const OxNode *s = &G->nodes[spl[j]];
      if (s->args.u.items[0].u.node != mm[k]) continue;
      found = true;
      const OxValue *secs = &s->args.u.items[1];
      g_assert_cmpuint(secs->n, ==, 10);
      for (uint32_t i = 0; i < 10; i++) g_assert_cmpint(secs->u.items[i].u.i, ==, 10 - (int)i % 5);
      g_assert_cmpuint(s->n_users, ==, 10);
    }
    g_assert_true(found);
  }
  g_assert_cmpuint(find("linear1_3"), ==, 0);
  g_assert_cmpuint(find("linear2_9"), ==, 0);
  run_free(&r);
  end();
}

/* ------------------------------------------------------------------ G7 batch_layernorm */

static OxNodeId ln_layer(int layer, OxNodeId x, int ns_rank, bool wt, bool bs) {
  OxNodeId s = C(NULL, "torch.split", vT(2, vN(x), vI(10)), kw(1, "dim", vI(2)));
  OxNodeId l[5];
  for (int i = 0; i < 5; i++) {
    OxNodeId gi = C(NULL, "operator.getitem", vT(2, vN(s), vI(i)), vNone());
    char n[32];
    OxValue ns = ns_rank == 1 ? vT(1, vI(10)) : vT(2, vI(5), vI(10));
    snprintf(n, sizeof n, "lnw%d_%d", layer, i);
    OxValue w = wt ? vN(ns_rank == 1 ? PH(n, 10) : PH(n, 5, 10)) : vNone();
    snprintf(n, sizeof n, "lnb%d_%d", layer, i);
    OxValue b = bs ? vN(ns_rank == 1 ? PH(n, 10) : PH(n, 5, 10)) : vNone();
    snprintf(n, sizeof n, "layer_norm%d_%d", layer, i);
    l[i] = C(n, "torch.nn.functional.layer_norm", vT(4, vN(gi), ns, w, b), vNone());
  }
  return C(NULL, "torch.cat", vT(2, vNodes(l, 5), vI(2)), vNone());
}

static void test_g7_batch_layernorm(void) {
  for (int combo = 0; combo < 4; combo++) {
    bool wt = combo & 1, bs = combo & 2;
    begin();
    OxNodeId x = PH("x", 2, 5, 50);
    OxNodeId c1 = ln_layer(1, x, 1, wt, bs);
    OxNodeId c2 = ln_layer(2, c1, 2, wt, bs);
    OUT(vN(c2));
    Run r;
    run(&r, "batch_layernorm", NULL);
    g_assert_cmpint(counter(&r, "batch_layernorm"), ==, 2);
    OxNodeId st[8];
    uint32_t ns = live_with_target("torch.stack", st, 8);
    g_assert_cmpuint(ns, ==, 2u * (1 + wt + bs));
    uint32_t inputs_seen = 0, weights_seen = 0;
    for (uint32_t i = 0; i < ns; i++) {
      const char *sh = shape_of(st[i]);
      const OxValue *dim = &G->nodes[st[i]].args.u.items[1];
      if (!strcmp(sh, "f32[2, 5, 5, 10]")) {
        inputs_seen++;
        /* layer 1 stacks at -2 (= 2), layer 2 at -3 (= 1): normalized dims */
        g_assert_true(dim->u.i == 2 || dim->u.i == 1);
      } else {
        g_assert_true(!strcmp(sh, "f32[5, 10]") || !strcmp(sh, "f32[5, 5, 10]"));
        weights_seen++;
      }
    }
    g_assert_cmpuint(inputs_seen, ==, 2);
    g_assert_cmpuint(count_target("torch.nn.functional.layer_norm"), ==, 2);
    g_assert_cmpuint(count_target("torch.mul"), ==, wt ? 2 : 0);
    g_assert_cmpuint(count_target("torch.add"), ==, bs ? 2 : 0);
    g_assert_cmpuint(count_target("torch.unbind"), ==, 2);
    g_assert_cmpuint(find("layer_norm1_0"), ==, 0);
    run_free(&r);
    end();
  }
}

/* ------------------------------------------------------------------ G8 pointwise */

static void test_g8_pointwise(void) {
  /* pre-grad: x:[50,1000] -> split 500 -> each split 50 -> 20 sigmoids -> 20 relus -> add/mul/sub/div -> cat */
  begin();
  OxNodeId x = PH("x", 50, 1000);
  OxNodeId s = C("inputs", "torch.split", vT(2, vN(x), vI(500)), kw(1, "dim", vI(1)));
  OxNodeId relu[2][10];
  for (int h = 0; h < 2; h++) {
    OxNodeId half = C(NULL, "operator.getitem", vT(2, vN(s), vI(h)), vNone());
    OxNodeId sp = C(NULL, "torch.split", vT(2, vN(half), vI(50)), kw(1, "dim", vI(1)));
    for (int i = 0; i < 10; i++) {
      OxNodeId gi = C(NULL, "operator.getitem", vT(2, vN(sp), vI(i)), vNone());
      OxNodeId sg = C(NULL, "torch.sigmoid", vT(1, vN(gi)), vNone());
      relu[h][i] = C(NULL, "torch.nn.functional.relu", vT(1, vN(sg)), kw(1, "inplace", vB(false)));
    }
  }
  OxNodeId divs[10];
  for (int i = 0; i < 10; i++) {
    OxNodeId a = C(NULL, "torch.add", vT(2, vN(relu[0][i]), vN(relu[1][i])), vNone());
    OxNodeId m = C(NULL, "torch.mul", vT(2, vN(a), vN(a)), vNone());
    OxNodeId sb = C(NULL, "torch.sub", vT(2, vN(m), vN(a)), vNone());
    divs[i] = C(NULL, "torch.div", vT(2, vN(sb), vN(m)), vNone());
  }
  OUT(vN(C("out", "torch.cat", vT(2, vNodes(divs, 10), vI(1)), vNone())));
  Run r;
  run(&r, "batch_relu,batch_sigmoid", NULL);
  g_assert_cmpint(counter(&r, "batch_relu"), ==, 1);
  g_assert_cmpint(counter(&r, "batch_sigmoid"), ==, 1);
  g_assert_cmpuint(count_target("torch.nn.functional.relu"), ==, 0);
  g_assert_cmpstr(shape_of(only("torch.relu")), ==, "f32[20, 50, 50]");
  g_assert_cmpstr(shape_of(only("torch.sigmoid")), ==, "f32[20, 50, 50]");
  g_assert_cmpuint(count_target("torch.stack"), ==, 2);
  g_assert_cmpuint(count_target("torch.unbind"), ==, 2);
  run_free(&r);
  end();

  /* post-grad: the same tail in aten ops */
  begin();
  x = PH("x", 50, 1000);
  OxNodeId ins[20];
  s = C(NULL, "torch.ops.aten.split.Tensor", vT(3, vN(x), vI(50), vI(1)), vNone());
  for (int i = 0; i < 20; i++) {
    OxNodeId gi = C(NULL, "operator.getitem", vT(2, vN(s), vI(i)), vNone());
    OxNodeId sg = C(NULL, "torch.ops.aten.sigmoid.default", vT(1, vN(gi)), vNone());
    ins[i] = C(NULL, "torch.ops.aten.relu.default", vT(1, vN(sg)), vNone());
  }
  for (int i = 0; i < 10; i++) {
    OxNodeId a = C(NULL, "torch.ops.aten.add.Tensor", vT(2, vN(ins[i]), vN(ins[10 + i])), vNone());
    OxNodeId m = C(NULL, "torch.ops.aten.mul.Tensor", vT(2, vN(a), vN(a)), vNone());
    OxNodeId sb = C(NULL, "torch.ops.aten.sub.Tensor", vT(2, vN(m), vN(a)), vNone());
    divs[i] = C(NULL, "torch.ops.aten.div.Tensor", vT(2, vN(sb), vN(m)), vNone());
  }
  OUT(vN(C("out", "torch.ops.aten.cat.default", vT(2, vNodes(divs, 10), vI(1)), vNone())));
  run(&r, "batch_aten_add,batch_aten_mul,batch_aten_sub,batch_aten_div", NULL);
  g_assert_cmpint(counter(&r, "batch_aten_add"), ==, 1);
  g_assert_cmpint(counter(&r, "batch_aten_mul"), ==, 1);
  g_assert_cmpint(counter(&r, "batch_aten_sub"), ==, 1);
  g_assert_cmpint(counter(&r, "batch_aten_div"), ==, 1);
  g_assert_cmpstr(shape_of(only("torch.ops.aten.add.Tensor")), ==, "f32[10, 50, 50]");
  g_assert_cmpstr(shape_of(only("torch.ops.aten.div.Tensor")), ==, "f32[10, 50, 50]");
  /* the scaffolding is spelled as upstream's: overload packets (torch.ops.aten.select) */
  g_assert_cmpuint(count_target("torch.ops.aten.select"), ==, 40);
  g_assert_cmpuint(count_target("torch.ops.aten.select.int"), ==, 0);
  /* two operands per op, 4 ops: 8 cats of 10 unsqueezes; the output cat keeps its overload */
  g_assert_cmpuint(count_target("torch.ops.aten.cat"), ==, 8);
  g_assert_cmpuint(count_target("torch.ops.aten.cat.default"), ==, 1);
  g_assert_cmpuint(count_target("torch.ops.aten.unsqueeze"), ==, 80);
  run_free(&r);
  end();
}

/* ------------------------------------------------------------------ G9 math ops */

static void test_g9_math(void) {
  begin();
  OxNodeId x = PH("x", 10, 10);
  OxNodeId det[20];
  for (int i = 0; i < 20; i++) {
    OxNodeId t = M(NULL, "to", vT(2, vN(x), ox_graph_value_str(G, OX_V_STR, "cpu")), vNone());
    OxNodeId c = M(NULL, "clamp", vT(1, vN(t)), kw(2, "min", vF(-1000.1), "max", vF(1000.1)));
    OxNodeId nn = C(NULL, "torch.nan_to_num", vT(2, vN(c), vF(0.0)), vNone());
    det[i] = M(NULL, "detach", vT(1, vN(nn)), vNone());
  }
  OxNodeId s1 = C("stack_input", "torch.stack", vT(2, vNodes(det, 10), vI(0)), vNone());
  OxNodeId s2 = C("stack_other", "torch.stack", vT(2, vNodes(det + 10, 10), vI(0)), vNone());
  OUT(vN(C("out", "torch.stack", vT(2, vL(2, vN(s1), vN(s2)), vI(0)), vNone())));
  Run r;
  run(&r, "batch_detach,batch_nan_to_num,batch_clamp", NULL);
  g_assert_cmpint(counter(&r, "batch_clamp"), ==, 1);
  g_assert_cmpint(counter(&r, "batch_detach"), ==, 1);
  g_assert_cmpint(counter(&r, "batch_nan_to_num"), ==, 1);
  OxNodeId cl = only("torch.clamp");
  g_assert_cmpstr(shape_of(cl), ==, "f32[20, 10, 10]");
  /* the bounds of subset[0] are passed on */
  g_assert_cmpuint(G->nodes[cl].kwargs.n, ==, 2);
  g_assert_cmpstr(G->nodes[cl].kwargs.keys[0], ==, "min");
  g_assert_true(G->nodes[cl].kwargs.u.items[0].u.f == -1000.1);
  OxNodeId nn = only("torch.nan_to_num");
  g_assert_cmpstr(G->nodes[nn].kwargs.keys[0], ==, "nan");
  g_assert_cmpstr(shape_of(only("torch.detach")), ==, "f32[20, 10, 10]");
  g_assert_cmpuint(count_target("clamp"), ==, 0);
  run_free(&r);
  end();
}

/* ------------------------------------------------------------------ G10 batch_linear_post_grad */

static void build_g10(void) {
  OxNodeId in[10], w[10], b[10];
  for (int i = 0; i < 10; i++) {
    char n[16];
    snprintf(n, sizeof n, "in_%d", i);
    in[i] = PH(n, 10, 10);
    snprintf(n, sizeof n, "w_%d", i);
    w[i] = PH(n, 10, 10);
    snprintf(n, sizeof n, "b_%d", i);
    b[i] = PH(n, 10);
  }
  OxNodeId acc = 0;
  for (int i = 0; i < 10; i++) {
    char n[16];
    snprintf(n, sizeof n, "t_%d", i);
    OxNodeId t = C(n, "torch.ops.aten.t.default", vT(1, vN(w[i])), vNone());
    snprintf(n, sizeof n, "addmm_%d", i);
    OxNodeId a = C(n, "torch.ops.aten.addmm.default", vT(3, vN(b[i]), vN(in[i]), vN(t)), vNone());
    snprintf(n, sizeof n, "acc_%d", i);
    acc = acc ? C(n, "torch.ops.aten.add.Tensor", vT(2, vN(acc), vN(a)), vNone()) : a;
  }
  OUT(vN(acc));
}

static void test_g10_linear_post_grad(void) {
  begin();
  build_g10();
  OxGraph *input = ox_graph_clone(G);
  Run r;
  run(&r, "batch_linear_post_grad", NULL);
  /* along the accumulation chain one BFS (depth <= 5) sees 5 addmms: two subsets of 5 */
  g_assert_cmpint(counter(&r, "batch_linear_post_grad"), ==, 2);
  OxNodeId bmm[2];
  g_assert_cmpuint(live_with_target("torch.ops.aten.bmm", bmm, 2), ==, 2);
  g_assert_cmpstr(shape_of(bmm[0]), ==, "f32[5, 10, 10]");
  g_assert_cmpstr(shape_of(bmm[1]), ==, "f32[5, 10, 10]");
  g_assert_cmpuint(count_target("torch.ops.aten.addmm.default"), ==, 0);
  g_assert_cmpuint(count_target("torch.ops.aten.select"), ==, 10);
  g_assert_cmpuint(count_target("torch.ops.aten.cat"), ==, 4);
  /* bias: aten.add(b_i, aten.select(bmm, 0, i)), the packet as upstream emits it; the
   * accumulation chain keeps add.Tensor */
  g_assert_cmpuint(count_target("torch.ops.aten.add"), ==, 10);
  g_assert_cmpuint(count_target("torch.ops.aten.add.Tensor"), ==, 9);
  /* a BFS from the output sees only 4 of them first */
  const OxStep *s = must_reject(&r, "batch_linear_post_grad", "set of 4 < min_fuse_set_size 5");
  g_assert_cmpuint(s->n_matched, ==, 4);
  g_assert_true(step_lists(s, "addmm_9") && step_lists(s, "addmm_6"));
  /* the trace replays to the same graph */
  OxDiagList d;
  ox_diags_init(&d, "replay");
  g_assert_cmpint(ox_replay(input, r.t, UINT32_MAX, &d), ==, 0);
  g_assert_true(ox_graph_stable_toposort(input));
  g_assert_true(ox_graph_stable_toposort(G));
  g_assert_cmpuint(ox_graph_structure_hash(input), ==, ox_graph_structure_hash(G));
  ox_diags_clear(&d);
  ox_graph_free(input);
  run_free(&r);
  end();
}

/* ------------------------------------------------------------------ G11 gated highway */

static void test_g11_highway(void) {
  begin();
  OxNodeId wg = PH("w_gating", 10, 10), bg = PH("b_gating", 10), wt = PH("w_transform", 10, 10),
           bt = PH("b_transform", 10);
  OxNodeId in[20];
  for (int i = 0; i < 20; i++) {
    char n[16];
    snprintf(n, sizeof n, "x_%d", i);
    in[i] = PH(n, 10, 10);
  }
  OxNodeId pg = C(NULL, "torch.ops.aten.permute.default", vT(2, vN(wg), vL(2, vI(1), vI(0))), vNone());
  OxNodeId pt = C(NULL, "torch.ops.aten.permute.default", vT(2, vN(wt), vL(2, vI(1), vI(0))), vNone());
  OxNodeId muls[20];
  for (int i = 0; i < 20; i++) {
    OxNodeId g = C(NULL, "torch.ops.aten.addmm.default", vT(3, vN(bg), vN(in[i]), vN(pg)), vNone());
    OxNodeId t = C(NULL, "torch.ops.aten.addmm.default", vT(3, vN(bt), vN(in[i]), vN(pt)), vNone());
    OxNodeId sg = C(NULL, "torch.ops.aten.sigmoid.default", vT(1, vN(t)), vNone());
    muls[i] = C(NULL, "torch.ops.aten.mul.Tensor", vT(2, vN(g), vN(sg)), vNone());
  }
  OxNodeId items[20];
  for (int i = 0; i < 20; i++) items[i] = muls[i];
  OxValue lst = ox_graph_value_seq(G, OX_V_LIST, (OxValue[20]){0}, 20);
  for (int i = 0; i < 20; i++) lst.u.items[i] = vN(items[i]);
  OUT(vN(C("out", "torch.ops.aten.cat.default", vT(2, lst, vI(-1)), vNone())));
  Run r;
  run(&r, "batch_linear_post_grad,batch_aten_mul,batch_aten_sigmoid,batch_aten_add",
      "batch_linear_post_grad.shape_broadcast_batch_linear=true", "batch_linear_post_grad.fuse_nodes_with_same_users=true",
      "batch_aten_mul.fuse_nodes_with_same_parent=false", "batch_aten_sigmoid.fuse_nodes_with_same_parent=true",
      "batch_aten_add.fuse_nodes_with_same_parent=true", NULL);
  g_assert_cmpint(counter(&r, "batch_linear_post_grad"), ==, 2);
  g_assert_cmpint(counter(&r, "batch_aten_sigmoid"), ==, 1);
  g_assert_cmpint(counter(&r, "batch_aten_mul"), ==, 1);
  g_assert_cmpint(counter(&r, "batch_aten_add"), ==, 2);
  /* shape_broadcast_batch_linear: add.Tensor(broadcast_to.default(b_i, [m, n]), select) */
  g_assert_cmpuint(count_target("torch.ops.aten.broadcast_to.default"), ==, 40);
  g_assert_cmpuint(count_target("torch.ops.aten.bmm"), ==, 2);
  run_free(&r);
  end();
}

/* ------------------------------------------------------------------ other rules */

/* 5 pieces of split(x:[8,80], 16, 1) through op, then cat */
static void unary_rule(const char *rule, const char *target, bool method, OxValue kwargs, const char *want_target) {
  begin();
  OxNodeId x = PH("x", 8, 80);
  OxNodeId s = C(NULL, "torch.split", vT(3, vN(x), vI(16), vI(1)), vNone());
  OxNodeId o[5];
  for (int i = 0; i < 5; i++) {
    OxNodeId gi = C(NULL, "operator.getitem", vT(2, vN(s), vI(i)), vNone());
    o[i] = method ? M(NULL, target, vT(1, vN(gi)), kwargs) : C(NULL, target, vT(1, vN(gi)), kwargs);
  }
  OUT(vN(C(NULL, "torch.cat", vT(2, vNodes(o, 5), vI(1)), vNone())));
  Run r;
  run(&r, rule, NULL);
  g_assert_cmpint(counter(&r, rule), ==, 1);
  g_assert_cmpstr(shape_of(only(want_target)), ==, "f32[5, 8, 16]");
  g_assert_cmpuint(count_target(target), ==, !strcmp(target, want_target) ? 1 : 0);
  run_free(&r);
  end();
}

static void test_pre_pointwise_rules(void) {
  unary_rule("batch_tanh", "torch.tanh", false, vNone(), "torch.tanh");
  unary_rule("batch_tanh", "tanh", true, vNone(), "torch.tanh");
  unary_rule("batch_sigmoid", "torch.nn.functional.sigmoid", false, vNone(), "torch.sigmoid");
  unary_rule("batch_relu", "relu", true, vNone(), "torch.relu");
  unary_rule("batch_detach", "torch.detach", false, vNone(), "torch.detach");
  unary_rule("batch_nan_to_num", "torch.nan_to_num", false, vNone(), "torch.nan_to_num");
  /* dropout is random: the numeric check skips it (equal in distribution only) */
  begin();
  OxNodeId x = PH("x", 8, 80);
  OxNodeId s = C(NULL, "torch.split", vT(3, vN(x), vI(16), vI(1)), vNone());
  OxNodeId o[5];
  for (int i = 0; i < 5; i++) {
    OxNodeId gi = C(NULL, "operator.getitem", vT(2, vN(s), vI(i)), vNone());
    o[i] = C(NULL, "torch.nn.functional.dropout", vT(1, vN(gi)), kw(2, "p", vF(0.25), "training", vB(true)));
  }
  OUT(vN(C(NULL, "torch.cat", vT(2, vNodes(o, 5), vI(1)), vNone())));
  Run r;
  allow_numeric_skip = true;
  run(&r, "batch_dropout", NULL);
  g_assert_cmpint(counter(&r, "batch_dropout"), ==, 1);
  OxNodeId d = only("torch.nn.functional.dropout");
  g_assert_cmpstr(shape_of(d), ==, "f32[5, 8, 16]");
  g_assert_cmpuint(G->nodes[d].kwargs.n, ==, 2);
  g_assert_true(G->nodes[d].kwargs.u.items[0].u.f == 0.25);
  run_free(&r);
  end();
}

static void post_unary_rule(const char *rule, const char *target) {
  begin();
  OxNodeId x = PH("x", 8, 80);
  OxNodeId s = C(NULL, "torch.ops.aten.split.Tensor", vT(3, vN(x), vI(16), vI(1)), vNone());
  OxNodeId o[5];
  for (int i = 0; i < 5; i++) {
    OxNodeId gi = C(NULL, "operator.getitem", vT(2, vN(s), vI(i)), vNone());
    o[i] = C(NULL, target, vT(1, vN(gi)), vNone());
  }
  OUT(vN(C(NULL, "torch.ops.aten.cat.default", vT(2, vNodes(o, 5), vI(1)), vNone())));
  Run r;
  run(&r, rule, NULL);
  g_assert_cmpint(counter(&r, rule), ==, 1);
  g_assert_cmpstr(shape_of(only(target)), ==, "f32[5, 8, 16]");
  g_assert_cmpuint(count_target("torch.ops.aten.select"), ==, 5);
  run_free(&r);
  end();
}

static void test_post_pointwise_rules(void) {
  post_unary_rule("batch_aten_tanh", "torch.ops.aten.tanh.default");
  post_unary_rule("batch_aten_sigmoid", "torch.ops.aten.sigmoid.default");
  post_unary_rule("batch_aten_relu", "torch.ops.aten.relu.default");
  /* div with rounding_mode and sub with alpha keep their arguments */
  begin();
  OxNodeId x = PH("x", 8, 80), y = PH("y", 8, 80);
  OxNodeId sx = C(NULL, "torch.ops.aten.split.Tensor", vT(3, vN(x), vI(16), vI(1)), vNone());
  OxNodeId sy = C(NULL, "torch.ops.aten.split.Tensor", vT(3, vN(y), vI(16), vI(1)), vNone());
  OxNodeId o[5];
  for (int i = 0; i < 5; i++) {
    OxNodeId a = C(NULL, "operator.getitem", vT(2, vN(sx), vI(i)), vNone());
    OxNodeId b = C(NULL, "operator.getitem", vT(2, vN(sy), vI(i)), vNone());
    OxNodeId d = C(NULL, "torch.ops.aten.div.Tensor_mode", vT(2, vN(a), vN(b)),
                   kw(1, "rounding_mode", ox_graph_value_str(G, OX_V_STR, "floor")));
    o[i] = C(NULL, "torch.ops.aten.sub.Tensor", vT(2, vN(d), vN(b)), kw(1, "alpha", vI(2)));
  }
  OUT(vN(C(NULL, "torch.ops.aten.cat.default", vT(2, vNodes(o, 5), vI(1)), vNone())));
  Run r;
  run(&r, "batch_aten_div,batch_aten_sub", NULL);
  g_assert_cmpint(counter(&r, "batch_aten_div"), ==, 1);
  g_assert_cmpint(counter(&r, "batch_aten_sub"), ==, 1);
  OxNodeId dv = only("torch.ops.aten.div.Tensor_mode");
  g_assert_cmpstr(shape_of(dv), ==, "f32[5, 8, 16]");
  g_assert_cmpstr(G->nodes[dv].kwargs.keys[0], ==, "rounding_mode");
  OxNodeId sb = only("torch.ops.aten.sub.Tensor");
  g_assert_cmpstr(G->nodes[sb].kwargs.keys[0], ==, "alpha");
  g_assert_cmpint(G->nodes[sb].kwargs.u.items[0].u.i, ==, 2);
  run_free(&r);
  end();
}

static void test_group_linear(void) {
  begin();
  OxNodeId o[6];
  int shapes[6][3] = {{4, 8, 6}, {2, 4, 4}, {6, 2, 8}, {4, 8, 6}, {8, 6, 2}, {4, 4, 4}};
  for (int i = 0; i < 6; i++) {
    char n[16];
    snprintf(n, sizeof n, "x_%d", i);
    OxNodeId x = PH(n, shapes[i][0], shapes[i][1]);
    snprintf(n, sizeof n, "w_%d", i);
    OxNodeId w = PH(n, shapes[i][2], shapes[i][1]);
    snprintf(n, sizeof n, "b_%d", i);
    OxNodeId b = PH(n, shapes[i][2]);
    OxNodeId t = C(NULL, "torch.ops.aten.permute.default", vT(2, vN(w), vL(2, vI(1), vI(0))), vNone());
    snprintf(n, sizeof n, "addmm_%d", i);
    OxNodeId a = C(n, "torch.ops.aten.addmm.default", vT(3, vN(b), vN(x), vN(t)), vNone());
    o[i] = C(NULL, "torch.ops.aten.relu.default", vT(1, vN(a)), vNone());
  }
  OxValue items[6];
  for (int i = 0; i < 6; i++) items[i] = vN(o[i]);
  OUT(ox_graph_value_seq(G, OX_V_TUPLE, items, 6));
  Run r;
  run(&r, "group_linear", NULL);
  g_assert_cmpint(counter(&r, "group_linear"), ==, 1);
  OxNodeId gm = only("optimus.grouped_mm");
  g_assert_cmpuint(G->nodes[gm].meta.kind, ==, OX_META_TUPLE);
  g_assert_cmpuint(G->nodes[gm].meta.n, ==, 6);
  /* weights are the permuted parameters themselves */
  const OxValue *ws = &G->nodes[gm].args.u.items[1];
  g_assert_cmpstr(G->nodes[ws->u.items[0].u.node].name, ==, "w_0");
  g_assert_cmpuint(count_target("torch.ops.aten.addmm.default"), ==, 0);
  run_free(&r);
  end();

  /* odd dims are refused with evidence */
  begin();
  for (int i = 0; i < 5; i++) {
    char n[16];
    snprintf(n, sizeof n, "x_%d", i);
    OxNodeId x = PH(n, 4, i == 2 ? 7 : 8);
    snprintf(n, sizeof n, "w_%d", i);
    OxNodeId w = PH(n, i == 2 ? 7 : 8, 6);
    snprintf(n, sizeof n, "mm_%d", i);
    o[i] = C(n, "torch.ops.aten.mm.default", vT(2, vN(x), vN(w)), vNone());
    items[i] = vN(o[i]);
  }
  OUT(ox_graph_value_seq(G, OX_V_TUPLE, items, 5));
  run(&r, "group_linear", NULL);
  g_assert_cmpint(counter(&r, "group_linear"), ==, 0);
  must_reject(&r, "group_linear", "guard even-dims failed: mm_2 multiplies [4, 7] by [7, 6]: every dim must be even");
  must_reject(&r, "group_linear", "set of 4 < min_fuse_set_size 5");
  run_free(&r);
  end();
}

/* ------------------------------------------------------------------ negative controls */

/* n linears on placeholders [16,16] with [16,16] weights, cat of all */
static void build_linears(int n, OxNodeId *l) {
  for (int i = 0; i < n; i++) {
    char a[24], b[24], c[24];
    snprintf(a, sizeof a, "x_%d", i);
    snprintf(b, sizeof b, "w_%d", i);
    snprintf(c, sizeof c, "linear_%d", i);
    l[i] = C(c, "torch.nn.functional.linear", vT(2, vN(PH(a, 16, 16)), vN(PH(b, 16, 16))), vNone());
  }
}

static void test_g25c_below_min(void) {
  begin();
  OxNodeId l[4];
  build_linears(4, l);
  OUT(vN(C("cat", "torch.cat", vT(2, vNodes(l, 4), vI(1)), vNone())));
  Run r;
  run(&r, "batch_linear", NULL);
  g_assert_cmpint(counter(&r, "batch_linear"), ==, 0);
  const OxStep *s = must_reject(&r, "batch_linear", "set of 4 < min_fuse_set_size 5");
  g_assert_cmpuint(s->n_matched, ==, 4);
  for (int i = 0; i < 4; i++) g_assert_true(step_lists(s, G->nodes[l[i]].name));
  g_assert_cmpstr(s->anchor, ==, "output"); /* the first root of the reverse sweep */
  /* recorded once although several roots see the same set */
  g_assert_cmpuint(n_rejections(&r, "batch_linear", OX_REASON_SET_TOO_SMALL, NULL), ==, 1);
  g_assert_cmpuint(count_target("torch.nn.functional.linear"), ==, 4);
  run_free(&r);
  /* with min_fuse_set_size 4 they fuse */
  run(&r, "batch_linear", "batch_linear.min_fuse_set_size=4", NULL);
  g_assert_cmpint(counter(&r, "batch_linear"), ==, 1);
  run_free(&r);
  end();
}

static void test_g25d_mutation(void) {
  begin();
  OxNodeId l[6];
  build_linears(6, l);
  OxNodeId y = PH("y", 16, 16);
  OxNodeId m = node_op(OX_OP_CALL_METHOD, "add_", "add_", vT(2, vN(l[3]), vN(y)), vNone(), false);
  OxNodeId cat = C("cat", "torch.cat", vT(2, vNodes(l, 6), vI(1)), vNone());
  OUT(vT(2, vN(cat), vN(m)));
  Run r;
  run(&r, "batch_linear", NULL);
  g_assert_cmpint(counter(&r, "batch_linear"), ==, 1);
  g_assert_cmpuint(find("linear_3"), !=, 0); /* kept */
  g_assert_cmpuint(find("linear_0"), ==, 0);
  must_reject(&r, "batch_linear", "linear_3 is mutated by add_");
  run_free(&r);
  end();

  /* an input written in place by another node is not read somewhere else */
  begin();
  build_linears(5, l);
  OxNodeId x2 = find("x_2");
  OxNodeId cp = node_op(OX_OP_CALL_METHOD, "copy_", "copy_", vT(2, vN(x2), vN(PH("z", 16, 16))), vNone(), false);
  cat = C("cat", "torch.cat", vT(2, vNodes(l, 5), vI(1)), vNone());
  OUT(vT(2, vN(cat), vN(cp)));
  run(&r, "batch_linear", NULL);
  g_assert_cmpint(counter(&r, "batch_linear"), ==, 0);
  must_reject(&r, "batch_linear", "x_2 is mutated by copy_");
  run_free(&r);
  end();
}

static void test_dependent(void) {
  begin();
  OxNodeId l[8];
  build_linears(7, l);
  OxNodeId t3 = C("tanh_3", "torch.tanh", vT(1, vN(l[3])), vNone());
  l[7] = C("linear_7", "torch.nn.functional.linear", vT(2, vN(t3), vN(PH("w_7", 16, 16))), vNone());
  OUT(vN(C("cat", "torch.cat", vT(2, vNodes(l, 8), vI(1)), vNone())));
  Run r;
  run(&r, "batch_linear", NULL);
  g_assert_cmpint(counter(&r, "batch_linear"), ==, 1);
  g_assert_cmpuint(find("linear_7"), !=, 0);
  g_assert_cmpuint(find("linear_3"), ==, 0);
  const OxStep *s = must_reject(&r, "batch_linear", "linear_3 is an ancestor of linear_7 (linear_3 → tanh_3 → linear_7)");
  g_assert_cmpstr(s->reason.nodes[0], ==, "linear_3");
  g_assert_cmpstr(s->reason.nodes[1], ==, "linear_7");
  g_assert_null(s->reason.nodes[2]);
  must_reject(&r, "batch_linear", "set of 1 < min_fuse_set_size 5");
  run_free(&r);
  end();
}

static void test_mismatch(void) {
  /* shapes: 3 x [8,16] and 2 x [8,32] tanh never share a key */
  begin();
  OxNodeId o[5];
  for (int i = 0; i < 5; i++) {
    char n[16];
    snprintf(n, sizeof n, "x_%d", i);
    OxNodeId x = i < 3 ? PH(n, 8, 16) : PH(n, 8, 32);
    snprintf(n, sizeof n, "tanh_%d", i);
    o[i] = C(n, "torch.tanh", vT(1, vN(x)), vNone());
  }
  OxValue items[5];
  for (int i = 0; i < 5; i++) items[i] = vN(o[i]);
  OUT(ox_graph_value_seq(G, OX_V_TUPLE, items, 5));
  Run r;
  run(&r, "batch_tanh", "batch_tanh.min_fuse_set_size=3", NULL);
  g_assert_cmpint(counter(&r, "batch_tanh"), ==, 1);
  g_assert_cmpuint(find("tanh_3"), !=, 0);
  g_assert_cmpuint(find("tanh_0"), ==, 0);
  must_reject(&r, "batch_tanh", "set of 2 < min_fuse_set_size 3");
  run_free(&r);
  end();

  /* dtypes: f32 and f16 of the same shape are not batched together (upstream would) */
  begin();
  for (int i = 0; i < 5; i++) {
    char n[16];
    snprintf(n, sizeof n, "x_%d", i);
    OxNodeId x = i % 2 ? PH16(n, 8, 16) : PH(n, 8, 16);
    o[i] = C(NULL, "torch.sigmoid", vT(1, vN(x)), vNone());
    items[i] = vN(o[i]);
  }
  OUT(ox_graph_value_seq(G, OX_V_TUPLE, items, 5));
  run(&r, "batch_sigmoid", "batch_sigmoid.min_fuse_set_size=3", NULL);
  g_assert_cmpint(counter(&r, "batch_sigmoid"), ==, 1);
  g_assert_cmpstr(shape_of(only("torch.stack")), ==, "f32[3, 8, 16]");
  must_reject(&r, "batch_sigmoid", "set of 2 < min_fuse_set_size 3");
  run_free(&r);
  end();

  /* post-grad binary ops need equal operand shapes; a broadcast add is refused with both shapes */
  begin();
  OxNodeId bias = PH("bias", 32);
  for (int i = 0; i < 5; i++) {
    char n[16];
    snprintf(n, sizeof n, "x_%d", i);
    OxNodeId x = PH(n, 16, 32);
    snprintf(n, sizeof n, "add_%d", i);
    o[i] = C(n, "torch.ops.aten.add.Tensor", vT(2, vN(x), vN(bias)), vNone());
    items[i] = vN(o[i]);
  }
  OUT(ox_graph_value_seq(G, OX_V_TUPLE, items, 5));
  run(&r, "batch_aten_add", NULL);
  g_assert_cmpint(counter(&r, "batch_aten_add"), ==, 0);
  must_reject(&r, "batch_aten_add", "input shapes f32[16, 32]cpu and f32[32]cpu differ");
  g_assert_cmpuint(n_rejections(&r, "batch_aten_add", OX_REASON_SHAPE_DIFFERS, NULL), ==, 5);
  run_free(&r);
  end();
}

static void test_guards(void) {
  /* dtype mismatch inside one linear, missing meta, symbolic size, rank */
  begin();
  OxNodeId l[8];
  OxNodeId x0 = PH("x_0", 16, 16), w0 = PH16("w_0", 16, 16);
  l[0] = node_op(OX_OP_CALL_FUNCTION, "linear_0", "torch.nn.functional.linear", vT(2, vN(x0), vN(w0)), vNone(), false);
  OxNodeId x1 = PH("x_1", 16, 16);
  OxNodeId w1 = ox_graph_add_node(G, OX_OP_PLACEHOLDER, "w_1", "w_1", vNone(), vNone()); /* no meta */
  l[1] = node_op(OX_OP_CALL_FUNCTION, "linear_1", "torch.nn.functional.linear", vT(2, vN(x1), vN(w1)), vNone(), false);
  OxNodeId x2 = PH("x_2", 16, 16);
  G->nodes[x2].meta.t[0].shape[0].sym = ox_graph_intern(G, "s0");
  l[2] = node_op(OX_OP_CALL_FUNCTION, "linear_2", "torch.nn.functional.linear", vT(2, vN(x2), vN(PH("w_2", 16, 16))),
                 vNone(), false);
  l[3] = C("linear_3", "torch.nn.functional.linear", vT(2, vN(PH("x_3", 2, 16, 16)), vN(PH("w_3", 16, 16))), vNone());
  OxValue items[4];
  for (int i = 0; i < 4; i++) items[i] = vN(l[i]);
  OUT(ox_graph_value_seq(G, OX_V_TUPLE, items, 4));
  Run r;
  OxDiagList d;
  ox_diags_init(&d, "t");
  OxPipeline p;
  g_assert_cmpint(ox_pipeline_from_list("batch_linear", &p, &d), ==, 0);
  OxCheckConfig ck;
  ox_check_config_default(&ck);
  r.t = ox_trace_new();
  g_assert_cmpint(ox_optimize(G, &p, &ck, r.t, &r.res, &d), ==, 0);
  ox_pipeline_free(&p);
  ox_diags_clear(&d);
  g_assert_cmpint(counter(&r, "batch_linear"), ==, 0);
  must_reject(&r, "batch_linear", "dtypes f32 (x_0) and f16 (w_0) differ");
  must_reject(&r, "batch_linear", "meta missing on w_1");
  must_reject(&r, "batch_linear", "symbolic size s0 on x_2");
  must_reject(&r, "batch_linear", "x_3 has rank 3, expected 2");
  /* one record per node and reason, however many roots reach it */
  g_assert_cmpuint(n_rejections(&r, "batch_linear", OX_REASON_META_MISSING, NULL), ==, 1);
  run_free(&r);
  end();

  /* relu(inplace=True) would write into its input: not batched */
  begin();
  OxNodeId o[5];
  for (int i = 0; i < 5; i++) {
    char n[16];
    snprintf(n, sizeof n, "x_%d", i);
    OxNodeId x = PH(n, 4, 4);
    snprintf(n, sizeof n, "relu_%d", i);
    o[i] = C(n, "torch.nn.functional.relu", vT(1, vN(x)), kw(1, "inplace", vB(i == 0)));
    items[i % 4] = vN(o[i]);
  }
  OUT(vNodes(o, 5));
  run(&r, "batch_relu", NULL);
  g_assert_cmpint(counter(&r, "batch_relu"), ==, 0);
  must_reject(&r, "batch_relu", "guard not-inplace failed: relu_0 has inplace=True: batching would not write into its input");
  run_free(&r);
  end();
}

/* A fuse whose inputs come after a user of another member: the engine moves the inputs'
 * upstream closure before that user so the list stays topological. */
static void test_reorder(void) {
  begin();
  OxNodeId l[5], u[5];
  OxNodeId x = PH("x", 16, 16);
  for (int i = 0; i < 5; i++) {
    char n[16];
    /* input chain computed late, right before this linear */
    snprintf(n, sizeof n, "pre_%d", i);
    OxNodeId pre = C(n, "torch.tanh", vT(1, vN(x)), vNone());
    snprintf(n, sizeof n, "w_%d", i);
    OxNodeId w = PH(n, 16, 16);
    snprintf(n, sizeof n, "linear_%d", i);
    l[i] = C(n, "torch.nn.functional.linear", vT(2, vN(pre), vN(w)), vNone());
    snprintf(n, sizeof n, "use_%d", i);
    u[i] = C(n, "torch.sigmoid", vT(1, vN(l[i])), vNone());
  }
  OUT(vN(C("cat", "torch.cat", vT(2, vNodes(u, 5), vI(1)), vNone())));
  /* the engine alone, without the driver's final re-sort */
  OxPassOptions opt;
  ox_pass_options_default(&opt);
  opt.max_fuse_search_depth = 2;
  OxCheckConfig ck;
  ox_check_config_default(&ck);
  OxTrace *t = ox_trace_new();
  OxPassCtx c;
  memset(&c, 0, sizeof c);
  c.g = G;
  c.pass = ox_pass_find("batch_linear");
  c.opt = &opt;
  c.checks = &ck;
  c.trace = t;
  c.record_rejections = true;
  g_assert_true(ox_graph_stable_toposort(G));
  g_assert_cmpint(ox_batch_apply(&c, ox_batch_rule_find("batch_linear")), ==, 1);
  ox_pass_ctx_clear(&c);
  OxDiagList d;
  ox_diags_init(&d, "t");
  int errs = ox_graph_verify(G, true, &d);
  for (size_t i = 0; i < d.n; i++) g_test_message("verify: %s", d.items[i].msg);
  g_assert_cmpint(errs, ==, 0);
  ox_diags_clear(&d);
  /* the inputs' closure moved before use_0, in order, and the step's script says so */
  OxNodeId use0 = find("use_0");
  for (int i = 0; i < 5; i++) {
    char n[16];
    snprintf(n, sizeof n, "pre_%d", i);
    g_assert_true(ox_graph_before(G, find(n), use0));
  }
  g_assert_true(ox_graph_before(G, find("pre_3"), find("pre_4")));
  const OxStep *s = NULL;
  for (uint32_t i = 0; i < t->n_steps; i++)
    if (t->steps[i].kind == OX_STEP_APPLIED) s = &t->steps[i];
  g_assert_nonnull(s);
  uint32_t moves = 0;
  for (uint32_t i = 0; i < s->n_edits; i++) moves += s->edits[i].kind == OX_TEDIT_MOVE;
  g_assert_cmpuint(moves, >, 0);
  g_assert_cmpint(s->checks[OX_CHECK_NUMERIC].status, ==, OX_CHECK_PASSED);
  ox_trace_free(t);
  end();
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/batch/greedy-g1", test_greedy_g1);
  g_test_add_func("/engine/batch/greedy-g2", test_greedy_g2);
  g_test_add_func("/engine/batch/greedy-g3", test_greedy_g3);
  g_test_add_func("/engine/batch/greedy-g4", test_greedy_g4);
  for (size_t i = 0; i < G_N_ELEMENTS(upstream_greedy); i++) {
    char name[96];
    snprintf(name, sizeof name, "/engine/batch/upstream/test_find_independent_subset_greedy/verify-%02zu", i + 1);
    g_test_add_data_func(name, GSIZE_TO_POINTER(i), test_upstream_greedy);
  }
  g_test_add_func("/engine/batch/upstream/test_find_independent_subset_greedy_fuse", test_greedy_g4);
  g_test_add_func("/engine/batch/path", test_path);
  g_test_add_func("/engine/batch/cat-linear", test_cat_linear);
  g_test_add_func("/engine/batch/g5-batch-linear", test_g5_batch_linear);
  g_test_add_func("/engine/batch/g6-batch-linear-lhs", test_g6_batch_linear_lhs);
  g_test_add_func("/engine/batch/g7-batch-layernorm", test_g7_batch_layernorm);
  g_test_add_func("/engine/batch/g8-pointwise", test_g8_pointwise);
  g_test_add_func("/engine/batch/g9-math", test_g9_math);
  g_test_add_func("/engine/batch/g10-linear-post-grad", test_g10_linear_post_grad);
  g_test_add_func("/engine/batch/g11-highway", test_g11_highway);
  g_test_add_func("/engine/batch/pre-pointwise-rules", test_pre_pointwise_rules);
  g_test_add_func("/engine/batch/post-pointwise-rules", test_post_pointwise_rules);
  g_test_add_func("/engine/batch/group-linear", test_group_linear);
  g_test_add_func("/engine/batch/g25c-below-min", test_g25c_below_min);
  g_test_add_func("/engine/batch/g25d-mutation", test_g25d_mutation);
  g_test_add_func("/engine/batch/dependent", test_dependent);
  g_test_add_func("/engine/batch/mismatch", test_mismatch);
  g_test_add_func("/engine/batch/guards", test_guards);
  g_test_add_func("/engine/batch/reorder", test_reorder);
  return g_test_run();
}
