/* ox_json_trace.c - trace files (docs/trace-format.md): the writer lays out one step per
 * block; the reader validates every field it knows and reports located errors like the
 * document reader, whose machinery it uses (ox_json_private.h). The steps and tables of a
 * version 3 trace are read first straight from the text with our own tokenizer (fast_step,
 * fast_meta_table ...); json-c reads whatever that does not take, with the same result.
 */
#include <limits.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "json/ox_json_private.h"
#include "ir/ox_gzip.h"
#include "run/ox_trace.h"

/* ================================================================== trace files */

/* docs/trace-format.md. The writer lays out one step per block; the reader validates every
 * field it knows and reports located errors like the document reader. */

static const char *const step_kind_names[] = {"applied", "rejected", "check_failed"};
static const char *const edit_kind_names[] = {"add", "erase", "args", "move", "meta", "rename", "replace_input"};
enum { N_EDIT_KINDS = sizeof edit_kind_names / sizeof edit_kind_names[0] };

static void put_names(OxBuf *b, const char *key, const char *const *names, uint32_t n) {
  if (!n) return;
  ox_buf_puts(b, ", ");
  ox_json_put_key(b, key);
  ox_buf_putc(b, '[');
  for (uint32_t i = 0; i < n; i++) {
    if (i) ox_buf_puts(b, ", ");
    ox_json_put_str(b, names[i]);
  }
  ox_buf_putc(b, ']');
}

static void put_num(OxBuf *b, const char *key, double v) {
  ox_buf_puts(b, ", ");
  ox_json_put_key(b, key);
  if (isfinite(v))
    ox_buf_put_pyfloat(b, v);
  else
    ox_buf_puts(b, "null");
}

/* "passes":[{"pass": ..., "phase": ..., "seconds": ..., "runs": ..., "applied": ...,
 * "rejected": ..., "check_failed": ...}, ...]: the per-pass profile (left out when empty) */
static void put_pass_stats(OxBuf *b, const OxTrace *t, bool compact) {
  if (!t->n_pass_stats) return;
  const char *sep = compact ? "," : ", ", *colon = compact ? ":" : ": ";
  ox_buf_puts(b, compact ? ",\"passes\":[" : ",\n  \"passes\": [");
  for (uint32_t i = 0; i < t->n_pass_stats; i++) {
    const OxPassStat *e = &t->pass_stats[i];
    if (i) ox_buf_puts(b, compact ? "," : ",\n    ");
    ox_buf_puts(b, compact ? "{\"pass\":" : "{\"pass\": ");
    ox_json_put_str(b, e->pass);
    ox_buf_printf(b, "%s\"phase\"%s\"%s\"%s\"seconds\"%s", sep, colon, e->phase, sep, colon);
    if (isfinite(e->seconds))
      ox_buf_put_pyfloat(b, round(e->seconds * 1e6) / 1e6); /* to the microsecond: a profile */
    else
      ox_buf_puts(b, "null");
    ox_buf_printf(b, "%s\"runs\"%s%u%s\"applied\"%s%u%s\"rejected\"%s%u%s\"check_failed\"%s%u}", sep, colon, e->runs,
                  sep, colon, e->applied, sep, colon, e->rejected, sep, colon, e->check_failed);
  }
  ox_buf_putc(b, ']');
}

/* "cost": {"launches": [b, a], "bytes": [b, a], "flops": [b, a]}, null for an unknown value */
static void put_cost_sep(OxBuf *b, const OxCostPair *p, bool compact) {
  static const char *const keys[3] = {"launches", "bytes", "flops"};
  static const unsigned bits[3] = {OX_COST_LAUNCHES, OX_COST_BYTES, OX_COST_FLOPS};
  const char *comma = compact ? "," : ", ";
  ox_buf_puts(b, compact ? "\"cost\":{" : "\"cost\": {");
  for (int k = 0; k < 3; k++) {
    const OxCost *x[2] = {&p->before, &p->after};
    ox_buf_printf(b, compact ? "%s\"%s\":[" : "%s\"%s\": [", k ? comma : "", keys[k]);
    for (int i = 0; i < 2; i++) {
      uint64_t v = k == 0 ? x[i]->launches : k == 1 ? x[i]->bytes : x[i]->flops;
      if (i) ox_buf_puts(b, comma);
      if (x[i]->unknown & bits[k]) ox_buf_puts(b, "null");
      else ox_buf_printf(b, "%llu", (unsigned long long)v);
    }
    ox_buf_putc(b, ']');
  }
  ox_buf_putc(b, '}');
}

static void put_cost(OxBuf *b, const OxCostPair *p) { put_cost_sep(b, p, false); }

static void write_edit(const OxTrace *t, const OxTraceEdit *e, OxBuf *b) {
  const char *kind = e->kind == OX_TEDIT_MOVE && !e->name ? "toposort" : edit_kind_names[e->kind];
  ox_buf_puts(b, "{\"kind\": ");
  ox_json_put_str(b, kind);
  ox_json_write_opt_str(b, "name", e->name);
  switch ((OxTraceEditKind)e->kind) {
  case OX_TEDIT_ADD:
    ox_buf_puts(b, ", \"after\": ");
    if (e->after)
      ox_json_put_str(b, e->after);
    else
      ox_buf_puts(b, "null");
    ox_json_write_opt_str(b, "op", ox_op_name((OxOp)e->op));
    ox_json_write_opt_str(b, "target", e->target);
    ox_buf_puts(b, ", \"args\": ");
    ox_json_write_items(t->pool, &e->data->args, b);
    ox_buf_puts(b, ", \"kwargs\": ");
    ox_json_write_value(t->pool, &e->data->kwargs, b);
    if (e->has_meta) ox_json_write_meta(&e->data->meta, b);
    break;
  case OX_TEDIT_ARGS:
    ox_buf_puts(b, ", \"args\": ");
    ox_json_write_items(t->pool, &e->data->args, b);
    ox_buf_puts(b, ", \"kwargs\": ");
    ox_json_write_value(t->pool, &e->data->kwargs, b);
    break;
  case OX_TEDIT_MOVE:
    if (e->name) {
      ox_buf_puts(b, ", \"after\": ");
      if (e->after)
        ox_json_put_str(b, e->after);
      else
        ox_buf_puts(b, "null");
    }
    break;
  case OX_TEDIT_META: ox_json_write_meta(&e->data->meta, b); break;
  case OX_TEDIT_RENAME: ox_json_write_opt_str(b, "to", e->new_name); break;
  case OX_TEDIT_REPLACE:
    ox_json_write_opt_str(b, "old", e->from);
    ox_json_write_opt_str(b, "new", e->to);
    break;
  case OX_TEDIT_ERASE: break;
  }
  ox_buf_putc(b, '}');
}

static void write_step(const OxTrace *t, const OxStep *s, OxBuf *b) {
  ox_buf_printf(b, "    {\"seq\": %u, \"kind\": ", s->seq);
  ox_json_put_str(b, step_kind_names[s->kind < 3 ? s->kind : 0]);
  if (s->applied_index) ox_buf_printf(b, ", \"applied_index\": %u", s->applied_index);
  ox_json_write_opt_str(b, "phase", s->phase);
  ox_json_write_opt_str(b, "pass", s->pass);
  ox_json_write_opt_str(b, "rule", s->rule);
  ox_json_write_opt_str(b, "rule_file", s->rule_file);
  if (s->rule_line) ox_buf_printf(b, ", \"rule_line\": %u", s->rule_line);
  ox_json_write_opt_str(b, "anchor", s->anchor);
  ox_json_write_opt_str(b, "key", s->key);
  put_names(b, "matched", s->matched, s->n_matched);
  put_names(b, "removed", s->removed, s->n_removed);
  put_names(b, "added", s->added, s->n_added);
  if (s->n_prov) {
    ox_buf_puts(b, ", \"provenance\": [");
    for (uint32_t i = 0; i < s->n_prov; i++) {
      if (i) ox_buf_puts(b, ", ");
      ox_buf_putc(b, '[');
      ox_json_put_str(b, s->prov_old[i]);
      ox_buf_puts(b, ", ");
      ox_json_put_str(b, s->prov_new[i]);
      ox_buf_putc(b, ']');
    }
    ox_buf_putc(b, ']');
  }
  put_names(b, "scaffolding", s->scaffold, s->n_scaffold);
  if (s->kind != OX_STEP_APPLIED) {
    ox_buf_puts(b, ",\n     \"reason\": {\"code\": ");
    ox_json_put_str(b, ox_reason_code_name((OxReasonCode)s->reason.code));
    ox_buf_puts(b, ", \"args\": [");
    for (uint32_t i = 0; i < s->reason.n_args; i++) {
      if (i) ox_buf_puts(b, ", ");
      ox_json_put_str(b, s->reason.args[i]);
    }
    ox_buf_puts(b, "], \"nodes\": [");
    for (uint32_t i = 0; i < s->reason.n_args; i++) {
      if (i) ox_buf_puts(b, ", ");
      ox_buf_puts(b, s->reason.nodes[i] ? "true" : "false");
    }
    char *text = ox_reason_format(&s->reason);
    ox_buf_puts(b, "], \"text\": ");
    ox_json_put_str(b, text);
    free(text);
    ox_buf_putc(b, '}');
  }
  if (s->cost.set) {
    ox_buf_puts(b, ",\n     ");
    put_cost(b, &s->cost);
  }
  bool any = false;
  for (int k = 0; k < OX_CHECK_KINDS; k++) any |= s->checks[k].status != OX_CHECK_NOT_RUN;
  if (any) {
    ox_buf_puts(b, ",\n     \"checks\": {");
    bool first = true;
    for (int k = 0; k < OX_CHECK_KINDS; k++) {
      const OxCheckResult *c = &s->checks[k];
      if (c->status == OX_CHECK_NOT_RUN) continue;
      if (!first) ox_buf_puts(b, ", ");
      first = false;
      ox_json_put_key(b, ox_check_kind_name((OxCheckKind)k));
      ox_buf_puts(b, "{\"status\": ");
      ox_json_put_str(b, ox_check_status_name((OxCheckStatus)c->status));
      ox_json_write_opt_str(b, "detail", c->detail);
      if (k == OX_CHECK_NUMERIC && c->trials) {
        put_num(b, "max_abs", c->max_abs);
        put_num(b, "max_rel", c->max_rel);
        put_num(b, "tol", c->tol);
        ox_buf_printf(b, ", \"trials\": %u", c->trials);
      }
      ox_json_write_opt_str(b, "checked_shape", c->checked_shape);
      put_num(b, "seconds", c->seconds);
      ox_buf_putc(b, '}');
    }
    ox_buf_putc(b, '}');
  }
  if (s->n_edits) {
    ox_buf_puts(b, ",\n     \"edits\": [");
    for (uint32_t i = 0; i < s->n_edits; i++) {
      ox_buf_puts(b, i ? ",\n       " : "\n       ");
      write_edit(t, &s->edits[i], b);
    }
    ox_buf_puts(b, "]");
  }
  if (s->options) {
    ox_buf_puts(b, ", \"options\": ");
    ox_json_put_str(b, s->options);
  }
  put_num(b, "seconds", s->seconds);
  ox_buf_putc(b, '}');
}

static void write_v2(const OxTrace *t, OxBuf *out) {
  ox_buf_puts(out, "{\n  \"format\": \"optimus-trace\",\n  \"version\": 2,\n  \"input\": {\"file\": ");
  ox_json_put_str(out, t->input_file ? t->input_file : "");
  ox_buf_puts(out, ", \"hash\": ");
  ox_json_put_str(out, t->input_hash ? t->input_hash : "");
  ox_buf_puts(out, "}");
  if (t->config) {
    /* the config is JSON text produced by ox_pipeline_to_json; embed it as an object */
    ox_buf_puts(out, ",\n  \"config\": ");
    if (t->config[0] == '{')
      ox_buf_puts(out, t->config);
    else
      ox_json_put_str(out, t->config);
  }
  if (t->checks) {
    ox_buf_puts(out, ",\n  \"checks\": ");
    ox_json_put_str(out, t->checks);
  }
  ox_buf_printf(out, ",\n  \"summary\": {\"steps\": %u, \"applied\": %u, \"rejected\": %u, \"check_failed\": %u}",
                t->n_steps, t->n_applied, t->n_rejected, t->n_check_failed);
  if (t->cost.set) {
    ox_buf_puts(out, ",\n  ");
    put_cost(out, &t->cost);
  }
  ox_buf_puts(out, ",\n  \"counters\": {");
  for (uint32_t i = 0; i < t->n_counters; i++) {
    if (i) ox_buf_puts(out, ", ");
    ox_json_put_key(out, t->counter_names[i]);
    ox_buf_printf(out, "%lld", (long long)t->counter_values[i]);
  }
  ox_buf_puts(out, "}");
  put_pass_stats(out, t, false);
  put_num(out, "seconds", t->seconds);
  ox_buf_puts(out, ",\n  \"steps\": [");
  for (uint32_t i = 0; i < t->n_steps; i++) {
    ox_buf_puts(out, i ? ",\n" : "\n");
    write_step(t, &t->steps[i], out);
  }
  ox_buf_puts(out, t->n_steps ? "\n  ]\n}\n" : "]\n}\n");
}

/* ---- version 3: node names and metas in tables, edits as arrays, compact, one step a line */

enum { W3_RECENT = 4096 };

typedef struct W3Recent {
  const char *name;
  uint32_t index;
} W3Recent;

typedef struct W3 {
  const OxTrace *t;
  int version;            /* 3, or 4 (edits run together: w4_edits) */
  W3Recent *recent;       /* direct-mapped cache in front of ix: a step names the same nodes
                             several times (matched, edits, provenance), chains of adds and
                             moves name the previous node */
  OxNameMap *ix;          /* name -> 1 + its index in names, for a name not interned in the pool */
  uint32_t *ix_by_id;     /* 1 + index in names, by the name's id in the pool's string table */
  uint32_t cap_ix_by_id, pool_tag;
  OxBuf names;            /* the names table's text, made as names are added (by the live
                             writer's thread, during the run) */
  uint32_t n_names;
  OxStrTab *meta_text;    /* compact text of each distinct meta, interned ... */
  OxNameMap *meta_ix;     /* ... -> 1 + its index in metas */
  OxNameMap *meta_by_t;   /* tensor metas array -> 1 + the index of a meta with it (a hint) */
  OxMeta *meta_first;     /* metas[i] as first met (kind, n, inferred: to check a hint) */
  OxBuf metas;            /* the "metas" items written so far */
  uint32_t n_metas;
  OxNameMap *target_ix[OX_OP_COUNT]; /* per op: target -> 1 + its index in targets */
  OxBuf targets;          /* the "targets" items written so far */
  uint32_t n_targets;
  OxStrTab *str_text;     /* version 4: each distinct reason argument, interned ... */
  OxNameMap *str_ix;      /* ... -> 1 + its index in strings */
  OxBuf strings;          /* the "strings" items written so far */
  uint32_t n_strings;
  OxBuf tmp;
  /* set by a live writer (ox_trace_live_start): the pool's node reference names as of the steps
   * handed over (node references are resolved here, not in the pool another thread grows) */
  const char *const *refs;
  uint32_t n_refs;
  /* version 5 */
  OxStrTab *rule_text;    /* each distinct (phase, pass, rule), as text, interned ... */
  OxNameMap *rule_ix;     /* ... -> 1 + its index in rules */
  OxBuf rules;            /* the "rules" items written so far */
  uint32_t n_rules;
  const char *last_rule[3]; /* the step before's (phase, pass, rule) and its index + 1 */
  uint32_t last_rule_ix;
  uint32_t *scratch;      /* the indices of a list being written */
  size_t cap_scratch;
  uint64_t expanded;      /* node references and edits the ranges and getitems items written so
                             far stand for: never more than the bytes of the steps written (a
                             reader allows as many as the file has bytes) */
  uint64_t written;       /* bytes of the steps before the current one */
  size_t step_start;      /* where the current step starts in its buffer */
} W3;

/* The index of name in the names table (added on first use). Every name a trace holds is
 * interned in its pool (recording interns through ox_trace_intern_from, the reader through the
 * pool), so the pointer identifies the name: one probe of a pointer map, no hashing of text. */
static uint32_t w3_index(W3 *w, const char *name) {
  W3Recent *r = &w->recent[(uint32_t)(((uintptr_t)name * 0x9E3779B97F4A7C15ull) >> 32) & (W3_RECENT - 1)];
  if (r->name == name) return r->index;
  /* by the name's id in the pool's table (an array, no probing); the string's head is written
   * once when it is interned, so a live writer may read it while the pool grows */
  uint32_t k = ox_strtab_id(w->pool_tag, name), v;
  if (k) {
    if (k >= w->cap_ix_by_id) {
      uint32_t cap = w->cap_ix_by_id ? w->cap_ix_by_id : 1024;
      while (cap <= k) cap *= 2;
      w->ix_by_id = ox_xrealloc(w->ix_by_id, (size_t)cap * sizeof *w->ix_by_id);
      memset(w->ix_by_id + w->cap_ix_by_id, 0, (size_t)(cap - w->cap_ix_by_id) * sizeof *w->ix_by_id);
      w->cap_ix_by_id = cap;
    }
    v = w->ix_by_id[k];
  } else {
    v = ox_namemap_get(w->ix, name);
  }
  if (v) {
    *r = (W3Recent){name, v - 1};
    return v - 1;
  }
  if (w->n_names) ox_buf_putc(&w->names, ',');
  ox_json_put_str(&w->names, name);
  w->n_names++;
  if (k) w->ix_by_id[k] = w->n_names;
  else ox_namemap_set(w->ix, name, w->n_names);
  *r = (W3Recent){name, w->n_names - 1};
  return w->n_names - 1;
}

/* Writes an unsigned number (the writer's hot path: ~1M indices in a 100k-node trace). */
static void put_u32(OxBuf *b, uint32_t v) {
  ox_buf_reserve(b, 11);
  b->len += (size_t)ox_fmt_u64(b->data + b->len, v);
}

static void w3_ref(W3 *w, OxBuf *b, const char *name) {
  if (name)
    put_u32(b, w3_index(w, name));
  else
    ox_buf_puts(b, "null");
}

/* a name in a list: a missing one is written as "" (as version 2 does) */
static void w3_list_ref(W3 *w, OxBuf *b, const char *name) { put_u32(b, w3_index(w, name ? name : "")); }

static void w3_node_ref(void *ctx, OxBuf *b, const char *name) { w3_ref(ctx, b, name); }

/* ,"key": (keys are ours: nothing to escape) */
static void w3_key(OxBuf *b, const char *key) {
  ox_buf_puts(b, ",\"");
  ox_buf_puts(b, key);
  ox_buf_puts(b, "\":");
}

/* Version 5: whether ranges and getitems items may stand for k more node references and edits
 * (all of them together for no more than the bytes of the steps written, this one's so far
 * included: a reader takes as many as the file has bytes, so it reads whatever this wrote). */
static bool w5_may_expand(const W3 *w, const OxBuf *b, uint64_t k) {
  return w->expanded + k <= w->written + (b->len - w->step_start);
}

/* w->scratch with room for n indices. */
static uint32_t *w5_scratch(W3 *w, uint32_t n) {
  if (n > w->cap_scratch) {
    w->cap_scratch = n > 2 * w->cap_scratch ? n : 2 * w->cap_scratch;
    w->scratch = ox_xrealloc(w->scratch, w->cap_scratch * sizeof *w->scratch);
  }
  return w->scratch;
}

/* The indices of names[0, n) (a missing name as ""), in w->scratch, each added to the names
 * table on first use, in order. */
static const uint32_t *w5_indices(W3 *w, const char *const *names, uint32_t n) {
  uint32_t *ix = w5_scratch(w, n);
  for (uint32_t i = 0; i < n; i++) ix[i] = w3_index(w, names[i] ? names[i] : "");
  return ix;
}

/* The items of an index list, comma-separated: version 5 writes 3 or more consecutive ascending
 * indices as the range [first, last]. */
static void w5_put_indices(W3 *w, OxBuf *b, const uint32_t *ix, uint32_t n) {
  for (uint32_t i = 0; i < n;) {
    if (i) ox_buf_putc(b, ',');
    uint32_t j = i + 1;
    if (w->version >= 5)
      while (j < n && ix[j] == ix[j - 1] + 1) j++;
    if (j - i >= 3 && w5_may_expand(w, b, j - i)) {
      w->expanded += j - i;
      ox_buf_putc(b, '[');
      put_u32(b, ix[i]);
      ox_buf_putc(b, ',');
      put_u32(b, ix[j - 1]);
      ox_buf_putc(b, ']');
      i = j;
    } else {
      put_u32(b, ix[i++]);
    }
  }
}

/* the items of a list of names (w5_put_indices) */
static void w5_put_names(W3 *w, OxBuf *b, const char *const *names, uint32_t n) {
  w5_put_indices(w, b, w5_indices(w, names, n), n);
}

/* {"nodes": [...]}'s items (OxJsonStyle.node_list) */
static void w5_node_list(void *ctx, OxBuf *b, const char *const *names, uint32_t n) { w5_put_names(ctx, b, names, n); }

/* ,"key":[i, ...] */
static void w3_list(W3 *w, OxBuf *b, const char *key, const char *const *names, uint32_t n) {
  w3_key(b, key);
  ox_buf_putc(b, '[');
  if (w->version >= 5) {
    w5_put_names(w, b, names, n);
  } else {
    for (uint32_t i = 0; i < n; i++) {
      if (i) ox_buf_putc(b, ',');
      w3_list_ref(w, b, names[i]);
    }
  }
  ox_buf_putc(b, ']');
}

/* the same, left out when empty */
static void w3_refs(W3 *w, OxBuf *b, const char *key, const char *const *names, uint32_t n) {
  if (n) w3_list(w, b, key, names, n);
}

/* Whether names[0, n) are the names of s's edits of kind k, in order (a version 3 reader
 * rebuilds a step's removed and added lists from its erase and add edits). */
static bool same_as_edits(const OxStep *s, OxTraceEditKind k, const char *const *names, uint32_t n) {
  uint32_t j = 0;
  for (uint32_t i = 0; i < s->n_edits; i++) {
    const OxTraceEdit *e = &s->edits[i];
    if (e->kind != k || !e->name) continue;
    if (j >= n || !names[j] || strcmp(names[j], e->name) != 0) return false;
    j++;
  }
  return j == n;
}

static void w3_str(OxBuf *b, const char *key, const char *s) {
  if (!s) return;
  w3_key(b, key);
  ox_json_put_str(b, s);
}

/* ,"key":v for a time in seconds, left out when 0; version 5 rounds it to 3 significant digits
 * (a profile: "1.86e-05", not "1.8635000742506236e-05") */
static void w5_seconds(const W3 *w, OxBuf *b, const char *key, double v) {
  if (v == 0) return;
  if (w->version >= 5 && isfinite(v)) {
    /* v rounded to 3 digits by an exact power of ten (the division or product is then the
     * double nearest the rounded decimal, which prints as it) */
    static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int e = (int)floor(log10(fabs(v)));
    if (e >= -20 && e <= 2)
      v = round(v * p10[2 - e]) / p10[2 - e];
    else if (e > 2 && e <= 24)
      v = round(v / p10[e - 2]) * p10[e - 2];
  }
  w3_key(b, key);
  if (isfinite(v))
    ox_buf_put_pyfloat(b, v);
  else
    ox_buf_puts(b, "null");
}

/* ,"key":v; a zero (or, with skip_zero false, nothing is skipped) left out */
static void w3_num(OxBuf *b, const char *key, double v, bool skip_zero) {
  if (skip_zero && v == 0) return;
  w3_key(b, key);
  if (isfinite(v))
    ox_buf_put_pyfloat(b, v);
  else
    ox_buf_puts(b, "null");
}

/* Appends s[0, n) without the blanks outside strings (the document writers' ", " and ": "). */
static void put_compact(OxBuf *b, const char *s, size_t n) {
  bool in_str = false;
  ox_buf_reserve(b, n);
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (in_str) {
      if (c == '\\' && i + 1 < n) {
        b->data[b->len++] = c;
        c = s[++i];
      } else if (c == '"') {
        in_str = false;
      }
    } else if (c == ' ' || c == '\n') {
      continue;
    } else if (c == '"') {
      in_str = true;
    }
    b->data[b->len++] = c;
  }
  b->data[b->len] = 0;
}

/* The index of m in the metas table (added on first use), or -1 when m says nothing (the
 * version 2 writer leaves such a meta out too). */
static int64_t w3_meta(W3 *w, const OxMeta *m) {
  static const char prefix[] = ", \"meta\": ";
  /* metas recorded in the pool share their tensor metas (ox_graph_meta_share) and are never
   * written in place: a tensor metas array met before, with the same kind, count and inferred
   * flag, is the same meta, found without making its text (a split's tuple of 128 is 6 kB) */
  uint32_t hint = m->t ? ox_namemap_get(w->meta_by_t, (const char *)m->t) : 0;
  if (hint) {
    const OxMeta *f = &w->meta_first[hint - 1];
    if (f->kind == m->kind && f->n == m->n && f->inferred == m->inferred && f->t == m->t) return hint - 1;
  }
  w->tmp.len = 0;
  ox_json_write_meta(m, &w->tmp);
  if (w->tmp.len <= sizeof prefix - 1) return -1;
  size_t skip = sizeof prefix - 1;
  const char *text = ox_strtab_intern(w->meta_text, w->tmp.data + skip, w->tmp.len - skip);
  uint32_t v = ox_namemap_get(w->meta_ix, text);
  if (!v) {
    if (w->n_metas) ox_buf_puts(&w->metas, ",\n");
    put_compact(&w->metas, text, strlen(text));
    if ((w->n_metas & (w->n_metas - 1)) == 0) /* a power of two (or 0): grow */
      w->meta_first = ox_xrealloc(w->meta_first, (w->n_metas ? 2 * w->n_metas : 16) * sizeof *w->meta_first);
    w->meta_first[w->n_metas] = *m;
    ox_namemap_set(w->meta_ix, text, v = ++w->n_metas);
  }
  if (m->t && !hint && w->meta_first[v - 1].t == m->t) ox_namemap_set(w->meta_by_t, (const char *)m->t, v);
  return v - 1;
}

/* Version 4: the index of s in the strings table (added on first use; reason arguments). */
static uint32_t w4_string(W3 *w, const char *s) {
  const char *k = ox_strtab_intern(w->str_text, s, strlen(s));
  uint32_t v = ox_namemap_get(w->str_ix, k);
  if (v) return v - 1;
  if (w->n_strings) ox_buf_putc(&w->strings, ',');
  ox_json_put_str(&w->strings, s);
  ox_namemap_set(w->str_ix, k, ++w->n_strings);
  return w->n_strings - 1;
}

/* Version 5: the index of the step's (phase, pass, rule) in the rules table (added on first
 * use). Steps come in runs of one rule: the step before's is tried first. */
static uint32_t w5_rule(W3 *w, const OxStep *s) {
  const char *k3[3] = {s->phase, s->pass, s->rule};
  if (w->last_rule_ix && w->last_rule[0] == k3[0] && w->last_rule[1] == k3[1] && w->last_rule[2] == k3[2])
    return w->last_rule_ix - 1;
  w->tmp.len = 0; /* the key: each part's length (or "-" for none) and text */
  for (int i = 0; i < 3; i++)
    if (k3[i])
      ox_buf_printf(&w->tmp, "%zu:%s", strlen(k3[i]), k3[i]);
    else
      ox_buf_puts(&w->tmp, "-");
  const char *key = ox_strtab_intern(w->rule_text, w->tmp.data, w->tmp.len);
  uint32_t v = ox_namemap_get(w->rule_ix, key);
  if (!v) {
    static const char *const names[3] = {"phase", "pass", "rule"};
    ox_buf_puts(&w->rules, w->n_rules ? ",\n{" : "{");
    bool first = true;
    for (int i = 0; i < 3; i++) {
      if (!k3[i]) continue;
      ox_buf_printf(&w->rules, "%s\"%s\":", first ? "" : ",", names[i]);
      ox_json_put_str(&w->rules, k3[i]);
      first = false;
    }
    ox_buf_putc(&w->rules, '}');
    ox_namemap_set(w->rule_ix, key, v = ++w->n_rules);
  }
  memcpy(w->last_rule, k3, sizeof k3);
  w->last_rule_ix = v;
  return v - 1;
}

/* The index of (op, target) in the targets table (added on first use). */
static uint32_t w3_target(W3 *w, uint8_t op, const char *target) {
  if (op >= OX_OP_COUNT) op = 0;
  if (!target) target = "";
  if (!w->target_ix[op]) w->target_ix[op] = ox_namemap_new();
  uint32_t v = ox_namemap_get(w->target_ix[op], target);
  if (v) return v - 1;
  ox_buf_puts(&w->targets, w->n_targets ? ",[\"" : "[\"");
  ox_buf_puts(&w->targets, ox_op_name((OxOp)op));
  ox_buf_puts(&w->targets, "\",");
  ox_json_put_str(&w->targets, target);
  ox_buf_putc(&w->targets, ']');
  ox_namemap_set(w->target_ix[op], target, ++w->n_targets);
  return w->n_targets - 1;
}

/* An add's fields after its name: ,after,target,args[,meta][,kwargs] */
static void w3_add_fields(W3 *w, const OxTraceEdit *e, OxBuf *b) {
  const OxJsonStyle st = {.comma = ",", .colon = ":", .node_ref = w3_node_ref, .ctx = w, .refs = w->refs, .n_refs = w->n_refs,
                          .node_lists = w->version >= 4, .node_list = w->version >= 5 ? w5_node_list : NULL};
  int64_t meta = e->has_meta ? w3_meta(w, &e->data->meta) : -1;
  ox_buf_putc(b, ',');
  w3_ref(w, b, e->after);
  ox_buf_putc(b, ',');
  put_u32(b, w3_target(w, e->op, e->target));
  ox_buf_putc(b, ',');
  ox_json_write_items_styled(w->t->pool, &e->data->args, b, &st);
  if (meta >= 0 || e->data->kwargs.n) {
    ox_buf_putc(b, ',');
    if (meta >= 0)
      put_u32(b, (uint32_t)meta);
    else
      ox_buf_puts(b, "null");
  }
  if (e->data->kwargs.n) {
    ox_buf_putc(b, ',');
    ox_json_write_value_styled(w->t->pool, &e->data->kwargs, b, &st);
  }
}

static void w3_edit(W3 *w, const OxTraceEdit *e, OxBuf *b) {
  const OxJsonStyle st = {.comma = ",", .colon = ":", .node_ref = w3_node_ref, .ctx = w, .refs = w->refs, .n_refs = w->n_refs,
                          .node_lists = w->version >= 4, .node_list = w->version >= 5 ? w5_node_list : NULL};
  if (e->kind == OX_TEDIT_MOVE && !e->name) {
    ox_buf_puts(b, "[\"toposort\"]");
    return;
  }
  ox_buf_puts(b, "[\"");
  ox_buf_puts(b, edit_kind_names[e->kind]);
  ox_buf_puts(b, "\",");
  w3_ref(w, b, e->name);
  switch ((OxTraceEditKind)e->kind) {
  case OX_TEDIT_ADD: w3_add_fields(w, e, b); break;
  case OX_TEDIT_ARGS:
    ox_buf_putc(b, ',');
    ox_json_write_items_styled(w->t->pool, &e->data->args, b, &st);
    if (e->data->kwargs.n) {
      ox_buf_putc(b, ',');
      ox_json_write_value_styled(w->t->pool, &e->data->kwargs, b, &st);
    }
    break;
  case OX_TEDIT_MOVE:
    ox_buf_putc(b, ',');
    w3_ref(w, b, e->after);
    break;
  case OX_TEDIT_META: {
    int64_t meta = w3_meta(w, &e->data->meta);
    ox_buf_putc(b, ',');
    if (meta >= 0)
      put_u32(b, (uint32_t)meta);
    else
      ox_buf_puts(b, "null");
    break;
  }
  case OX_TEDIT_RENAME:
    ox_buf_putc(b, ',');
    ox_json_put_str(b, e->new_name ? e->new_name : "");
    break;
  case OX_TEDIT_REPLACE:
    ox_buf_putc(b, ',');
    w3_ref(w, b, e->from);
    ox_buf_putc(b, ',');
    w3_ref(w, b, e->to);
    break;
  case OX_TEDIT_ERASE: break;
  }
  ox_buf_putc(b, ']');
}

/* Version 4 writes runs of edits as one (docs/trace-format.md, "Edits"):
 *   ["erase", a, b, ...]             erase a, then b ...
 *   ["move", a, after, b, c, ...]    a after `after`, b after a, c after b ...
 *   ["replace_input", u, old, new, v, ...]   the same rewire in u, then in v ...
 *   ["replace", old, [u, ...], name, after, target, args(, meta(, kwargs))]
 *       add name (as an add edit), rewire u ... from old to it, erase old.
 * A reader expands them into the edits they stand for, so the trace in memory is the same. */
static bool same_name(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* The end of the replace run at e[i] (an add of a name, one or more replace_input edits from one
 * node to that name, the erase of that node), or i when none starts there. A version 4 reader
 * finds the same runs in the edits it expands (provenance_from_replaces). */
static uint32_t replace_run(const OxTraceEdit *e, uint32_t n, uint32_t i) {
  if (i + 2 >= n || e[i].kind != OX_TEDIT_ADD || !e[i].name || e[i + 1].kind != OX_TEDIT_REPLACE) return i;
  const char *old = e[i + 1].from;
  if (!old) return i;
  uint32_t j = i + 1;
  while (j < n && e[j].kind == OX_TEDIT_REPLACE && e[j].name && same_name(e[j].from, old) && same_name(e[j].to, e[i].name))
    j++;
  return j < n && e[j].kind == OX_TEDIT_ERASE && same_name(e[j].name, old) ? j + 1 : i;
}

/* The names of e[from, to), comma-separated (in version 5 with ranges: w5_put_indices). */
static void w4_names_of(W3 *w, OxBuf *b, const OxTraceEdit *e, uint32_t from, uint32_t to) {
  uint32_t *ix = w5_scratch(w, to - from);
  for (uint32_t j = from; j < to; j++) ix[j - from] = w3_index(w, e[j].name);
  w5_put_indices(w, b, ix, to - from);
}

/* Whether the step's provenance is the (old, name) pairs of its replace runs, in order (version 4
 * then leaves it out). */
static bool provenance_is_replaces(const OxStep *s) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < s->n_edits;) {
    uint32_t end = replace_run(s->edits, s->n_edits, i);
    if (end == i) {
      i++;
      continue;
    }
    if (k >= s->n_prov || !same_name(s->prov_old[k], s->edits[i + 1].from) || !same_name(s->prov_new[k], s->edits[i].name))
      return false;
    k++;
    i = end;
  }
  return k == s->n_prov;
}

/* The name of a node value (as the value writer finds it), or NULL. */
static const char *w3_value_name(const W3 *w, const OxValue *v) {
  if (v->kind != OX_V_NODE) return NULL;
  return !w->refs ? ox_graph_ref_name(w->t->pool, v->u.node) : v->u.node && v->u.node <= w->n_refs ? w->refs[v->u.node] : NULL;
}

/* Version 5: whether e[i] is a unit of a getitems item: the add of getitem(src, k) (operator.getitem
 * of a node and an int, no kwargs), alone or as the add of a replace run; *end is past it. */
static bool getitem_unit(const W3 *w, const OxTraceEdit *e, uint32_t n, uint32_t i, const char **src, int64_t *k,
                         uint32_t *end) {
  const OxTraceEdit *a = &e[i];
  if (a->kind != OX_TEDIT_ADD || !a->name || a->op != OX_OP_CALL_FUNCTION || !a->target ||
      strcmp(a->target, "operator.getitem") != 0 || !a->data)
    return false;
  const OxTraceEditData *d = a->data;
  if (d->kwargs.n || d->args.kind != OX_V_TUPLE || d->args.n != 2 || d->args.u.items[1].kind != OX_V_INT ||
      !(*src = w3_value_name(w, &d->args.u.items[0])))
    return false;
  *k = d->args.u.items[1].u.i;
  uint32_t r = replace_run(e, n, i);
  *end = r > i ? r : i + 1;
  return true;
}

/* Version 5: the getitems item starting at e[i] (docs/trace-format.md, "Edits"):
 *   ["getitems", src, first, k, meta, count]  or  [..., meta, [entry, ...]]
 * getitem(src, k), getitem(src, k + 1) ... named names[first], names[first + 1] ..., each right
 * after the one before (the first after src); an entry [old, users] makes that add a replace of
 * old. Returns the end of what it wrote, or i (nothing written) when no item of two or more
 * starts there. */
static uint32_t w5_getitems(W3 *w, const OxTraceEdit *e, uint32_t n, uint32_t i, OxBuf *b) {
  const char *src, *s2, *prev = e[i].name;
  int64_t k0, k;
  uint32_t at, m = 1, next;
  if (!getitem_unit(w, e, n, i, &src, &k0, &at) || !same_name(e[i].after, src)) return i;
  while (at < n && getitem_unit(w, e, n, at, &s2, &k, &next) && same_name(s2, src) && k > k0 &&
         (uint64_t)k - (uint64_t)k0 == m && same_name(e[at].after, prev)) {
    prev = e[at].name;
    m++;
    at = next;
  }
  while (m >= 2 && !w5_may_expand(w, b, m)) m--;
  if (m < 2) return i;
  /* the names must be consecutive in the table: src first, then the adds' names (those met
   * before keep their index; the run ends at the first that breaks the sequence) */
  w3_index(w, src);
  uint32_t first = w3_index(w, e[i].name), j = 1;
  getitem_unit(w, e, n, i, &s2, &k, &at);
  for (; j < m; j++) {
    if (w3_index(w, e[at].name) != first + j) break;
    getitem_unit(w, e, n, at, &s2, &k, &at);
  }
  m = j;
  if (m < 2) return i;
  w->expanded += m;
  /* the metas: one for all, or one each */
  int64_t meta0 = e[i].has_meta ? w3_meta(w, &e[i].data->meta) : -1;
  bool same_meta = true, replaces = false;
  at = i;
  for (j = 0; j < m; j++) {
    getitem_unit(w, e, n, at, &s2, &k, &next);
    int64_t mj = e[at].has_meta ? w3_meta(w, &e[at].data->meta) : -1;
    same_meta &= mj == meta0;
    replaces |= next > at + 1;
    at = next;
  }
  uint32_t end = at;
  ox_buf_puts(b, "[\"getitems\",");
  put_u32(b, w3_index(w, src));
  ox_buf_putc(b, ',');
  put_u32(b, first);
  ox_buf_putc(b, ',');
  ox_buf_put_i64(b, k0);
  ox_buf_putc(b, ',');
  if (same_meta) {
    if (meta0 >= 0) put_u32(b, (uint32_t)meta0);
    else ox_buf_puts(b, "null");
  } else {
    ox_buf_putc(b, '[');
    for (j = 0, at = i; j < m; j++, at = next) {
      getitem_unit(w, e, n, at, &s2, &k, &next);
      if (j) ox_buf_putc(b, ',');
      if (e[at].has_meta) put_u32(b, (uint32_t)w3_meta(w, &e[at].data->meta));
      else ox_buf_puts(b, "null");
    }
    ox_buf_putc(b, ']');
  }
  ox_buf_putc(b, ',');
  if (!replaces) {
    put_u32(b, m);
  } else {
    ox_buf_putc(b, '[');
    for (j = 0, at = i; j < m; j++, at = next) {
      getitem_unit(w, e, n, at, &s2, &k, &next);
      if (j) ox_buf_putc(b, ',');
      if (next == at + 1) {
        ox_buf_puts(b, "null");
        continue;
      }
      /* [old, [users]]: e[at + 1 .. next - 2] rewire the users, e[next - 1] erases old */
      ox_buf_putc(b, '[');
      w3_ref(w, b, e[at + 1].from);
      ox_buf_puts(b, ",[");
      w4_names_of(w, b, e, at + 1, next - 1);
      ox_buf_puts(b, "]]");
    }
    ox_buf_putc(b, ']');
  }
  ox_buf_putc(b, ']');
  return end;
}

static void w4_edits(W3 *w, const OxStep *s, OxBuf *b) {
  const OxTraceEdit *e = s->edits;
  uint32_t n = s->n_edits;
  for (uint32_t i = 0; i < n;) {
    if (i) ox_buf_putc(b, ',');
    uint32_t end = w->version >= 5 ? w5_getitems(w, e, n, i, b) : i;
    if (end > i) {
      i = end;
      continue;
    }
    end = replace_run(e, n, i);
    if (end > i) {
      ox_buf_puts(b, "[\"replace\",");
      w3_ref(w, b, e[i + 1].from);
      ox_buf_puts(b, ",[");
      w4_names_of(w, b, e, i + 1, end - 1);
      ox_buf_puts(b, "],");
      w3_ref(w, b, e[i].name);
      w3_add_fields(w, &e[i], b);
      ox_buf_putc(b, ']');
      i = end;
      continue;
    }
    const OxTraceEdit *x = &e[i++];
    if (!x->name || (x->kind != OX_TEDIT_ERASE && x->kind != OX_TEDIT_MOVE && x->kind != OX_TEDIT_REPLACE)) {
      w3_edit(w, x, b);
      continue;
    }
    w3_edit(w, x, b);
    b->len--; /* reopen the array: the run's other names follow */
    const char *last = x->name;
    uint32_t from = i;
    for (; i < n && e[i].kind == x->kind && e[i].name && replace_run(e, n, i) == i; i++) {
      if (x->kind == OX_TEDIT_MOVE && !same_name(e[i].after, last)) break;
      if (x->kind == OX_TEDIT_REPLACE && (!same_name(e[i].from, x->from) || !same_name(e[i].to, x->to))) break;
      last = e[i].name;
    }
    if (i > from) {
      ox_buf_putc(b, ',');
      w4_names_of(w, b, e, from, i);
    }
    ox_buf_putc(b, ']');
  }
}

static void w3_step(W3 *w, const OxStep *s, OxBuf *b) {
  w->step_start = b->len;
  ox_buf_puts(b, "{\"kind\":\"");
  ox_buf_puts(b, step_kind_names[s->kind < 3 ? s->kind : 0]);
  ox_buf_putc(b, '"');
  if (s->applied_index) {
    ox_buf_puts(b, ",\"applied_index\":");
    put_u32(b, s->applied_index);
  }
  if (w->version < 5) {
    w3_str(b, "phase", s->phase);
    w3_str(b, "pass", s->pass);
    w3_str(b, "rule", s->rule);
  } else if (s->phase || s->pass || s->rule) {
    ox_buf_puts(b, ",\"rule\":");
    put_u32(b, w5_rule(w, s));
  }
  w3_str(b, "rule_file", s->rule_file);
  if (s->rule_line) ox_buf_printf(b, ",\"rule_line\":%u", s->rule_line);
  if (s->anchor) {
    ox_buf_puts(b, ",\"anchor\":");
    w3_ref(w, b, s->anchor);
  }
  w3_str(b, "key", s->key);
  w3_refs(w, b, "matched", s->matched, s->n_matched);
  /* removed / added: left out when they are the names of the erase / add edits, in order
   * (written, even empty, when not) */
  if (!same_as_edits(s, OX_TEDIT_ERASE, s->removed, s->n_removed)) w3_list(w, b, "removed", s->removed, s->n_removed);
  if (!same_as_edits(s, OX_TEDIT_ADD, s->added, s->n_added)) w3_list(w, b, "added", s->added, s->n_added);
  if (w->version >= 4 ? !provenance_is_replaces(s) : s->n_prov != 0) {
    ox_buf_puts(b, ",\"provenance\":[");
    for (uint32_t i = 0; i < s->n_prov; i++) {
      ox_buf_puts(b, i ? ",[" : "[");
      w3_list_ref(w, b, s->prov_old[i]);
      ox_buf_putc(b, ',');
      w3_list_ref(w, b, s->prov_new[i]);
      ox_buf_putc(b, ']');
    }
    ox_buf_putc(b, ']');
  }
  w3_refs(w, b, "scaffolding", s->scaffold, s->n_scaffold);
  if (s->kind != OX_STEP_APPLIED) {
    ox_buf_puts(b, ",\"reason\":{\"code\":\"");
    ox_buf_puts(b, ox_reason_code_name((OxReasonCode)s->reason.code));
    ox_buf_puts(b, "\",\"args\":[");
    bool nodes = false;
    for (uint32_t i = 0; i < s->reason.n_args; i++) {
      if (i) ox_buf_putc(b, ',');
      const char *a = s->reason.args[i] ? s->reason.args[i] : "";
      if (w->version >= 4)
        put_u32(b, w4_string(w, a)); /* version 4: an index into "strings" */
      else
        ox_json_put_str(b, a);
      nodes |= s->reason.nodes[i] != NULL;
    }
    ox_buf_putc(b, ']');
    if (nodes) {
      ox_buf_puts(b, ",\"nodes\":[");
      for (uint32_t i = 0; i < s->reason.n_args; i++) {
        if (i) ox_buf_putc(b, ',');
        ox_buf_puts(b, s->reason.nodes[i] ? "true" : "false");
      }
      ox_buf_putc(b, ']');
    }
    ox_buf_putc(b, '}');
  }
  if (s->cost.set) {
    ox_buf_putc(b, ',');
    put_cost_sep(b, &s->cost, true);
  }
  bool any = false;
  for (int k = 0; k < OX_CHECK_KINDS; k++) any |= s->checks[k].status != OX_CHECK_NOT_RUN;
  if (any) {
    ox_buf_puts(b, ",\"checks\":{");
    bool first = true;
    for (int k = 0; k < OX_CHECK_KINDS; k++) {
      const OxCheckResult *c = &s->checks[k];
      if (c->status == OX_CHECK_NOT_RUN) continue;
      ox_buf_puts(b, first ? "\"" : ",\"");
      ox_buf_puts(b, ox_check_kind_name((OxCheckKind)k));
      ox_buf_puts(b, "\":{\"status\":\"");
      ox_buf_puts(b, ox_check_status_name((OxCheckStatus)c->status));
      ox_buf_putc(b, '"');
      first = false;
      if (w->version >= 5 && c->detail) { /* an index into "strings" */
        ox_buf_puts(b, ",\"detail\":");
        put_u32(b, w4_string(w, c->detail));
      } else {
        w3_str(b, "detail", c->detail);
      }
      if (k == OX_CHECK_NUMERIC && c->trials) {
        w3_num(b, "max_abs", c->max_abs, false);
        w3_num(b, "max_rel", c->max_rel, false);
        w3_num(b, "tol", c->tol, false);
        ox_buf_printf(b, ",\"trials\":%u", c->trials);
      }
      w3_str(b, "checked_shape", c->checked_shape);
      w5_seconds(w, b, "seconds", c->seconds);
      ox_buf_putc(b, '}');
    }
    ox_buf_putc(b, '}');
  }
  if (s->n_edits) {
    ox_buf_puts(b, ",\"edits\":[");
    if (w->version >= 4) {
      w4_edits(w, s, b);
    } else {
      for (uint32_t i = 0; i < s->n_edits; i++) {
        if (i) ox_buf_putc(b, ',');
        w3_edit(w, &s->edits[i], b);
      }
    }
    ox_buf_putc(b, ']');
  }
  w3_str(b, "options", s->options);
  w5_seconds(w, b, "seconds", s->seconds);
  ox_buf_putc(b, '}');
  w->written += b->len - w->step_start;
}

/* Room for the text up front, from an estimate: doubling a 20 MB buffer
 * copies it each time and touches fresh pages (on a VM the page faults were a quarter of the
 * writer's time); room not used is never touched. */
static void reserve_v3(W3 *w, OxBuf *out) {
  const OxTrace *t = w->t;
  size_t bytes = 4096 + (t->config ? strlen(t->config) : 0), refs = 0;
  for (uint32_t i = 0; i < t->n_steps; i++) {
    const OxStep *s = &t->steps[i];
    refs += 1 + (size_t)s->n_matched + s->n_removed + s->n_added + 2 * (size_t)s->n_prov + s->n_scaffold;
    refs += 3 * (size_t)s->n_edits;
    bytes += 256 + 48 * (size_t)s->n_edits;
    for (uint32_t k = 0; k < s->reason.n_args; k++) bytes += 4 + strlen(s->reason.args[k]);
    for (int k = 0; k < OX_CHECK_KINDS; k++)
      if (s->checks[k].detail) bytes += 64 + strlen(s->checks[k].detail);
  }
  /* a streaming output holds a few megabytes at a time, not the whole trace */
  ox_buf_reserve(out, out->sink ? 2 * (size_t)OX_BUF_DRAIN_BYTES : bytes + 8 * refs);
}

static void w3_init(W3 *w, const OxTrace *t, int version) {
  *w = (W3){.t = t,
            .version = version,
            .recent = ox_xcalloc(W3_RECENT, sizeof(W3Recent)),
            .ix = ox_namemap_new(),
            .pool_tag = ox_strtab_tag(t->pool->strings),
            .meta_text = ox_strtab_new(NULL),
            .meta_ix = ox_namemap_new(),
            .meta_by_t = ox_namemap_new(),
            .str_text = ox_strtab_new(NULL),
            .str_ix = ox_namemap_new(),
            .rule_text = ox_strtab_new(NULL),
            .rule_ix = ox_namemap_new()};
  ox_buf_init(&w->rules);
  ox_buf_init(&w->strings);
  ox_buf_init(&w->names);
  ox_buf_init(&w->metas);
  ox_buf_init(&w->targets);
  ox_buf_init(&w->tmp);
}

static void w3_free(W3 *w) {
  ox_buf_free(&w->rules);
  ox_namemap_free(w->rule_ix);
  ox_strtab_free(w->rule_text);
  free(w->scratch);
  ox_buf_free(&w->strings);
  ox_namemap_free(w->str_ix);
  ox_strtab_free(w->str_text);
  ox_buf_free(&w->metas);
  ox_buf_free(&w->targets);
  ox_buf_free(&w->tmp);
  for (int i = 0; i < OX_OP_COUNT; i++)
    if (w->target_ix[i]) ox_namemap_free(w->target_ix[i]);
  ox_buf_free(&w->names);
  ox_namemap_free(w->ix);
  free(w->ix_by_id);
  ox_namemap_free(w->meta_ix);
  ox_namemap_free(w->meta_by_t);
  ox_strtab_free(w->meta_text);
  free(w->meta_first);
  free(w->recent);
}

/* Everything before the steps: the header line and the config line, then the opening of "steps". */
static void w3_head(const OxTrace *t, int version, OxBuf *out) {
  ox_buf_printf(out, "{\"format\":\"optimus-trace\",\"version\":%d,\"input\":{\"file\":", version);
  ox_json_put_str(out, t->input_file ? t->input_file : "");
  ox_buf_puts(out, ",\"hash\":");
  ox_json_put_str(out, t->input_hash ? t->input_hash : "");
  ox_buf_putc(out, '}');
  w3_str(out, "checks", t->checks);
  ox_buf_printf(out, ",\"summary\":{\"steps\":%u,\"applied\":%u,\"rejected\":%u,\"check_failed\":%u}", t->n_steps,
                t->n_applied, t->n_rejected, t->n_check_failed);
  if (t->cost.set) {
    ox_buf_putc(out, ',');
    put_cost_sep(out, &t->cost, true);
  }
  ox_buf_puts(out, ",\"counters\":{");
  for (uint32_t i = 0; i < t->n_counters; i++) {
    if (i) ox_buf_putc(out, ',');
    ox_json_put_str(out, t->counter_names[i]);
    ox_buf_printf(out, ":%lld", (long long)t->counter_values[i]);
  }
  ox_buf_putc(out, '}');
  put_pass_stats(out, t, true);
  w3_num(out, "seconds", t->seconds, false);
  if (t->config) {
    ox_buf_puts(out, ",\n\"config\":");
    if (t->config[0] == '{')
      put_compact(out, t->config, strlen(t->config));
    else
      ox_json_put_str(out, t->config);
  }
  ox_buf_puts(out, ",\n\"steps\":[");
}

/* Everything after the steps: the tables they filled. */
static void w3_tail(W3 *w, uint32_t n_steps, OxBuf *out) {
  ox_buf_puts(out, n_steps ? "\n],\n\"names\":[" : "],\n\"names\":[");
  ox_buf_append(out, w->names.data, w->names.len);
  ox_buf_puts(out, "],\n\"targets\":[");
  ox_buf_append(out, w->targets.data, w->targets.len);
  ox_buf_puts(out, "],\n\"metas\":[");
  if (w->n_metas) {
    ox_buf_putc(out, '\n');
    ox_buf_append(out, w->metas.data, w->metas.len);
    ox_buf_putc(out, '\n');
  }
  if (w->version >= 4) {
    ox_buf_puts(out, "],\n\"strings\":[");
    ox_buf_append(out, w->strings.data, w->strings.len);
  }
  if (w->version >= 5) {
    ox_buf_puts(out, "],\n\"rules\":[");
    if (w->n_rules) {
      ox_buf_putc(out, '\n');
      ox_buf_append(out, w->rules.data, w->rules.len);
      ox_buf_putc(out, '\n');
    }
  }
  ox_buf_puts(out, "]}\n");
}

/* The header and config first, then the steps (one a line), then the tables the steps filled:
 * the steps are written straight into out, once (a reader finds the tables wherever they are). */
static void write_v3(const OxTrace *t, int version, OxBuf *out) {
  W3 w;
  w3_init(&w, t, version);
  reserve_v3(&w, out);
  w3_head(t, version, out);
  for (uint32_t i = 0; i < t->n_steps; i++) {
    ox_buf_putc(out, '\n');
    w3_step(&w, &t->steps[i], out);
    if (i + 1 < t->n_steps) ox_buf_putc(out, ',');
    ox_buf_drain(out); /* a streaming output (ox_buf_stream_to) takes what is final */
  }
  w3_tail(&w, t->n_steps, out);
  w3_free(&w);
}

/* ---- the live writer: steps encoded on a thread of their own while the run records more
 *
 * The recording thread owns the trace. At each ox_trace_steps_final it copies the new final steps
 * (the structs; what they point to is never changed again) and the pool's new node reference
 * names into the staging arrays, under the lock; the encoder thread takes the staged copies under
 * the lock and encodes them without it, into text it keeps (the header, which needs the run's
 * totals, comes first in the file). Nothing else is shared: the strings, value trees and metas
 * the steps point to live in the pool's arena and string table, whose memory never moves. */
typedef struct OxTraceLive {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* under mu */
  OxStep *stage;
  uint32_t n_stage, cap_stage;
  const char **stage_refs;
  uint32_t n_stage_refs, cap_stage_refs;
  bool done, quit;
  bool joined;        /* the recording thread's: the encoder thread was joined */
  /* the recording thread's: how much of the trace was handed over */
  uint32_t given_steps, given_refs;
  /* the encoder's (read by the recording thread only after the join) */
  W3 w;
  OxBuf text;        /* the steps' lines (with gz: those not compressed yet) */
  OxGzipWriter *gz;  /* for a gzipped trace: the steps' lines compressed as they come */
  OxBuf ztext;       /* ... into one gzip member */
  int spill;         /* scratch file beside the destination (-1: none): what is encoded goes there
                        a piece at a time, so the trace is never held whole in memory */
  uint64_t spilled;  /* bytes in it */
  bool broken;       /* zlib or the scratch file failed: the file is encoded again at the end */
  const char **refs; /* refs[1..n_refs]: the pool's reference names handed over so far */
  uint32_t n_refs, cap_refs;
  uint32_t n_encoded;
  uint32_t *encoded;   /* the trace's live_encoded: n_encoded, for the recording thread */
} OxTraceLive;

static void live_grow(void **a, uint32_t *cap, uint32_t need, size_t size) {
  if (need <= *cap) return;
  uint32_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  *a = ox_xrealloc(*a, (size_t)c * size);
  *cap = c;
}

/* On the recording thread: hand the steps and reference names recorded since the last call over. */
static void live_give(OxTraceLive *L, const OxTrace *t) {
  uint32_t n_refs = t->pool->ref_names ? t->pool->n_refs : 0;
  if (t->n_steps == L->given_steps && n_refs == L->given_refs) return;
  pthread_mutex_lock(&L->mu);
  uint32_t ns = t->n_steps - L->given_steps;
  live_grow((void **)&L->stage, &L->cap_stage, L->n_stage + ns, sizeof *L->stage);
  memcpy(L->stage + L->n_stage, t->steps + L->given_steps, (size_t)ns * sizeof *L->stage);
  L->n_stage += ns;
  uint32_t nr = n_refs - L->given_refs;
  live_grow((void **)&L->stage_refs, &L->cap_stage_refs, L->n_stage_refs + nr, sizeof *L->stage_refs);
  if (nr) memcpy(L->stage_refs + L->n_stage_refs, t->pool->ref_names + L->given_refs + 1, (size_t)nr * sizeof *L->stage_refs);
  L->n_stage_refs += nr;
  pthread_cond_signal(&L->cv);
  pthread_mutex_unlock(&L->mu);
  L->given_steps = t->n_steps;
  L->given_refs = n_refs;
  /* for tests: until the writer has encoded them (10 s at most) */
  for (int ms = 0; ox_trace_live_wait && ms < 10000 && __atomic_load_n(L->encoded, __ATOMIC_ACQUIRE) < t->n_steps; ms++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
}

bool ox_trace_live_wait = false;

size_t ox_trace_live_piece = OX_BUF_DRAIN_BYTES;

static void live_compress(OxTraceLive *L, bool finish) {
  if (!L->broken && !ox_gzip_writer_put(L->gz, L->text.data, L->text.len, finish, &L->ztext)) L->broken = true;
  L->text.len = 0;
}

/* The encoded text (compressed, for a gzipped trace) to the scratch file once a piece is held. */
static void live_spill(OxTraceLive *L) {
  if (L->gz && L->text.len >= ox_trace_live_piece) live_compress(L, false);
  OxBuf *o = L->gz ? &L->ztext : &L->text;
  if (L->spill < 0 || L->broken || o->len < ox_trace_live_piece) return;
  if (ox_write_all(L->spill, o->data, o->len))
    L->spilled += o->len;
  else
    L->broken = true;
  o->len = 0;
}

static void *live_main(void *arg) {
  OxTraceLive *L = arg;
  OxStep *batch = NULL;
  uint32_t cap_batch = 0;
  for (;;) {
    pthread_mutex_lock(&L->mu);
    while (!L->n_stage && !L->n_stage_refs && !L->done && !L->quit) pthread_cond_wait(&L->cv, &L->mu);
    if (L->quit || (L->done && !L->n_stage && !L->n_stage_refs)) {
      pthread_mutex_unlock(&L->mu);
      break;
    }
    /* take the staged steps (swap arrays) and references */
    OxStep *tmp = batch;
    uint32_t tmp_cap = cap_batch, n = L->n_stage;
    batch = L->stage;
    cap_batch = L->cap_stage;
    L->stage = tmp;
    L->cap_stage = tmp_cap;
    L->n_stage = 0;
    live_grow((void **)&L->refs, &L->cap_refs, L->n_refs + L->n_stage_refs + 2, sizeof *L->refs);
    if (L->n_stage_refs) memcpy(L->refs + L->n_refs + 1, L->stage_refs, (size_t)L->n_stage_refs * sizeof *L->refs);
    L->n_refs += L->n_stage_refs;
    L->n_stage_refs = 0;
    pthread_mutex_unlock(&L->mu);
    L->w.refs = L->refs;
    L->w.n_refs = L->n_refs;
    for (uint32_t i = 0; i < n && !L->broken; i++) {
      /* the comma after a step is written before the next one: the last step is not known yet */
      if (L->n_encoded++) ox_buf_putc(&L->text, ',');
      ox_buf_putc(&L->text, '\n');
      w3_step(&L->w, &batch[i], &L->text);
      /* the step is read: its edit script's memory may be used again (ox_trace_recycle_edits) */
      __atomic_store_n(L->encoded, L->n_encoded, __ATOMIC_RELEASE);
      live_spill(L);
    }
  }
  if (L->gz && !L->quit) live_compress(L, true);
  free(batch);
  return NULL;
}

/* Stops the encoder thread (quit: without encoding what is staged) and waits for it; once: a
 * trace written and then freed comes here twice, and a thread is joined only once. */
static void live_join(OxTraceLive *L, bool quit) {
  if (L->joined) return;
  pthread_mutex_lock(&L->mu);
  if (quit) L->quit = true;
  L->done = true;
  pthread_cond_signal(&L->cv);
  pthread_mutex_unlock(&L->mu);
  pthread_join(L->thread, NULL);
  L->joined = true;
}

static void live_free(OxTraceLive *L) {
  pthread_mutex_destroy(&L->mu);
  pthread_cond_destroy(&L->cv);
  free(L->stage);
  free(L->stage_refs);
  free(L->refs);
  ox_buf_free(&L->text);
  ox_buf_free(&L->ztext);
  if (L->gz) ox_gzip_writer_free(L->gz);
  if (L->spill >= 0) close(L->spill);
  w3_free(&L->w);
  free(L);
}

static void live_stop(OxTraceLive *L) {
  live_join(L, true);
  live_free(L);
}

bool ox_trace_live_start(OxTrace *t, const char *path) {
  if (!t || t->live || !path) return false;
  OxTraceLive *L = ox_xcalloc(1, sizeof *L);
  w3_init(&L->w, t, OX_TRACE_VERSION);
  ox_buf_init(&L->text);
  ox_buf_init(&L->ztext);
  L->spill = ox_scratch_file_beside(path); /* none: the text is held in memory */
  if (ox_gzip_wanted(path) && !(L->gz = ox_gzip_writer_new(1))) {
    live_free(L);
    return false;
  }
  L->encoded = &t->live_encoded;
  L->refs = ox_xcalloc(1, sizeof *L->refs); /* refs[0]: no name (ids are 1-based) */
  L->cap_refs = 1;
  pthread_mutex_init(&L->mu, NULL);
  pthread_cond_init(&L->cv, NULL);
  if (pthread_create(&L->thread, NULL, live_main, L) != 0) {
    live_free(L);
    return false;
  }
  t->live = L;
  t->live_final = live_give;
  t->live_stop = live_stop;
  return true;
}

/* The trace written with what the live writer encoded: the rest handed over, the thread joined,
 * then the header, the encoded steps (in pieces, so a streaming output drains as it goes) and
 * the tables. A gzipped trace is three gzip members (header, steps, tables; readers take
 * concatenated members as one text), the steps' member compressed on the encoder's thread. */
static bool write_live(OxTraceLive *L, const OxTrace *t, OxBuf *out, char *err, size_t errcap) {
  OxBuf part;
  ox_buf_init(&part);
  OxBuf *text = L->gz ? &part : out;
  bool ok = true;
  w3_head(t, L->w.version, text);
  if (L->gz) {
    ok = ox_gzip_compress(part.data, part.len, 1, out, err, errcap);
    part.len = 0;
  }
  /* what went to the scratch file (copied file to file by the writer thread), then the rest */
  if (ok && L->spilled && !ox_buf_append_file(out, L->spill, 0, L->spilled)) {
    snprintf(err, errcap, "cannot read back the trace's scratch file: %s", strerror(errno));
    ok = false;
  }
  const OxBuf *steps = L->gz ? &L->ztext : &L->text;
  for (size_t off = 0; ok && off < steps->len;) {
    size_t n = steps->len - off < OX_BUF_DRAIN_BYTES ? steps->len - off : OX_BUF_DRAIN_BYTES;
    ox_buf_append(out, steps->data + off, n);
    ox_buf_drain(out);
    off += n;
  }
  w3_tail(&L->w, t->n_steps, text);
  if (L->gz && ok) ok = ox_gzip_compress(part.data, part.len, 1, out, err, errcap);
  ox_buf_free(&part);
  return ok;
}

void ox_trace_write_json_version(const OxTrace *t, int version, OxBuf *out) {
  if (version == 2)
    write_v2(t, out);
  else
    write_v3(t, version >= 3 && version <= OX_TRACE_VERSION ? version : OX_TRACE_VERSION, out);
}

void ox_trace_write_json(const OxTrace *t, OxBuf *out) { write_v3(t, OX_TRACE_VERSION, out); }

bool ox_trace_write_file(const OxTrace *t, int version, const char *path, char *err, size_t errcap) {
  /* streamed to the file while it is written (compressed on the writer thread for .gz) */
  OxBuf b;
  ox_buf_init(&b);
  bool gz = ox_gzip_wanted(path);
  version = version ? version : OX_TRACE_VERSION;
  OxTraceLive *L = t->live && t->live_stop == live_stop && version == OX_TRACE_VERSION ? t->live : NULL;
  if (ox_trace_edits_recycled(t)) {
    /* the edit scripts were encoded during the run and their memory used again: only the live
     * writer's own file can be written, once (refused before the writer is touched) */
    const OxTraceLive *W = t->live && t->live_stop == live_stop ? t->live : NULL;
    if (!W || W->done) {
      snprintf(err, errcap, "cannot write the trace %s: it was written once already, and its steps' edits were not kept",
               path);
      return false;
    }
    if (!L || !W->gz != !gz) {
      snprintf(err, errcap,
               "cannot write the trace %s: its steps were encoded during the run as version %d, %s, and their edits "
               "not kept; only that form can be written",
               path, OX_TRACE_VERSION, W->gz ? "gzipped" : "not gzipped");
      return false;
    }
  }
  if (L && !L->done) {
    /* the steps were encoded during the run: the writer is used up (and freed with the trace) */
    live_give(L, t);
    live_join(L, false);
    if (!L->broken && !L->gz == !gz) {
      if (!ox_buf_stream_to(&b, path, err, errcap)) return false;
      bool ok = write_live(L, t, &b, err, errcap) && ox_buf_stream_commit(&b, err, errcap);
      ox_buf_free(&b);
      return ok;
    }
  }
  if (ox_trace_edits_recycled(t)) {
    snprintf(err, errcap, "cannot write the trace %s: its scratch file failed during the run, and the steps' edits were not kept",
             path);
    return false;
  }
  if (!(gz ? ox_buf_stream_to_gzip(&b, path, 1, err, errcap) : ox_buf_stream_to(&b, path, err, errcap))) return false;
  ox_trace_write_json_version(t, version, &b);
  bool ok = ox_buf_stream_commit(&b, err, errcap);
  ox_buf_free(&b);
  return ok;
}

/* ---- reader */

static const char *opt_string(Rd *r, OxTrace *t, json_object *o, const char *key) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) return NULL;
  ox_json_path_push_key(r, key);
  const char *s = json_object_is_type(v, json_type_string) ? ox_trace_intern(t, json_object_get_string(v)) : NULL;
  if (!s) ERR(r, "%s must be a string, not %s", key, ox_json_jtype_name(v));
  ox_json_path_pop(r);
  return s;
}

static uint32_t opt_u32(Rd *r, json_object *o, const char *key) {
  json_object *v;
  int64_t x = 0;
  if (!json_object_object_get_ex(o, key, &v)) return 0;
  ox_json_path_push_key(r, key);
  if (!ox_json_get_range(r, v, key, 0, UINT32_MAX, &x)) x = 0;
  ox_json_path_pop(r);
  return (uint32_t)x;
}

static double opt_num(json_object *o, const char *key) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v)) return 0;
  if (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)) return json_object_get_double(v);
  return NAN;
}

/* What a step's node references are read against: version 3 refers to nodes by their index in
 * the top-level "names" and to edit metas by their index in "metas". */
typedef struct TR {
  Rd *r;
  OxTrace *t;
  int version;
  const char **names; /* interned in t's pool */
  uint32_t n_names;
  OxMeta *metas;
  bool *meta_ok;
  uint32_t n_metas;
  uint8_t *target_ops; /* targets[i] = (target_ops[i], target_names[i]) */
  const char **target_names;
  uint32_t n_targets;
  const char **strings; /* version 4: the reason arguments (interned in t's pool) */
  uint32_t n_strings;
  const char **rules;   /* version 5: rules[3 * i + 0, 1, 2] = (phase, pass, rule) of "rules"[i] */
  uint32_t n_rules;
  const char *getitem;  /* version 5: "operator.getitem", interned (a getitems item's target) */
  /* version 5: how many more node references and edits ranges and getitems items may stand for
   * (as many as the file has bytes: what optimus writes stays below) */
  uint64_t expand_left;
} TR;


/* A node reference (an element of matched, the anchor ...): a name (versions 1 and 2) or an
 * index into names (3); NULL after an error against the current path. */
static const char *node_ref(TR *x, json_object *v) {
  Rd *r = x->r;
  if (x->version < 3) {
    if (json_object_is_type(v, json_type_string)) return ox_trace_intern(x->t, json_object_get_string(v));
    ERR(r, "node names must be strings, not %s", ox_json_jtype_name(v));
    return NULL;
  }
  if (!json_object_is_type(v, json_type_int)) {
    ERR(r, "a node reference must be an index into \"names\", not %s", ox_json_jtype_name(v));
    return NULL;
  }
  int64_t i = json_object_get_int64(v);
  if (i < 0 || i >= x->n_names) {
    ERR(r, "node index %lld is out of range (\"names\" has %u entries)", (long long)i, x->n_names);
    return NULL;
  }
  return x->names[i];
}

/* An optional node reference member (absent or null: NULL). */
static const char *opt_node(TR *x, json_object *o, const char *key) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) return NULL;
  ox_json_path_push_key(x->r, key);
  const char *s = node_ref(x, v);
  ox_json_path_pop(x->r);
  return s;
}

/* Version 5: an item of an index list, an index or a range [first, last] (first < last), as the
 * span of names it stands for, [*lo, *hi]; false after an error (reported, at the current path). */
static bool list_span(TR *x, json_object *v, uint32_t *lo, uint32_t *hi) {
  if (x->version >= 5 && json_object_is_type(v, json_type_array))
    return ox_json_read_range(x->r, v, x->n_names, &x->expand_left, lo, hi);
  if (!node_ref(x, v)) return false;
  *lo = *hi = (uint32_t)json_object_get_int64(v);
  return true;
}

/* Names being read (an index list, version 5 ranges expanded). */
typedef struct NameList {
  const char **v;
  size_t n, cap;
} NameList;

static void names_push(NameList *l, const char *s) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->v = ox_xrealloc(l->v, l->cap * sizeof *l->v);
  }
  l->v[l->n++] = s;
}

/* The items a[from ...] of an index list appended to l (errors reported at their paths). */
static void read_list_items(TR *x, json_object *a, size_t from, NameList *l) {
  size_t len = json_object_array_length(a);
  for (size_t i = from; i < len; i++) {
    uint32_t lo, hi;
    ox_json_path_push_idx(x->r, i);
    if (list_span(x, json_object_array_get_idx(a, i), &lo, &hi))
      for (uint64_t k = lo; k <= hi; k++) names_push(l, x->names[k]);
    ox_json_path_pop(x->r);
  }
}

static const char **read_names(TR *x, json_object *o, const char *key, uint32_t *n) {
  Rd *r = x->r;
  json_object *v;
  *n = 0;
  if (!json_object_object_get_ex(o, key, &v)) return NULL;
  ox_json_path_push_key(r, key);
  const char **out = NULL;
  if (ox_json_expect_type(r, v, json_type_array, key)) {
    size_t len = json_object_array_length(v);
    if (x->version >= 5) {
      NameList l = {0};
      read_list_items(x, v, 0, &l);
      len = l.n < UINT32_MAX ? l.n : UINT32_MAX - 1;
      out = ox_graph_alloc(x->t->pool, (len + 1) * sizeof *out);
      if (len) memcpy(out, l.v, len * sizeof *out);
      *n = (uint32_t)len;
      free(l.v);
    } else {
      out = ox_graph_alloc(x->t->pool, (len + 1) * sizeof *out);
      for (size_t i = 0; i < len; i++) {
        ox_json_path_push_idx(r, i);
        const char *s = node_ref(x, json_object_array_get_idx(v, i));
        if (s) out[(*n)++] = s;
        ox_json_path_pop(r);
      }
    }
  }
  ox_json_path_pop(r);
  return out;
}

static void read_edit(Rd *r, OxTrace *t, json_object *o, OxTraceEdit *e) {
  memset(e, 0, sizeof *e);
  if (!ox_json_expect_type(r, o, json_type_object, "an edit")) return;
  const char *kind = opt_string(r, t, o, "kind");
  if (!kind) {
    ERR(r, "an edit needs a \"kind\"");
    return;
  }
  int k = -1;
  if (strcmp(kind, "toposort") == 0) {
    e->kind = OX_TEDIT_MOVE;
    return;
  }
  for (int i = 0; i < N_EDIT_KINDS; i++)
    if (strcmp(kind, edit_kind_names[i]) == 0) k = i;
  if (k < 0) {
    ERR(r, "unknown edit kind '%.40s'", kind);
    return;
  }
  e->kind = (uint8_t)k;
  e->name = opt_string(r, t, o, "name");
  if (!e->name) ERR(r, "a %s edit needs a \"name\"", kind);
  e->after = opt_string(r, t, o, "after");
  e->new_name = opt_string(r, t, o, "to");
  e->target = opt_string(r, t, o, "target");
  if (k == OX_TEDIT_REPLACE) {
    e->from = opt_string(r, t, o, "old");
    e->to = opt_string(r, t, o, "new");
    if (!e->from || !e->to) ERR(r, "a replace_input edit needs \"old\" and \"new\" node names");
  }
  const char *op = opt_string(r, t, o, "op");
  if (k == OX_TEDIT_ADD) {
    OxOp opv;
    if (!op || !ox_op_from_name(op, strlen(op), &opv))
      ERR(r, "an add edit needs a valid \"op\"");
    else
      e->op = (uint8_t)opv;
    if (!e->target) ERR(r, "an add edit needs a \"target\"");
  }
  Ctx c = {t->pool, r, true, NULL, 0, false, NULL};
  json_object *v;
  /* only the kinds that carry args / meta get data (and read them) */
  if (k != OX_TEDIT_ADD && k != OX_TEDIT_ARGS && k != OX_TEDIT_META) return;
  OxTraceEditData *d = ox_trace_edit_data(t, e);
  d->args = ox_graph_value_seq(t->pool, OX_V_TUPLE, NULL, 0);
  d->kwargs = ox_graph_value_dict(t->pool, NULL, NULL, 0);
  if (k != OX_TEDIT_META && json_object_object_get_ex(o, "args", &v)) {
    ox_json_path_push_key(r, "args");
    if (ox_json_expect_type(r, v, json_type_array, "args")) ox_json_read_items(&c, v, OX_V_TUPLE, &d->args);
    ox_json_path_pop(r);
  }
  if (k != OX_TEDIT_META && json_object_object_get_ex(o, "kwargs", &v)) {
    ox_json_path_push_key(r, "kwargs");
    OxValue kw;
    if (ox_json_read_value(&c, v, &kw)) {
      if (kw.kind == OX_V_DICT)
        d->kwargs = kw;
      else
        ERR(r, "kwargs must be an object");
    }
    ox_json_path_pop(r);
  }
  if (k != OX_TEDIT_ARGS && json_object_object_get_ex(o, "meta", &v)) {
    ox_json_path_push_key(r, "meta");
    if (ox_json_read_meta(r, t->pool, v, &d->meta)) e->has_meta = true;
    ox_json_path_pop(r);
  }
  if (k == OX_TEDIT_META && !e->has_meta) ERR(r, "a meta edit needs a \"meta\"");
}

/* Version 3 edits are arrays (docs/trace-format.md):
 *   ["add", name, after, target, args(, meta(, kwargs))]   target, meta: indices; meta null = none
 *   ["erase", name]  ["args", name, args(, kwargs)]  ["move", name, after]  ["toposort"]
 *   ["meta", name, meta]  ["rename", name, to]  ["replace_input", name, old, new] */
static json_object *edit_item(json_object *a, size_t i) {
  return i < json_object_array_length(a) ? json_object_array_get_idx(a, i) : NULL;
}

/* The node reference at a[i] (null allowed when nullable); NULL (after an error) otherwise. */
static const char *edit_node(TR *x, json_object *a, size_t i, bool nullable) {
  json_object *v = edit_item(a, i);
  if (nullable && json_object_is_type(v, json_type_null)) return NULL;
  ox_json_path_push_idx(x->r, i);
  const char *s = node_ref(x, v);
  ox_json_path_pop(x->r);
  return s;
}

static const char *edit_string(TR *x, json_object *a, size_t i, const char *what) {
  json_object *v = edit_item(a, i);
  ox_json_path_push_idx(x->r, i);
  const char *s = NULL;
  if (json_object_is_type(v, json_type_string))
    s = ox_trace_intern(x->t, json_object_get_string(v));
  else
    ERR(x->r, "%s must be a string, not %s", what, ox_json_jtype_name(v));
  ox_json_path_pop(x->r);
  return s;
}

static bool edit_meta(TR *x, json_object *a, size_t i, OxMeta *m) {
  json_object *v = edit_item(a, i);
  ox_json_path_push_idx(x->r, i);
  int64_t k = -1;
  if (!json_object_is_type(v, json_type_int))
    ERR(x->r, "a meta must be an index into \"metas\", not %s", ox_json_jtype_name(v));
  else if ((k = json_object_get_int64(v)) < 0 || k >= x->n_metas)
    ERR(x->r, "meta index %lld is out of range (\"metas\" has %u entries)", (long long)k, x->n_metas);
  else
    *m = x->metas[k];
  ox_json_path_pop(x->r);
  return k >= 0 && k < x->n_metas && x->meta_ok[k];
}

/* One edit of version 3, or the first of a version 4 run (read_edit4), from a[0, n): its kind is
 * a[0]; o > 0 reads an add whose fields start at a[1 + o] (a replace edit's). */
static void read_edit3(TR *x, json_object *a, size_t n, size_t o, OxTraceEdit *e) {
  /* fields by kind: how many items at least and at most (with the kind) */
  static const uint8_t min_n[N_EDIT_KINDS] = {5, 2, 3, 3, 3, 3, 4}, max_n[N_EDIT_KINDS] = {7, 2, 4, 3, 3, 3, 4};
  Rd *r = x->r;
  OxTrace *t = x->t;
  memset(e, 0, sizeof *e);
  if (!ox_json_expect_type(r, a, json_type_array, "an edit")) return;
  json_object *kv = edit_item(a, 0);
  const char *kind = o ? "add" : json_object_is_type(kv, json_type_string) ? json_object_get_string(kv) : NULL;
  if (!kind) {
    ERR(r, "an edit must start with its kind (a string)");
    return;
  }
  if (strcmp(kind, "toposort") == 0) {
    if (n != 1) ERR(r, "a toposort edit has no fields, not %zu", n - 1);
    e->kind = OX_TEDIT_MOVE;
    return;
  }
  int k = -1;
  for (int i = 0; i < N_EDIT_KINDS; i++)
    if (strcmp(kind, edit_kind_names[i]) == 0) k = i;
  if (k < 0) {
    ERR(r, "unknown edit kind '%.40s'", kind);
    return;
  }
  if (n - o < min_n[k] || n - o > max_n[k]) {
    if (min_n[k] == max_n[k])
      ERR(r, "%s edit of %zu items (it has %u)", kind, n, (unsigned)min_n[k]);
    else
      ERR(r, "%s edit of %zu items (it has %u to %u)", kind, n, (unsigned)min_n[k], (unsigned)max_n[k]);
    return;
  }
  e->kind = (uint8_t)k;
  e->name = edit_node(x, a, 1 + o, false);
  switch ((OxTraceEditKind)k) {
  case OX_TEDIT_ERASE: return;
  case OX_TEDIT_MOVE: e->after = edit_node(x, a, 2, true); return;
  case OX_TEDIT_RENAME: e->new_name = edit_string(x, a, 2, "a new name"); return;
  case OX_TEDIT_REPLACE:
    e->from = edit_node(x, a, 2, false);
    e->to = edit_node(x, a, 3, false);
    return;
  case OX_TEDIT_ADD: {
    e->after = edit_node(x, a, 2 + o, true);
    json_object *v = edit_item(a, 3 + o);
    int64_t ti;
    ox_json_path_push_idx(r, 3 + o);
    if (!json_object_is_type(v, json_type_int)) {
      ERR(r, "a target must be an index into \"targets\", not %s", ox_json_jtype_name(v));
    } else if ((ti = json_object_get_int64(v)) < 0 || ti >= x->n_targets) {
      ERR(r, "target index %lld is out of range (\"targets\" has %u entries)", (long long)ti, x->n_targets);
    } else {
      e->op = x->target_ops[ti];
      e->target = x->target_names[ti];
    }
    ox_json_path_pop(r);
    break;
  }
  case OX_TEDIT_ARGS:
  case OX_TEDIT_META: break;
  }
  OxTraceEditData *d = ox_trace_edit_data(t, e);
  d->args = ox_graph_value_seq(t->pool, OX_V_TUPLE, NULL, 0);
  d->kwargs = ox_graph_value_dict(t->pool, NULL, NULL, 0);
  if (k == OX_TEDIT_META) {
    e->has_meta = edit_meta(x, a, 2, &d->meta);
    return;
  }
  Ctx c = {t->pool, r, true, (const char *const *)x->names, x->n_names, x->version >= 4,
           x->version >= 5 ? &x->expand_left : NULL};
  size_t ai = k == OX_TEDIT_ADD ? 4 + o : 2;   /* args */
  size_t ki = k == OX_TEDIT_ADD ? 6 + o : 3;   /* kwargs */
  json_object *v = edit_item(a, ai);
  ox_json_path_push_idx(r, ai);
  if (ox_json_expect_type(r, v, json_type_array, "args")) ox_json_read_items(&c, v, OX_V_TUPLE, &d->args);
  ox_json_path_pop(r);
  if (k == OX_TEDIT_ADD && n > 5 + o && !json_object_is_type(edit_item(a, 5 + o), json_type_null))
    e->has_meta = edit_meta(x, a, 5 + o, &d->meta);
  if (n > ki) {
    v = edit_item(a, ki);
    ox_json_path_push_idx(r, ki);
    OxValue kw;
    if (ox_json_read_value(&c, v, &kw)) {
      if (kw.kind == OX_V_DICT)
        d->kwargs = kw;
      else
        ERR(r, "kwargs must be a dict ({\"dict\": [[key, value], ...]})");
    }
    ox_json_path_pop(r);
  }
}

/* Edits being read (version 4: one item of "edits" may stand for several). */
typedef struct EditList {
  OxTraceEdit *e;
  size_t n, cap;
} EditList;

static OxTraceEdit *edit_push(EditList *l) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->e = ox_xrealloc(l->e, l->cap * sizeof *l->e);
  }
  OxTraceEdit *e = &l->e[l->n++];
  memset(e, 0, sizeof *e);
  return e;
}

/* Version 5: the add of getitem(src, k) named name, right after `after`, with metas[meta] (meta
 * -1: none): one unit of a getitems item. */
static void push_getitem(TR *x, EditList *l, const char *src, const char *name, const char *after, int64_t k,
                         int64_t meta) {
  OxGraph *pool = x->t->pool;
  OxTraceEdit *e = edit_push(l);
  e->kind = OX_TEDIT_ADD;
  e->name = name;
  e->after = after;
  e->op = OX_OP_CALL_FUNCTION;
  if (!x->getitem) x->getitem = ox_trace_intern(x->t, "operator.getitem");
  e->target = x->getitem;
  OxTraceEditData *d = ox_trace_edit_data(x->t, e);
  OxValue items[2] = {ox_value_node(ox_graph_name_ref_interned(pool, src)), ox_value_int(k)};
  d->args = ox_graph_value_seq(pool, OX_V_TUPLE, items, 2);
  d->kwargs = ox_graph_value_dict(pool, NULL, NULL, 0);
  if (meta >= 0) {
    d->meta = x->metas[meta];
    e->has_meta = x->meta_ok[meta];
  }
}

/* ["getitems", src, first, k, meta, count | [entry, ...]] (version 5; w5_getitems). */
static void read_getitems(TR *x, json_object *a, size_t n, EditList *l) {
  Rd *r = x->r;
  if (n != 6) {
    ERR(r, "getitems edit of %zu items (it has 6)", n);
    return;
  }
  const char *src = edit_node(x, a, 1, false);
  json_object *fv = edit_item(a, 2), *kv = edit_item(a, 3), *mv = edit_item(a, 4), *bv = edit_item(a, 5);
  int64_t first = -1, k0 = 0, count = 0;
  bool ok = src != NULL;
  ox_json_path_push_idx(r, 2);
  if (!json_object_is_type(fv, json_type_int) || (first = json_object_get_int64(fv)) < 0) {
    ERR(r, "a getitems edit's first name must be an index into \"names\", not %s", ox_json_jtype_name(fv));
    ok = false;
  }
  ox_json_path_pop(r);
  ox_json_path_push_idx(r, 3);
  if (!json_object_is_type(kv, json_type_int)) {
    ERR(r, "a getitems edit's first index must be an integer, not %s", ox_json_jtype_name(kv));
    ok = false;
  } else {
    k0 = json_object_get_int64(kv);
  }
  ox_json_path_pop(r);
  ox_json_path_push_idx(r, 5);
  if (json_object_is_type(bv, json_type_int))
    count = json_object_get_int64(bv);
  else if (json_object_is_type(bv, json_type_array))
    count = (int64_t)json_object_array_length(bv);
  if (count < 1) {
    ERR(r, "a getitems edit ends with a count (1 or more) or a non-empty list of entries, not %s",
        json_object_is_type(bv, json_type_int) ? "a count below 1" : ox_json_jtype_name(bv));
    ok = false;
  }
  ox_json_path_pop(r);
  if (!ok) return;
  ox_json_path_push_idx(r, 2);
  if (first >= x->n_names || count > (int64_t)x->n_names - first) {
    ERR(r, "getitems names %lld to %lld are out of range (\"names\" has %u entries)", (long long)first,
        (long long)(first + count - 1), x->n_names);
    ok = false;
  }
  ox_json_path_pop(r);
  ox_json_path_push_idx(r, 3);
  if (ok && k0 > INT64_MAX - (count - 1)) {
    ERR(r, "getitems indices %lld and on overflow", (long long)k0);
    ok = false;
  }
  ox_json_path_pop(r);
  if (ok && (uint64_t)count > x->expand_left) {
    ERR(r, "%s", ox_json_expand_msg);
    x->expand_left = 0;
    ok = false;
  }
  /* the metas: null, one index for all, or a list of one (index or null) each */
  bool each = json_object_is_type(mv, json_type_array);
  ox_json_path_push_idx(r, 4);
  if (each && (int64_t)json_object_array_length(mv) != count) {
    ERR(r, "a getitems edit's metas: %zu for %lld getitems", json_object_array_length(mv), (long long)count);
    ok = false;
  }
  for (int64_t j = 0; ok && j < (each ? count : 1); j++) {
    json_object *m = each ? json_object_array_get_idx(mv, (size_t)j) : mv;
    int64_t mi;
    if (each) ox_json_path_push_idx(r, (size_t)j);
    if (!json_object_is_type(m, json_type_null) &&
        (!json_object_is_type(m, json_type_int) || (mi = json_object_get_int64(m)) < 0 || mi >= x->n_metas)) {
      ERR(r, "a meta must be null or an index into \"metas\" (%u entries)", x->n_metas);
      ok = false;
    }
    if (each) ox_json_path_pop(r);
  }
  ox_json_path_pop(r);
  if (!ok) return;
  x->expand_left -= (uint64_t)count;
  for (int64_t j = 0; j < count; j++) {
    json_object *m = each ? json_object_array_get_idx(mv, (size_t)j) : mv;
    const char *name = x->names[first + j];
    push_getitem(x, l, src, name, j ? x->names[first + j - 1] : src, k0 + j,
                 json_object_is_type(m, json_type_int) ? json_object_get_int64(m) : -1);
    json_object *en = json_object_is_type(bv, json_type_array) ? json_object_array_get_idx(bv, (size_t)j) : NULL;
    if (!en || json_object_is_type(en, json_type_null)) continue;
    /* [old, [users]]: the add replaces old */
    ox_json_path_push_idx(r, 5);
    ox_json_path_push_idx(r, (size_t)j);
    json_object *users = json_object_is_type(en, json_type_array) && json_object_array_length(en) == 2
                             ? json_object_array_get_idx(en, 1) : NULL;
    if (!json_object_is_type(users, json_type_array) || !json_object_array_length(users)) {
      ERR(r, "a getitems entry must be null or [old, [users]] (a non-empty list of users)");
    } else {
      const char *old = edit_node(x, en, 0, false);
      NameList u = {0};
      ox_json_path_push_idx(r, 1);
      read_list_items(x, users, 0, &u);
      ox_json_path_pop(r);
      for (size_t i = 0; old && i < u.n; i++)
        *edit_push(l) = (OxTraceEdit){.kind = OX_TEDIT_REPLACE, .name = u.v[i], .from = old, .to = name};
      if (old) *edit_push(l) = (OxTraceEdit){.kind = OX_TEDIT_ERASE, .name = old};
      free(u.v);
    }
    ox_json_path_pop(r);
    ox_json_path_pop(r);
  }
}

/* One item of "edits": an edit, or (version 4) a run of them (w4_edits). */
static void read_edit4(TR *x, json_object *a, EditList *l) {
  Rd *r = x->r;
  size_t n = json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
  json_object *kv = n ? json_object_array_get_idx(a, 0) : NULL;
  const char *kind = x->version >= 4 && json_object_is_type(kv, json_type_string) ? json_object_get_string(kv) : "";
  if (x->version >= 5 && strcmp(kind, "getitems") == 0) {
    read_getitems(x, a, n, l);
    return;
  }
  if (strcmp(kind, "replace") == 0) {
    /* ["replace", old, [users], name, after, target, args(, meta(, kwargs))] */
    if (n < 7 || n > 9) {
      ERR(r, "replace edit of %zu items (it has 7 to 9)", n);
      return;
    }
    const char *old = edit_node(x, a, 1, false);
    json_object *users = json_object_array_get_idx(a, 2);
    ox_json_path_push_idx(r, 2);
    NameList u = {0};
    if (!json_object_is_type(users, json_type_array) || json_object_array_length(users) == 0)
      ERR(r, "a replace edit's users must be a non-empty array of name indices");
    else
      read_list_items(x, users, 0, &u);
    ox_json_path_pop(r);
    size_t first = l->n;
    OxTraceEdit *add = edit_push(l);
    read_edit3(x, a, n, 2, add);
    const char *name = l->e[first].name;
    for (size_t i = 0; i < u.n; i++)
      *edit_push(l) = (OxTraceEdit){.kind = OX_TEDIT_REPLACE, .name = u.v[i], .from = old, .to = name};
    *edit_push(l) = (OxTraceEdit){.kind = OX_TEDIT_ERASE, .name = old};
    free(u.v);
    return;
  }
  /* runs: ["erase", a, b ...], ["move", a, after, b ...], ["replace_input", u, old, new, v ...] */
  size_t base = strcmp(kind, "erase") == 0 ? 2 : strcmp(kind, "move") == 0 ? 3 : strcmp(kind, "replace_input") == 0 ? 4 : 0;
  size_t first = l->n;
  read_edit3(x, a, base && n > base ? base : n, 0, edit_push(l));
  if (!base || n <= base) return;
  NameList tail = {0};
  read_list_items(x, a, base, &tail);
  for (size_t i = 0; i < tail.n; i++) {
    const OxTraceEdit *p = &l->e[l->n - 1], *f = &l->e[first];
    OxTraceEdit e = {.kind = f->kind, .name = tail.v[i]};
    if (f->kind == OX_TEDIT_MOVE) e.after = p->name;
    if (f->kind == OX_TEDIT_REPLACE) {
      e.from = f->from;
      e.to = f->to;
    }
    *edit_push(l) = e;
  }
  free(tail.v);
}

/* Version 4 leaves a step's provenance out when it is the (old, name) pairs of its replace runs. */
static void provenance_from_replaces(OxTrace *t, OxStep *s) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < s->n_edits;) {
    uint32_t end = replace_run(s->edits, s->n_edits, i);
    c += end > i;
    i = end > i ? end : i + 1;
  }
  s->n_prov = 0;
  if (!c) return;
  s->prov_old = ox_graph_alloc(t->pool, (c + 1) * sizeof(char *));
  s->prov_new = ox_graph_alloc(t->pool, (c + 1) * sizeof(char *));
  for (uint32_t i = 0; i < s->n_edits;) {
    uint32_t end = replace_run(s->edits, s->n_edits, i);
    if (end > i) {
      s->prov_old[s->n_prov] = s->edits[i + 1].from;
      s->prov_new[s->n_prov++] = s->edits[i].name;
    }
    i = end > i ? end : i + 1;
  }
}

/* A "cost" object (put_cost); every member optional, a missing one unknown. */
/* The "passes" table (the per-pass profile; informational, so a malformed one is a warning and
 * is left out, the rest of the trace read as usual). */
enum { MAX_PASS_STATS = 4096 };
static void read_pass_stats(Rd *r, OxTrace *t, json_object *v) {
  ox_json_path_push_key(r, "passes");
  const char *why = NULL;
  size_t bad = SIZE_MAX, n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
  if (!json_object_is_type(v, json_type_array)) why = "must be an array";
  /* a pipeline has a few dozen passes; entries are merged by a linear search, so a table of
   * millions would take hours: such a table is not believed */
  char too_many[80];
  if (n > MAX_PASS_STATS) {
    snprintf(too_many, sizeof too_many, "%zu entries, more than the %d a table may have", n, (int)MAX_PASS_STATS);
    why = too_many;
    n = 0;
  }
  static const char *const counts[4] = {"runs", "applied", "rejected", "check_failed"};
  static const char *const count_why[4] = {"\"runs\" must be a count", "\"applied\" must be a count",
                                           "\"rejected\" must be a count", "\"check_failed\" must be a count"};
  for (size_t i = 0; i < n && !why; i++) {
    json_object *e = json_object_array_get_idx(v, i), *x;
    bad = i;
    if (!json_object_is_type(e, json_type_object)) why = "must be an object";
    else if (!json_object_object_get_ex(e, "pass", &x) || !json_object_is_type(x, json_type_string) ||
             !json_object_get_string_len(x))
      why = "needs \"pass\", a non-empty string";
    else if (json_object_object_get_ex(e, "phase", &x) &&
             (!json_object_is_type(x, json_type_string) ||
              (strcmp(json_object_get_string(x), "pre") != 0 && strcmp(json_object_get_string(x), "post") != 0)))
      why = "\"phase\" must be \"pre\" or \"post\"";
    else if (json_object_object_get_ex(e, "seconds", &x) && !json_object_is_type(x, json_type_null) &&
             !json_object_is_type(x, json_type_double) && !json_object_is_type(x, json_type_int))
      why = "\"seconds\" must be a number";
    for (int k = 0; k < 4 && !why; k++)
      if (json_object_object_get_ex(e, counts[k], &x) &&
          (!json_object_is_type(x, json_type_int) || json_object_get_int64(x) < 0 ||
           json_object_get_int64(x) > (int64_t)UINT32_MAX))
        why = count_why[k];
  }
  if (why) {
    bool at_item = bad != SIZE_MAX; /* an entry's fault, else the table's */
    if (at_item) ox_json_path_push_idx(r, bad);
    ox_json_report(r, OX_SEV_WARNING, "%s; the per-pass table is left out", why);
    if (at_item) ox_json_path_pop(r);
    ox_json_path_pop(r);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    json_object *e = json_object_array_get_idx(v, i), *x;
    uint32_t c[4] = {1, 0, 0, 0};
    for (int k = 0; k < 4; k++)
      if (json_object_object_get_ex(e, counts[k], &x)) c[k] = (uint32_t)json_object_get_int64(x);
    json_object_object_get_ex(e, "pass", &x);
    const char *pass = json_object_get_string(x);
    const char *phase = json_object_object_get_ex(e, "phase", &x) ? json_object_get_string(x) : "pre";
    double sec = json_object_object_get_ex(e, "seconds", &x) && !json_object_is_type(x, json_type_null)
                     ? json_object_get_double(x)
                     : 0;
    ox_trace_pass_stat_add(t, pass, phase, sec, c[0], c[1], c[2], c[3]);
  }
  ox_json_path_pop(r);
}

static void read_cost(Rd *r, json_object *o, OxCostPair *p) {
  static const char *const keys[3] = {"launches", "bytes", "flops"};
  static const unsigned bits[3] = {OX_COST_LAUNCHES, OX_COST_BYTES, OX_COST_FLOPS};
  memset(p, 0, sizeof *p);
  ox_json_path_push_key(r, "cost");
  if (!ox_json_expect_type(r, o, json_type_object, "cost")) {
    ox_json_path_pop(r);
    return;
  }
  p->set = true;
  OxCost *x[2] = {&p->before, &p->after};
  for (int k = 0; k < 3; k++) {
    json_object *v;
    if (!json_object_object_get_ex(o, keys[k], &v)) {
      x[0]->unknown |= (uint8_t)bits[k];
      x[1]->unknown |= (uint8_t)bits[k];
      continue;
    }
    ox_json_path_push_key(r, keys[k]);
    if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) != 2) {
      ERR(r, "%s must be [before, after]", keys[k]);
    } else {
      for (int i = 0; i < 2; i++) {
        json_object *e = json_object_array_get_idx(v, i);
        uint64_t n = 0;
        if (!e || json_object_is_type(e, json_type_null)) {
          x[i]->unknown |= (uint8_t)bits[k];
          continue;
        }
        if (!json_object_is_type(e, json_type_int) || json_object_get_int64(e) < 0) {
          ox_json_path_push_idx(r, (size_t)i);
          ERR(r, "a cost must be a count (an integer >= 0) or null, not %s", ox_json_jtype_name(e));
          ox_json_path_pop(r);
          continue;
        }
        n = json_object_get_uint64(e);
        if (k == 0) x[i]->launches = n;
        else if (k == 1) x[i]->bytes = n;
        else x[i]->flops = n;
      }
    }
    ox_json_path_pop(r);
  }
  ox_json_path_pop(r);
}

/* The names of s's edits of kind k, in order (NULL when there are none). */
static const char **edit_names(OxTrace *t, const OxStep *s, OxTraceEditKind k, uint32_t *n) {
  uint32_t c = 0;
  *n = 0;
  for (uint32_t i = 0; i < s->n_edits; i++) c += s->edits[i].kind == k && s->edits[i].name;
  if (!c) return NULL;
  const char **out = ox_graph_alloc(t->pool, (c + 1) * sizeof *out);
  for (uint32_t i = 0; i < s->n_edits; i++)
    if (s->edits[i].kind == k && s->edits[i].name) out[(*n)++] = s->edits[i].name;
  return out;
}

/* Version 5: o's member key, an index into the table of n entries named table (what: the
 * member, for messages); -1 when it is absent or null, or after an error (reported). */
static int64_t opt_index(TR *x, json_object *o, const char *key, const char *what, const char *table, uint32_t n) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) return -1;
  int64_t k = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
  ox_json_path_push_key(x->r, key);
  if (!json_object_is_type(v, json_type_int)) {
    ERR(x->r, "%s must be an index into \"%s\", not %s", what, table, ox_json_jtype_name(v));
  } else if (k < 0 || k >= n) {
    /* "rules" -> "rule index ..." */
    ERR(x->r, "%.*s index %lld is out of range (\"%s\" has %u entries)", (int)strlen(table) - 1, table, (long long)k,
        table, n);
    k = -1;
  }
  ox_json_path_pop(x->r);
  return k;
}

static void read_step(TR *x, json_object *o) {
  Rd *r = x->r;
  OxTrace *t = x->t;
  if (!ox_json_expect_type(r, o, json_type_object, "a step")) return;
  const char *kind = opt_string(r, t, o, "kind");
  int k = -1;
  for (int i = 0; kind && i < 3; i++)
    if (strcmp(kind, step_kind_names[i]) == 0) k = i;
  if (k < 0) {
    ERR(r, "a step needs \"kind\": applied, rejected or check_failed");
    return;
  }
  OxStep *s = ox_trace_add_step(t, (OxStepKind)k);
  json_object *v;
  s->applied_index = opt_u32(r, o, "applied_index");
  if (s->applied_index > t->n_graph_steps) t->n_graph_steps = s->applied_index;
  if (x->version < 5) {
    s->phase = opt_string(r, t, o, "phase");
    s->pass = opt_string(r, t, o, "pass");
    s->rule = opt_string(r, t, o, "rule");
  } else {
    int64_t k = opt_index(x, o, "rule", "a step's rule", "rules", x->n_rules);
    if (k >= 0) {
      s->phase = x->rules[3 * k];
      s->pass = x->rules[3 * k + 1];
      s->rule = x->rules[3 * k + 2];
    }
  }
  s->rule_file = opt_string(r, t, o, "rule_file");
  s->rule_line = opt_u32(r, o, "rule_line");
  s->anchor = x->version < 3 ? opt_string(r, t, o, "anchor") : opt_node(x, o, "anchor");
  s->key = opt_string(r, t, o, "key");
  s->options = opt_string(r, t, o, "options");
  s->matched = read_names(x, o, "matched", &s->n_matched);
  s->removed = read_names(x, o, "removed", &s->n_removed);
  s->added = read_names(x, o, "added", &s->n_added);
  s->scaffold = read_names(x, o, "scaffolding", &s->n_scaffold);
  s->seconds = opt_num(o, "seconds");
  if (json_object_object_get_ex(o, "cost", &v)) read_cost(r, v, &s->cost);
  if (json_object_object_get_ex(o, "provenance", &v)) {
    ox_json_path_push_key(r, "provenance");
    if (ox_json_expect_type(r, v, json_type_array, "provenance")) {
      size_t n = json_object_array_length(v);
      s->prov_old = ox_graph_alloc(t->pool, (n + 1) * sizeof(char *));
      s->prov_new = ox_graph_alloc(t->pool, (n + 1) * sizeof(char *));
      for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(v, i);
        ox_json_path_push_idx(r, i);
        if (json_object_is_type(p, json_type_array) && json_object_array_length(p) == 2) {
          const char *po = node_ref(x, json_object_array_get_idx(p, 0));
          const char *pn = po ? node_ref(x, json_object_array_get_idx(p, 1)) : NULL;
          if (pn) {
            s->prov_old[s->n_prov] = po;
            s->prov_new[s->n_prov++] = pn;
          }
        } else {
          ERR(r, "a provenance entry must be [old %s, new %s]", x->version < 3 ? "name" : "index",
              x->version < 3 ? "name" : "index");
        }
        ox_json_path_pop(r);
      }
    }
    ox_json_path_pop(r);
  }
  if (json_object_object_get_ex(o, "reason", &v)) {
    ox_json_path_push_key(r, "reason");
    if (ox_json_expect_type(r, v, json_type_object, "reason")) {
      const char *code = opt_string(r, t, v, "code");
      OxReasonCode rc;
      if (!code || !ox_reason_code_from_name(code, &rc)) {
        ERR(r, "unknown reason code '%.40s'", code ? code : "");
      } else {
        s->reason.code = (uint16_t)rc;
        json_object *args, *nodes = NULL;
        json_object_object_get_ex(v, "nodes", &nodes);
        if (json_object_object_get_ex(v, "args", &args) && json_object_is_type(args, json_type_array)) {
          size_t n = json_object_array_length(args);
          if (n > OX_REASON_MAX_ARGS) n = OX_REASON_MAX_ARGS;
          for (size_t i = 0; i < n; i++) {
            json_object *a = json_object_array_get_idx(args, i);
            if (x->version >= 4) { /* an index into "strings" */
              int64_t k = json_object_is_type(a, json_type_int) ? json_object_get_int64(a) : -1;
              ox_json_path_push_key(r, "args");
              ox_json_path_push_idx(r, i);
              if (!json_object_is_type(a, json_type_int))
                ERR(r, "a reason argument must be an index into \"strings\", not %s", ox_json_jtype_name(a));
              else if (k < 0 || k >= x->n_strings)
                ERR(r, "string index %lld is out of range (\"strings\" has %u entries)", (long long)k, x->n_strings);
              ox_json_path_pop(r);
              ox_json_path_pop(r);
              s->reason.args[i] = k >= 0 && k < x->n_strings ? x->strings[k] : ox_trace_intern(t, "");
            } else {
              s->reason.args[i] = ox_trace_intern(t, json_object_is_type(a, json_type_string) ? json_object_get_string(a) : "");
            }
            json_object *isn = nodes && json_object_is_type(nodes, json_type_array) ? json_object_array_get_idx(nodes, i) : NULL;
            if (isn && json_object_get_boolean(isn)) s->reason.nodes[i] = s->reason.args[i];
          }
          s->reason.n_args = (uint8_t)n;
        }
      }
    }
    ox_json_path_pop(r);
  }
  if (json_object_object_get_ex(o, "checks", &v)) {
    ox_json_path_push_key(r, "checks");
    if (ox_json_expect_type(r, v, json_type_object, "checks")) {
      json_object_object_foreach(v, ck, cv) {
        int kk = -1;
        for (int i = 0; i < OX_CHECK_KINDS; i++)
          if (strcmp(ck, ox_check_kind_name((OxCheckKind)i)) == 0) kk = i;
        ox_json_path_push_key(r, ck);
        if (kk < 0 || !json_object_is_type(cv, json_type_object)) {
          ERR(r, "unknown check '%.40s'", ck);
          ox_json_path_pop(r);
          continue;
        }
        OxCheckResult *c = &s->checks[kk];
        const char *st = opt_string(r, t, cv, "status");
        int si = -1;
        for (int i = 0; st && i <= OX_CHECK_SKIPPED; i++)
          if (strcmp(st, ox_check_status_name((OxCheckStatus)i)) == 0) si = i;
        if (si < 0) ERR(r, "check status must be not-run, passed, failed or skipped");
        c->status = (uint8_t)(si < 0 ? 0 : si);
        if (x->version >= 5) {
          int64_t di = opt_index(x, cv, "detail", "a check's detail", "strings", x->n_strings);
          c->detail = di >= 0 ? x->strings[di] : NULL;
        } else {
          c->detail = opt_string(r, t, cv, "detail");
        }
        c->checked_shape = opt_string(r, t, cv, "checked_shape");
        c->max_abs = opt_num(cv, "max_abs");
        c->max_rel = opt_num(cv, "max_rel");
        c->tol = opt_num(cv, "tol");
        c->trials = opt_u32(r, cv, "trials");
        c->seconds = opt_num(cv, "seconds");
        ox_json_path_pop(r);
      }
    }
    ox_json_path_pop(r);
  }
  if (json_object_object_get_ex(o, "edits", &v)) {
    ox_json_path_push_key(r, "edits");
    if (ox_json_expect_type(r, v, json_type_array, "edits")) {
      size_t n = json_object_array_length(v);
      EditList l = {0};
      for (size_t i = 0; i < n; i++) {
        ox_json_path_push_idx(r, i);
        json_object *a = json_object_array_get_idx(v, i);
        if (x->version < 3)
          read_edit(r, t, a, edit_push(&l));
        else if (ox_json_expect_type(r, a, json_type_array, "an edit"))
          read_edit4(x, a, &l);
        ox_json_path_pop(r);
      }
      /* s stays valid: nothing in this loop adds steps */
      s->edits = ox_graph_alloc(t->pool, (l.n + 1) * sizeof *s->edits);
      if (l.n) memcpy(s->edits, l.e, l.n * sizeof *s->edits);
      s->n_edits = (uint32_t)l.n;
      free(l.e);
    }
    ox_json_path_pop(r);
  }
  if (x->version >= 4 && !json_object_object_get_ex(o, "provenance", &v)) provenance_from_replaces(t, s);
  if (x->version >= 3) {
    /* version 3 leaves out removed / added when they are the names of the erase / add edits */
    if (!json_object_object_get_ex(o, "removed", &v)) s->removed = edit_names(t, s, OX_TEDIT_ERASE, &s->n_removed);
    if (!json_object_object_get_ex(o, "added", &v)) s->added = edit_names(t, s, OX_TEDIT_ADD, &s->n_added);
  }
}

/* ---- the fast read of a version 3 step (no json-c)
 *
 * A step of what optimus writes is read straight from the text with our own tokenizer
 * (ox_json_lex.h) and the fast document read's value reader (ox_json_fast.c): no json_object tree,
 * names interned once, indices looked up in the tables. It takes only what read_step would take
 * without a word: each known member once, of its type, every index in range. At anything else
 * (malformed text, an unknown or repeated member, a wrong type, an index out of range, a string
 * with a NUL, a number json-c would clamp ...) it gives up, adds no step, and the step is read by
 * stream_parse + read_step as before, so every diagnostic and every accepted trace is what the
 * json-c read gives. What a failed attempt leaves in the pool is harmless: interned strings, and
 * placeholders for names the json-c read of the same edits refers to in the same order. */

/* Containers a step may nest: one level less than the json-c read's 254 (the tokenizer takes no
 * more than json-c would). */
enum { STEP_MAX_DEPTH = 253 };

typedef struct RecentStr {
  const char *s; /* interned in the pool */
  size_t n;
} RecentStr;

typedef struct FastStep {
  OxJsonFast *fj;
  OxJsonLex *x;
  const char **refs;   /* the name list being read */
  size_t n_refs, cap_refs;
  EditList edits;      /* the step's edits being read */
  unsigned long steps; /* steps read */
  RecentStr recent[256]; /* strings interned lately, by a hash of their text: the same few
                            (phase, pass, rule, check details) come in every step */
} FastStep;

static unsigned long fast_trace_steps;

unsigned long ox_trace_fast_steps(void) { return __atomic_load_n(&fast_trace_steps, __ATOMIC_RELAXED); }

static bool fs_is(const OxJsonLex *x, const char *lit) {
  size_t n = strlen(lit);
  return x->n == n && memcmp(x->s, lit, n) == 0;
}

/* The current STRING token interned in the pool (as ox_trace_intern); NULL when it holds a NUL
 * (json-c's read would keep the part before it). */
static const char *fs_str(TR *tr, const OxJsonLex *x) {
  if (x->escaped && memchr(x->s, 0, x->n)) return NULL;
  return ox_graph_intern_n(tr->t->pool, x->s, x->n);
}

/* The same through the recent strings (for the strings of steps: names come as indices). */
static const char *fs_str_recent(TR *tr, FastStep *f) {
  const OxJsonLex *x = f->x;
  uint32_t h = (uint32_t)x->n * 0x9E3779B1u;
  for (size_t i = 0; i < x->n && i < 12; i++) h = (h ^ (unsigned char)x->s[i]) * 0x01000193u;
  if (x->n) h ^= (unsigned char)x->s[x->n - 1] * 0x85EBCA77u;
  RecentStr *e = &f->recent[(h >> 8) & 255];
  if (e->s && e->n == x->n && memcmp(e->s, x->s, x->n) == 0) return e->s;
  const char *s = fs_str(tr, x);
  if (s) {
    e->s = s;
    e->n = x->n;
  }
  return s;
}

/* An optional string member (opt_string): a string, or null for none. */
static bool fs_opt_str(TR *tr, FastStep *f, OxJsonTok tok, const char **out) {
  if (tok == OX_JSON_NULL) {
    *out = NULL;
    return true;
  }
  return tok == OX_JSON_STRING && (*out = fs_str_recent(tr, f)) != NULL;
}

static bool fs_u32(const OxJsonLex *x, OxJsonTok tok, uint32_t *out) {
  if (tok != OX_JSON_INT || x->i < 0 || x->i > UINT32_MAX) return false;
  *out = (uint32_t)x->i;
  return true;
}

/* opt_num: a number, or null for NaN (opt_num's NaN for other types is left to it). */
static bool fs_num(const OxJsonLex *x, OxJsonTok tok, double *out) {
  if (tok == OX_JSON_INT) *out = (double)x->i;
  else if (tok == OX_JSON_DOUBLE) *out = x->f;
  else if (tok == OX_JSON_NULL) *out = NAN;
  else return false;
  return true;
}

/* A node reference: an index into names. */
static bool fs_ref(const TR *tr, const OxJsonLex *x, OxJsonTok tok, const char **out) {
  if (tok != OX_JSON_INT || x->i < 0 || x->i >= tr->n_names) return false;
  *out = tr->names[x->i];
  return true;
}

/* An item of an index list (list_span): the span of names [*lo, *hi] it stands for. */
static bool fs_span(TR *tr, OxJsonLex *x, OxJsonTok tok, uint32_t *lo, uint32_t *hi) {
  if (tok == OX_JSON_ARRAY && tr->version >= 5) return ox_json_lex_range(x, tr->n_names, &tr->expand_left, lo, hi);
  if (tok != OX_JSON_INT || x->i < 0 || x->i >= tr->n_names) return false;
  *lo = *hi = (uint32_t)x->i;
  return true;
}

/* The names of an index list's items up to its ']' appended to f->refs. */
static bool fs_list_items(TR *tr, FastStep *f) {
  OxJsonTok tok;
  uint32_t lo, hi;
  while ((tok = ox_json_lex_next(f->x)) != OX_JSON_ARRAY_END) {
    if (!fs_span(tr, f->x, tok, &lo, &hi)) return false;
    if (f->n_refs + (hi - lo) + 1 > f->cap_refs) {
      f->cap_refs = f->cap_refs ? 2 * f->cap_refs : 256;
      if (f->cap_refs < f->n_refs + (hi - lo) + 1) f->cap_refs = f->n_refs + (hi - lo) + 1;
      f->refs = ox_xrealloc(f->refs, f->cap_refs * sizeof *f->refs);
    }
    for (uint64_t k = lo; k <= hi; k++) f->refs[f->n_refs++] = tr->names[k];
  }
  return true;
}

/* A list of node references (read_names) from its '[' on, copied to the pool. */
static bool fs_refs(TR *tr, FastStep *f, const char ***out, uint32_t *n) {
  f->n_refs = 0;
  if (!fs_list_items(tr, f)) return false;
  if (f->n_refs > UINT32_MAX - 1) return false;
  *out = ox_graph_alloc(tr->t->pool, (f->n_refs + 1) * sizeof **out);
  if (f->n_refs) memcpy(*out, f->refs, f->n_refs * sizeof **out);
  *n = (uint32_t)f->n_refs;
  return true;
}

/* "cost" (read_cost) from its '{' on. */
static bool fs_cost(FastStep *f, OxCostPair *p) {
  static const char *const keys[3] = {"launches", "bytes", "flops"};
  static const unsigned bits[3] = {OX_COST_LAUNCHES, OX_COST_BYTES, OX_COST_FLOPS};
  OxJsonLex *x = f->x;
  OxCost *c[2] = {&p->before, &p->after};
  unsigned seen = 0;
  memset(p, 0, sizeof *p);
  p->set = true;
  OxJsonTok tok;
  while ((tok = ox_json_lex_next(x)) != OX_JSON_OBJECT_END) {
    int k = -1;
    for (int i = 0; tok == OX_JSON_KEY && i < 3; i++)
      if (fs_is(x, keys[i])) k = i;
    if (k < 0 || (seen & (1u << k)) || ox_json_lex_next(x) != OX_JSON_ARRAY) return false;
    seen |= 1u << k;
    for (int i = 0; i < 2; i++) {
      tok = ox_json_lex_next(x);
      if (tok == OX_JSON_NULL) {
        c[i]->unknown |= (uint8_t)bits[k];
        continue;
      }
      if (tok != OX_JSON_INT || x->i < 0) return false;
      uint64_t v = (uint64_t)x->i;
      if (k == 0) c[i]->launches = v;
      else if (k == 1) c[i]->bytes = v;
      else c[i]->flops = v;
    }
    if (ox_json_lex_next(x) != OX_JSON_ARRAY_END) return false;
  }
  for (int k = 0; k < 3; k++)
    if (!(seen & (1u << k))) {
      c[0]->unknown |= (uint8_t)bits[k];
      c[1]->unknown |= (uint8_t)bits[k];
    }
  return true;
}

/* "provenance" from its '[' on: [old, new] pairs. */
static bool fs_provenance(TR *tr, FastStep *f, OxStep *s) {
  OxJsonLex *x = f->x;
  f->n_refs = 0;
  OxJsonTok tok;
  while ((tok = ox_json_lex_next(x)) != OX_JSON_ARRAY_END) {
    if (tok != OX_JSON_ARRAY) return false;
    if (f->n_refs + 2 > f->cap_refs) {
      f->cap_refs = f->cap_refs ? 2 * f->cap_refs : 256;
      f->refs = ox_xrealloc(f->refs, f->cap_refs * sizeof *f->refs);
    }
    if (!fs_ref(tr, x, ox_json_lex_next(x), &f->refs[f->n_refs]) ||
        !fs_ref(tr, x, ox_json_lex_next(x), &f->refs[f->n_refs + 1]) || ox_json_lex_next(x) != OX_JSON_ARRAY_END)
      return false;
    f->n_refs += 2;
  }
  size_t n = f->n_refs / 2;
  if (n > UINT32_MAX - 1) return false;
  s->prov_old = ox_graph_alloc(tr->t->pool, (n + 1) * sizeof(char *));
  s->prov_new = ox_graph_alloc(tr->t->pool, (n + 1) * sizeof(char *));
  for (size_t i = 0; i < n; i++) {
    s->prov_old[i] = f->refs[2 * i];
    s->prov_new[i] = f->refs[2 * i + 1];
  }
  s->n_prov = (uint32_t)n;
  return true;
}

/* "reason" from its '{' on: a known code, args (strings, at most OX_REASON_MAX_ARGS) and nodes
 * (booleans). */
static bool fs_reason(TR *tr, FastStep *f, OxReason *rs) {
  OxJsonLex *x = f->x;
  bool have_code = false, nodes[OX_REASON_MAX_ARGS] = {false};
  unsigned seen = 0;
  OxJsonTok tok;
  while ((tok = ox_json_lex_next(x)) != OX_JSON_OBJECT_END) {
    int k = tok != OX_JSON_KEY ? -1 : fs_is(x, "code") ? 0 : fs_is(x, "args") ? 1 : fs_is(x, "nodes") ? 2 : -1;
    if (k < 0 || (seen & (1u << k))) return false;
    seen |= 1u << k;
    tok = ox_json_lex_next(x);
    if (k == 0) {
      char code[64];
      OxReasonCode rc;
      if (tok != OX_JSON_STRING || x->n >= sizeof code || memchr(x->s, 0, x->n)) return false;
      memcpy(code, x->s, x->n);
      code[x->n] = 0;
      if (!ox_reason_code_from_name(code, &rc)) return false;
      rs->code = (uint16_t)rc;
      have_code = true;
    } else {
      if (tok != OX_JSON_ARRAY) return false;
      uint32_t n = 0;
      while ((tok = ox_json_lex_next(x)) != OX_JSON_ARRAY_END) {
        if (n == OX_REASON_MAX_ARGS) return false; /* read_step drops the rest silently */
        if (k == 1 && tr->version >= 4) { /* an index into "strings" */
          if (tok != OX_JSON_INT || x->i < 0 || x->i >= tr->n_strings) return false;
          rs->args[n] = tr->strings[x->i];
        } else if (k == 1) {
          if (tok != OX_JSON_STRING || !(rs->args[n] = fs_str_recent(tr, f))) return false;
        } else {
          if (tok != OX_JSON_TRUE && tok != OX_JSON_FALSE) return false;
          nodes[n] = tok == OX_JSON_TRUE;
        }
        n++;
      }
      if (k == 1) rs->n_args = (uint8_t)n;
    }
  }
  if (!have_code) return false;
  for (uint32_t i = 0; i < rs->n_args; i++)
    if (nodes[i]) rs->nodes[i] = rs->args[i];
  return true;
}

/* "checks" from its '{' on. */
static bool fs_checks(TR *tr, FastStep *f, OxStep *s) {
  enum { C_STATUS, C_DETAIL, C_SHAPE, C_MAX_ABS, C_MAX_REL, C_TOL, C_TRIALS, C_SECONDS, C_N };
  static const char *const keys[C_N] = {"status", "detail", "checked_shape", "max_abs", "max_rel", "tol", "trials",
                                        "seconds"};
  OxJsonLex *x = f->x;
  unsigned kinds = 0;
  OxJsonTok tok;
  while ((tok = ox_json_lex_next(x)) != OX_JSON_OBJECT_END) {
    int kk = -1;
    for (int i = 0; tok == OX_JSON_KEY && i < OX_CHECK_KINDS; i++)
      if (fs_is(x, ox_check_kind_name((OxCheckKind)i))) kk = i;
    if (kk < 0 || (kinds & (1u << kk)) || ox_json_lex_next(x) != OX_JSON_OBJECT) return false;
    kinds |= 1u << kk;
    OxCheckResult *c = &s->checks[kk];
    unsigned seen = 0;
    while ((tok = ox_json_lex_next(x)) != OX_JSON_OBJECT_END) {
      int k = -1;
      for (int i = 0; tok == OX_JSON_KEY && i < C_N; i++)
        if (fs_is(x, keys[i])) k = i;
      if (k < 0 || (seen & (1u << k))) return false;
      seen |= 1u << k;
      tok = ox_json_lex_next(x);
      bool ok = false;
      switch (k) {
      case C_STATUS:
        for (int i = 0; tok == OX_JSON_STRING && i <= OX_CHECK_SKIPPED; i++)
          if (fs_is(x, ox_check_status_name((OxCheckStatus)i))) {
            c->status = (uint8_t)i;
            ok = true;
          }
        break;
      case C_DETAIL:
        if (tr->version >= 5 && tok == OX_JSON_INT) { /* an index into "strings" */
          ok = x->i >= 0 && x->i < tr->n_strings;
          if (ok) c->detail = tr->strings[x->i];
        } else {
          ok = tr->version < 5 && fs_opt_str(tr, f, tok, &c->detail);
        }
        break;
      case C_SHAPE: ok = fs_opt_str(tr, f, tok, &c->checked_shape); break;
      case C_MAX_ABS: ok = fs_num(x, tok, &c->max_abs); break;
      case C_MAX_REL: ok = fs_num(x, tok, &c->max_rel); break;
      case C_TOL: ok = fs_num(x, tok, &c->tol); break;
      case C_TRIALS: ok = fs_u32(x, tok, &c->trials); break;
      case C_SECONDS: ok = fs_num(x, tok, &c->seconds); break;
      }
      if (!ok) return false;
    }
    if (!(seen & (1u << C_STATUS))) return false;
  }
  return true;
}

/* Appends an edit to the step's edits being read (pointers into them do not last). */
static OxTraceEdit *fs_push(FastStep *f) { return edit_push(&f->edits); }

/* An add's fields after its name (after, target, args, meta, kwargs) up to its ']';
 * *n counts the items read. */
static bool fs_add_fields(TR *tr, FastStep *f, int k, OxTraceEdit *e, size_t *n) {
  OxJsonLex *x = f->x;
  OxTrace *t = tr->t;
  OxJsonTok tok;
  if (k == OX_TEDIT_ADD) {
    tok = ox_json_lex_next(x);
    if (tok != OX_JSON_NULL && !fs_ref(tr, x, tok, &e->after)) return false;
    if (ox_json_lex_next(x) != OX_JSON_INT || x->i < 0 || x->i >= tr->n_targets) return false;
    e->op = tr->target_ops[x->i];
    e->target = tr->target_names[x->i];
  }
  OxTraceEditData *d = ox_trace_edit_data(t, e);
  d->args = ox_graph_value_seq(t->pool, OX_V_TUPLE, NULL, 0);
  d->kwargs = ox_graph_value_dict(t->pool, NULL, NULL, 0);
  if (ox_json_lex_next(x) != OX_JSON_ARRAY || !ox_json_fast_items(f->fj, OX_V_TUPLE, &d->args)) return false;
  *n = k == OX_TEDIT_ADD ? 5 : 3;
  tok = ox_json_lex_next(x);
  if (tok == OX_JSON_ARRAY_END) return true;
  if (k == OX_TEDIT_ADD) { /* the meta: an index, or null for none */
    if (tok == OX_JSON_INT) {
      if (x->i < 0 || x->i >= tr->n_metas) return false;
      d->meta = tr->metas[x->i];
      e->has_meta = tr->meta_ok[x->i];
    } else if (tok != OX_JSON_NULL) {
      return false;
    }
    (*n)++;
    tok = ox_json_lex_next(x);
    if (tok == OX_JSON_ARRAY_END) return true;
  }
  OxValue kw; /* kwargs: a dict */
  if (!ox_json_fast_value(f->fj, tok, &kw) || kw.kind != OX_V_DICT) return false;
  d->kwargs = kw;
  (*n)++;
  return *n <= (k == OX_TEDIT_ADD ? 7u : 4u) && ox_json_lex_next(x) == OX_JSON_ARRAY_END;
}

/* ["replace", old, [users], name, after, target, args(, meta(, kwargs))] (version 4) after its
 * kind: the add, a replace_input per user, the erase of old. */
static bool fs_replace(TR *tr, FastStep *f) {
  OxJsonLex *x = f->x;
  const char *old, *name;
  if (!fs_ref(tr, x, ox_json_lex_next(x), &old) || ox_json_lex_next(x) != OX_JSON_ARRAY) return false;
  size_t first = f->edits.n;
  f->n_refs = 0;
  if (!fs_list_items(tr, f)) return false;
  for (size_t i = 0; i < f->n_refs; i++) { /* the users, pushed as rewires ... */
    OxTraceEdit *e = fs_push(f);
    e->kind = OX_TEDIT_REPLACE;
    e->from = old;
    e->name = f->refs[i];
  }
  size_t nu = f->edits.n - first;
  if (!nu || !fs_ref(tr, x, ox_json_lex_next(x), &name)) return false;
  OxTraceEdit *add = fs_push(f);
  add->kind = OX_TEDIT_ADD;
  add->name = name;
  size_t n;
  if (!fs_add_fields(tr, f, OX_TEDIT_ADD, add, &n)) return false;
  /* ... and the add moved before them */
  OxTraceEdit a = f->edits.e[f->edits.n - 1];
  memmove(&f->edits.e[first + 1], &f->edits.e[first], nu * sizeof *f->edits.e);
  f->edits.e[first] = a;
  for (size_t i = first + 1; i <= first + nu; i++) f->edits.e[i].to = name;
  OxTraceEdit *er = fs_push(f);
  er->kind = OX_TEDIT_ERASE;
  er->name = old;
  return true;
}

/* ["getitems", src, first, k, meta, count | [entry, ...]] (version 5) after its kind. */
static bool fs_getitems(TR *tr, FastStep *f) {
  OxJsonLex *x = f->x;
  const char *src;
  if (!fs_ref(tr, x, ox_json_lex_next(x), &src) || ox_json_lex_next(x) != OX_JSON_INT || x->i < 0 ||
      x->i >= tr->n_names)
    return false;
  int64_t first = x->i;
  if (ox_json_lex_next(x) != OX_JSON_INT) return false;
  int64_t k0 = x->i, meta = -1, *metas = NULL;
  size_t n_metas = 0, cap = 0;
  OxJsonTok tok = ox_json_lex_next(x);
  bool ok = true;
  if (tok == OX_JSON_INT) {
    ok = x->i >= 0 && x->i < tr->n_metas;
    meta = x->i;
  } else if (tok == OX_JSON_ARRAY) { /* one each */
    while (ok && (tok = ox_json_lex_next(x)) != OX_JSON_ARRAY_END) {
      ok = tok == OX_JSON_NULL || (tok == OX_JSON_INT && x->i >= 0 && x->i < tr->n_metas);
      if (n_metas == cap) metas = ox_xrealloc(metas, (cap = cap ? 2 * cap : 64) * sizeof *metas);
      metas[n_metas++] = tok == OX_JSON_INT ? x->i : -1;
    }
  } else {
    ok = tok == OX_JSON_NULL;
  }
  tok = ok ? ox_json_lex_next(x) : OX_JSON_ERROR;
  int64_t count = tok == OX_JSON_INT ? x->i : -1; /* -1: entries, counted as read */
  ok = tok == OX_JSON_ARRAY || count >= 1;
  for (int64_t j = 0; ok; j++) {
    if (count >= 0 ? j == count : (tok = ox_json_lex_next(x)) == OX_JSON_ARRAY_END) {
      ok = j >= 1 && (!metas || (size_t)j == n_metas);
      break;
    }
    if (first + j >= tr->n_names || k0 > INT64_MAX - j || !tr->expand_left || (metas && (size_t)j >= n_metas)) {
      ok = false;
      break;
    }
    tr->expand_left--;
    const char *name = tr->names[first + j];
    push_getitem(tr, &f->edits, src, name, j ? tr->names[first + j - 1] : src, k0 + j, metas ? metas[j] : meta);
    if (count >= 0 || tok == OX_JSON_NULL) continue;
    /* [old, [users]]: the add replaces old */
    const char *old;
    if (tok != OX_JSON_ARRAY || !fs_ref(tr, x, ox_json_lex_next(x), &old) || ox_json_lex_next(x) != OX_JSON_ARRAY) {
      ok = false;
      break;
    }
    f->n_refs = 0;
    ok = fs_list_items(tr, f) && f->n_refs && ox_json_lex_next(x) == OX_JSON_ARRAY_END;
    for (size_t i = 0; ok && i < f->n_refs; i++)
      *fs_push(f) = (OxTraceEdit){.kind = OX_TEDIT_REPLACE, .name = f->refs[i], .from = old, .to = name};
    if (ok) *fs_push(f) = (OxTraceEdit){.kind = OX_TEDIT_ERASE, .name = old};
  }
  free(metas);
  return ok && ox_json_lex_next(x) == OX_JSON_ARRAY_END;
}

/* One item of "edits" from after its '[': an edit, or (version 4) a run of them (w4_edits). */
static bool fs_edit(TR *tr, FastStep *f) {
  OxJsonLex *x = f->x;
  OxTrace *t = tr->t;
  if (ox_json_lex_next(x) != OX_JSON_STRING) return false;
  if (fs_is(x, "toposort")) {
    fs_push(f)->kind = OX_TEDIT_MOVE;
    return ox_json_lex_next(x) == OX_JSON_ARRAY_END;
  }
  if (tr->version >= 4 && fs_is(x, "replace")) return fs_replace(tr, f);
  if (tr->version >= 5 && fs_is(x, "getitems")) return fs_getitems(tr, f);
  int k = -1;
  for (int i = 0; i < N_EDIT_KINDS; i++)
    if (fs_is(x, edit_kind_names[i])) k = i;
  if (k < 0) return false;
  size_t at = f->edits.n;
  OxTraceEdit *e = fs_push(f);
  e->kind = (uint8_t)k;
  if (!fs_ref(tr, x, ox_json_lex_next(x), &e->name)) return false;
  OxJsonTok tok;
  size_t n; /* items of an add or args edit */
  switch ((OxTraceEditKind)k) {
  case OX_TEDIT_ERASE: break;
  case OX_TEDIT_MOVE:
    tok = ox_json_lex_next(x);
    if (tok != OX_JSON_NULL && !fs_ref(tr, x, tok, &e->after)) return false;
    break;
  case OX_TEDIT_RENAME:
    if (ox_json_lex_next(x) != OX_JSON_STRING || !(e->new_name = fs_str(tr, x))) return false;
    break;
  case OX_TEDIT_REPLACE:
    if (!fs_ref(tr, x, ox_json_lex_next(x), &e->from) || !fs_ref(tr, x, ox_json_lex_next(x), &e->to)) return false;
    break;
  case OX_TEDIT_META: {
    OxTraceEditData *d = ox_trace_edit_data(t, e);
    d->args = ox_graph_value_seq(t->pool, OX_V_TUPLE, NULL, 0);
    d->kwargs = ox_graph_value_dict(t->pool, NULL, NULL, 0);
    if (ox_json_lex_next(x) != OX_JSON_INT || x->i < 0 || x->i >= tr->n_metas) return false;
    d->meta = tr->metas[x->i]; /* as edit_meta: copied even when it did not read, but no meta then */
    e->has_meta = tr->meta_ok[x->i];
    break;
  }
  case OX_TEDIT_ADD:
  case OX_TEDIT_ARGS: return fs_add_fields(tr, f, k, e, &n);
  }
  /* past an edit's fields: its ']', or a run's other names (version 4) */
  bool run = tr->version >= 4 && (k == OX_TEDIT_ERASE || k == OX_TEDIT_MOVE || k == OX_TEDIT_REPLACE);
  if (!run) return ox_json_lex_next(x) == OX_JSON_ARRAY_END;
  f->n_refs = 0;
  if (!fs_list_items(tr, f)) return false;
  for (size_t i = 0; i < f->n_refs; i++) {
    OxTraceEdit *p = &f->edits.e[f->edits.n - 1];
    OxTraceEdit next = {.kind = (uint8_t)k, .name = f->refs[i]};
    if (k == OX_TEDIT_MOVE) next.after = p->name;
    if (k == OX_TEDIT_REPLACE) {
      next.from = f->edits.e[at].from;
      next.to = f->edits.e[at].to;
    }
    *fs_push(f) = next;
  }
  return true;
}

/* "edits" from its '[' on, copied to the pool. */
static bool fs_edits(TR *tr, FastStep *f, OxStep *s) {
  f->edits.n = 0;
  OxJsonTok tok;
  while ((tok = ox_json_lex_next(f->x)) != OX_JSON_ARRAY_END)
    if (tok != OX_JSON_ARRAY || !fs_edit(tr, f)) return false;
  if (f->edits.n > UINT32_MAX - 1) return false;
  s->edits = ox_graph_alloc(tr->t->pool, (f->edits.n + 1) * sizeof *s->edits);
  if (f->edits.n) memcpy(s->edits, f->edits.e, f->edits.n * sizeof *s->edits);
  s->n_edits = (uint32_t)f->edits.n;
  return true;
}

enum {
  S_KIND, S_APPLIED_INDEX, S_PHASE, S_PASS, S_RULE, S_RULE_FILE, S_RULE_LINE, S_ANCHOR, S_KEY, S_OPTIONS,
  S_MATCHED, S_REMOVED, S_ADDED, S_SCAFFOLDING, S_SECONDS, S_COST, S_PROVENANCE, S_REASON, S_CHECKS, S_EDITS, S_N
};
static const char *const step_keys[S_N] = {
  "kind", "applied_index", "phase", "pass", "rule", "rule_file", "rule_line", "anchor", "key", "options",
  "matched", "removed", "added", "scaffolding", "seconds", "cost", "provenance", "reason", "checks", "edits",
};

/* The member of a step named by the current KEY token; -1 when it is not one. */
static int fs_step_key(const OxJsonLex *x) {
  if (!x->n) return -1;
  for (int i = 0; i < S_N; i++)
    if (step_keys[i][0] == x->s[0] && fs_is(x, step_keys[i])) return i;
  return -1;
}

static bool fast_step_in(TR *tr, FastStep *f, const char *text, size_t len, size_t at, size_t *end);

/* Reads the step at text[at] into a new step of tr->t and sets *end past it; false (no step
 * added) when read_step must read it (then with the budget of ranges it started with). */
static bool fast_step(TR *tr, FastStep *f, const char *text, size_t len, size_t at, size_t *end) {
  uint64_t left = tr->expand_left;
  if (fast_step_in(tr, f, text, len, at, end)) return true;
  tr->expand_left = left;
  return false;
}

static bool fast_step_in(TR *tr, FastStep *f, const char *text, size_t len, size_t at, size_t *end) {
  OxJsonLex *x = f->x;
  OxTrace *t = tr->t;
  OxStep s;
  memset(&s, 0, sizeof s);
  int kind = -1;
  uint32_t seen = 0;
  ox_json_lex_reset(x, text, len, at, STEP_MAX_DEPTH);
  if (ox_json_lex_next(x) != OX_JSON_OBJECT) return false;
  OxJsonTok tok;
  while ((tok = ox_json_lex_next(x)) != OX_JSON_OBJECT_END) {
    int k = tok == OX_JSON_KEY ? fs_step_key(x) : -1;
    if (k < 0 || (seen & (1u << k))) return false;
    seen |= 1u << k;
    tok = ox_json_lex_next(x);
    bool ok = false;
    switch (k) {
    case S_KIND:
      for (int i = 0; tok == OX_JSON_STRING && i < 3; i++)
        if (fs_is(x, step_kind_names[i])) kind = i;
      ok = kind >= 0;
      break;
    case S_APPLIED_INDEX: ok = fs_u32(x, tok, &s.applied_index); break;
    case S_PHASE: ok = tr->version < 5 && fs_opt_str(tr, f, tok, &s.phase); break;
    case S_PASS: ok = tr->version < 5 && fs_opt_str(tr, f, tok, &s.pass); break;
    case S_RULE:
      if (tr->version < 5) {
        ok = fs_opt_str(tr, f, tok, &s.rule);
      } else if (tok == OX_JSON_NULL) {
        ok = true;
      } else if (tok == OX_JSON_INT && x->i >= 0 && x->i < tr->n_rules) { /* an index into "rules" */
        s.phase = tr->rules[3 * x->i];
        s.pass = tr->rules[3 * x->i + 1];
        s.rule = tr->rules[3 * x->i + 2];
        ok = true;
      }
      break;
    case S_RULE_FILE: ok = fs_opt_str(tr, f, tok, &s.rule_file); break;
    case S_RULE_LINE: ok = fs_u32(x, tok, &s.rule_line); break;
    case S_ANCHOR: ok = tok == OX_JSON_NULL || fs_ref(tr, x, tok, &s.anchor); break;
    case S_KEY: ok = fs_opt_str(tr, f, tok, &s.key); break;
    case S_OPTIONS: ok = fs_opt_str(tr, f, tok, &s.options); break;
    case S_MATCHED: ok = tok == OX_JSON_ARRAY && fs_refs(tr, f, &s.matched, &s.n_matched); break;
    case S_REMOVED: ok = tok == OX_JSON_ARRAY && fs_refs(tr, f, &s.removed, &s.n_removed); break;
    case S_ADDED: ok = tok == OX_JSON_ARRAY && fs_refs(tr, f, &s.added, &s.n_added); break;
    case S_SCAFFOLDING: ok = tok == OX_JSON_ARRAY && fs_refs(tr, f, &s.scaffold, &s.n_scaffold); break;
    case S_SECONDS: ok = fs_num(x, tok, &s.seconds); break;
    case S_COST: ok = tok == OX_JSON_OBJECT && fs_cost(f, &s.cost); break;
    case S_PROVENANCE: ok = tok == OX_JSON_ARRAY && fs_provenance(tr, f, &s); break;
    case S_REASON: ok = tok == OX_JSON_OBJECT && fs_reason(tr, f, &s.reason); break;
    case S_CHECKS: ok = tok == OX_JSON_OBJECT && fs_checks(tr, f, &s); break;
    case S_EDITS: ok = tok == OX_JSON_ARRAY && fs_edits(tr, f, &s); break;
    }
    if (!ok) return false;
  }
  if (kind < 0) return false;
  if (tr->version >= 4 && !(seen & (1u << S_PROVENANCE))) provenance_from_replaces(t, &s);
  /* version 3 leaves out removed / added when they are the names of the erase / add edits */
  if (!(seen & (1u << S_REMOVED))) s.removed = edit_names(t, &s, OX_TEDIT_ERASE, &s.n_removed);
  if (!(seen & (1u << S_ADDED))) s.added = edit_names(t, &s, OX_TEDIT_ADD, &s.n_added);
  OxStep *d = ox_trace_add_step(t, (OxStepKind)kind);
  s.seq = d->seq;
  s.kind = d->kind;
  *d = s;
  if (d->applied_index > t->n_graph_steps) t->n_graph_steps = d->applied_index;
  *end = x->pos;
  f->steps++;
  return true;
}

/* ---- the fast read of the version 3 tables "metas" and "targets"
 *
 * As the steps: read straight from the text when the json-c read would take them without a
 * word (read_meta_table, read_target_table); false, with nothing of x changed, when it must
 * read them. Metas are laid out as ox_json_read_meta lays them out (each tensor meta and its
 * dims allocated in the pool, none shared), so the trace is the one json-c's read gives. */

/* The dims of a shape or stride from its '[' on, in the pool (NULL when there are none). */
static bool ft_dims(TR *tr, OxJsonLex *x, OxDim **out, int32_t *n) {
  size_t k = 0, cap = 0;
  OxDim *tmp = NULL;
  OxJsonTok tok;
  bool ok = true;
  while (ok && (tok = ox_json_lex_next(x)) != OX_JSON_ARRAY_END) {
    if (k == cap) {
      cap = cap ? 2 * cap : 8;
      tmp = ox_xrealloc(tmp, cap * sizeof *tmp);
    }
    OxDim d = {0, NULL};
    if (tok == OX_JSON_INT) d.v = x->i;
    else if (tok != OX_JSON_STRING || !x->n || !(d.sym = fs_str(tr, x))) ok = false;
    tmp[k++] = d;
  }
  if (ok && k > INT32_MAX) ok = false;
  if (ok) {
    *out = k ? ox_graph_alloc(tr->t->pool, k * sizeof **out) : NULL;
    if (k) memcpy(*out, tmp, k * sizeof **out);
    *n = (int32_t)k;
  }
  free(tmp);
  return ok;
}

/* A tensor meta (read_tensor_meta) from its '{' on. */
static bool ft_tensor(TR *tr, OxJsonLex *x, OxTensorMeta *t) {
  memset(t, 0, sizeof *t);
  t->rank = -1;
  OxDim *stride = NULL;
  int32_t stride_n = -1, rank = 0;
  unsigned seen = 0;
  OxJsonTok tok;
  while ((tok = ox_json_lex_next(x)) != OX_JSON_OBJECT_END) {
    int k = tok != OX_JSON_KEY ? -1
          : fs_is(x, "dtype") ? 0 : fs_is(x, "shape") ? 1 : fs_is(x, "stride") ? 2 : fs_is(x, "device") ? 3 : -1;
    if (k < 0 || (seen & (1u << k))) return false; /* unknown: a warning of the json-c read */
    seen |= 1u << k;
    tok = ox_json_lex_next(x);
    switch (k) {
    case 0:
      if (tok != OX_JSON_STRING) return false;
      t->dtype = ox_dtype_from_abbr(x->s, x->n);
      if (t->dtype == OX_DT_UNKNOWN && !fs_is(x, "?")) return false;
      break;
    case 1:
      if (tok != OX_JSON_ARRAY || !ft_dims(tr, x, &t->shape, &rank)) return false;
      t->rank = rank;
      break;
    case 2:
      if (tok != OX_JSON_ARRAY || !ft_dims(tr, x, &stride, &stride_n)) return false;
      break;
    case 3:
      if (tok != OX_JSON_STRING || !(t->device = fs_str(tr, x))) return false;
      break;
    }
  }
  if (!(seen & 1u)) return false;
  if (seen & 4u) {
    if (t->rank < 0 || stride_n != t->rank) return false;
    t->has_stride = true;
    t->stride = stride;
  }
  char why[160];
  return !ox_meta_absurd(t, why, sizeof why); /* absurd: a warning of the json-c read */
}

/* A meta (ox_json_read_meta) from its '{' on. */
static bool ft_meta(TR *tr, OxJsonLex *x, OxMeta *m) {
  enum { M_INFERRED, M_TENSOR, M_TUPLE, M_SYMINT, M_SCALAR };
  static const char *const keys[] = {"inferred", "tensor", "tuple", "symint", "scalar"};
  OxGraph *g = tr->t->pool;
  memset(m, 0, sizeof *m);
  unsigned seen = 0;
  OxJsonTok tok;
  while ((tok = ox_json_lex_next(x)) != OX_JSON_OBJECT_END) {
    int k = -1;
    for (int i = 0; tok == OX_JSON_KEY && i < 5; i++)
      if (fs_is(x, keys[i])) k = i;
    if (k < 0 || (seen & (1u << k))) return false;
    seen |= 1u << k;
    tok = ox_json_lex_next(x);
    switch (k) {
    case M_INFERRED:
      if (tok != OX_JSON_TRUE && tok != OX_JSON_FALSE) return false;
      m->inferred = tok == OX_JSON_TRUE;
      break;
    case M_TENSOR:
      m->kind = OX_META_TENSOR;
      m->n = 1;
      m->t = ox_graph_alloc(g, sizeof *m->t);
      if (tok != OX_JSON_OBJECT || !ft_tensor(tr, x, m->t)) return false;
      break;
    case M_TUPLE: {
      m->kind = OX_META_TUPLE;
      if (tok != OX_JSON_ARRAY) return false;
      size_t n = 0, cap = 0;
      OxTensorMeta *tmp = NULL;
      bool ok = true;
      while (ok && (tok = ox_json_lex_next(x)) != OX_JSON_ARRAY_END) {
        if (n == cap) {
          cap = cap ? 2 * cap : 8;
          tmp = ox_xrealloc(tmp, cap * sizeof *tmp);
        }
        ok = tok == OX_JSON_OBJECT && ft_tensor(tr, x, &tmp[n++]);
      }
      if (ok && n <= UINT32_MAX) {
        m->n = (uint32_t)n;
        m->t = n ? ox_graph_alloc(g, n * sizeof *m->t) : NULL;
        if (n) memcpy(m->t, tmp, n * sizeof *m->t);
      }
      free(tmp);
      if (!ok || n > UINT32_MAX) return false;
      break;
    }
    case M_SYMINT:
      m->kind = OX_META_SYMINT;
      if (tok != OX_JSON_NULL && (tok != OX_JSON_STRING || !(m->sym = fs_str(tr, x)))) return false;
      break;
    case M_SCALAR:
      m->kind = OX_META_SCALAR;
      if (tok != OX_JSON_TRUE) return false;
      break;
    }
  }
  unsigned kinds = seen >> M_TENSOR;
  return (kinds & (kinds - 1)) == 0; /* at most one kind */
}

/* "metas" at text[at, end). */
static bool fast_meta_table(TR *tr, OxJsonLex *x, const char *text, size_t at, size_t end) {
  size_t n = 0, cap = 0;
  OxMeta *metas = NULL;
  bool ok = true;
  ox_json_lex_reset(x, text, end, at, STEP_MAX_DEPTH);
  ok = ox_json_lex_next(x) == OX_JSON_ARRAY;
  OxJsonTok tok;
  while (ok && (tok = ox_json_lex_next(x)) != OX_JSON_ARRAY_END) {
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      metas = ox_xrealloc(metas, (cap + 1) * sizeof *metas);
    }
    ok = tok == OX_JSON_OBJECT && ft_meta(tr, x, &metas[n++]) && n < UINT32_MAX;
  }
  if (!ok) {
    free(metas);
    return false;
  }
  tr->metas = metas ? metas : ox_xcalloc(1, sizeof *metas);
  tr->meta_ok = ox_xcalloc(n + 1, sizeof *tr->meta_ok);
  for (size_t i = 0; i < n; i++) tr->meta_ok[i] = true;
  tr->n_metas = (uint32_t)n;
  return true;
}

/* "targets" at text[at, end). */
static bool fast_target_table(TR *tr, OxJsonLex *x, const char *text, size_t at, size_t end) {
  size_t n = 0, cap = 0;
  uint8_t *ops = NULL;
  const char **names = NULL;
  bool ok = true;
  ox_json_lex_reset(x, text, end, at, STEP_MAX_DEPTH);
  ok = ox_json_lex_next(x) == OX_JSON_ARRAY;
  OxJsonTok tok;
  while (ok && (tok = ox_json_lex_next(x)) != OX_JSON_ARRAY_END) {
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      ops = ox_xrealloc(ops, (cap + 1) * sizeof *ops);
      names = ox_xrealloc(names, (cap + 1) * sizeof *names);
    }
    OxOp op;
    ok = tok == OX_JSON_ARRAY && ox_json_lex_next(x) == OX_JSON_STRING && !memchr(x->s, 0, x->n) &&
         ox_op_from_name(x->s, x->n, &op) && ox_json_lex_next(x) == OX_JSON_STRING &&
         (names[n] = fs_str(tr, x)) != NULL && ox_json_lex_next(x) == OX_JSON_ARRAY_END && n < UINT32_MAX;
    if (ok) ops[n++] = (uint8_t)op;
  }
  if (!ok) {
    free(ops);
    free(names);
    return false;
  }
  tr->target_ops = ops ? ops : ox_xcalloc(1, sizeof *ops);
  tr->target_names = names ? names : ox_xcalloc(1, sizeof *names);
  tr->n_targets = (uint32_t)n;
  return true;
}

/* The trace reader streams: a trace of a 100k-node run is tens of MB of JSON, and a DOM of all of
 * it costs ~25x its size. The top-level object and the "steps" array are scanned here (strings
 * and brackets only); every other member and every step is a small JSON text of its own, parsed
 * strictly by json-c, converted, and freed before the next (a version 3 step or table: read by
 * the fast read above when it takes it, which is what optimus writes). Syntax errors are located in the
 * whole file; semantic errors name their path (steps[12].edits[3]) and are located as usual. */

typedef struct Stream {
  Rd *r;
  const char *text;
  size_t len;
  struct json_tokener *tok;
  char *tmp;
  size_t tmp_cap;
} Stream;

static void stream_syntax(Stream *st, size_t off, const char *fmt, const char *what) {
  uint32_t line, col;
  if (off > st->len) off = st->len;
  ox_json_offset_to_linecol(st->text, st->len, off, &line, &col);
  ox_diag_add(st->r->d, OX_SEV_ERROR, line, col, st->text + off, fmt, what);
  st->r->errors++;
}

/* Parses text[s, e) (one JSON value) strictly; NULL after reporting a located error. */
static json_object *stream_parse(Stream *st, size_t s, size_t e) {
  json_tokener_reset(st->tok);
  const char *p = st->text + s;
  size_t n = e - s;
  if (n && p[0] != '{' && p[0] != '[' && p[0] != '"') {
    /* json-c finishes a bare scalar only at a terminator: parse a NUL-terminated copy */
    if (n + 1 > st->tmp_cap) {
      st->tmp_cap = n + 64;
      st->tmp = ox_xrealloc(st->tmp, st->tmp_cap);
    }
    memcpy(st->tmp, p, n);
    st->tmp[n] = 0;
    p = st->tmp;
    n++;
  }
  json_object *o = json_tokener_parse_ex(st->tok, p, (int)n);
  enum json_tokener_error jerr = json_tokener_get_error(st->tok);
  size_t end = json_tokener_get_parse_end(st->tok);
  if (!o) {
    if (jerr == json_tokener_continue) stream_syntax(st, e, "JSON syntax error: %s", "unexpected end of a value");
    else stream_syntax(st, s + end, "JSON syntax error: %s", json_tokener_error_desc(jerr));
    return NULL;
  }
  if (p == st->text + s && end != n) {
    json_object_put(o);
    stream_syntax(st, s + end, "JSON syntax error: %s", "unexpected text after a value");
    return NULL;
  }
  return o;
}

/* The lines the edits of the step object text[s, e) start on (line = the line of s): the
 * step was parsed already, so the text is valid JSON; its "edits" member is found among the
 * top-level members and its elements are walked with skip_value. */
static void edit_lines(const char *text, size_t s, size_t e, uint32_t line, OxStep *st) {
  size_t i = ox_json_skip_ws(text, e, s + 1), at = s;
  while (i < e && text[i] == '"') {
    size_t ke = ox_json_skip_string(text, e, i);
    bool edits = ke - i == 7 && memcmp(text + i, "\"edits\"", 7) == 0;
    i = ox_json_skip_ws(text, e, ke);
    if (i >= e || text[i] != ':') return;
    i = ox_json_skip_ws(text, e, i + 1);
    if (edits && i < e && text[i] == '[') {
      i = ox_json_skip_ws(text, e, i + 1);
      for (uint32_t k = 0; k < st->n_edits && i < e && text[i] != ']'; k++) {
        for (; at < i; at++)
          if (text[at] == '\n') line++;
        st->edits[k].src_line = line;
        i = ox_json_skip_ws(text, e, ox_json_skip_value(text, e, i));
        if (i < e && text[i] == ',') i = ox_json_skip_ws(text, e, i + 1);
      }
      return;
    }
    i = ox_json_skip_ws(text, e, ox_json_skip_value(text, e, i));
    if (i < e && text[i] == ',') i = ox_json_skip_ws(text, e, i + 1);
  }
}

/* Extent of the value at i (validated later by stream_parse); 0 on a structural error. */
static size_t stream_value_end(Stream *st, size_t i) {
  if (i >= st->len) {
    stream_syntax(st, i, "JSON syntax error: %s", "unexpected end of input");
    return 0;
  }
  char c = st->text[i];
  if (c == ',' || c == '}' || c == ']' || c == ':') {
    stream_syntax(st, i, "JSON syntax error: %s", "a value is missing");
    return 0;
  }
  size_t e = ox_json_skip_value(st->text, st->len, i);
  if (e <= i) {
    stream_syntax(st, i, "JSON syntax error: %s", "a value is missing");
    return 0;
  }
  return e;
}

typedef struct Member {
  char key[32];
  json_object *v;  /* NULL: a table left to read from text[at, end) (fast_meta_table ...) */
  size_t at, end;
} Member;

/* Whether text[at, end) is one value our tokenizer takes whole (so json-c takes it too). */
static bool lex_takes(OxJsonLex *x, const char *text, size_t at, size_t end) {
  ox_json_lex_reset(x, text, end, at, STEP_MAX_DEPTH);
  return ox_json_lex_skip(x, ox_json_lex_next(x)) && ox_json_lex_next(x) == OX_JSON_END;
}

/* The member key of mem (the last one of that key: duplicates share a slot), or NULL. */
static Member *member(Member *mem, uint32_t n, const char *key) {
  for (uint32_t k = 0; k < n; k++)
    if (strcmp(mem[k].key, key) == 0) return &mem[k];
  return NULL;
}

enum { MAX_MEMBERS = 16 };

/* The "names" array of a version 3 trace at text[i] (its '['): a string a name, read straight
 * from the text when it has no escape or control character (nearly all), through json-c
 * otherwise. Returns false after a syntax error (reported, located). */
static bool read_name_table(Stream *st, TR *x, size_t i) {
  Rd *r = st->r;
  const char *text = st->text;
  size_t len = st->len;
  uint32_t cap = 0;
  ox_json_path_push_key(r, "names");
  if (text[i] != '[') {
    ERR(r, "expected an array of node names");
    ox_json_path_pop(r);
    return true;
  }
  i = ox_json_skip_ws(text, len, i + 1);
  bool ok = true;
  if (i < len && text[i] == ']') {
    ox_json_path_pop(r);
    return true;
  }
  for (;;) {
    const char *name = NULL;
    size_t e = i + 1;
    if (i < len && text[i] == '"') {
      while (e < len && text[e] != '"' && text[e] != '\\' && (unsigned char)text[e] >= 0x20) e++;
      if (e < len && text[e] == '"') {
        name = ox_graph_intern_n(x->t->pool, text + i + 1, e - i - 1);
        e++;
      }
    }
    if (!name) {
      e = stream_value_end(st, i);
      json_object *o = e ? stream_parse(st, i, e) : NULL;
      if (!o) {
        ok = false;
        break;
      }
      ox_json_path_push_idx(r, x->n_names);
      if (!json_object_is_type(o, json_type_string))
        ERR(r, "a node name must be a string, not %s", ox_json_jtype_name(o));
      else if (memchr(json_object_get_string(o), 0, (size_t)json_object_get_string_len(o)))
        ERR(r, "a node name contains a NUL character");
      else
        name = ox_graph_intern_n(x->t->pool, json_object_get_string(o), (size_t)json_object_get_string_len(o));
      ox_json_path_pop(r);
      json_object_put(o);
      if (!name) name = ox_graph_intern(x->t->pool, ""); /* the error fails the read; keep the indices of the later names */
    }
    if (x->n_names == cap) {
      cap = cap ? 2 * cap : 1024;
      x->names = ox_xrealloc(x->names, cap * sizeof *x->names);
    }
    x->names[x->n_names++] = name;
    i = ox_json_skip_ws(text, len, e);
    if (i < len && text[i] == ',') {
      i = ox_json_skip_ws(text, len, i + 1);
      continue;
    }
    if (i < len && text[i] == ']') break;
    stream_syntax(st, i, "JSON syntax error: %s", i >= len ? "unexpected end of input" : "expected ',' or ']'");
    ok = false;
    break;
  }
  ox_json_path_pop(r);
  return ok;
}

/* The "targets" array of a version 3 trace (parsed already): [op, target] pairs. */
static void read_target_table(TR *x, json_object *v) {
  Rd *r = x->r;
  ox_json_path_push_key(r, "targets");
  if (ox_json_expect_type(r, v, json_type_array, "targets")) {
    size_t n = json_object_array_length(v);
    x->target_ops = ox_xcalloc(n + 1, sizeof *x->target_ops);
    x->target_names = ox_xcalloc(n + 1, sizeof *x->target_names);
    for (size_t i = 0; i < n; i++) {
      json_object *p = json_object_array_get_idx(v, i);
      json_object *op = json_object_is_type(p, json_type_array) && json_object_array_length(p) == 2
                            ? json_object_array_get_idx(p, 0) : NULL;
      json_object *tg = op ? json_object_array_get_idx(p, 1) : NULL;
      OxOp opv = OX_OP_PLACEHOLDER;
      ox_json_path_push_idx(r, i);
      if (!json_object_is_type(op, json_type_string) || !json_object_is_type(tg, json_type_string))
        ERR(r, "a target must be [op, target] (two strings)");
      else if (!ox_op_from_name(json_object_get_string(op), (size_t)json_object_get_string_len(op), &opv))
        ERR(r, "unknown op '%.40s'", json_object_get_string(op));
      x->target_ops[i] = (uint8_t)opv;
      x->target_names[i] = ox_trace_intern(x->t, tg ? json_object_get_string(tg) : "");
      ox_json_path_pop(r);
    }
    x->n_targets = (uint32_t)n;
  }
  ox_json_path_pop(r);
}

/* The "strings" array of a version 4 trace (parsed already): the reason arguments. */
static void read_string_table(TR *x, json_object *v) {
  Rd *r = x->r;
  ox_json_path_push_key(r, "strings");
  if (ox_json_expect_type(r, v, json_type_array, "strings")) {
    size_t n = json_object_array_length(v);
    x->strings = ox_xcalloc(n + 1, sizeof *x->strings);
    for (size_t i = 0; i < n; i++) {
      json_object *e = json_object_array_get_idx(v, i);
      ox_json_path_push_idx(r, i);
      if (!json_object_is_type(e, json_type_string))
        ERR(r, "a reason argument must be a string, not %s", ox_json_jtype_name(e));
      else if (memchr(json_object_get_string(e), 0, (size_t)json_object_get_string_len(e)))
        ERR(r, "a reason argument contains a NUL character");
      x->strings[i] = ox_trace_intern(x->t, json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "");
      ox_json_path_pop(r);
    }
    x->n_strings = (uint32_t)n;
  }
  ox_json_path_pop(r);
}

/* The "rules" array of a version 5 trace (parsed already): {"phase", "pass", "rule"} objects, each
 * member optional. */
static void read_rule_table(TR *x, json_object *v) {
  Rd *r = x->r;
  static const char *const keys[3] = {"phase", "pass", "rule"};
  ox_json_path_push_key(r, "rules");
  if (ox_json_expect_type(r, v, json_type_array, "rules")) {
    size_t n = json_object_array_length(v);
    x->rules = ox_xcalloc(3 * n + 1, sizeof *x->rules);
    for (size_t i = 0; i < n; i++) {
      json_object *e = json_object_array_get_idx(v, i);
      ox_json_path_push_idx(r, i);
      if (!json_object_is_type(e, json_type_object)) {
        ERR(r, "a rule must be an object ({\"phase\": ..., \"pass\": ..., \"rule\": ...}), not %s",
            ox_json_jtype_name(e));
      } else {
        for (int k = 0; k < 3; k++) x->rules[3 * i + (size_t)k] = opt_string(r, x->t, e, keys[k]);
      }
      ox_json_path_pop(r);
    }
    x->n_rules = (uint32_t)n;
  }
  ox_json_path_pop(r);
}

/* The "metas" array of a version 3 trace (parsed already). */
static void read_meta_table(TR *x, json_object *v) {
  Rd *r = x->r;
  ox_json_path_push_key(r, "metas");
  if (ox_json_expect_type(r, v, json_type_array, "metas")) {
    size_t n = json_object_array_length(v);
    x->metas = ox_xcalloc(n + 1, sizeof *x->metas);
    x->meta_ok = ox_xcalloc(n + 1, sizeof *x->meta_ok);
    for (size_t i = 0; i < n; i++) {
      ox_json_path_push_idx(r, i);
      /* as in version 2, a meta that does not read (reported by ox_json_read_meta) is no meta */
      x->meta_ok[i] = ox_json_read_meta(r, x->t->pool, json_object_array_get_idx(v, i), &x->metas[i]);
      ox_json_path_pop(r);
    }
    x->n_metas = (uint32_t)n;
  }
  ox_json_path_pop(r);
}

int ox_trace_read_json(const char *text, size_t len, const char *file, OxTrace **out, OxDiagList *diags) {
  *out = NULL;
  if (ox_gzip_is(text, len)) { /* T.json.gz: read what it holds (line numbers are of that text) */
    char err[256];
    size_t n = 0;
    char *plain = ox_gzip_decompress(text, len, (size_t)INT_MAX, &n, err, sizeof err);
    if (!plain) {
      ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "%s", err);
      return -1;
    }
    if (ox_gzip_is(plain, n)) { /* gzip in gzip: not a trace */
      free(plain);
      ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "gzip: the stream holds another gzip stream, not a trace");
      return -1;
    }
    int rc = ox_trace_read_json(plain, n, file, out, diags);
    free(plain);
    return rc;
  }
  Rd *r = calloc(1, sizeof *r);
  if (!r) return -1;
  r->text = text;
  r->len = len;
  r->d = diags;
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) r->start = 3;
  if (len > (size_t)INT_MAX) {
    ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "JSON input of %zu bytes is larger than the reader's 2 GiB limit",
                len);
    free(r);
    return -1;
  }
  size_t errors_before = diags->n_errors;
  Stream st = {r, text, len, json_tokener_new_ex(254), NULL, 0};
  OxTrace *t = NULL;
  Member mem[MAX_MEMBERS];
  uint32_t n_mem = 0;
  size_t steps_at = SIZE_MAX; /* offset of the steps array's '[' */
  size_t names_at = SIZE_MAX, names_end = 0; /* version 3: of the names array's, and its end */
  TR x = {.r = r, .expand_left = len};
  FastStep fs = {0};
  OxJsonLex lx; /* the tables' */
  bool fast = ox_json_fast_enabled();
  memset(&lx, 0, sizeof lx);
  if (!st.tok) {
    ox_diag_add(diags, OX_SEV_ERROR, 0, 0, NULL, "out of memory");
    free(r);
    return -1;
  }
  json_tokener_set_flags(st.tok, JSON_TOKENER_STRICT);

  /* pass 1: the members of the top-level object; "steps" is only located */
  size_t i = ox_json_skip_ws(text, len, r->start);
  if (i >= len || text[i] != '{') {
    stream_syntax(&st, i, "%s", i >= len ? "empty input: expected an Optimus trace (a JSON object)"
                                         : "not an Optimus trace (expected a JSON object)");
    goto out;
  }
  i = ox_json_skip_ws(text, len, i + 1);
  if (i < len && text[i] == '}') i = ox_json_skip_ws(text, len, i + 1);
  else
    for (;;) {
      if (i >= len || text[i] != '"') {
        stream_syntax(&st, i, "JSON syntax error: %s", i >= len ? "unexpected end of input" : "expected a member name");
        goto out;
      }
      size_t ke = ox_json_skip_string(text, len, i);
      json_object *key = stream_parse(&st, i, ke);
      if (!key) goto out;
      char kbuf[32];
      snprintf(kbuf, sizeof kbuf, "%s", json_object_get_string(key));
      bool long_key = strlen(json_object_get_string(key)) >= sizeof kbuf;
      json_object_put(key);
      i = ox_json_skip_ws(text, len, ke);
      if (i >= len || text[i] != ':') {
        stream_syntax(&st, i, "JSON syntax error: %s", "expected ':' after a member name");
        goto out;
      }
      i = ox_json_skip_ws(text, len, i + 1);
      size_t ve = stream_value_end(&st, i);
      if (!ve) goto out;
      if (!long_key && strcmp(kbuf, "steps") == 0) {
        steps_at = i; /* the last one wins, as in json-c */
      } else if (!long_key && strcmp(kbuf, "names") == 0) {
        names_at = i;
        names_end = ve;
      } else if (!long_key) {
        /* the tables are read later, from the text when they are clean (fast_meta_table ...) */
        bool table = fast && (strcmp(kbuf, "metas") == 0 || strcmp(kbuf, "targets") == 0) &&
                     lex_takes(&lx, text, i, ve);
        json_object *v = table ? NULL : stream_parse(&st, i, ve);
        if (!v && !table) goto out;
        uint32_t k = 0;
        bool keep = true;
        while (k < n_mem && strcmp(mem[k].key, kbuf) != 0) k++;
        if (k < n_mem) {
          json_object_put(mem[k].v); /* duplicate key: the last one wins */
        } else if (n_mem < MAX_MEMBERS) {
          n_mem++;
        } else {
          json_object_put(v); /* an unknown extra member: ignored */
          keep = false;
        }
        if (keep) {
          snprintf(mem[k].key, sizeof mem[k].key, "%s", kbuf);
          mem[k].v = v;
          mem[k].at = i;
          mem[k].end = ve;
        }
      }
      i = ox_json_skip_ws(text, len, ve);
      if (i < len && text[i] == ',') {
        i = ox_json_skip_ws(text, len, i + 1);
        continue;
      }
      if (i < len && text[i] == '}') {
        i = ox_json_skip_ws(text, len, i + 1);
        break;
      }
      stream_syntax(&st, i, "JSON syntax error: %s", i >= len ? "unexpected end of input" : "expected ',' or '}'");
      goto out;
    }
  if (i < len) {
    stream_syntax(&st, i, "JSON syntax error: %s", "unexpected text after the document");
    goto out;
  }

  /* the header, checked before any step is read */
  json_object *root = json_object_new_object();
  for (uint32_t k = 0; k < n_mem; k++)
    if (mem[k].v) json_object_object_add(root, mem[k].key, json_object_get(mem[k].v));
  t = ox_trace_new();
  json_object *v;
  bool header_ok = false;
  if (!json_object_object_get_ex(root, "format", &v) || !json_object_is_type(v, json_type_string) ||
      strcmp(json_object_get_string(v), "optimus-trace") != 0) {
    ERR(r, "not an Optimus trace (expected \"format\": \"optimus-trace\")");
  } else if (!json_object_object_get_ex(root, "version", &v) || !json_object_is_type(v, json_type_int) ||
             json_object_get_int64(v) < 1 || json_object_get_int64(v) > OX_TRACE_VERSION) {
    ox_json_path_push_key(r, "version");
    if (v && json_object_is_type(v, json_type_int))
      ERR(r, "unsupported trace version %lld (this reader knows versions 1 to %d)", (long long)json_object_get_int64(v),
          OX_TRACE_VERSION);
    else
      ERR(r, "unsupported trace version (this reader knows versions 1 to %d)", OX_TRACE_VERSION);
    ox_json_path_pop(r);
  } else {
    header_ok = true;
    x.version = (int)json_object_get_int64(v);
  }
  if (header_ok) {
    if (json_object_object_get_ex(root, "input", &v) && json_object_is_type(v, json_type_object)) {
      ox_json_path_push_key(r, "input");
      t->input_file = opt_string(r, t, v, "file");
      t->input_hash = opt_string(r, t, v, "hash");
      if (t->input_hash && !t->input_hash[0]) t->input_hash = NULL;
      ox_json_path_pop(r);
    }
    if (!t->input_hash) {
      ox_json_path_push_key(r, "input");
      ox_json_report(r, OX_SEV_WARNING,
                     "no input hash: the trace cannot be checked against the graph it is used with "
                     "(replay refuses it)");
      ox_json_path_pop(r);
    }
    if (json_object_object_get_ex(root, "config", &v) && json_object_is_type(v, json_type_object))
      t->config = ox_trace_intern(t, json_object_to_json_string_ext(v, JSON_C_TO_STRING_SPACED));
    else
      t->config = opt_string(r, t, root, "config");
    t->checks = opt_string(r, t, root, "checks");
    t->seconds = opt_num(root, "seconds");
    if (json_object_object_get_ex(root, "cost", &v)) read_cost(r, v, &t->cost);
    if (json_object_object_get_ex(root, "counters", &v) && json_object_is_type(v, json_type_object)) {
      uint32_t n = 0;
      json_object_object_foreach(v, ck, cv) {
        (void)ck;
        (void)cv;
        n++;
      }
      t->counter_names = ox_graph_alloc(t->pool, (n + 1) * sizeof(char *));
      t->counter_values = ox_graph_alloc(t->pool, (n + 1) * sizeof(int64_t));
      json_object_object_foreach(v, ck2, cv2) {
        t->counter_names[t->n_counters] = ox_trace_intern(t, ck2);
        t->counter_values[t->n_counters++] = json_object_get_int64(cv2);
      }
    }
    if (json_object_object_get_ex(root, "passes", &v)) read_pass_stats(r, t, v);
    if (steps_at == SIZE_MAX) ERR(r, "no \"steps\" key");
    /* room for the steps the summary announces (a step takes 12 bytes at least: a summary
     * that says more is not believed) */
    json_object *n_steps;
    if (json_object_object_get_ex(root, "summary", &v) && json_object_object_get_ex(v, "steps", &n_steps) &&
        json_object_is_type(n_steps, json_type_int) && json_object_get_int64(n_steps) > 0 &&
        json_object_get_int64(n_steps) <= (int64_t)(len / 12))
      ox_trace_reserve_steps(t, (uint32_t)json_object_get_int64(n_steps));
    x.t = t;
    if (x.version >= 3) {
      /* a table the fast read does not take is parsed by json-c (which takes what the tokenizer
       * took in pass 1) and read as before, errors and all */
      Member *tm = member(mem, n_mem, "metas");
      if (tm && !tm->v && !fast_meta_table(&x, &lx, text, tm->at, tm->end))
        tm->v = stream_parse(&st, tm->at, tm->end);
      if (tm && tm->v) read_meta_table(&x, tm->v);
      tm = member(mem, n_mem, "targets");
      if (tm && !tm->v && !fast_target_table(&x, &lx, text, tm->at, tm->end))
        tm->v = stream_parse(&st, tm->at, tm->end);
      if (tm && tm->v) read_target_table(&x, tm->v);
      tm = x.version >= 4 ? member(mem, n_mem, "strings") : NULL;
      if (tm && tm->v) read_string_table(&x, tm->v);
      tm = x.version >= 5 ? member(mem, n_mem, "rules") : NULL;
      if (tm && tm->v) read_rule_table(&x, tm->v);
      if (names_at == SIZE_MAX) ERR(r, "no \"names\" key (a version 3 trace lists its node names)");
    }
  }
  json_object_put(root);
  if (!header_ok || steps_at == SIZE_MAX) goto out;
  if (x.version >= 3 && names_at != SIZE_MAX) {
    /* room in the pool for about as many names as the table has strings (a 100k-node run's
     * 171k names: the string table and the name map of the placeholders grown once, not ~8 times) */
    size_t quotes = 0;
    for (const char *p = text + names_at, *e = text + names_end; (p = memchr(p, '"', (size_t)(e - p))) != NULL; p++)
      quotes++;
    ox_strtab_reserve(t->pool->strings, ox_strtab_count(t->pool->strings) + quotes / 2);
    ox_graph_reserve_names(t->pool, quotes / 2);
  }
  if (x.version >= 3 && (names_at == SIZE_MAX || !read_name_table(&st, &x, names_at))) goto out;

  /* pass 2: the steps, one at a time */
  ox_json_path_push_key(r, "steps");
  i = steps_at;
  if (text[i] != '[') {
    ERR(r, "expected an array, got %s", text[i] == '{' ? "an object" : text[i] == '"' ? "a string" : "a scalar");
  } else {
    i = ox_json_skip_ws(text, len, i + 1);
    size_t idx = 0;
    size_t line_at = 0; /* lines counted up to here, once over the whole text */
    uint32_t line = 1;
    if (x.version >= 3 && fast) {
      static const char *const no_names[1] = {NULL}; /* not NULL: no {"node": "name"} either */
      fs.fj = ox_json_fast_new(t->pool, x.n_names ? x.names : no_names, x.n_names);
      ox_json_fast_node_lists(fs.fj, x.version >= 4);
      if (x.version >= 5) ox_json_fast_node_ranges(fs.fj, &x.expand_left);
      fs.x = ox_json_fast_lex(fs.fj);
    }
    if (i < len && text[i] == ']') i++;
    else
      while (r->errors < MAX_ERRORS) {
        size_t e = 0;
        json_object *o = NULL;
        uint32_t before = t->n_steps;
        if (!fs.fj || !fast_step(&x, &fs, text, len, i, &e)) { /* json-c reads it, and says what is wrong */
          e = stream_value_end(&st, i);
          if (!e) break;
          o = stream_parse(&st, i, e);
          if (!o) break;
        }
        while (line_at < i) {
          const char *nl = memchr(text + line_at, '\n', i - line_at);
          if (!nl) {
            line_at = i;
            break;
          }
          line++;
          line_at = (size_t)(nl - text) + 1;
        }
        ox_json_path_push_idx(r, idx++);
        if (o) read_step(&x, o);
        if (t->n_steps > before) {
          OxStep *s = &t->steps[t->n_steps - 1];
          s->src_line = line;
          if (memchr(text + i, '\n', e - i)) /* version 1 and 2: an edit a line */
            edit_lines(text, i, e, line, s);
          else /* a step on one line (version 3): its edits are on it */
            for (uint32_t k = 0; k < s->n_edits; k++) s->edits[k].src_line = line;
        }
        ox_json_path_pop(r);
        if (o) json_object_put(o);
        i = ox_json_skip_ws(text, len, e);
        if (i < len && text[i] == ',') {
          i = ox_json_skip_ws(text, len, i + 1);
          continue;
        }
        if (i < len && text[i] == ']') break;
        stream_syntax(&st, i, "JSON syntax error: %s", i >= len ? "unexpected end of input" : "expected ',' or ']'");
        break;
      }
  }
  ox_json_path_pop(r);
out:
  if (fs.steps) __atomic_add_fetch(&fast_trace_steps, fs.steps, __ATOMIC_RELAXED);
  ox_json_fast_free(fs.fj);
  ox_json_lex_free(&lx);
  free(fs.refs);
  free(fs.edits.e);
  free(x.names);
  free(x.metas);
  free(x.meta_ok);
  free(x.target_ops);
  free(x.target_names);
  free(x.strings);
  free(x.rules);
  for (uint32_t k = 0; k < n_mem; k++) json_object_put(mem[k].v);
  json_tokener_free(st.tok);
  free(st.tmp);
  free(r);
  if (diags->n_errors > errors_before) {
    ox_trace_free(t);
    return -1;
  }
  *out = t;
  return 0;
}
