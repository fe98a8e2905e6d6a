/* ox_json_lex.h - a small, strict JSON tokenizer (RFC 8259) without json-c: a pull reader that
 * hands out one token at a time and checks the grammar as it goes (engine/json/ only).
 *
 * The document reader (ox_json_fast.c) reads our own documents with it in one pass over the
 * text, the trace reader (ox_json_trace.c) each step of a version 3 trace. It is stricter than
 * json-c's strict mode on purpose: anything it does not take is an OX_JSON_ERROR with an offset
 * and a reason, and its user falls back to json-c (which then says what it says). What it takes,
 * it reads as json-c does:
 *   - strings: escapes decoded (\uXXXX and surrogate pairs to UTF-8); refused: raw control
 *     characters, invalid UTF-8, lone surrogates, unknown escapes. \u0000 is decoded (the
 *     string then holds a NUL; its length says so);
 *   - numbers: RFC grammar only (no leading zeros, no "1.", no NaN/Infinity). No '.' and no
 *     exponent: an int64 (out of range is an error, json-c would clamp); otherwise a double as
 *     strtod reads it in the C locale (the value json-c gives), refused when not finite;
 *   - nesting: at most max_depth containers open at once;
 *   - one value, then only white space (space, tab, CR, LF) to the end.
 */
#ifndef OX_JSON_LEX_H
#define OX_JSON_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum OxJsonTok {
  OX_JSON_END = 0,     /* the text is over (after its one value) */
  OX_JSON_ERROR,       /* x->err says why, at x->err_at; every later call returns it again */
  OX_JSON_OBJECT,      /* '{' */
  OX_JSON_OBJECT_END,  /* '}' */
  OX_JSON_ARRAY,       /* '[' */
  OX_JSON_ARRAY_END,   /* ']' */
  OX_JSON_KEY,         /* a member's name (s, n); its ':' is consumed */
  OX_JSON_STRING,      /* s, n */
  OX_JSON_INT,         /* i */
  OX_JSON_DOUBLE,      /* f */
  OX_JSON_TRUE,
  OX_JSON_FALSE,
  OX_JSON_NULL,
} OxJsonTok;

typedef struct OxJsonLex {
  const char *t;       /* the text (borrowed) */
  size_t len, pos;     /* its length; where the next token starts (before white space) */
  /* the current token */
  OxJsonTok tok;
  size_t at;           /* offset of its first byte */
  const char *s;       /* KEY, STRING: the decoded bytes: in t when there was no escape, else in
                          buf (valid until the next call); not NUL-terminated in t */
  size_t n;
  bool escaped;        /* s is decoded (in buf): only then can it hold a NUL */
  int64_t i;
  double f;
  /* the structure */
  uint32_t depth, max_depth; /* containers open; the most allowed */
  uint8_t *open;       /* per open container: 1 object, 0 array */
  uint32_t open_cap;
  uint8_t state;       /* what may come next (private) */
  /* errors */
  const char *err;     /* static text */
  size_t err_at;
  char *buf;           /* decoded strings (owned) */
  size_t buf_cap;
} OxJsonLex;

/* Starts reading t[start, len). max_depth >= 1. */
void ox_json_lex_init(OxJsonLex *x, const char *t, size_t len, size_t start, uint32_t max_depth);
void ox_json_lex_free(OxJsonLex *x);
/* Starts reading another value, t[start, len), keeping the buffers x has grown (the trace
 * reader reads each step as a value of its own). */
void ox_json_lex_reset(OxJsonLex *x, const char *t, size_t len, size_t start, uint32_t max_depth);
/* The next token (also in x->tok). */
OxJsonTok ox_json_lex_next(OxJsonLex *x);
/* With tok the first token of a value just read: reads to the end of that value (a scalar is
 * one token: nothing more is read). False on an error. */
bool ox_json_lex_skip(OxJsonLex *x, OxJsonTok tok);

/* Where a value must come next: takes t[start, end) as that value without looking at it again
 * (start: the value's first byte, past white space). The caller vouches that those bytes are a
 * value it read before with this reader at the same depth (so: complete, well formed, within the
 * depth limit), e.g. the same node meta again. False, and nothing done, when no value may come
 * here or start is not where it would begin. */
bool ox_json_lex_take(OxJsonLex *x, size_t start, size_t end);
/* Where the next token would start (x->pos past white space): the start ox_json_lex_take wants. */
size_t ox_json_lex_value_start(const OxJsonLex *x);

#endif
