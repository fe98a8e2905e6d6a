/* ox_parse.h - the individual parsers, as the loader (load/ox_load.c) dispatches to them.
 *
 * Each parser fills an OxDoc (load/ox_doc.h) from NUL-terminated text; none includes the
 * loader. Callers outside the loader normally go through ox_load_buffer / ox_load_file.
 */
#ifndef OX_PARSE_H
#define OX_PARSE_H

#include "ir/ox_diag.h"
#include "load/ox_doc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The individual loaders (called by ox_load_buffer). text is NUL-terminated at len.
 * Each appends graphs to doc and diagnostics to diags; returns 0 if at least one graph
 * loaded and no error was reported, -1 otherwise. They do not apply strict promotion:
 * ox_load_buffer does that. */
int ox_parse_fx_text(const char *text, size_t len, const OxLoadOptions *opt, OxDoc *doc, OxDiagList *diags);
int ox_parse_fx_readable(const char *text, size_t len, const OxLoadOptions *opt, OxDoc *doc, OxDiagList *diags);
int ox_json_read(const char *text, size_t len, const OxLoadOptions *opt, OxDoc *doc, OxDiagList *diags);
/* A clean document is read in one pass by our own tokenizer (json/ox_json_fast.c, "streaming"),
 * anything else as one json-c tree with the same result. For tests that compare the two: streaming on or off
 * (default on; OX_JSON_NO_STREAM in the environment turns it off), and the number of documents
 * read streamed so far in this process. */
void ox_json_set_streaming(bool on);
unsigned long ox_json_streamed_reads(void);

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
