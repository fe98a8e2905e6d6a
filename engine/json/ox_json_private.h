/* ox_json_private.h - what the files of engine/json/ share (engine/json/ only).
 *
 *   ox_json.c         the document reader; parsing with json-c, the path of the value being
 *                     read, located errors, typed accessors, values and meta
 *   ox_json_fast.c    the fast read of a clean document (no json-c; the tree read is its fallback)
 *   ox_json_lex.c     a strict JSON tokenizer of our own (ox_json_lex.h), which the fast read uses
 *   ox_json_write.c   the document writer (and the value/meta writers traces reuse)
 *   ox_json_trace.c   trace files: writer and reader (docs/trace-format.md)
 *   ox_json_config.c  pass configuration files and --shapes files
 *
 * Rd is the state of one read: the text, the diagnostics, the path from the root to the value
 * being read (errors name it, and locate it in the text). These files are the only ones of the
 * engine, with run/ox_record.c, that include json-c (ox_json_lex.c does not).
 */
#ifndef OX_JSON_PRIVATE_H
#define OX_JSON_PRIVATE_H

#include <json.h>

#include "ir/ox_buf.h"
#include "ir/ox_diag.h"
#include "ir/ox_graph.h"
#include "json/ox_json_lex.h"
#include "load/ox_doc.h"

/* One step of the path from the root to the value being read. */
typedef struct {
  const char *key; /* object member, or NULL for an array index */
  size_t idx;
} PathStep;

enum { PATH_MAX_STEPS = 1024, MAX_LOCATED = 64, MAX_ERRORS = 200 };

typedef struct {
  const char *text;
  size_t len;
  size_t start;       /* offset of the JSON text (past a UTF-8 byte order mark) */
  OxDiagList *d;
  PathStep path[PATH_MAX_STEPS];
  size_t depth;       /* steps in use (deeper steps are not recorded, only counted) */
  size_t node_depth;  /* path length at the current node object, 0 if not inside a node */
  const char *node_name;
  unsigned located;   /* diagnostics located so far (locating walks the text) */
  unsigned errors;
} Rd;
#define ERR(r, ...) ox_json_report((r), OX_SEV_ERROR, __VA_ARGS__)
typedef struct {
  OxGraph *g;
  Rd *r;
  bool create_refs; /* trace values: an unknown name becomes a placeholder standing for it */
  /* trace version 3: a node reference is an index into these names (interned in g), not a name */
  const char *const *names;
  uint32_t n_names;
  bool node_lists;  /* trace version 4: {"nodes": [i, ...]} is a list of node references */
  /* trace version 5: set, an item of such a list may be a range [first, last]; it stands for
   * last - first + 1 references, taken from *expand_left (an error when it has fewer) */
  uint64_t *expand_left;
} Ctx;

/* ox_json_write.c */
/* How a value is written: the separators, and how a node reference's target is written
 * (node_ref NULL: the name as a string; trace version 3 writes an index into its names). */
typedef struct OxJsonStyle {
  const char *comma; /* ", " in documents, "," in traces */
  const char *colon; /* ": " or ":" */
  void (*node_ref)(void *ctx, OxBuf *b, const char *name);
  void *ctx;
  /* refs set: a node reference's name is refs[id] (1-based, id <= n_refs), not the graph's
   * (a writer on another thread than the one adding references to the graph keeps a copy) */
  const char *const *refs;
  uint32_t n_refs;
  bool node_lists; /* a list of two or more node references as {"nodes": [i, ...]} (trace version 4;
                      node_ref set) */
  /* set: writes the items of such a list (trace version 5: with ranges), in place of node_ref on each */
  void (*node_list)(void *ctx, OxBuf *b, const char *const *names, uint32_t n);
} OxJsonStyle;
void ox_json_write_items_styled(const OxGraph *g, const OxValue *v, OxBuf *b, const OxJsonStyle *st);
void ox_json_write_value_styled(const OxGraph *g, const OxValue *v, OxBuf *b, const OxJsonStyle *st);
void ox_json_put_str(OxBuf *b, const char *s);
void ox_json_put_key(OxBuf *b, const char *key);
void ox_json_write_items(const OxGraph *g, const OxValue *v, OxBuf *b);
void ox_json_write_value(const OxGraph *g, const OxValue *v, OxBuf *b);
void ox_json_write_meta(const OxMeta *m, OxBuf *b);
void ox_json_write_opt_str(OxBuf *b, const char *key, const char *s);

/* ox_json.c */
void ox_json_path_push_key(Rd *r, const char *key);
void ox_json_path_push_idx(Rd *r, size_t idx);
void ox_json_path_pop(Rd *r);
size_t ox_json_skip_ws(const char *t, size_t len, size_t i);
size_t ox_json_skip_string(const char *t, size_t len, size_t i);
size_t ox_json_skip_value(const char *t, size_t len, size_t i);
void ox_json_offset_to_linecol(const char *t, size_t len, size_t off, uint32_t *line, uint32_t *col);
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void ox_json_report(Rd *r, OxSeverity sev, const char *fmt, ...);
const char *ox_json_jtype_name(json_object *o);
bool ox_json_get_range(Rd *r, json_object *o, const char *what, int64_t lo, int64_t hi, int64_t *out);
bool ox_json_expect_type(Rd *r, json_object *o, json_type t, const char *what);
bool ox_json_read_items(Ctx *c, json_object *arr, OxValueKind kind, OxValue *out);
bool ox_json_read_value(Ctx *c, json_object *o, OxValue *out);
bool ox_json_read_meta(Rd *r, OxGraph *g, json_object *o, OxMeta *m);
json_object *ox_json_parse_root(Rd *r, const char *text, size_t len, uint32_t max_depth, OxDiagList *diags);

/* ox_json_fast.c: a clean document read in one pass without json-c; false (nothing added to doc)
 * when it is not one, and the tree read must decide (and say what is wrong) */
bool ox_json_read_fast(const char *text, size_t len, uint32_t max_depth, bool borrow_text, OxDoc *doc);
/* Whether the fast reads are on (OX_JSON_NO_STREAM, ox_json_set_streaming). */
bool ox_json_fast_enabled(void);
/* Its value reader, for the trace reader: values are made in g; with names, a {"node": i} is
 * names[i] (as Ctx.names). Read tokens from ox_json_fast_lex (set it to the text first);
 * ox_json_fast_value takes a value's first token, ox_json_fast_items an array after its '['.
 * False where the tree read would say something or decide otherwise (what was made in g stays). */
typedef struct OxJsonFast OxJsonFast;
OxJsonFast *ox_json_fast_new(OxGraph *g, const char *const *names, uint32_t n_names);
/* Trace version 4: {"nodes": [i, ...]} is taken as a list of node references (as Ctx.node_lists). */
void ox_json_fast_node_lists(OxJsonFast *f, bool on);
/* Trace version 5: an item of such a list may be a range [first, last] (as Ctx.expand_left). */
void ox_json_fast_node_ranges(OxJsonFast *f, uint64_t *expand_left);

/* Trace version 5: a range [first, last] of an index list (first < last, both below n_names),
 * taking last - first + 1 from *expand_left. ox_json_read_range reads the array v (errors
 * reported at the current path); ox_json_lex_range the tokens after its '[' (no report). */
extern const char ox_json_expand_msg[];
bool ox_json_read_range(Rd *r, json_object *v, uint32_t n_names, uint64_t *expand_left, uint32_t *lo, uint32_t *hi);
bool ox_json_lex_range(OxJsonLex *x, uint32_t n_names, uint64_t *expand_left, uint32_t *lo, uint32_t *hi);
void ox_json_fast_free(OxJsonFast *f);
OxJsonLex *ox_json_fast_lex(OxJsonFast *f);
bool ox_json_fast_value(OxJsonFast *f, OxJsonTok tok, OxValue *out);
bool ox_json_fast_items(OxJsonFast *f, OxValueKind kind, OxValue *out);

#endif
