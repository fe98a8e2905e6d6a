/* ox_json_write.c - Optimus JSON (docs/format-json.md): the document writer.
 *
 * The writer emits everything the IR holds for a document: graphs in order, each with its
 * name, src_line, live nodes in program order (name, op, target, args, kwargs, meta with the
 * inferred flag, and the optional fields only when set), and subgraphs recursively with their
 * owner. It builds the text itself (not through json-c's serializer) so that key order is
 * fixed, floats are written as the shortest text that reads back bit-identically (Python
 * repr; 1.0 keeps its ".0" so it stays a float), and each node sits on its own line, which
 * keeps files diffable and error locations useful.
 */
#include <inttypes.h>
#include <math.h>

#include "json/ox_json_private.h"
#include "ir/ox_mem.h"
#include "run/ox_record.h"

/* ================================================================== writer */

void ox_json_put_str(OxBuf *b, const char *s) { ox_buf_put_quoted(b, s ? s : ""); }

void ox_json_put_key(OxBuf *b, const char *key) {
  ox_json_put_str(b, key);
  ox_buf_puts(b, ": ");
}

/* A constant text (a key with its quotes and ": ") appended without scanning it. */
#define PUT_LIT(b, lit) ox_buf_append((b), (lit), sizeof(lit) - 1)

static void put_indent(OxBuf *b, int n) {
  for (int i = 0; i < n; i++) ox_buf_putc(b, ' ');
}

/* Documents: ", " and ": " between items, node references by name. */
static const OxJsonStyle default_style = {.comma = ", ", .colon = ": "};

void ox_json_write_items(const OxGraph *g, const OxValue *v, OxBuf *b) {
  ox_json_write_items_styled(g, v, b, &default_style);
}

void ox_json_write_value(const OxGraph *g, const OxValue *v, OxBuf *b) {
  ox_json_write_value_styled(g, v, b, &default_style);
}

void ox_json_write_items_styled(const OxGraph *g, const OxValue *v, OxBuf *b, const OxJsonStyle *st) {
  ox_buf_putc(b, '[');
  for (uint32_t i = 0; i < v->n; i++) {
    if (i) ox_buf_puts(b, st->comma);
    ox_json_write_value_styled(g, &v->u.items[i], b, st);
  }
  ox_buf_putc(b, ']');
}

/* {"tag": "s"} (and the opening of any tagged value: tag_open) */
static void tag_open(OxBuf *b, const char *tag, const OxJsonStyle *st) {
  ox_buf_putc(b, '{');
  ox_json_put_str(b, tag);
  ox_buf_puts(b, st->colon);
}

static void write_tagged_str(OxBuf *b, const char *tag, const char *s, const OxJsonStyle *st) {
  tag_open(b, tag, st);
  ox_json_put_str(b, s);
  ox_buf_putc(b, '}');
}

static const char *ref_name(const OxGraph *g, OxNodeId id, const OxJsonStyle *st) {
  return !st->refs ? ox_graph_ref_name(g, id) : id && id <= st->n_refs ? st->refs[id] : NULL;
}

/* {"nodes":[i, ...]} for a list of node references (trace version 4); false, nothing written,
 * when some item is not one (or dangles). */
static bool write_node_list(const OxGraph *g, const OxValue *v, OxBuf *b, const OxJsonStyle *st) {
  for (uint32_t i = 0; i < v->n; i++)
    if (v->u.items[i].kind != OX_V_NODE || !ref_name(g, v->u.items[i].u.node, st)) return false;
  tag_open(b, "nodes", st);
  ox_buf_putc(b, '[');
  if (st->node_list) {
    const char *small[64], **names = v->n <= 64 ? small : ox_xrealloc(NULL, v->n * sizeof *names);
    for (uint32_t i = 0; i < v->n; i++) names[i] = ref_name(g, v->u.items[i].u.node, st);
    st->node_list(st->ctx, b, names, v->n);
    if (names != small) free(names);
  } else {
    for (uint32_t i = 0; i < v->n; i++) {
      if (i) ox_buf_puts(b, st->comma);
      st->node_ref(st->ctx, b, ref_name(g, v->u.items[i].u.node, st));
    }
  }
  ox_buf_puts(b, "]}");
  return true;
}

void ox_json_write_value_styled(const OxGraph *g, const OxValue *v, OxBuf *b, const OxJsonStyle *st) {
  switch ((OxValueKind)v->kind) {
  case OX_V_NONE: ox_buf_puts(b, "null"); return;
  case OX_V_BOOL: ox_buf_puts(b, v->u.b ? "true" : "false"); return;
  case OX_V_INT: ox_buf_put_i64(b, v->u.i); return;
  case OX_V_FLOAT:
    if (isnan(v->u.f) || isinf(v->u.f)) {
      write_tagged_str(b, "float", isnan(v->u.f) ? "nan" : v->u.f < 0 ? "-inf" : "inf", st);
    } else {
      ox_buf_put_pyfloat(b, v->u.f); /* shortest round-trip text, always with '.' or 'e' */
    }
    return;
  case OX_V_STR: ox_json_put_str(b, v->s); return;
  case OX_V_NODE: {
    const char *name = ref_name(g, v->u.node, st);
    tag_open(b, "node", st);
    if (!name)
      ox_buf_puts(b, "null"); /* a dangling id: the reader rejects it, loudly */
    else if (st->node_ref)
      st->node_ref(st->ctx, b, name);
    else
      ox_json_put_str(b, name);
    ox_buf_putc(b, '}');
    return;
  }
  case OX_V_SYM: write_tagged_str(b, "sym", v->s, st); return;
  case OX_V_DTYPE:
    write_tagged_str(b, "dtype", v->s ? v->s : ox_dtype_torch_name((OxDType)v->u.dtype), st);
    return;
  case OX_V_DEVICE: write_tagged_str(b, "device", v->s, st); return;
  case OX_V_ENUM: write_tagged_str(b, "enum", v->s, st); return;
  case OX_V_RAW: write_tagged_str(b, "raw", v->s, st); return;
  case OX_V_ELLIPSIS:
    tag_open(b, "ellipsis", st);
    ox_buf_puts(b, "true}");
    return;
  case OX_V_LIST:
    if (st->node_lists && st->node_ref && v->n >= 2 && write_node_list(g, v, b, st)) return;
    ox_json_write_items_styled(g, v, b, st);
    return;
  case OX_V_TUPLE:
  case OX_V_SLICE:
    tag_open(b, v->kind == OX_V_TUPLE ? "tuple" : "slice", st);
    ox_json_write_items_styled(g, v, b, st);
    ox_buf_putc(b, '}');
    return;
  case OX_V_DICT:
    tag_open(b, "dict", st);
    ox_buf_putc(b, '[');
    for (uint32_t i = 0; i < v->n; i++) {
      if (i) ox_buf_puts(b, st->comma);
      ox_buf_putc(b, '[');
      ox_json_put_str(b, v->keys[i]);
      ox_buf_puts(b, st->comma);
      ox_json_write_value_styled(g, &v->u.items[i], b, st);
      ox_buf_putc(b, ']');
    }
    ox_buf_puts(b, "]}");
    return;
  }
  ox_buf_puts(b, "null"); /* unreachable for a well-formed value */
}

static void write_dims(OxBuf *b, const OxDim *dims, int32_t rank) {
  ox_buf_putc(b, '[');
  for (int32_t i = 0; i < rank; i++) {
    if (i) ox_buf_puts(b, ", ");
    if (dims[i].sym)
      ox_json_put_str(b, dims[i].sym);
    else
      ox_buf_put_i64(b, dims[i].v);
  }
  ox_buf_putc(b, ']');
}

static void write_tensor_meta(const OxTensorMeta *t, OxBuf *b) {
  PUT_LIT(b, "{\"dtype\": ");
  ox_json_put_str(b, ox_dtype_abbr(t->dtype));
  if (t->rank >= 0) {
    PUT_LIT(b, ", \"shape\": ");
    write_dims(b, t->shape, t->rank);
    if (t->has_stride && (t->stride || t->rank == 0)) {
      PUT_LIT(b, ", \"stride\": ");
      write_dims(b, t->stride, t->rank);
    }
  }
  if (t->device) {
    PUT_LIT(b, ", \"device\": ");
    ox_json_put_str(b, t->device);
  }
  ox_buf_putc(b, '}');
}

/* Writes ', "meta": {...}' when there is anything to say (straight into b: whether there is is
 * known before anything is written). */
void ox_json_write_meta(const OxMeta *m, OxBuf *b) {
  bool has_kind = (m->kind == OX_META_TENSOR && m->n >= 1 && m->t) || m->kind == OX_META_TUPLE ||
                  m->kind == OX_META_SYMINT || m->kind == OX_META_SCALAR;
  if (!has_kind && !m->inferred) return;
  PUT_LIT(b, ", \"meta\": {");
  switch ((OxMetaKind)m->kind) {
  case OX_META_TENSOR:
    if (m->n >= 1 && m->t) {
      PUT_LIT(b, "\"tensor\": ");
      write_tensor_meta(&m->t[0], b);
    }
    break;
  case OX_META_TUPLE:
    PUT_LIT(b, "\"tuple\": [");
    for (uint32_t i = 0; m->t && i < m->n; i++) {
      if (i) PUT_LIT(b, ", ");
      write_tensor_meta(&m->t[i], b);
    }
    ox_buf_putc(b, ']');
    break;
  case OX_META_SYMINT:
    PUT_LIT(b, "\"symint\": ");
    if (m->sym)
      ox_json_put_str(b, m->sym);
    else
      PUT_LIT(b, "null");
    break;
  case OX_META_SCALAR: PUT_LIT(b, "\"scalar\": true"); break;
  case OX_META_NONE: break;
  }
  if (m->inferred) {
    if (has_kind) PUT_LIT(b, ", \"inferred\": true");
    else PUT_LIT(b, "\"inferred\": true");
  }
  ox_buf_putc(b, '}');
}

void ox_json_write_opt_str(OxBuf *b, const char *key, const char *s) {
  if (!s) return;
  ox_buf_puts(b, ", ");
  ox_json_put_key(b, key);
  ox_json_put_str(b, s);
}

/* The text ox_json_write_meta writes for a meta with tensor metas, kept while a document is
 * written and found again by (t, n, kind, inferred): a loaded graph keeps one copy of each
 * distinct tensor meta (a 100k-node graph has a few hundred), so most nodes' metas are a lookup
 * and a copy. At most META_TEXT_MAX bytes are kept (graphs whose metas are all distinct: the
 * rest is written as usual). */
typedef struct {
  const OxTensorMeta *t;
  uint32_t n;
  uint8_t kind;
  bool inferred;
  uint32_t off, len;
} MetaText;

typedef struct {
  MetaText *e;
  uint32_t cap, count;
  OxBuf text;
} MetaCache;

enum { META_TEXT_MAX = 4 << 20 };

static uint32_t meta_slot(const MetaCache *c, const OxMeta *m) {
  uint64_t h = ((uint64_t)(uintptr_t)m->t >> 3) ^ ((uint64_t)m->n << 40) ^ ((uint64_t)m->kind << 58) ^
               ((uint64_t)m->inferred << 62);
  h *= 0x9E3779B97F4A7C15ull;
  uint32_t j = (uint32_t)(h >> 32) & (c->cap - 1);
  while (c->e[j].t &&
         !(c->e[j].t == m->t && c->e[j].n == m->n && c->e[j].kind == m->kind && c->e[j].inferred == m->inferred))
    j = (j + 1) & (c->cap - 1);
  return j;
}

static void write_meta_cached(MetaCache *c, const OxMeta *m, OxBuf *b) {
  if (!m->t || (m->kind != OX_META_TENSOR && m->kind != OX_META_TUPLE)) {
    ox_json_write_meta(m, b);
    return;
  }
  if (!c->cap) {
    c->cap = 1024;
    c->e = ox_xcalloc(c->cap, sizeof *c->e);
  }
  uint32_t j = meta_slot(c, m);
  if (c->e[j].t) {
    ox_buf_append(b, c->text.data + c->e[j].off, c->e[j].len);
    return;
  }
  size_t start = b->len;
  ox_json_write_meta(m, b);
  size_t len = b->len - start;
  if (c->text.len + len > META_TEXT_MAX) return;
  c->e[j] = (MetaText){m->t, m->n, m->kind, m->inferred, (uint32_t)c->text.len, (uint32_t)len};
  ox_buf_append(&c->text, b->data + start, len);
  if (++c->count * 2 > c->cap) { /* grow: the entries again into a table twice the size */
    MetaCache old = *c;
    c->cap *= 2;
    c->e = ox_xcalloc(c->cap, sizeof *c->e);
    for (uint32_t i = 0; i < old.cap; i++) {
      if (!old.e[i].t) continue;
      OxMeta k = {.kind = old.e[i].kind, .inferred = old.e[i].inferred, .n = old.e[i].n, .t = (OxTensorMeta *)old.e[i].t};
      c->e[meta_slot(c, &k)] = old.e[i];
    }
    free(old.e);
  }
}

static void write_node(const OxGraph *g, const OxNode *n, OxBuf *b, MetaCache *mc) {
  PUT_LIT(b, "{\"name\": ");
  ox_json_put_str(b, n->name);
  PUT_LIT(b, ", \"op\": ");
  ox_json_put_str(b, ox_op_name((OxOp)n->op));
  PUT_LIT(b, ", \"target\": ");
  ox_json_put_str(b, n->target);
  PUT_LIT(b, ", \"args\": [");
  for (uint32_t i = 0; n->args.kind == OX_V_TUPLE && i < n->args.n; i++) {
    if (i) ox_buf_puts(b, ", ");
    ox_json_write_value(g, &n->args.u.items[i], b);
  }
  PUT_LIT(b, "], \"kwargs\": {");
  for (uint32_t i = 0; n->kwargs.kind == OX_V_DICT && i < n->kwargs.n; i++) {
    if (i) ox_buf_puts(b, ", ");
    ox_json_put_key(b, n->kwargs.keys[i]);
    ox_json_write_value(g, &n->kwargs.u.items[i], b);
  }
  ox_buf_putc(b, '}');
  write_meta_cached(mc, &n->meta, b);
  if (n->declared_users != -1) {
    ox_buf_puts(b, ", \"declared_users\": ");
    ox_buf_put_i64(b, n->declared_users);
  }
  if (n->flags) {
    ox_buf_puts(b, ", \"flags\": ");
    ox_buf_put_i64(b, n->flags);
  }
  if (n->src_line) {
    ox_buf_puts(b, ", \"src_line\": ");
    ox_buf_put_i64(b, n->src_line);
  }
  ox_json_write_opt_str(b, "type_ann", n->type_ann);
  ox_json_write_opt_str(b, "stack_trace", n->stack_trace);
  ox_json_write_opt_str(b, "module_path", n->module_path);
  ox_json_write_opt_str(b, "module_type", n->module_type);
  ox_json_write_opt_str(b, "default_value", n->default_value);
  if (n->n_provenance) {
    ox_buf_puts(b, ", \"provenance\": [");
    for (uint32_t i = 0; i < n->n_provenance; i++) {
      if (i) ox_buf_puts(b, ", ");
      ox_buf_put_i64(b, n->provenance[i]);
    }
    ox_buf_putc(b, ']');
  }
  ox_buf_putc(b, '}');
}

static void write_graph(const OxGraph *g, int ind, OxBuf *b, MetaCache *mc) {
  put_indent(b, ind);
  ox_buf_puts(b, "{\n");
  if (g->name) {
    put_indent(b, ind + 2);
    ox_json_put_key(b, "name");
    ox_json_put_str(b, g->name);
    ox_buf_puts(b, ",\n");
  }
  if (g->sub_owner) {
    put_indent(b, ind + 2);
    ox_json_put_key(b, "owner");
    ox_json_put_str(b, g->sub_owner);
    ox_buf_puts(b, ",\n");
  }
  put_indent(b, ind + 2);
  ox_buf_printf(b, "\"src_line\": %" PRIu32 ",\n", g->src_line);
  put_indent(b, ind + 2);
  ox_buf_puts(b, "\"nodes\": [");
  bool first = true;
  OX_GRAPH_FOREACH(g, id) {
    ox_buf_puts(b, first ? "\n" : ",\n");
    first = false;
    put_indent(b, ind + 4);
    write_node(g, &g->nodes[id], b, mc);
    ox_buf_drain(b); /* a streaming output (ox_buf_stream_to) takes what is final */
  }
  if (!first) {
    ox_buf_putc(b, '\n');
    put_indent(b, ind + 2);
  }
  ox_buf_puts(b, "],\n");
  put_indent(b, ind + 2);
  ox_buf_puts(b, "\"subgraphs\": [");
  for (uint32_t i = 0; i < g->n_subgraphs; i++) {
    ox_buf_puts(b, i ? ",\n" : "\n");
    write_graph(g->subgraphs[i], ind + 4, b, mc);
  }
  if (g->n_subgraphs) {
    ox_buf_putc(b, '\n');
    put_indent(b, ind + 2);
  }
  ox_buf_puts(b, "]\n");
  put_indent(b, ind);
  ox_buf_putc(b, '}');
}

void ox_write_json(const OxDoc *doc, OxBuf *out) {
  MetaCache mc = {0};
  ox_buf_puts(out, "{\n  \"format\": \"optimus-fx\",\n  \"version\": 1,\n  \"graphs\": [");
  for (uint32_t i = 0; i < doc->n_graphs; i++) {
    ox_buf_puts(out, i ? ",\n" : "\n");
    write_graph(doc->graphs[i], 4, out, &mc);
  }
  if (doc->n_graphs) ox_buf_puts(out, "\n  ");
  ox_buf_putc(out, ']');
  if (doc->record) {
    ox_buf_puts(out, ",\n  \"record\": ");
    ox_record_write_json(doc->record, out);
  }
  ox_buf_puts(out, "\n}\n");
  free(mc.e);
  ox_buf_free(&mc.text);
}
