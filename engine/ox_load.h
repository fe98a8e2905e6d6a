/* ox_load.h - documents and loaders.
 *
 * A dump may hold several graphs (three print(graph) calls in one paste, two TORCH_LOGS
 * graph_code blocks); an OxDoc holds them in order. Nested graphs (executorch
 * "lowered graph():" blocks, nested submodule classes of print_readable) hang off their
 * parent graph as subgraphs.
 *
 * Loaders never crash, hang or execute input. Lenient by default: a line that cannot be
 * parsed is skipped with a located warning; names a fragment uses but never defines become
 * external placeholders (OX_NODE_EXTERNAL) with a warning. With strict, every warning
 * becomes an error and the load fails. Input with no graph is an error in both modes.
 */
#ifndef OX_LOAD_H
#define OX_LOAD_H

#include "ox_diag.h"
#include "ox_graph.h"

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
} OxLoadOptions;

OxDoc *ox_doc_new(OxFormat f);
void ox_doc_free(OxDoc *d);
void ox_doc_add_graph(OxDoc *d, OxGraph *g); /* takes ownership */

/* Guess the format from content (JSON object with "format":"optimus-fx", a "class ...:" /
 * "def forward(" body, or "%name : ..." lines). */
OxFormat ox_detect_format(const char *text, size_t len);

/* Load a file / a buffer. Returns 0 and sets *out on success (warnings may have been added),
 * -1 on failure (errors in diags, *out = NULL). fmt OX_FMT_UNKNOWN = detect. The buffer must be
 * NUL-terminated at len (text[len] == 0, as ox_read_file's are): diagnostics quote the line
 * they point at up to its end. */
int ox_load_file(const char *path, OxFormat fmt, const OxLoadOptions *opt, OxDoc **out, OxDiagList *diags);
int ox_load_buffer(const char *text, size_t len, OxFormat fmt, const OxLoadOptions *opt,
                   OxDoc **out, OxDiagList *diags);

/* The individual loaders (called by ox_load_buffer). text is NUL-terminated at len.
 * Each appends graphs to doc and diagnostics to diags; returns 0 if at least one graph
 * loaded and no error was reported, -1 otherwise. They do not apply strict promotion:
 * ox_load_buffer does that. */
int ox_parse_fx_text(const char *text, size_t len, const OxLoadOptions *opt, OxDoc *doc, OxDiagList *diags);
int ox_parse_fx_readable(const char *text, size_t len, const OxLoadOptions *opt, OxDoc *doc, OxDiagList *diags);
int ox_json_read(const char *text, size_t len, const OxLoadOptions *opt, OxDoc *doc, OxDiagList *diags);

/* Parses a tensor annotation as print(graph) writes it ("f32[8, 16]", "f32[8, 16][16, 1]cuda:0",
 * "Sym(s0)") into m, its arrays in g (shared, read-only: ox_graph_meta_intern). False if s is
 * not one. */
bool ox_parse_tensor_annotation(OxGraph *g, const char *s, size_t n, OxMeta *m);

/* Whether the FX text loader reads device text s back as a device when it is printed bare
 * ("cuda:0", "cpu"); the FX writer prints any other device as device(type='ipu', index=0). */
bool ox_fx_device_reads_bare(const char *s);

#ifdef __cplusplus
}
#endif
#endif
