/* ox_render.c - SVG/PNG of a graph, laid out and rendered in-process by Graphviz.
 *
 * The only engine file that includes Graphviz. The graph goes through ox_write_dot (so the
 * picture and the .dot file always agree), agmemread, gvLayout "dot", gvRenderData, then
 * gvFreeLayout + agclose (both, always: skipping gvFreeLayout leaks the layout).
 *
 * Graphviz keeps process-global state and crashes under concurrent use even with separate
 * contexts, so every ag and gv call here runs under one process-wide mutex, and one GVC_t is
 * created lazily under it and kept for the life of the process. Building the DOT text runs
 * outside the lock but uses the graph's private mark scratch (ox_graph_inputs), so two
 * threads may render two different graphs at once, never the same graph. Only "svg" and "png:cairo"
 * are ever requested: the jpg/bmp/tif/gdk/gtk formats would load Graphviz's GTK 2 plugins
 * into a process that may be running GTK 4.
 *
 * Graphviz reports problems through agerr, which prints to stderr by default; while we hold
 * the lock an agseterrf handler collects them instead. On failure they become the error
 * message; on success any warnings are left in err (empty string when there were none).
 */
#include "ox_write.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

static pthread_mutex_t render_lock = PTHREAD_MUTEX_INITIALIZER;
static GVC_t *render_gvc; /* created on first use, under render_lock; never freed */
static OxBuf *render_msgs; /* where the agerr handler appends; only set under render_lock */

/* agerr hands the handler a message in pieces ("Warning", ": ", text); keep them all. */
static int collect_agerr(char *msg) {
  if (render_msgs && msg) ox_buf_puts(render_msgs, msg);
  return 0;
}

/* Copies the collected messages into err as one line: newlines become "; ", the trailing
 * one is dropped. */
static void msgs_to_err(const OxBuf *msgs, const char *prefix, char *err, size_t errcap) {
  if (!err || !errcap) return;
  size_t o = 0;
  err[0] = 0;
  if (prefix) {
    snprintf(err, errcap, "%s", prefix);
    o = strlen(err);
  }
  if (!msgs->len) return;
  if (prefix && o + 2 < errcap) {
    memcpy(err + o, ": ", 3);
    o += 2;
  }
  for (size_t i = 0; i < msgs->len && o + 1 < errcap; i++) {
    char c = msgs->data[i];
    if (c == '\n') {
      bool last = true;
      for (size_t j = i + 1; j < msgs->len; j++)
        if (msgs->data[j] != '\n' && msgs->data[j] != ' ') last = false;
      if (last) break;
      if (o + 3 >= errcap) break;
      err[o++] = ';';
      err[o++] = ' ';
    } else {
      err[o++] = c;
    }
  }
  err[o] = 0;
}

static void set_err(char *err, size_t errcap, const char *msg) {
  if (err && errcap) snprintf(err, errcap, "%s", msg);
}

int ox_render(const OxGraph *g, const OxDotOptions *opt, const char *format, OxBuf *out, char *err,
              size_t errcap) {
  const char *device;
  if (err && errcap) err[0] = 0;
  if (format && strcmp(format, "svg") == 0) {
    device = "svg";
  } else if (format && strcmp(format, "png") == 0) {
    device = "png:cairo";
  } else {
    if (err && errcap)
      snprintf(err, errcap, "cannot render to format '%s': only svg and png are supported",
               format ? format : "(none)");
    return -1;
  }

  OxBuf dot;
  ox_buf_init(&dot);
  ox_write_dot(g, opt, &dot);

  OxBuf msgs;
  ox_buf_init(&msgs);
  int rc = -1;
  const char *what = NULL;

  pthread_mutex_lock(&render_lock);
  render_msgs = &msgs;
  agusererrf prev_errf = agseterrf(collect_agerr);
  if (!render_gvc) render_gvc = gvContext();
  if (!render_gvc) {
    what = "graphviz: could not create a context";
  } else {
    Agraph_t *ag = agmemread(dot.data);
    if (!ag) {
      what = "graphviz could not parse the generated DOT";
    } else {
      gvFreeLayout(render_gvc, ag); /* safe without a layout; keeps the pairing obvious */
      if (gvLayout(render_gvc, ag, "dot") != 0) {
        what = "graphviz layout failed";
      } else {
        char *data = NULL;
        unsigned int len = 0;
        if (gvRenderData(render_gvc, ag, device, &data, &len) != 0 || !data) {
          what = "graphviz rendering failed";
        } else {
          ox_buf_append(out, data, len);
          rc = 0;
        }
        if (data) gvFreeRenderData(data);
      }
      gvFreeLayout(render_gvc, ag);
      agclose(ag);
    }
  }
  agseterrf(prev_errf);
  render_msgs = NULL;
  pthread_mutex_unlock(&render_lock);

  if (rc == 0)
    msgs_to_err(&msgs, NULL, err, errcap);
  else if (msgs.len)
    msgs_to_err(&msgs, what, err, errcap);
  else
    set_err(err, errcap, what);
  ox_buf_free(&msgs);
  ox_buf_free(&dot);
  return rc;
}
