/* ox-history.h - the union of every node that exists at any step of a trace, with lifetimes,
 * and fast access to the graph at any step.
 *
 * Identity of a node across steps is (name, graph step that created it): input nodes are born
 * at 0, a node added by graph step a (1-based applied_index) is born at a, and a node removed by
 * step a dies at a. A node is alive at graph step k when born <= k < died.
 *
 * The union graph `u` holds one node per identity (names may be suffixed where an identity
 * reuses a name) with the union of every input edge it ever had; it exists only to be laid out
 * once, so untouched nodes keep their positions from step to step. It is immutable after
 * ox_history_new, so a worker thread may lay it out while the UI thread reads it.
 *
 * Moving a graph between steps costs the edits in between, in either direction: forward by
 * replaying the trace's edit scripts (ox_replay on a view of the trace), backward by replaying
 * an inverse script recorded while the history was built (`rev`: for graph step a, the edits
 * that take the graph after a back to the graph before a, as a trace of its own so the same
 * replay code applies them). No graph is ever cloned per step, and no snapshots are kept: at
 * 100k nodes a clone costs ~0.2 s and ~60 MB, an inverse step a few kilobytes. Building is
 * linear in the input and the edits. Reference counted (ox_history_ref/unref) because layouts
 * and views may outlive the document's current history.
 */
#ifndef OX_HISTORY_H
#define OX_HISTORY_H

#include <gio/gio.h>

#include "ir/ox_graph.h"
#include "run/ox_trace.h"

G_BEGIN_DECLS

#define OX_HISTORY_NEVER G_MAXUINT32

/* Every unique input of node id of g (ox_graph_inputs: main thread): into stack (room for cap)
 * when they fit, else into a new array (*out; g_free it when *out != stack). A node may have
 * more inputs than any fixed buffer (a cat of hundreds of features). Returns the count. */
static inline guint32 ox_ui_inputs(const OxGraph *g, OxNodeId id, OxNodeId *stack, guint32 cap, OxNodeId **out) {
  guint32 n = ox_graph_inputs(g, id, stack, cap);
  *out = stack;
  if (n > cap) {
    *out = g_new(OxNodeId, n);
    n = ox_graph_inputs(g, id, *out, n);
  }
  return n;
}

typedef struct OxHistory OxHistory;
/* One of the uids that had a name: a node created, or renamed, to it (a list per name). */
typedef struct OxHistoryNamed {
  guint32 uid, next; /* next: the entry of the same name made before this one, 0 = none */
} OxHistoryNamed;

struct OxHistory {
  OxGraph *input;           /* owned (or input_owner's), kept pristine: the graph before any step */
  OxHistory *input_owner;   /* a history whose input this one shares (ref held), or NULL */
  OxTrace *trace;           /* owned: may be NULL (no steps) */
  OxGraph *u;               /* owned: the union graph; node ids are identity ids ("uids"). Without
                               graph steps it is the input itself (uids are its node ids) */
  guint32 *born, *died;     /* per uid: graph step interval [born, died) */
  const char **name;        /* per uid: the real node name (interned in u) */
  guint32 cap_uid;          /* allocated length of born, died and name */
  guint32 n_graph_steps;    /* number of graph-changing steps (max applied_index) */
  guint32 *seq_of_gstep;    /* [1..n_graph_steps]: trace seq of that graph step */
  guint32 *gstep_after_seq; /* [seq]: graph steps applied through this record */
  OxTrace *rev;             /* owned: rev->steps[a-1] undoes graph step a (edits in undo order) */
  guint32 *born_idx, *died_idx; /* CSR by graph step: uids born / dying at step a are */
  guint32 *born_at, *died_at;   /* born_at[born_idx[a] .. born_idx[a+1]) (a = 0..n_graph_steps) */
  guint64 *edits_upto;      /* [a]: forward edits in graph steps 1..a */
  guint32 *live_at;         /* [a] (a = 0..n_graph_steps): nodes alive after graph step a */
  guint32 *counted_at;      /* [a]: of those, the ones `optimus info` counts (all but outputs) */
  GHashTable *by_name;      /* name -> index of the newest entry in named (see ox_history_named) */
  OxHistoryNamed *named;    /* [1..n_named): the uids each name has had, newest first per name */
  guint32 n_named, cap_named;
  char *error;              /* replay failure while building (the history then ends early) */
};

/* Builds the history of trace on input, taking ownership of both (trace may be NULL). Never returns NULL; on a replay failure the history stops at the failing step and
 * error says why. */
OxHistory *ox_history_new(OxGraph *input, OxTrace *trace);
/* A history of trace on base's input: shared when base has no graph steps (then base, which is
 * little more than that input, stays alive with it), else a copy. */
OxHistory *ox_history_new_on(OxHistory *base, OxTrace *trace);
OxHistory *ox_history_ref(OxHistory *h);
void ox_history_unref(OxHistory *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(OxHistory, ox_history_unref)

/* A new graph (caller frees) equal to the input after graph steps 1..k. NULL on replay error. */
OxGraph *ox_history_graph_at(const OxHistory *h, guint32 k, GError **error);
/* Replays graph steps (from, to] onto g (which must be the graph after step `from`). */
gboolean ox_history_replay_range(const OxHistory *h, OxGraph *g, guint32 from, guint32 to, GError **error);
/* Moves g, the graph after graph step `from`, to the graph after step `to` (either direction),
 * in time linear in the edits in between. Node ids of g are not preserved across an undo of an
 * erase (identity is by name). */
gboolean ox_history_seek(const OxHistory *h, OxGraph *g, guint32 from, guint32 to, GError **error);
/* The nodes `optimus info` would count (every live node but outputs) in g, the graph after
 * graph step k: O(1) from the history when g's live count is the one the history recorded for
 * k, else counted over g. */
guint32 ox_history_count_nodes(const OxHistory *h, const OxGraph *g, guint32 k);
/* Edits between graph steps a and b (either order): the cost of a seek. */
guint64 ox_history_edits_between(const OxHistory *h, guint32 a, guint32 b);
/* The newest entry for name in h->named (0: no node ever had it); walk on with .next:
 *   for (guint32 e = ox_history_named(h, name); e; e = h->named[e].next) ... h->named[e].uid */
static inline guint32 ox_history_named(const OxHistory *h, const char *name) {
  return name ? GPOINTER_TO_UINT(g_hash_table_lookup(h->by_name, name)) : 0;
}

/* The uid of the node called name that is alive at graph step k, or 0. */
guint32 ox_history_uid(const OxHistory *h, const char *name, guint32 k);
static inline gboolean ox_history_alive(const OxHistory *h, guint32 uid, guint32 k) {
  return uid && h->born[uid] <= k && k < h->died[uid];
}

G_END_DECLS
#endif
