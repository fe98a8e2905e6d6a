/* ox_json.c - Optimus JSON (docs/format-json.md, schema version 1): writer and reader.
 *
 * The writer emits everything the IR holds for a document: graphs in order, each with its
 * name, src_line, live nodes in program order (name, op, target, args, kwargs, meta with the
 * inferred flag, and the optional fields only when set), and subgraphs recursively with their
 * owner. It builds the text itself (not through json-c's serializer) so that key order is
 * fixed, floats are written as the shortest text that reads back bit-identically (Python
 * repr; 1.0 keeps its ".0" so it stays a float), and each node sits on its own line, which
 * keeps files diffable and error locations useful.
 *
 * The reader parses with json-c (the only engine file that uses it) in strict mode with the
 * nesting bounded by opt->max_depth, then validates the tree against the schema. Node
 * references are by name and may point forward: every node of a graph is created first,
 * args/kwargs are resolved in a second pass, so users[] come out in program order. Node ids
 * are assigned in file order (1, 2, ...), which makes load -> save -> load an identity on
 * ids, names, order, values, meta and strings. Provenance entries are ids of nodes of the
 * graph the document was originally loaded from, so they are stored as plain integers.
 *
 * Errors are located: json-c reports the byte offset of a syntax error; a schema error
 * carries the path of the offending value (graphs[0].nodes[3] (name 'add'): kwargs.dim: ...),
 * and its line:col is found by walking the raw text along that path (cheap, and only done
 * for the first diagnostics). Unknown keys are warnings (strict mode makes them errors), so
 * a newer writer's optional additions do not break an older reader.
 *
 * Requires: text NUL-terminated at len. Never aborts, prints or executes anything on bad
 * input. On failure the partially built graphs stay in doc; ox_load_buffer frees the doc.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json.h>

#include "ir/ox_mem.h"
#include "load/ox_parse.h"
#include "run/ox_record.h"
#include "write/ox_write.h"

/* ================================================================== writer */

static void put_str(OxBuf *b, const char *s) { ox_buf_put_quoted(b, s ? s : ""); }

static void put_key(OxBuf *b, const char *key) {
  put_str(b, key);
  ox_buf_puts(b, ": ");
}

static void put_indent(OxBuf *b, int n) {
  for (int i = 0; i < n; i++) ox_buf_putc(b, ' ');
}

static void write_value(const OxGraph *g, const OxValue *v, OxBuf *b);

static void write_items(const OxGraph *g, const OxValue *v, OxBuf *b) {
  ox_buf_putc(b, '[');
  for (uint32_t i = 0; i < v->n; i++) {
    if (i) ox_buf_puts(b, ", ");
    write_value(g, &v->u.items[i], b);
  }
  ox_buf_putc(b, ']');
}

static void write_tagged_str(OxBuf *b, const char *tag, const char *s) {
  ox_buf_putc(b, '{');
  put_key(b, tag);
  put_str(b, s);
  ox_buf_putc(b, '}');
}

static void write_value(const OxGraph *g, const OxValue *v, OxBuf *b) {
  switch ((OxValueKind)v->kind) {
  case OX_V_NONE: ox_buf_puts(b, "null"); return;
  case OX_V_BOOL: ox_buf_puts(b, v->u.b ? "true" : "false"); return;
  case OX_V_INT: ox_buf_printf(b, "%" PRId64, v->u.i); return;
  case OX_V_FLOAT:
    if (isnan(v->u.f))
      ox_buf_puts(b, "{\"float\": \"nan\"}");
    else if (isinf(v->u.f))
      ox_buf_puts(b, v->u.f < 0 ? "{\"float\": \"-inf\"}" : "{\"float\": \"inf\"}");
    else
      ox_buf_put_pyfloat(b, v->u.f); /* shortest round-trip text, always with '.' or 'e' */
    return;
  case OX_V_STR: put_str(b, v->s); return;
  case OX_V_NODE: {
    const char *name = ox_graph_ref_name(g, v->u.node);
    if (name) {
      write_tagged_str(b, "node", name);
    } else {
      ox_buf_puts(b, "{\"node\": null}"); /* a dangling id: the reader rejects it, loudly */
    }
    return;
  }
  case OX_V_SYM: write_tagged_str(b, "sym", v->s); return;
  case OX_V_DTYPE:
    write_tagged_str(b, "dtype", v->s ? v->s : ox_dtype_torch_name((OxDType)v->u.dtype));
    return;
  case OX_V_DEVICE: write_tagged_str(b, "device", v->s); return;
  case OX_V_ENUM: write_tagged_str(b, "enum", v->s); return;
  case OX_V_RAW: write_tagged_str(b, "raw", v->s); return;
  case OX_V_ELLIPSIS: ox_buf_puts(b, "{\"ellipsis\": true}"); return;
  case OX_V_LIST: write_items(g, v, b); return;
  case OX_V_TUPLE:
    ox_buf_puts(b, "{\"tuple\": ");
    write_items(g, v, b);
    ox_buf_putc(b, '}');
    return;
  case OX_V_SLICE:
    ox_buf_puts(b, "{\"slice\": ");
    write_items(g, v, b);
    ox_buf_putc(b, '}');
    return;
  case OX_V_DICT:
    ox_buf_puts(b, "{\"dict\": [");
    for (uint32_t i = 0; i < v->n; i++) {
      if (i) ox_buf_puts(b, ", ");
      ox_buf_putc(b, '[');
      put_str(b, v->keys[i]);
      ox_buf_puts(b, ", ");
      write_value(g, &v->u.items[i], b);
      ox_buf_putc(b, ']');
    }
    ox_buf_puts(b, "]}");
    return;
  }
  ox_buf_puts(b, "null"); /* unreachable for a well-formed value */
}

static void write_dims(OxBuf *b, const OxDim *dims, int32_t rank) {
  ox_buf_putc(b, '[');
  for (int32_t i = 0; i < rank; i++) {
    if (i) ox_buf_puts(b, ", ");
    if (dims[i].sym)
      put_str(b, dims[i].sym);
    else
      ox_buf_printf(b, "%" PRId64, dims[i].v);
  }
  ox_buf_putc(b, ']');
}

static void write_tensor_meta(const OxTensorMeta *t, OxBuf *b) {
  ox_buf_putc(b, '{');
  put_key(b, "dtype");
  put_str(b, ox_dtype_abbr(t->dtype));
  if (t->rank >= 0) {
    ox_buf_puts(b, ", ");
    put_key(b, "shape");
    write_dims(b, t->shape, t->rank);
    if (t->has_stride && (t->stride || t->rank == 0)) {
      ox_buf_puts(b, ", ");
      put_key(b, "stride");
      write_dims(b, t->stride, t->rank);
    }
  }
  if (t->device) {
    ox_buf_puts(b, ", ");
    put_key(b, "device");
    put_str(b, t->device);
  }
  ox_buf_putc(b, '}');
}

/* Writes ', "meta": {...}' when there is anything to say. */
static void write_meta(const OxMeta *m, OxBuf *b) {
  bool has_kind = false;
  OxBuf tmp;
  ox_buf_init(&tmp);
  switch ((OxMetaKind)m->kind) {
  case OX_META_TENSOR:
    if (m->n >= 1 && m->t) {
      ox_buf_puts(&tmp, "\"tensor\": ");
      write_tensor_meta(&m->t[0], &tmp);
      has_kind = true;
    }
    break;
  case OX_META_TUPLE:
    ox_buf_puts(&tmp, "\"tuple\": [");
    for (uint32_t i = 0; m->t && i < m->n; i++) {
      if (i) ox_buf_puts(&tmp, ", ");
      write_tensor_meta(&m->t[i], &tmp);
    }
    ox_buf_putc(&tmp, ']');
    has_kind = true;
    break;
  case OX_META_SYMINT:
    ox_buf_puts(&tmp, "\"symint\": ");
    if (m->sym)
      put_str(&tmp, m->sym);
    else
      ox_buf_puts(&tmp, "null");
    has_kind = true;
    break;
  case OX_META_SCALAR:
    ox_buf_puts(&tmp, "\"scalar\": true");
    has_kind = true;
    break;
  case OX_META_NONE: break;
  }
  if (has_kind || m->inferred) {
    ox_buf_puts(b, ", \"meta\": {");
    if (has_kind) ox_buf_append(b, tmp.data, tmp.len);
    if (m->inferred) ox_buf_puts(b, has_kind ? ", \"inferred\": true" : "\"inferred\": true");
    ox_buf_putc(b, '}');
  }
  ox_buf_free(&tmp);
}

static void write_opt_str(OxBuf *b, const char *key, const char *s) {
  if (!s) return;
  ox_buf_puts(b, ", ");
  put_key(b, key);
  put_str(b, s);
}

static void write_node(const OxGraph *g, const OxNode *n, OxBuf *b) {
  ox_buf_putc(b, '{');
  put_key(b, "name");
  put_str(b, n->name);
  ox_buf_puts(b, ", ");
  put_key(b, "op");
  put_str(b, ox_op_name((OxOp)n->op));
  ox_buf_puts(b, ", ");
  put_key(b, "target");
  put_str(b, n->target);
  ox_buf_puts(b, ", ");
  put_key(b, "args");
  ox_buf_putc(b, '[');
  for (uint32_t i = 0; n->args.kind == OX_V_TUPLE && i < n->args.n; i++) {
    if (i) ox_buf_puts(b, ", ");
    write_value(g, &n->args.u.items[i], b);
  }
  ox_buf_puts(b, "], ");
  put_key(b, "kwargs");
  ox_buf_putc(b, '{');
  for (uint32_t i = 0; n->kwargs.kind == OX_V_DICT && i < n->kwargs.n; i++) {
    if (i) ox_buf_puts(b, ", ");
    put_key(b, n->kwargs.keys[i]);
    write_value(g, &n->kwargs.u.items[i], b);
  }
  ox_buf_putc(b, '}');
  write_meta(&n->meta, b);
  if (n->declared_users != -1) ox_buf_printf(b, ", \"declared_users\": %" PRId32, n->declared_users);
  if (n->flags) ox_buf_printf(b, ", \"flags\": %u", (unsigned)n->flags);
  if (n->src_line) ox_buf_printf(b, ", \"src_line\": %" PRIu32, n->src_line);
  write_opt_str(b, "type_ann", n->type_ann);
  write_opt_str(b, "stack_trace", n->stack_trace);
  write_opt_str(b, "module_path", n->module_path);
  write_opt_str(b, "module_type", n->module_type);
  write_opt_str(b, "default_value", n->default_value);
  if (n->n_provenance) {
    ox_buf_puts(b, ", \"provenance\": [");
    for (uint32_t i = 0; i < n->n_provenance; i++) ox_buf_printf(b, i ? ", %" PRIu32 : "%" PRIu32, n->provenance[i]);
    ox_buf_putc(b, ']');
  }
  ox_buf_putc(b, '}');
}

static void write_graph(const OxGraph *g, int ind, OxBuf *b) {
  put_indent(b, ind);
  ox_buf_puts(b, "{\n");
  if (g->name) {
    put_indent(b, ind + 2);
    put_key(b, "name");
    put_str(b, g->name);
    ox_buf_puts(b, ",\n");
  }
  if (g->sub_owner) {
    put_indent(b, ind + 2);
    put_key(b, "owner");
    put_str(b, g->sub_owner);
    ox_buf_puts(b, ",\n");
  }
  put_indent(b, ind + 2);
  ox_buf_printf(b, "\"src_line\": %" PRIu32 ",\n", g->src_line);
  put_indent(b, ind + 2);
  ox_buf_puts(b, "\"nodes\": [");
  bool first = true;
  OX_GRAPH_FOREACH(g, id) {
    ox_buf_puts(b, first ? "\n" : ",\n");
    first = false;
    put_indent(b, ind + 4);
    write_node(g, &g->nodes[id], b);
  }
  if (!first) {
    ox_buf_putc(b, '\n');
    put_indent(b, ind + 2);
  }
  ox_buf_puts(b, "],\n");
  put_indent(b, ind + 2);
  ox_buf_puts(b, "\"subgraphs\": [");
  for (uint32_t i = 0; i < g->n_subgraphs; i++) {
    ox_buf_puts(b, i ? ",\n" : "\n");
    write_graph(g->subgraphs[i], ind + 4, b);
  }
  if (g->n_subgraphs) {
    ox_buf_putc(b, '\n');
    put_indent(b, ind + 2);
  }
  ox_buf_puts(b, "]\n");
  put_indent(b, ind);
  ox_buf_putc(b, '}');
}

void ox_write_json(const OxDoc *doc, OxBuf *out) {
  ox_buf_puts(out, "{\n  \"format\": \"optimus-fx\",\n  \"version\": 1,\n  \"graphs\": [");
  for (uint32_t i = 0; i < doc->n_graphs; i++) {
    ox_buf_puts(out, i ? ",\n" : "\n");
    write_graph(doc->graphs[i], 4, out);
  }
  if (doc->n_graphs) ox_buf_puts(out, "\n  ");
  ox_buf_putc(out, ']');
  if (doc->record) {
    json_object *rec = ox_record_to_json(doc->record);
    ox_buf_puts(out, ",\n  \"record\": ");
    ox_buf_puts(out, json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(rec);
  }
  ox_buf_puts(out, "\n}\n");
}

/* ================================================================== reader */

/* One step of the path from the root to the value being read. */
typedef struct {
  const char *key; /* object member, or NULL for an array index */
  size_t idx;
} PathStep;

enum { PATH_MAX_STEPS = 1024, MAX_LOCATED = 64, MAX_ERRORS = 200 };

typedef struct {
  const char *text;
  size_t len;
  size_t start;       /* offset of the JSON text (past a UTF-8 byte order mark) */
  OxDiagList *d;
  PathStep path[PATH_MAX_STEPS];
  size_t depth;       /* steps in use (deeper steps are not recorded, only counted) */
  size_t node_depth;  /* path length at the current node object, 0 if not inside a node */
  const char *node_name;
  unsigned located;   /* diagnostics located so far (locating walks the text) */
  unsigned errors;
} Rd;

static void path_push_key(Rd *r, const char *key) {
  if (r->depth < PATH_MAX_STEPS) r->path[r->depth] = (PathStep){key, 0};
  r->depth++;
}

static void path_push_idx(Rd *r, size_t idx) {
  if (r->depth < PATH_MAX_STEPS) r->path[r->depth] = (PathStep){NULL, idx};
  r->depth++;
}

static void path_pop(Rd *r) { r->depth--; }

/* ---- locating a path in the raw text (the text is valid JSON: json-c accepted it) */

static size_t skip_ws(const char *t, size_t len, size_t i) {
  while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) i++;
  return i;
}

/* i at an opening quote (json-c also accepts single quotes); returns the index past the close. */
static size_t skip_string(const char *t, size_t len, size_t i) {
  char q = t[i++];
  while (i < len && t[i] != q) i += (t[i] == '\\') ? 2 : 1;
  return i < len ? i + 1 : len;
}

static size_t skip_value(const char *t, size_t len, size_t i) {
  if (i >= len) return len;
  if (t[i] == '"' || t[i] == '\'') return skip_string(t, len, i);
  if (t[i] == '{' || t[i] == '[') {
    size_t depth = 0;
    while (i < len) {
      char c = t[i];
      if (c == '"' || c == '\'') {
        i = skip_string(t, len, i);
        continue;
      }
      if (c == '{' || c == '[') depth++;
      if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      i++;
    }
    return len;
  }
  while (i < len && t[i] != ',' && t[i] != '}' && t[i] != ']' && t[i] != ' ' && t[i] != '\n' &&
         t[i] != '\t' && t[i] != '\r')
    i++;
  return i;
}

/* Byte offset of the value at path[0..steps) (the root for steps == 0); stops at the
 * deepest step it can follow. Duplicate keys resolve to the last one, as in json-c. */
static size_t locate(const Rd *r, size_t steps) {
  const char *t = r->text;
  size_t len = r->len;
  size_t at = skip_ws(t, len, r->start);
  if (steps > PATH_MAX_STEPS) steps = PATH_MAX_STEPS;
  for (size_t s = 0; s < steps && at < len; s++) {
    const PathStep *st = &r->path[s];
    size_t i = at + 1;
    size_t found = SIZE_MAX;
    if (st->key && t[at] == '{') {
      size_t klen = strlen(st->key);
      for (;;) {
        i = skip_ws(t, len, i);
        if (i >= len || t[i] == '}') break;
        size_t ks = i + 1;
        i = skip_string(t, len, i);
        bool match = i >= ks + 1 && i - 1 - ks == klen && memcmp(t + ks, st->key, klen) == 0;
        i = skip_ws(t, len, i);
        if (i < len && t[i] == ':') i++;
        i = skip_ws(t, len, i);
        if (match) found = i;
        i = skip_value(t, len, i);
        i = skip_ws(t, len, i);
        if (i < len && t[i] == ',') i++;
        else break;
      }
    } else if (!st->key && t[at] == '[') {
      for (size_t k = 0;; k++) {
        i = skip_ws(t, len, i);
        if (i >= len || t[i] == ']') break;
        if (k == st->idx) {
          found = i;
          break;
        }
        i = skip_value(t, len, i);
        i = skip_ws(t, len, i);
        if (i < len && t[i] == ',') i++;
        else break;
      }
    }
    if (found == SIZE_MAX) break;
    at = found;
  }
  return at;
}

static void offset_to_linecol(const char *t, size_t len, size_t off, uint32_t *line, uint32_t *col) {
  uint32_t ln = 1;
  size_t ls = 0;
  if (off > len) off = len;
  for (size_t i = 0; i < off; i++)
    if (t[i] == '\n') {
      ln++;
      ls = i + 1;
    }
  *line = ln;
  *col = (uint32_t)(off - ls + 1);
}

/* Formats the current path into buf: "graphs[0].nodes[3] (name 'add'): kwargs.dim". */
static void format_path(const Rd *r, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  size_t steps = r->depth < PATH_MAX_STEPS ? r->depth : PATH_MAX_STEPS;
  bool after_node = false;
  for (size_t s = 0; s < steps && o + 1 < cap; s++) {
    const PathStep *st = &r->path[s];
    int w;
    if (st->key)
      w = snprintf(buf + o, cap - o, "%s%.80s", (o == 0 || after_node) ? "" : ".", st->key);
    else
      w = snprintf(buf + o, cap - o, "[%zu]", st->idx);
    after_node = false;
    if (w < 0) break;
    o += (size_t)w;
    if (o >= cap) o = cap - 1;
    if (r->node_depth && s + 1 == r->node_depth && r->node_name) {
      w = snprintf(buf + o, cap - o, " (name '%.80s')%s", r->node_name, s + 1 < steps ? ": " : "");
      if (w < 0) break;
      o += (size_t)w;
      if (o >= cap) o = cap - 1;
      after_node = true;
    }
  }
  if (r->depth > PATH_MAX_STEPS && o + 5 < cap) strcpy(buf + o, "...");
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void report(Rd *r, OxSeverity sev, const char *fmt, ...) {
  char msg[768], where[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  format_path(r, where, sizeof where);
  uint32_t line = 0, col = 0;
  const char *snippet = NULL;
  if (r->located < MAX_LOCATED) {
    r->located++;
    size_t off = locate(r, r->depth);
    offset_to_linecol(r->text, r->len, off, &line, &col);
    snippet = r->text + (off < r->len ? off : r->len);
  }
  if (sev == OX_SEV_ERROR) r->errors++;
  if (where[0])
    ox_diag_add(r->d, sev, line, col, snippet, "%s: %s", where, msg);
  else
    ox_diag_add(r->d, sev, line, col, snippet, "%s", msg);
}

#define ERR(r, ...) report((r), OX_SEV_ERROR, __VA_ARGS__)

static const char *jtype_name(json_object *o) {
  switch (json_object_get_type(o)) {
  case json_type_null: return "null";
  case json_type_boolean: return "a boolean";
  case json_type_double: return "a float";
  case json_type_int: return "an integer";
  case json_type_object: return "an object";
  case json_type_array: return "an array";
  case json_type_string: return "a string";
  }
  return "?";
}

/* ---- typed accessors; each reports its own error against the current path */

/* A string without embedded NUL (the IR holds C strings). */
static bool get_str(Rd *r, json_object *o, const char *what, const char **s, size_t *n) {
  if (!json_object_is_type(o, json_type_string)) {
    ERR(r, "%s must be a string, not %s", what, jtype_name(o));
    return false;
  }
  *s = json_object_get_string(o);
  *n = (size_t)json_object_get_string_len(o);
  if (memchr(*s, 0, *n)) {
    ERR(r, "%s contains a NUL character", what);
    return false;
  }
  return true;
}

static const char *get_interned(Rd *r, OxGraph *g, json_object *o, const char *what) {
  const char *s;
  size_t n;
  if (!get_str(r, o, what, &s, &n)) return NULL;
  return ox_graph_intern_n(g, s, n);
}

/* Integers: json-c clamps out-of-range literals silently, so detect the clamp. */
static bool get_int(Rd *r, json_object *o, const char *what, int64_t *out) {
  if (!json_object_is_type(o, json_type_int)) {
    ERR(r, "%s must be an integer, not %s", what, jtype_name(o));
    return false;
  }
  int64_t v = json_object_get_int64(o);
  if (v == INT64_MAX && json_object_get_uint64(o) > (uint64_t)INT64_MAX) {
    ERR(r, "%s is out of the 64-bit integer range", what);
    return false;
  }
  if (v == INT64_MIN) {
    /* the clamp of anything below INT64_MIN: check the literal itself */
    size_t off = locate(r, r->depth);
    static const char lit[] = "-9223372036854775808";
    size_t l = sizeof lit - 1;
    if (off + l > r->len || memcmp(r->text + off, lit, l) != 0 ||
        (off + l < r->len && r->text[off + l] >= '0' && r->text[off + l] <= '9')) {
      ERR(r, "%s is out of the 64-bit integer range", what);
      return false;
    }
  }
  *out = v;
  return true;
}

static bool get_range(Rd *r, json_object *o, const char *what, int64_t lo, int64_t hi, int64_t *out) {
  if (!get_int(r, o, what, out)) return false;
  if (*out < lo || *out > hi) {
    ERR(r, "%s must be between %" PRId64 " and %" PRId64 ", not %" PRId64, what, lo, hi, *out);
    return false;
  }
  return true;
}

static bool expect_type(Rd *r, json_object *o, json_type t, const char *what) {
  if (json_object_is_type(o, t)) return true;
  const char *want = t == json_type_object ? "an object" : t == json_type_array ? "an array" : "?";
  ERR(r, "%s must be %s, not %s", what, want, jtype_name(o));
  return false;
}

/* ---- values */

typedef struct {
  OxGraph *g;
  Rd *r;
  bool create_refs; /* trace values: an unknown name becomes a placeholder standing for it */
} Ctx;

static bool read_value(Ctx *c, json_object *o, OxValue *out);

static bool read_items(Ctx *c, json_object *arr, OxValueKind kind, OxValue *out) {
  size_t n = json_object_array_length(arr);
  if (n > UINT32_MAX) {
    ERR(c->r, "too many items");
    return false;
  }
  OxValue *items = n ? ox_graph_alloc(c->g, n * sizeof *items) : NULL;
  bool ok = true;
  for (size_t i = 0; i < n; i++) {
    path_push_idx(c->r, i);
    if (!read_value(c, json_object_array_get_idx(arr, i), &items[i])) ok = false;
    path_pop(c->r);
  }
  *out = ox_value_none();
  out->kind = (uint8_t)kind;
  out->n = (uint32_t)n;
  out->u.items = items;
  return ok;
}

static bool read_tagged(Ctx *c, json_object *o, OxValue *out) {
  Rd *r = c->r;
  if (json_object_object_length(o) != 1) {
    ERR(r, "a tagged value must be an object with exactly one key (tuple, node, sym, dtype, device, "
           "enum, ellipsis, dict, slice, raw, float), found %d keys",
        json_object_object_length(o));
    return false;
  }
  const char *tag = NULL;
  json_object *v = NULL;
  json_object_object_foreach(o, k, val) {
    tag = k;
    v = val;
  }
  path_push_key(r, tag);
  bool ok = false;
  *out = ox_value_none();
  const char *s;
  size_t n;
  if (strcmp(tag, "tuple") == 0) {
    ok = expect_type(r, v, json_type_array, "a tuple") && read_items(c, v, OX_V_TUPLE, out);
  } else if (strcmp(tag, "slice") == 0) {
    if (expect_type(r, v, json_type_array, "a slice")) {
      if (json_object_array_length(v) != 3)
        ERR(r, "a slice must have 3 items (start, stop, step), not %zu", json_object_array_length(v));
      else
        ok = read_items(c, v, OX_V_SLICE, out);
    }
  } else if (strcmp(tag, "node") == 0) {
    if (get_str(r, v, "a node reference", &s, &n)) {
      const char *name = ox_graph_intern_n(c->g, s, n);
      OxNodeId id = c->create_refs ? ox_graph_name_ref(c->g, name) : ox_graph_find(c->g, name);
      if (!id)
        ERR(r, "reference to unknown node '%.100s'", name);
      else {
        *out = ox_value_node(id);
        ok = true;
      }
    }
  } else if (strcmp(tag, "sym") == 0 || strcmp(tag, "device") == 0 || strcmp(tag, "enum") == 0 ||
             strcmp(tag, "raw") == 0) {
    OxValueKind k = tag[0] == 's' ? OX_V_SYM : tag[0] == 'd' ? OX_V_DEVICE : tag[0] == 'e' ? OX_V_ENUM : OX_V_RAW;
    const char *is = get_interned(r, c->g, v, tag);
    if (is) {
      if (!is[0] && k != OX_V_RAW) {
        ERR(r, "%s must not be empty", tag);
      } else {
        out->kind = (uint8_t)k;
        out->s = is;
        ok = true;
      }
    }
  } else if (strcmp(tag, "dtype") == 0) {
    if (get_str(r, v, "a dtype", &s, &n)) {
      OxDType dt = ox_dtype_from_torch_name(s, n);
      *out = ox_value_dtype(dt);
      /* the canonical spelling of a known dtype is implied; anything else is kept */
      if (dt == OX_DT_UNKNOWN || strlen(ox_dtype_torch_name(dt)) != n || memcmp(ox_dtype_torch_name(dt), s, n) != 0) {
        if (n == 0)
          ERR(r, "dtype must not be empty");
        else
          out->s = ox_graph_intern_n(c->g, s, n);
      }
      ok = n != 0;
    }
  } else if (strcmp(tag, "ellipsis") == 0) {
    if (!json_object_is_type(v, json_type_boolean) || !json_object_get_boolean(v)) {
      ERR(r, "ellipsis must be true");
    } else {
      out->kind = OX_V_ELLIPSIS;
      ok = true;
    }
  } else if (strcmp(tag, "float") == 0) {
    if (get_str(r, v, "a non-finite float", &s, &n)) {
      if (n == 3 && memcmp(s, "inf", 3) == 0)
        *out = ox_value_float(INFINITY), ok = true;
      else if (n == 4 && memcmp(s, "-inf", 4) == 0)
        *out = ox_value_float(-INFINITY), ok = true;
      else if (n == 3 && memcmp(s, "nan", 3) == 0)
        *out = ox_value_float(NAN), ok = true;
      else
        ERR(r, "float must be \"inf\", \"-inf\" or \"nan\", not \"%.40s\"", s);
    }
  } else if (strcmp(tag, "dict") == 0) {
    if (expect_type(r, v, json_type_array, "a dict")) {
      size_t cnt = json_object_array_length(v);
      OxValue *items = cnt ? ox_graph_alloc(c->g, cnt * sizeof *items) : NULL;
      const char **keys = cnt ? ox_graph_alloc(c->g, cnt * sizeof *keys) : NULL;
      ok = cnt <= UINT32_MAX;
      for (size_t i = 0; ok && i < cnt; i++) {
        path_push_idx(r, i);
        json_object *pair = json_object_array_get_idx(v, i);
        if (!json_object_is_type(pair, json_type_array) || json_object_array_length(pair) != 2) {
          ERR(r, "a dict item must be a [key, value] pair, not %s", jtype_name(pair));
          ok = false;
        } else {
          path_push_idx(r, 0);
          keys[i] = get_interned(r, c->g, json_object_array_get_idx(pair, 0), "a dict key");
          path_pop(r);
          path_push_idx(r, 1);
          bool vok = read_value(c, json_object_array_get_idx(pair, 1), &items[i]);
          path_pop(r);
          ok = keys[i] && vok;
        }
        path_pop(r);
      }
      if (ok) *out = ox_graph_value_dict(c->g, keys, items, (uint32_t)cnt); /* a repeated key: the last value */
    }
  } else {
    ERR(r, "unknown value tag '%.40s' (expected tuple, node, sym, dtype, device, enum, ellipsis, dict, "
           "slice, raw or float)",
        tag);
  }
  path_pop(r);
  return ok;
}

static bool read_value(Ctx *c, json_object *o, OxValue *out) {
  *out = ox_value_none();
  switch (json_object_get_type(o)) {
  case json_type_null: return true;
  case json_type_boolean: *out = ox_value_bool(json_object_get_boolean(o)); return true;
  case json_type_int: {
    int64_t i;
    if (!get_int(c->r, o, "an integer", &i)) return false;
    *out = ox_value_int(i);
    return true;
  }
  case json_type_double: {
    double f = json_object_get_double(o);
    if (!isfinite(f)) {
      ERR(c->r, "a float literal must be finite (write {\"float\": \"inf\"|\"-inf\"|\"nan\"}; "
                "a literal too large for a double is also refused)");
      return false;
    }
    *out = ox_value_float(f);
    return true;
  }
  case json_type_string: {
    const char *s = get_interned(c->r, c->g, o, "a string");
    if (!s) return false;
    out->kind = OX_V_STR;
    out->s = s;
    return true;
  }
  case json_type_array: return read_items(c, o, OX_V_LIST, out);
  case json_type_object: return read_tagged(c, o, out);
  }
  return false;
}

/* ---- meta */

static bool read_dims(Rd *r, OxGraph *g, json_object *arr, OxDim *dims) {
  bool ok = true;
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *d = json_object_array_get_idx(arr, i);
    path_push_idx(r, i);
    if (json_object_is_type(d, json_type_string)) {
      dims[i].sym = get_interned(r, g, d, "a symbolic dimension");
      if (dims[i].sym && !dims[i].sym[0]) {
        ERR(r, "a symbolic dimension must not be empty");
        dims[i].sym = NULL;
      }
      if (!dims[i].sym) ok = false;
    } else if (json_object_is_type(d, json_type_int)) {
      if (!get_int(r, d, "a dimension", &dims[i].v)) ok = false;
    } else {
      ERR(r, "a dimension must be an integer or a string (symbolic), not %s", jtype_name(d));
      ok = false;
    }
    path_pop(r);
  }
  return ok;
}

static bool read_tensor_meta(Rd *r, OxGraph *g, json_object *o, OxTensorMeta *t) {
  if (!expect_type(r, o, json_type_object, "tensor meta")) return false;
  memset(t, 0, sizeof *t);
  t->rank = -1;
  bool ok = true, have_dtype = false;
  json_object *stride = NULL;
  json_object_object_foreach(o, k, v) {
    path_push_key(r, k);
    if (strcmp(k, "dtype") == 0) {
      const char *s;
      size_t n;
      if (get_str(r, v, "dtype", &s, &n)) {
        t->dtype = ox_dtype_from_abbr(s, n);
        have_dtype = true;
        if (t->dtype == OX_DT_UNKNOWN && !(n == 1 && s[0] == '?')) {
          ERR(r, "unknown dtype abbreviation '%.40s' (f32, bf16, i64, b8, ... or ? for unknown)", s);
          ok = false;
        }
      } else {
        ok = false;
      }
    } else if (strcmp(k, "shape") == 0) {
      if (!expect_type(r, v, json_type_array, "shape")) {
        ok = false;
      } else {
        size_t n = json_object_array_length(v);
        if (n > INT32_MAX) {
          ERR(r, "shape has too many dimensions");
          ok = false;
        } else {
          t->rank = (int32_t)n;
          t->shape = n ? ox_graph_alloc(g, n * sizeof(OxDim)) : NULL;
          if (!read_dims(r, g, v, t->shape)) ok = false;
        }
      }
    } else if (strcmp(k, "stride") == 0) {
      if (!expect_type(r, v, json_type_array, "stride")) ok = false;
      else stride = v;
    } else if (strcmp(k, "device") == 0) {
      t->device = get_interned(r, g, v, "device");
      if (!t->device) ok = false;
    } else {
      report(r, OX_SEV_WARNING, "unknown key '%.60s' in tensor meta ignored", k);
    }
    path_pop(r);
  }
  if (!have_dtype) {
    ERR(r, "tensor meta needs a \"dtype\"");
    ok = false;
  }
  if (stride && ok) {
    path_push_key(r, "stride");
    size_t n = json_object_array_length(stride);
    if (t->rank < 0) {
      ERR(r, "stride given without a shape");
      ok = false;
    } else if (n != (size_t)t->rank) {
      ERR(r, "stride has %zu entries but the shape has %d", n, (int)t->rank);
      ok = false;
    } else {
      t->has_stride = true;
      t->stride = n ? ox_graph_alloc(g, n * sizeof(OxDim)) : NULL;
      if (!read_dims(r, g, stride, t->stride)) ok = false;
    }
    path_pop(r);
  }
  char why[160];
  if (ok && ox_meta_absurd(t, why, sizeof why)) {
    /* sizes no tensor can have: a warning (an error under --strict), and no meta */
    report(r, OX_SEV_WARNING, "tensor meta ignored: %s", why);
    return false;
  }
  return ok;
}

static bool read_meta(Rd *r, OxGraph *g, json_object *o, OxMeta *m) {
  memset(m, 0, sizeof *m);
  if (!expect_type(r, o, json_type_object, "meta")) return false;
  bool ok = true;
  int kinds = 0;
  json_object_object_foreach(o, k, v) {
    path_push_key(r, k);
    if (strcmp(k, "inferred") == 0) {
      if (!json_object_is_type(v, json_type_boolean)) {
        ERR(r, "inferred must be a boolean, not %s", jtype_name(v));
        ok = false;
      } else {
        m->inferred = json_object_get_boolean(v);
      }
    } else if (strcmp(k, "tensor") == 0) {
      kinds++;
      m->kind = OX_META_TENSOR;
      m->n = 1;
      m->t = ox_graph_alloc(g, sizeof *m->t);
      if (!read_tensor_meta(r, g, v, m->t)) ok = false;
    } else if (strcmp(k, "tuple") == 0) {
      kinds++;
      m->kind = OX_META_TUPLE;
      if (!expect_type(r, v, json_type_array, "tuple meta")) {
        ok = false;
      } else {
        size_t n = json_object_array_length(v);
        m->n = (uint32_t)n;
        m->t = n ? ox_graph_alloc(g, n * sizeof *m->t) : NULL;
        for (size_t i = 0; i < n; i++) {
          path_push_idx(r, i);
          if (!read_tensor_meta(r, g, json_object_array_get_idx(v, i), &m->t[i])) ok = false;
          path_pop(r);
        }
      }
    } else if (strcmp(k, "symint") == 0) {
      kinds++;
      m->kind = OX_META_SYMINT;
      if (!json_object_is_type(v, json_type_null)) {
        m->sym = get_interned(r, g, v, "symint");
        if (!m->sym) ok = false;
      }
    } else if (strcmp(k, "scalar") == 0) {
      kinds++;
      m->kind = OX_META_SCALAR;
      if (!json_object_is_type(v, json_type_boolean) || !json_object_get_boolean(v)) {
        ERR(r, "scalar must be true");
        ok = false;
      }
    } else {
      report(r, OX_SEV_WARNING, "unknown key '%.60s' in meta ignored", k);
    }
    path_pop(r);
  }
  if (kinds > 1) {
    ERR(r, "meta must have at most one of tensor, tuple, symint, scalar");
    ok = false;
  }
  return ok;
}

/* ---- nodes and graphs */

static const char *const node_keys[] = {
  "name", "op", "target", "args", "kwargs", "meta", "declared_users", "flags", "src_line", "type_ann",
  "stack_trace", "module_path", "module_type", "default_value", "provenance", NULL,
};

static bool is_known(const char *const *keys, const char *k) {
  for (size_t i = 0; keys[i]; i++)
    if (strcmp(keys[i], k) == 0) return true;
  return false;
}

/* Pass 1: creates the node (name, op, target) or reports why it cannot. */
static OxNodeId create_node(Rd *r, OxGraph *g, json_object *o) {
  if (!expect_type(r, o, json_type_object, "a node")) return 0;
  json_object *jname, *jop, *jtarget;
  const char *name = NULL, *target = NULL, *s;
  size_t n;
  OxOp op = OX_OP_CALL_FUNCTION;
  bool ok = true;
  if (!json_object_object_get_ex(o, "name", &jname)) {
    ERR(r, "node has no \"name\"");
    return 0;
  }
  path_push_key(r, "name");
  if (get_str(r, jname, "name", &s, &n)) {
    if (n == 0) {
      ERR(r, "name must not be empty");
      ok = false;
    } else {
      name = ox_graph_intern_n(g, s, n);
      r->node_name = name;
      if (ox_graph_find(g, name)) {
        ERR(r, "duplicate node name '%.100s'", name);
        ok = false;
      }
    }
  } else {
    ok = false;
  }
  path_pop(r);
  if (!json_object_object_get_ex(o, "op", &jop)) {
    ERR(r, "node has no \"op\"");
    ok = false;
  } else {
    path_push_key(r, "op");
    if (get_str(r, jop, "op", &s, &n)) {
      if (!ox_op_from_name(s, n, &op)) {
        ERR(r, "unknown op '%.60s' (placeholder, get_attr, call_function, call_method, call_module, output)", s);
        ok = false;
      }
    } else {
      ok = false;
    }
    path_pop(r);
  }
  if (!json_object_object_get_ex(o, "target", &jtarget)) {
    ERR(r, "node has no \"target\"");
    ok = false;
  } else {
    path_push_key(r, "target");
    target = get_interned(r, g, jtarget, "target");
    if (!target) ok = false;
    path_pop(r);
  }
  /* With a usable name the node is created even when op or target is bad (the error is
   * already reported and fails the load), so references to it do not cascade into more. */
  if (!name || (!ok && ox_graph_find(g, name))) return 0;
  return ox_graph_add_node(g, op, name, target ? target : "", ox_value_none(), ox_value_none());
}

/* Pass 2: everything else about the node (all names are known now). */
static void fill_node(Rd *r, OxGraph *g, OxNodeId id, json_object *o) {
  Ctx c = {g, r, false};
  json_object_object_foreach(o, k, v) {
    path_push_key(r, k);
    if (!is_known(node_keys, k)) {
      report(r, OX_SEV_WARNING, "unknown key '%.60s' ignored", k);
    } else if (strcmp(k, "args") == 0) {
      OxValue args;
      if (expect_type(r, v, json_type_array, "args") && read_items(&c, v, OX_V_TUPLE, &args))
        ox_graph_set_args(g, id, args);
    } else if (strcmp(k, "kwargs") == 0) {
      if (expect_type(r, v, json_type_object, "kwargs")) {
        size_t cnt = (size_t)json_object_object_length(v), i = 0;
        OxValue *items = cnt ? ox_graph_alloc(g, cnt * sizeof *items) : NULL;
        const char **keys = cnt ? ox_graph_alloc(g, cnt * sizeof *keys) : NULL;
        bool ok = true;
        json_object_object_foreach(v, kk, kv) {
          path_push_key(r, kk);
          keys[i] = ox_graph_intern(g, kk);
          if (!read_value(&c, kv, &items[i])) ok = false;
          path_pop(r);
          i++;
        }
        if (ok) {
          OxValue kw = ox_value_none();
          kw.kind = OX_V_DICT;
          kw.n = (uint32_t)cnt;
          kw.u.items = items;
          kw.keys = keys;
          ox_graph_set_kwargs(g, id, kw);
        }
      }
    } else if (strcmp(k, "meta") == 0) {
      OxMeta m;
      if (read_meta(r, g, v, &m)) g->nodes[id].meta = m; /* already in g's arena */
    } else if (strcmp(k, "declared_users") == 0) {
      int64_t x;
      if (get_range(r, v, "declared_users", -1, INT32_MAX, &x)) g->nodes[id].declared_users = (int32_t)x;
    } else if (strcmp(k, "flags") == 0) {
      int64_t x;
      if (get_range(r, v, "flags", 0, UINT16_MAX, &x)) g->nodes[id].flags = (uint16_t)x;
    } else if (strcmp(k, "src_line") == 0) {
      int64_t x;
      if (get_range(r, v, "src_line", 0, UINT32_MAX, &x)) g->nodes[id].src_line = (uint32_t)x;
    } else if (strcmp(k, "provenance") == 0) {
      if (expect_type(r, v, json_type_array, "provenance")) {
        size_t cnt = json_object_array_length(v);
        OxNodeId *p = cnt ? ox_graph_alloc(g, cnt * sizeof *p) : NULL;
        bool ok = cnt <= UINT32_MAX;
        for (size_t i = 0; ok && i < cnt; i++) {
          int64_t x;
          path_push_idx(r, i);
          if (get_range(r, json_object_array_get_idx(v, i), "a provenance id", 1, UINT32_MAX, &x))
            p[i] = (OxNodeId)x;
          else
            ok = false;
          path_pop(r);
        }
        if (ok) {
          g->nodes[id].provenance = p;
          g->nodes[id].n_provenance = (uint32_t)cnt;
        }
      }
    } else if (strcmp(k, "type_ann") == 0 || strcmp(k, "stack_trace") == 0 || strcmp(k, "module_path") == 0 ||
               strcmp(k, "module_type") == 0 || strcmp(k, "default_value") == 0) {
      const char *s = get_interned(r, g, v, k);
      if (s) {
        OxNode *n = &g->nodes[id];
        if (k[0] == 't') n->type_ann = s;
        else if (k[0] == 's') n->stack_trace = s;
        else if (strcmp(k, "module_path") == 0) n->module_path = s;
        else if (k[0] == 'm') {
          n->module_type = s;
          ox_graph_opix_stale(g, id);
        }
        else n->default_value = s;
      }
    }
    path_pop(r);
  }
}

static const char *const graph_keys[] = {"name", "owner", "src_line", "nodes", "subgraphs", NULL};

typedef struct LaterCtx {
  const OxGraph *g;
  uint32_t pos;      /* of the user */
  OxNodeId later;    /* an input at or after it, 0 if none */
} LaterCtx;

static void later_cb(OxNodeId id, void *data) {
  LaterCtx *c = data;
  if (!c->later && id < c->g->n_nodes && !c->g->nodes[id].erased && c->g->nodes[id].pos >= c->pos) c->later = id;
}

/* References may point forward (the format allows it), but a graph is kept in an order where
 * every node follows its inputs: the nodes are then put in topological order (stable: file order
 * where it already is one); a node that depends on itself (directly or through others) is an
 * error located at the node. */
static void check_order(Rd *r, OxGraph *g, const OxNodeId *ids, size_t cnt) {
  ox_graph_renumber(g);
  for (size_t i = 0; i < cnt; i++) {
    if (!ids[i]) continue;
    const OxNode *n = &g->nodes[ids[i]];
    LaterCtx c = {g, n->pos, 0};
    ox_value_foreach_node(&n->args, later_cb, &c);
    ox_value_foreach_node(&n->kwargs, later_cb, &c);
    if (!c.later) continue;
    path_push_idx(r, i);
    r->node_depth = r->depth;
    r->node_name = n->name;
    if (c.later == ids[i] || !ox_graph_stable_toposort(g))
      ERR(r, "%s depends on itself%s", n->name, c.later == ids[i] ? "" : " through its inputs (a cycle)");
    r->node_depth = 0;
    path_pop(r);
    return;
  }
}

static OxGraph *read_graph(Rd *r, json_object *o) {
  if (!expect_type(r, o, json_type_object, "a graph")) return NULL;
  OxGraph *g = ox_graph_new();
  json_object *v;
  json_object_object_foreach(o, k, kv) {
    (void)kv;
    if (is_known(graph_keys, k)) continue;
    path_push_key(r, k);
    report(r, OX_SEV_WARNING, "unknown key '%.60s' in graph ignored", k);
    path_pop(r);
  }
  if (json_object_object_get_ex(o, "name", &v)) {
    path_push_key(r, "name");
    const char *s = get_interned(r, g, v, "graph name");
    if (s) g->name = s;
    path_pop(r);
  }
  if (json_object_object_get_ex(o, "owner", &v)) {
    path_push_key(r, "owner");
    g->sub_owner = get_interned(r, g, v, "owner");
    path_pop(r);
  }
  if (json_object_object_get_ex(o, "src_line", &v)) {
    int64_t x;
    path_push_key(r, "src_line");
    if (get_range(r, v, "src_line", 0, UINT32_MAX, &x)) g->src_line = (uint32_t)x;
    path_pop(r);
  }
  if (!json_object_object_get_ex(o, "nodes", &v)) {
    ERR(r, "graph has no \"nodes\"");
  } else {
    path_push_key(r, "nodes");
    if (expect_type(r, v, json_type_array, "nodes")) {
      size_t cnt = json_object_array_length(v);
      OxNodeId *ids = cnt ? calloc(cnt, sizeof *ids) : NULL;
      if (cnt && !ids) {
        ERR(r, "out of memory for %zu nodes", cnt);
        cnt = 0;
      }
      for (size_t i = 0; i < cnt && r->errors < MAX_ERRORS; i++) {
        path_push_idx(r, i);
        r->node_depth = r->depth;
        r->node_name = NULL;
        ids[i] = create_node(r, g, json_object_array_get_idx(v, i));
        r->node_depth = 0;
        path_pop(r);
      }
      for (size_t i = 0; i < cnt && r->errors < MAX_ERRORS; i++) {
        if (!ids[i]) continue;
        path_push_idx(r, i);
        r->node_depth = r->depth;
        r->node_name = g->nodes[ids[i]].name;
        fill_node(r, g, ids[i], json_object_array_get_idx(v, i));
        r->node_depth = 0;
        path_pop(r);
      }
      if (r->errors < MAX_ERRORS) check_order(r, g, ids, cnt);
      free(ids);
    }
    path_pop(r);
  }
  if (json_object_object_get_ex(o, "subgraphs", &v)) {
    path_push_key(r, "subgraphs");
    if (expect_type(r, v, json_type_array, "subgraphs")) {
      for (size_t i = 0; i < json_object_array_length(v) && r->errors < MAX_ERRORS; i++) {
        path_push_idx(r, i);
        OxGraph *sub = read_graph(r, json_object_array_get_idx(v, i));
        /* the owner is not checked against the enclosing graph's nodes: a loader may name a
         * nested module class that no node calls (print_readable's unused submodules) */
        if (sub) ox_graph_add_subgraph(g, sub);
        path_pop(r);
      }
    }
    path_pop(r);
  }
  return g;
}

static const char *const root_keys[] = {"format", "version", "graphs", "record", NULL};

/* Parses the whole text into a json-c tree: a BOM is skipped, depth limited, trailing text
 * refused, syntax errors located. NULL with diagnostics on failure. */
static json_object *parse_root(Rd *r, const char *text, size_t len, uint32_t max_depth, OxDiagList *diags) {
  r->text = text;
  r->len = len;
  r->d = diags;
  /* editors on some systems prepend a byte order mark; json-c does not skip it */
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) r->start = 3;
  if (max_depth > INT_MAX) max_depth = INT_MAX;
  if (len > (size_t)INT_MAX) {
    ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "JSON input of %zu bytes is larger than the reader's 2 GiB limit",
                len);
    return NULL;
  }
  struct json_tokener *tok = json_tokener_new_ex((int)max_depth);
  if (!tok) {
    ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "out of memory");
    return NULL;
  }
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
  json_object *root = json_tokener_parse_ex(tok, text + r->start, (int)(len - r->start));
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t end = r->start + json_tokener_get_parse_end(tok);
  if (!root) {
    uint32_t line, col;
    size_t off = end < len ? end : len;
    /* json-c's parse end is the offset of the offending character */
    offset_to_linecol(text, len, off, &line, &col);
    if (jerr == json_tokener_continue)
      ox_diag_add(diags, OX_SEV_ERROR, line, col, NULL, "JSON syntax error: unexpected end of input");
    else if (jerr == json_tokener_error_depth)
      ox_diag_add(diags, OX_SEV_ERROR, line, col, text + off, "JSON nesting deeper than the limit of %u",
                  max_depth);
    else
      ox_diag_add(diags, OX_SEV_ERROR, line, col, text + off, "JSON syntax error: %s",
                  json_tokener_error_desc(jerr));
    json_tokener_free(tok);
    return NULL;
  }
  json_tokener_free(tok);
  if (skip_ws(text, len, end) < len) {
    uint32_t line, col;
    size_t off = skip_ws(text, len, end);
    offset_to_linecol(text, len, off, &line, &col);
    ox_diag_add(diags, OX_SEV_ERROR, line, col, text + off, "JSON syntax error: unexpected text after the document");
    json_object_put(root);
    return NULL;
  }
  return root;
}

int ox_json_read(const char *text, size_t len, const OxLoadOptions *opt, OxDoc *doc, OxDiagList *diags) {
  Rd *r = calloc(1, sizeof *r); /* the path stack is too big for a comfortable stack frame */
  if (!r) {
    ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "out of memory");
    return -1;
  }
  size_t errors_before = diags->n_errors;
  uint32_t max_depth = opt && opt->max_depth ? opt->max_depth : 256;
  json_object *root = parse_root(r, text, len, max_depth, diags);
  if (!root) {
    free(r);
    return -1;
  }
  json_object *v;
  if (!json_object_is_type(root, json_type_object)) {
    ERR(r, "the document must be a JSON object, not %s", jtype_name(root));
    goto out;
  }
  if (!json_object_object_get_ex(root, "format", &v)) {
    ERR(r, "no \"format\" key: not an Optimus JSON document (expected \"format\": \"optimus-fx\")");
    goto out;
  }
  path_push_key(r, "format");
  if (!json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), "optimus-fx") != 0) {
    ERR(r, "format must be \"optimus-fx\"");
    path_pop(r);
    goto out;
  }
  path_pop(r);
  if (!json_object_object_get_ex(root, "version", &v)) {
    ERR(r, "no \"version\" key");
    goto out;
  }
  path_push_key(r, "version");
  int64_t version;
  if (!get_int(r, v, "version", &version)) {
    path_pop(r);
    goto out;
  }
  if (version != 1) {
    ERR(r, "unsupported version %" PRId64 " (this reader knows version 1%s)", version,
        version > 1 ? "; the file was written by a newer Optimus" : "");
    path_pop(r);
    goto out;
  }
  path_pop(r);
  json_object_object_foreach(root, k, kv) {
    (void)kv;
    if (is_known(root_keys, k)) continue;
    path_push_key(r, k);
    report(r, OX_SEV_WARNING, "unknown key '%.60s' ignored", k);
    path_pop(r);
  }
  if (!json_object_object_get_ex(root, "graphs", &v)) {
    ERR(r, "no \"graphs\" key");
    goto out;
  }
  path_push_key(r, "graphs");
  if (expect_type(r, v, json_type_array, "graphs")) {
    for (size_t i = 0; i < json_object_array_length(v) && r->errors < MAX_ERRORS; i++) {
      path_push_idx(r, i);
      OxGraph *g = read_graph(r, json_object_array_get_idx(v, i));
      if (g) ox_doc_add_graph(doc, g);
      path_pop(r);
    }
    if (json_object_array_length(v) == 0) ERR(r, "the document holds no graph");
    if (r->errors >= MAX_ERRORS)
      ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "too many errors (%u); stopped reading", r->errors);
  }
  path_pop(r);
  if (json_object_object_get_ex(root, "record", &v) && r->errors == 0) {
    /* recorded example data (docs/interpreter.md); ox_record.c reads and validates it */
    size_t before = diags->n_errors;
    if (ox_record_from_json(v, &doc->record, diags) != 0 && diags->n_errors == before) ERR(r, "bad \"record\"");
  }
out:
  json_object_put(root);
  free(r);
  if (diags->n_errors > errors_before) return -1;
  return doc->n_graphs ? 0 : -1;
}

/* ================================================================== trace files */

/* docs/trace-format.md. The writer lays out one step per block; the reader validates every
 * field it knows and reports located errors like the document reader. */

#include "run/ox_trace.h"

static const char *const step_kind_names[] = {"applied", "rejected", "check_failed"};
static const char *const edit_kind_names[] = {"add", "erase", "args", "move", "meta", "rename", "replace_input"};
enum { N_EDIT_KINDS = sizeof edit_kind_names / sizeof edit_kind_names[0] };

static void put_names(OxBuf *b, const char *key, const char *const *names, uint32_t n) {
  if (!n) return;
  ox_buf_puts(b, ", ");
  put_key(b, key);
  ox_buf_putc(b, '[');
  for (uint32_t i = 0; i < n; i++) {
    if (i) ox_buf_puts(b, ", ");
    put_str(b, names[i]);
  }
  ox_buf_putc(b, ']');
}

static void put_num(OxBuf *b, const char *key, double v) {
  ox_buf_puts(b, ", ");
  put_key(b, key);
  if (isfinite(v))
    ox_buf_put_pyfloat(b, v);
  else
    ox_buf_puts(b, "null");
}

static void write_edit(const OxTrace *t, const OxTraceEdit *e, OxBuf *b) {
  const char *kind = e->kind == OX_TEDIT_MOVE && !e->name ? "toposort" : edit_kind_names[e->kind];
  ox_buf_puts(b, "{\"kind\": ");
  put_str(b, kind);
  write_opt_str(b, "name", e->name);
  switch ((OxTraceEditKind)e->kind) {
  case OX_TEDIT_ADD:
    ox_buf_puts(b, ", \"after\": ");
    if (e->after)
      put_str(b, e->after);
    else
      ox_buf_puts(b, "null");
    write_opt_str(b, "op", ox_op_name((OxOp)e->op));
    write_opt_str(b, "target", e->target);
    ox_buf_puts(b, ", \"args\": ");
    write_items(t->pool, &e->data->args, b);
    ox_buf_puts(b, ", \"kwargs\": ");
    write_value(t->pool, &e->data->kwargs, b);
    if (e->has_meta) write_meta(&e->data->meta, b);
    break;
  case OX_TEDIT_ARGS:
    ox_buf_puts(b, ", \"args\": ");
    write_items(t->pool, &e->data->args, b);
    ox_buf_puts(b, ", \"kwargs\": ");
    write_value(t->pool, &e->data->kwargs, b);
    break;
  case OX_TEDIT_MOVE:
    if (e->name) {
      ox_buf_puts(b, ", \"after\": ");
      if (e->after)
        put_str(b, e->after);
      else
        ox_buf_puts(b, "null");
    }
    break;
  case OX_TEDIT_META: write_meta(&e->data->meta, b); break;
  case OX_TEDIT_RENAME: write_opt_str(b, "to", e->new_name); break;
  case OX_TEDIT_REPLACE:
    write_opt_str(b, "old", e->from);
    write_opt_str(b, "new", e->to);
    break;
  case OX_TEDIT_ERASE: break;
  }
  ox_buf_putc(b, '}');
}

static void write_step(const OxTrace *t, const OxStep *s, OxBuf *b) {
  ox_buf_printf(b, "    {\"seq\": %u, \"kind\": ", s->seq);
  put_str(b, step_kind_names[s->kind < 3 ? s->kind : 0]);
  if (s->applied_index) ox_buf_printf(b, ", \"applied_index\": %u", s->applied_index);
  write_opt_str(b, "phase", s->phase);
  write_opt_str(b, "pass", s->pass);
  write_opt_str(b, "rule", s->rule);
  write_opt_str(b, "rule_file", s->rule_file);
  if (s->rule_line) ox_buf_printf(b, ", \"rule_line\": %u", s->rule_line);
  write_opt_str(b, "anchor", s->anchor);
  write_opt_str(b, "key", s->key);
  put_names(b, "matched", s->matched, s->n_matched);
  put_names(b, "removed", s->removed, s->n_removed);
  put_names(b, "added", s->added, s->n_added);
  if (s->n_prov) {
    ox_buf_puts(b, ", \"provenance\": [");
    for (uint32_t i = 0; i < s->n_prov; i++) {
      if (i) ox_buf_puts(b, ", ");
      ox_buf_putc(b, '[');
      put_str(b, s->prov_old[i]);
      ox_buf_puts(b, ", ");
      put_str(b, s->prov_new[i]);
      ox_buf_putc(b, ']');
    }
    ox_buf_putc(b, ']');
  }
  put_names(b, "scaffolding", s->scaffold, s->n_scaffold);
  if (s->kind != OX_STEP_APPLIED) {
    ox_buf_puts(b, ",\n     \"reason\": {\"code\": ");
    put_str(b, ox_reason_code_name((OxReasonCode)s->reason.code));
    ox_buf_puts(b, ", \"args\": [");
    for (uint32_t i = 0; i < s->reason.n_args; i++) {
      if (i) ox_buf_puts(b, ", ");
      put_str(b, s->reason.args[i]);
    }
    ox_buf_puts(b, "], \"nodes\": [");
    for (uint32_t i = 0; i < s->reason.n_args; i++) {
      if (i) ox_buf_puts(b, ", ");
      ox_buf_puts(b, s->reason.nodes[i] ? "true" : "false");
    }
    char *text = ox_reason_format(&s->reason);
    ox_buf_puts(b, "], \"text\": ");
    put_str(b, text);
    free(text);
    ox_buf_putc(b, '}');
  }
  bool any = false;
  for (int k = 0; k < OX_CHECK_KINDS; k++) any |= s->checks[k].status != OX_CHECK_NOT_RUN;
  if (any) {
    ox_buf_puts(b, ",\n     \"checks\": {");
    bool first = true;
    for (int k = 0; k < OX_CHECK_KINDS; k++) {
      const OxCheckResult *c = &s->checks[k];
      if (c->status == OX_CHECK_NOT_RUN) continue;
      if (!first) ox_buf_puts(b, ", ");
      first = false;
      put_key(b, ox_check_kind_name((OxCheckKind)k));
      ox_buf_puts(b, "{\"status\": ");
      put_str(b, ox_check_status_name((OxCheckStatus)c->status));
      write_opt_str(b, "detail", c->detail);
      if (k == OX_CHECK_NUMERIC && c->trials) {
        put_num(b, "max_abs", c->max_abs);
        put_num(b, "max_rel", c->max_rel);
        put_num(b, "tol", c->tol);
        ox_buf_printf(b, ", \"trials\": %u", c->trials);
      }
      write_opt_str(b, "checked_shape", c->checked_shape);
      put_num(b, "seconds", c->seconds);
      ox_buf_putc(b, '}');
    }
    ox_buf_putc(b, '}');
  }
  if (s->n_edits) {
    ox_buf_puts(b, ",\n     \"edits\": [");
    for (uint32_t i = 0; i < s->n_edits; i++) {
      ox_buf_puts(b, i ? ",\n       " : "\n       ");
      write_edit(t, &s->edits[i], b);
    }
    ox_buf_puts(b, "]");
  }
  if (s->options) {
    ox_buf_puts(b, ", \"options\": ");
    put_str(b, s->options);
  }
  put_num(b, "seconds", s->seconds);
  ox_buf_putc(b, '}');
}

void ox_trace_write_json(const OxTrace *t, OxBuf *out) {
  ox_buf_printf(out, "{\n  \"format\": \"optimus-trace\",\n  \"version\": %d,\n  \"input\": {\"file\": ",
                OX_TRACE_VERSION);
  put_str(out, t->input_file ? t->input_file : "");
  ox_buf_puts(out, ", \"hash\": ");
  put_str(out, t->input_hash ? t->input_hash : "");
  ox_buf_puts(out, "}");
  if (t->config) {
    /* the config is JSON text produced by ox_pipeline_to_json; embed it as an object */
    ox_buf_puts(out, ",\n  \"config\": ");
    if (t->config[0] == '{')
      ox_buf_puts(out, t->config);
    else
      put_str(out, t->config);
  }
  if (t->checks) {
    ox_buf_puts(out, ",\n  \"checks\": ");
    put_str(out, t->checks);
  }
  ox_buf_printf(out, ",\n  \"summary\": {\"steps\": %u, \"applied\": %u, \"rejected\": %u, \"check_failed\": %u}",
                t->n_steps, t->n_applied, t->n_rejected, t->n_check_failed);
  ox_buf_puts(out, ",\n  \"counters\": {");
  for (uint32_t i = 0; i < t->n_counters; i++) {
    if (i) ox_buf_puts(out, ", ");
    put_key(out, t->counter_names[i]);
    ox_buf_printf(out, "%lld", (long long)t->counter_values[i]);
  }
  ox_buf_puts(out, "}");
  put_num(out, "seconds", t->seconds);
  ox_buf_puts(out, ",\n  \"steps\": [");
  for (uint32_t i = 0; i < t->n_steps; i++) {
    ox_buf_puts(out, i ? ",\n" : "\n");
    write_step(t, &t->steps[i], out);
  }
  ox_buf_puts(out, t->n_steps ? "\n  ]\n}\n" : "]\n}\n");
}

/* ---- reader */

static const char *opt_string(Rd *r, OxTrace *t, json_object *o, const char *key) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) return NULL;
  path_push_key(r, key);
  const char *s = json_object_is_type(v, json_type_string) ? ox_trace_intern(t, json_object_get_string(v)) : NULL;
  if (!s) ERR(r, "%s must be a string, not %s", key, jtype_name(v));
  path_pop(r);
  return s;
}

static uint32_t opt_u32(Rd *r, json_object *o, const char *key) {
  json_object *v;
  int64_t x = 0;
  if (!json_object_object_get_ex(o, key, &v)) return 0;
  path_push_key(r, key);
  if (!get_range(r, v, key, 0, UINT32_MAX, &x)) x = 0;
  path_pop(r);
  return (uint32_t)x;
}

static double opt_num(json_object *o, const char *key) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v)) return 0;
  if (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)) return json_object_get_double(v);
  return NAN;
}

static const char **read_names(Rd *r, OxTrace *t, json_object *o, const char *key, uint32_t *n) {
  json_object *v;
  *n = 0;
  if (!json_object_object_get_ex(o, key, &v)) return NULL;
  path_push_key(r, key);
  const char **out = NULL;
  if (expect_type(r, v, json_type_array, key)) {
    size_t len = json_object_array_length(v);
    out = ox_graph_alloc(t->pool, (len + 1) * sizeof *out);
    for (size_t i = 0; i < len; i++) {
      json_object *e = json_object_array_get_idx(v, i);
      path_push_idx(r, i);
      if (json_object_is_type(e, json_type_string))
        out[(*n)++] = ox_trace_intern(t, json_object_get_string(e));
      else
        ERR(r, "node names must be strings, not %s", jtype_name(e));
      path_pop(r);
    }
  }
  path_pop(r);
  return out;
}

static void read_edit(Rd *r, OxTrace *t, json_object *o, OxTraceEdit *e) {
  memset(e, 0, sizeof *e);
  if (!expect_type(r, o, json_type_object, "an edit")) return;
  const char *kind = opt_string(r, t, o, "kind");
  if (!kind) {
    ERR(r, "an edit needs a \"kind\"");
    return;
  }
  int k = -1;
  if (strcmp(kind, "toposort") == 0) {
    e->kind = OX_TEDIT_MOVE;
    return;
  }
  for (int i = 0; i < N_EDIT_KINDS; i++)
    if (strcmp(kind, edit_kind_names[i]) == 0) k = i;
  if (k < 0) {
    ERR(r, "unknown edit kind '%.40s'", kind);
    return;
  }
  e->kind = (uint8_t)k;
  e->name = opt_string(r, t, o, "name");
  if (!e->name) ERR(r, "a %s edit needs a \"name\"", kind);
  e->after = opt_string(r, t, o, "after");
  e->new_name = opt_string(r, t, o, "to");
  e->target = opt_string(r, t, o, "target");
  if (k == OX_TEDIT_REPLACE) {
    e->from = opt_string(r, t, o, "old");
    e->to = opt_string(r, t, o, "new");
    if (!e->from || !e->to) ERR(r, "a replace_input edit needs \"old\" and \"new\" node names");
  }
  const char *op = opt_string(r, t, o, "op");
  if (k == OX_TEDIT_ADD) {
    OxOp opv;
    if (!op || !ox_op_from_name(op, strlen(op), &opv))
      ERR(r, "an add edit needs a valid \"op\"");
    else
      e->op = (uint8_t)opv;
    if (!e->target) ERR(r, "an add edit needs a \"target\"");
  }
  Ctx c = {t->pool, r, true};
  json_object *v;
  /* only the kinds that carry args / meta get data (and read them) */
  if (k != OX_TEDIT_ADD && k != OX_TEDIT_ARGS && k != OX_TEDIT_META) return;
  OxTraceEditData *d = ox_trace_edit_data(t, e);
  d->args = ox_graph_value_seq(t->pool, OX_V_TUPLE, NULL, 0);
  d->kwargs = ox_graph_value_dict(t->pool, NULL, NULL, 0);
  if (k != OX_TEDIT_META && json_object_object_get_ex(o, "args", &v)) {
    path_push_key(r, "args");
    if (expect_type(r, v, json_type_array, "args")) read_items(&c, v, OX_V_TUPLE, &d->args);
    path_pop(r);
  }
  if (k != OX_TEDIT_META && json_object_object_get_ex(o, "kwargs", &v)) {
    path_push_key(r, "kwargs");
    OxValue kw;
    if (read_value(&c, v, &kw)) {
      if (kw.kind == OX_V_DICT)
        d->kwargs = kw;
      else
        ERR(r, "kwargs must be an object");
    }
    path_pop(r);
  }
  if (k != OX_TEDIT_ARGS && json_object_object_get_ex(o, "meta", &v)) {
    path_push_key(r, "meta");
    if (read_meta(r, t->pool, v, &d->meta)) e->has_meta = true;
    path_pop(r);
  }
  if (k == OX_TEDIT_META && !e->has_meta) ERR(r, "a meta edit needs a \"meta\"");
}

static void read_step(Rd *r, OxTrace *t, json_object *o) {
  if (!expect_type(r, o, json_type_object, "a step")) return;
  const char *kind = opt_string(r, t, o, "kind");
  int k = -1;
  for (int i = 0; kind && i < 3; i++)
    if (strcmp(kind, step_kind_names[i]) == 0) k = i;
  if (k < 0) {
    ERR(r, "a step needs \"kind\": applied, rejected or check_failed");
    return;
  }
  OxStep *s = ox_trace_add_step(t, (OxStepKind)k);
  s->applied_index = opt_u32(r, o, "applied_index");
  if (s->applied_index > t->n_graph_steps) t->n_graph_steps = s->applied_index;
  s->phase = opt_string(r, t, o, "phase");
  s->pass = opt_string(r, t, o, "pass");
  s->rule = opt_string(r, t, o, "rule");
  s->rule_file = opt_string(r, t, o, "rule_file");
  s->rule_line = opt_u32(r, o, "rule_line");
  s->anchor = opt_string(r, t, o, "anchor");
  s->key = opt_string(r, t, o, "key");
  s->options = opt_string(r, t, o, "options");
  s->matched = read_names(r, t, o, "matched", &s->n_matched);
  s->removed = read_names(r, t, o, "removed", &s->n_removed);
  s->added = read_names(r, t, o, "added", &s->n_added);
  s->scaffold = read_names(r, t, o, "scaffolding", &s->n_scaffold);
  s->seconds = opt_num(o, "seconds");
  json_object *v;
  if (json_object_object_get_ex(o, "provenance", &v)) {
    path_push_key(r, "provenance");
    if (expect_type(r, v, json_type_array, "provenance")) {
      size_t n = json_object_array_length(v);
      s->prov_old = ox_graph_alloc(t->pool, (n + 1) * sizeof(char *));
      s->prov_new = ox_graph_alloc(t->pool, (n + 1) * sizeof(char *));
      for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(v, i);
        path_push_idx(r, i);
        if (json_object_is_type(p, json_type_array) && json_object_array_length(p) == 2 &&
            json_object_is_type(json_object_array_get_idx(p, 0), json_type_string) &&
            json_object_is_type(json_object_array_get_idx(p, 1), json_type_string)) {
          s->prov_old[s->n_prov] = ox_trace_intern(t, json_object_get_string(json_object_array_get_idx(p, 0)));
          s->prov_new[s->n_prov++] = ox_trace_intern(t, json_object_get_string(json_object_array_get_idx(p, 1)));
        } else {
          ERR(r, "a provenance entry must be [old name, new name]");
        }
        path_pop(r);
      }
    }
    path_pop(r);
  }
  if (json_object_object_get_ex(o, "reason", &v)) {
    path_push_key(r, "reason");
    if (expect_type(r, v, json_type_object, "reason")) {
      const char *code = opt_string(r, t, v, "code");
      OxReasonCode rc;
      if (!code || !ox_reason_code_from_name(code, &rc)) {
        ERR(r, "unknown reason code '%.40s'", code ? code : "");
      } else {
        s->reason.code = (uint16_t)rc;
        json_object *args, *nodes = NULL;
        json_object_object_get_ex(v, "nodes", &nodes);
        if (json_object_object_get_ex(v, "args", &args) && json_object_is_type(args, json_type_array)) {
          size_t n = json_object_array_length(args);
          if (n > OX_REASON_MAX_ARGS) n = OX_REASON_MAX_ARGS;
          for (size_t i = 0; i < n; i++) {
            json_object *a = json_object_array_get_idx(args, i);
            s->reason.args[i] = ox_trace_intern(t, json_object_is_type(a, json_type_string) ? json_object_get_string(a) : "");
            json_object *isn = nodes && json_object_is_type(nodes, json_type_array) ? json_object_array_get_idx(nodes, i) : NULL;
            if (isn && json_object_get_boolean(isn)) s->reason.nodes[i] = s->reason.args[i];
          }
          s->reason.n_args = (uint8_t)n;
        }
      }
    }
    path_pop(r);
  }
  if (json_object_object_get_ex(o, "checks", &v)) {
    path_push_key(r, "checks");
    if (expect_type(r, v, json_type_object, "checks")) {
      json_object_object_foreach(v, ck, cv) {
        int kk = -1;
        for (int i = 0; i < OX_CHECK_KINDS; i++)
          if (strcmp(ck, ox_check_kind_name((OxCheckKind)i)) == 0) kk = i;
        path_push_key(r, ck);
        if (kk < 0 || !json_object_is_type(cv, json_type_object)) {
          ERR(r, "unknown check '%.40s'", ck);
          path_pop(r);
          continue;
        }
        OxCheckResult *c = &s->checks[kk];
        const char *st = opt_string(r, t, cv, "status");
        int si = -1;
        for (int i = 0; st && i <= OX_CHECK_SKIPPED; i++)
          if (strcmp(st, ox_check_status_name((OxCheckStatus)i)) == 0) si = i;
        if (si < 0) ERR(r, "check status must be not-run, passed, failed or skipped");
        c->status = (uint8_t)(si < 0 ? 0 : si);
        c->detail = opt_string(r, t, cv, "detail");
        c->checked_shape = opt_string(r, t, cv, "checked_shape");
        c->max_abs = opt_num(cv, "max_abs");
        c->max_rel = opt_num(cv, "max_rel");
        c->tol = opt_num(cv, "tol");
        c->trials = opt_u32(r, cv, "trials");
        c->seconds = opt_num(cv, "seconds");
        path_pop(r);
      }
    }
    path_pop(r);
  }
  if (json_object_object_get_ex(o, "edits", &v)) {
    path_push_key(r, "edits");
    if (expect_type(r, v, json_type_array, "edits")) {
      size_t n = json_object_array_length(v);
      OxTraceEdit *edits = ox_graph_alloc(t->pool, (n + 1) * sizeof *edits);
      for (size_t i = 0; i < n; i++) {
        path_push_idx(r, i);
        read_edit(r, t, json_object_array_get_idx(v, i), &edits[i]);
        path_pop(r);
      }
      /* s stays valid: nothing in this loop adds steps */
      s->edits = edits;
      s->n_edits = (uint32_t)n;
    }
    path_pop(r);
  }
}

/* The trace reader streams: a trace of a 100k-node run is tens of MB of JSON, and a DOM of all of
 * it costs ~25x its size. The top-level object and the "steps" array are scanned here (strings
 * and brackets only); every other member and every step is a small JSON text of its own, parsed
 * strictly by json-c, converted, and freed before the next. Syntax errors are located in the
 * whole file; semantic errors name their path (steps[12].edits[3]) and are located as usual. */

typedef struct Stream {
  Rd *r;
  const char *text;
  size_t len;
  struct json_tokener *tok;
  char *tmp;
  size_t tmp_cap;
} Stream;

static void stream_syntax(Stream *st, size_t off, const char *fmt, const char *what) {
  uint32_t line, col;
  if (off > st->len) off = st->len;
  offset_to_linecol(st->text, st->len, off, &line, &col);
  ox_diag_add(st->r->d, OX_SEV_ERROR, line, col, st->text + off, fmt, what);
  st->r->errors++;
}

/* Parses text[s, e) (one JSON value) strictly; NULL after reporting a located error. */
static json_object *stream_parse(Stream *st, size_t s, size_t e) {
  json_tokener_reset(st->tok);
  const char *p = st->text + s;
  size_t n = e - s;
  if (n && p[0] != '{' && p[0] != '[' && p[0] != '"') {
    /* json-c finishes a bare scalar only at a terminator: parse a NUL-terminated copy */
    if (n + 1 > st->tmp_cap) {
      st->tmp_cap = n + 64;
      st->tmp = ox_xrealloc(st->tmp, st->tmp_cap);
    }
    memcpy(st->tmp, p, n);
    st->tmp[n] = 0;
    p = st->tmp;
    n++;
  }
  json_object *o = json_tokener_parse_ex(st->tok, p, (int)n);
  enum json_tokener_error jerr = json_tokener_get_error(st->tok);
  size_t end = json_tokener_get_parse_end(st->tok);
  if (!o) {
    if (jerr == json_tokener_continue) stream_syntax(st, e, "JSON syntax error: %s", "unexpected end of a value");
    else stream_syntax(st, s + end, "JSON syntax error: %s", json_tokener_error_desc(jerr));
    return NULL;
  }
  if (p == st->text + s && end != n) {
    json_object_put(o);
    stream_syntax(st, s + end, "JSON syntax error: %s", "unexpected text after a value");
    return NULL;
  }
  return o;
}

/* The lines the edits of the step object text[s, e) start on (line = the line of s): the
 * step was parsed already, so the text is valid JSON; its "edits" member is found among the
 * top-level members and its elements are walked with skip_value. */
static void edit_lines(const char *text, size_t s, size_t e, uint32_t line, OxStep *st) {
  size_t i = skip_ws(text, e, s + 1), at = s;
  while (i < e && text[i] == '"') {
    size_t ke = skip_string(text, e, i);
    bool edits = ke - i == 7 && memcmp(text + i, "\"edits\"", 7) == 0;
    i = skip_ws(text, e, ke);
    if (i >= e || text[i] != ':') return;
    i = skip_ws(text, e, i + 1);
    if (edits && i < e && text[i] == '[') {
      i = skip_ws(text, e, i + 1);
      for (uint32_t k = 0; k < st->n_edits && i < e && text[i] != ']'; k++) {
        for (; at < i; at++)
          if (text[at] == '\n') line++;
        st->edits[k].src_line = line;
        i = skip_ws(text, e, skip_value(text, e, i));
        if (i < e && text[i] == ',') i = skip_ws(text, e, i + 1);
      }
      return;
    }
    i = skip_ws(text, e, skip_value(text, e, i));
    if (i < e && text[i] == ',') i = skip_ws(text, e, i + 1);
  }
}

/* Extent of the value at i (validated later by stream_parse); 0 on a structural error. */
static size_t stream_value_end(Stream *st, size_t i) {
  if (i >= st->len) {
    stream_syntax(st, i, "JSON syntax error: %s", "unexpected end of input");
    return 0;
  }
  char c = st->text[i];
  if (c == ',' || c == '}' || c == ']' || c == ':') {
    stream_syntax(st, i, "JSON syntax error: %s", "a value is missing");
    return 0;
  }
  size_t e = skip_value(st->text, st->len, i);
  if (e <= i) {
    stream_syntax(st, i, "JSON syntax error: %s", "a value is missing");
    return 0;
  }
  return e;
}

typedef struct Member {
  char key[32];
  json_object *v;
  size_t at;
} Member;

enum { MAX_MEMBERS = 16 };

int ox_trace_read_json(const char *text, size_t len, const char *file, OxTrace **out, OxDiagList *diags) {
  (void)file;
  *out = NULL;
  Rd *r = calloc(1, sizeof *r);
  if (!r) return -1;
  r->text = text;
  r->len = len;
  r->d = diags;
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) r->start = 3;
  if (len > (size_t)INT_MAX) {
    ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "JSON input of %zu bytes is larger than the reader's 2 GiB limit",
                len);
    free(r);
    return -1;
  }
  size_t errors_before = diags->n_errors;
  Stream st = {r, text, len, json_tokener_new_ex(254), NULL, 0};
  OxTrace *t = NULL;
  Member mem[MAX_MEMBERS];
  uint32_t n_mem = 0;
  size_t steps_at = SIZE_MAX; /* offset of the steps array's '[' */
  if (!st.tok) {
    ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "out of memory");
    free(r);
    return -1;
  }
  json_tokener_set_flags(st.tok, JSON_TOKENER_STRICT);

  /* pass 1: the members of the top-level object; "steps" is only located */
  size_t i = skip_ws(text, len, r->start);
  if (i >= len || text[i] != '{') {
    stream_syntax(&st, i, "%s", i >= len ? "empty input: expected an Optimus trace (a JSON object)"
                                         : "not an Optimus trace (expected a JSON object)");
    goto out;
  }
  i = skip_ws(text, len, i + 1);
  if (i < len && text[i] == '}') i = skip_ws(text, len, i + 1);
  else
    for (;;) {
      if (i >= len || text[i] != '"') {
        stream_syntax(&st, i, "JSON syntax error: %s", i >= len ? "unexpected end of input" : "expected a member name");
        goto out;
      }
      size_t ke = skip_string(text, len, i);
      json_object *key = stream_parse(&st, i, ke);
      if (!key) goto out;
      char kbuf[32];
      snprintf(kbuf, sizeof kbuf, "%s", json_object_get_string(key));
      bool long_key = strlen(json_object_get_string(key)) >= sizeof kbuf;
      json_object_put(key);
      i = skip_ws(text, len, ke);
      if (i >= len || text[i] != ':') {
        stream_syntax(&st, i, "JSON syntax error: %s", "expected ':' after a member name");
        goto out;
      }
      i = skip_ws(text, len, i + 1);
      size_t ve = stream_value_end(&st, i);
      if (!ve) goto out;
      if (!long_key && strcmp(kbuf, "steps") == 0) {
        steps_at = i; /* the last one wins, as in json-c */
      } else if (!long_key) {
        json_object *v = stream_parse(&st, i, ve);
        if (!v) goto out;
        uint32_t k = 0;
        while (k < n_mem && strcmp(mem[k].key, kbuf) != 0) k++;
        if (k < n_mem) {
          json_object_put(mem[k].v); /* duplicate key: the last one wins */
        } else if (n_mem < MAX_MEMBERS) {
          n_mem++;
        } else {
          json_object_put(v); /* an unknown extra member: ignored */
          v = NULL;
        }
        if (v) {
          snprintf(mem[k].key, sizeof mem[k].key, "%s", kbuf);
          mem[k].v = v;
          mem[k].at = i;
        }
      }
      i = skip_ws(text, len, ve);
      if (i < len && text[i] == ',') {
        i = skip_ws(text, len, i + 1);
        continue;
      }
      if (i < len && text[i] == '}') {
        i = skip_ws(text, len, i + 1);
        break;
      }
      stream_syntax(&st, i, "JSON syntax error: %s", i >= len ? "unexpected end of input" : "expected ',' or '}'");
      goto out;
    }
  if (i < len) {
    stream_syntax(&st, i, "JSON syntax error: %s", "unexpected text after the document");
    goto out;
  }

  /* the header, checked before any step is read */
  json_object *root = json_object_new_object();
  for (uint32_t k = 0; k < n_mem; k++) json_object_object_add(root, mem[k].key, json_object_get(mem[k].v));
  t = ox_trace_new();
  json_object *v;
  bool header_ok = false;
  if (!json_object_object_get_ex(root, "format", &v) || !json_object_is_type(v, json_type_string) ||
      strcmp(json_object_get_string(v), "optimus-trace") != 0) {
    ERR(r, "not an Optimus trace (expected \"format\": \"optimus-trace\")");
  } else if (!json_object_object_get_ex(root, "version", &v) || !json_object_is_type(v, json_type_int) ||
             json_object_get_int64(v) < 1 || json_object_get_int64(v) > OX_TRACE_VERSION) {
    path_push_key(r, "version");
    ERR(r, "unsupported trace version (this reader knows versions 1 to %d)", OX_TRACE_VERSION);
    path_pop(r);
  } else {
    header_ok = true;
  }
  if (header_ok) {
    if (json_object_object_get_ex(root, "input", &v) && json_object_is_type(v, json_type_object)) {
      path_push_key(r, "input");
      t->input_file = opt_string(r, t, v, "file");
      t->input_hash = opt_string(r, t, v, "hash");
      if (t->input_hash && !t->input_hash[0]) t->input_hash = NULL;
      path_pop(r);
    }
    if (!t->input_hash) {
      path_push_key(r, "input");
      report(r, OX_SEV_WARNING, "no input hash: the trace cannot be checked against the graph it is used with "
                                "(replay refuses it)");
      path_pop(r);
    }
    if (json_object_object_get_ex(root, "config", &v) && json_object_is_type(v, json_type_object))
      t->config = ox_trace_intern(t, json_object_to_json_string_ext(v, JSON_C_TO_STRING_SPACED));
    else
      t->config = opt_string(r, t, root, "config");
    t->checks = opt_string(r, t, root, "checks");
    t->seconds = opt_num(root, "seconds");
    if (json_object_object_get_ex(root, "counters", &v) && json_object_is_type(v, json_type_object)) {
      uint32_t n = 0;
      json_object_object_foreach(v, ck, cv) {
        (void)ck;
        (void)cv;
        n++;
      }
      t->counter_names = ox_graph_alloc(t->pool, (n + 1) * sizeof(char *));
      t->counter_values = ox_graph_alloc(t->pool, (n + 1) * sizeof(int64_t));
      json_object_object_foreach(v, ck2, cv2) {
        t->counter_names[t->n_counters] = ox_trace_intern(t, ck2);
        t->counter_values[t->n_counters++] = json_object_get_int64(cv2);
      }
    }
    if (steps_at == SIZE_MAX) ERR(r, "no \"steps\" key");
  }
  json_object_put(root);
  if (!header_ok || steps_at == SIZE_MAX) goto out;

  /* pass 2: the steps, one at a time */
  path_push_key(r, "steps");
  i = steps_at;
  if (text[i] != '[') {
    ERR(r, "expected an array, got %s", text[i] == '{' ? "an object" : text[i] == '"' ? "a string" : "a scalar");
  } else {
    i = skip_ws(text, len, i + 1);
    size_t idx = 0;
    size_t line_at = 0; /* lines counted up to here, once over the whole text */
    uint32_t line = 1;
    if (i < len && text[i] == ']') i++;
    else
      while (r->errors < MAX_ERRORS) {
        size_t e = stream_value_end(&st, i);
        if (!e) break;
        json_object *o = stream_parse(&st, i, e);
        if (!o) break;
        for (; line_at < i; line_at++)
          if (text[line_at] == '\n') line++;
        path_push_idx(r, idx++);
        uint32_t before = t->n_steps;
        read_step(r, t, o);
        if (t->n_steps > before) {
          t->steps[t->n_steps - 1].src_line = line;
          edit_lines(text, i, e, line, &t->steps[t->n_steps - 1]);
        }
        path_pop(r);
        json_object_put(o);
        i = skip_ws(text, len, e);
        if (i < len && text[i] == ',') {
          i = skip_ws(text, len, i + 1);
          continue;
        }
        if (i < len && text[i] == ']') break;
        stream_syntax(&st, i, "JSON syntax error: %s", i >= len ? "unexpected end of input" : "expected ',' or ']'");
        break;
      }
  }
  path_pop(r);
out:
  for (uint32_t k = 0; k < n_mem; k++) json_object_put(mem[k].v);
  json_tokener_free(st.tok);
  free(st.tmp);
  free(r);
  if (diags->n_errors > errors_before) {
    ox_trace_free(t);
    return -1;
  }
  *out = t;
  return 0;
}

/* ================================================================== pass configuration */

/* {"pre_grad_fusion_options": {"batch_linear": {"min_fuse_set_size": 3}, ...},
 *  "post_grad_fusion_options": {...}} — PyTorch's shape. Presence enables a pass; the run
 * order is PyTorch's driver order (ox_pipeline_order_like_pytorch): normalization_pass, the
 * batch fusions, then the other passes, each group in the file's order. */

#include "passes/ox_pass.h"

int ox_pipeline_from_config(const char *text, size_t len, const char *file, OxPipeline *out, OxDiagList *diags) {
  (void)file;
  bool pre_section = false;
  memset(out, 0, sizeof *out);
  Rd *r = calloc(1, sizeof *r);
  if (!r) return -1;
  size_t errors_before = diags->n_errors;
  json_object *root = parse_root(r, text, len, 64, diags);
  if (!root) {
    free(r);
    return -1;
  }
  if (!json_object_is_type(root, json_type_object)) {
    ERR(r, "a pass configuration must be a JSON object");
    goto out;
  }
  static const char *const sections[] = {"pre_grad_fusion_options", "post_grad_fusion_options"};
  json_object_object_foreach(root, key, val) {
    (void)val;
    if (strcmp(key, sections[0]) && strcmp(key, sections[1])) {
      path_push_key(r, key);
      ERR(r, "unknown section '%.60s' (use pre_grad_fusion_options or post_grad_fusion_options)", key);
      path_pop(r);
    }
  }
  for (int sct = 0; sct < 2; sct++) {
    json_object *sec;
    if (!json_object_object_get_ex(root, sections[sct], &sec)) continue;
    if (sct == 0) pre_section = true;
    path_push_key(r, sections[sct]);
    if (expect_type(r, sec, json_type_object, sections[sct])) {
      json_object_object_foreach(sec, pname, popts) {
        path_push_key(r, pname);
        const OxPassInfo *pass = ox_pass_find(pname);
        if (!pass && sct == 1 && (!strcmp(pname, "shape_padding_multiplier") || !strcmp(pname, "pad_aten_mm_pass"))) {
          /* upstream's Optimus driver applies these names as empty pattern passes; their
           * options tune Inductor's pad_mm (matmul padding chosen by timing kernels on a GPU) */
          report(r, OX_SEV_WARNING,
                 "%s tunes Inductor's pad_mm (matmul padding decided by GPU benchmarks), which Optimus does not run; "
                 "like PyTorch's Optimus driver it rewrites nothing here",
                 pname);
        } else if (!pass) {
          ERR(r, "unknown pass '%.60s' (see `optimus optimize --list-passes`)", pname);
        } else if ((pass->phase == OX_PHASE_POST) != (sct == 1)) {
          ERR(r, "%s is a %s-grad pass; put it under %s", pname, pass->phase == OX_PHASE_POST ? "post" : "pre",
              sections[pass->phase == OX_PHASE_POST ? 1 : 0]);
        } else if (expect_type(r, popts, json_type_object, "the options of a pass")) {
          out->entries = realloc(out->entries, (out->n + 1) * sizeof *out->entries);
          OxPipelineEntry *e = &out->entries[out->n++];
          e->pass = pass;
          ox_pass_options_default(&e->opt);
          json_object_object_foreach(popts, ok, ov) {
            path_push_key(r, ok);
            char val[64];
            if (json_object_is_type(ov, json_type_boolean))
              snprintf(val, sizeof val, "%s", json_object_get_boolean(ov) ? "true" : "false");
            else if (json_object_is_type(ov, json_type_int))
              snprintf(val, sizeof val, "%" PRId64, json_object_get_int64(ov));
            else if (json_object_is_type(ov, json_type_double))
              snprintf(val, sizeof val, "%.17g", json_object_get_double(ov));
            else
              snprintf(val, sizeof val, "?");
            int rc = ox_pass_option_set(&e->opt, ok, val);
            if (rc == -1) ERR(r, "unknown option '%.60s'", ok);
            if (rc == -2) ERR(r, "bad value for %.60s: %s", ok, json_object_to_json_string(ov));
            path_pop(r);
          }
        }
        path_pop(r);
      }
    }
    path_pop(r);
  }
out:
  json_object_put(root);
  free(r);
  if (diags->n_errors > errors_before) {
    ox_pipeline_free(out);
    return -1;
  }
  /* upstream's pre-grad driver renames NumPy-style keywords on every graph, whatever the
   * options: a config with a pre-grad section runs numpy_compat_normalization first */
  bool has_numpy = false;
  for (uint32_t i = 0; i < out->n; i++) has_numpy |= !strcmp(out->entries[i].pass->name, "numpy_compat_normalization");
  if (pre_section && !has_numpy) {
    out->entries = realloc(out->entries, (out->n + 1) * sizeof *out->entries);
    out->entries[out->n].pass = ox_pass_find("numpy_compat_normalization");
    ox_pass_options_default(&out->entries[out->n].opt);
    out->n++;
  }
  ox_pipeline_order_like_pytorch(out); /* run as PyTorch's drivers run the file's passes */
  return 0;
}

/* ------------------------------------------------------------------ shapes files (--shapes) */

#include "ops/ox_shape.h"

/* A dtype as a shapes file may spell it: f32, float32, torch.float32, or safetensors' F32 /
 * BF16 / I64 / BOOL. */
static OxDType shapes_dtype(const char *s) {
  size_t n = strlen(s);
  OxDType dt = ox_dtype_from_abbr(s, n);
  if (dt == OX_DT_UNKNOWN) dt = ox_dtype_from_torch_name(s, n);
  if (dt == OX_DT_UNKNOWN && n < 16) {
    char low[16];
    for (size_t i = 0; i <= n; i++) low[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
    dt = strcmp(low, "bool") == 0 ? ox_dtype_from_abbr("b8", 2) : ox_dtype_from_abbr(low, n);
  }
  return dt;
}

/* [24, 32] (ints, or strings for symbolic dims) -> e->shape */
static bool shapes_dims(Rd *r, OxShapeList *l, json_object *arr, OxShapeEntry *e) {
  size_t n = json_object_array_length(arr);
  if (n > 64) {
    ERR(r, "a shape has %zu dims, more than 64", n);
    return false;
  }
  e->rank = (int32_t)n;
  e->shape = n ? ox_graph_alloc(l->pool, n * sizeof *e->shape) : NULL;
  for (size_t i = 0; i < n; i++) {
    json_object *d = json_object_array_get_idx(arr, i);
    path_push_idx(r, i);
    if (json_object_is_type(d, json_type_int) && json_object_get_int64(d) >= 0) {
      e->shape[i] = (OxDim){json_object_get_int64(d), NULL};
    } else if (json_object_is_type(d, json_type_string) && json_object_get_string_len(d) > 0) {
      e->shape[i] = (OxDim){0, ox_graph_intern(l->pool, json_object_get_string(d))};
    } else if (json_object_is_type(d, json_type_int)) {
      ERR(r, "a size cannot be negative (%lld)", (long long)json_object_get_int64(d));
      path_pop(r);
      return false;
    } else {
      ERR(r, "a size must be a non-negative integer or a symbol such as \"s0\", not %s", jtype_name(d));
      path_pop(r);
      return false;
    }
    path_pop(r);
  }
  OxTensorMeta t = {.rank = e->rank, .shape = e->shape};
  char why[160];
  if (ox_meta_absurd(&t, why, sizeof why)) {
    ERR(r, "%s", why);
    return false;
  }
  return true;
}

int ox_shapes_read_json(const char *text, size_t len, OxShapeList *l, OxDiagList *d) {
  Rd *r = calloc(1, sizeof *r);
  if (!r) {
    ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "out of memory");
    return 1;
  }
  json_object *root = parse_root(r, text, len, 64, d);
  if (!root) {
    free(r);
    return 1;
  }
  if (!json_object_is_type(root, json_type_object)) {
    ERR(r, "a shapes file is a JSON object of name: shape, not %s", jtype_name(root));
  } else {
    json_object_object_foreach(root, key, val) {
      if (strcmp(key, "__metadata__") == 0) continue; /* safetensors' own */
      path_push_key(r, key);
      OxShapeEntry e = {ox_graph_intern(l->pool, key), OX_DT_UNKNOWN, -1, NULL};
      bool ok = false;
      if (json_object_is_type(val, json_type_array)) {
        ok = shapes_dims(r, l, val, &e);
      } else if (json_object_is_type(val, json_type_string)) {
        OxMeta m;
        const char *s = json_object_get_string(val);
        if (!ox_parse_tensor_annotation(l->pool, s, strlen(s), &m) || m.kind != OX_META_TENSOR) {
          ERR(r, "'%.80s' is not a tensor annotation such as \"f32[24, 32]\"", s);
        } else {
          e.dtype = m.t[0].dtype;
          e.rank = m.t[0].rank;
          e.shape = m.t[0].shape;
          ok = true;
        }
      } else if (json_object_is_type(val, json_type_object)) {
        json_object *dt = NULL, *sh = NULL;
        json_object_object_get_ex(val, "dtype", &dt);
        json_object_object_get_ex(val, "shape", &sh);
        if (!sh || !json_object_is_type(sh, json_type_array)) {
          ERR(r, "an entry object needs \"shape\": [sizes]");
        } else if (dt && !json_object_is_type(dt, json_type_string)) {
          path_push_key(r, "dtype");
          ERR(r, "dtype must be a string such as \"f32\", not %s", jtype_name(dt));
          path_pop(r);
        } else if (dt && (e.dtype = shapes_dtype(json_object_get_string(dt))) == OX_DT_UNKNOWN) {
          path_push_key(r, "dtype");
          ERR(r, "unknown dtype '%.40s' (f32, f16, bf16, i64, float32, torch.float32, F32 ...)",
              json_object_get_string(dt));
          path_pop(r);
        } else {
          path_push_key(r, "shape");
          ok = shapes_dims(r, l, sh, &e);
          path_pop(r);
        }
      } else {
        ERR(r, "a shape is [sizes], \"f32[sizes]\" or {\"dtype\": ..., \"shape\": [sizes]}, not %s", jtype_name(val));
      }
      path_pop(r);
      if (!ok) continue;
      if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->items = ox_xrealloc(l->items, l->cap * sizeof *l->items);
      }
      l->items[l->n++] = e;
    }
  }
  json_object_put(root);
  int errors = (int)r->errors;
  free(r);
  return errors;
}
