/* ox_step.c - the step protocol every pass uses (ox_pass.h).
 *
 * A step is a graph transaction: ox_step_begin opens it, the pass rewrites the graph with the
 * ordinary ox_graph API, ox_step_commit reads the transaction log to learn what changed
 * (added, removed, rewired nodes, provenance), turns it into a name-based edit script for
 * replay, runs the semantic checks, and commits or rolls back. Rejections never open a
 * transaction: they are one record with a reason.
 *
 * Provenance: an added node that took over the users of a removed matched node (the
 * replace_all_uses pattern) comes from that node; other added nodes (scaffolding such as a
 * stack) come from every matched node. Provenance ids are transitive to the input graph:
 * a node created by an earlier step passes on its own provenance.
 */
#include <stdarg.h>
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

void ox_pass_ctx_clear(OxPassCtx *c) {
  free(c->matched_ids);
  c->matched_ids = NULL;
  c->n_matched_ids = c->cap_matched_ids = 0;
  free(c->counter_names);
  free(c->counter_values);
  c->counter_names = NULL;
  c->counter_values = NULL;
  c->n_counters = c->cap_counters = 0;
}

void ox_counter_add(OxPassCtx *c, const char *name, int64_t delta) {
  for (uint32_t i = 0; i < c->n_counters; i++) {
    if (strcmp(c->counter_names[i], name) == 0) {
      c->counter_values[i] += delta;
      return;
    }
  }
  if (c->n_counters == c->cap_counters) {
    c->cap_counters = c->cap_counters ? c->cap_counters * 2 : 8;
    c->counter_names = ox_xrealloc(c->counter_names, c->cap_counters * sizeof *c->counter_names);
    c->counter_values = ox_xrealloc(c->counter_values, c->cap_counters * sizeof *c->counter_values);
  }
  /* counter names are string literals or trace-interned: they outlive the context */
  c->counter_names[c->n_counters] = c->trace ? ox_trace_intern(c->trace, name) : name;
  c->counter_values[c->n_counters++] = delta;
}

static const char **names_of(OxPassCtx *c, const OxGraph *g, const OxNodeId *ids, uint32_t n) {
  if (!c->trace || !n) return NULL;
  const char **r = ox_graph_alloc(c->trace->pool, n * sizeof *r);
  for (uint32_t i = 0; i < n; i++) {
    const OxNode *x = ox_graph_node(g, ids[i]);
    r[i] = ox_trace_intern(c->trace, x ? x->name : "?");
  }
  return r;
}

void ox_step_begin(OxPassCtx *c, const char *rule, OxNodeId anchor) {
  memset(&c->staged, 0, sizeof c->staged);
  c->in_step = true;
  c->anchor_id = anchor;
  c->n_matched_ids = 0;
  c->t_start = now_s();
  OxStep *s = &c->staged;
  s->pass = c->trace ? ox_trace_intern(c->trace, c->pass ? c->pass->name : "?") : NULL;
  s->phase = c->pass && c->pass->phase == OX_PHASE_POST ? "post" : "pre";
  if (c->trace) {
    s->rule = ox_trace_intern(c->trace, rule);
    const OxNode *a = ox_graph_node(c->g, anchor);
    s->anchor = a ? ox_trace_intern(c->trace, a->name) : NULL;
  }
  ox_graph_txn_begin(c->g);
}

void ox_step_matched(OxPassCtx *c, const OxNodeId *nodes, uint32_t n) {
  if (c->n_matched_ids + n > c->cap_matched_ids) {
    c->cap_matched_ids = (c->n_matched_ids + n) * 2;
    c->matched_ids = ox_xrealloc(c->matched_ids, c->cap_matched_ids * sizeof *c->matched_ids);
  }
  memcpy(c->matched_ids + c->n_matched_ids, nodes, n * sizeof *nodes);
  c->n_matched_ids += n;
}

void ox_step_key(OxPassCtx *c, const char *key) {
  if (c->trace) c->staged.key = ox_trace_intern(c->trace, key);
}

void ox_step_abort(OxPassCtx *c) {
  if (!c->in_step) return;
  ox_graph_txn_rollback(c->g);
  c->in_step = false;
}

/* ---------------------------------------------------------------- reading the log */

typedef struct {
  OxNodeId *added, *removed, *rewired;
  uint32_t n_added, n_removed, n_rewired;
} Changes;

static bool in_list(const OxNodeId *l, uint32_t n, OxNodeId x) {
  for (uint32_t i = 0; i < n; i++)
    if (l[i] == x) return true;
  return false;
}

static void collect_changes(OxGraph *g, Changes *ch) {
  uint32_t n;
  const OxEdit *e = ox_graph_txn_edits(g, &n);
  ch->added = ox_xcalloc(n + 1, sizeof(OxNodeId));
  ch->removed = ox_xcalloc(n + 1, sizeof(OxNodeId));
  ch->rewired = ox_xcalloc(n + 1, sizeof(OxNodeId));
  ch->n_added = ch->n_removed = ch->n_rewired = 0;
  /* mark nodes created inside the transaction */
  for (uint32_t i = 0; i < n; i++)
    if (e[i].kind == OX_EDIT_ADD && !g->nodes[e[i].node].erased) ch->added[ch->n_added++] = e[i].node;
  for (uint32_t i = 0; i < n; i++) {
    if (e[i].kind != OX_EDIT_ERASE) continue;
    bool created_here = false;
    for (uint32_t j = 0; j < i; j++)
      if (e[j].kind == OX_EDIT_ADD && e[j].node == e[i].node) created_here = true;
    if (!created_here && g->nodes[e[i].node].erased && !in_list(ch->removed, ch->n_removed, e[i].node))
      ch->removed[ch->n_removed++] = e[i].node;
  }
  /* live pre-existing nodes whose inputs changed */
  for (uint32_t i = 0; i < n; i++) {
    if (e[i].kind != OX_EDIT_ARGS) continue;
    OxNodeId x = e[i].node;
    if (g->nodes[x].erased || in_list(ch->added, ch->n_added, x) || in_list(ch->rewired, ch->n_rewired, x)) continue;
    ch->rewired[ch->n_rewired++] = x;
  }
}

/* New nodes get meta (upstream bug #120974: created nodes lacking example_value made later
 * passes skip them): infer it where the pass did not set it. Inside the transaction, so a
 * rollback drops it and the edit script carries it. */
static void fill_added_meta(OxGraph *g, const Changes *ch) {
  for (uint32_t i = 0; i < ch->n_added; i++) {
    OxNodeId id = ch->added[i];
    if (g->nodes[id].meta.kind != OX_META_NONE) continue;
    OxMeta m;
    char err[256];
    if (ox_shape_infer_node(g, id, &m, err, sizeof err) == 0) {
      m.inferred = true;
      ox_graph_set_meta(g, id, &m);
    }
  }
}

/* Pairs (old removed node -> new added node) from rewired users: an ARGS edit whose old
 * tree referenced a removed node and whose next state references an added node. */
typedef struct {
  const OxGraph *g;
  OxNodeId *ids;
  uint32_t n, cap;
} IdList;

static void idlist_cb(OxNodeId id, void *data) {
  IdList *l = data;
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 8;
    l->ids = ox_xrealloc(l->ids, l->cap * sizeof *l->ids);
  }
  l->ids[l->n++] = id;
}

static void add_pair(OxNodeId **po, OxNodeId **pn, uint32_t *np, uint32_t *cap, OxNodeId o, OxNodeId nw) {
  for (uint32_t i = 0; i < *np; i++)
    if ((*po)[i] == o && (*pn)[i] == nw) return;
  if (*np == *cap) {
    *cap = *cap ? *cap * 2 : 16;
    *po = ox_xrealloc(*po, *cap * sizeof **po);
    *pn = ox_xrealloc(*pn, *cap * sizeof **pn);
  }
  (*po)[*np] = o;
  (*pn)[*np] = nw;
  (*np)++;
}

static uint32_t provenance_pairs(OxPassCtx *c, const Changes *ch, OxNodeId **po, OxNodeId **pn, uint32_t *np) {
  OxGraph *g = c->g;
  uint32_t n, cap = 0;
  *po = *pn = NULL;
  *np = 0;
  const OxEdit *e = ox_graph_txn_edits(g, &n);
  for (uint32_t i = 0; i < n; i++) {
    if (e[i].kind != OX_EDIT_ARGS) continue;
    IdList before = {g, NULL, 0, 0}, after = {g, NULL, 0, 0};
    ox_value_foreach_node(&e[i].old_args, idlist_cb, &before);
    ox_value_foreach_node(&e[i].old_kwargs, idlist_cb, &before);
    /* state after this edit: the next ARGS edit's old trees, or the node's current trees */
    const OxValue *na = &g->nodes[e[i].node].args, *nk = &g->nodes[e[i].node].kwargs;
    for (uint32_t j = i + 1; j < n; j++)
      if (e[j].kind == OX_EDIT_ARGS && e[j].node == e[i].node) {
        na = &e[j].old_args;
        nk = &e[j].old_kwargs;
        break;
      }
    ox_value_foreach_node(na, idlist_cb, &after);
    ox_value_foreach_node(nk, idlist_cb, &after);
    for (uint32_t a = 0; a < before.n; a++) {
      if (!in_list(ch->removed, ch->n_removed, before.ids[a]) || in_list(after.ids, after.n, before.ids[a])) continue;
      for (uint32_t b = 0; b < after.n; b++)
        if (in_list(ch->added, ch->n_added, after.ids[b]) && !in_list(before.ids, before.n, after.ids[b]))
          add_pair(po, pn, np, &cap, before.ids[a], after.ids[b]);
    }
    free(before.ids);
    free(after.ids);
  }
  uint32_t n_replaced = *np;
  /* added nodes with no pair come from every matched node (scaffolding) */
  for (uint32_t k = 0; k < ch->n_added; k++) {
    if (in_list(*pn, *np, ch->added[k])) continue;
    for (uint32_t m = 0; m < c->n_matched_ids; m++) add_pair(po, pn, np, &cap, c->matched_ids[m], ch->added[k]);
  }
  return n_replaced;
}

/* Name of node id as it was just after log position i (renames later in the log hold it). */
static const char *name_at(OxGraph *g, const OxEdit *e, uint32_t n, uint32_t i, OxNodeId id) {
  if (!id) return NULL;
  for (uint32_t j = i + 1; j < n; j++)
    if (e[j].kind == OX_EDIT_RENAME && e[j].node == id) return e[j].old_name;
  return g->nodes[id].name;
}

static OxValue value_at_names(OxTrace *t, OxGraph *g, const OxValue *v, const OxEdit *e, uint32_t n, uint32_t i);

typedef struct {
  OxTrace *t;
  OxGraph *g;
  const OxEdit *e;
  uint32_t n, i;
} NameCtx;

static OxValue conv_value(NameCtx *k, const OxValue *v) {
  if (v->kind == OX_V_NODE) {
    const char *nm = name_at(k->g, k->e, k->n, k->i, v->u.node);
    return ox_value_node(ox_trace_name_ref(k->t, nm ? nm : "?"));
  }
  OxValue r = *v;
  if (v->s) r.s = ox_trace_intern(k->t, v->s);
  if (v->kind == OX_V_LIST || v->kind == OX_V_TUPLE || v->kind == OX_V_DICT || v->kind == OX_V_SLICE) {
    r.u.items = v->n ? ox_graph_alloc(k->t->pool, v->n * sizeof(OxValue)) : NULL;
    for (uint32_t j = 0; j < v->n; j++) r.u.items[j] = conv_value(k, &v->u.items[j]);
    if (v->kind == OX_V_DICT) {
      r.keys = v->n ? ox_graph_alloc(k->t->pool, v->n * sizeof(char *)) : NULL;
      for (uint32_t j = 0; j < v->n; j++) r.keys[j] = ox_trace_intern(k->t, v->keys[j]);
    }
  }
  return r;
}

static OxValue value_at_names(OxTrace *t, OxGraph *g, const OxValue *v, const OxEdit *e, uint32_t n, uint32_t i) {
  NameCtx k = {t, g, e, n, i};
  return conv_value(&k, v);
}

/* The args a node had just after log position i. */
static void args_after(OxGraph *g, const OxEdit *e, uint32_t n, uint32_t i, OxNodeId id, const OxValue **a,
                       const OxValue **k) {
  *a = &g->nodes[id].args;
  *k = &g->nodes[id].kwargs;
  for (uint32_t j = i + 1; j < n; j++)
    if (e[j].kind == OX_EDIT_ARGS && e[j].node == id) {
      *a = &e[j].old_args;
      *k = &e[j].old_kwargs;
      return;
    }
}

static const OxMeta *meta_after(OxGraph *g, const OxEdit *e, uint32_t n, uint32_t i, OxNodeId id) {
  for (uint32_t j = i + 1; j < n; j++)
    if (e[j].kind == OX_EDIT_META && e[j].node == id) return &e[j].old_meta;
  return &g->nodes[id].meta;
}

static OxMeta copy_meta_to_pool(OxTrace *t, const OxMeta *m) {
  /* the pool graph owns a copy; set_meta on a scratch pool node does the deep copy */
  OxNodeId tmp = ox_trace_name_ref(t, "__meta_scratch__");
  ox_graph_set_meta(t->pool, tmp, m);
  return t->pool->nodes[tmp].meta;
}

static void build_edits(OxPassCtx *c, OxStep *s) {
  OxTrace *t = c->trace;
  OxGraph *g = c->g;
  uint32_t n;
  const OxEdit *e = ox_graph_txn_edits(g, &n);
  OxTraceEdit *out = ox_graph_alloc(t->pool, (n + 1) * sizeof *out);
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) {
    const OxEdit *x = &e[i];
    OxTraceEdit *o = &out[k];
    memset(o, 0, sizeof *o);
    switch ((OxEditKind)x->kind) {
    case OX_EDIT_ADD: {
      o->kind = OX_TEDIT_ADD;
      o->name = ox_trace_intern(t, name_at(g, e, n, i, x->node));
      o->after = ox_trace_intern(t, name_at(g, e, n, i, x->now_prev));
      o->op = g->nodes[x->node].op;
      o->target = ox_trace_intern(t, g->nodes[x->node].target);
      /* creation args = the args before the node's first later ARGS edit */
      const OxValue *a, *kw;
      args_after(g, e, n, i, x->node, &a, &kw);
      o->args = value_at_names(t, g, a, e, n, i);
      o->kwargs = value_at_names(t, g, kw, e, n, i);
      const OxMeta *m = meta_after(g, e, n, i, x->node);
      if (m->kind != OX_META_NONE) {
        o->meta = copy_meta_to_pool(t, m);
        o->has_meta = true;
      }
      k++;
      break;
    }
    case OX_EDIT_ERASE:
      o->kind = OX_TEDIT_ERASE;
      o->name = ox_trace_intern(t, name_at(g, e, n, i, x->node));
      k++;
      break;
    case OX_EDIT_ARGS: {
      o->kind = OX_TEDIT_ARGS;
      o->name = ox_trace_intern(t, name_at(g, e, n, i, x->node));
      const OxValue *a, *kw;
      args_after(g, e, n, i, x->node, &a, &kw);
      o->args = value_at_names(t, g, a, e, n, i);
      o->kwargs = value_at_names(t, g, kw, e, n, i);
      k++;
      break;
    }
    case OX_EDIT_MOVE:
      o->kind = OX_TEDIT_MOVE;
      o->name = ox_trace_intern(t, name_at(g, e, n, i, x->node));
      o->after = ox_trace_intern(t, name_at(g, e, n, i, x->now_prev));
      k++;
      break;
    case OX_EDIT_META: {
      o->kind = OX_TEDIT_META;
      o->name = ox_trace_intern(t, name_at(g, e, n, i, x->node));
      o->meta = copy_meta_to_pool(t, meta_after(g, e, n, i, x->node));
      o->has_meta = true;
      k++;
      break;
    }
    case OX_EDIT_RENAME:
      o->kind = OX_TEDIT_RENAME;
      o->name = ox_trace_intern(t, x->old_name);
      o->new_name = ox_trace_intern(t, name_at(g, e, n, i, x->node));
      k++;
      break;
    case OX_EDIT_ORDER:
      /* replay re-runs the (deterministic) stable toposort */
      o->kind = OX_TEDIT_MOVE;
      o->name = NULL; /* MOVE without a name = toposort */
      k++;
      break;
    case OX_EDIT_PROVENANCE:
    case OX_EDIT_USERS: break; /* derived state */
    }
  }
  s->edits = out;
  s->n_edits = k;
}

bool ox_step_commit(OxPassCtx *c) {
  OxGraph *g = c->g;
  OxStep *s = &c->staged;
  Changes ch;
  collect_changes(g, &ch);
  fill_added_meta(g, &ch);
  OxNodeId *po, *pn;
  uint32_t np;
  uint32_t n_replaced = provenance_pairs(c, &ch, &po, &pn, &np);
  /* transitive provenance in the graph itself */
  for (uint32_t i = 0; i < np; i++) {
    const OxNode *old = &g->nodes[po[i]];
    if (old->n_provenance) {
      uint32_t cnt = old->n_provenance;
      OxNodeId *copy = ox_xrealloc(NULL, cnt * sizeof *copy);
      memcpy(copy, old->provenance, cnt * sizeof *copy);
      for (uint32_t j = 0; j < cnt; j++) ox_graph_add_provenance(g, pn[i], copy[j]);
      free(copy);
    } else {
      ox_graph_add_provenance(g, pn[i], po[i]);
    }
  }
  if (c->trace) {
    s->matched = names_of(c, g, c->matched_ids, c->n_matched_ids);
    s->n_matched = c->n_matched_ids;
    s->added = names_of(c, g, ch.added, ch.n_added);
    s->n_added = ch.n_added;
    s->removed = names_of(c, g, ch.removed, ch.n_removed);
    s->n_removed = ch.n_removed;
    s->prov_old = names_of(c, g, po, np);
    s->prov_new = names_of(c, g, pn, np);
    s->n_prov = np;
    build_edits(c, s);
  }
  c->step_added = ch.added;
  c->n_step_added = ch.n_added;
  c->step_removed = ch.removed;
  c->n_step_removed = ch.n_removed;
  c->step_rewired = ch.rewired;
  c->n_step_rewired = ch.n_rewired;
  c->step_prov_old = po;
  c->step_prov_new = pn;
  c->n_step_prov = np;
  c->n_step_replaced = n_replaced;
  bool ok = c->checks ? ox_checks_run(c, s) : true;
  c->step_added = c->step_removed = c->step_rewired = c->step_prov_old = c->step_prov_new = NULL;
  c->n_step_added = c->n_step_removed = c->n_step_rewired = c->n_step_prov = c->n_step_replaced = 0;
  bool keep = ok || (c->checks && c->checks->keep_failed);
  if (!ok) {
    for (int k = 0; k < OX_CHECK_KINDS; k++)
      if (s->checks[k].status == OX_CHECK_FAILED) {
        s->reason = ox_reason(c, OX_REASON_CHECK_FAILED, ox_check_kind_name((OxCheckKind)k),
                              s->checks[k].detail ? s->checks[k].detail : "", NULL);
        break;
      }
  }
  if (keep)
    ox_graph_txn_commit(g);
  else
    ox_graph_txn_rollback(g);
  s->seconds = now_s() - c->t_start;
  if (c->trace) {
    OxStep *dst = ox_trace_add_step(c->trace, ok ? OX_STEP_APPLIED : OX_STEP_CHECK_FAILED);
    uint32_t seq = dst->seq;
    *dst = *s;
    dst->seq = seq;
    dst->kind = (uint8_t)(ok ? OX_STEP_APPLIED : OX_STEP_CHECK_FAILED);
    if (keep) dst->applied_index = ++c->trace->n_graph_steps;
  }
  free(ch.added);
  free(ch.removed);
  free(ch.rewired);
  free(po);
  free(pn);
  c->in_step = false;
  return ok;
}

void ox_step_reject(OxPassCtx *c, const char *rule, OxNodeId anchor, const OxNodeId *nodes, uint32_t n,
                    const OxReason *reason) {
  if (!c->trace || !c->record_rejections) return;
  OxStep *s = ox_trace_add_step(c->trace, OX_STEP_REJECTED);
  s->pass = ox_trace_intern(c->trace, c->pass ? c->pass->name : "?");
  s->phase = c->pass && c->pass->phase == OX_PHASE_POST ? "post" : "pre";
  s->rule = ox_trace_intern(c->trace, rule);
  const OxNode *a = ox_graph_node(c->g, anchor);
  s->anchor = a ? ox_trace_intern(c->trace, a->name) : NULL;
  s->matched = names_of(c, c->g, nodes, n);
  s->n_matched = n;
  if (reason) s->reason = *reason;
}

OxReason ox_reason_nodes(OxPassCtx *c, OxReasonCode code, const char *const *args, uint32_t n, const bool *is_node) {
  OxReason r;
  memset(&r, 0, sizeof r);
  r.code = (uint16_t)code;
  if (n > OX_REASON_MAX_ARGS) n = OX_REASON_MAX_ARGS;
  r.n_args = (uint8_t)n;
  for (uint32_t i = 0; i < n; i++) {
    r.args[i] = c->trace ? ox_trace_intern(c->trace, args[i] ? args[i] : "") : NULL;
    r.nodes[i] = (is_node && is_node[i]) ? r.args[i] : NULL;
  }
  return r;
}

OxReason ox_reason(OxPassCtx *c, OxReasonCode code, ...) {
  const char *args[OX_REASON_MAX_ARGS];
  uint32_t n = 0;
  va_list ap;
  va_start(ap, code);
  for (;;) {
    const char *a = va_arg(ap, const char *);
    if (!a || n == OX_REASON_MAX_ARGS) break;
    args[n++] = a;
  }
  va_end(ap);
  return ox_reason_nodes(c, code, args, n, NULL);
}
