/* ox_diag.c - located diagnostics (see ox_diag.h).
 *
 * Messages are formatted once, when added; snippets are trimmed to one line of at most
 * 160 bytes with non-printable bytes shown as \xNN, so a diagnostic about binary garbage
 * never writes garbage to a terminal. max_items bounds memory on pathological input
 * (a million damaged lines): past it diags are only counted.
 */
#include "ir/ox_diag.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"

void ox_diags_init(OxDiagList *d, const char *file) {
  memset(d, 0, sizeof *d);
  d->file = file;
  d->max_items = 10000;
}

void ox_diags_clear(OxDiagList *d) {
  for (size_t i = 0; i < d->n; i++) {
    free(d->items[i].msg);
    free(d->items[i].snippet);
  }
  free(d->items);
  const char *file = d->file;
  size_t max = d->max_items;
  memset(d, 0, sizeof *d);
  d->file = file;
  d->max_items = max;
}

static char *clean_snippet(const char *s) {
  if (!s) return NULL;
  enum { MAX = 160 };
  char *out = ox_xcalloc(MAX * 4 + 8, 1);
  size_t o = 0, i = 0;
  while (s[i] == ' ' || s[i] == '\t') i++;
  for (; s[i] && s[i] != '\n' && s[i] != '\r' && o < MAX; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x80) {
      /* pass valid UTF-8 sequences through, escape every other high byte */
      size_t len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
      bool valid = len > 0;
      for (size_t k = 1; valid && k < len; k++) valid = ((unsigned char)s[i + k] & 0xc0) == 0x80;
      if (valid) {
        memcpy(out + o, s + i, len);
        o += len;
        i += len - 1;
      } else {
        o += (size_t)snprintf(out + o, 8, "\\x%02x", c);
      }
    } else if (c < 0x20 || c == 0x7f) {
      o += (size_t)snprintf(out + o, 8, "\\x%02x", c);
    } else {
      out[o++] = (char)c;
    }
  }
  if (s[i] && s[i] != '\n' && s[i] != '\r') {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  while (o && out[o - 1] == ' ') o--;
  out[o] = 0;
  return out;
}

void ox_diag_vadd(OxDiagList *d, OxSeverity sev, uint32_t line, uint32_t col, const char *snippet,
                  const char *fmt, va_list ap) {
  if (sev == OX_SEV_ERROR) d->n_errors++;
  if (sev == OX_SEV_WARNING) d->n_warnings++;
  if (d->max_items && d->n >= d->max_items) {
    d->n_dropped++;
    return;
  }
  if (d->n == d->cap) {
    d->cap = d->cap ? d->cap * 2 : 16;
    d->items = ox_xrealloc(d->items, d->cap * sizeof *d->items);
  }
  OxDiag *x = &d->items[d->n++];
  memset(x, 0, sizeof *x);
  x->sev = sev;
  x->line = line;
  x->col = col;
  char tmp[1024];
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  x->msg = ox_xstrdup(tmp);
  x->snippet = clean_snippet(snippet);
}

void ox_diag_add(OxDiagList *d, OxSeverity sev, uint32_t line, uint32_t col, const char *snippet,
                 const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ox_diag_vadd(d, sev, line, col, snippet, fmt, ap);
  va_end(ap);
}

void ox_diags_promote_warnings(OxDiagList *d) {
  for (size_t i = 0; i < d->n; i++) {
    if (d->items[i].sev == OX_SEV_WARNING) d->items[i].sev = OX_SEV_ERROR;
  }
  d->n_errors += d->n_warnings;
  d->n_warnings = 0;
}

const char *ox_severity_name(OxSeverity s) {
  switch (s) {
  case OX_SEV_ERROR: return "error";
  case OX_SEV_WARNING: return "warning";
  default: return "note";
  }
}

char *ox_diag_format(const OxDiagList *d, const OxDiag *x) {
  char head[512];
  const char *file = d->file ? d->file : "<input>";
  if (x->line && x->col)
    snprintf(head, sizeof head, "%s:%u:%u: ", file, x->line, x->col);
  else if (x->line)
    snprintf(head, sizeof head, "%s:%u: ", file, x->line);
  else
    snprintf(head, sizeof head, "%s: ", file);
  size_t n = strlen(head) + strlen(x->msg) + 32 + (x->node ? strlen(x->node) + 16 : 0);
  char *r = ox_xcalloc(n, 1);
  if (x->node)
    snprintf(r, n, "%s%s: %s (node %s)", head, ox_severity_name(x->sev), x->msg, x->node);
  else
    snprintf(r, n, "%s%s: %s", head, ox_severity_name(x->sev), x->msg);
  return r;
}

void ox_diags_print(const OxDiagList *d, FILE *out) {
  for (size_t i = 0; i < d->n; i++) {
    char *s = ox_diag_format(d, &d->items[i]);
    fprintf(out, "%s\n", s);
    if (d->items[i].snippet && d->items[i].snippet[0]) fprintf(out, "    %s\n", d->items[i].snippet);
    free(s);
  }
  if (d->n_dropped)
    fprintf(out, "%s: note: %zu further diagnostics not shown\n", d->file ? d->file : "<input>",
            d->n_dropped);
}
