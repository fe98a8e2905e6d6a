/* ox_mem.c - arena allocator, string interning and the name map.
 *
 * The arena hands out zeroed, 16-byte aligned memory from chained blocks; a mark/release
 * pair lets a speculative rewrite drop everything it allocated. Blocks grow geometrically
 * up to 1 MiB; a request larger than a block gets its own block.
 *
 * OxStrTab interns strings so names, targets and devices compare by pointer and a
 * 100k-node graph stores each distinct target once. OxNameMap maps live node names to ids.
 * Both are open-addressing hash tables (FNV-1a, power-of-two capacity, load <= 1/2), so
 * lookups stay O(1) on any input.
 */
#include "ox_mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct OxArenaBlock {
  OxArenaBlock *prev;
  size_t cap;
  _Alignas(16) unsigned char data[];
};

static void *ox_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "optimus: out of memory (%zu bytes)\n", n);
    abort();
  }
  return p;
}

void *ox_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fprintf(stderr, "optimus: out of memory (%zu bytes)\n", n);
    abort();
  }
  return q;
}

void *ox_xcalloc(size_t count, size_t size) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p) {
    fprintf(stderr, "optimus: out of memory\n");
    abort();
  }
  return p;
}

char *ox_xstrdup(const char *s) {
  size_t n = strlen(s);
  char *r = ox_xmalloc(n + 1);
  memcpy(r, s, n + 1);
  return r;
}

void *ox_arena_alloc(OxArena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  if (!a->head || a->used + size > a->head->cap) {
    size_t cap = a->head ? a->head->cap * 2 : 4096;
    if (cap > (1u << 20)) cap = 1u << 20;
    if (cap < size) cap = size;
    OxArenaBlock *b = ox_xmalloc(sizeof *b + cap);
    b->prev = a->head;
    b->cap = cap;
    a->head = b;
    a->used = 0;
    a->total += cap;
  }
  void *p = a->head->data + a->used;
  a->used += size;
  memset(p, 0, size);
  return p;
}

char *ox_arena_strndup(OxArena *a, const char *s, size_t n) {
  char *r = ox_arena_alloc(a, n + 1);
  memcpy(r, s, n);
  r[n] = 0;
  return r;
}

OxArenaMark ox_arena_mark(const OxArena *a) {
  OxArenaMark m = {a->head, a->used};
  return m;
}

void ox_arena_release(OxArena *a, OxArenaMark m) {
  while (a->head && a->head != m.block) {
    OxArenaBlock *p = a->head->prev;
    a->total -= a->head->cap;
    free(a->head);
    a->head = p;
  }
  a->used = a->head ? m.used : 0;
}

void ox_arena_free(OxArena *a) {
  OxArenaMark none = {NULL, 0};
  ox_arena_release(a, none);
  a->total = 0;
}

/* ------------------------------------------------------------------ hashing */

uint64_t ox_hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* ------------------------------------------------------------------ string table */

struct OxStrTab {
  const char **slots; /* interned strings (arena) or NULL */
  uint32_t *lens;
  size_t cap, count;
  OxArena *arena;     /* borrowed from the owning graph */
};

OxStrTab *ox_strtab_new(OxArena *arena) {
  OxStrTab *t = ox_xcalloc(1, sizeof *t);
  t->cap = 256;
  t->slots = ox_xcalloc(t->cap, sizeof *t->slots);
  t->lens = ox_xcalloc(t->cap, sizeof *t->lens);
  t->arena = arena;
  return t;
}

void ox_strtab_free(OxStrTab *t) {
  if (!t) return;
  free(t->slots);
  free(t->lens);
  free(t);
}

static void strtab_grow(OxStrTab *t) {
  size_t ncap = t->cap * 2;
  const char **ns = ox_xcalloc(ncap, sizeof *ns);
  uint32_t *nl = ox_xcalloc(ncap, sizeof *nl);
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->slots[i]) continue;
    size_t j = ox_hash_bytes(t->slots[i], t->lens[i]) & (ncap - 1);
    while (ns[j]) j = (j + 1) & (ncap - 1);
    ns[j] = t->slots[i];
    nl[j] = t->lens[i];
  }
  free(t->slots);
  free(t->lens);
  t->slots = ns;
  t->lens = nl;
  t->cap = ncap;
}

const char *ox_strtab_intern(OxStrTab *t, const char *s, size_t n) {
  if (n > UINT32_MAX) n = UINT32_MAX;
  if ((t->count + 1) * 2 > t->cap) strtab_grow(t);
  size_t j = ox_hash_bytes(s, n) & (t->cap - 1);
  while (t->slots[j]) {
    if (t->lens[j] == n && memcmp(t->slots[j], s, n) == 0) return t->slots[j];
    j = (j + 1) & (t->cap - 1);
  }
  const char *r = ox_arena_strndup(t->arena, s, n);
  t->slots[j] = r;
  t->lens[j] = (uint32_t)n;
  t->count++;
  return r;
}

size_t ox_strtab_count(const OxStrTab *t) { return t->count; }

const char *ox_strtab_lookup(const OxStrTab *t, const char *s, size_t n) {
  size_t j = ox_hash_bytes(s, n) & (t->cap - 1);
  while (t->slots[j]) {
    if (t->lens[j] == n && memcmp(t->slots[j], s, n) == 0) return t->slots[j];
    j = (j + 1) & (t->cap - 1);
  }
  return NULL;
}

/* ------------------------------------------------------------------ name map */

/* Keys are interned pointers, so equality is pointer equality and hashing the pointer
 * is enough. Deletion uses backward-shift so there are no tombstones. */
struct OxNameMap {
  const char **keys;
  uint32_t *vals;
  size_t cap, count;
};

static size_t ptr_hash(const char *p) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x;
}

OxNameMap *ox_namemap_new(void) {
  OxNameMap *m = ox_xcalloc(1, sizeof *m);
  m->cap = 64;
  m->keys = ox_xcalloc(m->cap, sizeof *m->keys);
  m->vals = ox_xcalloc(m->cap, sizeof *m->vals);
  return m;
}

void ox_namemap_free(OxNameMap *m) {
  if (!m) return;
  free(m->keys);
  free(m->vals);
  free(m);
}

static void namemap_grow(OxNameMap *m) {
  size_t ncap = m->cap * 2;
  const char **nk = ox_xcalloc(ncap, sizeof *nk);
  uint32_t *nv = ox_xcalloc(ncap, sizeof *nv);
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = ptr_hash(m->keys[i]) & (ncap - 1);
    while (nk[j]) j = (j + 1) & (ncap - 1);
    nk[j] = m->keys[i];
    nv[j] = m->vals[i];
  }
  free(m->keys);
  free(m->vals);
  m->keys = nk;
  m->vals = nv;
  m->cap = ncap;
}

uint32_t ox_namemap_get(const OxNameMap *m, const char *interned) {
  if (!interned) return 0;
  size_t j = ptr_hash(interned) & (m->cap - 1);
  while (m->keys[j]) {
    if (m->keys[j] == interned) return m->vals[j];
    j = (j + 1) & (m->cap - 1);
  }
  return 0;
}

void ox_namemap_set(OxNameMap *m, const char *interned, uint32_t val) {
  if ((m->count + 1) * 2 > m->cap) namemap_grow(m);
  size_t j = ptr_hash(interned) & (m->cap - 1);
  while (m->keys[j]) {
    if (m->keys[j] == interned) {
      m->vals[j] = val;
      return;
    }
    j = (j + 1) & (m->cap - 1);
  }
  m->keys[j] = interned;
  m->vals[j] = val;
  m->count++;
}

void ox_namemap_del(OxNameMap *m, const char *interned) {
  size_t mask = m->cap - 1;
  size_t j = ptr_hash(interned) & mask;
  while (m->keys[j] && m->keys[j] != interned) j = (j + 1) & mask;
  if (!m->keys[j]) return;
  m->keys[j] = NULL;
  m->count--;
  /* backward shift: re-place the entries of the cluster that follows */
  size_t k = (j + 1) & mask;
  while (m->keys[k]) {
    const char *key = m->keys[k];
    uint32_t val = m->vals[k];
    m->keys[k] = NULL;
    size_t h = ptr_hash(key) & mask;
    while (m->keys[h]) h = (h + 1) & mask;
    m->keys[h] = key;
    m->vals[h] = val;
    k = (k + 1) & mask;
  }
}

size_t ox_namemap_bytes(const OxNameMap *m) { return m->cap * (sizeof(char *) + sizeof(uint32_t)); }
size_t ox_strtab_bytes(const OxStrTab *t) { return t->cap * (sizeof(char *) + sizeof(uint32_t)); }
