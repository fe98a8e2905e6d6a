/* ox_kernels.h - reference CPU kernels, one per op of ox_ops.def (used by ox_interp.c and
 * the kernel tests).
 *
 * A kernel receives its op's canonical slots (ox_ops.def order) as runtime values: node
 * references already resolved to tensors / tuples / scalars, literals converted (ints,
 * floats, lists, dtypes, slices, strings). Slots are borrowed; the kernel returns a new
 * value with one reference in *out. On failure it returns -1 with a message in k->err that
 * starts with the op name ("matmul: shapes [2, 3] and [4, 5] cannot be multiplied").
 *
 * Numerics: every kernel computes in double and stores once with dtype rounding (f32 values
 * rounded to float, f16/bf16 to their precision, i32 wrapped), except integer arithmetic
 * (add/sub/mul/neg/div rounding modes/sum/clamp) which is exact in int64. Type promotion
 * follows torch (result_type: dimensioned tensors > zero-dim tensors > Python scalars;
 * true division of integers gives f32).
 */
#ifndef OX_KERNELS_H
#define OX_KERNELS_H

#include "ops/ox_ops.h"
#include "ops/ox_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OX_KERNEL_DEFAULT_MAX_ELEMS (64ll << 20) /* 64M elements per tensor */

typedef struct OxKernelCtx {
  const char *op_name; /* canonical op name for messages; set by ox_kernel_run */
  int64_t max_elems;   /* refuse any result tensor larger than this; 0 = default (64M) */
  bool module_call;    /* call_module: the module runs in eval mode, so dropout's and
                          batch_norm's default training flag means False */
  int outputs;         /* ox_spelling_outputs of the spelling: 0 = one tensor, k > 0 = a
                          tuple of k (aten._embedding_bag 4, max_pool2d_with_indices 2,
                          _native_batch_norm_legit_no_training 3); ops whose canonical form
                          is a tuple (native_layer_norm, split ...) ignore it */
  char *err;
  size_t errcap;
} OxKernelCtx;

/* Runs op's kernel. slots[i] may be NULL for i >= n_slots or a missing optional slot
 * (treated as None). Returns 0 and *out, or -1 with k->err ("no kernel for op" if the op
 * has none). */
int ox_kernel_run(OxKernelCtx *k, OxOpId op, OxRtValue *const *slots, uint32_t n_slots, OxRtValue **out);
bool ox_kernel_exists(OxOpId op);
/* Canonical op names straight from ox_ops.def (no dependency on the spelling table). */
const char *ox_kernel_op_name(OxOpId op);
OxOpId ox_kernel_op_by_name(const char *name);

/* Torch's type promotion of two dtypes (bool < ints < floats; f16+bf16 -> f32). */
OxDType ox_dtype_promote(OxDType a, OxDType b);

#ifdef __cplusplus
}
#endif
#endif
