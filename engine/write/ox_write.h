/* ox_write.h - writers: our JSON, print(graph) FX text, DOT, and SVG/PNG via Graphviz.
 *
 * Every writer fills an OxBuf; ox_save_* helpers write it atomically (ox_buf.h).
 * JSON is lossless for everything in the IR (docs/format-json.md); FX text is what
 * print(graph) prints, with Inductor-style Tensor "f32[..][..]dev" annotations where meta
 * is known, and round-trips names, targets, args, kwargs and meta through ox_parse_fx_text.
 */
#ifndef OX_WRITE_H
#define OX_WRITE_H

#include "ir/ox_buf.h"
#include "load/ox_doc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* JSON: a whole document (all graphs, subgraphs, record). */
void ox_write_json(const OxDoc *doc, OxBuf *out);
/* FX text: one graph, "graph():" header, node lines, "return ..." line; subgraphs are
 * written as nested "lowered graph():" blocks under their owning node. */
void ox_write_fx_text(const OxGraph *g, OxBuf *out);
/* Formats one value the way torch.fx prints args ("%x", "[1, 2]", "(%a,)", "{dim: 1}"). */
void ox_write_fx_value(const OxGraph *g, const OxValue *v, OxBuf *out);

/* Highlight marks (OxDotOptions.highlight), each also an SVG class of the node: a step as the
 * debugger shows it. */
enum {
  OX_DOT_MARK_NONE = 0,
  OX_DOT_MARK_MATCHED = 1, /* "ox-matched": a matched node / candidate of the step */
  OX_DOT_MARK_REMOVED = 2, /* "ox-removed": removed by the step (dashed) */
  OX_DOT_MARK_ADDED = 3,   /* "ox-added": added by the step */
  OX_DOT_MARK_ANCHOR = 4,  /* "ox-anchor": the step's anchor (double border) */
  OX_DOT_MARK_DIMMED = 5,  /* "ox-dimmed": untouched by the step (faded) */
  OX_DOT_MARKS
};
/* A fill colour given per node (OxDotOptions.fill): OX_DOT_RGB(0xRRGGBB); 0 = the family's. */
#define OX_DOT_RGB(rgb) (0x1000000u | ((uint32_t)(rgb) & 0xffffffu))

typedef struct OxDotOptions {
  bool edge_shapes;        /* label edges with the producer's shape */
  const uint8_t *highlight;/* optional per-node-id mark (OX_DOT_MARK_*); may be NULL */
  const char *rankdir;     /* "TB" (default) or "LR" */
  const uint8_t *include;  /* optional per-node-id flag: draw only these nodes (a bounded view); NULL = all */
  const struct OxLayout *layout; /* optional: positions for every drawn node and edge (pos=, for
                                    Graphviz's nop2: draws a layout made elsewhere, in linear time) */
  const uint32_t *fold;    /* optional per-node-id (ox_view_fold_params): folded parameters are not
                              drawn, their consumers say "+N params" (n_params) */
  const uint16_t *n_params;
  const uint32_t *fill;    /* optional per-node-id fill, OX_DOT_RGB(0xRRGGBB) (0: the family's): a front end's
                              palette, so a picture matches its window */
  const uint32_t *mark_rgb;/* optional [OX_DOT_MARKS] border colours of the marks (0xRRGGBB); NULL: defaults */
  bool legend;             /* a legend of the marks used (and the fills' families) at the top right, class
                              "ox-legend"; drawn beside a given layout, elsewhere placed by dot */
  const char *const *legend_fill_names; /* optional, with legend: [n_legend_fills] names of fills to list */
  const uint32_t *legend_fills;         /* their colours (0xRRGGBB) */
  uint32_t n_legend_fills;
} OxDotOptions;

/* "torch.ops.aten.addmm.default" -> "addmm": the short target shown in labels. */
void ox_short_target(const char *target, char *buf, size_t cap);
/* A node's meta as shown in labels ("f32[8, 16]", "(f32[4], f32[4])"); empty if unknown. */
void ox_meta_text(const OxMeta *m, char *buf, size_t cap);

/* DOT with HTML-like labels (no record shapes); node colour by op family. */
void ox_write_dot(const OxGraph *g, const OxDotOptions *opt, OxBuf *out);

/* The box a node's DOT label needs (points), as ox_write_dot writes it: for laying it out with
 * something other than dot and rendering the result with positions. */
void ox_write_dot_node_size(const OxGraph *g, const OxDotOptions *opt, OxNodeId id, double *w, double *h);

/* Renders like ox_render, but Graphviz runs in the optimus-layout helper (ox_layout.h): the
 * drawing is laid out by ox_layout_auto with lo's engine and budget (lo may be NULL: AUTO, 10 s,
 * dot up to 1,500 nodes, else or when dot is slower, fails or crashes our layered layout; hub
 * edges as stubs either way), then Graphviz draws that layout at its positions (nop2, linear).
 * note (optional) says when our layout drew it and why ("dot did not finish within 10.0 s;
 * drawn with the built-in layered layout"), "" when dot did. Returns 0, or -1 with err. */
struct OxLayoutOptions;
int ox_render_auto(const OxGraph *g, const OxDotOptions *opt, const char *format, const struct OxLayoutOptions *lo,
                   OxBuf *out, char *note, size_t notecap, char *err, size_t errcap);

/* Lays out with dot and renders in-process with gvc ("svg" or "png", which is png:cairo).
 * Never loads Graphviz's GTK 2 plugins. Not thread-safe (Graphviz is not): callers
 * serialise. Returns 0, or -1 with err filled. */
int ox_render(const OxGraph *g, const OxDotOptions *opt, const char *format, OxBuf *out,
              char *err, size_t errcap);

#ifdef __cplusplus
}
#endif
#endif
