/* ox-document-run.c - the document's background runs (ox-document-private.h): optimizing the
 * shown graph on a worker thread (its own clone of the input; the trace is handed back and
 * installed on the main thread), and what-if re-runs of one option each, queued and run one at
 * a time, dropped when the shown history changes.
 */
#include "ox-document-private.h"

#include <stdatomic.h>
#include <string.h>

/* ---- optimization */

void ox_document_set_pipeline(OxDocument *self, OxPipeline *pipeline, const OxCheckConfig *checks) {
  if (self->pipeline) {
    ox_pipeline_free(self->pipeline);
    g_free(self->pipeline);
  }
  self->pipeline = pipeline;
  if (checks)
    self->checks = *checks;
  else
    ox_check_config_default(&self->checks);
}

typedef struct OptJob {
  OxDocument *self;      /* ref; only touched on the main thread */
  guint gen;
  OxGraph *g;            /* the worker's own clone of the input */
  OxPipelineEntry *entries;
  guint32 n_entries;
  OxCheckConfig checks;
  OxTrace *trace;
} OptJob;

static void opt_job_free(gpointer p) {
  OptJob *j = p;
  g_clear_object(&j->self);
  ox_graph_free(j->g);
  g_free(j->entries);
  ox_trace_free(j->trace);
  g_free(j);
}

typedef struct OptProgress {
  OxDocument *self;
  guint gen;
  double fraction;
  char *text;
} OptProgress;

static gboolean opt_progress_main(gpointer p) {
  OptProgress *pr = p;
  if (pr->gen == pr->self->gen && pr->self->busy) {
    pr->self->progress = pr->fraction;
    g_object_notify_by_pspec(G_OBJECT(pr->self), ox_document_props[PROP_PROGRESS]);
    ox_document_set_status(pr->self, pr->text);
  }
  g_object_unref(pr->self);
  g_free(pr->text);
  g_free(pr);
  return G_SOURCE_REMOVE;
}

/* Runs on the worker (or the caller's thread for the synchronous variant). */
/* "structure,shape,numeric", as `optimus optimize` records it (trace->checks) */
static char *checks_text(const OxCheckConfig *c) {
  GString *s = g_string_new(NULL);
  const char *names[3] = {"structure", "shape", "numeric"};
  gboolean on[3] = {c->structure, c->shape, c->numeric};
  for (int i = 0; i < 3; i++)
    if (on[i]) g_string_append_printf(s, "%s%s", s->len ? "," : "", names[i]);
  if (!s->len) g_string_append(s, "none");
  return g_string_free(s, FALSE);
}

static gboolean opt_job_run(OptJob *j, GCancellable *cancellable, gboolean report, GError **error) {
  j->trace = ox_trace_new_for(j->g);
  /* the configuration in force, as the CLI records it: exports and what-ifs re-run from it */
  OxPipeline whole = {.entries = j->entries, .n = j->n_entries};
  OxBuf cfg;
  ox_buf_init(&cfg);
  ox_pipeline_to_json(&whole, &cfg);
  j->trace->config = ox_trace_intern(j->trace, cfg.data ? cfg.data : "{}");
  ox_buf_free(&cfg);
  char *ct = checks_text(&j->checks);
  j->trace->checks = ox_trace_intern(j->trace, ct);
  g_free(ct);
  for (guint32 i = 0; i < j->n_entries; i++) {
    if (g_cancellable_set_error_if_cancelled(cancellable, error)) return FALSE;
    if (report) {
      OptProgress *pr = g_new0(OptProgress, 1);
      pr->self = g_object_ref(j->self);
      pr->gen = j->gen;
      pr->fraction = (double)i / j->n_entries;
      pr->text = g_strdup_printf("optimizing: pass %u/%u %s", i + 1, j->n_entries, j->entries[i].pass->name);
      g_idle_add(opt_progress_main, pr);
    }
    OxPipeline one = {.entries = &j->entries[i], .n = 1};
    OxOptimizeResult res;
    OxDiagList d;
    ox_diags_init(&d, NULL);
    int rc = ox_optimize(j->g, &one, &j->checks, j->trace, &res, &d);
    if (rc != 0) {
      char *msg = ox_document_diags_text(&d);
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "optimization failed: %s", msg);
      g_free(msg);
      ox_diags_clear(&d);
      return FALSE;
    }
    ox_diags_clear(&d);
  }
  return TRUE;
}

static void opt_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable) {
  (void)source;
  OptJob *j = data;
  GError *err = NULL;
  if (opt_job_run(j, cancellable, TRUE, &err))
    g_task_return_boolean(task, TRUE);
  else
    g_task_return_error(task, err);
}

static OptJob *opt_job_new(OxDocument *self) {
  OptJob *j = g_new0(OptJob, 1);
  j->self = g_object_ref(self);
  j->gen = self->gen;
  j->g = ox_graph_clone(self->history->input);
  OxPipeline def = {0};
  const OxPipeline *p = self->pipeline;
  if (!p) {
    ox_pipeline_default(self->history->input, &def);
    p = &def;
  }
  j->entries = g_memdup2(p->entries, p->n * sizeof *p->entries);
  j->n_entries = p->n;
  if (p == &def) ox_pipeline_free(&def);
  j->checks = self->checks;
  return j;
}

static void opt_install(OxDocument *self, OptJob *j) {
  OxTrace *t = g_steal_pointer(&j->trace);
  g_clear_pointer(&self->trace_path, g_free);
  OxHistory *h = ox_history_new_on(self->history, t);
  char *msg = g_strdup_printf("%u steps: %u applied, %u rejected, %u check failures", t->n_steps, t->n_applied,
                              t->n_rejected, t->n_check_failed);
  ox_document_install(self, h);
  ox_document_set_status(self, h->error ? h->error : msg);
  g_free(msg);
}

void ox_document_set_busy(OxDocument *self, gboolean busy) {
  if (self->busy == busy) return;
  self->busy = busy;
  self->progress = busy ? 0.0 : 1.0;
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_BUSY]);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_PROGRESS]);
}

void ox_document_optimize_async(OxDocument *self, GCancellable *cancellable, GAsyncReadyCallback cb,
                                gpointer user_data) {
  GTask *task = g_task_new(self, cancellable, cb, user_data);
  g_task_set_source_tag(task, ox_document_optimize_async);
  if (!self->history || self->busy) {
    g_task_return_new_error(task, G_IO_ERROR, self->busy ? G_IO_ERROR_BUSY : G_IO_ERROR_NOT_INITIALIZED, "%s",
                            self->busy ? "an optimization is already running" : "no graph loaded");
    g_object_unref(task);
    return;
  }
  OptJob *j = opt_job_new(self);
  g_task_set_task_data(task, j, opt_job_free);
  ox_document_set_busy(self, TRUE);
  ox_document_set_status(self, "optimizing…");
  g_task_run_in_thread(task, opt_thread);
  g_object_unref(task);
}

gboolean ox_document_optimize_finish(OxDocument *self, GAsyncResult *res, GError **error) {
  g_return_val_if_fail(g_task_is_valid(res, self), FALSE);
  GTask *task = G_TASK(res);
  OptJob *j = g_task_get_task_data(task);
  GError *local = NULL;
  gboolean ok = g_task_propagate_boolean(task, &local);
  if (j && j->gen != self->gen) {
    /* a newer load replaced the graph meanwhile: drop this result */
    if (ok) g_set_error(&local, G_IO_ERROR, G_IO_ERROR_CANCELLED, "the graph was replaced");
    ok = FALSE;
  } else if (j) {
    ox_document_set_busy(self, FALSE);
    if (ok)
      opt_install(self, j);
    else if (!local || g_error_matches(local, G_IO_ERROR, G_IO_ERROR_CANCELLED))
      ox_document_set_status(
          self, "optimization cancelled"); /* the status says which: a cancel, or the engine's error */
    else
      ox_document_set_status(self, local->message);
  }
  if (local) g_propagate_error(error, local);
  return ok;
}

gboolean ox_document_optimize(OxDocument *self, GCancellable *cancellable, GError **error) {
  if (!self->history) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED, "no graph loaded");
    return FALSE;
  }
  OptJob *j = opt_job_new(self);
  gboolean ok = opt_job_run(j, cancellable, FALSE, error);
  if (ok) opt_install(self, j);
  opt_job_free(j);
  return ok;
}

/* ---- what-if re-runs */

gboolean ox_document_whatif_pipeline(OxDocument *self, OxPipeline *out, OxCheckConfig *checks, char **why) {
  memset(out, 0, sizeof *out);
  if (why) *why = NULL;
  const OxTrace *t = ox_document_get_trace(self);
  if (!self->history) {
    if (why) *why = g_strdup("no graph loaded");
    return FALSE;
  }
  *checks = self->checks;
  if (self->pipeline) {
    /* malloc'ed, as ox_pipeline_free frees it */
    out->n = self->pipeline->n;
    out->entries = malloc((out->n + 1) * sizeof *out->entries);
    memcpy(out->entries, self->pipeline->entries, out->n * sizeof *out->entries);
    return TRUE;
  }
  if (t && t->config && *t->config) {
    OxDiagList d;
    ox_diags_init(&d, "the trace's configuration");
    int rc = ox_pipeline_from_config(t->config, strlen(t->config), "the trace's configuration", out, &d);
    if (rc != 0) {
      if (why) {
        char *msg = ox_document_diags_text(&d);
        *why = g_strdup_printf("the trace's configuration cannot be re-run: %s", msg);
        g_free(msg);
      }
      ox_diags_clear(&d);
      return FALSE;
    }
    ox_diags_clear(&d);
    if (t->checks && *t->checks) {
      char err[256];
      OxCheckConfig c = *checks;
      if (ox_check_config_parse(t->checks, &c, err, sizeof err) == 0) *checks = c;
    }
    return TRUE;
  }
  ox_pipeline_default(self->history->input, out);
  return TRUE;
}

gboolean ox_document_whatif(OxDocument *self, const OxWhatifSpec *spec, OxWhatifResult *out, GError **error) {
  memset(out, 0, sizeof *out);
  OxPipeline p;
  OxCheckConfig checks;
  char *why = NULL;
  if (!ox_document_whatif_pipeline(self, &p, &checks, &why)) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "%s", why);
    g_free(why);
    return FALSE;
  }
  OxDiagList d;
  ox_diags_init(&d, NULL);
  int rc = ox_whatif_run(self->history->input, &p, &checks, self->history->trace, spec, out, &d);
  if (rc != 0) {
    char *msg = ox_document_diags_text(&d);
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", msg);
    g_free(msg);
  }
  ox_diags_clear(&d);
  ox_pipeline_free(&p);
  return rc == 0;
}

gint ox_document_compare_guint(gconstpointer a, gconstpointer b) {
  guint x = *(const guint *)a, y = *(const guint *)b;
  return x < y ? -1 : x > y;
}

typedef enum { WHATIF_QUEUED, WHATIF_RUNNING, WHATIF_DONE, WHATIF_FAILED } WhatifState;

typedef struct WhatifEntry {
  WhatifState state;
  OxWhatifResult res;
  OxHistory *h;     /* keeps the base trace the result points at alive */
  char *error;
} WhatifEntry;

void ox_document_whatif_entry_free(gpointer p) {
  WhatifEntry *e = p;
  ox_whatif_result_free(&e->res);
  ox_history_unref(e->h);
  g_free(e->error);
  g_free(e);
}

typedef struct WhatifJob {
  guint gen;
  char *option;
  OxHistory *h;           /* ref: input and base trace, read-only on the worker */
  OxPipeline p;
  OxCheckConfig checks;
  atomic_bool cancel;
  OxWhatifResult res;
  char *error;
} WhatifJob;

static void whatif_job_free(gpointer p) {
  WhatifJob *j = p;
  g_free(j->option);
  ox_history_unref(j->h);
  ox_pipeline_free(&j->p);
  ox_whatif_result_free(&j->res);
  g_free(j->error);
  g_free(j);
}

static void whatif_thread(GTask *task, gpointer src, gpointer data, GCancellable *c) {
  (void)src;
  (void)c;
  WhatifJob *j = data;
  /* the key: one option, or ox_document_whatif_key's lines (options, then "skip:SEQ" lines) */
  char **lines = g_strsplit(j->option, "\n", -1);
  guint n = g_strv_length(lines), n_opts = 0, n_skip = 0;
  const char **opts = g_new0(const char *, n + 1);
  uint32_t *skip = g_new0(uint32_t, n + 1);
  for (guint i = 0; i < n; i++) {
    if (!*lines[i]) continue;
    if (g_str_has_prefix(lines[i], "skip:"))
      skip[n_skip++] = (uint32_t)g_ascii_strtoull(lines[i] + 5, NULL, 10);
    else
      opts[n_opts++] = lines[i];
  }
  OxWhatifSpec spec = {.options = opts, .n_options = n_opts, .skip = skip, .n_skip = n_skip, .cancel = &j->cancel};
  OxDiagList d;
  ox_diags_init(&d, NULL);
  if (ox_whatif_run(j->h->input, &j->p, &j->checks, j->h->trace, &spec, &j->res, &d) == 0) {
    ox_graph_free(j->res.graph); /* hints need the decisions and counts, not the graph */
    j->res.graph = NULL;
  } else {
    j->error = ox_document_diags_text(&d);
  }
  ox_diags_clear(&d);
  g_free(opts);
  g_free(skip);
  g_strfreev(lines);
  g_task_return_boolean(task, TRUE);
}

static void whatif_pump(OxDocument *self);

static void whatif_done(GObject *src, GAsyncResult *res, gpointer data) {
  (void)data;
  OxDocument *self = OX_DOCUMENT(src);
  WhatifJob *j = g_task_get_task_data(G_TASK(res));
  if (self->whatif_job == j) self->whatif_job = NULL;
  WhatifEntry *e = j->gen == self->whatif_gen ? g_hash_table_lookup(self->whatif, j->option) : NULL;
  if (e) {
    self->whatif_runs++;
    if (j->error) {
      e->state = WHATIF_FAILED;
      e->error = g_steal_pointer(&j->error);
    } else {
      e->state = WHATIF_DONE;
      e->res = j->res;
      memset(&j->res, 0, sizeof j->res);
      e->h = ox_history_ref(j->h);
    }
    g_signal_emit(self, ox_document_signals[SIGNAL_WHATIF_DONE], 0, j->option);
  }
  whatif_pump(self);
}

static void whatif_pump(OxDocument *self) {
  while (!self->whatif_job && !g_queue_is_empty(self->whatif_queue)) {
    char *option = g_queue_pop_head(self->whatif_queue);
    WhatifEntry *e = g_hash_table_lookup(self->whatif, option);
    if (!e || e->state != WHATIF_QUEUED) {
      g_free(option);
      continue;
    }
    WhatifJob *j = g_new0(WhatifJob, 1);
    char *why = NULL;
    if (!self->history || !ox_document_whatif_pipeline(self, &j->p, &j->checks, &why)) {
      e->state = WHATIF_FAILED;
      e->error = why ? why : g_strdup("no graph loaded");
      whatif_job_free(j);
      g_signal_emit(self, ox_document_signals[SIGNAL_WHATIF_DONE], 0, option);
      g_free(option);
      continue;
    }
    e->state = WHATIF_RUNNING;
    j->gen = self->whatif_gen;
    j->option = option;
    j->h = ox_history_ref(self->history);
    atomic_init(&j->cancel, false);
    self->whatif_job = j;
    GTask *task = g_task_new(self, NULL, whatif_done, NULL);
    g_task_set_task_data(task, j, whatif_job_free);
    g_task_run_in_thread(task, whatif_thread);
    g_object_unref(task);
  }
}

/* The shown history changed: its what-ifs are dropped (a running one is cancelled between
 * passes and its result ignored). */
void ox_document_whatif_reset(OxDocument *self) {
  self->whatif_gen++;
  if (self->whatif_job) atomic_store(&self->whatif_job->cancel, true);
  self->whatif_job = NULL;
  g_hash_table_remove_all(self->whatif);
  g_queue_clear_full(self->whatif_queue, g_free);
}

char *ox_document_whatif_key(const char *const *options, guint n_options, const guint *skip, guint n_skip) {
  GString *k = g_string_new(NULL);
  for (guint i = 0; i < n_options; i++) {
    if (!options[i] || !*options[i]) continue;
    if (k->len) g_string_append_c(k, '\n');
    g_string_append(k, options[i]);
  }
  GArray *s = g_array_new(FALSE, FALSE, sizeof(guint));
  g_array_append_vals(s, skip, n_skip);
  g_array_sort(s, (GCompareFunc)ox_document_compare_guint);
  for (guint i = 0; i < s->len; i++) {
    guint v = g_array_index(s, guint, i);
    if (i && v == g_array_index(s, guint, i - 1)) continue;
    if (k->len) g_string_append_c(k, '\n');
    g_string_append_printf(k, "skip:%u", v);
  }
  g_array_free(s, TRUE);
  return g_string_free(k, FALSE);
}

const OxWhatifResult *ox_document_get_whatif(OxDocument *self, const char *option, gboolean start,
                                             const char **error) {
  if (error) *error = NULL;
  if (!option || !self->history || !self->history->trace) return NULL;
  WhatifEntry *e = g_hash_table_lookup(self->whatif, option);
  if (!e) {
    if (!start) return NULL;
    e = g_new0(WhatifEntry, 1);
    e->state = WHATIF_QUEUED;
    g_hash_table_insert(self->whatif, g_strdup(option), e);
    g_queue_push_tail(self->whatif_queue, g_strdup(option));
    whatif_pump(self);
    e = g_hash_table_lookup(self->whatif, option); /* a failure may have been recorded at once */
  }
  if (e && e->state == WHATIF_FAILED && error) *error = e->error;
  return e && e->state == WHATIF_DONE ? &e->res : NULL;
}

guint ox_document_get_whatif_runs(OxDocument *self) { return self->whatif_runs; }

void ox_document_whatif_drop_queued(OxDocument *self) {
  char *option;
  while ((option = g_queue_pop_head(self->whatif_queue))) {
    WhatifEntry *e = g_hash_table_lookup(self->whatif, option);
    if (e && e->state == WHATIF_QUEUED) g_hash_table_remove(self->whatif, option);
    g_free(option);
  }
}

gboolean ox_document_add_option(OxDocument *self, const char *option, GError **error) {
  OxPipeline p;
  OxCheckConfig checks;
  char *why = NULL;
  if (!ox_document_whatif_pipeline(self, &p, &checks, &why)) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "%s", why);
    g_free(why);
    return FALSE;
  }
  OxDiagList d;
  ox_diags_init(&d, NULL);
  if (ox_pipeline_set_option(&p, option, &d) != 0) {
    char *msg = ox_document_diags_text(&d);
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "%s", msg);
    g_free(msg);
    ox_diags_clear(&d);
    ox_pipeline_free(&p);
    return FALSE;
  }
  ox_diags_clear(&d);
  OxPipeline *heap = g_new0(OxPipeline, 1);
  *heap = p;
  ox_document_set_pipeline(self, heap, &checks);
  return TRUE;
}

gboolean ox_document_get_busy(OxDocument *self) { return self->busy; }
double ox_document_get_progress(OxDocument *self) { return self->progress; }
const char *ox_document_get_status(OxDocument *self) { return self->status; }
