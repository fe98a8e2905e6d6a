/* ox_buf.c - growable buffer, Python-style number formatting, atomic file writes, bounded reads,
 * and text clipped to a fixed-size slot at a word or item boundary (ox_text_clip).
 *
 * ox_write_file_atomic writes an unnamed file (O_TMPFILE) in the destination directory (so the
 * rename cannot cross file systems), fsyncs, links it as "DEST.tmp.XXXXXX" and renames that over
 * the destination: a kill while writing leaves nothing. Where O_TMPFILE or /proc is missing it
 * writes a named "DEST.tmp.XXXXXX" locked with flock; every write first removes the unlocked
 * leftovers of that pattern (a killed writer's). On any failure the temp file is removed and the
 * destination is untouched.
 *
 * ox_read_file / ox_read_stream never hold more than the cap + 1 bytes: an input over it is
 * refused while reading (a regular file before reading).
 */
#include "ir/ox_buf.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ir/ox_mem.h"

void ox_buf_init(OxBuf *b) { memset(b, 0, sizeof *b); }

void ox_buf_free(OxBuf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

void ox_buf_grow(OxBuf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  b->data = ox_xrealloc(b->data, cap);
  b->cap = cap;
}

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
    /* a run of characters that need no escape is copied at once */
    const unsigned char *q = p;
    while (*q >= 0x20 && *q != 0x7f && *q != '"' && *q != '\\') q++;
    if (q != p) {
      ox_buf_append(b, (const char *)p, (size_t)(q - p));
      p = q;
      if (!*p) break;
    }
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
  /* The fewest significant digits that read back as f. A double whose shortest such text has
   * k <= 15 digits is within half a unit of the 15th digit of it, so printed with 15 digits
   * it is that text and zeros (stripped below): 15 is tried first, then 16 and 17 (always
   * enough), at most three conversions instead of up to seventeen. Subnormals (and 0) have
   * fewer digits of precision: they are searched from 1. */
  char tmp[64];
  for (int prec = fabs(f) < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
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

/* ------------------------------------------------------------------ atomic writes */

void (*ox_write_file_atomic_hook)(void);
bool ox_write_file_atomic_no_tmpfile;

/* The directory part of path ("." when it has none) and its base name. */
static void split_path(const char *path, char **dir, const char **base) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    *dir = ox_xstrdup(".");
    *base = path;
  } else {
    size_t n = (size_t)(slash - path);
    *dir = ox_xcalloc(n + 2, 1);
    memcpy(*dir, path, n ? n : 1); /* "/x" -> "/" */
    *base = slash + 1;
  }
}

/* Removes temp files a killed writer of `base` left in dir: names "BASE.tmp.XXXXXX" (mkstemp's
 * six characters), regular files, not locked (every writer holds flock on its temp file until
 * the rename, and the kernel drops the lock of a dead process), and not modified in the last 5
 * seconds (the moment between a writer's mkstemp and its flock). */
static void remove_stale_temps(const char *dir, const char *base) {
  DIR *d = opendir(dir);
  if (!d) return;
  size_t bl = strlen(base);
  time_t now = time(NULL);
  for (struct dirent *e; (e = readdir(d));) {
    const char *n = e->d_name;
    if (strncmp(n, base, bl) != 0 || strncmp(n + bl, ".tmp.", 5) != 0 || strlen(n + bl + 5) != 6) continue;
    int fd = openat(dirfd(d), n, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime + 5 < now && flock(fd, LOCK_EX | LOCK_NB) == 0)
      unlinkat(dirfd(d), n, 0);
    close(fd); /* drops the lock */
  }
  closedir(d);
}

static bool write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    len -= (size_t)w;
  }
  return true;
}

bool ox_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errcap) {
  char *dir;
  const char *base;
  split_path(path, &dir, &base);
  remove_stale_temps(dir, base);
  size_t pl = strlen(path);
  char *tmp = ox_xcalloc(pl + 16, 1);
  snprintf(tmp, pl + 16, "%s.tmp.XXXXXX", path);
  mode_t um = umask(0);
  umask(um);
  /* First choice: an unnamed file (O_TMPFILE) that gets a name only once it is complete, so a
   * kill while writing leaves nothing behind. It is linked under a temp name, then renamed over
   * the destination (linkat cannot replace); the flock covers the moment in between. */
  bool named = false;
  int fd = -1;
#ifdef O_TMPFILE
  if (!ox_write_file_atomic_no_tmpfile) fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666 & ~um);
#endif
  bool ok = fd >= 0 && flock(fd, LOCK_EX) == 0 && write_all(fd, data, len) && fsync(fd) == 0;
  if (ok && ox_write_file_atomic_hook) ox_write_file_atomic_hook();
  if (ok) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    for (int attempt = 0; attempt < 100 && !named; attempt++) {
      /* a fresh name from mkstemp's pattern: created, removed, linked (EEXIST: try again) */
      int t = mkstemp(tmp);
      if (t < 0) break;
      close(t);
      unlink(tmp);
      if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0)
        named = true;
      else if (errno != EEXIST)
        break;
      else
        snprintf(tmp, pl + 16, "%s.tmp.XXXXXX", path);
    }
    if (!named) ok = false; /* no /proc, or a file system without O_TMPFILE links: the fallback */
  }
  if (!ok) {
    if (fd >= 0) close(fd);
    /* Fallback: a named temp file, locked while it is written (a later write removes it if
     * this process dies first). */
    snprintf(tmp, pl + 16, "%s.tmp.XXXXXX", path);
    fd = mkstemp(tmp);
    if (fd < 0) {
      if (err) snprintf(err, errcap, "cannot write %s: %s", path, strerror(errno));
      free(tmp);
      free(dir);
      return false;
    }
    named = true;
    flock(fd, LOCK_EX);
    fchmod(fd, 0666 & ~um); /* mkstemp creates 0600; give the file the usual permissions */
    ok = write_all(fd, data, len) && fsync(fd) == 0;
    if (ok && ox_write_file_atomic_hook) ox_write_file_atomic_hook();
  }
  int saved = errno;
  if (ok && rename(tmp, path) != 0) {
    saved = errno;
    ok = false;
  }
  if (!ok) {
    if (err) snprintf(err, errcap, "cannot write %s: %s", path, strerror(saved));
    if (named) unlink(tmp);
  }
  if (close(fd) != 0 && ok) {
    /* the data was fsync'ed before the rename; a failing close cannot lose it */
  }
  free(tmp);
  free(dir);
  return ok;
}

/* Reads fd to its end, holding at most max_bytes + 1 bytes: a larger input (a huge file,
 * /dev/zero, an endless pipe) is refused as soon as it passes the cap. A regular file larger
 * than the cap is refused before reading. */
static char *read_fd(int fd, const char *name, size_t *len_out, size_t max_bytes, char *err, size_t errcap) {
  struct stat st;
  size_t cap = 65536;
  if (fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      if (err) snprintf(err, errcap, "cannot read %s: is a directory", name);
      return NULL;
    }
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
      if (max_bytes && (uint64_t)st.st_size > max_bytes) {
        if (err) snprintf(err, errcap, "%s: input larger than %zu bytes, refused", name, max_bytes);
        return NULL;
      }
      cap = (size_t)st.st_size + 2; /* + 1 to notice a file that grew while read */
    }
  }
  if (max_bytes && cap > max_bytes + 2) cap = max_bytes + 2;
  size_t len = 0;
  char *buf = ox_xrealloc(NULL, cap);
  ox_mem_hint_huge(buf, cap);
  for (;;) {
    if (len + 1 >= cap) {
      size_t next = cap * 2;
      if (max_bytes && next > max_bytes + 2) next = max_bytes + 2;
      if (next <= cap) { /* the buffer holds max_bytes + 1: over the cap */
        if (err) snprintf(err, errcap, "%s: input larger than %zu bytes, refused", name, max_bytes);
        free(buf);
        return NULL;
      }
      buf = ox_xrealloc(buf, next);
      cap = next;
    }
    ssize_t r = read(fd, buf + len, cap - len - 1);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (err) snprintf(err, errcap, "cannot read %s: %s", name, strerror(errno));
      free(buf);
      return NULL;
    }
    if (r == 0) break;
    len += (size_t)r;
    if (max_bytes && len > max_bytes) {
      if (err) snprintf(err, errcap, "%s: input larger than %zu bytes, refused", name, max_bytes);
      free(buf);
      return NULL;
    }
  }
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

char *ox_read_file(const char *path, size_t *len_out, size_t max_bytes, char *err, size_t errcap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (err) snprintf(err, errcap, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  char *buf = read_fd(fd, path, len_out, max_bytes, err, errcap);
  close(fd);
  return buf;
}

char *ox_read_stream(int fd, const char *name, size_t *len_out, size_t max_bytes, char *err, size_t errcap) {
  return read_fd(fd, name, len_out, max_bytes, err, errcap);
}
