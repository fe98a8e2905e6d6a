/* ox-document-load.c - loading into the document (ox-document-private.h): a dump with its
 * --input-shape / --shapes, its graphs (one shown at a time, histories of graphs shown before
 * kept), load warnings, and a trace parsed on a worker thread (at 100k nodes ~120 MB of JSON)
 * and installed on the main thread unless a newer load came first.
 */
#include "ox-document-private.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <string.h>

#include "ops/ox_shape.h"

/* ---- loading */

void ox_document_install(OxDocument *self, OxHistory *h) {
  if (h != self->history) ox_document_whatif_reset(self);
  /* the working graphs may alias the old history's input: release them while it lives */
  ox_document_graph_release(self, &self->g_after);
  ox_document_graph_release(self, &self->g_before);
  g_clear_pointer(&self->history, ox_history_unref);
  self->history = h;
  self->n_states = 0; /* a full frame next */
  self->position = 0;
  self->k_after = self->k_before = 0;
  g_clear_pointer(&self->selected, g_free);
  g_clear_pointer(&self->filter_pass, g_free);
  ox_document_filter_coverage_reset(self);
  self->filter_touching = FALSE;
  g_hash_table_remove_all(self->touching);
  ox_document_graphs_update(self);
  ox_document_frame_update(self);
  ox_document_search_update(self);
  ox_document_timeline_rebuild(self);
  g_object_freeze_notify(G_OBJECT(self));
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_PATH]);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_N_STEPS]);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_POSITION]);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_SELECTED]);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_FILTER_PASS]);
  g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_FILTER_TOUCHING]);
  g_object_thaw_notify(G_OBJECT(self));
  if (h->error) ox_document_set_status(self, h->error);
  g_signal_emit(self, ox_document_signals[SIGNAL_HISTORY_CHANGED], 0);
  g_signal_emit(self, ox_document_signals[SIGNAL_FRAME_CHANGED], 0);
#ifdef __GLIBC__
  /* the trace text, the parser's scratch and the old history were freed on worker threads'
   * malloc arenas, which keep freed memory: hand it back (a 100k-node trace leaves ~150 MB) */
  malloc_trim(0);
#endif
}

char *ox_document_diags_text(const OxDiagList *d) {
  GString *s = g_string_new(NULL);
  for (size_t i = 0; i < d->n; i++) {
    if (d->items[i].sev != OX_SEV_ERROR) continue;
    char *line = ox_diag_format(d, &d->items[i]);
    if (s->len) g_string_append_c(s, '\n');
    g_string_append(s, line);
    if (d->items[i].snippet) g_string_append_printf(s, "\n    %s", d->items[i].snippet);
    free(line);
    if (s->len > 4000) break;
  }
  if (!s->len) g_string_append(s, "unknown error");
  return g_string_free(s, FALSE);
}

/* ---- the graphs of the dump */

static void entry_free(gpointer p) {
  OxGraphEntry *e = p;
  g_free(e->name);
  g_free(e->owner);
  g_free(e->label);
  g_free(e);
}

static guint count_nodes(const OxGraph *g) {
  guint n = 0;
  OX_GRAPH_FOREACH(g, id) n += g->nodes[id].op != OX_OP_OUTPUT;
  return n;
}

static void entries_add(GPtrArray *a, const OxGraph *g, guint top, guint depth, guint parent, guint sub) {
  OxGraphEntry *e = g_new0(OxGraphEntry, 1);
  e->top = top;
  e->depth = depth;
  e->parent = depth ? parent : a->len;
  e->sub = sub;
  e->n_nodes = count_nodes(g);
  e->name = g_strdup(g->name && *g->name ? g->name : "graph");
  e->owner = g_strdup(g->sub_owner);
  if (depth)
    e->label = g_strdup_printf("%s%s%s · %u nodes", e->name, e->owner ? " of " : "", e->owner ? e->owner : "", e->n_nodes);
  else
    e->label = g_strdup_printf("graph %u: %s · %u nodes", top + 1, e->name, e->n_nodes);
  guint me = a->len;
  g_ptr_array_add(a, e);
  for (uint32_t i = 0; i < g->n_subgraphs; i++) entries_add(a, g->subgraphs[i], top, depth + 1, me, i);
}

guint ox_document_get_n_graph_entries(OxDocument *self) { return self->entries ? self->entries->len : 0; }
const OxGraphEntry *ox_document_get_graph_entry(OxDocument *self, guint i) {
  return self->entries && i < self->entries->len ? g_ptr_array_index(self->entries, i) : NULL;
}
guint ox_document_get_graph_entry_index(OxDocument *self) { return self->entry; }

guint ox_document_find_subgraph_entry(OxDocument *self, const char *owner) {
  if (!owner || !self->entries) return G_MAXUINT;
  for (guint i = 0; i < self->entries->len; i++) {
    const OxGraphEntry *e = g_ptr_array_index(self->entries, i);
    if (e->depth && e->parent == self->entry && e->owner && !strcmp(e->owner, owner)) return i;
  }
  return G_MAXUINT;
}

void ox_document_set_pending_graph(OxDocument *self, guint index) { self->pending_graph = index; }

/* The graph of entry i as it is now: a top-level graph in the doc, or held by the history that
 * showed it (the shown one, or one kept from before), then down its subgraphs. */
static const OxGraph *entry_graph(OxDocument *self, guint i) {
  const OxGraphEntry *e = g_ptr_array_index(self->entries, i);
  if (e->depth) {
    const OxGraph *p = entry_graph(self, e->parent);
    return p && e->sub < p->n_subgraphs ? p->subgraphs[e->sub] : NULL;
  }
  if (i == self->entry && self->history) return self->history->input;
  OxHistory *h = g_hash_table_lookup(self->entry_hist, GUINT_TO_POINTER(i));
  if (h) return h->input;
  return e->top < self->doc->n_graphs ? self->doc->graphs[e->top] : NULL;
}

gboolean ox_document_show_graph_entry(OxDocument *self, guint i, GError **error) {
  if (!self->entries || i >= self->entries->len) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "no graph %u in this dump (it has %u)", i + 1,
                self->entries ? self->entries->len : 0);
    return FALSE;
  }
  if (i == self->entry) return TRUE;
  OxHistory *back = g_hash_table_lookup(self->entry_hist, GUINT_TO_POINTER(i));
  OxHistory *h = back ? ox_history_ref(back) : NULL;
  if (!h) {
    const OxGraph *g = entry_graph(self, i);
    if (!g) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "graph %u is no longer available", i + 1);
      return FALSE;
    }
    h = ox_history_new(ox_graph_clone(g), NULL);
  }
  /* keep the one shown for coming back (its graph also holds the subgraphs shown from it) */
  if (self->history)
    g_hash_table_insert(self->entry_hist, GUINT_TO_POINTER(self->entry), ox_history_ref(self->history));
  self->entry = i;
  self->gen++;
  ox_document_set_status(self, back ? (h->trace ? NULL : "not optimized yet") : "not optimized yet");
  ox_document_install(self, h);
  return TRUE;
}

gboolean ox_document_set_doc(OxDocument *self, OxDoc *doc, guint graph_index, OxTrace *trace,
                             const char *path, GError **error) {
  g_return_val_if_fail(doc && graph_index < doc->n_graphs, FALSE);
  /* the history takes the loaded graph itself (no copy: 100k nodes cost ~0.4 s to clone); a
   * second install of the same doc copies the current input */
  gboolean steal = doc->graphs[graph_index] != NULL;
  OxGraph *input = steal ? doc->graphs[graph_index] : ox_graph_clone(self->history->input);
  if (trace && !trace->input_hash) { /* a trace file with "hash": "": nothing would check it (issue 21) */
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                "the trace has no input hash, so nothing checks it was recorded on %s", path ? path : "this graph");
    if (!steal) ox_graph_free(input);
    ox_trace_free(trace);
    if (doc != self->doc) ox_doc_free(doc);
    return FALSE;
  }
  if (trace && trace->input_hash) {
    char hash[32];
    g_snprintf(hash, sizeof hash, "%016llx", (unsigned long long)ox_graph_structure_hash(input));
    if (strcmp(hash, trace->input_hash) != 0) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                  "%s: the trace was recorded on another graph (structure hash %s, this graph has %s)",
                  path ? path : "graph", trace->input_hash, hash);
      if (!steal) ox_graph_free(input);
      ox_trace_free(trace);
      if (doc != self->doc) ox_doc_free(doc);
      return FALSE;
    }
  }
  if (self->doc != doc) {
    /* a new dump: its graphs, none shown before */
    g_clear_pointer(&self->entries, g_ptr_array_unref);
    self->entries = g_ptr_array_new_with_free_func(entry_free);
    for (guint i = 0; i < doc->n_graphs; i++)
      if (doc->graphs[i]) entries_add(self->entries, doc->graphs[i], i, 0, 0, 0);
    g_hash_table_remove_all(self->entry_hist);
    self->entry = 0;
    for (guint i = 0; i < self->entries->len; i++) {
      const OxGraphEntry *e = g_ptr_array_index(self->entries, i);
      if (!e->depth && e->top == graph_index) self->entry = i;
    }
  }
  if (steal) doc->graphs[graph_index] = NULL;
  self->gen++;
  if (self->doc != doc) g_clear_pointer(&self->doc, ox_doc_free);
  self->doc = doc;
  self->graph_index = graph_index;
  if (path != self->path) {
    g_free(self->path);
    self->path = g_strdup(path);
  }
  OxHistory *h = ox_history_new(input, trace);
  ox_document_set_status(self,
                         trace ? (trace->n_steps ? NULL : "the trace has no steps") : "not optimized yet");
  ox_document_install(self, h);
  return TRUE;
}

const char *ox_document_get_shapes_note(OxDocument *self) { return self->shapes_note; }
const char *const *ox_document_get_loaded_specs(OxDocument *self) {
  return (const char *const *)self->loaded_specs;
}
const char *ox_document_get_loaded_shapes_file(OxDocument *self) { return self->loaded_shapes_file; }
const char *ox_document_get_trace_path(OxDocument *self) {
  return self->history && self->history->trace ? self->trace_path : NULL;
}
guint ox_document_get_top_index(OxDocument *self) {
  const OxGraphEntry *e = ox_document_get_graph_entry(self, self->entry);
  return e ? e->top : 0;
}

#define MAX_KEPT_WARNINGS 2000

void ox_document_warning_clear(gpointer p) {
  OxLoadWarning *w = p;
  g_free(w->text);
  g_free(w->snippet);
}

/* The warnings of d into a new array (errors fail the load and are shown otherwise; notes are
 * not kept); *n counts them all. */
static GArray *collect_warnings(const OxDiagList *d, guint *n) {
  GArray *a = g_array_new(FALSE, TRUE, sizeof(OxLoadWarning));
  g_array_set_clear_func(a, ox_document_warning_clear);
  *n = 0;
  for (size_t i = 0; i < d->n; i++) {
    const OxDiag *x = &d->items[i];
    if (x->sev != OX_SEV_WARNING) continue;
    (*n)++;
    if (a->len >= MAX_KEPT_WARNINGS) continue;
    char *t = ox_diag_format(d, x);
    OxLoadWarning w = {x->line, x->col, g_strdup(t), g_strdup(x->snippet)};
    free(t);
    g_array_append_val(a, w);
  }
  *n += (guint)d->n_dropped;
  return a;
}

guint ox_document_get_n_load_warnings(OxDocument *self) { return self->n_warnings; }
guint ox_document_get_load_serial(OxDocument *self) { return self->load_serial; }
guint ox_document_get_n_kept_load_warnings(OxDocument *self) { return self->warnings->len; }
const OxLoadWarning *ox_document_get_load_warning(OxDocument *self, guint i) {
  return i < self->warnings->len ? &g_array_index(self->warnings, OxLoadWarning, i) : NULL;
}

const char *ox_document_node_at_line(OxDocument *self, guint line) {
  if (!self->history || !line) return NULL;
  const OxGraph *g = self->history->input;
  const OxNode *best = NULL, *before = NULL; /* at or after the line; else the last before it */
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    if (!n->src_line) continue;
    if (n->src_line >= line && (!best || n->src_line < best->src_line)) best = n;
    if (n->src_line < line && (!before || n->src_line > before->src_line)) before = n;
  }
  if (!best) best = before;
  return best ? best->name : NULL;
}

gboolean ox_document_has_pending_shapes(OxDocument *self) { return self->shape_specs || self->shapes_file; }

void ox_document_set_pending_shapes(OxDocument *self, const char *const *specs, guint n_specs,
                                    const char *shapes_file) {
  g_strfreev(self->shape_specs);
  self->shape_specs = g_new0(char *, n_specs + 1);
  for (guint i = 0; i < n_specs; i++) self->shape_specs[i] = g_strdup(specs[i]);
  g_free(self->shapes_file);
  self->shapes_file = shapes_file && *shapes_file ? g_strdup(shapes_file) : NULL;
}

/* The pending --shapes / --input-shape on graph g (then forgotten: they belong to the file
 * given with them), parameters inferred from their uses; FALSE with error on a bad spec or
 * file. *summary: what was inferred, for the status line. */
static gboolean apply_pending_shapes(OxDocument *self, OxGraph *g, const char *path, char **summary, char ***specs_out,
                                     char **file_out, GError **error) {
  char **specs = g_steal_pointer(&self->shape_specs);
  char *file = g_steal_pointer(&self->shapes_file);
  *specs_out = specs ? g_strdupv(specs) : NULL;
  *file_out = g_strdup(file);
  guint n = specs ? g_strv_length(specs) : 0;
  gboolean ok = TRUE;
  *summary = NULL;
  if (n || file) {
    OxDiagList d;
    ox_diags_init(&d, file ? file : path);
    OxShapeList sl;
    ox_shape_list_init(&sl);
    if (file && ox_shapes_load_file(file, &sl, &d) != 0) ok = FALSE;
    if (ok) {
      ox_shapes_apply(g, &sl, &d, NULL);
      if (ox_shape_apply_input_specs(g, (const char *const *)specs, n, &d) != 0) ok = FALSE;
    }
    if (ok) {
      OxParamShapes ps;
      ox_shape_infer_params(g, NULL, 0, &ps);
      OxShapeStats st;
      ox_shape_infer_graph(g, NULL, &st);
      const char *pl = ps.inferred == 1 ? "" : "s";
      *summary = ps.unknown ? g_strdup_printf("shapes: %u parameter%s inferred from their uses, %u without a shape",
                                              ps.inferred, pl, ps.unknown)
                            : g_strdup_printf("shapes: %u parameter%s inferred from their uses", ps.inferred, pl);
    } else {
      char *msg = ox_document_diags_text(&d);
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s", msg);
      g_free(msg);
    }
    ox_shape_list_free(&sl);
    ox_diags_clear(&d);
  }
  g_strfreev(specs);
  g_free(file);
  return ok;
}

gboolean ox_document_load_file(OxDocument *self, const char *path, const char *trace_path, GError **error) {
  OxDiagList d;
  ox_diags_init(&d, path);
  OxDoc *doc = NULL;
  if (ox_load_file(path, OX_FMT_UNKNOWN, NULL, &doc, &d) != 0 || !doc || !doc->n_graphs) {
    char *msg = ox_document_diags_text(&d);
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s", msg);
    g_free(msg);
    ox_diags_clear(&d);
    ox_doc_free(doc);
    return FALSE;
  }
  guint n_warnings = 0;
  g_autoptr(GArray) warnings = collect_warnings(&d, &n_warnings);
  ox_diags_clear(&d);
  guint top = self->pending_graph == G_MAXUINT ? 0 : self->pending_graph;
  self->pending_graph = G_MAXUINT;
  if (top >= doc->n_graphs) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "%s: --graph %u is out of range: the input has %u graph%s",
                path, top + 1, doc->n_graphs, doc->n_graphs == 1 ? "" : "s");
    ox_doc_free(doc);
    return FALSE;
  }
  char *shapes_summary = NULL, **specs = NULL, *shapes_file = NULL;
  if (!apply_pending_shapes(self, doc->graphs[top], path, &shapes_summary, &specs, &shapes_file, error)) {
    g_strfreev(specs);
    g_free(shapes_file);
    ox_doc_free(doc);
    return FALSE;
  }
  OxTrace *trace = NULL;
  if (trace_path) {
    char err[512];
    size_t len = 0;
    char *text = ox_read_file(trace_path, &len, ox_input_cap((size_t)1 << 30), err, sizeof err);
    if (!text) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", err);
      ox_doc_free(doc);
      return FALSE;
    }
    ox_diags_init(&d, trace_path);
    int rc = ox_trace_read_json(text, len, trace_path, &trace, &d);
    free(text);
    if (rc != 0 || !trace) {
      char *msg = ox_document_diags_text(&d);
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s", msg);
      g_free(msg);
      ox_diags_clear(&d);
      ox_doc_free(doc);
      return FALSE;
    }
    ox_diags_clear(&d);
  }
  /* in place before the install, so that the window finds them when the new history arrives */
  GArray *prev = self->warnings;
  guint prev_n = self->n_warnings;
  self->warnings = g_steal_pointer(&warnings);
  self->n_warnings = n_warnings;
  self->load_serial++;
  gboolean ok = ox_document_set_doc(self, doc, top, trace, path, error);
  if (!ok) {
    g_array_unref(self->warnings);
    self->warnings = prev;
    self->n_warnings = prev_n;
    self->load_serial--;
  } else {
    g_array_unref(prev);
    g_free(self->shapes_note);
    self->shapes_note = g_steal_pointer(&shapes_summary);
    g_strfreev(self->loaded_specs);
    self->loaded_specs = g_steal_pointer(&specs);
    g_free(self->loaded_shapes_file);
    self->loaded_shapes_file = g_steal_pointer(&shapes_file);
    g_free(self->trace_path);
    self->trace_path = g_strdup(trace_path);
    g_object_notify_by_pspec(G_OBJECT(self), ox_document_props[PROP_STATUS]);
  }
  g_free(shapes_summary);
  g_strfreev(specs);
  g_free(shapes_file);
  return ok;
}

/* ---- trace loading off the main thread: at 100k nodes a trace is ~120 MB of JSON and takes
 * tens of seconds to parse; the graph is shown (and usable) meanwhile. */

/* Reads and parses a trace file: the trace, or NULL with *code and *msg (owned) set. */
static OxTrace *trace_read(const char *path, GIOErrorEnum *code, char **msg) {
  char err[512];
  size_t len = 0;
  char *text = ox_read_file(path, &len, ox_input_cap((size_t)1 << 30), err, sizeof err);
  if (!text) {
    *code = G_IO_ERROR_FAILED;
    *msg = g_strdup(err);
    return NULL;
  }
  OxDiagList d;
  ox_diags_init(&d, path);
  OxTrace *trace = NULL;
  gint64 t0 = g_get_monotonic_time();
  int rc = ox_trace_read_json(text, len, path, &trace, &d);
  free(text);
  g_debug("trace %s: parsed in %.0f ms", path, (g_get_monotonic_time() - t0) / 1000.0);
  if (rc != 0 || !trace) {
    if (trace) ox_trace_free(trace);
    *code = G_IO_ERROR_INVALID_DATA;
    *msg = ox_document_diags_text(&d);
    ox_diags_clear(&d);
    return NULL;
  }
  ox_diags_clear(&d);
  return trace;
}

/* A trace read on its own thread while the graph loads (ox_document_prefetch_trace). The thread
 * and the document each hold a reference; whoever takes the result waits for `done`. */
typedef struct TracePrefetch {
  gint ref;
  char *path;
  GMutex lock;
  GCond cond;
  gboolean done;
  OxTrace *trace; /* the result (owned until taken), or NULL with code and msg */
  GIOErrorEnum code;
  char *msg;
} TracePrefetch;

void ox_document_prefetch_unref(TracePrefetch *p) {
  if (!p || !g_atomic_int_dec_and_test(&p->ref)) return;
  if (p->trace) ox_trace_free(p->trace);
  g_free(p->msg);
  g_free(p->path);
  g_mutex_clear(&p->lock);
  g_cond_clear(&p->cond);
  g_free(p);
}

static gpointer prefetch_thread(gpointer data) {
  TracePrefetch *p = data;
  GIOErrorEnum code = G_IO_ERROR_FAILED;
  char *msg = NULL;
  OxTrace *t = trace_read(p->path, &code, &msg);
  g_mutex_lock(&p->lock);
  p->trace = t;
  p->code = code;
  p->msg = msg;
  p->done = TRUE;
  g_cond_broadcast(&p->cond);
  g_mutex_unlock(&p->lock);
  ox_document_prefetch_unref(p);
  return NULL;
}

void ox_document_prefetch_trace(OxDocument *self, const char *trace_path) {
  g_clear_pointer(&self->prefetch, ox_document_prefetch_unref);
  if (!trace_path) return;
  TracePrefetch *p = g_new0(TracePrefetch, 1);
  p->ref = 2; /* the document's and the thread's */
  p->path = g_strdup(trace_path);
  g_mutex_init(&p->lock);
  g_cond_init(&p->cond);
  GThread *th = g_thread_try_new("optimus-trace-read", prefetch_thread, p, NULL);
  if (!th) { /* no thread: the trace is read by the load as before */
    p->ref = 1;
    ox_document_prefetch_unref(p);
    return;
  }
  g_thread_unref(th);
  self->prefetch = p;
}

gboolean ox_document_trace_prefetched(OxDocument *self) {
  TracePrefetch *p = self->prefetch;
  if (!p) return FALSE;
  g_mutex_lock(&p->lock);
  gboolean done = p->done;
  g_mutex_unlock(&p->lock);
  return done;
}

/* How long a load waits for a prefetch to finish reading (a 1 GiB trace, the largest read,
 * parses in well under a minute here). */
#define PREFETCH_WAIT_S 600

/* The prefetched trace (taken from p), or NULL with *code and *msg set. */
static OxTrace *prefetch_take(TracePrefetch *p, GIOErrorEnum *code, char **msg) {
  gint64 deadline = g_get_monotonic_time() + (gint64)PREFETCH_WAIT_S * G_TIME_SPAN_SECOND;
  g_mutex_lock(&p->lock);
  while (!p->done)
    if (!g_cond_wait_until(&p->cond, &p->lock, deadline)) break;
  OxTrace *t = NULL;
  if (!p->done) {
    *code = G_IO_ERROR_TIMED_OUT;
    *msg = g_strdup_printf("%s: reading the trace took more than %d s", p->path, PREFETCH_WAIT_S);
  } else if (p->trace) {
    t = g_steal_pointer(&p->trace);
  } else {
    *code = p->code;
    *msg = g_strdup(p->msg ? p->msg : "the trace could not be read");
  }
  g_mutex_unlock(&p->lock);
  return t;
}

typedef struct TraceJob {
  OxDocument *self;   /* ref; main thread only */
  guint gen;
  char *path;
  OxHistory *base;    /* the history whose input the trace is for (ref; its input is immutable) */
  TracePrefetch *prefetch; /* ref: the trace already being read, or NULL */
  OxHistory *result;
} TraceJob;

static void trace_job_free(gpointer p) {
  TraceJob *j = p;
  g_clear_object(&j->self);
  g_free(j->path);
  ox_history_unref(j->base);
  ox_document_prefetch_unref(j->prefetch);
  ox_history_unref(j->result);
  g_free(j);
}

static void trace_thread(GTask *task, gpointer src, gpointer data, GCancellable *c) {
  (void)src;
  TraceJob *j = data;
  GIOErrorEnum code = G_IO_ERROR_FAILED;
  char *msg = NULL;
  OxTrace *trace = j->prefetch ? prefetch_take(j->prefetch, &code, &msg) : trace_read(j->path, &code, &msg);
  if (!trace) {
    g_task_return_new_error(task, G_IO_ERROR, code, "%s", msg);
    g_free(msg);
    return;
  }
  if (g_cancellable_is_cancelled(c)) {
    ox_trace_free(trace);
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "cancelled");
    return;
  }
  const OxGraph *input = j->base->input;
  if (!trace->input_hash) { /* "hash": "" (issue 21) */
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "%s: the trace has no input hash, so nothing checks it was recorded on this graph",
                            j->path);
    ox_trace_free(trace);
    return;
  }
  if (trace->input_hash) {
    char hash[32];
    g_snprintf(hash, sizeof hash, "%016llx", (unsigned long long)ox_graph_structure_hash(input));
    if (strcmp(hash, trace->input_hash) != 0) {
      g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                              "%s: the trace was recorded on another graph (structure hash %s, this graph has %s)",
                              j->path, trace->input_hash, hash);
      ox_trace_free(trace);
      return;
    }
  }
  gint64 t1 = g_get_monotonic_time();
  j->result = ox_history_new_on(j->base, trace);
  g_debug("trace %s: history built in %.0f ms", j->path, (g_get_monotonic_time() - t1) / 1000.0);
  g_task_return_boolean(task, TRUE);
}

void ox_document_load_trace_async(OxDocument *self, const char *trace_path, GCancellable *cancellable,
                                  GAsyncReadyCallback cb, gpointer user_data) {
  GTask *task = g_task_new(self, cancellable, cb, user_data);
  g_task_set_source_tag(task, ox_document_load_trace_async);
  if (!self->history || self->busy) {
    g_task_return_new_error(task, G_IO_ERROR, self->busy ? G_IO_ERROR_BUSY : G_IO_ERROR_NOT_INITIALIZED, "%s",
                            self->busy ? "the document is busy" : "no graph loaded");
    g_object_unref(task);
    return;
  }
  TraceJob *j = g_new0(TraceJob, 1);
  j->self = g_object_ref(self);
  j->gen = self->gen;
  j->path = g_strdup(trace_path);
  j->base = ox_history_ref(self->history);
  if (self->prefetch && strcmp(self->prefetch->path, trace_path) == 0) j->prefetch = g_steal_pointer(&self->prefetch);
  g_clear_pointer(&self->prefetch, ox_document_prefetch_unref);
  g_task_set_task_data(task, j, trace_job_free);
  ox_document_set_busy(self, TRUE);
  ox_document_set_status(self, "loading the trace…");
  g_task_run_in_thread(task, trace_thread);
  g_object_unref(task);
}

gboolean ox_document_load_trace_finish(OxDocument *self, GAsyncResult *res, GError **error) {
  g_return_val_if_fail(g_task_is_valid(res, self), FALSE);
  TraceJob *j = g_task_get_task_data(G_TASK(res));
  gboolean ok = g_task_propagate_boolean(G_TASK(res), error);
  if (!j) return ok;
  if (j->gen != self->gen) {
    if (ok) g_set_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "the graph was replaced");
    return FALSE;
  }
  ox_document_set_busy(self, FALSE);
  if (!ok) {
    ox_document_set_status(self, "the trace could not be loaded");
    return FALSE;
  }
  OxHistory *h = g_steal_pointer(&j->result);
  const OxTrace *t = h->trace;
  ox_document_set_status(self, t->n_steps ? NULL : "the trace has no steps");
  g_free(self->trace_path);
  self->trace_path = g_strdup(j->path);
  ox_document_install(self, h);
  if (h->error) ox_document_set_status(self, h->error);
  return TRUE;
}

gboolean ox_document_has_graph(OxDocument *self) { return self->history != NULL; }
const char *ox_document_get_path(OxDocument *self) { return self->path; }
OxDoc *ox_document_get_doc(OxDocument *self) { return self->doc; }
OxHistory *ox_document_get_history(OxDocument *self) { return self->history; }
const OxTrace *ox_document_get_trace(OxDocument *self) { return self->history ? self->history->trace : NULL; }
guint ox_document_get_n_steps(OxDocument *self) {
  const OxTrace *t = ox_document_get_trace(self);
  return t ? t->n_steps : 0;
}
