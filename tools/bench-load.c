/* bench-load - time and size the loaders.
 *
 * Loads FILE K times with ox_load_file (format detected, lenient), and reports the wall
 * time of each load (CLOCK_MONOTONIC, file read included), the median, the node count, and
 * memory three ways:
 *   - peak RSS growth: getrusage ru_maxrss after the loads minus ru_maxrss before the first
 *     one (includes the file text and any loader scratch alive at the peak);
 *   - retained RSS: resident set (/proc/self/statm) with the last document still loaded,
 *     after malloc_trim (glibc), minus the resident set before the first load;
 *   - structure bytes: what the document's graphs hold, computed from the structs: the
 *     arena (g->arena.total), the node array (cap_nodes * sizeof(OxNode)), the users arrays,
 *     the string table and name maps (their slot arrays), recursively over subgraphs.
 * The arena is further split by walking the graph: value trees, tensor meta, node names,
 * and the rest (other interned strings, block slack).
 *
 * Usage: bench-load FILE [--repeat K] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ir/ox_graph.h"
#include "ir/ox_mem.h"
#include "load/ox_load.h"

typedef struct Sizes {
  uint64_t nodes;        /* live nodes, all graphs and subgraphs */
  uint64_t graphs;
  uint64_t arena;        /* g->arena.total */
  uint64_t node_array;   /* cap_nodes * sizeof(OxNode) */
  uint64_t users;        /* cap_users * sizeof(OxNodeId), plus malloc's per-chunk header */
  uint64_t strtab;       /* string table slots */
  uint64_t namemaps;     /* names + name_counters slots */
  uint64_t other;        /* mark array, subgraph pointer arrays, OxGraph structs */
  /* arena breakdown (estimates of what was allocated there, rounded like the arena) */
  uint64_t a_values;
  uint64_t a_meta;
  uint64_t a_names;
  uint64_t strings;      /* number of interned strings */
} Sizes;

static uint64_t r16(uint64_t n) { return (n + 15) & ~(uint64_t)15; }

/* glibc: a malloc chunk carries an 8-byte header and is rounded to 16 (minimum 32). */
static uint64_t malloc_chunk(uint64_t n) {
  uint64_t c = (n + 8 + 15) & ~(uint64_t)15;
  return c < 32 ? 32 : c;
}

static uint64_t value_bytes(const OxValue *v) {
  uint64_t b = 0;
  switch (v->kind) {
  case OX_V_LIST:
  case OX_V_TUPLE:
  case OX_V_DICT:
  case OX_V_SLICE:
    if (v->n) b += r16((uint64_t)v->n * sizeof(OxValue));
    if (v->kind == OX_V_DICT && v->n) b += r16((uint64_t)v->n * sizeof(char *));
    for (uint32_t i = 0; i < v->n; i++) b += value_bytes(&v->u.items[i]);
    break;
  default:
    break;
  }
  return b;
}

static uint64_t meta_bytes(const OxMeta *m) {
  uint64_t b = 0;
  if (!m->t || !m->n) return 0;
  b += r16((uint64_t)m->n * sizeof(OxTensorMeta));
  for (uint32_t i = 0; i < m->n; i++) {
    const OxTensorMeta *t = &m->t[i];
    if (t->rank > 0) {
      b += r16((uint64_t)t->rank * sizeof(OxDim));
      if (t->has_stride && t->stride) b += r16((uint64_t)t->rank * sizeof(OxDim));
    }
  }
  return b;
}

static void measure_graph(const OxGraph *g, Sizes *s) {
  s->graphs++;
  s->nodes += g->n_live;
  s->arena += g->arena.total;
  s->node_array += (uint64_t)g->cap_nodes * (sizeof(OxNode) + sizeof(OxLink));
  s->strtab += ox_strtab_bytes(g->strings);
  s->namemaps += (uint64_t)g->cap_name_ids * sizeof *g->name_ids + ox_namemap_bytes(g->name_counters);
  s->strings += ox_strtab_count(g->strings);
  s->other += sizeof(OxGraph) + (uint64_t)g->mark_cap * sizeof(uint32_t) +
              (uint64_t)g->n_subgraphs * sizeof(OxGraph *);
  for (uint32_t i = 1; i < g->n_nodes; i++) {
    const OxNode *n = &g->nodes[i];
    if (n->users) s->users += malloc_chunk((uint64_t)n->cap_users * sizeof(OxNodeId));
    s->a_values += value_bytes(&n->args) + value_bytes(&n->kwargs);
    s->a_meta += meta_bytes(&n->meta);
    if (n->name && !n->erased) s->a_names += r16(strlen(n->name) + 1);
  }
  for (uint32_t i = 0; i < g->n_subgraphs; i++) measure_graph(g->subgraphs[i], s);
}

static uint64_t struct_total(const Sizes *s) {
  return s->arena + s->node_array + s->users + s->strtab + s->namemaps + s->other;
}

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t maxrss_bytes(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (uint64_t)ru.ru_maxrss * 1024; /* Linux reports KiB */
}

static uint64_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, res = 0;
  if (f) {
    if (fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
    fclose(f);
  }
  return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median_of(double *v, long n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *f) { fprintf(f, "usage: bench-load FILE [--repeat K] [--json]\n"); }

int main(int argc, char **argv) {
  const char *path = NULL;
  long repeat = 5;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      char *end;
      repeat = strtol(argv[++i], &end, 10);
      if (*end || repeat < 1 || repeat > 10000) {
        fprintf(stderr, "bench-load: --repeat takes 1..10000\n");
        return 2;
      }
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (!path && argv[i][0] != '-') {
      path = argv[i];
    } else {
      fprintf(stderr, "bench-load: bad argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (!path) {
    usage(stderr);
    return 2;
  }

  /* wall time is what the target is about; CPU time is printed beside it because on a
   * shared machine it is the steadier of the two */
  double *times = calloc((size_t)repeat, sizeof *times);
  double *cpu = calloc((size_t)repeat, sizeof *cpu);
  if (!times || !cpu) return 1;
  uint64_t rss0 = rss_bytes(), maxrss0 = maxrss_bytes();
  OxDoc *doc = NULL;
  OxDiagList diags;
  size_t warnings = 0;
  const char *fmt = "unknown";
  for (long k = 0; k < repeat; k++) {
    ox_doc_free(doc); /* the previous run's document: only one is alive at a time */
    doc = NULL;
    ox_diags_init(&diags, path);
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC);
    int rc = ox_load_file(path, OX_FMT_UNKNOWN, NULL, &doc, &diags);
    double t1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    times[k] = t1 - t0;
    cpu[k] = c1 - c0;
    if (rc != 0) {
      ox_diags_print(&diags, stderr);
      fprintf(stderr, "bench-load: %s did not load\n", path);
      ox_diags_clear(&diags);
      free(times);
      free(cpu);
      return 1;
    }
    warnings = diags.n_warnings;
    ox_diags_clear(&diags);
  }
  uint64_t maxrss1 = maxrss_bytes();
#if defined(__GLIBC__)
  /* give freed loader scratch (json-c's DOM, the file text) back to the system, so the
   * retained figure measures what the document holds rather than malloc's free lists */
  malloc_trim(0);
#endif
  uint64_t rss1 = rss_bytes();
  fmt = ox_format_name(doc->format);

  Sizes s = {0};
  for (uint32_t i = 0; i < doc->n_graphs; i++) measure_graph(doc->graphs[i], &s);
  uint64_t total = struct_total(&s);
  double *sorted = malloc((size_t)repeat * sizeof *sorted);
  if (!sorted) return 1;
  memcpy(sorted, times, (size_t)repeat * sizeof *sorted);
  double median = median_of(sorted, repeat);
  memcpy(sorted, cpu, (size_t)repeat * sizeof *sorted);
  double cpu_median = median_of(sorted, repeat);
  uint64_t peak = maxrss1 > maxrss0 ? maxrss1 - maxrss0 : 0;
  uint64_t kept = rss1 > rss0 ? rss1 - rss0 : 0;
  double per_node = s.nodes ? (double)total / (double)s.nodes : 0;
  uint64_t a_rest = s.arena > s.a_values + s.a_meta + s.a_names ? s.arena - s.a_values - s.a_meta - s.a_names : 0;

  if (json) {
    printf("{\"file\":\"");
    for (const char *c = path; *c; c++) {
      if (*c == '"' || *c == '\\') putchar('\\');
      putchar(*c);
    }
    printf("\",\"format\":\"%s\",\"graphs\":%llu,\"nodes\":%llu,\"warnings\":%zu,\"repeat\":%ld,\"times_s\":[",
           fmt, (unsigned long long)s.graphs, (unsigned long long)s.nodes, warnings, repeat);
    for (long k = 0; k < repeat; k++) printf("%s%.6f", k ? "," : "", times[k]);
    printf("],\"cpu_s\":[");
    for (long k = 0; k < repeat; k++) printf("%s%.6f", k ? "," : "", cpu[k]);
    printf("],\"median_s\":%.6f,\"cpu_median_s\":%.6f,\"peak_rss_bytes\":%llu,\"retained_rss_bytes\":%llu,"
           "\"struct_bytes\":%llu,\"bytes_per_node\":%.1f,\"arena_bytes\":%llu,\"node_array_bytes\":%llu,"
           "\"users_bytes\":%llu,\"strtab_bytes\":%llu,\"namemap_bytes\":%llu,\"other_bytes\":%llu,"
           "\"arena_values_bytes\":%llu,\"arena_meta_bytes\":%llu,\"arena_names_bytes\":%llu,"
           "\"arena_rest_bytes\":%llu,\"strings\":%llu,\"sizeof_node\":%zu,\"sizeof_value\":%zu}\n",
           median, cpu_median, (unsigned long long)peak, (unsigned long long)kept, (unsigned long long)total, per_node,
           (unsigned long long)s.arena, (unsigned long long)s.node_array, (unsigned long long)s.users,
           (unsigned long long)s.strtab, (unsigned long long)s.namemaps, (unsigned long long)s.other,
           (unsigned long long)s.a_values, (unsigned long long)s.a_meta, (unsigned long long)s.a_names,
           (unsigned long long)a_rest, (unsigned long long)s.strings, sizeof(OxNode), sizeof(OxValue));
  } else {
    printf("file      %s (%s, %llu graph%s, %llu nodes, %zu warnings)\n", path, fmt,
           (unsigned long long)s.graphs, s.graphs == 1 ? "" : "s", (unsigned long long)s.nodes, warnings);
    printf("              wall ms      cpu ms\n");
    for (long k = 0; k < repeat; k++) printf("run %-5ld %10.3f  %10.3f\n", k + 1, times[k] * 1e3, cpu[k] * 1e3);
    printf("median    %10.3f  %10.3f\n", median * 1e3, cpu_median * 1e3);
    printf("memory                      bytes     per node\n");
#define ROW(label, v)                                                                           \
  printf("  %-22s %12llu %10.1f\n", label, (unsigned long long)(v),                             \
         s.nodes ? (double)(v) / (double)s.nodes : 0.0)
    ROW("peak RSS growth", peak);
    ROW("retained RSS growth", kept);
    ROW("structures, total", total);
    ROW("  arena", s.arena);
    ROW("    value trees", s.a_values);
    ROW("    tensor meta", s.a_meta);
    ROW("    node names", s.a_names);
    ROW("    other strings+slack", a_rest);
    ROW("  node array", s.node_array);
    ROW("  users arrays", s.users);
    ROW("  string table slots", s.strtab);
    ROW("  name map slots", s.namemaps);
    ROW("  other", s.other);
#undef ROW
    printf("sizeof(OxNode) = %zu, sizeof(OxValue) = %zu, sizeof(OxTensorMeta) = %zu, interned strings = %llu\n",
           sizeof(OxNode), sizeof(OxValue), sizeof(OxTensorMeta), (unsigned long long)s.strings);
  }
  ox_doc_free(doc);
  free(times);
  free(cpu);
  free(sorted);
  return 0;
}
