/* ox_gzip.h - gzip streams in memory (zlib): traces written as T.json.gz and read back.
 *
 * A trace of a 100k-node run is ~20 MB of JSON and ~4 MB gzipped; `zcat T.json.gz | jq` reads
 * it as before. Readers take either form: a gzip stream is recognised by its magic bytes, not
 * by the file name.
 */
#ifndef OX_GZIP_H
#define OX_GZIP_H

#include <stdbool.h>
#include <stddef.h>

#include "ir/ox_buf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether data starts like a gzip stream (1f 8b). */
bool ox_gzip_is(const char *data, size_t len);

/* Whether a file name asks for gzip (ends in ".gz"). */
bool ox_gzip_wanted(const char *path);

/* Appends the gzip stream of data[0..len) to out (level 1: fastest; 1-9). false with a message
 * in err on a zlib failure (out then holds what it held before). */
bool ox_gzip_compress(const char *data, size_t len, int level, OxBuf *out, char *err, size_t errcap);

/* A gzip stream made piece by piece (a streaming output, ox_buf_stream_to_gzip): the bytes of
 * each piece go in, the compressed bytes that are ready come out. The stream is the one
 * ox_gzip_compress makes of all the pieces together. */
typedef struct OxGzipWriter OxGzipWriter;
OxGzipWriter *ox_gzip_writer_new(int level); /* NULL if zlib cannot start */
/* Compresses data[0..len) (and, with finish, ends the stream), appending what is ready to out.
 * false on a zlib failure. */
bool ox_gzip_writer_put(OxGzipWriter *z, const void *data, size_t len, bool finish, OxBuf *out);
void ox_gzip_writer_free(OxGzipWriter *z);

/* The decompressed bytes of a gzip stream (one member or several concatenated), malloc'ed and
 * NUL-terminated, their count in *out_len; NULL with a message in err when the stream is damaged
 * or cut, has bytes after its end that are not another member, or would decompress to more than
 * max_out bytes (a bomb is stopped there, not after). */
char *ox_gzip_decompress(const char *data, size_t len, size_t max_out, size_t *out_len, char *err, size_t errcap);

#ifdef __cplusplus
}
#endif

#endif
