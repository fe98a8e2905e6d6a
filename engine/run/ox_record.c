/* ox_record.c - the "record" section of our JSON (recorded inputs, parameters and outputs)
 * and ox_verify_record, which runs the interpreter on the recorded inputs and compares the
 * result with the recorded outputs.
 *
 * This file is part of the JSON reader/writer, so it may use json-c. Reading is defensive:
 * every malformed tensor becomes a located-by-path error ("record: params.fc.weight: ...")
 * and no tensor larger than OX_RECORD_MAX_ELEMS is materialized. A "fill" recipe is kept
 * beside the materialized tensor so writing the record back stays as compact as it came.
 */
#include "run/ox_record.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json.h>

#include "ir/ox_mem.h"
#include "ops/ox_interp.h"

/* ------------------------------------------------------------------ record object */

OxRecord *ox_record_new(void) { return ox_xcalloc(1, sizeof(OxRecord)); }

static void free_entries(OxRecordTensor *e, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    free(e[i].name);
    if (e[i].raw_owned) free((char *)e[i].raw);
    ox_tensor_free(e[i].t);
  }
  free(e);
}

void ox_record_free(OxRecord *r) {
  if (!r) return;
  free_entries(r->inputs, r->n_inputs);
  free_entries(r->params, r->n_params);
  free_entries(r->outputs, r->n_outputs);
  ox_text_free(r->text);
  free(r);
}

static OxRecordTensor *push(OxRecordTensor **arr, uint32_t *n, const char *name, OxTensor *t) {
  *arr = ox_xrealloc(*arr, (*n + 1) * sizeof **arr);
  OxRecordTensor *e = &(*arr)[(*n)++];
  memset(e, 0, sizeof *e);
  e->name = name ? ox_xstrdup(name) : NULL;
  e->t = t;
  return e;
}

void ox_record_add_input(OxRecord *r, const char *name, OxTensor *t) { push(&r->inputs, &r->n_inputs, name, t); }
void ox_record_add_param(OxRecord *r, const char *path, OxTensor *t) { push(&r->params, &r->n_params, path, t); }
void ox_record_add_output(OxRecord *r, OxTensor *t) { push(&r->outputs, &r->n_outputs, NULL, t); }

static OxRecordTensor *push_to(OxRecord *r, OxRecordSection sec, const char *name) {
  switch (sec) {
  case OX_RECORD_INPUTS: return push(&r->inputs, &r->n_inputs, name, NULL);
  case OX_RECORD_PARAMS: return push(&r->params, &r->n_params, name, NULL);
  case OX_RECORD_OUTPUTS: break;
  }
  return push(&r->outputs, &r->n_outputs, NULL, NULL);
}

/* A tensor kept as text (a "data" array or a "b64" string): the new entry. */
static OxRecordTensor *add_text(OxRecord *r, OxRecordSection sec, const char *name, OxDType dtype, int32_t rank,
                                const int64_t *shape, const char *raw, size_t raw_len, bool borrow) {
  OxRecordTensor *e = push_to(r, sec, name);
  e->fill.dtype = dtype;
  e->fill.rank = rank;
  for (int32_t i = 0; i < rank; i++) e->fill.shape[i] = shape[i];
  e->raw_len = raw_len;
  e->raw_owned = !borrow;
  if (borrow) {
    e->raw = raw;
    return e;
  }
  char *copy = ox_xrealloc(NULL, raw_len + 1);
  memcpy(copy, raw, raw_len);
  copy[raw_len] = 0;
  e->raw = copy;
  return e;
}

void ox_record_add_data_text(OxRecord *r, OxRecordSection sec, const char *name, OxDType dtype, int32_t rank,
                             const int64_t *shape, const char *raw, size_t raw_len, bool borrow) {
  add_text(r, sec, name, dtype, rank, shape, raw, raw_len, borrow);
}

void ox_record_add_b64_text(OxRecord *r, OxRecordSection sec, const char *name, OxDType dtype, int32_t rank,
                            const int64_t *shape, const char *raw, size_t raw_len, bool borrow) {
  add_text(r, sec, name, dtype, rank, shape, raw, raw_len, borrow)->raw_b64 = true;
}

/* ---- base64 (RFC 4648): the bytes of a tensor's values, little-endian */

/* The alphabet's values, -1 for every other byte (a table: a 460 MB record is scanned at memory
 * speed, not a branch chain per character). */
static const signed char b64_table[256] = {
#define N16 -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1
  N16, N16,
  -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 62, -1, -1, -1, 63,                 /* '+' '/' */
  52, 53, 54, 55, 56, 57, 58, 59, 60, 61, -1, -1, -1, -1, -1, -1,                 /* '0'-'9' */
  -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,                           /* 'A'-'O' */
  15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, -1, -1, -1, -1, -1,                 /* 'P'-'Z' */
  -1, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,                 /* 'a'-'o' */
  41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, -1, -1, -1, -1, -1,                 /* 'p'-'z' */
  N16, N16, N16, N16, N16, N16, N16, N16,
#undef N16
};

static int b64_val(unsigned char c) { return b64_table[c]; }

/* Whether p[0..n) is base64 alphabet only (A-Z a-z 0-9 + /). Sixteen bytes at a time with
 * vector compares (GCC/clang vector extensions, any target): a record of real weights is
 * hundreds of megabytes of it, and the byte-at-a-time table loop ran at ~1 byte a cycle. */
typedef unsigned char B64Vec __attribute__((vector_size(16)));
static bool b64_alphabet_only(const unsigned char *p, size_t n) {
  size_t i = 0;
  B64Vec bad = {0};
  for (; i + 16 <= n; i += 16) {
    B64Vec c;
    memcpy(&c, p + i, 16);
    B64Vec ok = (B64Vec)((B64Vec)(c - 'A') < 26) | (B64Vec)((B64Vec)(c - 'a') < 26) |
                (B64Vec)((B64Vec)(c - '0') < 10) | (B64Vec)(c == '+') | (B64Vec)(c == '/');
    bad |= ~ok;
  }
  unsigned char any = 0;
  for (int k = 0; k < 16; k++) any |= bad[k];
  int tail = 0;
  for (; i < n; i++) tail |= b64_table[p[i]];
  return !any && tail >= 0;
}

/* Bytes per value of a dtype in a "b64" string; 0 when the dtype has no such form. */
static size_t b64_elem_size(OxDType dt) {
  switch (dt) {
  case OX_DT_F32:
  case OX_DT_I32: return 4;
  case OX_DT_F64:
  case OX_DT_I64: return 8;
  case OX_DT_F16:
  case OX_DT_BF16: return 2;
  case OX_DT_BOOL: return 1;
  default: return 0;
  }
}

/* The content of a "b64" string (without its quotes) is the one encoding of numel values of
 * dtype: the right length, the alphabet, '=' padding only at the end, zero bits past the last
 * byte, and for b8 every byte 0 or 1. */
static bool b64_valid(const unsigned char *p, size_t len, OxDType dtype, int64_t numel) {
  size_t es = b64_elem_size(dtype);
  if (!es || numel < 0) return false;
  uint64_t bytes = (uint64_t)numel * es;
  if ((uint64_t)len != (bytes + 2) / 3 * 4) return false;
  size_t pad = bytes % 3 == 0 ? 0 : 3 - bytes % 3;
  /* the whole groups before the last one: the alphabet only (bool values checked below) */
  size_t head = len >= 4 ? len - 4 : 0;
  if (dtype != OX_DT_BOOL) {
    if (!b64_alphabet_only(p, head)) return false;
  } else {
    head = 0;
  }
  uint64_t out = (uint64_t)head / 4 * 3;
  for (size_t i = head; i < len; i += 4) {
    uint32_t acc = 0;
    for (size_t k = 0; k < 4; k++) {
      bool padding = i + k >= len - pad;
      int x = padding ? (p[i + k] == '=' ? 0 : -1) : b64_val(p[i + k]);
      if (x < 0) return false;
      acc = acc << 6 | (uint32_t)x;
    }
    unsigned char g[3] = {(unsigned char)(acc >> 16), (unsigned char)(acc >> 8), (unsigned char)acc};
    for (int k = 0; k < 3; k++, out++) {
      if (out >= bytes) {
        if (g[k]) return false; /* bits past the last byte must be zero */
      } else if (dtype == OX_DT_BOOL && g[k] > 1) {
        return false;
      }
    }
  }
  return true;
}

size_t ox_record_b64_extent(const char *s, size_t n, OxDType dtype, int64_t numel) {
  size_t es = b64_elem_size(dtype);
  if (!es || numel < 0 || n < 2 || s[0] != '"') return 0;
  uint64_t want = ((uint64_t)numel * es + 2) / 3 * 4;
  if (want + 2 > n || s[want + 1] != '"') return 0;
  return (size_t)want + 2;
}

/* The "b64" strings of a record checked by two threads (ox_record_b64_check): each takes the
 * next unchecked tensor until none is left or one has failed. */
typedef struct B64Check {
  const OxRecordTensor **e;
  uint32_t n;
  _Atomic uint32_t next;
  _Atomic bool bad;
} B64Check;

static void *b64_check_main(void *arg) {
  B64Check *c = arg;
  for (uint32_t i; !c->bad && (i = c->next++) < c->n;) {
    const OxRecordTensor *e = c->e[i];
    int64_t numel = ox_shape_numel(e->fill.rank, e->fill.shape);
    if (numel < 0 || !b64_valid((const unsigned char *)e->raw + 1, e->raw_len - 2, e->fill.dtype, numel)) c->bad = true;
  }
  return NULL;
}

bool ox_record_b64_check(const OxRecord *r) {
  const OxRecordTensor *secs[3] = {r->inputs, r->params, r->outputs};
  uint32_t ns[3] = {r->n_inputs, r->n_params, r->n_outputs};
  B64Check c = {0};
  uint64_t bytes = 0;
  c.e = ox_xrealloc(NULL, ((size_t)r->n_inputs + r->n_params + r->n_outputs + 1) * sizeof *c.e);
  for (int k = 0; k < 3; k++)
    for (uint32_t i = 0; i < ns[k]; i++)
      if (secs[k][i].raw && secs[k][i].raw_b64) {
        c.e[c.n++] = &secs[k][i];
        bytes += secs[k][i].raw_len;
      }
  /* a second thread pays for itself past a few megabytes: reading them is the cost (on our VMs
   * 463 MB of weights take 0.36 s to read by one thread, 0.23 s by two) */
  pthread_t th;
  bool helper = bytes >= ((uint64_t)8 << 20) && pthread_create(&th, NULL, b64_check_main, &c) == 0;
  b64_check_main(&c);
  if (helper) pthread_join(th, NULL);
  free(c.e);
  return !c.bad;
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0) {
    if (!man) {
      bits = sign;
    } else { /* subnormal: normalize */
      int e = -1;
      do {
        e++;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | (uint32_t)(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* One value of t from its little-endian bytes v. */
static bool b64_store(OxTensor *t, int64_t idx, const unsigned char *v) {
  switch (t->dtype) {
  case OX_DT_F32: memcpy(&t->data.f[idx], v, 4); return true; /* little-endian hosts (x86, arm64) */
  case OX_DT_F64: memcpy(&t->data.d[idx], v, 8); return true;
  case OX_DT_F16: t->data.f[idx] = half_to_float((uint16_t)(v[0] | v[1] << 8)); return true;
  case OX_DT_BF16: {
    uint32_t bits = (uint32_t)(v[0] | v[1] << 8) << 16;
    memcpy(&t->data.f[idx], &bits, 4);
    return true;
  }
  case OX_DT_I64: memcpy(&t->data.i[idx], v, 8); return true;
  case OX_DT_I32: {
    int32_t x;
    memcpy(&x, v, 4);
    t->data.i[idx] = x;
    return true;
  }
  case OX_DT_BOOL:
    t->data.b[idx] = v[0];
    return v[0] <= 1;
  default: return false;
  }
}

/* Decodes a string b64_valid accepted for t's dtype and numel. */
static bool b64_decode_valid(const char *b64, size_t len, OxTensor *t) {
  size_t es = b64_elem_size(t->dtype), have = 0;
  uint64_t bytes = (uint64_t)t->numel * es, out = 0;
  unsigned char v[8];
  int64_t idx = 0;
  for (size_t i = 0; i < len; i += 4) {
    uint32_t acc = 0;
    for (size_t k = 0; k < 4; k++) {
      unsigned char c = (unsigned char)b64[i + k];
      acc = acc << 6 | (uint32_t)(c == '=' ? 0 : b64_val(c));
    }
    unsigned char g[3] = {(unsigned char)(acc >> 16), (unsigned char)(acc >> 8), (unsigned char)acc};
    for (int k = 0; k < 3 && out < bytes; k++, out++) {
      v[have++] = g[k];
      if (have < es) continue;
      have = 0;
      if (!b64_store(t, idx++, v)) return false;
    }
  }
  return idx == t->numel;
}

bool ox_record_b64_decode(const char *b64, size_t len, OxTensor *t) {
  return b64_valid((const unsigned char *)b64, len, t->dtype, t->numel) && b64_decode_valid(b64, len, t);
}

bool ox_record_borrows(const OxRecord *r) {
  const OxRecordTensor *secs[3] = {r->inputs, r->params, r->outputs};
  uint32_t ns[3] = {r->n_inputs, r->n_params, r->n_outputs};
  for (int k = 0; k < 3; k++)
    for (uint32_t i = 0; i < ns[k]; i++)
      if (secs[k][i].raw && !secs[k][i].raw_owned) return true;
  return false;
}

void ox_record_add_fill(OxRecord *r, OxRecordSection sec, const char *name, const OxRecordFill *fill) {
  push_to(r, sec, name)->fill = *fill;
}

static const OxRecordTensor *find(const OxRecordTensor *e, uint32_t n, const char *name) {
  for (uint32_t i = 0; i < n; i++)
    if (e[i].name && strcmp(e[i].name, name) == 0) return &e[i];
  return NULL;
}

bool ox_record_has_name(const OxRecord *r, OxRecordSection sec, const char *name) {
  return sec == OX_RECORD_INPUTS   ? find(r->inputs, r->n_inputs, name) != NULL
         : sec == OX_RECORD_PARAMS ? find(r->params, r->n_params, name) != NULL
                                   : false;
}

bool ox_record_has_tensor(const OxRecordTensor *e) { return e && (e->t || e->fill.present || e->raw); }

bool ox_record_special_value(const char *s, size_t n, double *out) {
  static const struct {
    const char *text;
    double v;
  } sp[] = {{"nan", NAN}, {"NaN", NAN}, {"inf", INFINITY}, {"Infinity", INFINITY}, {"-inf", -INFINITY}, {"-Infinity", -INFINITY}};
  for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
    if (strlen(sp[i].text) == n && memcmp(sp[i].text, s, n) == 0) {
      *out = sp[i].v;
      return true;
    }
  return false;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t ox_record_data_scan(const char *s, size_t n, OxDType dtype, int64_t numel) {
#define AT(k) ((k) < n ? s[k] : '\0')
  OxStorage st = ox_dtype_storage(dtype);
  bool floating = st == OX_ST_F32 || st == OX_ST_F64;
  size_t i = 0;
  int64_t count = 0;
  if (AT(0) != '[') return 0;
  for (i = 1; is_ws(AT(i)); i++) {}
  if (AT(i) == ']') return numel == 0 ? i + 1 : 0;
  for (;;) {
    char c = AT(i);
    if (c == '"') { /* a special value, no escapes */
      size_t j = i + 1;
      while (j < n && s[j] != '"' && s[j] != '\\') j++;
      double v;
      if (!floating || AT(j) != '"' || !ox_record_special_value(s + i + 1, j - i - 1, &v)) return 0;
      i = j + 1;
    } else if (c == 't' || c == 'f') {
      const char *w = c == 't' ? "true" : "false";
      size_t wl = strlen(w);
      if (n - i < wl || memcmp(s + i, w, wl) != 0) return 0;
      i += wl;
    } else if (c == '-' || (c >= '0' && c <= '9')) { /* RFC 8259 number */
      size_t j = i + (c == '-');
      size_t int_start = j;
      if (AT(j) == '0') {
        j++;
      } else if (AT(j) >= '1' && AT(j) <= '9') {
        while (AT(j) >= '0' && AT(j) <= '9') j++;
      } else {
        return 0;
      }
      size_t int_digits = j - int_start;
      bool is_int = true;
      if (AT(j) == '.') {
        j++;
        if (!(AT(j) >= '0' && AT(j) <= '9')) return 0;
        while (AT(j) >= '0' && AT(j) <= '9') j++;
        is_int = false;
      }
      long exp10 = 0;
      if (AT(j) == 'e' || AT(j) == 'E') {
        j++;
        bool neg = AT(j) == '-';
        if (AT(j) == '-' || AT(j) == '+') j++;
        if (!(AT(j) >= '0' && AT(j) <= '9')) return 0;
        for (; AT(j) >= '0' && AT(j) <= '9'; j++)
          if (exp10 < 100000) exp10 = exp10 * 10 + (AT(j) - '0');
        if (neg) exp10 = -exp10;
        is_int = false;
      }
      /* what the tokenizer reads: int64s (18 digits always fit) and finite doubles (a magnitude
       * under 1e301 cannot overflow; a tiny one reads as a subnormal or 0) */
      if (is_int ? int_digits > 18 : (long)int_digits - 1 + exp10 > 300) return 0;
      i = j;
    } else {
      return 0;
    }
    if (++count > numel) return 0;
    while (is_ws(AT(i))) i++;
    if (AT(i) == ']') break;
    if (AT(i) != ',') return 0;
    for (i++; is_ws(AT(i)); i++) {}
  }
  return count == numel ? i + 1 : 0;
#undef AT
}

/* A tensor of e's data text (checked by ox_record_data_scan when it was read); NULL when out of
 * memory. Each value becomes what ox_record_from_json makes of it. The text may be a span of a
 * larger one (not NUL-terminated at its ']'): every value read ends at a ',', ']' or blank. */
static OxTensor *tensor_of_text(const OxRecordTensor *e) {
  if (e->raw_b64) { /* checked by ox_record_b64_check when it was read */
    OxTensor *t = ox_tensor_new_unset(e->fill.dtype, e->fill.rank, e->fill.shape);
    if (t && !b64_decode_valid(e->raw + 1, e->raw_len - 2, t)) { /* not checked twice */
      ox_tensor_free(t);
      t = NULL;
    }
    return t;
  }
  OxTensor *t = ox_tensor_new(e->fill.dtype, e->fill.rank, e->fill.shape);
  if (!t) return NULL;
  bool ints = ox_dtype_storage(e->fill.dtype) == OX_ST_I64;
  const char *p = e->raw + 1;
  for (int64_t i = 0; i < t->numel; i++) {
    while (is_ws(*p) || *p == ',') p++;
    double v;
    if (*p == '"') {
      const char *q = strchr(p + 1, '"');
      ox_record_special_value(p + 1, (size_t)(q - p - 1), &v);
      p = q + 1;
    } else if (*p == 't' || *p == 'f') {
      v = *p == 't' ? 1.0 : 0.0;
      p += *p == 't' ? 4 : 5;
    } else {
      char *end;
      size_t lit = strcspn(p, ".eE,] \t\r\n");
      if (ints && (p[lit] == ',' || p[lit] == ']' || is_ws(p[lit]))) { /* an int literal */
        ox_tensor_set_i64(t, i, strtoll(p, &end, 10));
        p = end;
        continue;
      }
      v = strtod(p, &end);
      p = end;
    }
    ox_tensor_set(t, i, v);
  }
  return t;
}

bool ox_record_materialize(OxRecord *r) {
  OxRecordTensor *secs[3] = {r->inputs, r->params, r->outputs};
  uint32_t ns[3] = {r->n_inputs, r->n_params, r->n_outputs};
  for (int k = 0; k < 3; k++)
    for (uint32_t i = 0; i < ns[k]; i++) {
      OxRecordTensor *e = &secs[k][i];
      if (!e->raw) continue;
      if (!(e->t = tensor_of_text(e))) return false;
      if (e->raw_owned) free((char *)e->raw);
      e->raw = NULL;
      e->raw_len = 0;
      e->raw_b64 = false;
      memset(&e->fill, 0, sizeof e->fill);
    }
  return true;
}

OxTensor *ox_record_tensor_new(const OxRecordTensor *e) {
  if (!e) return NULL;
  if (e->t) return ox_tensor_clone(e->t);
  if (e->raw) return tensor_of_text(e);
  if (!e->fill.present) return NULL;
  OxTensor *t = ox_tensor_new(e->fill.dtype, e->fill.rank, e->fill.shape);
  if (t) ox_tensor_fill_sin(t, e->fill.scale, e->fill.freq, e->fill.phase);
  return t;
}

OxTensor *ox_record_input_new(const OxRecord *r, const char *name) {
  return ox_record_tensor_new(find(r->inputs, r->n_inputs, name));
}
OxTensor *ox_record_param_new(const OxRecord *r, const char *path) {
  return ox_record_tensor_new(find(r->params, r->n_params, path));
}

/* ------------------------------------------------------------------ reading */

#define RERR(d, ...) ox_diag_add((d), OX_SEV_ERROR, 0, 0, NULL, __VA_ARGS__)

static bool num_of(json_object *v, double *out) {
  switch (json_object_get_type(v)) {
  case json_type_double: *out = json_object_get_double(v); return true;
  case json_type_int: *out = (double)json_object_get_int64(v); return true;
  case json_type_boolean: *out = json_object_get_boolean(v) ? 1.0 : 0.0; return true;
  case json_type_string: {
    return ox_record_special_value(json_object_get_string(v), (size_t)json_object_get_string_len(v), out);
  }
  default: return false;
  }
}

static int read_tensor(json_object *o, const char *where, OxTensor **out, OxRecordFill *fill, OxDiagList *d) {
  *out = NULL;
  memset(fill, 0, sizeof *fill);
  if (json_object_get_type(o) != json_type_object) {
    RERR(d, "record: %s: expected a tensor object", where);
    return -1;
  }
  json_object *jdt, *jshape, *jdata = NULL, *jfill = NULL;
  if (!json_object_object_get_ex(o, "dtype", &jdt) || json_object_get_type(jdt) != json_type_string) {
    RERR(d, "record: %s: missing \"dtype\"", where);
    return -1;
  }
  const char *dts = json_object_get_string(jdt);
  OxDType dt = ox_dtype_from_abbr(dts, strlen(dts));
  if (!ox_tensor_dtype_supported(dt)) {
    RERR(d, "record: %s: unsupported dtype '%.40s' (f32, f64, f16, bf16, i64, i32, b8)", where, dts);
    return -1;
  }
  if (!json_object_object_get_ex(o, "shape", &jshape) || json_object_get_type(jshape) != json_type_array) {
    RERR(d, "record: %s: missing \"shape\"", where);
    return -1;
  }
  size_t rank = json_object_array_length(jshape);
  if (rank > OX_TENSOR_MAX_RANK) {
    RERR(d, "record: %s: rank %zu exceeds %d", where, rank, OX_TENSOR_MAX_RANK);
    return -1;
  }
  int64_t shape[OX_TENSOR_MAX_RANK];
  for (size_t i = 0; i < rank; i++) {
    json_object *e = json_object_array_get_idx(jshape, i);
    if (json_object_get_type(e) != json_type_int || json_object_get_int64(e) < 0) {
      RERR(d, "record: %s: shape entries must be non-negative ints", where);
      return -1;
    }
    shape[i] = json_object_get_int64(e);
  }
  int64_t numel = ox_shape_numel((int32_t)rank, shape);
  if (numel < 0 || numel > OX_RECORD_MAX_ELEMS) {
    RERR(d, "record: %s: %lld elements exceed the limit of %lld", where, (long long)numel, (long long)OX_RECORD_MAX_ELEMS);
    return -1;
  }
  json_object *jb64 = NULL;
  bool has_data = json_object_object_get_ex(o, "data", &jdata);
  bool has_fill = json_object_object_get_ex(o, "fill", &jfill);
  bool has_b64 = json_object_object_get_ex(o, "b64", &jb64);
  if (has_data + has_fill + has_b64 != 1) {
    RERR(d, "record: %s: needs exactly one of \"data\", \"b64\" and \"fill\"", where);
    return -1;
  }
  if (has_b64) {
    if (json_object_get_type(jb64) != json_type_string) {
      RERR(d, "record: %s: \"b64\" must be a string", where);
      return -1;
    }
    size_t es = b64_elem_size(dt);
    if (!es) {
      RERR(d, "record: %s: \"b64\" has no form for dtype %s", where, ox_dtype_abbr(dt));
      return -1;
    }
    size_t len = (size_t)json_object_get_string_len(jb64);
    uint64_t want = ((uint64_t)numel * es + 2) / 3 * 4;
    if (len != want) {
      RERR(d, "record: %s: \"b64\" has %zu characters, %lld %s values need %llu", where, len, (long long)numel,
           ox_dtype_abbr(dt), (unsigned long long)want);
      return -1;
    }
    OxTensor *t = ox_tensor_new_unset(dt, (int32_t)rank, shape);
    if (!t) {
      RERR(d, "record: %s: out of memory for %lld elements", where, (long long)numel);
      return -1;
    }
    if (!ox_record_b64_decode(json_object_get_string(jb64), len, t)) {
      RERR(d, "record: %s: \"b64\" is not the base64 (RFC 4648, '=' padding) of %lld %s values%s", where,
           (long long)numel, ox_dtype_abbr(dt), dt == OX_DT_BOOL ? " (bytes 0 or 1)" : "");
      ox_tensor_free(t);
      return -1;
    }
    *out = t;
    return 0;
  }
  if (has_data) {
    OxTensor *t = ox_tensor_new(dt, (int32_t)rank, shape);
    if (!t) {
      RERR(d, "record: %s: out of memory for %lld elements", where, (long long)numel);
      return -1;
    }
    if (json_object_get_type(jdata) != json_type_array) {
      RERR(d, "record: %s: \"data\" must be an array", where);
      ox_tensor_free(t);
      return -1;
    }
    size_t n = json_object_array_length(jdata);
    if ((int64_t)n != numel) {
      RERR(d, "record: %s: data has %zu values, shape needs %lld", where, n, (long long)numel);
      ox_tensor_free(t);
      return -1;
    }
    bool ints = ox_dtype_storage(dt) == OX_ST_I64;
    for (size_t i = 0; i < n; i++) {
      json_object *e = json_object_array_get_idx(jdata, i);
      if (ints && json_object_get_type(e) == json_type_int) {
        ox_tensor_set_i64(t, (int64_t)i, json_object_get_int64(e));
        continue;
      }
      double v;
      if (!num_of(e, &v)) {
        RERR(d, "record: %s: data[%zu] is not a number", where, i);
        ox_tensor_free(t);
        return -1;
      }
      ox_tensor_set(t, (int64_t)i, v);
    }
    *out = t;
  } else {
    json_object *jk, *js, *jf, *jp;
    double sc = 0, fr = 0, ph = 0;
    if (json_object_get_type(jfill) != json_type_object || !json_object_object_get_ex(jfill, "kind", &jk) ||
        json_object_get_type(jk) != json_type_string || strcmp(json_object_get_string(jk), "sin") != 0) {
      RERR(d, "record: %s: fill must be {\"kind\": \"sin\", ...}", where);
      return -1;
    }
    if (!json_object_object_get_ex(jfill, "scale", &js) || !num_of(js, &sc) ||
        !json_object_object_get_ex(jfill, "freq", &jf) || !num_of(jf, &fr) ||
        !json_object_object_get_ex(jfill, "phase", &jp) || !num_of(jp, &ph)) {
      RERR(d, "record: %s: fill needs numeric scale, freq and phase", where);
      return -1;
    }
    /* kept as the recipe: materialized by ox_record_tensor_new when needed */
    fill->present = true;
    fill->scale = sc;
    fill->freq = fr;
    fill->phase = ph;
    fill->dtype = dt;
    fill->rank = (int32_t)rank;
    for (size_t i = 0; i < rank; i++) fill->shape[i] = shape[i];
  }
  return 0;
}

static int read_named(json_object *obj, const char *section, OxRecord *r, bool params, OxDiagList *d) {
  if (json_object_get_type(obj) != json_type_object) {
    RERR(d, "record: \"%s\" must be an object", section);
    return -1;
  }
  int rc = 0;
  json_object_object_foreach(obj, key, val) {
    char where[300];
    snprintf(where, sizeof where, "%s.%.200s", section, key);
    OxTensor *t;
    OxRecordFill f;
    if (read_tensor(val, where, &t, &f, d) != 0) {
      rc = -1;
      continue;
    }
    OxRecordTensor *e = params ? push(&r->params, &r->n_params, key, t) : push(&r->inputs, &r->n_inputs, key, t);
    e->fill = f;
  }
  return rc;
}

int ox_record_from_json(struct json_object *obj, OxRecord **out, OxDiagList *d) {
  *out = NULL;
  if (json_object_get_type(obj) != json_type_object) {
    RERR(d, "record: expected an object");
    return -1;
  }
  OxRecord *r = ox_record_new();
  int rc = 0;
  json_object_object_foreach(obj, key, val) {
    if (strcmp(key, "inputs") == 0) {
      if (read_named(val, "inputs", r, false, d) != 0) rc = -1;
    } else if (strcmp(key, "params") == 0) {
      if (read_named(val, "params", r, true, d) != 0) rc = -1;
    } else if (strcmp(key, "outputs") == 0) {
      if (json_object_get_type(val) != json_type_array) {
        RERR(d, "record: \"outputs\" must be an array");
        rc = -1;
        continue;
      }
      size_t n = json_object_array_length(val);
      for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(val, i);
        if (!e || json_object_get_type(e) == json_type_null) {
          ox_record_add_output(r, NULL);
          continue;
        }
        char where[48];
        snprintf(where, sizeof where, "outputs[%zu]", i);
        OxTensor *t;
        OxRecordFill f;
        if (read_tensor(e, where, &t, &f, d) != 0) {
          rc = -1;
          continue;
        }
        push(&r->outputs, &r->n_outputs, NULL, t)->fill = f;
      }
    } else if (strcmp(key, "seed") == 0) {
      if (json_object_get_type(val) != json_type_int) {
        RERR(d, "record: \"seed\" must be an int");
        rc = -1;
        continue;
      }
      r->has_seed = true;
      r->seed = json_object_get_int64(val);
    } else {
      ox_diag_add(d, OX_SEV_WARNING, 0, 0, NULL, "record: unknown key \"%.60s\" ignored", key);
    }
  }
  if (rc != 0) {
    ox_record_free(r);
    return -1;
  }
  *out = r;
  return 0;
}

/* ------------------------------------------------------------------ writing */

/* A value as ox_record_from_json reads it back: %.17g round-trips every double (and so every
 * float/f16/bf16 value), kept a float in JSON readers; nan and the infinities as strings. */
static void put_num(OxBuf *b, double v) {
  if (isnan(v) || isinf(v)) {
    ox_buf_puts(b, isnan(v) ? "\"nan\"" : v > 0 ? "\"inf\"" : "\"-inf\"");
    return;
  }
  char buf[40];
  snprintf(buf, sizeof buf, "%.17g", v);
  ox_buf_puts(b, buf);
  if (!strpbrk(buf, ".eE")) ox_buf_puts(b, ".0");
}

static void put_tensor(OxBuf *b, const OxRecordTensor *e) {
  const OxTensor *t = e->t;
  OxDType dt = t ? t->dtype : e->fill.dtype;
  int32_t rank = t ? t->rank : e->fill.rank;
  const int64_t *shape = t ? t->shape : e->fill.shape;
  ox_buf_puts(b, "{\"dtype\":");
  ox_buf_put_quoted(b, ox_dtype_abbr(dt));
  ox_buf_puts(b, ",\"shape\":[");
  for (int32_t i = 0; i < rank; i++) {
    if (i) ox_buf_putc(b, ',');
    ox_buf_put_i64(b, shape[i]);
  }
  ox_buf_putc(b, ']');
  if (e->fill.present) {
    ox_buf_puts(b, ",\"fill\":{\"kind\":\"sin\",\"scale\":");
    put_num(b, e->fill.scale);
    ox_buf_puts(b, ",\"freq\":");
    put_num(b, e->fill.freq);
    ox_buf_puts(b, ",\"phase\":");
    put_num(b, e->fill.phase);
    ox_buf_puts(b, "}}");
    return;
  }
  ox_buf_puts(b, e->raw && e->raw_b64 ? ",\"b64\":" : ",\"data\":");
  if (e->raw) { /* as it came, a megabyte at a time into a streaming output */
    for (size_t off = 0; off < e->raw_len;) {
      size_t n = e->raw_len - off < OX_BUF_DRAIN_BYTES ? e->raw_len - off : OX_BUF_DRAIN_BYTES;
      ox_buf_append(b, e->raw + off, n);
      ox_buf_drain(b);
      off += n;
    }
  } else {
    OxStorage st = ox_dtype_storage(t->dtype);
    ox_buf_putc(b, '[');
    for (int64_t i = 0; i < t->numel; i++) {
      if (i) ox_buf_putc(b, ',');
      if (st == OX_ST_U8)
        ox_buf_puts(b, t->data.b[i] ? "true" : "false");
      else if (st == OX_ST_I64)
        ox_buf_put_i64(b, t->data.i[i]);
      else
        put_num(b, ox_tensor_get(t, i));
      if ((i & 4095) == 4095) ox_buf_drain(b);
    }
    ox_buf_putc(b, ']');
  }
  ox_buf_putc(b, '}');
}

static void put_named(OxBuf *b, const char *key, const OxRecordTensor *e, uint32_t n) {
  ox_buf_puts(b, key);
  ox_buf_putc(b, '{');
  bool first = true;
  for (uint32_t i = 0; i < n; i++) {
    if (!ox_record_has_tensor(&e[i])) continue;
    if (!first) ox_buf_putc(b, ',');
    first = false;
    ox_buf_put_quoted(b, e[i].name ? e[i].name : "");
    ox_buf_putc(b, ':');
    put_tensor(b, &e[i]);
  }
  ox_buf_putc(b, '}');
}

void ox_record_write_json(const OxRecord *r, OxBuf *out) {
  put_named(out, "{\"inputs\":", r->inputs, r->n_inputs);
  put_named(out, ",\"params\":", r->params, r->n_params);
  ox_buf_puts(out, ",\"outputs\":[");
  for (uint32_t i = 0; i < r->n_outputs; i++) {
    if (i) ox_buf_putc(out, ',');
    if (ox_record_has_tensor(&r->outputs[i]))
      put_tensor(out, &r->outputs[i]);
    else
      ox_buf_puts(out, "null");
  }
  ox_buf_putc(out, ']');
  if (r->has_seed) {
    ox_buf_puts(out, ",\"seed\":");
    ox_buf_put_i64(out, r->seed);
  }
  ox_buf_putc(out, '}');
}

struct json_object *ox_record_to_json(const OxRecord *r) {
  OxBuf b;
  ox_buf_init(&b);
  ox_record_write_json(r, &b);
  json_object *o = json_tokener_parse(b.data);
  ox_buf_free(&b);
  return o;
}

/* ------------------------------------------------------------------ verification */

int ox_record_apply(const OxRecord *r, const OxGraph *g, struct OxInterp *in, char *err, size_t errcap) {
  for (uint32_t i = 0; i < r->n_params; i++) {
    if (!ox_record_has_tensor(&r->params[i])) continue;
    OxTensor *t = ox_record_tensor_new(&r->params[i]);
    if (!t) {
      if (errcap) snprintf(err, errcap, "record parameter '%s': out of memory", r->params[i].name);
      return -1;
    }
    ox_interp_set_param(in, r->params[i].name, t);
  }
  for (uint32_t i = 0; i < r->n_inputs; i++) {
    OxNodeId id = ox_graph_find(g, r->inputs[i].name);
    const OxNode *n = ox_graph_node(g, id);
    if (!n || n->op != OX_OP_PLACEHOLDER) {
      if (errcap) snprintf(err, errcap, "record input '%s' is not a placeholder of the graph", r->inputs[i].name);
      return -1;
    }
    if (!ox_record_has_tensor(&r->inputs[i])) continue;
    OxTensor *t = ox_record_tensor_new(&r->inputs[i]);
    if (!t) {
      if (errcap) snprintf(err, errcap, "record input '%s': out of memory", r->inputs[i].name);
      return -1;
    }
    ox_interp_set_value(in, id, ox_rt_tensor(t));
  }
  return 0;
}

void ox_verify_report_clear(OxVerifyReport *rep) {
  if (!rep) return;
  free(rep->outputs);
  memset(rep, 0, sizeof *rep);
}

static void compare_one(const OxRtValue *got, const OxTensor *want, OxVerifyOutput *o) {
  if (!want) {
    o->compared = false;
    o->pass = !got || got->kind == OX_RT_NONE || got->kind != OX_RT_TENSOR;
    if (!o->pass) snprintf(o->note, sizeof o->note, "recorded null, produced a tensor");
    else snprintf(o->note, sizeof o->note, "not a tensor");
    return;
  }
  o->tol = ox_tolerance_for(want->dtype);
  if (got && ox_rt_is_scalar(got)) {
    /* a Python scalar output recorded as a one-element tensor */
    if (want->numel != 1) {
      snprintf(o->note, sizeof o->note, "produced a scalar, recorded %lld elements", (long long)want->numel);
      return;
    }
    OxTensor *t = ox_tensor_new(want->dtype, want->rank, want->shape);
    if (!t) {
      snprintf(o->note, sizeof o->note, "out of memory");
      return;
    }
    ox_tensor_set(t, 0, ox_rt_scalar(got));
    OxCompare c;
    o->compared = true;
    o->pass = ox_tensor_compare(t, want, NULL, &c);
    o->max_abs = c.max_abs, o->max_rel = c.max_rel, o->scale = c.scale;
    if (!o->pass) snprintf(o->note, sizeof o->note, "%s", c.why);
    ox_tensor_free(t);
    return;
  }
  if (!got || got->kind != OX_RT_TENSOR) {
    snprintf(o->note, sizeof o->note, "produced %s, recorded a tensor", got ? ox_rt_kind_name(got->kind) : "nothing");
    return;
  }
  OxCompare c;
  o->compared = true;
  o->pass = ox_tensor_compare(got->u.t, want, NULL, &c);
  o->max_abs = c.max_abs, o->max_rel = c.max_rel, o->scale = c.scale;
  o->tol = c.tol;
  if (!o->pass) {
    snprintf(o->note, sizeof o->note, "%s (%lld elements differ)", c.why, (long long)c.n_bad);
    return;
  }
  /* An output that is 0 everywhere agrees with anything that also ends in zeros (a zero-initialized
   * last layer, as torchvision's VisionTransformer head without weights): say so rather than let
   * it pass as evidence about what comes before. */
  int64_t nz = 0, nonfinite = 0;
  for (int64_t i = 0; i < want->numel; i++) {
    double v = ox_tensor_get(want, i);
    if (!isfinite(v)) nonfinite++;
    else nz += v != 0.0;
  }
  if (want->numel > 0 && nonfinite == want->numel)
    /* NaN agrees with NaN: torch computed no number here, and neither did we */
    snprintf(o->note, sizeof o->note, "weak: every recorded value is NaN or infinite (torch computed no number: a "
                                      "query with every key masked? a log of 0?), so this agreement says little");
  else if (want->numel > 0 && !nz && !nonfinite)
    snprintf(o->note, sizeof o->note, "weak: every recorded value is 0 (a zero-initialized last layer?), "
                                      "so this says little about the nodes before it");
  else if (nonfinite)
    snprintf(o->note, sizeof o->note, "note: %lld of %lld recorded values are NaN or infinite", (long long)nonfinite,
             (long long)want->numel);
}

int ox_verify_record(const OxDoc *doc, uint32_t graph_index, OxVerifyReport *rep, char *err, size_t errcap) {
  memset(rep, 0, sizeof *rep);
  if (errcap) err[0] = 0;
  if (!doc || !doc->record) {
    if (errcap) snprintf(err, errcap, "the document has no recorded inputs/outputs");
    return -1;
  }
  if (graph_index >= doc->n_graphs) {
    if (errcap) snprintf(err, errcap, "no graph %u (the document has %u)", graph_index, doc->n_graphs);
    return -1;
  }
  const OxRecord *r = doc->record;
  const OxGraph *g = doc->graphs[graph_index];
  OxNodeId out_id = ox_graph_output(g);
  if (!out_id) {
    if (errcap) snprintf(err, errcap, "the graph has no output node");
    return -1;
  }
  OxInterp *in = ox_interp_new(g, r->has_seed ? (uint64_t)r->seed : 0);
  if (ox_record_apply(r, g, in, err, errcap) != 0 || ox_interp_run(in, NULL, 0, err, errcap) != 0) {
    ox_interp_free(in);
    return -1;
  }
  OxRtFlat f = {0};
  ox_rt_flatten(ox_interp_value(in, out_id), &f);
  rep->n_outputs = r->n_outputs;
  rep->n_produced = f.n;
  rep->outputs = ox_xcalloc(r->n_outputs ? r->n_outputs : 1, sizeof *rep->outputs);
  rep->pass = f.n == r->n_outputs;
  for (uint32_t i = 0; i < r->n_outputs; i++) {
    OxVerifyOutput *o = &rep->outputs[i];
    o->index = i;
    if (i >= f.n) {
      snprintf(o->note, sizeof o->note, "the graph produced only %u outputs", f.n);
      rep->pass = false;
      continue;
    }
    OxTensor *own = r->outputs[i].t ? NULL : ox_record_tensor_new(&r->outputs[i]);
    if (!own && !r->outputs[i].t && ox_record_has_tensor(&r->outputs[i])) {
      snprintf(o->note, sizeof o->note, "out of memory for the recorded output");
      rep->pass = false;
      continue;
    }
    compare_one(f.v[i], r->outputs[i].t ? r->outputs[i].t : own, o);
    ox_tensor_free(own);
    if (!o->pass) rep->pass = false;
  }
  free(f.v);
  ox_interp_free(in);
  return 0;
}
