/* ox_load.c - format detection and the loader entry points (the document type is ox_doc.c).
 *
 * ox_load_buffer picks a loader (or detects the format), runs it, and applies --strict
 * promotion: in strict mode any warning fails the load. Input with no graph is an error in
 * both modes. Every failure leaves *out NULL and at least one error in diags.
 */
#include "load/ox_load.h"

#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"
#include "load/ox_parse.h"
#include "run/ox_record.h"

static const char *find_bounded(const char *hay, size_t len, const char *needle) {
  size_t nl = strlen(needle);
  if (nl > len) return NULL;
  for (size_t i = 0; i + nl <= len; i++)
    if (hay[i] == needle[0] && memcmp(hay + i, needle, nl) == 0) return hay + i;
  return NULL;
}

OxFormat ox_detect_format(const char *text, size_t len) {
  size_t i = 0;
  /* skip a UTF-8 BOM and leading white space */
  if (len >= 3 && (unsigned char)text[0] == 0xef && (unsigned char)text[1] == 0xbb &&
      (unsigned char)text[2] == 0xbf)
    i = 3;
  while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) i++;
  if (i < len && text[i] == '{') return OX_FMT_JSON;
  /* Look at a bounded prefix: the first node or class line decides. */
  size_t scan = len < (1u << 20) ? len : (1u << 20);
  const char *pct = NULL, *cls = NULL, *def = NULL;
  for (size_t p = 0; p < scan;) {
    size_t e = p;
    while (e < scan && text[e] != '\n') e++;
    const char *line = text + p;
    size_t ll = e - p;
    if (!pct) {
      const char *q = find_bounded(line, ll, "%");
      if (q && (find_bounded(line, ll, "placeholder[") || find_bounded(line, ll, "call_function[") ||
                find_bounded(line, ll, "PlaceHolder[") || find_bounded(line, ll, "get_attr[") ||
                find_bounded(line, ll, "call_module[") || find_bounded(line, ll, "call_method[")))
        pct = line;
    }
    if (!cls && find_bounded(line, ll, "class ") && find_bounded(line, ll, "Module):")) cls = line;
    if (!def && find_bounded(line, ll, "def forward(")) def = line;
    if (pct && (cls || def)) break;
    if (pct && !cls && !def && p > 65536) break;
    p = e + 1;
  }
  if (pct && (cls || def)) return pct < (cls ? cls : def) ? OX_FMT_FX_TEXT : OX_FMT_FX_READABLE;
  if (pct) return OX_FMT_FX_TEXT;
  if (cls || def) return OX_FMT_FX_READABLE;
  if (find_bounded(text, scan, "graph():")) return OX_FMT_FX_TEXT;
  return OX_FMT_UNKNOWN;
}

int ox_load_buffer(const char *text, size_t len, OxFormat fmt, const OxLoadOptions *opt_in, OxDoc **out,
                   OxDiagList *diags) {
  OxLoadOptions opt = {0};
  if (opt_in) opt = *opt_in;
  if (!opt.max_bytes) opt.max_bytes = ox_input_cap((size_t)512 << 20);
  if (!opt.max_depth) opt.max_depth = 256;
  *out = NULL;
  if (len > opt.max_bytes) {
    ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL,
                "input is %zu bytes, more than the limit of %zu (OPTIMUS_MAX_INPUT_MB raises the cap)", len,
                opt.max_bytes);
    return -1;
  }
  if (fmt == OX_FMT_UNKNOWN) fmt = ox_detect_format(text, len);
  if (fmt == OX_FMT_UNKNOWN) {
    bool blank = true;
    for (size_t i = 0; i < len && blank; i++)
      if (!(text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) blank = false;
    ox_diag_add(diags, OX_SEV_ERROR, 1, 1, NULL,
                blank ? "no graph found: the input is empty"
                      : "no graph found: not an FX graph dump (print(graph) text, print_readable code) "
                        "or Optimus JSON");
    return -1;
  }
  OxDoc *doc = ox_doc_new(fmt);
  size_t errors_before = diags->n_errors;
  int rc;
  switch (fmt) {
  case OX_FMT_FX_TEXT: rc = ox_parse_fx_text(text, len, &opt, doc, diags); break;
  case OX_FMT_FX_READABLE: rc = ox_parse_fx_readable(text, len, &opt, doc, diags); break;
  case OX_FMT_JSON: rc = ox_json_read(text, len, &opt, doc, diags); break;
  default: rc = -1; break;
  }
  if (rc == 0 && doc->n_graphs == 0) {
    ox_diag_add(diags, OX_SEV_ERROR, 1, 1, NULL, "no graph found in the input");
    rc = -1;
  }
  if (opt.strict && diags->n_warnings) {
    ox_diags_promote_warnings(diags);
    rc = -1;
  }
  if (rc == 0 && diags->n_errors > errors_before) rc = -1;
  if (rc != 0) {
    if (diags->n_errors == errors_before)
      ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "could not load a graph from the input");
    ox_doc_free(doc);
    return -1;
  }
  *out = doc;
  return 0;
}

int ox_load_file(const char *path, OxFormat fmt, const OxLoadOptions *opt, OxDoc **out, OxDiagList *diags) {
  char err[1024];
  size_t len = 0;
  size_t max = opt && opt->max_bytes ? opt->max_bytes : ox_input_cap((size_t)512 << 20);
  *out = NULL;
  char *text = ox_map_file(path, &len, max, err, sizeof err);
  if (!text) {
    ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "%s", err);
    return -1;
  }
  /* a record's data arrays are kept as spans of the text, which the record then owns */
  OxLoadOptions o = {0};
  if (opt) o = *opt;
  o.text_outlives = true;
  int rc = ox_load_buffer(text, len, fmt, &o, out, diags);
  if (rc == 0 && (*out)->record && ox_record_borrows((*out)->record) && !(*out)->record->text)
    (*out)->record->text = text;
  else
    ox_text_free(text);
  return rc;
}
