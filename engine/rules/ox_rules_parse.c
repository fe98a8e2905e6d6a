/* ox_rules_parse.c - the rule language's parser: token helpers, op spellings, patterns and
 * expressions.
 *
 * Patterns compile straight to OxPat trees in the rule set's pool, every sub-pattern stamped
 * with its file and line; captures become symbols of the rule being parsed. Expressions become
 * Expr trees (checked later by ox_rules_check.c). Every recursive production goes through
 * ox_rules_enter/leave, and chains parsed in loops are refused by the height of the tree they
 * build, so no input recurses deeper than RULE_MAX_DEPTH.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/ox_rules_private.h"

/* ------------------------------------------------------------------ parser helpers */

Tok *ox_rules_pk(P *p) { return &p->t[p->i]; }
Tok *ox_rules_pk_at(P *p, uint32_t k) { return &p->t[p->i + k < p->n ? p->i + k : p->n - 1]; }
Tok *ox_rules_adv(P *p) {
  Tok *t = &p->t[p->i];
  if (t->k != TK_EOF) p->i++;
  return t;
}
bool ox_rules_is_p(const Tok *t, const char *s) { return t->k == TK_P && strcmp(t->s, s) == 0; }
bool ox_rules_is_id(const Tok *t, const char *s) { return t->k == TK_ID && strcmp(t->s, s) == 0; }
static uint32_t prev_end(const P *p) { return p->i ? p->t[p->i - 1].off + p->t[p->i - 1].len : 0; }

const char *ox_rules_tok_desc(const P *p, const Tok *t, char *buf, size_t cap) {
  if (t->k == TK_EOF) return "end of file";
  if (t->k == TK_NL) return t->len ? "end of line" : "end of file";
  snprintf(buf, cap, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), p->src + t->off);
  return buf;
}

bool ox_rules_expect_p(P *p, const char *s, const char *what) {
  if (ox_rules_is_p(ox_rules_pk(p), s)) {
    ox_rules_adv(p);
    return true;
  }
  char b[64];
  ERR_TOK(p, ox_rules_pk(p), "expected '%s' %s, found %s", s, what,
          ox_rules_tok_desc(p, ox_rules_pk(p), b, sizeof b));
  return false;
}

bool ox_rules_expect_id(P *p, const char *s, const char *what) {
  if (ox_rules_is_id(ox_rules_pk(p), s)) {
    ox_rules_adv(p);
    return true;
  }
  char b[64];
  ERR_TOK(p, ox_rules_pk(p), "expected '%s' %s, found %s", s, what,
          ox_rules_tok_desc(p, ox_rules_pk(p), b, sizeof b));
  return false;
}

void ox_rules_skip_nl(P *p) {
  while (ox_rules_pk(p)->k == TK_NL)
    ox_rules_adv(p);
}

/* A line that starts with then / else / and / or / ++ / if continues the expression above. */
bool ox_rules_continues(P *p, const char *word) {
  uint32_t k = 0;
  while (ox_rules_pk_at(p, k)->k == TK_NL)
    k++;
  const Tok *t = ox_rules_pk_at(p, k);
  if (!k || !((t->k == TK_ID || t->k == TK_P) && strcmp(t->s, word) == 0)) return false;
  ox_rules_skip_nl(p);
  return true;
}

/* end of a statement: a newline, or the closing brace of the block */
bool ox_rules_end_stmt(P *p) {
  Tok *t = ox_rules_pk(p);
  if (t->k == TK_NL) {
    ox_rules_skip_nl(p);
    return true;
  }
  if (ox_rules_is_p(t, "}")) return true;
  char b[64];
  ERR_TOK(p, t, "expected the end of the line, found %s", ox_rules_tok_desc(p, t, b, sizeof b));
  return false;
}

static const char *const reserved[] = {
    "rule", "batch",  "pass",  "match",      "where",    "when",   "let",    "replace", "if",   "then",
    "else", "and",    "or",    "not",        "in",       "for",    "True",   "False",   "None", "each",
    "some", "repeat", "users", "normalized", "function", "method", "module", "_"};

bool ox_rules_is_reserved(const char *s) {
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
const OxSpelling *ox_rules_spelling_named(const char *name) {
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
const OxSpelling *ox_rules_spelling_for(OxOpId id, bool post) {
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

const char *ox_rules_strip_ops(const char *t) { return starts(t, "torch.ops.") ? t + 10 : t; }

/* ------------------------------------------------------------------ patterns */

void ox_rules_pat_loc(P *p, const Tok *t) { ox_pat_pool_loc(p->pool, p->file, t->line); }

int ox_rules_sym_find(const Rule *r, const char *name) {
  for (int i = (int)r->n_syms - 1; i >= 0; i--)
    if (r->syms[i].visible && strcmp(r->syms[i].name, name) == 0) return i;
  return -1;
}

int ox_rules_sym_add(Rule *r, const char *name, uint8_t kind, uint8_t ty, uint8_t ety, const Tok *t) {
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
  int k = ox_rules_sym_find(r, name);
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
  k = ox_rules_sym_add(r, name, SYM_CAPTURE, in_list ? TY_LIST : (is_node ? TY_NODE : TY_ANY),
                       is_node ? TY_NODE : TY_ANY, t);
  r->syms[k].in_list = in_list;
}

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
  if (!ox_rules_enter(p, ox_rules_pk(p), "constant")) return false;
  p->ph = 1;
  bool ok = parse_const_in(p, out);
  ox_rules_leave(p);
  return ok;
}

static bool parse_const_in(P *p, OxValue *out) {
  Tok *t = ox_rules_pk(p);
  bool neg = false;
  if (ox_rules_is_p(t, "-")) {
    ox_rules_adv(p);
    neg = true;
    t = ox_rules_pk(p);
    if (t->k != TK_INT && t->k != TK_FLOAT) {
      char b[64];
      ERR_TOK(p, t, "expected a number after '-', found %s", ox_rules_tok_desc(p, t, b, sizeof b));
      return false;
    }
  }
  if (t->k == TK_INT) {
    ox_rules_adv(p);
    *out = ox_value_int(neg ? -t->i : t->i);
    return true;
  }
  if (t->k == TK_FLOAT) {
    ox_rules_adv(p);
    *out = ox_value_float(neg ? -t->f : t->f);
    return true;
  }
  if (t->k == TK_STR) {
    ox_rules_adv(p);
    *out = ox_graph_value_str(p->ag, OX_V_STR, t->s);
    return true;
  }
  if (ox_rules_is_id(t, "True") || ox_rules_is_id(t, "False")) {
    ox_rules_adv(p);
    *out = ox_value_bool(ox_rules_is_id(t, "True"));
    return true;
  }
  if (ox_rules_is_id(t, "None")) {
    ox_rules_adv(p);
    *out = ox_value_none();
    return true;
  }
  if (t->k == TK_ID && starts(t->s, "torch.") &&
      ox_dtype_from_torch_name(t->s, strlen(t->s)) != OX_DT_UNKNOWN) {
    ox_rules_adv(p);
    *out = ox_value_dtype(ox_dtype_from_torch_name(t->s, strlen(t->s)));
    return true;
  }
  if (ox_rules_is_p(t, "[")) {
    ox_rules_adv(p);
    OxValue items[64];
    uint32_t n = 0, h = 0;
    while (!ox_rules_is_p(ox_rules_pk(p), "]")) {
      if (n == 64) {
        ERR_TOK(p, ox_rules_pk(p), "a constant list in a pattern holds at most 64 items");
        return false;
      }
      Tok *it = ox_rules_pk(p);
      if (!parse_const(p, &items[n])) {
        if (it == ox_rules_pk(p) && it->k == TK_ID)
          ERR_TOK(
              p, it,
              "a list in a pattern holds constants only; match list arguments with each(...) or some(...)");
        return false;
      }
      if (p->ph > h) h = p->ph;
      n++;
      if (!ox_rules_is_p(ox_rules_pk(p), ",")) break;
      ox_rules_adv(p);
    }
    if (!ox_rules_expect_p(p, "]", "to close the constant list")) return false;
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
  const OxSpelling *sp = ox_rules_spelling_named(t->s);
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
    const char *bare = ox_rules_strip_ops(sp->target);
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
  return ox_rules_is_id(t, "function") || ox_rules_is_id(t, "method") || ox_rules_is_id(t, "module");
}

static OxPat *parse_call(P *p) {
  CallHead h;
  memset(&h, 0, sizeof h);
  unsigned kinds = 0;
  Tok *head = ox_rules_pk(p);
  if (is_kind_word(ox_rules_pk(p))) {
    for (;;) {
      Tok *k = ox_rules_adv(p);
      kinds |= ox_rules_is_id(k, "function") ? OX_PAT_FUNCTION
               : ox_rules_is_id(k, "method") ? OX_PAT_METHOD
                                             : OX_PAT_MODULE;
      if (ox_rules_is_p(ox_rules_pk(p), "|") && is_kind_word(ox_rules_pk_at(p, 1))) {
        ox_rules_adv(p);
        continue;
      }
      break;
    }
  }
  bool ok = true;
  for (;;) {
    Tok *t = ox_rules_pk(p);
    if (t->k != TK_ID || ox_rules_is_reserved(t->s)) {
      char b[64];
      ERR_TOK(p, t, "expected an op name, found %s", ox_rules_tok_desc(p, t, b, sizeof b));
      return NULL;
    }
    ox_rules_adv(p);
    if (!head_add(p, &h, t)) ok = false;
    if (!ox_rules_is_p(ox_rules_pk(p), "|")) break;
    ox_rules_adv(p);
  }
  if (!ox_rules_expect_p(p, "(", "after the op name")) return NULL;
  OxPat *args[OX_MAX_SLOTS + 8];
  const char *kwn[OX_MAX_SLOTS + 8];
  OxPat *kwv[OX_MAX_SLOTS + 8];
  uint32_t na = 0, nk = 0, ht = 0;
  bool varargs = false;
  if (ox_rules_is_p(ox_rules_pk(p), "*") && ox_rules_is_p(ox_rules_pk_at(p, 1), ")")) {
    ox_rules_adv(p);
    varargs = true;
  } else {
    while (!ox_rules_is_p(ox_rules_pk(p), ")")) {
      Tok *t = ox_rules_pk(p);
      if (na + nk >= OX_MAX_SLOTS + 8) {
        ERR_TOK(p, t, "too many arguments in a call pattern");
        return NULL;
      }
      if (t->k == TK_ID && ox_rules_is_p(ox_rules_pk_at(p, 1), "=")) {
        ox_rules_adv(p);
        ox_rules_adv(p);
        OxPat *v = ox_rules_parse_pat(p);
        if (!v) return NULL;
        if (p->ph > ht) ht = p->ph;
        for (uint32_t i = 0; i < nk; i++)
          if (strcmp(kwn[i], t->s) == 0) ERR_TOK(p, t, "keyword argument '%s' given twice", t->s);
        kwn[nk] = t->s;
        kwv[nk++] = v;
      } else {
        if (nk) ERR_TOK(p, t, "positional argument after keyword arguments");
        OxPat *v = ox_rules_parse_pat(p);
        if (!v) return NULL;
        if (p->ph > ht) ht = p->ph;
        args[na++] = v;
      }
      if (!ox_rules_is_p(ox_rules_pk(p), ",")) break;
      ox_rules_adv(p);
    }
  }
  if (!ox_rules_expect_p(p, ")", "to close the call pattern")) return NULL;
  if (!set_ph(p, head, ht + 1, "pattern")) return NULL;
  (void)ok; /* an unknown op was reported; the call is still built so parsing goes on */
  ox_rules_pat_loc(p, head);
  OxPat *x = varargs ? ox_pat_call_varargs(p->pool, kinds ? kinds : h.kinds, h.ops, h.n_ops)
                     : ox_pat_call(p->pool, kinds ? kinds : h.kinds, h.ops, h.n_ops, args, na);
  for (uint32_t i = 0; i < h.n_targets; i++)
    ox_pat_call_target(p->pool, x, h.targets[i]);
  for (uint32_t i = 0; i < nk; i++)
    ox_pat_call_kw(p->pool, x, kwn[i], kwv[i]);
  return x;
}

static OxPat *parse_pat_prim(P *p) {
  Tok *t = ox_rules_pk(p);
  char b[64];
  if (ox_rules_is_p(t, "(")) {
    ox_rules_adv(p);
    OxPat *x = ox_rules_parse_pat(p);
    if (!x || !ox_rules_expect_p(p, ")", "to close the parenthesized pattern")) return NULL;
    return x;
  }
  if (ox_rules_is_id(t, "_")) {
    ox_rules_adv(p);
    ox_rules_pat_loc(p, t);
    p->ph = 1;
    return ox_pat_ignored(p->pool);
  }
  if ((ox_rules_is_id(t, "each") || ox_rules_is_id(t, "some") || ox_rules_is_id(t, "repeat")) &&
      ox_rules_is_p(ox_rules_pk_at(p, 1), "(")) {
    ox_rules_adv(p);
    ox_rules_adv(p);
    p->list_depth++;
    OxPat *inner = ox_rules_parse_pat(p);
    p->list_depth--;
    if (!inner || !ox_rules_expect_p(p, ")", "to close the list pattern")) return NULL;
    if (!set_ph(p, t, p->ph + 1, "pattern")) return NULL;
    ox_rules_pat_loc(p, t);
    if (ox_rules_is_id(t, "repeat")) {
      if (inner->kind != OX_PAT_CALL) ERR_TOK(p, t, "repeat(...) takes a call pattern");
      return ox_pat_repeated(p->pool, inner);
    }
    return ox_pat_list(p->pool, inner, ox_rules_is_id(t, "some"));
  }
  if (t->k == TK_INT || t->k == TK_FLOAT || t->k == TK_STR || ox_rules_is_p(t, "-") ||
      ox_rules_is_p(t, "[") || ox_rules_is_id(t, "True") || ox_rules_is_id(t, "False") ||
      ox_rules_is_id(t, "None") ||
      (t->k == TK_ID && starts(t->s, "torch.") &&
       ox_dtype_from_torch_name(t->s, strlen(t->s)) != OX_DT_UNKNOWN)) {
    OxValue v;
    if (!parse_const(p, &v)) {
      if (ox_rules_pk(p) == t)
        ERR_TOK(p, t, "expected a constant, found %s", ox_rules_tok_desc(p, t, b, sizeof b));
      return NULL;
    }
    ox_rules_pat_loc(p, t);
    return ox_pat_const(p->pool, &v);
  }
  if (t->k == TK_ID && (is_kind_word(t) || ox_rules_is_p(ox_rules_pk_at(p, 1), "(") ||
                        ox_rules_is_p(ox_rules_pk_at(p, 1), "|")))
    return parse_call(p);
  if (t->k == TK_ID) {
    if (ox_rules_is_reserved(t->s) || strchr(t->s, '.')) {
      ERR_TOK(p, t, "expected a pattern, found %s%s", ox_rules_tok_desc(p, t, b, sizeof b),
              strchr(t->s, '.') ? " (a call needs its arguments: NAME(...))" : " (a reserved word)");
      ox_rules_adv(p);
      return NULL;
    }
    ox_rules_adv(p);
    add_capture(p, t, t->s, false);
    ox_rules_pat_loc(p, t);
    p->ph = 1;
    return ox_pat_kwarg(p->pool, t->s);
  }
  ERR_TOK(p, t, "expected a pattern, found %s", ox_rules_tok_desc(p, t, b, sizeof b));
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
    Tok *t = ox_rules_pk(p);
    if (ox_rules_is_p(t, "[")) { /* x[k]: getitem sugar */
      uint32_t hx = p->ph;
      ox_rules_adv(p);
      OxPat *idx = ox_rules_parse_pat(p);
      if (!idx || !ox_rules_expect_p(p, "]", "to close the getitem pattern")) return NULL;
      if (!set_ph(p, t, (hx > p->ph ? hx : p->ph) + 1, "pattern")) return NULL;
      ox_rules_pat_loc(p, t);
      x = ox_pat_getitem(p->pool, x, idx, 1);
      continue;
    }
    if (ox_rules_is_id(t, "users")) {
      ox_rules_adv(p);
      if (!ox_rules_expect_p(p, "=", "after users")) return NULL;
      Tok *v = ox_rules_adv(p);
      int32_t u;
      if (ox_rules_is_p(v, "*"))
        u = OX_PAT_USERS_ANY;
      else if (v->k == TK_INT && v->i < 1000000)
        u = (int32_t)v->i;
      else {
        char b[64];
        ERR_TOK(p, v, "users= takes a count or '*', found %s", ox_rules_tok_desc(p, v, b, sizeof b));
        return NULL;
      }
      if (x->kind != OX_PAT_CALL)
        ERR_TOK(p, t, "users= applies to a call pattern");
      else
        ox_pat_call_users(x, u);
      continue;
    }
    if (ox_rules_is_id(t, "normalized")) {
      ox_rules_adv(p);
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

OxPat *ox_rules_parse_pat(P *p) {
  if (!ox_rules_enter(p, ox_rules_pk(p), "pattern")) return NULL;
  OxPat *x = parse_pat_in(p);
  ox_rules_leave(p);
  return x;
}

static OxPat *parse_pat_in(P *p) {
  Tok *t = ox_rules_pk(p);
  Tok *bind = NULL;
  if (t->k == TK_ID && ox_rules_is_p(ox_rules_pk_at(p, 1), "@")) {
    bind = t;
    ox_rules_adv(p);
    ox_rules_adv(p);
    if (ox_rules_is_reserved(t->s) || strchr(t->s, '.')) ERR_TOK(p, t, "'%s' cannot name a capture", t->s);
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

static Expr *parse_primary(P *p) {
  Tok *t = ox_rules_pk(p);
  char b[64];
  if (t->k == TK_INT) {
    ox_rules_adv(p);
    Expr *x = ex_new(p, X_INT, t);
    x->i = t->i;
    return x;
  }
  if (t->k == TK_FLOAT) {
    ox_rules_adv(p);
    Expr *x = ex_new(p, X_FLOAT, t);
    x->f = t->f;
    return x;
  }
  if (t->k == TK_STR) {
    ox_rules_adv(p);
    Expr *x = ex_new(p, X_STR, t);
    x->s = t->s;
    return x;
  }
  if (ox_rules_is_id(t, "True") || ox_rules_is_id(t, "False")) {
    ox_rules_adv(p);
    Expr *x = ex_new(p, X_BOOL, t);
    x->i = ox_rules_is_id(t, "True");
    return x;
  }
  if (ox_rules_is_id(t, "None")) {
    ox_rules_adv(p);
    return ex_new(p, X_NONE, t);
  }
  if (ox_rules_is_p(t, "(")) {
    ox_rules_adv(p);
    Expr *x = ox_rules_parse_expr(p);
    if (!x || !ox_rules_expect_p(p, ")", "to close the parenthesis")) return NULL;
    return x;
  }
  if (ox_rules_is_p(t, "[")) {
    ox_rules_adv(p);
    Expr *items[256];
    uint32_t n = 0;
    if (!ox_rules_is_p(ox_rules_pk(p), "]")) {
      Expr *first = ox_rules_parse_expr(p);
      if (!first) return NULL;
      if (ox_rules_is_id(ox_rules_pk(p), "for")) { /* [e for v in list if cond] */
        ox_rules_adv(p);
        Tok *v = ox_rules_adv(p);
        if (v->k != TK_ID || ox_rules_is_reserved(v->s) || strchr(v->s, '.')) {
          ERR_TOK(p, v, "expected a variable name after 'for', found %s",
                  ox_rules_tok_desc(p, v, b, sizeof b));
          return NULL;
        }
        if (!ox_rules_expect_id(p, "in", "in the comprehension")) return NULL;
        Expr *list = ox_rules_parse_expr(p);
        if (!list) return NULL;
        Expr *cond = NULL;
        if (ox_rules_is_id(ox_rules_pk(p), "if")) {
          ox_rules_adv(p);
          if (!(cond = ox_rules_parse_expr(p))) return NULL;
        }
        if (!ox_rules_expect_p(p, "]", "to close the comprehension")) return NULL;
        Expr *x = ex_new(p, X_COMP, t);
        x->s = v->s;
        Expr *k[3] = {first, list, cond};
        if (!ex_kids(p, x, k, cond ? 3 : 2)) return NULL;
        x->end = prev_end(p);
        return x;
      }
      items[n++] = first;
      while (ox_rules_is_p(ox_rules_pk(p), ",")) {
        ox_rules_adv(p);
        if (ox_rules_is_p(ox_rules_pk(p), "]")) break;
        if (n == 256) {
          ERR_TOK(p, ox_rules_pk(p), "a list literal holds at most 256 items");
          return NULL;
        }
        if (!(items[n++] = ox_rules_parse_expr(p))) return NULL;
      }
    }
    if (!ox_rules_expect_p(p, "]", "to close the list")) return NULL;
    Expr *x = ex_kids(p, ex_new(p, X_LIST, t), items, n);
    if (!x) return NULL;
    x->end = prev_end(p);
    return x;
  }
  if (t->k == TK_ID && (!ox_rules_is_reserved(t->s) ||
                        (ox_rules_is_p(ox_rules_pk_at(p, 1), "(") && ox_rules_builtin_find(t->s) >= 0))) {
    ox_rules_adv(p);
    if (ox_rules_is_p(ox_rules_pk(p), "(")) {
      ox_rules_adv(p);
      Expr *args[32], *kv[16];
      const char *kw[16];
      uint32_t na = 0, nk = 0;
      while (!ox_rules_is_p(ox_rules_pk(p), ")")) {
        Tok *a = ox_rules_pk(p);
        if (na == 32 || nk == 16) {
          ERR_TOK(p, a, "too many arguments");
          return NULL;
        }
        if (a->k == TK_ID && ox_rules_is_p(ox_rules_pk_at(p, 1), "=")) {
          ox_rules_adv(p);
          ox_rules_adv(p);
          kw[nk] = a->s;
          if (!(kv[nk++] = ox_rules_parse_expr(p))) return NULL;
        } else {
          if (nk) ERR_TOK(p, a, "positional argument after keyword arguments");
          if (!(args[na++] = ox_rules_parse_expr(p))) return NULL;
        }
        if (!ox_rules_is_p(ox_rules_pk(p), ",")) break;
        ox_rules_adv(p);
      }
      if (!ox_rules_expect_p(p, ")", "to close the call")) return NULL;
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
  ERR_TOK(p, t, "expected an expression, found %s", ox_rules_tok_desc(p, t, b, sizeof b));
  return NULL;
}

Expr *ox_rules_parse_postfix(P *p) {
  Expr *x = parse_primary(p);
  while (x && ox_rules_is_p(ox_rules_pk(p), "[")) {
    Tok *t = ox_rules_adv(p);
    Expr *lo = NULL, *hi = NULL;
    bool slice = false;
    if (!ox_rules_is_p(ox_rules_pk(p), ":") && !(lo = ox_rules_parse_expr(p))) return NULL;
    if (ox_rules_is_p(ox_rules_pk(p), ":")) {
      ox_rules_adv(p);
      slice = true;
      if (!ox_rules_is_p(ox_rules_pk(p), "]") && !(hi = ox_rules_parse_expr(p))) return NULL;
    }
    if (!ox_rules_expect_p(p, "]", "to close the index")) return NULL;
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
  while (ox_rules_is_p(ox_rules_pk(p), "-")) {
    ox_rules_adv(p);
    n++;
  }
  Expr *a = ox_rules_parse_postfix(p);
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
    Tok *t = ox_rules_pk(p);
    uint8_t op = ox_rules_is_p(t, "*")    ? B_MUL
                 : ox_rules_is_p(t, "/")  ? B_DIV
                 : ox_rules_is_p(t, "//") ? B_FDIV
                 : ox_rules_is_p(t, "%")  ? B_MOD
                                          : 255;
    if (op == 255) break;
    ox_rules_adv(p);
    Expr *r = parse_unary(p);
    if (!r) return NULL;
    x = ex_bin(p, op, x, r, t);
  }
  return x;
}

static Expr *parse_add(P *p) {
  Expr *x = parse_mul(p);
  while (x) {
    Tok *t = ox_rules_pk(p);
    uint8_t op = ox_rules_is_p(t, "+") ? B_ADD : ox_rules_is_p(t, "-") ? B_SUB : 255;
    if (op == 255) break;
    ox_rules_adv(p);
    Expr *r = parse_mul(p);
    if (!r) return NULL;
    x = ex_bin(p, op, x, r, t);
  }
  return x;
}

static Expr *parse_concat(P *p) {
  Expr *x = parse_add(p);
  while (x && (ox_rules_is_p(ox_rules_pk(p), "++") || ox_rules_continues(p, "++"))) {
    Tok *t = ox_rules_adv(p);
    Expr *r = parse_add(p);
    if (!r) return NULL;
    x = ex_bin(p, B_CAT, x, r, t);
  }
  return x;
}

static Expr *parse_cmp(P *p) {
  Expr *x = parse_concat(p);
  if (!x) return NULL;
  Tok *t = ox_rules_pk(p);
  uint8_t op = ox_rules_is_p(t, "==")    ? B_EQ
               : ox_rules_is_p(t, "!=")  ? B_NE
               : ox_rules_is_p(t, "<")   ? B_LT
               : ox_rules_is_p(t, "<=")  ? B_LE
               : ox_rules_is_p(t, ">")   ? B_GT
               : ox_rules_is_p(t, ">=")  ? B_GE
               : ox_rules_is_id(t, "in") ? B_IN
                                         : 255;
  if (op == 255) return x;
  ox_rules_adv(p);
  Expr *r = parse_concat(p);
  if (!r) return NULL;
  return ex_bin(p, op, x, r, t);
}

/* "not" not: read in a loop like unary minus */
static Expr *parse_not(P *p) {
  uint32_t first = p->i, n = 0;
  while (ox_rules_is_id(ox_rules_pk(p), "not")) {
    ox_rules_adv(p);
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
  while (x && (ox_rules_is_id(ox_rules_pk(p), "and") || ox_rules_continues(p, "and"))) {
    Tok *t = ox_rules_adv(p);
    Expr *r = parse_not(p);
    if (!r) return NULL;
    x = ex_bin(p, B_AND, x, r, t);
  }
  return x;
}

static Expr *parse_or(P *p) {
  Expr *x = parse_and(p);
  while (x && (ox_rules_is_id(ox_rules_pk(p), "or") || ox_rules_continues(p, "or"))) {
    Tok *t = ox_rules_adv(p);
    Expr *r = parse_and(p);
    if (!r) return NULL;
    x = ex_bin(p, B_OR, x, r, t);
  }
  return x;
}

static Expr *parse_expr_in(P *p);

Expr *ox_rules_parse_expr(P *p) {
  if (!ox_rules_enter(p, ox_rules_pk(p), "expression")) return NULL;
  Expr *x = parse_expr_in(p);
  ox_rules_leave(p);
  return x;
}

static Expr *parse_expr_in(P *p) {
  Tok *t = ox_rules_pk(p);
  if (ox_rules_is_id(t, "if")) {
    ox_rules_adv(p);
    Expr *c = ox_rules_parse_expr(p);
    if (c) ox_rules_continues(p, "then");
    if (!c || !ox_rules_expect_id(p, "then", "after the condition of 'if'")) return NULL;
    Expr *a = ox_rules_parse_expr(p);
    if (a) ox_rules_continues(p, "else");
    if (!a || !ox_rules_expect_id(p, "else", "in 'if ... then ... else ...'")) return NULL;
    Expr *b = ox_rules_parse_expr(p);
    if (!b) return NULL;
    Expr *k[3] = {c, a, b};
    Expr *x = ex_kids(p, ex_new(p, X_IF, t), k, 3);
    if (!x) return NULL;
    x->end = b->end;
    return x;
  }
  return parse_or(p);
}
