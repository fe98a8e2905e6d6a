/* ox_layout.h - layouts of a graph (or a subset of its nodes) into plain structs the UI draws
 * itself (cairo) and the CLI renders: Graphviz `dot` in a child process that a time budget can
 * kill, and our own layered layout, near-linear, as the fallback and for large requests.
 *
 * Coordinates are in points with y growing DOWN (Graphviz's y is flipped for the UI), origin
 * at the top-left of the bounding box. Node boxes are centred at (x, y). Edge splines are
 * cubic Bezier control points (1 + 3k points) from the producer to the consumer, plus the
 * arrow tip when one is drawn.
 *
 * Why a child process: Graphviz is not thread-safe and cannot be interrupted, and its cost
 * depends on the graph's shape more than its size (a 1,242-node ViT dump keeps dot busy for
 * minutes). ox_layout_auto hands dot to a helper process (`optimus-layout`, the only code that
 * links Graphviz besides ox_render.c's in-process entry points), kills it when the budget or
 * a cancel flag says so (which also isolates a Graphviz crash), and then lays the graph out
 * with ox_layout_layered instead, saying so in the result's note.
 *
 * Hubs: a node with many users whose edges would cross most of the picture (a symbolic size,
 * a seed, a constant used by dozens of nodes) gets per-use stubs instead of long edges: the
 * edge is kept with `stub` set and a short spline above its consumer, and the layout engines
 * never see it.
 *
 * Thread safety: every function here may run on a worker thread on a graph no thread mutates
 * (inputs are collected with ox_graph_inputs_r, never the graph's mark scratch). The in-process
 * ox_layout_compute takes the process-wide Graphviz lock.
 */
#ifndef OX_LAYOUT_H
#define OX_LAYOUT_H

#include <stdatomic.h>

#include "ir/ox_buf.h"
#include "ir/ox_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct OxLayoutNode {
  OxNodeId id;
  double x, y, w, h;   /* centre and size, points */
} OxLayoutNode;

enum { OX_STUB_AT_TO = 1, OX_STUB_AT_FROM = 2 };

typedef struct OxLayoutEdge {
  OxNodeId from, to;   /* producer -> consumer */
  uint32_t n_pts;
  double *pts;         /* x0,y0,x1,y1,... (n_pts points) */
  bool has_arrow;
  uint8_t stub;        /* a hub's edge drawn as a short stub: OX_STUB_AT_TO above the consumer
                          (labelled with the producer), OX_STUB_AT_FROM below the producer
                          (labelled with the consumer); 0 = a normal edge */
  double ax, ay;       /* arrow tip */
} OxLayoutEdge;

typedef enum OxLayoutEngine {
  OX_LAYOUT_AUTO = 0,  /* dot in the helper within the time budget, else layered */
  OX_LAYOUT_DOT,       /* dot only (in the helper; fails on timeout) */
  OX_LAYOUT_LAYERED,   /* our own layered layout only */
  OX_LAYOUT_DOT_INPROC /* dot in this process (ox_layout_compute; the helper itself uses it) */
} OxLayoutEngine;

typedef struct OxLayout {
  double width, height;
  OxLayoutNode *nodes; uint32_t n_nodes;
  OxLayoutEdge *edges; uint32_t n_edges;
  double seconds;      /* time spent laying out (dot: in gvLayout; layered: the whole layout) */
  OxLayoutEngine engine; /* OX_LAYOUT_DOT or OX_LAYOUT_LAYERED: who made it */
  uint32_t n_stubs;    /* edges drawn as stubs */
  bool dot_timed_out;  /* layered because dot did not finish within the time budget */
  char note[200];      /* why layered was used when dot was asked for ("dot did not finish within
                          2.0 s"), else "" */
} OxLayout;

typedef struct OxLayoutOptions {
  const char *rankdir;     /* "TB" (default) or "LR" */
  uint32_t max_nodes;      /* node budget; 0 = 3000. Over it the layout is refused. */
  atomic_bool *cancel;     /* optional; polled while dot runs, checked between layered phases */
  bool with_shapes;        /* size nodes for a third label line with the shape */
  OxLayoutEngine engine;   /* ox_layout_auto: which engine (default AUTO) */
  double time_budget;      /* seconds dot may take in AUTO/DOT (0 = 5 s) */
  uint32_t dot_max_nodes;  /* AUTO: requests above this go straight to layered (0 = 1500) */
  double aspect;           /* layered: target width / height (0 = no wrapping of wide ranks) */
  const float *sizes;      /* optional box sizes in points, (w, h) pairs: parallel to subset, or
                              indexed by node id when subset is NULL; else estimated from labels */
  uint32_t hub_users;      /* a node with at least this many users in the subset draws its edges
                              that span more than two ranks as stubs (0 = 12; UINT32_MAX = never) */
  const char *helper;      /* path of the optimus-layout helper; NULL = ox_layout_helper_path() */
} OxLayoutOptions;

/* Lays out with the engine opt->engine asks for (AUTO by default): dot in the helper process
 * within the time budget when the request is at most dot_max_nodes, else (or when dot fails,
 * times out or crashes) ox_layout_layered, with the reason in out->note. Returns 0 and *out,
 * or -1 with err ("over the node budget: 4200 > 3000", "cancelled"). */
int ox_layout_auto(const OxGraph *g, const OxNodeId *subset, uint32_t n, const OxLayoutOptions *opt, OxLayout **out,
                   char *err, size_t errcap);

/* Our own layered layout (ox_layered.c): longest-path ranks with sources pulled down to their
 * users, barycentric ordering (a few down/up sweeps, the ordering with fewest crossings kept),
 * wide ranks wrapped into rows to reach opt->aspect, coordinates by weighted isotonic regression
 * per row (no overlaps, edges as straight as the order allows), long edges routed through
 * virtual nodes, hubs drawn as stubs. O((V + E') log V) for E' the edges plus virtual nodes. */
int ox_layout_layered(const OxGraph *g, const OxNodeId *subset, uint32_t n, const OxLayoutOptions *opt,
                      OxLayout **out, char *err, size_t errcap);

/* Graphviz dot in the helper process (killed after opt->time_budget or on cancel). */
int ox_layout_dot(const OxGraph *g, const OxNodeId *subset, uint32_t n, const OxLayoutOptions *opt, OxLayout **out,
                  char *err, size_t errcap);

/* Graphviz dot in this process, under the process-wide Graphviz lock (ox_render.c). Cannot be
 * interrupted once gvLayout runs; only the helper and tests call it. */
int ox_layout_compute(const OxGraph *g, const OxNodeId *subset, uint32_t n, const OxLayoutOptions *opt,
                      OxLayout **out, char *err, size_t errcap);

void ox_layout_free(OxLayout *l);
/* Index of node id in l->nodes, or -1 (binary search; nodes are sorted by id). */
int32_t ox_layout_find(const OxLayout *l, OxNodeId id);
/* The label lines a box is sized for: line 0 name, line 1 short target, line 2 shape. */
void ox_layout_label(const OxGraph *g, OxNodeId id, bool with_shapes, char lines[3][160]);
/* Width in points of text in DejaVu Sans at size pt (the font Graphviz and the app use), from
 * per-character advances; no font files are read. */
double ox_layout_text_width(const char *s, double pt);
/* The box size the label lines need at 10 pt (what dot would make of them). */
void ox_layout_label_size(const char lines[3][160], double *w, double *h);

/* The helper path: $OX_LAYOUT_HELPER, else optimus-layout next to the running executable (or
 * in ../app when running from the build tree's tests/), else the installed libexec path.
 * Returns buf, or NULL when none is executable. */
const char *ox_layout_helper_path(char *buf, size_t cap);

/* ---------------------------------------------------------------- the helper's protocol */

/* A request is one header line then DOT text: "layout TB\n" (fixed-size nodes named n<ID>),
 * "render svg dot\n" / "render png nop2\n" (nop2: every node and edge carries pos). The
 * answer to a layout is ox_layout_serialize's text; to a render, the bytes. */
void ox_layout_serialize(const OxLayout *l, OxBuf *out);
/* Parses ox_layout_serialize's text; NULL with err on malformed input. */
OxLayout *ox_layout_parse(const char *text, size_t len, char *err, size_t errcap);
/* In-process Graphviz on DOT text (the helper's side; ox_render.c): lays out with engine ("dot",
 * "nop2") and extracts the layout of nodes named n<ID>, or renders to "svg"/"png". */
int ox_gv_layout_text(const char *dot, const char *engine, OxLayout **out, char *err, size_t errcap);
int ox_gv_render_text(const char *dot, const char *engine, const char *format, OxBuf *out, char *err, size_t errcap);

/* Runs the helper with `input` on stdin, collecting stdout into out, within timeout seconds
 * (<= 0: no limit) and while *cancel (optional) stays false; kills it otherwise. Returns 0 on
 * exit status 0, else -1 with err (its stderr, "timed out after 2.0 s", "cancelled", "crashed
 * (signal 11)", "not found"). *timed_out (optional) tells a timeout apart. */
int ox_layout_run_helper(const char *helper, const char *input, size_t len, double timeout, atomic_bool *cancel,
                         OxBuf *out, bool *timed_out, char *err, size_t errcap);

#ifdef __cplusplus
}
#endif
#endif
