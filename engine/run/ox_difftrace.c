/* ox_difftrace.c - a diff of two graphs as a pseudo-trace (ox_difftrace.h). */
#include "run/ox_difftrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "passes/ox_pass.h"

static const OxPassInfo diff_pass = {"diff", OX_PHASE_PRE, OX_ENGINE_PATTERN, NULL,
                                     "the difference of two graphs, one step per region"};

static bool copy_value(OxGraph *g, const OxValue *src, const OxNodeId *bmap, uint32_t nb, OxValue *out) {
  *out = ox_graph_value_copy(g, src);
  return ox_value_remap_nodes(out, bmap, nb);
}

/* B's node bid as a new node of g before g's output, named as in B (when the name is taken, by
 * a node about to be replaced, that one was renamed first). */
static OxNodeId add_from_b(OxGraph *g, const OxGraph *b, OxNodeId bid, const OxNodeId *bmap, uint32_t nb, char *err,
                           size_t errcap) {
  const OxNode *n = &b->nodes[bid];
  OxValue args, kwargs;
  if (!copy_value(g, &n->args, bmap, nb, &args) || !copy_value(g, &n->kwargs, bmap, nb, &kwargs)) {
    snprintf(err, errcap, "%.100s uses a node of B that is not in the graph yet", n->name);
    return 0;
  }
  OxNodeId out = ox_graph_output(g);
  OxNodeId id = n->op == OX_OP_OUTPUT || !out
                  ? ox_graph_add_node(g, (OxOp)n->op, n->name, n->target, args, kwargs)
                  : ox_graph_insert_before(g, out, (OxOp)n->op, n->name, n->target, args, kwargs);
  if (n->meta.kind != OX_META_NONE) ox_graph_set_meta(g, id, &n->meta);
  return id;
}

/* The nodes of region r on one side, in that graph's order. */
static uint32_t region_nodes(const OxGraph *g, const uint32_t *region, const uint8_t *state, uint32_t r, uint8_t a,
                             uint8_t b, OxNodeId *out) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id) {
    if (region[id] == r && (state[id] == a || state[id] == b)) out[n++] = id;
  }
  return n;
}

OxTrace *ox_diff_trace(const OxGraph *a, const OxGraph *b, const OxGraphDiff *d, OxGraph **out, OxDiagList *diags) {
  if (out) *out = NULL;
  OxGraph *g = ox_graph_clone(a); /* same ids as a */
  OxTrace *t = ox_trace_new_for(g);
  char h[32];
  snprintf(h, sizeof h, "%016llx", (unsigned long long)ox_graph_structure_hash(a));
  t->input_hash = ox_trace_intern(t, h);
  t->checks = ox_trace_intern(t, "structure");
  OxCheckConfig checks;
  char cerr[128];
  ox_check_config_default(&checks);
  ox_check_config_parse("structure", &checks, cerr, sizeof cerr);
  OxPassOptions opt;
  ox_pass_options_default(&opt);
  OxPassCtx c;
  memset(&c, 0, sizeof c);
  c.g = g;
  c.pass = &diff_pass;
  c.opt = &opt;
  c.checks = &checks;
  c.trace = t;
  c.record_rejections = true;
  /* B's ids -> g's: matched nodes are A's (g's) ids; added ones are filled as they are made */
  uint32_t nb = b->n_nodes;
  OxNodeId *bmap = ox_xcalloc(nb + 1, sizeof *bmap);
  for (OxNodeId i = 1; i < nb; i++)
    if (i < d->nb && d->b_to_a[i]) bmap[i] = d->b_to_a[i];
  OxNodeId *an = ox_xcalloc(a->n_nodes + 1, sizeof *an), *bn = ox_xcalloc(nb + 1, sizeof *bn);
  char err[256];
  bool ok = true;
  for (uint32_t r = 0; r < d->n_regions && ok; r++) {
    uint32_t n_a = region_nodes(a, d->a_region, d->a_state, r, OX_DIFF_REMOVED, OX_DIFF_CHANGED, an);
    uint32_t n_b = region_nodes(b, d->b_region, d->b_state, r, OX_DIFF_ADDED, OX_DIFF_CHANGED, bn);
    char rule[32];
    snprintf(rule, sizeof rule, "region %u", r + 1);
    ox_step_begin(&c, rule, n_a ? an[0] : 0);
    /* matched nodes are also the sources of the step's new nodes that replace none (each gets
     * all of them as provenance): a region of thousands of nodes (a batched model) lists none */
    if (n_a && n_a <= OX_DIFF_TRACE_MAX_MATCHED) ox_step_matched(&c, an, n_a);
    err[0] = 0;
    /* 1. changed nodes of another op or target: the old one steps aside (renamed), B's is made
     * under the name, takes over the users, and the old one goes (below, with the removed) */
    OxNodeId *gone = ox_xcalloc(n_a + 1, sizeof *gone);
    uint32_t n_gone = 0;
    for (uint32_t i = 0; i < n_a && !err[0]; i++) {
      OxNodeId aid = an[i];
      if (d->a_state[aid] != OX_DIFF_CHANGED || !(d->a_fields[aid] & (OX_DIFF_F_OP | OX_DIFF_F_TARGET))) continue;
      char tmp[300];
      snprintf(tmp, sizeof tmp, "%.250s__diff_old", g->nodes[aid].name);
      if (!ox_graph_rename(g, aid, tmp)) {
        snprintf(err, sizeof err, "cannot move %.100s aside", g->nodes[aid].name);
        break;
      }
      gone[n_gone++] = aid;
      bmap[d->a_to_b[aid]] = 0; /* made anew in step 2 */
    }
    /* 2. B's added nodes and the replacements, in B's order (inputs first) */
    for (uint32_t i = 0; i < n_b && !err[0]; i++) {
      OxNodeId bid = bn[i];
      if (d->b_state[bid] == OX_DIFF_CHANGED && bmap[bid]) continue; /* changed in place: step 3 */
      OxNodeId id = add_from_b(g, b, bid, bmap, nb, err, sizeof err);
      if (!id) break;
      bmap[bid] = id;
      /* a region only B has is anchored at its first new node */
      if (!n_a && !c.staged.anchor) c.staged.anchor = ox_trace_intern(t, g->nodes[id].name);
    }
    for (uint32_t i = 0; i < n_gone && !err[0]; i++) ox_graph_replace_all_uses(g, gone[i], bmap[d->a_to_b[gone[i]]]);
    /* 3. changed in place: B's arguments (and meta) */
    for (uint32_t i = 0; i < n_b && !err[0]; i++) {
      OxNodeId bid = bn[i];
      if (d->b_state[bid] != OX_DIFF_CHANGED) continue;
      OxNodeId gid = bmap[bid];
      if (!gid || gid != d->b_to_a[bid]) continue; /* replaced */
      const OxNode *n = &b->nodes[bid];
      OxValue args, kwargs;
      if (!copy_value(g, &n->args, bmap, nb, &args) || !copy_value(g, &n->kwargs, bmap, nb, &kwargs)) {
        snprintf(err, sizeof err, "%.100s uses a node of B that is not in the graph yet", n->name);
        break;
      }
      ox_graph_set_args(g, gid, args);
      ox_graph_set_kwargs(g, gid, kwargs);
      if (n->meta.kind != OX_META_NONE) ox_graph_set_meta(g, gid, &n->meta);
    }
    /* 4. A's removed nodes and the replaced ones, users before their inputs */
    for (uint32_t i = n_a; i-- > 0 && !err[0];) {
      OxNodeId aid = an[i];
      bool replaced = false;
      for (uint32_t k = 0; k < n_gone; k++) replaced |= gone[k] == aid;
      if (d->a_state[aid] != OX_DIFF_REMOVED && !replaced) continue;
      if (!ox_graph_erase(g, aid)) snprintf(err, sizeof err, "%.100s still has users", a->nodes[aid].name);
    }
    free(gone);
    if (!err[0] && !ox_graph_stable_toposort(g)) snprintf(err, sizeof err, "the region makes a cycle");
    if (err[0]) {
      ox_step_abort(&c);
      ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "diff region %u: %s", r + 1, err);
      ok = false;
      break;
    }
    if (!ox_step_commit(&c)) {
      const OxStep *s = &t->steps[t->n_steps - 1];
      char *why = ox_reason_format(&s->reason);
      ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "diff region %u fails the structural check: %s", r + 1,
                  why ? why : "?");
      free(why);
      ok = false;
    }
  }
  ox_pass_ctx_clear(&c);
  free(bmap);
  free(an);
  free(bn);
  if (!ok) {
    ox_trace_free(t);
    ox_graph_free(g);
    return NULL;
  }
  if (out)
    *out = g;
  else
    ox_graph_free(g);
  return t;
}
