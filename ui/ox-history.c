/* ox-history.c - union graph, node lifetimes and step snapshots (see ox-history.h).
 *
 * Built once per (input, trace) by replaying every graph step in order on a working clone of
 * the input: ADD edits create identities, ERASE edits end them, ADD/ARGS edits extend the
 * union's edge set. The working graph is cloned every OX_HISTORY_SNAP_EVERY steps.
 */
#include "ox-history.h"

#include <string.h>

#include "ox_pass.h"

static guint32 history_current(const OxHistory *h, const char *name) {
  GArray *a = g_hash_table_lookup(h->by_name, name);
  if (!a) return 0;
  for (guint i = a->len; i-- > 0;) {
    guint32 uid = g_array_index(a, guint32, i);
    if (h->died[uid] == OX_HISTORY_NEVER) return uid;
  }
  return 0;
}

guint32 ox_history_uid(const OxHistory *h, const char *name, guint32 k) {
  GArray *a = name ? g_hash_table_lookup(h->by_name, name) : NULL;
  if (!a) return 0;
  for (guint i = a->len; i-- > 0;) {
    guint32 uid = g_array_index(a, guint32, i);
    if (ox_history_alive(h, uid, k)) return uid;
  }
  return 0;
}

static void history_index_name(OxHistory *h, const char *name, guint32 uid) {
  GArray *a = g_hash_table_lookup(h->by_name, name);
  if (!a) {
    a = g_array_new(FALSE, FALSE, sizeof(guint32));
    g_hash_table_insert(h->by_name, (gpointer)name, a);
  }
  g_array_append_val(a, uid);
}

/* Creates the identity for node id of g (the working graph), born at step k, without edges. */
static guint32 history_add(OxHistory *h, const OxGraph *g, OxNodeId id, guint32 k) {
  const OxNode *n = &g->nodes[id];
  OxNodeId uid = ox_graph_add_node(h->u, (OxOp)n->op, n->name, n->target, ox_value_none(), ox_value_none());
  if (n->meta.kind != OX_META_NONE) ox_graph_set_meta(h->u, uid, &n->meta);
  guint32 cap = h->u->n_nodes + 1;
  h->born = g_renew(guint32, h->born, cap);
  h->died = g_renew(guint32, h->died, cap);
  h->name = g_renew(const char *, h->name, cap);
  h->born[uid] = k;
  h->died[uid] = OX_HISTORY_NEVER;
  h->name[uid] = ox_graph_intern(h->u, n->name);
  history_index_name(h, h->name[uid], uid);
  return uid;
}

/* Adds to uid's union edges the inputs node id of g has now. */
static void history_union_edges(OxHistory *h, const OxGraph *g, OxNodeId id, guint32 uid) {
  OxNodeId ins[256];
  guint32 n_in = ox_graph_inputs(g, id, ins, G_N_ELEMENTS(ins));
  if (n_in > G_N_ELEMENTS(ins)) n_in = G_N_ELEMENTS(ins);
  const OxValue *old = &h->u->nodes[uid].args;
  guint32 n_old = old->kind == OX_V_TUPLE ? old->n : 0;
  OxValue *items = g_new(OxValue, n_old + n_in);
  guint32 m = 0;
  for (guint32 i = 0; i < n_old; i++) items[m++] = old->u.items[i];
  gboolean changed = FALSE;
  for (guint32 i = 0; i < n_in; i++) {
    guint32 src = history_current(h, g->nodes[ins[i]].name);
    if (!src || src == uid) continue;
    gboolean seen = FALSE;
    for (guint32 j = 0; j < m && !seen; j++) seen = items[j].u.node == src;
    if (seen) continue;
    items[m++] = ox_value_node(src);
    changed = TRUE;
  }
  if (changed) ox_graph_set_args(h->u, uid, ox_graph_value_seq(h->u, OX_V_TUPLE, items, m));
  g_free(items);
}

static void set_error(GError **error, const OxDiagList *d, const char *fallback) {
  g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", d->n ? d->items[0].msg : fallback);
}

gboolean ox_history_replay_range(const OxHistory *h, OxGraph *g, guint32 from, guint32 to, GError **error) {
  if (to <= from) return TRUE;
  if (to > h->n_graph_steps) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "step %u is past the last graph step %u", to,
                h->n_graph_steps);
    return FALSE;
  }
  /* ox_replay replays every step with applied_index <= k from the start of the trace it is
   * given; a view that starts at graph step from+1 (applied_index only grows with seq) and has
   * no input hash (g is not the input graph) replays exactly (from, to]. */
  OxTrace view = *h->trace;
  guint32 first = h->seq_of_gstep[from + 1];
  view.steps = h->trace->steps + first;
  view.n_steps = h->trace->n_steps - first;
  view.input_hash = NULL;
  OxDiagList d;
  ox_diags_init(&d, NULL);
  int rc = ox_replay(g, &view, to, &d);
  if (rc != 0) set_error(error, &d, "replay failed");
  ox_diags_clear(&d);
  return rc == 0;
}

OxGraph *ox_history_graph_at(const OxHistory *h, guint32 k, GError **error) {
  guint32 i = k / OX_HISTORY_SNAP_EVERY;
  if (i >= h->n_snap) i = h->n_snap - 1;
  OxGraph *g = ox_graph_clone(h->snap[i]);
  if (!ox_history_replay_range(h, g, i * OX_HISTORY_SNAP_EVERY, k, error)) {
    ox_graph_free(g);
    return NULL;
  }
  return g;
}

static void history_build(OxHistory *h) {
  OxGraph *g = ox_graph_clone(h->input);
  h->snap = g_new0(OxGraph *, 1);
  h->snap[0] = ox_graph_clone(h->input);
  h->n_snap = 1;
  OX_GRAPH_FOREACH(g, id) history_add(h, g, id, 0);
  OX_GRAPH_FOREACH(g, id) history_union_edges(h, g, id, history_current(h, g->nodes[id].name));
  GArray *touched = g_array_new(FALSE, FALSE, sizeof(guint32));
  for (guint32 a = 1; a <= h->n_graph_steps; a++) {
    GError *err = NULL;
    if (!ox_history_replay_range(h, g, a - 1, a, &err)) {
      h->error = g_strdup_printf("graph step %u: %s", a, err->message);
      h->n_graph_steps = a - 1;
      g_error_free(err);
      break;
    }
    const OxStep *s = &h->trace->steps[h->seq_of_gstep[a]];
    g_array_set_size(touched, 0);
    for (guint32 j = 0; j < s->n_edits; j++) {
      const OxTraceEdit *e = &s->edits[j];
      guint32 uid = e->name ? history_current(h, e->name) : 0;
      switch ((OxTraceEditKind)e->kind) {
      case OX_TEDIT_ADD: {
        OxNodeId id = ox_graph_find(g, e->name);
        if (id) {
          uid = history_add(h, g, id, a);
          g_array_append_val(touched, uid);
        } else {
          /* added and erased again within the step: an identity that is never alive */
          uid = ox_graph_add_node(h->u, (OxOp)e->op, e->name, e->target, ox_value_none(), ox_value_none());
          guint32 cap = h->u->n_nodes + 1;
          h->born = g_renew(guint32, h->born, cap);
          h->died = g_renew(guint32, h->died, cap);
          h->name = g_renew(const char *, h->name, cap);
          h->born[uid] = h->died[uid] = a;
          h->name[uid] = ox_graph_intern(h->u, e->name);
        }
        break;
      }
      case OX_TEDIT_ERASE:
        if (uid) h->died[uid] = a;
        break;
      case OX_TEDIT_ARGS:
        if (uid) g_array_append_val(touched, uid);
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
    for (guint i = 0; i < touched->len; i++) {
      guint32 uid = g_array_index(touched, guint32, i);
      if (h->died[uid] != OX_HISTORY_NEVER) continue;
      OxNodeId id = ox_graph_find(g, h->name[uid]);
      if (id) history_union_edges(h, g, id, uid);
    }
    if (a % OX_HISTORY_SNAP_EVERY == 0) {
      h->snap = g_renew(OxGraph *, h->snap, h->n_snap + 1);
      h->snap[h->n_snap++] = ox_graph_clone(g);
    }
  }
  g_array_free(touched, TRUE);
  ox_graph_free(g);
}

static void free_array(gpointer p) { g_array_free(p, TRUE); }

OxHistory *ox_history_new(OxGraph *input, OxTrace *trace) {
  OxHistory *h = g_rc_box_new0(OxHistory);
  h->input = input;
  h->trace = trace;
  h->u = ox_graph_new();
  h->by_name = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, free_array);
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

OxHistory *ox_history_ref(OxHistory *h) { return g_rc_box_acquire(h); }

static void history_clear(gpointer p) {
  OxHistory *h = p;
  ox_graph_free(h->u);
  g_free(h->born);
  g_free(h->died);
  g_free(h->name);
  g_free(h->seq_of_gstep);
  g_free(h->gstep_after_seq);
  for (guint32 i = 0; i < h->n_snap; i++) ox_graph_free(h->snap[i]);
  g_free(h->snap);
  g_hash_table_destroy(h->by_name);
  g_free(h->error);
  ox_trace_free(h->trace);
  ox_graph_free(h->input);
}

void ox_history_unref(OxHistory *h) {
  if (h) g_rc_box_release_full(h, history_clear);
}
