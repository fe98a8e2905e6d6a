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
 *
 * In-process Graphviz cannot be interrupted, so the CLI and the debugger do not call this file
 * directly: the optimus-layout helper process does (ox_gv_layout_text, ox_gv_render_text, on
 * the DOT text it is sent), and ox_layout.c kills it at the caller's time budget.
 */
#include "layout/ox_layout.h"
#include "write/ox_write.h"

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
  if (err && errcap) err[0] = 0;
  if (!format || (strcmp(format, "svg") != 0 && strcmp(format, "png") != 0)) {
    if (err && errcap)
      snprintf(err, errcap, "cannot render to format '%s': only svg and png are supported",
               format ? format : "(none)");
    return -1;
  }
  OxBuf dot;
  ox_buf_init(&dot);
  ox_write_dot(g, opt, &dot);
  int rc = ox_gv_render_text(dot.data, "dot", format, out, err, errcap);
  ox_buf_free(&dot);
  return rc;
}

/* ================================================================== DOT text in, layout or picture out */

#include <stdlib.h>
#include <time.h>

#include "ir/ox_mem.h"
#include "layout/ox_layout_sub.h"

/* Node "n<ID>" -> ID, 0 if the name is not of that form. */
static OxNodeId node_key(const char *name) {
  if (!name || name[0] != 'n' || name[1] < '0' || name[1] > '9') return 0;
  char *end;
  unsigned long v = strtoul(name + 1, &end, 10);
  return *end || v == 0 || v > UINT32_MAX ? 0 : (OxNodeId)v;
}

static int cmp_lnode(const void *a, const void *b) {
  const OxLayoutNode *x = a, *y = b;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* Reads the geometry of a laid-out graph (under render_lock). */
static OxLayout *extract(Agraph_t *ag) {
  OxLayout *l = ox_xcalloc(1, sizeof *l);
  l->engine = OX_LAYOUT_DOT;
  boxf bb = GD_bb(ag);
  l->width = bb.UR.x - bb.LL.x;
  l->height = bb.UR.y - bb.LL.y;
  double top = bb.UR.y, left = bb.LL.x;
  uint32_t nn = (uint32_t)agnnodes(ag), ne = (uint32_t)agnedges(ag);
  l->nodes = ox_xcalloc(nn + 1, sizeof *l->nodes);
  l->edges = ox_xcalloc(ne + 1, sizeof *l->edges);
  for (Agnode_t *an = agfstnode(ag); an; an = agnxtnode(ag, an)) {
    OxNodeId id = node_key(agnameof(an));
    if (!id) continue;
    OxLayoutNode *ln = &l->nodes[l->n_nodes++];
    ln->id = id;
    ln->x = ND_coord(an).x - left;
    ln->y = top - ND_coord(an).y;
    ln->w = ND_width(an) * 72.0;
    ln->h = ND_height(an) * 72.0;
    for (Agedge_t *e = agfstout(ag, an); e; e = agnxtout(ag, e)) {
      OxNodeId to = node_key(agnameof(aghead(e)));
      if (!to || l->n_edges == ne) continue;
      OxLayoutEdge *le = &l->edges[l->n_edges++];
      le->from = id;
      le->to = to;
      splines *sp = ED_spl(e);
      if (sp && sp->size > 0) {
        bezier *bz = &sp->list[0];
        le->n_pts = (uint32_t)bz->size;
        le->pts = ox_xcalloc((bz->size ? (size_t)bz->size : 1) * 2, sizeof(double));
        for (int i = 0; i < bz->size; i++) {
          le->pts[2 * i] = bz->list[i].x - left;
          le->pts[2 * i + 1] = top - bz->list[i].y;
        }
        if (bz->eflag) {
          le->has_arrow = true;
          le->ax = bz->ep.x - left;
          le->ay = top - bz->ep.y;
        }
      }
    }
  }
  qsort(l->nodes, l->n_nodes, sizeof *l->nodes, cmp_lnode);
  return l;
}

static bool engine_ok(const char *engine) {
  return engine && (strcmp(engine, "dot") == 0 || strcmp(engine, "nop2") == 0);
}

int ox_gv_layout_text(const char *dot, const char *engine, OxLayout **out, char *err, size_t errcap) {
  *out = NULL;
  if (err && errcap) err[0] = 0;
  if (!engine_ok(engine)) {
    set_err(err, errcap, "unknown layout engine");
    return -1;
  }
  OxBuf msgs;
  ox_buf_init(&msgs);
  const char *what = NULL;
  int rc = -1;
  pthread_mutex_lock(&render_lock);
  render_msgs = &msgs;
  agusererrf prev_errf = agseterrf(collect_agerr);
  if (!render_gvc) render_gvc = gvContext();
  if (!render_gvc) {
    what = "graphviz: could not create a context";
  } else {
    Agraph_t *ag = agmemread(dot);
    if (!ag) {
      what = "graphviz could not parse the layout request";
    } else {
      struct timespec t0, t1;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      gvFreeLayout(render_gvc, ag);
      if (gvLayout(render_gvc, ag, engine) != 0) {
        what = "graphviz layout failed";
      } else {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        *out = extract(ag);
        (*out)->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        rc = 0;
      }
      gvFreeLayout(render_gvc, ag);
      agclose(ag);
    }
  }
  agseterrf(prev_errf);
  render_msgs = NULL;
  pthread_mutex_unlock(&render_lock);
  if (rc != 0) {
    if (msgs.len)
      msgs_to_err(&msgs, what, err, errcap);
    else
      set_err(err, errcap, what ? what : "layout failed");
  }
  ox_buf_free(&msgs);
  return rc;
}

int ox_gv_render_text(const char *dot, const char *engine, const char *format, OxBuf *out, char *err,
                      size_t errcap) {
  if (err && errcap) err[0] = 0;
  const char *device = format && strcmp(format, "svg") == 0 ? "svg" : format && strcmp(format, "png") == 0 ? "png:cairo" : NULL;
  if (!device || !engine_ok(engine)) {
    if (!device && err && errcap)
      snprintf(err, errcap, "cannot render to format '%s': only svg and png are supported", format ? format : "(none)");
    else
      set_err(err, errcap, "unknown layout engine");
    return -1;
  }
  OxBuf msgs;
  ox_buf_init(&msgs);
  const char *what = NULL;
  int rc = -1;
  pthread_mutex_lock(&render_lock);
  render_msgs = &msgs;
  agusererrf prev_errf = agseterrf(collect_agerr);
  if (!render_gvc) render_gvc = gvContext();
  if (!render_gvc) {
    what = "graphviz: could not create a context";
  } else {
    Agraph_t *ag = agmemread(dot);
    if (!ag) {
      what = "graphviz could not parse the DOT";
    } else {
      gvFreeLayout(render_gvc, ag);
      if (gvLayout(render_gvc, ag, engine) != 0) {
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
  return rc;
}

int ox_layout_compute(const OxGraph *g, const OxNodeId *subset, uint32_t n, const OxLayoutOptions *opt,
                      OxLayout **out, char *err, size_t errcap) {
  *out = NULL;
  OxLSub s;
  if (ox_lsub_build(g, subset, n, opt, &s, err, errcap) != 0) return -1;
  if (ox_layout_cancelled(opt)) {
    ox_lsub_free(&s);
    set_err(err, errcap, "cancelled");
    return -1;
  }
  OxBuf dot;
  ox_buf_init(&dot);
  ox_lsub_request_dot(&s, opt, &dot);
  int rc = ox_gv_layout_text(dot.data, "dot", out, err, errcap);
  ox_buf_free(&dot);
  if (rc == 0 && ox_layout_cancelled(opt)) {
    ox_layout_free(*out);
    *out = NULL;
    set_err(err, errcap, "cancelled");
    rc = -1;
  }
  if (rc == 0) ox_lsub_add_stubs(&s, NULL, *out, opt && opt->rankdir && strcmp(opt->rankdir, "LR") == 0);
  ox_lsub_free(&s);
  return rc;
}
