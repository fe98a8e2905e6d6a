/* ox_parse_py.c - loader for the Python-code dump style of FX graphs:
 * GraphModule.print_readable(), Inductor's fx_graph_readable.py, tlparse graph files and
 * TORCH_LOGS=graph_code output (docs/format-fx-readable.md).
 *
 * How it works. The input is cut into physical lines; a per-line log prefix is removed
 * (TORCH_LOGS' "V0123 10:01:52.787000 140455623955584 file.py:1291] [0/0] [__graph_code] "
 * per line, otherwise one constant prefix shared by every non-blank line, such as "#   ").
 * Structure comes from indentation, as in Python: every "class NAME(...):" opens a graph
 * (nested classes become subgraphs of the enclosing class's graph), its "def forward(...)"
 * parameters become placeholders and every statement of the body one node. A statement is
 * parsed into a small syntax tree (scratch arena, released per statement) and then lowered
 * to FX: dotted calls -> call_function, x.m() -> call_method, self.p() -> call_module,
 * self.p -> get_attr, x[i] -> operator.getitem, infix/unary operators -> operator.*,
 * return -> output.
 *
 * Invariants: the parser never executes anything and never recurses deeper than
 * opt->max_depth (brackets, operators, nested classes); every pass over the text is
 * linear, so huge lines and files cost O(n). Bad input never aborts: a statement that
 * cannot be parsed is skipped with a located warning, names used but never defined become
 * OX_NODE_EXTERNAL placeholders (warning), too-deep nesting is a located error.
 * Requires a NUL-terminated buffer (text[len] == 0). Produces graphs that pass
 * ox_graph_verify (output last, defs before uses, users consistent).
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"
#include "load/ox_parse.h"

/* ------------------------------------------------------------------ small helpers */

static bool is_id0(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80; }
static bool is_id(unsigned char c) { return is_id0(c) || (c >= '0' && c <= '9'); }
static bool is_dig(unsigned char c) { return c >= '0' && c <= '9'; }
static bool is_sp(unsigned char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }

static bool span_eq(const char *s, size_t n, const char *lit) {
  size_t m = strlen(lit);
  return m == n && memcmp(s, lit, n) == 0;
}

static bool span_starts(const char *s, size_t n, const char *lit) {
  size_t m = strlen(lit);
  return n >= m && memcmp(s, lit, m) == 0;
}

/* s0, u12: a SymInt symbol as Inductor names them */
static bool is_symbol_name(const char *s, size_t n) {
  if (n < 2 || (s[0] != 's' && s[0] != 'u')) return false;
  for (size_t i = 1; i < n; i++)
    if (!is_dig((unsigned char)s[i])) return false;
  return true;
}

/* ------------------------------------------------------------------ lines */

typedef struct Line {
  size_t start, end; /* raw line [start, end) without the newline and a trailing CR */
  size_t cs;         /* content start after the removed prefix */
} Line;

/* A piece of logical text: either a slice of the input (one line) or a joined copy of
 * several lines; segs map offsets back to line/column. */
typedef struct Seg {
  size_t off;     /* offset in the logical text where this segment starts */
  uint32_t line;  /* 0-based line index */
  size_t raw;     /* offset in the input text of that first byte */
} Seg;

typedef struct Src {
  const char *s;
  size_t n;
  const Seg *segs;
  uint32_t nseg;
} Src;

/* ------------------------------------------------------------------ syntax tree */

typedef enum AKind {
  A_NAME, A_ATTR, A_INT, A_FLOAT, A_STR, A_NONE, A_TRUE, A_FALSE, A_ELLIPSIS, A_RAWNUM,
  A_TUPLE, A_LIST, A_DICT, A_CALL, A_SUBSCRIPT, A_BINOP, A_UNOP, A_SLICE
} AKind;

typedef enum BinOp {
  B_ADD, B_SUB, B_MUL, B_TRUEDIV, B_FLOORDIV, B_MOD, B_POW, B_MATMUL, B_AND, B_OR, B_XOR,
  B_LSHIFT, B_RSHIFT, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE,
  U_NEG, U_POS, U_INVERT, U_NOT
} BinOp;

static const char *const op_target[] = {
  "operator.add", "operator.sub", "operator.mul", "operator.truediv", "operator.floordiv",
  "operator.mod", "operator.pow", "operator.matmul", "operator.and_", "operator.or_", "operator.xor",
  "operator.lshift", "operator.rshift", "operator.eq", "operator.ne", "operator.lt", "operator.le",
  "operator.gt", "operator.ge", "operator.neg", "operator.pos", "operator.invert", "operator.not_",
};

typedef struct Ast Ast;
struct Ast {
  uint8_t kind, op;
  uint32_t n;     /* items (TUPLE LIST DICT SLICE), args (CALL) */
  uint32_t npos;  /* CALL: positional args come first */
  size_t off, end;/* span in the Src */
  const char *s;  /* NAME/ATTR: the name (points into Src); STR: decoded (scratch) */
  size_t slen;
  int64_t i;
  double f;
  Ast *a, *b;     /* ATTR/SUBSCRIPT/CALL base or callee; BINOP operands; UNOP operand */
  Ast **kids;     /* items / args; SLICE: 3 entries, NULL = omitted */
  Ast **keys;     /* DICT keys; CALL: keyword names (A_NAME) for args >= npos */
};

/* ------------------------------------------------------------------ parser state */

typedef struct Frame {
  OxGraph *g;
  int class_indent;   /* lines indented at most this much end the frame */
  int def_indent;     /* indentation of "def forward"; -1 before it is seen */
  int skip_indent;    /* >= 0: skipping the body of another method indented this much */
  bool bare;          /* a "def forward" without a class */
  bool has_output;
  bool trace_open;    /* last thing seen was a "# File:" comment: the next one extends it */
  const char *cls;    /* class name (interned in g) */
  OxNameMap *locals;  /* Python name (interned in g) -> node id */
  OxNodeId last_ph;   /* last placeholder, where external inputs are inserted */
  const char *trace;  /* current stack_trace (interned), NULL after "No stacktrace" */
  OxBuf tracebuf;
  uint32_t aliases;   /* "a = b" statements kept as name aliases (no node) */
  uint32_t renames;   /* "l_x_ = L_x_" statements folded into the placeholder's name */
} Frame;

typedef struct P {
  const char *text;
  size_t len;
  const OxLoadOptions *opt;
  uint32_t max_depth;
  OxDoc *doc;
  OxDiagList *diags;
  Line *lines;
  uint32_t nlines;
  Frame *frames;
  uint32_t nframes, capframes;
  const char *pending_name; /* from a "===== name =====" banner (malloc'ed) */
  size_t errors;
  OxArena scratch;          /* syntax trees and joined lines; released per statement */
  OxArenaMark scratch_mark;
  OxBuf join;               /* joined multi-line logical line */
  OxBuf path;               /* module path scratch (self_path) */
  uint32_t ldepth;          /* lowering recursion depth */
  bool lfatal;              /* the depth error was reported for this statement */
  Seg *segs;
  uint32_t nsegs, capsegs;
  Ast **astk;               /* pointer stack for building item arrays */
  uint32_t nastk, capastk;
  OxValue *vstk;            /* value stack for building tuples/lists/dicts */
  const char **kstk;        /* keys parallel to vstk (dicts) */
  uint32_t nvstk, capvstk;
  /* expression parsing of the current Src */
  const Src *src;
  size_t pos, lim;
  uint32_t depth;
  bool perr;                /* a parse error was recorded for this statement */
  bool pfatal;              /* ...and it is an error (nesting), not a warning */
  size_t perr_off;
  char perr_msg[200];
} P;

/* ------------------------------------------------------------------ diagnostics */

static void src_loc(const Src *src, size_t off, uint32_t *line, size_t *raw) {
  uint32_t k = 0;
  /* segments are few (one per joined line); binary search keeps huge joins linear */
  uint32_t lo = 0, hi = src->nseg;
  while (hi - lo > 1) {
    uint32_t mid = (lo + hi) / 2;
    if (src->segs[mid].off <= off) lo = mid; else hi = mid;
  }
  k = lo;
  *line = src->segs[k].line;
  *raw = src->segs[k].raw + (off - src->segs[k].off);
}

/* Snippet pointer for a raw offset: the line start, or a window before the column on long lines. */
static const char *snippet_at(P *p, uint32_t li, size_t raw) {
  size_t s = p->lines[li].start;
  if (raw > s + 60) s = raw - 40;
  return p->text + s;
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static void diag_raw(P *p, OxSeverity sev, uint32_t li, size_t raw, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  uint32_t col = 0, line = 0;
  const char *snip = NULL;
  if (li < p->nlines) {
    line = li + 1;
    if (raw < p->lines[li].start) raw = p->lines[li].start;
    size_t c = raw - p->lines[li].start + 1;
    col = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
    snip = snippet_at(p, li, raw);
  }
  if (sev == OX_SEV_ERROR) p->errors++;
  ox_diag_vadd(p->diags, sev, line, col, snip, fmt, ap);
  va_end(ap);
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static void diag_src(P *p, OxSeverity sev, size_t off, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  uint32_t li;
  size_t raw;
  src_loc(p->src, off, &li, &raw);
  diag_raw(p, sev, li, raw, "%s", msg);
}

/* ------------------------------------------------------------------ stacks */

static void astk_push(P *p, Ast *a) {
  if (p->nastk == p->capastk) {
    p->capastk = p->capastk ? p->capastk * 2 : 64;
    p->astk = ox_xrealloc(p->astk, p->capastk * sizeof *p->astk);
  }
  p->astk[p->nastk++] = a;
}

static Ast **astk_take(P *p, uint32_t base) {
  uint32_t n = p->nastk - base;
  Ast **v = n ? ox_arena_alloc(&p->scratch, n * sizeof *v) : NULL;
  if (n) memcpy(v, p->astk + base, n * sizeof *v);
  p->nastk = base;
  return v;
}

static void vstk_push(P *p, OxValue v, const char *key) {
  if (p->nvstk == p->capvstk) {
    p->capvstk = p->capvstk ? p->capvstk * 2 : 64;
    p->vstk = ox_xrealloc(p->vstk, p->capvstk * sizeof *p->vstk);
    p->kstk = ox_xrealloc(p->kstk, p->capvstk * sizeof *p->kstk);
  }
  p->kstk[p->nvstk] = key;
  p->vstk[p->nvstk++] = v;
}

/* The values (keys) pushed since base; NULL when there are none (the stacks may not be
 * allocated yet: no pointer arithmetic on NULL). */
static OxValue *vstk_from(P *p, uint32_t base) { return p->nvstk > base ? p->vstk + base : NULL; }
static const char **kstk_from(P *p, uint32_t base) { return p->nvstk > base ? p->kstk + base : NULL; }

/* ------------------------------------------------------------------ tokenizer-level parsing */

static void perr(P *p, size_t off, const char *msg) {
  if (p->perr) return;
  p->perr = true;
  p->perr_off = off;
  snprintf(p->perr_msg, sizeof p->perr_msg, "%s", msg);
}

static void skip_ws(P *p) {
  const char *s = p->src->s;
  while (p->pos < p->lim && is_sp((unsigned char)s[p->pos])) p->pos++;
  /* a trailing "# comment" ends the statement */
  if (p->pos < p->lim && s[p->pos] == '#') p->pos = p->lim;
}

static int peekc(P *p) {
  skip_ws(p);
  return p->pos < p->lim ? (unsigned char)p->src->s[p->pos] : -1;
}

static int peekc2(P *p) { return p->pos + 1 < p->lim ? (unsigned char)p->src->s[p->pos + 1] : -1; }

static bool accept(P *p, char c) {
  if (peekc(p) == (unsigned char)c) {
    p->pos++;
    return true;
  }
  return false;
}

static bool expect(P *p, char c, const char *what) {
  if (accept(p, c)) return true;
  char msg[96];
  snprintf(msg, sizeof msg, "expected %s", what);
  perr(p, p->pos, msg);
  return false;
}

static Ast *mk(P *p, AKind k, size_t off) {
  Ast *a = ox_arena_alloc(&p->scratch, sizeof *a);
  a->kind = (uint8_t)k;
  a->off = off;
  a->end = off;
  return a;
}

/* Reads an identifier at pos (after whitespace); returns length 0 if none. */
static size_t read_ident(P *p, const char **out) {
  skip_ws(p);
  const char *s = p->src->s;
  size_t b = p->pos;
  if (b >= p->lim || !is_id0((unsigned char)s[b])) return 0;
  size_t e = b + 1;
  while (e < p->lim && is_id((unsigned char)s[e])) e++;
  *out = s + b;
  p->pos = e;
  return e - b;
}

static bool is_keyword(const char *s, size_t n) {
  static const char *const kw[] = {"and", "or", "not", "if", "else", "lambda", "for", "in", "is",
                                   "yield", "await", "def", "class", "return", "del", "import",
                                   "from", "with", "as", "while", "pass", "global", "assert"};
  for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
    if (span_eq(s, n, kw[i])) return true;
  return false;
}

static Ast *parse_expr(P *p);

/* Python string literal (optional r/b/u/f prefix already consumed by the caller via pfx). */
static Ast *parse_string(P *p, bool raw_prefix) {
  const char *s = p->src->s;
  size_t b = p->pos;
  char q = s[p->pos++];
  OxBuf out;
  ox_buf_init(&out);
  bool closed = false;
  while (p->pos < p->lim) {
    char c = s[p->pos++];
    if (c == q) {
      closed = true;
      break;
    }
    if (c == '\\' && p->pos < p->lim && !raw_prefix) {
      char e = s[p->pos++];
      switch (e) {
      case 'n': ox_buf_putc(&out, '\n'); break;
      case 't': ox_buf_putc(&out, '\t'); break;
      case 'r': ox_buf_putc(&out, '\r'); break;
      case '0': ox_buf_putc(&out, '\0'); break;
      case '\\': ox_buf_putc(&out, '\\'); break;
      case '\'': ox_buf_putc(&out, '\''); break;
      case '"': ox_buf_putc(&out, '"'); break;
      case 'x': {
        int v = 0, k = 0;
        while (k < 2 && p->pos < p->lim) {
          char h = s[p->pos];
          int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                  : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
          if (d < 0) break;
          v = v * 16 + d;
          p->pos++;
          k++;
        }
        ox_buf_putc(&out, (char)v);
        break;
      }
      default:
        ox_buf_putc(&out, '\\');
        ox_buf_putc(&out, e);
        break;
      }
      continue;
    }
    ox_buf_putc(&out, c);
  }
  if (!closed) {
    ox_buf_free(&out);
    perr(p, b, "unterminated string literal");
    return NULL;
  }
  Ast *a = mk(p, A_STR, b);
  a->slen = out.len;
  a->s = ox_arena_strndup(&p->scratch, out.data ? out.data : "", out.len);
  a->end = p->pos;
  ox_buf_free(&out);
  return a;
}

static Ast *parse_number(P *p) {
  const char *s = p->src->s;
  size_t b = p->pos, e = b;
  bool isfloat = false;
  if (e + 1 < p->lim && s[e] == '0' && (s[e + 1] == 'x' || s[e + 1] == 'X' || s[e + 1] == 'o' ||
                                         s[e + 1] == 'O' || s[e + 1] == 'b' || s[e + 1] == 'B')) {
    e += 2;
    while (e < p->lim && (is_id((unsigned char)s[e]))) e++;
  } else {
    while (e < p->lim && (is_dig((unsigned char)s[e]) || s[e] == '_')) e++;
    if (e < p->lim && s[e] == '.') {
      isfloat = true;
      e++;
      while (e < p->lim && (is_dig((unsigned char)s[e]) || s[e] == '_')) e++;
    }
    if (e < p->lim && (s[e] == 'e' || s[e] == 'E')) {
      size_t f = e + 1;
      if (f < p->lim && (s[f] == '+' || s[f] == '-')) f++;
      if (f < p->lim && is_dig((unsigned char)s[f])) {
        isfloat = true;
        e = f;
        while (e < p->lim && is_dig((unsigned char)s[e])) e++;
      }
    }
    if (e < p->lim && (s[e] == 'j' || s[e] == 'J')) {
      e++;
      p->pos = e;
      Ast *a = mk(p, A_RAWNUM, b); /* complex literal: kept as text */
      a->end = e;
      return a;
    }
  }
  if (e < p->lim && is_id((unsigned char)s[e])) {
    perr(p, b, "malformed number");
    return NULL;
  }
  p->pos = e;
  char buf[80];
  size_t n = 0;
  for (size_t i = b; i < e && n + 1 < sizeof buf; i++)
    if (s[i] != '_') buf[n++] = s[i];
  buf[n] = 0;
  Ast *a;
  if (e - b >= sizeof buf - 1) {
    a = mk(p, A_RAWNUM, b);
  } else if (isfloat) {
    a = mk(p, A_FLOAT, b);
    a->f = strtod(buf, NULL);
  } else {
    char *endp;
    errno = 0;
    long long v = strtoll(buf, &endp, 0);
    if (errno || *endp) {
      a = mk(p, A_RAWNUM, b); /* beyond int64 or odd base: kept as text */
    } else {
      a = mk(p, A_INT, b);
      a->i = v;
    }
  }
  a->end = e;
  return a;
}

/* items until close; trailing comma allowed. Sets *had_comma. */
static bool parse_items(P *p, char close, uint32_t base, bool *had_comma) {
  *had_comma = false;
  while (!p->perr) {
    if (accept(p, close)) return true;
    Ast *it = parse_expr(p);
    if (!it) return false;
    astk_push(p, it);
    if (accept(p, ',')) {
      *had_comma = true;
      continue;
    }
    if (accept(p, close)) return true;
    char msg[64];
    snprintf(msg, sizeof msg, "expected ',' or '%c'", close);
    perr(p, p->pos, msg);
    return false;
  }
  (void)base;
  return false;
}

static Ast *parse_atom(P *p) {
  int c = peekc(p);
  size_t b = p->pos;
  const char *s = p->src->s;
  if (c < 0) {
    perr(p, b, "expected an expression");
    return NULL;
  }
  if (c == '(' || c == '[') {
    p->pos++;
    char close = c == '(' ? ')' : ']';
    uint32_t base = p->nastk;
    bool comma;
    if (!parse_items(p, close, base, &comma)) {
      p->nastk = base;
      return NULL;
    }
    uint32_t n = p->nastk - base;
    if (c == '(' && n == 1 && !comma) { /* parenthesised expression */
      Ast *inner = p->astk[base];
      p->nastk = base;
      return inner;
    }
    Ast *a = mk(p, c == '(' ? A_TUPLE : A_LIST, b);
    a->n = n;
    a->kids = astk_take(p, base);
    a->end = p->pos;
    return a;
  }
  if (c == '{') {
    p->pos++;
    uint32_t base = p->nastk;
    while (!p->perr) {
      if (accept(p, '}')) break;
      Ast *k = parse_expr(p);
      if (!k) break;
      if (!expect(p, ':', "':' in a dict")) break;
      Ast *v = parse_expr(p);
      if (!v) break;
      astk_push(p, k);
      astk_push(p, v);
      if (accept(p, ',')) continue;
      if (!expect(p, '}', "',' or '}'")) break;
      break;
    }
    if (p->perr) {
      p->nastk = base;
      return NULL;
    }
    uint32_t n = (p->nastk - base) / 2;
    Ast *a = mk(p, A_DICT, b);
    a->n = n;
    a->kids = ox_arena_alloc(&p->scratch, (n ? n : 1) * sizeof(Ast *));
    a->keys = ox_arena_alloc(&p->scratch, (n ? n : 1) * sizeof(Ast *));
    for (uint32_t i = 0; i < n; i++) {
      a->keys[i] = p->astk[base + 2 * i];
      a->kids[i] = p->astk[base + 2 * i + 1];
    }
    p->nastk = base;
    a->end = p->pos;
    return a;
  }
  if (c == '\'' || c == '"') {
    Ast *a = parse_string(p, false);
    /* adjacent literals concatenate */
    while (a && (peekc(p) == '\'' || peekc(p) == '"')) {
      Ast *b2 = parse_string(p, false);
      if (!b2) return NULL;
      char *cat = ox_arena_alloc(&p->scratch, a->slen + b2->slen + 1);
      memcpy(cat, a->s, a->slen);
      memcpy(cat + a->slen, b2->s, b2->slen);
      a->s = cat;
      a->slen += b2->slen;
      a->end = b2->end;
    }
    return a;
  }
  if (c == '.' && p->pos + 2 < p->lim && s[p->pos + 1] == '.' && s[p->pos + 2] == '.') {
    p->pos += 3;
    Ast *a = mk(p, A_ELLIPSIS, b);
    a->end = p->pos;
    return a;
  }
  if (is_dig((unsigned char)c) || (c == '.' && is_dig((unsigned char)peekc2(p)))) return parse_number(p);
  if (is_id0((unsigned char)c)) {
    const char *id;
    size_t n = read_ident(p, &id);
    /* string prefixes r'..', b'..', u'..', f'..' */
    if (n <= 2 && p->pos < p->lim && (s[p->pos] == '\'' || s[p->pos] == '"')) {
      bool ok = true, raw = false;
      for (size_t i = 0; i < n; i++) {
        char ch = (char)(id[i] | 0x20);
        if (ch == 'r') raw = true;
        else if (ch != 'b' && ch != 'u' && ch != 'f') ok = false;
      }
      if (ok) return parse_string(p, raw);
    }
    int k = span_eq(id, n, "None") ? A_NONE : span_eq(id, n, "True") ? A_TRUE
            : span_eq(id, n, "False") ? A_FALSE : span_eq(id, n, "Ellipsis") ? A_ELLIPSIS : -1;
    if (k >= 0) {
      Ast *a = mk(p, (AKind)k, b);
      a->end = p->pos;
      return a;
    }
    if (is_keyword(id, n)) {
      perr(p, b, "unsupported Python syntax (keyword in an expression)");
      return NULL;
    }
    Ast *a = mk(p, A_NAME, b);
    a->s = id;
    a->slen = n;
    a->end = p->pos;
    return a;
  }
  perr(p, b, "unexpected character in an expression");
  return NULL;
}

/* subscript: expr or slice (a:b:c), comma separated (a tuple when there is a comma) */
static Ast *parse_subscript_item(P *p) {
  size_t b = p->pos;
  Ast *parts[3] = {NULL, NULL, NULL};
  int k = 0;
  int c = peekc(p);
  if (c != ':') {
    parts[0] = parse_expr(p);
    if (!parts[0]) return NULL;
    if (peekc(p) != ':') return parts[0];
  }
  while (k < 2 && accept(p, ':')) {
    k++;
    c = peekc(p);
    if (c != ':' && c != ']' && c != ',') {
      parts[k] = parse_expr(p);
      if (!parts[k]) return NULL;
    }
  }
  Ast *a = mk(p, A_SLICE, b);
  a->n = 3;
  a->kids = ox_arena_alloc(&p->scratch, 3 * sizeof(Ast *));
  for (int i = 0; i < 3; i++) a->kids[i] = parts[i];
  a->end = p->pos;
  return a;
}

static Ast *parse_trailers(P *p, Ast *a) {
  for (;;) {
    int c = peekc(p);
    if (c == '.' && !(peekc2(p) == '.')) {
      size_t b = p->pos;
      p->pos++;
      const char *id;
      size_t n = read_ident(p, &id);
      if (!n) {
        perr(p, p->pos, "expected an attribute name after '.'");
        return NULL;
      }
      Ast *t = mk(p, A_ATTR, a->off);
      (void)b;
      t->a = a;
      t->s = id;
      t->slen = n;
      t->end = p->pos;
      a = t;
    } else if (c == '(') {
      p->pos++;
      uint32_t base = p->nastk;
      uint32_t npos = 0;
      bool saw_kw = false;
      Ast **kwn = NULL;
      uint32_t nkw = 0, capkw = 0;
      while (!p->perr) {
        if (accept(p, ')')) break;
        if (peekc(p) == '*') {
          perr(p, p->pos, "argument unpacking (*args) is not supported");
          break;
        }
        /* keyword argument: NAME '=' (not '==') */
        size_t save = p->pos;
        const char *id;
        size_t n = read_ident(p, &id);
        Ast *kname = NULL;
        if (n && peekc(p) == '=' && peekc2(p) != '=') {
          p->pos++;
          kname = mk(p, A_NAME, save);
          kname->s = id;
          kname->slen = n;
        } else {
          p->pos = save;
        }
        Ast *v = parse_expr(p);
        if (!v) break;
        if (kname) {
          saw_kw = true;
          if (nkw == capkw) {
            capkw = capkw ? capkw * 2 : 8;
            Ast **nk = ox_arena_alloc(&p->scratch, capkw * sizeof *nk);
            if (nkw) memcpy(nk, kwn, nkw * sizeof *nk);
            kwn = nk;
          }
          kwn[nkw++] = kname;
        } else if (saw_kw) {
          perr(p, v->off, "positional argument after a keyword argument");
          break;
        } else {
          npos++;
        }
        astk_push(p, v);
        if (accept(p, ',')) continue;
        if (!expect(p, ')', "',' or ')' in a call")) break;
        break;
      }
      if (p->perr) {
        p->nastk = base;
        return NULL;
      }
      Ast *t = mk(p, A_CALL, a->off);
      t->a = a;
      t->n = p->nastk - base;
      t->npos = npos;
      t->kids = astk_take(p, base);
      t->keys = nkw ? ox_arena_alloc(&p->scratch, t->n * sizeof(Ast *)) : NULL;
      for (uint32_t i = 0; i < nkw; i++) t->keys[npos + i] = kwn[i];
      t->end = p->pos;
      a = t;
    } else if (c == '[') {
      p->pos++;
      uint32_t base = p->nastk;
      size_t ib = p->pos;
      bool comma = false;
      while (!p->perr) {
        if (peekc(p) == ']' && p->nastk > base) break;
        Ast *it = parse_subscript_item(p);
        if (!it) break;
        astk_push(p, it);
        if (accept(p, ',')) {
          comma = true;
          if (peekc(p) == ']') break;
          continue;
        }
        break;
      }
      if (!p->perr) expect(p, ']', "']'");
      if (p->perr) {
        p->nastk = base;
        return NULL;
      }
      Ast *idx;
      if (p->nastk - base == 1 && !comma) {
        idx = p->astk[base];
        p->nastk = base;
      } else {
        idx = mk(p, A_TUPLE, ib);
        idx->n = p->nastk - base;
        idx->kids = astk_take(p, base);
        idx->end = p->pos;
      }
      Ast *t = mk(p, A_SUBSCRIPT, a->off);
      t->a = a;
      t->b = idx;
      t->end = p->pos;
      a = t;
    } else {
      return a;
    }
  }
}

static bool enter(P *p, size_t off) {
  if (++p->depth > p->max_depth) {
    if (!p->perr) {
      char msg[96];
      snprintf(msg, sizeof msg, "expression nested deeper than %u levels", p->max_depth);
      perr(p, off, msg);
      p->pfatal = true;
    }
    return false;
  }
  return true;
}

static Ast *parse_unary(P *p);

static Ast *parse_power(P *p) {
  Ast *a = parse_atom(p);
  if (!a) return NULL;
  a = parse_trailers(p, a);
  if (!a) return NULL;
  if (peekc(p) == '*' && peekc2(p) == '*') {
    p->pos += 2;
    Ast *r = parse_unary(p); /* right associative, binds tighter than a unary on its left */
    if (!r) return NULL;
    Ast *t = mk(p, A_BINOP, a->off);
    t->op = B_POW;
    t->a = a;
    t->b = r;
    t->end = r->end;
    return t;
  }
  return a;
}

static Ast *parse_unary(P *p) {
  int c = peekc(p);
  size_t b = p->pos;
  if (c == '-' || c == '+' || c == '~') {
    if (!enter(p, b)) return NULL;
    p->pos++;
    Ast *x = parse_unary(p);
    p->depth--;
    if (!x) return NULL;
    Ast *t = mk(p, A_UNOP, b);
    t->op = c == '-' ? U_NEG : c == '+' ? U_POS : U_INVERT;
    t->a = x;
    t->end = x->end;
    return t;
  }
  return parse_power(p);
}

/* binary operator at pos: returns op and its length, or -1 */
static int peek_binop(P *p, int level, size_t *oplen) {
  int c = peekc(p), d = peekc2(p);
  *oplen = 1;
  switch (level) {
  case 0: /* comparisons */
    if (c == '=' && d == '=') { *oplen = 2; return B_EQ; }
    if (c == '!' && d == '=') { *oplen = 2; return B_NE; }
    if (c == '<' && d == '=') { *oplen = 2; return B_LE; }
    if (c == '>' && d == '=') { *oplen = 2; return B_GE; }
    if (c == '<' && d != '<') return B_LT;
    if (c == '>' && d != '>') return B_GT;
    return -1;
  case 1: return c == '|' && d != '=' ? B_OR : -1;
  case 2: return c == '^' && d != '=' ? B_XOR : -1;
  case 3: return c == '&' && d != '=' ? B_AND : -1;
  case 4:
    if (c == '<' && d == '<') { *oplen = 2; return B_LSHIFT; }
    if (c == '>' && d == '>') { *oplen = 2; return B_RSHIFT; }
    return -1;
  case 5:
    if (c == '+' && d != '=') return B_ADD;
    if (c == '-' && d != '=' && d != '>') return B_SUB;
    return -1;
  case 6:
    if (c == '*' && d != '*' && d != '=') return B_MUL;
    if (c == '@' && d != '=') return B_MATMUL;
    if (c == '/' && d == '/') { *oplen = 2; return B_FLOORDIV; }
    if (c == '/' && d != '=') return B_TRUEDIV;
    if (c == '%' && d != '=') return B_MOD;
    return -1;
  default: return -1;
  }
}

static Ast *parse_level(P *p, int level) {
  if (level > 6) return parse_unary(p);
  Ast *a = parse_level(p, level + 1);
  if (!a) return NULL;
  for (;;) {
    size_t ol;
    int op = peek_binop(p, level, &ol);
    if (op < 0) return a;
    p->pos += ol;
    Ast *b = parse_level(p, level + 1);
    if (!b) return NULL;
    Ast *t = mk(p, A_BINOP, a->off);
    t->op = (uint8_t)op;
    t->a = a;
    t->b = b;
    t->end = b->end;
    a = t;
    if (level == 0) { /* chained comparisons (a < b < c) are not FX */
      size_t ol2;
      if (peek_binop(p, 0, &ol2) >= 0) {
        perr(p, p->pos, "chained comparisons are not supported");
        return NULL;
      }
      return a;
    }
  }
}

static Ast *parse_expr(P *p) {
  size_t b = p->pos;
  if (!enter(p, b)) return NULL;
  Ast *a;
  const char *id;
  size_t save = p->pos;
  size_t n = read_ident(p, &id);
  if (n == 3 && memcmp(id, "not", 3) == 0) {
    Ast *x = parse_expr(p);
    a = NULL;
    if (x) {
      a = mk(p, A_UNOP, save);
      a->op = U_NOT;
      a->a = x;
      a->end = x->end;
    }
  } else {
    p->pos = save;
    a = parse_level(p, 0);
  }
  p->depth--;
  return a;
}

/* ------------------------------------------------------------------ annotations */

/* Parses "[d0, d1, ...]" at *s; fills dims (malloc'ed growable) and returns count, -1 on error. */
static int parse_dims(OxGraph *g, const char **ps, const char *e, OxDim **dims, int *cap) {
  const char *s = *ps;
  if (s >= e || *s != '[') return -1;
  s++;
  int n = 0;
  while (s < e && is_sp((unsigned char)*s)) s++;
  if (s < e && *s == ']') {
    *ps = s + 1;
    return 0;
  }
  for (;;) {
    while (s < e && is_sp((unsigned char)*s)) s++;
    const char *b = s;
    int depth = 0;
    while (s < e && (depth > 0 || (*s != ',' && *s != ']'))) {
      if (*s == '(') depth++;
      else if (*s == ')') depth--;
      else if (*s == '[') return -1;
      s++;
    }
    if (s >= e) return -1;
    const char *t = s;
    while (t > b && is_sp((unsigned char)t[-1])) t--;
    if (t == b) return -1;
    if (n == *cap) {
      *cap = *cap ? *cap * 2 : 8;
      *dims = ox_xrealloc(*dims, (size_t)*cap * sizeof **dims);
    }
    OxDim d = {0, NULL};
    const char *q = b;
    if (q < t && *q == '-') q++;
    bool num = q < t;
    for (const char *r = q; r < t; r++)
      if (!is_dig((unsigned char)*r)) num = false;
    if (num && t - b < 19) {
      d.v = strtoll(b, NULL, 10);
    } else {
      d.sym = ox_graph_intern_n(g, b, (size_t)(t - b));
    }
    (*dims)[n++] = d;
    if (*s == ']') {
      *ps = s + 1;
      return n;
    }
    s++; /* ',' */
  }
}

/* Annotation text (without quotes) -> meta of node id. Returns false if it is not one we
 * read (the text is still kept as type_ann by the caller). Grammar:
 *   Sym(EXPR) | DTYPE "[" dims "]" ["[" strides "]"] [DEVICE] | Wrapper(ANN, ...) */
static bool apply_annotation(OxGraph *g, OxNodeId id, const char *s, size_t n, int depth, char *why, size_t whycap) {
  const char *e = s + n;
  while (s < e && is_sp((unsigned char)*s)) s++;
  while (e > s && is_sp((unsigned char)e[-1])) e--;
  OxMeta m;
  memset(&m, 0, sizeof m);
  if (e - s > 5 && memcmp(s, "Sym(", 4) == 0 && e[-1] == ')') {
    m.kind = OX_META_SYMINT;
    m.sym = ox_graph_intern_n(g, s + 4, (size_t)(e - s - 5));
    ox_graph_set_meta(g, id, &m);
    return true;
  }
  const char *q = s;
  while (q < e && ((*q >= 'a' && *q <= 'z') || is_dig((unsigned char)*q))) q++;
  if (q == s || q >= e || *q != '[') {
    /* a tensor subclass wrapper: ClassName(f32[...], ...) -> read the inner tensor */
    const char *r = s;
    while (r < e && is_id((unsigned char)*r)) r++;
    if (depth < 4 && r > s && r < e && *r == '(' && e[-1] == ')') {
      const char *in = r + 1, *ie = in;
      int d = 0;
      while (ie < e - 1 && (d > 0 || *ie != ',')) {
        if (*ie == '[' || *ie == '(') d++;
        else if (*ie == ']' || *ie == ')') d--;
        ie++;
      }
      return apply_annotation(g, id, in, (size_t)(ie - in), depth + 1, why, whycap);
    }
    return false;
  }
  OxDType dt = ox_dtype_from_abbr(s, (size_t)(q - s));
  OxDim *shape = NULL, *stride = NULL;
  int cs = 0, ct = 0;
  int rank = parse_dims(g, &q, e, &shape, &cs);
  bool ok = rank >= 0;
  int srank = -1;
  if (ok && q < e && *q == '[') {
    srank = parse_dims(g, &q, e, &stride, &ct);
    if (srank < 0) ok = false;
  }
  if (ok) {
    while (q < e && is_sp((unsigned char)*q)) q++;
    OxTensorMeta t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    t.shape = shape;
    t.has_stride = srank >= 0 && srank == rank;
    t.stride = t.has_stride ? stride : NULL;
    t.device = q < e ? ox_graph_intern_n(g, q, (size_t)(e - q)) : NULL;
    if (ox_meta_absurd(&t, why, whycap)) {
      ok = false; /* sizes no tensor can have: the caller warns, the node keeps no meta */
    } else {
      m.kind = OX_META_TENSOR;
      m.n = 1;
      m.t = &t;
      ox_graph_set_meta(g, id, &m); /* deep copy: shape/stride here are scratch */
    }
  }
  free(shape);
  free(stride);
  return ok;
}

/* ------------------------------------------------------------------ frames and nodes */

static Frame *top(P *p) { return p->nframes ? &p->frames[p->nframes - 1] : NULL; }

static const char *current_trace(Frame *f) { return f->trace; }

static OxNodeId add_node(P *p, Frame *f, OxOp op, const char *name, const char *target, OxValue args,
                         OxValue kwargs, uint32_t line) {
  (void)p;
  OxNodeId id = ox_graph_add_node(f->g, op, name, target, args, kwargs);
  OxNode *n = ox_graph_node(f->g, id);
  n->src_line = line;
  if (op != OX_OP_PLACEHOLDER && op != OX_OP_OUTPUT) n->stack_trace = current_trace(f);
  f->trace_open = false;
  return id;
}

static OxNodeId local_get(Frame *f, const char *s, size_t n) {
  const char *w = ox_strtab_lookup(f->g->strings, s, n);
  return w ? ox_namemap_get(f->locals, w) : 0;
}

static void local_set(Frame *f, const char *s, size_t n, OxNodeId id) {
  ox_namemap_set(f->locals, ox_graph_intern_n(f->g, s, n), id);
}

static OxNodeId add_placeholder(P *p, Frame *f, const char *name, size_t n, const char *target,
                                uint32_t line, bool external) {
  char *nm = ox_arena_strndup(&p->scratch, name, n);
  OxNodeId id;
  if (external) {
    /* keep inputs first, as FX does: after the last placeholder */
    if (f->last_ph)
      id = ox_graph_insert_after(f->g, f->last_ph, OX_OP_PLACEHOLDER, nm, target ? target : nm,
                                 ox_value_none(), ox_value_none());
    else
      id = ox_graph_insert_before(f->g, f->g->head, OX_OP_PLACEHOLDER, nm, target ? target : nm,
                                  ox_value_none(), ox_value_none());
    ox_graph_node(f->g, id)->flags |= OX_NODE_EXTERNAL;
  } else {
    id = ox_graph_add_node(f->g, OX_OP_PLACEHOLDER, nm, target ? target : nm, ox_value_none(),
                           ox_value_none());
  }
  ox_graph_node(f->g, id)->src_line = line;
  f->last_ph = id;
  local_set(f, name, n, id);
  return id;
}

static void frame_close(P *p) {
  Frame *f = top(p);
  if (f->def_indent < 0 && !f->bare && f->g->n_subgraphs == 0) {
    /* not a graph: drop it. It is the last graph of its parent (or of the doc), since
     * graphs are attached when their class opens and nested ones close first. */
    uint32_t li = f->g->src_line - 1;
    diag_raw(p, OX_SEV_WARNING, li, p->lines[li].cs, "class %s has no forward method; ignored", f->cls);
    Frame *parent = p->nframes > 1 ? &p->frames[p->nframes - 2] : NULL;
    if (parent) {
      assert(parent->g->n_subgraphs && parent->g->subgraphs[parent->g->n_subgraphs - 1] == f->g);
      parent->g->n_subgraphs--;
    } else {
      assert(p->doc->n_graphs && p->doc->graphs[p->doc->n_graphs - 1] == f->g);
      p->doc->n_graphs--;
    }
    ox_graph_free(f->g);
  } else if (f->def_indent < 0 && !f->bare) {
    uint32_t li = f->g->src_line - 1;
    diag_raw(p, OX_SEV_WARNING, li, p->lines[li].cs, "class %s has no forward method", f->cls);
  } else if (!f->has_output) {
    uint32_t li = f->g->src_line ? f->g->src_line - 1 : 0;
    diag_raw(p, OX_SEV_WARNING, li, p->lines[li].cs,
             "graph %s has no return statement (truncated dump?)", f->g->name);
  }
  ox_namemap_free(f->locals);
  ox_buf_free(&f->tracebuf);
  p->nframes--;
}

static Frame *frame_open(P *p, const char *cls, size_t clen, int indent, uint32_t li, bool bare) {
  if (p->nframes == p->capframes) {
    p->capframes = p->capframes ? p->capframes * 2 : 8;
    p->frames = ox_xrealloc(p->frames, p->capframes * sizeof *p->frames);
  }
  OxGraph *g = ox_graph_new();
  Frame *parent = top(p);
  Frame *f = &p->frames[p->nframes++];
  memset(f, 0, sizeof *f);
  f->g = g;
  f->class_indent = indent;
  f->def_indent = -1;
  f->skip_indent = -1;
  f->bare = bare;
  f->cls = ox_graph_intern_n(g, cls, clen);
  f->locals = ox_namemap_new();
  ox_buf_init(&f->tracebuf);
  g->src_line = li + 1;
  if (parent) {
    g->name = f->cls;
    g->sub_owner = f->cls;
    ox_graph_add_subgraph(parent->g, g);
  } else {
    g->name = p->pending_name ? ox_graph_intern(g, p->pending_name) : f->cls;
    free((void *)p->pending_name);
    p->pending_name = NULL;
    ox_doc_add_graph(p->doc, g);
  }
  return f;
}

/* ------------------------------------------------------------------ lowering to values */

static const char *const known_modules[] = {
  "torch", "operator", "_operator", "math", "builtins", "numpy", "np", "apex", "fbgemm",
  "torchvision", "torchaudio", "torchrec", "executorch", "triton", "einops", "functools",
  "typing", "collections", "random", "transformer_engine", "xformers", "flash_attn", "vllm",
  "sglang", "thunder", "torch_tensorrt", "fx_pytree", "pytree", "torch_npu", "habana_frameworks",
  "intel_extension_for_pytorch", "megatron", "deepspeed",
};

static const char *const builtin_funcs[] = {
  "getattr", "setattr", "hasattr", "len", "abs", "min", "max", "int", "float", "bool", "str",
  "round", "pow", "isinstance", "sum", "any", "all", "range", "tuple", "list", "dict", "divmod",
  "type", "iter", "next", "sorted", "reversed", "zip", "map", "enumerate", "print", "id", "hash",
};

static bool in_list(const char *s, size_t n, const char *const *list, size_t cnt) {
  for (size_t i = 0; i < cnt; i++)
    if (span_eq(s, n, list[i])) return true;
  return false;
}

/* The root name of an attribute chain, or NULL if the chain is not all names. depth = number of dots. */
static const Ast *attr_root(const Ast *a, uint32_t *dots) {
  uint32_t d = 0;
  while (a->kind == A_ATTR) {
    a = a->a;
    d++;
  }
  if (dots) *dots = d;
  return a->kind == A_NAME ? a : NULL;
}

static const char *span_text(P *p, const Ast *a) { /* scratch copy of a's source text */
  return ox_arena_strndup(&p->scratch, p->src->s + a->off, a->end - a->off);
}

/* "a.b.c" of a chain of names (without the first skip components) into scratch */
static const char *dotted(P *p, const Ast *a, uint32_t skip) {
  const Ast *r = attr_root(a, NULL);
  if (!r) return span_text(p, a);
  const char *s = p->src->s + r->off;
  size_t n = a->end - r->off;
  /* print_readable never puts spaces inside a dotted name; strip them if someone did */
  char *out = ox_arena_alloc(&p->scratch, n + 1);
  size_t o = 0;
  uint32_t comp = 0;
  for (size_t i = 0; i < n; i++) {
    if (is_sp((unsigned char)s[i])) continue;
    if (s[i] == '.') {
      comp++;
      if (comp <= skip) {
        o = 0;
        continue;
      }
    }
    if (comp >= skip) out[o++] = s[i];
  }
  out[o] = 0;
  return out;
}

static bool lower_node(P *p, Frame *f, const Ast *a, const char *name, uint32_t line, OxNodeId *out,
                       const char *ann);
/* self.a.b / getattr(self.a, "0").b -> "a.b" / "a.0.b": the module path FX prints for
 * call_module and get_attr targets (getattr() for path components that are not identifiers).
 * Iterative over the chain; gives up (false) past max_depth components. */
static bool self_path(P *p, const Ast *a, OxBuf *out) {
  const Ast *chain[64];
  uint32_t n = 0;
  const Ast **stack = chain;
  const Ast **heap = NULL;
  uint32_t cap = 64;
  bool ok = false;
  for (const Ast *x = a;;) {
    if (n >= p->max_depth) break;
    if (x->kind == A_NAME) {
      ok = span_eq(x->s, x->slen, "self");
      break;
    }
    if (n == cap) {
      cap *= 2;
      heap = ox_xrealloc(heap, cap * sizeof *heap);
      if (stack == chain) memcpy(heap, chain, sizeof chain);
      stack = heap;
    }
    if (x->kind == A_ATTR) {
      stack[n++] = x;
      x = x->a;
    } else if (x->kind == A_CALL && x->a->kind == A_NAME && span_eq(x->a->s, x->a->slen, "getattr") &&
               x->n == 2 && x->npos == 2 && x->kids[1]->kind == A_STR) {
      stack[n++] = x;
      x = x->kids[0];
    } else {
      break;
    }
  }
  if (ok && n > 0) {
    out->len = 0;
    for (uint32_t i = n; i-- > 0;) {
      const Ast *x = stack[i];
      if (i != n - 1) ox_buf_putc(out, '.');
      if (x->kind == A_ATTR) ox_buf_append(out, x->s, x->slen);
      else ox_buf_append(out, x->kids[1]->s, x->kids[1]->slen);
    }
    ox_buf_putc(out, 0);
    out->len--;
  }
  free(heap);
  return ok && n > 0;
}

static bool lower_value(P *p, Frame *f, const Ast *a, OxValue *out, uint32_t line);

static OxValue vstr(OxGraph *g, OxValueKind k, const char *s, size_t n) {
  return ox_graph_value_str(g, k, ox_graph_intern_n(g, s, n));
}

static bool value_has_node(const OxValue *v) {
  if (v->kind == OX_V_NODE) return true;
  if (v->kind == OX_V_LIST || v->kind == OX_V_TUPLE || v->kind == OX_V_DICT || v->kind == OX_V_SLICE)
    for (uint32_t i = 0; i < v->n; i++)
      if (value_has_node(&v->u.items[i])) return true;
  return false;
}

static bool resolve_name(P *p, Frame *f, const Ast *a, OxValue *out, uint32_t line) {
  OxNodeId id = local_get(f, a->s, a->slen);
  if (id) {
    *out = ox_value_node(id);
    return true;
  }
  if (span_eq(a->s, a->slen, "inf")) { *out = ox_value_float(INFINITY); return true; }
  if (span_eq(a->s, a->slen, "nan")) { *out = ox_value_float(NAN); return true; }
  if (is_symbol_name(a->s, a->slen)) {
    *out = vstr(f->g, OX_V_SYM, a->s, a->slen);
    return true;
  }
  if (span_eq(a->s, a->slen, "self")) {
    diag_src(p, OX_SEV_WARNING, a->off, "'self' used as a value");
    return false;
  }
  diag_src(p, OX_SEV_WARNING, a->off, "name '%.*s' is used but never defined; added as an external input",
           (int)(a->slen > 200 ? 200 : a->slen), a->s);
  id = add_placeholder(p, f, a->s, a->slen, NULL, line, true);
  *out = ox_value_node(id);
  return true;
}

/* Items are lowered straight into the graph arena (no staging copy): a 10 MB list stays
 * within a few times its size in memory. */
static bool lower_seq(P *p, Frame *f, const Ast *a, OxValueKind k, OxValue *out, uint32_t line) {
  OxValue v = ox_value_none();
  v.kind = (uint8_t)k;
  v.n = a->n;
  v.u.items = a->n ? ox_graph_alloc(f->g, a->n * sizeof(OxValue)) : NULL;
  for (uint32_t i = 0; i < a->n; i++) {
    if (!a->kids[i]) v.u.items[i] = ox_value_none();
    else if (!lower_value(p, f, a->kids[i], &v.u.items[i], line)) return false;
  }
  *out = v;
  return true;
}

/* device(type='cuda', index=0) / torch.device('cuda', 0) / torch.device('cuda:0') */
static bool lower_device(P *p, Frame *f, const Ast *a, OxValue *out) {
  const char *type = NULL;
  size_t tl = 0;
  int64_t index = -1;
  for (uint32_t i = 0; i < a->n; i++) {
    const Ast *v = a->kids[i];
    bool is_type = i < a->npos ? i == 0 : span_eq(a->keys[i]->s, a->keys[i]->slen, "type");
    bool is_index = i < a->npos ? i == 1 : span_eq(a->keys[i]->s, a->keys[i]->slen, "index");
    if (is_type && v->kind == A_STR) {
      type = v->s;
      tl = v->slen;
    } else if (is_index && v->kind == A_INT) {
      index = v->i;
    } else if (is_index && v->kind == A_NONE) {
      index = -1;
    } else {
      diag_src(p, OX_SEV_WARNING, v->off, "unexpected device() argument");
      return false;
    }
  }
  if (!type) {
    diag_src(p, OX_SEV_WARNING, a->off, "device() without a type");
    return false;
  }
  char buf[160];
  int k = index >= 0 ? snprintf(buf, sizeof buf, "%.*s:%lld", (int)(tl > 100 ? 100 : tl), type, (long long)index)
                     : snprintf(buf, sizeof buf, "%.*s", (int)(tl > 100 ? 100 : tl), type);
  *out = vstr(f->g, OX_V_DEVICE, buf, (size_t)k);
  return true;
}

/* Calls that print constants: device(...), slice(...), float('inf'). Returns 1 if handled,
 * 0 if not such a call, -1 on error. */
static int lower_const_call(P *p, Frame *f, const Ast *a, OxValue *out, uint32_t line) {
  const Ast *c = a->a;
  uint32_t dots;
  const Ast *r = attr_root(c, &dots);
  if (!r || local_get(f, r->s, r->slen)) return 0;
  const char *nm = dotted(p, c, 0);
  if (strcmp(nm, "device") == 0 || strcmp(nm, "torch.device") == 0)
    return lower_device(p, f, a, out) ? 1 : -1;
  if (strcmp(nm, "slice") == 0 && a->npos == a->n && a->n >= 1 && a->n <= 3) {
    OxValue it[3] = {ox_value_none(), ox_value_none(), ox_value_none()};
    if (a->n == 1) {
      if (!lower_value(p, f, a->kids[0], &it[1], line)) return -1;
    } else {
      for (uint32_t i = 0; i < a->n; i++)
        if (!lower_value(p, f, a->kids[i], &it[i], line)) return -1;
    }
    *out = ox_graph_value_seq(f->g, OX_V_SLICE, it, 3);
    return 1;
  }
  if (strcmp(nm, "float") == 0 && a->n == 1 && a->kids[0]->kind == A_STR) {
    const Ast *s = a->kids[0];
    char buf[32];
    size_t k = s->slen < sizeof buf - 1 ? s->slen : sizeof buf - 1;
    memcpy(buf, s->s, k);
    buf[k] = 0;
    char *end;
    double v = strtod(buf, &end);
    if (*end || !k) {
      diag_src(p, OX_SEV_WARNING, s->off, "float() of a string that is not a number");
      return -1;
    }
    *out = ox_value_float(v);
    return 1;
  }
  return 0;
}

static bool lower_value_in(P *p, Frame *f, const Ast *a, OxValue *out, uint32_t line);

/* Lowering recurses along the syntax tree; attribute/call/subscript chains are built
 * iteratively by the parser, so the bound is checked here as well. */
static bool lower_value(P *p, Frame *f, const Ast *a, OxValue *out, uint32_t line) {
  if (p->ldepth >= p->max_depth) {
    if (!p->lfatal) diag_src(p, OX_SEV_ERROR, a->off, "expression nested deeper than %u levels", p->max_depth);
    p->lfatal = true;
    return false;
  }
  p->ldepth++;
  bool ok = lower_value_in(p, f, a, out, line);
  p->ldepth--;
  return ok;
}

static bool lower_value_in(P *p, Frame *f, const Ast *a, OxValue *out, uint32_t line) {
  OxGraph *g = f->g;
  switch (a->kind) {
  case A_INT: *out = ox_value_int(a->i); return true;
  case A_FLOAT: *out = ox_value_float(a->f); return true;
  case A_RAWNUM: *out = vstr(g, OX_V_RAW, p->src->s + a->off, a->end - a->off); return true;
  case A_STR: *out = vstr(g, OX_V_STR, a->s, a->slen); return true;
  case A_NONE: *out = ox_value_none(); return true;
  case A_TRUE: *out = ox_value_bool(true); return true;
  case A_FALSE: *out = ox_value_bool(false); return true;
  case A_ELLIPSIS: *out = ox_value_none(); out->kind = OX_V_ELLIPSIS; return true;
  case A_TUPLE: return lower_seq(p, f, a, OX_V_TUPLE, out, line);
  case A_LIST: return lower_seq(p, f, a, OX_V_LIST, out, line);
  case A_SLICE: return lower_seq(p, f, a, OX_V_SLICE, out, line);
  case A_DICT: {
    uint32_t base = p->nvstk;
    for (uint32_t i = 0; i < a->n; i++) {
      const Ast *k = a->keys[i];
      const char *key;
      if (k->kind == A_STR) key = ox_graph_intern_n(g, k->s, k->slen);
      else if (k->kind == A_NAME) key = ox_graph_intern_n(g, k->s, k->slen);
      else key = ox_graph_intern_n(g, p->src->s + k->off, k->end - k->off);
      OxValue v;
      if (!lower_value(p, f, a->kids[i], &v, line)) {
        p->nvstk = base;
        return false;
      }
      vstk_push(p, v, key);
    }
    *out = ox_graph_value_dict(g, kstk_from(p, base), vstk_from(p, base), a->n);
    p->nvstk = base;
    return true;
  }
  case A_NAME: return resolve_name(p, f, a, out, line);
  case A_ATTR: {
    uint32_t dots;
    const Ast *r = attr_root(a, &dots);
    if (r && !local_get(f, r->s, r->slen) && !span_eq(r->s, r->slen, "self") &&
        (dots >= 2 || in_list(r->s, r->slen, known_modules, sizeof known_modules / sizeof known_modules[0]))) {
      /* a qualified constant: torch.float32, torch.contiguous_format, an op overload object */
      const char *t = dotted(p, a, 0);
      size_t n = strlen(t);
      if (span_starts(t, n, "torch.")) {
        OxDType dt = ox_dtype_from_torch_name(t, n);
        if (dt != OX_DT_UNKNOWN) {
          *out = ox_value_dtype(dt);
          return true;
        }
        *out = vstr(g, OX_V_ENUM, t, n);
        return true;
      }
      *out = vstr(g, OX_V_RAW, t, n);
      return true;
    }
    break; /* x.attr / self.attr inline: an (unnamed) node */
  }
  case A_CALL: {
    int k = lower_const_call(p, f, a, out, line);
    if (k) return k > 0;
    break;
  }
  case A_UNOP:
  case A_BINOP: {
    /* literal arithmetic in arguments (-1, -inf, 4096*s0) stays a constant or symbol */
    OxValue x, y = ox_value_none();
    if (!lower_value(p, f, a->a, &x, line)) return false;
    if (a->kind == A_BINOP && !lower_value(p, f, a->b, &y, line)) return false;
    if (!value_has_node(&x) && !value_has_node(&y)) {
      if (a->kind == A_UNOP && a->op == U_NEG && x.kind == OX_V_INT && x.u.i != INT64_MIN) {
        *out = ox_value_int(-x.u.i);
        return true;
      }
      if (a->kind == A_UNOP && a->op == U_NEG && x.kind == OX_V_FLOAT) {
        *out = ox_value_float(-x.u.f);
        return true;
      }
      if (a->kind == A_UNOP && a->op == U_POS && (x.kind == OX_V_INT || x.kind == OX_V_FLOAT)) {
        *out = x;
        return true;
      }
      bool sym = x.kind == OX_V_SYM || y.kind == OX_V_SYM;
      *out = vstr(g, sym ? OX_V_SYM : OX_V_RAW, p->src->s + a->off, a->end - a->off);
      return true;
    }
    /* an operator on graph values nested in an argument: its own node, built from the
     * operands already lowered (not lowered twice) */
    uint32_t base = p->nvstk;
    vstk_push(p, x, NULL);
    if (a->kind == A_BINOP) vstk_push(p, y, NULL);
    OxValue args = ox_graph_value_seq(g, OX_V_TUPLE, vstk_from(p, base), p->nvstk - base);
    p->nvstk = base;
    OxNodeId id = add_node(p, f, OX_OP_CALL_FUNCTION, NULL, op_target[a->op], args, ox_value_none(), line);
    *out = ox_value_node(id);
    return true;
  }
  default: break;
  }
  OxNodeId id;
  if (!lower_node(p, f, a, NULL, line, &id, NULL)) return false;
  *out = ox_value_node(id);
  return true;
}

/* call args -> (args tuple, kwargs dict); first = receiver prepended for call_method */
static bool lower_call_args(P *p, Frame *f, const Ast *a, const OxValue *first, OxValue *args,
                            OxValue *kwargs, uint32_t line) {
  uint32_t base = p->nvstk;
  if (first) vstk_push(p, *first, NULL);
  for (uint32_t i = 0; i < a->npos; i++) {
    OxValue v;
    if (!lower_value(p, f, a->kids[i], &v, line)) {
      p->nvstk = base;
      return false;
    }
    vstk_push(p, v, NULL);
  }
  *args = ox_graph_value_seq(f->g, OX_V_TUPLE, vstk_from(p, base), p->nvstk - base);
  p->nvstk = base;
  for (uint32_t i = a->npos; i < a->n; i++) {
    OxValue v;
    if (!lower_value(p, f, a->kids[i], &v, line)) {
      p->nvstk = base;
      return false;
    }
    vstk_push(p, v, ox_graph_intern_n(f->g, a->keys[i]->s, a->keys[i]->slen));
  }
  *kwargs = ox_graph_value_dict(f->g, kstk_from(p, base), vstk_from(p, base), p->nvstk - base);
  p->nvstk = base;
  return true;
}

/* Expression that computes a node -> that node (name NULL: derived from the target). */
static bool lower_node(P *p, Frame *f, const Ast *a, const char *name, uint32_t line, OxNodeId *out,
                       const char *ann) {
  OxGraph *g = f->g;
  OxOp op;
  const char *target;
  OxValue args = ox_value_none(), kwargs = ox_value_none();
  (void)ann;
  switch (a->kind) {
  case A_CALL: {
    const Ast *c = a->a;
    if (!local_get(f, "self", 4) && self_path(p, a, &p->path)) { /* getattr(self.layers, "0") */
      op = OX_OP_GET_ATTR;
      target = ox_arena_strndup(&p->scratch, p->path.data, p->path.len);
      break;
    }
    OxValue tmp;
    int k = lower_const_call(p, f, a, &tmp, line);
    if (k < 0) return false;
    if (k > 0) {
      diag_src(p, OX_SEV_WARNING, a->off, "statement computes a constant, not a graph value; skipped");
      return false;
    }
    uint32_t dots;
    const Ast *r = attr_root(c, &dots);
    if (!local_get(f, "self", 4) && self_path(p, c, &p->path)) {
      op = OX_OP_CALL_MODULE;
      target = ox_arena_strndup(&p->scratch, p->path.data, p->path.len);
      if (!lower_call_args(p, f, a, NULL, &args, &kwargs, line)) return false;
      break;
    }
    if (c->kind == A_NAME) {
      if (local_get(f, c->s, c->slen)) {
        diag_src(p, OX_SEV_WARNING, c->off, "calling the graph value '%.*s' is not an FX operation",
                 (int)(c->slen > 200 ? 200 : c->slen), c->s);
        return false;
      }
      op = OX_OP_CALL_FUNCTION;
      if (in_list(c->s, c->slen, builtin_funcs, sizeof builtin_funcs / sizeof builtin_funcs[0])) {
        char buf[64];
        snprintf(buf, sizeof buf, "builtins.%.*s", (int)c->slen, c->s);
        target = ox_arena_strndup(&p->scratch, buf, strlen(buf));
      } else {
        target = ox_arena_strndup(&p->scratch, c->s, c->slen);
      }
      if (!lower_call_args(p, f, a, NULL, &args, &kwargs, line)) return false;
      break;
    }
    if (c->kind == A_ATTR) {
      bool function = r && !local_get(f, r->s, r->slen) &&
                      (dots >= 2 || in_list(r->s, r->slen, known_modules, sizeof known_modules / sizeof known_modules[0]));
      if (function) {
        op = OX_OP_CALL_FUNCTION;
        target = dotted(p, c, 0);
        if (!lower_call_args(p, f, a, NULL, &args, &kwargs, line)) return false;
      } else {
        /* x.method(...): the receiver is a graph value */
        OxValue recv;
        if (!lower_value(p, f, c->a, &recv, line)) return false;
        op = OX_OP_CALL_METHOD;
        target = ox_arena_strndup(&p->scratch, c->s, c->slen);
        if (!lower_call_args(p, f, a, &recv, &args, &kwargs, line)) return false;
      }
      break;
    }
    diag_src(p, OX_SEV_WARNING, c->off, "unsupported callee expression");
    return false;
  }
  case A_SUBSCRIPT: {
    OxValue it[2];
    if (!lower_value(p, f, a->a, &it[0], line)) return false;
    if (!lower_value(p, f, a->b, &it[1], line)) return false;
    op = OX_OP_CALL_FUNCTION;
    target = "operator.getitem";
    args = ox_graph_value_seq(g, OX_V_TUPLE, it, 2);
    break;
  }
  case A_BINOP:
  case A_UNOP: {
    OxValue it[2];
    uint32_t n = a->kind == A_BINOP ? 2 : 1;
    if (!lower_value(p, f, a->a, &it[0], line)) return false;
    if (n == 2 && !lower_value(p, f, a->b, &it[1], line)) return false;
    op = OX_OP_CALL_FUNCTION;
    target = op_target[a->op];
    args = ox_graph_value_seq(g, OX_V_TUPLE, it, n);
    break;
  }
  case A_ATTR: {
    uint32_t dots;
    const Ast *r = attr_root(a, &dots);
    if (!local_get(f, "self", 4) && self_path(p, a, &p->path)) {
      op = OX_OP_GET_ATTR;
      target = ox_arena_strndup(&p->scratch, p->path.data, p->path.len);
      break;
    }
    if (r && !local_get(f, r->s, r->slen) &&
        (dots >= 2 || in_list(r->s, r->slen, known_modules, sizeof known_modules / sizeof known_modules[0]))) {
      diag_src(p, OX_SEV_WARNING, a->off, "statement computes a constant, not a graph value; skipped");
      return false;
    }
    /* x.shape: FX prints getattr(x, 'shape') this way */
    OxValue it[2];
    if (!lower_value(p, f, a->a, &it[0], line)) return false;
    it[1] = vstr(g, OX_V_STR, a->s, a->slen);
    op = OX_OP_CALL_FUNCTION;
    target = "builtins.getattr";
    args = ox_graph_value_seq(g, OX_V_TUPLE, it, 2);
    break;
  }
  default:
    diag_src(p, OX_SEV_WARNING, a->off, "statement computes a constant, not a graph value; skipped");
    return false;
  }
  *out = add_node(p, f, op, name, target, args, kwargs, line);
  return true;
}

/* ------------------------------------------------------------------ logical lines */

static int line_indent(P *p, uint32_t li, size_t *first) {
  const Line *l = &p->lines[li];
  int ind = 0;
  size_t i = l->cs;
  for (; i < l->end; i++) {
    char c = p->text[i];
    if (c == ' ') ind++;
    else if (c == '\t') ind = (ind / 8 + 1) * 8;
    else if (c == '\f' || c == '\v') continue;
    else break;
    if (ind > INT_MAX / 2) break;
  }
  if (first) *first = i;
  return ind;
}

static bool line_blank(P *p, uint32_t li) {
  size_t first;
  line_indent(p, li, &first);
  return first >= p->lines[li].end;
}

/* Bracket depth change over [s, e), string- and comment-aware. */
static long bracket_delta(const char *s, size_t b, size_t e) {
  long d = 0;
  for (size_t i = b; i < e; i++) {
    char c = s[i];
    if (c == '#') break;
    if (c == '\'' || c == '"') {
      i++;
      while (i < e && s[i] != c) {
        if (s[i] == '\\') i++;
        i++;
      }
      continue;
    }
    if (c == '(' || c == '[' || c == '{') d++;
    else if (c == ')' || c == ']' || c == '}') d--;
  }
  return d;
}

static void seg_push(P *p, size_t off, uint32_t line, size_t raw) {
  if (p->nsegs == p->capsegs) {
    p->capsegs = p->capsegs ? p->capsegs * 2 : 16;
    p->segs = ox_xrealloc(p->segs, p->capsegs * sizeof *p->segs);
  }
  p->segs[p->nsegs++] = (Seg){off, line, raw};
}

/* Builds the logical line starting at content offset `from` of line *li; joins following
 * lines while brackets are open and the next line is a plausible continuation (indented
 * deeper than base_indent, or starting with a closing bracket). Advances *li to the last
 * line used. */
static void logical_line(P *p, uint32_t *li, size_t from, int base_indent, Src *src) {
  uint32_t i = *li;
  const Line *l = &p->lines[i];
  long depth = bracket_delta(p->text, from, l->end);
  p->nsegs = 0;
  if (depth <= 0) {
    seg_push(p, 0, i, from);
    *src = (Src){p->text + from, l->end - from, p->segs, 1};
    return;
  }
  p->join.len = 0;
  seg_push(p, 0, i, from);
  ox_buf_append(&p->join, p->text + from, l->end - from);
  uint32_t last = i;
  for (uint32_t j = i + 1; j < p->nlines && depth > 0; j++) {
    if (line_blank(p, j)) continue;
    size_t first;
    int ind = line_indent(p, j, &first);
    char c0 = p->text[first];
    if (ind <= base_indent && c0 != ')' && c0 != ']' && c0 != '}') break;
    ox_buf_putc(&p->join, ' ');
    seg_push(p, p->join.len, j, first);
    ox_buf_append(&p->join, p->text + first, p->lines[j].end - first);
    depth += bracket_delta(p->text, first, p->lines[j].end);
    last = j;
  }
  *li = last;
  ox_buf_putc(&p->join, 0);
  p->join.len--;
  *src = (Src){p->join.data, p->join.len, p->segs, p->nsegs};
}

/* top-level ';' positions split a statement; returns the end of the first part */
static size_t split_semicolon(const Src *s, size_t from) {
  long d = 0;
  for (size_t i = from; i < s->n; i++) {
    char c = s->s[i];
    if (c == '#') return i;
    if (c == '\'' || c == '"') {
      i++;
      while (i < s->n && s->s[i] != c) {
        if (s->s[i] == '\\') i++;
        i++;
      }
      continue;
    }
    if (c == '(' || c == '[' || c == '{') d++;
    else if (c == ')' || c == ']' || c == '}') d--;
    else if (c == ';' && d <= 0) return i;
  }
  return s->n;
}

static void begin_parse(P *p, const Src *src, size_t from, size_t to) {
  p->ldepth = 0;
  p->lfatal = false;
  p->src = src;
  p->pos = from;
  p->lim = to;
  p->depth = 0;
  p->perr = false;
  p->pfatal = false;
}

static void report_parse_error(P *p, const char *what) {
  diag_src(p, p->pfatal ? OX_SEV_ERROR : OX_SEV_WARNING, p->perr_off, "%s: %s%s", what, p->perr_msg,
           p->pfatal ? "" : "; skipped");
}

/* "a = b = None" (the deletion suffix) */
static bool is_deletion(P *p, size_t b, size_t e) {
  begin_parse(p, p->src, b, e);
  int names = 0;
  for (;;) {
    const char *id;
    size_t n = read_ident(p, &id);
    if (!n) return false;
    if (span_eq(id, n, "None")) return names > 0 && peekc(p) < 0;
    names++;
    if (!accept(p, '=')) return false;
  }
}

static bool is_none(P *p, size_t b, size_t e) {
  begin_parse(p, p->src, b, e);
  const char *id;
  size_t n = read_ident(p, &id);
  return span_eq(id, n, "None") && peekc(p) < 0;
}

/* ------------------------------------------------------------------ statements */

static void handle_return(P *p, Frame *f, size_t b, size_t e, uint32_t line) {
  begin_parse(p, p->src, b, e);
  OxValue v = ox_value_none();
  if (peekc(p) >= 0) {
    uint32_t base = p->nastk;
    Ast *a = parse_expr(p);
    if (a && accept(p, ',')) { /* return a, b */
      astk_push(p, a);
      bool comma = true;
      while (comma && peekc(p) >= 0) {
        Ast *x = parse_expr(p);
        if (!x) break;
        astk_push(p, x);
        comma = accept(p, ',');
      }
      if (!p->perr) {
        Ast *t = mk(p, A_TUPLE, b);
        t->n = p->nastk - base;
        t->kids = astk_take(p, base);
        a = t;
      }
    }
    p->nastk = base;
    if (!p->perr && peekc(p) >= 0) perr(p, p->pos, "unexpected text after the return value");
    if (p->perr || !a) {
      report_parse_error(p, "cannot parse return statement");
      return;
    }
    if (!lower_value(p, f, a, &v, line)) return;
  }
  OxValue args = ox_graph_value_seq(f->g, OX_V_TUPLE, &v, 1);
  add_node(p, f, OX_OP_OUTPUT, "output", "output", args, ox_value_none(), line);
  f->has_output = true;
}

static void handle_statement(P *p, Frame *f, uint32_t *li, size_t first, int indent) {
  Src src;
  logical_line(p, li, first, indent, &src);
  p->src = &src;
  uint32_t line = p->segs[0].line + 1;
  size_t end1 = split_semicolon(&src, 0);
  /* the deletion suffix ";  a = b = None" */
  for (size_t b = end1; b < src.n && src.s[b] == ';';) {
    size_t e = split_semicolon(&src, b + 1);
    size_t q = b + 1;
    while (q < e && is_sp((unsigned char)src.s[q])) q++;
    if (q < e && !is_deletion(p, q, e))
      diag_src(p, OX_SEV_WARNING, q, "ignored statement after ';' (only 'name = None' deletions are expected)");
    b = e;
  }
  if (f->has_output) {
    diag_src(p, OX_SEV_WARNING, 0, "statement after return; skipped");
    return;
  }
  begin_parse(p, &src, 0, end1);
  const char *id;
  size_t n = read_ident(p, &id);
  if (n == 6 && memcmp(id, "return", 6) == 0 && (p->pos >= end1 || !is_id((unsigned char)src.s[p->pos]))) {
    handle_return(p, f, p->pos, end1, line);
    return;
  }
  if (n == 4 && memcmp(id, "pass", 4) == 0 && peekc(p) < 0) return;
  if (!n || is_keyword(id, n)) {
    diag_src(p, OX_SEV_WARNING, 0, "not an FX statement (expected 'name = expression' or 'return'); skipped");
    return;
  }
  const char *name = id;
  size_t nlen = n;
  const char *ann = NULL;
  size_t alen = 0, ann_off = 0;
  bool ann_quoted = false;
  if (accept(p, ':')) {
    int c = peekc(p);
    if (c == '\'' || c == '"') {
      Ast *s = parse_string(p, false);
      if (!s) {
        report_parse_error(p, "cannot parse type annotation");
        return;
      }
      ann_off = s->off;
      ann = s->s;
      alen = s->slen;
      ann_quoted = true;
    } else {
      size_t b = p->pos;
      long d = 0;
      while (p->pos < end1 && (d > 0 || src.s[p->pos] != '=')) {
        char ch = src.s[p->pos];
        if (ch == '[' || ch == '(') d++;
        else if (ch == ']' || ch == ')') d--;
        p->pos++;
      }
      size_t e = p->pos;
      while (e > b && is_sp((unsigned char)src.s[e - 1])) e--;
      ann = src.s + b;
      alen = e - b;
    }
  }
  if (!(peekc(p) == '=' && peekc2(p) != '=')) {
    diag_src(p, OX_SEV_WARNING, p->pos < end1 ? p->pos : 0,
             "not an FX statement (expected 'name = expression' or 'return'); skipped");
    return;
  }
  p->pos++;
  size_t rhs = p->pos;
  if (is_deletion(p, rhs, end1) || is_none(p, rhs, end1)) return; /* a standalone "x = None" deletion */
  begin_parse(p, &src, rhs, end1);
  Ast *a = parse_expr(p);
  if (a && peekc(p) >= 0) {
    if (peekc(p) == '=') perr(p, p->pos, "multiple assignment targets are not FX");
    else perr(p, p->pos, "unexpected text after the expression");
  }
  if (p->perr || !a) {
    report_parse_error(p, "cannot parse statement");
    return;
  }
  OxNodeId prev_def = local_get(f, name, nlen);
  if (prev_def)
    diag_src(p, OX_SEV_WARNING, 0, "name '%.*s' is assigned twice; later uses refer to the new value",
             (int)(nlen > 200 ? 200 : nlen), name);
  if (a->kind == A_NAME) {
    /* "l_x_ = L_x_": Dynamo renames a placeholder; FX prints the rename as an assignment.
     * Fold it back into the placeholder (name l_x_, target L_x_) when it is the first use. */
    OxValue v;
    if (!resolve_name(p, f, a, &v, line)) return;
    if (v.kind != OX_V_NODE) {
      diag_src(p, OX_SEV_WARNING, a->off, "statement computes a constant, not a graph value; skipped");
      return;
    }
    OxNode *src_node = ox_graph_node(f->g, v.u.node);
    char *nm = ox_arena_strndup(&p->scratch, name, nlen);
    if (src_node->op == OX_OP_PLACEHOLDER && !(src_node->flags & OX_NODE_EXTERNAL) && src_node->n_users == 0 &&
        strcmp(src_node->name, src_node->target) == 0 && span_eq(a->s, a->slen, src_node->name) &&
        ox_graph_rename(f->g, v.u.node, nm)) {
      f->renames++;
    } else {
      f->aliases++;
    }
    local_set(f, name, nlen, v.u.node);
    return;
  }
  char *nm = ox_arena_strndup(&p->scratch, name, nlen);
  OxNodeId nid;
  if (!lower_node(p, f, a, nm, line, &nid, NULL)) return;
  OxNode *node = ox_graph_node(f->g, nid);
  if (ann) {
    node->type_ann = ox_graph_intern_n(f->g, ann, alen);
    char why[160] = "";
    if (ann_quoted && !apply_annotation(f->g, nid, ann, alen, 0, why, sizeof why) && why[0])
      diag_src(p, OX_SEV_WARNING, ann_off, "tensor annotation ignored: %s", why);
  }
  local_set(f, name, nlen, nid);
}

/* def forward(self, a: "f32[2]", b, *args, c=None) -> T: */
static void handle_def(P *p, Frame *f, uint32_t *li, size_t first, int indent) {
  Src src;
  logical_line(p, li, first, indent, &src);
  p->src = &src;
  f->def_indent = indent;
  const char *s = src.s;
  const char *lp = memchr(s, '(', src.n);
  if (!lp) {
    diag_src(p, OX_SEV_WARNING, 0, "malformed forward signature; no inputs read");
    return;
  }
  size_t b = (size_t)(lp - s) + 1;
  /* find the matching ')' */
  long d = 1;
  size_t e = b;
  for (; e < src.n && d > 0; e++) {
    char c = s[e];
    if (c == '\'' || c == '"') {
      e++;
      while (e < src.n && s[e] != c) {
        if (s[e] == '\\') e++;
        e++;
      }
      continue;
    }
    if (c == '(' || c == '[' || c == '{') d++;
    else if (c == ')' || c == ']' || c == '}') d--;
  }
  if (d > 0) {
    diag_src(p, OX_SEV_WARNING, b - 1, "unterminated forward signature; no inputs read");
    return;
  }
  size_t close = e - 1;
  begin_parse(p, &src, b, close);
  bool first_param = true;
  while (!p->perr && peekc(p) >= 0) {
    size_t pb = p->pos;
    bool star = false, dstar = false;
    if (accept(p, '*')) {
      star = true;
      if (accept(p, '*')) dstar = true;
    } else if (accept(p, '/')) {
      if (!accept(p, ',')) break;
      continue;
    }
    const char *id;
    size_t n = read_ident(p, &id);
    if (!n) {
      if (star && (peekc(p) == ',' || peekc(p) < 0)) { /* bare '*' marker */
        accept(p, ',');
        continue;
      }
      perr(p, p->pos, "expected a parameter name");
      break;
    }
    const char *ann = NULL, *dflt = NULL;
    size_t alen = 0, dlen = 0, ann_off = 0;
    bool quoted = false;
    if (accept(p, ':')) {
      int c = peekc(p);
      if (c == '\'' || c == '"') {
        Ast *a = parse_string(p, false);
        if (!a) break;
        ann_off = a->off;
        ann = a->s;
        alen = a->slen;
        quoted = true;
      } else {
        size_t ab = p->pos;
        long dd = 0;
        while (p->pos < p->lim && (dd > 0 || (src.s[p->pos] != ',' && src.s[p->pos] != '='))) {
          char ch = src.s[p->pos];
          if (ch == '[' || ch == '(') dd++;
          else if (ch == ']' || ch == ')') dd--;
          p->pos++;
        }
        size_t ae = p->pos;
        while (ae > ab && is_sp((unsigned char)src.s[ae - 1])) ae--;
        ann = src.s + ab;
        alen = ae - ab;
      }
    }
    if (accept(p, '=')) {
      skip_ws(p);
      size_t db = p->pos;
      Ast *dv = parse_expr(p);
      if (!dv) break;
      dflt = src.s + db;
      dlen = dv->end - db;
    }
    if (peekc(p) >= 0 && !expect(p, ',', "',' between parameters")) break;
    if (first_param && !star && span_eq(id, n, "self")) {
      first_param = false;
      continue;
    }
    first_param = false;
    uint32_t pli;
    size_t raw;
    src_loc(&src, pb, &pli, &raw);
    if (local_get(f, id, n))
      diag_src(p, OX_SEV_WARNING, pb, "duplicate parameter '%.*s'", (int)(n > 200 ? 200 : n), id);
    char tgt[300];
    snprintf(tgt, sizeof tgt, "%s%.*s", dstar ? "**" : star ? "*" : "", (int)(n > 256 ? 256 : n), id);
    OxNodeId ph = add_placeholder(p, f, id, n, ox_graph_intern(f->g, tgt), pli + 1, false);
    OxNode *node = ox_graph_node(f->g, ph);
    if (dflt) node->default_value = ox_graph_intern_n(f->g, dflt, dlen);
    if (ann) {
      node->type_ann = ox_graph_intern_n(f->g, ann, alen);
      char why[160] = "";
      if (quoted && !apply_annotation(f->g, ph, ann, alen, 0, why, sizeof why) && why[0])
        diag_src(p, OX_SEV_WARNING, ann_off, "tensor annotation ignored: %s", why);
    }
  }
  if (p->perr) report_parse_error(p, "cannot parse forward signature");
}

/* "# File: ..." / "# No stacktrace found for following nodes" */
static void handle_comment(P *p, Frame *f, const char *s, size_t n) {
  (void)p;
  const char *t = s + 1;
  while (t < s + n && is_sp((unsigned char)*t)) t++;
  size_t m = (size_t)(s + n - t);
  while (m && is_sp((unsigned char)t[m - 1])) m--;
  if (span_starts(t, m, "No stacktrace found")) {
    f->trace = NULL;
    f->trace_open = false;
    return;
  }
  if (!span_starts(t, m, "File:")) return;
  if (!f->trace_open) f->tracebuf.len = 0;
  else ox_buf_putc(&f->tracebuf, '\n');
  ox_buf_append(&f->tracebuf, t, m);
  f->trace = ox_graph_intern_n(f->g, f->tracebuf.data, f->tracebuf.len);
  f->trace_open = true;
}

/* ------------------------------------------------------------------ prefixes */

/* TORCH_LOGS / glog prefix: "V0123 10:01:52.787000 140455623955584 path.py:1291] [0/0] [__graph_code] ".
 * Returns the content start, or 0 (no prefix) */
static size_t torch_logs_prefix(const char *s, size_t b, size_t e) {
  if (e - b < 8) return 0;
  char c = s[b];
  if (c != 'V' && c != 'I' && c != 'W' && c != 'E') return 0;
  for (int i = 1; i <= 4; i++)
    if (!is_dig((unsigned char)s[b + (size_t)i])) return 0;
  if (s[b + 5] != ' ') return 0;
  size_t lim = e - b > 1024 ? b + 1024 : e;
  size_t i = b + 6;
  while (i + 1 < lim && !(s[i] == ']' && s[i + 1] == ' ')) i++;
  if (i + 1 >= lim) return 0;
  i += 2;
  /* [0/0] [__graph_code] ... */
  for (int k = 0; k < 4 && i < e && s[i] == '['; k++) {
    size_t j = i + 1;
    while (j < e && s[j] != ']' && s[j] != ' ') j++;
    if (j >= e || s[j] != ']') break;
    i = j + 1;
    if (i < e && s[i] == ' ') i++;
  }
  return i;
}

static void strip_prefixes(P *p) {
  bool any_log = false;
  for (uint32_t i = 0; i < p->nlines; i++) {
    Line *l = &p->lines[i];
    size_t c = torch_logs_prefix(p->text, l->start, l->end);
    if (c) {
      l->cs = c;
      any_log = true;
    }
  }
  if (any_log) return;
  /* longest common prefix of the non-blank lines (linear: it only shrinks) */
  const char *lcp = NULL;
  size_t ln = 0;
  uint32_t nonblank = 0;
  for (uint32_t i = 0; i < p->nlines; i++) {
    const Line *l = &p->lines[i];
    if (line_blank(p, i)) continue;
    nonblank++;
    const char *s = p->text + l->start;
    size_t n = l->end - l->start;
    if (!lcp) {
      lcp = s;
      ln = n;
      continue;
    }
    size_t k = 0;
    while (k < ln && k < n && lcp[k] == s[k]) k++;
    ln = k;
    if (!ln) return;
  }
  if (nonblank < 2) return;
  /* only a marker prefix ("#   ", "    # ", ">>> "): end after whitespace or a marker char */
  while (ln && !(is_sp((unsigned char)lcp[ln - 1]) || (lcp[ln - 1] && strchr("#>|:]", lcp[ln - 1])))) ln--;
  bool marker = false;
  for (size_t k = 0; k < ln; k++)
    if (!is_sp((unsigned char)lcp[k])) marker = true;
  if (!marker) return;
  for (size_t k = 0; k < ln; k++)
    if (is_id((unsigned char)lcp[k])) return;
  for (uint32_t i = 0; i < p->nlines; i++) {
    Line *l = &p->lines[i];
    if (l->end - l->start >= ln && memcmp(p->text + l->start, lcp, ln) == 0) l->cs = l->start + ln;
    else l->cs = l->end; /* a line shorter than the prefix ("#") is blank */
  }
}

/* ------------------------------------------------------------------ line dispatch */

/* "class NAME(...):" anywhere in the line (after text such as a file path). Returns true and
 * the name span and where "class" starts. */
static bool match_class(const char *s, size_t b, size_t e, const char **name, size_t *nlen, size_t *kw) {
  while (e > b && is_sp((unsigned char)s[e - 1])) e--;
  if (e - b < 8 || s[e - 1] != ':') return false;
  int tries = 0; /* bounded: a line full of "class" words stays linear */
  for (size_t i = b; i + 6 <= e && tries < 8; i++) {
    if (memcmp(s + i, "class", 5) != 0 || !is_sp((unsigned char)s[i + 5])) continue;
    tries++;
    if (i > b && !is_sp((unsigned char)s[i - 1])) continue;
    size_t j = i + 5;
    while (j < e && is_sp((unsigned char)s[j])) j++;
    size_t nb = j;
    while (j < e && s[j] != '(' && s[j] != ':' && !is_sp((unsigned char)s[j])) j++;
    if (j == nb) continue;
    size_t ne = j;
    while (j < e && is_sp((unsigned char)s[j])) j++;
    if (j < e && s[j] == '(') {
      long d = 0;
      for (; j < e; j++) {
        if (s[j] == '(') d++;
        else if (s[j] == ')' && --d == 0) break;
      }
      if (j >= e) continue;
      j++;
      while (j < e && is_sp((unsigned char)s[j])) j++;
    }
    if (j != e - 1) continue;
    *name = s + nb;
    *nlen = ne - nb;
    *kw = i;
    return true;
  }
  return false;
}

static bool starts_def(const char *s, size_t n, bool *is_forward) {
  if (!span_starts(s, n, "def") || n < 4 || !is_sp((unsigned char)s[3])) return false;
  size_t i = 3;
  while (i < n && is_sp((unsigned char)s[i])) i++;
  *is_forward = span_starts(s + i, n - i, "forward") &&
                (i + 7 < n && (s[i + 7] == '(' || is_sp((unsigned char)s[i + 7])));
  return true;
}

static void process_lines(P *p) {
  for (uint32_t li = 0; li < p->nlines; li++) {
    if (line_blank(p, li)) continue;
    size_t first;
    int indent = line_indent(p, li, &first);
    const Line *l = &p->lines[li];
    const char *s = p->text + first;
    size_t n = l->end - first;
    size_t tn = n;
    while (tn && is_sp((unsigned char)s[tn - 1])) tn--;
    Frame *f = top(p);
    /* comments belong to the innermost open body whatever their indentation */
    if (s[0] == '#') {
      if (f && f->def_indent >= 0 && f->skip_indent < 0) handle_comment(p, f, s, tn);
      continue;
    }
    /* TORCH_LOGS banners end all graphs and may name the next one */
    if (span_eq(s, tn, "TRACED GRAPH") || (tn >= 10 && span_starts(s, tn, "=====") &&
                                             memcmp(s + tn - 5, "=====", 5) == 0)) {
      while (p->nframes) frame_close(p);
      if (s[0] == '=') {
        const char *b = s + 5, *e = s + tn - 5;
        while (b < e && (*b == '=' || is_sp((unsigned char)*b))) b++;
        while (e > b && (e[-1] == '=' || is_sp((unsigned char)e[-1]))) e--;
        free((void *)p->pending_name);
        p->pending_name = NULL;
        if (e > b) {
          char *nm = ox_xrealloc(NULL, (size_t)(e - b) + 1);
          memcpy(nm, b, (size_t)(e - b));
          nm[e - b] = 0;
          free((void *)p->pending_name);
          p->pending_name = nm;
        }
      }
      continue;
    }
    const char *cname;
    size_t clen, kw;
    if (match_class(p->text, first, l->end, &cname, &clen, &kw)) {
      if (kw > first) indent = -1; /* text before "class" (a log path): a new top-level graph */
      while (p->nframes && (indent < 0 || top(p)->class_indent >= indent)) frame_close(p);
      if (p->nframes >= p->max_depth) {
        diag_raw(p, OX_SEV_ERROR, li, first, "classes nested deeper than %u levels", p->max_depth);
        continue;
      }
      frame_open(p, cname, clen, indent < 0 ? line_indent(p, li, NULL) : indent, li, false);
      continue;
    }
    while (p->nframes && indent <= top(p)->class_indent) frame_close(p);
    f = top(p);
    bool fwd = false;
    bool isdef = starts_def(s, tn, &fwd);
    if (!f) {
      if (isdef && fwd) {
        f = frame_open(p, "forward", 7, indent, li, true);
        handle_def(p, f, &li, first, indent);
      }
      continue; /* text outside any graph (prose, other log lines) */
    }
    if (f->skip_indent >= 0) {
      if (indent > f->skip_indent) continue;
      f->skip_indent = -1;
    }
    if (f->def_indent >= 0 && indent > f->def_indent) {
      handle_statement(p, f, &li, first, indent);
      ox_arena_release(&p->scratch, p->scratch_mark);
      continue;
    }
    /* a class-level line */
    if (isdef && fwd && f->def_indent < 0) {
      handle_def(p, f, &li, first, indent);
    } else if (isdef) {
      if (fwd) diag_raw(p, OX_SEV_WARNING, li, first, "second forward method in class %s; skipped", f->cls);
      f->skip_indent = indent;
    } else if (f->def_indent < 0) {
      diag_raw(p, OX_SEV_WARNING, li, first, "unexpected line before 'def forward' in class %s; skipped", f->cls);
    } else {
      diag_raw(p, OX_SEV_WARNING, li, first, "unexpected line in class %s (not inside forward); skipped",
               f->cls);
    }
  }
  while (p->nframes) frame_close(p);
}

/* ------------------------------------------------------------------ entry point */

int ox_parse_fx_readable(const char *text, size_t len, const OxLoadOptions *opt, OxDoc *doc, OxDiagList *diags) {
  P p;
  memset(&p, 0, sizeof p);
  p.text = text;
  p.len = len;
  p.opt = opt;
  p.max_depth = opt && opt->max_depth ? opt->max_depth : 256;
  p.doc = doc;
  p.diags = diags;
  ox_buf_init(&p.join);
  ox_buf_init(&p.path);
  /* lines */
  uint32_t cap = 1;
  for (size_t i = 0; i < len; i++)
    if (text[i] == '\n') cap++;
  p.lines = ox_xcalloc(cap, sizeof *p.lines);
  size_t b = 0;
  while (b <= len) {
    const char *nl = b < len ? memchr(text + b, '\n', len - b) : NULL;
    size_t e = nl ? (size_t)(nl - text) : len;
    size_t ce = e;
    if (ce > b && text[ce - 1] == '\r') ce--;
    if (nl || e > b) p.lines[p.nlines++] = (Line){b, ce, b};
    if (!nl) break;
    b = e + 1;
  }
  strip_prefixes(&p);
  ox_arena_alloc(&p.scratch, 16); /* keep one block: per-statement release then reuses it */
  p.scratch_mark = ox_arena_mark(&p.scratch);
  uint32_t graphs_before = doc->n_graphs;
  process_lines(&p);
  bool any_graph = doc->n_graphs > graphs_before;
  if (!any_graph)
    ox_diag_add(diags, OX_SEV_ERROR, 1, 1, NULL,
                "no graph found: expected 'class GraphModule(torch.nn.Module):' with a 'def forward(self, ...):'");
  free((void *)p.pending_name);
  free(p.lines);
  free(p.frames);
  free(p.segs);
  free(p.astk);
  free(p.vstk);
  free(p.kstk);
  ox_buf_free(&p.join);
  ox_buf_free(&p.path);
  ox_arena_free(&p.scratch);
  return any_graph && p.errors == 0 ? 0 : -1;
}
