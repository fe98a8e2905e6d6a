/* test-shape-params.c - parameter shapes from their uses (ox_shape_infer_params), shapes files
 * (--shapes: JSON and safetensors headers) and ints the shapes fix (ox_shape_node_int).
 *
 * The inference is checked against the truth: graphs whose dumps carry every shape are
 * stripped of them (all but the input's), inferred again, and every shape the inference gives
 * must equal the dump's: never a guess. On the bundled example the counts are golden; on
 * gen-recsys graphs of both shapes (module paths, flat names) it is a property. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "load/ox_load.h"
#include "load/ox_parse.h"
#include "ops/ox_ops.h"
#include "ops/ox_shape.h"
#include "test-common.h"

static OxValue tup(OxGraph *g, int n, ...) {
  OxValue items[8];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) items[i] = va_arg(ap, OxValue);
  va_end(ap);
  return ox_graph_value_seq(g, OX_V_TUPLE, items, (uint32_t)n);
}

static OxValue ilist(OxGraph *g, int n, const int64_t *v) {
  OxValue items[8];
  for (int i = 0; i < n; i++) items[i] = ox_value_int(v[i]);
  return ox_graph_value_seq(g, OX_V_LIST, items, (uint32_t)n);
}

static OxValue N(OxNodeId id) { return ox_value_node(id); }

static OxNodeId param(OxGraph *g, const char *name) {
  return ox_graph_add_node(g, OX_OP_PLACEHOLDER, name, name, ox_value_none(), ox_value_none());
}

static OxNodeId attr(OxGraph *g, const char *name, const char *target) {
  return ox_graph_add_node(g, OX_OP_GET_ATTR, name, target, ox_value_none(), ox_value_none());
}

static OxNodeId fn(OxGraph *g, const char *target, OxValue args, OxValue kwargs) {
  return ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, target, args, kwargs);
}

static void set_shape(OxGraph *g, OxNodeId id, const char *ann) {
  OxMeta m;
  g_assert_true(ox_parse_tensor_annotation(g, ann, strlen(ann), &m));
  ox_graph_set_meta(g, id, &m);
}

static void expect_meta(OxGraph *g, OxNodeId id, const char *want) {
  char buf[128];
  ox_meta_format(&ox_graph_node(g, id)->meta, buf, sizeof buf);
  if (strcmp(buf, want)) g_test_message("%s: %s, want %s", ox_graph_node(g, id)->name, buf, want);
  g_assert_cmpstr(buf, ==, want);
}

static const char *note_about(const OxDiagList *d, const char *name) {
  for (size_t i = 0; i < d->n; i++)
    if (d->items[i].sev == OX_SEV_NOTE && g_str_has_prefix(d->items[i].msg, name) &&
        d->items[i].msg[strlen(name)] == ':')
      return d->items[i].msg;
  return NULL;
}

/* ---- each rule, and what it must leave alone */

static void test_rules(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = param(g, "x");
  set_shape(g, x, "f32[8, 16]");
  /* linear -> layer_norm: out from normalized_shape, in from x; the bias from the weight;
   * layer_norm's affine parameters from normalized_shape */
  OxNodeId w0 = param(g, "w0"), b0 = param(g, "b0"), lnw = attr(g, "ln_w", "ln.weight"), lnb = attr(g, "ln_b", "ln.bias");
  OxNodeId l0 = fn(g, "torch.nn.functional.linear", tup(g, 3, N(x), N(w0), N(b0)), ox_value_none());
  int64_t ns[] = {32};
  const char *kk[] = {"weight", "bias"};
  OxValue kv[] = {N(lnw), N(lnb)};
  OxNodeId ln = fn(g, "torch.nn.functional.layer_norm", tup(g, 2, N(l0), ilist(g, 1, ns)), ox_graph_value_dict(g, kk, kv, 2));
  /* through a shape-preserving op into a linear of known weight: out of w1 from it */
  OxNodeId w1 = param(g, "w1"), w2 = param(g, "w2");
  OxNodeId l1 = fn(g, "torch.nn.functional.linear", tup(g, 2, N(ln), N(w1)), ox_value_none());
  OxNodeId r1 = fn(g, "torch.relu", tup(g, 1, N(l1)), ox_value_none());
  set_shape(g, w2, "f32[4, 24]");
  OxNodeId l2 = fn(g, "torch.nn.functional.linear", tup(g, 2, N(r1), N(w2)), ox_value_none());
  /* a view to concrete sizes fixes the element count: out = 8 * 40 / 8 */
  OxNodeId w3 = param(g, "w3");
  OxNodeId l3 = fn(g, "torch.nn.functional.linear", tup(g, 2, N(x), N(w3)), ox_value_none());
  int64_t vs[] = {2, 4, 40};
  fn(g, "torch.reshape", tup(g, 2, N(l3), ilist(g, 3, vs)), ox_value_none());
  /* recorded output shape of the node itself */
  OxNodeId w4 = param(g, "w4");
  OxNodeId l4 = fn(g, "torch.nn.functional.linear", tup(g, 2, N(x), N(w4)), ox_value_none());
  set_shape(g, l4, "f32[8, 12]");
  /* mm's mat2 from a downstream layer_norm */
  OxNodeId m2 = param(g, "m2");
  OxNodeId mm = fn(g, "torch.mm", tup(g, 2, N(x), N(m2)), ox_value_none());
  int64_t ns6[] = {6};
  fn(g, "torch.nn.functional.layer_norm", tup(g, 2, N(mm), ilist(g, 1, ns6)), ox_value_none());
  /* stack partner */
  OxNodeId sp = param(g, "sp");
  OxValue members[] = {N(x), N(sp)};
  fn(g, "torch.stack", tup(g, 1, ox_graph_value_seq(g, OX_V_LIST, members, 2)), ox_value_none());
  /* never guessed: a broadcast operand, an embedding table, a linear whose output only a sum reads */
  OxNodeId bc = param(g, "bc"), emb = param(g, "emb"), idx = param(g, "idx"), w5 = param(g, "w5");
  set_shape(g, idx, "i64[8]");
  fn(g, "torch.add", tup(g, 2, N(x), N(bc)), ox_value_none());
  fn(g, "torch.nn.functional.embedding", tup(g, 2, N(idx), N(emb)), ox_value_none());
  OxNodeId l5 = fn(g, "torch.nn.functional.linear", tup(g, 2, N(x), N(w5)), ox_value_none());
  fn(g, "torch.sum", tup(g, 1, N(l5)), ox_value_none());

  OxDiagList d;
  ox_diags_init(&d, "rules");
  OxParamShapes st;
  ox_shape_infer_params(g, &d, 100, &st);
  expect_meta(g, w0, "f32[32, 16]");
  expect_meta(g, b0, "f32[32]");
  expect_meta(g, lnw, "f32[32]");
  expect_meta(g, lnb, "f32[32]");
  expect_meta(g, w1, "f32[24, 32]");
  expect_meta(g, l2, "f32[8, 4]");
  expect_meta(g, w3, "f32[40, 16]");
  expect_meta(g, w4, "f32[12, 16]");
  expect_meta(g, m2, "f32[16, 6]");
  expect_meta(g, sp, "f32[8, 16]");
  expect_meta(g, bc, "?");
  expect_meta(g, emb, "?");
  expect_meta(g, w5, "?");
  g_assert_cmpuint(st.inferred, ==, 9);
  g_assert_cmpuint(st.unknown, ==, 3);
  g_assert_true(ox_graph_node(g, w0)->meta.inferred);
  /* the notes say what fixed each shape */
  g_assert_cmpstr(note_about(&d, "w0"), ==,
                  "w0: f32[32, 16] inferred from linear (in: x f32[8, 16]; out: layer_norm's normalized_shape [32])");
  g_assert_cmpstr(note_about(&d, "w1"), ==,
                  "w1: f32[24, 32] inferred from linear_1 (in: layer_norm f32[8, 32]; out: linear_2's weight f32[4, 24])");
  g_assert_cmpstr(note_about(&d, "w3"), ==,
                  "w3: f32[40, 16] inferred from linear_3 (in: x f32[8, 16]; out: reshape's sizes [2, 4, 40])");
  g_assert_cmpstr(note_about(&d, "w4"), ==,
                  "w4: f32[12, 16] inferred from linear_4 (in: x f32[8, 16]; out: linear_4's recorded shape f32[8, 12])");
  const char *last = d.items[d.n - 1].msg;
  g_assert_true(g_str_has_prefix(last, "shapes: 9 parameters inferred from their uses; 3 without a shape"));
  g_assert_nonnull(strstr(last, "bc, emb, w5"));
  ox_diags_clear(&d);
  ox_graph_free(g);
}

/* split(t, 32) of a cat whose width is unknown: chunks before the last used one are 32 wide;
 * the last is not known (it may be shorter). */
static void test_split_chunks(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId a = param(g, "a"), wb = param(g, "wb");
  set_shape(g, a, "f32[4, 32]");
  OxNodeId b = fn(g, "torch.nn.functional.linear", tup(g, 2, N(a), N(wb)), ox_value_none());
  OxValue members[] = {N(a), N(b)};
  const char *dk[] = {"dim"};
  OxValue dv[] = {ox_value_int(1)};
  OxNodeId cat = fn(g, "torch.cat", tup(g, 1, ox_graph_value_seq(g, OX_V_LIST, members, 2)), ox_graph_value_dict(g, dk, dv, 1));
  OxNodeId sp = fn(g, "torch.split", tup(g, 2, N(cat), ox_value_int(32)), ox_graph_value_dict(g, dk, dv, 1));
  OxNodeId g0 = fn(g, "operator.getitem", tup(g, 2, N(sp), ox_value_int(0)), ox_value_none());
  OxNodeId g1 = fn(g, "operator.getitem", tup(g, 2, N(sp), ox_value_int(1)), ox_value_none());
  OxNodeId w0 = param(g, "w0");
  int64_t ns[] = {8};
  OxNodeId l0 = fn(g, "torch.nn.functional.linear", tup(g, 2, N(g0), N(w0)), ox_value_none());
  fn(g, "torch.nn.functional.layer_norm", tup(g, 2, N(l0), ilist(g, 1, ns)), ox_value_none());
  OxParamShapes st;
  ox_shape_infer_params(g, NULL, 0, &st);
  expect_meta(g, g0, "f32[4, 32]");
  expect_meta(g, g1, "?");
  expect_meta(g, w0, "f32[8, 32]");
  expect_meta(g, wb, "?"); /* b's width: only the cat's total would fix it */
  ox_graph_free(g);
}

/* ---- against the truth: dumps with every shape, stripped and inferred again */

static uint32_t strip_and_infer(OxGraph *truth, const char *keep, OxParamShapes *st, uint32_t *calls_ok) {
  /* the same graph without any meta but keep's */
  OxGraph *g = ox_graph_clone(truth);
  OX_GRAPH_FOREACH(g, id) {
    if (keep && !strcmp(g->nodes[id].name, keep)) continue;
    OxMeta none;
    memset(&none, 0, sizeof none);
    ox_graph_set_meta(g, id, &none);
  }
  ox_shape_infer_params(g, NULL, 0, st);
  uint32_t checked = 0;
  *calls_ok = 0;
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id], *t = &truth->nodes[id];
    if (n->meta.kind != OX_META_TENSOR) continue;
    if (!ox_shape_meta_equal(&n->meta, &t->meta)) {
      char a[128], b[128];
      ox_meta_format(&n->meta, a, sizeof a);
      ox_meta_format(&t->meta, b, sizeof b);
      g_test_message("%s: inferred %s, the dump says %s", n->name, a, b);
    }
    g_assert_true(ox_shape_meta_equal(&n->meta, &t->meta));
    if (n->op == OX_OP_PLACEHOLDER || n->op == OX_OP_GET_ATTR) checked++;
    else (*calls_ok)++;
  }
  ox_graph_free(g);
  return checked;
}

static OxDoc *load_or_fail(const char *path) {
  OxDiagList d;
  ox_diags_init(&d, path);
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_file(path, OX_FMT_UNKNOWN, NULL, &doc, &d), ==, 0);
  ox_diags_clear(&d);
  return doc;
}

static void test_example_truth(void) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  char *path = g_build_filename(root ? root : ".", "data", "examples", "recsys-towers.txt", NULL);
  if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
    g_test_skip("data/examples/recsys-towers.txt not found (set OPTIMUS_SOURCE_ROOT)");
    g_free(path);
    return;
  }
  OxDoc *doc = load_or_fail(path);
  OxParamShapes st;
  uint32_t calls;
  uint32_t params = strip_and_infer(doc->graphs[0], "x", &st, &calls);
  /* golden: the towers that end in layer_norm are solved; the six whose last linear feeds a cat
   * of unknown width are not (no use fixes their out-features) */
  g_test_message("example: %u parameters inferred, %u unknown, %u call nodes, %u rounds", st.inferred, st.unknown, calls,
                 st.rounds);
  g_assert_cmpuint(params, ==, st.inferred + 1); /* + x */
  g_assert_cmpuint(st.inferred, ==, 60);
  g_assert_cmpuint(st.unknown, ==, 16);
  ox_doc_free(doc);
  g_free(path);
}

static void test_generated_truth(void) {
  const char *gen = g_getenv("OX_GEN_RECSYS");
  if (!gen || !g_file_test(gen, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("OX_GEN_RECSYS (tools/gen-recsys) not available");
    return;
  }
  char *dir = g_dir_make_tmp("ox-params-XXXXXX", NULL);
  const char *shapes[] = {"towers", "flat"};
  uint32_t total = 0;
  for (int s = 0; s < 2; s++)
    for (int seed = 1; seed <= 3; seed++) {
      char *path = g_strdup_printf("%s/g-%s-%d.txt", dir, shapes[s], seed);
      char seed_s[8];
      g_snprintf(seed_s, sizeof seed_s, "%d", seed);
      const char *argv[] = {gen, "--nodes", "3000", "--shape", shapes[s], "--seed", seed_s, "-o", path, NULL};
      int status = 1;
      g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                                 NULL, NULL, NULL, NULL, &status, NULL));
      g_assert_true(g_spawn_check_wait_status(status, NULL));
      OxDoc *doc = load_or_fail(path);
      OxParamShapes st;
      uint32_t calls;
      strip_and_infer(doc->graphs[0], "x", &st, &calls);
      g_test_message("%s seed %d: %u parameters inferred, %u unknown, %u call nodes", shapes[s], seed, st.inferred,
                     st.unknown, calls);
      g_assert_cmpuint(st.inferred, >, 0);
      total += st.inferred;
      ox_doc_free(doc);
      g_unlink(path);
      g_free(path);
    }
  g_rmdir(dir);
  g_free(dir);
  g_assert_cmpuint(total, >, 100);
}

/* The corpus: dumps nobody here wrote, with every shape recorded. Strip the shapes of the
 * parameters that feed a weight-like slot (linear/layer_norm/batch_norm/mm weights and biases)
 * and of every call node, infer again: whatever the inference gives must be what the dump
 * says. */
static bool weight_slot_param(const OxGraph *g, OxNodeId id) {
  const OxNode *n = &g->nodes[id];
  if (n->op != OX_OP_PLACEHOLDER && n->op != OX_OP_GET_ATTR) return false;
  for (uint32_t i = 0; i < n->n_users; i++) {
    const OxNode *u = ox_graph_node(g, n->users[i]);
    OxOpArgs a;
    char e[128];
    if (!u || ox_op_normalize(g, u, &a, e, sizeof e)) continue;
    int first = a.op == OX_OPID_LINEAR || a.op == OX_OPID_MM ? 1 : a.op == OX_OPID_LAYER_NORM ? 2
              : a.op == OX_OPID_BATCH_NORM ? 1 : -1;
    for (int s = first; first >= 0 && s < (int)a.n_slots; s++)
      if (a.slot[s] && a.slot[s]->kind == OX_V_NODE && a.slot[s]->u.node == id) return true;
  }
  return false;
}

/* One corpus graph: strip the weight-slot parameters' shapes (and, with calls_too, every call
 * node's), infer; every inferred meta must be the dump's. Returns the parameters inferred. */
static uint32_t corpus_graph_truth(int nn, uint32_t gi, OxGraph *truth, bool calls_too, uint32_t *stripped) {
  OxGraph *g = ox_graph_clone(truth);
  uint32_t here = 0;
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    bool call = n->op == OX_OP_CALL_FUNCTION || n->op == OX_OP_CALL_METHOD || n->op == OX_OP_CALL_MODULE;
    bool param = weight_slot_param(g, id) && n->meta.kind == OX_META_TENSOR;
    if (!(call && calls_too) && !param) continue;
    here += param;
    OxMeta none;
    memset(&none, 0, sizeof none);
    ox_graph_set_meta(g, id, &none);
  }
  OxParamShapes st = {0, 0, 0};
  if (here) ox_shape_infer_params(g, NULL, 0, &st);
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id], *t = &truth->nodes[id];
    if (n->meta.kind != OX_META_TENSOR || !n->meta.inferred || t->meta.kind != OX_META_TENSOR) continue;
    if (!ox_shape_meta_equal(&n->meta, &t->meta)) {
      char a[128], b[128];
      ox_meta_format(&n->meta, a, sizeof a);
      ox_meta_format(&t->meta, b, sizeof b);
      g_test_message("corpus %02d graph %u: %s inferred %s, the dump says %s", nn, gi + 1, n->name, a, b);
    }
    g_assert_true(ox_shape_meta_equal(&n->meta, &t->meta));
  }
  if (here)
    g_test_message("corpus %02d graph %u (%s): %u of %u stripped parameters inferred again", nn, gi + 1,
                   calls_too ? "parameters and calls stripped" : "parameters stripped", st.inferred, here);
  ox_graph_free(g);
  *stripped += here;
  return st.inferred;
}

static void test_corpus_truth(void) {
  char *dir = test_corpus_dir();
  if (!dir || !g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_test_skip("../shared/corpus/fx-real not found");
    g_free(dir);
    return;
  }
  g_free(dir);
  uint32_t inferred[2] = {0, 0}, stripped[2] = {0, 0};
  for (int nn = 1; nn <= 29; nn++) {
    char *path = NULL;
    OxDoc *doc = test_corpus_load(nn, "parameter shape inference", &path);
    if (!doc) {
      g_free(path);
      continue;
    }
    for (uint32_t gi = 0; gi < doc->n_graphs; gi++)
      for (int calls = 0; calls < 2; calls++)
        inferred[calls] += corpus_graph_truth(nn, gi, doc->graphs[gi], calls, &stripped[calls]);
    ox_doc_free(doc);
    g_free(path);
  }
  g_test_message("corpus: parameters stripped: %u of %u inferred again; parameters and calls stripped: %u of %u; "
                 "all equal to the dumps",
                 inferred[0], stripped[0], inferred[1], stripped[1]);
  /* with the calls' recorded shapes (a dump whose parameters alone lack them) most come back */
  g_assert_cmpuint(stripped[0], >, 0);
  g_assert_cmpuint(inferred[0] * 2, >=, stripped[0]);
}

/* ---- shapes files */

static char *write_tmp(const char *dir, const char *name, const void *data, gsize len) {
  char *p = g_build_filename(dir, name, NULL);
  g_assert_true(g_file_set_contents(p, data, (gssize)len, NULL));
  return p;
}

static void test_shapes_file(void) {
  char *dir = g_dir_make_tmp("ox-shapes-XXXXXX", NULL);
  OxGraph *g = ox_graph_new();
  OxNodeId x = param(g, "x"), pw = param(g, "p_layers_0_weight"), a = attr(g, "enc_w", "enc.weight"),
           c = param(g, "c"), h = param(g, "h");
  set_shape(g, c, "i64[1]");
  fn(g, "torch.relu", tup(g, 1, N(x)), ox_value_none());
  const char *json = "{\n"
                     "  \"x\": [8, \"s0\"],\n"
                     "  \"layers.0.weight\": \"bf16[4, 8]\",\n"
                     "  \"enc.weight\": {\"dtype\": \"torch.float16\", \"shape\": [3]},\n"
                     "  \"c\": [5],\n"
                     "  \"h\": {\"dtype\": \"BF16\", \"shape\": []},\n"
                     "  \"unused.buffer\": [1]\n"
                     "}\n";
  char *p = write_tmp(dir, "s.json", json, strlen(json));
  OxShapeList l;
  ox_shape_list_init(&l);
  OxDiagList d;
  ox_diags_init(&d, p);
  g_assert_cmpint(ox_shapes_load_file(p, &l, &d), ==, 0);
  g_assert_cmpuint(l.n, ==, 6);
  OxShapesApplied ap;
  ox_shapes_apply(g, &l, &d, &ap);
  g_assert_cmpuint(ap.applied, ==, 5);
  g_assert_cmpuint(ap.unmatched, ==, 1);
  expect_meta(g, x, "f32[8, s0]");
  expect_meta(g, pw, "bf16[4, 8]"); /* a state_dict key, matched to export's p_ name */
  expect_meta(g, a, "f16[3]");      /* a get_attr by its target */
  expect_meta(g, c, "i64[5]");      /* the dump's dtype kept */
  expect_meta(g, h, "bf16[]");
  g_assert_cmpuint(d.n, ==, 1);
  g_assert_cmpstr(d.items[0].msg, ==, "--shapes: 1 of 6 entries name no placeholder or get_attr: unused.buffer");
  ox_diags_clear(&d);
  ox_shape_list_free(&l);

  /* a safetensors file: only its JSON header is read */
  const char *hdr = "{\"enc.weight\":{\"dtype\":\"F32\",\"shape\":[7,2],\"data_offsets\":[0,56]},"
                    "\"__metadata__\":{\"format\":\"pt\"}}  ";
  gsize hn = strlen(hdr);
  GByteArray *st = g_byte_array_new();
  guint8 len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (guint8)(((guint64)hn >> (8 * i)) & 0xff);
  g_byte_array_append(st, len8, 8);
  g_byte_array_append(st, (const guint8 *)hdr, (guint)hn);
  guint8 zeros[56] = {0};
  g_byte_array_append(st, zeros, sizeof zeros);
  char *ps = write_tmp(dir, "w.safetensors", st->data, st->len);
  g_byte_array_free(st, TRUE);
  ox_shape_list_init(&l);
  ox_diags_init(&d, ps);
  g_assert_cmpint(ox_shapes_load_file(ps, &l, &d), ==, 0);
  ox_shapes_apply(g, &l, &d, &ap);
  g_assert_cmpuint(ap.applied, ==, 1);
  expect_meta(g, a, "f32[7, 2]");
  ox_diags_clear(&d);
  ox_shape_list_free(&l);

  /* bad entries: located errors, the good ones still read */
  const char *bad = "{\"a\": [1, -3],\n \"b\": {\"shape\": 3},\n \"c\": \"f32[2,\",\n \"d\": {\"dtype\": \"f99\", \"shape\": [1]},\n"
                    " \"e\": true,\n \"ok\": [2]}";
  char *pb = write_tmp(dir, "bad.json", bad, strlen(bad));
  ox_shape_list_init(&l);
  ox_diags_init(&d, pb);
  g_assert_cmpint(ox_shapes_load_file(pb, &l, &d), ==, 5);
  g_assert_cmpuint(l.n, ==, 1);
  g_assert_cmpstr(l.items[0].key, ==, "ok");
  g_assert_cmpstr(d.items[0].msg, ==, "a[1]: a size cannot be negative (-3)");
  g_assert_cmpuint(d.items[0].line, ==, 1);
  g_assert_cmpuint(d.items[0].col, ==, 11);
  g_assert_cmpstr(d.items[1].msg, ==, "b: an entry object needs \"shape\": [sizes]");
  g_assert_cmpuint(d.items[1].line, ==, 2);
  g_assert_cmpstr(d.items[2].msg, ==, "c: 'f32[2,' is not a tensor annotation such as \"f32[24, 32]\"");
  g_assert_cmpstr(d.items[3].msg, ==, "d.dtype: unknown dtype 'f99' (f32, f16, bf16, i64, float32, torch.float32, F32 ...)");
  g_assert_cmpuint(d.items[3].line, ==, 4);
  g_assert_nonnull(strstr(d.items[4].msg, "e: a shape is [sizes]"));
  ox_diags_clear(&d);
  ox_shape_list_free(&l);

  /* neither JSON nor safetensors; a JSON syntax error is located */
  char *pn = write_tmp(dir, "n.bin", "\x01\x02\x03", 3);
  char *pj = write_tmp(dir, "j.json", "{\"x\": [1,\n 2", 12);
  ox_shape_list_init(&l);
  ox_diags_init(&d, pn);
  g_assert_cmpint(ox_shapes_load_file(pn, &l, &d), ==, 1);
  g_assert_nonnull(strstr(d.items[0].msg, "not a shapes file"));
  ox_diags_clear(&d);
  ox_diags_init(&d, pj);
  g_assert_cmpint(ox_shapes_load_file(pj, &l, &d), ==, 1);
  g_assert_nonnull(strstr(d.items[0].msg, "JSON syntax error"));
  g_assert_cmpuint(d.items[0].line, ==, 2);
  ox_diags_clear(&d);
  ox_shape_list_free(&l);
  const char *files[] = {p, ps, pb, pn, pj};
  for (int i = 0; i < 5; i++) g_unlink(files[i]);
  g_free(p);
  g_free(ps);
  g_free(pb);
  g_free(pn);
  g_free(pj);
  g_rmdir(dir);
  g_free(dir);
  ox_graph_free(g);
}

/* --input-shape names get_attr nodes too */
static void test_input_spec_get_attr(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId a = attr(g, "w_0", "w.0");
  const char *specs[] = {"w.0=f16:3,4"};
  OxDiagList d;
  ox_diags_init(&d, "spec");
  g_assert_cmpint(ox_shape_apply_input_specs(g, specs, 1, &d), ==, 0);
  expect_meta(g, a, "f16[3, 4]");
  const char *bad[] = {"nope=1"};
  g_assert_cmpint(ox_shape_apply_input_specs(g, bad, 1, &d), ==, 1);
  g_assert_cmpstr(d.items[0].msg, ==, "--input-shape nope=1: no placeholder or get_attr named nope (placeholders: none)");
  ox_diags_clear(&d);
  ox_graph_free(g);
}

/* ints the shapes fix: x.shape[0] (traced as getattr), x.size(1) * 2, x.size()[-1] */
static void test_node_int(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = param(g, "x");
  set_shape(g, x, "f32[6, 5]");
  OxNodeId sh = fn(g, "builtins.getattr", tup(g, 2, N(x), ox_graph_value_str(g, OX_V_STR, "shape")), ox_value_none());
  OxNodeId g0 = fn(g, "operator.getitem", tup(g, 2, N(sh), ox_value_int(0)), ox_value_none());
  OxNodeId s1 = ox_graph_add_node(g, OX_OP_CALL_METHOD, NULL, "size", tup(g, 2, N(x), ox_value_int(1)), ox_value_none());
  OxNodeId m = fn(g, "operator.mul", tup(g, 2, N(s1), ox_value_int(2)), ox_value_none());
  OxNodeId sz = ox_graph_add_node(g, OX_OP_CALL_METHOD, NULL, "size", tup(g, 1, N(x)), ox_value_none());
  OxNodeId gl = fn(g, "operator.getitem", tup(g, 2, N(sz), ox_value_int(-1)), ox_value_none());
  OxNodeId y = param(g, "y");
  OxNodeId sy = fn(g, "builtins.getattr", tup(g, 2, N(y), ox_graph_value_str(g, OX_V_STR, "shape")), ox_value_none());
  OxNodeId gy = fn(g, "operator.getitem", tup(g, 2, N(sy), ox_value_int(0)), ox_value_none());
  int64_t v;
  g_assert_true(ox_shape_node_int(g, g0, &v));
  g_assert_cmpint(v, ==, 6);
  g_assert_true(ox_shape_node_int(g, m, &v));
  g_assert_cmpint(v, ==, 10);
  g_assert_true(ox_shape_node_int(g, gl, &v));
  g_assert_cmpint(v, ==, 5);
  g_assert_false(ox_shape_node_int(g, gy, &v)); /* y's shape is not known */
  g_assert_false(ox_shape_node_int(g, x, &v));
  /* and the getitem of x.shape infers as a scalar */
  OxMeta mt;
  char err[256];
  g_assert_cmpint(ox_shape_infer_node(g, g0, &mt, err, sizeof err), ==, 0);
  g_assert_cmpint(mt.kind, ==, OX_META_SCALAR);
  ox_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/shape-params/rules", test_rules);
  g_test_add_func("/engine/shape-params/split-chunks", test_split_chunks);
  g_test_add_func("/engine/shape-params/example-truth", test_example_truth);
  g_test_add_func("/engine/shape-params/generated-truth", test_generated_truth);
  g_test_add_func("/engine/shape-params/corpus-truth", test_corpus_truth);
  g_test_add_func("/engine/shape-params/shapes-file", test_shapes_file);
  g_test_add_func("/engine/shape-params/input-spec-get-attr", test_input_spec_get_attr);
  g_test_add_func("/engine/shape-params/node-int", test_node_int);
  return g_test_run();
}
