/* ox_json_lex.c - the strict JSON tokenizer of ox_json_lex.h: one pass over the text, each byte
 * looked at once (a string without escapes is handed out where it lies; one with escapes is
 * decoded into the reader's buffer). The grammar is a small state machine over a stack of open
 * containers, so the tokens it hands out always form valid JSON up to the current one.
 *
 * Requires: nothing of the text beyond len (it need not be NUL-terminated). Never reads past
 * len, never aborts on input; allocation failure aborts (ox_xrealloc) as everywhere else.
 */
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "json/ox_json_lex.h"

enum {
  ST_VALUE,          /* a value must come (the document, after ':', after ',' in an array) */
  ST_VALUE_OR_CLOSE, /* after '[' */
  ST_KEY,            /* after ',' in an object */
  ST_KEY_OR_CLOSE,   /* after '{' */
  ST_AFTER,          /* after a value: ',' or the container's end (the text's end at depth 0) */
  ST_DONE,
  ST_FAILED,
};

/* Bytes a string holds as they are: printable ASCII other than '"' and '\\'. */
static const uint8_t plain[256] = {
#define R8(v) v, v, v, v, v, v, v, v
  R8(0), R8(0), R8(0), R8(0), /* 0x00-0x1f: control characters */
  1, 1, 0, 1, 1, 1, 1, 1, R8(1), R8(1), R8(1), /* 0x20-0x3f; 0x22 '"' */
  R8(1), R8(1), R8(1), 1, 1, 1, 1, 0, 1, 1, 1, /* 0x40-0x5f; 0x5c '\\' */
  R8(1), R8(1), R8(1), R8(1), /* 0x60-0x7f */
#undef R8
};

void ox_json_lex_init(OxJsonLex *x, const char *t, size_t len, size_t start, uint32_t max_depth) {
  memset(x, 0, sizeof *x);
  x->t = t;
  x->len = len;
  x->pos = start < len ? start : len;
  x->max_depth = max_depth ? max_depth : 1;
  x->state = ST_VALUE;
}

void ox_json_lex_reset(OxJsonLex *x, const char *t, size_t len, size_t start, uint32_t max_depth) {
  uint8_t *open = x->open;
  char *buf = x->buf;
  uint32_t open_cap = x->open_cap;
  size_t buf_cap = x->buf_cap;
  ox_json_lex_init(x, t, len, start, max_depth);
  x->open = open;
  x->open_cap = open_cap;
  x->buf = buf;
  x->buf_cap = buf_cap;
}

void ox_json_lex_free(OxJsonLex *x) {
  free(x->open);
  free(x->buf);
  x->open = NULL;
  x->buf = NULL;
  x->open_cap = 0;
  x->buf_cap = 0;
}

static OxJsonTok fail(OxJsonLex *x, size_t at, const char *why) {
  x->state = ST_FAILED;
  x->err = why;
  x->err_at = at;
  x->tok = OX_JSON_ERROR;
  return OX_JSON_ERROR;
}

static size_t skip_ws(const char *t, size_t len, size_t i) {
  while (i < len && (t[i] == ' ' || t[i] == '\n' || t[i] == '\t' || t[i] == '\r')) i++;
  return i;
}

static void buf_reserve(OxJsonLex *x, size_t need) {
  if (need <= x->buf_cap) return;
  size_t cap = x->buf_cap ? x->buf_cap : 256;
  while (cap < need) cap *= 2;
  x->buf = ox_xrealloc(x->buf, cap);
  x->buf_cap = cap;
}

static int hex4(const char *p) {
  int v = 0;
  for (int k = 0; k < 4; k++) {
    char c = p[k];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/* Length of the UTF-8 sequence at t[i] (its first byte >= 0x80), 0 when it is not valid UTF-8
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static size_t utf8_len(const char *t, size_t len, size_t i) {
  const unsigned char *u = (const unsigned char *)t + i;
  size_t left = len - i;
  unsigned c = u[0];
  unsigned lo = 0x80, hi = 0xbf;
  size_t n;
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (left < n || u[1] < lo || u[1] > hi) return 0;
  for (size_t k = 2; k < n; k++)
    if (u[k] < 0x80 || u[k] > 0xbf) return 0;
  return n;
}

/* The string whose opening quote is t[i]; sets s, n; *end past its closing quote. */
static bool read_string(OxJsonLex *x, size_t i, size_t *end) {
  const char *t = x->t;
  size_t len = x->len, s = i + 1, j = s;
  /* eight bytes at a time while none is '"', '\\', a control character or non-ASCII */
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  while (j + 8 <= len) {
    uint64_t v, q, b;
    memcpy(&v, t + j, 8);
    q = v ^ (ones * '"');
    b = v ^ (ones * '\\');
    uint64_t special = ((q - ones) & ~q) | ((b - ones) & ~b) | (v - ones * 0x20) | v;
    if (special & highs) break;
    j += 8;
  }
  while (j < len && plain[(unsigned char)t[j]]) j++;
  if (j < len && t[j] == '"') { /* the common case: nothing to decode */
    x->s = t + s;
    x->n = j - s;
    x->escaped = false;
    *end = j + 1;
    return true;
  }
  bool copying = false;
  size_t o = 0;
  for (;;) {
    if (j >= len) {
      fail(x, j, "unexpected end of input in a string");
      return false;
    }
    unsigned char c = (unsigned char)t[j];
    if (copying && o + 8 > x->buf_cap) buf_reserve(x, o + 8); /* room for what one step adds */
    if (plain[c]) {
      if (copying) x->buf[o++] = (char)c;
      j++;
      continue;
    }
    if (c == '"') break;
    if (c < 0x20) {
      fail(x, j, "control character in a string");
      return false;
    }
    if (c >= 0x80) {
      size_t k = utf8_len(t, len, j);
      if (!k) {
        fail(x, j, "invalid UTF-8 in a string");
        return false;
      }
      if (copying) {
        memcpy(x->buf + o, t + j, k);
        o += k;
      }
      j += k;
      continue;
    }
    /* a backslash */
    if (!copying) {
      buf_reserve(x, j - s + 8);
      memcpy(x->buf, t + s, j - s);
      o = j - s;
      copying = true;
    }
    if (j + 1 >= len) {
      fail(x, j, "unexpected end of input in a string");
      return false;
    }
    char e = t[j + 1];
    const char *simple = "\"\\/bfnrt";
    const char *dec = "\"\\/\b\f\n\r\t";
    const char *p = e ? strchr(simple, e) : NULL;
    if (p) {
      x->buf[o++] = dec[p - simple];
      j += 2;
      continue;
    }
    if (e != 'u') {
      fail(x, j, "invalid escape in a string");
      return false;
    }
    int cp = j + 6 <= len ? hex4(t + j + 2) : -1;
    if (cp < 0) {
      fail(x, j, "invalid \\u escape in a string");
      return false;
    }
    j += 6;
    if (cp >= 0xdc00 && cp <= 0xdfff) {
      fail(x, j - 6, "lone surrogate in a string");
      return false;
    }
    if (cp >= 0xd800 && cp <= 0xdbff) {
      int lo = j + 6 <= len && t[j] == '\\' && t[j + 1] == 'u' ? hex4(t + j + 2) : -1;
      if (lo < 0xdc00 || lo > 0xdfff) {
        fail(x, j - 6, "lone surrogate in a string");
        return false;
      }
      j += 6;
      cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    /* at most 4 bytes from at least 6 of text */
    char *b = x->buf + o;
    if (cp < 0x80) {
      b[0] = (char)cp;
      o += 1;
    } else if (cp < 0x800) {
      b[0] = (char)(0xc0 | (cp >> 6));
      b[1] = (char)(0x80 | (cp & 0x3f));
      o += 2;
    } else if (cp < 0x10000) {
      b[0] = (char)(0xe0 | (cp >> 12));
      b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
      b[2] = (char)(0x80 | (cp & 0x3f));
      o += 3;
    } else {
      b[0] = (char)(0xf0 | (cp >> 18));
      b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
      b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
      b[3] = (char)(0x80 | (cp & 0x3f));
      o += 4;
    }
  }
  if (copying) {
    x->buf[o] = 0;
    x->s = x->buf;
    x->n = o;
  } else {
    x->s = t + s;
    x->n = j - s;
  }
  x->escaped = copying;
  *end = j + 1;
  return true;
}

/* The C locale for strtod: json-c reads numbers in it whatever the program's locale (the
 * debugger's may write decimals with a comma). Made once, kept for the process. */
static locale_t c_numeric(void) {
  static locale_t loc;
  locale_t l = __atomic_load_n(&loc, __ATOMIC_ACQUIRE);
  if (l) return l;
  locale_t made = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  if (!made) return (locale_t)0;
  locale_t expected = (locale_t)0;
  if (!__atomic_compare_exchange_n(&loc, &expected, made, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    freelocale(made);
    return expected;
  }
  return made;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The number at t[i]; *end past it. */
static OxJsonTok read_number(OxJsonLex *x, size_t i, size_t *end) {
  const char *t = x->t;
  size_t len = x->len, j = i;
  bool neg = t[j] == '-';
  if (neg) j++;
  if (j >= len || !is_digit(t[j])) return fail(x, j, "a digit expected in a number");
  size_t ds = j;
  if (t[j] == '0') j++;
  else
    while (j < len && is_digit(t[j])) j++;
  size_t de = j;
  bool integer = true;
  if (j < len && t[j] == '.') {
    j++;
    if (j >= len || !is_digit(t[j])) return fail(x, j, "a digit expected after '.' in a number");
    while (j < len && is_digit(t[j])) j++;
    integer = false;
  }
  if (j < len && (t[j] == 'e' || t[j] == 'E')) {
    j++;
    if (j < len && (t[j] == '+' || t[j] == '-')) j++;
    if (j >= len || !is_digit(t[j])) return fail(x, j, "a digit expected in a number's exponent");
    while (j < len && is_digit(t[j])) j++;
    integer = false;
  }
  *end = j;
  if (integer) {
    uint64_t u = 0;
    for (size_t k = ds; k < de; k++) {
      unsigned d = (unsigned)(t[k] - '0');
      if (u > (UINT64_MAX - d) / 10) return fail(x, i, "integer out of the 64-bit range");
      u = u * 10 + d;
    }
    if (neg) {
      if (u > (uint64_t)INT64_MAX + 1) return fail(x, i, "integer out of the 64-bit range");
      x->i = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
    } else {
      if (u > (uint64_t)INT64_MAX) return fail(x, i, "integer out of the 64-bit range");
      x->i = (int64_t)u;
    }
    return OX_JSON_INT;
  }
  char small[64];
  size_t n = j - i;
  char *p = small;
  if (n >= sizeof small) {
    buf_reserve(x, n + 1);
    p = x->buf;
  }
  memcpy(p, t + i, n);
  p[n] = 0;
  locale_t loc = c_numeric();
  if (!loc) return fail(x, i, "no C locale to read a number in");
  char *e;
  double f = strtod_l(p, &e, loc);
  if (e != p + n) return fail(x, i, "malformed number");
  if (!isfinite(f)) return fail(x, i, "number too large for a double");
  x->f = f;
  return OX_JSON_DOUBLE;
}

static bool push(OxJsonLex *x, uint8_t is_object) {
  if (x->depth >= x->max_depth) return false;
  if (x->depth >= x->open_cap) {
    x->open_cap = x->open_cap ? x->open_cap * 2 : 32;
    x->open = ox_xrealloc(x->open, x->open_cap);
  }
  x->open[x->depth++] = is_object;
  return true;
}

static OxJsonTok emit(OxJsonLex *x, OxJsonTok tok, size_t at, size_t next, uint8_t state) {
  x->tok = tok;
  x->at = at;
  x->pos = next;
  x->state = state;
  return tok;
}

static OxJsonTok close_container(OxJsonLex *x, size_t i) {
  OxJsonTok tok = x->open[x->depth - 1] ? OX_JSON_OBJECT_END : OX_JSON_ARRAY_END;
  x->depth--;
  return emit(x, tok, i, i + 1, ST_AFTER);
}

OxJsonTok ox_json_lex_next(OxJsonLex *x) {
  const char *t = x->t;
  size_t len = x->len, i = skip_ws(t, len, x->pos), end;
  switch (x->state) {
  case ST_FAILED: return OX_JSON_ERROR;
  case ST_DONE: return emit(x, OX_JSON_END, len, len, ST_DONE);
  case ST_AFTER:
    if (x->depth == 0) {
      if (i < len) return fail(x, i, "unexpected text after the document");
      return emit(x, OX_JSON_END, len, len, ST_DONE);
    }
    if (i >= len) return fail(x, i, "unexpected end of input");
    if (t[i] == ',') {
      i = skip_ws(t, len, i + 1);
      if (x->open[x->depth - 1]) goto key;
      goto value;
    }
    if (t[i] == (x->open[x->depth - 1] ? '}' : ']')) return close_container(x, i);
    return fail(x, i, x->open[x->depth - 1] ? "',' or '}' expected" : "',' or ']' expected");
  case ST_KEY_OR_CLOSE:
    if (i < len && t[i] == '}') return close_container(x, i);
    /* fall through */
  case ST_KEY:
  key:
    if (i >= len) return fail(x, i, "unexpected end of input");
    if (t[i] != '"') return fail(x, i, "a member name (a string) expected");
    if (!read_string(x, i, &end)) return OX_JSON_ERROR;
    {
      size_t c = skip_ws(t, len, end);
      if (c >= len) return fail(x, c, "unexpected end of input");
      if (t[c] != ':') return fail(x, c, "':' expected");
      return emit(x, OX_JSON_KEY, i, c + 1, ST_VALUE);
    }
  case ST_VALUE_OR_CLOSE:
    if (i < len && t[i] == ']') return close_container(x, i);
    /* fall through */
  case ST_VALUE:
  value:
    if (i >= len) return fail(x, i, "unexpected end of input");
    switch (t[i]) {
    case '{':
      if (!push(x, 1)) return fail(x, i, "nesting deeper than the limit");
      return emit(x, OX_JSON_OBJECT, i, i + 1, ST_KEY_OR_CLOSE);
    case '[':
      if (!push(x, 0)) return fail(x, i, "nesting deeper than the limit");
      return emit(x, OX_JSON_ARRAY, i, i + 1, ST_VALUE_OR_CLOSE);
    case '"':
      if (!read_string(x, i, &end)) return OX_JSON_ERROR;
      return emit(x, OX_JSON_STRING, i, end, ST_AFTER);
    case 't':
      if (len - i >= 4 && memcmp(t + i, "true", 4) == 0) return emit(x, OX_JSON_TRUE, i, i + 4, ST_AFTER);
      break;
    case 'f':
      if (len - i >= 5 && memcmp(t + i, "false", 5) == 0) return emit(x, OX_JSON_FALSE, i, i + 5, ST_AFTER);
      break;
    case 'n':
      if (len - i >= 4 && memcmp(t + i, "null", 4) == 0) return emit(x, OX_JSON_NULL, i, i + 4, ST_AFTER);
      break;
    default:
      if (t[i] == '-' || is_digit(t[i])) {
        OxJsonTok tok = read_number(x, i, &end);
        if (tok == OX_JSON_ERROR) return tok;
        return emit(x, tok, i, end, ST_AFTER);
      }
    }
    return fail(x, i, "unexpected character");
  }
  return fail(x, i, "unexpected state");
}

bool ox_json_lex_skip(OxJsonLex *x, OxJsonTok tok) {
  if (tok == OX_JSON_ERROR || tok == OX_JSON_END || tok == OX_JSON_KEY || tok == OX_JSON_OBJECT_END ||
      tok == OX_JSON_ARRAY_END)
    return false;
  if (tok != OX_JSON_OBJECT && tok != OX_JSON_ARRAY) return true;
  uint32_t outer = x->depth - 1;
  while (x->depth > outer)
    if (ox_json_lex_next(x) == OX_JSON_ERROR) return false;
  return true;
}

size_t ox_json_lex_value_start(const OxJsonLex *x) { return skip_ws(x->t, x->len, x->pos); }

bool ox_json_lex_take(OxJsonLex *x, size_t start, size_t end) {
  if ((x->state != ST_VALUE && x->state != ST_VALUE_OR_CLOSE) || start != skip_ws(x->t, x->len, x->pos) ||
      end <= start || end > x->len)
    return false;
  x->tok = OX_JSON_NULL; /* no token of its own: the caller knows what it took */
  x->at = start;
  x->pos = end;
  x->state = ST_AFTER;
  return true;
}
