/* ox_json_fast.c - the fast read of a clean Optimus JSON document (docs/format-json.md): one pass
 * over the text with our own tokenizer (ox_json_lex.c), each node object read straight into the
 * graph (names interned once, references looked up without inserting, tensor metas shared), no
 * json-c on the way.
 *
 * It takes what `optimus` writes and what a careful hand writes: well-formed JSON in the
 * tokenizer's strict sense, the schema's keys (each once), every node reference to an earlier
 * node, nothing the tree read would warn or complain about. At anything else it gives up (false,
 * nothing added to the document) and ox_json_read reads the text as a json-c tree as before, so
 * every diagnostic, its location and its order come from one place, and a document with forward
 * references gets the very same graph. The checks here are those of the tree read
 * (ox_json.c: create_node, fill_node, read_tagged, read_tensor_meta ...), each turned into a
 * refusal; /engine/json/streamed-equals-tree and fuzz-json compare the two reads.
 *
 * A root "record" member (recorded example tensors) is read here too, into an OxRecord whose
 * "data" arrays are checked and kept as text, converted only when a tensor is needed and written
 * back as they came (resnet18's 11.7M recorded parameters: 158 MB of text, ~2 GB as a json-c
 * tree, which is what the tree read still builds).
 *
 * The value reader is also lent to the trace reader (ox_json_trace.c) for the args and kwargs of
 * a version 3 step's edits (ox_json_fast_new ... ox_json_fast_items), where a node reference is
 * an index into the trace's names.
 *
 * OX_JSON_NO_STREAM in the environment, or ox_json_set_streaming(false), turns the fast read
 * off (everything is then read as a tree), for documents and traces alike.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "json/ox_json_lex.h"
#include "json/ox_json_private.h"
#include "run/ox_record.h"

/* Deeper documents go to the tree read (the fast read recurses once per level). */
enum { FAST_MAX_DEPTH = 512 };

/* A tensor meta being read; its dims are in Fast.dims (which may move) until it is shared. */
typedef struct {
  OxTensorMeta t;
  size_t shape_at, stride_at;
} TmAt;

/* A node meta read before: the same bytes again at the same depth in the same graph are the same
 * meta (a graph has a handful of distinct ones, written alike for every node). */
enum { META_SEEN = 8 };
typedef struct {
  const OxGraph *g;
  size_t at, len;  /* its text */
  uint32_t depth;
  OxMeta m;
} MetaSeen;

struct OxJsonFast {
  OxJsonLex x;
  OxGraph *g;           /* the graph being read */
  const char *const *names; /* trace version 3: node references are indices into these names
                               (interned in g), each read as ox_graph_name_ref_interned */
  uint32_t n_names;
  bool node_lists;      /* trace version 4: {"nodes": [i, ...]} (ox_json_fast_node_lists) */
  uint64_t *expand_left; /* trace version 5: ranges in such lists (ox_json_fast_node_ranges) */
  OxNodeId *name_ids;   /* per name: its node (placeholder) in g once looked up, else 0 */
  OxValue *vals;        /* items of the containers being read (a stack) */
  size_t n_vals, cap_vals;
  const char **keys;    /* keys of the kwargs / dicts being read (a stack) */
  size_t n_keys, cap_keys;
  TmAt *tms;            /* the tensor metas of the meta being read */
  size_t n_tms, cap_tms;
  OxDim *dims;          /* their dims */
  size_t n_dims, cap_dims;
  OxNodeId *ids;        /* the provenance being read */
  size_t n_ids, cap_ids;
  MetaSeen metas[META_SEEN]; /* the metas read last (replaced in turn) */
  unsigned meta_turn;
  size_t reserve;       /* nodes to make room for in the first graph (a guess from the text's size) */
  bool borrow_text;     /* the text outlives the document: record data kept as spans of it */
};
typedef struct OxJsonFast Fast;

static OxJsonTok next(Fast *f) { return ox_json_lex_next(&f->x); }

#define GROW(arr, n, cap)                                                                                    \
  do {                                                                                                       \
    if ((n) == (cap)) {                                                                                      \
      (cap) = (cap) ? (cap) * 2 : 64;                                                                        \
      (arr) = ox_xrealloc((arr), (cap) * sizeof *(arr));                                                     \
    }                                                                                                        \
  } while (0)

/* The current STRING/KEY token as a C string of the graph; NULL when it holds a NUL (the IR holds
 * C strings: the tree read reports it) or, with nonempty, when it is empty. */
static const char *str_interned(Fast *f, bool nonempty) {
  if (f->x.escaped && memchr(f->x.s, 0, f->x.n)) return NULL;
  if (nonempty && f->x.n == 0) return NULL;
  return ox_graph_intern_n(f->g, f->x.s, f->x.n);
}

static bool str_is(const Fast *f, const char *lit) {
  if (!f->x.n || f->x.s[0] != lit[0]) return !f->x.n && !lit[0]; /* most keys differ here */
  size_t n = strlen(lit);
  return f->x.n == n && memcmp(f->x.s, lit, n) == 0;
}

/* Index of the current KEY token in keys (NULL-terminated), -1 if not there. */
static int key_index(const Fast *f, const char *const *keys) {
  for (int i = 0; keys[i]; i++)
    if (str_is(f, keys[i])) return i;
  return -1;
}

/* ---- values */

static bool value(Fast *f, OxJsonTok tok, OxValue *out);

/* The values stacked since base as one container of kind, copied to the graph (popped). */
static bool take_items(Fast *f, size_t base, OxValueKind kind, OxValue *out) {
  size_t n = f->n_vals - base;
  if (n > UINT32_MAX) return false;
  *out = ox_value_none();
  out->kind = (uint8_t)kind;
  out->n = (uint32_t)n;
  if (n) {
    out->u.items = ox_graph_alloc(f->g, n * sizeof *out->u.items);
    memcpy(out->u.items, f->vals + base, n * sizeof *out->u.items);
  }
  f->n_vals = base;
  return true;
}

/* The items of an array whose '[' was read, as a container of kind. */
static bool items(Fast *f, OxValueKind kind, OxValue *out) {
  size_t base = f->n_vals;
  for (;;) {
    OxJsonTok tok = next(f);
    if (tok == OX_JSON_ARRAY_END) break;
    OxValue v;
    if (!value(f, tok, &v)) return false;
    GROW(f->vals, f->n_vals, f->cap_vals);
    f->vals[f->n_vals++] = v;
  }
  return take_items(f, base, kind, out);
}

/* {"dict": [[key, VALUE], ...]} from its '[' on. */
static bool dict_pairs(Fast *f, OxValue *out) {
  size_t vbase = f->n_vals, kbase = f->n_keys;
  for (;;) {
    OxJsonTok tok = next(f);
    if (tok == OX_JSON_ARRAY_END) break;
    if (tok != OX_JSON_ARRAY || next(f) != OX_JSON_STRING) return false;
    const char *k = str_interned(f, false);
    OxValue v;
    if (!k || !value(f, next(f), &v) || next(f) != OX_JSON_ARRAY_END) return false;
    GROW(f->keys, f->n_keys, f->cap_keys);
    f->keys[f->n_keys++] = k;
    GROW(f->vals, f->n_vals, f->cap_vals);
    f->vals[f->n_vals++] = v;
  }
  size_t n = f->n_vals - vbase;
  if (n > UINT32_MAX) return false;
  /* a repeated key keeps its first place and its last value, as in the tree read */
  *out = ox_graph_value_dict(f->g, n ? f->keys + kbase : NULL, n ? f->vals + vbase : NULL, (uint32_t)n);
  f->n_vals = vbase;
  f->n_keys = kbase;
  return true;
}

enum { T_TUPLE, T_SLICE, T_NODE, T_SYM, T_DEVICE, T_ENUM, T_RAW, T_DTYPE, T_ELLIPSIS, T_FLOAT, T_DICT, T_NODES };
static const char *const tags[] = {"tuple", "slice", "node", "sym", "device", "enum", "raw", "dtype",
                                   "ellipsis", "float", "dict", "nodes", NULL};

/* The node (placeholder) of names[i]: a name's placeholder, once made, stays, so each name is
 * looked up once (a node of a large run is referred to ~7 times, and the lookup misses the
 * caches). */
static OxNodeId name_node(Fast *f, int64_t i) {
  if (!f->name_ids) f->name_ids = ox_xcalloc(f->n_names, sizeof *f->name_ids);
  OxNodeId *id = &f->name_ids[i];
  if (!*id) *id = ox_graph_name_ref_interned(f->g, f->names[i]);
  return *id;
}

/* A tagged value (an object of exactly one key) from its '{' on. */
static bool tagged(Fast *f, OxValue *out) {
  if (next(f) != OX_JSON_KEY) return false;
  int tag = key_index(f, tags);
  if (tag < 0) return false;
  OxJsonTok tok = next(f);
  *out = ox_value_none();
  bool ok = false;
  switch (tag) {
  case T_TUPLE: ok = tok == OX_JSON_ARRAY && items(f, OX_V_TUPLE, out); break;
  case T_SLICE: ok = tok == OX_JSON_ARRAY && items(f, OX_V_SLICE, out) && out->n == 3; break;
  case T_NODE: {
    if (f->names) { /* as the tree read's Ctx.names: the name stands for a node (a placeholder) */
      if (tok != OX_JSON_INT || f->x.i < 0 || f->x.i >= f->n_names) return false;
      *out = ox_value_node(name_node(f, f->x.i));
      ok = true;
      break;
    }
    if (tok != OX_JSON_STRING || (f->x.escaped && memchr(f->x.s, 0, f->x.n))) return false;
    /* a name never interned is no node's name: nothing is added to the string table */
    const char *name = ox_strtab_lookup(f->g->strings, f->x.s, f->x.n);
    OxNodeId id = name ? ox_graph_find_interned(f->g, name) : 0;
    if (!id) return false; /* unknown, or further on: the tree read decides */
    *out = ox_value_node(id);
    ok = true;
    break;
  }
  case T_SYM:
  case T_DEVICE:
  case T_ENUM:
  case T_RAW: {
    if (tok != OX_JSON_STRING) return false;
    const char *s = str_interned(f, tag != T_RAW);
    if (!s) return false;
    out->kind = (uint8_t)(tag == T_SYM ? OX_V_SYM : tag == T_DEVICE ? OX_V_DEVICE : tag == T_ENUM ? OX_V_ENUM : OX_V_RAW);
    out->s = s;
    ok = true;
    break;
  }
  case T_DTYPE: {
    if (tok != OX_JSON_STRING || f->x.n == 0 || (f->x.escaped && memchr(f->x.s, 0, f->x.n))) return false;
    OxDType dt = ox_dtype_from_torch_name(f->x.s, f->x.n);
    *out = ox_value_dtype(dt);
    /* the canonical spelling of a known dtype is implied; anything else is kept */
    if (dt == OX_DT_UNKNOWN || !str_is(f, ox_dtype_torch_name(dt))) out->s = ox_graph_intern_n(f->g, f->x.s, f->x.n);
    ok = true;
    break;
  }
  case T_ELLIPSIS:
    out->kind = OX_V_ELLIPSIS;
    ok = tok == OX_JSON_TRUE;
    break;
  case T_FLOAT:
    if (tok != OX_JSON_STRING) return false;
    if (str_is(f, "inf")) *out = ox_value_float(INFINITY), ok = true;
    else if (str_is(f, "-inf")) *out = ox_value_float(-INFINITY), ok = true;
    else if (str_is(f, "nan")) *out = ox_value_float(NAN), ok = true;
    break;
  case T_DICT: ok = tok == OX_JSON_ARRAY && dict_pairs(f, out); break;
  case T_NODES: { /* a list of node references, as indices (trace version 4) */
    if (!f->node_lists || !f->names || tok != OX_JSON_ARRAY) return false;
    size_t base = f->n_vals;
    while ((tok = next(f)) != OX_JSON_ARRAY_END) {
      uint32_t lo, hi;
      if (tok == OX_JSON_ARRAY && f->expand_left) { /* version 5: [first, last] */
        if (!ox_json_lex_range(&f->x, f->n_names, f->expand_left, &lo, &hi)) return false;
      } else {
        if (tok != OX_JSON_INT || f->x.i < 0 || f->x.i >= f->n_names) return false;
        lo = hi = (uint32_t)f->x.i;
      }
      for (uint64_t k = lo; k <= hi; k++) {
        GROW(f->vals, f->n_vals, f->cap_vals);
        f->vals[f->n_vals++] = ox_value_node(name_node(f, k));
      }
    }
    ok = take_items(f, base, OX_V_LIST, out);
    break;
  }
  }
  return ok && next(f) == OX_JSON_OBJECT_END;
}

static bool value(Fast *f, OxJsonTok tok, OxValue *out) {
  *out = ox_value_none();
  switch (tok) {
  case OX_JSON_NULL: return true;
  case OX_JSON_TRUE: *out = ox_value_bool(true); return true;
  case OX_JSON_FALSE: *out = ox_value_bool(false); return true;
  case OX_JSON_INT: *out = ox_value_int(f->x.i); return true;
  case OX_JSON_DOUBLE: *out = ox_value_float(f->x.f); return true; /* finite: the tokenizer says */
  case OX_JSON_STRING:
    out->kind = OX_V_STR;
    out->s = str_interned(f, false);
    return out->s != NULL;
  case OX_JSON_ARRAY: return items(f, OX_V_LIST, out);
  case OX_JSON_OBJECT: return tagged(f, out);
  default: return false;
  }
}

/* An int token in [lo, hi]. */
static bool int_in(Fast *f, OxJsonTok tok, int64_t lo, int64_t hi, int64_t *out) {
  if (tok != OX_JSON_INT || f->x.i < lo || f->x.i > hi) return false;
  *out = f->x.i;
  return true;
}

/* ---- meta */

/* The dims of a shape or stride array from its '[' on; *at: where they start in f->dims. */
static bool dims(Fast *f, size_t *at, size_t *n) {
  *at = f->n_dims;
  for (;;) {
    OxJsonTok tok = next(f);
    if (tok == OX_JSON_ARRAY_END) break;
    OxDim d = {0, NULL};
    if (tok == OX_JSON_INT) d.v = f->x.i;
    else if (tok != OX_JSON_STRING || !(d.sym = str_interned(f, true))) return false;
    GROW(f->dims, f->n_dims, f->cap_dims);
    f->dims[f->n_dims++] = d;
  }
  *n = f->n_dims - *at;
  return *n <= INT32_MAX;
}

enum { TM_DTYPE, TM_SHAPE, TM_STRIDE, TM_DEVICE };
static const char *const tm_keys[] = {"dtype", "shape", "stride", "device", NULL};

/* A tensor meta from its '{' on, pushed on f->tms. */
static bool tensor_meta(Fast *f) {
  TmAt tm = {.t = {.rank = -1}};
  size_t stride_n = 0;
  unsigned seen = 0;
  for (;;) {
    OxJsonTok tok = next(f);
    if (tok == OX_JSON_OBJECT_END) break;
    if (tok != OX_JSON_KEY) return false;
    int k = key_index(f, tm_keys);
    if (k < 0 || (seen & (1u << k))) return false; /* unknown (a warning) or repeated */
    seen |= 1u << k;
    tok = next(f);
    size_t n;
    switch (k) {
    case TM_DTYPE:
      if (tok != OX_JSON_STRING) return false;
      tm.t.dtype = ox_dtype_from_abbr(f->x.s, f->x.n);
      if (tm.t.dtype == OX_DT_UNKNOWN && !str_is(f, "?")) return false;
      break;
    case TM_SHAPE:
      if (tok != OX_JSON_ARRAY || !dims(f, &tm.shape_at, &n)) return false;
      tm.t.rank = (int32_t)n;
      break;
    case TM_STRIDE:
      if (tok != OX_JSON_ARRAY || !dims(f, &tm.stride_at, &stride_n)) return false;
      break;
    case TM_DEVICE:
      if (tok != OX_JSON_STRING || !(tm.t.device = str_interned(f, false))) return false;
      break;
    }
  }
  if (!(seen & (1u << TM_DTYPE))) return false;
  if (seen & (1u << TM_STRIDE)) {
    if (tm.t.rank < 0 || stride_n != (size_t)tm.t.rank) return false;
    tm.t.has_stride = true;
  }
  GROW(f->tms, f->n_tms, f->cap_tms);
  f->tms[f->n_tms++] = tm;
  return true;
}

/* The tensor metas pushed since base, with their dims in place, as the graph's shared copy (NULL
 * when one is absurd: the tree read warns). */
static OxTensorMeta *share_tms(Fast *f, size_t base) {
  size_t n = f->n_tms - base;
  OxTensorMeta one, *t = n == 1 ? &one : ox_xrealloc(NULL, n * sizeof *t);
  bool ok = true;
  for (size_t i = 0; i < n; i++) {
    const TmAt *a = &f->tms[base + i];
    t[i] = a->t;
    t[i].shape = a->t.rank > 0 ? f->dims + a->shape_at : NULL;
    t[i].stride = a->t.has_stride && a->t.rank > 0 ? f->dims + a->stride_at : NULL;
    char why[160];
    if (ox_meta_absurd(&t[i], why, sizeof why)) ok = false;
  }
  OxTensorMeta *r = ok ? ox_graph_meta_intern(f->g, t, (uint32_t)n) : NULL;
  if (t != &one) free(t);
  return r;
}

enum { M_INFERRED, M_TENSOR, M_TUPLE, M_SYMINT, M_SCALAR };
static const char *const meta_keys[] = {"inferred", "tensor", "tuple", "symint", "scalar", NULL};

/* A node's meta from its '{' on. */
static bool meta(Fast *f, OxMeta *m) {
  memset(m, 0, sizeof *m);
  unsigned seen = 0;
  f->n_tms = 0;
  f->n_dims = 0;
  for (;;) {
    OxJsonTok tok = next(f);
    if (tok == OX_JSON_OBJECT_END) break;
    if (tok != OX_JSON_KEY) return false;
    int k = key_index(f, meta_keys);
    if (k < 0 || (seen & (1u << k))) return false;
    seen |= 1u << k;
    tok = next(f);
    switch (k) {
    case M_INFERRED:
      if (tok != OX_JSON_TRUE && tok != OX_JSON_FALSE) return false;
      m->inferred = tok == OX_JSON_TRUE;
      break;
    case M_TENSOR:
      m->kind = OX_META_TENSOR;
      if (tok != OX_JSON_OBJECT || !tensor_meta(f)) return false;
      break;
    case M_TUPLE:
      m->kind = OX_META_TUPLE;
      if (tok != OX_JSON_ARRAY) return false;
      while ((tok = next(f)) != OX_JSON_ARRAY_END)
        if (tok != OX_JSON_OBJECT || !tensor_meta(f)) return false;
      break;
    case M_SYMINT:
      m->kind = OX_META_SYMINT;
      if (tok == OX_JSON_NULL) break;
      if (tok != OX_JSON_STRING || !(m->sym = str_interned(f, false))) return false;
      break;
    case M_SCALAR:
      m->kind = OX_META_SCALAR;
      if (tok != OX_JSON_TRUE) return false;
      break;
    }
  }
  unsigned kinds = seen >> M_TENSOR;
  if (kinds & (kinds - 1)) return false; /* more than one kind */
  if (f->n_tms > UINT32_MAX) return false;
  m->n = (uint32_t)f->n_tms;
  if (f->n_tms && !(m->t = share_tms(f, 0))) return false;
  return true;
}

/* A node's meta, its key read: the same text as a meta read before is taken as it is. */
static bool node_meta(Fast *f, OxMeta *m) {
  const char *t = f->x.t;
  size_t at = f->x.pos;
  while (at < f->x.len && (t[at] == ' ' || t[at] == '\n' || t[at] == '\t' || t[at] == '\r')) at++;
  for (unsigned i = 0; i < META_SEEN; i++) {
    const MetaSeen *e = &f->metas[i];
    if (e->g == f->g && e->depth == f->x.depth && e->len <= f->x.len - at && memcmp(t + at, t + e->at, e->len) == 0 &&
        ox_json_lex_take(&f->x, at, at + e->len)) {
      *m = e->m;
      return true;
    }
  }
  uint32_t depth = f->x.depth;
  if (next(f) != OX_JSON_OBJECT || f->x.at != at || !meta(f, m)) return false;
  MetaSeen *e = &f->metas[f->meta_turn++ % META_SEEN];
  *e = (MetaSeen){f->g, at, f->x.pos - at, depth, *m};
  return true;
}

/* ---- nodes and graphs */

enum {
  N_NAME, N_OP, N_TARGET, N_ARGS, N_KWARGS, N_META, N_DECLARED_USERS, N_FLAGS, N_SRC_LINE, N_TYPE_ANN,
  N_STACK_TRACE, N_MODULE_PATH, N_MODULE_TYPE, N_DEFAULT_VALUE, N_PROVENANCE,
};
static const char *const node_keys[] = {
  "name", "op", "target", "args", "kwargs", "meta", "declared_users", "flags", "src_line", "type_ann",
  "stack_trace", "module_path", "module_type", "default_value", "provenance", NULL,
};

/* kwargs from its '{' on: keys in order, each once. */
static bool kwargs(Fast *f, OxValue *out) {
  size_t vbase = f->n_vals, kbase = f->n_keys;
  for (;;) {
    OxJsonTok tok = next(f);
    if (tok == OX_JSON_OBJECT_END) break;
    if (tok != OX_JSON_KEY) return false;
    const char *k = str_interned(f, false);
    if (!k) return false;
    for (size_t i = kbase; i < f->n_keys; i++)
      if (f->keys[i] == k) return false; /* repeated: json-c keeps one of them, the tree read says which */
    OxValue v;
    if (!value(f, next(f), &v)) return false;
    GROW(f->keys, f->n_keys, f->cap_keys);
    f->keys[f->n_keys++] = k;
    GROW(f->vals, f->n_vals, f->cap_vals);
    f->vals[f->n_vals++] = v;
  }
  size_t n = f->n_vals - vbase;
  *out = ox_value_none();
  out->kind = OX_V_DICT;
  out->n = (uint32_t)n;
  if (n) {
    out->u.items = ox_graph_alloc(f->g, n * sizeof *out->u.items);
    memcpy(out->u.items, f->vals + vbase, n * sizeof *out->u.items);
    out->keys = ox_graph_alloc(f->g, n * sizeof *out->keys);
    memcpy(out->keys, f->keys + kbase, n * sizeof *out->keys);
  }
  f->n_vals = vbase;
  f->n_keys = kbase;
  return true;
}

/* A node from its '{' on: read whole, then created and filled at once. */
static bool node(Fast *f) {
  OxGraph *g = f->g;
  const char *name = NULL, *target = NULL, *strs[5] = {0};
  OxOp op = OX_OP_CALL_FUNCTION;
  OxValue args = ox_value_none(), kw = ox_value_none();
  OxMeta m = {0};
  int64_t declared = -1, flags = 0, src_line = 0;
  OxNodeId *prov = NULL;
  size_t n_prov = 0;
  unsigned seen = 0;
  for (;;) {
    OxJsonTok tok = next(f);
    if (tok == OX_JSON_OBJECT_END) break;
    if (tok != OX_JSON_KEY) return false;
    int k = key_index(f, node_keys);
    if (k < 0 || (seen & (1u << k))) return false; /* unknown (a warning) or repeated */
    seen |= 1u << k;
    if (k == N_META) {
      if (!node_meta(f, &m)) return false;
      continue;
    }
    tok = next(f);
    switch (k) {
    case N_NAME:
      if (tok != OX_JSON_STRING || !(name = str_interned(f, true))) return false;
      break;
    case N_OP:
      if (tok != OX_JSON_STRING || (f->x.escaped && memchr(f->x.s, 0, f->x.n)) || !ox_op_from_name(f->x.s, f->x.n, &op))
        return false;
      break;
    case N_TARGET:
      if (tok != OX_JSON_STRING || !(target = str_interned(f, false))) return false;
      break;
    case N_ARGS:
      if (tok != OX_JSON_ARRAY || !items(f, OX_V_TUPLE, &args)) return false;
      break;
    case N_KWARGS:
      if (tok != OX_JSON_OBJECT || !kwargs(f, &kw)) return false;
      break;
    case N_DECLARED_USERS:
      if (!int_in(f, tok, -1, INT32_MAX, &declared)) return false;
      break;
    case N_FLAGS:
      if (!int_in(f, tok, 0, UINT16_MAX, &flags)) return false;
      break;
    case N_SRC_LINE:
      if (!int_in(f, tok, 0, UINT32_MAX, &src_line)) return false;
      break;
    case N_PROVENANCE: {
      if (tok != OX_JSON_ARRAY) return false;
      int64_t x;
      f->n_ids = 0;
      while ((tok = next(f)) != OX_JSON_ARRAY_END) {
        if (!int_in(f, tok, 1, UINT32_MAX, &x)) return false;
        GROW(f->ids, f->n_ids, f->cap_ids);
        f->ids[f->n_ids++] = (OxNodeId)x;
      }
      n_prov = f->n_ids;
      if (n_prov > UINT32_MAX) return false;
      prov = n_prov ? ox_graph_alloc(g, n_prov * sizeof *prov) : NULL;
      if (n_prov) memcpy(prov, f->ids, n_prov * sizeof *prov);
      break;
    }
    default: /* type_ann, stack_trace, module_path, module_type, default_value */
      if (tok != OX_JSON_STRING || !(strs[k - N_TYPE_ANN] = str_interned(f, false))) return false;
      break;
    }
  }
  /* missing name, op or target: errors of the tree read */
  if ((seen & 7u) != 7u) return false;
  OxNodeId id = ox_graph_add_node_interned(g, op, name, target, args, kw);
  OxNode *n = &g->nodes[id];
  if (n->name != name) return false; /* the name was taken (an error): the node got another */
  if (seen & (1u << N_META)) n->meta = m;
  n->declared_users = (int32_t)declared;
  n->flags = (uint16_t)flags;
  n->src_line = (uint32_t)src_line;
  n->type_ann = strs[0];
  n->stack_trace = strs[1];
  n->module_path = strs[2];
  n->module_type = strs[3];
  n->default_value = strs[4];
  n->provenance = prov;
  n->n_provenance = (uint32_t)n_prov;
  if (strs[3]) ox_graph_opix_stale(g, id);
  return true;
}

enum { G_NAME, G_OWNER, G_SRC_LINE, G_NODES, G_SUBGRAPHS };
static const char *const graph_keys[] = {"name", "owner", "src_line", "nodes", "subgraphs", NULL};

/* A graph from its '{' on; NULL when the tree read must decide. */
static OxGraph *graph(Fast *f) {
  OxGraph *outer = f->g, *g = ox_graph_new();
  f->g = g;
  if (f->reserve) {
    ox_graph_reserve(g, (uint32_t)(f->reserve < UINT32_MAX / 2 ? f->reserve : UINT32_MAX / 2));
    f->reserve = 0;
  }
  unsigned seen = 0;
  bool ok = true;
  while (ok) {
    OxJsonTok tok = next(f);
    if (tok == OX_JSON_OBJECT_END) break;
    int k = tok == OX_JSON_KEY ? key_index(f, graph_keys) : -1;
    if (k < 0 || (seen & (1u << k))) {
      ok = false;
      break;
    }
    seen |= 1u << k;
    tok = next(f);
    int64_t x = 0;
    switch (k) {
    case G_NAME: ok = tok == OX_JSON_STRING && (g->name = str_interned(f, false)) != NULL; break;
    case G_OWNER: ok = tok == OX_JSON_STRING && (g->sub_owner = str_interned(f, false)) != NULL; break;
    case G_SRC_LINE:
      ok = int_in(f, tok, 0, UINT32_MAX, &x);
      g->src_line = (uint32_t)x;
      break;
    case G_NODES:
      if (tok != OX_JSON_ARRAY) ok = false;
      /* every reference is to an earlier node: the order is topological already, ids are in
       * array order; positions are computed when first asked, as after the FX loaders (the tree
       * read computes them to look for references to later nodes) */
      while (ok && (tok = next(f)) != OX_JSON_ARRAY_END) ok = tok == OX_JSON_OBJECT && node(f);
      break;
    case G_SUBGRAPHS:
      if (tok != OX_JSON_ARRAY) ok = false;
      while (ok && (tok = next(f)) != OX_JSON_ARRAY_END) {
        OxGraph *sub = tok == OX_JSON_OBJECT ? graph(f) : NULL;
        if (sub) ox_graph_add_subgraph(g, sub);
        ok = sub != NULL;
      }
      break;
    }
  }
  f->g = outer;
  if (!ok || !(seen & (1u << G_NODES))) {
    ox_graph_free(g);
    return NULL;
  }
  return g;
}

/* ---- the root's "record": tensors read into an OxRecord, "data" arrays checked and kept as
 * text (ox_record_data_scan, ox_record_add_data_text): no value is converted until a tensor is
 * needed. Whatever ox_record_from_json would not take as it is (or would warn about), and any
 * key order but dtype and shape before data, is a refusal. */

enum { RT_DTYPE, RT_SHAPE, RT_DATA, RT_FILL, RT_B64 };
static const char *const tensor_keys[] = {"dtype", "shape", "data", "fill", "b64", NULL};
static const char *const fill_keys[] = {"kind", "scale", "freq", "phase", NULL};

/* A number as ox_record_from_json's num_of takes one. */
static bool rec_num(Fast *f, OxJsonTok tok, double *v) {
  switch (tok) {
  case OX_JSON_INT: *v = (double)f->x.i; return true;
  case OX_JSON_DOUBLE: *v = f->x.f; return true;
  case OX_JSON_TRUE: *v = 1; return true;
  case OX_JSON_FALSE: *v = 0; return true;
  case OX_JSON_STRING: return ox_record_special_value(f->x.s, f->x.n, v);
  default: return false;
  }
}

/* A tensor object whose '{' was read: appended to r's section sec under name. */
static bool rec_tensor(Fast *f, OxRecord *r, OxRecordSection sec, const char *name) {
  unsigned seen = 0;
  OxRecordFill fill = {0};
  int64_t numel = -1;
  size_t data_s = 0, data_e = 0;
  for (OxJsonTok tok; (tok = next(f)) != OX_JSON_OBJECT_END;) {
    int k = tok == OX_JSON_KEY ? key_index(f, tensor_keys) : -1;
    if (k < 0 || (seen & (1u << k))) return false;
    seen |= 1u << k;
    if (k == RT_DTYPE) {
      if (next(f) != OX_JSON_STRING) return false;
      fill.dtype = ox_dtype_from_abbr(f->x.s, f->x.n);
      if (!ox_tensor_dtype_supported(fill.dtype)) return false;
    } else if (k == RT_SHAPE) {
      if (next(f) != OX_JSON_ARRAY) return false;
      while ((tok = next(f)) != OX_JSON_ARRAY_END) {
        if (tok != OX_JSON_INT || f->x.i < 0 || fill.rank >= OX_TENSOR_MAX_RANK) return false;
        fill.shape[fill.rank++] = f->x.i;
      }
      numel = ox_shape_numel(fill.rank, fill.shape);
      if (numel < 0 || numel > OX_RECORD_MAX_ELEMS) return false;
    } else if (k == RT_DATA || k == RT_B64) {
      if ((seen & 3u) != 3u) return false; /* the value is read for the dtype and shape */
      data_s = ox_json_lex_value_start(&f->x);
      size_t n = k == RT_DATA ? ox_record_data_scan(f->x.t + data_s, f->x.len - data_s, fill.dtype, numel)
                              : ox_record_b64_extent(f->x.t + data_s, f->x.len - data_s, fill.dtype, numel);
      if (!n || !ox_json_lex_take(&f->x, data_s, data_s + n)) return false;
      data_e = data_s + n;
    } else {
      if (next(f) != OX_JSON_OBJECT) return false;
      unsigned fseen = 0;
      double *nums[] = {NULL, &fill.scale, &fill.freq, &fill.phase};
      while ((tok = next(f)) != OX_JSON_OBJECT_END) {
        int fk = tok == OX_JSON_KEY ? key_index(f, fill_keys) : -1;
        if (fk < 0 || (fseen & (1u << fk))) return false;
        fseen |= 1u << fk;
        tok = next(f);
        if (fk == 0 ? tok != OX_JSON_STRING || !str_is(f, "sin") : !rec_num(f, tok, nums[fk])) return false;
      }
      if (fseen != 15u) return false;
      fill.present = true;
    }
  }
  /* dtype, shape, and exactly one of data, fill and b64 */
  unsigned body = (seen >> 2) & 7u;
  if ((seen & 3u) != 3u || (body != 1u && body != 2u && body != 4u)) return false;
  if (fill.present)
    ox_record_add_fill(r, sec, name, &fill);
  else if (seen & (1u << RT_B64))
    ox_record_add_b64_text(r, sec, name, fill.dtype, fill.rank, fill.shape, f->x.t + data_s, data_e - data_s,
                           f->borrow_text);
  else
    ox_record_add_data_text(r, sec, name, fill.dtype, fill.rank, fill.shape, f->x.t + data_s, data_e - data_s,
                            f->borrow_text);
  return true;
}

/* "inputs" / "params": an object of tensors by name (each name once). */
static bool rec_named(Fast *f, OxRecord *r, OxRecordSection sec) {
  if (next(f) != OX_JSON_OBJECT) return false;
  for (OxJsonTok tok; (tok = next(f)) != OX_JSON_OBJECT_END;) {
    if (tok != OX_JSON_KEY || memchr(f->x.s, 0, f->x.n)) return false;
    char *name = ox_xrealloc(NULL, f->x.n + 1);
    memcpy(name, f->x.s, f->x.n);
    name[f->x.n] = 0;
    bool ok = !ox_record_has_name(r, sec, name) && next(f) == OX_JSON_OBJECT && rec_tensor(f, r, sec, name);
    free(name);
    if (!ok) return false;
  }
  return true;
}

enum { RK_INPUTS, RK_PARAMS, RK_OUTPUTS, RK_SEED };
static const char *const record_keys[] = {"inputs", "params", "outputs", "seed", NULL};

/* The root's "record" value, whose '{' was read. */
static bool record(Fast *f, OxDoc *doc) {
  OxRecord *r = ox_record_new();
  unsigned seen = 0;
  bool ok = true;
  for (OxJsonTok tok; ok && (tok = next(f)) != OX_JSON_OBJECT_END;) {
    int k = tok == OX_JSON_KEY ? key_index(f, record_keys) : -1;
    if (k < 0 || (seen & (1u << k))) {
      ok = false;
      break;
    }
    seen |= 1u << k;
    if (k == RK_INPUTS || k == RK_PARAMS) {
      ok = rec_named(f, r, k == RK_INPUTS ? OX_RECORD_INPUTS : OX_RECORD_PARAMS);
    } else if (k == RK_OUTPUTS) {
      ok = next(f) == OX_JSON_ARRAY;
      while (ok && (tok = next(f)) != OX_JSON_ARRAY_END) {
        if (tok == OX_JSON_NULL)
          ox_record_add_output(r, NULL);
        else
          ok = tok == OX_JSON_OBJECT && rec_tensor(f, r, OX_RECORD_OUTPUTS, NULL);
      }
    } else {
      ok = next(f) == OX_JSON_INT;
      r->has_seed = true;
      r->seed = f->x.i;
    }
  }
  /* the "b64" strings' content, checked at once (by two threads when they are megabytes) */
  if (!ok || !ox_record_b64_check(r)) {
    ox_record_free(r);
    return false;
  }
  doc->record = r;
  return true;
}

enum { R_FORMAT, R_VERSION, R_GRAPHS, R_RECORD };
static const char *const root_keys[] = {"format", "version", "graphs", "record", NULL};

static bool document(Fast *f, OxDoc *doc) {
  if (next(f) != OX_JSON_OBJECT) return false;
  unsigned seen = 0;
  for (;;) {
    OxJsonTok tok = next(f);
    if (tok == OX_JSON_OBJECT_END) break;
    int k = tok == OX_JSON_KEY ? key_index(f, root_keys) : -1;
    if (k < 0 || (seen & (1u << k))) return false;
    seen |= 1u << k;
    tok = next(f);
    switch (k) {
    case R_FORMAT:
      if (tok != OX_JSON_STRING || !str_is(f, "optimus-fx")) return false;
      break;
    case R_VERSION:
      if (tok != OX_JSON_INT || f->x.i != 1) return false;
      break;
    case R_GRAPHS:
      if (tok != OX_JSON_ARRAY) return false;
      while ((tok = next(f)) != OX_JSON_ARRAY_END) {
        OxGraph *g = tok == OX_JSON_OBJECT ? graph(f) : NULL;
        if (!g) return false;
        ox_doc_add_graph(doc, g);
      }
      break;
    case R_RECORD:
      if (tok != OX_JSON_OBJECT || !record(f, doc)) return false;
      break;
    }
  }
  return next(f) == OX_JSON_END && (seen & 7u) == 7u && doc->n_graphs > 0;
}

static int fast_off = -1; /* -1: not decided yet (the environment decides) */
static unsigned long fast_reads;

void ox_json_set_streaming(bool on) { __atomic_store_n(&fast_off, on ? 0 : 1, __ATOMIC_RELAXED); }
unsigned long ox_json_streamed_reads(void) { return __atomic_load_n(&fast_reads, __ATOMIC_RELAXED); }

bool ox_json_fast_enabled(void) {
  int off = __atomic_load_n(&fast_off, __ATOMIC_RELAXED);
  if (off < 0) {
    off = getenv("OX_JSON_NO_STREAM") != NULL;
    __atomic_store_n(&fast_off, off, __ATOMIC_RELAXED);
  }
  return !off;
}

/* ---- values for another reader (the trace reader's steps) */

OxJsonFast *ox_json_fast_new(OxGraph *g, const char *const *names, uint32_t n_names) {
  Fast *f = ox_xcalloc(1, sizeof *f);
  f->g = g;
  f->names = names;
  f->n_names = n_names;
  return f;
}

void ox_json_fast_node_lists(OxJsonFast *f, bool on) { f->node_lists = on; }
void ox_json_fast_node_ranges(OxJsonFast *f, uint64_t *expand_left) { f->expand_left = expand_left; }

bool ox_json_lex_range(OxJsonLex *x, uint32_t n_names, uint64_t *expand_left, uint32_t *lo, uint32_t *hi) {
  if (ox_json_lex_next(x) != OX_JSON_INT || x->i < 0 || x->i >= n_names) return false;
  int64_t a = x->i;
  if (ox_json_lex_next(x) != OX_JSON_INT || x->i <= a || x->i >= n_names) return false;
  int64_t b = x->i;
  if (ox_json_lex_next(x) != OX_JSON_ARRAY_END || (uint64_t)(b - a) + 1 > *expand_left) return false;
  *expand_left -= (uint64_t)(b - a) + 1;
  *lo = (uint32_t)a;
  *hi = (uint32_t)b;
  return true;
}

void ox_json_fast_free(OxJsonFast *f) {
  if (!f) return;
  ox_json_lex_free(&f->x);
  free(f->vals);
  free(f->keys);
  free(f->tms);
  free(f->dims);
  free(f->ids);
  free(f->name_ids);
  free(f);
}

OxJsonLex *ox_json_fast_lex(OxJsonFast *f) { return &f->x; }
bool ox_json_fast_value(OxJsonFast *f, OxJsonTok tok, OxValue *out) { return value(f, tok, out); }
bool ox_json_fast_items(OxJsonFast *f, OxValueKind kind, OxValue *out) { return items(f, kind, out); }

bool ox_json_read_fast(const char *text, size_t len, uint32_t max_depth, bool borrow_text, OxDoc *doc) {
  /* past 2 GiB or at a depth limit of 1 the tree read has its own things to say */
  if (!ox_json_fast_enabled() || len > (size_t)INT_MAX || max_depth < 2) return false;
  size_t start = len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
  Fast f = {0};
  /* one level less than json-c takes: whatever the fast read accepts, the tree read would */
  uint32_t depth = max_depth - 1 < FAST_MAX_DEPTH ? max_depth - 1 : FAST_MAX_DEPTH;
  ox_json_lex_init(&f.x, text, len, start, depth);
  /* what optimus writes takes ~380 bytes a node with its meta, ~150 without; a document of
   * larger nodes (long stack traces) gets room for more nodes than it has, which costs ~60 bytes
   * a node it does not have (a node array, name map and string table grown once, not ~17 times).
   * A recorded model's weights are no nodes: the guess stops where "record" starts (vit_b_16's
   * 463 MB made room for 1.16M nodes for its 238, and every step cleared key slots that size). */
  const char *rec = memmem(text, len, "\"record\"", 8);
  size_t graph_bytes = rec ? (size_t)(rec - text) : len;
  f.reserve = graph_bytes >= (1u << 20) ? graph_bytes / 400 : 0;
  f.borrow_text = borrow_text;
  OxDoc *fd = ox_doc_new(doc->format);
  bool ok = document(&f, fd);
  ox_json_lex_free(&f.x);
  free(f.vals);
  free(f.keys);
  free(f.tms);
  free(f.dims);
  free(f.ids);
  if (ok) {
    for (uint32_t i = 0; i < fd->n_graphs; i++) ox_doc_add_graph(doc, fd->graphs[i]);
    fd->n_graphs = 0;
    if (fd->record) {
      doc->record = fd->record;
      fd->record = NULL;
    }
    __atomic_add_fetch(&fast_reads, 1, __ATOMIC_RELAXED);
  }
  ox_doc_free(fd);
  return ok;
}
