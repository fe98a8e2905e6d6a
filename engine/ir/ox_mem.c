/* ox_mem.c - arena allocator, string interning and the name map.
 *
 * The arena hands out zeroed, 16-byte aligned memory from chained blocks; a mark/release
 * pair lets a speculative rewrite drop everything it allocated. Blocks grow geometrically
 * up to 1 MiB; a request larger than a block gets its own block.
 *
 * OxStrTab interns strings so names, targets and devices compare by pointer and a
 * 100k-node graph stores each distinct target once. OxNameMap maps live node names to ids.
 * Both are open-addressing hash tables with power-of-two capacity (the string table keeps each
 * slot's hash, load <= 3/4; the name map hashes pointers, load <= 1/2), so lookups stay O(1)
 * on any input, and both can be sized up front (reserve) by a loader that knows its input.
 */
#include "ir/ox_mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __linux__
#include <sys/mman.h>
#endif

/* ------------------------------------------------------------------ big growing arrays */

enum { BIG_BYTES = 2u << 20 };

static size_t page_round(size_t n) { return (n + 4095) & ~(size_t)4095; }

/* Huge-page hints: OPTIMUS_HUGE_PAGES=1 asks for them, =0 never; otherwise the cost of a fresh
 * 4 KiB page decides. Our VMs have met two kinds of host (docs/benchmarks.md): one where 4 KiB
 * pages fault in at ~2 us and a 2 MiB page the host has taken back costs 5-6 ms (100 MiB cold:
 * 47-56 ms in small pages, 217-246 ms in huge ones: off wins), and one where a small page costs
 * ~9-10 us (100 MiB: 260-277 ms small, 122-156 ms huge, 6 ms warm: on wins, optimize on flat
 * 100k 1.34x faster cold). Timing one huge page cannot tell them apart (the first few come from
 * a pool of recently freed ones); timing small pages does. On bare metal a small page costs well
 * under a microsecond, and the hints stay off as before. */
bool ox_mem_huge_decide(const char *env, double fault_ns) {
  if (env && (env[0] == '0' || env[0] == '1') && !env[1]) return env[0] == '1';
  return fault_ns > OX_MEM_HUGE_FAULT_NS;
}

double ox_mem_fault_ns(void) {
#ifdef __linux__
  enum { PAGES = 16 };
  const size_t page = 4096;
  double best = -1;
  for (int r = 0; r < 3; r++) { /* the least of three: a preemption only adds */
    volatile char *p = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < PAGES; i++) p[i * page] = 1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    munmap((void *)p, PAGES * page);
    double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / PAGES;
    if (best < 0 || ns < best) best = ns;
  }
  return best;
#else
  return -1;
#endif
}

static bool huge_wanted(void) {
  static _Atomic int wanted = -1; /* the debugger's threads may ask at once */
  int w = wanted;
  if (w < 0) {
    const char *e = getenv("OPTIMUS_HUGE_PAGES");
    bool forced = e && (e[0] == '0' || e[0] == '1') && !e[1];
    wanted = w = ox_mem_huge_decide(e, forced ? 0 : ox_mem_fault_ns());
  }
  return w;
}

bool ox_mem_huge_pages(void) { return huge_wanted(); }

void ox_mem_hint_huge(void *p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (!huge_wanted()) return;
  const uintptr_t huge = (uintptr_t)2 << 20;
  uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + bytes) & ~(huge - 1);
  if (p && hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* a refusal changes nothing */
#else
  (void)p;
  (void)bytes;
#endif
}

/* A mapping of page_round(bytes) that starts on a 2 MiB boundary (mapped with 2 MiB to spare,
 * the spare unmapped), so that huge pages can back all of it but the tail. */
static void *big_map(size_t bytes) {
  const size_t huge = (size_t)2 << 20, len = page_round(bytes);
  char *q = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (q == MAP_FAILED) {
    fprintf(stderr, "optimus: out of memory (%zu bytes)\n", bytes);
    abort();
  }
  size_t head = (huge - ((uintptr_t)q & (huge - 1))) & (huge - 1);
  if (head) munmap(q, head);
  munmap(q + head + len, huge - head);
#ifdef MADV_HUGEPAGE
  if (huge_wanted()) madvise(q + head, len, MADV_HUGEPAGE); /* the whole mapping: one VMA, which mremap needs */
#endif
  return q + head;
}

void *ox_big_realloc(void *p, size_t old_bytes, size_t new_bytes) {
#ifdef __linux__
  bool was_big = p && old_bytes >= BIG_BYTES, big = new_bytes >= BIG_BYTES;
  if (was_big && big) {
    void *q = mremap(p, page_round(old_bytes), page_round(new_bytes), MREMAP_MAYMOVE);
    if (q == MAP_FAILED) {
      fprintf(stderr, "optimus: out of memory (%zu bytes)\n", new_bytes);
      abort();
    }
    return q;
  }
  if (big) {
    void *q = big_map(new_bytes);
    if (p) {
      memcpy(q, p, old_bytes < new_bytes ? old_bytes : new_bytes);
      free(p);
    }
    return q;
  }
  if (was_big) {
    void *q = ox_xrealloc(NULL, new_bytes ? new_bytes : 1);
    memcpy(q, p, new_bytes);
    munmap(p, page_round(old_bytes));
    return q;
  }
#else
  (void)old_bytes;
#endif
  return ox_xrealloc(p, new_bytes ? new_bytes : 1);
}

void *ox_big_zalloc(size_t bytes) {
#ifdef __linux__
  if (bytes >= BIG_BYTES) return big_map(bytes);
#endif
  return ox_xcalloc(1, bytes);
}

void ox_big_free(void *p, size_t bytes) {
  if (!p) return;
#ifdef __linux__
  if (bytes >= BIG_BYTES) {
    munmap(p, page_round(bytes));
    return;
  }
#else
  (void)bytes;
#endif
  free(p);
}

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

void ox_mem_tune_for_batch(void) {
#ifdef __GLIBC__
  mallopt(M_TRIM_THRESHOLD, 1 << 30);   /* keep up to 1 GiB of freed heap mapped */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  /* blocks under 32 MiB come from the (reused) heap */
  mallopt(M_TOP_PAD, 16 << 20);         /* grow the heap in 16 MiB steps */
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  /* Grow the heap by 256 MiB now (a large top pad for one small allocation: nothing is
   * written, not even under MALLOC_PERTURB_), ask for huge pages behind the new top of the heap
   * (only if huge_wanted), then go back to 16 MiB steps: one brk instead of one per 16 MiB.
   * Untouched parts cost address space only. */
  mallopt(M_TOP_PAD, 256 << 20);
  void *probe = malloc(64);
  void *end = sbrk(0);
  /* the probe sits at the top of the heap, under the new break (not so under a sanitizer's
   * allocator, whose memory is elsewhere: then nothing is asked) */
  if (probe && end != (void *)-1 && (uintptr_t)end > (uintptr_t)probe &&
      (uintptr_t)end - (uintptr_t)probe <= ((size_t)257 << 20))
    ox_mem_hint_huge(probe, (uintptr_t)end - (uintptr_t)probe);
  free(probe);
  mallopt(M_TOP_PAD, 16 << 20);
#endif
#endif
}

static void *arena_alloc_rounded(OxArena *a, size_t size, size_t round);

void *ox_arena_alloc(OxArena *a, size_t size) { return arena_alloc_rounded(a, size, 16); }

/* size rounded up to round (16, or 8 for the strings of a table's own arena) */
static void *arena_alloc_rounded(OxArena *a, size_t size, size_t round) {
  size = (size + round - 1) & ~(round - 1);
  if (!a->head || a->used + size > a->head->cap) {
    /* blocks double up to 1 MiB, and up to 4 MiB once the arena holds 8 MiB (a big graph:
     * such blocks hold whole 2 MiB pages, see ox_mem_hint_huge) */
    size_t cap = a->head ? a->head->cap * 2 : 4096;
    size_t most = a->total >= (8u << 20) ? 4u << 20 : 1u << 20;
    if (cap > most) cap = most;
    if (cap < size) cap = size;
    if (a->spare && a->spare->cap >= size) { /* a block kept by ox_arena_rewind */
      OxArenaBlock *b = a->spare;
      a->spare = b->prev;
      b->prev = a->head;
      a->head = b;
      a->used = 0;
      void *p = b->data;
      a->used = size;
      memset(p, 0, size);
      return p;
    }
    OxArenaBlock *b = ox_xmalloc(sizeof *b + cap);
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    /* a big block is filled front to back: fault its pages in with one call rather than one
     * trap per 4 KiB (measured: 70-100 ms less kernel time at 100k nodes; kernels before 5.14
     * refuse the hint, which changes nothing) */
    if (cap >= (256u << 10)) {
      ox_mem_hint_huge(b, sizeof *b + cap);
      uintptr_t lo = ((uintptr_t)b + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)b + sizeof *b + cap) & ~(uintptr_t)4095;
      if (hi > lo) madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
    }
#endif
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

void ox_arena_reset(OxArena *a) {
  if (!a->head) return;
  while (a->head->prev) {
    OxArenaBlock *p = a->head->prev;
    a->head->prev = p->prev;
    a->total -= p->cap;
    free(p);
  }
  a->used = 0;
}

void ox_arena_rewind(OxArena *a) {
  if (!a->head) return;
  /* the chain behind head goes onto the spare list (newest first), head stays current */
  while (a->head->prev) {
    OxArenaBlock *p = a->head->prev;
    a->head->prev = p->prev;
    p->prev = a->spare;
    a->spare = p;
  }
  a->used = 0;
}

void ox_arena_free(OxArena *a) {
  OxArenaMark none = {NULL, 0};
  ox_arena_release(a, none);
  while (a->spare) {
    OxArenaBlock *p = a->spare->prev;
    free(a->spare);
    a->spare = p;
  }
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

/* The string table's hash: 8 bytes at a time (names are 5-30 bytes: 1-4 rounds instead of
 * 5-30), then a final avalanche. Only used inside the table, never persisted. */
static uint32_t str_hash(const char *s, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    s += 8;
    n -= 8;
  }
  uint64_t w = 0;
  memcpy(&w, s, n);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 32;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 29;
  return (uint32_t)h;
}

/* ------------------------------------------------------------------ string table */

/* One 16-byte slot per entry: the string, its length and its hash side by side, so a probe
 * costs one cache line and compares the hash before touching the string; growing never
 * re-hashes. Load factor <= 3/4. */
typedef struct StrSlot {
  const char *s; /* interned string (arena) or NULL */
  uint32_t len, hash;
} StrSlot;

/* A large table's probes miss the caches (the slots of 100k names are 4 MB), while a loader
 * interns mostly what it saw a few lines earlier (a reference to the node just defined, the same
 * target, dtype or device again): a small direct-mapped copy of recently interned entries,
 * indexed by hash, answers those from L1/L2. Only tables past FRONT_FROM entries have one. */
enum { FRONT_SLOTS = 1024, FRONT_FROM = 4096 };

struct OxStrTab {
  StrSlot *slots;
  StrSlot *front;     /* FRONT_SLOTS recent entries, or NULL (small table) */
  size_t cap, count;
  OxArena *arena;     /* the strings: own, or borrowed from the caller of ox_strtab_new */
  OxArena own;
  uint64_t serial;    /* unique per table for the process's lifetime */
  uint32_t tag;       /* in every string's head (ox_strtab_id) */
  uint32_t refs;      /* ox_strtab_ref / ox_strtab_free */
};

static uint64_t strtab_serials;

OxStrTab *ox_strtab_new(OxArena *arena) {
  OxStrTab *t = ox_xcalloc(1, sizeof *t);
  t->serial = __atomic_add_fetch(&strtab_serials, 1, __ATOMIC_RELAXED);
  t->tag = (uint32_t)t->serial * 0x9E3779B1u | 1u; /* nonzero; a pointer's tag tells its table */
  t->cap = 256;
  t->slots = ox_big_zalloc(t->cap * sizeof *t->slots);
  t->arena = arena ? arena : &t->own;
  t->refs = 1;
  return t;
}

OxStrTab *ox_strtab_ref(OxStrTab *t) {
  __atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
  return t;
}

void ox_strtab_free(OxStrTab *t) {
  if (!t || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  ox_big_free(t->slots, t->cap * sizeof *t->slots);
  free(t->front);
  ox_arena_free(&t->own);
  free(t);
}

static void strtab_resize(OxStrTab *t, size_t ncap) {
  StrSlot *ns = ox_big_zalloc(ncap * sizeof *ns);
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->slots[i].s) continue;
    size_t j = t->slots[i].hash & (ncap - 1);
    while (ns[j].s) j = (j + 1) & (ncap - 1);
    ns[j] = t->slots[i];
  }
  ox_big_free(t->slots, t->cap * sizeof *t->slots);
  t->slots = ns;
  t->cap = ncap;
}

static bool strtab_full(size_t count, size_t cap) { return (count + 1) * 4 > cap * 3; }

void ox_strtab_reserve(OxStrTab *t, size_t n) {
  size_t cap = t->cap;
  while (strtab_full(n, cap)) cap *= 2;
  if (cap != t->cap) strtab_resize(t, cap);
}

const char *ox_strtab_intern(OxStrTab *t, const char *s, size_t n) {
  if (n > UINT32_MAX) n = UINT32_MAX;
  if (strtab_full(t->count, t->cap)) strtab_resize(t, t->cap * 2);
  uint32_t h = str_hash(s, n);
  StrSlot *f = NULL;
  if (t->front) {
    f = &t->front[h & (FRONT_SLOTS - 1)];
    if (f->s && f->hash == h && f->len == n && memcmp(f->s, s, n) == 0) return f->s;
  } else if (t->count >= FRONT_FROM) {
    t->front = ox_xcalloc(FRONT_SLOTS, sizeof *t->front);
    f = &t->front[h & (FRONT_SLOTS - 1)];
  }
  size_t j = h & (t->cap - 1);
  for (StrSlot *x = &t->slots[j]; x->s; x = &t->slots[j = (j + 1) & (t->cap - 1)])
    if (x->hash == h && x->len == n && memcmp(x->s, s, n) == 0) {
      if (f) *f = *x;
      return x->s;
    }
  /* the string's id and the table's tag in the 8 bytes before it (ox_strtab_id); a table's own
   * arena holds only strings, so they are packed 8-byte aligned */
  char *blk = arena_alloc_rounded(t->arena, sizeof(OxStrHead) + n + 1, t->arena == &t->own ? 8 : 16);
  OxStrHead *head = (OxStrHead *)blk;
  head->id = (uint32_t)(t->count + 1);
  head->tag = t->tag;
  char *r = blk + sizeof(OxStrHead);
  memcpy(r, s, n);
  r[n] = 0;
  t->slots[j] = (StrSlot){r, (uint32_t)n, h};
  if (f) *f = t->slots[j];
  t->count++;
  return r;
}

void ox_strtab_prefetch(const OxStrTab *t, const char *s, size_t n) {
  if (n > UINT32_MAX) return;
  __builtin_prefetch(&t->slots[str_hash(s, n) & (t->cap - 1)], 1);
}

size_t ox_strtab_count(const OxStrTab *t) { return t->count; }
uint32_t ox_strtab_tag(const OxStrTab *t) { return t->tag; }

uint64_t ox_strtab_serial(const OxStrTab *t) { return t ? t->serial : 0; }

const char *ox_strtab_lookup(const OxStrTab *t, const char *s, size_t n) {
  if (n > UINT32_MAX) return NULL;
  uint32_t h = str_hash(s, n);
  size_t j = h & (t->cap - 1);
  for (const StrSlot *x = &t->slots[j]; x->s; x = &t->slots[j = (j + 1) & (t->cap - 1)])
    if (x->hash == h && x->len == n && memcmp(x->s, s, n) == 0) return x->s;
  return NULL;
}

/* ------------------------------------------------------------------ name map */

/* Keys are interned pointers, so equality is pointer equality and hashing the pointer
 * is enough. Deletion uses backward-shift so there are no tombstones. A key and its value share
 * a slot: a lookup in a large map costs one cache miss, not two. */
typedef struct NameSlot {
  const char *key;
  uint32_t val;
} NameSlot;

struct OxNameMap {
  NameSlot *slots;
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
  m->slots = ox_big_zalloc(m->cap * sizeof *m->slots);
  return m;
}

void ox_namemap_free(OxNameMap *m) {
  if (!m) return;
  ox_big_free(m->slots, m->cap * sizeof *m->slots);
  free(m);
}

/* Rehashes into ncap slots (a power of two, more than twice the count). */
static void namemap_resize(OxNameMap *m, size_t ncap) {
  NameSlot *ns = ox_big_zalloc(ncap * sizeof *ns);
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].key) continue;
    size_t j = ptr_hash(m->slots[i].key) & (ncap - 1);
    while (ns[j].key) j = (j + 1) & (ncap - 1);
    ns[j] = m->slots[i];
  }
  ox_big_free(m->slots, m->cap * sizeof *m->slots);
  m->slots = ns;
  m->cap = ncap;
}

void ox_namemap_reserve(OxNameMap *m, size_t n) {
  size_t cap = m->cap;
  while ((n + 1) * 2 > cap) cap *= 2;
  if (cap > m->cap) namemap_resize(m, cap); /* one allocation, one rehash */
}

void ox_namemap_foreach(const OxNameMap *m, void (*fn)(const char *key, uint32_t val, void *ud), void *ud) {
  for (size_t j = 0; j < m->cap; j++)
    if (m->slots[j].key) fn(m->slots[j].key, m->slots[j].val, ud);
}

uint32_t ox_namemap_get(const OxNameMap *m, const char *interned) {
  if (!interned) return 0;
  size_t mask = m->cap - 1;
  for (size_t j = ptr_hash(interned) & mask; m->slots[j].key; j = (j + 1) & mask)
    if (m->slots[j].key == interned) return m->slots[j].val;
  return 0;
}

void ox_namemap_set(OxNameMap *m, const char *interned, uint32_t val) {
  if ((m->count + 1) * 2 > m->cap) namemap_resize(m, m->cap * 2);
  size_t mask = m->cap - 1;
  size_t j = ptr_hash(interned) & mask;
  for (; m->slots[j].key; j = (j + 1) & mask)
    if (m->slots[j].key == interned) {
      m->slots[j].val = val;
      return;
    }
  m->slots[j] = (NameSlot){interned, val};
  m->count++;
}

void ox_namemap_del(OxNameMap *m, const char *interned) {
  size_t mask = m->cap - 1;
  size_t j = ptr_hash(interned) & mask;
  while (m->slots[j].key && m->slots[j].key != interned) j = (j + 1) & mask;
  if (!m->slots[j].key) return;
  m->slots[j].key = NULL;
  m->count--;
  /* backward shift: re-place the entries of the cluster that follows */
  size_t k = (j + 1) & mask;
  while (m->slots[k].key) {
    NameSlot e = m->slots[k];
    m->slots[k].key = NULL;
    size_t h = ptr_hash(e.key) & mask;
    while (m->slots[h].key) h = (h + 1) & mask;
    m->slots[h] = e;
    k = (k + 1) & mask;
  }
}

size_t ox_namemap_bytes(const OxNameMap *m) { return m->cap * sizeof(NameSlot); }
size_t ox_strtab_bytes(const OxStrTab *t) { return t->cap * sizeof(StrSlot) + (t->arena == &t->own ? t->own.total : 0); }
