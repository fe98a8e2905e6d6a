/* ox_parse_fx.c - loader for print(graph) text (docs/format-fx-text.md).
 *
 * Accepts the torch.fx Graph.__str__ dialects: new "[num_users=N]" and old "[#users=N]"
 * node lines, optional type annotations, Inductor's quoted tensor annotations
 * ("Tensor \"f32[8, 16][16, 1]cuda:0\"") and "PlaceHolder[target=x]" input markers, headerless
 * fragments and "# Graph fragment:" blocks, several graphs in one paste, executorch's nested
 * "lowered graph():" blocks (subgraphs of the graph that holds the lowered module), and a
 * fixed per-line prefix (an Inductor "#   " comment prefix, a TORCH_LOGS prefix), which is
 * detected and stripped.
 *
 * Work is line by line and linear in the input: each node line is parsed into a record
 * whose value trees already live in the graph's arena, with node references encoded as
 * indices into a per-graph reference table. When a graph block ends, its records are turned
 * into nodes in two passes (create every node, then resolve references and set args), so a
 * use may precede its definition. Names are resolved through a hash keyed by interned
 * pointers; nothing scans the graph per reference.
 *
 * Invariants: the value parser recurses at most max_depth levels (a located error beyond);
 * a damaged line is skipped with a located warning and its partial references are dropped
 * with it; every diagnostic carries the 1-based line and the byte column in the original
 * input (prefix included). Input is never executed, never trusted to be NUL-free or UTF-8.
 * Requires: text is NUL-terminated at len. Preserves: graphs it adds pass
 * ox_graph_verify(g, false, ...) unless an error was reported (e.g. a reference cycle).
 */
#include <assert.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ir/ox_mem.h"
#include "load/ox_parse.h"

/* ------------------------------------------------------------------ records */

typedef struct Ref {
  union {
    const char *name; /* interned in the graph, until build_graph's first pass */
    uint32_t ni;      /* after it: the name's NameInfo (index; NameInfo.name is the name) */
  } u;
  uint32_t line, col;
} Ref;

typedef struct Rec {
  uint8_t op;
  uint16_t flags;
  const char *name, *target, *type_ann, *default_value;
  OxValue args, kwargs; /* OX_V_NODE items hold ref index + 1 until resolution */
  OxMeta meta;
  int32_t declared_users;
  uint32_t line, col;
  OxNodeId id; /* 0 = dropped (marker merged into its definition) */
  uint32_t ni; /* its name's NameInfo (index) once build_graph's first pass has seen it */
} Rec;

typedef struct Ctx {
  OxGraph *g;
  Rec *recs;
  uint32_t n_recs, cap_recs;
  Ref *refs;
  uint32_t n_refs, cap_refs;
  bool has_return;
  Rec ret;              /* the return line (args = (value,)) when has_return */
  bool has_header;
  bool nested;          /* a "lowered graph():" block inside another graph */
  int header_indent;    /* indentation of the header line, -1 if none */
  int body_indent;      /* indentation of the first body line, -1 until seen */
  const char *last_get_attr; /* name of the last node line (owner of a following lowered graph) */
  uint32_t n_sub;
  /* the last tensor annotations read and their metas (a dump repeats a handful: the text is
   * compared, not parsed again; the metas are the graph's shared ones, so equal either way) */
  struct {
    const char *text; /* in the input */
    size_t len;
    OxMeta meta;
  } ann_memo[4];
  uint32_t ann_next;
} Ctx;

typedef struct P {
  const char *text;
  size_t len;
  OxDiagList *d;
  OxDoc *doc;
  uint32_t max_depth;
  Ctx *stack;
  uint32_t depth, cap_stack;
  /* current line */
  const char *ls, *le; /* original line start and end (without \r\n) */
  uint32_t lineno;
  uint32_t n_lines; /* lines in the input (sizes the first allocations) */
  /* scratch: value and key stacks shared by all nesting levels, string buffer */
  OxValue *vs;
  size_t nvs, cap_vs;
  const char **ks;
  size_t nks, cap_ks;
  char *sbuf;
  size_t cap_sbuf;
  /* failure of the current line */
  const char *err_at;
  char err_msg[200];
  bool err_fatal;
  /* uninterpreted values kept as text in the current line */
  uint32_t raw_count, raw_col;
  uint32_t ann_col; /* column of a tensor annotation we could not read, 0 if none */
  char ann_why[120]; /* why, when it read but is absurd (ox_meta_absurd); else empty */
  size_t my_errors;
  bool pending_fragment;
  uint32_t pending_line;
  char decimal_point;
} P;

/* ------------------------------------------------------------------ small helpers */

/* bytes >= 0x80 are identifier characters, as in Python 3 (and the readable loader): a node named
 * in UTF-8 (or in bytes a dump mangled) must read back from the FX text we write */
static bool is_ident_start(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80; }
static bool is_ident(unsigned char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static bool is_ws(unsigned char c) { return c == ' ' || c == '\t'; }

static const char *skip_ws(const char *p, const char *e) {
  while (p < e && is_ws((unsigned char)*p)) p++;
  return p;
}

static bool starts(const char *p, const char *e, const char *lit) {
  size_t n = strlen(lit);
  return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0;
}

static bool word_eq(const char *s, size_t n, const char *lit) { return strlen(lit) == n && memcmp(s, lit, n) == 0; }

static uint32_t col_of(const P *p, const char *at) {
  if (at < p->ls) return 1;
  return (uint32_t)(at - p->ls) + 1;
}

/* A snippet that shows where parsing failed even on a megabyte line. */
static const char *snippet_at(const char *content, const char *at) {
  if (at && at - content > 120) return at - 40;
  return content;
}

static void diag(P *p, OxSeverity sev, uint32_t line, uint32_t col, const char *snip, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
static void diag(P *p, OxSeverity sev, uint32_t line, uint32_t col, const char *snip, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ox_diag_vadd(p->d, sev, line, col, snip, fmt, ap);
  va_end(ap);
  if (sev == OX_SEV_ERROR) p->my_errors++;
}

static bool fail(P *p, const char *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static bool fail(P *p, const char *at, const char *fmt, ...) {
  if (p->err_at) return false; /* keep the innermost (first) failure */
  p->err_at = at;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err_msg, sizeof p->err_msg, fmt, ap);
  va_end(ap);
  return false;
}

static void vs_push(P *p, OxValue v) {
  if (p->nvs == p->cap_vs) {
    p->cap_vs = p->cap_vs ? p->cap_vs * 2 : 256;
    p->vs = ox_xrealloc(p->vs, p->cap_vs * sizeof *p->vs);
  }
  p->vs[p->nvs++] = v;
}

static void ks_push(P *p, const char *k) {
  if (p->nks == p->cap_ks) {
    p->cap_ks = p->cap_ks ? p->cap_ks * 2 : 64;
    p->ks = ox_xrealloc(p->ks, p->cap_ks * sizeof *p->ks);
  }
  p->ks[p->nks++] = k;
}

static char *sbuf_reserve(P *p, size_t n) {
  if (n + 1 > p->cap_sbuf) {
    p->cap_sbuf = n + 1 > 2 * p->cap_sbuf ? n + 1 : 2 * p->cap_sbuf;
    p->sbuf = ox_xrealloc(p->sbuf, p->cap_sbuf);
  }
  return p->sbuf;
}

static OxValue value_text(OxGraph *g, OxValueKind kind, const char *s, size_t n) {
  OxValue v = ox_value_none();
  v.kind = (uint8_t)kind;
  v.s = ox_graph_intern_n(g, s, n);
  return v;
}

static void ctx_add_ref(Ctx *c, const char *name, uint32_t line, uint32_t col) {
  if (c->n_refs == c->cap_refs) {
    uint32_t old = c->cap_refs;
    c->cap_refs = old ? old * 2 : 64;
    c->refs = ox_big_realloc(c->refs, (size_t)old * sizeof *c->refs, (size_t)c->cap_refs * sizeof *c->refs);
  }
  c->refs[c->n_refs++] = (Ref){{.name = name}, line, col};
}

/* ------------------------------------------------------------------ value parser */

typedef struct VCtx {
  P *p;
  Ctx *c;
  const char *e; /* end of the line */
  bool ret;      /* return line: bare identifiers are node references */
} VCtx;

static bool parse_value(VCtx *v, const char **pp, OxValue *out, uint32_t depth);

static bool is_delim(const char *q, const char *e) {
  return q >= e || *q == ',' || *q == ')' || *q == ']' || *q == '}' || *q == '#';
}

/* Words that name a device when they appear as a bare value (kwargs device: cpu). */
static bool is_device_word(const char *s, size_t n) {
  static const char *const devs[] = {"cpu", "cuda", "mps", "xpu", "npu", "hpu", "mtia", "xla", "meta", "privateuseone"};
  for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++)
    if (word_eq(s, n, devs[i])) return true;
  return false;
}

/* torch.contiguous_format, torch.strided, an op object such as
 * torch.ops.aten._scaled_dot_product_flash_attention.default ...: any torch.* word that is not
 * a dtype (dtypes are recognised first) is a torch constant, kept as an enum like the
 * readable loader does. */
static bool is_enum_word(const char *s, size_t n) { return n > 6 && memcmp(s, "torch.", 6) == 0; }

/* s0, u12: a SymInt symbol. */
static bool is_symbol(const char *s, size_t n) {
  if (n < 2 || (s[0] != 's' && s[0] != 'u')) return false;
  for (size_t i = 1; i < n; i++)
    if (!is_digit((unsigned char)s[i])) return false;
  return true;
}

/* An arithmetic expression over ints and symbols ("4096*s0", "s0 + 1") is a SymInt, not junk. */
static bool looks_symbolic(const char *s, size_t n) {
  bool sym = false;
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    if (is_ident_start(c)) {
      size_t j = i;
      while (j < n && is_ident((unsigned char)s[j])) j++;
      if (!is_symbol(s + i, j - i)) return false;
      sym = true;
      i = j;
    } else if (is_digit(c) || c == ' ' || c == '*' || c == '+' || c == '-' || c == '/' || c == '(' ||
               c == ')' || c == '%') {
      i++;
    } else {
      return false;
    }
  }
  return sym;
}

/* Keep an expression we cannot interpret as text, up to the next ',' or closing bracket
 * at its own level. Fails on an unbalanced tail or control bytes (binary garbage). */
static bool parse_raw(VCtx *v, const char **pp, const char *start, OxValue *out) {
  P *p = v->p;
  const char *q = start, *e = v->e;
  int depth = 0;
  char quote = 0;
  for (; q < e; q++) {
    unsigned char c = (unsigned char)*q;
    if (c < 0x20 && c != '\t') return fail(p, q, "unexpected byte 0x%02x", c);
    if (quote) {
      if (c == '\\' && q + 1 < e) q++;
      else if (c == (unsigned char)quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') quote = (char)c;
    else if (c == '(' || c == '[' || c == '{') depth++;
    else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) break;
      depth--;
    } else if (c == ',' && depth == 0) break;
  }
  if (quote) return fail(p, start, "unterminated string");
  if (depth) return fail(p, e, "unbalanced brackets in value");
  const char *end = q;
  while (end > start && is_ws((unsigned char)end[-1])) end--;
  if (end == start) return fail(p, start, "expected a value");
  if (looks_symbolic(start, (size_t)(end - start))) {
    *out = value_text(v->c->g, OX_V_SYM, start, (size_t)(end - start));
  } else {
    *out = value_text(v->c->g, OX_V_RAW, start, (size_t)(end - start));
    if (!p->raw_count) p->raw_col = col_of(p, start);
    p->raw_count++;
  }
  *pp = q;
  return true;
}

static bool parse_string(VCtx *v, const char **pp, OxValue *out) {
  P *p = v->p;
  const char *q = *pp, *e = v->e;
  char quote = *q++;
  char *buf = sbuf_reserve(p, (size_t)(e - q));
  size_t o = 0;
  for (;;) {
    if (q >= e) return fail(p, *pp, "unterminated string");
    unsigned char c = (unsigned char)*q;
    if (c == (unsigned char)quote) break;
    if (c == 0) return fail(p, q, "NUL byte in string");
    if (c == '\\' && q + 1 < e) {
      q++;
      switch (*q) {
      case 'n': buf[o++] = '\n'; break;
      case 't': buf[o++] = '\t'; break;
      case 'r': buf[o++] = '\r'; break;
      case '\\': buf[o++] = '\\'; break;
      case '\'': buf[o++] = '\''; break;
      case '"': buf[o++] = '"'; break;
      default: buf[o++] = '\\'; buf[o++] = *q; break;
      }
      q++;
      continue;
    }
    buf[o++] = (char)c;
    q++;
  }
  *out = value_text(v->c->g, OX_V_STR, buf, o);
  *pp = q + 1;
  return true;
}

/* Python number literal (int, float, inf, nan), locale independent. */
static bool parse_number(VCtx *v, const char **pp, OxValue *out) {
  P *p = v->p;
  const char *s = *pp, *q = s, *e = v->e;
  bool neg = false;
  if (q < e && (*q == '-' || *q == '+')) neg = *q++ == '-';
  if (e - q >= 3 && (memcmp(q, "inf", 3) == 0 || memcmp(q, "nan", 3) == 0) &&
      (q + 3 >= e || !is_ident((unsigned char)q[3]))) {
    double f = q[0] == 'i' ? INFINITY : NAN;
    *out = ox_value_float(neg ? -f : f);
    *pp = q + 3;
    return true;
  }
  const char *ds = q;
  bool is_float = false;
  while (q < e && is_digit((unsigned char)*q)) q++;
  if (q < e && *q == '.') {
    is_float = true;
    q++;
    while (q < e && is_digit((unsigned char)*q)) q++;
  }
  if (q == ds || (q == ds + 1 && *ds == '.')) return parse_raw(v, pp, s, out);
  if (q < e && (*q == 'e' || *q == 'E')) {
    const char *x = q + 1;
    if (x < e && (*x == '+' || *x == '-')) x++;
    if (x < e && is_digit((unsigned char)*x)) {
      is_float = true;
      q = x;
      while (q < e && is_digit((unsigned char)*q)) q++;
    }
  }
  if (!is_delim(skip_ws(q, e), e)) return parse_raw(v, pp, s, out);
  if (is_float) {
    size_t n = (size_t)(q - s);
    char *buf = sbuf_reserve(p, n);
    memcpy(buf, s, n);
    buf[n] = 0;
    if (p->decimal_point != '.')
      for (size_t i = 0; i < n; i++)
        if (buf[i] == '.') buf[i] = p->decimal_point;
    *out = ox_value_float(strtod(buf, NULL));
  } else {
    uint64_t acc = 0;
    bool overflow = false;
    for (const char *d = ds; d < q; d++) {
      unsigned dv = (unsigned)(*d - '0');
      if (acc > (UINT64_MAX - dv) / 10) overflow = true;
      else acc = acc * 10 + dv;
    }
    if (overflow || acc > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) {
      *out = value_text(v->c->g, OX_V_RAW, s, (size_t)(q - s));
      if (!p->raw_count) p->raw_col = col_of(p, s);
      p->raw_count++;
    } else {
      *out = ox_value_int(neg ? (int64_t)(0 - acc) : (int64_t)acc);
    }
  }
  *pp = q;
  return true;
}

/* Items of a bracketed sequence onto the value stack; *pp at the opener. */
static bool parse_items(VCtx *v, const char **pp, char close, uint32_t depth, uint32_t *n_out) {
  P *p = v->p;
  const char *q = *pp + 1, *e = v->e;
  size_t base = p->nvs;
  q = skip_ws(q, e);
  if (q < e && *q == close) {
    *pp = q + 1;
    *n_out = 0;
    return true;
  }
  for (;;) {
    OxValue item;
    if (!parse_value(v, &q, &item, depth + 1)) return false;
    vs_push(p, item);
    q = skip_ws(q, e);
    if (q < e && *q == ',') {
      q = skip_ws(q + 1, e);
      if (q < e && *q == close) break;
      continue;
    }
    if (q < e && *q == close) break;
    if (q >= e) return fail(p, e, "unbalanced brackets: missing '%c'", close);
    return fail(p, q, "expected ',' or '%c'", close);
  }
  *pp = q + 1;
  *n_out = (uint32_t)(p->nvs - base);
  return true;
}

static bool parse_seq(VCtx *v, const char **pp, OxValueKind kind, char close, uint32_t depth, OxValue *out) {
  P *p = v->p;
  size_t base = p->nvs;
  uint32_t n;
  if (!parse_items(v, pp, close, depth, &n)) {
    p->nvs = base;
    return false;
  }
  *out = ox_graph_value_seq(v->c->g, kind, n ? p->vs + base : NULL, n);
  p->nvs = base;
  return true;
}

static bool parse_dict(VCtx *v, const char **pp, uint32_t depth, OxValue *out) {
  P *p = v->p;
  const char *q = skip_ws(*pp + 1, v->e), *e = v->e;
  size_t vbase = p->nvs, kbase = p->nks;
  bool ok = false;
  if (q < e && *q == '}') {
    q++;
    ok = true;
  }
  while (!ok) {
    const char *k = NULL;
    if (q < e && (*q == '\'' || *q == '"')) {
      OxValue ks;
      if (!parse_string(v, &q, &ks)) goto out;
      k = ks.s;
    } else {
      const char *ks = q;
      while (q < e && (is_ident((unsigned char)*q) || *q == '.' || *q == '-')) q++;
      if (q == ks) {
        fail(p, q, q < e ? "expected a dict key" : "unbalanced brackets: missing '}'");
        goto out;
      }
      k = ox_graph_intern_n(v->c->g, ks, (size_t)(q - ks));
    }
    q = skip_ws(q, e);
    if (q >= e || *q != ':') {
      fail(p, q, "expected ':' after dict key");
      goto out;
    }
    q++;
    OxValue item;
    if (!parse_value(v, &q, &item, depth + 1)) goto out;
    ks_push(p, k);
    vs_push(p, item);
    q = skip_ws(q, e);
    if (q < e && *q == ',') {
      q = skip_ws(q + 1, e);
      if (q < e && *q == '}') {
        q++;
        ok = true;
      }
      continue;
    }
    if (q < e && *q == '}') {
      q++;
      ok = true;
      continue;
    }
    fail(p, q, q >= e ? "unbalanced brackets: missing '}'" : "expected ',' or '}'");
    goto out;
  }
  /* the stacks are NULL until the first push: no offset may be applied to them then */
  uint32_t nd = (uint32_t)(p->nvs - vbase);
  *out = ox_graph_value_dict(v->c->g, nd ? p->ks + kbase : NULL, nd ? p->vs + vbase : NULL, nd);
  *pp = q;
out:
  p->nvs = vbase;
  p->nks = kbase;
  return ok;
}

/* device(type='cuda', index=0) -> "cuda:0". Returns false (not failing the line) if the
 * call has another shape, so the caller keeps it as text. */
static bool parse_device_call(VCtx *v, const char **pp, OxValue *out) {
  const char *q = *pp, *e = v->e; /* at '(' */
  const char *type = NULL;
  size_t type_n = 0;
  int64_t index = -1;
  q = skip_ws(q + 1, e);
  while (q < e && *q != ')') {
    const char *k = q;
    while (q < e && is_ident((unsigned char)*q)) q++;
    size_t kn = (size_t)(q - k);
    q = skip_ws(q, e);
    if (q >= e || *q != '=') return false;
    q = skip_ws(q + 1, e);
    if (word_eq(k, kn, "type") && q < e && (*q == '\'' || *q == '"')) {
      char qc = *q++;
      type = q;
      while (q < e && *q != qc && is_ident((unsigned char)*q)) q++;
      if (q >= e || *q != qc) return false;
      type_n = (size_t)(q - type);
      q++;
    } else if (word_eq(k, kn, "index") && q < e && is_digit((unsigned char)*q)) {
      index = 0;
      while (q < e && is_digit((unsigned char)*q) && index < 1000000) index = index * 10 + (*q++ - '0');
    } else if (word_eq(k, kn, "index") && starts(q, e, "None")) {
      q += 4;
    } else {
      return false;
    }
    q = skip_ws(q, e);
    if (q < e && *q == ',') q = skip_ws(q + 1, e);
  }
  if (q >= e || !type || !type_n) return false;
  char buf[96];
  if (type_n > 40) return false;
  int n = index >= 0 ? snprintf(buf, sizeof buf, "%.*s:%lld", (int)type_n, type, (long long)index)
                     : snprintf(buf, sizeof buf, "%.*s", (int)type_n, type);
  *out = value_text(v->c->g, OX_V_DEVICE, buf, (size_t)n);
  *pp = q + 1;
  return true;
}

static bool parse_word(VCtx *v, const char **pp, OxValue *out, uint32_t depth) {
  P *p = v->p;
  const char *s = *pp, *q = s, *e = v->e;
  OxGraph *g = v->c->g;
  while (q < e && (is_ident((unsigned char)*q) || *q == '.')) q++;
  size_t n = (size_t)(q - s);
  if (q < e && *q == '(') {
    if (word_eq(s, n, "slice")) {
      const char *r = q;
      OxValue sl;
      size_t base = p->nvs;
      uint32_t cnt;
      if (!parse_items(v, &r, ')', depth, &cnt)) {
        p->nvs = base;
        return false;
      }
      if (cnt == 3) {
        sl = ox_graph_value_seq(g, OX_V_SLICE, p->vs + base, 3);
        p->nvs = base;
        if (is_delim(skip_ws(r, e), e)) {
          *out = sl;
          *pp = r;
          return true;
        }
      }
      p->nvs = base;
      return parse_raw(v, pp, s, out);
    }
    if (word_eq(s, n, "device")) {
      const char *r = q;
      if (parse_device_call(v, &r, out) && is_delim(skip_ws(r, e), e)) {
        *pp = r;
        return true;
      }
    }
    return parse_raw(v, pp, s, out);
  }
  /* cuda:0 */
  if (q + 1 < e && *q == ':' && is_digit((unsigned char)q[1]) && is_device_word(s, n)) {
    const char *r = q + 1;
    while (r < e && is_digit((unsigned char)*r)) r++;
    if (is_delim(skip_ws(r, e), e)) {
      *out = value_text(g, OX_V_DEVICE, s, (size_t)(r - s));
      *pp = r;
      return true;
    }
    return parse_raw(v, pp, s, out);
  }
  if (!is_delim(skip_ws(q, e), e)) return parse_raw(v, pp, s, out);
  *pp = q;
  if (word_eq(s, n, "None")) *out = ox_value_none();
  else if (word_eq(s, n, "True")) *out = ox_value_bool(true);
  else if (word_eq(s, n, "False")) *out = ox_value_bool(false);
  else if (word_eq(s, n, "inf")) *out = ox_value_float(INFINITY);
  else if (word_eq(s, n, "nan")) *out = ox_value_float(NAN);
  else if (word_eq(s, n, "Ellipsis")) {
    *out = ox_value_none();
    out->kind = OX_V_ELLIPSIS;
  } else if (v->ret && !memchr(s, '.', n)) {
    /* return lines print bare names */
    ctx_add_ref(v->c, ox_graph_intern_n(g, s, n), p->lineno, col_of(p, s));
    *out = ox_value_node(v->c->n_refs);
  } else if (n > 6 && memcmp(s, "torch.", 6) == 0 && ox_dtype_from_torch_name(s, n) != OX_DT_UNKNOWN) {
    *out = ox_value_dtype(ox_dtype_from_torch_name(s, n));
  } else if (is_enum_word(s, n)) {
    *out = value_text(g, OX_V_ENUM, s, n);
  } else if (is_symbol(s, n)) {
    *out = value_text(g, OX_V_SYM, s, n);
  } else if (is_device_word(s, n)) {
    *out = value_text(g, OX_V_DEVICE, s, n);
  } else {
    *out = value_text(g, OX_V_STR, s, n);
  }
  return true;
}

static bool parse_value(VCtx *v, const char **pp, OxValue *out, uint32_t depth) {
  P *p = v->p;
  const char *e = v->e;
  const char *q = skip_ws(*pp, e);
  *pp = q;
  if (depth > p->max_depth) {
    p->err_fatal = true;
    return fail(p, q, "values nested deeper than %u levels", p->max_depth);
  }
  if (q >= e) return fail(p, q, "expected a value");
  unsigned char c = (unsigned char)*q;
  switch (c) {
  case '%': {
    const char *s = q + 1, *r = s;
    while (r < e && is_ident((unsigned char)*r)) r++;
    if (r == s) return fail(p, q, "expected a node name after '%%'");
    ctx_add_ref(v->c, ox_graph_intern_n(v->c->g, s, (size_t)(r - s)), p->lineno, col_of(p, q));
    *out = ox_value_node(v->c->n_refs);
    *pp = r;
    if (!is_delim(skip_ws(r, e), e)) {
      v->c->n_refs--; /* the reference is part of an expression we keep as text */
      return parse_raw(v, pp, q, out);
    }
    return true;
  }
  case '[': return parse_seq(v, pp, OX_V_LIST, ']', depth, out);
  case '(': return parse_seq(v, pp, OX_V_TUPLE, ')', depth, out);
  case '{': return parse_dict(v, pp, depth, out);
  case '\'':
  case '"': {
    if (!parse_string(v, pp, out)) return false;
    if (!is_delim(skip_ws(*pp, e), e)) return parse_raw(v, pp, q, out);
    return true;
  }
  default: break;
  }
  if (starts(q, e, "...") && is_delim(skip_ws(q + 3, e), e)) {
    *out = ox_value_none();
    out->kind = OX_V_ELLIPSIS;
    *pp = q + 3;
    return true;
  }
  if (is_digit(c) || c == '-' || c == '+' || c == '.') return parse_number(v, pp, out);
  if (is_ident_start(c)) return parse_word(v, pp, out, depth);
  return parse_raw(v, pp, q, out);
}

/* ------------------------------------------------------------------ annotations */

/* Parses "[d0, d1, ...]" into tmp (at most 64 dims). */
static bool parse_dims(OxGraph *g, const char **pp, const char *e, OxDim tmp[64], int32_t *rank) {
  const char *q = *pp;
  if (q >= e || *q != '[') return false;
  q++;
  int32_t n = 0;
  q = skip_ws(q, e);
  if (q < e && *q == ']') {
    *pp = q + 1;
    *rank = 0;
    return true;
  }
  for (;;) {
    const char *s = skip_ws(q, e);
    int depth = 0;
    q = s;
    while (q < e && !(depth == 0 && (*q == ',' || *q == ']'))) {
      if (*q == '(') depth++;
      else if (*q == ')') depth--;
      q++;
    }
    if (q >= e) return false;
    const char *t = q;
    while (t > s && is_ws((unsigned char)t[-1])) t--;
    if (t == s || n >= 64) return false;
    OxDim d = {0, NULL};
    bool num = true;
    const char *x = s;
    bool neg = x < t && *x == '-';
    if (neg) x++;
    if (x == t) num = false;
    int64_t val = 0;
    for (; x < t && num; x++) {
      if (!is_digit((unsigned char)*x) || val > (INT64_MAX - 9) / 10) num = false;
      else val = val * 10 + (*x - '0');
    }
    if (num) d.v = neg ? -val : val;
    else d.sym = ox_graph_intern_n(g, s, (size_t)(t - s));
    tmp[n++] = d;
    if (*q == ']') break;
    q++;
  }
  *pp = q + 1;
  *rank = n;
  return true;
}

/* "f32[8, 16][16, 1]cuda:0" or "Sym(s0)" -> meta. False if the text has another shape, or
 * (why filled) sizes no tensor can have. */
static bool parse_annotation(OxGraph *g, const char *s, const char *e, OxMeta *m, char *why, size_t whycap) {
  memset(m, 0, sizeof *m);
  if (whycap) why[0] = 0;
  if (starts(s, e, "Sym(") && e[-1] == ')') {
    m->kind = OX_META_SYMINT;
    m->sym = ox_graph_intern_n(g, s + 4, (size_t)(e - 1 - (s + 4)));
    return true;
  }
  const char *q = s;
  while (q < e && is_ident((unsigned char)*q)) q++;
  OxDType dt = ox_dtype_from_abbr(s, (size_t)(q - s));
  if (dt == OX_DT_UNKNOWN) return false;
  /* parsed on the stack, then stored once per distinct annotation (a 100k-node dump has a
   * handful): ox_graph_meta_intern; loaded metas are shared and read-only (ox_graph.h) */
  OxDim shape[64], stride[64];
  int32_t rank = 0, srank = -1;
  if (!parse_dims(g, &q, e, shape, &rank)) return false;
  if (q < e && *q == '[') {
    if (!parse_dims(g, &q, e, stride, &srank) || srank != rank) return false;
  }
  OxTensorMeta t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = rank;
  t.shape = rank > 0 ? shape : NULL;
  if (srank >= 0) {
    t.has_stride = true;
    t.stride = rank > 0 ? stride : NULL;
  }
  if (q < e) {
    for (const char *x = q; x < e; x++)
      if (!(is_ident((unsigned char)*x) || *x == ':')) return false;
    t.device = ox_graph_intern_n(g, q, (size_t)(e - q));
  }
  char buf[120];
  if (ox_meta_absurd(&t, buf, sizeof buf)) {
    if (whycap) snprintf(why, whycap, "%s", buf);
    return false;
  }
  m->kind = OX_META_TENSOR;
  m->n = 1;
  m->t = ox_graph_meta_intern(g, &t, 1);
  return true;
}

/* parse_annotation through c's memo of the last few annotations */
static bool parse_annotation_memo(Ctx *c, const char *s, const char *e, OxMeta *m, char *why, size_t whycap) {
  size_t n = (size_t)(e - s);
  for (uint32_t i = 0; i < 4; i++)
    if (c->ann_memo[i].len == n && n && memcmp(c->ann_memo[i].text, s, n) == 0) {
      *m = c->ann_memo[i].meta;
      if (whycap) why[0] = 0;
      return true;
    }
  if (!parse_annotation(c->g, s, e, m, why, whycap)) return false;
  if (m->kind == OX_META_TENSOR && n) {
    uint32_t i = c->ann_next++ & 3;
    c->ann_memo[i].text = s;
    c->ann_memo[i].len = n;
    c->ann_memo[i].meta = *m;
  }
  return true;
}

bool ox_fx_device_reads_bare(const char *s) {
  const char *c = strchr(s, ':');
  size_t n = c ? (size_t)(c - s) : strlen(s);
  if (!is_device_word(s, n)) return false;
  if (!c) return true;
  if (!c[1]) return false;
  for (const char *q = c + 1; *q; q++)
    if (!is_digit((unsigned char)*q)) return false;
  return true;
}

bool ox_parse_tensor_annotation(OxGraph *g, const char *s, size_t n, OxMeta *m) {
  while (n && is_ws((unsigned char)*s)) s++, n--;
  while (n && is_ws((unsigned char)s[n - 1])) n--;
  return n && parse_annotation(g, s, s + n, m, NULL, 0);
}

/* ------------------------------------------------------------------ contexts */

static Ctx *top(P *p) { return p->depth ? &p->stack[p->depth - 1] : NULL; }

static Ctx *push_ctx(P *p, bool nested, const char *name, uint32_t src_line, int header_indent) {
  if (p->depth == p->cap_stack) {
    p->cap_stack = p->cap_stack ? p->cap_stack * 2 : 4;
    p->stack = ox_xrealloc(p->stack, p->cap_stack * sizeof *p->stack);
  }
  Ctx *c = &p->stack[p->depth++];
  memset(c, 0, sizeof *c);
  c->g = ox_graph_new();
  if (!nested && p->n_lines > p->lineno) {
    /* the strings of the lines left (names, targets: ~1.25 per line) without rehashing */
    size_t left = p->n_lines - p->lineno;
    ox_strtab_reserve(c->g->strings, left + left / 4);
  }
  c->g->name = ox_graph_intern(c->g, name);
  c->g->src_line = src_line;
  c->nested = nested;
  c->header_indent = header_indent;
  c->body_indent = -1;
  return c;
}

typedef struct NameInfo {
  const char *name;
  OxNodeId first; /* node created for the first definition */
  OxNodeId cur;   /* latest definition seen so far in pass 2 */
  uint32_t first_line;
  uint32_t next_suffix; /* for fresh names of duplicates: keeps renaming linear */
  bool has_real_def, has_marker, is_def;
} NameInfo;

typedef struct NameTab {
  NameInfo *items;
  uint32_t *by_id;   /* index + 1 by the name's id in the graph's string table, 0 = none */
  uint32_t n, cap_items, cap_ids, tag;
} NameTab;

/* Every name is interned in the graph's string table, whose ids are dense: the table is an
 * array indexed by id (a string made after it was sized is in no entry). */
static NameInfo *names_get(NameTab *t, const char *name, bool create) {
  uint32_t k = ox_strtab_id(t->tag, name);
  assert(k); /* interned in g->strings */
  if (k < t->cap_ids && t->by_id[k]) return &t->items[t->by_id[k] - 1];
  if (!create || !k) return NULL;
  if (k >= t->cap_ids) {
    uint32_t cap = t->cap_ids ? t->cap_ids : 64;
    while (cap <= k) cap *= 2;
    t->by_id = ox_big_realloc(t->by_id, (size_t)t->cap_ids * sizeof *t->by_id, (size_t)cap * sizeof *t->by_id);
    memset(t->by_id + t->cap_ids, 0, (size_t)(cap - t->cap_ids) * sizeof *t->by_id);
    t->cap_ids = cap;
  }
  if (t->n == t->cap_items) {
    uint32_t old = t->cap_items;
    t->cap_items = old ? old * 2 : 64;
    t->items = ox_big_realloc(t->items, (size_t)old * sizeof *t->items, (size_t)t->cap_items * sizeof *t->items);
  }
  NameInfo *ni = &t->items[t->n];
  memset(ni, 0, sizeof *ni);
  ni->name = name;
  t->by_id[k] = ++t->n;
  return ni;
}

typedef struct Resolve {
  P *p;
  Ctx *c;
  NameTab *names;
  OxNodeId user;     /* 0 for the output (created after resolution) */
  OxNodeId anchor;   /* externals are inserted before this node */
  bool forward;      /* a use precedes its definition: reorder */
} Resolve;

static OxNodeId resolve_ref(Resolve *r, uint32_t ref_index) {
  Ctx *c = r->c;
  Ref *ref = &c->refs[ref_index - 1];
  NameInfo *ni = &r->names->items[ref->u.ni]; /* every reference got its entry in the first pass */
  if (ni->cur) return ni->cur;
  if (ni->first) {
    if (r->user && ni->first >= r->user) {
      r->forward = true;
      if (!ni->has_marker)
        diag(r->p, OX_SEV_WARNING, ref->line, ref->col, NULL,
             "'%%%s' is used before its definition at line %u", ni->name, ni->first_line);
    }
    return ni->first;
  }
  OxGraph *g = c->g;
  OxNodeId id = ox_graph_insert_before(g, r->anchor, OX_OP_PLACEHOLDER, ni->name, ni->name, ox_value_none(),
                                       ox_value_none());
  g->nodes[id].flags |= OX_NODE_EXTERNAL;
  g->nodes[id].src_line = ref->line;
  ni->first = ni->cur = id;
  ni->first_line = ref->line;
  diag(r->p, OX_SEV_WARNING, ref->line, ref->col, NULL,
       "'%%%s' is never defined in this graph; loaded as an external input", ni->name);
  return id;
}

static void resolve_value(Resolve *r, OxValue *v) {
  switch (v->kind) {
  case OX_V_NODE: v->u.node = resolve_ref(r, v->u.node); break;
  case OX_V_LIST:
  case OX_V_TUPLE:
  case OX_V_DICT:
  case OX_V_SLICE:
    for (uint32_t i = 0; i < v->n; i++) resolve_value(r, &v->u.items[i]);
    break;
  default: break;
  }
}

/* Turns the records of a finished block into nodes (see the file comment). */
static void build_graph(P *p, Ctx *c) {
  OxGraph *g = c->g;
  NameTab t = {0};
  t.tag = ox_strtab_tag(g->strings);
  t.cap_ids = ox_strtab_id_limit(ox_strtab_count(g->strings)); /* every name is interned already */
  t.by_id = ox_big_zalloc((size_t)t.cap_ids * sizeof *t.by_id);
  t.cap_items = c->n_recs + 64; /* every record names one; references may add more */
  t.items = ox_big_realloc(NULL, 0, (size_t)t.cap_items * sizeof *t.items);
  /* pass 0: what each name has; records and references keep their entry's index, so the later
   * passes look nothing up (one hash probe per name occurrence in all, not three) */
  for (uint32_t i = 0; i < c->n_recs; i++) {
    NameInfo *ni = names_get(&t, c->recs[i].name, true);
    c->recs[i].ni = (uint32_t)(ni - t.items);
    ni->is_def = true;
    if (c->recs[i].flags & OX_NODE_MARKER) ni->has_marker = true;
    else ni->has_real_def = true;
  }
  for (uint32_t i = 0; i < c->n_refs; i++) c->refs[i].u.ni = (uint32_t)(names_get(&t, c->refs[i].u.name, true) - t.items);
  /* the node count is known now (records, plus names used but never defined, plus the
   * output): allocate the node array and name map once */
  uint32_t undefined = 0;
  for (uint32_t i = 0; i < t.n; i++) undefined += !t.items[i].is_def;
  ox_graph_reserve(g, c->n_recs + undefined + 1);
  /* pass 1: create nodes in order, args come later */
  OxNodeId anchor = 0;
  for (uint32_t i = 0; i < c->n_recs; i++) {
    Rec *rc = &c->recs[i];
    NameInfo *ni = &t.items[rc->ni]; /* (the fresh-name search below only looks up: items stay) */
    rc->id = 0;
    bool marker = rc->flags & OX_NODE_MARKER;
    if (marker && (ni->has_real_def || ni->first)) continue; /* merged into the definition */
    const char *name = rc->name;
    if (ni->first) {
      /* a second real definition: keep it under a fresh name nobody in the dump uses */
      char buf[300];
      for (uint32_t k = ni->next_suffix ? ni->next_suffix : 1;; k++) {
        ni->next_suffix = k + 1;
        snprintf(buf, sizeof buf, "%.250s_%u", rc->name, k);
        const char *cand = ox_graph_intern(g, buf);
        if (!names_get(&t, cand, false) && !ox_graph_find(g, cand)) {
          name = cand;
          break;
        }
      }
      diag(p, OX_SEV_WARNING, rc->line, rc->col, NULL,
           "'%%%s' is defined again (first at line %u); this definition is loaded as '%s' and later "
           "references use it",
           rc->name, ni->first_line, name);
    }
    OxNodeId id = ox_graph_add_node_interned(g, (OxOp)rc->op, name, rc->target, ox_value_none(), ox_value_none());
    OxNode *n = &g->nodes[id];
    n->flags = rc->flags;
    n->declared_users = rc->declared_users;
    n->src_line = rc->line;
    n->type_ann = rc->type_ann;
    n->default_value = rc->default_value;
    n->meta = rc->meta;
    rc->id = id;
    if (!anchor) anchor = id;
    if (!ni->first) {
      ni->first = id;
      ni->first_line = rc->line;
    }
  }
  /* pass 2: resolve references in program order; a use sees the latest definition */
  for (uint32_t i = 0; i < t.n; i++) t.items[i].cur = 0;
  Resolve r = {p, c, &t, 0, anchor, false};
  for (uint32_t i = 0; i < c->n_recs; i++) {
    Rec *rc = &c->recs[i];
    NameInfo *ni = &t.items[rc->ni];
    if (rc->id) {
      r.user = rc->id;
      resolve_value(&r, &rc->args);
      resolve_value(&r, &rc->kwargs);
      if (rc->args.n) ox_graph_set_args(g, rc->id, rc->args);
      if (rc->kwargs.n) ox_graph_set_kwargs(g, rc->id, rc->kwargs);
      ni->cur = rc->id;
    }
  }
  if (c->has_return) {
    r.user = 0;
    resolve_value(&r, &c->ret.args);
    OxNodeId out = ox_graph_add_node(g, OX_OP_OUTPUT, "output", "output", c->ret.args, ox_value_none());
    g->nodes[out].src_line = c->ret.line;
  }
  if (r.forward && !ox_graph_stable_toposort(g)) {
    diag(p, OX_SEV_ERROR, g->src_line ? g->src_line : (c->n_recs ? c->recs[0].line : 0), 0, NULL,
         "graph '%s' has a cycle through uses before definitions", g->name);
  }
  ox_big_free(t.items, (size_t)t.cap_items * sizeof *t.items);
  ox_big_free(t.by_id, (size_t)t.cap_ids * sizeof *t.by_id);
  ox_big_free(c->recs, (size_t)c->cap_recs * sizeof *c->recs);
  ox_big_free(c->refs, (size_t)c->cap_refs * sizeof *c->refs);
  c->recs = NULL;
  c->refs = NULL;
  c->cap_recs = c->cap_refs = 0;
}

/* Ends the innermost block: a subgraph goes to its parent, a top-level graph to the doc. */
static void pop_ctx(P *p) {
  Ctx *c = top(p);
  build_graph(p, c);
  OxGraph *g = c->g;
  bool nested = c->nested;
  bool empty = c->n_recs == 0 && !c->has_return;
  bool header = c->has_header;
  p->depth--;
  if (nested) {
    ox_graph_add_subgraph(top(p)->g, g);
  } else if (empty && !header) {
    ox_graph_free(g); /* a fragment whose every line was damaged */
  } else {
    if (empty)
      diag(p, OX_SEV_WARNING, g->src_line, 0, NULL, "graph at line %u has no nodes", g->src_line);
    ox_doc_add_graph(p->doc, g);
  }
}

static void close_all(P *p) {
  while (p->depth) pop_ctx(p);
}

/* The block a node or return line belongs to; opens a fragment when none is open. */
static Ctx *ensure_ctx(P *p) {
  if (p->depth) return top(p);
  Ctx *c = push_ctx(p, false, "fragment", p->pending_fragment ? p->pending_line : 0, -1);
  p->pending_fragment = false;
  return c;
}

static Rec *new_rec(P *p, Ctx *c) {
  if (c->n_recs == c->cap_recs) {
    /* first record: room for every line left in the input (one record per line at most), so a
     * big dump never copies its records; pages of a generous guess are never touched */
    uint32_t left = p->n_lines > p->lineno ? p->n_lines - p->lineno + 1 : 1;
    uint32_t old = c->cap_recs;
    c->cap_recs = old ? old * 2 : (left < 32 ? 32 : left);
    c->recs = ox_big_realloc(c->recs, (size_t)old * sizeof *c->recs, (size_t)c->cap_recs * sizeof *c->recs);
  }
  Rec *r = &c->recs[c->n_recs];
  memset(r, 0, sizeof *r);
  r->declared_users = -1;
  return r;
}

/* ------------------------------------------------------------------ lines */

static bool parse_node_line(P *p, Ctx *c, const char *s, const char *e, Rec *rc) {
  OxGraph *g = c->g;
  const char *q = s + 1;
  const char *ns = q;
  while (q < e && is_ident((unsigned char)*q)) q++;
  if (q == ns) return fail(p, q, "expected a node name after '%%'");
  rc->name = ox_graph_intern_n(g, ns, (size_t)(q - ns));
  rc->line = p->lineno;
  rc->col = col_of(p, s);
  q = skip_ws(q, e);
  if (q >= e || *q != ':') return fail(p, q, "expected ':' after the node name");
  q = skip_ws(q + 1, e);
  /* optional type, up to the annotation, the users count or '=' */
  if (q < e && *q != '"' && *q != '=' && !starts(q, e, "[num_users=") && !starts(q, e, "[#users=")) {
    const char *ts = q;
    int depth = 0;
    while (q < e) {
      if (depth == 0 && (*q == '"' || *q == '=' || starts(q, e, "[num_users=") || starts(q, e, "[#users=")))
        break;
      if (*q == '[' || *q == '(') depth++;
      else if ((*q == ']' || *q == ')') && depth > 0) depth--;
      q++;
    }
    const char *te = q;
    while (te > ts && is_ws((unsigned char)te[-1])) te--;
    if (te > ts) rc->type_ann = ox_graph_intern_n(g, ts, (size_t)(te - ts));
  }
  if (q < e && *q == '"') {
    const char *as = q + 1, *ae = as;
    while (ae < e && *ae != '"') ae++;
    if (ae >= e) return fail(p, q, "unterminated tensor annotation");
    if (!parse_annotation_memo(c, as, ae, &rc->meta, p->ann_why, sizeof p->ann_why)) {
      memset(&rc->meta, 0, sizeof rc->meta);
      p->ann_col = col_of(p, q);
    }
    q = skip_ws(ae + 1, e);
  }
  if (starts(q, e, "[num_users=") || starts(q, e, "[#users=")) {
    q = (const char *)memchr(q, '=', (size_t)(e - q)) + 1;
    const char *ds = q;
    int64_t nu = 0;
    while (q < e && is_digit((unsigned char)*q) && nu < INT32_MAX / 10) nu = nu * 10 + (*q++ - '0');
    if (q == ds || q >= e || *q != ']') return fail(p, ds, "expected a user count");
    rc->declared_users = (int32_t)nu;
    q = skip_ws(q + 1, e);
  }
  if (q >= e || *q != '=') return fail(p, q, "expected '=' before the op");
  q = skip_ws(q + 1, e);
  const char *os = q;
  while (q < e && is_ident((unsigned char)*q)) q++;
  size_t on = (size_t)(q - os);
  OxOp op;
  if (word_eq(os, on, "PlaceHolder")) {
    op = OX_OP_PLACEHOLDER;
    rc->flags |= OX_NODE_MARKER;
  } else if (!ox_op_from_name(os, on, &op)) {
    return fail(p, os, "unknown op '%.*s'", (int)(on > 40 ? 40 : on), os);
  }
  rc->op = (uint8_t)op;
  if (!starts(q, e, "[target=")) return fail(p, q, "expected '[target=' after the op");
  q += 8;
  const char *tgs = q;
  int depth = 1;
  for (; q < e; q++) {
    if (*q == '[') depth++;
    else if (*q == ']' && --depth == 0) break;
  }
  if (q >= e) return fail(p, e, "unbalanced brackets: missing ']' after the target");
  rc->target = ox_graph_intern_n(g, tgs, (size_t)(q - tgs));
  q = skip_ws(q + 1, e);
  if (op == OX_OP_PLACEHOLDER) {
    if (starts(q, e, "(default=")) {
      const char *ds = q + 9, *de = e;
      while (de > ds && is_ws((unsigned char)de[-1])) de--;
      if (de <= ds || de[-1] != ')') return fail(p, de, "expected ')' after the default value");
      rc->default_value = ox_graph_intern_n(g, ds, (size_t)(de - 1 - ds));
      q = e;
    }
  } else if (op == OX_OP_GET_ATTR) {
    /* nothing follows */
  } else {
    VCtx v = {p, c, e, false};
    if (!starts(q, e, "(args")) return fail(p, q, "expected '(args = ..., kwargs = ...)'");
    q = skip_ws(q + 5, e);
    if (q >= e || *q != '=') return fail(p, q, "expected '=' after 'args'");
    q = skip_ws(q + 1, e);
    if (q >= e || *q != '(') return fail(p, q, "expected the args tuple");
    if (!parse_value(&v, &q, &rc->args, 1)) return false;
    q = skip_ws(q, e);
    if (q >= e || *q != ',') return fail(p, q, "expected ', kwargs = {...})'");
    q = skip_ws(q + 1, e);
    if (!starts(q, e, "kwargs")) return fail(p, q, "expected 'kwargs = {...}'");
    q = skip_ws(q + 6, e);
    if (q >= e || *q != '=') return fail(p, q, "expected '=' after 'kwargs'");
    q = skip_ws(q + 1, e);
    if (q >= e || *q != '{') return fail(p, q, "expected the kwargs dict");
    if (!parse_value(&v, &q, &rc->kwargs, 1)) return false;
    q = skip_ws(q, e);
    if (q >= e || *q != ')') return fail(p, q, "expected ')' after kwargs");
    q = skip_ws(q + 1, e);
  }
  if (q < e && *q != '#') return fail(p, q, "unexpected text after the node");
  if (rc->args.kind != OX_V_TUPLE) rc->args = ox_graph_value_seq(g, OX_V_TUPLE, NULL, 0);
  if (rc->kwargs.kind != OX_V_DICT) rc->kwargs = ox_graph_value_dict(g, NULL, NULL, 0);
  return true;
}

static bool parse_return_line(P *p, Ctx *c, const char *s, const char *e, Rec *rc) {
  OxGraph *g = c->g;
  VCtx v = {p, c, e, true};
  const char *q = skip_ws(s + 6, e);
  OxValue val = ox_value_none();
  rc->line = p->lineno;
  rc->col = col_of(p, s);
  if (q < e && *q != '#') {
    if (!parse_value(&v, &q, &val, 1)) return false;
    q = skip_ws(q, e);
    if (q < e && *q == ',') {
      /* Inductor prints "return %a,%b": a bare comma list is a tuple */
      size_t base = p->nvs;
      vs_push(p, val);
      while (q < e && *q == ',') {
        q = skip_ws(q + 1, e);
        if (q >= e || *q == '#') break;
        OxValue item;
        if (!parse_value(&v, &q, &item, 1)) {
          p->nvs = base;
          return false;
        }
        vs_push(p, item);
        q = skip_ws(q, e);
      }
      val = ox_graph_value_seq(g, OX_V_TUPLE, p->vs + base, (uint32_t)(p->nvs - base));
      p->nvs = base;
    }
    if (q < e && *q != '#') return fail(p, q, "unexpected text after the return value");
  }
  rc->op = OX_OP_OUTPUT;
  rc->args = ox_graph_value_seq(g, OX_V_TUPLE, &val, 1);
  return true;
}

/* "graph():", "lowered graph():", "Post export graph: graph():", "graph(x, y) -> T:". */
static bool is_header(const char *s, const char *e, bool *lowered, const char **ps, const char **pe) {
  const char *end = e;
  while (end > s && is_ws((unsigned char)end[-1])) end--;
  if (end - s < 8 || end[-1] != ':') return false;
  /* only the last "graph(" can be the header (text may precede it); trying every
   * occurrence would be quadratic on a long line */
  const char *q = NULL;
  for (const char *x = end - 6; x >= s; x--)
    if (memcmp(x, "graph(", 6) == 0 && (x == s || !is_ident((unsigned char)x[-1]))) {
      q = x;
      break;
    }
  if (q) {
    const char *r = q + 6;
    int depth = 1;
    for (; r < end; r++) {
      if (*r == '(' || *r == '[') depth++;
      else if ((*r == ')' || *r == ']') && --depth == 0) break;
    }
    if (r >= end) return false;
    const char *after = skip_ws(r + 1, end);
    if (!(after == end - 1 || starts(after, end, "->"))) return false;
    *ps = q + 6;
    *pe = r;
    const char *b = q;
    while (b > s && is_ws((unsigned char)b[-1])) b--;
    *lowered = b - s >= 7 && memcmp(b - 7, "lowered", 7) == 0 && (b - 7 == s || !is_ident((unsigned char)b[-8]));
    return true;
  }
  return false;
}

/* Placeholders named in the header's parameter list ("graph(x, y):"). */
static void header_params(P *p, Ctx *c, const char *s, const char *e) {
  const char *q = s;
  while (q < e) {
    q = skip_ws(q, e);
    const char *ns = q;
    while (q < e && is_ident((unsigned char)*q)) q++;
    if (q > ns) {
      Rec *rc = new_rec(p, c);
      rc->op = OX_OP_PLACEHOLDER;
      rc->name = rc->target = ox_graph_intern_n(c->g, ns, (size_t)(q - ns));
      rc->args = ox_graph_value_seq(c->g, OX_V_TUPLE, NULL, 0);
      rc->kwargs = ox_graph_value_dict(c->g, NULL, NULL, 0);
      rc->line = p->lineno;
      rc->col = col_of(p, ns);
      c->n_recs++;
    }
    int depth = 0;
    while (q < e && !(depth == 0 && *q == ',')) {
      if (*q == '[' || *q == '(') depth++;
      else if (*q == ']' || *q == ')') depth--;
      q++;
    }
    if (q < e) q++;
  }
}

/* TORCH_LOGS / glog prefix: "V0123 10:01:52.787000 140455623955584 path.py:1291] [0/0] [__x] ". */
static size_t glog_prefix(const char *s, const char *e) {
  const char *q = s;
  if (e - q < 22 || !strchr("IWEVD", *q)) return 0;
  q++;
  for (int i = 0; i < 4; i++)
    if (!is_digit((unsigned char)*q++)) return 0;
  if (*q++ != ' ') return 0;
  const char *pat = "dd:dd:dd.";
  for (int i = 0; pat[i]; i++, q++) {
    if (q >= e) return 0;
    if (pat[i] == 'd' ? !is_digit((unsigned char)*q) : *q != pat[i]) return 0;
  }
  while (q < e && is_digit((unsigned char)*q)) q++;
  q = skip_ws(q, e);
  const char *ds = q;
  while (q < e && is_digit((unsigned char)*q)) q++;
  if (q == ds || q >= e || *q != ' ') return 0;
  q++;
  while (q < e && *q != ']' && *q != ' ') q++;
  if (q >= e || *q != ']') return 0;
  q++;
  if (q < e && *q == ' ') q++;
  /* [0/0] [__graph_code] tags */
  while (q < e && *q == '[') {
    const char *r = q;
    while (r < e && *r != ']' && *r != ' ') r++;
    if (r >= e || *r != ']') break;
    q = r + 1;
    if (q < e && *q == ' ') q++;
  }
  return (size_t)(q - s);
}

/* Where the graph text proper starts on a line, for bounding the common prefix. */
static size_t anchor_of(const char *s, const char *e) {
  for (const char *q = s; q < e; q++) {
    if (*q == '%') return (size_t)(q - s);
    if ((q == s || !is_ident((unsigned char)q[-1])) &&
        ((starts(q, e, "return") && (q + 6 == e || !is_ident((unsigned char)q[6]))) || starts(q, e, "graph(") ||
         starts(q, e, "lowered graph(") || starts(q, e, "backend_id:")))
      return (size_t)(q - s);
  }
  return SIZE_MAX;
}

typedef struct LineIt {
  const char *p, *end;
} LineIt;

static bool next_line(LineIt *it, const char **ls, const char **le) {
  if (it->p >= it->end) return false;
  const char *s = it->p;
  const char *nl = memchr(s, '\n', (size_t)(it->end - s));
  const char *e = nl ? nl : it->end;
  it->p = nl ? nl + 1 : it->end;
  if (e > s && e[-1] == '\r') e--;
  *ls = s;
  *le = e;
  return true;
}

static bool blank(const char *s, const char *e) {
  for (; s < e; s++)
    if (!is_ws((unsigned char)*s)) return false;
  return true;
}

/* Longest prefix common to every non-blank line (after a glog prefix), cut before the
 * graph text proper; whitespace-only prefixes are indentation, not a prefix. */
static void detect_prefix(const char *text, size_t len, const char **pre, size_t *pre_len) {
  LineIt it = {text, text + len};
  const char *ls, *le, *lcp = NULL;
  size_t lcp_len = 0, anchor = SIZE_MAX;
  while (next_line(&it, &ls, &le)) {
    ls += glog_prefix(ls, le);
    if (blank(ls, le)) continue;
    size_t n = (size_t)(le - ls);
    if (!lcp) {
      lcp = ls;
      lcp_len = n;
    } else {
      size_t k = 0;
      size_t m = n < lcp_len ? n : lcp_len;
      while (k < m && lcp[k] == ls[k]) k++;
      lcp_len = k;
    }
    size_t a = anchor_of(ls, le);
    if (a < anchor) anchor = a;
    if (lcp_len == 0) break;
  }
  if (lcp_len > anchor) lcp_len = anchor;
  /* without any graph text there is nothing to strip a prefix for ("#" on comment-only input) */
  if (anchor == SIZE_MAX || !lcp || blank(lcp, lcp + lcp_len)) lcp_len = 0;
  *pre = lcp;
  *pre_len = lcp_len;
}

static void report_line_failure(P *p, const char *content) {
  const char *at = p->err_at ? p->err_at : content;
  diag(p, p->err_fatal ? OX_SEV_ERROR : OX_SEV_WARNING, p->lineno, col_of(p, at), snippet_at(content, at),
       "skipped damaged line: %s", p->err_at ? p->err_msg : "cannot parse");
}

static void report_raw(P *p, const char *content) {
  if (p->ann_col && p->ann_why[0])
    diag(p, OX_SEV_WARNING, p->lineno, p->ann_col, content, "tensor annotation ignored: %s", p->ann_why);
  else if (p->ann_col)
    diag(p, OX_SEV_WARNING, p->lineno, p->ann_col, content, "unrecognized tensor annotation ignored");
  if (p->raw_count)
    diag(p, OX_SEV_WARNING, p->lineno, p->raw_col, content,
         "%u value%s kept as uninterpreted text", p->raw_count, p->raw_count == 1 ? "" : "s");
}

static void line_reset(P *p) {
  p->err_at = NULL;
  p->err_msg[0] = 0;
  p->err_fatal = false;
  p->raw_count = 0;
  p->raw_col = 0;
  p->ann_col = 0;
  p->ann_why[0] = 0;
  p->nvs = 0;
  p->nks = 0;
}

static int indent_of(const char *s, const char *e) {
  int n = 0;
  while (s < e && is_ws((unsigned char)*s)) {
    s++;
    n++;
  }
  return n;
}

/* Leaves blocks that the line's indentation shows have ended (a nested block without return; a
 * nested block with no body at all: a line not indented past its header, as the FX writer
 * prints an empty subgraph). */
static void pop_dedented(P *p, int indent) {
  while (p->depth && top(p)->nested) {
    Ctx *c = top(p);
    if ((c->body_indent >= 0 && indent < c->body_indent) ||
        (c->body_indent < 0 && c->header_indent >= 0 && indent <= c->header_indent))
      pop_ctx(p);
    else
      break;
  }
}

int ox_parse_fx_text(const char *text, size_t len, const OxLoadOptions *opt, OxDoc *doc, OxDiagList *diags) {
  P p;
  memset(&p, 0, sizeof p);
  p.text = text;
  p.len = len;
  p.d = diags;
  p.doc = doc;
  p.max_depth = opt && opt->max_depth ? opt->max_depth : 256;
  const struct lconv *lc = localeconv();
  p.decimal_point = lc && lc->decimal_point && lc->decimal_point[0] ? lc->decimal_point[0] : '.';
  uint32_t graphs_before = doc->n_graphs;

  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
    text += 3;
    len -= 3;
  }
  const char *pre;
  size_t pre_len;
  detect_prefix(text, len, &pre, &pre_len);

  /* one memchr pass: the line count sizes the record array and the string table (names,
   * targets: about 1.3 strings per node line), so neither grows by doubling */
  for (const char *x = text, *end = text + len; x < end; p.n_lines++) {
    const char *nl = memchr(x, '\n', (size_t)(end - x));
    x = nl ? nl + 1 : end;
  }
  LineIt it = {text, text + len};
  const char *ls, *le;
  while (next_line(&it, &ls, &le)) {
    p.lineno++;
    p.ls = ls;
    p.le = le;
    line_reset(&p);
    const char *s = ls + glog_prefix(ls, le);
    if (pre_len && (size_t)(le - s) >= pre_len && memcmp(s, pre, pre_len) == 0) s += pre_len;
    int indent = indent_of(s, le);
    s += indent;
    if (s >= le) continue;
    const char *nul = memchr(s, 0, (size_t)(le - s));
    if (nul) {
      diag(&p, p.depth || *s == '%' ? OX_SEV_WARNING : OX_SEV_NOTE, p.lineno, col_of(&p, nul), s,
           "skipped damaged line: NUL byte");
      continue;
    }
    const char *fq = *s == '#' ? skip_ws(s + 1, le) : s;
    if ((size_t)(le - fq) >= 14 && strncasecmp(fq, "graph fragment", 14) == 0 &&
        (*s == '#' || blank(fq + 14, le) || (fq[14] == ':' && blank(fq + 15, le)))) {
      close_all(&p);
      p.pending_fragment = true;
      p.pending_line = p.lineno;
      continue;
    }
    if (*s == '#') continue; /* comment */
    bool is_ret = starts(s, le, "return") && (s + 6 == le || !is_ident((unsigned char)s[6]));
    bool lowered = false;
    const char *hps = NULL, *hpe = NULL;
    if (*s == '%' || is_ret) {
      pop_dedented(&p, indent);
      Ctx *c = ensure_ctx(&p);
      if (c->body_indent < 0) c->body_indent = indent;
      if (*s == '%') {
        /* the next line's node name is interned after this line is parsed: its slot in the
         * string table (a cache miss on a large graph) is fetched meanwhile */
        const char *nx = it.p;
        while (nx < it.end && (*nx == ' ' || *nx == '\t')) nx++;
        if (nx < it.end && *nx == '%') {
          const char *a = ++nx;
          while (nx < it.end && is_ident((unsigned char)*nx)) nx++;
          if (nx > a) ox_strtab_prefetch(c->g->strings, a, (size_t)(nx - a));
        }
        uint32_t refs_before = c->n_refs;
        Rec *rc = new_rec(&p, c);
        if (parse_node_line(&p, c, s, le, rc)) {
          c->n_recs++;
          c->last_get_attr = rc->name; /* executorch: get_attr; others print it after any node */
          report_raw(&p, s);
        } else {
          c->n_refs = refs_before;
          report_line_failure(&p, s);
        }
      } else {
        uint32_t refs_before = c->n_refs;
        Rec rc;
        memset(&rc, 0, sizeof rc);
        if (parse_return_line(&p, c, s, le, &rc)) {
          c->ret = rc;
          c->has_return = true;
          report_raw(&p, s);
          pop_ctx(&p);
        } else {
          c->n_refs = refs_before;
          report_line_failure(&p, s);
        }
      }
    } else if (is_header(s, le, &lowered, &hps, &hpe)) {
      if (lowered && p.depth) {
        pop_dedented(&p, indent);
        while (p.depth && top(&p)->nested && indent <= top(&p)->header_indent) pop_ctx(&p);
      }
      if (lowered && p.depth) {
        if (p.depth >= p.max_depth) {
          diag(&p, OX_SEV_ERROR, p.lineno, col_of(&p, s), s, "graphs nested deeper than %u levels", p.max_depth);
          continue;
        }
        Ctx *parent = top(&p);
        char name[64];
        snprintf(name, sizeof name, "lowered graph %u", parent->n_sub++);
        const char *owner = parent->last_get_attr;
        Ctx *c = push_ctx(&p, true, name, p.lineno, indent);
        c->has_header = true;
        if (owner) c->g->sub_owner = ox_graph_intern(c->g, owner);
        header_params(&p, c, hps, hpe);
      } else {
        close_all(&p);
        p.pending_fragment = false;
        Ctx *c = push_ctx(&p, false, lowered ? "lowered graph" : "graph", p.lineno, indent);
        c->has_header = true;
        header_params(&p, c, hps, hpe);
      }
    } else if (starts(s, le, "backend_id:")) {
      /* executorch delegate metadata between a get_attr and its lowered graph */
    } else {
      diag(&p, p.depth ? OX_SEV_WARNING : OX_SEV_NOTE, p.lineno, col_of(&p, s), s,
           p.depth ? "skipped unrecognized line" : "ignored text outside a graph");
    }
  }
  close_all(&p);
  free(p.stack);
  free(p.vs);
  free(p.ks);
  free(p.sbuf);
  if (doc->n_graphs == graphs_before) {
    diag(&p, OX_SEV_ERROR, 1, 1, NULL,
         len == 0 || blank(text, text + len) ? "no graph found: the input is empty"
                                            : "no graph found: no node lines, graph(): header or return line");
    return -1;
  }
  return p.my_errors ? -1 : 0;
}
