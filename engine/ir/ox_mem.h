/* ox_mem.h - engine-internal memory helpers: checked malloc, string table, name map.
 * The arena API itself is public (ox_graph.h). */
#ifndef OX_MEM_H
#define OX_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ox_graph.h"

void *ox_xrealloc(void *p, size_t n);   /* aborts on OOM (our bug or the machine's, never input's) */
void *ox_xcalloc(size_t count, size_t size);
/* For a short-lived batch process (the CLI, the benchmarks): ask the C library to keep freed
 * memory for reuse instead of returning it to the system and to serve large blocks from its
 * heap. An optimizer run frees and allocates the same sizes step after step; memory returned
 * and faulted in again costs a page fault per 4 KiB (7-13 us each on the VMs measured in
 * docs/benchmarks.md). No effect outside glibc. */
void ox_mem_tune_for_batch(void);
char *ox_xstrdup(const char *s);
/* Arrays that grow by doubling to tens of MB (a graph's node array): from 2 MiB on they are mapped
 * and grown with mremap, so growing copies nothing and leaves no freed copy behind in the heap
 * (where, kept for reuse, it would count in the peak). old_bytes / bytes: the size the block was
 * last given; p NULL or from ox_big_realloc. Contents beyond old_bytes are undefined. */
void *ox_big_realloc(void *p, size_t old_bytes, size_t new_bytes);
void ox_big_free(void *p, size_t bytes);
/* Zeroed memory for a table sized up front (a string table's or name map's slots): big ones
 * are mapped (already zero), small ones calloc'd.
 * Free with ox_big_free(p, the same bytes). */
void *ox_big_zalloc(size_t bytes);
/* When huge pages are wanted (ox_mem_huge_pages): ask for them (2 MiB) behind the 2 MiB-aligned
 * part of [p, p + bytes), before it is first written (big mapped arrays ask too). Blocks under
 * 2 MiB and kernels without transparent huge pages are left as they are. */
void ox_mem_hint_huge(void *p, size_t bytes);
/* Whether huge pages are wanted, decided once per process: OPTIMUS_HUGE_PAGES=1 yes, =0 no,
 * otherwise yes when a fresh 4 KiB page costs more than OX_MEM_HUGE_FAULT_NS to fault in (which
 * page size is faster depends on the host: ox_mem.c, docs/benchmarks.md). */
bool ox_mem_huge_pages(void);
#define OX_MEM_HUGE_FAULT_NS 4000.0
/* The decision itself, for tests: env is OPTIMUS_HUGE_PAGES (or NULL), fault_ns the probe's. */
bool ox_mem_huge_decide(const char *env, double fault_ns);
/* Nanoseconds a fresh 4 KiB page costs to fault in: the least of three timings of 16 pages
 * (well under a millisecond); -1 where it cannot be measured. */
double ox_mem_fault_ns(void);
uint64_t ox_hash_bytes(const char *s, size_t n);

/* A string table whose strings live in arena, or (arena NULL) in its own arena: such a table
 * can be shared by several graphs (ox_graph_new_sharing_strings), freed with the last of them.
 * Graphs sharing a table must be used from one thread at a time. */
OxStrTab *ox_strtab_new(OxArena *arena);
OxStrTab *ox_strtab_ref(OxStrTab *t);
void ox_strtab_free(OxStrTab *t); /* drops one reference */
const char *ox_strtab_intern(OxStrTab *t, const char *s, size_t n);
size_t ox_strtab_count(const OxStrTab *t);
/* A number no other string table of this process has (0 for NULL): a table's interned strings
 * never move or change, so (serial, pointer) names a string for good. */
uint64_t ox_strtab_serial(const OxStrTab *t);
const char *ox_strtab_lookup(const OxStrTab *t, const char *s, size_t n); /* NULL if not interned */
/* Starts loading the slot where s would be interned, for an ox_strtab_intern of s a little
 * later (a large table's slot is a cache miss: a loader or a namer that knows the next string
 * early asks for it while it works on the current one). Changes nothing. */
void ox_strtab_prefetch(const OxStrTab *t, const char *s, size_t n);
size_t ox_strtab_bytes(const OxStrTab *t); /* slots, and the strings when in its own arena */
/* Every interned string carries, in the 8 bytes before it, its id in its table (1, 2, ... in
 * the order they were interned) and its table's tag: a map from interned strings to numbers
 * can be an array indexed by id (a graph's names: no hashing, and names made one after another
 * sit side by side). */
typedef struct OxStrHead {
  uint32_t id, tag;
} OxStrHead;
uint32_t ox_strtab_tag(const OxStrTab *t);
/* The id of s in the table of that tag, or 0 if s is no string of that table (s must be an
 * interned string of some table). */
static inline uint32_t ox_strtab_id(uint32_t tag, const char *s) {
  const OxStrHead *h = (const OxStrHead *)(const void *)(s - sizeof(OxStrHead));
  return h->tag == tag ? h->id : 0;
}
/* One more than the largest id the table has given (an array indexed by id needs this many). */
static inline uint32_t ox_strtab_id_limit(size_t count) { return (uint32_t)count + 1; }
void ox_strtab_reserve(OxStrTab *t, size_t n); /* room for n strings without growing */

OxNameMap *ox_namemap_new(void);
void ox_namemap_free(OxNameMap *m);
uint32_t ox_namemap_get(const OxNameMap *m, const char *interned);
void ox_namemap_set(OxNameMap *m, const char *interned, uint32_t val);
void ox_namemap_del(OxNameMap *m, const char *interned);
size_t ox_namemap_bytes(const OxNameMap *m);
void ox_namemap_reserve(OxNameMap *m, size_t n); /* room for n keys without growing */
/* Calls fn on every (key, value) pair, in table order. */
void ox_namemap_foreach(const OxNameMap *m, void (*fn)(const char *key, uint32_t val, void *ud), void *ud);

#endif
