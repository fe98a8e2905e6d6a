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

/* ================================================================== layout for the UI */

#include <stdlib.h>
#include <time.h>

#include "ox_layout.h"

void ox_layout_label(const OxGraph *g, OxNodeId id, bool with_shapes, char lines[3][160]) {
  const OxNode *n = &g->nodes[id];
  snprintf(lines[0], 160, "%s", n->name);
  if (n->op == OX_OP_CALL_FUNCTION || n->op == OX_OP_CALL_METHOD || n->op == OX_OP_CALL_MODULE) {
    char t[160];
    ox_short_target(n->module_type && n->op == OX_OP_CALL_MODULE ? n->module_type : n->target, t, sizeof t);
    snprintf(lines[1], 160, "%s", t);
  } else {
    snprintf(lines[1], 160, "%s", ox_op_name((OxOp)n->op));
  }
  lines[2][0] = 0;
  if (with_shapes) ox_meta_text(&n->meta, lines[2], 160);
}

static int cmp_layout_node(const void *a, const void *b) {
  const OxLayoutNode *x = a, *y = b;
  return x->id < y->id ? -1 : x->id > y->id;
}

int32_t ox_layout_find(const OxLayout *l, OxNodeId id) {
  int32_t lo = 0, hi = (int32_t)l->n_nodes - 1;
  while (lo <= hi) {
    int32_t mid = (lo + hi) / 2;
    if (l->nodes[mid].id == id) return mid;
    if (l->nodes[mid].id < id)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

void ox_layout_free(OxLayout *l) {
  if (!l) return;
  for (uint32_t i = 0; i < l->n_edges; i++) free(l->edges[i].pts);
  free(l->edges);
  free(l->nodes);
  free(l);
}

static bool cancelled(const OxLayoutOptions *o) { return o && o->cancel && atomic_load(o->cancel); }

int ox_layout_compute(const OxGraph *g, const OxNodeId *subset, uint32_t n, const OxLayoutOptions *opt,
                      OxLayout **out, char *err, size_t errcap) {
  *out = NULL;
  if (err && errcap) err[0] = 0;
  uint32_t budget = opt && opt->max_nodes ? opt->max_nodes : 3000;
  bool with_shapes = opt && opt->with_shapes;
  /* which nodes: mark them, in id order */
  uint8_t *in = calloc(g->n_nodes + 1, 1);
  uint32_t count = 0;
  if (subset) {
    for (uint32_t i = 0; i < n; i++) {
      const OxNode *x = ox_graph_node(g, subset[i]);
      if (x && !x->erased && !in[subset[i]]) {
        in[subset[i]] = 1;
        count++;
      }
    }
  } else {
    OX_GRAPH_FOREACH(g, id) {
      in[id] = 1;
      count++;
    }
  }
  if (count > budget) {
    if (err) snprintf(err, errcap, "over the node budget: %u > %u nodes", count, budget);
    free(in);
    return -1;
  }
  if (cancelled(opt)) {
    if (err) snprintf(err, errcap, "cancelled");
    free(in);
    return -1;
  }
  OxLayout *l = calloc(1, sizeof *l);
  l->nodes = calloc(count + 1, sizeof *l->nodes);
  Agnode_t **agn = calloc(g->n_nodes + 1, sizeof *agn);
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
    Agraph_t *ag = agopen((char *)"G", Agdirected, NULL);
    agattr(ag, AGRAPH, (char *)"rankdir", (char *)(opt && opt->rankdir ? opt->rankdir : "TB"));
    agattr(ag, AGRAPH, (char *)"nodesep", (char *)"0.25");
    agattr(ag, AGRAPH, (char *)"ranksep", (char *)"0.35");
    if (count > 1000) { /* dot's network simplex is the cost on big graphs: bound it */
      agattr(ag, AGRAPH, (char *)"nslimit", (char *)"2");
      agattr(ag, AGRAPH, (char *)"mclimit", (char *)"0.5");
    }
    agattr(ag, AGNODE, (char *)"shape", (char *)"box");
    agattr(ag, AGNODE, (char *)"fontname", (char *)"DejaVu Sans");
    agattr(ag, AGNODE, (char *)"fontsize", (char *)"10");
    agattr(ag, AGNODE, (char *)"margin", (char *)"0.12,0.04");
    agattr(ag, AGNODE, (char *)"label", (char *)"");
    char key[32];
    for (OxNodeId id = 1; id < g->n_nodes; id++) {
      if (!in[id]) continue;
      snprintf(key, sizeof key, "n%u", id);
      Agnode_t *an = agnode(ag, key, 1);
      char lines[3][160], label[500];
      ox_layout_label(g, id, with_shapes, lines);
      snprintf(label, sizeof label, "%s\n%s%s%s", lines[0], lines[1], lines[2][0] ? "\n" : "", lines[2]);
      agsafeset(an, (char *)"label", label, (char *)"");
      agn[id] = an;
    }
    OxNodeId ins[256];
    for (OxNodeId id = 1; id < g->n_nodes; id++) {
      if (!in[id]) continue;
      uint32_t k = ox_graph_inputs(g, id, ins, 256);
      if (k > 256) k = 256; /* a node with more inputs draws its first 256 edges */
      for (uint32_t i = 0; i < k; i++)
        if (in[ins[i]]) agedge(ag, agn[ins[i]], agn[id], NULL, 1);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gvFreeLayout(render_gvc, ag);
    if (gvLayout(render_gvc, ag, "dot") != 0) {
      what = "graphviz layout failed";
    } else {
      clock_gettime(CLOCK_MONOTONIC, &t1);
      l->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
      boxf bb = GD_bb(ag);
      l->width = bb.UR.x - bb.LL.x;
      l->height = bb.UR.y - bb.LL.y;
      double top = bb.UR.y, left = bb.LL.x;
      uint32_t ne = 0;
      for (OxNodeId id = 1; id < g->n_nodes; id++) {
        if (!in[id]) continue;
        Agnode_t *an = agn[id];
        OxLayoutNode *ln = &l->nodes[l->n_nodes++];
        ln->id = id;
        ln->x = ND_coord(an).x - left;
        ln->y = top - ND_coord(an).y;
        ln->w = ND_width(an) * 72.0;
        ln->h = ND_height(an) * 72.0;
        for (Agedge_t *e = agfstout(ag, an); e; e = agnxtout(ag, e)) ne++;
      }
      l->edges = calloc(ne + 1, sizeof *l->edges);
      for (OxNodeId id = 1; id < g->n_nodes; id++) {
        if (!in[id]) continue;
        for (Agedge_t *e = agfstout(ag, agn[id]); e; e = agnxtout(ag, e)) {
          OxLayoutEdge *le = &l->edges[l->n_edges++];
          le->from = id;
          le->to = (OxNodeId)strtoul(agnameof(aghead(e)) + 1, NULL, 10);
          splines *sp = ED_spl(e);
          if (sp && sp->size > 0) {
            bezier *bz = &sp->list[0];
            le->n_pts = (uint32_t)bz->size;
            le->pts = malloc((bz->size ? bz->size : 1) * 2 * sizeof(double));
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
      rc = 0;
    }
    gvFreeLayout(render_gvc, ag);
    agclose(ag);
  }
  agseterrf(prev_errf);
  render_msgs = NULL;
  pthread_mutex_unlock(&render_lock);
  free(agn);
  free(in);
  if (rc == 0 && cancelled(opt)) {
    rc = -1;
    what = "cancelled";
  }
  if (rc != 0) {
    if (msgs.len)
      msgs_to_err(&msgs, what, err, errcap);
    else
      set_err(err, errcap, what ? what : "layout failed");
    ox_layout_free(l);
  } else {
    qsort(l->nodes, l->n_nodes, sizeof *l->nodes, cmp_layout_node);
    *out = l;
  }
  ox_buf_free(&msgs);
  return rc;
}
