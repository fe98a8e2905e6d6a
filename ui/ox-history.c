/* ox-history.c - union graph, node lifetimes and the inverse edit scripts (see ox-history.h).
 *
 * Built once per (input, trace) by replaying every graph step in order on one working clone of
 * the input, one edit at a time: before each edit, the edit that undoes it is computed from the
 * working graph as it is then (an erase is undone by re-adding the node with its op, target,
 * args, kwargs, meta and position; a rewire by the old args; a move by the old position; a
 * toposort by moving back the nodes whose predecessor changed) and recorded, in reverse order,
 * in `rev`, a trace of its own whose values refer to nodes by name. ADD edits create
 * identities, ERASE edits end them, ADD/ARGS edits extend the union's edge set. Everything is
 * linear in the input plus the edits, except a toposort edit, which costs one pass over the
 * order (none of the shipped passes records one per step).
 */
#include "ox-history.h"

#include <string.h>

#include "passes/ox_pass.h"

guint32 ox_history_uid(const OxHistory *h, const char *name, guint32 k) {
  for (guint32 e = ox_history_named(h, name); e; e = h->named[e].next)
    if (ox_history_alive(h, h->named[e].uid, k)) return h->named[e].uid;
  return 0;
}

/* The name index: one hash entry per name (8 bytes per uid in named, instead of a GArray per
 * name: ~12 MB less at 170k names). */
static void history_index_name(OxHistory *h, const char *name, guint32 uid) {
  if (h->n_named >= h->cap_named) {
    h->cap_named = MAX(h->cap_named * 2, 1024);
    h->named = g_renew(OxHistoryNamed, h->named, h->cap_named);
  }
  guint32 e = h->n_named++;
  h->named[e] = (OxHistoryNamed){uid, ox_history_named(h, name)};
  g_hash_table_insert(h->by_name, (gpointer)name, GUINT_TO_POINTER(e));
}

/* Room for uid u->n_nodes (the one just added): grows by half, not by one (a realloc per
 * identity cost 5 % of a 100k build). */
static void history_grow(OxHistory *h) {
  guint32 need = h->u->n_nodes + 1;
  if (need <= h->cap_uid) return;
  h->cap_uid = MAX(need, h->cap_uid + h->cap_uid / 2);
  h->born = g_renew(guint32, h->born, h->cap_uid);
  h->died = g_renew(guint32, h->died, h->cap_uid);
  h->name = g_renew(const char *, h->name, h->cap_uid);
}

/* Creates the identity for node id of g (the working graph), born at step k, without edges.
 * Keeps the strings an undo cannot restore from the trace (module path, stack trace). */
static guint32 history_add(OxHistory *h, const OxGraph *g, OxNodeId id, guint32 k) {
  const OxNode *n = &g->nodes[id];
  OxNodeId uid = ox_graph_add_node(h->u, (OxOp)n->op, n->name, n->target, ox_value_none(), ox_value_none());
  /* nothing writes through the union graph's metas: share equal ones */
  if (n->meta.kind != OX_META_NONE) ox_graph_set_meta_shared(h->u, uid, &n->meta);
  OxNode *un = &h->u->nodes[uid];
  if (n->module_path) un->module_path = ox_graph_intern(h->u, n->module_path);
  if (n->module_type) un->module_type = ox_graph_intern(h->u, n->module_type);
  if (n->stack_trace) un->stack_trace = ox_graph_intern(h->u, n->stack_trace);
  history_grow(h);
  h->born[uid] = k;
  h->died[uid] = OX_HISTORY_NEVER;
  /* the union node keeps the name unless a dead identity holds it (then it got a suffix) */
  h->name[uid] = strcmp(un->name, n->name) == 0 ? un->name : ox_graph_intern(h->u, n->name);
  history_index_name(h, h->name[uid], uid);
  return uid;
}

/* Membership marks over union identities: which are among a node's union inputs already. */
typedef struct {
  guint32 *mark;
  guint32 cap, epoch;
} UnionMarks;

/* Adds to uid's union edges the inputs node id of g has now. wuid[x] is the identity of node x
 * of g (the one alive under x's name: what history_current would find, without hashing it).
 * Marks, not a scan of the old list per input: a k-input cat rewired k times in a step used to
 * cost k^2 per call (45 % of building the flat 100k run's history). */
static void history_union_edges(OxHistory *h, const OxGraph *g, const guint32 *wuid, OxNodeId id, guint32 uid,
                                UnionMarks *um) {
  OxNodeId stack_ins[256], *ins;
  guint32 n_in = ox_ui_inputs(g, id, stack_ins, G_N_ELEMENTS(stack_ins), &ins);
  if (!n_in) return;
  if (h->u->n_nodes > um->cap) {
    guint32 old = um->cap;
    um->cap = MAX(h->u->n_nodes, um->cap + um->cap / 2);
    um->mark = g_renew(guint32, um->mark, um->cap);
    memset(um->mark + old, 0, (um->cap - old) * sizeof *um->mark);
  }
  if (++um->epoch == 0) { /* wrapped: forget every old mark */
    memset(um->mark, 0, um->cap * sizeof *um->mark);
    um->epoch = 1;
  }
  const OxValue *old = &h->u->nodes[uid].args;
  guint32 n_old = old->kind == OX_V_TUPLE ? old->n : 0;
  OxValue stack_items[64];
  OxValue *items = n_old + n_in <= G_N_ELEMENTS(stack_items) ? stack_items : g_new(OxValue, n_old + n_in);
  guint32 m = 0;
  for (guint32 i = 0; i < n_old; i++) {
    items[m++] = old->u.items[i];
    if (old->u.items[i].u.node < um->cap) um->mark[old->u.items[i].u.node] = um->epoch;
  }
  gboolean changed = FALSE;
  for (guint32 i = 0; i < n_in; i++) {
    guint32 src = wuid[ins[i]];
    if (!src || src == uid || um->mark[src] == um->epoch) continue;
    um->mark[src] = um->epoch;
    items[m++] = ox_value_node(src);
    changed = TRUE;
  }
  if (changed) ox_graph_set_args(h->u, uid, ox_graph_value_seq(h->u, OX_V_TUPLE, items, m));
  if (items != stack_items) g_free(items);
  if (ins != stack_ins) g_free(ins);
}

static void set_error(GError **error, const OxDiagList *d, const char *fallback) {
  g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", d->n ? d->items[0].msg : fallback);
}

/* Replays steps[0..n) of a view of trace t (all of them: their applied_index is ignored). */
static gboolean replay_view(const OxTrace *t, const OxStep *steps, guint32 n, OxGraph *g, GError **error) {
  if (!n) return TRUE;
  OxTrace view = *t;
  view.steps = (OxStep *)steps;
  view.n_steps = n;
  view.input_hash = NULL;
  OxDiagList d;
  ox_diags_init(&d, NULL);
  int rc = ox_replay(g, &view, UINT32_MAX, &d);
  if (rc != 0) set_error(error, &d, "replay failed");
  ox_diags_clear(&d);
  return rc == 0;
}

gboolean ox_history_replay_range(const OxHistory *h, OxGraph *g, guint32 from, guint32 to, GError **error) {
  if (to <= from) return TRUE;
  if (to > h->n_graph_steps) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "step %u is past the last graph step %u", to,
                h->n_graph_steps);
    return FALSE;
  }
  /* the records from graph step from+1 to graph step `to`, rejected ones in between included
   * (they have no edits); ox_replay skips records whose applied_index is 0 */
  guint32 first = h->seq_of_gstep[from + 1], last = h->seq_of_gstep[to];
  OxTrace view = *h->trace;
  view.steps = h->trace->steps + first;
  view.n_steps = last - first + 1;
  view.input_hash = NULL;
  OxDiagList d;
  ox_diags_init(&d, NULL);
  int rc = ox_replay(g, &view, UINT32_MAX, &d);
  if (rc != 0) set_error(error, &d, "replay failed");
  ox_diags_clear(&d);
  return rc == 0;
}

/* After undoing an erase, the re-added node gets back what the trace does not carry. */
static void restore_extras(const OxHistory *h, OxGraph *g, const OxStep *inv, guint32 k) {
  for (guint32 j = 0; j < inv->n_edits; j++) {
    const OxTraceEdit *e = &inv->edits[j];
    if (e->kind != OX_TEDIT_ADD) continue;
    guint32 uid = ox_history_uid(h, e->name, k);
    OxNodeId id = ox_graph_shares_strings(g, h->rev->pool) ? ox_graph_find_interned(g, e->name) : ox_graph_find(g, e->name);
    if (!uid || !id) continue;
    const OxNode *un = &h->u->nodes[uid];
    OxNode *n = &g->nodes[id];
    if (un->module_path) n->module_path = ox_graph_intern(g, un->module_path);
    if (un->module_type) {
      n->module_type = ox_graph_intern(g, un->module_type);
      ox_graph_opix_stale(g, id);
    }
    if (un->stack_trace) n->stack_trace = ox_graph_intern(g, un->stack_trace);
  }
}

gboolean ox_history_seek(const OxHistory *h, OxGraph *g, guint32 from, guint32 to, GError **error) {
  if (to >= from) return ox_history_replay_range(h, g, from, to, error);
  for (guint32 a = from; a > to; a--) {
    const OxStep *inv = &h->rev->steps[a - 1];
    if (!replay_view(h->rev, inv, 1, g, error)) return FALSE;
    restore_extras(h, g, inv, a - 1);
  }
  return TRUE;
}

guint64 ox_history_edits_between(const OxHistory *h, guint32 a, guint32 b) {
  if (a > b) {
    guint32 t = a;
    a = b;
    b = t;
  }
  if (b > h->n_graph_steps) b = h->n_graph_steps;
  if (a > b) a = b;
  return h->edits_upto[b] - h->edits_upto[a];
}

OxGraph *ox_history_graph_at(const OxHistory *h, guint32 k, GError **error) {
  OxGraph *g = ox_graph_clone_lean(h->input, NULL); /* own strings: may go to another thread */
  if (!ox_history_replay_range(h, g, 0, MIN(k, h->n_graph_steps), error)) {
    ox_graph_free(g);
    return NULL;
  }
  return g;
}

/* ---- inverse edits */

/* Node `name` (a trace string) of g: without hashing the string when g's strings are the
 * trace's pool (the working graph's are), since the trace's names are interned there. */
static OxNodeId graph_find(const OxGraph *g, OxGraph *pool, const char *name) {
  if (!name) return 0;
  return ox_graph_shares_strings(g, pool) ? ox_graph_find_interned(g, name) : ox_graph_find(g, name);
}

/* A string of g in rev's pool: g's own when g shares the pool's strings (the working graph). */
static const char *rev_str(OxTrace *rev, const OxGraph *g, const char *str) {
  return ox_graph_shares_strings(g, rev->pool) ? str : ox_trace_intern(rev, str);
}

/* The nearest live node before id in the order (0 = id is first). */
static OxNodeId live_prev(const OxGraph *g, OxNodeId id) {
  OxNodeId p = g->link[id].prev;
  while (p && g->nodes[p].erased) p = g->link[p].prev;
  return p;
}

static OxMeta meta_to_pool(OxTrace *t, const OxMeta *m) {
  OxMeta r = *m;
  if (m->n && m->t) r.t = ox_graph_meta_intern(t->pool, m->t, m->n);
  if (m->sym) r.sym = ox_trace_intern(t, m->sym);
  return r;
}

/* Appends to inv the edit(s) undoing e on g as g is now (before e is applied; id: the node e
 * names, 0 for an added one). For a toposort
 * the old order is returned in *order (caller compares after applying). */
static void inverse_of(OxTrace *rev, const OxGraph *g, const OxTraceEdit *e, OxNodeId id, GArray *inv,
                       GArray **order) {
  OxTraceEdit r;
  memset(&r, 0, sizeof r);
  switch ((OxTraceEditKind)e->kind) {
  case OX_TEDIT_ADD:
    r.kind = OX_TEDIT_ERASE;
    r.name = ox_trace_intern(rev, e->name);
    break;
  case OX_TEDIT_ERASE: {
    if (!id) return;
    const OxNode *n = &g->nodes[id];
    OxNodeId p = live_prev(g, id);
    r.kind = OX_TEDIT_ADD;
    r.name = rev_str(rev, g, n->name);
    r.after = p ? rev_str(rev, g, g->nodes[p].name) : NULL;
    r.op = n->op;
    r.target = rev_str(rev, g, n->target);
    OxTraceEditData *d = ox_trace_edit_data(rev, &r);
    d->args = ox_trace_value_from_graph(rev, g, &n->args);
    d->kwargs = ox_trace_value_from_graph(rev, g, &n->kwargs);
    d->meta = meta_to_pool(rev, &n->meta);
    r.has_meta = n->meta.kind != OX_META_NONE;
    break;
  }
  case OX_TEDIT_ARGS: {
    if (!id) return;
    const OxNode *n = &g->nodes[id];
    r.kind = OX_TEDIT_ARGS;
    r.name = rev_str(rev, g, n->name);
    OxTraceEditData *d = ox_trace_edit_data(rev, &r);
    d->args = ox_trace_value_from_graph(rev, g, &n->args);
    d->kwargs = ox_trace_value_from_graph(rev, g, &n->kwargs);
    break;
  }
  case OX_TEDIT_MOVE: {
    if (!e->name) {
      /* toposort: remember the whole order; the caller emits moves for what changed */
      *order = g_array_new(FALSE, FALSE, sizeof(OxNodeId));
      OX_GRAPH_FOREACH(g, x) g_array_append_val(*order, x);
      return;
    }
    if (!id) return;
    OxNodeId p = live_prev(g, id);
    r.kind = OX_TEDIT_MOVE;
    r.name = rev_str(rev, g, g->nodes[id].name);
    r.after = p ? rev_str(rev, g, g->nodes[p].name) : NULL;
    break;
  }
  case OX_TEDIT_META:
    if (!id) return;
    r.kind = OX_TEDIT_META;
    r.name = rev_str(rev, g, g->nodes[id].name);
    ox_trace_edit_data(rev, &r)->meta = meta_to_pool(rev, &g->nodes[id].meta);
    r.has_meta = TRUE;
    break;
  case OX_TEDIT_RENAME:
    r.kind = OX_TEDIT_RENAME;
    r.name = ox_trace_intern(rev, e->new_name);
    r.new_name = ox_trace_intern(rev, e->name);
    break;
  case OX_TEDIT_REPLACE: {
    if (!id) return;
    const OxNode *n = &g->nodes[id];
    OxNodeId to = graph_find(g, rev->pool, e->to);
    r.name = rev_str(rev, g, n->name);
    if (to && !ox_graph_has_input(g, id, to)) {
      /* `to` is not an input yet, so rewiring it back to `from` undoes the edit exactly */
      r.kind = OX_TEDIT_REPLACE;
      r.from = ox_trace_intern(rev, e->to);
      r.to = ox_trace_intern(rev, e->from);
    } else {
      /* both were inputs: only the whole args say which references were which */
      r.kind = OX_TEDIT_ARGS;
      OxTraceEditData *d = ox_trace_edit_data(rev, &r);
      d->args = ox_trace_value_from_graph(rev, g, &n->args);
      d->kwargs = ox_trace_value_from_graph(rev, g, &n->kwargs);
    }
    break;
  }
  }
  g_array_append_val(inv, r);
}

/* Moves (in old order) restoring `old` from the current order of g: a node whose live
 * predecessor changed goes back after its old predecessor. Appended in reverse (inv is reversed
 * as a whole at the end of the step, so these come out in old order). */
static void inverse_of_toposort(OxTrace *rev, const OxGraph *g, GArray *old, GArray *inv) {
  GArray *moves = g_array_new(FALSE, FALSE, sizeof(OxTraceEdit));
  for (guint i = 0; i < old->len; i++) {
    OxNodeId x = g_array_index(old, OxNodeId, i);
    OxNodeId want = i ? g_array_index(old, OxNodeId, i - 1) : 0;
    if (live_prev(g, x) == want) continue;
    OxTraceEdit r;
    memset(&r, 0, sizeof r);
    r.kind = OX_TEDIT_MOVE;
    r.name = rev_str(rev, g, g->nodes[x].name);
    r.after = want ? rev_str(rev, g, g->nodes[want].name) : NULL;
    g_array_append_val(moves, r);
  }
  for (guint i = moves->len; i-- > 0;) g_array_append_val(inv, g_array_index(moves, OxTraceEdit, i));
  g_array_free(moves, TRUE);
}

/* Without graph steps the union graph is the input itself: uids are its node ids. */
static void history_build_alias(OxHistory *h) {
  const OxGraph *in = h->input;
  ox_graph_free(h->u);
  h->u = h->input;
  guint32 cap = in->n_nodes + 1;
  h->born = g_new0(guint32, cap);
  h->died = g_new0(guint32, cap); /* 0: an erased id is never alive */
  h->name = g_new0(const char *, cap);
  OX_GRAPH_FOREACH(in, id) {
    h->died[id] = OX_HISTORY_NEVER;
    h->name[id] = in->nodes[id].name;
    history_index_name(h, h->name[id], id);
  }
  h->edits_upto = g_new0(guint64, 2);
}

static void history_index_steps(OxHistory *h);
static void history_count_steps(OxHistory *h);

static void history_build(OxHistory *h) {
  const OxGraph *in = h->input;
  if (!h->n_graph_steps) {
    history_build_alias(h);
    history_index_steps(h);
    history_count_steps(h);
    return;
  }
  /* the union holds every input node and every added one: size it once */
  guint32 n_add = 0;
  for (guint32 a = 1; a <= h->n_graph_steps; a++) {
    const OxStep *s = &h->trace->steps[h->seq_of_gstep[a]];
    for (guint32 j = 0; j < s->n_edits; j++) n_add += s->edits[j].kind == OX_TEDIT_ADD;
  }
  ox_graph_reserve(h->u, in->n_live + n_add + 1);
  h->cap_uid = in->n_live + n_add + 2;
  h->born = g_new(guint32, h->cap_uid);
  h->died = g_new(guint32, h->cap_uid);
  h->name = g_new(const char *, h->cap_uid);
  /* wuid[x]: the identity of node x of the working graph (a clone of the input: same ids),
   * kept as the steps add nodes; ids of a graph are never reused */
  guint32 cap_w = in->n_nodes + n_add + 1;
  guint32 *wuid = g_new0(guint32, cap_w);
  OX_GRAPH_FOREACH(in, id) wuid[id] = history_add(h, in, id, 0);
  UnionMarks um = {NULL, 0, 0};
  OX_GRAPH_FOREACH(in, id) history_union_edges(h, in, wuid, id, wuid[id], &um);
  /* touched_at[uid] = the graph step that last listed uid in `touched`: a node rewired many
   * times in one step (each input of a cat) gets its union edges updated once, after the step */
  guint32 cap_t = h->cap_uid;
  guint32 *touched_at = g_new0(guint32, cap_t);
  /* the working graph is needed only to replay steps */
  OxGraph *g = ox_graph_clone_lean(in, h->trace->pool);
  GArray *touched = g_array_new(FALSE, FALSE, sizeof(guint32) * 2); /* (uid, working id) */
  GArray *inv = g_array_new(FALSE, FALSE, sizeof(OxTraceEdit));
  h->edits_upto = g_new0(guint64, h->n_graph_steps + 2);
  guint32 done = 0;
  for (guint32 a = 1; a <= h->n_graph_steps; a++) {
    const OxStep *s = &h->trace->steps[h->seq_of_gstep[a]];
    g_array_set_size(touched, 0);
    g_array_set_size(inv, 0);
    GError *err = NULL;
    for (guint32 j = 0; j < s->n_edits && !err; j++) {
      const OxTraceEdit *e = &s->edits[j];
      GArray *order = NULL;
      /* the node the edit names, as g is before it (an added node does not exist yet) */
      OxNodeId wid = e->kind == OX_TEDIT_ADD ? 0 : graph_find(g, h->trace->pool, e->name);
      inverse_of(h->rev, g, e, wid, inv, &order);
      /* one edit at a time, without the step's provenance (the union graph has none, and
       * ox_replay's provenance pass would run once per edit) */
      OxStep one = *s;
      one.edits = (OxTraceEdit *)e;
      one.n_edits = 1;
      one.n_prov = 0;
      one.n_scaffold = 0;
      if (!replay_view(h->trace, &one, 1, g, &err)) {
        if (order) g_array_free(order, TRUE);
        break;
      }
      if (order) {
        inverse_of_toposort(h->rev, g, order, inv);
        g_array_free(order, TRUE);
      }
      guint32 uid = wid && wid < cap_w ? wuid[wid] : 0;
      switch ((OxTraceEditKind)e->kind) {
      case OX_TEDIT_ADD: {
        wid = graph_find(g, h->trace->pool, e->name);
        if (!wid) break;
        uid = history_add(h, g, wid, a);
        if (wid >= cap_w) {
          guint32 old = cap_w;
          cap_w = MAX(wid + 1, cap_w + cap_w / 2);
          wuid = g_renew(guint32, wuid, cap_w);
          memset(wuid + old, 0, (cap_w - old) * sizeof *wuid);
        }
        wuid[wid] = uid;
        guint32 pair[2] = {uid, wid};
        g_array_append_val(touched, pair);
        break;
      }
      case OX_TEDIT_ERASE:
        if (uid) h->died[uid] = a;
        break;
      case OX_TEDIT_ARGS:
      case OX_TEDIT_REPLACE:
        if (uid) {
          guint32 pair[2] = {uid, wid};
          g_array_append_val(touched, pair);
        }
        break;
      case OX_TEDIT_RENAME:
        if (uid && e->new_name) {
          h->name[uid] = ox_graph_intern(h->u, e->new_name);
          history_index_name(h, h->name[uid], uid);
        }
        break;
      case OX_TEDIT_MOVE:
      case OX_TEDIT_META:
        break;
      }
    }
    if (err) {
      h->error = g_strdup_printf("graph step %u: %s", a, err->message);
      g_error_free(err);
      break;
    }
    /* identities added and erased within the step are born and dead at a: never alive */
    for (guint i = 0; i < touched->len; i++) {
      const guint32 *pair = (const guint32 *)touched->data + 2 * i;
      if (h->died[pair[0]] != OX_HISTORY_NEVER || g->nodes[pair[1]].erased) continue;
      if (pair[0] >= cap_t) {
        guint32 old = cap_t;
        cap_t = MAX(pair[0] + 1, cap_t + cap_t / 2);
        touched_at = g_renew(guint32, touched_at, cap_t);
        memset(touched_at + old, 0, (cap_t - old) * sizeof *touched_at);
      }
      if (touched_at[pair[0]] == a) continue; /* done in this step: the graph is the same */
      touched_at[pair[0]] = a;
      history_union_edges(h, g, wuid, pair[1], pair[0], &um);
    }
    /* the inverse script, in undo order */
    OxStep *r = ox_trace_add_step(h->rev, OX_STEP_APPLIED);
    r->applied_index = a;
    r->pass = s->pass;
    r->n_edits = inv->len;
    r->edits = ox_graph_alloc(h->rev->pool, MAX(inv->len, 1) * sizeof(OxTraceEdit));
    for (guint i = 0; i < inv->len; i++) r->edits[i] = g_array_index(inv, OxTraceEdit, inv->len - 1 - i);
    h->edits_upto[a] = h->edits_upto[a - 1] + s->n_edits;
    done = a;
  }
  h->n_graph_steps = done;
  g_array_free(inv, TRUE);
  g_array_free(touched, TRUE);
  g_free(touched_at);
  g_free(um.mark);
  g_free(wuid);
  ox_graph_free(g);
  history_index_steps(h);
  history_count_steps(h);
}

/* uids by birth and death step, for incremental frame updates */
static void history_index_steps(OxHistory *h) {
  guint32 n = h->u->n_nodes, ns = h->n_graph_steps + 2;
  h->born_idx = g_new0(guint32, ns + 1);
  h->died_idx = g_new0(guint32, ns + 1);
  for (guint32 uid = 1; uid < n; uid++) {
    h->born_idx[MIN(h->born[uid], ns - 1) + 1]++;
    if (h->died[uid] != OX_HISTORY_NEVER) h->died_idx[MIN(h->died[uid], ns - 1) + 1]++;
  }
  for (guint32 i = 0; i < ns; i++) {
    h->born_idx[i + 1] += h->born_idx[i];
    h->died_idx[i + 1] += h->died_idx[i];
  }
  h->born_at = g_new(guint32, MAX(h->born_idx[ns], 1));
  h->died_at = g_new(guint32, MAX(h->died_idx[ns], 1));
  guint32 *fb = g_memdup2(h->born_idx, (ns + 1) * sizeof(guint32));
  guint32 *fd = g_memdup2(h->died_idx, (ns + 1) * sizeof(guint32));
  for (guint32 uid = 1; uid < n; uid++) {
    h->born_at[fb[MIN(h->born[uid], ns - 1)]++] = uid;
    if (h->died[uid] != OX_HISTORY_NEVER) h->died_at[fd[MIN(h->died[uid], ns - 1)]++] = uid;
  }
  g_free(fb);
  g_free(fd);
}

/* live nodes per graph step: +1 at a uid's birth, -1 at its death, summed */
static void history_count_steps(OxHistory *h) {
  guint32 n = h->u->n_nodes, last = h->n_graph_steps;
  gint64 *dl = g_new0(gint64, last + 2), *dc = g_new0(gint64, last + 2);
  for (guint32 uid = 1; uid < n; uid++) {
    gboolean counted = h->u->nodes[uid].op != OX_OP_OUTPUT;
    if (h->born[uid] <= last) {
      dl[h->born[uid]]++;
      dc[h->born[uid]] += counted;
    }
    if (h->died[uid] <= last) {
      dl[h->died[uid]]--;
      dc[h->died[uid]] -= counted;
    }
  }
  h->live_at = g_new(guint32, last + 1);
  h->counted_at = g_new(guint32, last + 1);
  gint64 l = 0, c = 0;
  for (guint32 a = 0; a <= last; a++) {
    l += dl[a];
    c += dc[a];
    h->live_at[a] = (guint32)l;
    h->counted_at[a] = (guint32)c;
  }
  g_free(dl);
  g_free(dc);
}

guint32 ox_history_count_nodes(const OxHistory *h, const OxGraph *g, guint32 k) {
  if (h && h->live_at && k <= h->n_graph_steps && h->live_at[k] == g->n_live) return h->counted_at[k];
  guint32 c = 0;
  OX_GRAPH_FOREACH(g, id) c += g->nodes[id].op != OX_OP_OUTPUT;
  return c;
}

static OxHistory *history_new(OxGraph *input, OxHistory *owner, OxTrace *trace) {
  OxHistory *h = g_rc_box_new0(OxHistory);
  h->input = input;
  h->input_owner = owner;
  h->trace = trace;
  h->u = ox_graph_new();
  /* the inverse edits' strings and every working graph's are the trace's: replays look names up
   * without hashing them (ox_graph_find_interned) */
  h->rev = trace ? ox_trace_new_for(trace->pool) : ox_trace_new();
  h->by_name = g_hash_table_new(g_str_hash, g_str_equal);
  h->n_named = 1; /* entry 0: none */
  guint32 n_steps = trace ? trace->n_steps : 0;
  h->gstep_after_seq = g_new0(guint32, n_steps + 1);
  guint32 max = 0;
  for (guint32 i = 0; i < n_steps; i++) {
    guint32 ai = h->trace->steps[i].applied_index;
    if (ai > max) max = ai;
    h->gstep_after_seq[i] = max;
  }
  h->n_graph_steps = max;
  h->seq_of_gstep = g_new0(guint32, max + 2);
  for (guint32 i = 0; i < n_steps; i++) {
    guint32 ai = h->trace->steps[i].applied_index;
    if (ai) h->seq_of_gstep[ai] = i;
  }
  history_build(h);
  return h;
}

OxHistory *ox_history_new(OxGraph *input, OxTrace *trace) { return history_new(input, NULL, trace); }

OxHistory *ox_history_new_on(OxHistory *base, OxTrace *trace) {
  /* a base without steps is little more than its input: keep it alive for that and share */
  if (base->u == base->input) return history_new(base->input, ox_history_ref(base), trace);
  return history_new(ox_graph_clone(base->input), NULL, trace);
}

OxHistory *ox_history_ref(OxHistory *h) { return g_rc_box_acquire(h); }

static void history_clear(gpointer p) {
  OxHistory *h = p;
  if (h->u != h->input) ox_graph_free(h->u);
  g_free(h->born);
  g_free(h->died);
  g_free(h->name);
  g_free(h->seq_of_gstep);
  g_free(h->gstep_after_seq);
  g_free(h->born_idx);
  g_free(h->died_idx);
  g_free(h->born_at);
  g_free(h->died_at);
  g_free(h->edits_upto);
  g_free(h->live_at);
  g_free(h->counted_at);
  ox_trace_free(h->rev);
  g_hash_table_destroy(h->by_name);
  g_free(h->named);
  g_free(h->error);
  ox_trace_free(h->trace);
  if (h->input_owner)
    ox_history_unref(h->input_owner);
  else
    ox_graph_free(h->input);
}

void ox_history_unref(OxHistory *h) {
  if (h) g_rc_box_release_full(h, history_clear);
}
