/* ui-test-pass.c - the test pass the UI tests drive the debugger with: relu(relu(x)) -> relu(x),
 * every other relu recorded as rejected (so the timeline has both kinds). */
#include <stdlib.h>
#include <string.h>

#include "ui-test-pass.h"

void (*ui_test_on_applied)(const OxGraph *g);

static gboolean is_relu(const OxGraph *g, OxNodeId id) {
  const OxNode *n = ox_graph_node(g, id);
  return n && !n->erased && n->op == OX_OP_CALL_FUNCTION && strcmp(n->target, "torch.relu") == 0;
}

static int fuse_relu_run(OxPassCtx *c) {
  OxGraph *g = c->g;
  GArray *cands = g_array_new(FALSE, FALSE, sizeof(OxNodeId));
  OX_GRAPH_FOREACH(g, id) if (is_relu(g, id)) g_array_append_val(cands, id);
  int applied = 0;
  for (guint i = 0; i < cands->len; i++) {
    OxNodeId n = g_array_index(cands, OxNodeId, i);
    if (!is_relu(g, n)) continue;
    OxNodeId in = g->nodes[n].args.u.items[0].u.node;
    if (!is_relu(g, in) || g->nodes[in].n_users != 1) {
      const char *args[3] = {g->nodes[n].name, "relu(relu(x))", "input is not a single-use relu"};
      bool is_node[3] = {true, false, false};
      OxReason r = ox_reason_nodes(c, OX_REASON_NO_MATCH, args, 3, is_node);
      ox_step_reject(c, "relu_relu", n, &n, 1, &r);
      continue;
    }
    ox_step_begin(c, "relu_relu", n);
    OxNodeId m[2] = {in, n};
    ox_step_matched(c, m, 2);
    OxValue a = ox_value_node(g->nodes[in].args.u.items[0].u.node);
    OxNodeId fused = ox_graph_insert_before(g, n, OX_OP_CALL_FUNCTION, "relu_fused", "torch.relu",
                                            ox_graph_value_seq(g, OX_V_TUPLE, &a, 1), ox_value_none());
    ox_graph_replace_all_uses(g, n, fused);
    ox_graph_erase(g, n);
    ox_graph_erase(g, in);
    if (ox_step_commit(c)) {
      applied++;
      if (ui_test_on_applied) ui_test_on_applied(g);
    }
  }
  g_array_free(cands, TRUE);
  return applied;
}

static const OxPassInfo fuse_relu_pass = {"ui_test_fuse_relu", OX_PHASE_PRE, OX_ENGINE_PATTERN, fuse_relu_run,
                                          "test pass: relu(relu(x)) -> relu(x)"};

OxPipeline *ui_test_pipeline(void) {
  OxPipeline *p = g_new0(OxPipeline, 1);
  p->entries = calloc(1, sizeof *p->entries); /* ox_pipeline_free releases it with free() */
  p->entries[0].pass = &fuse_relu_pass;
  ox_pass_options_default(&p->entries[0].opt);
  p->n = 1;
  return p;
}
