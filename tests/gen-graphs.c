/* gen-graphs.c - the random graph generator shared by the property tests (test-property.c,
 * test-trace.c) and the rule dogfood test (test-rules.c): parallel towers between split and cat,
 * split/cat/stack networks, pointwise chains; pre-grad torch targets or (one graph in
 * three) post-grad aten targets. Deterministic for a seed. Also how many graphs the heavier
 * property tests run (gen_graph_count). */
#include "gen-graphs.h"

#include <stdio.h>
#include <stdlib.h>

#include "ops/ox_shape.h"

typedef struct {
  OxGraph *g;
  GRand *r;
  bool post; /* aten targets */
  int n_w;   /* weights created */
} Gen;

static OxValue tup(OxGraph *g, uint32_t n, const OxValue *items) {
  return ox_graph_value_seq(g, OX_V_TUPLE, items, n);
}

static OxValue ints(OxGraph *g, uint32_t n, const int64_t *v) {
  OxValue items[64];
  for (uint32_t i = 0; i < n; i++)
    items[i] = ox_value_int(v[i]);
  return ox_graph_value_seq(g, OX_V_LIST, items, n);
}

static OxNodeId ph(Gen *s, const char *name, int32_t rank, const int64_t *shape) {
  OxNodeId id = ox_graph_add_node(s->g, OX_OP_PLACEHOLDER, name, name, ox_value_none(), ox_value_none());
  OxTensorMeta *t = ox_graph_tensor_meta_new(s->g, OX_DT_F32, rank);
  for (int32_t i = 0; i < rank; i++)
    t->shape[i].v = shape[i];
  OxMeta m = {.kind = OX_META_TENSOR, .n = 1, .t = t};
  ox_graph_set_meta(s->g, id, &m);
  return id;
}

static OxNodeId call(Gen *s, const char *target, uint32_t n, const OxValue *args) {
  return ox_graph_add_node(s->g, OX_OP_CALL_FUNCTION, NULL, target, tup(s->g, n, args), ox_value_none());
}

static OxNodeId call_kw(Gen *s, const char *target, uint32_t n, const OxValue *args, const char *key,
                        OxValue kv) {
  const char *keys[1] = {key};
  return ox_graph_add_node(s->g, OX_OP_CALL_FUNCTION, NULL, target, tup(s->g, n, args),
                           ox_graph_value_dict(s->g, keys, &kv, 1));
}

static OxNodeId getitem(Gen *s, OxNodeId src, int64_t k) {
  OxValue a[2] = {ox_value_node(src), ox_value_int(k)};
  return call(s, "operator.getitem", 2, a);
}

/* [B, W] -> linear with a fresh weight [O, W] and bias [O] */
static OxNodeId linear(Gen *s, OxNodeId x, int64_t w_in, int64_t out) {
  char wn[32], bn[32];
  snprintf(wn, sizeof wn, "w%d", s->n_w);
  snprintf(bn, sizeof bn, "b%d", s->n_w++);
  int64_t ws[2] = {out, w_in}, bs[1] = {out};
  OxNodeId w = ph(s, wn, 2, ws), b = ph(s, bn, 1, bs);
  if (s->post) {
    OxValue ta[1] = {ox_value_node(w)};
    OxNodeId t = call(s, "torch.ops.aten.t.default", 1, ta);
    OxValue a[3] = {ox_value_node(b), ox_value_node(x), ox_value_node(t)};
    return call(s, "torch.ops.aten.addmm.default", 3, a);
  }
  OxValue a[3] = {ox_value_node(x), ox_value_node(w), ox_value_node(b)};
  return call(s, "torch.nn.functional.linear", 3, a);
}

/* one pointwise / norm op keeping the shape [B, W] */
static OxNodeId tower_op(Gen *s, OxNodeId x, int64_t w) {
  int k = g_rand_int_range(s->r, 0, s->post ? 5 : 8);
  OxValue a1[1] = {ox_value_node(x)};
  if (s->post) {
    static const char *un[] = {"torch.ops.aten.tanh.default", "torch.ops.aten.sigmoid.default",
                               "torch.ops.aten.relu.default"};
    if (k < 3) return call(s, un[k], 1, a1);
    OxValue a2[2] = {ox_value_node(x), ox_value_float(k == 3 ? 0.5 : 1.25)};
    return call(s, k == 3 ? "torch.ops.aten.mul.Tensor" : "torch.ops.aten.add.Tensor", 2, a2);
  }
  switch (k) {
  case 0:
    return call(s, "torch.tanh", 1, a1);
  case 1:
    return call(s, "torch.sigmoid", 1, a1);
  case 2:
    return call(s, "torch.nn.functional.relu", 1, a1);
  case 3:
    return call(s, "torch.detach", 1, a1);
  case 4: {
    int64_t ns[1] = {w};
    OxValue a[2] = {ox_value_node(x), ints(s->g, 1, ns)};
    return call(s, "torch.nn.functional.layer_norm", 2, a);
  }
  case 5: {
    OxValue a[3] = {ox_value_node(x), ox_value_float(-0.5), ox_value_float(0.5)};
    return call(s, "torch.clamp", 3, a);
  }
  case 6:
    return call_kw(s, "torch.nn.functional.dropout", 1, a1, "training", ox_value_bool(false));
  default: {
    OxValue a[2] = {ox_value_node(x), ox_value_float(2.0)};
    return call(s, "operator.mul", 2, a);
  }
  }
}

static OxNodeId split(Gen *s, OxNodeId x, int64_t size, int64_t dim, int n_sections,
                      const int64_t *sections) {
  if (s->post) {
    OxValue a[3] = {ox_value_node(x), ints(s->g, (uint32_t)n_sections, sections), ox_value_int(dim)};
    return call(s, "torch.ops.aten.split_with_sizes.default", 3, a);
  }
  OxValue a[2] = {ox_value_node(x), ox_value_int(size)};
  return call_kw(s, "torch.split", 2, a, "dim", ox_value_int(dim));
}

static OxNodeId cat(Gen *s, const OxNodeId *xs, uint32_t n, int64_t dim) {
  OxValue items[64];
  for (uint32_t i = 0; i < n; i++)
    items[i] = ox_value_node(xs[i]);
  OxValue a[2] = {ox_graph_value_seq(s->g, OX_V_LIST, items, n), ox_value_int(dim)};
  return call(s, s->post ? "torch.ops.aten.cat.default" : "torch.cat", 2, a);
}

/* Family 1: parallel towers between split and cat, one or two layers. */
static OxNodeId gen_towers(Gen *s, OxNodeId x, int64_t B, int64_t T, int64_t D) {
  (void)B;
  int layers = g_rand_int_range(s->r, 1, 3);
  OxNodeId cur = x;
  int64_t width = D;
  for (int l = 0; l < layers; l++) {
    int64_t sec[64];
    for (int i = 0; i < T; i++)
      sec[i] = width;
    OxNodeId sp = split(s, cur, width, 1, (int)T, sec);
    OxNodeId outs[64];
    int64_t out_w = g_rand_boolean(s->r) ? width : width + 2;
    for (int i = 0; i < T; i++) {
      OxNodeId h = getitem(s, sp, i);
      if (g_rand_int_range(s->r, 0, 4))
        h = linear(s, h, width, out_w);
      else if (out_w != width)
        h = linear(s, h, width, out_w);
      int ops = g_rand_int_range(s->r, 0, 3);
      for (int k = 0; k < ops; k++)
        h = tower_op(s, h, out_w);
      outs[i] = h;
    }
    cur = cat(s, outs, (uint32_t)T, 1);
    width = out_w;
  }
  return cur;
}

/* Family 2b (pre-grad): a piece of a split split again (merge_splits_pass), a piece split
 * into one section (remove_split_with_size_one_pass), and a cat of every piece in order
 * (mutate_cat_pass once the splits are merged), some pieces through tanh. */
static OxNodeId gen_nested(Gen *s, OxNodeId x, int64_t B, int64_t T, int64_t D) {
  (void)B;
  int64_t sec[64] = {0};
  for (int i = 0; i < T; i++)
    sec[i] = D;
  OxNodeId sp = split(s, x, D, 1, (int)T, sec);
  OxNodeId items[130];
  uint32_t n = 0;
  for (int i = 0; i < T; i++) {
    OxNodeId g = getitem(s, sp, i);
    if (i == 0 && D >= 2) {
      int64_t inner[2] = {1, D - 1};
      OxValue a[2] = {ox_value_node(g), ints(s->g, 2, inner)};
      OxNodeId sp2 = call_kw(s, "torch.split", 2, a, "dim", ox_value_int(1));
      items[n++] = getitem(s, sp2, 0);
      items[n++] = getitem(s, sp2, 1);
    } else if (i == 1) {
      OxValue a[2] = {ox_value_node(g), ox_value_int(D)};
      OxNodeId sp1 = call_kw(s, "torch.split", 2, a, "dim", ox_value_int(1));
      OxValue t[1] = {ox_value_node(getitem(s, sp1, 0))};
      items[n++] = call(s, "torch.tanh", 1, t);
    } else {
      items[n++] = g;
    }
  }
  return cat(s, items, n, 1);
}

/* Family 2: split/cat network: cat of a random run of getitems, possibly all in order,
 * possibly with another tensor; optionally a nested split. */
static OxNodeId gen_splitcat(Gen *s, OxNodeId x, int64_t B, int64_t T, int64_t D) {
  int64_t sec[64] = {0};
  for (int i = 0; i < T; i++)
    sec[i] = D;
  OxNodeId sp = split(s, x, D, 1, (int)T, sec);
  OxNodeId items[64];
  for (int i = 0; i < T; i++)
    items[i] = getitem(s, sp, i);
  int mode = g_rand_int_range(s->r, 0, 4);
  if (mode == 0) return cat(s, items, (uint32_t)T, 1); /* the identity network */
  if (mode == 1) {                                     /* a consecutive run */
    int a = g_rand_int_range(s->r, 0, (int)T - 1);
    int b = g_rand_int_range(s->r, a + 1, (int)T + 1);
    OxNodeId c = cat(s, items + a, (uint32_t)(b - a), 1);
    OxValue a1[1] = {ox_value_node(c)};
    return call(s, s->post ? "torch.ops.aten.relu.default" : "torch.relu", 1, a1);
  }
  if (mode == 2 && !s->post) { /* stack along a new dim, then sum it away */
    OxValue list[64];
    for (int i = 0; i < T; i++)
      list[i] = ox_value_node(items[i]);
    OxValue a[2] = {ox_graph_value_seq(s->g, OX_V_LIST, list, (uint32_t)T), ox_value_int(0)};
    OxNodeId st = call(s, "torch.stack", 2, a);
    OxValue a2[2] = {ox_value_node(st), ox_value_int(0)};
    return call(s, "torch.sum", 2, a2);
  }
  /* shuffled halves with an extra input */
  int64_t es[2] = {B, D};
  char nm[32];
  snprintf(nm, sizeof nm, "extra%d", s->n_w++);
  OxNodeId extra = ph(s, nm, 2, es);
  OxNodeId order[65];
  uint32_t n = 0;
  order[n++] = extra;
  for (int i = (int)T / 2; i < T; i++)
    order[n++] = items[i];
  for (int i = 0; i < T / 2; i++)
    order[n++] = items[i];
  return cat(s, order, n, 1);
}

uint32_t gen_graph_count(uint32_t default_n) {
  const char *env_n = g_getenv("OPTIMUS_PROPERTY_GRAPHS");
  return env_n ? (uint32_t)atoi(env_n) / 4 : default_n;
}

OxGraph *gen_graph(uint64_t seed, bool *post_out) {
  Gen s = {ox_graph_new(), g_rand_new_with_seed((guint32)seed ^ (guint32)(seed >> 32)), false, 0};
  s.post = g_rand_int_range(s.r, 0, 3) == 0;
  int64_t B = g_rand_int_range(s.r, 2, 5), T = g_rand_int_range(s.r, 2, 8), D = g_rand_int_range(s.r, 2, 6);
  int64_t xs[2] = {B, T * D};
  OxNodeId x = ph(&s, "x", 2, xs);
  OxNodeId out;
  int fam = g_rand_int_range(s.r, 0, 3);
  if (fam == 0)
    out = gen_towers(&s, x, B, T, D);
  else if (fam == 1 && !s.post && seed % 3 == 0) /* without a draw: other seeds keep their graphs */
    out = gen_nested(&s, x, B, T, D);
  else if (fam == 1)
    out = gen_splitcat(&s, x, B, T, D);
  else {
    /* a chain of pointwise ops, then towers */
    OxNodeId h = x;
    int k = g_rand_int_range(s.r, 1, 4);
    for (int i = 0; i < k; i++)
      h = tower_op(&s, h, T * D);
    out = gen_towers(&s, h, B, T, D);
  }
  OxValue oa[1] = {ox_value_node(out)};
  ox_graph_add_node(s.g, OX_OP_OUTPUT, "output", "output", tup(s.g, 1, oa), ox_value_none());
  g_rand_free(s.r);
  *post_out = s.post;
  OxShapeStats st;
  ox_shape_infer_graph(s.g, NULL, &st);
  if (st.unknown || st.inconsistent) {
    ox_graph_free(s.g);
    return NULL;
  }
  return s.g;
}
