/* ox_driver.c - pipelines, the greedy driver, replay and explain.
 *
 * ox_optimize runs the pipeline's passes in order on one graph, each with its own options,
 * recording every step in the trace; counters are PyTorch's names. A pass sees the graph in
 * a topological order (stable toposort before each pass, as upstream does before each batch
 * rule), so passes may insert out of order.
 *
 * Every pass (an entry with all its repetitions) runs under budgets (OxBudget: applied steps,
 * growth relative to its input, wall time): ox_step_commit charges them, the pass stops at its
 * next anchor once one is spent, and the driver records a BUDGET rejection and a warning and
 * goes on with the next pass. So no pipeline runs without bound, whatever rules it holds.
 *
 * ox_replay rebuilds the graph after applied step k from the input graph and the trace's edit
 * scripts alone (no matching is re-run), after checking that the trace was recorded on a
 * graph with the same structure hash.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"
#include "passes/ox_batch.h"
#include "passes/ox_pass.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ox_pass_options_default(OxPassOptions *o) {
  memset(o, 0, sizeof *o);
  o->min_fuse_set_size = 5;
  o->max_fuse_set_size = 300;
  o->max_fuse_search_depth = 5;
  o->max_fuse_tensor_size_group_linear = 4096;
  o->threshold_to_cat = 10;
  o->counter = 1;
  o->cat_traffic_floor_bytes = 512 * 1024 * 1024;
  o->min_first_dimension_decomposition = 10240;
  o->max_other_dimension_decomposition = 32;
  o->cpu_max_first_dimension_decomposition = 1;
  o->cpu_max_other_dimension_decomposition = 2048;
}

void ox_check_config_default(OxCheckConfig *c) {
  memset(c, 0, sizeof *c);
  c->structure = c->shape = c->numeric = true;
  c->numeric_budget = 50000000ull;
  c->numeric_trials = 3;
  c->seed = 1337;
}

int ox_check_config_parse(const char *list, OxCheckConfig *c, char *err, size_t errcap) {
  c->structure = c->shape = c->numeric = false;
  if (strcmp(list, "all") == 0) {
    c->structure = c->shape = c->numeric = true;
    return 0;
  }
  if (strcmp(list, "none") == 0) return 0;
  const char *p = list;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 9 && strncmp(p, "structure", 9) == 0)
      c->structure = true;
    else if (n == 5 && strncmp(p, "shape", 5) == 0)
      c->shape = true;
    else if (n == 7 && strncmp(p, "numeric", 7) == 0)
      c->numeric = true;
    else {
      snprintf(err, errcap, "--checks: unknown check '%.*s' (use structure, shape, numeric, all or none)", (int)n, p);
      return -1;
    }
    p = e ? e + 1 : p + n;
  }
  return 0;
}

/* ------------------------------------------------------------------ pipelines */

const OxPassInfo *ox_pass_find(const char *name) {
  size_t n;
  const OxPassInfo *all = ox_passes(&n);
  for (size_t i = 0; i < n; i++)
    if (strcmp(all[i].name, name) == 0) return &all[i];
  return NULL;
}

/* A graph is post-grad when its calls are aten overloads. */
static OxPhase graph_phase(const OxGraph *g) {
  uint32_t aten = 0, calls = 0;
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    if (n->op != OX_OP_CALL_FUNCTION) continue;
    calls++;
    if (strncmp(n->target, "torch.ops.", 10) == 0 || strncmp(n->target, "aten.", 5) == 0) aten++;
  }
  return (calls && aten * 2 >= calls) ? OX_PHASE_POST : OX_PHASE_PRE;
}

static void pipeline_push(OxPipeline *p, const OxPassInfo *pass) {
  p->entries = ox_xrealloc(p->entries, (p->n + 1) * sizeof *p->entries);
  p->entries[p->n].pass = pass;
  ox_pass_options_default(&p->entries[p->n].opt);
  p->n++;
}

void ox_pipeline_default(const OxGraph *g, OxPipeline *out) {
  memset(out, 0, sizeof *out);
  OxPhase ph = graph_phase(g);
  size_t n;
  const OxPassInfo *all = ox_passes(&n);
  for (size_t i = 0; i < n; i++)
    if (all[i].phase == ph && !ox_pass_opt_in(&all[i])) pipeline_push(out, &all[i]);
}

int ox_pipeline_from_list(const char *list, OxPipeline *out, OxDiagList *d) {
  memset(out, 0, sizeof *out);
  const char *p = list;
  int errors = 0;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), p);
    const OxPassInfo *pass = ox_pass_find(name);
    if (!pass) {
      ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "--passes: unknown pass '%s' (see `optimus optimize --list-passes`)",
                  name);
      errors++;
    } else {
      pipeline_push(out, pass);
    }
    p = e ? e + 1 : p + n;
  }
  if (errors) ox_pipeline_free(out);
  return errors ? -1 : 0;
}

static bool parse_bool(const char *v, bool *out) {
  if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "True")) {
    *out = true;
    return true;
  }
  if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "False")) {
    *out = false;
    return true;
  }
  return false;
}

static bool parse_int(const char *v, int *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (!*v || *end || x < 0 || x > 1000000000) return false;
  *out = (int)x;
  return true;
}

/* Sets one option by name; returns 0, -1 unknown key, -2 bad value. */
int ox_pass_option_set(OxPassOptions *o, const char *key, const char *value) {
  struct {
    const char *name;
    int *i;
    bool *b;
  } table[] = {
    {"min_fuse_set_size", &o->min_fuse_set_size, NULL},
    {"max_fuse_set_size", &o->max_fuse_set_size, NULL},
    {"max_fuse_search_depth", &o->max_fuse_search_depth, NULL},
    {"max_fuse_tensor_size_group_linear", &o->max_fuse_tensor_size_group_linear, NULL},
    {"threshold_to_cat", &o->threshold_to_cat, NULL},
    {"counter", &o->counter, NULL},
    {"fuse_nodes_with_same_parent", NULL, &o->fuse_nodes_with_same_parent},
    {"fuse_nodes_with_same_users", NULL, &o->fuse_nodes_with_same_users},
    {"shape_broadcast_batch_linear", NULL, &o->shape_broadcast_batch_linear},
    {"require_fbgemm", NULL, &o->require_fbgemm},
    {"match_select_overload", NULL, &o->match_select_overload},
    {"cat_traffic_floor_bytes", &o->cat_traffic_floor_bytes, NULL},
    {"min_first_dimension_decomposition", &o->min_first_dimension_decomposition, NULL},
    {"max_other_dimension_decomposition", &o->max_other_dimension_decomposition, NULL},
    {"cpu_max_first_dimension_decomposition", &o->cpu_max_first_dimension_decomposition, NULL},
    {"cpu_max_other_dimension_decomposition", &o->cpu_max_other_dimension_decomposition, NULL},
    {"skip_dynamic_shape_dim_check", NULL, &o->skip_dynamic_shape_dim_check},
  };
  if (strcmp(key, "min_payoff") == 0) {
    /* a fraction of the step's estimated time it must save; negative tolerates growth */
    char *end;
    double x = strtod(value, &end);
    if (!*value || *end || !isfinite(x) || x > 1 || x < -1000) return -2;
    o->has_min_payoff = true;
    o->min_payoff = x;
    return 0;
  }
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    if (strcmp(table[i].name, key) != 0) continue;
    if (table[i].i) return parse_int(value, table[i].i) ? 0 : -2;
    return parse_bool(value, table[i].b) ? 0 : -2;
  }
  return -1;
}

int ox_pipeline_set_option(OxPipeline *p, const char *assignment, OxDiagList *d) {
  const char *dot = strchr(assignment, '.');
  const char *eq = strchr(assignment, '=');
  if (!dot || !eq || eq < dot) {
    ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "--option %s: expected PASS.KEY=VALUE", assignment);
    return -1;
  }
  char pass[128], key[128];
  snprintf(pass, sizeof pass, "%.*s", (int)(dot - assignment), assignment);
  snprintf(key, sizeof key, "%.*s", (int)(eq - dot - 1), dot + 1);
  bool found = false;
  for (uint32_t i = 0; i < p->n; i++) {
    if (strcmp(p->entries[i].pass->name, pass) != 0) continue;
    found = true;
    int rc = ox_pass_option_set(&p->entries[i].opt, key, eq + 1);
    if (rc == -1) {
      ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "--option %s: unknown option '%s'", assignment, key);
      return -1;
    }
    if (rc == -2) {
      ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "--option %s: bad value '%s'", assignment, eq + 1);
      return -1;
    }
  }
  if (!found) {
    ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "--option %s: pass '%s' is not in the pipeline", assignment, pass);
    return -1;
  }
  return 0;
}

void ox_pipeline_to_json(const OxPipeline *p, OxBuf *out) {
  /* PyTorch's shape, every option spelled out: `optimize --config` of this text reruns it */
  for (int phase = 0; phase < 2; phase++) {
    ox_buf_puts(out, phase ? ", \"post_grad_fusion_options\": {" : "{\"pre_grad_fusion_options\": {");
    bool first = true;
    for (uint32_t i = 0; i < p->n; i++) {
      const OxPipelineEntry *e = &p->entries[i];
      if ((int)e->pass->phase != phase) continue;
      const OxPassOptions *o = &e->opt;
      ox_buf_printf(out,
                    "%s\"%s\": {\"min_fuse_set_size\": %d, \"max_fuse_set_size\": %d, \"max_fuse_search_depth\": %d, "
                    "\"max_fuse_tensor_size_group_linear\": %d, \"fuse_nodes_with_same_parent\": %s, "
                    "\"fuse_nodes_with_same_users\": %s, \"shape_broadcast_batch_linear\": %s, \"require_fbgemm\": %s, "
                    "\"threshold_to_cat\": %d, \"counter\": %d",
                    first ? "" : ", ", e->pass->name, o->min_fuse_set_size, o->max_fuse_set_size,
                    o->max_fuse_search_depth, o->max_fuse_tensor_size_group_linear,
                    o->fuse_nodes_with_same_parent ? "true" : "false", o->fuse_nodes_with_same_users ? "true" : "false",
                    o->shape_broadcast_batch_linear ? "true" : "false", o->require_fbgemm ? "true" : "false",
                    o->threshold_to_cat, o->counter);
      if (o->has_min_payoff) ox_buf_printf(out, ", \"min_payoff\": %.17g", o->min_payoff);
      const char *nm = e->pass->name;
      if (!strcmp(nm, "unbind_stack_aten_pass"))
        ox_buf_printf(out, ", \"match_select_overload\": %s}", o->match_select_overload ? "true" : "false");
      else if (!strcmp(nm, "cat_linear"))
        ox_buf_printf(out, ", \"cat_traffic_floor_bytes\": %d}", o->cat_traffic_floor_bytes);
      else if (!strcmp(nm, "decompose_mm_pass"))
        ox_buf_printf(out,
                      ", \"min_first_dimension_decomposition\": %d, \"max_other_dimension_decomposition\": %d, "
                      "\"cpu_max_first_dimension_decomposition\": %d, \"cpu_max_other_dimension_decomposition\": %d, "
                      "\"skip_dynamic_shape_dim_check\": %s}",
                      o->min_first_dimension_decomposition, o->max_other_dimension_decomposition,
                      o->cpu_max_first_dimension_decomposition, o->cpu_max_other_dimension_decomposition,
                      o->skip_dynamic_shape_dim_check ? "true" : "false");
      else
        ox_buf_putc(out, '}');
      first = false;
    }
    ox_buf_putc(out, '}');
  }
  ox_buf_putc(out, '}');
}

/* group of an entry in PyTorch's driver order (ox_pass.h) */
static int pytorch_group(const OxPipelineEntry *e) {
  bool batch = e->pass->engine == OX_ENGINE_BATCH;
  if (e->pass->phase == OX_PHASE_PRE) {
    if (!strcmp(e->pass->name, "numpy_compat_normalization")) return 0;
    return !strcmp(e->pass->name, "normalization_pass") ? 1 : batch ? 2 : 3;
  }
  return batch ? (e->opt.require_fbgemm ? 5 : 4) : 6;
}

void ox_pipeline_order_like_pytorch(OxPipeline *p) {
  OxPipelineEntry *sorted = ox_xcalloc(p->n ? p->n : 1, sizeof *sorted);
  uint32_t k = 0;
  for (int grp = 0; grp <= 6; grp++)
    for (uint32_t i = 0; i < p->n; i++)
      if (pytorch_group(&p->entries[i]) == grp) sorted[k++] = p->entries[i];
  memcpy(p->entries, sorted, p->n * sizeof *sorted);
  free(sorted);
}

void ox_pipeline_free(OxPipeline *p) {
  free(p->entries);
  p->entries = NULL;
  p->n = 0;
}

/* ------------------------------------------------------------------ optimize */

static void trace_counter_add(OxTrace *t, const char *name, int64_t v) {
  for (uint32_t i = 0; i < t->n_counters; i++) {
    if (strcmp(t->counter_names[i], name) == 0) {
      t->counter_values[i] += v;
      return;
    }
  }
  /* counters live in the pool arena: grow by copying */
  const char **names = ox_graph_alloc(t->pool, (t->n_counters + 1) * sizeof *names);
  int64_t *vals = ox_graph_alloc(t->pool, (t->n_counters + 1) * sizeof *vals);
  if (t->n_counters) {
    memcpy(names, t->counter_names, t->n_counters * sizeof *names);
    memcpy(vals, t->counter_values, t->n_counters * sizeof *vals);
  }
  names[t->n_counters] = ox_trace_intern(t, name);
  vals[t->n_counters] = v;
  t->counter_names = names;
  t->counter_values = vals;
  t->n_counters++;
}

static void budget_init(OxPassBudget *b, const OxBudget *cfg, const OxGraph *g) {
  memset(b, 0, sizeof *b);
  b->max_steps = cfg->max_steps ? cfg->max_steps : OX_BUDGET_STEPS;
  b->growth = cfg->max_growth > 0 ? cfg->max_growth : OX_BUDGET_GROWTH;
  /* nodes as the CLI counts them: live nodes but the output */
  b->uncounted = ox_graph_output(g) ? 1 : 0;
  b->nodes_in = g->n_live - b->uncounted;
  double cap = b->growth * (double)b->nodes_in;
  if (cap < (double)b->nodes_in + OX_BUDGET_HEADROOM) cap = (double)b->nodes_in + OX_BUDGET_HEADROOM;
  b->max_nodes = cap >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
  b->t0 = now_s();
  b->deadline = b->t0 + (cfg->max_seconds > 0 ? cfg->max_seconds : OX_BUDGET_SECONDS);
}

int ox_optimize(OxGraph *g, const OxPipeline *p, const OxCheckConfig *checks, OxTrace *trace, OxOptimizeResult *res,
                OxDiagList *d) {
  return ox_optimize_vetoed(g, p, NULL, 0, checks, trace, res, d);
}

int ox_optimize_vetoed(OxGraph *g, const OxPipeline *p, const OxStepVeto *vetoes, uint32_t n_vetoes,
                       const OxCheckConfig *checks, OxTrace *trace, OxOptimizeResult *res, OxDiagList *d) {
  double t0 = now_s();
  memset(res, 0, sizeof *res);
  OxTrace *own = NULL;
  if (!trace) trace = own = ox_trace_new(); /* counters need a home even without a trace */
  if (!trace->input_hash) {
    char h[32];
    snprintf(h, sizeof h, "%016llx", (unsigned long long)ox_graph_structure_hash(g));
    trace->input_hash = ox_trace_intern(trace, h);
  }
  /* the graph's estimated cost before the run (the first run recorded into this trace) */
  bool cost_fresh = !own && !trace->cost.set;
  if (cost_fresh) trace->cost.before = ox_cost_graph(g);
  int rc = 0;
  /* the batch engine's state, kept from one batch pass to the next while no other pass runs */
  OxBatchShare *share = ox_batch_share_new();
  for (uint32_t i = 0; i < p->n && rc == 0; i++) {
    const OxPipelineEntry *e = &p->entries[i];
    if (e->pass->run != ox_batch_pass_run) ox_batch_share_forget(share);
    int reps = e->opt.counter > 0 ? e->opt.counter : 1;
    OxPassBudget budget;
    budget_init(&budget, &p->budget, g);
    for (int r = 0; r < reps; r++) {
      if (!ox_graph_stable_toposort(g)) {
        ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "graph has a cycle before pass %s", e->pass->name);
        rc = -1;
        break;
      }
      OxPassCtx c;
      memset(&c, 0, sizeof c);
      c.g = g;
      c.pass = e->pass;
      c.opt = &e->opt;
      c.checks = checks;
      c.trace = trace;
      c.record_rejections = own == NULL;
      c.vetoes = vetoes;
      c.n_vetoes = n_vetoes;
      c.budget = &budget;
      c.batch_share = share;
      uint32_t applied0 = trace->n_applied, rejected0 = trace->n_rejected, failed0 = trace->n_check_failed;
      double tp = now_s();
      int n = e->pass->run(&c);
      double pass_seconds = now_s() - tp;
      if (n < 0) {
        ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "pass %s failed", e->pass->name);
        rc = -1;
      }
      for (uint32_t k = 0; k < c.n_counters; k++) trace_counter_add(trace, c.counter_names[k], c.counter_values[k]);
      bool stopped = c.stop && budget.spent;
      if (stopped) {
        /* a rejection of the pass as a whole, after its last step; and a warning */
        OxStep *s = ox_trace_add_step(trace, OX_STEP_REJECTED);
        s->pass = ox_trace_intern(trace, e->pass->name);
        s->phase = e->pass->phase == OX_PHASE_POST ? "post" : "pre";
        s->rule = ox_trace_intern(trace, "budget");
        s->reason = ox_reason_nodes(&c, OX_REASON_BUDGET, (const char *const[]){budget.spent, budget.why}, 2,
                                    NULL);
        ox_diag_add(d, OX_SEV_WARNING, 0, 0, NULL, "pass %s stopped after %u applied steps: %s budget: %s",
                    e->pass->name, budget.steps, budget.spent, budget.why);
        res->budget_stops++;
      }
      /* the budget record counts as the pass's rejection: the table's counts add up to the summary */
      ox_trace_pass_stat_add(trace, e->pass->name, e->pass->phase == OX_PHASE_POST ? "post" : "pre", pass_seconds, 1,
                             trace->n_applied - applied0, trace->n_rejected - rejected0,
                             trace->n_check_failed - failed0);
      ox_pass_ctx_clear(&c);
      ox_trace_steps_final(trace); /* a live trace writer encodes them while the next pass runs */
      if (rc || stopped) break;
    }
  }
  ox_batch_share_free(share);
  if (rc == 0 && !ox_graph_stable_toposort(g)) {
    ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "optimized graph has a cycle");
    rc = -1;
  }
  if (cost_fresh) {
    trace->cost.after = ox_cost_graph(g);
    trace->cost.set = true;
  }
  trace->seconds += now_s() - t0;
  res->applied = trace->n_applied;
  res->rejected = trace->n_rejected;
  res->check_failures = trace->n_check_failed;
  res->seconds = now_s() - t0;
  res->counter_names = trace->counter_names;
  res->counter_values = trace->counter_values;
  res->n_counters = trace->n_counters;
  if (own) {
    /* the caller gave no trace: counters must not dangle */
    res->counter_names = NULL;
    res->counter_values = NULL;
    res->n_counters = 0;
    ox_trace_free(own);
  }
  return rc;
}

/* ------------------------------------------------------------------ replay */

uint64_t ox_graph_structure_hash(const OxGraph *g) {
  uint64_t h = 1469598103934665603ull;
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    h ^= ox_hash_bytes(n->name, strlen(n->name));
    h *= 1099511628211ull;
    h ^= ox_hash_bytes(n->target, strlen(n->target)) + n->op;
    h *= 1099511628211ull;
  }
  return h;
}

/* The node called name (a string of the trace's pool) in g: when g shares the pool's string
 * table the pointer itself is the key, no hashing. */
typedef OxNodeId (*FindFn)(const OxGraph *g, const char *name);
static FindFn finder(const OxGraph *g, const OxTrace *t) {
  return ox_graph_shares_strings(g, t->pool) ? ox_graph_find_interned : ox_graph_find;
}

static int apply_edit(OxGraph *g, const OxTrace *t, const OxStep *s, const OxTraceEdit *e, OxDiagList *d) {
  char err[256];
  FindFn find = finder(g, t);
  OxNodeId id = e->name ? find(g, e->name) : 0;
  switch ((OxTraceEditKind)e->kind) {
  case OX_TEDIT_ADD: {
    if (id) {
      ox_diag_add(d, OX_SEV_ERROR, e->src_line ? e->src_line : s->src_line, 0, NULL, "replay step %u: node %s already exists", s->seq, e->name);
      return -1;
    }
    OxValue args, kwargs;
    if (!ox_trace_value_to_graph(t, g, &e->data->args, &args, err, sizeof err) ||
        !ox_trace_value_to_graph(t, g, &e->data->kwargs, &kwargs, err, sizeof err)) {
      ox_diag_add(d, OX_SEV_ERROR, e->src_line ? e->src_line : s->src_line, 0, NULL, "replay step %u: adding %s: %s", s->seq, e->name, err);
      return -1;
    }
    OxNodeId after = e->after ? find(g, e->after) : 0;
    if (e->after && !after) {
      ox_diag_add(d, OX_SEV_ERROR, e->src_line ? e->src_line : s->src_line, 0, NULL, "replay step %u: position node %s not found", s->seq, e->after);
      return -1;
    }
    OxNodeId nid = after ? ox_graph_insert_after(g, after, (OxOp)e->op, e->name, e->target, args, kwargs)
                         : ox_graph_insert_before(g, g->head, (OxOp)e->op, e->name, e->target, args, kwargs);
    if (strcmp(g->nodes[nid].name, e->name) != 0) {
      ox_diag_add(d, OX_SEV_ERROR, e->src_line ? e->src_line : s->src_line, 0, NULL, "replay step %u: could not name the new node %s", s->seq, e->name);
      return -1;
    }
    if (e->has_meta) ox_graph_set_meta_shared(g, nid, &e->data->meta);
    return 0;
  }
  case OX_TEDIT_ERASE:
    if (!id || !ox_graph_erase(g, id)) {
      ox_diag_add(d, OX_SEV_ERROR, e->src_line ? e->src_line : s->src_line, 0, NULL, "replay step %u: cannot erase %s (%s)", s->seq, e->name,
                  id ? "still used" : "not found");
      return -1;
    }
    return 0;
  case OX_TEDIT_ARGS: {
    OxValue args, kwargs;
    if (!id || !ox_trace_value_to_graph(t, g, &e->data->args, &args, err, sizeof err) ||
        !ox_trace_value_to_graph(t, g, &e->data->kwargs, &kwargs, err, sizeof err)) {
      ox_diag_add(d, OX_SEV_ERROR, e->src_line ? e->src_line : s->src_line, 0, NULL, "replay step %u: rewiring %s: %s", s->seq, e->name,
                  id ? err : "not found");
      return -1;
    }
    ox_graph_set_args(g, id, args);
    ox_graph_set_kwargs(g, id, kwargs);
    return 0;
  }
  case OX_TEDIT_MOVE: {
    if (!e->name) {
      if (ox_graph_stable_toposort(g)) return 0;
      ox_diag_add(d, OX_SEV_ERROR, e->src_line ? e->src_line : s->src_line, 0, NULL, "replay step %u: the graph has a cycle", s->seq);
      return -1;
    }
    OxNodeId after = e->after ? find(g, e->after) : 0;
    if (!id || (e->after && !after)) {
      ox_diag_add(d, OX_SEV_ERROR, e->src_line ? e->src_line : s->src_line, 0, NULL, "replay step %u: cannot move %s", s->seq, e->name);
      return -1;
    }
    if (after)
      ox_graph_move_after(g, id, after);
    else if (g->head != id)
      ox_graph_move_before(g, id, g->head);
    return 0;
  }
  case OX_TEDIT_META:
    if (!id) {
      ox_diag_add(d, OX_SEV_ERROR, e->src_line ? e->src_line : s->src_line, 0, NULL, "replay step %u: %s not found", s->seq, e->name);
      return -1;
    }
    ox_graph_set_meta_shared(g, id, &e->data->meta);
    return 0;
  case OX_TEDIT_RENAME:
    if (!id || !ox_graph_rename(g, id, e->new_name)) {
      ox_diag_add(d, OX_SEV_ERROR, e->src_line ? e->src_line : s->src_line, 0, NULL, "replay step %u: cannot rename %s", s->seq, e->name);
      return -1;
    }
    return 0;
  case OX_TEDIT_REPLACE: {
    OxNodeId from = e->from ? find(g, e->from) : 0, to = e->to ? find(g, e->to) : 0;
    const char *why = !id ? "node not found" : !from ? "old input not found" : !to ? "new input not found" : NULL;
    if (!why && !ox_graph_has_input(g, id, from)) why = "old input is not an input of the node";
    if (why) {
      ox_diag_add(d, OX_SEV_ERROR, e->src_line ? e->src_line : s->src_line, 0, NULL, "replay step %u: cannot rewire %s from %s to %s: %s", s->seq,
                  e->name ? e->name : "?", e->from ? e->from : "?", e->to ? e->to : "?", why);
      return -1;
    }
    ox_graph_replace_input(g, id, from, to);
    return 0;
  }
  }
  return -1;
}

typedef struct OrderCtx {
  const OxGraph *g;
  OxNodeId user, bad;
} OrderCtx;

static void order_cb(OxNodeId id, void *data) {
  OrderCtx *c = data;
  if (!c->bad && id < c->g->n_nodes && c->g->nodes[id].pos >= c->g->nodes[c->user].pos) c->bad = id;
}

/* After a replay from the input: every node comes after its inputs. The edit scripts keep it so
 * (toposort edits where a step needed one); a damaged trace can break it, and the graph written
 * from it would not be a graph any more. */
static bool replay_order_ok(OxGraph *g, OxDiagList *d) {
  ox_graph_renumber(g);
  OX_GRAPH_FOREACH(g, id) {
    OrderCtx c = {g, id, 0};
    ox_value_foreach_node(&g->nodes[id].args, order_cb, &c);
    ox_value_foreach_node(&g->nodes[id].kwargs, order_cb, &c);
    if (c.bad) {
      ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL,
                  "replay: after the trace's edits %s uses %s before its definition (the trace is damaged)",
                  g->nodes[id].name, g->nodes[c.bad].name);
      return false;
    }
  }
  return true;
}

int ox_replay(OxGraph *g, const OxTrace *t, uint32_t k, OxDiagList *d) {
  if (t->input_hash) {
    char h[32];
    snprintf(h, sizeof h, "%016llx", (unsigned long long)ox_graph_structure_hash(g));
    if (strcmp(h, t->input_hash) != 0) {
      ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL,
                  "the trace was recorded on another graph (structure hash %s, this graph has %s)", t->input_hash,
                  h);
      return -1;
    }
  }
  /* per step: the old side of each pair and the matched nodes are live before the step, the
   * new side and the scaffolding after it */
  OxNodeId *ids = NULL;
  uint32_t cap = 0;
  FindFn find = finder(g, t);
  for (uint32_t i = 0; i < t->n_steps; i++) {
    const OxStep *s = &t->steps[i];
    if (!s->applied_index || s->applied_index > k) continue;
    uint32_t need = 2 * s->n_prov + s->n_matched + s->n_added + s->n_scaffold;
    if (need > cap || !ids) { /* at least one slot: no arithmetic on a NULL pointer */
      cap = need ? need : 1;
      ids = ox_xrealloc(ids, cap * sizeof *ids);
    }
    OxNodeId *po = ids, *pn = po + s->n_prov, *src = pn + s->n_prov, *added = src + s->n_matched,
             *scaf = added + s->n_added;
    for (uint32_t j = 0; j < s->n_prov; j++) po[j] = find(g, s->prov_old[j]);
    uint32_t n_src = s->n_scaffold ? s->n_matched : 0;
    for (uint32_t j = 0; j < n_src; j++) src[j] = find(g, s->matched[j]);
    for (uint32_t j = 0; j < s->n_edits; j++)
      if (apply_edit(g, t, s, &s->edits[j], d) != 0) {
        free(ids);
        return -1;
      }
    if (!s->n_prov && !s->n_scaffold) continue;
    for (uint32_t j = 0; j < s->n_prov; j++) pn[j] = find(g, s->prov_new[j]);
    for (uint32_t j = 0; j < s->n_added; j++) added[j] = find(g, s->added[j]);
    for (uint32_t j = 0; j < s->n_scaffold; j++) scaf[j] = find(g, s->scaffold[j]);
    ox_provenance_apply(g, po, pn, s->n_prov, added, s->n_added, scaf, s->n_scaffold, src, n_src);
  }
  free(ids);
  /* a replay from the input (the hash was checked) ends in a graph in order; the debugger's
   * replays of ranges (no hash) skip this O(nodes + edges) walk on every step */
  if (t->input_hash && !replay_order_ok(g, d)) return -1;
  return 0;
}

/* ------------------------------------------------------------------ explain */

static bool mentions(const OxStep *s, const char *name) {
  if (s->anchor && strcmp(s->anchor, name) == 0) return true;
  for (uint32_t i = 0; i < s->n_matched; i++)
    if (strcmp(s->matched[i], name) == 0) return true;
  for (uint32_t i = 0; i < s->n_removed; i++)
    if (strcmp(s->removed[i], name) == 0) return true;
  for (uint32_t i = 0; i < s->n_added; i++)
    if (strcmp(s->added[i], name) == 0) return true;
  for (uint32_t i = 0; i < s->reason.n_args; i++)
    if (s->reason.nodes[i] && strcmp(s->reason.nodes[i], name) == 0) return true;
  return false;
}

uint32_t ox_trace_steps_for_node(const OxTrace *t, const char *name, uint32_t *out, uint32_t max) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < t->n_steps; i++) {
    if (!mentions(&t->steps[i], name)) continue;
    if (c < max) out[c] = i;
    c++;
  }
  return c;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static bool in_sorted(const char **v, uint32_t n, const char *s) {
  return n && bsearch(&s, v, n, sizeof *v, cmp_str) != NULL;
}

uint32_t ox_trace_unknown_names(const OxTrace *t, const OxGraph *g, const char **out, uint32_t max) {
  /* the names the steps make, sorted */
  uint32_t n_made = 0;
  for (uint32_t i = 0; i < t->n_steps; i++) {
    n_made += t->steps[i].n_added;
    for (uint32_t j = 0; j < t->steps[i].n_edits; j++) n_made += t->steps[i].edits[j].kind == OX_TEDIT_RENAME;
  }
  const char **made = ox_xrealloc(NULL, (n_made + 1) * sizeof *made);
  n_made = 0;
  for (uint32_t i = 0; i < t->n_steps; i++) {
    const OxStep *s = &t->steps[i];
    for (uint32_t j = 0; j < s->n_added; j++) made[n_made++] = s->added[j];
    for (uint32_t j = 0; j < s->n_edits; j++)
      if (s->edits[j].kind == OX_TEDIT_RENAME && s->edits[j].new_name) made[n_made++] = s->edits[j].new_name;
  }
  qsort(made, n_made, sizeof *made, cmp_str);
  /* the unknown ones, each once */
  const char **seen = NULL;
  uint32_t n_seen = 0, cap_seen = 0, count = 0;
  for (uint32_t i = 0; i < t->n_steps && n_seen < OX_UNKNOWN_NAMES_MAX; i++) {
    const OxStep *s = &t->steps[i];
    uint32_t n_names = 1 + s->n_matched + s->n_removed + s->reason.n_args;
    for (uint32_t k = 0; k < n_names; k++) {
      const char *name = k == 0                                  ? s->anchor
                         : k <= s->n_matched                     ? s->matched[k - 1]
                         : k <= s->n_matched + s->n_removed      ? s->removed[k - 1 - s->n_matched]
                                                                 : s->reason.nodes[k - 1 - s->n_matched - s->n_removed];
      if (!name || !name[0] || ox_graph_find(g, name) || in_sorted(made, n_made, name)) continue;
      bool dup = false;
      for (uint32_t q = 0; q < n_seen && !dup; q++) dup = strcmp(seen[q], name) == 0;
      if (dup) continue;
      if (n_seen == cap_seen) seen = ox_xrealloc(seen, (cap_seen = cap_seen ? cap_seen * 2 : 16) * sizeof *seen);
      seen[n_seen++] = name;
      if (count < max) out[count] = name;
      count++;
      if (n_seen >= OX_UNKNOWN_NAMES_MAX) break; /* enough to say so; the dedup stays cheap */
    }
  }
  free(seen);
  free(made);
  return count;
}
