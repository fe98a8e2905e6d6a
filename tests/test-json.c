/* Tests for our JSON format (engine/json/ox_json.c, docs/format-json.md): exact output for a
 * small graph, lossless load -> save -> load on hand-built documents holding every value
 * kind, meta kind and optional field, located errors for every class of bad input, no
 * crash on truncated or damaged input, and the round trip over the real corpus.
 *
 * Corpus path: $OPTIMUS_SHARED/corpus/fx-real, OPTIMUS_SHARED defaulting to
 * "$OPTIMUS_SOURCE_ROOT/../shared"; corpus tests are skipped with a reason when absent. */
#include <glib.h>
#include <glib/gstdio.h>

#include "test-common.h"
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_graph.h"
#include "load/ox_load.h"
#include "load/ox_parse.h"
#include "run/ox_record.h"
#include "json/ox_json_private.h"
#include "write/ox_write.h"

/* ------------------------------------------------------------------ deep compare */

/* Appends the first difference found to *why (a test failure message). */
static bool differ(GString *why, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static bool differ(GString *why, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_string_append_vprintf(why, fmt, ap);
  va_end(ap);
  return false;
}

static bool str_same(const char *a, const char *b) {
  if (!a || !b) return a == b;
  return strcmp(a, b) == 0;
}

/* Values compared structurally; node references by the referenced node's name, so two
 * graphs whose ids differ (tombstones dropped on save) still compare. */
static bool value_same(const OxGraph *ga, const OxValue *a, const OxGraph *gb, const OxValue *b) {
  if (a->kind != b->kind) return false;
  if (a->kind == OX_V_NODE) {
    const OxNode *na = ox_graph_node(ga, a->u.node), *nb = ox_graph_node(gb, b->u.node);
    return na && nb && strcmp(na->name, nb->name) == 0;
  }
  if (a->kind == OX_V_LIST || a->kind == OX_V_TUPLE || a->kind == OX_V_SLICE || a->kind == OX_V_DICT) {
    if (a->n != b->n) return false;
    for (uint32_t i = 0; i < a->n; i++) {
      if (a->kind == OX_V_DICT && !str_same(a->keys[i], b->keys[i])) return false;
      if (!value_same(ga, &a->u.items[i], gb, &b->u.items[i])) return false;
    }
    return true;
  }
  return ox_value_equal(a, b);
}

static bool dims_same(const OxDim *a, const OxDim *b, int32_t rank) {
  for (int32_t i = 0; i < rank; i++) {
    if (!str_same(a[i].sym, b[i].sym)) return false;
    if (!a[i].sym && a[i].v != b[i].v) return false;
  }
  return true;
}

static bool tmeta_same(const OxTensorMeta *a, const OxTensorMeta *b) {
  if (a->dtype != b->dtype || a->rank != b->rank || a->has_stride != b->has_stride) return false;
  if (!str_same(a->device, b->device)) return false;
  if (a->rank > 0 && !dims_same(a->shape, b->shape, a->rank)) return false;
  if (a->has_stride && a->rank > 0 && !dims_same(a->stride, b->stride, a->rank)) return false;
  return true;
}

static bool meta_same(const OxMeta *a, const OxMeta *b) {
  if (a->kind != b->kind || a->inferred != b->inferred) return false;
  switch (a->kind) {
  case OX_META_TENSOR: return a->n >= 1 && b->n >= 1 && tmeta_same(&a->t[0], &b->t[0]);
  case OX_META_TUPLE:
    if (a->n != b->n) return false;
    for (uint32_t i = 0; i < a->n; i++)
      if (!tmeta_same(&a->t[i], &b->t[i])) return false;
    return true;
  case OX_META_SYMINT: return str_same(a->sym, b->sym);
  default: return true;
  }
}

/* Everything the IR holds. same_ids: ids must match too (true for load -> save -> load). */
static bool graph_same(const OxGraph *a, const OxGraph *b, bool same_ids, GString *why) {
  if (!str_same(a->name, b->name)) return differ(why, "graph name %s vs %s", a->name, b->name);
  if (a->src_line != b->src_line) return differ(why, "graph %s: src_line %u vs %u", a->name, a->src_line, b->src_line);
  if (!str_same(a->sub_owner, b->sub_owner)) return differ(why, "graph %s: owner differs", a->name);
  if (a->n_live != b->n_live) return differ(why, "graph %s: %u vs %u live nodes", a->name, a->n_live, b->n_live);
  OxNodeId ia = a->head, ib = b->head;
  for (;;) {
    while (ia && a->nodes[ia].erased) ia = a->link[ia].next;
    while (ib && b->nodes[ib].erased) ib = b->link[ib].next;
    if (!ia || !ib) break;
    const OxNode *x = &a->nodes[ia], *y = &b->nodes[ib];
    const char *nm = x->name;
    if (same_ids && ia != ib) return differ(why, "node %s: id %u vs %u", nm, ia, ib);
    if (!str_same(x->name, y->name)) return differ(why, "node name %s vs %s", x->name, y->name);
    if (x->op != y->op) return differ(why, "node %s: op differs", nm);
    if (!str_same(x->target, y->target)) return differ(why, "node %s: target %s vs %s", nm, x->target, y->target);
    if (!value_same(a, &x->args, b, &y->args)) return differ(why, "node %s: args differ", nm);
    if (!value_same(a, &x->kwargs, b, &y->kwargs)) return differ(why, "node %s: kwargs differ", nm);
    if (!meta_same(&x->meta, &y->meta)) return differ(why, "node %s: meta differs", nm);
    if (x->declared_users != y->declared_users) return differ(why, "node %s: declared_users", nm);
    if (x->flags != y->flags) return differ(why, "node %s: flags %u vs %u", nm, x->flags, y->flags);
    if (x->src_line != y->src_line) return differ(why, "node %s: src_line %u vs %u", nm, x->src_line, y->src_line);
    if (!str_same(x->type_ann, y->type_ann)) return differ(why, "node %s: type_ann", nm);
    if (!str_same(x->stack_trace, y->stack_trace)) return differ(why, "node %s: stack_trace", nm);
    if (!str_same(x->module_path, y->module_path)) return differ(why, "node %s: module_path", nm);
    if (!str_same(x->module_type, y->module_type)) return differ(why, "node %s: module_type", nm);
    if (!str_same(x->default_value, y->default_value)) return differ(why, "node %s: default_value", nm);
    if (x->n_provenance != y->n_provenance) return differ(why, "node %s: provenance count", nm);
    for (uint32_t i = 0; i < x->n_provenance; i++)
      if (x->provenance[i] != y->provenance[i]) return differ(why, "node %s: provenance[%u]", nm, i);
    if (x->n_users != y->n_users) return differ(why, "node %s: %u vs %u users", nm, x->n_users, y->n_users);
    for (uint32_t i = 0; i < x->n_users; i++)
      if (!str_same(a->nodes[x->users[i]].name, b->nodes[y->users[i]].name))
        return differ(why, "node %s: users[%u] differ", nm, i);
    ia = a->link[ia].next;
    ib = b->link[ib].next;
  }
  if (a->n_subgraphs != b->n_subgraphs) return differ(why, "graph %s: subgraph count", a->name);
  for (uint32_t i = 0; i < a->n_subgraphs; i++)
    if (!graph_same(a->subgraphs[i], b->subgraphs[i], same_ids, why)) return false;
  return true;
}

static bool doc_same(const OxDoc *a, const OxDoc *b, bool same_ids, GString *why) {
  if (a->n_graphs != b->n_graphs) return differ(why, "%u vs %u graphs", a->n_graphs, b->n_graphs);
  for (uint32_t i = 0; i < a->n_graphs; i++)
    if (!graph_same(a->graphs[i], b->graphs[i], same_ids, why)) return false;
  return true;
}

static void assert_doc_same(const OxDoc *a, const OxDoc *b, bool same_ids) {
  GString *why = g_string_new(NULL);
  if (!doc_same(a, b, same_ids, why)) g_error("documents differ: %s", why->str);
  g_string_free(why, TRUE);
}

/* ------------------------------------------------------------------ helpers */

static char *write_doc(const OxDoc *d) {
  OxBuf b;
  ox_buf_init(&b);
  ox_write_json(d, &b);
  char *s = g_strndup(b.data ? b.data : "", b.len);
  ox_buf_free(&b);
  return s;
}

/* Loads JSON through the public entry point; fails the test with the diagnostics if it fails. */
static OxDoc *load_ok(const char *text) {
  OxDiagList d;
  ox_diags_init(&d, "mem.json");
  OxDoc *doc = NULL;
  int rc = ox_load_buffer(text, strlen(text), OX_FMT_JSON, NULL, &doc, &d);
  if (rc != 0 || d.n_warnings) {
    ox_diags_print(&d, stderr);
    g_error("load failed or warned (rc %d)", rc);
  }
  ox_diags_clear(&d);
  return doc;
}

/* Loads text expected to fail; returns the diagnostics (caller clears them). */
static void load_bad(const char *text, size_t len, const OxLoadOptions *opt, OxDiagList *d) {
  ox_diags_init(d, "bad.json");
  OxDoc *doc = NULL;
  int rc = ox_load_buffer(text, len, OX_FMT_JSON, opt, &doc, d);
  g_assert_cmpint(rc, ==, -1);
  g_assert_null(doc);
  g_assert_cmpuint(d->n_errors, >, 0);
}

static const OxDiag *first_error(const OxDiagList *d) {
  for (size_t i = 0; i < d->n; i++)
    if (d->items[i].sev == OX_SEV_ERROR) return &d->items[i];
  return NULL;
}

static OxValue seq(OxGraph *g, OxValueKind k, int n, ...) {
  OxValue items[16];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) items[i] = va_arg(ap, OxValue);
  va_end(ap);
  return ox_graph_value_seq(g, k, items, (uint32_t)n);
}

static OxValue strv(OxGraph *g, OxValueKind k, const char *s) { return ox_graph_value_str(g, k, s); }

static OxValue dict1(OxGraph *g, const char *k, OxValue v) {
  const char *keys[1] = {k};
  return ox_graph_value_dict(g, keys, &v, 1);
}

static OxTensorMeta *tmeta(OxGraph *g, OxDType dt, int rank, const int64_t *shape, const char *sym0,
                           const int64_t *stride, const char *device) {
  OxTensorMeta *t = ox_graph_tensor_meta_new(g, dt, rank);
  for (int i = 0; i < rank; i++) t->shape[i].v = shape[i];
  if (sym0 && rank > 0) t->shape[0].sym = ox_graph_intern(g, sym0);
  if (stride) {
    t->has_stride = true;
    t->stride = ox_graph_alloc(g, (size_t)(rank ? rank : 1) * sizeof(OxDim));
    for (int i = 0; i < rank; i++) t->stride[i].v = stride[i];
  }
  t->device = device ? ox_graph_intern(g, device) : NULL;
  return t;
}

static void set_tensor(OxGraph *g, OxNodeId id, OxTensorMeta *t) {
  OxMeta m = {0};
  m.kind = OX_META_TENSOR;
  m.n = 1;
  m.t = t;
  ox_graph_set_meta(g, id, &m);
}

/* A graph exercising every value kind, meta kind and optional node field. */
static OxGraph *rich_graph(void) {
  OxGraph *g = ox_graph_new();
  g->name = ox_graph_intern(g, "rich graph");
  g->src_line = 7;
  OxNodeId x = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "x", "x", ox_value_none(), ox_value_none());
  int64_t sh[2] = {8, 16}, st[2] = {16, 1};
  set_tensor(g, x, tmeta(g, OX_DT_F32, 2, sh, "s0", st, "cuda:0"));
  OxNode *nx = &g->nodes[x];
  nx->declared_users = 3;
  nx->src_line = 2;
  nx->type_ann = ox_graph_intern(g, "torch.Tensor");
  nx->default_value = ox_graph_intern(g, "None");
  nx->flags = OX_NODE_EXTERNAL | OX_NODE_MARKER;
  OxNodeId w = ox_graph_add_node(g, OX_OP_GET_ATTR, "w", "layer.weight", ox_value_none(), ox_value_none());
  set_tensor(g, w, tmeta(g, OX_DT_BF16, 0, NULL, NULL, st, NULL)); /* rank 0, empty stride */
  /* every scalar and container kind */
  OxValue floats = seq(g, OX_V_LIST, 12, ox_value_float(1.0), ox_value_float(0.1), ox_value_float(1e-05),
                       ox_value_float(-0.0), ox_value_float(INFINITY), ox_value_float(-INFINITY),
                       ox_value_float(NAN), ox_value_float(5e-324), ox_value_float(1.7976931348623157e308),
                       ox_value_float(0.09999999999999998), ox_value_float(1e16), ox_value_float(-2.5e-300));
  OxValue ints = seq(g, OX_V_TUPLE, 4, ox_value_int(INT64_MIN), ox_value_int(INT64_MAX), ox_value_int(0),
                     ox_value_int(-1));
  OxValue atoms = seq(g, OX_V_LIST, 12, ox_value_none(), ox_value_bool(true), ox_value_bool(false),
                      strv(g, OX_V_STR, "sum"), strv(g, OX_V_STR, "quote\" back\\ nl\n tab\t ctl\x01 é ✓"),
                      strv(g, OX_V_STR, ""), strv(g, OX_V_SYM, "4096*s0"), ox_value_dtype(OX_DT_F16),
                      strv(g, OX_V_DEVICE, "cuda:0"), strv(g, OX_V_ENUM, "torch.contiguous_format"),
                      strv(g, OX_V_RAW, "device(type='cpu')"), seq(g, OX_V_TUPLE, 0));
  OxValue unk_dt = ox_value_dtype(OX_DT_UNKNOWN);
  unk_dt.s = ox_graph_intern(g, "torch.float128");
  OxValue alias_dt = ox_value_dtype(OX_DT_F32);
  alias_dt.s = ox_graph_intern(g, "torch.float");
  OxValue ell = ox_value_none();
  ell.kind = OX_V_ELLIPSIS;
  OxValue sl = seq(g, OX_V_SLICE, 3, ox_value_none(), ox_value_int(64), ox_value_node(x));
  const char *dk[3] = {"b", "a", "weird key: \"x\""};
  OxValue dv[3] = {ox_value_int(1), seq(g, OX_V_LIST, 1, ox_value_node(w)), dict1(g, "inner", seq(g, OX_V_TUPLE, 1, ox_value_node(x)))};
  OxValue d = ox_graph_value_dict(g, dk, dv, 3);
  OxValue args = seq(g, OX_V_TUPLE, 10, ox_value_node(x), floats, ints, atoms, unk_dt, alias_dt, ell, sl, d,
                     seq(g, OX_V_LIST, 0));
  const char *kk[2] = {"dim", "out"};
  OxValue kv[2] = {ox_value_int(-1), ox_value_node(w)};
  OxNodeId f = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "f", "torch.ops.aten.foo.default", args,
                                 ox_graph_value_dict(g, kk, kv, 2));
  OxMeta tm = {0};
  tm.kind = OX_META_TUPLE;
  tm.n = 2;
  tm.t = ox_graph_alloc(g, 2 * sizeof(OxTensorMeta));
  tm.t[0] = *tmeta(g, OX_DT_I64, -1, NULL, NULL, NULL, "cpu");
  tm.t[1] = *tmeta(g, OX_DT_UNKNOWN, 1, sh, "u0", NULL, NULL);
  tm.inferred = true;
  ox_graph_set_meta(g, f, &tm);
  OxNode *nf = &g->nodes[f];
  nf->stack_trace = ox_graph_intern(g, "File: a.py:3 in forward, code: return f(x)\n  second line");
  nf->module_path = ox_graph_intern(g, "layers.0.attn");
  nf->module_type = ox_graph_intern(g, "torch.nn.Linear");
  ox_graph_add_provenance(g, f, 3);
  ox_graph_add_provenance(g, f, 1);
  OxNodeId s = ox_graph_add_node(g, OX_OP_CALL_METHOD, "size", "size", seq(g, OX_V_TUPLE, 1, ox_value_node(f)),
                                 ox_value_none());
  OxMeta sm = {0};
  sm.kind = OX_META_SYMINT;
  sm.sym = ox_graph_intern(g, "s0");
  ox_graph_set_meta(g, s, &sm);
  OxNodeId m = ox_graph_add_node(g, OX_OP_CALL_MODULE, "lin", "layers.0.lin",
                                 seq(g, OX_V_TUPLE, 1, ox_value_node(s)), ox_value_none());
  OxMeta scal = {0};
  scal.kind = OX_META_SCALAR;
  ox_graph_set_meta(g, m, &scal);
  OxNodeId e = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "e", "operator.getitem",
                                 seq(g, OX_V_TUPLE, 2, ox_value_node(f), ox_value_int(0)), ox_value_none());
  OxMeta none_inf = {0};
  none_inf.inferred = true;
  ox_graph_set_meta(g, e, &none_inf);
  OxMeta symnull = {0};
  symnull.kind = OX_META_SYMINT;
  OxNodeId q = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "q", "torch.sym_size", seq(g, OX_V_TUPLE, 1, ox_value_node(e)),
                                 ox_value_none());
  ox_graph_set_meta(g, q, &symnull);
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output",
                    seq(g, OX_V_TUPLE, 1, seq(g, OX_V_TUPLE, 3, ox_value_node(m), ox_value_node(q), ox_value_none())),
                    ox_value_none());
  /* subgraph owned by w, itself with a nested subgraph */
  OxGraph *sub = ox_graph_new();
  sub->name = ox_graph_intern(sub, "lowered graph 1");
  sub->sub_owner = ox_graph_intern(sub, "w");
  sub->src_line = 40;
  OxNodeId p = ox_graph_add_node(sub, OX_OP_PLACEHOLDER, "p", "p", ox_value_none(), ox_value_none());
  OxNodeId r = ox_graph_add_node(sub, OX_OP_CALL_FUNCTION, "relu", "torch.relu", seq(sub, OX_V_TUPLE, 1, ox_value_node(p)),
                                 ox_value_none());
  ox_graph_add_node(sub, OX_OP_OUTPUT, "output", "output", seq(sub, OX_V_TUPLE, 1, seq(sub, OX_V_LIST, 1, ox_value_node(r))),
                    ox_value_none());
  OxGraph *subsub = ox_graph_new();
  subsub->name = ox_graph_intern(subsub, "lowered graph 2");
  subsub->sub_owner = ox_graph_intern(subsub, "relu");
  ox_graph_add_node(subsub, OX_OP_PLACEHOLDER, "z", "z", ox_value_none(), ox_value_none());
  ox_graph_add_subgraph(sub, subsub);
  ox_graph_add_subgraph(g, sub);
  return g;
}

/* ------------------------------------------------------------------ tests */

static void test_exact_output(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "x", "x", ox_value_none(), ox_value_none());
  int64_t sh[2] = {8, 0}, st[2] = {16, 1};
  set_tensor(g, x, tmeta(g, OX_DT_F32, 2, sh, NULL, st, "cuda:0"));
  g->nodes[x].meta.t[0].shape[1].sym = ox_graph_intern(g, "s0");
  OxNodeId mul = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "mul", "torch.ops.aten.mul.Tensor",
                                   seq(g, OX_V_TUPLE, 2, ox_value_node(x), ox_value_float(1.0)),
                                   dict1(g, "dtype", ox_value_dtype(OX_DT_BF16)));
  g->nodes[mul].declared_users = 1;
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", seq(g, OX_V_TUPLE, 1, ox_value_node(mul)), ox_value_none());
  OxDoc *doc = ox_doc_new(OX_FMT_JSON);
  ox_doc_add_graph(doc, g);
  char *text = write_doc(doc);
  const char *want =
    "{\n"
    "  \"format\": \"optimus-fx\",\n"
    "  \"version\": 1,\n"
    "  \"graphs\": [\n"
    "    {\n"
    "      \"name\": \"graph\",\n"
    "      \"src_line\": 0,\n"
    "      \"nodes\": [\n"
    "        {\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\", \"args\": [], \"kwargs\": {}, "
    "\"meta\": {\"tensor\": {\"dtype\": \"f32\", \"shape\": [8, \"s0\"], \"stride\": [16, 1], \"device\": \"cuda:0\"}}},\n"
    "        {\"name\": \"mul\", \"op\": \"call_function\", \"target\": \"torch.ops.aten.mul.Tensor\", "
    "\"args\": [{\"node\": \"x\"}, 1.0], \"kwargs\": {\"dtype\": {\"dtype\": \"torch.bfloat16\"}}, \"declared_users\": 1},\n"
    "        {\"name\": \"output\", \"op\": \"output\", \"target\": \"output\", \"args\": [{\"node\": \"mul\"}], \"kwargs\": {}}\n"
    "      ],\n"
    "      \"subgraphs\": []\n"
    "    }\n"
    "  ]\n"
    "}\n";
  g_assert_cmpstr(text, ==, want);
  g_free(text);
  ox_doc_free(doc);
}

static void test_roundtrip_rich(void) {
  OxDoc *doc = ox_doc_new(OX_FMT_JSON);
  ox_doc_add_graph(doc, rich_graph());
  OxGraph *second = ox_graph_new();
  second->name = ox_graph_intern(second, "__compiled_fn_3");
  ox_graph_add_node(second, OX_OP_PLACEHOLDER, "only", "only", ox_value_none(), ox_value_none());
  ox_doc_add_graph(doc, second);
  OxDoc *empty_graph_doc = NULL;
  (void)empty_graph_doc;
  char *t1 = write_doc(doc);
  OxDoc *d1 = load_ok(t1);
  assert_doc_same(doc, d1, true);
  char *t2 = write_doc(d1);
  g_assert_cmpstr(t1, ==, t2); /* the writer is deterministic and the reader lossless */
  OxDoc *d2 = load_ok(t2);
  assert_doc_same(d1, d2, true);
  /* spot checks that the compare is not vacuous */
  const OxGraph *g = d2->graphs[0];
  OxNodeId f = ox_graph_find(g, "f");
  g_assert_cmpuint(f, !=, 0);
  const OxValue *floats = &g->nodes[f].args.u.items[1];
  g_assert_cmpint(floats->kind, ==, OX_V_LIST);
  g_assert_true(signbit(floats->u.items[3].u.f) && floats->u.items[3].u.f == 0.0);
  g_assert_true(isnan(floats->u.items[6].u.f));
  g_assert_cmpfloat(floats->u.items[7].u.f, ==, 5e-324);
  g_assert_cmpint(g->nodes[f].args.u.items[4].kind, ==, OX_V_DTYPE);
  g_assert_cmpstr(g->nodes[f].args.u.items[4].s, ==, "torch.float128");
  g_assert_cmpint(g->nodes[f].args.u.items[5].u.dtype, ==, OX_DT_F32);
  g_assert_cmpstr(g->nodes[f].args.u.items[5].s, ==, "torch.float");
  g_assert_cmpuint(g->nodes[f].n_provenance, ==, 2);
  g_assert_cmpuint(g->nodes[f].provenance[0], ==, 3);
  g_assert_true(g->nodes[f].meta.inferred);
  g_assert_cmpuint(g->n_subgraphs, ==, 1);
  g_assert_cmpstr(g->subgraphs[0]->sub_owner, ==, "w");
  g_assert_cmpuint(g->subgraphs[0]->n_subgraphs, ==, 1);
  g_assert_cmpstr(g->subgraphs[0]->subgraphs[0]->sub_owner, ==, "relu");
  /* and that a real difference is caught */
  GString *why = g_string_new(NULL);
  ((OxGraph *)g)->nodes[f].args.u.items[1].u.items[0].u.f = 1.0000000000000002;
  g_assert_false(doc_same(d1, d2, true, why));
  g_string_free(why, TRUE);
  g_free(t1);
  g_free(t2);
  ox_doc_free(doc);
  ox_doc_free(d1);
  ox_doc_free(d2);
}

/* Erased nodes are not written: ids are renumbered, everything else survives. */
static void test_roundtrip_erased(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "x", "x", ox_value_none(), ox_value_none());
  OxNodeId dead = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "dead", "torch.neg", seq(g, OX_V_TUPLE, 1, ox_value_node(x)),
                                    ox_value_none());
  OxNodeId r = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "r", "torch.relu", seq(g, OX_V_TUPLE, 1, ox_value_node(x)),
                                 ox_value_none());
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", seq(g, OX_V_TUPLE, 1, ox_value_node(r)), ox_value_none());
  g_assert_true(ox_graph_erase(g, dead));
  OxDoc *doc = ox_doc_new(OX_FMT_JSON);
  ox_doc_add_graph(doc, g);
  char *t = write_doc(doc);
  g_assert_null(strstr(t, "dead"));
  OxDoc *d1 = load_ok(t);
  assert_doc_same(doc, d1, false);
  g_assert_cmpuint(ox_graph_find(d1->graphs[0], "r"), ==, 2);
  g_free(t);
  ox_doc_free(doc);
  ox_doc_free(d1);
}

/* References may point forward; users come out in program order. */
static void test_forward_refs(void) {
  const char *text =
    "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"nodes\": [\n"
    "  {\"name\": \"b\", \"op\": \"call_function\", \"target\": \"torch.neg\", \"args\": [{\"node\": \"a\"}]},\n"
    "  {\"name\": \"a\", \"op\": \"placeholder\", \"target\": \"a\"},\n"
    "  {\"name\": \"c\", \"op\": \"call_function\", \"target\": \"operator.add\", \"args\": [{\"node\": \"a\"}, {\"node\": \"b\"}]}\n"
    "]}]}";
  OxDoc *d = load_ok(text);
  const OxGraph *g = d->graphs[0];
  g_assert_cmpstr(g->name, ==, "graph");
  /* the same with a UTF-8 byte order mark in front */
  char *bom = g_strconcat("\xef\xbb\xbf", text, NULL);
  OxDoc *d_bom = load_ok(bom);
  assert_doc_same(d, d_bom, true);
  ox_doc_free(d_bom);
  OxDiagList bd;
  char *bom_bad = g_strconcat("\xef\xbb\xbf{\"format\": 1}", NULL);
  load_bad(bom_bad, strlen(bom_bad), NULL, &bd);
  g_assert_cmpuint(first_error(&bd)->line, ==, 1);
  g_assert_cmpuint(first_error(&bd)->col, ==, 15); /* byte column, counting the 3 BOM bytes */
  ox_diags_clear(&bd);
  g_free(bom_bad);
  g_free(bom);
  OxNodeId a = ox_graph_find(g, "a"), b = ox_graph_find(g, "b"), c = ox_graph_find(g, "c");
  g_assert_cmpuint(a, ==, 2);
  g_assert_cmpuint(g->nodes[b].args.u.items[0].u.node, ==, a);
  g_assert_cmpuint(g->nodes[a].n_users, ==, 2);
  g_assert_cmpuint(g->nodes[a].users[0], ==, b);
  g_assert_cmpuint(g->nodes[a].users[1], ==, c);
  g_assert_cmpint(g->nodes[a].declared_users, ==, -1);
  g_assert_cmpint(g->nodes[a].args.kind, ==, OX_V_TUPLE);
  g_assert_cmpint(g->nodes[a].kwargs.kind, ==, OX_V_DICT);
  ox_doc_free(d);
}

typedef struct {
  const char *text;
  const char *msg;   /* substring of the first error */
  uint32_t line, col;/* expected location (0 = do not check) */
} BadCase;

#define HDR "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"nodes\": [\n"
#define X_NODE "{\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\"}"

static const BadCase bad_cases[] = {
  {"", "unexpected end of input", 1, 1},
  {"{\n  \"format\": \"optimus-fx\",\n  \"version\": 1,\n  \"graphs\": [ }\n}", "JSON syntax error", 4, 15},
  {"{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [", "unexpected end of input", 1, 51},
  {"{\"format\": \"optimus-fx\"} trailing", "JSON syntax error", 1, 26},
  {"{\"a\": 1,}", "JSON syntax error", 1, 9},
  {"\x01\x02\xff garbage", "JSON syntax error", 1, 1},
  {"[1, 2]", "must be a JSON object", 1, 1},
  {"{\"version\": 1, \"graphs\": []}", "no \"format\" key", 1, 1},
  {"{\"format\": \"other\", \"version\": 1, \"graphs\": []}", "format must be \"optimus-fx\"", 1, 12},
  {"{\"format\": \"optimus-fx\", \"graphs\": []}", "no \"version\"", 0, 0},
  {"{\"format\": \"optimus-fx\",\n \"version\": 2, \"graphs\": []}", "unsupported version 2", 2, 13},
  {"{\"format\": \"optimus-fx\", \"version\": \"1\", \"graphs\": []}", "version must be an integer", 0, 0},
  {"{\"format\": \"optimus-fx\", \"version\": 1}", "no \"graphs\"", 0, 0},
  {"{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": []}", "no graph", 0, 0},
  {"{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": {}}", "graphs must be an array", 0, 0},
  {"{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{}]}", "graphs[0]: graph has no \"nodes\"", 0, 0},
  {HDR X_NODE ",\n {\"name\": \"add\", \"op\": \"call_fn\", \"target\": \"t\"}]}]}",
   "graphs[0].nodes[1] (name 'add'): op: unknown op 'call_fn'", 3, 24},
  {HDR "{\"op\": \"placeholder\", \"target\": \"x\"}]}]}", "graphs[0].nodes[0]: node has no \"name\"", 2, 1},
  {HDR "{\"name\": \"\", \"op\": \"placeholder\", \"target\": \"x\"}]}]}", "name must not be empty", 2, 10},
  {HDR "{\"name\": 3, \"op\": \"placeholder\", \"target\": \"x\"}]}]}", "name must be a string, not an integer", 2, 10},
  {HDR "{\"name\": \"x\", \"target\": \"x\"}]}]}", "node has no \"op\"", 0, 0},
  {HDR "{\"name\": \"x\", \"op\": \"placeholder\"}]}]}", "node has no \"target\"", 0, 0},
  {HDR X_NODE ",\n" X_NODE "]}]}", "graphs[0].nodes[1] (name 'x'): name: duplicate node name 'x'", 3, 10},
  {HDR X_NODE ",\n{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [1, [{\"node\": \"zz\"}]]}]}]}",
   "graphs[0].nodes[1] (name 'y'): args[1][0].node: reference to unknown node 'zz'", 3, 75},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": {}}]}]}", "args must be an array", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"kwargs\": []}]}]}", "kwargs must be an object", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [{\"tuple\": [1], \"x\": 2}]}]}]}",
   "exactly one key", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [{\"complex\": [1, 2]}]}]}]}",
   "unknown value tag 'complex'", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [{\"float\": \"Infinity\"}]}]}]}",
   "float must be \"inf\", \"-inf\" or \"nan\"", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [NaN]}]}]}", "must be finite", 2, 62},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [1e999]}]}]}", "must be finite", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [9223372036854775808]}]}]}",
   "out of the 64-bit integer range", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [-9223372036854775809]}]}]}",
   "out of the 64-bit integer range", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [\"a\\u0000b\"]}]}]}",
   "contains a NUL character", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [{\"slice\": [1, 2]}]}]}]}",
   "a slice must have 3 items", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [{\"dict\": [[1, 2]]}]}]}]}",
   "a dict key must be a string", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [{\"dict\": [[\"k\"]]}]}]}]}",
   "[key, value] pair", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [{\"ellipsis\": false}]}]}]}",
   "ellipsis must be true", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [{\"sym\": \"\"}]}]}]}",
   "sym must not be empty", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [{\"node\": null}]}]}]}",
   "a node reference must be a string, not null", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"placeholder\", \"target\": \"y\", \"meta\": {\"tensor\": {\"dtype\": \"f33\"}}}]}]}",
   "graphs[0].nodes[0] (name 'y'): meta.tensor.dtype: unknown dtype abbreviation 'f33'", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"placeholder\", \"target\": \"y\", \"meta\": {\"tensor\": {\"shape\": [1]}}}]}]}",
   "needs a \"dtype\"", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"placeholder\", \"target\": \"y\", \"meta\": {\"tensor\": {\"dtype\": \"f32\", \"stride\": [1]}}}]}]}",
   "stride given without a shape", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"placeholder\", \"target\": \"y\", \"meta\": {\"tensor\": {\"dtype\": \"f32\", \"shape\": [2, 3], \"stride\": [1]}}}]}]}",
   "stride has 1 entries but the shape has 2", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"placeholder\", \"target\": \"y\", \"meta\": {\"tensor\": {\"dtype\": \"f32\", \"shape\": [2.5]}}}]}]}",
   "meta.tensor.shape[0]: a dimension must be an integer or a string", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"placeholder\", \"target\": \"y\", \"meta\": {\"tensor\": {\"dtype\": \"f32\"}, \"scalar\": true}}]}]}",
   "at most one of", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"placeholder\", \"target\": \"y\", \"meta\": {\"scalar\": 1}}]}]}", "scalar must be true", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"placeholder\", \"target\": \"y\", \"meta\": {\"inferred\": \"yes\"}}]}]}",
   "inferred must be a boolean", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"placeholder\", \"target\": \"y\", \"declared_users\": -2}]}]}",
   "declared_users must be between -1 and", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"placeholder\", \"target\": \"y\", \"flags\": 65536}]}]}", "flags must be between", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"placeholder\", \"target\": \"y\", \"provenance\": [0]}]}]}",
   "provenance[0]: a provenance id must be between 1", 0, 0},
  {HDR "{\"name\": \"y\", \"op\": \"placeholder\", \"target\": \"y\", \"stack_trace\": 5}]}]}",
   "stack_trace must be a string", 0, 0},
  {HDR X_NODE "], \"subgraphs\": [{\"owner\": \"x\", \"nodes\": [" X_NODE ", {\"name\": \"q\", \"op\": \"output\", \"target\": \"output\", \"args\": [{\"node\": \"nope\"}]}]}]}]}",
   "graphs[0].subgraphs[0].nodes[1] (name 'q'): args[0].node: reference to unknown node 'nope'", 0, 0},
  {HDR X_NODE "]}, 5]}", "graphs[1]: a graph must be an object", 0, 0},
  {HDR "7]}]}", "graphs[0].nodes[0]: a node must be an object, not an integer", 2, 1},
};

static void test_bad_inputs(void) {
  int bad = 0;
  for (size_t i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
    const BadCase *c = &bad_cases[i];
    OxDiagList d;
    load_bad(c->text, strlen(c->text), NULL, &d);
    const OxDiag *e = first_error(&d);
    g_assert_nonnull(e);
    if (!strstr(e->msg, c->msg) || (c->line && (e->line != c->line || e->col != c->col))) {
      ox_diags_print(&d, stderr);
      g_printerr("case %zu: got %u:%u '%s', want %u:%u containing '%s'\n", i, e->line, e->col, e->msg, c->line,
                 c->col, c->msg);
      bad++;
    }
    ox_diags_clear(&d);
  }
  g_assert_cmpint(bad, ==, 0);
}

/* One bad node gives one error, not one more per reference to it. */
static void test_no_cascade(void) {
  const char *t = HDR X_NODE ",\n{\"name\": \"a\", \"op\": \"bogus\", \"target\": \"f\", \"args\": [{\"node\": \"x\"}]},\n"
                  "{\"name\": \"b\", \"op\": \"call_function\", \"target\": \"g\", \"args\": [{\"node\": \"a\"}, {\"node\": \"a\"}]}]}]}";
  OxDiagList d;
  load_bad(t, strlen(t), NULL, &d);
  g_assert_cmpuint(d.n_errors, ==, 1);
  g_assert_nonnull(strstr(first_error(&d)->msg, "unknown op 'bogus'"));
  g_assert_cmpuint(first_error(&d)->line, ==, 3);
  ox_diags_clear(&d);
}

static void test_version_message(void) {
  OxDiagList d;
  const char *t = "{\"format\": \"optimus-fx\", \"version\": 7, \"graphs\": []}";
  load_bad(t, strlen(t), NULL, &d);
  char *s = ox_diag_format(&d, first_error(&d));
  g_assert_nonnull(strstr(s, "bad.json:1:37: error: version: unsupported version 7"));
  g_free(s);
  ox_diags_clear(&d);
}

/* Unknown keys are warnings (forward compatible), errors under strict. */
static void test_unknown_keys(void) {
  const char *t = HDR "{\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\", \"colour\": \"red\"}]}], \"extra\": 1}";
  OxDiagList d;
  ox_diags_init(&d, "w.json");
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_buffer(t, strlen(t), OX_FMT_JSON, NULL, &doc, &d), ==, 0);
  g_assert_nonnull(doc);
  g_assert_cmpuint(d.n_warnings, ==, 2);
  g_assert_cmpuint(d.n_errors, ==, 0);
  gboolean saw_colour = FALSE;
  for (size_t i = 0; i < d.n; i++)
    if (strstr(d.items[i].msg, "graphs[0].nodes[0] (name 'x'): colour: unknown key 'colour' ignored")) {
      saw_colour = TRUE;
      g_assert_cmpuint(d.items[i].line, ==, 2);
      g_assert_cmpuint(d.items[i].col, ==, 61);
    }
  g_assert_true(saw_colour);
  ox_doc_free(doc);
  ox_diags_clear(&d);
  OxLoadOptions strict = {.strict = true};
  load_bad(t, strlen(t), &strict, &d);
  ox_diags_clear(&d);
}

static void test_depth_limit(void) {
  GString *s = g_string_new(HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [");
  for (int i = 0; i < 100000; i++) g_string_append_c(s, '[');
  OxDiagList d;
  load_bad(s->str, s->len, NULL, &d);
  g_assert_nonnull(strstr(first_error(&d)->msg, "nesting deeper than the limit of 256"));
  g_assert_cmpuint(first_error(&d)->line, ==, 2);
  ox_diags_clear(&d);
  g_string_free(s, TRUE);
  /* a small explicit limit applies too */
  const char *t = HDR "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [[[[1]]]]}]}]}";
  OxLoadOptions opt = {.max_depth = 6};
  load_bad(t, strlen(t), &opt, &d);
  g_assert_nonnull(strstr(first_error(&d)->msg, "nesting deeper than the limit of 6"));
  ox_diags_clear(&d);
  opt.max_depth = 12;
  OxDoc *doc = NULL;
  ox_diags_init(&d, "x");
  g_assert_cmpint(ox_load_buffer(t, strlen(t), OX_FMT_JSON, &opt, &doc, &d), ==, 0);
  ox_doc_free(doc);
  ox_diags_clear(&d);
}

/* Every prefix and many byte flips of a valid document: never crash, and a failure
 * always comes with an error. */
static void test_damaged_input(void) {
  OxDoc *doc = ox_doc_new(OX_FMT_JSON);
  ox_doc_add_graph(doc, rich_graph());
  char *text = write_doc(doc);
  size_t len = strlen(text);
  unsigned ok = 0, failed = 0, tried = 0;
  /* every cut near the start and the end, a sample in between (parsing is linear, the
   * loop quadratic: sanitizer builds would crawl) */
  for (size_t cut = 0; cut < len; cut += (cut < 150 || cut + 150 > len) ? 1 : 29) {
    tried++;
    char *t = g_strndup(text, cut);
    OxDiagList d;
    ox_diags_init(&d, "cut.json");
    OxDoc *out = NULL;
    int rc = ox_load_buffer(t, cut, OX_FMT_JSON, NULL, &out, &d);
    if (rc == 0) ok++;
    else {
      g_assert_cmpuint(d.n_errors, >, 0);
      failed++;
    }
    ox_doc_free(out);
    ox_diags_clear(&d);
    g_free(t);
  }
  g_assert_cmpuint(ok, ==, 1); /* only the prefix lacking just the final newline is complete */
  GRand *rnd = g_rand_new_with_seed(1234);
  const char flips[] = "{}[]\",:0-e.tn\\ x\x00\xff";
  for (int k = 0; k < 600; k++) {
    char *t = g_memdup2(text, len + 1);
    int nflip = g_rand_int_range(rnd, 1, 4);
    for (int j = 0; j < nflip; j++) t[g_rand_int_range(rnd, 0, (gint32)len)] = flips[g_rand_int_range(rnd, 0, sizeof flips - 1)];
    OxDiagList d;
    ox_diags_init(&d, "flip.json");
    OxDoc *out = NULL;
    int rc = ox_load_buffer(t, len, OX_FMT_JSON, NULL, &out, &d);
    if (rc == 0) {
      /* whatever loaded must be consistent */
      for (uint32_t gi = 0; gi < out->n_graphs; gi++) {
        OxDiagList v;
        ox_diags_init(&v, "v");
        /* forward references are allowed by the format, so check only users/names, not order */
        ox_graph_verify(out->graphs[gi], false, &v);
        for (size_t i = 0; i < v.n; i++)
          g_assert_null(strstr(v.items[i].msg, "users of"));
        ox_diags_clear(&v);
      }
    } else {
      g_assert_cmpuint(d.n_errors, >, 0);
    }
    ox_doc_free(out);
    ox_diags_clear(&d);
    g_free(t);
  }
  g_rand_free(rnd);
  g_assert_cmpuint(failed, ==, tried - 1);
  g_free(text);
  ox_doc_free(doc);
}

/* ------------------------------------------------------------------ files in the tree */

static char *source_path(const char *rel) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  if (!root || !*root) return NULL;
  return g_build_filename(root, rel, NULL);
}

/* The complete example in docs/format-json.md loads, and saving it loses nothing. */
static void test_doc_example(void) {
  char *path = source_path("docs/format-json.md");
  char *md = NULL;
  if (!path || !g_file_get_contents(path, &md, NULL, NULL)) {
    g_test_skip("docs/format-json.md not found (OPTIMUS_SOURCE_ROOT unset?)");
    g_free(path);
    return;
  }
  const char *sec = strstr(md, "## Complete example");
  g_assert_nonnull(sec);
  const char *start = strstr(sec, "```json\n");
  g_assert_nonnull(start);
  start += 8;
  const char *end = strstr(start, "```");
  g_assert_nonnull(end);
  char *json = g_strndup(start, (gsize)(end - start));
  OxDoc *d = load_ok(json);
  g_assert_cmpuint(d->n_graphs, ==, 1);
  g_assert_cmpuint(d->graphs[0]->n_live, ==, 7);
  g_assert_cmpuint(d->graphs[0]->n_subgraphs, ==, 1);
  char *t = write_doc(d);
  OxDoc *d2 = load_ok(t);
  assert_doc_same(d, d2, true);
  g_free(t);
  ox_doc_free(d);
  ox_doc_free(d2);
  g_free(json);
  g_free(md);
  g_free(path);
}

/* Golden file: the rich graph's JSON, byte for byte (OPTIMUS_UPDATE_GOLDEN=1 rewrites it). */
static void test_golden(void) {
  char *path = source_path("tests/data/json/rich.json");
  if (!path) {
    g_test_skip("OPTIMUS_SOURCE_ROOT unset: cannot find tests/data/json/rich.json");
    return;
  }
  OxDoc *doc = ox_doc_new(OX_FMT_JSON);
  ox_doc_add_graph(doc, rich_graph());
  char *text = write_doc(doc);
  if (g_getenv("OPTIMUS_UPDATE_GOLDEN")) g_assert_true(g_file_set_contents(path, text, -1, NULL));
  char *want = NULL;
  g_assert_true(g_file_get_contents(path, &want, NULL, NULL));
  if (strcmp(want, text) != 0) {
    g_printerr("--- want (%s)\n%s--- got\n%s", path, want, text);
    g_test_fail_printf("JSON output differs from %s", path);
  }
  /* and the golden file loads back to the same document */
  OxDoc *d1 = load_ok(want);
  assert_doc_same(doc, d1, true);
  ox_doc_free(d1);
  g_free(want);
  g_free(text);
  ox_doc_free(doc);
  g_free(path);
}

/* ------------------------------------------------------------------ corpus */


static void test_corpus_roundtrip(gconstpointer data) {
  int nn = GPOINTER_TO_INT(data);
  char *path = NULL;
  OxDoc *src = test_corpus_load(nn, "its JSON round trip", &path);
  if (!src) {
    g_free(path);
    return;
  }
  char *t1 = write_doc(src);
  OxDoc *d1 = load_ok(t1);
  assert_doc_same(src, d1, false); /* the loaders may leave tombstones; names carry the comparison */
  char *t2 = write_doc(d1);
  g_assert_cmpstr(t1, ==, t2);
  OxDoc *d2 = load_ok(t2);
  assert_doc_same(d1, d2, true);
  g_free(t1);
  g_free(t2);
  ox_doc_free(src);
  ox_doc_free(d1);
  ox_doc_free(d2);
  g_free(path);
}


/* Issue 21: a tensor meta with sizes no tensor can have: a located warning (error under
 * --strict) and no meta on the node. */
static void test_absurd_dims(void) {
  static const char fx[] = "graph():\n"
                           "    %x : Tensor \"f32[4]\" = placeholder[target=x]\n"
                           "    %relu : Tensor \"f32[3]\" = call_function[target=torch.relu](args = (%x,), kwargs = {})\n"
                           "    return relu\n";
  OxDiagList d;
  ox_diags_init(&d, "fx");
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_buffer(fx, strlen(fx), OX_FMT_FX_TEXT, NULL, &doc, &d), ==, 0);
  OxBuf b;
  ox_buf_init(&b);
  ox_write_json(doc, &b);
  ox_doc_free(doc);
  ox_diags_clear(&d);
  static const struct {
    const char *shape, *why;
  } cases[] = {
      {"[-5]", "tensor meta ignored: size -5 (dim 0) is negative"},
      {"[\"1e23\"]", "tensor meta ignored: size 1e23 (dim 0) is not an integer"},
      {"[9223372036854775807]", "tensor meta ignored: size 9223372036854775807 (dim 0) makes more than 2^50 elements"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const char *at = strstr(b.data, "\"shape\": [4]");
    g_assert_nonnull(at);
    GString *t = g_string_new_len(b.data, at - b.data);
    g_string_append_printf(t, "\"shape\": %s%s", cases[i].shape, at + strlen("\"shape\": [4]"));
    ox_diags_init(&d, "abs.json");
    g_assert_cmpint(ox_load_buffer(t->str, t->len, OX_FMT_JSON, NULL, &doc, &d), ==, 0);
    g_assert_cmpuint(d.n_warnings, ==, 1);
    g_assert_nonnull(strstr(d.items[0].msg, cases[i].why));
    g_assert_cmpuint(d.items[0].line, >, 0);
    g_assert_cmpint(doc->graphs[0]->nodes[ox_graph_find(doc->graphs[0], "x")].meta.kind, ==, OX_META_NONE);
    ox_doc_free(doc);
    ox_diags_clear(&d);
    OxLoadOptions strict = {.strict = true};
    load_bad(t->str, t->len, &strict, &d);
    ox_diags_clear(&d);
    g_string_free(t, TRUE);
  }
  ox_buf_free(&b);
}


/* Found by fuzz-json (issue 21): references may point forward, but the graph comes out in
 * topological order, and a node that depends on itself is an error: the reader kept file order,
 * so a loaded graph could use a node before its definition, or itself. */
static void test_forward_order_cycles(void) {
#define NODE_X "{\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\", \"args\": [], \"kwargs\": {}}"
#define NODE_OUT "{\"name\": \"output\", \"op\": \"output\", \"target\": \"output\", \"args\": [{\"node\": \"r\"}], \"kwargs\": {}}"
#define DOC(nodes) "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"name\": \"g\", \"nodes\": [\n" nodes "\n]}]}"
  static const char fwd[] = DOC("{\"name\": \"r\", \"op\": \"call_function\", \"target\": \"torch.relu\", \"args\": [{\"node\": \"x\"}], \"kwargs\": {}},\n" NODE_X ",\n" NODE_OUT);
  static const char self[] = DOC(NODE_X ",\n{\"name\": \"r\", \"op\": \"call_function\", \"target\": \"operator.add\", \"args\": [{\"node\": \"x\"}, {\"node\": \"r\"}], \"kwargs\": {}},\n" NODE_OUT);
  static const char cycle[] = DOC(NODE_X ",\n{\"name\": \"r\", \"op\": \"call_function\", \"target\": \"operator.add\", \"args\": [{\"node\": \"x\"}, {\"node\": \"s\"}], \"kwargs\": {}},\n"
                                  "{\"name\": \"s\", \"op\": \"call_function\", \"target\": \"torch.relu\", \"args\": [{\"node\": \"r\"}], \"kwargs\": {}},\n" NODE_OUT);
  OxDiagList d;
  ox_diags_init(&d, "fwd.json");
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_buffer(fwd, strlen(fwd), OX_FMT_JSON, NULL, &doc, &d), ==, 0);
  g_assert_cmpuint(d.n, ==, 0); /* the format allows it */
  OxGraph *g = doc->graphs[0];
  g_assert_cmpuint(ox_graph_find(g, "r"), ==, 1); /* ids stay in array order */
  g_assert_cmpstr(g->nodes[g->head].name, ==, "x");
  g_assert_cmpint(ox_graph_verify(g, true, &d), ==, 0);
  ox_doc_free(doc);
  ox_diags_clear(&d);
  load_bad(self, strlen(self), NULL, &d);
  g_assert_nonnull(strstr(first_error(&d)->msg, "r depends on itself"));
  g_assert_cmpuint(first_error(&d)->line, ==, 3);
  ox_diags_clear(&d);
  load_bad(cycle, strlen(cycle), NULL, &d);
  g_assert_nonnull(strstr(first_error(&d)->msg, "depends on itself through its inputs (a cycle)"));
  ox_diags_clear(&d);
#undef NODE_X
#undef NODE_OUT
#undef DOC
}

/* One read of text with streaming on or off: status, every diagnostic as text, the document
 * written again (when it loaded). */
static char *read_summary(const char *text, size_t len, bool stream, const OxLoadOptions *opt) {
  ox_json_set_streaming(stream);
  OxDiagList d;
  ox_diags_init(&d, "doc.json");
  OxDoc *doc = NULL;
  int rc = ox_load_buffer(text, len, OX_FMT_JSON, opt, &doc, &d);
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "rc=%d\n", rc);
  for (size_t i = 0; i < d.n; i++) {
    char *m = ox_diag_format(&d, &d.items[i]);
    g_string_append_printf(s, "%s [node %s]\n", m, d.items[i].node ? d.items[i].node : "-");
    free(m);
  }
  /* data the fast read kept as text is written back as it came (the tree read's values are
   * written with %.17g): compare values */
  if (rc == 0 && doc->record) g_assert_true(ox_record_materialize(doc->record));
  if (rc == 0) {
    char *w = write_doc(doc);
    g_string_append(s, w);
    g_free(w);
  }
  ox_doc_free(doc);
  ox_diags_clear(&d);
  ox_json_set_streaming(true);
  return g_string_free(s, FALSE);
}

static void assert_same_reads_opt(const char *what, const char *text, size_t len, const OxLoadOptions *opt,
                                  unsigned *streamed) {
  unsigned long before = ox_json_streamed_reads();
  char *a = read_summary(text, len, true, opt);
  if (ox_json_streamed_reads() != before) (*streamed)++;
  char *b = read_summary(text, len, false, opt);
  if (strcmp(a, b) != 0) {
    g_printerr("%s: the streamed read differs from the tree read\n--- streamed\n%.2000s\n--- tree\n%.2000s\n", what, a,
               b);
    g_test_fail();
  }
  g_free(a);
  g_free(b);
}

static void assert_same_reads(const char *what, const char *text, size_t len, unsigned *streamed) {
  assert_same_reads_opt(what, text, len, NULL, streamed);
}

/* The text of a small document whose node "v" has args [VALUE] (and kwargs {KEY: 1} when key is
 * given); *len its length (value may hold NUL bytes: vlen). */
static char *value_doc(const char *value, size_t vlen, const char *key, size_t *len) {
  GString *s = g_string_new("{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"name\": \"g\", \"nodes\": [\n"
                            "{\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\"},\n"
                            "{\"name\": \"v\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [");
  g_string_append_len(s, value, (gssize)vlen);
  g_string_append_printf(s, "], \"kwargs\": {%s%s}},\n", key ? key : "", key ? ": 1" : "");
  g_string_append(s, "{\"name\": \"output\", \"op\": \"output\", \"target\": \"output\", \"args\": [{\"node\": \"v\"}]}]}]}\n");
  *len = s->len;
  return g_string_free(s, FALSE);
}

/* Values at the edges of the fast read's tokenizer (engine/json/ox_json_lex.c): both reads agree
 * on every one; those it takes (numbers json-c reads the same way, escapes, UTF-8) are read fast,
 * the others (out of range, non-standard, lone surrogates, NUL, invalid UTF-8) fall back. */
static void test_streamed_values(void) {
  unsigned before;
  static const char *const fast[] = {
    "-0", "0", "1", "1.0", "-0.0", "0e0", "-0e0", "1E5", "1e+5", "1e-5", "1.5e-7", "2.5E-3", "0.1",
    "0.09999999999999998", "1e308", "-1e308", "1.7976931348623157e308", "1e-320", "4.9e-324", "1e-400",
    "9223372036854775807", "-9223372036854775808", "-9223372036854775807", "123456789012345678",
    "100000000000000000000.5", "3.141592653589793238462643383279",
    "\"\"", "\"a\\nb\\tc\\\"d\\\\e\\/f\\bg\\fh\\ri\"", "\"\\u0041\\u00e9\\u20ac\\uffff\"",
    "\"\\ud83d\\ude00 and \\uD83D\\uDE00\"", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"", "\"\\u0001\\u001f\"",
    "true", "false", "null", "[]", "[[], [[1]], {\"tuple\": []}]", "{\"dtype\": \"torch.float\"}",
    "{\"dict\": [[\"a\", 1], [\"b\", 2], [\"a\", 3]]}", "{\"slice\": [null, 4, -1]}", "{\"raw\": \"\"}",
    "{\"float\": \"-inf\"}", "{\"node\": \"x\"}", "{\"node\": \"\\u0078\"}",
  };
  static const char *const slow[] = {
    "9223372036854775808", "-9223372036854775809", "18446744073709551616", "99999999999999999999999",
    "1e309", "-1e400", "NaN", "Infinity", "-Infinity", "-01", "01", "1.", ".5", "+1", "1e", "-", "0x10",
    "\"\\ud83d\"", "\"\\ude00x\"", "\"\\ud83d\\u0041\"", "\"a\\u0000b\"", "\"\\q\"", "\"\\U0041\"",
    "\"\\u00g0\"", "\"a\tb\"", "\"a\nb\"", "\"\xff\"", "\"\xc0\x80\"", "\"\xed\xa0\x80\"", "\"\xe2\x82\"",
    "\"\xf4\x90\x80\x80\"", "\"\xe0\x80\xaf\"", "'a'", "True", "nul", "{}", "{\"node\": \"y\"}",
    "{\"node\": \"v\"}", "{\"tuple\": [], \"raw\": \"\"}", "{\"sym\": \"\"}", "{\"slice\": [1]}", "{\"color\": 1}",
    "{\"float\": \"Inf\"}", "{\"ellipsis\": false}", "{\"dtype\": \"\"}", "[1,]", "[1 2]", "\"abc", "[",
  };
  unsigned streamed = 0;
  for (size_t i = 0; i < G_N_ELEMENTS(fast); i++) {
    size_t len;
    char *t = value_doc(fast[i], strlen(fast[i]), NULL, &len);
    unsigned before = streamed;
    assert_same_reads(fast[i], t, len, &streamed);
    if (streamed == before) {
      g_printerr("value %s: not read fast\n", fast[i]);
      g_test_fail();
    }
    g_free(t);
  }
  for (size_t i = 0; i < G_N_ELEMENTS(slow); i++) {
    size_t len;
    char *t = value_doc(slow[i], strlen(slow[i]), NULL, &len);
    unsigned before = streamed;
    assert_same_reads(slow[i], t, len, &streamed);
    if (streamed != before) {
      g_printerr("value %s: read fast\n", slow[i]);
      g_test_fail();
    }
    g_free(t);
  }
  /* documents with something the tree read reports or decides: never read fast */
#define GR(nodes) "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"name\": \"g\", \"nodes\": [" nodes "]}]}"
#define PX "{\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\""
#define MT(m) GR(PX ", \"meta\": " m "}")
  static const char *const docs[] = {
    GR(PX "}, " PX "}"),                                         /* duplicate name */
    GR("{\"name\": \"x\", \"target\": \"x\"}"),               /* no op */
    GR("{\"name\": \"x\", \"op\": \"call_fn\", \"target\": \"x\"}"),
    GR("{\"name\": \"x\", \"op\": \"placeholder\"}"),         /* no target */
    GR("{\"name\": \"\", \"op\": \"placeholder\", \"target\": \"x\"}"),
    GR("{\"op\": \"placeholder\", \"target\": \"x\"}"),
    GR(PX ", \"name\": \"y\"}"),                               /* repeated node key */
    GR(PX ", \"args\": {}}"), GR(PX ", \"kwargs\": []}"), GR(PX ", \"meta\": 1}"),
    GR(PX ", \"declared_users\": -2}"), GR(PX ", \"declared_users\": 2147483648}"), GR(PX ", \"flags\": 65536}"),
    GR(PX ", \"src_line\": 4294967296}"), GR(PX ", \"src_line\": 1.0}"), GR(PX ", \"provenance\": [0]}"),
    GR(PX ", \"provenance\": [4294967296]}"), GR(PX ", \"type_ann\": 3}"), GR(PX ", \"stack_trace\": \"a\\u0000\"}"),
    MT("{\"tensor\": {\"dtype\": \"f33\"}}"), MT("{\"tensor\": {\"shape\": [1]}}"),
    MT("{\"tensor\": {\"dtype\": \"f32\", \"stride\": [1]}}"),
    MT("{\"tensor\": {\"dtype\": \"f32\", \"shape\": [2, 3], \"stride\": [1]}}"),
    MT("{\"tensor\": {\"dtype\": \"f32\", \"shape\": [-5]}}"),
    MT("{\"tensor\": {\"dtype\": \"f32\", \"shape\": [4611686018427387904, 4]}}"),
    MT("{\"tensor\": {\"dtype\": \"f32\", \"shape\": [\"\"]}}"),
    MT("{\"tensor\": {\"dtype\": \"f32\", \"shape\": [1.5]}}"),
    MT("{\"tensor\": {\"dtype\": \"f32\", \"colour\": 1}}"), MT("{\"tensor\": {\"dtype\": \"f32\"}, \"scalar\": true}"),
    MT("{\"scalar\": false}"), MT("{\"symint\": 1}"), MT("{\"inferred\": 1}"), MT("{\"tuple\": [1]}"),
    MT("{\"tensor\": {\"dtype\": \"f32\", \"dtype\": \"f16\"}}"),
    "{\"format\": \"optimus-fx\", \"version\": 2, \"graphs\": [{\"nodes\": []}]}",
    "{\"format\": \"optimus\", \"version\": 1, \"graphs\": [{\"nodes\": []}]}",
    "{\"format\": \"optimus-fx\", \"graphs\": [{\"nodes\": []}]}",
    "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": []}",
    "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"name\": \"g\"}]}",
    "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"nodes\": {}}]}",
    "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"nodes\": [], \"subgraphs\": [1]}]}",
    "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"nodes\": [], \"subgraphs\": [{\"nodes\": ["
      "{\"name\": \"r\", \"op\": \"call_function\", \"target\": \"f\", \"args\": [{\"node\": \"p\"}]},"
      "{\"name\": \"p\", \"op\": \"placeholder\", \"target\": \"p\"}]}]}]}",
    "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"nodes\": []}], \"record\": {\"x\": 1}}",
    "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"nodes\": []}], \"record\": 3}",
    "[]", "3", "\"optimus-fx\"", "",
  };
#undef GR
#undef PX
#undef MT
  for (size_t i = 0; i < G_N_ELEMENTS(docs); i++) {
    unsigned before = streamed;
    assert_same_reads(docs[i], docs[i], strlen(docs[i]), &streamed);
    if (streamed != before) {
      g_printerr("document %s: read fast\n", docs[i]);
      g_test_fail();
    }
  }
  /* kwargs keys: escaped, repeated (json-c keeps one: the tree read decides), NUL */
  static const char *const keys[] = {"\"\\u0061\"", "\"a\": 2, \"a\"", "\"a\\u0000b\"", "\"\"", "\"x\\ty\""};
  for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
    size_t len;
    char *t = value_doc("1", 1, keys[i], &len);
    assert_same_reads(keys[i], t, len, &streamed);
    g_free(t);
  }
  /* NUL bytes in the text: in a string, between tokens, at the end */
  static const char nul_str[] = "\"a\0b\"", nul_ws[] = "1,\0 2";
  size_t len;
  char *t = value_doc(nul_str, sizeof nul_str - 1, NULL, &len);
  assert_same_reads("NUL in a string", t, len, &streamed);
  g_free(t);
  t = value_doc(nul_ws, sizeof nul_ws - 1, NULL, &len);
  assert_same_reads("NUL between tokens", t, len, &streamed);
  t[len - 1] = 0; /* the final newline */
  assert_same_reads("NUL at the end", t, len, &streamed);
  g_free(t);
  /* deep nesting around the default limit (256 containers; the node's args are the 6th) and
   * around small explicit limits */
  for (int depth = 240; depth <= 262; depth++) {
    GString *v = g_string_new(NULL);
    for (int k = 0; k < depth; k++) g_string_append_c(v, '[');
    g_string_append_c(v, '7');
    for (int k = 0; k < depth; k++) g_string_append_c(v, ']');
    t = value_doc(v->str, v->len, NULL, &len);
    assert_same_reads("deep", t, len, &streamed);
    g_free(t);
    g_string_free(v, TRUE);
  }
  for (uint32_t lim = 1; lim <= 12; lim++) {
    OxLoadOptions opt = {.max_depth = lim};
    t = value_doc("[[1]]", 5, NULL, &len);
    assert_same_reads_opt("limit", t, len, &opt, &streamed);
    g_free(t);
  }
  /* the same meta text again (read once, then taken as it is) in the same graph, in a subgraph
   * (deeper: not taken from the outer graph) and as a different meta, under every small limit */
  static const char metas[] =
    "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"nodes\": ["
    "{\"name\": \"a\", \"op\": \"placeholder\", \"target\": \"a\", \"meta\": {\"tensor\": {\"dtype\": \"f32\", \"shape\": [2, \"s0\"]}}},"
    "{\"name\": \"b\", \"op\": \"placeholder\", \"target\": \"b\", \"meta\": {\"tensor\": {\"dtype\": \"f32\", \"shape\": [2, \"s0\"]}}},"
    "{\"name\": \"c\", \"op\": \"placeholder\", \"target\": \"c\", \"meta\": {\"tensor\": {\"dtype\": \"f32\", \"shape\": [2, \"s0\"]}, \"inferred\": true}},"
    "{\"name\": \"d\", \"op\": \"placeholder\", \"target\": \"d\", \"meta\":{\"tensor\": {\"dtype\": \"f32\", \"shape\": [2, \"s0\"]}}}],"
    " \"subgraphs\": [{\"nodes\": ["
    "{\"name\": \"a\", \"op\": \"placeholder\", \"target\": \"a\", \"meta\": {\"tensor\": {\"dtype\": \"f32\", \"shape\": [2, \"s0\"]}}},"
    "{\"name\": \"e\", \"op\": \"placeholder\", \"target\": \"e\", \"meta\": {\"tensor\": {\"dtype\": \"f32\", \"shape\": [2, \"s0\"]}}}]}]}]}";
  before = streamed;
  assert_same_reads("repeated metas", metas, sizeof metas - 1, &streamed);
  g_assert_cmpuint(streamed, ==, before + 1);
  for (uint32_t lim = 1; lim <= 12; lim++) {
    OxLoadOptions opt = {.max_depth = lim};
    assert_same_reads_opt("repeated metas, limit", metas, sizeof metas - 1, &opt, &streamed);
  }
  /* every prefix of a small document, and of one with a byte order mark */
  t = value_doc("[1.5, \"\\u00e9\", {\"dict\": [[\"k\", null]]}]", 40, "\"w\"", &len);
  for (size_t cut = 0; cut <= len; cut++) {
    char *p = g_strndup(t, cut);
    assert_same_reads("prefix", p, cut, &streamed);
    g_free(p);
  }
  char *bom = g_strconcat("\xef\xbb\xbf", t, NULL);
  for (size_t cut = 0; cut <= len + 3; cut += 7) {
    char *p = g_strndup(bom, cut);
    assert_same_reads("prefix after a BOM", p, cut, &streamed);
    g_free(p);
  }
  before = streamed;
  assert_same_reads("BOM", bom, len + 3, &streamed);
  g_assert_cmpuint(streamed, ==, before + 1);
  g_free(bom);
  g_free(t);
}

/* A document of one graph (input x) and the record text rec. */
static char *record_doc(const char *rec) {
  return g_strconcat("{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"name\": \"g\", \"nodes\": [\n"
                     "{\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\"},\n"
                     "{\"name\": \"output\", \"op\": \"output\", \"target\": \"output\", \"args\": [{\"node\": \"x\"}]}]}],\n"
                     "\"record\": ",
                     rec, "}\n", NULL);
}

/* Each record is not read by the fast path (the json-c read says what is wrong), and both reads
 * agree. */
static void assert_records_refused(const char *const *refused, size_t n) {
  unsigned streamed = 0;
  for (size_t i = 0; i < n; i++) {
    char *text = record_doc(refused[i]);
    unsigned before = streamed;
    assert_same_reads(refused[i], text, strlen(text), &streamed);
    if (streamed != before) g_test_fail_printf("read fast: %s", refused[i]);
    g_free(text);
  }
}

/* The fast read keeps a record's "data" arrays as text (checked, converted only when a tensor is
 * needed) and the writer copies them back as they came; the values are the tree read's (every
 * dtype, the special values, ints, booleans, empty and scalar tensors, a fill recipe). What the
 * scan does not take (a value too many or too few, RFC violations, an exponent that could
 * overflow, a string in an int tensor, null, nesting, dtype after data, a repeated name) is read
 * as a tree, with the same result. */
static void test_record_data_text(void) {
  static const char *const arrays[] = {
    "[0.024109675, -1e-320, 1E5, -0.0, 0, 12, \"nan\", \"-Infinity\", \"inf\", true, false, 3.141592653589793238]",
    "[1, -2, 9223372036854775, 0, true, 2.5]",
    "[ ]",
    "[7]",
    "[0.5,0.25 ,\n 1e-3\t, \"NaN\"]",
  };
  const char *rec = "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [3, 4], \"data\": %s}},"
                    " \"params\": {\"w.a\": {\"dtype\": \"i64\", \"shape\": [6], \"data\": %s},"
                    " \"w.b\": {\"dtype\": \"f64\", \"shape\": [2, 0], \"data\": %s},"
                    " \"w.c\": {\"dtype\": \"bf16\", \"shape\": [], \"data\": %s},"
                    " \"w.d\": {\"dtype\": \"f32\", \"shape\": [5], \"fill\": {\"kind\": \"sin\", \"scale\": 0.5, \"freq\": 1, \"phase\": 0}}},"
                    " \"outputs\": [{\"dtype\": \"f16\", \"shape\": [2, 2], \"data\": %s}, null], \"seed\": 3}";
  unsigned streamed = 0;
  char *r = g_strdup_printf(rec, arrays[0], arrays[1], arrays[2], arrays[3], arrays[4]);
  char *text = record_doc(r);
  assert_same_reads("record", text, strlen(text), &streamed);
  g_assert_cmpuint(streamed, ==, 1);
  OxDoc *doc = load_ok(text);
  g_assert_nonnull(doc->record);
  g_assert_nonnull(doc->record->inputs[0].raw); /* kept as text */
  g_assert_true(doc->record->params[3].fill.present);
  char *w = write_doc(doc);
  for (size_t i = 0; i < G_N_ELEMENTS(arrays); i++) /* written back as they came */
    if (!strstr(w, arrays[i])) g_test_fail_printf("the data %s is not written back as it came:\n%s", arrays[i], w);
  OxDoc *again = load_ok(w); /* and reads back the same */
  char *w2 = write_doc(again);
  g_assert_cmpstr(w, ==, w2);
  { /* from a file, the data are spans of the file's text, which the record keeps */
    char *dir = g_dir_make_tmp("ox-rec-XXXXXX", NULL), *path = g_build_filename(dir, "r.json", NULL);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    OxDiagList fd;
    ox_diags_init(&fd, path);
    OxDoc *fdoc = NULL;
    g_assert_cmpint(ox_load_file(path, OX_FMT_UNKNOWN, NULL, &fdoc, &fd), ==, 0);
    g_assert_true(ox_record_borrows(fdoc->record));
    g_assert_nonnull(fdoc->record->text);
    g_assert_false(fdoc->record->outputs[0].raw_owned);
    char *w3 = write_doc(fdoc);
    g_assert_cmpstr(w, ==, w3);
    OxTensor *o = ox_record_tensor_new(&fdoc->record->outputs[0]); /* the last span: ends the text's record */
    g_assert_nonnull(o);
    g_assert_true(isnan(ox_tensor_get(o, 3)));
    g_assert_cmpfloat(ox_tensor_get(o, 0), ==, 0.5);
    g_assert_cmpfloat(ox_tensor_get(o, 1), ==, 0.25);
    ox_tensor_free(o);
    g_assert_true(ox_record_materialize(fdoc->record));
    g_assert_false(ox_record_borrows(fdoc->record));
    g_free(w3);
    ox_doc_free(fdoc);
    ox_diags_clear(&fd);
    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
  }
  OxTensor *x = ox_record_input_new(doc->record, "x");
  g_assert_nonnull(x);
  g_assert_cmpfloat(ox_tensor_get(x, 0), ==, (double)0.024109675f);
  g_assert_true(isnan(ox_tensor_get(x, 6)) && isinf(ox_tensor_get(x, 7)) && ox_tensor_get(x, 7) < 0);
  g_assert_cmpfloat(ox_tensor_get(x, 9), ==, 1.0);
  ox_tensor_free(x);
  OxTensor *a = ox_record_param_new(doc->record, "w.a");
  g_assert_cmpint(a->data.i[2], ==, 9223372036854775);
  g_assert_cmpint(a->data.i[5], ==, 2);
  ox_tensor_free(a);
  g_free(w);
  g_free(w2);
  ox_doc_free(again);
  ox_doc_free(doc);
  g_free(text);
  g_free(r);

  static const char *const refused[] = {
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"data\": [1, 2, 3]}}}",   /* one too many */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"data\": [1]}}}",         /* one too few */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"data\": [1., 2]}}}",     /* not RFC */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"data\": [01, 2]}}}",
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"data\": [1e400, 2]}}}",  /* overflows */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"data\": [99e300, 2]}}}", /* 9.9e301 fits, but is past the scan's bound */
    "{\"inputs\": {\"x\": {\"dtype\": \"i64\", \"shape\": [2], \"data\": [\"nan\", 2]}}}",
    "{\"inputs\": {\"x\": {\"dtype\": \"i64\", \"shape\": [1], \"data\": [1234567890123456789]}}}",
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"data\": [null, 2]}}}",
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"data\": [[1], 2]}}}",
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"data\": [1, 2,]}}}",
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"data\": [1 2]}}}",
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"data\": [\"na\\u006e\", 2]}}}",
    "{\"inputs\": {\"x\": {\"data\": [1, 2], \"dtype\": \"f32\", \"shape\": [2]}}}",      /* data first */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [1], \"data\": [1]}, \"x\": {\"dtype\": \"f32\", \"shape\": [1], \"data\": [2]}}}",
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [1], \"data\": [1], \"fill\": {\"kind\": \"sin\", \"scale\": 1, \"freq\": 1, \"phase\": 0}}}}",
    "{\"inputs\": {}, \"extra\": 1}",
  };
  assert_records_refused(refused, G_N_ELEMENTS(refused));
}

/* "b64" tensors (the bridge's form for large ones): every dtype decoded exactly from its
 * little-endian bytes, by the fast read (kept as the string, decoded when needed) and the json-c
 * read alike; written back as it came; anything not the one encoding falls back to json-c, which
 * refuses it. */
static void test_record_b64(void) {
  /* f32 {1.5, -0.0, inf, 1e-45}, f64 {-2.25, nan}, f16 {1, -65504, 2^-24}, bf16 {1, -3}, i64 {-2^62-1, 7},
   * i32 {-5, 2^31-1}, b8 {1, 0, 1} */
  const char *rec =
      "{\"inputs\": {\"a\": {\"dtype\": \"f32\", \"shape\": [4], \"b64\": \"AADAPwAAAIAAAIB/AQAAAA==\"}},"
      " \"params\": {\"b\": {\"dtype\": \"f64\", \"shape\": [2], \"b64\": \"AAAAAAAAAsAAAAAAAAD4fw==\"},"
      " \"c\": {\"dtype\": \"f16\", \"shape\": [3], \"b64\": \"ADz/+wEA\"},"
      " \"d\": {\"dtype\": \"bf16\", \"shape\": [2], \"b64\": \"gD9AwA==\"},"
      " \"e\": {\"dtype\": \"i64\", \"shape\": [2], \"b64\": \"/////////78HAAAAAAAAAA==\"},"
      " \"f\": {\"dtype\": \"i32\", \"shape\": [2], \"b64\": \"+////////38=\"},"
      " \"g\": {\"dtype\": \"b8\", \"shape\": [3], \"b64\": \"AQAB\"},"
      " \"h\": {\"dtype\": \"f32\", \"shape\": [0], \"b64\": \"\"}},"
      " \"outputs\": [{\"dtype\": \"f32\", \"shape\": [1], \"b64\": \"AADAPw==\"}]}";
  unsigned streamed = 0;
  char *text = record_doc(rec);
  assert_same_reads("b64", text, strlen(text), &streamed);
  g_assert_cmpuint(streamed, ==, 1);
  OxDoc *doc = load_ok(text);
  OxRecord *r = doc->record;
  g_assert_true(r->inputs[0].raw && r->inputs[0].raw_b64); /* kept as the string */
  char *w = write_doc(doc);
  g_assert_nonnull(strstr(w, "\"b64\":\"/////////78HAAAAAAAAAA==\"")); /* written back as it came */
  OxTensor *t = ox_record_input_new(r, "a");
  g_assert_cmpfloat(t->data.f[0], ==, 1.5f);
  g_assert_true(t->data.f[1] == 0 && signbit(t->data.f[1]));
  g_assert_true(isinf(t->data.f[2]) && t->data.f[2] > 0);
  g_assert_cmpfloat(t->data.f[3], ==, 1e-45f); /* the smallest subnormal */
  ox_tensor_free(t);
  t = ox_record_param_new(r, "b");
  g_assert_cmpfloat(t->data.d[0], ==, -2.25);
  g_assert_true(isnan(t->data.d[1]));
  ox_tensor_free(t);
  t = ox_record_param_new(r, "c");
  g_assert_cmpfloat(t->data.f[0], ==, 1.0f);
  g_assert_cmpfloat(t->data.f[1], ==, -65504.0f);
  g_assert_cmpfloat(t->data.f[2], ==, ldexpf(1, -24)); /* f16's smallest subnormal */
  ox_tensor_free(t);
  t = ox_record_param_new(r, "d");
  g_assert_cmpfloat(t->data.f[0], ==, 1.0f);
  g_assert_cmpfloat(t->data.f[1], ==, -3.0f);
  ox_tensor_free(t);
  t = ox_record_param_new(r, "e");
  g_assert_cmpint(t->data.i[0], ==, -(1ll << 62) - 1);
  g_assert_cmpint(t->data.i[1], ==, 7);
  ox_tensor_free(t);
  t = ox_record_param_new(r, "f");
  g_assert_cmpint(t->data.i[0], ==, -5);
  g_assert_cmpint(t->data.i[1], ==, 2147483647);
  ox_tensor_free(t);
  t = ox_record_param_new(r, "g");
  g_assert_true(t->data.b[0] == 1 && t->data.b[1] == 0 && t->data.b[2] == 1);
  ox_tensor_free(t);
  OxDoc *again = load_ok(w); /* and reads back the same */
  char *w2 = write_doc(again);
  g_assert_cmpstr(w, ==, w2);
  g_free(w2);
  ox_doc_free(again);
  g_assert_true(ox_record_materialize(r)); /* decoded, then written as data, as the json-c read's */
  g_free(w);
  w = write_doc(doc);
  g_assert_null(strstr(w, "\"b64\""));
  g_assert_nonnull(strstr(w, "\"data\":[1.5,"));
  g_free(w);
  ox_doc_free(doc);
  g_free(text);

  static const char *const refused[] = {
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [2], \"b64\": \"AADAPw==\"}}}",      /* too short */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [1], \"b64\": \"AADAPwAA\"}}}",      /* too long */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [1], \"b64\": \"AADAPw=A\"}}}",      /* padding inside */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [1], \"b64\": \"AADAPx==\"}}}",      /* bits past the end */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [1], \"b64\": \"AAD-Pw==\"}}}",      /* not the alphabet */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [1], \"b64\": \"AADA\\nPw==\"}}}",   /* a line break */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [1], \"b64\": \"AADAP\\u0077==\"}}}", /* an escape */
    "{\"inputs\": {\"x\": {\"dtype\": \"b8\", \"shape\": [1], \"b64\": \"Ag==\"}}}",           /* a bool byte 2 */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [1], \"b64\": 5}}}",
    "{\"inputs\": {\"x\": {\"b64\": \"AADAPw==\", \"dtype\": \"f32\", \"shape\": [1]}}}",      /* b64 first */
    "{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [1], \"b64\": \"AADAPw==\", \"data\": [1.5]}}}",
  };
  assert_records_refused(refused, G_N_ELEMENTS(refused));

  /* a long one (the alphabet is checked 16 characters at a time): one character out of the
   * alphabet at any position, in a whole block or in the tail, is refused */
  float vals[25];
  for (int i = 0; i < 25; i++) vals[i] = (float)i * 0.75f - 3.0f;
  gchar *enc = g_base64_encode((const guchar *)vals, sizeof vals); /* 100 bytes: 136 characters, "==" */
  size_t enc_len = strlen(enc);
  g_assert_cmpuint(enc_len, ==, 136);
  char *ok_doc = g_strdup_printf("{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [25], \"b64\": \"%s\"}}}", enc);
  char *ok_text = record_doc(ok_doc);
  OxDoc *ok = load_ok(ok_text);
  OxTensor *x = ox_record_input_new(ok->record, "x");
  g_assert_nonnull(x);
  g_assert_true(memcmp(x->data.f, vals, sizeof vals) == 0);
  ox_tensor_free(x);
  ox_doc_free(ok);
  g_free(ok_text);
  g_free(ok_doc);
  const char *bad_chars[] = {"-", "\\u00e9", "=", " "};
  for (size_t i = 0; i < enc_len - 2; i += (i < 40 || i > enc_len - 24) ? 1 : 7) {
    for (size_t b = 0; b < G_N_ELEMENTS(bad_chars); b++) {
      char *doc = g_strdup_printf("{\"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [25], \"b64\": \"%.*s%s%s\"}}}",
                                  (int)i, enc, bad_chars[b], enc + i + 1);
      const char *one[1] = {doc};
      assert_records_refused(one, 1);
      g_free(doc);
    }
  }
  g_free(enc);
}

/* Megabytes of "b64" (a model's weights) are checked by two threads once the record is read
 * (ox_record_b64_check): valid ones are read fast, decoded exactly; one bad character or a bool
 * byte of 2 anywhere in any of the tensors, first or last, sends the document to the tree read,
 * which refuses it naming the tensor. */
static void test_record_b64_parallel(void) {
  enum { N = 3, VALUES = 700000 }; /* 2.8 MB each, 3.7 MB of base64: 11 MB in all */
  float *vals = g_new(float, VALUES);
  gchar *enc[N];
  GString *rec = g_string_new("{\"params\": {");
  for (int k = 0; k < N; k++) {
    for (int i = 0; i < VALUES; i++) vals[i] = (float)(i % 977) * 0.25f - (float)k;
    enc[k] = g_base64_encode((const guchar *)vals, VALUES * sizeof *vals);
    g_string_append_printf(rec, "%s\"w%d\": {\"dtype\": \"f32\", \"shape\": [%d], \"b64\": \"%s\"}", k ? ", " : "", k,
                           VALUES, enc[k]);
  }
  g_string_append(rec, ", \"m\": {\"dtype\": \"b8\", \"shape\": [4], \"b64\": \"AQABAA==\"}}}");
  char *text = record_doc(rec->str);
  unsigned long before = ox_json_streamed_reads();
  OxDoc *doc = load_ok(text);
  g_assert_cmpuint(ox_json_streamed_reads(), ==, before + 1); /* the fast read took it */
  for (int k = 0; k < N; k++) {
    char name[8];
    snprintf(name, sizeof name, "w%d", k);
    OxTensor *t = ox_record_param_new(doc->record, name);
    g_assert_nonnull(t);
    g_assert_cmpfloat(t->data.f[VALUES - 1], ==, (float)((VALUES - 1) % 977) * 0.25f - (float)k);
    ox_tensor_free(t);
  }
  ox_doc_free(doc);
  /* one fault at a time: near the start of the first tensor, in the middle one, at the end of the last, the bool */
  size_t at[] = {(size_t)(strstr(text, enc[0]) - text) + 5, (size_t)(strstr(text, enc[1]) - text) + strlen(enc[1]) / 2,
                 (size_t)(strstr(text, enc[2]) - text) + strlen(enc[2]) - 7, (size_t)(strstr(text, "AQABAA==") - text)};
  const char *fault[] = {"-", "*", "-", "Ag"};
  const char *names[] = {"params.w0", "params.w1", "params.w2", "params.m"};
  for (size_t i = 0; i < G_N_ELEMENTS(at); i++) {
    char *bad = g_strdup(text);
    memcpy(bad + at[i], fault[i], strlen(fault[i]));
    before = ox_json_streamed_reads();
    OxDiagList d;
    load_bad(bad, strlen(bad), NULL, &d);
    g_assert_cmpuint(ox_json_streamed_reads(), ==, before);
    g_assert_cmpuint(d.n_errors, >=, 1);
    char want[64];
    snprintf(want, sizeof want, "record: %s: \"b64\" is not the base64", names[i]);
    g_assert_nonnull(strstr(first_error(&d)->msg, want));
    ox_diags_clear(&d);
    g_free(bad);
  }
  g_free(text);
  for (int k = 0; k < N; k++) g_free(enc[k]);
  g_string_free(rec, TRUE);
  g_free(vals);
}

/* The fixtures (hand-written and bridge-exported documents, several with a "record" of example
 * tensors): both reads agree; those without forward references are read fast. */
static void test_streamed_fixtures(void) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  if (!root) {
    g_test_skip("OPTIMUS_SOURCE_ROOT not set");
    return;
  }
  g_autofree char *dir = g_build_filename(root, "tests", "data", "fixtures", NULL);
  GDir *gd = g_dir_open(dir, 0, NULL);
  g_assert_nonnull(gd);
  const char *name;
  unsigned n = 0, streamed = 0, records = 0;
  while ((name = g_dir_read_name(gd))) {
    if (!g_str_has_suffix(name, ".json")) continue;
    g_autofree char *path = g_build_filename(dir, name, NULL);
    char *text;
    gsize len;
    g_assert_true(g_file_get_contents(path, &text, &len, NULL));
    assert_same_reads(path, text, len, &streamed);
    if (strstr(text, "\"record\"")) records++;
    n++;
    g_free(text);
  }
  g_dir_close(gd);
  g_test_message("%u fixtures (%u with a record), %u read fast", n, records, streamed);
  g_assert_cmpuint(n, >, 0);
  g_assert_cmpuint(streamed, ==, n);
}

/* The streamed read (the fast read of engine/json/ox_json_fast.c: one pass, no json-c) gives what
 * the tree read gives: the same status, the
 * same diagnostics in the same order, the same document. Clean documents are streamed (the rich
 * graph, the example, every corpus file as JSON); damaged ones (flipped bytes, cuts), forward
 * references, unknown keys and repeated keys are read as a tree, with the same result. */
static void test_streamed_equals_tree(void) {
  unsigned streamed = 0, clean = 0;
  OxDoc *doc = ox_doc_new(OX_FMT_JSON);
  ox_doc_add_graph(doc, rich_graph());
  char *text = write_doc(doc);
  size_t len = strlen(text);
  assert_same_reads("rich", text, len, &streamed);
  clean++;
  GRand *rnd = g_rand_new_with_seed(4321);
  const char flips[] = "{}[]\",:0-e.tn\\ x\x00\xff";
  for (int k = 0; k < 400; k++) {
    char *t = g_memdup2(text, len + 1);
    int nflip = g_rand_int_range(rnd, 1, 3);
    for (int j = 0; j < nflip; j++) t[g_rand_int_range(rnd, 0, (gint32)len)] = flips[g_rand_int_range(rnd, 0, sizeof flips - 1)];
    assert_same_reads("flipped", t, len, &streamed);
    g_free(t);
  }
  for (size_t cut = len / 3; cut < len; cut += len / 7) assert_same_reads("cut", text, cut, &streamed);
  g_rand_free(rnd);
  /* a forward reference, an unknown key, a repeated key */
  static const char fwd[] =
    "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"name\": \"g\", \"nodes\": ["
    "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"torch.relu\", \"args\": [{\"node\": \"x\"}], \"kwargs\": {}},"
    "{\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\", \"args\": [], \"kwargs\": {}},"
    "{\"name\": \"output\", \"op\": \"output\", \"target\": \"output\", \"args\": [{\"node\": \"y\"}], \"kwargs\": {}}]}]}\n";
  static const char unknown[] =
    "{\"format\": \"optimus-fx\", \"version\": 1, \"extra\": 3, \"graphs\": [{\"name\": \"g\", \"nodes\": ["
    "{\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\", \"args\": [], \"kwargs\": {}, \"color\": 1},"
    "{\"name\": \"output\", \"op\": \"output\", \"target\": \"output\", \"args\": [{\"node\": \"x\"}], \"kwargs\": {}}]}]}\n";
  static const char repeated[] =
    "{\"format\": \"optimus-fx\", \"version\": 1, \"graphs\": [{\"name\": \"g\", \"name\": \"h\", \"nodes\": ["
    "{\"name\": \"x\", \"op\": \"placeholder\", \"target\": \"x\", \"args\": [], \"kwargs\": {}},"
    "{\"name\": \"output\", \"op\": \"output\", \"target\": \"output\", \"args\": [{\"node\": \"x\"}], \"kwargs\": {}}]}]}\n";
  unsigned s0 = streamed;
  assert_same_reads("forward", fwd, strlen(fwd), &streamed);
  assert_same_reads("unknown", unknown, strlen(unknown), &streamed);
  assert_same_reads("repeated", repeated, strlen(repeated), &streamed);
  g_assert_cmpuint(streamed, ==, s0); /* none of them streams */
  g_free(text);
  ox_doc_free(doc);
  /* the example and the corpus, as JSON */
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  g_autofree char *ex = g_build_filename(root ? root : ".", "data", "examples", "recsys-towers.txt", NULL);
  GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(files, g_strdup(ex));
  char *dir = test_corpus_dir();
  GDir *gd = dir ? g_dir_open(dir, 0, NULL) : NULL;
  const char *name;
  while (gd && (name = g_dir_read_name(gd)))
    if (g_str_has_suffix(name, ".txt")) g_ptr_array_add(files, g_build_filename(dir, name, NULL));
  if (gd) g_dir_close(gd);
  for (guint i = 0; i < files->len; i++) {
    OxDiagList d;
    ox_diags_init(&d, files->pdata[i]);
    OxDoc *in = NULL;
    if (ox_load_file(files->pdata[i], OX_FMT_UNKNOWN, NULL, &in, &d) == 0) {
      char *j = write_doc(in);
      unsigned before = streamed;
      assert_same_reads(files->pdata[i], j, strlen(j), &streamed);
      clean++;
      if (streamed == before) {
        g_printerr("%s: its JSON was not streamed\n", (const char *)files->pdata[i]);
        g_test_fail();
      }
      g_free(j);
    }
    ox_doc_free(in);
    ox_diags_clear(&d);
  }
  g_test_message("%u clean documents, %u streamed reads in all", clean, streamed);
  g_assert_cmpuint(streamed, >=, clean);
  if (!dir) g_test_message("corpus absent: example and generated documents only");
  g_free(dir);
  g_ptr_array_free(files, TRUE);
}

/* ox_json_skip_value / ox_json_skip_string (the raw-text walks that locate errors and find a
 * trace's tables behind its steps) against the plain byte-by-byte walk they replaced: the same end
 * at every start of random short texts of quotes, escapes, brackets and bytes between. */
static size_t ref_skip_string(const char *t, size_t len, size_t i) {
  char q = t[i++];
  while (i < len && t[i] != q) i += t[i] == '\\' ? 2 : 1;
  return i < len ? i + 1 : len;
}

static size_t ref_skip_value(const char *t, size_t len, size_t i) {
  if (i >= len) return len;
  if (t[i] == '"' || t[i] == '\'') return ref_skip_string(t, len, i);
  if (t[i] == '{' || t[i] == '[') {
    size_t depth = 0;
    while (i < len) {
      char c = t[i];
      if (c == '"' || c == '\'') {
        i = ref_skip_string(t, len, i);
        continue;
      }
      if (c == '{' || c == '[') depth++;
      if ((c == '}' || c == ']') && --depth == 0) return i + 1;
      i++;
    }
    return len;
  }
  while (i < len && !strchr(",}] \n\t\r", t[i])) i++;
  return i;
}

static void test_skip_value(void) {
  static const char bytes[] = "{}[]\"'\\ab,: \n\x80\xff";
  GRand *rng = g_rand_new_with_seed(7);
  char buf[48];
  for (int k = 0; k < 200000; k++) {
    size_t n = (size_t)g_rand_int_range(rng, 0, (gint32)sizeof buf);
    for (size_t j = 0; j < n; j++) buf[j] = bytes[g_rand_int_range(rng, 0, (gint32)sizeof bytes - 1)];
    for (size_t i = 0; i <= n; i++) {
      g_assert_cmpuint(ox_json_skip_value(buf, n, i), ==, ref_skip_value(buf, n, i));
      if (i < n && (buf[i] == '"' || buf[i] == '\''))
        g_assert_cmpuint(ox_json_skip_string(buf, n, i), ==, ref_skip_string(buf, n, i));
    }
  }
  g_rand_free(rng);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/json/exact-output", test_exact_output);
  g_test_add_func("/engine/json/roundtrip-rich", test_roundtrip_rich);
  g_test_add_func("/engine/json/roundtrip-erased", test_roundtrip_erased);
  g_test_add_func("/engine/json/forward-refs", test_forward_refs);
  g_test_add_func("/engine/json/bad-inputs", test_bad_inputs);
  g_test_add_func("/engine/json/no-cascade", test_no_cascade);
  g_test_add_func("/engine/json/version-message", test_version_message);
  g_test_add_func("/engine/json/unknown-keys", test_unknown_keys);
  g_test_add_func("/engine/json/depth-limit", test_depth_limit);
  g_test_add_func("/engine/json/damaged-input", test_damaged_input);
  g_test_add_func("/engine/json/doc-example", test_doc_example);
  g_test_add_func("/engine/json/golden", test_golden);
  g_test_add_func("/engine/json/absurd-dims", test_absurd_dims);
  g_test_add_func("/engine/json/forward-order-cycles", test_forward_order_cycles);
  g_test_add_func("/engine/json/streamed-equals-tree", test_streamed_equals_tree);
  g_test_add_func("/engine/json/streamed-values", test_streamed_values);
  g_test_add_func("/engine/json/streamed-fixtures", test_streamed_fixtures);
  g_test_add_func("/engine/json/record-data-text", test_record_data_text);
  g_test_add_func("/engine/json/record-b64", test_record_b64);
  g_test_add_func("/engine/json/record-b64-parallel", test_record_b64_parallel);
  g_test_add_func("/engine/json/skip-value", test_skip_value);
  for (int nn = 1; nn <= 29; nn++) {
    char *p = g_strdup_printf("/engine/json/corpus/%02d", nn);
    g_test_add_data_func(p, GINT_TO_POINTER(nn), test_corpus_roundtrip);
    g_free(p);
  }
  return g_test_run();
}
