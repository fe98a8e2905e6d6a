/* cmd-replay.c - `optimus replay`: the graph after step K of a recorded run.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static const char usage_replay[] =
  "Usage: optimus replay FILE TRACE -o OUT [--step K]\n"
  "\n"
  "Rebuild the graph after applied step K (default: all) of a recorded run from FILE (the\n"
  "run's input) and TRACE alone, without re-running any pass. Refuses a trace recorded on a\n"
  "different graph.\n"
  "\n"
  "Options:\n"
  "  --step K          stop after the K-th applied step (0 = the input)\n"
  "  -o, --output OUT  output file (format from the extension, as for convert)\n"
  "  --to KIND         json, fx, dot, svg or png\n"
  "  --graph N, --input-shape, --shapes, --strict, --format   as for optimize\n"
  "  -h, --help        show this help\n";

int ox_cli_cmd_replay(int argc, char **argv) {
  CliOpts o = {.cmd = "replay", .usage = usage_replay, .want_file2 = true};
  int rc = ox_cli_parse_args(
      &o, OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_OUTPUT | OPT_TO | OPT_STEP | OPT_INPUT_SHAPE, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (!o.file2) return ox_cli_usage_error(&o, "%s", "missing TRACE");
  if (!o.output) return ox_cli_usage_error(&o, "%s", "missing -o OUT");
  OxDoc *doc = NULL;
  OxDiagList diags;
  OxGraph *g = NULL;
  int status = ox_cli_load_for_run(&o, &doc, &diags, &g);
  if (status == EXIT_OK) {
    char err[1024];
    size_t len;
    char *text = ox_map_file(o.file2, &len, ox_input_cap((size_t)1 << 30), err, sizeof err);
    OxDiagList td;
    ox_diags_init(&td, o.file2);
    OxTrace *t = NULL;
    if (!text) {
      fprintf(stderr, "optimus replay: %s\n", err);
      status = EXIT_BAD;
    } else if (ox_trace_read_json(text, len, o.file2, &t, &td) != 0 ||
               (!t->input_hash && (ox_diag_add(&td, OX_SEV_ERROR, 0, 0, NULL,
                                               "the trace has no input hash, so nothing checks it was "
                                               "recorded on %s: not replayed",
                                               o.file),
                                   true)) ||
               ox_replay(g, t, o.has_step ? o.step : UINT32_MAX, &td) != 0) {
      ox_diags_print(&td, stderr);
      status = EXIT_BAD;
    } else {
      if (o.has_step && o.step > t->n_graph_steps)
        fprintf(stderr, "optimus replay: note: the trace has %u graph-changing steps; replayed all of them\n",
                t->n_graph_steps);
      status = ox_cli_write_graph_out(&o, doc, o.graph ? o.graph : 1);
    }
    ox_text_free(text);
    ox_trace_free(t);
    ox_diags_clear(&td);
  }
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}
