/* ox_canon.c - canonical node names across runs (ox_canon.h): a string map from a run's node
 * names to names that do not depend on creation order.
 */
#include "run/ox_canon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"

void ox_canon_free(OxCanonMap *m) {
  for (uint32_t i = 0; i < m->cap; i++) {
    free(m->keys[i]);
    free(m->vals[i]);
  }
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *r = ox_xrealloc(NULL, n);
  memcpy(r, s, n);
  return r;
}

static void canon_put(OxCanonMap *m, const char *k, const char *v);

static void canon_grow(OxCanonMap *m) {
  OxCanonMap old = *m;
  m->cap = old.cap ? old.cap * 2 : 256;
  m->count = 0;
  m->keys = ox_xcalloc(m->cap, sizeof *m->keys);
  m->vals = ox_xcalloc(m->cap, sizeof *m->vals);
  for (uint32_t i = 0; i < old.cap; i++)
    if (old.keys[i]) canon_put(m, old.keys[i], old.vals[i]);
  ox_canon_free(&old);
}

static void canon_put(OxCanonMap *m, const char *k, const char *v) {
  if (2 * (m->count + 1) > m->cap) canon_grow(m);
  uint32_t i = (uint32_t)(ox_hash_bytes(k, strlen(k)) & (m->cap - 1));
  while (m->keys[i] && strcmp(m->keys[i], k) != 0) i = (i + 1) & (m->cap - 1);
  if (!m->keys[i]) {
    m->keys[i] = xstrdup(k);
    m->count++;
  } else {
    free(m->vals[i]);
  }
  m->vals[i] = xstrdup(v);
}

const char *ox_canon_name(const OxCanonMap *m, const char *k) {
  if (!k) return "";
  if (!m->cap) return k;
  uint32_t i = (uint32_t)(ox_hash_bytes(k, strlen(k)) & (m->cap - 1));
  while (m->keys[i]) {
    if (strcmp(m->keys[i], k) == 0) return m->vals[i];
    i = (i + 1) & (m->cap - 1);
  }
  return k;
}

void ox_canon_copy(OxCanonMap *dst, const OxCanonMap *src) {
  memset(dst, 0, sizeof *dst);
  for (uint32_t i = 0; i < src->cap; i++)
    if (src->keys[i]) canon_put(dst, src->keys[i], src->vals[i]);
}

static const char *str_or(const char *s) { return s ? s : ""; }

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* pass, rule and canonical anchor; with `matched`, the sorted canonical matched names too */
char *ox_canon_step_key(const OxCanonMap *m, const OxStep *s, bool matched) {
  OxBuf b;
  ox_buf_init(&b);
  ox_buf_printf(&b, "%s%c%s%c%s%c%s", str_or(s->phase), OX_CANON_FIELD_SEP, str_or(s->pass), OX_CANON_FIELD_SEP,
                str_or(s->rule), OX_CANON_FIELD_SEP, ox_canon_name(m, s->anchor));
  if (matched && s->n_matched) {
    const char **v = ox_xrealloc(NULL, s->n_matched * sizeof *v);
    for (uint32_t i = 0; i < s->n_matched; i++) v[i] = ox_canon_name(m, s->matched[i]);
    qsort(v, s->n_matched, sizeof *v, cmp_str);
    for (uint32_t i = 0; i < s->n_matched; i++) ox_buf_printf(&b, "%c%s", OX_CANON_MATCHED_SEP, v[i]);
    free(v);
  }
  ox_buf_putc(&b, 0);
  return b.data;
}

/* After step s: the nodes it added get names derived from it. */
void ox_canon_after(OxCanonMap *m, const OxStep *s) {
  if (!s->applied_index || !s->n_added) return;
  char *key = ox_canon_step_key(m, s, true);
  unsigned long long h = (unsigned long long)ox_hash_bytes(key, strlen(key));
  free(key);
  char v[48];
  for (uint32_t k = 0; k < s->n_added; k++) {
    snprintf(v, sizeof v, "~%016llx#%u", h, k);
    canon_put(m, s->added[k], v);
  }
}

