/* ox_shape.h - dtype/shape rules for every op in the op table, whole-graph shape
 * inference, --input-shape specs, and a few op-table queries that the rules (and the
 * interpreter) need beyond ox_ops.h.
 *
 * A rule reads the node's normalized slots (ox_op_normalize) and the meta of the nodes
 * those slots reference; it never guesses. Symbolic dims (OxDim.sym) flow through ops
 * that only carry them (pointwise, cat along another dim, getitem, permute ...); where
 * arithmetic on a symbol would be needed the rule gives up with "symbolic size s0 in <op>".
 */
#ifndef OX_SHAPE_H
#define OX_SHAPE_H

#include "ir/ox_graph.h"
#include "ops/ox_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------ op-table extras (defined in ox_ops.c) */

/* How many outputs a spelling produces: 0 = one tensor (not a tuple), k > 0 = always a
 * tuple of k (aten.native_layer_norm 3, aten._embedding_bag 4, aten.max_pool2d_with_indices
 * 2, aten._native_batch_norm_legit_no_training 3), -1 = a tuple whose length depends on the
 * arguments (split, chunk, unbind, grouped_mm). */
int ox_spelling_outputs(const OxSpelling *s);

/* call_module spellings: slots fed by a module parameter (weight, bias, running_mean,
 * running_var) point at this sentinel (kind OX_V_RAW); the tensor is the parameter
 * "<OxOpArgs.module_path>.<slot name>". */
const OxValue *ox_op_module_param(void);
bool ox_op_is_module_param(const OxValue *v);

/* One-line summary of an op's shape/dtype rule (docs/ops.md); NULL if the op has none. */
const char *ox_shape_rule_summary(OxOpId id);
/* True iff ox_shape.c has a rule for the op (every op in the table must). */
bool ox_shape_has_rule(OxOpId id);

/* Formats a value as Python would print it ("[1, -1]", "'mean'", "None", "%x") into buf;
 * g resolves node names (may be NULL). Returns buf. */
const char *ox_value_format(const OxGraph *g, const OxValue *v, char *buf, size_t cap);

/* ------------------------------------------------ inference */

/* Infers the meta of one node from its inputs' meta.
 * 0 = inferred into *out, 1 = no rule / not inferable (err says why),
 * -1 = the inputs are inconsistent (err says how: "cat: dim 1 sizes differ: f32[4, 8] vs
 * f32[4, 9]"). Placeholders and get_attr are not inferable (1): their meta comes from the
 * dump or from --input-shape. The arrays of *out live in g's shape scratch arena until the
 * next ox_shape_infer_node call on g: set them on a node (ox_graph_set_meta*, which copy) or
 * compare them before inferring again. */
int ox_shape_infer_node(OxGraph *g, OxNodeId id, OxMeta *out, char *err, size_t errcap);

typedef struct OxShapeStats {
  uint32_t inferred;     /* call nodes without meta that got one */
  uint32_t agreed;       /* call nodes whose dump meta equals ours */
  uint32_t disagreed;    /* dump meta differs from ours (dump's kept, warning added) */
  uint32_t unknown;      /* no rule, or an input's meta is unknown */
  uint32_t inconsistent; /* a rule found the inputs inconsistent (warning added) */
} OxShapeStats;

/* Walks the graph in order: fills missing meta (meta.inferred = true); where the dump
 * already has meta and ours disagrees, keeps the dump's and adds a located warning naming
 * both ("add_3: dump says f32[8, 16], inferred f32[8, 32]"). Inconsistent inputs also give
 * a warning. Only dtype and shape are compared (strides and device are not inferred).
 * d and stats may be NULL. Returns disagreed + inconsistent (0 = clean). */
int ox_shape_infer_graph(OxGraph *g, OxDiagList *d, OxShapeStats *stats);

/* Compares two metas on dtype and shape (tensor or tuple of tensors, SymInt symbol). */
bool ox_shape_meta_equal(const OxMeta *a, const OxMeta *b);
/* Formats a meta for messages: "f32[8, 16]", "(f32[2], f32[2])", "Sym(s0)", "?". */
int ox_meta_format(const OxMeta *m, char *buf, size_t cap);

/* ------------------------------------------------ einsum equations */

#define OX_EINSUM_MAX_OPS 8
#define OX_EINSUM_MAX_RANK 16

/* "abc,abcd->abd": the subscripts of each operand and of the output. Implicit output (no
 * "->") is every subscript used exactly once, in ASCII order, as torch does. Spaces are
 * ignored. Not supported (false, err says which): '...', a subscript repeated within one
 * operand or in the output, an output subscript no operand has, a rank that does not match
 * the operand's. ranks may be NULL (no rank check). */
typedef struct OxEinsum {
  uint32_t n_ops;
  int rank[OX_EINSUM_MAX_OPS];
  char sub[OX_EINSUM_MAX_OPS][OX_EINSUM_MAX_RANK + 1];
  int out_rank;
  char out[OX_EINSUM_MAX_RANK + 1];
} OxEinsum;
bool ox_einsum_parse(const char *eq, uint32_t n_ops, const int *ranks, OxEinsum *e, char *err, size_t cap);

/* ------------------------------------------------ --input-shape NAME=SPEC */

#define OX_SHAPE_MAX_RANK 16

typedef struct OxInputSpec {
  char name[128];
  OxDType dtype;          /* OX_DT_UNKNOWN = keep the placeholder's dtype (f32 if none) */
  int32_t rank;
  int64_t dims[OX_SHAPE_MAX_RANK];
  char syms[OX_SHAPE_MAX_RANK][32]; /* "" = concrete dims[i] */
} OxInputSpec;

/* Parses "x=16,256", "x=f32:16,256", "x=s0,256", "x=f32:" (0-dim). Returns 0, or -1 with err
 * ("--input-shape x=16,a: bad size 'a'"). */
int ox_input_shape_parse(const char *spec, OxInputSpec *out, char *err, size_t errcap);

/* Applies specs to the placeholders or get_attr nodes they name (node name or target: x,
 * w_0, layers.0.weight), replacing their meta. Errors (bad spec, no such placeholder) go to d as located errors; returns the
 * number of errors (0 = all applied). The CLI calls this before ox_shape_infer_graph. */
int ox_shape_apply_input_specs(OxGraph *g, const char *const *specs, size_t n, OxDiagList *d);

/* The int a node evaluates to from the shapes alone (x.size(1), aten.sym_size.int(x, 0),
 * x.size()[0], x.shape[0], and Python int arithmetic on them), or false. Reads g only. */
bool ox_shape_node_int(const OxGraph *g, OxNodeId id, int64_t *out);

/* ------------------------------------------------ --shapes FILE */

/* One entry of a shapes file: a placeholder name / target or get_attr name / target (or a
 * state_dict key, matched to export-style names: "layers.0.weight" -> p_layers_0_weight). */
typedef struct OxShapeEntry {
  const char *key;      /* interned in the list's pool */
  OxDType dtype;        /* OX_DT_UNKNOWN = keep the node's (f32 if it has none) */
  int32_t rank;
  OxDim *shape;         /* rank dims, in the pool; sym interned there */
} OxShapeEntry;

typedef struct OxShapeList {
  OxGraph *pool;        /* owns the strings and dims */
  OxShapeEntry *items;
  uint32_t n, cap;
} OxShapeList;

void ox_shape_list_init(OxShapeList *l);
void ox_shape_list_free(OxShapeList *l);

/* Reads a shapes file: a JSON object mapping names to a shape ([24, 32], "s0" for a symbolic
 * dim), an annotation ("f32[24, 32]") or {"dtype": "f32", "shape": [24, 32]} (dtype also as
 * "float32", "torch.float32" or safetensors' "F32"); or a .safetensors file, of which only the
 * JSON header is read. Entries that cannot be read are located errors (file, line, column);
 * returns the number of errors. d's file should be path. */
int ox_shapes_load_file(const char *path, OxShapeList *out, OxDiagList *d);
/* The JSON reader behind it (ox_json.c): text is the JSON object. */
int ox_shapes_read_json(const char *text, size_t len, OxShapeList *out, OxDiagList *d);

typedef struct OxShapesApplied {
  uint32_t applied;     /* nodes that got a shape */
  uint32_t unmatched;   /* entries naming no placeholder / get_attr (a state_dict has buffers
                           and parameters the graph does not use) */
} OxShapesApplied;

/* Sets the meta of every placeholder / get_attr an entry names; unmatched entries give one
 * warning listing the first few. Returns 0. */
int ox_shapes_apply(OxGraph *g, const OxShapeList *l, OxDiagList *d, OxShapesApplied *st);

/* ------------------------------------------------ parameter shapes from their uses */

typedef struct OxParamShapes {
  uint32_t inferred;    /* parameters (placeholder / get_attr) that got a shape from their uses */
  uint32_t unknown;     /* parameters still without a shape after inference */
  uint32_t rounds;      /* fill rounds run */
} OxParamShapes;

/* Solves the shapes of parameters (placeholders and get_attr nodes without a tensor meta that
 * some call uses) from the constraints their users impose, alternating with filling the call
 * nodes' metas until nothing changes: linear's weight [out, in] (in from the input, out from
 * the bias, the node's recorded meta, or what the output must be downstream: a layer_norm's
 * normalized_shape, a linear or mm that reads it, a cat/stack partner, a view/reshape to
 * concrete sizes, through shape-preserving ops), its bias [out], layer_norm's weight and bias
 * (normalized_shape), batch_norm's statistics and affine parameters ([C] of the input), mm's
 * mat2 and a cat/stack's missing member. Nothing is guessed: a parameter no constraint fixes
 * (an embedding table's row count, a broadcast operand) stays unknown. Each inferred parameter
 * gets a note in d saying what fixed it ("w_0: f32[32, 32] from linear_3 (in: getitem_2
 * f32[64, 32]; out: layer_norm_3's normalized_shape [32])"), the first max_notes of them (0 =
 * none), then one summary note. Call after --shapes / --input-shape have been applied. */
int ox_shape_infer_params(OxGraph *g, OxDiagList *d, uint32_t max_notes, OxParamShapes *st);

#ifdef __cplusplus
}
#endif
#endif
