/* The op table (engine/ops/ox_ops.c): every spelling resolves to its op, every op has a shape
 * rule and a spelling, and ox_op_normalize maps positional / keyword / default / method /
 * module forms onto canonical slots with the exact values, or fails with a clear message. */
#include <glib.h>
#include <stdarg.h>
#include <string.h>

#include "ir/ox_graph.h"
#include "ops/ox_ops.h"
#include "ops/ox_shape.h"

/* ------------------------------------------------------------------ builders */

static OxValue tup(OxGraph *g, int n, ...) {
  OxValue items[16];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) items[i] = va_arg(ap, OxValue);
  va_end(ap);
  return ox_graph_value_seq(g, OX_V_TUPLE, items, (uint32_t)n);
}

static OxValue list(OxGraph *g, int n, ...) {
  OxValue items[16];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) items[i] = va_arg(ap, OxValue);
  va_end(ap);
  return ox_graph_value_seq(g, OX_V_LIST, items, (uint32_t)n);
}

/* kw(g, n, "key", value, "key2", value2 ...) */
static OxValue kw(OxGraph *g, int n, ...) {
  const char *keys[16];
  OxValue items[16];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) {
    keys[i] = va_arg(ap, const char *);
    items[i] = va_arg(ap, OxValue);
  }
  va_end(ap);
  return ox_graph_value_dict(g, keys, items, (uint32_t)n);
}

static OxValue I(int64_t i) { return ox_value_int(i); }
static OxValue Fl(double f) { return ox_value_float(f); }
static OxValue B(bool b) { return ox_value_bool(b); }
static OxValue N(OxNodeId id) { return ox_value_node(id); }
static OxValue None(void) { return ox_value_none(); }
static OxValue S(OxGraph *g, const char *s) { return ox_graph_value_str(g, OX_V_STR, s); }

static OxNodeId ph(OxGraph *g, const char *name) {
  return ox_graph_add_node(g, OX_OP_PLACEHOLDER, name, name, ox_value_none(), ox_value_none());
}

static OxNodeId fn(OxGraph *g, const char *target, OxValue args, OxValue kwargs) {
  return ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, target, args, kwargs);
}

static OxNodeId meth(OxGraph *g, const char *target, OxValue args, OxValue kwargs) {
  return ox_graph_add_node(g, OX_OP_CALL_METHOD, NULL, target, args, kwargs);
}

static OxNodeId mod(OxGraph *g, const char *path, const char *type, OxValue args, OxValue kwargs) {
  OxNodeId id = ox_graph_add_node(g, OX_OP_CALL_MODULE, NULL, path, args, kwargs);
  ox_graph_node(g, id)->module_type = ox_graph_intern(g, type);
  return id;
}

/* Fills *a in place: a varargs slot points into a->packed, so OxOpArgs is not copied. */
static void norm(OxOpArgs *a, OxGraph *g, OxNodeId id) {
  char err[256];
  int rc = ox_op_normalize(g, ox_graph_node(g, id), a, err, sizeof err);
  if (rc != 0) g_test_message("normalize failed: %s", err);
  g_assert_cmpint(rc, ==, 0);
}

static void norm_fails(OxGraph *g, OxNodeId id, const char *expect) {
  OxOpArgs a;
  char err[256];
  int rc = ox_op_normalize(g, ox_graph_node(g, id), &a, err, sizeof err);
  g_assert_cmpint(rc, ==, -1);
  g_assert_cmpstr(err, ==, expect);
}

static int slot_of(OxOpId op, const char *name) {
  const OxOpInfo *info = ox_op_info(op);
  for (uint32_t i = 0; i < info->n_slots; i++)
    if (!strcmp(info->slot_names[i], name)) return (int)i;
  g_error("op %s has no slot %s", info->name, name);
  return -1;
}

#define SLOT(a, name) ((a).slot[slot_of((a).op, name)])
#define FROMDEF(a, name) ((a).from_default[slot_of((a).op, name)])

static void assert_node(const OxValue *v, OxNodeId id) {
  g_assert_nonnull(v);
  g_assert_cmpint(v->kind, ==, OX_V_NODE);
  g_assert_cmpuint(v->u.node, ==, id);
}

static void assert_int(const OxValue *v, int64_t i) {
  g_assert_nonnull(v);
  g_assert_cmpint(v->kind, ==, OX_V_INT);
  g_assert_cmpint(v->u.i, ==, i);
}

static void assert_fmt(OxGraph *g, const OxValue *v, const char *text) {
  char buf[256];
  g_assert_nonnull(v);
  g_assert_cmpstr(ox_value_format(g, v, buf, sizeof buf), ==, text);
}

/* ------------------------------------------------------------------ table */

static void test_every_spelling_resolves(void) {
  size_t n;
  const OxSpelling *sp = ox_op_spellings(&n);
  g_assert_cmpuint(n, >, 300);
  OxGraph *g = ox_graph_new();
  for (size_t i = 0; i < n; i++) {
    OxNodeId id;
    switch (sp[i].level) {
    case OX_LEVEL_METHOD: id = meth(g, sp[i].target, ox_value_none(), ox_value_none()); break;
    case OX_LEVEL_MODULE: id = mod(g, "m", sp[i].target, ox_value_none(), ox_value_none()); break;
    default: id = fn(g, sp[i].target, ox_value_none(), ox_value_none()); break;
    }
    const OxSpelling *got = NULL;
    OxOpId op = ox_op_of_node(g, ox_graph_node(g, id), &got);
    if (op != sp[i].op || got != &sp[i]) g_test_message("spelling %s does not resolve to itself", sp[i].target);
    g_assert_cmpint(op, ==, sp[i].op);
    g_assert_true(got == &sp[i]);
    g_assert_nonnull(sp[i].schema);
  }
  ox_graph_free(g);
}

static void test_every_op_has_rule_and_spelling(void) {
  size_t n;
  const OxSpelling *sp = ox_op_spellings(&n);
  for (int op = 1; op < OX_OPID_COUNT; op++) {
    const OxOpInfo *info = ox_op_info((OxOpId)op);
    g_assert_nonnull(info);
    g_assert_cmpint(info->id, ==, op);
    g_assert_cmpuint(info->n_slots, >=, 1);
    if (!ox_shape_has_rule((OxOpId)op)) g_test_message("op %s has no shape rule", info->name);
    g_assert_true(ox_shape_has_rule((OxOpId)op));
    g_assert_nonnull(ox_shape_rule_summary((OxOpId)op));
    g_assert_cmpint(ox_op_by_name(info->name), ==, op);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) count += sp[i].op == (OxOpId)op;
    if (!count) g_test_message("op %s has no spelling", info->name);
    g_assert_cmpuint(count, >=, 1);
  }
  g_assert_null(ox_op_info(OX_OPID_NONE));
  g_assert_cmpint(ox_op_by_name("no_such_op"), ==, OX_OPID_NONE);
  g_assert_false(ox_shape_has_rule(OX_OPID_NONE));
}

static void test_canonical_schema(void) {
  const OxOpInfo *s = ox_op_info(OX_OPID_SPLIT);
  g_assert_cmpstr(s->name, ==, "split");
  g_assert_cmpuint(s->n_slots, ==, 3);
  g_assert_cmpstr(s->slot_names[0], ==, "self");
  g_assert_cmpstr(s->slot_names[1], ==, "split_size");
  g_assert_cmpstr(s->slot_names[2], ==, "dim");
  g_assert_null(s->slot_defaults[0]);
  assert_int(s->slot_defaults[2], 0);
  g_assert_true(s->flags & OX_OPF_MULTI);
  const OxOpInfo *e = ox_op_info(OX_OPID_EMBEDDING_BAG);
  assert_fmt(NULL, e->slot_defaults[slot_of(OX_OPID_EMBEDDING_BAG, "mode")], "'mean'");
  const OxOpInfo *ln = ox_op_info(OX_OPID_LAYER_NORM);
  g_assert_cmpint(ln->slot_defaults[4]->kind, ==, OX_V_FLOAT);
  g_assert_cmpfloat(ln->slot_defaults[4]->u.f, ==, 1e-05);
  g_assert_true(ox_op_info(OX_OPID_DROPOUT)->flags & OX_OPF_RANDOM);
  g_assert_true(ox_op_info(OX_OPID_ADD)->flags & OX_OPF_POINTWISE);
  g_assert_true(ox_op_info(OX_OPID_VIEW)->flags & OX_OPF_VIEW);
  g_assert_true(ox_op_info(OX_OPID_SUM)->flags & OX_OPF_REDUCTION);
}

static void test_spelling_levels_and_prefixes(void) {
  OxGraph *g = ox_graph_new();
  const char *aten[] = {"torch.ops.aten.addmm.default", "aten.addmm.default",
                        "executorch.exir.dialects.edge._ops.aten.addmm.default"};
  for (int i = 0; i < 3; i++) {
    const OxSpelling *sp;
    OxNodeId id = fn(g, aten[i], ox_value_none(), ox_value_none());
    g_assert_cmpint(ox_op_of_node(g, ox_graph_node(g, id), &sp), ==, OX_OPID_ADDMM);
    g_assert_cmpint(sp->level, ==, OX_LEVEL_ATEN);
  }
  /* a method name is not a function target, a module type only counts on call_module */
  OxNodeId m = fn(g, "split", ox_value_none(), ox_value_none());
  g_assert_cmpint(ox_op_of_node(g, ox_graph_node(g, m), NULL), ==, OX_OPID_NONE);
  OxNodeId lin = fn(g, "torch.nn.Linear", ox_value_none(), ox_value_none());
  g_assert_cmpint(ox_op_of_node(g, ox_graph_node(g, lin), NULL), ==, OX_OPID_NONE);
  OxNodeId nomod = ox_graph_add_node(g, OX_OP_CALL_MODULE, NULL, "fc", ox_value_none(), ox_value_none());
  g_assert_cmpint(ox_op_of_node(g, ox_graph_node(g, nomod), NULL), ==, OX_OPID_NONE);
  OxNodeId lin2 = fn(g, "torch._C._nn.linear", ox_value_none(), ox_value_none());
  g_assert_cmpint(ox_op_of_node(g, ox_graph_node(g, lin2), NULL), ==, OX_OPID_LINEAR);
  OxNodeId tfs = fn(g, "torch.functional.split", ox_value_none(), ox_value_none());
  g_assert_cmpint(ox_op_of_node(g, ox_graph_node(g, tfs), NULL), ==, OX_OPID_SPLIT);
  OxNodeId ph1 = ph(g, "x");
  g_assert_cmpint(ox_op_of_node(g, ox_graph_node(g, ph1), NULL), ==, OX_OPID_NONE);
  ox_graph_free(g);
}

static void test_outputs(void) {
  size_t n;
  const OxSpelling *sp = ox_op_spellings(&n);
  for (size_t i = 0; i < n; i++) {
    int k = ox_spelling_outputs(&sp[i]);
    if (!strcmp(sp[i].target, "torch.ops.aten.native_layer_norm.default")) g_assert_cmpint(k, ==, 3);
    if (!strcmp(sp[i].target, "aten._embedding_bag.default")) g_assert_cmpint(k, ==, 4);
    if (!strcmp(sp[i].target, "torch.nn.functional.embedding_bag")) g_assert_cmpint(k, ==, 0);
    if (!strcmp(sp[i].target, "aten.max_pool2d_with_indices.default")) g_assert_cmpint(k, ==, 2);
    if (!strcmp(sp[i].target, "torch.split")) g_assert_cmpint(k, ==, -1);
    if (!strcmp(sp[i].target, "torch.ops.aten.mm.default")) g_assert_cmpint(k, ==, 0);
    /* every MULTI op's spellings produce tuples, except F.embedding_bag and nn.EmbeddingBag */
    if ((ox_op_info(sp[i].op)->flags & OX_OPF_MULTI) && sp[i].op != OX_OPID_EMBEDDING_BAG)
      g_assert_cmpint(k, !=, 0);
  }
  g_assert_cmpint(ox_spelling_outputs(NULL), ==, 0);
}

/* ------------------------------------------------------------------ normalization */

static void test_norm_split(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  /* positional + keyword, negative dim */
  OxOpArgs a;
  norm(&a, g, fn(g, "torch.split", tup(g, 2, N(x), I(2)), kw(g, 1, "dim", I(-1))));
  g_assert_cmpint(a.op, ==, OX_OPID_SPLIT);
  assert_node(SLOT(a, "self"), x);
  assert_int(SLOT(a, "split_size"), 2);
  assert_int(SLOT(a, "dim"), -1);
  g_assert_false(FROMDEF(a, "dim"));
  /* keyword names as printed: tensor, split_size_or_sections */
  norm(&a, g, fn(g, "torch.functional.split", tup(g, 0),
                 kw(g, 2, "tensor", N(x), "split_size_or_sections", list(g, 2, I(3), I(5)))));
  g_assert_cmpint(a.op, ==, OX_OPID_SPLIT_WITH_SIZES);
  assert_fmt(g, a.slot[1], "[3, 5]");
  assert_int(a.slot[2], 0);
  g_assert_true(a.from_default[2]);
  /* method: self from args[0]; a list makes it split_with_sizes */
  norm(&a, g, meth(g, "split", tup(g, 3, N(x), list(g, 2, I(2048), I(256)), I(1)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_SPLIT_WITH_SIZES);
  assert_node(a.slot[0], x);
  assert_int(a.slot[2], 1);
  norm(&a, g, fn(g, "torch.ops.aten.split_with_sizes.default", tup(g, 3, N(x), list(g, 2, I(2), I(2)), I(1)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_SPLIT_WITH_SIZES);
  norm(&a, g, fn(g, "torch.ops.aten.split.Tensor", tup(g, 3, N(x), I(32), I(-1)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_SPLIT);
  assert_int(a.slot[1], 32);
  /* errors */
  norm_fails(g, fn(g, "torch.split", tup(g, 1, N(x)), ox_value_none()),
             "torch.split: missing argument split_size_or_sections");
  norm_fails(g, fn(g, "torch.split", tup(g, 3, N(x), I(2), I(0)), kw(g, 1, "dim", I(1))),
             "torch.split: got multiple values for argument 'dim'");
  norm_fails(g, fn(g, "torch.split", tup(g, 4, N(x), I(2), I(0), I(1)), ox_value_none()),
             "torch.split: takes at most 3 positional arguments (4 given)");
  norm_fails(g, meth(g, "split", tup(g, 2, N(x), I(2)), kw(g, 1, "axis", I(0))),
             "split: unexpected keyword argument 'axis'");
  ox_graph_free(g);
}

static void test_norm_chunk_unbind_cat_stack(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x"), y = ph(g, "y");
  OxOpArgs a;
  norm(&a, g, meth(g, "chunk", tup(g, 2, N(x), I(2)), kw(g, 1, "dim", I(-1))));
  g_assert_cmpint(a.op, ==, OX_OPID_CHUNK);
  assert_int(a.slot[1], 2);
  assert_int(a.slot[2], -1);
  norm(&a, g, fn(g, "torch.unbind", tup(g, 1, N(x)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_UNBIND);
  assert_int(a.slot[1], 0);
  g_assert_true(a.from_default[1]);
  norm(&a, g, fn(g, "aten.unbind.int", tup(g, 2, N(x), I(1)), ox_value_none()));
  assert_int(a.slot[1], 1);
  norm(&a, g, fn(g, "torch.cat", tup(g, 1, list(g, 2, N(x), N(y))), kw(g, 1, "dim", I(1))));
  g_assert_cmpint(a.op, ==, OX_OPID_CAT);
  assert_fmt(g, a.slot[0], "[%x, %y]");
  assert_int(a.slot[1], 1);
  norm(&a, g, fn(g, "torch.concatenate", tup(g, 1, list(g, 2, N(x), N(y))), kw(g, 1, "axis", I(-1))));
  g_assert_cmpint(a.op, ==, OX_OPID_CAT);
  assert_int(a.slot[1], -1);
  norm(&a, g, fn(g, "torch.concat", tup(g, 1, list(g, 1, N(x))), ox_value_none()));
  assert_int(a.slot[1], 0);
  norm(&a, g, fn(g, "torch.stack", tup(g, 1, tup(g, 2, N(x), N(y))), kw(g, 1, "dim", I(-1))));
  g_assert_cmpint(a.op, ==, OX_OPID_STACK);
  assert_int(a.slot[1], -1);
  norm_fails(g, fn(g, "torch.cat", tup(g, 1, list(g, 1, N(x))), kw(g, 1, "out", N(y))),
             "torch.cat: out=%y is not supported");
  norm_fails(g, fn(g, "torch.cat", tup(g, 1, list(g, 1, N(x))), kw(g, 1, "foo", I(1))),
             "torch.cat: unexpected keyword argument 'foo'");
  /* keyword-only after '*': positional alpha is rejected */
  norm_fails(g, fn(g, "torch.add", tup(g, 3, N(x), N(y), I(2)), ox_value_none()),
             "torch.add: takes at most 2 positional arguments (3 given)");
  ox_graph_free(g);
}

static void test_norm_getitem_select_slice(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxOpArgs a;
  norm(&a, g, fn(g, "operator.getitem", tup(g, 2, N(x), I(1)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_GETITEM);
  assert_node(a.slot[0], x);
  assert_int(a.slot[1], 1);
  norm(&a, g, meth(g, "__getitem__", tup(g, 2, N(x), I(0)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_GETITEM);
  norm(&a, g, fn(g, "torch.ops.aten.select.int", tup(g, 3, N(x), I(0), I(-1)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_SELECT);
  assert_int(a.slot[2], -1);
  norm(&a, g, fn(g, "aten.slice.Tensor", tup(g, 3, N(x), I(1), I(2)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_SLICE);
  assert_int(a.slot[1], 1);
  assert_int(a.slot[2], 2);
  g_assert_cmpint(a.slot[3]->kind, ==, OX_V_NONE);
  assert_int(a.slot[4], 1);
  g_assert_true(a.from_default[4]);
  norm(&a, g, meth(g, "narrow", tup(g, 4, N(x), I(0), I(1), I(3)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_NARROW);
  assert_int(a.slot[3], 3);
  norm_fails(g, fn(g, "torch.narrow", tup(g, 3, N(x), I(0), I(1)), ox_value_none()),
             "torch.narrow: missing argument length");
  ox_graph_free(g);
}

static void test_norm_views_varargs(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxOpArgs a;
  norm(&a, g, meth(g, "view", tup(g, 3, N(x), I(2), I(-1)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_VIEW);
  assert_fmt(g, a.slot[1], "(2, -1)");
  g_assert_true(a.slot[1] == &a.packed);
  norm(&a, g, meth(g, "view", tup(g, 2, N(x), list(g, 4, I(1), I(-1), I(1), I(1))), ox_value_none()));
  assert_fmt(g, a.slot[1], "[1, -1, 1, 1]");
  norm(&a, g, meth(g, "permute", tup(g, 4, N(x), I(0), I(2), I(1)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_PERMUTE);
  assert_fmt(g, a.slot[1], "(0, 2, 1)");
  norm(&a, g, fn(g, "torch.permute", tup(g, 2, N(x), list(g, 2, I(1), I(0))), ox_value_none()));
  assert_fmt(g, a.slot[1], "[1, 0]");
  norm(&a, g, meth(g, "expand", tup(g, 3, N(x), I(4), I(-1)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_EXPAND);
  assert_fmt(g, a.slot[1], "(4, -1)");
  norm(&a, g, fn(g, "torch.ops.aten.expand.default", tup(g, 2, N(x), list(g, 2, I(4), I(-1))), ox_value_none()));
  assert_fmt(g, a.slot[1], "[4, -1]");
  norm(&a, g, meth(g, "reshape", tup(g, 2, N(x), I(-1)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_RESHAPE);
  assert_fmt(g, a.slot[1], "(-1,)");
  norm(&a, g, fn(g, "torch.reshape", tup(g, 1, N(x)), kw(g, 1, "shape", list(g, 1, I(-1)))));
  assert_fmt(g, a.slot[1], "[-1]");
  norm(&a, g, fn(g, "torch.flatten", tup(g, 2, N(x), I(1)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_FLATTEN);
  assert_int(a.slot[1], 1);
  assert_int(a.slot[2], -1);
  norm(&a, g, meth(g, "transpose", tup(g, 3, N(x), I(-1), I(-2)), ox_value_none()));
  assert_int(a.slot[1], -1);
  assert_int(a.slot[2], -2);
  norm(&a, g, meth(g, "squeeze", tup(g, 1, N(x)), ox_value_none()));
  g_assert_cmpint(a.slot[1]->kind, ==, OX_V_NONE);
  norm(&a, g, fn(g, "aten.squeeze.dims", tup(g, 2, N(x), list(g, 2, I(0), I(2))), ox_value_none()));
  assert_fmt(g, a.slot[1], "[0, 2]");
  norm(&a, g, meth(g, "unflatten", tup(g, 3, N(x), I(-1), tup(g, 2, I(2), I(-1))), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_UNFLATTEN);
  norm(&a, g, fn(g, "torch.movedim", tup(g, 3, N(x), I(0), I(-1)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_MOVEDIM);
  norm_fails(g, fn(g, "torch.ops.aten.view.default", tup(g, 1, N(x)), ox_value_none()),
             "torch.ops.aten.view.default: missing argument size");
  ox_graph_free(g);
}

static void test_norm_pointwise(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x"), y = ph(g, "y"), c = ph(g, "c");
  OxOpArgs a;
  norm(&a, g, fn(g, "torch.add", tup(g, 2, N(x), I(1)), kw(g, 1, "alpha", I(2))));
  g_assert_cmpint(a.op, ==, OX_OPID_ADD);
  assert_int(a.slot[1], 1);
  assert_int(a.slot[2], 2);
  norm(&a, g, fn(g, "operator.add", tup(g, 2, N(x), N(y)), ox_value_none()));
  assert_node(a.slot[1], y);
  assert_int(a.slot[2], 1);
  g_assert_true(a.from_default[2]);
  norm(&a, g, fn(g, "torch.ops.aten.add.Scalar", tup(g, 2, N(x), Fl(0.5)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_ADD);
  g_assert_cmpint(a.slot[1]->kind, ==, OX_V_FLOAT);
  /* scalar first (4 * x) keeps operand order */
  norm(&a, g, fn(g, "operator.mul", tup(g, 2, I(4), N(x)), ox_value_none()));
  assert_int(a.slot[0], 4);
  assert_node(a.slot[1], x);
  norm(&a, g, fn(g, "operator.floordiv", tup(g, 2, N(x), I(2)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_DIV);
  assert_fmt(g, a.slot[2], "'floor'");
  norm(&a, g, fn(g, "aten.div.Tensor_mode", tup(g, 2, N(x), N(y)), kw(g, 1, "rounding_mode", S(g, "trunc"))));
  assert_fmt(g, a.slot[2], "'trunc'");
  norm(&a, g, fn(g, "operator.truediv", tup(g, 2, N(x), N(y)), ox_value_none()));
  g_assert_cmpint(a.slot[2]->kind, ==, OX_V_NONE);
  norm(&a, g, fn(g, "torch.where", tup(g, 3, N(c), N(x), N(y)), ox_value_none()));
  assert_node(SLOT(a, "condition"), c);
  assert_node(SLOT(a, "self"), x);
  assert_node(SLOT(a, "other"), y);
  /* x.where(c, y) == torch.where(c, x, y) */
  norm(&a, g, meth(g, "where", tup(g, 3, N(x), N(c), N(y)), ox_value_none()));
  assert_node(SLOT(a, "condition"), c);
  assert_node(SLOT(a, "self"), x);
  norm(&a, g, meth(g, "clamp", tup(g, 1, N(x)), kw(g, 2, "min", Fl(0.0), "max", Fl(1.0))));
  g_assert_cmpint(a.op, ==, OX_OPID_CLAMP);
  assert_fmt(g, a.slot[1], "0.0");
  assert_fmt(g, a.slot[2], "1.0");
  norm(&a, g, fn(g, "torch.nn.functional.gelu", tup(g, 1, N(x)), kw(g, 1, "approximate", S(g, "tanh"))));
  assert_fmt(g, a.slot[1], "'tanh'");
  norm(&a, g, fn(g, "torch.nn.functional.dropout", tup(g, 1, N(x)), kw(g, 2, "p", Fl(0.1), "training", B(false))));
  g_assert_cmpint(a.op, ==, OX_OPID_DROPOUT);
  assert_fmt(g, a.slot[1], "0.1");
  assert_fmt(g, a.slot[2], "False");
  assert_fmt(g, a.slot[3], "False");
  norm(&a, g, fn(g, "torch.dropout", tup(g, 3, N(x), Fl(0.2), B(true)), ox_value_none()));
  assert_fmt(g, SLOT(a, "training"), "True");
  norm(&a, g, fn(g, "torch.nan_to_num", tup(g, 1, N(x)), kw(g, 1, "posinf", Fl(1e4))));
  assert_fmt(g, a.slot[1], "0.0");
  assert_fmt(g, a.slot[2], "10000.0");
  norm(&a, g, fn(g, "aten.pow.Tensor_Scalar", tup(g, 2, N(x), I(2)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_POW);
  assert_int(a.slot[1], 2);
  norm(&a, g, fn(g, "torch.relu", tup(g, 1, N(x)), ox_value_none()));
  assert_fmt(g, a.slot[1], "False");
  norm(&a, g, meth(g, "contiguous", tup(g, 1, N(x)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_CONTIGUOUS);
  norm_fails(g, fn(g, "torch.tanh", tup(g, 0), ox_value_none()), "torch.tanh: missing argument input");
  ox_graph_free(g);
}

static void test_norm_reductions_softmax(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxOpArgs a;
  norm(&a, g, fn(g, "torch.ops.aten.sum.dim_IntList", tup(g, 3, N(x), list(g, 1, I(0)), B(true)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_SUM);
  assert_fmt(g, a.slot[1], "[0]");
  assert_fmt(g, a.slot[2], "True");
  norm(&a, g, fn(g, "aten.sum.default", tup(g, 1, N(x)), ox_value_none()));
  g_assert_cmpint(a.slot[1]->kind, ==, OX_V_NONE);
  g_assert_true(a.from_default[1]);
  norm(&a, g, meth(g, "mean", tup(g, 2, N(x), I(-1)), kw(g, 1, "keepdim", B(true))));
  g_assert_cmpint(a.op, ==, OX_OPID_MEAN);
  assert_int(a.slot[1], -1);
  /* global average pooling as printed by executorch */
  norm(&a, g, fn(g, "executorch.exir.dialects.edge._ops.aten.mean.dim", tup(g, 3, N(x), list(g, 2, I(-1), I(-2)), B(true)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_MEAN);
  assert_fmt(g, a.slot[1], "[-1, -2]");
  norm(&a, g, fn(g, "torch.ops.aten._softmax.default", tup(g, 3, N(x), I(-1), B(false)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_SOFTMAX);
  assert_int(a.slot[1], -1);
  g_assert_cmpint(a.slot[2]->kind, ==, OX_V_NONE);
  norm(&a, g, fn(g, "torch.ops.aten._softmax.default", tup(g, 3, N(x), I(-1), B(true)), ox_value_none()));
  g_assert_cmpint(a.slot[2]->kind, ==, OX_V_DTYPE);
  g_assert_cmpint(a.slot[2]->u.dtype, ==, OX_DT_F32);
  norm(&a, g, fn(g, "torch.nn.functional.softmax", tup(g, 1, N(x)), kw(g, 2, "dim", I(-1), "_stacklevel", I(5))));
  assert_int(a.slot[1], -1);
  norm_fails(g, fn(g, "torch.softmax", tup(g, 1, N(x)), ox_value_none()), "torch.softmax: missing argument dim");
  ox_graph_free(g);
}

static void test_norm_linear_family(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x"), w = ph(g, "w"), b = ph(g, "b");
  OxOpArgs a;
  norm(&a, g, fn(g, "torch._C._nn.linear", tup(g, 3, N(x), N(w), N(b)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_LINEAR);
  assert_node(a.slot[2], b);
  norm(&a, g, fn(g, "torch.nn.functional.linear", tup(g, 2, N(x), N(w)), ox_value_none()));
  g_assert_cmpint(a.slot[2]->kind, ==, OX_V_NONE);
  norm(&a, g, fn(g, "torch.nn.functional.linear", tup(g, 0), kw(g, 3, "input", N(x), "weight", N(w), "bias", N(b))));
  assert_node(a.slot[0], x);
  assert_node(a.slot[1], w);
  norm(&a, g, fn(g, "torch.ops.aten.addmm.default", tup(g, 3, N(b), N(x), N(w)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_ADDMM);
  assert_int(a.slot[3], 1);
  assert_int(a.slot[4], 1);
  norm(&a, g, fn(g, "torch.addmm", tup(g, 3, N(b), N(x), N(w)), kw(g, 2, "beta", I(0), "alpha", Fl(2.0))));
  assert_node(SLOT(a, "self"), b);
  assert_int(SLOT(a, "beta"), 0);
  norm(&a, g, fn(g, "torch.baddbmm", tup(g, 3, N(b), N(x), N(w)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_BADDBMM);
  assert_node(SLOT(a, "batch2"), w);
  norm(&a, g, fn(g, "operator.matmul", tup(g, 2, N(x), N(w)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_MATMUL);
  norm(&a, g, meth(g, "bmm", tup(g, 2, N(x), N(w)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_BMM);
  norm(&a, g, fn(g, "optimus.grouped_mm", tup(g, 2, list(g, 2, N(x), N(x)), list(g, 2, N(w), N(w))), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_GROUPED_MM);
  g_assert_cmpint(a.slot[2]->kind, ==, OX_V_NONE);
  norm(&a, g, fn(g, "torch.ops.aten.native_layer_norm.default", tup(g, 5, N(x), list(g, 1, I(16)), N(w), N(b), Fl(1e-5)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_NATIVE_LAYER_NORM);
  norm(&a, g, fn(g, "aten.layer_norm.default", tup(g, 6, N(x), list(g, 1, I(16)), N(w), N(b), Fl(1e-6), B(false)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_LAYER_NORM);
  assert_fmt(g, a.slot[4], "1e-06");
  norm(&a, g, fn(g, "torch.nn.functional.layer_norm", tup(g, 2, N(x), tup(g, 1, I(16))), ox_value_none()));
  g_assert_cmpint(a.slot[2]->kind, ==, OX_V_NONE);
  assert_fmt(g, a.slot[4], "1e-05");
  norm_fails(g, fn(g, "torch.ops.aten.native_layer_norm.default", tup(g, 2, N(x), list(g, 1, I(16))), ox_value_none()),
             "torch.ops.aten.native_layer_norm.default: missing argument weight");
  ox_graph_free(g);
}

static void test_norm_embedding(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId idx = ph(g, "idx"), w = ph(g, "w"), off = ph(g, "off");
  /* F.embedding(input, weight): input is the canonical `indices` slot */
  OxOpArgs a;
  norm(&a, g, fn(g, "torch.nn.functional.embedding", tup(g, 2, N(idx), N(w)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_EMBEDDING);
  assert_node(SLOT(a, "weight"), w);
  assert_node(SLOT(a, "indices"), idx);
  g_assert_cmpint(SLOT(a, "padding_idx")->kind, ==, OX_V_NONE);
  norm(&a, g, fn(g, "torch.nn.functional.embedding", tup(g, 2, N(idx), N(w)), kw(g, 2, "sparse", B(true), "norm_type", Fl(1.0))));
  assert_node(SLOT(a, "indices"), idx);
  norm_fails(g, fn(g, "torch.nn.functional.embedding", tup(g, 2, N(idx), N(w)), kw(g, 1, "max_norm", Fl(1.0))),
             "torch.nn.functional.embedding: max_norm=1.0 is not supported");
  norm(&a, g, fn(g, "torch.ops.aten.embedding.default", tup(g, 2, N(w), N(idx)), ox_value_none()));
  assert_node(SLOT(a, "weight"), w);
  assert_int(SLOT(a, "padding_idx"), -1);
  /* DLRM: _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse) */
  norm(&a, g, fn(g, "torch.ops.aten._embedding_bag.default", tup(g, 6, N(w), N(idx), N(off), B(false), I(0), B(true)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_EMBEDDING_BAG);
  assert_fmt(g, SLOT(a, "mode"), "'sum'");
  assert_node(SLOT(a, "offsets"), off);
  assert_fmt(g, SLOT(a, "include_last_offset"), "False");
  norm(&a, g, fn(g, "aten._embedding_bag.default", tup(g, 5, N(w), N(idx), N(off), B(false), I(1)), kw(g, 1, "include_last_offset", B(true))));
  assert_fmt(g, SLOT(a, "mode"), "'mean'");
  assert_fmt(g, SLOT(a, "include_last_offset"), "True");
  norm_fails(g, fn(g, "aten._embedding_bag.default", tup(g, 5, N(w), N(idx), N(off), B(false), I(7)), ox_value_none()),
             "aten._embedding_bag.default: mode=7 is not 0, 1 or 2");
  norm(&a, g, fn(g, "torch.nn.functional.embedding_bag", tup(g, 3, N(idx), N(w), N(off)), kw(g, 1, "mode", S(g, "sum"))));
  assert_node(SLOT(a, "indices"), idx);
  assert_fmt(g, SLOT(a, "mode"), "'sum'");
  norm(&a, g, fn(g, "torch.nn.functional.embedding_bag", tup(g, 2, N(idx), N(w)), ox_value_none()));
  assert_fmt(g, SLOT(a, "mode"), "'mean'");
  ox_graph_free(g);
}

static void test_norm_conv_pool(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x"), w = ph(g, "w"), m = ph(g, "m"), v = ph(g, "v");
  OxOpArgs a;
  norm(&a, g, fn(g, "torch.conv2d", tup(g, 2, N(x), N(w)), kw(g, 2, "stride", I(2), "padding", I(1))));
  g_assert_cmpint(a.op, ==, OX_OPID_CONV2D);
  assert_int(SLOT(a, "stride"), 2);
  assert_int(SLOT(a, "padding"), 1);
  assert_int(SLOT(a, "dilation"), 1);
  assert_int(SLOT(a, "groups"), 1);
  /* convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups) */
  norm(&a, g, fn(g, "torch.ops.aten.convolution.default",
                 tup(g, 9, N(x), N(w), None(), list(g, 2, I(1), I(1)), list(g, 2, I(0), I(0)), list(g, 2, I(1), I(1)),
                     B(false), list(g, 2, I(0), I(0)), I(1)),
                 ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_CONV2D);
  assert_fmt(g, SLOT(a, "stride"), "[1, 1]");
  assert_int(SLOT(a, "groups"), 1);
  norm_fails(g, fn(g, "torch.ops.aten.convolution.default",
                   tup(g, 9, N(x), N(w), None(), list(g, 2, I(1), I(1)), list(g, 2, I(0), I(0)),
                       list(g, 2, I(1), I(1)), B(true), list(g, 2, I(0), I(0)), I(1)),
                   ox_value_none()),
             "torch.ops.aten.convolution.default: transposed=True is not supported");
  norm_fails(g, fn(g, "aten.convolution.default",
                   tup(g, 9, N(x), N(w), None(), list(g, 2, I(1), I(1)), list(g, 2, I(0), I(0)),
                       list(g, 2, I(1), I(1)), B(false), list(g, 2, I(1), I(0)), I(1)),
                   ox_value_none()),
             "aten.convolution.default: output_padding=[1, 0] is not supported");
  /* legit_no_training(input, weight, bias, running_mean, running_var, momentum, eps) */
  norm(&a, g, fn(g, "torch.ops.aten._native_batch_norm_legit_no_training.default",
                 tup(g, 7, N(x), N(w), None(), N(m), N(v), Fl(0.1), Fl(1e-5)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_BATCH_NORM);
  assert_node(SLOT(a, "running_mean"), m);
  assert_node(SLOT(a, "running_var"), v);
  assert_node(SLOT(a, "weight"), w);
  assert_fmt(g, SLOT(a, "training"), "False");
  norm(&a, g, fn(g, "torch.nn.functional.batch_norm", tup(g, 3, N(x), N(m), N(v)), kw(g, 1, "eps", Fl(1e-3))));
  assert_node(SLOT(a, "running_mean"), m);
  g_assert_cmpint(SLOT(a, "weight")->kind, ==, OX_V_NONE);
  assert_fmt(g, SLOT(a, "eps"), "0.001");
  norm(&a, g, fn(g, "torch.nn.functional.max_pool2d", tup(g, 2, N(x), I(3)), kw(g, 2, "stride", I(2), "padding", I(1))));
  g_assert_cmpint(a.op, ==, OX_OPID_MAX_POOL2D);
  assert_int(SLOT(a, "kernel_size"), 3);
  assert_int(SLOT(a, "stride"), 2);
  norm_fails(g, fn(g, "torch.nn.functional.max_pool2d", tup(g, 2, N(x), I(3)), kw(g, 1, "return_indices", B(true))),
             "torch.nn.functional.max_pool2d: return_indices=True is not supported");
  norm(&a, g, fn(g, "aten.max_pool2d_with_indices.default", tup(g, 4, N(x), list(g, 2, I(3), I(3)), list(g, 2, I(2), I(2)), list(g, 2, I(1), I(1))), ox_value_none()));
  assert_fmt(g, SLOT(a, "kernel_size"), "[3, 3]");
  assert_int(SLOT(a, "dilation"), 1);
  norm(&a, g, fn(g, "torch.ops.aten._adaptive_avg_pool2d.default", tup(g, 2, N(x), list(g, 2, I(1), I(1))), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_ADAPTIVE_AVG_POOL2D);
  assert_node(SLOT(a, "input"), x);
  ox_graph_free(g);
}

static void test_norm_modules(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxOpArgs a;
  norm(&a, g, mod(g, "layers.0.fc", "torch.nn.Linear", tup(g, 1, N(x)),
                           kw(g, 3, "in_features", I(16), "out_features", I(32), "bias", B(false))));
  g_assert_cmpint(a.op, ==, OX_OPID_LINEAR);
  g_assert_cmpstr(a.module_path, ==, "layers.0.fc");
  assert_node(a.slot[0], x);
  g_assert_true(ox_op_is_module_param(a.slot[1]));
  g_assert_cmpint(a.slot[2]->kind, ==, OX_V_NONE);
  norm(&a, g, mod(g, "fc", "torch.nn.Linear", tup(g, 1, N(x)), kw(g, 2, "in_features", I(16), "out_features", I(32))));
  g_assert_true(ox_op_is_module_param(a.slot[2]));
  norm(&a, g, mod(g, "conv1", "torch.nn.Conv2d", tup(g, 1, N(x)),
                  kw(g, 5, "in_channels", I(3), "out_channels", I(64), "kernel_size", tup(g, 2, I(7), I(7)), "stride",
                     tup(g, 2, I(2), I(2)), "padding", tup(g, 2, I(3), I(3)))));
  g_assert_cmpint(a.op, ==, OX_OPID_CONV2D);
  assert_fmt(g, SLOT(a, "stride"), "(2, 2)");
  assert_int(SLOT(a, "groups"), 1);
  g_assert_true(ox_op_is_module_param(SLOT(a, "weight")));
  norm_fails(g, mod(g, "conv2", "torch.nn.Conv2d", tup(g, 1, N(x)), kw(g, 1, "padding_mode", S(g, "reflect"))),
             "torch.nn.Conv2d: padding_mode='reflect' is not supported");
  norm(&a, g, mod(g, "bn1", "torch.nn.BatchNorm2d", tup(g, 1, N(x)), kw(g, 2, "num_features", I(64), "eps", Fl(1e-5))));
  g_assert_cmpint(a.op, ==, OX_OPID_BATCH_NORM);
  g_assert_true(ox_op_is_module_param(SLOT(a, "running_mean")));
  g_assert_true(ox_op_is_module_param(SLOT(a, "weight")));
  assert_fmt(g, SLOT(a, "training"), "False");
  norm(&a, g, mod(g, "bn2", "torch.nn.BatchNorm2d", tup(g, 1, N(x)), kw(g, 1, "affine", B(false))));
  g_assert_cmpint(SLOT(a, "weight")->kind, ==, OX_V_NONE);
  g_assert_cmpint(SLOT(a, "bias")->kind, ==, OX_V_NONE);
  norm(&a, g, mod(g, "ln", "torch.nn.LayerNorm", tup(g, 1, N(x)), kw(g, 2, "normalized_shape", tup(g, 1, I(16)), "eps", Fl(1e-6))));
  g_assert_cmpint(a.op, ==, OX_OPID_LAYER_NORM);
  assert_fmt(g, SLOT(a, "normalized_shape"), "(16,)");
  norm_fails(g, mod(g, "ln2", "torch.nn.LayerNorm", tup(g, 1, N(x)), ox_value_none()),
             "torch.nn.LayerNorm: missing argument normalized_shape");
  norm(&a, g, mod(g, "pool", "torch.nn.MaxPool2d", tup(g, 1, N(x)), kw(g, 3, "kernel_size", I(3), "stride", I(2), "padding", I(1))));
  assert_int(SLOT(a, "kernel_size"), 3);
  norm(&a, g, mod(g, "avg", "torch.nn.AdaptiveAvgPool2d", tup(g, 1, N(x)), kw(g, 1, "output_size", tup(g, 2, I(1), I(1)))));
  assert_fmt(g, SLOT(a, "output_size"), "(1, 1)");
  norm(&a, g, mod(g, "flat", "torch.nn.Flatten", tup(g, 1, N(x)), ox_value_none()));
  assert_int(SLOT(a, "start_dim"), 1);
  norm(&a, g, mod(g, "drop", "torch.nn.Dropout", tup(g, 1, N(x)), kw(g, 1, "p", Fl(0.25))));
  assert_fmt(g, SLOT(a, "training"), "False");
  assert_fmt(g, SLOT(a, "p"), "0.25");
  norm(&a, g, mod(g, "act", "torch.nn.ReLU", tup(g, 1, N(x)), kw(g, 1, "inplace", B(true))));
  assert_fmt(g, SLOT(a, "inplace"), "True");
  norm(&a, g, mod(g, "sm", "torch.nn.Softmax", tup(g, 1, N(x)), kw(g, 1, "dim", I(-1))));
  assert_int(SLOT(a, "dim"), -1);
  norm(&a, g, mod(g, "emb", "torch.nn.EmbeddingBag", tup(g, 2, N(x), N(x)), kw(g, 3, "num_embeddings", I(10), "embedding_dim", I(4), "mode", S(g, "sum"))));
  g_assert_cmpint(a.op, ==, OX_OPID_EMBEDDING_BAG);
  g_assert_true(ox_op_is_module_param(SLOT(a, "weight")));
  assert_node(SLOT(a, "offsets"), x);
  ox_graph_free(g);
}

static void test_norm_to_and_size(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxOpArgs a;
  norm(&a, g, meth(g, "to", tup(g, 2, N(x), ox_value_dtype(OX_DT_BF16)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_TO);
  g_assert_cmpint(a.slot[1]->u.dtype, ==, OX_DT_BF16);
  norm(&a, g, meth(g, "to", tup(g, 2, N(x), ox_graph_value_str(g, OX_V_DEVICE, "cuda:0")), ox_value_none()));
  g_assert_cmpint(a.slot[1]->kind, ==, OX_V_NONE);
  norm(&a, g, meth(g, "to", tup(g, 3, N(x), ox_graph_value_str(g, OX_V_DEVICE, "cpu"), ox_value_dtype(OX_DT_F16)), ox_value_none()));
  g_assert_cmpint(a.slot[1]->u.dtype, ==, OX_DT_F16);
  norm(&a, g, meth(g, "to", tup(g, 1, N(x)), kw(g, 2, "dtype", ox_value_dtype(OX_DT_F64), "non_blocking", B(true))));
  g_assert_cmpint(a.slot[1]->u.dtype, ==, OX_DT_F64);
  norm_fails(g, meth(g, "to", tup(g, 2, N(x), N(x)), ox_value_none()),
             "to: argument %x is not supported (only dtype/device conversion)");
  norm_fails(g, meth(g, "to", tup(g, 1, N(x)), kw(g, 1, "layout", S(g, "strided"))), "to: unexpected keyword argument 'layout'");
  norm(&a, g, meth(g, "half", tup(g, 1, N(x)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_TO);
  g_assert_cmpint(a.slot[1]->u.dtype, ==, OX_DT_F16);
  norm(&a, g, fn(g, "torch.ops.aten._to_copy.default", tup(g, 1, N(x)), kw(g, 2, "dtype", ox_value_dtype(OX_DT_F32), "layout", ox_graph_value_str(g, OX_V_ENUM, "torch.strided"))));
  g_assert_cmpint(a.slot[1]->u.dtype, ==, OX_DT_F32);
  norm(&a, g, fn(g, "torch.ops.prims.convert_element_type.default", tup(g, 2, N(x), ox_value_dtype(OX_DT_F16)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_TO);
  norm(&a, g, meth(g, "size", tup(g, 1, N(x)), ox_value_none()));
  g_assert_cmpint(a.op, ==, OX_OPID_SIZE);
  g_assert_cmpint(a.slot[1]->kind, ==, OX_V_NONE);
  norm(&a, g, fn(g, "torch.ops.aten.sym_size.int", tup(g, 2, N(x), I(0)), ox_value_none()));
  assert_int(a.slot[1], 0);
  ox_graph_free(g);
}

static void test_norm_unknown(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  norm_fails(g, fn(g, "torch.ops.aten.var_mean.correction", tup(g, 1, N(x)), ox_value_none()),
             "unknown op call_function[target=torch.ops.aten.var_mean.correction]");
  norm_fails(g, x, "unknown op placeholder[target=x]");
  OxNodeId m = ox_graph_add_node(g, OX_OP_CALL_MODULE, NULL, "layer1", tup(g, 1, N(x)), ox_value_none());
  norm_fails(g, m, "unknown op call_module[target=?]");
  ox_graph_free(g);
}

static gpointer thread_lookup(gpointer data) {
  (void)data;
  size_t n;
  const OxSpelling *sp = ox_op_spellings(&n);
  return GSIZE_TO_POINTER(n && sp ? n : 0);
}

/* First use from several threads at once: pthread_once makes them all see one table. */
static void test_threaded_init(void) {
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    return;
  }
  GThread *t[4];
  for (int i = 0; i < 4; i++) t[i] = g_thread_new("ops", thread_lookup, NULL);
  gsize first = 0;
  for (int i = 0; i < 4; i++) {
    gsize n = GPOINTER_TO_SIZE(g_thread_join(t[i]));
    g_assert_cmpuint(n, >, 0);
    if (!first) first = n;
    g_assert_cmpuint(n, ==, first);
  }
}

/* The op index (g->opix) follows the graph through adds, erases, kwargs changes and rollback,
 * and a change made behind the graph's back is caught by the check until marked stale. */
static void test_op_index(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ox_graph_add_node(g, OX_OP_PLACEHOLDER, "x", "x", ox_value_none(), ox_value_none());
  OxValue a[1] = {ox_value_node(x)};
  OxNodeId t = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "t", "torch.tanh", ox_graph_value_seq(g, OX_V_TUPLE, a, 1),
                                 ox_value_none());
  OxNodeId m = ox_graph_add_node(g, OX_OP_CALL_METHOD, "m", "add_", ox_graph_value_seq(g, OX_V_TUPLE, a, 1),
                                 ox_value_none());
  OxNodeId u = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, "u", "my.unknown_fn", ox_graph_value_seq(g, OX_V_TUPLE, a, 1),
                                 ox_value_none());
  g_assert_cmpuint(ox_op_index(g, x), ==, OX_OPIX_NOT_CALL);
  const OxSpelling *sp = ox_opix_spelling(ox_op_index(g, t));
  g_assert_nonnull(sp);
  g_assert_cmpint(sp->op, ==, ox_op_of_node(g, &g->nodes[t], NULL));
  g_assert_true(ox_op_index(g, m) & OX_OPIX_MUTATING);
  g_assert_false(ox_op_index(g, t) & OX_OPIX_MUTATING);
  g_assert_cmpuint(ox_op_index(g, u), ==, OX_OPIX_UNKNOWN_CALL + 0);
  g_assert_cmpuint(ox_op_index(g, 0), ==, OX_OPIX_ERASED);
  g_assert_cmpuint(ox_op_index(g, 999), ==, OX_OPIX_ERASED);
  /* an out= kwarg makes a call mutating; a rollback takes it back */
  ox_graph_txn_begin(g);
  const char *k[1] = {ox_graph_intern(g, "out")};
  OxValue kv[1] = {ox_value_node(x)};
  ox_graph_set_kwargs(g, u, ox_graph_value_dict(g, k, kv, 1));
  g_assert_true(ox_op_index(g, u) & OX_OPIX_MUTATING);
  g_assert_true(ox_graph_erase(g, t));
  g_assert_cmpuint(ox_op_index(g, t), ==, OX_OPIX_ERASED);
  ox_graph_txn_rollback(g);
  g_assert_cmpuint(ox_op_index(g, u), ==, OX_OPIX_UNKNOWN_CALL + 0);
  g_assert_nonnull(ox_opix_spelling(ox_op_index(g, t)));
  g_assert_cmpuint(ox_op_index_check(g), ==, 0);
  /* behind the graph's back: detected, until marked stale */
  g->nodes[u].target = ox_graph_intern(g, "torch.sigmoid");
  g_assert_cmpuint(ox_op_index_check(g), ==, 1);
  ox_graph_opix_stale(g, u);
  g_assert_cmpuint(ox_op_index_check(g), ==, 0);
  g_assert_cmpint(ox_opix_spelling(ox_op_index(g, u))->op, ==, ox_op_by_name("sigmoid"));
  ox_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/ops/threaded-init", test_threaded_init);
  g_test_add_func("/engine/ops/op-index", test_op_index);
  g_test_add_func("/engine/ops/every-spelling-resolves", test_every_spelling_resolves);
  g_test_add_func("/engine/ops/every-op-has-rule-and-spelling", test_every_op_has_rule_and_spelling);
  g_test_add_func("/engine/ops/canonical-schema", test_canonical_schema);
  g_test_add_func("/engine/ops/levels-and-prefixes", test_spelling_levels_and_prefixes);
  g_test_add_func("/engine/ops/outputs", test_outputs);
  g_test_add_func("/engine/ops/normalize/split", test_norm_split);
  g_test_add_func("/engine/ops/normalize/chunk-unbind-cat-stack", test_norm_chunk_unbind_cat_stack);
  g_test_add_func("/engine/ops/normalize/getitem-select-slice", test_norm_getitem_select_slice);
  g_test_add_func("/engine/ops/normalize/views-varargs", test_norm_views_varargs);
  g_test_add_func("/engine/ops/normalize/pointwise", test_norm_pointwise);
  g_test_add_func("/engine/ops/normalize/reductions-softmax", test_norm_reductions_softmax);
  g_test_add_func("/engine/ops/normalize/linear-family", test_norm_linear_family);
  g_test_add_func("/engine/ops/normalize/embedding", test_norm_embedding);
  g_test_add_func("/engine/ops/normalize/conv-pool", test_norm_conv_pool);
  g_test_add_func("/engine/ops/normalize/modules", test_norm_modules);
  g_test_add_func("/engine/ops/normalize/to-size", test_norm_to_and_size);
  g_test_add_func("/engine/ops/normalize/unknown", test_norm_unknown);
  return g_test_run();
}
