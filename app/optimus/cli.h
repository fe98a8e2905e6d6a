/* cli.h - what the files of the `optimus` CLI share: parsed options, exit codes, loading,
 * output helpers and the pass-running helpers (cli.c), and the table of subcommands.
 *
 * One file per subcommand (cmd-NAME.c) holds its usage text and its
 * int ox_cli_cmd_NAME(int argc, char **argv). Adding a subcommand = that file, one X(...) line
 * in OX_CLI_COMMANDS below (its line of `optimus --help`, in the order listed), and one line in
 * app/meson.build. Options are parsed by ox_cli_parse_args from one table (cli.c): a command
 * passes the OPT_ bits it accepts; a new option is one OPT_ bit, one opt_specs row, one
 * CliOpts field and its case in apply_option.
 *
 * Exit status: 0 success, 1 bad input / failed check / failed write, 2 usage error.
 */
#ifndef OPTIMUS_CLI_H
#define OPTIMUS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ox_buf.h"
#include "ir/ox_diag.h"
#include "ir/ox_graph.h"
#include "load/ox_doc.h"
#include "passes/ox_pass.h"
#include "run/ox_trace.h"

/* The subcommands: X(NAME, SUMMARY), SUMMARY being NAME's line of `optimus --help`; a '_' in
 * NAME is a '-' on the command line (compare_runs is `optimus compare-runs`). */
#define OX_CLI_COMMANDS(X) \
  X(info, "  info FILE            format, graphs, node counts and op histogram of an FX dump\n") \
  X(convert, "  convert FILE -o OUT  write it as Optimus JSON, FX text, DOT, SVG or PNG\n") \
  X(check, "  check FILE           load it and verify every graph\n") \
  X(verify, "  verify FILE          verifier, and the interpreter against recorded outputs\n") \
  X(optimize, "  optimize FILE -o OUT run the Optimus passes, recording every step\n") \
  X(explain, "  explain FILE --node N  why each pass did or did not fire at a node\n") \
  X(replay, "  replay FILE TRACE -o OUT  the graph after step K of a recorded run\n") \
  X(whatif, "  whatif FILE --option P.K=V  re-run with a change: the decisions that differ\n") \
  X(compare_runs, "  compare-runs A B     two recorded runs of one graph (traces), aligned step by step\n") \
  X(diff, "  diff A B             added, removed and changed nodes of two graphs, by region\n") \
  X(bisect, "  bisect FILE --trace T  the first step of a run after which an oracle fails\n")

#define OX_CLI_DECLARE(name, summary) int ox_cli_cmd_##name(int argc, char **argv);
OX_CLI_COMMANDS(OX_CLI_DECLARE)
#undef OX_CLI_DECLARE

enum { EXIT_OK = 0, EXIT_BAD = 1, EXIT_USAGE = 2 };

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
/* the option bits past 31 (an enum constant must fit an int) */
#define OPT_DISABLE_STEP (1ull << 31)
#define OPT_ONLY_PASS (1ull << 32)
#define OPT_INPUT (1ull << 33)
#define OPT_ALL (1ull << 34)
#define OPT_ORACLE (1ull << 35)
#define OPT_CHECK (1ull << 36)
#define OPT_TIMEOUT (1ull << 37)
#define OPT_COST_GUARD (1ull << 38)
#define OPT_TRACE_FORMAT (1ull << 39)
#define OPT_PROFILE (1ull << 40)

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
  int trace_format;    /* --trace-format N: the trace version written (0 = OX_TRACE_VERSION) */
  const char *file2;   /* replay: TRACE */
  bool want_file2;
  bool keep_failed, list_passes, has_step;
  bool cost_guard; /* --cost-guard: min_payoff=0 for every pass that has none */
  bool profile;    /* --profile: the per-pass table after the summary */
  bool no_edits;   /* the run's trace is not written: record steps without edit scripts */
  bool recycle_edits; /* optimize: the trace is written once, by its live writer: edit memory used again */
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
  uint32_t disable_steps[MAX_REPEATS]; /* whatif --disable-step N (1-based record numbers) */
  uint32_t n_disable_steps;
  const char *only_pass; /* whatif --only-pass P */
  const char *input;     /* compare-runs, diff: --input FILE */
  bool all;              /* compare-runs --all */
  const char *oracle;    /* bisect --oracle CMD */
  const char *check;     /* bisect --check numeric */
  double timeout;        /* bisect --timeout S; 0 = default */
} CliOpts;

/* ------------------------------------------------------------------ cli.c */

int ox_cli_check_graph(OxGraph *g, OxDiagList *d, uint32_t *n_graphs, uint64_t *n_nodes);
uint32_t ox_cli_count_nodes(const OxGraph *g);
bool ox_cli_graph_in_range(const CliOpts *o, const OxDoc *doc);
void ox_cli_json_str(OxBuf *b, const char *s);
int ox_cli_list_passes(void);
int ox_cli_load_for_run(CliOpts *o, OxDoc **doc, OxDiagList *diags, OxGraph **g);
int ox_cli_load_input(const CliOpts *o, OxDoc **doc, OxDiagList *diags);
int ox_cli_parse_args(CliOpts *o, uint64_t allowed, int argc, char **argv);
/* Reads a trace file; NULL after printing the error (located when it is in the file). */
OxTrace *ox_cli_read_trace(const CliOpts *o, const char *path);
/* The pipeline and checks a re-run of g uses: --config / --passes / --rules when given, else the
 * configuration recorded in trace t (when given and readable), else the default pipeline; then,
 * with apply_options, every --option. --checks, else t's checks, else all; --keep-failed,
 * --numeric-budget and --budget apply. Returns EXIT_OK, or EXIT_USAGE / EXIT_BAD after printing
 * why (*p is then empty). */
int ox_cli_build_run(const CliOpts *o, const OxGraph *g, const OxTrace *t, bool apply_options, OxPipeline *p,
                     OxCheckConfig *cc);
int ox_cli_run_pipeline(CliOpts *o, OxGraph *g, OxTrace **trace, OxOptimizeResult *res);
int ox_cli_usage_error(const CliOpts *o, const char *fmt, const char *arg);
/* The trace's per-pass table as text, slowest first, with the run's time outside its passes
 * (optimize --profile, info of a trace); as JSON array items (without the brackets). */
void ox_cli_pass_table(const OxTrace *t, double run_seconds, OxBuf *b);
void ox_cli_json_pass_stats(OxBuf *b, const OxTrace *t);
/* One pass's "seconds", "runs", "applied", "rejected", "check_failed" members (no braces). */
void ox_cli_json_pass_counts(OxBuf *b, const OxPassStat *e);
/* {"name": value, ...} of a trace's or a run's counters. */
void ox_cli_json_counters(OxBuf *b, const char *const *names, const int64_t *values, uint32_t n);
/* A cost pair as the trace writes it: {"launches": [b, a], "bytes": [b, a], "flops": [b, a]}. */
void ox_cli_json_cost(OxBuf *b, const OxCostPair *p);
bool ox_cli_write_stdout(const char *data, size_t len);

/* ------------------------------------------------------------------ cmd-convert.c */

/* Writes graph gi of doc to o->output the way `convert` does (optimize and replay use it). */
int ox_cli_write_graph_out(const CliOpts *o, OxDoc *doc, uint32_t gi);

#endif
