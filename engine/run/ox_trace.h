/* ox_trace.h - the optimization trace: one record per applied step and per rejected attempt.
 *
 * The trace owns its strings (its own arena + string table), so it outlives the graphs it
 * describes. Node references are NAMES (unique among live nodes at the moment of the step),
 * which makes records readable and replayable against a freshly loaded input graph.
 *
 * Rejections are recorded cheaply as a reason code plus up to OX_REASON_MAX_ARGS arguments,
 * formatted only when shown (ox_reason_format). Applied steps carry the edit script that
 * rebuilds the graph after the step from the graph before it (replay) and the results of the
 * semantic checks run on it.
 */
#ifndef OX_TRACE_H
#define OX_TRACE_H

#include "ir/ox_buf.h"
#include "ir/ox_graph.h"
#include "run/ox_cost.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ reasons */

/* Reason codes with their message templates; %0..%5 are replaced by the arguments.
 * X(code, "template") — keep codes append-only (they are saved in trace files by name). */
#define OX_REASON_LIST(X)                                                                       \
  X(SET_TOO_SMALL, "set of %0 < min_fuse_set_size %1")                                          \
  X(SET_CAPPED, "set capped at max_fuse_set_size %0; %1 candidates deferred to a later round") \
  X(ANCESTOR, "%0 is an ancestor of %1 (%2)")                                                   \
  X(SHAPE_DIFFERS, "input shapes %0 and %1 differ")                                             \
  X(DTYPE_DIFFERS, "dtypes %0 and %1 differ")                                                   \
  X(META_MISSING, "meta missing on %0")                                                         \
  X(SYMBOLIC, "symbolic size %1 on %0")                                                         \
  X(RANK, "%0 has rank %1, expected %2")                                                        \
  X(MUTATED, "%0 is mutated by %1")                                                             \
  X(DUP_GETITEM, "split %0 has duplicate getitem index %1")                                     \
  X(USER_NOT_GETITEM, "user %1 of split %0 is not a getitem")                                   \
  X(NEG_INDEX, "getitem %0 has a negative index %1")                                            \
  X(DIM_MISMATCH, "%0 dim %1 != %2 dim %3")                                                     \
  X(NOT_CONSECUTIVE, "indices %0 are not consecutive and increasing")                           \
  X(NOT_ALL_USED, "not every output of %0 is used (%1 of %2)")                                  \
  X(MULTIPLE_USERS, "%0 has %1 users, expected %2")                                             \
  X(NO_MATCH, "%0 does not match %1: %2")                                                       \
  X(TARGET_MISMATCH, "%0 is %1, pattern wants %2")                                              \
  X(ARITY, "%0 has %1 positional arguments, pattern wants %2")                                  \
  X(CONST_MISMATCH, "argument %1 of %0 is %2, pattern wants %3")                                \
  X(CAPTURE_CONFLICT, "capture %0 bound to %1 and %2")                                          \
  X(GUARD_FAILED, "guard %0 failed: %1")                                                        \
  X(NOTHING_TO_DO, "%0: nothing to simplify (%1)")                                              \
  X(SECTIONS_UNEQUAL, "sections %0 of %1 are not equal")                                        \
  X(OVERLAP, "ranges %0 overlap")                                                               \
  X(CHECK_FAILED, "check %0 failed: %1")                                                        \
  X(OPTION, "%0 is disabled by option %1")                                                      \
  X(OTHER, "%0")                                                                                \
  X(NOT_NORMALIZED, "%0 is not in normalized form: %1")                                         \
  X(MUTATION_BARRIER, "match spans a mutation barrier (%0 mutates between %1 and %2)")          \
  X(PATTERN_DIFFERS, "pattern %0 already bound to %1, now %2")                                 \
  X(BUDGET, "%0 budget: %1")                                                                     \
  X(PAYOFF, "estimated %0: below the payoff threshold (%1)")

typedef enum OxReasonCode {
#define OX_REASON_ENUM(code, tmpl) OX_REASON_##code,
  OX_REASON_LIST(OX_REASON_ENUM)
#undef OX_REASON_ENUM
  OX_REASON_COUNT
} OxReasonCode;

#define OX_REASON_MAX_ARGS 6

typedef struct OxReason {
  uint16_t code;                          /* OxReasonCode */
  uint8_t n_args;
  const char *args[OX_REASON_MAX_ARGS];   /* interned in the trace */
  const char *nodes[OX_REASON_MAX_ARGS];  /* node names the reason mentions (links in the UI), or NULL */
} OxReason;

const char *ox_reason_code_name(OxReasonCode c);   /* "SET_TOO_SMALL" */
const char *ox_reason_template(OxReasonCode c);
bool ox_reason_code_from_name(const char *s, OxReasonCode *out);
/* Formats a reason into a malloc'ed string. */
char *ox_reason_format(const OxReason *r);

/* ------------------------------------------------------------------ checks */

typedef enum OxCheckKind { OX_CHECK_STRUCTURE = 0, OX_CHECK_SHAPE, OX_CHECK_NUMERIC, OX_CHECK_KINDS } OxCheckKind;
typedef enum OxCheckStatus {
  OX_CHECK_NOT_RUN = 0, /* not requested (--checks) */
  OX_CHECK_PASSED,
  OX_CHECK_FAILED,
  OX_CHECK_SKIPPED      /* could not run: detail says why; never counts as passed */
} OxCheckStatus;

typedef struct OxCheckResult {
  uint8_t status;       /* OxCheckStatus */
  const char *detail;   /* evidence / skip reason, interned in the trace */
  double max_abs, max_rel, tol; /* numeric check */
  uint32_t trials;
  const char *checked_shape; /* "checked at [8, 16], dump has [512, 16]" when reduced */
  double seconds;
} OxCheckResult;

const char *ox_check_kind_name(OxCheckKind k);     /* "structure", "shape", "numeric" */
const char *ox_check_status_name(OxCheckStatus s); /* "not-run", "passed", "failed", "skipped" */

/* ------------------------------------------------------------------ edits (replay) */

/* One edit of a step's script, applied in order to the graph before the step. */
typedef enum OxTraceEditKind {
  OX_TEDIT_ADD = 0,  /* create node: name, op, target, args, kwargs, meta, after (insert after that node; NULL = at head) */
  OX_TEDIT_ERASE,    /* erase node name */
  OX_TEDIT_ARGS,     /* set args/kwargs of node name */
  OX_TEDIT_MOVE,     /* move node name after `after` (NULL = head) */
  OX_TEDIT_META,     /* set meta of node name */
  OX_TEDIT_RENAME,   /* rename node name to new_name */
  OX_TEDIT_REPLACE   /* in node name, every reference to node `from` becomes node `to`
                        (ox_graph_replace_input): a rewire without the node's whole args */
} OxTraceEditKind;

/* What an ADD, ARGS or META edit carries besides names. The other kinds (erase, move,
 * replace_input, rename: two thirds of a run's edits) carry none, so an edit is 64 bytes
 * instead of 168: at 100k nodes a trace has ~230k edits, and the debugger keeps their inverse
 * too. Args/kwargs/meta live in the trace's pool graph; node references in them are ids of
 * placeholder nodes of the pool named like the node they stand for (ox_trace_name_ref), so the
 * ordinary value writers print them as node names. */
typedef struct OxTraceEditData {
  OxValue args, kwargs;  /* ADD, ARGS */
  OxMeta meta;           /* ADD (with has_meta), META */
} OxTraceEditData;

typedef struct OxTraceEdit {
  uint8_t kind;
  uint8_t op;            /* OxOp, ADD */
  bool has_meta;         /* ADD: data->meta is set (META edits always have it) */
  uint32_t src_line;     /* read from a file: the line its JSON object starts on; else 0 */
  const char *name;
  const char *after;
  const char *new_name;
  const char *from, *to; /* REPLACE */
  const char *target;    /* ADD */
  OxTraceEditData *data; /* ADD, ARGS, META (in the trace's pool); NULL for the other kinds */
} OxTraceEdit;

/* e's data, allocated (zeroed) in the pool of t on first use. */
struct OxTrace;
OxTraceEditData *ox_trace_edit_data(struct OxTrace *t, OxTraceEdit *e);

/* ------------------------------------------------------------------ steps */

typedef enum OxStepKind {
  OX_STEP_APPLIED = 0,
  OX_STEP_REJECTED,      /* a guard or match failed before any rewrite */
  OX_STEP_CHECK_FAILED   /* rewritten, a semantic check failed, rolled back (kept with --keep-failed) */
} OxStepKind;

typedef struct OxStep {
  uint32_t seq;            /* 0-based position in the trace */
  uint8_t kind;            /* OxStepKind */
  uint32_t applied_index;  /* for APPLIED (and kept CHECK_FAILED): 1-based count of graph-changing steps, else 0 */
  const char *phase;       /* "pre" | "post" */
  const char *pass;        /* "batch_linear", "split_cat_pass", rule name for user rules */
  const char *rule;        /* handler / rule name within the pass ("merge_split_squeeze"), or NULL */
  const char *rule_file;   /* user rules: file and line */
  uint32_t rule_line;
  const char *anchor;      /* anchor / root node name */
  const char *key;         /* batch fusion grouping key, formatted */
  const char **matched;    uint32_t n_matched;   /* matched / candidate nodes */
  const char **removed;    uint32_t n_removed;
  const char **added;      uint32_t n_added;
  const char **prov_old;   /* provenance pairs: prov_new[i] came from prov_old[i] */
  const char **prov_new;   uint32_t n_prov;
  const char **scaffold;   uint32_t n_scaffold;  /* added nodes that came from every matched node */
  OxReason reason;         /* REJECTED / CHECK_FAILED: why */
  OxCheckResult checks[OX_CHECK_KINDS];
  OxTraceEdit *edits;      uint32_t n_edits;     /* APPLIED: script from the graph before to after */
  OxCostPair cost;         /* estimated cost of the removed (before) and added (after) nodes:
                              applied steps and payoff rejections; set = false otherwise */
  const char *options;     /* options in force, compact JSON text */
  const char **counter_names; int64_t *counter_deltas; uint32_t n_counters;
  double seconds;
  uint32_t src_line;       /* read from a trace file: the line its JSON object starts on (replay errors
                              are located there); 0 for a step recorded in this process */
} OxStep;

/* What one pass of the pipeline cost and did (the repetitions of a pipeline entry, and a pass
 * run again by a later optimize call into the same trace, add up in one entry): the profile
 * `optimus optimize --profile` prints and the trace's "passes" table holds. */
typedef struct OxPassStat {
  const char *pass;        /* interned in the pool */
  const char *phase;       /* "pre" | "post" (static) */
  double seconds;          /* wall time of its runs */
  uint32_t runs;           /* times it ran (a pipeline entry's "counter" repeats it) */
  uint32_t applied, rejected, check_failed; /* steps it recorded, by kind */
} OxPassStat;

typedef struct OxTrace {
  OxGraph *pool;           /* owns the trace's strings and value trees (never holds nodes) */
  OxStep *steps;
  uint32_t n_steps, cap_steps;
  uint32_t n_applied, n_rejected, n_check_failed;
  uint32_t n_graph_steps;  /* steps that changed the graph (applied + kept check failures) */
  const char *input_file;  /* as given */
  const char *input_hash;  /* hash of the input graph (structure), to refuse replay on another graph */
  const char *config;      /* the configuration in force, JSON text */
  const char *checks;      /* "structure,shape,numeric" */
  const char **counter_names; int64_t *counter_values; uint32_t n_counters; /* totals */
  OxPassStat *pass_stats; uint32_t n_pass_stats; /* per pass, in the order they first ran (pool arena) */
  OxCostPair cost;         /* estimated cost of the whole graph before and after the run */
  double seconds;
  /* Set before recording: applied steps are recorded without their edit scripts (a run whose
   * trace is neither written nor replayed: `optimus optimize` without --trace) and without their
   * estimated cost (unless the payoff guard needs it: a PAYOFF rejection keeps its cost), and a
   * pattern rejection's arguments that the matcher would format (value lists, sub-pattern texts)
   * are left empty. Everything else (names, reason codes, checks, counters, the whole graph's
   * cost) is recorded as usual. */
  bool no_edits;
  /* Set before recording: rejected attempts are counted (n_rejected) but not kept; adding one
   * returns a scratch step that the next rejection overwrites (at 100k nodes: 15k records,
   * ~19 MB a run without --trace would fill and never read). n_steps counts kept steps only. */
  bool no_rejections;
  OxStep *scratch;         /* private: the scratch step of no_rejections */
  /* A writer that encodes the steps while the run goes on (ox_trace_live_start): told when the
   * steps recorded so far are final, stopped when the trace is freed. Not set: nothing to tell. */
  struct OxTraceLive *live;
  void (*live_final)(struct OxTraceLive *live, const struct OxTrace *t);
  void (*live_stop)(struct OxTraceLive *live);
  struct OxTraceStrCache *str_cache; /* private: strings of recording graphs -> pool strings */
  struct OxTraceEditMem *edit_mem;   /* private: ox_trace_recycle_edits */
  uint32_t live_encoded;   /* steps the live writer has encoded so far (read and written atomically) */
} OxTrace;

OxTrace *ox_trace_new(void);
/* A trace for recording the optimization of g: its pool shares g's string table, so recording a
 * node's name costs nothing (with ox_trace_new every name is interned again, a hash lookup that
 * misses the caches on large graphs). g and the trace: one thread at a time; either may be
 * freed first. */
OxTrace *ox_trace_new_for(OxGraph *g);
void ox_trace_free(OxTrace *t);
const char *ox_trace_intern(OxTrace *t, const char *s);
OxStep *ox_trace_add_step(OxTrace *t, OxStepKind kind); /* zeroed, seq set; pointers stable until the next add
                                                         (a rejection of a no_rejections trace: the scratch step) */
/* The steps recorded so far are final: nothing changes them again (the driver says so after
 * each pass). A live writer (ox_trace_live_start) takes them to encode on its thread. */
void ox_trace_steps_final(OxTrace *t);
/* Adds runs of a pass (their time and steps) to its entry of pass_stats (a new entry, last, for a pass not seen yet;
 * phase NULL: "pre"). */
void ox_trace_pass_stat_add(OxTrace *t, const char *pass, const char *phase, double seconds, uint32_t runs,
                            uint32_t applied, uint32_t rejected, uint32_t check_failed);
/* Room for n steps in all (a reader that knows how many are coming); never shrinks. */
void ox_trace_reserve_steps(OxTrace *t, uint32_t n);

/* The pool placeholder standing for node `name` (created on first use). */
OxNodeId ox_trace_name_ref(OxTrace *t, const char *name);
/* The same two for a string s interned in graph g (a node name, a target): answered from a
 * small cache keyed by (g's string table, s) before hashing s into the pool's big table. */
const char *ox_trace_intern_from(OxTrace *t, const OxGraph *g, const char *s);
OxNodeId ox_trace_name_ref_from(OxTrace *t, const OxGraph *g, const char *s);
/* Copies a value of graph g into the trace pool, node ids becoming name refs. */
OxValue ox_trace_value_from_graph(OxTrace *t, const OxGraph *g, const OxValue *v);
/* Copies a pool value into graph g, name refs resolved to live nodes of g; returns false and
 * fills err if a name is not live in g. */
bool ox_trace_value_to_graph(const OxTrace *t, OxGraph *g, const OxValue *v, OxValue *out, char *err,
                             size_t errcap);

/* Sets the graph provenance of a step's new nodes: pair i says pn[i] came from po[i] (only pairs
 * whose new node is in `added` count; po[i] == 0 is skipped); each scaffold node came from every
 * source. A node's provenance becomes the deduplicated union of its sources' provenance (or their
 * ids when they have none). Used when a step commits and when a trace is replayed. */
void ox_provenance_apply(OxGraph *g, const OxNodeId *po, const OxNodeId *pn, uint32_t n_pairs,
                         const OxNodeId *added, uint32_t n_added, const OxNodeId *scaffold, uint32_t n_scaffold,
                         const OxNodeId *sources, uint32_t n_sources);

/* Trace JSON version written by default; the reader accepts 1..OX_TRACE_VERSION. Version 2
 * added the replace_input edit and the step's "scaffolding" list (version 1 spelled scaffolding
 * out as provenance pairs and every rewire as an args edit; both still read and replay).
 * Version 3 is the compact encoding: node names and edit metas in top-level tables ("names",
 * "metas") referenced by index, edits as arrays, no formatted reason text, one step a line.
 * Version 4 writes runs of edits as one item and reason arguments in a "strings" table; version 5
 * each step's phase, pass and rule in a "rules" table, check details in "strings", 3 or more
 * consecutive indices of a list as a range [first, last], a split's getitems as one item and
 * times to 3 digits (docs/trace-format.md). */
#define OX_TRACE_VERSION 5

/* JSON (docs/trace-format.md). Writes with OxBuf; reading validates and returns located errors
 * (text NUL-terminated at len, as for ox_load_buffer). ox_trace_write_json writes OX_TRACE_VERSION;
 * ox_trace_write_json_version writes version 2, 3, 4 or 5 (for older tools). */
void ox_trace_write_json(const OxTrace *t, OxBuf *out);
void ox_trace_write_json_version(const OxTrace *t, int version, OxBuf *out);
int ox_trace_read_json(const char *text, size_t len, const char *file, OxTrace **out, OxDiagList *d);
/* For tests: the version 3 steps read so far in this process by the reader's fast path (our own
 * tokenizer, no json-c; ox_json_set_streaming(false) or OX_JSON_NO_STREAM turns it off, and every
 * step is then read by json-c with the same result). */
unsigned long ox_trace_fast_steps(void);
/* Writes the trace (version 0 = OX_TRACE_VERSION) to path atomically; a path ending in ".gz" gets
 * it gzipped (ox_trace_read_json reads either). false with a message in err. */
bool ox_trace_write_file(const OxTrace *t, int version, const char *path, char *err, size_t errcap);
/* Starts encoding t's steps (version 3) on a thread of their own while they are recorded, for a
 * trace to be written to path: each ox_trace_steps_final hands the new final steps over, and
 * ox_trace_write_file (version 3) then only writes the header, the encoded steps and the tables;
 * the text is the same, byte for byte, as without it. The encoded steps wait in an unnamed
 * scratch file beside path (in memory where none can be made), a piece at a time. A path ending
 * in ".gz": the steps are compressed on that thread too, and the file is three gzip members
 * (header, steps, tables) of the same text. Recording stays on the caller's thread. Any other
 * write (version 2, the other form, ox_trace_write_json) encodes everything then, as without
 * the writer; ox_trace_free stops it. false (and t unchanged) when no thread could be started. */
bool ox_trace_live_start(OxTrace *t, const char *path);
/* For a run whose trace is written once, by its live writer (ox_trace_live_start must have
 * started), in that writer's version and form, and whose steps' edit scripts nothing else reads:
 * the memory of the scripts (and of the steps' node lists: matched, added, removed, provenance,
 * scaffolding) the writer has encoded is used again for later steps' (at 100k nodes they are
 * ~40 MB of fresh memory otherwise, the larger part of what a trace costs the run). Once a block
 * was used again the earlier steps' edits and lists are gone: ox_trace_write_file
 * then writes only through the live writer and refuses any other write (another version or
 * form, or a writer whose scratch file failed) with a message; nothing else may read them.
 * false (nothing changed) without a live writer. */
bool ox_trace_recycle_edits(OxTrace *t);
/* Whether some edit script memory was used again (ox_trace_recycle_edits). */
bool ox_trace_edits_recycled(const OxTrace *t);
/* Zeroed memory for a step's edit script or node list: from the recycled blocks when
 * ox_trace_recycle_edits is on, else from the pool's arena. */
void *ox_trace_edit_alloc(OxTrace *t, size_t size);
/* For tests: the size of the recycled blocks (1 MiB). */
extern size_t ox_trace_edit_block;
/* For tests: each ox_trace_steps_final waits until the live writer has encoded the steps (at most
 * 10 s), so that what it frees is known. */
extern bool ox_trace_live_wait;
/* For tests: how many encoded bytes the live writer holds before it moves them on (1 MiB). */
extern size_t ox_trace_live_piece;

#ifdef __cplusplus
}
#endif
#endif
