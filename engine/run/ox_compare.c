/* ox_compare.c - two runs of one input compared record by record (ox_compare.h).
 *
 * Each trace is walked once with its own canonical-name map (both start from the same input,
 * so input nodes keep their names and created nodes are named after the step that made them).
 * Every record gets its alignment key (phase, pass, rule, canonical anchor) and its occurrence
 * number among records of that key; the two sorted lists are merged on (key, occurrence).
 */
#include "run/ox_compare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "run/ox_canon.h"

const char *ox_step_kind_text(const OxStep *s) {
  switch (s->kind) {
  case OX_STEP_APPLIED: return "applied";
  case OX_STEP_REJECTED: return "rejected";
  default: return "check failed";
  }
}

typedef struct Rec {
  char *key;     /* alignment key */
  char *outcome; /* what the record did, in canonical names */
  uint32_t occ;  /* occurrence of key in its trace */
  uint32_t seq;
} Rec;

static int cmp_rec(const void *x, const void *y) {
  const Rec *a = x, *b = y;
  int c = strcmp(a->key, b->key);
  if (c) return c;
  return (a->occ > b->occ) - (a->occ < b->occ);
}

static char *outcome_of(const OxCanonMap *m, const OxStep *s) {
  OxBuf b;
  ox_buf_init(&b);
  ox_buf_printf(&b, "%d", s->kind);
  if (s->kind == OX_STEP_APPLIED) {
    char *k = ox_canon_step_key(m, s, true);
    const char *matched = strchr(k, OX_CANON_MATCHED_SEP);
    ox_buf_printf(&b, " -%u +%u%s", s->n_removed, s->n_added, matched ? matched : "");
    free(k);
  } else {
    ox_buf_printf(&b, " %s", ox_reason_code_name((OxReasonCode)s->reason.code));
  }
  ox_buf_putc(&b, 0);
  return b.data;
}

static Rec *collect(const OxTrace *t) {
  Rec *r = ox_xcalloc(t->n_steps + 1, sizeof *r);
  OxCanonMap m = {0};
  for (uint32_t i = 0; i < t->n_steps; i++) {
    const OxStep *s = &t->steps[i];
    r[i].key = ox_canon_step_key(&m, s, false);
    r[i].outcome = outcome_of(&m, s);
    r[i].seq = i;
    ox_canon_after(&m, s);
  }
  ox_canon_free(&m);
  /* occurrence numbers: sorted by (key, seq) (occ holds seq for this sort), then numbered */
  for (uint32_t i = 0; i < t->n_steps; i++) r[i].occ = r[i].seq;
  qsort(r, t->n_steps, sizeof *r, cmp_rec);
  for (uint32_t i = 0; i < t->n_steps; i++) r[i].occ = i && strcmp(r[i].key, r[i - 1].key) == 0 ? r[i - 1].occ + 1 : 0;
  return r;
}

static void push(OxCompareResult *r, uint32_t *cap, OxCompareKind k, uint32_t a, uint32_t b) {
  if (r->n == *cap) {
    *cap = *cap ? *cap * 2 : 64;
    r->entries = ox_xrealloc(r->entries, *cap * sizeof *r->entries);
  }
  r->entries[r->n++] = (OxCompareEntry){(uint8_t)k, a, b};
}

static int cmp_entry(const void *x, const void *y) {
  const OxCompareEntry *a = x, *b = y;
  /* A's records (only-in-A and differing) by a_seq first, then only-in-B by b_seq */
  bool ab = a->kind == OX_COMPARE_ONLY_B, bb = b->kind == OX_COMPARE_ONLY_B;
  if (ab != bb) return ab ? 1 : -1;
  uint32_t u = ab ? a->b_seq : a->a_seq, v = bb ? b->b_seq : b->a_seq;
  return (u > v) - (u < v);
}

void ox_compare_traces(const OxTrace *a, const OxTrace *b, OxCompareResult *out) {
  memset(out, 0, sizeof *out);
  Rec *ra = collect(a), *rb = collect(b);
  out->a_to_b = ox_xcalloc(a->n_steps + 1, sizeof *out->a_to_b);
  out->b_to_a = ox_xcalloc(b->n_steps + 1, sizeof *out->b_to_a);
  for (uint32_t k = 0; k < a->n_steps; k++) out->a_to_b[k] = OX_COMPARE_NONE;
  for (uint32_t k = 0; k < b->n_steps; k++) out->b_to_a[k] = OX_COMPARE_NONE;
  uint32_t i = 0, j = 0, cap = 0;
  while (i < a->n_steps || j < b->n_steps) {
    int c = i == a->n_steps ? 1 : j == b->n_steps ? -1 : cmp_rec(&ra[i], &rb[j]);
    if (c < 0) {
      push(out, &cap, OX_COMPARE_ONLY_A, ra[i].seq, OX_COMPARE_NONE);
      out->n_only_a++;
      out->n_only_a_applied += a->steps[ra[i].seq].kind == OX_STEP_APPLIED;
      i++;
    } else if (c > 0) {
      push(out, &cap, OX_COMPARE_ONLY_B, OX_COMPARE_NONE, rb[j].seq);
      out->n_only_b++;
      out->n_only_b_applied += b->steps[rb[j].seq].kind == OX_STEP_APPLIED;
      j++;
    } else {
      out->a_to_b[ra[i].seq] = rb[j].seq;
      out->b_to_a[rb[j].seq] = ra[i].seq;
      if (strcmp(ra[i].outcome, rb[j].outcome) != 0) {
        push(out, &cap, OX_COMPARE_DIFFERS, ra[i].seq, rb[j].seq);
        out->n_differs++;
      } else {
        out->n_same++;
      }
      i++;
      j++;
    }
  }
  if (out->n) qsort(out->entries, out->n, sizeof *out->entries, cmp_entry);
  for (uint32_t k = 0; k < a->n_steps; k++) free(ra[k].key), free(ra[k].outcome);
  for (uint32_t k = 0; k < b->n_steps; k++) free(rb[k].key), free(rb[k].outcome);
  free(ra);
  free(rb);
}

void ox_compare_result_free(OxCompareResult *r) {
  if (!r) return;
  free(r->entries);
  free(r->a_to_b);
  free(r->b_to_a);
  memset(r, 0, sizeof *r);
}
