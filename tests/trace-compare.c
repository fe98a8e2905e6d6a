/* trace-compare.c - field-by-field comparison of two in-memory traces (trace-compare.h). */
#include "trace-compare.h"

#include <glib.h>
#include <math.h>
#include <string.h>

#include "ops/ox_shape.h"
#include "passes/ox_pass.h"
#include "write/ox_write.h"

static bool same_str(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

#define DIFF(...)                                                                                            \
  do {                                                                                                       \
    char *what_ = g_strdup_printf(__VA_ARGS__);                                                              \
    char *out_ = g_strdup_printf("%s%s", where, what_);                                                      \
    g_free(what_);                                                                                           \
    return out_;                                                                                             \
  } while (0)
#define STR(field, x, y)                                                                                     \
  do {                                                                                                       \
    if (!same_str((x), (y))) DIFF("%s: '%s' != '%s'", field, (x) ? (x) : "(null)", (y) ? (y) : "(null)");    \
  } while (0)
#define NUM(field, x, y)                                                                                     \
  do {                                                                                                       \
    if ((x) != (y)) DIFF("%s: %llu != %llu", field, (unsigned long long)(x), (unsigned long long)(y));       \
  } while (0)

static bool same_double(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* Version 5 writes a step's and a check's seconds to 3 significant digits: compared so while set. */
static bool seconds_3_digits;
static bool same_seconds(double a, double b) {
  if (same_double(a, b)) return true;
  return seconds_3_digits && isfinite(a) && isfinite(b) && fabs(a - b) <= 0.005 * fmax(fabs(a), fabs(b));
}

static char *names(const char *where, const char *field, const char *const *a, uint32_t na,
                   const char *const *b, uint32_t nb) {
  NUM(field, na, nb);
  for (uint32_t i = 0; i < na; i++)
    if (!same_str(a[i], b[i]))
      DIFF("%s[%u]: '%s' != '%s'", field, i, a[i] ? a[i] : "(null)", b[i] ? b[i] : "(null)");
  return NULL;
}

static bool same_dims(const OxDim *a, const OxDim *b, int32_t n) {
  for (int32_t i = 0; i < n; i++)
    if (a[i].v != b[i].v || !same_str(a[i].sym, b[i].sym)) return false;
  return true;
}

static bool same_meta(const OxMeta *a, const OxMeta *b) {
  if (a->kind != b->kind || a->n != b->n || a->inferred != b->inferred || !same_str(a->sym, b->sym))
    return false;
  if ((a->t == NULL) != (b->t == NULL)) return false;
  for (uint32_t i = 0; a->t && i < a->n; i++) {
    const OxTensorMeta *x = &a->t[i], *y = &b->t[i];
    if (x->dtype != y->dtype || x->rank != y->rank || x->has_stride != y->has_stride ||
        !same_str(x->device, y->device))
      return false;
    if (x->rank > 0 && !same_dims(x->shape, y->shape, x->rank)) return false;
    if (x->rank > 0 && x->has_stride && (x->stride == NULL) != (y->stride == NULL)) return false;
    if (x->rank > 0 && x->has_stride && x->stride && !same_dims(x->stride, y->stride, x->rank)) return false;
  }
  return true;
}

static char *values(const char *where, const char *field, const OxTrace *ta, const OxValue *a,
                    const OxTrace *tb, const OxValue *b) {
  enum { CAP = 1 << 20 };
  static char *x, *y; /* allocated once: tests compare millions of values */
  if (!x) {
    x = g_malloc(CAP);
    y = g_malloc(CAP);
  }
  ox_value_format(ta->pool, a, x, CAP);
  ox_value_format(tb->pool, b, y, CAP);
  if (a->kind != b->kind || strcmp(x, y) != 0)
    return g_strdup_printf("%s%s: %.200s != %.200s", where, field, x, y);
  return NULL;
}

static char *edit(const char *where, const OxTrace *ta, const OxTraceEdit *a, const OxTrace *tb,
                  const OxTraceEdit *b) {
  NUM("kind", a->kind, b->kind);
  STR("name", a->name, b->name);
  STR("after", a->after, b->after);
  STR("new_name", a->new_name, b->new_name);
  STR("from", a->from, b->from);
  STR("to", a->to, b->to);
  if (a->kind == OX_TEDIT_ADD) {
    NUM("op", a->op, b->op);
    STR("target", a->target, b->target);
    NUM("has_meta", a->has_meta, b->has_meta);
  }
  if ((a->data == NULL) != (b->data == NULL)) DIFF("data: %p != %p", (void *)a->data, (void *)b->data);
  if (!a->data) return NULL;
  char *d = NULL;
  if (a->kind != OX_TEDIT_META &&
      ((d = values(where, "args", ta, &a->data->args, tb, &b->data->args)) != NULL ||
       (d = values(where, "kwargs", ta, &a->data->kwargs, tb, &b->data->kwargs)) != NULL))
    return d;
  if ((a->has_meta || a->kind == OX_TEDIT_META) && !same_meta(&a->data->meta, &b->data->meta)) {
    char x[256], y[256];
    ox_meta_format(&a->data->meta, x, sizeof x);
    ox_meta_format(&b->data->meta, y, sizeof y);
    DIFF("meta: %s != %s (or their inferred flag, stride or device)", x, y);
  }
  return NULL;
}

static char *cost(const char *where, const OxCostPair *a, const OxCostPair *b) {
  NUM("cost.set", a->set, b->set);
  if (!a->set) return NULL;
  const OxCost *x[2] = {&a->before, &a->after}, *y[2] = {&b->before, &b->after};
  for (int i = 0; i < 2; i++) {
    NUM("cost.unknown", x[i]->unknown, y[i]->unknown);
    if (!(x[i]->unknown & OX_COST_LAUNCHES)) NUM("cost.launches", x[i]->launches, y[i]->launches);
    if (!(x[i]->unknown & OX_COST_BYTES)) NUM("cost.bytes", x[i]->bytes, y[i]->bytes);
    if (!(x[i]->unknown & OX_COST_FLOPS)) NUM("cost.flops", x[i]->flops, y[i]->flops);
  }
  return NULL;
}

static char *step(const char *where, const OxTrace *ta, const OxStep *a, const OxTrace *tb, const OxStep *b) {
  char *d;
  NUM("seq", a->seq, b->seq);
  NUM("kind", a->kind, b->kind);
  NUM("applied_index", a->applied_index, b->applied_index);
  STR("phase", a->phase, b->phase);
  STR("pass", a->pass, b->pass);
  STR("rule", a->rule, b->rule);
  STR("rule_file", a->rule_file, b->rule_file);
  NUM("rule_line", a->rule_line, b->rule_line);
  STR("anchor", a->anchor, b->anchor);
  STR("key", a->key, b->key);
  STR("options", a->options, b->options);
  if ((d = names(where, "matched", a->matched, a->n_matched, b->matched, b->n_matched)) ||
      (d = names(where, "removed", a->removed, a->n_removed, b->removed, b->n_removed)) ||
      (d = names(where, "added", a->added, a->n_added, b->added, b->n_added)) ||
      (d = names(where, "scaffolding", a->scaffold, a->n_scaffold, b->scaffold, b->n_scaffold)) ||
      (d = names(where, "provenance old", a->prov_old, a->n_prov, b->prov_old, b->n_prov)) ||
      (d = names(where, "provenance new", a->prov_new, a->n_prov, b->prov_new, b->n_prov)))
    return d;
  if (a->kind != OX_STEP_APPLIED) {
    NUM("reason.code", a->reason.code, b->reason.code);
    NUM("reason.n_args", a->reason.n_args, b->reason.n_args);
    for (uint32_t i = 0; i < a->reason.n_args; i++) {
      STR("reason.args", a->reason.args[i], b->reason.args[i]);
      STR("reason.nodes", a->reason.nodes[i], b->reason.nodes[i]);
    }
  }
  for (int k = 0; k < OX_CHECK_KINDS; k++) {
    const OxCheckResult *x = &a->checks[k], *y = &b->checks[k];
    NUM("checks.status", x->status, y->status);
    if (x->status == OX_CHECK_NOT_RUN) continue;
    STR("checks.detail", x->detail, y->detail);
    STR("checks.checked_shape", x->checked_shape, y->checked_shape);
    NUM("checks.trials", x->trials, y->trials);
    if (x->trials && (!same_double(x->max_abs, y->max_abs) || !same_double(x->max_rel, y->max_rel) ||
                      !same_double(x->tol, y->tol)))
      DIFF("checks.%s: numbers differ", ox_check_kind_name((OxCheckKind)k));
    if (!same_seconds(x->seconds, y->seconds)) DIFF("checks.seconds: %g != %g", x->seconds, y->seconds);
  }
  if ((d = cost(where, &a->cost, &b->cost)) != NULL) return d;
  if (!same_seconds(a->seconds, b->seconds)) DIFF("seconds: %g != %g", a->seconds, b->seconds);
  NUM("n_edits", a->n_edits, b->n_edits);
  for (uint32_t i = 0; i < a->n_edits; i++) {
    char *w = g_strdup_printf("%sedits[%u].", where, i);
    d = edit(w, ta, &a->edits[i], tb, &b->edits[i]);
    g_free(w);
    if (d) return d;
  }
  return NULL;
}

char *trace_first_difference(const OxTrace *a, const OxTrace *b) {
  const char *where = "";
  char *d;
  /* a trace without an input file is written with "file": "" */
  STR("input.file", a->input_file ? a->input_file : "", b->input_file ? b->input_file : "");
  STR("input.hash", a->input_hash, b->input_hash);
  STR("config", a->config, b->config);
  STR("checks", a->checks, b->checks);
  if (!same_double(a->seconds, b->seconds)) DIFF("seconds: %g != %g", a->seconds, b->seconds);
  if ((d = cost(where, &a->cost, &b->cost)) != NULL) return d;
  if ((d = names(where, "counters", a->counter_names, a->n_counters, b->counter_names, b->n_counters)) !=
      NULL)
    return d;
  for (uint32_t i = 0; i < a->n_counters; i++)
    NUM("counter value", a->counter_values[i], b->counter_values[i]);
  NUM("n_pass_stats", a->n_pass_stats, b->n_pass_stats);
  for (uint32_t i = 0; i < a->n_pass_stats; i++) {
    const OxPassStat *x = &a->pass_stats[i], *y = &b->pass_stats[i];
    STR("pass_stats.pass", x->pass, y->pass);
    STR("pass_stats.phase", x->phase, y->phase);
    /* written to the microsecond */
    if (!(fabs(x->seconds - y->seconds) <= 5e-7)) DIFF("pass_stats[%u].seconds: %g != %g", i, x->seconds, y->seconds);
    NUM("pass_stats.runs", x->runs, y->runs);
    NUM("pass_stats.applied", x->applied, y->applied);
    NUM("pass_stats.rejected", x->rejected, y->rejected);
    NUM("pass_stats.check_failed", x->check_failed, y->check_failed);
  }
  NUM("n_steps", a->n_steps, b->n_steps);
  NUM("n_applied", a->n_applied, b->n_applied);
  NUM("n_rejected", a->n_rejected, b->n_rejected);
  NUM("n_check_failed", a->n_check_failed, b->n_check_failed);
  NUM("n_graph_steps", a->n_graph_steps, b->n_graph_steps);
  for (uint32_t i = 0; i < a->n_steps; i++) {
    char *w = g_strdup_printf("steps[%u].", i);
    d = step(w, a, &a->steps[i], b, &b->steps[i]);
    g_free(w);
    if (d) return d;
  }
  return NULL;
}

char *trace_first_difference_current(const OxTrace *a, const OxTrace *b) {
  seconds_3_digits = OX_TRACE_VERSION >= 5;
  char *d = trace_first_difference(a, b);
  seconds_3_digits = false;
  return d;
}

static OxTrace *read_back(const OxBuf *b, const char *what, int version) {
  OxDiagList d;
  ox_diags_init(&d, "trace.json");
  OxTrace *t = NULL;
  int rc = ox_trace_read_json(b->data, b->len, "trace.json", &t, &d);
  if (rc) {
    ox_diags_print(&d, stderr);
    g_test_fail_printf("%s: the version %d trace does not read back", what, version);
  }
  ox_diags_clear(&d);
  return t;
}

static char *replayed(const OxGraph *input, const OxTrace *t, const char *what) {
  OxGraph *g = ox_graph_clone(input);
  OxDiagList d;
  ox_diags_init(&d, "trace.json");
  if (ox_replay(g, t, UINT32_MAX, &d) != 0) {
    ox_diags_print(&d, stderr);
    g_test_fail_printf("%s: replay failed", what);
  }
  ox_diags_clear(&d);
  OxBuf b;
  ox_buf_init(&b);
  ox_write_fx_text(g, &b);
  ox_graph_free(g);
  return b.data; /* OxBuf data is malloc'ed: the caller frees it */
}

size_t trace_check_versions(const OxTrace *t, const OxGraph *input, const char *want_fx, const char *what) {
  enum { NV = 4 }; /* versions 2 to 5 */
  OxBuf w[NV], again;
  OxTrace *back[NV] = {NULL};
  for (int v = 0; v < NV; v++) {
    ox_buf_init(&w[v]);
    ox_trace_write_json_version(t, v + 2, &w[v]);
    back[v] = read_back(&w[v], what, v + 2);
  }
  size_t size = w[NV - 1].len;
  if (back[0] && back[1] && back[2] && back[3]) {
    for (int v = 1; v < NV; v++) {
      seconds_3_digits = v + 2 >= 5; /* version 5 rounds the steps' and checks' seconds */
      char *d = trace_first_difference(back[0], back[v]);
      if (d) g_test_fail_printf("%s: version 2 and version %d read differently: %s", what, v + 2, d);
      g_free(d);
      d = trace_first_difference(t, back[v]);
      if (d) g_test_fail_printf("%s: the version %d trace reads back differently from the run's: %s", what, v + 2, d);
      g_free(d);
      seconds_3_digits = false;
    }
    for (int r = 0; r < NV; r++)
      for (int v = 0; v < NV; v++) {
        ox_buf_init(&again);
        ox_trace_write_json_version(back[r], v + 2, &again);
        /* read from version 5 (its seconds rounded) and written as an earlier version: the same
         * text once read and written as version 5 again */
        if (r + 2 >= 5 && v + 2 < 5) {
          OxTrace *t2 = read_back(&again, what, v + 2);
          again.len = 0;
          if (t2) ox_trace_write_json_version(t2, 5, &again);
          ox_trace_free(t2);
          if (again.len != w[NV - 1].len || memcmp(again.data, w[NV - 1].data, again.len) != 0)
            g_test_fail_printf("%s: the version 5 trace read, written as version %d, read and written as version 5 "
                               "is not the same text", what, v + 2);
        } else if (again.len != w[v].len || memcmp(again.data, w[v].data, again.len) != 0) {
          g_test_fail_printf("%s: the version %d trace read and written as version %d is not the same text",
                             what, r + 2, v + 2);
        }
        ox_buf_free(&again);
      }
    char *a = replayed(input, back[0], what);
    for (int v = 1; v < NV; v++) {
      char *b = replayed(input, back[v], what);
      if (strcmp(a, b) != 0)
        g_test_fail_printf("%s: replays of the version 2 and version %d traces differ", what, v + 2);
      if (want_fx && strcmp(b, want_fx) != 0)
        g_test_fail_printf("%s: the version %d replay is not the run's result", what, v + 2);
      free(b);
    }
    free(a);
  }
  for (int v = 0; v < NV; v++) {
    ox_trace_free(back[v]);
    ox_buf_free(&w[v]);
  }
  return size;
}

void trace_zero_timings(OxTrace *t) {
  t->seconds = 0;
  for (uint32_t i = 0; i < t->n_pass_stats; i++) t->pass_stats[i].seconds = 0;
  for (uint32_t i = 0; i < t->n_steps; i++) {
    t->steps[i].seconds = 0;
    for (int k = 0; k < OX_CHECK_KINDS; k++) t->steps[i].checks[k].seconds = 0;
  }
}
