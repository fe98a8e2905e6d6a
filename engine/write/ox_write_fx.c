/* ox_write_fx.c - a graph as print(graph) text (spec 1.4(a)).
 *
 * Output matches torch.fx's Graph.__str__ / Node.format_node: a "graph():" header, one
 * 4-space-indented line per live node in program order, and "return ..." for the output
 * node. Where a node's meta is a known tensor, the type is followed by Inductor's quoted
 * annotation ('%mm : Tensor "f32[8, 16][16, 1]cuda:0"[num_users=1] = ...'), the richest
 * line form the FX text parser reads, so shapes survive a write/parse round trip.
 *
 * Values are printed as torch.fx's _format_arg prints them (str() of atoms, "%name" for
 * nodes, "(x,)" one-tuples, "{key: value}" dicts), with one deliberate difference: a string
 * is printed bare only when the bare word cannot be read back as something else (an
 * identifier that is not None/True/False/inf/nan/Ellipsis, not a device name, not a symbol
 * such as s0 or u3); any other string is printed as a Python single-quoted literal. torch.fx
 * itself prints every string bare, which is ambiguous ("cpu" the string vs the device, "" vs
 * nothing), and the quoted form is what the parser reads as a string unambiguously.
 * Likewise node references inside slices are printed "%x" (torch prints the bare name).
 *
 * Subgraphs follow their owner node as an indented "lowered graph():" block, the shape of
 * executorch's format_delegated_graph (no "backend_id:" line: the IR does not hold it).
 * Subgraphs whose owner is not a live node of the graph are written before the return line.
 *
 * Not printed, as print(graph) has no place for them: tuple/SymInt/scalar meta, node flags,
 * the dump's declared user count (the live count is printed), stack traces, module paths,
 * provenance, graph titles. A known dtype prints its canonical name (str(torch.long) is
 * "torch.int64"). Our JSON (ox_json.c) is the lossless format.
 *
 * Requires: a graph whose live nodes reference valid ids (a dangling id is printed as
 * "%<invalid>", never followed). Preserves: the graph (read-only).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "load/ox_parse.h"
#include "write/ox_write.h"

/* ------------------------------------------------------------------ strings */

static bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

/* Words that print(graph) uses for non-string atoms, and device type names. */
static const char *const reserved_words[] = {
  "None", "True", "False", "inf", "nan", "Ellipsis", "cpu", "cuda", "meta", "mps", "xpu", "npu", "hpu",
  "xla", "lazy", "ipu", "mtia", "vulkan", "privateuseone", NULL,
};

/* True when s printed bare reads back as the same string. */
static bool str_is_safe_bare(const char *s) {
  if (!s || !is_ident_start(s[0])) return false;
  for (const char *p = s; *p; p++)
    if (!is_ident_char(*p)) return false;
  for (size_t i = 0; reserved_words[i]; i++)
    if (strcmp(s, reserved_words[i]) == 0) return false;
  /* sympy symbols as printed in dumps: s0, u3, ... */
  if ((s[0] == 's' || s[0] == 'u') && is_digit(s[1])) {
    const char *p = s + 1;
    while (is_digit(*p)) p++;
    if (!*p) return false;
  }
  return true;
}

/* Python repr() of a str: single quotes unless the text holds ' and no ". */
static void put_pystr(OxBuf *b, const char *s) {
  char q = (strchr(s, '\'') && !strchr(s, '"')) ? '"' : '\'';
  ox_buf_putc(b, q);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '\\': ox_buf_puts(b, "\\\\"); break;
    case '\n': ox_buf_puts(b, "\\n"); break;
    case '\r': ox_buf_puts(b, "\\r"); break;
    case '\t': ox_buf_puts(b, "\\t"); break;
    default:
      if (*p == (unsigned char)q)
        ox_buf_printf(b, "\\%c", q);
      else if (*p < 0x20 || *p == 0x7f)
        ox_buf_printf(b, "\\x%02x", *p);
      else
        ox_buf_putc(b, (char)*p);
    }
  }
  ox_buf_putc(b, q);
}

static void put_str_atom(OxBuf *b, const char *s) {
  if (!s) s = "";
  if (str_is_safe_bare(s))
    ox_buf_puts(b, s);
  else
    put_pystr(b, s);
}

/* ------------------------------------------------------------------ values */

typedef enum { NODES_PERCENT, NODES_BARE } NodeStyle;

static void put_value(const OxGraph *g, const OxValue *v, NodeStyle ns, OxBuf *b);

static void put_seq(const OxGraph *g, const OxValue *v, NodeStyle ns, OxBuf *b) {
  for (uint32_t i = 0; i < v->n; i++) {
    if (i) ox_buf_puts(b, ", ");
    put_value(g, &v->u.items[i], ns, b);
  }
}

static void put_value(const OxGraph *g, const OxValue *v, NodeStyle ns, OxBuf *b) {
  switch ((OxValueKind)v->kind) {
  case OX_V_NONE: ox_buf_puts(b, "None"); return;
  case OX_V_BOOL: ox_buf_puts(b, v->u.b ? "True" : "False"); return;
  case OX_V_INT: ox_buf_put_i64(b, v->u.i); return;
  case OX_V_FLOAT: ox_buf_put_pyfloat(b, v->u.f); return;
  case OX_V_STR: put_str_atom(b, v->s); return;
  case OX_V_NODE: {
    const char *name = ox_graph_ref_name(g, v->u.node);
    if (ns == NODES_PERCENT) ox_buf_putc(b, '%');
    ox_buf_puts(b, name ? name : "<invalid>");
    return;
  }
  case OX_V_DTYPE:
    /* str(torch.float) is "torch.float32": a known dtype prints its canonical name */
    if (v->u.dtype == OX_DT_UNKNOWN && v->s)
      ox_buf_puts(b, v->s);
    else
      ox_buf_puts(b, ox_dtype_torch_name((OxDType)v->u.dtype));
    return;
  case OX_V_DEVICE:
    if (v->s && !ox_fx_device_reads_bare(v->s)) {
      /* a device the loader does not know by name (device(type='ipu') in a dump): torch's own
       * spelling, which reads back as a device; text of another shape stays as it is */
      const char *c = strchr(v->s, ':');
      size_t tn = c ? (size_t)(c - v->s) : strlen(v->s);
      bool ok = tn > 0 && tn <= 40 && (!c || (c[1] && strlen(c + 1) <= 6));
      for (size_t i = 0; ok && i < tn; i++) {
        unsigned char ch = (unsigned char)v->s[i];
        ok = ch == '_' || ch >= 0x80 || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
      }
      for (const char *q = c ? c + 1 : ""; ok && *q; q++) ok = *q >= '0' && *q <= '9';
      if (ok) {
        ox_buf_printf(b, "device(type='%.*s'", (int)tn, v->s);
        if (c) ox_buf_printf(b, ", index=%s", c + 1);
        ox_buf_putc(b, ')');
        return;
      }
    }
    ox_buf_puts(b, v->s ? v->s : "");
    return;
  case OX_V_SYM:
  case OX_V_ENUM:
  case OX_V_RAW: ox_buf_puts(b, v->s ? v->s : ""); return;
  case OX_V_ELLIPSIS: ox_buf_puts(b, "Ellipsis"); return;
  case OX_V_LIST:
    ox_buf_putc(b, '[');
    put_seq(g, v, ns, b);
    ox_buf_putc(b, ']');
    return;
  case OX_V_TUPLE:
    ox_buf_putc(b, '(');
    put_seq(g, v, ns, b);
    if (v->n == 1) ox_buf_putc(b, ',');
    ox_buf_putc(b, ')');
    return;
  case OX_V_SLICE:
    ox_buf_puts(b, "slice(");
    put_seq(g, v, ns, b);
    ox_buf_putc(b, ')');
    return;
  case OX_V_DICT:
    ox_buf_putc(b, '{');
    for (uint32_t i = 0; i < v->n; i++) {
      if (i) ox_buf_puts(b, ", ");
      /* keys print bare (torch.fx writes f"{k}: ..."); quote only what would not read back */
      const char *k = v->keys[i] ? v->keys[i] : "";
      bool bare = k[0] != 0;
      for (const char *p = k; *p && bare; p++)
        if (!is_ident_char(*p)) bare = false;
      if (bare)
        ox_buf_puts(b, k);
      else
        put_pystr(b, k);
      ox_buf_puts(b, ": ");
      put_value(g, &v->u.items[i], ns, b);
    }
    ox_buf_putc(b, '}');
    return;
  }
  ox_buf_puts(b, "None"); /* unreachable for a well-formed value */
}

void ox_write_fx_value(const OxGraph *g, const OxValue *v, OxBuf *out) { put_value(g, v, NODES_PERCENT, out); }

/* ------------------------------------------------------------------ nodes and graphs */

static void put_indent(OxBuf *b, int n) {
  for (int i = 0; i < n; i++) ox_buf_putc(b, ' ');
}

static void write_graph(const OxGraph *g, const char *header, int indent, OxBuf *b);

static void write_node(const OxGraph *g, const OxNode *n, int indent, OxBuf *b) {
  put_indent(b, indent);
  if (n->op == OX_OP_OUTPUT) {
    /* torch.fx prints str(args[0]): nodes by bare name */
    ox_buf_puts(b, "return ");
    if (n->args.kind == OX_V_TUPLE && n->args.n >= 1)
      put_value(g, &n->args.u.items[0], NODES_BARE, b);
    else
      ox_buf_puts(b, "None");
    ox_buf_putc(b, '\n');
    return;
  }
  ox_buf_putc(b, '%');
  ox_buf_puts(b, n->name);
  ox_buf_puts(b, " : ");
  const OxTensorMeta *t = ox_node_tensor_meta(n);
  if (t) {
    char ann[512];
    int len = ox_tensor_meta_format(t, true, true, ann, sizeof ann);
    ox_buf_puts(b, n->type_ann ? n->type_ann : "Tensor");
    ox_buf_puts(b, " \"");
    if (len >= 0 && (size_t)len < sizeof ann) {
      ox_buf_puts(b, ann);
    } else {
      /* a huge symbolic shape: format again into a buffer of the right size */
      OxBuf big;
      ox_buf_init(&big);
      ox_buf_reserve(&big, (size_t)len + 1);
      ox_tensor_meta_format(t, true, true, big.data, (size_t)len + 1);
      ox_buf_puts(b, big.data);
      ox_buf_free(&big);
    }
    ox_buf_putc(b, '"');
  } else if (n->type_ann) {
    ox_buf_puts(b, n->type_ann);
    ox_buf_putc(b, ' ');
  }
  ox_buf_puts(b, "[num_users=");
  ox_buf_put_i64(b, n->n_users);
  ox_buf_puts(b, "] = ");
  ox_buf_puts(b, ox_op_name((OxOp)n->op));
  ox_buf_puts(b, "[target=");
  ox_buf_puts(b, n->target ? n->target : "");
  ox_buf_putc(b, ']');
  switch ((OxOp)n->op) {
  case OX_OP_PLACEHOLDER:
    if (n->default_value) ox_buf_printf(b, "(default=%s)", n->default_value);
    break;
  case OX_OP_GET_ATTR: break;
  default:
    ox_buf_puts(b, "(args = ");
    put_value(g, &n->args, NODES_PERCENT, b);
    ox_buf_puts(b, ", kwargs = ");
    put_value(g, &n->kwargs, NODES_PERCENT, b);
    ox_buf_putc(b, ')');
    break;
  }
  ox_buf_putc(b, '\n');
}

static bool owner_is_live(const OxGraph *g, const char *owner) {
  if (!owner) return false;
  OxNodeId id = ox_graph_find(g, owner);
  return id != 0;
}

static void write_graph(const OxGraph *g, const char *header, int indent, OxBuf *b) {
  put_indent(b, indent);
  ox_buf_puts(b, header);
  ox_buf_putc(b, '\n');
  int ni = indent + 4;
  bool orphans_done = false;
  OX_GRAPH_FOREACH(g, id) {
    const OxNode *n = &g->nodes[id];
    if (n->op == OX_OP_OUTPUT && !orphans_done) {
      for (uint32_t i = 0; i < g->n_subgraphs; i++)
        if (!owner_is_live(g, g->subgraphs[i]->sub_owner))
          write_graph(g->subgraphs[i], "lowered graph():", ni + 4, b);
      orphans_done = true;
    }
    write_node(g, n, ni, b);
    ox_buf_drain(b); /* a streaming output (ox_buf_stream_to) takes what is final */
    for (uint32_t i = 0; i < g->n_subgraphs; i++) {
      const char *owner = g->subgraphs[i]->sub_owner;
      if (owner && strcmp(owner, n->name) == 0) write_graph(g->subgraphs[i], "lowered graph():", ni + 4, b);
    }
  }
  if (!orphans_done)
    for (uint32_t i = 0; i < g->n_subgraphs; i++)
      if (!owner_is_live(g, g->subgraphs[i]->sub_owner))
        write_graph(g->subgraphs[i], "lowered graph():", ni + 4, b);
}

void ox_write_fx_text(const OxGraph *g, OxBuf *out) { write_graph(g, "graph():", 0, out); }
