/* ox_canon.h - canonical node names across runs, for comparing two runs of one input decision
 * by decision (what-if re-runs, ox_whatif.h; compare-runs, ox_compare.h).
 *
 * Nodes a rewrite creates are named in creation order (stack_12), so once two runs differ the
 * same later rewrite can name different nodes. A canonical name: an input node keeps its name;
 * a node an applied step added is named after that step (a hash of its phase, pass, rule,
 * canonical anchor and sorted canonical matched nodes) and its place among the step's added
 * nodes ("~<hash>#k"). A run is walked forward once, ox_canon_after updating the map after
 * each record.
 *
 *     OxCanonMap m = {0};
 *     for (i = 0; i < t->n_steps; i++) {
 *       char *key = ox_canon_step_key(&m, &t->steps[i], true);   // the step's decision
 *       ...; free(key);
 *       ox_canon_after(&m, &t->steps[i]);
 *     }
 *     ox_canon_free(&m);
 */
#ifndef OX_CANON_H
#define OX_CANON_H

#include "run/ox_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct OxCanonMap {
  char **keys, **vals; /* open addressing; keys and values owned */
  uint32_t cap, count;
} OxCanonMap;

void ox_canon_free(OxCanonMap *m);
void ox_canon_copy(OxCanonMap *dst, const OxCanonMap *src);
/* The canonical name of node `name` ("" for NULL); valid until the map changes. */
const char *ox_canon_name(const OxCanonMap *m, const char *name);
/* After record s: the nodes it added (applied or kept graph-changing steps) get names derived from it. */
void ox_canon_after(OxCanonMap *m, const OxStep *s);

/* Separators of a step key: fields (phase, pass, rule, anchor) and, after them, matched names. */
#define OX_CANON_FIELD_SEP '\x1f'
#define OX_CANON_MATCHED_SEP '\x1e'
/* "phase\x1fpass\x1frule\x1fanchor" with canonical anchor; with `matched`, then
 * "\x1ename" per canonical matched node, sorted. malloc'ed. */
char *ox_canon_step_key(const OxCanonMap *m, const OxStep *s, bool matched);

#ifdef __cplusplus
}
#endif
#endif
