/* cmd-info.c - `optimus info`: format, graphs, node counts and op histogram of a dump, as text or JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ir/ox_mem.h"
#include "run/ox_cost.h"
#include "run/ox_coverage.h"
#include "run/ox_record.h"
#include "run/ox_trace.h"

static const char usage_info[] =
  "Usage: optimus info FILE [OPTIONS]\n"
  "\n"
  "Print the detected format, the graphs found and, for one graph, its node count,\n"
  "placeholders and op histogram (target -> count). Warnings go to stderr.\n"
  "Given a trace (optimize --trace T.json, or T.json.gz), print its summary instead: the\n"
  "run's input, checks, records, rejections by reason, counters, time per pass and the\n"
  "coverage: per pass and rule, how often it was tried and applied, and why it was refused\n"
  "(reason codes with the value that decided, e.g. the sub-pattern a match failed at, and the\n"
  "first record of each, numbered from 1 as the debugger numbers them).\n"
  "\n"
  "Options:\n"
  "  --json            print one JSON object instead of text\n"
  "  --graph N         the graph to describe (1-based; default 1)\n"
  "  --strict          treat warnings as errors\n"
  "  --format F        input format: fx-text, fx-readable or json (default: detect)\n"
  "  -h, --help        show this help\n";

/* ------------------------------------------------------------------ info */

typedef struct OpCount {
  const char *key;
  uint32_t count;
} OpCount;

static int cmp_opcount_key(const void *a, const void *b) {
  return strcmp(((const OpCount *)a)->key, ((const OpCount *)b)->key);
}

static int cmp_opcount(const void *a, const void *b) {
  const OpCount *x = a, *y = b;
  if (x->count != y->count) return x->count > y->count ? -1 : 1;
  return strcmp(x->key, y->key);
}

/* The histogram key of a call node: the target; for call_module the module class when the
 * dump names it (a module path such as "layer1.0.conv1" is unique per module, so counting
 * it says nothing). */
static const char *op_key(const OxNode *n) {
  if (n->op == OX_OP_CALL_MODULE && n->module_type) return n->module_type;
  return n->target ? n->target : "";
}

/* Op histogram of the call_* nodes, sorted by count (descending) then name. Caller frees.
 * Keys are counted by pointer (a name map: targets are interned, a graph has a few dozen
 * distinct ones), then equal texts under different pointers are merged; sorting all 100k keys
 * by strcmp was 6 % of `info` at 100k nodes. */
static OpCount *op_histogram(const OxGraph *g, uint32_t *n_out) {
  OxNameMap *ix = ox_namemap_new(); /* key -> 1 + its index in tab */
  uint32_t n = 0, cap = 64;
  OpCount *tab = ox_xrealloc(NULL, cap * sizeof *tab);
  OX_GRAPH_FOREACH(g, id) {
    OxOp op = (OxOp)g->nodes[id].op;
    if (op != OX_OP_CALL_FUNCTION && op != OX_OP_CALL_METHOD && op != OX_OP_CALL_MODULE) continue;
    const char *key = op_key(&g->nodes[id]);
    uint32_t at = ox_namemap_get(ix, key);
    if (at) {
      tab[at - 1].count++;
      continue;
    }
    if (n == cap) tab = ox_xrealloc(tab, (cap *= 2) * sizeof *tab);
    tab[n++] = (OpCount){key, 1};
    ox_namemap_set(ix, key, n);
  }
  ox_namemap_free(ix);
  /* the distinct keys, by text; equal texts merged */
  qsort(tab, n, sizeof *tab, cmp_opcount_key);
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (m && strcmp(tab[m - 1].key, tab[i].key) == 0) tab[m - 1].count += tab[i].count;
    else tab[m++] = tab[i];
  }
  qsort(tab, m, sizeof *tab, cmp_opcount);
  *n_out = m;
  return tab;
}

static uint32_t count_op(const OxGraph *g, OxOp op) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id)
  if (g->nodes[id].op == op) n++;
  return n;
}

static void json_diags(OxBuf *b, const OxDiagList *d, OxSeverity sev) {
  ox_buf_putc(b, '[');
  bool first = true;
  for (size_t i = 0; i < d->n; i++) {
    if (d->items[i].sev != sev) continue;
    char *s = ox_diag_format(d, &d->items[i]);
    if (!first) ox_buf_puts(b, ", ");
    ox_cli_json_str(b, s);
    free(s);
    first = false;
  }
  ox_buf_putc(b, ']');
}

/* What a document's record holds: tensors per section, recorded values (fill recipes count their
 * shape's), how many are fill recipes. */
typedef struct RecordSummary {
  uint32_t inputs, params, outputs, fills;
  int64_t values;
} RecordSummary;

static void summarize_section(const OxRecordTensor *e, uint32_t n, uint32_t *count, RecordSummary *s) {
  for (uint32_t i = 0; i < n; i++) {
    if (!ox_record_has_tensor(&e[i])) continue;
    (*count)++;
    s->fills += e[i].fill.present;
    s->values += e[i].t ? e[i].t->numel : ox_shape_numel(e[i].fill.rank, e[i].fill.shape);
  }
}

static RecordSummary record_summary(const OxRecord *r) {
  RecordSummary s = {0};
  summarize_section(r->inputs, r->n_inputs, &s.inputs, &s);
  summarize_section(r->params, r->n_params, &s.params, &s);
  summarize_section(r->outputs, r->n_outputs, &s.outputs, &s);
  return s;
}

static void info_json(const CliOpts *o, const OxDoc *doc, const OxDiagList *diags, OxBuf *b) {
  ox_buf_puts(b, "{\n  \"file\": ");
  ox_cli_json_str(b, o->file);
  ox_buf_puts(b, ",\n  \"format\": ");
  ox_cli_json_str(b, doc ? ox_format_name(doc->format) : NULL);
  if (doc) {
    uint32_t gi = o->graph ? o->graph : 1;
    const OxGraph *g = doc->graphs[gi - 1];
    ox_buf_printf(b, ",\n  \"graph\": %u,\n  \"name\": ", gi);
    ox_cli_json_str(b, g->name);
    ox_buf_puts(b, ",\n  \"graphs\": [");
    for (uint32_t i = 0; i < doc->n_graphs; i++) {
      ox_buf_printf(b, "%s{\"index\": %u, \"name\": ", i ? ", " : "", i + 1);
      ox_cli_json_str(b, doc->graphs[i]->name);
      ox_buf_printf(b, ", \"nodes\": %u, \"subgraphs\": %u}", ox_cli_count_nodes(doc->graphs[i]),
                    doc->graphs[i]->n_subgraphs);
    }
    ox_buf_printf(b, "],\n  \"nodes\": %u,\n  \"placeholders\": %u,\n  \"get_attrs\": %u,\n  \"outputs\": %u",
                  ox_cli_count_nodes(g), count_op(g, OX_OP_PLACEHOLDER), count_op(g, OX_OP_GET_ATTR),
                  count_op(g, OX_OP_OUTPUT));
    ox_buf_puts(b, ",\n  \"subgraphs\": [");
    for (uint32_t i = 0; i < g->n_subgraphs; i++) {
      ox_buf_puts(b, i ? ", {\"name\": " : "{\"name\": ");
      ox_cli_json_str(b, g->subgraphs[i]->name);
      ox_buf_puts(b, ", \"owner\": ");
      ox_cli_json_str(b, g->subgraphs[i]->sub_owner);
      ox_buf_printf(b, ", \"nodes\": %u}", ox_cli_count_nodes(g->subgraphs[i]));
    }
    ox_buf_puts(b, "],\n  \"ops\": {");
    uint32_t nh = 0;
    OpCount *hist = op_histogram(g, &nh);
    for (uint32_t i = 0; i < nh; i++) {
      ox_buf_puts(b, i ? ",\n    " : "\n    ");
      ox_cli_json_str(b, hist[i].key);
      ox_buf_printf(b, ": %u", hist[i].count);
    }
    free(hist);
    ox_buf_puts(b, nh ? "\n  }" : "}");
    ox_buf_puts(b, ",\n  \"record\": ");
    if (doc->record) {
      RecordSummary s = record_summary(doc->record);
      ox_buf_printf(b, "{\"inputs\": %u, \"params\": %u, \"outputs\": %u, \"values\": %lld, \"fills\": %u}",
                    s.inputs, s.params, s.outputs, (long long)s.values, s.fills);
    } else {
      ox_buf_puts(b, "null");
    }
  }
  ox_buf_puts(b, ",\n  \"warnings\": ");
  json_diags(b, diags, OX_SEV_WARNING);
  ox_buf_puts(b, ",\n  \"errors\": ");
  json_diags(b, diags, OX_SEV_ERROR);
  ox_buf_puts(b, "\n}\n");
}

static void info_text(const CliOpts *o, const OxDoc *doc, const OxDiagList *diags, OxBuf *b) {
  uint32_t gi = o->graph ? o->graph : 1;
  const OxGraph *g = doc->graphs[gi - 1];
  ox_buf_printf(b, "file: %s\nformat: %s\ngraphs: %u\n", o->file, ox_format_name(doc->format), doc->n_graphs);
  if (doc->n_graphs > 1)
    for (uint32_t i = 0; i < doc->n_graphs; i++)
      ox_buf_printf(b, "  %u  %s  %u nodes\n", i + 1, doc->graphs[i]->name ? doc->graphs[i]->name : "graph",
                    ox_cli_count_nodes(doc->graphs[i]));
  ox_buf_printf(b, "graph %u: %s\n", gi, g->name ? g->name : "graph");
  ox_buf_printf(b, "  nodes: %u\n  placeholders: %u\n", ox_cli_count_nodes(g),
                count_op(g, OX_OP_PLACEHOLDER));
  uint32_t n_attr = count_op(g, OX_OP_GET_ATTR);
  if (n_attr) ox_buf_printf(b, "  get_attr: %u\n", n_attr);
  ox_buf_printf(b, "  output: %s\n", ox_graph_output(g) ? "yes" : "no (fragment)");
  if (g->n_subgraphs) {
    ox_buf_printf(b, "  subgraphs: %u\n", g->n_subgraphs);
    for (uint32_t i = 0; i < g->n_subgraphs; i++)
      ox_buf_printf(b, "    %s%s%s: %u nodes\n", g->subgraphs[i]->name ? g->subgraphs[i]->name : "graph",
                    g->subgraphs[i]->sub_owner ? " of " : "",
                    g->subgraphs[i]->sub_owner ? g->subgraphs[i]->sub_owner : "",
                    ox_cli_count_nodes(g->subgraphs[i]));
  }
  uint32_t nh = 0;
  OpCount *hist = op_histogram(g, &nh);
  ox_buf_printf(b, "ops: %u distinct\n", nh);
  for (uint32_t i = 0; i < nh; i++) ox_buf_printf(b, "  %6u  %s\n", hist[i].count, hist[i].key);
  free(hist);
  if (doc->record) {
    RecordSummary s = record_summary(doc->record);
    ox_buf_printf(b, "record: %u input%s, %u param%s, %u output%s; %lld values", s.inputs, s.inputs == 1 ? "" : "s",
                  s.params, s.params == 1 ? "" : "s", s.outputs, s.outputs == 1 ? "" : "s", (long long)s.values);
    if (s.fills) ox_buf_printf(b, " (%u tensor%s as fill recipes)", s.fills, s.fills == 1 ? "" : "s");
    ox_buf_putc(b, '\n');
  }
  ox_buf_printf(b, "warnings: %zu\n", diags->n_warnings);
}

/* ------------------------------------------------------------------ info of a trace */

/* A trace, plain or gzipped, rather than a dump: decided from the file's first bytes (the
 * gzip magic: no dump is gzipped; or a JSON object whose first 512 bytes say "optimus-trace"),
 * without reading a large dump twice. stdin is never taken for a trace. */
static bool file_is_trace(const char *path) {
  if (!path || strcmp(path, "-") == 0) return false;
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  char head[513];
  size_t n = fread(head, 1, sizeof head - 1, f);
  fclose(f);
  head[n] = 0;
  if (n >= 2 && (unsigned char)head[0] == 0x1f && (unsigned char)head[1] == 0x8b) return true;
  size_t i = 0;
  while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r')) i++;
  return i < n && head[i] == '{' && strstr(head + i, "\"optimus-trace\"") != NULL;
}

/* Rejections by reason code, most frequent first: counts[code]. */
static uint32_t reason_counts(const OxTrace *t, uint32_t counts[OX_REASON_COUNT], uint16_t order[OX_REASON_COUNT]) {
  memset(counts, 0, OX_REASON_COUNT * sizeof *counts);
  for (uint32_t i = 0; i < t->n_steps; i++)
    if (t->steps[i].kind != OX_STEP_APPLIED && t->steps[i].reason.code < OX_REASON_COUNT)
      counts[t->steps[i].reason.code]++;
  uint32_t n = 0;
  for (uint16_t c = 0; c < OX_REASON_COUNT; c++)
    if (counts[c]) order[n++] = c;
  for (uint32_t i = 1; i < n; i++) /* insertion sort: a few dozen codes; ties in code order */
    for (uint32_t j = i; j > 0 && counts[order[j]] > counts[order[j - 1]]; j--) {
      uint16_t x = order[j];
      order[j] = order[j - 1];
      order[j - 1] = x;
    }
  return n;
}

static void coverage_text(const OxCoverage *c, OxBuf *b) {
  ox_buf_puts(b, "coverage (per pass and rule, in run order; why it was refused, with the first record #N):\n");
  for (uint32_t i = 0; i < c->n_rows; i++) {
    const OxCoverageRow *r = &c->rows[i];
    char title[512];
    ox_buf_printf(b, "  %s: %u tried, %u applied", ox_coverage_row_title(r->phase, r->pass, r->rule, title, sizeof title),
                  r->attempts, r->applied);
    if (r->rejected) ox_buf_printf(b, ", %u rejected", r->rejected);
    if (r->check_failed) ox_buf_printf(b, ", %u check failed", r->check_failed);
    ox_buf_printf(b, " (#%u)\n", r->first + 1);
    for (uint32_t j = 0; j < r->n_reasons; j++) {
      const OxCoverageReason *x = &r->reasons[j];
      ox_buf_printf(b, "    %s %u (#%u)\n", ox_reason_code_name((OxReasonCode)x->code), x->count, x->first + 1);
      for (uint32_t k = 0; k < x->n_details; k++)
        ox_buf_printf(b, "      %6u  %s (#%u)\n", x->details[k].count, x->details[k].text, x->details[k].first + 1);
      if (x->n_other) ox_buf_printf(b, "      %6u  other values\n", x->n_other);
    }
  }
}

static void coverage_json(const OxCoverage *c, OxBuf *b) {
  ox_buf_putc(b, '[');
  for (uint32_t i = 0; i < c->n_rows; i++) {
    const OxCoverageRow *r = &c->rows[i];
    ox_buf_puts(b, i ? ", {\"pass\": " : "{\"pass\": ");
    ox_cli_json_str(b, r->pass);
    ox_buf_puts(b, ", \"phase\": ");
    ox_cli_json_str(b, r->phase);
    ox_buf_puts(b, ", \"rule\": ");
    if (r->rule)
      ox_cli_json_str(b, r->rule);
    else
      ox_buf_puts(b, "null");
    ox_buf_printf(b, ", \"tried\": %u, \"applied\": %u, \"rejected\": %u, \"check_failed\": %u, \"first_step\": %u, "
                     "\"first_applied_step\": ",
                  r->attempts, r->applied, r->rejected, r->check_failed, r->first + 1);
    if (r->first_applied != UINT32_MAX)
      ox_buf_printf(b, "%u", r->first_applied + 1);
    else
      ox_buf_puts(b, "null");
    ox_buf_puts(b, ", \"reasons\": [");
    for (uint32_t j = 0; j < r->n_reasons; j++) {
      const OxCoverageReason *x = &r->reasons[j];
      ox_buf_printf(b, "%s{\"code\": \"%s\", \"count\": %u, \"first_step\": %u, \"details\": [", j ? ", " : "",
                    ox_reason_code_name((OxReasonCode)x->code), x->count, x->first + 1);
      for (uint32_t k = 0; k < x->n_details; k++) {
        ox_buf_puts(b, k ? ", {\"value\": " : "{\"value\": ");
        ox_cli_json_str(b, x->details[k].text);
        ox_buf_printf(b, ", \"count\": %u, \"first_step\": %u}", x->details[k].count, x->details[k].first + 1);
      }
      ox_buf_printf(b, "], \"other\": %u}", x->n_other);
    }
    ox_buf_puts(b, "]}");
  }
  ox_buf_putc(b, ']');
}

static int info_trace(const CliOpts *o) {
  OxTrace *t = ox_cli_read_trace(o, o->file); /* errors (located) and warnings printed */
  if (!t) return EXIT_BAD;
  uint32_t counts[OX_REASON_COUNT];
  uint16_t order[OX_REASON_COUNT];
  uint32_t n_codes = reason_counts(t, counts, order);
  OxCoverage *cov = ox_coverage_of(t);
  OxBuf b;
  ox_buf_init(&b);
  char cb[256];
  if (o->json) {
    ox_buf_puts(&b, "{\"file\": ");
    ox_cli_json_str(&b, o->file);
    ox_buf_puts(&b, ", \"format\": \"optimus-trace\", \"input\": {\"file\": ");
    ox_cli_json_str(&b, t->input_file);
    ox_buf_puts(&b, ", \"hash\": ");
    ox_cli_json_str(&b, t->input_hash);
    ox_buf_puts(&b, "}, \"checks\": ");
    ox_cli_json_str(&b, t->checks);
    ox_buf_printf(&b,
                  ", \"summary\": {\"steps\": %u, \"applied\": %u, \"rejected\": %u, \"check_failed\": %u, "
                  "\"graph_steps\": %u}, \"seconds\": %.6f, \"cost\": ",
                  t->n_steps, t->n_applied, t->n_rejected, t->n_check_failed, t->n_graph_steps, t->seconds);
    if (t->cost.set)
      ox_cli_json_cost(&b, &t->cost);
    else
      ox_buf_puts(&b, "null");
    ox_buf_puts(&b, ", \"reasons\": {");
    for (uint32_t i = 0; i < n_codes; i++)
      ox_buf_printf(&b, "%s\"%s\": %u", i ? ", " : "", ox_reason_code_name((OxReasonCode)order[i]), counts[order[i]]);
    ox_buf_puts(&b, "}, \"counters\": ");
    ox_cli_json_counters(&b, t->counter_names, t->counter_values, t->n_counters);
    ox_buf_puts(&b, ", \"passes\": [");
    ox_cli_json_pass_stats(&b, t);
    ox_buf_puts(&b, "], \"coverage\": ");
    coverage_json(cov, &b);
    ox_buf_puts(&b, "}\n");
  } else {
    ox_buf_printf(&b, "%s: an Optimus trace of %s (input hash %s)\n", o->file,
                  t->input_file && *t->input_file ? t->input_file : "an unnamed input",
                  t->input_hash ? t->input_hash : "missing");
    ox_buf_printf(&b, "checks: %s\n", t->checks && *t->checks ? t->checks : "none recorded");
    char took[32];
    ox_buf_printf(&b, "records: %u (%u applied, %u rejected, %u check failures) in %s\n", t->n_steps,
                  t->n_applied, t->n_rejected, t->n_check_failed, ox_fmt_duration(t->seconds, took, sizeof took));
    if (t->cost.set) ox_buf_printf(&b, "estimated cost: %s\n", ox_cost_format_pair(&t->cost, cb, sizeof cb));
    if (n_codes) {
      ox_buf_puts(&b, "rejections by reason:");
      for (uint32_t i = 0; i < n_codes; i++)
        ox_buf_printf(&b, "%s %s %u", i ? "," : "", ox_reason_code_name((OxReasonCode)order[i]), counts[order[i]]);
      ox_buf_putc(&b, '\n');
    }
    if (t->n_counters) {
      ox_buf_puts(&b, "counters:");
      for (uint32_t i = 0; i < t->n_counters; i++)
        ox_buf_printf(&b, "%s %s %lld", i ? "," : "", t->counter_names[i], (long long)t->counter_values[i]);
      ox_buf_putc(&b, '\n');
    }
    if (t->n_pass_stats) {
      ox_buf_puts(&b, "time per pass:\n");
      ox_cli_pass_table(t, t->seconds, &b);
    } else {
      ox_buf_puts(&b, "time per pass: none in this trace (written before 2026-12-07, or its table was left out)\n");
    }
    if (cov->n_rows)
      coverage_text(cov, &b);
    else
      ox_buf_puts(&b, "coverage: no records (no pass tried anything on this graph)\n");
  }
  ox_coverage_free(cov);
  int status = ox_cli_write_stdout(b.data, b.len) ? EXIT_OK : EXIT_BAD;
  ox_buf_free(&b);
  ox_trace_free(t);
  return status;
}

int ox_cli_cmd_info(int argc, char **argv) {
  CliOpts o = {.cmd = "info", .usage = usage_info};
  int rc =
      ox_cli_parse_args(&o, OPT_JSON | OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_INPUT_SHAPE, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (!o.format && file_is_trace(o.file)) {
    if (o.graph > 1) return ox_cli_usage_error(&o, "%s", "--graph does not apply to a trace");
    return info_trace(&o);
  }
  OxDoc *doc = NULL;
  OxDiagList diags;
  int status = EXIT_OK;
  if (ox_cli_load_input(&o, &doc, &diags) != 0) {
    status = EXIT_BAD;
  } else if (!ox_cli_graph_in_range(&o, doc)) {
    status = EXIT_BAD;
    ox_doc_free(doc);
    doc = NULL;
    ox_diag_add(&diags, OX_SEV_ERROR, 0, 0, NULL, "--graph %u is out of range", o.graph);
  }
  OxBuf b;
  ox_buf_init(&b);
  if (o.json)
    info_json(&o, doc, &diags, &b);
  else if (doc)
    info_text(&o, doc, &diags, &b);
  if (b.len && !ox_cli_write_stdout(b.data, b.len)) {
    fprintf(stderr, "optimus info: cannot write to standard output\n");
    status = EXIT_BAD;
  }
  ox_buf_free(&b);
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}
