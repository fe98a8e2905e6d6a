/* cmd-convert.c - `optimus convert`: a dump written as Optimus JSON, FX text, DOT, SVG or PNG, whole or
 * as a focus neighbourhood / collapsed overview; also the output writer optimize and replay use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "layout/ox_layout.h"
#include "layout/ox_view.h"
#include "write/ox_write.h"
#include "cli.h"

static const char usage_convert[] =
  "Usage: optimus convert FILE -o OUT [OPTIONS]\n"
  "\n"
  "Write the dump in another format, chosen by OUT's extension (or --to):\n"
  "  .json             Optimus JSON (every graph, or only the one given by --graph)\n"
  "  .txt, .fx         FX text as print(graph) prints it (every graph, or --graph N)\n"
  "  .dot, .gv         Graphviz DOT of one graph\n"
  "  .svg, .png        the graph laid out and rendered by Graphviz\n"
  "Files are written atomically: on failure an existing OUT is left untouched.\n"
  "\n"
  "Options:\n"
  "  -o, --output OUT  output file; '-' writes to stdout (text kinds only, needs --to)\n"
  "  --to KIND         json, fx, dot, svg or png (overrides the extension)\n"
  "  --graph N         convert only graph N (1-based); DOT/SVG/PNG default to graph 1\n"
  "  --strict          treat warnings as errors\n"
  "  --format F        input format: fx-text, fx-readable or json (default: detect)\n"
  "  --edge-shapes     DOT/SVG/PNG: label edges with tensor shapes\n"
  "  --rankdir DIR     DOT/SVG/PNG: TB (default), LR, BT or RL\n"
  "  --input-shape N=DIMS  set placeholder or get_attr N's shape (x=16,256 or x=f32:16,256;\n"
  "                    repeatable) and infer every node's shape and dtype, parameters' from\n"
  "                    their uses\n"
  "  --shapes FILE     shapes of placeholders / parameters: a JSON object (name: [24, 32],\n"
  "                    \"f32[24, 32]\" or {\"dtype\", \"shape\"}) or a .safetensors file\n"
  "\n"
  "Bounded views of large graphs (DOT/SVG/PNG):\n"
  "  --focus NODE      draw only the neighbourhood of NODE (repeatable)\n"
  "  --radius K        hops around the focus (default: the largest that fits --max-nodes, at most 4)\n"
  "  --overview        collapse the graph into clusters with counts: module paths where the names\n"
  "                    or meta give them, else structure (bands between narrow cuts, the towers\n"
  "                    between a split and its cat, groups of same-op parts); at most 40 items\n"
  "                    per cluster\n"
  "  --open PATH       with --overview: expand this cluster (repeatable; structural clusters are\n"
  "                    ~1, ~1.~3, ...: see the DOT output's labels)\n"
  "  --max-nodes N     node budget of a drawing (default 100000); larger drawings are refused\n"
  "\n"
  "Layout of drawings (SVG, PNG; DOT when one of these is given):\n"
  "  --layout-budget S seconds Graphviz dot may take (default 10); when it needs longer, or the\n"
  "                    drawing has more than 1500 nodes, the graph is laid out by the built-in\n"
  "                    layered layout instead and drawn by Graphviz at those positions (a note\n"
  "                    on stderr says so). dot runs in a helper process that is killed at the budget.\n"
  "                    With .dot output, --layout-budget or --layout writes a laid-out DOT (pos on\n"
  "                    every node and edge, for `neato -n2`); without them the DOT is not laid out.\n"
  "  --layout ENGINE   auto (default), dot (no fallback; no budget unless given) or layered\n"
  "  --params          draw parameters and constants as nodes of their own (by default they are\n"
  "                    drawn in their consumer's box: \"+2 params\")\n"
  "  -h, --help        show this help\n";

/* ------------------------------------------------------------------ convert */

typedef enum OutKind { OUT_NONE = 0, OUT_JSON, OUT_FX, OUT_DOT, OUT_SVG, OUT_PNG } OutKind;

static OutKind kind_from_name(const char *s) {
  static const struct {
    const char *name;
    OutKind kind;
  } names[] = {{"json", OUT_JSON}, {"fx", OUT_FX}, {"txt", OUT_FX},  {"dot", OUT_DOT},
               {"gv", OUT_DOT},    {"svg", OUT_SVG}, {"png", OUT_PNG}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(s, names[i].name) == 0) return names[i].kind;
  return OUT_NONE;
}

static OutKind kind_from_path(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(slash ? slash + 1 : path, '.');
  return dot ? kind_from_name(dot + 1) : OUT_NONE;
}

/* Builds the converted bytes in out. Returns EXIT_OK or EXIT_BAD (message printed). */
static int convert_build(const CliOpts *o, OxDoc *doc, OutKind kind, OxBuf *out) {
  uint32_t gi = o->graph ? o->graph : 1;
  OxGraph *g = doc->graphs[gi - 1];
  if ((kind == OUT_DOT || kind == OUT_SVG || kind == OUT_PNG) && !o->graph && doc->n_graphs > 1)
    fprintf(stderr, "optimus convert: note: %s holds %u graphs; drawing graph 1 (choose with --graph N)\n",
            o->file, doc->n_graphs);
  OxDotOptions dopt = {.edge_shapes = o->edge_shapes, .highlight = NULL, .rankdir = o->rankdir};
  bool drawing = kind == OUT_DOT || kind == OUT_SVG || kind == OUT_PNG;
  uint8_t *include = NULL;
  OxGraph *overview = NULL;
  OxHierarchy *hier = NULL;
  int status = EXIT_OK;
  uint32_t budget = o->max_nodes ? o->max_nodes : 100000;
  /* parameters and constants are drawn in their consumers ("+2 params"), unless --params */
  uint32_t *fold = NULL;
  uint16_t *n_params = NULL;
  uint8_t *folded = NULL;
  if (drawing && !o->params) {
    fold = calloc(g->n_nodes + 1, sizeof *fold);
    n_params = calloc(g->n_nodes + 1, sizeof *n_params);
    folded = calloc(g->n_nodes + 1, 1);
    ox_view_fold_params(g, fold, n_params);
    for (uint32_t i = 0; i < g->n_nodes; i++) folded[i] = fold[i] != 0;
    dopt.fold = fold;
    dopt.n_params = n_params;
  }
  uint16_t *ov_params = NULL;
  if (drawing && o->overview) {
    hier = ox_view_hierarchy(g);
    uint8_t *open = calloc(hier->n_clusters + 1, 1);
    open[0] = 1;
    for (uint32_t i = 0; i < o->n_open; i++) {
      bool found = false;
      for (uint32_t c = 1; c < hier->n_clusters; c++)
        if (strcmp(hier->clusters[c].path, o->open[i]) == 0) {
          /* opening a cluster opens its ancestors too */
          for (int32_t x = (int32_t)c; x >= 0; x = hier->clusters[x].parent) open[x] = 1;
          found = true;
        }
      if (!found) {
        fprintf(stderr, "optimus convert: %s: no cluster '%s' (clusters: see --overview)\n", o->file, o->open[i]);
        status = EXIT_BAD;
      }
    }
    overview = ox_view_overview_map_fold(g, hier, open, fold, NULL, NULL);
    free(open);
    if (fold) {
      /* the overview's own ids: a shown node keeps its badge, nothing there is folded again */
      ov_params = calloc(overview->n_nodes + 1, sizeof *ov_params);
      OX_GRAPH_FOREACH(overview, id) {
        const OxNode *n = &overview->nodes[id];
        if (n->n_provenance && n->provenance[0] < g->n_nodes) ov_params[id] = n_params[n->provenance[0]];
      }
      dopt.fold = NULL;
      dopt.n_params = ov_params;
    }
    g = overview;
  } else if (drawing && o->n_focus) {
    OxNodeId seeds[MAX_REPEATS];
    for (uint32_t i = 0; i < o->n_focus; i++) {
      seeds[i] = ox_graph_find(g, o->focus[i]);
      if (!seeds[i]) {
        fprintf(stderr, "optimus convert: %s: no node named '%s' to focus on\n", o->file, o->focus[i]);
        status = EXIT_BAD;
      }
    }
    if (status == EXIT_OK) {
      /* a folded parameter is shown in its consumer: focus there */
      for (uint32_t i = 0; fold && i < o->n_focus; i++)
        if (fold[seeds[i]]) seeds[i] = fold[seeds[i]];
      uint32_t radius = o->has_radius ? o->radius : 0;
      if (!o->has_radius)
        for (uint32_t r = 1; r <= 4; r++) {
          if (ox_view_neighborhood_skip(g, seeds, o->n_focus, r, budget + 1, folded, NULL, 0) > budget) break;
          radius = r;
        }
      OxNodeId *ids = calloc(g->n_nodes + 1, sizeof *ids);
      uint32_t n = ox_view_neighborhood_skip(g, seeds, o->n_focus, radius, 0, folded, ids, g->n_nodes);
      include = calloc(g->n_nodes + 1, 1);
      for (uint32_t i = 0; i < n && i < g->n_nodes; i++) include[ids[i]] = 1;
      free(ids);
      dopt.include = include;
      uint8_t *mark = calloc(g->n_nodes + 1, 1);
      for (uint32_t i = 0; i < o->n_focus; i++) mark[seeds[i]] = 1; /* the focus is drawn as "matched" */
      dopt.highlight = mark;
      fprintf(stderr, "optimus convert: focus on %s%s, radius %u: %u nodes\n", o->focus[0],
              o->n_focus > 1 ? " ..." : "", radius, n);
    }
  }
  if (status == EXIT_OK && drawing && (kind != OUT_DOT)) {
    uint32_t shown = 0;
    OX_GRAPH_FOREACH(g, id) shown += (!include || include[id]) && !(dopt.fold && dopt.fold[id]);
    if (shown > budget) {
      fprintf(stderr,
              "optimus convert: %s: %u nodes is over the drawing budget of %u (dot needs minutes at this size); "
              "draw a bounded view with --focus NODE or --overview, or raise --max-nodes\n",
              o->file, shown, budget);
      status = EXIT_BAD;
    }
  }
  if (status != EXIT_OK) {
    free(include);
    free(fold);
    free(n_params);
    free(folded);
    free(ov_params);
    free((void *)dopt.highlight);
    ox_graph_free(overview);
    ox_view_hierarchy_free(hier);
    return status;
  }
  status = EXIT_BAD;
  switch (kind) {
  case OUT_JSON:
    if (o->graph) {
      /* a document holding only the chosen graph: borrow it, then hand it back */
      OxDoc *one = ox_doc_new(doc->format);
      ox_doc_add_graph(one, g);
      ox_write_json(one, out);
      one->n_graphs = 0;
      ox_doc_free(one);
    } else {
      ox_write_json(doc, out);
    }
    status = EXIT_OK;
    break;
  case OUT_FX:
    for (uint32_t i = 0; i < doc->n_graphs; i++) {
      if (o->graph && i != gi - 1) continue;
      if (out->len || out->drained) ox_buf_putc(out, '\n');
      ox_write_fx_text(doc->graphs[i], out);
    }
    status = EXIT_OK;
    break;
  case OUT_DOT:
    if (o->layout_budget > 0 || o->layout) {
      /* a laid-out DOT (pos on every node and edge; `neato -n2` draws it as is): dot within the
       * budget, else the layered layout, as for SVG/PNG */
      OxLayoutOptions lo = {.time_budget = o->layout_budget > 0 ? o->layout_budget : 10.0,
                            .max_nodes = UINT32_MAX,
                            .rankdir = o->rankdir,
                            .dot_max_nodes = 1500};
      if (o->layout && strcmp(o->layout, "layered") == 0) lo.engine = OX_LAYOUT_LAYERED;
      if (o->layout && strcmp(o->layout, "dot") == 0) {
        lo.engine = OX_LAYOUT_DOT;
        if (!(o->layout_budget > 0)) lo.time_budget = 86400;
      }
      uint32_t n = 0;
      OxNodeId *ids = calloc(g->n_nodes + 1, sizeof *ids);
      float *sizes = calloc(2 * (size_t)g->n_nodes + 2, sizeof *sizes);
      OX_GRAPH_FOREACH(g, id) {
        if ((dopt.include && !dopt.include[id]) || (dopt.fold && dopt.fold[id])) continue;
        double w, h;
        ox_write_dot_node_size(g, &dopt, id, &w, &h);
        ids[n] = id;
        sizes[2 * n] = (float)w;
        sizes[2 * n + 1] = (float)h;
        n++;
      }
      lo.sizes = sizes;
      OxLayout *l = NULL;
      char err[300];
      if (ox_layout_auto(g, ids, n, &lo, &l, err, sizeof err) != 0) {
        fprintf(stderr, "optimus convert: %s: %s\n", o->file, err);
        free(ids);
        free(sizes);
        break;
      }
      if (l->note[0]) fprintf(stderr, "optimus convert: note: %s\n", l->note);
      OxDotOptions laid = dopt;
      laid.layout = l;
      ox_write_dot(g, &laid, out);
      ox_layout_free(l);
      free(ids);
      free(sizes);
    } else {
      ox_write_dot(g, &dopt, out);
    }
    status = EXIT_OK;
    break;
  case OUT_SVG:
  case OUT_PNG: {
    char err[1024], note[300];
    const char *fmt = kind == OUT_SVG ? "svg" : "png";
    OxLayoutOptions lo = {.time_budget = o->layout_budget > 0 ? o->layout_budget : 10.0};
    if (o->layout && strcmp(o->layout, "layered") == 0) lo.engine = OX_LAYOUT_LAYERED;
    if (o->layout && strcmp(o->layout, "dot") == 0) {
      lo.engine = OX_LAYOUT_DOT; /* no fallback; no budget unless one was given */
      if (!(o->layout_budget > 0)) lo.time_budget = 86400;
    }
    int rc = ox_render_auto(g, &dopt, fmt, &lo, out, note, sizeof note, err, sizeof err);
    if (rc != 0) {
      fprintf(stderr, "optimus convert: %s: %s\n", o->file, err);
      break;
    }
    if (note[0]) fprintf(stderr, "optimus convert: note: %s\n", note);
    if (err[0]) fprintf(stderr, "optimus convert: %s: graphviz: %s\n", o->file, err);
    status = EXIT_OK;
    break;
  }
  default: break;
  }
  free(include);
  free(fold);
  free(n_params);
  free(folded);
  free(ov_params);
  free((void *)dopt.highlight);
  ox_graph_free(overview);
  ox_view_hierarchy_free(hier);
  return status;
}

int ox_cli_cmd_convert(int argc, char **argv) {
  CliOpts o = {.cmd = "convert", .usage = usage_convert};
  int rc = ox_cli_parse_args(&o,
                      OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_OUTPUT | OPT_TO | OPT_EDGE_SHAPES | OPT_RANKDIR |
                          OPT_INPUT_SHAPE | OPT_FOCUS | OPT_RADIUS | OPT_OVERVIEW | OPT_OPEN | OPT_MAX_NODES |
                          OPT_LAYOUT_BUDGET | OPT_LAYOUT | OPT_PARAMS,
                      argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (!o.output) return ox_cli_usage_error(&o, "%s", "missing -o OUT");
  bool to_stdout = strcmp(o.output, "-") == 0;
  OutKind kind;
  if (o.to) {
    kind = kind_from_name(o.to);
    if (!kind || strcasecmp(o.to, "txt") == 0 || strcasecmp(o.to, "gv") == 0)
      return ox_cli_usage_error(&o, "unknown output kind '%s' (use json, fx, dot, svg or png)", o.to);
  } else if (to_stdout) {
    return ox_cli_usage_error(&o, "%s", "writing to '-' needs --to json|fx|dot|svg");
  } else {
    kind = kind_from_path(o.output);
    if (!kind)
      return ox_cli_usage_error(&o,
                                "cannot tell the output format from '%s' (use .json, .txt, .fx, .dot, .svg, "
                                ".png or --to)",
                                o.output);
  }
  if (to_stdout && kind == OUT_PNG)
    return ox_cli_usage_error(&o, "%s",
                              "PNG is binary and is not written to standard output; use -o FILE.png");

  OxDoc *doc = NULL;
  OxDiagList diags;
  int status = EXIT_OK;
  if (ox_cli_load_input(&o, &doc, &diags) != 0 || !ox_cli_graph_in_range(&o, doc)) {
    status = EXIT_BAD;
  } else {
    OxBuf out;
    ox_buf_init(&out);
    char err[1024];
    /* a file is written while the output is made */
    if (!to_stdout && !ox_buf_stream_to(&out, o.output, err, sizeof err)) {
      fprintf(stderr, "optimus convert: %s\n", err);
      status = EXIT_BAD;
    } else {
      status = convert_build(&o, doc, kind, &out);
    }
    if (status == EXIT_OK) {
      if (to_stdout) {
        if (!ox_cli_write_stdout(out.data, out.len)) {
          fprintf(stderr, "optimus convert: cannot write to standard output\n");
          status = EXIT_BAD;
        }
      } else if (!ox_buf_stream_commit(&out, err, sizeof err)) {
        fprintf(stderr, "optimus convert: %s\n", err);
        status = EXIT_BAD;
      }
    }
    ox_buf_free(&out); /* a failed build: nothing is left of the file */
  }
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}

int ox_cli_write_graph_out(const CliOpts *o, OxDoc *doc, uint32_t gi) {
  bool to_stdout = strcmp(o->output, "-") == 0;
  OutKind kind = o->to ? kind_from_name(o->to) : to_stdout ? OUT_NONE : kind_from_path(o->output);
  if (!kind) {
    fprintf(stderr, "optimus %s: cannot tell the output format from '%s' (use .json, .txt, .fx, .dot, .svg, .png or --to)\n",
            o->cmd, o->output);
    return EXIT_USAGE;
  }
  CliOpts co = *o;
  co.graph = doc->n_graphs > 1 ? gi : 0;
  OxBuf out;
  ox_buf_init(&out);
  char err[1024];
  /* a file is written while the output is made (a 100k-node JSON is 43 MB) */
  if (!to_stdout && !ox_buf_stream_to(&out, o->output, err, sizeof err)) {
    fprintf(stderr, "optimus %s: %s\n", o->cmd, err);
    return EXIT_BAD;
  }
  int status = convert_build(&co, doc, kind, &out);
  if (status == EXIT_OK) {
    if (to_stdout) {
      if (!ox_cli_write_stdout(out.data, out.len)) status = EXIT_BAD;
    } else if (!ox_buf_stream_commit(&out, err, sizeof err)) {
      fprintf(stderr, "optimus %s: %s\n", o->cmd, err);
      status = EXIT_BAD;
    }
  }
  ox_buf_free(&out); /* a failed build: nothing is left of the file */
  return status;
}
