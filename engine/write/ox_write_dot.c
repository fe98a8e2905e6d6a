/* ox_write_dot.c - a graph as Graphviz DOT with HTML-like labels.
 *
 * One DOT node per live node, named "n<id>" so node names never need DOT quoting and the
 * output does not depend on name spelling; the label shows the node name (bold), a short
 * target (torch.ops.aten. prefix and .default overload stripped) and the tensor meta when
 * known. Edges run from each distinct input to its user, in program order, so the output is
 * deterministic: the same graph always gives byte-identical text (ids, order and meta are
 * the only inputs; no pointers, hashes or clocks).
 *
 * Everything user-controlled (names, targets, meta text, graph title) passes through
 * html_escape or comment_safe: DOT is parsed by Graphviz, and a stray '<', '&', quote or
 * invalid UTF-8 byte would otherwise break the parse or inject markup. Record shapes are
 * never used (their field syntax would need a second escaping scheme).
 *
 * Fill colour comes from a coarse op family guessed from the target name; the op table of a
 * later issue replaces op_family_of. Nested subgraphs are not drawn: they are listed in a
 * comment and their owning node says so in its label.
 *
 * Requires: a graph whose live nodes reference valid ids (references to erased or unknown
 * ids are skipped, never followed). Preserves: the graph (ox_graph_inputs only touches the
 * graph's private mark scratch).
 */
#include "write/ox_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "layout/ox_layout.h"

/* ------------------------------------------------------------------ escaping */

/* Length of the valid UTF-8 sequence starting at s (1..4), or 0 if s does not start one. */
static size_t utf8_seq_len(const unsigned char *s) {
  unsigned char c = s[0];
  size_t n;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) n = 3;
  else if (c >= 0xf0 && c <= 0xf4) n = 4;
  else return 0;
  for (size_t i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  /* reject overlong 3/4-byte forms, surrogates and code points past U+10FFFF */
  if (n == 3 && c == 0xe0 && s[1] < 0xa0) return 0;
  if (n == 3 && c == 0xed && s[1] >= 0xa0) return 0;
  if (n == 4 && c == 0xf0 && s[1] < 0x90) return 0;
  if (n == 4 && c == 0xf4 && s[1] >= 0x90) return 0;
  return n;
}

/* Appends at most max_bytes of s (cut on a character boundary, "..." marks a cut) as text
 * for an HTML-like label: markup characters become entities, control characters a space,
 * bytes that are not UTF-8 a '?'. */
static void html_escape(OxBuf *b, const char *s, size_t max_bytes) {
  const unsigned char *p = (const unsigned char *)s;
  size_t used = 0;
  while (*p) {
    size_t n = utf8_seq_len(p);
    if (used + (n ? n : 1) > max_bytes) {
      ox_buf_puts(b, "...");
      return;
    }
    if (n == 0) {
      ox_buf_putc(b, '?');
      p++;
      used++;
      continue;
    }
    if (n == 1) {
      switch (*p) {
      case '<': ox_buf_puts(b, "&lt;"); break;
      case '>': ox_buf_puts(b, "&gt;"); break;
      case '&': ox_buf_puts(b, "&amp;"); break;
      case '"': ox_buf_puts(b, "&quot;"); break;
      case '\'': ox_buf_puts(b, "&#39;"); break;
      default: ox_buf_putc(b, (*p < 0x20 || *p == 0x7f) ? ' ' : (char)*p); break;
      }
    } else {
      ox_buf_append(b, (const char *)p, n);
    }
    p += n;
    used += n;
  }
}

/* Appends s inside a DOT double-quoted escString (tooltips): quote and backslash escaped,
 * control characters and invalid UTF-8 replaced, so the string can neither end early nor
 * start an escape sequence of its own. */
static void dot_quoted(OxBuf *b, const char *s, size_t max_bytes) {
  const unsigned char *p = (const unsigned char *)s;
  size_t used = 0;
  ox_buf_putc(b, '"');
  while (*p && used < max_bytes) {
    size_t n = utf8_seq_len(p);
    if (n == 0) {
      ox_buf_putc(b, '?');
      p++;
      used++;
      continue;
    }
    if (n == 1) {
      if (*p == '"' || *p == '\\') ox_buf_putc(b, '\\');
      ox_buf_putc(b, (*p < 0x20 || *p == 0x7f) ? ' ' : (char)*p);
    } else {
      ox_buf_append(b, (const char *)p, n);
    }
    p += n;
    used += n;
  }
  if (*p) ox_buf_puts(b, "...");
  ox_buf_putc(b, '"');
}

/* Text for a "//" comment line: anything that could end the line or confuse a reader is
 * replaced by a space. */
static void comment_safe(OxBuf *b, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    ox_buf_putc(b, (*p < 0x20 || *p == 0x7f || *p >= 0x80) ? '?' : (char)*p);
}

/* ------------------------------------------------------------------ op families */

typedef enum DotFamily {
  FAM_INPUT = 0, /* placeholder, get_attr */
  FAM_OUTPUT,
  FAM_MATMUL,    /* mm, addmm, linear, conv, attention, embedding */
  FAM_NORM,      /* layer/batch/group/rms norm, softmax */
  FAM_ELEMENTWISE,
  FAM_PLUMBING,  /* split, cat, stack, unbind, getitem, gather/scatter-like indexing */
  FAM_VIEW,      /* view, reshape, permute, transpose, expand, slice ... */
  FAM_REDUCTION, /* sum, mean, amax, var, pooling ... */
  FAM_OTHER,
  FAM_COUNT
} DotFamily;

static const struct {
  const char *cls;  /* SVG class, so a stylesheet or a test can find the family */
  const char *fill;
} family_style[FAM_COUNT] = {
  [FAM_INPUT] = {"ox-input", "#dbe9f9"},
  [FAM_OUTPUT] = {"ox-output", "#d9d9d9"},
  [FAM_MATMUL] = {"ox-matmul", "#f8c8a0"},
  [FAM_NORM] = {"ox-norm", "#d9caf2"},
  [FAM_ELEMENTWISE] = {"ox-elementwise", "#cdebc5"},
  [FAM_PLUMBING] = {"ox-plumbing", "#fbe7a1"},
  [FAM_VIEW] = {"ox-view", "#c9ebeb"},
  [FAM_REDUCTION] = {"ox-reduction", "#f5c6d5"},
  [FAM_OTHER] = {"ox-other", "#ffffff"},
};

static bool in_list(const char *s, const char *const *list) {
  for (; *list; list++)
    if (strcmp(s, *list) == 0) return true;
  return false;
}

static bool starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The bare op name of a target, lower-cased into buf: "torch.ops.aten.add.Tensor" -> "add",
 * "aten._native_batch_norm_legit.no_stats" -> "native_batch_norm_legit",
 * "torch.nn.functional.linear" -> "linear", "operator.getitem" -> "getitem",
 * "torch.nn.modules.conv.Conv2d" -> "conv2d". Leading/trailing underscores (private and
 * in-place spellings) and a "_backward" suffix are dropped: a backward op belongs to the
 * family of its forward op. */
static void op_base_name(const char *target, char *buf, size_t cap) {
  const char *parts[16];
  size_t lens[16];
  size_t np = 0;
  const char *p = target;
  while (np < 16) {
    const char *dot = strchr(p, '.');
    parts[np] = p;
    lens[np] = dot ? (size_t)(dot - p) : strlen(p);
    np++;
    if (!dot) break;
    p = dot + 1;
  }
  size_t pick = np - 1;
  /* namespaced operator overloads: [prefix.]ops.NS.OP[.OVERLOAD] or aten.OP[.OVERLOAD]
   * (edge dialect: executorch.exir.dialects.edge._ops.aten.OP.OVERLOAD) */
  for (size_t i = 0; i + 1 < np; i++) {
    bool ns = (lens[i] == 4 && memcmp(parts[i], "aten", 4) == 0) ||
              (lens[i] == 5 && memcmp(parts[i], "prims", 5) == 0) ||
              (lens[i] == 9 && memcmp(parts[i], "quantized", 9) == 0);
    if (ns) {
      pick = i + 1;
      break;
    }
  }
  const char *s = parts[pick];
  size_t n = lens[pick];
  while (n && *s == '_') s++, n--;
  while (n && s[n - 1] == '_') n--;
  if (n > 9 && memcmp(s + n - 9, "_backward", 9) == 0) n -= 9;
  if (n >= cap) n = cap - 1;
  for (size_t i = 0; i < n; i++) buf[i] = (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] - 'A' + 'a' : s[i]);
  buf[n] = 0;
}

/* Guess a family from a target (or module class) name. A heuristic on spellings only:
 * the op table of a later issue replaces it. */
static DotFamily op_family(const char *target) {
  static const char *const plumbing[] = {
    "split", "split_with_sizes", "chunk", "tensor_split", "cat", "concat", "concatenate", "stack",
    "hstack", "vstack", "unbind", "getitem", "gather", "scatter", "scatter_add", "index", "index_select",
    "index_put", "index_add", "index_copy", "slice_scatter", "select_scatter", "masked_select",
    "unsafe_index", "pad", "constant_pad_nd", "repeat", "tile", "roll", "flip", NULL};
  static const char *const view[] = {
    "view", "reshape", "unsafe_view", "permute", "transpose", "t", "expand", "expand_as", "unsqueeze",
    "squeeze", "flatten", "unflatten", "contiguous", "view_as", "reshape_as", "movedim", "swapaxes",
    "as_strided", "alias", "slice", "select", "narrow", "unfold", "detach", "view_copy", "permute_copy",
    "expand_copy", "squeeze_copy", "unsqueeze_copy", "t_copy", "transpose_copy", "slice_copy",
    "select_copy", "alias_copy", NULL};
  static const char *const reduction[] = {
    "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "var", "var_mean", "std",
    "std_mean", "logsumexp", "any", "all", "norm", "linalg_vector_norm", "count_nonzero", "cumsum",
    "cumprod", "topk", "sort", "nansum", "embedding_bag_sum", NULL};
  static const char *const matmul[] = {
    "mm", "bmm", "addmm", "addbmm", "baddbmm", "matmul", "linear", "mv", "dot", "einsum", "tensordot",
    "outer", "fc", "convolution", "embedding", "embedding_bag", "flex_attention", "addmv", NULL};
  static const char *const elementwise[] = {
    "add", "sub", "rsub", "mul", "div", "truediv", "floordiv", "mod", "remainder", "fmod", "neg", "pos",
    "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "pow", "reciprocal",
    "sign", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "erf", "erfc",
    "erfinv", "floor", "ceil", "round", "trunc", "frac", "relu", "relu6", "gelu", "silu", "sigmoid",
    "hardswish", "hardsigmoid", "hardtanh", "leaky_relu", "elu", "selu", "celu", "mish", "softplus",
    "softsign", "tanhshrink", "threshold", "prelu", "glu", "dropout", "native_dropout", "feature_dropout",
    "where", "clamp", "clamp_min", "clamp_max", "clip", "maximum", "minimum", "eq", "ne", "lt", "le", "gt",
    "ge", "logical_and", "logical_or", "logical_not", "logical_xor", "bitwise_and", "bitwise_or",
    "bitwise_not", "bitwise_xor", "and", "or", "xor", "invert", "masked_fill", "lerp", "addcmul",
    "addcdiv", "copy", "fill", "zeros_like", "ones_like", "full_like", "empty_like", "rand_like",
    "randn_like", "isnan", "isinf", "nan_to_num", "square", "iadd", "imul", "isub", "itruediv",
    "clone", "to_copy", "to", "type_as", "float", "half", "bfloat16", NULL};
  char base[96];
  op_base_name(target, base, sizeof base);
  if (in_list(base, plumbing)) return FAM_PLUMBING;
  if (in_list(base, view)) return FAM_VIEW;
  if (in_list(base, reduction) || strstr(base, "pool")) return FAM_REDUCTION;
  if (strstr(base, "norm") || strstr(base, "softmax") || in_list(base, (const char *const[]){"bn", "ln", NULL}))
    return FAM_NORM;
  if (in_list(base, matmul) || starts_with(base, "conv") || starts_with(base, "linear") ||
      strstr(base, "attention") || strstr(base, "dot_product"))
    return FAM_MATMUL;
  if (in_list(base, elementwise)) return FAM_ELEMENTWISE;
  return FAM_OTHER;
}

/* call_module targets are module paths ("layer1.0.conv1"): classify by the module class when
 * the dump names it, else by the last path component without its trailing digits. */
static DotFamily node_family(const OxNode *n) {
  switch ((OxOp)n->op) {
  case OX_OP_PLACEHOLDER:
  case OX_OP_GET_ATTR: return FAM_INPUT;
  case OX_OP_OUTPUT: return FAM_OUTPUT;
  case OX_OP_CALL_MODULE: {
    if (n->module_type) return op_family(n->module_type);
    const char *t = n->target ? n->target : "";
    const char *leaf = strrchr(t, '.');
    leaf = leaf ? leaf + 1 : t;
    char tmp[96];
    size_t len = strlen(leaf);
    if (len >= sizeof tmp) len = sizeof tmp - 1;
    memcpy(tmp, leaf, len);
    while (len && ((tmp[len - 1] >= '0' && tmp[len - 1] <= '9') || tmp[len - 1] == '_')) len--;
    tmp[len] = 0;
    return op_family(tmp);
  }
  default: return op_family(n->target ? n->target : "");
  }
}

/* ------------------------------------------------------------------ labels */

/* "torch.ops.aten.addmm.default" -> "addmm", "torch.ops.aten.add.Tensor" -> "add.Tensor". */
void ox_short_target(const char *t, char *buf, size_t cap) {
  static const char *const prefixes[] = {"torch.ops.aten.", "aten.", NULL};
  for (const char *const *p = prefixes; *p; p++)
    if (starts_with(t, *p)) {
      t += strlen(*p);
      break;
    }
  size_t n = strlen(t);
  if (n > 8 && strcmp(t + n - 8, ".default") == 0) n -= 8;
  if (n >= cap) n = cap - 1;
  memcpy(buf, t, n);
  buf[n] = 0;
}

/* Formats one node's meta ("f32[8, 16]", "(f32[4], f32[4])", "sym s0"); empty if unknown. */
void ox_meta_text(const OxMeta *m, char *buf, size_t cap) {
  buf[0] = 0;
  if (m->kind == OX_META_TENSOR && m->n >= 1) {
    ox_tensor_meta_format(&m->t[0], false, false, buf, cap);
  } else if (m->kind == OX_META_TUPLE && m->n >= 1) {
    size_t o = 0;
    o += (size_t)snprintf(buf, cap, "(");
    for (uint32_t i = 0; i < m->n && o < cap; i++) {
      char one[160];
      ox_tensor_meta_format(&m->t[i], false, false, one, sizeof one);
      o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", one);
    }
    if (o < cap) snprintf(buf + o, cap - o, m->n == 1 ? ",)" : ")");
  } else if (m->kind == OX_META_SYMINT && m->sym) {
    snprintf(buf, cap, "sym %s", m->sym);
  }
}

static bool is_getitem(const char *t) {
  return t && (strcmp(t, "operator.getitem") == 0 || strcmp(t, "_operator.getitem") == 0);
}

/* The shape that flows along producer -> user: the element a getitem picks out of a tuple
 * producer, else the producer's own meta. */
static void edge_text(const OxNode *producer, const OxNode *user, char *buf, size_t cap) {
  buf[0] = 0;
  if (producer->meta.kind == OX_META_TUPLE && user->op == OX_OP_CALL_FUNCTION && is_getitem(user->target) &&
      user->args.n == 2 && user->args.u.items[1].kind == OX_V_INT) {
    int64_t k = user->args.u.items[1].u.i, cnt = producer->meta.n;
    if (k < 0) k += cnt;
    if (k >= 0 && k < cnt) {
      ox_tensor_meta_format(&producer->meta.t[k], false, false, buf, cap);
      return;
    }
  }
  ox_meta_text(&producer->meta, buf, cap);
}

static uint32_t count_live(const OxGraph *g) {
  uint32_t n = 0;
  OX_GRAPH_FOREACH(g, id) n++;
  return n;
}

/* A collapsed cluster of an overview graph (ox_view_overview: call_module "PATH [N nodes]"). */
static bool is_cluster_node(const OxNode *n) {
  return n->op == OX_OP_CALL_MODULE && n->module_type && strcmp(n->module_type, "cluster") == 0 && n->target;
}

/* The label's second line; false when it would only repeat the name ("x" / "input"). */
static bool target_line(const OxNode *n, char *tshort, size_t cap) {
  const char *name = n->name ? n->name : "";
  const char *target = n->target ? n->target : "";
  if (n->op == OX_OP_PLACEHOLDER)
    snprintf(tshort, cap, "%s", (n->flags & OX_NODE_EXTERNAL) ? "input (external)" : "input");
  else if (n->op == OX_OP_OUTPUT)
    snprintf(tshort, cap, "output");
  else if (n->op == OX_OP_GET_ATTR)
    snprintf(tshort, cap, "attr %s", target);
  else if (n->op == OX_OP_CALL_METHOD)
    snprintf(tshort, cap, ".%s()", target);
  else if (n->op == OX_OP_CALL_MODULE && n->module_type) {
    const char *cls = strrchr(n->module_type, '.');
    snprintf(tshort, cap, "%s: %s", target, cls ? cls + 1 : n->module_type);
  } else
    ox_short_target(target, tshort, cap);
  /* skip a line that would only repeat the name ("x" / "input", "output" / "output") */
  bool repeat = (n->op == OX_OP_PLACEHOLDER && strcmp(name, target) == 0 && !(n->flags & OX_NODE_EXTERNAL)) ||
                (n->op == OX_OP_OUTPUT && strcmp(name, "output") == 0);
  return !repeat;
}

/* Text as html_escape would cut it: at most max bytes. */
static double cut_width(const char *s, size_t max, double pt) {
  char tmp[256];
  size_t n = strlen(s);
  if (n > max) n = max;
  if (n >= sizeof tmp) n = sizeof tmp - 1;
  memcpy(tmp, s, n);
  tmp[n] = 0;
  return ox_layout_text_width(tmp, pt);
}

void ox_write_dot_node_size(const OxGraph *g, const OxDotOptions *opt, OxNodeId id, double *w, double *h) {
  const OxNode *n = &g->nodes[id];
  /* bold 11 pt name (bold runs ~12 % wider), 11 pt target, 9 pt meta, 0.10 x 0.05 in margins */
  double tw = cut_width(n->name ? n->name : "", 64, 11) * 1.12, th = 15;
  char t[256];
  if (target_line(n, t, sizeof t)) {
    double x = cut_width(t, 64, 11);
    if (x > tw) tw = x;
    th += 15;
  }
  char meta[512];
  ox_meta_text(&n->meta, meta, sizeof meta);
  if (meta[0]) {
    double x = cut_width(meta, 96, 9);
    if (x > tw) tw = x;
    th += 13;
  }
  if (opt && opt->n_params && opt->n_params[id]) th += 13;
  *w = tw + 14.4 + 8;
  *h = th + 7.2 + 4;
}

/* ------------------------------------------------------------------ highlight marks */

static const struct {
  const char *cls;   /* SVG class */
  const char *label; /* legend */
  uint32_t rgb;      /* default border colour */
} mark_style[OX_DOT_MARKS] = {
  [OX_DOT_MARK_NONE] = {NULL, NULL, 0x555555},
  [OX_DOT_MARK_MATCHED] = {"ox-matched", "matched", 0x1f5fbf},
  [OX_DOT_MARK_REMOVED] = {"ox-removed", "removed by the step", 0xc62828},
  [OX_DOT_MARK_ADDED] = {"ox-added", "added by the step", 0x2e7d32},
  [OX_DOT_MARK_ANCHOR] = {"ox-anchor", "anchor", 0xe66100},
  [OX_DOT_MARK_DIMMED] = {"ox-dimmed", "untouched", 0xb0b0b0},
};

static uint32_t mark_rgb(const OxDotOptions *opt, uint8_t m) {
  return opt && opt->mark_rgb ? opt->mark_rgb[m] & 0xffffffu : mark_style[m].rgb;
}

/* "#rrggbb" of a family's fill faded towards white (untouched nodes of a step) */
static uint32_t fade_rgb(uint32_t rgb) {
  uint32_t r = (rgb >> 16) & 0xff, g = (rgb >> 8) & 0xff, b = rgb & 0xff;
  r = (r * 35 + 255 * 65) / 100;
  g = (g * 35 + 255 * 65) / 100;
  b = (b * 35 + 255 * 65) / 100;
  return (r << 16) | (g << 8) | b;
}

static uint32_t parse_rgb(const char *hex) { return (uint32_t)strtoul(hex + 1, NULL, 16); }

static void write_node(const OxGraph *g, const OxNode *n, const OxDotOptions *opt, OxBuf *out) {
  DotFamily fam = node_family(n);
  const char *name = n->name ? n->name : "";
  const char *target = n->target ? n->target : "";
  uint8_t mark = opt && opt->highlight ? opt->highlight[n->id] : 0;
  if (mark >= OX_DOT_MARKS) mark = 0;
  uint32_t given = opt && opt->fill ? opt->fill[n->id] : 0;
  uint32_t fill = given ? given & 0xffffffu : parse_rgb(family_style[fam].fill);
  if (!given && mark == OX_DOT_MARK_DIMMED) fill = fade_rgb(fill);
  ox_buf_printf(out, "  n%u [class=\"%s%s%s\", fillcolor=\"#%06x\"", n->id, family_style[fam].cls,
                mark ? " " : "", mark ? mark_style[mark].cls : "", fill);
  switch (mark) {
  case OX_DOT_MARK_MATCHED: ox_buf_printf(out, ", color=\"#%06x\", penwidth=3", mark_rgb(opt, mark)); break;
  case OX_DOT_MARK_REMOVED:
    ox_buf_printf(out, ", color=\"#%06x\", penwidth=3, style=\"rounded,filled,dashed\"", mark_rgb(opt, mark));
    break;
  case OX_DOT_MARK_ADDED:
    ox_buf_printf(out, ", color=\"#%06x\", penwidth=3, style=\"rounded,filled,bold\"", mark_rgb(opt, mark));
    break;
  case OX_DOT_MARK_ANCHOR: ox_buf_printf(out, ", color=\"#%06x\", penwidth=4, peripheries=2", mark_rgb(opt, mark)); break;
  case OX_DOT_MARK_DIMMED: ox_buf_printf(out, ", color=\"#%06x\", fontcolor=\"#808080\"", mark_rgb(opt, mark)); break;
  default: break;
  }
  const OxLayout *lay = opt ? opt->layout : NULL;
  int32_t li = lay ? ox_layout_find(lay, n->id) : -1;
  if (li >= 0) {
    const OxLayoutNode *b = &lay->nodes[li];
    ox_buf_printf(out, ", pos=\"%.2f,%.2f!\", width=%.3f, height=%.3f", b->x, lay->height - b->y, b->w / 72.0,
                  b->h / 72.0);
  }
  ox_buf_puts(out, ", tooltip=");
  {
    OxBuf tip;
    ox_buf_init(&tip);
    ox_buf_printf(&tip, "%s = %s[%s]", name, ox_op_name((OxOp)n->op), target);
    dot_quoted(out, tip.data, 400);
    ox_buf_free(&tip);
  }
  ox_buf_puts(out, ", label=<<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">");
  if (is_cluster_node(n)) {
    /* an overview's collapsed cluster: its label, then its size */
    const char *br = strrchr(target, '[');
    size_t len = br && br > target ? (size_t)(br - target - 1) : strlen(target);
    char label[300];
    snprintf(label, sizeof label, "%.*s", (int)(len < sizeof label ? len : sizeof label - 1), target);
    ox_buf_puts(out, "<TR><TD><B>");
    html_escape(out, label, 96);
    ox_buf_puts(out, "</B></TD></TR><TR><TD>");
    html_escape(out, br ? br + 1 : "", 40);
    if (out->len && out->data[out->len - 1] == ']') out->len--;
    ox_buf_puts(out, "</TD></TR></TABLE>>];\n");
    return;
  }
  ox_buf_puts(out, "<TR><TD><B>");
  html_escape(out, name, 64);
  ox_buf_puts(out, "</B></TD></TR>");
  char tshort[256];
  if (target_line(n, tshort, sizeof tshort)) {
    ox_buf_puts(out, "<TR><TD>");
    html_escape(out, tshort, 64);
    ox_buf_puts(out, "</TD></TR>");
  }
  char meta[512];
  ox_meta_text(&n->meta, meta, sizeof meta);
  if (meta[0]) {
    ox_buf_puts(out, "<TR><TD><FONT POINT-SIZE=\"9\">");
    html_escape(out, meta, 96);
    ox_buf_puts(out, "</FONT></TD></TR>");
  }
  uint16_t np = opt && opt->n_params ? opt->n_params[n->id] : 0;
  if (np) {
    ox_buf_printf(out, "<TR><TD><FONT POINT-SIZE=\"9\" COLOR=\"#5e5c64\"><I>+%u param%s</I></FONT></TD></TR>", np,
                  np == 1 ? "" : "s");
  }
  for (uint32_t i = 0; i < g->n_subgraphs; i++) {
    const OxGraph *sub = g->subgraphs[i];
    if (sub->sub_owner && strcmp(sub->sub_owner, name) == 0) {
      char s[128];
      snprintf(s, sizeof s, "subgraph: %u nodes (not drawn)", count_live(sub));
      ox_buf_puts(out, "<TR><TD><FONT POINT-SIZE=\"9\"><I>");
      html_escape(out, s, sizeof s);
      ox_buf_puts(out, "</I></FONT></TD></TR>");
    }
  }
  ox_buf_puts(out, "</TABLE>>];\n");
}

/* A layout's edges sorted by (from, to), for find_edge. */
typedef struct EdgeKey {
  OxNodeId from, to;
  uint32_t i;
} EdgeKey;

static int cmp_edge_key(const void *a, const void *b) {
  const EdgeKey *x = a, *y = b;
  if (x->from != y->from) return x->from < y->from ? -1 : 1;
  return x->to < y->to ? -1 : x->to > y->to;
}

static EdgeKey *edge_index(const OxLayout *l) {
  EdgeKey *idx = ox_xcalloc(l->n_edges + 1, sizeof *idx);
  for (uint32_t i = 0; i < l->n_edges; i++) idx[i] = (EdgeKey){l->edges[i].from, l->edges[i].to, i};
  qsort(idx, l->n_edges, sizeof *idx, cmp_edge_key);
  return idx;
}

static const OxLayoutEdge *find_edge(const OxLayout *l, const EdgeKey *idx, OxNodeId from, OxNodeId to) {
  EdgeKey k = {from, to, 0};
  const EdgeKey *e = bsearch(&k, idx, l->n_edges, sizeof *idx, cmp_edge_key);
  return e ? &l->edges[e->i] : NULL;
}

/* The legend: one row per mark present in the drawing (and per fill the caller names), as an
 * HTML-like table node of class ox-legend; beside a given layout (its bb widened to hold it),
 * else wherever dot puts it. */
static void write_legend(const OxGraph *g, const OxDotOptions *opt, const uint8_t *inc, OxBuf *out, double *bb_w) {
  bool used[OX_DOT_MARKS] = {false};
  uint32_t rows = 0;
  OX_GRAPH_FOREACH(g, id) {
    if (inc && !inc[id]) continue;
    uint8_t m = opt->highlight ? opt->highlight[id] : 0;
    if (m && m < OX_DOT_MARKS && !used[m]) {
      used[m] = true;
      rows++;
    }
  }
  rows += opt->n_legend_fills;
  if (!rows) return;
  const double row_h = 17, lw = 150, lh = rows * row_h + 10;
  ox_buf_puts(out, "  ox_legend [class=\"ox-legend\", shape=plaintext, style=\"\", margin=0");
  const OxLayout *lay = opt->layout;
  if (lay) {
    ox_buf_printf(out, ", pos=\"%.2f,%.2f!\", width=%.3f, height=%.3f", *bb_w + 16 + lw / 2, lay->height - lh / 2,
                  lw / 72.0, lh / 72.0);
    *bb_w += lw + 24;
  }
  ox_buf_puts(out, ", label=<<TABLE BORDER=\"1\" COLOR=\"#9a9996\" BGCOLOR=\"#ffffff\" CELLBORDER=\"0\" "
                   "CELLSPACING=\"2\" CELLPADDING=\"2\">");
  static const uint8_t order[] = {OX_DOT_MARK_ANCHOR, OX_DOT_MARK_MATCHED, OX_DOT_MARK_REMOVED, OX_DOT_MARK_ADDED,
                                  OX_DOT_MARK_DIMMED};
  for (size_t i = 0; i < sizeof order; i++) {
    uint8_t m = order[i];
    if (!used[m]) continue;
    ox_buf_printf(out, "<TR><TD BORDER=\"2\" COLOR=\"#%06x\" BGCOLOR=\"#ffffff\" WIDTH=\"22\" HEIGHT=\"11\"></TD>"
                       "<TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"10\">%s</FONT></TD></TR>",
                  mark_rgb(opt, m), mark_style[m].label);
  }
  for (uint32_t i = 0; i < opt->n_legend_fills; i++) {
    ox_buf_printf(out, "<TR><TD BORDER=\"1\" COLOR=\"#555555\" BGCOLOR=\"#%06x\" WIDTH=\"22\" HEIGHT=\"11\"></TD>"
                       "<TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"10\">",
                  opt->legend_fills[i] & 0xffffffu);
    html_escape(out, opt->legend_fill_names[i], 40);
    ox_buf_puts(out, "</FONT></TD></TR>");
  }
  ox_buf_puts(out, "</TABLE>>];\n");
}

void ox_write_dot(const OxGraph *g, const OxDotOptions *opt, OxBuf *out) {
  const char *rankdir = "TB";
  if (opt && opt->rankdir &&
      (strcmp(opt->rankdir, "LR") == 0 || strcmp(opt->rankdir, "TB") == 0 || strcmp(opt->rankdir, "RL") == 0 ||
       strcmp(opt->rankdir, "BT") == 0))
    rankdir = opt->rankdir;
  ox_buf_puts(out, "digraph optimus {\n");
  ox_buf_puts(out, "  // graph: ");
  comment_safe(out, g->name ? g->name : "graph");
  ox_buf_printf(out, " (%u nodes)\n", g->n_live);
  if (g->n_subgraphs) {
    ox_buf_printf(out, "  // %u nested subgraph%s not drawn:", g->n_subgraphs, g->n_subgraphs == 1 ? "" : "s");
    for (uint32_t i = 0; i < g->n_subgraphs; i++) {
      const OxGraph *sub = g->subgraphs[i];
      ox_buf_puts(out, i ? ", " : " ");
      comment_safe(out, sub->name ? sub->name : "graph");
      if (sub->sub_owner) {
        ox_buf_puts(out, " of ");
        comment_safe(out, sub->sub_owner);
      }
      ox_buf_printf(out, " (%u nodes)", count_live(sub));
    }
    ox_buf_putc(out, '\n');
  }
  /* dot's x-coordinate network simplex and its spline router grow much faster than linear
   * (minutes at 2,000 nodes with edge labels, which become virtual nodes): past
   * OX_DOT_LARGE nodes bound the simplex and crossing-minimisation work, and place edge
   * labels as xlabels after layout instead of reserving rank space for them. */
  enum { OX_DOT_LARGE = 1000 };
  uint32_t shown = g->n_live;
  if (opt && opt->include) {
    shown = 0;
    OX_GRAPH_FOREACH(g, id) shown += opt->include[id] != 0 && !(opt->fold && opt->fold[id]);
  }
  bool large = shown > OX_DOT_LARGE;
  const OxLayout *lay = opt ? opt->layout : NULL;
  /* the legend goes to the right of a given layout: its bb grows by the legend's width */
  OxBuf legend;
  ox_buf_init(&legend);
  double bb_w = lay ? lay->width : 0;
  if (opt && opt->legend) write_legend(g, opt, opt->include, &legend, &bb_w);
  if (lay)
    ox_buf_printf(out, "  graph [bb=\"0,0,%.2f,%.2f\", splines=line, fontname=\"Helvetica\"];\n", bb_w,
                  lay->height);
  else
    ox_buf_printf(out, "  graph [rankdir=%s, nodesep=0.25, ranksep=0.35, fontname=\"Helvetica\"%s];\n", rankdir,
                  large ? ", nslimit=1, mclimit=0.3" : "");
  ox_buf_puts(out, "  node [shape=box, style=\"rounded,filled\", margin=\"0.10,0.05\", fontname=\"Helvetica\", "
                   "fontsize=11, color=\"#555555\", penwidth=1];\n");
  ox_buf_puts(out, "  edge [color=\"#666666\", arrowsize=0.6, fontname=\"Helvetica\", fontsize=9, "
                   "fontcolor=\"#444444\"];\n");
  const uint8_t *inc = opt ? opt->include : NULL; /* a bounded view: only these nodes */
  const uint32_t *fold = opt ? opt->fold : NULL;  /* parameters drawn in their consumers */
  OX_GRAPH_FOREACH(g, id) if ((!inc || inc[id]) && !(fold && fold[id])) write_node(g, &g->nodes[id], opt, out);
  if (legend.len) ox_buf_append(out, legend.data, legend.len);
  ox_buf_free(&legend);
  EdgeKey *by_edge = lay ? edge_index(lay) : NULL;
  OxNodeId stack_in[32];
  OxNodeId *in = stack_in;
  uint32_t in_cap = 32;
  OX_GRAPH_FOREACH(g, id) {
    if (inc && !inc[id]) continue;
    const OxNode *user = &g->nodes[id];
    uint32_t k = ox_graph_inputs(g, id, in, in_cap);
    if (k > in_cap) {
      in_cap = k;
      in = (in == stack_in) ? ox_xcalloc(in_cap, sizeof *in) : ox_xrealloc(in, in_cap * sizeof *in);
      k = ox_graph_inputs(g, id, in, in_cap);
    }
    for (uint32_t i = 0; i < k; i++) {
      const OxNode *src = ox_graph_node(g, in[i]);
      if (!src || src->erased) continue; /* a dangling reference: the verifier reports it */
      if (inc && !inc[src->id]) continue;
      if (fold && (fold[src->id] || fold[user->id])) continue;
      ox_buf_printf(out, "  n%u -> n%u", src->id, user->id);
      const OxLayoutEdge *le = lay ? find_edge(lay, by_edge, src->id, user->id) : NULL;
      if (le && le->n_pts >= 4) {
        /* y flipped back: Graphviz's y grows up */
        ox_buf_puts(out, " [pos=\"");
        if (le->has_arrow) ox_buf_printf(out, "e,%.2f,%.2f ", le->ax, lay->height - le->ay);
        for (uint32_t p = 0; p < le->n_pts; p++)
          ox_buf_printf(out, "%s%.2f,%.2f", p ? " " : "", le->pts[2 * p], lay->height - le->pts[2 * p + 1]);
        ox_buf_puts(out, "\"");
        if (le->stub) {
          /* a hub's stub: its name at the stub's top */
          ox_buf_printf(out, ", fontsize=8, lp=\"%.2f,%.2f\", label=<", le->pts[0], lay->height - le->pts[1] + 5);
          html_escape(out, src->name ? src->name : "", 40);
          ox_buf_puts(out, ">");
        }
        ox_buf_puts(out, "]");
        if (le->stub) {
          ox_buf_puts(out, ";\n");
          continue;
        }
      }
      char label[512];
      if (opt && opt->edge_shapes) {
        edge_text(src, user, label, sizeof label);
        if (label[0]) {
          /* with positions given, labels are placed after layout too (xlabel) */
          ox_buf_puts(out, large || lay ? " [xlabel=<" : " [label=<");
          html_escape(out, label, 96);
          ox_buf_puts(out, ">]");
        }
      }
      ox_buf_puts(out, ";\n");
    }
  }
  if (in != stack_in) free(in);
  free(by_edge);
  ox_buf_puts(out, "}\n");
}
