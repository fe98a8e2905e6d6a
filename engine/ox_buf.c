/* ox_buf.c - growable buffer, Python-style number formatting, atomic file writes, and text
 * clipped to a fixed-size slot at a word or item boundary (ox_text_clip).
 *
 * ox_write_file_atomic writes to "DEST.tmp.XXXXXX" in the destination directory (so the
 * rename cannot cross file systems), fsyncs, then renames; on any failure the temp file is
 * removed and the destination is untouched.
 */
#include "ox_buf.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ox_mem.h"

void ox_buf_init(OxBuf *b) { memset(b, 0, sizeof *b); }

void ox_buf_free(OxBuf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

void ox_buf_reserve(OxBuf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  b->data = ox_xrealloc(b->data, cap);
  b->cap = cap;
}

void ox_buf_append(OxBuf *b, const char *s, size_t n) {
  ox_buf_reserve(b, n);
  if (n) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void ox_buf_puts(OxBuf *b, const char *s) { ox_buf_append(b, s, strlen(s)); }

void ox_buf_putc(OxBuf *b, char c) { ox_buf_append(b, &c, 1); }

void ox_buf_printf(OxBuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tmp[256];
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) {
    va_end(ap2);
    return;
  }
  if ((size_t)n < sizeof tmp) {
    ox_buf_append(b, tmp, (size_t)n);
  } else {
    ox_buf_reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
    b->len += (size_t)n;
  }
  va_end(ap2);
}

void ox_buf_put_quoted(OxBuf *b, const char *s) {
  ox_buf_putc(b, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': ox_buf_puts(b, "\\\""); break;
    case '\\': ox_buf_puts(b, "\\\\"); break;
    case '\n': ox_buf_puts(b, "\\n"); break;
    case '\r': ox_buf_puts(b, "\\r"); break;
    case '\t': ox_buf_puts(b, "\\t"); break;
    default:
      if (*p < 0x20 || *p == 0x7f)
        ox_buf_printf(b, "\\u%04x", *p);
      else
        ox_buf_putc(b, (char)*p);
    }
  }
  ox_buf_putc(b, '"');
}

/* Python's float repr: the shortest string that round-trips, with ".0" for integral
 * values and exponent form outside [1e-4, 1e16). */
void ox_buf_put_pyfloat(OxBuf *b, double f) {
  if (isnan(f)) {
    ox_buf_puts(b, "nan");
    return;
  }
  if (isinf(f)) {
    ox_buf_puts(b, f < 0 ? "-inf" : "inf");
    return;
  }
  char tmp[64];
  int prec;
  for (prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
    if (strtod(tmp, NULL) == f) break;
  }
  /* tmp is d.ddde[+-]XX with prec significant digits */
  char digits[32];
  int nd = 0;
  const char *p = tmp;
  bool neg = false;
  if (*p == '-') {
    neg = true;
    p++;
  }
  for (; *p && *p != 'e'; p++)
    if (*p != '.') digits[nd++] = *p;
  int exp10 = atoi(p + 1);
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = 0;
  char out[64];
  int o = 0;
  if (neg) out[o++] = '-';
  if (exp10 >= 16 || exp10 < -4) {
    out[o++] = digits[0];
    if (nd > 1) {
      out[o++] = '.';
      for (int i = 1; i < nd; i++) out[o++] = digits[i];
    }
    o += snprintf(out + o, sizeof out - (size_t)o, "e%c%02d", exp10 < 0 ? '-' : '+',
                  exp10 < 0 ? -exp10 : exp10);
  } else if (exp10 >= 0) {
    for (int i = 0; i <= exp10; i++) out[o++] = i < nd ? digits[i] : '0';
    out[o++] = '.';
    if (nd > exp10 + 1)
      for (int i = exp10 + 1; i < nd; i++) out[o++] = digits[i];
    else
      out[o++] = '0';
  } else {
    out[o++] = '0';
    out[o++] = '.';
    for (int i = 0; i < -exp10 - 1; i++) out[o++] = '0';
    for (int i = 0; i < nd; i++) out[o++] = digits[i];
  }
  out[o] = 0;
  ox_buf_puts(b, out);
}

bool ox_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errcap) {
  size_t pl = strlen(path);
  char *tmp = ox_xcalloc(pl + 16, 1);
  snprintf(tmp, pl + 16, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    if (err) snprintf(err, errcap, "cannot write %s: %s", path, strerror(errno));
    free(tmp);
    return false;
  }
  const char *p = data;
  size_t left = len;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (err) snprintf(err, errcap, "cannot write %s: %s", path, strerror(errno));
      close(fd);
      unlink(tmp);
      free(tmp);
      return false;
    }
    p += w;
    left -= (size_t)w;
  }
  /* mkstemp creates 0600; give the file the usual permissions (umask applies). */
  mode_t um = umask(0);
  umask(um);
  fchmod(fd, 0666 & ~um);
  if (fsync(fd) != 0 || close(fd) != 0) {
    if (err) snprintf(err, errcap, "cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
    free(tmp);
    return false;
  }
  if (rename(tmp, path) != 0) {
    if (err) snprintf(err, errcap, "cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
    free(tmp);
    return false;
  }
  free(tmp);
  return true;
}

char *ox_read_file(const char *path, size_t *len_out, size_t max_bytes, char *err, size_t errcap) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (err) snprintf(err, errcap, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    if (err) snprintf(err, errcap, "cannot read %s: is a directory", path);
    fclose(f);
    return NULL;
  }
  size_t cap = 65536, len = 0;
  char *buf = ox_xrealloc(NULL, cap);
  for (;;) {
    if (len + 1 >= cap) {
      cap *= 2;
      buf = ox_xrealloc(buf, cap);
    }
    size_t r = fread(buf + len, 1, cap - len - 1, f);
    len += r;
    if (max_bytes && len > max_bytes) {
      if (err) snprintf(err, errcap, "%s: input larger than %zu bytes, refused", path, max_bytes);
      free(buf);
      fclose(f);
      return NULL;
    }
    if (r == 0) break;
  }
  if (ferror(f)) {
    if (err) snprintf(err, errcap, "cannot read %s: %s", path, strerror(errno));
    free(buf);
    fclose(f);
    return NULL;
  }
  fclose(f);
  buf[len] = 0;
  if (len_out) *len_out = len;
  return buf;
}

/* ------------------------------------------------------------------ bounded text */

/* Text may be cut after a space, a comma or a semicolon: what is kept ends a word or an item. */
static bool clip_boundary(const char *s, size_t i) {
  char a = s[i - 1];
  return a == ' ' || a == ',' || a == ';';
}

size_t ox_text_clip_cut(char *buf, size_t cap, size_t have) {
  static const char ell[] = "\xe2\x80\xa6"; /* U+2026 */
  if (!cap) return 0;
  if (cap < sizeof ell + 1) { /* no room for an ellipsis: whole characters only */
    size_t n = have < cap - 1 ? have : cap - 1;
    while (n && ((unsigned char)buf[n] & 0xc0) == 0x80) n--;
    buf[n] = 0;
    return n;
  }
  size_t limit = cap - sizeof ell; /* bytes of text that fit before the ellipsis and the NUL */
  if (limit > have) limit = have;
  size_t cut = 0;
  for (size_t i = limit; i > limit / 2; i--)
    if (clip_boundary(buf, i)) {
      cut = i;
      break;
    }
  if (!cut) { /* one word longer than half the slot: cut it, but not inside a character */
    cut = limit;
    while (cut && ((unsigned char)buf[cut] & 0xc0) == 0x80) cut--;
  }
  memcpy(buf + cut, ell, sizeof ell);
  return cut + sizeof ell - 1;
}

size_t ox_text_clip(char *dst, size_t cap, const char *src, size_t len) {
  if (!cap) return 0;
  if (len < cap) {
    memmove(dst, src, len);
    dst[len] = 0;
    return len;
  }
  size_t have = cap - 1;
  memmove(dst, src, have);
  dst[have] = 0;
  return ox_text_clip_cut(dst, cap, have);
}
