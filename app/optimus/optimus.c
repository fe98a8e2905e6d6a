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

#include "ir/ox_buf.h"
#include "ir/ox_diag.h"
#include "ir/ox_graph.h"
#include "ir/ox_mem.h"
#include "layout/ox_layout.h"
#include "layout/ox_view.h"
#include "load/ox_load.h"
#include "ops/ox_shape.h"
#include "passes/ox_pass.h"
#include "rules/ox_rules.h"
#include "run/ox_record.h"
#include "run/ox_trace.h"
#include "write/ox_write.h"

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
  "  verify FILE          verifier, and the interpreter against recorded outputs\n"
  "  optimize FILE -o OUT run the Optimus passes, recording every step\n"
  "  explain FILE --node N  why each pass did or did not fire at a node\n"
  "  replay FILE TRACE -o OUT  the graph after step K of a recorded run\n"
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
  "  --trace T.json        write the trace (docs/trace-format.md)\n"
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
  "  --input-shape N=DIMS  placeholder or parameter shape, e.g. x=16,256 or x=f32:16,256\n"
  "                        (repeatable); parameters without one are inferred from their uses\n"
  "  --shapes FILE         shapes from a JSON object or a .safetensors header (docs/cli.md)\n"
  "  --graph N             the graph to optimize (1-based; default 1)\n"
  "  --json                print one JSON summary object\n"
  "  --list-passes         list the built-in passes and exit\n"
  "  --rules FILE          also run the rules of FILE after the pipeline (repeatable;\n"
  "                        docs/rules.md)\n"
  "  --strict, --format F  as for info\n"
  "  -h, --help            show this help\n";

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
  OPT_INPUT_SHAPE = 1 << 8,
  OPT_TRACE = 1 << 9,
  OPT_CONFIG = 1 << 10,
  OPT_PASSES = 1 << 11,
  OPT_OPTION = 1 << 12,
  OPT_CHECKS = 1 << 13,
  OPT_KEEP_FAILED = 1 << 14,
  OPT_NUMERIC_BUDGET = 1 << 15,
  OPT_NODE = 1 << 16,
  OPT_PASS = 1 << 17,
  OPT_STEP = 1 << 18,
  OPT_LIST_PASSES = 1 << 19,
  OPT_FOCUS = 1 << 20,
  OPT_RADIUS = 1 << 21,
  OPT_OVERVIEW = 1 << 22,
  OPT_OPEN = 1 << 23,
  OPT_MAX_NODES = 1 << 24,
  OPT_RULES = 1 << 25,
  OPT_LAYOUT_BUDGET = 1 << 26,
  OPT_LAYOUT = 1 << 27,
  OPT_PARAMS = 1 << 28,
  OPT_SHAPES = 1 << 29, /* accepted wherever OPT_INPUT_SHAPE is */
  OPT_BUDGET = 1 << 30,
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
  {"input-shape", 0, true, OPT_INPUT_SHAPE},
  {"trace", 0, true, OPT_TRACE},
  {"config", 0, true, OPT_CONFIG},
  {"passes", 0, true, OPT_PASSES},
  {"option", 0, true, OPT_OPTION},
  {"checks", 0, true, OPT_CHECKS},
  {"keep-failed", 0, false, OPT_KEEP_FAILED},
  {"numeric-budget", 0, true, OPT_NUMERIC_BUDGET},
  {"node", 0, true, OPT_NODE},
  {"pass", 0, true, OPT_PASS},
  {"step", 0, true, OPT_STEP},
  {"list-passes", 0, false, OPT_LIST_PASSES},
  {"focus", 0, true, OPT_FOCUS},
  {"radius", 0, true, OPT_RADIUS},
  {"overview", 0, false, OPT_OVERVIEW},
  {"open", 0, true, OPT_OPEN},
  {"max-nodes", 0, true, OPT_MAX_NODES},
  {"rules", 0, true, OPT_RULES},
  {"layout-budget", 0, true, OPT_LAYOUT_BUDGET},
  {"layout", 0, true, OPT_LAYOUT},
  {"params", 0, false, OPT_PARAMS},
  {"shapes", 0, true, OPT_SHAPES},
  {"budget", 0, true, OPT_BUDGET},
};

enum { MAX_REPEATS = 64 };

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
  const char *input_shapes[MAX_REPEATS];
  uint32_t n_input_shapes;
  const char *shapes_file; /* --shapes FILE */
  const char *options[MAX_REPEATS];
  uint32_t n_options;
  const char *trace, *config, *passes, *checks, *node, *pass;
  const char *file2;   /* replay: TRACE */
  bool want_file2;
  bool keep_failed, list_passes, has_step;
  uint32_t step;
  uint64_t numeric_budget;
  OxBudget budget; /* --budget; zero fields = defaults */
  const char *focus[MAX_REPEATS];
  uint32_t n_focus;
  const char *open[MAX_REPEATS];
  uint32_t n_open;
  const char *rules[MAX_REPEATS]; /* --rules FILE, in order */
  uint32_t n_rules;
  bool overview, has_radius;
  uint32_t radius, max_nodes;
  double layout_budget; /* seconds; 0 = default */
  bool params;          /* draw parameters as their own nodes */
  const char *layout;   /* auto, dot, layered */
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
  case OPT_SHAPES:
    if (o->shapes_file) return usage_error(o, "--shapes given twice (%s)", val);
    o->shapes_file = val;
    break;
  case OPT_INPUT_SHAPE:
    if (o->n_input_shapes == MAX_REPEATS) return usage_error(o, "too many --input-shape options (at most %s)", "64");
    o->input_shapes[o->n_input_shapes++] = val;
    break;
  case OPT_OPTION:
    if (o->n_options == MAX_REPEATS) return usage_error(o, "too many --option options (at most %s)", "64");
    o->options[o->n_options++] = val;
    break;
  case OPT_TRACE: o->trace = val; break;
  case OPT_CONFIG: o->config = val; break;
  case OPT_PASSES: o->passes = val; break;
  case OPT_CHECKS: o->checks = val; break;
  case OPT_NODE: o->node = val; break;
  case OPT_PASS: o->pass = val; break;
  case OPT_KEEP_FAILED: o->keep_failed = true; break;
  case OPT_LIST_PASSES: o->list_passes = true; break;
  case OPT_FOCUS:
    if (o->n_focus == MAX_REPEATS) return usage_error(o, "too many --focus options (at most %s)", "64");
    o->focus[o->n_focus++] = val;
    break;
  case OPT_OPEN:
    if (o->n_open == MAX_REPEATS) return usage_error(o, "too many --open options (at most %s)", "64");
    o->open[o->n_open++] = val;
    break;
  case OPT_OVERVIEW: o->overview = true; break;
  case OPT_PARAMS: o->params = true; break;
  case OPT_RULES:
    if (o->n_rules == MAX_REPEATS) return usage_error(o, "too many --rules options (at most %s)", "64");
    o->rules[o->n_rules++] = val;
    break;
  case OPT_RADIUS:
  case OPT_MAX_NODES: {
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(val, &end, 10);
    if (!*val || *end || errno || val[0] == '-' || v > 1000000000UL || (s->bit == OPT_MAX_NODES && v == 0))
      return usage_error(o, "expected a positive number, not '%s'", val);
    if (s->bit == OPT_RADIUS) {
      o->radius = (uint32_t)v;
      o->has_radius = true;
    } else {
      o->max_nodes = (uint32_t)v;
    }
    break;
  }
  case OPT_BUDGET: {
    /* steps=N,growth=F,seconds=S, any subset, any order */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", val);
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
      char *eq = strchr(kv, '=');
      if (!eq) return usage_error(o, "--budget takes steps=N, growth=F or seconds=S, not '%s'", kv);
      *eq = 0;
      char *end = NULL;
      errno = 0;
      double v = strtod(eq + 1, &end);
      bool num = eq[1] && !*end && !errno;
      if (!strcmp(kv, "steps") && num && v >= 1 && v <= 4e9 && v == (double)(uint32_t)v)
        o->budget.max_steps = (uint32_t)v;
      else if (!strcmp(kv, "growth") && num && v >= 1 && v <= 1e6)
        o->budget.max_growth = v;
      else if (!strcmp(kv, "seconds") && num && v > 0 && v <= 1e7)
        o->budget.max_seconds = v;
      else {
        *eq = '=';
        return usage_error(o, "--budget: expected steps=N (a whole number >= 1), growth=F (>= 1) or seconds=S (> 0), not '%s'", kv);
      }
    }
    break;
  }
  case OPT_LAYOUT_BUDGET: {
    char *end = NULL;
    errno = 0;
    double v = strtod(val, &end);
    if (!*val || *end || errno || !(v > 0) || v > 86400)
      return usage_error(o, "expected seconds (a positive number), not '%s'", val);
    o->layout_budget = v;
    break;
  }
  case OPT_LAYOUT:
    if (strcmp(val, "auto") && strcmp(val, "dot") && strcmp(val, "layered"))
      return usage_error(o, "--layout is auto, dot or layered, not '%s'", val);
    o->layout = val;
    break;
  case OPT_STEP:
  case OPT_NUMERIC_BUDGET: {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (!*val || *end || errno || val[0] == '-' || (s->bit == OPT_STEP && v > 0xffffffffULL))
      return usage_error(o, "expected a non-negative number, not '%s'", val);
    if (s->bit == OPT_STEP) {
      o->step = (uint32_t)v;
      o->has_step = true;
    } else {
      o->numeric_budget = v;
    }
    break;
  }
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
      if (o->file && o->want_file2 && !o->file2) {
        o->file2 = a;
        continue;
      }
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
    if (allowed & OPT_INPUT_SHAPE) allowed |= OPT_SHAPES;
    if (!spec || !(allowed & spec->bit)) return usage_error(o, "unknown option '%s'", a);
    if (spec->has_arg && !val) {
      if (i + 1 >= argc) return usage_error(o, "option '%s' needs a value", a);
      val = argv[++i];
    }
    int rc = apply_option(o, spec, val);
    if (rc != EXIT_OK) return rc;
  }
  if (!o->file && !o->list_passes) return usage_error(o, "%s", "missing FILE");
  return EXIT_OK;
}

/* ------------------------------------------------------------------ loading */

/* Loads o->file into *doc; every diagnostic (warnings too) is printed to stderr. */
static int load_input(const CliOpts *o, OxDoc **doc, OxDiagList *diags) {
  OxLoadOptions lo = {0};
  lo.strict = o->strict;
  bool from_stdin = strcmp(o->file, "-") == 0;
  ox_diags_init(diags, from_stdin ? "<stdin>" : o->file);
  int rc;
  if (from_stdin) {
    size_t len = 0;
    char err[512];
    /* the loaders' cap (512 MiB), refused while reading: `optimus info - < /dev/zero` */
    char *text = ox_read_stream(0, "standard input", &len, (size_t)512 << 20, err, sizeof err);
    if (!text) {
      ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "%s", err);
      rc = -1;
      *doc = NULL;
    } else {
      rc = ox_load_buffer(text, len, o->format, &lo, doc, diags);
      free(text);
    }
  } else {
    rc = ox_load_file(o->file, o->format, &lo, doc, diags);
  }
  if (rc == 0 && (o->n_input_shapes || o->shapes_file)) {
    /* --shapes, then --input-shape (which wins), on the chosen graph; then every node's meta,
     * parameters' from their uses included */
    uint32_t gi = o->graph ? o->graph : 1;
    OxShapeList sl;
    ox_shape_list_init(&sl);
    if (o->shapes_file) {
      OxDiagList sd;
      ox_diags_init(&sd, o->shapes_file);
      if (ox_shapes_load_file(o->shapes_file, &sl, &sd) != 0) rc = -1;
      ox_diags_print(&sd, stderr);
      ox_diags_clear(&sd);
    }
    if (rc == 0 && gi <= (*doc)->n_graphs) {
      OxGraph *g = (*doc)->graphs[gi - 1];
      if (o->shapes_file) ox_shapes_apply(g, &sl, diags, NULL);
      if (ox_shape_apply_input_specs(g, o->input_shapes, o->n_input_shapes, diags) != 0) {
        rc = -1;
      } else {
        OxParamShapes ps;
        ox_shape_infer_params(g, diags, 12, &ps);
        OxShapeStats st;
        ox_shape_infer_graph(g, diags, &st);
      }
    }
    ox_shape_list_free(&sl);
    if (rc != 0) {
      ox_doc_free(*doc);
      *doc = NULL;
    }
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
  int rc = parse_args(&o, OPT_JSON | OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_INPUT_SHAPE, argc, argv);
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
      if (out->len) ox_buf_putc(out, '\n');
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

static int cmd_convert(int argc, char **argv) {
  CliOpts o = {.cmd = "convert", .usage = usage_convert};
  int rc = parse_args(&o,
                      OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_OUTPUT | OPT_TO | OPT_EDGE_SHAPES | OPT_RANKDIR |
                          OPT_INPUT_SHAPE | OPT_FOCUS | OPT_RADIUS | OPT_OVERVIEW | OPT_OPEN | OPT_MAX_NODES |
                          OPT_LAYOUT_BUDGET | OPT_LAYOUT | OPT_PARAMS,
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
  int rc = parse_args(&o, OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_INPUT_SHAPE, argc, argv);
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


/* ------------------------------------------------------------------ verify */

static int cmd_verify(int argc, char **argv) {
  CliOpts o = {.cmd = "verify", .usage = usage_verify};
  int rc = parse_args(&o, OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_JSON | OPT_INPUT_SHAPE, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  OxDoc *doc = NULL;
  OxDiagList diags;
  if (load_input(&o, &doc, &diags) != 0 || !graph_in_range(&o, doc)) {
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
  for (uint32_t i = 0; i < doc->n_graphs; i++) errors += check_graph(doc->graphs[i], &vd, &n_graphs, &n_nodes);
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
    json_str(&b, o.file);
    ox_buf_printf(&b, ", \"graphs\": %u, \"verifier_errors\": %d, \"numeric\": ", n_graphs, errors);
    if (vr == 1) {
      ox_buf_puts(&b, "{\"status\": \"not-run\", \"reason\": \"the file carries no recorded inputs and outputs\"}");
    } else if (vr != 0) {
      ox_buf_puts(&b, "{\"status\": \"error\", \"reason\": ");
      json_str(&b, err);
      ox_buf_putc(&b, '}');
    } else {
      ox_buf_printf(&b, "{\"status\": \"%s\", \"outputs\": [", rep.pass ? "passed" : "failed");
      for (uint32_t i = 0; i < rep.n_outputs; i++) {
        const OxVerifyOutput *q = &rep.outputs[i];
        ox_buf_printf(&b, "%s{\"index\": %u, \"pass\": %s, \"max_abs\": %.9g, \"max_rel\": %.9g, \"tol\": %.9g}",
                      i ? ", " : "", i, q->pass ? "true" : "false", q->max_abs, q->max_rel, q->tol.atol * q->scale);
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
      ox_buf_printf(&b, "numeric: %s (%u output%s against the recorded values)\n", rep.pass ? "ok" : "MISMATCH",
                    rep.n_outputs, rep.n_outputs == 1 ? "" : "s");
    }
  }
  if (vr != 1 && (vr != 0 || !rep.pass)) status = EXIT_BAD;
  if (!write_stdout(b.data, b.len)) status = EXIT_BAD;
  ox_buf_free(&b);
  ox_verify_report_clear(&rep);
  ox_diags_clear(&vd);
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}

/* ------------------------------------------------------------------ optimize / explain / replay */

static int list_passes(void) {
  size_t n;
  const OxPassInfo *p = ox_passes(&n);
  printf("%zu built-in passes, in default order (opt-in ones run only when --config or --passes names them):\n", n);
  for (size_t i = 0; i < n; i++)
    printf("  %-40s %-4s %-7s %-6s %s\n", p[i].name, p[i].phase == OX_PHASE_POST ? "post" : "pre",
           p[i].engine == OX_ENGINE_BATCH ? "batch" : "pattern", ox_pass_opt_in(&p[i]) ? "opt-in" : "",
           p[i].summary ? p[i].summary : "");
  return EXIT_OK;
}

/* Builds the pipeline from --config / --passes / default, then --option. */
/* Rule sets loaded by --rules; the pipeline borrows their passes until the process ends. */
static OxRuleSet *rule_sets[MAX_REPEATS];
static uint32_t n_rule_sets;

static void free_rule_sets(void) {
  for (uint32_t i = 0; i < n_rule_sets; i++) ox_rules_free(rule_sets[i]);
  n_rule_sets = 0;
}

static int build_pipeline(const CliOpts *o, const OxGraph *g, OxPipeline *p, OxDiagList *d) {
  if (o->config) {
    char err[1024];
    size_t len;
    char *text = ox_read_file(o->config, &len, 16u << 20, err, sizeof err);
    if (!text) {
      fprintf(stderr, "optimus %s: %s\n", o->cmd, err);
      return EXIT_BAD;
    }
    OxDiagList cd;
    ox_diags_init(&cd, o->config);
    int rc = ox_pipeline_from_config(text, len, o->config, p, &cd);
    free(text);
    ox_diags_print(&cd, stderr);
    ox_diags_clear(&cd);
    if (rc) return EXIT_BAD;
  } else if (o->passes) {
    if (ox_pipeline_from_list(o->passes, p, d) != 0) {
      ox_diags_print(d, stderr);
      return EXIT_USAGE;
    }
  } else {
    ox_pipeline_default(g, p);
  }
  for (uint32_t i = 0; i < o->n_rules; i++) { /* after the pipeline, in the order given */
    OxDiagList rd;
    ox_diags_init(&rd, o->rules[i]);
    OxRuleSet *rs = NULL;
    int rc = ox_rules_load(o->rules[i], &rs, &rd);
    ox_diags_print(&rd, stderr);
    ox_diags_clear(&rd);
    if (rc) return EXIT_BAD;
    if (!n_rule_sets) atexit(free_rule_sets);
    rule_sets[n_rule_sets++] = rs;
    ox_rules_append(rs, p);
  }
  for (uint32_t i = 0; i < o->n_options; i++)
    if (ox_pipeline_set_option(p, o->options[i], d) != 0) {
      ox_diags_print(d, stderr);
      return EXIT_USAGE;
    }
  return EXIT_OK;
}

/* Loads FILE, picks the graph, fills missing meta by inference (passes guard on meta). */
static int load_for_run(CliOpts *o, OxDoc **doc, OxDiagList *diags, OxGraph **g) {
  if (load_input(o, doc, diags) != 0 || !graph_in_range(o, *doc)) return EXIT_BAD;
  *g = (*doc)->graphs[(o->graph ? o->graph : 1) - 1];
  if (!o->n_input_shapes) {
    OxDiagList sd;
    ox_diags_init(&sd, diags->file);
    OxShapeStats st;
    ox_shape_infer_graph(*g, &sd, &st);
    ox_diags_print(&sd, stderr);
    ox_diags_clear(&sd);
  }
  return EXIT_OK;
}

static int write_graph_out(const CliOpts *o, OxDoc *doc, uint32_t gi) {
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
  int status = convert_build(&co, doc, kind, &out);
  if (status == EXIT_OK) {
    char err[1024];
    if (to_stdout) {
      if (!write_stdout(out.data, out.len)) status = EXIT_BAD;
    } else if (!ox_write_file_atomic(o->output, out.data, out.len, err, sizeof err)) {
      fprintf(stderr, "optimus %s: %s\n", o->cmd, err);
      status = EXIT_BAD;
    }
  }
  ox_buf_free(&out);
  return status;
}

static int write_trace_file(const char *cmd, const char *path, const OxTrace *t) {
  OxBuf b;
  ox_buf_init(&b);
  ox_trace_write_json(t, &b);
  char err[1024];
  bool ok = ox_write_file_atomic(path, b.data, b.len, err, sizeof err);
  if (!ok) fprintf(stderr, "optimus %s: %s\n", cmd, err);
  ox_buf_free(&b);
  return ok ? EXIT_OK : EXIT_BAD;
}

/* Runs the pipeline on g into a fresh trace. */
static int run_pipeline(CliOpts *o, OxGraph *g, OxTrace **trace, OxOptimizeResult *res) {
  OxCheckConfig cc;
  ox_check_config_default(&cc);
  char err[256];
  if (o->checks && ox_check_config_parse(o->checks, &cc, err, sizeof err) != 0) {
    usage_error(o, "%s", err);
    return EXIT_USAGE;
  }
  cc.keep_failed = o->keep_failed;
  if (o->numeric_budget) cc.numeric_budget = o->numeric_budget;
  OxDiagList d;
  ox_diags_init(&d, o->file);
  OxPipeline p = {0};
  int status = build_pipeline(o, g, &p, &d);
  p.budget = o->budget;
  if (status == EXIT_OK) {
    OxTrace *t = ox_trace_new_for(g);
    t->input_file = ox_trace_intern(t, o->file);
    if (o->checks) t->checks = ox_trace_intern(t, o->checks);
    else t->checks = ox_trace_intern(t, "structure,shape,numeric");
    OxBuf cfg;
    ox_buf_init(&cfg);
    ox_pipeline_to_json(&p, &cfg);
    t->config = ox_trace_intern(t, cfg.data);
    ox_buf_free(&cfg);
    if (ox_optimize(g, &p, &cc, t, res, &d) != 0) status = EXIT_BAD;
    ox_diags_print(&d, stderr); /* errors, or the warnings of passes stopped by a budget */
    *trace = t;
  }
  ox_pipeline_free(&p);
  ox_diags_clear(&d);
  return status;
}

static int cmd_optimize(int argc, char **argv) {
  CliOpts o = {.cmd = "optimize", .usage = usage_optimize};
  int rc = parse_args(&o,
                      OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_OUTPUT | OPT_TO | OPT_JSON | OPT_INPUT_SHAPE | OPT_TRACE |
                          OPT_CONFIG | OPT_PASSES | OPT_OPTION | OPT_CHECKS | OPT_KEEP_FAILED | OPT_NUMERIC_BUDGET | OPT_BUDGET |
                          OPT_LIST_PASSES | OPT_RULES,
                      argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (o.list_passes) return list_passes();
  if (!o.output) return usage_error(&o, "%s", "missing -o OUT");
  if (o.config && o.passes) return usage_error(&o, "%s", "--config and --passes exclude each other");
  OxDoc *doc = NULL;
  OxDiagList diags;
  OxGraph *g = NULL;
  int status = load_for_run(&o, &doc, &diags, &g);
  OxTrace *t = NULL;
  OxOptimizeResult res;
  memset(&res, 0, sizeof res);
  uint32_t before = 0;
  if (status == EXIT_OK) {
    before = count_nodes(g);
    status = run_pipeline(&o, g, &t, &res);
  }
  if (status == EXIT_OK) status = write_graph_out(&o, doc, o.graph ? o.graph : 1);
  if (status == EXIT_OK && o.trace) status = write_trace_file("optimize", o.trace, t);
  if (status == EXIT_OK) {
    OxBuf b;
    ox_buf_init(&b);
    if (o.json) {
      ox_buf_puts(&b, "{\"file\": ");
      json_str(&b, o.file);
      ox_buf_printf(&b, ", \"nodes_before\": %u, \"nodes_after\": %u, \"applied\": %u, \"rejected\": %u, "
                        "\"check_failures\": %u, \"budget_stops\": %u, \"seconds\": %.6f, \"counters\": {",
                    before, count_nodes(g), res.applied, res.rejected, res.check_failures, res.budget_stops,
                    res.seconds);
      for (uint32_t i = 0; i < res.n_counters; i++) {
        if (i) ox_buf_puts(&b, ", ");
        json_str(&b, res.counter_names[i]);
        ox_buf_printf(&b, ": %lld", (long long)res.counter_values[i]);
      }
      ox_buf_puts(&b, "}}\n");
    } else {
      ox_buf_printf(&b, "%s: %u -> %u nodes; %u applied steps, %u rejected attempts, %u check failures in %.3f s\n",
                    o.file, before, count_nodes(g), res.applied, res.rejected, res.check_failures, res.seconds);
      for (uint32_t i = 0; i < res.n_counters; i++)
        ox_buf_printf(&b, "  %-40s %lld\n", res.counter_names[i], (long long)res.counter_values[i]);
      if (strcmp(o.output, "-") != 0) ox_buf_printf(&b, "wrote %s\n", o.output);
      if (o.trace) ox_buf_printf(&b, "wrote %s\n", o.trace);
    }
    if (!write_stdout(b.data, b.len)) status = EXIT_BAD;
    ox_buf_free(&b);
  }
  ox_trace_free(t);
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}

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

static int cmd_explain(int argc, char **argv) {
  CliOpts o = {.cmd = "explain", .usage = usage_explain};
  int rc = parse_args(&o,
                      OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_JSON | OPT_INPUT_SHAPE | OPT_TRACE | OPT_CONFIG |
                          OPT_PASSES | OPT_OPTION | OPT_CHECKS | OPT_BUDGET | OPT_NODE | OPT_PASS | OPT_RULES,
                      argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (!o.node) return usage_error(&o, "%s", "missing --node NAME");
  OxDoc *doc = NULL;
  OxDiagList diags;
  OxGraph *g = NULL;
  int status = load_for_run(&o, &doc, &diags, &g);
  OxTrace *t = NULL;
  if (status == EXIT_OK && !ox_graph_find(g, o.node)) {
    fprintf(stderr, "optimus explain: %s: no node named '%s' in graph %u\n", o.file, o.node, o.graph ? o.graph : 1);
    status = EXIT_BAD;
  }
  if (status == EXIT_OK) {
    if (o.trace) {
      char err[1024];
      size_t len;
      char *text = ox_read_file(o.trace, &len, 1u << 30, err, sizeof err);
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
      free(text);
      ox_diags_clear(&td);
    } else {
      OxOptimizeResult res;
      OxGraph *work = ox_graph_clone(g);
      status = run_pipeline(&o, work, &t, &res);
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
      json_str(&b, o.node);
      ox_buf_puts(&b, ", \"target\": ");
      json_str(&b, node->target);
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
        json_str(&b, s->pass ? s->pass : "");
        ox_buf_puts(&b, ", \"rule\": ");
        json_str(&b, s->rule ? s->rule : "");
        if (s->rule_file) {
          ox_buf_puts(&b, ", \"rule_file\": ");
          json_str(&b, s->rule_file);
          ox_buf_printf(&b, ", \"rule_line\": %u", s->rule_line);
        }
        ox_buf_printf(&b, ", \"kind\": \"%s\", \"anchor\": ", step_kind_text(s));
        json_str(&b, s->anchor ? s->anchor : "");
        ox_buf_printf(&b, ", \"matched\": %u", s->n_matched);
        if (why) {
          ox_buf_puts(&b, ", \"reason\": ");
          json_str(&b, why);
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
    if (!write_stdout(b.data, b.len)) status = EXIT_BAD;
    ox_buf_free(&b);
    free(idx);
  }
  ox_trace_free(t);
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}

static int cmd_replay(int argc, char **argv) {
  CliOpts o = {.cmd = "replay", .usage = usage_replay, .want_file2 = true};
  int rc = parse_args(&o, OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_OUTPUT | OPT_TO | OPT_STEP | OPT_INPUT_SHAPE, argc,
                      argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (!o.file2) return usage_error(&o, "%s", "missing TRACE");
  if (!o.output) return usage_error(&o, "%s", "missing -o OUT");
  OxDoc *doc = NULL;
  OxDiagList diags;
  OxGraph *g = NULL;
  int status = load_for_run(&o, &doc, &diags, &g);
  if (status == EXIT_OK) {
    char err[1024];
    size_t len;
    char *text = ox_read_file(o.file2, &len, 1u << 30, err, sizeof err);
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
      status = write_graph_out(&o, doc, o.graph ? o.graph : 1);
    }
    free(text);
    ox_trace_free(t);
    ox_diags_clear(&td);
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
  } commands[] = {{"info", cmd_info},         {"convert", cmd_convert}, {"check", cmd_check},
                  {"verify", cmd_verify},     {"optimize", cmd_optimize}, {"explain", cmd_explain},
                  {"replay", cmd_replay}};
  ox_mem_tune_for_batch(); /* one run, then exit: freed memory is worth keeping for reuse */
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
