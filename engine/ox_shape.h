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

#include "ox_graph.h"
#include "ox_ops.h"

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

/* Applies specs to the placeholders they name (node name or placeholder target), replacing
 * their meta. Errors (bad spec, no such placeholder) go to d as located errors; returns the
 * number of errors (0 = all applied). The CLI calls this before ox_shape_infer_graph. */
int ox_shape_apply_input_specs(OxGraph *g, const char *const *specs, size_t n, OxDiagList *d);

#ifdef __cplusplus
}
#endif
#endif
