/* cli.c - the shared part of the `optimus` CLI: option parsing (one table of options, each
 * command accepting a set of them), loading the input with its diagnostics printed, output
 * helpers (JSON strings always valid UTF-8, checked writes to stdout), verifying a graph, and
 * the pipeline helpers optimize, explain and replay share (--config / --passes / --option /
 * --rules, loading for a run with missing meta inferred, running into a fresh trace).
 *
 * Node counts everywhere (info, check, the JSON "nodes" fields) are live nodes without the
 * output node, the way SOURCES.md and torch users count them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/ox_load.h"
#include "ops/ox_shape.h"
#include "rules/ox_rules.h"
#include "cli.h"

/* ------------------------------------------------------------------ options */

typedef struct OptSpec {
  const char *name; /* long name without "--" */
  char short_name;  /* 0 if none */
  bool has_arg;
  uint64_t bit;
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
  {"disable-step", 0, true, OPT_DISABLE_STEP},
  {"only-pass", 0, true, OPT_ONLY_PASS},
  {"input", 0, true, OPT_INPUT},
  {"all", 0, false, OPT_ALL},
  {"oracle", 0, true, OPT_ORACLE},
  {"check", 0, true, OPT_CHECK},
  {"timeout", 0, true, OPT_TIMEOUT},
  {"cost-guard", 0, false, OPT_COST_GUARD},
  {"trace-format", 0, true, OPT_TRACE_FORMAT},
  {"profile", 0, false, OPT_PROFILE},
};

int ox_cli_usage_error(const CliOpts *o, const char *fmt, const char *arg) {
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
      return ox_cli_usage_error(o, "--graph needs a graph number (1, 2, ...), not '%s'", val);
    o->graph = (uint32_t)v;
    break;
  }
  case OPT_FORMAT:
    if (strcmp(val, "fx-text") == 0) o->format = OX_FMT_FX_TEXT;
    else if (strcmp(val, "fx-readable") == 0) o->format = OX_FMT_FX_READABLE;
    else if (strcmp(val, "json") == 0) o->format = OX_FMT_JSON;
    else return ox_cli_usage_error(o, "unknown input format '%s' (use fx-text, fx-readable or json)", val);
    break;
  case OPT_SHAPES:
    if (o->shapes_file) return ox_cli_usage_error(o, "--shapes given twice (%s)", val);
    o->shapes_file = val;
    break;
  case OPT_INPUT_SHAPE:
    if (o->n_input_shapes == MAX_REPEATS)
      return ox_cli_usage_error(o, "too many --input-shape options (at most %s)", "64");
    o->input_shapes[o->n_input_shapes++] = val;
    break;
  case OPT_OPTION:
    if (o->n_options == MAX_REPEATS)
      return ox_cli_usage_error(o, "too many --option options (at most %s)", "64");
    o->options[o->n_options++] = val;
    break;
  case OPT_TRACE: o->trace = val; break;
  case OPT_TRACE_FORMAT:
    if (strcmp(val, "2") != 0 && strcmp(val, "3") != 0 && strcmp(val, "4") != 0 && strcmp(val, "5") != 0)
      return ox_cli_usage_error(o, "--trace-format: the trace version to write is 2, 3, 4 or 5, not '%s'", val);
    o->trace_format = val[0] - '0';
    break;
  case OPT_CONFIG: o->config = val; break;
  case OPT_PASSES: o->passes = val; break;
  case OPT_CHECKS: o->checks = val; break;
  case OPT_NODE: o->node = val; break;
  case OPT_PASS: o->pass = val; break;
  case OPT_ONLY_PASS: o->only_pass = val; break;
  case OPT_INPUT: o->input = val; break;
  case OPT_ALL: o->all = true; break;
  case OPT_ORACLE: o->oracle = val; break;
  case OPT_CHECK: o->check = val; break;
  case OPT_TIMEOUT: {
    char *end = NULL;
    errno = 0;
    double v = strtod(val, &end);
    if (!*val || *end || errno || !(v > 0) || v > 86400)
      return ox_cli_usage_error(o, "--timeout: expected seconds (a positive number), not '%s'", val);
    o->timeout = v;
    break;
  }
  case OPT_DISABLE_STEP: {
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(val, &end, 10);
    if (!*val || *end || errno || v == 0 || v > 0xffffffffUL || val[0] == '-' || val[0] == '+')
      return ox_cli_usage_error(o, "--disable-step needs a step number (#1, #2 ... of the trace), not '%s'", val);
    if (o->n_disable_steps == MAX_REPEATS)
      return ox_cli_usage_error(o, "too many --disable-step options (at most %s)", "64");
    o->disable_steps[o->n_disable_steps++] = (uint32_t)v;
    break;
  }
  case OPT_KEEP_FAILED: o->keep_failed = true; break;
  case OPT_COST_GUARD: o->cost_guard = true; break;
  case OPT_PROFILE: o->profile = true; break;
  case OPT_LIST_PASSES: o->list_passes = true; break;
  case OPT_FOCUS:
    if (o->n_focus == MAX_REPEATS)
      return ox_cli_usage_error(o, "too many --focus options (at most %s)", "64");
    o->focus[o->n_focus++] = val;
    break;
  case OPT_OPEN:
    if (o->n_open == MAX_REPEATS) return ox_cli_usage_error(o, "too many --open options (at most %s)", "64");
    o->open[o->n_open++] = val;
    break;
  case OPT_OVERVIEW: o->overview = true; break;
  case OPT_PARAMS: o->params = true; break;
  case OPT_RULES:
    if (o->n_rules == MAX_REPEATS)
      return ox_cli_usage_error(o, "too many --rules options (at most %s)", "64");
    o->rules[o->n_rules++] = val;
    break;
  case OPT_RADIUS:
  case OPT_MAX_NODES: {
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(val, &end, 10);
    if (!*val || *end || errno || val[0] == '-' || v > 1000000000UL || (s->bit == OPT_MAX_NODES && v == 0))
      return ox_cli_usage_error(o, "expected a positive number, not '%s'", val);
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
      if (!eq) return ox_cli_usage_error(o, "--budget takes steps=N, growth=F or seconds=S, not '%s'", kv);
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
        return ox_cli_usage_error(
            o,
            "--budget: expected steps=N (a whole number >= 1), growth=F (>= 1) or seconds=S (> 0), not '%s'",
            kv);
      }
    }
    break;
  }
  case OPT_LAYOUT_BUDGET: {
    char *end = NULL;
    errno = 0;
    double v = strtod(val, &end);
    if (!*val || *end || errno || !(v > 0) || v > 86400)
      return ox_cli_usage_error(o, "expected seconds (a positive number), not '%s'", val);
    o->layout_budget = v;
    break;
  }
  case OPT_LAYOUT:
    if (strcmp(val, "auto") && strcmp(val, "dot") && strcmp(val, "layered"))
      return ox_cli_usage_error(o, "--layout is auto, dot or layered, not '%s'", val);
    o->layout = val;
    break;
  case OPT_STEP:
  case OPT_NUMERIC_BUDGET: {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (!*val || *end || errno || val[0] == '-' || (s->bit == OPT_STEP && v > 0xffffffffULL))
      return ox_cli_usage_error(o, "expected a non-negative number, not '%s'", val);
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
      return ox_cli_usage_error(o, "--rankdir must be TB, LR, BT or RL, not '%s'", val);
    o->rankdir = val;
    break;
  default: break;
  }
  return EXIT_OK;
}

/* Parses argv[1..] of a command (argv[0] is the command name). Options may come before or
 * after FILE, as "--name value", "--name=value" or "-o value"; "--" ends options. Returns
 * EXIT_OK to run, -1 when help was printed, EXIT_USAGE on a usage error. */
int ox_cli_parse_args(CliOpts *o, uint64_t allowed, int argc, char **argv) {
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
      if (o->file) return ox_cli_usage_error(o, "unexpected argument '%s' (one FILE only)", a);
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
        if (!spec->has_arg) return ox_cli_usage_error(o, "option '--%s' takes no value", name);
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
    if (!spec || !(allowed & spec->bit)) return ox_cli_usage_error(o, "unknown option '%s'", a);
    if (spec->has_arg && !val) {
      if (i + 1 >= argc) return ox_cli_usage_error(o, "option '%s' needs a value", a);
      val = argv[++i];
    }
    int rc = apply_option(o, spec, val);
    if (rc != EXIT_OK) return rc;
  }
  if (!o->file && !o->list_passes) return ox_cli_usage_error(o, "%s", "missing FILE");
  return EXIT_OK;
}

/* ------------------------------------------------------------------ loading */

/* Loads o->file into *doc; every diagnostic (warnings too) is printed to stderr. */
int ox_cli_load_input(const CliOpts *o, OxDoc **doc, OxDiagList *diags) {
  OxLoadOptions lo = {0};
  lo.strict = o->strict;
  bool from_stdin = strcmp(o->file, "-") == 0;
  ox_diags_init(diags, from_stdin ? "<stdin>" : o->file);
  int rc;
  if (from_stdin) {
    size_t len = 0;
    char err[512];
    /* the loaders' cap (512 MiB), refused while reading: `optimus info - < /dev/zero` */
    char *text = ox_read_stream(0, "standard input", &len, ox_input_cap((size_t)512 << 20), err, sizeof err);
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

bool ox_cli_graph_in_range(const CliOpts *o, const OxDoc *doc) {
  if (o->graph <= doc->n_graphs) return true;
  fprintf(stderr, "optimus %s: %s: --graph %u is out of range: the input has %u graph%s\n", o->cmd, o->file,
          o->graph, doc->n_graphs, doc->n_graphs == 1 ? "" : "s");
  return false;
}

uint32_t ox_cli_count_nodes(const OxGraph *g) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id)
  if (g->nodes[id].op != OX_OP_OUTPUT) n++;
  return n;
}

/* A JSON string: ox_buf_put_quoted escapes, after bytes that are not UTF-8 became '?' so the
 * output is always valid JSON whatever the input file held. */
void ox_cli_json_str(OxBuf *b, const char *s) {
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

bool ox_cli_write_stdout(const char *data, size_t len) {
  if (len && fwrite(data, 1, len, stdout) != len) return false;
  return fflush(stdout) == 0 && !ferror(stdout);
}

/* Verifies g and its nested subgraphs; counts graphs and nodes checked. */
int ox_cli_check_graph(OxGraph *g, OxDiagList *d, uint32_t *n_graphs, uint64_t *n_nodes) {
  bool has_output = ox_graph_output(g) != 0;
  int errors = ox_graph_verify(g, has_output, d);
  (*n_graphs)++;
  *n_nodes += ox_cli_count_nodes(g);
  for (uint32_t i = 0; i < g->n_subgraphs; i++)
    errors += ox_cli_check_graph(g->subgraphs[i], d, n_graphs, n_nodes);
  return errors;
}

/* ------------------------------------------------------------------ optimize / explain / replay */

int ox_cli_list_passes(void) {
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

static int build_pipeline(const CliOpts *o, const OxGraph *g, OxPipeline *p, bool apply_options, OxDiagList *d) {
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
  for (uint32_t i = 0; apply_options && i < o->n_options; i++)
    if (ox_pipeline_set_option(p, o->options[i], d) != 0) {
      ox_diags_print(d, stderr);
      return EXIT_USAGE;
    }
  return EXIT_OK;
}

/* Loads FILE, picks the graph, fills missing meta by inference (passes guard on meta). */
int ox_cli_load_for_run(CliOpts *o, OxDoc **doc, OxDiagList *diags, OxGraph **g) {
  if (ox_cli_load_input(o, doc, diags) != 0 || !ox_cli_graph_in_range(o, *doc)) return EXIT_BAD;
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

/* Runs the pipeline on g into a fresh trace. */
int ox_cli_run_pipeline(CliOpts *o, OxGraph *g, OxTrace **trace, OxOptimizeResult *res) {
  OxCheckConfig cc;
  ox_check_config_default(&cc);
  char err[256];
  if (o->checks && ox_check_config_parse(o->checks, &cc, err, sizeof err) != 0) {
    ox_cli_usage_error(o, "%s", err);
    return EXIT_USAGE;
  }
  cc.keep_failed = o->keep_failed;
  if (o->numeric_budget) cc.numeric_budget = o->numeric_budget;
  OxDiagList d;
  ox_diags_init(&d, o->file);
  OxPipeline p = {0};
  int status = build_pipeline(o, g, &p, true, &d);
  p.budget = o->budget;
  for (uint32_t i = 0; status == EXIT_OK && o->cost_guard && i < p.n; i++)
    if (!p.entries[i].opt.has_min_payoff) { /* an explicit P.min_payoff=X wins */
      p.entries[i].opt.has_min_payoff = true;
      p.entries[i].opt.min_payoff = 0;
    }
  if (status == EXIT_OK) {
    OxTrace *t = ox_trace_new_for(g);
    t->no_edits = o->no_edits;
    t->no_rejections = o->no_edits; /* the trace is not written: only the count is printed */
    t->input_file = ox_trace_intern(t, o->file);
    if (o->checks) t->checks = ox_trace_intern(t, o->checks);
    else t->checks = ox_trace_intern(t, "structure,shape,numeric");
    OxBuf cfg;
    ox_buf_init(&cfg);
    ox_pipeline_to_json(&p, &cfg);
    t->config = ox_trace_intern(t, cfg.data);
    ox_buf_free(&cfg);
    /* a trace to be written in the current version is encoded on a second thread while the
     * passes run (the same file; without a thread it is all encoded when written) */
    if (o->trace && (o->trace_format == 0 || o->trace_format == OX_TRACE_VERSION) && ox_trace_live_start(t, o->trace) &&
        o->recycle_edits)
      ox_trace_recycle_edits(t);
    if (ox_optimize(g, &p, &cc, t, res, &d) != 0) status = EXIT_BAD;
    ox_diags_print(&d, stderr); /* errors, or the warnings of passes stopped by a budget */
    *trace = t;
  }
  ox_pipeline_free(&p);
  ox_diags_clear(&d);
  return status;
}

/* ------------------------------------------------------------------ whatif / compare-runs / bisect */

OxTrace *ox_cli_read_trace(const CliOpts *o, const char *path) {
  char err[1024];
  size_t len;
  char *text = ox_map_file(path, &len, ox_input_cap((size_t)1 << 30), err, sizeof err);
  if (!text) {
    fprintf(stderr, "optimus %s: %s\n", o->cmd, err);
    return NULL;
  }
  OxDiagList td;
  ox_diags_init(&td, path);
  OxTrace *t = NULL;
  if (ox_trace_read_json(text, len, path, &t, &td) != 0) t = NULL;
  ox_diags_print(&td, stderr);
  ox_diags_clear(&td);
  ox_text_free(text);
  return t;
}

int ox_cli_build_run(const CliOpts *o, const OxGraph *g, const OxTrace *t, bool apply_options, OxPipeline *p,
                     OxCheckConfig *cc) {
  memset(p, 0, sizeof *p);
  ox_check_config_default(cc);
  char err[256];
  const char *checks = o->checks ? o->checks : t && t->checks && *t->checks ? t->checks : NULL;
  if (checks && ox_check_config_parse(checks, cc, err, sizeof err) != 0) {
    if (o->checks) return ox_cli_usage_error(o, "%s", err);
    fprintf(stderr, "optimus %s: the trace's checks '%s': %s\n", o->cmd, checks, err);
    return EXIT_BAD;
  }
  cc->keep_failed = o->keep_failed;
  if (o->numeric_budget) cc->numeric_budget = o->numeric_budget;
  OxDiagList d;
  ox_diags_init(&d, o->file);
  int status = EXIT_OK;
  if (!o->config && !o->passes && !o->n_rules && t && t->config && *t->config) {
    /* the recorded run's own configuration */
    OxDiagList cd;
    ox_diags_init(&cd, "the trace's configuration");
    if (ox_pipeline_from_config(t->config, strlen(t->config), "the trace's configuration", p, &cd) != 0) {
      ox_diags_print(&cd, stderr);
      fprintf(stderr, "optimus %s: the trace's configuration cannot be re-run (a rule file's passes need --rules)\n",
              o->cmd);
      status = EXIT_BAD;
    }
    ox_diags_clear(&cd);
    for (uint32_t i = 0; status == EXIT_OK && apply_options && i < o->n_options; i++)
      if (ox_pipeline_set_option(p, o->options[i], &d) != 0) {
        ox_diags_print(&d, stderr);
        status = EXIT_USAGE;
      }
  } else {
    status = build_pipeline(o, g, p, apply_options, &d);
  }
  p->budget = o->budget;
  if (status != EXIT_OK) ox_pipeline_free(p);
  ox_diags_clear(&d);
  return status;
}

/* ------------------------------------------------------------------ the per-pass table */

/* The per-pass table (optimize --profile, info of a trace): slowest first, passes that took under 0.05 ms and recorded
 * nothing summed in one line. */
static int by_seconds_desc(const void *a, const void *b) {
  const OxPassStat *x = *(const OxPassStat *const *)a, *y = *(const OxPassStat *const *)b;
  if (x->seconds != y->seconds) return x->seconds < y->seconds ? 1 : -1;
  return x < y ? -1 : x > y; /* equal times: pipeline order */
}

void ox_cli_pass_table(const OxTrace *t, double run_seconds, OxBuf *b) {
  const OxPassStat **order = malloc((t->n_pass_stats + 1) * sizeof *order);
  char (*names)[96] = malloc((t->n_pass_stats + 1) * sizeof *names);
  if (!order || !names) {
    free(order);
    free(names);
    return;
  }
  for (uint32_t i = 0; i < t->n_pass_stats; i++) order[i] = &t->pass_stats[i];
  qsort(order, t->n_pass_stats, sizeof *order, by_seconds_desc);
  double total = run_seconds > 0 ? run_seconds : 1e-9, rest_s = 0;
  uint32_t rest = 0;
  static const char outside[] = "outside passes (hash, cost, sorting)";
  int width = (int)sizeof outside - 1;
  for (uint32_t i = 0; i < t->n_pass_stats; i++) {
    const OxPassStat *e = order[i];
    int n = e->runs > 1 ? snprintf(names[i], sizeof names[i], "%s (%s) x%u", e->pass, e->phase, e->runs)
                        : snprintf(names[i], sizeof names[i], "%s (%s)", e->pass, e->phase);
    if (n > width) width = n < (int)sizeof names[i] ? n : (int)sizeof names[i] - 1;
  }
  ox_buf_printf(b, "  %-*s %9s %6s %8s %8s %6s\n", width, "pass (phase)", "ms", "share", "applied", "rejected",
                "failed");
  for (uint32_t i = 0; i < t->n_pass_stats; i++) {
    const OxPassStat *e = order[i];
    if (e->seconds < 5e-5 && !e->applied && !e->rejected && !e->check_failed) {
      rest++;
      rest_s += e->seconds;
      continue;
    }
    ox_buf_printf(b, "  %-*s %9.2f %5.1f%% %8u %8u %6u\n", width, names[i], e->seconds * 1e3, 100 * e->seconds / total,
                  e->applied, e->rejected, e->check_failed);
  }
  if (rest) {
    char what[64];
    snprintf(what, sizeof what, "%u more with nothing to do", rest);
    ox_buf_printf(b, "  %-*s %9.2f %5.1f%%\n", width, what, rest_s * 1e3, 100 * rest_s / total);
  }
  /* what the run did besides its passes: the input's hash, the graph's cost before and after,
   * the sorts between passes */
  double in_passes = 0;
  for (uint32_t i = 0; i < t->n_pass_stats; i++) in_passes += t->pass_stats[i].seconds;
  if (run_seconds > in_passes)
    ox_buf_printf(b, "  %-*s %9.2f %5.1f%%\n", width, outside,
                  (run_seconds - in_passes) * 1e3, 100 * (run_seconds - in_passes) / total);
  free(names);
  free(order);
}

void ox_cli_json_pass_counts(OxBuf *b, const OxPassStat *e) {
  ox_buf_printf(b, "\"seconds\": %.6f, \"runs\": %u, \"applied\": %u, \"rejected\": %u, \"check_failed\": %u",
                e->seconds, e->runs, e->applied, e->rejected, e->check_failed);
}

void ox_cli_json_pass_stats(OxBuf *b, const OxTrace *t) {
  for (uint32_t i = 0; i < t->n_pass_stats; i++) {
    const OxPassStat *e = &t->pass_stats[i];
    ox_buf_puts(b, i ? ", {\"pass\": " : "{\"pass\": ");
    ox_cli_json_str(b, e->pass);
    ox_buf_printf(b, ", \"phase\": \"%s\", ", e->phase);
    ox_cli_json_pass_counts(b, e);
    ox_buf_putc(b, '}');
  }
}

void ox_cli_json_counters(OxBuf *b, const char *const *names, const int64_t *values, uint32_t n) {
  ox_buf_putc(b, '{');
  for (uint32_t i = 0; i < n; i++) {
    if (i) ox_buf_puts(b, ", ");
    ox_cli_json_str(b, names[i]);
    ox_buf_printf(b, ": %lld", (long long)values[i]);
  }
  ox_buf_putc(b, '}');
}

/* {"launches": [b, a], "bytes": [b, a], "flops": [b, a]}, null for an unknown value (the trace's
 * encoding of a cost pair) */
void ox_cli_json_cost(OxBuf *b, const OxCostPair *p) {
  static const char *const keys[3] = {"launches", "bytes", "flops"};
  static const unsigned bits[3] = {OX_COST_LAUNCHES, OX_COST_BYTES, OX_COST_FLOPS};
  const OxCost *x[2] = {&p->before, &p->after};
  ox_buf_putc(b, '{');
  for (int k = 0; k < 3; k++) {
    ox_buf_printf(b, "%s\"%s\": [", k ? ", " : "", keys[k]);
    for (int i = 0; i < 2; i++) {
      uint64_t v = k == 0 ? x[i]->launches : k == 1 ? x[i]->bytes : x[i]->flops;
      if (x[i]->unknown & bits[k]) ox_buf_printf(b, "%snull", i ? ", " : "");
      else ox_buf_printf(b, "%s%llu", i ? ", " : "", (unsigned long long)v);
    }
    ox_buf_putc(b, ']');
  }
  ox_buf_putc(b, '}');
}
