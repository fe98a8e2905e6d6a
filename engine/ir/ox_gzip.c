/* ox_gzip.c - gzip streams in memory through zlib (see ox_gzip.h). */
#include "ir/ox_gzip.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ir/ox_mem.h"

bool ox_gzip_is(const char *data, size_t len) {
  return len >= 2 && (unsigned char)data[0] == 0x1f && (unsigned char)data[1] == 0x8b;
}

bool ox_gzip_wanted(const char *path) {
  size_t n = path ? strlen(path) : 0;
  return n > 3 && strcmp(path + n - 3, ".gz") == 0;
}

enum { CHUNK = 1u << 30 }; /* zlib counts in uInt: feed and drain at most this much per call */

bool ox_gzip_compress(const char *data, size_t len, int level, OxBuf *out, char *err, size_t errcap) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (level < 1 || level > 9) level = 1;
  /* windowBits 15 + 16: a gzip header and trailer around the deflate stream */
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    if (err) snprintf(err, errcap, "gzip: cannot start the compressor");
    return false;
  }
  size_t start = out->len, left = len;
  const unsigned char *in = (const unsigned char *)data;
  int rc;
  do {
    size_t step = left < CHUNK ? left : CHUNK;
    z.next_in = (unsigned char *)(uintptr_t)in;
    z.avail_in = (uInt)step;
    in += step;
    left -= step;
    int flush = left ? Z_NO_FLUSH : Z_FINISH;
    do {
      size_t room = deflateBound(&z, z.avail_in) + 64;
      if (room > CHUNK) room = CHUNK;
      ox_buf_grow(out, room);
      z.next_out = (unsigned char *)out->data + out->len;
      z.avail_out = (uInt)room;
      rc = deflate(&z, flush);
      out->len += room - z.avail_out;
    } while (rc == Z_OK && (z.avail_in || (flush == Z_FINISH && rc != Z_STREAM_END)));
  } while (left && rc == Z_OK);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    out->len = start;
    if (out->data) out->data[start] = 0;
    if (err) snprintf(err, errcap, "gzip: compression failed (zlib %d)", rc);
    return false;
  }
  out->data[out->len] = 0;
  return true;
}

struct OxGzipWriter {
  z_stream z;
};

OxGzipWriter *ox_gzip_writer_new(int level) {
  OxGzipWriter *w = ox_xcalloc(1, sizeof *w);
  if (level < 1 || level > 9) level = 1;
  if (deflateInit2(&w->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    free(w);
    return NULL;
  }
  return w;
}

bool ox_gzip_writer_put(OxGzipWriter *w, const void *data, size_t len, bool finish, OxBuf *out) {
  const unsigned char *in = data;
  int rc = Z_OK;
  do {
    size_t step = len < CHUNK ? len : CHUNK;
    w->z.next_in = (unsigned char *)(uintptr_t)in;
    w->z.avail_in = (uInt)step;
    in += step;
    len -= step;
    int flush = len || !finish ? Z_NO_FLUSH : Z_FINISH;
    do {
      size_t room = deflateBound(&w->z, w->z.avail_in) + 64;
      if (room > CHUNK) room = CHUNK;
      ox_buf_grow(out, room);
      w->z.next_out = (unsigned char *)out->data + out->len;
      w->z.avail_out = (uInt)room;
      rc = deflate(&w->z, flush);
      out->len += room - w->z.avail_out;
    } while (rc == Z_OK && (w->z.avail_in || (flush == Z_FINISH && rc != Z_STREAM_END)));
  } while (len && rc == Z_OK);
  if (out->data) out->data[out->len] = 0;
  return finish ? rc == Z_STREAM_END : rc == Z_OK || rc == Z_BUF_ERROR;
}

void ox_gzip_writer_free(OxGzipWriter *w) {
  if (!w) return;
  deflateEnd(&w->z);
  free(w);
}

char *ox_gzip_decompress(const char *data, size_t len, size_t max_out, size_t *out_len, char *err, size_t errcap) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 16) != Z_OK) { /* gzip only */
    if (err) snprintf(err, errcap, "gzip: cannot start the decompressor");
    return NULL;
  }
  size_t cap = len < ((size_t)1 << 24) ? len * 4 + 4096 : len * 2, n = 0;
  if (max_out && cap > max_out + 1) cap = max_out + 1;
  char *buf = ox_xrealloc(NULL, cap + 1);
  const unsigned char *in = (const unsigned char *)data;
  size_t left = len;
  const char *why = NULL;
  for (;;) {
    if (!z.avail_in && left) {
      size_t step = left < CHUNK ? left : CHUNK;
      z.next_in = (unsigned char *)(uintptr_t)in;
      z.avail_in = (uInt)step;
      in += step;
      left -= step;
    }
    if (n == cap) {
      if (max_out && n > max_out) {
        why = "decompresses to more than the reader's limit";
        break;
      }
      size_t next = cap * 2;
      if (max_out && next > max_out + 1) next = max_out + 1;
      buf = ox_xrealloc(buf, next + 1);
      cap = next;
    }
    size_t room = cap - n < CHUNK ? cap - n : CHUNK;
    z.next_out = (unsigned char *)buf + n;
    z.avail_out = (uInt)room;
    int rc = inflate(&z, Z_NO_FLUSH);
    n += room - z.avail_out;
    if (max_out && n > max_out) {
      why = "decompresses to more than the reader's limit";
      break;
    }
    if (rc == Z_STREAM_END) {
      if (!z.avail_in && !left) break; /* the end of the last member */
      if (z.avail_in && z.next_in[0] != 0x1f) {
        why = "bytes after the end of the gzip stream";
        break;
      }
      inflateReset(&z); /* another member follows */
      continue;
    }
    if (rc == Z_BUF_ERROR && !z.avail_in && !left) {
      why = "the gzip stream is cut short";
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      why = z.msg ? z.msg : "damaged gzip stream";
      break;
    }
  }
  if (why) {
    if (err) snprintf(err, errcap, "gzip: %s (after %zu of %zu compressed bytes)", why, len - left - z.avail_in, len);
    inflateEnd(&z);
    free(buf);
    return NULL;
  }
  inflateEnd(&z);
  buf[n] = 0;
  *out_len = n;
  return buf;
}
