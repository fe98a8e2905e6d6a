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
 * Graphs at step k are rebuilt by replay (ox_replay) from a snapshot taken every
 * OX_HISTORY_SNAP_EVERY graph steps, so stepping back and forth costs at most that many steps
 * of replay plus one clone. Reference counted (ox_history_ref/unref) because layouts and views
 * may outlive the document's current history.
 */
#ifndef OX_HISTORY_H
#define OX_HISTORY_H

#include <gio/gio.h>

#include "ox_graph.h"
#include "ox_trace.h"

G_BEGIN_DECLS

#define OX_HISTORY_SNAP_EVERY 8u
#define OX_HISTORY_NEVER G_MAXUINT32

typedef struct OxHistory {
  OxGraph *input;           /* owned, kept pristine: the graph before any step */
  OxTrace *trace;           /* owned: may be NULL (no steps) */
  OxGraph *u;               /* owned: the union graph; node ids are identity ids ("uids") */
  guint32 *born, *died;     /* per uid: graph step interval [born, died) */
  const char **name;        /* per uid: the real node name (interned in u) */
  guint32 n_graph_steps;    /* number of graph-changing steps (max applied_index) */
  guint32 *seq_of_gstep;    /* [1..n_graph_steps]: trace seq of that graph step */
  guint32 *gstep_after_seq; /* [seq]: graph steps applied through this record */
  OxGraph **snap;           /* snap[i] = graph after graph step i*SNAP_EVERY */
  guint32 n_snap;
  GHashTable *by_name;      /* name -> GArray of uids with that name (born order) */
  char *error;              /* replay failure while building (the history then ends early) */
} OxHistory;

/* Builds the history of trace on input, taking ownership of both (trace may be NULL). Never returns NULL; on a replay failure the history stops at the failing step and
 * error says why. */
OxHistory *ox_history_new(OxGraph *input, OxTrace *trace);
OxHistory *ox_history_ref(OxHistory *h);
void ox_history_unref(OxHistory *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(OxHistory, ox_history_unref)

/* A new graph (caller frees) equal to the input after graph steps 1..k. NULL on replay error. */
OxGraph *ox_history_graph_at(const OxHistory *h, guint32 k, GError **error);
/* Replays graph steps (from, to] onto g (which must be the graph after step `from`). */
gboolean ox_history_replay_range(const OxHistory *h, OxGraph *g, guint32 from, guint32 to, GError **error);
/* The uid of the node called name that is alive at graph step k, or 0. */
guint32 ox_history_uid(const OxHistory *h, const char *name, guint32 k);
static inline gboolean ox_history_alive(const OxHistory *h, guint32 uid, guint32 k) {
  return uid && h->born[uid] <= k && k < h->died[uid];
}

G_END_DECLS
#endif
