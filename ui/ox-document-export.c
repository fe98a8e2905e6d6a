/* ox-document-export.c - exports (ox-document-private.h): the bytes of a graph or trace in a
 * writer's format (ox_export_bytes), the shown step as the canvas draws it and its SVG/PNG with
 * marks, colours and legend (ox_document_step_picture, ox_export_picture_bytes), and
 * ox_document_export, written atomically. The byte builders own nothing of the document, so the
 * window runs them on a worker thread.
 */
#include "ox-document-private.h"

#include <string.h>

#include "layout/ox_layout.h"
#include "write/ox_write.h"

/* ---- export */

GBytes *ox_export_bytes(const OxGraph *g, const OxTrace *t, const char *format, gboolean edge_shapes,
                        char **note_out, GError **error) {
  OxBuf b;
  ox_buf_init(&b);
  if (strcmp(format, "trace") == 0) {
    if (!t) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "there is no trace to export");
      return NULL;
    }
    ox_trace_write_json(t, &b);
  } else if (!g) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "there is no graph to export");
    return NULL;
  } else if (strcmp(format, "json") == 0) {
    OxGraph *one = (OxGraph *)g;
    OxDoc doc = {.format = OX_FMT_JSON, .graphs = &one, .n_graphs = 1, .record = NULL};
    ox_write_json(&doc, &b);
  } else if (strcmp(format, "fx") == 0) {
    ox_write_fx_text(g, &b);
  } else if (strcmp(format, "dot") == 0 || strcmp(format, "svg") == 0 || strcmp(format, "png") == 0) {
    OxDotOptions o = {.edge_shapes = edge_shapes, .highlight = NULL, .rankdir = "TB"};
    if (strcmp(format, "dot") == 0) {
      ox_write_dot(g, &o, &b);
    } else {
      /* Graphviz in the helper within 10 s, else our layered layout drawn by it: a 100k-node
       * graph exports in seconds instead of hanging the export */
      char err[512] = "", note[300] = "";
      OxLayoutOptions lo = {.time_budget = 10};
      if (note_out) *note_out = NULL;
      if (ox_render_auto(g, &o, format, &lo, &b, note, sizeof note, err, sizeof err) != 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", err);
        ox_buf_free(&b);
        return NULL;
      }
      if (note_out && note[0]) *note_out = g_strdup(note);
    }
  } else {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "unknown export format '%s'", format);
    return NULL;
  }
  GBytes *bytes = g_bytes_new(b.data ? b.data : "", b.len);
  ox_buf_free(&b);
  return bytes;
}

/* A value of graph `from` copied into graph `to`, node references resolved by name (a name `to`
 * does not have becomes None). */
static OxValue remap_value(const OxGraph *from, OxGraph *to, const OxValue *v) {
  if (v->kind == OX_V_NODE) {
    const OxNode *n = ox_graph_node(from, v->u.node);
    OxNodeId id = n ? ox_graph_find(to, n->name) : 0;
    return id ? ox_value_node(id) : ox_value_none();
  }
  if ((v->kind == OX_V_LIST || v->kind == OX_V_TUPLE || v->kind == OX_V_SLICE || v->kind == OX_V_DICT) && v->n) {
    OxValue *items = g_new(OxValue, v->n);
    for (guint32 i = 0; i < v->n; i++) items[i] = remap_value(from, to, &v->u.items[i]);
    OxValue r = v->kind == OX_V_DICT ? ox_graph_value_dict(to, (const char *const *)v->keys, items, v->n)
                                     : ox_graph_value_seq(to, (OxValueKind)v->kind, items, v->n);
    g_free(items);
    return r;
  }
  return ox_graph_value_copy(to, v);
}

static guint8 state_mark(guint8 st) {
  switch ((OxNodeState)st) {
  case OX_NS_ANCHOR: return OX_DOT_MARK_ANCHOR;
  case OX_NS_MATCHED: return OX_DOT_MARK_MATCHED;
  case OX_NS_REMOVED: return OX_DOT_MARK_REMOVED;
  case OX_NS_ADDED: return OX_DOT_MARK_ADDED;
  case OX_NS_DIMMED: return OX_DOT_MARK_DIMMED;
  default: return OX_DOT_MARK_NONE;
  }
}

OxGraph *ox_document_step_picture(OxDocument *self, guint8 **marks, guint32 **fills) {
  *marks = NULL;
  *fills = NULL;
  if (!self->history) return NULL;
  const OxHistory *h = self->history;
  OxGraph *shown = ox_document_get_graph(self);
  OxGraph *pic = ox_graph_clone(shown);
  guint k = ox_document_get_shown_gstep(self);
  const OxStep *st = ox_document_get_step(self);
  /* the after view of a rewrite shows the nodes it removed too: add them, wired to their inputs */
  GHashTable *removed = g_hash_table_new(g_str_hash, g_str_equal);
  if (st && !self->show_before && self->k_before != self->k_after && st->n_removed && self->g_before) {
    OxGraph *gb = self->g_before;
    for (guint32 i = 0; i < st->n_removed; i++) g_hash_table_add(removed, (gpointer)st->removed[i]);
    OX_GRAPH_FOREACH(gb, id) {
      const OxNode *n = &gb->nodes[id];
      if (!g_hash_table_contains(removed, n->name)) continue;
      OxValue args = remap_value(gb, pic, &n->args), kwargs = remap_value(gb, pic, &n->kwargs);
      OxNodeId nid = ox_graph_add_node(pic, (OxOp)n->op, n->name, n->target, args, kwargs);
      ox_graph_set_meta(pic, nid, &n->meta);
    }
  }
  guint n_st;
  const guint8 *states = ox_document_get_node_states(self, &n_st);
  *marks = g_new0(guint8, pic->n_nodes + 1);
  *fills = g_new0(guint32, pic->n_nodes + 1);
  OX_GRAPH_FOREACH(pic, id) {
    const OxNode *n = &pic->nodes[id];
    gboolean gone = g_hash_table_contains(removed, n->name) && !ox_graph_find(shown, n->name);
    guint32 uid = ox_history_uid(h, n->name, gone ? self->k_before : k);
    guint8 state = uid && uid < n_st ? states[uid] : OX_NS_NORMAL;
    if (gone) state = OX_NS_REMOVED;
    guint32 fill = ox_family_color(ox_node_family(pic, n));
    if (state == OX_NS_REMOVED) fill = OX_FILL_REMOVED;
    if (state == OX_NS_ADDED) fill = OX_FILL_ADDED;
    if (state == OX_NS_DIMMED) {
      /* the canvas draws untouched nodes at 35 % over its background */
      guint32 r = (fill >> 16) & 0xff, g = (fill >> 8) & 0xff, b = fill & 0xff;
      fill = (((r * 35 + 250 * 65) / 100) << 16) | (((g * 35 + 250 * 65) / 100) << 8) | ((b * 35 + 247 * 65) / 100);
    }
    (*marks)[id] = state_mark(state);
    (*fills)[id] = OX_DOT_RGB(fill);
  }
  g_hash_table_destroy(removed);
  return pic;
}

GBytes *ox_export_picture_bytes(const OxGraph *g, const guint8 *marks, const guint32 *fills, const char *format,
                                gboolean edge_shapes, char **note_out, GError **error) {
  if (note_out) *note_out = NULL;
  if (strcmp(format, "svg") != 0 && strcmp(format, "png") != 0)
    return ox_export_bytes(g, NULL, format, edge_shapes, note_out, error);
  /* the families drawn, in the legend with the canvas's colours */
  gboolean present[OX_FAMILY_COUNT] = {FALSE};
  OX_GRAPH_FOREACH(g, id) present[ox_node_family(g, &g->nodes[id])] = TRUE;
  const char *names[OX_FAMILY_COUNT];
  guint32 colors[OX_FAMILY_COUNT];
  guint n_fam = 0;
  for (int f = 0; f < OX_FAMILY_COUNT; f++)
    if (present[f]) {
      names[n_fam] = ox_family_name((OxFamily)f);
      colors[n_fam++] = ox_family_color((OxFamily)f);
    }
  static const guint32 mark_rgb[OX_DOT_MARKS] = {0x555555, OX_COLOR_MATCH, OX_COLOR_REMOVED, OX_COLOR_ADDED,
                                                OX_COLOR_MATCH, OX_COLOR_DIMMED};
  OxDotOptions o = {.edge_shapes = edge_shapes, .highlight = marks, .rankdir = "TB", .fill = fills,
                    .mark_rgb = mark_rgb, .legend = TRUE, .legend_fill_names = names, .legend_fills = colors,
                    .n_legend_fills = n_fam};
  OxBuf b;
  ox_buf_init(&b);
  char err[512] = "", note[300] = "";
  OxLayoutOptions lo = {.time_budget = 10};
  if (ox_render_auto(g, &o, format, &lo, &b, note, sizeof note, err, sizeof err) != 0) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", err);
    ox_buf_free(&b);
    return NULL;
  }
  if (note_out && note[0]) *note_out = g_strdup(note);
  GBytes *bytes = g_bytes_new(b.data ? b.data : "", b.len);
  ox_buf_free(&b);
  return bytes;
}

gboolean ox_document_export(OxDocument *self, const char *format, const char *path, GError **error) {
  GBytes *bytes = NULL;
  if ((!strcmp(format, "svg") || !strcmp(format, "png")) && self->history) {
    /* a picture keeps what the canvas shows: the step's marks in its palette */
    guint8 *marks;
    guint32 *fills;
    OxGraph *pic = ox_document_step_picture(self, &marks, &fills);
    bytes = ox_export_picture_bytes(pic, marks, fills, format, FALSE, NULL, error);
    ox_graph_free(pic);
    g_free(marks);
    g_free(fills);
  } else {
    bytes = ox_export_bytes(self->history ? ox_document_get_graph(self) : NULL, ox_document_get_trace(self),
                            format, FALSE, NULL, error);
  }
  if (!bytes) return FALSE;
  char err[512];
  gsize len;
  const void *data = g_bytes_get_data(bytes, &len);
  gboolean ok = ox_write_file_atomic(path, data, len, err, sizeof err);
  if (!ok) g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", err);
  g_bytes_unref(bytes);
  return ok;
}
