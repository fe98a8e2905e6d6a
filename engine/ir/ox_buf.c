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
#include <pthread.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ir/ox_gzip.h"
#include "ir/ox_mem.h"

void ox_buf_init(OxBuf *b) { memset(b, 0, sizeof *b); }

void ox_buf_free(OxBuf *b) {
  ox_buf_stream_abort(b);
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

/* plain[c]: c is copied as is inside a quoted string (not a control character, DEL, '"', '\\'
 * or the terminating NUL) */
static const bool plain[256] = {
#define R16(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
  R16(false), R16(false),                                                         /* 0x00-0x1f */
  true, true, false, true, true, true, true, true, true, true, true, true, true, true, true, true, /* '"' */
  R16(true), R16(true),                                                           /* 0x30-0x4f */
  true, true, true, true, true, true, true, true, true, true, true, true, false, true, true, true, /* '\\' */
  R16(true), true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, false, /* DEL */
  R16(true), R16(true), R16(true), R16(true), R16(true), R16(true), R16(true), R16(true), /* 0x80-0xff */
#undef R16
};

void ox_buf_put_quoted(OxBuf *b, const char *s) {
  ox_buf_putc(b, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    /* a run of characters that need no escape is copied at once */
    const unsigned char *q = p;
    while (plain[*q]) q++;
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
bool ox_write_file_atomic_no_link;

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

bool ox_write_all(int fd, const void *data, size_t len) {
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

int ox_scratch_file_beside(const char *path) {
  char *dir;
  const char *base;
  split_path(path, &dir, &base);
  int fd = -1;
#ifdef O_TMPFILE
  if (!ox_write_file_atomic_no_tmpfile) fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
  free(dir);
  if (fd < 0) { /* named for a moment, in the pattern remove_stale_temps clears after a kill */
    size_t pl = strlen(path);
    char *tmp = ox_xcalloc(pl + 16, 1);
    snprintf(tmp, pl + 16, "%s.tmp.XXXXXX", path);
    fd = mkstemp(tmp);
    if (fd >= 0) unlink(tmp);
    free(tmp);
  }
  return fd;
}

/* An atomic write in progress: the temp file (unnamed where O_TMPFILE works, else named and
 * locked), and the writer thread of a streaming buffer with its queue of drained chunks. */
typedef struct Chunk {
  struct Chunk *next;
  char *data;   /* NULL: a range of the file src (ox_buf_append_file) */
  size_t len;
  int src;      /* a dup of the caller's descriptor, closed once copied */
  uint64_t off;
} Chunk;

struct OxAtomicFile {
  char *path, *dir, *tmp;
  int fd;
  bool named;    /* tmp names the file (the fallback); else it is unnamed until the commit */
  mode_t um;
  int failed;    /* errno of the first failed write, 0 if none */
  uint64_t off;  /* bytes written */
  OxGzipWriter *gz; /* a gzip stream (ox_buf_stream_to_gzip): what is written is compressed */
  OxBuf zout;       /* its output, written as it comes */
  /* writer thread (started by the first drained chunk) */
  bool started, stop;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  Chunk *head, *tail;
  uint32_t queued;
};

enum { QUEUE_MAX = 8, QUEUE_WAIT_S = 600 };

static void atomic_free(OxAtomicFile *f) {
  ox_gzip_writer_free(f->gz);
  free(f->zout.data);
  free(f->path);
  free(f->dir);
  free(f->tmp);
  free(f);
}

static OxAtomicFile *atomic_open(const char *path, char *err, size_t errcap) {
  OxAtomicFile *f = ox_xcalloc(1, sizeof *f);
  const char *base;
  f->path = ox_xstrdup(path);
  split_path(path, &f->dir, &base);
  remove_stale_temps(f->dir, base);
  size_t pl = strlen(path);
  f->tmp = ox_xcalloc(pl + 16, 1);
  snprintf(f->tmp, pl + 16, "%s.tmp.XXXXXX", path);
  f->um = umask(0);
  umask(f->um);
  f->fd = -1;
  /* First choice: an unnamed file (O_TMPFILE) that gets a name only once it is complete, so a
   * kill while writing leaves nothing behind (read back if it cannot be linked: O_RDWR). */
#ifdef O_TMPFILE
  if (!ox_write_file_atomic_no_tmpfile) {
    f->fd = open(f->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0666 & ~f->um);
    if (f->fd >= 0 && flock(f->fd, LOCK_EX) != 0) {
      close(f->fd);
      f->fd = -1;
    }
  }
#endif
  if (f->fd < 0) {
    /* Fallback: a named temp file, locked while it is written (a later write removes it if
     * this process dies first). */
    f->fd = mkstemp(f->tmp);
    if (f->fd < 0) {
      if (err) snprintf(err, errcap, "cannot write %s: %s", path, strerror(errno));
      atomic_free(f);
      return NULL;
    }
    f->named = true;
    flock(f->fd, LOCK_EX);
    fchmod(f->fd, 0666 & ~f->um); /* mkstemp creates 0600; give the file the usual permissions */
  }
  return f;
}

/* Writes data (compressed first for a gzip stream; finish ends that stream). */
static void atomic_put(OxAtomicFile *f, const void *data, size_t len, bool finish) {
  if (f->failed) return;
  if (f->gz) {
    f->zout.len = 0;
    if (!ox_gzip_writer_put(f->gz, data, len, finish, &f->zout)) {
      f->failed = EIO;
      return;
    }
    data = f->zout.data;
    len = f->zout.len;
  }
  if (!len) return;
  if (!ox_write_all(f->fd, data, len)) f->failed = errno ? errno : EIO;
  f->off += len;
}

/* Copies len bytes of src from off (within the kernel where it can: copy_file_range; else, or for
 * a gzip stream, read and written a piece at a time). */
static void atomic_put_file(OxAtomicFile *f, int src, uint64_t off, uint64_t len) {
  off_t at = (off_t)off;
  while (!f->gz && !f->failed && len) {
    ssize_t n = copy_file_range(src, &at, f->fd, NULL, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break; /* not supported here (or cut short): the copy below takes the rest */
    len -= (uint64_t)n;
    f->off += (uint64_t)n;
  }
  if (f->failed || !len) return;
  size_t piece = 1 << 20;
  char *buf = ox_xrealloc(NULL, piece);
  while (!f->failed && len) {
    ssize_t r = pread(src, buf, len < piece ? (size_t)len : piece, at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      f->failed = r < 0 ? errno : EIO; /* the source is shorter than it was said to be */
      break;
    }
    atomic_put(f, buf, (size_t)r, false);
    at += r;
    len -= (uint64_t)r;
  }
  free(buf);
}

static void *writer_main(void *arg) {
  OxAtomicFile *f = arg;
  pthread_mutex_lock(&f->mu);
  for (;;) {
    while (!f->head && !f->stop) pthread_cond_wait(&f->cv, &f->mu);
    Chunk *c = f->head;
    if (!c) break; /* stopped with nothing left */
    f->head = c->next;
    if (!f->head) f->tail = NULL;
    pthread_mutex_unlock(&f->mu);
    uint64_t at = f->off;
    if (c->data) atomic_put(f, c->data, c->len, false);
    else atomic_put_file(f, c->src, c->off, c->len);
#ifdef SYNC_FILE_RANGE_WRITE
    /* start the write-back now, so the commit's fsync has little left to wait for */
    if (!f->failed && f->off > at) sync_file_range(f->fd, (off_t)at, (off_t)(f->off - at), SYNC_FILE_RANGE_WRITE);
#else
    (void)at;
#endif
    free(c->data);
    if (!c->data) close(c->src);
    free(c);
    pthread_mutex_lock(&f->mu);
    f->queued--;
    pthread_cond_broadcast(&f->cv);
  }
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

/* Hands a chunk (malloc'ed, its data too) to the writer thread (started on first use); waits
 * while it holds QUEUE_MAX chunks. Without a thread (it could not start) the chunk is written
 * here. */
static void atomic_queue_chunk(OxAtomicFile *f, Chunk *c) {
  if (!f->started) {
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->started = pthread_create(&f->th, NULL, writer_main, f) == 0;
    if (!f->started) {
      pthread_mutex_destroy(&f->mu);
      pthread_cond_destroy(&f->cv);
    }
  }
  bool now = !f->started;
  if (f->started) {
    pthread_mutex_lock(&f->mu);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += QUEUE_WAIT_S;
    while (f->queued >= QUEUE_MAX && !f->failed)
      if (pthread_cond_timedwait(&f->cv, &f->mu, &until) == ETIMEDOUT) {
        f->failed = ETIMEDOUT; /* the writer is stuck (a hung file system): the commit fails */
        break;
      }
    if (!f->failed) {
      if (f->tail) f->tail->next = c;
      else f->head = c;
      f->tail = c;
      f->queued++;
      pthread_cond_broadcast(&f->cv);
      c = NULL;
    }
    pthread_mutex_unlock(&f->mu);
    if (!c) return;
  }
  if (now && c->data) atomic_put(f, c->data, c->len, false);
  else if (now) atomic_put_file(f, c->src, c->off, c->len);
  free(c->data);
  if (!c->data) close(c->src);
  free(c);
}

static void atomic_queue(OxAtomicFile *f, char *data, size_t len) {
  Chunk *c = ox_xcalloc(1, sizeof *c);
  c->data = data;
  c->len = len;
  atomic_queue_chunk(f, c);
}

/* Stops the writer thread once its queue is written (drop: freed unwritten). */
static void atomic_join(OxAtomicFile *f, bool drop) {
  if (!f->started) return;
  pthread_mutex_lock(&f->mu);
  if (drop && !f->failed) f->failed = ECANCELED;
  f->stop = true;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
  pthread_join(f->th, NULL);
  pthread_mutex_destroy(&f->mu);
  pthread_cond_destroy(&f->cv);
  f->started = false;
}

static void atomic_abort(OxAtomicFile *f) {
  atomic_join(f, true);
  if (f->named) unlink(f->tmp);
  close(f->fd);
  atomic_free(f);
}

/* Copies the unnamed file's bytes into a fresh named temp file (where the unnamed one cannot be
 * linked: no /proc). Returns the new descriptor, or -1 with errno. */
static int copy_to_named(OxAtomicFile *f) {
  snprintf(f->tmp, strlen(f->path) + 16, "%s.tmp.XXXXXX", f->path);
  int t = mkstemp(f->tmp);
  if (t < 0) return -1;
  flock(t, LOCK_EX);
  fchmod(t, 0666 & ~f->um);
  char *buf = ox_xrealloc(NULL, 1 << 20);
  bool ok = true;
  for (uint64_t at = 0; ok && at < f->off;) {
    ssize_t r = pread(f->fd, buf, 1 << 20, (off_t)at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO;
      ok = false;
      break;
    }
    ok = ox_write_all(t, buf, (size_t)r);
    at += (uint64_t)r;
  }
  free(buf);
  if (!ok || fsync(t) != 0) {
    int e = errno;
    unlink(f->tmp);
    close(t);
    errno = e;
    return -1;
  }
  return t;
}

/* Writes the last bytes, syncs, names the file and renames it over the destination. Frees f. */
static bool atomic_commit(OxAtomicFile *f, const void *data, size_t len, char *err, size_t errcap) {
  atomic_join(f, false);
  atomic_put(f, data, len, true);
  int saved = f->failed;
  bool ok = !saved;
  if (ok && fsync(f->fd) != 0) saved = errno, ok = false;
  if (ok && ox_write_file_atomic_hook) ox_write_file_atomic_hook();
  if (ok && !f->named) {
    /* linked under a temp name, then renamed over the destination (linkat cannot replace); the
     * flock covers the moment in between */
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", f->fd);
    size_t pl = strlen(f->path);
    for (int attempt = 0; attempt < 100 && !f->named && !ox_write_file_atomic_no_link; attempt++) {
      /* a fresh name from mkstemp's pattern: created, removed, linked (EEXIST: try again) */
      int t = mkstemp(f->tmp);
      if (t < 0) break;
      close(t);
      unlink(f->tmp);
      if (linkat(AT_FDCWD, proc, AT_FDCWD, f->tmp, AT_SYMLINK_FOLLOW) == 0)
        f->named = true;
      else if (errno != EEXIST)
        break;
      else
        snprintf(f->tmp, pl + 16, "%s.tmp.XXXXXX", f->path);
    }
    if (!f->named) { /* no /proc, or a file system without O_TMPFILE links: a named copy */
      int t = copy_to_named(f);
      if (t < 0) {
        saved = errno;
        ok = false;
      } else {
        close(f->fd);
        f->fd = t;
        f->named = true;
        if (ox_write_file_atomic_hook) ox_write_file_atomic_hook();
      }
    }
  }
  if (ok && rename(f->tmp, f->path) != 0) {
    saved = errno;
    ok = false;
  }
  if (!ok) {
    if (err) snprintf(err, errcap, "cannot write %s: %s", f->path, strerror(saved ? saved : EIO));
    if (f->named) unlink(f->tmp);
  }
  close(f->fd); /* the data was fsync'ed before the rename; a failing close cannot lose it */
  atomic_free(f);
  return ok;
}

bool ox_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errcap) {
  OxAtomicFile *f = atomic_open(path, err, errcap);
  return f && atomic_commit(f, data, len, err, errcap);
}

bool ox_buf_stream_to(OxBuf *b, const char *path, char *err, size_t errcap) {
  if (b->sink) ox_buf_stream_abort(b);
  b->sink = atomic_open(path, err, errcap);
  b->drained = 0;
  return b->sink != NULL;
}

bool ox_buf_stream_to_gzip(OxBuf *b, const char *path, int level, char *err, size_t errcap) {
  if (!ox_buf_stream_to(b, path, err, errcap)) return false;
  b->sink->gz = ox_gzip_writer_new(level);
  if (!b->sink->gz) {
    if (err) snprintf(err, errcap, "cannot write %s: gzip: cannot start the compressor", path);
    ox_buf_stream_abort(b);
    return false;
  }
  return true;
}

void ox_buf_drain_slow(OxBuf *b) {
  if (!b->sink || !b->len) return;
  char *full = b->data;
  size_t len = b->len;
  b->drained += len;
  b->data = ox_xrealloc(NULL, b->cap); /* the same size: from the heap the written chunks return to */
  b->data[0] = 0;
  b->len = 0;
  atomic_queue(b->sink, full, len);
}

bool ox_buf_append_file(OxBuf *b, int fd, uint64_t off, uint64_t len) {
  int src = b->sink && len ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
  if (src >= 0) {
    ox_buf_drain_slow(b); /* what came before goes first */
    Chunk *c = ox_xcalloc(1, sizeof *c);
    c->src = src;
    c->off = off;
    c->len = (size_t)len;
    b->drained += len;
    atomic_queue_chunk(b->sink, c);
    return true;
  }
  /* not streaming (or no descriptor to spare): read into b */
  for (uint64_t at = off; at < off + len;) {
    size_t n = off + len - at < OX_BUF_DRAIN_BYTES ? (size_t)(off + len - at) : OX_BUF_DRAIN_BYTES;
    ox_buf_reserve(b, n);
    ssize_t r = pread(fd, b->data + b->len, n, (off_t)at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO;
      return false;
    }
    b->len += (size_t)r;
    b->data[b->len] = 0;
    ox_buf_drain(b);
    at += (uint64_t)r;
  }
  return true;
}

bool ox_buf_stream_commit(OxBuf *b, char *err, size_t errcap) {
  OxAtomicFile *f = b->sink;
  if (!f) {
    if (err) snprintf(err, errcap, "internal error: the buffer is not streaming to a file");
    return false;
  }
  b->sink = NULL;
  bool ok = atomic_commit(f, b->data ? b->data : "", b->len, err, errcap);
  b->drained += b->len;
  b->len = 0;
  if (b->data) b->data[0] = 0;
  return ok;
}

void ox_buf_stream_abort(OxBuf *b) {
  if (!b->sink) return;
  atomic_abort(b->sink);
  b->sink = NULL;
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
        if (err) snprintf(err, errcap, "%s: input larger than %zu bytes, refused (OPTIMUS_MAX_INPUT_MB raises the cap)", name, max_bytes);
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
        if (err) snprintf(err, errcap, "%s: input larger than %zu bytes, refused (OPTIMUS_MAX_INPUT_MB raises the cap)", name, max_bytes);
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
      if (err) snprintf(err, errcap, "%s: input larger than %zu bytes, refused (OPTIMUS_MAX_INPUT_MB raises the cap)", name, max_bytes);
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

size_t ox_input_cap(size_t def) {
  const char *e = getenv("OPTIMUS_MAX_INPUT_MB");
  if (!e || !*e) return def;
  char *end;
  unsigned long long mb = strtoull(e, &end, 10);
  if (*end || mb == 0 || mb > (1ull << 22) || e[0] == '-') return def;
  return (size_t)mb << 20;
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

const char *ox_fmt_duration(double seconds, char *buf, size_t cap) {
  if (!(seconds > 0)) seconds = 0; /* NaN too */
  if (seconds >= 1) snprintf(buf, cap, "%.1f s", seconds);
  else if (seconds >= 0.01) snprintf(buf, cap, "%.0f ms", seconds * 1e3);
  else snprintf(buf, cap, "%.1f ms", seconds * 1e3);
  return buf;
}

/* ------------------------------------------------------------------ mapped inputs */

/* Large regular files are mapped (MAP_PRIVATE) instead of copied: on our VMs every fresh 4 KiB
 * page of a read buffer costs a fault through the hypervisor (113k of them, 1.4 s of system
 * time for a 463 MB dump of real weights), while the page cache's pages come mapped 16 at a
 * time. The mappings are kept in a small table so ox_text_free knows them from heap blocks. */
bool ox_map_inputs = false;

typedef struct {
  char *p;
  size_t len;
  char *path; /* for ox_mapped_describe */
} Mapped;
static Mapped *mapped;
static size_t n_mapped, cap_mapped;
static pthread_mutex_t mapped_lock = PTHREAD_MUTEX_INITIALIZER;

enum { MAP_MIN_BYTES = 1 << 20 };

char *ox_map_file(const char *path, size_t *len_out, size_t max_bytes, char *err, size_t errcap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (err) snprintf(err, errcap, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  long page = sysconf(_SC_PAGESIZE);
  /* the text must end in a NUL: the zeroed rest of the last page is it, so a size that leaves
   * less than 64 bytes of that page is read instead (a read buffer has room past the NUL, and a
   * scanner that looks a byte or two ahead must not reach an unmapped page), as is anything
   * small, a pipe or a device */
  if (ox_map_inputs && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= MAP_MIN_BYTES && page > 0 &&
      st.st_size % page != 0 && page - st.st_size % page >= 64 &&
      (!max_bytes || (uint64_t)st.st_size <= max_bytes) && (uint64_t)st.st_size < SIZE_MAX / 2) {
    size_t len = (size_t)st.st_size;
    char *p = mmap(NULL, len + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      close(fd);
      /* written, not trusted: the last page becomes our own copy, so a file that grows while it
       * is read (appended to) cannot take the terminator away */
      p[len] = 0;
      pthread_mutex_lock(&mapped_lock);
      if (n_mapped == cap_mapped) {
        cap_mapped = cap_mapped ? cap_mapped * 2 : 8;
        mapped = ox_xrealloc(mapped, cap_mapped * sizeof *mapped);
      }
      mapped[n_mapped++] = (Mapped){p, len + 1, ox_xstrdup(path)};
      pthread_mutex_unlock(&mapped_lock);
      if (len_out) *len_out = len;
      return p;
    }
  }
  char *buf = read_fd(fd, path, len_out, max_bytes, err, errcap);
  close(fd);
  return buf;
}

void ox_text_free(char *text) {
  if (!text) return;
  pthread_mutex_lock(&mapped_lock);
  for (size_t i = 0; i < n_mapped; i++)
    if (mapped[i].p == text) {
      size_t len = mapped[i].len;
      free(mapped[i].path);
      mapped[i] = mapped[--n_mapped];
      pthread_mutex_unlock(&mapped_lock);
      munmap(text, len);
      return;
    }
  pthread_mutex_unlock(&mapped_lock);
  free(text);
}

bool ox_text_is_mapped(const char *text) {
  bool found = false;
  pthread_mutex_lock(&mapped_lock);
  for (size_t i = 0; i < n_mapped && !found; i++) found = mapped[i].p == text;
  pthread_mutex_unlock(&mapped_lock);
  return found;
}

size_t ox_mapped_describe(char *buf, size_t cap) {
  /* called from a SIGBUS handler: no lock, no allocation, no stdio */
  size_t n = 0;
  for (size_t i = 0; i < n_mapped && n + 1 < cap; i++) {
    const char *q = mapped[i].path ? mapped[i].path : "?";
    if (i && n + 2 < cap) buf[n++] = ',', buf[n++] = ' ';
    for (; *q && n + 1 < cap; q++) buf[n++] = *q;
  }
  if (cap) buf[n < cap ? n : cap - 1] = 0;
  return n;
}
