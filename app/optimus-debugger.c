/* optimus-debugger - the GTK 4 rewrite debugger: `optimus-debugger [GRAPH [TRACE]]`.
 * Everything lives in ui/ (OxApplication, OxWindow, OxDocument); docs/debugger.md is the manual.
 *
 * `optimus-debugger --benchmark FILE [TRACE]` opens FILE in a real window, measures, steps
 * through the trace and prints one JSON line (docs/debugger.md, "Large graphs"). Every time is
 * taken until the frame showing the result has been painted: the canvas's frame clock reports
 * "after-paint" once the frame is rendered, and a measurement ends at the first such frame after
 * the view has its layout (no layout job pending) for the new state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ox-application.h"
#include "ox-window.h"

static const char *renderer_choice = "gtk"; /* "user", "gtk" (GTK's default), "no-gpu" (cairo chosen here) */

typedef struct Bench {
  OxWindow *w;
  OxGraphView *view;
  guint after_paints;
  double timeout_ms;       /* any single wait */
  char error[512];         /* the first failure: a timed-out wait or a view that failed */
} Bench;

static double now_ms(void) { return g_get_monotonic_time() / 1000.0; }

static void on_after_paint(GdkFrameClock *c, Bench *b) {
  (void)c;
  b->after_paints++;
}

static gboolean tick(gpointer data) {
  (void)data;
  return G_SOURCE_CONTINUE; /* only wakes the loop, so waits can check their deadline */
}

/* Runs the main loop until the view is laid out (and, with `settled`, the document is not
 * loading or optimizing), then until one more frame is painted. A view whose scene failed
 * (an error, nothing laid out, nothing running) ends the wait too. FALSE with b->error set when
 * the wait timed out or the view failed; every wait is bounded by b->timeout_ms. */
static gboolean wait_frame_for(Bench *b, gboolean settled, const char *what) {
  if (b->error[0]) return FALSE;
  OxScene *scene = ox_graph_view_get_scene(b->view);
  double end = now_ms() + b->timeout_ms;
  while (!ox_graph_view_is_laid_out(b->view) || (settled && ox_document_get_busy(ox_window_get_document(b->w)))) {
    if (!ox_scene_get_busy(scene) && !ox_scene_get_layout(scene) && ox_scene_get_error(scene) &&
        !(settled && ox_document_get_busy(ox_window_get_document(b->w)))) {
      g_snprintf(b->error, sizeof b->error, "%s: the view failed: %s", what, ox_scene_get_error(scene));
      return FALSE;
    }
    if (now_ms() > end) {
      g_snprintf(b->error, sizeof b->error, "%s: timed out after %.0f s (%s)", what, b->timeout_ms / 1000,
                 ox_scene_get_busy(scene) ? "layout still running" : "document still busy");
      return FALSE;
    }
    g_main_context_iteration(NULL, TRUE);
  }
  guint p = b->after_paints;
  gtk_widget_queue_draw(GTK_WIDGET(b->view));
  while (b->after_paints == p) {
    if (now_ms() > end) {
      g_snprintf(b->error, sizeof b->error, "%s: no frame painted within %.0f s", what, b->timeout_ms / 1000);
      return FALSE;
    }
    g_main_context_iteration(NULL, TRUE);
  }
  return TRUE;
}

static gboolean wait_frame(Bench *b, const char *what) { return wait_frame_for(b, TRUE, what); }

/* With OX_BENCH_VERBOSE: the resident and peak memory at a milestone, on stderr. */
static void memory_note(const char *what) {
  if (!g_getenv("OX_BENCH_VERBOSE")) return;
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return;
  char line[256];
  long rss = 0, hwm = 0;
  while (fgets(line, sizeof line, f)) {
    sscanf(line, "VmRSS: %ld", &rss);
    sscanf(line, "VmHWM: %ld", &hwm);
  }
  fclose(f);
  fprintf(stderr, "memory %s: %ld MB resident, %ld MB peak\n", what, rss / 1024, hwm / 1024);
}

/* A JSON string literal (the error can hold file names and Graphviz messages). */
static void json_str(GString *o, const char *s) {
  g_string_append_c(o, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      g_string_append_printf(o, "\\%c", *p);
    else if (*p < 0x20)
      g_string_append_printf(o, "\\u%04x", *p);
    else
      g_string_append_c(o, (char)*p);
  }
  g_string_append_c(o, '"');
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double percentile(GArray *a, double q) {
  if (!a->len) return 0;
  qsort(a->data, a->len, sizeof(double), cmp_double);
  guint i = (guint)(q * (a->len - 1) + 0.5);
  return g_array_index(a, double, MIN(i, a->len - 1));
}

static int benchmark(const char *graph, const char *trace, double timeout_s) {
  g_set_prgname("optimus-debugger");
  g_set_application_name("Optimus Debugger");
  gtk_init();
  Bench b = {0};
  b.timeout_ms = timeout_s * 1000;
  g_timeout_add(50, tick, NULL);
  b.w = ox_window_new(NULL);
  b.view = ox_window_get_view(b.w);
  gtk_window_set_default_size(GTK_WINDOW(b.w), 1280, 800);
  gtk_window_present(GTK_WINDOW(b.w));
  double map_end = now_ms() + b.timeout_ms;
  while (!gtk_widget_get_mapped(GTK_WIDGET(b.view)) && now_ms() < map_end) g_main_context_iteration(NULL, TRUE);
  if (!gtk_widget_get_mapped(GTK_WIDGET(b.view))) {
    fprintf(stderr, "optimus-debugger: the window was not shown within %.0f s\n", timeout_s);
    return 1;
  }
  GdkFrameClock *clock = gtk_widget_get_frame_clock(GTK_WIDGET(b.view));
  g_signal_connect(clock, "after-paint", G_CALLBACK(on_after_paint), &b);
  OxDocument *doc = ox_window_get_document(b.w);
  OxScene *scene = ox_graph_view_get_scene(b.view);
  memory_note("window shown");

  double t0 = now_ms();
  if (!ox_window_open(b.w, graph, trace)) {
    fprintf(stderr, "optimus-debugger: cannot open %s: %s\n", graph, ox_window_get_last_error(b.w));
    return 1;
  }
  double open_ms = now_ms() - t0;
  /* the graph is painted before its trace is in (that loads on a worker) */
  gboolean ok = wait_frame_for(&b, FALSE, "first view");
  double first_paint_ms = ok ? now_ms() - t0 : -1;
  char first_view[400];
  g_snprintf(first_view, sizeof first_view, "%s%s%s", ox_view_mode_name(ox_scene_get_shown_mode(scene)),
             ok ? "" : " (failed: ", ok ? "" : b.error);
  if (!ok) g_strlcat(first_view, ")", sizeof first_view);
  const OxLayout *fl = ox_scene_get_layout(scene);
  guint first_items = fl ? fl->n_nodes : 0;
  const char *first_engine = fl ? (fl->engine == OX_LAYOUT_DOT ? "dot" : "layered") : "none";
  memory_note("first view");
  double ready_ms = ok && wait_frame(&b, "trace loaded") ? now_ms() - t0 : -1;
  memory_note("trace loaded");

  /* stepping: every step when there are at most 1000, else 25 runs of 10 consecutive steps
   * spread over the trace (each run starts with a jump, timed apart); then End and Home */
  guint n = ox_document_get_n_steps(doc);
  GArray *steps = g_array_new(FALSE, FALSE, sizeof(double));
  GArray *jumps = g_array_new(FALSE, FALSE, sizeof(double));
  guint runs = n <= 1000 ? 1 : 25, run_len = n <= 1000 ? n : 10;
  for (guint r = 0; r < runs && !b.error[0]; r++) {
    guint start = runs == 1 ? 0 : (guint)((double)r * (n - run_len) / (runs - 1));
    if (start != ox_document_get_position(doc)) {
      double j0 = now_ms();
      gtk_widget_activate_action(GTK_WIDGET(b.w), "win.goto-step", "u", start);
      double j1 = now_ms();
      gboolean jbusy = ox_scene_get_busy(scene);
      if (!wait_frame(&b, "goto-step")) break;
      double dj = now_ms() - j0;
      if (g_getenv("OX_BENCH_VERBOSE"))
        fprintf(stderr, "jump to %u: action %.1f ms, frame %.1f ms%s\n", start, j1 - j0, dj - (j1 - j0),
                jbusy ? " (layout)" : "");
      g_array_append_val(jumps, dj);
    }
    for (guint i = 0; i < run_len && ox_document_get_position(doc) < n; i++) {
      double s0 = now_ms();
      gtk_widget_activate_action(GTK_WIDGET(b.w), "win.step-next", NULL);
      double s1 = now_ms();
      gboolean busy = ox_scene_get_busy(scene);
      if (!wait_frame(&b, "step-next")) break;
      double ds = now_ms() - s0;
      if (g_getenv("OX_BENCH_VERBOSE"))
        fprintf(stderr, "step %u: action %.1f ms, frame %.1f ms%s\n", ox_document_get_position(doc), s1 - s0,
                ds - (s1 - s0), busy ? " (layout)" : "");
      g_array_append_val(steps, ds);
    }
  }
  memory_note("stepped");
  /* a burst: 50 presses of Right as fast as they come (key repeat), then until painted; work
   * that a press starts and the next one supersedes (a layout) is cancelled, not queued */
  double burst_ms = -1;
  guint burst_layouts = 0;
  if (!b.error[0] && n > 60) {
    gtk_widget_activate_action(GTK_WIDGET(b.w), "win.goto-step", "u", n / 3);
    if (wait_frame(&b, "goto-step")) {
      guint req0 = ox_scene_get_stats(scene)->n_requests;
      double b0 = now_ms();
      for (int i = 0; i < 50; i++) gtk_widget_activate_action(GTK_WIDGET(b.w), "win.step-next", NULL);
      if (wait_frame(&b, "burst of steps")) burst_ms = now_ms() - b0;
      burst_layouts = ox_scene_get_stats(scene)->n_requests - req0;
    }
  }
  /* End from the input graph (every edit forward) and Home from the last step (every edit
   * undone), each until painted: three times, the medians reported */
  double end_ms = -1, home_ms = -1;
  GArray *ends = g_array_new(FALSE, FALSE, sizeof(double)), *homes = g_array_new(FALSE, FALSE, sizeof(double));
  if (!b.error[0] && n) {
    gtk_widget_activate_action(GTK_WIDGET(b.w), "win.step-first", NULL);
    for (int rep = 0; rep < 3 && wait_frame(&b, "step-first"); rep++) {
      double e0 = now_ms();
      gtk_widget_activate_action(GTK_WIDGET(b.w), "win.step-last", NULL);
      double e1 = now_ms();
      if (!wait_frame(&b, "step-last")) break;
      double de = now_ms() - e0;
      if (g_getenv("OX_BENCH_VERBOSE") && rep == 0) {
        static const char *const panels[] = {"node", "why", "checks"};
        for (int i = 0; i < 3; i++) {
          const char *m = ox_window_get_panel_markup(b.w, panels[i]);
          fprintf(stderr, "panel %s at End: %zu bytes\n", panels[i], m ? strlen(m) : 0);
        }
      }
      double h0 = now_ms();
      g_array_append_val(ends, de);
      gtk_widget_activate_action(GTK_WIDGET(b.w), "win.step-first", NULL);
      double h1 = now_ms();
      if (!wait_frame(&b, "step-first")) break;
      double dh = now_ms() - h0;
      g_array_append_val(homes, dh);
      if (g_getenv("OX_BENCH_VERBOSE"))
        fprintf(stderr, "end: action %.1f ms, frame %.1f ms; home: action %.1f ms, frame %.1f ms\n", e1 - e0,
                de - (e1 - e0), h1 - h0, dh - (h1 - h0));
      /* the next End starts from Home painted */
      gtk_widget_queue_draw(GTK_WIDGET(b.view));
    }
    if (ends->len) end_ms = percentile(ends, 0.5);
    if (homes->len) home_ms = percentile(homes, 0.5);
  }
  g_array_free(ends, TRUE);
  g_array_free(homes, TRUE);
  guint n_measured = steps->len;
  double step_median = percentile(steps, 0.5), step_p95 = percentile(steps, 0.95), step_max = percentile(steps, 1.0);
  double jump_median = percentile(jumps, 0.5);

  /* search over every node of the shown graph */
  double s0 = now_ms();
  ox_document_set_search_text(doc, "tanh");
  double search_ms = now_ms() - s0;
  guint hits = ox_document_get_n_hits(doc);
  /* a hit far away: the last one not in the current scene */
  const char *far = NULL;
  for (guint i = hits; i-- > 0 && !far;) {
    const char *name = ox_document_get_hit(doc, i);
    if (!ox_scene_uid_item(scene, ox_document_uid_of(doc, name))) far = name;
  }
  if (!far && hits) far = ox_document_get_hit(doc, hits - 1);
  double select_ms = -1;
  if (far && !b.error[0]) {
    char *name = g_strdup(far);
    double h0 = now_ms();
    gtk_widget_activate_action(GTK_WIDGET(b.w), "win.select-node", "s", name);
    ox_graph_view_zoom_to_selection(b.view);
    if (wait_frame(&b, "select a far hit")) {
      graphene_rect_t rect;
      guint32 uid = ox_scene_drawn_uid(scene, ox_document_uid_of(doc, name));
      while (!ox_graph_view_node_bounds(b.view, uid, &rect) && now_ms() - h0 < b.timeout_ms)
        g_main_context_iteration(NULL, TRUE);
      if (ox_scene_get_busy(scene)) wait_frame(&b, "select a far hit");
      if (ox_graph_view_node_bounds(b.view, uid, &rect))
        select_ms = now_ms() - h0;
      else if (!b.error[0])
        g_snprintf(b.error, sizeof b.error, "select a far hit: %s never came into view", name);
    }
    g_free(name);
  }
  memory_note("end");
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const OxSceneStats *st = ox_scene_get_stats(scene);
  OxHistory *h = ox_document_get_history(doc);
  /* what rendered: GSK_RENDERER as the user set it, or as prefer_cairo_without_gpu chose */
  const char *renderer = g_getenv("GSK_RENDERER");
  GString *o = g_string_new("{\"file\": ");
  json_str(o, graph);
  g_string_append(o, ", \"renderer\": ");
  json_str(o, renderer ? renderer : "default");
  g_string_append(o, ", \"renderer_choice\": ");
  json_str(o, renderer_choice);
  g_string_append_printf(o, ", \"nodes\": %u, \"union_nodes\": %u, \"steps\": %u, \"graph_steps\": %u, ",
                         h ? h->input->n_live : 0, h ? h->u->n_live : 0, n, h ? h->n_graph_steps : 0);
  g_string_append_printf(o, "\"open_ms\": %.1f, \"first_paint_ms\": %.1f, \"ready_ms\": %.1f, \"first_view\": ", open_ms,
                         first_paint_ms, ready_ms);
  json_str(o, first_view);
  g_string_append_printf(o, ", \"first_items\": %u, \"first_engine\": \"%s\"", first_items, first_engine);
  g_string_append_printf(o,
                         ", \"steps_measured\": %u, \"step_ms_median\": %.1f, \"step_ms_p95\": %.1f, \"step_ms_max\": %.1f, "
                         "\"jump_ms_median\": %.1f, \"burst50_ms\": %.1f, \"burst50_layouts\": %u, \"end_ms\": %.1f, "
                         "\"home_ms\": %.1f, \"search_ms\": %.1f, "
                         "\"search_hits\": %u, \"select_hit_ms\": %.1f, \"peak_rss_mb\": %.1f, ",
                         n_measured, step_median, step_p95, step_max, jump_median, burst_ms, burst_layouts, end_ms,
                         home_ms, search_ms, hits,
                         select_ms, ru.ru_maxrss / 1024.0);
  g_string_append_printf(o,
                         "\"budget\": %u, \"layouts\": %u, \"cache_hits\": %u, \"placed\": %u, \"reused\": %u, "
                         "\"max_request\": %u, \"error\": ",
                         ox_scene_get_budget(scene), st->n_requests, st->n_cache_hits, st->n_placed, st->n_reused,
                         st->max_request);
  if (b.error[0])
    json_str(o, b.error);
  else
    g_string_append(o, "null");
  g_string_append(o, "}\n");
  fputs(o->str, stdout);
  fflush(stdout);
  g_string_free(o, TRUE);
  g_array_free(steps, TRUE);
  g_array_free(jumps, TRUE);
  gtk_window_destroy(GTK_WINDOW(b.w));
  while (g_main_context_iteration(NULL, FALSE));
  return b.error[0] ? 1 : 0;
}

/* Without a GPU (no DRM render node: a VM, a container, remote X) GTK's GL renderer runs on
 * Mesa's software rasterizer, which only adds cost for a canvas drawn with cairo anyway: on the
 * 2-core machine of docs/benchmarks.md it doubles the median step time on a 100k-node graph and
 * takes ~100 MB more. There, unless the user chose a renderer, use GTK's cairo renderer. */
static void prefer_cairo_without_gpu(void) {
  if (g_getenv("GSK_RENDERER")) {
    renderer_choice = "user";
    return;
  }
  GDir *d = g_dir_open("/dev/dri", 0, NULL);
  gboolean gpu = FALSE;
  if (d) {
    for (const char *n; (n = g_dir_read_name(d)) && !gpu;) gpu = g_str_has_prefix(n, "renderD");
    g_dir_close(d);
  }
  if (!gpu) {
    g_setenv("GSK_RENDERER", "cairo", FALSE);
    renderer_choice = "no-gpu";
  }
}

int main(int argc, char **argv) {
  prefer_cairo_without_gpu();
  if (argc >= 2 && strcmp(argv[1], "--benchmark") == 0) {
    const char *files[2] = {NULL, NULL};
    int nf = 0;
    double timeout = 120;
    for (int i = 2; i < argc; i++) {
      if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
        char *end;
        timeout = strtod(argv[++i], &end);
        if (*end || !(timeout > 0)) {
          fprintf(stderr, "optimus-debugger: --timeout wants seconds, not '%s'\n", argv[i]);
          return 2;
        }
      } else if (nf < 2) {
        files[nf++] = argv[i];
      } else {
        nf = 3;
      }
    }
    if (nf < 1 || nf > 2) {
      fprintf(stderr, "usage: optimus-debugger --benchmark GRAPH [TRACE] [--timeout S]\n");
      return 2;
    }
    return benchmark(files[0], files[1], timeout);
  }
  OxApplication *app = ox_application_new();
  int status = g_application_run(G_APPLICATION(app), argc, argv);
  g_object_unref(app);
  return status;
}
