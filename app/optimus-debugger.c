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
#include <string.h>
#include <sys/resource.h>

#include "ox-application.h"
#include "ox-window.h"

typedef struct Bench {
  OxWindow *w;
  OxGraphView *view;
  guint after_paints;
} Bench;

static double now_ms(void) { return g_get_monotonic_time() / 1000.0; }

static void on_after_paint(GdkFrameClock *c, Bench *b) {
  (void)c;
  b->after_paints++;
}

/* Runs the main loop until the view is laid out (and, with `settled`, the document is not
 * loading or optimizing), then until one more frame is painted. */
static void wait_frame_for(Bench *b, gboolean settled) {
  while (!ox_graph_view_is_laid_out(b->view) || (settled && ox_document_get_busy(ox_window_get_document(b->w))))
    g_main_context_iteration(NULL, TRUE);
  guint p = b->after_paints;
  gtk_widget_queue_draw(GTK_WIDGET(b->view));
  while (b->after_paints == p) g_main_context_iteration(NULL, TRUE);
}

static void wait_frame(Bench *b) { wait_frame_for(b, TRUE); }

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

static int benchmark(const char *graph, const char *trace) {
  g_set_prgname("optimus-debugger");
  g_set_application_name("Optimus Debugger");
  gtk_init();
  Bench b = {0};
  b.w = ox_window_new(NULL);
  b.view = ox_window_get_view(b.w);
  gtk_window_set_default_size(GTK_WINDOW(b.w), 1280, 800);
  gtk_window_present(GTK_WINDOW(b.w));
  while (!gtk_widget_get_mapped(GTK_WIDGET(b.view))) g_main_context_iteration(NULL, TRUE);
  GdkFrameClock *clock = gtk_widget_get_frame_clock(GTK_WIDGET(b.view));
  g_signal_connect(clock, "after-paint", G_CALLBACK(on_after_paint), &b);
  OxDocument *doc = ox_window_get_document(b.w);
  OxScene *scene = ox_graph_view_get_scene(b.view);

  double t0 = now_ms();
  if (!ox_window_open(b.w, graph, trace)) {
    fprintf(stderr, "optimus-debugger: cannot open %s: %s\n", graph, ox_window_get_last_error(b.w));
    return 1;
  }
  double open_ms = now_ms() - t0;
  /* the graph is painted before its trace is in (that loads on a worker) */
  wait_frame_for(&b, FALSE);
  double first_paint_ms = now_ms() - t0;
  const char *first_mode = ox_view_mode_name(ox_scene_get_shown_mode(scene));
  wait_frame(&b);
  double ready_ms = now_ms() - t0;

  /* stepping: every step when there are at most 1000, else 25 runs of 10 consecutive steps
   * spread over the trace (each run starts with a jump, timed apart) */
  guint n = ox_document_get_n_steps(doc);
  GArray *steps = g_array_new(FALSE, FALSE, sizeof(double));
  GArray *jumps = g_array_new(FALSE, FALSE, sizeof(double));
  guint runs = n <= 1000 ? 1 : 25, run_len = n <= 1000 ? n : 10;
  for (guint r = 0; r < runs; r++) {
    guint start = runs == 1 ? 0 : (guint)((double)r * (n - run_len) / (runs - 1));
    if (start != ox_document_get_position(doc)) {
      double j0 = now_ms();
      gtk_widget_activate_action(GTK_WIDGET(b.w), "win.goto-step", "u", start);
      wait_frame(&b);
      double dj = now_ms() - j0;
      g_array_append_val(jumps, dj);
    }
    for (guint i = 0; i < run_len && ox_document_get_position(doc) < n; i++) {
      double s0 = now_ms();
      gtk_widget_activate_action(GTK_WIDGET(b.w), "win.step-next", NULL);
      double s1 = now_ms();
      gboolean busy = ox_scene_get_busy(scene);
      wait_frame(&b);
      double ds = now_ms() - s0;
      if (g_getenv("OX_BENCH_VERBOSE"))
        fprintf(stderr, "step %u: action %.1f ms, frame %.1f ms%s\n", ox_document_get_position(doc), s1 - s0,
                ds - (s1 - s0), busy ? " (layout)" : "");
      g_array_append_val(steps, ds);
    }
  }
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
  if (far) {
    char *name = g_strdup(far);
    double h0 = now_ms();
    gtk_widget_activate_action(GTK_WIDGET(b.w), "win.select-node", "s", name);
    ox_graph_view_zoom_to_selection(b.view);
    wait_frame(&b);
    graphene_rect_t r;
    while (!ox_graph_view_node_bounds(b.view, ox_document_uid_of(doc, name), &r)) {
      g_main_context_iteration(NULL, TRUE);
      if (now_ms() - h0 > 60000) break;
    }
    if (ox_scene_get_busy(scene)) wait_frame(&b);
    select_ms = now_ms() - h0;
    g_free(name);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const OxSceneStats *st = ox_scene_get_stats(scene);
  OxHistory *h = ox_document_get_history(doc);
  const char *renderer = g_getenv("GSK_RENDERER");
  printf("{\"file\": \"%s\", \"renderer\": \"%s\", \"nodes\": %u, \"union_nodes\": %u, \"steps\": %u, \"graph_steps\": %u, "
         "\"open_ms\": %.1f, \"first_paint_ms\": %.1f, \"ready_ms\": %.1f, \"first_view\": \"%s\", \"steps_measured\": %u, "
         "\"step_ms_median\": %.1f, \"step_ms_p95\": %.1f, \"step_ms_max\": %.1f, \"jump_ms_median\": %.1f, "
         "\"search_ms\": %.1f, \"search_hits\": %u, \"select_hit_ms\": %.1f, \"peak_rss_mb\": %.1f, "
         "\"budget\": %u, \"layouts\": %u, \"cache_hits\": %u, \"placed\": %u, \"reused\": %u, \"max_request\": %u}\n",
         graph, renderer ? renderer : "default", h ? h->input->n_live : 0, h ? h->u->n_live : 0, n, h ? h->n_graph_steps : 0, open_ms, first_paint_ms,
         ready_ms, first_mode, n_measured, step_median, step_p95, step_max, jump_median, search_ms, hits, select_ms,
         ru.ru_maxrss / 1024.0, ox_scene_get_budget(scene), st->n_requests, st->n_cache_hits, st->n_placed, st->n_reused,
         st->max_request);
  fflush(stdout);
  g_array_free(steps, TRUE);
  g_array_free(jumps, TRUE);
  gtk_window_destroy(GTK_WINDOW(b.w));
  while (g_main_context_iteration(NULL, FALSE));
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--benchmark") == 0) {
    if (argc < 3 || argc > 4) {
      fprintf(stderr, "usage: optimus-debugger --benchmark FILE [TRACE]\n");
      return 2;
    }
    return benchmark(argv[2], argc > 3 ? argv[3] : NULL);
  }
  OxApplication *app = ox_application_new();
  int status = g_application_run(G_APPLICATION(app), argc, argv);
  g_object_unref(app);
  return status;
}
