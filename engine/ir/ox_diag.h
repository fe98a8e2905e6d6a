/* ox_diag.h - located diagnostics.
 *
 * The engine never prints, exits or aborts on bad input: it appends OxDiag records to an
 * OxDiagList and returns a status. Front ends print them as
 *   FILE:LINE:COL: error|warning: message
 *       offending text
 * Line and column are 1-based; 0 means unknown. Messages and snippets are owned by the list.
 */
#ifndef OX_DIAG_H
#define OX_DIAG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum OxSeverity { OX_SEV_NOTE = 0, OX_SEV_WARNING, OX_SEV_ERROR } OxSeverity;

typedef struct OxDiag {
  OxSeverity sev;
  uint32_t line, col;  /* 1-based; 0 = unknown */
  char *msg;           /* owned */
  char *snippet;       /* owned; the offending text (trimmed, at most ~160 chars), or NULL */
  const char *node;    /* node name the message is about (borrowed from the graph) or NULL */
} OxDiag;

typedef struct OxDiagList {
  const char *file;    /* borrowed; name used when printing */
  OxDiag *items;
  size_t n, cap;
  size_t n_errors, n_warnings;
  size_t max_items;    /* 0 = unlimited; past it, further diags are only counted */
  size_t n_dropped;
} OxDiagList;

void ox_diags_init(OxDiagList *d, const char *file);
void ox_diags_clear(OxDiagList *d); /* frees items; keeps file */
#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
void ox_diag_add(OxDiagList *d, OxSeverity sev, uint32_t line, uint32_t col,
                 const char *snippet, const char *fmt, ...);
void ox_diag_vadd(OxDiagList *d, OxSeverity sev, uint32_t line, uint32_t col,
                  const char *snippet, const char *fmt, va_list ap);
/* Promote every warning to an error (used by --strict). */
void ox_diags_promote_warnings(OxDiagList *d);
/* Prints every diag as FILE:LINE:COL: severity: message [+ snippet line]. */
void ox_diags_print(const OxDiagList *d, FILE *out);
/* Formats one diag into a malloc'ed string "FILE:LINE:COL: severity: message". */
char *ox_diag_format(const OxDiagList *d, const OxDiag *x);
const char *ox_severity_name(OxSeverity s);

#ifdef __cplusplus
}
#endif
#endif
