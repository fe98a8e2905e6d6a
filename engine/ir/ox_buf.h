/* ox_buf.h - a growable byte buffer for writers, and atomic file writes.
 *
 * Writers build their output in an OxBuf, then ox_write_file_atomic writes it to a temp file in
 * the destination's directory, fsyncs and renames it over the destination, so a failed or
 * interrupted write never leaves a truncated file behind. A large output can instead stream
 * (ox_buf_stream_to): the buffer is bound to such a temp file, a writer calls ox_buf_drain at
 * points where what it wrote is final, and every megabyte is handed to a thread that writes it
 * while the writer goes on; ox_buf_stream_commit syncs and renames, with the same guarantees.
 */
#ifndef OX_BUF_H
#define OX_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct OxAtomicFile OxAtomicFile;

typedef struct OxBuf {
  char *data; /* always NUL-terminated when len > 0 or after any append */
  size_t len, cap;
  OxAtomicFile *sink; /* streaming (ox_buf_stream_to): where ox_buf_drain hands the bytes */
  uint64_t drained;   /* bytes handed to the sink so far (data holds what came after) */
} OxBuf;

void ox_buf_init(OxBuf *b);
void ox_buf_free(OxBuf *b);
/* Grows the buffer for extra more bytes and the NUL (the slow path of ox_buf_reserve). */
void ox_buf_grow(OxBuf *b, size_t extra);

/* The appends are inline: writers call them per character and per token (a 100k-node trace is
 * tens of millions of calls), and the common case is a capacity check and a copy. */
static inline void ox_buf_reserve(OxBuf *b, size_t extra) {
  if (b->len + extra + 1 > b->cap) ox_buf_grow(b, extra);
}
static inline void ox_buf_append(OxBuf *b, const char *s, size_t n) {
  ox_buf_reserve(b, n);
  if (n) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}
static inline void ox_buf_puts(OxBuf *b, const char *s) { ox_buf_append(b, s, strlen(s)); }
static inline void ox_buf_putc(OxBuf *b, char c) {
  ox_buf_reserve(b, 1);
  b->data[b->len++] = c;
  b->data[b->len] = 0;
}
/* The decimal text of v in buf (room for 21 bytes), NUL-terminated, as printf's "%lld" ("%llu")
 * writes it; returns its length. The writers' integers go through this, not printf (printf was ~5 % of
 * an optimize run at 100k nodes, most of it for numbers). */
static inline int ox_fmt_u64(char *buf, uint64_t u) {
  static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";
  char t[20], *p = t + sizeof t; /* written from the end, two digits at a time */
  for (; u >= 100; u /= 100) {
    p -= 2;
    memcpy(p, pairs + 2 * (u % 100), 2);
  }
  if (u >= 10) {
    p -= 2;
    memcpy(p, pairs + 2 * u, 2);
  } else {
    *--p = (char)('0' + u);
  }
  int n = (int)(t + sizeof t - p);
  memcpy(buf, p, (size_t)n);
  buf[n] = 0;
  return n;
}
static inline int ox_fmt_i64(char *buf, int64_t v) {
  if (v >= 0) return ox_fmt_u64(buf, (uint64_t)v);
  buf[0] = '-';
  return 1 + ox_fmt_u64(buf + 1, (uint64_t)0 - (uint64_t)v);
}
static inline void ox_buf_put_i64(OxBuf *b, int64_t v) {
  ox_buf_reserve(b, 21);
  b->len += (size_t)ox_fmt_i64(b->data + b->len, v);
}
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void ox_buf_printf(OxBuf *b, const char *fmt, ...);
/* Appends s as a JSON/Python-style double-quoted string with escapes. */
void ox_buf_put_quoted(OxBuf *b, const char *s);
/* Appends a double the way Python's repr prints it ("1e-05", "0.1", "inf", "-inf", "nan", "1.0"). */
void ox_buf_put_pyfloat(OxBuf *b, double f);

/* A time for people: "0.4 ms" under 10 ms, "108 ms" under a second, "2.3 s" (the CLI's summaries
 * and the debugger's timeline headers). Returns buf. */
const char *ox_fmt_duration(double seconds, char *buf, size_t cap);

/* Bounded text for fixed-size slots (reason arguments, messages). ox_text_clip copies
 * src[0..len) into dst (capacity cap, always NUL-terminated); text that does not fit is cut at
 * the last word or list-item boundary (after a space, ',' or ';') that leaves room for "…" and
 * ends with "…" ("a, b, …", "pattern wants …"), so a name or a word is never cut in the middle (only a single word longer
 * than half the slot is, at a UTF-8 character boundary). Returns the length written.
 * ox_text_clip_cut does the same in place for buf, which holds the first `have` bytes of a
 * longer text. */
size_t ox_text_clip(char *dst, size_t cap, const char *src, size_t len);
size_t ox_text_clip_cut(char *buf, size_t cap, size_t have);

/* Writes data atomically (temp file + fsync + rename). On failure returns false and
 * fills err (if non-NULL) with a message naming the path; the destination is untouched. */
/* Writes data atomically (unnamed temp file + fsync + link + rename; a locked named temp file
 * where that is not available). On failure returns false and fills err (if non-NULL) with a
 * message naming the path; the destination is untouched. A kill leaves no temp file behind
 * (or, in the fallback, one that the next write to the same path removes). */
bool ox_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errcap);
/* Streaming (see the top): binds the empty buffer b to an atomic write of path (the temp file is
 * opened now: an unwritable destination fails here, err names it). ox_buf_drain, called where
 * the text written so far is final, hands it over once at least OX_BUF_DRAIN_BYTES are held;
 * ox_buf_stream_commit writes the rest, waits for the writer thread, syncs and renames (false
 * with err on any failure, the destination untouched); ox_buf_stream_abort (also done by
 * ox_buf_free of a bound buffer) drops it all and leaves nothing. The writer thread holds at
 * most 8 drained chunks; a wait for room gives up after 10 minutes (the commit then fails). */
enum { OX_BUF_DRAIN_BYTES = 1 << 20 };
bool ox_buf_stream_to(OxBuf *b, const char *path, char *err, size_t errcap);
/* The same, the file being a gzip stream of what is written (compressed on the writer thread;
 * level 1-9), the stream ox_gzip_compress would make of the whole text. */
bool ox_buf_stream_to_gzip(OxBuf *b, const char *path, int level, char *err, size_t errcap);
void ox_buf_drain_slow(OxBuf *b);
static inline void ox_buf_drain(OxBuf *b) {
  if (b->sink && b->len >= OX_BUF_DRAIN_BYTES) ox_buf_drain_slow(b);
}
/* Appends len bytes of the file fd from offset off, after what b holds. A streaming buffer
 * hands the range to its writer thread, which copies it within the kernel where it can
 * (copy_file_range: no copy through memory) in order with the rest; fd must keep those bytes
 * until the commit (it is duplicated, so the caller may close it). Otherwise they are read into
 * b. false (errno set) when they cannot be read now; a failure of the writer's copy fails the
 * commit. */
bool ox_buf_append_file(OxBuf *b, int fd, uint64_t off, uint64_t len);
/* An unnamed scratch file beside path (in its directory: the file system the output goes to),
 * open for reading and writing and gone when closed; -1 when none can be made. For a writer that
 * must hold a large part of an output until its head is known (the live trace writer). */
int ox_scratch_file_beside(const char *path);
/* write(2) until all of data is written (EINTR retried); false on an error (errno says which). */
bool ox_write_all(int fd, const void *data, size_t len);
bool ox_buf_stream_commit(OxBuf *b, char *err, size_t errcap);
void ox_buf_stream_abort(OxBuf *b);
/* Fault injection for tests: called after the data is written and synced, before the file is
 * renamed into place (NULL in normal use); no_tmpfile forces the named-temp-file fallback. */
extern void (*ox_write_file_atomic_hook)(void);
extern bool ox_write_file_atomic_no_tmpfile;
/* For tests: the unnamed temp file is treated as unlinkable (no /proc), so its bytes are copied
 * to a named temp file at the commit. */
extern bool ox_write_file_atomic_no_link;

/* Reads a whole file (binary-safe, NUL-terminated). Returns NULL and fills err on failure.
 * max_bytes = 0 means no limit; a larger input is refused with a message as soon as it passes
 * the cap (never more than max_bytes + 1 bytes held: /dev/zero, endless pipes). */
char *ox_read_file(const char *path, size_t *len_out, size_t max_bytes, char *err, size_t errcap);
/* The cap on an input's size: def (512 MiB for dumps, 1 GiB for traces), or OPTIMUS_MAX_INPUT_MB
 * mebibytes when that is set to a whole number from 1 to 4194304 (anything else is ignored): a
 * model exported with its real weights can pass 512 MiB. */
size_t ox_input_cap(size_t def);
/* The same for an open descriptor (standard input); name is used in messages. */
char *ox_read_stream(int fd, const char *name, size_t *len_out, size_t max_bytes, char *err, size_t errcap);
/* ox_read_file for the big inputs (dumps, traces, shapes files): when ox_map_inputs is set, a
 * regular file of 1 MiB or more that leaves 64 bytes or more of its last page free is mapped
 * copy-on-write instead of read (no copy, no fresh page per 4 KiB); anything else is read.
 * Either way the text ends in a NUL (written into a private copy of the last page: a file
 * appended to meanwhile keeps it) and is released with ox_text_free. A mapped file that
 * another program truncates while it is mapped raises SIGBUS on the next touch of the lost
 * pages: a program that sets ox_map_inputs catches SIGBUS (the CLI does; the debugger reads). */
extern bool ox_map_inputs;
char *ox_map_file(const char *path, size_t *len_out, size_t max_bytes, char *err, size_t errcap);
/* Releases a text of ox_map_file (unmapped) or of ox_read_file / ox_read_stream (freed). */
void ox_text_free(char *text);
bool ox_text_is_mapped(const char *text);
/* The paths of the files mapped now, ", "-separated, into buf (for a SIGBUS handler: it takes
 * no lock and allocates nothing). */
size_t ox_mapped_describe(char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
