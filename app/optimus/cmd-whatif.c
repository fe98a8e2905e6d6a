/* cmd-whatif.c - `optimus whatif`: the pipeline re-run with options changed and/or recorded
 * rewrites refused (engine/run/ox_whatif.h), compared decision by decision with the base run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/ox_whatif.h"
#include "cli.h"

static const char usage_whatif[] =
  "Usage: optimus whatif FILE [--trace T] (--option P.K=V | --disable-step N)... [OPTIONS]\n"
  "\n"
  "Re-run the pipeline on FILE with some pass options changed and/or some recorded rewrites\n"
  "refused, and report the decisions that differ from the base run: rewrites the re-run makes\n"
  "that the base did not (newly applied, with the base's reason for not making them) and\n"
  "rewrites of the base the re-run does not make (newly rejected, with the re-run's reason),\n"
  "per pass, and the change in node count. The base is the run recorded in T, or a run of the\n"
  "same pipeline made here. The passes before the first one the change can affect are\n"
  "replayed from the base's records, not searched again.\n"
  "\n"
  "Options:\n"
  "  --option P.K=V        the change: option K of pass P is V in the re-run (repeatable)\n"
  "  --disable-step N      the change: refuse the rewrite of applied step #N of the base\n"
  "                        (its record number, as explain and the report show it; repeatable)\n"
  "  --trace T.json        the base run (its configuration and checks are used unless\n"
  "                        --config / --passes / --rules / --checks are given)\n"
  "  --only-pass P         report only the decisions of pass P (the counts stay whole-run)\n"
  "  -o, --output OUT      write the re-run's optimized graph (format as for convert)\n"
  "  --to KIND             json, fx, dot, svg or png (overrides the extension)\n"
  "  --json                print one JSON object (docs/cli.md)\n"
  "  --config, --passes, --rules, --checks, --numeric-budget, --budget, --input-shape,\n"
  "  --shapes, --graph, --strict, --format   as for optimize (they define the base run)\n"
  "  -h, --help            show this help\n";

static const char *change_name(uint8_t c) { return c == OX_WHATIF_NEWLY_APPLIED ? "newly_applied" : "newly_rejected"; }

static const OxStep *main_step(const OxWhatifResult *r, const OxWhatifDecision *x) {
  return x->change == OX_WHATIF_NEWLY_APPLIED ? ox_whatif_alt_step(r, x) : ox_whatif_base_step(r, x);
}

/* The record that says why the decision was not made on its other side, or NULL. */
static const OxStep *reason_step(const OxWhatifResult *r, const OxWhatifDecision *x) {
  const OxStep *s = x->change == OX_WHATIF_NEWLY_APPLIED ? ox_whatif_base_step(r, x) : ox_whatif_alt_step(r, x);
  return s && s->kind != OX_STEP_APPLIED ? s : NULL;
}

static bool wanted(const CliOpts *o, const OxStep *s) {
  return !o->only_pass || (s && s->pass && strcmp(s->pass, o->only_pass) == 0);
}

/* Per pass, in the order passes first appear among the decisions. */
typedef struct PassCount {
  const char *pass;
  uint32_t applied, rejected;
} PassCount;

static uint32_t count_per_pass(const OxWhatifResult *r, const CliOpts *o, PassCount *pc) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < r->n_decisions; i++) {
    const OxStep *s = main_step(r, &r->decisions[i]);
    if (!wanted(o, s)) continue;
    const char *pass = s->pass ? s->pass : "?";
    uint32_t k = 0;
    while (k < n && strcmp(pc[k].pass, pass) != 0) k++;
    if (k == n) pc[n++] = (PassCount){pass, 0, 0};
    if (r->decisions[i].change == OX_WHATIF_NEWLY_APPLIED)
      pc[k].applied++;
    else
      pc[k].rejected++;
  }
  return n;
}

static void put_seq(OxBuf *b, uint32_t seq) {
  if (seq == OX_WHATIF_NONE)
    ox_buf_puts(b, "null");
  else
    ox_buf_printf(b, "%u", seq + 1);
}

static void put_json(OxBuf *b, const CliOpts *o, const OxWhatifResult *r) {
  ox_buf_puts(b, "{\"file\": ");
  ox_cli_json_str(b, o->file);
  ox_buf_puts(b, ", \"trace\": ");
  ox_cli_json_str(b, o->trace);
  ox_buf_puts(b, ", \"options\": [");
  for (uint32_t i = 0; i < o->n_options; i++) {
    if (i) ox_buf_puts(b, ", ");
    ox_cli_json_str(b, o->options[i]);
  }
  ox_buf_puts(b, "], \"disabled_steps\": [");
  for (uint32_t i = 0; i < o->n_disable_steps; i++) ox_buf_printf(b, "%s%u", i ? ", " : "", o->disable_steps[i]);
  ox_buf_puts(b, "], \"only_pass\": ");
  ox_cli_json_str(b, o->only_pass);
  ox_buf_printf(b,
                ", \"base_nodes\": %u, \"alt_nodes\": %u, \"node_delta\": %lld, \"base_applied\": %u, "
                "\"alt_applied\": %u, \"newly_applied\": %u, \"newly_rejected\": %u, \"replayed\": %u, "
                "\"seconds\": %.6f, \"passes\": [",
                r->base_nodes, r->alt_nodes, (long long)r->alt_nodes - (long long)r->base_nodes, r->base_applied,
                r->alt_applied, r->n_newly_applied, r->n_newly_rejected, r->alt_from, r->seconds);
  PassCount *pc = calloc(r->n_decisions + 1, sizeof *pc);
  if (!pc) exit(EXIT_BAD);
  uint32_t np = count_per_pass(r, o, pc);
  for (uint32_t i = 0; i < np; i++) {
    ox_buf_puts(b, i ? ", {\"pass\": " : "{\"pass\": ");
    ox_cli_json_str(b, pc[i].pass);
    ox_buf_printf(b, ", \"newly_applied\": %u, \"newly_rejected\": %u}", pc[i].applied, pc[i].rejected);
  }
  free(pc);
  ox_buf_puts(b, "], \"decisions\": [");
  bool first = true;
  for (uint32_t i = 0; i < r->n_decisions; i++) {
    const OxWhatifDecision *x = &r->decisions[i];
    const OxStep *s = main_step(r, x), *why = reason_step(r, x);
    if (!wanted(o, s)) continue;
    ox_buf_puts(b, first ? "{\"change\": \"" : ", {\"change\": \"");
    first = false;
    ox_buf_printf(b, "%s\", \"pass\": ", change_name(x->change));
    ox_cli_json_str(b, s->pass);
    ox_buf_puts(b, ", \"rule\": ");
    ox_cli_json_str(b, s->rule);
    ox_buf_puts(b, ", \"anchor\": ");
    ox_cli_json_str(b, s->anchor);
    ox_buf_printf(b, ", \"removed\": %u, \"added\": %u, \"reason\": ", s->n_removed, s->n_added);
    char *text = why ? ox_reason_format(&why->reason) : NULL;
    ox_cli_json_str(b, text);
    free(text);
    ox_buf_puts(b, ", \"reason_code\": ");
    ox_cli_json_str(b, why ? ox_reason_code_name((OxReasonCode)why->reason.code) : NULL);
    ox_buf_puts(b, ", \"base_seq\": ");
    put_seq(b, x->base_seq);
    ox_buf_puts(b, ", \"alt_seq\": ");
    put_seq(b, x->alt_seq);
    ox_buf_puts(b, "}");
  }
  ox_buf_puts(b, "]}\n");
}

static void put_text(OxBuf *b, const CliOpts *o, const OxWhatifResult *r, const OxWhatifSpec *spec) {
  if (!o->only_pass) {
    ox_whatif_format(r, spec, b);
  } else {
    /* the report's lines of that pass only: format, then keep the header and its lines */
    OxBuf all;
    ox_buf_init(&all);
    ox_whatif_format(r, spec, &all);
    ox_buf_putc(&all, 0);
    char *save = NULL;
    uint32_t k = 0;
    for (char *line = strtok_r(all.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      bool decision = (line[0] == ' ' && line[1] == ' ' && (line[2] == '+' || line[2] == '-') && line[3] == ' ');
      if (decision) {
        /* decision lines come in r->decisions order */
        const OxStep *s = k < r->n_decisions ? main_step(r, &r->decisions[k]) : NULL;
        k++;
        if (!wanted(o, s)) continue;
      }
      ox_buf_printf(b, "%s\n", line);
    }
    ox_buf_free(&all);
  }
  PassCount *pc = calloc(r->n_decisions + 1, sizeof *pc);
  if (!pc) exit(EXIT_BAD);
  uint32_t np = count_per_pass(r, o, pc);
  if (np) ox_buf_puts(b, "per pass:\n");
  for (uint32_t i = 0; i < np; i++)
    ox_buf_printf(b, "  %-40s %u newly applied, %u newly rejected\n", pc[i].pass, pc[i].applied, pc[i].rejected);
  if (!np) ox_buf_printf(b, "no decision differs%s%s\n", o->only_pass ? " in pass " : "", o->only_pass ? o->only_pass : "");
  free(pc);
  if (o->output && strcmp(o->output, "-") != 0) ox_buf_printf(b, "wrote %s\n", o->output);
}

int ox_cli_cmd_whatif(int argc, char **argv) {
  CliOpts o = {.cmd = "whatif", .usage = usage_whatif};
  int rc = ox_cli_parse_args(&o,
                             OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_OUTPUT | OPT_TO | OPT_JSON | OPT_INPUT_SHAPE |
                                 OPT_TRACE | OPT_CONFIG | OPT_PASSES | OPT_OPTION | OPT_CHECKS | OPT_KEEP_FAILED |
                                 OPT_NUMERIC_BUDGET | OPT_BUDGET | OPT_RULES | OPT_DISABLE_STEP | OPT_ONLY_PASS,
                             argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (!o.n_options && !o.n_disable_steps)
    return ox_cli_usage_error(&o, "%s", "nothing to change: give --option P.K=V or --disable-step N");
  if (o.config && o.passes) return ox_cli_usage_error(&o, "%s", "--config and --passes exclude each other");
  if (o.output && strcmp(o.output, "-") == 0)
    return ox_cli_usage_error(&o, "%s", "-o - would mix the graph with the report: write the graph to a file");
  OxDoc *doc = NULL;
  OxDiagList diags;
  OxGraph *g = NULL;
  int status = ox_cli_load_for_run(&o, &doc, &diags, &g);
  OxTrace *base = NULL;
  if (status == EXIT_OK && o.trace && !(base = ox_cli_read_trace(&o, o.trace))) status = EXIT_BAD;
  if (status == EXIT_OK && base && !base->input_hash) {
    fprintf(stderr, "optimus whatif: %s: the trace has no input hash, so nothing checks it was recorded on %s\n",
            o.trace, o.file);
    status = EXIT_BAD;
  }
  OxPipeline p = {0};
  OxCheckConfig cc;
  if (status == EXIT_OK) status = ox_cli_build_run(&o, g, base, false, &p, &cc);
  if (status == EXIT_OK && o.only_pass) {
    bool found = false;
    for (uint32_t i = 0; i < p.n && !found; i++) found = strcmp(p.entries[i].pass->name, o.only_pass) == 0;
    if (!found) {
      fprintf(stderr, "optimus whatif: --only-pass %s: the pass is not in the pipeline\n", o.only_pass);
      status = EXIT_USAGE;
    }
  }
  OxWhatifResult r;
  memset(&r, 0, sizeof r);
  OxWhatifSpec spec = {0};
  uint32_t skip[MAX_REPEATS];
  bool ran = false;
  if (status == EXIT_OK) {
    for (uint32_t i = 0; i < o.n_disable_steps; i++) skip[i] = o.disable_steps[i] - 1;
    spec.options = o.options;
    spec.n_options = o.n_options;
    spec.skip = skip;
    spec.n_skip = o.n_disable_steps;
    OxDiagList d;
    ox_diags_init(&d, "optimus whatif");
    if (ox_whatif_run(g, &p, &cc, base, &spec, &r, &d) != 0) {
      ox_diags_print(&d, stderr);
      /* an unknown pass or option is a usage error; a step that is not there, bad input */
      bool usage = false;
      for (uint32_t i = 0; i < d.n; i++) usage |= strncmp(d.items[i].msg, "--option", 8) == 0;
      status = usage ? EXIT_USAGE : EXIT_BAD;
    } else {
      ran = true;
      ox_diags_print(&d, stderr); /* warnings of a run (budgets) */
    }
    ox_diags_clear(&d);
  }
  if (ran && o.output) {
    uint32_t gi = o.graph ? o.graph : 1;
    OxGraph *input = doc->graphs[gi - 1];
    doc->graphs[gi - 1] = r.graph;
    status = ox_cli_write_graph_out(&o, doc, gi);
    doc->graphs[gi - 1] = input;
  }
  if (ran && status == EXIT_OK) {
    OxBuf b;
    ox_buf_init(&b);
    if (o.json)
      put_json(&b, &o, &r);
    else
      put_text(&b, &o, &r, &spec);
    if (!ox_cli_write_stdout(b.data, b.len)) status = EXIT_BAD;
    ox_buf_free(&b);
  }
  ox_whatif_result_free(&r);
  ox_pipeline_free(&p);
  ox_trace_free(base);
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}
