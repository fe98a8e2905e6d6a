/* cmd-optimize.c - `optimus optimize`: run the passes, write the optimized graph and the trace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_optimize[] =
  "Usage: optimus optimize FILE -o OUT [OPTIONS]\n"
  "\n"
  "Run the Optimus pipeline on one graph and write the result (format from OUT's extension,\n"
  "as for convert). Every applied step, rejected attempt and check result is recorded in the\n"
  "trace. Default pipeline: every pass of the graph's level (pre-grad torch targets or\n"
  "post-grad aten targets) in PyTorch's order.\n"
  "\n"
  "Options:\n"
  "  -o, --output OUT      the optimized graph ('-' with --to for stdout)\n"
  "  --to KIND             json, fx, dot, svg or png (overrides the extension)\n"
  "  --trace T.json        write the trace (docs/trace-format.md; *.gz: gzipped)\n"
  "  --trace-format N      the trace version to write: 5 (default, compact), 4 (without\n"
  "                        version 5's tables of rules and ranges), 3 (without version 4's\n"
  "                        runs of edits) or 2 (for tools that read only that)\n"
  "  --config C.json       passes and options, shaped like PyTorch's\n"
  "                        {pre,post}_grad_fusion_options\n"
  "  --passes a,b,c        run exactly these passes, in this order\n"
  "  --option P.K=V        set option K of pass P (repeatable), e.g. batch_linear.min_fuse_set_size=3\n"
  "  --checks LIST         structure,shape,numeric | all | none (default all)\n"
  "  --numeric-budget N    FLOPs per step for the numeric check (default 50000000)\n"
  "  --budget K=V,...      per-pass budgets: steps=N applied steps (default 1000000),\n"
  "                        growth=F times the pass's input nodes (default 4, at least +1000),\n"
  "                        seconds=S wall time (default 300); a pass that spends one stops\n"
  "                        with a warning and a BUDGET record in the trace\n"
  "  --keep-failed         keep steps whose check failed (for debugging the checks)\n"
  "  --cost-guard          reject every step whose estimated cost grows (min_payoff=0 for\n"
  "                        every pass without its own P.min_payoff=X; docs/cost-model.md)\n"
  "  --input-shape N=DIMS  placeholder or parameter shape, e.g. x=16,256 or x=f32:16,256\n"
  "                        (repeatable); parameters without one are inferred from their uses\n"
  "  --shapes FILE         shapes from a JSON object or a .safetensors header (docs/cli.md)\n"
  "  --graph N             the graph to optimize (1-based; default 1)\n"
  "  --json                print one JSON summary object (with the per-pass table: \"passes\")\n"
  "  --profile             after the summary, each pass's wall time, share of the run and\n"
  "                        steps (applied, rejected, check failures), slowest first\n"
  "  --list-passes         list the built-in passes and exit\n"
  "  --rules FILE          also run the rules of FILE after the pipeline (repeatable;\n"
  "                        docs/rules.md)\n"
  "  --strict, --format F  as for info\n"
  "  -h, --help            show this help\n";

static int write_trace_file(const char *cmd, const char *path, const OxTrace *t, int version) {
  char err[1024];
  bool ok = ox_trace_write_file(t, version, path, err, sizeof err);
  if (!ok) fprintf(stderr, "optimus %s: %s\n", cmd, err);
  return ok ? EXIT_OK : EXIT_BAD;
}

int ox_cli_cmd_optimize(int argc, char **argv) {
  CliOpts o = {.cmd = "optimize", .usage = usage_optimize};
  int rc = ox_cli_parse_args(&o,
                      OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_OUTPUT | OPT_TO | OPT_JSON | OPT_INPUT_SHAPE | OPT_TRACE |
                          OPT_CONFIG | OPT_PASSES | OPT_OPTION | OPT_CHECKS | OPT_KEEP_FAILED | OPT_NUMERIC_BUDGET | OPT_BUDGET |
                          OPT_LIST_PASSES | OPT_RULES | OPT_COST_GUARD | OPT_TRACE_FORMAT | OPT_PROFILE,
                      argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (o.list_passes) return ox_cli_list_passes();
  if (!o.output) return ox_cli_usage_error(&o, "%s", "missing -o OUT");
  if (o.config && o.passes) return ox_cli_usage_error(&o, "%s", "--config and --passes exclude each other");
  OxDoc *doc = NULL;
  OxDiagList diags;
  OxGraph *g = NULL;
  int status = ox_cli_load_for_run(&o, &doc, &diags, &g);
  OxTrace *t = NULL;
  OxOptimizeResult res;
  memset(&res, 0, sizeof res);
  uint32_t before = 0;
  if (status == EXIT_OK) {
    before = ox_cli_count_nodes(g);
    /* nobody reads the edit scripts of a trace that is not written (at 100k nodes: ~28 MB and
     * a tenth of the run) */
    o.no_edits = !o.trace;
    /* the trace is only written, by the writer that encodes it during the run: the memory of the
     * edit scripts it has encoded is used again (ox_trace_recycle_edits) */
    o.recycle_edits = true;
    status = ox_cli_run_pipeline(&o, g, &t, &res);
  }
  if (status == EXIT_OK) status = ox_cli_write_graph_out(&o, doc, o.graph ? o.graph : 1);
  if (status == EXIT_OK && o.trace) status = write_trace_file("optimize", o.trace, t, o.trace_format);
  if (status == EXIT_OK) {
    OxBuf b;
    ox_buf_init(&b);
    if (o.json) {
      ox_buf_puts(&b, "{\"file\": ");
      ox_cli_json_str(&b, o.file);
      ox_buf_printf(&b,
                    ", \"nodes_before\": %u, \"nodes_after\": %u, \"applied\": %u, \"rejected\": %u, "
                    "\"check_failures\": %u, \"budget_stops\": %u, \"seconds\": %.6f, ",
                    before, ox_cli_count_nodes(g), res.applied, res.rejected, res.check_failures,
                    res.budget_stops, res.seconds);
      if (t && t->cost.set) {
        ox_buf_puts(&b, "\"cost\": ");
        ox_cli_json_cost(&b, &t->cost);
        ox_buf_puts(&b, ", ");
      }
      ox_buf_puts(&b, "\"counters\": ");
      ox_cli_json_counters(&b, res.counter_names, res.counter_values, res.n_counters);
      ox_buf_puts(&b, ", \"passes\": [");
      if (t) ox_cli_json_pass_stats(&b, t);
      ox_buf_puts(&b, "]}\n");
    } else {
      char took[32];
      ox_buf_printf(&b, "%s: %u -> %u nodes; %u applied steps, %u rejected attempts, %u check failures in %s\n",
                    o.file, before, ox_cli_count_nodes(g), res.applied, res.rejected, res.check_failures,
                    ox_fmt_duration(res.seconds, took, sizeof took));
      if (t && t->cost.set) {
        char cb[256];
        ox_buf_printf(&b, "  estimated cost: %s\n", ox_cost_format_pair(&t->cost, cb, sizeof cb));
      }
      for (uint32_t i = 0; i < res.n_counters; i++)
        ox_buf_printf(&b, "  %-40s %lld\n", res.counter_names[i], (long long)res.counter_values[i]);
      if (o.profile && t) ox_cli_pass_table(t, res.seconds, &b);
      if (strcmp(o.output, "-") != 0) ox_buf_printf(&b, "wrote %s\n", o.output);
      if (o.trace) ox_buf_printf(&b, "wrote %s\n", o.trace);
    }
    if (!ox_cli_write_stdout(b.data, b.len)) status = EXIT_BAD;
    ox_buf_free(&b);
  }
  ox_trace_free(t);
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}
