/* ox_doc.c - the document type: format names, creating, freeing and filling an OxDoc.
 *
 * Invariants: a document owns its graphs (in input order) and its recorded data; freeing it
 * frees both, and ox_doc_free(NULL) is a no-op.
 */
#include "load/ox_doc.h"

#include <stdlib.h>

#include "ir/ox_mem.h"
#include "run/ox_record.h"

const char *ox_format_name(OxFormat f) {
  switch (f) {
  case OX_FMT_FX_TEXT: return "fx-text";
  case OX_FMT_FX_READABLE: return "fx-readable";
  case OX_FMT_JSON: return "json";
  default: return "unknown";
  }
}

OxDoc *ox_doc_new(OxFormat f) {
  OxDoc *d = ox_xcalloc(1, sizeof *d);
  d->format = f;
  return d;
}

void ox_doc_free(OxDoc *d) {
  if (!d) return;
  for (uint32_t i = 0; i < d->n_graphs; i++) ox_graph_free(d->graphs[i]);
  free(d->graphs);
  ox_record_free(d->record);
  free(d);
}

void ox_doc_add_graph(OxDoc *d, OxGraph *g) {
  d->graphs = ox_xrealloc(d->graphs, (d->n_graphs + 1) * sizeof *d->graphs);
  d->graphs[d->n_graphs++] = g;
}
