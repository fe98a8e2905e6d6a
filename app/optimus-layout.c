/* optimus-layout - the Graphviz helper process (engine/layout/ox_layout.h).
 *
 * Graphviz is not thread-safe, cannot be interrupted and can take minutes on some shapes, so
 * the CLI and the debugger never run it in their own process: they start this helper with a
 * request on stdin and kill it when their time budget runs out (or the user moves on). One
 * request per process:
 *
 *   layout TB|LR\n<DOT>        lay out fixed-size boxes named n<ID>; answer: ox_layout_serialize
 *   render svg|png dot|nop2\n<DOT>   lay out (nop2: positions given) and render; answer: the bytes
 *
 * Errors go to stderr as one line, exit status 1; a usage error (run by hand) exits 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ox_buf.h"
#include "layout/ox_layout.h"
#include "write/ox_write.h"

enum { MAX_REQUEST = 512 << 20 };

static int write_all(const char *p, size_t n) {
  while (n) {
    ssize_t w = write(1, p, n);
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int main(int argc, char **argv) {
  (void)argv;
  if (argc > 1) {
    fprintf(stderr, "usage: optimus-layout < REQUEST (started by optimus and optimus-debugger; see ox_layout.h)\n");
    return 2;
  }
  OxBuf in;
  ox_buf_init(&in);
  char chunk[65536];
  for (;;) {
    ssize_t k = read(0, chunk, sizeof chunk);
    if (k < 0) {
      fprintf(stderr, "optimus-layout: cannot read the request\n");
      return 1;
    }
    if (k == 0) break;
    if (in.len + (size_t)k > MAX_REQUEST) {
      fprintf(stderr, "optimus-layout: request over %d MB\n", MAX_REQUEST >> 20);
      return 1;
    }
    ox_buf_append(&in, chunk, (size_t)k);
  }
  ox_buf_putc(&in, 0);
  char *nl = in.data ? strchr(in.data, '\n') : NULL;
  if (!nl) {
    fprintf(stderr, "optimus-layout: empty request\n");
    return 1;
  }
  *nl = 0;
  const char *dot = nl + 1;
  char a[16] = "", b[16] = "", c[16] = "";
  int nf = sscanf(in.data, "%15s %15s %15s", a, b, c);
  char err[1024] = "";
  int rc = 1;
  OxBuf out;
  ox_buf_init(&out);
  if (nf >= 2 && strcmp(a, "layout") == 0) {
    OxLayout *l = NULL;
    if (ox_gv_layout_text(dot, "dot", &l, err, sizeof err) == 0) {
      ox_layout_serialize(l, &out);
      ox_layout_free(l);
      rc = 0;
    }
  } else if (nf == 3 && strcmp(a, "render") == 0) {
    if (ox_gv_render_text(dot, c, b, &out, err, sizeof err) == 0) rc = 0;
  } else {
    snprintf(err, sizeof err, "bad request header '%s'", in.data);
  }
  if (rc == 0 && write_all(out.data ? out.data : "", out.len) != 0) {
    snprintf(err, sizeof err, "cannot write the answer");
    rc = 1;
  }
  if (rc != 0) fprintf(stderr, "optimus-layout: %s\n", err[0] ? err : "failed");
  ox_buf_free(&out);
  ox_buf_free(&in);
  return rc;
}
