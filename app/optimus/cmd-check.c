/* cmd-check.c - `optimus check`: load a dump and verify every graph and subgraph.
 */

#include <stdio.h>

#include "cli.h"

static const char usage_check[] =
  "Usage: optimus check FILE [OPTIONS]\n"
  "\n"
  "Load the dump and run the structural verifier on every graph (nested subgraphs\n"
  "included): acyclic, definitions before uses, consistent users, unique names, one\n"
  "output (fragments without an output node are accepted). Prints located errors on\n"
  "stderr, or 'ok: N graphs, M nodes' on stdout.\n"
  "\n"
  "Options:\n"
  "  --graph N         check only graph N (1-based)\n"
  "  --strict          treat warnings as errors\n"
  "  --format F        input format: fx-text, fx-readable or json (default: detect)\n"
  "  -h, --help        show this help\n";

/* ------------------------------------------------------------------ check */

int ox_cli_cmd_check(int argc, char **argv) {
  CliOpts o = {.cmd = "check", .usage = usage_check};
  int rc = ox_cli_parse_args(&o, OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_INPUT_SHAPE, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  OxDoc *doc = NULL;
  OxDiagList diags;
  int status = EXIT_OK;
  if (ox_cli_load_input(&o, &doc, &diags) != 0 || !ox_cli_graph_in_range(&o, doc)) {
    status = EXIT_BAD;
  } else {
    OxDiagList vd;
    ox_diags_init(&vd, diags.file);
    uint32_t n_graphs = 0;
    uint64_t n_nodes = 0;
    int errors = 0;
    for (uint32_t i = 0; i < doc->n_graphs; i++)
      if (!o.graph || i == o.graph - 1)
        errors += ox_cli_check_graph(doc->graphs[i], &vd, &n_graphs, &n_nodes);
    ox_diags_print(&vd, stderr);
    if (errors) {
      fprintf(stderr, "%s: check failed: %d error%s\n", diags.file, errors, errors == 1 ? "" : "s");
      status = EXIT_BAD;
    } else {
      printf("ok: %u graph%s, %llu node%s\n", n_graphs, n_graphs == 1 ? "" : "s", (unsigned long long)n_nodes,
             n_nodes == 1 ? "" : "s");
      if (fflush(stdout) != 0) status = EXIT_BAD;
    }
    ox_diags_clear(&vd);
  }
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}
