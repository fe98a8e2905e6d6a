/* ox_rules.c - the rule-file language: lexer, parser, checker, compiler and the evaluator of
 * guards and replacement templates (docs/rules.md).
 *
 * A file compiles to the engine's own data: each `match:` to an OxPat tree (every sub-pattern
 * stamped with its file and line) run by ox_pat_pass_run, each `batch` block to an OxBatchRule
 * row run by ox_batch_apply. What the pattern language cannot say (guards, replacements) is a
 * small expression language interpreted here: values are ints, floats, bools, strings,
 * dtypes, None, nodes and lists; there are no loops except comprehensions over finite lists,
 * no recursion and no host code, and every evaluation runs under a step budget, so a guard
 * always terminates.
 *
 * Invariants: a rule set is immutable after loading (runs only read it); loading either
 * compiles every rule of the file or returns nothing (all errors reported, located).
 * Evaluation never mutates the graph outside a step: guards only read; replacement statements
 * run inside one step (ox_step_begin ... ox_step_commit), and a statement that fails aborts
 * the step (rolled back) and records a rejection.
 *
 * Node placement in replacements: new nodes go, in creation order, right before the earliest
 * node (in graph order) that a replacement statement targets; getitems of a node follow that
 * node (after the getitems made for it earlier in the step). After the statements, created
 * nodes left unused and matched nodes left without users are erased (forward sweeps over the
 * matched nodes until none changes), mutating nodes never.
 */
#include "rules/ox_rules.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"
#include "ops/ox_shape.h"
#include "passes/ox_batch.h"
#include "passes/ox_pattern.h"

/* ------------------------------------------------------------------ types */

enum { TY_ANY = 0, TY_INT, TY_FLOAT, TY_BOOL, TY_STR, TY_DTYPE, TY_NONE, TY_NODE, TY_LIST };
static const char *const ty_names[] = {"value", "int",  "float", "bool", "string",
                                       "dtype", "None", "node",  "list"};

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
static const char *const bin_names[] = {
    "+", "-", "*", "/", "//", "%", "++", "==", "!=", "<", "<=", ">", ">=", "in", "and", "or"};

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

/* ------------------------------------------------------------------ lexer */

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

static void snippet_at(const P *p, uint32_t off, char *buf, size_t cap) {
  size_t a = off > p->len ? p->len : off, b = a;
  while (a > 0 && p->src[a - 1] != '\n')
    a--;
  while (b < p->len && p->src[b] != '\n' && p->src[b] != '\r')
    b++;
  while (a < b && (p->src[a] == ' ' || p->src[a] == '\t'))
    a++;
  /* a long line: show the text around the offset (the column says where), not its start */
  const char *pre = "";
  size_t at = off > p->len ? p->len : off;
  if (at > a + 120) {
    a = at - 60;
    pre = "...";
  }
  size_t n = b - a;
  if (n > 160) n = 160;
  snprintf(buf, cap, "%s%.*s", pre, (int)n, p->src + a);
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static void
err_at(P *p, uint32_t line, uint32_t col, uint32_t off, const char *fmt, ...) {
  char snip[200], msg[512];
  snippet_at(p, off, snip, sizeof snip);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ox_diag_add(p->d, OX_SEV_ERROR, line, col, snip, "%s", msg);
  p->errors++;
}

#define ERR_TOK(p, tk, ...) err_at((p), (tk)->line, (tk)->col, (tk)->off, __VA_ARGS__)
#define ERR_EXPR(p, x, ...) err_at((p), (x)->line, (x)->col, (x)->off, __VA_ARGS__)

/* Enters one level of recursive descent at token t; false (a located error) past the bound.
 * Every successful enter is paired with a leave. */
static bool enter(P *p, const Tok *t, const char *what) {
  if (p->depth >= RULE_MAX_DEPTH) {
    ERR_TOK(p, t, "%s nested deeper than %u levels", what, RULE_MAX_DEPTH);
    return false;
  }
  p->depth++;
  return true;
}
static void leave(P *p) { p->depth--; }

static void push_tok(P *p, Tok t) {
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 256;
    p->t = ox_xrealloc(p->t, p->cap * sizeof *p->t);
  }
  p->t[p->n++] = t;
}

static bool id_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool id_char(char c) { return id_start(c) || (c >= '0' && c <= '9'); }

static void lex(P *p) {
  const char *s = p->src;
  size_t n = p->len, i = 0;
  uint32_t line = 1;
  size_t line_start = 0;
  int depth = 0;
  static const char *const multi[] = {"=>", "==", "!=", "<=", ">=", "//", "++"};
  while (i < n) {
    char c = s[i];
    uint32_t col = (uint32_t)(i - line_start + 1);
    if (c == '\n') {
      if (depth == 0) push_tok(p, (Tok){TK_NL, line, col, (uint32_t)i, 1, 0, 0, NULL});
      i++;
      line++;
      line_start = i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
      i++;
      continue;
    }
    if (c == '#') {
      while (i < n && s[i] != '\n')
        i++;
      continue;
    }
    Tok t = {TK_EOF, line, col, (uint32_t)i, 0, 0, 0, NULL};
    if (id_start(c)) {
      size_t j = i;
      for (;;) {
        while (j < n && id_char(s[j]))
          j++;
        if (j + 1 < n && s[j] == '.' && id_start(s[j + 1])) {
          j++;
          continue;
        }
        break;
      }
      t.k = TK_ID;
      t.len = (uint32_t)(j - i);
      t.s = ox_graph_intern_n(p->ag, s + i, j - i);
      i = j;
    } else if (c >= '0' && c <= '9') {
      size_t j = i;
      bool flt = false;
      while (j < n && s[j] >= '0' && s[j] <= '9')
        j++;
      if (j + 1 < n && s[j] == '.' && s[j + 1] >= '0' && s[j + 1] <= '9') {
        flt = true;
        j++;
        while (j < n && s[j] >= '0' && s[j] <= '9')
          j++;
      }
      if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (s[k] == '+' || s[k] == '-')) k++;
        if (k < n && s[k] >= '0' && s[k] <= '9') {
          flt = true;
          j = k;
          while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
        }
      }
      char buf[64];
      size_t m = j - i < sizeof buf - 1 ? j - i : sizeof buf - 1;
      memcpy(buf, s + i, m);
      buf[m] = 0;
      t.len = (uint32_t)(j - i);
      if (flt) {
        t.k = TK_FLOAT;
        t.f = strtod(buf, NULL);
      } else {
        t.k = TK_INT;
        char *end;
        unsigned long long v = strtoull(buf, &end, 10);
        if (m > 18 && v > 9000000000000000000ull) {
          err_at(p, line, col, (uint32_t)i, "integer %s is too large", buf);
          v = 0;
        }
        t.i = (int64_t)v;
      }
      if (j < n && id_char(s[j])) {
        err_at(p, line, col, (uint32_t)i, "bad number '%.*s'", (int)(j - i + 1), s + i);
        while (j < n && id_char(s[j]))
          j++;
        t.len = (uint32_t)(j - i);
      }
      i = j;
    } else if (c == '"' || c == '\'') {
      size_t j = i + 1;
      char *buf = ox_xcalloc(n - i + 1, 1);
      size_t m = 0;
      bool closed = false;
      while (j < n && s[j] != '\n') {
        if (s[j] == c) {
          closed = true;
          j++;
          break;
        }
        if (s[j] == '\\' && j + 1 < n) {
          char e = s[j + 1];
          buf[m++] = e == 'n' ? '\n' : e == 't' ? '\t' : e;
          j += 2;
          continue;
        }
        buf[m++] = s[j++];
      }
      if (!closed) err_at(p, line, col, (uint32_t)i, "unterminated string");
      t.k = TK_STR;
      t.len = (uint32_t)(j - i);
      t.s = ox_graph_intern_n(p->ag, buf, m);
      free(buf);
      i = j;
    } else {
      size_t m = 0;
      for (size_t k = 0; k < sizeof multi / sizeof multi[0]; k++)
        if (i + 1 < n && s[i] == multi[k][0] && s[i + 1] == multi[k][1]) m = 2;
      if (!m && strchr("()[]{},:=<>+-*/%@|;", c)) m = 1;
      if (!m) {
        if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
          err_at(p, line, col, (uint32_t)i, "unexpected character '%c'", c);
        else
          err_at(p, line, col, (uint32_t)i, "unexpected byte 0x%02x", (unsigned char)c);
        i++;
        continue;
      }
      if (c == ';') { /* a statement separator, like a newline */
        push_tok(p, (Tok){TK_NL, line, col, (uint32_t)i, 1, 0, 0, NULL});
        i++;
        continue;
      }
      t.k = TK_P;
      t.len = (uint32_t)m;
      t.s = ox_graph_intern_n(p->ag, s + i, m);
      if (c == '(' || c == '[') depth++;
      if ((c == ')' || c == ']') && depth > 0) depth--;
      i += m;
    }
    push_tok(p, t);
  }
  uint32_t col = (uint32_t)(i - line_start + 1);
  push_tok(p, (Tok){TK_NL, line, col, (uint32_t)i, 0, 0, 0, NULL});
  push_tok(p, (Tok){TK_EOF, line, col, (uint32_t)i, 0, 0, 0, NULL});
}

/* ------------------------------------------------------------------ parser helpers */

static Tok *pk(P *p) { return &p->t[p->i]; }
static Tok *pk_at(P *p, uint32_t k) { return &p->t[p->i + k < p->n ? p->i + k : p->n - 1]; }
static Tok *adv(P *p) {
  Tok *t = &p->t[p->i];
  if (t->k != TK_EOF) p->i++;
  return t;
}
static bool is_p(const Tok *t, const char *s) { return t->k == TK_P && strcmp(t->s, s) == 0; }
static bool is_id(const Tok *t, const char *s) { return t->k == TK_ID && strcmp(t->s, s) == 0; }
static uint32_t prev_end(const P *p) { return p->i ? p->t[p->i - 1].off + p->t[p->i - 1].len : 0; }

static const char *tok_desc(const P *p, const Tok *t, char *buf, size_t cap) {
  if (t->k == TK_EOF) return "end of file";
  if (t->k == TK_NL) return t->len ? "end of line" : "end of file";
  snprintf(buf, cap, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), p->src + t->off);
  return buf;
}

static bool expect_p(P *p, const char *s, const char *what) {
  if (is_p(pk(p), s)) {
    adv(p);
    return true;
  }
  char b[64];
  ERR_TOK(p, pk(p), "expected '%s' %s, found %s", s, what, tok_desc(p, pk(p), b, sizeof b));
  return false;
}

static bool expect_id(P *p, const char *s, const char *what) {
  if (is_id(pk(p), s)) {
    adv(p);
    return true;
  }
  char b[64];
  ERR_TOK(p, pk(p), "expected '%s' %s, found %s", s, what, tok_desc(p, pk(p), b, sizeof b));
  return false;
}

static void skip_nl(P *p) {
  while (pk(p)->k == TK_NL)
    adv(p);
}

/* A line that starts with then / else / and / or / ++ / if continues the expression above. */
static bool continues(P *p, const char *word) {
  uint32_t k = 0;
  while (pk_at(p, k)->k == TK_NL)
    k++;
  const Tok *t = pk_at(p, k);
  if (!k || !((t->k == TK_ID || t->k == TK_P) && strcmp(t->s, word) == 0)) return false;
  skip_nl(p);
  return true;
}

/* end of a statement: a newline, or the closing brace of the block */
static bool end_stmt(P *p) {
  Tok *t = pk(p);
  if (t->k == TK_NL) {
    skip_nl(p);
    return true;
  }
  if (is_p(t, "}")) return true;
  char b[64];
  ERR_TOK(p, t, "expected the end of the line, found %s", tok_desc(p, t, b, sizeof b));
  return false;
}

static const char *const reserved[] = {
    "rule", "batch",  "pass",  "match",      "where",    "when",   "let",    "replace", "if",   "then",
    "else", "and",    "or",    "not",        "in",       "for",    "True",   "False",   "None", "each",
    "some", "repeat", "users", "normalized", "function", "method", "module", "_"};

static bool is_reserved(const char *s) {
  for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
    if (strcmp(reserved[i], s) == 0) return true;
  return false;
}

static void *arena_copy(P *p, const void *src, size_t n) {
  void *d = ox_graph_alloc(p->ag, n ? n : 1);
  if (n) memcpy(d, src, n);
  return d;
}

/* ------------------------------------------------------------------ spellings */

static bool starts(const char *s, const char *pre) { return strncmp(s, pre, strlen(pre)) == 0; }

/* The spelling written as `name` (with or without "torch.ops."), or NULL. */
static const OxSpelling *spelling_named(const char *name) {
  size_t n;
  const OxSpelling *all = ox_op_spellings(&n);
  for (size_t i = 0; i < n; i++) {
    const char *t = all[i].target;
    if (strcmp(t, name) == 0) return &all[i];
    if (starts(t, "torch.ops.") && strcmp(t + 10, name) == 0) return &all[i];
    if (starts(name, "torch.ops.") && strcmp(t, name + 10) == 0) return &all[i];
  }
  return NULL;
}

/* The spelling a created node of op `id` gets: pre-grad the torch function ("torch.NAME"
 * first), else the method; post-grad the first aten overload. */
static const OxSpelling *spelling_for(OxOpId id, bool post) {
  size_t n;
  const OxSpelling *all = ox_op_spellings(&n);
  const OxOpInfo *info = ox_op_info(id);
  const OxSpelling *first_torch = NULL, *first_method = NULL;
  char want[96];
  snprintf(want, sizeof want, "torch.%s", info ? info->name : "?");
  for (size_t i = 0; i < n; i++) {
    if (all[i].op != id) continue;
    if (post) {
      if (all[i].level == OX_LEVEL_ATEN) return &all[i];
      continue;
    }
    if (all[i].level == OX_LEVEL_TORCH) {
      if (strcmp(all[i].target, want) == 0) return &all[i];
      if (!first_torch) first_torch = &all[i];
    } else if (all[i].level == OX_LEVEL_METHOD && !first_method && !starts(all[i].target, "__")) {
      first_method = &all[i];
    }
  }
  return first_torch ? first_torch : first_method;
}

static const char *strip_ops(const char *t) { return starts(t, "torch.ops.") ? t + 10 : t; }

/* ------------------------------------------------------------------ patterns */

static void pat_loc(P *p, const Tok *t) { ox_pat_pool_loc(p->pool, p->file, t->line); }

static int sym_find(const Rule *r, const char *name) {
  for (int i = (int)r->n_syms - 1; i >= 0; i--)
    if (r->syms[i].visible && strcmp(r->syms[i].name, name) == 0) return i;
  return -1;
}

static int sym_add(Rule *r, const char *name, uint8_t kind, uint8_t ty, uint8_t ety, const Tok *t) {
  if (r->n_syms == r->cap_syms) {
    r->cap_syms = r->cap_syms ? r->cap_syms * 2 : 16;
    r->syms = ox_xrealloc(r->syms, r->cap_syms * sizeof *r->syms);
  }
  r->syms[r->n_syms] = (Sym){name, kind, ty, ety, false, true, t ? t->line : 0, t ? t->col : 0};
  return (int)r->n_syms++;
}

static void add_capture(P *p, const Tok *t, const char *name, bool is_node) {
  Rule *r = p->cur;
  bool in_list = p->list_depth > 0;
  int k = sym_find(r, name);
  if (k >= 0) {
    Sym *s = &r->syms[k];
    if (s->in_list != in_list) {
      ERR_TOK(
          p, t,
          "capture '%s' is used both inside and outside each()/some()/repeat() (first at line %u): inside, "
          "every element binds its own value; use two names",
          name, s->line);
      return;
    }
    if (is_node) {
      if (in_list)
        s->ety = TY_NODE;
      else
        s->ty = TY_NODE;
    }
    return;
  }
  k = sym_add(r, name, SYM_CAPTURE, in_list ? TY_LIST : (is_node ? TY_NODE : TY_ANY),
              is_node ? TY_NODE : TY_ANY, t);
  r->syms[k].in_list = in_list;
}

static OxPat *parse_pat(P *p);

/* Sets the height of what was just parsed (p->ph); false (a located error at t) past the bound. */
static bool set_ph(P *p, const Tok *t, uint32_t h, const char *what) {
  p->ph = h;
  if (h <= RULE_MAX_DEPTH) return true;
  ERR_TOK(p, t, "%s nested deeper than %u levels", what, RULE_MAX_DEPTH);
  return false;
}

static bool parse_const_in(P *p, OxValue *out);

/* constant values in patterns: numbers, strings, True/False/None, torch dtypes, lists */
static bool parse_const(P *p, OxValue *out) {
  if (!enter(p, pk(p), "constant")) return false;
  p->ph = 1;
  bool ok = parse_const_in(p, out);
  leave(p);
  return ok;
}

static bool parse_const_in(P *p, OxValue *out) {
  Tok *t = pk(p);
  bool neg = false;
  if (is_p(t, "-")) {
    adv(p);
    neg = true;
    t = pk(p);
    if (t->k != TK_INT && t->k != TK_FLOAT) {
      char b[64];
      ERR_TOK(p, t, "expected a number after '-', found %s", tok_desc(p, t, b, sizeof b));
      return false;
    }
  }
  if (t->k == TK_INT) {
    adv(p);
    *out = ox_value_int(neg ? -t->i : t->i);
    return true;
  }
  if (t->k == TK_FLOAT) {
    adv(p);
    *out = ox_value_float(neg ? -t->f : t->f);
    return true;
  }
  if (t->k == TK_STR) {
    adv(p);
    *out = ox_graph_value_str(p->ag, OX_V_STR, t->s);
    return true;
  }
  if (is_id(t, "True") || is_id(t, "False")) {
    adv(p);
    *out = ox_value_bool(is_id(t, "True"));
    return true;
  }
  if (is_id(t, "None")) {
    adv(p);
    *out = ox_value_none();
    return true;
  }
  if (t->k == TK_ID && starts(t->s, "torch.") &&
      ox_dtype_from_torch_name(t->s, strlen(t->s)) != OX_DT_UNKNOWN) {
    adv(p);
    *out = ox_value_dtype(ox_dtype_from_torch_name(t->s, strlen(t->s)));
    return true;
  }
  if (is_p(t, "[")) {
    adv(p);
    OxValue items[64];
    uint32_t n = 0, h = 0;
    while (!is_p(pk(p), "]")) {
      if (n == 64) {
        ERR_TOK(p, pk(p), "a constant list in a pattern holds at most 64 items");
        return false;
      }
      Tok *it = pk(p);
      if (!parse_const(p, &items[n])) {
        if (it == pk(p) && it->k == TK_ID)
          ERR_TOK(
              p, it,
              "a list in a pattern holds constants only; match list arguments with each(...) or some(...)");
        return false;
      }
      if (p->ph > h) h = p->ph;
      n++;
      if (!is_p(pk(p), ",")) break;
      adv(p);
    }
    if (!expect_p(p, "]", "to close the constant list")) return false;
    if (!set_ph(p, t, h + 1, "constant")) return false;
    *out = ox_graph_value_seq(p->ag, OX_V_LIST, items, n);
    return true;
  }
  return false;
}

typedef struct CallHead {
  OxOpId ops[16];
  uint32_t n_ops;
  const char *targets[32];
  uint32_t n_targets;
  unsigned kinds;
} CallHead;

static bool head_add(P *p, CallHead *h, const Tok *t) {
  OxOpId id = ox_op_by_name(t->s);
  if (id != OX_OPID_NONE) {
    if (h->n_ops < 16) h->ops[h->n_ops++] = id;
    h->kinds |= OX_PAT_ANY_CALL;
    return true;
  }
  const OxSpelling *sp = spelling_named(t->s);
  if (!sp) {
    ERR_TOK(p, t,
            "unknown op '%s' (an op-table name such as split, or a spelling such as torch.split; see "
            "docs/ops.md)",
            t->s);
    return false;
  }
  if (h->n_targets + 2 > 32) return true;
  if (sp->level == OX_LEVEL_ATEN) {
    char b[160];
    const char *bare = strip_ops(sp->target);
    snprintf(b, sizeof b, "torch.ops.%s", bare);
    h->targets[h->n_targets++] = ox_graph_intern(p->ag, bare);
    h->targets[h->n_targets++] = ox_graph_intern(p->ag, b);
    h->kinds |= OX_PAT_FUNCTION;
  } else {
    h->targets[h->n_targets++] = sp->target;
    h->kinds |= sp->level == OX_LEVEL_METHOD   ? OX_PAT_METHOD
                : sp->level == OX_LEVEL_MODULE ? OX_PAT_MODULE
                                               : OX_PAT_FUNCTION;
  }
  return true;
}

static bool is_kind_word(const Tok *t) {
  return is_id(t, "function") || is_id(t, "method") || is_id(t, "module");
}

static OxPat *parse_call(P *p) {
  CallHead h;
  memset(&h, 0, sizeof h);
  unsigned kinds = 0;
  Tok *head = pk(p);
  if (is_kind_word(pk(p))) {
    for (;;) {
      Tok *k = adv(p);
      kinds |= is_id(k, "function") ? OX_PAT_FUNCTION : is_id(k, "method") ? OX_PAT_METHOD : OX_PAT_MODULE;
      if (is_p(pk(p), "|") && is_kind_word(pk_at(p, 1))) {
        adv(p);
        continue;
      }
      break;
    }
  }
  bool ok = true;
  for (;;) {
    Tok *t = pk(p);
    if (t->k != TK_ID || is_reserved(t->s)) {
      char b[64];
      ERR_TOK(p, t, "expected an op name, found %s", tok_desc(p, t, b, sizeof b));
      return NULL;
    }
    adv(p);
    if (!head_add(p, &h, t)) ok = false;
    if (!is_p(pk(p), "|")) break;
    adv(p);
  }
  if (!expect_p(p, "(", "after the op name")) return NULL;
  OxPat *args[OX_MAX_SLOTS + 8];
  const char *kwn[OX_MAX_SLOTS + 8];
  OxPat *kwv[OX_MAX_SLOTS + 8];
  uint32_t na = 0, nk = 0, ht = 0;
  bool varargs = false;
  if (is_p(pk(p), "*") && is_p(pk_at(p, 1), ")")) {
    adv(p);
    varargs = true;
  } else {
    while (!is_p(pk(p), ")")) {
      Tok *t = pk(p);
      if (na + nk >= OX_MAX_SLOTS + 8) {
        ERR_TOK(p, t, "too many arguments in a call pattern");
        return NULL;
      }
      if (t->k == TK_ID && is_p(pk_at(p, 1), "=")) {
        adv(p);
        adv(p);
        OxPat *v = parse_pat(p);
        if (!v) return NULL;
        if (p->ph > ht) ht = p->ph;
        for (uint32_t i = 0; i < nk; i++)
          if (strcmp(kwn[i], t->s) == 0) ERR_TOK(p, t, "keyword argument '%s' given twice", t->s);
        kwn[nk] = t->s;
        kwv[nk++] = v;
      } else {
        if (nk) ERR_TOK(p, t, "positional argument after keyword arguments");
        OxPat *v = parse_pat(p);
        if (!v) return NULL;
        if (p->ph > ht) ht = p->ph;
        args[na++] = v;
      }
      if (!is_p(pk(p), ",")) break;
      adv(p);
    }
  }
  if (!expect_p(p, ")", "to close the call pattern")) return NULL;
  if (!set_ph(p, head, ht + 1, "pattern")) return NULL;
  (void)ok; /* an unknown op was reported; the call is still built so parsing goes on */
  pat_loc(p, head);
  OxPat *x = varargs ? ox_pat_call_varargs(p->pool, kinds ? kinds : h.kinds, h.ops, h.n_ops)
                     : ox_pat_call(p->pool, kinds ? kinds : h.kinds, h.ops, h.n_ops, args, na);
  for (uint32_t i = 0; i < h.n_targets; i++)
    ox_pat_call_target(p->pool, x, h.targets[i]);
  for (uint32_t i = 0; i < nk; i++)
    ox_pat_call_kw(p->pool, x, kwn[i], kwv[i]);
  return x;
}

static OxPat *parse_pat_prim(P *p) {
  Tok *t = pk(p);
  char b[64];
  if (is_p(t, "(")) {
    adv(p);
    OxPat *x = parse_pat(p);
    if (!x || !expect_p(p, ")", "to close the parenthesized pattern")) return NULL;
    return x;
  }
  if (is_id(t, "_")) {
    adv(p);
    pat_loc(p, t);
    p->ph = 1;
    return ox_pat_ignored(p->pool);
  }
  if ((is_id(t, "each") || is_id(t, "some") || is_id(t, "repeat")) && is_p(pk_at(p, 1), "(")) {
    adv(p);
    adv(p);
    p->list_depth++;
    OxPat *inner = parse_pat(p);
    p->list_depth--;
    if (!inner || !expect_p(p, ")", "to close the list pattern")) return NULL;
    if (!set_ph(p, t, p->ph + 1, "pattern")) return NULL;
    pat_loc(p, t);
    if (is_id(t, "repeat")) {
      if (inner->kind != OX_PAT_CALL) ERR_TOK(p, t, "repeat(...) takes a call pattern");
      return ox_pat_repeated(p->pool, inner);
    }
    return ox_pat_list(p->pool, inner, is_id(t, "some"));
  }
  if (t->k == TK_INT || t->k == TK_FLOAT || t->k == TK_STR || is_p(t, "-") || is_p(t, "[") ||
      is_id(t, "True") || is_id(t, "False") || is_id(t, "None") ||
      (t->k == TK_ID && starts(t->s, "torch.") &&
       ox_dtype_from_torch_name(t->s, strlen(t->s)) != OX_DT_UNKNOWN)) {
    OxValue v;
    if (!parse_const(p, &v)) {
      if (pk(p) == t) ERR_TOK(p, t, "expected a constant, found %s", tok_desc(p, t, b, sizeof b));
      return NULL;
    }
    pat_loc(p, t);
    return ox_pat_const(p->pool, &v);
  }
  if (t->k == TK_ID && (is_kind_word(t) || is_p(pk_at(p, 1), "(") || is_p(pk_at(p, 1), "|")))
    return parse_call(p);
  if (t->k == TK_ID) {
    if (is_reserved(t->s) || strchr(t->s, '.')) {
      ERR_TOK(p, t, "expected a pattern, found %s%s", tok_desc(p, t, b, sizeof b),
              strchr(t->s, '.') ? " (a call needs its arguments: NAME(...))" : " (a reserved word)");
      adv(p);
      return NULL;
    }
    adv(p);
    add_capture(p, t, t->s, false);
    pat_loc(p, t);
    p->ph = 1;
    return ox_pat_kwarg(p->pool, t->s);
  }
  ERR_TOK(p, t, "expected a pattern, found %s", tok_desc(p, t, b, sizeof b));
  return NULL;
}

static bool is_split_call(const OxPat *x, OxOpId a, OxOpId b) {
  if (x->kind != OX_PAT_CALL || !x->n_ops || x->n_targets) return false;
  for (uint32_t i = 0; i < x->n_ops; i++)
    if (x->ops[i] != a && x->ops[i] != b) return false;
  return true;
}

static OxPat *parse_pat_post(P *p) {
  OxPat *x = parse_pat_prim(p);
  if (!x) return NULL;
  for (;;) {
    Tok *t = pk(p);
    if (is_p(t, "[")) { /* x[k]: getitem sugar */
      uint32_t hx = p->ph;
      adv(p);
      OxPat *idx = parse_pat(p);
      if (!idx || !expect_p(p, "]", "to close the getitem pattern")) return NULL;
      if (!set_ph(p, t, (hx > p->ph ? hx : p->ph) + 1, "pattern")) return NULL;
      pat_loc(p, t);
      x = ox_pat_getitem(p->pool, x, idx, 1);
      continue;
    }
    if (is_id(t, "users")) {
      adv(p);
      if (!expect_p(p, "=", "after users")) return NULL;
      Tok *v = adv(p);
      int32_t u;
      if (is_p(v, "*"))
        u = OX_PAT_USERS_ANY;
      else if (v->k == TK_INT && v->i < 1000000)
        u = (int32_t)v->i;
      else {
        char b[64];
        ERR_TOK(p, v, "users= takes a count or '*', found %s", tok_desc(p, v, b, sizeof b));
        return NULL;
      }
      if (x->kind != OX_PAT_CALL)
        ERR_TOK(p, t, "users= applies to a call pattern");
      else
        ox_pat_call_users(x, u);
      continue;
    }
    if (is_id(t, "normalized")) {
      adv(p);
      if (is_split_call(x, OX_OPID_SPLIT, OX_OPID_SPLIT_WITH_SIZES))
        ox_pat_call_constraint(x, OX_PAT_C_SPLIT);
      else if (is_split_call(x, OX_OPID_UNBIND, OX_OPID_UNBIND))
        ox_pat_call_constraint(x, OX_PAT_C_UNBIND);
      else
        ERR_TOK(p, t, "'normalized' applies to split / split_with_sizes or unbind call patterns");
      continue;
    }
    return x;
  }
}

static OxPat *parse_pat_in(P *p);

static OxPat *parse_pat(P *p) {
  if (!enter(p, pk(p), "pattern")) return NULL;
  OxPat *x = parse_pat_in(p);
  leave(p);
  return x;
}

static OxPat *parse_pat_in(P *p) {
  Tok *t = pk(p);
  Tok *bind = NULL;
  if (t->k == TK_ID && is_p(pk_at(p, 1), "@")) {
    bind = t;
    adv(p);
    adv(p);
    if (is_reserved(t->s) || strchr(t->s, '.')) ERR_TOK(p, t, "'%s' cannot name a capture", t->s);
  }
  OxPat *x = parse_pat_post(p);
  if (!x || !bind) return x;
  if (x->kind != OX_PAT_CALL) {
    ERR_TOK(p, bind, "'%s @' binds a call pattern (NAME @ op(...)); to capture any value write just %s",
            bind->s, bind->s);
  } else if (x->bind) {
    ERR_TOK(p, bind, "this call is already bound to '%s'", x->bind);
  } else {
    ox_pat_call_bind(p->pool, x, bind->s);
    add_capture(p, bind, bind->s, true);
  }
  return x;
}

/* ------------------------------------------------------------------ expressions */

static int builtin_find(const char *name);

static Expr *ex_new(P *p, uint8_t k, const Tok *t) {
  Expr *x = ox_graph_alloc(p->ag, sizeof *x);
  x->k = k;
  x->line = t->line;
  x->col = t->col;
  x->off = t->off;
  x->end = t->off + t->len;
  x->slot = -1;
  x->builtin = -1;
  x->h = 1;
  return x;
}

/* Attaches the children (NULL entries allowed: optional slice bounds); NULL with an error at
 * x's location when the tree would be higher than RULE_MAX_DEPTH. */
static Expr *ex_kids(P *p, Expr *x, Expr *const *kids, uint32_t n) {
  uint32_t h = 0;
  for (uint32_t i = 0; i < n; i++)
    if (kids[i] && kids[i]->h > h) h = kids[i]->h;
  if (h + 1 > RULE_MAX_DEPTH) {
    ERR_EXPR(p, x, "expression nested deeper than %u levels", RULE_MAX_DEPTH);
    return NULL;
  }
  x->h = (uint16_t)(h + 1);
  x->a = arena_copy(p, kids, n * sizeof *kids);
  x->n = n;
  return x;
}

/* l op r; t is the operator (where a too-high tree is reported) */
static Expr *ex_bin(P *p, uint8_t op, Expr *l, Expr *r, const Tok *t) {
  if ((l->h > r->h ? l->h : r->h) + 1 > RULE_MAX_DEPTH) {
    ERR_TOK(p, t, "expression nested deeper than %u levels", RULE_MAX_DEPTH);
    return NULL;
  }
  Expr *x = ox_graph_alloc(p->ag, sizeof *x);
  x->k = X_BIN;
  x->op = op;
  x->line = l->line;
  x->col = l->col;
  x->off = l->off;
  x->end = r->end;
  x->slot = -1;
  x->builtin = -1;
  Expr *k[2] = {l, r};
  return ex_kids(p, x, k, 2);
}

static Expr *parse_expr(P *p);

static Expr *parse_primary(P *p) {
  Tok *t = pk(p);
  char b[64];
  if (t->k == TK_INT) {
    adv(p);
    Expr *x = ex_new(p, X_INT, t);
    x->i = t->i;
    return x;
  }
  if (t->k == TK_FLOAT) {
    adv(p);
    Expr *x = ex_new(p, X_FLOAT, t);
    x->f = t->f;
    return x;
  }
  if (t->k == TK_STR) {
    adv(p);
    Expr *x = ex_new(p, X_STR, t);
    x->s = t->s;
    return x;
  }
  if (is_id(t, "True") || is_id(t, "False")) {
    adv(p);
    Expr *x = ex_new(p, X_BOOL, t);
    x->i = is_id(t, "True");
    return x;
  }
  if (is_id(t, "None")) {
    adv(p);
    return ex_new(p, X_NONE, t);
  }
  if (is_p(t, "(")) {
    adv(p);
    Expr *x = parse_expr(p);
    if (!x || !expect_p(p, ")", "to close the parenthesis")) return NULL;
    return x;
  }
  if (is_p(t, "[")) {
    adv(p);
    Expr *items[256];
    uint32_t n = 0;
    if (!is_p(pk(p), "]")) {
      Expr *first = parse_expr(p);
      if (!first) return NULL;
      if (is_id(pk(p), "for")) { /* [e for v in list if cond] */
        adv(p);
        Tok *v = adv(p);
        if (v->k != TK_ID || is_reserved(v->s) || strchr(v->s, '.')) {
          ERR_TOK(p, v, "expected a variable name after 'for', found %s", tok_desc(p, v, b, sizeof b));
          return NULL;
        }
        if (!expect_id(p, "in", "in the comprehension")) return NULL;
        Expr *list = parse_expr(p);
        if (!list) return NULL;
        Expr *cond = NULL;
        if (is_id(pk(p), "if")) {
          adv(p);
          if (!(cond = parse_expr(p))) return NULL;
        }
        if (!expect_p(p, "]", "to close the comprehension")) return NULL;
        Expr *x = ex_new(p, X_COMP, t);
        x->s = v->s;
        Expr *k[3] = {first, list, cond};
        if (!ex_kids(p, x, k, cond ? 3 : 2)) return NULL;
        x->end = prev_end(p);
        return x;
      }
      items[n++] = first;
      while (is_p(pk(p), ",")) {
        adv(p);
        if (is_p(pk(p), "]")) break;
        if (n == 256) {
          ERR_TOK(p, pk(p), "a list literal holds at most 256 items");
          return NULL;
        }
        if (!(items[n++] = parse_expr(p))) return NULL;
      }
    }
    if (!expect_p(p, "]", "to close the list")) return NULL;
    Expr *x = ex_kids(p, ex_new(p, X_LIST, t), items, n);
    if (!x) return NULL;
    x->end = prev_end(p);
    return x;
  }
  if (t->k == TK_ID && (!is_reserved(t->s) || (is_p(pk_at(p, 1), "(") && builtin_find(t->s) >= 0))) {
    adv(p);
    if (is_p(pk(p), "(")) {
      adv(p);
      Expr *args[32], *kv[16];
      const char *kw[16];
      uint32_t na = 0, nk = 0;
      while (!is_p(pk(p), ")")) {
        Tok *a = pk(p);
        if (na == 32 || nk == 16) {
          ERR_TOK(p, a, "too many arguments");
          return NULL;
        }
        if (a->k == TK_ID && is_p(pk_at(p, 1), "=")) {
          adv(p);
          adv(p);
          kw[nk] = a->s;
          if (!(kv[nk++] = parse_expr(p))) return NULL;
        } else {
          if (nk) ERR_TOK(p, a, "positional argument after keyword arguments");
          if (!(args[na++] = parse_expr(p))) return NULL;
        }
        if (!is_p(pk(p), ",")) break;
        adv(p);
      }
      if (!expect_p(p, ")", "to close the call")) return NULL;
      Expr *kids[48];
      memcpy(kids, args, na * sizeof *args);
      memcpy(kids + na, kv, nk * sizeof *kv);
      Expr *x = ex_new(p, X_CALL, t);
      if (!ex_kids(p, x, kids, na + nk)) return NULL; /* the height counts keyword values too */
      x->n = na;
      x->a = arena_copy(p, args, na * sizeof *args);
      x->s = t->s;
      x->kw = arena_copy(p, kw, nk * sizeof *kw);
      x->kv = arena_copy(p, kv, nk * sizeof *kv);
      x->nk = nk;
      x->end = prev_end(p);
      return x;
    }
    if (starts(t->s, "torch.") && ox_dtype_from_torch_name(t->s, strlen(t->s)) != OX_DT_UNKNOWN) {
      Expr *x = ex_new(p, X_DTYPE, t);
      x->dt = ox_dtype_from_torch_name(t->s, strlen(t->s));
      return x;
    }
    Expr *x = ex_new(p, X_NAME, t);
    x->s = t->s;
    return x;
  }
  ERR_TOK(p, t, "expected an expression, found %s", tok_desc(p, t, b, sizeof b));
  return NULL;
}

static Expr *parse_postfix(P *p) {
  Expr *x = parse_primary(p);
  while (x && is_p(pk(p), "[")) {
    Tok *t = adv(p);
    Expr *lo = NULL, *hi = NULL;
    bool slice = false;
    if (!is_p(pk(p), ":") && !(lo = parse_expr(p))) return NULL;
    if (is_p(pk(p), ":")) {
      adv(p);
      slice = true;
      if (!is_p(pk(p), "]") && !(hi = parse_expr(p))) return NULL;
    }
    if (!expect_p(p, "]", "to close the index")) return NULL;
    Expr *y = ex_new(p, slice ? X_SLICE : X_INDEX, t);
    Expr *k[3] = {x, lo, hi};
    if (!ex_kids(p, y, k, slice ? 3 : 2)) return NULL; /* reported at the '[' */
    y->line = x->line;
    y->col = x->col;
    y->off = x->off;
    y->end = prev_end(p);
    x = y;
  }
  return x;
}

/* "-" unary: a chain of minus signs is read in a loop (no recursion), then applied from the
 * innermost out; a literal absorbs its signs. */
static Expr *parse_unary(P *p) {
  uint32_t first = p->i, n = 0;
  while (is_p(pk(p), "-")) {
    adv(p);
    n++;
  }
  Expr *a = parse_postfix(p);
  for (uint32_t k = n; a && k-- > 0;) {
    const Tok *t = &p->t[first + k];
    if ((a->k == X_INT && a->i != INT64_MIN) || a->k == X_FLOAT) { /* a literal */
      a->i = -a->i;
      a->f = -a->f;
      a->off = t->off;
      a->col = t->col;
      continue;
    }
    Expr *x = ex_kids(p, ex_new(p, X_NEG, t), &a, 1);
    if (!x) return NULL;
    x->end = a->end;
    a = x;
  }
  return a;
}

static Expr *parse_mul(P *p) {
  Expr *x = parse_unary(p);
  while (x) {
    Tok *t = pk(p);
    uint8_t op = is_p(t, "*")    ? B_MUL
                 : is_p(t, "/")  ? B_DIV
                 : is_p(t, "//") ? B_FDIV
                 : is_p(t, "%")  ? B_MOD
                                 : 255;
    if (op == 255) break;
    adv(p);
    Expr *r = parse_unary(p);
    if (!r) return NULL;
    x = ex_bin(p, op, x, r, t);
  }
  return x;
}

static Expr *parse_add(P *p) {
  Expr *x = parse_mul(p);
  while (x) {
    Tok *t = pk(p);
    uint8_t op = is_p(t, "+") ? B_ADD : is_p(t, "-") ? B_SUB : 255;
    if (op == 255) break;
    adv(p);
    Expr *r = parse_mul(p);
    if (!r) return NULL;
    x = ex_bin(p, op, x, r, t);
  }
  return x;
}

static Expr *parse_concat(P *p) {
  Expr *x = parse_add(p);
  while (x && (is_p(pk(p), "++") || continues(p, "++"))) {
    Tok *t = adv(p);
    Expr *r = parse_add(p);
    if (!r) return NULL;
    x = ex_bin(p, B_CAT, x, r, t);
  }
  return x;
}

static Expr *parse_cmp(P *p) {
  Expr *x = parse_concat(p);
  if (!x) return NULL;
  Tok *t = pk(p);
  uint8_t op = is_p(t, "==")    ? B_EQ
               : is_p(t, "!=")  ? B_NE
               : is_p(t, "<")   ? B_LT
               : is_p(t, "<=")  ? B_LE
               : is_p(t, ">")   ? B_GT
               : is_p(t, ">=")  ? B_GE
               : is_id(t, "in") ? B_IN
                                : 255;
  if (op == 255) return x;
  adv(p);
  Expr *r = parse_concat(p);
  if (!r) return NULL;
  return ex_bin(p, op, x, r, t);
}

/* "not" not: read in a loop like unary minus */
static Expr *parse_not(P *p) {
  uint32_t first = p->i, n = 0;
  while (is_id(pk(p), "not")) {
    adv(p);
    n++;
  }
  Expr *a = parse_cmp(p);
  for (uint32_t k = n; a && k-- > 0;) {
    Expr *x = ex_kids(p, ex_new(p, X_NOT, &p->t[first + k]), &a, 1);
    if (!x) return NULL;
    x->end = a->end;
    a = x;
  }
  return a;
}

static Expr *parse_and(P *p) {
  Expr *x = parse_not(p);
  while (x && (is_id(pk(p), "and") || continues(p, "and"))) {
    Tok *t = adv(p);
    Expr *r = parse_not(p);
    if (!r) return NULL;
    x = ex_bin(p, B_AND, x, r, t);
  }
  return x;
}

static Expr *parse_or(P *p) {
  Expr *x = parse_and(p);
  while (x && (is_id(pk(p), "or") || continues(p, "or"))) {
    Tok *t = adv(p);
    Expr *r = parse_and(p);
    if (!r) return NULL;
    x = ex_bin(p, B_OR, x, r, t);
  }
  return x;
}

static Expr *parse_expr_in(P *p);

static Expr *parse_expr(P *p) {
  if (!enter(p, pk(p), "expression")) return NULL;
  Expr *x = parse_expr_in(p);
  leave(p);
  return x;
}

static Expr *parse_expr_in(P *p) {
  Tok *t = pk(p);
  if (is_id(t, "if")) {
    adv(p);
    Expr *c = parse_expr(p);
    if (c) continues(p, "then");
    if (!c || !expect_id(p, "then", "after the condition of 'if'")) return NULL;
    Expr *a = parse_expr(p);
    if (a) continues(p, "else");
    if (!a || !expect_id(p, "else", "in 'if ... then ... else ...'")) return NULL;
    Expr *b = parse_expr(p);
    if (!b) return NULL;
    Expr *k[3] = {c, a, b};
    Expr *x = ex_kids(p, ex_new(p, X_IF, t), k, 3);
    if (!x) return NULL;
    x->end = b->end;
    return x;
  }
  return parse_or(p);
}

/* ------------------------------------------------------------------ runtime values */

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

/* Records a failure (spec: one char per argument, 'n' = a node name); returns false. */
static bool evfail(Ev *ev, OxReasonCode code, const char *spec, ...) {
  if (ev->failed) return false; /* keep the first, innermost failure */
  ev->failed = true;
  ev->code = (uint16_t)code;
  ev->n_args = 0;
  va_list ap;
  va_start(ap, spec);
  for (const char *s = spec; *s && ev->n_args < OX_REASON_MAX_ARGS; s++) {
    const char *a = va_arg(ap, const char *);
    snprintf(ev->args[ev->n_args], sizeof ev->args[0], "%s", a ? a : "");
    ev->is_node[ev->n_args++] = *s == 'n';
  }
  va_end(ap);
  return false;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static bool
everr(Ev *ev, const char *fmt, ...) {
  char msg[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return evfail(ev, OX_REASON_OTHER, "x", msg);
}

static bool tick(Ev *ev) {
  if (++ev->steps <= EV_BUDGET) return true;
  return everr(ev, "evaluation budget of %u steps exceeded", EV_BUDGET);
}

static RV *rv_alloc(Ev *ev, uint32_t n) { return ox_arena_alloc(&ev->arena, (n ? n : 1) * sizeof(RV)); }

static RV rv_int(int64_t i) { return (RV){.k = V_INT, .u.i = i}; }
static RV rv_bool(bool b) { return (RV){.k = V_BOOL, .u.b = b}; }
static RV rv_node(OxNodeId id) { return (RV){.k = V_NODE, .u.node = id}; }
static RV rv_str(const char *s) { return (RV){.k = V_STR, .u.s = s}; }
static RV rv_list(RV *items, uint32_t n) { return (RV){.k = V_LIST, .n = n, .u.items = items}; }

static const char *node_name(const Ev *ev, OxNodeId id) {
  const OxNode *n = ox_graph_node(ev->g, id);
  return n ? n->name : "?";
}

static RV rv_from_value(Ev *ev, const OxValue *v, bool keep_src) {
  RV r;
  memset(&r, 0, sizeof r);
  r.src = keep_src ? v : NULL;
  switch ((OxValueKind)v->kind) {
  case OX_V_NONE:
    r.k = V_NONE;
    break;
  case OX_V_BOOL:
    r.k = V_BOOL;
    r.u.b = v->u.b;
    break;
  case OX_V_INT:
    r.k = V_INT;
    r.u.i = v->u.i;
    break;
  case OX_V_FLOAT:
    r.k = V_FLOAT;
    r.u.f = v->u.f;
    break;
  case OX_V_STR:
    r.k = V_STR;
    r.u.s = v->s;
    break;
  case OX_V_NODE:
    r.k = V_NODE;
    r.u.node = v->u.node;
    break;
  case OX_V_DTYPE:
    if (v->u.dtype != OX_DT_UNKNOWN) {
      r.k = V_DTYPE;
      r.u.dt = v->u.dtype;
    } else {
      r.k = V_RAW;
      r.src = v;
    }
    break;
  case OX_V_LIST:
  case OX_V_TUPLE:
    r.k = V_LIST;
    r.n = v->n;
    r.u.items = rv_alloc(ev, v->n);
    for (uint32_t i = 0; i < v->n; i++)
      r.u.items[i] = rv_from_value(ev, &v->u.items[i], true);
    break;
  default:
    r.k = V_RAW;
    r.src = v;
    break;
  }
  return r;
}

static bool rv_to_value(Ev *ev, const RV *r, OxValue *out) {
  if (r->src && r->k != V_NODE) {
    *out = ox_graph_value_copy(ev->g, r->src);
    return true;
  }
  switch (r->k) {
  case V_NONE:
    *out = ox_value_none();
    return true;
  case V_BOOL:
    *out = ox_value_bool(r->u.b);
    return true;
  case V_INT:
    *out = ox_value_int(r->u.i);
    return true;
  case V_FLOAT:
    *out = ox_value_float(r->u.f);
    return true;
  case V_STR:
    *out = ox_graph_value_str(ev->g, OX_V_STR, r->u.s);
    return true;
  case V_DTYPE:
    *out = ox_value_dtype(r->u.dt);
    return true;
  case V_NODE: {
    const OxNode *n = ox_graph_node(ev->g, r->u.node);
    if (!n || n->erased) return everr(ev, "node %s was erased by an earlier statement", n ? n->name : "?");
    *out = ox_value_node(r->u.node);
    return true;
  }
  case V_LIST: {
    OxValue *items = ox_arena_alloc(&ev->arena, (r->n ? r->n : 1) * sizeof *items);
    for (uint32_t i = 0; i < r->n; i++)
      if (!rv_to_value(ev, &r->u.items[i], &items[i])) return false;
    *out = ox_graph_value_seq(ev->g, OX_V_LIST, items, r->n);
    return true;
  }
  default:
    return everr(ev, "an unset value");
  }
}

static void fmt_rv(const Ev *ev, const RV *r, OxBuf *b, int depth) {
  switch (r->k) {
  case V_NONE:
    ox_buf_puts(b, "None");
    break;
  case V_BOOL:
    ox_buf_puts(b, r->u.b ? "True" : "False");
    break;
  case V_INT:
    ox_buf_printf(b, "%lld", (long long)r->u.i);
    break;
  case V_FLOAT:
    ox_buf_put_pyfloat(b, r->u.f);
    break;
  case V_STR:
    ox_buf_put_quoted(b, r->u.s);
    break;
  case V_DTYPE:
    ox_buf_puts(b, ox_dtype_abbr(r->u.dt));
    break;
  case V_NODE:
    ox_buf_puts(b, node_name(ev, r->u.node));
    break;
  case V_LIST:
    ox_buf_putc(b, '[');
    for (uint32_t i = 0; i < r->n; i++) {
      if (i) ox_buf_puts(b, ", ");
      if (b->len > 120 || depth > 3) {
        ox_buf_puts(b, "...");
        break;
      }
      fmt_rv(ev, &r->u.items[i], b, depth + 1);
    }
    ox_buf_putc(b, ']');
    break;
  case V_RAW: {
    char buf[96];
    ox_buf_puts(b, ox_value_format(ev->g, r->src, buf, sizeof buf));
    break;
  }
  default:
    ox_buf_puts(b, "?");
    break;
  }
}

static const char *rv_text(const Ev *ev, const RV *r, char *buf, size_t cap) {
  OxBuf b;
  ox_buf_init(&b);
  fmt_rv(ev, r, &b, 0);
  snprintf(buf, cap, "%s", b.data ? b.data : "");
  ox_buf_free(&b);
  return buf;
}

static const char *rv_kind_name(const RV *r) {
  static const char *const names[] = {"None",  "bool", "int",  "float", "string",
                                      "dtype", "node", "list", "value", "unset"};
  return names[r->k];
}

static bool is_num(const RV *r) { return r->k == V_INT || r->k == V_FLOAT; }
static double num(const RV *r) { return r->k == V_INT ? (double)r->u.i : r->u.f; }

static bool rv_eq(const RV *a, const RV *b) {
  if (is_num(a) && is_num(b)) {
    if (a->k == V_INT && b->k == V_INT) return a->u.i == b->u.i;
    return num(a) == num(b);
  }
  if (a->k != b->k) return false;
  switch (a->k) {
  case V_NONE:
    return true;
  case V_BOOL:
    return a->u.b == b->u.b;
  case V_STR:
    return strcmp(a->u.s, b->u.s) == 0;
  case V_DTYPE:
    return a->u.dt == b->u.dt;
  case V_NODE:
    return a->u.node == b->u.node;
  case V_LIST:
    if (a->n != b->n) return false;
    for (uint32_t i = 0; i < a->n; i++)
      if (!rv_eq(&a->u.items[i], &b->u.items[i])) return false;
    return true;
  case V_RAW:
    return ox_value_equal(a->src, b->src);
  default:
    return false;
  }
}

/* ------------------------------------------------------------------ graph queries */

static bool want_node(Ev *ev, const RV *v, const char *fn, OxNodeId *out) {
  if (v->k != V_NODE) {
    char b[96];
    return everr(ev, "%s() needs a node, got %s %s", fn, rv_kind_name(v), rv_text(ev, v, b, sizeof b));
  }
  const OxNode *n = ox_graph_node(ev->g, v->u.node);
  if (!n || n->erased) return everr(ev, "%s(): node %s no longer exists", fn, n ? n->name : "?");
  *out = v->u.node;
  return true;
}

static bool want_int(Ev *ev, const RV *v, const char *what, int64_t *out) {
  if (v->k != V_INT) {
    char b[96];
    return everr(ev, "%s needs an int, got %s %s", what, rv_kind_name(v), rv_text(ev, v, b, sizeof b));
  }
  *out = v->u.i;
  return true;
}

static bool want_list(Ev *ev, const RV *v, const char *what) {
  if (v->k == V_LIST) return true;
  char b[96];
  return everr(ev, "%s needs a list, got %s %s", what, rv_kind_name(v), rv_text(ev, v, b, sizeof b));
}

/* tensor meta of a node; with static = every dim concrete */
static const OxTensorMeta *meta_of(Ev *ev, OxNodeId id, bool need_static) {
  const OxNode *n = &ev->g->nodes[id];
  if (n->meta.kind != OX_META_TENSOR || !n->meta.t || n->meta.t->rank < 0) {
    evfail(ev, OX_REASON_META_MISSING, "n", n->name);
    return NULL;
  }
  if (need_static)
    for (int32_t i = 0; i < n->meta.t->rank; i++)
      if (n->meta.t->shape[i].sym) {
        evfail(ev, OX_REASON_SYMBOLIC, "nx", n->name, n->meta.t->shape[i].sym);
        return NULL;
      }
  return n->meta.t;
}

static bool node_is_aten(const OxGraph *g, OxNodeId id) {
  const OxSpelling *sp = NULL;
  const OxNode *n = ox_graph_node(g, id);
  if (!n || !ox_op_of_node(g, n, &sp) || !sp) return false;
  return sp->level == OX_LEVEL_ATEN;
}

static bool in_matched(const Ev *ev, OxNodeId id) {
  for (uint32_t i = 0; i < ev->m->n_nodes; i++)
    if (ev->m->nodes[i] == id) return true;
  return false;
}

/* split / split_with_sizes / unbind: input, normalized dim and sections, the way the
 * built-in passes read them (sections from the outputs' meta, else from the arguments and
 * the input shape with a short last chunk, never size * count: upstream #197080). */
typedef struct SplitInfo {
  OxNodeId input;
  int64_t dim;
  int64_t *sec;
  uint32_t n;
} SplitInfo;

static bool split_info(Ev *ev, OxNodeId s, SplitInfo *si, const char *fn) {
  const OxGraph *g = ev->g;
  const OxNode *n = &g->nodes[s];
  OxOpId op = ox_op_of_node(g, n, NULL);
  if (op != OX_OPID_SPLIT && op != OX_OPID_SPLIT_WITH_SIZES && op != OX_OPID_UNBIND)
    return everr(ev, "%s(): %s is not a split or unbind", fn, n->name);
  OxOpArgs oa;
  char err[160];
  if (ox_op_normalize(g, n, &oa, err, sizeof err) != 0) return everr(ev, "%s(): %s", fn, err);
  if (oa.slot[0]->kind != OX_V_NODE) return everr(ev, "%s(): the input of %s is not a node", fn, n->name);
  si->input = oa.slot[0]->u.node;
  const OxTensorMeta *in = meta_of(ev, si->input, true);
  if (!in) return false;
  const OxValue *dv = oa.slot[op == OX_OPID_UNBIND ? 1 : 2];
  if (dv->kind != OX_V_INT) return everr(ev, "%s(): the dim of %s is not an int", fn, n->name);
  si->dim = dv->u.i < 0 ? dv->u.i + in->rank : dv->u.i;
  if (si->dim < 0 || si->dim >= in->rank)
    return everr(ev, "%s(): the dim of %s is out of range", fn, n->name);
  int64_t size = in->shape[si->dim].v;
  if (op == OX_OPID_UNBIND) {
    if (size > EV_MAX_LIST) return everr(ev, "%s(): %s has too many outputs", fn, n->name);
    si->n = (uint32_t)size;
    si->sec = ox_arena_alloc(&ev->arena, (si->n + 1) * sizeof *si->sec);
    for (uint32_t i = 0; i < si->n; i++)
      si->sec[i] = 1;
    return true;
  }
  if (n->meta.kind == OX_META_TUPLE && n->meta.n > 0) {
    si->n = n->meta.n;
    si->sec = ox_arena_alloc(&ev->arena, (si->n + 1) * sizeof *si->sec);
    for (uint32_t i = 0; i < si->n; i++) {
      const OxTensorMeta *t = &n->meta.t[i];
      if (t->rank != in->rank || t->shape[si->dim].sym)
        return everr(ev, "%s(): the meta of %s output %u is unusable", fn, n->name, i);
      si->sec[i] = t->shape[si->dim].v;
    }
    return true;
  }
  const OxValue *sz = oa.slot[1];
  if (sz->kind == OX_V_INT && sz->u.i > 0) {
    int64_t cnt = (size + sz->u.i - 1) / sz->u.i;
    if (cnt > EV_MAX_LIST) return everr(ev, "%s(): %s has too many outputs", fn, n->name);
    si->n = cnt ? (uint32_t)cnt : 1;
    si->sec = ox_arena_alloc(&ev->arena, (si->n + 1) * sizeof *si->sec);
    for (uint32_t i = 0; i < si->n; i++) {
      int64_t left = size - (int64_t)i * sz->u.i;
      si->sec[i] = left < sz->u.i ? left : sz->u.i;
    }
    return true;
  }
  if (sz->kind == OX_V_LIST || sz->kind == OX_V_TUPLE) {
    si->n = sz->n;
    si->sec = ox_arena_alloc(&ev->arena, (si->n + 1) * sizeof *si->sec);
    for (uint32_t i = 0; i < si->n; i++) {
      if (sz->u.items[i].kind != OX_V_INT) return everr(ev, "%s(): symbolic sections on %s", fn, n->name);
      si->sec[i] = sz->u.items[i].u.i;
    }
    return true;
  }
  return everr(ev, "%s(): the sections of %s are not static", fn, n->name);
}

/* The normalized dim of a cat / stack (against the rank of its first input that is not a
 * 1-D empty tensor; stack: that rank + 1), as the built-in passes read it. */
static bool cat_dim_of(Ev *ev, OxNodeId id, int64_t *out) {
  const OxGraph *g = ev->g;
  const OxNode *n = &g->nodes[id];
  OxOpId op = ox_op_of_node(g, n, NULL);
  if (op != OX_OPID_CAT && op != OX_OPID_STACK)
    return everr(ev, "cat_dim(): %s is not a cat or stack", n->name);
  OxOpArgs oa;
  char err[160];
  if (ox_op_normalize(g, n, &oa, err, sizeof err) != 0) return everr(ev, "cat_dim(): %s", err);
  const OxValue *t = oa.slot[0];
  if ((t->kind != OX_V_LIST && t->kind != OX_V_TUPLE) || !t->n || oa.slot[1]->kind != OX_V_INT)
    return everr(ev, "cat_dim(): the tensors or the dim of %s are not static", n->name);
  const OxTensorMeta *first = NULL;
  for (uint32_t i = 0; i < t->n && !first; i++) {
    if (t->u.items[i].kind != OX_V_NODE) continue;
    const OxNode *x = &g->nodes[t->u.items[i].u.node];
    const OxTensorMeta *tm = x->meta.kind == OX_META_TENSOR ? x->meta.t : NULL;
    bool stat = tm && tm->rank >= 0;
    for (int32_t k = 0; stat && k < tm->rank; k++)
      stat = !tm->shape[k].sym;
    if (stat && !(tm->rank == 1 && tm->shape[0].v == 0)) first = tm;
  }
  if (!first) return evfail(ev, OX_REASON_META_MISSING, "x", "the inputs of the cat");
  int64_t rank = op == OX_OPID_STACK ? first->rank + 1 : first->rank;
  int64_t d = oa.slot[1]->u.i < 0 ? oa.slot[1]->u.i + rank : oa.slot[1]->u.i;
  if (d < 0 || d >= rank) return everr(ev, "cat_dim(): the dim of %s is out of range", n->name);
  *out = d;
  return true;
}

/* ------------------------------------------------------------------ creating nodes (templates) */

static void push_created(Ev *ev, OxNodeId id) {
  if (ev->n_created == ev->cap_created) {
    ev->cap_created = ev->cap_created ? ev->cap_created * 2 : 16;
    ev->created = ox_xrealloc(ev->created, ev->cap_created * sizeof *ev->created);
  }
  ev->created[ev->n_created++] = id;
}

static bool was_created(const Ev *ev, OxNodeId id) {
  for (uint32_t i = 0; i < ev->n_created; i++)
    if (ev->created[i] == id) return true;
  return false;
}

static void infer_meta(OxGraph *g, OxNodeId id) {
  OxMeta m;
  char err[256];
  if (ox_shape_infer_node(g, id, &m, err, sizeof err) == 0) {
    m.inferred = true;
    ox_graph_set_meta_shared(g, id, &m);
  }
}

/* A created call must make sense to the op table (arity, keywords). */
static bool check_created(Ev *ev, OxNodeId id) {
  const OxNode *n = &ev->g->nodes[id];
  if (ox_op_of_node(ev->g, n, NULL) == OX_OPID_NONE) return true;
  OxOpArgs oa;
  char err[200];
  if (ox_op_normalize(ev->g, n, &oa, err, sizeof err) != 0) return everr(ev, "replace: %s", err);
  return true;
}

/* Values a replacement puts into a node are at most this deep, well within what every loader
 * reads back (256 levels, JSON counting its own structure too): a rule applied again and again
 * to its own output (m => f([args(m)])) cannot grow a tree the writers, the trace and the
 * loaders would have to recurse through without bound. */
#define EV_MAX_VALUE_DEPTH 128

/* Whether v is nested deeper than `left` levels; recurses at most left + 1 deep. */
static bool value_too_deep(const OxValue *v, uint32_t left) {
  if (v->kind != OX_V_LIST && v->kind != OX_V_TUPLE && v->kind != OX_V_DICT) return false;
  if (!left) return true;
  for (uint32_t i = 0; i < v->n; i++)
    if (value_too_deep(&v->u.items[i], left - 1)) return true;
  return false;
}

static OxNodeId create(Ev *ev, OxOp kind, const char *target, OxValue args, OxValue kwargs) {
  if (value_too_deep(&args, EV_MAX_VALUE_DEPTH) || value_too_deep(&kwargs, EV_MAX_VALUE_DEPTH)) {
    everr(ev, "the arguments of a new %s are nested deeper than %u levels", target, EV_MAX_VALUE_DEPTH);
    return 0;
  }
  OxNodeId id = ev->before ? ox_graph_insert_before(ev->g, ev->before, kind, NULL, target, args, kwargs)
                           : ox_graph_add_node(ev->g, kind, NULL, target, args, kwargs);
  infer_meta(ev->g, id);
  push_created(ev, id);
  return check_created(ev, id) ? id : 0;
}

static const char *aten_spelled(Ev *ev, const char *bare) {
  if (!ev->torch_ops) return ox_graph_intern(ev->g, bare);
  char b[200];
  snprintf(b, sizeof b, "torch.ops.%s", bare);
  return ox_graph_intern(ev->g, b);
}

/* getitem(base, k), placed after base (after the getitems made for base in this step) */
static OxNodeId project(Ev *ev, OxNodeId base, int64_t k) {
  if (!tick(ev)) return 0;
  const OxNode *b = ox_graph_node(ev->g, base);
  if (!b || b->erased) return everr(ev, "getitem of a node that no longer exists"), 0;
  OxNodeId after = base;
  uint32_t slot = ev->n_proj;
  for (uint32_t i = 0; i < ev->n_proj; i++)
    if (ev->proj_base[i] == base) {
      slot = i;
      if (!ev->g->nodes[ev->proj_last[i]].erased) after = ev->proj_last[i];
    }
  OxValue a[2] = {ox_value_node(base), ox_value_int(k)};
  OxNodeId id = ox_graph_insert_after(ev->g, after, OX_OP_CALL_FUNCTION, NULL, "operator.getitem",
                                      ox_graph_value_seq(ev->g, OX_V_TUPLE, a, 2), ox_value_none());
  infer_meta(ev->g, id);
  push_created(ev, id);
  if (slot == ev->n_proj) {
    if (ev->n_proj == ev->cap_proj) {
      ev->cap_proj = ev->cap_proj ? ev->cap_proj * 2 : 8;
      ev->proj_base = ox_xrealloc(ev->proj_base, ev->cap_proj * sizeof *ev->proj_base);
      ev->proj_last = ox_xrealloc(ev->proj_last, ev->cap_proj * sizeof *ev->proj_last);
    }
    ev->proj_base[ev->n_proj++] = base;
  }
  ev->proj_last[slot] = id;
  return id;
}

/* Erases a node; the insertion point moves past it first. */
static void erase_node(Ev *ev, OxNodeId id) {
  OxGraph *g = ev->g;
  if (id == ev->before) {
    OxNodeId nx = g->nodes[id].next;
    while (nx && g->nodes[nx].erased)
      nx = g->nodes[nx].next;
    ev->before = nx;
  }
  if (ox_graph_erase(g, id)) ev->changed = true;
}

/* Every use of t becomes a use of v; t is erased when nothing uses it any more. */
static void replace_uses(Ev *ev, OxNodeId t, OxNodeId v) {
  OxGraph *g = ev->g;
  if (t == v) return;
  uint32_t nu = g->nodes[t].n_users;
  OxNodeId *us = ox_xcalloc(nu + 1, sizeof *us);
  memcpy(us, g->nodes[t].users, nu * sizeof *us);
  if (ox_graph_replace_all_uses(g, t, v)) ev->changed = true;
  for (uint32_t i = 0; i < nu && !ev->need_sort; i++) /* a replacement defined after a user of t */
    if (us[i] != v && !g->nodes[us[i]].erased && !ox_graph_before(g, v, us[i])) ev->need_sort = true;
  free(us);
  /* a created replacement whose meta could not be inferred computes t's value: t's meta */
  if (was_created(ev, v) && g->nodes[v].meta.kind == OX_META_NONE && g->nodes[t].meta.kind != OX_META_NONE) {
    OxMeta m = g->nodes[t].meta;
    ox_graph_set_meta_shared(g, v, &m);
  }
  if (!g->nodes[t].n_users && !ox_pat_is_mutating(g, t)) erase_node(ev, t);
}

/* ------------------------------------------------------------------ builtins */

typedef bool (*BiFn)(Ev *ev, const Expr *x, RV *a, uint32_t n, RV *out);

#define BI(name) static bool bi_##name(Ev *ev, const Expr *x, RV *a, uint32_t n, RV *out)
#define UNUSED_BI (void)x, (void)n

BI(len) {
  UNUSED_BI;
  if (a[0].k == V_STR) return *out = rv_int((int64_t)strlen(a[0].u.s)), true;
  if (!want_list(ev, &a[0], "len()")) return false;
  *out = rv_int(a[0].n);
  return true;
}

static bool fold(Ev *ev, const RV *l, bool prod, RV *out, const char *fn) {
  if (!want_list(ev, l, fn)) return false;
  bool flt = false;
  int64_t ai = prod ? 1 : 0;
  double af = prod ? 1 : 0;
  for (uint32_t i = 0; i < l->n; i++) {
    const RV *v = &l->u.items[i];
    if (!is_num(v)) return everr(ev, "%s needs numbers, item %u is %s", fn, i, rv_kind_name(v));
    if (v->k == V_FLOAT) flt = true;
    af = prod ? af * num(v) : af + num(v);
    if (v->k == V_INT &&
        (prod ? __builtin_mul_overflow(ai, v->u.i, &ai) : __builtin_add_overflow(ai, v->u.i, &ai)))
      return everr(ev, "%s overflows", fn);
  }
  *out = flt ? (RV){.k = V_FLOAT, .u.f = af} : rv_int(ai);
  return true;
}

BI(sum) {
  UNUSED_BI;
  return fold(ev, &a[0], false, out, "sum()");
}
BI(prod) {
  UNUSED_BI;
  return fold(ev, &a[0], true, out, "prod()");
}

static bool minmax(Ev *ev, RV *a, uint32_t n, bool mx, RV *out, const char *fn) {
  RV *items = a;
  uint32_t cnt = n;
  if (n == 1) {
    if (!want_list(ev, &a[0], fn)) return false;
    items = a[0].u.items;
    cnt = a[0].n;
  }
  if (!cnt) return everr(ev, "%s of an empty list", fn);
  const RV *best = NULL;
  for (uint32_t i = 0; i < cnt; i++) {
    if (!is_num(&items[i])) return everr(ev, "%s needs numbers, got %s", fn, rv_kind_name(&items[i]));
    if (!best || (mx ? num(&items[i]) > num(best) : num(&items[i]) < num(best))) best = &items[i];
  }
  *out = *best;
  out->src = NULL;
  return true;
}

BI(min) {
  (void)x;
  return minmax(ev, a, n, false, out, "min()");
}
BI(max) {
  (void)x;
  return minmax(ev, a, n, true, out, "max()");
}

BI(abs) {
  UNUSED_BI;
  if (a[0].k == V_INT) return *out = rv_int(a[0].u.i < 0 ? -a[0].u.i : a[0].u.i), true;
  if (a[0].k == V_FLOAT) return *out = (RV){.k = V_FLOAT, .u.f = fabs(a[0].u.f)}, true;
  return everr(ev, "abs() needs a number, got %s", rv_kind_name(&a[0]));
}

BI(range) {
  (void)x;
  int64_t lo = 0, hi = 0;
  if (n == 2) {
    if (!want_int(ev, &a[0], "range()", &lo) || !want_int(ev, &a[1], "range()", &hi)) return false;
  } else if (!want_int(ev, &a[0], "range()", &hi)) {
    return false;
  }
  int64_t cnt = hi > lo ? hi - lo : 0;
  if (cnt > EV_MAX_LIST) return everr(ev, "range() of %lld items is too long", (long long)cnt);
  RV *it = rv_alloc(ev, (uint32_t)cnt);
  for (int64_t i = 0; i < cnt; i++)
    it[i] = rv_int(lo + i);
  *out = rv_list(it, (uint32_t)cnt);
  return true;
}

static bool allany(Ev *ev, const RV *l, bool all, RV *out, const char *fn) {
  if (!want_list(ev, l, fn)) return false;
  for (uint32_t i = 0; i < l->n; i++) {
    if (l->u.items[i].k != V_BOOL)
      return everr(ev, "%s needs booleans, item %u is %s", fn, i, rv_kind_name(&l->u.items[i]));
    if (l->u.items[i].u.b != all) {
      if (all) snprintf(ev->evidence, sizeof ev->evidence, "item %u is False", i);
      *out = rv_bool(!all);
      return true;
    }
  }
  if (!all) snprintf(ev->evidence, sizeof ev->evidence, "no item of %u is True", l->n);
  *out = rv_bool(all);
  return true;
}

BI(all) {
  UNUSED_BI;
  return allany(ev, &a[0], true, out, "all()");
}
BI(any) {
  UNUSED_BI;
  return allany(ev, &a[0], false, out, "any()");
}

BI(all_equal) {
  UNUSED_BI;
  if (!want_list(ev, &a[0], "all_equal()")) return false;
  for (uint32_t i = 1; i < a[0].n; i++)
    if (!rv_eq(&a[0].u.items[0], &a[0].u.items[i])) {
      char b1[96], b2[96];
      snprintf(ev->evidence, sizeof ev->evidence, "item 0 is %s, item %u is %s",
               rv_text(ev, &a[0].u.items[0], b1, sizeof b1), i, rv_text(ev, &a[0].u.items[i], b2, sizeof b2));
      return *out = rv_bool(false), true;
    }
  *out = rv_bool(true);
  return true;
}

BI(consecutive) {
  UNUSED_BI;
  if (!want_list(ev, &a[0], "consecutive()")) return false;
  for (uint32_t i = 0; i < a[0].n; i++) {
    int64_t v = 0;
    if (!want_int(ev, &a[0].u.items[i], "consecutive()", &v)) return false;
    if (i && v != a[0].u.items[i - 1].u.i + 1) {
      char b[200];
      snprintf(ev->evidence, sizeof ev->evidence, "indices %s are not consecutive and increasing",
               rv_text(ev, &a[0], b, sizeof b));
      return *out = rv_bool(false), true;
    }
  }
  *out = rv_bool(true);
  return true;
}

BI(unique) {
  UNUSED_BI;
  if (!want_list(ev, &a[0], "unique()")) return false;
  RV *it = rv_alloc(ev, a[0].n);
  uint32_t k = 0;
  for (uint32_t i = 0; i < a[0].n; i++) {
    bool dup = false;
    for (uint32_t j = 0; j < k && !dup; j++)
      dup = rv_eq(&it[j], &a[0].u.items[i]);
    if (!tick(ev)) return false;
    if (!dup) it[k++] = a[0].u.items[i];
  }
  *out = rv_list(it, k);
  return true;
}

BI(concat) {
  UNUSED_BI;
  if (!want_list(ev, &a[0], "concat()")) return false;
  uint64_t total = 0;
  for (uint32_t i = 0; i < a[0].n; i++) {
    if (!want_list(ev, &a[0].u.items[i], "concat() item")) return false;
    total += a[0].u.items[i].n;
  }
  if (total > EV_MAX_LIST) return everr(ev, "concat(): list too long");
  RV *it = rv_alloc(ev, (uint32_t)total);
  uint32_t k = 0;
  for (uint32_t i = 0; i < a[0].n; i++)
    for (uint32_t j = 0; j < a[0].u.items[i].n; j++)
      it[k++] = a[0].u.items[i].u.items[j];
  *out = rv_list(it, k);
  return true;
}

BI(list) {
  UNUSED_BI;
  if (!want_list(ev, &a[0], "list()")) return false;
  *out = a[0];
  out->src = NULL; /* a list, even if it was a tuple */
  return true;
}

BI(norm_dim) {
  UNUSED_BI;
  int64_t d = 0, r = 0;
  if (!want_int(ev, &a[0], "norm_dim()", &d) || !want_int(ev, &a[1], "norm_dim()", &r)) return false;
  int64_t v = d < 0 ? d + r : d;
  if (v < 0 || v >= (r ? r : 1))
    return everr(ev, "dim %lld is out of range for rank %lld", (long long)d, (long long)r);
  *out = rv_int(v);
  return true;
}

BI(shape) {
  UNUSED_BI;
  OxNodeId id;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "shape", &id) || !(t = meta_of(ev, id, true))) return false;
  RV *it = rv_alloc(ev, (uint32_t)t->rank);
  for (int32_t i = 0; i < t->rank; i++)
    it[i] = rv_int(t->shape[i].v);
  *out = rv_list(it, (uint32_t)t->rank);
  return true;
}

BI(stride) {
  UNUSED_BI;
  OxNodeId id;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "stride", &id) || !(t = meta_of(ev, id, false))) return false;
  if (!t->has_stride) return everr(ev, "stride(): %s has no strides in its meta", node_name(ev, id));
  RV *it = rv_alloc(ev, (uint32_t)t->rank);
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->stride[i].sym) return evfail(ev, OX_REASON_SYMBOLIC, "nx", node_name(ev, id), t->stride[i].sym);
    it[i] = rv_int(t->stride[i].v);
  }
  *out = rv_list(it, (uint32_t)t->rank);
  return true;
}

BI(rank) {
  UNUSED_BI;
  OxNodeId id;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "rank", &id) || !(t = meta_of(ev, id, false))) return false;
  *out = rv_int(t->rank);
  return true;
}

BI(size) {
  UNUSED_BI;
  OxNodeId id;
  int64_t d = 0;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "size", &id) || !want_int(ev, &a[1], "size()", &d) ||
      !(t = meta_of(ev, id, false)))
    return false;
  int64_t k = d < 0 ? d + t->rank : d;
  if (k < 0 || k >= t->rank)
    return everr(ev, "size(): dim %lld out of range for %s of rank %d", (long long)d, node_name(ev, id),
                 t->rank);
  if (t->shape[k].sym) return evfail(ev, OX_REASON_SYMBOLIC, "nx", node_name(ev, id), t->shape[k].sym);
  *out = rv_int(t->shape[k].v);
  return true;
}

BI(numel) {
  UNUSED_BI;
  OxNodeId id;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "numel", &id) || !(t = meta_of(ev, id, true))) return false;
  int64_t v = 1;
  for (int32_t i = 0; i < t->rank; i++)
    if (__builtin_mul_overflow(v, t->shape[i].v, &v)) return everr(ev, "numel() overflows");
  *out = rv_int(v);
  return true;
}

BI(dtype) {
  UNUSED_BI;
  OxNodeId id;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "dtype", &id) || !(t = meta_of(ev, id, false))) return false;
  *out = (RV){.k = V_DTYPE, .u.dt = t->dtype};
  return true;
}

BI(device) {
  UNUSED_BI;
  OxNodeId id;
  const OxTensorMeta *t;
  if (!want_node(ev, &a[0], "device", &id) || !(t = meta_of(ev, id, false))) return false;
  *out = rv_str(t->device ? t->device : "");
  return true;
}

BI(has_meta) {
  UNUSED_BI;
  if (a[0].k != V_NODE) return *out = rv_bool(false), true;
  const OxNode *nd = ox_graph_node(ev->g, a[0].u.node);
  const OxTensorMeta *t = nd && nd->meta.kind == OX_META_TENSOR ? nd->meta.t : NULL;
  bool ok = t && t->rank >= 0;
  for (int32_t i = 0; ok && i < t->rank; i++)
    ok = !t->shape[i].sym;
  if (!ok) snprintf(ev->evidence, sizeof ev->evidence, "%s has no static tensor meta", nd ? nd->name : "?");
  *out = rv_bool(ok);
  return true;
}

BI(is_float) {
  UNUSED_BI;
  if (a[0].k != V_DTYPE) return everr(ev, "is_float() needs a dtype, got %s", rv_kind_name(&a[0]));
  *out = rv_bool(ox_dtype_is_float(a[0].u.dt));
  return true;
}

BI(users) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "users", &id)) return false;
  *out = rv_int(ev->g->nodes[id].n_users);
  return true;
}

BI(user_list) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "user_list", &id)) return false;
  const OxNode *nd = &ev->g->nodes[id];
  RV *it = rv_alloc(ev, nd->n_users);
  for (uint32_t i = 0; i < nd->n_users; i++)
    it[i] = rv_node(nd->users[i]);
  *out = rv_list(it, nd->n_users);
  return true;
}

BI(no_other_users) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "no_other_users", &id)) return false;
  const OxNode *nd = &ev->g->nodes[id];
  for (uint32_t i = 0; i < nd->n_users; i++)
    if (!in_matched(ev, nd->users[i])) {
      snprintf(ev->evidence, sizeof ev->evidence, "%s is also used by %s, outside the match", nd->name,
               node_name(ev, nd->users[i]));
      return *out = rv_bool(false), true;
    }
  *out = rv_bool(true);
  return true;
}

BI(not_mutated) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "not_mutated", &id)) return false;
  const OxNode *nd = &ev->g->nodes[id];
  for (uint32_t i = 0; i < nd->n_users; i++)
    if (ox_pat_is_mutating(ev->g, nd->users[i])) {
      snprintf(ev->evidence, sizeof ev->evidence, "%s is mutated by %s", nd->name,
               node_name(ev, nd->users[i]));
      return *out = rv_bool(false), true;
    }
  *out = rv_bool(true);
  return true;
}

BI(is_mutating) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "is_mutating", &id)) return false;
  *out = rv_bool(ox_pat_is_mutating(ev->g, id));
  return true;
}

BI(target) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "target", &id)) return false;
  *out = rv_str(ev->g->nodes[id].target);
  return true;
}

BI(op) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "op", &id)) return false;
  OxOpId op = ox_op_of_node(ev->g, &ev->g->nodes[id], NULL);
  const OxOpInfo *in = op ? ox_op_info(op) : NULL;
  *out = rv_str(in ? in->name : "");
  return true;
}

BI(kind) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "kind", &id)) return false;
  *out = rv_str(ox_op_name((OxOp)ev->g->nodes[id].op));
  return true;
}

BI(n_args) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "n_args", &id)) return false;
  *out = rv_int(ev->g->nodes[id].args.n);
  return true;
}

BI(args) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "args", &id)) return false;
  *out = rv_from_value(ev, &ev->g->nodes[id].args, false);
  out->k = V_LIST;
  return true;
}

BI(kw_names) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "kw_names", &id)) return false;
  const OxValue *kw = &ev->g->nodes[id].kwargs;
  uint32_t nk = kw->kind == OX_V_DICT ? kw->n : 0;
  RV *it = rv_alloc(ev, nk);
  for (uint32_t i = 0; i < nk; i++)
    it[i] = rv_str(kw->keys[i]);
  *out = rv_list(it, nk);
  return true;
}

BI(kwarg) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "kwarg", &id)) return false;
  if (a[1].k != V_STR) return everr(ev, "kwarg() needs a keyword name");
  const OxValue *kw = &ev->g->nodes[id].kwargs;
  for (uint32_t i = 0; kw->kind == OX_V_DICT && i < kw->n; i++)
    if (strcmp(kw->keys[i], a[1].u.s) == 0) return *out = rv_from_value(ev, &kw->u.items[i], true), true;
  *out = (RV){.k = V_NONE};
  return true;
}

BI(arg) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "arg", &id)) return false;
  const OxNode *nd = &ev->g->nodes[id];
  OxOpArgs oa;
  char err[200];
  if (ox_op_normalize(ev->g, nd, &oa, err, sizeof err) != 0) return everr(ev, "arg(): %s", err);
  const OxOpInfo *info = ox_op_info(oa.op);
  int64_t k = -1;
  if (a[1].k == V_INT) {
    k = a[1].u.i;
  } else if (a[1].k == V_STR) {
    for (uint32_t s = 0; info && s < info->n_slots; s++)
      if (strcmp(info->slot_names[s], a[1].u.s) == 0) k = s;
    if (k < 0)
      return everr(ev, "arg(): %s has no argument '%s' (op %s)", nd->name, a[1].u.s, info ? info->name : "?");
  } else {
    return everr(ev, "arg() takes an argument name or position");
  }
  if (k < 0 || k >= (int64_t)oa.n_slots)
    return everr(ev, "arg(): %s has no argument %lld", nd->name, (long long)k);
  /* a packed varargs slot lives in oa: do not keep a pointer to it */
  *out = rv_from_value(ev, oa.slot[k], oa.slot[k] != &oa.packed);
  return true;
}

BI(input) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "input", &id)) return false;
  const OxNode *nd = &ev->g->nodes[id];
  OxOpArgs oa;
  char err[200];
  if (ox_op_normalize(ev->g, nd, &oa, err, sizeof err) != 0) return everr(ev, "input(): %s", err);
  if (!oa.n_slots || oa.slot[0]->kind != OX_V_NODE)
    return everr(ev, "input(): the first argument of %s is not a node", nd->name);
  *out = rv_node(oa.slot[0]->u.node);
  return true;
}

BI(is_aten) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "is_aten", &id)) return false;
  *out = rv_bool(node_is_aten(ev->g, id));
  return true;
}

BI(sections) {
  UNUSED_BI;
  OxNodeId id;
  SplitInfo si;
  if (!want_node(ev, &a[0], "sections", &id) || !split_info(ev, id, &si, "sections")) return false;
  RV *it = rv_alloc(ev, si.n);
  for (uint32_t i = 0; i < si.n; i++)
    it[i] = rv_int(si.sec[i]);
  *out = rv_list(it, si.n);
  return true;
}

BI(split_dim) {
  UNUSED_BI;
  OxNodeId id;
  SplitInfo si;
  if (!want_node(ev, &a[0], "split_dim", &id) || !split_info(ev, id, &si, "split_dim")) return false;
  *out = rv_int(si.dim);
  return true;
}

BI(cat_dim) {
  UNUSED_BI;
  OxNodeId id;
  int64_t d = 0;
  if (!want_node(ev, &a[0], "cat_dim", &id) || !cat_dim_of(ev, id, &d)) return false;
  *out = rv_int(d);
  return true;
}

BI(is_node) {
  UNUSED_BI;
  (void)ev;
  *out = rv_bool(a[0].k == V_NODE);
  return true;
}
BI(is_int) {
  UNUSED_BI;
  (void)ev;
  *out = rv_bool(a[0].k == V_INT);
  return true;
}
BI(is_list) {
  UNUSED_BI;
  (void)ev;
  *out = rv_bool(a[0].k == V_LIST);
  return true;
}
BI(is_none) {
  UNUSED_BI;
  (void)ev;
  *out = rv_bool(a[0].k == V_NONE);
  return true;
}

static bool has_node(const RV *v) {
  if (v->k == V_NODE) return true;
  for (uint32_t i = 0; v->k == V_LIST && i < v->n; i++)
    if (has_node(&v->u.items[i])) return true;
  return false;
}

BI(is_const) {
  UNUSED_BI;
  (void)ev;
  *out = rv_bool(!has_node(&a[0]));
  return true;
}
BI(is_tuple) {
  UNUSED_BI;
  (void)ev;
  *out = rv_bool(a[0].k == V_LIST && a[0].src && a[0].src->kind == OX_V_TUPLE);
  return true;
}
BI(is_sym) {
  UNUSED_BI;
  (void)ev;
  *out = rv_bool(a[0].k == V_RAW && a[0].src && a[0].src->kind == OX_V_SYM);
  return true;
}

/* the op table can map the node's arguments onto its op's slots */
BI(well_formed) {
  UNUSED_BI;
  OxNodeId id;
  if (!want_node(ev, &a[0], "well_formed", &id)) return false;
  OxOpArgs oa;
  char err[200];
  bool ok = ox_op_normalize(ev->g, &ev->g->nodes[id], &oa, err, sizeof err) == 0;
  if (!ok) snprintf(ev->evidence, sizeof ev->evidence, "%s", err);
  *out = rv_bool(ok);
  return true;
}

/* x[..., start:end] along dim: pre-grad a getitem with slices, post-grad aten.slice.Tensor */
BI(slice_dim) {
  UNUSED_BI;
  OxNodeId src;
  int64_t d = 0, s0 = 0, s1 = 0;
  if (!want_node(ev, &a[0], "slice_dim", &src) || !want_int(ev, &a[1], "slice_dim() dim", &d) ||
      !want_int(ev, &a[2], "slice_dim() start", &s0) || !want_int(ev, &a[3], "slice_dim() end", &s1))
    return false;
  if (d < 0 || d > 64) return everr(ev, "slice_dim(): dim %lld must be a normalized dim", (long long)d);
  OxNodeId id;
  if (ev->aten) {
    OxValue v[4] = {ox_value_node(src), ox_value_int(d), ox_value_int(s0), ox_value_int(s1)};
    id = create(ev, OX_OP_CALL_FUNCTION, aten_spelled(ev, "aten.slice.Tensor"),
                ox_graph_value_seq(ev->g, OX_V_TUPLE, v, 4), ox_value_none());
  } else {
    OxValue sl[65];
    for (int64_t i = 0; i <= d; i++) {
      OxValue t[3] = {ox_value_none(), ox_value_none(), ox_value_none()};
      if (i == d) {
        t[0] = ox_value_int(s0);
        t[1] = ox_value_int(s1);
      }
      sl[i] = ox_graph_value_seq(ev->g, OX_V_SLICE, t, 3);
    }
    OxValue v[2] = {ox_value_node(src), ox_graph_value_seq(ev->g, OX_V_TUPLE, sl, (uint32_t)d + 1)};
    id = create(ev, OX_OP_CALL_FUNCTION, "operator.getitem", ox_graph_value_seq(ev->g, OX_V_TUPLE, v, 2),
                ox_value_none());
  }
  if (!id) return false;
  *out = rv_node(id);
  return true;
}

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

static const Builtin builtins[] = {
    {"len", 1, 1, "q", TY_INT, 0, false, false, bi_len},
    {"sum", 1, 1, "l", TY_INT, 0, false, true, bi_sum},
    {"prod", 1, 1, "l", TY_INT, 0, false, true, bi_prod},
    {"min", 1, 16, "x", TY_INT, 0, false, true, bi_min},
    {"max", 1, 16, "x", TY_INT, 0, false, true, bi_max},
    {"abs", 1, 1, "x", TY_INT, 0, false, true, bi_abs},
    {"range", 1, 2, "i", TY_LIST, TY_INT, false, false, bi_range},
    {"all", 1, 1, "l", TY_BOOL, 0, false, false, bi_all},
    {"any", 1, 1, "l", TY_BOOL, 0, false, false, bi_any},
    {"all_equal", 1, 1, "l", TY_BOOL, 0, false, false, bi_all_equal},
    {"consecutive", 1, 1, "l", TY_BOOL, 0, false, false, bi_consecutive},
    {"unique", 1, 1, "l", TY_LIST, 0, false, false, bi_unique},
    {"concat", 1, 1, "l", TY_LIST, 0, false, false, bi_concat},
    {"list", 1, 1, "l", TY_LIST, 0, false, false, bi_list},
    {"norm_dim", 2, 2, "i", TY_INT, 0, false, false, bi_norm_dim},
    {"shape", 1, 1, "n", TY_LIST, TY_INT, false, false, bi_shape},
    {"stride", 1, 1, "n", TY_LIST, TY_INT, false, false, bi_stride},
    {"rank", 1, 1, "n", TY_INT, 0, false, false, bi_rank},
    {"size", 2, 2, "ni", TY_INT, 0, false, false, bi_size},
    {"numel", 1, 1, "n", TY_INT, 0, false, false, bi_numel},
    {"dtype", 1, 1, "n", TY_DTYPE, 0, false, false, bi_dtype},
    {"device", 1, 1, "n", TY_STR, 0, false, false, bi_device},
    {"has_meta", 1, 1, "a", TY_BOOL, 0, false, false, bi_has_meta},
    {"is_float", 1, 1, "d", TY_BOOL, 0, false, false, bi_is_float},
    {"users", 1, 1, "n", TY_INT, 0, false, false, bi_users},
    {"user_list", 1, 1, "n", TY_LIST, TY_NODE, false, false, bi_user_list},
    {"no_other_users", 1, 1, "n", TY_BOOL, 0, false, false, bi_no_other_users},
    {"not_mutated", 1, 1, "n", TY_BOOL, 0, false, false, bi_not_mutated},
    {"is_mutating", 1, 1, "n", TY_BOOL, 0, false, false, bi_is_mutating},
    {"target", 1, 1, "n", TY_STR, 0, false, false, bi_target},
    {"op", 1, 1, "n", TY_STR, 0, false, false, bi_op},
    {"kind", 1, 1, "n", TY_STR, 0, false, false, bi_kind},
    {"n_args", 1, 1, "n", TY_INT, 0, false, false, bi_n_args},
    {"args", 1, 1, "n", TY_LIST, 0, false, false, bi_args},
    {"kw_names", 1, 1, "n", TY_LIST, TY_STR, false, false, bi_kw_names},
    {"kwarg", 2, 2, "ns", TY_ANY, 0, false, false, bi_kwarg},
    {"arg", 2, 2, "nk", TY_ANY, 0, false, false, bi_arg},
    {"input", 1, 1, "n", TY_NODE, 0, false, false, bi_input},
    {"is_aten", 1, 1, "n", TY_BOOL, 0, false, false, bi_is_aten},
    {"sections", 1, 1, "n", TY_LIST, TY_INT, false, false, bi_sections},
    {"split_dim", 1, 1, "n", TY_INT, 0, false, false, bi_split_dim},
    {"cat_dim", 1, 1, "n", TY_INT, 0, false, false, bi_cat_dim},
    {"is_node", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_node},
    {"is_int", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_int},
    {"is_list", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_list},
    {"is_none", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_none},
    {"is_const", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_const},
    {"is_tuple", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_tuple},
    {"is_sym", 1, 1, "a", TY_BOOL, 0, false, false, bi_is_sym},
    {"well_formed", 1, 1, "n", TY_BOOL, 0, false, false, bi_well_formed},
    {"slice_dim", 4, 4, "niii", TY_NODE, 0, true, false, bi_slice_dim},
};

static int builtin_find(const char *name) {
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
    if (strcmp(builtins[i].name, name) == 0) return (int)i;
  return -1;
}

/* ------------------------------------------------------------------ evaluation */

static bool eval(Ev *ev, const Expr *x, RV *out);

static bool want_bool(Ev *ev, const Expr *x, const RV *v, bool *b) {
  if (v->k != V_BOOL) {
    char buf[96];
    return everr(ev, "%.*s needs a boolean, got %s %s", 60, x->s ? x->s : "a condition", rv_kind_name(v),
                 rv_text(ev, v, buf, sizeof buf));
  }
  *b = v->u.b;
  return true;
}

static bool eval_call(Ev *ev, const Expr *x, RV *out) {
  RV args[32], kv[16];
  for (uint32_t i = 0; i < x->n; i++)
    if (!eval(ev, x->a[i], &args[i])) return false;
  for (uint32_t i = 0; i < x->nk; i++)
    if (!eval(ev, x->kv[i], &kv[i])) return false;
  if (x->builtin >= 0) return builtins[x->builtin].fn(ev, x, args, x->n, out);
  if (!ev->tmpl) return everr(ev, "%s(...) creates a node: only in replace:", x->s);
  const char *target = ev->aten ? x->post_target : x->pre_target;
  OxOp kind = (OxOp)(ev->aten ? x->post_kind : x->pre_kind);
  bool aten_spelling = (x->i >> (ev->aten ? 1 : 0)) & 1;
  if (!target)
    return everr(ev, "op %s has no %s spelling to create", x->s,
                 ev->aten ? "aten (post-grad)" : "torch (pre-grad)");
  if (aten_spelling) target = aten_spelled(ev, target);
  OxValue vals[32], kvals[16];
  for (uint32_t i = 0; i < x->n; i++)
    if (!rv_to_value(ev, &args[i], &vals[i])) return false;
  for (uint32_t i = 0; i < x->nk; i++)
    if (!rv_to_value(ev, &kv[i], &kvals[i])) return false;
  OxValue kwargs = x->nk ? ox_graph_value_dict(ev->g, x->kw, kvals, x->nk) : ox_value_none();
  OxNodeId id = create(ev, kind, target, ox_graph_value_seq(ev->g, OX_V_TUPLE, vals, x->n), kwargs);
  if (!id) return false;
  *out = rv_node(id);
  return true;
}

static bool arith(Ev *ev, uint8_t op, const RV *a, const RV *b, RV *out) {
  if (!is_num(a) || !is_num(b))
    return everr(ev, "'%s' needs numbers, got %s and %s", bin_names[op], rv_kind_name(a), rv_kind_name(b));
  if (op == B_DIV) {
    if (num(b) == 0) return everr(ev, "division by zero");
    *out = (RV){.k = V_FLOAT, .u.f = num(a) / num(b)};
    return true;
  }
  if (a->k == V_INT && b->k == V_INT) {
    int64_t x = a->u.i, y = b->u.i, r = 0;
    bool ovf = false;
    switch (op) {
    case B_ADD:
      ovf = __builtin_add_overflow(x, y, &r);
      break;
    case B_SUB:
      ovf = __builtin_sub_overflow(x, y, &r);
      break;
    case B_MUL:
      ovf = __builtin_mul_overflow(x, y, &r);
      break;
    case B_FDIV:
    case B_MOD:
      if (y == 0) return everr(ev, "division by zero");
      if (x == INT64_MIN && y == -1) {
        ovf = true;
        break;
      }
      r = op == B_FDIV ? x / y : x % y;
      if (op == B_FDIV && (x % y != 0) && ((x < 0) != (y < 0))) r--; /* Python's floor division */
      if (op == B_MOD && r != 0 && ((r < 0) != (y < 0))) r += y;
      break;
    default:
      break;
    }
    if (ovf) return everr(ev, "integer overflow in '%s'", bin_names[op]);
    *out = rv_int(r);
    return true;
  }
  double x = num(a), y = num(b), r = 0;
  switch (op) {
  case B_ADD:
    r = x + y;
    break;
  case B_SUB:
    r = x - y;
    break;
  case B_MUL:
    r = x * y;
    break;
  case B_FDIV:
  case B_MOD:
    if (y == 0) return everr(ev, "division by zero");
    r = op == B_FDIV ? floor(x / y) : x - y * floor(x / y);
    break;
  default:
    break;
  }
  *out = (RV){.k = V_FLOAT, .u.f = r};
  return true;
}

static bool eval_bin(Ev *ev, const Expr *x, RV *out) {
  RV a, b;
  if (x->op == B_AND || x->op == B_OR) {
    bool va = false, vb = false;
    if (!eval(ev, x->a[0], &a) || !want_bool(ev, x->a[0], &a, &va)) return false;
    if (x->op == B_AND ? !va : va) return *out = rv_bool(va), true;
    if (!eval(ev, x->a[1], &b) || !want_bool(ev, x->a[1], &b, &vb)) return false;
    return *out = rv_bool(vb), true;
  }
  if (!eval(ev, x->a[0], &a) || !eval(ev, x->a[1], &b)) return false;
  switch (x->op) {
  case B_EQ:
    *out = rv_bool(rv_eq(&a, &b));
    return true;
  case B_NE:
    *out = rv_bool(!rv_eq(&a, &b));
    return true;
  case B_LT:
  case B_LE:
  case B_GT:
  case B_GE: {
    int c;
    if (is_num(&a) && is_num(&b))
      c = num(&a) < num(&b) ? -1 : num(&a) > num(&b) ? 1 : 0;
    else if (a.k == V_STR && b.k == V_STR)
      c = strcmp(a.u.s, b.u.s);
    else
      return everr(ev, "'%s' needs numbers, got %s and %s", bin_names[x->op], rv_kind_name(&a),
                   rv_kind_name(&b));
    bool r = x->op == B_LT ? c < 0 : x->op == B_LE ? c <= 0 : x->op == B_GT ? c > 0 : c >= 0;
    *out = rv_bool(r);
    return true;
  }
  case B_IN:
    if (b.k == V_STR && a.k == V_STR) return *out = rv_bool(strstr(b.u.s, a.u.s) != NULL), true;
    if (!want_list(ev, &b, "'in'")) return false;
    for (uint32_t i = 0; i < b.n; i++)
      if (rv_eq(&a, &b.u.items[i])) return *out = rv_bool(true), true;
    *out = rv_bool(false);
    return true;
  case B_CAT: {
    if (a.k == V_STR && b.k == V_STR) {
      size_t la = strlen(a.u.s), lb = strlen(b.u.s);
      char *s = ox_arena_alloc(&ev->arena, la + lb + 1);
      memcpy(s, a.u.s, la);
      memcpy(s + la, b.u.s, lb + 1);
      return *out = rv_str(s), true;
    }
    if (!want_list(ev, &a, "'++'") || !want_list(ev, &b, "'++'")) return false;
    if ((uint64_t)a.n + b.n > EV_MAX_LIST) return everr(ev, "'++': list too long");
    RV *it = rv_alloc(ev, a.n + b.n);
    if (a.n) memcpy(it, a.u.items, a.n * sizeof *it);
    if (b.n) memcpy(it + a.n, b.u.items, b.n * sizeof *it);
    *out = rv_list(it, a.n + b.n);
    return true;
  }
  default:
    return arith(ev, x->op, &a, &b, out);
  }
}

static bool list_index(Ev *ev, const RV *l, int64_t k, RV *out) {
  int64_t i = k < 0 ? k + l->n : k;
  if (i < 0 || i >= (int64_t)l->n)
    return everr(ev, "index %lld is out of range for a list of %u", (long long)k, l->n);
  *out = l->u.items[i];
  return true;
}

static bool eval(Ev *ev, const Expr *x, RV *out) {
  if (!tick(ev)) return false;
  switch (x->k) {
  case X_INT:
    *out = rv_int(x->i);
    return true;
  case X_FLOAT:
    *out = (RV){.k = V_FLOAT, .u.f = x->f};
    return true;
  case X_STR:
    *out = rv_str(x->s);
    return true;
  case X_BOOL:
    *out = rv_bool(x->i != 0);
    return true;
  case X_NONE:
    *out = (RV){.k = V_NONE};
    return true;
  case X_DTYPE:
    *out = (RV){.k = V_DTYPE, .u.dt = x->dt};
    return true;
  case X_NAME:
    if (ev->env[x->slot].k == V_UNSET) return everr(ev, "'%s' is not bound in this match", x->s);
    *out = ev->env[x->slot];
    return true;
  case X_LIST: {
    RV *it = rv_alloc(ev, x->n);
    for (uint32_t i = 0; i < x->n; i++)
      if (!eval(ev, x->a[i], &it[i])) return false;
    *out = rv_list(it, x->n);
    return true;
  }
  case X_CALL:
    return eval_call(ev, x, out);
  case X_BIN:
    return eval_bin(ev, x, out);
  case X_NOT: {
    RV a;
    bool b = false;
    if (!eval(ev, x->a[0], &a) || !want_bool(ev, x->a[0], &a, &b)) return false;
    *out = rv_bool(!b);
    return true;
  }
  case X_NEG: {
    RV a;
    if (!eval(ev, x->a[0], &a)) return false;
    if (a.k == V_INT && a.u.i != INT64_MIN) return *out = rv_int(-a.u.i), true;
    if (a.k == V_FLOAT) return *out = (RV){.k = V_FLOAT, .u.f = -a.u.f}, true;
    return everr(ev, "'-' needs a number, got %s", rv_kind_name(&a));
  }
  case X_IF: {
    RV c;
    bool b = false;
    if (!eval(ev, x->a[0], &c) || !want_bool(ev, x->a[0], &c, &b)) return false;
    return eval(ev, x->a[b ? 1 : 2], out);
  }
  case X_INDEX: {
    RV base, idx;
    int64_t k = 0;
    if (!eval(ev, x->a[0], &base) || !eval(ev, x->a[1], &idx) || !want_int(ev, &idx, "an index", &k))
      return false;
    if (base.k == V_LIST) return list_index(ev, &base, k, out);
    if (base.k == V_NODE) {
      if (!ev->tmpl)
        return everr(ev, "indexing node %s creates a getitem: only in replace:", node_name(ev, base.u.node));
      OxNodeId id = project(ev, base.u.node, k);
      if (!id) return false;
      *out = rv_node(id);
      return true;
    }
    return everr(ev, "cannot index %s", rv_kind_name(&base));
  }
  case X_SLICE: {
    RV base, lo, hi;
    int64_t a = 0, b = 0;
    if (!eval(ev, x->a[0], &base) || !want_list(ev, &base, "slicing")) return false;
    b = base.n;
    if (x->a[1] && (!eval(ev, x->a[1], &lo) || !want_int(ev, &lo, "a slice bound", &a))) return false;
    if (x->a[2] && (!eval(ev, x->a[2], &hi) || !want_int(ev, &hi, "a slice bound", &b))) return false;
    int64_t n = base.n;
    if (a < 0) a = a + n < 0 ? 0 : a + n;
    if (b < 0) b = b + n < 0 ? 0 : b + n;
    if (a > n) a = n;
    if (b > n) b = n;
    if (b < a) b = a;
    *out = rv_list(base.u.items + a, (uint32_t)(b - a));
    return true;
  }
  case X_COMP: {
    RV l;
    if (!eval(ev, x->a[1], &l) || !want_list(ev, &l, "a comprehension")) return false;
    RV *it = rv_alloc(ev, l.n);
    uint32_t k = 0;
    for (uint32_t i = 0; i < l.n; i++) {
      ev->env[x->slot] = l.u.items[i];
      if (x->n == 3) {
        RV c;
        bool b = false;
        if (!eval(ev, x->a[2], &c) || !want_bool(ev, x->a[2], &c, &b)) return false;
        if (!b) continue;
      }
      if (!eval(ev, x->a[0], &it[k++])) return false;
    }
    ev->env[x->slot] = (RV){.k = V_UNSET};
    *out = rv_list(it, k);
    return true;
  }
  default:
    return everr(ev, "bad expression");
  }
}

/* Why a guard is false: the failing conjunct, with the values of both sides of a comparison. */
static void explain_false(Ev *ev, const Expr *x, const char *src, OxBuf *b) {
  if (x->k == X_BIN && x->op == B_AND) {
    RV a;
    bool va = eval(ev, x->a[0], &a) && a.k == V_BOOL && a.u.b;
    explain_false(ev, va ? x->a[1] : x->a[0], src, b);
    return;
  }
  if (x->k == X_BIN && x->op >= B_EQ && x->op <= B_IN) {
    size_t len0 = b->len;
    for (int side = 0; side < 2; side++) {
      const Expr *s = x->a[side];
      if (s->k == X_INT || s->k == X_FLOAT || s->k == X_STR || s->k == X_BOOL || s->k == X_NONE) continue;
      RV v = {0};
      char buf[160];
      if (!eval(ev, s, &v)) continue;
      if (b->len > len0) ox_buf_puts(b, ", ");
      ox_buf_printf(b, "%.*s is %s", (int)(s->end - s->off > 80 ? 80 : s->end - s->off), src + s->off,
                    rv_text(ev, &v, buf, sizeof buf));
    }
    if (b->len > len0) return;
  }
  if (x->k == X_CALL && x->builtin >= 0 && x->n == 1 && x->a[0]->k == X_COMP &&
      (!strcmp(x->s, "all") || !strcmp(x->s, "any"))) {
    /* all([cond for v in list]): the first element that fails, with v bound */
    const Expr *cp = x->a[0];
    RV l;
    bool all = !strcmp(x->s, "all");
    if (all && eval(ev, cp->a[1], &l) && l.k == V_LIST) {
      for (uint32_t i = 0; i < l.n; i++) {
        ev->env[cp->slot] = l.u.items[i];
        RV c = {0}, e = {0};
        if (cp->n == 3 && !(eval(ev, cp->a[2], &c) && c.k == V_BOOL && c.u.b)) continue;
        if (!eval(ev, cp->a[0], &e) || e.k != V_BOOL || e.u.b) continue;
        char buf[160];
        ox_buf_printf(b, "for %s = %s: ", cp->s, rv_text(ev, &l.u.items[i], buf, sizeof buf));
        explain_false(ev, cp->a[0], src, b);
        ev->env[cp->slot] = (RV){.k = V_UNSET};
        return;
      }
      ev->env[cp->slot] = (RV){.k = V_UNSET};
    }
  }
  if (x->k == X_NOT) {
    ox_buf_printf(b, "%.*s is True",
                  (int)(x->a[0]->end - x->a[0]->off > 100 ? 100 : x->a[0]->end - x->a[0]->off),
                  src + x->a[0]->off);
    return;
  }
  ev->evidence[0] = 0;
  RV v = {0};
  if (eval(ev, x, &v) && ev->evidence[0]) {
    ox_buf_puts(b, ev->evidence);
    return;
  }
  ox_buf_puts(b, "it is False");
}

/* ------------------------------------------------------------------ checker (names and types) */

static bool ty_fits(uint8_t have, char want) {
  if (have == TY_ANY) return true;
  switch (want) {
  case 'n':
    return have == TY_NODE;
  case 'l':
    return have == TY_LIST;
  case 'i':
    return have == TY_INT;
  case 'x':
    return have == TY_INT || have == TY_FLOAT;
  case 'b':
    return have == TY_BOOL;
  case 's':
    return have == TY_STR;
  case 'd':
    return have == TY_DTYPE;
  case 'k':
    return have == TY_INT || have == TY_STR;
  case 'q':
    return have == TY_LIST || have == TY_STR;
  default:
    return true;
  }
}

static const char *want_name(char c) {
  switch (c) {
  case 'n':
    return "a node";
  case 'l':
    return "a list";
  case 'i':
    return "an int";
  case 'x':
    return "a number";
  case 'b':
    return "a boolean";
  case 's':
    return "a string";
  case 'd':
    return "a dtype";
  case 'k':
    return "an argument name or position";
  case 'q':
    return "a list or a string";
  default:
    return "a value";
  }
}

static uint8_t join_ty(uint8_t a, uint8_t b) { return a == b ? a : TY_ANY; }
static bool numeric_ty(uint8_t t) { return t == TY_ANY || t == TY_INT || t == TY_FLOAT; }

/* Fills the constructor spellings of a call that creates a node. */
static bool resolve_ctor(P *p, Expr *x) {
  OxOpId id = ox_op_by_name(x->s);
  const OxSpelling *pre = NULL, *post = NULL;
  if (id != OX_OPID_NONE) {
    pre = spelling_for(id, false);
    post = spelling_for(id, true);
  } else {
    const OxSpelling *sp = spelling_named(x->s);
    if (!sp) return false;
    if (sp->level == OX_LEVEL_MODULE) {
      ERR_EXPR(p, x, "%s is a module: a replacement cannot create module calls", x->s);
      return true;
    }
    id = sp->op;
    pre = post = sp;
  }
  x->opid = id;
  x->i = 0;
  if (pre) {
    x->pre_kind = pre->level == OX_LEVEL_METHOD ? OX_OP_CALL_METHOD : OX_OP_CALL_FUNCTION;
    x->pre_target = pre->level == OX_LEVEL_ATEN ? strip_ops(pre->target) : pre->target;
    if (pre->level == OX_LEVEL_ATEN) x->i |= 1;
  }
  if (post) {
    x->post_kind = post->level == OX_LEVEL_METHOD ? OX_OP_CALL_METHOD : OX_OP_CALL_FUNCTION;
    x->post_target = post->level == OX_LEVEL_ATEN ? strip_ops(post->target) : post->target;
    if (post->level == OX_LEVEL_ATEN) x->i |= 2;
  }
  return true;
}

static void check_expr(P *p, Rule *r, Expr *x, bool tmpl);

static void check_call(P *p, Rule *r, Expr *x, bool tmpl) {
  for (uint32_t i = 0; i < x->n; i++)
    check_expr(p, r, x->a[i], tmpl);
  for (uint32_t i = 0; i < x->nk; i++)
    check_expr(p, r, x->kv[i], tmpl);
  int b = builtin_find(x->s);
  if (b >= 0) {
    const Builtin *bi = &builtins[b];
    x->builtin = b;
    x->ty = bi->ret;
    x->ety = bi->ret_elem;
    if (x->nk) ERR_EXPR(p, x, "%s() takes no keyword arguments", x->s);
    if (x->n < bi->min || x->n > bi->max) {
      if (bi->min == bi->max)
        ERR_EXPR(p, x, "%s() takes %u argument%s, got %u", x->s, bi->min, bi->min == 1 ? "" : "s", x->n);
      else
        ERR_EXPR(p, x, "%s() takes %u to %u arguments, got %u", x->s, bi->min, bi->max, x->n);
      return;
    }
    if (bi->tmpl && !tmpl)
      ERR_EXPR(p, x, "%s() creates a node: only allowed in replace: (guards only read the graph)", x->s);
    size_t np = strlen(bi->params);
    for (uint32_t i = 0; i < x->n; i++) {
      char want = bi->params[i < np ? i : np - 1];
      if (!strcmp(bi->name, "min") || !strcmp(bi->name, "max")) want = x->n == 1 ? 'l' : 'x';
      if (!ty_fits(x->a[i]->ty, want))
        ERR_EXPR(p, x->a[i], "argument %u of %s() must be %s, got %s", i + 1, x->s, want_name(want),
                 ty_names[x->a[i]->ty]);
    }
    if (bi->numeric) {
      uint8_t t = 0;
      bool first = true;
      for (uint32_t i = 0; i < x->n; i++) {
        uint8_t at = x->a[i]->ty == TY_LIST ? x->a[i]->ety : x->a[i]->ty;
        t = first ? at : join_ty(t, at);
        first = false;
      }
      x->ty = (t == TY_INT || t == TY_FLOAT) ? t : TY_ANY;
    }
    return;
  }
  if (!resolve_ctor(p, x)) {
    ERR_EXPR(p, x, "unknown function or op '%s' (see docs/rules.md for the functions, docs/ops.md for ops)",
             x->s);
    return;
  }
  if (!tmpl)
    ERR_EXPR(p, x, "'%s(...)' creates a node: only allowed in replace: (guards only read the graph)", x->s);
  x->ty = TY_NODE;
}

static void check_expr(P *p, Rule *r, Expr *x, bool tmpl) {
  switch (x->k) {
  case X_INT:
    x->ty = TY_INT;
    return;
  case X_FLOAT:
    x->ty = TY_FLOAT;
    return;
  case X_STR:
    x->ty = TY_STR;
    return;
  case X_BOOL:
    x->ty = TY_BOOL;
    return;
  case X_NONE:
    x->ty = TY_NONE;
    return;
  case X_DTYPE:
    x->ty = TY_DTYPE;
    return;
  case X_NAME: {
    int k = sym_find(r, x->s);
    if (k < 0) {
      if (builtin_find(x->s) >= 0 || ox_op_by_name(x->s) != OX_OPID_NONE)
        ERR_EXPR(p, x, "'%s' is a function: call it as %s(...)", x->s, x->s);
      else
        ERR_EXPR(p, x, "unknown capture '%s' (not bound by the match, a let or a comprehension)", x->s);
      x->ty = TY_ANY;
      x->slot = 0;
      return;
    }
    x->slot = k;
    x->ty = r->syms[k].ty;
    x->ety = r->syms[k].ety;
    return;
  }
  case X_LIST: {
    uint8_t e = TY_ANY;
    for (uint32_t i = 0; i < x->n; i++) {
      check_expr(p, r, x->a[i], tmpl);
      e = i ? join_ty(e, x->a[i]->ty) : x->a[i]->ty;
    }
    x->ty = TY_LIST;
    x->ety = e;
    return;
  }
  case X_CALL:
    check_call(p, r, x, tmpl);
    return;
  case X_NOT:
  case X_NEG:
    check_expr(p, r, x->a[0], tmpl);
    if (x->k == X_NOT && !ty_fits(x->a[0]->ty, 'b'))
      ERR_EXPR(p, x, "'not' needs a boolean, got %s", ty_names[x->a[0]->ty]);
    if (x->k == X_NEG && !numeric_ty(x->a[0]->ty))
      ERR_EXPR(p, x, "'-' needs a number, got %s", ty_names[x->a[0]->ty]);
    x->ty = x->k == X_NOT ? TY_BOOL : x->a[0]->ty;
    return;
  case X_IF:
    for (uint32_t i = 0; i < 3; i++)
      check_expr(p, r, x->a[i], tmpl);
    if (!ty_fits(x->a[0]->ty, 'b'))
      ERR_EXPR(p, x->a[0], "the condition of 'if' must be a boolean, got %s", ty_names[x->a[0]->ty]);
    x->ty = join_ty(x->a[1]->ty, x->a[2]->ty);
    x->ety = join_ty(x->a[1]->ety, x->a[2]->ety);
    return;
  case X_BIN: {
    check_expr(p, r, x->a[0], tmpl);
    check_expr(p, r, x->a[1], tmpl);
    uint8_t a = x->a[0]->ty, b = x->a[1]->ty;
    const char *op = bin_names[x->op];
    switch (x->op) {
    case B_AND:
    case B_OR:
      if (!ty_fits(a, 'b') || !ty_fits(b, 'b'))
        ERR_EXPR(p, x, "'%s' needs booleans, got %s and %s", op, ty_names[a], ty_names[b]);
      x->ty = TY_BOOL;
      return;
    case B_EQ:
    case B_NE:
      if (a != TY_ANY && b != TY_ANY && a != b && a != TY_NONE && b != TY_NONE &&
          !(numeric_ty(a) && numeric_ty(b)))
        ERR_EXPR(p, x, "cannot compare %s with %s", ty_names[a], ty_names[b]);
      x->ty = TY_BOOL;
      return;
    case B_LT:
    case B_LE:
    case B_GT:
    case B_GE:
      if (!((numeric_ty(a) && numeric_ty(b)) || (ty_fits(a, 's') && ty_fits(b, 's'))))
        ERR_EXPR(p, x, "'%s' compares numbers, got %s and %s", op, ty_names[a], ty_names[b]);
      x->ty = TY_BOOL;
      return;
    case B_IN:
      if (!ty_fits(b, 'q')) ERR_EXPR(p, x, "'in' needs a list on its right, got %s", ty_names[b]);
      x->ty = TY_BOOL;
      return;
    case B_CAT:
      if (!ty_fits(a, 'q') || !ty_fits(b, 'q') || (a != TY_ANY && b != TY_ANY && a != b))
        ERR_EXPR(p, x, "'++' joins two lists (or two strings), got %s and %s", ty_names[a], ty_names[b]);
      x->ty = a == TY_ANY ? b : a;
      x->ety = join_ty(x->a[0]->ety, x->a[1]->ety);
      return;
    default:
      if (!numeric_ty(a) || !numeric_ty(b)) {
        ERR_EXPR(p, x, "'%s' needs numbers, got %s and %s%s", op, ty_names[a], ty_names[b],
                 (a == TY_LIST || b == TY_LIST) && x->op == B_ADD ? " (use ++ to join lists)" : "");
        x->ty = TY_ANY;
        return;
      }
      x->ty = x->op == B_DIV                     ? TY_FLOAT
              : (a == TY_INT && b == TY_INT)     ? TY_INT
              : (a == TY_FLOAT || b == TY_FLOAT) ? TY_FLOAT
                                                 : TY_ANY;
      if (x->ty == TY_FLOAT && a != TY_FLOAT && b != TY_FLOAT && x->op != B_DIV) x->ty = TY_ANY;
      return;
    }
  }
  case X_INDEX: {
    check_expr(p, r, x->a[0], tmpl);
    check_expr(p, r, x->a[1], tmpl);
    uint8_t b = x->a[0]->ty;
    if (!ty_fits(x->a[1]->ty, 'i'))
      ERR_EXPR(p, x->a[1], "an index must be an int, got %s", ty_names[x->a[1]->ty]);
    if (b == TY_LIST) {
      x->ty = x->a[0]->ety;
    } else if (b == TY_NODE) {
      if (!tmpl) ERR_EXPR(p, x, "indexing a node creates a getitem: only allowed in replace:");
      x->ty = TY_NODE;
    } else if (b == TY_ANY) {
      x->ty = TY_ANY;
    } else {
      ERR_EXPR(p, x, "cannot index %s", ty_names[b]);
    }
    return;
  }
  case X_SLICE:
    check_expr(p, r, x->a[0], tmpl);
    for (uint32_t i = 1; i < 3; i++)
      if (x->a[i]) {
        check_expr(p, r, x->a[i], tmpl);
        if (!ty_fits(x->a[i]->ty, 'i'))
          ERR_EXPR(p, x->a[i], "a slice bound must be an int, got %s", ty_names[x->a[i]->ty]);
      }
    if (!ty_fits(x->a[0]->ty, 'l')) ERR_EXPR(p, x, "only lists can be sliced, got %s", ty_names[x->a[0]->ty]);
    x->ty = TY_LIST;
    x->ety = x->a[0]->ety;
    return;
  case X_COMP: {
    check_expr(p, r, x->a[1], tmpl);
    if (!ty_fits(x->a[1]->ty, 'l'))
      ERR_EXPR(p, x->a[1], "a comprehension iterates over a list, got %s", ty_names[x->a[1]->ty]);
    int prev = sym_find(r, x->s);
    if (prev >= 0) ERR_EXPR(p, x, "'%s' is already defined (line %u)", x->s, r->syms[prev].line);
    Tok t = {TK_ID, x->line, x->col, x->off, 0, 0, 0, x->s};
    int k = sym_add(r, x->s, SYM_LOOP, x->a[1]->ety, TY_ANY, &t);
    x->slot = k;
    if (x->n == 3) {
      check_expr(p, r, x->a[2], tmpl);
      if (!ty_fits(x->a[2]->ty, 'b'))
        ERR_EXPR(p, x->a[2], "the filter of a comprehension must be a boolean, got %s",
                 ty_names[x->a[2]->ty]);
    }
    check_expr(p, r, x->a[0], tmpl);
    r->syms[k].visible = false;
    x->ty = TY_LIST;
    x->ety = x->a[0]->ty;
    return;
  }
  default:
    return;
  }
}

/* ------------------------------------------------------------------ rules, passes, batch blocks */

static Rule *rule_new(P *p, const Tok *name, bool batch) {
  OxRuleSet *rs = p->rs;
  if (rs->n_rules == rs->cap_rules) {
    rs->cap_rules = rs->cap_rules ? rs->cap_rules * 2 : 16;
    rs->rules = ox_xrealloc(rs->rules, rs->cap_rules * sizeof *rs->rules);
  }
  Rule *r = &rs->rules[rs->n_rules++];
  memset(r, 0, sizeof *r);
  r->name = name->s;
  r->file = p->file;
  r->line = name->line;
  r->col = name->col;
  r->batch = batch;
  r->phase = -1;
  r->count = true;
  ox_pass_options_default(&r->opt);
  return r;
}

static RulePass *pass_new(P *p, const char *name, uint32_t line) {
  OxRuleSet *rs = p->rs;
  if (rs->n_passes == rs->cap_passes) {
    rs->cap_passes = rs->cap_passes ? rs->cap_passes * 2 : 8;
    rs->passes = ox_xrealloc(rs->passes, rs->cap_passes * sizeof *rs->passes);
  }
  RulePass *rp = &rs->passes[rs->n_passes++];
  memset(rp, 0, sizeof *rp);
  rp->info.name = name;
  rp->file = p->file;
  rp->line = line;
  ox_pass_options_default(&rp->opt);
  return rp;
}

static void pass_add_rule(RulePass *rp, uint32_t ri) {
  rp->rules = ox_xrealloc(rp->rules, (rp->n_rules + 1) * sizeof *rp->rules);
  rp->rules[rp->n_rules++] = ri;
}

/* names of rules and pass blocks are unique within a file */
static bool name_taken(P *p, const Tok *t) {
  OxRuleSet *rs = p->rs;
  for (uint32_t i = 0; i < rs->n_rules; i++)
    if (strcmp(rs->rules[i].name, t->s) == 0) {
      ERR_TOK(p, t, "duplicate name '%s' (already defined at line %u)", t->s, rs->rules[i].line);
      return true;
    }
  for (uint32_t i = 0; i < rs->n_passes; i++)
    if (rs->passes[i].block && strcmp(rs->passes[i].info.name, t->s) == 0) {
      ERR_TOK(p, t, "duplicate name '%s' (pass defined at line %u)", t->s, rs->passes[i].line);
      return true;
    }
  return false;
}

static bool clause_start(P *p) {
  Tok *t = pk(p);
  if (is_p(t, "}") || t->k == TK_EOF) return true;
  if (t->k == TK_ID && is_p(pk_at(p, 1), ":") &&
      (is_id(t, "match") || is_id(t, "where") || is_id(t, "when") || is_id(t, "replace") ||
       is_id(t, "phase") || is_id(t, "counter")))
    return true;
  return is_id(t, "let") && pk_at(p, 1)->k == TK_ID && is_p(pk_at(p, 2), "=");
}

static const char *src_text(P *p, uint32_t off, uint32_t end) {
  return ox_graph_intern_n(p->ag, p->src + off, end > off ? end - off : 0);
}

static void add_clause(Rule *r, Clause c) {
  if (r->n_cl == r->cap_cl) {
    r->cap_cl = r->cap_cl ? r->cap_cl * 2 : 8;
    r->cl = ox_xrealloc(r->cl, r->cap_cl * sizeof *r->cl);
  }
  r->cl[r->n_cl++] = c;
}

static void add_stmt(Rule *r, Stmt s) {
  if (r->n_st == r->cap_st) {
    r->cap_st = r->cap_st ? r->cap_st * 2 : 8;
    r->st = ox_xrealloc(r->st, r->cap_st * sizeof *r->st);
  }
  r->st[r->n_st++] = s;
}

static bool parse_phase(P *p, int *out) {
  Tok *v = adv(p);
  if (is_id(v, "pre"))
    *out = OX_PHASE_PRE;
  else if (is_id(v, "post"))
    *out = OX_PHASE_POST;
  else if (is_id(v, "any"))
    *out = -1;
  else {
    char b[64];
    ERR_TOK(p, v, "phase is pre, post or any, not %s", tok_desc(p, v, b, sizeof b));
    return false;
  }
  return true;
}

static bool parse_stmt(P *p, Rule *r) {
  Tok *t = pk(p);
  char b[64];
  Stmt s;
  memset(&s, 0, sizeof s);
  s.line = t->line;
  s.col = t->col;
  s.slot = s.target = s.var_slot = -1;
  if (t->k == TK_ID && !is_reserved(t->s) && is_p(pk_at(p, 1), "=")) {
    adv(p);
    adv(p);
    s.k = ST_LET;
    s.name = t->s;
  } else if (t->k == TK_ID && !is_reserved(t->s) && is_p(pk_at(p, 1), "=>")) {
    adv(p);
    adv(p);
    s.k = ST_REPLACE;
    s.name = t->s;
  } else if (is_id(t, "for")) { /* for v in list: target => expr */
    adv(p);
    Tok *v = adv(p);
    if (v->k != TK_ID || is_reserved(v->s) || strchr(v->s, '.')) {
      ERR_TOK(p, v, "expected a variable name after 'for', found %s", tok_desc(p, v, b, sizeof b));
      return false;
    }
    if (!expect_id(p, "in", "in 'for ... in ...:'")) return false;
    s.k = ST_FOR;
    s.var = v->s;
    if (!(s.list = parse_expr(p)) || !expect_p(p, ":", "after 'for ... in LIST'")) return false;
    Tok *tt = pk(p);
    if (!(s.tgt = parse_postfix(p))) return false;
    s.name = tt->k == TK_ID ? tt->s : "?";
    if (!expect_p(p, "=>", "after the target of the replacement")) return false;
  } else if (t->k == TK_ID && is_p(pk_at(p, 1), "[") && pk_at(p, 2)->k == TK_ID && is_p(pk_at(p, 3), "]") &&
             is_p(pk_at(p, 4), "=>")) {
    s.k = ST_EACH;
    s.name = t->s;
    s.var = pk_at(p, 2)->s;
    for (int i = 0; i < 5; i++)
      adv(p);
  } else {
    ERR_TOK(p, t,
            "expected a replacement statement (NAME = expr, NAME => expr, NAME[i] => expr or for v in LIST: "
            "TARGET => expr), found %s",
            tok_desc(p, t, b, sizeof b));
    return false;
  }
  if (!(s.e = parse_expr(p))) return false;
  if (s.k == ST_EACH && (is_id(pk(p), "if") || continues(p, "if"))) {
    adv(p);
    if (!(s.cond = parse_expr(p))) return false;
  }
  add_stmt(r, s);
  return true;
}

/* The clauses of a rule, after its '{'. */
static bool parse_rule_body(P *p, uint32_t ri) {
  Rule *r = &p->rs->rules[ri];
  p->cur = r;
  skip_nl(p);
  while (!is_p(pk(p), "}")) {
    Tok *t = pk(p);
    char b[64];
    if (t->k == TK_EOF) {
      ERR_TOK(p, t, "missing '}' at the end of rule '%s' (line %u)", r->name, r->line);
      return false;
    }
    if (is_id(t, "match") && is_p(pk_at(p, 1), ":")) {
      adv(p);
      adv(p);
      if (r->has_match) ERR_TOK(p, t, "rule '%s' has two match: clauses", r->name);
      OxPat *outs[16];
      uint32_t n = 0;
      for (;;) {
        OxPat *x = parse_pat(p);
        if (!x) return false;
        if (n < 16) outs[n++] = x;
        if (!is_p(pk(p), ",")) break;
        adv(p);
      }
      pat_loc(p, t);
      r->pattern = n == 1 ? outs[0] : ox_pat_multi(p->pool, outs, n);
      if (n > 1 && outs[0]->kind != OX_PAT_CALL)
        ERR_TOK(p, t, "the first pattern of a multi-output match must be a call");
      r->has_match = true;
    } else if (is_id(t, "phase") && is_p(pk_at(p, 1), ":")) {
      adv(p);
      adv(p);
      if (!parse_phase(p, &r->phase)) return false;
    } else if (is_id(t, "counter") && is_p(pk_at(p, 1), ":")) {
      adv(p);
      adv(p);
      Tok *v = adv(p);
      if (v->k != TK_ID) {
        ERR_TOK(p, v, "counter: takes a counter name or none, found %s", tok_desc(p, v, b, sizeof b));
        return false;
      }
      r->count = !is_id(v, "none");
      r->counter = r->count ? v->s : NULL;
    } else if ((is_id(t, "when") || is_id(t, "where")) && is_p(pk_at(p, 1), ":")) {
      adv(p);
      adv(p);
      if (!r->has_match) ERR_TOK(p, t, "%s: must come after match:", t->s);
      skip_nl(p);
      for (;;) {
        Tok *g0 = pk(p);
        Expr *e = parse_expr(p);
        if (!e) return false;
        add_clause(r, (Clause){is_id(t, "when") ? CL_WHEN : CL_WHERE, e, -1, NULL, g0->line, g0->col,
                               src_text(p, e->off, e->end)});
        if (!end_stmt(p)) return false;
        if (clause_start(p)) break;
      }
      continue;
    } else if (is_id(t, "let") && pk_at(p, 1)->k == TK_ID && is_p(pk_at(p, 2), "=")) {
      adv(p);
      Tok *nt = adv(p);
      adv(p);
      if (!r->has_match) ERR_TOK(p, t, "let must come after match:");
      if (is_reserved(nt->s)) ERR_TOK(p, nt, "'%s' is a reserved word", nt->s);
      Expr *e = parse_expr(p);
      if (!e) return false;
      add_clause(r, (Clause){CL_LET, e, -1, nt->s, nt->line, nt->col, NULL});
    } else if (is_id(t, "replace") && is_p(pk_at(p, 1), ":")) {
      adv(p);
      adv(p);
      if (!r->has_match) ERR_TOK(p, t, "replace: must come after match:");
      if (r->has_replace) ERR_TOK(p, t, "rule '%s' has two replace: clauses", r->name);
      r->has_replace = true;
      skip_nl(p);
      for (;;) {
        if (!parse_stmt(p, r)) return false;
        if (!end_stmt(p)) return false;
        if (clause_start(p)) break;
      }
      continue;
    } else {
      ERR_TOK(p, t, "expected a clause (match:, when:, where:, let, replace:, phase:, counter:), found %s",
              tok_desc(p, t, b, sizeof b));
      return false;
    }
    if (!end_stmt(p)) return false;
  }
  adv(p);
  return true;
}

/* Names and types of a parsed rule, in order. */
static void check_rule(P *p, Rule *r, const Tok *name) {
  p->cur = r;
  if (!r->has_match) ERR_TOK(p, name, "rule '%s' has no match: clause", r->name);
  if (!r->has_replace) ERR_TOK(p, name, "rule '%s' has no replace: clause", r->name);
  for (uint32_t i = 0; i < r->n_cl; i++) {
    Clause *c = &r->cl[i];
    check_expr(p, r, c->e, false);
    if (c->k == CL_LET) {
      int prev = sym_find(r, c->name);
      Tok t = {TK_ID, c->line, c->col, c->e->off, 0, 0, 0, c->name};
      if (prev >= 0) ERR_TOK(p, &t, "'%s' is already defined (line %u)", c->name, r->syms[prev].line);
      c->slot = sym_add(r, c->name, SYM_LET, c->e->ty, c->e->ety, &t);
    } else if (!ty_fits(c->e->ty, 'b')) {
      ERR_EXPR(p, c->e, "a guard must be a boolean, got %s", ty_names[c->e->ty]);
    }
  }
  for (uint32_t i = 0; i < r->n_st; i++) {
    Stmt *s = &r->st[i];
    Tok t = {TK_ID, s->line, s->col, s->e->off, 0, 0, 0, s->name};
    if (s->k == ST_LET) {
      check_expr(p, r, s->e, true);
      int prev = sym_find(r, s->name);
      if (prev >= 0) ERR_TOK(p, &t, "'%s' is already defined (line %u)", s->name, r->syms[prev].line);
      s->slot = sym_add(r, s->name, SYM_LET, s->e->ty, s->e->ety, &t);
      continue;
    }
    if (s->k == ST_FOR) {
      check_expr(p, r, s->list, false);
      if (!ty_fits(s->list->ty, 'l'))
        ERR_EXPR(p, s->list, "'for' iterates over a list, got %s", ty_names[s->list->ty]);
      int prev = sym_find(r, s->var);
      if (prev >= 0) ERR_TOK(p, &t, "'%s' is already defined (line %u)", s->var, r->syms[prev].line);
      s->var_slot = sym_add(r, s->var, SYM_LOOP, s->list->ety, TY_ANY, &t);
      check_expr(p, r, s->tgt, false);
      if (s->tgt->ty != TY_NODE && s->tgt->ty != TY_ANY)
        ERR_EXPR(p, s->tgt, "a replacement targets a node, got %s", ty_names[s->tgt->ty]);
      check_expr(p, r, s->e, true);
      if (s->e->ty != TY_NODE && s->e->ty != TY_ANY)
        ERR_EXPR(p, s->e, "a replacement must be a node, got %s", ty_names[s->e->ty]);
      r->syms[s->var_slot].visible = false;
      continue;
    }
    s->target = sym_find(r, s->name);
    if (s->target < 0) {
      ERR_TOK(p, &t, "unknown capture '%s': a replacement targets a node bound by the match (NAME @ op(...))",
              s->name);
    } else if (r->syms[s->target].ty != TY_NODE && r->syms[s->target].ty != TY_ANY) {
      ERR_TOK(p, &t, "'%s' is a %s, not a node%s", s->name, ty_names[r->syms[s->target].ty],
              r->syms[s->target].in_list ? " (captured inside each()/some()/repeat())" : "");
    }
    if (s->k == ST_EACH) {
      int prev = sym_find(r, s->var);
      if (prev >= 0) ERR_TOK(p, &t, "'%s' is already defined (line %u)", s->var, r->syms[prev].line);
      s->var_slot = sym_add(r, s->var, SYM_LOOP, TY_INT, 0, &t);
      if (s->cond) {
        check_expr(p, r, s->cond, true);
        if (!ty_fits(s->cond->ty, 'b'))
          ERR_EXPR(p, s->cond, "the condition must be a boolean, got %s", ty_names[s->cond->ty]);
      }
    }
    check_expr(p, r, s->e, true);
    if (s->e->ty != TY_NODE && s->e->ty != TY_ANY)
      ERR_EXPR(p, s->e, "a replacement must be a node, got %s", ty_names[s->e->ty]);
    if (s->k == ST_EACH) r->syms[s->var_slot].visible = false;
  }
}

/* rule NAME { ... } ; returns the rule index, or -1 after a syntax error (skipped) */
static int parse_rule(P *p, int pass_phase) {
  Tok *kw = adv(p); /* 'rule' */
  (void)kw;
  Tok *name = adv(p);
  char b[64];
  if (name->k != TK_ID || is_reserved(name->s) || strchr(name->s, '.')) {
    ERR_TOK(p, name, "expected a rule name after 'rule', found %s", tok_desc(p, name, b, sizeof b));
    return -1;
  }
  name_taken(p, name);
  skip_nl(p);
  if (!expect_p(p, "{", "to open the rule")) return -1;
  Rule *r = rule_new(p, name, false);
  uint32_t ri = p->rs->n_rules - 1;
  r->phase = pass_phase;
  if (!parse_rule_body(p, ri)) return -1;
  check_rule(p, &p->rs->rules[ri], name);
  return (int)ri;
}

static bool batch_values(P *p, Tok **vals, uint32_t *n, uint32_t cap) {
  *n = 0;
  while (pk(p)->k != TK_NL && !is_p(pk(p), "}") && pk(p)->k != TK_EOF) {
    Tok *t = adv(p);
    if (is_p(t, ",") || is_p(t, "|")) continue;
    if (t->k != TK_ID && t->k != TK_INT && !is_p(t, "*")) {
      char b[64];
      ERR_TOK(p, t, "unexpected %s in a batch rule", tok_desc(p, t, b, sizeof b));
      return false;
    }
    if (*n < cap) vals[(*n)++] = t;
  }
  if (!*n) ERR_TOK(p, pk(p), "missing value");
  return *n > 0;
}

static bool batch_int(P *p, Tok **v, uint32_t n, int *out) {
  if (n != 1 || v[0]->k != TK_INT || v[0]->i < 0 || v[0]->i > 1000000000) {
    ERR_TOK(p, v[0], "expected a non-negative integer");
    return false;
  }
  *out = (int)v[0]->i;
  return true;
}

static bool has_slot(OxOpId op, const char *name) {
  const OxOpInfo *in = ox_op_info(op);
  for (uint32_t s = 0; in && s < in->n_slots; s++)
    if (strcmp(in->slot_names[s], name) == 0) return true;
  return false;
}

/* batch NAME { op: ...; key: ...; ... } -> one OxBatchRule row */
static int parse_batch(P *p) {
  adv(p); /* 'batch' */
  Tok *name = adv(p);
  char b[64];
  if (name->k != TK_ID || is_reserved(name->s) || strchr(name->s, '.')) {
    ERR_TOK(p, name, "expected a batch rule name after 'batch', found %s", tok_desc(p, name, b, sizeof b));
    return -1;
  }
  name_taken(p, name);
  skip_nl(p);
  if (!expect_p(p, "{", "to open the batch rule")) return -1;
  Rule *r = rule_new(p, name, true);
  uint32_t ri = p->rs->n_rules - 1;
  OxBatchRule *row = &r->row;
  memset(row, 0, sizeof *row);
  row->name = r->name;
  row->op = row->op2 = OX_OPID_NONE;
  int phase = OX_PHASE_PRE, operands = 1, tmpl = -1;
  unsigned levels = 0, key = 0, guards = 0;
  bool has_key = false, has_guards = false;
  const char *emit = NULL;
  Tok *op_tok = name, *emit_tok = NULL;
  const char *extras[OX_BATCH_MAX_EXTRAS + 1] = {0};
  Tok *extra_toks[OX_BATCH_MAX_EXTRAS + 1] = {0};
  uint32_t n_extras = 0;
  skip_nl(p);
  static const char *const tmpl_names[] = {"stack_unbind", "cat_select",  "linear",      "linear_lhs",
                                           "layer_norm",   "linear_post", "group_linear"};
  while (!is_p(pk(p), "}")) {
    Tok *k = adv(p);
    Tok *v[16];
    uint32_t n;
    if (k->k == TK_EOF) {
      ERR_TOK(p, k, "missing '}' at the end of batch rule '%s'", r->name);
      return -1;
    }
    if (k->k != TK_ID || !is_p(pk(p), ":")) {
      ERR_TOK(p, k, "expected KEY: VALUE in batch rule '%s', found %s", r->name, tok_desc(p, k, b, sizeof b));
      return -1;
    }
    adv(p);
    if (!batch_values(p, v, &n, 16)) return -1;
    if (is_id(k, "phase")) {
      if (n != 1 || (!is_id(v[0], "pre") && !is_id(v[0], "post")))
        ERR_TOK(p, v[0], "phase is pre or post");
      else
        phase = is_id(v[0], "pre") ? OX_PHASE_PRE : OX_PHASE_POST;
    } else if (is_id(k, "op")) {
      op_tok = v[0];
      if (n > 2) ERR_TOK(p, v[2], "a batch rule matches one or two ops");
      for (uint32_t i = 0; i < n && i < 2; i++) {
        OxOpId id = v[i]->k == TK_ID ? ox_op_by_name(v[i]->s) : OX_OPID_NONE;
        if (id == OX_OPID_NONE)
          ERR_TOK(p, v[i], "unknown op '%.*s' (an op-table name, see docs/ops.md)", (int)v[i]->len,
                  p->src + v[i]->off);
        if (i == 0)
          row->op = id;
        else
          row->op2 = id;
      }
    } else if (is_id(k, "levels")) {
      for (uint32_t i = 0; i < n; i++) {
        if (is_id(v[i], "torch"))
          levels |= 1u << OX_LEVEL_TORCH;
        else if (is_id(v[i], "method"))
          levels |= 1u << OX_LEVEL_METHOD;
        else if (is_id(v[i], "aten"))
          levels |= 1u << OX_LEVEL_ATEN;
        else if (is_id(v[i], "module"))
          levels |= 1u << OX_LEVEL_MODULE;
        else
          ERR_TOK(p, v[i], "unknown level (torch, method, aten, module)");
      }
    } else if (is_id(k, "template")) {
      tmpl = -2;
      for (size_t i = 0; i < sizeof tmpl_names / sizeof tmpl_names[0]; i++)
        if (is_id(v[0], tmpl_names[i])) tmpl = (int)i;
      if (tmpl == -2 || n != 1)
        ERR_TOK(p, v[0],
                "unknown template (stack_unbind, cat_select, linear, linear_lhs, layer_norm, linear_post, "
                "group_linear)");
    } else if (is_id(k, "operands")) {
      if (batch_int(p, v, n, &operands) && (operands < 1 || operands > 2))
        ERR_TOK(p, v[0], "operands is 1 (unary) or 2 (binary)");
    } else if (is_id(k, "emit")) {
      if (n != 1 || v[0]->k != TK_ID || !spelling_named(v[0]->s))
        ERR_TOK(p, v[0], "emit: unknown op spelling '%.*s' (a target such as torch.nn.functional.gelu)",
                (int)v[0]->len, p->src + v[0]->off);
      else {
        emit = v[0]->s;
        emit_tok = v[0];
      }
    } else if (is_id(k, "extras")) {
      for (uint32_t i = 0; i < n; i++) {
        if (is_id(v[i], "none")) continue;
        if (n_extras == OX_BATCH_MAX_EXTRAS) {
          ERR_TOK(p, v[i], "at most %d extras", OX_BATCH_MAX_EXTRAS);
          break;
        }
        if (v[i]->k != TK_ID) { /* a number or punctuation has no name (s is NULL) */
          char b[64];
          ERR_TOK(p, v[i], "extras: expected an argument name, found %s", tok_desc(p, v[i], b, sizeof b));
          continue;
        }
        extra_toks[n_extras] = v[i];
        extras[n_extras++] = v[i]->s;
      }
    } else if (is_id(k, "key")) {
      has_key = true;
      for (uint32_t i = 0; i < n; i++) {
        if (is_id(v[i], "slots"))
          key |= OX_BK_SLOTS;
        else if (is_id(v[i], "parent"))
          key |= OX_BK_PARENT;
        else if (is_id(v[i], "sel_parent"))
          key |= OX_BK_SEL_PARENT;
        else if (is_id(v[i], "users"))
          key |= OX_BK_USERS;
        else if (is_id(v[i], "first_user"))
          key |= OX_BK_FIRST_USER;
        else if (!is_id(v[i], "none"))
          ERR_TOK(p, v[i], "unknown key field (slots, parent, sel_parent, users, first_user, none)");
      }
    } else if (is_id(k, "guards")) {
      has_guards = true;
      for (uint32_t i = 0; i < n; i++) {
        if (is_id(v[i], "equal_shapes"))
          guards |= OX_BG_EQUAL_SHAPES;
        else if (is_id(v[i], "not_inplace"))
          guards |= OX_BG_NOT_INPLACE;
        else if (is_id(v[i], "out_not_mutated"))
          guards |= OX_BG_OUT_NOT_MUTATED;
        else if (is_id(v[i], "in_not_mutated"))
          guards |= OX_BG_IN_NOT_MUTATED;
        else if (!is_id(v[i], "none"))
          ERR_TOK(p, v[i],
                  "unknown guard (equal_shapes, not_inplace, out_not_mutated, in_not_mutated, none)");
      }
    } else if (is_id(k, "min_fuse_set_size")) {
      batch_int(p, v, n, &r->opt.min_fuse_set_size);
    } else if (is_id(k, "max_fuse_set_size")) {
      batch_int(p, v, n, &r->opt.max_fuse_set_size);
    } else if (is_id(k, "max_fuse_search_depth")) {
      batch_int(p, v, n, &r->opt.max_fuse_search_depth);
    } else {
      ERR_TOK(p, k,
              "unknown batch key '%s' (phase, op, levels, template, operands, emit, extras, key, guards, "
              "min_fuse_set_size, max_fuse_set_size, max_fuse_search_depth)",
              k->s);
    }
    if (!end_stmt(p)) return -1;
  }
  adv(p);
  /* defaults and consistency */
  if (row->op == OX_OPID_NONE) {
    if (op_tok == name) ERR_TOK(p, name, "batch rule '%s' has no op:", r->name);
    return (int)ri;
  }
  row->phase = (OxPhase)phase;
  row->levels = levels ? levels
                : phase == OX_PHASE_PRE
                    ? (1u << OX_LEVEL_TORCH) | (1u << OX_LEVEL_METHOD) | (1u << OX_LEVEL_MODULE)
                    : 1u << OX_LEVEL_ATEN;
  if (tmpl == -1) tmpl = phase == OX_PHASE_PRE ? OX_BT_STACK_UNBIND : OX_BT_CAT_SELECT;
  if (tmpl < 0) return (int)ri;
  row->tmpl = (OxBatchTemplate)tmpl;
  row->n_tensors = (uint8_t)operands;
  bool generic = tmpl == OX_BT_STACK_UNBIND || tmpl == OX_BT_CAT_SELECT;
  if (tmpl == OX_BT_STACK_UNBIND && phase == OX_PHASE_POST)
    ERR_TOK(p, name,
            "template stack_unbind emits torch-level nodes: use it with phase: pre (cat_select for post)");
  if (tmpl == OX_BT_CAT_SELECT && phase == OX_PHASE_PRE)
    ERR_TOK(p, name, "template cat_select emits aten nodes: use it with phase: post (stack_unbind for pre)");
  OxOpId need = tmpl == OX_BT_LINEAR || tmpl == OX_BT_LINEAR_LHS          ? OX_OPID_LINEAR
                : tmpl == OX_BT_LAYER_NORM                                ? OX_OPID_LAYER_NORM
                : tmpl == OX_BT_LINEAR_POST || tmpl == OX_BT_GROUP_LINEAR ? OX_OPID_MM
                                                                          : OX_OPID_NONE;
  if (need && row->op != need && !(need == OX_OPID_MM && row->op == OX_OPID_ADDMM))
    ERR_TOK(p, op_tok, "template %s fuses %s ops", tmpl_names[tmpl], ox_op_info(need)->name);
  if (generic) {
    if (!emit) {
      const OxSpelling *sp = spelling_for(row->op, phase == OX_PHASE_POST);
      if (!sp || (phase == OX_PHASE_PRE && sp->level != OX_LEVEL_TORCH)) {
        ERR_TOK(p, op_tok, "op %s has no %s function to emit: give emit:", ox_op_info(row->op)->name,
                phase == OX_PHASE_PRE ? "torch" : "aten");
        return (int)ri;
      }
      emit = phase == OX_PHASE_POST ? strip_ops(sp->target) : sp->target;
    } else {
      const OxSpelling *sp = spelling_named(emit);
      if (sp->op != row->op)
        ERR_TOK(p, emit_tok, "emit: %s is not a spelling of %s", emit, ox_op_info(row->op)->name);
      if (phase == OX_PHASE_POST && sp->level != OX_LEVEL_ATEN)
        ERR_TOK(p, emit_tok, "emit: a post-grad rule emits an aten op");
      if (phase == OX_PHASE_PRE && sp->level != OX_LEVEL_TORCH)
        ERR_TOK(p, emit_tok, "emit: a pre-grad rule emits a torch function");
      if (phase == OX_PHASE_POST) emit = strip_ops(sp->target);
    }
    row->emit = ox_graph_intern(p->ag, emit);
    for (uint32_t i = 0; i < n_extras; i++) {
      if (!has_slot(row->op, extras[i]))
        ERR_TOK(p, extra_toks[i], "op %s has no argument '%s'", ox_op_info(row->op)->name, extras[i]);
      row->extras[i] = extras[i];
    }
  } else if (emit || n_extras) {
    ERR_TOK(p, emit_tok ? emit_tok : extra_toks[0],
            "emit: and extras: belong to the stack_unbind / cat_select templates");
  }
  row->key = has_key ? key : generic ? (OX_BK_SLOTS | (operands == 2 ? OX_BK_SEL_PARENT : OX_BK_PARENT)) : 0;
  row->guards = has_guards ? guards
                           : OX_BG_OUT_NOT_MUTATED | OX_BG_IN_NOT_MUTATED |
                                 (operands == 2 ? OX_BG_EQUAL_SHAPES : 0) |
                                 (has_slot(row->op, "inplace") ? OX_BG_NOT_INPLACE : 0);
  char sum[256];
  snprintf(sum, sizeof sum, "batch rule %s from %s:%u", r->name, p->file, r->line);
  row->summary = ox_graph_intern(p->ag, sum);
  return (int)ri;
}

/* after a syntax error: skip to the brace that closes the block opened at or after `from` */
static void skip_block(P *p, uint32_t from) {
  uint32_t i = from;
  while (i < p->n && !is_p(&p->t[i], "{") && p->t[i].k != TK_EOF)
    i++;
  int depth = 0;
  for (; i < p->n && p->t[i].k != TK_EOF; i++) {
    if (is_p(&p->t[i], "{")) depth++;
    if (is_p(&p->t[i], "}") && --depth == 0) {
      p->i = i + 1;
      return;
    }
  }
  p->i = p->n - 1;
}

static void parse_file(P *p) {
  skip_nl(p);
  while (pk(p)->k != TK_EOF) {
    Tok *t = pk(p);
    uint32_t start = p->i;
    char b[64];
    if (is_id(t, "rule")) {
      int ri = parse_rule(p, -1);
      if (ri < 0) {
        skip_block(p, start);
      } else {
        RulePass *rp = pass_new(p, p->rs->rules[ri].name, p->rs->rules[ri].line);
        pass_add_rule(rp, (uint32_t)ri);
      }
    } else if (is_id(t, "batch")) {
      int ri = parse_batch(p);
      if (ri < 0) {
        skip_block(p, start);
      } else {
        RulePass *rp = pass_new(p, p->rs->rules[ri].name, p->rs->rules[ri].line);
        rp->batch = true;
        pass_add_rule(rp, (uint32_t)ri);
      }
    } else if (is_id(t, "pass")) {
      adv(p);
      Tok *name = adv(p);
      if (name->k != TK_ID || is_reserved(name->s) || strchr(name->s, '.')) {
        ERR_TOK(p, name, "expected a pass name after 'pass', found %s", tok_desc(p, name, b, sizeof b));
        skip_block(p, start);
        continue;
      }
      name_taken(p, name);
      skip_nl(p);
      if (!expect_p(p, "{", "to open the pass")) {
        skip_block(p, start);
        continue;
      }
      RulePass *rp = pass_new(p, name->s, name->line);
      rp->block = true;
      uint32_t pi = p->rs->n_passes - 1;
      int phase = -1, errors0 = p->errors;
      skip_nl(p);
      bool bad = false;
      while (!is_p(pk(p), "}") && pk(p)->k != TK_EOF) {
        Tok *k = pk(p);
        uint32_t rs0 = p->i;
        if (is_id(k, "phase") && is_p(pk_at(p, 1), ":")) {
          adv(p);
          adv(p);
          if (!parse_phase(p, &phase) || !end_stmt(p)) {
            bad = true;
            break;
          }
        } else if (is_id(k, "rule")) {
          int ri = parse_rule(p, phase);
          if (ri < 0)
            skip_block(p, rs0);
          else
            pass_add_rule(&p->rs->passes[pi], (uint32_t)ri);
          skip_nl(p);
        } else {
          ERR_TOK(p, k, "expected 'rule' or 'phase:' in pass '%s', found %s", name->s,
                  tok_desc(p, k, b, sizeof b));
          bad = true;
          break;
        }
      }
      rp = &p->rs->passes[pi];
      rp->phase = phase;
      if (bad) {
        skip_block(p, start);
        continue;
      }
      if (!expect_p(p, "}", "to close the pass")) continue;
      if (!rp->n_rules && p->errors == errors0) ERR_TOK(p, name, "pass '%s' has no rules", name->s);
    } else {
      ERR_TOK(p, t, "expected 'rule', 'batch' or 'pass', found %s", tok_desc(p, t, b, sizeof b));
      /* resynchronize at the next top-level keyword */
      adv(p);
      while (pk(p)->k != TK_EOF &&
             !(pk(p)->col == 1 && (is_id(pk(p), "rule") || is_id(pk(p), "batch") || is_id(pk(p), "pass"))))
        adv(p);
    }
    skip_nl(p);
  }
}

/* ------------------------------------------------------------------ running pattern rules */

static void stamp_last(OxPassCtx *c, uint32_t before, const char *file, uint32_t line) {
  if (!c->trace || c->trace->n_steps <= before) return;
  OxStep *s = &c->trace->steps[c->trace->n_steps - 1];
  s->rule_file = ox_trace_intern(c->trace, file);
  s->rule_line = line;
}

static void reject_ev(OxPassCtx *c, const Rule *r, const OxPatMatch *m, const Ev *ev, uint32_t line) {
  if (!c->trace || !c->record_rejections) return;
  const char *args[OX_REASON_MAX_ARGS];
  for (uint32_t i = 0; i < ev->n_args; i++)
    args[i] = ev->args[i];
  OxReason why = ox_reason_nodes(c, (OxReasonCode)ev->code, args, ev->n_args, ev->is_node);
  uint32_t before = c->trace->n_steps;
  ox_step_reject(c, r->name, m->anchor, m->nodes, m->n_nodes, &why);
  stamp_last(c, before, r->file, line);
}

static void ev_init(Ev *ev, OxPassCtx *c, const Rule *r, const OxPatMatch *m) {
  memset(ev, 0, sizeof *ev);
  ev->c = c;
  ev->g = c->g;
  ev->r = r;
  ev->m = m;
  ev->env = ox_xcalloc(r->n_syms ? r->n_syms : 1, sizeof *ev->env);
  for (uint32_t i = 0; i < r->n_syms; i++)
    ev->env[i].k = V_UNSET;
  ev->aten = node_is_aten(c->g, m->anchor);
  ev->torch_ops = strncmp(c->g->nodes[m->anchor].target, "torch.ops.", 10) == 0;
  for (uint32_t i = 0; i < r->n_syms; i++) {
    const Sym *s = &r->syms[i];
    if (s->kind != SYM_CAPTURE) continue;
    if (s->in_list) { /* bundled: one value per matched element */
      uint32_t cnt = 0;
      for (uint32_t k = 0; k < m->n_caps; k++)
        if (m->caps[k].name && strcmp(m->caps[k].name, s->name) == 0) cnt++;
      RV *it = rv_alloc(ev, cnt);
      cnt = 0;
      for (uint32_t k = 0; k < m->n_caps; k++)
        if (m->caps[k].name && strcmp(m->caps[k].name, s->name) == 0)
          it[cnt++] = rv_from_value(ev, m->caps[k].value, true);
      ev->env[i] = rv_list(it, cnt);
      continue;
    }
    for (uint32_t k = 0; k < m->n_caps; k++)
      if (!m->caps[k].in_list && m->caps[k].name && strcmp(m->caps[k].name, s->name) == 0) {
        ev->env[i] = rv_from_value(ev, m->caps[k].value, true);
        break;
      }
  }
}

static void ev_free(Ev *ev) {
  free(ev->env);
  free(ev->created);
  free(ev->proj_base);
  free(ev->proj_last);
  ox_arena_free(&ev->arena);
}

static bool target_node(Ev *ev, const Stmt *st, OxNodeId *out) {
  const RV *t = &ev->env[st->target];
  if (t->k != V_NODE) return everr(ev, "replace: %s is not a node (%s)", st->name, rv_kind_name(t));
  const OxNode *n = ox_graph_node(ev->g, t->u.node);
  if (!n || n->erased) return everr(ev, "replace: %s was already replaced", st->name);
  *out = t->u.node;
  return true;
}

static bool want_result(Ev *ev, const Stmt *st, const RV *v, OxNodeId *out) {
  if (v->k != V_NODE) {
    char b[96];
    return everr(ev, "replace: %s needs a node, got %s %s", st->name, rv_kind_name(v),
                 rv_text(ev, v, b, sizeof b));
  }
  const OxNode *n = ox_graph_node(ev->g, v->u.node);
  if (!n || n->erased) return everr(ev, "replace: the replacement of %s no longer exists", st->name);
  *out = v->u.node;
  return true;
}

static bool run_stmt(Ev *ev, const Stmt *st) {
  OxGraph *g = ev->g;
  RV v = {0};
  OxNodeId t, nv;
  switch (st->k) {
  case ST_LET:
    if (!eval(ev, st->e, &v)) return false;
    ev->env[st->slot] = v;
    return true;
  case ST_REPLACE:
    if (!target_node(ev, st, &t) || !eval(ev, st->e, &v) || !want_result(ev, st, &v, &nv)) return false;
    replace_uses(ev, t, nv);
    return true;
  case ST_EACH: {
    if (!target_node(ev, st, &t)) return false;
    uint32_t nu = g->nodes[t].n_users;
    OxNodeId *us = ox_xcalloc(nu + 1, sizeof *us);
    memcpy(us, g->nodes[t].users, nu * sizeof *us);
    bool ok = true;
    for (uint32_t i = 0; i < nu && ok; i++) {
      const OxNode *u = &g->nodes[us[i]];
      if (u->erased || ox_op_of_node(g, u, NULL) != OX_OPID_GETITEM || u->args.n != 2 ||
          u->args.u.items[0].kind != OX_V_NODE || u->args.u.items[0].u.node != t ||
          u->args.u.items[1].kind != OX_V_INT)
        continue;
      ev->env[st->var_slot] = rv_int(u->args.u.items[1].u.i);
      if (st->cond) {
        RV c;
        bool b = false;
        if (!eval(ev, st->cond, &c) || !want_bool(ev, st->cond, &c, &b)) {
          ok = false;
          break;
        }
        if (!b) continue;
      }
      if (!eval(ev, st->e, &v) || !want_result(ev, st, &v, &nv))
        ok = false;
      else
        replace_uses(ev, us[i], nv);
    }
    free(us);
    ev->env[st->var_slot] = (RV){.k = V_UNSET};
    return ok;
  }
  case ST_FOR: {
    RV l;
    ev->tmpl = false; /* the list and the targets only read */
    bool ok = eval(ev, st->list, &l) && want_list(ev, &l, "for");
    for (uint32_t i = 0; ok && i < l.n; i++) {
      RV tv;
      ev->env[st->var_slot] = l.u.items[i];
      ev->tmpl = false;
      if (!eval(ev, st->tgt, &tv) || !want_result(ev, st, &tv, &t)) {
        ok = false;
        break;
      }
      ev->tmpl = true;
      if (!eval(ev, st->e, &v) || !want_result(ev, st, &v, &nv))
        ok = false;
      else
        replace_uses(ev, t, nv);
    }
    ev->tmpl = true;
    ev->env[st->var_slot] = (RV){.k = V_UNSET};
    return ok;
  }
  default:
    return everr(ev, "bad statement");
  }
}

static int rule_handler(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  const Rule *r = e->data;
  OxGraph *g = c->g;
  bool aten = node_is_aten(g, m->anchor);
  /* a pre-grad rule leaves aten spellings alone, a post-grad rule the torch-level ones */
  if ((r->phase == OX_PHASE_PRE && aten) || (r->phase == OX_PHASE_POST && !aten)) return 0;
  Ev ev;
  ev_init(&ev, c, r, m);
  int result = 0;
  for (uint32_t i = 0; i < r->n_cl; i++) {
    const Clause *cl = &r->cl[i];
    RV v = {0};
    if (!eval(&ev, cl->e, &v)) {
      reject_ev(c, r, m, &ev, cl->line);
      goto done;
    }
    if (cl->k == CL_LET) {
      ev.env[cl->slot] = v;
      continue;
    }
    if (v.k != V_BOOL) {
      everr(&ev, "the guard gave %s, not a boolean", rv_kind_name(&v));
      reject_ev(c, r, m, &ev, cl->line);
      goto done;
    }
    if (v.u.b) continue;
    if (cl->k == CL_WHEN) goto done; /* not applicable: silent, like PyTorch's extra_check */
    OxBuf b;
    ox_buf_init(&b);
    explain_false(&ev, cl->e, r->src, &b);
    ev.failed = false;
    evfail(&ev, OX_REASON_GUARD_FAILED, "xx", cl->text, b.data ? b.data : "it is False");
    ox_buf_free(&b);
    reject_ev(c, r, m, &ev, cl->line);
    goto done;
  }
  /* the replacement, as one step */
  ev.tmpl = true;
  OxNodeId before = 0;
  for (uint32_t i = 0; i < r->n_st; i++) {
    const Stmt *st = &r->st[i];
    if (st->k == ST_FOR) { /* the targets a for statement will replace (reading only) */
      RV l, tv;
      ev.tmpl = false;
      if (!eval(&ev, st->list, &l) || l.k != V_LIST) {
        ev.failed = false;
        continue;
      }
      for (uint32_t k = 0; k < l.n; k++) {
        ev.env[st->var_slot] = l.u.items[k];
        if (!eval(&ev, st->tgt, &tv) || tv.k != V_NODE || g->nodes[tv.u.node].erased) {
          ev.failed = false;
          continue;
        }
        if (!before || ox_graph_before(g, tv.u.node, before)) before = tv.u.node;
      }
      ev.env[st->var_slot] = (RV){.k = V_UNSET};
      continue;
    }
    if (st->k == ST_LET || ev.env[st->target].k != V_NODE) continue;
    OxNodeId t = ev.env[st->target].u.node;
    if (!ox_graph_node(g, t) || g->nodes[t].erased) continue;
    if (!before || ox_graph_before(g, t, before)) before = t;
  }
  ev.tmpl = true;
  ev.before = before ? before : m->anchor;
  ox_pat_step_begin(c, e, m);
  if (c->trace) {
    c->staged.rule_file = ox_trace_intern(c->trace, r->file);
    c->staged.rule_line = r->line;
  }
  for (uint32_t i = 0; i < r->n_st; i++) {
    if (!run_stmt(&ev, &r->st[i])) {
      ox_step_abort(c);
      reject_ev(c, r, m, &ev, r->st[i].line);
      goto done;
    }
  }
  /* created nodes nobody uses, then matched nodes left without users */
  for (uint32_t i = ev.n_created; i-- > 0;) {
    OxNodeId id = ev.created[i];
    if (!g->nodes[id].erased && !g->nodes[id].n_users) ox_graph_erase(g, id);
  }
  if (!ev.changed) {
    ox_step_abort(c);
    goto done;
  }
  if (ev.need_sort && !ox_graph_stable_toposort(g)) {
    ox_step_abort(c);
    everr(&ev, "replace: the rewrite would make the graph cyclic");
    reject_ev(c, r, m, &ev, r->line);
    goto done;
  }
  for (bool again = true; again;) {
    again = false;
    for (uint32_t j = 0; j < m->n_nodes; j++) {
      OxNodeId id = m->nodes[j];
      if (g->nodes[id].erased || g->nodes[id].n_users || ox_pat_is_mutating(g, id)) continue;
      erase_node(&ev, id);
      again = true;
    }
  }
  if (ox_step_commit(c)) {
    if (r->count) ox_counter_add(c, r->counter ? r->counter : c->pass->name, 1);
    result = 1;
  }
done:
  ev_free(&ev);
  return result;
}

static int rules_pass_run(OxPassCtx *c) {
  const RulePass *rp = (const RulePass *)(const void *)c->pass; /* info is the first member */
  if (rp->batch) {
    const Rule *r = &rp->set->rules[rp->rules[0]];
    uint32_t s0 = c->trace ? c->trace->n_steps : 0;
    int n = ox_batch_apply(c, &r->row);
    for (uint32_t i = s0; c->trace && i < c->trace->n_steps; i++) {
      c->trace->steps[i].rule_file = ox_trace_intern(c->trace, r->file);
      c->trace->steps[i].rule_line = r->line;
    }
    return n;
  }
  return ox_pat_pass_run(c, rp->entries, rp->n_rules);
}

/* ------------------------------------------------------------------ the API */

void ox_rules_free(OxRuleSet *rs) {
  if (!rs) return;
  for (uint32_t i = 0; i < rs->n_rules; i++) {
    free(rs->rules[i].syms);
    free(rs->rules[i].cl);
    free(rs->rules[i].st);
  }
  for (uint32_t i = 0; i < rs->n_passes; i++) {
    free(rs->passes[i].rules);
    free(rs->passes[i].entries);
  }
  free(rs->rules);
  free(rs->passes);
  ox_pat_pool_free(rs->pool);
  free(rs);
}

int ox_rules_load_buffer(const char *text, size_t len, const char *path, OxRuleSet **out, OxDiagList *d) {
  *out = NULL;
  if (!path) path = "<rules>";
  if (d && !d->file) d->file = path;
  OxRuleSet *rs = ox_xcalloc(1, sizeof *rs);
  rs->pool = ox_pat_pool_new();
  ox_pat_pool_located(rs->pool, true);
  rs->ag = ox_pat_pool_values(rs->pool);
  rs->file = ox_graph_intern(rs->ag, path);
  rs->src = ox_arena_strndup(&rs->ag->arena, text ? text : "", text ? len : 0);
  P p;
  memset(&p, 0, sizeof p);
  p.rs = rs;
  p.src = rs->src;
  p.len = text ? len : 0;
  p.file = rs->file;
  p.d = d;
  p.ag = rs->ag;
  p.pool = rs->pool;
  OxDiagList scratch;
  if (!d) {
    ox_diags_init(&scratch, path);
    p.d = &scratch;
  }
  lex(&p);
  parse_file(&p);
  free(p.t);
  if (!d) ox_diags_clear(&scratch);
  if (p.errors) {
    ox_rules_free(rs);
    return -1;
  }
  for (uint32_t i = 0; i < rs->n_passes; i++) {
    RulePass *rp = &rs->passes[i];
    const Rule *r0 = &rs->rules[rp->rules[0]];
    rp->set = rs;
    rp->info.run = rules_pass_run;
    rp->info.engine = rp->batch ? OX_ENGINE_BATCH : OX_ENGINE_PATTERN;
    int phase = rp->batch ? (int)r0->row.phase : rp->block ? rp->phase : r0->phase;
    rp->info.phase = phase == OX_PHASE_POST ? OX_PHASE_POST : OX_PHASE_PRE;
    char sum[256];
    snprintf(sum, sizeof sum, "%s from %s:%u", rp->batch ? "batch rule" : "rules", rs->file, rp->line);
    rp->info.summary = ox_graph_intern(rs->ag, sum);
    rp->opt = r0->opt;
    rp->entries = ox_xcalloc(rp->n_rules, sizeof *rp->entries);
    for (uint32_t k = 0; k < rp->n_rules; k++) {
      Rule *r = &rs->rules[rp->rules[k]];
      r->pass_index = i;
      r->src = rs->src;
      rp->entries[k] = (OxPatEntry){r->name, r->pattern, NULL, rule_handler, r};
    }
  }
  *out = rs;
  return 0;
}

int ox_rules_load(const char *path, OxRuleSet **out, OxDiagList *d) {
  *out = NULL;
  char err[512];
  size_t len;
  char *text = ox_read_file(path, &len, 16u << 20, err, sizeof err);
  if (!text) {
    if (d) {
      if (!d->file) d->file = path;
      ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "%s", err);
    }
    return -1;
  }
  int rc = ox_rules_load_buffer(text, len, path, out, d);
  free(text);
  return rc;
}

const char *ox_rules_file(const OxRuleSet *rs) { return rs ? rs->file : NULL; }
uint32_t ox_rules_pass_count(const OxRuleSet *rs) { return rs ? rs->n_passes : 0; }

const OxPassInfo *ox_rules_pass(const OxRuleSet *rs, uint32_t i) {
  return rs && i < rs->n_passes ? &rs->passes[i].info : NULL;
}

void ox_rules_pass_options(const OxRuleSet *rs, uint32_t i, OxPassOptions *out) {
  if (rs && i < rs->n_passes)
    *out = rs->passes[i].opt;
  else
    ox_pass_options_default(out);
}

const OxBatchRule *ox_rules_pass_batch(const OxRuleSet *rs, uint32_t i) {
  if (!rs || i >= rs->n_passes || !rs->passes[i].batch) return NULL;
  return &rs->rules[rs->passes[i].rules[0]].row;
}

void ox_rules_append(const OxRuleSet *rs, OxPipeline *p) {
  if (!rs || !rs->n_passes) return;
  p->entries = ox_xrealloc(p->entries, (p->n + rs->n_passes) * sizeof *p->entries);
  for (uint32_t i = 0; i < rs->n_passes; i++) {
    p->entries[p->n].pass = &rs->passes[i].info;
    p->entries[p->n].opt = rs->passes[i].opt;
    p->n++;
  }
}

const OxRuleSet *ox_rules_of_pass(const OxPassInfo *pass) {
  if (!pass || pass->run != rules_pass_run) return NULL;
  return ((const RulePass *)(const void *)pass)->set;
}

uint32_t ox_rules_count(const OxRuleSet *rs) { return rs ? rs->n_rules : 0; }

void ox_rules_info(const OxRuleSet *rs, uint32_t i, OxRuleInfo *out) {
  memset(out, 0, sizeof *out);
  if (!rs || i >= rs->n_rules) return;
  const Rule *r = &rs->rules[i];
  out->name = r->name;
  out->pass = rs->passes[r->pass_index].info.name;
  out->file = r->file;
  out->line = r->line;
  out->col = r->col;
  out->batch = r->batch;
}
