/* test-pattern.c - the pattern language and its matcher (ox_pattern.c) on hand-built graphs:
 * every construct, captures that must agree, users constraints, partial lists, repeated
 * expressions, multi-output patterns, the TorchSplit constraint, failure reasons with their
 * progress, source locations, and the runner (anchor order, mutation barrier, rejections). */
#include <glib.h>
#include <stdarg.h>
#include <string.h>

#include "ops/ox_shape.h"
#include "passes/ox_pass.h"
#include "passes/ox_pattern.h"

static OxGraph *g;
static OxPatPool *P;

static OxNodeId ph(const char *name) {
  OxNodeId id = ox_graph_add_node(g, OX_OP_PLACEHOLDER, name, name, ox_value_none(), ox_value_none());
  OxMeta m = {0};
  m.kind = OX_META_TENSOR;
  m.n = 1;
  m.t = ox_graph_tensor_meta_new(g, OX_DT_F32, 2);
  m.t->shape[0].v = 4;
  m.t->shape[1].v = 8;
  ox_graph_set_meta(g, id, &m);
  return id;
}

static OxValue A(uint32_t n, ...) {
  OxValue items[8];
  va_list ap;
  va_start(ap, n);
  for (uint32_t i = 0; i < n; i++) items[i] = va_arg(ap, OxValue);
  va_end(ap);
  return ox_graph_value_seq(g, OX_V_TUPLE, items, n);
}
static OxValue N(OxNodeId id) { return ox_value_node(id); }
static OxValue Iv(int64_t i) { return ox_value_int(i); }
static OxValue LN(uint32_t n, const OxNodeId *a) {
  OxValue items[16];
  for (uint32_t i = 0; i < n; i++) items[i] = ox_value_node(a[i]);
  return ox_graph_value_seq(g, OX_V_LIST, items, n);
}
static OxValue KW(const char *k, OxValue v) { return ox_graph_value_dict(g, &k, &v, 1); }

static OxNodeId fn(const char *t, OxValue args, OxValue kw) {
  OxNodeId id = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, t, args, kw);
  OxMeta m;
  char err[200];
  if (ox_shape_infer_node(g, id, &m, err, sizeof err) == 0) ox_graph_set_meta(g, id, &m);
  return id;
}
static OxNodeId meth(const char *t, OxValue args) {
  return ox_graph_add_node(g, OX_OP_CALL_METHOD, NULL, t, args, ox_value_none());
}

static void setup(void) {
  g = ox_graph_new();
  P = ox_pat_pool_new();
}
static void teardown(void) {
  ox_graph_free(g);
  ox_pat_pool_free(P);
}

static OxPat *call1(OxOpId op, OxPat *a) {
  OxPat *args[] = {a};
  return ox_pat_call(P, OX_PAT_ANY_CALL, &op, 1, args, 1);
}
static OxPat *call2(OxOpId op, OxPat *a, OxPat *b) {
  OxPat *args[] = {a, b};
  return ox_pat_call(P, OX_PAT_ANY_CALL, &op, 1, args, 2);
}

static bool match(const OxPat *p, OxNodeId at, OxPatMatch *m) { return ox_pat_match(g, p, at, m); }

static void test_spellings(void) {
  setup();
  OxNodeId x = ph("x");
  OxNodeId a = fn("torch.relu", A(1, N(x)), ox_value_none());
  OxNodeId b = meth("relu", A(1, N(x)));
  OxNodeId c = fn("torch.ops.aten.relu.default", A(1, N(x)), ox_value_none());
  OxNodeId t = fn("torch.tanh", A(1, N(x)), ox_value_none());
  OxPat *p = call1(OX_OPID_RELU, ox_pat_arg(P));
  OxPatMatch m;
  OxNodeId ok[] = {a, b, c};
  for (int i = 0; i < 3; i++) {
    g_assert_true(match(p, ok[i], &m));
    g_assert_cmpuint(m.n_caps, ==, 1);
    g_assert_cmpuint(m.caps[0].value->u.node, ==, x);
    ox_pat_match_free(&m);
  }
  g_assert_false(match(p, t, &m));
  g_assert_cmpint(m.fail.code, ==, OX_REASON_TARGET_MISMATCH);
  g_assert_cmpstr(m.fail.what, ==, "function_mismatch");
  g_assert_cmpuint(m.fail.depth, ==, 0);
  g_assert_cmpuint(m.fail.progress, ==, 0);
  g_assert_false(ox_pat_anchor_accepts(g, p, t));
  ox_pat_match_free(&m);
  /* CallMethod only */
  OxOpId r = OX_OPID_RELU;
  OxPat *args[] = {ox_pat_arg(P)};
  OxPat *pm = ox_pat_call(P, OX_PAT_METHOD, &r, 1, args, 1);
  g_assert_true(ox_pat_anchor_accepts(g, pm, b));
  g_assert_false(ox_pat_anchor_accepts(g, pm, a));
  /* an exact target */
  OxPat *pt = ox_pat_call(P, OX_PAT_FUNCTION, NULL, 0, args, 1);
  ox_pat_call_target(P, pt, "torch.tanh");
  g_assert_true(match(pt, t, &m));
  ox_pat_match_free(&m);
  teardown();
}

static void test_arity_and_slots(void) {
  setup();
  OxNodeId x = ph("x"), y = ph("y");
  OxNodeId add = fn("torch.add", A(2, N(x), N(y)), ox_value_none());
  OxNodeId add_alpha = fn("torch.add", A(2, N(x), N(y)), KW("alpha", Iv(2)));
  OxPat *p = call2(OX_OPID_ADD, ox_pat_arg(P), ox_pat_arg(P));
  OxPatMatch m;
  g_assert_true(match(p, add, &m));
  ox_pat_match_free(&m);
  g_assert_false(match(p, add_alpha, &m)); /* alpha=2 is an argument the pattern does not cover */
  g_assert_cmpint(m.fail.code, ==, OX_REASON_ARITY);
  g_assert_cmpstr(m.fail.what, ==, "args_structure");
  ox_pat_match_free(&m);
  /* cat(list, dim=KW(d)) against positional and defaulted spellings */
  OxNodeId xy[] = {x, y};
  OxNodeId c1 = fn("torch.cat", A(2, LN(2, xy), Iv(1)), ox_value_none());
  OxNodeId c0 = fn("torch.cat", A(1, LN(2, xy)), ox_value_none());
  OxPat *cat = call1(OX_OPID_CAT, ox_pat_arg(P));
  ox_pat_call_kw(P, cat, "dim", ox_pat_kwarg(P, "d"));
  g_assert_true(match(cat, c1, &m));
  g_assert_cmpint(ox_pat_match_kw(&m, "d")->u.i, ==, 1);
  ox_pat_match_free(&m);
  g_assert_true(match(cat, c0, &m));
  g_assert_cmpint(ox_pat_match_kw(&m, "d")->u.i, ==, 0);
  ox_pat_match_free(&m);
  /* VarArgs: op only */
  OxOpId a = OX_OPID_ADD;
  OxPat *va = ox_pat_call_varargs(P, OX_PAT_ANY_CALL, &a, 1);
  g_assert_true(match(va, add_alpha, &m));
  ox_pat_match_free(&m);
  teardown();
}

static void test_captures_agree(void) {
  setup();
  OxNodeId x = ph("x"), y = ph("y");
  OxNodeId xx = fn("torch.add", A(2, N(x), N(x)), ox_value_none());
  OxNodeId xy = fn("torch.add", A(2, N(x), N(y)), ox_value_none());
  OxPat *p = call2(OX_OPID_ADD, ox_pat_kwarg(P, "v"), ox_pat_kwarg(P, "v"));
  OxPatMatch m;
  g_assert_true(match(p, xx, &m));
  ox_pat_match_free(&m);
  g_assert_false(match(p, xy, &m));
  g_assert_cmpint(m.fail.code, ==, OX_REASON_CAPTURE_CONFLICT);
  g_assert_cmpstr(m.fail.args[0], ==, "v");
  g_assert_cmpuint(m.fail.progress, ==, 1); /* the first binding matched */
  ox_pat_match_free(&m);
  /* Ignored matches anything, constants must be equal */
  OxNodeId s = fn("torch.split", A(2, N(x), Iv(4)), KW("dim", Iv(1)));
  OxNodeId g1 = fn("operator.getitem", A(2, N(s), Iv(1)), ox_value_none());
  OxPat *gi1 = call2(OX_OPID_GETITEM, ox_pat_ignored(P), ox_pat_const_int(P, 1));
  OxPat *gi0 = call2(OX_OPID_GETITEM, ox_pat_ignored(P), ox_pat_const_int(P, 0));
  g_assert_true(match(gi1, g1, &m));
  ox_pat_match_free(&m);
  g_assert_false(match(gi0, g1, &m));
  g_assert_cmpint(m.fail.code, ==, OX_REASON_CONST_MISMATCH);
  g_assert_cmpstr(m.fail.what, ==, "constant_args");
  ox_pat_match_free(&m);
  teardown();
}

static void test_users_and_order(void) {
  setup();
  OxNodeId x = ph("x");
  OxNodeId t = fn("torch.tanh", A(1, N(x)), ox_value_none());
  OxNodeId s = fn("torch.sigmoid", A(1, N(t)), ox_value_none());
  OxNodeId r = fn("torch.relu", A(1, N(s)), ox_value_none());
  OxPat *inner = call1(OX_OPID_SIGMOID, call1(OX_OPID_TANH, ox_pat_arg(P)));
  OxPat *p = call1(OX_OPID_RELU, inner);
  OxPatMatch m;
  g_assert_true(match(p, r, &m));
  /* post-order, anchor last */
  g_assert_cmpuint(m.n_nodes, ==, 3);
  g_assert_cmpuint(m.nodes[0], ==, t);
  g_assert_cmpuint(m.nodes[1], ==, s);
  g_assert_cmpuint(m.nodes[2], ==, r);
  g_assert_cmpuint(ox_pat_match_node(&m, inner), ==, s);
  ox_pat_match_free(&m);
  /* a second user of the sigmoid breaks users=1; MULTIPLE accepts it; the anchor is never checked */
  fn("torch.neg", A(1, N(s)), ox_value_none());
  fn("torch.neg", A(1, N(r)), ox_value_none());
  fn("torch.neg", A(1, N(r)), ox_value_none());
  g_assert_false(match(p, r, &m));
  g_assert_cmpint(m.fail.code, ==, OX_REASON_MULTIPLE_USERS);
  g_assert_cmpstr(m.fail.what, ==, "multiple_users");
  g_assert_cmpuint(m.fail.node, ==, s);
  g_assert_cmpuint(m.fail.depth, ==, 1);
  char buf[200];
  ox_pat_failure_format(&m.fail, buf, sizeof buf);
  g_assert_nonnull(strstr(buf, "has 2 users, expected 1"));
  ox_pat_match_free(&m);
  ox_pat_call_users(inner, OX_PAT_USERS_ANY);
  g_assert_true(match(p, r, &m));
  ox_pat_match_free(&m);
  teardown();
}

static void test_lists(void) {
  setup();
  OxNodeId a = ph("a"), b = ph("b");
  OxNodeId ra = fn("torch.relu", A(1, N(a)), ox_value_none());
  OxNodeId ins[] = {ra, b};
  OxNodeId c = fn("torch.cat", A(2, LN(2, ins), Iv(0)), ox_value_none());
  OxNodeId only_b[] = {b, b};
  OxNodeId c2 = fn("torch.cat", A(2, LN(2, only_b), Iv(0)), ox_value_none());
  OxPat *partial = call2(OX_OPID_CAT, ox_pat_list(P, call1(OX_OPID_RELU, ox_pat_arg(P)), true), ox_pat_ignored(P));
  OxPat *full = call2(OX_OPID_CAT, ox_pat_list(P, call1(OX_OPID_RELU, ox_pat_arg(P)), false), ox_pat_ignored(P));
  OxPatMatch m;
  g_assert_true(match(partial, c, &m));
  g_assert_cmpuint(m.n_nodes, ==, 2);
  g_assert_cmpuint(m.nodes[0], ==, ra);
  ox_pat_match_free(&m);
  g_assert_false(match(full, c, &m));
  g_assert_cmpstr(m.fail.what, ==, "list[1]: function_mismatch");
  g_assert_cmpuint(m.fail.node, ==, b);
  ox_pat_match_free(&m);
  g_assert_false(match(partial, c2, &m));
  g_assert_cmpint(m.fail.code, ==, OX_REASON_NO_MATCH);
  g_assert_cmpstr(m.fail.what, ==, "list: no_match");
  g_assert_cmpuint(m.fail.depth, >=, 1);
  ox_pat_match_free(&m);
  teardown();
}

static void test_torch_split_constraint(void) {
  for (int variant = 0; variant < 5; variant++) {
    setup();
    OxNodeId x = ph("x");
    int64_t sec[] = {4, 4};
    OxValue l = ox_graph_value_seq(g, OX_V_LIST, (OxValue[]){Iv(sec[0]), Iv(sec[1])}, 2);
    OxNodeId s = variant == 3 ? fn("torch.split", A(3, N(x), Iv(4), Iv(1)), ox_value_none())
                              : fn("torch.split", A(2, N(x), l), KW("dim", Iv(1)));
    OxNodeId g0 = fn("operator.getitem", A(2, N(s), Iv(0)), ox_value_none());
    if (variant == 1) fn("operator.getitem", A(2, N(s), Iv(0)), ox_value_none());
    if (variant == 2) fn("torch.relu", A(1, N(s)), ox_value_none());
    if (variant == 4) fn("operator.getitem", A(2, N(s), Iv(-1)), ox_value_none());
    OxPat *split = ox_pat_torch_split(P, ox_pat_arg(P), ox_pat_kwarg(P, "sections"), NULL);
    OxPat *p = ox_pat_getitem(P, split, ox_pat_ignored(P), 1);
    OxPatMatch m;
    bool ok = match(p, g0, &m);
    const OxReasonCode want[] = {0, OX_REASON_DUP_GETITEM, OX_REASON_USER_NOT_GETITEM, OX_REASON_NOT_NORMALIZED,
                                 OX_REASON_NEG_INDEX};
    g_assert_cmpint(ok, ==, variant == 0);
    if (!ok) g_assert_cmpint(m.fail.code, ==, want[variant]);
    if (variant == 1) g_assert_cmpstr(m.fail.what, ==, "duplicate getitem 0");
    if (variant == 2) g_assert_cmpstr(m.fail.what, ==, "user of split not a getitem");
    if (variant == 3) g_assert_cmpstr(m.fail.what, ==, "split not normalized");
    if (ok) {
      g_assert_cmpuint(ox_pat_match_kw(&m, "sections")->n, ==, 2);
      g_assert_cmpint(ox_pat_match_kw(&m, "dim")->u.i, ==, 1);
    }
    ox_pat_match_free(&m);
    teardown();
  }
}

static void test_repeated(void) {
  for (int variant = 0; variant < 2; variant++) {
    setup();
    OxNodeId x = ph("x");
    OxValue l = ox_graph_value_seq(g, OX_V_LIST, (OxValue[]){Iv(1), Iv(1), Iv(1), Iv(1)}, 4);
    OxNodeId x4 = fn("torch.reshape", A(2, N(x), ox_graph_value_seq(g, OX_V_LIST, (OxValue[]){Iv(8), Iv(4)}, 2)),
                     ox_value_none());
    OxNodeId s = fn("torch.split", A(2, N(x4), l), KW("dim", Iv(1)));
    OxNodeId q[4];
    for (int i = 0; i < 4; i++) {
      OxNodeId p = fn("operator.getitem", A(2, N(s), Iv(i)), ox_value_none());
      q[i] = fn("torch.squeeze", A(2, N(p), Iv(1)), ox_value_none());
      if (variant == 1 && i == 2) fn("torch.relu", A(1, N(p)), ox_value_none());
    }
    OxPat *split = ox_pat_torch_split(P, ox_pat_kwarg(P, "input"), ox_pat_ignored(P), NULL);
    OxPat *sq = call2(OX_OPID_SQUEEZE, ox_pat_getitem(P, split, ox_pat_ignored(P), 1), ox_pat_kwarg(P, "d"));
    ox_pat_call_users(sq, OX_PAT_USERS_ANY);
    OxPat *rep = ox_pat_repeated(P, sq);
    OxPatMatch m;
    bool ok = match(rep, q[3], &m);
    if (variant == 0) {
      g_assert_true(ok);
      /* all four squeezes and their getitems, the split once, the anchor last */
      g_assert_cmpuint(m.n_nodes, ==, 9);
      g_assert_cmpuint(m.nodes[m.n_nodes - 1], ==, q[3]);
      uint32_t squeezes = 0;
      for (uint32_t i = 0; i < m.n_nodes; i++) squeezes += ox_op_of_node(g, &g->nodes[m.nodes[i]], NULL) == OX_OPID_SQUEEZE;
      g_assert_cmpuint(squeezes, ==, 4);
    } else {
      g_assert_false(ok);
      g_assert_cmpstr(m.fail.what, ==, "repeated: multiple_users");
    }
    ox_pat_match_free(&m);
    teardown();
  }
}

static void test_multi_output(void) {
  setup();
  OxNodeId x = ph("x");
  OxNodeId r = fn("torch.relu", A(1, N(x)), ox_value_none());
  OxNodeId s = fn("torch.sigmoid", A(1, N(x)), ox_value_none());
  OxPat *outs[] = {call1(OX_OPID_RELU, ox_pat_kwarg(P, "x")), call1(OX_OPID_SIGMOID, ox_pat_kwarg(P, "x"))};
  OxPat *mo = ox_pat_multi(P, outs, 2);
  OxPatMatch m;
  g_assert_true(match(mo, r, &m));
  g_assert_cmpuint(m.n_nodes, ==, 2);
  g_assert_cmpuint(m.nodes[0], ==, s);
  g_assert_cmpuint(m.nodes[1], ==, r);
  ox_pat_match_free(&m);
  OxPat *outs2[] = {call1(OX_OPID_RELU, ox_pat_kwarg(P, "x")), call1(OX_OPID_TANH, ox_pat_kwarg(P, "x"))};
  g_assert_false(match(ox_pat_multi(P, outs2, 2), r, &m));
  g_assert_cmpstr(m.fail.what, ==, "multi-output: no match");
  ox_pat_match_free(&m);
  teardown();
}

static void test_locations(void) {
  setup();
  ox_pat_pool_loc(P, "rules/my.rules", 42);
  OxPat *p = call1(OX_OPID_RELU, ox_pat_arg(P));
  g_assert_cmpstr(p->file, ==, "rules/my.rules");
  g_assert_cmpuint(p->line, ==, 42);
  OX_PAT_LOC(P);
  OxPat *q = ox_pat_ignored(P);
  g_assert_cmpstr(q->file, ==, __FILE__);
  g_assert_cmpuint(q->line, >, 0);
  g_assert_cmpuint(q->id, >, p->id);
  OxNodeId x = ph("x");
  OxNodeId t = fn("torch.tanh", A(1, N(x)), ox_value_none());
  OxPatMatch m;
  g_assert_false(match(p, t, &m));
  g_assert_true(m.fail.pat == p);
  g_assert_cmpuint(m.fail.pat->line, ==, 42);
  ox_pat_match_free(&m);
  teardown();
}

/* ---------------------------------------------------------------- the runner */

static uint32_t order_seen[16], n_seen;

static int h_fuse_relu(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  order_seen[n_seen++] = m->anchor;
  /* relu(relu(x)) -> relu(x): the outer relu is replaced by the inner one */
  OxNodeId inner = m->nodes[0];
  ox_pat_step_begin(c, e, m);
  ox_graph_replace_all_uses(c->g, m->anchor, inner);
  ox_graph_erase(c->g, m->anchor);
  if (!ox_step_commit(c)) return 0;
  ox_counter_add(c, "fuse_relu", 1);
  return 1;
}

static void test_runner(void) {
  setup();
  OxNodeId x = ph("x"), y = ph("y");
  OxNodeId a1 = fn("torch.relu", A(1, N(x)), ox_value_none());
  OxNodeId a2 = fn("torch.relu", A(1, N(a1)), ox_value_none());
  OxNodeId b1 = fn("torch.relu", A(1, N(y)), ox_value_none());
  meth("copy_", A(2, N(b1), N(x))); /* a mutation between b1 and b2 */
  OxNodeId b2 = fn("torch.relu", A(1, N(b1)), ox_value_none());
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", A(1, A(2, N(a2), N(b2))), ox_value_none());
  OxPat *p = call1(OX_OPID_RELU, call1(OX_OPID_RELU, ox_pat_arg(P)));
  ox_pat_call_users(p->args[0], OX_PAT_USERS_ANY);
  OxPatEntry e = {.name = "fuse_relu", .pattern = p, .handler = h_fuse_relu};
  OxTrace *tr = ox_trace_new();
  OxPassCtx c;
  memset(&c, 0, sizeof c);
  c.g = g;
  c.trace = tr;
  c.record_rejections = true;
  n_seen = 0;
  int n = ox_pat_pass_run(&c, &e, 1);
  g_assert_cmpint(n, ==, 1);
  g_assert_cmpuint(n_seen, ==, 1);
  g_assert_cmpuint(order_seen[0], ==, a2);
  g_assert_true(g->nodes[a2].erased);
  g_assert_false(g->nodes[b2].erased); /* spans the copy_ barrier */
  /* rejections: b2 (barrier), a1, b1 (inner is a placeholder: function_mismatch), in
   * descending order, each once */
  uint32_t barrier = 0, mismatch = 0;
  for (uint32_t i = 0; i < tr->n_steps; i++) {
    const OxStep *s = &tr->steps[i];
    if (s->kind != OX_STEP_REJECTED) continue;
    if (s->reason.code == OX_REASON_MUTATION_BARRIER) {
      barrier++;
      g_assert_cmpstr(s->anchor, ==, g->nodes[b2].name);
      char *why = ox_reason_format(&s->reason);
      g_assert_nonnull(strstr(why, "copy_"));
      free(why);
    }
    if (s->reason.code == OX_REASON_TARGET_MISMATCH) mismatch++;
  }
  g_assert_cmpuint(barrier, ==, 1);
  g_assert_cmpuint(mismatch, ==, 2);
  g_assert_cmpint(tr->n_applied, ==, 1);
  ox_pass_ctx_clear(&c);
  ox_trace_free(tr);
  OxDiagList d;
  ox_diags_init(&d, "t");
  g_assert_cmpint(ox_graph_verify(g, true, &d), ==, 0);
  ox_diags_clear(&d);
  teardown();
}

static void test_is_mutating(void) {
  setup();
  OxNodeId x = ph("x");
  OxNodeId m1 = meth("add_", A(2, N(x), N(x)));
  OxNodeId m2 = meth("__add__", A(2, N(x), N(x)));
  OxNodeId m3 = fn("torch.ops.aten.add_.Tensor", A(2, N(x), N(x)), ox_value_none());
  OxNodeId m4 = fn("operator.iadd", A(2, N(x), N(x)), ox_value_none());
  OxNodeId m5 = fn("torch.add", A(2, N(x), N(x)), KW("out", N(x)));
  OxNodeId m6 = fn("torch._C._nn.linear", A(2, N(x), N(x)), ox_value_none());
  g_assert_true(ox_pat_is_mutating(g, m1));
  g_assert_false(ox_pat_is_mutating(g, m2));
  g_assert_true(ox_pat_is_mutating(g, m3));
  g_assert_true(ox_pat_is_mutating(g, m4));
  g_assert_true(ox_pat_is_mutating(g, m5));
  g_assert_false(ox_pat_is_mutating(g, m6));
  teardown();
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/pattern/spellings", test_spellings);
  g_test_add_func("/engine/pattern/arity-and-slots", test_arity_and_slots);
  g_test_add_func("/engine/pattern/captures-agree", test_captures_agree);
  g_test_add_func("/engine/pattern/users-and-order", test_users_and_order);
  g_test_add_func("/engine/pattern/lists", test_lists);
  g_test_add_func("/engine/pattern/torch-split-constraint", test_torch_split_constraint);
  g_test_add_func("/engine/pattern/repeated", test_repeated);
  g_test_add_func("/engine/pattern/multi-output", test_multi_output);
  g_test_add_func("/engine/pattern/locations", test_locations);
  g_test_add_func("/engine/pattern/runner", test_runner);
  g_test_add_func("/engine/pattern/is-mutating", test_is_mutating);
  return g_test_run();
}
