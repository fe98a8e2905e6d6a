/* cmd-diff.c - `optimus diff`: two graphs of one model compared node by node
 * (engine/ir/ox_graph_diff.h): added, removed and changed nodes grouped into regions, and a
 * drawing of both with the differences marked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_graph_diff.h"
#include "run/ox_difftrace.h"
#include "layout/ox_layout.h"
#include "write/ox_write.h"
#include "cli.h"

static const char usage_diff[] =
  "Usage: optimus diff A B [--json] [-o OUT.dot|.svg|.png] [OPTIONS]\n"
  "\n"
  "Compare two dumps of the same model (before and after PyTorch's passes, our result against\n"
  "PyTorch's, two runs): nodes are matched by name, then by structure (op, target, constant\n"
  "arguments and matched inputs); the report lists the nodes added (only in B), removed (only\n"
  "in A) and changed (matched by name, another op, target or arguments), grouped into connected\n"
  "regions. Exit status 0 when the graphs are the same, 1 when they differ (or on bad input).\n"
  "\n"
  "Options:\n"
  "  --json            print one JSON object {\"added\", \"removed\", \"changed\", \"regions\", ...}\n"
  "  -o, --output OUT  draw B with A's removed nodes added back, the differences marked\n"
  "                    (added, removed dashed, changed); .dot, .svg or .png\n"
  "  --trace T.json    also write the diff as a trace of A, one applied step per region\n"
  "                    (pass \"diff\", rule \"region N\"): `optimus replay A T` and\n"
  "                    `optimus-debugger A T` step from A to B\n"
  "  --trace-format N  its version: 5 (default), 4, 3 or 2 (docs/trace-format.md)\n"
  "  --graph N         the graph of each file to compare (1-based; default 1)\n"
  "  --strict, --format F   as for info\n"
  "  -h, --help        show this help\n";

static const char *const field_names[] = {"op", "target", "args", "kwargs"};

typedef struct Side {
  const char *path;
  OxDoc *doc;
  OxDiagList diags;
  OxGraph *g;
} Side;

static int load_side(const CliOpts *o, Side *s) {
  CliOpts lo = *o;
  lo.file = s->path;
  if (ox_cli_load_input(&lo, &s->doc, &s->diags) != 0 || !ox_cli_graph_in_range(&lo, s->doc)) return EXIT_BAD;
  s->g = s->doc->graphs[(o->graph ? o->graph : 1) - 1];
  return EXIT_OK;
}

static void json_node(OxBuf *b, const OxGraph *g, OxNodeId id, uint32_t region) {
  const OxNode *n = &g->nodes[id];
  ox_buf_puts(b, "{\"name\": ");
  ox_cli_json_str(b, n->name);
  ox_buf_printf(b, ", \"op\": \"%s\", \"target\": ", ox_op_name((OxOp)n->op));
  ox_cli_json_str(b, n->target);
  ox_buf_printf(b, ", \"region\": %u}", region + 1);
}

static void json_names(OxBuf *b, const OxGraph *g, const uint8_t *state, const uint32_t *region, uint8_t want,
                       uint32_t r) {
  ox_buf_putc(b, '[');
  bool first = true;
  OX_GRAPH_FOREACH(g, id) if (state[id] == want && region[id] == r) {
    if (!first) ox_buf_puts(b, ", ");
    first = false;
    ox_cli_json_str(b, g->nodes[id].name);
  }
  ox_buf_putc(b, ']');
}

static void put_json(OxBuf *b, const Side *a, const Side *bs, const OxGraphDiff *d) {
  ox_buf_puts(b, "{\"a\": ");
  ox_cli_json_str(b, a->path);
  ox_buf_puts(b, ", \"b\": ");
  ox_cli_json_str(b, bs->path);
  ox_buf_printf(b,
                ", \"nodes_a\": %u, \"nodes_b\": %u, \"matched_by_name\": %u, \"matched_by_structure\": %u, "
                "\"same\": %u, \"added\": [",
                ox_cli_count_nodes(a->g), ox_cli_count_nodes(bs->g), d->n_by_name, d->n_by_structure, d->n_same);
  bool first = true;
  OX_GRAPH_FOREACH(bs->g, id) if (d->b_state[id] == OX_DIFF_ADDED) {
    if (!first) ox_buf_puts(b, ", ");
    first = false;
    json_node(b, bs->g, id, d->b_region[id]);
  }
  ox_buf_puts(b, "], \"removed\": [");
  first = true;
  OX_GRAPH_FOREACH(a->g, id) if (d->a_state[id] == OX_DIFF_REMOVED) {
    if (!first) ox_buf_puts(b, ", ");
    first = false;
    json_node(b, a->g, id, d->a_region[id]);
  }
  ox_buf_puts(b, "], \"changed\": [");
  first = true;
  OX_GRAPH_FOREACH(a->g, id) if (d->a_state[id] == OX_DIFF_CHANGED) {
    const OxNode *n = &a->g->nodes[id], *m = &bs->g->nodes[d->a_to_b[id]];
    ox_buf_puts(b, first ? "{\"name\": " : ", {\"name\": ");
    first = false;
    ox_cli_json_str(b, n->name);
    ox_buf_puts(b, ", \"b_name\": ");
    ox_cli_json_str(b, m->name);
    ox_buf_puts(b, ", \"fields\": [");
    bool f1 = true;
    for (int k = 0; k < 4; k++)
      if (d->a_fields[id] & (1u << k)) {
        ox_buf_printf(b, "%s\"%s\"", f1 ? "" : ", ", field_names[k]);
        f1 = false;
      }
    ox_buf_puts(b, "], \"target\": ");
    ox_cli_json_str(b, n->target);
    ox_buf_puts(b, ", \"b_target\": ");
    ox_cli_json_str(b, m->target);
    ox_buf_printf(b, ", \"region\": %u}", d->a_region[id] + 1);
  }
  ox_buf_puts(b, "], \"regions\": [");
  for (uint32_t r = 0; r < d->n_regions; r++) {
    ox_buf_printf(b, "%s{\"region\": %u, \"added\": ", r ? ", " : "", r + 1);
    json_names(b, bs->g, d->b_state, d->b_region, OX_DIFF_ADDED, r);
    ox_buf_puts(b, ", \"removed\": ");
    json_names(b, a->g, d->a_state, d->a_region, OX_DIFF_REMOVED, r);
    ox_buf_puts(b, ", \"changed\": ");
    json_names(b, a->g, d->a_state, d->a_region, OX_DIFF_CHANGED, r);
    ox_buf_putc(b, '}');
  }
  ox_buf_puts(b, "]}\n");
}

static void text_node(OxBuf *b, char mark, const OxNode *n) {
  char t[96];
  ox_short_target(n->target ? n->target : "", t, sizeof t);
  ox_buf_printf(b, "    %c %s (%s %s)\n", mark, n->name, ox_op_name((OxOp)n->op), t);
}

static void put_text(OxBuf *b, const Side *a, const Side *bs, const OxGraphDiff *d) {
  ox_buf_printf(b, "%s: %u nodes; %s: %u nodes\n", a->path, ox_cli_count_nodes(a->g), bs->path,
                ox_cli_count_nodes(bs->g));
  ox_buf_printf(b, "matched %u by name, %u by structure; %u the same, %u changed, %u removed, %u added",
                d->n_by_name, d->n_by_structure, d->n_same, d->n_changed, d->n_removed, d->n_added);
  ox_buf_printf(b, d->n_regions ? " in %u region%s\n" : "\n", d->n_regions, d->n_regions == 1 ? "" : "s");
  for (uint32_t r = 0; r < d->n_regions; r++) {
    uint32_t nr = 0, na = 0, nc = 0;
    OX_GRAPH_FOREACH(a->g, id) if (d->a_region[id] == r) {
      nr += d->a_state[id] == OX_DIFF_REMOVED;
      nc += d->a_state[id] == OX_DIFF_CHANGED;
    }
    OX_GRAPH_FOREACH(bs->g, id) na += d->b_region[id] == r && d->b_state[id] == OX_DIFF_ADDED;
    ox_buf_printf(b, "region %u: %u removed, %u added, %u changed\n", r + 1, nr, na, nc);
    OX_GRAPH_FOREACH(a->g, id) if (d->a_region[id] == r && d->a_state[id] == OX_DIFF_REMOVED)
      text_node(b, '-', &a->g->nodes[id]);
    OX_GRAPH_FOREACH(bs->g, id) if (d->b_region[id] == r && d->b_state[id] == OX_DIFF_ADDED)
      text_node(b, '+', &bs->g->nodes[id]);
    OX_GRAPH_FOREACH(a->g, id) if (d->a_region[id] == r && d->a_state[id] == OX_DIFF_CHANGED) {
      const OxNode *m = &bs->g->nodes[d->a_to_b[id]];
      ox_buf_printf(b, "    ~ %s:", a->g->nodes[id].name);
      for (int k = 0; k < 4; k++)
        if (d->a_fields[id] & (1u << k)) ox_buf_printf(b, " %s", field_names[k]);
      if (d->a_fields[id] & OX_DIFF_F_TARGET) {
        char t1[96], t2[96];
        ox_short_target(a->g->nodes[id].target ? a->g->nodes[id].target : "", t1, sizeof t1);
        ox_short_target(m->target ? m->target : "", t2, sizeof t2);
        ox_buf_printf(b, " (%s -> %s)", t1, t2);
      }
      ox_buf_putc(b, '\n');
    }
  }
}

/* ------------------------------------------------------------------ drawing */

static int write_pseudo_trace(const CliOpts *o, const Side *a, const Side *b, const OxGraphDiff *d, OxBuf *note) {
  OxDiagList dl;
  ox_diags_init(&dl, o->file);
  OxTrace *t = ox_diff_trace(a->g, b->g, d, NULL, &dl);
  if (!t) {
    ox_diags_print(&dl, stderr);
    ox_diags_clear(&dl);
    return EXIT_BAD;
  }
  ox_diags_clear(&dl);
  if (strcmp(o->file, "-") != 0) t->input_file = ox_trace_intern(t, o->file);
  char err[1024];
  int status = EXIT_OK;
  if (!ox_trace_write_file(t, o->trace_format, o->trace, err, sizeof err)) {
    fprintf(stderr, "optimus diff: %s\n", err);
    status = EXIT_BAD;
  } else {
    ox_buf_printf(note, "wrote %s (%u step%s, one per region)\n", o->trace, t->n_steps, t->n_steps == 1 ? "" : "s");
  }
  ox_trace_free(t);
  return status;
}

static int draw(const CliOpts *o, const Side *a, const Side *bs, const OxGraphDiff *d) {
  const char *dot = strrchr(o->output, '.');
  const char *ext = dot ? dot + 1 : "";
  bool is_dot = strcmp(ext, "dot") == 0 || strcmp(ext, "gv") == 0;
  if (!is_dot && strcmp(ext, "svg") != 0 && strcmp(ext, "png") != 0) {
    fprintf(stderr, "optimus diff: -o %s: the drawing is .dot, .svg or .png\n", o->output);
    return EXIT_USAGE;
  }
  /* the union: B, and A's removed nodes (not a removed output) with their inputs remapped */
  OxGraph *u = ox_graph_clone(bs->g);
  OxNodeId *copy_of = calloc(d->na + 1, sizeof *copy_of);
  if (!copy_of) exit(EXIT_BAD);
  OX_GRAPH_FOREACH(a->g, id) if (d->a_state[id] == OX_DIFF_REMOVED && a->g->nodes[id].op != OX_OP_OUTPUT) {
    const OxNode *n = &a->g->nodes[id];
    char name[300];
    snprintf(name, sizeof name, "%s", n->name);
    for (int k = 1; ox_graph_find(u, name); k++) snprintf(name, sizeof name, "%s_removed%d", n->name, k);
    copy_of[id] = ox_graph_add_node(u, (OxOp)n->op, name, n->target, ox_value_none(), ox_value_none());
    ox_graph_set_meta(u, copy_of[id], &n->meta);
  }
  /* node references of A's removed nodes, in the union graph: a matched node is its B
   * counterpart, a removed one its copy */
  OxNodeId *to_u = calloc(d->na + 1, sizeof *to_u);
  if (!to_u) exit(EXIT_BAD);
  for (uint32_t i = 0; i < d->na; i++) to_u[i] = d->a_to_b[i] ? d->a_to_b[i] : copy_of[i];
  OX_GRAPH_FOREACH(a->g, id) if (copy_of[id]) {
    OxValue args = ox_graph_value_copy(u, &a->g->nodes[id].args), kw = ox_graph_value_copy(u, &a->g->nodes[id].kwargs);
    if (ox_value_remap_nodes(&args, to_u, d->na) && ox_value_remap_nodes(&kw, to_u, d->na)) {
      ox_graph_set_args(u, copy_of[id], args);
      ox_graph_set_kwargs(u, copy_of[id], kw);
    }
  }
  free(to_u);
  uint8_t *mark = calloc(u->n_nodes + 1, 1);
  if (!mark) exit(EXIT_BAD);
  OX_GRAPH_FOREACH(u, id) {
    if (id < d->nb && d->b_state[id] == OX_DIFF_ADDED)
      mark[id] = OX_DOT_MARK_ADDED;
    else if (id < d->nb && d->b_state[id] == OX_DIFF_CHANGED)
      mark[id] = OX_DOT_MARK_MATCHED;
    else if (id < d->nb)
      mark[id] = OX_DOT_MARK_DIMMED;
    else
      mark[id] = OX_DOT_MARK_REMOVED;
  }
  OxDotOptions dopt = {.highlight = mark, .legend = true};
  OxBuf out;
  ox_buf_init(&out);
  int status = EXIT_OK;
  if (is_dot) {
    ox_write_dot(u, &dopt, &out);
  } else {
    char err[1024], note[300];
    OxLayoutOptions lo = {.time_budget = 10.0};
    if (ox_render_auto(u, &dopt, ext, &lo, &out, note, sizeof note, err, sizeof err) != 0) {
      fprintf(stderr, "optimus diff: %s\n", err);
      status = EXIT_BAD;
    } else if (note[0]) {
      fprintf(stderr, "optimus diff: note: %s\n", note);
    }
  }
  char err[1024];
  if (status == EXIT_OK && !ox_write_file_atomic(o->output, out.data, out.len, err, sizeof err)) {
    fprintf(stderr, "optimus diff: %s\n", err);
    status = EXIT_BAD;
  }
  ox_buf_free(&out);
  free(mark);
  free(copy_of);
  ox_graph_free(u);
  return status;
}

int ox_cli_cmd_diff(int argc, char **argv) {
  CliOpts o = {.cmd = "diff", .usage = usage_diff, .want_file2 = true};
  int rc = ox_cli_parse_args(&o, OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_JSON | OPT_OUTPUT | OPT_TRACE | OPT_TRACE_FORMAT, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (!o.file2) return ox_cli_usage_error(&o, "%s", "missing B (the second graph)");
  if (strcmp(o.file, "-") == 0 && strcmp(o.file2, "-") == 0)
    return ox_cli_usage_error(&o, "%s", "A and B cannot both be standard input");
  Side a = {.path = o.file}, b = {.path = o.file2};
  int status = load_side(&o, &a);
  if (status == EXIT_OK) status = load_side(&o, &b);
  if (status == EXIT_OK) {
    OxGraphDiff d;
    ox_graph_diff(a.g, b.g, &d);
    if (o.output) status = draw(&o, &a, &b, &d);
    OxBuf note;
    ox_buf_init(&note);
    if (status == EXIT_OK && o.trace) status = write_pseudo_trace(&o, &a, &b, &d, &note);
    if (status == EXIT_OK) {
      OxBuf out;
      ox_buf_init(&out);
      if (o.json)
        put_json(&out, &a, &b, &d);
      else
        put_text(&out, &a, &b, &d);
      if (!o.json && o.output) ox_buf_printf(&out, "wrote %s\n", o.output);
      if (!o.json && note.len) ox_buf_append(&out, note.data, note.len);
      if (!ox_cli_write_stdout(out.data, out.len)) status = EXIT_BAD;
      ox_buf_free(&out);
      if (status == EXIT_OK && (d.n_changed || d.n_added || d.n_removed)) status = EXIT_BAD;
    }
    ox_buf_free(&note);
    ox_graph_diff_free(&d);
  }
  ox_doc_free(a.doc);
  ox_doc_free(b.doc);
  if (a.diags.file || a.diags.items) ox_diags_clear(&a.diags);
  if (b.diags.file || b.diags.items) ox_diags_clear(&b.diags);
  return status;
}
