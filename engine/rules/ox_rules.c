/* ox_rules.c - the rule-file language (docs/rules.md): its public API (loading, freeing, the
 * passes and rules of a set). The language itself is split over this folder: ox_rules_lex.c
 * (lexer), ox_rules_parse.c (patterns and expressions), ox_rules_check.c (names and types),
 * ox_rules_compile.c (rule, pass and batch blocks into the rule set), ox_rules_eval.c (runtime
 * values and the evaluator of guards and templates), ox_rules_builtins.c (graph queries, node
 * creation, the builtin table) and ox_rules_run.c (running pattern rules inside steps); their
 * shared types are in ox_rules_private.h.
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

#include "rules/ox_rules_private.h"

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
  const char *nul = p.len ? memchr(p.src, '\0', p.len) : NULL;
  if (nul) {
    /* a binary file (or a text with a NUL in it) is not a rule file: one located error */
    uint32_t line = 1, col = 1;
    for (const char *c = p.src; c < nul; c++) {
      if (*c == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    ox_diag_add(p.d, OX_SEV_ERROR, line, col, NULL, "NUL byte: a binary file, not a rule file");
    p.errors++;
  } else {
    ox_rules_lex(&p);
    ox_rules_parse_file(&p);
  }
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
    rp->info.run = ox_rules_pass_run;
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
      rp->entries[k] = (OxPatEntry){r->name, r->pattern, NULL, ox_rules_handler, r};
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
  if (!pass || pass->run != ox_rules_pass_run) return NULL;
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
