/* test-cost.c - the cost model (engine/run/ox_cost.c, docs/cost-model.md): hand-computed
 * launches, bytes and FLOPs of small graphs, unknown shapes and ops, a batch step's recorded
 * cost, the payoff guard accepting and rejecting, and the trace JSON round trip of costs.
 */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "load/ox_load.h"
#include "ops/ox_shape.h"
#include "passes/ox_pass.h"
#include "run/ox_cost.h"

/* Loads FX text (placeholders carry the shapes; the rest is inferred). */
static OxDoc *load_fx(const char *text) {
  OxDiagList d;
  ox_diags_init(&d, "<test>");
  OxDoc *doc = NULL;
  int rc = ox_load_buffer(text, strlen(text), OX_FMT_FX_TEXT, NULL, &doc, &d);
  for (uint32_t i = 0; i < d.n; i++) g_test_message("%u: %s", d.items[i].line, d.items[i].msg);
  g_assert_cmpint(rc, ==, 0);
  g_assert_cmpuint(d.n_warnings, ==, 0);
  ox_diags_clear(&d);
  g_assert_cmpuint(doc->n_graphs, ==, 1);
  ox_shape_infer_graph(doc->graphs[0], NULL, NULL);
  return doc;
}

static OxNodeId node(OxGraph *g, const char *name) {
  OxNodeId id = ox_graph_find(g, name);
  g_assert_cmpuint(id, !=, 0);
  return id;
}

static OxCost cost_of(OxGraph *g, const char *name) {
  OxNodeId id = node(g, name);
  return ox_cost_nodes(g, &id, 1);
}

/* linear(8x16 -> 32) -> layer_norm -> tanh -> view: by hand, f32 = 4 bytes. */
static const char chain_fx[] =
    "graph():\n"
    "    %x : Tensor \"f32[8, 16][16, 1]cpu\" = placeholder[target=x]\n"
    "    %w : Tensor \"f32[32, 16][16, 1]cpu\" = placeholder[target=w]\n"
    "    %b : Tensor \"f32[32][1]cpu\" = placeholder[target=b]\n"
    "    %linear : [num_users=1] = call_function[target=torch.nn.functional.linear](args = (%x, %w, %b), kwargs = {})\n"
    "    %ln : [num_users=1] = call_function[target=torch.nn.functional.layer_norm](args = (%linear, (32,)), kwargs = {})\n"
    "    %tanh : [num_users=1] = call_function[target=torch.tanh](args = (%ln,), kwargs = {})\n"
    "    %view : [num_users=1] = call_method[target=view](args = (%tanh, 256), kwargs = {})\n"
    "    return (view,)\n";

static void test_chain(void) {
  OxDoc *doc = load_fx(chain_fx);
  OxGraph *g = doc->graphs[0];
  OxCost c = cost_of(g, "linear");
  g_assert_cmpuint(c.unknown, ==, 0);
  g_assert_cmpuint(c.launches, ==, 1);
  g_assert_cmpuint(c.bytes, ==, 512 + 2048 + 128 + 1024); /* x, w, b read; out written */
  g_assert_cmpuint(c.flops, ==, 2 * 16 * 8 * 32);         /* 2*M*N*K */
  c = cost_of(g, "ln");
  g_assert_cmpuint(c.launches, ==, 1);
  g_assert_cmpuint(c.bytes, ==, 2048);
  g_assert_cmpuint(c.flops, ==, 5 * 256);
  c = cost_of(g, "tanh");
  g_assert_cmpuint(c.bytes, ==, 2048);
  g_assert_cmpuint(c.flops, ==, 256);
  c = cost_of(g, "view"); /* a view: nothing */
  g_assert_cmpuint(c.launches + c.bytes + c.flops + c.unknown, ==, 0);
  OxCost all = ox_cost_graph(g);
  g_assert_cmpuint(all.unknown, ==, 0);
  g_assert_cmpuint(all.launches, ==, 3);
  g_assert_cmpuint(all.bytes, ==, 3712 + 2048 + 2048);
  g_assert_cmpuint(all.flops, ==, 8192 + 1280 + 256);
  g_assert_cmpfloat(fabs(ox_cost_time_us(&all) - (3 * OX_COST_LAUNCH_US + 7808 / OX_COST_BYTES_PER_US +
                                                  9728 / OX_COST_FLOPS_PER_US)),
                    <, 1e-9);
  char buf[200];
  g_assert_cmpstr(ox_cost_format(&all, buf, sizeof buf), ==, "3 launches, 7.8 kB, 9.7 kFLOP");
  ox_doc_free(doc);
}

/* Views are free unless they force a copy; cat and contiguous of a permuted tensor copy. */
static const char views_fx[] =
    "graph():\n"
    "    %x : Tensor \"f32[4, 24]\" = placeholder[target=x]\n"
    "    %split : [num_users=3] = call_function[target=torch.split](args = (%x, 8), kwargs = {dim: 1})\n"
    "    %g0 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 0), kwargs = {})\n"
    "    %g1 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 1), kwargs = {})\n"
    "    %g2 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 2), kwargs = {})\n"
    "    %r0 : [num_users=1] = call_function[target=torch.reshape](args = (%g0, [32]), kwargs = {})\n"
    "    %rx : [num_users=1] = call_function[target=torch.reshape](args = (%x, [96]), kwargs = {})\n"
    "    %cat : [num_users=1] = call_function[target=torch.cat](args = ([%g0, %g1, %g2],), kwargs = {dim: 0})\n"
    "    %p : [num_users=1] = call_method[target=permute](args = (%x, 1, 0), kwargs = {})\n"
    "    %c : [num_users=1] = call_method[target=contiguous](args = (%p,), kwargs = {})\n"
    "    %rows : [num_users=1] = call_function[target=torch.split](args = (%x, 2), kwargs = {dim: 0})\n"
    "    %h0 : [num_users=1] = call_function[target=operator.getitem](args = (%rows, 0), kwargs = {})\n"
    "    %rh : [num_users=1] = call_function[target=torch.reshape](args = (%h0, [48]), kwargs = {})\n"
    "    return (r0, rx, cat, c, rh)\n";

static void test_views(void) {
  OxDoc *doc = load_fx(views_fx);
  OxGraph *g = doc->graphs[0];
  const char *free_nodes[] = {"split", "g0", "g1", "g2", "rx", "p", "rows", "h0", "rh"};
  for (size_t i = 0; i < G_N_ELEMENTS(free_nodes); i++) {
    OxCost c = cost_of(g, free_nodes[i]);
    if (c.launches || c.bytes || c.flops || c.unknown) g_test_message("%s is not free", free_nodes[i]);
    g_assert_cmpuint(c.launches + c.bytes + c.flops + c.unknown, ==, 0);
  }
  /* a piece of a split along dim 1 is not contiguous: reshaping it copies */
  OxCost c = cost_of(g, "r0");
  g_assert_cmpuint(c.launches, ==, 1);
  g_assert_cmpuint(c.bytes, ==, 128 + 128);
  g_assert_cmpuint(c.flops, ==, 0);
  c = cost_of(g, "cat");
  g_assert_cmpuint(c.launches, ==, 1);
  g_assert_cmpuint(c.bytes, ==, 3 * 128 + 384);
  c = cost_of(g, "c");
  g_assert_cmpuint(c.launches, ==, 1);
  g_assert_cmpuint(c.bytes, ==, 384 + 384);
  OxCost all = ox_cost_graph(g);
  g_assert_cmpuint(all.launches, ==, 3);
  g_assert_cmpuint(all.bytes, ==, 256 + 768 + 768);
  g_assert_cmpuint(all.unknown, ==, 0);
  ox_doc_free(doc);
}

/* Unknown shapes and ops are marked unknown, never counted as 0. */
static const char unknown_fx[] =
    "graph():\n"
    "    %x : [num_users=2] = placeholder[target=x]\n"
    "    %y : Tensor \"f32[s0, 4]\" = placeholder[target=y]\n"
    "    %z : Tensor \"f32[2, 4]\" = placeholder[target=z]\n"
    "    %rx : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})\n"
    "    %ry : [num_users=1] = call_function[target=torch.relu](args = (%y,), kwargs = {})\n"
    "    %mine : Tensor \"f32[2, 4]\" = call_function[target=mylib.fused_thing](args = (%z,), kwargs = {})\n"
    "    %odd : [num_users=1] = call_function[target=mylib.other](args = (%x,), kwargs = {})\n"
    "    return (rx, ry, mine, odd)\n";

static void test_unknown(void) {
  OxDoc *doc = load_fx(unknown_fx);
  OxGraph *g = doc->graphs[0];
  OxCost c = cost_of(g, "rx"); /* input without a shape */
  g_assert_cmpuint(c.launches, ==, 1);
  g_assert_cmpuint(c.unknown, ==, OX_COST_BYTES | OX_COST_FLOPS);
  c = cost_of(g, "ry"); /* symbolic size */
  g_assert_cmpuint(c.launches, ==, 1);
  g_assert_cmpuint(c.unknown, ==, OX_COST_BYTES | OX_COST_FLOPS);
  c = cost_of(g, "mine"); /* an op the table does not know, with a shape: bytes known */
  g_assert_cmpuint(c.launches, ==, 1);
  g_assert_cmpuint(c.bytes, ==, 32 + 32);
  g_assert_cmpuint(c.unknown, ==, OX_COST_FLOPS);
  c = cost_of(g, "odd"); /* unknown op, no meta: nothing known */
  g_assert_cmpuint(c.unknown, ==, OX_COST_ALL);
  OxCost all = ox_cost_graph(g);
  g_assert_cmpuint(all.unknown, ==, OX_COST_ALL);
  char buf[200];
  g_assert_cmpstr(ox_cost_format(&all, buf, sizeof buf), ==, "? launches, ? B, ? FLOP");
  /* the guard never rejects what it cannot estimate */
  OxCostPair p = {.set = true, .before = {1, 10, 10, 0}, .after = all};
  char what[160], why[160];
  g_assert_true(ox_cost_guard(&p, 0.5, what, sizeof what, why, sizeof why));
  ox_doc_free(doc);
}

/* Python checks and size arithmetic a traced model keeps (vit_b_16: torch._assert(h == 224, ...),
 * h // 16 * (w // 16)) launch nothing: the whole graph's cost is the relu's, known. */
static const char python_fx[] =
    "graph():\n"
    "    %x : Tensor \"f32[4, 8][8, 1]cpu\" = placeholder[target=x]\n"
    "    %size : [num_users=1] = call_method[target=size](args = (%x, 1), kwargs = {})\n"
    "    %floordiv : [num_users=2] = call_function[target=operator.floordiv](args = (%size, 2), kwargs = {})\n"
    "    %mul : [num_users=1] = call_function[target=operator.mul](args = (%floordiv, %floordiv), kwargs = {})\n"
    "    %eq : [num_users=1] = call_function[target=operator.eq](args = (%mul, 16), kwargs = {})\n"
    "    %_assert : [num_users=0] = call_function[target=torch._assert](args = (%eq, \"Wrong width\"), kwargs = {})\n"
    "    %relu : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})\n"
    "    return (relu,)\n";

static void test_python_checks(void) {
  OxDoc *doc = load_fx(python_fx);
  OxGraph *g = doc->graphs[0];
  OxCost all = ox_cost_graph(g);
  g_assert_cmpuint(all.unknown, ==, 0);
  g_assert_cmpuint(all.launches, ==, 1);
  g_assert_cmpuint(all.bytes, ==, 2 * 4 * 8 * 4);
  OxCost c = cost_of(g, "_assert");
  g_assert_cmpuint(c.launches + c.bytes + c.flops + c.unknown, ==, 0);
  c = cost_of(g, "mul");
  g_assert_cmpuint(c.launches + c.bytes + c.flops + c.unknown, ==, 0);
  ox_doc_free(doc);
}

/* The vision fixture (recorded from torch): attention and Swin's window attention, by hand. */
/* A fixture recorded from torch (tests/data/fixtures/NAME.json) with its shapes inferred; NULL
 * (the test skipped) outside meson test. */
static OxDoc *load_fixture(const char *name) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  if (!root) {
    g_test_skip("OPTIMUS_SOURCE_ROOT is not set (run through meson test): no fixture");
    return NULL;
  }
  g_autofree char *file = g_strdup_printf("%s.json", name);
  g_autofree char *path = g_build_filename(root, "tests", "data", "fixtures", file, NULL);
  OxDiagList d;
  ox_diags_init(&d, path);
  OxDoc *doc = NULL;
  g_assert_cmpint(ox_load_file(path, OX_FMT_UNKNOWN, NULL, &doc, &d), ==, 0);
  ox_diags_clear(&d);
  ox_shape_infer_graph(doc->graphs[0], NULL, NULL);
  return doc;
}

static void test_attention(void) {
  OxDoc *doc = load_fixture("vision");
  if (!doc) return;
  OxGraph *g = doc->graphs[0];
  /* attn: x [2, 5, 8] batch first, 2 heads, need_weights=False (its weights output is None):
   * projections 2 * 8 * 8 * (2 * 10 + 2 * 10) + scores and mix 4 * 10 tokens * 8 * 5 keys;
   * bytes: x once, the output, in_proj 3 * 64 + 24 and out_proj 64 + 8 floats */
  OxCost c = cost_of(g, "attn");
  g_assert_cmpuint(c.unknown, ==, 0);
  g_assert_cmpuint(c.launches, ==, 1);
  g_assert_cmpuint(c.flops, ==, 5120 + 1600);
  g_assert_cmpuint(c.bytes, ==, 320 + 320 + (4 * 64 + 32) * 4);
  /* 3x3 windows over grid [2, 5, 7, 8] padded to 6x9: 108 tokens; qkv and proj 8 * 108 * 64,
   * scores and mix 4 * 108 * 9 * 8 */
  c = cost_of(g, "shifted_window_attention");
  g_assert_cmpuint(c.unknown, ==, 0);
  g_assert_cmpuint(c.flops, ==, 55296 + 31104);
  OxCost all = ox_cost_graph(g);
  g_assert_cmpuint(all.unknown, ==, 0);
  ox_doc_free(doc);
}

/* The sequence fixture (recorded from torch): encoders and recurrent modules, by hand (f32). */
static void test_sequence(void) {
  OxDoc *doc = load_fixture("sequence");
  if (!doc) return;
  OxGraph *g = doc->graphs[0];
  /* enc: seq [5, 3, 8] (15 tokens, 5 long), 2 layers of 2 heads, feed-forward 16: per layer the
   * attention 8 * 8^2 * 15 + 4 * 15 * 8 * 5 and the feed-forward 4 * 15 * 8 * 16; one fused launch
   * per layer; parameters per layer 4 * 64 + 32 + 2 * 8 * 16 + 16 + 8 + 32 floats */
  OxCost c = cost_of(g, "enc");
  g_assert_cmpuint(c.unknown, ==, 0);
  g_assert_cmpuint(c.launches, ==, 2);
  g_assert_cmpuint(c.flops, ==, 2 * (7680 + 2400 + 7680));
  g_assert_cmpuint(c.bytes, ==, 480 + 480 + 2 * 600 * 4);
  /* enc_pre: the same sizes with 12-wide feed-forward and a final norm (2 * 8 floats more) */
  c = cost_of(g, "enc_pre");
  g_assert_cmpuint(c.flops, ==, 2 * (7680 + 2400 + 4 * 15 * 8 * 12));
  g_assert_cmpuint(c.bytes, ==, 480 + 480 + (2 * (288 + 2 * 8 * 12 + 12 + 8 + 32) + 16) * 4);
  /* layer: unbatched [5, 8], one head, feed-forward 8 */
  c = cost_of(g, "layer");
  g_assert_cmpuint(c.flops, ==, 8 * 64 * 5 + 4 * 5 * 8 * 5 + 4 * 5 * 8 * 8);
  /* gru: [3, 5, 8] batch first, hidden 6, 2 layers, both directions (3 gates):
   * 2 * 2 * 15 * 18 * (8 + 6) + 2 * 2 * 15 * 18 * (12 + 6); weights 2 * (18 * 14 + 36) +
   * 2 * (18 * 18 + 36) floats; out [3, 5, 12] and h_n [4, 3, 6] */
  c = cost_of(g, "gru");
  g_assert_cmpuint(c.unknown, ==, 0);
  g_assert_cmpuint(c.launches, ==, 1);
  g_assert_cmpuint(c.flops, ==, 15120 + 19440);
  g_assert_cmpuint(c.bytes, ==, 480 + (180 + 72) * 4 + 1296 * 4);
  /* lstm: [5, 3, 8], hidden 5, 2 layers (4 gates), given h0 and c0 [2, 3, 5]: its result (out
   * [5, 3, 5], h_n and c_n [2, 3, 5]) has no meta and is sized from the settings */
  c = cost_of(g, "lstm");
  g_assert_cmpuint(c.unknown, ==, 0);
  g_assert_cmpuint(c.flops, ==, 2 * 15 * 20 * 13 + 2 * 15 * 20 * 10);
  g_assert_cmpuint(c.bytes, ==, (120 + 30 + 30) * 4 + (75 + 60) * 4 + (20 * 13 + 40 + 20 * 10 + 40) * 4);
  /* rnn: relu, no biases, both directions, hidden 4: 2 * 2 * 15 * 4 * 12; weights 2 * 4 * 12 */
  c = cost_of(g, "rnn");
  g_assert_cmpuint(c.flops, ==, 2880);
  g_assert_cmpuint(c.bytes, ==, 480 + (120 + 24) * 4 + 96 * 4);
  /* cross: query [5, 3, 8], key [5, 3, 6] (kdim), value [5, 3, 4] (vdim), 2 heads: projections
   * 2 * 8 * (2 * 8 * 15 + 6 * 15 + 4 * 15), scores and mix 4 * 15 * 8 * 5; bytes: the three
   * inputs and the bool padding mask [3, 5], the output and the weights [3, 5, 5], q/k/v/out
   * weights 8 * (8 + 6 + 4 + 8) and biases 24 + 8 floats */
  c = cost_of(g, "cross");
  g_assert_cmpuint(c.unknown, ==, 0);
  g_assert_cmpuint(c.flops, ==, 6240 + 2400);
  g_assert_cmpuint(c.bytes, ==, 480 + 360 + 240 + 15 + 480 + 300 + (208 + 32) * 4);
  OxCost all = ox_cost_graph(g);
  g_assert_cmpuint(all.unknown, ==, 0);
  ox_doc_free(doc);
}

/* Five linear towers (x: f32[8, 80] split into 16-wide pieces, linear 16 -> 16): batch_linear
 * fuses them into one step. */
static const char towers_fx[] =
    "graph():\n"
    "    %x : Tensor \"f32[8, 80][80, 1]cpu\" = placeholder[target=x]\n"
    "    %w0 : Tensor \"f32[16, 16][16, 1]cpu\" = placeholder[target=w0]\n"
    "    %w1 : Tensor \"f32[16, 16][16, 1]cpu\" = placeholder[target=w1]\n"
    "    %w2 : Tensor \"f32[16, 16][16, 1]cpu\" = placeholder[target=w2]\n"
    "    %w3 : Tensor \"f32[16, 16][16, 1]cpu\" = placeholder[target=w3]\n"
    "    %w4 : Tensor \"f32[16, 16][16, 1]cpu\" = placeholder[target=w4]\n"
    "    %b0 : Tensor \"f32[16][1]cpu\" = placeholder[target=b0]\n"
    "    %b1 : Tensor \"f32[16][1]cpu\" = placeholder[target=b1]\n"
    "    %b2 : Tensor \"f32[16][1]cpu\" = placeholder[target=b2]\n"
    "    %b3 : Tensor \"f32[16][1]cpu\" = placeholder[target=b3]\n"
    "    %b4 : Tensor \"f32[16][1]cpu\" = placeholder[target=b4]\n"
    "    %split : [num_users=5] = call_function[target=torch.split](args = (%x, 16), kwargs = {dim: 1})\n"
    "    %g0 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 0), kwargs = {})\n"
    "    %g1 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 1), kwargs = {})\n"
    "    %g2 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 2), kwargs = {})\n"
    "    %g3 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 3), kwargs = {})\n"
    "    %g4 : [num_users=1] = call_function[target=operator.getitem](args = (%split, 4), kwargs = {})\n"
    "    %l0 : [num_users=1] = call_function[target=torch.nn.functional.linear](args = (%g0, %w0, %b0), kwargs = {})\n"
    "    %l1 : [num_users=1] = call_function[target=torch.nn.functional.linear](args = (%g1, %w1, %b1), kwargs = {})\n"
    "    %l2 : [num_users=1] = call_function[target=torch.nn.functional.linear](args = (%g2, %w2, %b2), kwargs = {})\n"
    "    %l3 : [num_users=1] = call_function[target=torch.nn.functional.linear](args = (%g3, %w3, %b3), kwargs = {})\n"
    "    %l4 : [num_users=1] = call_function[target=torch.nn.functional.linear](args = (%g4, %w4, %b4), kwargs = {})\n"
    "    %cat : [num_users=1] = call_function[target=torch.cat](args = ([%l0, %l1, %l2, %l3, %l4],), kwargs = {dim: 1})\n"
    "    return (cat,)\n";

/* Runs batch_linear (with extra --option assignments) on the towers; returns the trace. */
static OxTrace *run_towers(OxDoc **doc_out, const char *option, OxOptimizeResult *res) {
  OxDoc *doc = load_fx(towers_fx);
  OxGraph *g = doc->graphs[0];
  OxDiagList d;
  ox_diags_init(&d, "<test>");
  OxPipeline p = {0};
  g_assert_cmpint(ox_pipeline_from_list("batch_linear", &p, &d), ==, 0);
  if (option) g_assert_cmpint(ox_pipeline_set_option(&p, option, &d), ==, 0);
  OxCheckConfig cc;
  ox_check_config_default(&cc);
  OxTrace *t = ox_trace_new_for(g);
  g_assert_cmpint(ox_optimize(g, &p, &cc, t, res, &d), ==, 0);
  ox_pipeline_free(&p);
  ox_diags_clear(&d);
  *doc_out = doc;
  return t;
}

static const OxStep *only_step(const OxTrace *t, OxStepKind kind) {
  const OxStep *found = NULL;
  for (uint32_t i = 0; i < t->n_steps; i++)
    if (t->steps[i].kind == kind) {
      g_assert_null(found);
      found = &t->steps[i];
    }
  g_assert_nonnull(found);
  return found;
}

static void test_batch_step(void) {
  OxDoc *doc;
  OxOptimizeResult res;
  OxDoc *orig = load_fx(towers_fx);
  OxCost before_run = ox_cost_graph(orig->graphs[0]);
  OxTrace *t = run_towers(&doc, NULL, &res);
  g_assert_cmpuint(res.applied, ==, 1);
  const OxStep *s = only_step(t, OX_STEP_APPLIED);
  g_assert_true(s->cost.set);
  const OxCost *b = &s->cost.before, *a = &s->cost.after;
  g_assert_cmpuint(b->unknown | a->unknown, ==, 0);
  /* before: five linears, each x_i 512 + w 1024 + b 64 read, 512 written, 2*16*8*16 FLOPs */
  g_assert_cmpuint(b->launches, ==, 5);
  g_assert_cmpuint(b->bytes, ==, 5 * (512 + 1024 + 64 + 512));
  g_assert_cmpuint(b->flops, ==, 5 * 4096);
  /* after: stack(x_i), stack(w_i), stack(b_i), baddbmm; the transpose, unsqueeze, unbind and
   * getitems are views. The same matmul work; the stacks copy every input once more. */
  g_assert_cmpuint(a->launches, ==, 4);
  g_assert_cmpuint(a->flops, ==, 5 * 4096);
  g_assert_cmpuint(a->bytes, ==, (2560 + 2560) + (5120 + 5120) + (320 + 320) + (320 + 2560 + 5120 + 2560));
  /* the run's totals: the whole graph before and after */
  g_assert_true(t->cost.set);
  g_assert_cmpuint(t->cost.before.launches, ==, before_run.launches);
  g_assert_cmpuint(t->cost.before.bytes, ==, before_run.bytes);
  g_assert_cmpuint(t->cost.before.launches, ==, 6); /* five linears and the cat */
  OxCost now = ox_cost_graph(doc->graphs[0]);
  g_assert_cmpuint(t->cost.after.launches, ==, now.launches);
  g_assert_cmpuint(t->cost.after.launches, ==, 5);
  g_assert_cmpuint(t->cost.after.bytes, ==, now.bytes);
  ox_trace_free(t);
  ox_doc_free(doc);
  ox_doc_free(orig);
}

static uint32_t count_target(const OxGraph *g, const char *target) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id) n += g->nodes[id].target && !strcmp(g->nodes[id].target, target);
  return n;
}

/* The step saves (40 + 10560/3000 + 20480/2500) - (32 + 26560/3000 + 20480/2500) us = 5.2% of
 * its estimate (launches 8 us, 3 GB/s, 2.5 GFLOP/s): min_payoff 0 and -0.5 accept it, 0.1
 * rejects it with reason PAYOFF, leaving the graph and counters alone. */
static void test_guard(void) {
  OxDoc *doc;
  OxOptimizeResult res;
  OxTrace *t = run_towers(&doc, "batch_linear.min_payoff=0", &res);
  g_assert_cmpuint(res.applied, ==, 1);
  const OxStep *s = only_step(t, OX_STEP_APPLIED);
  double tb = 40 + 10560 / 3000.0 + 20480 / 2500.0, ta = 32 + 26560 / 3000.0 + 20480 / 2500.0;
  g_assert_cmpfloat(fabs(ox_cost_payoff(&s->cost) - (tb - ta) / tb), <, 1e-9);
  ox_trace_free(t);
  ox_doc_free(doc);
  t = run_towers(&doc, "batch_linear.min_payoff=-0.5", &res);
  g_assert_cmpuint(res.applied, ==, 1);
  ox_trace_free(t);
  ox_doc_free(doc);

  t = run_towers(&doc, "batch_linear.min_payoff=0.1", &res);
  g_assert_cmpuint(res.applied, ==, 0);
  g_assert_cmpuint(count_target(doc->graphs[0], "torch.nn.functional.linear"), ==, 5);
  for (uint32_t i = 0; i < res.n_counters; i++) g_assert_cmpstr(res.counter_names[i], !=, "batch_linear");
  const OxStep *r = NULL;
  for (uint32_t i = 0; i < t->n_steps; i++)
    if (t->steps[i].reason.code == OX_REASON_PAYOFF && t->steps[i].kind == OX_STEP_REJECTED) r = &t->steps[i];
  g_assert_nonnull(r);
  g_assert_true(r->cost.set);
  g_assert_cmpuint(r->n_matched, ==, 5);
  char *text = ox_reason_format(&r->reason);
  g_test_message("%s", text);
  g_assert_cmpstr(text, ==,
                  "estimated +16.0 kB moved, -1 launches, +0 FLOP (-2.7 us): below the payoff threshold "
                  "(min_payoff 0.1: saves 5.2% of 51.7 us)");
  g_free(text);
  ox_trace_free(t);
  ox_doc_free(doc);

  /* off by default: no option, no guard, even for a step whose estimate grows */
  OxPassOptions o;
  ox_pass_options_default(&o);
  g_assert_false(o.has_min_payoff);
  g_assert_cmpint(ox_pass_option_set(&o, "min_payoff", "x"), ==, -2);
  g_assert_cmpint(ox_pass_option_set(&o, "min_payoff", "2"), ==, -2);
  g_assert_cmpint(ox_pass_option_set(&o, "min_payoff", "-0.25"), ==, 0);
  g_assert_true(o.has_min_payoff);
  g_assert_cmpfloat(o.min_payoff, ==, -0.25);
  /* a pair whose estimate grows by 20%: rejected at 0 and at -0.1, accepted at -0.25 */
  OxCostPair grow = {.set = true, .before = {10, 0, 0, 0}, .after = {12, 0, 0, 0}};
  char what[160], why[160];
  g_assert_false(ox_cost_guard(&grow, 0, what, sizeof what, why, sizeof why));
  g_assert_cmpstr(what, ==, "+0 B moved, +2 launches, +0 FLOP (+16.0 us)");
  g_assert_false(ox_cost_guard(&grow, -0.1, what, sizeof what, why, sizeof why));
  g_assert_true(ox_cost_guard(&grow, -0.25, what, sizeof what, why, sizeof why));
  /* the pipeline's config shows the option only where it is set */
  OxPipeline p = {0};
  OxDiagList d;
  ox_diags_init(&d, NULL);
  g_assert_cmpint(ox_pipeline_from_list("batch_linear,batch_relu", &p, &d), ==, 0);
  g_assert_cmpint(ox_pipeline_set_option(&p, "batch_relu.min_payoff=0.25", &d), ==, 0);
  OxBuf cfg;
  ox_buf_init(&cfg);
  ox_pipeline_to_json(&p, &cfg);
  g_assert_nonnull(strstr(cfg.data, "\"counter\": 1, \"min_payoff\": 0.25}"));
  const char *first = strstr(cfg.data, "min_payoff");
  g_assert_null(strstr(first + 1, "min_payoff")); /* batch_linear has none */
  /* ... and a config file sets it like any option */
  OxPipeline p2 = {0};
  g_assert_cmpint(ox_pipeline_from_config(cfg.data, cfg.len, "c.json", &p2, &d), ==, 0);
  uint32_t guarded = 0;
  for (uint32_t i = 0; i < p2.n; i++)
    if (p2.entries[i].opt.has_min_payoff) {
      g_assert_cmpstr(p2.entries[i].pass->name, ==, "batch_relu");
      g_assert_cmpfloat(p2.entries[i].opt.min_payoff, ==, 0.25);
      guarded++;
    }
  g_assert_cmpuint(guarded, ==, 1);
  ox_pipeline_free(&p2);
  ox_buf_free(&cfg);
  ox_pipeline_free(&p);
  ox_diags_clear(&d);
}

/* Costs survive the trace's JSON; unknown values are null; traces without costs still read. */
static void test_json(void) {
  OxDoc *doc;
  OxOptimizeResult res;
  OxTrace *t = run_towers(&doc, NULL, &res);
  /* make one value unknown to see null travel */
  t->steps[t->n_steps - 1].cost.after.unknown = OX_COST_FLOPS;
  OxDiagList d;
  OxTrace *r = NULL;
  for (int version = 2; version <= 3; version++) {
    OxBuf b;
    ox_buf_init(&b);
    ox_trace_write_json_version(t, version, &b);
    g_assert_nonnull(strstr(b.data, version == 2 ? "\"cost\": {\"launches\": [6, 5], " : "\"cost\":{\"launches\":[6,5],"));
    ox_diags_init(&d, "t.json");
    g_assert_cmpint(ox_trace_read_json(b.data, b.len, "t.json", &r, &d), ==, 0);
    g_assert_true(r->cost.set);
    g_assert_cmpmem(&r->cost.before, sizeof r->cost.before, &t->cost.before, sizeof t->cost.before);
    g_assert_cmpmem(&r->cost.after, sizeof r->cost.after, &t->cost.after, sizeof t->cost.after);
    g_assert_cmpuint(r->n_steps, ==, t->n_steps);
    for (uint32_t i = 0; i < t->n_steps; i++) {
      const OxCostPair *x = &t->steps[i].cost, *y = &r->steps[i].cost;
      g_assert_cmpint(x->set, ==, y->set);
      if (!x->set) continue;
      for (int k = 0; k < 2; k++) {
        const OxCost *cx = k ? &x->after : &x->before, *cy = k ? &y->after : &y->before;
        g_assert_cmpuint(cx->unknown, ==, cy->unknown);
        g_assert_cmpuint(cx->launches, ==, cy->launches);
        g_assert_cmpuint(cx->bytes, ==, cy->bytes);
        if (!(cx->unknown & OX_COST_FLOPS)) g_assert_cmpuint(cx->flops, ==, cy->flops);
      }
    }
    g_assert_cmpuint(r->steps[r->n_steps - 1].cost.after.unknown, ==, OX_COST_FLOPS);
    ox_trace_free(r);
    ox_diags_clear(&d);
    ox_buf_free(&b);
  }

  /* an old trace: no cost anywhere */
  static const char old[] = "{\"format\": \"optimus-trace\", \"version\": 2, \"input\": {\"file\": \"a\", \"hash\": \"1\"},\n"
                            " \"steps\": [{\"seq\": 0, \"kind\": \"rejected\", \"pass\": \"p\"}]}";
  ox_diags_init(&d, "old.json");
  g_assert_cmpint(ox_trace_read_json(old, strlen(old), "old.json", &r, &d), ==, 0);
  g_assert_false(r->cost.set);
  g_assert_false(r->steps[0].cost.set);
  ox_trace_free(r);
  ox_diags_clear(&d);

  /* a damaged cost is a located error */
  static const char bad[] = "{\"format\": \"optimus-trace\", \"version\": 2, \"input\": {\"file\": \"a\", \"hash\": \"1\"},\n"
                            " \"steps\": [\n  {\"seq\": 0, \"kind\": \"applied\", \"pass\": \"p\",\n"
                            "   \"cost\": {\"launches\": [3, \"two\"]}}]}";
  ox_diags_init(&d, "bad.json");
  g_assert_cmpint(ox_trace_read_json(bad, strlen(bad), "bad.json", &r, &d), ==, -1);
  g_assert_null(r);
  g_assert_cmpuint(d.n, >=, 1);
  g_test_message("%u:%u %s", d.items[0].line, d.items[0].col, d.items[0].msg);
  g_assert_nonnull(strstr(d.items[0].msg, "cost"));
  g_assert_cmpuint(d.items[0].line, ==, 4);
  ox_diags_clear(&d);
  ox_trace_free(t);
  ox_doc_free(doc);
}

/* The bundled example's committed trace: every applied batch fusion of n >= 2 nodes launches
 * fewer kernels after than before, and every applied step has a complete cost (the example's
 * shapes are all known). */
static void test_bundled_example(void) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  if (!root) {
    g_test_skip("OPTIMUS_SOURCE_ROOT is not set (run through meson test)");
    return;
  }
  char *path = g_build_filename(root, "data", "examples", "recsys-towers.trace.json", NULL);
  gchar *text;
  gsize len;
  g_assert_true(g_file_get_contents(path, &text, &len, NULL));
  OxDiagList d;
  ox_diags_init(&d, path);
  OxTrace *t = NULL;
  g_assert_cmpint(ox_trace_read_json(text, len, path, &t, &d), ==, 0);
  g_assert_true(t->cost.set);
  g_assert_cmpuint(t->cost.before.launches, ==, 62);
  uint32_t batch = 0;
  for (uint32_t i = 0; i < t->n_steps; i++) {
    const OxStep *s = &t->steps[i];
    if (s->kind != OX_STEP_APPLIED) continue;
    g_assert_true(s->cost.set);
    g_assert_cmpuint(s->cost.before.unknown | s->cost.after.unknown, ==, 0);
    const OxPassInfo *p = ox_pass_find(s->pass);
    g_assert_nonnull(p);
    if (p->engine != OX_ENGINE_BATCH || s->n_matched < 2) continue;
    batch++;
    g_assert_cmpuint(s->cost.after.launches, <, s->cost.before.launches);
    g_assert_cmpuint(s->cost.after.flops, >=, s->cost.before.flops); /* the same work, or more */
  }
  g_assert_cmpuint(batch, ==, 5); /* 2 batch_linear, 2 batch_layernorm, 1 batch_relu */
  ox_trace_free(t);
  ox_diags_clear(&d);
  g_free(text);
  g_free(path);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/cost/chain", test_chain);
  g_test_add_func("/cost/views", test_views);
  g_test_add_func("/cost/unknown", test_unknown);
  g_test_add_func("/cost/python-checks", test_python_checks);
  g_test_add_func("/cost/attention", test_attention);
  g_test_add_func("/cost/sequence", test_sequence);
  g_test_add_func("/cost/batch-step", test_batch_step);
  g_test_add_func("/cost/guard", test_guard);
  g_test_add_func("/cost/json", test_json);
  g_test_add_func("/cost/bundled-example", test_bundled_example);
  return g_test_run();
}
