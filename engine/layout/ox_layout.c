/* ox_layout.c - which engine lays a request out, and Graphviz in a child process.
 *
 * ox_layout_auto tries dot (in the optimus-layout helper, app/optimus-layout.c) for requests
 * up to dot_max_nodes within a time budget, and falls back to the layered layout
 * (ox_layered.c) when dot is slower than the budget, fails, crashes, is cancelled for a
 * timeout, or when the helper is missing; the result says which engine made it and why.
 *
 * The child: posix_spawn of the helper with the request on stdin (a socketpair end, so a
 * helper that dies early cannot kill us with SIGPIPE: we write with MSG_NOSIGNAL) and stdout /
 * stderr on pipes; one poll loop writes the request and drains both outputs, wakes at least
 * every 20 ms to check the deadline and the cancel flag, and SIGKILLs the child when either
 * says so. Every descriptor is close-on-exec, so helpers started from several threads never
 * inherit each other's pipes. posix_spawn is safe in a multithreaded process (the GTK app):
 * nothing runs in the child between fork and exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ir/ox_mem.h"
#include "layout/ox_layout_sub.h"

#ifndef OX_LIBEXECDIR
#define OX_LIBEXECDIR "/usr/local/libexec"
#endif

extern char **environ;

static double mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ helper path */

static bool executable(const char *p) { return access(p, X_OK) == 0; }

const char *ox_layout_helper_path(char *buf, size_t cap) {
  const char *env = getenv("OX_LAYOUT_HELPER");
  if (env && *env) {
    snprintf(buf, cap, "%s", env);
    return executable(buf) ? buf : NULL;
  }
  char exe[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k > 0) {
    exe[k] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = 0;
      snprintf(buf, cap, "%s/optimus-layout", exe);
      if (executable(buf)) return buf;
      /* the build tree: tests/ and tools/ sit beside app/ */
      snprintf(buf, cap, "%s/../app/optimus-layout", exe);
      if (executable(buf)) return buf;
    }
  }
  snprintf(buf, cap, "%s/optimus-layout", OX_LIBEXECDIR);
  return executable(buf) ? buf : NULL;
}

/* ------------------------------------------------------------------ running the helper */

static void set_nonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

int ox_layout_run_helper(const char *helper, const char *input, size_t len, double timeout, atomic_bool *cancel,
                         OxBuf *out, bool *timed_out, char *err, size_t errcap) {
  if (timed_out) *timed_out = false;
  if (err && errcap) err[0] = 0;
  if (!helper) {
    if (err) snprintf(err, errcap, "the layout helper optimus-layout was not found");
    return -1;
  }
  int sv[2] = {-1, -1}, po[2] = {-1, -1}, pe[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || pipe2(po, O_CLOEXEC) != 0 ||
      pipe2(pe, O_CLOEXEC) != 0) {
    if (err) snprintf(err, errcap, "cannot start the layout helper: %s", strerror(errno));
    for (int i = 0; i < 2; i++) {
      if (sv[i] >= 0) close(sv[i]);
      if (po[i] >= 0) close(po[i]);
      if (pe[i] >= 0) close(pe[i]);
    }
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_adddup2(&fa, po[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  /* default signal dispositions and an empty mask in the child, whatever this thread has */
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &all);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  char *argv[] = {(char *)helper, NULL};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, helper, &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(sv[1]);
  close(po[1]);
  close(pe[1]);
  if (rc != 0) {
    if (err) snprintf(err, errcap, "cannot start the layout helper %s: %s", helper, strerror(rc));
    close(sv[0]);
    close(po[0]);
    close(pe[0]);
    return -1;
  }
  int in = sv[0], fo = po[0], fe = pe[0];
  set_nonblock(in);
  set_nonblock(fo);
  set_nonblock(fe);
  OxBuf emsg;
  ox_buf_init(&emsg);
  size_t sent = 0;
  double deadline = timeout > 0 ? mono() + timeout : INFINITY;
  bool killed = false, was_timeout = false, was_cancel = false;
  if (len == 0) {
    close(in);
    in = -1;
  }
  char chunk[65536];
  while (fo >= 0 || fe >= 0) {
    struct pollfd p[3];
    int np = 0, ii = -1, io = -1, ie = -1;
    if (in >= 0) {
      p[np] = (struct pollfd){in, POLLOUT, 0};
      ii = np++;
    }
    if (fo >= 0) {
      p[np] = (struct pollfd){fo, POLLIN, 0};
      io = np++;
    }
    if (fe >= 0) {
      p[np] = (struct pollfd){fe, POLLIN, 0};
      ie = np++;
    }
    double left = deadline - mono();
    int wait_ms = 20;
    if (left < 0.02) wait_ms = left > 0 ? (int)(left * 1000) + 1 : 0;
    int r = poll(p, (nfds_t)np, wait_ms);
    if (r < 0 && errno != EINTR) break;
    if (cancel && atomic_load(cancel)) {
      was_cancel = true;
      break;
    }
    if (mono() >= deadline) {
      was_timeout = true;
      break;
    }
    if (r <= 0) continue;
    if (ii >= 0 && (p[ii].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = send(in, input + sent, len - sent, MSG_NOSIGNAL);
      if (w > 0) sent += (size_t)w;
      if (w < 0 && errno != EAGAIN && errno != EINTR) sent = len; /* the helper stopped reading */
      if (sent >= len) {
        close(in);
        in = -1;
      }
    }
    if (io >= 0 && (p[io].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t k = read(fo, chunk, sizeof chunk);
      if (k > 0)
        ox_buf_append(out, chunk, (size_t)k);
      else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(fo);
        fo = -1;
      }
    }
    if (ie >= 0 && (p[ie].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t k = read(fe, chunk, sizeof chunk);
      if (k > 0) {
        if (emsg.len < 4096) ox_buf_append(&emsg, chunk, (size_t)k);
      } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(fe);
        fe = -1;
      }
    }
  }
  if (was_cancel || was_timeout || fo >= 0 || fe >= 0) {
    kill(pid, SIGKILL);
    killed = true;
  }
  if (in >= 0) close(in);
  if (fo >= 0) close(fo);
  if (fe >= 0) close(fe);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int result = -1;
  if (was_cancel) {
    if (err) snprintf(err, errcap, "cancelled");
  } else if (was_timeout) {
    if (timed_out) *timed_out = true;
    if (err) snprintf(err, errcap, "did not finish within %.1f s", timeout);
  } else if (killed) {
    if (err) snprintf(err, errcap, "the layout helper stopped answering");
  } else if (WIFSIGNALED(status)) {
    if (err) snprintf(err, errcap, "the layout helper crashed (signal %d)", WTERMSIG(status));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    /* its message, on one line */
    size_t n = emsg.len;
    while (n && (emsg.data[n - 1] == '\n' || emsg.data[n - 1] == ' ')) n--;
    if (err) {
      snprintf(err, errcap, "%.*s", (int)(n > 400 ? 400 : n), n ? emsg.data : "the layout helper failed");
      for (char *c = err; *c; c++)
        if (*c == '\n') *c = ' ';
    }
  } else {
    result = 0;
  }
  ox_buf_free(&emsg);
  return result;
}

/* ------------------------------------------------------------------ the protocol */

void ox_layout_serialize(const OxLayout *l, OxBuf *out) {
  ox_buf_printf(out, "oxlayout 1\nsize %.3f %.3f %u %u\nseconds %.6f\n", l->width, l->height, l->n_nodes, l->n_edges,
                l->seconds);
  for (uint32_t i = 0; i < l->n_nodes; i++) {
    const OxLayoutNode *b = &l->nodes[i];
    ox_buf_printf(out, "n %u %.3f %.3f %.3f %.3f\n", b->id, b->x, b->y, b->w, b->h);
  }
  for (uint32_t i = 0; i < l->n_edges; i++) {
    const OxLayoutEdge *e = &l->edges[i];
    ox_buf_printf(out, "e %u %u %d %.3f %.3f %u", e->from, e->to, e->has_arrow ? 1 : 0, e->ax, e->ay, e->n_pts);
    for (uint32_t p = 0; p < e->n_pts; p++) ox_buf_printf(out, " %.3f %.3f", e->pts[2 * p], e->pts[2 * p + 1]);
    ox_buf_putc(out, '\n');
  }
  ox_buf_puts(out, "end\n");
}

typedef struct Rd {
  const char *p, *end;
  bool bad;
} Rd;

static void rd_space(Rd *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\n')) r->p++;
}

static bool rd_word(Rd *r, const char *w) {
  rd_space(r);
  size_t n = strlen(w);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n) != 0) return false;
  r->p += n;
  return true;
}

static double rd_num(Rd *r) {
  rd_space(r);
  char tmp[64];
  size_t k = 0;
  while (r->p < r->end && k + 1 < sizeof tmp && *r->p != ' ' && *r->p != '\n') tmp[k++] = *r->p++;
  tmp[k] = 0;
  char *e;
  double v = strtod(tmp, &e);
  if (!k || *e || !isfinite(v)) r->bad = true;
  return v;
}

static uint32_t rd_u32(Rd *r) {
  double v = rd_num(r);
  if (v < 0 || v > 4e9 || v != floor(v)) r->bad = true;
  return r->bad ? 0 : (uint32_t)v;
}

OxLayout *ox_layout_parse(const char *text, size_t len, char *err, size_t errcap) {
  Rd r = {text, text + len, false};
  OxLayout *l = ox_xcalloc(1, sizeof *l);
  l->engine = OX_LAYOUT_DOT;
  uint32_t nn = 0, ne = 0;
  if (!rd_word(&r, "oxlayout") || rd_u32(&r) != 1 || !rd_word(&r, "size")) r.bad = true;
  if (!r.bad) {
    l->width = rd_num(&r);
    l->height = rd_num(&r);
    nn = rd_u32(&r);
    ne = rd_u32(&r);
  }
  if (!r.bad && rd_word(&r, "seconds")) l->seconds = rd_num(&r);
  if (!r.bad && (nn > (uint32_t)(len / 8) || ne > (uint32_t)(len / 8))) r.bad = true;
  if (!r.bad) {
    l->nodes = ox_xcalloc(nn + 1, sizeof *l->nodes);
    l->edges = ox_xcalloc(ne + 1, sizeof *l->edges);
  }
  for (uint32_t i = 0; i < nn && !r.bad; i++) {
    if (!rd_word(&r, "n")) {
      r.bad = true;
      break;
    }
    OxLayoutNode *b = &l->nodes[l->n_nodes++];
    b->id = rd_u32(&r);
    b->x = rd_num(&r);
    b->y = rd_num(&r);
    b->w = rd_num(&r);
    b->h = rd_num(&r);
  }
  for (uint32_t i = 0; i < ne && !r.bad; i++) {
    if (!rd_word(&r, "e")) {
      r.bad = true;
      break;
    }
    OxLayoutEdge *e = &l->edges[l->n_edges++];
    e->from = rd_u32(&r);
    e->to = rd_u32(&r);
    e->has_arrow = rd_u32(&r) != 0;
    e->ax = rd_num(&r);
    e->ay = rd_num(&r);
    uint32_t np = rd_u32(&r);
    if (r.bad || np > (uint32_t)(len / 4)) {
      r.bad = true;
      break;
    }
    e->n_pts = np;
    e->pts = ox_xcalloc(2 * (size_t)np + 2, sizeof *e->pts);
    for (uint32_t p = 0; p < 2 * np && !r.bad; p++) e->pts[p] = rd_num(&r);
  }
  if (!r.bad && !rd_word(&r, "end")) r.bad = true;
  if (r.bad) {
    if (err && errcap) snprintf(err, errcap, "the layout helper's answer is malformed near byte %zu",
                                (size_t)(r.p - text));
    ox_layout_free(l);
    return NULL;
  }
  /* sorted by id for ox_layout_find (the helper writes them in id order; keep it true) */
  for (uint32_t i = 1; i < l->n_nodes; i++)
    if (l->nodes[i - 1].id >= l->nodes[i].id) {
      if (err && errcap) snprintf(err, errcap, "the layout helper's nodes are not in id order");
      ox_layout_free(l);
      return NULL;
    }
  return l;
}

void ox_lsub_request_dot(const OxLSub *s, const OxLayoutOptions *opt, OxBuf *out) {
  bool lr = opt && opt->rankdir && strcmp(opt->rankdir, "LR") == 0;
  ox_buf_printf(out, "digraph G {\n  graph [rankdir=%s, nodesep=0.25, ranksep=0.35%s];\n", lr ? "LR" : "TB",
                s->n > 1000 ? ", nslimit=2, mclimit=0.5" : "");
  ox_buf_puts(out, "  node [shape=box, fixedsize=true, label=\"\"];\n");
  for (uint32_t v = 0; v < s->n; v++)
    ox_buf_printf(out, "  n%u [width=%.4f, height=%.4f];\n", s->ids[v], s->w[v] / 72.0, s->h[v] / 72.0);
  for (uint32_t i = 0; i < s->n_edges; i++)
    if (!s->estub[i]) ox_buf_printf(out, "  n%u -> n%u;\n", s->ids[s->efrom[i]], s->ids[s->eto[i]]);
  ox_buf_puts(out, "}\n");
}

/* Checks the helper's layout against the request: every node of s, nothing else. */
static bool layout_matches(const OxLSub *s, const OxLayout *l) {
  if (l->n_nodes != s->n) return false;
  for (uint32_t v = 0; v < s->n; v++)
    if (l->nodes[v].id != s->ids[v]) return false;
  return true;
}

static int dot_sub(const OxLSub *s, const OxLayoutOptions *opt, OxLayout **out, bool *timed_out, char *err,
                   size_t errcap) {
  *out = NULL;
  char hbuf[PATH_MAX];
  const char *helper = opt && opt->helper ? opt->helper : ox_layout_helper_path(hbuf, sizeof hbuf);
  OxBuf req, ans;
  ox_buf_init(&req);
  ox_buf_init(&ans);
  bool lr = opt && opt->rankdir && strcmp(opt->rankdir, "LR") == 0;
  ox_buf_printf(&req, "layout %s\n", lr ? "LR" : "TB");
  ox_lsub_request_dot(s, opt, &req);
  double budget = opt && opt->time_budget > 0 ? opt->time_budget : 5.0;
  int rc = ox_layout_run_helper(helper, req.data, req.len, budget, opt ? opt->cancel : NULL, &ans, timed_out, err,
                                errcap);
  ox_buf_free(&req);
  if (rc == 0) {
    OxLayout *l = ox_layout_parse(ans.data ? ans.data : "", ans.len, err, errcap);
    if (l && !layout_matches(s, l)) {
      if (err && errcap) snprintf(err, errcap, "the layout helper answered for other nodes");
      ox_layout_free(l);
      l = NULL;
    }
    if (l) {
      l->engine = OX_LAYOUT_DOT;
      ox_lsub_add_stubs(s, NULL, l, lr);
      *out = l;
    } else {
      rc = -1;
    }
  }
  ox_buf_free(&ans);
  return rc;
}

int ox_layout_dot(const OxGraph *g, const OxNodeId *subset, uint32_t n, const OxLayoutOptions *opt, OxLayout **out,
                  char *err, size_t errcap) {
  *out = NULL;
  OxLSub s;
  if (ox_lsub_build(g, subset, n, opt, &s, err, errcap) != 0) return -1;
  int rc = dot_sub(&s, opt, out, NULL, err, errcap);
  ox_lsub_free(&s);
  return rc;
}

int ox_layout_auto(const OxGraph *g, const OxNodeId *subset, uint32_t n, const OxLayoutOptions *opt, OxLayout **out,
                   char *err, size_t errcap) {
  *out = NULL;
  OxLayoutEngine engine = opt ? opt->engine : OX_LAYOUT_AUTO;
  if (engine == OX_LAYOUT_DOT_INPROC) return ox_layout_compute(g, subset, n, opt, out, err, errcap);
  OxLSub s;
  if (ox_lsub_build(g, subset, n, opt, &s, err, errcap) != 0) return -1;
  if (ox_layout_cancelled(opt)) {
    ox_lsub_free(&s);
    if (err && errcap) snprintf(err, errcap, "cancelled");
    return -1;
  }
  uint32_t dot_max = opt && opt->dot_max_nodes ? opt->dot_max_nodes : 1500;
  char why[200] = "";
  bool dot_timeout = false;
  if (engine == OX_LAYOUT_DOT || (engine == OX_LAYOUT_AUTO && s.n <= dot_max)) {
    char derr[140] = "";
    bool timed_out = false;
    int rc = dot_sub(&s, opt, out, &timed_out, derr, sizeof derr);
    if (rc == 0 && engine == OX_LAYOUT_AUTO && opt && opt->aspect > 0) {
      /* dot cannot fold a wide or deep graph to the window: when its picture would be drawn
       * much smaller than ours when fitted, ours reads better */
      OxLayout *mine = NULL;
      if (ox_lsub_layered(&s, opt, &mine, NULL, 0) == 0) {
        double a = opt->aspect;
        double fit_dot = fmin(a / fmax((*out)->width, 1), 1 / fmax((*out)->height, 1));
        double fit_mine = fmin(a / fmax(mine->width, 1), 1 / fmax(mine->height, 1));
        if (fit_dot < 0.6 * fit_mine) {
          ox_layout_free(*out);
          *out = mine;
          snprintf(mine->note, sizeof mine->note, "built-in layered layout: it fits this window %.1fx larger than dot's",
                   fit_mine / fit_dot);
          mine = NULL;
        }
        ox_layout_free(mine);
      }
    }
    if (rc == 0 || engine == OX_LAYOUT_DOT || ox_layout_cancelled(opt)) {
      if (rc != 0 && err && errcap) snprintf(err, errcap, "%s", derr);
      ox_lsub_free(&s);
      return rc;
    }
    snprintf(why, sizeof why, "dot %s; drawn with the built-in layered layout", derr);
    dot_timeout = timed_out;
  } else if (engine == OX_LAYOUT_AUTO) {
    snprintf(why, sizeof why, "%u nodes: more than dot lays out interactively (%u); built-in layered layout", s.n,
             dot_max);
  }
  int rc = ox_lsub_layered(&s, opt, out, err, errcap);
  if (rc == 0) {
    snprintf((*out)->note, sizeof (*out)->note, "%s", why);
    (*out)->dot_timed_out = dot_timeout;
  }
  ox_lsub_free(&s);
  return rc;
}

/* ------------------------------------------------------------------ pictures (CLI, export) */

#include "write/ox_write.h"

int ox_render_auto(const OxGraph *g, const OxDotOptions *opt, const char *format, const OxLayoutOptions *lo,
                   OxBuf *out, char *note, size_t notecap, char *err, size_t errcap) {
  if (note && notecap) note[0] = 0;
  if (err && errcap) err[0] = 0;
  if (!format || (strcmp(format, "svg") != 0 && strcmp(format, "png") != 0)) {
    if (err) snprintf(err, errcap, "cannot render to format '%s': only svg and png are supported",
                      format ? format : "(none)");
    return -1;
  }
  double budget = lo && lo->time_budget > 0 ? lo->time_budget : 10;
  char hbuf[PATH_MAX];
  const char *helper = lo && lo->helper ? lo->helper : ox_layout_helper_path(hbuf, sizeof hbuf);
  /* lay out first (dot in the helper, with hub edges as stubs and boxes sized for the labels,
   * within the budget; else ours), then have Graphviz draw that layout (nop2: linear) */
  const uint8_t *inc = opt ? opt->include : NULL;
  const uint32_t *fold = opt ? opt->fold : NULL;
  uint32_t shown = 0;
  OX_GRAPH_FOREACH(g, id) shown += (!inc || inc[id]) && !(fold && fold[id]);
  OxNodeId *ids = ox_xcalloc(shown + 1, sizeof *ids);
  float *sizes = ox_xcalloc(2 * (size_t)shown + 2, sizeof *sizes);
  uint32_t k = 0;
  OX_GRAPH_FOREACH(g, id) {
    if ((inc && !inc[id]) || (fold && fold[id])) continue;
    double w, h;
    ox_write_dot_node_size(g, opt, id, &w, &h);
    ids[k] = id;
    sizes[2 * k] = (float)w;
    sizes[2 * k + 1] = (float)h;
    k++;
  }
  OxLayoutOptions lay = lo ? *lo : (OxLayoutOptions){0};
  lay.rankdir = opt ? opt->rankdir : NULL;
  lay.max_nodes = UINT32_MAX;
  lay.sizes = sizes;
  lay.time_budget = budget;
  lay.helper = helper;
  OxLayout *l = NULL;
  int rc = ox_layout_auto(g, ids, k, &lay, &l, err, errcap);
  free(ids);
  free(sizes);
  if (rc != 0) return -1;
  OxDotOptions o2 = opt ? *opt : (OxDotOptions){0};
  o2.layout = l;
  OxBuf req;
  ox_buf_init(&req);
  ox_buf_printf(&req, "render %s nop2\n", format);
  ox_write_dot(g, &o2, &req);
  /* drawing is linear: allow generously more than the layout budget */
  rc = ox_layout_run_helper(helper, req.data, req.len, budget * 6 + 30, NULL, out, NULL, err, errcap);
  char why[240];
  snprintf(why, sizeof why, "%s", l->note);
  ox_layout_free(l);
  if (rc == 0 && note && notecap) snprintf(note, notecap, "%s", why);
  ox_buf_free(&req);
  return rc;
}
