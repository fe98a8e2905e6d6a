/* bench-optimize - time the optimizer phase by phase on one graph.
 *
 * Runs, K times on FILE (a recommendation-style dump from gen-recsys, or any graph):
 *   load        ox_load_file (format detected, lenient; file read included)
 *   shape       ox_shape_infer_graph (what `optimus optimize` runs before the pipeline)
 *   passes      the default pipeline for the graph's level, one ox_optimize call per pass
 *               (same graph, same trace, same check configuration), so each pass gets its
 *               own time; the sum is the optimize time. The checks' share is summed from the
 *               check results the trace records for every step.
 *   trace_write ox_trace_write_json into memory (size reported; --trace-format N writes version N, 2 to 5)
 *   trace_read  ox_trace_read_json of that text
 *   replay      a fresh load + shape inference (not timed), then ox_replay of every step
 * Each phase reports wall time (CLOCK_MONOTONIC) and process CPU time; medians over the K
 * runs. Memory: peak RSS (ru_maxrss) of the whole process, and the bytes the optimized
 * graph's structures and the trace pool hold after the last run.
 *
 * The trace is always on (rejections recorded), as `optimus optimize --trace` runs it.
 *
 * Usage: bench-optimize FILE [--checks LIST] [--repeat K] [--trace-format 2|3|4|5] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ir/ox_buf.h"
#include "ir/ox_graph.h"
#include "ir/ox_mem.h"
#include "load/ox_load.h"
#include "ops/ox_shape.h"
#include "passes/ox_pass.h"
#include "run/ox_trace.h"

enum { MAX_PASSES = 64, MAX_REPEAT = 99 };

typedef struct Phase {
  const char *name;
  double wall[MAX_REPEAT], cpu[MAX_REPEAT];
} Phase;

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median_of(const double *v, int n) {
  double tmp[MAX_REPEAT];
  memcpy(tmp, v, (size_t)n * sizeof *v);
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
  return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static long minor_faults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

static double sys_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static uint64_t maxrss_bytes(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (uint64_t)ru.ru_maxrss * 1024;
}

typedef struct Timer {
  double w, c;
} Timer;

static Timer timer_start(void) {
  Timer t = {clock_s(CLOCK_MONOTONIC), clock_s(CLOCK_PROCESS_CPUTIME_ID)};
  return t;
}

static void timer_stop(Timer t, Phase *p, int run) {
  p->wall[run] = clock_s(CLOCK_MONOTONIC) - t.w;
  p->cpu[run] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - t.c;
}

static uint64_t graph_bytes(const OxGraph *g) {
  uint64_t b = g->arena.total + (uint64_t)g->cap_nodes * (sizeof(OxNode) + sizeof(OxLink)) + ox_strtab_bytes(g->strings) +
               (uint64_t)g->cap_name_ids * sizeof *g->name_ids + ox_namemap_bytes(g->name_counters);
  for (uint32_t i = 1; i < g->n_nodes; i++)
    if (g->nodes[i].users) b += (uint64_t)g->nodes[i].cap_users * sizeof(OxNodeId) + 16;
  return b;
}

static OxGraph *load_graph(const char *path, OxDoc **doc) {
  OxDiagList d;
  ox_diags_init(&d, path);
  int rc = ox_load_file(path, OX_FMT_UNKNOWN, NULL, doc, &d);
  if (rc != 0 || !(*doc)->n_graphs) {
    ox_diags_print(&d, stderr);
    ox_diags_clear(&d);
    return NULL;
  }
  ox_diags_clear(&d);
  return (*doc)->graphs[0];
}

static void shape_infer(OxGraph *g) {
  OxDiagList d;
  ox_diags_init(&d, "shape");
  OxShapeStats st;
  ox_shape_infer_graph(g, &d, &st);
  ox_diags_clear(&d);
}

int main(int argc, char **argv) {
  ox_mem_tune_for_batch(); /* as the CLI does */
  const char *path = NULL, *checks = "structure,shape";
  int repeat = 3, trace_format = OX_TRACE_VERSION;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--checks") == 0 && i + 1 < argc)
      checks = argv[++i];
    else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
      repeat = atoi(argv[++i]);
    else if (strcmp(argv[i], "--trace-format") == 0 && i + 1 < argc)
      trace_format = atoi(argv[++i]);
    else if (strcmp(argv[i], "--json") == 0)
      json = true;
    else if (argv[i][0] != '-' && !path)
      path = argv[i];
    else {
      fprintf(stderr, "usage: bench-optimize FILE [--checks LIST] [--repeat K] [--trace-format 2|3|4|5] [--json]\n");
      return 2;
    }
  }
  if (!path || repeat < 1 || repeat > MAX_REPEAT || trace_format < 2 || trace_format > OX_TRACE_VERSION) {
    fprintf(stderr, "usage: bench-optimize FILE [--checks LIST] [--repeat K (1-%d)] [--trace-format 2|3|4|5] [--json]\n",
            MAX_REPEAT);
    return 2;
  }
  OxCheckConfig cc;
  ox_check_config_default(&cc);
  char err[256];
  if (ox_check_config_parse(checks, &cc, err, sizeof err) != 0) {
    fprintf(stderr, "bench-optimize: %s\n", err);
    return 2;
  }

  Phase load = {"load", {0}, {0}}, shape = {"shape_inference", {0}, {0}}, opt = {"optimize", {0}, {0}};
  double opt_faults[MAX_REPEAT] = {0}, opt_sys[MAX_REPEAT] = {0};
  uint64_t peak_after_opt = 0;
  Phase twrite = {"trace_write", {0}, {0}}, tread = {"trace_read", {0}, {0}}, replay = {"replay", {0}, {0}};
  static Phase passes[MAX_PASSES];
  Phase chk[OX_CHECK_KINDS];
  memset(chk, 0, sizeof chk);
  uint32_t n_pass = 0, nodes_before = 0, nodes_after = 0, applied = 0, rejected = 0, failed = 0, steps = 0;
  size_t trace_bytes = 0;
  uint64_t graph_struct = 0, trace_pool = 0;

  for (int run = 0; run < repeat; run++) {
    OxDoc *doc = NULL;
    Timer t = timer_start();
    OxGraph *g = load_graph(path, &doc);
    timer_stop(t, &load, run);
    if (!g) return 1;
    nodes_before = g->n_live;
    t = timer_start();
    shape_infer(g);
    timer_stop(t, &shape, run);

    OxPipeline p;
    ox_pipeline_default(g, &p);
    if (p.n > MAX_PASSES) p.n = MAX_PASSES;
    n_pass = p.n;
    OxTrace *tr = ox_trace_new_for(g);
    tr->input_file = ox_trace_intern(tr, path);
    tr->checks = ox_trace_intern(tr, checks);
    OxDiagList d;
    ox_diags_init(&d, path);
    Timer all = timer_start();
    long flt0 = minor_faults();
    double sys0 = sys_seconds();
    for (uint32_t i = 0; i < p.n; i++) {
      OxPipeline one = {.entries = &p.entries[i], .n = 1};
      OxOptimizeResult res;
      passes[i].name = p.entries[i].pass->name;
      t = timer_start();
      if (ox_optimize(g, &one, &cc, tr, &res, &d) != 0) {
        ox_diags_print(&d, stderr);
        return 1;
      }
      timer_stop(t, &passes[i], run);
    }
    timer_stop(all, &opt, run);
    opt_faults[run] = (double)(minor_faults() - flt0);
    opt_sys[run] = sys_seconds() - sys0;
    if (run == 0) peak_after_opt = maxrss_bytes();
    nodes_after = g->n_live;
    applied = tr->n_applied;
    rejected = tr->n_rejected;
    failed = tr->n_check_failed;
    steps = tr->n_steps;
    for (int k = 0; k < OX_CHECK_KINDS; k++) {
      chk[k].name = ox_check_kind_name((OxCheckKind)k);
      double s = 0;
      for (uint32_t i = 0; i < tr->n_steps; i++) s += tr->steps[i].checks[k].seconds;
      chk[k].wall[run] = chk[k].cpu[run] = s; /* wall only: recorded per step */
    }
    graph_struct = graph_bytes(g);
    trace_pool = graph_bytes(tr->pool) + (uint64_t)tr->cap_steps * sizeof(OxStep);
    /* the pool shares the graph's string table (ox_trace_new_for): count it once, with the graph
     * (so "minus the trace" below keeps the strings only the trace interned: an overestimate) */
    if (tr->pool->strings == g->strings) trace_pool -= ox_strtab_bytes(g->strings);

    OxBuf b;
    ox_buf_init(&b);
    t = timer_start();
    ox_trace_write_json_version(tr, trace_format, &b);
    timer_stop(t, &twrite, run);
    trace_bytes = b.len;
    OxTrace *back = NULL;
    OxDiagList td;
    ox_diags_init(&td, "trace");
    t = timer_start();
    int rc = ox_trace_read_json(b.data, b.len, "trace", &back, &td);
    timer_stop(t, &tread, run);
    if (rc != 0) {
      ox_diags_print(&td, stderr);
      return 1;
    }
    ox_diags_clear(&td);
    ox_buf_free(&b);
    ox_trace_free(tr);
    ox_pipeline_free(&p);
    ox_diags_clear(&d);
    ox_doc_free(doc);

    /* replay the trace as read back, on a fresh copy of the input */
    OxDoc *doc2 = NULL;
    OxGraph *g2 = load_graph(path, &doc2);
    if (!g2) return 1;
    shape_infer(g2);
    ox_diags_init(&td, "replay");
    t = timer_start();
    rc = ox_replay(g2, back, UINT32_MAX, &td);
    timer_stop(t, &replay, run);
    if (rc != 0 || g2->n_live != nodes_after) {
      ox_diags_print(&td, stderr);
      fprintf(stderr, "bench-optimize: replay gave %u nodes, optimize %u\n", g2->n_live, nodes_after);
      return 1;
    }
    ox_diags_clear(&td);
    ox_trace_free(back);
    ox_doc_free(doc2);
  }

  uint64_t peak = maxrss_bytes();
  const Phase *main_phases[] = {&load, &shape, &opt, &twrite, &tread, &replay};
  if (json) {
    printf("{\"file\":\"%s\",\"checks\":\"%s\",\"repeat\":%d,\"nodes_before\":%u,\"nodes_after\":%u,"
           "\"steps\":%u,\"applied\":%u,\"rejected\":%u,\"check_failures\":%u,\"trace_bytes\":%zu,"
           "\"peak_rss_bytes\":%llu,\"peak_bytes_per_node\":%.1f,\"graph_struct_bytes\":%llu,"
           "\"trace_pool_bytes\":%llu",
           path, checks, repeat, nodes_before, nodes_after, steps, applied, rejected, failed, trace_bytes,
           (unsigned long long)peak, (double)peak / nodes_before, (unsigned long long)graph_struct,
           (unsigned long long)trace_pool);
    for (size_t i = 0; i < sizeof main_phases / sizeof *main_phases; i++)
      printf(",\"%s_s\":%.6f,\"%s_cpu_s\":%.6f", main_phases[i]->name, median_of(main_phases[i]->wall, repeat),
             main_phases[i]->name, median_of(main_phases[i]->cpu, repeat));
    printf(",\"checks_s\":{");
    for (int k = 0; k < OX_CHECK_KINDS; k++)
      printf("%s\"%s\":%.6f", k ? "," : "", chk[k].name, median_of(chk[k].wall, repeat));
    printf("},\"passes\":{");
    for (uint32_t i = 0; i < n_pass; i++)
      printf("%s\"%s\":[%.6f,%.6f]", i ? "," : "", passes[i].name, median_of(passes[i].wall, repeat),
             median_of(passes[i].cpu, repeat));
    printf("}}\n");
  } else {
    printf("%s: %u -> %u nodes, %u steps (%u applied, %u rejected, %u check failures), checks %s, %d runs\n", path,
           nodes_before, nodes_after, steps, applied, rejected, failed, checks, repeat);
    printf("%-34s %10s %10s\n", "phase (median)", "wall ms", "cpu ms");
    for (size_t i = 0; i < sizeof main_phases / sizeof *main_phases; i++) {
      printf("%-34s %10.1f %10.1f\n", main_phases[i]->name, 1e3 * median_of(main_phases[i]->wall, repeat),
             1e3 * median_of(main_phases[i]->cpu, repeat));
      if (main_phases[i] == &opt) {
        for (uint32_t k = 0; k < n_pass; k++)
          printf("  %-32s %10.1f %10.1f\n", passes[k].name, 1e3 * median_of(passes[k].wall, repeat),
                 1e3 * median_of(passes[k].cpu, repeat));
        for (int k = 0; k < OX_CHECK_KINDS; k++)
          printf("  (check %-9s, inside passes) %10.1f\n", chk[k].name, 1e3 * median_of(chk[k].wall, repeat));
      }
    }
    printf("while optimizing (median): %.0f page faults, %.1f ms of the CPU time in the kernel\n",
           median_of(opt_faults, repeat), 1e3 * median_of(opt_sys, repeat));
    printf("peak RSS after the first optimize (load + optimize, trace in memory): %.1f MB; minus the trace "
           "(pool + steps) %.0f B per input node\n",
           peak_after_opt / 1e6, ((double)peak_after_opt - (double)trace_pool) / nodes_before);
    printf("trace JSON %zu bytes (%.0f B/step); peak RSS %.1f MB (%.0f B/input node); optimized graph structures "
           "%.1f MB, trace pool %.1f MB\n",
           trace_bytes, steps ? (double)trace_bytes / steps : 0.0, peak / 1e6, (double)peak / nodes_before,
           graph_struct / 1e6, trace_pool / 1e6);
  }
  return 0;
}
