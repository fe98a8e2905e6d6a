/* Tests for bounded views of large graphs: neighbourhoods, cluster paths, the hierarchy,
 * the overview graph, and the layout node budget. */
#include <glib.h>
#include <string.h>

#include "layout/ox_layout.h"
#include "layout/ox_view.h"

static OxValue tup1(OxGraph *g, OxNodeId a) {
  OxValue v = ox_value_node(a);
  return ox_graph_value_seq(g, OX_V_TUPLE, &v, 1);
}

static OxNodeId ph(OxGraph *g, const char *name) {
  return ox_graph_add_node(g, OX_OP_PLACEHOLDER, name, name, ox_value_none(), ox_value_none());
}

/* A chain x -> n1 -> n2 -> ... -> n{len} */
static OxGraph *chain(uint32_t len, OxNodeId *ids) {
  OxGraph *g = ox_graph_new();
  ids[0] = ph(g, "x");
  for (uint32_t i = 1; i <= len; i++)
    ids[i] = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "torch.relu", tup1(g, ids[i - 1]), ox_value_none());
  return g;
}

static void test_neighborhood(void) {
  OxNodeId ids[64];
  OxGraph *g = chain(40, ids);
  OxNodeId out[64];
  OxNodeId seed = ids[20];
  g_assert_cmpuint(ox_view_neighborhood(g, &seed, 1, 0, 0, out, 64), ==, 1);
  g_assert_cmpuint(out[0], ==, seed);
  g_assert_cmpuint(ox_view_neighborhood(g, &seed, 1, 3, 0, out, 64), ==, 7); /* both directions */
  /* nearest first */
  g_assert_true((out[1] == ids[19] && out[2] == ids[21]) || (out[1] == ids[21] && out[2] == ids[19]));
  /* capped by max_nodes */
  g_assert_cmpuint(ox_view_neighborhood(g, &seed, 1, 10, 5, out, 64), ==, 5);
  /* the end of the chain has one side only */
  seed = ids[40];
  g_assert_cmpuint(ox_view_neighborhood(g, &seed, 1, 3, 0, out, 64), ==, 4);
  /* fit: the largest radius within the budget */
  seed = ids[20];
  g_assert_cmpuint(ox_view_fit_radius(g, &seed, 1, 10, 9), ==, 4);
  g_assert_cmpuint(ox_view_fit_radius(g, &seed, 1, 2, 100), ==, 2);
  /* erased nodes are not followed */
  OxNodeId extra = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "torch.neg", tup1(g, ids[20]), ox_value_none());
  g_assert_cmpuint(ox_view_neighborhood(g, &seed, 1, 1, 0, out, 64), ==, 4);
  ox_graph_erase(g, extra);
  g_assert_cmpuint(ox_view_neighborhood(g, &seed, 1, 1, 0, out, 64), ==, 3);
  ox_graph_free(g);
}

static void test_cluster_paths(void) {
  OxGraph *g = ox_graph_new();
  struct {
    const char *name;
    OxOp op;
    const char *target;
    const char *want;
  } cases[] = {
    {"layers_0_towers_3_linear0_weight", OX_OP_PLACEHOLDER, NULL, "layers.0.towers.3"},
    {"p_layers_2_towers_0_norm_bias", OX_OP_PLACEHOLDER, NULL, "layers.2.towers.0"},
    {"getitem_17", OX_OP_CALL_FUNCTION, "operator.getitem", ""},
    {"linear_3", OX_OP_CALL_FUNCTION, "torch.nn.functional.linear", ""},
    {"layer1_0_conv1", OX_OP_CALL_MODULE, "layer1.0.conv1", "layer1.0"},
    {"fc", OX_OP_CALL_MODULE, "fc", ""},
    {"fc_weight", OX_OP_GET_ATTR, "fc.weight", ""},
    {"l__self___blocks_11_attn_qkv", OX_OP_CALL_FUNCTION, "torch._C._nn.linear", "blocks.11"},
  };
  char buf[256];
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    OxNodeId id = ox_graph_add_node(g, cases[i].op, cases[i].name, cases[i].target ? cases[i].target : cases[i].name,
                                    ox_value_none(), ox_value_none());
    g_assert_cmpstr(ox_view_cluster_path(&g->nodes[id], buf, sizeof buf), ==, cases[i].want);
  }
  ox_graph_free(g);
}

/* Two towers of two layers: split -> (linear(w), relu) per tower -> cat */
static OxGraph *towers(void) {
  OxGraph *g = ox_graph_new();
  OxNodeId x = ph(g, "x");
  OxNodeId sp = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "torch.split", tup1(g, x), ox_value_none());
  OxValue outs[4];
  int k = 0;
  for (int l = 0; l < 2; l++)
    for (int t = 0; t < 2; t++) {
      char wn[64];
      snprintf(wn, sizeof wn, "layers_%d_towers_%d_linear_weight", l, t);
      OxNodeId w = ph(g, wn);
      OxValue gi[2] = {ox_value_node(sp), ox_value_int(t)};
      OxNodeId item = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "operator.getitem",
                                        ox_graph_value_seq(g, OX_V_TUPLE, gi, 2), ox_value_none());
      OxValue la[2] = {ox_value_node(item), ox_value_node(w)};
      OxNodeId lin = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "torch.nn.functional.linear",
                                       ox_graph_value_seq(g, OX_V_TUPLE, la, 2), ox_value_none());
      OxNodeId r = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "torch.relu", tup1(g, lin), ox_value_none());
      outs[k++] = ox_value_node(r);
    }
  OxValue list = ox_graph_value_seq(g, OX_V_LIST, outs, 4);
  OxNodeId cat = ox_graph_add_node(g, OX_OP_CALL_FUNCTION, NULL, "torch.cat", ox_graph_value_seq(g, OX_V_TUPLE, &list, 1),
                                   ox_value_none());
  ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", tup1(g, cat), ox_value_none());
  return g;
}

static int32_t cluster_index(const OxHierarchy *h, const char *path) {
  for (uint32_t i = 0; i < h->n_clusters; i++)
    if (strcmp(h->clusters[i].path, path) == 0) return (int32_t)i;
  return -1;
}

static void test_hierarchy_and_overview(void) {
  OxGraph *g = towers();
  OxHierarchy *h = ox_view_hierarchy(g);
  int32_t t00 = cluster_index(h, "layers.0.towers.0"), layers = cluster_index(h, "layers");
  int32_t towers0 = cluster_index(h, "layers.0.towers");
  g_assert_cmpint(t00, >, 0);
  g_assert_cmpint(layers, >, 0);
  /* the linear and relu of tower 0 joined its weight's cluster; the getitem joined its user's */
  g_assert_cmpint(h->node_cluster[ox_graph_find(g, "linear")], ==, t00);
  g_assert_cmpint(h->node_cluster[ox_graph_find(g, "relu")], ==, t00);
  g_assert_cmpint(h->node_cluster[ox_graph_find(g, "getitem")], ==, t00);
  g_assert_cmpuint(h->clusters[t00].n_direct, ==, 4); /* weight, getitem, linear, relu */
  /* the split feeds both layers: it joins their common cluster "layers" */
  g_assert_cmpint(h->node_cluster[ox_graph_find(g, "split")], ==, layers);
  /* the cat of all towers joins their common cluster too; x and output stay at the top */
  g_assert_cmpint(h->node_cluster[ox_graph_find(g, "cat")], ==, layers);
  g_assert_cmpuint(h->clusters[0].n_total, ==, g->n_live);
  g_assert_cmpuint(h->clusters[layers].n_total, ==, g->n_live - 2);
  g_assert_cmpuint(h->clusters[towers0].n_children, ==, 2);
  /* overview with only the root open: x -> layers -> output */
  OxGraph *o = ox_view_overview(g, h, NULL);
  g_assert_cmpuint(o->n_live, ==, 3);
  OxNodeId lay = ox_graph_find(o, "layers");
  g_assert_cmpuint(lay, !=, 0);
  g_assert_cmpstr(o->nodes[lay].target, ==, "layers [18 nodes]");
  g_assert_cmpuint(o->nodes[lay].n_users, ==, 1);
  g_assert_cmpuint(o->nodes[ox_graph_find(o, "x")].users[0], ==, lay);
  ox_graph_free(o);
  /* open "layers" and "layers.0": layers.1 stays one node, layers.0 shows layers.0.towers */
  uint8_t *open = g_new0(uint8_t, h->n_clusters);
  open[0] = open[layers] = open[cluster_index(h, "layers.0")] = 1;
  o = ox_view_overview(g, h, open);
  g_assert_cmpuint(ox_graph_find(o, "layers_1"), !=, 0);
  g_assert_cmpuint(ox_graph_find(o, "layers_0_towers"), !=, 0);
  g_assert_cmpuint(ox_graph_find(o, "split"), !=, 0); /* a direct node of an open cluster is shown */
  g_free(open);
  ox_graph_free(o);
  ox_view_hierarchy_free(h);
  ox_graph_free(g);
}

static void test_layout_budget(void) {
  /* no layout ever runs above its node budget: it refuses before calling Graphviz */
  OxNodeId ids[64];
  OxGraph *g = chain(50, ids);
  OxLayoutOptions opt = {.max_nodes = 20};
  OxLayout *l = NULL;
  char err[256];
  g_assert_cmpint(ox_layout_compute(g, NULL, 0, &opt, &l, err, sizeof err), ==, -1);
  g_assert_null(l);
  g_assert_nonnull(strstr(err, "over the node budget: 51 > 20"));
  /* a neighbourhood within the budget lays out, with every node and edge of the subset */
  OxNodeId sub[64];
  OxNodeId seed = ids[25];
  uint32_t n = ox_view_neighborhood(g, &seed, 1, 5, 0, sub, 64);
  g_assert_cmpint(ox_layout_compute(g, sub, n, &opt, &l, err, sizeof err), ==, 0);
  g_assert_cmpuint(l->n_nodes, ==, 11);
  g_assert_cmpuint(l->n_edges, ==, 10);
  g_assert_cmpint(ox_layout_find(l, ids[25]), >=, 0);
  g_assert_cmpint(ox_layout_find(l, ids[40]), ==, -1);
  /* dot layers a chain top to bottom */
  const OxLayoutNode *a = &l->nodes[ox_layout_find(l, ids[21])], *b = &l->nodes[ox_layout_find(l, ids[22])];
  g_assert_cmpfloat(a->y, <, b->y);
  g_assert_cmpfloat(l->edges[0].n_pts, >=, 4);
  ox_layout_free(l);
  /* cancellation before the layout */
  atomic_bool cancel = true;
  opt.cancel = &cancel;
  g_assert_cmpint(ox_layout_compute(g, sub, n, &opt, &l, err, sizeof err), ==, -1);
  g_assert_cmpstr(err, ==, "cancelled");
  ox_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/view/neighborhood", test_neighborhood);
  g_test_add_func("/engine/view/cluster-paths", test_cluster_paths);
  g_test_add_func("/engine/view/hierarchy-overview", test_hierarchy_and_overview);
  g_test_add_func("/engine/view/layout-budget", test_layout_budget);
  return g_test_run();
}
