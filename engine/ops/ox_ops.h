/* ox_ops.h - the op table: one entry per op (ox_ops.def), all its spellings across PyTorch
 * levels, argument normalization onto canonical slots, flags, shape rules (ox_shape.c) and
 * reference kernels (ox_kernels.c, used by the interpreter).
 *
 * Passes read flags and slots from here instead of keeping their own target lists, so a new
 * spelling (e.g. torch._C._nn.linear, which upstream batch_linear_lhs once missed) is added
 * in one place and every pass sees it.
 */
#ifndef OX_OPS_H
#define OX_OPS_H

#include "ir/ox_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  OX_OPF_POINTWISE = 1u << 0,
  OX_OPF_VIEW = 1u << 1,
  OX_OPF_MULTI = 1u << 2,
  OX_OPF_MUTATING = 1u << 3,
  OX_OPF_RANDOM = 1u << 4,
  OX_OPF_REDUCTION = 1u << 5,
  OX_OPF_PLUMBING = 1u << 6,
};

typedef enum OxOpId {
  OX_OPID_NONE = 0, /* unknown op */
#define OX_OPDEF(id, name, flags, schema) OX_OPID_##id,
#include "ops/ox_ops.def"
#undef OX_OPDEF
  OX_OPID_COUNT
} OxOpId;

/* Where a spelling lives. */
typedef enum OxOpLevel {
  OX_LEVEL_TORCH = 0, /* pre-grad / Dynamo call_function: torch.split, F.linear, operator.add */
  OX_LEVEL_METHOD,    /* call_method: x.split(...) */
  OX_LEVEL_ATEN,      /* post-grad: torch.ops.aten.split_with_sizes.default */
  OX_LEVEL_MODULE     /* call_module whose module type is known: torch.nn.Linear */
} OxOpLevel;

#define OX_MAX_SLOTS 16

typedef struct OxOpInfo {
  OxOpId id;
  const char *name;     /* canonical name, "split" */
  unsigned flags;       /* OX_OPF_* */
  const char *schema;   /* canonical slot schema text, as in ox_ops.def */
  uint32_t n_slots;
  const char *slot_names[OX_MAX_SLOTS];
  const OxValue *slot_defaults[OX_MAX_SLOTS]; /* NULL = required */
} OxOpInfo;

typedef struct OxSpelling {
  const char *target;   /* as printed: "torch.split", "split" (method), "torch.ops.aten.split.Tensor",
                           "torch.nn.Linear" (module type) */
  OxOpLevel level;
  OxOpId op;
  const char *schema;   /* this spelling's own printed schema, mapped onto canonical slots */
  const char *note;     /* e.g. "sections from split_size: int or list" */
} OxSpelling;

/* The table (initialised once, thread-safe). */
const OxOpInfo *ox_op_info(OxOpId id);
OxOpId ox_op_by_name(const char *canonical_name);
/* All spellings, for docs/ops.md generation and `optimus ops`. */
const OxSpelling *ox_op_spellings(size_t *count);

/* The op a node computes (by op kind, target, and module_type for call_module), with the
 * spelling matched; OX_OPID_NONE if unknown. */
OxOpId ox_op_of_node(const OxGraph *g, const OxNode *n, const OxSpelling **spelling);

/* Whether a target names an in-place operation by its spelling alone (add_, aten.add_.Tensor,
 * operator.iadd). */
bool ox_target_mutating(const char *target);

/* The op index of a node: its spelling, whether it is erased and whether it mutates, in the two
 * bytes g->opix keeps per node, so that a scan over every node of a large graph reads 2 bytes per
 * node instead of the node. Computed on first read and after the graph marks the node stale
 * (ox_graph_opix_stale). Values: */
enum {
  OX_OPIX_NOT_CALL = 0,       /* placeholder, get_attr, output */
  OX_OPIX_UNKNOWN_CALL = 1,   /* + class (0 call_function, 1 call_method, 2 call_module): no spelling */
  OX_OPIX_SPELLING = 4,       /* + k: spelling k of ox_op_spellings */
  OX_OPIX_MUTATING = 0x8000,  /* flag: the node mutates (in-place op or target, or an out= kwarg) */
  OX_OPIX_ERASED = 0xFFFF     /* erased (or not a node id) */
};
uint16_t ox_op_index_compute(OxGraph *g, OxNodeId id);
static inline uint16_t ox_op_index(OxGraph *g, OxNodeId id) {
  /* a cached entry is read inline: the scans of every pattern and batch pass call this ~5M
   * times on a 100k-node graph */
  if (id < g->cap_opix && g->opix[id] != OX_OPIX_STALE) return g->opix[id];
  return ox_op_index_compute(g, id);
}
/* The spelling of an index value (NULL for none, erased or stale). */
const OxSpelling *ox_opix_spelling(uint16_t ix);
/* The index value part that names the spelling of s (OX_OPIX_SPELLING + k). */
uint16_t ox_opix_of_spelling(const OxSpelling *s);
/* Recomputes every cached entry and counts those that differ (for tests: 0 unless some code
 * changed a node behind the graph's back). */
uint32_t ox_op_index_check(OxGraph *g);
/* The spelling a call of this kind (call_function, call_method, call_module) with this target
 * (module type for call_module) has, or NULL; and the call kind a spelling belongs to. */
const OxSpelling *ox_spelling_find(OxOp kind, const char *target);
OxOp ox_spelling_kind(const OxSpelling *s);

/* Whether a canonical slot of a call_module spelling is filled from the module's parameters
 * (weight, bias, running_mean, running_var; attention's in_proj_weight ... out_proj_bias, whose
 * parameter is out_proj.bias: ox_op_module_param_path; the sequence modules' `params`, every
 * parameter under the module's path as (relative name, tensor) pairs). */
bool ox_op_slot_is_module_param(const char *slot_name);

/* Normalized arguments: slot[i] points into the node's args/kwargs or at the default. */
typedef struct OxOpArgs {
  OxOpId op;
  const OxSpelling *spelling;
  uint32_t n_slots;
  const OxValue *slot[OX_MAX_SLOTS];
  bool from_default[OX_MAX_SLOTS];
  /* call_module: the module path whose parameters (path.weight, path.bias) feed the op */
  const char *module_path;
  /* storage for a packed varargs slot (x.view(2, 3) -> size = (2, 3)): such a slot points
     here, so use an OxOpArgs where it was filled (do not copy it by value). Added by ops. */
  OxValue packed;
} OxOpArgs;

/* Maps a node's args/kwargs onto its op's slots. Returns 0, or -1 with err naming the
 * problem ("torch.split: missing argument split_size", "unexpected keyword foo"). */
int ox_op_normalize(const OxGraph *g, const OxNode *n, OxOpArgs *out, char *err, size_t errcap);

#ifdef __cplusplus
}
#endif
#endif
