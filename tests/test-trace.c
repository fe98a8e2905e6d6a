/* Tests for the step protocol, the checks, the driver, trace files and replay, using small
 * test-local passes (good and deliberately broken ones) so they do not depend on the
 * built-in passes. */
#include <glib.h>
#include <json.h>
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <stdlib.h>

#include "gen-graphs.h"
#include "ir/ox_gzip.h"
#include "load/ox_load.h"
#include "load/ox_parse.h"
#include "ops/ox_shape.h"
#include "passes/ox_pass.h"
#include "run/ox_coverage.h"
#include "trace-compare.h"
#include "write/ox_write.h"

static OxValue tup(OxGraph *g, uint32_t n, const OxValue *items) { return ox_graph_value_seq(g, OX_V_TUPLE, items, n); }

static OxNodeId ph(OxGraph *g, const char *name, int64_t a, int64_t b) {
  OxNodeId id = ox_graph_add_node(g, OX_OP_PLACEHOLDER, name, name, ox_value_none(), ox_value_none());
  OxTensorMeta *t = ox_graph_tensor_meta_new(g, OX_DT_F32, 2);
  t->shape[0].v = a;
  t->shape[1].v = b;
  OxMeta m = {.kind = OX_META_TENSOR, .n = 1, .t = t};
  ox_graph_set_meta(g, id, &m);
  return id;
}

static OxNodeId unary(OxGraph *g, const char *target, OxNodeId x) {
  OxValue a[1] = {ox_value_node(x)};
  return ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, target, tup(g, 1, a), ox_value_none());
}

/* x -> relu -> relu -> tanh -> add(tanh, x) -> output; with inferred meta */
static OxGraph *sample(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x", 4, 8);
  OxNodeId r1 = unary(g, "torch.relu", x);
  OxNodeId r2 = unary(g, "torch.relu", r1);
  OxNodeId t = unary(g, "torch.tanh", r2);
  OxValue a[2] = {ox_value_node(t), ox_value_node(x)};
  OxNodeId add = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "operator.add", tup(g, 2, a), ox_value_none());
  OxValue o[1] = {ox_value_node(add)};
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, 1, o), ox_value_none());
  g_assert_cmpint(ox_shape_infer_graph(g, NULL, NULL), ==, 0);
  return g;
}

/* A correct pass: relu(relu(x)) -> relu(x) (the outer relu is replaced by a new relu of x). */
static int pass_relu_relu(OxPassCtx *c) {
  int applied = 0;
  OxGraph *g = c->g;
  for (OxNodeId id = g->head; id; id = g->link[id].next) {
    OxNode *n = &g->nodes[id];
    if (n->erased || strcmp(n->target, "torch.relu") != 0) continue;
    OxNodeId in = n->args.u.items[0].u.node;
    if (strcmp(g->nodes[in].target, "torch.relu") != 0) {
      const OxNode *src = &g->nodes[in];
      const char *what = src->op == OX_OP_CALL_FUNCTION ? src->target : ox_op_name((OxOp)src->op);
      OxReason r = ox_reason(c, OX_REASON_TARGET_MISMATCH, src->name, what, "torch.relu", NULL);
      ox_step_reject(c, "relu_relu", id, &id, 1, &r);
      continue;
    }
    ox_step_begin(c, "relu_relu", id);
    OxNodeId m[2] = {in, id};
    ox_step_matched(c, m, 2);
    OxNodeId nw = ox_graph_insert_after(g, id, OX_OP_CALL_FUNCTION, NULL, "torch.relu",
                                        ox_graph_value_copy(g, &g->nodes[in].args), ox_value_none());
    ox_graph_replace_all_uses(g, id, nw);
    ox_graph_erase(g, id);
    if (!g->nodes[in].n_users) ox_graph_erase(g, in);
    if (ox_step_commit(c)) {
      applied++;
      ox_counter_add(c, "relu_relu", 1);
    }
    id = nw;
  }
  return applied;
}

/* A broken pass: tanh(x) -> sigmoid(x). Same shape, wrong values: only the numeric check sees it. */
static int pass_bad_values(OxPassCtx *c) {
  OxGraph *g = c->g;
  int applied = 0;
  for (OxNodeId id = g->head; id; id = g->link[id].next) {
    if (g->nodes[id].erased || strcmp(g->nodes[id].target, "torch.tanh") != 0) continue;
    ox_step_begin(c, "tanh_to_sigmoid", id);
    ox_step_matched(c, &id, 1);
    OxNodeId nw = ox_graph_insert_after(g, id, OX_OP_CALL_FUNCTION, NULL, "torch.sigmoid",
                                        ox_graph_value_copy(g, &g->nodes[id].args), ox_value_none());
    ox_graph_replace_all_uses(g, id, nw);
    ox_graph_erase(g, id);
    applied += ox_step_commit(c);
    break;
  }
  return applied;
}

/* A broken pass: tanh(x) -> sum(x, 1). Wrong shape: the shape check sees it. */
static int pass_bad_shape(OxPassCtx *c) {
  OxGraph *g = c->g;
  for (OxNodeId id = g->head; id; id = g->link[id].next) {
    if (g->nodes[id].erased || strcmp(g->nodes[id].target, "torch.tanh") != 0) continue;
    ox_step_begin(c, "tanh_to_sum", id);
    ox_step_matched(c, &id, 1);
    OxValue a[2] = {ox_graph_value_copy(g, &g->nodes[id].args.u.items[0]), ox_value_int(1)};
    OxNodeId nw = ox_graph_insert_after(g, id, OX_OP_CALL_FUNCTION, NULL, "torch.sum", tup(g, 2, a), ox_value_none());
    ox_graph_replace_all_uses(g, id, nw);
    ox_graph_erase(g, id);
    return ox_step_commit(c);
  }
  return 0;
}

/* A broken pass: makes a cycle (tanh's input becomes the add that consumes it). */
static int pass_cycle(OxPassCtx *c) {
  OxGraph *g = c->g;
  OxNodeId t = 0, add = 0;
  OX_GRAPH_FOREACH(g, id) {
    if (!strcmp(g->nodes[id].target, "torch.tanh")) t = id;
    if (!strcmp(g->nodes[id].target, "operator.add")) add = id;
  }
  ox_step_begin(c, "cycle", t);
  ox_step_matched(c, &t, 1);
  ox_graph_replace_input(g, t, g->nodes[t].args.u.items[0].u.node, add);
  return ox_step_commit(c);
}

static const OxPassInfo good = {"relu_relu", OX_PHASE_PRE, OX_ENGINE_PATTERN, pass_relu_relu, "test"};
static const OxPassInfo bad_values = {"bad_values", OX_PHASE_PRE, OX_ENGINE_PATTERN, pass_bad_values, "test"};
static const OxPassInfo bad_shape = {"bad_shape", OX_PHASE_PRE, OX_ENGINE_PATTERN, pass_bad_shape, "test"};
static const OxPassInfo cycle = {"cycle", OX_PHASE_PRE, OX_ENGINE_PATTERN, pass_cycle, "test"};

static void pipeline_of(OxPipeline *p, const OxPassInfo *pass) {
  memset(p, 0, sizeof *p); /* default budgets */
  p->n = 1;
  p->entries = g_new0(OxPipelineEntry, 1);
  p->entries[0].pass = pass;
  ox_pass_options_default(&p->entries[0].opt);
}

static char *fx_of(const OxGraph *g) {
  OxBuf b;
  ox_buf_init(&b);
  ox_write_fx_text(g, &b);
  return b.data;
}

static OxTrace *run(OxGraph *g, const OxPassInfo *pass, bool keep_failed, OxOptimizeResult *res) {
  OxPipeline p;
  pipeline_of(&p, pass);
  OxCheckConfig cc;
  ox_check_config_default(&cc);
  cc.keep_failed = keep_failed;
  OxTrace *t = ox_trace_new();
  OxDiagList d;
  ox_diags_init(&d, "t");
  g_assert_cmpint(ox_optimize(g, &p, &cc, t, res, &d), ==, 0);
  ox_diags_clear(&d);
  g_free(p.entries);
  return t;
}

static void test_applied_step(void) {
  OxGraph *g = sample();
  OxGraph *input = ox_graph_clone(g);
  OxOptimizeResult res;
  OxTrace *t = run(g, &good, false, &res);
  g_assert_cmpuint(res.applied, ==, 1);
  g_assert_cmpuint(res.check_failures, ==, 0);
  g_assert_cmpuint(res.rejected, ==, 1); /* the first relu's input is x */
  g_assert_cmpuint(res.n_counters, ==, 1);
  g_assert_cmpstr(res.counter_names[0], ==, "relu_relu");
  g_assert_cmpint(res.counter_values[0], ==, 1);
  const OxStep *rej = &t->steps[0], *s = &t->steps[1];
  g_assert_cmpint(rej->kind, ==, OX_STEP_REJECTED);
  char *why = ox_reason_format(&rej->reason);
  g_assert_cmpstr(why, ==, "x is placeholder, pattern wants torch.relu");
  free(why);
  g_assert_cmpint(s->kind, ==, OX_STEP_APPLIED);
  g_assert_cmpuint(s->applied_index, ==, 1);
  g_assert_cmpstr(s->anchor, ==, "relu_1");
  g_assert_cmpuint(s->n_removed, ==, 2);
  g_assert_cmpuint(s->n_added, ==, 1);
  g_assert_cmpstr(s->added[0], ==, "relu_2");
  /* relu_2 took over relu_1's users: a replacement pair; shape and numbers checked */
  g_assert_cmpuint(s->n_prov, >=, 1);
  g_assert_cmpstr(s->prov_old[0], ==, "relu_1");
  g_assert_cmpstr(s->prov_new[0], ==, "relu_2");
  for (int k = 0; k < OX_CHECK_KINDS; k++) {
    if (s->checks[k].status != OX_CHECK_PASSED) g_printerr("check %d: %s\n", k, s->checks[k].detail);
    g_assert_cmpint(s->checks[k].status, ==, OX_CHECK_PASSED);
  }
  g_assert_cmpuint(s->checks[OX_CHECK_NUMERIC].trials, ==, 3);
  g_assert_cmpfloat(s->checks[OX_CHECK_NUMERIC].max_abs, ==, 0.0);
  /* meta of the new node was inferred, provenance points into the input graph */
  OxNodeId nw = ox_graph_find(g, "relu_2");
  g_assert_cmpint(g->nodes[nw].meta.kind, ==, OX_META_TENSOR);
  g_assert_cmpuint(g->nodes[nw].n_provenance, >=, 1);
  g_assert_cmpint(ox_graph_verify(g, true, &(OxDiagList){0}), ==, 0);
  /* replay rebuilds the optimized graph from the input and the edit script */
  OxGraph *re = ox_graph_clone(input);
  OxDiagList d;
  ox_diags_init(&d, "replay");
  g_assert_cmpint(ox_replay(re, t, UINT32_MAX, &d), ==, 0);
  char *a = fx_of(g), *b = fx_of(re);
  g_assert_cmpstr(a, ==, b);
  free(a);
  free(b);
  /* replay to step 0 is the input */
  OxGraph *re0 = ox_graph_clone(input);
  g_assert_cmpint(ox_replay(re0, t, 0, &d), ==, 0);
  a = fx_of(input);
  b = fx_of(re0);
  g_assert_cmpstr(a, ==, b);
  free(a);
  free(b);
  /* explain: steps mentioning relu_1 are the rejection? no: rejection is about relu (anchor), applied about relu_1 */
  uint32_t idx[8];
  g_assert_cmpuint(ox_trace_steps_for_node(t, "relu_1", idx, 8), ==, 1);
  g_assert_cmpuint(idx[0], ==, 1);
  g_assert_cmpuint(ox_trace_steps_for_node(t, "relu", idx, 8), ==, 2);
  /* a trace refuses to replay on a different graph */
  OxGraph *other = sample();
  ox_graph_rename(other, ox_graph_find(other, "x"), "y");
  ox_diags_clear(&d);
  g_assert_cmpint(ox_replay(other, t, UINT32_MAX, &d), ==, -1);
  g_assert_nonnull(strstr(d.items[0].msg, "another graph"));
  ox_diags_clear(&d);
  ox_graph_free(other);
  ox_graph_free(re0);
  ox_graph_free(re);
  ox_graph_free(input);
  ox_trace_free(t);
  ox_graph_free(g);
}

static void test_trace_json_roundtrip(void) {
  OxGraph *g = sample();
  OxGraph *input = ox_graph_clone(g);
  OxOptimizeResult res;
  OxTrace *t = run(g, &good, false, &res);
  t->input_file = ox_trace_intern(t, "sample.txt");
  OxBuf b;
  ox_buf_init(&b);
  ox_trace_write_json(t, &b);
  OxTrace *t2 = NULL;
  OxDiagList d;
  ox_diags_init(&d, "trace.json");
  int rc = ox_trace_read_json(b.data, b.len, "trace.json", &t2, &d);
  if (rc) ox_diags_print(&d, stderr);
  g_assert_cmpint(rc, ==, 0);
  g_assert_cmpuint(t2->n_steps, ==, t->n_steps);
  g_assert_cmpuint(t2->n_applied, ==, 1);
  g_assert_cmpuint(t2->n_rejected, ==, 1);
  g_assert_cmpstr(t2->input_hash, ==, t->input_hash);
  g_assert_cmpstr(t2->steps[1].checks[OX_CHECK_NUMERIC].detail, ==, t->steps[1].checks[OX_CHECK_NUMERIC].detail);
  char *r1 = ox_reason_format(&t->steps[0].reason), *r2 = ox_reason_format(&t2->steps[0].reason);
  g_assert_cmpstr(r1, ==, r2);
  free(r1);
  free(r2);
  /* writing the read trace gives the same bytes */
  OxBuf b2;
  ox_buf_init(&b2);
  ox_trace_write_json(t2, &b2);
  g_assert_cmpstr(b.data, ==, b2.data);
  /* the read trace replays to the same graph */
  OxGraph *re = ox_graph_clone(input);
  g_assert_cmpint(ox_replay(re, t2, UINT32_MAX, &d), ==, 0);
  char *a = fx_of(g), *c = fx_of(re);
  g_assert_cmpstr(a, ==, c);
  free(a);
  free(c);
  /* damaged trace files give located errors */
  const char *bad[] = {
    "{\"format\": \"optimus-trace\", \"version\": 4, \"steps\": []}",
    "{\"format\": \"optimus-trace\", \"version\": 2, \"steps\": [{\"kind\": \"applied\", \"edits\": [{\"kind\": \"replace_input\", \"name\": \"x\", \"old\": \"y\"}]}]}",
    "{\"format\": \"optimus-fx\", \"version\": 1}",
    "{\"format\": \"optimus-trace\", \"version\": 1,\n \"steps\": [{\"kind\": \"maybe\"}]}",
    "{\"format\": \"optimus-trace\", \"version\": 1, \"steps\": [{\"kind\": \"rejected\", \"reason\": {\"code\": \"NOPE\"}}]}",
    "{\"format\": \"optimus-trace\", \"version\": 1, \"steps\": [{\"kind\": \"applied\", \"edits\": [{\"kind\": \"add\"}]}]}",
    "{\"format\": \"optimus-trace\", \"version\": 1, \"steps\": [",
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    OxTrace *tb = NULL;
    ox_diags_clear(&d);
    g_assert_cmpint(ox_trace_read_json(bad[i], strlen(bad[i]), "bad.json", &tb, &d), ==, -1);
    g_assert_null(tb);
    g_assert_cmpuint(d.n_errors, >, 0);
    g_assert_cmpuint(d.items[0].line, >, 0);
  }
  ox_diags_clear(&d);
  ox_buf_free(&b);
  ox_buf_free(&b2);
  ox_graph_free(re);
  ox_graph_free(input);
  ox_trace_free(t);
  ox_trace_free(t2);
  ox_graph_free(g);
}

static void assert_unchanged(OxGraph *before, OxGraph *after) {
  char *a = fx_of(before), *b = fx_of(after);
  g_assert_cmpstr(a, ==, b);
  free(a);
  free(b);
}

/* The streaming trace reader against damaged files: thousands of mutations of a real trace
 * (truncations, byte changes, deletions, spliced copies). Whenever json-c's strict parser
 * rejects the whole text, the reader rejects it too, with a located error; it never crashes
 * or accepts half a file. */
static bool json_c_accepts(const char *text, size_t len) {
  struct json_tokener *tok = json_tokener_new_ex(256);
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
  char *z = g_malloc(len + 1);
  memcpy(z, text, len);
  z[len] = 0;
  size_t start = len >= 3 && memcmp(z, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
  json_object *o = json_tokener_parse_ex(tok, z + start, (int)(len - start + 1));
  bool ok = o && json_tokener_get_parse_end(tok) >= len - start;
  json_object_put(o);
  json_tokener_free(tok);
  g_free(z);
  return ok;
}

static void test_trace_reader_damaged(gconstpointer data) {
  int version = GPOINTER_TO_INT(data);
  OxGraph *g = sample();
  OxOptimizeResult res;
  OxTrace *t = run(g, &good, false, &res);
  OxBuf b;
  ox_buf_init(&b);
  ox_trace_write_json_version(t, version, &b);
  GRand *r = g_rand_new_with_seed(7);
  static const char subst[] = "{}[],:\"x0 \n\\-e.";
  uint32_t rejected = 0, accepted = 0;
  for (int trial = 0; trial < 3000; trial++) {
    GString *m = g_string_new_len(b.data, (gssize)b.len);
    int kind = g_rand_int_range(r, 0, 4);
    gsize at = (gsize)g_rand_int_range(r, 0, (gint32)b.len);
    if (kind == 0) g_string_truncate(m, at);
    else if (kind == 1) m->str[at] = subst[g_rand_int_range(r, 0, (gint32)sizeof subst - 1)];
    else if (kind == 2) g_string_erase(m, (gssize)at, 1);
    else {
      gsize from = (gsize)g_rand_int_range(r, 0, (gint32)b.len), n = (gsize)g_rand_int_range(r, 1, 40);
      if (from + n > b.len) n = b.len - from;
      g_string_insert_len(m, (gssize)at, b.data + from, (gssize)n);
    }
    OxDiagList d;
    ox_diags_init(&d, "damaged.json");
    OxTrace *back = NULL;
    int rc = ox_trace_read_json(m->str, m->len, "damaged.json", &back, &d);
    if (!json_c_accepts(m->str, m->len)) {
      if (rc != -1) g_test_message("accepted invalid JSON (trial %d): %s", trial, m->str);
      g_assert_cmpint(rc, ==, -1);
    }
    if (rc == -1) {
      g_assert_null(back);
      g_assert_cmpuint(d.n_errors, >, 0);
      g_assert_cmpuint(d.items[0].line, >, 0);
      rejected++;
    } else {
      g_assert_nonnull(back);
      accepted++;
    }
    ox_trace_free(back);
    ox_diags_clear(&d);
    g_string_free(m, TRUE);
  }
  g_test_message("damaged version %d traces: %u rejected, %u accepted", version, rejected, accepted);
  /* both outcomes occurred (a byte change inside a string is still a valid trace) */
  g_assert_cmpuint(rejected, >, 1000);
  g_assert_cmpuint(accepted, >, 10);
  g_rand_free(r);
  ox_buf_free(&b);
  ox_trace_free(t);
  ox_graph_free(g);
}

static void test_numeric_check_rolls_back(void) {
  OxGraph *g = sample();
  OxGraph *input = ox_graph_clone(g);
  OxOptimizeResult res;
  OxTrace *t = run(g, &bad_values, false, &res);
  g_assert_cmpuint(res.applied, ==, 0);
  g_assert_cmpuint(res.check_failures, ==, 1);
  const OxStep *s = &t->steps[0];
  g_assert_cmpint(s->kind, ==, OX_STEP_CHECK_FAILED);
  g_assert_cmpint(s->checks[OX_CHECK_STRUCTURE].status, ==, OX_CHECK_PASSED);
  g_assert_cmpint(s->checks[OX_CHECK_SHAPE].status, ==, OX_CHECK_PASSED);
  g_assert_cmpint(s->checks[OX_CHECK_NUMERIC].status, ==, OX_CHECK_FAILED);
  g_assert_cmpfloat(s->checks[OX_CHECK_NUMERIC].max_abs, >, 0.01);
  char *why = ox_reason_format(&s->reason);
  g_assert_nonnull(strstr(why, "check numeric failed"));
  g_assert_nonnull(strstr(why, "sigmoid vs tanh"));
  free(why);
  assert_unchanged(input, g);
  ox_trace_free(t);
  ox_graph_free(g);
  /* --keep-failed keeps the rewrite for debugging */
  g = ox_graph_clone(input);
  t = run(g, &bad_values, true, &res);
  g_assert_cmpuint(res.check_failures, ==, 1);
  g_assert_cmpuint(t->steps[0].applied_index, ==, 1);
  g_assert_cmpuint(ox_graph_find(g, "tanh"), ==, 0);
  ox_trace_free(t);
  ox_graph_free(g);
  ox_graph_free(input);
}

static void test_shape_check_rolls_back(void) {
  OxGraph *g = sample();
  OxGraph *input = ox_graph_clone(g);
  OxOptimizeResult res;
  OxTrace *t = run(g, &bad_shape, false, &res);
  g_assert_cmpuint(res.check_failures, ==, 1);
  const OxStep *s = &t->steps[0];
  g_assert_cmpint(s->checks[OX_CHECK_SHAPE].status, ==, OX_CHECK_FAILED);
  g_assert_nonnull(strstr(s->checks[OX_CHECK_SHAPE].detail, "tanh (f32[4, 8]) was replaced by sum (f32[4])"));
  g_assert_cmpint(s->checks[OX_CHECK_NUMERIC].status, ==, OX_CHECK_NOT_RUN); /* stops at the first failure */
  assert_unchanged(input, g);
  ox_trace_free(t);
  ox_graph_free(g);
  ox_graph_free(input);
}

static void test_structure_check_catches_cycle(void) {
  OxGraph *g = sample();
  OxGraph *input = ox_graph_clone(g);
  OxOptimizeResult res;
  OxTrace *t = run(g, &cycle, false, &res);
  g_assert_cmpuint(res.check_failures, ==, 1);
  g_assert_cmpint(t->steps[0].checks[OX_CHECK_STRUCTURE].status, ==, OX_CHECK_FAILED);
  g_assert_nonnull(strstr(t->steps[0].checks[OX_CHECK_STRUCTURE].detail, "cycle"));
  assert_unchanged(input, g);
  ox_trace_free(t);
  ox_graph_free(g);
  ox_graph_free(input);
}


/* The structure check's cycle verdict against a from-scratch one (a stable toposort of a clone
 * fails exactly on a cycle), over random steps on random DAGs: out-of-order insertions, moves,
 * rewirings that do or do not close a cycle, with the order known topological at the step's start
 * (driver case), or not (a mutation outside any step first). Covers the three ways the check
 * decides (ox_check.c): order still topological, a window search between backward edges, and the
 * upstream-closure search. */
static void test_cycle_check_property(void) {
  GRand *r = g_rand_new_with_seed(2024);
  OxCheckConfig cc;
  ox_check_config_default(&cc);
  cc.shape = cc.numeric = false;
  uint32_t seen[3] = {0, 0, 0}; /* how: topological, window, closure */
  uint32_t cycles = 0, accepted = 0;
  for (int trial = 0; trial < 300; trial++) {
    OxGraph *g = ox_graph_new();
    OxNodeId ids[200];
    int n = 0;
    ids[n++] = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "x", "x", ox_value_none(), ox_value_none());
    int size = g_rand_int_range(r, 4, 40);
    for (int i = 1; i < size; i++) {
      OxValue items[2];
      int k = g_rand_int_range(r, 1, 3);
      for (int j = 0; j < k; j++) items[j] = ox_value_node(ids[g_rand_int_range(r, 0, n)]);
      ids[n++] = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "operator.add", tup(g, (uint32_t)k, items),
                                   ox_value_none());
    }
    g_assert_true(ox_graph_stable_toposort(g));
    OxTrace *t = ox_trace_new();
    for (int step = 0; step < 8 && n < 190; step++) {
      if (g_rand_int_range(r, 0, 6) == 0) {
        /* outside any step: an insertion at the head using a later node leaves the order unknown */
        OxValue a[1] = {ox_value_node(ids[g_rand_int_range(r, 0, n)])};
        ids[n++] = ox_graph_insert_before(g, g->head, OX_OP_CALL_FUNCTION, NULL, "torch.relu", tup(g, 1, a),
                                          ox_value_none());
      }
      OxPassCtx c;
      memset(&c, 0, sizeof c);
      c.g = g;
      c.pass = &good;
      c.checks = &cc;
      c.trace = t;
      OxNodeId anchor = ids[g_rand_int_range(r, 0, n)];
      if (g->nodes[anchor].erased) continue;
      ox_step_begin(&c, "random", anchor);
      ox_step_matched(&c, &anchor, 1);
      int edits = g_rand_int_range(r, 1, 4);
      for (int e = 0; e < edits; e++) {
        OxNodeId a = ids[g_rand_int_range(r, 0, n)], b = ids[g_rand_int_range(r, 0, n)];
        if (g->nodes[a].erased || g->nodes[b].erased || a == b) continue;
        switch (g_rand_int_range(r, 0, 4)) {
        case 0: { /* a new node using a, inserted anywhere, taking over one user of b */
          OxValue items[1] = {ox_value_node(a)};
          OxNodeId nw = ox_graph_insert_before(g, ids[g_rand_int_range(r, 0, n)], OX_OP_CALL_FUNCTION, NULL,
                                               "torch.tanh", tup(g, 1, items), ox_value_none());
          ids[n++] = nw;
          if (g->nodes[b].n_users && g->nodes[b].users[0] != nw && b != ids[0])
            ox_graph_replace_input(g, g->nodes[b].users[0], b, nw);
          break;
        }
        case 1: /* rewire: b now uses a (a cycle when a depends on b) */
          if (b != ids[0] && g->nodes[b].args.n)
            ox_graph_replace_input(g, b, g->nodes[b].args.u.items[0].u.node, a);
          break;
        case 2: ox_graph_move_after(g, a, b); break;
        case 3: ox_graph_move_before(g, a, b); break;
        }
      }
      OxGraph *copy = ox_graph_clone(g);
      bool acyclic = ox_graph_stable_toposort(copy);
      ox_graph_free(copy);
      bool ok = ox_step_commit(&c);
      g_assert_cmpint(ok, ==, acyclic);
      const OxStep *st = &t->steps[t->n_steps - 1];
      const char *detail = st->checks[OX_CHECK_STRUCTURE].detail;
      g_assert_nonnull(detail);
      if (!acyclic) {
        g_assert_nonnull(strstr(detail, "cycle through"));
        cycles++;
      } else {
        accepted++;
        if (strstr(detail, "(order topological")) seen[0]++;
        else if (strstr(detail, "backward edges")) seen[1]++;
        else if (strstr(detail, "upstream closure")) seen[2]++;
        else g_assert_not_reached();
      }
      /* the flag never claims a topological order that is not one */
      if (ox_graph_order_known_topological(g)) {
        ox_graph_renumber(g);
        OX_GRAPH_FOREACH(g, id) {
          OxNodeId in[8];
          uint32_t k = ox_graph_inputs(g, id, in, 8);
          for (uint32_t i = 0; i < k && i < 8; i++) g_assert_cmpuint(g->nodes[in[i]].pos, <, g->nodes[id].pos);
        }
      }
      ox_pass_ctx_clear(&c);
    }
    ox_trace_free(t);
    ox_graph_free(g);
  }
  if (g_test_verbose())
    g_printerr("cycles %u, accepted %u (topological %u, window %u, closure %u)\n", cycles, accepted, seen[0],
               seen[1], seen[2]);
  /* every way of deciding was exercised, and both verdicts occurred */
  g_assert_cmpuint(cycles, >, 0);
  g_assert_cmpuint(seen[0], >, 0);
  g_assert_cmpuint(seen[1], >, 0);
  g_assert_cmpuint(seen[2], >, 0);
  g_rand_free(r);
}

/* A step whose log is long (one node rewired hundreds of times, many erases and renames)
 * builds the same edit script as the step's effect: replaying the trace gives the graph the
 * pass produced. */
static int pass_wide(OxPassCtx *c) {
  OxGraph *g = c->g;
  OxNodeId cat = 0;
  OX_GRAPH_FOREACH(g, id) if (!strcmp(g->nodes[id].target, "torch.cat")) cat = id;
  if (!cat) return 0;
  const OxValue *list = &g->nodes[cat].args.u.items[0];
  uint32_t n = list->n;
  OxNodeId *in = g_new(OxNodeId, n);
  for (uint32_t i = 0; i < n; i++) in[i] = list->u.items[i].u.node;
  ox_step_begin(c, "wide", cat);
  ox_step_matched(c, in, n);
  for (uint32_t i = 0; i < n; i++) {
    /* replace relu_i by a new relu (which then takes the old one's name) */
    OxValue a[1] = {g->nodes[in[i]].args.u.items[0]};
    OxNodeId nw = ox_graph_insert_after(g, in[i], OX_OP_CALL_FUNCTION, NULL, "torch.relu", tup(g, 1, a),
                                        ox_value_none());
    ox_graph_replace_all_uses(g, in[i], nw);
    char old[64];
    snprintf(old, sizeof old, "%s", g->nodes[in[i]].name);
    ox_graph_erase(g, in[i]);
    g_assert_true(ox_graph_rename(g, nw, old));
  }
  g_free(in);
  return ox_step_commit(c);
}

static const OxPassInfo wide = {"wide", OX_PHASE_PRE, OX_ENGINE_PATTERN, pass_wide, "test"};

static void test_long_step_replays(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x", 4, 8);
  OxValue items[200];
  for (int i = 0; i < 200; i++) items[i] = ox_value_node(unary(g, "torch.relu", x));
  OxValue l = ox_graph_value_seq(g, OX_V_LIST, items, 200);
  OxValue ca[2] = {l, ox_value_int(1)};
  OxNodeId cat = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "cat", "torch.cat", tup(g, 2, ca), ox_value_none());
  OxValue o[1] = {ox_value_node(cat)};
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, 1, o), ox_value_none());
  g_assert_cmpint(ox_shape_infer_graph(g, NULL, NULL), ==, 0);
  OxGraph *input = ox_graph_clone(g);
  OxOptimizeResult res;
  OxTrace *t = run(g, &wide, false, &res);
  g_assert_cmpuint(res.applied, ==, 1);
  g_assert_cmpint(t->steps[0].checks[OX_CHECK_NUMERIC].status, ==, OX_CHECK_PASSED);
  g_assert_cmpuint(t->steps[0].n_added, ==, 200);
  g_assert_cmpuint(t->steps[0].n_removed, ==, 200);
  /* provenance: each new relu came from the relu it replaced (same name now), once */
  g_assert_cmpuint(t->steps[0].n_prov, ==, 200);
  for (uint32_t i = 0; i < t->steps[0].n_prov; i++) g_assert_cmpstr(t->steps[0].prov_old[i], ==, t->steps[0].prov_new[i]);
  /* the 200 rewires of the cat are 200 replace_input edits, not 200 copies of its 200 inputs */
  uint32_t kinds[8] = {0};
  for (uint32_t i = 0; i < t->steps[0].n_edits; i++) kinds[t->steps[0].edits[i].kind]++;
  g_assert_cmpuint(kinds[OX_TEDIT_REPLACE], ==, 200);
  g_assert_cmpuint(kinds[OX_TEDIT_ARGS], ==, 0);
  g_assert_cmpuint(kinds[OX_TEDIT_META], ==, 0); /* inferred metas ride on the adds */
  /* and the transaction log copied the cat's args once */
  uint32_t n_log, args_entries = 0, replace_entries = 0;
  const OxEdit *log = ox_graph_txn_edits(g, &n_log);
  OxNodeId catid = ox_graph_find(g, "cat");
  for (uint32_t i = 0; i < n_log; i++) {
    if (log[i].node != catid) continue;
    args_entries += log[i].kind == OX_EDIT_ARGS;
    replace_entries += log[i].kind == OX_EDIT_REPLACE;
  }
  g_assert_cmpuint(args_entries, ==, 1);
  g_assert_cmpuint(replace_entries, ==, 199);
  OxDiagList d;
  ox_diags_init(&d, "t");
  /* replay from the JSON file's content */
  OxBuf js;
  ox_buf_init(&js);
  ox_trace_write_json_version(t, 3, &js);
  uint32_t rewires = 0, replaces = 0;
  for (const char *q = js.data; (q = strstr(q, "[\"replace_input\",")) != NULL; q++) rewires++;
  g_assert_cmpuint(rewires, ==, 200);
  /* version 4: each relu's add, the cat's rewire and the old relu's erase are one replace edit;
   * the provenance is written all the same, since the new relus are then renamed to the old
   * names (the pairs the replace edits say are not the step's) */
  js.len = 0;
  ox_trace_write_json(t, &js);
  for (const char *q = js.data; (q = strstr(q, "[\"replace\",")) != NULL; q++) replaces++;
  g_assert_cmpuint(replaces, ==, 200);
  g_assert_null(strstr(js.data, "[\"replace_input\","));
  g_assert_nonnull(strstr(js.data, "\"provenance\":[[1,1],[2,2],"));
  g_assert_nonnull(strstr(js.data, "[\"rename\","));
  OxTrace *back = NULL;
  g_assert_cmpint(ox_trace_read_json(js.data, js.len, "t.json", &back, &d), ==, 0);
  ox_buf_free(&js);
  ox_trace_free(t);
  t = back;
  g_assert_cmpint(ox_replay(input, t, UINT32_MAX, &d), ==, 0);
  char *a = fx_of(g), *b = fx_of(input);
  g_assert_cmpstr(a, ==, b);
  free(a);
  free(b);
  ox_diags_clear(&d);
  ox_trace_free(t);
  ox_graph_free(g);
  ox_graph_free(input);
}

/* Rewires of one node mixed with set_args in one step: a rewire to a node that already was an
 * input (no provenance pair; the history cannot invert it by a reverse rewire), args replaced
 * wholesale, then rewired again in place. Replay (through JSON) gives the same graph; a failed
 * check rolls all of it back exactly. */
static bool mixed_make_cycle;

static int pass_mixed(OxPassCtx *c) {
  OxGraph *g = c->g;
  OxNodeId add = ox_graph_find(g, "add"), a = ox_graph_find(g, "a"), b = ox_graph_find(g, "b"),
           cc = ox_graph_find(g, "c");
  if (!add || !a || !b || !cc || g->nodes[add].args.u.items[0].u.node != a) return 0;
  ox_step_begin(c, "mixed", add);
  ox_step_matched(c, &add, 1);
  ox_graph_replace_input(g, add, a, b);                 /* add(b, b): b was an input already */
  OxValue two[2] = {ox_value_node(cc), ox_value_node(b)};
  ox_graph_set_args(g, add, tup(g, 2, two));            /* add(c, b) */
  ox_graph_replace_input(g, add, b, cc);                /* add(c, c): the set_args tree is copied first */
  OxNodeId d = unary(g, "torch.neg", cc);
  ox_graph_move_after(g, d, cc);
  ox_graph_replace_input(g, add, cc, d);                /* add(d, d) */
  if (mixed_make_cycle) ox_graph_replace_input(g, d, cc, add); /* neg(add): a cycle, the structure check fails */
  return ox_step_commit(c) ? 1 : 0;
}

static const OxPassInfo mixed = {"mixed", OX_PHASE_PRE, OX_ENGINE_PATTERN, pass_mixed, "test"};

static OxGraph *mixed_graph(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x", 4, 8);
  OxNodeId a = unary(g, "torch.relu", x), b = unary(g, "torch.tanh", x), cc = unary(g, "torch.sigmoid", x);
  ox_graph_rename(g, a, "a");
  ox_graph_rename(g, b, "b");
  ox_graph_rename(g, cc, "c");
  OxValue ab[2] = {ox_value_node(a), ox_value_node(b)};
  OxNodeId add = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "add", "operator.add", tup(g, 2, ab), ox_value_none());
  OxValue o[2] = {ox_value_node(add), ox_value_node(a)};
  OxValue out[1] = {tup(g, 2, o)};
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, 1, out), ox_value_none());
  g_assert_cmpint(ox_shape_infer_graph(g, NULL, NULL), ==, 0);
  return g;
}

static void test_mixed_rewires(void) {
  OxGraph *g = mixed_graph();
  OxGraph *input = ox_graph_clone(g);
  char *before = fx_of(g);
  OxOptimizeResult res;
  /* structure and shape only: the rewrite changes the numbers on purpose */
  OxPipeline p;
  pipeline_of(&p, &mixed);
  OxCheckConfig cc;
  ox_check_config_default(&cc);
  cc.numeric = false;
  OxTrace *t = ox_trace_new();
  OxDiagList d;
  ox_diags_init(&d, "t");
  g_assert_cmpint(ox_optimize(g, &p, &cc, t, &res, &d), ==, 0);
  g_assert_cmpuint(res.applied, ==, 1);
  const OxStep *s = &t->steps[0];
  char *after = fx_of(g);
  if (!strstr(after, "target=operator.add](args = (%neg, %neg)")) g_printerr("%s", after);
  g_assert_nonnull(strstr(after, "target=operator.add](args = (%neg, %neg)"));
  /* edits: rewire, args, rewire, add, move, rewire */
  static const uint8_t want[] = {OX_TEDIT_REPLACE, OX_TEDIT_ARGS, OX_TEDIT_REPLACE, OX_TEDIT_ADD, OX_TEDIT_MOVE,
                                 OX_TEDIT_REPLACE};
  g_assert_cmpuint(s->n_edits, ==, G_N_ELEMENTS(want));
  for (uint32_t i = 0; i < s->n_edits; i++) g_assert_cmpuint(s->edits[i].kind, ==, want[i]);
  g_assert_cmpstr(s->edits[0].from, ==, "a");
  g_assert_cmpstr(s->edits[0].to, ==, "b");
  /* the args edit carries the tree set_args installed, not the later in-place rewires */
  char args1[64];
  g_assert_cmpstr(ox_value_format(t->pool, &s->edits[1].data->args, args1, sizeof args1), ==, "(%c, %b)");
  /* b was an input already when a was rewired to it: no provenance pair a -> b */
  for (uint32_t i = 0; i < s->n_prov; i++) g_assert_false(!strcmp(s->prov_old[i], "a") && !strcmp(s->prov_new[i], "b"));
  OxBuf js;
  ox_buf_init(&js);
  ox_trace_write_json(t, &js);
  OxTrace *back = NULL;
  g_assert_cmpint(ox_trace_read_json(js.data, js.len, "t.json", &back, &d), ==, 0);
  ox_buf_free(&js);
  g_assert_cmpint(ox_replay(input, back, UINT32_MAX, &d), ==, 0);
  char *replayed = fx_of(input);
  g_assert_cmpstr(replayed, ==, after);
  free(replayed);
  ox_trace_free(back);
  ox_trace_free(t);
  /* the same step rolled back by a failing check leaves the graph exactly as it was */
  OxGraph *g2 = mixed_graph();
  mixed_make_cycle = true;
  t = ox_trace_new();
  g_assert_cmpint(ox_optimize(g2, &p, &cc, t, &res, &d), ==, 0);
  mixed_make_cycle = false;
  g_assert_cmpuint(res.check_failures, ==, 1);
  g_assert_cmpint(t->steps[0].checks[OX_CHECK_STRUCTURE].status, ==, OX_CHECK_FAILED);
  char *rolled = fx_of(g2);
  g_assert_cmpstr(rolled, ==, before);
  g_assert_cmpint(ox_graph_verify(g2, true, &d), ==, 0);
  OxNodeId ids[3] = {ox_graph_find(g2, "a"), ox_graph_find(g2, "b"), ox_graph_find(g2, "c")};
  g_assert_cmpuint(g2->nodes[ids[0]].n_users, ==, 2); /* add and output, in that order */
  g_assert_cmpuint(g2->nodes[ids[1]].n_users, ==, 1);
  g_assert_cmpuint(g2->nodes[ids[2]].n_users, ==, 0);
  free(rolled);
  ox_trace_free(t);
  ox_graph_free(g2);
  free(before);
  free(after);
  ox_diags_clear(&d);
  g_free(p.entries);
  ox_graph_free(g);
  ox_graph_free(input);
}

static void test_skipped_is_not_passed(void) {
  /* a graph whose ops have no kernel: the numeric check must say skipped, with the reason */
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x", 4, 8);
  OxNodeId r1 = unary(g, "torch.relu", x);
  OxNodeId r2 = unary(g, "torch.relu", r1);
  OxValue a[1] = {ox_value_node(r2)};
  OxNodeId u = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "torch.special.unknown_op", tup(g, 1, a), ox_value_none());
  OxValue o[1] = {ox_value_node(u)};
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, 1, o), ox_value_none());
  ox_shape_infer_graph(g, NULL, NULL);
  /* x's meta removed: the boundary of the region has no shape */
  OxMeta none = {0};
  ox_graph_set_meta(g, x, &none);
  OxOptimizeResult res;
  OxTrace *t = run(g, &good, false, &res);
  g_assert_cmpuint(res.applied, ==, 1);
  const OxStep *s = &t->steps[t->n_steps - 1];
  g_assert_cmpint(s->checks[OX_CHECK_NUMERIC].status, ==, OX_CHECK_SKIPPED);
  g_assert_nonnull(strstr(s->checks[OX_CHECK_NUMERIC].detail, "no shape"));
  ox_trace_free(t);
  ox_graph_free(g);
}

static void test_check_config(void) {
  OxCheckConfig c;
  char err[128];
  g_assert_cmpint(ox_check_config_parse("structure,shape", &c, err, sizeof err), ==, 0);
  g_assert_true(c.structure && c.shape && !c.numeric);
  g_assert_cmpint(ox_check_config_parse("none", &c, err, sizeof err), ==, 0);
  g_assert_false(c.structure || c.shape || c.numeric);
  g_assert_cmpint(ox_check_config_parse("all", &c, err, sizeof err), ==, 0);
  g_assert_true(c.structure && c.shape && c.numeric);
  g_assert_cmpint(ox_check_config_parse("structure,speed", &c, err, sizeof err), ==, -1);
  g_assert_nonnull(strstr(err, "speed"));
  OxPassOptions o;
  ox_pass_options_default(&o);
  g_assert_cmpint(o.min_fuse_set_size, ==, 5);
  g_assert_cmpint(ox_pass_option_set(&o, "min_fuse_set_size", "3"), ==, 0);
  g_assert_cmpint(o.min_fuse_set_size, ==, 3);
  g_assert_cmpint(ox_pass_option_set(&o, "fuse_nodes_with_same_parent", "true"), ==, 0);
  g_assert_true(o.fuse_nodes_with_same_parent);
  g_assert_cmpint(ox_pass_option_set(&o, "nope", "1"), ==, -1);
  g_assert_cmpint(ox_pass_option_set(&o, "min_fuse_set_size", "x"), ==, -2);
}

/* Over the numeric budget, a region of ops that treat dims independently runs at a reduced
 * size, and the record says so. */
static void test_numeric_reduced_size(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x", 4096, 2048);
  OxNodeId r1 = unary(g, "torch.relu", x);
  OxNodeId r2 = unary(g, "torch.relu", r1);
  OxValue o[1] = {ox_value_node(r2)};
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, 1, o), ox_value_none());
  g_assert_cmpint(ox_shape_infer_graph(g, NULL, NULL), ==, 0);
  OxOptimizeResult res;
  OxTrace *t = run(g, &good, false, &res);
  g_assert_cmpuint(res.applied, ==, 1);
  const OxCheckResult *cr = &t->steps[t->n_steps - 1].checks[OX_CHECK_NUMERIC];
  g_assert_cmpint(cr->status, ==, OX_CHECK_PASSED);
  g_assert_nonnull(cr->checked_shape);
  g_assert_cmpstr(cr->checked_shape, ==, "checked at f32[2, 2], dump has f32[4096, 2048]");
  ox_trace_free(t);
  ox_graph_free(g);
  /* a matmul upstream only feeds the region: the relu region is still pointwise, so reducible */
  g = ox_graph_new();
  x = ph(g, "x", 4096, 2048);
  OxNodeId w = ph(g, "w", 2048, 2048);
  OxValue a[2] = {ox_value_node(x), ox_value_node(w)};
  OxNodeId mm = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "torch.mm", tup(g, 2, a), ox_value_none());
  r1 = unary(g, "torch.relu", mm);
  r2 = unary(g, "torch.relu", r1);
  o[0] = ox_value_node(r2);
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, 1, o), ox_value_none());
  g_assert_cmpint(ox_shape_infer_graph(g, NULL, NULL), ==, 0);
  t = run(g, &good, false, &res);
  cr = &t->steps[t->n_steps - 1].checks[OX_CHECK_NUMERIC];
  /* the relu region itself is pointwise: reduced and passed, whatever feeds it */
  g_assert_cmpint(cr->status, ==, OX_CHECK_PASSED);
  ox_trace_free(t);
  ox_graph_free(g);
}

/* linear(x, w) -> matmul(x, t(w)): a correct rewrite whose regions hold matmuls. */
static int pass_linear_to_matmul(OxPassCtx *c) {
  OxGraph *g = c->g;
  for (OxNodeId id = g->head; id; id = g->link[id].next) {
    if (g->nodes[id].erased || strcmp(g->nodes[id].target, "torch.nn.functional.linear") != 0) continue;
    ox_step_begin(c, "linear_to_matmul", id);
    ox_step_matched(c, &id, 1);
    OxValue wa[1] = {ox_graph_value_copy(g, &g->nodes[id].args.u.items[1])};
    OxNodeId t = ox_graph_insert_after(g, id, OX_OP_CALL_FUNCTION, NULL, "torch.t", tup(g, 1, wa), ox_value_none());
    OxValue ma[2] = {ox_graph_value_copy(g, &g->nodes[id].args.u.items[0]), ox_value_node(t)};
    OxNodeId mm = ox_graph_insert_after(g, t, OX_OP_CALL_FUNCTION, NULL, "torch.matmul", tup(g, 2, ma), ox_value_none());
    ox_graph_replace_all_uses(g, id, mm);
    ox_graph_erase(g, id);
    return ox_step_commit(c);
  }
  return 0;
}

static const OxPassInfo linear_to_matmul = {"linear_to_matmul", OX_PHASE_PRE, OX_ENGINE_PATTERN, pass_linear_to_matmul, "test"};

/* Regions with matmuls cannot be shrunk by the op table's rule; the uniform rule shrinks every
 * dim and is kept because shape inference accepts both regions at the new sizes. */
static void test_numeric_uniform_shrink(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x", 4096, 512), w = ph(g, "w", 512, 512);
  OxValue a[2] = {ox_value_node(x), ox_value_node(w)};
  OxNodeId lin = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "torch.nn.functional.linear", tup(g, 2, a),
                                   ox_value_none());
  OxValue o[1] = {ox_value_node(lin)};
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, 1, o), ox_value_none());
  g_assert_cmpint(ox_shape_infer_graph(g, NULL, NULL), ==, 0);
  OxOptimizeResult res;
  OxTrace *t = run(g, &linear_to_matmul, false, &res);
  g_assert_cmpuint(res.applied, ==, 1);
  const OxCheckResult *cr = &t->steps[0].checks[OX_CHECK_NUMERIC];
  g_assert_cmpint(cr->status, ==, OX_CHECK_PASSED);
  g_assert_cmpstr(cr->checked_shape, ==, "checked at f32[4, 4], dump has f32[4096, 512]");
  ox_trace_free(t);
  ox_graph_free(g);
}

/* stack(unbind(x, 0)[67:96], dim=1) for x f32[96, 64, 64], as a pre-grad dump. */
static OxGraph *unbind_stack_graph(void) {
  GString *t = g_string_new("graph():\n    %x : Tensor \"f32[96, 64, 64]\" [num_users=1] = placeholder[target=x]\n"
                            "    %unbind : [num_users=29] = call_function[target=torch.unbind](args = (%x,), kwargs = {dim: 0})\n");
  for (int i = 67; i < 96; i++)
    g_string_append_printf(t, "    %%getitem_%d : [num_users=1] = call_function[target=operator.getitem](args = (%%unbind, %d), kwargs = {})\n", i, i);
  g_string_append(t, "    %stack : [num_users=1] = call_function[target=torch.stack](args = ([");
  for (int i = 67; i < 96; i++) g_string_append_printf(t, "%s%%getitem_%d", i > 67 ? ", " : "", i);
  g_string_append(t, "],), kwargs = {dim: 1})\n    return stack\n");
  OxDoc *doc = NULL;
  OxDiagList d;
  ox_diags_init(&d, "unbind-stack");
  g_assert_cmpint(ox_load_buffer(t->str, t->len, OX_FMT_UNKNOWN, NULL, &doc, &d), ==, 0);
  ox_diags_clear(&d);
  g_string_free(t, TRUE);
  OxGraph *g = doc->graphs[0];
  doc->graphs[0] = NULL;
  doc->n_graphs = 0;
  ox_doc_free(doc);
  g_assert_cmpint(ox_shape_infer_graph(g, NULL, NULL), ==, 0);
  return g;
}

/* The same rewrite as unbind_stack_to_slices, but with the slice one row off (66:95): the shapes
 * agree, the values do not. */
static int pass_slices_off_by_one(OxPassCtx *c) {
  OxGraph *g = c->g;
  OxNodeId st = ox_graph_find(g, "stack"), x = ox_graph_find(g, "x");
  if (!st || g->nodes[st].erased) return 0;
  ox_step_begin(c, "slices_off_by_one", st);
  ox_step_matched(c, &st, 1);
  OxValue sl[3] = {ox_value_int(66), ox_value_int(95), ox_value_none()};
  OxValue idx[1] = {ox_graph_value_seq(g, OX_V_SLICE, sl, 3)};
  OxValue a1[2] = {ox_value_node(x), tup(g, 1, idx)};
  OxNodeId gi = ox_graph_insert_after(g, st, OX_OP_CALL_FUNCTION, NULL, "operator.getitem", tup(g, 2, a1), ox_value_none());
  OxValue a2[3] = {ox_value_node(gi), ox_value_int(0), ox_value_int(1)};
  OxNodeId mv = ox_graph_insert_after(g, gi, OX_OP_CALL_FUNCTION, NULL, "torch.movedim", tup(g, 3, a2), ox_value_none());
  ox_graph_replace_all_uses(g, st, mv);
  ox_graph_erase(g, st);
  return ox_step_commit(c);
}

static const OxPassInfo slices_off_by_one = {"slices_off_by_one", OX_PHASE_PRE, OX_ENGINE_PATTERN, pass_slices_off_by_one, "test"};

/* unbind along the leading dim, its items stacked, becomes a slice of that dim (the indices
 * spelled out): the check keeps the leading dim and shrinks the others (mode 2), and still
 * catches a slice one row off. */
static void test_numeric_shrink_keeps_leading_dim(void) {
  OxGraph *g = unbind_stack_graph();
  const OxPassInfo *pass = ox_pass_find("unbind_stack_to_slices_pass");
  g_assert_nonnull(pass);
  OxOptimizeResult res;
  OxTrace *t = run(g, pass, false, &res);
  for (uint32_t i = 0; i < t->n_steps; i++)
    if (!t->steps[i].applied_index) {
      char *why = ox_reason_format(&t->steps[i].reason);
      g_test_message("rejected: %s", why);
      free(why);
    }
  g_assert_cmpuint(res.applied, ==, 1);
  const OxStep *s = NULL;
  for (uint32_t i = 0; i < t->n_steps && !s; i++)
    if (t->steps[i].applied_index) s = &t->steps[i];
  g_assert_nonnull(s);
  const OxCheckResult *cr = &s->checks[OX_CHECK_NUMERIC];
  g_test_message("%s", cr->detail);
  g_assert_cmpint(cr->status, ==, OX_CHECK_PASSED);
  g_assert_cmpstr(cr->checked_shape, ==, "checked at f32[96, 4, 4], dump has f32[96, 64, 64]");
  ox_trace_free(t);
  ox_graph_free(g);
  /* the wrong slice fails at the reduced size too */
  g = unbind_stack_graph();
  t = run(g, &slices_off_by_one, false, &res);
  g_assert_cmpuint(res.check_failures, ==, 1);
  g_assert_cmpuint(res.applied, ==, 0);
  cr = &t->steps[0].checks[OX_CHECK_NUMERIC];
  g_test_message("%s", cr->detail);
  g_assert_cmpint(cr->status, ==, OX_CHECK_FAILED);
  g_assert_cmpstr(cr->checked_shape, ==, "checked at f32[96, 4, 4], dump has f32[96, 64, 64]");
  g_assert_cmpuint(ox_graph_find(g, "stack"), !=, 0); /* rolled back */
  ox_trace_free(t);
  ox_graph_free(g);
}

/* relu(x) -> reshape(relu(reshape(x, (-1, 512))), (-1, 512)) for a placeholder x: correct, but
 * the added nodes spell the row size out. */
static int pass_relu_reshaped(OxPassCtx *c) {
  OxGraph *g = c->g;
  for (OxNodeId id = g->head; id; id = g->link[id].next) {
    const OxNode *n = &g->nodes[id];
    if (n->erased || strcmp(n->target, "torch.relu") != 0) continue;
    OxNodeId x = n->args.u.items[0].u.node;
    if (g->nodes[x].op != OX_OP_PLACEHOLDER) continue;
    ox_step_begin(c, "relu_reshaped", id);
    ox_step_matched(c, &id, 1);
    OxValue sz[2] = {ox_value_int(-1), ox_value_int(512)};
    OxValue a1[2] = {ox_value_node(x), tup(g, 2, sz)};
    OxNodeId r1 = ox_graph_insert_after(g, id, OX_OP_CALL_FUNCTION, NULL, "torch.reshape", tup(g, 2, a1), ox_value_none());
    OxValue a2[1] = {ox_value_node(r1)};
    OxNodeId r2 = ox_graph_insert_after(g, r1, OX_OP_CALL_FUNCTION, NULL, "torch.relu", tup(g, 1, a2), ox_value_none());
    OxValue a3[2] = {ox_value_node(r2), tup(g, 2, sz)};
    OxNodeId r3 = ox_graph_insert_after(g, r2, OX_OP_CALL_FUNCTION, NULL, "torch.reshape", tup(g, 2, a3), ox_value_none());
    ox_graph_replace_all_uses(g, id, r3);
    ox_graph_erase(g, id);
    return ox_step_commit(c);
  }
  return 0;
}

static const OxPassInfo relu_reshaped = {"relu_reshaped", OX_PHASE_PRE, OX_ENGINE_PATTERN, pass_relu_reshaped, "test"};

/* The shrinking attempts run one after another on copies of the regions: here the op table's
 * rule gives up at once (reshape), every dim at 4 changes the copies and fails (4 * 4 elements
 * are no rows of 512), and the leading dim at 2 must start again from the dump's sizes. */
static void test_numeric_shrink_after_failed_attempt(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x", 4096, 512);
  OxNodeId r = unary(g, "torch.relu", x);
  OxValue o[1] = {ox_value_node(r)};
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, 1, o), ox_value_none());
  g_assert_cmpint(ox_shape_infer_graph(g, NULL, NULL), ==, 0);
  OxOptimizeResult res;
  OxTrace *t = run(g, &relu_reshaped, false, &res);
  g_assert_cmpuint(res.applied, ==, 1);
  const OxCheckResult *cr = &t->steps[0].checks[OX_CHECK_NUMERIC];
  g_assert_cmpint(cr->status, ==, OX_CHECK_PASSED);
  g_assert_cmpstr(cr->checked_shape, ==, "checked at f32[2, 512], dump has f32[4096, 512]");
  ox_trace_free(t);
  ox_graph_free(g);
}


/* text with the first occurrence of `from` replaced by `to` */
static char *replaced(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  g_assert_nonnull(at);
  return g_strdup_printf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}

/* Issue 21: a trace without a hash is read with a warning (and the CLI and the debugger refuse
 * to replay it: nothing would check it belongs to the graph); replay errors are located at the JSON line of the edit that
 * does not fit; a trace of another graph names nodes the graph lacks (what explain warns about). */
static void test_trace_integrity(void) {
  OxGraph *g = sample();
  OxGraph *input = ox_graph_clone(g);
  OxOptimizeResult res;
  OxTrace *t = run(g, &good, false, &res);
  OxBuf b;
  ox_buf_init(&b);
  ox_trace_write_json_version(t, 2, &b); /* version 3: test_trace_v3_damaged */
  OxDiagList d;
  ox_diags_init(&d, "t.json");
  /* "hash": "" */
  char *hash = g_strdup_printf("\"hash\": \"%s\"", t->input_hash);
  char *nohash = replaced(b.data, hash, "\"hash\": \"\"");
  OxTrace *t2 = NULL;
  g_assert_cmpint(ox_trace_read_json(nohash, strlen(nohash), "t.json", &t2, &d), ==, 0);
  g_assert_cmpuint(d.n_warnings, ==, 1);
  g_assert_nonnull(strstr(d.items[0].msg, "no input hash"));
  g_assert_cmpuint(d.items[0].line, >, 0);
  g_assert_null(t2->input_hash); /* what replay (the CLI, the debugger) refuses; /cli/integrity */
  ox_trace_free(t2);
  OxGraph *re = NULL;
  ox_diags_clear(&d);
  /* an edit that does not fit: the error names its line */
  const char *add = strstr(b.data, "{\"kind\": \"add\"");
  g_assert_nonnull(add);
  uint32_t line = 1;
  for (const char *q = b.data; q < add; q++) line += *q == '\n';
  g_assert_true(strstr(add, "\"after\": \"") < strchr(add, '\n')); /* the add's own position */
  char *bad = replaced(b.data, "\"after\": \"", "\"after\": \"nosuch");
  g_assert_cmpint(ox_trace_read_json(bad, strlen(bad), "t.json", &t2, &d), ==, 0);
  re = ox_graph_clone(input);
  g_assert_cmpint(ox_replay(re, t2, UINT32_MAX, &d), ==, -1);
  g_assert_cmpuint(d.items[d.n - 1].line, ==, line);
  g_assert_nonnull(strstr(d.items[d.n - 1].msg, "replay step 1: position node nosuch"));
  /* found by fuzz-trace: an add moved to the head (before its inputs) replayed "fine" into a
   * graph with uses before definitions; a replay from the input now checks the order */
  ox_trace_free(t2);
  ox_graph_free(re);
  ox_diags_clear(&d);
  g_free(bad);
  const char *aft = strstr(add, "\"after\": \"");
  const char *aft_end = strchr(aft + 10, '"');
  bad = g_strdup_printf("%.*s\"after\": null%s", (int)(aft - b.data), b.data, aft_end + 1);
  g_assert_cmpint(ox_trace_read_json(bad, strlen(bad), "t.json", &t2, &d), ==, 0);
  re = ox_graph_clone(input);
  g_assert_cmpint(ox_replay(re, t2, UINT32_MAX, &d), ==, -1);
  g_assert_nonnull(strstr(d.items[d.n - 1].msg, "before its definition (the trace is damaged)"));
  /* the same trace against its own graph names nothing unknown; against another, its nodes */
  const char *unknown[4];
  g_assert_cmpuint(ox_trace_unknown_names(t, input, unknown, 4), ==, 0);
  OxGraph *other = ox_graph_new();
  ph(other, "x", 4, 8);
  uint32_t nu = ox_trace_unknown_names(t, other, unknown, 4);
  g_assert_cmpuint(nu, >, 0);
  for (uint32_t i = 0; i < nu && i < 4; i++) g_assert_cmpuint(ox_graph_find(input, unknown[i]), !=, 0);
  ox_graph_free(other);
  ox_graph_free(re);
  ox_trace_free(t2);
  ox_diags_clear(&d);
  g_free(bad);
  g_free(nohash);
  g_free(hash);
  ox_buf_free(&b);
  ox_trace_free(t);
  ox_graph_free(input);
  ox_graph_free(g);
}

/* ------------------------------------------------------------------ runs without edit scripts */

/* Runs the built-in pipeline of g's level on g, recording into t, with the default checks and
 * the numeric check on or off; fails the test if the run fails. */
static OxOptimizeResult optimize_default(OxGraph *g, OxTrace *t, bool numeric) {
  OxPipeline p;
  ox_pipeline_default(g, &p);
  OxCheckConfig checks;
  ox_check_config_default(&checks);
  checks.numeric = numeric;
  OxDiagList d;
  ox_diags_init(&d, "gen");
  OxOptimizeResult res;
  int rc = ox_optimize(g, &p, &checks, t, &res, &d);
  if (rc) ox_diags_print(&d, stderr);
  g_assert_cmpint(rc, ==, 0);
  ox_diags_clear(&d);
  ox_pipeline_free(&p);
  return res;
}

/* A run whose trace records no edit scripts (no_edits: `optimus optimize` without --trace)
 * makes the same graph and records everything else the same (and one that also keeps no
 * rejections, only their count, keeps the same other steps): the same steps, names, reasons,
 * checks and counters, on random graphs through the built-in pipeline; only the applied steps'
 * estimated costs are left out (nothing reads them). The one
 * difference allowed: a pattern rejection's arguments that the matcher formats (value lists,
 * sub-pattern descriptions) are left empty; the code and the number of arguments agree. */
static void test_no_edits_same_run(void) {
  uint32_t n = gen_graph_count(40), applied = 0, unformatted = 0, rejected_total = 0;
  for (uint64_t seed = 1; seed <= n; seed++) {
    bool post;
    OxGraph *g1 = gen_graph(seed, &post);
    g_assert_nonnull(g1);
    OxGraph *g2 = ox_graph_clone(g1);
    OxGraph *g3 = ox_graph_clone(g1);
    OxTrace *t[3];
    OxOptimizeResult res[3];
    OxGraph *gs[3] = {g1, g2, g3};
    for (int k = 0; k < 3; k++) {
      t[k] = ox_trace_new_for(gs[k]);
      t[k]->no_edits = k >= 1;
      t[k]->no_rejections = k == 2;
      res[k] = optimize_default(gs[k], t[k], seed % 4 == 0);
    }
    char *a = fx_of(g1), *b = fx_of(g2), *c = fx_of(g3);
    g_assert_cmpstr(a, ==, b);
    g_assert_cmpstr(a, ==, c);
    free(a);
    free(b);
    free(c);
    for (int k = 1; k < 3; k++) {
      g_assert_cmpuint(res[0].applied, ==, res[k].applied);
      g_assert_cmpuint(res[0].rejected, ==, res[k].rejected);
      g_assert_cmpuint(res[0].check_failures, ==, res[k].check_failures);
    }
    /* no_rejections (optimize without --trace): the same count, only the other steps kept, the
     * same as the full run's */
    uint32_t kept = 0, rejected = 0;
    for (uint32_t i = 0; i < t[1]->n_steps; i++) {
      const OxStep *s1 = &t[1]->steps[i];
      if (s1->kind == OX_STEP_REJECTED) {
        rejected++;
        continue;
      }
      g_assert_cmpuint(kept, <, t[2]->n_steps);
      const OxStep *s2 = &t[2]->steps[kept++];
      g_assert_cmpint(s1->kind, ==, s2->kind);
      g_assert_cmpstr(s1->pass, ==, s2->pass);
      g_assert_cmpstr(s1->rule, ==, s2->rule);
      g_assert_cmpstr(s1->anchor, ==, s2->anchor);
      g_assert_cmpuint(s1->applied_index, ==, s2->applied_index);
      g_assert_cmpuint(s1->n_removed, ==, s2->n_removed);
      g_assert_cmpuint(s1->n_added, ==, s2->n_added);
    }
    g_assert_cmpuint(kept, ==, t[2]->n_steps);
    g_assert_cmpuint(rejected, ==, t[2]->n_rejected);
    g_assert_cmpuint(t[1]->n_rejected, ==, t[2]->n_rejected);
    rejected_total += rejected;
    applied += res[0].applied;
    uint32_t with_edits = 0;
    for (uint32_t i = 0; i < t[1]->n_steps; i++) g_assert_cmpuint(t[1]->steps[i].n_edits, ==, 0);
    for (uint32_t i = 0; i < t[0]->n_steps; i++) {
      with_edits += t[0]->steps[i].n_edits > 0;
      t[0]->steps[i].n_edits = 0;
      t[0]->steps[i].edits = NULL;
    }
    g_assert_cmpuint(with_edits, >=, res[0].applied > 0); /* the full run did record edits */
    g_assert_cmpuint(t[0]->n_steps, ==, t[1]->n_steps);
    for (uint32_t i = 0; i < t[0]->n_steps; i++) {
      OxReason *full = &t[0]->steps[i].reason, *bare = &t[1]->steps[i].reason;
      g_assert_cmpuint(full->code, ==, bare->code);
      g_assert_cmpuint(full->n_args, ==, bare->n_args);
      for (uint8_t k = 0; k < full->n_args; k++) {
        if (strcmp(full->args[k] ? full->args[k] : "", bare->args[k] ? bare->args[k] : "") == 0) continue;
        if (bare->args[k] && bare->args[k][0])
          g_error("seed %" G_GUINT64_FORMAT ": steps[%u].reason.args[%u]: '%s' != '%s'", seed, i, k, full->args[k],
                  bare->args[k]);
        unformatted++;
        full->args[k] = bare->args[k]; /* compared below with the rest */
        full->nodes[k] = bare->nodes[k];
      }
    }
    /* no_edits: applied steps carry no estimated cost (nothing reads it; the payoff guard is off) */
    for (uint32_t i = 0; i < t[0]->n_steps; i++) {
      g_assert_false(t[1]->steps[i].cost.set && t[1]->steps[i].kind != OX_STEP_REJECTED);
      if (t[0]->steps[i].kind != OX_STEP_REJECTED) memset(&t[0]->steps[i].cost, 0, sizeof t[0]->steps[i].cost);
    }
    trace_zero_timings(t[0]);
    trace_zero_timings(t[1]);
    char *diff = trace_first_difference(t[0], t[1]);
    if (diff) g_error("seed %" G_GUINT64_FORMAT ": %s", seed, diff);
    ox_trace_free(t[0]);
    ox_trace_free(t[1]);
    ox_trace_free(t[2]);
    ox_graph_free(g1);
    ox_graph_free(g2);
    ox_graph_free(g3);
  }
  g_assert_cmpuint(applied, >, n);
  g_assert_cmpuint(rejected_total, >, n); /* the random graphs do reach rejections */
  g_assert_cmpuint(unformatted, >, 0); /* the random graphs do reach pattern rejections */
}

/* ------------------------------------------------------------------ version 3 (issue 20) */

/* Random graphs through the built-in pipeline: each run's trace in versions 2 to 5 reads
 * back the same, record by record, rewrites to the same bytes, and replays the same
 * (trace_check_versions); each version is smaller than the one before. */
static void test_v3_generated(void) {
  uint32_t n = gen_graph_count(60), applied = 0;
  size_t v2_bytes = 0, v3_bytes = 0, v4_bytes = 0, v5_bytes = 0;
  for (uint64_t seed = 1; seed <= n; seed++) {
    bool post;
    OxGraph *g = gen_graph(seed, &post);
    g_assert_nonnull(g);
    OxGraph *input = ox_graph_clone(g);
    OxTrace *t = seed % 2 ? ox_trace_new_for(g) : ox_trace_new();
    applied += optimize_default(g, t, seed % 4 == 0).applied; /* numeric results (max_abs ...) on some */
    t->input_file = ox_trace_intern(t, "gen \"graph\".txt"); /* a string that needs escapes */
    char *want = fx_of(g), *what = g_strdup_printf("seed %" G_GUINT64_FORMAT, seed);
    v5_bytes += trace_check_versions(t, input, want, what);
    for (int v = 2; v <= 4; v++) {
      OxBuf b;
      ox_buf_init(&b);
      ox_trace_write_json_version(t, v, &b);
      *(v == 2 ? &v2_bytes : v == 3 ? &v3_bytes : &v4_bytes) += b.len;
      ox_buf_free(&b);
    }
    free(want);
    g_free(what);
    ox_trace_free(t);
    ox_graph_free(input);
    ox_graph_free(g);
  }
  g_test_message("%u graphs, %u applied steps; traces: version 2 %zu bytes, version 3 %zu, version 4 %zu, version 5 %zu",
                 n, applied, v2_bytes, v3_bytes, v4_bytes, v5_bytes);
  g_assert_cmpuint(applied, >, n); /* the comparison covered edits, not only rejections */
  g_assert_cmpuint(v3_bytes, <, v2_bytes * 2 / 3); /* small graphs: the names table weighs more */
  g_assert_cmpuint(v4_bytes, <, v3_bytes);
  g_assert_cmpuint(v5_bytes, <, v4_bytes);
}

/* Timings differ from run to run; the rest of two runs of one graph does not. */
static void clear_timings(OxTrace *t) {
  t->seconds = 0;
  for (uint32_t i = 0; i < t->n_pass_stats; i++) t->pass_stats[i].seconds = 0;
  for (uint32_t i = 0; i < t->n_steps; i++) {
    t->steps[i].seconds = 0;
    for (int k = 0; k < OX_CHECK_KINDS; k++) t->steps[i].checks[k].seconds = 0;
  }
}

/* ox_trace_recycle_edits (what `optimus optimize --trace` does): edit scripts the live writer has
 * encoded give their memory to later steps' scripts. Blocks of 64 bytes: used again all the time
 * (a block big enough for the next script, that is). The file is the trace of a run without it
 * (timings aside), plain and gzipped; a write in another version or form is then refused with a
 * message, and nothing is written. */
static void test_recycle_edits(void) {
  uint32_t n = gen_graph_count(30), applied = 0, recycled = 0, expected = 0;
  char *dir = g_dir_make_tmp("ox-recycle-XXXXXX", NULL);
  char *path = g_build_filename(dir, "t.json", NULL), *gz = g_build_filename(dir, "t.json.gz", NULL);
  char *other = g_build_filename(dir, "other.json", NULL);
  char err[512];
  ox_trace_edit_block = 64;
  ox_trace_live_wait = true; /* each pass's steps encoded before the next pass records */
  for (uint64_t seed = 1; seed <= n; seed++) {
    bool post;
    OxGraph *g = gen_graph(seed, &post);
    g_assert_nonnull(g);
    OxGraph *g2 = ox_graph_clone(g);
    OxTrace *want = ox_trace_new_for(g);
    applied += optimize_default(g, want, seed % 4 == 0).applied;
    OxTrace *t = ox_trace_new_for(g2);
    const char *out = seed % 3 == 0 ? gz : path;
    g_assert_false(ox_trace_recycle_edits(t)); /* no live writer yet */
    ox_trace_live_piece = seed % 2 ? 64 : 1u << 20;
    g_assert_true(ox_trace_live_start(t, out));
    g_assert_true(ox_trace_recycle_edits(t));
    optimize_default(g2, t, seed % 4 == 0);
    char *fx1 = fx_of(g), *fx2 = fx_of(g2);
    g_assert_cmpstr(fx1, ==, fx2);
    g_free(fx1);
    g_free(fx2);
    bool reused = ox_trace_edits_recycled(t);
    recycled += reused;
    /* applied steps of two passes: the first one's blocks are encoded (ox_trace_live_wait) before
     * the second records, and taken again */
    const char *first_pass = NULL;
    bool two_passes = false;
    for (uint32_t i = 0; i < want->n_steps; i++)
      if (want->steps[i].kind == OX_STEP_APPLIED && want->steps[i].n_edits) {
        if (!first_pass) first_pass = want->steps[i].pass;
        else if (strcmp(first_pass, want->steps[i].pass) != 0) two_passes = true;
      }
    if (two_passes && !reused) g_test_fail_printf("seed %" G_GUINT64_FORMAT ": no edit memory was used again", seed);
    expected += two_passes;
    if (reused) { /* the edits are gone: another version, or the other form, is refused */
      g_assert_false(ox_trace_write_file(t, 3, other, err, sizeof err));
      g_assert_nonnull(strstr(err, "only that form can be written"));
      g_assert_false(g_file_test(other, G_FILE_TEST_EXISTS));
      g_assert_false(ox_trace_write_file(t, 0, out == gz ? path : gz, err, sizeof err));
      char *form = g_strdup_printf("as version %d, %s", OX_TRACE_VERSION, out == gz ? "gzipped" : "not gzipped");
      g_assert_nonnull(strstr(err, form));
      g_free(form);
    }
    g_assert_true(ox_trace_write_file(t, 0, out, err, sizeof err));
    if (reused) { /* once */
      g_assert_false(ox_trace_write_file(t, 0, other, err, sizeof err));
      g_assert_nonnull(strstr(err, "written once already"));
      g_assert_false(g_file_test(other, G_FILE_TEST_EXISTS));
    }
    gchar *text = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(out, &text, &len, NULL));
    OxTrace *back = NULL;
    OxDiagList d;
    ox_diags_init(&d, out);
    g_assert_cmpint(ox_trace_read_json(text, len, out, &back, &d), ==, 0);
    ox_diags_clear(&d);
    g_free(text);
    clear_timings(want);
    clear_timings(back);
    char *diff = trace_first_difference(want, back);
    if (diff) g_test_fail_printf("seed %" G_GUINT64_FORMAT ": %s", seed, diff);
    g_free(diff);
    ox_trace_free(back);
    ox_trace_free(t);
    ox_trace_free(want);
    ox_graph_free(g2);
    ox_graph_free(g);
  }
  ox_trace_edit_block = 1u << 20;
  ox_trace_live_piece = 1u << 20;
  ox_trace_live_wait = false;
  g_unlink(path);
  g_unlink(gz);
  g_rmdir(dir);
  g_free(path);
  g_free(gz);
  g_free(other);
  g_free(dir);
  g_test_message("%u graphs, %u applied steps, %u runs used edit memory again (%u with applied steps of two passes)",
                 n, applied, recycled, expected);
  g_assert_cmpuint(applied, >, n);
  g_assert_cmpuint(expected, >, 0);
}

/* The live writer (ox_trace_live_start: steps encoded on a second thread while the passes run)
 * writes the same bytes as the writer that encodes everything at the end, plain and gzipped,
 * through its scratch file or from memory; a second write, a version 2 write and a trace freed
 * unwritten still work. Generated graphs of
 * both levels, pools that share the graph's strings and pools that do not. */
static void test_live_writer(void) {
  uint32_t n = gen_graph_count(40), applied = 0;
  char *dir = g_dir_make_tmp("ox-live-XXXXXX", NULL);
  char *path = g_build_filename(dir, "t.json", NULL), *gz = g_build_filename(dir, "t.json.gz", NULL);
  char err[512];
  for (uint64_t seed = 1; seed <= n; seed++) {
    bool post;
    OxGraph *g = gen_graph(seed, &post);
    g_assert_nonnull(g);
    OxTrace *t = seed % 2 ? ox_trace_new_for(g) : ox_trace_new();
    const char *first = seed % 4 == 0 ? gz : path; /* the live writer's output goes to this one */
    /* small pieces: the encoded text goes to the scratch file (and through zlib) in many; a
     * destination in a missing directory: no scratch file, the text is held in memory */
    ox_trace_live_piece = seed % 3 == 1 ? 64 : 1u << 20;
    bool no_scratch = seed % 7 == 0;
    char *missing = g_build_filename(dir, "missing", first == gz ? "t.json.gz" : "t.json", NULL);
    g_assert_true(ox_trace_live_start(t, no_scratch ? missing : first));
    g_assert_false(ox_trace_live_start(t, first)); /* one writer a trace */
    g_free(missing);
    applied += optimize_default(g, t, true).applied;
    if (seed % 5 == 0) { /* freed unwritten: the thread is stopped (ASan: nothing leaks) */
      ox_trace_free(t);
      ox_graph_free(g);
      continue;
    }
    OxBuf want;
    ox_buf_init(&want);
    ox_trace_write_json(t, &want); /* encoded here, whole: the live writer is not used */
    if (seed % 3 == 0) { /* version 2 ignores the live writer, which is then used by version 3 */
      OxBuf v2;
      ox_buf_init(&v2);
      ox_trace_write_json_version(t, 2, &v2);
      g_assert_true(ox_trace_write_file(t, 2, path, err, sizeof err));
      gchar *got = NULL;
      gsize len = 0;
      g_assert_true(g_file_get_contents(path, &got, &len, NULL));
      g_assert_cmpuint(len, ==, v2.len);
      g_assert_true(memcmp(got, v2.data, len) == 0);
      g_free(got);
      ox_buf_free(&v2);
    }
    for (int k = 0; k < 2; k++) { /* the second write encodes the steps again */
      const char *out = k == 0 ? first : first == gz ? path : gz;
      g_assert_true(ox_trace_write_file(t, 0, out, err, sizeof err));
      gchar *got = NULL;
      gsize len = 0;
      g_assert_true(g_file_get_contents(out, &got, &len, NULL));
      size_t n_plain = len;
      char *plain = got;
      if (out == gz) {
        plain = ox_gzip_decompress(got, len, 0, &n_plain, err, sizeof err);
        g_assert_nonnull(plain);
      }
      if (n_plain != want.len || memcmp(plain, want.data, want.len) != 0)
        g_test_fail_printf("seed %" G_GUINT64_FORMAT ": %s written %s the live writer differs (%zu bytes, want %zu)",
                           seed, out == gz ? "gzipped" : "plain", k == 0 ? "by" : "after", n_plain, want.len);
      if (plain != got) free(plain);
      g_free(got);
    }
    ox_buf_free(&want);
    ox_trace_free(t);
    ox_graph_free(g);
  }
  g_unlink(path);
  g_unlink(gz);
  g_rmdir(dir);
  g_free(path);
  g_free(gz);
  g_free(dir);
  ox_trace_live_piece = 1u << 20;
  g_test_message("%u graphs, %u applied steps", n, applied);
  g_assert_cmpuint(applied, >, n);
}

/* A hand-written version 3 trace and damaged copies of it: each damage is an error located
 * at its line with the path of the value (never a crash, never an index used unchecked). */
/* The per-pass table (OxTrace.pass_stats): after a run of the built-in pipeline on generated
 * graphs there is one entry per pass of the pipeline, in its order, whose applied / rejected /
 * check-failed counts add up to the trace's and to the steps each pass recorded, whose times add
 * up to no more than the run's; it reads back from both versions (trace_check_versions compares
 * it). A malformed table is a located warning and is left out; the trace still reads. */
static void test_pass_stats(void) {
  uint32_t n = gen_graph_count(30), with_applied = 0;
  for (uint64_t seed = 1; seed <= n; seed++) {
    bool post;
    OxGraph *g = gen_graph(seed, &post);
    g_assert_nonnull(g);
    OxGraph *input = ox_graph_clone(g);
    OxPipeline p;
    ox_pipeline_default(g, &p);
    OxTrace *t = ox_trace_new_for(g);
    OxOptimizeResult res = optimize_default(g, t, false);
    g_assert_cmpuint(t->n_pass_stats, ==, p.n); /* the default pipeline names each pass once */
    uint32_t sum[3] = {0, 0, 0};
    double secs = 0;
    for (uint32_t i = 0; i < t->n_pass_stats; i++) {
      const OxPassStat *e = &t->pass_stats[i];
      g_assert_cmpstr(e->pass, ==, p.entries[i].pass->name);
      g_assert_cmpstr(e->phase, ==, p.entries[i].pass->phase == OX_PHASE_POST ? "post" : "pre");
      g_assert_cmpuint(e->runs, ==, 1);
      g_assert_cmpfloat(e->seconds, >=, 0);
      secs += e->seconds;
      /* the steps it recorded */
      uint32_t own[3] = {0, 0, 0};
      for (uint32_t k = 0; k < t->n_steps; k++)
        if (strcmp(t->steps[k].pass, e->pass) == 0) own[t->steps[k].kind == OX_STEP_APPLIED ? 0 : t->steps[k].kind == OX_STEP_REJECTED ? 1 : 2]++;
      g_assert_cmpuint(e->applied, ==, own[0]);
      g_assert_cmpuint(e->rejected, ==, own[1]);
      g_assert_cmpuint(e->check_failed, ==, own[2]);
      sum[0] += e->applied;
      sum[1] += e->rejected;
      sum[2] += e->check_failed;
      if (e->applied) with_applied++;
    }
    g_assert_cmpuint(sum[0], ==, res.applied);
    g_assert_cmpuint(sum[1], ==, res.rejected);
    g_assert_cmpuint(sum[2], ==, res.check_failures);
    g_assert_cmpfloat(secs, <=, t->seconds + 1e-6);
    char *what = g_strdup_printf("seed %" G_GUINT64_FORMAT, seed);
    trace_check_versions(t, input, NULL, what);
    g_free(what);
    ox_pipeline_free(&p);
    ox_trace_free(t);
    ox_graph_free(input);
    ox_graph_free(g);
  }
  g_assert_cmpuint(with_applied, >, 0);

  /* read: a table from a file; entries of one pass add up */
  static const char head[] = "{\"format\":\"optimus-trace\",\"version\":3,\"input\":{\"file\":\"a\",\"hash\":\"1\"},";
  char *doc = g_strdup_printf("%s\"passes\":[{\"pass\":\"p\",\"phase\":\"post\",\"seconds\":0.25,\"runs\":2,\"applied\":1,"
                              "\"rejected\":3,\"check_failed\":0},{\"pass\":\"q\"},{\"pass\":\"p\",\"phase\":\"post\","
                              "\"seconds\":0.5,\"rejected\":1}],\"names\":[],\"steps\":[]}",
                              head);
  OxDiagList d;
  ox_diags_init(&d, "t.json");
  OxTrace *t = NULL;
  g_assert_cmpint(ox_trace_read_json(doc, strlen(doc), "t.json", &t, &d), ==, 0);
  g_assert_cmpuint(d.n, ==, 0);
  g_assert_cmpuint(t->n_pass_stats, ==, 2);
  g_assert_cmpstr(t->pass_stats[0].pass, ==, "p");
  g_assert_cmpstr(t->pass_stats[0].phase, ==, "post");
  g_assert_cmpfloat(t->pass_stats[0].seconds, ==, 0.75);
  g_assert_cmpuint(t->pass_stats[0].runs, ==, 3);
  g_assert_cmpuint(t->pass_stats[0].rejected, ==, 4);
  g_assert_cmpstr(t->pass_stats[1].phase, ==, "pre"); /* defaults: pre, one run, nothing recorded */
  g_assert_cmpuint(t->pass_stats[1].runs, ==, 1);
  g_assert_cmpuint(t->pass_stats[1].applied + t->pass_stats[1].rejected, ==, 0);
  ox_trace_free(t);
  ox_diags_clear(&d);
  g_free(doc);

  static const struct {
    const char *table, *msg;
  } bad[] = {
    {"{}", "passes: must be an array"},
    {"[7]", "passes[0]: must be an object"},
    {"[{\"pass\":\"p\"},{\"phase\":\"pre\"}]", "passes[1]: needs \"pass\", a non-empty string"},
    {"[{\"pass\":\"\"}]", "passes[0]: needs \"pass\""},
    {"[{\"pass\":\"p\",\"phase\":\"middle\"}]", "passes[0]: \"phase\" must be \"pre\" or \"post\""},
    {"[{\"pass\":\"p\",\"seconds\":\"1\"}]", "passes[0]: \"seconds\" must be a number"},
    {"[{\"pass\":\"p\",\"applied\":-1}]", "passes[0]: \"applied\" must be a count"},
    {"[{\"pass\":\"p\",\"rejected\":1.5}]", "passes[0]: \"rejected\" must be a count"},
    {"[{\"pass\":\"p\",\"runs\":4294967296}]", "passes[0]: \"runs\" must be a count"},
    {NULL, "passes: 4097 entries, more than the 4096 a table may have"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    GString *table = g_string_new(bad[i].table);
    if (!bad[i].table) { /* too many entries: not read (a linear merge of millions would hang) */
      g_string_append_c(table, '[');
      for (int k = 0; k < 4097; k++) g_string_append_printf(table, "%s{\"pass\":\"p%d\"}", k ? "," : "", k);
      g_string_append_c(table, ']');
    }
    doc = g_strdup_printf("%s\"passes\":%s,\"names\":[],\"steps\":[]}", head, table->str);
    g_string_free(table, TRUE);
    ox_diags_init(&d, "t.json");
    t = NULL;
    int rc = ox_trace_read_json(doc, strlen(doc), "t.json", &t, &d);
    bool found = false;
    for (uint32_t k = 0; k < d.n; k++)
      found |= d.items[k].sev == OX_SEV_WARNING && strstr(d.items[k].msg, bad[i].msg) &&
               strstr(d.items[k].msg, "the per-pass table is left out");
    if (rc != 0 || !t || t->n_pass_stats != 0 || !found) {
      ox_diags_print(&d, stderr);
      g_test_fail_printf("table %zu (%s): wanted a warning '%s' and no table", i, bad[i].table ? bad[i].table : "4097 entries", bad[i].msg);
    }
    ox_trace_free(t);
    ox_diags_clear(&d);
    g_free(doc);
  }
}

/* text holds each of parts[0, n) (a test fails naming the first missing one). */
static void assert_has_all(const char *text, const char *const *parts, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strstr(text, parts[i])) g_test_fail_printf("missing from the text written: %s", parts[i]);
}

/* An edit a test expects: its kind, name, after (NULL: not compared), from and to. */
typedef struct WantEdit {
  OxTraceEditKind kind;
  const char *name, *after, *from, *to;
} WantEdit;

/* s's edits are want[0, n). */
static void assert_edits(const OxStep *s, const WantEdit *want, size_t n) {
  g_assert_cmpuint(s->n_edits, ==, n);
  for (size_t i = 0; i < n; i++) {
    const OxTraceEdit *e = &s->edits[i];
    g_assert_cmpint(e->kind, ==, want[i].kind);
    g_assert_cmpstr(e->name, ==, want[i].name);
    if (want[i].after) g_assert_cmpstr(e->after, ==, want[i].after);
    g_assert_cmpstr(e->from, ==, want[i].from);
    g_assert_cmpstr(e->to, ==, want[i].to);
  }
}

/* doc with its first `from` replaced by `to` must fail to read with msg at line (the first
 * error's, or with any_error any error's); fails the test (naming damage i) otherwise. */
static void assert_damage(const char *doc, size_t i, const char *from, const char *to, const char *msg, uint32_t line,
                          bool any_error) {
  char *bad = replaced(doc, from, to);
  OxDiagList d;
  ox_diags_init(&d, "t.json");
  OxTrace *t = NULL;
  int rc = ox_trace_read_json(bad, strlen(bad), "t.json", &t, &d);
  bool found = false;
  for (uint32_t k = 0; k < (any_error ? d.n : d.n_errors ? 1u : 0u); k++)
    found |= strstr(d.items[k].msg, msg) && d.items[k].line == line;
  if (rc != -1 || !found) {
    ox_diags_print(&d, stderr);
    g_test_fail_printf("damage %zu (%s -> %s): wanted line %u: %s", i, from, to, line, msg);
  }
  ox_trace_free(t);
  ox_diags_clear(&d);
  g_free(bad);
}

/* doc read (fast: our tokenizer first, else json-c only): it reads, every one of its n_steps
 * steps by the read asked for. */
static OxTrace *read_doc(const char *doc, int fast, uint32_t n_steps) {
  ox_json_set_streaming(fast);
  unsigned long before = ox_trace_fast_steps();
  OxDiagList d;
  ox_diags_init(&d, "t.json");
  OxTrace *t = NULL;
  int rc = ox_trace_read_json(doc, strlen(doc), "t.json", &t, &d);
  if (rc) ox_diags_print(&d, stderr);
  g_assert_cmpint(rc, ==, 0);
  g_assert_cmpuint(ox_trace_fast_steps() - before, ==, fast ? n_steps : 0);
  g_assert_cmpuint(t->n_steps, ==, n_steps);
  ox_diags_clear(&d);
  return t;
}

static const char v3_doc[] =
  "{\"format\":\"optimus-trace\",\"version\":3,\"input\":{\"file\":\"a\",\"hash\":\"1\"},\n"
  "\"names\":[\"x\",\"\\u0079\",\"w\"],\n"
  "\"targets\":[[\"call_function\",\"torch.relu\"]],\n"
  "\"metas\":[{\"tensor\":{\"dtype\":\"f32\",\"shape\":[4,8]}}],\n"
  "\"steps\":[\n"
  "{\"kind\":\"rejected\",\"pass\":\"p\",\"anchor\":0,\"matched\":[0,2],\"reason\":{\"code\":\"OTHER\",\"args\":[\"z\"]}},\n"
  "{\"kind\":\"applied\",\"applied_index\":1,\"pass\":\"p\",\"edits\":[[\"add\",1,0,0,[{\"node\":0}],0],[\"move\",2,1],[\"toposort\"]]}\n"
  "]}\n";

static void test_v3_errors(void) {
  OxDiagList d;
  ox_diags_init(&d, "t.json");
  OxTrace *t = NULL;
  int rc = ox_trace_read_json(v3_doc, strlen(v3_doc), "t.json", &t, &d);
  if (rc) ox_diags_print(&d, stderr);
  g_assert_cmpint(rc, ==, 0);
  g_assert_cmpuint(t->n_steps, ==, 2);
  const OxStep *s0 = &t->steps[0], *s1 = &t->steps[1];
  g_assert_cmpstr(s0->anchor, ==, "x");
  g_assert_cmpuint(s0->n_matched, ==, 2);
  g_assert_cmpstr(s0->matched[1], ==, "w");
  char *why = ox_reason_format(&s0->reason);
  g_assert_cmpstr(why, ==, "z"); /* OTHER: "%0", the text rebuilt from the template */
  free(why);
  g_assert_cmpuint(s1->n_edits, ==, 3);
  const OxTraceEdit *e = &s1->edits[0];
  g_assert_cmpint(e->kind, ==, OX_TEDIT_ADD);
  g_assert_cmpstr(e->name, ==, "y"); /* "\u0079": an escaped name reads like any other */
  g_assert_cmpstr(e->after, ==, "x");
  g_assert_cmpint(e->op, ==, OX_OP_CALL_FUNCTION);
  g_assert_cmpstr(e->target, ==, "torch.relu");
  g_assert_true(e->has_meta);
  char buf[64];
  ox_meta_format(&e->data->meta, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "f32[4, 8]");
  g_assert_cmpstr(ox_value_format(t->pool, &e->data->args, buf, sizeof buf), ==, "(%x,)");
  g_assert_cmpint(s1->edits[1].kind, ==, OX_TEDIT_MOVE);
  g_assert_cmpstr(s1->edits[1].after, ==, "y");
  g_assert_null(s1->edits[2].name); /* toposort */
  /* added / removed are rebuilt from the edits */
  g_assert_cmpuint(s1->n_added, ==, 1);
  g_assert_cmpstr(s1->added[0], ==, "y");
  g_assert_cmpuint(s1->n_removed, ==, 0);
  g_assert_cmpuint(s1->src_line, ==, 7);
  ox_trace_free(t);
  ox_diags_clear(&d);

  static const struct {
    const char *from, *to, *msg;
    uint32_t line;
  } bad[] = {
    {"\"anchor\":0", "\"anchor\":3", "steps[0].anchor: node index 3 is out of range (\"names\" has 3 entries)", 6},
    {"\"anchor\":0", "\"anchor\":\"x\"", "steps[0].anchor: a node reference must be an index into \"names\", not a string", 6},
    {"\"matched\":[0,2]", "\"matched\":[0,-1]", "steps[0].matched[1]: node index -1 is out of range", 6},
    {"[{\"node\":0}]", "[{\"node\":9}]", "steps[1].edits[0][4][0].node: node index 9 is out of range", 7},
    {"[{\"node\":0}]", "[{\"node\":\"x\"}]", "a node reference must be an index into \"names\", not a string", 7},
    {"[{\"node\":0}],0]", "[{\"node\":0}],1]", "steps[1].edits[0][5]: meta index 1 is out of range (\"metas\" has 1 entries)", 7},
    {"[\"add\",1,0,0,", "[\"add\",1,0,1,", "steps[1].edits[0][3]: target index 1 is out of range", 7},
    {"[\"add\",1,0,0,", "[\"add\",1,0,null,", "steps[1].edits[0][3]: a target must be an index into \"targets\", not null", 7},
    {"[\"move\",2,1]", "[\"move\",2]", "steps[1].edits[1]: move edit of 2 items (it has 3)", 7},
    {"[\"move\",2,1]", "[\"shuffle\",2,1]", "steps[1].edits[1]: unknown edit kind 'shuffle'", 7},
    {"[\"move\",2,1]", "[\"move\",null,1]", "steps[1].edits[1][1]: a node reference must be an index into \"names\", not null", 7},
    {"[\"toposort\"]", "[\"toposort\",1]", "steps[1].edits[2]: a toposort edit has no fields, not 1", 7},
    {"[\"toposort\"]", "{\"kind\":\"toposort\"}", "steps[1].edits[2]: an edit must be an array", 7},
    {"\"names\":[\"x\",", "\"names\":[7,", "names[0]: a node name must be a string, not an integer", 2},
    {"\"names\":[\"x\",", "\"names\":[\"x\" ", "JSON syntax error: expected ',' or ']'", 2},
    {"\"names\":[\"x\",", "\"nameless\":[\"x\",", "no \"names\" key", 1},
    {"\"call_function\"", "\"call_fn\"", "targets[0]: unknown op 'call_fn'", 3},
    {"\"shape\":[4,8]}", "\"shape\":[4,8]},\"inferred\":1", "metas[0].inferred: inferred must be a boolean", 4},
    {"\"version\":3", "\"version\":6", "version: unsupported trace version 6 (this reader knows versions 1 to 5)", 1},
    {"{\"code\":\"OTHER\"", "{\"code\":\"NOPE\"", "steps[0].reason: unknown reason code 'NOPE'", 6},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
    assert_damage(v3_doc, i, bad[i].from, bad[i].to, bad[i].msg, bad[i].line, false);

  /* replay: an edit that does not fit is located at its step's line */
  char *doc = replaced(v3_doc, "[\"move\",2,1]", "[\"erase\",2]");
  ox_diags_init(&d, "t.json");
  g_assert_cmpint(ox_trace_read_json(doc, strlen(doc), "t.json", &t, &d), ==, 0);
  OxGraph *g = ox_graph_new();
  ph(g, "x", 4, 8);
  t->input_hash = NULL;
  g_assert_cmpint(ox_replay(g, t, UINT32_MAX, &d), ==, -1);
  g_assert_cmpuint(d.items[d.n - 1].line, ==, 7);
  g_test_message("%s", d.items[d.n - 1].msg);
  ox_graph_free(g);
  ox_trace_free(t);
  ox_diags_clear(&d);
  g_free(doc);
}

/* Version 4's runs (w4_edits): a hand-written trace whose replace, erase, move and replace_input
 * items expand into the edits they stand for, with the provenance rebuilt from the replaces,
 * the same by the fast read and by json-c; damaged copies are located errors, and version 3
 * refuses the runs. */
static const char v4_doc[] =
  "{\"format\":\"optimus-trace\",\"version\":4,\"input\":{\"file\":\"a\",\"hash\":\"1\"},\n"
  "\"names\":[\"x\",\"a\",\"b\",\"u\",\"v\",\"n\",\"c\",\"d\"],\n"
  "\"targets\":[[\"call_function\",\"torch.relu\"]],\n"
  "\"metas\":[{\"tensor\":{\"dtype\":\"f32\",\"shape\":[4,8]}}],\n"
  "\"strings\":[\"z\",\"b\"],\n"
  "\"steps\":[\n"
  "{\"kind\":\"applied\",\"applied_index\":1,\"pass\":\"p\",\"edits\":[[\"replace\",1,[3,4],5,0,0,[{\"node\":0}],0],"
  "[\"erase\",2,6,7],[\"move\",3,5,4,0],[\"replace_input\",3,0,5,4]]},\n"
  "{\"kind\":\"applied\",\"applied_index\":2,\"pass\":\"p\",\"provenance\":[],\"edits\":[[\"replace\",1,[3],5,0,0,[{\"node\":0}]]]},\n"
  "{\"kind\":\"applied\",\"applied_index\":3,\"pass\":\"p\",\"edits\":[[\"args\",3,[{\"nodes\":[0,5]},1]]]},\n"
  "{\"kind\":\"rejected\",\"pass\":\"p\",\"anchor\":0,\"reason\":{\"code\":\"OTHER\",\"args\":[1],\"nodes\":[true]}}\n"
  "]}\n";

static void test_v4_runs(void) {
  for (int fast = 1; fast >= 0; fast--) {
    OxTrace *t = read_doc(v4_doc, fast, 4);
    OxDiagList d;
    /* a reason's arguments: indices into "strings" */
    g_assert_cmpuint(t->steps[3].reason.n_args, ==, 1);
    g_assert_cmpstr(t->steps[3].reason.args[0], ==, "b");
    g_assert_cmpstr(t->steps[3].reason.nodes[0], ==, "b");
    const OxStep *s = &t->steps[0];
    /* add n; u, v: a -> n; erase a | erase b, c, d | move u after n, v after u, x after v |
     * u: x -> n, v: x -> n */
    static const WantEdit want[] = {
      {OX_TEDIT_ADD, "n", "x", NULL, NULL},     {OX_TEDIT_REPLACE, "u", NULL, "a", "n"},
      {OX_TEDIT_REPLACE, "v", NULL, "a", "n"},  {OX_TEDIT_ERASE, "a", NULL, NULL, NULL},
      {OX_TEDIT_ERASE, "b", NULL, NULL, NULL},  {OX_TEDIT_ERASE, "c", NULL, NULL, NULL},
      {OX_TEDIT_ERASE, "d", NULL, NULL, NULL},  {OX_TEDIT_MOVE, "u", "n", NULL, NULL},
      {OX_TEDIT_MOVE, "v", "u", NULL, NULL},    {OX_TEDIT_MOVE, "x", "v", NULL, NULL},
      {OX_TEDIT_REPLACE, "u", NULL, "x", "n"},  {OX_TEDIT_REPLACE, "v", NULL, "x", "n"},
    };
    assert_edits(s, want, G_N_ELEMENTS(want));
    g_assert_cmpstr(ox_value_format(t->pool, &s->edits[0].data->args, (char[32]){0}, 32), ==, "(%x,)");
    g_assert_true(s->edits[0].has_meta);
    g_assert_cmpuint(s->n_prov, ==, 1); /* the replace's [a, n] */
    g_assert_cmpstr(s->prov_old[0], ==, "a");
    g_assert_cmpstr(s->prov_new[0], ==, "n");
    g_assert_cmpuint(s->n_removed, ==, 4);
    g_assert_cmpuint(t->steps[1].n_prov, ==, 0); /* written, as [] */
    g_assert_cmpuint(t->steps[1].n_edits, ==, 3);
    /* {"nodes": [i, ...]}: a list of node references */
    const OxValue *args = &t->steps[2].edits[0].data->args;
    g_assert_cmpuint(args->n, ==, 2);
    g_assert_cmpint(args->u.items[0].kind, ==, OX_V_LIST);
    g_assert_cmpstr(ox_value_format(t->pool, args, (char[64]){0}, 64), ==, "([%x, %n], 1)");
    /* written again: the same runs, and [] kept where the replaces would say otherwise */
    OxBuf b;
    ox_buf_init(&b);
    ox_trace_write_json_version(t, 4, &b);
    /* (names numbered in the order the writer meets them) */
    static const char *const want_text[] = {
        ("\"edits\":[[\"replace\",0,[1,2],3,4,0,[{\"node\":4}],0],[\"erase\",5,6,7],"
        "[\"move\",1,3,2,4],[\"replace_input\",1,4,3,2]]"),
        "\"names\":[\"a\",\"u\",\"v\",\"n\",\"x\",\"b\",\"c\",\"d\"]",
        "\"provenance\":[],",
        "[\"args\",1,[{\"nodes\":[4,3]},1]]",
        "\"reason\":{\"code\":\"OTHER\",\"args\":[0],\"nodes\":[true]}",
        "\n\"strings\":[\"b\"]}",
    };
    assert_has_all(b.data, want_text, G_N_ELEMENTS(want_text));
    g_assert_null(strstr(b.data, "\"provenance\":[["));
    ox_buf_free(&b);
    ox_trace_free(t);

    static const struct {
      const char *from, *to, *msg;
    } bad[] = {
      {"[\"replace\",1,[3,4],", "[\"replace\",1,[],", "steps[0].edits[0][2]: a replace edit's users must be a non-empty array"},
      {"[\"replace\",1,[3,4],", "[\"replace\",1,3,", "steps[0].edits[0][2]: a replace edit's users must be a non-empty array"},
      {"[\"replace\",1,[3,4],", "[\"replace\",1,[3,9],", "steps[0].edits[0][2][1]: node index 9 is out of range"},
      {"[{\"node\":0}],0],", "[{\"node\":0}],0,{\"dict\":[]},1],", "steps[0].edits[0]: replace edit of 10 items (it has 7 to 9)"},
      {"[\"erase\",2,6,7]", "[\"erase\",2,6,\"d\"]", "steps[0].edits[1][3]: a node reference must be an index into \"names\", not a string"},
      {"[\"move\",3,5,4,0]", "[\"move\",3,5,4,null]", "steps[0].edits[2][4]: a node reference must be an index into \"names\", not null"},
      {"[\"replace_input\",3,0,5,4]", "[\"replace_input\",3,0,5,8]", "steps[0].edits[3][4]: node index 8 is out of range"},
      {"\"version\":4", "\"version\":3", "steps[0].edits[0]: unknown edit kind 'replace'"},
      {"{\"nodes\":[0,5]}", "{\"nodes\":[0,8]}", "steps[2].edits[0][2][0].nodes[1]: node index 8 is out of range"},
      {"{\"nodes\":[0,5]}", "{\"nodes\":[0,\"n\"]}", "steps[2].edits[0][2][0].nodes[1]: a node reference must be an index"},
      {"{\"nodes\":[0,5]}", "{\"nodes\":5}", "steps[2].edits[0][2][0].nodes: a node list must be an array"},
      {"\"args\":[1]", "\"args\":[2]", "steps[3].reason.args[0]: string index 2 is out of range (\"strings\" has 2 entries)"},
      {"\"args\":[1]", "\"args\":[\"b\"]", "steps[3].reason.args[0]: a reason argument must be an index into \"strings\", not a string"},
      {"\"strings\":[\"z\",\"b\"]", "\"strings\":[\"z\",3]", "strings[1]: a reason argument must be a string, not an integer"},
      {"\"strings\":[\"z\",\"b\"]", "\"strings\":{}", "strings: strings must be an array, not an object"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
      uint32_t line = strstr(bad[i].msg, "steps[2]") ? 9 : strstr(bad[i].msg, "steps[3]") ? 10 : !strncmp(bad[i].msg, "strings", 7) ? 5 : 7;
      assert_damage(v4_doc, i, bad[i].from, bad[i].to, bad[i].msg, line, false);
    }
    /* version 3 takes no runs */
    char *doc = replaced(v4_doc, "\"version\":4", "\"version\":3");
    char *doc2 = replaced(doc, "[\"replace\",1,[3,4],5,0,0,[{\"node\":0}],0],", "");
    ox_diags_init(&d, "t.json");
    g_assert_cmpint(ox_trace_read_json(doc2, strlen(doc2), "t.json", &t, &d), ==, -1);
    g_assert_nonnull(strstr(d.items[0].msg, "steps[0].edits[0]: erase edit of 4 items (it has 2)"));
    bool nodes_refused = false; /* nor {"nodes": [...]} */
    for (uint32_t i = 0; i < d.n; i++) nodes_refused |= d.items[i].line == 9 && strstr(d.items[i].msg, "steps[2].edits[0][2][0]") != NULL;
    if (!nodes_refused) {
      ox_diags_print(&d, stderr);
      g_test_fail_printf("version 3 took {\"nodes\": [...]}");
    }
    ox_diags_clear(&d);
    g_free(doc);
    g_free(doc2);
  }
  ox_json_set_streaming(true);
}

/* A hand-written version 5 trace: the "rules" table, check details in "strings", ranges in index
 * lists (matched, a run's names, a replace's users, {"nodes": [...]}) and getitems items (a count,
 * entries that replace, one meta for all or one each). Both reads give the edits these stand for;
 * written again it is the same text (the names in the order the writer meets them); each damage
 * is an error at its line and path, and a range or getitems item that stands for more than the
 * file has bytes is refused. */
static const char v5_doc[] =
  "{\"format\":\"optimus-trace\",\"version\":5,\"input\":{\"file\":\"a\",\"hash\":\"1\"},\n"
  "\"names\":[\"s\",\"g0\",\"g1\",\"g2\",\"a\",\"u\",\"v\",\"b\",\"w\",\"q\",\"x\",\"y\",\"z\"],\n"
  "\"targets\":[[\"call_function\",\"torch.stack\"]],\n"
  "\"metas\":[{\"tensor\":{\"dtype\":\"f32\",\"shape\":[4,8]}}],\n"
  "\"strings\":[\"3 added nodes consistent\",\"b\"],\n"
  "\"rules\":[{\"phase\":\"pre\",\"pass\":\"p1\",\"rule\":\"r1\"},{\"phase\":\"post\",\"pass\":\"p2\"}],\n"
  "\"steps\":[\n"
  "{\"kind\":\"applied\",\"applied_index\":1,\"rule\":0,\"matched\":[[4,7],0],\"checks\":{\"structure\":{\"status\":\"passed\","
  "\"detail\":0,\"seconds\":1.5e-05}},\"edits\":[[\"getitems\",0,1,0,0,3],[\"erase\",10,[11,12]]],\"seconds\":0.00123},\n"
  "{\"kind\":\"applied\",\"applied_index\":2,\"rule\":1,\"edits\":[[\"getitems\",7,8,5,[0,null],[[4,[5,6]],null]],"
  "[\"replace_input\",10,1,2,[3,5]],[\"args\",11,[{\"nodes\":[[1,3],0]},0]]]},\n"
  "{\"kind\":\"rejected\",\"rule\":0,\"anchor\":0,\"reason\":{\"code\":\"OTHER\",\"args\":[1],\"nodes\":[true]}}\n"
  "]}\n";

static void test_v5_items(void) {
  for (int fast = 1; fast >= 0; fast--) {
    OxTrace *t = read_doc(v5_doc, fast, 3);
    OxDiagList d;
    const OxStep *s = &t->steps[0];
    /* the rules table */
    g_assert_cmpstr(s->phase, ==, "pre");
    g_assert_cmpstr(s->pass, ==, "p1");
    g_assert_cmpstr(s->rule, ==, "r1");
    g_assert_cmpstr(t->steps[1].phase, ==, "post");
    g_assert_cmpstr(t->steps[1].pass, ==, "p2");
    g_assert_null(t->steps[1].rule);
    g_assert_cmpstr(t->steps[2].pass, ==, "p1");
    g_assert_cmpstr(t->steps[2].reason.args[0], ==, "b");
    /* a check's detail from "strings"; a range in matched */
    g_assert_cmpstr(s->checks[OX_CHECK_STRUCTURE].detail, ==, "3 added nodes consistent");
    g_assert_cmpfloat(s->checks[OX_CHECK_STRUCTURE].seconds, ==, 1.5e-05);
    static const char *const matched[] = {"a", "u", "v", "b", "s"};
    g_assert_cmpuint(s->n_matched, ==, G_N_ELEMENTS(matched));
    for (size_t i = 0; i < G_N_ELEMENTS(matched); i++) g_assert_cmpstr(s->matched[i], ==, matched[i]);
    /* getitems of a count: g0 = s[0] after s, g1 = s[1] after g0, g2 = s[2] after g1, each with
     * meta 0; then erase x, y, z */
    g_assert_cmpuint(s->n_edits, ==, 6);
    static const char *const gi_names[] = {"g0", "g1", "g2"}, *const gi_after[] = {"s", "g0", "g1"},
                             *const erased[] = {"x", "y", "z"};
    for (int k = 0; k < 3; k++) {
      const OxTraceEdit *e = &s->edits[k];
      char want[16];
      g_snprintf(want, sizeof want, "(%%s, %d)", k);
      g_assert_cmpint(e->kind, ==, OX_TEDIT_ADD);
      g_assert_cmpstr(e->name, ==, gi_names[k]);
      g_assert_cmpstr(e->after, ==, gi_after[k]);
      g_assert_cmpint(e->op, ==, OX_OP_CALL_FUNCTION);
      g_assert_cmpstr(e->target, ==, "operator.getitem");
      g_assert_cmpstr(ox_value_format(t->pool, &e->data->args, (char[32]){0}, 32), ==, want);
      g_assert_cmpuint(e->data->kwargs.n, ==, 0);
      g_assert_true(e->has_meta);
      g_assert_cmpuint(e->data->meta.n, ==, 1);
    }
    for (int k = 0; k < 3; k++) {
      g_assert_cmpint(s->edits[3 + k].kind, ==, OX_TEDIT_ERASE);
      g_assert_cmpstr(s->edits[3 + k].name, ==, erased[k]);
    }
    g_assert_cmpuint(s->n_added, ==, 3); /* from the adds */
    g_assert_cmpuint(s->n_removed, ==, 3);
    g_assert_cmpuint(s->n_prov, ==, 0);
    /* entries: w = b[5] replaces a (u, v rewired, a erased); q = b[6], no meta; then the
     * replace_input run x: g0 -> g1 in x, g2, u (a range in a run's names); y's args hold
     * [g0, g1, g2, s] */
    s = &t->steps[1];
    static const WantEdit want[] = {
      {OX_TEDIT_ADD, "w", "b", NULL, NULL},        {OX_TEDIT_REPLACE, "u", NULL, "a", "w"},
      {OX_TEDIT_REPLACE, "v", NULL, "a", "w"},     {OX_TEDIT_ERASE, "a", NULL, NULL, NULL},
      {OX_TEDIT_ADD, "q", "w", NULL, NULL},        {OX_TEDIT_REPLACE, "x", NULL, "g0", "g1"},
      {OX_TEDIT_REPLACE, "g2", NULL, "g0", "g1"},  {OX_TEDIT_REPLACE, "a", NULL, "g0", "g1"},
      {OX_TEDIT_REPLACE, "u", NULL, "g0", "g1"},   {OX_TEDIT_ARGS, "y", NULL, NULL, NULL},
    };
    assert_edits(s, want, G_N_ELEMENTS(want));
    g_assert_cmpstr(ox_value_format(t->pool, &s->edits[0].data->args, (char[32]){0}, 32), ==, "(%b, 5)");
    g_assert_true(s->edits[0].has_meta);
    g_assert_false(s->edits[4].has_meta);
    g_assert_cmpstr(ox_value_format(t->pool, &s->edits[4].data->args, (char[32]){0}, 32), ==, "(%b, 6)");
    g_assert_cmpstr(ox_value_format(t->pool, &s->edits[9].data->args, (char[64]){0}, 64), ==, "([%g0, %g1, %g2, %s], 0)");
    g_assert_cmpuint(s->n_prov, ==, 1); /* the replace of a by w */
    g_assert_cmpstr(s->prov_old[0], ==, "a");
    g_assert_cmpstr(s->prov_new[0], ==, "w");
    /* written again: the same items (one meta for all, or one each; a count, or entries) */
    OxBuf b;
    ox_buf_init(&b);
    ox_trace_write_json(t, &b);
    static const char *const want_text[] = {
        "\"edits\":[[\"getitems\",4,5,0,0,3],[\"erase\",8,9,10]]",
        "[[\"getitems\",3,11,5,[0,null],[[0,[1,2]],null]],[\"replace_input\",8,5,6,7,0,1],",
        "\"names\":[\"a\",\"u\",\"v\",\"b\",\"s\",\"g0\",\"g1\",\"g2\",\"x\",\"y\",\"z\",\"w\",\"q\"]",
        "\"matched\":[[0,4]]",
        "\"checks\":{\"structure\":{\"status\":\"passed\",\"detail\":0,\"seconds\":1.5e-05}}",
        "\"seconds\":0.00123}",
        "[\"args\",9,[{\"nodes\":[[5,7],4]},0]]",
        "\"rules\":[\n{\"phase\":\"pre\",\"pass\":\"p1\",\"rule\":\"r1\"},\n{\"phase\":\"post\",\"pass\":\"p2\"}\n]",
    };
    assert_has_all(b.data, want_text, G_N_ELEMENTS(want_text));
    ox_buf_free(&b);
    ox_trace_free(t);

    static const struct {
      const char *from, *to, *msg;
      uint32_t line;
    } bad[] = {
      {"\"rule\":1,", "\"rule\":2,", "steps[1].rule: rule index 2 is out of range (\"rules\" has 2 entries)", 9},
      {"\"rule\":1,", "\"rule\":\"p2\",", "steps[1].rule: a step's rule must be an index into \"rules\", not a string", 9},
      {"{\"phase\":\"post\",\"pass\":\"p2\"}", "3", "rules[1]: a rule must be an object", 6},
      {"\"detail\":0,", "\"detail\":2,", "steps[0].checks.structure.detail: string index 2 is out of range", 8},
      {"\"detail\":0,", "\"detail\":\"x\",", "steps[0].checks.structure.detail: a check's detail must be an index", 8},
      {"[[4,7],0]", "[[7,4],0]", "steps[0].matched[0]: a range must be [first, last]", 8},
      {"[[4,7],0]", "[[4,4],0]", "steps[0].matched[0]: a range must be [first, last]", 8},
      {"[[4,7],0]", "[[4,13],0]", "steps[0].matched[0]: node index 13 is out of range", 8},
      {"[[4,7],0]", "[[4,7,8],0]", "steps[0].matched[0]: a range must be [first, last]", 8},
      {"[\"erase\",10,[11,12]]", "[\"erase\",10,[11,13]]", "steps[0].edits[1][2]: node index 13 is out of range", 8},
      {"[[4,[5,6]],null]", "[[4,[[5,4]]],null]", "steps[1].edits[0][5][0][1][0]: a range must be [first, last]", 9},
      {"[[4,[5,6]],null]", "[[4,[]],null]", "steps[1].edits[0][5][0]: a getitems entry must be null or [old, [users]]", 9},
      {"[[4,[5,6]],null]", "[4,null]", "steps[1].edits[0][5][0]: a getitems entry must be null or [old, [users]]", 9},
      {"[[4,[5,6]],null]", "[]", "steps[1].edits[0][5]: a getitems edit ends with a count (1 or more) or a non-empty", 9},
      {"[0,null],[[4", "[0],[[4", "steps[1].edits[0][4]: a getitems edit's metas: 1 for 2 getitems", 9},
      {"[0,null],[[4", "[0,3],[[4", "steps[1].edits[0][4][1]: a meta must be null or an index into \"metas\"", 9},
      {"[\"getitems\",0,1,0,0,3]", "[\"getitems\",0,1,0,0,0]", "steps[0].edits[0][5]: a getitems edit ends with a count (1 or more)", 8},
      {"[\"getitems\",0,1,0,0,3]", "[\"getitems\",0,11,0,0,3]", "steps[0].edits[0][2]: getitems names 11 to 13 are out of range", 8},
      {"[\"getitems\",0,1,0,0,3]", "[\"getitems\",0,-1,0,0,3]", "steps[0].edits[0][2]: a getitems edit's first name must be an index", 8},
      {"[\"getitems\",0,1,0,0,3]", "[\"getitems\",0,1,9223372036854775807,0,3]", "steps[0].edits[0][3]: getitems indices 9223372036854775807 and on overflow", 8},
      {"[\"getitems\",0,1,0,0,3]", "[\"getitems\",0,1,\"0\",0,3]", "steps[0].edits[0][3]: a getitems edit's first index must be an integer", 8},
      {"[\"getitems\",0,1,0,0,3]", "[\"getitems\",0,1,0,0]", "steps[0].edits[0]: getitems edit of 5 items (it has 6)", 8},
      {"[\"getitems\",0,1,0,0,3]", "[\"getitems\",13,1,0,0,3]", "steps[0].edits[0][1]: node index 13 is out of range", 8},
      {"{\"nodes\":[[1,3],0]}", "{\"nodes\":[[1,3,4],0]}", "steps[1].edits[2][2][0].nodes[0]: a range must be [first, last]", 9},
      {"{\"nodes\":[[1,3],0]}", "{\"nodes\":[[1,13],0]}", "steps[1].edits[2][2][0].nodes[0]: node index 13 is out of range", 9},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
      assert_damage(v5_doc, i, bad[i].from, bad[i].to, bad[i].msg, bad[i].line, true);
    /* more than the file's bytes: a range over every name (each in range), many times, in
     * matched and in a {"nodes": [...]}; getitems items over a thousand names, many times */
    GString *bomb = g_string_new("[[4,7],0");
    for (int k = 0; k < 400; k++) g_string_append(bomb, ",[0,12]");
    g_string_append_c(bomb, ']');
    char *nodes_bomb = g_strdup_printf("{\"nodes\":%s}", bomb->str);
    GString *names = g_string_new("\"names\":[\"s\",\"g0\",\"g1\",\"g2\",\"a\",\"u\",\"v\",\"b\",\"w\",\"q\",\"x\",\"y\",\"z\"");
    for (int k = 0; k < 1000; k++) g_string_append_printf(names, ",\"n%d\"", k);
    GString *items = g_string_new("[\"getitems\",0,1,0,0,3]");
    for (int k = 0; k < 100; k++) g_string_append(items, ",[\"getitems\",0,13,0,0,1000]");
    char *big = replaced(v5_doc, "\"names\":[\"s\",\"g0\",\"g1\",\"g2\",\"a\",\"u\",\"v\",\"b\",\"w\",\"q\",\"x\",\"y\",\"z\"", names->str);
    char *bombs[3] = {replaced(v5_doc, "[[4,7],0]", bomb->str), replaced(v5_doc, "{\"nodes\":[[1,3],0]}", nodes_bomb),
                      replaced(big, "[\"getitems\",0,1,0,0,3]", items->str)};
    for (int k = 0; k < 3; k++) {
      ox_diags_init(&d, "t.json");
      g_assert_cmpint(ox_trace_read_json(bombs[k], strlen(bombs[k]), "t.json", &t, &d), ==, -1);
      bool said = false;
      for (uint32_t i = 0; i < d.n; i++)
        said |= strstr(d.items[i].msg, "more node references and edits than the file has bytes") != NULL &&
                d.items[i].line == (k == 1 ? 9u : 8u);
      if (!said) {
        ox_diags_print(&d, stderr);
        g_test_fail_printf("bomb %d was not refused", k);
      }
      ox_diags_clear(&d);
      g_free(bombs[k]);
    }
    g_free(big);
    g_free(nodes_bomb);
    g_string_free(items, TRUE);
    g_string_free(names, TRUE);
    g_string_free(bomb, TRUE);
    char *gdoc = replaced(v5_doc, "[\"getitems\",0,1,0,0,3]", "[\"getitems\",0,1,0,0,99999999]");
    ox_diags_init(&d, "t.json");
    g_assert_cmpint(ox_trace_read_json(gdoc, strlen(gdoc), "t.json", &t, &d), ==, -1);
    g_assert_nonnull(strstr(d.items[0].msg, "steps[0].edits[0][2]: getitems names 1 to 99999999 are out of range"));
    ox_diags_clear(&d);
    g_free(gdoc);
    /* version 4 takes none of it */
    char *doc = replaced(v5_doc, "\"version\":5", "\"version\":4");
    ox_diags_init(&d, "t.json");
    g_assert_cmpint(ox_trace_read_json(doc, strlen(doc), "t.json", &t, &d), ==, -1);
    bool refused = false;
    for (uint32_t k = 0; k < d.n; k++) refused |= strstr(d.items[k].msg, "unknown edit kind 'getitems'") != NULL;
    g_assert_true(refused);
    ox_diags_clear(&d);
    g_free(doc);
  }
  ox_json_set_streaming(true);
}

/* A committed trace of tests/data/trace (recsys-towers.v2.trace.json ...): its path (g_free)
 * with its text in *text; NULL, the test skipped, outside meson test. */
static char *trace_fixture(const char *name, gchar **text, gsize *len) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  if (!root) {
    g_test_skip("OPTIMUS_SOURCE_ROOT is not set (run through meson test)");
    return NULL;
  }
  char *path = g_build_filename(root, "tests", "data", "trace", name, NULL);
  g_assert_true(g_file_get_contents(path, text, len, NULL));
  return path;
}

static char *v2_fixture(gchar **text, gsize *len) { return trace_fixture("recsys-towers.v2.trace.json", text, len); }

/* Traces written as T.json.gz: ox_trace_write_file gzips them, ox_trace_read_json takes either
 * form (by the magic bytes), and every damaged or cut stream is a located error, never a crash.
 * ox_gzip_decompress stops a stream at its limit, reads concatenated members and refuses bytes
 * after the end. */
static void test_gzip(void) {
  gchar *text = NULL;
  gsize len = 0;
  char *path = v2_fixture(&text, &len);
  if (!path) return;
  OxDiagList d;
  ox_diags_init(&d, path);
  OxTrace *t = NULL;
  g_assert_cmpint(ox_trace_read_json(text, len, path, &t, &d), ==, 0);

  char *dir = g_dir_make_tmp("ox-gzip-XXXXXX", NULL);
  char *gz = g_build_filename(dir, "t.json.gz", NULL), *plain = g_build_filename(dir, "t.json", NULL);
  char err[512];
  g_assert_true(ox_trace_write_file(t, 0, gz, err, sizeof err));
  g_assert_true(ox_trace_write_file(t, 0, plain, err, sizeof err));
  gchar *zt = NULL, *pt = NULL;
  gsize zlen = 0, plen = 0;
  g_assert_true(g_file_get_contents(gz, &zt, &zlen, NULL));
  g_assert_true(g_file_get_contents(plain, &pt, &plen, NULL));
  g_assert_true(ox_gzip_is(zt, zlen));
  g_assert_false(ox_gzip_is(pt, plen));
  g_assert_cmpuint(zlen * 4, <, plen); /* JSON of a trace compresses well */
  size_t n = 0;
  char *back = ox_gzip_decompress(zt, zlen, 0, &n, err, sizeof err);
  g_assert_nonnull(back);
  g_assert_cmpuint(n, ==, plen);
  g_assert_true(memcmp(back, pt, n) == 0); /* the gzipped bytes are the plain file's */
  g_assert_cmpint(back[n], ==, 0);
  free(back);
  OxTrace *tz = NULL;
  g_assert_cmpint(ox_trace_read_json(zt, zlen, gz, &tz, &d), ==, 0);
  char *diff = trace_first_difference_current(t, tz);
  if (diff) g_test_fail_printf("the gzipped trace reads differently: %s", diff);
  g_free(diff);
  ox_trace_free(tz);

  /* the limit: one byte short refused, exactly enough taken */
  g_assert_null(ox_gzip_decompress(zt, zlen, plen - 1, &n, err, sizeof err));
  g_assert_nonnull(strstr(err, "limit"));
  back = ox_gzip_decompress(zt, zlen, plen, &n, err, sizeof err);
  g_assert_nonnull(back);
  free(back);
  /* two members concatenated (what `cat a.gz b.gz` makes) read as one text; junk after is refused */
  GString *two = g_string_new_len(zt, (gssize)zlen);
  g_string_append_len(two, zt, (gssize)zlen);
  back = ox_gzip_decompress(two->str, two->len, 0, &n, err, sizeof err);
  g_assert_nonnull(back);
  g_assert_cmpuint(n, ==, 2 * plen);
  free(back);
  g_string_truncate(two, zlen);
  g_string_append(two, "junk");
  g_assert_null(ox_gzip_decompress(two->str, two->len, 0, &n, err, sizeof err));
  g_assert_nonnull(strstr(err, "after the end"));
  g_string_free(two, TRUE);

  /* every cut and a spread of flipped bytes: an error or (a flip in a byte deflate ignores, or in
   * the header's name/time fields) the same trace; never a crash */
  for (size_t cut = 0; cut < zlen; cut += 1 + zlen / 97) {
    OxTrace *tc = NULL;
    OxDiagList dc;
    ox_diags_init(&dc, gz);
    g_assert_cmpint(ox_trace_read_json(zt, cut, gz, &tc, &dc), ==, -1);
    g_assert_cmpuint(dc.n, >, 0);
    ox_diags_clear(&dc);
  }
  GRand *rng = g_rand_new_with_seed(20);
  for (int i = 0; i < 200; i++) {
    char *m = g_memdup2(zt, zlen);
    size_t at = 2 + (size_t)g_rand_int_range(rng, 0, (gint32)(zlen - 2));
    m[at] ^= (char)(1 + g_rand_int_range(rng, 0, 255));
    OxTrace *tm = NULL;
    OxDiagList dm;
    ox_diags_init(&dm, gz);
    int rc = ox_trace_read_json(m, zlen, gz, &tm, &dm);
    if (rc == 0) {
      g_assert_nonnull(tm);
      ox_trace_free(tm);
    } else {
      g_assert_cmpuint(dm.n, >, 0);
    }
    ox_diags_clear(&dm);
    g_free(m);
  }
  g_rand_free(rng);
  g_remove(gz);
  g_remove(plain);
  g_rmdir(dir);
  g_free(gz);
  g_free(plain);
  g_free(dir);
  g_free(zt);
  g_free(pt);
  ox_trace_free(t);
  ox_diags_clear(&d);
  g_free(text);
  g_free(path);
}

/* t, a trace of the bundled example read from an older version's file, written in the current
 * version (ox_trace_write_json) and read back: the same trace, record by record, and both replay
 * onto the example graph (shapes inferred, as the CLI does) to the same graph. Returns the bytes
 * of the current form. */
/* A fixture's text read as a trace; it must read. */
static OxTrace *read_fixture(const char *path, const char *text, size_t len) {
  OxDiagList d;
  ox_diags_init(&d, path);
  OxTrace *t = NULL;
  int rc = ox_trace_read_json(text, len, path, &t, &d);
  if (rc) ox_diags_print(&d, stderr);
  g_assert_cmpint(rc, ==, 0);
  ox_diags_clear(&d);
  return t;
}

static size_t assert_current_form(const OxTrace *t, const char *what) {
  char *graph = g_build_filename(g_getenv("OPTIMUS_SOURCE_ROOT"), "data", "examples", "recsys-towers.txt", NULL);
  OxDiagList d;
  ox_diags_init(&d, graph);
  OxBuf b;
  ox_buf_init(&b);
  ox_trace_write_json(t, &b);
  OxTrace *back = NULL;
  g_assert_cmpint(ox_trace_read_json(b.data, b.len, "current.json", &back, &d), ==, 0);
  char *diff = trace_first_difference_current(t, back);
  if (diff) g_test_fail_printf("%s and its current form differ: %s", what, diff);
  g_free(diff);
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_file(graph, OX_FMT_UNKNOWN, NULL, &doc, &d), ==, 0);
  ox_shape_infer_graph(doc->graphs[0], NULL, NULL);
  OxGraph *ga = ox_graph_clone(doc->graphs[0]), *gb = ox_graph_clone(doc->graphs[0]);
  int ra = ox_replay(ga, t, UINT32_MAX, &d), rb = ox_replay(gb, back, UINT32_MAX, &d);
  if (ra || rb) ox_diags_print(&d, stderr);
  g_assert_cmpint(ra, ==, 0);
  g_assert_cmpint(rb, ==, 0);
  char *fa = fx_of(ga), *fb = fx_of(gb);
  g_assert_cmpstr(fa, ==, fb);
  free(fa);
  free(fb);
  ox_graph_free(ga);
  ox_graph_free(gb);
  ox_doc_free(doc);
  ox_diags_clear(&d);
  ox_trace_free(back);
  size_t n = b.len;
  ox_buf_free(&b);
  g_free(graph);
  return n;
}

/* A version 3 (4) file written by the version 3 (4) writer before version 4 (5) existed (the
 * bundled example's trace as of b9abf8e (1a0e408), tests/data/trace/recsys-towers.v3.trace.json
 * (.v4.)): it reads; written as that version again it is the same bytes (that writer is
 * unchanged); written in the current version it is smaller, and read back it is the same trace,
 * record by record; both replay onto the example graph to the same result. */
static void test_v3_file(gconstpointer data) {
  int version = GPOINTER_TO_INT(data);
  gchar *text = NULL;
  gsize len = 0;
  char *name = g_strdup_printf("recsys-towers.v%d.trace.json", version);
  char *path = trace_fixture(name, &text, &len);
  g_free(name);
  if (!path) return;
  OxTrace *t = read_fixture(path, text, len);
  g_assert_cmpuint(t->n_applied, >, 5);
  OxBuf b3;
  ox_buf_init(&b3);
  ox_trace_write_json_version(t, version, &b3);
  g_assert_cmpuint(b3.len, ==, len);
  g_assert_true(memcmp(b3.data, text, len) == 0);
  char *what = g_strdup_printf("the version %d file", version);
  size_t cur = assert_current_form(t, what);
  g_free(what);
  g_assert_cmpuint(cur, <, len);
  g_test_message("the example's trace: version %d %zu bytes, version %d %zu", version, (size_t)len, OX_TRACE_VERSION,
                 cur);
  ox_trace_free(t);
  ox_buf_free(&b3);
  g_free(text);
  g_free(path);
}

/* A version 2 file written by the version 2 writer before version 3 existed (the bundled
 * example's trace as of a7534aa): it reads; written as version 2 again it is the same bytes
 * (the version 2 writer is unchanged); written in the current version and read back it is the
 * same trace, record by record; and it replays onto the example graph it was recorded on. */
static void test_v2_file(void) {
  gchar *text = NULL;
  gsize len = 0;
  char *path = v2_fixture(&text, &len);
  if (!path) return;
  OxTrace *t = read_fixture(path, text, len);
  g_assert_cmpuint(t->n_steps, >, 100);
  g_assert_cmpuint(t->n_applied, >, 5);
  OxBuf b2;
  ox_buf_init(&b2);
  ox_trace_write_json_version(t, 2, &b2);
  /* line by line; the config object is re-spaced by json-c when read (as before version 3) */
  char **want = g_strsplit(text, "\n", -1), **got = g_strsplit(b2.data, "\n", -1);
  g_assert_cmpuint(g_strv_length(got), ==, g_strv_length(want));
  for (guint i = 0; want[i]; i++)
    if (!g_str_has_prefix(want[i], "  \"config\": ")) g_assert_cmpstr(got[i], ==, want[i]);
  g_strfreev(want);
  g_strfreev(got);
  size_t now = assert_current_form(t, "the version 2 file");
  g_assert_cmpuint(now * 5, <, len * 3); /* the same records in about half the bytes */
  ox_trace_free(t);
  ox_buf_free(&b2);
  g_free(text);
  g_free(path);
}

/* ---- the fast read of version 3 steps (ox_json_trace.c, no json-c) against the json-c read */

/* One read of text with the fast read on or off: the status, every diagnostic as printed, and
 * the trace written as version 3 and as version 2 (when it read); *out the trace (or NULL). */
static char *trace_read_summary(const char *text, size_t len, bool fast, OxTrace **out) {
  ox_json_set_streaming(fast);
  OxDiagList d;
  ox_diags_init(&d, "t.json");
  OxTrace *t = NULL;
  int rc = ox_trace_read_json(text, len, "t.json", &t, &d);
  ox_json_set_streaming(true);
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "rc=%d\n", rc);
  for (size_t i = 0; i < d.n; i++) {
    char *m = ox_diag_format(&d, &d.items[i]);
    g_string_append_printf(s, "%s\n", m);
    free(m);
  }
  ox_diags_clear(&d);
  if (t) {
    OxBuf b;
    ox_buf_init(&b);
    ox_trace_write_json_version(t, 3, &b);
    ox_buf_puts(&b, "--- version 2\n");
    ox_trace_write_json_version(t, 2, &b);
    g_string_append_len(s, b.data, (gssize)b.len);
    ox_buf_free(&b);
  }
  *out = t;
  return g_string_free(s, FALSE);
}

/* Reads text both ways and fails the test (naming what) unless both give the same status, the
 * same diagnostics (text, file, line, column, in order), the same trace field by field (with
 * each step's and edit's line) and the same bytes written back. Returns the number of steps the
 * fast read took. */
static unsigned long assert_fast_equals_json_c(const char *what, const char *text, size_t len) {
  OxTrace *a = NULL, *b = NULL;
  unsigned long before = ox_trace_fast_steps();
  char *sa = trace_read_summary(text, len, true, &a);
  unsigned long fast = ox_trace_fast_steps() - before;
  char *sb = trace_read_summary(text, len, false, &b);
  g_assert_cmpuint(ox_trace_fast_steps() - before, ==, fast); /* the switch turns it off */
  if (strcmp(sa, sb) != 0) {
    g_printerr("%s: the fast read differs from the json-c read\n--- fast\n%.3000s\n--- json-c\n%.3000s\n", what, sa,
               sb);
    g_test_fail();
  }
  if (a && b) {
    char *diff = trace_first_difference(a, b);
    if (diff) {
      g_test_fail_printf("%s: the fast read differs from the json-c read: %s", what, diff);
      g_free(diff);
    }
    for (uint32_t i = 0; i < a->n_steps; i++) { /* lines (where replay locates its errors), links */
      g_assert_cmpuint(a->steps[i].src_line, ==, b->steps[i].src_line);
      for (uint32_t k = 0; k < a->steps[i].reason.n_args; k++)
        g_assert_cmpstr(a->steps[i].reason.nodes[k], ==, b->steps[i].reason.nodes[k]);
      for (uint32_t k = 0; k < a->steps[i].n_edits; k++)
        g_assert_cmpuint(a->steps[i].edits[k].src_line, ==, b->steps[i].edits[k].src_line);
    }
  }
  g_assert_true((a == NULL) == (b == NULL));
  ox_trace_free(a);
  ox_trace_free(b);
  g_free(sa);
  g_free(sb);
  return fast;
}

/* The trace of the default pipeline on generated graph seed, written as version 3. */
static char *generated_v3(uint64_t seed, size_t *len, uint32_t *n_steps) {
  bool post;
  OxGraph *g = gen_graph(seed, &post);
  g_assert_nonnull(g);
  OxTrace *t = ox_trace_new_for(g);
  optimize_default(g, t, seed % 3 == 0); /* numeric results (max_abs, trials ...) on some */
  t->input_file = ox_trace_intern(t, "gen \"graph\"\t\u00e9.txt"); /* escapes, UTF-8 */
  OxBuf b;
  ox_buf_init(&b);
  ox_trace_write_json(t, &b);
  *len = b.len;
  *n_steps = t->n_steps;
  ox_trace_free(t);
  ox_graph_free(g);
  return b.data;
}

/* Every trace fixture (tests/data/trace, data/examples; version 2 ones also written as version
 * 3) and the traces of optimizing generated graphs read the same both ways, and the fast read
 * takes every step of what optimus writes. */
static void test_fast_read_equals_json_c(void) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  static const char *const dirs[] = {"tests/data/trace", "data/examples"};
  unsigned fixtures = 0;
  if (!root) g_test_message("OPTIMUS_SOURCE_ROOT is not set (run through meson test): no fixtures");
  for (size_t k = 0; root && k < G_N_ELEMENTS(dirs); k++) {
    char *dir = g_build_filename(root, dirs[k], NULL);
    GDir *dh = g_dir_open(dir, 0, NULL);
    g_assert_nonnull(dh);
    const char *name;
    while ((name = g_dir_read_name(dh))) {
      if (!strstr(name, "trace")) continue;
      char *path = g_build_filename(dir, name, NULL), *text = NULL;
      gsize len = 0;
      g_assert_true(g_file_get_contents(path, &text, &len, NULL));
      assert_fast_equals_json_c(path, text, len);
      OxDiagList d;
      ox_diags_init(&d, path);
      OxTrace *t = NULL;
      g_assert_cmpint(ox_trace_read_json(text, len, path, &t, &d), ==, 0);
      OxBuf b;
      ox_buf_init(&b);
      ox_trace_write_json(t, &b);
      g_assert_cmpuint(assert_fast_equals_json_c(path, b.data, b.len), ==, t->n_steps);
      fixtures++;
      ox_buf_free(&b);
      ox_trace_free(t);
      ox_diags_clear(&d);
      g_free(text);
      g_free(path);
    }
    g_dir_close(dh);
    g_free(dir);
  }
  g_assert_cmpuint(fixtures, >=, root ? 2 : 0);
  uint32_t n = gen_graph_count(40), steps = 0;
  for (uint64_t seed = 1; seed <= n; seed++) {
    size_t len;
    uint32_t n_steps;
    char *text = generated_v3(seed, &len, &n_steps);
    char *what = g_strdup_printf("seed %" G_GUINT64_FORMAT, seed);
    g_assert_cmpuint(assert_fast_equals_json_c(what, text, len), ==, n_steps);
    steps += n_steps;
    g_free(what);
    free(text);
  }
  g_test_message("%u fixtures, %u generated traces of %u steps", fixtures, n, steps);
  g_assert_cmpuint(steps, >, n);
}

/* Damaged steps: the fast read gives up on the step and json-c's read of it says what it says
 * (same message, line and column), or takes it as json-c does. Then the same damage at random
 * places of a generated trace. */
static void test_fast_read_fallback(void) {
  static const struct {
    const char *from, *to;
    bool fast; /* the fast read takes it (the same as json-c) */
  } damage[] = {
    /* truncated, malformed */
    {"\"args\":[\"z\"]}},", "\"args\":[\"z\"]},", false},
    {"[\"toposort\"]]}\n", "[\"toposort\"]\n", false},
    {"\"matched\":[0,2]", "\"matched\":[0,2", false},
    {"\"matched\":[0,2]", "\"matched\":[0,,2]", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\" \"anchor\"", false},
    {"\"kind\":\"rejected\"", "\"kind\":'rejected'", false},
    {"\"applied_index\":1", "\"applied_index\":01", false},
    /* wrong types, unknown or repeated members */
    {"\"applied_index\":1", "\"applied_index\":\"1\"", false},
    {"\"applied_index\":1", "\"applied_index\":1.0", false},
    {"\"applied_index\":1", "\"applied_index\":-1", false},
    {"\"applied_index\":1", "\"applied_index\":null", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":7,\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":null,\"anchor\"", true},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"pass\":\"q\",\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"extra\":{\"a\":[1]},\"anchor\"", false},
    {"\"matched\":[0,2]", "\"matched\":[0,true]", false},
    {"\"matched\":[0,2]", "\"matched\":null", false},
    {"\"matched\":[0,2]", "\"matched\":[]", true},
    {"\"kind\":\"rejected\"", "\"kind\":\"refused\"", false},
    {"\"kind\":\"rejected\"", "\"kind\":\"rejected\\u0000x\"", false},
    {"{\"kind\":\"rejected\",", "{", false},
    {"\"args\":[\"z\"]", "\"args\":\"z\"", false},
    {"\"args\":[\"z\"]", "\"args\":[\"z\",1]", false},
    {"\"args\":[\"z\"]", "\"args\":[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\"]", false},
    {"\"args\":[\"z\"]", "\"args\":[\"z\"],\"nodes\":[true,false]", true},
    {"\"args\":[\"z\"]", "\"args\":[\"z\"],\"nodes\":[1]", false},
    {"\"args\":[\"z\"]", "\"args\":[\"z\"],\"text\":\"z\"", false},
    {"{\"code\":\"OTHER\"", "{\"code\":null", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"seconds\":\"slow\",\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"seconds\":null,\"anchor\"", true},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"cost\":{\"launches\":[1,null],\"bytes\":[2,3]},\"anchor\"", true},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"cost\":{\"launches\":[1,-2]},\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"cost\":{\"flops\":[18446744073709551615,0]},\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"provenance\":[[0,1],[2]],\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"checks\":{\"shape\":{\"status\":\"passed\",\"seconds\":1e-3}},\"anchor\"", true},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"checks\":{\"shape\":{\"status\":\"fine\"}},\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"checks\":{\"speed\":{\"status\":\"passed\"}},\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"checks\":{\"shape\":{\"detail\":\"d\"}},\"anchor\"", false},
    /* edits */
    {"[\"move\",2,1]", "[\"shuffle\",2,1]", false},
    {"[\"move\",2,1]", "[\"move\",2,1,0]", false},
    {"[\"move\",2,1]", "[\"move\",2]", false},
    {"[\"move\",2,1]", "[\"move\",2,null]", true},
    {"[\"move\",2,1]", "[\"move\",2,\"x\"]", false},
    {"[\"move\",2,1]", "[\"rename\",2,\"x\\ny\"]", true},
    {"[\"move\",2,1]", "[\"rename\",2,\"x\\u0000y\"]", false},
    {"[\"move\",2,1]", "[\"replace_input\",2,0,1]", true},
    {"[\"move\",2,1]", "[\"replace_input\",2,0]", false},
    {"[\"move\",2,1]", "[\"meta\",2,0]", true},
    {"[\"move\",2,1]", "[\"meta\",2,null]", false},
    {"[\"move\",2,1]", "[\"args\",2,[1,2.5,\"s\",null,true,{\"tuple\":[]}],{\"dict\":[[\"k\",{\"node\":1}]]}]", true},
    {"[\"move\",2,1]", "[\"args\",2,[],{\"tuple\":[]}]", false},
    {"[\"move\",2,1]", "[\"args\",2,{\"tuple\":[]}]", false},
    {"[\"toposort\"]", "[\"toposort\",1]", false},
    {"[\"toposort\"]", "{\"kind\":\"toposort\"}", false},
    {"[\"toposort\"]", "[]", false},
    {"[{\"node\":0}],0]", "[{\"node\":0}],null,{\"dict\":[]}]", true},
    {"[{\"node\":0}],0]", "[{\"node\":0}],0,{\"dict\":[[\"a\",1],[\"a\",2]]}]", true},
    {"[{\"node\":0}],0]", "[{\"node\":0}],0,{\"tuple\":[]}]", false},
    {"[{\"node\":0}],0]", "[{\"node\":0}],1]", false},
    {"[{\"node\":0}],0]", "[{\"node\":0},{\"slice\":[1,2]}],0]", false},
    {"[{\"node\":0}],0]", "[{\"node\":0},{\"node\":0,\"node\":1}],0]", false},
    {"[{\"node\":0}],0]", "[{\"node\":\"x\"}],0]", false},
    {"[{\"node\":0}],0]", "[{\"node\":9}],0]", false},
    {"[{\"node\":0}],0]", "[{\"nod\":0}],0]", false},
    {"[{\"node\":0}],0]", "[{\"dtype\":\"\"}],0]", false},
    {"[\"add\",1,0,0,", "[\"add\",1,0,1,", false},
    {"[\"add\",1,0,0,", "[\"add\",1,0,-1,", false},
    {"[\"add\",1,0,0,", "[\"add\",1,null,0,", true},
    /* escapes and strings */
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"\\u0070\\n\\t\\\"\\\\\\/\",\"anchor\"", true},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"\\q\",\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"\\ud800\",\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"\\u00\",\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"\xff\",\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"a\tb\",\"anchor\"", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\\u0000\",\"anchor\"", false},
    /* huge numbers */
    {"\"anchor\":0", "\"anchor\":99999999999999999999", false},
    {"\"anchor\":0", "\"anchor\":-9223372036854775809", false},
    {"\"applied_index\":1", "\"applied_index\":4294967296", false},
    {"\"applied_index\":1", "\"applied_index\":1e400", false},
    {"[{\"node\":0}],0]", "[9223372036854775807,-9223372036854775808,1e308,1e-400],0]", true},
    {"[{\"node\":0}],0]", "[9223372036854775808],0]", false},
    {"[{\"node\":0}],0]", "[-1e999],0]", false},
    {"\"pass\":\"p\",\"anchor\"", "\"pass\":\"p\",\"seconds\":1e999,\"anchor\"", false},
    /* the tables (the steps read fast all the same, unless an index they hold is out of range) */
    {"\"shape\":[4,8]}", "\"shape\":[4,8],\"layout\":\"x\"}", true},
    {"\"shape\":[4,8]}", "\"shape\":[4,-8]}", true},
    {"\"shape\":[4,8]}", "\"shape\":[4,8],\"stride\":[8]}", true},
    {"\"shape\":[4,8]}", "\"shape\":[4,\"s\"],\"stride\":[8,1],\"device\":\"cpu\"}", true},
    {"\"shape\":[4,8]}", "\"shape\":[4,99999999999999999999]}", true},
    {"\"shape\":[4,8]}", "\"shape\":[4,8.]}", true}, /* json-c reads 8. */
    {"\"shape\":[4,8]}", "\"shape\":[4,\"\"]}", true},
    {"\"shape\":[4,8]}", "\"shape\":[4,8],\"dtype\":\"f64\"}", true},
    {"{\"tensor\":", "{\"inferred\":true,\"tensor\":", true},
    {"{\"tensor\":", "{\"scalar\":true,\"tensor\":", true},
    {"\"metas\":[{", "\"metas\":[{\"tuple\":[{\"dtype\":\"f32\",\"shape\":[4,8]},{\"dtype\":\"?\"}]},{\"symint\":null},{", true},
    {"\"metas\":[{", "\"metas\":[{\"scalar\":true},{\"symint\":\"s0\"},{\"symint\":7},{", true},
    {"\"metas\":[{", "\"metas\":[7,{", true},
    {"\"steps\":[", "\"metas\":[],\"steps\":[", false},
    {"\"steps\":[", "\"targets\":{},\"steps\":[", false},
    {"\"call_function\"", "\"call_fn\"", true},
    {"\"torch.relu\"]", "\"torch.relu\",1]", true},
    {"\"torch.relu\"]", "\"torch.\\u0072elu\"]", true},
    {"\"torch.relu\"]", "\"torch.relu\\u0000\"]", true},
  };
  size_t base_len = strlen(v3_doc);
  g_assert_cmpuint(assert_fast_equals_json_c("v3_doc", v3_doc, base_len), ==, 2);
  for (size_t i = 0; i < G_N_ELEMENTS(damage); i++) {
    char *doc = replaced(v3_doc, damage[i].from, damage[i].to);
    char *what = g_strdup_printf("damage %zu (%s -> %s)", i, damage[i].from, damage[i].to);
    /* the undamaged step is read fast either way */
    unsigned long took = assert_fast_equals_json_c(what, doc, strlen(doc));
    if (took != (damage[i].fast ? 2u : 1u) && !(took == 0 && !damage[i].fast))
      g_test_fail_printf("%s: the fast read took %lu of the 2 steps", what, took);
    g_free(what);
    g_free(doc);
  }

  /* random damage to the steps of a generated trace: bytes replaced, removed, repeated */
  size_t len;
  uint32_t n_steps;
  char *text = generated_v3(4, &len, &n_steps);
  GRand *rng = g_rand_new_with_seed(20);
  static const char bytes[] = "{}[],:\"\\0123456789-.eE+ntfu\x01\xc3";
  const char *steps = strstr(text, "\"steps\":["), *names = strstr(text, "\"names\":[");
  g_assert_true(steps && names && names > steps);
  size_t s0 = (size_t)(steps - text) + 9, s1 = (size_t)(names - text);
  int rounds = g_test_slow() ? 4000 : 400;
  for (int k = 0; k < rounds; k++) {
    GString *m = g_string_new_len(text, (gssize)len);
    for (int j = g_rand_int_range(rng, 1, 4); j > 0; j--) {
      size_t at = s0 + (size_t)g_rand_int_range(rng, 0, (gint32)(s1 - s0));
      char c = bytes[g_rand_int_range(rng, 0, (gint32)sizeof bytes - 1)];
      switch (g_rand_int_range(rng, 0, 3)) {
      case 0: m->str[at] = c; break;
      case 1: g_string_erase(m, (gssize)at, 1); break;
      default: g_string_insert_c(m, (gssize)at, c); break;
      }
    }
    char *what = g_strdup_printf("random damage %d", k);
    assert_fast_equals_json_c(what, m->str, m->len);
    g_free(what);
    g_string_free(m, TRUE);
  }
  g_rand_free(rng);
  free(text);
}


/* ---- coverage (ox_coverage.h): what each pass and rule tried, applied and refused */

static OxStep *cov_step(OxTrace *t, OxStepKind kind, const char *phase, const char *pass, const char *rule,
                        OxReasonCode code, const char *a0, const char *a1, const char *a2) {
  OxStep *s = ox_trace_add_step(t, kind);
  s->phase = phase;
  s->pass = ox_trace_intern(t, pass);
  s->rule = rule ? ox_trace_intern(t, rule) : NULL;
  if (kind != OX_STEP_APPLIED) {
    s->reason.code = (uint16_t)code;
    const char *a[3] = {a0, a1, a2};
    for (int i = 0; i < 3 && a[i]; i++) s->reason.args[s->reason.n_args++] = ox_trace_intern(t, a[i]);
  } else {
    s->applied_index = ++t->n_applied;
    s->seconds = 0.25;
  }
  return s;
}

static void test_coverage(void) {
  OxTrace *t = ox_trace_new();
  /* #0..#2 batch_relu: a set too small twice (sizes 2, 3), then applied */
  cov_step(t, OX_STEP_REJECTED, "pre", "batch_relu", "batch_relu", OX_REASON_SET_TOO_SMALL, "2", "5", NULL);
  cov_step(t, OX_STEP_REJECTED, "pre", "batch_relu", "batch_relu", OX_REASON_SET_TOO_SMALL, "3", "5", NULL);
  cov_step(t, OX_STEP_APPLIED, "pre", "batch_relu", "batch_relu", 0, NULL, NULL, NULL);
  /* #3..#8 split_cat_pass, two rules; pattern failures of three kinds */
  cov_step(t, OX_STEP_REJECTED, "pre", "split_cat_pass", "simplify_split_cat", OX_REASON_NO_MATCH, "[%a, %b]",
           "getitem(...)", "function_mismatch: unbind_3 is torch.unbind, pattern wants split|split_with_sizes(...)");
  cov_step(t, OX_STEP_REJECTED, "pre", "split_cat_pass", "merge_split_squeeze", OX_REASON_NO_MATCH, "[%x]",
           "getitem(...)", "function_mismatch: x is x, pattern wants getitem(...)");
  cov_step(t, OX_STEP_REJECTED, "pre", "split_cat_pass", "simplify_split_cat", OX_REASON_NO_MATCH, "[%c]",
           "getitem(...)", "function_mismatch: unbind_9 is torch.unbind, pattern wants split|split_with_sizes(...)");
  cov_step(t, OX_STEP_REJECTED, "pre", "split_cat_pass", "simplify_split_cat", OX_REASON_NO_MATCH, "[]",
           "getitem(...)", "list: not a non-empty list");
  cov_step(t, OX_STEP_REJECTED, "pre", "split_cat_pass", "simplify_split_cat", OX_REASON_NO_MATCH, "[%w]",
           "getitem(...)", "function_mismatch: l_0_w is l.0.w, pattern wants getitem(...)");
  cov_step(t, OX_STEP_REJECTED, "pre", "split_cat_pass", "simplify_split_cat", OX_REASON_TARGET_MISMATCH, "relu_1",
           "torch.relu", "cat(...)");
  /* #9 the same pass name in the post phase is a row of its own; #10 a check failure */
  cov_step(t, OX_STEP_REJECTED, "post", "split_cat_pass", "simplify_split_cat", OX_REASON_OTHER, "x", NULL, NULL);
  cov_step(t, OX_STEP_CHECK_FAILED, "pre", "batch_relu", "batch_relu", OX_REASON_CHECK_FAILED, "numeric", "max abs 3",
           NULL);
  /* #11.. more distinct values than are kept: the rest counted as other */
  for (int i = 0; i < OX_COVERAGE_MAX_DETAILS + 3; i++) {
    char sz[16];
    g_snprintf(sz, sizeof sz, "%d", 100 + i);
    cov_step(t, OX_STEP_REJECTED, "pre", "batch_tanh", NULL, OX_REASON_SET_TOO_SMALL, sz, "500", NULL);
  }
  cov_step(t, OX_STEP_APPLIED, "pre", "batch_relu", "batch_relu", 0, NULL, NULL, NULL); /* a second one, last */
  cov_step(t, OX_STEP_REJECTED, "post", "batch_aten_add", NULL, OX_REASON_SYMBOLIC, "add_3", "s0", NULL);
  /* a method call named after its method is not a graph input */
  cov_step(t, OX_STEP_REJECTED, "post", "batch_aten_add", NULL, OX_REASON_TARGET_MISMATCH, "view", "view", "getitem(...)");
  OxCoverage *c = ox_coverage_of(t);
  g_assert_cmpuint(c->n_steps, ==, t->n_steps);
  g_assert_cmpuint(c->n_rows, ==, 6);
  /* rows in the order of their first record */
  const OxCoverageRow *r = &c->rows[0];
  g_assert_cmpstr(r->pass, ==, "batch_relu");
  g_assert_cmpuint(r->attempts, ==, 5);
  g_assert_cmpuint(r->applied, ==, 2);
  g_assert_cmpuint(r->rejected, ==, 2);
  g_assert_cmpuint(r->check_failed, ==, 1);
  g_assert_cmpuint(r->first, ==, 0);
  g_assert_cmpuint(r->first_applied, ==, 2);
  g_assert_cmpfloat(r->step_seconds, ==, 0.5);
  g_assert_cmpuint(r->n_reasons, ==, 2);
  g_assert_cmpuint(r->n_reasons, ==, 2);
  g_assert_cmpuint(r->reasons[0].code, ==, OX_REASON_SET_TOO_SMALL); /* 2 before 1 */
  g_assert_cmpuint(r->reasons[0].count, ==, 2);
  g_assert_cmpuint(r->reasons[0].n_details, ==, 2);
  g_assert_cmpstr(r->reasons[0].details[0].text, ==, "set of 2"); /* a tie: first seen first */
  g_assert_cmpuint(r->reasons[0].details[1].first, ==, 1);
  g_assert_cmpuint(r->reasons[1].code, ==, OX_REASON_CHECK_FAILED);
  g_assert_cmpstr(r->reasons[1].details[0].text, ==, "check numeric");
  g_assert_cmpuint(r->reasons[1].first, ==, 10);

  r = &c->rows[1];
  g_assert_cmpstr(r->rule, ==, "simplify_split_cat");
  g_assert_cmpstr(r->phase, ==, "pre");
  g_assert_cmpuint(r->attempts, ==, 5);
  g_assert_cmpuint(r->first_applied, ==, UINT32_MAX);
  g_assert_cmpuint(r->n_reasons, ==, 2);
  const OxCoverageReason *x = &r->reasons[0];
  g_assert_cmpuint(x->code, ==, OX_REASON_NO_MATCH);
  g_assert_cmpuint(x->count, ==, 4);
  g_assert_cmpuint(x->first, ==, 3);
  g_assert_cmpuint(x->n_details, ==, 3);
  g_assert_cmpstr(x->details[0].text, ==, "wants split|split_with_sizes(...), found torch.unbind");
  g_assert_cmpuint(x->details[0].count, ==, 2);
  g_assert_cmpuint(x->details[0].first, ==, 3);
  g_assert_cmpstr(x->details[1].text, ==, "at getitem(...)"); /* not a function mismatch */
  g_assert_cmpuint(x->details[1].first, ==, 6);
  g_assert_cmpstr(x->details[2].text, ==, "wants getitem(...), found a parameter or buffer");
  g_assert_cmpstr(r->reasons[1].details[0].text, ==, "wants cat(...), found torch.relu");

  r = &c->rows[2];
  g_assert_cmpstr(r->rule, ==, "merge_split_squeeze");
  g_assert_cmpstr(r->reasons[0].details[0].text, ==, "wants getitem(...), found a graph input");
  r = &c->rows[3];
  g_assert_cmpstr(r->phase, ==, "post");
  g_assert_cmpuint(r->reasons[0].n_details, ==, 0); /* OTHER: no deciding value */
  r = &c->rows[4];
  g_assert_null(r->rule);
  g_assert_cmpuint(r->reasons[0].count, ==, OX_COVERAGE_MAX_DETAILS + 3);
  g_assert_cmpuint(r->reasons[0].n_details, ==, OX_COVERAGE_MAX_DETAILS);
  g_assert_cmpuint(r->reasons[0].n_other, ==, 3);
  g_assert_cmpstr(r->reasons[0].details[0].text, ==, "set of 100");
  g_assert_cmpstr(c->rows[5].reasons[0].details[0].text, ==, "symbolic size s0");
  g_assert_cmpstr(c->rows[5].reasons[1].details[0].text, ==, "wants getitem(...), found view");
  ox_coverage_free(c);
  /* two runs side by side: a coverage against itself differs nowhere; one more refusal moves
   * its row, its reason and its value, and nothing else */
  OxCoverage *c1 = ox_coverage_of(t);
  for (uint32_t i = 0; i < c1->n_rows; i++) {
    const OxCoverageRow *q = &c1->rows[i];
    g_assert_true(ox_coverage_find_row(c1, q->phase, q->pass, q->rule) == q);
    g_assert_false(ox_coverage_rows_differ(q, q));
    g_assert_true(ox_coverage_rows_differ(q, NULL));
  }
  g_assert_null(ox_coverage_find_row(c1, "post", "batch_relu", "batch_relu"));
  g_assert_null(ox_coverage_find_row(c1, "pre", "batch_tanh", "batch_tanh")); /* its rule is NULL */
  cov_step(t, OX_STEP_REJECTED, "pre", "batch_relu", "batch_relu", OX_REASON_SET_TOO_SMALL, "2", "5", NULL);
  OxCoverage *c2 = ox_coverage_of(t);
  for (uint32_t i = 0; i < c1->n_rows; i++) {
    const OxCoverageRow *q1 = &c1->rows[i], *q2 = ox_coverage_find_row(c2, q1->phase, q1->pass, q1->rule);
    g_assert_nonnull(q2);
    gboolean relu = !strcmp(q1->pass, "batch_relu");
    g_assert_cmpint(ox_coverage_rows_differ(q1, q2), ==, relu);
    if (!relu) continue;
    const OxCoverageReason *x1 = ox_coverage_find_reason(q1, OX_REASON_SET_TOO_SMALL),
                           *x2 = ox_coverage_find_reason(q2, OX_REASON_SET_TOO_SMALL);
    g_assert_true(ox_coverage_reasons_differ(x1, x2));
    g_assert_false(ox_coverage_reasons_differ(ox_coverage_find_reason(q1, OX_REASON_CHECK_FAILED),
                                              ox_coverage_find_reason(q2, OX_REASON_CHECK_FAILED)));
    g_assert_cmpuint(ox_coverage_detail_count(x2, "set of 2"), ==, ox_coverage_detail_count(x1, "set of 2") + 1);
    g_assert_cmpuint(ox_coverage_detail_count(x2, "set of 3"), ==, ox_coverage_detail_count(x1, "set of 3"));
    g_assert_cmpuint(ox_coverage_detail_count(NULL, "set of 3"), ==, 0);
  }
  ox_coverage_free(c1);
  ox_coverage_free(c2);
  char title[64];
  g_assert_cmpstr(ox_coverage_row_title("pre", "batch_relu", "batch_relu", title, sizeof title), ==, "batch_relu (pre)");
  g_assert_cmpstr(ox_coverage_row_title(NULL, "split_cat_pass", "simplify_split_cat", title, sizeof title), ==,
                  "split_cat_pass (pre) simplify_split_cat");
  g_assert_cmpstr(ox_coverage_row_title("post", "batch_aten_add", NULL, title, sizeof title), ==, "batch_aten_add (post)");
  g_assert_cmpfloat(ox_coverage_pass_seconds(t, "batch_relu", "pre"), ==, -1); /* no per-pass table */
  ox_trace_pass_stat_add(t, "batch_relu", "pre", 0.5, 1, 1, 2, 1);
  g_assert_cmpfloat(ox_coverage_pass_seconds(t, "batch_relu", "pre"), ==, 0.5);
  g_assert_cmpfloat(ox_coverage_pass_seconds(t, "batch_relu", "post"), ==, -1);
  ox_trace_free(t);

  c = ox_coverage_of(NULL);
  g_assert_cmpuint(c->n_rows, ==, 0);
  ox_coverage_free(c);

  /* generated graphs, default pipeline: the rows add up to the trace, each row to the per-pass
   * table, each reason's and value's first record is one of them, and a value's records are
   * those ox_coverage_detail_of names so */
  uint32_t n = gen_graph_count(40), with_details = 0;
  for (uint64_t seed = 1; seed <= n; seed++) {
    bool post;
    OxGraph *g = gen_graph(seed, &post);
    t = ox_trace_new_for(g);
    optimize_default(g, t, false);
    c = ox_coverage_of(t);
    uint32_t kinds[3] = {0, 0, 0};
    for (uint32_t i = 0; i < c->n_rows; i++) {
      r = &c->rows[i];
      g_assert_cmpuint(r->attempts, ==, r->applied + r->rejected + r->check_failed);
      kinds[0] += r->applied;
      kinds[1] += r->rejected;
      kinds[2] += r->check_failed;
      const OxStep *f = &t->steps[r->first];
      g_assert_cmpstr(f->pass, ==, r->pass);
      g_assert_cmpstr(f->rule, ==, r->rule);
      for (uint32_t k = 0; k < r->first; k++) /* nothing of this row before its first record */
        g_assert_false(g_strcmp0(t->steps[k].pass, r->pass) == 0 && g_strcmp0(t->steps[k].rule, r->rule) == 0 &&
                       g_strcmp0(t->steps[k].phase, r->phase) == 0);
      uint32_t refused = 0;
      for (uint32_t j = 0; j < r->n_reasons; j++) {
        x = &r->reasons[j];
        refused += x->count;
        if (j) g_assert_cmpuint(x->count, <=, r->reasons[j - 1].count);
        g_assert_cmpuint(t->steps[x->first].reason.code, ==, x->code);
        uint32_t in_details = x->n_other;
        for (uint32_t k = 0; k < x->n_details; k++) {
          char d[320];
          g_assert_true(ox_coverage_detail_of(&t->steps[x->details[k].first], d, sizeof d));
          g_assert_cmpstr(d, ==, x->details[k].text);
          uint32_t same = 0;
          for (uint32_t q = 0; q < t->n_steps; q++) {
            const OxStep *st = &t->steps[q];
            if (st->kind == OX_STEP_APPLIED || st->reason.code != x->code || g_strcmp0(st->pass, r->pass) ||
                g_strcmp0(st->rule, r->rule) || g_strcmp0(st->phase, r->phase))
              continue;
            if (ox_coverage_detail_of(st, d, sizeof d) && strcmp(d, x->details[k].text) == 0) same++;
          }
          g_assert_cmpuint(same, ==, x->details[k].count);
          in_details += x->details[k].count;
          with_details++;
        }
        g_assert_cmpuint(in_details, <=, x->count);
      }
      g_assert_cmpuint(refused, ==, r->rejected + r->check_failed);
    }
    g_assert_cmpuint(kinds[0], ==, t->n_applied);
    g_assert_cmpuint(kinds[1], ==, t->n_rejected);
    g_assert_cmpuint(kinds[2], ==, t->n_check_failed);
    ox_coverage_free(c);
    ox_trace_free(t);
    ox_graph_free(g);
  }
  g_assert_cmpuint(with_details, >, 0);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/trace/applied-step", test_applied_step);
  g_test_add_func("/engine/trace/json-roundtrip", test_trace_json_roundtrip);
  g_test_add_data_func("/engine/trace/reader-damaged", GINT_TO_POINTER(2), test_trace_reader_damaged);
  g_test_add_data_func("/engine/trace/reader-damaged-v3", GINT_TO_POINTER(3), test_trace_reader_damaged);
  g_test_add_data_func("/engine/trace/reader-damaged-v5", GINT_TO_POINTER(5), test_trace_reader_damaged);
  g_test_add_func("/engine/trace/v3-generated", test_v3_generated);
  g_test_add_func("/engine/trace/no-edits-same-run", test_no_edits_same_run);
  g_test_add_func("/engine/trace/live-writer", test_live_writer);
  g_test_add_func("/engine/trace/recycle-edits", test_recycle_edits);
  g_test_add_func("/engine/trace/v3-errors", test_v3_errors);
  g_test_add_func("/engine/trace/v4-runs", test_v4_runs);
  g_test_add_func("/engine/trace/v5-items", test_v5_items);
  g_test_add_data_func("/engine/trace/v3-file", GINT_TO_POINTER(3), test_v3_file);
  g_test_add_data_func("/engine/trace/v4-file", GINT_TO_POINTER(4), test_v3_file);
  g_test_add_func("/engine/trace/pass-stats", test_pass_stats);
  g_test_add_func("/engine/trace/coverage", test_coverage);
  g_test_add_func("/engine/trace/v2-file", test_v2_file);
  g_test_add_func("/engine/trace/fast-read-equals-json-c", test_fast_read_equals_json_c);
  g_test_add_func("/engine/trace/fast-read-fallback", test_fast_read_fallback);
  g_test_add_func("/engine/trace/gzip", test_gzip);
  g_test_add_func("/engine/trace/integrity", test_trace_integrity);
  g_test_add_func("/engine/trace/numeric-check-rolls-back", test_numeric_check_rolls_back);
  g_test_add_func("/engine/trace/shape-check-rolls-back", test_shape_check_rolls_back);
  g_test_add_func("/engine/trace/structure-check-cycle", test_structure_check_catches_cycle);
  g_test_add_func("/engine/trace/cycle-check-property", test_cycle_check_property);
  g_test_add_func("/engine/trace/long-step-replays", test_long_step_replays);
  g_test_add_func("/engine/trace/mixed-rewires", test_mixed_rewires);
  g_test_add_func("/engine/trace/skipped-is-not-passed", test_skipped_is_not_passed);
  g_test_add_func("/engine/trace/check-config", test_check_config);
  g_test_add_func("/engine/trace/numeric-reduced-size", test_numeric_reduced_size);
  g_test_add_func("/engine/trace/numeric-uniform-shrink", test_numeric_uniform_shrink);
  g_test_add_func("/engine/trace/numeric-shrink-keeps-leading-dim", test_numeric_shrink_keeps_leading_dim);
  g_test_add_func("/engine/trace/numeric-shrink-after-failed-attempt", test_numeric_shrink_after_failed_attempt);
  return g_test_run();
}
