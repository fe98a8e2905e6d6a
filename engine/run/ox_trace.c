/* ox_trace.c - trace storage, reasons, and name-based value conversion.
 *
 * The trace keeps its strings and value trees in a private "pool" graph, whose only nodes are
 * placeholders standing for node names referenced by edits. Steps live in one growable array;
 * per-step arrays (matched, removed, edits ...) live in the pool arena.
 */
#include "run/ox_trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"

static const char *const reason_names[] = {
#define OX_REASON_NAME(code, tmpl) #code,
  OX_REASON_LIST(OX_REASON_NAME)
#undef OX_REASON_NAME
};

static const char *const reason_templates[] = {
#define OX_REASON_TMPL(code, tmpl) tmpl,
  OX_REASON_LIST(OX_REASON_TMPL)
#undef OX_REASON_TMPL
};

const char *ox_reason_code_name(OxReasonCode c) {
  return (unsigned)c < OX_REASON_COUNT ? reason_names[c] : "OTHER";
}

const char *ox_reason_template(OxReasonCode c) {
  return (unsigned)c < OX_REASON_COUNT ? reason_templates[c] : "%0";
}

bool ox_reason_code_from_name(const char *s, OxReasonCode *out) {
  for (int i = 0; i < OX_REASON_COUNT; i++) {
    if (strcmp(reason_names[i], s) == 0) {
      *out = (OxReasonCode)i;
      return true;
    }
  }
  return false;
}

char *ox_reason_format(const OxReason *r) {
  OxBuf b;
  ox_buf_init(&b);
  const char *t = ox_reason_template((OxReasonCode)r->code);
  for (const char *p = t; *p; p++) {
    if (p[0] == '%' && p[1] >= '0' && p[1] <= '9') {
      int k = p[1] - '0';
      ox_buf_puts(&b, k < r->n_args && r->args[k] ? r->args[k] : "?");
      p++;
    } else {
      ox_buf_putc(&b, *p);
    }
  }
  if (!b.data) ox_buf_puts(&b, "");
  return b.data;
}

static const char *const check_kind_names[OX_CHECK_KINDS] = {"structure", "shape", "numeric"};
static const char *const check_status_names[] = {"not-run", "passed", "failed", "skipped"};

const char *ox_check_kind_name(OxCheckKind k) {
  return (unsigned)k < OX_CHECK_KINDS ? check_kind_names[k] : "?";
}

const char *ox_check_status_name(OxCheckStatus s) {
  return (unsigned)s <= OX_CHECK_SKIPPED ? check_status_names[s] : "?";
}

static OxTrace *trace_new(OxGraph *pool) {
  OxTrace *t = ox_xcalloc(1, sizeof *t);
  t->pool = pool;
  t->pool->name = ox_graph_intern(t->pool, "trace-pool");
  return t;
}

OxTrace *ox_trace_new(void) { return trace_new(ox_graph_new()); }

OxTrace *ox_trace_new_for(OxGraph *g) { return trace_new(ox_graph_new_sharing_strings(g)); }

/* ---- edit scripts in blocks used again once the live writer has encoded them
 *
 * Steps are recorded in order and the live writer encodes them in that order, so the blocks fill
 * oldest first: a full block goes to the back of the queue, remembering the step count when it
 * was last written to; the block at the front is taken again once the writer has encoded more
 * steps than that. */
typedef struct EditBlock {
  struct EditBlock *next;
  size_t cap, used;
  uint32_t upto; /* free once the writer has encoded this many steps */
  max_align_t data[];
} EditBlock;

typedef struct OxTraceEditMem OxTraceEditMem;
struct OxTraceEditMem {
  EditBlock *cur;
  EditBlock *head, *tail; /* full blocks, oldest first */
  uint64_t reused; /* blocks taken again (or given back) once encoded */
};

size_t ox_trace_edit_block = 1u << 20;

bool ox_trace_recycle_edits(OxTrace *t) {
  if (!t || !t->live) return false;
  if (!t->edit_mem) t->edit_mem = ox_xcalloc(1, sizeof *t->edit_mem);
  return true;
}

bool ox_trace_edits_recycled(const OxTrace *t) { return t && t->edit_mem && t->edit_mem->reused; }

void *ox_trace_edit_alloc(OxTrace *t, size_t size) {
  OxTraceEditMem *m = t->edit_mem;
  if (!m) return ox_graph_alloc(t->pool, size); /* zeroed by the arena */
  size = (size + 15) & ~(size_t)15;
  EditBlock *b = m->cur;
  if (!b || b->used + size > b->cap) {
    if (b) { /* full: to the back of the queue */
      b->next = NULL;
      if (m->tail) m->tail->next = b;
      else m->head = b;
      m->tail = b;
    }
    uint32_t encoded = __atomic_load_n(&t->live_encoded, __ATOMIC_ACQUIRE);
    b = NULL;
    while (m->head && m->head->upto <= encoded) { /* encoded: its edits are read */
      EditBlock *h = m->head;
      m->head = h->next;
      if (!m->head) m->tail = NULL;
      m->reused++;
      if (h->cap >= size) {
        b = h;
        break;
      }
      free(h); /* too small for this script (one larger than a block): given back */
    }
    if (!b) {
      size_t cap = size > ox_trace_edit_block ? size : ox_trace_edit_block;
      b = ox_xrealloc(NULL, sizeof *b + cap);
      b->cap = cap;
    }
    b->next = NULL;
    b->used = 0;
    m->cur = b;
  }
  void *p = (char *)b->data + b->used;
  b->used += size;
  b->upto = t->n_steps + 1; /* the step being recorded is encoded with the next ones */
  memset(p, 0, size);
  return p;
}

static void edit_mem_free(OxTraceEditMem *m) {
  if (!m) return;
  for (EditBlock *b = m->head, *n; b; b = n) {
    n = b->next;
    free(b);
  }
  free(m->cur);
  free(m);
}

void ox_trace_free(OxTrace *t) {
  if (!t) return;
  if (t->live) t->live_stop(t->live);
  edit_mem_free(t->edit_mem);
  free(t->str_cache);
  ox_big_free(t->steps, (size_t)t->cap_steps * sizeof *t->steps);
  free(t->scratch);
  ox_graph_free(t->pool);
  free(t);
}

void ox_trace_pass_stat_add(OxTrace *t, const char *pass, const char *phase, double seconds, uint32_t runs,
                            uint32_t applied, uint32_t rejected, uint32_t check_failed) {
  phase = phase && strcmp(phase, "post") == 0 ? "post" : "pre";
  OxPassStat *e = NULL;
  for (uint32_t i = 0; i < t->n_pass_stats && !e; i++)
    if (strcmp(t->pass_stats[i].pass, pass) == 0 && t->pass_stats[i].phase == phase) e = &t->pass_stats[i];
  if (!e) { /* the table lives in the pool arena (a pipeline has a few dozen passes): grow by copying */
    OxPassStat *a = ox_graph_alloc(t->pool, (t->n_pass_stats + 1) * sizeof *a);
    if (t->n_pass_stats) memcpy(a, t->pass_stats, t->n_pass_stats * sizeof *a);
    t->pass_stats = a;
    e = &a[t->n_pass_stats++];
    *e = (OxPassStat){.pass = ox_trace_intern(t, pass), .phase = phase};
  }
  e->seconds += seconds > 0 ? seconds : 0;
  e->runs += runs;
  e->applied += applied;
  e->rejected += rejected;
  e->check_failed += check_failed;
}

const char *ox_trace_intern(OxTrace *t, const char *s) { return s ? ox_graph_intern(t->pool, s) : NULL; }

/* Recording a step interns the names of the nodes it touched into the pool; at 100k nodes the
 * pool's string table has ~300k slots, so each lookup is a cache miss. Strings interned in a
 * graph never move or change while it lives, and table serials are never reused, so
 * (serial, pointer) identifies a string for good and a direct-mapped cache answers most. */
enum { STR_CACHE_BITS = 12 };
typedef struct StrCacheEnt {
  const char *key;
  uint64_t serial;
  const char *pool;
  OxNodeId ref;
} StrCacheEnt;
struct OxTraceStrCache {
  StrCacheEnt e[1u << STR_CACHE_BITS];
};

static StrCacheEnt *str_cache_ent(OxTrace *t, const OxGraph *g, const char *s) {
  if (!t->str_cache) t->str_cache = ox_xcalloc(1, sizeof *t->str_cache);
  uint64_t serial = ox_strtab_serial(g->strings);
  uint64_t h = (((uint64_t)(uintptr_t)s ^ serial) * 0x9E3779B97F4A7C15ull) >> (64 - STR_CACHE_BITS);
  StrCacheEnt *e = &t->str_cache->e[h];
  if (e->key != s || e->serial != serial) {
    e->key = s;
    e->serial = serial;
    e->pool = g->strings == t->pool->strings ? s : ox_graph_intern(t->pool, s);
    e->ref = 0;
  }
  return e;
}

const char *ox_trace_intern_from(OxTrace *t, const OxGraph *g, const char *s) {
  if (!s) return NULL;
  if (!g) return ox_trace_intern(t, s);
  if (g->strings == t->pool->strings) return s; /* ox_trace_new_for: already the pool's */
  return str_cache_ent(t, g, s)->pool;
}

OxNodeId ox_trace_name_ref_from(OxTrace *t, const OxGraph *g, const char *s) {
  if (!s || !g) return ox_trace_name_ref(t, s ? s : "?");
  StrCacheEnt *e = str_cache_ent(t, g, s);
  if (!e->ref) e->ref = ox_graph_name_ref_interned(t->pool, e->pool);
  return e->ref;
}

void ox_trace_steps_final(OxTrace *t) {
  if (t && t->live) t->live_final(t->live, t);
}

void ox_trace_reserve_steps(OxTrace *t, uint32_t n) {
  if (n <= t->cap_steps) return;
  t->steps = ox_big_realloc(t->steps, (size_t)t->cap_steps * sizeof *t->steps, (size_t)n * sizeof *t->steps);
  t->cap_steps = n;
}

OxStep *ox_trace_add_step(OxTrace *t, OxStepKind kind) {
  if (kind == OX_STEP_REJECTED && t->no_rejections) {
    if (!t->scratch) t->scratch = ox_xrealloc(NULL, sizeof *t->scratch);
    memset(t->scratch, 0, sizeof *t->scratch);
    t->scratch->seq = t->n_steps;
    t->scratch->kind = (uint8_t)kind;
    t->n_rejected++;
    return t->scratch;
  }
  if (t->n_steps == t->cap_steps) {
    /* mremap'ed once past 2 MiB: a doubling neither copies nor touches the new half (a 100k-node
     * run records 17k steps, 10 MB) */
    uint32_t cap = t->cap_steps ? t->cap_steps * 2 : 64;
    t->steps = ox_big_realloc(t->steps, (size_t)t->cap_steps * sizeof *t->steps, (size_t)cap * sizeof *t->steps);
    t->cap_steps = cap;
  }
  OxStep *s = &t->steps[t->n_steps];
  memset(s, 0, sizeof *s);
  s->seq = t->n_steps++;
  s->kind = (uint8_t)kind;
  switch (kind) {
  case OX_STEP_APPLIED: t->n_applied++; break;
  case OX_STEP_REJECTED: t->n_rejected++; break;
  case OX_STEP_CHECK_FAILED: t->n_check_failed++; break;
  }
  return s;
}

OxNodeId ox_trace_name_ref(OxTrace *t, const char *name) { return ox_graph_name_ref(t->pool, name); }

static bool is_container(const OxValue *v) {
  return v->kind == OX_V_LIST || v->kind == OX_V_TUPLE || v->kind == OX_V_DICT || v->kind == OX_V_SLICE;
}

OxValue ox_trace_value_from_graph(OxTrace *t, const OxGraph *g, const OxValue *v) {
  /* a graph sharing the pool's string table holds the pool's strings: no re-interning */
  bool shared = ox_graph_shares_strings(g, t->pool);
  if (v->kind == OX_V_NODE) {
    const OxNode *n = ox_graph_node(g, v->u.node);
    if (n && shared) return ox_value_node(ox_graph_name_ref_interned(t->pool, n->name));
    return ox_value_node(ox_trace_name_ref(t, n ? n->name : "?"));
  }
  OxValue r = *v;
  if (v->s) r.s = shared ? v->s : ox_graph_intern(t->pool, v->s);
  if (is_container(v)) {
    r.u.items = v->n ? ox_graph_alloc(t->pool, v->n * sizeof(OxValue)) : NULL;
    for (uint32_t i = 0; i < v->n; i++) r.u.items[i] = ox_trace_value_from_graph(t, g, &v->u.items[i]);
    if (v->kind == OX_V_DICT) {
      r.keys = v->n ? ox_graph_alloc(t->pool, v->n * sizeof(char *)) : NULL;
      for (uint32_t i = 0; i < v->n; i++) r.keys[i] = shared ? v->keys[i] : ox_graph_intern(t->pool, v->keys[i]);
    }
  }
  return r;
}

bool ox_trace_value_to_graph(const OxTrace *t, OxGraph *g, const OxValue *v, OxValue *out, char *err,
                             size_t errcap) {
  /* a graph sharing the pool's string table holds the pool's strings as they are */
  bool shared = ox_graph_shares_strings(g, t->pool);
  if (v->kind == OX_V_NODE) {
    const char *ref = ox_graph_ref_name(t->pool, v->u.node);
    OxNodeId id = !ref ? 0 : shared ? ox_graph_find_interned(g, ref) : ox_graph_find(g, ref);
    if (!id) {
      if (err) snprintf(err, errcap, "node %s is not in the graph", ref ? ref : "?");
      return false;
    }
    *out = ox_value_node(id);
    return true;
  }
  OxValue r = *v;
  if (v->s && !shared) r.s = ox_graph_intern(g, v->s);
  if (is_container(v)) {
    r.u.items = v->n ? ox_graph_alloc(g, v->n * sizeof(OxValue)) : NULL;
    for (uint32_t i = 0; i < v->n; i++)
      if (!ox_trace_value_to_graph(t, g, &v->u.items[i], &r.u.items[i], err, errcap)) return false;
    if (v->kind == OX_V_DICT) {
      r.keys = v->n ? ox_graph_alloc(g, v->n * sizeof(char *)) : NULL;
      for (uint32_t i = 0; i < v->n; i++) r.keys[i] = shared ? v->keys[i] : ox_graph_intern(g, v->keys[i]);
    }
  }
  *out = r;
  return true;
}

OxTraceEditData *ox_trace_edit_data(OxTrace *t, OxTraceEdit *e) {
  if (!e->data) e->data = ox_trace_edit_alloc(t, sizeof *e->data);
  return e->data;
}
