/* Tests for the print(graph) writer (engine/write/ox_write_fx.c): exact text for hand-built
 * graphs (no parser involved), value formatting, nested "lowered graph():" blocks, and the
 * write -> ox_parse_fx_text round trip on hand-built graphs and on the real corpus.
 *
 * The round trip compares names, ops, targets, args/kwargs and tensor meta. Intentional
 * normalisations (see the header of engine/write/ox_write_fx.c): only tensor meta is printed
 * (tuple/SymInt/scalar meta is not part of print(graph)), a known dtype prints its
 * canonical torch name, node flags, declared user counts, stack traces and graph titles
 * are not printed, and a subgraph's owner survives the parser only when the owner is a
 * get_attr (executorch's shape), so text stability is checked only for such graphs.
 *
 * Corpus path: $OPTIMUS_SHARED/corpus/fx-real, OPTIMUS_SHARED defaulting to
 * "$OPTIMUS_SOURCE_ROOT/../shared"; corpus tests are skipped with a reason when absent. */
#include <glib.h>

#include "test-common.h"
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_graph.h"
#include "load/ox_load.h"
#include "load/ox_parse.h"
#include "write/ox_write.h"

/* ------------------------------------------------------------------ building */

static OxValue seq(OxGraph *g, OxValueKind k, int n, ...) {
  OxValue items[16];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) items[i] = va_arg(ap, OxValue);
  va_end(ap);
  return ox_graph_value_seq(g, k, items, (uint32_t)n);
}

#define TUP(g, ...) seq((g), OX_V_TUPLE, __VA_ARGS__)
#define NODE(id) ox_value_node(id)

static OxValue strv(OxGraph *g, OxValueKind k, const char *s) { return ox_graph_value_str(g, k, s); }

static OxNodeId ph(OxGraph *g, const char *name) {
  return ox_graph_add_node(g, OX_OP_PLACEHOLDER, name, name, ox_value_none(), ox_value_none());
}

static OxNodeId fn(OxGraph *g, const char *name, const char *target, OxValue args) {
  return ox_graph_add_node(g, OX_OP_CALL_FUNCTION, name, target, args, ox_value_none());
}

static OxNodeId out(OxGraph *g, OxValue result) {
  return ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", TUP(g, 1, result), ox_value_none());
}

/* Tensor meta built in the graph arena and assigned directly (no copy needed). */
static void tensor(OxGraph *g, OxNodeId id, OxDType dt, int rank, const char *const *dims, const int64_t *stride,
                   const char *device) {
  OxTensorMeta *t = ox_graph_tensor_meta_new(g, dt, rank);
  for (int i = 0; i < rank; i++) {
    char *end;
    long long v = strtoll(dims[i], &end, 10);
    if (*end)
      t->shape[i].sym = ox_graph_intern(g, dims[i]);
    else
      t->shape[i].v = v;
  }
  if (stride) {
    t->has_stride = true;
    t->stride = rank ? ox_graph_alloc(g, (size_t)rank * sizeof(OxDim)) : NULL;
    for (int i = 0; i < rank; i++) t->stride[i].v = stride[i];
  }
  t->device = device ? ox_graph_intern(g, device) : NULL;
  OxMeta *m = &g->nodes[id].meta;
  memset(m, 0, sizeof *m);
  m->kind = OX_META_TENSOR;
  m->n = 1;
  m->t = t;
}

static char *fx_text(const OxGraph *g) {
  OxBuf b;
  ox_buf_init(&b);
  ox_write_fx_text(g, &b);
  char *s = g_strndup(b.data ? b.data : "", b.len);
  ox_buf_free(&b);
  return s;
}

static char *fx_value(const OxGraph *g, OxValue v) {
  OxBuf b;
  ox_buf_init(&b);
  ox_write_fx_value(g, &v, &b);
  char *s = g_strndup(b.data ? b.data : "", b.len);
  ox_buf_free(&b);
  return s;
}

/* ------------------------------------------------------------------ exact text (no parser) */

/* Spec 1.4(a)'s example, byte for byte. */
static OxGraph *spec_graph(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxNodeId param = ox_graph_add_node(g, OX_OP_GET_ATTR, "param", "param", ox_value_none(), ox_value_none());
  OxNodeId add = fn(g, "add", "operator.add", TUP(g, 2, NODE(x), NODE(param)));
  OxNodeId lin = ox_graph_add_node(g, OX_OP_CALL_MODULE, "linear", "linear", TUP(g, 1, NODE(add)), ox_value_none());
  const char *keys[2] = {"min", "max"};
  OxValue vals[2] = {ox_value_float(0.0), ox_value_float(1.0)};
  OxNodeId clamp = ox_graph_add_node(g, OX_OP_CALL_METHOD, "clamp", "clamp", TUP(g, 1, NODE(lin)),
                                     ox_graph_value_dict(g, keys, vals, 2));
  out(g, NODE(clamp));
  return g;
}

static void test_spec_example(void) {
  OxGraph *g = spec_graph();
  char *s = fx_text(g);
  g_assert_cmpstr(s, ==,
                  "graph():\n"
                  "    %x : [num_users=1] = placeholder[target=x]\n"
                  "    %param : [num_users=1] = get_attr[target=param]\n"
                  "    %add : [num_users=1] = call_function[target=operator.add](args = (%x, %param), kwargs = {})\n"
                  "    %linear : [num_users=1] = call_module[target=linear](args = (%add,), kwargs = {})\n"
                  "    %clamp : [num_users=1] = call_method[target=clamp](args = (%linear,), kwargs = {min: 0.0, max: 1.0})\n"
                  "    return clamp\n");
  g_free(s);
  ox_graph_free(g);
}

/* The real AOT forward graph of spec 1.4(a): tuple return, fan-out, int literal. */
static OxGraph *aot_graph(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId p1 = ph(g, "primals_1"), p2 = ph(g, "primals_2"), p3 = ph(g, "primals_3"), p4 = ph(g, "primals_4");
  OxNodeId t = fn(g, "t", "torch.ops.aten.t.default", TUP(g, 1, NODE(p1)));
  OxNodeId addmm = fn(g, "addmm", "torch.ops.aten.addmm.default", TUP(g, 3, NODE(p2), NODE(p3), NODE(t)));
  OxNodeId sub = fn(g, "sub", "torch.ops.aten.sub.Tensor", TUP(g, 2, NODE(addmm), NODE(p4)));
  OxNodeId mul = fn(g, "mul", "torch.ops.aten.mul.Tensor", TUP(g, 2, NODE(sub), ox_value_int(100)));
  out(g, TUP(g, 2, NODE(mul), NODE(p3)));
  return g;
}

static void test_aot_example(void) {
  OxGraph *g = aot_graph();
  char *s = fx_text(g);
  g_assert_cmpstr(s, ==,
                  "graph():\n"
                  "    %primals_1 : [num_users=1] = placeholder[target=primals_1]\n"
                  "    %primals_2 : [num_users=1] = placeholder[target=primals_2]\n"
                  "    %primals_3 : [num_users=2] = placeholder[target=primals_3]\n"
                  "    %primals_4 : [num_users=1] = placeholder[target=primals_4]\n"
                  "    %t : [num_users=1] = call_function[target=torch.ops.aten.t.default](args = (%primals_1,), kwargs = {})\n"
                  "    %addmm : [num_users=1] = call_function[target=torch.ops.aten.addmm.default](args = (%primals_2, %primals_3, %t), kwargs = {})\n"
                  "    %sub : [num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%addmm, %primals_4), kwargs = {})\n"
                  "    %mul : [num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sub, 100), kwargs = {})\n"
                  "    return (mul, primals_3)\n");
  g_free(s);
  ox_graph_free(g);
}

/* Inductor-style annotations where meta is a known tensor; num_users is the live count. */
static OxGraph *annotated_graph(bool unknown_rank) {
  OxGraph *g = ox_graph_new();
  OxNodeId a = ph(g, "a"), b = ph(g, "b");
  const char *d816[2] = {"8", "16"}, *ds[2] = {"s0", "3"};
  int64_t st816[2] = {16, 1}, st3[2] = {3, 1};
  tensor(g, a, OX_DT_F32, 2, d816, st816, "cuda:0");
  tensor(g, b, OX_DT_F32, 2, ds, st3, NULL);
  g->nodes[b].type_ann = ox_graph_intern(g, "torch.Tensor");
  g->nodes[b].declared_users = 7; /* what the dump said; the writer prints the live count */
  OxNodeId mm = fn(g, "mm", "torch.ops.aten.mm.default", TUP(g, 2, NODE(a), NODE(b)));
  tensor(g, mm, OX_DT_F32, 2, d816, st816, "cuda:0");
  OxNodeId sum = fn(g, "sum_1", "torch.ops.aten.sum.default", TUP(g, 1, NODE(mm)));
  static const int64_t no_strides[1] = {0};
  tensor(g, sum, OX_DT_BF16, 0, NULL, no_strides, "cuda:0"); /* "bf16[][]": 0-d with its (empty) stride */
  OxNodeId unk = fn(g, "unk", "torch.ops.aten.sum.default", TUP(g, 1, NODE(mm)));
  /* dtype known, shape not: ox_tensor_meta_format prints the dtype alone */
  if (unknown_rank) tensor(g, unk, OX_DT_I64, -1, NULL, NULL, NULL);
  const char *keys[2] = {"pin_memory", "memory_format"};
  OxValue vals[2] = {ox_value_bool(false), strv(g, OX_V_ENUM, "torch.preserve_format")};
  OxNodeId ol = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "ones_like", "torch.ops.aten.ones_like.default",
                                  TUP(g, 1, NODE(sum)), ox_graph_value_dict(g, keys, vals, 2));
  out(g, TUP(g, 3, NODE(ol), NODE(unk), NODE(mm)));
  return g;
}

static void test_annotations(void) {
  OxGraph *g = annotated_graph(true);
  char *s = fx_text(g);
  g_assert_cmpstr(s, ==,
                  "graph():\n"
                  "    %a : Tensor \"f32[8, 16][16, 1]cuda:0\"[num_users=1] = placeholder[target=a]\n"
                  "    %b : torch.Tensor \"f32[s0, 3][3, 1]\"[num_users=1] = placeholder[target=b]\n"
                  "    %mm : Tensor \"f32[8, 16][16, 1]cuda:0\"[num_users=3] = call_function[target=torch.ops.aten.mm.default](args = (%a, %b), kwargs = {})\n"
                  "    %sum_1 : Tensor \"bf16[][]cuda:0\"[num_users=1] = call_function[target=torch.ops.aten.sum.default](args = (%mm,), kwargs = {})\n"
                  "    %unk : Tensor \"i64\"[num_users=1] = call_function[target=torch.ops.aten.sum.default](args = (%mm,), kwargs = {})\n"
                  "    %ones_like : [num_users=1] = call_function[target=torch.ops.aten.ones_like.default](args = (%sum_1,), kwargs = {pin_memory: False, memory_format: torch.preserve_format})\n"
                  "    return (ones_like, unk, mm)\n");
  g_free(s);
  ox_graph_free(g);
}

static void test_placeholder_default_and_returns(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  g->nodes[x].type_ann = ox_graph_intern(g, "torch.Tensor");
  OxNodeId y = ph(g, "y");
  g->nodes[y].default_value = ox_graph_intern(g, "1.0");
  OxNodeId z = ph(g, "z");
  g->nodes[z].default_value = ox_graph_intern(g, "");
  OxNodeId o = out(g, seq(g, OX_V_LIST, 1, NODE(x)));
  char *s = fx_text(g);
  g_assert_cmpstr(s, ==,
                  "graph():\n"
                  "    %x : torch.Tensor [num_users=1] = placeholder[target=x]\n"
                  "    %y : [num_users=0] = placeholder[target=y](default=1.0)\n"
                  "    %z : [num_users=0] = placeholder[target=z](default=)\n"
                  "    return [x]\n");
  g_free(s);
  /* other return shapes */
  ox_graph_set_args(g, o, TUP(g, 1, TUP(g, 1, NODE(x))));
  s = fx_text(g);
  g_assert_true(g_str_has_suffix(s, "    return (x,)\n"));
  g_free(s);
  ox_graph_set_args(g, o, TUP(g, 1, TUP(g, 3, NODE(x), ox_value_none(), seq(g, OX_V_LIST, 2, NODE(y), NODE(z)))));
  s = fx_text(g);
  g_assert_true(g_str_has_suffix(s, "    return (x, None, [y, z])\n"));
  g_free(s);
  ox_graph_set_args(g, o, TUP(g, 0));
  s = fx_text(g);
  g_assert_true(g_str_has_suffix(s, "    return None\n"));
  g_free(s);
  ox_graph_free(g);
}

static void test_values(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxValue ell = ox_value_none();
  ell.kind = OX_V_ELLIPSIS;
  OxValue unk_dt = ox_value_dtype(OX_DT_UNKNOWN);
  unk_dt.s = ox_graph_intern(g, "torch.float128");
  OxValue alias_dt = ox_value_dtype(OX_DT_I64);
  alias_dt.s = ox_graph_intern(g, "torch.long");
  const char *dk[3] = {"dim", "out", "not an ident"};
  OxValue dv[3] = {ox_value_int(1), NODE(x), ox_value_none()};
  struct {
    OxValue v;
    const char *want;
  } cases[] = {
    {ox_value_none(), "None"},
    {ox_value_bool(true), "True"},
    {ox_value_bool(false), "False"},
    {ox_value_int(-100), "-100"},
    {ox_value_int(INT64_MIN), "-9223372036854775808"},
    {ox_value_float(1.0), "1.0"},
    {ox_value_float(-1.0), "-1.0"},
    {ox_value_float(1e-05), "1e-05"},
    {ox_value_float(0.1), "0.1"},
    {ox_value_float(0.09999999999999998), "0.09999999999999998"},
    {ox_value_float(1.1920928955078125e-07), "1.1920928955078125e-07"},
    {ox_value_float(1e16), "1e+16"},
    {ox_value_float(INFINITY), "inf"},
    {ox_value_float(-INFINITY), "-inf"},
    {ox_value_float(NAN), "nan"},
    {ox_value_dtype(OX_DT_F32), "torch.float32"},
    {ox_value_dtype(OX_DT_BOOL), "torch.bool"},
    {alias_dt, "torch.int64"},
    {unk_dt, "torch.float128"},
    {strv(g, OX_V_DEVICE, "cuda:0"), "cuda:0"},
    {strv(g, OX_V_DEVICE, "cpu"), "cpu"},
    {strv(g, OX_V_ENUM, "torch.contiguous_format"), "torch.contiguous_format"},
    {strv(g, OX_V_SYM, "s0"), "s0"},
    {strv(g, OX_V_SYM, "4096*s0"), "4096*s0"},
    {strv(g, OX_V_RAW, "torch.ops.aten.mm.default"), "torch.ops.aten.mm.default"},
    {ell, "Ellipsis"},
    {strv(g, OX_V_STR, "sum"), "sum"},
    {strv(g, OX_V_STR, "rand"), "rand"},
    {strv(g, OX_V_STR, "cpu"), "'cpu'"},
    {strv(g, OX_V_STR, "None"), "'None'"},
    {strv(g, OX_V_STR, "s0"), "'s0'"},
    {strv(g, OX_V_STR, ""), "''"},
    {strv(g, OX_V_STR, "12"), "'12'"},
    {strv(g, OX_V_STR, "a b"), "'a b'"},
    {strv(g, OX_V_STR, "torch.float32"), "'torch.float32'"},
    {strv(g, OX_V_STR, "it's"), "\"it's\""},
    {strv(g, OX_V_STR, "a'b\"c\\\n"), "'a\\'b\"c\\\\\\n'"},
    {NODE(x), "%x"},
    {TUP(g, 0), "()"},
    {TUP(g, 1, ox_value_int(1)), "(1,)"},
    {TUP(g, 2, NODE(x), ox_value_none()), "(%x, None)"},
    {seq(g, OX_V_LIST, 0), "[]"},
    {seq(g, OX_V_LIST, 3, ox_value_none(), seq(g, OX_V_LIST, 1, ox_value_none()), TUP(g, 1, TUP(g, 0))),
     "[None, [None], ((),)]"},
    {seq(g, OX_V_SLICE, 3, ox_value_none(), ox_value_none(), ox_value_none()), "slice(None, None, None)"},
    {seq(g, OX_V_SLICE, 3, ox_value_int(1), NODE(x), ox_value_int(2)), "slice(1, %x, 2)"},
    {ox_graph_value_dict(g, dk, dv, 3), "{dim: 1, out: %x, 'not an ident': None}"},
    {ox_graph_value_dict(g, NULL, NULL, 0), "{}"},
    {TUP(g, 2, TUP(g, 2, ox_value_int(1), ox_value_int(1280)), ox_value_dtype(OX_DT_F32)), "((1, 1280), torch.float32)"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    char *s = fx_value(g, cases[i].v);
    if (strcmp(s, cases[i].want) != 0) g_error("case %zu: got %s, want %s", i, s, cases[i].want);
    g_free(s);
  }
  ox_graph_free(g);
}

/* executorch's delegated graph: the lowered graph follows its get_attr owner. */
static OxGraph *delegated_graph(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxNodeId lm = ox_graph_add_node(g, OX_OP_GET_ATTR, "lowered_module_0", "lowered_module_0", ox_value_none(),
                                  ox_value_none());
  OxNodeId call = fn(g, "executorch_call_delegate", "torch.ops.higher_order.executorch_call_delegate",
                     TUP(g, 2, NODE(lm), NODE(x)));
  OxNodeId gi = fn(g, "getitem", "operator.getitem", TUP(g, 2, NODE(call), ox_value_int(0)));
  out(g, TUP(g, 1, NODE(gi)));
  OxGraph *sub = ox_graph_new();
  sub->name = ox_graph_intern(sub, "lowered graph 0");
  sub->sub_owner = ox_graph_intern(sub, "lowered_module_0");
  OxNodeId p = ph(sub, "p");
  OxNodeId r = fn(sub, "aten_relu_default", "executorch.exir.dialects.edge._ops.aten.relu.default", TUP(sub, 1, NODE(p)));
  out(sub, TUP(sub, 1, NODE(r)));
  ox_graph_add_subgraph(g, sub);
  return g;
}

static void test_subgraph_block(void) {
  OxGraph *g = delegated_graph();
  char *s = fx_text(g);
  g_assert_cmpstr(s, ==,
                  "graph():\n"
                  "    %x : [num_users=1] = placeholder[target=x]\n"
                  "    %lowered_module_0 : [num_users=1] = get_attr[target=lowered_module_0]\n"
                  "        lowered graph():\n"
                  "            %p : [num_users=1] = placeholder[target=p]\n"
                  "            %aten_relu_default : [num_users=1] = call_function[target=executorch.exir.dialects.edge._ops.aten.relu.default](args = (%p,), kwargs = {})\n"
                  "            return (aten_relu_default,)\n"
                  "    %executorch_call_delegate : [num_users=1] = call_function[target=torch.ops.higher_order.executorch_call_delegate](args = (%lowered_module_0, %x), kwargs = {})\n"
                  "    %getitem : [num_users=1] = call_function[target=operator.getitem](args = (%executorch_call_delegate, 0), kwargs = {})\n"
                  "    return (getitem,)\n");
  g_free(s);
  /* a subgraph whose owner is not in the graph goes before the return line */
  OxGraph *orphan = ox_graph_new();
  ph(orphan, "q");
  ox_graph_add_subgraph(g, orphan);
  s = fx_text(g);
  g_assert_true(g_str_has_suffix(s, "    %getitem : [num_users=1] = call_function[target=operator.getitem](args = (%executorch_call_delegate, 0), kwargs = {})\n"
                                    "        lowered graph():\n"
                                    "            %q : [num_users=0] = placeholder[target=q]\n"
                                    "    return (getitem,)\n"));
  g_free(s);
  ox_graph_free(g);
}

/* ------------------------------------------------------------------ round trip through the parser */

static bool str_same(const char *a, const char *b) {
  if (!a || !b) return a == b;
  return strcmp(a, b) == 0;
}

/* Structural equality with node references compared by name and known dtypes by value
 * (the writer prints a known dtype's canonical name, as str(torch.long) does). */
static bool value_same(const OxGraph *ga, const OxValue *a, const OxGraph *gb, const OxValue *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case OX_V_NODE: {
    const OxNode *na = ox_graph_node(ga, a->u.node), *nb = ox_graph_node(gb, b->u.node);
    return na && nb && strcmp(na->name, nb->name) == 0;
  }
  case OX_V_DTYPE:
    if (a->u.dtype != OX_DT_UNKNOWN) return a->u.dtype == b->u.dtype;
    return ox_value_equal(a, b);
  case OX_V_LIST:
  case OX_V_TUPLE:
  case OX_V_SLICE:
  case OX_V_DICT:
    if (a->n != b->n) return false;
    for (uint32_t i = 0; i < a->n; i++) {
      if (a->kind == OX_V_DICT && !str_same(a->keys[i], b->keys[i])) return false;
      if (!value_same(ga, &a->u.items[i], gb, &b->u.items[i])) return false;
    }
    return true;
  default: return ox_value_equal(a, b);
  }
}

static bool tmeta_same(const OxTensorMeta *a, const OxTensorMeta *b) {
  if (a->dtype != b->dtype || a->rank != b->rank || a->has_stride != b->has_stride) return false;
  if (!str_same(a->device, b->device)) return false;
  for (int32_t i = 0; i < a->rank; i++) {
    if (!str_same(a->shape[i].sym, b->shape[i].sym) || (!a->shape[i].sym && a->shape[i].v != b->shape[i].v))
      return false;
    if (a->has_stride &&
        (!str_same(a->stride[i].sym, b->stride[i].sym) || (!a->stride[i].sym && a->stride[i].v != b->stride[i].v)))
      return false;
  }
  return true;
}

static void value_text(const OxGraph *g, const OxValue *v, GString *s) {
  OxBuf b;
  ox_buf_init(&b);
  ox_write_fx_value(g, v, &b);
  g_string_append_len(s, b.data ? b.data : "", (gssize)b.len);
  ox_buf_free(&b);
}

static bool fx_same(const OxGraph *a, const OxGraph *b, GString *why);

/* The subgraphs of a in the order the writer emits them. */
static uint32_t emission_order(const OxGraph *a, const OxGraph **order) {
  uint32_t n = 0;
  OxNodeId outn = ox_graph_output(a);
  OX_GRAPH_FOREACH(a, id) {
    if (id == outn)
      for (uint32_t i = 0; i < a->n_subgraphs; i++)
        if (!a->subgraphs[i]->sub_owner || !ox_graph_find(a, a->subgraphs[i]->sub_owner)) order[n++] = a->subgraphs[i];
    for (uint32_t i = 0; i < a->n_subgraphs; i++)
      if (str_same(a->subgraphs[i]->sub_owner, a->nodes[id].name)) order[n++] = a->subgraphs[i];
  }
  if (!outn)
    for (uint32_t i = 0; i < a->n_subgraphs; i++)
      if (!a->subgraphs[i]->sub_owner || !ox_graph_find(a, a->subgraphs[i]->sub_owner)) order[n++] = a->subgraphs[i];
  return n;
}

static bool fx_same(const OxGraph *a, const OxGraph *b, GString *why) {
  if (a->n_live != b->n_live) {
    g_string_append_printf(why, "graph %s: %u vs %u live nodes", a->name, a->n_live, b->n_live);
    return false;
  }
  OxNodeId ia = a->head, ib = b->head;
  for (;;) {
    while (ia && a->nodes[ia].erased) ia = a->link[ia].next;
    while (ib && b->nodes[ib].erased) ib = b->link[ib].next;
    if (!ia || !ib) break;
    const OxNode *x = &a->nodes[ia], *y = &b->nodes[ib];
    const char *what = NULL;
    if (!str_same(x->name, y->name)) what = "name";
    else if (x->op != y->op) what = "op";
    else if (!str_same(x->target, y->target)) what = "target";
    else if (!value_same(a, &x->args, b, &y->args)) what = "args";
    else if (!value_same(a, &x->kwargs, b, &y->kwargs)) what = "kwargs";
    else if (x->meta.kind == OX_META_TENSOR && x->meta.n >= 1
                 ? !(y->meta.kind == OX_META_TENSOR && y->meta.n >= 1 && tmeta_same(&x->meta.t[0], &y->meta.t[0]))
                 : y->meta.kind == OX_META_TENSOR)
      what = "meta";
    if (what) {
      g_string_append_printf(why, "graph %s: node %s (reparsed as %s): %s differ", a->name, x->name, y->name, what);
      if (!strcmp(what, "args") || !strcmp(what, "kwargs")) {
        g_string_append(why, ": ");
        value_text(a, what[0] == 'a' ? &x->args : &x->kwargs, why);
        g_string_append(why, " vs ");
        value_text(b, what[0] == 'a' ? &y->args : &y->kwargs, why);
      }
      return false;
    }
    ia = a->link[ia].next;
    ib = b->link[ib].next;
  }
  if (a->n_subgraphs != b->n_subgraphs) {
    g_string_append_printf(why, "graph %s: %u vs %u subgraphs", a->name, a->n_subgraphs, b->n_subgraphs);
    return false;
  }
  const OxGraph **order = g_new0(const OxGraph *, a->n_subgraphs + 1);
  uint32_t n = emission_order(a, order);
  bool ok = n == a->n_subgraphs;
  for (uint32_t i = 0; ok && i < n; i++) {
    const OxGraph *sa = order[i], *sb = b->subgraphs[i];
    OxNodeId owner = sa->sub_owner ? ox_graph_find(a, sa->sub_owner) : 0;
    if (owner && a->nodes[owner].op == OX_OP_GET_ATTR && !str_same(sa->sub_owner, sb->sub_owner)) {
      g_string_append_printf(why, "subgraph of %s reparsed with owner %s", sa->sub_owner,
                             sb->sub_owner ? sb->sub_owner : "(none)");
      ok = false;
    } else {
      ok = fx_same(sa, sb, why);
    }
  }
  g_free(order);
  return ok;
}

/* True when every subgraph owner that is a live node is a get_attr: only then does the
 * parser keep the owner, so writing the reparsed graph reproduces the same text. */
static bool owners_are_get_attr(const OxGraph *g) {
  for (uint32_t i = 0; i < g->n_subgraphs; i++) {
    const OxGraph *sub = g->subgraphs[i];
    OxNodeId o = sub->sub_owner ? ox_graph_find(g, sub->sub_owner) : 0;
    if (o && g->nodes[o].op != OX_OP_GET_ATTR) return false;
    if (!owners_are_get_attr(sub)) return false;
  }
  return true;
}

/* write -> parse; NULL (with the reason in why) if the parse fails or is not one graph. */
static OxDoc *reparse(const OxGraph *g, GString *why, char **text_out) {
  char *text = fx_text(g);
  OxDoc *doc = ox_doc_new(OX_FMT_FX_TEXT);
  OxDiagList d;
  ox_diags_init(&d, "written.txt");
  OxLoadOptions opt = {0};
  opt.max_depth = 256;
  int rc = ox_parse_fx_text(text, strlen(text), &opt, doc, &d);
  if (rc != 0 || doc->n_graphs != 1) {
    g_string_append_printf(why, "parse of the written text failed (rc %d, %u graphs):", rc, doc->n_graphs);
    for (size_t i = 0; i < d.n && i < 5; i++) {
      char *m = ox_diag_format(&d, &d.items[i]);
      g_string_append_printf(why, "\n  %s", m);
      g_free(m);
    }
    ox_doc_free(doc);
    doc = NULL;
  } else if (d.n_warnings) {
    char *m = ox_diag_format(&d, &d.items[0]);
    g_string_append_printf(why, "parse of the written text warned: %s", m);
    g_free(m);
    ox_doc_free(doc);
    doc = NULL;
  }
  ox_diags_clear(&d);
  if (text_out)
    *text_out = text;
  else
    g_free(text);
  return doc;
}

static void assert_roundtrip(const OxGraph *g) {
  GString *why = g_string_new(NULL);
  char *text = NULL;
  OxDoc *doc = reparse(g, why, &text);
  if (!doc || !fx_same(g, doc->graphs[0], why)) {
    g_test_fail_printf("round trip failed: %s\n--- written text:\n%s", why->str, text);
  } else {
    /* writing the reparsed graph gives the same text again */
    char *again = fx_text(doc->graphs[0]);
    g_assert_cmpstr(text, ==, again);
    g_free(again);
  }
  g_free(text);
  ox_doc_free(doc);
  g_string_free(why, TRUE);
}

static void test_roundtrip_handbuilt(void) {
  /* annotated_graph(false): the parser does not read a dtype-only annotation ("i64") yet */
  OxGraph *gs[4] = {spec_graph(), aot_graph(), annotated_graph(false), delegated_graph()};
  for (int i = 0; i < 4; i++) {
    assert_roundtrip(gs[i]);
    ox_graph_free(gs[i]);
  }
}

/* Every value kind the writer and parser agree on, including the ambiguous bare words. */
static void test_roundtrip_values(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxValue ell = ox_value_none();
  ell.kind = OX_V_ELLIPSIS;
  OxValue items[] = {
    ox_value_none(), ox_value_bool(true), ox_value_bool(false), ox_value_int(-3), ox_value_int(INT64_MAX),
    ox_value_float(1.0), ox_value_float(-0.5), ox_value_float(1e-05), ox_value_float(0.09999999999999998),
    ox_value_float(1e300), ox_value_float(INFINITY), ox_value_float(-INFINITY), ox_value_float(2.5e-308),
    ox_value_dtype(OX_DT_F16), ox_value_dtype(OX_DT_I64), strv(g, OX_V_DEVICE, "cuda:1"), strv(g, OX_V_DEVICE, "cpu"),
    strv(g, OX_V_ENUM, "torch.channels_last"), strv(g, OX_V_SYM, "s12"), ell, strv(g, OX_V_STR, "sum"),
    strv(g, OX_V_STR, "cpu"), strv(g, OX_V_STR, "None"), strv(g, OX_V_STR, "u3"), strv(g, OX_V_STR, ""),
    strv(g, OX_V_STR, "a, b) c"), strv(g, OX_V_STR, "it's \"q\" \\ \n\t"), strv(g, OX_V_STR, "torch.float32"),
    strv(g, OX_V_STR, "3"), strv(g, OX_V_STR, "x.y"), NODE(x),
    seq(g, OX_V_SLICE, 3, ox_value_none(), ox_value_int(64), ox_value_none()),
    seq(g, OX_V_SLICE, 3, ox_value_int(1), NODE(x), ox_value_int(2)),
    TUP(g, 0), TUP(g, 1, NODE(x)), seq(g, OX_V_LIST, 2, ox_value_none(), seq(g, OX_V_LIST, 0)),
  };
  OxValue args = ox_graph_value_seq(g, OX_V_TUPLE, items, G_N_ELEMENTS(items));
  const char *keys[4] = {"dim", "out", "PRESCALE_QK", "weird key"};
  OxValue inner[1] = {ox_value_int(1)};
  const char *ik[1] = {"a"};
  OxValue kv[4] = {ox_value_int(-1), NODE(x), ox_value_bool(false), ox_graph_value_dict(g, ik, inner, 1)};
  OxNodeId f = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "f", "torch.ops.aten.foo.default", args,
                                 ox_graph_value_dict(g, keys, kv, 4));
  ox_graph_add_node(g, OX_OP_CALL_METHOD, "view", "view", TUP(g, 2, NODE(f), seq(g, OX_V_LIST, 2, ox_value_int(-1), strv(g, OX_V_SYM, "s0"))),
                    ox_value_none());
  out(g, TUP(g, 2, NODE(f), ox_value_none()));
  assert_roundtrip(g);
  ox_graph_free(g);
}

/* ------------------------------------------------------------------ corpus */


/* Each graph of the file: write FX text, parse it back, compare. */
static void test_corpus_roundtrip(gconstpointer data) {
  int nn = GPOINTER_TO_INT(data);
  char *path = NULL;
  OxDoc *src = test_corpus_load(nn, "its FX text round trip", &path);
  if (!src) {
    g_free(path);
    return;
  }
  GString *why = g_string_new(NULL);
  for (uint32_t i = 0; i < src->n_graphs; i++) {
    char *text = NULL;
    OxDoc *re = reparse(src->graphs[i], why, &text);
    if (!re || !fx_same(src->graphs[i], re->graphs[0], why)) {
      if (g_test_verbose()) g_printerr("--- written text:\n%s", text);
      g_test_fail_printf("%s graph %u: %s", path, i, why->str);
      g_free(text);
      ox_doc_free(re);
      break;
    }
    if (owners_are_get_attr(src->graphs[i])) {
      char *again = fx_text(re->graphs[0]);
      if (strcmp(again, text) != 0) g_test_fail_printf("%s graph %u: writing the reparsed graph differs", path, i);
      g_free(again);
    }
    g_free(text);
    ox_doc_free(re);
  }
  g_string_free(why, TRUE);
  ox_doc_free(src);
  g_free(path);
}

/* The writers' integer text is printf's, for the edge values and a spread of random ones (signed
 * and unsigned). */
static void test_fmt_i64(void) {
  const int64_t edge[] = {0, 1, -1, 9, 10, -10, 99, 100, INT32_MAX, INT32_MIN, (int64_t)UINT32_MAX, INT64_MAX, INT64_MIN,
                          INT64_MIN + 1, 1000000000000000000LL, -999999999999999999LL};
  GRand *r = g_rand_new_with_seed(7);
  OxBuf b;
  ox_buf_init(&b);
  for (guint i = 0; i < G_N_ELEMENTS(edge) + 20000; i++) {
    int64_t v = i < G_N_ELEMENTS(edge) ? edge[i]
                                       : (int64_t)(((guint64)g_rand_int(r) << 32) | g_rand_int(r)) >> g_rand_int_range(r, 0, 63);
    char want[32], got[32];
    snprintf(want, sizeof want, "%" G_GINT64_FORMAT, (gint64)v);
    int n = ox_fmt_i64(got, v);
    g_assert_cmpstr(got, ==, want);
    g_assert_cmpint(n, ==, (int)strlen(want));
    size_t at = b.len;
    ox_buf_put_i64(&b, v);
    g_assert_cmpstr(b.data + at, ==, want);
  }
  /* unsigned: every digit-count boundary (10^k - 1, 10^k) and the largest value */
  guint64 p10 = 1;
  for (int k = 0; k < 20; k++) {
    guint64 vs[3] = {p10 - 1, p10, p10 + 1};
    for (int j = 0; j < 3; j++) {
      char want[32], got[32];
      snprintf(want, sizeof want, "%" G_GUINT64_FORMAT, vs[j]);
      g_assert_cmpint(ox_fmt_u64(got, vs[j]), ==, (int)strlen(want));
      g_assert_cmpstr(got, ==, want);
    }
    if (k < 19) p10 *= 10;
  }
  char got[32];
  g_assert_cmpint(ox_fmt_u64(got, UINT64_MAX), ==, 20);
  g_assert_cmpstr(got, ==, "18446744073709551615");
  ox_buf_free(&b);
  g_rand_free(r);
}

/* Every byte inside a quoted string: copied as is unless it is a control character, DEL, '"' or
 * '\\', which are escaped (the JSON and Python writers' strings). */
static void test_put_quoted_bytes(void) {
  for (int c = 1; c < 256; c++) {
    char s[4] = {'a', (char)c, 'b', 0};
    OxBuf b;
    ox_buf_init(&b);
    ox_buf_put_quoted(&b, s);
    bool plain = c >= 0x20 && c != 0x7f && c != '"' && c != '\\';
    if (plain) {
      g_assert_cmpuint(b.len, ==, 5);
      g_assert_cmpint((unsigned char)b.data[2], ==, c);
    } else {
      g_assert_cmpuint(b.len, >, 5);
      g_assert_cmpint(b.data[2], ==, '\\');
    }
    g_assert_cmpint(b.data[0], ==, '"');
    g_assert_cmpint(b.data[b.len - 1], ==, '"');
    ox_buf_free(&b);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/write/fx/spec-example", test_spec_example);
  g_test_add_func("/engine/write/fx/aot-example", test_aot_example);
  g_test_add_func("/engine/write/fx/annotations", test_annotations);
  g_test_add_func("/engine/write/fx/placeholder-default-and-returns", test_placeholder_default_and_returns);
  g_test_add_func("/engine/write/fx/values", test_values);
  g_test_add_func("/engine/write/fmt-i64", test_fmt_i64);
  g_test_add_func("/engine/write/put-quoted-bytes", test_put_quoted_bytes);
  g_test_add_func("/engine/write/fx/subgraph-block", test_subgraph_block);
  g_test_add_func("/engine/write/roundtrip/handbuilt", test_roundtrip_handbuilt);
  g_test_add_func("/engine/write/roundtrip/values", test_roundtrip_values);
  for (int nn = 1; nn <= 29; nn++) {
    char *p = g_strdup_printf("/engine/write/roundtrip/corpus/%02d", nn);
    g_test_add_data_func(p, GINT_TO_POINTER(nn), test_corpus_roundtrip);
    g_free(p);
  }
  return g_test_run();
}
