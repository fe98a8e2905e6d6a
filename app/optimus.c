/* optimus - the command-line front end of the Optimus engine.
 *
 *   optimus info FILE [--json] [--graph N] [--strict] [--format F]
 *   optimus convert FILE -o OUT [--to KIND] [--graph N] [--strict] [--format F]
 *                               [--edge-shapes] [--rankdir TB|LR|BT|RL]
 *   optimus check FILE [--graph N] [--strict] [--format F]
 *
 * Exit status: 0 success, 1 bad input / failed check / failed write, 2 usage error.
 * Diagnostics go to stderr as FILE:LINE:COL: error|warning: message (+ snippet line);
 * results go to stdout. docs/cli.md is the user documentation.
 *
 * Node counts everywhere (info, check, the JSON "nodes" fields) are live nodes without the
 * output node, the way SOURCES.md and torch users count them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ox_buf.h"
#include "ox_diag.h"
#include "ox_graph.h"
#include "ox_load.h"
#include "ox_write.h"

#ifndef OPTIMUS_VERSION
#define OPTIMUS_VERSION "0.1.0"
#endif

enum { EXIT_OK = 0, EXIT_BAD = 1, EXIT_USAGE = 2 };

/* ------------------------------------------------------------------ usage */

static const char usage_top[] =
  "Usage: optimus [--help] [--version] COMMAND [ARGS...]\n"
  "\n"
  "Commands:\n"
  "  info FILE            format, graphs, node counts and op histogram of an FX dump\n"
  "  convert FILE -o OUT  write it as Optimus JSON, FX text, DOT, SVG or PNG\n"
  "  check FILE           load it and verify every graph\n"
  "\n"
  "FILE is print(graph) text, print_readable code or Optimus JSON; '-' reads stdin.\n"
  "Run 'optimus COMMAND --help' for the options of a command.\n"
  "Exit status: 0 success, 1 bad input or failed check/write, 2 usage error.\n";

static const char usage_info[] =
  "Usage: optimus info FILE [OPTIONS]\n"
  "\n"
  "Print the detected format, the graphs found and, for one graph, its node count,\n"
  "placeholders and op histogram (target -> count). Warnings go to stderr.\n"
  "\n"
  "Options:\n"
  "  --json            print one JSON object instead of text\n"
  "  --graph N         the graph to describe (1-based; default 1)\n"
  "  --strict          treat warnings as errors\n"
  "  --format F        input format: fx-text, fx-readable or json (default: detect)\n"
  "  -h, --help        show this help\n";

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
  "  -h, --help        show this help\n";

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

/* ------------------------------------------------------------------ options */

enum {
  OPT_JSON = 1 << 0,
  OPT_GRAPH = 1 << 1,
  OPT_STRICT = 1 << 2,
  OPT_FORMAT = 1 << 3,
  OPT_OUTPUT = 1 << 4,
  OPT_TO = 1 << 5,
  OPT_EDGE_SHAPES = 1 << 6,
  OPT_RANKDIR = 1 << 7,
};

typedef struct OptSpec {
  const char *name; /* long name without "--" */
  char short_name;  /* 0 if none */
  bool has_arg;
  unsigned bit;
} OptSpec;

static const OptSpec opt_specs[] = {
  {"json", 0, false, OPT_JSON},
  {"graph", 0, true, OPT_GRAPH},
  {"strict", 0, false, OPT_STRICT},
  {"format", 0, true, OPT_FORMAT},
  {"output", 'o', true, OPT_OUTPUT},
  {"to", 0, true, OPT_TO},
  {"edge-shapes", 0, false, OPT_EDGE_SHAPES},
  {"rankdir", 0, true, OPT_RANKDIR},
};

typedef struct CliOpts {
  const char *cmd;
  const char *usage;
  const char *file;
  const char *output;
  const char *to;
  const char *rankdir;
  uint32_t graph;   /* 1-based; 0 = not given */
  bool json, strict, edge_shapes;
  OxFormat format;  /* OX_FMT_UNKNOWN = detect */
} CliOpts;

static int usage_error(const CliOpts *o, const char *fmt, const char *arg) {
  fprintf(stderr, "optimus %s: ", o->cmd);
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n%.*s", (int)strcspn(o->usage, "\n") + 1, o->usage);
  fprintf(stderr, "Try 'optimus %s --help' for more information.\n", o->cmd);
  return EXIT_USAGE;
}

static int apply_option(CliOpts *o, const OptSpec *s, const char *val) {
  switch (s->bit) {
  case OPT_JSON: o->json = true; break;
  case OPT_STRICT: o->strict = true; break;
  case OPT_EDGE_SHAPES: o->edge_shapes = true; break;
  case OPT_OUTPUT: o->output = val; break;
  case OPT_TO: o->to = val; break;
  case OPT_GRAPH: {
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(val, &end, 10);
    if (!*val || *end || errno || v == 0 || v > 0xffffffffUL || val[0] == '-' || val[0] == '+')
      return usage_error(o, "--graph needs a graph number (1, 2, ...), not '%s'", val);
    o->graph = (uint32_t)v;
    break;
  }
  case OPT_FORMAT:
    if (strcmp(val, "fx-text") == 0) o->format = OX_FMT_FX_TEXT;
    else if (strcmp(val, "fx-readable") == 0) o->format = OX_FMT_FX_READABLE;
    else if (strcmp(val, "json") == 0) o->format = OX_FMT_JSON;
    else return usage_error(o, "unknown input format '%s' (use fx-text, fx-readable or json)", val);
    break;
  case OPT_RANKDIR:
    if (strcmp(val, "TB") && strcmp(val, "LR") && strcmp(val, "BT") && strcmp(val, "RL"))
      return usage_error(o, "--rankdir must be TB, LR, BT or RL, not '%s'", val);
    o->rankdir = val;
    break;
  default: break;
  }
  return EXIT_OK;
}

/* Parses argv[1..] of a command (argv[0] is the command name). Options may come before or
 * after FILE, as "--name value", "--name=value" or "-o value"; "--" ends options. Returns
 * EXIT_OK to run, -1 when help was printed, EXIT_USAGE on a usage error. */
static int parse_args(CliOpts *o, unsigned allowed, int argc, char **argv) {
  bool options_done = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!options_done && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
      fputs(o->usage, stdout);
      return -1;
    }
    if (!options_done && strcmp(a, "--") == 0) {
      options_done = true;
      continue;
    }
    if (options_done || a[0] != '-' || strcmp(a, "-") == 0) {
      if (o->file) return usage_error(o, "unexpected argument '%s' (one FILE only)", a);
      o->file = a;
      continue;
    }
    const OptSpec *spec = NULL;
    const char *val = NULL;
    char name[64];
    if (a[1] == '-') {
      const char *eq = strchr(a + 2, '=');
      size_t n = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
      if (n >= sizeof name) n = sizeof name - 1;
      memcpy(name, a + 2, n);
      name[n] = 0;
      for (size_t k = 0; k < sizeof opt_specs / sizeof opt_specs[0]; k++)
        if (strcmp(opt_specs[k].name, name) == 0) spec = &opt_specs[k];
      if (spec && eq) {
        if (!spec->has_arg) return usage_error(o, "option '--%s' takes no value", name);
        val = eq + 1;
      }
    } else if (a[1] && !a[2]) {
      for (size_t k = 0; k < sizeof opt_specs / sizeof opt_specs[0]; k++)
        if (opt_specs[k].short_name == a[1]) spec = &opt_specs[k];
    } else if (a[1] == 'o') {
      /* "-oOUT" */
      for (size_t k = 0; k < sizeof opt_specs / sizeof opt_specs[0]; k++)
        if (opt_specs[k].short_name == 'o') spec = &opt_specs[k];
      val = a + 2;
    }
    if (!spec || !(allowed & spec->bit)) return usage_error(o, "unknown option '%s'", a);
    if (spec->has_arg && !val) {
      if (i + 1 >= argc) return usage_error(o, "option '%s' needs a value", a);
      val = argv[++i];
    }
    int rc = apply_option(o, spec, val);
    if (rc != EXIT_OK) return rc;
  }
  if (!o->file) return usage_error(o, "%s", "missing FILE");
  return EXIT_OK;
}

/* ------------------------------------------------------------------ loading */

static char *read_stdin(size_t *len_out) {
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap + 1);
  if (!buf) return NULL;
  for (;;) {
    if (len == cap) {
      if (cap > ((size_t)1 << 30)) break; /* the loader refuses anything this big anyway */
      cap *= 2;
      char *nb = realloc(buf, cap + 1);
      if (!nb) {
        free(buf);
        return NULL;
      }
      buf = nb;
    }
    size_t n = fread(buf + len, 1, cap - len, stdin);
    len += n;
    if (n == 0) break;
  }
  if (ferror(stdin)) {
    free(buf);
    return NULL;
  }
  buf[len] = 0;
  *len_out = len;
  return buf;
}

/* Loads o->file into *doc; every diagnostic (warnings too) is printed to stderr. */
static int load_input(const CliOpts *o, OxDoc **doc, OxDiagList *diags) {
  OxLoadOptions lo = {0};
  lo.strict = o->strict;
  bool from_stdin = strcmp(o->file, "-") == 0;
  ox_diags_init(diags, from_stdin ? "<stdin>" : o->file);
  int rc;
  if (from_stdin) {
    size_t len = 0;
    char *text = read_stdin(&len);
    if (!text) {
      ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "cannot read standard input");
      rc = -1;
      *doc = NULL;
    } else {
      rc = ox_load_buffer(text, len, o->format, &lo, doc, diags);
      free(text);
    }
  } else {
    rc = ox_load_file(o->file, o->format, &lo, doc, diags);
  }
  ox_diags_print(diags, stderr);
  return rc;
}

static bool graph_in_range(const CliOpts *o, const OxDoc *doc) {
  if (o->graph <= doc->n_graphs) return true;
  fprintf(stderr, "optimus %s: %s: --graph %u is out of range: the input has %u graph%s\n", o->cmd, o->file,
          o->graph, doc->n_graphs, doc->n_graphs == 1 ? "" : "s");
  return false;
}

static uint32_t count_nodes(const OxGraph *g) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id)
  if (g->nodes[id].op != OX_OP_OUTPUT) n++;
  return n;
}

static uint32_t count_op(const OxGraph *g, OxOp op) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id)
  if (g->nodes[id].op == op) n++;
  return n;
}

/* ------------------------------------------------------------------ info */

typedef struct OpCount {
  const char *key;
  uint32_t count;
} OpCount;

static int cmp_str_ptr(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
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

/* Op histogram of the call_* nodes, sorted by count (descending) then name. Caller frees. */
static OpCount *op_histogram(const OxGraph *g, uint32_t *n_out) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id) {
    OxOp op = (OxOp)g->nodes[id].op;
    if (op == OX_OP_CALL_FUNCTION || op == OX_OP_CALL_METHOD || op == OX_OP_CALL_MODULE) n++;
  }
  const char **keys = malloc((n ? n : 1) * sizeof *keys);
  OpCount *hist = malloc((n ? n : 1) * sizeof *hist);
  if (!keys || !hist) {
    fprintf(stderr, "optimus: out of memory\n");
    exit(EXIT_BAD);
  }
  uint32_t k = 0;
  OX_GRAPH_FOREACH(g, id) {
    OxOp op = (OxOp)g->nodes[id].op;
    if (op == OX_OP_CALL_FUNCTION || op == OX_OP_CALL_METHOD || op == OX_OP_CALL_MODULE)
      keys[k++] = op_key(&g->nodes[id]);
  }
  qsort(keys, n, sizeof *keys, cmp_str_ptr);
  uint32_t h = 0;
  for (uint32_t i = 0; i < n;) {
    uint32_t j = i;
    while (j < n && strcmp(keys[j], keys[i]) == 0) j++;
    hist[h].key = keys[i];
    hist[h].count = j - i;
    h++;
    i = j;
  }
  free(keys);
  qsort(hist, h, sizeof *hist, cmp_opcount);
  *n_out = h;
  return hist;
}

/* A JSON string: ox_buf_put_quoted escapes, after bytes that are not UTF-8 became '?' so the
 * output is always valid JSON whatever the input file held. */
static void json_str(OxBuf *b, const char *s) {
  if (!s) {
    ox_buf_puts(b, "null");
    return;
  }
  size_t n = strlen(s);
  char *clean = malloc(n + 1);
  if (!clean) exit(EXIT_BAD);
  const unsigned char *p = (const unsigned char *)s;
  size_t o = 0;
  while (*p) {
    size_t len = 0;
    unsigned char c = *p;
    if (c < 0x80) len = 1;
    else if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) len = 3;
    else if (c >= 0xf0 && c <= 0xf4) len = 4;
    for (size_t i = 1; i < len; i++)
      if ((p[i] & 0xc0) != 0x80) len = 0;
    if (len == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0))) len = 0;
    if (len == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90))) len = 0;
    if (!len) {
      clean[o++] = '?';
      p++;
    } else {
      memcpy(clean + o, p, len);
      o += len;
      p += len;
    }
  }
  clean[o] = 0;
  ox_buf_put_quoted(b, clean);
  free(clean);
}

static void json_diags(OxBuf *b, const OxDiagList *d, OxSeverity sev) {
  ox_buf_putc(b, '[');
  bool first = true;
  for (size_t i = 0; i < d->n; i++) {
    if (d->items[i].sev != sev) continue;
    char *s = ox_diag_format(d, &d->items[i]);
    if (!first) ox_buf_puts(b, ", ");
    json_str(b, s);
    free(s);
    first = false;
  }
  ox_buf_putc(b, ']');
}

static bool write_stdout(const char *data, size_t len) {
  if (len && fwrite(data, 1, len, stdout) != len) return false;
  return fflush(stdout) == 0 && !ferror(stdout);
}

static void info_json(const CliOpts *o, const OxDoc *doc, const OxDiagList *diags, OxBuf *b) {
  ox_buf_puts(b, "{\n  \"file\": ");
  json_str(b, o->file);
  ox_buf_puts(b, ",\n  \"format\": ");
  json_str(b, doc ? ox_format_name(doc->format) : NULL);
  if (doc) {
    uint32_t gi = o->graph ? o->graph : 1;
    const OxGraph *g = doc->graphs[gi - 1];
    ox_buf_printf(b, ",\n  \"graph\": %u,\n  \"name\": ", gi);
    json_str(b, g->name);
    ox_buf_puts(b, ",\n  \"graphs\": [");
    for (uint32_t i = 0; i < doc->n_graphs; i++) {
      ox_buf_printf(b, "%s{\"index\": %u, \"name\": ", i ? ", " : "", i + 1);
      json_str(b, doc->graphs[i]->name);
      ox_buf_printf(b, ", \"nodes\": %u, \"subgraphs\": %u}", count_nodes(doc->graphs[i]),
                    doc->graphs[i]->n_subgraphs);
    }
    ox_buf_printf(b, "],\n  \"nodes\": %u,\n  \"placeholders\": %u,\n  \"get_attrs\": %u,\n  \"outputs\": %u",
                  count_nodes(g), count_op(g, OX_OP_PLACEHOLDER), count_op(g, OX_OP_GET_ATTR),
                  count_op(g, OX_OP_OUTPUT));
    ox_buf_puts(b, ",\n  \"subgraphs\": [");
    for (uint32_t i = 0; i < g->n_subgraphs; i++) {
      ox_buf_puts(b, i ? ", {\"name\": " : "{\"name\": ");
      json_str(b, g->subgraphs[i]->name);
      ox_buf_puts(b, ", \"owner\": ");
      json_str(b, g->subgraphs[i]->sub_owner);
      ox_buf_printf(b, ", \"nodes\": %u}", count_nodes(g->subgraphs[i]));
    }
    ox_buf_puts(b, "],\n  \"ops\": {");
    uint32_t nh = 0;
    OpCount *hist = op_histogram(g, &nh);
    for (uint32_t i = 0; i < nh; i++) {
      ox_buf_puts(b, i ? ",\n    " : "\n    ");
      json_str(b, hist[i].key);
      ox_buf_printf(b, ": %u", hist[i].count);
    }
    free(hist);
    ox_buf_puts(b, nh ? "\n  }" : "}");
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
                    count_nodes(doc->graphs[i]));
  ox_buf_printf(b, "graph %u: %s\n", gi, g->name ? g->name : "graph");
  ox_buf_printf(b, "  nodes: %u\n  placeholders: %u\n", count_nodes(g), count_op(g, OX_OP_PLACEHOLDER));
  uint32_t n_attr = count_op(g, OX_OP_GET_ATTR);
  if (n_attr) ox_buf_printf(b, "  get_attr: %u\n", n_attr);
  ox_buf_printf(b, "  output: %s\n", ox_graph_output(g) ? "yes" : "no (fragment)");
  if (g->n_subgraphs) {
    ox_buf_printf(b, "  subgraphs: %u\n", g->n_subgraphs);
    for (uint32_t i = 0; i < g->n_subgraphs; i++)
      ox_buf_printf(b, "    %s%s%s: %u nodes\n", g->subgraphs[i]->name ? g->subgraphs[i]->name : "graph",
                    g->subgraphs[i]->sub_owner ? " of " : "",
                    g->subgraphs[i]->sub_owner ? g->subgraphs[i]->sub_owner : "", count_nodes(g->subgraphs[i]));
  }
  uint32_t nh = 0;
  OpCount *hist = op_histogram(g, &nh);
  ox_buf_printf(b, "ops: %u distinct\n", nh);
  for (uint32_t i = 0; i < nh; i++) ox_buf_printf(b, "  %6u  %s\n", hist[i].count, hist[i].key);
  free(hist);
  ox_buf_printf(b, "warnings: %zu\n", diags->n_warnings);
}

static int cmd_info(int argc, char **argv) {
  CliOpts o = {.cmd = "info", .usage = usage_info};
  int rc = parse_args(&o, OPT_JSON | OPT_GRAPH | OPT_STRICT | OPT_FORMAT, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  OxDoc *doc = NULL;
  OxDiagList diags;
  int status = EXIT_OK;
  if (load_input(&o, &doc, &diags) != 0) {
    status = EXIT_BAD;
  } else if (!graph_in_range(&o, doc)) {
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
  if (b.len && !write_stdout(b.data, b.len)) {
    fprintf(stderr, "optimus info: cannot write to standard output\n");
    status = EXIT_BAD;
  }
  ox_buf_free(&b);
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}

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
    return EXIT_OK;
  case OUT_FX:
    for (uint32_t i = 0; i < doc->n_graphs; i++) {
      if (o->graph && i != gi - 1) continue;
      if (out->len) ox_buf_putc(out, '\n');
      ox_write_fx_text(doc->graphs[i], out);
    }
    return EXIT_OK;
  case OUT_DOT: ox_write_dot(g, &dopt, out); return EXIT_OK;
  case OUT_SVG:
  case OUT_PNG: {
    char err[1024];
    if (ox_render(g, &dopt, kind == OUT_SVG ? "svg" : "png", out, err, sizeof err) != 0) {
      fprintf(stderr, "optimus convert: %s: %s\n", o->file, err);
      return EXIT_BAD;
    }
    if (err[0]) fprintf(stderr, "optimus convert: %s: graphviz: %s\n", o->file, err);
    return EXIT_OK;
  }
  default: return EXIT_BAD;
  }
}

static int cmd_convert(int argc, char **argv) {
  CliOpts o = {.cmd = "convert", .usage = usage_convert};
  int rc = parse_args(&o, OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_OUTPUT | OPT_TO | OPT_EDGE_SHAPES | OPT_RANKDIR,
                      argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (!o.output) return usage_error(&o, "%s", "missing -o OUT");
  bool to_stdout = strcmp(o.output, "-") == 0;
  OutKind kind;
  if (o.to) {
    kind = kind_from_name(o.to);
    if (!kind || strcasecmp(o.to, "txt") == 0 || strcasecmp(o.to, "gv") == 0)
      return usage_error(&o, "unknown output kind '%s' (use json, fx, dot, svg or png)", o.to);
  } else if (to_stdout) {
    return usage_error(&o, "%s", "writing to '-' needs --to json|fx|dot|svg");
  } else {
    kind = kind_from_path(o.output);
    if (!kind)
      return usage_error(&o, "cannot tell the output format from '%s' (use .json, .txt, .fx, .dot, .svg, "
                             ".png or --to)", o.output);
  }
  if (to_stdout && kind == OUT_PNG)
    return usage_error(&o, "%s", "PNG is binary and is not written to standard output; use -o FILE.png");

  OxDoc *doc = NULL;
  OxDiagList diags;
  int status = EXIT_OK;
  if (load_input(&o, &doc, &diags) != 0 || !graph_in_range(&o, doc)) {
    status = EXIT_BAD;
  } else {
    OxBuf out;
    ox_buf_init(&out);
    status = convert_build(&o, doc, kind, &out);
    if (status == EXIT_OK) {
      if (to_stdout) {
        if (!write_stdout(out.data, out.len)) {
          fprintf(stderr, "optimus convert: cannot write to standard output\n");
          status = EXIT_BAD;
        }
      } else {
        char err[1024];
        if (!ox_write_file_atomic(o.output, out.data, out.len, err, sizeof err)) {
          fprintf(stderr, "optimus convert: %s\n", err);
          status = EXIT_BAD;
        }
      }
    }
    ox_buf_free(&out);
  }
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}

/* ------------------------------------------------------------------ check */

/* Verifies g and its nested subgraphs; counts graphs and nodes checked. */
static int check_graph(OxGraph *g, OxDiagList *d, uint32_t *n_graphs, uint64_t *n_nodes) {
  bool has_output = ox_graph_output(g) != 0;
  int errors = ox_graph_verify(g, has_output, d);
  (*n_graphs)++;
  *n_nodes += count_nodes(g);
  for (uint32_t i = 0; i < g->n_subgraphs; i++) errors += check_graph(g->subgraphs[i], d, n_graphs, n_nodes);
  return errors;
}

static int cmd_check(int argc, char **argv) {
  CliOpts o = {.cmd = "check", .usage = usage_check};
  int rc = parse_args(&o, OPT_GRAPH | OPT_STRICT | OPT_FORMAT, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  OxDoc *doc = NULL;
  OxDiagList diags;
  int status = EXIT_OK;
  if (load_input(&o, &doc, &diags) != 0 || !graph_in_range(&o, doc)) {
    status = EXIT_BAD;
  } else {
    OxDiagList vd;
    ox_diags_init(&vd, diags.file);
    uint32_t n_graphs = 0;
    uint64_t n_nodes = 0;
    int errors = 0;
    for (uint32_t i = 0; i < doc->n_graphs; i++)
      if (!o.graph || i == o.graph - 1) errors += check_graph(doc->graphs[i], &vd, &n_graphs, &n_nodes);
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

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    int (*run)(int, char **);
  } commands[] = {{"info", cmd_info}, {"convert", cmd_convert}, {"check", cmd_check}};
  if (argc < 2) {
    fputs(usage_top, stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
    fputs(usage_top, stdout);
    return EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("optimus %s\n", OPTIMUS_VERSION);
    return EXIT_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(cmd, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "optimus: unknown %s '%s'\n", cmd[0] == '-' ? "option" : "command", cmd);
  fputs(usage_top, stderr);
  return EXIT_USAGE;
}
