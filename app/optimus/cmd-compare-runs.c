/* cmd-compare-runs.c - `optimus compare-runs`: two recorded runs of one input graph aligned
 * step by step (engine/run/ox_compare.h), and their final graphs compared.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ox_graph_diff.h"
#include "run/ox_compare.h"
#include "run/ox_coverage.h"
#include "cli.h"

static const char usage_compare_runs[] =
  "Usage: optimus compare-runs A.trace.json B.trace.json [--input FILE] [--all] [--json]\n"
  "\n"
  "Compare two recorded runs of the same input graph (two configurations, two rule sets, two\n"
  "versions of the engine): align their records by pass, rule and anchor (nodes made by\n"
  "earlier rewrites named canonically), and list the records only in A, only in B, and those\n"
  "whose outcome differs. Both traces are replayed on the input to compare the final graphs.\n"
  "The runs' times are compared too, pass by pass (the passes whose time moved most), and\n"
  "their coverage: per pass and rule, the applied and refused counts, the reasons and the\n"
  "values that decided them, where A and B differ.\n"
  "Exit status 1 when the final graphs differ (or on bad input), 0 when they are the same.\n"
  "\n"
  "Options:\n"
  "  --input FILE      the runs' input graph (default: the file trace A, else B, names)\n"
  "  --all             also list the records that are rejections on both sides (or on the\n"
  "                    one side that has them); by default they are only counted\n"
  "  --json            print one JSON object (docs/cli.md)\n"
  "  --graph N, --strict, --format   as for optimize (the input)\n"
  "  -h, --help        show this help\n";

static void json_step(OxBuf *b, const OxStep *s) {
  if (!s) {
    ox_buf_puts(b, "null");
    return;
  }
  ox_buf_printf(b, "{\"seq\": %u, \"outcome\": \"%s\", \"removed\": %u, \"added\": %u, \"matched\": [", s->seq + 1,
                ox_step_kind_text(s), s->n_removed, s->n_added);
  for (uint32_t i = 0; i < s->n_matched; i++) {
    if (i) ox_buf_puts(b, ", ");
    ox_cli_json_str(b, s->matched[i]);
  }
  ox_buf_puts(b, "], \"reason\": ");
  char *why = s->kind != OX_STEP_APPLIED ? ox_reason_format(&s->reason) : NULL;
  ox_cli_json_str(b, why);
  free(why);
  ox_buf_puts(b, "}");
}

static void text_step(OxBuf *b, const char *side, const OxStep *s) {
  ox_buf_printf(b, "%s #%u %s", side, s->seq + 1, ox_step_kind_text(s));
  if (s->kind == OX_STEP_APPLIED) {
    ox_buf_printf(b, ", -%u +%u nodes", s->n_removed, s->n_added);
  } else {
    char *why = ox_reason_format(&s->reason);
    ox_buf_printf(b, ": %s", why ? why : "");
    free(why);
  }
}

/* ---- time, pass by pass (the traces' per-pass tables) */

typedef struct {
  const char *pass, *phase;
  const OxPassStat *a, *b;
} PassPair;

static const OxPassStat *find_stat(const OxTrace *t, const char *pass, const char *phase) {
  for (uint32_t i = 0; i < t->n_pass_stats; i++)
    if (strcmp(t->pass_stats[i].pass, pass) == 0 && strcmp(t->pass_stats[i].phase, phase) == 0) return &t->pass_stats[i];
  return NULL;
}

/* Every pass of A's table in its order, then B's passes that A has not; n_out set. */
static PassPair *pass_pairs(const OxTrace *a, const OxTrace *b, uint32_t *n_out) {
  PassPair *v = calloc((size_t)a->n_pass_stats + b->n_pass_stats + 1, sizeof *v);
  uint32_t n = 0;
  for (uint32_t i = 0; v && i < a->n_pass_stats; i++) {
    const OxPassStat *x = &a->pass_stats[i];
    v[n++] = (PassPair){x->pass, x->phase, x, find_stat(b, x->pass, x->phase)};
  }
  for (uint32_t i = 0; v && i < b->n_pass_stats; i++) {
    const OxPassStat *y = &b->pass_stats[i];
    if (!find_stat(a, y->pass, y->phase)) v[n++] = (PassPair){y->pass, y->phase, NULL, y};
  }
  *n_out = v ? n : 0;
  return v;
}

static void json_stat(OxBuf *b, const OxPassStat *s) {
  if (!s) {
    ox_buf_puts(b, "null");
    return;
  }
  ox_buf_putc(b, '{');
  ox_cli_json_pass_counts(b, s);
  ox_buf_putc(b, '}');
}

static double pair_change(const PassPair *p) {
  return (p->b ? p->b->seconds : 0) - (p->a ? p->a->seconds : 0);
}

static int by_change_desc(const void *x, const void *y) {
  double a = fabs(pair_change(x)), b = fabs(pair_change(y));
  if (a != b) return a < b ? 1 : -1;
  return (const PassPair *)x < (const PassPair *)y ? -1 : (const PassPair *)x > (const PassPair *)y;
}

static void ms_text(OxBuf *b, const OxPassStat *s) {
  if (!s) ox_buf_puts(b, "-");
  else if (s->seconds >= 0.01) ox_buf_printf(b, "%.0f ms", s->seconds * 1e3);
  else ox_buf_printf(b, "%.2f ms", s->seconds * 1e3);
}

/* "time: A 0.538 s, B 0.612 s (B/A 1.14); passes that changed most: batch_linear 108 ms -> 150 ms,
 * ..." A pass changed when its time moved by 1 ms and 20 % or more (the rest is noise on a
 * shared machine); at most five are named. */
static void text_time(OxBuf *b, const OxTrace *ta, const OxTrace *tb) {
  ox_buf_printf(b, "time: A %.3f s, B %.3f s", ta->seconds, tb->seconds);
  if (ta->seconds > 0 && tb->seconds > 0) ox_buf_printf(b, " (B/A %.2f)", tb->seconds / ta->seconds);
  if (!ta->n_pass_stats || !tb->n_pass_stats) {
    ox_buf_puts(b, "; no per-pass table in ");
    ox_buf_puts(b, !ta->n_pass_stats && !tb->n_pass_stats ? "either trace\n" : !ta->n_pass_stats ? "A\n" : "B\n");
    return;
  }
  uint32_t n;
  PassPair *v = pass_pairs(ta, tb, &n);
  qsort(v, n, sizeof *v, by_change_desc);
  uint32_t shown = 0;
  for (uint32_t i = 0; i < n && shown < 5; i++) {
    double sa = v[i].a ? v[i].a->seconds : 0, sb = v[i].b ? v[i].b->seconds : 0, d = fabs(sb - sa);
    double lo = sa < sb ? sa : sb, hi = sa < sb ? sb : sa;
    if (d < 1e-3 || (lo > 0 && hi < lo * 1.2)) continue;
    ox_buf_puts(b, shown ? ", " : "; passes that changed most: ");
    ox_buf_printf(b, "%s (%s) ", v[i].pass, v[i].phase);
    ms_text(b, v[i].a);
    ox_buf_puts(b, " -> ");
    ms_text(b, v[i].b);
    shown++;
  }
  if (!shown) ox_buf_puts(b, "; no pass's time moved by 1 ms and 20 %");
  ox_buf_putc(b, '\n');
  free(v);
}

/* ---- coverage that moved: the rows of A's and B's coverage (ox_coverage.h) matched by phase,
 * pass and rule, and within a row the reasons by code and their values by text */

typedef struct CovPair {
  const OxCoverageRow *a, *b; /* either may be NULL */
} CovPair;

/* every row of A then the rows only B has; moved: those whose counts differ anywhere */
static CovPair *cov_pairs(const OxCoverage *ca, const OxCoverage *cb, uint32_t *n) {
  CovPair *v = malloc((ca->n_rows + cb->n_rows + 1) * sizeof *v);
  *n = 0;
  if (!v) return NULL;
  for (uint32_t i = 0; i < ca->n_rows; i++) {
    const OxCoverageRow *r = &ca->rows[i];
    v[(*n)++] = (CovPair){r, ox_coverage_find_row(cb, r->phase, r->pass, r->rule)};
  }
  for (uint32_t i = 0; i < cb->n_rows; i++) {
    const OxCoverageRow *r = &cb->rows[i];
    if (!ox_coverage_find_row(ca, r->phase, r->pass, r->rule)) v[(*n)++] = (CovPair){NULL, r};
  }
  return v;
}

#define COV_N(r, f) ((r) ? (r)->f : 0u)

static bool pair_moved(const CovPair *p) { return ox_coverage_rows_differ(p->a, p->b); }

/* Calls fn for each reason code of the pair (A's order, then B's others). */
static void pair_reasons(const CovPair *p, void (*fn)(const OxCoverageReason *, const OxCoverageReason *, void *),
                         void *data) {
  for (uint32_t i = 0; p->a && i < p->a->n_reasons; i++)
    fn(&p->a->reasons[i], ox_coverage_find_reason(p->b, p->a->reasons[i].code), data);
  for (uint32_t i = 0; p->b && i < p->b->n_reasons; i++)
    if (!ox_coverage_find_reason(p->a, p->b->reasons[i].code)) fn(NULL, &p->b->reasons[i], data);
}

/* Calls fn for each value listed under either reason with its count in A and in B (A's order,
 * then the values only B lists). */
static void pair_values(const OxCoverageReason *xa, const OxCoverageReason *xb,
                        void (*fn)(const char *value, uint32_t na, uint32_t nb, void *), void *data) {
  for (uint32_t i = 0; xa && i < xa->n_details; i++)
    fn(xa->details[i].text, xa->details[i].count, ox_coverage_detail_count(xb, xa->details[i].text), data);
  for (uint32_t i = 0; xb && i < xb->n_details; i++)
    if (!ox_coverage_detail_count(xa, xb->details[i].text)) fn(xb->details[i].text, 0, xb->details[i].count, data);
}

static void text_value(const char *value, uint32_t na, uint32_t nb, void *data) {
  if (na != nb) ox_buf_printf(data, "      %s: %u -> %u\n", value, na, nb);
}

static void text_reason(const OxCoverageReason *xa, const OxCoverageReason *xb, void *data) {
  OxBuf *b = data;
  if (!ox_coverage_reasons_differ(xa, xb)) return;
  uint16_t code = xa ? xa->code : xb->code;
  ox_buf_printf(b, "    %s %u -> %u\n", ox_reason_code_name((OxReasonCode)code), COV_N(xa, count), COV_N(xb, count));
  pair_values(xa, xb, text_value, b);
}

static void text_coverage(OxBuf *b, const OxTrace *ta, const OxTrace *tb) {
  OxCoverage *ca = ox_coverage_of(ta), *cb = ox_coverage_of(tb);
  uint32_t n;
  CovPair *v = cov_pairs(ca, cb, &n);
  bool title = false;
  for (uint32_t i = 0; v && i < n; i++) {
    if (!pair_moved(&v[i])) continue;
    if (!title) ox_buf_puts(b, "coverage that moved (per pass and rule, A -> B):\n");
    title = true;
    const OxCoverageRow *r = v[i].a ? v[i].a : v[i].b;
    char name[512];
    ox_buf_printf(b, "  %s", ox_coverage_row_title(r->phase, r->pass, r->rule, name, sizeof name));
    ox_buf_printf(b, ": applied %u -> %u, rejected %u -> %u", COV_N(v[i].a, applied), COV_N(v[i].b, applied),
                  COV_N(v[i].a, rejected), COV_N(v[i].b, rejected));
    if (COV_N(v[i].a, check_failed) || COV_N(v[i].b, check_failed))
      ox_buf_printf(b, ", check failed %u -> %u", COV_N(v[i].a, check_failed), COV_N(v[i].b, check_failed));
    ox_buf_putc(b, '\n');
    pair_reasons(&v[i], text_reason, b);
  }
  if (!title) ox_buf_puts(b, "coverage: the same in both (every pass and rule applied and refused as often, for the same reasons)\n");
  free(v);
  ox_coverage_free(ca);
  ox_coverage_free(cb);
}

typedef struct JsonReasonCtx {
  OxBuf *b;
  bool first;
} JsonReasonCtx;

static void json_value(const char *value, uint32_t na, uint32_t nb, void *data) {
  JsonReasonCtx *c = data;
  ox_buf_puts(c->b, c->first ? "{\"value\": " : ", {\"value\": ");
  c->first = false;
  ox_cli_json_str(c->b, value);
  ox_buf_printf(c->b, ", \"a\": %u, \"b\": %u}", na, nb);
}

static void json_reason(const OxCoverageReason *xa, const OxCoverageReason *xb, void *data) {
  JsonReasonCtx *c = data;
  uint16_t code = xa ? xa->code : xb->code;
  ox_buf_printf(c->b, "%s{\"code\": \"%s\", \"a\": %u, \"b\": %u, \"details\": [", c->first ? "" : ", ",
                ox_reason_code_name((OxReasonCode)code), COV_N(xa, count), COV_N(xb, count));
  JsonReasonCtx values = {c->b, true};
  pair_values(xa, xb, json_value, &values);
  c->first = false;
  ox_buf_puts(c->b, "]}");
}

/* "coverage": every row of either run, with both sides' counts and "moved" */
static void json_coverage(OxBuf *b, const OxTrace *ta, const OxTrace *tb) {
  OxCoverage *ca = ox_coverage_of(ta), *cb = ox_coverage_of(tb);
  uint32_t n;
  CovPair *v = cov_pairs(ca, cb, &n);
  ox_buf_puts(b, "[");
  for (uint32_t i = 0; v && i < n; i++) {
    const OxCoverageRow *r = v[i].a ? v[i].a : v[i].b;
    ox_buf_puts(b, i ? ", {\"pass\": " : "{\"pass\": ");
    ox_cli_json_str(b, r->pass);
    ox_buf_puts(b, ", \"phase\": ");
    ox_cli_json_str(b, r->phase);
    ox_buf_puts(b, ", \"rule\": ");
    if (r->rule) ox_cli_json_str(b, r->rule);
    else ox_buf_puts(b, "null");
    ox_buf_printf(b, ", \"moved\": %s", pair_moved(&v[i]) ? "true" : "false");
    for (int k = 0; k < 2; k++) {
      const OxCoverageRow *x = k ? v[i].b : v[i].a;
      ox_buf_printf(b, ", \"%s\": ", k ? "b" : "a");
      if (!x) ox_buf_puts(b, "null");
      else ox_buf_printf(b, "{\"tried\": %u, \"applied\": %u, \"rejected\": %u, \"check_failed\": %u}", x->attempts,
                         x->applied, x->rejected, x->check_failed);
    }
    ox_buf_puts(b, ", \"reasons\": [");
    JsonReasonCtx c = {b, true};
    pair_reasons(&v[i], json_reason, &c);
    ox_buf_puts(b, "]}");
  }
  ox_buf_puts(b, "]");
  free(v);
  ox_coverage_free(ca);
  ox_coverage_free(cb);
}

static const char *kind_name(uint8_t k) {
  return k == OX_COMPARE_ONLY_A ? "only_a" : k == OX_COMPARE_ONLY_B ? "only_b" : "differs";
}

typedef struct Side {
  const char *path;
  OxTrace *t;
  OxGraph *g; /* the input with the run replayed */
  uint32_t nodes;
  char hash[32];
} Side;

static void json_side(OxBuf *b, const char *key, const Side *s) {
  ox_buf_printf(b, "\"%s\": {\"trace\": ", key);
  ox_cli_json_str(b, s->path);
  ox_buf_printf(b, ", \"records\": %u, \"applied\": %u, \"rejected\": %u, \"check_failed\": %u, \"nodes\": %u, "
                   "\"hash\": \"%s\"}",
                s->t->n_steps, s->t->n_applied, s->t->n_rejected, s->t->n_check_failed, s->nodes, s->hash);
}

int ox_cli_cmd_compare_runs(int argc, char **argv) {
  CliOpts o = {.cmd = "compare-runs", .usage = usage_compare_runs, .want_file2 = true};
  int rc = ox_cli_parse_args(&o, OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_JSON | OPT_INPUT | OPT_ALL, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (!o.file2) return ox_cli_usage_error(&o, "%s", "missing B.trace.json");
  Side sa = {.path = o.file}, sb = {.path = o.file2};
  int status = EXIT_OK;
  if (!(sa.t = ox_cli_read_trace(&o, sa.path)) || !(sb.t = ox_cli_read_trace(&o, sb.path))) status = EXIT_BAD;
  if (status == EXIT_OK) {
    for (int k = 0; k < 2; k++) {
      const Side *s = k ? &sb : &sa;
      if (!s->t->input_hash || !*s->t->input_hash) {
        fprintf(stderr, "optimus compare-runs: %s: the trace has no input hash, so nothing says which graph it ran on\n",
                s->path);
        status = EXIT_BAD;
      }
    }
  }
  if (status == EXIT_OK && strcmp(sa.t->input_hash, sb.t->input_hash) != 0) {
    fprintf(stderr,
            "optimus compare-runs: the runs are of different graphs (input structure hash %s in %s, %s in %s)\n",
            sa.t->input_hash, sa.path, sb.t->input_hash, sb.path);
    status = EXIT_BAD;
  }
  /* the input: --input, else the file a trace names (when it is there) */
  const char *input = o.input;
  for (int k = 0; status == EXIT_OK && !input && k < 2; k++) {
    const OxTrace *t = k ? sb.t : sa.t;
    if (t->input_file && *t->input_file && strcmp(t->input_file, "-") != 0 && access(t->input_file, R_OK) == 0)
      input = t->input_file;
  }
  if (status == EXIT_OK && !input) {
    ox_trace_free(sa.t);
    ox_trace_free(sb.t);
    return ox_cli_usage_error(&o, "%s", "the traces' input file cannot be read: give it with --input FILE");
  }
  OxDoc *doc = NULL;
  OxDiagList diags;
  memset(&diags, 0, sizeof diags);
  OxGraph *g = NULL;
  CliOpts lo = o;
  lo.file = input;
  if (status == EXIT_OK) status = ox_cli_load_for_run(&lo, &doc, &diags, &g);
  for (int k = 0; status == EXIT_OK && k < 2; k++) {
    Side *s = k ? &sb : &sa;
    s->g = ox_graph_clone(g);
    OxDiagList rd;
    ox_diags_init(&rd, s->path);
    if (ox_replay(s->g, s->t, UINT32_MAX, &rd) != 0) {
      ox_diags_print(&rd, stderr);
      status = EXIT_BAD;
    } else {
      s->nodes = ox_cli_count_nodes(s->g);
      snprintf(s->hash, sizeof s->hash, "%016llx", (unsigned long long)ox_graph_structure_hash(s->g));
    }
    ox_diags_clear(&rd);
  }
  bool same_graph = false, same_hash = false;
  OxGraphDiff gd;
  memset(&gd, 0, sizeof gd);
  if (status == EXIT_OK) {
    /* the same structure hash, or no difference once nodes are matched by name and structure
     * (two engine versions may name or order the same graph differently) */
    same_hash = strcmp(sa.hash, sb.hash) == 0;
    ox_graph_diff(sa.g, sb.g, &gd);
    same_graph = same_hash || (!gd.n_changed && !gd.n_added && !gd.n_removed);
    OxCompareResult r;
    ox_compare_traces(sa.t, sb.t, &r);
    OxBuf b;
    ox_buf_init(&b);
    if (o.json) {
      ox_buf_puts(&b, "{\"input\": ");
      ox_cli_json_str(&b, input);
      ox_buf_puts(&b, ", ");
      json_side(&b, "a", &sa);
      ox_buf_puts(&b, ", ");
      json_side(&b, "b", &sb);
      ox_buf_printf(&b,
                    ", \"same\": %u, \"differs\": %u, \"only_a\": %u, \"only_b\": %u, \"only_a_applied\": %u, "
                    "\"only_b_applied\": %u, \"final_graphs_equal\": %s, \"final_diff\": {\"changed\": %u, "
                    "\"removed\": %u, \"added\": %u, \"regions\": %u}",
                    r.n_same, r.n_differs, r.n_only_a, r.n_only_b, r.n_only_a_applied, r.n_only_b_applied,
                    same_graph ? "true" : "false", gd.n_changed, gd.n_removed, gd.n_added, gd.n_regions);
      ox_buf_printf(&b, ", \"seconds\": {\"a\": %.6f, \"b\": %.6f}, \"passes\": [", sa.t->seconds, sb.t->seconds);
      uint32_t np;
      PassPair *pv = pass_pairs(sa.t, sb.t, &np);
      for (uint32_t i = 0; i < np; i++) {
        ox_buf_puts(&b, i ? ", {\"pass\": " : "{\"pass\": ");
        ox_cli_json_str(&b, pv[i].pass);
        ox_buf_printf(&b, ", \"phase\": \"%s\", \"a\": ", pv[i].phase);
        json_stat(&b, pv[i].a);
        ox_buf_puts(&b, ", \"b\": ");
        json_stat(&b, pv[i].b);
        ox_buf_putc(&b, '}');
      }
      free(pv);
      ox_buf_puts(&b, "], \"coverage\": ");
      json_coverage(&b, sa.t, sb.t);
      ox_buf_puts(&b, ", \"entries\": [");
      for (uint32_t i = 0; i < r.n; i++) {
        const OxCompareEntry *e = &r.entries[i];
        const OxStep *a = e->a_seq != OX_COMPARE_NONE ? &sa.t->steps[e->a_seq] : NULL;
        const OxStep *bs = e->b_seq != OX_COMPARE_NONE ? &sb.t->steps[e->b_seq] : NULL;
        const OxStep *s = a ? a : bs;
        ox_buf_printf(&b, "%s{\"kind\": \"%s\", \"phase\": ", i ? ", " : "", kind_name(e->kind));
        ox_cli_json_str(&b, s->phase);
        ox_buf_puts(&b, ", \"pass\": ");
        ox_cli_json_str(&b, s->pass);
        ox_buf_puts(&b, ", \"rule\": ");
        ox_cli_json_str(&b, s->rule);
        ox_buf_puts(&b, ", \"anchor\": ");
        ox_cli_json_str(&b, s->anchor);
        ox_buf_puts(&b, ", \"a\": ");
        json_step(&b, a);
        ox_buf_puts(&b, ", \"b\": ");
        json_step(&b, bs);
        ox_buf_puts(&b, "}");
      }
      ox_buf_puts(&b, "]}\n");
    } else {
      ox_buf_printf(&b, "A: %s: %u records, %u applied; final graph %u nodes\n", sa.path, sa.t->n_steps,
                    sa.t->n_applied, sa.nodes);
      ox_buf_printf(&b, "B: %s: %u records, %u applied; final graph %u nodes\n", sb.path, sb.t->n_steps,
                    sb.t->n_applied, sb.nodes);
      ox_buf_printf(&b, "aligned: %u the same, %u with another outcome; only in A: %u (%u applied); only in B: %u (%u applied)\n",
                    r.n_same, r.n_differs, r.n_only_a, r.n_only_a_applied, r.n_only_b, r.n_only_b_applied);
      text_time(&b, sa.t, sb.t);
      text_coverage(&b, sa.t, sb.t);
      static const char *const titles[] = {"only in A:\n", "only in B:\n", "outcome differs:\n"};
      uint32_t hidden = 0;
      for (uint8_t kind = 0; kind < 3; kind++) {
        uint8_t k = kind == 1 ? OX_COMPARE_DIFFERS : kind == 2 ? OX_COMPARE_ONLY_B : OX_COMPARE_ONLY_A;
        bool title = false;
        for (uint32_t i = 0; i < r.n; i++) {
          const OxCompareEntry *e = &r.entries[i];
          if (e->kind != k) continue;
          const OxStep *a = e->a_seq != OX_COMPARE_NONE ? &sa.t->steps[e->a_seq] : NULL;
          const OxStep *bs = e->b_seq != OX_COMPARE_NONE ? &sb.t->steps[e->b_seq] : NULL;
          const OxStep *s = a ? a : bs;
          if (!o.all && (!a || a->kind == OX_STEP_REJECTED) && (!bs || bs->kind == OX_STEP_REJECTED)) {
            hidden++;
            continue;
          }
          if (!title) ox_buf_puts(&b, titles[k]);
          title = true;
          ox_buf_printf(&b, "  %s%s%s at %s: ", s->pass ? s->pass : "?", s->rule ? " / " : "", s->rule ? s->rule : "",
                        s->anchor ? s->anchor : "?");
          if (a) text_step(&b, "A", a);
          if (a && bs) ox_buf_puts(&b, "; ");
          if (bs) text_step(&b, "B", bs);
          ox_buf_putc(&b, '\n');
        }
      }
      if (hidden)
        ox_buf_printf(&b, "(%u more that are rejections on every side they occur on: --all or --json lists them)\n",
                      hidden);
      if (same_hash)
        ox_buf_printf(&b, "final graphs: the same (structure hash %s)\n", sa.hash);
      else if (same_graph)
        ox_buf_printf(&b, "final graphs: the same up to node names and order (%u matched by structure)\n",
                      gd.n_by_structure);
      else
        ox_buf_printf(&b,
                      "final graphs: differ (A %u nodes, B %u nodes: %u changed, %u removed, %u added in %u "
                      "region%s; optimus diff shows them)\n",
                      sa.nodes, sb.nodes, gd.n_changed, gd.n_removed, gd.n_added, gd.n_regions,
                      gd.n_regions == 1 ? "" : "s");
    }
    if (!ox_cli_write_stdout(b.data, b.len)) status = EXIT_BAD;
    ox_buf_free(&b);
    ox_compare_result_free(&r);
  }
  ox_graph_diff_free(&gd);
  if (status == EXIT_OK && !same_graph) status = EXIT_BAD;
  ox_graph_free(sa.g);
  ox_graph_free(sb.g);
  ox_trace_free(sa.t);
  ox_trace_free(sb.t);
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}
