/* ox_rules_check.c - the rule language's checker: names and types of expressions.
 *
 * Every expression is typed at load time (int, float, bool, string, dtype, None, node, list
 * and list element types); builtin calls are checked against the builtin table's parameter
 * letters and arity, constructors are resolved, and template-only builtins are refused in
 * guards. A file that fails a check does not load, so the evaluator never meets an ill-typed
 * tree.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/ox_rules_private.h"

const char *const ox_rules_ty_names[] = {"value", "int",  "float", "bool", "string",
                                         "dtype", "None", "node",  "list"};

const char *const ox_rules_bin_names[] = {
    "+", "-", "*", "/", "//", "%", "++", "==", "!=", "<", "<=", ">", ">=", "in", "and", "or"};

/* ------------------------------------------------------------------ checker (names and types) */

bool ox_rules_ty_fits(uint8_t have, char want) {
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
    pre = ox_rules_spelling_for(id, false);
    post = ox_rules_spelling_for(id, true);
  } else {
    const OxSpelling *sp = ox_rules_spelling_named(x->s);
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
    x->pre_target = pre->level == OX_LEVEL_ATEN ? ox_rules_strip_ops(pre->target) : pre->target;
    if (pre->level == OX_LEVEL_ATEN) x->i |= 1;
  }
  if (post) {
    x->post_kind = post->level == OX_LEVEL_METHOD ? OX_OP_CALL_METHOD : OX_OP_CALL_FUNCTION;
    x->post_target = post->level == OX_LEVEL_ATEN ? ox_rules_strip_ops(post->target) : post->target;
    if (post->level == OX_LEVEL_ATEN) x->i |= 2;
  }
  return true;
}

static void check_call(P *p, Rule *r, Expr *x, bool tmpl) {
  for (uint32_t i = 0; i < x->n; i++)
    ox_rules_check_expr(p, r, x->a[i], tmpl);
  for (uint32_t i = 0; i < x->nk; i++)
    ox_rules_check_expr(p, r, x->kv[i], tmpl);
  int b = ox_rules_builtin_find(x->s);
  if (b >= 0) {
    const Builtin *bi = &ox_rules_builtins[b];
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
      if (!ox_rules_ty_fits(x->a[i]->ty, want))
        ERR_EXPR(p, x->a[i], "argument %u of %s() must be %s, got %s", i + 1, x->s, want_name(want),
                 ox_rules_ty_names[x->a[i]->ty]);
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

void ox_rules_check_expr(P *p, Rule *r, Expr *x, bool tmpl) {
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
    int k = ox_rules_sym_find(r, x->s);
    if (k < 0) {
      if (ox_rules_builtin_find(x->s) >= 0 || ox_op_by_name(x->s) != OX_OPID_NONE)
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
      ox_rules_check_expr(p, r, x->a[i], tmpl);
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
    ox_rules_check_expr(p, r, x->a[0], tmpl);
    if (x->k == X_NOT && !ox_rules_ty_fits(x->a[0]->ty, 'b'))
      ERR_EXPR(p, x, "'not' needs a boolean, got %s", ox_rules_ty_names[x->a[0]->ty]);
    if (x->k == X_NEG && !numeric_ty(x->a[0]->ty))
      ERR_EXPR(p, x, "'-' needs a number, got %s", ox_rules_ty_names[x->a[0]->ty]);
    x->ty = x->k == X_NOT ? TY_BOOL : x->a[0]->ty;
    return;
  case X_IF:
    for (uint32_t i = 0; i < 3; i++)
      ox_rules_check_expr(p, r, x->a[i], tmpl);
    if (!ox_rules_ty_fits(x->a[0]->ty, 'b'))
      ERR_EXPR(p, x->a[0], "the condition of 'if' must be a boolean, got %s", ox_rules_ty_names[x->a[0]->ty]);
    x->ty = join_ty(x->a[1]->ty, x->a[2]->ty);
    x->ety = join_ty(x->a[1]->ety, x->a[2]->ety);
    return;
  case X_BIN: {
    ox_rules_check_expr(p, r, x->a[0], tmpl);
    ox_rules_check_expr(p, r, x->a[1], tmpl);
    uint8_t a = x->a[0]->ty, b = x->a[1]->ty;
    const char *op = ox_rules_bin_names[x->op];
    switch (x->op) {
    case B_AND:
    case B_OR:
      if (!ox_rules_ty_fits(a, 'b') || !ox_rules_ty_fits(b, 'b'))
        ERR_EXPR(p, x, "'%s' needs booleans, got %s and %s", op, ox_rules_ty_names[a], ox_rules_ty_names[b]);
      x->ty = TY_BOOL;
      return;
    case B_EQ:
    case B_NE:
      if (a != TY_ANY && b != TY_ANY && a != b && a != TY_NONE && b != TY_NONE &&
          !(numeric_ty(a) && numeric_ty(b)))
        ERR_EXPR(p, x, "cannot compare %s with %s", ox_rules_ty_names[a], ox_rules_ty_names[b]);
      x->ty = TY_BOOL;
      return;
    case B_LT:
    case B_LE:
    case B_GT:
    case B_GE:
      if (!((numeric_ty(a) && numeric_ty(b)) || (ox_rules_ty_fits(a, 's') && ox_rules_ty_fits(b, 's'))))
        ERR_EXPR(p, x, "'%s' compares numbers, got %s and %s", op, ox_rules_ty_names[a],
                 ox_rules_ty_names[b]);
      x->ty = TY_BOOL;
      return;
    case B_IN:
      if (!ox_rules_ty_fits(b, 'q'))
        ERR_EXPR(p, x, "'in' needs a list on its right, got %s", ox_rules_ty_names[b]);
      x->ty = TY_BOOL;
      return;
    case B_CAT:
      if (!ox_rules_ty_fits(a, 'q') || !ox_rules_ty_fits(b, 'q') || (a != TY_ANY && b != TY_ANY && a != b))
        ERR_EXPR(p, x, "'++' joins two lists (or two strings), got %s and %s", ox_rules_ty_names[a],
                 ox_rules_ty_names[b]);
      x->ty = a == TY_ANY ? b : a;
      x->ety = join_ty(x->a[0]->ety, x->a[1]->ety);
      return;
    default:
      if (!numeric_ty(a) || !numeric_ty(b)) {
        ERR_EXPR(p, x, "'%s' needs numbers, got %s and %s%s", op, ox_rules_ty_names[a], ox_rules_ty_names[b],
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
    ox_rules_check_expr(p, r, x->a[0], tmpl);
    ox_rules_check_expr(p, r, x->a[1], tmpl);
    uint8_t b = x->a[0]->ty;
    if (!ox_rules_ty_fits(x->a[1]->ty, 'i'))
      ERR_EXPR(p, x->a[1], "an index must be an int, got %s", ox_rules_ty_names[x->a[1]->ty]);
    if (b == TY_LIST) {
      x->ty = x->a[0]->ety;
    } else if (b == TY_NODE) {
      if (!tmpl) ERR_EXPR(p, x, "indexing a node creates a getitem: only allowed in replace:");
      x->ty = TY_NODE;
    } else if (b == TY_ANY) {
      x->ty = TY_ANY;
    } else {
      ERR_EXPR(p, x, "cannot index %s", ox_rules_ty_names[b]);
    }
    return;
  }
  case X_SLICE:
    ox_rules_check_expr(p, r, x->a[0], tmpl);
    for (uint32_t i = 1; i < 3; i++)
      if (x->a[i]) {
        ox_rules_check_expr(p, r, x->a[i], tmpl);
        if (!ox_rules_ty_fits(x->a[i]->ty, 'i'))
          ERR_EXPR(p, x->a[i], "a slice bound must be an int, got %s", ox_rules_ty_names[x->a[i]->ty]);
      }
    if (!ox_rules_ty_fits(x->a[0]->ty, 'l'))
      ERR_EXPR(p, x, "only lists can be sliced, got %s", ox_rules_ty_names[x->a[0]->ty]);
    x->ty = TY_LIST;
    x->ety = x->a[0]->ety;
    return;
  case X_COMP: {
    ox_rules_check_expr(p, r, x->a[1], tmpl);
    if (!ox_rules_ty_fits(x->a[1]->ty, 'l'))
      ERR_EXPR(p, x->a[1], "a comprehension iterates over a list, got %s", ox_rules_ty_names[x->a[1]->ty]);
    int prev = ox_rules_sym_find(r, x->s);
    if (prev >= 0) ERR_EXPR(p, x, "'%s' is already defined (line %u)", x->s, r->syms[prev].line);
    Tok t = {TK_ID, x->line, x->col, x->off, 0, 0, 0, x->s};
    int k = ox_rules_sym_add(r, x->s, SYM_LOOP, x->a[1]->ety, TY_ANY, &t);
    x->slot = k;
    if (x->n == 3) {
      ox_rules_check_expr(p, r, x->a[2], tmpl);
      if (!ox_rules_ty_fits(x->a[2]->ty, 'b'))
        ERR_EXPR(p, x->a[2], "the filter of a comprehension must be a boolean, got %s",
                 ox_rules_ty_names[x->a[2]->ty]);
    }
    ox_rules_check_expr(p, r, x->a[0], tmpl);
    r->syms[k].visible = false;
    x->ty = TY_LIST;
    x->ety = x->a[0]->ty;
    return;
  }
  default:
    return;
  }
}
