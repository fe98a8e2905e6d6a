/* Tests for the graph IR core: values, nodes, users, mutation, ordering, verifier,
 * clone, and the small utilities beneath them (arena, names, diags, buffers, dtypes). */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "ir/ox_buf.h"
#include "ir/ox_gzip.h"
#include "ir/ox_graph.h"
#include "ir/ox_mem.h"
#include "load/ox_load.h"

static OxValue tup(OxGraph *g, int n, ...) {
  OxValue items[16];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) items[i] = va_arg(ap, OxValue);
  va_end(ap);
  return ox_graph_value_seq(g, OX_V_TUPLE, items, (uint32_t)n);
}

static OxNodeId ph(OxGraph *g, const char *name) {
  return ox_graph_add_node(g, OX_OP_PLACEHOLDER, name, name, ox_value_none(), ox_value_none());
}

static OxNodeId call(OxGraph *g, const char *name, const char *target, OxValue args) {
  return ox_graph_add_node(g, OX_OP_CALL_FUNCTION, name, target, args, ox_value_none());
}

static int verify_errors(OxGraph *g, bool require_output) {
  OxDiagList d;
  ox_diags_init(&d, "t");
  int e = ox_graph_verify(g, require_output, &d);
  if (e && g_test_verbose()) ox_diags_print(&d, stderr);
  ox_diags_clear(&d);
  return e;
}

/* x -> relu -> add(relu, x) -> output */
static OxGraph *small_graph(OxNodeId *x, OxNodeId *relu, OxNodeId *add, OxNodeId *out) {
  OxGraph *g = ox_graph_new();
  *x = ph(g, "x");
  *relu = call(g, NULL, "torch.relu", tup(g, 1, ox_value_node(*x)));
  *add = call(g, NULL, "operator.add", tup(g, 2, ox_value_node(*relu), ox_value_node(*x)));
  *out = ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, 1, ox_value_node(*add)),
                           ox_value_none());
  return g;
}

static void test_build_and_users(void) {
  OxNodeId x, relu, add, out;
  OxGraph *g = small_graph(&x, &relu, &add, &out);
  g_assert_cmpuint(g->n_live, ==, 4);
  g_assert_cmpstr(g->nodes[relu].name, ==, "relu");
  g_assert_cmpstr(g->nodes[add].name, ==, "add");
  g_assert_cmpuint(g->nodes[x].n_users, ==, 2);
  g_assert_cmpuint(g->nodes[x].users[0], ==, relu);
  g_assert_cmpuint(g->nodes[x].users[1], ==, add);
  g_assert_cmpuint(g->nodes[add].n_users, ==, 1);
  g_assert_cmpuint(ox_graph_output(g), ==, out);
  g_assert_cmpuint(ox_graph_find(g, "relu"), ==, relu);
  g_assert_cmpuint(ox_graph_find(g, "nope"), ==, 0);
  g_assert_cmpint(verify_errors(g, true), ==, 0);
  /* a node using the same input twice is listed once */
  OxNodeId mul = ox_graph_insert_before(g, out, OX_OP_CALL_FUNCTION, NULL, "operator.mul",
                                        tup(g, 2, ox_value_node(x), ox_value_node(x)), ox_value_none());
  g_assert_cmpuint(g->nodes[x].n_users, ==, 3);
  g_assert_cmpint(verify_errors(g, true), ==, 0);
  g_assert_true(ox_graph_erase(g, mul));
  g_assert_cmpuint(g->nodes[x].n_users, ==, 2);
  OxNodeId inputs[4];
  g_assert_cmpuint(ox_graph_inputs(g, add, inputs, 4), ==, 2);
  g_assert_cmpuint(inputs[0], ==, relu);
  g_assert_cmpuint(inputs[1], ==, x);
  ox_graph_free(g);
}

static void test_unique_names(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId a = ph(g, "x");
  OxNodeId ids[5];
  for (int i = 0; i < 5; i++) ids[i] = call(g, NULL, "torch.ops.aten.split_with_sizes.default", tup(g, 1, ox_value_node(a)));
  g_assert_cmpstr(g->nodes[ids[0]].name, ==, "split_with_sizes");
  g_assert_cmpstr(g->nodes[ids[1]].name, ==, "split_with_sizes_1");
  g_assert_cmpstr(g->nodes[ids[4]].name, ==, "split_with_sizes_4");
  OxNodeId gi = call(g, NULL, "operator.getitem", tup(g, 2, ox_value_node(ids[0]), ox_value_int(0)));
  g_assert_cmpstr(g->nodes[gi].name, ==, "getitem");
  /* asking for a taken name that already ends in _N continues the count, not add_1_1 */
  OxNodeId m = ox_graph_add_node(g, OX_OP_CALL_MODULE, NULL, "layer1.0.conv", tup(g, 1, ox_value_node(a)), ox_value_none());
  g_assert_cmpstr(g->nodes[m].name, ==, "layer1_0_conv");
  OxNodeId d1 = call(g, "add_1", "operator.add", tup(g, 1, ox_value_node(a)));
  OxNodeId d2 = call(g, "add_1", "operator.add", tup(g, 1, ox_value_node(a)));
  g_assert_cmpstr(g->nodes[d1].name, ==, "add_1");
  g_assert_cmpstr(g->nodes[d2].name, ==, "add_2");
  g_assert_false(ox_graph_rename(g, d2, "add_1"));
  /* long names survive intact, also when a suffix is needed */
  char longname[1200];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  OxNodeId l1 = ph(g, longname), l2 = ph(g, longname);
  g_assert_cmpstr(g->nodes[l1].name, ==, longname);
  g_assert_cmpuint(strlen(g->nodes[l2].name), ==, strlen(longname) + 2);
  g_assert_cmpuint(ox_graph_find(g, longname), ==, l1);
  g_assert_true(ox_graph_rename(g, d2, "renamed"));
  g_assert_cmpuint(ox_graph_find(g, "renamed"), ==, d2);
  g_assert_cmpuint(ox_graph_find(g, "add_2"), ==, 0);
  /* an erased node's name becomes free again */
  g_assert_true(ox_graph_erase(g, d2));
  g_assert_cmpuint(ox_graph_find(g, "renamed"), ==, 0);
  OxNodeId d3 = call(g, "renamed", "operator.add", tup(g, 1, ox_value_node(a)));
  g_assert_cmpstr(g->nodes[d3].name, ==, "renamed");
  g_assert_cmpint(verify_errors(g, false), ==, 0);
  ox_graph_free(g);
}

static void test_replace_and_erase(void) {
  OxNodeId x, relu, add, out;
  OxGraph *g = small_graph(&x, &relu, &add, &out);
  /* replace relu by sigmoid(x) */
  OxNodeId sig = ox_graph_insert_after(g, relu, OX_OP_CALL_FUNCTION, NULL, "torch.sigmoid",
                                       tup(g, 1, ox_value_node(x)), ox_value_none());
  g_assert_cmpuint(ox_graph_replace_all_uses(g, relu, sig), ==, 1);
  g_assert_cmpuint(g->nodes[relu].n_users, ==, 0);
  g_assert_cmpuint(g->nodes[sig].n_users, ==, 1);
  g_assert_cmpuint(g->nodes[add].args.u.items[0].u.node, ==, sig);
  g_assert_false(ox_graph_erase(g, x)); /* still used */
  g_assert_true(ox_graph_erase(g, relu));
  g_assert_false(ox_graph_erase(g, relu)); /* already a tombstone */
  g_assert_true(g->nodes[relu].erased);
  g_assert_cmpuint(g->n_live, ==, 4);
  g_assert_cmpint(verify_errors(g, true), ==, 0);
  /* the tombstone still knows where to continue */
  g_assert_cmpuint(g->link[relu].next, ==, sig);
  int count = 0;
  OX_GRAPH_FOREACH(g, id) {
    g_assert_false(g->nodes[id].erased);
    count++;
  }
  g_assert_cmpint(count, ==, 4);
  /* replacing x by a node that consumes x leaves that consumer alone */
  OxNodeId neg = ox_graph_insert_after(g, x, OX_OP_CALL_FUNCTION, NULL, "torch.neg",
                                       tup(g, 1, ox_value_node(x)), ox_value_none());
  ox_graph_replace_all_uses(g, x, neg);
  g_assert_cmpuint(g->nodes[x].n_users, ==, 1);
  g_assert_cmpuint(g->nodes[x].users[0], ==, neg);
  g_assert_cmpint(verify_errors(g, true), ==, 0);
  /* replace one input only */
  ox_graph_replace_input(g, add, neg, x);
  g_assert_cmpuint(g->nodes[add].args.u.items[1].u.node, ==, x);
  g_assert_cmpint(verify_errors(g, true), ==, 0);
  ox_graph_free(g);
}

static void test_toposort(void) {
  OxNodeId x, relu, add, out;
  OxGraph *g = small_graph(&x, &relu, &add, &out);
  /* already sorted: unchanged */
  g_assert_true(ox_graph_stable_toposort(g));
  OxNodeId expect[] = {x, relu, add, out};
  int i = 0;
  OX_GRAPH_FOREACH(g, id) g_assert_cmpuint(id, ==, expect[i++]);
  /* a node inserted at the end but used earlier moves up, others stay */
  OxNodeId late = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "torch.tanh", tup(g, 1, ox_value_node(x)),
                                    ox_value_none());
  ox_graph_replace_input(g, relu, x, late);
  g_assert_cmpint(verify_errors(g, true), >, 0); /* used before defined, output not last */
  g_assert_true(ox_graph_stable_toposort(g));
  OxNodeId expect2[] = {x, late, relu, add, out};
  i = 0;
  OX_GRAPH_FOREACH(g, id) g_assert_cmpuint(id, ==, expect2[i++]);
  g_assert_cmpint(verify_errors(g, true), ==, 0);
  /* a cycle is refused and the order is left as it was */
  ox_graph_replace_input(g, late, x, add);
  g_assert_false(ox_graph_stable_toposort(g));
  i = 0;
  OX_GRAPH_FOREACH(g, id) g_assert_cmpuint(id, ==, expect2[i++]);
  g_assert_cmpint(verify_errors(g, true), >, 0);
  ox_graph_free(g);
}

static void test_verifier_catches(void) {
  OxNodeId x, relu, add, out;
  OxGraph *g = small_graph(&x, &relu, &add, &out);
  /* corrupt the users list by hand: the verifier must notice */
  g->nodes[x].n_users = 1;
  g_assert_cmpint(verify_errors(g, true), >, 0);
  g->nodes[x].n_users = 2;
  g_assert_cmpint(verify_errors(g, true), ==, 0);
  /* two outputs */
  OxNodeId out2 = ox_graph_add_node(g, OX_OP_OUTPUT, "output_2", "output", tup(g, 1, ox_value_node(x)),
                                    ox_value_none());
  g_assert_cmpint(verify_errors(g, true), >, 0);
  ox_graph_erase(g, out2);
  /* malformed getitem: index out of range of a tuple-valued producer */
  OxNodeId sp = ox_graph_insert_before(g, out, OX_OP_CALL_FUNCTION, NULL, "torch.split",
                                       tup(g, 2, ox_value_node(x), ox_value_int(2)), ox_value_none());
  OxMeta m = {0};
  m.kind = OX_META_TUPLE;
  m.n = 2;
  OxTensorMeta tm[2] = {{OX_DT_F32, 0, false, NULL, NULL, NULL}, {OX_DT_F32, 0, false, NULL, NULL, NULL}};
  m.t = tm;
  ox_graph_set_meta(g, sp, &m);
  OxNodeId gi = ox_graph_insert_before(g, out, OX_OP_CALL_FUNCTION, NULL, "operator.getitem",
                                       tup(g, 2, ox_value_node(sp), ox_value_int(1)), ox_value_none());
  g_assert_cmpint(verify_errors(g, true), ==, 0);
  g->nodes[gi].args.u.items[1].u.i = 2;
  g_assert_cmpint(verify_errors(g, true), >, 0);
  g->nodes[gi].args.u.items[1].u.i = -2;
  g_assert_cmpint(verify_errors(g, true), ==, 0);
  /* fragments may lack an output */
  OxGraph *f = ox_graph_new();
  ph(f, "a");
  g_assert_cmpint(verify_errors(f, false), ==, 0);
  g_assert_cmpint(verify_errors(f, true), ==, 1);
  ox_graph_free(f);
  ox_graph_free(g);
}

static void test_clone_and_values(void) {
  OxNodeId x, relu, add, out;
  OxGraph *g = small_graph(&x, &relu, &add, &out);
  OxTensorMeta *t = ox_graph_tensor_meta_new(g, OX_DT_BF16, 2);
  t->shape[0].v = 8;
  t->shape[1].sym = ox_graph_intern(g, "s0");
  t->device = ox_graph_intern(g, "cuda:0");
  OxMeta m = {.kind = OX_META_TENSOR, .n = 1, .t = t};
  ox_graph_set_meta(g, x, &m);
  const char *keys[] = {"dim", "dtype"};
  OxValue vals[] = {ox_value_int(-1), ox_value_dtype(OX_DT_F16)};
  ox_graph_set_kwargs(g, relu, ox_graph_value_dict(g, keys, vals, 2));
  ox_graph_add_provenance(g, add, relu);
  ox_graph_erase(g, ox_graph_insert_after(g, x, OX_OP_CALL_FUNCTION, "gone", "torch.neg",
                                          tup(g, 1, ox_value_node(x)), ox_value_none()));
  OxGraph *c = ox_graph_clone(g);
  g_assert_cmpuint(c->n_nodes, ==, g->n_nodes);
  g_assert_cmpuint(c->n_live, ==, g->n_live);
  for (uint32_t i = 1; i < g->n_nodes; i++) {
    g_assert_cmpstr(c->nodes[i].name, ==, g->nodes[i].name);
    g_assert_true(c->nodes[i].name != g->nodes[i].name); /* interned in the clone */
    g_assert_true(ox_value_equal(&c->nodes[i].args, &g->nodes[i].args));
    g_assert_true(ox_value_equal(&c->nodes[i].kwargs, &g->nodes[i].kwargs));
    g_assert_cmpint(c->nodes[i].erased, ==, g->nodes[i].erased);
  }
  char buf[64];
  ox_tensor_meta_format(ox_node_tensor_meta(&c->nodes[x]), true, true, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "bf16[8, s0]cuda:0");
  g_assert_cmpuint(c->nodes[add].n_provenance, ==, 1);
  g_assert_cmpint(verify_errors(c, true), ==, 0);
  /* mutating the clone leaves the original alone */
  ox_graph_replace_input(c, add, x, relu);
  g_assert_cmpuint(g->nodes[add].args.u.items[1].u.node, ==, x);
  g_assert_false(ox_value_equal(&c->nodes[add].args, &g->nodes[add].args));
  ox_graph_free(c);
  /* value equality details */
  OxValue nan1 = ox_value_float(NAN), nan2 = ox_value_float(NAN);
  g_assert_true(ox_value_equal(&nan1, &nan2));
  OxValue z = ox_value_float(0.0), nz = ox_value_float(-0.0), i0 = ox_value_int(0);
  g_assert_false(ox_value_equal(&z, &nz));
  g_assert_false(ox_value_equal(&z, &i0));
  OxValue s1 = ox_graph_value_str(g, OX_V_STR, "sum"), e1 = ox_graph_value_str(g, OX_V_ENUM, "sum");
  g_assert_false(ox_value_equal(&s1, &e1));
  ox_graph_free(g);
}

/* The debugger's working copies: same ids, names, order and live content as ox_graph_clone;
 * metas shared by content; erased ids bare; with a string table of another graph's, the same
 * string pointers (and ox_graph_find_interned finds by pointer). */
static void test_clone_lean(void) {
  OxNodeId x, relu, add, out;
  OxGraph *g = small_graph(&x, &relu, &add, &out);
  OxTensorMeta *t = ox_graph_tensor_meta_new(g, OX_DT_BF16, 2);
  t->shape[0].v = 8;
  t->shape[1].sym = ox_graph_intern(g, "s0");
  OxMeta m = {.kind = OX_META_TENSOR, .n = 1, .t = t};
  ox_graph_set_meta(g, x, &m);
  ox_graph_set_meta(g, relu, &m); /* equal content, two private copies in g */
  ox_graph_add_provenance(g, add, relu);
  OxNodeId gone = ox_graph_insert_after(g, x, OX_OP_CALL_FUNCTION, "gone", "torch.neg", tup(g, 1, ox_value_node(x)),
                                        ox_value_none());
  g_assert_true(ox_graph_erase(g, gone));
  OxGraph *pool = ox_graph_new();
  for (int shared = 0; shared < 2; shared++) {
    OxGraph *c = ox_graph_clone_lean(g, shared ? pool : NULL);
    g_assert_cmpint(ox_graph_shares_strings(c, pool), ==, shared);
    g_assert_cmpuint(c->n_nodes, ==, g->n_nodes);
    g_assert_cmpuint(c->n_live, ==, g->n_live);
    for (uint32_t i = 1; i < g->n_nodes; i++) {
      g_assert_cmpstr(c->nodes[i].name, ==, g->nodes[i].name);
      g_assert_cmpstr(c->nodes[i].target, ==, g->nodes[i].target);
      g_assert_cmpint(c->nodes[i].erased, ==, g->nodes[i].erased);
      if (g->nodes[i].erased) {
        /* a bare tombstone: nothing of the node but its identity */
        g_assert_cmpint(c->nodes[i].args.kind, ==, OX_V_NONE);
        g_assert_cmpuint(c->nodes[i].n_users, ==, 0);
        g_assert_cmpint(c->nodes[i].meta.kind, ==, OX_META_NONE);
        continue;
      }
      g_assert_true(ox_value_equal(&c->nodes[i].args, &g->nodes[i].args));
      g_assert_cmpuint(c->nodes[i].n_users, ==, g->nodes[i].n_users);
      g_assert_cmpuint(ox_graph_find(c, g->nodes[i].name), ==, i);
    }
    g_assert_cmpuint(ox_graph_find(c, "gone"), ==, 0);
    /* equal metas are one shared copy in the clone */
    g_assert_true(c->nodes[x].meta.t == c->nodes[relu].meta.t);
    char buf[64];
    ox_tensor_meta_format(ox_node_tensor_meta(&c->nodes[relu]), true, true, buf, sizeof buf);
    g_assert_cmpstr(buf, ==, "bf16[8, s0]");
    g_assert_cmpuint(c->nodes[add].n_provenance, ==, 1);
    g_assert_cmpint(verify_errors(c, true), ==, 0);
    /* interned lookups: by the table's own pointer only */
    const char *in_pool = ox_graph_intern(pool, "relu");
    g_assert_cmpuint(ox_graph_find_interned(c, in_pool), ==, shared ? relu : 0);
    g_assert_cmpuint(ox_graph_find_interned(c, c->nodes[relu].name), ==, relu);
    /* a clone of a clone in the same table keeps the very strings */
    OxGraph *c2 = ox_graph_clone_lean(c, shared ? pool : NULL);
    g_assert_true((c2->nodes[relu].name == c->nodes[relu].name) == shared);
    g_assert_cmpuint(c2->n_live, ==, c->n_live);
    /* the copy is independent */
    ox_graph_replace_input(c2, add, x, relu);
    g_assert_true(ox_value_equal(&c->nodes[add].args, &g->nodes[add].args));
    ox_graph_free(c2);
    ox_graph_free(c);
  }
  ox_graph_free(pool);
  ox_graph_free(g);
}

static void test_meta_format(void) {
  OxGraph *g = ox_graph_new();
  OxTensorMeta *t = ox_graph_tensor_meta_new(g, OX_DT_F32, 0);
  char buf[64];
  ox_tensor_meta_format(t, true, true, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "f32[]");
  t->has_stride = true;
  t->device = "cpu";
  ox_tensor_meta_format(t, true, true, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "f32[][]cpu");
  OxTensorMeta *u = ox_graph_tensor_meta_new(g, OX_DT_F16, 3);
  u->shape[0].v = 1;
  u->shape[1].sym = "s0";
  u->shape[2].v = 4096;
  u->has_stride = true;
  u->stride = ox_graph_alloc(g, 3 * sizeof(OxDim));
  u->stride[0].sym = "4096*s0";
  u->stride[1].v = 4096;
  u->stride[2].v = 1;
  u->device = "cuda:0";
  ox_tensor_meta_format(u, true, true, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "f16[1, s0, 4096][4096*s0, 4096, 1]cuda:0");
  ox_tensor_meta_format(u, false, false, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "f16[1, s0, 4096]");
  /* truncation is safe and reports the full length */
  int n = ox_tensor_meta_format(u, true, true, buf, 8);
  g_assert_cmpint(n, ==, (int)strlen("f16[1, s0, 4096][4096*s0, 4096, 1]cuda:0"));
  g_assert_cmpuint(strlen(buf), ==, 7);
  OxTensorMeta *unk = ox_graph_tensor_meta_new(g, OX_DT_I64, -1);
  ox_tensor_meta_format(unk, true, true, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "i64");
  ox_graph_free(g);
}

static void test_dtypes(void) {
  for (int i = 1; i < OX_DT_COUNT; i++) {
    const char *a = ox_dtype_abbr((OxDType)i);
    g_assert_cmpint(ox_dtype_from_abbr(a, strlen(a)), ==, i);
    const char *t = ox_dtype_torch_name((OxDType)i);
    g_assert_cmpint(ox_dtype_from_torch_name(t, strlen(t)), ==, i);
  }
  g_assert_cmpint(ox_dtype_from_abbr("b8", 2), ==, OX_DT_BOOL);
  g_assert_cmpint(ox_dtype_from_torch_name("torch.long", 10), ==, OX_DT_I64);
  g_assert_cmpint(ox_dtype_from_torch_name("torch.float", 11), ==, OX_DT_F32);
  g_assert_cmpint(ox_dtype_from_torch_name("float16", 7), ==, OX_DT_F16);
  g_assert_cmpint(ox_dtype_from_abbr("f33", 3), ==, OX_DT_UNKNOWN);
  g_assert_cmpuint(ox_dtype_size(OX_DT_BF16), ==, 2);
  g_assert_true(ox_dtype_is_float(OX_DT_BF16));
  g_assert_false(ox_dtype_is_float(OX_DT_I32));
}

/* The significant digits of a number's text, without sign, point, exponent, leading or
 * trailing zeros ("-0.00120e+05" -> "12"). */
static void significant_digits(const char *s, char out[32]) {
  int n = 0;
  for (; *s && *s != 'e' && *s != 'E'; s++)
    if (*s >= '0' && *s <= '9' && (n || *s != '0') && n < 31) out[n++] = *s;
  while (n > 1 && out[n - 1] == '0') n--;
  out[n] = 0;
}

/* The digits of the first of %.0e, %.1e, ... %.16e that reads back as x. */
static void shortest_digits_by_search(double x, char out[32]) {
  char tmp[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
    if (strtod(tmp, NULL) == x) break;
  }
  significant_digits(tmp, out);
}

static void test_pyfloat(void) {
  struct {
    double v;
    const char *s;
  } cases[] = {
    {1.0, "1.0"},         {0.1, "0.1"},       {1e-05, "1e-05"},   {0.09999999999999998, "0.09999999999999998"},
    {-100.0, "-100.0"},   {1e16, "1e+16"},    {123456789.0, "123456789.0"}, {0.0001, "0.0001"},
    {1.1920928955078125e-07, "1.1920928955078125e-07"}, {-0.5, "-0.5"}, {2.5e-300, "2.5e-300"},
    {INFINITY, "inf"},    {-INFINITY, "-inf"}, {0.0, "0.0"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    OxBuf b;
    ox_buf_init(&b);
    ox_buf_put_pyfloat(&b, cases[i].v);
    g_assert_cmpstr(b.data, ==, cases[i].s);
    ox_buf_free(&b);
  }
  OxBuf b;
  ox_buf_init(&b);
  ox_buf_put_pyfloat(&b, NAN);
  g_assert_cmpstr(b.data, ==, "nan");
  ox_buf_free(&b);
  /* property: every printed double reads back to itself */
  GRand *r = g_rand_new_with_seed(7);
  for (int i = 0; i < 20000; i++) {
    union {
      guint64 u;
      double d;
    } x;
    x.u = ((guint64)g_rand_int(r) << 32) | g_rand_int(r);
    if (!isfinite(x.d)) continue;
    ox_buf_init(&b);
    ox_buf_put_pyfloat(&b, x.d);
    g_assert_cmpfloat(g_ascii_strtod(b.data, NULL), ==, x.d);
    /* and it has the fewest digits that do: those of the first of %.0e, %.1e, ... that reads
     * back (random bits, and values of a few digits such as times and tolerances) */
    char want[32], got[32];
    shortest_digits_by_search(x.d, want);
    significant_digits(b.data, got);
    g_assert_cmpstr(got, ==, want);
    ox_buf_free(&b);
    double few = (double)(g_rand_int_range(r, 1, 100000)) * pow(10, g_rand_int_range(r, -20, 20));
    ox_buf_init(&b);
    ox_buf_put_pyfloat(&b, few);
    shortest_digits_by_search(few, want);
    significant_digits(b.data, got);
    g_assert_cmpstr(got, ==, want);
    ox_buf_free(&b);
  }
  g_rand_free(r);
}

static void test_buf_quoted_and_printf(void) {
  OxBuf b;
  ox_buf_init(&b);
  ox_buf_put_quoted(&b, "a\"b\\c\n\x01");
  g_assert_cmpstr(b.data, ==, "\"a\\\"b\\\\c\\n\\u0001\"");
  ox_buf_free(&b);
  ox_buf_init(&b);
  char big[1000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  ox_buf_printf(&b, "<%s>", big);
  g_assert_cmpuint(b.len, ==, 1001);
  ox_buf_free(&b);
}

static void test_atomic_write(void) {
  g_autofree char *dir = g_dir_make_tmp("oxtest-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "out.txt", NULL);
  char err[256];
  g_assert_true(ox_write_file_atomic(path, "hello", 5, err, sizeof err));
  size_t len;
  char *back = ox_read_file(path, &len, 0, err, sizeof err);
  g_assert_nonnull(back);
  g_assert_cmpuint(len, ==, 5);
  g_assert_cmpstr(back, ==, "hello");
  free(back);
  /* a write into a missing directory fails with a message and creates nothing */
  g_autofree char *bad = g_build_filename(dir, "missing", "x.txt", NULL);
  g_assert_false(ox_write_file_atomic(bad, "x", 1, err, sizeof err));
  g_assert_nonnull(strstr(err, "missing"));
  /* the original file survives a failed write over it (directory made read-only) */
  if (geteuid() != 0) {
    g_chmod(dir, 0500);
    g_assert_false(ox_write_file_atomic(path, "bye", 3, err, sizeof err));
    g_chmod(dir, 0700);
    back = ox_read_file(path, &len, 0, err, sizeof err);
    g_assert_cmpstr(back, ==, "hello");
    free(back);
  }
  /* no temp files left behind */
  GDir *d = g_dir_open(dir, 0, NULL);
  int n = 0;
  while (g_dir_read_name(d)) n++;
  g_dir_close(d);
  g_assert_cmpint(n, ==, 1);
  g_assert_null(ox_read_file(dir, &len, 0, err, sizeof err)); /* a directory */
  g_assert_nonnull(strstr(err, "directory"));
  g_assert_null(ox_read_file(path, &len, 3, err, sizeof err)); /* over the limit */
  g_unlink(path);
  g_rmdir(dir);
}

static void test_diags(void) {
  OxDiagList d;
  ox_diags_init(&d, "dump.txt");
  ox_diag_add(&d, OX_SEV_WARNING, 3, 5, "  %x : bad\x01line\n next", "skipped %s", "line");
  ox_diag_add(&d, OX_SEV_ERROR, 0, 0, NULL, "no graph");
  g_assert_cmpuint(d.n_warnings, ==, 1);
  g_assert_cmpuint(d.n_errors, ==, 1);
  char *s = ox_diag_format(&d, &d.items[0]);
  g_assert_cmpstr(s, ==, "dump.txt:3:5: warning: skipped line");
  free(s);
  g_assert_cmpstr(d.items[0].snippet, ==, "%x : bad\\x01line");
  ox_diag_add(&d, OX_SEV_WARNING, 1, 1, "caf\xc3\xa9 \xff\xfe ok", "utf8");
  g_assert_cmpstr(d.items[d.n - 1].snippet, ==, "caf\xc3\xa9 \\xff\\xfe ok");
  s = ox_diag_format(&d, &d.items[1]);
  g_assert_cmpstr(s, ==, "dump.txt: error: no graph");
  free(s);
  ox_diags_promote_warnings(&d);
  g_assert_cmpuint(d.n_errors, ==, 3);
  g_assert_cmpint(d.items[0].sev, ==, OX_SEV_ERROR);
  d.max_items = 3;
  for (int i = 0; i < 10; i++) ox_diag_add(&d, OX_SEV_WARNING, 1, 1, NULL, "w");
  g_assert_cmpuint(d.n, ==, 3);
  g_assert_cmpuint(d.n_dropped, ==, 10);
  g_assert_cmpuint(d.n_warnings, ==, 10);
  ox_diags_clear(&d);
  g_assert_cmpuint(d.n, ==, 0);
}

/* The graph's dense key slots (ox_graph_keyslot_*): sets cleared in O(1) by a new epoch,
 * contents kept across growth, every slot handed out once, a freed slot reused empty. Checked
 * against a plain boolean array over random operations. */
static void test_keyslots(void) {
  OxGraph *g = ox_graph_new();
  int k = ox_graph_keyslot_acquire(g, 100);
  g_assert_cmpint(k, >=, 0);
  struct OxKeySlot *s = &g->keyslots[k];
  g_assert_cmpuint(s->cap, >=, 100);
  enum { N = 5000 };
  static bool model[N];
  memset(model, 0, sizeof model);
  for (int round = 0; round < 2000; round++) {
    uint32_t key = (uint32_t)g_test_rand_int_range(0, N);
    int what = g_test_rand_int_range(0, 10);
    if (what == 0) { /* clear */
      ox_graph_keyslot_clear(g, k);
      memset(model, 0, sizeof model);
    } else if (what < 6) { /* add, growing the slot when the key is past its capacity */
      if (key >= s->cap) ox_graph_keyslot_grow(g, k, key + 1, round % 2 == 0);
      s->gen[key] = s->epoch;
      model[key] = true;
    }
    for (uint32_t q = 0; q < 8; q++) {
      uint32_t x = (uint32_t)g_test_rand_int_range(0, N);
      bool has = x < s->cap && s->gen[x] == s->epoch;
      g_assert_cmpint(has, ==, model[x]);
    }
  }
  /* every other slot once, then none */
  int taken[OX_GRAPH_KEYSLOTS];
  int n = 0;
  for (int j; (j = ox_graph_keyslot_acquire(g, 10)) >= 0;) {
    g_assert_cmpint(j, !=, k);
    for (int i = 0; i < n; i++) g_assert_cmpint(taken[i], !=, j);
    taken[n++] = j;
  }
  g_assert_cmpint(n, ==, OX_GRAPH_KEYSLOTS - 1);
  /* released, k comes back empty */
  ox_graph_keyslot_release(g, k);
  g_assert_cmpint(ox_graph_keyslot_acquire(g, 10), ==, k);
  for (uint32_t x = 0; x < s->cap; x++) g_assert_cmpuint(s->gen[x], !=, s->epoch);
  /* a wrapped epoch forgets the old marks instead of reviving them */
  s->gen[3] = 1;
  s->epoch = UINT16_MAX;
  ox_graph_keyslot_clear(g, k);
  g_assert_cmpuint(s->epoch, ==, 1);
  g_assert_cmpuint(s->gen[3], ==, 0);
  /* so do many clears in a row: a key added once is not in any later set */
  s->gen[5] = s->epoch;
  for (int i = 0; i < 70000; i++) {
    ox_graph_keyslot_clear(g, k);
    g_assert_cmpuint(s->gen[5], !=, s->epoch);
  }
  ox_graph_free(g);
}

static void test_arena(void) {
  OxArena a = {0};
  void *p = ox_arena_alloc(&a, 10);
  g_assert_cmpuint((uintptr_t)p % 16, ==, 0);
  OxArenaMark m = ox_arena_mark(&a);
  size_t total = a.total;
  for (int i = 0; i < 1000; i++) ox_arena_alloc(&a, 1000);
  g_assert_cmpuint(a.total, >, total);
  ox_arena_release(&a, m);
  g_assert_cmpuint(a.total, ==, total);
  char *s = ox_arena_strndup(&a, "hello world", 5);
  g_assert_cmpstr(s, ==, "hello");
  void *big = ox_arena_alloc(&a, 3u << 20); /* larger than a block */
  memset(big, 1, 3u << 20);
  ox_arena_free(&a);
  g_assert_cmpuint(a.total, ==, 0);
}

/* Property: the name map agrees with a GHashTable model under random set/del. */
static void test_namemap_model(void) {
  OxGraph *g = ox_graph_new();
  OxNameMap *m = ox_namemap_new();
  GHashTable *model = g_hash_table_new(g_direct_hash, g_direct_equal);
  GRand *r = g_rand_new_with_seed(42);
  const char *keys[500];
  for (int i = 0; i < 500; i++) {
    char buf[32];
    snprintf(buf, sizeof buf, "n%d", i);
    keys[i] = ox_graph_intern(g, buf);
  }
  for (int step = 0; step < 100000; step++) {
    const char *k = keys[g_rand_int_range(r, 0, 500)];
    if (g_rand_boolean(r)) {
      guint v = g_rand_int_range(r, 1, 1000000);
      ox_namemap_set(m, k, v);
      g_hash_table_insert(model, (gpointer)k, GUINT_TO_POINTER(v));
    } else {
      ox_namemap_del(m, k);
      g_hash_table_remove(model, k);
    }
    if (step % 1000 == 0) {
      for (int i = 0; i < 500; i++)
        g_assert_cmpuint(ox_namemap_get(m, keys[i]), ==,
                         GPOINTER_TO_UINT(g_hash_table_lookup(model, keys[i])));
    }
  }
  g_rand_free(r);
  g_hash_table_unref(model);
  ox_namemap_free(m);
  ox_graph_free(g);
}

/* Property: random graphs, scrambled by moving nodes, always sort back into an order
 * the verifier accepts, and a sorted graph is left untouched. */
static void test_toposort_property(void) {
  GRand *r = g_rand_new_with_seed(1234);
  for (int trial = 0; trial < 200; trial++) {
    OxGraph *g = ox_graph_new();
    int n = g_rand_int_range(r, 2, 60);
    OxNodeId ids[64];
    ids[0] = ph(g, "x");
    for (int i = 1; i < n; i++) {
      int k = g_rand_int_range(r, 1, 4);
      OxValue items[4];
      for (int j = 0; j < k; j++) items[j] = ox_value_node(ids[g_rand_int_range(r, 0, i)]);
      ids[i] = call(g, NULL, "operator.add", ox_graph_value_seq(g, OX_V_TUPLE, items, (uint32_t)k));
    }
    g_assert_true(ox_graph_stable_toposort(g));
    int i = 0;
    OX_GRAPH_FOREACH(g, id) g_assert_cmpuint(id, ==, ids[i++]);
    for (int s = 0; s < 10; s++) {
      OxNodeId a = ids[g_rand_int_range(r, 0, n)], b = ids[g_rand_int_range(r, 0, n)];
      if (a != b) ox_graph_move_before(g, a, b);
    }
    g_assert_true(ox_graph_stable_toposort(g));
    g_assert_cmpint(verify_errors(g, false), ==, 0);
    ox_graph_free(g);
  }
  g_rand_free(r);
}

/* Exact structural equality of the live state: order, names, targets, args, users order, meta. */
static void assert_same_graph(OxGraph *a, OxGraph *b) {
  g_assert_cmpuint(a->n_live, ==, b->n_live);
  OxNodeId x = a->head, y = b->head;
  while (x || y) {
    g_assert_cmpuint(x, ==, y);
    const OxNode *p = &a->nodes[x], *q = &b->nodes[y];
    g_assert_cmpstr(p->name, ==, q->name);
    g_assert_cmpstr(p->target, ==, q->target);
    g_assert_false(p->erased);
    g_assert_true(ox_value_equal(&p->args, &q->args));
    g_assert_true(ox_value_equal(&p->kwargs, &q->kwargs));
    g_assert_cmpuint(p->n_users, ==, q->n_users);
    for (uint32_t i = 0; i < p->n_users; i++) g_assert_cmpuint(p->users[i], ==, q->users[i]);
    g_assert_cmpint(p->meta.kind, ==, q->meta.kind);
    g_assert_cmpuint(p->n_provenance, ==, q->n_provenance);
    g_assert_cmpuint(ox_graph_find(a, p->name), ==, x);
    x = a->link[x].next;
    y = b->link[y].next;
  }
}

/* Property: any sequence of mutations inside a transaction rolls back to the exact prior state. */
static void test_txn_rollback_property(void) {
  GRand *r = g_rand_new_with_seed(99);
  for (int trial = 0; trial < 300; trial++) {
    OxGraph *g = ox_graph_new();
    int n = g_rand_int_range(r, 3, 30);
    OxNodeId ids[256];
    int n_ids = 0;
    ids[n_ids++] = ph(g, "x");
    for (int i = 1; i < n; i++) {
      OxValue items[3];
      int k = g_rand_int_range(r, 1, 4);
      for (int j = 0; j < k; j++) items[j] = ox_value_node(ids[g_rand_int_range(r, 0, n_ids)]);
      ids[n_ids++] = call(g, NULL, "operator.add", ox_graph_value_seq(g, OX_V_TUPLE, items, (uint32_t)k));
    }
    OxGraph *before = ox_graph_clone(g);
    ox_graph_txn_begin(g);
    int steps = g_rand_int_range(r, 1, 25);
    for (int s = 0; s < steps && n_ids < 250; s++) {
      OxNodeId a = ids[g_rand_int_range(r, 0, n_ids)], b = ids[g_rand_int_range(r, 0, n_ids)];
      if (g->nodes[a].erased || g->nodes[b].erased) continue;
      switch (g_rand_int_range(r, 0, 10)) {
      case 0:
        ids[n_ids++] = ox_graph_insert_before(g, b, OX_OP_CALL_FUNCTION, NULL, "torch.relu",
                                              tup(g, 1, ox_value_node(a)), ox_value_none());
        break;
      case 1: ox_graph_replace_all_uses(g, a, b); break;
      case 2: ox_graph_erase(g, a); break; /* refused when it has users */
      case 3: ox_graph_set_args(g, a, tup(g, 2, ox_value_node(b), ox_value_int(s))); break;
      case 4: ox_graph_move_after(g, a, b); break;
      case 5: ox_graph_rename(g, a, "renamed"); break;
      case 6: {
        OxMeta m = {.kind = OX_META_SYMINT, .sym = "s0"};
        ox_graph_set_meta(g, a, &m);
        ox_graph_add_provenance(g, a, b);
        break;
      }
      case 7: ox_graph_stable_toposort(g); break;
      case 8:
      case 9: {
        /* rewire one input of a, then (often) rewire the same node again: the first rewire
         * copies a's args into the log, later ones log only (a, from, to) */
        OxNodeId in[4];
        uint32_t k = ox_graph_inputs(g, a, in, 4);
        if (!k || k > 4) break;
        ox_graph_replace_input(g, a, in[g_rand_int_range(r, 0, (int32_t)k)], b);
        k = ox_graph_inputs(g, a, in, 4);
        OxNodeId c2 = ids[g_rand_int_range(r, 0, n_ids)];
        if (k && k <= 4 && !g->nodes[c2].erased && g_rand_boolean(r)) ox_graph_replace_input(g, a, in[0], c2);
        break;
      }
      }
    }
    uint32_t n_edits;
    ox_graph_txn_edits(g, &n_edits);
    ox_graph_txn_rollback(g);
    assert_same_graph(g, before);
    g_assert_cmpint(verify_errors(g, false), ==, 0);
    /* a committed transaction keeps its changes and its log */
    ox_graph_txn_begin(g);
    OxNodeId added = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "torch.tanh",
                                       tup(g, 1, ox_value_node(ids[0])), ox_value_none());
    ox_graph_txn_commit(g);
    const OxEdit *e = ox_graph_txn_edits(g, &n_edits);
    g_assert_cmpuint(n_edits, >=, 2); /* users snapshot of x + the add */
    g_assert_cmpint(e[n_edits - 1].kind, ==, OX_EDIT_ADD);
    g_assert_cmpuint(e[n_edits - 1].node, ==, added);
    g_assert_false(g->nodes[added].erased);
    /* trees restored by the rollback above must not live in the log's scratch, which the next
     * transaction reuses: rewire everything in one, roll it back, compare */
    OxGraph *after_commit = ox_graph_clone(g);
    ox_graph_txn_begin(g);
    for (int i = 1; i < n_ids; i++) {
      OxNodeId in[4];
      uint32_t k = g->nodes[ids[i]].erased ? 0 : ox_graph_inputs(g, ids[i], in, 4);
      if (k && k <= 4 && in[0] != ids[0]) ox_graph_replace_input(g, ids[i], in[0], ids[0]);
    }
    ox_graph_txn_rollback(g);
    assert_same_graph(g, after_commit);
    ox_graph_free(after_commit);
    ox_graph_free(before);
    ox_graph_free(g);
  }
  g_rand_free(r);
}


/* ------------------------------------------------------------------ performance structures */

/* The live order's labels strictly increase, whatever mix of insertions (many at one spot, which
 * exhausts midpoints and forces window relabels), moves and erases made it. */
static void assert_labels_increase(OxGraph *g) {
  const uint64_t *lab = ox_graph_order_labels(g);
  uint64_t prev = 0;
  bool first = true;
  OX_GRAPH_FOREACH(g, id) {
    if (!first) g_assert_cmpuint(lab[id], >, prev);
    prev = lab[id];
    first = false;
  }
}

/* True when every edge goes forward in the live order (computed from scratch). */
static bool order_is_topological(OxGraph *g) {
  ox_graph_renumber(g);
  OxNodeId in[64];
  OX_GRAPH_FOREACH(g, id) {
    uint32_t k = ox_graph_inputs(g, id, in, 64);
    for (uint32_t i = 0; i < k && i < 64; i++)
      if (!g->nodes[in[i]].erased && g->nodes[in[i]].pos >= g->nodes[id].pos) return false;
  }
  return true;
}

static void test_order_labels(void) {
  GRand *r = g_rand_new_with_seed(7);
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  ox_graph_order_labels(g); /* labels on from here: maintained by every link */
  OxNodeId ids[4096];
  int n = 0;
  ids[n++] = x;
  /* 3000 insertions right after x: each halves the gap until a window must be relabelled */
  for (int i = 0; i < 3000; i++)
    ids[n++] = ox_graph_insert_after(g, x, OX_OP_CALL_FUNCTION, NULL, "torch.relu", tup(g, 1, ox_value_node(x)),
                                     ox_value_none());
  assert_labels_increase(g);
  for (int step = 0; step < 3000; step++) {
    OxNodeId a = ids[g_rand_int_range(r, 0, n)], b = ids[g_rand_int_range(r, 0, n)];
    if (g->nodes[a].erased || g->nodes[b].erased || a == b) continue;
    switch (g_rand_int_range(r, 0, 4)) {
    case 0:
      if (n < 4096)
        ids[n++] = ox_graph_insert_before(g, b, OX_OP_CALL_FUNCTION, NULL, "torch.tanh", tup(g, 1, ox_value_node(x)),
                                          ox_value_none());
      break;
    case 1: ox_graph_move_after(g, a, b); break;
    case 2: ox_graph_move_before(g, a, b); break;
    case 3:
      if (a != x) ox_graph_erase(g, a);
      break;
    }
    if (step % 100 == 0) assert_labels_increase(g);
  }
  assert_labels_increase(g);
  /* ox_graph_before agrees with positions */
  ox_graph_renumber(g);
  for (int i = 0; i < 200; i++) {
    OxNodeId a = ids[g_rand_int_range(r, 0, n)], b = ids[g_rand_int_range(r, 0, n)];
    if (g->nodes[a].erased || g->nodes[b].erased) continue;
    g_assert_cmpint(ox_graph_before(g, a, b), ==, g->nodes[a].pos < g->nodes[b].pos);
  }
  ox_graph_free(g);
  g_rand_free(r);
}

/* The "order known topological" flag is never true when the order is not topological, across
 * random mutations, transactions and rollbacks; a sort sets it, and a known order sorts for free. */
static void test_topo_flag_property(void) {
  GRand *r = g_rand_new_with_seed(11);
  for (int trial = 0; trial < 200; trial++) {
    OxGraph *g = ox_graph_new();
    OxNodeId ids[128];
    int n = 0;
    ids[n++] = ph(g, "x");
    for (int i = 1; i < 20; i++) {
      OxValue items[2];
      int k = g_rand_int_range(r, 1, 3);
      for (int j = 0; j < k; j++) items[j] = ox_value_node(ids[g_rand_int_range(r, 0, n)]);
      ids[n++] = call(g, NULL, "operator.add", ox_graph_value_seq(g, OX_V_TUPLE, items, (uint32_t)k));
    }
    g_assert_false(ox_graph_order_known_topological(g)); /* built without labels: unknown */
    g_assert_true(ox_graph_stable_toposort(g));
    g_assert_true(ox_graph_order_known_topological(g));
    bool in_txn = false;
    for (int s = 0; s < 60 && n < 120; s++) {
      if (!in_txn && g_rand_int_range(r, 0, 4) == 0) {
        ox_graph_txn_begin(g);
        in_txn = true;
      }
      OxNodeId a = ids[g_rand_int_range(r, 0, n)], b = ids[g_rand_int_range(r, 0, n)];
      if (g->nodes[a].erased || g->nodes[b].erased) continue;
      switch (g_rand_int_range(r, 0, 7)) {
      case 0:
        ids[n++] = ox_graph_insert_before(g, b, OX_OP_CALL_FUNCTION, NULL, "torch.relu", tup(g, 1, ox_value_node(a)),
                                          ox_value_none());
        break;
      case 1: ox_graph_replace_all_uses(g, a, b); break;
      case 2: ox_graph_erase(g, a); break;
      case 3: ox_graph_set_args(g, a, tup(g, 1, ox_value_node(b))); break;
      case 4: ox_graph_move_after(g, a, b); break;
      case 5: ox_graph_stable_toposort(g); break;
      case 6:
        if (in_txn) {
          bool began = ox_graph_txn_began_topological(g);
          ox_graph_txn_rollback(g);
          g_assert_cmpint(ox_graph_order_known_topological(g), ==, began);
          in_txn = false;
        }
        break;
      }
      if (ox_graph_order_known_topological(g)) g_assert_true(order_is_topological(g));
    }
    if (in_txn) ox_graph_txn_commit(g);
    /* a known-topological order is its own stable toposort: nothing moves, nothing logged */
    if (ox_graph_stable_toposort(g)) {
      g_assert_true(order_is_topological(g));
      ox_graph_txn_begin(g);
      g_assert_true(ox_graph_stable_toposort(g));
      uint32_t ne;
      ox_graph_txn_edits(g, &ne);
      g_assert_cmpuint(ne, ==, 0);
      ox_graph_txn_commit(g);
    }
    ox_graph_free(g);
  }
  g_rand_free(r);
}

static void test_reserve(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxNodeId r = call(g, "r", "torch.relu", tup(g, 1, ox_value_node(x)));
  ox_graph_reserve(g, 5000);
  g_assert_cmpuint(g->cap_nodes, >=, 5001);
  OxNode *base = g->nodes;
  /* existing nodes untouched */
  g_assert_cmpstr(g->nodes[r].name, ==, "r");
  g_assert_cmpuint(g->nodes[x].n_users, ==, 1);
  g_assert_cmpuint(ox_graph_find(g, "r"), ==, r);
  for (int i = 2; i < 5000; i++) call(g, NULL, "torch.relu", tup(g, 1, ox_value_node(r)));
  g_assert_true(g->nodes == base); /* no reallocation up to the reserved count */
  g_assert_cmpuint(g->n_live, ==, 5000);
  ox_graph_reserve(g, 10); /* never shrinks */
  g_assert_cmpuint(g->cap_nodes, >=, 5001);
  g_assert_cmpint(verify_errors(g, false), ==, 0);
  ox_graph_free(g);
}

static OxTensorMeta mk_t(OxDim *shape, OxDim *stride, const char *dev) {
  OxTensorMeta t = {.dtype = OX_DT_F32, .rank = 2, .has_stride = stride != NULL, .shape = shape,
                    .stride = stride, .device = dev};
  return t;
}

static void test_meta_sharing(void) {
  OxGraph *g = ox_graph_new();
  OxGraph *other = ox_graph_new();
  OxDim sh[2] = {{64, NULL}, {8, NULL}}, st[2] = {{8, NULL}, {1, NULL}};
  OxTensorMeta a = mk_t(sh, st, "cpu");
  OxTensorMeta *s1 = ox_graph_meta_intern(g, &a, 1);
  /* equal content from elsewhere (strings of another graph, other arrays): the same copy */
  OxDim sh2[2] = {{64, NULL}, {8, NULL}}, st2[2] = {{8, NULL}, {1, NULL}};
  OxTensorMeta b = mk_t(sh2, st2, ox_graph_intern(other, "cpu"));
  g_assert_true(ox_graph_meta_intern(g, &b, 1) == s1);
  g_assert_true(s1->device == ox_graph_intern(g, "cpu"));
  /* any difference gives another copy: device, strides, dtype, a symbol */
  b.device = "cuda:0";
  g_assert_true(ox_graph_meta_intern(g, &b, 1) != s1);
  b.device = "cpu";
  b.stride = NULL;
  b.has_stride = false;
  g_assert_true(ox_graph_meta_intern(g, &b, 1) != s1);
  b = mk_t(sh2, st2, "cpu");
  b.dtype = OX_DT_F16;
  g_assert_true(ox_graph_meta_intern(g, &b, 1) != s1);
  OxDim sym[2] = {{0, "s0"}, {8, NULL}};
  OxTensorMeta c = mk_t(sym, st, "cpu");
  OxTensorMeta *sc = ox_graph_meta_intern(g, &c, 1);
  g_assert_true(sc != s1);
  g_assert_true(sc->shape[0].sym == ox_graph_intern(g, "s0"));
  /* tuple metas are shared as whole arrays */
  OxTensorMeta pair[2] = {a, c};
  OxTensorMeta *sp = ox_graph_meta_intern(g, pair, 2);
  g_assert_true(ox_graph_meta_intern(g, pair, 2) == sp);
  g_assert_true(ox_graph_meta_intern(g, pair, 1) == s1);

  /* set_meta keeps private copies: writing one node's meta in place never changes another's */
  OxNodeId x = ph(g, "x"), y = ph(g, "y"), z = ph(g, "z"), w = ph(g, "w");
  OxMeta m = {.kind = OX_META_TENSOR, .n = 1, .t = &a};
  ox_graph_set_meta(g, x, &m);
  ox_graph_set_meta(g, y, &m);
  g_assert_true(g->nodes[x].meta.t != g->nodes[y].meta.t);
  g->nodes[x].meta.t[0].shape[0].v = 32;
  g_assert_cmpint(g->nodes[y].meta.t[0].shape[0].v, ==, 64);
  /* set_meta_shared shares; changing one of them through set_meta leaves the other alone */
  ox_graph_set_meta_shared(g, z, &m);
  ox_graph_set_meta_shared(g, w, &m);
  g_assert_true(g->nodes[z].meta.t == s1 && g->nodes[w].meta.t == s1);
  ox_graph_txn_begin(g);
  OxDim sh3[2] = {{16, NULL}, {8, NULL}};
  OxTensorMeta d = mk_t(sh3, st, "cpu");
  OxMeta md = {.kind = OX_META_TENSOR, .n = 1, .t = &d};
  ox_graph_set_meta(g, z, &md);
  g_assert_cmpint(g->nodes[z].meta.t[0].shape[0].v, ==, 16);
  g_assert_cmpint(g->nodes[w].meta.t[0].shape[0].v, ==, 64);
  g_assert_cmpint(s1->shape[0].v, ==, 64);
  ox_graph_txn_rollback(g); /* rollback puts the shared pointer back */
  g_assert_true(g->nodes[z].meta.t == s1);
  /* a clone gets its own arrays */
  OxGraph *cl = ox_graph_clone(g);
  g_assert_true(cl->nodes[z].meta.t != s1);
  g_assert_cmpint(cl->nodes[z].meta.t[0].shape[0].v, ==, 64);
  ox_graph_free(cl);
  ox_graph_free(other);
  ox_graph_free(g);

  /* the fx-text loader stores each distinct annotation once */
  const char *fx = "graph():\n"
                   "    %x : Tensor \"f32[4, 8][8, 1]cpu\" = placeholder[target=x]\n"
                   "    %a : Tensor \"f32[4, 8][8, 1]cpu\" = call_function[target=torch.relu](args = (%x,), kwargs = {})\n"
                   "    %b : Tensor \"f32[4, 8][8, 1]cpu\" = call_function[target=torch.tanh](args = (%a,), kwargs = {})\n"
                   "    %c : Tensor \"f16[4, 8][8, 1]cpu\" = call_function[target=torch.tanh](args = (%b,), kwargs = {})\n"
                   "    return c\n";
  OxDoc *doc = NULL;
  OxDiagList dl;
  ox_diags_init(&dl, "t");
  g_assert_cmpint(ox_load_buffer(fx, strlen(fx), OX_FMT_UNKNOWN, NULL, &doc, &dl), ==, 0);
  g_assert_cmpuint(dl.n, ==, 0);
  OxGraph *lg = doc->graphs[0];
  OxNodeId la = ox_graph_find(lg, "a"), lb = ox_graph_find(lg, "b"), lc = ox_graph_find(lg, "c");
  OxNodeId lx = ox_graph_find(lg, "x");
  g_assert_true(lg->nodes[la].meta.t == lg->nodes[lb].meta.t);
  g_assert_true(lg->nodes[la].meta.t == lg->nodes[lx].meta.t);
  g_assert_true(lg->nodes[lc].meta.t != lg->nodes[lb].meta.t);
  g_assert_cmpint(lg->nodes[lc].meta.t[0].dtype, ==, OX_DT_F16);
  /* changing one loaded node's meta (the supported way) leaves the others alone */
  OxDim sh4[2] = {{2, NULL}, {8, NULL}};
  OxTensorMeta e = mk_t(sh4, NULL, NULL);
  OxMeta me = {.kind = OX_META_TENSOR, .n = 1, .t = &e};
  ox_graph_set_meta(lg, la, &me);
  g_assert_cmpint(lg->nodes[la].meta.t[0].shape[0].v, ==, 2);
  g_assert_cmpint(lg->nodes[lb].meta.t[0].shape[0].v, ==, 4);
  g_assert_cmpint(lg->nodes[lx].meta.t[0].shape[0].v, ==, 4);
  ox_diags_clear(&dl);
  ox_doc_free(doc);
}

static void test_provenance_set(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x"), y = ph(g, "y");
  ox_graph_add_provenance(g, y, x);
  OxNodeId ids[300];
  for (uint32_t i = 0; i < 300; i++) ids[i] = i + 1000;
  ox_graph_txn_begin(g);
  ox_graph_set_provenance(g, y, ids, 300);
  g_assert_cmpuint(g->nodes[y].n_provenance, ==, 300);
  g_assert_cmpuint(g->nodes[y].provenance[299], ==, 1299);
  uint32_t ne;
  ox_graph_txn_edits(g, &ne);
  g_assert_cmpuint(ne, ==, 1); /* one logged edit for the whole list */
  ox_graph_txn_rollback(g);
  g_assert_cmpuint(g->nodes[y].n_provenance, ==, 1);
  g_assert_cmpuint(g->nodes[y].provenance[0], ==, x);
  ox_graph_free(g);
}

/* Many strings, reserved and not: lookups find exactly what was interned. */
static void test_strtab_many(void) {
  OxArena arena = {0};
  OxStrTab *t = ox_strtab_new(&arena);
  ox_strtab_reserve(t, 1000);
  const char *p[5000];
  char buf[32];
  for (int i = 0; i < 5000; i++) {
    snprintf(buf, sizeof buf, "name_%d", i);
    p[i] = ox_strtab_intern(t, buf, strlen(buf));
  }
  g_assert_cmpuint(ox_strtab_count(t), ==, 5000);
  for (int i = 0; i < 5000; i++) {
    snprintf(buf, sizeof buf, "name_%d", i);
    g_assert_true(ox_strtab_lookup(t, buf, strlen(buf)) == p[i]);
    g_assert_true(ox_strtab_intern(t, buf, strlen(buf)) == p[i]);
  }
  g_assert_null(ox_strtab_lookup(t, "name_5000", 9));
  g_assert_true(ox_strtab_intern(t, "", 0) == ox_strtab_lookup(t, "", 0));
  ox_strtab_free(t);
  ox_arena_free(&arena);
}

/* Every interned string knows its id in its table (1, 2, ... in intern order) and its table's
 * tag: ids are dense and stable, interning again gives the same string, and a string of one
 * table has no id in another (own and borrowed arenas). */
static void test_strtab_ids(void) {
  OxArena arena = {0};
  OxStrTab *own = ox_strtab_new(NULL), *borrowed = ox_strtab_new(&arena);
  OxStrTab *tabs[2] = {own, borrowed};
  const char *p[2][3000];
  char buf[48];
  for (int k = 0; k < 2; k++) {
    uint32_t tag = ox_strtab_tag(tabs[k]);
    g_assert_cmpuint(tag, !=, 0);
    for (int i = 0; i < 3000; i++) {
      /* lengths 1 to 40: heads of strings of every size land at every alignment */
      int len = snprintf(buf, sizeof buf, "%d_%.*s", i, i % 36, "abcdefghijklmnopqrstuvwxyz0123456789");
      p[k][i] = ox_strtab_intern(tabs[k], buf, (size_t)len);
      g_assert_cmpuint(ox_strtab_id(tag, p[k][i]), ==, (uint32_t)i + 1);
      g_assert_true(ox_strtab_intern(tabs[k], buf, (size_t)len) == p[k][i]);
      g_assert_cmpuint(ox_strtab_id_limit(ox_strtab_count(tabs[k])), ==, (uint32_t)i + 2);
    }
  }
  g_assert_cmpuint(ox_strtab_tag(own), !=, ox_strtab_tag(borrowed));
  for (int i = 0; i < 3000; i++) {
    g_assert_cmpuint(ox_strtab_id(ox_strtab_tag(own), p[0][i]), ==, (uint32_t)i + 1);
    g_assert_cmpuint(ox_strtab_id(ox_strtab_tag(borrowed), p[0][i]), ==, 0);
    g_assert_cmpuint(ox_strtab_id(ox_strtab_tag(own), p[1][i]), ==, 0);
  }
  ox_strtab_free(own);
  ox_strtab_free(borrowed);
  ox_arena_free(&arena);
}

/* The name index of graphs that share a string table: each graph finds its own live nodes by
 * name, a name erased (or rolled back) is found no more, and a name of the other graph is not
 * found in this one. */
static void test_name_index_shared(void) {
  OxGraph *a = ox_graph_new(), *b = ox_graph_new_sharing_strings(a);
  OxNodeId xa = ox_graph_add_node(a, OX_OP_PLACEHOLDER, "x", "x", ox_value_none(), ox_value_none());
  OxNodeId ya = ox_graph_add_node(a, OX_OP_PLACEHOLDER, "y", "y", ox_value_none(), ox_value_none());
  OxNodeId yb = ox_graph_add_node(b, OX_OP_PLACEHOLDER, "y", "y", ox_value_none(), ox_value_none());
  OxNodeId zb = ox_graph_add_node(b, OX_OP_PLACEHOLDER, "z", "z", ox_value_none(), ox_value_none());
  g_assert_cmpuint(ox_graph_find(a, "x"), ==, xa);
  g_assert_cmpuint(ox_graph_find(a, "y"), ==, ya);
  g_assert_cmpuint(ox_graph_find(a, "z"), ==, 0);
  g_assert_cmpuint(ox_graph_find(b, "x"), ==, 0);
  g_assert_cmpuint(ox_graph_find(b, "y"), ==, yb);
  g_assert_cmpuint(ox_graph_find_interned(b, b->nodes[zb].name), ==, zb);
  /* made after b's names: a name with a larger id than a's index holds */
  char many[32];
  OxNodeId last = 0;
  for (int i = 0; i < 500; i++) {
    snprintf(many, sizeof many, "n%d", i);
    ox_graph_intern(b, many);
  }
  last = ox_graph_add_node(a, OX_OP_PLACEHOLDER, "n499", "n499", ox_value_none(), ox_value_none());
  g_assert_cmpuint(ox_graph_find(a, "n499"), ==, last);
  g_assert_cmpuint(ox_graph_find(b, "n499"), ==, 0);
  ox_graph_txn_begin(a);
  g_assert_true(ox_graph_erase(a, last));
  g_assert_cmpuint(ox_graph_find(a, "n499"), ==, 0);
  g_assert_true(ox_graph_rename(a, ya, "y2"));
  g_assert_cmpuint(ox_graph_find(a, "y"), ==, 0);
  g_assert_cmpuint(ox_graph_find(a, "y2"), ==, ya);
  ox_graph_txn_rollback(a);
  g_assert_cmpuint(ox_graph_find(a, "n499"), ==, last);
  g_assert_cmpuint(ox_graph_find(a, "y"), ==, ya);
  g_assert_cmpuint(ox_graph_find(a, "y2"), ==, 0);
  g_assert_cmpuint(ox_graph_find(b, "y"), ==, yb);
  ox_graph_free(b);
  ox_graph_free(a);
}

static void test_detect_format(void) {
  const char *fx = "graph():\n    %x : [num_users=1] = placeholder[target=x]\n    return x\n";
  g_assert_cmpint(ox_detect_format(fx, strlen(fx)), ==, OX_FMT_FX_TEXT);
  const char *py = "class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        return (x,)\n";
  g_assert_cmpint(ox_detect_format(py, strlen(py)), ==, OX_FMT_FX_READABLE);
  const char *js = "  {\"format\": \"optimus-fx\"}";
  g_assert_cmpint(ox_detect_format(js, strlen(js)), ==, OX_FMT_JSON);
  const char *junk = "hello world\n";
  g_assert_cmpint(ox_detect_format(junk, strlen(junk)), ==, OX_FMT_UNKNOWN);
  OxDiagList d;
  ox_diags_init(&d, "j.txt");
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_buffer(junk, strlen(junk), OX_FMT_UNKNOWN, NULL, &doc, &d), ==, -1);
  g_assert_null(doc);
  g_assert_cmpuint(d.n_errors, ==, 1);
  g_assert_nonnull(strstr(d.items[0].msg, "no graph found"));
  ox_diags_clear(&d);
  g_assert_cmpint(ox_load_buffer("", 0, OX_FMT_UNKNOWN, NULL, &doc, &d), ==, -1);
  g_assert_nonnull(strstr(d.items[0].msg, "empty"));
  ox_diags_clear(&d);
  OxLoadOptions opt = {.max_bytes = 4};
  g_assert_cmpint(ox_load_buffer(fx, strlen(fx), OX_FMT_UNKNOWN, &opt, &doc, &d), ==, -1);
  g_assert_nonnull(strstr(d.items[0].msg, "limit"));
  ox_diags_clear(&d);
}

/* A node array past 4 MiB is mapped and grown with mremap (ox_big_realloc): nodes, names and
 * links survive the move from the heap, each doubling, a clone and a reserve. */
static void test_big_node_array(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId prev = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "x", "x", ox_value_none(), ox_value_none());
  const uint32_t n = 60000; /* 60k * 216 B: two doublings above 4 MiB */
  for (uint32_t i = 1; i < n; i++) {
    OxValue a[1] = {ox_value_node(prev)};
    prev = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "torch.relu", ox_graph_value_seq(g, OX_V_TUPLE, a, 1),
                             ox_value_none());
  }
  g_assert_cmpuint(g->n_live, ==, n);
  g_assert_cmpuint((size_t)g->cap_nodes * sizeof(OxNode), >, 8u << 20);
  OxDiagList d;
  ox_diags_init(&d, "big");
  g_assert_cmpint(ox_graph_verify(g, false, &d), ==, 0);
  OxGraph *c = ox_graph_clone(g);
  ox_graph_reserve(c, 3 * n);
  g_assert_cmpint(ox_graph_verify(c, false, &d), ==, 0);
  g_assert_cmpstr(c->nodes[c->tail].name, ==, g->nodes[g->tail].name);
  g_assert_cmpuint(ox_graph_find(c, "relu_59998"), ==, g->tail);
  ox_diags_clear(&d);
  ox_graph_free(c);
  ox_graph_free(g);
}


/* Issue 21: a node with many users. Users are appended without scanning (a repeated input
 * is still listed once), rewiring a user to an input it already has adds nothing, rollback
 * restores the arrays, and the verifier's users checks (missing, duplicate) still fire,
 * also on a hub. 200k users loaded through the FX text loader. */
static void test_hub_users(void) {
  const uint32_t n = 200000;
  GString *t = g_string_new("graph():\n    %x : [num_users=200000] = placeholder[target=x]\n");
  for (uint32_t i = 0; i < n; i++)
    g_string_append_printf(t, "    %%r%u : [num_users=1] = call_function[target=operator.add](args = (%%x, %%x), kwargs = {})\n", i);
  g_string_append_printf(t, "    return r%u\n", n - 1);
  OxDiagList d;
  ox_diags_init(&d, "hub");
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_buffer(t->str, t->len, OX_FMT_FX_TEXT, NULL, &doc, &d), ==, 0);
  g_assert_cmpuint(d.n, ==, 0);
  g_string_free(t, TRUE);
  OxGraph *g = doc->graphs[0];
  OxNodeId x = ox_graph_find(g, "x");
  g_assert_cmpuint(g->nodes[x].n_users, ==, n); /* add(x, x) lists each user once */
  for (uint32_t i = 0; i < n; i += 9973) g_assert_cmpuint(g->nodes[x].users[i], ==, x + 1 + i);
  g_assert_cmpint(ox_graph_verify(g, true, &d), ==, 0);

  /* r1 = add(x, x) -> add(r0, x): r1 joins r0's users once, stays in x's */
  OxNodeId r0 = ox_graph_find(g, "r0"), r1 = ox_graph_find(g, "r1"), r2 = ox_graph_find(g, "r2");
  ox_graph_txn_begin(g);
  OxValue a[2] = {ox_value_node(r0), ox_value_node(x)};
  ox_graph_set_args(g, r1, ox_graph_value_seq(g, OX_V_TUPLE, a, 2));
  g_assert_cmpuint(g->nodes[r0].n_users, ==, 1);
  /* r2 = add(x, x) -> add(x, r0) by rewiring its first x... then the other: r0 once */
  ox_graph_replace_input(g, r2, x, r0);
  g_assert_cmpuint(g->nodes[r0].n_users, ==, 2);
  g_assert_cmpuint(g->nodes[x].n_users, ==, n - 1);
  /* rewiring r1's x to r0, which r1 already uses: no second entry */
  ox_graph_replace_input(g, r1, x, r0);
  g_assert_cmpuint(g->nodes[r0].n_users, ==, 2);
  g_assert_cmpuint(g->nodes[x].n_users, ==, n - 2);
  g_assert_cmpint(ox_graph_verify(g, true, &d), ==, 0);
  ox_graph_txn_rollback(g);
  g_assert_cmpuint(g->nodes[r0].n_users, ==, 0);
  g_assert_cmpuint(g->nodes[x].n_users, ==, n);
  g_assert_cmpuint(g->nodes[x].users[0], ==, r0);
  g_assert_cmpuint(g->nodes[x].users[1], ==, r1);
  g_assert_cmpint(ox_graph_verify(g, true, &d), ==, 0);

  /* the verifier on a hub: a duplicate entry, then a missing one */
  OxNode *hx = &g->nodes[x];
  OxNodeId keep = hx->users[n - 1];
  hx->users[n - 1] = hx->users[7];
  ox_diags_clear(&d);
  g_assert_cmpint(ox_graph_verify(g, true, &d), >, 0);
  bool twice = false, missing = false;
  for (uint32_t i = 0; i < d.n; i++) {
    if (strstr(d.items[i].msg, "list r7 twice")) twice = true;
    if (strstr(d.items[i].msg, "do not list r199999")) missing = true;
  }
  g_assert_true(twice);
  g_assert_true(missing);
  hx->users[n - 1] = keep;
  ox_diags_clear(&d);
  g_assert_cmpint(ox_graph_verify(g, true, &d), ==, 0);
  ox_diags_clear(&d);
  ox_doc_free(doc);
}


static void kill_self(void) { raise(SIGKILL); }

/* names in dir other than `keep` */
static int other_files(const char *dir, const char *keep, char **first) {
  GDir *d = g_dir_open(dir, 0, NULL);
  int n = 0;
  for (const char *e; (e = g_dir_read_name(d));)
    if (strcmp(e, keep) != 0) {
      if (first && !*first) *first = g_strdup(e);
      n++;
    }
  g_dir_close(d);
  return n;
}

/* Writes 4 MiB to path in a child that is killed after writing, before the rename. */
static void write_killed(const char *path, bool no_tmpfile) {
  pid_t pid = fork();
  g_assert_cmpint(pid, >=, 0);
  if (pid == 0) {
    ox_write_file_atomic_no_tmpfile = no_tmpfile;
    ox_write_file_atomic_hook = kill_self;
    size_t n = 4u << 20;
    char *big = malloc(n);
    memset(big, 'x', n);
    ox_write_file_atomic(path, big, n, NULL, 0);
    _exit(0); /* not reached */
  }
  int status = 0;
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  g_assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* Issue 21: a kill in the middle of an atomic write leaves the destination as it was and no
 * 4 MiB OUT.tmp.XXXXXX behind (O_TMPFILE); where the fallback (a named temp file) had to be
 * used, the next write to the same path removes the dead writer's temp file, but never one a
 * live writer holds. */
static void test_atomic_write_kill(void) {
  g_autofree char *dir = g_dir_make_tmp("oxtest-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "out.txt", NULL);
  char err[256];
  g_assert_true(ox_write_file_atomic(path, "old", 3, err, sizeof err));
  write_killed(path, false);
  char *left = NULL;
  g_assert_cmpint(other_files(dir, "out.txt", &left), ==, 0);
  size_t len;
  char *back = ox_read_file(path, &len, 0, err, sizeof err);
  g_assert_cmpstr(back, ==, "old");
  free(back);
  /* the fallback leaves one, as before this issue... */
  write_killed(path, true);
  g_assert_cmpint(other_files(dir, "out.txt", &left), ==, 1);
  g_assert_true(g_str_has_prefix(left, "out.txt.tmp."));
  g_autofree char *stale = g_build_filename(dir, left, NULL);
  g_free(left);
  left = NULL;
  GStatBuf st;
  g_assert_cmpint(g_stat(stale, &st), ==, 0);
  g_assert_cmpint(st.st_size, ==, 4 << 20);
  /* ... a live writer's temp file (locked) of the same pattern, and an unrelated file */
  g_autofree char *live = g_build_filename(dir, "out.txt.tmp.LIVE00", NULL);
  g_autofree char *other = g_build_filename(dir, "out.txt.tmp.keep", NULL);
  g_assert_true(g_file_set_contents(live, "live", -1, NULL));
  g_assert_true(g_file_set_contents(other, "other", -1, NULL));
  int lfd = open(live, O_RDONLY);
  g_assert_cmpint(flock(lfd, LOCK_EX), ==, 0);
  struct utimbuf old = {time(NULL) - 60, time(NULL) - 60};
  g_assert_cmpint(utime(stale, &old), ==, 0);
  g_assert_cmpint(utime(live, &old), ==, 0);
  /* the next write (either way) removes the dead writer's file only */
  for (int k = 0; k < 2; k++) {
    ox_write_file_atomic_no_tmpfile = k == 1;
    g_assert_true(ox_write_file_atomic(path, "new", 3, err, sizeof err));
    g_assert_false(g_file_test(stale, G_FILE_TEST_EXISTS));
    g_assert_true(g_file_test(live, G_FILE_TEST_EXISTS));
    g_assert_true(g_file_test(other, G_FILE_TEST_EXISTS));
    g_assert_cmpint(other_files(dir, "out.txt", NULL), ==, 2);
  }
  ox_write_file_atomic_no_tmpfile = false;
  back = ox_read_file(path, &len, 0, err, sizeof err);
  g_assert_cmpstr(back, ==, "new");
  free(back);
  close(lfd);
  g_unlink(live);
  g_unlink(other);
  g_unlink(path);
  g_rmdir(dir);
}

/* The bytes a streaming buffer (ox_buf_stream_to) hands over while it is written, 10 MB in
 * pieces of every size with drains in between. */
static void stream_pattern(OxBuf *b, GString *want) {
  uint32_t x = 12345;
  while (want->len < (10u << 20)) {
    x = x * 1103515245u + 12345u;
    size_t n = 1 + (x >> 16) % 3000;
    char piece[3000];
    for (size_t i = 0; i < n; i++) piece[i] = (char)('a' + (x + i * 7) % 26);
    ox_buf_append(b, piece, n);
    g_string_append_len(want, piece, (gssize)n);
    ox_buf_drain(b);
  }
}

/* Issue 20: outputs stream to their file while they are made. What arrives is exactly what was
 * appended, in every way the temp file can be made (unnamed and linked, unnamed and copied to a
 * named file where linking is impossible, named from the start); an aborted or failed stream
 * leaves the destination as it was and no temp file. */
/* ox_buf_append_file: ranges of another file spliced in order between appended text, for a
 * streaming buffer (copied by its writer thread, within the kernel where it can), a gzip stream
 * and a plain buffer; the caller's descriptor may be closed before the commit; a range past the
 * source's end fails the commit and leaves the destination as it was. */
static void test_append_file(void) {
  g_autofree char *dir = g_dir_make_tmp("oxtest-XXXXXX", NULL);
  g_autofree char *src = g_build_filename(dir, "src.bin", NULL), *path = g_build_filename(dir, "out.json", NULL);
  char err[256];
  GString *body = g_string_new(NULL);
  for (uint32_t i = 0; body->len < (3u << 20) + 777; i++) g_string_append_printf(body, "%u,", i * 2654435761u);
  g_assert_true(g_file_set_contents(src, body->str, (gssize)body->len, NULL));
  for (int sink = 0; sink < 3; sink++) { /* streaming, gzip streaming, a plain buffer */
    int fd = open(src, O_RDONLY);
    g_assert_cmpint(fd, >=, 0);
    OxBuf b;
    ox_buf_init(&b);
    if (sink == 0) g_assert_true(ox_buf_stream_to(&b, path, err, sizeof err));
    if (sink == 1) g_assert_true(ox_buf_stream_to_gzip(&b, path, 1, err, sizeof err));
    GString *want = g_string_new(NULL);
    ox_buf_puts(&b, "head[");
    g_string_append(want, "head[");
    g_assert_true(ox_buf_append_file(&b, fd, 0, body->len)); /* all of it */
    g_string_append_len(want, body->str, (gssize)body->len);
    ox_buf_puts(&b, "][");
    g_string_append(want, "][");
    g_assert_true(ox_buf_append_file(&b, fd, 5, 1000)); /* a piece from the middle */
    g_string_append_len(want, body->str + 5, 1000);
    g_assert_true(ox_buf_append_file(&b, fd, 7, 0));   /* nothing */
    close(fd); /* the writer has its own descriptor */
    ox_buf_puts(&b, "]tail");
    g_string_append(want, "]tail");
    size_t len = 0;
    char *back = NULL;
    if (sink < 2) {
      g_assert_true(ox_buf_stream_commit(&b, err, sizeof err));
      char *file = ox_read_file(path, &len, 0, err, sizeof err);
      g_assert_nonnull(file);
      back = sink == 1 ? ox_gzip_decompress(file, len, 0, &len, err, sizeof err) : file;
      if (back != file) free(file);
    } else {
      back = g_memdup2(b.data, b.len + 1);
      len = b.len;
    }
    g_assert_nonnull(back);
    g_assert_cmpuint(len, ==, want->len);
    g_assert_true(memcmp(back, want->str, len) == 0);
    if (sink == 2) g_free(back);
    else free(back);
    g_string_free(want, TRUE);
    ox_buf_free(&b);
  }
  /* past the end: the writer's copy comes up short, the commit fails, the old file stays */
  g_assert_true(ox_write_file_atomic(path, "old", 3, err, sizeof err));
  int fd = open(src, O_RDONLY);
  OxBuf b;
  ox_buf_init(&b);
  g_assert_true(ox_buf_stream_to(&b, path, err, sizeof err));
  g_assert_true(ox_buf_append_file(&b, fd, body->len - 10, 100));
  close(fd);
  g_assert_false(ox_buf_stream_commit(&b, err, sizeof err));
  g_assert_nonnull(strstr(err, "out.json"));
  ox_buf_free(&b);
  gchar *old = NULL;
  g_assert_true(g_file_get_contents(path, &old, NULL, NULL));
  g_assert_cmpstr(old, ==, "old");
  g_free(old);
  /* not streaming: the same range fails at once */
  fd = open(src, O_RDONLY);
  ox_buf_init(&b);
  g_assert_false(ox_buf_append_file(&b, fd, body->len - 10, 100));
  close(fd);
  ox_buf_free(&b);
  g_unlink(src);
  g_unlink(path);
  g_rmdir(dir);
  g_string_free(body, TRUE);
}

static void test_atomic_stream(void) {
  g_autofree char *dir = g_dir_make_tmp("oxtest-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "out.json", NULL);
  char err[256];
  for (int mode = 0; mode < 3; mode++) {
    ox_write_file_atomic_no_link = mode == 1;
    ox_write_file_atomic_no_tmpfile = mode == 2;
    OxBuf b;
    ox_buf_init(&b);
    g_assert_true(ox_buf_stream_to(&b, path, err, sizeof err));
    GString *want = g_string_new(NULL);
    stream_pattern(&b, want);
    g_assert_cmpuint(b.drained, >, 8u << 20); /* most of it left before the commit */
    g_assert_cmpuint(b.len, <, 2u << 20);
    g_assert_true(ox_buf_stream_commit(&b, err, sizeof err));
    g_assert_cmpuint(b.drained, ==, want->len);
    ox_buf_free(&b);
    size_t len;
    char *back = ox_read_file(path, &len, 0, err, sizeof err);
    g_assert_nonnull(back);
    g_assert_cmpuint(len, ==, want->len);
    g_assert_true(memcmp(back, want->str, len) == 0);
    free(back);
    g_string_free(want, TRUE);
    g_assert_cmpint(other_files(dir, "out.json", NULL), ==, 0);
    GStatBuf st;
    g_assert_cmpint(g_stat(path, &st), ==, 0);
    mode_t um = umask(0);
    umask(um);
    g_assert_cmpint(st.st_mode & 0777, ==, 0666 & ~um);
  }
  ox_write_file_atomic_no_link = false;
  ox_write_file_atomic_no_tmpfile = false;
  /* a gzip stream: compressed on the writer thread, byte for byte what ox_gzip_compress makes
   * of the whole text, and that decompresses to it */
  {
    OxBuf b;
    ox_buf_init(&b);
    g_assert_true(ox_buf_stream_to_gzip(&b, path, 1, err, sizeof err));
    GString *want = g_string_new(NULL);
    stream_pattern(&b, want);
    g_assert_true(ox_buf_stream_commit(&b, err, sizeof err));
    ox_buf_free(&b);
    size_t len, n;
    char *back = ox_read_file(path, &len, 0, err, sizeof err);
    g_assert_true(ox_gzip_is(back, len));
    OxBuf z;
    ox_buf_init(&z);
    g_assert_true(ox_gzip_compress(want->str, want->len, 1, &z, err, sizeof err));
    g_assert_cmpuint(z.len, ==, len);
    g_assert_true(memcmp(z.data, back, len) == 0);
    char *text = ox_gzip_decompress(back, len, 0, &n, err, sizeof err);
    g_assert_cmpuint(n, ==, want->len);
    g_assert_true(memcmp(text, want->str, n) == 0);
    free(text);
    free(back);
    ox_buf_free(&z);
    g_string_free(want, TRUE);
    g_assert_cmpint(other_files(dir, "out.json", NULL), ==, 0);
  }
  g_assert_true(ox_write_file_atomic(path, "old", 3, err, sizeof err));
  /* dropped after 10 MB (a writer that failed half-way): the destination is untouched */
  for (int mode = 0; mode < 2; mode++) {
    ox_write_file_atomic_no_tmpfile = mode == 1;
    OxBuf b;
    ox_buf_init(&b);
    g_assert_true(ox_buf_stream_to(&b, path, err, sizeof err));
    GString *want = g_string_new(NULL);
    stream_pattern(&b, want);
    g_string_free(want, TRUE);
    ox_buf_free(&b); /* aborts */
    g_assert_null(b.sink);
    size_t len;
    char *back = ox_read_file(path, &len, 0, err, sizeof err);
    g_assert_cmpstr(back, ==, "old");
    free(back);
    g_assert_cmpint(other_files(dir, "out.json", NULL), ==, 0);
  }
  ox_write_file_atomic_no_tmpfile = false;
  /* a destination that cannot be written fails when the stream opens, naming it */
  g_autofree char *bad = g_build_filename(dir, "missing", "x.json", NULL);
  OxBuf b;
  ox_buf_init(&b);
  g_assert_false(ox_buf_stream_to(&b, bad, err, sizeof err));
  g_assert_nonnull(strstr(err, "missing"));
  g_assert_false(ox_buf_stream_commit(&b, err, sizeof err)); /* not streaming: refused, no crash */
  ox_buf_free(&b);
  /* the file system refuses the bytes half-way (here: a file size limit of 1 MiB in a child):
   * the commit fails with the reason, the destination is as it was, no temp file is left */
  pid_t pid = fork();
  g_assert_cmpint(pid, >=, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {1 << 20, 1 << 20};
    setrlimit(RLIMIT_FSIZE, &rl);
    OxBuf c;
    ox_buf_init(&c);
    if (!ox_buf_stream_to(&c, path, err, sizeof err)) _exit(2);
    GString *want = g_string_new(NULL);
    stream_pattern(&c, want);
    bool ok = ox_buf_stream_commit(&c, err, sizeof err);
    _exit(ok ? 3 : strstr(err, "too large") && strstr(err, "out.json") ? 0 : 4);
  }
  int status = 0;
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
  size_t len;
  char *back = ox_read_file(path, &len, 0, err, sizeof err);
  g_assert_cmpstr(back, ==, "old");
  free(back);
  g_assert_cmpint(other_files(dir, "out.json", NULL), ==, 0);
  g_unlink(path);
  g_rmdir(dir);
}


/* Issue 21: reads are refused at the cap while reading, holding at most cap + 1 bytes: an
 * endless device, a pipe, a regular file (before reading). */
static void test_read_cap(void) {
  char err[256];
  size_t len;
  g_assert_null(ox_read_file("/dev/zero", &len, 1u << 20, err, sizeof err));
  g_assert_nonnull(strstr(err, "/dev/zero: input larger than 1048576 bytes, refused"));
  int p[2];
  g_assert_cmpint(pipe(p), ==, 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    char block[4096];
    memset(block, 'a', sizeof block);
    for (int i = 0; i < 1024; i++) /* 4 MiB, or until the reader gives up */
      if (write(p[1], block, sizeof block) < 0) _exit(0);
    _exit(0);
  }
  close(p[1]);
  g_assert_null(ox_read_stream(p[0], "a pipe", &len, 100000, err, sizeof err));
  g_assert_nonnull(strstr(err, "a pipe: input larger than 100000 bytes, refused"));
  close(p[0]);
  waitpid(pid, NULL, 0);
  g_autofree char *dir = g_dir_make_tmp("oxtest-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "f.txt", NULL);
  g_assert_true(g_file_set_contents(path, "0123456789", 10, NULL));
  g_assert_null(ox_read_file(path, &len, 9, err, sizeof err));
  char *all = ox_read_file(path, &len, 10, err, sizeof err); /* exactly the cap is fine */
  g_assert_cmpuint(len, ==, 10);
  free(all);
  g_unlink(path);
  g_rmdir(dir);
}

/* Big inputs are mapped, not copied (ox_map_file): the same bytes and the terminating NUL as a
 * read, released by ox_text_free; a size of whole pages, a small file and a refused size take
 * the read path; nothing is mapped unless ox_map_inputs is set. A truncation after mapping is
 * shown to raise SIGBUS in a child (the CLI's handler turns it into a message: /cli/sigbus). */
/* Huge pages: OPTIMUS_HUGE_PAGES=1 / =0 decide; otherwise the probe's cost of a fresh 4 KiB page
 * against OX_MEM_HUGE_FAULT_NS (the two hosts of docs/benchmarks.md: ~2 us a page, where small
 * pages win, and ~9-10 us, where huge ones do). The probe itself measures something plausible,
 * and a process's decision is one of the two whatever it is. */
static void test_huge_decide(void) {
  g_assert_true(ox_mem_huge_decide("1", 0));
  g_assert_true(ox_mem_huge_decide("1", 1e3));
  g_assert_false(ox_mem_huge_decide("0", 1e6));
  g_assert_false(ox_mem_huge_decide(NULL, 2000));   /* the 2026-12-06 host */
  g_assert_true(ox_mem_huge_decide(NULL, 9500));    /* the 2026-12-07 host */
  g_assert_false(ox_mem_huge_decide(NULL, 500));    /* bare metal */
  g_assert_false(ox_mem_huge_decide(NULL, -1));     /* not measured: as before, off */
  g_assert_true(ox_mem_huge_decide("yes", 9500));   /* anything but 0 or 1 is the probe's call */
  g_assert_false(ox_mem_huge_decide("10", 2000));
  double ns = ox_mem_fault_ns();
  g_assert_cmpfloat(ns, >, 0);
  g_assert_cmpfloat(ns, <, 1e7); /* 16 pages in under 160 ms */
  bool w = ox_mem_huge_pages();
  g_assert_true(w == ox_mem_huge_pages()); /* decided once */
  g_test_message("fresh 4 KiB page: %.0f ns; huge pages %s", ns, w ? "on" : "off");
}

static void on_test_sigbus(int sig) {
  (void)sig;
  _exit(42);
}

static void test_map_file(void) {
  char err[256];
  size_t len = 0;
  long page = sysconf(_SC_PAGESIZE);
  g_autofree char *dir = g_dir_make_tmp("oxtest-XXXXXX", NULL);
  g_autofree char *big = g_build_filename(dir, "big.json", NULL);
  g_autofree char *even = g_build_filename(dir, "even.json", NULL);
  g_autofree char *small = g_build_filename(dir, "small.json", NULL);
  size_t n = ((size_t)16 << 20) + 123;
  char *data = g_malloc(n);
  for (size_t i = 0; i < n; i++) data[i] = (char)('a' + i % 26);
  g_assert_true(g_file_set_contents(big, data, (gssize)n, NULL));
  g_assert_true(g_file_set_contents(even, data, (gssize)((size_t)16 << 20), NULL));
  g_assert_true(g_file_set_contents(small, data, 1000, NULL));
  bool was = ox_map_inputs;
  ox_map_inputs = false;
  char *t = ox_map_file(big, &len, 0, err, sizeof err);
  g_assert_nonnull(t);
  g_assert_false(ox_text_is_mapped(t)); /* off: read */
  g_assert_cmpuint(len, ==, n);
  ox_text_free(t);
  ox_map_inputs = true;
  t = ox_map_file(big, &len, 0, err, sizeof err);
  g_assert_nonnull(t);
  g_assert_true(ox_text_is_mapped(t));
  g_assert_cmpuint(len, ==, n);
  g_assert_true(memcmp(t, data, n) == 0);
  g_assert_cmpint(t[n], ==, 0);
  char names[512];
  ox_mapped_describe(names, sizeof names);
  g_assert_cmpstr(names, ==, big);
  FILE *grow = fopen(big, "ab"); /* appended to while mapped: the text still ends at len */
  g_assert_nonnull(grow);
  g_assert_cmpint(fputs("xyz and more", grow), >=, 0);
  fclose(grow);
  g_assert_cmpint(t[n], ==, 0);
  t[0] = 'Z'; /* copy-on-write: the file keeps its byte */
  ox_text_free(t);
  g_assert_true(ox_text_is_mapped(t) == false);
  gchar *back = NULL;
  gsize blen = 0;
  g_assert_true(g_file_get_contents(big, &back, &blen, NULL));
  g_assert_cmpint(back[0], ==, 'a');
  g_free(back);
  ox_mapped_describe(names, sizeof names);
  g_assert_cmpstr(names, ==, "");
  if (page > 0 && ((size_t)16 << 20) % (size_t)page == 0) { /* whole pages: no room for the NUL */
    t = ox_map_file(even, &len, 0, err, sizeof err);
    g_assert_nonnull(t);
    g_assert_false(ox_text_is_mapped(t));
    g_assert_cmpuint(len, ==, (size_t)16 << 20);
    g_assert_cmpint(t[len], ==, 0);
    ox_text_free(t);
  }
  if (page > 64) { /* 10 bytes short of whole pages: too little room after the NUL, read */
    size_t tight = ((size_t)16 << 20) - 10;
    g_assert_true(g_file_set_contents(even, data, (gssize)tight, NULL));
    t = ox_map_file(even, &len, 0, err, sizeof err);
    g_assert_nonnull(t);
    g_assert_false(ox_text_is_mapped(t));
    g_assert_cmpuint(len, ==, tight);
    g_assert_cmpint(t[len], ==, 0);
    ox_text_free(t);
    size_t roomy = ((size_t)16 << 20) - 64; /* exactly 64: mapped */
    g_assert_true(g_file_set_contents(even, data, (gssize)roomy, NULL));
    t = ox_map_file(even, &len, 0, err, sizeof err);
    g_assert_true(t && ox_text_is_mapped(t) && len == roomy && t[len] == 0);
    ox_text_free(t);
  }
  t = ox_map_file(small, &len, 0, err, sizeof err);
  g_assert_nonnull(t);
  g_assert_false(ox_text_is_mapped(t));
  g_assert_cmpuint(len, ==, 1000);
  ox_text_free(t);
  g_assert_null(ox_map_file(big, &len, (size_t)16 << 20, err, sizeof err)); /* over the cap: refused */
  g_assert_nonnull(strstr(err, "input larger than"));
  g_assert_null(ox_map_file(dir, &len, 0, err, sizeof err));
  g_assert_null(ox_map_file("/nonexistent/x.json", &len, 0, err, sizeof err));
  g_assert_nonnull(strstr(err, "cannot open /nonexistent/x.json"));
  /* another program truncating the file while it is mapped: the lost pages raise SIGBUS */
  pid_t pid = fork();
  if (pid == 0) {
    struct sigaction sa; /* its own handler: under ASan the default action is ASan's report */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_test_sigbus;
    sigaction(SIGBUS, &sa, NULL);
    char *m = ox_map_file(big, &len, 0, err, sizeof err);
    if (!m || !ox_text_is_mapped(m) || truncate(big, 0) != 0) _exit(3);
    volatile char c = m[n - 1];
    (void)c;
    _exit(4);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 42);
  ox_map_inputs = was;
  g_free(data);
  g_unlink(big);
  g_unlink(even);
  g_unlink(small);
  g_rmdir(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/graph/build-users", test_build_and_users);
  g_test_add_func("/engine/graph/big-node-array", test_big_node_array);
  g_test_add_func("/engine/graph/hub-users", test_hub_users);
  g_test_add_func("/engine/graph/unique-names", test_unique_names);
  g_test_add_func("/engine/graph/replace-erase", test_replace_and_erase);
  g_test_add_func("/engine/graph/toposort", test_toposort);
  g_test_add_func("/engine/graph/toposort-property", test_toposort_property);
  g_test_add_func("/engine/graph/verifier", test_verifier_catches);
  g_test_add_func("/engine/graph/txn-rollback-property", test_txn_rollback_property);
  g_test_add_func("/engine/graph/clone-values", test_clone_and_values);
  g_test_add_func("/engine/graph/clone-lean", test_clone_lean);
  g_test_add_func("/engine/graph/meta-format", test_meta_format);
  g_test_add_func("/engine/graph/order-labels", test_order_labels);
  g_test_add_func("/engine/graph/topo-flag-property", test_topo_flag_property);
  g_test_add_func("/engine/graph/reserve", test_reserve);
  g_test_add_func("/engine/graph/meta-sharing", test_meta_sharing);
  g_test_add_func("/engine/graph/provenance-set", test_provenance_set);
  g_test_add_func("/engine/util/strtab-many", test_strtab_many);
  g_test_add_func("/engine/util/strtab-ids", test_strtab_ids);
  g_test_add_func("/engine/graph/name-index-shared", test_name_index_shared);
  g_test_add_func("/engine/util/dtypes", test_dtypes);
  g_test_add_func("/engine/util/pyfloat", test_pyfloat);
  g_test_add_func("/engine/util/buf", test_buf_quoted_and_printf);
  g_test_add_func("/engine/util/atomic-write", test_atomic_write);
  g_test_add_func("/engine/util/atomic-write-kill", test_atomic_write_kill);
  g_test_add_func("/engine/util/atomic-stream", test_atomic_stream);
  g_test_add_func("/engine/util/append-file", test_append_file);
  g_test_add_func("/engine/util/read-cap", test_read_cap);
  g_test_add_func("/engine/util/map-file", test_map_file);
  g_test_add_func("/engine/util/huge-decide", test_huge_decide);
  g_test_add_func("/engine/util/diags", test_diags);
  g_test_add_func("/engine/util/arena", test_arena);
  g_test_add_func("/engine/graph/keyslots", test_keyslots);
  g_test_add_func("/engine/util/namemap-model", test_namemap_model);
  g_test_add_func("/engine/load/detect", test_detect_format);
  return g_test_run();
}
