/* ox_graph.h - the Optimus graph IR.
 *
 * A graph mirrors torch.fx.Graph: an ordered list of nodes (placeholder, get_attr,
 * call_function, call_method, call_module, output) whose args/kwargs form a value tree
 * that may reference other nodes. Nodes live in one growable array owned by the graph
 * and are addressed by small integer ids (OxNodeId, 0 = none); pointers into the array
 * are invalidated by node creation, ids never are. Erasing a node leaves a tombstone
 * that keeps its prev/next links so an iterator standing on it can continue.
 *
 * Memory: all strings are interned in the graph (ox_graph_intern), value trees and
 * tensor meta live in the graph's arena and are freed with the graph. Tensor metas of loaded
 * graphs are shared between nodes with equal meta (ox_graph_meta_intern) and read-only;
 * change a node's meta with ox_graph_set_meta, never by writing through n->meta.t. Mutations that
 * replace a value allocate the new tree in the arena; the old one is garbage until the
 * graph is freed (rewrites are few compared to node count).
 *
 * Invariants kept by every mutation function (checked by ox_graph_verify):
 *   - users[] of node n lists exactly the live nodes whose args/kwargs reference n,
 *     once each, in the order the uses were added;
 *   - the live list order is a topological order unless a caller inserted out of
 *     order and has not yet called ox_graph_stable_toposort;
 *   - names are unique among live nodes.
 *
 * The engine is pure C11 + libc: no GLib, no GTK.
 */
#ifndef OX_GRAPH_H
#define OX_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ox_diag.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t OxNodeId; /* 0 = no node */

/* ------------------------------------------------------------------ arena */

typedef struct OxArenaBlock OxArenaBlock;
typedef struct OxArena {
  OxArenaBlock *head; /* current block; older blocks chained behind it */
  size_t used;        /* bytes used in head */
  size_t total;       /* bytes allocated in all blocks (for memory reports) */
  OxArenaBlock *spare;/* blocks kept by ox_arena_rewind for reuse (counted in total) */
} OxArena;

typedef struct OxArenaMark {
  OxArenaBlock *block;
  size_t used;
} OxArenaMark;

void *ox_arena_alloc(OxArena *a, size_t size); /* zeroed, 16-byte aligned; aborts on OOM */
char *ox_arena_strndup(OxArena *a, const char *s, size_t n);
OxArenaMark ox_arena_mark(const OxArena *a);
void ox_arena_release(OxArena *a, OxArenaMark m); /* frees everything allocated after m */
void ox_arena_free(OxArena *a);
/* Empties the arena for reuse, keeping its newest block (a user of about the same size then
 * allocates nothing); older blocks are freed. */
void ox_arena_reset(OxArena *a);
/* Empties the arena for reuse, keeping every block: the next allocations fill them again
 * before any new block is allocated (for a scratch arena emptied many times: no turnover). */
void ox_arena_rewind(OxArena *a);

/* ------------------------------------------------------------------ dtypes */

typedef enum OxDType {
  OX_DT_UNKNOWN = 0,
  OX_DT_F32, OX_DT_F64, OX_DT_F16, OX_DT_BF16,
  OX_DT_I64, OX_DT_I32, OX_DT_I16, OX_DT_I8, OX_DT_U8, OX_DT_U16, OX_DT_U32, OX_DT_U64,
  OX_DT_BOOL,
  OX_DT_C32, OX_DT_C64, OX_DT_C128,
  OX_DT_F8E4M3FN, OX_DT_F8E5M2, OX_DT_F8E4M3FNUZ, OX_DT_F8E5M2FNUZ, OX_DT_F8E8M0FNU,
  OX_DT_F4E2M1FNX2, OX_DT_B16, OX_DT_B1X8,
  OX_DT_COUNT
} OxDType;

const char *ox_dtype_abbr(OxDType t);        /* "f32" ... ; "?" for unknown */
const char *ox_dtype_torch_name(OxDType t);  /* "torch.float32" ... */
OxDType ox_dtype_from_abbr(const char *s, size_t n);       /* OX_DT_UNKNOWN if not one */
OxDType ox_dtype_from_torch_name(const char *s, size_t n); /* accepts "torch.float32", "float32", "torch.float", "torch.long"... */
size_t ox_dtype_size(OxDType t);             /* bytes per element (0 if sub-byte/unknown) */
bool ox_dtype_is_float(OxDType t);

/* ------------------------------------------------------------------ values */

typedef enum OxValueKind {
  OX_V_NONE = 0,
  OX_V_BOOL,
  OX_V_INT,
  OX_V_FLOAT,    /* includes inf, -inf, nan */
  OX_V_STR,      /* a string constant (quoted in the dump, or a bare word that is not an enum) */
  OX_V_NODE,     /* reference to a node in the same graph */
  OX_V_SYM,      /* symbolic int expression, e.g. "s0", "4096*s0" (s = text) */
  OX_V_DTYPE,    /* u.dtype; s holds the spelling if dtype is unknown to us */
  OX_V_DEVICE,   /* s = "cuda:0", "cpu" */
  OX_V_ENUM,     /* memory_format / layout and other torch.* constants, s = "torch.contiguous_format" */
  OX_V_ELLIPSIS, /* Python ... */
  OX_V_LIST,
  OX_V_TUPLE,
  OX_V_DICT,     /* keys[i] -> items[i]; insertion order kept */
  OX_V_SLICE,    /* items[0..2] = start, stop, step (each may be NONE) */
  OX_V_RAW       /* an expression we keep as text but do not interpret (s = text) */
} OxValueKind;

typedef struct OxValue OxValue;
struct OxValue {
  uint8_t kind;   /* OxValueKind */
  uint32_t n;     /* number of items (LIST, TUPLE, DICT, SLICE=3) */
  union {
    bool b;
    int64_t i;
    double f;
    OxNodeId node;
    OxDType dtype;
    OxValue *items; /* LIST, TUPLE, DICT, SLICE */
  } u;
  const char *s;      /* STR, SYM, DEVICE, ENUM, RAW text; DTYPE spelling if unknown; interned */
  const char **keys;  /* DICT keys (interned), n of them */
};

/* Constructors: scalars are returned by value; containers allocate items in the graph arena. */
OxValue ox_value_none(void);
OxValue ox_value_bool(bool b);
OxValue ox_value_int(int64_t i);
OxValue ox_value_float(double f);
OxValue ox_value_node(OxNodeId id);
OxValue ox_value_dtype(OxDType t);

bool ox_value_equal(const OxValue *a, const OxValue *b); /* deep, structural */

/* Calls fn on every node reference in v (depth-first, left to right). */
typedef void (*OxValueNodeFn)(OxNodeId id, void *data);
void ox_value_foreach_node(const OxValue *v, OxValueNodeFn fn, void *data);

/* ------------------------------------------------------------------ meta */

typedef struct OxDim {
  int64_t v;        /* concrete size when sym == NULL */
  const char *sym;  /* symbolic expression ("s0", "4096*s0"), interned; NULL if concrete */
} OxDim;

typedef struct OxTensorMeta {
  OxDType dtype;
  int32_t rank;       /* -1 = shape unknown */
  bool has_stride;
  OxDim *shape;       /* rank entries */
  OxDim *stride;      /* rank entries when has_stride */
  const char *device; /* interned "cuda:0", "cpu", or NULL */
} OxTensorMeta;

typedef enum OxMetaKind {
  OX_META_NONE = 0, /* nothing known */
  OX_META_TENSOR,   /* t[0] */
  OX_META_TUPLE,    /* t[0..n-1], one per output (split, unbind, var_mean ...) */
  OX_META_SYMINT,   /* a SymInt value: sym = "s0" (or NULL with t==NULL) */
  OX_META_SCALAR    /* a Python scalar/other non-tensor value, no shape */
} OxMetaKind;

typedef struct OxMeta { /* 24 bytes: one in every node and in every logged edit */
  uint8_t kind;      /* OxMetaKind */
  bool inferred;     /* filled by shape inference rather than read from the dump */
  uint32_t n;        /* number of tensor metas in t */
  OxTensorMeta *t;
  const char *sym;   /* SYMINT: the symbol; interned */
} OxMeta;

/* ------------------------------------------------------------------ nodes */

typedef enum OxOp {
  OX_OP_PLACEHOLDER = 0,
  OX_OP_GET_ATTR,
  OX_OP_CALL_FUNCTION,
  OX_OP_CALL_METHOD,
  OX_OP_CALL_MODULE,
  OX_OP_OUTPUT,
  OX_OP_COUNT
} OxOp;

const char *ox_op_name(OxOp op);          /* "placeholder", ... as torch.fx spells them */
bool ox_op_from_name(const char *s, size_t n, OxOp *out);

/* Flags describing how a node came to be; loaders set them, writers keep them. */
enum {
  OX_NODE_EXTERNAL = 1u << 0,  /* placeholder synthesised for a name a fragment uses but never defines */
  OX_NODE_MARKER = 1u << 1,    /* came from an Inductor "PlaceHolder[target=x]" marker */
};

typedef struct OxNode {
  /* The fields a walk over the program order reads come first, in one cache line with the
   * name, target and users that matchers read next. */
  OxNodeId id;
  uint8_t op;             /* OxOp */
  bool erased;            /* tombstone */
  uint16_t flags;         /* OX_NODE_* */
                          /* program order: g->link[id] (ox_node_prev / ox_node_next) */
  uint32_t n_users, cap_users;
  OxNodeId *users;        /* in the graph's arena; n_users live users in insertion order */
  const char *name;       /* interned, unique among live nodes */
  const char *target;     /* interned; placeholder: arg name; get_attr/call_module: dotted path;
                             call_function: qualified name; call_method: method name; output: "output" */
  int32_t declared_users; /* [num_users=N] as printed in the dump, -1 if absent */
  uint32_t pos;           /* position in order; valid after ox_graph_renumber */
  OxValue args;           /* always a TUPLE */
  OxValue kwargs;         /* always a DICT */
  OxMeta meta;
  uint32_t src_line;      /* 1-based line in the dump it came from, 0 if none */
  uint32_t n_provenance;  /* entries in provenance (below; here to fill the word) */
  const char *type_ann;   /* type annotation as printed ("torch.Tensor", "Tensor"), interned or NULL */
  const char *stack_trace;/* "# File: ..." lines / meta stack_trace, interned or NULL */
  const char *module_path;/* nn_module_stack leaf path ("layers.0.attn"), interned or NULL */
  const char *module_type;/* for call_module: the nn.Module class ("torch.nn.Linear"), or NULL */
  const char *default_value; /* placeholder default as printed, or NULL */
  OxNodeId *provenance;   /* arena; ids of nodes (in the input graph) this node came from */
} OxNode;

/* ------------------------------------------------------------------ graph */

typedef struct OxStrTab OxStrTab;
typedef struct OxNameMap OxNameMap;

/* One logged mutation of a transaction (ox_graph_txn_*). The log is what rollback undoes and
 * what the step trace reads to learn which nodes a rewrite added, erased or rewired. */
typedef enum OxEditKind {
  OX_EDIT_ADD = 0,   /* node was created */
  OX_EDIT_ERASE,     /* node was erased; prev = its predecessor at the time */
  OX_EDIT_ARGS,      /* args/kwargs of node changed; old_* hold the previous trees (a copy when the
                        change was an in-place ox_graph_replace_input: then `replace` is set) */
  OX_EDIT_MOVE,      /* node moved; prev = predecessor before the move */
  OX_EDIT_RENAME,    /* old_name */
  OX_EDIT_META,      /* old_meta */
  OX_EDIT_PROVENANCE,/* old_n entries, old_ids */
  OX_EDIT_USERS,     /* users array of node before its first change in this txn (old_ids, old_n) */
  OX_EDIT_ORDER,     /* whole order before a toposort (old_ids, old_n) */
  OX_EDIT_REPLACE    /* ox_graph_replace_input(node, from, to) on a node whose trees this transaction
                        already snapshotted (an earlier ARGS entry restores them on rollback): no
                        copy, so rewiring the k inputs of a k-input cat logs O(k), not O(k^2) */
} OxEditKind;

typedef struct OxEdit {
  uint8_t kind;        /* OxEditKind */
  bool replace;        /* ARGS / REPLACE: the change was ox_graph_replace_input(node, from, to) */
  bool to_was_input;   /* ... and `to` was an input of node already before it */
  OxNodeId node;
  OxNodeId from, to;   /* the rewire, when `replace` */
  OxNodeId prev;       /* ERASE/MOVE: predecessor before the edit */
  OxNodeId now_prev;   /* ADD/MOVE: predecessor right after the edit (0 = head) */
  OxValue old_args, old_kwargs;
  const char *old_name;
  OxMeta old_meta;
  uint32_t old_n;
  OxNodeId *old_ids;   /* in the graph's txn_scratch arena: valid until the next txn_begin */
} OxEdit;

enum { OX_GRAPH_KEYSLOTS = 12 };

/* A node's neighbours in program order (0 at the ends). Kept beside the nodes rather than in
 * them: a walk over the order reads 8 bytes per node, and the next id is known before the
 * node's own cache line arrives (a 100k-node walk was a chain of cache misses). */
typedef struct OxLink {
  OxNodeId prev, next;
} OxLink;

typedef struct OxGraph {
  OxNode *nodes;          /* nodes[0] unused; nodes[1..n_nodes-1] */
  OxLink *link;           /* program order, indexed like nodes (cap_nodes entries) */
  uint32_t n_nodes, cap_nodes;
  OxNodeId head, tail;    /* first/last live-or-erased node in order */
  uint32_t n_live;
  OxArena arena;
  OxStrTab *strings;
  uint32_t *name_ids;     /* live name -> id, indexed by the name's id in strings (ox_strtab_id):
                             no hashing, and names made one after another sit side by side */
  uint32_t cap_name_ids;
  uint32_t strings_tag;   /* ox_strtab_tag(strings) */
  OxNameMap *foreign_names; /* names not interned in strings (none expected), or NULL */
  const char *name;       /* graph title ("graph", "lowered graph 1", "__compiled_fn_3"), interned */
  uint32_t src_line;      /* line of the header in the dump, 0 if none */
  struct OxGraph **subgraphs; /* nested graphs (e.g. executorch "lowered graph():"), owned */
  uint32_t n_subgraphs;
  const char *sub_owner;  /* for a subgraph: the name of the node it belongs to, interned */
  bool order_dirty;       /* positions need ox_graph_renumber */
  /* private scratch */
  OxNameMap *name_counters; /* base name -> next numeric suffix, keeps unique naming O(1) */
  uint32_t *mark;         /* per-node epoch marks for dedupe/visited sets */
  uint32_t mark_cap, epoch;
  /* transaction log (ox_graph_txn_*) */
  OxEdit *txn;
  uint32_t n_txn, cap_txn;
  bool txn_active, txn_replaying;
  uint32_t txn_serial;    /* current transaction number */
  uint32_t *txn_mark;     /* per node: serial of the txn that snapshotted its users */
  uint32_t txn_mark_cap;
  uint32_t *txn_args_mark; /* per node: serial of the txn holding a snapshot of its current trees */
  uint32_t txn_args_mark_cap;
  /* value pools (a trace's pool graph holds values, no nodes): node values there are references
   * to node names of some other graph, ref_names[id] (1-based; names map name -> id) */
  const char **ref_names;
  uint32_t n_refs, cap_refs;
  /* shape inference's results (ox_shape_infer_node): valid until its next call on this graph;
   * callers copy them (ox_graph_set_meta*) or compare and drop them, so they are not garbage
   * in the graph's arena (a 100k-node optimization infers ~200k metas) */
  OxArena shape_scratch;
  /* the transaction log's copies of trees rewired in place (ox_graph_replace_input): garbage
   * once the log is gone, so emptied at the next ox_graph_txn_begin (a rollback copies what it
   * restores into the graph's arena) */
  OxArena txn_scratch;
  /* order labels (ox_graph_order_labels): olab[id] strictly increases along the live order;
   * maintained on every link once olab_on (set by the first request or a stable toposort) */
  uint64_t *olab;
  uint32_t olab_cap;
  bool olab_on;
  /* topo_known: the live order is known to be topological (see ox_graph_order_known_topological);
   * txn_topo_known: its value when the open transaction began (rollback restores it) */
  bool topo_known, txn_topo_known;
  /* tensor-meta sharing table (ox_graph_set_meta / ox_graph_meta_share); private */
  struct OxMetaTab *metatab;
  /* op index (ox_op_index in ox_ops.h): 2 bytes per node that scans over every node read instead
   * of the 200-byte nodes. NULL until first asked; entries at or past cap_opix, and entries of
   * nodes whose kind, target, kwargs or liveness changed, are OX_OPIX_STALE (recomputed when read) */
  uint16_t *opix;
  uint32_t cap_opix;
  /* dense scratch sets and maps keyed by small integers (node ids), ox_graph_keyslot_*: a step's
   * bookkeeping reads these instead of hashing ids */
  struct OxKeySlot {
    uint16_t *gen; /* gen[k] == epoch: k is in the set (two bytes per key: a slot of a 100k-node
                    * graph is 256 KB; every 65535th clear zeroes it, and a 100k-node
                    * optimization clears ~4M times: one byte would zero 15k times) */
    uint32_t *val; /* its value (maps; allocated on first use) */
    uint32_t cap;
    uint16_t epoch;
    bool busy;
  } keyslots[OX_GRAPH_KEYSLOTS];
} OxGraph;

/* Takes a free key slot able to hold keys below `keys` (-1 when all OX_GRAPH_KEYSLOTS are in
 * use: the caller falls back to something else), empty. Slots keep their arrays for the graph's
 * life, so a set costs no allocation after the first of its size. */
int ox_graph_keyslot_acquire(OxGraph *g, uint32_t keys);
/* Empties slot k (O(1): a new epoch). */
void ox_graph_keyslot_clear(OxGraph *g, int k);
/* Grows slot k to hold keys below `keys`, keeping its contents; allocates its values. */
void ox_graph_keyslot_grow(OxGraph *g, int k, uint32_t keys, bool values);
void ox_graph_keyslot_release(OxGraph *g, int k);

enum { OX_OPIX_STALE = 0xFFFE };

/* Marks node id's op index entry for recomputation. The graph's own mutators call it; code that
 * writes a node's op, target, module_type or kwargs directly must call it too. */
static inline void ox_graph_opix_stale(OxGraph *g, uint32_t id) {
  if (id < g->cap_opix) g->opix[id] = OX_OPIX_STALE;
}

OxGraph *ox_graph_new(void);
/* A new empty graph whose string table is other's (interned strings are the same pointers in
 * both; the table lives until both graphs are freed). Use both from one thread at a time. */
OxGraph *ox_graph_new_sharing_strings(OxGraph *other);
void ox_graph_free(OxGraph *g);
OxGraph *ox_graph_clone(const OxGraph *g); /* deep copy: same ids (tombstones kept), names, order, meta */
/* Like ox_graph_clone, for copies that are only changed through the graph's mutators (the
 * debugger's working graphs): tensor metas are the clone's shared copies (see
 * ox_graph_meta_intern; never written through) and erased ids stay as bare tombstones (name, op
 * and target only). Same ids, names, order and live content; a fraction of the memory.
 * strings: NULL (own string table) or a graph whose table the clone shares (see
 * ox_graph_new_sharing_strings), e.g. the pool of the trace that will be replayed on it, so that
 * replaying looks names up without hashing them (ox_graph_shares_strings). */
OxGraph *ox_graph_clone_lean(const OxGraph *g, OxGraph *strings);
static inline bool ox_graph_shares_strings(const OxGraph *a, const OxGraph *b) { return a->strings == b->strings; }

const char *ox_graph_intern(OxGraph *g, const char *s);
const char *ox_graph_intern_n(OxGraph *g, const char *s, size_t n);
void *ox_graph_alloc(OxGraph *g, size_t size); /* arena memory freed with the graph */

/* The node before / after id in program order (0: none). */
static inline OxNodeId ox_node_prev(const OxGraph *g, OxNodeId id) { return g->link[id].prev; }
static inline OxNodeId ox_node_next(const OxGraph *g, OxNodeId id) { return g->link[id].next; }

static inline OxNode *ox_graph_node(const OxGraph *g, OxNodeId id) {
  return (id && id < g->n_nodes) ? &g->nodes[id] : (OxNode *)0;
}

/* Creates a node at the end of the order (or before/after an anchor). name may be NULL
 * or taken: a unique name is derived (name, name_1, name_2 ...; from the target when
 * NULL). args must be a TUPLE (or NONE for empty), kwargs a DICT (or NONE). Users of
 * referenced nodes are updated. Returns the new id. */
OxNodeId ox_graph_add_node(OxGraph *g, OxOp op, const char *name, const char *target,
                           OxValue args, OxValue kwargs);
OxNodeId ox_graph_insert_before(OxGraph *g, OxNodeId anchor, OxOp op, const char *name,
                                const char *target, OxValue args, OxValue kwargs);
OxNodeId ox_graph_insert_after(OxGraph *g, OxNodeId anchor, OxOp op, const char *name,
                               const char *target, OxValue args, OxValue kwargs);
/* ox_graph_add_node for a loader whose name and target are already interned in g (strings
 * ox_graph_intern returned) and whose name is non-empty: the same node, one string-table probe
 * less per string. */
OxNodeId ox_graph_add_node_interned(OxGraph *g, OxOp op, const char *name, const char *target, OxValue args,
                                    OxValue kwargs);
void ox_graph_move_before(OxGraph *g, OxNodeId n, OxNodeId anchor);
void ox_graph_move_after(OxGraph *g, OxNodeId n, OxNodeId anchor);

/* Value builders (arena-backed). */
OxValue ox_graph_value_str(OxGraph *g, OxValueKind kind, const char *s); /* STR, SYM, DEVICE, ENUM, RAW */
OxValue ox_graph_value_seq(OxGraph *g, OxValueKind kind, const OxValue *items, uint32_t n); /* LIST, TUPLE, SLICE */
/* A key given twice keeps its first place and its last value (a Python dict literal's rule). */
OxValue ox_graph_value_dict(OxGraph *g, const char *const *keys, const OxValue *items, uint32_t n);
OxValue ox_graph_value_copy(OxGraph *g, const OxValue *v); /* deep copy into g's arena */
/* Rewrites v's node references in place through map (n entries: id -> new id; 0 = none), as
 * after copying a value into another graph. False at a reference map does not cover (the
 * references before it are already rewritten). */
bool ox_value_remap_nodes(OxValue *v, const OxNodeId *map, uint32_t n);

/* Mutation */
void ox_graph_set_args(OxGraph *g, OxNodeId n, OxValue args);
void ox_graph_set_kwargs(OxGraph *g, OxNodeId n, OxValue kwargs);
/* Replace every use of old by new in all users' args/kwargs (not in new itself). Returns count of users changed. */
uint32_t ox_graph_replace_all_uses(OxGraph *g, OxNodeId old_id, OxNodeId new_id);
/* In one user: replace references to old by new (both live nodes; new_id 0 is a programming error). */
void ox_graph_replace_input(OxGraph *g, OxNodeId user, OxNodeId old_id, OxNodeId new_id);
/* Erase a node with no users (returns false and does nothing if it still has users). */
bool ox_graph_erase(OxGraph *g, OxNodeId n);
bool ox_graph_rename(OxGraph *g, OxNodeId n, const char *name); /* false if name is taken */
void ox_graph_set_meta(OxGraph *g, OxNodeId n, const OxMeta *m); /* deep-copies m into the arena */
/* Like ox_graph_set_meta, but the node points at the graph's SHARED copy of equal content
 * (ox_graph_meta_intern) instead of a private one: for callers that never write through
 * n->meta.t (the trace pool, loaders). */
void ox_graph_set_meta_shared(OxGraph *g, OxNodeId n, const OxMeta *m);
/* The graph's one copy of the tensor metas equal to t[0..n) (dtype, shape, strides, device,
 * symbols by content), copied into the arena on first use. SHARED AND READ-ONLY: a node whose
 * meta.t came from here must not be written through; change it with ox_graph_set_meta (what
 * every pass does), which installs a new array. The fx-text loader stores each distinct
 * annotation once this way. Returns NULL when n == 0. */
OxTensorMeta *ox_graph_meta_intern(OxGraph *g, const OxTensorMeta *t, uint32_t n);
void ox_graph_add_provenance(OxGraph *g, OxNodeId n, OxNodeId from);
/* Replaces n's provenance by ids[0..count) (copied; one logged edit however long the list). */
void ox_graph_set_provenance(OxGraph *g, OxNodeId n, const OxNodeId *ids, uint32_t count);
/* Points node id's provenance at ids without copying: ids must be an array in g's arena that is
 * never written again (provenance arrays are copy-on-write, so several nodes may share one). */
/* Value pools: the reference id standing for node name `name` (created on first use). A pool
 * has no nodes; its node values print as the names they reference (ox_graph_ref_name). */
OxNodeId ox_graph_name_ref(OxGraph *g, const char *name);
/* The same for a name already interned in g's string table (no lookup by text). */
OxNodeId ox_graph_name_ref_interned(OxGraph *g, const char *interned);
/* The name a node value of g denotes: the node's name, or in a value pool the referenced name;
 * NULL for an unknown id. */
const char *ox_graph_ref_name(const OxGraph *g, OxNodeId id);
/* m copied into g as shared, read-only data (tensor metas through ox_graph_meta_intern). */
OxMeta ox_graph_meta_share(OxGraph *g, const OxMeta *m);
void ox_graph_share_provenance(OxGraph *g, OxNodeId id, const OxNodeId *ids, uint32_t count);
void ox_graph_add_subgraph(OxGraph *g, OxGraph *sub); /* takes ownership */

/* Transactions: every mutation between begin and commit/rollback is logged; rollback undoes
 * them exactly (order, names, args, meta, users arrays in their original order); nodes created
 * inside a rolled-back transaction remain as tombstones. Not nestable. */
void ox_graph_txn_begin(OxGraph *g);
void ox_graph_txn_commit(OxGraph *g);
void ox_graph_txn_rollback(OxGraph *g);
const OxEdit *ox_graph_txn_edits(const OxGraph *g, uint32_t *n);

/* Queries */
OxNodeId ox_graph_find(const OxGraph *g, const char *name);
/* ox_graph_find for a name already interned in g's string table (the same pointer: a string of
 * g, or of a graph sharing its table): no hashing of the string. Any other pointer finds 0. */
OxNodeId ox_graph_find_interned(const OxGraph *g, const char *name);   /* live node by name, 0 if none */
OxNodeId ox_graph_output(const OxGraph *g);                   /* the output node, 0 if none */
/* Live nodes with this op (and target, if non-NULL) in order; returns count, fills up to max ids. */
uint32_t ox_graph_find_nodes(const OxGraph *g, OxOp op, const char *target, OxNodeId *out, uint32_t max);
/* Unique input nodes of n (args then kwargs, first occurrence order). Returns count; fills up to max. */
uint32_t ox_graph_inputs(const OxGraph *g, OxNodeId n, OxNodeId *out, uint32_t max);
/* The same without the graph's mark scratch, so several threads may call it on one immutable
 * graph at once (layout workers on the debugger's union graph). Dedupes by scanning what it
 * collected, so it costs O(k^2) for k inputs; returns min(count, max): inputs past max are
 * dropped, not counted. */
uint32_t ox_graph_inputs_r(const OxGraph *g, OxNodeId n, OxNodeId *out, uint32_t max);
/* Whether node n references node input in its args or kwargs. */
bool ox_graph_has_input(const OxGraph *g, OxNodeId n, OxNodeId input);
void ox_graph_renumber(OxGraph *g); /* recompute pos of live nodes; clears order_dirty */
bool ox_graph_before(OxGraph *g, OxNodeId a, OxNodeId b); /* a precedes b in order */

/* Order labels: an array indexed by node id whose values strictly increase along the live
 * order, so "a precedes b" is labels[a] < labels[b] in O(1) without renumbering. Once requested
 * (or after a stable toposort) they are maintained on every insertion and move: a new node takes
 * a label between its neighbours, a crowded spot relabels a small window around it. The pointer
 * is valid until the next node creation; values of erased nodes are meaningless. */
const uint64_t *ox_graph_order_labels(OxGraph *g);

/* True when the live order is KNOWN to be topological (every use comes after its definition).
 * Set by a successful ox_graph_stable_toposort (which then returns at once without work) and by
 * ox_graph_mark_order_topological; kept across a mutation only when the mutation provably keeps
 * it (with order labels on, the edges a mutation adds or moves are compared; otherwise it is
 * cleared). Erasing never clears it. False is "unknown", not "cyclic". A rollback restores the
 * value the transaction began with (ox_graph_txn_began_topological). */
bool ox_graph_order_known_topological(const OxGraph *g);
bool ox_graph_txn_began_topological(const OxGraph *g);
/* For a checker that has proved the current order topological (ox_check.c). */
void ox_graph_mark_order_topological(OxGraph *g);

/* Reserve room for n nodes in all (ids 1..n), so a loader that knows its node count allocates
 * the node array once. Never shrinks; does not change any node. */
void ox_graph_reserve(OxGraph *g, uint32_t n);
/* Room in the name index for the names of the string table and n more (a loader that will intern
 * n new names); never shrinks. */
void ox_graph_reserve_names(OxGraph *g, size_t n);

#define OX_GRAPH_FOREACH(g, var)                                                     \
  for (OxNodeId var = (g)->head; var; var = (g)->link[var].next)                     \
    if (!(g)->nodes[var].erased)

/* Re-establish a topological order, moving as few nodes as possible (spec 1.5).
 * Returns false (order unchanged) if the graph has a cycle. */
bool ox_graph_stable_toposort(OxGraph *g);

/* Structural verifier: acyclic, defs before uses, users consistent, getitem well-formed,
 * exactly one output, names unique. Appends errors to diags (node-located); returns the
 * number of errors. require_output=false accepts fragments with no output node. */
int ox_graph_verify(OxGraph *g, bool require_output, OxDiagList *diags);

/* Meta helpers */
OxTensorMeta *ox_graph_tensor_meta_new(OxGraph *g, OxDType dt, int32_t rank); /* shape zeroed */
const OxTensorMeta *ox_node_tensor_meta(const OxNode *n); /* t[0] for TENSOR, NULL otherwise */
/* Formats "f32[8, 16][16, 1]cuda:0" (without quotes) into buf; returns length (snprintf-like). */
int ox_tensor_meta_format(const OxTensorMeta *t, bool with_stride, bool with_device, char *buf, size_t cap);

/* More elements than any tensor can hold (2^50, a petabyte of bytes): a size past it in a dump is
 * damage, not a model. Shape arithmetic on sizes within it cannot overflow int64 in a product of
 * two, and ox_meta_absurd keeps every loaded tensor's element count (and byte count) below it. */
#define OX_NUMEL_MAX ((int64_t)1 << 50)

/* Whether a tensor meta read from a dump is absurd: a negative size or stride, a symbolic size that
 * is a number in disguise (1e23, 99999999999999999999: too large to read as an integer), or more
 * than OX_NUMEL_MAX elements (the product of its known sizes, computed without overflow). Says
 * why in buf ("size -5 is negative") and returns true; loaders then warn and drop the meta. */
bool ox_meta_absurd(const OxTensorMeta *t, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
