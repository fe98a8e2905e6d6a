/* gen-recsys - generate a recommendation-style FX graph for benchmarks.
 *
 * The shape is the one Optimus targets (spec section 6, golden cases G5-G8): an input
 * x: f32[B, T*D] is split into T towers of width D; each tower runs linear -> layer_norm ->
 * tanh/relu/sigmoid (sometimes followed by a second linear), neighbouring towers are
 * sometimes combined with add/mul, and cat(dim=1) joins the towers into the next layer's
 * input. Many layers make the graph deep as well as wide. A short pointwise head after
 * the last cat pads the graph so it has exactly N nodes (output node included).
 *
 * --level pre writes torch-level targets (torch.split, torch.nn.functional.linear, ...),
 * --level post writes the aten-level graph an AOT/post-grad dump shows (split_with_sizes,
 * t + addmm, native_layer_norm + getitem, ...). Every node carries tensor meta (shape,
 * strides, dtype f32, device "cpu"); split and native_layer_norm carry tuple meta.
 *
 * The graph depends only on (N, seed, level): the random choices come from a local
 * splitmix64 stream, never from time or addresses. The graph is checked with
 * ox_graph_verify before it is written; a graph the verifier rejects is not written.
 *
 * Usage: gen-recsys --nodes N [--seed S] [--level pre|post] -o OUT(.txt|.json)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_graph.h"
#include "load/ox_load.h"
#include "write/ox_write.h"

enum { BATCH = 64 };
enum { MAX_TOWERS = 128 };

typedef struct Rng {
  uint64_t s;
} Rng;

/* splitmix64: tiny, good enough for structural choices, identical on every platform. */
static uint64_t rng_next(Rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint32_t rng_below(Rng *r, uint32_t n) { return (uint32_t)(rng_next(r) % n); }

typedef struct Gen {
  OxGraph *g;
  Rng rng;
  bool post;              /* aten-level targets */
  int64_t d;              /* tower width */
  uint32_t towers;        /* towers per full layer */
  OxNodeId last_input;    /* last placeholder: new placeholders go right after it */
  uint32_t n_params;      /* AOT-style primals_N counter for post-level placeholders */
  bool flat;              /* --shape flat: no module paths in any name, a hub used by many towers */
  uint32_t n_flat;        /* counter for flat parameter names */
  OxNodeId hub;           /* --shape flat: the scale every fourth tower multiplies by */
} Gen;

/* ------------------------------------------------------------------ meta */

static OxMeta meta_tensor2(Gen *G, int64_t rows, int64_t cols, int64_t s0, int64_t s1,
                           OxTensorMeta *slot) {
  OxTensorMeta *t = slot ? slot : ox_graph_tensor_meta_new(G->g, OX_DT_F32, 2);
  t->dtype = OX_DT_F32;
  t->rank = 2;
  if (!t->shape) t->shape = ox_graph_alloc(G->g, 2 * sizeof(OxDim));
  t->stride = ox_graph_alloc(G->g, 2 * sizeof(OxDim));
  t->has_stride = true;
  t->shape[0].v = rows;
  t->shape[1].v = cols;
  t->stride[0].v = s0;
  t->stride[1].v = s1;
  t->device = ox_graph_intern(G->g, "cpu");
  OxMeta m = {0};
  m.kind = OX_META_TENSOR;
  m.n = 1;
  m.t = t;
  return m;
}

static void set_meta_2d(Gen *G, OxNodeId id, int64_t rows, int64_t cols, int64_t s0, int64_t s1) {
  OxMeta m = meta_tensor2(G, rows, cols, s0, s1, NULL);
  ox_graph_set_meta(G->g, id, &m);
}

static void set_meta_contig(Gen *G, OxNodeId id, int64_t rows, int64_t cols) {
  set_meta_2d(G, id, rows, cols, cols, 1);
}

static void set_meta_1d(Gen *G, OxNodeId id, int64_t len) {
  OxTensorMeta *t = ox_graph_tensor_meta_new(G->g, OX_DT_F32, 1);
  t->shape[0].v = len;
  t->stride = ox_graph_alloc(G->g, sizeof(OxDim));
  t->stride[0].v = 1;
  t->has_stride = true;
  t->device = ox_graph_intern(G->g, "cpu");
  OxMeta m = {0};
  m.kind = OX_META_TENSOR;
  m.n = 1;
  m.t = t;
  ox_graph_set_meta(G->g, id, &m);
}

/* Tuple meta: n tensors, each 2-D with the given shape and strides. */
static void set_meta_tuple(Gen *G, OxNodeId id, uint32_t n, const int64_t (*shapes)[4]) {
  OxTensorMeta *ts = ox_graph_alloc(G->g, n * sizeof *ts);
  for (uint32_t i = 0; i < n; i++)
    meta_tensor2(G, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], &ts[i]);
  OxMeta m = {0};
  m.kind = OX_META_TUPLE;
  m.n = n;
  m.t = ts;
  ox_graph_set_meta(G->g, id, &m);
}

/* ------------------------------------------------------------------ values */

static OxValue tup(Gen *G, uint32_t n, const OxValue *items) {
  return ox_graph_value_seq(G->g, OX_V_TUPLE, items, n);
}

static OxValue node_v(OxNodeId id) { return ox_value_node(id); }

static OxValue kw1(Gen *G, const char *k, OxValue v) {
  const char *keys[1] = {k};
  return ox_graph_value_dict(G->g, keys, &v, 1);
}

static OxNodeId call(Gen *G, const char *target, uint32_t n, const OxValue *args, OxValue kwargs) {
  return ox_graph_add_node(G->g, OX_OP_CALL_FUNCTION, NULL, target, tup(G, n, args), kwargs);
}

static OxNodeId call1(Gen *G, const char *target, OxNodeId a) {
  OxValue v = node_v(a);
  return call(G, target, 1, &v, ox_value_none());
}

/* ------------------------------------------------------------------ parameters */

/* A weight: a placeholder grouped with the other inputs at the top (AOT/export style,
 * always for post level), or a get_attr at its point of use (Dynamo pre-grad style). */
static OxNodeId param(Gen *G, bool as_attr, const char *path) {
  OxNodeId id;
  char flat[64];
  if (G->flat) {
    /* names that say nothing about modules: w_17, b_17 (get_attr) or arg_17 (placeholder) */
    const char *last = strrchr(path, '.');
    snprintf(flat, sizeof flat, "%s_%u", last && strcmp(last, ".bias") == 0 ? "b" : "w", ++G->n_flat);
    path = flat;
    if (!as_attr && !G->post) {
      char name[64];
      snprintf(name, sizeof name, "arg_%u", G->n_flat);
      id = ox_graph_insert_after(G->g, G->last_input, OX_OP_PLACEHOLDER, name, name, ox_value_none(), ox_value_none());
      G->last_input = id;
      return id;
    }
  }
  if (as_attr) {
    id = ox_graph_add_node(G->g, OX_OP_GET_ATTR, NULL, path, ox_value_none(), ox_value_none());
  } else {
    char name[64];
    if (G->post)
      snprintf(name, sizeof name, "primals_%u", ++G->n_params);
    else {
      /* export style: p_layers_0_towers_3_linear_weight */
      size_t o = 0;
      name[o++] = 'p';
      name[o++] = '_';
      for (const char *c = path; *c && o + 1 < sizeof name; c++) name[o++] = *c == '.' ? '_' : *c;
      name[o] = 0;
    }
    id = ox_graph_insert_after(G->g, G->last_input, OX_OP_PLACEHOLDER, name, name, ox_value_none(),
                               ox_value_none());
    G->last_input = id;
  }
  return id;
}

static OxNodeId weight2d(Gen *G, bool as_attr, const char *path) {
  OxNodeId w = param(G, as_attr, path);
  set_meta_contig(G, w, G->d, G->d);
  return w;
}

static OxNodeId weight1d(Gen *G, bool as_attr, const char *path) {
  OxNodeId w = param(G, as_attr, path);
  set_meta_1d(G, w, G->d);
  return w;
}

/* ------------------------------------------------------------------ towers */

typedef struct TowerPlan {
  uint8_t act;       /* 0 tanh, 1 relu, 2 sigmoid */
  bool second;       /* a second linear after the activation */
  uint8_t combine;   /* 0 none, 1 add with the previous tower, 2 mul with it */
  bool scaled;       /* --shape flat: multiplied by the hub scale */
} TowerPlan;

static TowerPlan plan_tower(Gen *G, uint32_t i) {
  TowerPlan p;
  p.act = (uint8_t)rng_below(&G->rng, 3);
  p.second = rng_below(&G->rng, 10) < 3;
  p.combine = (i % 4 == 3 && rng_below(&G->rng, 2)) ? (uint8_t)(1 + rng_below(&G->rng, 2)) : 0;
  p.scaled = G->flat && i % 4 == 1;
  return p;
}

/* Nodes a tower adds (getitem included). */
static uint32_t tower_cost(const Gen *G, const TowerPlan *p) {
  /* pre: W b getitem linear lnw lnb layer_norm act (+ W b linear) (+ add/mul)
   * post: W b getitem t addmm lnw lnb native_layer_norm getitem act (+ W b t addmm) (+ add/mul) */
  uint32_t c = G->post ? 10 : 8;
  if (p->second) c += G->post ? 4 : 3;
  if (p->combine) c += 1;
  if (G->flat && p->scaled) c += 1;
  return c;
}

static OxNodeId linear(Gen *G, bool as_attr, OxNodeId in, uint32_t layer, uint32_t tower, int k) {
  char path[96];
  snprintf(path, sizeof path, "layers.%u.towers.%u.linear%d.weight", layer, tower, k);
  OxNodeId w = weight2d(G, as_attr, path);
  snprintf(path, sizeof path, "layers.%u.towers.%u.linear%d.bias", layer, tower, k);
  OxNodeId b = weight1d(G, as_attr, path);
  OxNodeId out;
  if (!G->post) {
    OxValue a[3] = {node_v(in), node_v(w), node_v(b)};
    out = call(G, "torch.nn.functional.linear", 3, a, ox_value_none());
  } else {
    OxNodeId t;
    if (rng_below(&G->rng, 4) == 0) {
      OxValue dims[2] = {ox_value_int(1), ox_value_int(0)};
      OxValue a[2] = {node_v(w), ox_graph_value_seq(G->g, OX_V_LIST, dims, 2)};
      t = call(G, "torch.ops.aten.permute.default", 2, a, ox_value_none());
    } else {
      t = call1(G, "torch.ops.aten.t.default", w);
    }
    set_meta_2d(G, t, G->d, G->d, 1, G->d); /* transposed view of a contiguous [D, D] */
    OxValue a[3] = {node_v(b), node_v(in), node_v(t)};
    out = call(G, "torch.ops.aten.addmm.default", 3, a, ox_value_none());
  }
  set_meta_contig(G, out, BATCH, G->d);
  return out;
}

static OxNodeId layer_norm(Gen *G, bool as_attr, OxNodeId in, uint32_t layer, uint32_t tower) {
  char path[96];
  snprintf(path, sizeof path, "layers.%u.towers.%u.norm.weight", layer, tower);
  OxNodeId w = weight1d(G, as_attr, path);
  snprintf(path, sizeof path, "layers.%u.towers.%u.norm.bias", layer, tower);
  OxNodeId b = weight1d(G, as_attr, path);
  OxValue d1 = ox_value_int(G->d);
  if (!G->post) {
    OxValue a[2] = {node_v(in), ox_graph_value_seq(G->g, OX_V_TUPLE, &d1, 1)};
    const char *keys[3] = {"weight", "bias", "eps"};
    OxValue kv[3] = {node_v(w), node_v(b), ox_value_float(1e-05)};
    OxNodeId ln = call(G, "torch.nn.functional.layer_norm", 2, a,
                       ox_graph_value_dict(G->g, keys, kv, 3));
    set_meta_contig(G, ln, BATCH, G->d);
    return ln;
  }
  OxValue a[5] = {node_v(in), ox_graph_value_seq(G->g, OX_V_LIST, &d1, 1), node_v(w), node_v(b),
                  ox_value_float(1e-05)};
  OxNodeId ln = call(G, "torch.ops.aten.native_layer_norm.default", 5, a, ox_value_none());
  const int64_t shapes[3][4] = {{BATCH, G->d, G->d, 1}, {BATCH, 1, 1, 1}, {BATCH, 1, 1, 1}};
  set_meta_tuple(G, ln, 3, shapes);
  OxValue ga[2] = {node_v(ln), ox_value_int(0)};
  OxNodeId gi = call(G, "operator.getitem", 2, ga, ox_value_none());
  set_meta_contig(G, gi, BATCH, G->d);
  return gi;
}

static OxNodeId activation(Gen *G, uint8_t act, OxNodeId in) {
  static const char *pre[3] = {"torch.tanh", "torch.relu", "torch.sigmoid"};
  static const char *post[3] = {"torch.ops.aten.tanh.default", "torch.ops.aten.relu.default",
                                "torch.ops.aten.sigmoid.default"};
  OxNodeId a = call1(G, G->post ? post[act] : pre[act], in);
  set_meta_contig(G, a, BATCH, G->d);
  return a;
}

static OxNodeId combine(Gen *G, uint8_t how, OxNodeId a, OxNodeId b) {
  const char *t = how == 1 ? (G->post ? "torch.ops.aten.add.Tensor" : "torch.add")
                           : (G->post ? "torch.ops.aten.mul.Tensor" : "torch.mul");
  OxValue args[2] = {node_v(a), node_v(b)};
  OxNodeId c = call(G, t, 2, args, ox_value_none());
  set_meta_contig(G, c, BATCH, G->d);
  return c;
}

/* ------------------------------------------------------------------ layers */

/* split -> towers -> cat. x is [B, width*D]; the layer uses the first n of its width
 * pieces (n < width only for the last, partial layer). Returns the cat, [B, n*D]. */
static OxNodeId add_layer(Gen *G, OxNodeId x, uint32_t width, uint32_t layer, const TowerPlan *plans,
                          uint32_t n) {
  const int64_t D = G->d, W = (int64_t)width * D;
  bool as_attr = G->post ? false : rng_below(&G->rng, 10) < 7;
  OxNodeId split;
  if (!G->post) {
    OxValue a[2] = {node_v(x), ox_value_int(D)};
    split = call(G, "torch.split", 2, a, kw1(G, "dim", ox_value_int(1)));
  } else {
    OxValue sizes[MAX_TOWERS];
    for (uint32_t i = 0; i < width; i++) sizes[i] = ox_value_int(D);
    OxValue a[3] = {node_v(x), ox_graph_value_seq(G->g, OX_V_LIST, sizes, width), ox_value_int(1)};
    split = call(G, "torch.ops.aten.split_with_sizes.default", 3, a, ox_value_none());
  }
  int64_t(*shapes)[4] = malloc(width * sizeof *shapes);
  if (!shapes) abort();
  for (uint32_t i = 0; i < width; i++) {
    shapes[i][0] = BATCH;
    shapes[i][1] = D;
    shapes[i][2] = W; /* split pieces are views: row stride of the whole input */
    shapes[i][3] = 1;
  }
  set_meta_tuple(G, split, width, (const int64_t(*)[4])shapes);
  free(shapes);

  OxValue outs[MAX_TOWERS];
  for (uint32_t i = 0; i < n; i++) {
    const TowerPlan *p = &plans[i];
    OxValue ga[2] = {node_v(split), ox_value_int(i)};
    OxNodeId gi = call(G, "operator.getitem", 2, ga, ox_value_none());
    set_meta_2d(G, gi, BATCH, D, W, 1);
    OxNodeId h = linear(G, as_attr, gi, layer, i, 0);
    h = layer_norm(G, as_attr, h, layer, i);
    h = activation(G, p->act, h);
    if (p->second) h = linear(G, as_attr, h, layer, i, 1);
    if (p->combine && i > 0) h = combine(G, p->combine, h, outs[i - 1].u.node);
    if (p->scaled) h = combine(G, 2, h, G->hub); /* the hub: one scale used by a quarter of all towers */
    outs[i] = node_v(h);
  }
  OxValue list = ox_graph_value_seq(G->g, OX_V_LIST, outs, n);
  OxNodeId cat;
  if (!G->post) {
    cat = call(G, "torch.cat", 1, &list, kw1(G, "dim", ox_value_int(1)));
  } else {
    OxValue a[2] = {list, ox_value_int(1)};
    cat = call(G, "torch.ops.aten.cat.default", 2, a, ox_value_none());
  }
  set_meta_contig(G, cat, BATCH, (int64_t)n * D);
  return cat;
}

/* Builds a graph of exactly `nodes` live nodes (output included). */
static OxGraph *build(uint32_t nodes, uint64_t seed, bool post, bool flat) {
  Gen G = {0};
  G.g = ox_graph_new();
  G.rng.s = seed;
  G.post = post;
  G.flat = flat;
  static const int64_t widths[3] = {16, 32, 64};
  G.d = widths[rng_below(&G.rng, 3)];
  /* sqrt-ish width: the smallest t with 4t^2 >= N: 1k nodes -> 16 towers, 10k -> 50,
   * 100k -> 128 (clamped) */
  uint32_t t = 4;
  while (t < MAX_TOWERS && (uint64_t)t * t * 4 < nodes) t++;
  G.towers = t;

  OxNodeId x = ox_graph_add_node(G.g, OX_OP_PLACEHOLDER, "x", "x", ox_value_none(), ox_value_none());
  G.last_input = x;
  set_meta_contig(&G, x, BATCH, (int64_t)t * G.d);
  uint32_t extra = 0;
  if (flat) {
    G.hub = ox_graph_add_node(G.g, OX_OP_PLACEHOLDER, "scale", "scale", ox_value_none(), ox_value_none());
    set_meta_1d(&G, G.hub, G.d);
    G.last_input = G.hub;
    extra = 1;
  }

  /* budget: everything but the output node */
  uint32_t left = nodes - 1 - 1 - extra; /* minus x (and the hub) */
  uint32_t width = t;            /* pieces in the current layer input */
  TowerPlan plans[MAX_TOWERS];
  OxNodeId cur = x;
  for (uint32_t layer = 0;; layer++) {
    uint32_t cost = 2; /* split + cat */
    uint32_t n = 0;
    for (; n < width; n++) {
      plans[n] = plan_tower(&G, n);
      uint32_t c = tower_cost(&G, &plans[n]);
      if (cost + c > left) break;
      cost += c;
    }
    if (n == 0) break;
    cur = add_layer(&G, cur, width, layer, plans, n);
    left -= cost;
    width = n;
    if (n < t) break; /* a partial layer is the last one */
  }
  /* pointwise head pads to the exact count: the kind of tail a ranking model ends with */
  static const char *head_pre[3] = {"torch.sigmoid", "torch.relu", "torch.tanh"};
  static const char *head_post[3] = {"torch.ops.aten.sigmoid.default", "torch.ops.aten.relu.default",
                                     "torch.ops.aten.tanh.default"};
  for (uint32_t k = 0; left > 0; k++, left--) {
    cur = call1(&G, post ? head_post[k % 3] : head_pre[k % 3], cur);
    set_meta_contig(&G, cur, BATCH, (int64_t)width * G.d);
  }
  OxValue out = node_v(cur);
  OxValue ret = ox_graph_value_seq(G.g, OX_V_TUPLE, &out, 1);
  ox_graph_add_node(G.g, OX_OP_OUTPUT, "output", "output", ox_graph_value_seq(G.g, OX_V_TUPLE, &ret, 1),
                    ox_value_none());
  return G.g;
}

/* ------------------------------------------------------------------ main */

static void usage(FILE *f) {
  fprintf(f, "usage: gen-recsys --nodes N [--seed S] [--level pre|post] [--shape towers|flat] -o OUT(.txt|.json)\n"
             "  --shape flat   no module path in any name (w_17, arg_17, linear_1234) and a hub: one\n"
             "                 scale placeholder multiplied into every fourth tower\n");
}

static bool parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-') return false;
  *out = v;
  return true;
}

static bool ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

int main(int argc, char **argv) {
  uint64_t nodes = 0, seed = 1;
  bool post = false, flat = false;
  const char *out = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--nodes") == 0 && parse_u64(v, &nodes)) i++;
    else if (strcmp(a, "--seed") == 0 && parse_u64(v, &seed)) i++;
    else if (strcmp(a, "--level") == 0 && v && (strcmp(v, "pre") == 0 || strcmp(v, "post") == 0)) {
      post = strcmp(v, "post") == 0;
      i++;
    } else if (strcmp(a, "--shape") == 0 && v && (strcmp(v, "towers") == 0 || strcmp(v, "flat") == 0)) {
      flat = strcmp(v, "flat") == 0;
      i++;
    } else if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && v) {
      out = v;
      i++;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "gen-recsys: bad argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  bool json = out && ends_with(out, ".json");
  if (!out || (!json && !ends_with(out, ".txt"))) {
    fprintf(stderr, "gen-recsys: -o OUT must end in .txt or .json\n");
    usage(stderr);
    return 2;
  }
  /* the smallest graph: x, split, one tower of at most 15 nodes, cat, output */
  if (nodes < 20 || nodes > 50000000) {
    fprintf(stderr, "gen-recsys: --nodes must be between 20 and 50000000\n");
    return 2;
  }
  OxGraph *g = build((uint32_t)nodes, seed, post, flat);
  OxDiagList diags;
  ox_diags_init(&diags, out);
  int errors = ox_graph_verify(g, true, &diags);
  if (errors) {
    ox_diags_print(&diags, stderr);
    fprintf(stderr, "gen-recsys: generated graph fails verification (%d errors); not written\n", errors);
    ox_diags_clear(&diags);
    ox_graph_free(g);
    return 1;
  }
  ox_diags_clear(&diags);
  uint32_t live = g->n_live;

  OxBuf buf;
  ox_buf_init(&buf);
  OxDoc *doc = NULL;
  if (json) {
    doc = ox_doc_new(OX_FMT_JSON);
    ox_doc_add_graph(doc, g);
    ox_write_json(doc, &buf);
  } else {
    ox_write_fx_text(g, &buf);
  }
  int rc = 0;
  char err[512];
  if (buf.len == 0) {
    fprintf(stderr, "gen-recsys: the %s writer produced no output\n", json ? "JSON" : "FX text");
    rc = 1;
  } else if (!ox_write_file_atomic(out, buf.data, buf.len, err, sizeof err)) {
    fprintf(stderr, "gen-recsys: %s\n", err);
    rc = 1;
  } else {
    fprintf(stderr, "gen-recsys: wrote %s: %u nodes, %zu bytes\n", out, live, buf.len);
  }
  ox_buf_free(&buf);
  if (doc)
    ox_doc_free(doc);
  else
    ox_graph_free(g);
  return rc;
}
