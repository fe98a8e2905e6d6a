/* ox_load.h - the loader entry points: format detection and dispatch to the parsers.
 *
 * The document type is in load/ox_doc.h, the parsers' entry points in load/ox_parse.h.
 *
 * Loaders never crash, hang or execute input. Lenient by default: a line that cannot be
 * parsed is skipped with a located warning; names a fragment uses but never defines become
 * external placeholders (OX_NODE_EXTERNAL) with a warning. With strict, every warning
 * becomes an error and the load fails. Input with no graph is an error in both modes.
 */
#ifndef OX_LOAD_H
#define OX_LOAD_H

#include "ir/ox_diag.h"
#include "load/ox_doc.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif
#endif
