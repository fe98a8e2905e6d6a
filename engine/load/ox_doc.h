/* ox_doc.h - the document: what a loader produces and a writer consumes.
 *
 * A dump may hold several graphs (three print(graph) calls in one paste, two TORCH_LOGS
 * graph_code blocks); an OxDoc holds them in order. Nested graphs (executorch
 * "lowered graph():" blocks, nested submodule classes of print_readable) hang off their
 * parent graph as subgraphs. The type lives apart from the loader (load/ox_load.h) so that
 * the parsers, writers and the recorded-data code use the document without including the
 * loader, and the loader includes the parsers only as its dispatch (load/ox_parse.h).
 */
#ifndef OX_DOC_H
#define OX_DOC_H

#include "ir/ox_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum OxFormat {
  OX_FMT_UNKNOWN = 0,
  OX_FMT_FX_TEXT,     /* print(graph) text, old/new/Inductor-annotated styles, fragments */
  OX_FMT_FX_READABLE, /* print_readable / fx_graph_readable.py / TORCH_LOGS graph_code Python */
  OX_FMT_JSON         /* our own JSON (docs/format-json.md) */
} OxFormat;

const char *ox_format_name(OxFormat f); /* "fx-text", "fx-readable", "json" */

typedef struct OxDoc {
  OxFormat format;
  OxGraph **graphs;    /* owned, in the order they appear in the input */
  uint32_t n_graphs;
  /* Recorded example data (issue 3 / bridge): owned by the doc, may be NULL. */
  struct OxRecord *record;
} OxDoc;

typedef struct OxLoadOptions {
  bool strict;          /* warnings are errors */
  size_t max_bytes;     /* refuse larger input; 0 = default (512 MiB) */
  uint32_t max_depth;   /* nesting bound for values/brackets; 0 = default (256) */
  /* The text outlives the document: a record's data arrays are kept as spans of it, not copies
   * (ox_load_file, which then hands the text to the record: OxRecord.text). */
  bool text_outlives;
} OxLoadOptions;

OxDoc *ox_doc_new(OxFormat f);
void ox_doc_free(OxDoc *d);
void ox_doc_add_graph(OxDoc *d, OxGraph *g); /* takes ownership */

#ifdef __cplusplus
}
#endif
#endif
