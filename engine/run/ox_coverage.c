/* ox_coverage.c - pattern coverage of a recorded run (ox_coverage.h).
 *
 * One walk over the steps. Rows (a pipeline has a few dozen pass/rule pairs) are found by a
 * linear search that starts at the previous step's row: consecutive records nearly always share
 * it. Reasons and their details are small arrays searched linearly too.
 */
#include "run/ox_coverage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "ops/ox_ops.h"

static bool same_str(const char *a, const char *b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return strcmp(a, b) == 0;
}

/* "A is B, pattern wants C" (TARGET_MISMATCH's text, also inside a NO_MATCH's third argument
 * after "function_mismatch: "): "wants C, found B". Names and targets hold no ", " or " is ". */
/* An attribute's node is named after its dotted target with the dots made underscores
 * ("layers.0.norm.bias" -> layers_0_norm_bias); a placeholder's target is its name. */
static bool named_after(const char *name, const char *target, bool dots) {
  size_t i = 0;
  for (; name[i] && target[i]; i++)
    if (name[i] != target[i] && !(dots && target[i] == '.' && name[i] == '_')) return false;
  return !name[i] && !target[i];
}

static bool wants_found(const char *a0, const char *b, const char *c, char *buf, size_t cap) {
  if (!b || !c || !*c) return false;
  if (a0 && named_after(a0, b, false) && !ox_spelling_find(OX_OP_CALL_METHOD, b))
    snprintf(buf, cap, "wants %s, found a graph input", c); /* (x.view(...) is named view: not one) */
  else if (a0 && strchr(b, '.') && named_after(a0, b, true))
    snprintf(buf, cap, "wants %s, found a parameter or buffer", c);
  else
    snprintf(buf, cap, "wants %s, found %s", c, b);
  return true;
}

static bool parse_mismatch(const char *text, char *buf, size_t cap) {
  static const char fm[] = "function_mismatch: ", is[] = " is ", pw[] = ", pattern wants ";
  if (!text || strncmp(text, fm, sizeof fm - 1) != 0) return false;
  const char *a = text + sizeof fm - 1;
  const char *i = strstr(a, is);
  if (!i) return false;
  const char *b = i + sizeof is - 1;
  const char *w = strstr(b, pw);
  if (!w) return false;
  char name[160], target[160];
  snprintf(name, sizeof name, "%.*s", (int)(i - a), a);
  snprintf(target, sizeof target, "%.*s", (int)(w - b), b);
  return wants_found(name, target, w + sizeof pw - 1, buf, cap);
}

bool ox_coverage_detail_of(const OxStep *s, char *buf, size_t cap) {
  const OxReason *r = &s->reason;
#define ARG(k) ((k) < r->n_args && r->args[k] && *r->args[k] ? r->args[k] : NULL)
  if (!cap) return false;
  buf[0] = 0;
  switch (r->code) {
  case OX_REASON_NO_MATCH:
    if (parse_mismatch(ARG(2), buf, cap)) return true;
    if (!ARG(1)) return false;
    snprintf(buf, cap, "at %s", ARG(1));
    return true;
  case OX_REASON_TARGET_MISMATCH: return ARG(1) && wants_found(ARG(0), ARG(1), ARG(2) ? ARG(2) : "?", buf, cap);
  case OX_REASON_SET_TOO_SMALL:
    if (!ARG(0)) return false;
    snprintf(buf, cap, "set of %s", ARG(0));
    return true;
  case OX_REASON_SYMBOLIC:
    if (!ARG(1)) return false;
    snprintf(buf, cap, "symbolic size %s", ARG(1));
    return true;
  case OX_REASON_DTYPE_DIFFERS:
    if (!ARG(0) || !ARG(1)) return false;
    snprintf(buf, cap, "%s and %s", ARG(0), ARG(1));
    return true;
  case OX_REASON_ARITY:
    if (!ARG(1)) return false;
    snprintf(buf, cap, "%s positional args", ARG(1));
    return true;
  case OX_REASON_MULTIPLE_USERS:
    if (!ARG(1)) return false;
    snprintf(buf, cap, "%s users", ARG(1));
    return true;
  case OX_REASON_BUDGET:
  case OX_REASON_CHECK_FAILED:
    if (!ARG(0)) return false;
    snprintf(buf, cap, "%s%s", r->code == OX_REASON_CHECK_FAILED ? "check " : "", ARG(0));
    return true;
  case OX_REASON_OPTION:
    if (!ARG(1)) return false;
    snprintf(buf, cap, "option %s", ARG(1));
    return true;
  default: return false;
  }
#undef ARG
}

const char *ox_coverage_row_title(const char *phase, const char *pass, const char *rule, char *buf, size_t cap) {
  if (!cap) return buf;
  pass = pass ? pass : "";
  bool own = !rule || strcmp(rule, pass) == 0;
  snprintf(buf, cap, "%s (%s)%s%s", pass, phase ? phase : "pre", own ? "" : " ", own ? "" : rule);
  return buf;
}

double ox_coverage_pass_seconds(const OxTrace *t, const char *pass, const char *phase) {
  const char *ph = phase && strcmp(phase, "post") == 0 ? "post" : "pre";
  for (uint32_t i = 0; t && i < t->n_pass_stats; i++)
    if (same_str(t->pass_stats[i].pass, pass) && strcmp(t->pass_stats[i].phase, ph) == 0)
      return t->pass_stats[i].seconds;
  return -1;
}

typedef struct RowBuild {
  OxCoverageRow row;
  uint32_t cap_reasons;
} RowBuild;

static void add_detail(OxCoverageReason *r, const char *text, uint32_t seq) {
  if (!text || !*text) return;
  for (uint32_t i = 0; i < r->n_details; i++)
    if (strcmp(r->details[i].text, text) == 0) {
      r->details[i].count++;
      return;
    }
  if (r->n_details < OX_COVERAGE_MAX_DETAILS) {
    r->details[r->n_details++] = (OxCoverageDetail){.text = ox_xstrdup(text), .count = 1, .first = seq};
    return;
  }
  r->n_other++;
}

static void add_reason(RowBuild *b, const OxStep *s) {
  OxCoverageRow *row = &b->row;
  uint16_t code = s->reason.code < OX_REASON_COUNT ? s->reason.code : OX_REASON_OTHER;
  OxCoverageReason *r = NULL;
  for (uint32_t i = 0; i < row->n_reasons && !r; i++)
    if (row->reasons[i].code == code) r = &row->reasons[i];
  if (!r) {
    if (row->n_reasons == b->cap_reasons) {
      b->cap_reasons = b->cap_reasons ? 2 * b->cap_reasons : 4;
      row->reasons = ox_xrealloc(row->reasons, b->cap_reasons * sizeof *row->reasons);
    }
    r = &row->reasons[row->n_reasons++];
    memset(r, 0, sizeof *r);
    r->code = code;
    r->first = s->seq;
  }
  r->count++;
  char d[320];
  if (ox_coverage_detail_of(s, d, sizeof d)) add_detail(r, d, s->seq);
}

static int cmp_detail(const void *pa, const void *pb) {
  const OxCoverageDetail *a = pa, *b = pb;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  return a->first < b->first ? -1 : a->first > b->first;
}

static int cmp_reason(const void *pa, const void *pb) {
  const OxCoverageReason *a = pa, *b = pb;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  return (int)a->code - (int)b->code;
}

OxCoverage *ox_coverage_of(const OxTrace *t) {
  OxCoverage *c = ox_xcalloc(1, sizeof *c);
  if (!t) return c;
  c->n_steps = t->n_steps;
  RowBuild *rows = NULL;
  uint32_t n = 0, cap = 0, last = 0;
  for (uint32_t i = 0; i < t->n_steps; i++) {
    const OxStep *s = &t->steps[i];
    const char *phase = s->phase ? s->phase : "pre";
    uint32_t k = n;
    for (uint32_t j = 0; j < n; j++) { /* from the previous step's row, wrapping around */
      uint32_t q = (last + j) % n;
      const OxCoverageRow *r = &rows[q].row;
      if (same_str(r->pass, s->pass) && same_str(r->rule, s->rule) && same_str(r->phase, phase)) {
        k = q;
        break;
      }
    }
    if (k == n) {
      if (n == cap) {
        cap = cap ? 2 * cap : 16;
        rows = ox_xrealloc(rows, cap * sizeof *rows);
      }
      memset(&rows[n], 0, sizeof rows[n]);
      rows[n].row = (OxCoverageRow){.phase = phase, .pass = s->pass ? s->pass : "", .rule = s->rule,
                                    .first = s->seq, .first_applied = UINT32_MAX};
      n++;
    }
    last = k;
    OxCoverageRow *r = &rows[k].row;
    r->attempts++;
    switch (s->kind) {
    case OX_STEP_APPLIED:
      r->applied++;
      if (r->first_applied == UINT32_MAX) r->first_applied = s->seq;
      r->step_seconds += s->seconds > 0 ? s->seconds : 0;
      break;
    case OX_STEP_CHECK_FAILED:
      r->check_failed++;
      r->step_seconds += s->seconds > 0 ? s->seconds : 0;
      add_reason(&rows[k], s);
      break;
    default:
      r->rejected++;
      add_reason(&rows[k], s);
      break;
    }
  }
  c->rows = n ? ox_xcalloc(n, sizeof *c->rows) : NULL;
  for (uint32_t i = 0; i < n; i++) {
    OxCoverageRow *r = &rows[i].row;
    if (r->n_reasons > 1) qsort(r->reasons, r->n_reasons, sizeof *r->reasons, cmp_reason);
    for (uint32_t j = 0; j < r->n_reasons; j++)
      if (r->reasons[j].n_details > 1)
        qsort(r->reasons[j].details, r->reasons[j].n_details, sizeof(OxCoverageDetail), cmp_detail);
    c->rows[i] = *r;
  }
  c->n_rows = n;
  free(rows);
  return c;
}

void ox_coverage_free(OxCoverage *c) {
  if (!c) return;
  for (uint32_t i = 0; i < c->n_rows; i++) {
    for (uint32_t j = 0; j < c->rows[i].n_reasons; j++)
      for (uint32_t k = 0; k < c->rows[i].reasons[j].n_details; k++) free(c->rows[i].reasons[j].details[k].text);
    free(c->rows[i].reasons);
  }
  free(c->rows);
  free(c);
}

/* ---- two runs side by side */

const OxCoverageRow *ox_coverage_find_row(const OxCoverage *c, const char *phase, const char *pass, const char *rule) {
  for (uint32_t i = 0; c && i < c->n_rows; i++) {
    const OxCoverageRow *r = &c->rows[i];
    if (same_str(r->pass, pass) && same_str(r->phase, phase) && same_str(r->rule, rule)) return r;
  }
  return NULL;
}

const OxCoverageReason *ox_coverage_find_reason(const OxCoverageRow *r, uint16_t code) {
  for (uint32_t i = 0; r && i < r->n_reasons; i++)
    if (r->reasons[i].code == code) return &r->reasons[i];
  return NULL;
}

uint32_t ox_coverage_detail_count(const OxCoverageReason *x, const char *text) {
  for (uint32_t i = 0; x && i < x->n_details; i++)
    if (strcmp(x->details[i].text, text) == 0) return x->details[i].count;
  return 0;
}

#define COUNT(r, f) ((r) ? (r)->f : 0u)

bool ox_coverage_reasons_differ(const OxCoverageReason *a, const OxCoverageReason *b) {
  if (COUNT(a, count) != COUNT(b, count) || COUNT(a, n_other) != COUNT(b, n_other)) return true;
  for (int k = 0; k < 2; k++) {
    const OxCoverageReason *x = k ? b : a, *y = k ? a : b;
    for (uint32_t i = 0; x && i < x->n_details; i++)
      if (x->details[i].count != ox_coverage_detail_count(y, x->details[i].text)) return true;
  }
  return false;
}

bool ox_coverage_rows_differ(const OxCoverageRow *a, const OxCoverageRow *b) {
  if (COUNT(a, attempts) != COUNT(b, attempts) || COUNT(a, applied) != COUNT(b, applied) ||
      COUNT(a, rejected) != COUNT(b, rejected) || COUNT(a, check_failed) != COUNT(b, check_failed))
    return true;
  for (int k = 0; k < 2; k++) {
    const OxCoverageRow *r = k ? b : a;
    for (uint32_t i = 0; r && i < r->n_reasons; i++)
      if (ox_coverage_reasons_differ(ox_coverage_find_reason(a, r->reasons[i].code),
                                     ox_coverage_find_reason(b, r->reasons[i].code)))
        return true;
  }
  return false;
}
