/* test-ui-model.c - the debugger's document model without a display (suite ui-model).
 *
 * A small test pass written with the engine's step protocol (relu(relu(x)) -> one new relu,
 * everything else rejected with a reason) produces a trace with applied and rejected steps,
 * added and removed nodes; the tests drive OxDocument through load, optimize, stepping,
 * replay, selection, search, filters, explain and export, counting notify:: emissions.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "ox-document.h"
#include "ui-test-pass.h"
#include "ops/ox_shape.h"
#include "write/ox_write.h"

/* ------------------------------------------------------------------ the test pass */

static GPtrArray *recorded; /* FX text of the graph after each applied step, when non-NULL */

static void record_graph(const OxGraph *g) {
  if (!recorded) return;
  OxBuf b;
  ox_buf_init(&b);
  ox_write_fx_text(g, &b);
  g_ptr_array_add(recorded, g_strndup(b.data, b.len));
  ox_buf_free(&b);
}

static OxPipeline *test_pipeline(void) {
  ui_test_on_applied = record_graph;
  return ui_test_pipeline();
}

/* ------------------------------------------------------------------ helpers */

static char *data_path(const char *name) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  return g_build_filename(root ? root : ".", "tests", "data", "ui", name, NULL);
}

static OxDocument *loaded_doc(void) {
  OxDocument *d = ox_document_new();
  g_autofree char *path = data_path("relu-chain.txt");
  GError *err = NULL;
  g_assert_true(ox_document_load_file(d, path, NULL, &err));
  g_assert_no_error(err);
  OxCheckConfig checks;
  ox_check_config_default(&checks);
  ox_document_set_pipeline(d, test_pipeline(), &checks);
  return d;
}

static OxDocument *optimized_doc(void) {
  OxDocument *d = loaded_doc();
  GError *err = NULL;
  g_assert_true(ox_document_optimize(d, NULL, &err));
  g_assert_no_error(err);
  return d;
}

static void count_notify(GObject *o, GParamSpec *ps, gpointer data) {
  (void)o;
  (void)ps;
  (*(guint *)data)++;
}

static void count_signal(gpointer instance, gpointer data) {
  (void)instance;
  (*(guint *)data)++;
}

static guint *watch(OxDocument *d, const char *prop) {
  guint *n = g_new0(guint, 1);
  char *sig = g_strconcat("notify::", prop, NULL);
  g_signal_connect_data(d, sig, G_CALLBACK(count_notify), n, (GClosureNotify)(void (*)(void))g_free, 0);
  g_free(sig);
  return n;
}

static char *fx_of(const OxGraph *g) {
  OxBuf b;
  ox_buf_init(&b);
  ox_write_fx_text(g, &b);
  char *s = g_strndup(b.data, b.len);
  ox_buf_free(&b);
  return s;
}

/* ------------------------------------------------------------------ tests */

static void test_load(void) {
  g_autoptr(OxDocument) d = loaded_doc();
  g_assert_true(ox_document_has_graph(d));
  g_assert_cmpuint(ox_document_get_n_steps(d), ==, 0);
  g_assert_cmpuint(ox_document_get_position(d), ==, 0);
  OxGraph *g = ox_document_get_graph(d);
  g_assert_nonnull(g);
  g_assert_cmpuint(g->n_live, ==, 10); /* 9 nodes + output */
  g_assert_cmpstr(ox_document_get_status(d), ==, "not optimized yet");
  guint n;
  const guint8 *st = ox_document_get_node_states(d, &n);
  g_assert_cmpuint(n, ==, 11);
  for (guint i = 1; i < n; i++) g_assert_cmpuint(st[i], ==, OX_NS_NORMAL);
}

static void test_bad_file(void) {
  g_autoptr(OxDocument) d = ox_document_new();
  g_autofree char *path = data_path("bad.txt");
  GError *err = NULL;
  g_assert_false(ox_document_load_file(d, path, NULL, &err));
  g_assert_nonnull(err);
  /* the engine's located message: FILE:LINE:COL: error: ... */
  g_assert_nonnull(strstr(err->message, "bad.txt:1:1: error"));
  g_clear_error(&err);
  g_assert_false(ox_document_has_graph(d));
  g_autofree char *missing = data_path("does-not-exist.txt");
  g_assert_false(ox_document_load_file(d, missing, NULL, &err));
  g_assert_nonnull(err);
  g_clear_error(&err);
}

/* --input-shape / --shapes given with a graph: applied to it on load, parameters inferred from
 * their uses, what was inferred in the shapes note; a bad spec fails that load and is then
 * forgotten. */
/* The graphs of a two-graph dump as entries; --graph picks the top-level graph; out of range
 * fails the load naming the count; switching keeps each graph's history. */
static void test_graph_entries(void) {
  g_autofree char *dir = g_dir_make_tmp("ox-uigraphs-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "two.txt", NULL);
  g_assert_true(g_file_set_contents(path,
                                    "graph():\n"
                                    "    %x : [#users=1] = placeholder[target=x]\n"
                                    "    %relu : [#users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})\n"
                                    "    %relu_1 : [#users=1] = call_function[target=torch.relu](args = (%relu,), kwargs = {})\n"
                                    "    return relu_1\n"
                                    "graph():\n"
                                    "    %y : [#users=1] = placeholder[target=y]\n"
                                    "    %sigmoid : [#users=1] = call_function[target=torch.sigmoid](args = (%y,), kwargs = {})\n"
                                    "    return sigmoid\n",
                                    -1, NULL));
  g_autoptr(OxDocument) d = ox_document_new();
  GError *err = NULL;
  g_assert_true(ox_document_load_file(d, path, NULL, &err));
  g_assert_cmpuint(ox_document_get_n_graph_entries(d), ==, 2);
  g_assert_cmpuint(ox_document_get_graph_entry_index(d), ==, 0);
  g_assert_cmpuint(ox_document_get_graph_entry(d, 0)->n_nodes, ==, 3);
  g_assert_cmpuint(ox_document_get_graph_entry(d, 1)->n_nodes, ==, 2);
  g_assert_cmpuint(ox_document_get_graph_entry(d, 1)->depth, ==, 0);
  g_assert_true(ox_document_show_graph_entry(d, 1, &err));
  g_assert_cmpint(ox_graph_find(ox_document_get_graph(d), "sigmoid"), !=, 0);
  g_assert_false(ox_document_show_graph_entry(d, 2, &err));
  g_assert_nonnull(err);
  g_clear_error(&err);
  g_assert_cmpuint(ox_document_get_graph_entry_index(d), ==, 1);
  g_assert_true(ox_document_show_graph_entry(d, 0, &err));
  g_assert_cmpint(ox_graph_find(ox_document_get_graph(d), "relu_1"), !=, 0);
  /* --graph 1 */
  ox_document_set_pending_graph(d, 1);
  g_assert_true(ox_document_load_file(d, path, NULL, &err));
  g_assert_cmpuint(ox_document_get_graph_entry_index(d), ==, 1);
  /* forgotten after that load */
  g_assert_true(ox_document_load_file(d, path, NULL, &err));
  g_assert_cmpuint(ox_document_get_graph_entry_index(d), ==, 0);
  /* out of range: a located error, the document keeps its graph */
  ox_document_set_pending_graph(d, 5);
  g_assert_false(ox_document_load_file(d, path, NULL, &err));
  g_assert_nonnull(err);
  g_test_message("%s", err->message);
  g_assert_nonnull(strstr(err->message, "out of range: the input has 2 graphs"));
  g_clear_error(&err);
  g_assert_true(ox_document_has_graph(d));
  g_assert_cmpuint(ox_document_get_n_load_warnings(d), ==, 0);
  g_unlink(path);
  g_rmdir(dir);
}

static void test_pending_shapes(void) {
  g_autofree char *dir = g_dir_make_tmp("ox-uishapes-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "paste.txt", NULL);
  g_assert_true(g_file_set_contents(path,
                                    "graph():\n"
                                    "    %x :[num_users=1] = placeholder[target=x]\n"
                                    "    %w :[num_users=1] = get_attr[target=fc.weight]\n"
                                    "    %lin :[num_users=1] = call_function[target=torch.nn.functional.linear](args = (%x, %w), kwargs = {})\n"
                                    "    %ln :[num_users=1] = call_function[target=torch.nn.functional.layer_norm](args = (%lin, (12,)), kwargs = {})\n"
                                    "    %e :[num_users=1] = get_attr[target=emb.weight]\n"
                                    "    %i :[num_users=1] = placeholder[target=i]\n"
                                    "    %emb :[num_users=1] = call_function[target=torch.nn.functional.embedding](args = (%i, %e), kwargs = {})\n"
                                    "    return (ln, emb)\n",
                                    -1, NULL));
  g_autoptr(OxDocument) d = ox_document_new();
  const char *specs[] = {"x=4,8", "i=i64:4"};
  ox_document_set_pending_shapes(d, specs, 2, NULL);
  GError *err = NULL;
  g_assert_true(ox_document_load_file(d, path, NULL, &err));
  g_assert_no_error(err);
  OxGraph *g = ox_document_get_graph(d);
  char buf[64];
  ox_meta_format(&g->nodes[ox_graph_find(g, "w")].meta, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "f32[12, 8]");
  ox_meta_format(&g->nodes[ox_graph_find(g, "ln")].meta, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "f32[4, 12]");
  g_assert_cmpstr(ox_document_get_shapes_note(d), ==, "shapes: 1 parameter inferred from their uses, 1 without a shape");
  /* the next load without shapes: none applied, no note */
  g_assert_true(ox_document_load_file(d, path, NULL, &err));
  g = ox_document_get_graph(d);
  g_assert_cmpint(g->nodes[ox_graph_find(g, "w")].meta.kind, ==, OX_META_NONE);
  g_assert_null(ox_document_get_shapes_note(d));
  /* a bad spec: the load fails with the engine's message, the document keeps its graph */
  const char *bad[] = {"nope=3"};
  ox_document_set_pending_shapes(d, bad, 1, NULL);
  g_assert_false(ox_document_load_file(d, path, NULL, &err));
  g_assert_nonnull(err);
  g_assert_nonnull(strstr(err->message, "no placeholder or get_attr named nope"));
  g_clear_error(&err);
  g_assert_true(ox_document_has_graph(d));
  /* a shapes file */
  g_autofree char *sf = g_build_filename(dir, "s.json", NULL);
  g_assert_true(g_file_set_contents(sf, "{\"x\": [2, 8], \"emb.weight\": \"f32[100, 6]\"}", -1, NULL));
  ox_document_set_pending_shapes(d, NULL, 0, sf);
  g_assert_true(ox_document_load_file(d, path, NULL, &err));
  g_assert_no_error(err);
  g = ox_document_get_graph(d);
  ox_meta_format(&g->nodes[ox_graph_find(g, "e")].meta, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "f32[100, 6]");
  ox_meta_format(&g->nodes[ox_graph_find(g, "w")].meta, buf, sizeof buf);
  g_assert_cmpstr(buf, ==, "f32[12, 8]");
  g_unlink(sf);
  g_unlink(path);
  g_rmdir(dir);
}

static void test_optimize(void) {
  g_autoptr(OxDocument) d = loaded_doc();
  guint *n_steps = watch(d, "n-steps");
  g_assert_true(ox_document_optimize(d, NULL, NULL));
  g_assert_cmpuint(*n_steps, ==, 1);
  const OxTrace *t = ox_document_get_trace(d);
  g_assert_nonnull(t);
  g_assert_cmpuint(t->n_steps, ==, 4);
  g_assert_cmpuint(t->n_applied, ==, 2);
  g_assert_cmpuint(t->n_rejected, ==, 2);
  g_assert_cmpuint(t->steps[0].kind, ==, OX_STEP_REJECTED);
  g_assert_cmpuint(t->steps[1].kind, ==, OX_STEP_APPLIED);
  g_assert_cmpuint(t->steps[1].checks[OX_CHECK_STRUCTURE].status, ==, OX_CHECK_PASSED);
  g_assert_cmpuint(ox_document_get_history(d)->n_graph_steps, ==, 2);
}

static void test_replay_equals_recorded(void) {
  recorded = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(OxDocument) d = optimized_doc();
  g_assert_cmpuint(recorded->len, ==, 2);
  /* every position, in both directions and by jumps: the shown graph is the recorded one */
  guint n = ox_document_get_n_steps(d);
  guint order[] = {0, 1, 2, 3, 4, 3, 2, 1, 0, 4, 0, 2};
  for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
    ox_document_set_position(d, order[i]);
    guint k = ox_document_get_shown_gstep(d);
    g_autofree char *got = fx_of(ox_document_get_graph(d));
    /* the status line's count: the history's per-step count is the graph's own */
    for (int before = 0; before < 2; before++) {
      ox_document_set_show_before(d, before);
      const OxGraph *sg = ox_document_get_graph(d);
      guint32 ks = ox_document_get_shown_gstep(d), walked = 0;
      OX_GRAPH_FOREACH(sg, id) walked += sg->nodes[id].op != OX_OP_OUTPUT;
      const OxHistory *h = ox_document_get_history(d);
      g_assert_cmpuint(h->live_at[ks], ==, sg->n_live);
      g_assert_cmpuint(h->counted_at[ks], ==, walked);
      g_assert_cmpuint(ox_history_count_nodes(h, sg, ks), ==, walked);
    }
    ox_document_set_show_before(d, FALSE);
    if (k == 0) {
      g_autofree char *want = fx_of(ox_document_get_history(d)->input);
      g_assert_cmpstr(got, ==, want);
    } else {
      g_assert_cmpstr(got, ==, g_ptr_array_index(recorded, k - 1));
    }
  }
  g_assert_cmpuint(n, ==, 4);
  /* graph after the last step: both relu chains fused */
  ox_document_set_position(d, 4);
  OxGraph *g = ox_document_get_graph(d);
  g_assert_cmpuint(ox_graph_find(g, "relu"), ==, 0);
  g_assert_cmpuint(ox_graph_find(g, "relu_3"), ==, 0);
  g_assert_cmpuint(ox_graph_find(g, "relu_fused"), !=, 0);
  g_assert_cmpuint(ox_graph_find(g, "relu_fused_1"), !=, 0);
  g_assert_cmpint(ox_graph_verify(g, true, NULL), ==, 0);
  g_ptr_array_free(recorded, TRUE);
  recorded = NULL;
}

static void test_stepping(void) {
  g_autoptr(OxDocument) d = optimized_doc();
  guint *pos = watch(d, "position");
  guint frames = 0;
  g_signal_connect(d, "frame-changed", G_CALLBACK(count_signal), &frames);
  g_assert_true(ox_document_step_next(d));
  g_assert_cmpuint(ox_document_get_position(d), ==, 1);
  g_assert_true(ox_document_step_last(d));
  g_assert_cmpuint(ox_document_get_position(d), ==, 4);
  g_assert_false(ox_document_step_next(d));
  g_assert_false(ox_document_step_last(d));
  g_assert_true(ox_document_step_prev(d));
  g_assert_cmpuint(ox_document_get_position(d), ==, 3);
  g_assert_true(ox_document_step_first(d));
  g_assert_cmpuint(ox_document_get_position(d), ==, 0);
  g_assert_false(ox_document_step_prev(d));
  g_assert_cmpuint(*pos, ==, 4);
  g_assert_cmpuint(frames, ==, 4);
  ox_document_set_position(d, 999); /* clamped */
  g_assert_cmpuint(ox_document_get_position(d), ==, 4);
}

static void test_step_states(void) {
  g_autoptr(OxDocument) d = optimized_doc();
  OxHistory *h = ox_document_get_history(d);
  guint32 linear0 = ox_document_uid_of(d, "linear");
  guint32 relu1 = ox_document_uid_of(d, "relu_1");
  g_assert_cmpuint(linear0, !=, 0);
  /* step 2 (position 2) is the first applied step: relu + relu_1 -> relu_fused */
  ox_document_set_position(d, 2);
  guint n;
  const guint8 *st = ox_document_get_node_states(d, &n);
  g_assert_cmpuint(st[relu1], ==, OX_NS_REMOVED);
  g_assert_cmpuint(st[ox_history_uid(h, "relu", 0)], ==, OX_NS_REMOVED);
  guint32 fused = ox_document_uid_of(d, "relu_fused");
  g_assert_cmpuint(fused, !=, 0);
  g_assert_cmpuint(st[fused], ==, OX_NS_ADDED);
  g_assert_cmpuint(st[linear0], ==, OX_NS_DIMMED);
  g_assert_cmpuint(ox_document_get_anchor_uid(d), ==, relu1);
  /* identity is stable: the same uid for linear at every position */
  for (guint p = 0; p <= 4; p++) {
    ox_document_set_position(d, p);
    g_assert_cmpuint(ox_document_uid_of(d, "linear"), ==, linear0);
  }
  /* before view of step 2: relu_fused does not exist yet, removed nodes still red */
  ox_document_set_position(d, 2);
  ox_document_set_show_before(d, TRUE);
  st = ox_document_get_node_states(d, &n);
  g_assert_cmpuint(st[fused], ==, OX_NS_HIDDEN);
  g_assert_cmpuint(st[relu1], ==, OX_NS_REMOVED);
  g_assert_nonnull(ox_graph_node(ox_document_get_graph(d), ox_graph_find(ox_document_get_graph(d), "relu_1")));
  ox_document_set_show_before(d, FALSE);
  /* a rejected step: anchor highlighted, nothing added or removed */
  ox_document_set_position(d, 3);
  st = ox_document_get_node_states(d, &n);
  guint32 relu2 = ox_document_uid_of(d, "relu_2");
  g_assert_cmpuint(ox_document_get_anchor_uid(d), ==, relu2);
  g_assert_cmpuint(st[relu2], ==, OX_NS_ANCHOR);
  for (guint i = 1; i < n; i++) {
    g_assert_cmpuint(st[i], !=, OX_NS_ADDED);
    g_assert_cmpuint(st[i], !=, OX_NS_REMOVED);
  }
  /* edges of the shown graph only: relu_fused_1 does not exist at position 3 */
  guint ne;
  const OxFrameEdge *e = ox_document_get_edges(d, &ne);
  g_assert_cmpuint(ne, >, 0);
  for (guint i = 0; i < ne; i++) {
    g_assert_cmpuint(st[e[i].from], !=, OX_NS_HIDDEN);
    g_assert_cmpuint(st[e[i].to], !=, OX_NS_HIDDEN);
  }
}

static void test_union(void) {
  g_autoptr(OxDocument) d = optimized_doc();
  OxHistory *h = ox_document_get_history(d);
  /* 10 input nodes + 2 added identities */
  g_assert_cmpuint(h->u->n_live, ==, 12);
  guint32 f = ox_history_uid(h, "relu_fused", 1);
  g_assert_cmpuint(h->born[f], ==, 1);
  g_assert_cmpuint(h->died[f], ==, OX_HISTORY_NEVER);
  guint32 r = ox_history_uid(h, "relu", 0);
  g_assert_cmpuint(h->died[r], ==, 1);
  g_assert_cmpuint(ox_history_uid(h, "relu", 1), ==, 0);
  /* the union keeps old and new edges: sigmoid was fed by relu_1, then by relu_fused */
  guint32 sig = ox_history_uid(h, "sigmoid", 0);
  OxNodeId ins[8];
  guint32 n = ox_graph_inputs(h->u, sig, ins, 8);
  g_assert_cmpuint(n, ==, 2);
}

static void test_selection(void) {
  g_autoptr(OxDocument) d = optimized_doc();
  guint *sel = watch(d, "selected");
  g_assert_true(ox_document_select(d, "linear"));
  g_assert_cmpstr(ox_document_get_selected(d), ==, "linear");
  g_assert_true(ox_document_select(d, "linear")); /* same: no notify */
  g_assert_false(ox_document_select(d, "no_such_node"));
  g_assert_cmpstr(ox_document_get_selected(d), ==, "linear");
  g_assert_true(ox_document_select(d, NULL));
  g_assert_null(ox_document_get_selected(d));
  g_assert_cmpuint(*sel, ==, 2);
  /* a node of a later step can be selected (the inspector tells when it is not alive) */
  g_assert_true(ox_document_select(d, "relu_fused"));
}

static void test_search(void) {
  g_autoptr(OxDocument) d = optimized_doc();
  guint *hits = watch(d, "n-hits");
  ox_document_set_search_text(d, "relu");
  g_assert_cmpuint(ox_document_get_n_hits(d), ==, 4);
  g_assert_cmpuint(*hits, >=, 1);
  g_assert_true(ox_document_is_hit(d, ox_document_uid_of(d, "relu_2")));
  g_assert_false(ox_document_is_hit(d, ox_document_uid_of(d, "linear")));
  g_assert_true(ox_document_search_next(d));
  g_assert_cmpstr(ox_document_get_selected(d), ==, "relu");
  g_assert_true(ox_document_search_next(d));
  g_assert_cmpstr(ox_document_get_selected(d), ==, "relu_1");
  g_assert_true(ox_document_search_prev(d));
  g_assert_true(ox_document_search_prev(d));
  g_assert_cmpstr(ox_document_get_selected(d), ==, "relu_3"); /* wraps */
  /* hits follow the shown graph */
  ox_document_set_position(d, 4);
  g_assert_cmpuint(ox_document_get_n_hits(d), ==, 2); /* relu_fused, relu_fused_1 */
  ox_document_set_position(d, 0);
  ox_document_set_search_text(d, "op:pointwise");
  g_assert_cmpuint(ox_document_get_n_hits(d), ==, 6); /* 4 relu, sigmoid, add */
  ox_document_set_search_text(d, "op:matmul");
  g_assert_cmpuint(ox_document_get_n_hits(d), ==, 1);
  ox_document_set_search_text(d, "op:input");
  g_assert_cmpuint(ox_document_get_n_hits(d), ==, 2);
  ox_document_set_search_text(d, "/^relu_[13]$/");
  g_assert_cmpuint(ox_document_get_n_hits(d), ==, 2);
  ox_document_set_search_text(d, "target:sigmoid");
  g_assert_cmpuint(ox_document_get_n_hits(d), ==, 1);
  ox_document_set_search_text(d, "re:([");
  g_assert_nonnull(ox_document_get_search_error(d));
  g_assert_cmpuint(ox_document_get_n_hits(d), ==, 0);
  ox_document_set_search_text(d, "op:bogus");
  g_assert_nonnull(ox_document_get_search_error(d));
  /* lineage: what a node depends on, what depends on it, both within N hops; never the node
   * itself; hits in graph order */
  static const struct {
    const char *q;
    guint n;
    const char *first, *absent;
  } lin[] = {
    {"up:relu_1", 4, "x", "sigmoid"},           /* relu, linear, x, w */
    {"up:relu_1:1", 1, "relu", "linear"},
    {"down:relu_1", 5, "sigmoid", "relu"},      /* sigmoid, relu_2, relu_3, add, output */
    {"down:relu_3", 2, "add", "relu_1"},
    {"near:relu_1", 3, "relu", "relu_2"},       /* one hop: relu, sigmoid, add */
    {"near: relu_1 :2", 7, "linear", "x"},      /* + linear, relu_2, relu_3 (an input of add), output */
    {"up:x", 0, NULL, "relu"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(lin); i++) {
    ox_document_set_search_text(d, lin[i].q);
    g_assert_null(ox_document_get_search_error(d));
    g_assert_cmpuint(ox_document_get_n_hits(d), ==, lin[i].n);
    if (lin[i].first) g_assert_cmpstr(ox_document_get_hit(d, 0), ==, lin[i].first);
    g_assert_false(ox_document_is_hit(d, ox_document_uid_of(d, lin[i].absent)));
    g_assert_false(ox_document_is_hit(d, ox_document_uid_of(d, "relu_1")));
  }
  static const char *const bad[][2] = {
    {"up:nope", "no node 'nope' in the graph at this step"},
    {"down:relu_1:x", "'x' is not a number of hops"},
    {"near:relu_1:0", "'0' is not a number of hops"},
    {"up:", "take a node name"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    ox_document_set_search_text(d, bad[i][0]);
    g_assert_nonnull(ox_document_get_search_error(d));
    g_assert_nonnull(strstr(ox_document_get_search_error(d), bad[i][1]));
    g_assert_cmpuint(ox_document_get_n_hits(d), ==, 0);
  }
  /* anchors: the nodes the listed steps started from, following the timeline's filters */
  const OxTrace *t = ox_document_get_trace(d);
  for (int k = 0; k < 2; k++) {
    ox_document_set_filter_kinds(d, k ? OX_FILTER_APPLIED : OX_FILTER_REJECTED);
    if (k) g_assert_cmpstr(ox_document_get_search_text(d), ==, "anchors:"); /* kept across the change */
    else ox_document_set_search_text(d, "anchors:");
    g_assert_null(ox_document_get_search_error(d));
    GHashTable *want = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < t->n_steps; i++) {
      const OxStep *st = &t->steps[i];
      gboolean listed = k ? st->kind == OX_STEP_APPLIED : st->kind == OX_STEP_REJECTED;
      if (listed && st->anchor && ox_document_uid_of(d, st->anchor)) g_hash_table_add(want, (gpointer)st->anchor);
    }
    g_assert_cmpuint(g_hash_table_size(want), >, 0);
    g_assert_cmpuint(ox_document_get_n_hits(d), ==, g_hash_table_size(want));
    for (guint i = 0; i < ox_document_get_n_hits(d); i++)
      g_assert_true(g_hash_table_contains(want, ox_document_get_hit(d, i)));
    g_hash_table_unref(want);
  }
  ox_document_set_filter_kinds(d, OX_FILTER_ALL);
  ox_document_set_search_text(d, "anchors: x");
  g_assert_nonnull(ox_document_get_search_error(d));
  /* it follows the shown graph: after the relus are fused, relu_1 is gone */
  ox_document_set_search_text(d, "down:linear");
  guint before = ox_document_get_n_hits(d);
  ox_document_set_position(d, 4);
  g_assert_null(ox_document_get_search_error(d));
  g_assert_cmpuint(ox_document_get_n_hits(d), !=, before);
  ox_document_set_search_text(d, "up:relu_1");
  g_assert_nonnull(ox_document_get_search_error(d));
  ox_document_set_position(d, 0);
  ox_document_set_search_text(d, NULL);
  g_assert_null(ox_document_get_search_error(d));
  g_assert_false(ox_document_search_next(d));
}

static guint count_rows(OxDocument *d, gboolean headers) {
  GListModel *m = ox_document_get_timeline(d);
  guint c = 0;
  for (guint i = 0; i < g_list_model_get_n_items(m); i++) {
    g_autoptr(OxStepItem) it = g_list_model_get_item(m, i);
    if (it->header == headers) c++;
  }
  return c;
}

static void test_filters(void) {
  g_autoptr(OxDocument) d = optimized_doc();
  g_assert_cmpuint(count_rows(d, TRUE), ==, 1);
  g_assert_cmpuint(count_rows(d, FALSE), ==, 4);
  GListModel *m = ox_document_get_timeline(d);
  g_autoptr(OxStepItem) head = g_list_model_get_item(m, 0);
  g_assert_nonnull(strstr(head->subtitle, "2 applied"));
  g_assert_nonnull(strstr(head->subtitle, "2 rejected"));
  /* and the pass's wall time from the trace's per-pass table */
  g_assert_true(g_regex_match_simple("^2 applied · 2 rejected · [0-9]+(\\.[0-9])? (ms|s)$", head->subtitle, 0, 0));
  guint *kinds = watch(d, "filter-kinds");
  ox_document_set_filter_kinds(d, OX_FILTER_REJECTED);
  g_assert_cmpuint(*kinds, ==, 1);
  g_assert_cmpuint(count_rows(d, FALSE), ==, 2);
  g_assert_true(ox_document_step_next(d));
  g_assert_cmpuint(ox_document_get_position(d), ==, 1);
  g_assert_true(ox_document_step_next(d));
  g_assert_cmpuint(ox_document_get_position(d), ==, 3); /* skipped the applied step 2 */
  g_assert_false(ox_document_step_next(d));
  g_assert_cmpuint(ox_document_timeline_row(d, 2), ==, G_MAXUINT);
  g_assert_cmpuint(ox_document_timeline_row(d, 3), ==, 2);
  ox_document_set_filter_kinds(d, OX_FILTER_ALL);
  ox_document_set_filter_pass(d, "other_pass");
  g_assert_cmpuint(g_list_model_get_n_items(m), ==, 0);
  ox_document_set_filter_pass(d, "ui_test_fuse_relu");
  g_assert_cmpuint(count_rows(d, FALSE), ==, 4);
  /* touching the selected node: relu_2 is the rejected anchor of step 3 and matched in step 4 */
  g_assert_true(ox_document_select(d, "relu_2"));
  ox_document_set_filter_touching(d, TRUE);
  g_assert_cmpuint(count_rows(d, FALSE), ==, 2);
  g_assert_true(ox_document_step_visible(d, 3));
  g_assert_true(ox_document_step_visible(d, 4));
  g_assert_false(ox_document_step_visible(d, 1));
}

static void test_explain(void) {
  g_autoptr(OxDocument) d = optimized_doc();
  g_autoptr(GArray) a = ox_document_explain(d, "relu_2");
  g_assert_cmpuint(a->len, ==, 2);
  g_assert_cmpuint(g_array_index(a, guint, 0), ==, 3);
  g_assert_cmpuint(g_array_index(a, guint, 1), ==, 4);
  const OxStep *s = &ox_document_get_trace(d)->steps[2];
  g_assert_cmpstr(s->reason.nodes[0], ==, "relu_2");
  g_autofree char *why = ox_reason_format(&s->reason);
  g_assert_nonnull(strstr(why, "does not match"));
}

/* ---- what-if re-runs behind the Why not? hints */

static char *example_path(const char *name) {
  const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
  return g_build_filename(root ? root : ".", "data", "examples", name, NULL);
}

static const OxStep *find_rejection(const OxTrace *t, const char *pass, const char *anchor, const char *arg0) {
  for (guint i = 0; i < t->n_steps; i++) {
    const OxStep *s = &t->steps[i];
    if (s->kind == OX_STEP_REJECTED && !g_strcmp0(s->pass, pass) && !g_strcmp0(s->anchor, anchor) &&
        s->reason.code == OX_REASON_SET_TOO_SMALL && !strcmp(s->reason.args[0], arg0))
      return s;
  }
  return NULL;
}

static void on_whatif_done(OxDocument *d, const char *option, gpointer data) {
  (void)d;
  g_ptr_array_add(data, g_strdup(option));
}

static gboolean wait_whatif(OxDocument *d, const char *option, const OxWhatifResult **out) {
  gint64 end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  const char *err = NULL;
  while (!(*out = ox_document_get_whatif(d, option, FALSE, &err)) && !err) {
    if (g_get_monotonic_time() > end) return FALSE;
    g_main_context_iteration(NULL, FALSE);
    g_usleep(1000);
  }
  return *out != NULL;
}

/* The example with its recorded trace: the re-run pipeline is the trace's own configuration;
 * a hint's option is re-run once in the background and answers every record it concerns; a
 * new history drops the answers; "re-run with this option" makes the step apply. */
static void test_whatif(void) {
  g_autoptr(OxDocument) d = ox_document_new();
  g_autofree char *graph = example_path("recsys-towers.txt");
  g_autofree char *trace = example_path("recsys-towers.trace.json");
  GError *err = NULL;
  g_assert_true(ox_document_load_file(d, graph, trace, &err));
  g_assert_no_error(err);
  const OxTrace *t = ox_document_get_trace(d);
  g_assert_nonnull(t->config);
  OxPipeline p;
  OxCheckConfig checks;
  char *why = NULL;
  g_assert_true(ox_document_whatif_pipeline(d, &p, &checks, &why));
  g_assert_null(why);
  OxPipeline def;
  ox_pipeline_default(ox_document_get_history(d)->input, &def);
  g_assert_cmpuint(p.n, ==, def.n);
  g_assert_true(checks.numeric && checks.shape && checks.structure);
  ox_pipeline_free(&def);
  ox_pipeline_free(&p);
  const OxStep *three = find_rejection(t, "batch_linear", "relu_11", "3");
  g_assert_nonnull(three);
  /* synchronous */
  const char *opt3 = "batch_linear.min_fuse_set_size=3";
  OxWhatifSpec spec = {.options = &opt3, .n_options = 1};
  OxWhatifResult r;
  g_assert_true(ox_document_whatif(d, &spec, &r, &err));
  g_assert_cmpuint(ox_whatif_fires(&r, three), !=, OX_WHATIF_NONE);
  ox_whatif_result_free(&r);
  /* in the background, once per option */
  g_autoptr(GPtrArray) done = g_ptr_array_new_with_free_func(g_free);
  g_signal_connect(d, "whatif-done", G_CALLBACK(on_whatif_done), done);
  const char *e = NULL;
  g_assert_null(ox_document_get_whatif(d, opt3, FALSE, &e));
  g_assert_null(e);
  g_assert_null(ox_document_get_whatif(d, opt3, TRUE, &e)); /* queued */
  const OxWhatifResult *w = NULL;
  g_assert_true(wait_whatif(d, opt3, &w));
  g_assert_cmpuint(done->len, ==, 1);
  g_assert_cmpstr(done->pdata[0], ==, opt3);
  g_assert_cmpuint(ox_whatif_fires(w, three), !=, OX_WHATIF_NONE);
  g_assert_null(w->graph);
  g_assert_cmpuint(w->base_nodes, ==, 201);
  g_assert_true(ox_document_get_whatif(d, opt3, TRUE, NULL) == w); /* kept, not run again */
  g_assert_cmpuint(ox_document_get_whatif_runs(d), ==, 1);
  /* an option that does not help */
  const OxStep *one = find_rejection(t, "batch_linear_lhs", "relu_11", "1");
  g_assert_nonnull(one);
  const char *opt1 = "batch_linear_lhs.min_fuse_set_size=1";
  ox_document_get_whatif(d, opt1, TRUE, NULL);
  g_assert_true(wait_whatif(d, opt1, &w));
  g_assert_cmpuint(ox_whatif_fires(w, one), ==, OX_WHATIF_NONE);
  /* a bad option fails with the engine's message */
  const char *bad = "batch_linear.no_such_option=1";
  ox_document_get_whatif(d, bad, TRUE, NULL);
  gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  while (!e && g_get_monotonic_time() < end) {
    g_main_context_iteration(NULL, FALSE);
    ox_document_get_whatif(d, bad, FALSE, &e);
  }
  g_assert_nonnull(e);
  g_assert_nonnull(strstr(e, "unknown option 'no_such_option'"));
  /* the option applied: the group fuses in the new trace, and the answers are dropped */
  g_assert_true(ox_document_add_option(d, opt3, &err));
  g_assert_true(ox_document_optimize(d, NULL, &err));
  g_assert_no_error(err);
  g_assert_null(ox_document_get_whatif(d, opt3, FALSE, NULL));
  t = ox_document_get_trace(d);
  gboolean fused = FALSE;
  for (guint i = 0; i < t->n_steps; i++)
    fused |= t->steps[i].kind == OX_STEP_APPLIED && !strcmp(t->steps[i].pass, "batch_linear") &&
             !g_strcmp0(t->steps[i].anchor, "relu_11");
  g_assert_true(fused);
  g_assert_nonnull(strstr(t->config, "\"batch_linear\": {\"min_fuse_set_size\": 3"));
  g_assert_cmpstr(t->checks, ==, "structure,shape,numeric");
  g_assert_false(ox_document_add_option(d, "nopass.min_fuse_set_size=3", &err));
  g_assert_nonnull(strstr(err->message, "is not in the pipeline"));
  g_clear_error(&err);
}

/* A picture of a step keeps what the canvas shows: the anchor, matched, removed and added nodes
 * as SVG classes in the canvas's colours, the untouched ones faded, and a legend; the graph
 * drawn is the shown graph plus the nodes the step removed. */
static void test_export_picture(void) {
  g_autoptr(OxDocument) d = ox_document_new();
  g_autofree char *graph = example_path("recsys-towers.txt");
  g_autofree char *trace = example_path("recsys-towers.trace.json");
  GError *err = NULL;
  g_assert_true(ox_document_load_file(d, graph, trace, &err));
  const OxTrace *t = ox_document_get_trace(d);
  guint pos = 0;
  for (guint i = 0; i < t->n_steps && !pos; i++)
    if (t->steps[i].kind == OX_STEP_APPLIED && t->steps[i].n_removed && t->steps[i].n_added && t->steps[i].n_matched > 1)
      pos = i + 1;
  g_assert_cmpuint(pos, >, 0);
  ox_document_set_position(d, pos);
  const OxStep *st = ox_document_get_step(d);
  guint8 *marks;
  guint32 *fills;
  OxGraph *pic = ox_document_step_picture(d, &marks, &fills);
  guint counts[OX_DOT_MARKS] = {0};
  OX_GRAPH_FOREACH(pic, id) counts[marks[id]]++;
  g_assert_cmpuint(counts[OX_DOT_MARK_ANCHOR], ==, 1);
  g_assert_cmpuint(counts[OX_DOT_MARK_REMOVED], ==, st->n_removed);
  g_assert_cmpuint(counts[OX_DOT_MARK_ADDED], ==, st->n_added);
  g_assert_cmpuint(counts[OX_DOT_MARK_DIMMED], >, 0);
  /* the shown graph plus the removed nodes */
  g_assert_cmpuint(pic->n_live, ==, ox_document_get_graph(d)->n_live + st->n_removed);
  OxNodeId rm = ox_graph_find(pic, st->removed[0]);
  g_assert_cmpuint(marks[rm], ==, OX_DOT_MARK_REMOVED);
  g_assert_cmphex(fills[rm], ==, OX_DOT_RGB(OX_FILL_REMOVED));
  ox_graph_free(pic);
  g_free(marks);
  g_free(fills);
  g_autofree char *dir = g_dir_make_tmp("ox-ui-pic-XXXXXX", NULL);
  g_autofree char *svg = g_build_filename(dir, "step.svg", NULL);
  g_autofree char *png = g_build_filename(dir, "step.png", NULL);
  g_assert_true(ox_document_export(d, "svg", svg, &err));
  g_assert_no_error(err);
  g_assert_true(ox_document_export(d, "png", png, &err));
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(svg, &text, NULL, NULL));
  /* Graphviz writes the class names' '-' as &#45; */
  g_autoptr(GString) dec = g_string_new(text);
  g_string_replace(dec, "&#45;", "-", 0);
  const char *classes[] = {"ox-anchor", "ox-removed", "ox-added", "ox-dimmed", "ox-legend"};
  for (guint i = 0; i < G_N_ELEMENTS(classes); i++) {
    g_autofree char *cls = g_strdup_printf(" %s\"", classes[i]);
    gboolean found = strstr(dec->str, cls) != NULL || (!strcmp(classes[i], "ox-legend") && strstr(dec->str, "class=\"node ox-legend\""));
    if (!found) g_test_message("no %s in the SVG", classes[i]);
    g_assert_true(found);
  }
  /* the canvas's colours: removed fill and border, added border, anchor border */
  char hex[16];
  g_snprintf(hex, sizeof hex, "#%06x", OX_FILL_REMOVED);
  g_assert_nonnull(strstr(dec->str, hex));
  g_snprintf(hex, sizeof hex, "#%06x", OX_COLOR_REMOVED);
  g_assert_nonnull(strstr(dec->str, hex));
  g_snprintf(hex, sizeof hex, "#%06x", OX_COLOR_ADDED);
  g_assert_nonnull(strstr(dec->str, hex));
  g_snprintf(hex, sizeof hex, "#%06x", OX_COLOR_MATCH);
  g_assert_nonnull(strstr(dec->str, hex));
  g_assert_nonnull(strstr(dec->str, "removed by the step"));
  g_assert_nonnull(strstr(dec->str, "matmul"));
  if (g_getenv("OX_TEST_KEEP")) g_test_message("kept %s and %s", svg, png);
  else {
    g_unlink(svg);
    g_unlink(png);
    g_rmdir(dir);
  }
}

static void test_export(void) {
  g_autoptr(OxDocument) d = optimized_doc();
  ox_document_set_position(d, 4);
  g_autofree char *dir = g_dir_make_tmp("ox-ui-model-XXXXXX", NULL);
  const char *formats[] = {"json", "fx", "dot", "svg", "png", "trace"};
  for (guint i = 0; i < G_N_ELEMENTS(formats); i++) {
    g_autofree char *path = g_strdup_printf("%s/out.%s", dir, formats[i]);
    GError *err = NULL;
    g_assert_true(ox_document_export(d, formats[i], path, &err));
    g_assert_no_error(err);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(path, &text, &len, NULL));
    g_assert_cmpuint(len, >, 20);
    if (!strcmp(formats[i], "png")) g_assert_true(memcmp(text, "\x89PNG", 4) == 0);
    if (!strcmp(formats[i], "svg")) g_assert_nonnull(strstr(text, "<svg"));
    if (!strcmp(formats[i], "dot")) g_assert_nonnull(strstr(text, "relu_fused"));
    if (!strcmp(formats[i], "fx")) g_assert_nonnull(strstr(text, "%relu_fused_1"));
    if (!strcmp(formats[i], "json")) {
      /* the exported graph loads back and equals the shown graph */
      g_autoptr(OxDocument) back = ox_document_new();
      g_assert_true(ox_document_load_file(back, path, NULL, NULL));
      g_autofree char *a = fx_of(ox_document_get_graph(back));
      g_autofree char *b = fx_of(ox_document_get_graph(d));
      g_assert_cmpstr(a, ==, b);
    }
    g_unlink(path);
  }
  GError *err = NULL;
  g_assert_false(ox_document_export(d, "bmp", "/tmp/x.bmp", &err));
  g_assert_error(err, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  g_clear_error(&err);
  g_assert_false(ox_document_export(d, "fx", "/nonexistent-dir/x.txt", &err));
  g_assert_nonnull(err);
  g_clear_error(&err);
  g_rmdir(dir);
}

/* a and b show the same graph at every position 0..n */
static void assert_same_steps(OxDocument *a, OxDocument *b, guint n) {
  for (guint p = 0; p <= n; p++) {
    ox_document_set_position(a, p);
    ox_document_set_position(b, p);
    g_autofree char *fa = fx_of(ox_document_get_graph(a));
    g_autofree char *fb = fx_of(ox_document_get_graph(b));
    g_assert_cmpstr(fa, ==, fb);
  }
}

static void test_trace_roundtrip(void) {
  g_autoptr(OxDocument) d = optimized_doc();
  g_autofree char *dir = g_dir_make_tmp("ox-ui-model-XXXXXX", NULL);
  g_autofree char *tpath = g_build_filename(dir, "trace.json", NULL);
  GError *err = NULL;
  g_assert_true(ox_document_export(d, "trace", tpath, &err));
  g_assert_no_error(err);
  g_autoptr(OxDocument) d2 = ox_document_new();
  g_autofree char *path = data_path("relu-chain.txt");
  g_assert_true(ox_document_load_file(d2, path, tpath, &err));
  g_assert_no_error(err);
  g_assert_cmpuint(ox_document_get_n_steps(d2), ==, 4);
  assert_same_steps(d, d2, 4);
  /* the trace refuses another graph */
  g_autoptr(OxDocument) d3 = ox_document_new();
  g_autofree char *other = g_build_filename(dir, "other.txt", NULL);
  g_assert_true(g_file_set_contents(other, "graph():\n    %x : [num_users=1] = placeholder[target=x]\n    return x\n",
                                    -1, NULL));
  g_assert_false(ox_document_load_file(d3, other, tpath, &err));
  g_assert_nonnull(strstr(err->message, "another graph"));
  g_clear_error(&err);
  g_unlink(other);
  g_unlink(tpath);
  g_rmdir(dir);
}

typedef struct TraceWait {
  int state; /* 0 running, 1 loaded, 2 failed */
  char *message;
} TraceWait;

static void on_trace_loaded(GObject *src, GAsyncResult *res, gpointer data) {
  TraceWait *w = data;
  GError *err = NULL;
  w->state = ox_document_load_trace_finish(OX_DOCUMENT(src), res, &err) ? 1 : 2;
  if (err) w->message = g_strdup(err->message);
  g_clear_error(&err);
}

/* Loads relu-chain.txt into d, then the trace at tpath on the worker; prefetch: read the trace
 * first, as the window does. Returns the outcome (message in *msg when it failed). */
static int load_with_trace(OxDocument *d, const char *tpath, const char *prefetch, char **msg) {
  if (prefetch) ox_document_prefetch_trace(d, prefetch);
  g_autofree char *path = data_path("relu-chain.txt");
  GError *err = NULL;
  g_assert_true(ox_document_load_file(d, path, NULL, &err));
  g_assert_no_error(err);
  TraceWait w = {0, NULL};
  ox_document_load_trace_async(d, tpath, NULL, on_trace_loaded, &w);
  gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  while (!w.state && g_get_monotonic_time() < end) g_main_context_iteration(NULL, TRUE);
  g_assert_cmpint(w.state, !=, 0);
  if (msg) *msg = w.message;
  else g_free(w.message);
  return w.state;
}

/* A trace read while its graph loads (ox_document_prefetch_trace, what the window does): the same
 * history as a trace read after it, the same errors, and a prefetch of another file ignored. */
static void test_trace_prefetch(void) {
  g_autoptr(OxDocument) d = optimized_doc();
  g_autofree char *dir = g_dir_make_tmp("ox-ui-model-XXXXXX", NULL);
  g_autofree char *tpath = g_build_filename(dir, "trace.json", NULL);
  g_autofree char *bad = g_build_filename(dir, "bad.json", NULL);
  GError *err = NULL;
  g_assert_true(ox_document_export(d, "trace", tpath, &err));
  g_assert_no_error(err);
  g_assert_true(g_file_set_contents(bad, "{\"format\": \"optimus-trace\",\n  \"version\": 3,\n  \"steps\": [1,\n", -1, NULL));
  /* prefetched and finished, then the file removed: only the prefetched trace can be what loads */
  g_autofree char *moved = g_build_filename(dir, "moved.json", NULL);
  g_autoptr(OxDocument) d2 = ox_document_new();
  ox_document_prefetch_trace(d2, tpath);
  gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  while (!ox_document_trace_prefetched(d2) && g_get_monotonic_time() < end) g_usleep(1000);
  g_assert_true(ox_document_trace_prefetched(d2));
  g_assert_cmpint(g_rename(tpath, moved), ==, 0);
  g_assert_cmpint(load_with_trace(d2, tpath, NULL, NULL), ==, 1);
  g_assert_false(ox_document_trace_prefetched(d2)); /* taken */
  g_assert_cmpint(g_rename(moved, tpath), ==, 0);
  g_assert_cmpuint(ox_document_get_n_steps(d2), ==, 4);
  assert_same_steps(d, d2, 4);
  /* a broken trace: the same located error with and without the prefetch */
  g_autoptr(OxDocument) d3 = ox_document_new(), d4 = ox_document_new();
  g_autofree char *m3 = NULL, *m4 = NULL;
  g_assert_cmpint(load_with_trace(d3, bad, bad, &m3), ==, 2);
  g_assert_cmpint(load_with_trace(d4, bad, NULL, &m4), ==, 2);
  g_test_message("broken trace: %s", m3);
  g_assert_cmpstr(m3, ==, m4);
  g_assert_nonnull(strstr(m3, "bad.json:"));
  /* a missing file: the same error too */
  g_autofree char *gone = g_build_filename(dir, "gone.json", NULL);
  g_autoptr(OxDocument) d5 = ox_document_new(), d6 = ox_document_new();
  g_autofree char *m5 = NULL, *m6 = NULL;
  g_assert_cmpint(load_with_trace(d5, gone, gone, &m5), ==, 2);
  g_assert_cmpint(load_with_trace(d6, gone, NULL, &m6), ==, 2);
  g_assert_cmpstr(m5, ==, m6);
  /* a prefetch of another file is not used (and is dropped) */
  g_autoptr(OxDocument) d7 = ox_document_new();
  g_assert_cmpint(load_with_trace(d7, tpath, bad, NULL), ==, 1);
  g_assert_false(ox_document_trace_prefetched(d7));
  g_assert_cmpuint(ox_document_get_n_steps(d7), ==, 4);
  /* a prefetch nobody takes: dropped with the document (the thread finishes on its own) */
  OxDocument *d8 = ox_document_new();
  ox_document_prefetch_trace(d8, tpath);
  g_object_unref(d8);
  g_usleep(200 * 1000);
  g_unlink(tpath);
  g_unlink(bad);
  g_rmdir(dir);
}

static void on_optimized(GObject *src, GAsyncResult *res, gpointer data) {
  GError *err = NULL;
  gboolean ok = ox_document_optimize_finish(OX_DOCUMENT(src), res, &err);
  int *state = data;
  *state = ok ? 1 : (g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CANCELLED) ? 2 : 3);
  g_clear_error(&err);
}

static void test_optimize_async(void) {
  g_autoptr(OxDocument) d = loaded_doc();
  guint *busy = watch(d, "busy");
  int state = 0;
  ox_document_optimize_async(d, NULL, on_optimized, &state);
  g_assert_true(ox_document_get_busy(d));
  /* a second run is refused while busy */
  int state2 = 0;
  ox_document_optimize_async(d, NULL, on_optimized, &state2);
  while (!state || !state2) g_main_context_iteration(NULL, TRUE);
  g_assert_cmpint(state, ==, 1);
  g_assert_cmpint(state2, ==, 3);
  g_assert_false(ox_document_get_busy(d));
  g_assert_cmpuint(*busy, ==, 2);
  g_assert_cmpuint(ox_document_get_n_steps(d), ==, 4);
  /* cancelled before it starts its first pass */
  g_autoptr(OxDocument) d2 = loaded_doc();
  g_autoptr(GCancellable) c = g_cancellable_new();
  g_cancellable_cancel(c);
  state = 0;
  ox_document_optimize_async(d2, c, on_optimized, &state);
  while (!state) g_main_context_iteration(NULL, TRUE);
  g_assert_cmpint(state, ==, 2);
  g_assert_false(ox_document_get_busy(d2));
  g_assert_cmpuint(ox_document_get_n_steps(d2), ==, 0);
}

static void test_families(void) {
  g_autoptr(OxDocument) d = loaded_doc();
  OxGraph *g = ox_document_get_graph(d);
  g_assert_cmpint(ox_node_family(g, &g->nodes[ox_graph_find(g, "linear")]), ==, OX_FAMILY_MATMUL);
  g_assert_cmpint(ox_node_family(g, &g->nodes[ox_graph_find(g, "relu")]), ==, OX_FAMILY_POINTWISE);
  g_assert_cmpint(ox_node_family(g, &g->nodes[ox_graph_find(g, "x")]), ==, OX_FAMILY_INPUT);
  g_assert_cmpint(ox_node_family(g, &g->nodes[ox_graph_output(g)]), ==, OX_FAMILY_OUTPUT);
  OxFamily f;
  g_assert_true(ox_family_from_name("Norm", &f));
  g_assert_cmpint(f, ==, OX_FAMILY_NORM);
  g_assert_false(ox_family_from_name("nope", &f));
}

/* A node with more inputs than any fixed buffer (a cat of 300 features, as recommendation
 * models have): the shown frame has all its in-edges, and so has the union graph. */
static void test_wide_fan_in(void) {
  enum { K = 300 };
  GString *fx = g_string_new("graph():\n    %x : [num_users=" G_STRINGIFY(K) "] = placeholder[target=x]\n");
  for (int i = 0; i < K; i++)
    g_string_append_printf(fx, "    %%r%d : [num_users=1] = call_function[target=torch.relu](args = (%%x,), kwargs = {})\n", i);
  g_string_append(fx, "    %cat : [num_users=1] = call_function[target=torch.cat](args = ([");
  for (int i = 0; i < K; i++) g_string_append_printf(fx, "%s%%r%d", i ? ", " : "", i);
  g_string_append(fx, "], 1), kwargs = {})\n    return cat\n");
  g_autofree char *dir = g_dir_make_tmp("ox-wide-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "wide.txt", NULL);
  g_assert_true(g_file_set_contents(path, fx->str, -1, NULL));
  g_string_free(fx, TRUE);
  g_autoptr(OxDocument) d = ox_document_new();
  GError *err = NULL;
  g_assert_true(ox_document_load_file(d, path, NULL, &err));
  g_assert_no_error(err);
  const OxHistory *h = ox_document_get_history(d);
  g_assert_nonnull(h);
  guint32 cat = ox_history_uid(h, "cat", 0);
  g_assert_cmpuint(cat, !=, 0);
  guint n_edges;
  const OxFrameEdge *e = ox_document_get_edges(d, &n_edges);
  guint into_cat = 0;
  for (guint i = 0; i < n_edges; i++) into_cat += e[i].to == cat;
  g_assert_cmpuint(into_cat, ==, K);
  OxFrameEdge *all = g_new(OxFrameEdge, K + 10);
  g_assert_cmpuint(ox_document_in_edges(d, cat, all, K + 10), ==, K);
  g_assert_cmpuint(ox_document_in_edges(d, cat, all, 10), ==, K); /* the count, past the room */
  g_free(all);
  g_unlink(path);
  g_rmdir(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/ui-model/load", test_load);
  g_test_add_func("/ui-model/bad-file", test_bad_file);
  g_test_add_func("/ui-model/pending-shapes", test_pending_shapes);
  g_test_add_func("/ui-model/graph-entries", test_graph_entries);
  g_test_add_func("/ui-model/families", test_families);
  g_test_add_func("/ui-model/optimize", test_optimize);
  g_test_add_func("/ui-model/optimize-async", test_optimize_async);
  g_test_add_func("/ui-model/replay-equals-recorded", test_replay_equals_recorded);
  g_test_add_func("/ui-model/stepping", test_stepping);
  g_test_add_func("/ui-model/step-states", test_step_states);
  g_test_add_func("/ui-model/wide-fan-in", test_wide_fan_in);
  g_test_add_func("/ui-model/union", test_union);
  g_test_add_func("/ui-model/selection", test_selection);
  g_test_add_func("/ui-model/search", test_search);
  g_test_add_func("/ui-model/filters", test_filters);
  g_test_add_func("/ui-model/explain", test_explain);
  g_test_add_func("/ui-model/whatif", test_whatif);
  g_test_add_func("/ui-model/export", test_export);
  g_test_add_func("/ui-model/export-picture", test_export_picture);
  g_test_add_func("/ui-model/trace-roundtrip", test_trace_roundtrip);
  g_test_add_func("/ui-model/trace-prefetch", test_trace_prefetch);
  return g_test_run();
}
