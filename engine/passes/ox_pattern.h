/* ox_pattern.h - the pattern language as DATA, the one matcher that interprets it, and the
 * pattern-pass runner (spec 3.4).
 *
 * A pattern is a plain tree of OxPat nodes (PyTorch's vocabulary: CallFunction / CallMethod /
 * CallModule with exact arity or VarArgs, keyword-argument patterns and a users constraint,
 * Arg, KeywordArg, Ignored, constants, ListOf, RepeatedExpr, MultiOutputPattern, and the
 * TorchSplit well-formedness constraint). Every node carries the source location (file, line)
 * it was written at: C constructors stamp __FILE__/__LINE__ through OX_PAT_LOC, a rule-file
 * parser (issue 7) stamps its own file and line, and both build the very same trees.
 *
 * The matcher never mutates the graph. A match returns the captures, the pattern -> node
 * bindings and the matched nodes in post-order (anchor last); a failure returns which
 * sub-pattern failed on which node, a reason code with arguments (formatted only when shown),
 * and how far the match got (depth and number of sub-patterns matched), which is what the
 * debugger's "why not?" shows.
 */
#ifndef OX_PATTERN_H
#define OX_PATTERN_H

#include "ir/ox_graph.h"
#include "ops/ox_ops.h"
#include "passes/ox_pass.h"
#include "run/ox_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum OxPatKind {
  OX_PAT_CALL = 0,  /* a call node: ops/targets, args, kwargs, users */
  OX_PAT_ARG,       /* Arg(): positional capture of anything */
  OX_PAT_KWARG,     /* KeywordArg(name): named capture; the same name bound twice must agree */
  OX_PAT_IGNORED,   /* Ignored(): anything */
  OX_PAT_CONST,     /* a constant that must compare equal (ints, lists, None ...) */
  OX_PAT_LIST,      /* ListOf(elem, partial) */
  OX_PAT_REPEATED,  /* RepeatedExpr(inner) */
  OX_PAT_MULTI      /* MultiOutputPattern(outputs...): outputs[0] is the anchor */
} OxPatKind;

/* Which node kinds a CALL pattern accepts (PyTorch: CallFunction / CallMethod / CallModule). */
enum {
  OX_PAT_FUNCTION = 1u << OX_OP_CALL_FUNCTION,
  OX_PAT_METHOD = 1u << OX_OP_CALL_METHOD,
  OX_PAT_MODULE = 1u << OX_OP_CALL_MODULE,
  OX_PAT_ANY_CALL = OX_PAT_FUNCTION | OX_PAT_METHOD | OX_PAT_MODULE,
};

/* Extra well-formedness a CALL pattern demands of its node (spec 1.3 / 2.4). */
typedef enum OxPatConstraint {
  OX_PAT_C_NONE = 0,
  /* TorchSplit: a split in normalized form (pre-grad torch.split(x, [sections], dim=d>=0);
   * post-grad aten.split_with_sizes(x, [sections], d>=0)) whose users are all getitems with
   * unique non-negative int indices. */
  OX_PAT_C_SPLIT,
  /* the unbind analogue: torch.unbind(x, dim=d>=0) / aten.unbind.int with unique
   * non-negative int getitem users. */
  OX_PAT_C_UNBIND
} OxPatConstraint;

#define OX_PAT_USERS_ANY (-1) /* PyTorch's MULTIPLE */

typedef struct OxPat OxPat;
struct OxPat {
  uint8_t kind;             /* OxPatKind */
  const char *file;         /* where the pattern was written (interned in the pool) */
  uint32_t line;
  uint32_t id;              /* 1-based, unique within its pool (stable names in messages) */
  /* CALL */
  unsigned calls;           /* OX_PAT_FUNCTION | ... */
  OxOpId *ops;              /* accepted ops (any spelling the op table knows) */
  uint32_t n_ops;
  const char **targets;     /* accepted exact targets (call_function/call_method/module type) */
  uint32_t n_targets;
  const OxSpelling **target_sp; /* [3 * i + class]: the spelling targets[i] has as a call_function,
                               call_method, call_module (NULL: none), so that matching compares
                               spellings instead of strings */
  OxPat **args;             /* positional argument patterns */
  uint32_t n_args;
  const char **kw_names;    /* keyword argument patterns */
  OxPat **kw;
  uint32_t n_kw;
  bool varargs;             /* CallFunctionVarArgs: op/users only, arguments not inspected */
  int32_t users;            /* exact user count, OX_PAT_USERS_ANY; not checked at the anchor */
  uint8_t constraint;       /* OxPatConstraint */
  /* ARG / KWARG */
  const char *name;         /* KWARG capture name */
  const char *bind;         /* CALL: capture name the matched node is bound to (rule files'
                               `name @ call(...)`), unified like a KeywordArg; NULL = none */
  bool located;             /* written in a rule file: rejections it causes carry its file:line
                               as the step's rule_file/rule_line */
  /* CONST */
  OxValue value;
  /* LIST / REPEATED: elem = inner; partial for LIST */
  OxPat *elem;
  bool partial;
  /* MULTI */
  OxPat **outs;
  uint32_t n_outs;
};

/* ------------------------------------------------------------------ building patterns */

/* A pool owns patterns and their strings/values. The location set with ox_pat_pool_loc is
 * stamped on every pattern built afterwards. */
typedef struct OxPatPool OxPatPool;
OxPatPool *ox_pat_pool_new(void);
void ox_pat_pool_free(OxPatPool *p); /* NULL is a no-op */
void ox_pat_pool_loc(OxPatPool *p, const char *file, uint32_t line);
OxGraph *ox_pat_pool_values(OxPatPool *p); /* arena for constant values (never holds nodes) */
#define OX_PAT_LOC(pool) ox_pat_pool_loc((pool), __FILE__, (uint32_t)__LINE__)
/* Patterns built afterwards are `located` (rule files; built-ins are not). */
void ox_pat_pool_located(OxPatPool *p, bool on);

OxPat *ox_pat_ignored(OxPatPool *p);
OxPat *ox_pat_arg(OxPatPool *p);
OxPat *ox_pat_kwarg(OxPatPool *p, const char *name);
OxPat *ox_pat_const(OxPatPool *p, const OxValue *v); /* deep-copied */
OxPat *ox_pat_const_int(OxPatPool *p, int64_t i);
OxPat *ox_pat_list(OxPatPool *p, OxPat *elem, bool partial);
OxPat *ox_pat_repeated(OxPatPool *p, OxPat *inner);
OxPat *ox_pat_multi(OxPatPool *p, OxPat *const *outs, uint32_t n);
/* A call of one of the ops (any spelling), with n positional argument patterns; users
 * defaults to 1 (PyTorch's _users=1). calls: OX_PAT_FUNCTION ... */
OxPat *ox_pat_call(OxPatPool *p, unsigned calls, const OxOpId *ops, uint32_t n_ops, OxPat *const *args,
                   uint32_t n_args);
/* CallFunctionVarArgs / CallMethodVarArgs */
OxPat *ox_pat_call_varargs(OxPatPool *p, unsigned calls, const OxOpId *ops, uint32_t n_ops);
/* Adds an accepted exact target (matched in addition to the ops). */
void ox_pat_call_target(OxPatPool *p, OxPat *call, const char *target);
void ox_pat_call_kw(OxPatPool *p, OxPat *call, const char *name, OxPat *value);
void ox_pat_call_users(OxPat *call, int32_t users);
void ox_pat_call_constraint(OxPat *call, OxPatConstraint c);
/* Binds the node a CALL pattern matches to capture `name` (the value is the node itself;
 * same-name captures must agree). */
void ox_pat_call_bind(OxPatPool *p, OxPat *call, const char *name);

/* Helpers with PyTorch's names (spec 2.4). */
/* TorchSplit(input, sections): normalized split, users MULTIPLE, unique getitem users;
 * dim is captured as KeywordArg("dim") unless dim_pat is given. */
OxPat *ox_pat_torch_split(OxPatPool *p, OxPat *input, OxPat *sections, OxPat *dim_pat);
/* getitem(of, index) with a users constraint */
OxPat *ox_pat_getitem(OxPatPool *p, OxPat *of, OxPat *index, int32_t users);

/* ------------------------------------------------------------------ matching */

typedef struct OxPatCapture {
  const char *name;        /* KWARG name, NULL for Arg */
  const OxValue *value;    /* points into the graph's argument trees */
  const OxPat *pat;
  bool in_list;            /* bound inside a ListOf / RepeatedExpr element (bundled, not unified) */
} OxPatCapture;

typedef struct OxPatFailure {
  uint16_t code;           /* OxReasonCode */
  char args[OX_REASON_MAX_ARGS][160]; /* longer texts end in "…" at a word boundary */
  bool is_node[OX_REASON_MAX_ARGS];
  uint8_t n_args;
  /* Arguments formatted only when the failure is reported (most failures inside a match are
   * overwritten by a later one): lazy[i] 'P' = description of pattern lazy_pat[i], 'V' = the
   * value lazy_val[i] (of graph lazy_g), 'S' = the string lazy_str[i] (interned in lazy_g or
   * static: node names, targets), 'N' / 'T' = the name / target (module type for call_module)
   * of node lazy_id[i] of lazy_g (read when reported: a failed op test need not read the node),
   * 0 = args[i] holds the text. ox_pat_match returns its failure with every argument formatted. */
  uint8_t lazy[OX_REASON_MAX_ARGS];
  OxNodeId lazy_id[OX_REASON_MAX_ARGS];
  const struct OxPat *lazy_pat[OX_REASON_MAX_ARGS];
  const char *lazy_str[OX_REASON_MAX_ARGS];
  OxValue lazy_val[OX_REASON_MAX_ARGS];
  const OxGraph *lazy_g;
  char what[48];           /* PyTorch's short reason: "function_mismatch", "multiple_users" ... */
  const OxPat *pat;        /* the sub-pattern that failed */
  OxNodeId node;           /* the node it failed on (0 = a non-node value) */
  uint32_t depth;          /* nesting depth of pat below the anchor (0 = the anchor's own test) */
  uint32_t progress;       /* sub-patterns matched before the failure */
} OxPatFailure;

typedef struct OxPatMatch {
  bool ok;
  OxNodeId anchor;
  const OxPat *pattern;
  OxPatCapture *caps;      /* malloc'ed */
  uint32_t n_caps, cap_caps;
  OxNodeId *nodes;         /* matched nodes, post-order, unique, anchor last; malloc'ed */
  uint32_t n_nodes, cap_nodes;
  const OxPat **bpat;      /* pattern -> node bindings (CALL patterns), malloc'ed */
  OxNodeId *bnode;
  uint32_t n_bound, cap_bound;
  uint32_t progress;
  OxPatFailure fail;       /* when !ok */
  OxValue **owned;         /* copies of packed varargs slots that captures point at */
  uint32_t n_owned;
  /* constraints that held during this match (pattern, node): the elements of a 128-way list
   * all reach the same split, whose getitem users are then checked once, not 128 times */
  const struct OxPat *held_pat[8];
  OxNodeId held_node[8];
  uint8_t n_held;
} OxPatMatch;

/* Matches pattern p with `node` as its anchor (outermost pattern). Always fills *m (free
 * with ox_pat_match_free). Returns m->ok. */
bool ox_pat_match(const OxGraph *g, const OxPat *p, OxNodeId node, OxPatMatch *m);
void ox_pat_match_free(OxPatMatch *m);

/* Looks up a capture by KeywordArg name (the first binding), NULL if absent. */
const OxValue *ox_pat_match_kw(const OxPatMatch *m, const char *name);
/* The node a CALL sub-pattern bound (first binding), 0 if none. */
OxNodeId ox_pat_match_node(const OxPatMatch *m, const OxPat *p);
/* Whether the outermost pattern accepts node's op/target (the anchor's own test). */
bool ox_pat_anchor_accepts(const OxGraph *g, const OxPat *p, OxNodeId node);
/* The failure as a trace reason (args interned in c's trace). */
OxReason ox_pat_failure_reason(OxPassCtx *c, const OxPatFailure *f);
/* "what" + formatted message into buf (for tests and `optimus explain`). */
const char *ox_pat_failure_format(const OxPatFailure *f, char *buf, size_t cap);

/* ------------------------------------------------------------------ the pattern-pass runner */

typedef struct OxPatEntry OxPatEntry;
/* extra_check: false = skip the match (fill *why to record a rejection, or leave code 0). */
typedef bool (*OxPatCheckFn)(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m, OxReason *why);
/* handler: performs the rewrite inside one step (ox_step_begin ... ox_step_commit) and counts;
 * returns 1 if a step was applied, 0 if not (it may record a rejection), -1 on internal error. */
typedef int (*OxPatHandlerFn)(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m);

struct OxPatEntry {
  const char *name;        /* handler name (the step's rule) */
  const OxPat *pattern;
  OxPatCheckFn check;      /* may be NULL */
  OxPatHandlerFn handler;
  const void *data;        /* handler parameters */
};

/* Runs entries once over the graph (spec 3.4 apply): anchors are the nodes whose op the
 * outermost pattern of some entry accepts, visited in DESCENDING graph position; for each
 * anchor, the entries in registration order; erased anchors are skipped; matches spanning a
 * mutation barrier are discarded (recorded as MUTATION_BARRIER); failed matches that got past
 * the anchor's own op test are recorded as rejections (deduplicated per anchor, entry and
 * reason). Returns the number of applied steps, or -1. */
int ox_pat_pass_run(OxPassCtx *c, const OxPatEntry *entries, uint32_t n);

/* Opens the step of a handler: ox_step_begin + the match's nodes as matched. */
void ox_pat_step_begin(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m);

/* Whether a node is a mutating op (barrier): op-table MUTATING flag, an in-place name
 * ("add_", not "__add__"), "_." in the target, an operator.i* target, or an out= kwarg. */
bool ox_pat_is_mutating(const OxGraph *g, OxNodeId id);

/* ------------------------------------------------------------------ the split/cat passes (ox_splitcat.c) */

int ox_splitcat_normalization_pass(OxPassCtx *c);
int ox_splitcat_remove_split_with_size_one_pass(OxPassCtx *c);
int ox_splitcat_merge_getitem_cat_pass(OxPassCtx *c);
int ox_splitcat_merge_splits_pass(OxPassCtx *c);
int ox_splitcat_mutate_cat_pass(OxPassCtx *c);
int ox_splitcat_split_cat_pass(OxPassCtx *c);
int ox_splitcat_unbind_stack_pass(OxPassCtx *c);
int ox_splitcat_merge_stack_tahn_unbind_pass(OxPassCtx *c);
int ox_splitcat_split_cat_to_slices_pass(OxPassCtx *c);
int ox_splitcat_unbind_cat_to_view_pass(OxPassCtx *c);
int ox_splitcat_split_stack_to_cats_pass(OxPassCtx *c);
int ox_splitcat_unbind_stack_to_slices_pass(OxPassCtx *c);
int ox_splitcat_move_reshape_out_of_split_stack_pass(OxPassCtx *c);
int ox_splitcat_normalization_aten_pass(OxPassCtx *c);
int ox_splitcat_split_cat_aten_pass(OxPassCtx *c);
int ox_splitcat_select_cat_aten_pass(OxPassCtx *c);
int ox_splitcat_unbind_stack_aten_pass(OxPassCtx *c);
int ox_splitcat_move_view_after_cat_aten_pass(OxPassCtx *c);

/* ------------------------------------------------------------------ passes of upstream's lists outside split/cat and batch fusion (ox_misc_passes.c) */
int ox_misc_numpy_compat_normalization(OxPassCtx *c);
int ox_misc_cat_linear_pass(OxPassCtx *c);
int ox_misc_einsum_to_pointwise_pass(OxPassCtx *c);
int ox_misc_decompose_mm_pass(OxPassCtx *c);

#ifdef __cplusplus
}
#endif
#endif
