/* cmd-explain.c - `optimus explain`: why each pass did or did not fire at a node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "write/ox_write.h"
#include "cli.h"

static const char usage_explain[] =
  "Usage: optimus explain FILE --node NAME [OPTIONS]\n"
  "\n"
  "List every pass that considered node NAME: what it matched, how far it got, and why it\n"
  "fired or not (the first failing guard, with its evidence). Uses TRACE if given, else runs\n"
  "the default pipeline (or --config / --passes) on FILE first.\n"
  "\n"
  "Options:\n"
  "  --node NAME           the node to explain (required)\n"
  "  --pass P              only this pass\n"
  "  --trace T.json        explain a recorded run instead of running one\n"
  "  --config, --passes, --option, --rules, --checks, --budget, --input-shape, --shapes, --graph, --strict,\n"
  "  --format              as for optimize\n"
  "  --json                print one JSON object\n"
  "  -h, --help            show this help\n";

static const char *step_kind_text(const OxStep *s) {
  switch (s->kind) {
  case OX_STEP_APPLIED: return "applied";
  case OX_STEP_REJECTED: return "rejected";
  default: return "check failed";
  }
}

static void put_name_list(OxBuf *b, const char *label, const char *const *names, uint32_t n) {
  if (!n) return;
  ox_buf_printf(b, "      %s:", label);
  for (uint32_t i = 0; i < n && i < 12; i++) ox_buf_printf(b, " %s", names[i]);
  if (n > 12) ox_buf_printf(b, " ... (%u in all)", n);
  ox_buf_putc(b, '\n');
}

int ox_cli_cmd_explain(int argc, char **argv) {
  CliOpts o = {.cmd = "explain", .usage = usage_explain};
  int rc = ox_cli_parse_args(&o,
                      OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_JSON | OPT_INPUT_SHAPE | OPT_TRACE | OPT_CONFIG |
                          OPT_PASSES | OPT_OPTION | OPT_CHECKS | OPT_BUDGET | OPT_NODE | OPT_PASS | OPT_RULES,
                      argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (!o.node) return ox_cli_usage_error(&o, "%s", "missing --node NAME");
  OxDoc *doc = NULL;
  OxDiagList diags;
  OxGraph *g = NULL;
  int status = ox_cli_load_for_run(&o, &doc, &diags, &g);
  OxTrace *t = NULL;
  if (status == EXIT_OK && !ox_graph_find(g, o.node)) {
    fprintf(stderr, "optimus explain: %s: no node named '%s' in graph %u\n", o.file, o.node, o.graph ? o.graph : 1);
    status = EXIT_BAD;
  }
  if (status == EXIT_OK) {
    if (o.trace) {
      char err[1024];
      size_t len;
      char *text = ox_map_file(o.trace, &len, ox_input_cap((size_t)1 << 30), err, sizeof err);
      OxDiagList td;
      ox_diags_init(&td, o.trace);
      if (!text) {
        fprintf(stderr, "optimus explain: %s\n", err);
        status = EXIT_BAD;
      } else if (ox_trace_read_json(text, len, o.trace, &t, &td) != 0) {
        ox_diags_print(&td, stderr);
        status = EXIT_BAD;
      } else {
        /* a trace of another graph reads fine but explains nothing true about this one */
        char h[32];
        snprintf(h, sizeof h, "%016llx", (unsigned long long)ox_graph_structure_hash(g));
        if (t->input_hash && strcmp(t->input_hash, h) != 0)
          ox_diag_add(&td, OX_SEV_WARNING, 0, 0, NULL,
                      "recorded on another graph (structure hash %s; graph %u of %s has %s)", t->input_hash,
                      o.graph ? o.graph : 1, o.file, h);
        const char *unknown[5];
        uint32_t nu = ox_trace_unknown_names(t, g, unknown, 5);
        if (nu) {
          char list[400] = "";
          for (uint32_t i = 0; i < nu && i < 5; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", unknown[i]);
          ox_diag_add(&td, OX_SEV_WARNING, 0, 0, NULL, "names %s%u node%s that %s does not have and no step adds: %s%s",
                      nu >= OX_UNKNOWN_NAMES_MAX ? "at least " : "", nu, nu == 1 ? "" : "s", o.file, list,
                      nu > 5 ? ", ..." : "");
        }
        if (o.strict) ox_diags_promote_warnings(&td);
        ox_diags_print(&td, stderr);
        if (td.n_errors) status = EXIT_BAD;
      }
      ox_text_free(text);
      ox_diags_clear(&td);
    } else {
      OxOptimizeResult res;
      OxGraph *work = ox_graph_clone(g);
      status = ox_cli_run_pipeline(&o, work, &t, &res);
      ox_graph_free(work);
    }
  }
  if (status == EXIT_OK) {
    uint32_t n = ox_trace_steps_for_node(t, o.node, NULL, 0);
    uint32_t *idx = calloc(n + 1, sizeof *idx);
    ox_trace_steps_for_node(t, o.node, idx, n);
    const OxNode *node = &g->nodes[ox_graph_find(g, o.node)];
    OxBuf b;
    ox_buf_init(&b);
    uint32_t shown = 0;
    if (o.json) {
      ox_buf_puts(&b, "{\"node\": ");
      ox_cli_json_str(&b, o.node);
      ox_buf_puts(&b, ", \"target\": ");
      ox_cli_json_str(&b, node->target);
      ox_buf_puts(&b, ", \"steps\": [");
    } else {
      char meta[160];
      ox_meta_text(&node->meta, meta, sizeof meta);
      ox_buf_printf(&b, "%s = %s %s %s\n", node->name, ox_op_name((OxOp)node->op), node->target, meta);
    }
    for (uint32_t i = 0; i < n; i++) {
      const OxStep *s = &t->steps[idx[i]];
      if (o.pass && (!s->pass || strcmp(s->pass, o.pass) != 0)) continue;
      char *why = s->kind == OX_STEP_APPLIED ? NULL : ox_reason_format(&s->reason);
      if (o.json) {
        ox_buf_printf(&b, "%s{\"seq\": %u, \"pass\": ", shown ? ", " : "", s->seq);
        ox_cli_json_str(&b, s->pass ? s->pass : "");
        ox_buf_puts(&b, ", \"rule\": ");
        ox_cli_json_str(&b, s->rule ? s->rule : "");
        if (s->rule_file) {
          ox_buf_puts(&b, ", \"rule_file\": ");
          ox_cli_json_str(&b, s->rule_file);
          ox_buf_printf(&b, ", \"rule_line\": %u", s->rule_line);
        }
        ox_buf_printf(&b, ", \"kind\": \"%s\", \"anchor\": ", step_kind_text(s));
        ox_cli_json_str(&b, s->anchor ? s->anchor : "");
        ox_buf_printf(&b, ", \"matched\": %u", s->n_matched);
        if (why) {
          ox_buf_puts(&b, ", \"reason\": ");
          ox_cli_json_str(&b, why);
        }
        ox_buf_putc(&b, '}');
      } else {
        ox_buf_printf(&b, "  #%u %s%s%s: %s (anchor %s)\n", s->seq, s->pass ? s->pass : "?", s->rule ? " / " : "",
                      s->rule ? s->rule : "", step_kind_text(s), s->anchor ? s->anchor : "-");
        if (s->rule_file) ox_buf_printf(&b, "      rule: %s:%u\n", s->rule_file, s->rule_line);
        if (why) ox_buf_printf(&b, "      why: %s\n", why);
        put_name_list(&b, s->kind == OX_STEP_APPLIED ? "matched" : "candidates", s->matched, s->n_matched);
        put_name_list(&b, "removed", s->removed, s->n_removed);
        put_name_list(&b, "added", s->added, s->n_added);
      }
      free(why);
      shown++;
    }
    if (o.json) {
      ox_buf_puts(&b, "]}\n");
    } else if (!shown) {
      ox_buf_printf(&b, "  no pass%s%s considered %s: its op is not one any pass of the pipeline matches, or it was "
                        "never reached by a search (see optimus optimize --list-passes)\n",
                    o.pass ? " named " : "", o.pass ? o.pass : "", o.node);
    }
    if (!ox_cli_write_stdout(b.data, b.len)) status = EXIT_BAD;
    ox_buf_free(&b);
    free(idx);
  }
  ox_trace_free(t);
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}
