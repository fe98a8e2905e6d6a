/* ox_splitcat.c - the split/cat/stack/unbind and normalization passes (spec 2.4, 3.5) as
 * pattern entries (ox_pattern.h) plus one handler per entry.
 *
 * Every pass builds its patterns as data in a pool, runs them once through ox_pat_pass_run
 * (anchors bottom-up, entries in registration order) and frees the pool. Handlers check the
 * guards the pattern language cannot express (dims, sections, consecutiveness), record a
 * rejection with a reason when a guard fails, and otherwise rewrite inside one step and count
 * with PyTorch's counter names (the pass name; scmerge_* for the split-cat simplifier).
 *
 * Fixes of upstream bugs (spec 4.4), applied everywhere:
 *   - dims are normalized (negative -> non-negative) before any comparison (#102950, #121227);
 *   - split sections come from the output meta (or, without it, from the input shape and the
 *     split size, with a short last chunk), never from "size * count" (#197080);
 *   - a run of cat inputs only ever groups getitems of the same split (#147784);
 *   - unbind removal requires every output used (#121228);
 *   - no simplification when a split output is mutated (copy_ into a piece), both through the
 *     runner's mutation regions and an explicit check on the users touched.
 *
 * Requires: meta (shapes) on the nodes a rewrite reasons about; a node without static meta
 * is rejected with META_MISSING / SYMBOLIC, never guessed. Created nodes get their meta by
 * inference right away (later handlers in the same pass read it).
 * Preserves: values of every live node that had users outside the rewritten region.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"
#include "ops/ox_shape.h"
#include "passes/ox_pattern.h"

/* ------------------------------------------------------------------ small helpers */

static OxOpId opof(const OxGraph *g, OxNodeId id) {
  const OxNode *n = ox_graph_node(g, id);
  return n && !n->erased ? ox_op_of_node(g, n, NULL) : OX_OPID_NONE;
}

static bool is_aten(const OxGraph *g, OxNodeId id) {
  const OxSpelling *sp = NULL;
  const OxNode *n = ox_graph_node(g, id);
  if (!n || !ox_op_of_node(g, n, &sp)) return false;
  return sp->level == OX_LEVEL_ATEN;
}

/* The tensor meta of a node when its shape is fully static, else NULL. */
static const OxTensorMeta *tmeta(const OxGraph *g, OxNodeId id) {
  const OxNode *n = ox_graph_node(g, id);
  if (!n || n->meta.kind != OX_META_TENSOR || !n->meta.t || n->meta.t->rank < 0) return NULL;
  for (int32_t i = 0; i < n->meta.t->rank; i++)
    if (n->meta.t->shape[i].sym) return NULL;
  return n->meta.t;
}

/* A rejection's own words into a fixed slot: formatted in full, then clipped at a word or list
 * boundary with "…" (a long node name is never cut mid-word). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void whyf(char *why, size_t cap, const char *fmt, ...) {
  char full[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(full, sizeof full, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  size_t len = (size_t)n < sizeof full ? (size_t)n : sizeof full - 1;
  ox_text_clip(why, cap, full, len);
}

static const char *nm(const OxGraph *g, OxNodeId id) {
  const OxNode *n = ox_graph_node(g, id);
  return n ? n->name : "?";
}

static int64_t norm_dim(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

static void infer(OxGraph *g, OxNodeId id) {
  OxMeta m;
  char err[256];
  if (ox_shape_infer_node(g, id, &m, err, sizeof err) == 0) {
    m.inferred = true;
    ox_graph_set_meta_shared(g, id, &m);
  }
}

/* torch.ops.aten.cat rather than torch.ops.aten.cat.default: an aten target without an
 * overload name */
static bool overload_packet(const OxGraph *g, OxNodeId id) {
  const OxNode *n = ox_graph_node(g, id);
  const char *a = n ? strstr(n->target, "aten.") : NULL;
  return a && !strchr(a + 5, '.');
}

/* aten targets are spelled like the node they replace ("torch.ops.aten.X" or "aten.X") */
static const char *aten_target(OxGraph *g, OxNodeId like, const char *overload) {
  char buf[160];
  const OxNode *n = ox_graph_node(g, like);
  bool ops = n && strncmp(n->target, "torch.ops.", 10) == 0;
  snprintf(buf, sizeof buf, "%s%s", ops ? "torch.ops." : "", overload);
  return ox_graph_intern(g, buf);
}

static OxNodeId mk_before(OxGraph *g, OxNodeId before, const char *target, OxValue args, OxValue kwargs) {
  OxNodeId id = ox_graph_insert_before(g, before, OX_OP_CALL_FUNCTION, NULL, target, args, kwargs);
  infer(g, id);
  return id;
}

static OxNodeId mk_after(OxGraph *g, OxNodeId after, const char *target, OxValue args, OxValue kwargs) {
  OxNodeId id = ox_graph_insert_after(g, after, OX_OP_CALL_FUNCTION, NULL, target, args, kwargs);
  infer(g, id);
  return id;
}

static OxValue tup(OxGraph *g, uint32_t n, ...) {
  OxValue items[8];
  va_list ap;
  va_start(ap, n);
  for (uint32_t i = 0; i < n && i < 8; i++) items[i] = va_arg(ap, OxValue);
  va_end(ap);
  return ox_graph_value_seq(g, OX_V_TUPLE, items, n);
}

static OxValue ilist(OxGraph *g, const int64_t *a, uint32_t n) {
  OxValue *items = ox_xcalloc(n ? n : 1, sizeof *items);
  for (uint32_t i = 0; i < n; i++) items[i] = ox_value_int(a[i]);
  OxValue v = ox_graph_value_seq(g, OX_V_LIST, items, n);
  free(items);
  return v;
}

static OxValue nlist(OxGraph *g, const OxNodeId *a, uint32_t n) {
  OxValue *items = ox_xcalloc(n ? n : 1, sizeof *items);
  for (uint32_t i = 0; i < n; i++) items[i] = ox_value_node(a[i]);
  OxValue v = ox_graph_value_seq(g, OX_V_LIST, items, n);
  free(items);
  return v;
}

static OxValue kw1(OxGraph *g, const char *k, OxValue v) { return ox_graph_value_dict(g, &k, &v, 1); }
static OxValue V(OxNodeId id) { return ox_value_node(id); }
static OxValue I(int64_t i) { return ox_value_int(i); }

static const OxValue *kwarg_of(const OxNode *n, const char *k) {
  for (uint32_t i = 0; n->kwargs.kind == OX_V_DICT && i < n->kwargs.n; i++)
    if (strcmp(n->kwargs.keys[i], k) == 0) return &n->kwargs.u.items[i];
  return NULL;
}

/* getitem(parent, k) with an int k */
static bool getitem_of(const OxGraph *g, OxNodeId id, OxNodeId *parent, int64_t *k) {
  const OxNode *n = ox_graph_node(g, id);
  if (!n || n->erased || opof(g, id) != OX_OPID_GETITEM || n->args.n != 2) return false;
  if (n->args.u.items[0].kind != OX_V_NODE || n->args.u.items[1].kind != OX_V_INT) return false;
  *parent = n->args.u.items[0].u.node;
  *k = n->args.u.items[1].u.i;
  return true;
}

static void rejectf(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m, OxReasonCode code, ...) {
  if (!c->trace || !c->record_rejections) return;
  va_list ap;
  va_start(ap, code);
  OxReason r = ox_reason_va(c, code, false, ap);
  va_end(ap);
  ox_step_reject(c, e->name, m->anchor, m->nodes, m->n_nodes, &r);
}

static const char *itoa_buf(char *b, size_t cap, int64_t v) {
  snprintf(b, cap, "%lld", (long long)v);
  return b;
}

/* Erases n when it has no users (and nothing else); returns whether it did. */
static bool erase_dead(OxGraph *g, OxNodeId n) {
  const OxNode *x = ox_graph_node(g, n);
  if (!x || x->erased || x->n_users) return false;
  return ox_graph_erase(g, n);
}

/* Replace every use of old with new, then erase old. */
static void replace_node(OxGraph *g, OxNodeId old, OxNodeId nw) {
  ox_graph_replace_all_uses(g, old, nw);
  ox_graph_erase(g, old);
}

/* ------------------------------------------------------------------ splits and cats */

typedef struct Split {
  OxNodeId node, input;
  bool unbind;
  int64_t dim;     /* normalized against the input rank */
  uint32_t n;      /* outputs */
  int64_t *sec;    /* n sections (unbind: all 1) */
  int64_t *start;  /* n + 1 cumulative starts */
  OxNodeId *item;  /* the getitem of each index, 0 if none */
  const OxTensorMeta *in;
} Split;

static void split_free(Split *s) {
  free(s->sec);
  free(s->start);
  free(s->item);
  memset(s, 0, sizeof *s);
}

/* Loads a split / split_with_sizes / unbind node. Sections come from the outputs' meta, or
 * from the input shape (a short last chunk included): never from size * count (#197080). */
static bool split_load(const OxGraph *g, OxNodeId s, Split *sp, char *why, size_t cap) {
  memset(sp, 0, sizeof *sp);
  const OxNode *n = ox_graph_node(g, s);
  OxOpArgs oa;
  char err[160];
  OxOpId op = opof(g, s);
  if (op != OX_OPID_SPLIT && op != OX_OPID_SPLIT_WITH_SIZES && op != OX_OPID_UNBIND) {
    whyf(why, cap, "%s is not a split", nm(g, s));
    return false;
  }
  if (ox_op_normalize(g, n, &oa, err, sizeof err) != 0 || oa.slot[0]->kind != OX_V_NODE) {
    whyf(why, cap, "%s", err);
    return false;
  }
  sp->node = s;
  sp->input = oa.slot[0]->u.node;
  sp->unbind = op == OX_OPID_UNBIND;
  sp->in = tmeta(g, sp->input);
  if (!sp->in) {
    whyf(why, cap, "meta missing or symbolic on %s", nm(g, sp->input));
    return false;
  }
  const OxValue *dimv = oa.slot[sp->unbind ? 1 : 2];
  if (dimv->kind != OX_V_INT) {
    whyf(why, cap, "dim of %s is not an int", n->name);
    return false;
  }
  sp->dim = norm_dim(dimv->u.i, sp->in->rank);
  if (sp->dim < 0 || sp->dim >= sp->in->rank) {
    whyf(why, cap, "dim of %s out of range", n->name);
    return false;
  }
  int64_t size = sp->in->shape[sp->dim].v;
  if (sp->unbind) {
    sp->n = (uint32_t)size;
    sp->sec = ox_xcalloc(sp->n + 1, sizeof *sp->sec);
    for (uint32_t i = 0; i < sp->n; i++) sp->sec[i] = 1;
  } else if (n->meta.kind == OX_META_TUPLE && n->meta.n > 0) {
    sp->n = n->meta.n;
    sp->sec = ox_xcalloc(sp->n + 1, sizeof *sp->sec);
    for (uint32_t i = 0; i < sp->n; i++) {
      const OxTensorMeta *t = &n->meta.t[i];
      if (t->rank != sp->in->rank || t->shape[sp->dim].sym) {
        whyf(why, cap, "meta of %s output %u is unusable", n->name, i);
        split_free(sp);
        return false;
      }
      sp->sec[i] = t->shape[sp->dim].v;
    }
  } else {
    const OxValue *sz = oa.slot[1];
    if (sz->kind == OX_V_INT && sz->u.i > 0) {
      sp->n = (uint32_t)((size + sz->u.i - 1) / sz->u.i);
      if (!sp->n) sp->n = 1;
      sp->sec = ox_xcalloc(sp->n + 1, sizeof *sp->sec);
      for (uint32_t i = 0; i < sp->n; i++) {
        int64_t left = size - (int64_t)i * sz->u.i;
        sp->sec[i] = left < sz->u.i ? left : sz->u.i;
      }
    } else if (sz->kind == OX_V_LIST || sz->kind == OX_V_TUPLE) {
      sp->n = sz->n;
      sp->sec = ox_xcalloc(sp->n + 1, sizeof *sp->sec);
      for (uint32_t i = 0; i < sp->n; i++) {
        if (sz->u.items[i].kind != OX_V_INT) {
          whyf(why, cap, "symbolic sections on %s", n->name);
          split_free(sp);
          return false;
        }
        sp->sec[i] = sz->u.items[i].u.i;
      }
    } else {
      whyf(why, cap, "sections of %s are not static", n->name);
      return false;
    }
  }
  sp->start = ox_xcalloc(sp->n + 1, sizeof *sp->start);
  for (uint32_t i = 0; i < sp->n; i++) sp->start[i + 1] = sp->start[i] + sp->sec[i];
  sp->item = ox_xcalloc(sp->n + 1, sizeof *sp->item);
  for (uint32_t u = 0; u < n->n_users; u++) {
    OxNodeId par;
    int64_t k;
    if (getitem_of(g, n->users[u], &par, &k) && par == s && k >= 0 && k < (int64_t)sp->n && !sp->item[k])
      sp->item[k] = n->users[u];
  }
  return true;
}

/* A cat/stack node: its tensors list and its dim normalized (cat: input rank; stack: rank+1). */
typedef struct Cat {
  OxNodeId node;
  bool stack;
  const OxValue *tensors;
  int64_t dim;
  int64_t in_rank;
} Cat;

static bool cat_load(const OxGraph *g, OxNodeId id, Cat *ct, char *why, size_t cap) {
  memset(ct, 0, sizeof *ct);
  OxOpId op = opof(g, id);
  OxOpArgs oa;
  char err[160];
  if (op != OX_OPID_CAT && op != OX_OPID_STACK) {
    whyf(why, cap, "%s is not a cat or stack", nm(g, id));
    return false;
  }
  if (ox_op_normalize(g, &g->nodes[id], &oa, err, sizeof err) != 0) {
    whyf(why, cap, "%s", err);
    return false;
  }
  const OxValue *t = oa.slot[0];
  if ((t->kind != OX_V_LIST && t->kind != OX_V_TUPLE) || !t->n || oa.slot[1]->kind != OX_V_INT) {
    whyf(why, cap, "%s: tensors or dim not static", nm(g, id));
    return false;
  }
  const OxTensorMeta *first = NULL;
  for (uint32_t i = 0; i < t->n && !first; i++) {
    if (t->u.items[i].kind != OX_V_NODE) continue;
    const OxTensorMeta *tm = tmeta(g, t->u.items[i].u.node);
    if (tm && !(tm->rank == 1 && tm->shape[0].v == 0)) first = tm; /* 1-D empty tensors may join any cat */
  }
  if (!first) {
    whyf(why, cap, "meta missing on the inputs of %s", nm(g, id));
    return false;
  }
  ct->node = id;
  ct->stack = op == OX_OPID_STACK;
  ct->tensors = t;
  ct->in_rank = first->rank;
  ct->dim = norm_dim(oa.slot[1]->u.i, ct->stack ? first->rank + 1 : first->rank);
  if (ct->dim < 0 || ct->dim > (ct->stack ? first->rank : first->rank - 1)) {
    whyf(why, cap, "dim of %s out of range", nm(g, id));
    return false;
  }
  return true;
}

/* pre-grad targets */
#define T_SPLIT "torch.split"
#define T_GETITEM "operator.getitem"
#define T_CAT "torch.cat"
#define T_STACK "torch.stack"
#define T_UNBIND "torch.unbind"

/* A new normalized split (pre-grad torch.split / post-grad aten.split_with_sizes). */
static OxNodeId new_split(OxGraph *g, OxNodeId before, OxNodeId like, OxNodeId input, const int64_t *sec, uint32_t n,
                          int64_t dim) {
  if (is_aten(g, like))
    return mk_before(g, before, aten_target(g, like, "aten.split_with_sizes.default"),
                     tup(g, 3, V(input), ilist(g, sec, n), I(dim)), ox_value_none());
  return mk_before(g, before, T_SPLIT, tup(g, 2, V(input), ilist(g, sec, n)), kw1(g, "dim", I(dim)));
}

static OxNodeId new_getitem_after(OxGraph *g, OxNodeId after, OxNodeId of, int64_t k) {
  return mk_after(g, after, T_GETITEM, tup(g, 2, V(of), I(k)), ox_value_none());
}

/* Moves getitem old onto (split, k): a new getitem takes over its users. (Rewriting old's
 * arguments in place would read, to the step's provenance, as the old split turning into the
 * new one, whose shapes differ.) */
static OxNodeId repoint_getitem(OxGraph *g, OxNodeId old, OxNodeId after, OxNodeId split, int64_t k) {
  OxNodeId ng = new_getitem_after(g, after, split, k);
  replace_node(g, old, ng);
  return ng;
}

static OxNodeId new_cat(OxGraph *g, OxNodeId before, OxNodeId like, const OxNodeId *in, uint32_t n, int64_t dim,
                        bool stack) {
  if (is_aten(g, like))
    return mk_before(g, before, aten_target(g, like, stack ? "aten.stack.default" : "aten.cat.default"),
                     tup(g, 2, nlist(g, in, n), I(dim)), ox_value_none());
  return mk_before(g, before, stack ? T_STACK : T_CAT, tup(g, 1, nlist(g, in, n)), kw1(g, "dim", I(dim)));
}

/* x[:, ..., start:end] along dim (pre-grad getitem with slices; post-grad aten.slice) */
static OxNodeId new_slice(OxGraph *g, OxNodeId before, OxNodeId like, OxNodeId x, int64_t dim, int64_t start,
                          int64_t end) {
  if (is_aten(g, like))
    return mk_before(g, before, aten_target(g, like, "aten.slice.Tensor"), tup(g, 4, V(x), I(dim), I(start), I(end)),
                     ox_value_none());
  OxValue *sl = ox_xcalloc((size_t)dim + 1, sizeof *sl);
  for (int64_t i = 0; i <= dim; i++) {
    OxValue t[3] = {ox_value_none(), ox_value_none(), ox_value_none()};
    if (i == dim) {
      t[0] = I(start);
      t[1] = I(end);
    }
    sl[i] = ox_graph_value_seq(g, OX_V_SLICE, t, 3);
  }
  OxValue idx = ox_graph_value_seq(g, OX_V_TUPLE, sl, (uint32_t)dim + 1);
  free(sl);
  return mk_before(g, before, T_GETITEM, tup(g, 2, V(x), idx), ox_value_none());
}

static OxNodeId new_call(OxGraph *g, OxNodeId before, OxNodeId like, const char *torch_t, const char *aten_t,
                         OxValue args) {
  if (is_aten(g, like) && aten_t) return mk_before(g, before, aten_target(g, like, aten_t), args, ox_value_none());
  return mk_before(g, before, torch_t, args, ox_value_none());
}

/* ------------------------------------------------------------------ pass scaffolding */

static const OxOpId OPS_SPLIT[] = {OX_OPID_SPLIT, OX_OPID_SPLIT_WITH_SIZES};
static const OxOpId OPS_CAT[] = {OX_OPID_CAT};
static const OxOpId OPS_STACK[] = {OX_OPID_STACK};
static const OxOpId OPS_CATSTACK[] = {OX_OPID_CAT, OX_OPID_STACK};

/* getitem_split = ListOf(getitem(TorchSplit(IGN, KW(split_sections)), IGN, users=MULT), partial) */
static OxPat *getitem_split(OxPatPool *p) {
  OX_PAT_LOC(p);
  OxPat *split = ox_pat_torch_split(p, ox_pat_ignored(p), ox_pat_kwarg(p, "split_sections"), NULL);
  return ox_pat_list(p, ox_pat_getitem(p, split, ox_pat_ignored(p), OX_PAT_USERS_ANY), true);
}

/* getitem_unbind = ListOf(getitem(unbind(KW(unbind_input), dim=KW(dim), users=MULT), IGN, users=MULT), partial) */
static OxPat *getitem_unbind(OxPatPool *p) {
  OX_PAT_LOC(p);
  OxOpId ub[] = {OX_OPID_UNBIND};
  OxPat *a[] = {ox_pat_kwarg(p, "unbind_input")};
  OxPat *u = ox_pat_call(p, OX_PAT_FUNCTION, ub, 1, a, 1);
  ox_pat_call_kw(p, u, "dim", ox_pat_kwarg(p, "dim"));
  ox_pat_call_users(u, OX_PAT_USERS_ANY);
  ox_pat_call_constraint(u, OX_PAT_C_UNBIND);
  return ox_pat_list(p, ox_pat_getitem(p, u, ox_pat_ignored(p), OX_PAT_USERS_ANY), true);
}

/* [cat|stack](list, dim=IGN, users=MULT) */
static OxPat *catlike(OxPatPool *p, const OxOpId *ops, uint32_t n, OxPat *list) {
  OX_PAT_LOC(p);
  OxPat *a[] = {list};
  OxPat *c = ox_pat_call(p, OX_PAT_FUNCTION, ops, n, a, 1);
  ox_pat_call_kw(p, c, "dim", ox_pat_ignored(p));
  ox_pat_call_users(c, OX_PAT_USERS_ANY);
  return c;
}

static OxPat *varargs(OxPatPool *p, unsigned calls, const OxOpId *ops, uint32_t n) {
  OxPat *x = ox_pat_call_varargs(p, calls, ops, n);
  ox_pat_call_users(x, OX_PAT_USERS_ANY);
  return x;
}

/* pre-grad passes leave aten spellings alone, post-grad passes the torch-level ones */
static bool pre_level(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m, OxReason *why) {
  (void)e;
  (void)why;
  return !is_aten(c->g, m->anchor);
}

static bool post_level(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m, OxReason *why) {
  (void)e;
  (void)why;
  return is_aten(c->g, m->anchor);
}

static int run_entries(OxPassCtx *c, OxPatPool *pool, const OxPatEntry *entries, uint32_t n) {
  int r = ox_pat_pass_run(c, entries, n);
  ox_pat_pool_free(pool);
  return r;
}

static void count(OxPassCtx *c) { ox_counter_add(c, c->pass ? c->pass->name : "pattern", 1); }

/* ------------------------------------------------------------------ normalization_pass */

static bool canonical_kw_dim(const OxNode *n, uint32_t nargs) {
  const OxValue *d = kwarg_of(n, "dim");
  return n->op == OX_OP_CALL_FUNCTION && n->args.n == nargs && n->kwargs.kind == OX_V_DICT && n->kwargs.n == 1 && d &&
         d->kind == OX_V_INT && d->u.i >= 0;
}

/* Replaces node old by a new call (same meta), counted or not. */
static int normalize_to(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m, const char *target, OxValue args,
                        OxValue kwargs, bool counted) {
  OxGraph *g = c->g;
  OxNodeId old = m->anchor;
  ox_pat_step_begin(c, e, m);
  OxNodeId nw = ox_graph_insert_before(g, old, OX_OP_CALL_FUNCTION, NULL, target, args, kwargs);
  if (g->nodes[old].meta.kind != OX_META_NONE) {
    OxMeta meta = g->nodes[old].meta;
    ox_graph_set_meta_shared(g, nw, &meta);
  } else {
    infer(g, nw);
  }
  replace_node(g, old, nw);
  if (!ox_step_commit(c)) return 0;
  if (counted) count(c);
  return 1;
}

/* A split/cat that could not be loaded: META_MISSING naming the node when its meta is what is
 * missing ("meta missing on getitem_3", not "meta missing on meta missing or symbolic on
 * getitem_3"), else the loader's own words. */
static void reject_load(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m, const char *why) {
  static const char *const prefixes[] = {"meta missing or symbolic on ", "meta missing on ", NULL};
  for (const char *const *p = prefixes; *p; p++)
    if (strncmp(why, *p, strlen(*p)) == 0) {
      rejectf(c, e, m, OX_REASON_META_MISSING, why + strlen(*p), NULL);
      return;
    }
  rejectf(c, e, m, OX_REASON_OTHER, why, NULL);
}

static int h_norm_split(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Split sp;
  char why[200];
  if (!split_load(g, m->anchor, &sp, why, sizeof why)) {
    reject_load(c, e, m, why);
    return 0;
  }
  if (opof(g, m->anchor) == OX_OPID_UNBIND) {
    split_free(&sp);
    return 0;
  }
  const OxNode *n = &g->nodes[m->anchor];
  const OxSpelling *spl;
  ox_op_of_node(g, n, &spl);
  /* torch.functional.split is torch.split (the same function; FX prints it that way):
   * upstream compares arguments, never the spelling */
  bool canon = canonical_kw_dim(n, 2) && spl->level == OX_LEVEL_TORCH &&
               (strcmp(n->target, T_SPLIT) == 0 || strcmp(n->target, "torch.functional.split") == 0) &&
               n->args.u.items[1].kind == OX_V_LIST && n->args.u.items[1].n == sp.n &&
               kwarg_of(n, "dim")->u.i == sp.dim;
  for (uint32_t i = 0; canon && i < sp.n; i++)
    canon = n->args.u.items[1].u.items[i].kind == OX_V_INT && n->args.u.items[1].u.items[i].u.i == sp.sec[i];
  int r = 0;
  if (!canon)
    r = normalize_to(c, e, m, T_SPLIT, tup(g, 2, V(sp.input), ilist(g, sp.sec, sp.n)), kw1(g, "dim", I(sp.dim)), true);
  split_free(&sp);
  return r;
}

static int h_norm_unbind(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Split sp;
  char why[200];
  if (!split_load(g, m->anchor, &sp, why, sizeof why)) {
    reject_load(c, e, m, why);
    return 0;
  }
  /* always rewritten and counted, even when already canonical: upstream's
   * normalize_unbind_default has no early return (only split and cat have one) */
  int r = normalize_to(c, e, m, T_UNBIND, tup(g, 1, V(sp.input)), kw1(g, "dim", I(sp.dim)), true);
  split_free(&sp);
  return r;
}

static int h_norm_cat(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Cat ct;
  char why[200];
  if (!cat_load(g, m->anchor, &ct, why, sizeof why)) {
    reject_load(c, e, m, why);
    return 0;
  }
  /* every input has meta and the same rank (1-D empty tensors excepted) */
  for (uint32_t i = 0; i < ct.tensors->n; i++) {
    const OxValue *v = &ct.tensors->u.items[i];
    const OxTensorMeta *t = v->kind == OX_V_NODE ? tmeta(g, v->u.node) : NULL;
    if (!t) {
      rejectf(c, e, m, OX_REASON_META_MISSING, v->kind == OX_V_NODE ? nm(g, v->u.node) : "a constant input", NULL);
      return 0;
    }
    if (t->rank != ct.in_rank && !(t->rank == 1 && t->shape[0].v == 0)) {
      char a[16], b[16];
      rejectf(c, e, m, OX_REASON_RANK, nm(g, v->u.node), itoa_buf(a, sizeof a, t->rank),
              itoa_buf(b, sizeof b, ct.in_rank), NULL);
      return 0;
    }
  }
  const OxNode *n = &g->nodes[m->anchor];
  const char *target = ct.stack ? T_STACK : T_CAT;
  /* a canonical cat is left alone; a stack is always rewritten and counted (upstream's
   * normalize_stack_default has no early return) */
  bool canon = canonical_kw_dim(n, 1) && strcmp(n->target, target) == 0 && kwarg_of(n, "dim")->u.i == ct.dim;
  if (canon && !ct.stack) return 0;
  OxValue list = ox_graph_value_copy(g, ct.tensors);
  list.kind = OX_V_LIST;
  return normalize_to(c, e, m, target, tup(g, 1, list), kw1(g, "dim", I(ct.dim)), true);
}

/* x.squeeze(...) -> torch.squeeze(x[, dim=...]); a one-element dim list is unwrapped */
static int h_norm_squeeze(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  const OxNode *n = &g->nodes[m->anchor];
  if (n->op != OX_OP_CALL_METHOD) return 0;
  OxOpArgs oa;
  char err[160];
  if (ox_op_normalize(g, n, &oa, err, sizeof err) != 0 || oa.slot[0]->kind != OX_V_NODE) return 0;
  OxNodeId x = oa.slot[0]->u.node;
  const OxValue *d = oa.slot[1];
  if (d->kind == OX_V_NONE) return normalize_to(c, e, m, "torch.squeeze", tup(g, 1, V(x)), ox_value_none(), false);
  OxValue dv = (d->kind == OX_V_LIST || d->kind == OX_V_TUPLE) && d->n == 1 ? d->u.items[0] : *d;
  dv = ox_graph_value_copy(g, &dv);
  return normalize_to(c, e, m, "torch.squeeze", tup(g, 1, V(x)), kw1(g, "dim", dv), false);
}

/* x.reshape(...) -> torch.reshape(x, static output shape); dynamic shapes are left alone */
static int h_norm_reshape(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  const OxNode *n = &g->nodes[m->anchor];
  if (n->op != OX_OP_CALL_METHOD) return 0;
  const OxTensorMeta *t = tmeta(g, m->anchor);
  OxOpArgs oa;
  char err[160];
  if (!t || ox_op_normalize(g, n, &oa, err, sizeof err) != 0 || oa.slot[0]->kind != OX_V_NODE) return 0;
  int64_t shape[OX_SHAPE_MAX_RANK];
  for (int32_t i = 0; i < t->rank && i < OX_SHAPE_MAX_RANK; i++) shape[i] = t->shape[i].v;
  OxNodeId x = oa.slot[0]->u.node;
  if (!tmeta(g, x)) return 0; /* a dynamic input: the output shape is not static after all */
  return normalize_to(c, e, m, "torch.reshape", tup(g, 2, V(x), ilist(g, shape, (uint32_t)t->rank)), ox_value_none(),
                      false);
}

/* x.clamp(a, b) / torch.clamp(x, a, b) -> torch.clamp(x, min=a, max=b) */
static int h_norm_clamp(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  const OxNode *n = &g->nodes[m->anchor];
  OxOpArgs oa;
  char err[160];
  if (ox_op_normalize(g, n, &oa, err, sizeof err) != 0 || oa.slot[0]->kind != OX_V_NODE) return 0;
  if (oa.slot[1]->kind == OX_V_NODE || oa.slot[2]->kind == OX_V_NODE || oa.slot[1]->kind == OX_V_SYM ||
      oa.slot[2]->kind == OX_V_SYM)
    return 0; /* dynamic bounds */
  bool canon = n->op == OX_OP_CALL_FUNCTION && strcmp(n->target, "torch.clamp") == 0 && n->args.n == 1 &&
               n->kwargs.kind == OX_V_DICT && n->kwargs.n == 2 && kwarg_of(n, "min") && kwarg_of(n, "max");
  if (canon) return 0;
  const char *keys[2] = {"min", "max"};
  OxValue vals[2] = {ox_graph_value_copy(g, oa.slot[1]), ox_graph_value_copy(g, oa.slot[2])};
  OxNodeId x = oa.slot[0]->u.node;
  return normalize_to(c, e, m, "torch.clamp", tup(g, 1, V(x)), ox_graph_value_dict(g, keys, vals, 2), false);
}

static int h_norm_detach(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  const OxNode *n = &g->nodes[m->anchor];
  if (n->op != OX_OP_CALL_METHOD || n->args.n != 1 || n->args.u.items[0].kind != OX_V_NODE) return 0;
  return normalize_to(c, e, m, "torch.detach", tup(g, 1, V(n->args.u.items[0].u.node)), ox_value_none(), false);
}

int ox_splitcat_normalization_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxOpId unbind[] = {OX_OPID_UNBIND}, squeeze[] = {OX_OPID_SQUEEZE}, reshape[] = {OX_OPID_RESHAPE},
         clamp[] = {OX_OPID_CLAMP}, detach[] = {OX_OPID_DETACH};
  unsigned fm = OX_PAT_FUNCTION | OX_PAT_METHOD;
  OxPatEntry es[] = {
    {"normalize_split_default", varargs(p, fm, OPS_SPLIT, 2), pre_level, h_norm_split, NULL},
    {"normalize_unbind_default", varargs(p, fm, unbind, 1), pre_level, h_norm_unbind, NULL},
    {"normalize_cat_default", varargs(p, fm, OPS_CAT, 1), pre_level, h_norm_cat, NULL},
    {"normalize_stack_default", varargs(p, fm, OPS_STACK, 1), pre_level, h_norm_cat, NULL},
    {"normalize_squeeze_default", varargs(p, OX_PAT_METHOD, squeeze, 1), NULL, h_norm_squeeze, NULL},
    {"normalize_reshape_default", varargs(p, OX_PAT_METHOD, reshape, 1), NULL, h_norm_reshape, NULL},
    {"normalize_clamp_default", varargs(p, fm, clamp, 1), pre_level, h_norm_clamp, NULL},
    {"normalize_detach_default", varargs(p, OX_PAT_METHOD, detach, 1), NULL, h_norm_detach, NULL},
  };
  return run_entries(c, p, es, sizeof es / sizeof es[0]);
}

/* ------------------------------------------------------------------ remove_split_with_size_one_pass */

static int h_remove_split_one(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Split sp;
  char why[200];
  if (!split_load(g, m->anchor, &sp, why, sizeof why)) {
    reject_load(c, e, m, why);
    return 0;
  }
  uint32_t n = sp.n;
  OxNodeId x = sp.input;
  split_free(&sp);
  const OxNode *s = &g->nodes[m->anchor];
  if (n != 1 || s->n_users == 0) return 0;
  for (uint32_t u = 0; u < s->n_users; u++) {
    OxNodeId par;
    int64_t k;
    if (!getitem_of(g, s->users[u], &par, &k) || k != 0) {
      rejectf(c, e, m, OX_REASON_USER_NOT_GETITEM, s->name, nm(g, s->users[u]), NULL);
      return 0;
    }
  }
  ox_pat_step_begin(c, e, m);
  while (g->nodes[m->anchor].n_users) replace_node(g, g->nodes[m->anchor].users[0], x);
  ox_graph_erase(g, m->anchor);
  if (!ox_step_commit(c)) return 0;
  count(c);
  return 1;
}

int ox_splitcat_remove_split_with_size_one_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxPatEntry es[] = {
    {"remove_split_with_size_one", varargs(p, OX_PAT_FUNCTION | OX_PAT_METHOD, OPS_SPLIT, 2), pre_level,
     h_remove_split_one, NULL},
  };
  return run_entries(c, p, es, 1);
}

/* ------------------------------------------------------------------ merge_splits_pass */

static int h_merge_splits(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  OxNodeId s2 = m->anchor, gi, s1;
  int64_t k;
  const OxNode *n2 = &g->nodes[s2];
  if (n2->n_users == 0) return 0; /* the inner split has no users */
  if (!getitem_of(g, n2->args.u.items[0].u.node, &s1, &k)) return 0;
  gi = n2->args.u.items[0].u.node;
  Split a, b;
  char why[200];
  if (!split_load(g, s1, &a, why, sizeof why)) {
    reject_load(c, e, m, why);
    return 0;
  }
  if (!split_load(g, s2, &b, why, sizeof why)) {
    split_free(&a);
    reject_load(c, e, m, why);
    return 0;
  }
  if (a.dim != b.dim) { /* KeywordArg("dim") already unifies; normalized dims make it exact */
    char x[16], y[16];
    rejectf(c, e, m, OX_REASON_DIM_MISMATCH, nm(g, s1), itoa_buf(x, sizeof x, a.dim), nm(g, s2),
            itoa_buf(y, sizeof y, b.dim), NULL);
    split_free(&a);
    split_free(&b);
    return 0;
  }
  uint32_t nn = a.n - 1 + b.n;
  int64_t *sec = ox_xcalloc(nn, sizeof *sec);
  uint32_t j = 0;
  for (uint32_t i = 0; i < (uint32_t)k; i++) sec[j++] = a.sec[i];
  for (uint32_t i = 0; i < b.n; i++) sec[j++] = b.sec[i];
  for (uint32_t i = (uint32_t)k + 1; i < a.n; i++) sec[j++] = a.sec[i];
  ox_pat_step_begin(c, e, m);
  OxNodeId ns = new_split(g, s1, s1, a.input, sec, nn, a.dim);
  /* old getitems of the first split: shifted indices; of the second: offset k */
  OxNodeId *users = ox_xrealloc(NULL, (g->nodes[s1].n_users + 1) * sizeof *users);
  uint32_t nu = g->nodes[s1].n_users;
  memcpy(users, g->nodes[s1].users, nu * sizeof *users);
  OxNodeId after = ns;
  for (uint32_t u = 0; u < nu; u++) {
    OxNodeId par;
    int64_t i;
    if (users[u] == gi || !getitem_of(g, users[u], &par, &i)) continue;
    int64_t ni = i < k ? i : i + (int64_t)b.n - 1;
    after = repoint_getitem(g, users[u], after, ns, ni);
  }
  free(users);
  nu = g->nodes[s2].n_users;
  users = ox_xrealloc(NULL, (nu + 1) * sizeof *users);
  memcpy(users, g->nodes[s2].users, nu * sizeof *users);
  for (uint32_t u = 0; u < nu; u++) {
    OxNodeId par;
    int64_t i;
    if (!getitem_of(g, users[u], &par, &i)) continue;
    OxNodeId ng = after = new_getitem_after(g, after, ns, k + i);
    replace_node(g, users[u], ng);
  }
  free(users);
  erase_dead(g, s2);
  erase_dead(g, gi);
  erase_dead(g, s1);
  free(sec);
  split_free(&a);
  split_free(&b);
  if (!ox_step_commit(c)) return 0;
  count(c);
  return 1;
}

int ox_splitcat_merge_splits_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxPat *first = ox_pat_torch_split(p, ox_pat_kwarg(p, "first_split_input"), ox_pat_kwarg(p, "first_split_sections"),
                                    NULL);
  OxPat *gi = ox_pat_getitem(p, first, ox_pat_ignored(p), 1);
  OxPat *next = ox_pat_torch_split(p, gi, ox_pat_kwarg(p, "next_split_sections"), NULL);
  OxPatEntry es[] = {{"merge_splits", next, pre_level, h_merge_splits, NULL}};
  return run_entries(c, p, es, 1);
}

/* ------------------------------------------------------------------ cats over one split */

/* The cat's inputs as getitem indices of one split; false with a reason otherwise. */
typedef struct CatRun {
  OxNodeId split;
  int64_t *idx;
  uint32_t n;
} CatRun;

static bool cat_indices(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m, const Cat *ct, CatRun *r) {
  OxGraph *g = c->g;
  memset(r, 0, sizeof *r);
  r->idx = ox_xcalloc(ct->tensors->n, sizeof *r->idx);
  for (uint32_t i = 0; i < ct->tensors->n; i++) {
    const OxValue *v = &ct->tensors->u.items[i];
    OxNodeId par;
    int64_t k;
    if (v->kind != OX_V_NODE || !getitem_of(g, v->u.node, &par, &k) ||
        (opof(g, par) != OX_OPID_SPLIT && opof(g, par) != OX_OPID_SPLIT_WITH_SIZES)) {
      rejectf(c, e, m, OX_REASON_OTHER, "not every cat input is a getitem of a split", NULL);
      free(r->idx);
      return false;
    }
    if (r->split && par != r->split) { /* all inputs from the same split (#147784) */
      rejectf(c, e, m, OX_REASON_OTHER, "cat inputs come from different splits", NULL);
      free(r->idx);
      return false;
    }
    r->split = par;
    r->idx[r->n++] = k;
  }
  return true;
}

static bool consecutive(const int64_t *idx, uint32_t n) {
  for (uint32_t i = 1; i < n; i++)
    if (idx[i] != idx[i - 1] + 1) return false;
  return true;
}

static const char *idx_text(const int64_t *idx, uint32_t n, char *buf, size_t cap) {
  size_t k = 0;
  buf[0] = 0;
  for (uint32_t i = 0; i < n && k + 24 < cap; i++) k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "," : "[", (long long)idx[i]);
  if (k + 2 < cap) snprintf(buf + k, cap - k, "]");
  return buf;
}

/* shared guards of merge_getitem_cat and mutate_cat: split dim == cat dim, sorted consecutive */
static bool cat_of_split_guards(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m, Cat *ct, CatRun *run,
                                Split *sp) {
  OxGraph *g = c->g;
  char why[200];
  if (!cat_load(g, m->anchor, ct, why, sizeof why) || ct->stack) {
    if (!ct->stack) reject_load(c, e, m, why);
    return false;
  }
  if (!cat_indices(c, e, m, ct, run)) return false;
  if (!split_load(g, run->split, sp, why, sizeof why)) {
    reject_load(c, e, m, why);
    free(run->idx);
    return false;
  }
  if (sp->dim != ct->dim) {
    char a[16], b[16];
    rejectf(c, e, m, OX_REASON_DIM_MISMATCH, "cat", itoa_buf(a, sizeof a, ct->dim), "split", itoa_buf(b, sizeof b, sp->dim),
            NULL);
  } else if (!consecutive(run->idx, run->n)) {
    char b[256];
    rejectf(c, e, m, OX_REASON_NOT_CONSECUTIVE, idx_text(run->idx, run->n, b, sizeof b), NULL);
  } else {
    return true;
  }
  free(run->idx);
  split_free(sp);
  return false;
}

/* Replaces split sp by a new split whose sections [a..b] are merged into one; re-points the
 * other getitems; returns the new split. The getitems a..b are left to the caller. */
static OxNodeId merge_sections(OxGraph *g, Split *sp, int64_t a, int64_t b) {
  uint32_t nn = sp->n - (uint32_t)(b - a);
  int64_t *sec = ox_xcalloc(nn, sizeof *sec);
  uint32_t j = 0;
  for (int64_t i = 0; i < (int64_t)sp->n; i++) {
    if (i > a && i <= b) sec[j - 1] += sp->sec[i];
    else sec[j++] = sp->sec[i];
  }
  OxNodeId ns = new_split(g, sp->node, sp->node, sp->input, sec, nn, sp->dim);
  free(sec);
  uint32_t nu = g->nodes[sp->node].n_users;
  OxNodeId *users = ox_xrealloc(NULL, (nu + 1) * sizeof *users);
  memcpy(users, g->nodes[sp->node].users, nu * sizeof *users);
  OxNodeId after = ns;
  for (uint32_t u = 0; u < nu; u++) {
    OxNodeId par;
    int64_t i;
    if (!getitem_of(g, users[u], &par, &i) || (i >= a && i <= b)) continue;
    after = repoint_getitem(g, users[u], after, ns, i < a ? i : i - (b - a));
  }
  free(users);
  return ns;
}

/* A cat of a run of one split's getitems, rewritten: begin the step, remembering the getitems
 * (they die with the cat)... */
static OxNodeId *cat_run_begin(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m, const Cat *ct,
                               const CatRun *run) {
  OxNodeId *olds = ox_xcalloc(run->n, sizeof *olds);
  for (uint32_t i = 0; i < run->n; i++) olds[i] = ct->tensors->u.items[i].u.node;
  ox_pat_step_begin(c, e, m);
  return olds;
}

/* ...then, once the cat's users have their replacement, erase what is dead and commit. */
static int cat_run_commit(OxPassCtx *c, OxNodeId *olds, CatRun *run, Split *sp) {
  for (uint32_t i = 0; i < run->n; i++) erase_dead(c->g, olds[i]);
  erase_dead(c->g, sp->node);
  free(olds);
  free(run->idx);
  split_free(sp);
  if (!ox_step_commit(c)) return 0;
  count(c);
  return 1;
}

static int h_merge_getitem_cat(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Cat ct;
  CatRun run;
  Split sp;
  if (!cat_of_split_guards(c, e, m, &ct, &run, &sp)) return 0;
  for (uint32_t i = 0; i < ct.tensors->n; i++) {
    OxNodeId gi = ct.tensors->u.items[i].u.node;
    if (g->nodes[gi].n_users != 1) {
      char b[16];
      rejectf(c, e, m, OX_REASON_MULTIPLE_USERS, nm(g, gi), itoa_buf(b, sizeof b, g->nodes[gi].n_users), "1", NULL);
      free(run.idx);
      split_free(&sp);
      return 0;
    }
  }
  /* the same getitem twice in a cat is not consecutive; checked above */
  int64_t a = run.idx[0], b = run.idx[run.n - 1];
  OxNodeId *olds = cat_run_begin(c, e, m, &ct, &run);
  OxNodeId ns = merge_sections(g, &sp, a, b);
  OxNodeId gi = new_getitem_after(g, ns, ns, a);
  replace_node(g, m->anchor, gi);
  return cat_run_commit(c, olds, &run, &sp);
}

int ox_splitcat_merge_getitem_cat_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OxPatEntry es[] = {{"merge_getitem_cat", catlike(p, OPS_CAT, 1, getitem_split(p)), pre_level, h_merge_getitem_cat, NULL}};
  return run_entries(c, p, es, 1);
}

static int h_mutate_cat(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Cat ct;
  CatRun run;
  Split sp;
  if (!cat_of_split_guards(c, e, m, &ct, &run, &sp)) return 0;
  int64_t a = run.idx[0], b = run.idx[run.n - 1];
  OxNodeId *olds = cat_run_begin(c, e, m, &ct, &run);
  if (a == 0 && b == (int64_t)sp.n - 1) {
    replace_node(g, m->anchor, sp.input); /* the cat of every section is the input */
  } else {
    OxNodeId sl = new_slice(g, m->anchor, m->anchor, sp.input, sp.dim, sp.start[a], sp.start[b + 1]);
    replace_node(g, m->anchor, sl);
  }
  return cat_run_commit(c, olds, &run, &sp);
}

int ox_splitcat_mutate_cat_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OxPatEntry es[] = {{"mutate_cat_node", catlike(p, OPS_CAT, 1, getitem_split(p)), pre_level, h_mutate_cat, NULL}};
  return run_entries(c, p, es, 1);
}

/* ------------------------------------------------------------------ split_cat_pass: merge_split_squeeze */

static int h_merge_split_squeeze(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  OxNodeId s = 0;
  for (uint32_t i = 0; i < m->n_nodes && !s; i++)
    if (opof(g, m->nodes[i]) == OX_OPID_SPLIT || opof(g, m->nodes[i]) == OX_OPID_SPLIT_WITH_SIZES) s = m->nodes[i];
  Split sp;
  char why[200];
  if (!s || !split_load(g, s, &sp, why, sizeof why)) {
    rejectf(c, e, m, OX_REASON_META_MISSING, s ? why : "no split", NULL);
    return 0;
  }
  int r = 0;
  for (uint32_t i = 0; i < sp.n; i++)
    if (sp.sec[i] != 1) {
      rejectf(c, e, m, OX_REASON_OTHER, "split sizes are not all 1", NULL);
      goto done;
    }
  /* every grand-child of the split is a squeeze of the split dim */
  const OxNode *sn = &g->nodes[s];
  for (uint32_t u = 0; u < sn->n_users; u++) {
    const OxNode *gi = &g->nodes[sn->users[u]];
    for (uint32_t v = 0; v < gi->n_users; v++) {
      OxNodeId q = gi->users[v];
      OxOpArgs oa;
      char err[160];
      if (opof(g, q) != OX_OPID_SQUEEZE || ox_op_normalize(g, &g->nodes[q], &oa, err, sizeof err) != 0) {
        rejectf(c, e, m, OX_REASON_OTHER, "a user of a split piece is not a squeeze", NULL);
        goto done;
      }
      const OxValue *d = oa.slot[1];
      if (d->kind == OX_V_LIST && d->n == 1) d = &d->u.items[0];
      if (d->kind != OX_V_INT || norm_dim(d->u.i, sp.in->rank) != sp.dim) {
        char a[16], b[16];
        rejectf(c, e, m, OX_REASON_DIM_MISMATCH, nm(g, q), d->kind == OX_V_INT ? itoa_buf(a, sizeof a, d->u.i) : "None",
                "split", itoa_buf(b, sizeof b, sp.dim), NULL);
        goto done;
      }
    }
  }
  ox_pat_step_begin(c, e, m);
  OxNodeId ub = mk_before(g, s, T_UNBIND, tup(g, 1, V(sp.input)), kw1(g, "dim", I(sp.dim)));
  OxNodeId after = ub;
  for (uint32_t i = 0; i < sp.n; i++) {
    OxNodeId gi = sp.item[i];
    if (!gi) continue;
    OxNodeId ng = new_getitem_after(g, after, ub, i);
    after = ng;
    while (g->nodes[gi].n_users) replace_node(g, g->nodes[gi].users[0], ng);
    ox_graph_erase(g, gi);
  }
  erase_dead(g, s);
  if (ox_step_commit(c)) {
    count(c);
    r = 1;
  }
done:
  split_free(&sp);
  return r;
}

/* ------------------------------------------------------------------ SplitCatSimplifier (spec 3.5) */

typedef struct Item {
  bool range;      /* a range of split indices, else a plain node */
  int64_t a, b;    /* index range (inclusive) */
  OxNodeId node;
} Item;

typedef struct UserIn {
  OxNodeId user;
  bool catlike;
  Cat ct;
  Item *items;
  uint32_t n;
} UserIn;

typedef struct ERange {
  int64_t lo, hi; /* element range [lo, hi) */
} ERange;

static int cmp_erange(const void *x, const void *y) {
  const ERange *a = x, *b = y;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  return a->hi < b->hi ? -1 : a->hi > b->hi;
}

static bool is_getitem_of(const OxGraph *g, OxNodeId id, OxNodeId split, int64_t *k) {
  OxNodeId par;
  return getitem_of(g, id, &par, k) && par == split;
}

static void users_free(UserIn *us, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) free(us[i].items);
  free(us);
}

/* The simplifier for split S (unbind when sp->unbind). anchored = the matched cat/stack.
 * Returns 1 if a step was applied. */
static int simplify(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m, Split *sp) {
  OxGraph *g = c->g;
  char why[200], b1[32], b2[32];
  /* 1. next users: distinct users of the split's getitems, in order */
  uint32_t nu = 0, capu = 8;
  UserIn *us = ox_xcalloc(capu, sizeof *us);
  const OxNode *sn = &g->nodes[sp->node];
  for (uint32_t u = 0; u < sn->n_users; u++) {
    const OxNode *gi = &g->nodes[sn->users[u]];
    for (uint32_t v = 0; v < gi->n_users; v++) {
      OxNodeId q = gi->users[v];
      bool dup = false;
      for (uint32_t j = 0; j < nu && !dup; j++) dup = us[j].user == q;
      if (dup) continue;
      if (ox_pat_is_mutating(g, q)) { /* a piece is mutated: never simplify across it */
        rejectf(c, e, m, OX_REASON_MUTATED, nm(g, gi->id), nm(g, q), NULL);
        users_free(us, nu);
        return 0;
      }
      if (nu == capu) {
        us = ox_xrealloc(us, capu * 2 * sizeof *us);
        memset(us + capu, 0, capu * sizeof *us);
        capu *= 2;
      }
      us[nu++].user = q;
    }
  }
  /* 2. per user: ranges of consecutive increasing indices, other inputs as nodes */
  uint32_t ner = 0, caper = 16;
  ERange *er = ox_xcalloc(caper, sizeof *er);
  for (uint32_t i = 0; i < nu; i++) {
    UserIn *ui = &us[i];
    OxOpId op = opof(g, ui->user);
    if ((op == OX_OPID_CAT || op == OX_OPID_STACK) && cat_load(g, ui->user, &ui->ct, why, sizeof why)) {
      ui->catlike = true;
      const OxValue *t = ui->ct.tensors;
      ui->items = ox_xcalloc(t->n, sizeof *ui->items);
      for (uint32_t j = 0; j < t->n; j++) {
        int64_t k;
        const OxValue *v = &t->u.items[j];
        if (v->kind == OX_V_NODE && is_getitem_of(g, v->u.node, sp->node, &k)) {
          if (ui->n && ui->items[ui->n - 1].range && ui->items[ui->n - 1].b + 1 == k) {
            ui->items[ui->n - 1].b = k;
            continue;
          }
          ui->items[ui->n++] = (Item){true, k, k, 0};
        } else if (v->kind == OX_V_NODE) {
          ui->items[ui->n++] = (Item){false, 0, 0, v->u.node};
        } else {
          rejectf(c, e, m, OX_REASON_OTHER, "a cat input is a constant", NULL);
          goto giveup;
        }
      }
    } else {
      /* non-cat users contribute single-index ranges */
      const OxNode *un = &g->nodes[ui->user];
      OxNodeId ins[64];
      uint32_t ni = ox_graph_inputs(g, ui->user, ins, 64);
      ui->items = ox_xcalloc(ni + 1, sizeof *ui->items);
      for (uint32_t j = 0; j < ni && j < 64; j++) {
        int64_t k;
        if (is_getitem_of(g, ins[j], sp->node, &k)) ui->items[ui->n++] = (Item){true, k, k, 0};
      }
      (void)un;
    }
    for (uint32_t j = 0; j < ui->n; j++) {
      if (!ui->items[j].range) continue;
      if (ner == caper) er = ox_xrealloc(er, (caper *= 2) * sizeof *er);
      er[ner++] = (ERange){sp->start[ui->items[j].a], sp->start[ui->items[j].b + 1]};
    }
  }
  /* 3. sort, dedupe, overlap check, fill gaps */
  qsort(er, ner, sizeof *er, cmp_erange);
  uint32_t k = 0;
  for (uint32_t i = 0; i < ner; i++)
    if (!k || er[i].lo != er[k - 1].lo || er[i].hi != er[k - 1].hi) er[k++] = er[i];
  ner = k;
  for (uint32_t i = 1; i < ner; i++)
    if (er[i].lo < er[i - 1].hi) {
      char t[96];
      snprintf(t, sizeof t, "[%lld, %lld) and [%lld, %lld)", (long long)er[i - 1].lo, (long long)er[i - 1].hi,
               (long long)er[i].lo, (long long)er[i].hi);
      rejectf(c, e, m, OX_REASON_OVERLAP, t, NULL);
      goto giveup;
    }
  {
    int64_t total = sp->start[sp->n];
    ERange *full = ox_xcalloc(2 * ner + 2, sizeof *full);
    uint32_t nf = 0;
    int64_t at = 0;
    for (uint32_t i = 0; i < ner; i++) {
      if (er[i].lo > at) full[nf++] = (ERange){at, er[i].lo};
      full[nf++] = er[i];
      at = er[i].hi;
    }
    if (at < total) full[nf++] = (ERange){at, total};
    free(er);
    er = full;
    ner = nf;
  }
  if (ner == sp->n) {
    rejectf(c, e, m, OX_REASON_NOTHING_TO_DO, nm(g, sp->node), "every section is used on its own", NULL);
    goto giveup;
  }
  if (sp->unbind && ner != 1) { /* UnbindCatRemover: the unbind must disappear entirely */
    snprintf(b1, sizeof b1, "%u", ner);
    rejectf(c, e, m, OX_REASON_NOT_ALL_USED, nm(g, sp->node), b1, itoa_buf(b2, sizeof b2, 1), NULL);
    goto giveup;
  }
  if (sp->unbind) {
    /* all outputs used, consecutive and ordered (#121228) */
    for (uint32_t i = 0; i < sp->n; i++)
      if (!sp->item[i]) {
        uint32_t used = 0;
        for (uint32_t j = 0; j < sp->n; j++) used += sp->item[j] != 0;
        snprintf(b1, sizeof b1, "%u", used);
        rejectf(c, e, m, OX_REASON_NOT_ALL_USED, nm(g, sp->node), b1, itoa_buf(b2, sizeof b2, sp->n), NULL);
        goto giveup;
      }
  }
  /* 4. transform guards: a range feeding a stack, or a cat on another dim, needs equal sections */
  for (uint32_t i = 0; i < nu && !sp->unbind; i++) {
    UserIn *ui = &us[i];
    if (!ui->catlike || (!ui->ct.stack && ui->ct.dim == sp->dim)) continue;
    for (uint32_t j = 0; j < ui->n; j++) {
      if (!ui->items[j].range) continue;
      for (int64_t q = ui->items[j].a + 1; q <= ui->items[j].b; q++)
        if (sp->sec[q] != sp->sec[ui->items[j].a]) {
          char t[48];
          snprintf(t, sizeof t, "%lld..%lld", (long long)ui->items[j].a, (long long)ui->items[j].b);
          rejectf(c, e, m, OX_REASON_SECTIONS_UNEQUAL, t, nm(g, sp->node), NULL);
          goto giveup;
        }
    }
  }
  {
    uint32_t removed_sections = sp->n - ner;
    ox_pat_step_begin(c, e, m);
    /* 5. the new split items */
    OxNodeId *items = ox_xcalloc(ner, sizeof *items);
    bool split_added = false;
    if (ner == 1) {
      items[0] = sp->input;
    } else {
      int64_t *sec = ox_xcalloc(ner, sizeof *sec);
      for (uint32_t i = 0; i < ner; i++) sec[i] = er[i].hi - er[i].lo;
      OxNodeId ns = new_split(g, sp->node, sp->node, sp->input, sec, ner, sp->dim);
      free(sec);
      OxNodeId after = ns;
      for (uint32_t i = 0; i < ner; i++) after = items[i] = new_getitem_after(g, after, ns, i);
      split_added = true;
    }
    uint32_t cats_added = 0, cats_removed = 0;
    /* 6. rebuild every user */
    for (uint32_t i = 0; i < nu; i++) {
      UserIn *ui = &us[i];
      OxNodeId user = ui->user;
      if (!ui->catlike) {
        for (uint32_t j = 0; j < ui->n; j++) {
          int64_t lo = sp->start[ui->items[j].a];
          uint32_t r = 0;
          while (r < ner && er[r].lo != lo) r++;
          OxNodeId old = sp->item[ui->items[j].a];
          if (old && r < ner) ox_graph_replace_input(g, user, old, items[r]);
        }
        continue;
      }
      int64_t cd = ui->ct.dim, sd = sp->dim;
      bool stack = ui->ct.stack;
      OxNodeId *args = ox_xcalloc(ui->n + 1, sizeof *args);
      uint32_t na = 0;
      OxNodeId *pend = ox_xcalloc(ui->n + 1, sizeof *pend); /* consecutive inputs to unsqueeze */
      uint32_t np = 0;
      for (uint32_t j = 0; j <= ui->n; j++) {
        bool flush = j == ui->n || ui->items[j].range || !(stack || (!sp->unbind && cd != sd));
        if (flush && np) {
          args[na++] = np == 1 ? new_call(g, user, user, "torch.unsqueeze", "aten.unsqueeze.default",
                                          tup(g, 2, V(pend[0]), I(cd)))
                               : new_cat(g, user, user, pend, np, cd, true);
          np = 0;
        }
        if (j == ui->n) break;
        Item *it = &ui->items[j];
        if (!it->range) {
          if (stack || (!sp->unbind && cd != sd)) pend[np++] = it->node;
          else args[na++] = it->node;
          continue;
        }
        int64_t lo = sp->start[it->a];
        uint32_t r = 0;
        while (r < ner && er[r].lo != lo) r++;
        OxNodeId v = items[r < ner ? r : 0];
        int64_t cnt = it->b - it->a + 1;
        if (sp->unbind) {
          if (sd != cd) v = new_call(g, user, user, "torch.movedim", "aten.movedim.int", tup(g, 3, V(v), I(sd), I(cd)));
          if (!stack)
            v = new_call(g, user, user, "torch.flatten", "aten.flatten.using_ints", tup(g, 3, V(v), I(cd), I(cd + 1)));
        } else if (stack || cd != sd) {
          int64_t sizes[2] = {cnt, -1};
          v = new_call(g, user, user, "torch.unflatten", "aten.unflatten.int", tup(g, 3, V(v), I(sd), ilist(g, sizes, 2)));
          if (sd != cd) v = new_call(g, user, user, "torch.movedim", "aten.movedim.int", tup(g, 3, V(v), I(sd), I(cd)));
        }
        args[na++] = v;
      }
      OxNodeId res;
      if (na > 1) {
        res = new_cat(g, user, user, args, na, cd, false);
        cats_added++;
      } else {
        res = args[0];
      }
      if (!stack && !sp->unbind && cd != sd)
        res = new_call(g, user, user, "torch.flatten", "aten.flatten.using_ints", tup(g, 3, V(res), I(cd), I(cd + 1)));
      ox_graph_replace_all_uses(g, user, res);
      if (erase_dead(g, user)) cats_removed++;
      free(args);
      free(pend);
    }
    /* 7. erase the old split and its getitems when unused */
    for (uint32_t i = 0; i < sp->n; i++)
      if (sp->item[i]) erase_dead(g, sp->item[i]);
    bool split_removed = false;
    {
      const OxNode *x = &g->nodes[sp->node];
      for (uint32_t u = 0; x->n_users && u < x->n_users;) {
        if (!erase_dead(g, x->users[u])) u++;
        x = &g->nodes[sp->node];
      }
      split_removed = erase_dead(g, sp->node);
    }
    free(items);
    free(er);
    users_free(us, nu);
    if (!ox_step_commit(c)) return 0;
    count(c);
    ox_counter_add(c, "scmerge_split_added", split_added ? 1 : 0);
    ox_counter_add(c, "scmerge_split_removed", split_removed ? 1 : 0);
    ox_counter_add(c, "scmerge_cat_added", cats_added);
    ox_counter_add(c, "scmerge_cat_removed", cats_removed);
    ox_counter_add(c, "scmerge_split_sections_removed", removed_sections);
    return 1;
  }
giveup:
  free(er);
  users_free(us, nu);
  return 0;
}

static int h_simplify_split_cat(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  OxNodeId s = 0;
  for (uint32_t i = 0; i < m->n_nodes && !s; i++) {
    OxOpId op = opof(g, m->nodes[i]);
    if (op == OX_OPID_SPLIT || op == OX_OPID_SPLIT_WITH_SIZES || op == OX_OPID_UNBIND) s = m->nodes[i];
  }
  Split sp;
  char why[200];
  if (!s || !split_load(g, s, &sp, why, sizeof why)) {
    rejectf(c, e, m, OX_REASON_META_MISSING, s ? why : "no split", NULL);
    return 0;
  }
  /* every cat/stack user needs meta */
  int r = simplify(c, e, m, &sp);
  split_free(&sp);
  return r;
}

int ox_splitcat_split_cat_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxOpId sq[] = {OX_OPID_SQUEEZE};
  OxPat *split = ox_pat_torch_split(p, ox_pat_kwarg(p, "split_input"), ox_pat_kwarg(p, "split_sizes"), NULL);
  OxPat *gi = ox_pat_getitem(p, split, ox_pat_ignored(p), 1);
  OxPat *sa[] = {gi, ox_pat_kwarg(p, "dim")};
  OxPat *squeeze = ox_pat_call(p, OX_PAT_FUNCTION | OX_PAT_METHOD, sq, 1, sa, 2);
  ox_pat_call_users(squeeze, OX_PAT_USERS_ANY);
  OxPatEntry es[] = {
    {"merge_split_squeeze", ox_pat_repeated(p, squeeze), pre_level, h_merge_split_squeeze, NULL},
    {"simplify_split_cat", catlike(p, OPS_CATSTACK, 2, getitem_split(p)), pre_level, h_simplify_split_cat, NULL},
  };
  return run_entries(c, p, es, 2);
}

int ox_splitcat_unbind_stack_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OxPatEntry es[] = {
    {"merge_unbind_stack", catlike(p, OPS_CATSTACK, 2, getitem_unbind(p)), pre_level, h_simplify_split_cat, NULL},
  };
  return run_entries(c, p, es, 1);
}

/* ------------------------------------------------------------------ merge_stack_tahn_unbind_pass */

static int h_merge_stack_tahn_unbind(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  OxNodeId th = m->anchor;
  OxNodeId st = g->nodes[th].args.u.items[0].u.node;
  Cat ct;
  CatRun run;
  Split sp;
  char why[200], b1[16], b2[16];
  if (!cat_load(g, st, &ct, why, sizeof why)) {
    reject_load(c, e, m, why);
    return 0;
  }
  if (g->nodes[th].n_users != 1 || opof(g, g->nodes[th].users[0]) != OX_OPID_UNBIND) {
    rejectf(c, e, m, OX_REASON_OTHER, "the tanh's only user is not an unbind", NULL);
    return 0;
  }
  OxNodeId ub = g->nodes[th].users[0];
  Split us;
  if (!split_load(g, ub, &us, why, sizeof why)) {
    reject_load(c, e, m, why);
    return 0;
  }
  int64_t ud = us.dim;
  split_free(&us);
  if (ud != ct.dim) { /* both normalized (#121227) */
    rejectf(c, e, m, OX_REASON_DIM_MISMATCH, "stack", itoa_buf(b1, sizeof b1, ct.dim), "unbind", itoa_buf(b2, sizeof b2, ud),
            NULL);
    return 0;
  }
  if (!cat_indices(c, e, m, &ct, &run)) return 0;
  if (!split_load(g, run.split, &sp, why, sizeof why)) {
    reject_load(c, e, m, why);
    free(run.idx);
    return 0;
  }
  int r = 0;
  char t[256];
  if (!consecutive(run.idx, run.n)) {
    rejectf(c, e, m, OX_REASON_NOT_CONSECUTIVE, idx_text(run.idx, run.n, t, sizeof t), NULL);
    goto out;
  }
  for (uint32_t i = 0; i < run.n; i++) {
    OxNodeId gi = ct.tensors->u.items[i].u.node;
    if (g->nodes[gi].n_users != 1) {
      rejectf(c, e, m, OX_REASON_MULTIPLE_USERS, nm(g, gi), itoa_buf(b1, sizeof b1, g->nodes[gi].n_users), "1", NULL);
      goto out;
    }
  }
  {
    int64_t a = run.idx[0], b = run.idx[run.n - 1];
    OxNodeId *olds = ox_xcalloc(run.n, sizeof *olds);
    for (uint32_t i = 0; i < run.n; i++) olds[i] = ct.tensors->u.items[i].u.node;
    int64_t *sub = ox_xcalloc(run.n, sizeof *sub);
    for (uint32_t i = 0; i < run.n; i++) sub[i] = sp.sec[a + i];
    ox_pat_step_begin(c, e, m);
    OxNodeId ns = merge_sections(g, &sp, a, b);
    OxNodeId gi = new_getitem_after(g, ns, ns, a);
    OxNodeId nt = mk_before(g, th, g->nodes[th].target, tup(g, 1, V(gi)), ox_value_none());
    OxNodeId nsp = mk_before(g, th, T_SPLIT, tup(g, 2, V(nt), ilist(g, sub, run.n)), kw1(g, "dim", I(sp.dim)));
    uint32_t nu = g->nodes[ub].n_users;
    OxNodeId *users = ox_xrealloc(NULL, (nu + 1) * sizeof *users);
    memcpy(users, g->nodes[ub].users, nu * sizeof *users);
    OxNodeId after = nsp;
    for (uint32_t u = 0; u < nu; u++) {
      OxNodeId par;
      int64_t k;
      if (getitem_of(g, users[u], &par, &k)) after = repoint_getitem(g, users[u], after, nsp, k);
    }
    free(users);
    erase_dead(g, ub);
    erase_dead(g, th);
    erase_dead(g, st);
    for (uint32_t i = 0; i < run.n; i++) erase_dead(g, olds[i]);
    erase_dead(g, sp.node);
    free(olds);
    free(sub);
    if (!ox_step_commit(c)) goto out;
    count(c);
    r = 1;
  }
out:
  free(run.idx);
  split_free(&sp);
  return r;
}

int ox_splitcat_merge_stack_tahn_unbind_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxOpId tanh[] = {OX_OPID_TANH};
  OxPat *stack = catlike(p, OPS_STACK, 1, getitem_split(p));
  ox_pat_call_users(stack, 1);
  OxPat *a[] = {stack};
  OxPat *t = ox_pat_call(p, OX_PAT_FUNCTION | OX_PAT_METHOD, tanh, 1, a, 1);
  OxPatEntry es[] = {{"merge_stack_tahn_unbind", t, pre_level, h_merge_stack_tahn_unbind, NULL}};
  return run_entries(c, p, es, 1);
}

/* ------------------------------------------------------------------ *_to_slices / *_to_view / *_to_cats */

/* Mode of the shared run-conversion routine. */
enum { TS_SPLIT_CAT = 0, TS_UNBIND_CAT, TS_SPLIT_STACK, TS_UNBIND_STACK };

/* Walks the cat/stack inputs, grouping maximal runs of getitems of the same split/unbind.
 * A run that is every output in order becomes the parent's input; otherwise consecutive
 * sub-runs of length >= threshold become one slice; shorter ones stay. Each converted run is
 * then shaped into exactly its contribution to the result:
 *   split + cat (same dim): the slice itself;
 *   unbind + cat: movedim(unbind dim -> cat dim), flatten(cat dim, cat dim + 1);
 *   split + stack: unflatten(split dim, (len, -1)), movedim(split dim -> stack dim);
 *   unbind + stack: movedim(unbind dim -> stack dim);
 * inputs left as they are join a stack through one stack(dim) per consecutive group, and the
 * result is one cat along the cat/stack dim. */
static int h_to_slices(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  int mode = (int)(intptr_t)e->data;
  bool want_unbind = mode == TS_UNBIND_CAT || mode == TS_UNBIND_STACK;
  bool stack = mode == TS_SPLIT_STACK || mode == TS_UNBIND_STACK;
  Cat ct;
  char why[200];
  if (!cat_load(g, m->anchor, &ct, why, sizeof why)) {
    reject_load(c, e, m, why);
    return 0;
  }
  int64_t threshold = c->opt ? c->opt->threshold_to_cat : 10;
  if (threshold < 1) threshold = 1;
  OxNodeId anchor = m->anchor;
  int64_t cd = ct.dim;
  uint32_t n = ct.tensors->n;
  OxNodeId *in = ox_xcalloc(n + 1, sizeof *in);
  for (uint32_t i = 0; i < n; i++) {
    if (ct.tensors->u.items[i].kind != OX_V_NODE) {
      free(in);
      return 0;
    }
    in[i] = ct.tensors->u.items[i].u.node;
  }
  OxNodeId *out = ox_xcalloc(2 * n + 2, sizeof *out);
  OxNodeId *pend = ox_xcalloc(n + 1, sizeof *pend);
  uint32_t no = 0, np = 0;
  bool opened = false;
#define TS_OPEN()                  \
  do {                             \
    if (!opened) {                 \
      ox_pat_step_begin(c, e, m);  \
      opened = true;               \
    }                              \
  } while (0)
#define TS_FLUSH()                                                                                       \
  do {                                                                                                   \
    if (np && opened && stack)                                                                           \
      out[no++] = np == 1 ? new_call(g, anchor, anchor, "torch.unsqueeze", NULL, tup(g, 2, V(pend[0]), I(cd))) \
                          : new_cat(g, anchor, anchor, pend, np, cd, true);                              \
    else                                                                                                 \
      for (uint32_t z = 0; z < np; z++) out[no++] = pend[z];                                             \
    np = 0;                                                                                              \
  } while (0)
  /* first pass: is there anything to convert? (no step is opened for nothing) */
  uint32_t i = 0;
  while (i < n) {
    OxNodeId par = 0, p2;
    int64_t k, k2;
    bool gi = getitem_of(g, in[i], &par, &k);
    OxOpId pop = gi ? opof(g, par) : OX_OPID_NONE;
    bool ok_parent = gi && (want_unbind ? pop == OX_OPID_UNBIND : (pop == OX_OPID_SPLIT || pop == OX_OPID_SPLIT_WITH_SIZES));
    if (!ok_parent) {
      pend[np++] = in[i++];
      continue;
    }
    uint32_t j = i + 1;
    while (j < n && getitem_of(g, in[j], &p2, &k2) && p2 == par) j++;
    Split sp;
    if (!split_load(g, par, &sp, why, sizeof why) || (mode == TS_SPLIT_CAT && sp.dim != cd)) {
      if (sp.n) split_free(&sp);
      for (uint32_t q = i; q < j; q++) pend[np++] = in[q];
      i = j;
      continue;
    }
    bool whole = j - i == sp.n;
    for (uint32_t q = i; whole && q < j; q++) {
      getitem_of(g, in[q], &p2, &k2);
      whole = k2 == (int64_t)(q - i);
    }
    uint32_t q = i;
    while (q < j) {
      getitem_of(g, in[q], &p2, &k2);
      uint32_t r = q + 1;
      int64_t kr;
      while (!whole && r < j && getitem_of(g, in[r], &p2, &kr) && kr == k2 + (int64_t)(r - q)) r++;
      if (whole) r = j;
      if (whole || (int64_t)(r - q) >= threshold) {
        TS_OPEN();
        TS_FLUSH();
        int64_t lo = sp.start[k2], hi = sp.start[k2 + (int64_t)(r - q)];
        OxNodeId v = whole ? sp.input : new_slice(g, anchor, anchor, sp.input, sp.dim, lo, hi);
        if (mode == TS_UNBIND_CAT) {
          if (sp.dim != cd) v = new_call(g, anchor, anchor, "torch.movedim", NULL, tup(g, 3, V(v), I(sp.dim), I(cd)));
          v = new_call(g, anchor, anchor, "torch.flatten", NULL, tup(g, 3, V(v), I(cd), I(cd + 1)));
        } else if (mode == TS_SPLIT_STACK) {
          int64_t sizes[2] = {(int64_t)(r - q), -1};
          v = new_call(g, anchor, anchor, "torch.unflatten", NULL, tup(g, 3, V(v), I(sp.dim), ilist(g, sizes, 2)));
          if (sp.dim != cd) v = new_call(g, anchor, anchor, "torch.movedim", NULL, tup(g, 3, V(v), I(sp.dim), I(cd)));
        } else if (mode == TS_UNBIND_STACK) {
          if (sp.dim != cd) v = new_call(g, anchor, anchor, "torch.movedim", NULL, tup(g, 3, V(v), I(sp.dim), I(cd)));
        }
        out[no++] = v;
      } else {
        for (uint32_t s2 = q; s2 < r; s2++) pend[np++] = in[s2];
      }
      q = r;
    }
    split_free(&sp);
    i = j;
  }
  if (!opened) {
    free(in);
    free(out);
    free(pend);
    return 0;
  }
  TS_FLUSH();
#undef TS_OPEN
#undef TS_FLUSH
  OxNodeId res = no == 1 ? out[0] : new_cat(g, anchor, anchor, out, no, cd, false);
  replace_node(g, anchor, res);
  /* getitems and parents that became dead */
  for (uint32_t q = 0; q < n; q++) {
    OxNodeId par;
    int64_t k;
    if (getitem_of(g, in[q], &par, &k) && erase_dead(g, in[q])) {
      const OxNode *pn = &g->nodes[par];
      bool dead = true;
      for (uint32_t u = 0; u < pn->n_users && dead; u++) dead = g->nodes[pn->users[u]].n_users == 0;
      if (dead) {
        while (g->nodes[par].n_users) ox_graph_erase(g, g->nodes[par].users[0]);
        ox_graph_erase(g, par);
      }
    }
  }
  free(in);
  free(out);
  free(pend);
  if (!ox_step_commit(c)) return 0;
  count(c);
  return 1;
}

int ox_splitcat_split_cat_to_slices_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxPatEntry es[] = {
    {"split_cat_to_slices", varargs(p, OX_PAT_FUNCTION, OPS_CAT, 1), pre_level, h_to_slices, (void *)(intptr_t)TS_SPLIT_CAT},
  };
  return run_entries(c, p, es, 1);
}

int ox_splitcat_unbind_cat_to_view_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OxPatEntry es[] = {
    {"unbind_cat_to_view", catlike(p, OPS_CAT, 1, getitem_unbind(p)), pre_level, h_to_slices,
     (void *)(intptr_t)TS_UNBIND_CAT},
  };
  return run_entries(c, p, es, 1);
}

int ox_splitcat_split_stack_to_cats_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OxPatEntry es[] = {
    {"split_stack_to_cats", catlike(p, OPS_STACK, 1, getitem_split(p)), pre_level, h_to_slices,
     (void *)(intptr_t)TS_SPLIT_STACK},
  };
  return run_entries(c, p, es, 1);
}

int ox_splitcat_unbind_stack_to_slices_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OxPatEntry es[] = {
    {"unbind_stack_to_slices", catlike(p, OPS_STACK, 1, getitem_unbind(p)), pre_level, h_to_slices,
     (void *)(intptr_t)TS_UNBIND_STACK},
  };
  return run_entries(c, p, es, 1);
}

/* ------------------------------------------------------------------ move_reshape_out_of_split_stack_pass */

/* A stack input that is reshape(getitem(S, k), R): its split, index and the two shapes. */
typedef struct RsIn {
  OxNodeId split, piece;
  int64_t k;
  const OxTensorMeta *R, *P;
} RsIn;

static bool same_dims(const OxTensorMeta *a, const OxTensorMeta *b) {
  if (a->rank != b->rank) return false;
  for (int32_t d = 0; d < a->rank; d++)
    if (a->shape[d].v != b->shape[d].v) return false;
  return true;
}

static bool reshaped_piece(const OxGraph *g, const OxValue *v, RsIn *o) {
  memset(o, 0, sizeof *o);
  if (v->kind != OX_V_NODE || opof(g, v->u.node) != OX_OPID_RESHAPE) return false;
  const OxNode *rs = &g->nodes[v->u.node];
  if (!rs->args.n || rs->args.u.items[0].kind != OX_V_NODE) return false;
  OxNodeId pc = rs->args.u.items[0].u.node;
  if (!getitem_of(g, pc, &o->split, &o->k)) return false;
  OxOpId sop = opof(g, o->split);
  if (sop != OX_OPID_SPLIT && sop != OX_OPID_SPLIT_WITH_SIZES) return false;
  o->piece = pc;
  o->R = tmeta(g, v->u.node);
  o->P = tmeta(g, pc);
  return o->R && o->P;
}

/* stack over reshape(getitem(split)) inputs. A run of consecutive inputs that reshape
 * consecutive equal pieces p_k..p_{k+L-1} of one split to the same shape R becomes one view
 * of the split input when it is the whole split in order or at least threshold_to_cat long
 * (upstream's construct_cat_args rule):
 *   movedim(reshape(movedim(unflatten(x[start:end along sd], sd, (L, sec)), sd, 0), [L] + R), 0, cs)
 * (out[i] = reshape(p_{k+i}, R): the pieces are consecutive blocks of x along sd). The other
 * inputs, in order, are stacked in groups on cs and everything is joined by one cat on cs, as
 * upstream does for a mixed stack. Upstream views the split input with permute + view, which
 * equals the above only for sections of size 1; this form is right for any section size. */
static int h_move_reshape(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Cat ct;
  char why[200];
  if (!cat_load(g, m->anchor, &ct, why, sizeof why)) {
    reject_load(c, e, m, why);
    return 0;
  }
  const OxValue *t = ct.tensors;
  uint32_t n = t->n;
  RsIn *in = ox_xcalloc(n, sizeof *in);
  bool *is_rs = ox_xcalloc(n, sizeof *is_rs);
  uint32_t *run_len = ox_xcalloc(n, sizeof *run_len); /* at the first input of a converting run */
  Split *sps = ox_xcalloc(n, sizeof *sps);
  int r = 0, threshold = c->opt ? c->opt->threshold_to_cat : 10;
  uint32_t converting = 0, longest = 0;
  for (uint32_t i = 0; i < n; i++) is_rs[i] = reshaped_piece(g, &t->u.items[i], &in[i]);
  for (uint32_t i = 0; i < n;) {
    if (!is_rs[i]) {
      i++;
      continue;
    }
    uint32_t j = i + 1;
    while (j < n && is_rs[j] && in[j].split == in[i].split && in[j].k == in[j - 1].k + 1 &&
           same_dims(in[j].R, in[i].R) && same_dims(in[j].P, in[i].P))
      j++;
    uint32_t L = j - i;
    if (L > longest) longest = L;
    if (!split_load(g, in[i].split, &sps[i], why, sizeof why)) {
      i = j;
      continue;
    }
    bool whole = in[i].k == 0 && L == sps[i].n;
    if (whole || (int64_t)L >= threshold) {
      run_len[i] = L;
      converting++;
    } else {
      split_free(&sps[i]);
    }
    i = j;
  }
  if (!converting) {
    char b[16];
    whyf(why, sizeof why,
             "no run of reshaped split pieces is a whole split in order or reaches threshold_to_cat %d (longest run %s)",
             threshold, itoa_buf(b, sizeof b, longest));
    rejectf(c, e, m, OX_REASON_OTHER, why, NULL);
    goto out;
  }
  {
    ox_pat_step_begin(c, e, m);
    OxNodeId a = m->anchor;
    int64_t cs = ct.dim;
    OxNodeId *parts = ox_xcalloc(n, sizeof *parts), *others = ox_xcalloc(n, sizeof *others);
    uint32_t np = 0, no = 0;
    for (uint32_t i = 0; i < n;) {
      if (!run_len[i]) {
        others[no++] = t->u.items[i].u.node;
        i++;
        continue;
      }
      if (no) {
        parts[np++] = new_cat(g, a, a, others, no, cs, true);
        no = 0;
      }
      uint32_t L = run_len[i];
      Split *sp = &sps[i];
      int64_t k0 = in[i].k, sec = sp->sec[k0];
      OxNodeId base = sp->input;
      if (!(k0 == 0 && L == sp->n)) base = new_slice(g, a, a, base, sp->dim, sp->start[k0], sp->start[k0 + L]);
      int64_t sizes[2] = {(int64_t)L, sec};
      OxNodeId u = new_call(g, a, a, "torch.unflatten", NULL, tup(g, 3, V(base), I(sp->dim), ilist(g, sizes, 2)));
      if (sp->dim != 0) u = new_call(g, a, a, "torch.movedim", NULL, tup(g, 3, V(u), I(sp->dim), I(0)));
      const OxTensorMeta *R = in[i].R;
      int64_t shape[OX_SHAPE_MAX_RANK + 1];
      shape[0] = L;
      for (int32_t d = 0; d < R->rank && d < OX_SHAPE_MAX_RANK; d++) shape[d + 1] = R->shape[d].v;
      OxNodeId rs = new_call(g, a, a, "torch.reshape", NULL, tup(g, 2, V(u), ilist(g, shape, (uint32_t)R->rank + 1)));
      if (cs != 0) rs = new_call(g, a, a, "torch.movedim", NULL, tup(g, 3, V(rs), I(0), I(cs)));
      parts[np++] = rs;
      i += L;
    }
    if (no) parts[np++] = new_cat(g, a, a, others, no, cs, true);
    OxNodeId res = np == 1 ? parts[0] : new_cat(g, a, a, parts, np, cs, false);
    OxNodeId *olds = ox_xcalloc(n, sizeof *olds), *pieces = ox_xcalloc(n, sizeof *pieces);
    for (uint32_t i = 0; i < n; i++) {
      olds[i] = t->u.items[i].u.node;
      pieces[i] = is_rs[i] ? in[i].piece : 0;
    }
    replace_node(g, a, res);
    for (uint32_t i = 0; i < n; i++) {
      erase_dead(g, olds[i]);
      if (pieces[i] && erase_dead(g, pieces[i])) erase_dead(g, in[i].split);
    }
    free(olds);
    free(pieces);
    free(parts);
    free(others);
    if (ox_step_commit(c)) {
      count(c);
      r = 1;
    }
  }
out:
  for (uint32_t i = 0; i < n; i++) split_free(&sps[i]);
  free(sps);
  free(in);
  free(is_rs);
  free(run_len);
  return r;
}

int ox_splitcat_move_reshape_out_of_split_stack_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxOpId rs[] = {OX_OPID_RESHAPE};
  OxPat *split = ox_pat_torch_split(p, ox_pat_ignored(p), ox_pat_kwarg(p, "split_sections"), NULL);
  OxPat *gi = ox_pat_getitem(p, split, ox_pat_ignored(p), OX_PAT_USERS_ANY);
  OxPat *ra[] = {gi, ox_pat_arg(p)};
  OxPat *reshape = ox_pat_call(p, OX_PAT_FUNCTION | OX_PAT_METHOD, rs, 1, ra, 2);
  ox_pat_call_users(reshape, OX_PAT_USERS_ANY);
  OxPatEntry es[] = {
    {"move_reshape_out_of_split_stack", catlike(p, OPS_STACK, 1, ox_pat_list(p, reshape, true)), pre_level,
     h_move_reshape, NULL},
  };
  return run_entries(c, p, es, 1);
}

/* ------------------------------------------------------------------ post-grad: normalization_aten_pass */

static int h_norm_aten_split(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Split sp;
  char why[200];
  if (!split_load(g, m->anchor, &sp, why, sizeof why)) {
    reject_load(c, e, m, why);
    return 0;
  }
  OxValue args = tup(g, 3, V(sp.input), ilist(g, sp.sec, sp.n), I(sp.dim));
  int r;
  if (opof(g, m->anchor) == OX_OPID_SPLIT_WITH_SIZES &&
      strstr(g->nodes[m->anchor].target, "aten.split_with_sizes.default")) {
    /* already split_with_sizes: rewrite its arguments in place (normalized dim, positional) */
    ox_pat_step_begin(c, e, m);
    ox_graph_set_args(g, m->anchor, args);
    ox_graph_set_kwargs(g, m->anchor, ox_value_none());
    r = ox_step_commit(c) ? 1 : 0;
  } else {
    r = normalize_to(c, e, m, aten_target(g, m->anchor, "aten.split_with_sizes.default"), args, ox_value_none(), false);
  }
  if (r) count(c);
  split_free(&sp);
  return r;
}

static int h_norm_aten_cat(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Cat ct;
  char why[200];
  /* upstream registers aten.cat.default: the overload packet aten.cat that its (and our)
   * post-grad batch fusions emit is never matched, so it is neither rewritten nor counted */
  if (overload_packet(g, m->anchor)) return 0;
  if (!cat_load(g, m->anchor, &ct, why, sizeof why) || ct.stack) {
    if (!ct.stack) reject_load(c, e, m, why);
    return 0;
  }
  OxValue list = ox_graph_value_copy(g, ct.tensors);
  list.kind = OX_V_LIST;
  OxValue args = tup(g, 2, list, I(ct.dim));
  int r;
  if (strstr(g->nodes[m->anchor].target, "aten.cat.default")) {
    ox_pat_step_begin(c, e, m);
    ox_graph_set_args(g, m->anchor, args);
    ox_graph_set_kwargs(g, m->anchor, ox_value_none());
    r = ox_step_commit(c) ? 1 : 0;
  } else {
    r = normalize_to(c, e, m, aten_target(g, m->anchor, "aten.cat.default"), args, ox_value_none(), false);
  }
  if (r) count(c);
  return r;
}

int ox_splitcat_normalization_aten_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxPatEntry es[] = {
    {"normalize_split_default_aten", varargs(p, OX_PAT_FUNCTION, OPS_SPLIT, 2), post_level, h_norm_aten_split, NULL},
    {"normalize_cat_default_aten", varargs(p, OX_PAT_FUNCTION, OPS_CAT, 1), post_level, h_norm_aten_cat, NULL},
  };
  return run_entries(c, p, es, 2);
}

/* ------------------------------------------------------------------ post-grad: split_cat_aten_pass */

static int h_split_cat_aten(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Cat ct;
  char why[200], b1[16], b2[16];
  if (!cat_load(g, m->anchor, &ct, why, sizeof why)) {
    reject_load(c, e, m, why);
    return 0;
  }
  int64_t threshold = c->opt ? c->opt->threshold_to_cat : 10;
  const OxValue *t = ct.tensors;
  if ((int64_t)t->n < threshold) {
    rejectf(c, e, m, OX_REASON_SET_TOO_SMALL, itoa_buf(b1, sizeof b1, t->n), itoa_buf(b2, sizeof b2, threshold), NULL);
    return 0;
  }
  OxValue *out = ox_xcalloc(t->n, sizeof *out);
  uint32_t no = 0;
  bool changed = false, opened = false;
  uint32_t i = 0;
  OxNodeId *parents = ox_xcalloc(t->n, sizeof *parents);
  uint32_t npar = 0;
  while (i < t->n) {
    OxNodeId par, p2;
    int64_t k, k2;
    const OxValue *v = &t->u.items[i];
    if (v->kind != OX_V_NODE || !getitem_of(g, v->u.node, &par, &k) || opof(g, par) != OX_OPID_SPLIT_WITH_SIZES) {
      out[no++] = *v;
      i++;
      continue;
    }
    Split sp;
    if (!split_load(g, par, &sp, why, sizeof why)) {
      out[no++] = *v;
      i++;
      continue;
    }
    if (sp.dim != ct.dim) { /* a parent on another dim stops the scan */
      split_free(&sp);
      for (; i < t->n; i++) out[no++] = t->u.items[i];
      break;
    }
    /* a run: consecutive indices of the same parent (never mixing splits, #147784) */
    uint32_t j = i + 1;
    while (j < t->n && t->u.items[j].kind == OX_V_NODE && getitem_of(g, t->u.items[j].u.node, &p2, &k2) && p2 == par &&
           k2 == k + (int64_t)(j - i))
      j++;
    uint32_t len = j - i;
    bool whole = k == 0 && len == sp.n;
    if (whole || len >= (uint32_t)threshold) {
      if (!opened) {
        ox_pat_step_begin(c, e, m);
        opened = true;
      }
      OxNodeId rep = whole ? sp.input : new_slice(g, m->anchor, m->anchor, sp.input, sp.dim, sp.start[k], sp.start[k + len]);
      out[no++] = V(rep);
      parents[npar++] = par;
      changed = true;
    } else {
      for (uint32_t q = i; q < j; q++) out[no++] = t->u.items[q];
    }
    split_free(&sp);
    i = j;
  }
  int r = 0;
  if (changed) {
    OxNodeId *olds = ox_xcalloc(t->n, sizeof *olds);
    uint32_t nold = 0;
    for (uint32_t q = 0; q < t->n; q++)
      if (t->u.items[q].kind == OX_V_NODE) olds[nold++] = t->u.items[q].u.node;
    OxValue list = ox_graph_value_seq(g, OX_V_LIST, out, no);
    OxNodeId nc = mk_before(g, m->anchor, g->nodes[m->anchor].target, tup(g, 2, list, I(ct.dim)), ox_value_none());
    replace_node(g, m->anchor, nc);
    for (uint32_t q = 0; q < nold; q++) {
      OxNodeId par;
      int64_t k;
      if (getitem_of(g, olds[q], &par, &k)) erase_dead(g, olds[q]);
    }
    for (uint32_t q = 0; q < npar; q++) {
      /* unused getitems of a consumed split go with it */
      const OxNode *pn = &g->nodes[parents[q]];
      if (pn->erased) continue;
      bool dead = true;
      for (uint32_t u = 0; u < pn->n_users && dead; u++) dead = g->nodes[pn->users[u]].n_users == 0;
      if (dead) {
        while (g->nodes[parents[q]].n_users) ox_graph_erase(g, g->nodes[parents[q]].users[0]);
        ox_graph_erase(g, parents[q]);
      }
    }
    free(olds);
    if (ox_step_commit(c)) {
      count(c);
      r = 1;
    }
  } else if (opened) {
    ox_step_abort(c);
  }
  free(out);
  free(parents);
  return r;
}

int ox_splitcat_split_cat_aten_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxPatEntry es[] = {
    {"merge_split_cat_aten", varargs(p, OX_PAT_FUNCTION, OPS_CAT, 1), post_level, h_split_cat_aten, NULL},
  };
  return run_entries(c, p, es, 1);
}

/* ------------------------------------------------------------------ post-grad: select_cat_aten_pass */

static int h_select_cat_aten(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Cat ct;
  char why[200], b1[16], b2[16];
  if (!cat_load(g, m->anchor, &ct, why, sizeof why) || ct.stack) return 0;
  const OxValue *t = ct.tensors;
  OxNodeId x = 0;
  int64_t d = -1;
  for (uint32_t i = 0; i < t->n; i++) {
    const OxValue *v = &t->u.items[i];
    OxOpArgs oa;
    char err[160];
    if (v->kind != OX_V_NODE || opof(g, v->u.node) != OX_OPID_SELECT ||
        ox_op_normalize(g, &g->nodes[v->u.node], &oa, err, sizeof err) != 0 || oa.slot[0]->kind != OX_V_NODE ||
        oa.slot[1]->kind != OX_V_INT || oa.slot[2]->kind != OX_V_INT) {
      rejectf(c, e, m, OX_REASON_OTHER, "not every cat input is a select", NULL);
      return 0;
    }
    const OxTensorMeta *xm = tmeta(g, oa.slot[0]->u.node);
    if (!xm) {
      rejectf(c, e, m, OX_REASON_META_MISSING, nm(g, oa.slot[0]->u.node), NULL);
      return 0;
    }
    int64_t sd = norm_dim(oa.slot[1]->u.i, xm->rank);
    if (!x) {
      x = oa.slot[0]->u.node;
      d = sd;
    }
    if (oa.slot[0]->u.node != x || sd != d) {
      rejectf(c, e, m, OX_REASON_OTHER, "selects of different tensors or dims", NULL);
      return 0;
    }
    if (norm_dim(oa.slot[2]->u.i, xm->shape[d].v) != (int64_t)i) {
      char why[96];
      whyf(why, sizeof why, "select indices do not count up from 0: input %u selects index %lld", i,
               (long long)oa.slot[2]->u.i);
      rejectf(c, e, m, OX_REASON_OTHER, why, NULL);
      return 0;
    }
  }
  const OxTensorMeta *xm = tmeta(g, x);
  if (d != ct.dim) {
    rejectf(c, e, m, OX_REASON_DIM_MISMATCH, "cat", itoa_buf(b1, sizeof b1, ct.dim), "select", itoa_buf(b2, sizeof b2, d),
            NULL);
    return 0;
  }
  if ((int64_t)t->n != xm->shape[d].v || g->nodes[x].n_users != t->n) {
    rejectf(c, e, m, OX_REASON_NOT_ALL_USED, nm(g, x), itoa_buf(b1, sizeof b1, t->n),
            itoa_buf(b2, sizeof b2, xm->shape[d].v), NULL);
    return 0;
  }
  if (xm->has_stride) { /* view needs a contiguous x */
    int64_t expect = 1;
    for (int32_t q = xm->rank - 1; q >= 0; q--) {
      if (xm->shape[q].v != 1 && (xm->stride[q].sym || xm->stride[q].v != expect)) {
        rejectf(c, e, m, OX_REASON_OTHER, "the selected tensor is not contiguous", NULL);
        return 0;
      }
      expect *= xm->shape[q].v;
    }
  }
  const OxTensorMeta *cm = tmeta(g, m->anchor);
  if (!cm) {
    rejectf(c, e, m, OX_REASON_META_MISSING, nm(g, m->anchor), NULL);
    return 0;
  }
  int64_t shape[OX_SHAPE_MAX_RANK];
  for (int32_t q = 0; q < cm->rank && q < OX_SHAPE_MAX_RANK; q++) shape[q] = cm->shape[q].v;
  OxNodeId *olds = ox_xcalloc(t->n, sizeof *olds);
  uint32_t nold = t->n;
  for (uint32_t i = 0; i < t->n; i++) olds[i] = t->u.items[i].u.node;
  ox_pat_step_begin(c, e, m);
  OxNodeId v = mk_before(g, m->anchor, aten_target(g, m->anchor, "aten.view.default"),
                         tup(g, 2, V(x), ilist(g, shape, (uint32_t)cm->rank)), ox_value_none());
  replace_node(g, m->anchor, v);
  for (uint32_t i = 0; i < nold; i++) erase_dead(g, olds[i]);
  free(olds);
  if (!ox_step_commit(c)) return 0;
  count(c);
  return 1;
}

int ox_splitcat_select_cat_aten_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxOpId sel[] = {OX_OPID_SELECT};
  OxPatEntry es[] = {
    {"merge_select_cat_aten", catlike(p, OPS_CAT, 1, ox_pat_list(p, varargs(p, OX_PAT_FUNCTION, sel, 1), true)),
     post_level, h_select_cat_aten, NULL},
  };
  return run_entries(c, p, es, 1);
}

/* ------------------------------------------------------------------ post-grad: unbind_stack_aten_pass */

static int h_unbind_stack_aten(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Cat ct;
  char why[200], b1[16], b2[16];
  if (!cat_load(g, m->anchor, &ct, why, sizeof why) || ct.stack) return 0;
  const OxValue *t = ct.tensors;
  OxNodeId p0 = 0;
  int64_t d = -1;
  for (uint32_t i = 0; i < t->n; i++) {
    OxNodeId u = t->u.items[i].u.node;
    OxOpArgs ua, sa;
    char err[160];
    if (ox_op_normalize(g, &g->nodes[u], &ua, err, sizeof err) != 0 || ua.slot[0]->kind != OX_V_NODE ||
        ua.slot[1]->kind != OX_V_INT)
      return 0;
    OxNodeId s = ua.slot[0]->u.node;
    if (opof(g, s) != OX_OPID_SELECT || ox_op_normalize(g, &g->nodes[s], &sa, err, sizeof err) != 0 ||
        sa.slot[0]->kind != OX_V_NODE || sa.slot[1]->kind != OX_V_INT || sa.slot[2]->kind != OX_V_INT) {
      rejectf(c, e, m, OX_REASON_OTHER, "an unsqueeze input is not a select", NULL);
      return 0;
    }
    /* upstream accepts only the generic aten.select its batch fusions create (target ==
     * torch.ops.aten.select), not a model's own aten.select.int; match_select_overload
     * takes both */
    if (!overload_packet(g, s) && !(c->opt && c->opt->match_select_overload)) {
      rejectf(c, e, m, OX_REASON_TARGET_MISMATCH, nm(g, s), g->nodes[s].target,
              "torch.ops.aten.select (the overload packet the batch fusions emit; option match_select_overload "
              "accepts any select overload)",
              NULL);
      return 0;
    }
    const OxTensorMeta *pm = tmeta(g, sa.slot[0]->u.node);
    if (!pm) {
      rejectf(c, e, m, OX_REASON_META_MISSING, nm(g, sa.slot[0]->u.node), NULL);
      return 0;
    }
    int64_t sd = norm_dim(sa.slot[1]->u.i, pm->rank), ud = norm_dim(ua.slot[1]->u.i, pm->rank);
    if (!p0) {
      p0 = sa.slot[0]->u.node;
      d = sd;
    }
    if (sa.slot[0]->u.node != p0 || sd != d || ud != d) {
      rejectf(c, e, m, OX_REASON_DIM_MISMATCH, nm(g, u), itoa_buf(b1, sizeof b1, ud), nm(g, s), itoa_buf(b2, sizeof b2, sd),
              NULL);
      return 0;
    }
    if (norm_dim(sa.slot[2]->u.i, pm->shape[d].v) != (int64_t)i) {
      /* name the indices as the cat lists them: "[0, 10, 1, 11, ...]" */
      char list[160];
      size_t k = 0;
      list[k++] = '[';
      for (uint32_t j = 0; j < t->n && k + 24 < sizeof list; j++) {
        const OxNode *un = &g->nodes[t->u.items[j].u.node];
        const OxNode *sn = un->args.n && un->args.u.items[0].kind == OX_V_NODE ? &g->nodes[un->args.u.items[0].u.node] : NULL;
        const OxValue *ix = sn && sn->args.n == 3 ? &sn->args.u.items[2] : NULL;
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", j ? ", " : "",
                              ix && ix->kind == OX_V_INT ? itoa_buf(b1, sizeof b1, ix->u.i) : "?");
        if (j + 1 < t->n && k + 24 >= sizeof list) k += (size_t)snprintf(list + k, sizeof list - k, ", ...");
      }
      snprintf(list + k, sizeof list - k, "]");
      rejectf(c, e, m, OX_REASON_NOT_CONSECUTIVE, list, NULL);
      return 0;
    }
  }
  const OxTensorMeta *pm = tmeta(g, p0);
  if (d != ct.dim) {
    rejectf(c, e, m, OX_REASON_DIM_MISMATCH, "cat", itoa_buf(b1, sizeof b1, ct.dim), "select", itoa_buf(b2, sizeof b2, d),
            NULL);
    return 0;
  }
  if ((int64_t)t->n != pm->shape[d].v || g->nodes[p0].n_users != t->n) {
    rejectf(c, e, m, OX_REASON_NOT_ALL_USED, nm(g, p0), itoa_buf(b1, sizeof b1, t->n),
            itoa_buf(b2, sizeof b2, pm->shape[d].v), NULL);
    return 0;
  }
  OxNodeId *olds = ox_xcalloc(t->n, sizeof *olds);
  uint32_t nold = t->n;
  for (uint32_t i = 0; i < t->n; i++) olds[i] = t->u.items[i].u.node;
  ox_pat_step_begin(c, e, m);
  replace_node(g, m->anchor, p0);
  for (uint32_t i = 0; i < nold; i++) {
    OxNodeId s = g->nodes[olds[i]].args.u.items[0].u.node;
    erase_dead(g, olds[i]);
    erase_dead(g, s);
  }
  free(olds);
  if (!ox_step_commit(c)) return 0;
  count(c);
  return 1;
}

int ox_splitcat_unbind_stack_aten_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxOpId unsq[] = {OX_OPID_UNSQUEEZE};
  OxPat *a[] = {ox_pat_list(p, varargs(p, OX_PAT_FUNCTION, unsq, 1), false)};
  OxPat *cat = ox_pat_call(p, OX_PAT_FUNCTION, OPS_CAT, 1, a, 1);
  ox_pat_call_kw(p, cat, "dim", ox_pat_ignored(p));
  ox_pat_call_users(cat, OX_PAT_USERS_ANY);
  OxPatEntry es[] = {{"merge_unbind_stack_aten", cat, post_level, h_unbind_stack_aten, NULL}};
  return run_entries(c, p, es, 1);
}

/* ------------------------------------------------------------------ post-grad: move_view_after_cat_aten_pass */

/* cat([reshape(getitem(split_with_sizes(x), i)) for every i in order], cd), where every section
 * is 1 and each reshape drops the split dim: == reshape(permute(x, sd moved to cd), cat shape). */
static int h_move_view_after_cat(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  Cat ct;
  char why[200];
  if (!cat_load(g, m->anchor, &ct, why, sizeof why) || ct.stack) return 0;
  const OxValue *t = ct.tensors;
  OxNodeId s0 = 0;
  for (uint32_t i = 0; i < t->n; i++) {
    OxNodeId v = t->u.items[i].kind == OX_V_NODE ? t->u.items[i].u.node : 0;
    OxNodeId gi = v && (opof(g, v) == OX_OPID_RESHAPE || opof(g, v) == OX_OPID_VIEW) && g->nodes[v].args.n ? g->nodes[v].args.u.items[0].u.node : 0;
    OxNodeId par;
    int64_t k;
    if (!gi || !getitem_of(g, gi, &par, &k) || opof(g, par) != OX_OPID_SPLIT_WITH_SIZES || k != (int64_t)i ||
        (s0 && par != s0)) {
      rejectf(c, e, m, OX_REASON_OTHER, "inputs are not reshapes of every split piece in order", NULL);
      return 0;
    }
    s0 = par;
  }
  Split sp;
  if (!split_load(g, s0, &sp, why, sizeof why)) {
    reject_load(c, e, m, why);
    return 0;
  }
  int r = 0;
  const OxTensorMeta *cm = tmeta(g, m->anchor);
  if (sp.n != t->n || !cm) {
    rejectf(c, e, m, OX_REASON_NOT_ALL_USED, nm(g, s0), "cat", "split", NULL);
    goto out;
  }
  for (uint32_t i = 0; i < t->n; i++) {
    const OxTensorMeta *rm = tmeta(g, t->u.items[i].u.node);
    bool ok = sp.sec[i] == 1 && rm && rm->rank == sp.in->rank - 1;
    for (int32_t q = 0, w = 0; ok && q < sp.in->rank; q++) {
      if (q == sp.dim) continue;
      ok = rm->shape[w++].v == sp.in->shape[q].v;
    }
    if (!ok) {
      rejectf(c, e, m, OX_REASON_OTHER, "a reshape is not a squeeze of the split dim", NULL);
      goto out;
    }
  }
  {
    int64_t perm[OX_SHAPE_MAX_RANK], shape[OX_SHAPE_MAX_RANK];
    uint32_t np = 0;
    for (int32_t q = 0; q < sp.in->rank; q++)
      if (q != sp.dim) perm[np++] = q;
    for (int64_t q = (int64_t)np; q > ct.dim; q--) perm[q] = perm[q - 1];
    perm[ct.dim] = sp.dim;
    for (int32_t q = 0; q < cm->rank; q++) shape[q] = cm->shape[q].v;
    OxNodeId *olds = ox_xcalloc(t->n, sizeof *olds);
    uint32_t nold = t->n;
    for (uint32_t i = 0; i < t->n; i++) olds[i] = t->u.items[i].u.node;
    ox_pat_step_begin(c, e, m);
    OxNodeId a = m->anchor;
    OxNodeId pm = mk_before(g, a, aten_target(g, a, "aten.permute.default"),
                            tup(g, 2, V(sp.input), ilist(g, perm, (uint32_t)sp.in->rank)), ox_value_none());
    OxNodeId rs = mk_before(g, a, aten_target(g, a, "aten.reshape.default"), tup(g, 2, V(pm), ilist(g, shape, (uint32_t)cm->rank)),
                            ox_value_none());
    replace_node(g, a, rs);
    for (uint32_t i = 0; i < nold; i++) {
      OxNodeId gi = g->nodes[olds[i]].args.u.items[0].u.node;
      erase_dead(g, olds[i]);
      erase_dead(g, gi);
    }
    erase_dead(g, s0);
    free(olds);
    if (ox_step_commit(c)) {
      count(c);
      r = 1;
    }
  }
out:
  split_free(&sp);
  return r;
}

int ox_splitcat_move_view_after_cat_aten_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxOpId rs[] = {OX_OPID_RESHAPE, OX_OPID_VIEW};
  OxOpId sws[] = {OX_OPID_SPLIT_WITH_SIZES};
  OxPat *split = ox_pat_call_varargs(p, OX_PAT_FUNCTION, sws, 1);
  ox_pat_call_users(split, OX_PAT_USERS_ANY);
  OxPat *gi = ox_pat_getitem(p, split, ox_pat_ignored(p), OX_PAT_USERS_ANY);
  OxPat *ra[] = {gi, ox_pat_arg(p)};
  OxPat *reshape = ox_pat_call(p, OX_PAT_FUNCTION, rs, 2, ra, 2);
  ox_pat_call_users(reshape, OX_PAT_USERS_ANY);
  OxPatEntry es[] = {
    {"move_view_after_cat", catlike(p, OPS_CAT, 1, ox_pat_list(p, reshape, false)), post_level, h_move_view_after_cat,
     NULL},
  };
  return run_entries(c, p, es, 1);
}
