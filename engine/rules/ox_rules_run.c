/* ox_rules_run.c - running pattern rules: the OxPatEntry handler that evaluates a rule's
 * clauses and replacement statements inside one step, and the pass runner.
 *
 * A rejected guard or a failing statement aborts the step (rolled back) and records a
 * rejection stamped with the rule's file and the failing line; applied steps carry the rule's
 * name and line. New nodes go right before the earliest targeted node; created nodes left
 * unused and matched nodes left without users are erased, mutating nodes never.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/ox_rules_private.h"

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
  ev->aten = ox_rules_node_is_aten(c->g, m->anchor);
  ev->torch_ops = strncmp(c->g->nodes[m->anchor].target, "torch.ops.", 10) == 0;
  for (uint32_t i = 0; i < r->n_syms; i++) {
    const Sym *s = &r->syms[i];
    if (s->kind != SYM_CAPTURE) continue;
    if (s->in_list) { /* bundled: one value per matched element */
      uint32_t cnt = 0;
      for (uint32_t k = 0; k < m->n_caps; k++)
        if (m->caps[k].name && strcmp(m->caps[k].name, s->name) == 0) cnt++;
      RV *it = ox_rules_rv_alloc(ev, cnt);
      cnt = 0;
      for (uint32_t k = 0; k < m->n_caps; k++)
        if (m->caps[k].name && strcmp(m->caps[k].name, s->name) == 0)
          it[cnt++] = ox_rules_rv_from_value(ev, m->caps[k].value, true);
      ev->env[i] = ox_rules_rv_list(it, cnt);
      continue;
    }
    for (uint32_t k = 0; k < m->n_caps; k++)
      if (!m->caps[k].in_list && m->caps[k].name && strcmp(m->caps[k].name, s->name) == 0) {
        ev->env[i] = ox_rules_rv_from_value(ev, m->caps[k].value, true);
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
  if (t->k != V_NODE)
    return ox_rules_everr(ev, "replace: %s is not a node (%s)", st->name, ox_rules_rv_kind_name(t));
  const OxNode *n = ox_graph_node(ev->g, t->u.node);
  if (!n || n->erased) return ox_rules_everr(ev, "replace: %s was already replaced", st->name);
  *out = t->u.node;
  return true;
}

static bool want_result(Ev *ev, const Stmt *st, const RV *v, OxNodeId *out) {
  if (v->k != V_NODE) {
    char b[96];
    return ox_rules_everr(ev, "replace: %s needs a node, got %s %s", st->name, ox_rules_rv_kind_name(v),
                          ox_rules_rv_text(ev, v, b, sizeof b));
  }
  const OxNode *n = ox_graph_node(ev->g, v->u.node);
  if (!n || n->erased) return ox_rules_everr(ev, "replace: the replacement of %s no longer exists", st->name);
  *out = v->u.node;
  return true;
}

static bool run_stmt(Ev *ev, const Stmt *st) {
  OxGraph *g = ev->g;
  RV v = {0};
  OxNodeId t, nv;
  switch (st->k) {
  case ST_LET:
    if (!ox_rules_eval(ev, st->e, &v)) return false;
    ev->env[st->slot] = v;
    return true;
  case ST_REPLACE:
    if (!target_node(ev, st, &t) || !ox_rules_eval(ev, st->e, &v) || !want_result(ev, st, &v, &nv))
      return false;
    ox_rules_replace_uses(ev, t, nv);
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
      ev->env[st->var_slot] = ox_rules_rv_int(u->args.u.items[1].u.i);
      if (st->cond) {
        RV c;
        bool b = false;
        if (!ox_rules_eval(ev, st->cond, &c) || !ox_rules_want_bool(ev, st->cond, &c, &b)) {
          ok = false;
          break;
        }
        if (!b) continue;
      }
      if (!ox_rules_eval(ev, st->e, &v) || !want_result(ev, st, &v, &nv))
        ok = false;
      else
        ox_rules_replace_uses(ev, us[i], nv);
    }
    free(us);
    ev->env[st->var_slot] = (RV){.k = V_UNSET};
    return ok;
  }
  case ST_FOR: {
    RV l;
    ev->tmpl = false; /* the list and the targets only read */
    bool ok = ox_rules_eval(ev, st->list, &l) && ox_rules_want_list(ev, &l, "for");
    for (uint32_t i = 0; ok && i < l.n; i++) {
      RV tv;
      ev->env[st->var_slot] = l.u.items[i];
      ev->tmpl = false;
      if (!ox_rules_eval(ev, st->tgt, &tv) || !want_result(ev, st, &tv, &t)) {
        ok = false;
        break;
      }
      ev->tmpl = true;
      if (!ox_rules_eval(ev, st->e, &v) || !want_result(ev, st, &v, &nv))
        ok = false;
      else
        ox_rules_replace_uses(ev, t, nv);
    }
    ev->tmpl = true;
    ev->env[st->var_slot] = (RV){.k = V_UNSET};
    return ok;
  }
  default:
    return ox_rules_everr(ev, "bad statement");
  }
}

int ox_rules_handler(OxPassCtx *c, const OxPatEntry *e, const OxPatMatch *m) {
  const Rule *r = e->data;
  OxGraph *g = c->g;
  bool aten = ox_rules_node_is_aten(g, m->anchor);
  /* a pre-grad rule leaves aten spellings alone, a post-grad rule the torch-level ones */
  if ((r->phase == OX_PHASE_PRE && aten) || (r->phase == OX_PHASE_POST && !aten)) return 0;
  Ev ev;
  ev_init(&ev, c, r, m);
  int result = 0;
  for (uint32_t i = 0; i < r->n_cl; i++) {
    const Clause *cl = &r->cl[i];
    RV v = {0};
    if (!ox_rules_eval(&ev, cl->e, &v)) {
      reject_ev(c, r, m, &ev, cl->line);
      goto done;
    }
    if (cl->k == CL_LET) {
      ev.env[cl->slot] = v;
      continue;
    }
    if (v.k != V_BOOL) {
      ox_rules_everr(&ev, "the guard gave %s, not a boolean", ox_rules_rv_kind_name(&v));
      reject_ev(c, r, m, &ev, cl->line);
      goto done;
    }
    if (v.u.b) continue;
    if (cl->k == CL_WHEN) goto done; /* not applicable: silent, like PyTorch's extra_check */
    OxBuf b;
    ox_buf_init(&b);
    ox_rules_explain_false(&ev, cl->e, r->src, &b);
    ev.failed = false;
    ox_rules_evfail(&ev, OX_REASON_GUARD_FAILED, "xx", cl->text, b.data ? b.data : "it is False");
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
      if (!ox_rules_eval(&ev, st->list, &l) || l.k != V_LIST) {
        ev.failed = false;
        continue;
      }
      for (uint32_t k = 0; k < l.n; k++) {
        ev.env[st->var_slot] = l.u.items[k];
        if (!ox_rules_eval(&ev, st->tgt, &tv) || tv.k != V_NODE || g->nodes[tv.u.node].erased) {
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
    ox_rules_everr(&ev, "replace: the rewrite would make the graph cyclic");
    reject_ev(c, r, m, &ev, r->line);
    goto done;
  }
  for (bool again = true; again;) {
    again = false;
    for (uint32_t j = 0; j < m->n_nodes; j++) {
      OxNodeId id = m->nodes[j];
      if (g->nodes[id].erased || g->nodes[id].n_users || ox_pat_is_mutating(g, id)) continue;
      ox_rules_erase_node(&ev, id);
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

int ox_rules_pass_run(OxPassCtx *c) {
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
