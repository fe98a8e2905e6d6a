/* ox_check.c - semantic checks run on every step before it is committed.
 *
 *  structure: the nodes the step added or rewired refer only to live nodes, their users lists
 *             agree with the references, getitems are well formed, and the step created no
 *             cycle (a new cycle must pass through a new edge, so a DFS upstream from the
 *             touched nodes finds it; marks are shared, so the cost is the upstream closure).
 *  shape:     every value the step replaced and its replacement agree on dtype and shape, and
 *             every added node's meta agrees with what inference derives from its inputs.
 *  numeric:   ox_check_numeric.c (the region before and after run in the interpreter).
 *
 * A check that cannot run is SKIPPED with its reason; it never reports a pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ox_mem.h"
#include "ox_pass.h"
#include "ox_shape.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *intern(OxPassCtx *c, const char *s) { return c->trace ? ox_trace_intern(c->trace, s) : NULL; }

static bool is_getitem(const char *t) { return strcmp(t, "operator.getitem") == 0; }

typedef struct {
  OxGraph *g;
  OxNodeId user;
  char *err;
  size_t cap;
  bool bad;
} RefCtx;

static void ref_cb(OxNodeId id, void *data) {
  RefCtx *r = data;
  if (r->bad) return;
  const OxNode *in = ox_graph_node(r->g, id);
  if (!in || in->erased) {
    snprintf(r->err, r->cap, "%s refers to %s, which is not live", r->g->nodes[r->user].name, in ? in->name : "?");
    r->bad = true;
    return;
  }
  for (uint32_t i = 0; i < in->n_users; i++)
    if (in->users[i] == r->user) return;
  snprintf(r->err, r->cap, "users of %s do not list %s", in->name, r->g->nodes[r->user].name);
  r->bad = true;
}

static bool check_node_local(OxGraph *g, OxNodeId id, char *err, size_t cap) {
  const OxNode *n = &g->nodes[id];
  RefCtx r = {g, id, err, cap, false};
  ox_value_foreach_node(&n->args, ref_cb, &r);
  ox_value_foreach_node(&n->kwargs, ref_cb, &r);
  if (r.bad) return false;
  for (uint32_t i = 0; i < n->n_users; i++) {
    const OxNode *u = ox_graph_node(g, n->users[i]);
    if (!u || u->erased) {
      snprintf(err, cap, "users of %s list a node that is not live", n->name);
      return false;
    }
  }
  if (n->op == OX_OP_CALL_FUNCTION && is_getitem(n->target)) {
    if (n->args.n != 2 || n->args.u.items[0].kind != OX_V_NODE) {
      snprintf(err, cap, "getitem %s must take (node, index)", n->name);
      return false;
    }
    const OxNode *src = ox_graph_node(g, n->args.u.items[0].u.node);
    const OxValue *k = &n->args.u.items[1];
    if (src && k->kind == OX_V_INT && src->meta.kind == OX_META_TUPLE &&
        (k->u.i < -(int64_t)src->meta.n || k->u.i >= (int64_t)src->meta.n)) {
      snprintf(err, cap, "getitem %s takes index %lld of %s, which has %u outputs", n->name, (long long)k->u.i,
               src->name, src->meta.n);
      return false;
    }
  }
  return true;
}

/* Iterative three-colour DFS over the upstream closure of the roots: a grey node met again
 * closes a cycle. Every cycle through a root lies in that closure. Returns the node on the
 * cycle, or 0. */
static OxNodeId find_cycle(OxGraph *g, const OxNodeId *const *lists, const uint32_t *counts, int n_lists) {
  uint8_t *color = ox_xcalloc(g->n_nodes + 1, 1); /* 0 white, 1 grey, 2 black */
  uint32_t cap = 256, sp = 0;
  OxNodeId *stack = ox_xrealloc(NULL, cap * sizeof *stack);
  uint32_t *next_in = ox_xrealloc(NULL, cap * sizeof *next_in);
  OxNodeId *ins = NULL;
  uint32_t ins_cap = 0;
  OxNodeId found = 0;
  for (int l = 0; l < n_lists && !found; l++)
    for (uint32_t r = 0; r < counts[l] && !found; r++) {
      OxNodeId root = lists[l][r];
      if (color[root]) continue;
      color[root] = 1;
      stack[0] = root;
      next_in[0] = 0;
      sp = 1;
      while (sp && !found) {
        OxNodeId x = stack[sp - 1];
        uint32_t k = ox_graph_inputs(g, x, NULL, 0);
        if (k > ins_cap) {
          ins_cap = k * 2;
          ins = ox_xrealloc(ins, ins_cap * sizeof *ins);
        }
        ox_graph_inputs(g, x, ins, k);
        if (next_in[sp - 1] >= k) {
          color[x] = 2;
          sp--;
          continue;
        }
        OxNodeId y = ins[next_in[sp - 1]++];
        if (color[y] == 1) {
          found = y;
          break;
        }
        if (color[y] == 2) continue;
        color[y] = 1;
        if (sp == cap) {
          cap *= 2;
          stack = ox_xrealloc(stack, cap * sizeof *stack);
          next_in = ox_xrealloc(next_in, cap * sizeof *next_in);
        }
        stack[sp] = y;
        next_in[sp] = 0;
        sp++;
      }
    }
  free(color);
  free(stack);
  free(next_in);
  free(ins);
  return found;
}

static void check_structure(OxPassCtx *c, OxCheckResult *r) {
  OxGraph *g = c->g;
  char err[512];
  const OxNodeId *lists[2] = {c->step_added, c->step_rewired};
  uint32_t counts[2] = {c->n_step_added, c->n_step_rewired};
  for (int l = 0; l < 2; l++)
    for (uint32_t i = 0; i < counts[l]; i++)
      if (!check_node_local(g, lists[l][i], err, sizeof err)) {
        r->status = OX_CHECK_FAILED;
        r->detail = intern(c, err);
        return;
      }
  /* users of removed nodes must be gone */
  for (uint32_t i = 0; i < c->n_step_removed; i++) {
    const OxNode *n = &g->nodes[c->step_removed[i]];
    if (n->n_users) {
      snprintf(err, sizeof err, "removed node %s still has users", n->name);
      r->status = OX_CHECK_FAILED;
      r->detail = intern(c, err);
      return;
    }
  }
  /* acyclicity: a new cycle passes through an added or rewired node */
  OxNodeId cyc = find_cycle(g, lists, counts, 2);
  if (cyc) {
    snprintf(err, sizeof err, "the step created a cycle through %s", g->nodes[cyc].name);
    r->status = OX_CHECK_FAILED;
    r->detail = intern(c, err);
    return;
  }
  snprintf(err, sizeof err, "%u added, %u rewired, %u removed nodes consistent and acyclic", c->n_step_added,
           c->n_step_rewired, c->n_step_removed);
  r->status = OX_CHECK_PASSED;
  r->detail = intern(c, err);
}

static void check_shape(OxPassCtx *c, OxCheckResult *r) {
  OxGraph *g = c->g;
  char err[512], a[160], b[160];
  uint32_t compared = 0;
  /* added nodes: the meta they carry must be what their inputs imply */
  for (uint32_t i = 0; i < c->n_step_added; i++) {
    OxNodeId id = c->step_added[i];
    const OxNode *n = &g->nodes[id];
    OxMeta m;
    int rc = ox_shape_infer_node(g, id, &m, err, sizeof err);
    if (rc < 0) {
      char msg[700];
      snprintf(msg, sizeof msg, "%s: %s", n->name, err);
      r->status = OX_CHECK_FAILED;
      r->detail = intern(c, msg);
      return;
    }
    if (rc > 0) {
      char msg[700];
      snprintf(msg, sizeof msg, "cannot infer %s: %s", n->name, err);
      r->status = OX_CHECK_SKIPPED;
      r->detail = intern(c, msg);
      return;
    }
    if (n->meta.kind != OX_META_NONE && !ox_shape_meta_equal(&n->meta, &m)) {
      ox_meta_format(&n->meta, a, sizeof a);
      ox_meta_format(&m, b, sizeof b);
      char msg[700];
      snprintf(msg, sizeof msg, "%s carries %s but its inputs give %s", n->name, a, b);
      r->status = OX_CHECK_FAILED;
      r->detail = intern(c, msg);
      return;
    }
    compared++;
  }
  /* replaced values: each removed node and the node that took over its users agree */
  for (uint32_t i = 0; i < c->n_step_replaced; i++) {
    const OxNode *o = &g->nodes[c->step_prov_old[i]];
    const OxNode *n = &g->nodes[c->step_prov_new[i]];
    if (o->meta.kind == OX_META_NONE || n->meta.kind == OX_META_NONE) {
      char msg[700];
      snprintf(msg, sizeof msg, "meta missing on %s", o->meta.kind == OX_META_NONE ? o->name : n->name);
      r->status = OX_CHECK_SKIPPED;
      r->detail = intern(c, msg);
      return;
    }
    if (!ox_shape_meta_equal(&o->meta, &n->meta)) {
      ox_meta_format(&o->meta, a, sizeof a);
      ox_meta_format(&n->meta, b, sizeof b);
      char msg[700];
      snprintf(msg, sizeof msg, "%s (%s) was replaced by %s (%s)", o->name, a, n->name, b);
      r->status = OX_CHECK_FAILED;
      r->detail = intern(c, msg);
      return;
    }
    compared++;
  }
  snprintf(err, sizeof err, "%u values agree (added nodes with their inputs, replacements with what they replace)", compared);
  r->status = OX_CHECK_PASSED;
  r->detail = intern(c, err);
}

bool ox_checks_run(OxPassCtx *c, OxStep *step) {
  const OxCheckConfig *cfg = c->checks;
  bool ok = true;
  if (cfg->structure) {
    double t = now_s();
    check_structure(c, &step->checks[OX_CHECK_STRUCTURE]);
    step->checks[OX_CHECK_STRUCTURE].seconds = now_s() - t;
    ok &= step->checks[OX_CHECK_STRUCTURE].status != OX_CHECK_FAILED;
  }
  if (cfg->shape && ok) {
    double t = now_s();
    check_shape(c, &step->checks[OX_CHECK_SHAPE]);
    step->checks[OX_CHECK_SHAPE].seconds = now_s() - t;
    ok &= step->checks[OX_CHECK_SHAPE].status != OX_CHECK_FAILED;
  }
  if (cfg->numeric && ok) {
    double t = now_s();
    ox_check_numeric(c, &step->checks[OX_CHECK_NUMERIC]);
    step->checks[OX_CHECK_NUMERIC].seconds = now_s() - t;
    ok &= step->checks[OX_CHECK_NUMERIC].status != OX_CHECK_FAILED;
  }
  return ok;
}
