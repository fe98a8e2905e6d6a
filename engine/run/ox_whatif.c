/* ox_whatif.c - what-if re-runs (ox_whatif.h): the pipeline again with changed options or
 * refused rewrites, compared with the base run decision by decision.
 *
 * Invariants: the input, the pipeline and the base trace are only read. The alternative starts
 * from a clone of the input; when the change cannot affect the passes before pipeline entry E
 * (their options are unchanged and no veto names them), the base's rewrites of those passes are
 * replayed from its edit scripts instead of being searched for and checked again. That needs the
 * base's records to be attributable to pipeline entries: every entry's records are a contiguous
 * run named after its pass, which holds when no pass appears twice in the pipeline; otherwise
 * (or when the base's records do not walk the pipeline) the alternative runs from the input.
 * Node counts follow `optimus info` (the output node is not counted); the base's comes from
 * its records (each graph step changes the count by added - removed), the alternative's from
 * its graph.
 */
#include "run/ox_whatif.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/ox_mem.h"
#include "run/ox_canon.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t count_nodes(const OxGraph *g) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id) n += g->nodes[id].op != OX_OP_OUTPUT;
  return n;
}

void ox_whatif_result_free(OxWhatifResult *r) {
  if (!r) return;
  ox_graph_free(r->graph);
  ox_trace_free(r->trace);
  ox_trace_free(r->base_own);
  ox_pipeline_free(&r->pipeline);
  free(r->decisions);
  free(r->vetoes);
  memset(r, 0, sizeof *r);
}

const OxStep *ox_whatif_base_step(const OxWhatifResult *r, const OxWhatifDecision *x) {
  return r->base && x->base_seq < r->base->n_steps ? &r->base->steps[x->base_seq] : NULL;
}

const OxStep *ox_whatif_alt_step(const OxWhatifResult *r, const OxWhatifDecision *x) {
  return r->trace && x->alt_seq < r->trace->n_steps ? &r->trace->steps[x->alt_seq] : NULL;
}

/* ------------------------------------------------------------------ comparing decisions
 *
 * Decisions are compared on canonical names (run/ox_canon.h: a node a step added is named after
 * that step, not by its creation-order name). Both runs are walked forward once, the map updated
 * after each applied step; the alternative's walk starts from the base's map at the point it
 * departs from. */

static const char *str_or(const char *s) { return s ? s : ""; }

typedef struct Keyed {
  char *key;
  uint32_t seq;
  bool used;
} Keyed;

static int cmp_keyed(const void *a, const void *b) {
  const Keyed *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* The records of t [from, end): applied ones keyed by decision, the others (and, in other2,
 * the applied ones too) by pass+anchor, with the canonical names of m, which is advanced. */
static void keyed_collect(const OxTrace *t, uint32_t from, OxCanonMap *m, Keyed **applied, uint32_t *na, Keyed **other,
                          uint32_t *no) {
  *na = *no = 0;
  uint32_t n = t->n_steps > from ? t->n_steps - from : 0;
  *applied = ox_xcalloc(n + 1, sizeof **applied);
  *other = ox_xcalloc(n + 1, sizeof **other);
  for (uint32_t i = from; i < t->n_steps; i++) {
    const OxStep *s = &t->steps[i];
    if (s->kind == OX_STEP_APPLIED)
      (*applied)[(*na)++] = (Keyed){ox_canon_step_key(m, s, true), i, false};
    else
      (*other)[(*no)++] = (Keyed){ox_canon_step_key(m, s, false), i, false};
    ox_canon_after(m, s);
  }
  qsort(*applied, *na, sizeof **applied, cmp_keyed);
  qsort(*other, *no, sizeof **other, cmp_keyed);
}

static void keyed_free(Keyed *k, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) free(k[i].key);
  free(k);
}

/* The first record of `other` with the pass and anchor of an applied key (its part before the
 * matched names). */
static uint32_t find_other(const Keyed *other, uint32_t n, const char *applied_key) {
  size_t len = strcspn(applied_key, "\x1e");
  char *want = ox_xrealloc(NULL, len + 1);
  memcpy(want, applied_key, len);
  want[len] = 0;
  uint32_t lo = 0, hi = n; /* the first key >= want */
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (strcmp(other[mid].key, want) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  uint32_t r = lo < n && strcmp(other[lo].key, want) == 0 ? other[lo].seq : OX_WHATIF_NONE;
  free(want);
  return r;
}

static void push_decision(OxWhatifResult *r, uint32_t *cap, OxWhatifChange c, uint32_t base_seq, uint32_t alt_seq) {
  if (r->n_decisions == *cap) {
    *cap = *cap ? *cap * 2 : 16;
    r->decisions = ox_xrealloc(r->decisions, *cap * sizeof *r->decisions);
  }
  r->decisions[r->n_decisions++] = (OxWhatifDecision){(uint8_t)c, base_seq, alt_seq};
  if (c == OX_WHATIF_NEWLY_APPLIED)
    r->n_newly_applied++;
  else
    r->n_newly_rejected++;
}

typedef struct Pick {
  uint32_t seq;
  const char *key;
} Pick;

static int cmp_pick(const void *a, const void *b) {
  uint32_t x = ((const Pick *)a)->seq, y = ((const Pick *)b)->seq;
  return (x > y) - (x < y);
}

static void compare(OxWhatifResult *r, const OxTrace *base, uint32_t base_from) {
  OxCanonMap mb = {0}, ma;
  for (uint32_t i = 0; i < base_from && i < base->n_steps; i++) ox_canon_after(&mb, &base->steps[i]);
  ox_canon_copy(&ma, &mb);
  Keyed *ba, *bo, *aa, *ao;
  uint32_t nba, nbo, naa, nao;
  keyed_collect(base, base_from, &mb, &ba, &nba, &bo, &nbo);
  keyed_collect(r->trace, 0, &ma, &aa, &naa, &ao, &nao);
  /* merge the two sorted multisets of applied decisions */
  uint32_t i = 0, j = 0;
  while (i < nba && j < naa) {
    int c = strcmp(ba[i].key, aa[j].key);
    if (c == 0) {
      ba[i++].used = true;
      aa[j++].used = true;
    } else if (c < 0) {
      i++;
    } else {
      j++;
    }
  }
  uint32_t cap = 0;
  Pick *order = ox_xcalloc((naa > nba ? naa : nba) + 1, sizeof *order);
  uint32_t k = 0;
  /* newly applied, in the alternative's order */
  for (j = 0; j < naa; j++)
    if (!aa[j].used) order[k++] = (Pick){aa[j].seq, aa[j].key};
  qsort(order, k, sizeof *order, cmp_pick);
  for (uint32_t q = 0; q < k; q++)
    push_decision(r, &cap, OX_WHATIF_NEWLY_APPLIED, find_other(bo, nbo, order[q].key), order[q].seq);
  /* newly rejected, in the base's order */
  k = 0;
  for (i = 0; i < nba; i++)
    if (!ba[i].used) order[k++] = (Pick){ba[i].seq, ba[i].key};
  qsort(order, k, sizeof *order, cmp_pick);
  for (uint32_t q = 0; q < k; q++)
    push_decision(r, &cap, OX_WHATIF_NEWLY_REJECTED, order[q].seq, find_other(ao, nao, order[q].key));
  free(order);
  keyed_free(ba, nba);
  keyed_free(bo, nbo);
  keyed_free(aa, naa);
  keyed_free(ao, nao);
  ox_canon_free(&mb);
  ox_canon_free(&ma);
}

/* ------------------------------------------------------------------ the run */

/* Where each pipeline entry's records begin in t (begin[n] = t->n_steps); false when the
 * records cannot be attributed (a pass twice in the pipeline, or records out of its order). */
static bool map_entries(const OxPipeline *p, const OxTrace *t, uint32_t *begin) {
  for (uint32_t i = 0; i < p->n; i++)
    for (uint32_t j = i + 1; j < p->n; j++)
      if (strcmp(p->entries[i].pass->name, p->entries[j].pass->name) == 0) return false;
  uint32_t s = 0;
  for (uint32_t i = 0; i < p->n; i++) {
    begin[i] = s;
    while (s < t->n_steps && t->steps[s].pass && strcmp(t->steps[s].pass, p->entries[i].pass->name) == 0) s++;
  }
  begin[p->n] = s;
  return s == t->n_steps;
}

static bool options_equal(const OxPassOptions *a, const OxPassOptions *b) {
  return a->min_fuse_set_size == b->min_fuse_set_size && a->max_fuse_set_size == b->max_fuse_set_size &&
         a->max_fuse_search_depth == b->max_fuse_search_depth &&
         a->max_fuse_tensor_size_group_linear == b->max_fuse_tensor_size_group_linear &&
         a->fuse_nodes_with_same_parent == b->fuse_nodes_with_same_parent &&
         a->fuse_nodes_with_same_users == b->fuse_nodes_with_same_users &&
         a->shape_broadcast_batch_linear == b->shape_broadcast_batch_linear &&
         a->require_fbgemm == b->require_fbgemm && a->threshold_to_cat == b->threshold_to_cat &&
         a->counter == b->counter && a->has_min_payoff == b->has_min_payoff &&
         (!a->has_min_payoff || a->min_payoff == b->min_payoff);
}

static void set_trace_config(OxTrace *t, const OxPipeline *p, const OxCheckConfig *checks) {
  OxBuf b;
  ox_buf_init(&b);
  ox_pipeline_to_json(p, &b);
  t->config = ox_trace_intern(t, b.data ? b.data : "{}");
  b.len = 0;
  const char *names[3] = {"structure", "shape", "numeric"};
  bool on[3] = {checks->structure, checks->shape, checks->numeric};
  for (int i = 0; i < 3; i++)
    if (on[i]) ox_buf_printf(&b, "%s%s", b.len ? "," : "", names[i]);
  t->checks = ox_trace_intern(t, b.len ? b.data : "none");
  ox_buf_free(&b);
}

/* Runs entries [from, p->n) of p on g into t, one at a time (cancel is checked between them). */
static int run_entries(OxGraph *g, const OxPipeline *p, uint32_t from, const OxStepVeto *vetoes, uint32_t n_vetoes,
                       const OxCheckConfig *checks, OxTrace *t, atomic_bool *cancel, OxDiagList *d) {
  for (uint32_t i = from; i < p->n; i++) {
    if (cancel && atomic_load(cancel)) {
      ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "cancelled");
      return -1;
    }
    OxPipeline one = {.entries = &p->entries[i], .n = 1, .budget = p->budget};
    OxOptimizeResult res;
    if (ox_optimize_vetoed(g, &one, vetoes, n_vetoes, checks, t, &res, d) != 0) return -1;
  }
  return 0;
}

int ox_whatif_run(const OxGraph *input, const OxPipeline *p, const OxCheckConfig *checks, const OxTrace *base,
                  const OxWhatifSpec *spec, OxWhatifResult *out, OxDiagList *d) {
  double t0 = now_s();
  memset(out, 0, sizeof *out);
  OxWhatifSpec none = {0};
  if (!spec) spec = &none;
  OxCheckConfig def_checks;
  if (!checks) {
    ox_check_config_default(&def_checks);
    checks = &def_checks;
  }
  uint32_t input_nodes = count_nodes(input);
  /* the base: the caller's (on this very input), or recorded now */
  if (base) {
    char h[32];
    snprintf(h, sizeof h, "%016llx", (unsigned long long)ox_graph_structure_hash(input));
    if (base->input_hash && strcmp(base->input_hash, h) != 0) {
      ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL,
                  "what-if: the base trace was recorded on another graph (structure hash %s, this graph has %s)",
                  base->input_hash, h);
      return -1;
    }
  } else {
    OxGraph *bg = ox_graph_clone(input);
    OxTrace *bt = ox_trace_new_for(bg);
    set_trace_config(bt, p, checks);
    int rc = run_entries(bg, p, 0, NULL, 0, checks, bt, spec->cancel, d);
    ox_graph_free(bg);
    if (rc != 0) {
      ox_trace_free(bt);
      return -1;
    }
    out->base_own = bt;
    base = bt;
  }
  out->base = base;
  /* the alternative's pipeline: the base's with the options changed */
  out->pipeline.entries = ox_xcalloc(p->n + 1, sizeof *out->pipeline.entries);
  memcpy(out->pipeline.entries, p->entries, p->n * sizeof *p->entries);
  out->pipeline.n = p->n;
  int errors = 0;
  for (uint32_t i = 0; i < spec->n_options; i++)
    if (ox_pipeline_set_option(&out->pipeline, spec->options[i], d) != 0) errors++;
  /* the refused rewrites: applied steps of the base */
  if (spec->n_skip) {
    out->vetoes = ox_xcalloc(spec->n_skip, sizeof *out->vetoes + 96);
    char *text = (char *)(out->vetoes + spec->n_skip);
    for (uint32_t i = 0; i < spec->n_skip; i++) {
      uint32_t seq = spec->skip[i];
      const OxStep *s = seq < base->n_steps ? &base->steps[seq] : NULL;
      if (!s || s->kind != OX_STEP_APPLIED) {
        ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "what-if: step #%u %s", seq + 1,
                    !s ? "is not in the base trace" : "is not an applied step: there is no rewrite to skip");
        errors++;
        continue;
      }
      if (!s->anchor) {
        ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "what-if: step #%u has no anchor to recognise it by", seq + 1);
        errors++;
        continue;
      }
      char *why = text + (size_t)i * 96;
      snprintf(why, 96, "skipped by the what-if (step #%u of the base run)", seq + 1);
      out->vetoes[out->n_vetoes++] = (OxStepVeto){s->pass, s->rule, s->anchor, why};
    }
  }
  if (errors) {
    ox_whatif_result_free(out);
    return -1;
  }
  /* the first entry the change can affect */
  uint32_t first = p->n;
  for (uint32_t i = 0; i < p->n && first == p->n; i++) {
    if (!options_equal(&p->entries[i].opt, &out->pipeline.entries[i].opt)) first = i;
    for (uint32_t v = 0; v < out->n_vetoes && first == p->n; v++)
      if (strcmp(out->vetoes[v].pass, p->entries[i].pass->name) == 0) first = i;
  }
  out->first_entry = first;
  uint32_t *begin = ox_xcalloc(p->n + 1, sizeof *begin);
  bool mapped = !spec->full && map_entries(p, base, begin);
  uint32_t from_entry = mapped ? first : 0;
  out->alt_from = mapped ? begin[first] : 0;
  free(begin);
  /* the alternative: the base's rewrites before alt_from replayed, the rest run */
  OxGraph *g = ox_graph_clone(input);
  uint32_t k = 0, prefix_applied = 0;
  for (uint32_t i = 0; i < out->alt_from; i++) {
    if (base->steps[i].applied_index > k) k = base->steps[i].applied_index;
    prefix_applied += base->steps[i].kind == OX_STEP_APPLIED;
  }
  if (k && ox_replay(g, base, k, d) != 0) {
    ox_graph_free(g);
    ox_whatif_result_free(out);
    return -1;
  }
  OxTrace *t = ox_trace_new_for(g);
  set_trace_config(t, &out->pipeline, checks);
  out->trace = t;
  out->graph = g;
  if (run_entries(g, &out->pipeline, from_entry, out->vetoes, out->n_vetoes, checks, t, spec->cancel, d) != 0) {
    ox_whatif_result_free(out);
    return -1;
  }
  /* counts */
  int64_t bn = input_nodes;
  for (uint32_t i = 0; i < base->n_steps; i++) {
    const OxStep *s = &base->steps[i];
    if (s->applied_index) bn += (int64_t)s->n_added - (int64_t)s->n_removed;
    out->base_applied += s->kind == OX_STEP_APPLIED;
  }
  out->base_nodes = bn > 0 ? (uint32_t)bn : 0;
  out->alt_nodes = count_nodes(g);
  out->alt_applied = prefix_applied + t->n_applied;
  compare(out, base, out->alt_from);
  out->seconds = now_s() - t0;
  return 0;
}

/* ------------------------------------------------------------------ hints */

static bool names_contain(const char *const *names, uint32_t n, const char *x) {
  for (uint32_t i = 0; x && i < n; i++)
    if (strcmp(names[i], x) == 0) return true;
  return false;
}

uint32_t ox_whatif_fires(const OxWhatifResult *r, const OxStep *s) {
  if (!r->trace || !s || !s->pass) return OX_WHATIF_NONE;
  for (uint32_t i = 0; i < r->trace->n_steps; i++) {
    const OxStep *a = &r->trace->steps[i];
    if (a->kind != OX_STEP_APPLIED || !a->pass || strcmp(a->pass, s->pass) != 0) continue;
    /* the group rewritten together: every node s matched (or, without any, its anchor) */
    bool all = s->n_matched || s->anchor;
    for (uint32_t j = 0; j < s->n_matched && all; j++) all = names_contain(a->matched, a->n_matched, s->matched[j]);
    if (!s->n_matched && s->anchor)
      all = (a->anchor && strcmp(a->anchor, s->anchor) == 0) || names_contain(a->matched, a->n_matched, s->anchor);
    if (all) return i;
  }
  return OX_WHATIF_NONE;
}

static bool parse_count(const char *s, long *out) {
  if (!s || !*s) return false;
  char *end;
  long v = strtol(s, &end, 10);
  if (*end || v < 0 || v > 1000000000) return false;
  *out = v;
  return true;
}

uint32_t ox_whatif_candidates(const OxPipeline *p, const OxStep *s, char (*out)[OX_WHATIF_OPTION_MAX], uint32_t max) {
  if (!s || s->kind != OX_STEP_REJECTED || !s->pass || !max) return 0;
  const OxPassInfo *pass = NULL;
  for (uint32_t i = 0; p && i < p->n && !pass; i++)
    if (strcmp(p->entries[i].pass->name, s->pass) == 0) pass = p->entries[i].pass;
  if (!pass) pass = ox_pass_find(s->pass);
  if (!pass) return 0;
  const OxReason *r = &s->reason;
  const char *a0 = r->n_args > 0 ? r->args[0] : NULL, *a1 = r->n_args > 1 ? r->args[1] : NULL;
  long v0, v1;
  uint32_t n = 0;
  switch ((OxReasonCode)r->code) {
  case OX_REASON_SET_TOO_SMALL:
    /* "set of N < min_fuse_set_size M" (batch) or "< threshold_to_cat M" (split/cat) */
    if (parse_count(a0, &v0) && parse_count(a1, &v1) && v0 < v1)
      snprintf(out[n++], OX_WHATIF_OPTION_MAX, "%s.%s=%ld", s->pass,
               pass->engine == OX_ENGINE_BATCH ? "min_fuse_set_size" : "threshold_to_cat", v0);
    break;
  case OX_REASON_SET_CAPPED:
    /* "set capped at max_fuse_set_size M; D candidates deferred" */
    if (parse_count(a0, &v0) && parse_count(a1, &v1) && v1 > 0)
      snprintf(out[n++], OX_WHATIF_OPTION_MAX, "%s.max_fuse_set_size=%ld", s->pass, v0 + v1);
    break;
  case OX_REASON_GUARD_FAILED:
    /* group_linear: "max-size: X has a dim of D > max_fuse_tensor_size_group_linear M" */
    if (a0 && strcmp(a0, "max-size") == 0 && a1) {
      const char *q = strstr(a1, "a dim of ");
      if (q) {
        long d = strtol(q + 9, NULL, 10);
        if (d > 0) snprintf(out[n++], OX_WHATIF_OPTION_MAX, "%s.max_fuse_tensor_size_group_linear=%ld", s->pass, d);
      }
    }
    break;
  default: break;
  }
  return n;
}

/* ------------------------------------------------------------------ report */

static void put_step(OxBuf *b, const char *label, const OxStep *s) {
  ox_buf_printf(b, "%s #%u ", label, s->seq + 1);
  if (s->kind == OX_STEP_APPLIED) {
    ox_buf_printf(b, "applied, -%u +%u nodes", s->n_removed, s->n_added);
  } else {
    char *why = ox_reason_format(&s->reason);
    ox_buf_printf(b, "%s: %s", s->kind == OX_STEP_REJECTED ? "rejected" : "check failed", why ? why : "");
    free(why);
  }
}

void ox_whatif_format(const OxWhatifResult *r, const OxWhatifSpec *spec, OxBuf *out) {
  ox_buf_puts(out, "what-if:");
  for (uint32_t i = 0; spec && i < spec->n_options; i++) ox_buf_printf(out, " --option %s", spec->options[i]);
  for (uint32_t i = 0; i < r->n_vetoes; i++) ox_buf_printf(out, " --skip %s@%s", r->vetoes[i].pass, r->vetoes[i].anchor);
  if ((!spec || !spec->n_options) && !r->n_vetoes) ox_buf_puts(out, " (no change)");
  ox_buf_printf(out, "\n  nodes %u -> %u (%+lld); applied steps %u -> %u; %u newly applied, %u newly rejected\n",
                r->base_nodes, r->alt_nodes, (long long)r->alt_nodes - (long long)r->base_nodes, r->base_applied,
                r->alt_applied, r->n_newly_applied, r->n_newly_rejected);
  if (r->alt_from) ox_buf_printf(out, "  (base records #1-#%u replayed, the rest re-run)\n", r->alt_from);
  for (uint32_t i = 0; i < r->n_decisions; i++) {
    const OxWhatifDecision *x = &r->decisions[i];
    const OxStep *b = ox_whatif_base_step(r, x), *a = ox_whatif_alt_step(r, x);
    const OxStep *main = x->change == OX_WHATIF_NEWLY_APPLIED ? a : b;
    ox_buf_printf(out, "  %c %s%s%s at %s: ", x->change == OX_WHATIF_NEWLY_APPLIED ? '+' : '-', str_or(main->pass),
                  main->rule ? " / " : "", str_or(main->rule), main->anchor ? main->anchor : "?");
    if (x->change == OX_WHATIF_NEWLY_APPLIED) {
      put_step(out, "re-run", a);
      if (b) {
        ox_buf_puts(out, " (");
        put_step(out, "base", b);
        ox_buf_puts(out, ")");
      }
    } else {
      ox_buf_printf(out, "not applied (base #%u: -%u +%u nodes)", b->seq + 1, b->n_removed, b->n_added);
      if (a) {
        ox_buf_puts(out, "; ");
        put_step(out, "re-run", a);
      } else {
        ox_buf_puts(out, "; the re-run did not attempt it");
      }
    }
    ox_buf_putc(out, '\n');
  }
}
