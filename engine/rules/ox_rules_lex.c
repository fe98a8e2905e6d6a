/* ox_rules_lex.c - the rule language's lexer, and the parser's located errors and depth bound.
 *
 * The lexer turns the whole file into tokens up front (identifiers, ints, floats, strings,
 * punctuation, significant newlines); identifiers and strings are interned in the rule set's
 * value graph, so tokens and everything built from them share its lifetime. Errors quote the
 * offending line (ox_rules_err_at) and are counted in P; the loader fails if any was reported.
 * Only the first OX_RULES_MAX_ERRORS are reported (then one note), and the lexer stops there:
 * a file that is not a rule file (a binary, a Python script) gives a screenful, not thousands.
 * ox_rules_enter/leave bound the recursive descent at RULE_MAX_DEPTH levels.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/ox_rules_private.h"

static void snippet_at(const P *p, uint32_t off, char *buf, size_t cap) {
  size_t a = off > p->len ? p->len : off, b = a;
  while (a > 0 && p->src[a - 1] != '\n')
    a--;
  while (b < p->len && p->src[b] != '\n' && p->src[b] != '\r')
    b++;
  while (a < b && (p->src[a] == ' ' || p->src[a] == '\t'))
    a++;
  /* a long line: show the text around the offset (the column says where), not its start */
  const char *pre = "";
  size_t at = off > p->len ? p->len : off;
  if (at > a + 120) {
    a = at - 60;
    pre = "...";
  }
  size_t n = b - a;
  if (n > 160) n = 160;
  snprintf(buf, cap, "%s%.*s", pre, (int)n, p->src + a);
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
void
ox_rules_err_at(P *p, uint32_t line, uint32_t col, uint32_t off, const char *fmt, ...) {
  char snip[200], msg[512];
  snippet_at(p, off, snip, sizeof snip);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  p->errors++;
  if (p->errors <= OX_RULES_MAX_ERRORS) {
    ox_diag_add(p->d, OX_SEV_ERROR, line, col, snip, "%s", msg);
  } else if (p->errors == OX_RULES_MAX_ERRORS + 1) {
    ox_diag_add(p->d, OX_SEV_NOTE, line, col, NULL, "too many errors; stopped reporting after %d",
                OX_RULES_MAX_ERRORS);
  }
}

/* Enters one level of recursive descent at token t; false (a located error) past the bound.
 * Every successful enter is paired with a leave. */
bool ox_rules_enter(P *p, const Tok *t, const char *what) {
  if (p->depth >= RULE_MAX_DEPTH) {
    ERR_TOK(p, t, "%s nested deeper than %u levels", what, RULE_MAX_DEPTH);
    return false;
  }
  p->depth++;
  return true;
}
void ox_rules_leave(P *p) { p->depth--; }

static void push_tok(P *p, Tok t) {
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 256;
    p->t = ox_xrealloc(p->t, p->cap * sizeof *p->t);
  }
  p->t[p->n++] = t;
}

static bool id_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool id_char(char c) { return id_start(c) || (c >= '0' && c <= '9'); }

void ox_rules_lex(P *p) {
  const char *s = p->src;
  size_t n = p->len, i = 0;
  uint32_t line = 1;
  size_t line_start = 0;
  int depth = 0;
  static const char *const multi[] = {"=>", "==", "!=", "<=", ">=", "//", "++"};
  while (i < n && p->errors <= OX_RULES_MAX_ERRORS) { /* past the cap the file is not worth reading */
    char c = s[i];
    uint32_t col = (uint32_t)(i - line_start + 1);
    if (c == '\n') {
      if (depth == 0) push_tok(p, (Tok){TK_NL, line, col, (uint32_t)i, 1, 0, 0, NULL});
      i++;
      line++;
      line_start = i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
      i++;
      continue;
    }
    if (c == '#') {
      while (i < n && s[i] != '\n')
        i++;
      continue;
    }
    Tok t = {TK_EOF, line, col, (uint32_t)i, 0, 0, 0, NULL};
    if (id_start(c)) {
      size_t j = i;
      for (;;) {
        while (j < n && id_char(s[j]))
          j++;
        if (j + 1 < n && s[j] == '.' && id_start(s[j + 1])) {
          j++;
          continue;
        }
        break;
      }
      t.k = TK_ID;
      t.len = (uint32_t)(j - i);
      t.s = ox_graph_intern_n(p->ag, s + i, j - i);
      i = j;
    } else if (c >= '0' && c <= '9') {
      size_t j = i;
      bool flt = false;
      while (j < n && s[j] >= '0' && s[j] <= '9')
        j++;
      if (j + 1 < n && s[j] == '.' && s[j + 1] >= '0' && s[j + 1] <= '9') {
        flt = true;
        j++;
        while (j < n && s[j] >= '0' && s[j] <= '9')
          j++;
      }
      if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (s[k] == '+' || s[k] == '-')) k++;
        if (k < n && s[k] >= '0' && s[k] <= '9') {
          flt = true;
          j = k;
          while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
        }
      }
      char buf[64];
      size_t m = j - i < sizeof buf - 1 ? j - i : sizeof buf - 1;
      memcpy(buf, s + i, m);
      buf[m] = 0;
      t.len = (uint32_t)(j - i);
      if (flt) {
        t.k = TK_FLOAT;
        t.f = strtod(buf, NULL);
      } else {
        t.k = TK_INT;
        char *end;
        unsigned long long v = strtoull(buf, &end, 10);
        if (m > 18 && v > 9000000000000000000ull) {
          ox_rules_err_at(p, line, col, (uint32_t)i, "integer %s is too large", buf);
          v = 0;
        }
        t.i = (int64_t)v;
      }
      if (j < n && id_char(s[j])) {
        ox_rules_err_at(p, line, col, (uint32_t)i, "bad number '%.*s'", (int)(j - i + 1), s + i);
        while (j < n && id_char(s[j]))
          j++;
        t.len = (uint32_t)(j - i);
      }
      i = j;
    } else if (c == '"' || c == '\'') {
      size_t j = i + 1;
      char *buf = ox_xcalloc(n - i + 1, 1);
      size_t m = 0;
      bool closed = false;
      while (j < n && s[j] != '\n') {
        if (s[j] == c) {
          closed = true;
          j++;
          break;
        }
        if (s[j] == '\\' && j + 1 < n) {
          char e = s[j + 1];
          buf[m++] = e == 'n' ? '\n' : e == 't' ? '\t' : e;
          j += 2;
          continue;
        }
        buf[m++] = s[j++];
      }
      if (!closed) ox_rules_err_at(p, line, col, (uint32_t)i, "unterminated string");
      t.k = TK_STR;
      t.len = (uint32_t)(j - i);
      t.s = ox_graph_intern_n(p->ag, buf, m);
      free(buf);
      i = j;
    } else {
      size_t m = 0;
      for (size_t k = 0; k < sizeof multi / sizeof multi[0]; k++)
        if (i + 1 < n && s[i] == multi[k][0] && s[i + 1] == multi[k][1]) m = 2;
      if (!m && strchr("()[]{},:=<>+-*/%@|;", c)) m = 1;
      if (!m) {
        if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
          ox_rules_err_at(p, line, col, (uint32_t)i, "unexpected character '%c'", c);
        else
          ox_rules_err_at(p, line, col, (uint32_t)i, "unexpected byte 0x%02x", (unsigned char)c);
        i++;
        continue;
      }
      if (c == ';') { /* a statement separator, like a newline */
        push_tok(p, (Tok){TK_NL, line, col, (uint32_t)i, 1, 0, 0, NULL});
        i++;
        continue;
      }
      t.k = TK_P;
      t.len = (uint32_t)m;
      t.s = ox_graph_intern_n(p->ag, s + i, m);
      if (c == '(' || c == '[') depth++;
      if ((c == ')' || c == ']') && depth > 0) depth--;
      i += m;
    }
    push_tok(p, t);
  }
  uint32_t col = (uint32_t)(i - line_start + 1);
  push_tok(p, (Tok){TK_NL, line, col, (uint32_t)i, 0, 0, 0, NULL});
  push_tok(p, (Tok){TK_EOF, line, col, (uint32_t)i, 0, 0, 0, NULL});
}
