/* ox_pattern.c - the pattern language as data, its one matcher, and the pattern-pass runner.
 *
 * Patterns (OxPat, ox_pattern.h) are plain trees built by small constructors into a pool;
 * nothing here knows about any particular pass. ox_pat_match interprets a tree against an
 * anchor node, top-down, with PyTorch's semantics (spec 3.4):
 *   - a CALL pattern tests op kind and op (through the op table, so every spelling of an op
 *     matches) or an exact target, then the users constraint (never at a match output), then
 *     its constraint (TorchSplit well-formedness), then its arguments: directly when the node's
 *     positional count and keyword names equal the pattern's, otherwise on the op's canonical
 *     slots (ox_op_normalize), where every argument the node actually passes must be covered;
 *   - a CALL pattern bound twice in one context must bind the same node; a ListOf element
 *     sees the multi-user bindings made before the list but not another element's (elements
 *     are independent, so a cat over pieces of two splits matches both runs); a RepeatedExpr
 *     sibling is matched in a fresh context, as PyTorch does;
 *   - KeywordArg names unify (equal values) within one context; captures made inside list
 *     elements are bundled (kept side by side), as PyTorch's Match.bundle does.
 * The first failure ends the match (inside a partial list an element failure only drops the
 * element) and is recorded with the sub-pattern, node, reason and progress.
 *
 * The runner (ox_pat_pass_run) is PatternMatcherPass.apply: anchors fixed up front in
 * descending graph position, entries in registration order, mutation-region discard,
 * rejection records deduplicated per (anchor, entry, reason).
 *
 * Requires: the graph in topological order (the driver sorts before every pass).
 * Preserves: matching never mutates the graph; handlers mutate it only inside steps.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"
#include "ops/ox_shape.h"
#include "passes/ox_pattern.h"

/* ------------------------------------------------------------------ pool and constructors */

struct OxPatPool {
  OxGraph *g;        /* arena + strings + constant values */
  const char *file;
  uint32_t line;
  uint32_t next_id;
  bool located;
};

OxPatPool *ox_pat_pool_new(void) {
  OxPatPool *p = ox_xcalloc(1, sizeof *p);
  p->g = ox_graph_new();
  p->file = ox_graph_intern(p->g, "<builtin>");
  return p;
}

void ox_pat_pool_free(OxPatPool *p) {
  if (!p) return;
  ox_graph_free(p->g);
  free(p);
}

void ox_pat_pool_loc(OxPatPool *p, const char *file, uint32_t line) {
  p->file = ox_graph_intern(p->g, file ? file : "<builtin>");
  p->line = line;
}

OxGraph *ox_pat_pool_values(OxPatPool *p) { return p->g; }
void ox_pat_pool_located(OxPatPool *p, bool on) { p->located = on; }

static OxPat *newpat(OxPatPool *p, OxPatKind k) {
  OxPat *x = ox_graph_alloc(p->g, sizeof *x);
  x->kind = (uint8_t)k;
  x->file = p->file;
  x->line = p->line;
  x->id = ++p->next_id;
  x->users = 1;
  x->located = p->located;
  return x;
}

OxPat *ox_pat_ignored(OxPatPool *p) { return newpat(p, OX_PAT_IGNORED); }
OxPat *ox_pat_arg(OxPatPool *p) { return newpat(p, OX_PAT_ARG); }

OxPat *ox_pat_kwarg(OxPatPool *p, const char *name) {
  OxPat *x = newpat(p, OX_PAT_KWARG);
  x->name = ox_graph_intern(p->g, name);
  return x;
}

OxPat *ox_pat_const(OxPatPool *p, const OxValue *v) {
  OxPat *x = newpat(p, OX_PAT_CONST);
  x->value = ox_graph_value_copy(p->g, v);
  return x;
}

OxPat *ox_pat_const_int(OxPatPool *p, int64_t i) {
  OxValue v = ox_value_int(i);
  return ox_pat_const(p, &v);
}

OxPat *ox_pat_list(OxPatPool *p, OxPat *elem, bool partial) {
  OxPat *x = newpat(p, OX_PAT_LIST);
  x->elem = elem;
  x->partial = partial;
  return x;
}

OxPat *ox_pat_repeated(OxPatPool *p, OxPat *inner) {
  OxPat *x = newpat(p, OX_PAT_REPEATED);
  x->elem = inner;
  return x;
}

OxPat *ox_pat_multi(OxPatPool *p, OxPat *const *outs, uint32_t n) {
  OxPat *x = newpat(p, OX_PAT_MULTI);
  x->outs = ox_graph_alloc(p->g, (n ? n : 1) * sizeof *x->outs);
  memcpy(x->outs, outs, n * sizeof *outs);
  x->n_outs = n;
  return x;
}

OxPat *ox_pat_call(OxPatPool *p, unsigned calls, const OxOpId *ops, uint32_t n_ops, OxPat *const *args,
                   uint32_t n_args) {
  OxPat *x = newpat(p, OX_PAT_CALL);
  x->calls = calls;
  x->ops = ox_graph_alloc(p->g, (n_ops ? n_ops : 1) * sizeof *x->ops);
  if (n_ops) memcpy(x->ops, ops, n_ops * sizeof *ops);
  x->n_ops = n_ops;
  x->args = ox_graph_alloc(p->g, (n_args ? n_args : 1) * sizeof *x->args);
  if (n_args) memcpy(x->args, args, n_args * sizeof *args);
  x->n_args = n_args;
  return x;
}

OxPat *ox_pat_call_varargs(OxPatPool *p, unsigned calls, const OxOpId *ops, uint32_t n_ops) {
  OxPat *x = ox_pat_call(p, calls, ops, n_ops, NULL, 0);
  x->varargs = true;
  return x;
}

static const OxOp call_kinds[3] = {OX_OP_CALL_FUNCTION, OX_OP_CALL_METHOD, OX_OP_CALL_MODULE};

void ox_pat_call_target(OxPatPool *p, OxPat *call, const char *target) {
  uint32_t n = call->n_targets;
  const char **t = ox_graph_alloc(p->g, (n + 1) * sizeof *t);
  const OxSpelling **ts = ox_graph_alloc(p->g, 3 * (n + 1) * sizeof *ts);
  if (n) {
    memcpy(t, call->targets, n * sizeof *t);
    memcpy(ts, call->target_sp, 3 * n * sizeof *ts);
  }
  t[n] = ox_graph_intern(p->g, target);
  for (int cls = 0; cls < 3; cls++) ts[3 * n + cls] = ox_spelling_find(call_kinds[cls], t[n]);
  call->targets = t;
  call->target_sp = ts;
  call->n_targets = n + 1;
}

void ox_pat_call_kw(OxPatPool *p, OxPat *call, const char *name, OxPat *value) {
  const char **names = ox_graph_alloc(p->g, (call->n_kw + 1) * sizeof *names);
  OxPat **vals = ox_graph_alloc(p->g, (call->n_kw + 1) * sizeof *vals);
  if (call->n_kw) {
    memcpy(names, call->kw_names, call->n_kw * sizeof *names);
    memcpy(vals, call->kw, call->n_kw * sizeof *vals);
  }
  names[call->n_kw] = ox_graph_intern(p->g, name);
  vals[call->n_kw] = value;
  call->kw_names = names;
  call->kw = vals;
  call->n_kw++;
}

void ox_pat_call_users(OxPat *call, int32_t users) { call->users = users; }
void ox_pat_call_bind(OxPatPool *p, OxPat *call, const char *name) { call->bind = ox_graph_intern(p->g, name); }
void ox_pat_call_constraint(OxPat *call, OxPatConstraint c) { call->constraint = (uint8_t)c; }

OxPat *ox_pat_torch_split(OxPatPool *p, OxPat *input, OxPat *sections, OxPat *dim_pat) {
  OxOpId ops[] = {OX_OPID_SPLIT, OX_OPID_SPLIT_WITH_SIZES};
  OxPat *args[] = {input, sections};
  OxPat *x = ox_pat_call(p, OX_PAT_FUNCTION, ops, 2, args, 2);
  ox_pat_call_kw(p, x, "dim", dim_pat ? dim_pat : ox_pat_kwarg(p, "dim"));
  x->users = OX_PAT_USERS_ANY;
  x->constraint = OX_PAT_C_SPLIT;
  return x;
}

OxPat *ox_pat_getitem(OxPatPool *p, OxPat *of, OxPat *index, int32_t users) {
  OxOpId ops[] = {OX_OPID_GETITEM};
  OxPat *args[] = {of, index};
  OxPat *x = ox_pat_call(p, OX_PAT_FUNCTION, ops, 1, args, 2);
  x->users = users;
  return x;
}

/* ------------------------------------------------------------------ matching */

typedef struct Ctx {
  const OxGraph *g;
  OxPatMatch *m;
  const OxPat *root;
  uint32_t depth;
  uint32_t bind_floor;  /* bindings below it are visible only for multi-user patterns */
  uint32_t caps_floor;  /* KeywordArg unification scope */
  int in_list;          /* > 0 inside a list element / repeated sibling */
  bool fresh;           /* a RepeatedExpr sibling: no binding below bind_floor is visible */
  bool resolve;         /* a failure's texts are read (pat_match's resolve): else a list's
                           detail of its best element is not formatted either */
} Ctx;

static const char *nname(const OxGraph *g, OxNodeId id) {
  const OxNode *n = ox_graph_node(g, id);
  return n ? n->name : "?";
}

static const char *pat_desc(const OxPat *p, char *buf, size_t cap) {
  static const char *const kinds[] = {"call", "Arg", "KeywordArg", "Ignored", "constant", "ListOf", "RepeatedExpr",
                                      "MultiOutput"};
  if (p->kind == OX_PAT_CALL) {
    size_t k = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < p->n_ops && k + 1 < cap; i++) {
      const OxOpInfo *in = ox_op_info(p->ops[i]);
      k += (size_t)snprintf(buf + k, cap - k, "%s%s", i ? "|" : "", in ? in->name : "?");
    }
    for (uint32_t i = 0; i < p->n_targets && k + 1 < cap; i++)
      k += (size_t)snprintf(buf + k, cap - k, "%s%s", (i || p->n_ops) ? "|" : "", p->targets[i]);
    if (k + 1 < cap) snprintf(buf + k, cap - k, "%s", p->varargs ? "(*)" : "(...)");
  } else if (p->kind == OX_PAT_KWARG) {
    snprintf(buf, cap, "KeywordArg(%s)", p->name);
  } else {
    snprintf(buf, cap, "%s", kinds[p->kind]);
  }
  return buf;
}

/* Bounded copy of a string into a failure argument: a string longer than the slot is cut at a
 * word or item boundary and ends with "…" (ox_text_clip), never in the middle of a name. */
static void copy_arg(char *dst, size_t cap, const char *src, size_t srclen) { ox_text_clip(dst, cap, src, srclen); }

/* Records a failure; always returns false. One spec letter per argument: 'n' a string naming a
 * node, 's' another string that outlives the match (interned in the graph, or static), 'N' / 'T'
 * a node id whose name / target is the argument, 'x' any other string (copied now), 'P' a
 * pattern (const OxPat *) and 'V' a value (const OxValue *, copied): all but 'x' are copied or
 * described only if the failure is reported. */
static bool failf(Ctx *c, const OxPat *p, OxNodeId node, OxReasonCode code, const char *what, const char *spec, ...) {
  OxPatFailure *f = &c->m->fail;
  f->code = (uint16_t)code;
  copy_arg(f->what, sizeof f->what, what, strlen(what));
  f->pat = p;
  f->node = node;
  f->depth = c->depth;
  f->progress = c->m->progress;
  f->n_args = 0;
  f->lazy_g = c->g;
  va_list ap;
  va_start(ap, spec);
  for (const char *s = spec; *s && f->n_args < OX_REASON_MAX_ARGS; s++) {
    uint8_t i = f->n_args++;
    f->is_node[i] = (*s == 'n');
    f->lazy[i] = 0;
    if (*s == 'P') {
      f->lazy[i] = 'P';
      f->lazy_pat[i] = va_arg(ap, const OxPat *);
    } else if (*s == 'V') {
      f->lazy[i] = 'V';
      f->lazy_val[i] = *va_arg(ap, const OxValue *);
    } else if (*s == 'N' || *s == 'T') { /* a node's name / target: read if reported */
      f->is_node[i] = (*s == 'N');
      f->lazy[i] = (uint8_t)*s;
      f->lazy_id[i] = va_arg(ap, OxNodeId);
    } else if (*s == 'n' || *s == 's') { /* node name / stable string: copied if reported */
      const char *a = va_arg(ap, const char *);
      f->lazy[i] = 'S';
      f->lazy_str[i] = a ? a : "";
    } else {
      const char *a = va_arg(ap, const char *);
      if (!a) a = "";
      copy_arg(f->args[i], sizeof f->args[i], a, strlen(a));
    }
  }
  va_end(ap);
  return false;
}

/* Formats the deferred arguments of f into its args. */
static void resolve_failure(OxPatFailure *f) {
  for (uint8_t i = 0; i < f->n_args; i++) {
    if (f->lazy[i] == 'P') pat_desc(f->lazy_pat[i], f->args[i], sizeof f->args[i]);
    else if (f->lazy[i] == 'V') ox_value_format(f->lazy_g, &f->lazy_val[i], f->args[i], sizeof f->args[i]);
    else if (f->lazy[i] == 'S') copy_arg(f->args[i], sizeof f->args[i], f->lazy_str[i], strlen(f->lazy_str[i]));
    else if (f->lazy[i] == 'N' || f->lazy[i] == 'T') {
      const OxNode *n = ox_graph_node(f->lazy_g, f->lazy_id[i]);
      const char *t = !n ? "?" : f->lazy[i] == 'N' ? n->name
                    : n->op == OX_OP_CALL_MODULE && n->module_type ? n->module_type : n->target;
      if (!t) t = "";
      copy_arg(f->args[i], sizeof f->args[i], t, strlen(t));
    }
    f->lazy[i] = 0;
  }
}

static void push_node(OxPatMatch *m, OxNodeId id) {
  for (uint32_t i = 0; i < m->n_nodes; i++)
    if (m->nodes[i] == id) return;
  if (m->n_nodes == m->cap_nodes) {
    m->cap_nodes = m->cap_nodes ? m->cap_nodes * 2 : 16;
    m->nodes = ox_xrealloc(m->nodes, m->cap_nodes * sizeof *m->nodes);
  }
  m->nodes[m->n_nodes++] = id;
}

static void push_bind(OxPatMatch *m, const OxPat *p, OxNodeId id) {
  if (m->n_bound == m->cap_bound) {
    m->cap_bound = m->cap_bound ? m->cap_bound * 2 : 16;
    m->bpat = ox_xrealloc(m->bpat, m->cap_bound * sizeof *m->bpat);
    m->bnode = ox_xrealloc(m->bnode, m->cap_bound * sizeof *m->bnode);
  }
  m->bpat[m->n_bound] = p;
  m->bnode[m->n_bound++] = id;
}

static void push_cap(Ctx *c, const OxPat *p, const char *name, const OxValue *v) {
  OxPatMatch *m = c->m;
  if (m->n_caps == m->cap_caps) {
    m->cap_caps = m->cap_caps ? m->cap_caps * 2 : 16;
    m->caps = ox_xrealloc(m->caps, m->cap_caps * sizeof *m->caps);
  }
  m->caps[m->n_caps++] = (OxPatCapture){name, v, p, c->in_list > 0};
}

/* A value that outlives the OxOpArgs it was normalized into. */
static const OxValue *own_value(OxPatMatch *m, const OxValue *v) {
  OxValue *copy = ox_xrealloc(NULL, sizeof *copy);
  *copy = *v; /* items point into the graph's arena, which outlives the match */
  m->owned = ox_xrealloc(m->owned, (m->n_owned + 1) * sizeof *m->owned);
  m->owned[m->n_owned++] = copy;
  return copy;
}

/* The op index entry of id when it is current (g is const here: no recomputation). */
static uint16_t opix_current(const OxGraph *g, OxNodeId id) {
  return id < g->cap_opix ? g->opix[id] : OX_OPIX_STALE;
}

static bool call_accepts(const OxGraph *g, const OxPat *p, OxNodeId id) {
  /* The node's call kind and spelling come from the op index when it is current, so most
   * nodes are accepted or rejected without being read (on large graphs, a cache miss per
   * sub-pattern); the node is read when the index is stale, for a non-call, and to compare a
   * target text no spelling covers. */
  uint16_t ix = opix_current(g, id);
  if (ix == OX_OPIX_ERASED) return false;
  uint16_t k = ix & (uint16_t)~OX_OPIX_MUTATING;
  const OxNode *n = NULL;
  const OxSpelling *sp = NULL;
  unsigned kind;
  if (ix != OX_OPIX_STALE && k >= OX_OPIX_UNKNOWN_CALL) {
    sp = ox_opix_spelling(ix);
    kind = sp ? ox_spelling_kind(sp) : call_kinds[k - OX_OPIX_UNKNOWN_CALL];
  } else if (ix != OX_OPIX_STALE && !(p->calls & ~(unsigned)OX_PAT_ANY_CALL)) {
    return false; /* placeholder, get_attr, output: not a call */
  } else {
    n = ox_graph_node(g, id);
    if (!n || n->erased) return false;
    kind = n->op;
    ox_op_of_node(g, n, &sp);
  }
  if (kind >= OX_OP_COUNT || !(p->calls & (1u << kind))) return false;
  int cls = kind == OX_OP_CALL_FUNCTION ? 0 : kind == OX_OP_CALL_METHOD ? 1 : kind == OX_OP_CALL_MODULE ? 2 : -1;
  for (uint32_t i = 0; i < p->n_targets; i++) {
    /* spellings are looked up by exact text, so equal targets have equal spellings, and a
     * target with a spelling equals only the targets with that spelling */
    const OxSpelling *ts = cls >= 0 && p->target_sp ? p->target_sp[3 * i + cls] : NULL;
    if (ts) {
      if (ts == sp) return true;
    } else if (!sp) {
      if (!n) n = &g->nodes[id];
      const char *t = n->op == OX_OP_CALL_MODULE ? n->module_type : n->target;
      if (t && strcmp(t, p->targets[i]) == 0) return true;
    }
  }
  for (uint32_t i = 0; sp && i < p->n_ops; i++)
    if (p->ops[i] == sp->op) return true;
  return false;
}

bool ox_pat_anchor_accepts(const OxGraph *g, const OxPat *p, OxNodeId node) {
  if (p->kind == OX_PAT_REPEATED) return ox_pat_anchor_accepts(g, p->elem, node);
  if (p->kind == OX_PAT_MULTI) return p->n_outs && ox_pat_anchor_accepts(g, p->outs[0], node);
  if (p->kind != OX_PAT_CALL) return true;
  return call_accepts(g, p, node);
}

static bool match_node(Ctx *c, const OxPat *p, OxNodeId id);

static bool int_value(const OxValue *v, int64_t *out) {
  if (!v || v->kind != OX_V_INT) return false;
  *out = v->u.i;
  return true;
}

static bool match_value(Ctx *c, const OxPat *p, const OxValue *v) {
  switch ((OxPatKind)p->kind) {
  case OX_PAT_IGNORED: c->m->progress++; return true;
  case OX_PAT_ARG:
    push_cap(c, p, NULL, v);
    c->m->progress++;
    return true;
  case OX_PAT_KWARG: {
    for (uint32_t i = c->caps_floor; i < c->m->n_caps; i++) {
      const OxPatCapture *k = &c->m->caps[i];
      if (!k->name || strcmp(k->name, p->name) != 0) continue;
      if (c->in_list == 0 && k->in_list) continue;
      if (!ox_value_equal(k->value, v))
        return failf(c, p, v->kind == OX_V_NODE ? v->u.node : 0, OX_REASON_CAPTURE_CONFLICT, "kwarg mismatch", "xVV",
                     p->name, k->value, v);
      c->m->progress++;
      return true;
    }
    push_cap(c, p, p->name, v);
    c->m->progress++;
    return true;
  }
  case OX_PAT_CONST:
    if (v->kind == OX_V_NODE || !ox_value_equal(v, &p->value))
      return failf(c, p, v->kind == OX_V_NODE ? v->u.node : 0, OX_REASON_CONST_MISMATCH, "constant_args", "xxVV", "",
                   "?", v, &p->value);
    c->m->progress++;
    return true;
  case OX_PAT_LIST: {
    if ((v->kind != OX_V_LIST && v->kind != OX_V_TUPLE) || v->n == 0)
      return failf(c, p, 0, OX_REASON_NO_MATCH, "list: not a non-empty list", "Vxx",
                   v, "ListOf", "not a non-empty list");
    OxPatMatch *m = c->m;
    bool any = false;
    OxPatFailure best;
    bool have_best = false;
    for (uint32_t i = 0; i < v->n; i++) {
      uint32_t nb0 = m->n_bound, nn0 = m->n_nodes, nc0 = m->n_caps;
      Ctx sub = *c;
      sub.bind_floor = nb0;
      sub.caps_floor = nc0;
      sub.in_list = c->in_list + 1;
      bool ok = match_value(&sub, p->elem, &v->u.items[i]);
      /* elements are independent: each sees the multi-user bindings made before the list,
       * none of another element's (handlers group elements by their split themselves) */
      m->n_bound = nb0;
      if (!ok) {
        m->n_nodes = nn0;
        m->n_caps = nc0;
        if (!p->partial) {
          char w[112];
          snprintf(w, sizeof w, "list[%u]: %s", i, m->fail.what);
          copy_arg(m->fail.what, sizeof m->fail.what, w, strlen(w));
          return false;
        }
        if (!have_best || m->fail.progress > best.progress) {
          best = m->fail;
          have_best = true;
        }
        continue;
      }
      any = true;
    }
    if (!any) {
      char detail[sizeof best.args[0]];
      detail[0] = 0;
      if (have_best && c->resolve) resolve_failure(&best);
      if (c->resolve) ox_pat_failure_format(&best, detail, sizeof detail);
      bool r = failf(c, p, have_best ? best.node : 0, OX_REASON_NO_MATCH, "list: no_match", "VPx",
                     v, p->elem, detail);
      if (have_best) { /* the deepest element failure tells how far it got */
        c->m->fail.progress = best.progress;
        c->m->fail.depth = best.depth;
      }
      return r;
    }
    c->m->progress++;
    return true;
  }
  case OX_PAT_CALL:
  case OX_PAT_REPEATED:
  case OX_PAT_MULTI:
    if (v->kind != OX_V_NODE)
      return failf(c, p, 0, OX_REASON_NO_MATCH, "not a node", "VPx", v,
                   p, "a constant where a node is expected");
    return match_node(c, p, v->u.node);
  }
  return false;
}

static bool check_getitem_users(Ctx *c, const OxPat *p, OxNodeId id) {
  const OxGraph *g = c->g;
  const OxNode *n = &g->nodes[id];
  int64_t seen_cap = 0;
  uint8_t *seen = NULL;
  char b[32];
  bool ok = true;
  for (uint32_t u = 0; u < n->n_users && ok; u++) {
    const OxNode *us = &g->nodes[n->users[u]];
    const OxValue *idx = us->args.n >= 2 ? &us->args.u.items[1] : NULL;
    int64_t k;
    if (ox_op_of_node(g, us, NULL) != OX_OPID_GETITEM || us->args.n != 2 || us->args.u.items[0].kind != OX_V_NODE ||
        us->args.u.items[0].u.node != id || !int_value(idx, &k)) {
      ok = failf(c, p, n->users[u], OX_REASON_USER_NOT_GETITEM, "user of split not a getitem", "nn", n->name, us->name);
      break;
    }
    if (k < 0) {
      snprintf(b, sizeof b, "%lld", (long long)k);
      ok = failf(c, p, n->users[u], OX_REASON_NEG_INDEX, "negative index", "nx", us->name, b);
      break;
    }
    if (k >= seen_cap) {
      int64_t nc = k + 16;
      seen = ox_xrealloc(seen, (size_t)nc);
      memset(seen + seen_cap, 0, (size_t)(nc - seen_cap));
      seen_cap = nc;
    }
    if (seen[k]) {
      snprintf(b, sizeof b, "%lld", (long long)k);
      char w[48];
      snprintf(w, sizeof w, "duplicate getitem %lld", (long long)k);
      ok = failf(c, p, n->users[u], OX_REASON_DUP_GETITEM, w, "nx", n->name, b);
      break;
    }
    seen[k] = 1;
  }
  free(seen);
  return ok;
}

static bool nonneg_int(const OxValue *v) { return v && v->kind == OX_V_INT && v->u.i >= 0; }

static bool int_list(const OxValue *v) {
  if (!v || (v->kind != OX_V_LIST && v->kind != OX_V_TUPLE)) return false;
  for (uint32_t i = 0; i < v->n; i++)
    if (v->u.items[i].kind != OX_V_INT) return false;
  return true;
}

static const OxValue *kwarg_of(const OxNode *n, const char *k) {
  for (uint32_t i = 0; n->kwargs.kind == OX_V_DICT && i < n->kwargs.n; i++)
    if (strcmp(n->kwargs.keys[i], k) == 0) return &n->kwargs.u.items[i];
  return NULL;
}

static bool check_constraint(Ctx *c, const OxPat *p, OxNodeId id) {
  const OxGraph *g = c->g;
  const OxNode *n = &g->nodes[id];
  const OxSpelling *sp = NULL;
  OxOpId op = ox_op_of_node(g, n, &sp);
  uint32_t nk = n->kwargs.kind == OX_V_DICT ? n->kwargs.n : 0;
  bool norm = false;
  const char *want = "";
  if (p->constraint == OX_PAT_C_SPLIT) {
    if (sp && sp->level == OX_LEVEL_ATEN) {
      want = "aten.split_with_sizes(x, [sections], dim>=0)";
      norm = op == OX_OPID_SPLIT_WITH_SIZES && n->args.n == 3 && nk == 0 && int_list(&n->args.u.items[1]) &&
             nonneg_int(&n->args.u.items[2]);
    } else {
      want = "torch.split(x, [sections], dim=d>=0)";
      norm = (op == OX_OPID_SPLIT || op == OX_OPID_SPLIT_WITH_SIZES) && n->op == OX_OP_CALL_FUNCTION &&
             sp && sp->level == OX_LEVEL_TORCH && n->args.n == 2 && int_list(&n->args.u.items[1]) && nk == 1 &&
             nonneg_int(kwarg_of(n, "dim"));
    }
    if (!norm) return failf(c, p, id, OX_REASON_NOT_NORMALIZED, "split not normalized", "nx", n->name, want);
  } else if (p->constraint == OX_PAT_C_UNBIND) {
    if (sp && sp->level == OX_LEVEL_ATEN) {
      want = "aten.unbind.int(x, dim>=0)";
      norm = op == OX_OPID_UNBIND && ((n->args.n == 2 && nk == 0 && nonneg_int(&n->args.u.items[1])) ||
                                      (n->args.n == 1 && nk == 0));
    } else {
      want = "torch.unbind(x, dim=d>=0)";
      norm = op == OX_OPID_UNBIND && n->op == OX_OP_CALL_FUNCTION && n->args.n == 1 && nk == 1 &&
             nonneg_int(kwarg_of(n, "dim"));
    }
    if (!norm) return failf(c, p, id, OX_REASON_NOT_NORMALIZED, "unbind not normalized", "nx", n->name, want);
  } else {
    return true;
  }
  return check_getitem_users(c, p, id);
}

static int slot_index(const OxOpInfo *info, const char *name) {
  for (uint32_t s = 0; info && s < info->n_slots; s++)
    if (strcmp(info->slot_names[s], name) == 0) return (int)s;
  return -1;
}

static bool match_call_args(Ctx *c, const OxPat *p, OxNodeId id) {
  const OxGraph *g = c->g;
  const OxNode *n = &g->nodes[id];
  uint32_t na = n->args.kind == OX_V_TUPLE || n->args.kind == OX_V_LIST ? n->args.n : 0;
  uint32_t nk = n->kwargs.kind == OX_V_DICT ? n->kwargs.n : 0;
  bool direct = na == p->n_args && nk == p->n_kw;
  for (uint32_t i = 0; direct && i < p->n_kw; i++)
    if (!kwarg_of(n, p->kw_names[i])) direct = false;
  c->depth++;
  if (direct) {
    for (uint32_t i = 0; i < p->n_args; i++) {
      n = &g->nodes[id];
      if (!match_value(c, p->args[i], &n->args.u.items[i])) return false;
    }
    for (uint32_t i = 0; i < p->n_kw; i++) {
      n = &g->nodes[id];
      if (!match_value(c, p->kw[i], kwarg_of(n, p->kw_names[i]))) return false;
    }
    c->depth--;
    return true;
  }
  /* PyTorch normalizes against the op schema when the call's shape differs from the pattern's */
  OxOpArgs oa;
  char err[160], b1[16], b2[16];
  c->depth--;
  if (ox_op_normalize(g, n, &oa, err, sizeof err) != 0)
    return failf(c, p, id, OX_REASON_ARITY, "args_structure", "nxx", n->name, "?", err);
  const OxOpInfo *info = ox_op_info(oa.op);
  bool covered[OX_MAX_SLOTS] = {0};
  const OxValue *vals[OX_MAX_SLOTS + 8] = {0};
  OxPat *pats[OX_MAX_SLOTS + 8] = {0};
  uint32_t nv = 0;
  ox_fmt_u64(b1, na); /* (not snprintf: this runs on every normalized match) */
  ox_fmt_u64(b2, p->n_args);
  if (p->n_args > oa.n_slots) return failf(c, p, id, OX_REASON_ARITY, "args_structure", "nxx", n->name, b1, b2);
  for (uint32_t i = 0; i < p->n_args; i++) {
    covered[i] = true;
    vals[nv] = oa.slot[i];
    pats[nv++] = p->args[i];
  }
  for (uint32_t i = 0; i < p->n_kw; i++) {
    int s = slot_index(info, p->kw_names[i]);
    if (s < 0 || covered[s]) return failf(c, p, id, OX_REASON_ARITY, "args_structure", "nxx", n->name, b1, b2);
    covered[s] = true;
    vals[nv] = oa.slot[s];
    pats[nv++] = p->kw[i];
  }
  for (uint32_t s = 0; s < oa.n_slots; s++)
    if (!covered[s] && !oa.from_default[s]) return failf(c, p, id, OX_REASON_ARITY, "args_structure", "nxx", n->name, b1, b2);
  c->depth++;
  for (uint32_t i = 0; i < nv; i++) {
    const OxValue *v = vals[i] == &oa.packed ? own_value(c->m, vals[i]) : vals[i];
    if (!match_value(c, pats[i], v)) return false;
  }
  c->depth--;
  return true;
}

/* `name @ call(...)`: the node joins the captures under name, unified like a KeywordArg. */
static bool bind_capture(Ctx *c, const OxPat *p, OxNodeId id) {
  OxValue v = ox_value_node(id);
  for (uint32_t i = c->caps_floor; i < c->m->n_caps; i++) {
    const OxPatCapture *k = &c->m->caps[i];
    if (!k->name || strcmp(k->name, p->bind) != 0) continue;
    if (c->in_list == 0 && k->in_list) continue;
    if (!ox_value_equal(k->value, &v))
      return failf(c, p, id, OX_REASON_CAPTURE_CONFLICT, "kwarg mismatch", "xVV", p->bind,
                   k->value, &v);
    return true;
  }
  push_cap(c, p, p->bind, own_value(c->m, &v));
  return true;
}

static OxNodeId bound_node(const Ctx *c, const OxPat *p) {
  const OxPatMatch *m = c->m;
  for (uint32_t i = 0; i < m->n_bound; i++) {
    if (m->bpat[i] != p) continue;
    if (i < c->bind_floor && (c->fresh || p->users != OX_PAT_USERS_ANY)) continue;
    return m->bnode[i];
  }
  return 0;
}

static bool match_repeated(Ctx *c, const OxPat *p, OxNodeId id);

static bool match_node(Ctx *c, const OxPat *p, OxNodeId id) {
  const OxGraph *g = c->g;
  char b1[96], b3[24];
  if (p->kind == OX_PAT_REPEATED) return match_repeated(c, p, id);
  if (p->kind != OX_PAT_CALL) return match_value(c, p, &(OxValue){.kind = OX_V_NODE, .u.node = id});
  OxNodeId prev = bound_node(c, p);
  if (prev) {
    if (prev == id) {
      c->m->progress++;
      return true;
    }
    return failf(c, p, id, OX_REASON_PATTERN_DIFFERS, "repeated pattern differs", "Pnn", p,
                 nname(g, prev), nname(g, id));
  }
  /* the node's name and target are read only if the failure is reported: call_accepts answers
   * most nodes from the op index, and reading the node here was a cache miss per list element
   * of every cat and stack the split/cat passes try (5 % of a 100k-node run) */
  if (!call_accepts(g, p, id))
    return failf(c, p, id, OX_REASON_TARGET_MISMATCH, "function_mismatch", "NTP", id, id, p);
  const OxNode *n = ox_graph_node(g, id);
  if (c->depth > 0 && p->users != OX_PAT_USERS_ANY && n->n_users != (uint32_t)p->users) {
    ox_fmt_u64(b1, n->n_users);
    ox_fmt_i64(b3, p->users);
    return failf(c, p, id, OX_REASON_MULTIPLE_USERS, "multiple_users", "nxx", n->name, b1, b3);
  }
  if (p->constraint) {
    OxPatMatch *m = c->m;
    bool held = false;
    for (uint8_t i = 0; i < m->n_held && !held; i++) held = m->held_pat[i] == p && m->held_node[i] == id;
    if (!held) {
      if (!check_constraint(c, p, id)) return false;
      uint8_t k = m->n_held < 8 ? m->n_held++ : (uint8_t)(id % 8); /* full: overwrite one */
      m->held_pat[k] = p;
      m->held_node[k] = id;
    }
  }
  if (!p->varargs && !match_call_args(c, p, id)) return false;
  if (p->bind && !bind_capture(c, p, id)) return false;
  push_node(c->m, id);
  push_bind(c->m, p, id);
  c->m->progress++;
  return true;
}

/* RepeatedExpr: the inner pattern matched at the anchor; every sibling reachable from the
 * deepest bound call through users with the same ops level by level must match too. */
static bool match_repeated(Ctx *c, const OxPat *p, OxNodeId id) {
  const OxGraph *g = c->g;
  const OxPat *inner = p->elem;
  if (!match_node(c, inner, id)) return false;
  /* the call chain inner -> first call argument -> ... */
  const OxPat *chain[32];
  uint32_t nch = 0;
  for (const OxPat *q = inner; q && q->kind == OX_PAT_CALL && nch < 32;) {
    chain[nch++] = q;
    const OxPat *next = NULL;
    for (uint32_t i = 0; i < q->n_args && !next; i++)
      if (q->args[i]->kind == OX_PAT_CALL) next = q->args[i];
    q = next;
  }
  if (nch < 2) return true;
  OxNodeId deep = bound_node(c, chain[nch - 1]);
  if (!deep) return true;
  uint32_t cap = 64, ncur = 1;
  OxNodeId *cur = ox_xrealloc(NULL, cap * sizeof *cur);
  cur[0] = deep;
  for (int lv = (int)nch - 2; lv >= 0; lv--) {
    OxNodeId *next = ox_xrealloc(NULL, cap * sizeof *next);
    uint32_t nn = 0;
    for (uint32_t i = 0; i < ncur; i++) {
      const OxNode *x = &g->nodes[cur[i]];
      for (uint32_t u = 0; u < x->n_users; u++) {
        OxNodeId us = x->users[u];
        if (!call_accepts(g, chain[lv], us)) continue;
        bool dup = false;
        for (uint32_t j = 0; j < nn && !dup; j++) dup = next[j] == us;
        if (dup) continue;
        if (nn == cap) {
          cap *= 2;
          next = ox_xrealloc(next, cap * sizeof *next);
          cur = ox_xrealloc(cur, cap * sizeof *cur);
        }
        next[nn++] = us;
      }
    }
    free(cur);
    cur = next;
    ncur = nn;
  }
  bool ok = true;
  for (uint32_t i = 0; i < ncur && ok; i++) {
    if (cur[i] == id) continue;
    OxPatMatch *m = c->m;
    uint32_t nb0 = m->n_bound;
    Ctx sub = *c;
    sub.bind_floor = nb0;
    sub.caps_floor = m->n_caps;
    sub.in_list = c->in_list + 1;
    sub.depth = c->depth; /* siblings are outputs too: their users are not constrained */
    sub.fresh = true;     /* PyTorch matches each sibling in a fresh context */
    ok = match_node(&sub, inner, cur[i]);
    m->n_bound = nb0;
    if (!ok) {
      char w[112];
      snprintf(w, sizeof w, "repeated: %s", m->fail.what);
      copy_arg(m->fail.what, sizeof m->fail.what, w, strlen(w));
    }
  }
  free(cur);
  return ok;
}

static bool pat_match(const OxGraph *g, const OxPat *p, OxNodeId node, OxPatMatch *m, bool resolve) {
  memset(m, 0, sizeof *m);
  m->anchor = node;
  m->pattern = p;
  Ctx c = {g, m, p, 0, 0, 0, 0, false, resolve};
  bool ok;
  if (p->kind == OX_PAT_MULTI) {
    ok = p->n_outs > 0 && match_node(&c, p->outs[0], node);
    for (uint32_t k = 1; ok && k < p->n_outs; k++) {
      /* other outputs: users of bound nodes that the output pattern accepts */
      bool found = false;
      /* bound nodes: the matched calls and node-valued captures */
      uint32_t n0 = m->n_nodes, nb = n0 + m->n_caps;
      OxNodeId *bound = ox_xcalloc(nb + 1, sizeof *bound);
      memcpy(bound, m->nodes, n0 * sizeof *bound);
      for (uint32_t i = 0; i < m->n_caps; i++)
        bound[n0 + i] = m->caps[i].value->kind == OX_V_NODE ? m->caps[i].value->u.node : 0;
      for (uint32_t i = 0; i < nb && !found; i++) {
        if (!bound[i]) continue;
        const OxNode *x = &g->nodes[bound[i]];
        for (uint32_t u = 0; u < x->n_users && !found; u++) {
          OxNodeId us = x->users[u];
          bool already = false;
          for (uint32_t j = 0; j < m->n_nodes && !already; j++) already = m->nodes[j] == us;
          if (already || !call_accepts(g, p->outs[k], us)) continue;
          uint32_t nn0 = m->n_nodes, nc0 = m->n_caps, nb0 = m->n_bound;
          OxPatFailure keep = m->fail;
          if (match_node(&c, p->outs[k], us)) {
            found = true;
          } else {
            m->n_nodes = nn0;
            m->n_caps = nc0;
            m->n_bound = nb0;
            m->fail = keep;
          }
        }
      }
      free(bound);
      if (!found) {
        char kk[24];
        snprintf(kk, sizeof kk, "output %u", k);
        ok = failf(&c, p->outs[k], 0, OX_REASON_NO_MATCH, "multi-output: no match", "xPx", kk,
                   p->outs[k], "no user of the matched nodes matches");
      }
    }
  } else {
    ok = match_node(&c, p, node);
  }
  m->ok = ok;
  if (!ok && resolve) resolve_failure(&m->fail);
  if (ok) {
    /* anchor last (RepeatedExpr siblings and other outputs were appended after it) */
    uint32_t j = 0;
    for (uint32_t i = 0; i < m->n_nodes; i++)
      if (m->nodes[i] != node) m->nodes[j++] = m->nodes[i];
    if (j < m->n_nodes) m->nodes[j++] = node;
    m->n_nodes = j;
  }
  return ok;
}

bool ox_pat_match(const OxGraph *g, const OxPat *p, OxNodeId node, OxPatMatch *m) {
  return pat_match(g, p, node, m, true);
}

void ox_pat_match_free(OxPatMatch *m) {
  if (!m) return;
  free(m->caps);
  free(m->nodes);
  free(m->bpat);
  free(m->bnode);
  for (uint32_t i = 0; i < m->n_owned; i++) free(m->owned[i]);
  free(m->owned);
  memset(m, 0, sizeof *m);
}

const OxValue *ox_pat_match_kw(const OxPatMatch *m, const char *name) {
  for (uint32_t i = 0; i < m->n_caps; i++)
    if (m->caps[i].name && strcmp(m->caps[i].name, name) == 0) return m->caps[i].value;
  return NULL;
}

OxNodeId ox_pat_match_node(const OxPatMatch *m, const OxPat *p) {
  for (uint32_t i = 0; i < m->n_bound; i++)
    if (m->bpat[i] == p) return m->bnode[i];
  return 0;
}

OxReason ox_pat_failure_reason(OxPassCtx *c, const OxPatFailure *f) {
  const char *args[OX_REASON_MAX_ARGS];
  for (uint32_t i = 0; i < f->n_args; i++) args[i] = f->args[i];
  return ox_reason_nodes(c, (OxReasonCode)f->code, args, f->n_args, f->is_node);
}

const char *ox_pat_failure_format(const OxPatFailure *f, char *buf, size_t cap) {
  if (!cap) return buf;
  /* the whole text first, then clipped to cap at a word boundary */
  OxBuf b;
  ox_buf_init(&b);
  ox_buf_printf(&b, "%s: ", f->what);
  const char *t = ox_reason_template((OxReasonCode)f->code);
  for (const char *s = t ? t : ""; *s; s++) {
    if (s[0] == '%' && s[1] >= '0' && s[1] <= '5') {
      unsigned i = (unsigned)(s[1] - '0');
      ox_buf_puts(&b, i < f->n_args ? f->args[i] : "?");
      s++;
    } else {
      ox_buf_putc(&b, *s);
    }
  }
  ox_text_clip(buf, cap, b.data, b.len);
  ox_buf_free(&b);
  return buf;
}

/* ------------------------------------------------------------------ the runner */

/* The runner asks every node of the graph on every pass; targets are interned, so the answer for
 * a target is cached per thread by (string table serial, pointer), as the op lookup is. */
enum { MUT_CACHE_BITS = 9 };
static _Thread_local struct {
  const char *key;
  uint64_t serial;
  bool mutating;
} mut_cache[1u << MUT_CACHE_BITS];

static bool target_mutating_cached(const OxGraph *g, const char *t) {
  uint64_t serial = ox_strtab_serial(g->strings);
  uint64_t h = (((uint64_t)(uintptr_t)t ^ serial) * 0x9E3779B97F4A7C15ull) >> (64 - MUT_CACHE_BITS);
  if (mut_cache[h].key == t && mut_cache[h].serial == serial) return mut_cache[h].mutating;
  bool m = ox_target_mutating(t);
  mut_cache[h].key = t;
  mut_cache[h].serial = serial;
  mut_cache[h].mutating = m;
  return m;
}

bool ox_pat_is_mutating(const OxGraph *g, OxNodeId id) {
  const OxNode *n = ox_graph_node(g, id);
  if (!n || n->erased) return false;
  if (n->op != OX_OP_CALL_FUNCTION && n->op != OX_OP_CALL_METHOD) return false;
  OxOpId op = ox_op_of_node(g, n, NULL);
  const OxOpInfo *info = op ? ox_op_info(op) : NULL;
  if (info && (info->flags & OX_OPF_MUTATING)) return true;
  if (n->target && target_mutating_cached(g, n->target)) return true;
  if (kwarg_of(n, "out")) return true;
  return false;
}

typedef struct Regions {
  uint32_t *id;   /* per node id: region + 1 (0 = unknown: created after the walk) */
  uint32_t n;
} Regions;

static void regions_compute(OxGraph *g, Regions *r) {
  r->n = g->n_nodes;
  r->id = NULL;
  /* most graphs mutate nothing: one region, found by a scan of the op index (walking the list
   * order touches 100k nodes scattered over the node array, on every pass) */
  bool any = false;
  for (OxNodeId x = 1; x < g->n_nodes && !any; x++) {
    uint16_t ix = ox_op_index(g, x);
    any = ix != OX_OPIX_ERASED && (ix & OX_OPIX_MUTATING);
  }
  if (!any) return;
  r->id = ox_xcalloc(r->n ? r->n : 1, sizeof *r->id);
  uint32_t cur = 0;
  OX_GRAPH_FOREACH(g, x) {
    if (ox_pat_is_mutating(g, x)) cur++;
    r->id[x] = cur + 1;
  }
}

static uint32_t region_of(const OxGraph *g, const Regions *r, OxNodeId x) {
  if (!r->id) return 0; /* one region */
  /* a node created by an earlier step takes the region of the nearest older node before it */
  while (x && (x >= r->n || !r->id[x])) x = g->link[x].prev;
  return x ? r->id[x] - 1 : 0;
}

typedef struct Seen {
  uint64_t *k;
  uint32_t cap, n;
} Seen;

static bool seen_add(Seen *s, uint64_t key) {
  key |= 1; /* 0 marks an empty slot */
  if ((s->n + 1) * 2 > s->cap) {
    uint32_t oc = s->cap;
    uint64_t *ok = s->k;
    s->cap = oc ? oc * 2 : 64;
    s->k = ox_xcalloc(s->cap, sizeof *s->k);
    s->n = 0;
    for (uint32_t i = 0; i < oc; i++)
      if (ok[i]) seen_add(s, ok[i]);
    free(ok);
  }
  uint32_t j = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (s->cap - 1);
  while (s->k[j]) {
    if (s->k[j] == key) return false;
    j = (j + 1) & (s->cap - 1);
  }
  s->k[j] = key;
  s->n++;
  return true;
}

static void reject(OxPassCtx *c, Seen *seen, const OxPatEntry *e, uint32_t ei, OxNodeId anchor, const OxNodeId *nodes,
                   uint32_t n, const OxReason *why, const OxPat *at) {
  if (!c->trace || !c->record_rejections) return;
  uint64_t key = ((uint64_t)anchor << 24) ^ ((uint64_t)ei << 12) ^ (uint64_t)why->code << 1;
  if (!seen_add(seen, key)) return;
  uint32_t before = c->trace->n_steps;
  ox_step_reject(c, e->name, anchor, nodes, n, why);
  if (at && at->located && c->trace->n_steps > before) { /* where in the rule file it failed */
    OxStep *s = &c->trace->steps[c->trace->n_steps - 1];
    s->rule_file = ox_trace_intern(c->trace, at->file);
    s->rule_line = at->line;
  }
}

void ox_pat_step_begin(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  ox_step_begin(c, e->name, m->anchor);
  ox_step_matched(c, m->nodes, m->n_nodes);
}

typedef struct LabeledId {
  uint64_t label;
  OxNodeId id;
} LabeledId;

static int cmp_label_desc(const void *a, const void *b) {
  uint64_t x = ((const LabeledId *)a)->label, y = ((const LabeledId *)b)->label;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Orders live ids as the list from tail to head (order labels increase along the list). */
static void sort_by_position_desc(OxGraph *g, OxNodeId *ids, uint32_t n) {
  if (n < 2) return;
  const uint64_t *lab = ox_graph_order_labels(g);
  LabeledId *t = ox_xcalloc(n, sizeof *t);
  for (uint32_t i = 0; i < n; i++) t[i] = (LabeledId){lab[ids[i]], ids[i]};
  qsort(t, n, sizeof *t, cmp_label_desc);
  for (uint32_t i = 0; i < n; i++) ids[i] = t[i].id;
  free(t);
}

/* Marks the op-index values (without the mutating flag) a node must have to be accepted as
 * pattern p's anchor; false when any node may be (the anchor is not a call). */
static bool anchor_filter_add(uint8_t *f, const OxPat *p) {
  if (p->kind == OX_PAT_REPEATED) return anchor_filter_add(f, p->elem);
  if (p->kind == OX_PAT_MULTI) return !p->n_outs || anchor_filter_add(f, p->outs[0]);
  if (p->kind != OX_PAT_CALL) return false;
  size_t n_sp;
  const OxSpelling *sp = ox_op_spellings(&n_sp);
  const OxOp *kinds = call_kinds;
  for (int cls = 0; cls < 3; cls++) {
    if (!(p->calls & (1u << kinds[cls]))) continue;
    for (uint32_t i = 0; i < p->n_targets; i++) {
      const OxSpelling *s = ox_spelling_find(kinds[cls], p->targets[i]);
      f[s ? ox_opix_of_spelling(s) : OX_OPIX_UNKNOWN_CALL + cls] = 1;
    }
    for (size_t k = 0; k < n_sp && p->n_ops; k++) {
      if (ox_spelling_kind(&sp[k]) != kinds[cls]) continue;
      for (uint32_t i = 0; i < p->n_ops; i++)
        if (sp[k].op == p->ops[i]) f[ox_opix_of_spelling(&sp[k])] = 1;
    }
  }
  return true;
}

int ox_pat_pass_run(OxPassCtx *c, const OxPatEntry *entries, uint32_t n) {
  OxGraph *g = c->g;
  Regions reg;
  regions_compute(g, &reg);
  /* a node's target equals an anchor's target only if their spellings are equal, so the op
   * index rules out most nodes without reading them */
  uint8_t *filter = ox_xcalloc(OX_OPIX_MUTATING, 1);
  for (uint32_t i = 0; i < n && filter; i++)
    if (!anchor_filter_add(filter, entries[i].pattern)) {
      free(filter);
      filter = NULL;
    }
  /* anchors fixed up front, in descending graph position: found by a scan in memory order,
   * then sorted by order label (the list order) */
  uint32_t na = 0, cap = 64;
  OxNodeId *anchors = ox_xrealloc(NULL, cap * sizeof *anchors);
  for (OxNodeId x = 1; x < g->n_nodes; x++) {
    uint16_t ix = ox_op_index(g, x);
    if (ix == OX_OPIX_ERASED || (filter && !filter[ix & (uint16_t)~OX_OPIX_MUTATING])) continue;
    bool any = false;
    for (uint32_t i = 0; i < n && !any; i++) any = ox_pat_anchor_accepts(g, entries[i].pattern, x);
    if (!any) continue;
    if (na == cap) anchors = ox_xrealloc(anchors, (cap *= 2) * sizeof *anchors);
    anchors[na++] = x;
  }
  free(filter);
  sort_by_position_desc(g, anchors, na);
  Seen seen = {0};
  int applied = 0;
  const bool args_unread = c->trace && c->trace->no_edits;
  for (uint32_t a = 0; a < na && !ox_pass_stopped(c); a++) {
    OxNodeId x = anchors[a];
    for (uint32_t i = 0; i < n && !c->stop; i++) {
      const OxPatEntry *e = &entries[i];
      if (g->nodes[x].erased) break;
      if (!ox_pat_anchor_accepts(g, e->pattern, x)) continue;
      OxPatMatch m;
      if (!pat_match(g, e->pattern, x, &m, !args_unread)) {
        /* a trace nobody reads (optimize without --trace) keeps the reason's code, not the
         * texts of its arguments: formatting them (a 300-node list) was ~5 % of such a run */
        if (args_unread)
          for (uint8_t k = 0; k < m.fail.n_args; k++)
            if (m.fail.lazy[k]) m.fail.args[k][0] = 0, m.fail.lazy[k] = 0;
        OxReason why = ox_pat_failure_reason(c, &m.fail);
        reject(c, &seen, e, i, x, m.nodes, m.n_nodes, &why, m.fail.pat ? m.fail.pat : e->pattern);
        ox_pat_match_free(&m);
        continue;
      }
      /* matches spanning a mutation barrier are discarded */
      uint32_t r0 = region_of(g, &reg, m.nodes[0]);
      OxNodeId other = 0;
      for (uint32_t k = 1; k < m.n_nodes && !other; k++)
        if (region_of(g, &reg, m.nodes[k]) != r0) other = m.nodes[k];
      if (other) {
        const char *mut = "?";
        OxNodeId lo = m.nodes[0], hi = other;
        if (ox_graph_before(g, hi, lo)) {
          OxNodeId t = lo;
          lo = hi;
          hi = t;
        }
        for (OxNodeId y = g->link[lo].next; y && y != hi; y = g->link[y].next)
          if (!g->nodes[y].erased && ox_pat_is_mutating(g, y)) {
            mut = g->nodes[y].name;
            break;
          }
        if (ox_pat_is_mutating(g, hi) && !strcmp(mut, "?")) mut = g->nodes[hi].name;
        const char *args[3] = {mut, g->nodes[lo].name, g->nodes[hi].name};
        bool isn[3] = {true, true, true};
        OxReason why = ox_reason_nodes(c, OX_REASON_MUTATION_BARRIER, args, 3, isn);
        reject(c, &seen, e, i, x, m.nodes, m.n_nodes, &why, e->pattern);
        ox_pat_match_free(&m);
        continue;
      }
      if (e->check) {
        OxReason why;
        memset(&why, 0, sizeof why);
        why.code = OX_REASON_COUNT;
        if (!e->check(c, e, &m, &why)) {
          if (why.code != OX_REASON_COUNT) reject(c, &seen, e, i, x, m.nodes, m.n_nodes, &why, e->pattern);
          ox_pat_match_free(&m);
          continue;
        }
      }
      int r = e->handler(c, e, &m);
      ox_pat_match_free(&m);
      if (r < 0) {
        free(anchors);
        free(reg.id);
        free(seen.k);
        return -1;
      }
      applied += r;
    }
  }
  free(anchors);
  free(reg.id);
  free(seen.k);
  return applied;
}
