/* Tests for the DOT writer (/engine/dot/...), the in-process Graphviz renderer
 * (/engine/render/...) and the optimus CLI (/cli/...), which is run as a child process
 * (path in OPTIMUS_CLI) on small inputs written to a temporary directory and on the real
 * corpus when it is present. */
#include <errno.h>
#include <glib.h>
#include <math.h>
#include <glib/gstdio.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "ir/ox_buf.h"
#include "ir/ox_graph.h"
#include "load/ox_load.h"
#include "run/ox_cost.h"
#include "write/ox_write.h"
#include "test-common.h"

/* ------------------------------------------------------------------ graph helpers */

static OxValue tup(OxGraph *g, int n, ...) {
  OxValue items[16];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) items[i] = va_arg(ap, OxValue);
  va_end(ap);
  return ox_graph_value_seq(g, OX_V_TUPLE, items, (uint32_t)n);
}

static OxNodeId call(OxGraph *g, const char *name, const char *target, OxValue args) {
  return ox_graph_add_node(g, OX_OP_CALL_FUNCTION, name, target, args, ox_value_none());
}

static void set_tensor(OxGraph *g, OxNodeId id, OxDType dt, int rank, const int64_t *dims) {
  OxMeta m = {0};
  m.kind = OX_META_TENSOR;
  m.n = 1;
  m.t = ox_graph_tensor_meta_new(g, dt, rank);
  for (int i = 0; i < rank; i++) m.t->shape[i].v = dims[i];
  ox_graph_set_meta(g, id, &m);
}

typedef struct Ids {
  OxNodeId x, w, mm, relu, split, gi0, gi1, view, sum, cat, out;
} Ids;

/* x, w -> mm -> relu -> split -> getitem 0/1 -> view -> sum ; cat([gi1, gi1]) ; output */
static OxGraph *sample_graph(Ids *ids) {
  OxGraph *g = ox_graph_new();
  g->name = ox_graph_intern(g, "graph");
  ids->x = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "x", "x", ox_value_none(), ox_value_none());
  set_tensor(g, ids->x, OX_DT_F32, 2, (const int64_t[]){8, 16});
  ids->w = ox_graph_add_node(g, OX_OP_GET_ATTR, "w", "layer.weight", ox_value_none(), ox_value_none());
  set_tensor(g, ids->w, OX_DT_F32, 2, (const int64_t[]){16, 32});
  ids->mm = call(g, "mm", "torch.ops.aten.mm.default", tup(g, 2, ox_value_node(ids->x), ox_value_node(ids->w)));
  set_tensor(g, ids->mm, OX_DT_F32, 2, (const int64_t[]){8, 32});
  ids->relu = call(g, "relu", "torch.ops.aten.relu.default", tup(g, 1, ox_value_node(ids->mm)));
  set_tensor(g, ids->relu, OX_DT_F32, 2, (const int64_t[]){8, 32});
  ids->split = call(g, "split", "torch.ops.aten.split.Tensor",
                    tup(g, 3, ox_value_node(ids->relu), ox_value_int(16), ox_value_int(1)));
  OxMeta m = {0};
  m.kind = OX_META_TUPLE;
  m.n = 2;
  m.t = ox_graph_alloc(g, 2 * sizeof *m.t);
  for (int i = 0; i < 2; i++) {
    OxTensorMeta *t = ox_graph_tensor_meta_new(g, OX_DT_F32, 2);
    t->shape[0].v = 8;
    t->shape[1].v = i ? 17 : 16; /* distinct so the getitem edge label shows which one */
    m.t[i] = *t;
  }
  ox_graph_set_meta(g, ids->split, &m);
  ids->gi0 = call(g, "getitem", "operator.getitem", tup(g, 2, ox_value_node(ids->split), ox_value_int(0)));
  ids->gi1 = call(g, "getitem_1", "operator.getitem", tup(g, 2, ox_value_node(ids->split), ox_value_int(1)));
  ids->view = call(g, "view", "torch.ops.aten.view.default", tup(g, 1, ox_value_node(ids->gi0)));
  ids->sum = call(g, "sum_1", "torch.ops.aten.sum.default", tup(g, 1, ox_value_node(ids->view)));
  OxValue pair[2] = {ox_value_node(ids->gi1), ox_value_node(ids->gi1)};
  ids->cat = call(g, "cat", "torch.ops.aten.cat.default", tup(g, 1, ox_graph_value_seq(g, OX_V_LIST, pair, 2)));
  OxValue outs[2] = {ox_value_node(ids->sum), ox_value_node(ids->cat)};
  ids->out = ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output",
                               tup(g, 1, ox_graph_value_seq(g, OX_V_TUPLE, outs, 2)), ox_value_none());
  return g;
}

static char *dot_of(const OxGraph *g, const OxDotOptions *opt) {
  OxBuf b;
  ox_buf_init(&b);
  ox_write_dot(g, opt, &b);
  char *s = g_strdup(b.data ? b.data : "");
  ox_buf_free(&b);
  return s;
}

/* The statement line of DOT node n<id> (without the newline), or NULL. */
static char *node_line(const char *dot, OxNodeId id) {
  char *key = g_strdup_printf("\n  n%u [", id);
  const char *p = strstr(dot, key);
  g_free(key);
  if (!p) return NULL;
  p += 3;
  const char *e = strchr(p, '\n');
  return g_strndup(p, e ? (size_t)(e - p) : strlen(p));
}

static guint count_substr(const char *hay, const char *needle) {
  guint n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* dot without its tooltip="..." strings (which are DOT strings, where markup is plain text). */
static char *strip_tooltips(const char *dot) {
  GString *s = g_string_new(NULL);
  for (const char *p = dot; *p;) {
    if (g_str_has_prefix(p, "tooltip=\"")) {
      p += 9;
      while (*p && *p != '"') p += (*p == '\\' && p[1]) ? 2 : 1;
      if (*p) p++;
      continue;
    }
    g_string_append_c(s, *p++);
  }
  return g_string_free(s, FALSE);
}

static guint count_node_statements(const char *dot) {
  guint n = 0;
  gchar **lines = g_strsplit(dot, "\n", -1);
  for (gchar **l = lines; *l; l++)
    if (g_regex_match_simple("^  n[0-9]+ \\[", *l, 0, 0)) n++;
  g_strfreev(lines);
  return n;
}

/* ------------------------------------------------------------------ /engine/dot */

static void test_dot_structure(void) {
  Ids ids;
  OxGraph *g = sample_graph(&ids);
  char *dot = dot_of(g, NULL);
  g_assert_true(g_str_has_prefix(dot, "digraph optimus {\n"));
  g_assert_true(g_str_has_suffix(dot, "}\n"));
  g_assert_null(strstr(dot, "record"));
  g_assert_nonnull(strstr(dot, "shape=box"));
  g_assert_cmpuint(count_node_statements(dot), ==, g->n_live);
  /* edges from each input to its user, in program order */
  char *e = g_strdup_printf("  n%u -> n%u;\n", ids.x, ids.mm);
  g_assert_nonnull(strstr(dot, e));
  g_free(e);
  e = g_strdup_printf("  n%u -> n%u;\n", ids.w, ids.mm);
  g_assert_nonnull(strstr(dot, e));
  g_free(e);
  /* cat uses getitem_1 twice: one edge */
  e = g_strdup_printf("  n%u -> n%u;\n", ids.gi1, ids.cat);
  g_assert_cmpuint(count_substr(dot, e), ==, 1);
  g_free(e);
  g_assert_cmpuint(count_substr(dot, " -> "), ==, 11);
  /* label: bold name, short target, meta */
  char *l = node_line(dot, ids.mm);
  g_assert_nonnull(l);
  g_assert_nonnull(strstr(l, "<B>mm</B>"));
  g_assert_nonnull(strstr(l, "<TD>mm</TD>"));
  g_assert_null(strstr(strstr(l, "label=<"), "torch.ops.aten.mm")); /* only the tooltip has it */
  g_assert_nonnull(strstr(l, "tooltip=\"mm = call_function[torch.ops.aten.mm.default]\""));
  g_assert_nonnull(strstr(l, "f32[8, 32]"));
  g_free(l);
  l = node_line(dot, ids.split);
  g_assert_nonnull(strstr(l, "<TD>split.Tensor</TD>"));
  g_assert_nonnull(strstr(l, "(f32[8, 16], f32[8, 17])"));
  g_free(l);
  g_assert_nonnull(strstr(dot, "rankdir=TB"));
  g_free(dot);
  ox_graph_free(g);
}

static void test_dot_escaping(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "a<b>&c\"d'", "a<b>&c\"d'", ox_value_none(), ox_value_none());
  OxNodeId y = call(g, "y", "my.custom<op>&\"q\\\"", tup(g, 1, ox_value_node(x)));
  OxNodeId z = call(g, "z", "bad\xff\xfeutf8.\xc3\xa9t\xe2\x82\xac\x01", tup(g, 1, ox_value_node(y)));
  char *dot = dot_of(g, NULL);
  char *labels = strip_tooltips(dot);
  g_assert_null(strstr(labels, "<b>"));
  g_assert_null(strstr(labels, "<op>"));
  g_assert_null(strstr(labels, "\"q"));
  g_free(labels);
  char *l = node_line(dot, x);
  g_assert_nonnull(strstr(l, "<B>a&lt;b&gt;&amp;c&quot;d&#39;</B>"));
  g_free(l);
  l = node_line(dot, y);
  g_assert_nonnull(strstr(l, "my.custom&lt;op&gt;&amp;&quot;q\\&quot;"));
  /* in the quoted tooltip, the quote and the backslash are escaped */
  g_assert_nonnull(strstr(l, "tooltip=\"y = call_function[my.custom<op>&\\\"q\\\\\\\"]\""));
  g_free(l);
  l = node_line(dot, z);
  /* invalid bytes become '?', valid multi-byte UTF-8 is kept, control characters become spaces */
  g_assert_nonnull(strstr(l, "bad??utf8.\xc3\xa9t\xe2\x82\xac "));
  g_assert_true(g_utf8_validate(dot, -1, NULL));
  g_free(l);
  /* a long target is cut on a character boundary and marked */
  GString *longt = g_string_new("pkg.");
  for (int i = 0; i < 40; i++) g_string_append(longt, "\xc3\xa9");
  OxNodeId lt = call(g, "long", longt->str, tup(g, 1, ox_value_node(z)));
  g_free(dot);
  dot = dot_of(g, NULL);
  l = node_line(dot, lt);
  g_assert_nonnull(strstr(l, "...</TD>"));
  g_assert_true(g_utf8_validate(l, -1, NULL));
  g_free(l);
  g_string_free(longt, TRUE);
  g_free(dot);
  ox_graph_free(g);
}

typedef struct FamilyCase {
  OxOp op;
  const char *target;
  const char *module_type;
  const char *cls;
} FamilyCase;

static void test_dot_colours(void) {
  static const FamilyCase cases[] = {
    {OX_OP_CALL_FUNCTION, "torch.ops.aten.addmm.default", NULL, "ox-matmul"},
    {OX_OP_CALL_FUNCTION, "torch.nn.functional.linear", NULL, "ox-matmul"},
    {OX_OP_CALL_FUNCTION, "torch.conv2d", NULL, "ox-matmul"},
    {OX_OP_CALL_FUNCTION, "executorch.exir.dialects.edge._ops.aten.convolution.default", NULL, "ox-matmul"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten._scaled_dot_product_efficient_attention.default", NULL, "ox-matmul"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten.native_layer_norm.default", NULL, "ox-norm"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten._softmax.default", NULL, "ox-norm"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten._native_batch_norm_legit_no_training.default", NULL, "ox-norm"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten.gelu.default", NULL, "ox-elementwise"},
    {OX_OP_CALL_FUNCTION, "operator.add", NULL, "ox-elementwise"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten.mul.Tensor", NULL, "ox-elementwise"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten.threshold_backward.default", NULL, "ox-elementwise"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten.relu_.default", NULL, "ox-elementwise"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten.split_with_sizes.default", NULL, "ox-plumbing"},
    {OX_OP_CALL_FUNCTION, "operator.getitem", NULL, "ox-plumbing"},
    {OX_OP_CALL_FUNCTION, "torch.cat", NULL, "ox-plumbing"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten.unbind.int", NULL, "ox-plumbing"},
    {OX_OP_CALL_FUNCTION, "torch.stack", NULL, "ox-plumbing"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten.permute.default", NULL, "ox-view"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten._unsafe_view.default", NULL, "ox-view"},
    {OX_OP_CALL_FUNCTION, "torch.flatten", NULL, "ox-view"},
    {OX_OP_CALL_METHOD, "view", NULL, "ox-view"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten.sum.dim_IntList", NULL, "ox-reduction"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten.mean.dim", NULL, "ox-reduction"},
    {OX_OP_CALL_FUNCTION, "torch.ops.aten.var_mean.correction", NULL, "ox-reduction"},
    {OX_OP_CALL_FUNCTION, "torch.ops.higher_order.executorch_call_delegate", NULL, "ox-other"},
    {OX_OP_CALL_MODULE, "layer1.0.bn1", "torch.nn.modules.batchnorm.BatchNorm2d", "ox-norm"},
    {OX_OP_CALL_MODULE, "layer1.0.conv1", NULL, "ox-matmul"},
    {OX_OP_CALL_MODULE, "fc", "torch.nn.Linear", "ox-matmul"},
    {OX_OP_CALL_MODULE, "maxpool", "torch.nn.MaxPool2d", "ox-reduction"},
    {OX_OP_CALL_MODULE, "relu", NULL, "ox-elementwise"},
  };
  OxGraph *g = ox_graph_new();
  OxNodeId x = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "x", "x", ox_value_none(), ox_value_none());
  OxNodeId a = ox_graph_add_node(g, OX_OP_GET_ATTR, "p", "param", ox_value_none(), ox_value_none());
  OxNodeId ids[G_N_ELEMENTS(cases)];
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    ids[i] = ox_graph_add_node(g, cases[i].op, NULL, cases[i].target, tup(g, 1, ox_value_node(x)), ox_value_none());
    if (cases[i].module_type) g->nodes[ids[i]].module_type = ox_graph_intern(g, cases[i].module_type);
  }
  OxNodeId out = ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, 1, ox_value_node(a)), ox_value_none());
  char *dot = dot_of(g, NULL);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    char *l = node_line(dot, ids[i]);
    char *want = g_strdup_printf("class=\"%s\"", cases[i].cls);
    if (!strstr(l, want)) g_test_message("%s: %s", cases[i].target, l);
    g_assert_nonnull(strstr(l, want));
    g_free(want);
    g_free(l);
  }
  char *l = node_line(dot, x);
  g_assert_nonnull(strstr(l, "class=\"ox-input\""));
  g_free(l);
  l = node_line(dot, a);
  g_assert_nonnull(strstr(l, "class=\"ox-input\""));
  g_assert_nonnull(strstr(l, "attr param"));
  g_free(l);
  l = node_line(dot, out);
  g_assert_nonnull(strstr(l, "class=\"ox-output\""));
  g_free(l);
  /* each family has its own fill colour */
  char *fills[4];
  OxNodeId pick[4] = {ids[0], ids[5], ids[8], ids[13]};
  for (int i = 0; i < 4; i++) {
    l = node_line(dot, pick[i]);
    const char *f = strstr(l, "fillcolor=\"#");
    g_assert_nonnull(f);
    fills[i] = g_strndup(f, 20);
    g_free(l);
  }
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++) g_assert_cmpstr(fills[i], !=, fills[j]);
  for (int i = 0; i < 4; i++) g_free(fills[i]);
  g_free(dot);
  ox_graph_free(g);
}

static void test_dot_highlight(void) {
  Ids ids;
  OxGraph *g = sample_graph(&ids);
  uint8_t *hl = g_malloc0(g->n_nodes);
  hl[ids.mm] = 1;
  hl[ids.relu] = 2;
  hl[ids.view] = 3;
  OxDotOptions opt = {.highlight = hl};
  char *dot = dot_of(g, &opt);
  char *l = node_line(dot, ids.mm);
  g_assert_nonnull(strstr(l, "penwidth=3"));
  g_assert_nonnull(strstr(l, "color=\"#1f5fbf\""));
  g_free(l);
  l = node_line(dot, ids.relu);
  g_assert_nonnull(strstr(l, "penwidth=3"));
  g_assert_nonnull(strstr(l, "dashed"));
  g_assert_nonnull(strstr(l, "color=\"#c62828\""));
  g_free(l);
  l = node_line(dot, ids.view);
  g_assert_nonnull(strstr(l, "penwidth=3"));
  g_assert_nonnull(strstr(l, "color=\"#2e7d32\""));
  g_free(l);
  l = node_line(dot, ids.sum);
  g_assert_null(strstr(l, "penwidth"));
  g_free(l);
  g_assert_cmpuint(count_substr(dot, "penwidth=3"), ==, 3);
  g_free(dot);
  /* without highlight nothing is outlined */
  dot = dot_of(g, NULL);
  g_assert_cmpuint(count_substr(dot, "penwidth=3"), ==, 0);
  g_free(dot);
  g_free(hl);
  ox_graph_free(g);
}

static void test_dot_edge_labels(void) {
  Ids ids;
  OxGraph *g = sample_graph(&ids);
  OxDotOptions opt = {.edge_shapes = true};
  char *dot = dot_of(g, &opt);
  char *e = g_strdup_printf("  n%u -> n%u [label=<f32[8, 16]>];\n", ids.x, ids.mm);
  g_assert_nonnull(strstr(dot, e));
  g_free(e);
  /* a getitem edge carries the element it picks out of the tuple */
  e = g_strdup_printf("  n%u -> n%u [label=<f32[8, 17]>];\n", ids.split, ids.gi1);
  g_assert_nonnull(strstr(dot, e));
  g_free(e);
  /* no meta, no label */
  e = g_strdup_printf("  n%u -> n%u;\n", ids.view, ids.sum);
  g_assert_nonnull(strstr(dot, e));
  g_free(e);
  g_free(dot);
  dot = dot_of(g, NULL);
  g_assert_null(strstr(dot, "] [label"));
  g_assert_cmpuint(count_substr(dot, " -> n"), ==, 11);
  gchar **lines = g_strsplit(dot, "\n", -1);
  for (gchar **l = lines; *l; l++)
    if (strstr(*l, " -> ")) g_assert_null(strstr(*l, "label"));
  g_strfreev(lines);
  g_free(dot);
  ox_graph_free(g);
}

static void test_dot_rankdir(void) {
  Ids ids;
  OxGraph *g = sample_graph(&ids);
  OxDotOptions opt = {.rankdir = "LR"};
  char *dot = dot_of(g, &opt);
  g_assert_nonnull(strstr(dot, "rankdir=LR"));
  g_free(dot);
  opt.rankdir = "XX\"; evil";
  dot = dot_of(g, &opt);
  g_assert_nonnull(strstr(dot, "rankdir=TB"));
  g_assert_null(strstr(dot, "evil"));
  g_free(dot);
  ox_graph_free(g);
}

static void test_dot_deterministic(void) {
  Ids ids;
  OxGraph *g = sample_graph(&ids);
  /* an erased node is not drawn and leaves no edge behind */
  OxNodeId dead = call(g, "dead", "torch.ops.aten.neg.default", tup(g, 1, ox_value_node(ids.relu)));
  g_assert_true(ox_graph_erase(g, dead));
  char *a = dot_of(g, NULL);
  char *b = dot_of(g, NULL);
  g_assert_cmpstr(a, ==, b);
  g_assert_null(strstr(a, "dead"));
  char *dl = node_line(a, dead);
  g_assert_null(dl);
  OxGraph *c = ox_graph_clone(g);
  char *cd = dot_of(c, NULL);
  g_assert_cmpstr(a, ==, cd);
  g_free(cd);
  ox_graph_free(c);
  g_free(a);
  g_free(b);
  ox_graph_free(g);
}

static void test_dot_subgraphs(void) {
  Ids ids;
  OxGraph *g = sample_graph(&ids);
  OxGraph *sub = ox_graph_new();
  sub->name = ox_graph_intern(sub, "lowered graph");
  sub->sub_owner = ox_graph_intern(sub, "relu");
  OxNodeId p = ox_graph_add_node(sub, OX_OP_PLACEHOLDER, "inner_x", "inner_x", ox_value_none(), ox_value_none());
  OxNodeId q = call(sub, "inner_neg", "torch.ops.aten.neg.default", tup(sub, 1, ox_value_node(p)));
  ox_graph_add_node(sub, OX_OP_OUTPUT, "output", "output", tup(sub, 1, ox_value_node(q)), ox_value_none());
  ox_graph_add_subgraph(g, sub);
  char *dot = dot_of(g, NULL);
  g_assert_nonnull(strstr(dot, "// 1 nested subgraph not drawn: lowered graph of relu (3 nodes)"));
  g_assert_null(strstr(dot, "inner_neg"));
  char *l = node_line(dot, ids.relu);
  g_assert_nonnull(strstr(l, "subgraph: 3 nodes (not drawn)"));
  g_free(l);
  g_free(dot);
  ox_graph_free(g);
}

/* Past 1,000 nodes the DOT bounds dot's work and uses xlabels for edge shapes. */
static void test_dot_large(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId prev = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "x", "x", ox_value_none(), ox_value_none());
  set_tensor(g, prev, OX_DT_F16, 1, (const int64_t[]){4});
  for (int i = 0; i < 1000; i++) {
    prev = call(g, NULL, "torch.ops.aten.neg.default", tup(g, 1, ox_value_node(prev)));
    set_tensor(g, prev, OX_DT_F16, 1, (const int64_t[]){4});
  }
  OxDotOptions opt = {.edge_shapes = true};
  char *dot = dot_of(g, &opt);
  g_assert_nonnull(strstr(dot, "nslimit=1"));
  g_assert_cmpuint(count_substr(dot, "[xlabel=<f16[4]>]"), ==, 1000);
  g_assert_null(strstr(dot, "[label=<f16"));
  g_free(dot);
  ox_graph_erase(g, prev); /* 1000 nodes: the normal layout */
  dot = dot_of(g, &opt);
  g_assert_null(strstr(dot, "nslimit"));
  g_assert_cmpuint(count_substr(dot, "[label=<f16[4]>]"), ==, 999);
  g_free(dot);
  ox_graph_free(g);
}

/* ------------------------------------------------------------------ /engine/render */

static void test_render_svg(void) {
  Ids ids;
  OxGraph *g = sample_graph(&ids);
  OxBuf b;
  ox_buf_init(&b);
  char err[512] = "junk";
  OxDotOptions opt = {.edge_shapes = true, .rankdir = "LR"};
  g_assert_cmpint(ox_render(g, &opt, "svg", &b, err, sizeof err), ==, 0);
  g_assert_cmpstr(err, ==, ""); /* no Graphviz warnings for our DOT */
  g_assert_true(g_str_has_prefix(b.data, "<?xml") || g_str_has_prefix(b.data, "<svg"));
  g_assert_nonnull(strstr(b.data, "</svg>"));
  g_assert_nonnull(strstr(b.data, ">getitem_1</text>"));
  g_assert_nonnull(strstr(b.data, "class=\"node ox&#45;matmul\""));
  g_assert_nonnull(strstr(b.data, ">f32[8, 17]</text>"));
  /* appends: a second render keeps the first */
  size_t first = b.len;
  g_assert_cmpint(ox_render(g, NULL, "svg", &b, err, sizeof err), ==, 0);
  g_assert_cmpuint(b.len, >, first);
  ox_buf_free(&b);
  ox_graph_free(g);
}

static void test_render_png(void) {
  Ids ids;
  OxGraph *g = sample_graph(&ids);
  OxBuf b;
  ox_buf_init(&b);
  char err[512];
  g_assert_cmpint(ox_render(g, NULL, "png", &b, err, sizeof err), ==, 0);
  g_assert_cmpuint(b.len, >, 100);
  g_assert_cmpmem(b.data, 8, "\x89PNG\r\n\x1a\n", 8);
  ox_buf_free(&b);
  ox_graph_free(g);
}

static void test_render_bad_format(void) {
  Ids ids;
  OxGraph *g = sample_graph(&ids);
  OxBuf b;
  ox_buf_init(&b);
  char err[512];
  static const char *const bad[] = {"jpg", "png:gdk", "gtk", "dot", "SVG", ""};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_cmpint(ox_render(g, NULL, bad[i], &b, err, sizeof err), ==, -1);
    g_assert_nonnull(strstr(err, "only svg and png"));
    g_assert_cmpuint(b.len, ==, 0);
  }
  g_assert_cmpint(ox_render(g, NULL, NULL, &b, err, sizeof err), ==, -1);
  g_assert_cmpuint(b.len, ==, 0);
  /* a tiny err buffer is still NUL-terminated */
  char tiny[8];
  g_assert_cmpint(ox_render(g, NULL, "jpg", &b, tiny, sizeof tiny), ==, -1);
  g_assert_cmpuint(strlen(tiny), ==, 7);
  ox_buf_free(&b);
  ox_graph_free(g);
}

/* Names and targets full of markup and bad bytes must still give DOT that Graphviz parses
 * without a single warning. */
static void test_render_hostile_names(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "<TABLE>&amp;\"", "x", ox_value_none(), ox_value_none());
  OxNodeId y = call(g, "]; n1 -> n2 [", "x</TD></TR></TABLE>>\\\"\n", tup(g, 1, ox_value_node(x)));
  OxNodeId z = call(g, "z", "\xff\xfe\xc3", tup(g, 1, ox_value_node(y)));
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup(g, 1, ox_value_node(z)), ox_value_none());
  g->name = ox_graph_intern(g, "*/ evil \n graph");
  OxBuf b;
  ox_buf_init(&b);
  char err[512];
  g_assert_cmpint(ox_render(g, NULL, "svg", &b, err, sizeof err), ==, 0);
  g_assert_cmpstr(err, ==, "");
  g_assert_nonnull(strstr(b.data, "&lt;TABLE&gt;&amp;amp;&quot;"));
  ox_buf_free(&b);
  ox_graph_free(g);
}

static void test_render_empty_graph(void) {
  OxGraph *g = ox_graph_new();
  OxBuf b;
  ox_buf_init(&b);
  char err[512];
  g_assert_cmpint(ox_render(g, NULL, "svg", &b, err, sizeof err), ==, 0);
  g_assert_nonnull(strstr(b.data, "</svg>"));
  ox_buf_free(&b);
  ox_graph_free(g);
}

static gpointer render_worker(gpointer data) {
  OxGraph *g = data;
  for (int i = 0; i < 4; i++) {
    OxBuf b;
    ox_buf_init(&b);
    char err[256];
    if (ox_render(g, NULL, i % 2 ? "png" : "svg", &b, err, sizeof err) != 0) {
      ox_buf_free(&b);
      return GINT_TO_POINTER(1);
    }
    ox_buf_free(&b);
  }
  return GINT_TO_POINTER(0);
}

/* Graphviz crashes when two threads lay out at once; ox_render's lock must serialise them. */
static void test_render_threads(void) {
  Ids a, b;
  OxGraph *g1 = sample_graph(&a), *g2 = sample_graph(&b);
  /* each thread needs its own graph: ox_write_dot uses the graph's mark scratch */
  GThread *t1 = g_thread_new("render-1", render_worker, g1);
  GThread *t2 = g_thread_new("render-2", render_worker, g2);
  g_assert_cmpint(GPOINTER_TO_INT(g_thread_join(t1)), ==, 0);
  g_assert_cmpint(GPOINTER_TO_INT(g_thread_join(t2)), ==, 0);
  ox_graph_free(g1);
  ox_graph_free(g2);
}

/* ------------------------------------------------------------------ CLI helpers */

static const char *cli_path(void) {
  const char *p = g_getenv("OPTIMUS_CLI");
  return p && *p ? p : NULL;
}

typedef struct Run {
  int status; /* exit code; -1 if killed by a signal */
  char *out, *err;
} Run;

static void run_clear(Run *r) {
  g_free(r->out);
  g_free(r->err);
  memset(r, 0, sizeof *r);
}

typedef struct ChildSetup {
  const char *stdin_path; /* opened as fd 0 when set */
  rlim_t fsize_limit;     /* RLIMIT_FSIZE when non-zero */
} ChildSetup;

static void child_setup(gpointer data) {
  const ChildSetup *cs = data;
  if (!cs) return;
  if (cs->stdin_path) {
    int fd = open(cs->stdin_path, O_RDONLY);
    if (fd >= 0) {
      dup2(fd, 0);
      close(fd);
    }
  }
  if (cs->fsize_limit) {
    struct rlimit rl = {cs->fsize_limit, cs->fsize_limit};
    setrlimit(RLIMIT_FSIZE, &rl);
    signal(SIGXFSZ, SIG_IGN); /* ignored dispositions survive exec: write() fails with EFBIG */
  }
}

/* Runs the CLI with the given arguments (NULL-terminated), capturing stdout and stderr. */
static void run_cli_setup(Run *r, const ChildSetup *cs, const char *first, ...) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (gpointer)cli_path());
  va_list ap;
  va_start(ap, first);
  for (const char *a = first; a; a = va_arg(ap, const char *)) g_ptr_array_add(argv, (gpointer)a);
  va_end(ap);
  g_ptr_array_add(argv, NULL);
  int wait_status = 0;
  GError *error = NULL;
  memset(r, 0, sizeof *r);
  gboolean ok = g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, child_setup, (gpointer)cs, &r->out,
                             &r->err, &wait_status, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
  r->status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  if (g_test_verbose()) g_test_message("exit %d\nstdout:\n%s\nstderr:\n%s", r->status, r->out, r->err);
  g_ptr_array_free(argv, TRUE);
}

#define run_cli(r, ...) run_cli_setup(r, NULL, __VA_ARGS__, NULL)

/* text with its first `from` (which must be there) replaced by `to` (caller frees). */
static char *replace_once(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  g_assert_nonnull(at);
  return g_strdup_printf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}

static char *write_tmp(const char *dir, const char *name, const char *text) {
  char *path = g_build_filename(dir, name, NULL);
  GError *error = NULL;
  g_file_set_contents(path, text, -1, &error);
  g_assert_no_error(error);
  return path;
}

static void rm_rf(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  if (d) {
    const char *n;
    while ((n = g_dir_read_name(d))) {
      char *p = g_build_filename(dir, n, NULL);
      if (g_file_test(p, G_FILE_TEST_IS_DIR)) {
        g_chmod(p, 0755);
        rm_rf(p);
      } else {
        g_unlink(p);
      }
      g_free(p);
    }
    g_dir_close(d);
  }
  g_rmdir(dir);
}

static bool need_cli(void) {
  if (cli_path()) return true;
  g_test_skip("OPTIMUS_CLI is not set (run through meson test)");
  return false;
}

static const char small_fx[] =
  "graph():\n"
  "    %x : [num_users=2] = placeholder[target=x]\n"
  "    %relu : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})\n"
  "    %add : [num_users=1] = call_function[target=operator.add](args = (%relu, %x), kwargs = {})\n"
  "    %add_1 : [num_users=1] = call_function[target=operator.add](args = (%add, 1), kwargs = {})\n"
  "    return add_1\n";

static const char two_graphs_fx[] =
  "graph():\n"
  "    %a : [num_users=1] = placeholder[target=a]\n"
  "    %neg : [num_users=1] = call_function[target=torch.neg](args = (%a,), kwargs = {})\n"
  "    return neg\n"
  "graph():\n"
  "    %b : [num_users=1] = placeholder[target=b]\n"
  "    %c : [num_users=1] = placeholder[target=c]\n"
  "    %mul : [num_users=1] = call_function[target=operator.mul](args = (%b, %c), kwargs = {})\n"
  "    return mul\n";

/* line 3 is damaged: a lenient load skips it with a warning, --strict makes that an error */
static const char damaged_fx[] =
  "graph():\n"
  "    %x : [num_users=1] = placeholder[target=x]\n"
  "    %relu : [num_users=1] = call_function[target=torch.relu](args = (%x,, kwargs = {}\n"
  "    %neg : [num_users=1] = call_function[target=torch.neg](args = (%x,), kwargs = {})\n"
  "    return neg\n";

static json_object *parse_json(const char *text) {
  json_tokener *tok = json_tokener_new();
  json_object *o = json_tokener_parse_ex(tok, text, (int)strlen(text));
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  if (jerr != json_tokener_success) g_test_message("JSON error %s in:\n%s", json_tokener_error_desc(jerr), text);
  g_assert_cmpint(jerr, ==, json_tokener_success);
  /* exactly one object: only white space may follow */
  for (size_t i = json_tokener_get_parse_end(tok); text[i]; i++) g_assert_true(g_ascii_isspace(text[i]));
  json_tokener_free(tok);
  g_assert_true(json_object_is_type(o, json_type_object));
  return o;
}

static json_object *jget(json_object *o, const char *key) {
  json_object *v = NULL;
  if (!json_object_object_get_ex(o, key, &v)) g_test_message("missing key %s", key);
  g_assert_true(json_object_object_get_ex(o, key, &v));
  return v;
}

static int json_int(json_object *o, const char *key) { return json_object_get_int(jget(o, key)); }

/* ------------------------------------------------------------------ /cli */

static void test_cli_help(void) {
  if (!need_cli()) return;
  Run r;
  run_cli(&r, "--help");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_true(g_str_has_prefix(r.out, "Usage: optimus"));
  g_assert_nonnull(strstr(r.out, "convert"));
  run_clear(&r);
  run_cli(&r, "-h");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_true(g_str_has_prefix(r.out, "Usage: optimus"));
  run_clear(&r);
  static const char *const cmds[] = {"info", "convert", "check", "verify", "optimize", "explain", "replay"};
  for (guint i = 0; i < G_N_ELEMENTS(cmds); i++) {
    for (int h = 0; h < 2; h++) {
      run_cli(&r, cmds[i], h ? "-h" : "--help");
      g_assert_cmpint(r.status, ==, 0);
      char *want = g_strdup_printf("Usage: optimus %s FILE", cmds[i]);
      g_assert_true(g_str_has_prefix(r.out, want));
      g_free(want);
      g_assert_cmpstr(r.err, ==, "");
      run_clear(&r);
    }
  }
  run_cli(&r, "--version");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_true(g_regex_match_simple("^optimus [0-9]+\\.[0-9]+\\.[0-9]+\n$", r.out, 0, 0));
  run_clear(&r);
}

static void test_cli_usage_errors(void) {
  if (!need_cli()) return;
  Run r;
  run_cli_setup(&r, NULL, NULL);
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "Usage: optimus"));
  run_clear(&r);
  run_cli(&r, "frobnicate", "x");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "unknown command 'frobnicate'"));
  g_assert_cmpstr(r.out, ==, "");
  run_clear(&r);
  /* later issues' commands are not there yet */
  run_cli(&r, "optimize", "x");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "--bogus");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "info", "x.txt", "--bogus");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "unknown option '--bogus'"));
  g_assert_nonnull(strstr(r.err, "Usage: optimus info"));
  run_clear(&r);
  run_cli(&r, "info");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "missing FILE"));
  run_clear(&r);
  run_cli(&r, "info", "a.txt", "b.txt");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "info", "a.txt", "--graph");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "needs a value"));
  run_clear(&r);
  static const char *const bad_graph[] = {"0", "-1", "x", "1x", ""};
  for (guint i = 0; i < G_N_ELEMENTS(bad_graph); i++) {
    run_cli(&r, "check", "a.txt", "--graph", bad_graph[i]);
    g_assert_cmpint(r.status, ==, 2);
    run_clear(&r);
  }
  run_cli(&r, "info", "a.txt", "--format", "yaml");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "info", "a.txt", "--json=yes");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  /* an option of another command */
  run_cli(&r, "check", "a.txt", "--json");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "convert", "a.txt");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "missing -o OUT"));
  run_clear(&r);
  run_cli(&r, "convert", "a.txt", "-o", "out.xyz");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "cannot tell the output format"));
  run_clear(&r);
  run_cli(&r, "convert", "a.txt", "-o", "-");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "convert", "a.txt", "-o", "-", "--to", "png");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "convert", "a.txt", "-o", "x.svg", "--rankdir", "UP");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "convert", "a.txt", "-o", "x.svg", "--to", "bmp");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
}

static void test_cli_bad_input(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("optimus-cli-XXXXXX", NULL);
  Run r;
  char *missing = g_build_filename(dir, "missing.txt", NULL);
  run_cli(&r, "info", missing);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "missing.txt"));
  g_assert_nonnull(strstr(r.err, "error:"));
  run_clear(&r);
  char *junk = write_tmp(dir, "junk.txt", "hello world\nthis is not a graph\n");
  run_cli(&r, "check", junk);
  g_assert_cmpint(r.status, ==, 1);
  char *want = g_strdup_printf("%s:1:1: error: no graph found", junk);
  g_assert_nonnull(strstr(r.err, want));
  g_free(want);
  g_assert_cmpstr(r.out, ==, "");
  run_clear(&r);
  /* --json still prints one object, with the errors */
  run_cli(&r, "info", "--json", junk);
  g_assert_cmpint(r.status, ==, 1);
  json_object *o = parse_json(r.out);
  g_assert_cmpint(json_object_array_length(jget(o, "errors")), >=, 1);
  g_assert_nonnull(strstr(json_object_get_string(json_object_array_get_idx(jget(o, "errors"), 0)), "error: no graph"));
  json_object_put(o);
  run_clear(&r);
  char *empty = write_tmp(dir, "empty.txt", "");
  run_cli(&r, "convert", empty, "-o", "-", "--to", "dot");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_cmpstr(r.out, ==, "");
  run_clear(&r);
  g_free(missing);
  g_free(junk);
  g_free(empty);
  rm_rf(dir);
  g_free(dir);
}

/* Everything below needs the FX text loader; a loader that cannot read the small input
 * fails here with its own diagnostics in the log. */
static void test_cli_info(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("optimus-cli-XXXXXX", NULL);
  char *f = write_tmp(dir, "small.txt", small_fx);
  Run r;
  run_cli(&r, "info", f);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "format: fx-text\n"));
  g_assert_nonnull(strstr(r.out, "graphs: 1\n"));
  g_assert_nonnull(strstr(r.out, "  nodes: 4\n"));
  g_assert_nonnull(strstr(r.out, "  placeholders: 1\n"));
  /* histogram: count descending, then name */
  const char *add = strstr(r.out, "     2  operator.add\n");
  const char *relu = strstr(r.out, "     1  torch.relu\n");
  g_assert_nonnull(add);
  g_assert_nonnull(relu);
  g_assert_true(add < relu);
  run_clear(&r);

  run_cli(&r, "info", "--json", f);
  g_assert_cmpint(r.status, ==, 0);
  json_object *o = parse_json(r.out);
  g_assert_cmpstr(json_object_get_string(jget(o, "file")), ==, f);
  g_assert_cmpstr(json_object_get_string(jget(o, "format")), ==, "fx-text");
  g_assert_cmpint(json_object_get_int(jget(o, "graph")), ==, 1);
  g_assert_cmpint(json_object_get_int(jget(o, "nodes")), ==, 4);
  g_assert_cmpint(json_object_get_int(jget(o, "placeholders")), ==, 1);
  json_object *graphs = jget(o, "graphs");
  g_assert_cmpint(json_object_array_length(graphs), ==, 1);
  json_object *g0 = json_object_array_get_idx(graphs, 0);
  g_assert_cmpint(json_object_get_int(jget(g0, "index")), ==, 1);
  g_assert_cmpint(json_object_get_int(jget(g0, "nodes")), ==, 4);
  g_assert_true(json_object_is_type(jget(g0, "name"), json_type_string));
  json_object *ops = jget(o, "ops");
  g_assert_cmpint(json_object_object_length(ops), ==, 2);
  g_assert_cmpint(json_object_get_int(jget(ops, "operator.add")), ==, 2);
  g_assert_cmpint(json_object_get_int(jget(ops, "torch.relu")), ==, 1);
  g_assert_cmpint(json_object_array_length(jget(o, "warnings")), ==, 0);
  g_assert_cmpint(json_object_array_length(jget(o, "errors")), ==, 0);
  json_object_put(o);
  run_clear(&r);

  /* stdin */
  ChildSetup cs = {.stdin_path = f};
  run_cli_setup(&r, &cs, "info", "--json", "-", NULL);
  g_assert_cmpint(r.status, ==, 0);
  o = parse_json(r.out);
  g_assert_cmpstr(json_object_get_string(jget(o, "file")), ==, "-");
  g_assert_cmpint(json_object_get_int(jget(o, "nodes")), ==, 4);
  json_object_put(o);
  run_clear(&r);

  /* a forced format that does not match is an error */
  run_cli(&r, "info", f, "--format", "json");
  g_assert_cmpint(r.status, ==, 1);
  run_clear(&r);
  g_free(f);
  rm_rf(dir);
  g_free(dir);
}

static void test_cli_graphs(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("optimus-cli-XXXXXX", NULL);
  char *f = write_tmp(dir, "two.txt", two_graphs_fx);
  Run r;
  run_cli(&r, "info", "--json", "--graph", "2", f);
  g_assert_cmpint(r.status, ==, 0);
  json_object *o = parse_json(r.out);
  g_assert_cmpint(json_object_get_int(jget(o, "graph")), ==, 2);
  g_assert_cmpint(json_object_get_int(jget(o, "nodes")), ==, 3);
  g_assert_cmpint(json_object_get_int(jget(o, "placeholders")), ==, 2);
  json_object *graphs = jget(o, "graphs");
  g_assert_cmpint(json_object_array_length(graphs), ==, 2);
  g_assert_cmpint(json_object_get_int(jget(json_object_array_get_idx(graphs, 0), "nodes")), ==, 2);
  g_assert_cmpint(json_object_get_int(jget(json_object_array_get_idx(graphs, 1), "index")), ==, 2);
  g_assert_cmpint(json_object_get_int(jget(jget(o, "ops"), "operator.mul")), ==, 1);
  json_object_put(o);
  run_clear(&r);
  /* text mode lists the graphs */
  run_cli(&r, "info", f, "--graph=2");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "graphs: 2\n"));
  g_assert_nonnull(strstr(r.out, "  1  "));
  g_assert_nonnull(strstr(r.out, "  2  "));
  g_assert_nonnull(strstr(r.out, "graph 2: "));
  run_clear(&r);
  run_cli(&r, "info", f, "--graph", "3");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "out of range"));
  run_clear(&r);
  run_cli(&r, "check", f);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_cmpstr(r.out, ==, "ok: 2 graphs, 5 nodes\n");
  run_clear(&r);
  run_cli(&r, "check", f, "--graph", "1");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_cmpstr(r.out, ==, "ok: 1 graph, 2 nodes\n");
  run_clear(&r);
  /* FX text of the second graph only, to stdout */
  run_cli(&r, "convert", f, "--graph", "2", "-o", "-", "--to", "fx");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "operator.mul"));
  g_assert_null(strstr(r.out, "torch.neg"));
  run_clear(&r);
  /* DOT of a multi-graph file draws graph 1 and says so */
  run_cli(&r, "convert", f, "-o", "-", "--to", "dot");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "torch.neg"));
  g_assert_nonnull(strstr(r.err, "--graph N"));
  run_clear(&r);
  g_free(f);
  rm_rf(dir);
  g_free(dir);
}

static void test_cli_strict(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("optimus-cli-XXXXXX", NULL);
  char *f = write_tmp(dir, "damaged.txt", damaged_fx);
  Run r;
  char *fre = g_regex_escape_string(f, -1);
  /* lenient: loads, warns with the location of the damaged line */
  run_cli(&r, "info", "--json", f);
  g_assert_cmpint(r.status, ==, 0);
  char *re = g_strdup_printf("^%s:3:[0-9]+: warning: ", fre);
  g_assert_true(g_regex_match_simple(re, r.err, G_REGEX_MULTILINE, 0));
  json_object *o = parse_json(r.out);
  json_object *w = jget(o, "warnings");
  g_assert_cmpint(json_object_array_length(w), >=, 1);
  g_assert_true(g_regex_match_simple(re, json_object_get_string(json_object_array_get_idx(w, 0)), 0, 0));
  json_object_put(o);
  g_free(re);
  run_clear(&r);
  /* strict: the warning is an error, exit 1 */
  static const char *const cmds[] = {"info", "check"};
  for (guint i = 0; i < G_N_ELEMENTS(cmds); i++) {
    run_cli(&r, cmds[i], "--strict", f);
    g_assert_cmpint(r.status, ==, 1);
    re = g_strdup_printf("^%s:3:[0-9]+: error: ", fre);
    g_assert_true(g_regex_match_simple(re, r.err, G_REGEX_MULTILINE, 0));
    g_free(re);
    g_assert_cmpstr(r.out, ==, "");
    run_clear(&r);
  }
  char *out = g_build_filename(dir, "out.json", NULL);
  run_cli(&r, "convert", "--strict", f, "-o", out);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  run_clear(&r);
  g_free(out);
  g_free(fre);
  g_free(f);
  rm_rf(dir);
  g_free(dir);
}

/* A document that loads but breaks the verifier's rules: check reports it, exit 1. */
static void test_cli_check_failure(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("optimus-cli-XXXXXX", NULL);
  char *f = write_tmp(dir, "bad-getitem.json",
                      "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"name\": \"graph\", \"nodes\": [\n"
                      " {\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\", \"args\": [], \"kwargs\": {}},\n"
                      " {\"name\": \"g\", \"op\": \"call_function\", \"target\": \"operator.getitem\",\n"
                      "  \"args\": [{\"node\": \"x\"}], \"kwargs\": {}, \"src_line\": 7}]}]}\n");
  Run r;
  run_cli(&r, "check", f);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_cmpstr(r.out, ==, "");
  char *want = g_strdup_printf("%s:7: error: getitem g must have two arguments", f);
  g_assert_nonnull(strstr(r.err, want));
  g_free(want);
  g_assert_nonnull(strstr(r.err, "check failed: 1 error\n"));
  run_clear(&r);
  /* info does not verify: the same file is describable */
  run_cli(&r, "info", f);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "format: json\n"));
  run_clear(&r);
  g_free(f);
  rm_rf(dir);
  g_free(dir);
}

static char *read_all(const char *path, gsize *len) {
  char *data = NULL;
  GError *error = NULL;
  g_file_get_contents(path, &data, len, &error);
  g_assert_no_error(error);
  return data;
}

static void test_cli_convert(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("optimus-cli-XXXXXX", NULL);
  char *f = write_tmp(dir, "small.txt", small_fx);
  Run r;
  static const char *const exts[] = {"svg", "png", "dot", "gv", "json", "txt", "fx", "SVG"};
  for (guint i = 0; i < G_N_ELEMENTS(exts); i++) {
    char *name = g_strdup_printf("out.%s", exts[i]);
    char *out = g_build_filename(dir, name, NULL);
    run_cli(&r, "convert", f, "-o", out, "--edge-shapes", "--rankdir", "LR");
    g_assert_cmpint(r.status, ==, 0);
    g_assert_cmpstr(r.err, ==, "");
    gsize len = 0;
    char *data = read_all(out, &len);
    g_assert_cmpuint(len, >, 0);
    const char *e = exts[i];
    if (g_ascii_strcasecmp(e, "svg") == 0) {
      g_assert_true(g_str_has_prefix(data, "<?xml") || g_str_has_prefix(data, "<svg"));
      g_assert_nonnull(strstr(data, "</svg>"));
      g_assert_nonnull(strstr(data, ">add_1</text>"));
    } else if (strcmp(e, "png") == 0) {
      g_assert_cmpuint(len, >, 8);
      g_assert_cmpmem(data, 8, "\x89PNG\r\n\x1a\n", 8);
    } else if (strcmp(e, "dot") == 0 || strcmp(e, "gv") == 0) {
      g_assert_true(g_str_has_prefix(data, "digraph"));
      g_assert_nonnull(strstr(data, "rankdir=LR"));
    } else if (strcmp(e, "json") == 0) {
      json_object *o = parse_json(data);
      json_object_put(o);
      /* and it loads back as the same graph */
      Run r2;
      run_cli(&r2, "info", "--json", out);
      g_assert_cmpint(r2.status, ==, 0);
      json_object *o2 = parse_json(r2.out);
      g_assert_cmpstr(json_object_get_string(jget(o2, "format")), ==, "json");
      g_assert_cmpint(json_object_get_int(jget(o2, "nodes")), ==, 4);
      json_object_put(o2);
      run_clear(&r2);
    } else {
      g_assert_nonnull(strstr(data, "graph():"));
      g_assert_nonnull(strstr(data, "operator.add"));
      Run r2;
      run_cli(&r2, "check", out);
      g_assert_cmpint(r2.status, ==, 0);
      g_assert_cmpstr(r2.out, ==, "ok: 1 graph, 4 nodes\n");
      run_clear(&r2);
    }
    g_free(data);
    run_clear(&r);
    g_free(out);
    g_free(name);
  }
  /* stdout for text kinds */
  run_cli(&r, "convert", f, "-o", "-", "--to", "dot");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_true(g_str_has_prefix(r.out, "digraph"));
  run_clear(&r);
  run_cli(&r, "convert", f, "-o-", "--to", "svg");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "</svg>"));
  run_clear(&r);
  run_cli(&r, "convert", f, "--output=-", "--to", "json");
  g_assert_cmpint(r.status, ==, 0);
  json_object_put(parse_json(r.out));
  run_clear(&r);
  /* --to overrides the extension */
  char *odd = g_build_filename(dir, "picture.out", NULL);
  run_cli(&r, "convert", f, "-o", odd, "--to", "png");
  g_assert_cmpint(r.status, ==, 0);
  gsize len = 0;
  char *data = read_all(odd, &len);
  g_assert_cmpmem(data, 8, "\x89PNG\r\n\x1a\n", 8);
  g_free(data);
  run_clear(&r);
  g_free(odd);
  g_free(f);
  rm_rf(dir);
  g_free(dir);
}

/* A failed write must leave an existing output untouched and no temp file behind. */
static void test_cli_convert_unwritable(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("optimus-cli-XXXXXX", NULL);
  char *f = write_tmp(dir, "small.txt", small_fx);
  char *outdir = g_build_filename(dir, "out", NULL);
  g_assert_cmpint(g_mkdir(outdir, 0755), ==, 0);
  char *out = write_tmp(outdir, "graph.svg", "OLD CONTENT");
  Run r;
  /* root ignores directory permissions, so make the write itself fail: a file size limit
   * makes write() fail with EFBIG part-way through the temp file */
  ChildSetup cs = {.fsize_limit = 64};
  run_cli_setup(&r, &cs, "convert", f, "-o", out, NULL);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, out));
  run_clear(&r);
  gsize len = 0;
  char *data = read_all(out, &len);
  g_assert_cmpstr(data, ==, "OLD CONTENT");
  g_free(data);
  if (geteuid() != 0) {
    g_assert_cmpint(g_chmod(outdir, 0555), ==, 0);
    run_cli(&r, "convert", f, "-o", out);
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.err, out));
    run_clear(&r);
    data = read_all(out, &len);
    g_assert_cmpstr(data, ==, "OLD CONTENT");
    g_free(data);
    g_chmod(outdir, 0755);
  }
  GDir *d = g_dir_open(outdir, 0, NULL);
  guint n = 0;
  while (g_dir_read_name(d)) n++;
  g_dir_close(d);
  g_assert_cmpuint(n, ==, 1);
  /* a directory that does not exist */
  char *nowhere = g_build_filename(dir, "no", "such", "dir", "x.dot", NULL);
  run_cli(&r, "convert", f, "-o", nowhere);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "x.dot"));
  run_clear(&r);
  g_free(nowhere);
  g_free(out);
  g_free(outdir);
  g_free(f);
  rm_rf(dir);
  g_free(dir);
}

static char *corpus_dir(void) {
  const char *shared = g_getenv("OPTIMUS_SHARED");
  char *base;
  if (shared && *shared) {
    base = g_strdup(shared);
  } else {
    const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
    base = g_build_filename(root ? root : ".", "..", "shared", NULL);
  }
  char *dir = g_build_filename(base, "corpus", "fx-real", NULL);
  g_free(base);
  if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_free(dir);
    return NULL;
  }
  return dir;
}

static int cmp_path_ptr(const char *const *a, const char *const *b) { return strcmp(*a, *b); }

/* Every corpus dump: info --json gives one object with nodes, check passes. */
static void test_cli_corpus(void) {
  if (!need_cli()) return;
  char *dir = corpus_dir();
  if (!dir) {
    g_test_skip("corpus not found (set OPTIMUS_SHARED to the shared/ folder)");
    return;
  }
  GDir *d = g_dir_open(dir, 0, NULL);
  g_assert_nonnull(d);
  GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
  const char *n;
  while ((n = g_dir_read_name(d)))
    if (g_str_has_suffix(n, ".txt")) g_ptr_array_add(files, g_build_filename(dir, n, NULL));
  g_dir_close(d);
  g_ptr_array_sort(files, (GCompareFunc)cmp_path_ptr);
  g_assert_cmpuint(files->len, >, 0);
  for (guint i = 0; i < files->len; i++) {
    const char *path = files->pdata[i];
    Run r;
    run_cli(&r, "info", "--json", path);
    if (r.status != 0) g_test_message("%s: %s", path, r.err);
    g_assert_cmpint(r.status, ==, 0);
    json_object *o = parse_json(r.out);
    g_assert_cmpint(json_object_get_int(jget(o, "nodes")), >, 0);
    g_assert_cmpint(json_object_array_length(jget(o, "graphs")), >=, 1);
    if (strstr(path, "/07-"))
      g_assert_cmpint(json_object_get_int(jget(o, "nodes")), ==, 70);
    if (strstr(path, "/09-")) g_assert_cmpint(json_object_array_length(jget(o, "graphs")), ==, 3);
    json_object_put(o);
    run_clear(&r);
    run_cli(&r, "check", path);
    if (r.status != 0) g_test_message("%s: %s", path, r.err);
    g_assert_cmpint(r.status, ==, 0);
    g_assert_true(g_str_has_prefix(r.out, "ok: "));
    run_clear(&r);
  }
  g_ptr_array_free(files, TRUE);
  g_free(dir);
}

/* A real dump through every output kind. */
static void test_cli_corpus_convert(void) {
  if (!need_cli()) return;
  char *cdir = corpus_dir();
  if (!cdir) {
    g_test_skip("corpus not found (set OPTIMUS_SHARED to the shared/ folder)");
    return;
  }
  char *src = g_build_filename(cdir, "07-resnet18-symbolic-trace-call-module-oldstyle.txt", NULL);
  g_free(cdir);
  if (!g_file_test(src, G_FILE_TEST_EXISTS)) {
    g_free(src);
    g_test_skip("corpus file 07 not found");
    return;
  }
  char *dir = g_dir_make_tmp("optimus-cli-XXXXXX", NULL);
  static const char *const exts[] = {"svg", "png", "dot", "json", "txt"};
  for (guint i = 0; i < G_N_ELEMENTS(exts); i++) {
    char *name = g_strdup_printf("resnet.%s", exts[i]);
    char *out = g_build_filename(dir, name, NULL);
    Run r;
    run_cli(&r, "convert", src, "-o", out, "--edge-shapes");
    g_assert_cmpint(r.status, ==, 0);
    gsize len = 0;
    char *data = read_all(out, &len);
    g_assert_cmpuint(len, >, 100);
    if (strcmp(exts[i], "dot") == 0) {
      g_assert_true(g_str_has_prefix(data, "digraph"));
      /* one node statement per live node: 70 + output */
      g_assert_cmpuint(count_node_statements(data), ==, 71);
      g_assert_nonnull(strstr(data, "class=\"ox-matmul\""));
      g_assert_nonnull(strstr(data, "class=\"ox-norm\""));
    }
    if (strcmp(exts[i], "json") == 0 || strcmp(exts[i], "txt") == 0) {
      Run r2;
      run_cli(&r2, "info", "--json", out);
      g_assert_cmpint(r2.status, ==, 0);
      json_object *o = parse_json(r2.out);
      g_assert_cmpint(json_object_get_int(jget(o, "nodes")), ==, 70);
      json_object_put(o);
      run_clear(&r2);
    }
    g_free(data);
    run_clear(&r);
    g_free(out);
    g_free(name);
  }
  g_free(src);
  rm_rf(dir);
  g_free(dir);
}


/* ------------------------------------------------------------------ /cli: optimization commands */

static char *fixture(const char *name) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  return root ? g_build_filename(root, "tests", "data", "fixtures", name, NULL) : NULL;
}

/* pre-grad towers: split into 6 pieces, 6 linears of equal shape, cat: batch_linear fires */
static const char towers_fx[] =
  "graph():\n"
  "    %x : Tensor \"f32[4, 48]\" = placeholder[target=x]\n"
  "    %w0 : Tensor \"f32[8, 8]\" = placeholder[target=w0]\n"
  "    %w1 : Tensor \"f32[8, 8]\" = placeholder[target=w1]\n"
  "    %w2 : Tensor \"f32[8, 8]\" = placeholder[target=w2]\n"
  "    %w3 : Tensor \"f32[8, 8]\" = placeholder[target=w3]\n"
  "    %w4 : Tensor \"f32[8, 8]\" = placeholder[target=w4]\n"
  "    %w5 : Tensor \"f32[8, 8]\" = placeholder[target=w5]\n"
  "    %split : [num_users=6] = call_function[target=torch.split](args = (%x, 8), kwargs = {dim: 1})\n"
  "    %g0 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 0), kwargs = {})\n"
  "    %g1 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 1), kwargs = {})\n"
  "    %g2 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 2), kwargs = {})\n"
  "    %g3 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 3), kwargs = {})\n"
  "    %g4 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 4), kwargs = {})\n"
  "    %g5 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 5), kwargs = {})\n"
  "    %l0 : [num_users=1] = call_function[target=torch.nn.functional.linear](args = (%g0, %w0), kwargs = {})\n"
  "    %l1 : [num_users=1] = call_function[target=torch.nn.functional.linear](args = (%g1, %w1), kwargs = {})\n"
  "    %l2 : [num_users=1] = call_function[target=torch.nn.functional.linear](args = (%g2, %w2), kwargs = {})\n"
  "    %l3 : [num_users=1] = call_function[target=torch.nn.functional.linear](args = (%g3, %w3), kwargs = {})\n"
  "    %l4 : [num_users=1] = call_function[target=torch.nn.functional.linear](args = (%g4, %w4), kwargs = {})\n"
  "    %l5 : [num_users=1] = call_function[target=torch.nn.functional.linear](args = (%g5, %w5), kwargs = {})\n"
  "    %cat : [num_users=1] = call_function[target=torch.cat](args = ([%l0, %l1, %l2, %l3, %l4, %l5], 1), kwargs = {})\n"
  "    return cat\n";

/* info of a trace (plain or gzipped): the run's input, checks, records, rejections by reason
 * code, counters and the per-pass table, as text and JSON, counts equal to the trace's own; a
 * damaged trace is a located error; --graph is refused; a dump is still read as a dump. */
static void test_cli_info_trace(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("ox-cli-XXXXXX", NULL);
  char *in = write_tmp(dir, "towers.txt", towers_fx);
  char *out = g_build_filename(dir, "o.txt", NULL), *tr = g_build_filename(dir, "t.json", NULL),
       *gz = g_build_filename(dir, "t.json.gz", NULL);
  Run r;
  run_cli(&r, "optimize", in, "-o", out, "--trace", tr, "--json");
  g_assert_cmpint(r.status, ==, 0);
  json_object *run = parse_json(r.out);
  run_clear(&r);
  run_cli(&r, "optimize", in, "-o", out, "--trace", gz);
  g_assert_cmpint(r.status, ==, 0);
  /* the summary's time as ox_fmt_duration writes it ("0.4 ms", "108 ms", "2.3 s"; a small run
   * printed "0.000 s"), and so does info of a trace, at both ends */
  for (int k = 0; k < 2; k++) {
    char *text = g_strdup_printf("{\"format\":\"optimus-trace\",\"version\":3,\"input\":{\"file\":\"a.txt\",\"hash\":\"1\"},"
                                 "\"seconds\":%s,\n\"steps\":[\n],\n\"names\":[],\"targets\":[],\"metas\":[]}\n",
                                 k ? "12.5" : "0.00042");
    char *mini = write_tmp(dir, "mini.json", text);
    Run ri;
    run_cli(&ri, "info", mini);
    g_assert_cmpint(ri.status, ==, 0);
    g_assert_nonnull(strstr(ri.out, k ? ") in 12.5 s\n" : ") in 0.4 ms\n"));
    g_assert_nonnull(strstr(ri.out, "\ncoverage: no records (no pass tried anything on this graph)\n"));
    run_clear(&ri);
    g_unlink(mini);
    g_free(mini);
    g_free(text);
  }
  g_assert_true(g_regex_match_simple("^.*: [0-9]+ -> [0-9]+ nodes; [0-9]+ applied steps, [0-9]+ rejected attempts, "
                                     "[0-9]+ check failures in ([0-9]\\.[0-9] ms|[0-9]+ ms|[0-9]+\\.[0-9] s)\n",
                                     r.out, 0, 0));
  g_assert_null(strstr(r.out, "in 0.000 s"));
  run_clear(&r);
  const char *const forms[2] = {tr, gz};
  for (int k = 0; k < 2; k++) {
    run_cli(&r, "info", forms[k]);
    g_assert_cmpint(r.status, ==, 0);
    g_assert_true(g_regex_match_simple("\nrecords: [0-9]+ \\([0-9]+ applied, [0-9]+ rejected, [0-9]+ check failures\\) in "
                                       "([0-9]\\.[0-9] ms|[0-9]+ ms|[0-9]+\\.[0-9] s)\n",
                                       r.out, 0, 0));
    run_clear(&r);
    run_cli(&r, "info", "--json", forms[k]);
    g_assert_cmpint(r.status, ==, 0);
    json_object *o = parse_json(r.out);
    g_assert_cmpstr(json_object_get_string(jget(o, "format")), ==, "optimus-trace");
    g_assert_cmpstr(json_object_get_string(jget(jget(o, "input"), "file")), ==, in);
    json_object *sum = jget(o, "summary");
    g_assert_cmpint(json_int(sum, "applied"), ==, json_int(run, "applied"));
    g_assert_cmpint(json_int(sum, "rejected"), ==, json_int(run, "rejected"));
    int64_t by_code = 0;
    json_object_object_foreach(jget(o, "reasons"), code, count) {
      g_assert_true(g_ascii_isupper(code[0]));
      by_code += json_object_get_int64(count);
    }
    g_assert_cmpint(by_code, ==, json_int(sum, "rejected") + json_int(sum, "check_failed"));
    g_assert_cmpint(json_int(jget(o, "counters"), "batch_linear"), ==, 1);
    g_assert_cmpuint(json_object_array_length(jget(o, "passes")), ==, json_object_array_length(jget(run, "passes")));
    g_assert_true(json_object_is_type(jget(jget(o, "cost"), "launches"), json_type_array));
    /* coverage: its rows add up to the records, each row's reasons to its refusals */
    json_object *cov = jget(o, "coverage");
    int64_t tried = 0, applied = 0, linear = -1;
    for (size_t i = 0; i < json_object_array_length(cov); i++) {
      json_object *row = json_object_array_get_idx(cov, i);
      int64_t refused = 0;
      tried += json_int(row, "tried");
      applied += json_int(row, "applied");
      g_assert_cmpint(json_int(row, "tried"), ==,
                      json_int(row, "applied") + json_int(row, "rejected") + json_int(row, "check_failed"));
      json_object *rs = jget(row, "reasons");
      for (size_t j = 0; j < json_object_array_length(rs); j++) refused += json_int(json_object_array_get_idx(rs, j), "count");
      g_assert_cmpint(refused, ==, json_int(row, "rejected") + json_int(row, "check_failed"));
      if (!strcmp(json_object_get_string(jget(row, "pass")), "batch_linear")) linear = json_int(row, "applied");
    }
    g_assert_cmpint(tried, ==, json_int(sum, "steps"));
    g_assert_cmpint(applied, ==, json_int(sum, "applied"));
    g_assert_cmpint(linear, ==, 1);
    json_object_put(o);
    run_clear(&r);
  }
  json_object_put(run);
  run_cli(&r, "info", tr);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, ": an Optimus trace of "));
  g_assert_nonnull(strstr(r.out, "\nrejections by reason: "));
  g_assert_nonnull(strstr(r.out, "\ntime per pass:\n  pass (phase)"));
  g_assert_nonnull(strstr(r.out, "  outside passes (hash, cost, sorting)"));
  g_assert_nonnull(strstr(r.out, "\ncoverage (per pass and rule"));
  g_assert_true(g_regex_match_simple("\n  batch_linear \\(pre\\): [0-9]+ tried, 1 applied", r.out, 0, 0));
  run_clear(&r);
  /* tools/trace-bytes.py (where a trace's bytes go): its shares add up to about the file's size */
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  if (root && g_file_test("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE)) {
    g_autofree char *script = g_build_filename(root, "tools", "trace-bytes.py", NULL);
    const char *argv[] = {"/usr/bin/python3", script, tr, "1000", NULL};
    g_autofree char *py_out = NULL;
    int st = -1;
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &py_out, NULL, &st, NULL));
    g_assert_true(g_spawn_check_wait_status(st, NULL));
    g_assert_nonnull(strstr(py_out, " applied edits\n"));
    g_assert_nonnull(strstr(py_out, " edit add\n"));
    g_assert_nonnull(strstr(py_out, " table or header \"names\"\n"));
    double top_level = 0; /* the step lines' keys and the tables: each byte once */
    gchar **lines = g_strsplit(py_out, "\n", -1);
    for (gchar **l = lines; *l && **l; l++)
      if (strstr(*l, " applied ") || strstr(*l, " rejected ") || strstr(*l, " check_failed ") ||
          strstr(*l, " table or header "))
        top_level += g_ascii_strtod(*l, NULL) * 1e6;
    g_strfreev(lines);
    GStatBuf sb;
    g_assert_cmpint(g_stat(tr, &sb), ==, 0);
    g_assert_cmpfloat(top_level, >, 0.8 * (double)sb.st_size);
    g_assert_cmpfloat(top_level, <, 1.05 * (double)sb.st_size);
  }
  run_cli(&r, "info", tr, "--graph", "2");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "--graph does not apply to a trace"));
  run_clear(&r);
  /* damaged: cut in the middle of its steps */
  gsize len;
  char *text = read_all(tr, &len);
  char *cut = g_build_filename(dir, "cut.json", NULL);
  g_assert_true(g_file_set_contents(cut, text, (gssize)(len / 2), NULL));
  run_cli(&r, "info", cut);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "cut.json:"));
  g_assert_nonnull(strstr(r.err, "error:"));
  run_clear(&r);
  /* the dump itself is still described as a graph */
  run_cli(&r, "info", in);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_null(strstr(r.out, "Optimus trace"));
  run_clear(&r);
  g_free(text);
  g_free(cut);
  g_free(in);
  g_free(out);
  g_free(tr);
  g_free(gz);
  rm_rf(dir);
  g_free(dir);
}

/* Big inputs are mapped (ox_map_file): a record's weights stay spans of the file's text. If
 * another program truncates the file meanwhile, the next touch of a lost page raises SIGBUS;
 * the CLI says so, naming the file, and exits 1 without writing. The truncation itself is
 * tested in /engine/util/map-file; here the signal comes while `diff BIG -` waits on stdin. */
static void test_cli_sigbus(void) {
  if (!need_cli()) return;
  char *src = fixture("cnn.json");
  if (!src) {
    g_test_skip("OPTIMUS_SOURCE_ROOT not set");
    return;
  }
  gchar *text = NULL;
  gsize tlen = 0;
  g_assert_true(g_file_get_contents(src, &text, &tlen, NULL));
  GString *big = g_string_new_len(text, (gssize)tlen);
  g_string_append_c(big, '\n');
  while (big->len < ((gsize)17 << 20)) g_string_append_c(big, ' '); /* past the 1 MiB of mapping */
  g_string_append_c(big, '\n');
  char *dir = g_dir_make_tmp("ox-cli-XXXXXX", NULL);
  char *path = g_build_filename(dir, "big.json", NULL);
  g_assert_true(g_file_set_contents(path, big->str, (gssize)big->len, NULL));
  const char *argv[] = {cli_path(), "diff", path, "-", NULL};
  GPid pid;
  int in_fd = -1, err_fd = -1;
  GError *error = NULL;
  g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid,
                                         &in_fd, NULL, &err_fd, &error));
  g_assert_no_error(error);
  /* wait (20 s at most) until it reads standard input: the first file is loaded by then */
  char *sys_path = g_strdup_printf("/proc/%d/syscall", (int)pid);
  char want[16];
  snprintf(want, sizeof want, "%ld ", (long)SYS_read);
  bool reading = false;
  for (int i = 0; i < 2000 && !reading; i++) {
    gchar *sc = NULL;
    if (g_file_get_contents(sys_path, &sc, NULL, NULL)) reading = g_str_has_prefix(sc, want);
    g_free(sc);
    if (!reading) g_usleep(10000);
  }
  if (!reading) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    g_error("optimus diff did not reach its read of standard input within 20 s");
  }
  kill(pid, SIGBUS);
  int status = 0;
  waitpid(pid, &status, 0);
  g_spawn_close_pid(pid);
  GString *err = g_string_new(NULL);
  char buf[4096];
  ssize_t got;
  while ((got = read(err_fd, buf, sizeof buf)) > 0) g_string_append_len(err, buf, got);
  close(err_fd);
  close(in_fd);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 1);
  char *expect = g_strdup_printf("optimus: an input file shrank while it was being read (another program truncated "
                                 "it): %s; stopped, nothing written\n",
                                 path);
  g_assert_cmpstr(err->str, ==, expect);
  g_free(expect);
  g_string_free(err, TRUE);
  g_free(sys_path);
  g_string_free(big, TRUE);
  g_free(text);
  g_free(src);
  g_free(path);
  rm_rf(dir);
  g_free(dir);
}

/* info summarizes a document's record: tensors per section, recorded values, fill recipes (text
 * and JSON); a document without one says nothing of it (JSON: null). */
static void test_cli_info_record(void) {
  if (!need_cli()) return;
  char *rn = fixture("resnet18.json"), *cnn = fixture("cnn.json");
  if (!rn) {
    g_test_skip("OPTIMUS_SOURCE_ROOT not set");
    return;
  }
  Run r;
  run_cli(&r, "info", rn);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "record: 1 input, 122 params, 1 output; 11703204 values (102 tensors as fill recipes)\n"));
  run_clear(&r);
  run_cli(&r, "info", "--json", cnn);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "\"record\": {\"inputs\": 1, \"params\": 18, \"outputs\": 2, \"values\": 3248, \"fills\": 0}"));
  run_clear(&r);
  char *dir = g_dir_make_tmp("ox-cli-XXXXXX", NULL);
  char *txt = write_tmp(dir, "t.txt", towers_fx);
  run_cli(&r, "info", txt);
  g_assert_null(strstr(r.out, "record"));
  run_clear(&r);
  run_cli(&r, "info", "--json", txt);
  g_assert_nonnull(strstr(r.out, "\"record\": null"));
  run_clear(&r);
  g_free(txt);
  rm_rf(dir);
  g_free(dir);
  g_free(rn);
  g_free(cnn);
}

static void test_cli_verify(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  char *fx = fixture("mlp.json");
  Run r;
  run_cli(&r, "verify", fx);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "verifier: ok"));
  g_assert_nonnull(strstr(r.out, "numeric: ok (2 outputs"));
  run_clear(&r);
  run_cli(&r, "verify", fx, "--json");
  g_assert_cmpint(r.status, ==, 0);
  json_object *o = parse_json(r.out);
  g_assert_cmpstr(json_object_get_string(jget(jget(o, "numeric"), "status")), ==, "passed");
  json_object_put(o);
  run_clear(&r);
  /* a tampered recorded output is a mismatch: exit 1 */
  char *text = NULL;
  g_assert_true(g_file_get_contents(fx, &text, NULL, NULL));
  char *outs = strstr(text, "\"outputs\":");
  g_assert_nonnull(outs);
  char *data = strstr(outs, "\"data\":");
  g_assert_nonnull(data);
  data = strchr(data, '[') + 1;
  /* replace the first recorded number by a far-off value */
  char *comma = strchr(data, ',');
  GString *bad = g_string_new_len(text, data - text);
  g_string_append(bad, "1000.5");
  g_string_append(bad, comma);
  char *badp = write_tmp(dir, "bad.json", bad->str);
  run_cli(&r, "verify", badp);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.out, "MISMATCH"));
  g_assert_nonnull(strstr(r.out, "FAIL"));
  run_clear(&r);
  /* an output that is 0 everywhere passes, flagged as a weak check (a relu of negative inputs;
     torchvision's ViT without weights ends in a zero-initialized head) */
  static const char zeros_doc[] =
      "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"name\": \"graph\", \"nodes\": ["
      "{\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\", \"args\": [], \"kwargs\": {}},"
      "{\"name\": \"relu\", \"op\": \"call_function\", \"target\": \"torch.relu\", \"args\": [{\"node\": \"x\"}], \"kwargs\": {}},"
      "{\"name\": \"output\", \"op\": \"output\", \"target\": \"output\", \"args\": [{\"node\": \"relu\"}], \"kwargs\": {}}]}],"
      "\"record\": {\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [3], \"data\": [-1.5, -2.0, -0.25]}},"
      "\"outputs\": [{\"dtype\": \"f32\", \"shape\": [3], \"data\": [0.0, 0.0, 0.0]}]}}";
  char *zp = write_tmp(dir, "zeros.json", zeros_doc);
  run_cli(&r, "verify", zp);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "output 0: ok"));
  g_assert_nonnull(strstr(r.out, "weak: every recorded value is 0"));
  g_assert_nonnull(strstr(r.out, "numeric: ok (1 output against the recorded values; 1 of them all zeros: a weak check)"));
  run_clear(&r);
  run_cli(&r, "verify", zp, "--json");
  o = parse_json(r.out);
  json_object *o0 = json_object_array_get_idx(jget(jget(o, "numeric"), "outputs"), 0);
  g_assert_true(json_object_get_boolean(jget(o0, "pass")));
  g_assert_true(g_str_has_prefix(json_object_get_string(jget(o0, "note")), "weak:"));
  json_object_put(o);
  run_clear(&r);
  /* an output that is NaN everywhere agrees with NaN: a weak check too (a log of negatives here;
     a causal mask over left padding in a real model); a partly NaN one gets a plain note */
  static const char nan_doc[] =
      "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"name\": \"graph\", \"nodes\": ["
      "{\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\", \"args\": [], \"kwargs\": {}},"
      "{\"name\": \"log\", \"op\": \"call_function\", \"target\": \"torch.log\", \"args\": [{\"node\": \"x\"}], \"kwargs\": {}},"
      "{\"name\": \"output\", \"op\": \"output\", \"target\": \"output\", \"args\": [{\"node\": \"log\"}], \"kwargs\": {}}]}],"
      "\"record\": {\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"data\": [-1.0, -2.0]}},"
      "\"outputs\": [{\"dtype\": \"f32\", \"shape\": [2], \"data\": [\"nan\", \"nan\"]}]}}";
  char *np_ = write_tmp(dir, "nan.json", nan_doc);
  run_cli(&r, "verify", np_);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "weak: every recorded value is NaN or infinite"));
  g_assert_nonnull(strstr(r.out, "numeric: ok (1 output against the recorded values; 1 of them all NaN: a weak check)"));
  run_clear(&r);
  char *half_doc = replace_once(nan_doc, "[-1.0, -2.0]}},\"outputs\": [{\"dtype\": \"f32\", \"shape\": [2], \"data\": [\"nan\", \"nan\"]",
                                "[-1.0, 1.0]}},\"outputs\": [{\"dtype\": \"f32\", \"shape\": [2], \"data\": [\"nan\", 0.0]");
  char *hp = write_tmp(dir, "halfnan.json", half_doc);
  run_cli(&r, "verify", hp);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "note: 1 of 2 recorded values are NaN or infinite"));
  g_assert_null(strstr(r.out, "weak"));
  run_clear(&r);
  g_free(half_doc);
  g_free(hp);
  g_free(np_);
  /* the same graph with a nonzero output carries no such note */
  char *nz_doc = replace_once(zeros_doc, "-0.25]}},\"outputs\": [{\"dtype\": \"f32\", \"shape\": [3], \"data\": [0.0, 0.0, 0.0]",
                              "0.25]}},\"outputs\": [{\"dtype\": \"f32\", \"shape\": [3], \"data\": [0.0, 0.0, 0.25]");
  char *nzp = write_tmp(dir, "nonzero.json", nz_doc);
  run_cli(&r, "verify", nzp);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_null(strstr(r.out, "weak"));
  g_assert_nonnull(strstr(r.out, "numeric: ok (1 output against the recorded values)\n"));
  run_clear(&r);
  g_free(nz_doc);
  g_free(nzp);
  g_free(zp);
  /* no record: the numeric comparison is reported as not run, never as passed */
  char *plain = write_tmp(dir, "plain.txt", small_fx);
  run_cli(&r, "verify", plain);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "numeric: not run"));
  run_clear(&r);
  g_string_free(bad, TRUE);
  g_free(text);
  g_free(badp);
  g_free(plain);
  g_free(fx);
  rm_rf(dir);
  g_free(dir);
}

static void test_cli_optimize_replay_explain(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  char *in = write_tmp(dir, "towers.txt", towers_fx);
  char *out = g_build_filename(dir, "out.txt", NULL);
  char *trace = g_build_filename(dir, "trace.json", NULL);
  char *replayed = g_build_filename(dir, "replayed.txt", NULL);
  Run r;
  run_cli(&r, "optimize", in, "-o", out, "--trace", trace, "--json");
  g_assert_cmpint(r.status, ==, 0);
  json_object *o = parse_json(r.out);
  g_assert_cmpint(json_object_get_int(jget(o, "check_failures")), ==, 0);
  g_assert_cmpint(json_object_get_int(jget(o, "applied")), >=, 1);
  json_object *counters = jget(o, "counters");
  g_assert_cmpint(json_object_get_int(jget(counters, "batch_linear")), ==, 1);
  g_assert_nonnull(jget(o, "rejected"));
  g_assert_nonnull(jget(o, "seconds"));
  /* the per-pass table: batch_linear did the one fusion; the counts add up to the summary's */
  json_object *passes = jget(o, "passes");
  g_assert_true(json_object_is_type(passes, json_type_array));
  g_assert_cmpuint(json_object_array_length(passes), >, 5);
  int64_t sum_applied = 0, sum_rejected = 0;
  double sum_seconds = 0;
  bool saw_linear = false;
  for (size_t i = 0; i < json_object_array_length(passes); i++) {
    json_object *e = json_object_array_get_idx(passes, i);
    const char *name = json_object_get_string(jget(e, "pass"));
    g_assert_cmpstr(json_object_get_string(jget(e, "phase")), ==, "pre");
    g_assert_cmpint(json_object_get_int(jget(e, "runs")), ==, 1);
    g_assert_cmpfloat(json_object_get_double(jget(e, "seconds")), >=, 0);
    sum_seconds += json_object_get_double(jget(e, "seconds"));
    sum_applied += json_object_get_int64(jget(e, "applied"));
    sum_rejected += json_object_get_int64(jget(e, "rejected"));
    g_assert_cmpint(json_object_get_int(jget(e, "check_failed")), ==, 0);
    if (strcmp(name, "batch_linear") == 0) {
      saw_linear = true;
      g_assert_cmpint(json_object_get_int(jget(e, "applied")), ==, 1);
    }
  }
  g_assert_true(saw_linear);
  g_assert_cmpint(sum_applied, ==, json_object_get_int64(jget(o, "applied")));
  g_assert_cmpint(sum_rejected, ==, json_object_get_int64(jget(o, "rejected")));
  g_assert_cmpfloat(sum_seconds, <=, json_object_get_double(jget(o, "seconds")) + 1e-5);
  json_object_put(o);
  run_clear(&r);
  /* --profile: the table after the summary, its header, batch_linear's row with its step counts */
  run_cli(&r, "optimize", in, "-o", out, "--profile");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "pass (phase)"));
  g_assert_nonnull(strstr(r.out, "applied rejected failed"));
  g_assert_nonnull(strstr(r.out, "  outside passes (hash, cost, sorting)"));
  GRegex *row = g_regex_new("^  batch_linear \\(pre\\) +[0-9]+\\.[0-9]{2} +[0-9.]+% +1 +[0-9]+ +0$",
                            G_REGEX_MULTILINE, 0, NULL);
  if (!g_regex_match(row, r.out, 0, NULL)) g_test_message("%s", r.out);
  g_assert_true(g_regex_match(row, r.out, 0, NULL));
  g_regex_unref(row);
  run_clear(&r);
  /* replay of every step rebuilds the optimized graph exactly */
  run_cli(&r, "replay", in, trace, "-o", replayed);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  gsize la, lb;
  char *a = read_all(out, &la), *b = read_all(replayed, &lb);
  g_assert_cmpstr(a, ==, b);
  g_free(a);
  g_free(b);
  /* the same run with its trace gzipped (a .gz name) replays from it to the same graph */
  char *tracegz = g_build_filename(dir, "trace.json.gz", NULL), *replayedgz = g_build_filename(dir, "replayed-gz.txt", NULL);
  run_cli(&r, "optimize", in, "-o", out, "--trace", tracegz);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  gsize lz;
  char *z = read_all(tracegz, &lz);
  g_assert_cmpuint(lz, >, 2);
  g_assert_cmpint((unsigned char)z[0], ==, 0x1f);
  g_assert_cmpint((unsigned char)z[1], ==, 0x8b);
  g_free(z);
  run_cli(&r, "replay", in, tracegz, "-o", replayedgz);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  a = read_all(out, &la);
  b = read_all(replayedgz, &lb);
  g_assert_cmpstr(a, ==, b);
  g_free(a);
  g_free(b);
  g_remove(tracegz);
  g_remove(replayedgz);
  g_free(tracegz);
  g_free(replayedgz);
  /* replay of step 0 is the input, as the FX writer prints it */
  run_cli(&r, "replay", in, trace, "--step", "0", "-o", "-", "--to", "fx");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "%l0 :"));
  run_clear(&r);
  /* a trace on another graph is refused */
  char *other = write_tmp(dir, "other.txt", small_fx);
  run_cli(&r, "replay", other, trace, "-o", replayed);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "another graph"));
  run_clear(&r);
  /* explain: the linears were fused by batch_linear */
  run_cli(&r, "explain", in, "--node", "l3", "--trace", trace);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "batch_linear"));
  g_assert_nonnull(strstr(r.out, "applied"));
  run_clear(&r);
  /* explain without a trace runs the pipeline itself */
  run_cli(&r, "explain", in, "--node", "l3", "--json");
  g_assert_cmpint(r.status, ==, 0);
  o = parse_json(r.out);
  g_assert_cmpint(json_object_array_length(jget(o, "steps")), >=, 1);
  json_object_put(o);
  run_clear(&r);
  /* why not: with min_fuse_set_size 7 the six linears are too few */
  run_cli(&r, "explain", in, "--node", "l3", "--passes", "batch_linear", "--option",
          "batch_linear.min_fuse_set_size=7");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "min_fuse_set_size 7"));
  run_clear(&r);
  run_cli(&r, "explain", in, "--node", "nope");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "no node named 'nope'"));
  run_clear(&r);
  /* usage errors */
  run_cli(&r, "optimize", in, "-o", out, "--passes", "no_such_pass");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "unknown pass 'no_such_pass'"));
  run_clear(&r);
  run_cli(&r, "optimize", in, "-o", out, "--checks", "speed");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "optimize", in, "-o", out, "--option", "batch_linear.nope=1");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "replay", in, "-o", out);
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "missing TRACE"));
  run_clear(&r);
  /* a config file in PyTorch's shape: an empty one runs nothing */
  char *cfg = write_tmp(dir, "cfg.json", "{\"pre_grad_fusion_options\": {}}");
  run_cli(&r, "optimize", in, "-o", out, "--config", cfg, "--json");
  g_assert_cmpint(r.status, ==, 0);
  o = parse_json(r.out);
  g_assert_cmpint(json_object_get_int(jget(o, "applied")), ==, 0);
  json_object_put(o);
  run_clear(&r);
  char *badcfg = write_tmp(dir, "bad.json", "{\"pre_grad_fusion_options\": {\"batch_linear\": {\"min_fuse_set_size\": true}}}");
  run_cli(&r, "optimize", in, "-o", out, "--config", badcfg);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "bad.json:1:"));
  run_clear(&r);
  run_cli(&r, "optimize", "--list-passes");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "batch_linear"));
  g_assert_nonnull(strstr(r.out, "split_cat_pass"));
  run_clear(&r);
  g_free(cfg);
  g_free(badcfg);
  g_free(other);
  g_free(in);
  g_free(out);
  g_free(trace);
  g_free(replayed);
  rm_rf(dir);
  g_free(dir);
}

static void test_cli_input_shape(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  char *in = write_tmp(dir, "small.txt", small_fx);
  Run r;
  run_cli(&r, "convert", in, "--input-shape", "x=16,256", "-o", "-", "--to", "fx");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "%x : Tensor \"f32[16, 256]\""));
  g_assert_nonnull(strstr(r.out, "%relu : Tensor \"f32[16, 256]\""));
  g_assert_nonnull(strstr(r.out, "%add_1 : Tensor \"f32[16, 256]\""));
  run_clear(&r);
  run_cli(&r, "convert", in, "--input-shape", "x=bf16:2,3", "-o", "-", "--to", "fx");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "%add : Tensor \"bf16[2, 3]\""));
  run_clear(&r);
  run_cli(&r, "info", in, "--input-shape", "y=4");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "no placeholder or get_attr named y"));
  run_clear(&r);
  run_cli(&r, "info", in, "--input-shape", "x=4,a");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "'a'"));
  run_clear(&r);
  g_free(in);
  rm_rf(dir);
  g_free(dir);
}

/* A recommendation-style graph: x split into towers of linear -> layer_norm -> relu, cat,
 * split again into a second layer of towers, cat. annotated: every node with its shape, as
 * an exported dump has; else a print(graph) paste with none. */
static char *paste_towers_fx(bool annotated) {
  enum { T = 6, D = 16 };
  GString *s = g_string_new("graph():\n");
#define ANN(t) (annotated ? " : Tensor \"" t "\"" : " :")
  char f2[64], f1[64], dd[64];
  g_snprintf(f2, sizeof f2, "f32[8, %d]", T * D);
  g_snprintf(f1, sizeof f1, "f32[8, %d]", D);
  g_snprintf(dd, sizeof dd, "f32[%d, %d]", D, D);
  g_string_append_printf(s, "    %%x%s%s%s[num_users=1] = placeholder[target=x]\n", annotated ? " : Tensor \"" : " :",
                         annotated ? f2 : "", annotated ? "\"" : "");
  const char *in = "x";
  for (int layer = 0; layer < 2; layer++) {
    g_string_append_printf(s, "    %%split_%d :[num_users=%d] = call_function[target=torch.split](args = (%%%s, %d), kwargs = {dim: 1})\n",
                           layer, T, in, D);
    for (int t = 0; t < T; t++) {
      const char *ann1 = annotated ? f1 : NULL;
      char p[64];
      g_snprintf(p, sizeof p, "l%d_t%d", layer, t);
      g_string_append_printf(s, "    %%%s_w%s%s%s[num_users=1] = get_attr[target=%s.w]\n", p, annotated ? " : Tensor \"" : " :",
                             annotated ? dd : "", annotated ? "\"" : "", p);
      g_string_append_printf(s, "    %%%s_b%s%s%s[num_users=1] = get_attr[target=%s.b]\n", p, annotated ? " : Tensor \"f32[" : " :",
                             annotated ? "16]" : "", annotated ? "\"" : "", p);
      g_string_append_printf(s, "    %%%s_nw%s%s%s[num_users=1] = get_attr[target=%s.nw]\n", p, annotated ? " : Tensor \"f32[" : " :",
                             annotated ? "16]" : "", annotated ? "\"" : "", p);
      g_string_append_printf(s, "    %%%s_g%s%s%s[num_users=1] = call_function[target=operator.getitem](args = (%%split_%d, %d), kwargs = {})\n",
                             p, ann1 ? " : Tensor \"" : " :", ann1 ? ann1 : "", ann1 ? "\"" : "", layer, t);
      g_string_append_printf(s, "    %%%s_lin%s%s%s[num_users=1] = call_function[target=torch.nn.functional.linear](args = (%%%s_g, %%%s_w, %%%s_b), kwargs = {})\n",
                             p, ann1 ? " : Tensor \"" : " :", ann1 ? ann1 : "", ann1 ? "\"" : "", p, p, p);
      g_string_append_printf(s, "    %%%s_ln%s%s%s[num_users=1] = call_function[target=torch.nn.functional.layer_norm](args = (%%%s_lin, (16,)), kwargs = {weight: %%%s_nw})\n",
                             p, ann1 ? " : Tensor \"" : " :", ann1 ? ann1 : "", ann1 ? "\"" : "", p, p);
      g_string_append_printf(s, "    %%%s_act%s%s%s[num_users=1] = call_function[target=torch.relu](args = (%%%s_ln,), kwargs = {})\n",
                             p, ann1 ? " : Tensor \"" : " :", ann1 ? ann1 : "", ann1 ? "\"" : "", p);
    }
    g_string_append_printf(s, "    %%cat_%d%s%s%s[num_users=1] = call_function[target=torch.cat](args = ([", layer,
                           annotated ? " : Tensor \"" : " :", annotated ? f2 : "", annotated ? "\"" : "");
    for (int t = 0; t < T; t++) g_string_append_printf(s, "%s%%l%d_t%d_act", t ? ", " : "", layer, t);
    g_string_append(s, "],), kwargs = {dim: 1})\n");
    in = layer == 0 ? "cat_0" : "cat_1";
  }
  g_string_append(s, "    return cat_1\n");
#undef ANN
  return g_string_free(s, FALSE);
}

static json_object *optimize_counters(const char *in, const char *out, const char *const *extra, Run *r) {
  char *args[16];
  int n = 0;
  args[n++] = (char *)"optimize";
  args[n++] = (char *)in;
  args[n++] = (char *)"-o";
  args[n++] = (char *)out;
  args[n++] = (char *)"--json";
  for (int i = 0; extra && extra[i]; i++) args[n++] = (char *)extra[i];
  args[n] = NULL;
  run_cli_setup(r, NULL, args[0], args[1], args[2], args[3], args[4], n > 5 ? args[5] : NULL, n > 6 ? args[6] : NULL,
                n > 7 ? args[7] : NULL, n > 8 ? args[8] : NULL, NULL);
  g_assert_cmpint(r->status, ==, 0);
  json_object *j = parse_json(r->out);
  json_object *c = NULL;
  g_assert_true(json_object_object_get_ex(j, "counters", &c));
  json_object_get(c);
  json_object_put(j);
  return c;
}

static gint cmp_strp(gconstpointer a, gconstpointer b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The counters as "k=v k=v" in key order (json-c keeps insertion order). */
static char *counters_text(json_object *c) {
  GPtrArray *keys = g_ptr_array_new();
  json_object_object_foreach(c, k, v) {
    (void)v;
    g_ptr_array_add(keys, k);
  }
  g_ptr_array_sort(keys, cmp_strp);
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < keys->len; i++) {
    json_object *v = NULL;
    json_object_object_get_ex(c, keys->pdata[i], &v);
    g_string_append_printf(s, "%s%s=%d", i ? " " : "", (const char *)keys->pdata[i], json_object_get_int(v));
  }
  g_ptr_array_free(keys, TRUE);
  return g_string_free(s, FALSE);
}

/* A print(graph) paste has no parameter shapes; with --input-shape for x alone the parameters
 * are inferred from their uses and the paste batches exactly like the annotated dump. */
static void test_cli_paste_batches(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  char *ann_text = paste_towers_fx(true), *paste_text = paste_towers_fx(false);
  char *ann = write_tmp(dir, "annotated.txt", ann_text), *paste = write_tmp(dir, "paste.txt", paste_text);
  char *out = g_build_filename(dir, "o.txt", NULL);
  Run r;
  json_object *want = optimize_counters(ann, out, NULL, &r);
  run_clear(&r);
  json_object *bare = optimize_counters(paste, out, NULL, &r);
  run_clear(&r);
  const char *ex[] = {"--input-shape", "x=8,96", NULL};
  json_object *got = optimize_counters(paste, out, ex, &r);
  /* the notes say what was inferred */
  g_assert_nonnull(strstr(r.err, "l0_t0_w: f32[16, 16] inferred from l0_t0_lin (in: l0_t0_g f32[8, 16]; out: "
                                 "l0_t0_ln's normalized_shape (16,))"));
  g_assert_nonnull(strstr(r.err, "shapes: 36 parameters inferred from their uses"));
  run_clear(&r);
  char *wanted = counters_text(want), *bare_t = counters_text(bare), *got_t = counters_text(got);
  g_test_message("annotated: %s", wanted);
  g_test_message("paste alone: %s", bare_t);
  json_object *bl = NULL;
  g_assert_true(json_object_object_get_ex(want, "batch_linear", &bl));
  g_assert_cmpint(json_object_get_int(bl), >, 0);
  g_assert_false(json_object_object_get_ex(bare, "batch_linear", NULL)); /* nothing batches without shapes */
  g_assert_cmpstr(got_t, ==, wanted);
  g_free(bare_t);
  g_free(got_t);
  json_object_put(want);
  json_object_put(bare);
  json_object_put(got);

  /* --shapes: the same from a shapes file, a located error for a bad one */
  char *shapes = write_tmp(dir, "s.json", "{\"x\": \"f32[8, 96]\"}");
  const char *ex2[] = {"--shapes", shapes, NULL};
  json_object *via_file = optimize_counters(paste, out, ex2, &r);
  run_clear(&r);
  char *file_t = counters_text(via_file);
  g_assert_cmpstr(file_t, ==, wanted);
  g_free(file_t);
  g_free(wanted);
  json_object_put(via_file);
  char *bad = write_tmp(dir, "bad.json", "{\"x\": [8,\n -96]}");
  run_cli(&r, "info", paste, "--shapes", bad);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "bad.json:2:2: error: x[1]: a size cannot be negative (-96)"));
  run_clear(&r);
  run_cli(&r, "info", paste, "--shapes", bad, "--shapes", shapes);
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  g_free(ann_text);
  g_free(paste_text);
  g_free(ann);
  g_free(paste);
  g_free(out);
  g_free(shapes);
  g_free(bad);
  rm_rf(dir);
  g_free(dir);
}

/* A step whose region reads x.shape[0] (traced as getattr + getitem): the numeric check puts
 * the int the shapes fix into the region instead of skipping for want of a value. */
static void test_cli_numeric_scalar_input(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  const char *fx =
    "graph():\n"
    "    %x : Tensor \"f32[4, 3, 8]\"[num_users=2] = placeholder[target=x]\n"
    "    %getattr_1 :[num_users=1] = call_function[target=builtins.getattr](args = (%x, shape), kwargs = {})\n"
    "    %getitem : Sym(4)[num_users=1] = call_function[target=operator.getitem](args = (%getattr_1, 0), kwargs = {})\n"
    "    %reshape : Tensor \"f32[4, 24]\"[num_users=1] = call_method[target=reshape](args = (%x, %getitem, -1), kwargs = {})\n"
    "    %relu : Tensor \"f32[4, 24]\"[num_users=1] = call_function[target=torch.relu](args = (%reshape,), kwargs = {})\n"
    "    return relu\n";
  char *in = write_tmp(dir, "s.txt", fx);
  char *out = g_build_filename(dir, "o.txt", NULL), *trace = g_build_filename(dir, "t.json", NULL);
  Run r;
  run_cli(&r, "optimize", in, "-o", out, "--trace", trace, "--checks", "all");
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  gchar *text = NULL;
  g_assert_true(g_file_get_contents(trace, &text, NULL, NULL));
  json_object *t = parse_json(text), *steps = NULL;
  g_assert_true(json_object_object_get_ex(t, "steps", &steps));
  guint numeric = 0;
  for (size_t i = 0; i < json_object_array_length(steps); i++) {
    json_object *st = json_object_array_get_idx(steps, i), *kind, *checks, *num, *status;
    if (!json_object_object_get_ex(st, "kind", &kind) || strcmp(json_object_get_string(kind), "applied")) continue;
    g_assert_true(json_object_object_get_ex(st, "checks", &checks));
    g_assert_true(json_object_object_get_ex(checks, "numeric", &num));
    g_assert_true(json_object_object_get_ex(num, "status", &status));
    json_object *detail = NULL;
    json_object_object_get_ex(num, "detail", &detail);
    g_test_message("numeric: %s (%s)", json_object_get_string(status), detail ? json_object_get_string(detail) : "");
    g_assert_cmpstr(json_object_get_string(status), ==, "passed");
    numeric++;
  }
  g_assert_cmpuint(numeric, >, 0);
  json_object_put(t);
  g_free(text);
  g_free(in);
  g_free(out);
  g_free(trace);
  rm_rf(dir);
  g_free(dir);
}

static void test_cli_views(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  /* a chain of 60 nodes with a drawing budget of 30 */
  GString *fx = g_string_new("graph():\n    %x : [num_users=1] = placeholder[target=x]\n");
  const char *prev = "x";
  char name[32];
  for (int i = 0; i < 60; i++) {
    snprintf(name, sizeof name, "layers_%d_relu", i);
    g_string_append_printf(fx, "    %%%s : [num_users=1] = call_function[target=torch.relu](args = (%%%s,), kwargs = {})\n",
                           name, prev);
    prev = g_intern_string(name);
  }
  g_string_append_printf(fx, "    return %s\n", prev);
  char *in = write_tmp(dir, "chain.txt", fx->str);
  char *svg = g_build_filename(dir, "v.svg", NULL);
  Run r;
  run_cli(&r, "convert", in, "-o", svg, "--max-nodes", "30");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "62 nodes is over the drawing budget of 30"));
  g_assert_false(g_file_test(svg, G_FILE_TEST_EXISTS));
  run_clear(&r);
  /* a focus view fits: radius chosen to fit the budget */
  run_cli(&r, "convert", in, "--focus", "layers_30_relu", "--max-nodes", "30", "--to", "dot", "-o", "-");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.err, "radius 4: 9 nodes"));
  g_assert_cmpuint(count_substr(r.out, "label=<"), ==, 9);
  run_clear(&r);
  run_cli(&r, "convert", in, "--focus", "layers_30_relu", "--radius", "1", "-o", svg);
  g_assert_cmpint(r.status, ==, 0);
  gsize len;
  char *data = read_all(svg, &len);
  g_assert_nonnull(strstr(data, "<svg"));
  g_assert_nonnull(strstr(data, "layers_29_relu"));
  g_assert_null(strstr(data, "layers_27_relu"));
  g_free(data);
  run_clear(&r);
  run_cli(&r, "convert", in, "--focus", "nope", "-o", svg);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "no node named 'nope'"));
  run_clear(&r);
  /* the overview collapses the 60 layers into one cluster; --open expands it */
  run_cli(&r, "convert", in, "--overview", "--to", "dot", "-o", "-");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "layers [60 nodes]"));
  g_assert_cmpuint(count_substr(r.out, "label=<"), ==, 3);
  run_clear(&r);
  /* 60 children are more than a cluster shows (OX_VIEW_FAN): they come in two chunks */
  run_cli(&r, "convert", in, "--overview", "--open", "layers", "--to", "dot", "-o", "-");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "layers.0 \xe2\x80\xa6 layers.29 [30 nodes]"));
  g_assert_nonnull(strstr(r.out, "layers.30 \xe2\x80\xa6 layers.59 [30 nodes]"));
  g_assert_null(strstr(r.out, "layers.59 [1 nodes]"));
  run_clear(&r);
  run_cli(&r, "convert", in, "--overview", "--open", "layers.~2", "--to", "dot", "-o", "-");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "layers.59 [1 nodes]"));
  g_assert_nonnull(strstr(r.out, "layers.0 \xe2\x80\xa6 layers.29 [30 nodes]"));
  run_clear(&r);
  run_cli(&r, "convert", in, "--overview", "--open", "towers", "--to", "dot", "-o", "-");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "no cluster 'towers'"));
  run_clear(&r);
  g_string_free(fx, TRUE);
  g_free(in);
  g_free(svg);
  rm_rf(dir);
  g_free(dir);
}

/* Layouts of drawings: dot in the helper or our layered layout, the note saying which, folded
 * parameters, laid-out DOT, and the options' errors. The ViT of the corpus (whose shape kept dot
 * busy for minutes when its hub edges were real edges) draws in well under its budget. */
static void test_cli_layouts(void) {
  if (!need_cli()) return;
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  char *ex = g_build_filename(root, "data", "examples", "recsys-towers.txt", NULL);
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  char *svg = g_build_filename(dir, "x.svg", NULL), *dot = g_build_filename(dir, "x.dot", NULL);
  Run r;
  /* our own layout, said so; parameters drawn in their consumers */
  run_cli(&r, "convert", ex, "-o", svg, "--layout", "layered");
  g_assert_cmpint(r.status, ==, 0);
  gsize len;
  char *data = read_all(svg, &len);
  g_assert_nonnull(strstr(data, "<svg"));
  g_assert_nonnull(strstr(data, "+2 params"));
  g_assert_null(strstr(data, "layers_0_towers_0_linear0_weight"));
  g_free(data);
  run_clear(&r);
  /* --params draws them */
  run_cli(&r, "convert", ex, "-o", svg, "--layout", "layered", "--params");
  g_assert_cmpint(r.status, ==, 0);
  data = read_all(svg, &len);
  g_assert_nonnull(strstr(data, "layers_0_towers_0_linear0_weight"));
  g_assert_null(strstr(data, "+2 params"));
  g_free(data);
  run_clear(&r);
  /* dot within the budget: no note */
  run_cli(&r, "convert", ex, "-o", svg, "--layout-budget", "30");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_null(strstr(r.err, "note:"));
  run_clear(&r);
  /* a laid-out DOT when a layout is asked for, a plain one otherwise */
  run_cli(&r, "convert", ex, "-o", dot, "--layout", "layered");
  g_assert_cmpint(r.status, ==, 0);
  data = read_all(dot, &len);
  g_assert_nonnull(strstr(data, "pos=\""));
  g_assert_nonnull(strstr(data, "bb=\""));
  g_free(data);
  run_clear(&r);
  run_cli(&r, "convert", ex, "-o", dot);
  g_assert_cmpint(r.status, ==, 0);
  data = read_all(dot, &len);
  g_assert_null(strstr(data, "pos=\""));
  g_free(data);
  run_clear(&r);
  /* bad options */
  run_cli(&r, "convert", ex, "-o", svg, "--layout", "neato");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "--layout is auto, dot or layered"));
  run_clear(&r);
  run_cli(&r, "convert", ex, "-o", svg, "--layout-budget", "-1");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  /* the corpus's ViT: drawn, whichever layout */
  char *vit = test_corpus_file_or_skip(24);
  if (vit) {
    run_cli(&r, "convert", vit, "-o", svg, "--layout-budget", "20");
    g_assert_cmpint(r.status, ==, 0);
    data = read_all(svg, &len);
    g_assert_nonnull(strstr(data, "<svg"));
    g_free(data);
    run_clear(&r);
    g_free(vit);
  }
  g_free(ex);
  g_free(svg);
  g_free(dot);
  rm_rf(dir);
  g_free(dir);
}

/* The bundled example's committed trace replays onto the example and gives exactly what a
 * fresh run gives: it is regenerated (tools/make-example.sh) whenever the passes change. */
static void test_cli_bundled_example(void) {
  if (!need_cli()) return;
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  g_assert_nonnull(root);
  char *ex = g_build_filename(root, "data", "examples", "recsys-towers.txt", NULL);
  char *tr = g_build_filename(root, "data", "examples", "recsys-towers.trace.json", NULL);
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  char *fresh = g_build_filename(dir, "fresh.txt", NULL), *replayed = g_build_filename(dir, "replayed.txt", NULL);
  Run r;
  run_cli(&r, "replay", ex, tr, "-o", replayed);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  run_cli(&r, "optimize", ex, "-o", fresh);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  gsize la, lb;
  char *a = read_all(fresh, &la), *b = read_all(replayed, &lb);
  if (strcmp(a, b) != 0)
    g_test_message("the committed trace of the bundled example is stale: run tools/make-example.sh");
  g_assert_cmpstr(a, ==, b);
  g_free(a);
  g_free(b);
  /* and the run it records fused something and failed no check */
  run_cli(&r, "explain", ex, "--node", "linear", "--trace", tr);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "applied"));
  run_clear(&r);
  g_free(ex);
  g_free(tr);
  g_free(fresh);
  g_free(replayed);
  rm_rf(dir);
  g_free(dir);
}


/* ------------------------------------------------------------------ /cli/whatif and friends (issue 17) */

static char *example_path(const char *name) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  g_assert_nonnull(root);
  return g_build_filename(root, "data", "examples", name, NULL);
}


/* The node count `optimus info` gives for a file. */
static int info_nodes(const char *path) {
  Run r;
  run_cli(&r, "info", path, "--json");
  g_assert_cmpint(r.status, ==, 0);
  json_object *o = parse_json(r.out);
  int n = json_int(o, "nodes");
  json_object_put(o);
  run_clear(&r);
  return n;
}

static void test_cli_whatif(void) {
  if (!need_cli()) return;
  char *ex = example_path("recsys-towers.txt"), *tr = example_path("recsys-towers.trace.json");
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  char *alt = g_build_filename(dir, "alt.txt", NULL), *direct = g_build_filename(dir, "direct.txt", NULL);
  Run r;
  /* the base's optimized node count and the count of a direct run with the changed option */
  run_cli(&r, "optimize", ex, "-o", direct, "--option", "batch_linear.min_fuse_set_size=7");
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  int direct_nodes = info_nodes(direct);
  run_cli(&r, "replay", ex, tr, "-o", direct);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  int base_nodes = info_nodes(direct);
  /* with the five-linear sets below the new minimum, batch_linear refuses what the base fused */
  run_cli(&r, "whatif", ex, "--trace", tr, "--option", "batch_linear.min_fuse_set_size=7", "--json", "-o", alt);
  g_assert_cmpint(r.status, ==, 0);
  json_object *o = parse_json(r.out);
  g_assert_cmpint(json_int(o, "base_nodes"), ==, base_nodes);
  g_assert_cmpint(json_int(o, "alt_nodes"), ==, direct_nodes);
  g_assert_cmpint(json_int(o, "alt_nodes"), ==, info_nodes(alt));
  g_assert_cmpint(json_int(o, "node_delta"), ==, direct_nodes - base_nodes);
  g_assert_cmpint(json_int(o, "node_delta"), <, 0);
  g_assert_cmpint(json_int(o, "newly_applied"), ==, 0);
  json_object *dec = jget(o, "decisions");
  g_assert_cmpint((int)json_object_array_length(dec), ==, json_int(o, "newly_rejected"));
  int batch = 0;
  for (size_t i = 0; i < json_object_array_length(dec); i++) {
    json_object *x = json_object_array_get_idx(dec, i);
    g_assert_cmpstr(json_object_get_string(jget(x, "change")), ==, "newly_rejected");
    g_assert_true(json_object_get_int(jget(x, "base_seq")) >= 1);
    if (strcmp(json_object_get_string(jget(x, "pass")), "batch_linear") != 0) continue;
    batch++;
    g_assert_cmpstr(json_object_get_string(jget(x, "reason_code")), ==, "SET_TOO_SMALL");
    g_assert_nonnull(strstr(json_object_get_string(jget(x, "reason")), "min_fuse_set_size 7"));
    g_assert_nonnull(json_object_get_string(jget(x, "anchor")));
  }
  g_assert_cmpint(batch, ==, 2);
  /* per-pass counts add up to the decisions */
  json_object *passes = jget(o, "passes");
  int sum = 0;
  for (size_t i = 0; i < json_object_array_length(passes); i++) {
    json_object *x = json_object_array_get_idx(passes, i);
    sum += json_int(x, "newly_applied") + json_int(x, "newly_rejected");
  }
  g_assert_cmpint(sum, ==, (int)json_object_array_length(dec));
  json_object_put(o);
  run_clear(&r);
  /* without --trace the base is recorded here: the same decisions */
  run_cli(&r, "whatif", ex, "--option", "batch_linear.min_fuse_set_size=7");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "nodes 201 -> 176 (-25)"));
  g_assert_nonnull(strstr(r.out, "batch_linear at split_3: not applied"));
  g_assert_nonnull(strstr(r.out, "per pass:"));
  run_clear(&r);
  /* --disable-step: applied step #9 (batch_linear at split_3) refused; --only-pass filters */
  run_cli(&r, "whatif", ex, "--trace", tr, "--disable-step", "9", "--only-pass", "batch_linear", "--json");
  g_assert_cmpint(r.status, ==, 0);
  o = parse_json(r.out);
  dec = jget(o, "decisions");
  g_assert_cmpint((int)json_object_array_length(dec), >=, 1);
  bool skipped = false;
  for (size_t i = 0; i < json_object_array_length(dec); i++) {
    json_object *x = json_object_array_get_idx(dec, i);
    g_assert_cmpstr(json_object_get_string(jget(x, "pass")), ==, "batch_linear");
    if (json_object_get_int(jget(x, "base_seq")) == 9 &&
        strcmp(json_object_get_string(jget(x, "change")), "newly_rejected") == 0) {
      skipped = true;
      g_assert_nonnull(strstr(json_object_get_string(jget(x, "reason")), "skipped by the what-if"));
    }
  }
  g_assert_true(skipped);
  json_object_put(o);
  run_clear(&r);
  /* errors */
  run_cli(&r, "whatif", ex, "--trace", tr, "--disable-step", "5"); /* #5 is a rejection */
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "step #5 is not an applied step"));
  run_clear(&r);
  run_cli(&r, "whatif", ex, "--trace", tr, "--disable-step", "100000");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "is not in the base trace"));
  run_clear(&r);
  run_cli(&r, "whatif", ex, "--trace", tr, "--option", "no_such_pass.min_fuse_set_size=3");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "pass 'no_such_pass' is not in the pipeline"));
  run_clear(&r);
  run_cli(&r, "whatif", ex, "--option", "batch_linear.no_such_option=3");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "unknown option 'no_such_option'"));
  run_clear(&r);
  run_cli(&r, "whatif", ex, "--option", "batch_linear.min_fuse_set_size=3", "--only-pass", "nope");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "whatif", ex);
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "nothing to change"));
  run_clear(&r);
  run_cli(&r, "whatif", ex, "--disable-step", "0");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  /* a trace of another graph is refused */
  char *small = write_tmp(dir, "small.txt", small_fx);
  run_cli(&r, "whatif", small, "--trace", tr, "--disable-step", "9");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "another graph"));
  run_clear(&r);
  g_free(small);
  g_free(ex);
  g_free(tr);
  g_free(alt);
  g_free(direct);
  rm_rf(dir);
  g_free(dir);
}

static void test_cli_compare_runs(void) {
  if (!need_cli()) return;
  char *ex = example_path("recsys-towers.txt"), *tr = example_path("recsys-towers.trace.json");
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  char *in = g_build_filename(dir, "towers.txt", NULL);
  gsize len;
  char *text = read_all(ex, &len);
  g_assert_true(g_file_set_contents(in, text, (gssize)len, NULL));
  g_free(text);
  char *oa = g_build_filename(dir, "a.txt", NULL), *ta = g_build_filename(dir, "a.trace.json", NULL);
  char *ob = g_build_filename(dir, "b.txt", NULL), *tb = g_build_filename(dir, "b.trace.json", NULL);
  char *tc = g_build_filename(dir, "c.trace.json", NULL);
  Run r;
  run_cli(&r, "optimize", in, "-o", oa, "--trace", ta);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  run_cli(&r, "optimize", in, "-o", ob, "--trace", tb, "--option", "batch_linear.min_fuse_set_size=7");
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  char *oc = g_build_filename(dir, "c.txt", NULL);
  run_cli(&r, "optimize", in, "-o", oc, "--trace", tc, "--checks", "structure,shape");
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  /* two configurations: batch_linear's two fusions differ, the split/cat simplifications of
   * their stacks exist only in A, and the final graphs differ (exit 1) */
  run_cli(&r, "compare-runs", ta, tb, "--json");
  g_assert_cmpint(r.status, ==, 1);
  json_object *o = parse_json(r.out);
  g_assert_false(json_object_get_boolean(jget(o, "final_graphs_equal")));
  g_assert_cmpint(json_int(jget(o, "a"), "nodes"), ==, info_nodes(oa));
  g_assert_cmpint(json_int(jget(o, "b"), "nodes"), <, json_int(jget(o, "a"), "nodes"));
  g_assert_cmpint(json_int(o, "only_a_applied"), ==, 2);
  g_assert_cmpint(json_int(o, "only_b_applied"), ==, 0);
  json_object *ent = jget(o, "entries");
  g_assert_cmpint((int)json_object_array_length(ent), ==,
                  json_int(o, "differs") + json_int(o, "only_a") + json_int(o, "only_b"));
  int linear_differs = 0;
  for (size_t i = 0; i < json_object_array_length(ent); i++) {
    json_object *e = json_object_array_get_idx(ent, i);
    const char *kind = json_object_get_string(jget(e, "kind"));
    if (strcmp(kind, "only_a") == 0) g_assert_true(json_object_is_type(jget(e, "b"), json_type_null));
    if (strcmp(kind, "only_b") == 0) g_assert_true(json_object_is_type(jget(e, "a"), json_type_null));
    if (strcmp(kind, "differs") != 0 || strcmp(json_object_get_string(jget(e, "pass")), "batch_linear") != 0) continue;
    linear_differs++;
    g_assert_cmpstr(json_object_get_string(jget(jget(e, "a"), "outcome")), ==, "applied");
    g_assert_cmpstr(json_object_get_string(jget(jget(e, "b"), "outcome")), ==, "rejected");
    g_assert_nonnull(strstr(json_object_get_string(jget(jget(e, "b"), "reason")), "min_fuse_set_size 7"));
  }
  g_assert_cmpint(linear_differs, ==, 2);
  /* the final graphs' differences are those `optimus diff` finds between the two outputs */
  json_object *fd = jget(o, "final_diff");
  Run rd;
  run_cli(&rd, "diff", oa, ob, "--json");
  g_assert_cmpint(rd.status, ==, 1);
  json_object *od = parse_json(rd.out);
  g_assert_cmpint(json_int(fd, "changed"), ==, (int)json_object_array_length(jget(od, "changed")));
  g_assert_cmpint(json_int(fd, "removed"), ==, (int)json_object_array_length(jget(od, "removed")));
  g_assert_cmpint(json_int(fd, "added"), ==, (int)json_object_array_length(jget(od, "added")));
  g_assert_cmpint(json_int(fd, "regions"), ==, (int)json_object_array_length(jget(od, "regions")));
  g_assert_cmpint(json_int(fd, "added"), >, 0);
  json_object_put(od);
  run_clear(&rd);
  /* the runs' times and each pass's side by side (both traces have the per-pass table) */
  json_object *secs = jget(o, "seconds");
  g_assert_cmpfloat(json_object_get_double(jget(secs, "a")), >, 0);
  g_assert_cmpfloat(json_object_get_double(jget(secs, "b")), >, 0);
  json_object *pp = jget(o, "passes");
  g_assert_cmpuint(json_object_array_length(pp), >, 5);
  gboolean saw_linear = FALSE;
  for (size_t i = 0; i < json_object_array_length(pp); i++) {
    json_object *e = json_object_array_get_idx(pp, i);
    if (strcmp(json_object_get_string(jget(e, "pass")), "batch_linear") != 0) continue;
    saw_linear = TRUE;
    g_assert_cmpint(json_int(jget(e, "a"), "applied"), ==, 2);
    g_assert_cmpint(json_int(jget(e, "b"), "applied"), ==, 0);
  }
  g_assert_true(saw_linear);
  /* coverage, side by side: every row of either run; batch_linear moved (2 applied -> 0, its two
   * fusions now refused as sets below 7), and a row moved exactly when some count differs */
  json_object *cov = jget(o, "coverage");
  g_assert_cmpuint(json_object_array_length(cov), >, 5);
  gboolean cov_linear = FALSE;
  for (size_t i = 0; i < json_object_array_length(cov); i++) {
    json_object *e = json_object_array_get_idx(cov, i), *a = jget(e, "a"), *b = jget(e, "b");
    gboolean differs = !a || !b || json_int(a, "applied") != json_int(b, "applied") ||
                       json_int(a, "rejected") != json_int(b, "rejected");
    json_object *rs = jget(e, "reasons");
    for (size_t j = 0; j < json_object_array_length(rs); j++) {
      json_object *x = json_object_array_get_idx(rs, j), *ds = jget(x, "details");
      differs = differs || json_int(x, "a") != json_int(x, "b");
      for (size_t k = 0; k < json_object_array_length(ds); k++)
        differs = differs || json_int(json_object_array_get_idx(ds, k), "a") != json_int(json_object_array_get_idx(ds, k), "b");
    }
    g_assert_cmpint(json_object_get_boolean(jget(e, "moved")), ==, differs);
    if (strcmp(json_object_get_string(jget(e, "pass")), "batch_linear") != 0) continue;
    cov_linear = TRUE;
    g_assert_true(json_object_get_boolean(jget(e, "moved")));
    g_assert_cmpint(json_int(a, "applied"), ==, 2);
    g_assert_cmpint(json_int(b, "applied"), ==, 0);
    g_assert_cmpint(json_int(b, "rejected"), >, json_int(a, "rejected"));
  }
  g_assert_true(cov_linear);
  json_object_put(o);
  run_clear(&r);
  /* the text report lists the applied differences and counts the rest */
  run_cli(&r, "compare-runs", ta, tb);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.out, "outcome differs:\n  batch_linear / batch_linear at split_3: A #9 applied"));
  g_assert_nonnull(strstr(r.out, "final graphs: differ"));
  g_assert_nonnull(strstr(r.out, "--all or --json lists them"));
  g_assert_nonnull(strstr(r.out, "\ncoverage that moved (per pass and rule, A -> B):\n  batch_linear (pre): applied 2 -> 0, "));
  GRegex *time_line = g_regex_new("^time: A [0-9.]+ s, B [0-9.]+ s \\(B/A [0-9.]+\\); (passes that changed most: |no pass)",
                                  G_REGEX_MULTILINE, 0, NULL);
  g_assert_true(g_regex_match(time_line, r.out, 0, NULL));
  g_regex_unref(time_line);
  run_clear(&r);
  /* a trace written before the per-pass table: said, not guessed */
  gsize tl;
  char *ttext = read_all(tb, &tl), *p0 = strstr(ttext, ",\"passes\":["), *p1 = p0 ? strstr(p0, "],\"seconds\"") : NULL;
  g_assert_nonnull(p1);
  memmove(p0, p1 + 1, strlen(p1 + 1) + 1);
  char *tb_old = g_build_filename(dir, "b-old.trace.json", NULL);
  g_assert_true(g_file_set_contents(tb_old, ttext, -1, NULL));
  g_free(ttext);
  run_cli(&r, "compare-runs", ta, tb_old);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.out, "; no per-pass table in B\n"));
  run_clear(&r);
  g_free(tb_old);
  /* other checks, the same decisions: nothing differs, exit 0; so for the committed trace */
  run_cli(&r, "compare-runs", ta, tc);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "0 with another outcome; only in A: 0 (0 applied); only in B: 0 (0 applied)"));
  g_assert_nonnull(strstr(r.out, "\ncoverage: the same in both"));
  g_assert_nonnull(strstr(r.out, "final graphs: the same"));
  run_clear(&r);
  run_cli(&r, "compare-runs", tr, ta, "--input", ex);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  /* the input named by the traces is gone: --input is needed */
  g_assert_cmpint(g_unlink(in), ==, 0);
  run_cli(&r, "compare-runs", ta, tb);
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "--input FILE"));
  run_clear(&r);
  run_cli(&r, "compare-runs", ta, tb, "--input", ex);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.out, "final graphs: differ"));
  run_clear(&r);
  /* runs of different graphs are refused; so is a missing second trace */
  char *small = write_tmp(dir, "small.txt", small_fx), *ts = g_build_filename(dir, "s.trace.json", NULL);
  run_cli(&r, "optimize", small, "-o", ob, "--trace", ts);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  run_cli(&r, "compare-runs", ta, ts, "--input", ex);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "different graphs"));
  run_clear(&r);
  run_cli(&r, "compare-runs", ta);
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  g_free(small);
  g_free(ts);
  g_free(ex);
  g_free(tr);
  g_free(in);
  g_free(oa);
  g_free(ta);
  g_free(ob);
  g_free(tb);
  g_free(tc);
  g_free(oc);
  rm_rf(dir);
  g_free(dir);
}

/* The names listed under key of every region of a diff, each once, in one set. */
static GHashTable *region_names(json_object *o, const char *key) {
  GHashTable *set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  json_object *regions = jget(o, "regions");
  for (size_t i = 0; i < json_object_array_length(regions); i++) {
    json_object *names = jget(json_object_array_get_idx(regions, i), key);
    for (size_t k = 0; k < json_object_array_length(names); k++) {
      const char *n = json_object_get_string(json_object_array_get_idx(names, k));
      g_assert_false(g_hash_table_contains(set, n)); /* in one region only */
      g_hash_table_add(set, g_strdup(n));
    }
  }
  return set;
}

/* added/removed/changed of a diff's JSON agree with its regions and its counts */
static void check_diff_json(json_object *o) {
  const char *keys[3] = {"added", "removed", "changed"};
  int n_regions = (int)json_object_array_length(jget(o, "regions"));
  for (int k = 0; k < 3; k++) {
    GHashTable *set = region_names(o, keys[k]);
    json_object *list = jget(o, keys[k]);
    g_assert_cmpuint(json_object_array_length(list), ==, g_hash_table_size(set));
    for (size_t i = 0; i < json_object_array_length(list); i++) {
      json_object *x = json_object_array_get_idx(list, i);
      g_assert_true(g_hash_table_contains(set, json_object_get_string(jget(x, "name"))));
      int r = json_int(x, "region");
      g_assert_cmpint(r, >=, 1);
      g_assert_cmpint(r, <=, n_regions);
    }
    g_hash_table_destroy(set);
  }
  /* every node of A is the same, changed or removed; of B the same, changed or added (the
   * output node included on both sides, which `nodes_*` leave out) */
  int same = json_int(o, "same"), changed = (int)json_object_array_length(jget(o, "changed"));
  g_assert_cmpint(same + changed + (int)json_object_array_length(jget(o, "removed")), ==, json_int(o, "nodes_a") + 1);
  g_assert_cmpint(same + changed + (int)json_object_array_length(jget(o, "added")), ==, json_int(o, "nodes_b") + 1);
  g_assert_cmpint(json_int(o, "matched_by_name") + json_int(o, "matched_by_structure"), ==, same + changed);
}

static void test_cli_diff(void) {
  if (!need_cli()) return;
  char *ex = example_path("recsys-towers.txt");
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  char *after = g_build_filename(dir, "after.txt", NULL), *svg = g_build_filename(dir, "diff.svg", NULL);
  char *dot = g_build_filename(dir, "diff.dot", NULL);
  Run r;
  /* a graph against itself: nothing differs, exit 0 */
  run_cli(&r, "diff", ex, ex);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "0 changed, 0 removed, 0 added"));
  run_clear(&r);
  /* before and after the optimizer: the fused linears and layer norms are removed, the
   * batched replacements added, in regions */
  run_cli(&r, "optimize", ex, "-o", after);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  run_cli(&r, "diff", ex, after, "--json");
  g_assert_cmpint(r.status, ==, 1);
  json_object *o = parse_json(r.out);
  check_diff_json(o);
  g_assert_cmpint(json_int(o, "nodes_b"), ==, info_nodes(after));
  g_assert_cmpint((int)json_object_array_length(jget(o, "regions")), >=, 1);
  int removed_linear = 0, added_baddbmm = 0;
  json_object *list = jget(o, "removed");
  for (size_t i = 0; i < json_object_array_length(list); i++)
    removed_linear += strcmp(json_object_get_string(jget(json_object_array_get_idx(list, i), "target")),
                             "torch.nn.functional.linear") == 0;
  list = jget(o, "added");
  for (size_t i = 0; i < json_object_array_length(list); i++)
    added_baddbmm += strcmp(json_object_get_string(jget(json_object_array_get_idx(list, i), "target")),
                            "torch.baddbmm") == 0;
  g_assert_cmpint(removed_linear, ==, 10); /* two batch_linear steps of five linears each */
  g_assert_cmpint(added_baddbmm, ==, 2);
  int n_added = (int)json_object_array_length(jget(o, "added"));
  int n_removed = (int)json_object_array_length(jget(o, "removed"));
  int n_changed = (int)json_object_array_length(jget(o, "changed"));
  json_object_put(o);
  run_clear(&r);
  /* the drawing: B with A's removed nodes, each difference marked */
  run_cli(&r, "diff", ex, after, "-o", svg);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.out, "wrote "));
  run_clear(&r);
  gsize len;
  char *text = read_all(svg, &len);
  g_assert_cmpuint(count_substr(text, "ox&#45;added\""), ==, (guint)n_added);
  g_assert_cmpuint(count_substr(text, "ox&#45;removed\""), ==, (guint)n_removed);
  g_assert_cmpuint(count_substr(text, "ox&#45;matched\""), ==, (guint)n_changed);
  g_free(text);
  run_cli(&r, "diff", ex, after, "-o", dot);
  g_assert_cmpint(r.status, ==, 1);
  run_clear(&r);
  text = read_all(dot, &len);
  g_assert_true(g_str_has_prefix(text, "digraph"));
  g_free(text);
  /* the diff as a pseudo-trace: replayed from A it gives B (nothing left to diff) */
  char *pt = g_build_filename(dir, "diff.trace.json", NULL), *replayed = g_build_filename(dir, "replayed.txt", NULL);
  run_cli(&r, "diff", ex, after, "--trace", pt);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.out, "steps, one per region"));
  run_clear(&r);
  run_cli(&r, "replay", ex, pt, "-o", replayed);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  run_cli(&r, "diff", replayed, after);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "0 changed, 0 removed, 0 added"));
  run_clear(&r);
  run_cli(&r, "explain", ex, "--trace", pt, "--node", "linear");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "region 1"));
  run_clear(&r);
  g_unlink(pt);
  g_unlink(replayed);
  g_free(pt);
  g_free(replayed);
  /* renamed nodes match by structure; a changed constant is a changed node */
  char *a = write_tmp(dir, "a.txt", small_fx);
  char *b = write_tmp(dir, "b.txt",
                      "graph():\n"
                      "    %x : [num_users=2] = placeholder[target=x]\n"
                      "    %r0 : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})\n"
                      "    %a0 : [num_users=1] = call_function[target=operator.add](args = (%r0, %x), kwargs = {})\n"
                      "    %add_1 : [num_users=1] = call_function[target=operator.add](args = (%a0, 2), kwargs = {})\n"
                      "    return add_1\n");
  run_cli(&r, "diff", a, b, "--json");
  g_assert_cmpint(r.status, ==, 1);
  o = parse_json(r.out);
  check_diff_json(o);
  g_assert_cmpint(json_int(o, "matched_by_structure"), ==, 2);
  g_assert_cmpint((int)json_object_array_length(jget(o, "added")), ==, 0);
  g_assert_cmpint((int)json_object_array_length(jget(o, "removed")), ==, 0);
  json_object *ch = jget(o, "changed");
  g_assert_cmpint((int)json_object_array_length(ch), ==, 1);
  g_assert_cmpstr(json_object_get_string(jget(json_object_array_get_idx(ch, 0), "name")), ==, "add_1");
  g_assert_cmpstr(json_object_get_string(json_object_array_get_idx(jget(json_object_array_get_idx(ch, 0), "fields"), 0)),
                  ==, "args");
  json_object_put(o);
  run_clear(&r);
  /* a replaced op: relu -> sigmoid is one region: relu removed, sigmoid added, its user changed */
  char *c = write_tmp(dir, "c.txt",
                      "graph():\n"
                      "    %x : [num_users=2] = placeholder[target=x]\n"
                      "    %sigmoid : [num_users=1] = call_function[target=torch.sigmoid](args = (%x,), kwargs = {})\n"
                      "    %add : [num_users=1] = call_function[target=operator.add](args = (%sigmoid, %x), kwargs = {})\n"
                      "    %add_1 : [num_users=1] = call_function[target=operator.add](args = (%add, 1), kwargs = {})\n"
                      "    return add_1\n");
  run_cli(&r, "diff", a, c);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.out, "1 changed, 1 removed, 1 added in 1 region\n"));
  g_assert_nonnull(strstr(r.out, "- relu (call_function torch.relu)"));
  g_assert_nonnull(strstr(r.out, "+ sigmoid (call_function torch.sigmoid)"));
  g_assert_nonnull(strstr(r.out, "~ add: args"));
  run_clear(&r);
  /* usage and input errors */
  run_cli(&r, "diff", a);
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "diff", a, b, "-o", dot, "--to", "svg");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  char *txt = g_build_filename(dir, "diff.txt", NULL);
  run_cli(&r, "diff", a, b, "-o", txt);
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  char *missing = g_build_filename(dir, "missing.txt", NULL);
  run_cli(&r, "diff", a, missing);
  g_assert_cmpint(r.status, ==, 1);
  run_clear(&r);
  /* a corpus dump against its optimized form: normalization rewrote split into
   * split_with_sizes (file 16 is a fragment: its getitems are external inputs) */
  char *corpus = test_corpus_file_or_skip(16);
  if (corpus) {
    char *opt = g_build_filename(dir, "c16.txt", NULL);
    run_cli(&r, "optimize", corpus, "-o", opt);
    g_assert_cmpint(r.status, ==, 0);
    run_clear(&r);
    run_cli(&r, "diff", corpus, opt, "--json");
    g_assert_cmpint(r.status, ==, 1);
    o = parse_json(r.out);
    check_diff_json(o);
    json_object *rm = jget(o, "removed"), *ad = jget(o, "added");
    g_assert_cmpint((int)json_object_array_length(rm), ==, 1);
    g_assert_cmpstr(json_object_get_string(jget(json_object_array_get_idx(rm, 0), "name")), ==, "split_1");
    g_assert_cmpint((int)json_object_array_length(ad), ==, 1);
    g_assert_cmpstr(json_object_get_string(jget(json_object_array_get_idx(ad, 0), "target")), ==,
                    "torch.ops.aten.split_with_sizes.default");
    json_object_put(o);
    run_clear(&r);
    /* and the JSON form of the same dump is the same graph */
    char *js = g_build_filename(dir, "c16.json", NULL);
    run_cli(&r, "convert", corpus, "-o", js);
    g_assert_cmpint(r.status, ==, 0);
    run_clear(&r);
    run_cli(&r, "diff", corpus, js);
    g_assert_cmpint(r.status, ==, 0);
    run_clear(&r);
    g_free(js);
    g_free(opt);
    g_free(corpus);
  }
  g_free(missing);
  g_free(txt);
  g_free(a);
  g_free(b);
  g_free(c);
  g_free(ex);
  g_free(after);
  g_free(svg);
  g_free(dot);
  rm_rf(dir);
  g_free(dir);
}

/* The smallest applied_index among the records of pass in a trace file (0 if none). */
static int first_index_of_pass(const char *trace, const char *pass) {
  gsize len;
  char *text = read_all(trace, &len);
  json_object *o = parse_json(text);
  json_object *steps = jget(o, "steps"), *rules = jget(o, "rules");
  int best = 0;
  for (size_t i = 0; i < json_object_array_length(steps); i++) {
    json_object *s = json_object_array_get_idx(steps, i), *ai = NULL, *ri = NULL, *p = NULL;
    /* version 5: the step's rule is an index into "rules", which names the pass */
    if (!json_object_object_get_ex(s, "applied_index", &ai) || !json_object_object_get_ex(s, "rule", &ri) ||
        !json_object_object_get_ex(json_object_array_get_idx(rules, (size_t)json_object_get_int(ri)), "pass", &p))
      continue;
    int k = json_object_get_int(ai);
    if (k > 0 && strcmp(json_object_get_string(p), pass) == 0 && (!best || k < best)) best = k;
  }
  json_object_put(o);
  g_free(text);
  return best;
}

static void test_cli_bisect(void) {
  if (!need_cli()) return;
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  char *ex = example_path("recsys-towers.txt"), *tr = example_path("recsys-towers.trace.json");
  char *rules = g_build_filename(root, "tests", "data", "rules", "wrong-relu.rules", NULL);
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  char *out = g_build_filename(dir, "out.txt", NULL), *trace = g_build_filename(dir, "wrong.trace.json", NULL);
  char *prefix = g_build_filename(dir, "culprit", NULL);
  Run r;
  /* a run with a deliberately wrong user rule whose failed steps are kept */
  run_cli(&r, "optimize", ex, "-o", out, "--trace", trace, "--rules", rules, "--keep-failed");
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  int culprit = first_index_of_pass(trace, "relu_is_neg");
  g_assert_cmpint(culprit, >, 1); /* the built-in passes' steps come first */
  /* the built-in numeric oracle names the first of the wrong rule's steps */
  run_cli(&r, "bisect", ex, "--trace", trace, "--check", "numeric", "-o", prefix, "--json");
  g_assert_cmpint(r.status, ==, 0);
  json_object *o = parse_json(r.out);
  json_object *ff = jget(o, "first_failing");
  g_assert_cmpint(json_int(ff, "k"), ==, culprit);
  g_assert_cmpstr(json_object_get_string(jget(ff, "pass")), ==, "relu_is_neg");
  g_assert_cmpstr(json_object_get_string(jget(ff, "outcome")), ==, "check failed");
  g_assert_true(g_str_has_suffix(json_object_get_string(jget(ff, "rule_file")), "wrong-relu.rules"));
  g_assert_cmpint(json_int(ff, "rule_line"), ==, 4);
  int steps = json_int(o, "steps"), runs = json_int(o, "oracle_runs");
  g_assert_cmpint(runs, <=, (int)ceil(log2((double)steps)) + 2);
  g_assert_cmpint(runs, >=, 3);
  g_assert_cmpint((int)json_object_array_length(jget(o, "runs")), ==, runs);
  char *before = g_strdup(json_object_get_string(jget(ff, "before")));
  char *after = g_strdup(json_object_get_string(jget(ff, "after")));
  json_object_put(o);
  run_clear(&r);
  /* the graphs around it differ by exactly that rewrite: one relu out, one neg in */
  run_cli(&r, "diff", before, after, "--json");
  g_assert_cmpint(r.status, ==, 1);
  o = parse_json(r.out);
  json_object *rm = jget(o, "removed"), *ad = jget(o, "added");
  g_assert_cmpint((int)json_object_array_length(rm), ==, 1);
  g_assert_cmpint((int)json_object_array_length(ad), ==, 1);
  g_assert_cmpstr(json_object_get_string(jget(json_object_array_get_idx(rm, 0), "target")), ==, "torch.relu");
  g_assert_cmpstr(json_object_get_string(jget(json_object_array_get_idx(ad, 0), "target")), ==, "torch.neg");
  json_object_put(o);
  run_clear(&r);
  /* an external oracle (the graph handed over as a quoted path) finds the same step */
  run_cli(&r, "bisect", ex, "--trace", trace, "--oracle", "! grep -q torch.neg {graph}", "--to", "fx");
  g_assert_cmpint(r.status, ==, 0);
  char *want = g_strdup_printf("(graph-changing step %d of %d) relu_is_neg", culprit, steps);
  g_assert_nonnull(strstr(r.out, want));
  g_assert_nonnull(strstr(r.out, "wrong-relu.rules:4"));
  g_assert_nonnull(strstr(r.out, "oracle runs: "));
  g_free(want);
  run_clear(&r);
  /* a recorded PyTorch export: `optimus verify` (the interpreter against the recorded
   * outputs) as the external oracle; the graphs handed to it keep the record */
  char *fixture = g_build_filename(root, "tests", "data", "fixtures", "dlrm.json", NULL);
  char *dtrace = g_build_filename(dir, "dlrm.trace.json", NULL), *dout = g_build_filename(dir, "dlrm.json", NULL);
  run_cli(&r, "optimize", fixture, "-o", dout, "--trace", dtrace, "--rules", rules, "--keep-failed");
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  int dculprit = first_index_of_pass(dtrace, "relu_is_neg");
  g_assert_cmpint(dculprit, >=, 1);
  char *quoted = g_shell_quote(cli_path());
  char *oracle = g_strdup_printf("%s verify {graph}", quoted);
  run_cli(&r, "bisect", fixture, "--trace", dtrace, "--oracle", oracle, "--json");
  g_assert_cmpint(r.status, ==, 0);
  o = parse_json(r.out);
  ff = jget(o, "first_failing");
  g_assert_cmpint(json_int(ff, "k"), ==, dculprit);
  g_assert_cmpstr(json_object_get_string(jget(ff, "pass")), ==, "relu_is_neg");
  g_assert_cmpstr(json_object_get_string(jget(ff, "why")), ==, "exit status 1");
  json_object_put(o);
  run_clear(&r);
  g_free(quoted);
  g_free(oracle);
  g_free(fixture);
  g_free(dtrace);
  g_free(dout);
  /* the bundled run is right: nothing to blame (exit 1) */
  run_cli(&r, "bisect", ex, "--trace", tr, "--check", "numeric");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.out, "passes after every step"));
  run_clear(&r);
  /* an oracle that runs over its time is killed and counts as a failure */
  gint64 t0 = g_get_monotonic_time();
  run_cli(&r, "bisect", ex, "--trace", trace, "--oracle", "sleep 20; test -f {graph}", "--timeout", "0.3");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.out, "timed out"));
  g_assert_nonnull(strstr(r.out, "fails on the input graph itself"));
  g_assert_cmpint(g_get_monotonic_time() - t0, <, 10 * G_USEC_PER_SEC);
  run_clear(&r);
  /* usage and input errors */
  run_cli(&r, "bisect", ex, "--check", "numeric");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "bisect", ex, "--trace", trace);
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "bisect", ex, "--trace", trace, "--check", "numeric", "--oracle", "true {graph}");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  run_cli(&r, "bisect", ex, "--trace", trace, "--oracle", "true");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "{graph}"));
  run_clear(&r);
  run_cli(&r, "bisect", ex, "--trace", trace, "--check", "speed");
  g_assert_cmpint(r.status, ==, 2);
  run_clear(&r);
  char *small = write_tmp(dir, "small.txt", small_fx);
  run_cli(&r, "bisect", small, "--trace", trace, "--check", "numeric");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "another graph"));
  run_clear(&r);
  g_free(small);
  g_free(before);
  g_free(after);
  g_free(ex);
  g_free(tr);
  g_free(rules);
  g_free(out);
  g_free(trace);
  g_free(prefix);
  rm_rf(dir);
  g_free(dir);
}

/* Issue 21: explain with a trace of another graph warns (exit 0; 1 with --strict), replay of
 * a trace with "hash": "" is refused, /dev/zero as a file or on stdin is refused at the cap. */
static void test_cli_integrity(void) {
  if (!need_cli()) return;
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  char *in = write_tmp(dir, "towers.txt", towers_fx);
  char *small = write_tmp(dir, "small.txt", small_fx);
  char *out = g_build_filename(dir, "out.txt", NULL);
  char *trace = g_build_filename(dir, "trace.json", NULL);
  Run r;
  run_cli(&r, "optimize", in, "-o", out, "--trace", trace);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  run_cli(&r, "explain", small, "--trace", trace, "--node", "x");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.err, "warning: recorded on another graph (structure hash"));
  g_assert_nonnull(strstr(r.err, "does not have and no step adds: "));
  run_clear(&r);
  run_cli(&r, "explain", small, "--trace", trace, "--node", "x", "--strict");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "error: recorded on another graph"));
  run_clear(&r);
  run_cli(&r, "explain", in, "--trace", trace, "--node", "x"); /* its own trace: no warning */
  g_assert_cmpint(r.status, ==, 0);
  g_assert_null(strstr(r.err, "warning"));
  run_clear(&r);
  gsize len;
  char *text = read_all(trace, &len);
  GRegex *re = g_regex_new("\"hash\": ?\"[0-9a-f]+\"", 0, 0, NULL);
  char *nohash = g_regex_replace_literal(re, text, -1, 0, "\"hash\": \"\"", 0, NULL);
  g_regex_unref(re);
  char *trace0 = write_tmp(dir, "nohash.json", nohash);
  run_cli(&r, "replay", in, trace0, "-o", out);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "no input hash"));
  g_assert_nonnull(strstr(r.err, "not replayed"));
  run_clear(&r);
  run_cli(&r, "info", "/dev/zero");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "/dev/zero: input larger than 536870912 bytes, refused"));
  run_clear(&r);
  ChildSetup zero = {.stdin_path = "/dev/zero"};
  run_cli_setup(&r, &zero, "info", "-", NULL);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "standard input: input larger than 536870912 bytes, refused"));
  run_clear(&r);
  /* OPTIMUS_MAX_INPUT_MB sets the cap (the message names it); a value that is not a whole number
   * of mebibytes from 1 on is ignored */
  g_setenv("OPTIMUS_MAX_INPUT_MB", "1", TRUE);
  run_cli(&r, "info", "/dev/zero");
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "/dev/zero: input larger than 1048576 bytes, refused (OPTIMUS_MAX_INPUT_MB raises the cap)"));
  run_clear(&r);
  run_cli(&r, "info", in);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  g_setenv("OPTIMUS_MAX_INPUT_MB", "-1", TRUE);
  run_cli(&r, "info", "/dev/zero");
  g_assert_nonnull(strstr(r.err, "/dev/zero: input larger than 536870912 bytes, refused"));
  run_clear(&r);
  g_unsetenv("OPTIMUS_MAX_INPUT_MB");
  g_free(text);
  g_free(nohash);
  g_free(trace0);
  g_free(in);
  g_free(small);
  g_free(out);
  g_free(trace);
  rm_rf(dir);
  g_free(dir);
}

/* Issue 18: the summary's estimated cost and --cost-guard on the bundled example. The example
 * has 62 compute ops (21 linear, 17 layer_norm, 12 relu, 4 sigmoid, 3 tanh, 3 cat, add, mul:
 * one launch each; its splits and getitems are views). The guard keeps only steps whose
 * estimate does not grow, records the others as PAYOFF rejections, and changes nothing when
 * it is off. */
static void read_pair(json_object *cost, OxCostPair *p) {
  static const char *const keys[3] = {"launches", "bytes", "flops"};
  memset(p, 0, sizeof *p);
  p->set = true;
  for (int k = 0; k < 3; k++) {
    json_object *v;
    g_assert_true(json_object_object_get_ex(cost, keys[k], &v));
    g_assert_cmpuint(json_object_array_length(v), ==, 2);
    for (int i = 0; i < 2; i++) {
      OxCost *c = i ? &p->after : &p->before;
      json_object *e = json_object_array_get_idx(v, i);
      g_assert_true(json_object_is_type(e, json_type_int)); /* the example's sizes are all known */
      uint64_t x = (uint64_t)json_object_get_int64(e);
      if (k == 0) c->launches = x;
      else if (k == 1) c->bytes = x;
      else c->flops = x;
    }
  }
}

static void test_cli_cost_guard(void) {
  if (!need_cli()) return;
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  g_assert_nonnull(root);
  char *ex = g_build_filename(root, "data", "examples", "recsys-towers.txt", NULL);
  char *dir = g_dir_make_tmp("oxcli-XXXXXX", NULL);
  char *out = g_build_filename(dir, "out.txt", NULL), *tr = g_build_filename(dir, "t.json", NULL);
  char *outg = g_build_filename(dir, "outg.txt", NULL), *trg = g_build_filename(dir, "tg.json", NULL);
  char *rep = g_build_filename(dir, "rep.txt", NULL);
  Run r;
  run_cli(&r, "optimize", ex, "-o", out, "--trace", tr);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "\n  estimated cost: 62 -> 55 launches, "));
  g_assert_nonnull(strstr(r.out, "  batch_linear "));
  run_clear(&r);
  /* --json: the same totals as the trace's */
  run_cli(&r, "optimize", ex, "-o", out, "--json");
  g_assert_cmpint(r.status, ==, 0);
  json_object *sum = json_tokener_parse(r.out), *cost, *counters;
  g_assert_nonnull(sum);
  g_assert_true(json_object_object_get_ex(sum, "cost", &cost));
  OxCostPair ps, pt;
  read_pair(cost, &ps);
  g_assert_cmpuint(ps.before.launches, ==, 62);
  g_assert_cmpuint(ps.after.launches, ==, 55);
  gsize len;
  char *text = read_all(tr, &len);
  json_object *tj = json_tokener_parse(text);
  g_assert_nonnull(tj);
  g_assert_true(json_object_object_get_ex(tj, "cost", &cost));
  read_pair(cost, &pt);
  g_assert_cmpmem(&ps, sizeof ps, &pt, sizeof pt);
  json_object_put(tj);
  json_object_put(sum);
  g_free(text);
  run_clear(&r);

  /* --cost-guard */
  run_cli(&r, "optimize", ex, "-o", outg, "--trace", trg, "--cost-guard", "--json");
  g_assert_cmpint(r.status, ==, 0);
  sum = json_tokener_parse(r.out);
  g_assert_nonnull(sum);
  g_assert_true(json_object_object_get_ex(sum, "counters", &counters));
  g_assert_false(json_object_object_get_ex(counters, "batch_linear", NULL)); /* its steps grow the estimate */
  g_assert_true(json_object_object_get_ex(sum, "cost", &cost));
  OxCostPair pg;
  read_pair(cost, &pg);
  g_assert_cmpfloat(ox_cost_time_us(&pg.after), <=, ox_cost_time_us(&pg.before));
  g_assert_cmpfloat(ox_cost_time_us(&pg.after), <, ox_cost_time_us(&ps.after)); /* the unguarded run grows it */
  json_object_put(sum);
  run_clear(&r);
  text = read_all(trg, &len);
  tj = json_tokener_parse(text);
  g_assert_nonnull(tj);
  json_object *steps, *strings;
  g_assert_true(json_object_object_get_ex(tj, "steps", &steps));
  g_assert_true(json_object_object_get_ex(tj, "strings", &strings)); /* version 4: the reason arguments */
  uint32_t applied = 0, payoff = 0;
  for (size_t i = 0; i < json_object_array_length(steps); i++) {
    json_object *st = json_object_array_get_idx(steps, i), *kind, *reason, *code, *c;
    g_assert_true(json_object_object_get_ex(st, "kind", &kind));
    bool is_payoff = json_object_object_get_ex(st, "reason", &reason) && json_object_object_get_ex(reason, "code", &code) &&
                     !strcmp(json_object_get_string(code), "PAYOFF");
    bool is_applied = !strcmp(json_object_get_string(kind), "applied");
    if (!is_payoff && !is_applied) continue;
    g_assert_true(json_object_object_get_ex(st, "cost", &c));
    OxCostPair p;
    read_pair(c, &p);
    if (is_applied) {
      applied++;
      g_assert_cmpfloat(ox_cost_time_us(&p.after), <=, ox_cost_time_us(&p.before));
    } else {
      payoff++;
      g_assert_cmpfloat(ox_cost_time_us(&p.after), >, ox_cost_time_us(&p.before));
      /* versions 3 and 4 write the arguments, not the text ("estimated %0: below the payoff
       * threshold (%1)"); version 4 as indices into "strings" */
      json_object *args;
      g_assert_false(json_object_object_get_ex(reason, "text", NULL));
      g_assert_true(json_object_object_get_ex(reason, "args", &args));
      g_assert_cmpuint(json_object_array_length(args), ==, 2);
      json_object *a1 = json_object_array_get_idx(strings, json_object_get_int(json_object_array_get_idx(args, 1)));
      g_assert_true(g_str_has_prefix(json_object_get_string(a1), "min_payoff 0: saves -"));
    }
  }
  g_assert_cmpuint(applied, >, 0);
  g_assert_cmpuint(payoff, >, 0);
  json_object_put(tj);
  g_free(text);
  /* the guarded trace replays to the guarded graph */
  run_cli(&r, "replay", ex, trg, "-o", rep);
  g_assert_cmpint(r.status, ==, 0);
  run_clear(&r);
  gsize la, lb;
  char *a = read_all(outg, &la), *b = read_all(rep, &lb);
  g_assert_cmpstr(a, ==, b);
  g_free(a);
  g_free(b);
  /* an explicit min_payoff wins over --cost-guard for its pass */
  run_cli(&r, "optimize", ex, "-o", outg, "--cost-guard", "--option", "batch_linear.min_payoff=-5");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "  batch_linear "));
  g_assert_null(strstr(r.out, "  batch_layernorm ")); /* still guarded */
  run_clear(&r);
  /* usage errors */
  run_cli(&r, "optimize", ex, "-o", outg, "--option", "batch_linear.min_payoff=lots");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "--option batch_linear.min_payoff=lots: bad value 'lots'"));
  run_clear(&r);
  run_cli(&r, "info", ex, "--cost-guard");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "unknown option '--cost-guard'"));
  run_clear(&r);
  g_free(ex);
  g_free(out);
  g_free(tr);
  g_free(outg);
  g_free(trg);
  g_free(rep);
  rm_rf(dir);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/dot/structure", test_dot_structure);
  g_test_add_func("/engine/dot/escaping", test_dot_escaping);
  g_test_add_func("/engine/dot/colours", test_dot_colours);
  g_test_add_func("/engine/dot/highlight", test_dot_highlight);
  g_test_add_func("/engine/dot/edge-labels", test_dot_edge_labels);
  g_test_add_func("/engine/dot/rankdir", test_dot_rankdir);
  g_test_add_func("/engine/dot/deterministic", test_dot_deterministic);
  g_test_add_func("/engine/dot/subgraphs", test_dot_subgraphs);
  g_test_add_func("/engine/dot/large", test_dot_large);
  g_test_add_func("/engine/render/svg", test_render_svg);
  g_test_add_func("/engine/render/png", test_render_png);
  g_test_add_func("/engine/render/bad-format", test_render_bad_format);
  g_test_add_func("/engine/render/hostile-names", test_render_hostile_names);
  g_test_add_func("/engine/render/empty-graph", test_render_empty_graph);
  g_test_add_func("/engine/render/threads", test_render_threads);
  g_test_add_func("/cli/help", test_cli_help);
  g_test_add_func("/cli/usage-errors", test_cli_usage_errors);
  g_test_add_func("/cli/bad-input", test_cli_bad_input);
  g_test_add_func("/cli/info", test_cli_info);
  g_test_add_func("/cli/sigbus", test_cli_sigbus);
  g_test_add_func("/cli/graphs", test_cli_graphs);
  g_test_add_func("/cli/strict", test_cli_strict);
  g_test_add_func("/cli/check-failure", test_cli_check_failure);
  g_test_add_func("/cli/convert", test_cli_convert);
  g_test_add_func("/cli/convert-unwritable", test_cli_convert_unwritable);
  g_test_add_func("/cli/corpus", test_cli_corpus);
  g_test_add_func("/cli/corpus-convert", test_cli_corpus_convert);
  g_test_add_func("/cli/verify", test_cli_verify);
  g_test_add_func("/cli/info-record", test_cli_info_record);
  g_test_add_func("/cli/info-trace", test_cli_info_trace);
  g_test_add_func("/cli/optimize-replay-explain", test_cli_optimize_replay_explain);
  g_test_add_func("/cli/integrity", test_cli_integrity);
  g_test_add_func("/cli/input-shape", test_cli_input_shape);
  g_test_add_func("/cli/paste-batches", test_cli_paste_batches);
  g_test_add_func("/cli/numeric-scalar-input", test_cli_numeric_scalar_input);
  g_test_add_func("/cli/views", test_cli_views);
  g_test_add_func("/cli/layouts", test_cli_layouts);
  g_test_add_func("/cli/bundled-example", test_cli_bundled_example);
  g_test_add_func("/cli/whatif", test_cli_whatif);
  g_test_add_func("/cli/compare-runs", test_cli_compare_runs);
  g_test_add_func("/cli/diff", test_cli_diff);
  g_test_add_func("/cli/bisect", test_cli_bisect);
  g_test_add_func("/cli/cost-guard", test_cli_cost_guard);
  return g_test_run();
}
