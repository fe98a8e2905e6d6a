/* ox_rules_compile.c - the rule language's top level: rule, pass and batch blocks compiled into
 * the OxRuleSet.
 *
 * A `rule` block becomes a Rule (its pattern, where/when/let clauses, replacement statements,
 * symbols) and an OxPatEntry of its pass; a `pass` block groups rules under one OxPassInfo; a
 * `batch` block becomes one OxBatchRule row run by ox_batch_apply. Loading is all or nothing:
 * after an error the rest of the block is skipped to report further errors, and the loader
 * returns nothing.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/ox_rules_private.h"

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
  Tok *t = ox_rules_pk(p);
  if (ox_rules_is_p(t, "}") || t->k == TK_EOF) return true;
  if (t->k == TK_ID && ox_rules_is_p(ox_rules_pk_at(p, 1), ":") &&
      (ox_rules_is_id(t, "match") || ox_rules_is_id(t, "where") || ox_rules_is_id(t, "when") ||
       ox_rules_is_id(t, "replace") || ox_rules_is_id(t, "phase") || ox_rules_is_id(t, "counter")))
    return true;
  return ox_rules_is_id(t, "let") && ox_rules_pk_at(p, 1)->k == TK_ID &&
         ox_rules_is_p(ox_rules_pk_at(p, 2), "=");
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
  Tok *v = ox_rules_adv(p);
  if (ox_rules_is_id(v, "pre"))
    *out = OX_PHASE_PRE;
  else if (ox_rules_is_id(v, "post"))
    *out = OX_PHASE_POST;
  else if (ox_rules_is_id(v, "any"))
    *out = -1;
  else {
    char b[64];
    ERR_TOK(p, v, "phase is pre, post or any, not %s", ox_rules_tok_desc(p, v, b, sizeof b));
    return false;
  }
  return true;
}

static bool parse_stmt(P *p, Rule *r) {
  Tok *t = ox_rules_pk(p);
  char b[64];
  Stmt s;
  memset(&s, 0, sizeof s);
  s.line = t->line;
  s.col = t->col;
  s.slot = s.target = s.var_slot = -1;
  if (t->k == TK_ID && !ox_rules_is_reserved(t->s) && ox_rules_is_p(ox_rules_pk_at(p, 1), "=")) {
    ox_rules_adv(p);
    ox_rules_adv(p);
    s.k = ST_LET;
    s.name = t->s;
  } else if (t->k == TK_ID && !ox_rules_is_reserved(t->s) && ox_rules_is_p(ox_rules_pk_at(p, 1), "=>")) {
    ox_rules_adv(p);
    ox_rules_adv(p);
    s.k = ST_REPLACE;
    s.name = t->s;
  } else if (ox_rules_is_id(t, "for")) { /* for v in list: target => expr */
    ox_rules_adv(p);
    Tok *v = ox_rules_adv(p);
    if (v->k != TK_ID || ox_rules_is_reserved(v->s) || strchr(v->s, '.')) {
      ERR_TOK(p, v, "expected a variable name after 'for', found %s", ox_rules_tok_desc(p, v, b, sizeof b));
      return false;
    }
    if (!ox_rules_expect_id(p, "in", "in 'for ... in ...:'")) return false;
    s.k = ST_FOR;
    s.var = v->s;
    if (!(s.list = ox_rules_parse_expr(p)) || !ox_rules_expect_p(p, ":", "after 'for ... in LIST'"))
      return false;
    Tok *tt = ox_rules_pk(p);
    if (!(s.tgt = ox_rules_parse_postfix(p))) return false;
    s.name = tt->k == TK_ID ? tt->s : "?";
    if (!ox_rules_expect_p(p, "=>", "after the target of the replacement")) return false;
  } else if (t->k == TK_ID && ox_rules_is_p(ox_rules_pk_at(p, 1), "[") && ox_rules_pk_at(p, 2)->k == TK_ID &&
             ox_rules_is_p(ox_rules_pk_at(p, 3), "]") && ox_rules_is_p(ox_rules_pk_at(p, 4), "=>")) {
    s.k = ST_EACH;
    s.name = t->s;
    s.var = ox_rules_pk_at(p, 2)->s;
    for (int i = 0; i < 5; i++)
      ox_rules_adv(p);
  } else {
    ERR_TOK(p, t,
            "expected a replacement statement (NAME = expr, NAME => expr, NAME[i] => expr or for v in LIST: "
            "TARGET => expr), found %s",
            ox_rules_tok_desc(p, t, b, sizeof b));
    return false;
  }
  if (!(s.e = ox_rules_parse_expr(p))) return false;
  if (s.k == ST_EACH && (ox_rules_is_id(ox_rules_pk(p), "if") || ox_rules_continues(p, "if"))) {
    ox_rules_adv(p);
    if (!(s.cond = ox_rules_parse_expr(p))) return false;
  }
  add_stmt(r, s);
  return true;
}

/* The clauses of a rule, after its '{'. */
static bool parse_rule_body(P *p, uint32_t ri) {
  Rule *r = &p->rs->rules[ri];
  p->cur = r;
  ox_rules_skip_nl(p);
  while (!ox_rules_is_p(ox_rules_pk(p), "}")) {
    Tok *t = ox_rules_pk(p);
    char b[64];
    if (t->k == TK_EOF) {
      ERR_TOK(p, t, "missing '}' at the end of rule '%s' (line %u)", r->name, r->line);
      return false;
    }
    if (ox_rules_is_id(t, "match") && ox_rules_is_p(ox_rules_pk_at(p, 1), ":")) {
      ox_rules_adv(p);
      ox_rules_adv(p);
      if (r->has_match) ERR_TOK(p, t, "rule '%s' has two match: clauses", r->name);
      OxPat *outs[16];
      uint32_t n = 0;
      for (;;) {
        OxPat *x = ox_rules_parse_pat(p);
        if (!x) return false;
        if (n < 16) outs[n++] = x;
        if (!ox_rules_is_p(ox_rules_pk(p), ",")) break;
        ox_rules_adv(p);
      }
      ox_rules_pat_loc(p, t);
      r->pattern = n == 1 ? outs[0] : ox_pat_multi(p->pool, outs, n);
      if (n > 1 && outs[0]->kind != OX_PAT_CALL)
        ERR_TOK(p, t, "the first pattern of a multi-output match must be a call");
      r->has_match = true;
    } else if (ox_rules_is_id(t, "phase") && ox_rules_is_p(ox_rules_pk_at(p, 1), ":")) {
      ox_rules_adv(p);
      ox_rules_adv(p);
      if (!parse_phase(p, &r->phase)) return false;
    } else if (ox_rules_is_id(t, "counter") && ox_rules_is_p(ox_rules_pk_at(p, 1), ":")) {
      ox_rules_adv(p);
      ox_rules_adv(p);
      Tok *v = ox_rules_adv(p);
      if (v->k != TK_ID) {
        ERR_TOK(p, v, "counter: takes a counter name or none, found %s",
                ox_rules_tok_desc(p, v, b, sizeof b));
        return false;
      }
      r->count = !ox_rules_is_id(v, "none");
      r->counter = r->count ? v->s : NULL;
    } else if ((ox_rules_is_id(t, "when") || ox_rules_is_id(t, "where")) &&
               ox_rules_is_p(ox_rules_pk_at(p, 1), ":")) {
      ox_rules_adv(p);
      ox_rules_adv(p);
      if (!r->has_match) ERR_TOK(p, t, "%s: must come after match:", t->s);
      ox_rules_skip_nl(p);
      for (;;) {
        Tok *g0 = ox_rules_pk(p);
        Expr *e = ox_rules_parse_expr(p);
        if (!e) return false;
        add_clause(r, (Clause){ox_rules_is_id(t, "when") ? CL_WHEN : CL_WHERE, e, -1, NULL, g0->line, g0->col,
                               src_text(p, e->off, e->end)});
        if (!ox_rules_end_stmt(p)) return false;
        if (clause_start(p)) break;
      }
      continue;
    } else if (ox_rules_is_id(t, "let") && ox_rules_pk_at(p, 1)->k == TK_ID &&
               ox_rules_is_p(ox_rules_pk_at(p, 2), "=")) {
      ox_rules_adv(p);
      Tok *nt = ox_rules_adv(p);
      ox_rules_adv(p);
      if (!r->has_match) ERR_TOK(p, t, "let must come after match:");
      if (ox_rules_is_reserved(nt->s)) ERR_TOK(p, nt, "'%s' is a reserved word", nt->s);
      Expr *e = ox_rules_parse_expr(p);
      if (!e) return false;
      add_clause(r, (Clause){CL_LET, e, -1, nt->s, nt->line, nt->col, NULL});
    } else if (ox_rules_is_id(t, "replace") && ox_rules_is_p(ox_rules_pk_at(p, 1), ":")) {
      ox_rules_adv(p);
      ox_rules_adv(p);
      if (!r->has_match) ERR_TOK(p, t, "replace: must come after match:");
      if (r->has_replace) ERR_TOK(p, t, "rule '%s' has two replace: clauses", r->name);
      r->has_replace = true;
      ox_rules_skip_nl(p);
      for (;;) {
        if (!parse_stmt(p, r)) return false;
        if (!ox_rules_end_stmt(p)) return false;
        if (clause_start(p)) break;
      }
      continue;
    } else {
      ERR_TOK(p, t, "expected a clause (match:, when:, where:, let, replace:, phase:, counter:), found %s",
              ox_rules_tok_desc(p, t, b, sizeof b));
      return false;
    }
    if (!ox_rules_end_stmt(p)) return false;
  }
  ox_rules_adv(p);
  return true;
}

/* Names and types of a parsed rule, in order. */
static void check_rule(P *p, Rule *r, const Tok *name) {
  p->cur = r;
  if (!r->has_match) ERR_TOK(p, name, "rule '%s' has no match: clause", r->name);
  if (!r->has_replace) ERR_TOK(p, name, "rule '%s' has no replace: clause", r->name);
  for (uint32_t i = 0; i < r->n_cl; i++) {
    Clause *c = &r->cl[i];
    ox_rules_check_expr(p, r, c->e, false);
    if (c->k == CL_LET) {
      int prev = ox_rules_sym_find(r, c->name);
      Tok t = {TK_ID, c->line, c->col, c->e->off, 0, 0, 0, c->name};
      if (prev >= 0) ERR_TOK(p, &t, "'%s' is already defined (line %u)", c->name, r->syms[prev].line);
      c->slot = ox_rules_sym_add(r, c->name, SYM_LET, c->e->ty, c->e->ety, &t);
    } else if (!ox_rules_ty_fits(c->e->ty, 'b')) {
      ERR_EXPR(p, c->e, "a guard must be a boolean, got %s", ox_rules_ty_names[c->e->ty]);
    }
  }
  for (uint32_t i = 0; i < r->n_st; i++) {
    Stmt *s = &r->st[i];
    Tok t = {TK_ID, s->line, s->col, s->e->off, 0, 0, 0, s->name};
    if (s->k == ST_LET) {
      ox_rules_check_expr(p, r, s->e, true);
      int prev = ox_rules_sym_find(r, s->name);
      if (prev >= 0) ERR_TOK(p, &t, "'%s' is already defined (line %u)", s->name, r->syms[prev].line);
      s->slot = ox_rules_sym_add(r, s->name, SYM_LET, s->e->ty, s->e->ety, &t);
      continue;
    }
    if (s->k == ST_FOR) {
      ox_rules_check_expr(p, r, s->list, false);
      if (!ox_rules_ty_fits(s->list->ty, 'l'))
        ERR_EXPR(p, s->list, "'for' iterates over a list, got %s", ox_rules_ty_names[s->list->ty]);
      int prev = ox_rules_sym_find(r, s->var);
      if (prev >= 0) ERR_TOK(p, &t, "'%s' is already defined (line %u)", s->var, r->syms[prev].line);
      s->var_slot = ox_rules_sym_add(r, s->var, SYM_LOOP, s->list->ety, TY_ANY, &t);
      ox_rules_check_expr(p, r, s->tgt, false);
      if (s->tgt->ty != TY_NODE && s->tgt->ty != TY_ANY)
        ERR_EXPR(p, s->tgt, "a replacement targets a node, got %s", ox_rules_ty_names[s->tgt->ty]);
      ox_rules_check_expr(p, r, s->e, true);
      if (s->e->ty != TY_NODE && s->e->ty != TY_ANY)
        ERR_EXPR(p, s->e, "a replacement must be a node, got %s", ox_rules_ty_names[s->e->ty]);
      r->syms[s->var_slot].visible = false;
      continue;
    }
    s->target = ox_rules_sym_find(r, s->name);
    if (s->target < 0) {
      ERR_TOK(p, &t, "unknown capture '%s': a replacement targets a node bound by the match (NAME @ op(...))",
              s->name);
    } else if (r->syms[s->target].ty != TY_NODE && r->syms[s->target].ty != TY_ANY) {
      ERR_TOK(p, &t, "'%s' is a %s, not a node%s", s->name, ox_rules_ty_names[r->syms[s->target].ty],
              r->syms[s->target].in_list ? " (captured inside each()/some()/repeat())" : "");
    }
    if (s->k == ST_EACH) {
      int prev = ox_rules_sym_find(r, s->var);
      if (prev >= 0) ERR_TOK(p, &t, "'%s' is already defined (line %u)", s->var, r->syms[prev].line);
      s->var_slot = ox_rules_sym_add(r, s->var, SYM_LOOP, TY_INT, 0, &t);
      if (s->cond) {
        ox_rules_check_expr(p, r, s->cond, true);
        if (!ox_rules_ty_fits(s->cond->ty, 'b'))
          ERR_EXPR(p, s->cond, "the condition must be a boolean, got %s", ox_rules_ty_names[s->cond->ty]);
      }
    }
    ox_rules_check_expr(p, r, s->e, true);
    if (s->e->ty != TY_NODE && s->e->ty != TY_ANY)
      ERR_EXPR(p, s->e, "a replacement must be a node, got %s", ox_rules_ty_names[s->e->ty]);
    if (s->k == ST_EACH) r->syms[s->var_slot].visible = false;
  }
}

/* rule NAME { ... } ; returns the rule index, or -1 after a syntax error (skipped) */
static int parse_rule(P *p, int pass_phase) {
  Tok *kw = ox_rules_adv(p); /* 'rule' */
  (void)kw;
  Tok *name = ox_rules_adv(p);
  char b[64];
  if (name->k != TK_ID || ox_rules_is_reserved(name->s) || strchr(name->s, '.')) {
    ERR_TOK(p, name, "expected a rule name after 'rule', found %s", ox_rules_tok_desc(p, name, b, sizeof b));
    return -1;
  }
  name_taken(p, name);
  ox_rules_skip_nl(p);
  if (!ox_rules_expect_p(p, "{", "to open the rule")) return -1;
  Rule *r = rule_new(p, name, false);
  uint32_t ri = p->rs->n_rules - 1;
  r->phase = pass_phase;
  if (!parse_rule_body(p, ri)) return -1;
  check_rule(p, &p->rs->rules[ri], name);
  return (int)ri;
}

static bool batch_values(P *p, Tok **vals, uint32_t *n, uint32_t cap) {
  *n = 0;
  while (ox_rules_pk(p)->k != TK_NL && !ox_rules_is_p(ox_rules_pk(p), "}") && ox_rules_pk(p)->k != TK_EOF) {
    Tok *t = ox_rules_adv(p);
    if (ox_rules_is_p(t, ",") || ox_rules_is_p(t, "|")) continue;
    if (t->k != TK_ID && t->k != TK_INT && !ox_rules_is_p(t, "*")) {
      char b[64];
      ERR_TOK(p, t, "unexpected %s in a batch rule", ox_rules_tok_desc(p, t, b, sizeof b));
      return false;
    }
    if (*n < cap) vals[(*n)++] = t;
  }
  if (!*n) ERR_TOK(p, ox_rules_pk(p), "missing value");
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
  ox_rules_adv(p); /* 'batch' */
  Tok *name = ox_rules_adv(p);
  char b[64];
  if (name->k != TK_ID || ox_rules_is_reserved(name->s) || strchr(name->s, '.')) {
    ERR_TOK(p, name, "expected a batch rule name after 'batch', found %s",
            ox_rules_tok_desc(p, name, b, sizeof b));
    return -1;
  }
  name_taken(p, name);
  ox_rules_skip_nl(p);
  if (!ox_rules_expect_p(p, "{", "to open the batch rule")) return -1;
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
  ox_rules_skip_nl(p);
  static const char *const tmpl_names[] = {"stack_unbind", "cat_select",  "linear",      "linear_lhs",
                                           "layer_norm",   "linear_post", "group_linear"};
  while (!ox_rules_is_p(ox_rules_pk(p), "}")) {
    Tok *k = ox_rules_adv(p);
    Tok *v[16];
    uint32_t n;
    if (k->k == TK_EOF) {
      ERR_TOK(p, k, "missing '}' at the end of batch rule '%s'", r->name);
      return -1;
    }
    if (k->k != TK_ID || !ox_rules_is_p(ox_rules_pk(p), ":")) {
      ERR_TOK(p, k, "expected KEY: VALUE in batch rule '%s', found %s", r->name,
              ox_rules_tok_desc(p, k, b, sizeof b));
      return -1;
    }
    ox_rules_adv(p);
    if (!batch_values(p, v, &n, 16)) return -1;
    if (ox_rules_is_id(k, "phase")) {
      if (n != 1 || (!ox_rules_is_id(v[0], "pre") && !ox_rules_is_id(v[0], "post")))
        ERR_TOK(p, v[0], "phase is pre or post");
      else
        phase = ox_rules_is_id(v[0], "pre") ? OX_PHASE_PRE : OX_PHASE_POST;
    } else if (ox_rules_is_id(k, "op")) {
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
    } else if (ox_rules_is_id(k, "levels")) {
      for (uint32_t i = 0; i < n; i++) {
        if (ox_rules_is_id(v[i], "torch"))
          levels |= 1u << OX_LEVEL_TORCH;
        else if (ox_rules_is_id(v[i], "method"))
          levels |= 1u << OX_LEVEL_METHOD;
        else if (ox_rules_is_id(v[i], "aten"))
          levels |= 1u << OX_LEVEL_ATEN;
        else if (ox_rules_is_id(v[i], "module"))
          levels |= 1u << OX_LEVEL_MODULE;
        else
          ERR_TOK(p, v[i], "unknown level (torch, method, aten, module)");
      }
    } else if (ox_rules_is_id(k, "template")) {
      tmpl = -2;
      for (size_t i = 0; i < sizeof tmpl_names / sizeof tmpl_names[0]; i++)
        if (ox_rules_is_id(v[0], tmpl_names[i])) tmpl = (int)i;
      if (tmpl == -2 || n != 1)
        ERR_TOK(p, v[0],
                "unknown template (stack_unbind, cat_select, linear, linear_lhs, layer_norm, linear_post, "
                "group_linear)");
    } else if (ox_rules_is_id(k, "operands")) {
      if (batch_int(p, v, n, &operands) && (operands < 1 || operands > 2))
        ERR_TOK(p, v[0], "operands is 1 (unary) or 2 (binary)");
    } else if (ox_rules_is_id(k, "emit")) {
      if (n != 1 || v[0]->k != TK_ID || !ox_rules_spelling_named(v[0]->s))
        ERR_TOK(p, v[0], "emit: unknown op spelling '%.*s' (a target such as torch.nn.functional.gelu)",
                (int)v[0]->len, p->src + v[0]->off);
      else {
        emit = v[0]->s;
        emit_tok = v[0];
      }
    } else if (ox_rules_is_id(k, "extras")) {
      for (uint32_t i = 0; i < n; i++) {
        if (ox_rules_is_id(v[i], "none")) continue;
        if (n_extras == OX_BATCH_MAX_EXTRAS) {
          ERR_TOK(p, v[i], "at most %d extras", OX_BATCH_MAX_EXTRAS);
          break;
        }
        if (v[i]->k != TK_ID) { /* a number or punctuation has no name (s is NULL) */
          char b[64];
          ERR_TOK(p, v[i], "extras: expected an argument name, found %s",
                  ox_rules_tok_desc(p, v[i], b, sizeof b));
          continue;
        }
        extra_toks[n_extras] = v[i];
        extras[n_extras++] = v[i]->s;
      }
    } else if (ox_rules_is_id(k, "key")) {
      has_key = true;
      for (uint32_t i = 0; i < n; i++) {
        if (ox_rules_is_id(v[i], "slots"))
          key |= OX_BK_SLOTS;
        else if (ox_rules_is_id(v[i], "parent"))
          key |= OX_BK_PARENT;
        else if (ox_rules_is_id(v[i], "sel_parent"))
          key |= OX_BK_SEL_PARENT;
        else if (ox_rules_is_id(v[i], "users"))
          key |= OX_BK_USERS;
        else if (ox_rules_is_id(v[i], "first_user"))
          key |= OX_BK_FIRST_USER;
        else if (!ox_rules_is_id(v[i], "none"))
          ERR_TOK(p, v[i], "unknown key field (slots, parent, sel_parent, users, first_user, none)");
      }
    } else if (ox_rules_is_id(k, "guards")) {
      has_guards = true;
      for (uint32_t i = 0; i < n; i++) {
        if (ox_rules_is_id(v[i], "equal_shapes"))
          guards |= OX_BG_EQUAL_SHAPES;
        else if (ox_rules_is_id(v[i], "not_inplace"))
          guards |= OX_BG_NOT_INPLACE;
        else if (ox_rules_is_id(v[i], "out_not_mutated"))
          guards |= OX_BG_OUT_NOT_MUTATED;
        else if (ox_rules_is_id(v[i], "in_not_mutated"))
          guards |= OX_BG_IN_NOT_MUTATED;
        else if (!ox_rules_is_id(v[i], "none"))
          ERR_TOK(p, v[i],
                  "unknown guard (equal_shapes, not_inplace, out_not_mutated, in_not_mutated, none)");
      }
    } else if (ox_rules_is_id(k, "min_fuse_set_size")) {
      batch_int(p, v, n, &r->opt.min_fuse_set_size);
    } else if (ox_rules_is_id(k, "max_fuse_set_size")) {
      batch_int(p, v, n, &r->opt.max_fuse_set_size);
    } else if (ox_rules_is_id(k, "max_fuse_search_depth")) {
      batch_int(p, v, n, &r->opt.max_fuse_search_depth);
    } else {
      ERR_TOK(p, k,
              "unknown batch key '%s' (phase, op, levels, template, operands, emit, extras, key, guards, "
              "min_fuse_set_size, max_fuse_set_size, max_fuse_search_depth)",
              k->s);
    }
    if (!ox_rules_end_stmt(p)) return -1;
  }
  ox_rules_adv(p);
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
      const OxSpelling *sp = ox_rules_spelling_for(row->op, phase == OX_PHASE_POST);
      if (!sp || (phase == OX_PHASE_PRE && sp->level != OX_LEVEL_TORCH)) {
        ERR_TOK(p, op_tok, "op %s has no %s function to emit: give emit:", ox_op_info(row->op)->name,
                phase == OX_PHASE_PRE ? "torch" : "aten");
        return (int)ri;
      }
      emit = phase == OX_PHASE_POST ? ox_rules_strip_ops(sp->target) : sp->target;
    } else {
      const OxSpelling *sp = ox_rules_spelling_named(emit);
      if (sp->op != row->op)
        ERR_TOK(p, emit_tok, "emit: %s is not a spelling of %s", emit, ox_op_info(row->op)->name);
      if (phase == OX_PHASE_POST && sp->level != OX_LEVEL_ATEN)
        ERR_TOK(p, emit_tok, "emit: a post-grad rule emits an aten op");
      if (phase == OX_PHASE_PRE && sp->level != OX_LEVEL_TORCH)
        ERR_TOK(p, emit_tok, "emit: a pre-grad rule emits a torch function");
      if (phase == OX_PHASE_POST) emit = ox_rules_strip_ops(sp->target);
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
  while (i < p->n && !ox_rules_is_p(&p->t[i], "{") && p->t[i].k != TK_EOF)
    i++;
  int depth = 0;
  for (; i < p->n && p->t[i].k != TK_EOF; i++) {
    if (ox_rules_is_p(&p->t[i], "{")) depth++;
    if (ox_rules_is_p(&p->t[i], "}") && --depth == 0) {
      p->i = i + 1;
      return;
    }
  }
  p->i = p->n - 1;
}

void ox_rules_parse_file(P *p) {
  ox_rules_skip_nl(p);
  while (ox_rules_pk(p)->k != TK_EOF) {
    Tok *t = ox_rules_pk(p);
    uint32_t start = p->i;
    char b[64];
    if (ox_rules_is_id(t, "rule")) {
      int ri = parse_rule(p, -1);
      if (ri < 0) {
        skip_block(p, start);
      } else {
        RulePass *rp = pass_new(p, p->rs->rules[ri].name, p->rs->rules[ri].line);
        pass_add_rule(rp, (uint32_t)ri);
      }
    } else if (ox_rules_is_id(t, "batch")) {
      int ri = parse_batch(p);
      if (ri < 0) {
        skip_block(p, start);
      } else {
        RulePass *rp = pass_new(p, p->rs->rules[ri].name, p->rs->rules[ri].line);
        rp->batch = true;
        pass_add_rule(rp, (uint32_t)ri);
      }
    } else if (ox_rules_is_id(t, "pass")) {
      ox_rules_adv(p);
      Tok *name = ox_rules_adv(p);
      if (name->k != TK_ID || ox_rules_is_reserved(name->s) || strchr(name->s, '.')) {
        ERR_TOK(p, name, "expected a pass name after 'pass', found %s",
                ox_rules_tok_desc(p, name, b, sizeof b));
        skip_block(p, start);
        continue;
      }
      name_taken(p, name);
      ox_rules_skip_nl(p);
      if (!ox_rules_expect_p(p, "{", "to open the pass")) {
        skip_block(p, start);
        continue;
      }
      RulePass *rp = pass_new(p, name->s, name->line);
      rp->block = true;
      uint32_t pi = p->rs->n_passes - 1;
      int phase = -1, errors0 = p->errors;
      ox_rules_skip_nl(p);
      bool bad = false;
      while (!ox_rules_is_p(ox_rules_pk(p), "}") && ox_rules_pk(p)->k != TK_EOF) {
        Tok *k = ox_rules_pk(p);
        uint32_t rs0 = p->i;
        if (ox_rules_is_id(k, "phase") && ox_rules_is_p(ox_rules_pk_at(p, 1), ":")) {
          ox_rules_adv(p);
          ox_rules_adv(p);
          if (!parse_phase(p, &phase) || !ox_rules_end_stmt(p)) {
            bad = true;
            break;
          }
        } else if (ox_rules_is_id(k, "rule")) {
          int ri = parse_rule(p, phase);
          if (ri < 0)
            skip_block(p, rs0);
          else
            pass_add_rule(&p->rs->passes[pi], (uint32_t)ri);
          ox_rules_skip_nl(p);
        } else {
          ERR_TOK(p, k, "expected 'rule' or 'phase:' in pass '%s', found %s", name->s,
                  ox_rules_tok_desc(p, k, b, sizeof b));
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
      if (!ox_rules_expect_p(p, "}", "to close the pass")) continue;
      if (!rp->n_rules && p->errors == errors0) ERR_TOK(p, name, "pass '%s' has no rules", name->s);
    } else {
      ERR_TOK(p, t, "expected 'rule', 'batch' or 'pass', found %s", ox_rules_tok_desc(p, t, b, sizeof b));
      /* resynchronize at the next top-level keyword */
      ox_rules_adv(p);
      while (ox_rules_pk(p)->k != TK_EOF &&
             !(ox_rules_pk(p)->col == 1 &&
               (ox_rules_is_id(ox_rules_pk(p), "rule") || ox_rules_is_id(ox_rules_pk(p), "batch") ||
                ox_rules_is_id(ox_rules_pk(p), "pass"))))
        ox_rules_adv(p);
    }
    ox_rules_skip_nl(p);
  }
}
