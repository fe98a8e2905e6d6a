/* cmd-bisect.c - `optimus bisect`: the first step of a recorded run after which an oracle
 * fails, by binary search over the run's graph-changing steps (each graph rebuilt by replay).
 *
 * The oracle is a shell command run with /bin/sh -c, {graph} replaced by the shell-quoted path
 * of the graph after K steps, under a time limit (its process group is killed when it runs
 * over: a timeout counts as a failure); or --check numeric, the reference interpreter
 * comparing the graph after K steps with the input (engine/run/ox_equiv.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/ox_compare.h"
#include "run/ox_equiv.h"
#include "run/ox_record.h"
#include "cli.h"

static const char usage_bisect[] =
  "Usage: optimus bisect FILE --trace T (--oracle 'CMD {graph}' | --check numeric) [OPTIONS]\n"
  "\n"
  "Find the first step of the run recorded in T after which an oracle fails: a binary search\n"
  "over the run's graph-changing steps (applied steps, and failed ones kept with --keep-failed),\n"
  "the graph after K steps rebuilt from FILE by replay. The input (K = 0) must pass and the\n"
  "whole run must fail; then about log2(steps) oracle runs name the step, its pass and rule\n"
  "(file:line for user rules).\n"
  "\n"
  "Options:\n"
  "  --trace T.json      the recorded run (required)\n"
  "  --oracle 'CMD'      a shell command (/bin/sh -c) that exits 0 when the graph is good;\n"
  "                      {graph} is replaced by the (quoted) path of the graph to judge\n"
  "  --check numeric     the built-in oracle: the reference interpreter runs the graph and the\n"
  "                      input on the same inputs (the recorded ones if FILE has a record) and\n"
  "                      their outputs must agree\n"
  "  --timeout S         seconds an oracle run may take (default 60); one that runs over is\n"
  "                      killed and counts as a failure\n"
  "  --to json|fx        the format of the graphs written for the oracle and by -o (default json)\n"
  "  -o, --output PREFIX write the graphs before and after the failing step to\n"
  "                      PREFIX.before.EXT and PREFIX.after.EXT\n"
  "  --json              print one JSON object (docs/cli.md)\n"
  "  --graph N, --input-shape, --shapes, --strict, --format   as for replay\n"
  "  -h, --help          show this help\n"
  "\n"
  "Exit status: 0 when a first failing step was found, 1 when there is none to name (the input\n"
  "already fails, or the whole run passes) or on bad input, 2 on usage errors.\n";

/* ------------------------------------------------------------------ the oracle */

typedef struct Verdict {
  bool ok;
  bool timed_out;
  int exit_status; /* -1: killed by a signal (or timed out) */
  char why[300];   /* numeric: the first difference */
} Verdict;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* cmd with every {graph} replaced by path in single quotes (malloc'ed). */
static char *substitute(const char *cmd, const char *path) {
  OxBuf q;
  ox_buf_init(&q);
  ox_buf_putc(&q, '\'');
  for (const char *p = path; *p; p++) {
    if (*p == '\'')
      ox_buf_puts(&q, "'\\''");
    else
      ox_buf_putc(&q, *p);
  }
  ox_buf_putc(&q, '\'');
  ox_buf_putc(&q, 0);
  OxBuf b;
  ox_buf_init(&b);
  for (const char *p = cmd; *p;) {
    if (strncmp(p, "{graph}", 7) == 0) {
      ox_buf_puts(&b, q.data);
      p += 7;
    } else {
      ox_buf_putc(&b, *p++);
    }
  }
  ox_buf_putc(&b, 0);
  ox_buf_free(&q);
  return b.data;
}

static int run_command(const char *cmd, double timeout, Verdict *v) {
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(v->why, sizeof v->why, "cannot start the oracle: %s", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
      if (devnull > 2) close(devnull);
    }
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  setpgid(pid, pid); /* also here: whichever runs first */
  double deadline = now_s() + timeout;
  int st = 0;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      snprintf(v->why, sizeof v->why, "waiting for the oracle: %s", strerror(errno));
      return -1;
    }
    if (now_s() > deadline) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      v->timed_out = true;
      v->ok = false;
      v->exit_status = -1;
      snprintf(v->why, sizeof v->why, "timed out after %g s (killed)", timeout);
      return 0;
    }
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  v->exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  v->ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  if (!v->ok) {
    if (WIFEXITED(st))
      snprintf(v->why, sizeof v->why, "exit status %d", WEXITSTATUS(st));
    else
      snprintf(v->why, sizeof v->why, "killed by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  }
  return 0;
}

/* ------------------------------------------------------------------ the search */

typedef struct Bisect {
  CliOpts *o;
  OxDoc *doc;
  uint32_t gi;           /* 0-based graph */
  const OxGraph *input;  /* the loaded graph (only read) */
  const OxTrace *t;
  const char *ext;       /* "json" or "txt" */
  char *dir;             /* temporary directory for the oracle's graphs */
  uint32_t runs;
  bool numeric;
  Verdict *verdicts;     /* per k, once judged */
  bool *judged;
} Bisect;

/* The input with the first k graph-changing steps replayed (caller frees), or NULL. */
static OxGraph *graph_after(Bisect *b, uint32_t k) {
  OxGraph *g = ox_graph_clone(b->input);
  OxDiagList d;
  ox_diags_init(&d, b->o->trace);
  if (ox_replay(g, b->t, k, &d) != 0) {
    ox_diags_print(&d, stderr);
    ox_graph_free(g);
    g = NULL;
  }
  ox_diags_clear(&d);
  return g;
}

/* Writes g as graph gi of the document to path (format from its extension). */
static int write_graph(Bisect *b, OxGraph *g, const char *path) {
  CliOpts wo = *b->o;
  wo.output = path;
  wo.to = NULL;
  OxGraph *keep = b->doc->graphs[b->gi];
  b->doc->graphs[b->gi] = g;
  int rc = ox_cli_write_graph_out(&wo, b->doc, b->gi + 1);
  b->doc->graphs[b->gi] = keep;
  return rc;
}

/* Judges the graph after k steps; -1 when that could not be done (printed). */
static int judge(Bisect *b, uint32_t k, Verdict *v) {
  if (b->judged[k]) {
    *v = b->verdicts[k];
    return 0;
  }
  memset(v, 0, sizeof *v);
  OxGraph *g = graph_after(b, k);
  if (!g) return -1;
  int rc = 0;
  b->runs++;
  if (b->numeric) {
    OxEquivReport rep;
    char err[256];
    if (ox_equiv_outputs(b->input, g, b->doc->record, 1337, &rep, err, sizeof err) != 0) {
      fprintf(stderr, "optimus bisect: --check numeric cannot run the input graph: %s\n", err);
      rc = -1;
    } else {
      v->ok = rep.pass;
      v->exit_status = rep.pass ? 0 : 1;
      if (!rep.pass) snprintf(v->why, sizeof v->why, "%s", rep.why);
    }
  } else {
    size_t n = strlen(b->dir) + strlen(b->ext) + 16;
    char *path = malloc(n);
    if (!path) exit(EXIT_BAD);
    snprintf(path, n, "%s/graph.%s", b->dir, b->ext);
    rc = write_graph(b, g, path) == EXIT_OK ? 0 : -1;
    if (rc == 0) {
      char *cmd = substitute(b->o->oracle, path);
      rc = run_command(cmd, b->o->timeout > 0 ? b->o->timeout : 60.0, v);
      if (rc != 0) fprintf(stderr, "optimus bisect: %s\n", v->why);
      free(cmd);
    }
    unlink(path);
    free(path);
  }
  ox_graph_free(g);
  if (rc == 0) {
    b->judged[k] = true;
    b->verdicts[k] = *v;
  }
  return rc;
}

static const OxStep *step_of(const OxTrace *t, uint32_t k) {
  for (uint32_t i = 0; i < t->n_steps; i++)
    if (t->steps[i].applied_index == k) return &t->steps[i];
  return NULL;
}

static void json_verdict(OxBuf *b, uint32_t k, const Verdict *v) {
  ox_buf_printf(b, "{\"k\": %u, \"ok\": %s, \"timed_out\": %s, \"exit_status\": %d, \"why\": ", k,
                v->ok ? "true" : "false", v->timed_out ? "true" : "false", v->exit_status);
  ox_cli_json_str(b, v->why[0] ? v->why : NULL);
  ox_buf_putc(b, '}');
}

int ox_cli_cmd_bisect(int argc, char **argv) {
  CliOpts o = {.cmd = "bisect", .usage = usage_bisect};
  int rc = ox_cli_parse_args(&o,
                             OPT_GRAPH | OPT_STRICT | OPT_FORMAT | OPT_OUTPUT | OPT_TO | OPT_JSON | OPT_INPUT_SHAPE |
                                 OPT_TRACE | OPT_ORACLE | OPT_CHECK | OPT_TIMEOUT,
                             argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  if (!o.trace) return ox_cli_usage_error(&o, "%s", "missing --trace T (the run to bisect)");
  if (!o.oracle == !o.check) return ox_cli_usage_error(&o, "%s", "give one oracle: --oracle 'CMD {graph}' or --check numeric");
  if (o.check && strcmp(o.check, "numeric") != 0)
    return ox_cli_usage_error(&o, "--check %s: the built-in oracle is 'numeric'", o.check);
  if (o.oracle && !strstr(o.oracle, "{graph}"))
    return ox_cli_usage_error(&o, "%s", "--oracle: the command must contain {graph} (the graph to judge)");
  const char *ext = "json";
  if (o.to && strcmp(o.to, "fx") == 0) ext = "txt";
  else if (o.to && strcmp(o.to, "json") != 0) return ox_cli_usage_error(&o, "--to %s: the graphs are json or fx", o.to);
  OxDoc *doc = NULL;
  OxDiagList diags;
  OxGraph *g = NULL;
  int status = ox_cli_load_for_run(&o, &doc, &diags, &g);
  OxTrace *t = NULL;
  if (status == EXIT_OK && !(t = ox_cli_read_trace(&o, o.trace))) status = EXIT_BAD;
  if (status == EXIT_OK && !t->input_hash) {
    fprintf(stderr, "optimus bisect: %s: the trace has no input hash, so nothing checks it was recorded on %s\n",
            o.trace, o.file);
    status = EXIT_BAD;
  }
  uint32_t K = 0;
  for (uint32_t i = 0; t && i < t->n_steps; i++)
    if (t->steps[i].applied_index > K) K = t->steps[i].applied_index;
  if (status == EXIT_OK && K == 0) {
    fprintf(stderr, "optimus bisect: %s: the run changed nothing: there is no step to bisect\n", o.trace);
    status = EXIT_BAD;
  }
  char dir[4096];
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/optimus-bisect-XXXXXX", tmp && *tmp && strlen(tmp) < 4000 ? tmp : "/tmp");
  bool have_dir = false;
  if (status == EXIT_OK && o.oracle) {
    if (!mkdtemp(dir)) {
      fprintf(stderr, "optimus bisect: cannot make a temporary directory: %s\n", strerror(errno));
      status = EXIT_BAD;
    } else {
      have_dir = true;
    }
  }
  Bisect b = {.o = &o, .doc = doc, .gi = (o.graph ? o.graph : 1) - 1, .input = g, .t = t, .ext = ext, .dir = dir,
              .numeric = o.check != NULL};
  if (status == EXIT_OK) {
    b.verdicts = calloc(K + 1, sizeof *b.verdicts);
    b.judged = calloc(K + 1, sizeof *b.judged);
    if (!b.verdicts || !b.judged) exit(EXIT_BAD);
    /* a replay that does not fit this graph fails here, before any oracle run */
    OxGraph *probe = graph_after(&b, 0);
    if (!probe) status = EXIT_BAD;
    ox_graph_free(probe);
  }
  Verdict v0, vk;
  uint32_t first = 0; /* the first failing k, 0 when none */
  const char *none = NULL;
  if (status == EXIT_OK && judge(&b, 0, &v0) != 0) status = EXIT_BAD;
  if (status == EXIT_OK && !v0.ok) none = "the oracle fails on the input graph itself (before any step)";
  if (status == EXIT_OK && !none && judge(&b, K, &vk) != 0) status = EXIT_BAD;
  if (status == EXIT_OK && !none && vk.ok) none = "the oracle passes after every step: no step to blame";
  if (status == EXIT_OK && !none) {
    uint32_t lo = 0, hi = K; /* lo passes, hi fails */
    while (hi - lo > 1 && status == EXIT_OK) {
      uint32_t mid = lo + (hi - lo) / 2;
      Verdict v;
      if (judge(&b, mid, &v) != 0)
        status = EXIT_BAD;
      else if (v.ok)
        lo = mid;
      else
        hi = mid;
    }
    first = hi;
  }
  /* the graphs around the failing step */
  char before[4096] = "", after[4096] = "";
  if (status == EXIT_OK && first && o.output) {
    snprintf(before, sizeof before, "%s.before.%s", o.output, ext);
    snprintf(after, sizeof after, "%s.after.%s", o.output, ext);
    for (int side = 0; side < 2 && status == EXIT_OK; side++) {
      OxGraph *x = graph_after(&b, first - 1 + (uint32_t)side);
      if (!x || write_graph(&b, x, side ? after : before) != EXIT_OK) status = EXIT_BAD;
      ox_graph_free(x);
    }
  }
  if (status == EXIT_OK) {
    const OxStep *s = first ? step_of(t, first) : NULL;
    const Verdict *vf = first ? &b.verdicts[first] : NULL;
    double expect = ceil(log2((double)K));
    OxBuf out;
    ox_buf_init(&out);
    if (o.json) {
      ox_buf_puts(&out, "{\"file\": ");
      ox_cli_json_str(&out, o.file);
      ox_buf_puts(&out, ", \"trace\": ");
      ox_cli_json_str(&out, o.trace);
      ox_buf_puts(&out, ", \"oracle\": ");
      ox_cli_json_str(&out, o.oracle ? o.oracle : "numeric");
      ox_buf_printf(&out, ", \"steps\": %u, \"oracle_runs\": %u, \"first_failing\": ", K, b.runs);
      if (!s) {
        ox_buf_puts(&out, "null, \"why_none\": ");
        ox_cli_json_str(&out, none);
      } else {
        ox_buf_printf(&out, "{\"k\": %u, \"seq\": %u, \"outcome\": \"%s\", \"phase\": ", first, s->seq + 1,
                      ox_step_kind_text(s));
        ox_cli_json_str(&out, s->phase);
        ox_buf_puts(&out, ", \"pass\": ");
        ox_cli_json_str(&out, s->pass);
        ox_buf_puts(&out, ", \"rule\": ");
        ox_cli_json_str(&out, s->rule);
        ox_buf_puts(&out, ", \"anchor\": ");
        ox_cli_json_str(&out, s->anchor);
        ox_buf_puts(&out, ", \"rule_file\": ");
        ox_cli_json_str(&out, s->rule_file);
        ox_buf_printf(&out, ", \"rule_line\": %u, \"why\": ", s->rule_line);
        ox_cli_json_str(&out, vf->why[0] ? vf->why : NULL);
        ox_buf_puts(&out, ", \"before\": ");
        ox_cli_json_str(&out, before[0] ? before : NULL);
        ox_buf_puts(&out, ", \"after\": ");
        ox_cli_json_str(&out, after[0] ? after : NULL);
        ox_buf_puts(&out, "}");
      }
      ox_buf_puts(&out, ", \"runs\": [");
      bool firstrun = true;
      for (uint32_t k = 0; k <= K; k++)
        if (b.judged[k]) {
          if (!firstrun) ox_buf_puts(&out, ", ");
          firstrun = false;
          json_verdict(&out, k, &b.verdicts[k]);
        }
      ox_buf_puts(&out, "]}\n");
    } else {
      ox_buf_printf(&out, "bisect: %u graph-changing steps in %s; oracle: %s\n", K, o.trace,
                    o.oracle ? o.oracle : "numeric check");
      for (uint32_t k = 0; k <= K; k++)
        if (b.judged[k])
          ox_buf_printf(&out, "  after %u step%s: %s%s%s\n", k, k == 1 ? "" : "s", b.verdicts[k].ok ? "passes" : "fails",
                        b.verdicts[k].why[0] ? ": " : "", b.verdicts[k].why);
      if (!s) {
        ox_buf_printf(&out, "no failing step: %s\n", none);
      } else {
        ox_buf_printf(&out, "first failing step: #%u (graph-changing step %u of %u) %s%s%s at %s: %s, -%u +%u nodes\n",
                      s->seq + 1, first, K, s->pass ? s->pass : "?", s->rule ? " / " : "", s->rule ? s->rule : "",
                      s->anchor ? s->anchor : "?", ox_step_kind_text(s), s->n_removed, s->n_added);
        if (s->kind == OX_STEP_CHECK_FAILED) {
          char *why = ox_reason_format(&s->reason);
          ox_buf_printf(&out, "  its check failed when it was recorded (kept with --keep-failed): %s\n", why ? why : "");
          free(why);
        }
        if (s->rule_file) ox_buf_printf(&out, "  rule: %s:%u\n", s->rule_file, s->rule_line);
        if (before[0]) ox_buf_printf(&out, "  wrote %s (before it) and %s (after it)\n", before, after);
      }
      ox_buf_printf(&out, "oracle runs: %u (%u steps: log2 = %.0f, and the two ends)\n", b.runs, K, expect);
    }
    if (!ox_cli_write_stdout(out.data, out.len)) status = EXIT_BAD;
    ox_buf_free(&out);
    if (status == EXIT_OK && !s) status = EXIT_BAD;
  }
  if (have_dir) rmdir(dir);
  free(b.verdicts);
  free(b.judged);
  ox_trace_free(t);
  ox_doc_free(doc);
  ox_diags_clear(&diags);
  return status;
}
