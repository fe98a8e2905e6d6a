/* Tests for the print_readable / fx_graph_readable.py / TORCH_LOGS graph_code loader
 * (engine/load/ox_parse_py.c, docs/format-fx-readable.md): every construct as a small inline
 * dump with exact assertions, the real corpus files 20-29 with exact node counts, and
 * damaged input (truncated, unbalanced, deep, huge, random, empty, CRLF, NUL) in lenient
 * and strict mode. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "ir/ox_graph.h"
#include "load/ox_load.h"

/* ------------------------------------------------------------------ helpers */

typedef struct {
  OxDoc *doc;
  OxDiagList d;
  int rc;
} Load;

static void load_n(Load *l, const char *text, size_t len, bool strict) {
  OxLoadOptions opt = {0};
  opt.strict = strict;
  ox_diags_init(&l->d, "t.py");
  l->doc = NULL;
  l->rc = ox_load_buffer(text, len, OX_FMT_FX_READABLE, &opt, &l->doc, &l->d);
  if (g_test_verbose()) ox_diags_print(&l->d, stderr);
}

static void load(Load *l, const char *text) { load_n(l, text, strlen(text), false); }
static void load_strict(Load *l, const char *text) { load_n(l, text, strlen(text), true); }

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

static uint32_t count_live(OxGraph *g) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id) n++;
  return n;
}

static uint32_t count_op(OxGraph *g, OxOp op) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id) if (g->nodes[id].op == op) n++;
  return n;
}

static uint32_t count_flag(OxGraph *g, uint16_t flag) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id) if (g->nodes[id].flags & flag) n++;
  return n;
}

/* number of diags with severity sev, on line (0 = any), whose message contains sub */
static size_t count_diags(const OxDiagList *d, OxSeverity sev, uint32_t line, const char *sub) {
  size_t n = 0;
  for (size_t i = 0; i < d->n; i++) {
    const OxDiag *x = &d->items[i];
    if (x->sev == sev && (!line || x->line == line) && (!sub || strstr(x->msg, sub))) n++;
  }
  return n;
}

/* every diag is located (line and column) */
static void assert_located(const OxDiagList *d) {
  for (size_t i = 0; i < d->n; i++) {
    if (d->items[i].line == 0 || d->items[i].col == 0) g_error("unlocated diagnostic: %s", d->items[i].msg);
  }
}

static void assert_verified(OxGraph *g, bool require_output) {
  OxDiagList d;
  ox_diags_init(&d, "verify");
  int errors = ox_graph_verify(g, require_output, &d);
  if (errors) ox_diags_print(&d, stderr);
  g_assert_cmpint(errors, ==, 0);
  ox_diags_clear(&d);
  for (uint32_t i = 0; i < g->n_subgraphs; i++) assert_verified(g->subgraphs[i], require_output);
}

static const OxValue *arg(OxNode *n, uint32_t i) {
  g_assert_cmpuint(n->args.n, >, i);
  return &n->args.u.items[i];
}

static const OxValue *kwarg(OxNode *n, const char *key) {
  for (uint32_t i = 0; i < n->kwargs.n; i++)
    if (strcmp(n->kwargs.keys[i], key) == 0) return &n->kwargs.u.items[i];
  g_error("node %s has no kwarg %s", n->name, key);
  return NULL;
}

static void assert_node_ref(OxGraph *g, const OxValue *v, const char *name) {
  g_assert_cmpint(v->kind, ==, OX_V_NODE);
  g_assert_cmpstr(g->nodes[v->u.node].name, ==, name);
}

static void assert_meta(OxNode *n, const char *expect) {
  const OxTensorMeta *t = ox_node_tensor_meta(n);
  g_assert_nonnull(t);
  char buf[256];
  ox_tensor_meta_format(t, true, true, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, expect);
}

/* the output node's single argument */
static const OxValue *output_value(OxGraph *g) {
  OxNodeId o = ox_graph_output(g);
  g_assert_cmpuint(o, !=, 0);
  g_assert_cmpuint(g->nodes[o].args.n, ==, 1);
  return &g->nodes[o].args.u.items[0];
}

/* ------------------------------------------------------------------ basic constructs */

static const char *const basic_src =
  "class <lambda>(torch.nn.Module):\n"
  "    def forward(self, arg0_1: \"f32[8, 16]\"):\n"
  "        # File: /x/part4.py:31 in pointwise_reduction, code: return torch.sin(x.sum(dim=1))\n"
  "        sum_1: \"f32[8]\" = torch.ops.aten.sum.dim_IntList(arg0_1, [1]);  arg0_1 = None\n"
  "        sin: \"f32[8]\" = torch.ops.aten.sin.default(sum_1);  sum_1 = None\n"
  "        return (sin,)\n";

static void test_basic(void) {
  Load l;
  load(&l, basic_src);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.doc->n_graphs, ==, 1);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpstr(g->name, ==, "<lambda>");
  g_assert_cmpuint(count_live(g), ==, 4);
  OxNode *p = node(g, "arg0_1");
  g_assert_cmpint(p->op, ==, OX_OP_PLACEHOLDER);
  g_assert_cmpstr(p->target, ==, "arg0_1");
  g_assert_cmpstr(p->type_ann, ==, "f32[8, 16]");
  g_assert_cmpuint(p->src_line, ==, 2);
  assert_meta(p, "f32[8, 16]");
  OxNode *s = node(g, "sum_1");
  g_assert_cmpint(s->op, ==, OX_OP_CALL_FUNCTION);
  g_assert_cmpstr(s->target, ==, "torch.ops.aten.sum.dim_IntList");
  g_assert_cmpuint(s->src_line, ==, 4);
  g_assert_cmpuint(s->args.n, ==, 2);
  assert_node_ref(g, arg(s, 0), "arg0_1");
  g_assert_cmpint(arg(s, 1)->kind, ==, OX_V_LIST);
  g_assert_cmpuint(arg(s, 1)->n, ==, 1);
  g_assert_cmpint(arg(s, 1)->u.items[0].u.i, ==, 1);
  g_assert_cmpstr(s->stack_trace, ==, "File: /x/part4.py:31 in pointwise_reduction, code: return torch.sin(x.sum(dim=1))");
  assert_meta(s, "f32[8]");
  /* the trace carries over to the next node (FX prints it only when it changes) */
  g_assert_cmpstr(node(g, "sin")->stack_trace, ==, s->stack_trace);
  const OxValue *ov = output_value(g);
  g_assert_cmpint(ov->kind, ==, OX_V_TUPLE);
  g_assert_cmpuint(ov->n, ==, 1);
  assert_node_ref(g, &ov->u.items[0], "sin");
  g_assert_null(g->nodes[ox_graph_output(g)].stack_trace);
  assert_verified(g, true);
  unload(&l);
}

static void test_crlf_same(void) {
  GString *crlf = g_string_new(NULL);
  for (const char *c = basic_src; *c; c++) {
    if (*c == '\n') g_string_append_c(crlf, '\r');
    g_string_append_c(crlf, *c);
  }
  Load a, b;
  load(&a, basic_src);
  load(&b, crlf->str);
  OxGraph *ga = graph0(&a), *gb = graph0(&b);
  g_assert_cmpuint(b.d.n, ==, 0);
  g_assert_cmpuint(count_live(ga), ==, count_live(gb));
  OxNodeId x = ga->head, y = gb->head;
  for (; x && y; x = ga->link[x].next, y = gb->link[y].next) {
    g_assert_cmpstr(ga->nodes[x].name, ==, gb->nodes[y].name);
    g_assert_cmpstr(ga->nodes[x].target, ==, gb->nodes[y].target);
    g_assert_true(ox_value_equal(&ga->nodes[x].args, &gb->nodes[y].args));
    g_assert_cmpstr(ga->nodes[x].stack_trace, ==, gb->nodes[y].stack_trace);
  }
  g_assert_cmpstr(node(gb, "sum_1")->type_ann, ==, "f32[8]");
  unload(&a);
  unload(&b);
  g_string_free(crlf, TRUE);
}

/* Fuzz finding (fuzz-optimize in CI): a call without arguments before any other call built its
 * argument tuple from the value stack's NULL base pointer plus zero (UB caught by UBSan's
 * pointer-overflow check in the sanitizer build, which runs this suite). */
static void test_first_call_without_args(void) {
  Load l;
  load(&l,
       "class GraphModule(torch.nn.Module):\n"
       "    def forward(self, x: \"f32[2, 3]\"):\n"
       "        e = torch.ops.aten.sym_size()\n"
       "        k = torch.ops.aten.zeros.default(dtype = torch.float32)\n"
       "        add = torch.ops.aten.add.Tensor(x, x);  x = None\n"
       "        return (add,)\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  OxNode *e = node(g, "e");
  g_assert_cmpint(e->op, ==, OX_OP_CALL_FUNCTION);
  g_assert_cmpuint(e->args.n, ==, 0);
  g_assert_cmpuint(e->kwargs.n, ==, 0);
  g_assert_cmpuint(node(g, "k")->kwargs.n, ==, 1);
  unload(&l);
}

static void test_call_forms(void) {
  Load l;
  load(&l,
       "class GraphModule(torch.nn.Module):\n"
       "    def forward(self, x: \"f32[4, 8]\", y: \"f32[4, 8]\"):\n"
       "        w = self.weight\n"
       "        sub = getattr(self.layers, \"0\").fc(x, bias = w)\n"
       "        l0 = getattr(self.layers, \"0\")\n"
       "        emb = self.model.embed(x)\n"
       "        v = x.view(-1, 2)\n"
       "        c = torch.cat([x, y], dim = 1)\n"
       "        lin = torch._C._nn.linear(x, w)\n"
       "        g = getattr(x, 'shape')\n"
       "        sh = x.shape\n"
       "        t = my_wrapped_fn(x)\n"
       "        k = torch.ops.higher_order.triton_kernel_wrapper_mutation(kernel_idx = 1, grid = [(x, 1, 1)], "
       "tma_descriptor_metadata = {}, kwargs = {'Y_ptr': v, 'n': 8})\n"
       "        return (sub, c, lin, g, sh, t)\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  OxNode *w = node(g, "w");
  g_assert_cmpint(w->op, ==, OX_OP_GET_ATTR);
  g_assert_cmpstr(w->target, ==, "weight");
  OxNode *sub = node(g, "sub");
  g_assert_cmpint(sub->op, ==, OX_OP_CALL_MODULE);
  g_assert_cmpstr(sub->target, ==, "layers.0.fc");
  assert_node_ref(g, arg(sub, 0), "x");
  assert_node_ref(g, kwarg(sub, "bias"), "w");
  g_assert_cmpint(node(g, "l0")->op, ==, OX_OP_GET_ATTR);
  g_assert_cmpstr(node(g, "l0")->target, ==, "layers.0");
  g_assert_cmpint(node(g, "emb")->op, ==, OX_OP_CALL_MODULE);
  g_assert_cmpstr(node(g, "emb")->target, ==, "model.embed");
  OxNode *v = node(g, "v");
  g_assert_cmpint(v->op, ==, OX_OP_CALL_METHOD);
  g_assert_cmpstr(v->target, ==, "view");
  g_assert_cmpuint(v->args.n, ==, 3);
  assert_node_ref(g, arg(v, 0), "x");
  g_assert_cmpint(arg(v, 1)->kind, ==, OX_V_INT);
  g_assert_cmpint(arg(v, 1)->u.i, ==, -1);
  OxNode *c = node(g, "c");
  g_assert_cmpstr(c->target, ==, "torch.cat");
  g_assert_cmpint(kwarg(c, "dim")->u.i, ==, 1);
  g_assert_cmpstr(node(g, "lin")->target, ==, "torch._C._nn.linear");
  OxNode *ga = node(g, "g");
  g_assert_cmpstr(ga->target, ==, "builtins.getattr");
  g_assert_cmpint(arg(ga, 1)->kind, ==, OX_V_STR);
  g_assert_cmpstr(arg(ga, 1)->s, ==, "shape");
  OxNode *sh = node(g, "sh");
  g_assert_cmpint(sh->op, ==, OX_OP_CALL_FUNCTION);
  g_assert_cmpstr(sh->target, ==, "builtins.getattr");
  g_assert_cmpstr(arg(sh, 1)->s, ==, "shape");
  g_assert_cmpstr(node(g, "t")->target, ==, "my_wrapped_fn");
  OxNode *k = node(g, "k");
  g_assert_cmpuint(k->args.n, ==, 0);
  g_assert_cmpuint(k->kwargs.n, ==, 4);
  const OxValue *grid = kwarg(k, "grid");
  g_assert_cmpint(grid->kind, ==, OX_V_LIST);
  g_assert_cmpint(grid->u.items[0].kind, ==, OX_V_TUPLE);
  assert_node_ref(g, &grid->u.items[0].u.items[0], "x");
  g_assert_cmpint(kwarg(k, "tma_descriptor_metadata")->kind, ==, OX_V_DICT);
  g_assert_cmpuint(kwarg(k, "tma_descriptor_metadata")->n, ==, 0);
  const OxValue *kw = kwarg(k, "kwargs");
  g_assert_cmpint(kw->kind, ==, OX_V_DICT);
  g_assert_cmpstr(kw->keys[0], ==, "Y_ptr");
  assert_node_ref(g, &kw->u.items[0], "v");
  g_assert_cmpint(kw->u.items[1].u.i, ==, 8);
  /* v is used by k: users kept */
  g_assert_cmpuint(v->n_users, ==, 1);
  assert_verified(g, true);
  unload(&l);
}

static void test_subscripts(void) {
  Load l;
  load(&l,
       "class GraphModule(torch.nn.Module):\n"
       "    def forward(self, l_args_1_: \"bf16[1, 32, 64]\", idx: \"i64[1]\"):\n"
       "        split = torch.ops.aten.split.Tensor(l_args_1_, 32, -1)\n"
       "        getitem: \"bf16[1, 32, 32]\" = split[0]\n"
       "        a = l_args_1_[(Ellipsis, slice(None, 64, None))]\n"
       "        b = l_args_1_[(slice(None, None, None), 0)]\n"
       "        c = l_args_1_[idx]\n"
       "        d = l_args_1_[..., 1::2]\n"
       "        return [getitem, a, b, c, d]\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  OxNode *gi = node(g, "getitem");
  g_assert_cmpstr(gi->target, ==, "operator.getitem");
  assert_node_ref(g, arg(gi, 0), "split");
  g_assert_cmpint(arg(gi, 1)->u.i, ==, 0);
  g_assert_cmpint(node(g, "split")->meta.kind, ==, OX_META_NONE);
  OxNode *a = node(g, "a");
  const OxValue *ix = arg(a, 1);
  g_assert_cmpint(ix->kind, ==, OX_V_TUPLE);
  g_assert_cmpuint(ix->n, ==, 2);
  g_assert_cmpint(ix->u.items[0].kind, ==, OX_V_ELLIPSIS);
  const OxValue *sl = &ix->u.items[1];
  g_assert_cmpint(sl->kind, ==, OX_V_SLICE);
  g_assert_cmpuint(sl->n, ==, 3);
  g_assert_cmpint(sl->u.items[0].kind, ==, OX_V_NONE);
  g_assert_cmpint(sl->u.items[1].u.i, ==, 64);
  g_assert_cmpint(sl->u.items[2].kind, ==, OX_V_NONE);
  const OxValue *bx = arg(node(g, "b"), 1);
  g_assert_cmpint(bx->u.items[0].kind, ==, OX_V_SLICE);
  g_assert_cmpint(bx->u.items[1].u.i, ==, 0);
  assert_node_ref(g, arg(node(g, "c"), 1), "idx");
  /* Python slice syntax is read as slice values too */
  const OxValue *dx = arg(node(g, "d"), 1);
  g_assert_cmpint(dx->u.items[0].kind, ==, OX_V_ELLIPSIS);
  g_assert_cmpint(dx->u.items[1].kind, ==, OX_V_SLICE);
  g_assert_cmpint(dx->u.items[1].u.items[0].u.i, ==, 1);
  g_assert_cmpint(dx->u.items[1].u.items[1].kind, ==, OX_V_NONE);
  g_assert_cmpint(dx->u.items[1].u.items[2].u.i, ==, 2);
  const OxValue *ov = output_value(g);
  g_assert_cmpint(ov->kind, ==, OX_V_LIST);
  g_assert_cmpuint(ov->n, ==, 5);
  assert_verified(g, true);
  unload(&l);
}

static void test_operators(void) {
  static const struct {
    const char *expr, *target;
    int nargs;
  } ops[] = {
    {"a + b", "operator.add", 2},       {"a - b", "operator.sub", 2},     {"4 * a", "operator.mul", 2},
    {"a / b", "operator.truediv", 2},   {"a // b", "operator.floordiv", 2}, {"a % b", "operator.mod", 2},
    {"a ** 2", "operator.pow", 2},      {"a @ b", "operator.matmul", 2},  {"a & b", "operator.and_", 2},
    {"a | b", "operator.or_", 2},       {"a ^ b", "operator.xor", 2},     {"a << b", "operator.lshift", 2},
    {"a >> b", "operator.rshift", 2},   {"a == b", "operator.eq", 2},     {"a != b", "operator.ne", 2},
    {"a < b", "operator.lt", 2},        {"a <= b", "operator.le", 2},     {"a > b", "operator.gt", 2},
    {"a >= b", "operator.ge", 2},       {"-a", "operator.neg", 1},        {"+a", "operator.pos", 1},
    {"~a", "operator.invert", 1},       {"not a", "operator.not_", 1},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
    char *src = g_strdup_printf("class GraphModule(torch.nn.Module):\n"
                                "    def forward(self, a, b):\n"
                                "        r = %s\n"
                                "        return (r,)\n",
                                ops[i].expr);
    Load l;
    load(&l, src);
    OxGraph *g = graph0(&l);
    g_assert_cmpuint(l.d.n, ==, 0);
    OxNode *r = node(g, "r");
    g_assert_cmpint(r->op, ==, OX_OP_CALL_FUNCTION);
    g_assert_cmpstr(r->target, ==, ops[i].target);
    g_assert_cmpuint(r->args.n, ==, (guint)ops[i].nargs);
    if (ops[i].expr[0] == '4') {
      g_assert_cmpint(arg(r, 0)->u.i, ==, 4);
      assert_node_ref(g, arg(r, 1), "a");
    } else if (ops[i].nargs == 2) {
      assert_node_ref(g, arg(r, 0), "a");
    }
    assert_verified(g, true);
    unload(&l);
    g_free(src);
  }
}

static void test_literals(void) {
  Load l;
  load(&l,
       "class GraphModule(torch.nn.Module):\n"
       "    def forward(self, x, s0: \"Sym(s0)\"):\n"
       "        f = torch.ops.aten.full.default([], -inf, dtype = torch.float16, layout = torch.strided, "
       "device = device(type='cuda', index=0), pin_memory = False)\n"
       "        e = torch.ops.aten.empty.memory_format([s0, 4096*s1], dtype = torch.int64, device = device(type='cpu'), "
       "memory_format = torch.contiguous_format)\n"
       "        m = torch.ops.aten.mul.Tensor(x, 1.1920928955078125e-07)\n"
       "        n = foo(x, float('inf'), float('-inf'), nan, None, True, \"dq\", 'sq\\'s', (1, (2,)), 0x10)\n"
       "        g = torch.ops.higher_order.graphsafe_run_with_rng_state(torch.ops.aten._scaled_dot_product_flash_attention.default, x, scale = 0.125)\n"
       "        t = x.to(torch.bfloat16)\n"
       "        return (f, e, m, n, g, t)\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  OxNode *f = node(g, "f");
  g_assert_cmpint(arg(f, 0)->kind, ==, OX_V_LIST);
  g_assert_cmpuint(arg(f, 0)->n, ==, 0);
  g_assert_cmpint(arg(f, 1)->kind, ==, OX_V_FLOAT);
  g_assert_true(isinf(arg(f, 1)->u.f) && arg(f, 1)->u.f < 0);
  g_assert_cmpint(kwarg(f, "dtype")->kind, ==, OX_V_DTYPE);
  g_assert_cmpint(kwarg(f, "dtype")->u.dtype, ==, OX_DT_F16);
  g_assert_cmpint(kwarg(f, "layout")->kind, ==, OX_V_ENUM);
  g_assert_cmpstr(kwarg(f, "layout")->s, ==, "torch.strided");
  g_assert_cmpint(kwarg(f, "device")->kind, ==, OX_V_DEVICE);
  g_assert_cmpstr(kwarg(f, "device")->s, ==, "cuda:0");
  g_assert_cmpint(kwarg(f, "pin_memory")->kind, ==, OX_V_BOOL);
  g_assert_false(kwarg(f, "pin_memory")->u.b);
  OxNode *e = node(g, "e");
  const OxValue *sz = arg(e, 0);
  /* s0 is a placeholder here, so it is a node; s1 is only a symbol */
  assert_node_ref(g, &sz->u.items[0], "s0");
  g_assert_cmpint(sz->u.items[1].kind, ==, OX_V_SYM);
  g_assert_cmpstr(sz->u.items[1].s, ==, "4096*s1");
  g_assert_cmpstr(kwarg(e, "device")->s, ==, "cpu");
  g_assert_cmpstr(kwarg(e, "memory_format")->s, ==, "torch.contiguous_format");
  g_assert_cmpint(kwarg(e, "dtype")->u.dtype, ==, OX_DT_I64);
  g_assert_cmpfloat(arg(node(g, "m"), 1)->u.f, ==, 1.1920928955078125e-07);
  OxNode *n = node(g, "n");
  g_assert_cmpuint(n->args.n, ==, 10);
  g_assert_true(isinf(arg(n, 1)->u.f) && arg(n, 1)->u.f > 0);
  g_assert_true(isinf(arg(n, 2)->u.f) && arg(n, 2)->u.f < 0);
  g_assert_true(isnan(arg(n, 3)->u.f));
  g_assert_cmpint(arg(n, 4)->kind, ==, OX_V_NONE);
  g_assert_true(arg(n, 5)->kind == OX_V_BOOL && arg(n, 5)->u.b);
  g_assert_cmpstr(arg(n, 6)->s, ==, "dq");
  g_assert_cmpstr(arg(n, 7)->s, ==, "sq's");
  g_assert_cmpint(arg(n, 8)->kind, ==, OX_V_TUPLE);
  g_assert_cmpint(arg(n, 8)->u.items[1].kind, ==, OX_V_TUPLE);
  g_assert_cmpint(arg(n, 8)->u.items[1].u.items[0].u.i, ==, 2);
  g_assert_cmpint(arg(n, 9)->u.i, ==, 16);
  OxNode *gr = node(g, "g");
  /* an op overload passed as an argument is kept as a torch.* constant */
  g_assert_cmpint(arg(gr, 0)->kind, ==, OX_V_ENUM);
  g_assert_cmpstr(arg(gr, 0)->s, ==, "torch.ops.aten._scaled_dot_product_flash_attention.default");
  g_assert_cmpfloat(kwarg(gr, "scale")->u.f, ==, 0.125);
  g_assert_cmpint(arg(node(g, "t"), 1)->u.dtype, ==, OX_DT_BF16);
  OxNode *s0 = node(g, "s0");
  g_assert_cmpint(s0->meta.kind, ==, OX_META_SYMINT);
  g_assert_cmpstr(s0->meta.sym, ==, "s0");
  assert_verified(g, true);
  unload(&l);
}

static void test_annotations(void) {
  Load l;
  load(&l,
       "class GraphModule(torch.nn.Module):\n"
       "    def forward(self, a: \"f16[1, s0, 4096][4096*s0, 4096, 1]cuda:0\", b: \"f32[][]cuda:0\", "
       "c: \"b8[1, 1, s0, s1][s0*s1, s0*s1, s1, 1]cuda:0\", d: \"i64[2]\", e: torch.Tensor, "
       "f: \"DTensor(f32[4, 4], (Shard(dim=0),))\", h: \"weird\", k=None):\n"
       "        mul_15: \"Sym(1024*s77)\" = d * 1024\n"
       "        return (mul_15,)\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n_warnings + l.d.n_errors, ==, 0);
  assert_meta(node(g, "a"), "f16[1, s0, 4096][4096*s0, 4096, 1]cuda:0");
  const OxTensorMeta *ta = ox_node_tensor_meta(node(g, "a"));
  g_assert_cmpint(ta->dtype, ==, OX_DT_F16);
  g_assert_cmpint(ta->rank, ==, 3);
  g_assert_null(ta->shape[0].sym);
  g_assert_cmpint(ta->shape[0].v, ==, 1);
  g_assert_cmpstr(ta->shape[1].sym, ==, "s0");
  g_assert_true(ta->has_stride);
  g_assert_cmpstr(ta->stride[0].sym, ==, "4096*s0");
  g_assert_cmpint(ta->stride[2].v, ==, 1);
  g_assert_cmpstr(ta->device, ==, "cuda:0");
  const OxTensorMeta *tb = ox_node_tensor_meta(node(g, "b"));
  g_assert_cmpint(tb->rank, ==, 0);
  g_assert_true(tb->has_stride);
  g_assert_cmpstr(tb->device, ==, "cuda:0");
  g_assert_cmpint(ox_node_tensor_meta(node(g, "c"))->dtype, ==, OX_DT_BOOL);
  const OxTensorMeta *td = ox_node_tensor_meta(node(g, "d"));
  g_assert_false(td->has_stride);
  g_assert_null(td->device);
  OxNode *e = node(g, "e");
  g_assert_cmpstr(e->type_ann, ==, "torch.Tensor");
  g_assert_cmpint(e->meta.kind, ==, OX_META_NONE);
  assert_meta(node(g, "f"), "f32[4, 4]");
  g_assert_cmpstr(node(g, "h")->type_ann, ==, "weird");
  g_assert_cmpint(node(g, "h")->meta.kind, ==, OX_META_NONE);
  g_assert_cmpstr(node(g, "k")->default_value, ==, "None");
  OxNode *m = node(g, "mul_15");
  g_assert_cmpint(m->meta.kind, ==, OX_META_SYMINT);
  g_assert_cmpstr(m->meta.sym, ==, "1024*s77");
  g_assert_cmpstr(m->target, ==, "operator.mul");
  unload(&l);
}

static void test_multiline_signature(void) {
  Load l;
  load(&l,
       "class GraphModule(torch.nn.Module):\n"
       "    def forward(\n"
       "        self,\n"
       "        x: \"f32[2]\",\n"
       "        y: \"f32[2]\",\n"
       "    ):\n"
       "        add = torch.ops.aten.add.Tensor(\n"
       "            x, y)\n"
       "        return (add,)\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpuint(count_op(g, OX_OP_PLACEHOLDER), ==, 2);
  g_assert_cmpuint(node(g, "x")->src_line, ==, 4);
  g_assert_cmpuint(node(g, "y")->src_line, ==, 5);
  OxNode *a = node(g, "add");
  g_assert_cmpuint(a->src_line, ==, 7);
  assert_node_ref(g, arg(a, 1), "y");
  assert_verified(g, true);
  unload(&l);
}

static void test_stack_traces(void) {
  Load l;
  load(&l,
       "class GraphModule(torch.nn.Module):\n"
       "    def forward(self, x):\n"
       "        # File: a.py:1 in f, code: y = g(x)\n"
       "        # File: b.py:2 in g, code: return x.relu()\n"
       "        r = torch.relu(x)\n"
       "        s = torch.relu(r)\n"
       "        # No stacktrace found for following nodes\n"
       "        t = torch.relu(s)\n"
       "         # File: c.py:3 in h, code: z\n"
       "        u = torch.relu(t)\n"
       "        # some other comment\n"
       "        return u\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpstr(node(g, "r")->stack_trace, ==,
                  "File: a.py:1 in f, code: y = g(x)\nFile: b.py:2 in g, code: return x.relu()");
  g_assert_cmpstr(node(g, "s")->stack_trace, ==, node(g, "r")->stack_trace);
  g_assert_null(node(g, "t")->stack_trace);
  g_assert_cmpstr(node(g, "u")->stack_trace, ==, "File: c.py:3 in h, code: z");
  assert_node_ref(g, output_value(g), "u");
  unload(&l);
}

static void test_returns(void) {
  static const struct {
    const char *ret;
    int kind;
    guint n;
  } cases[] = {
    {"return (a,)", OX_V_TUPLE, 1}, {"return [a, a]", OX_V_LIST, 2}, {"return a", OX_V_NODE, 0},
    {"return ()", OX_V_TUPLE, 0},   {"return a, a", OX_V_TUPLE, 2},  {"return None", OX_V_NONE, 0},
    {"return", OX_V_NONE, 0},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    char *src = g_strdup_printf("class GraphModule(torch.nn.Module):\n    def forward(self, a):\n        %s\n",
                                cases[i].ret);
    Load l;
    load(&l, src);
    OxGraph *g = graph0(&l);
    g_assert_cmpuint(l.d.n, ==, 0);
    const OxValue *v = output_value(g);
    g_assert_cmpint(v->kind, ==, cases[i].kind);
    if (cases[i].kind != OX_V_NODE && cases[i].kind != OX_V_NONE) g_assert_cmpuint(v->n, ==, cases[i].n);
    OxNode *o = &g->nodes[ox_graph_output(g)];
    g_assert_cmpstr(o->name, ==, "output");
    g_assert_cmpstr(o->target, ==, "output");
    g_assert_cmpuint(o->src_line, ==, 3);
    assert_verified(g, true);
    unload(&l);
    g_free(src);
  }
}

/* ------------------------------------------------------------------ structure */

static void test_torch_logs(void) {
  const char *p0 = "V0123 10:01:52.787000 140455623955584 torch/_dynamo/output_graph.py:1291] [0/0] [__graph_code] ";
  const char *p1 = "V0123 10:01:56.913000 140455623955584 torch/_dynamo/output_graph.py:1291] [0/1] [__graph_code] ";
  char *src = g_strconcat(
      p0, "TRACED GRAPH\n", p0, " ===== __compiled_fn_1 =====\n", p0,
      " /site-packages/torch/fx/_lazy_graph_module.py class GraphModule(torch.nn.Module):\n", p0,
      "    def forward(self, L_a_: \"f32[4, 3][3, 1]cpu\"):\n", p0, "        l_a_ = L_a_\n", p0, "        \n", p0,
      "        mul: \"f32[4, 3][3, 1]cpu\" = 4 * l_a_;  l_a_ = None\n", p0, "        return (mul,)\n", p0, "\n",
      p1, "TRACED GRAPH\n", p1, " ===== __compiled_fn_3 =====\n", p1,
      " /site-packages/torch/fx/_lazy_graph_module.py class GraphModule(torch.nn.Module):\n", p1,
      "    def forward(self, s0: \"Sym(s0)\", L_a_: \"f32[s0, 3][3, 1]cpu\"):\n", p1, "        l_a_ = L_a_\n", p1,
      "        size = l_a_.size()\n", p1, "        getitem: \"Sym(s0)\" = size[0];  size = None\n", p1,
      "        mul: \"f32[s0, 3][3, 1]cpu\" = getitem * l_a_;  getitem = l_a_ = None\n", p1,
      "        return (mul,)\n", p1, "        ", NULL);
  Load l;
  load(&l, src);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpuint(l.doc->n_graphs, ==, 2);
  g_assert_cmpstr(g->name, ==, "__compiled_fn_1");
  /* "l_a_ = L_a_" is Dynamo's placeholder rename: the placeholder is named l_a_ with target L_a_ */
  OxNode *pa = node(g, "l_a_");
  g_assert_cmpint(pa->op, ==, OX_OP_PLACEHOLDER);
  g_assert_cmpstr(pa->target, ==, "L_a_");
  assert_meta(pa, "f32[4, 3][3, 1]cpu");
  g_assert_cmpuint(count_live(g), ==, 3);
  OxNode *m = node(g, "mul");
  g_assert_cmpint(arg(m, 0)->u.i, ==, 4);
  assert_node_ref(g, arg(m, 1), "l_a_");
  OxGraph *g2 = l.doc->graphs[1];
  g_assert_cmpstr(g2->name, ==, "__compiled_fn_3");
  g_assert_cmpuint(count_live(g2), ==, 6);
  OxNode *sz = node(g2, "size");
  g_assert_cmpint(sz->op, ==, OX_OP_CALL_METHOD);
  g_assert_cmpstr(sz->target, ==, "size");
  g_assert_null(sz->type_ann);
  g_assert_cmpstr(node(g2, "getitem")->meta.sym, ==, "s0");
  assert_verified(g, true);
  assert_verified(g2, true);
  unload(&l);
  g_free(src);
}

static void test_alias_kept(void) {
  /* an alias of a non-placeholder value creates no node; later uses resolve to the value */
  Load l;
  load(&l,
       "class GraphModule(torch.nn.Module):\n"
       "    def forward(self, x):\n"
       "        r = torch.relu(x)\n"
       "        q = r\n"
       "        s = torch.relu(q)\n"
       "        return (s,)\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpuint(count_live(g), ==, 4);
  g_assert_cmpuint(ox_graph_find(g, "q"), ==, 0);
  assert_node_ref(g, arg(node(g, "s"), 0), "r");
  unload(&l);
}

static void test_common_prefix(void) {
  Load l;
  load(&l,
       "#   class GraphModule(torch.nn.Module):\n"
       "#       def forward(self, x: \"f32[2]\"):\n"
       "#\n"
       "#           neg: \"f32[2]\" = torch.ops.aten.neg.default(x);  x = None\n"
       "#           return (neg,)\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpuint(count_live(g), ==, 3);
  OxNode *n = node(g, "neg");
  g_assert_cmpuint(n->src_line, ==, 4);
  assert_meta(n, "f32[2]");
  unload(&l);
}

static void test_nested_classes(void) {
  Load l;
  load(&l,
       "class GraphModule(torch.nn.Module):\n"
       "    def forward(self, x: \"f32[2]\"):\n"
       "        sub = self.sub(x);  x = None\n"
       "        getitem = sub[0];  sub = None\n"
       "        return (getitem,)\n"
       "        \n"
       "    class sub(torch.nn.Module):\n"
       "        def forward(self, y: \"f32[2]\"):\n"
       "            neg = -y\n"
       "            return (neg,)\n"
       "            \n"
       "        class inner(torch.nn.Module):\n"
       "            def forward(self, z):\n"
       "                return (z,)\n"
       "    class sub2(torch.nn.Module):\n"
       "        def forward(self, w):\n"
       "            return (w,)\n"
       "class GraphModule(torch.nn.Module):\n"
       "    def forward(self, v):\n"
       "        return (v,)\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpuint(l.doc->n_graphs, ==, 2);
  g_assert_cmpuint(g->n_subgraphs, ==, 2);
  OxNode *s = node(g, "sub");
  g_assert_cmpint(s->op, ==, OX_OP_CALL_MODULE);
  g_assert_cmpstr(s->target, ==, "sub");
  OxGraph *sg = g->subgraphs[0];
  g_assert_cmpstr(sg->name, ==, "sub");
  g_assert_cmpstr(sg->sub_owner, ==, "sub");
  g_assert_cmpstr(node(sg, "neg")->target, ==, "operator.neg");
  g_assert_cmpuint(sg->n_subgraphs, ==, 1);
  g_assert_cmpstr(sg->subgraphs[0]->sub_owner, ==, "inner");
  g_assert_cmpstr(g->subgraphs[1]->sub_owner, ==, "sub2");
  g_assert_cmpuint(l.doc->graphs[1]->n_subgraphs, ==, 0);
  g_assert_nonnull(ox_graph_find(l.doc->graphs[1], "v") ? "ok" : NULL);
  assert_verified(g, true);
  unload(&l);
}

static void test_bare_forward(void) {
  Load l;
  load(&l,
       "def forward(self, x):\n"
       "    y = torch.relu(x)\n"
       "    return y\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  g_assert_cmpuint(count_live(g), ==, 3);
  assert_verified(g, true);
  unload(&l);
}

/* ------------------------------------------------------------------ damaged input */

static void test_external(void) {
  const char *src =
      "class GraphModule(torch.nn.Module):\n"
      "    def forward(self, x):\n"
      "        y = torch.add(x, missing)\n"
      "        return (y,)\n";
  Load l;
  load(&l, src);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_WARNING, 3, "'missing'"), ==, 1);
  g_assert_cmpuint(l.d.items[0].col, ==, 26); /* "        y = torch.add(x, " is 25 bytes */
  assert_located(&l.d);
  OxNode *m = node(g, "missing");
  g_assert_cmpint(m->op, ==, OX_OP_PLACEHOLDER);
  g_assert_cmpuint(m->flags & OX_NODE_EXTERNAL, !=, 0);
  g_assert_cmpuint(count_flag(g, OX_NODE_EXTERNAL), ==, 1);
  /* inputs stay first */
  g_assert_cmpstr(g->nodes[g->link[g->head].next].name, ==, "missing");
  assert_verified(g, true);
  unload(&l);
  load_strict(&l, src);
  g_assert_cmpint(l.rc, ==, -1);
  g_assert_null(l.doc);
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_ERROR, 3, "'missing'"), ==, 1);
  unload(&l);
}

static const char *const damaged_src =
  "class GraphModule(torch.nn.Module):\n"
  "    def forward(self, x: \"f32[2]\"):\n"
  "        a: \"f32[2]\" = torch.ops.aten.relu.default(x\n"
  "        b: \"f32[2]\" = torch.ops.aten.neg.default(x))\n"
  "        c: \"f32[2]\" = torch.ops.aten.add.Tensor(x, \n"
  "        d = torch.ops.aten.sin.default(x) junk\n"
  "        e = \n"
  "        f = x.\n"
  "        g = (x, 'unterminated)\n"
  "        h: \"f32[2]\" = torch.ops.aten.cos.default(x)\n"
  "        return (h,)\n";

static void test_damaged(void) {
  Load l;
  load(&l, damaged_src);
  OxGraph *g = graph0(&l);
  /* each broken statement skipped with a located warning, the rest loads */
  for (uint32_t line = 3; line <= 9; line++)
    if (count_diags(&l.d, OX_SEV_WARNING, line, NULL) != 1) g_error("expected one warning on line %u", line);
  g_assert_cmpuint(l.d.n_warnings, ==, 7);
  g_assert_cmpuint(l.d.n_errors, ==, 0);
  assert_located(&l.d);
  /* the column points at the problem: the stray ')' on line 4 */
  g_assert_cmpuint(l.d.items[1].line, ==, 4);
  g_assert_cmpuint(l.d.items[1].col, ==, 52);
  g_assert_nonnull(l.d.items[1].snippet);
  g_assert_cmpuint(count_live(g), ==, 3);
  assert_node_ref(g, arg(node(g, "h"), 0), "x");
  assert_verified(g, true);
  unload(&l);
  load_strict(&l, damaged_src);
  g_assert_cmpint(l.rc, ==, -1);
  g_assert_null(l.doc);
  g_assert_cmpuint(l.d.n_errors, ==, 7);
  unload(&l);
}

static void test_truncated(void) {
  /* a dump cut off mid-statement: no return */
  const char *src = "class GraphModule(torch.nn.Module):\n"
                    "    def forward(self, x):\n"
                    "        a = torch.relu(x)\n"
                    "        b = torch.ops.aten.add.Tensor(a, ";
  Load l;
  load(&l, src);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_WARNING, 4, "cannot parse"), ==, 1);
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_WARNING, 1, "no return"), ==, 1);
  g_assert_cmpuint(count_live(g), ==, 2);
  assert_verified(g, false);
  unload(&l);
  load_strict(&l, src);
  g_assert_cmpint(l.rc, ==, -1);
  unload(&l);
}

static void test_deep_nesting(void) {
  GString *s = g_string_new("class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        y = f(");
  for (int i = 0; i < 100000; i++) g_string_append_c(s, '(');
  g_string_append(s, "x");
  for (int i = 0; i < 100000; i++) g_string_append_c(s, ')');
  g_string_append(s, ")\n        z = -");
  for (int i = 0; i < 100000; i++) g_string_append_c(s, '-');
  g_string_append(s, "x\n        a = x");
  /* attribute and subscript chains are built iteratively by the parser; lowering them is bounded too */
  for (int i = 0; i < 100000; i++) g_string_append(s, ".a");
  g_string_append(s, "\n        b = x");
  for (int i = 0; i < 100000; i++) g_string_append(s, "[0]");
  g_string_append(s, "\n        return (x,)\n");
  for (int strict = 0; strict < 2; strict++) {
    Load l;
    load_n(&l, s->str, s->len, strict);
    g_assert_cmpint(l.rc, ==, -1);
    g_assert_null(l.doc);
    g_assert_cmpuint(count_diags(&l.d, OX_SEV_ERROR, 3, "nested deeper than 256"), ==, 1);
    g_assert_cmpuint(count_diags(&l.d, OX_SEV_ERROR, 4, "nested deeper than 256"), ==, 1);
    g_assert_cmpuint(count_diags(&l.d, OX_SEV_ERROR, 5, "nested deeper than 256"), ==, 1);
    g_assert_cmpuint(count_diags(&l.d, OX_SEV_ERROR, 6, "nested deeper than 256"), ==, 1);
    assert_located(&l.d);
    unload(&l);
  }
  /* a custom bound */
  OxLoadOptions opt = {0};
  opt.max_depth = 4;
  OxDoc *doc = NULL;
  OxDiagList d;
  ox_diags_init(&d, "t");
  const char *src = "class G(torch.nn.Module):\n    def forward(self, x):\n        y = f([[[[[x]]]]])\n        return y\n";
  g_assert_cmpint(ox_load_buffer(src, strlen(src), OX_FMT_FX_READABLE, &opt, &doc, &d), ==, -1);
  g_assert_cmpuint(count_diags(&d, OX_SEV_ERROR, 3, "deeper than 4"), ==, 1);
  ox_diags_clear(&d);
  g_string_free(s, TRUE);
}

static void test_huge_line(void) {
  /* a 10 MB statement: linear time, loads */
  GString *s = g_string_new("class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        c = torch.cat([x");
  while (s->len < 10u << 20) g_string_append(s, ", x");
  g_string_append(s, "])\n        return (c,)\n");
  gint64 t0 = g_get_monotonic_time();
  Load l;
  load_n(&l, s->str, s->len, true);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(l.d.n, ==, 0);
  OxNode *c = node(g, "c");
  g_assert_cmpuint(arg(c, 0)->n, >, 3000000);
  /* x is used once by c however many times it appears */
  g_assert_cmpuint(node(g, "x")->n_users, ==, 1);
  g_assert_cmpint(g_get_monotonic_time() - t0, <, 20 * G_USEC_PER_SEC);
  unload(&l);
  /* a 10 MB damaged line: one warning with a short snippet */
  GString *b = g_string_new("class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        c = torch.cat([x");
  while (b->len < 10u << 20) g_string_append(b, ", x");
  size_t bad = b->len + 1; /* the stray x */
  size_t line3 = strlen("class GraphModule(torch.nn.Module):\n    def forward(self, x):\n");
  g_string_append(b, " x\n        return (x,)\n");
  load_n(&l, b->str, b->len, false);
  g_assert_cmpint(l.rc, ==, 0);
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_WARNING, 3, NULL), ==, 1);
  g_assert_cmpuint(l.d.items[0].col, ==, bad - line3 + 1);
  g_assert_cmpuint(strlen(l.d.items[0].snippet), <=, 200);
  unload(&l);
  g_string_free(s, TRUE);
  g_string_free(b, TRUE);
}

static void test_random_bytes(void) {
  GRand *r = g_rand_new_with_seed(20240607);
  for (int round = 0; round < 200; round++) {
    GString *s = g_string_new(round % 2 ? "class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        " : "");
    guint n = (guint)g_rand_int_range(r, 0, 4096);
    for (guint i = 0; i < n; i++) {
      /* a mix of Python punctuation, letters, newlines/indentation and arbitrary bytes */
      static const char alphabet[] = "()[]{}:;,.=+-*/'\"#\n        abcxyz_019 self class def forward return None";
      if (g_rand_int_range(r, 0, 4))
        g_string_append_c(s, alphabet[g_rand_int_range(r, 0, (gint32)sizeof alphabet - 1)]);
      else
        g_string_append_c(s, (char)g_rand_int_range(r, 0, 256));
    }
    for (int strict = 0; strict < 2; strict++) {
      Load l;
      load_n(&l, s->str, s->len, strict);
      if (l.rc == 0) {
        for (uint32_t k = 0; k < l.doc->n_graphs; k++) assert_verified(l.doc->graphs[k], false);
        if (strict) g_assert_cmpuint(l.d.n_warnings, ==, 0);
      } else {
        g_assert_cmpuint(l.d.n_errors, >, 0);
        g_assert_null(l.doc);
      }
      for (size_t i = 0; i < l.d.n; i++) g_assert_cmpuint(l.d.items[i].line, >=, 1);
      unload(&l);
    }
    g_string_free(s, TRUE);
  }
  g_rand_free(r);
}

static void test_empty(void) {
  static const char *const inputs[] = {"", "   \n\n  \t\n", "just some prose\nwithout a graph\n",
                                       "class Foo:\n    x = 1\n"};
  for (size_t i = 0; i < G_N_ELEMENTS(inputs); i++) {
    for (int strict = 0; strict < 2; strict++) {
      Load l;
      load_n(&l, inputs[i], strlen(inputs[i]), strict);
      g_assert_cmpint(l.rc, ==, -1);
      g_assert_null(l.doc);
      g_assert_cmpuint(l.d.n_errors, >=, 1);
      unload(&l);
    }
  }
  /* a class without forward is not a graph: located warnings, then "no graph" */
  Load l;
  load(&l, "class GraphModule(torch.nn.Module):\n    pass\n");
  g_assert_cmpint(l.rc, ==, -1);
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_WARNING, 2, "before 'def forward'"), ==, 1);
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_WARNING, 1, "no forward method"), ==, 1);
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_ERROR, 1, "no graph"), ==, 1);
  unload(&l);
  /* ... but a class holding only nested graph classes is kept */
  load(&l, "class Outer(torch.nn.Module):\n    class inner(torch.nn.Module):\n        def forward(self, x):\n"
           "            return (x,)\n");
  g_assert_cmpint(l.rc, ==, 0);
  g_assert_cmpuint(l.doc->n_graphs, ==, 1);
  g_assert_cmpuint(l.doc->graphs[0]->n_subgraphs, ==, 1);
  g_assert_cmpstr(l.doc->graphs[0]->subgraphs[0]->sub_owner, ==, "inner");
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_WARNING, 1, "no forward method"), ==, 1);
  unload(&l);
}

static void test_nul_and_non_utf8(void) {
  static const char src[] =
      "class GraphModule(torch.nn.Module):\n"
      "    def forward(self, x):\n"
      "        a = torch.relu(x\0)\n"
      "        b = torch.relu(\xff\xfe)\n"
      "        c = torch.relu(x)  \n"
      "        return (c,)\n"
      "        ";
  Load l;
  load_n(&l, src, sizeof src - 1, false);
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_WARNING, 3, NULL), ==, 1);
  /* bytes >= 0x80 are identifier characters (Python allows Unicode names): an external input */
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_WARNING, 4, "never defined"), ==, 1);
  assert_located(&l.d);
  g_assert_cmpuint(l.d.items[0].col, ==, 25);
  g_assert_nonnull(ox_graph_find(g, "c") ? "c" : NULL);
  g_assert_cmpuint(ox_graph_find(g, "a"), ==, 0);
  assert_verified(g, true);
  unload(&l);
}

static void test_after_return(void) {
  Load l;
  load(&l,
       "class GraphModule(torch.nn.Module):\n"
       "    def forward(self, x):\n"
       "        return (x,)\n"
       "        y = torch.relu(x)\n"
       "        return (y,)\n");
  OxGraph *g = graph0(&l);
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_WARNING, 4, "after return"), ==, 1);
  g_assert_cmpuint(count_diags(&l.d, OX_SEV_WARNING, 5, "after return"), ==, 1);
  assert_verified(g, true);
  unload(&l);
}

/* ------------------------------------------------------------------ data files */

static char *data_path(const char *name) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  return g_build_filename(root ? root : ".", "tests", "data", "py", name, NULL);
}

static void test_data_files(void) {
  char *p1 = data_path("comment-prefixed-black-signature.txt");
  OxDoc *doc = NULL;
  OxDiagList d;
  ox_diags_init(&d, p1);
  g_assert_cmpint(ox_load_file(p1, OX_FMT_UNKNOWN, NULL, &doc, &d), ==, 0);
  g_assert_cmpint(doc->format, ==, OX_FMT_FX_READABLE);
  g_assert_cmpuint(d.n, ==, 0);
  OxGraph *g = doc->graphs[0];
  g_assert_cmpstr(g->name, ==, "GraphModule");
  g_assert_cmpuint(count_op(g, OX_OP_PLACEHOLDER), ==, 3);
  OxNode *mm = node(g, "mm");
  g_assert_cmpuint(mm->src_line, ==, 9);
  assert_meta(mm, "f32[8, 32][32, 1]cuda:0");
  assert_node_ref(g, arg(node(g, "add"), 1), "bias");
  assert_verified(g, true);
  ox_doc_free(doc);
  ox_diags_clear(&d);
  g_free(p1);

  char *p2 = data_path("aot-joint-two-graphs.txt");
  ox_diags_init(&d, p2);
  g_assert_cmpint(ox_load_file(p2, OX_FMT_UNKNOWN, NULL, &doc, &d), ==, 0);
  g_assert_cmpuint(d.n, ==, 0);
  g_assert_cmpuint(doc->n_graphs, ==, 2);
  g_assert_cmpstr(doc->graphs[0]->name, ==, "Forward graph 0");
  g_assert_cmpstr(doc->graphs[1]->name, ==, "Backward graph 0");
  OxGraph *bw = doc->graphs[1];
  OxNode *le = node(bw, "le");
  g_assert_cmpstr(le->target, ==, "torch.ops.aten.le.Scalar");
  assert_meta(le, "b8[8, 32][32, 1]cuda:0");
  for (uint32_t k = 0; k < 2; k++) assert_verified(doc->graphs[k], true);
  ox_doc_free(doc);
  ox_diags_clear(&d);
  g_free(p2);
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
    if (g_str_has_prefix(e, num) && e[2] == '-') {
      g_free(found);
      found = g_build_filename(dir, e, NULL);
    }
  g_dir_close(d);
  return found;
}

/* Node counts. SOURCES.md counts format 4 as "forward parameters (placeholders) + assignment
 * statements" (the return not included). Our graph has one node per placeholder and per
 * assignment, plus the output node, except for Dynamo's "l_a_ = L_a_" renames, which fold
 * into the placeholder (name l_a_, target L_a_, as in the FX graph Dynamo built):
 *   live nodes = placeholders + statements - renames + 1 (output).
 * Two SOURCES.md placeholder counts are off, checked with Python's ast module on the file:
 * 24's forward has 165 parameters (153 annotated + 12 un-annotated fwd_rng_state_N), not
 * 159; 25's has 331, not 333 (its statement count 2950 is right: 331 + 2950 + 1 = 3282). */
typedef struct {
  const char *num;
  guint graphs;
  guint live;         /* live nodes of graph 0 (including the output) */
  guint placeholders; /* of graph 0 */
  guint statements;   /* SOURCES.md statements of graph 0 */
} CorpusCase;

static const CorpusCase corpus_cases[] = {
  {"20", 1, 83, 30, 52},     {"21", 1, 138, 55, 82},    {"22", 1, 43, 9, 33},
  {"23", 1, 484, 78, 405},   {"24", 1, 1243, 165, 1077}, {"25", 1, 3282, 331, 2950},
  {"26", 2, 5, 2, 4},        {"27", 1, 195, 22, 172},   {"28", 1, 9, 4, 4},
  {"29", 1, 1388, 280, 1107},
};

static OxNode *find_target(OxGraph *g, const char *target) {
  OX_GRAPH_FOREACH(g, id) if (strcmp(g->nodes[id].target, target) == 0) return &g->nodes[id];
  return NULL;
}

static void check_corpus_specifics(const char *num, OxDoc *doc) {
  OxGraph *g = doc->graphs[0];
  if (!strcmp(num, "20")) {
    OxNode *c = node(g, "_tensor_constant0");
    g_assert_cmpint(c->op, ==, OX_OP_GET_ATTR);
    g_assert_cmpstr(c->target, ==, "_tensor_constant0");
    OxNode *cat = node(g, "cat");
    g_assert_cmpuint(arg(cat, 0)->n, ==, 9);
    OxNode *gi = node(g, "getitem");
    g_assert_cmpstr(gi->target, ==, "operator.getitem");
    assert_node_ref(g, arg(gi, 0), "_embedding_bag");
    const OxValue *ix = arg(node(g, "index"), 1);
    g_assert_cmpint(ix->u.items[0].kind, ==, OX_V_NONE);
    assert_node_ref(g, &ix->u.items[1], "lift_fresh_copy");
    g_assert_nonnull(node(g, "select")->stack_trace);
    g_assert_true(g_str_has_prefix(node(g, "select")->stack_trace, "File: /tmp/pytorch-work/"));
  } else if (!strcmp(num, "21")) {
    const OxValue *ov = output_value(g);
    g_assert_cmpint(ov->kind, ==, OX_V_TUPLE);
    g_assert_cmpint(ov->u.items[2].kind, ==, OX_V_NONE);
    g_assert_nonnull(find_target(g, "torch.ops.aten._embedding_bag_backward.default"));
  } else if (!strcmp(num, "22")) {
    OxNode *s = node(g, "inductor_seeds_default");
    g_assert_cmpint(arg(s, 1)->kind, ==, OX_V_DEVICE);
    g_assert_cmpstr(arg(s, 1)->s, ==, "cpu");
    g_assert_null(s->stack_trace); /* after "# No stacktrace found" */
    g_assert_cmpstr(arg(node(g, "inductor_random_default_1"), 2)->s, ==, "rand");
    assert_meta(node(g, "getitem_1"), "i8[64, 64, 12, 12]");
    g_assert_cmpuint(output_value(g)->n, ==, 15);
  } else if (!strcmp(num, "23")) {
    g_assert_cmpstr(g->name, ==, "<lambda>");
    g_assert_nonnull(find_target(g, "torch.ops.aten.var_mean.correction"));
    OxNode *io = find_target(g, "torch.ops.prims.iota.default");
    g_assert_nonnull(io);
    g_assert_cmpstr(kwarg(io, "device")->s, ==, "cuda:0");
  } else if (!strcmp(num, "24")) {
    OxNode *p1 = node(g, "primals_1");
    g_assert_cmpint(p1->meta.kind, ==, OX_META_SYMINT);
    g_assert_cmpstr(p1->meta.sym, ==, "s77");
    assert_meta(node(g, "primals_2"), "f32[s77, 1, 128, 128]");
    OxNode *m = node(g, "mul_15");
    g_assert_cmpstr(m->target, ==, "operator.mul");
    g_assert_cmpstr(m->meta.sym, ==, "1024*s77");
    OxNode *gs = node(g, "graphsafe_run_with_rng_state");
    g_assert_cmpint(arg(gs, 0)->kind, ==, OX_V_ENUM);
    assert_node_ref(g, kwarg(gs, "rng_state"), "fwd_rng_state_0");
    g_assert_null(node(g, "fwd_rng_state_0")->type_ann);
  } else if (!strcmp(num, "25")) {
    g_assert_cmpstr(node(g, "arg0_1")->meta.sym, ==, "s0");
    assert_meta(node(g, "arg1_1"), "i64[1, s0][s0, 1]cuda:0");
    const OxTensorMeta *t = ox_node_tensor_meta(node(g, "arg6_1"));
    g_assert_cmpstr(t->stride[0].sym, ==, "s0*s1");
    OxNode *tk = node(g, "triton_kernel_wrapper_mutation_64");
    const OxValue *kw = kwarg(tk, "kwargs");
    g_assert_cmpstr(kw->keys[0], ==, "Y_ptr");
    assert_node_ref(g, &kw->u.items[0], "empty");
    g_assert_cmpint(kwarg(tk, "kernel_idx")->u.i, ==, 1);
    OxNode *fd = node(g, "full_default_2");
    g_assert_true(isinf(arg(fd, 1)->u.f));
    bool strided_s0 = false;
    OX_GRAPH_FOREACH(g, id) {
      const OxTensorMeta *m = ox_node_tensor_meta(&g->nodes[id]);
      if (m && m->has_stride && m->rank > 0 && m->stride[0].sym && !strcmp(m->stride[0].sym, "4096*s0"))
        strided_s0 = true;
    }
    g_assert_true(strided_s0);
  } else if (!strcmp(num, "26")) {
    OxGraph *g2 = doc->graphs[1];
    g_assert_cmpstr(g->name, ==, "__compiled_fn_1");
    g_assert_cmpstr(g2->name, ==, "__compiled_fn_3");
    /* graph 2: 3 placeholders + 6 statements (2 renames) + output */
    g_assert_cmpuint(count_live(g2), ==, 3 + 6 - 2 + 1);
    g_assert_cmpstr(node(g2, "l_a_")->target, ==, "L_a_");
    g_assert_cmpint(node(g2, "s0")->meta.kind, ==, OX_META_SYMINT);
    g_assert_cmpstr(node(g2, "size")->target, ==, "size");
    g_assert_cmpint(arg(node(g, "mul"), 0)->u.i, ==, 4);
  } else if (!strcmp(num, "27")) {
    OxNode *ar = find_target(g, "torch.ops._c10d_functional.all_reduce.default");
    g_assert_nonnull(ar);
    g_assert_cmpstr(arg(ar, 1)->s, ==, "sum");
    g_assert_cmpint(output_value(g)->kind, ==, OX_V_LIST);
  } else if (!strcmp(num, "28")) {
    g_assert_cmpuint(g->n_subgraphs, ==, 1);
    OxGraph *t0 = g->subgraphs[0];
    g_assert_cmpstr(t0->sub_owner, ==, "thunder_0");
    g_assert_cmpuint(t0->n_subgraphs, ==, 1);
    OxGraph *md = t0->subgraphs[0];
    g_assert_cmpstr(md->sub_owner, ==, "_model");
    /* 4 placeholders + 29 statements + output in each nested module */
    g_assert_cmpuint(count_live(t0), ==, 34);
    g_assert_cmpuint(count_live(md), ==, 34);
    OxNode *call = node(g, "thunder_0");
    g_assert_cmpint(call->op, ==, OX_OP_CALL_MODULE);
    g_assert_cmpstr(call->target, ==, "thunder_0");
    g_assert_cmpstr(node(t0, "neg")->target, ==, "operator.neg");
    OxNode *ch = node(t0, "chunk");
    g_assert_cmpint(ch->op, ==, OX_OP_CALL_METHOD);
    g_assert_cmpint(kwarg(ch, "dim")->u.i, ==, -1);
    OxNode *x = node(t0, "x");
    g_assert_cmpstr(x->target, ==, "torch.stack");
    g_assert_cmpint(arg(x, 0)->kind, ==, OX_V_TUPLE);
    const OxValue *sl = &arg(node(t0, "x2"), 1)->u.items[1];
    g_assert_cmpint(sl->kind, ==, OX_V_SLICE);
    g_assert_cmpint(sl->u.items[0].u.i, ==, 1);
    g_assert_cmpstr(arg(node(t0, "to"), 1)->s, ==, "cuda:0");
    g_assert_cmpint(arg(node(t0, "to_1"), 1)->u.dtype, ==, OX_DT_BF16);
  } else if (!strcmp(num, "29")) {
    OxNode *u = find_target(g, "torch.ops.aten.unbind.int");
    g_assert_nonnull(u);
    g_assert_cmpuint(u->n_users, ==, 3);
    g_assert_cmpint(u->meta.kind, ==, OX_META_NONE);
  }
}

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
    for (int strict = 0; strict < 2; strict++) {
      OxLoadOptions opt = {0};
      opt.strict = strict;
      OxDoc *doc = NULL;
      OxDiagList d;
      ox_diags_init(&d, path);
      int rc = ox_load_file(path, OX_FMT_UNKNOWN, &opt, &doc, &d);
      if (rc != 0 || d.n) {
        ox_diags_print(&d, stderr);
        g_error("corpus %s: rc %d, %zu diagnostics", cc->num, rc, d.n);
      }
      g_assert_cmpint(doc->format, ==, OX_FMT_FX_READABLE);
      g_assert_cmpuint(doc->n_graphs, ==, cc->graphs);
      OxGraph *g = doc->graphs[0];
      uint32_t ph = count_op(g, OX_OP_PLACEHOLDER);
      g_assert_cmpuint(ph, ==, cc->placeholders);
      g_assert_cmpuint(count_flag(g, OX_NODE_EXTERNAL), ==, 0);
      uint32_t renames = 0;
      OX_GRAPH_FOREACH(g, id)
      if (g->nodes[id].op == OX_OP_PLACEHOLDER && strcmp(g->nodes[id].name, g->nodes[id].target)) renames++;
      g_assert_cmpuint(count_live(g), ==, cc->live);
      g_assert_cmpuint(cc->live, ==, cc->placeholders + cc->statements - renames + 1);
      g_assert_cmpuint(count_op(g, OX_OP_OUTPUT), ==, 1);
      for (uint32_t k = 0; k < doc->n_graphs; k++) assert_verified(doc->graphs[k], true);
      /* src_line is set on every node */
      OX_GRAPH_FOREACH(g, id) g_assert_cmpuint(g->nodes[id].src_line, >, 0);
      check_corpus_specifics(cc->num, doc);
      ox_doc_free(doc);
      ox_diags_clear(&d);
    }
    g_free(path);
  }
  g_free(dir);
}


/* Issue 21: absurd sizes in annotations of the readable code: a located warning (error under
 * --strict) at the annotation, and no meta. */
static void test_absurd_dims(void) {
  static const char text[] = "class GraphModule(torch.nn.Module):\n"
                             "    def forward(self, x: \"f32[-5, 4]\", y: \"f32[4]\"):\n"
                             "        relu: \"f32[1e23]\" = torch.relu(y)\n"
                             "        add: \"f32[9223372036854775807]\" = torch.add(relu, y)\n"
                             "        return (add, x)\n";
  Load l;
  load(&l, text);
  OxGraph *g = graph0(&l);
  static const struct {
    uint32_t line, col;
    const char *msg, *node;
  } want[] = {
      {2, 26, "tensor annotation ignored: size -5 (dim 0) is negative", "x"},
      {3, 15, "tensor annotation ignored: size 1e23 (dim 0) is not an integer", "relu"},
      {4, 14, "tensor annotation ignored: size 9223372036854775807 (dim 0) is more than 2^50 elements", "add"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
    bool found = false;
    for (size_t k = 0; k < l.d.n; k++)
      if (l.d.items[k].sev == OX_SEV_WARNING && l.d.items[k].line == want[i].line && l.d.items[k].col == want[i].col &&
          !strcmp(l.d.items[k].msg, want[i].msg))
        found = true;
    if (!found) {
      ox_diags_print(&l.d, stderr);
      g_error("no warning %u:%u: %s", want[i].line, want[i].col, want[i].msg);
    }
    g_assert_cmpint(node(g, want[i].node)->meta.kind, ==, OX_META_NONE);
  }
  g_assert_cmpint(node(g, "y")->meta.kind, ==, OX_META_TENSOR);
  unload(&l);
  load_strict(&l, text);
  g_assert_cmpint(l.rc, ==, -1);
  g_assert_cmpuint(l.d.n_errors, ==, 3);
  unload(&l);
  /* found by fuzz-fx-readable: NUL bytes in an annotation made an empty symbolic size, which the
   * JSON we wrote could not read back */
  static const char nul[] = "class GraphModule(torch.nn.Module):\n"
                            "    def forward(self, y: \"f32[4]\"):\n"
                            "        relu: \"f32[1,\0\0\0 4]\" = torch.relu(y)\n"
                            "        return (relu,)\n";
  load_n(&l, nul, sizeof nul - 1, false);
  g = graph0(&l);
  g_assert_cmpint(l.d.n_warnings, ==, 1);
  g_assert_nonnull(strstr(l.d.items[0].msg, "tensor annotation ignored: dim 1 has an empty size"));
  g_assert_cmpint(node(g, "relu")->meta.kind, ==, OX_META_NONE);
  unload(&l);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/parse-py/basic", test_basic);
  g_test_add_func("/engine/parse-py/crlf", test_crlf_same);
  g_test_add_func("/engine/parse-py/call-forms", test_call_forms);
  g_test_add_func("/engine/parse-py/first-call-without-args", test_first_call_without_args);
  g_test_add_func("/engine/parse-py/subscripts", test_subscripts);
  g_test_add_func("/engine/parse-py/operators", test_operators);
  g_test_add_func("/engine/parse-py/literals", test_literals);
  g_test_add_func("/engine/parse-py/annotations", test_annotations);
  g_test_add_func("/engine/parse-py/multiline-signature", test_multiline_signature);
  g_test_add_func("/engine/parse-py/stack-traces", test_stack_traces);
  g_test_add_func("/engine/parse-py/returns", test_returns);
  g_test_add_func("/engine/parse-py/torch-logs", test_torch_logs);
  g_test_add_func("/engine/parse-py/alias", test_alias_kept);
  g_test_add_func("/engine/parse-py/common-prefix", test_common_prefix);
  g_test_add_func("/engine/parse-py/nested-classes", test_nested_classes);
  g_test_add_func("/engine/parse-py/bare-forward", test_bare_forward);
  g_test_add_func("/engine/parse-py/external", test_external);
  g_test_add_func("/engine/parse-py/damaged", test_damaged);
  g_test_add_func("/engine/parse-py/truncated", test_truncated);
  g_test_add_func("/engine/parse-py/deep-nesting", test_deep_nesting);
  g_test_add_func("/engine/parse-py/huge-line", test_huge_line);
  g_test_add_func("/engine/parse-py/random-bytes", test_random_bytes);
  g_test_add_func("/engine/parse-py/empty", test_empty);
  g_test_add_func("/engine/parse-py/nul-non-utf8", test_nul_and_non_utf8);
  g_test_add_func("/engine/parse-py/after-return", test_after_return);
  g_test_add_func("/engine/parse-py/data-files", test_data_files);
  g_test_add_func("/engine/parse-py/corpus", test_corpus);
  g_test_add_func("/engine/parse-py/absurd-dims", test_absurd_dims);
  return g_test_run();
}
