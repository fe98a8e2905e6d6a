/* ox_misc_passes.c - the passes of upstream's lists beyond the split/cat core and the batch
 * fusion engine:
 *   numpy_compat_normalization (misc_patterns.py; upstream's pre-grad driver runs it on every
 *                       graph before normalization_pass): NumPy-style keywords of torch
 *                       functions renamed to torch's (axis -> dim, keepdims -> keepdim, x / a /
 *                       x1 -> input, x2 -> other) where the function takes the torch name.
 *                       Counter numpy_compat_normalization, one per node.
 * and three that upstream runs only when a config names them, so they are not in the default
 * pipeline (ox_pass_opt_in): cat_linear (a pre-grad fusion of group_batch_fusion.py),
 * einsum_to_pointwise_pass (pre-grad, split_cat.py) and decompose_mm_pass (post-grad,
 * decompose_mem_bound_mm.py).
 *
 * Every rewrite is one step with its checks; every candidate that fails a gate is recorded
 * with the gate and its numbers. Created nodes get inferred meta at once.
 * Requires: static tensor meta on the operands (a candidate without it is rejected, named).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "ops/ox_shape.h"
#include "passes/ox_pattern.h"

/* ------------------------------------------------------------------ helpers */

static OxOpId opof(const OxGraph *g, OxNodeId id, const OxSpelling **sp) {
  const OxNode *n = ox_graph_node(g, id);
  return n && !n->erased ? ox_op_of_node(g, n, sp) : OX_OPID_NONE;
}

static const char *nm(const OxGraph *g, OxNodeId id) {
  const OxNode *n = ox_graph_node(g, id);
  return n ? n->name : "?";
}

/* tensor meta, or NULL; *symbolic tells a symbolic shape from a missing one */
static const OxTensorMeta *tmeta(const OxGraph *g, OxNodeId id, bool *symbolic) {
  const OxNode *n = ox_graph_node(g, id);
  if (symbolic) *symbolic = false;
  if (!n || n->meta.kind != OX_META_TENSOR || !n->meta.t || n->meta.t->rank < 0) return NULL;
  for (int32_t i = 0; i < n->meta.t->rank; i++)
    if (n->meta.t->shape[i].sym) {
      if (symbolic) *symbolic = true;
      return NULL;
    }
  return n->meta.t;
}

static void infer(OxGraph *g, OxNodeId id) {
  OxMeta m;
  char err[256];
  if (ox_shape_infer_node(g, id, &m, err, sizeof err) == 0) {
    m.inferred = true;
    ox_graph_set_meta_shared(g, id, &m);
  }
}

static OxNodeId mk(OxGraph *g, OxNodeId before, OxOp op, const char *target, OxValue args, OxValue kwargs) {
  OxNodeId id = ox_graph_insert_before(g, before, op, NULL, target, args, kwargs);
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

static OxValue V(OxNodeId id) { return ox_value_node(id); }
static OxValue I(int64_t i) { return ox_value_int(i); }

static int64_t dtype_bytes(OxDType dt) {
  switch (dt) {
  case OX_DT_F64:
  case OX_DT_I64:
  case OX_DT_U64:
  case OX_DT_C64: return 8;
  case OX_DT_C128: return 16;
  case OX_DT_F16:
  case OX_DT_BF16:
  case OX_DT_I16:
  case OX_DT_U16: return 2;
  case OX_DT_BOOL:
  case OX_DT_I8:
  case OX_DT_U8: return 1;
  default: return 4;
  }
}

/* records a rejection whose reason is free text (OX_REASON_OTHER) */
static void rejectf(OxPassCtx *c, const char *rule, OxNodeId anchor, const OxNodeId *nodes, uint32_t n, const char *fmt,
                    ...) {
  if (!c->trace || !c->record_rejections) return;
  char text[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  OxReason r = ox_reason(c, OX_REASON_OTHER, text, NULL);
  ox_step_reject(c, rule, anchor, nodes, n, &r);
}

static void reject_meta(OxPassCtx *c, const char *rule, OxNodeId anchor, OxNodeId which, bool symbolic) {
  if (!c->trace || !c->record_rejections) return;
  OxReason r;
  if (symbolic) {
    char text[160];
    snprintf(text, sizeof text, "symbolic sizes on %s: the gates need static shapes", nm(c->g, which));
    r = ox_reason(c, OX_REASON_OTHER, text, NULL);
  } else {
    r = ox_reason(c, OX_REASON_META_MISSING, nm(c->g, which), NULL);
  }
  ox_step_reject(c, rule, anchor, &anchor, 1, &r);
}

/* ------------------------------------------------------------------ numpy_compat_normalization */

/* torch functions the op table does not hold, with their parameter names over all overloads
 * (torch.max(input), (input, dim, keepdim), (input, other) ...): what upstream reads from
 * torch's own signatures */
static const struct {
  const char *target, *params;
} extra_signatures[] = {
  {"torch.max", "input, dim, keepdim, other"},    {"torch.min", "input, dim, keepdim, other"},
  {"torch.amax", "input, dim, keepdim"},          {"torch.amin", "input, dim, keepdim"},
  {"torch.argmax", "input, dim, keepdim"},        {"torch.argmin", "input, dim, keepdim"},
  {"torch.std", "input, dim, keepdim"},           {"torch.var", "input, dim, keepdim"},
  {"torch.prod", "input, dim, keepdim"},          {"torch.all", "input, dim, keepdim"},
  {"torch.any", "input, dim, keepdim"},           {"torch.logsumexp", "input, dim, keepdim"},
  {"torch.median", "input, dim, keepdim"},        {"torch.nansum", "input, dim, keepdim"},
  {"torch.nanmean", "input, dim, keepdim"},       {"torch.cumsum", "input, dim"},
  {"torch.cumprod", "input, dim"},                {"torch.sort", "input, dim"},
  {"torch.topk", "input, dim"},                   {"torch.count_nonzero", "input, dim"},
};

/* does a comma list of parameter entries ("self:input, dim=0, *, -out=None") name `want`
 * (the printed name: after ':' when there is one)? */
static bool params_name(const char *list, const char *want) {
  size_t wl = strlen(want);
  for (const char *p = list; p && *p;) {
    while (*p == ' ' || *p == '*' || *p == '-' || *p == '~') p++;
    const char *end = p + strcspn(p, ",");
    const char *eq = memchr(p, '=', (size_t)(end - p));
    const char *stop = eq ? eq : end;
    const char *colon = memchr(p, ':', (size_t)(stop - p));
    const char *name = colon ? colon + 1 : p;
    if ((size_t)(stop - name) == wl && strncmp(name, want, wl) == 0) return true;
    p = *end ? end + 1 : end;
  }
  return false;
}

static const struct {
  const char *numpy, *torch;
} numpy_names[] = {{"axis", "dim"}, {"keepdims", "keepdim"}, {"x", "input"}, {"a", "input"}, {"x1", "input"},
                   {"x2", "other"}};

int ox_misc_numpy_compat_normalization(OxPassCtx *c) {
  OxGraph *g = c->g;
  int applied = 0;
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    if (n->op != OX_OP_CALL_FUNCTION || n->kwargs.kind != OX_V_DICT || !n->kwargs.n) continue;
    if (strstr(n->target, "aten.") || strstr(n->target, "prims.")) continue; /* upstream skips OpOverloads */
    const OxSpelling *sp = NULL;
    const char *params = NULL;
    if (ox_op_of_node(g, n, &sp) != OX_OPID_NONE && sp && sp->level == OX_LEVEL_TORCH) params = sp->schema;
    for (size_t i = 0; !params && i < sizeof extra_signatures / sizeof extra_signatures[0]; i++)
      if (!strcmp(n->target, extra_signatures[i].target)) params = extra_signatures[i].params;
    if (!params) continue;
    bool any = false;
    for (uint32_t k = 0; k < n->kwargs.n && !any; k++)
      for (size_t j = 0; j < sizeof numpy_names / sizeof numpy_names[0]; j++)
        if (!strcmp(n->kwargs.keys[k], numpy_names[j].numpy) && params_name(params, numpy_names[j].torch)) any = true;
    if (!any) continue;
    const char **keys = ox_xcalloc(n->kwargs.n, sizeof *keys);
    OxValue *vals = ox_xcalloc(n->kwargs.n, sizeof *vals);
    for (uint32_t k = 0; k < n->kwargs.n; k++) {
      keys[k] = n->kwargs.keys[k];
      vals[k] = ox_graph_value_copy(g, &n->kwargs.u.items[k]);
      for (size_t j = 0; j < sizeof numpy_names / sizeof numpy_names[0]; j++)
        if (!strcmp(keys[k], numpy_names[j].numpy) && params_name(params, numpy_names[j].torch))
          keys[k] = numpy_names[j].torch;
    }
    OxValue kw = ox_graph_value_dict(g, keys, vals, n->kwargs.n);
    free(keys);
    free(vals);
    ox_step_begin(c, "numpy_compat_normalization", id);
    ox_step_matched(c, &id, 1);
    ox_graph_set_kwargs(g, id, kw);
    infer(g, id);
    if (ox_step_commit(c)) {
      ox_counter_add(c, "numpy_compat_normalization", 1);
      applied++;
    }
  }
  return applied;
}

/* ------------------------------------------------------------------ cat_linear */

/* upstream's fixed gates (group_batch_fusion.py; PRs #187074, #187880) */
enum { CL_MAX_PARTS = 3, CL_MIN_PART_WIDTH = 8, CL_MAX_OUT = 96, CL_MAX_TOTAL_WIDTH = 384 };

/* W[:, lo:hi].contiguous(), created right after W (upstream hoists it to the graph entry) or
 * the one an earlier rewrite made for the same (W, lo, hi) */
static OxNodeId weight_slice(OxGraph *g, OxNodeId w, int64_t lo, int64_t hi) {
  const OxNode *wn = &g->nodes[w];
  for (uint32_t u = 0; u < wn->n_users; u++) {
    const OxNode *s = &g->nodes[wn->users[u]];
    if (s->op != OX_OP_CALL_FUNCTION || strcmp(s->target, "operator.getitem") != 0 || s->args.n != 2) continue;
    const OxValue *ix = &s->args.u.items[1];
    if (ix->kind != OX_V_TUPLE || ix->n != 2 || ix->u.items[0].kind != OX_V_SLICE || ix->u.items[1].kind != OX_V_SLICE)
      continue;
    const OxValue *a = &ix->u.items[0], *b = &ix->u.items[1];
    bool all = a->n == 3 && a->u.items[0].kind == OX_V_NONE && a->u.items[1].kind == OX_V_NONE &&
               a->u.items[2].kind == OX_V_NONE;
    bool same = b->n == 3 && b->u.items[0].kind == OX_V_INT && b->u.items[0].u.i == lo &&
                b->u.items[1].kind == OX_V_INT && b->u.items[1].u.i == hi && b->u.items[2].kind == OX_V_NONE;
    if (!all || !same) continue;
    for (uint32_t v = 0; v < s->n_users; v++) {
      const OxNode *cn = &g->nodes[s->users[v]];
      if (cn->op == OX_OP_CALL_METHOD && !strcmp(cn->target, "contiguous") && cn->args.n == 1) return s->users[v];
    }
  }
  OxValue none3[3] = {ox_value_none(), ox_value_none(), ox_value_none()};
  OxValue range[3] = {I(lo), I(hi), ox_value_none()};
  OxValue sl[2] = {ox_graph_value_seq(g, OX_V_SLICE, none3, 3), ox_graph_value_seq(g, OX_V_SLICE, range, 3)};
  OxValue idx = ox_graph_value_seq(g, OX_V_TUPLE, sl, 2);
  OxNodeId gi = ox_graph_insert_after(g, w, OX_OP_CALL_FUNCTION, NULL, "operator.getitem", tup(g, 2, V(w), idx),
                                      ox_value_none());
  infer(g, gi);
  OxNodeId ct = ox_graph_insert_after(g, gi, OX_OP_CALL_METHOD, NULL, "contiguous", tup(g, 1, V(gi)), ox_value_none());
  infer(g, ct);
  return ct;
}

/* One linear: 1 rewritten, 0 not a candidate or rejected (recorded). */
static int cat_linear_one(OxPassCtx *c, OxNodeId lin) {
  OxGraph *g = c->g;
  const char *R = "cat_linear";
  const OxSpelling *sp = NULL;
  if (opof(g, lin, &sp) != OX_OPID_LINEAR || !sp || sp->level != OX_LEVEL_TORCH || g->nodes[lin].op != OX_OP_CALL_FUNCTION)
    return 0;
  OxOpArgs la;
  char err[160];
  if (ox_op_normalize(g, &g->nodes[lin], &la, err, sizeof err) != 0 || la.slot[0]->kind != OX_V_NODE ||
      la.slot[1]->kind != OX_V_NODE)
    return 0;
  OxNodeId cat = la.slot[0]->u.node, w = la.slot[1]->u.node;
  OxNodeId b = la.slot[2]->kind == OX_V_NODE ? la.slot[2]->u.node : 0;
  const OxSpelling *csp = NULL;
  if (opof(g, cat, &csp) != OX_OPID_CAT || !csp) return 0; /* not linear(cat(...)): no candidate */
  OxNodeId both[2] = {cat, lin};
  if (csp->level != OX_LEVEL_TORCH) {
    rejectf(c, R, lin, both, 2, "%s is %s, not a torch-level cat", nm(g, cat), g->nodes[cat].target);
    return 0;
  }
  OxOpArgs ca;
  if (ox_op_normalize(g, &g->nodes[cat], &ca, err, sizeof err) != 0 ||
      (ca.slot[0]->kind != OX_V_LIST && ca.slot[0]->kind != OX_V_TUPLE) || ca.slot[1]->kind != OX_V_INT) {
    rejectf(c, R, lin, both, 2, "%s: tensors or dim not static", nm(g, cat));
    return 0;
  }
  const OxValue *parts = ca.slot[0];
  bool sym;
  const OxTensorMeta *ct = tmeta(g, cat, &sym);
  if (!ct) {
    reject_meta(c, R, lin, cat, sym);
    return 0;
  }
  int64_t dim = ca.slot[1]->u.i < 0 ? ca.slot[1]->u.i + ct->rank : ca.slot[1]->u.i;
  if (dim != ct->rank - 1) {
    rejectf(c, R, lin, both, 2, "%s concatenates on dim %lld, not the last dim (%d)", nm(g, cat), (long long)dim,
            ct->rank - 1);
    return 0;
  }
  if (parts->n < 2 || parts->n > CL_MAX_PARTS) {
    rejectf(c, R, lin, both, 2, "%s has %u parts; cat_linear takes 2 to %d", nm(g, cat), parts->n, CL_MAX_PARTS);
    return 0;
  }
  int64_t widths[CL_MAX_PARTS];
  OxNodeId pn[CL_MAX_PARTS];
  for (uint32_t i = 0; i < parts->n; i++) {
    if (parts->u.items[i].kind != OX_V_NODE) {
      rejectf(c, R, lin, both, 2, "part %u of %s is not a tensor node", i, nm(g, cat));
      return 0;
    }
    pn[i] = parts->u.items[i].u.node;
    const OxTensorMeta *pt = tmeta(g, pn[i], &sym);
    if (!pt) {
      reject_meta(c, R, lin, pn[i], sym);
      return 0;
    }
    widths[i] = pt->shape[pt->rank - 1].v;
    if (widths[i] < CL_MIN_PART_WIDTH) {
      rejectf(c, R, lin, both, 2, "part %s is %lld wide, thinner than %d", nm(g, pn[i]), (long long)widths[i],
              CL_MIN_PART_WIDTH);
      return 0;
    }
  }
  if (g->nodes[cat].n_users != 1) {
    char nu[16];
    snprintf(nu, sizeof nu, "%u", g->nodes[cat].n_users);
    if (c->trace && c->record_rejections) {
      OxReason r = ox_reason(c, OX_REASON_MULTIPLE_USERS, nm(g, cat), nu, "1", NULL);
      ox_step_reject(c, R, lin, both, 2, &r);
    }
    return 0;
  }
  const OxTensorMeta *wt = tmeta(g, w, &sym);
  if (!wt) {
    reject_meta(c, R, lin, w, sym);
    return 0;
  }
  int64_t K = ct->shape[ct->rank - 1].v;
  if (wt->rank != 2 || wt->shape[1].v != K) {
    rejectf(c, R, lin, both, 2, "weight %s is not [N, %lld]", nm(g, w), (long long)K);
    return 0;
  }
  if (b && !tmeta(g, b, &sym)) {
    reject_meta(c, R, lin, b, sym);
    return 0;
  }
  int64_t N = wt->shape[0].v;
  if (N > CL_MAX_OUT) {
    rejectf(c, R, lin, both, 2, "output width %lld > %d (a wide output is compute-bound)", (long long)N, CL_MAX_OUT);
    return 0;
  }
  if (K > CL_MAX_TOTAL_WIDTH) {
    rejectf(c, R, lin, both, 2, "total width %lld > %d", (long long)K, CL_MAX_TOTAL_WIDTH);
    return 0;
  }
  int64_t M = 1;
  for (int32_t d = 0; d + 1 < ct->rank; d++) M *= ct->shape[d].v;
  int64_t traffic = M * K * dtype_bytes(ct->dtype);
  int64_t floor = c->opt ? c->opt->cat_traffic_floor_bytes : 512 * 1024 * 1024;
  if (traffic < floor) {
    rejectf(c, R, lin, both, 2, "cat traffic %lld x %lld x %lld B = %lld B < cat_traffic_floor_bytes %lld", (long long)M,
            (long long)K, (long long)dtype_bytes(ct->dtype), (long long)traffic, (long long)floor);
    return 0;
  }
  ox_step_begin(c, R, lin);
  ox_step_matched(c, both, 2);
  OxNodeId acc = 0;
  int64_t off = 0;
  for (uint32_t i = 0; i < parts->n; i++) {
    OxNodeId ws = weight_slice(g, w, off, off + widths[i]);
    off += widths[i];
    OxValue bias = i == 0 && b ? V(b) : ox_value_none();
    OxNodeId o = mk(g, lin, OX_OP_CALL_FUNCTION, "torch.nn.functional.linear", tup(g, 3, V(pn[i]), V(ws), bias),
                    ox_value_none());
    acc = acc ? mk(g, lin, OX_OP_CALL_FUNCTION, "operator.add", tup(g, 2, V(acc), V(o)), ox_value_none()) : o;
  }
  ox_graph_replace_all_uses(g, lin, acc);
  ox_graph_erase(g, lin);
  ox_graph_erase(g, cat);
  if (!ox_step_commit(c)) return 0;
  ox_counter_add(c, "cat_linear", 1);
  return 1;
}

int ox_misc_cat_linear_pass(OxPassCtx *c) {
  OxGraph *g = c->g;
  /* the linears first (rewrites create nodes), visited from the last to the first as
   * upstream's root sweep finds them */
  uint32_t n = 0, cap = 16;
  OxNodeId *lins = ox_xcalloc(cap, sizeof *lins);
  OX_GRAPH_FOREACH(g, id) {
    if (opof(g, id, NULL) != OX_OPID_LINEAR) continue;
    if (n == cap) lins = ox_xrealloc(lins, (cap *= 2) * sizeof *lins);
    lins[n++] = id;
  }
  int applied = 0;
  for (uint32_t i = n; i-- > 0;) {
    const OxNode *l = ox_graph_node(g, lins[i]);
    if (!l || l->erased) continue;
    applied += cat_linear_one(c, lins[i]);
  }
  free(lins);
  return applied;
}

/* ------------------------------------------------------------------ einsum_to_pointwise_pass */

/* "3 letters, 4 letters -> 3 letters" with s1[:2] == s2[:2] == s3[:2], s1[2] == s2[2],
 * s2[3] == s3[2] (upstream's match_einsum_strings) */
static bool einsum_rule(const char *eq) {
  char part[3][8];
  int len[3] = {0, 0, 0}, k = 0;
  for (const char *p = eq; *p; p++) {
    if (*p == ' ') continue;
    if (*p == ',' || (*p == '-' && p[1] == '>')) {
      if (*p == '-') p++;
      if (++k > 2) return false;
      continue;
    }
    if (len[k] >= 7) return false;
    part[k][len[k]++] = *p;
  }
  if (k != 2 || len[0] != 3 || len[1] != 4 || len[2] != 3) return false;
  return part[0][0] == part[1][0] && part[1][0] == part[2][0] && part[0][1] == part[1][1] &&
         part[1][1] == part[2][1] && part[0][2] == part[1][2] && part[1][3] == part[2][2];
}

static int h_einsum(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  OxNodeId n = m->anchor;
  const OxNode *en = &g->nodes[n];
  const OxSpelling *sp = NULL;
  opof(g, n, &sp);
  if (!sp || sp->level != OX_LEVEL_TORCH) return 0;
  /* upstream: two operands given positionally (len(args) == 3) */
  if (en->args.n != 3 || en->args.u.items[0].kind != OX_V_STR || en->args.u.items[1].kind != OX_V_NODE ||
      en->args.u.items[2].kind != OX_V_NODE) {
    rejectf(c, e->name, n, &n, 1, "%s: not einsum(equation, input, weights) with two positional operands", en->name);
    return 0;
  }
  const char *eq = en->args.u.items[0].s;
  OxNodeId x = en->args.u.items[1].u.node, w = en->args.u.items[2].u.node;
  bool sym;
  if (!tmeta(g, x, &sym)) {
    reject_meta(c, e->name, n, x, sym);
    return 0;
  }
  if (!tmeta(g, w, &sym)) {
    reject_meta(c, e->name, n, w, sym);
    return 0;
  }
  bool add_user = false;
  for (uint32_t u = 0; u < en->n_users && !add_user; u++) {
    const OxNode *un = &g->nodes[en->users[u]];
    add_user = (un->op == OX_OP_CALL_METHOD && !strcmp(un->target, "add")) ||
               (un->op == OX_OP_CALL_FUNCTION && !strcmp(un->target, "operator.add"));
  }
  if (!add_user) {
    rejectf(c, e->name, n, &n, 1, "no user of %s is an add (upstream rewrites einsums that feed an add)", en->name);
    return 0;
  }
  if (!einsum_rule(eq)) {
    rejectf(c, e->name, n, &n, 1, "equation \"%s\" is not of the form \"abc,abcd->abd\"", eq);
    return 0;
  }
  ox_pat_step_begin(c, e, m);
  OxNodeId u = mk(g, n, OX_OP_CALL_FUNCTION, "torch.unsqueeze", tup(g, 2, V(x), I(-1)), ox_value_none());
  OxNodeId mul = mk(g, n, OX_OP_CALL_FUNCTION, "torch.mul", tup(g, 2, V(u), V(w)), ox_value_none());
  OxNodeId s = mk(g, n, OX_OP_CALL_FUNCTION, "torch.sum", tup(g, 2, V(mul), I(-2)), ox_value_none());
  ox_graph_replace_all_uses(g, n, s);
  ox_graph_erase(g, n);
  if (!ox_step_commit(c)) return 0;
  ox_counter_add(c, "einsum_to_pointwise_pass", 1);
  return 1;
}

int ox_misc_einsum_to_pointwise_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxOpId ein[] = {OX_OPID_EINSUM};
  OxPat *pat = ox_pat_call_varargs(p, OX_PAT_FUNCTION, ein, 1);
  ox_pat_call_users(pat, OX_PAT_USERS_ANY);
  OxPatEntry es[] = {{"replace_einsum_to_pointwise", pat, NULL, h_einsum, NULL}};
  int r = ox_pat_pass_run(c, es, 1);
  ox_pat_pool_free(p);
  return r;
}

/* ------------------------------------------------------------------ decompose_mm_pass */

typedef enum { DEV_UNKNOWN, DEV_CUDA, DEV_CPU, DEV_OTHER } Dev;

static Dev device_of(const OxTensorMeta *t) {
  if (!t || !t->device || !t->device[0]) return DEV_UNKNOWN;
  if (!strncmp(t->device, "cuda", 4)) return DEV_CUDA;
  if (!strcmp(t->device, "cpu")) return DEV_CPU;
  return DEV_OTHER;
}

/* a size test: true, false, or (symbolic with skip_dynamic_shape_dim_check) "not known to
 * be false" */
typedef enum { CMP_LT, CMP_LE, CMP_GE } Cmp;
static bool size_ok(OxDim d, Cmp op, int64_t bound, bool dynamic_ok) {
  if (d.sym) return dynamic_ok;
  return op == CMP_LT ? d.v < bound : op == CMP_LE ? d.v <= bound : d.v >= bound;
}

static const char *devname(Dev d) { return d == DEV_CUDA ? "cuda" : d == DEV_CPU ? "cpu" : "other"; }

/* mat1 @ mat2 (2-D): upstream's should_decompose_mm; why filled when false */
static bool should_mm(const OxPassOptions *o, const OxTensorMeta *a, const OxTensorMeta *b, char *why, size_t cap) {
  bool dyn = o->skip_dynamic_shape_dim_check;
  Dev da = device_of(a), db = device_of(b);
  if (da != db || (da != DEV_CUDA && da != DEV_CPU)) {
    snprintf(why, cap, "operands on %s and %s: only cuda or cpu operands on one device are decomposed",
             da == DEV_UNKNOWN ? "an unknown device" : devname(da), db == DEV_UNKNOWN ? "an unknown device" : devname(db));
    return false;
  }
  if (da == DEV_CUDA) {
    if (size_ok(a->shape[0], CMP_GE, o->min_first_dimension_decomposition, dyn) &&
        size_ok(b->shape[0], CMP_LT, o->max_other_dimension_decomposition, dyn) &&
        size_ok(b->shape[1], CMP_LT, o->max_other_dimension_decomposition, dyn))
      return true;
    snprintf(why, cap, "cuda: needs rows >= %d (min_first_dimension_decomposition) and mat2 dims < %d "
             "(max_other_dimension_decomposition)",
             o->min_first_dimension_decomposition, o->max_other_dimension_decomposition);
    return false;
  }
  if (size_ok(a->shape[0], CMP_LE, o->cpu_max_first_dimension_decomposition, dyn) &&
      size_ok(b->shape[0], CMP_LE, o->cpu_max_other_dimension_decomposition, dyn) &&
      size_ok(b->shape[1], CMP_LE, o->cpu_max_other_dimension_decomposition, dyn))
    return true;
  snprintf(why, cap, "cpu: needs rows <= %d (cpu_max_first_dimension_decomposition) and mat2 dims <= %d "
           "(cpu_max_other_dimension_decomposition)",
           o->cpu_max_first_dimension_decomposition, o->cpu_max_other_dimension_decomposition);
  return false;
}

/* batch1 @ batch2 (3-D): upstream's should_decompose_bmm */
static bool should_bmm(const OxPassOptions *o, const OxTensorMeta *a, const OxTensorMeta *b, char *why, size_t cap) {
  Dev da = device_of(a), db = device_of(b);
  if (da != db || (da != DEV_CUDA && da != DEV_CPU)) {
    snprintf(why, cap, "operands on %s and %s: only cuda or cpu operands on one device are decomposed",
             da == DEV_UNKNOWN ? "an unknown device" : devname(da), db == DEV_UNKNOWN ? "an unknown device" : devname(db));
    return false;
  }
  for (int i = 0; i < 3; i++)
    if (a->shape[i].sym || b->shape[i].sym) {
      snprintf(why, cap, "symbolic sizes");
      return false;
    }
  if (da == DEV_CUDA) {
    int64_t mo = o->max_other_dimension_decomposition;
    int small = (a->shape[1].v < mo) + (a->shape[2].v < mo) + (b->shape[2].v < mo);
    if (a->shape[0].v >= o->min_first_dimension_decomposition && small >= 2) return true;
    snprintf(why, cap, "cuda: needs batch >= %d and two of m, k, n < %d", o->min_first_dimension_decomposition, (int)mo);
    return false;
  }
  if (a->shape[0].v <= o->cpu_max_first_dimension_decomposition && b->shape[0].v <= o->cpu_max_first_dimension_decomposition)
    return true;
  snprintf(why, cap, "cpu: needs batch <= %d (cpu_max_first_dimension_decomposition)",
           o->cpu_max_first_dimension_decomposition);
  return false;
}

/* target in the matched node's spelling family ("torch.ops." + aten name, or just it) */
static const char *aten_t(OxGraph *g, OxNodeId like, const char *aten_name) {
  char buf[160];
  const char *t = g->nodes[like].target;
  const char *p = strstr(t, "aten.");
  snprintf(buf, sizeof buf, "%.*s%s", p ? (int)(p - t) : 0, t, aten_name);
  return ox_graph_intern(g, buf);
}

static int h_decompose(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  OxGraph *g = c->g;
  OxNodeId n = m->anchor;
  const OxNode *mn = &g->nodes[n];
  const OxSpelling *sp = NULL;
  OxOpId op = opof(g, n, &sp);
  if (!sp || sp->level != OX_LEVEL_ATEN) return 0;
  /* upstream's patterns: CallFunction(aten.mm, Arg(), Arg()) etc., positional, no kwargs */
  uint32_t want = op == OX_OPID_ADDMM ? 3 : 2;
  if (mn->args.n != want || mn->kwargs.n) {
    rejectf(c, e->name, n, &n, 1, "%s: not %s with %u positional arguments and no keywords", mn->name,
            op == OX_OPID_ADDMM ? "addmm" : op == OX_OPID_BMM ? "bmm" : "mm", want);
    return 0;
  }
  OxNodeId args[3];
  for (uint32_t i = 0; i < want; i++) {
    if (mn->args.u.items[i].kind != OX_V_NODE) return 0;
    args[i] = mn->args.u.items[i].u.node;
  }
  OxNodeId a = args[want - 2], b = args[want - 1];
  const OxNode *an = &g->nodes[a], *bn = &g->nodes[b];
  const OxTensorMeta *at = an->meta.kind == OX_META_TENSOR ? an->meta.t : NULL;
  const OxTensorMeta *bt = bn->meta.kind == OX_META_TENSOR ? bn->meta.t : NULL;
  if (!at || !bt || at->rank < 0 || bt->rank < 0) {
    reject_meta(c, e->name, n, at ? b : a, false);
    return 0;
  }
  int rank = op == OX_OPID_BMM ? 3 : 2;
  if (at->rank != rank || bt->rank != rank) {
    rejectf(c, e->name, n, &n, 1, "operands are not %d-D", rank);
    return 0;
  }
  if (!ox_dtype_is_float(at->dtype)) {
    rejectf(c, e->name, n, &n, 1, "%s is %s: only floating-point matmuls are decomposed here", an->name,
            ox_dtype_abbr(at->dtype));
    return 0;
  }
  char why[256];
  bool ok = op == OX_OPID_BMM ? should_bmm(c->opt, at, bt, why, sizeof why) : should_mm(c->opt, at, bt, why, sizeof why);
  if (!ok) {
    rejectf(c, e->name, n, &n, 1, "%s", why);
    return 0;
  }
  ox_pat_step_begin(c, e, m);
  OxValue none = ox_value_none();
  OxNodeId ua = mk(g, n, OX_OP_CALL_FUNCTION, aten_t(g, n, "aten.unsqueeze.default"), tup(g, 2, V(a), I(rank)), none);
  OxNodeId ub = mk(g, n, OX_OP_CALL_FUNCTION, aten_t(g, n, "aten.unsqueeze.default"),
                   tup(g, 2, V(b), I(rank == 3 ? 1 : 0)), none);
  OxNodeId mul = mk(g, n, OX_OP_CALL_FUNCTION, aten_t(g, n, "aten.mul.Tensor"), tup(g, 2, V(ua), V(ub)), none);
  OxValue dims[1] = {I(-2)};
  OxNodeId r = mk(g, n, OX_OP_CALL_FUNCTION, aten_t(g, n, "aten.sum.dim_IntList"),
                  tup(g, 2, V(mul), ox_graph_value_seq(g, OX_V_LIST, dims, 1)), none);
  if (op == OX_OPID_ADDMM)
    r = mk(g, n, OX_OP_CALL_FUNCTION, aten_t(g, n, "aten.add.Tensor"), tup(g, 2, V(r), V(args[0])), none);
  ox_graph_replace_all_uses(g, n, r);
  ox_graph_erase(g, n);
  if (!ox_step_commit(c)) return 0;
  ox_counter_add(c, op == OX_OPID_BMM ? "decompose_bmm" : op == OX_OPID_ADDMM ? "decompose_addmm" : "decompose_mm", 1);
  return 1;
}

int ox_misc_decompose_mm_pass(OxPassCtx *c) {
  OxPatPool *p = ox_pat_pool_new();
  OX_PAT_LOC(p);
  OxOpId bmm[] = {OX_OPID_BMM}, addmm[] = {OX_OPID_ADDMM}, mm[] = {OX_OPID_MM};
  OxPatEntry es[] = {
    {"decompose_bmm", ox_pat_call_varargs(p, OX_PAT_FUNCTION, bmm, 1), NULL, h_decompose, NULL},
    {"decompose_addmm", ox_pat_call_varargs(p, OX_PAT_FUNCTION, addmm, 1), NULL, h_decompose, NULL},
    {"decompose_mm", ox_pat_call_varargs(p, OX_PAT_FUNCTION, mm, 1), NULL, h_decompose, NULL},
  };
  for (size_t i = 0; i < sizeof es / sizeof es[0]; i++) ox_pat_call_users((OxPat *)es[i].pattern, OX_PAT_USERS_ANY);
  int r = ox_pat_pass_run(c, es, 3);
  ox_pat_pool_free(p);
  return r;
}
