/* ox_rules_private.h - the rule language's internal types and the functions its files share
 * (engine/rules/ only; the public API is ox_rules.h).
 *
 * The files of engine/rules/ and what each owns:
 *   ox_rules.c           the API: load (lex, parse_file, link the passes), free, accessors
 *   ox_rules_lex.c       the lexer and the parser's located errors and depth bound
 *   ox_rules_parse.c     token helpers, op spellings, patterns (OxPat trees), expressions
 *   ox_rules_check.c     the checker: names, types and builtin signatures of expressions
 *   ox_rules_compile.c   rule, pass and batch blocks compiled into the OxRuleSet
 *   ox_rules_eval.c      runtime values (RV) and the evaluator of guards and templates (Ev)
 *   ox_rules_builtins.c  graph queries, node creation for templates, the builtin table
 *   ox_rules_run.c       running pattern rules: the handler inside a step, the pass runner
 *
 * Types: P is the parser state (tokens, the rule being parsed, diagnostics); Rule, RulePass and
 * OxRuleSet are what loading builds (immutable afterwards); Expr is a checked expression tree;
 * RV and Ev are the evaluator's values and state (one Ev per rule attempt, its own arena).
 * Functions shared across these files are prefixed ox_rules_ and declared here; everything
 * else stays static in its file.
 */
#ifndef OX_RULES_PRIVATE_H
#define OX_RULES_PRIVATE_H

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"
#include "ops/ox_shape.h"
#include "passes/ox_batch.h"
#include "passes/ox_pattern.h"
#include "rules/ox_rules.h"

enum { TY_ANY = 0, TY_INT, TY_FLOAT, TY_BOOL, TY_STR, TY_DTYPE, TY_NONE, TY_NODE, TY_LIST };
enum {
  X_INT,
  X_FLOAT,
  X_STR,
  X_BOOL,
  X_NONE,
  X_DTYPE,
  X_NAME,
  X_LIST,
  X_CALL,
  X_BIN,
  X_NOT,
  X_NEG,
  X_IF,
  X_INDEX,
  X_SLICE,
  X_COMP
};
enum {
  B_ADD,
  B_SUB,
  B_MUL,
  B_DIV,
  B_FDIV,
  B_MOD,
  B_CAT,
  B_EQ,
  B_NE,
  B_LT,
  B_LE,
  B_GT,
  B_GE,
  B_IN,
  B_AND,
  B_OR
};
typedef struct Expr Expr;
struct Expr {
  uint8_t k, op;
  uint8_t ty, ety; /* static type; element type of lists */
  uint16_t h;      /* height of the tree below (a leaf is 1), at most RULE_MAX_DEPTH */
  uint32_t line, col;
  uint32_t off, end; /* source text [off, end) */
  int64_t i;
  double f;
  const char *s; /* STR value, NAME / CALL name */
  OxDType dt;
  int slot; /* NAME: env slot; COMP: loop variable slot */
  Expr **a; /* children */
  uint32_t n;
  const char **kw; /* CALL keyword arguments */
  Expr **kv;
  uint32_t nk;
  /* CALL, resolved by the checker */
  int builtin; /* index into builtins[], -1 = a node constructor */
  OxOpId opid;
  const char *pre_target, *post_target; /* constructor spellings (post without "torch.ops.") */
  uint8_t pre_kind, post_kind;          /* OxOp of the created node */
};

enum { SYM_CAPTURE, SYM_LET, SYM_LOOP };

typedef struct Sym {
  const char *name;
  uint8_t kind, ty, ety;
  bool in_list; /* captured inside each()/some()/repeat(): a list of values */
  bool visible;
  uint32_t line, col;
} Sym;

enum { CL_WHEN, CL_WHERE, CL_LET };

typedef struct Clause {
  uint8_t k;
  Expr *e;
  int slot;         /* LET */
  const char *name; /* LET */
  uint32_t line, col;
  const char *text; /* guard source */
} Clause;

enum { ST_LET, ST_REPLACE, ST_EACH, ST_FOR };

typedef struct Stmt {
  uint8_t k;
  const char *name; /* LET name / REPLACE, EACH target */
  const char *var;  /* EACH index variable */
  int slot, target, var_slot;
  Expr *e, *cond;
  Expr *list, *tgt; /* FOR: for var in list: tgt => e */
  uint32_t line, col;
} Stmt;

typedef struct RulePass RulePass;

typedef struct Rule {
  const char *name, *file;
  const char *src; /* the file's text (sub-expressions are quoted from it) */
  uint32_t line, col;
  bool batch;
  OxPat *pattern;
  Sym *syms;
  uint32_t n_syms, cap_syms;
  Clause *cl;
  uint32_t n_cl, cap_cl;
  Stmt *st;
  uint32_t n_st, cap_st;
  int phase; /* -1 = any level, else OxPhase */
  bool count;
  const char *counter; /* NULL = the pass name */
  bool has_match, has_replace;
  uint32_t pass_index;
  OxBatchRule row; /* batch rules */
  OxPassOptions opt;
} Rule;

struct RulePass {
  OxPassInfo info; /* first member: the driver hands it back as ctx->pass */
  const OxRuleSet *set;
  uint32_t *rules; /* rule indices */
  uint32_t n_rules;
  OxPatEntry *entries;
  bool batch;
  bool block; /* a `pass NAME { ... }` block */
  int phase;  /* -1 = any level */
  const char *file;
  uint32_t line;
  OxPassOptions opt;
};

struct OxRuleSet {
  OxPatPool *pool;
  const char *src; /* the file's text (guard evidence quotes sub-expressions) */
  OxGraph *ag;     /* arena + strings (the pool's value graph) */
  const char *file;
  Rule *rules;
  uint32_t n_rules, cap_rules;
  RulePass *passes;
  uint32_t n_passes, cap_passes;
};

enum { TK_EOF, TK_NL, TK_ID, TK_INT, TK_FLOAT, TK_STR, TK_P };

typedef struct Tok {
  uint8_t k;
  uint32_t line, col, off, len;
  int64_t i;
  double f;
  const char *s; /* interned: identifier, string value, punctuation */
} Tok;

typedef struct P {
  OxRuleSet *rs;
  const char *src;
  size_t len;
  const char *file;
  Tok *t;
  uint32_t n, cap, i;
  OxDiagList *d;
  int errors;
  OxGraph *ag;
  OxPatPool *pool;
  Rule *cur;      /* the rule being parsed */
  int list_depth; /* inside each()/some()/repeat() */
  uint32_t depth; /* recursive descent: parse_pat / parse_const / parse_expr levels entered */
  uint32_t ph;    /* height of the pattern (or constant) parse_pat / parse_const just returned */
} P;

/* Nesting bound of the rule language, like the graph loaders' (256): patterns, constants and
 * expression trees are at most this high, so the parser, checker, compiler, matcher and
 * evaluator, which all recurse over them, recurse at most this deep; deeper input is a located
 * error. Chains that need no recursion to parse (not not ..., - - ..., x[0][0]..., a + b + ...)
 * are parsed in loops and refused by the height of the tree they build. */
#define RULE_MAX_DEPTH 256

enum { V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_DTYPE, V_NODE, V_LIST, V_RAW, V_UNSET };

typedef struct RV RV;
struct RV {
  uint8_t k;
  uint32_t n;
  union {
    bool b;
    int64_t i;
    double f;
    const char *s;
    OxDType dt;
    OxNodeId node;
    RV *items;
  } u;
  const OxValue *src; /* the graph value it was read from (passed through unchanged), or NULL */
};

#define EV_BUDGET 1000000u     /* evaluation steps per rule attempt */
#define EV_MAX_LIST (1u << 20) /* items in one list */

typedef struct Ev {
  OxPassCtx *c;
  OxGraph *g;
  const Rule *r;
  const OxPatMatch *m;
  RV *env;
  OxArena arena;
  uint64_t steps;
  bool tmpl;       /* nodes may be created */
  bool aten;       /* the anchor is spelled at aten level */
  bool torch_ops;  /* ... as "torch.ops.aten..." */
  OxNodeId before; /* insertion point of new nodes */
  OxNodeId *proj_base, *proj_last;
  uint32_t n_proj, cap_proj;
  OxNodeId *created;
  uint32_t n_created, cap_created;
  bool changed;
  bool need_sort; /* a user now precedes its new input: toposort inside the step */
  /* failure: a reason code and its arguments */
  bool failed;
  uint16_t code;
  char args[OX_REASON_MAX_ARGS][160];
  bool is_node[OX_REASON_MAX_ARGS];
  uint8_t n_args;
  char evidence[256]; /* why the last predicate was false */
} Ev;

typedef bool (*BiFn)(Ev *ev, const Expr *x, RV *a, uint32_t n, RV *out);

/* params: n node, l list, i int, x number, b bool, s string, d dtype, k int or string,
 * q list or string, a anything; the last letter repeats for extra arguments */
typedef struct Builtin {
  const char *name;
  uint8_t min, max;
  const char *params;
  uint8_t ret, ret_elem;
  bool tmpl;    /* creates nodes: replace: only */
  bool numeric; /* int when the numbers it reads are ints */
  BiFn fn;
} Builtin;

#define ERR_TOK(p, tk, ...) ox_rules_err_at((p), (tk)->line, (tk)->col, (tk)->off, __VA_ARGS__)
#define ERR_EXPR(p, x, ...) ox_rules_err_at((p), (x)->line, (x)->col, (x)->off, __VA_ARGS__)

/* ------------------------------------------------------------------ shared functions */

/* ox_rules_lex.c */
#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
void ox_rules_err_at(P *p, uint32_t line, uint32_t col, uint32_t off, const char *fmt, ...);
bool ox_rules_enter(P *p, const Tok *t, const char *what);
void ox_rules_leave(P *p);
/* Errors reported per file; later ones are counted, not reported (one note says so). */
#define OX_RULES_MAX_ERRORS 25
void ox_rules_lex(P *p);

/* ox_rules_parse.c */
Tok *ox_rules_pk(P *p);
Tok *ox_rules_pk_at(P *p, uint32_t k);
Tok *ox_rules_adv(P *p);
bool ox_rules_is_p(const Tok *t, const char *s);
bool ox_rules_is_id(const Tok *t, const char *s);
const char *ox_rules_tok_desc(const P *p, const Tok *t, char *buf, size_t cap);
bool ox_rules_expect_p(P *p, const char *s, const char *what);
bool ox_rules_expect_id(P *p, const char *s, const char *what);
void ox_rules_skip_nl(P *p);
bool ox_rules_continues(P *p, const char *word);
bool ox_rules_end_stmt(P *p);
bool ox_rules_is_reserved(const char *s);
const OxSpelling *ox_rules_spelling_named(const char *name);
const OxSpelling *ox_rules_spelling_for(OxOpId id, bool post);
const char *ox_rules_strip_ops(const char *t);
void ox_rules_pat_loc(P *p, const Tok *t);
int ox_rules_sym_find(const Rule *r, const char *name);
int ox_rules_sym_add(Rule *r, const char *name, uint8_t kind, uint8_t ty, uint8_t ety, const Tok *t);
OxPat *ox_rules_parse_pat(P *p);
Expr *ox_rules_parse_postfix(P *p);
Expr *ox_rules_parse_expr(P *p);

/* ox_rules_builtins.c */
bool ox_rules_want_int(Ev *ev, const RV *v, const char *what, int64_t *out);
bool ox_rules_want_list(Ev *ev, const RV *v, const char *what);
bool ox_rules_node_is_aten(const OxGraph *g, OxNodeId id);
OxNodeId ox_rules_create(Ev *ev, OxOp kind, const char *target, OxValue args, OxValue kwargs);
const char *ox_rules_aten_spelled(Ev *ev, const char *bare);
OxNodeId ox_rules_project(Ev *ev, OxNodeId base, int64_t k);
void ox_rules_erase_node(Ev *ev, OxNodeId id);
void ox_rules_replace_uses(Ev *ev, OxNodeId t, OxNodeId v);
extern const Builtin ox_rules_builtins[];
int ox_rules_builtin_find(const char *name);

/* ox_rules_eval.c */
bool ox_rules_evfail(Ev *ev, OxReasonCode code, const char *spec, ...);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
bool ox_rules_everr(Ev *ev, const char *fmt, ...);
bool ox_rules_tick(Ev *ev);
RV *ox_rules_rv_alloc(Ev *ev, uint32_t n);
RV ox_rules_rv_int(int64_t i);
RV ox_rules_rv_bool(bool b);
RV ox_rules_rv_node(OxNodeId id);
RV ox_rules_rv_str(const char *s);
RV ox_rules_rv_list(RV *items, uint32_t n);
const char *ox_rules_node_name(const Ev *ev, OxNodeId id);
RV ox_rules_rv_from_value(Ev *ev, const OxValue *v, bool keep_src);
const char *ox_rules_rv_text(const Ev *ev, const RV *r, char *buf, size_t cap);
const char *ox_rules_rv_kind_name(const RV *r);
bool ox_rules_is_num(const RV *r);
double ox_rules_num(const RV *r);
bool ox_rules_rv_eq(const RV *a, const RV *b);
bool ox_rules_want_bool(Ev *ev, const Expr *x, const RV *v, bool *b);
bool ox_rules_eval(Ev *ev, const Expr *x, RV *out);
void ox_rules_explain_false(Ev *ev, const Expr *x, const char *src, OxBuf *b);

/* ox_rules_check.c */
extern const char *const ox_rules_ty_names[];
extern const char *const ox_rules_bin_names[];
bool ox_rules_ty_fits(uint8_t have, char want);
void ox_rules_check_expr(P *p, Rule *r, Expr *x, bool tmpl);

/* ox_rules_compile.c */
void ox_rules_parse_file(P *p);

/* ox_rules_run.c */
int ox_rules_handler(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m);
int ox_rules_pass_run(OxPassCtx *c);

#endif
