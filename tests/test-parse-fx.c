/* Tests for the print(graph) text loader (engine/load/ox_parse_fx.c, docs/format-fx-text.md):
 * every dialect feature as a small inline dump with exact assertions, the real corpus
 * files 01-19 with exact node counts, and damaged input in lenient and strict mode. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_graph.h"
#include "load/ox_load.h"
#include "load/ox_parse.h"
#include "write/ox_write.h"

/* ------------------------------------------------------------------ helpers */

typedef struct {
  OxDoc *doc;
  OxDiagList d;
  int rc;
} Load;

static void load_opt(Load *l, const char *text, size_t len, const OxLoadOptions *opt) {
  ox_diags_init(&l->d, "t.txt");
  l->doc = NULL;
  l->rc = ox_load_buffer(text, len, OX_FMT_FX_TEXT, opt, &l->doc, &l->d);
  if (g_test_verbose()) ox_diags_print(&l->d, stderr);
}

static void load(Load *l, const char *text) {
  OxLoadOptions opt = {0};
  load_opt(l, text, strlen(text), &opt);
}

static void load_strict(Load *l, const char *text) {
  OxLoadOptions opt = {0};
  opt.strict = true;
  load_opt(l, text, strlen(text), &opt);
}

static void unload(Load *l) {
  ox_doc_free(l->doc);
  ox_diags_clear(&l->d);
}

static OxGraph *graph0(Load *l) {
  g_assert_cmpint(l->rc, ==, 0);
  g_assert_nonnull(l->doc);
  g_assert_cmpuint(l->doc->n_graphs, >=, 1);
  return l->doc->graphs[0];
}

static OxNode *node(OxGraph *g, const char *name) {
  OxNodeId id = ox_graph_find(g, name);
  if (!id) g_error("no node named %s", name);
  return &g->nodes[id];
}

static OxNodeId nid(OxGraph *g, const char *name) {
  OxNodeId id = ox_graph_find(g, name);
  if (!id) g_error("no node named %s", name);
  return id;
}

/* live nodes except the output */
static uint32_t count_nodes(OxGraph *g) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id) if (g->nodes[id].op != OX_OP_OUTPUT) n++;
  return n;
}

static uint32_t count_flag(OxGraph *g, uint16_t flag) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id) if (g->nodes[id].flags & flag) n++;
  return n;
}

static const char *nth_name(OxGraph *g, uint32_t k) {
  uint32_t i = 0;
  OX_GRAPH_FOREACH(g, id) if (i++ == k) return g->nodes[id].name;
  return NULL;
}

/* number of diags with this severity, line (0 = any) and message substring */
static int diag_count(const OxDiagList *d, OxSeverity sev, uint32_t line, const char *sub) {
  int n = 0;
  for (size_t i = 0; i < d->n; i++) {
    const OxDiag *x = &d->items[i];
    if (x->sev == sev && (!line || x->line == line) && (!sub || strstr(x->msg, sub))) n++;
  }
  return n;
}

static const OxDiag *find_diag(const OxDiagList *d, OxSeverity sev, const char *sub) {
  for (size_t i = 0; i < d->n; i++)
    if (d->items[i].sev == sev && (!sub || strstr(d->items[i].msg, sub))) return &d->items[i];
  return NULL;
}

static int verify(OxGraph *g) {
  OxDiagList d;
  ox_diags_init(&d, "verify");
  int e = ox_graph_verify(g, false, &d);
  if (e) ox_diags_print(&d, stderr);
  ox_diags_clear(&d);
  for (uint32_t i = 0; i < g->n_subgraphs; i++) e += verify(g->subgraphs[i]);
  return e;
}

static const OxValue *arg(OxGraph *g, const char *name, uint32_t i) {
  OxNode *n = node(g, name);
  g_assert_cmpuint(i, <, n->args.n);
  return &n->args.u.items[i];
}

static const OxValue *kwarg(OxGraph *g, const char *name, const char *key) {
  OxNode *n = node(g, name);
  for (uint32_t i = 0; i < n->kwargs.n; i++)
    if (strcmp(n->kwargs.keys[i], key) == 0) return &n->kwargs.u.items[i];
  g_error("node %s has no kwarg %s", name, key);
  return NULL;
}

/* ------------------------------------------------------------------ basic dialects */

static const char *SPEC_EXAMPLE =
  "graph():\n"
  "    %x : [num_users=1] = placeholder[target=x]\n"
  "    %param : [num_users=1] = get_attr[target=param]\n"
  "    %add : [num_users=1] = call_function[target=operator.add](args = (%x, %param), kwargs = {})\n"
  "    %linear : [num_users=1] = call_module[target=linear](args = (%add,), kwargs = {})\n"
  "    %clamp : [num_users=1] = call_method[target=clamp](args = (%linear,), kwargs = {min: 0.0, max: 1.0})\n"
  "    return clamp\n";

static void test_basic(void) {
  Load l;
  load(&l, SPEC_EXAMPLE);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.doc->n_graphs, ==, 1);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpstr(g->name, ==, "graph");
  g_assert_cmpuint(g->src_line, ==, 1);
  g_assert_cmpuint(g->n_live, ==, 6);
  g_assert_cmpuint(count_nodes(g), ==, 5);
  g_assert_cmpint(node(g, "x")->op, ==, OX_OP_PLACEHOLDER);
  g_assert_cmpstr(node(g, "x")->target, ==, "x");
  g_assert_cmpint(node(g, "param")->op, ==, OX_OP_GET_ATTR);
  g_assert_cmpint(node(g, "add")->op, ==, OX_OP_CALL_FUNCTION);
  g_assert_cmpstr(node(g, "add")->target, ==, "operator.add");
  g_assert_cmpint(node(g, "linear")->op, ==, OX_OP_CALL_MODULE);
  g_assert_cmpint(node(g, "clamp")->op, ==, OX_OP_CALL_METHOD);
  g_assert_cmpstr(node(g, "clamp")->target, ==, "clamp");
  g_assert_cmpuint(node(g, "add")->args.n, ==, 2);
  g_assert_cmpint(arg(g, "add", 0)->kind, ==, OX_V_NODE);
  g_assert_cmpuint(arg(g, "add", 0)->u.node, ==, nid(g, "x"));
  g_assert_cmpuint(arg(g, "add", 1)->u.node, ==, nid(g, "param"));
  g_assert_cmpint(kwarg(g, "clamp", "min")->kind, ==, OX_V_FLOAT);
  g_assert_cmpfloat(kwarg(g, "clamp", "max")->u.f, ==, 1.0);
  g_assert_cmpstr(node(g, "clamp")->kwargs.keys[0], ==, "min");
  /* users, declared users, lines */
  g_assert_cmpuint(node(g, "x")->n_users, ==, 1);
  g_assert_cmpuint(node(g, "x")->users[0], ==, nid(g, "add"));
  g_assert_cmpint(node(g, "x")->declared_users, ==, 1);
  g_assert_cmpuint(node(g, "x")->src_line, ==, 2);
  g_assert_cmpuint(node(g, "clamp")->src_line, ==, 6);
  OxNodeId out = ox_graph_output(g);
  g_assert_cmpuint(out, !=, 0);
  OxNode *o = &g->nodes[out];
  g_assert_cmpstr(o->target, ==, "output");
  g_assert_cmpuint(o->src_line, ==, 7);
  g_assert_cmpuint(o->args.n, ==, 1);
  g_assert_cmpint(o->args.u.items[0].kind, ==, OX_V_NODE);
  g_assert_cmpuint(o->args.u.items[0].u.node, ==, nid(g, "clamp"));
  g_assert_cmpint(verify(g), ==, 0);
  unload(&l);
}

static void test_old_users_type_ann(void) {
  Load l;
  load(&l,
       "graph():\n"
       "    %x : torch.Tensor [#users=2] = placeholder[target=x]\n"
       "    %flatten : [#users=1] = call_function[target=torch.flatten](args = (%x, -1, 0), kwargs = {})\n"
       "    %y : [#users=0] = call_function[target=torch.relu](args = (%x,), kwargs = {})\n"
       "    %z = call_function[target=torch.relu](args = (%x,), kwargs = {})\n"
       "    %w : typing.List[int] [#users=0] = call_function[target=f](args = (), kwargs = {})\n"
       "    return flatten\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpstr(node(g, "x")->type_ann, ==, "torch.Tensor");
  g_assert_cmpint(node(g, "x")->declared_users, ==, 2);
  g_assert_cmpint(node(g, "y")->declared_users, ==, 0);
  g_assert_null(node(g, "flatten")->type_ann);
  g_assert_cmpstr(node(g, "w")->type_ann, ==, "typing.List[int]");
  g_assert_cmpint(arg(g, "flatten", 1)->u.i, ==, -1);
  /* line 5 has no ':' type part at all: damaged, skipped with a located warning */
  g_assert_cmpint(diag_count(&l.d, OX_SEV_WARNING, 5, "expected ':'"), ==, 1);
  g_assert_cmpuint(count_nodes(g), ==, 4);
  g_assert_cmpuint(node(g, "x")->n_users, ==, 2);
  unload(&l);
}

static void test_inductor_annotations(void) {
  Load l;
  load(&l,
       "%arg0_1 : Tensor \"bf16[16, 256][256, 1]cuda:0\" = PlaceHolder[target=arg0_1]\n"
       "%a : Tensor \"f32[s2, 4096*s0][3, 1]npu:0\"[num_users=1] = call_function[target=f](args = (%arg0_1,), kwargs = {})\n"
       "%b : Tensor \"f32[][]cuda:0\"[num_users=1] = call_function[target=f](args = (%a,), kwargs = {})\n"
       "%c : Tensor \"i64[8]\" [num_users=1] = call_function[target=f](args = (%b,), kwargs = {})\n"
       "%d : Sym \"Sym(s0)\"[num_users=1] = call_function[target=f](args = (%c,), kwargs = {})\n"
       "%e : [num_users=1] = call_function[target=f](args = (%d,), kwargs = {})\n"
       "%f : Tensor \"weird\"[num_users=1] = call_function[target=f](args = (%e,), kwargs = {})\n"
       "return %f\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpstr(g->name, ==, "fragment");
  const OxTensorMeta *t = ox_node_tensor_meta(node(g, "arg0_1"));
  g_assert_nonnull(t);
  g_assert_cmpint(t->dtype, ==, OX_DT_BF16);
  g_assert_cmpint(t->rank, ==, 2);
  g_assert_cmpint(t->shape[0].v, ==, 16);
  g_assert_cmpint(t->shape[1].v, ==, 256);
  g_assert_true(t->has_stride);
  g_assert_cmpint(t->stride[0].v, ==, 256);
  g_assert_cmpint(t->stride[1].v, ==, 1);
  g_assert_cmpstr(t->device, ==, "cuda:0");
  g_assert_cmpstr(node(g, "arg0_1")->type_ann, ==, "Tensor");
  g_assert_true(node(g, "arg0_1")->flags & OX_NODE_MARKER);
  g_assert_cmpint(node(g, "arg0_1")->declared_users, ==, -1);
  t = ox_node_tensor_meta(node(g, "a"));
  g_assert_cmpint(t->dtype, ==, OX_DT_F32);
  g_assert_cmpstr(t->shape[0].sym, ==, "s2");
  g_assert_cmpstr(t->shape[1].sym, ==, "4096*s0");
  g_assert_null(t->stride[0].sym);
  g_assert_cmpstr(t->device, ==, "npu:0");
  g_assert_cmpint(node(g, "a")->declared_users, ==, 1);
  t = ox_node_tensor_meta(node(g, "b"));
  g_assert_cmpint(t->rank, ==, 0);
  g_assert_true(t->has_stride);
  t = ox_node_tensor_meta(node(g, "c"));
  g_assert_cmpint(t->dtype, ==, OX_DT_I64);
  g_assert_false(t->has_stride);
  g_assert_null(t->device);
  g_assert_cmpint(node(g, "d")->meta.kind, ==, OX_META_SYMINT);
  g_assert_cmpstr(node(g, "d")->meta.sym, ==, "s0");
  g_assert_cmpint(node(g, "e")->meta.kind, ==, OX_META_NONE);
  g_assert_cmpint(node(g, "f")->meta.kind, ==, OX_META_NONE);
  g_assert_cmpint(diag_count(&l.d, OX_SEV_WARNING, 7, "annotation"), ==, 1);
  g_assert_cmpint(verify(g), ==, 0);
  unload(&l);
}

static void test_all_dtype_abbrs(void) {
  GString *s = g_string_new("graph():\n");
  for (int dt = OX_DT_F32; dt < OX_DT_COUNT; dt++)
    g_string_append_printf(s, "    %%n%d : Tensor \"%s[2, 3][3, 1]cpu\" = placeholder[target=n%d]\n", dt,
                           ox_dtype_abbr((OxDType)dt), dt);
  Load l;
  load(&l, s->str);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  for (int dt = OX_DT_F32; dt < OX_DT_COUNT; dt++) {
    char name[16];
    g_snprintf(name, sizeof name, "n%d", dt);
    const OxTensorMeta *t = ox_node_tensor_meta(node(g, name));
    g_assert_nonnull(t);
    g_assert_cmpint(t->dtype, ==, dt);
    g_assert_cmpint(t->rank, ==, 2);
    g_assert_cmpstr(t->device, ==, "cpu");
  }
  unload(&l);
  g_string_free(s, TRUE);
}

/* ------------------------------------------------------------------ args grammar */

static void test_args_grammar(void) {
  Load l;
  load(&l,
       "graph():\n"
       "    %x : [num_users=1] = placeholder[target=x]\n"
       "    %c : [num_users=0] = call_function[target=f](args = (%x, -3, 9223372036854775807, "
       "-9223372036854775808, 1e-05, 0.09999999999999998, inf, -inf, nan, True, False, None, torch.float32, "
       "cuda:0, cpu, device(type='cuda', index=0), device(type='cpu'), torch.contiguous_format, torch.strided, "
       "'hi there', \"q\\\"x\", rand, [1, [2]], (7,), (), {a: 1, 'b c': 2}, slice(None, 5, None), ..., "
       "Ellipsis, s0, u3, torch.ops.aten.add.Tensor, [%x, 3], -1.5e+20), kwargs = {dim: -1, "
       "memory_format: torch.preserve_format, dtype: torch.int64, device: cuda:1, pin_memory: False})\n"
       "    return None\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  const char *c = "c";
  g_assert_cmpuint(node(g, c)->args.n, ==, 34);
  g_assert_cmpint(arg(g, c, 0)->kind, ==, OX_V_NODE);
  g_assert_cmpint(arg(g, c, 1)->u.i, ==, -3);
  g_assert_cmpint(arg(g, c, 2)->u.i, ==, INT64_MAX);
  g_assert_cmpint(arg(g, c, 3)->u.i, ==, INT64_MIN);
  g_assert_cmpint(arg(g, c, 4)->kind, ==, OX_V_FLOAT);
  g_assert_cmpfloat(arg(g, c, 4)->u.f, ==, 1e-05);
  g_assert_cmpfloat(arg(g, c, 5)->u.f, ==, 0.09999999999999998);
  g_assert_true(isinf(arg(g, c, 6)->u.f) && arg(g, c, 6)->u.f > 0);
  g_assert_true(isinf(arg(g, c, 7)->u.f) && arg(g, c, 7)->u.f < 0);
  g_assert_true(isnan(arg(g, c, 8)->u.f));
  g_assert_cmpint(arg(g, c, 9)->kind, ==, OX_V_BOOL);
  g_assert_true(arg(g, c, 9)->u.b);
  g_assert_false(arg(g, c, 10)->u.b);
  g_assert_cmpint(arg(g, c, 11)->kind, ==, OX_V_NONE);
  g_assert_cmpint(arg(g, c, 12)->kind, ==, OX_V_DTYPE);
  g_assert_cmpint(arg(g, c, 12)->u.dtype, ==, OX_DT_F32);
  g_assert_cmpint(arg(g, c, 13)->kind, ==, OX_V_DEVICE);
  g_assert_cmpstr(arg(g, c, 13)->s, ==, "cuda:0");
  g_assert_cmpstr(arg(g, c, 14)->s, ==, "cpu");
  g_assert_cmpint(arg(g, c, 14)->kind, ==, OX_V_DEVICE);
  g_assert_cmpint(arg(g, c, 15)->kind, ==, OX_V_DEVICE);
  g_assert_cmpstr(arg(g, c, 15)->s, ==, "cuda:0");
  g_assert_cmpstr(arg(g, c, 16)->s, ==, "cpu");
  g_assert_cmpint(arg(g, c, 17)->kind, ==, OX_V_ENUM);
  g_assert_cmpstr(arg(g, c, 17)->s, ==, "torch.contiguous_format");
  g_assert_cmpint(arg(g, c, 18)->kind, ==, OX_V_ENUM);
  g_assert_cmpint(arg(g, c, 19)->kind, ==, OX_V_STR);
  g_assert_cmpstr(arg(g, c, 19)->s, ==, "hi there");
  g_assert_cmpstr(arg(g, c, 20)->s, ==, "q\"x");
  g_assert_cmpint(arg(g, c, 21)->kind, ==, OX_V_STR);
  g_assert_cmpstr(arg(g, c, 21)->s, ==, "rand");
  const OxValue *v = arg(g, c, 22);
  g_assert_cmpint(v->kind, ==, OX_V_LIST);
  g_assert_cmpuint(v->n, ==, 2);
  g_assert_cmpint(v->u.items[1].kind, ==, OX_V_LIST);
  g_assert_cmpint(v->u.items[1].u.items[0].u.i, ==, 2);
  g_assert_cmpint(arg(g, c, 23)->kind, ==, OX_V_TUPLE);
  g_assert_cmpuint(arg(g, c, 23)->n, ==, 1);
  g_assert_cmpint(arg(g, c, 24)->kind, ==, OX_V_TUPLE);
  g_assert_cmpuint(arg(g, c, 24)->n, ==, 0);
  v = arg(g, c, 25);
  g_assert_cmpint(v->kind, ==, OX_V_DICT);
  g_assert_cmpuint(v->n, ==, 2);
  g_assert_cmpstr(v->keys[0], ==, "a");
  g_assert_cmpstr(v->keys[1], ==, "b c");
  g_assert_cmpint(v->u.items[1].u.i, ==, 2);
  v = arg(g, c, 26);
  g_assert_cmpint(v->kind, ==, OX_V_SLICE);
  g_assert_cmpuint(v->n, ==, 3);
  g_assert_cmpint(v->u.items[0].kind, ==, OX_V_NONE);
  g_assert_cmpint(v->u.items[1].u.i, ==, 5);
  g_assert_cmpint(arg(g, c, 27)->kind, ==, OX_V_ELLIPSIS);
  g_assert_cmpint(arg(g, c, 28)->kind, ==, OX_V_ELLIPSIS);
  g_assert_cmpint(arg(g, c, 29)->kind, ==, OX_V_SYM);
  g_assert_cmpstr(arg(g, c, 29)->s, ==, "s0");
  g_assert_cmpstr(arg(g, c, 30)->s, ==, "u3");
  /* an op object passed as an argument is a torch constant, as in the readable loader */
  g_assert_cmpint(arg(g, c, 31)->kind, ==, OX_V_ENUM);
  g_assert_cmpstr(arg(g, c, 31)->s, ==, "torch.ops.aten.add.Tensor");
  v = arg(g, c, 32);
  g_assert_cmpint(v->u.items[0].kind, ==, OX_V_NODE);
  g_assert_cmpuint(v->u.items[0].u.node, ==, nid(g, "x"));
  g_assert_cmpfloat(arg(g, c, 33)->u.f, ==, -1.5e20);
  g_assert_cmpint(kwarg(g, c, "dim")->u.i, ==, -1);
  g_assert_cmpint(kwarg(g, c, "memory_format")->kind, ==, OX_V_ENUM);
  g_assert_cmpint(kwarg(g, c, "dtype")->u.dtype, ==, OX_DT_I64);
  g_assert_cmpstr(kwarg(g, c, "device")->s, ==, "cuda:1");
  g_assert_cmpint(kwarg(g, c, "pin_memory")->kind, ==, OX_V_BOOL);
  /* %x is used twice in one node: listed once as a user */
  g_assert_cmpuint(node(g, "x")->n_users, ==, 1);
  OxNode *o = &g->nodes[ox_graph_output(g)];
  g_assert_cmpint(o->args.u.items[0].kind, ==, OX_V_NONE);
  g_assert_cmpint(verify(g), ==, 0);
  unload(&l);
}

static void test_raw_values(void) {
  Load l;
  load(&l,
       "graph():\n"
       "    %x : [num_users=1] = placeholder[target=x]\n"
       "    %a : [num_users=1] = call_function[target=f](args = (%x, <built-in function add>, 4096*s0), kwargs = {})\n"
       "    %b : [num_users=1] = call_function[target=f](args = (%a, 99999999999999999999, torch.Size([2, 3])), kwargs = {k: 1.0j})\n"
       "    return b\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpint(arg(g, "a", 1)->kind, ==, OX_V_RAW);
  g_assert_cmpstr(arg(g, "a", 1)->s, ==, "<built-in function add>");
  g_assert_cmpint(arg(g, "a", 2)->kind, ==, OX_V_SYM);
  g_assert_cmpstr(arg(g, "a", 2)->s, ==, "4096*s0");
  g_assert_cmpint(arg(g, "b", 1)->kind, ==, OX_V_RAW);
  g_assert_cmpstr(arg(g, "b", 1)->s, ==, "99999999999999999999");
  g_assert_cmpint(arg(g, "b", 2)->kind, ==, OX_V_RAW);
  g_assert_cmpstr(arg(g, "b", 2)->s, ==, "torch.Size([2, 3])");
  g_assert_cmpint(kwarg(g, "b", "k")->kind, ==, OX_V_RAW);
  /* one warning per line, located at the first uninterpreted value */
  g_assert_cmpint(diag_count(&l.d, OX_SEV_WARNING, 3, "1 value kept as uninterpreted text"), ==, 1);
  g_assert_cmpint(diag_count(&l.d, OX_SEV_WARNING, 4, "3 values kept as uninterpreted text"), ==, 1);
  const OxDiag *x = find_diag(&l.d, OX_SEV_WARNING, "1 value");
  g_assert_cmpuint(x->col, ==, 62);
  g_assert_cmpuint(l.d.n_warnings, ==, 2);
  g_assert_cmpuint(count_nodes(g), ==, 3);
  unload(&l);
}

/* ------------------------------------------------------------------ returns and headers */

static OxValue *out_value(OxGraph *g) {
  OxNodeId out = ox_graph_output(g);
  g_assert_cmpuint(out, !=, 0);
  g_assert_cmpuint(g->nodes[out].args.n, ==, 1);
  return &g->nodes[out].args.u.items[0];
}

static void test_returns(void) {
  const char *body =
    "    %a : [num_users=1] = placeholder[target=a]\n"
    "    %b : [num_users=1] = placeholder[target=b]\n";
  struct {
    const char *ret;
    OxValueKind kind;
    uint32_t n;
  } cases[] = {
    {"return a", OX_V_NODE, 0},        {"return (a, b)", OX_V_TUPLE, 2}, {"return [a]", OX_V_LIST, 1},
    {"return %a,%b", OX_V_TUPLE, 2},   {"return (b,)", OX_V_TUPLE, 1},  {"return None", OX_V_NONE, 0},
    {"return", OX_V_NONE, 0},          {"return (a, None, b)", OX_V_TUPLE, 3},
    {"return {'x': a}", OX_V_DICT, 1}, {"return %a", OX_V_NODE, 0},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    char *text = g_strdup_printf("graph():\n%s    %s\n", body, cases[i].ret);
    Load l;
    load(&l, text);
    OxGraph *g = graph0(&l);
    g_assert_cmpuint(l.d.n, ==, 0);
    OxValue *v = out_value(g);
    g_assert_cmpint(v->kind, ==, cases[i].kind);
    if (cases[i].kind == OX_V_NODE) g_assert_cmpuint(v->u.node, ==, nid(g, "a"));
    else if (cases[i].kind != OX_V_NONE) g_assert_cmpuint(v->n, ==, cases[i].n);
    if (cases[i].kind == OX_V_TUPLE && cases[i].n == 2) {
      g_assert_cmpuint(v->u.items[0].u.node, ==, nid(g, "a"));
      g_assert_cmpuint(v->u.items[1].u.node, ==, nid(g, "b"));
    }
    g_assert_cmpint(verify(g), ==, 0);
    unload(&l);
    g_free(text);
  }
}

static void test_headers(void) {
  Load l;
  load(&l,
       "    Post export graph: graph():\n"
       "    %arg0_1 : [num_users=1] = placeholder[target=arg0_1]\n"
       "    return (arg0_1,)\n"
       "graph(x, y: torch.Tensor) -> torch.Tensor:\n"
       "    %add : [num_users=1] = call_function[target=operator.add](args = (%x, %y), kwargs = {})\n"
       "    return add\n"
       "lowered graph():\n"
       "    %p : [num_users=1] = placeholder[target=p]\n"
       "    return p\n"
       "The graph(s) are:\n");
  g_assert_cmpint(l.rc, ==, 0);
  g_assert_cmpuint(l.doc->n_graphs, ==, 3);
  OxGraph *g = l.doc->graphs[0];
  g_assert_cmpuint(g->src_line, ==, 1);
  g_assert_cmpuint(count_nodes(g), ==, 1);
  g = l.doc->graphs[1];
  g_assert_cmpuint(g->src_line, ==, 4);
  g_assert_cmpuint(count_nodes(g), ==, 3);
  g_assert_cmpint(node(g, "x")->op, ==, OX_OP_PLACEHOLDER);
  g_assert_cmpint(node(g, "y")->op, ==, OX_OP_PLACEHOLDER);
  g_assert_cmpstr(nth_name(g, 0), ==, "x");
  g_assert_cmpstr(nth_name(g, 1), ==, "y");
  g_assert_cmpuint(arg(g, "add", 1)->u.node, ==, nid(g, "y"));
  g = l.doc->graphs[2];
  g_assert_cmpstr(g->name, ==, "lowered graph");
  g_assert_null(g->sub_owner);
  /* prose after the last graph is not a graph: a note, not a warning */
  g_assert_cmpint(diag_count(&l.d, OX_SEV_NOTE, 10, "outside a graph"), ==, 1);
  g_assert_cmpuint(l.d.n_warnings, ==, 0);
  for (uint32_t i = 0; i < 3; i++) g_assert_cmpint(verify(l.doc->graphs[i]), ==, 0);
  unload(&l);
}

static void test_several_graphs(void) {
  Load l;
  load(&l,
       "graph():\n"
       "    %x : [#users=1] = placeholder[target=x]\n"
       "    %relu_2 : [#users=1] = call_function[target=relu](args = (), kwargs = {input: %x, inplace: False})\n"
       "    return relu_2\n"
       "graph():\n"
       "    %relu_2 : [#users=1] = placeholder[target=relu_2]\n"
       "    return relu_2\n"
       "\n"
       "%y : [#users=1] = placeholder[target=y]\n"
       "return y\n");
  g_assert_cmpint(l.rc, ==, 0);
  g_assert_cmpuint(l.doc->n_graphs, ==, 3);
  g_assert_cmpuint(l.doc->graphs[0]->src_line, ==, 1);
  g_assert_cmpuint(count_nodes(l.doc->graphs[0]), ==, 2);
  g_assert_cmpuint(l.doc->graphs[1]->src_line, ==, 5);
  g_assert_cmpint(node(l.doc->graphs[1], "relu_2")->op, ==, OX_OP_PLACEHOLDER);
  /* after a return, a node line without header starts a fragment */
  g_assert_cmpstr(l.doc->graphs[2]->name, ==, "fragment");
  g_assert_cmpuint(l.doc->graphs[2]->src_line, ==, 0);
  g_assert_cmpuint(node(l.doc->graphs[2], "y")->src_line, ==, 9);
  g_assert_cmpuint(kwarg(l.doc->graphs[0], "relu_2", "input")->u.node, ==, nid(l.doc->graphs[0], "x"));
  unload(&l);
}

static void test_fragments(void) {
  Load l;
  load(&l,
       "# Graph fragment:\n"
       "#   %a : Tensor \"f32[2][1]cuda:0\" = PlaceHolder[target=a]\n"
       "#   %b : Tensor \"f32[2][1]cuda:0\"[num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%a,), kwargs = {})\n"
       "#   return %b\n"
       "# Graph fragment:\n"
       "#   %c : [num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%z,), kwargs = {})\n");
  g_assert_cmpint(l.rc, ==, 0);
  g_assert_cmpuint(l.doc->n_graphs, ==, 2);
  OxGraph *g = l.doc->graphs[0];
  g_assert_cmpstr(g->name, ==, "fragment");
  g_assert_cmpuint(g->src_line, ==, 1);
  g_assert_cmpuint(count_nodes(g), ==, 2);
  g_assert_cmpuint(node(g, "b")->src_line, ==, 3);
  g = l.doc->graphs[1];
  g_assert_cmpuint(g->src_line, ==, 5);
  g_assert_cmpuint(ox_graph_output(g), ==, 0); /* no return: allowed, no output node */
  g_assert_true(node(g, "z")->flags & OX_NODE_EXTERNAL);
  /* column counts the stripped "#   " prefix: %z is at byte 83 of line 6 */
  const OxDiag *x = find_diag(&l.d, OX_SEV_WARNING, "never defined");
  g_assert_nonnull(x);
  g_assert_cmpuint(x->line, ==, 6);
  g_assert_cmpuint(x->col, ==, 83);
  unload(&l);
}

/* ------------------------------------------------------------------ prefixes */

static void test_prefix_torch_logs(void) {
  /* glog prefixes differ per line (timestamps); each is stripped */
  Load l;
  load(&l,
       "V0123 10:01:52.787000 140455623955584 torch/fx/x.py:12] [0/0] [__graph] graph():\n"
       "V0123 10:01:52.788000 140455623955584 torch/fx/x.py:12] [0/0] [__graph]     %x : [num_users=1] = placeholder[target=x]\n"
       "V0123 10:01:53.001000 140455623955584 torch/fx/x.py:12] [0/0] [__graph]     %y : [num_users=1] = call_function[target=torch.sin](args = (%x,), kwargs = {})\n"
       "V0123 10:01:53.002000 140455623955584 torch/fx/x.py:12] [0/0] [__graph]     return y\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpuint(count_nodes(g), ==, 2);
  g_assert_cmpuint(g->src_line, ==, 1);
  unload(&l);
  /* any other constant prefix */
  load(&l,
       "LOG| graph():\n"
       "LOG|     %x : [num_users=1] = placeholder[target=x]\n"
       "LOG|     %y : [num_users=1] = call_function[target=torch.sin](args = (%q,), kwargs = {})\n"
       "\n"
       "LOG|     return y\n");
  g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, 3);
  const OxDiag *x = find_diag(&l.d, OX_SEV_WARNING, "never defined");
  g_assert_cmpuint(x->line, ==, 3);
  g_assert_cmpuint(x->col, ==, 71);
  g_assert_cmpuint(ox_graph_output(g), !=, 0);
  unload(&l);
  /* all node names share "%add_": the prefix stops before '%' */
  load(&l,
       "%add_1 : [num_users=1] = placeholder[target=add_1]\n"
       "%add_2 : [num_users=0] = call_function[target=f](args = (%add_1,), kwargs = {})\n");
  g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, 2);
  g_assert_cmpuint(l.d.n, ==, 0);
  unload(&l);
}

/* ------------------------------------------------------------------ nested graphs */

static void test_nested_lowered(void) {
  Load l;
  load(&l,
       "graph():\n"
       "  %x : [num_users=1] = placeholder[target=x]\n"
       "  %lowered_module_0 : [num_users=1] = get_attr[target=lowered_module_0]\n"
       "    backend_id: XnnpackBackend\n"
       "    lowered graph():\n"
       "      %p : [num_users=1] = placeholder[target=p]\n"
       "      %x : [num_users=1] = placeholder[target=x]\n"
       "      %m : [num_users=1] = call_function[target=aten.mul](args = (%p, %x), kwargs = {})\n"
       "      return (m,)\n"
       "  %call : [num_users=1] = call_function[target=executorch_call_delegate](args = (%lowered_module_0, %x), kwargs = {})\n"
       "  %getitem : [num_users=1] = call_function[target=operator.getitem](args = (%call, 0), kwargs = {})\n"
       "  %lowered_module_1 : [num_users=1] = get_attr[target=lowered_module_1]\n"
       "    backend_id: XnnpackBackend\n"
       "    lowered graph():\n"
       "      %q : [num_users=1] = placeholder[target=q]\n"
       "  %call_1 : [num_users=1] = call_function[target=executorch_call_delegate](args = (%lowered_module_1, %getitem), kwargs = {})\n"
       "  return (call_1,)\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpuint(l.doc->n_graphs, ==, 1);
  g_assert_cmpuint(count_nodes(g), ==, 6);
  g_assert_cmpuint(g->n_subgraphs, ==, 2);
  OxGraph *s0 = g->subgraphs[0], *s1 = g->subgraphs[1];
  g_assert_cmpstr(s0->name, ==, "lowered graph 0");
  g_assert_cmpstr(s0->sub_owner, ==, "lowered_module_0");
  g_assert_cmpuint(s0->src_line, ==, 5);
  g_assert_cmpuint(count_nodes(s0), ==, 3);
  g_assert_cmpuint(ox_graph_output(s0), !=, 0);
  g_assert_cmpstr(s1->sub_owner, ==, "lowered_module_1");
  /* the second block has no return: it ends where the indentation drops back */
  g_assert_cmpuint(count_nodes(s1), ==, 1);
  g_assert_cmpuint(ox_graph_output(s1), ==, 0);
  /* namespaces are separate: the outer %x is not the inner one */
  g_assert_cmpuint(node(g, "x")->n_users, ==, 1);
  g_assert_cmpint(verify(g), ==, 0);
  unload(&l);
}

static void test_nested_fragment_no_header(void) {
  Load l;
  load(&l,
       "%w : [num_users=1] = call_function[target=f](args = (%ext,), kwargs = {})\n"
       "%lowered_module_144 : [num_users=1] = get_attr[target=lowered_module_144]\n"
       "backend_id: XnnpackBackend\n"
       "lowered graph():\n"
       "    %getitem : [num_users=1] = placeholder[target=getitem]\n"
       "    return [getitem]\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, 3);
  g_assert_cmpstr(nth_name(g, 0), ==, "ext");
  g_assert_cmpuint(g->n_subgraphs, ==, 1);
  g_assert_cmpstr(g->subgraphs[0]->sub_owner, ==, "lowered_module_144");
  g_assert_cmpint(out_value(g->subgraphs[0])->kind, ==, OX_V_LIST);
  g_assert_cmpint(diag_count(&l.d, OX_SEV_WARNING, 1, "never defined"), ==, 1);
  g_assert_cmpuint(l.d.n_warnings, ==, 1);
  unload(&l);
}

/* ------------------------------------------------------------------ names */

static void test_markers(void) {
  Load l;
  load(&l,
       "%arg0_1 : Tensor \"bf16[16, 256][256, 1]cuda:0\" = PlaceHolder[target=arg0_1]\n"
       "%mm : Tensor \"bf16[16, 16][16, 1]cuda:0\" = PlaceHolder[target=mm]\n"
       "%early : [num_users=1] = call_function[target=f](args = (%mm,), kwargs = {})\n"
       "%mm : Tensor \"bf16[16, 16][16, 1]cuda:0\"[num_users=1] = call_function[target=torch.ops.aten.mm.default](args = (%arg0_1, %arg0_1), kwargs = {})\n"
       "%relu : Tensor \"bf16[16, 16][16, 1]cuda:0\"[num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%mm,), kwargs = {})\n"
       "return %mm,%relu,%early\n");
  OxGraph *g = graph0(&l);
  /* the marker for %mm merged into its definition; %arg0_1 stays a marker placeholder */
  g_assert_cmpuint(count_nodes(g), ==, 4);
  g_assert_cmpuint(count_flag(g, OX_NODE_MARKER), ==, 1);
  g_assert_true(node(g, "arg0_1")->flags & OX_NODE_MARKER);
  OxNode *mm = node(g, "mm");
  g_assert_cmpint(mm->op, ==, OX_OP_CALL_FUNCTION);
  g_assert_cmpuint(mm->flags & OX_NODE_MARKER, ==, 0);
  g_assert_cmpuint(mm->src_line, ==, 4);
  /* a use of the marker before the definition refers to the definition, silently,
   * and the order is repaired */
  g_assert_cmpuint(arg(g, "early", 0)->u.node, ==, nid(g, "mm"));
  g_assert_cmpuint(mm->n_users, ==, 3);
  g_assert_true(ox_graph_before(g, nid(g, "mm"), nid(g, "early")));
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpint(verify(g), ==, 0);
  unload(&l);
}

static void test_externals(void) {
  Load l;
  load(&l,
       "graph():\n"
       "    %x : [num_users=1] = placeholder[target=x]\n"
       "    %a : [num_users=1] = call_function[target=f](args = (%x, %u2), kwargs = {})\n"
       "    %b : [num_users=1] = call_function[target=f](args = (%a, %u1, %u2), kwargs = {k: %u3})\n"
       "    return (b, u4)\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, 7);
  g_assert_cmpuint(count_flag(g, OX_NODE_EXTERNAL), ==, 4);
  /* externals come first, in first-use order */
  g_assert_cmpstr(nth_name(g, 0), ==, "u2");
  g_assert_cmpstr(nth_name(g, 1), ==, "u1");
  g_assert_cmpstr(nth_name(g, 2), ==, "u3");
  g_assert_cmpstr(nth_name(g, 3), ==, "u4");
  g_assert_cmpstr(nth_name(g, 4), ==, "x");
  g_assert_cmpint(node(g, "u2")->op, ==, OX_OP_PLACEHOLDER);
  g_assert_cmpstr(node(g, "u2")->target, ==, "u2");
  g_assert_cmpuint(node(g, "u2")->n_users, ==, 2);
  g_assert_cmpint(l.d.n_warnings, ==, 4);
  const OxDiag *x = find_diag(&l.d, OX_SEV_WARNING, "'%u2'");
  g_assert_cmpuint(x->line, ==, 3);
  g_assert_cmpuint(x->col, ==, 62);
  g_assert_cmpint(diag_count(&l.d, OX_SEV_WARNING, 5, "'%u4'"), ==, 1);
  g_assert_cmpint(verify(g), ==, 0);
  unload(&l);
  /* strict: the same input fails with errors */
  load_strict(&l,
              "graph():\n"
              "    %a : [num_users=1] = call_function[target=f](args = (%nope,), kwargs = {})\n"
              "    return a\n");
  g_assert_cmpint(l.rc, ==, -1);
  g_assert_null(l.doc);
  g_assert_cmpint(diag_count(&l.d, OX_SEV_ERROR, 2, "never defined"), ==, 1);
  unload(&l);
}

static void test_forward_reference(void) {
  Load l;
  load(&l,
       "graph():\n"
       "    %x : [num_users=1] = placeholder[target=x]\n"
       "    %b : [num_users=1] = call_function[target=f](args = (%a,), kwargs = {})\n"
       "    %a : [num_users=1] = call_function[target=g](args = (%x,), kwargs = {})\n"
       "    return b\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, 3);
  g_assert_cmpuint(count_flag(g, OX_NODE_EXTERNAL), ==, 0);
  g_assert_cmpuint(arg(g, "b", 0)->u.node, ==, nid(g, "a"));
  g_assert_true(ox_graph_before(g, nid(g, "a"), nid(g, "b")));
  g_assert_cmpint(diag_count(&l.d, OX_SEV_WARNING, 3, "used before its definition at line 4"), ==, 1);
  g_assert_cmpint(verify(g), ==, 0);
  unload(&l);
  /* a cycle through forward references is an error, not a hang */
  load(&l,
       "graph():\n"
       "    %a : [num_users=1] = call_function[target=f](args = (%b,), kwargs = {})\n"
       "    %b : [num_users=1] = call_function[target=g](args = (%a,), kwargs = {})\n"
       "    return b\n");
  g_assert_cmpint(l.rc, ==, -1);
  g_assert_cmpint(diag_count(&l.d, OX_SEV_ERROR, 1, "cycle"), ==, 1);
  unload(&l);
}

static void test_duplicates(void) {
  Load l;
  load(&l,
       "graph():\n"
       "    %x : [num_users=2] = placeholder[target=x]\n"
       "    %x_1 : [num_users=0] = placeholder[target=x_1]\n"
       "    %y : [num_users=1] = call_function[target=f](args = (%x,), kwargs = {})\n"
       "    %x : [num_users=1] = call_function[target=g](args = (%x,), kwargs = {})\n"
       "    %z : [num_users=1] = call_function[target=h](args = (%x,), kwargs = {})\n"
       "    return (y, z)\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, 5);
  /* the first keeps the name; the second gets a name nobody in the dump uses */
  g_assert_cmpint(node(g, "x")->op, ==, OX_OP_PLACEHOLDER);
  OxNode *x2 = node(g, "x_2");
  g_assert_cmpint(x2->op, ==, OX_OP_CALL_FUNCTION);
  g_assert_cmpuint(x2->src_line, ==, 5);
  g_assert_cmpint(node(g, "x_1")->op, ==, OX_OP_PLACEHOLDER);
  /* references see the latest definition at that line */
  g_assert_cmpuint(arg(g, "y", 0)->u.node, ==, nid(g, "x"));
  g_assert_cmpuint(x2->args.u.items[0].u.node, ==, nid(g, "x"));
  g_assert_cmpuint(arg(g, "z", 0)->u.node, ==, nid(g, "x_2"));
  g_assert_cmpint(diag_count(&l.d, OX_SEV_WARNING, 5, "defined again (first at line 2)"), ==, 1);
  g_assert_cmpuint(l.d.n_warnings, ==, 1);
  g_assert_cmpint(verify(g), ==, 0);
  unload(&l);
}

static void test_placeholder_default(void) {
  Load l;
  load(&l,
       "    graph():\n"
       "    %input_2 : [#users=1] = placeholder[target=placeholder](default=)\n"
       "    %b : [#users=1] = placeholder[target=b](default=None)\n"
       "    %c : [#users=1] = placeholder[target=c](default=(1, 2))\n"
       "    %d : [#users=1] = placeholder[target=d]\n"
       "    %addmm_default : [#users=1] = call_function[target=torch.ops.aten.addmm.default](args = (None, %input_2, None), kwargs = {})\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpstr(node(g, "input_2")->target, ==, "placeholder");
  g_assert_cmpstr(node(g, "input_2")->default_value, ==, "");
  g_assert_cmpstr(node(g, "b")->default_value, ==, "None");
  g_assert_cmpstr(node(g, "c")->default_value, ==, "(1, 2)");
  g_assert_null(node(g, "d")->default_value);
  g_assert_cmpint(arg(g, "addmm_default", 0)->kind, ==, OX_V_NONE);
  g_assert_cmpuint(ox_graph_output(g), ==, 0);
  unload(&l);
}

/* ------------------------------------------------------------------ damaged input */

static void test_truncated_line(void) {
  const char *text =
    "graph():\n"
    "    %x : [#users=1] = placeholder[target=x]\n"
    "    %linear_1 : [#users=1] = call_function[target=acc_ops.linear](args = (), ...\n"
    "    %relu : [#users=1] = call_function[target=acc_ops.relu](args = (), kwargs = {input: %x})\n"
    "    return relu\n";
  Load l;
  load(&l, text);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, 2);
  const OxDiag *x = find_diag(&l.d, OX_SEV_WARNING, "skipped damaged line");
  g_assert_nonnull(x);
  g_assert_cmpuint(x->line, ==, 3);
  g_assert_cmpuint(x->col, ==, 78); /* the "..." where ", kwargs = {...})" should be */
  g_assert_nonnull(strstr(x->snippet, "%linear_1"));
  g_assert_cmpuint(l.d.n_warnings, ==, 1);
  g_assert_cmpint(verify(g), ==, 0);
  unload(&l);
  load_strict(&l, text);
  g_assert_cmpint(l.rc, ==, -1);
  g_assert_null(l.doc);
  g_assert_cmpint(diag_count(&l.d, OX_SEV_ERROR, 3, "skipped damaged line"), ==, 1);
  unload(&l);
}

static void test_unbalanced_and_garbage(void) {
  const char *text =
    "graph():\n"
    "    %x : [num_users=1] = placeholder[target=x]\n"
    "    %a : [num_users=1] = call_function[target=f](args = (%x, [1, 2), kwargs = {})\n"
    "    %b : [num_users=1] = call_function[target=f](args = (%x, [1, 2]], kwargs = {})\n"
    "    %c : [num_users=1] = call_function[target=f](args = ((%x, {a: 1), kwargs = {})\n"
    "    %d : [num_users=1] = frobnicate[target=f](args = (%x,), kwargs = {})\n"
    "    this line is not fx\n"
    "    %e : [num_users=1] = call_function[target=f](args = ('unterminated, kwargs = {})\n"
    "    %f : [num_users=1] = call_function[target=f](args = (%x,), kwargs = {}) trailing\n"
    "    %g : [num_users=1] = call_function[target=f(args = (%x,), kwargs = {})\n"
    "    %h : [num_users=1] = call_function[target=f](args = (%x,), kwargs = {})\n"
    "    return h\n";
  Load l;
  load(&l, text);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, 2);
  for (uint32_t line = 3; line <= 10; line++) {
    if (line == 7) continue;
    if (diag_count(&l.d, OX_SEV_WARNING, line, "skipped damaged line") != 1)
      g_error("no damaged-line warning at line %u", line);
  }
  g_assert_cmpint(diag_count(&l.d, OX_SEV_WARNING, 7, "unrecognized line"), ==, 1);
  g_assert_cmpint(diag_count(&l.d, OX_SEV_WARNING, 6, "unknown op 'frobnicate'"), ==, 1);
  g_assert_cmpuint(l.d.n_warnings, ==, 8);
  g_assert_cmpint(verify(g), ==, 0);
  unload(&l);
  load_strict(&l, text);
  g_assert_cmpint(l.rc, ==, -1);
  g_assert_cmpuint(l.d.n_errors, >=, 8);
  unload(&l);
}

static GString *deep_nesting(size_t depth) {
  GString *s = g_string_new("graph():\n    %x : [num_users=1] = placeholder[target=x]\n"
                            "    %a : [num_users=1] = call_function[target=f](args = (");
  for (size_t i = 0; i < depth; i++) g_string_append_c(s, '[');
  for (size_t i = 0; i < depth; i++) g_string_append_c(s, ']');
  g_string_append(s, ",), kwargs = {})\n    return x\n");
  return s;
}

static void test_deep_nesting(void) {
  GString *s = deep_nesting(100000);
  for (int strict = 0; strict <= 1; strict++) {
    Load l;
    OxLoadOptions opt = {0};
    opt.strict = strict;
    load_opt(&l, s->str, s->len, &opt);
    g_assert_cmpint(l.rc, ==, -1);
    const OxDiag *x = find_diag(&l.d, OX_SEV_ERROR, "nested deeper than 256 levels");
    g_assert_nonnull(x);
    g_assert_cmpuint(x->line, ==, 3);
    g_assert_cmpuint(x->col, ==, 58 + 255); /* the 256th "[" opens level 257 */
    unload(&l);
  }
  g_string_free(s, TRUE);
  /* max_depth is honoured both ways */
  s = deep_nesting(5);
  Load l;
  OxLoadOptions opt = {0};
  opt.max_depth = 6;
  load_opt(&l, s->str, s->len, &opt);
  g_assert_cmpint(l.rc, ==, 0);
  unload(&l);
  opt.max_depth = 5;
  load_opt(&l, s->str, s->len, &opt);
  g_assert_cmpint(l.rc, ==, -1);
  g_assert_nonnull(find_diag(&l.d, OX_SEV_ERROR, "nested deeper than 5 levels"));
  unload(&l);
  g_string_free(s, TRUE);
}

static void test_huge_line(void) {
  /* a valid 10 MB node line: a list of a million ints */
  GString *s = g_string_new("graph():\n    %x : [num_users=1] = placeholder[target=x]\n"
                            "    %a : [num_users=1] = call_function[target=f](args = (%x, [");
  const size_t n = 1000000;
  for (size_t i = 0; i < n; i++) g_string_append(s, i ? ", 123456789" : "123456789");
  g_string_append(s, "]), kwargs = {})\n    return a\n");
  g_assert_cmpuint(s->len, >, 10000000);
  gint64 t0 = g_get_monotonic_time();
  Load l;
  OxLoadOptions opt = {0};
  load_opt(&l, s->str, s->len, &opt);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpuint(arg(g, "a", 1)->n, ==, n);
  g_assert_cmpint(arg(g, "a", 1)->u.items[n - 1].u.i, ==, 123456789);
  unload(&l);
  if (g_test_verbose()) g_printerr("10 MB line: %.2f s\n", (g_get_monotonic_time() - t0) / 1e6);
  /* the same line cut off before its end: one warning, at the last byte */
  g_string_truncate(s, s->len - 32);
  load_opt(&l, s->str, s->len, &opt);
  g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, 1);
  const OxDiag *x = find_diag(&l.d, OX_SEV_WARNING, "skipped damaged line");
  g_assert_nonnull(x);
  g_assert_cmpuint(x->line, ==, 3);
  g_assert_cmpuint(strlen(x->snippet), <, 200);
  unload(&l);
  g_string_free(s, TRUE);
  /* 10 MB of one garbage line: no graph */
  char *junk = g_malloc(10000001);
  memset(junk, 'z', 10000000);
  junk[10000000] = 0;
  opt.strict = false;
  load_opt(&l, junk, 10000000, &opt);
  g_assert_cmpint(l.rc, ==, -1);
  g_assert_nonnull(find_diag(&l.d, OX_SEV_ERROR, "no graph found"));
  unload(&l);
  g_free(junk);
}

static void test_random_bytes(void) {
  /* fixed-seed xorshift, so the input is the same everywhere */
  uint64_t st = 0x9e3779b97f4a7c15ull;
  size_t len = 1 << 20;
  char *buf = g_malloc(len + 1);
  for (size_t i = 0; i < len; i++) {
    st ^= st << 13;
    st ^= st >> 7;
    st ^= st << 17;
    buf[i] = (char)(st >> 24);
  }
  buf[len] = 0;
  for (int strict = 0; strict <= 1; strict++) {
    Load l;
    OxLoadOptions opt = {0};
    opt.strict = strict;
    load_opt(&l, buf, len, &opt);
    g_assert_cmpint(l.rc, ==, -1);
    g_assert_null(l.doc);
    g_assert_nonnull(find_diag(&l.d, OX_SEV_ERROR, "no graph found"));
    unload(&l);
  }
  /* random bytes as the body of a real graph: the graph still loads around them */
  GString *s = g_string_new("graph():\n    %x : [num_users=1] = placeholder[target=x]\n    %");
  g_string_append_len(s, buf, 4096);
  g_string_append(s, "\n    %y : [num_users=1] = call_function[target=f](args = (%x,), kwargs = {})\n    return y\n");
  Load l;
  OxLoadOptions opt = {0};
  load_opt(&l, s->str, s->len, &opt);
  OxGraph *g = graph0(&l);
  g_assert_nonnull(node(g, "x"));
  g_assert_nonnull(node(g, "y"));
  g_assert_cmpuint(ox_graph_output(g), !=, 0);
  g_assert_cmpuint(l.d.n_warnings, >=, 1);
  g_assert_cmpint(diag_count(&l.d, OX_SEV_WARNING, 3, NULL), ==, 1);
  for (size_t i = 0; i < l.d.n; i++) g_assert_cmpuint(l.d.items[i].line, >=, 1);
  g_assert_cmpint(verify(g), ==, 0);
  unload(&l);
  g_string_free(s, TRUE);
  g_free(buf);
}

static void test_empty_and_comments(void) {
  Load l;
  OxLoadOptions opt = {0};
  load_opt(&l, "", 0, &opt);
  g_assert_cmpint(l.rc, ==, -1);
  g_assert_nonnull(find_diag(&l.d, OX_SEV_ERROR, "no graph found"));
  unload(&l);
  /* the loader itself, called directly */
  OxDiagList d;
  ox_diags_init(&d, "t");
  OxDoc *doc = ox_doc_new(OX_FMT_FX_TEXT);
  g_assert_cmpint(ox_parse_fx_text("", 0, NULL, doc, &d), ==, -1);
  g_assert_nonnull(find_diag(&d, OX_SEV_ERROR, "the input is empty"));
  ox_diags_clear(&d);
  const char *comments = "# just a comment\n\n   # another\n# Graph fragment:\n";
  g_assert_cmpint(ox_parse_fx_text(comments, strlen(comments), NULL, doc, &d), ==, -1);
  g_assert_cmpuint(doc->n_graphs, ==, 0);
  const OxDiag *x = find_diag(&d, OX_SEV_ERROR, "no graph found");
  g_assert_nonnull(x);
  g_assert_cmpuint(x->line, ==, 1);
  ox_diags_clear(&d);
  const char *empty_graph = "graph():\n";
  g_assert_cmpint(ox_parse_fx_text(empty_graph, strlen(empty_graph), NULL, doc, &d), ==, 0);
  g_assert_cmpuint(doc->n_graphs, ==, 1);
  g_assert_cmpuint(doc->graphs[0]->n_live, ==, 0);
  g_assert_nonnull(find_diag(&d, OX_SEV_WARNING, "no nodes"));
  ox_diags_clear(&d);
  ox_doc_free(doc);
  load_strict(&l, comments);
  g_assert_cmpint(l.rc, ==, -1);
  unload(&l);
}

static void test_crlf_nul_utf8(void) {
  Load a, b;
  GString *crlf = g_string_new(NULL);
  for (const char *p = SPEC_EXAMPLE; *p; p++) {
    if (*p == '\n') g_string_append_c(crlf, '\r');
    g_string_append_c(crlf, *p);
  }
  load(&a, SPEC_EXAMPLE);
  load(&b, crlf->str);
  OxGraph *ga = graph0(&a), *gb = graph0(&b);
  g_assert_cmpuint(b.d.n, ==, 0);
  g_assert_cmpuint(ga->n_live, ==, gb->n_live);
  OX_GRAPH_FOREACH(ga, id) {
    OxNode *na = &ga->nodes[id], *nb = node(gb, na->name);
    g_assert_cmpstr(na->target, ==, nb->target);
    g_assert_true(ox_value_equal(&na->args, &nb->args));
    g_assert_true(ox_value_equal(&na->kwargs, &nb->kwargs));
    g_assert_cmpuint(na->src_line, ==, nb->src_line);
  }
  unload(&a);
  unload(&b);
  g_string_free(crlf, TRUE);
  /* a NUL byte in a node line: that line is skipped, located at the NUL */
  static const char nul[] =
    "graph():\n"
    "    %x : [num_users=1] = placeholder[target=x]\n"
    "    %y : [num_users=1] = call_function[target=f](args = (%x,\0), kwargs = {})\n"
    "    %z : [num_users=1] = call_function[target=\xff\xfe\xc3\x28](args = ('caf\xc3\xa9 \xff', %x), kwargs = {})\n"
    "    return z\n";
  OxLoadOptions opt = {0};
  load_opt(&a, nul, sizeof nul - 1, &opt);
  OxGraph *g = graph0(&a);
  g_assert_cmpuint(count_nodes(g), ==, 2);
  const OxDiag *x = find_diag(&a.d, OX_SEV_WARNING, "NUL byte");
  g_assert_nonnull(x);
  g_assert_cmpuint(x->line, ==, 3);
  g_assert_cmpuint(x->col, ==, 61);
  /* non-UTF-8 bytes are kept as they are in targets and strings */
  g_assert_cmpstr(node(g, "z")->target, ==, "\xff\xfe\xc3\x28");
  g_assert_cmpstr(arg(g, "z", 0)->s, ==, "caf\xc3\xa9 \xff");
  g_assert_cmpuint(a.d.n_warnings, ==, 1);
  unload(&a);
  opt.strict = true;
  load_opt(&a, nul, sizeof nul - 1, &opt);
  g_assert_cmpint(a.rc, ==, -1);
  g_assert_cmpint(diag_count(&a.d, OX_SEV_ERROR, 3, "NUL byte"), ==, 1);
  unload(&a);
}

static void test_large_linear(void) {
  /* 200k nodes load in well under the test timeout: lookups are hashed, never scanned */
  GString *s = g_string_new("graph():\n    %n0 : [num_users=1] = placeholder[target=x]\n");
  const int n = 200000;
  for (int i = 1; i < n; i++)
    g_string_append_printf(s,
                           "    %%n%d : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = "
                           "(%%n%d,), kwargs = {})\n",
                           i, i - 1);
  g_string_append_printf(s, "    return n%d\n", n - 1);
  gint64 t0 = g_get_monotonic_time();
  Load l;
  OxLoadOptions opt = {0};
  load_opt(&l, s->str, s->len, &opt);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, (guint)n);
  g_assert_cmpuint(node(g, "n100")->users[0], ==, nid(g, "n101"));
  if (g_test_verbose()) g_printerr("200k nodes: %.2f s\n", (g_get_monotonic_time() - t0) / 1e6);
  unload(&l);
  g_string_free(s, TRUE);
}

static void test_pathological_linear(void) {
  /* 50k definitions of one name: fresh names for duplicates are found in O(1) each */
  GString *s = g_string_new("graph():\n");
  const int n = 50000;
  for (int i = 0; i < n; i++) g_string_append(s, "    %x : [num_users=0] = placeholder[target=x]\n");
  Load l;
  OxLoadOptions opt = {0};
  opt.strict = false;
  gint64 t0 = g_get_monotonic_time();
  load_opt(&l, s->str, s->len, &opt);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, (guint)n);
  g_assert_cmpstr(nth_name(g, n - 1), ==, "x_49999");
  g_assert_cmpuint(l.d.n_warnings, ==, (guint)n - 1);
  unload(&l);
  g_string_free(s, TRUE);
  /* a 4 MB line of "graph(" ending in ':' is not a header, and is rejected in linear time */
  s = g_string_new(NULL);
  for (int i = 0; i < 700000; i++) g_string_append(s, "graph(");
  g_string_append(s, ":\n%y : [num_users=0] = placeholder[target=y]\n");
  load_opt(&l, s->str, s->len, &opt);
  g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, 1);
  g_assert_cmpint(diag_count(&l.d, OX_SEV_NOTE, 1, "outside a graph"), ==, 1);
  unload(&l);
  g_string_free(s, TRUE);
  double secs = (g_get_monotonic_time() - t0) / 1e6;
  if (g_test_verbose()) g_printerr("pathological inputs: %.2f s\n", secs);
  g_assert_cmpfloat(secs, <, 60.0);
}

/* ------------------------------------------------------------------ tests/data/fx */

typedef struct {
  const char *file;
  int rc;             /* lenient */
  uint32_t n_graphs;
  uint32_t nodes0;    /* live nodes except output in graph 0 */
  uint32_t warnings;
  uint32_t warn_line; /* line of the first warning (or error when rc = -1), 0 = none */
  uint32_t warn_col;
  uint32_t subgraphs;
} DataCase;

static const DataCase data_cases[] = {
  {"truncated.txt", 0, 1, 3, 1, 4, 78, 0},
  {"unbalanced.txt", 0, 1, 2, 1, 3, 93, 0},
  {"crlf.txt", 0, 1, 2, 0, 0, 0, 0},
  {"nul.txt", 0, 1, 2, 1, 3, 68, 0},
  {"torch-logs-prefix.txt", 0, 1, 2, 0, 0, 0, 0},
  {"nested-lowered.txt", 0, 1, 5, 0, 0, 0, 2},
  {"marker-merge.txt", 0, 1, 4, 0, 0, 0, 0},
  {"duplicate-def.txt", 0, 1, 3, 1, 4, 5, 0},
  {"only-comments.txt", -1, 0, 0, 0, 1, 1, 0},
  {"empty.txt", -1, 0, 0, 0, 1, 1, 0},
  {"non-utf8.txt", 0, 1, 2, 0, 0, 0, 0},
  {"garbage-between-graphs.txt", 0, 2, 1, 1, 7, 5, 0},
};

static void test_data_files(void) {
  const char *src = g_getenv("G_TEST_SRCDIR");
  char *dir = src ? g_build_filename(src, "data", "fx", NULL) : g_test_build_filename(G_TEST_DIST, "data", "fx", NULL);
  for (size_t i = 0; i < G_N_ELEMENTS(data_cases); i++) {
    const DataCase *dc = &data_cases[i];
    char *path = g_build_filename(dir, dc->file, NULL);
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) g_error("missing test input %s", path);
    for (int strict = 0; strict <= 1; strict++) {
      OxDiagList d;
      ox_diags_init(&d, dc->file);
      OxDoc *doc = NULL;
      OxLoadOptions opt = {0};
      opt.strict = strict;
      int rc = ox_load_file(path, OX_FMT_FX_TEXT, &opt, &doc, &d);
      if (g_test_verbose()) ox_diags_print(&d, stderr);
      /* strict fails exactly when lenient warned */
      int want = strict && dc->warnings ? -1 : dc->rc;
      if (rc != want) g_error("%s (strict=%d): rc %d, expected %d", dc->file, strict, rc, want);
      if (rc == 0) {
        g_assert_cmpuint(doc->n_graphs, ==, dc->n_graphs);
        OxGraph *g = doc->graphs[0];
        g_assert_cmpuint(count_nodes(g), ==, dc->nodes0);
        g_assert_cmpuint(g->n_subgraphs, ==, dc->subgraphs);
        g_assert_cmpuint(d.n_warnings, ==, dc->warnings);
        for (uint32_t k = 0; k < doc->n_graphs; k++) g_assert_cmpint(verify(doc->graphs[k]), ==, 0);
      } else {
        g_assert_null(doc);
        g_assert_cmpuint(d.n_errors, >=, 1);
      }
      if (dc->warn_line) {
        const OxDiag *x = NULL;
        for (size_t k = 0; k < d.n && !x; k++)
          if (d.items[k].sev == (rc == 0 ? OX_SEV_WARNING : OX_SEV_ERROR)) x = &d.items[k];
        g_assert_nonnull(x);
        g_assert_cmpuint(x->line, ==, dc->warn_line);
        g_assert_cmpuint(x->col, ==, dc->warn_col);
      }
      ox_doc_free(doc);
      ox_diags_clear(&d);
    }
    g_free(path);
  }
  g_free(dir);
}

/* ------------------------------------------------------------------ corpus */

static char *corpus_dir(void) {
  const char *shared = g_getenv("OPTIMUS_SHARED");
  if (shared) return g_build_filename(shared, "corpus", "fx-real", NULL);
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  return g_build_filename(root ? root : ".", "..", "shared", "corpus", "fx-real", NULL);
}

static char *corpus_file(const char *dir, const char *num) {
  GDir *d = g_dir_open(dir, 0, NULL);
  if (!d) return NULL;
  char *found = NULL;
  const char *e;
  while ((e = g_dir_read_name(d)))
    if (g_str_has_prefix(e, num) && e[2] == '-') found = g_build_filename(dir, e, NULL);
  g_dir_close(d);
  return found;
}

typedef struct {
  const char *num;
  uint32_t n_graphs;
  uint32_t nodes[3];  /* live nodes except output per top-level graph (subgraphs separately) */
  uint32_t externals; /* total external placeholders */
  uint32_t markers;   /* PlaceHolder markers that stayed (no later definition) */
  uint32_t damaged;   /* lines skipped */
  uint32_t sub_nodes[2];
  bool output;        /* first graph has an output */
} CorpusCase;

/* SOURCES.md counts node lines. Ours differ where a fragment uses names it never defines
 * (+1 external placeholder each), where a PlaceHolder marker merges into the later
 * definition of the same name (-1 each), and where a damaged line is skipped. */
static const CorpusCase corpus_cases[] = {
  {"01", 1, {72}, 0, 0, 0, {0}, true},
  /* 529 node lines: outer 62 + lowered graph 0 463 + lowered graph 1 4 */
  {"02", 1, {62}, 0, 0, 0, {463, 4}, true},
  /* 10 node lines: 2 outer + 8 nested; the outer fragment uses 3 undefined names */
  {"03", 1, {5}, 3, 0, 0, {8}, false},
  {"04", 1, {5}, 0, 0, 0, {0}, true},
  {"05", 1, {4}, 0, 0, 0, {0}, true},
  /* 20 node lines + 9 externals (primals_17, mm_default_35, primals_1, ...) */
  {"06", 1, {29}, 9, 0, 0, {0}, false},
  {"07", 1, {70}, 0, 0, 0, {0}, true},
  /* 14 node lines + the 3 never-defined t_default* (defect kept in the source) */
  {"08", 1, {17}, 3, 0, 0, {0}, true},
  {"09", 3, {5, 2, 2}, 0, 0, 0, {0}, true},
  /* 9 node lines, 3 truncated ones skipped; relu_1 and linalg_norm_1 become externals
   * because the returns name them */
  {"10", 3, {4, 2, 2}, 2, 0, 3, {0}, true},
  {"11", 1, {17}, 0, 0, 0, {0}, false},
  {"12", 1, {7}, 0, 0, 0, {0}, true},
  /* 35 node lines: 14 PlaceHolder of which 4 (add_537, rsqrt_9, mul_1075, rsqrt_10) merge
   * into their definitions; getitem_50 is external: 35 - 4 + 1 */
  {"13", 1, {32}, 1, 10, 0, {0}, true},
  /* 8 node lines + 18 externals (view_97, ..., buf30 from the return) */
  {"14", 1, {26}, 18, 3, 0, {0}, true},
  {"15", 1, {23}, 0, 3, 0, {0}, true},
  /* 19 node lines + getitem_5, getitem_6 */
  {"16", 1, {21}, 2, 2, 0, {0}, true},
  /* 10 node lines + arg0_1 */
  {"17", 1, {11}, 1, 1, 0, {0}, true},
  /* 1749 node lines: all 149 PlaceHolder markers have later definitions; 417 externals */
  {"18", 1, {2017}, 417, 0, 0, {0}, true},
  /* 5 node lines: the %mm marker merges into the mm definition */
  {"19", 1, {4}, 0, 2, 0, {0}, true},
};

static void test_corpus(void) {
  char *dir = corpus_dir();
  if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    char *msg = g_strdup_printf("corpus not found at %s (set OPTIMUS_SHARED)", dir);
    g_test_skip(msg);
    g_free(msg);
    g_free(dir);
    return;
  }
  for (size_t i = 0; i < G_N_ELEMENTS(corpus_cases); i++) {
    const CorpusCase *cc = &corpus_cases[i];
    char *path = corpus_file(dir, cc->num);
    if (!path) g_error("corpus file %s-* missing in %s", cc->num, dir);
    OxDiagList d;
    ox_diags_init(&d, path);
    OxDoc *doc = NULL;
    OxLoadOptions opt = {0};
    int rc = ox_load_file(path, OX_FMT_UNKNOWN, &opt, &doc, &d);
    if (rc != 0) ox_diags_print(&d, stderr);
    g_assert_cmpint(rc, ==, 0);
    g_assert_cmpint(doc->format, ==, OX_FMT_FX_TEXT);
    g_assert_cmpuint(d.n_errors, ==, 0);
    if (doc->n_graphs != cc->n_graphs) g_error("%s: %u graphs, expected %u", cc->num, doc->n_graphs, cc->n_graphs);
    uint32_t ext = 0, markers = 0;
    for (uint32_t k = 0; k < doc->n_graphs; k++) {
      OxGraph *g = doc->graphs[k];
      uint32_t n = count_nodes(g);
      if (n != cc->nodes[k]) g_error("%s graph %u: %u nodes, expected %u", cc->num, k, n, cc->nodes[k]);
      ext += count_flag(g, OX_NODE_EXTERNAL);
      markers += count_flag(g, OX_NODE_MARKER);
      g_assert_cmpint(verify(g), ==, 0);
    }
    OxGraph *g0 = doc->graphs[0];
    for (uint32_t k = 0; k < G_N_ELEMENTS(cc->sub_nodes) && cc->sub_nodes[k]; k++) {
      g_assert_cmpuint(g0->n_subgraphs, >, k);
      g_assert_cmpuint(count_nodes(g0->subgraphs[k]), ==, cc->sub_nodes[k]);
      g_assert_nonnull(g0->subgraphs[k]->sub_owner);
    }
    if (!cc->sub_nodes[0]) g_assert_cmpuint(g0->n_subgraphs, ==, 0);
    g_assert_cmpuint(ext, ==, cc->externals);
    g_assert_cmpuint(markers, ==, cc->markers);
    g_assert_cmpint(diag_count(&d, OX_SEV_WARNING, 0, "skipped damaged line"), ==, (int)cc->damaged);
    g_assert_cmpint(diag_count(&d, OX_SEV_WARNING, 0, "never defined"), ==, (int)cc->externals);
    g_assert_cmpuint(d.n_warnings, ==, cc->externals + cc->damaged);
    g_assert_cmpint(ox_graph_output(g0) != 0, ==, cc->output);
    ox_doc_free(doc);
    ox_diags_clear(&d);
    g_free(path);
  }
  g_free(dir);
}

/* Spot checks of values in real files. */
static OxDoc *load_corpus(const char *num, OxDiagList *d) {
  char *dir = corpus_dir();
  char *path = corpus_file(dir, num);
  g_free(dir);
  if (!path) return NULL;
  ox_diags_init(d, "corpus");
  OxDoc *doc = NULL;
  OxLoadOptions opt = {0};
  int rc = ox_load_file(path, OX_FMT_FX_TEXT, &opt, &doc, d);
  g_assert_cmpint(rc, ==, 0);
  g_free(path);
  return doc;
}

static void test_corpus_details(void) {
  OxDiagList d;
  OxDoc *doc = load_corpus("04", &d);
  if (!doc) {
    g_test_skip("corpus not found (set OPTIMUS_SHARED)");
    return;
  }
  OxGraph *g = doc->graphs[0];
  const OxValue *v = kwarg(g, "reshape", "acc_out_ty");
  g_assert_cmpint(v->kind, ==, OX_V_TUPLE);
  g_assert_cmpuint(v->n, ==, 7);
  g_assert_cmpint(v->u.items[0].kind, ==, OX_V_TUPLE);
  g_assert_cmpuint(v->u.items[0].u.items[0].u.node, ==, nid(g, "getitem_1"));
  g_assert_cmpint(v->u.items[0].u.items[1].u.i, ==, -1);
  g_assert_cmpint(v->u.items[6].kind, ==, OX_V_NONE);
  g_assert_cmpint(node(g, "x")->declared_users, ==, 0);
  ox_doc_free(doc);
  ox_diags_clear(&d);

  doc = load_corpus("13", &d);
  g = doc->graphs[0];
  g_assert_cmpuint(g->src_line, ==, 1);
  const OxTensorMeta *t = ox_node_tensor_meta(node(g, "view_82"));
  g_assert_cmpint(t->rank, ==, 3);
  g_assert_cmpint(t->stride[0].v, ==, 16384);
  g_assert_cmpfloat(arg(g, "add_538", 1)->u.f, ==, 1.1920928955078125e-07);
  g_assert_cmpint(node(g, "var_mean_1")->meta.kind, ==, OX_META_NONE);
  g_assert_cmpuint(out_value(g)->n, ==, 8);
  ox_doc_free(doc);
  ox_diags_clear(&d);

  doc = load_corpus("14", &d);
  g = doc->graphs[0];
  OxNode *fab = node(g, "flex_attention_backward");
  const OxValue *dict = NULL;
  for (uint32_t i = 0; i < fab->args.n; i++)
    if (fab->args.u.items[i].kind == OX_V_DICT) dict = &fab->args.u.items[i];
  g_assert_nonnull(dict);
  g_assert_cmpstr(dict->keys[0], ==, "PRESCALE_QK");
  g_assert_cmpint(kwarg(g, "full_default_37", "device")->kind, ==, OX_V_DEVICE);
  g_assert_cmpint(kwarg(g, "full_default_37", "layout")->kind, ==, OX_V_ENUM);
  ox_doc_free(doc);
  ox_diags_clear(&d);

  doc = load_corpus("17", &d);
  g = doc->graphs[0];
  t = ox_node_tensor_meta(node(g, "full_default"));
  g_assert_cmpstr(t->shape[0].sym, ==, "s2");
  g_assert_cmpint(arg(g, "slice_1", 3)->kind, ==, OX_V_NODE);
  ox_doc_free(doc);
  ox_diags_clear(&d);

  doc = load_corpus("06", &d);
  g = doc->graphs[0];
  g_assert_cmpint(arg(g, "inductor_random_default_11", 2)->kind, ==, OX_V_STR);
  g_assert_cmpstr(arg(g, "inductor_random_default_11", 2)->s, ==, "rand");
  g_assert_cmpint(arg(g, "convert_element_type_23", 1)->u.dtype, ==, OX_DT_F16);
  g_assert_cmpstr(nth_name(g, 0), ==, "primals_17");
  ox_doc_free(doc);
  ox_diags_clear(&d);
}


/* Issue 21: sizes no tensor can have load with a located warning and no meta (an error under
 * --strict), and are not written back; 2^50 elements is still a tensor. */
static void test_absurd_dims(void) {
  static const struct {
    const char *ann, *why;
  } cases[] = {
      {"f32[-5]", "size -5 (dim 0) is negative"},
      {"f32[9223372036854775807]", "size 9223372036854775807 (dim 0) is more than 2^50 elements"},
      {"f32[1e23]", "size 1e23 (dim 0) is not an integer"},
      {"f32[99999999999999999999, 2]", "size 99999999999999999999 (dim 0) is more than 2^50 elements"},
      {"f32[0, 1073741824, 1073741824]", "size 1073741824 (dim 2) makes a zero-size tensor of more than 2^50 elements"},
      {"f32[8, 16][-16, 1]", "stride -16 (dim 0) is negative"},
      {"f32[1048576, 1048576, 2048]", "size 2048 (dim 2) makes more than 2^50 elements"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    char *text = g_strdup_printf("graph():\n"
                                 "    %%x : Tensor \"%s\" = placeholder[target=x]\n"
                                 "    %%relu : Tensor \"f32[4]\" = call_function[target=torch.relu](args = (%%x,), kwargs = {})\n"
                                 "    return relu\n",
                                 cases[i].ann);
    Load l;
    load(&l, text);
    OxGraph *g = graph0(&l);
    char *want = g_strdup_printf("tensor annotation ignored: %s", cases[i].why);
    const OxDiag *w = find_diag(&l.d, OX_SEV_WARNING, want);
    if (!w) {
      ox_diags_print(&l.d, stderr);
      g_error("%s: no warning '%s'", cases[i].ann, want);
    }
    g_assert_cmpuint(w->line, ==, 2);
    g_assert_cmpuint(w->col, ==, 17);
    g_assert_cmpint(node(g, "x")->meta.kind, ==, OX_META_NONE);
    g_assert_cmpint(node(g, "relu")->meta.kind, ==, OX_META_TENSOR);
    OxBuf b;
    ox_buf_init(&b);
    ox_write_fx_text(g, &b);
    g_assert_null(strstr(b.data, cases[i].ann)); /* convert does not write it back */
    ox_buf_free(&b);
    unload(&l);
    load_strict(&l, text);
    g_assert_cmpint(l.rc, ==, -1);
    g_assert_nonnull(find_diag(&l.d, OX_SEV_ERROR, want));
    unload(&l);
    g_free(want);
    g_free(text);
  }
  Load l;
  load(&l, "graph():\n    %x : Tensor \"f32[1048576, 1048576, 1024]\" = placeholder[target=x]\n    return x\n");
  g_assert_cmpint(node(graph0(&l), "x")->meta.kind, ==, OX_META_TENSOR);
  g_assert_cmpuint(l.d.n, ==, 0);
  unload(&l);
}


/* Found by fuzz-fx-readable (issue 21): names with bytes >= 0x80 (Unicode identifiers, or bytes a
 * dump mangled), which the readable loader accepts as Python does, must read back from the FX
 * text we write; before, the FX loader skipped the line and the graph lost its placeholder. */
static void test_high_byte_names(void) {
  static const char py[] = "class GraphModule(torch.nn.Module):\n"
                           "    def forward(self, l_\xd6\xd6" "args_: \"f32[4]\", b\xc3\xa9ta: \"f32[4]\"):\n"
                           "        add: \"f32[4]\" = l_\xd6\xd6" "args_ + b\xc3\xa9ta\n"
                           "        return (add,)\n";
  OxDiagList d;
  ox_diags_init(&d, "t.py");
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_buffer(py, strlen(py), OX_FMT_FX_READABLE, NULL, &doc, &d), ==, 0);
  OxBuf b;
  ox_buf_init(&b);
  ox_write_fx_text(doc->graphs[0], &b);
  Load l;
  load(&l, b.data);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpint(node(g, "l_\xd6\xd6" "args_")->op, ==, OX_OP_PLACEHOLDER);
  g_assert_cmpint(node(g, "b\xc3\xa9ta")->op, ==, OX_OP_PLACEHOLDER);
  g_assert_cmpuint(count_nodes(g), ==, 3);
  g_assert_cmpint(verify(g), ==, 0);
  unload(&l);
  ox_buf_free(&b);
  ox_doc_free(doc);
  ox_diags_clear(&d);
}


/* Found by fuzz-json (issue 21): an empty nested graph is written as a bare "lowered graph():"
 * header; the next line, not indented past the header, belongs to the parent again (it was read
 * as the nested graph's body, so the FX text of such a graph changed on every round trip). */
static void test_empty_nested_graph(void) {
  Load l;
  load(&l, "graph():\n"
           "    %w : [num_users=1] = get_attr[target=w]\n"
           "        lowered graph():\n"
           "    %relu : [num_users=1] = call_function[target=torch.relu](args = (%w,), kwargs = {})\n"
           "    return relu\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_nodes(g), ==, 2);
  g_assert_cmpuint(ox_graph_output(g), !=, 0);
  g_assert_cmpuint(g->n_subgraphs, ==, 1);
  g_assert_cmpuint(g->subgraphs[0]->n_live, ==, 0);
  g_assert_cmpint(verify(g), ==, 0);
  OxBuf b;
  ox_buf_init(&b);
  ox_write_fx_text(g, &b);
  Load l2;
  load(&l2, b.data);
  OxBuf b2;
  ox_buf_init(&b2);
  ox_write_fx_text(graph0(&l2), &b2);
  g_assert_cmpstr(b.data, ==, b2.data);
  ox_buf_free(&b);
  ox_buf_free(&b2);
  unload(&l2);
  unload(&l);
}


/* Found by fuzz-fx-text and fuzz-json (issue 21): a dict with a repeated key keeps the first place
 * and the last value, as Python does (JSON wrote both, json-c read one: the round trip changed the
 * graph); a device the loader knows only from device(type=...) is written back in that form (it
 * was written bare, and read back as a string). */
static void test_dict_keys_and_devices(void) {
  Load l;
  load(&l, "graph():\n"
           "    %x : [num_users=1] = placeholder[target=x]\n"
           "    %i : [num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (%x, "
           "device(type='ipu', index=1), device(type='cuda', index=0), device(type='weird')), "
           "kwargs = {start: 0, step: 1, dtype: torch.int64, step: 2})\n"
           "    return i\n");
  OxGraph *g = graph0(&l);
  OxNode *n = node(g, "i");
  g_assert_cmpuint(n->kwargs.n, ==, 3);
  g_assert_cmpstr(n->kwargs.keys[1], ==, "step");
  g_assert_cmpint(n->kwargs.u.items[1].u.i, ==, 2);
  for (uint32_t k = 1; k <= 3; k++) g_assert_cmpint(n->args.u.items[k].kind, ==, OX_V_DEVICE);
  OxBuf b;
  ox_buf_init(&b);
  ox_write_fx_text(g, &b);
  g_assert_nonnull(strstr(b.data, "device(type='ipu', index=1), cuda:0, device(type='weird')"));
  g_assert_nonnull(strstr(b.data, "kwargs = {start: 0, step: 2, dtype: torch.int64}"));
  Load l2;
  load(&l2, b.data);
  OxNode *n2 = node(graph0(&l2), "i");
  for (uint32_t k = 1; k <= 3; k++) g_assert_cmpint(n2->args.u.items[k].kind, ==, OX_V_DEVICE);
  OxBuf b2;
  ox_buf_init(&b2);
  ox_write_fx_text(graph0(&l2), &b2);
  g_assert_cmpstr(b.data, ==, b2.data);
  /* JSON: written once, read, written again: the same bytes */
  OxBuf j1, j2;
  ox_buf_init(&j1);
  ox_buf_init(&j2);
  ox_write_json(l.doc, &j1);
  OxDoc *back = NULL;
  OxDiagList d;
  ox_diags_init(&d, "j");
  g_assert_cmpint(ox_load_buffer(j1.data, j1.len, OX_FMT_JSON, NULL, &back, &d), ==, 0);
  ox_write_json(back, &j2);
  g_assert_cmpstr(j1.data, ==, j2.data);
  ox_doc_free(back);
  ox_diags_clear(&d);
  ox_buf_free(&j1);
  ox_buf_free(&j2);
  ox_buf_free(&b);
  ox_buf_free(&b2);
  unload(&l2);
  unload(&l);
}

/* Annotations repeat (the loader remembers the last four texts and their metas): a dump
 * cycling through seven texts, an absurd one among them, gets every node's meta as the text
 * alone reads, and a warning for each absurd line. */
static void test_repeated_annotations(void) {
  static const char *const anns[7] = {"f32[8, 16][16, 1]cpu", "f32[8, 16]", "bf16[8, 16][16, 1]cuda:0", "f32[-3, 2]",
                                      "i64[4]", "f32[s0, 16][16, 1]cpu", "f32[8, 16][1, 8]cpu"};
  GString *t = g_string_new("graph():\n    %x : [num_users=1] = placeholder[target=x]\n");
  const char *prev = "x";
  char name[32], prevbuf[32];
  for (int i = 0; i < 70; i++) {
    snprintf(name, sizeof name, "n%d", i);
    g_string_append_printf(t,
                           "    %%%s : Tensor \"%s\"[num_users=1] = call_function[target=torch.relu](args = (%%%s,), "
                           "kwargs = {})\n",
                           name, anns[(i * 3) % 7], prev);
    snprintf(prevbuf, sizeof prevbuf, "%s", name);
    prev = prevbuf;
  }
  g_string_append_printf(t, "    return %s\n", prev);
  Load l;
  load(&l, t->str);
  OxGraph *g = graph0(&l);
  uint32_t absurd = 0;
  for (size_t i = 0; i < l.d.n; i++) absurd += strstr(l.d.items[i].msg, "-3") != NULL;
  g_assert_cmpuint(absurd, ==, 10); /* lines 3, 10, ... (i*3 % 7 == 3): one warning each */
  OxGraph *ref = ox_graph_new();
  for (int i = 0; i < 70; i++) {
    snprintf(name, sizeof name, "n%d", i);
    const char *a = anns[(i * 3) % 7];
    OxMeta want;
    bool ok = ox_parse_tensor_annotation(ref, a, strlen(a), &want);
    const OxNode *n = node(g, name);
    if (!ok) {
      g_assert_cmpint(n->meta.kind, ==, OX_META_NONE);
      continue;
    }
    g_assert_cmpint(n->meta.kind, ==, want.kind);
    g_assert_cmpuint(n->meta.n, ==, 1);
    const OxTensorMeta *x = &n->meta.t[0], *y = &want.t[0];
    g_assert_cmpint(x->dtype, ==, y->dtype);
    g_assert_cmpint(x->rank, ==, y->rank);
    g_assert_cmpint(x->has_stride, ==, y->has_stride);
    for (int32_t d = 0; d < x->rank; d++) {
      g_assert_cmpint(x->shape[d].v, ==, y->shape[d].v);
      g_assert_cmpstr(x->shape[d].sym, ==, y->shape[d].sym);
      if (x->has_stride) g_assert_cmpint(x->stride[d].v, ==, y->stride[d].v);
    }
    g_assert_cmpstr(x->device, ==, y->device);
  }
  ox_graph_free(ref);
  unload(&l);
  g_string_free(t, TRUE);
}

/* A symbolic size longer than the writer's 128-byte scratch (found by fuzz-fx-readable: the
 * written size was cut at 127 bytes, mid-word, and the text did not read back as itself) is
 * written whole, and dump -> text -> dump -> text is a fixed point. */
static void test_long_symbolic_size(void) {
  GString *sym = g_string_new("s0");
  while (sym->len < 300) g_string_append(sym, " + s0 ");
  g_string_append(sym, "+ s1");
  char *text = g_strdup_printf("graph():\n    %%x : Tensor \"f32[%s, 32][32, 1]cpu\"[num_users=1] = "
                               "placeholder[target=x]\n    return (x,)\n",
                               sym->str);
  Load l;
  load(&l, text);
  OxGraph *g = graph0(&l);
  const OxTensorMeta *t = ox_node_tensor_meta(node(g, "x"));
  g_assert_nonnull(t);
  g_assert_cmpstr(t->shape[0].sym, ==, sym->str);
  OxBuf b1, b2;
  ox_buf_init(&b1);
  ox_buf_init(&b2);
  ox_write_fx_text(g, &b1);
  g_assert_nonnull(strstr(b1.data, sym->str));
  Load l2;
  load(&l2, b1.data);
  g_assert_cmpstr(ox_node_tensor_meta(node(graph0(&l2), "x"))->shape[0].sym, ==, sym->str);
  ox_write_fx_text(graph0(&l2), &b2);
  g_assert_cmpstr(b1.data, ==, b2.data);
  ox_buf_free(&b1);
  ox_buf_free(&b2);
  unload(&l2);
  unload(&l);
  g_free(text);
  g_string_free(sym, TRUE);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/parse-fx/basic", test_basic);
  g_test_add_func("/engine/parse-fx/old-users-type-ann", test_old_users_type_ann);
  g_test_add_func("/engine/parse-fx/inductor-annotations", test_inductor_annotations);
  g_test_add_func("/engine/parse-fx/repeated-annotations", test_repeated_annotations);
  g_test_add_func("/engine/parse-fx/long-symbolic-size", test_long_symbolic_size);
  g_test_add_func("/engine/parse-fx/all-dtype-abbrs", test_all_dtype_abbrs);
  g_test_add_func("/engine/parse-fx/args-grammar", test_args_grammar);
  g_test_add_func("/engine/parse-fx/raw-values", test_raw_values);
  g_test_add_func("/engine/parse-fx/returns", test_returns);
  g_test_add_func("/engine/parse-fx/headers", test_headers);
  g_test_add_func("/engine/parse-fx/several-graphs", test_several_graphs);
  g_test_add_func("/engine/parse-fx/fragments", test_fragments);
  g_test_add_func("/engine/parse-fx/prefix", test_prefix_torch_logs);
  g_test_add_func("/engine/parse-fx/nested-lowered", test_nested_lowered);
  g_test_add_func("/engine/parse-fx/nested-fragment", test_nested_fragment_no_header);
  g_test_add_func("/engine/parse-fx/markers", test_markers);
  g_test_add_func("/engine/parse-fx/externals", test_externals);
  g_test_add_func("/engine/parse-fx/forward-reference", test_forward_reference);
  g_test_add_func("/engine/parse-fx/duplicates", test_duplicates);
  g_test_add_func("/engine/parse-fx/placeholder-default", test_placeholder_default);
  g_test_add_func("/engine/parse-fx/damaged/truncated", test_truncated_line);
  g_test_add_func("/engine/parse-fx/damaged/unbalanced-garbage", test_unbalanced_and_garbage);
  g_test_add_func("/engine/parse-fx/damaged/deep-nesting", test_deep_nesting);
  g_test_add_func("/engine/parse-fx/damaged/huge-line", test_huge_line);
  g_test_add_func("/engine/parse-fx/damaged/random-bytes", test_random_bytes);
  g_test_add_func("/engine/parse-fx/damaged/empty-comments", test_empty_and_comments);
  g_test_add_func("/engine/parse-fx/damaged/crlf-nul-utf8", test_crlf_nul_utf8);
  g_test_add_func("/engine/parse-fx/large-linear", test_large_linear);
  g_test_add_func("/engine/parse-fx/pathological-linear", test_pathological_linear);
  g_test_add_func("/engine/parse-fx/data-files", test_data_files);
  g_test_add_func("/engine/parse-fx/corpus", test_corpus);
  g_test_add_func("/engine/parse-fx/absurd-dims", test_absurd_dims);
  g_test_add_func("/engine/parse-fx/high-byte-names", test_high_byte_names);
  g_test_add_func("/engine/parse-fx/empty-nested-graph", test_empty_nested_graph);
  g_test_add_func("/engine/parse-fx/dict-keys-devices", test_dict_keys_and_devices);
  g_test_add_func("/engine/parse-fx/corpus-details", test_corpus_details);
  return g_test_run();
}
