/* ox_json.c - Optimus JSON (docs/format-json.md, schema version 1): the document reader, and the
 * reading machinery every JSON file of engine/json/ shares (ox_json_private.h). The writer is
 * ox_json_write.c, trace files ox_json_trace.c, pass configurations and shapes files
 * ox_json_config.c.
 *
 * A clean document (what optimus writes) is read first by ox_json_fast.c, in one pass without
 * json-c; anything it does not take (malformed, forward references, anything to report) is read
 * here as a tree, which is what the rest of this comment describes.
 *
 * The reader parses with json-c (only engine/json/ and run/ox_record.c use it) in strict mode with the
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
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "json/ox_json_private.h"
#include "run/ox_record.h"

/* ================================================================== reader */

void ox_json_path_push_key(Rd *r, const char *key) {
  if (r->depth < PATH_MAX_STEPS) r->path[r->depth] = (PathStep){key, 0};
  r->depth++;
}

void ox_json_path_push_idx(Rd *r, size_t idx) {
  if (r->depth < PATH_MAX_STEPS) r->path[r->depth] = (PathStep){NULL, idx};
  r->depth++;
}

void ox_json_path_pop(Rd *r) { r->depth--; }

/* ---- locating a path in the raw text (the text is valid JSON: json-c accepted it) */

size_t ox_json_skip_ws(const char *t, size_t len, size_t i) {
  while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) i++;
  return i;
}

/* The bytes the skips below stop at: quotes and backslashes in a string, quotes and brackets
 * (counted alike) between strings. Everything else is passed over in a tight loop: the trace
 * reader skips a whole steps array (17 MB at 100k nodes) to find the tables behind it. */
enum { SK_QUOTE = 1, SK_OPEN, SK_CLOSE };
static const uint8_t in_string[256] = {['"'] = 1, ['\''] = 1, ['\\'] = 1};
static const uint8_t in_container[256] = {['"'] = SK_QUOTE, ['\''] = SK_QUOTE, ['{'] = SK_OPEN,
                                          ['['] = SK_OPEN, ['}'] = SK_CLOSE, [']'] = SK_CLOSE};

/* i at an opening quote (json-c also accepts single quotes); returns the index past the close. */
size_t ox_json_skip_string(const char *t, size_t len, size_t i) {
  const unsigned char *u = (const unsigned char *)t;
  unsigned char q = u[i++];
  for (;;) {
    while (i < len && !in_string[u[i]]) i++;
    if (i >= len || u[i] == q) break;
    i += u[i] == '\\' ? 2 : 1; /* an escape skips the byte after it; the other quote is text */
  }
  return i < len ? i + 1 : len;
}

size_t ox_json_skip_value(const char *t, size_t len, size_t i) {
  if (i >= len) return len;
  if (t[i] == '"' || t[i] == '\'') return ox_json_skip_string(t, len, i);
  if (t[i] == '{' || t[i] == '[') {
    const unsigned char *u = (const unsigned char *)t;
    size_t depth = 0;
    while (i < len) {
      while (i < len && !in_container[u[i]]) i++;
      if (i >= len) break;
      uint8_t c = in_container[u[i]];
      if (c == SK_QUOTE) {
        i = ox_json_skip_string(t, len, i);
        continue;
      }
      if (c == SK_OPEN) depth++;
      else if (--depth == 0) return i + 1;
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
  size_t at = ox_json_skip_ws(t, len, r->start);
  if (steps > PATH_MAX_STEPS) steps = PATH_MAX_STEPS;
  for (size_t s = 0; s < steps && at < len; s++) {
    const PathStep *st = &r->path[s];
    size_t i = at + 1;
    size_t found = SIZE_MAX;
    if (st->key && t[at] == '{') {
      size_t klen = strlen(st->key);
      for (;;) {
        i = ox_json_skip_ws(t, len, i);
        if (i >= len || t[i] == '}') break;
        size_t ks = i + 1;
        i = ox_json_skip_string(t, len, i);
        bool match = i >= ks + 1 && i - 1 - ks == klen && memcmp(t + ks, st->key, klen) == 0;
        i = ox_json_skip_ws(t, len, i);
        if (i < len && t[i] == ':') i++;
        i = ox_json_skip_ws(t, len, i);
        if (match) found = i;
        i = ox_json_skip_value(t, len, i);
        i = ox_json_skip_ws(t, len, i);
        if (i < len && t[i] == ',') i++;
        else break;
      }
    } else if (!st->key && t[at] == '[') {
      for (size_t k = 0;; k++) {
        i = ox_json_skip_ws(t, len, i);
        if (i >= len || t[i] == ']') break;
        if (k == st->idx) {
          found = i;
          break;
        }
        i = ox_json_skip_value(t, len, i);
        i = ox_json_skip_ws(t, len, i);
        if (i < len && t[i] == ',') i++;
        else break;
      }
    }
    if (found == SIZE_MAX) break;
    at = found;
  }
  return at;
}

void ox_json_offset_to_linecol(const char *t, size_t len, size_t off, uint32_t *line, uint32_t *col) {
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
void ox_json_report(Rd *r, OxSeverity sev, const char *fmt, ...) {
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
    ox_json_offset_to_linecol(r->text, r->len, off, &line, &col);
    snippet = r->text + (off < r->len ? off : r->len);
  }
  if (sev == OX_SEV_ERROR) r->errors++;
  if (where[0])
    ox_diag_add(r->d, sev, line, col, snippet, "%s: %s", where, msg);
  else
    ox_diag_add(r->d, sev, line, col, snippet, "%s", msg);
}

const char *ox_json_jtype_name(json_object *o) {
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
    ERR(r, "%s must be a string, not %s", what, ox_json_jtype_name(o));
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
    ERR(r, "%s must be an integer, not %s", what, ox_json_jtype_name(o));
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

bool ox_json_get_range(Rd *r, json_object *o, const char *what, int64_t lo, int64_t hi, int64_t *out) {
  if (!get_int(r, o, what, out)) return false;
  if (*out < lo || *out > hi) {
    ERR(r, "%s must be between %" PRId64 " and %" PRId64 ", not %" PRId64, what, lo, hi, *out);
    return false;
  }
  return true;
}

bool ox_json_expect_type(Rd *r, json_object *o, json_type t, const char *what) {
  if (json_object_is_type(o, t)) return true;
  const char *want = t == json_type_object ? "an object" : t == json_type_array ? "an array" : "?";
  ERR(r, "%s must be %s, not %s", what, want, ox_json_jtype_name(o));
  return false;
}

/* ---- values */

bool ox_json_read_items(Ctx *c, json_object *arr, OxValueKind kind, OxValue *out) {
  size_t n = json_object_array_length(arr);
  if (n > UINT32_MAX) {
    ERR(c->r, "too many items");
    return false;
  }
  OxValue *items = n ? ox_graph_alloc(c->g, n * sizeof *items) : NULL;
  bool ok = true;
  for (size_t i = 0; i < n; i++) {
    ox_json_path_push_idx(c->r, i);
    if (!ox_json_read_value(c, json_object_array_get_idx(arr, i), &items[i])) ok = false;
    ox_json_path_pop(c->r);
  }
  *out = ox_value_none();
  out->kind = (uint8_t)kind;
  out->n = (uint32_t)n;
  out->u.items = items;
  return ok;
}

/* A node reference of a trace (version 3 on): v an index into c->names; false after an error. */
static bool name_index_node(Ctx *c, json_object *v, OxValue *out) {
  int64_t ix;
  if (!json_object_is_type(v, json_type_int)) {
    ERR(c->r, "a node reference must be an index into \"names\", not %s", ox_json_jtype_name(v));
  } else if ((ix = json_object_get_int64(v)) < 0 || ix >= c->n_names) {
    ERR(c->r, "node index %" PRId64 " is out of range (\"names\" has %" PRIu32 " entries)", ix, c->n_names);
  } else {
    *out = ox_value_node(ox_graph_name_ref_interned(c->g, c->names[ix]));
    return true;
  }
  return false;
}

const char ox_json_expand_msg[] =
    "the ranges and getitems items of this trace stand for more node references and edits than the file has "
    "bytes (a trace optimus writes never does)";

bool ox_json_read_range(Rd *r, json_object *v, uint32_t n_names, uint64_t *expand_left, uint32_t *lo, uint32_t *hi) {
  json_object *a = json_object_array_length(v) == 2 ? json_object_array_get_idx(v, 0) : NULL;
  json_object *b = a ? json_object_array_get_idx(v, 1) : NULL;
  if (!json_object_is_type(a, json_type_int) || !json_object_is_type(b, json_type_int) ||
      json_object_get_int64(a) >= json_object_get_int64(b)) {
    ERR(r, "a range must be [first, last]: two indices into \"names\", first < last");
    return false;
  }
  int64_t ia = json_object_get_int64(a), ib = json_object_get_int64(b);
  if (ia < 0 || ib >= n_names) {
    ERR(r, "node index %" PRId64 " is out of range (\"names\" has %" PRIu32 " entries)", ia < 0 ? ia : ib, n_names);
    return false;
  }
  if ((uint64_t)(ib - ia) + 1 > *expand_left) {
    ERR(r, "%s", ox_json_expand_msg);
    *expand_left = 0;
    return false;
  }
  *expand_left -= (uint64_t)(ib - ia) + 1;
  *lo = (uint32_t)ia;
  *hi = (uint32_t)ib;
  return true;
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
  ox_json_path_push_key(r, tag);
  bool ok = false;
  *out = ox_value_none();
  const char *s;
  size_t n;
  if (strcmp(tag, "tuple") == 0) {
    ok = ox_json_expect_type(r, v, json_type_array, "a tuple") && ox_json_read_items(c, v, OX_V_TUPLE, out);
  } else if (strcmp(tag, "slice") == 0) {
    if (ox_json_expect_type(r, v, json_type_array, "a slice")) {
      if (json_object_array_length(v) != 3)
        ERR(r, "a slice must have 3 items (start, stop, step), not %zu", json_object_array_length(v));
      else
        ok = ox_json_read_items(c, v, OX_V_SLICE, out);
    }
  } else if (strcmp(tag, "node") == 0 && c->names) {
    ok = name_index_node(c, v, out);
  } else if (strcmp(tag, "nodes") == 0 && c->names && c->node_lists) {
    /* trace version 4: a list of node references, as indices */
    if (ox_json_expect_type(r, v, json_type_array, "a node list")) {
      size_t len = json_object_array_length(v), cnt = 0;
      ok = true;
      /* version 5: [first, last] stands for first ... last */
      for (size_t i = 0; c->expand_left && ok && i < len; i++) {
        json_object *e = json_object_array_get_idx(v, i);
        uint32_t lo, hi;
        if (!json_object_is_type(e, json_type_array)) {
          cnt++;
          continue;
        }
        ox_json_path_push_idx(r, i);
        ok = ox_json_read_range(r, e, c->n_names, c->expand_left, &lo, &hi);
        cnt += ok ? (size_t)(hi - lo) + 1 : 0;
        ox_json_path_pop(r);
      }
      if (!c->expand_left) cnt = len;
      OxValue *items = ok && cnt ? ox_graph_alloc(c->g, cnt * sizeof *items) : NULL;
      ok = ok && cnt <= UINT32_MAX;
      for (size_t i = 0, at = 0; ok && i < len; i++) {
        json_object *e = json_object_array_get_idx(v, i);
        if (c->expand_left && json_object_is_type(e, json_type_array)) {
          int64_t lo = json_object_get_int64(json_object_array_get_idx(e, 0)),
                  hi = json_object_get_int64(json_object_array_get_idx(e, 1));
          for (int64_t k = lo; k <= hi; k++) items[at++] = ox_value_node(ox_graph_name_ref_interned(c->g, c->names[k]));
          continue;
        }
        ox_json_path_push_idx(r, i);
        ok = name_index_node(c, e, &items[at++]);
        ox_json_path_pop(r);
      }
      if (ok) {
        out->kind = OX_V_LIST;
        out->n = (uint32_t)cnt;
        out->u.items = items;
      }
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
    if (ox_json_expect_type(r, v, json_type_array, "a dict")) {
      size_t cnt = json_object_array_length(v);
      OxValue *items = cnt ? ox_graph_alloc(c->g, cnt * sizeof *items) : NULL;
      const char **keys = cnt ? ox_graph_alloc(c->g, cnt * sizeof *keys) : NULL;
      ok = cnt <= UINT32_MAX;
      for (size_t i = 0; ok && i < cnt; i++) {
        ox_json_path_push_idx(r, i);
        json_object *pair = json_object_array_get_idx(v, i);
        if (!json_object_is_type(pair, json_type_array) || json_object_array_length(pair) != 2) {
          ERR(r, "a dict item must be a [key, value] pair, not %s", ox_json_jtype_name(pair));
          ok = false;
        } else {
          ox_json_path_push_idx(r, 0);
          keys[i] = get_interned(r, c->g, json_object_array_get_idx(pair, 0), "a dict key");
          ox_json_path_pop(r);
          ox_json_path_push_idx(r, 1);
          bool vok = ox_json_read_value(c, json_object_array_get_idx(pair, 1), &items[i]);
          ox_json_path_pop(r);
          ok = keys[i] && vok;
        }
        ox_json_path_pop(r);
      }
      if (ok) *out = ox_graph_value_dict(c->g, keys, items, (uint32_t)cnt); /* a repeated key: the last value */
    }
  } else {
    ERR(r, "unknown value tag '%.40s' (expected tuple, node, sym, dtype, device, enum, ellipsis, dict, "
           "slice, raw or float)",
        tag);
  }
  ox_json_path_pop(r);
  return ok;
}

bool ox_json_read_value(Ctx *c, json_object *o, OxValue *out) {
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
  case json_type_array: return ox_json_read_items(c, o, OX_V_LIST, out);
  case json_type_object: return read_tagged(c, o, out);
  }
  return false;
}

/* ---- meta */

static bool read_dims(Rd *r, OxGraph *g, json_object *arr, OxDim *dims) {
  bool ok = true;
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *d = json_object_array_get_idx(arr, i);
    ox_json_path_push_idx(r, i);
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
      ERR(r, "a dimension must be an integer or a string (symbolic), not %s", ox_json_jtype_name(d));
      ok = false;
    }
    ox_json_path_pop(r);
  }
  return ok;
}

static bool read_tensor_meta(Rd *r, OxGraph *g, json_object *o, OxTensorMeta *t) {
  if (!ox_json_expect_type(r, o, json_type_object, "tensor meta")) return false;
  memset(t, 0, sizeof *t);
  t->rank = -1;
  bool ok = true, have_dtype = false;
  json_object *stride = NULL;
  json_object_object_foreach(o, k, v) {
    ox_json_path_push_key(r, k);
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
      if (!ox_json_expect_type(r, v, json_type_array, "shape")) {
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
      if (!ox_json_expect_type(r, v, json_type_array, "stride")) ok = false;
      else stride = v;
    } else if (strcmp(k, "device") == 0) {
      t->device = get_interned(r, g, v, "device");
      if (!t->device) ok = false;
    } else {
      ox_json_report(r, OX_SEV_WARNING, "unknown key '%.60s' in tensor meta ignored", k);
    }
    ox_json_path_pop(r);
  }
  if (!have_dtype) {
    ERR(r, "tensor meta needs a \"dtype\"");
    ok = false;
  }
  if (stride && ok) {
    ox_json_path_push_key(r, "stride");
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
    ox_json_path_pop(r);
  }
  char why[160];
  if (ok && ox_meta_absurd(t, why, sizeof why)) {
    /* sizes no tensor can have: a warning (an error under --strict), and no meta */
    ox_json_report(r, OX_SEV_WARNING, "tensor meta ignored: %s", why);
    return false;
  }
  return ok;
}

bool ox_json_read_meta(Rd *r, OxGraph *g, json_object *o, OxMeta *m) {
  memset(m, 0, sizeof *m);
  if (!ox_json_expect_type(r, o, json_type_object, "meta")) return false;
  bool ok = true;
  int kinds = 0;
  json_object_object_foreach(o, k, v) {
    ox_json_path_push_key(r, k);
    if (strcmp(k, "inferred") == 0) {
      if (!json_object_is_type(v, json_type_boolean)) {
        ERR(r, "inferred must be a boolean, not %s", ox_json_jtype_name(v));
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
      if (!ox_json_expect_type(r, v, json_type_array, "tuple meta")) {
        ok = false;
      } else {
        size_t n = json_object_array_length(v);
        m->n = (uint32_t)n;
        m->t = n ? ox_graph_alloc(g, n * sizeof *m->t) : NULL;
        for (size_t i = 0; i < n; i++) {
          ox_json_path_push_idx(r, i);
          if (!read_tensor_meta(r, g, json_object_array_get_idx(v, i), &m->t[i])) ok = false;
          ox_json_path_pop(r);
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
      ox_json_report(r, OX_SEV_WARNING, "unknown key '%.60s' in meta ignored", k);
    }
    ox_json_path_pop(r);
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
  if (!ox_json_expect_type(r, o, json_type_object, "a node")) return 0;
  json_object *jname, *jop, *jtarget;
  const char *name = NULL, *target = NULL, *s;
  size_t n;
  OxOp op = OX_OP_CALL_FUNCTION;
  bool ok = true;
  if (!json_object_object_get_ex(o, "name", &jname)) {
    ERR(r, "node has no \"name\"");
    return 0;
  }
  ox_json_path_push_key(r, "name");
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
  ox_json_path_pop(r);
  if (!json_object_object_get_ex(o, "op", &jop)) {
    ERR(r, "node has no \"op\"");
    ok = false;
  } else {
    ox_json_path_push_key(r, "op");
    if (get_str(r, jop, "op", &s, &n)) {
      if (!ox_op_from_name(s, n, &op)) {
        ERR(r, "unknown op '%.60s' (placeholder, get_attr, call_function, call_method, call_module, output)", s);
        ok = false;
      }
    } else {
      ok = false;
    }
    ox_json_path_pop(r);
  }
  if (!json_object_object_get_ex(o, "target", &jtarget)) {
    ERR(r, "node has no \"target\"");
    ok = false;
  } else {
    ox_json_path_push_key(r, "target");
    target = get_interned(r, g, jtarget, "target");
    if (!target) ok = false;
    ox_json_path_pop(r);
  }
  /* With a usable name the node is created even when op or target is bad (the error is
   * already reported and fails the load), so references to it do not cascade into more. */
  if (!name || (!ok && ox_graph_find(g, name))) return 0;
  return ox_graph_add_node(g, op, name, target ? target : "", ox_value_none(), ox_value_none());
}

/* Pass 2: everything else about the node (all names are known now). */
static void fill_node(Rd *r, OxGraph *g, OxNodeId id, json_object *o) {
  Ctx c = {g, r, false, NULL, 0, false, NULL};
  json_object_object_foreach(o, k, v) {
    ox_json_path_push_key(r, k);
    if (!is_known(node_keys, k)) {
      ox_json_report(r, OX_SEV_WARNING, "unknown key '%.60s' ignored", k);
    } else if (strcmp(k, "args") == 0) {
      OxValue args;
      if (ox_json_expect_type(r, v, json_type_array, "args") && ox_json_read_items(&c, v, OX_V_TUPLE, &args))
        ox_graph_set_args(g, id, args);
    } else if (strcmp(k, "kwargs") == 0) {
      if (ox_json_expect_type(r, v, json_type_object, "kwargs")) {
        size_t cnt = (size_t)json_object_object_length(v), i = 0;
        OxValue *items = cnt ? ox_graph_alloc(g, cnt * sizeof *items) : NULL;
        const char **keys = cnt ? ox_graph_alloc(g, cnt * sizeof *keys) : NULL;
        bool ok = true;
        json_object_object_foreach(v, kk, kv) {
          ox_json_path_push_key(r, kk);
          keys[i] = ox_graph_intern(g, kk);
          if (!ox_json_read_value(&c, kv, &items[i])) ok = false;
          ox_json_path_pop(r);
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
      if (ox_json_read_meta(r, g, v, &m)) g->nodes[id].meta = m; /* already in g's arena */
    } else if (strcmp(k, "declared_users") == 0) {
      int64_t x;
      if (ox_json_get_range(r, v, "declared_users", -1, INT32_MAX, &x))
        g->nodes[id].declared_users = (int32_t)x;
    } else if (strcmp(k, "flags") == 0) {
      int64_t x;
      if (ox_json_get_range(r, v, "flags", 0, UINT16_MAX, &x)) g->nodes[id].flags = (uint16_t)x;
    } else if (strcmp(k, "src_line") == 0) {
      int64_t x;
      if (ox_json_get_range(r, v, "src_line", 0, UINT32_MAX, &x)) g->nodes[id].src_line = (uint32_t)x;
    } else if (strcmp(k, "provenance") == 0) {
      if (ox_json_expect_type(r, v, json_type_array, "provenance")) {
        size_t cnt = json_object_array_length(v);
        OxNodeId *p = cnt ? ox_graph_alloc(g, cnt * sizeof *p) : NULL;
        bool ok = cnt <= UINT32_MAX;
        for (size_t i = 0; ok && i < cnt; i++) {
          int64_t x;
          ox_json_path_push_idx(r, i);
          if (ox_json_get_range(r, json_object_array_get_idx(v, i), "a provenance id", 1, UINT32_MAX, &x))
            p[i] = (OxNodeId)x;
          else
            ok = false;
          ox_json_path_pop(r);
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
    ox_json_path_pop(r);
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
    ox_json_path_push_idx(r, i);
    r->node_depth = r->depth;
    r->node_name = n->name;
    if (c.later == ids[i] || !ox_graph_stable_toposort(g))
      ERR(r, "%s depends on itself%s", n->name, c.later == ids[i] ? "" : " through its inputs (a cycle)");
    r->node_depth = 0;
    ox_json_path_pop(r);
    return;
  }
}

/* A graph's name, owner and source line (the members other than nodes and subgraphs). */
static void read_graph_header(Rd *r, OxGraph *g, json_object *o) {
  json_object *v;
  if (json_object_object_get_ex(o, "name", &v)) {
    ox_json_path_push_key(r, "name");
    const char *s = get_interned(r, g, v, "graph name");
    if (s) g->name = s;
    ox_json_path_pop(r);
  }
  if (json_object_object_get_ex(o, "owner", &v)) {
    ox_json_path_push_key(r, "owner");
    g->sub_owner = get_interned(r, g, v, "owner");
    ox_json_path_pop(r);
  }
  if (json_object_object_get_ex(o, "src_line", &v)) {
    int64_t x;
    ox_json_path_push_key(r, "src_line");
    if (ox_json_get_range(r, v, "src_line", 0, UINT32_MAX, &x)) g->src_line = (uint32_t)x;
    ox_json_path_pop(r);
  }
}

static OxGraph *read_graph(Rd *r, json_object *o) {
  if (!ox_json_expect_type(r, o, json_type_object, "a graph")) return NULL;
  OxGraph *g = ox_graph_new();
  json_object *v;
  json_object_object_foreach(o, k, kv) {
    (void)kv;
    if (is_known(graph_keys, k)) continue;
    ox_json_path_push_key(r, k);
    ox_json_report(r, OX_SEV_WARNING, "unknown key '%.60s' in graph ignored", k);
    ox_json_path_pop(r);
  }
  read_graph_header(r, g, o);
  if (!json_object_object_get_ex(o, "nodes", &v)) {
    ERR(r, "graph has no \"nodes\"");
  } else {
    ox_json_path_push_key(r, "nodes");
    if (ox_json_expect_type(r, v, json_type_array, "nodes")) {
      size_t cnt = json_object_array_length(v);
      OxNodeId *ids = cnt ? calloc(cnt, sizeof *ids) : NULL;
      if (cnt && !ids) {
        ERR(r, "out of memory for %zu nodes", cnt);
        cnt = 0;
      }
      for (size_t i = 0; i < cnt && r->errors < MAX_ERRORS; i++) {
        ox_json_path_push_idx(r, i);
        r->node_depth = r->depth;
        r->node_name = NULL;
        ids[i] = create_node(r, g, json_object_array_get_idx(v, i));
        r->node_depth = 0;
        ox_json_path_pop(r);
      }
      for (size_t i = 0; i < cnt && r->errors < MAX_ERRORS; i++) {
        if (!ids[i]) continue;
        ox_json_path_push_idx(r, i);
        r->node_depth = r->depth;
        r->node_name = g->nodes[ids[i]].name;
        fill_node(r, g, ids[i], json_object_array_get_idx(v, i));
        r->node_depth = 0;
        ox_json_path_pop(r);
      }
      if (r->errors < MAX_ERRORS) check_order(r, g, ids, cnt);
      free(ids);
    }
    ox_json_path_pop(r);
  }
  if (json_object_object_get_ex(o, "subgraphs", &v)) {
    ox_json_path_push_key(r, "subgraphs");
    if (ox_json_expect_type(r, v, json_type_array, "subgraphs")) {
      for (size_t i = 0; i < json_object_array_length(v) && r->errors < MAX_ERRORS; i++) {
        ox_json_path_push_idx(r, i);
        OxGraph *sub = read_graph(r, json_object_array_get_idx(v, i));
        /* the owner is not checked against the enclosing graph's nodes: a loader may name a
         * nested module class that no node calls (print_readable's unused submodules) */
        if (sub) ox_graph_add_subgraph(g, sub);
        ox_json_path_pop(r);
      }
    }
    ox_json_path_pop(r);
  }
  return g;
}

static const char *const root_keys[] = {"format", "version", "graphs", "record", NULL};

/* Parses the whole text into a json-c tree: a BOM is skipped, depth limited, trailing text
 * refused, syntax errors located. NULL with diagnostics on failure. */
json_object *ox_json_parse_root(Rd *r, const char *text, size_t len, uint32_t max_depth, OxDiagList *diags) {
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
    ox_json_offset_to_linecol(text, len, off, &line, &col);
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
  if (ox_json_skip_ws(text, len, end) < len) {
    uint32_t line, col;
    size_t off = ox_json_skip_ws(text, len, end);
    ox_json_offset_to_linecol(text, len, off, &line, &col);
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
  if (ox_json_read_fast(text, len, max_depth, opt && opt->text_outlives, doc)) {
    free(r);
    if (diags->n_errors > errors_before) return -1;
    return doc->n_graphs ? 0 : -1;
  }
  memset(r, 0, sizeof *r);
  json_object *root = ox_json_parse_root(r, text, len, max_depth, diags);
  if (!root) {
    free(r);
    return -1;
  }
  json_object *v;
  if (!json_object_is_type(root, json_type_object)) {
    ERR(r, "the document must be a JSON object, not %s", ox_json_jtype_name(root));
    goto out;
  }
  if (!json_object_object_get_ex(root, "format", &v)) {
    ERR(r, "no \"format\" key: not an Optimus JSON document (expected \"format\": \"optimus-fx\")");
    goto out;
  }
  ox_json_path_push_key(r, "format");
  if (!json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), "optimus-fx") != 0) {
    ERR(r, "format must be \"optimus-fx\"");
    ox_json_path_pop(r);
    goto out;
  }
  ox_json_path_pop(r);
  if (!json_object_object_get_ex(root, "version", &v)) {
    ERR(r, "no \"version\" key");
    goto out;
  }
  ox_json_path_push_key(r, "version");
  int64_t version;
  if (!get_int(r, v, "version", &version)) {
    ox_json_path_pop(r);
    goto out;
  }
  if (version != 1) {
    ERR(r, "unsupported version %" PRId64 " (this reader knows version 1%s)", version,
        version > 1 ? "; the file was written by a newer Optimus" : "");
    ox_json_path_pop(r);
    goto out;
  }
  ox_json_path_pop(r);
  json_object_object_foreach(root, k, kv) {
    (void)kv;
    if (is_known(root_keys, k)) continue;
    ox_json_path_push_key(r, k);
    ox_json_report(r, OX_SEV_WARNING, "unknown key '%.60s' ignored", k);
    ox_json_path_pop(r);
  }
  if (!json_object_object_get_ex(root, "graphs", &v)) {
    ERR(r, "no \"graphs\" key");
    goto out;
  }
  ox_json_path_push_key(r, "graphs");
  if (ox_json_expect_type(r, v, json_type_array, "graphs")) {
    for (size_t i = 0; i < json_object_array_length(v) && r->errors < MAX_ERRORS; i++) {
      ox_json_path_push_idx(r, i);
      OxGraph *g = read_graph(r, json_object_array_get_idx(v, i));
      if (g) ox_doc_add_graph(doc, g);
      ox_json_path_pop(r);
    }
    if (json_object_array_length(v) == 0) ERR(r, "the document holds no graph");
    if (r->errors >= MAX_ERRORS)
      ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "too many errors (%u); stopped reading", r->errors);
  }
  ox_json_path_pop(r);
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
