/* cmd-verify.c - `optimus verify`: the verifier, then the interpreter against the recorded outputs.
 */
#include <stdio.h>
#include <string.h>

#include "run/ox_record.h"
#include "cli.h"

static const char usage_verify[] =
  "Usage: optimus verify FILE [OPTIONS]\n"
  "\n"
  "Run the structural verifier on every graph and, if the file carries recorded example\n"
  "data (JSON exported by tools/optimus_fx.py with record_io=True), run the chosen graph in\n"
  "the reference interpreter on the recorded inputs and parameters and compare every output\n"
  "with the recorded one (dtype-aware tolerances). Prints max abs/rel error per output.\n"
  "Exit 1 on a verifier error or a mismatch.\n"
  "\n"
  "Options:\n"
  "  --graph N         the graph to run (1-based; default 1)\n"
  "  --json            print one JSON object\n"
  "  --strict          treat warnings as errors\n"
  "  --format F        input format: fx-text, fx-readable or json (default: detect)\n"
  "  -h, --help        show this help\n";

/* ------------------------------------------------------------------ verify */

int ox_cli_cmd_verify(int argc, char **argv) {
  CliOpts o = {.cmd = "verify", .usage = usage_verify};
  int rc =
      ox_cli_parse_args(&o, OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_JSON | OPT_INPUT_SHAPE, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  OxDoc *doc = NULL;
  OxDiagList diags;
  if (ox_cli_load_input(&o, &doc, &diags) != 0 || !ox_cli_graph_in_range(&o, doc)) {
    ox_doc_free(doc);
    ox_diags_clear(&diags);
    return EXIT_BAD;
  }
  int status = EXIT_OK;
  OxDiagList vd;
  ox_diags_init(&vd, diags.file);
  uint32_t n_graphs = 0;
  uint64_t n_nodes = 0;
  int errors = 0;
  for (uint32_t i = 0; i < doc->n_graphs; i++)
    errors += ox_cli_check_graph(doc->graphs[i], &vd, &n_graphs, &n_nodes);
  ox_diags_print(&vd, stderr);
  if (errors) status = EXIT_BAD;
  uint32_t gi = o.graph ? o.graph : 1;
  OxBuf b;
  ox_buf_init(&b);
  OxVerifyReport rep;
  memset(&rep, 0, sizeof rep);
  char err[1024] = "";
  int vr = 1; /* 1 = not run */
  if (doc->record) vr = ox_verify_record(doc, gi - 1, &rep, err, sizeof err);
  if (o.json) {
    ox_buf_printf(&b, "{\"file\": ");
    ox_cli_json_str(&b, o.file);
    ox_buf_printf(&b, ", \"graphs\": %u, \"verifier_errors\": %d, \"numeric\": ", n_graphs, errors);
    if (vr == 1) {
      ox_buf_puts(&b, "{\"status\": \"not-run\", \"reason\": \"the file carries no recorded inputs and outputs\"}");
    } else if (vr != 0) {
      ox_buf_puts(&b, "{\"status\": \"error\", \"reason\": ");
      ox_cli_json_str(&b, err);
      ox_buf_putc(&b, '}');
    } else {
      ox_buf_printf(&b, "{\"status\": \"%s\", \"outputs\": [", rep.pass ? "passed" : "failed");
      for (uint32_t i = 0; i < rep.n_outputs; i++) {
        const OxVerifyOutput *q = &rep.outputs[i];
        ox_buf_printf(&b, "%s{\"index\": %u, \"pass\": %s, \"max_abs\": %.9g, \"max_rel\": %.9g, \"tol\": %.9g",
                      i ? ", " : "", i, q->pass ? "true" : "false", q->max_abs, q->max_rel, q->tol.atol * q->scale);
        if (q->note[0]) {
          ox_buf_puts(&b, ", \"note\": ");
          ox_cli_json_str(&b, q->note);
        }
        ox_buf_putc(&b, '}');
      }
      ox_buf_puts(&b, "]}");
    }
    ox_buf_puts(&b, "}\n");
  } else {
    ox_buf_printf(&b, "verifier: %s (%u graph%s, %llu nodes)\n", errors ? "FAILED" : "ok", n_graphs,
                  n_graphs == 1 ? "" : "s", (unsigned long long)n_nodes);
    if (vr == 1) {
      ox_buf_puts(&b, "numeric: not run: the file carries no recorded inputs and outputs "
                      "(export with tools/optimus_fx.py --record)\n");
    } else if (vr != 0) {
      ox_buf_printf(&b, "numeric: could not run graph %u: %s\n", gi, err);
    } else {
      for (uint32_t i = 0; i < rep.n_outputs; i++) {
        const OxVerifyOutput *q = &rep.outputs[i];
        ox_buf_printf(&b, "output %u: %s  max abs %.3g  max rel %.3g  tol %.3g (%.0e of scale %.3g)%s%s\n", i,
                      q->pass ? "ok  " : "FAIL", q->max_abs, q->max_rel, q->tol.atol * q->scale, q->tol.atol, q->scale,
                      q->note[0] ? "  " : "", q->note);
      }
      uint32_t zeros = 0, nans = 0;
      for (uint32_t i = 0; i < rep.n_outputs; i++) {
        const char *note = rep.outputs[i].note;
        if (!rep.outputs[i].pass || strncmp(note, "weak:", 5) != 0) continue;
        if (strstr(note, "value is 0")) zeros++;
        else nans++;
      }
      ox_buf_printf(&b, "numeric: %s (%u output%s against the recorded values%s", rep.pass ? "ok" : "MISMATCH",
                    rep.n_outputs, rep.n_outputs == 1 ? "" : "s", zeros || nans ? "; " : ")\n");
      if (zeros && nans)
        ox_buf_printf(&b, "%u of them all zeros and %u all NaN: weak checks)\n", zeros, nans);
      else if (zeros || nans)
        ox_buf_printf(&b, "%u of them all %s: a weak check)\n", zeros + nans, zeros ? "zeros" : "NaN");
    }
  }
  if (vr != 1 && (vr != 0 || !rep.pass)) status = EXIT_BAD;
  if (!ox_cli_write_stdout(b.data, b.len)) status = EXIT_BAD;
  ox_buf_free(&b);
  ox_verify_report_clear(&rep);
  ox_diags_clear(&vd);
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}
