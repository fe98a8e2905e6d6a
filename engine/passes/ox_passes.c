/* ox_passes.c - the registry of built-in passes, in the spec's default order (pre-grad
 * section 2.1, then post-grad section 2.2). Each entry names the function that implements
 * it; the pipeline (ox_driver.c) picks entries by phase, config or --passes. The opt-in ones
 * (upstream turns them on only by config; ox_pass_opt_in) stay out of the default pipeline. Upstream's
 * post-grad names shape_padding_multiplier and pad_aten_mm_pass are no passes here: they only
 * tune Inductor's pad_mm, and a config naming them loads with a warning (ox_json.c). */
#include <string.h>

#include "passes/ox_batch.h"
#include "passes/ox_pass.h"
#include "passes/ox_pattern.h"

static const OxPassInfo passes[] = {
  /* entries are added here as the batch (ox_batch.c) and pattern (ox_splitcat.c) engines
   * implement them */
  /* pre-grad normalization (ox_splitcat.c): upstream applies it before the batch rules (spec 2.1) */
  /* upstream's pre-grad driver renames NumPy-style keywords on every graph first */
  {"numpy_compat_normalization", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_misc_numpy_compat_normalization, "NumPy-style keywords of torch functions -> torch's (axis -> dim, keepdims -> keepdim, x/a/x1 -> input, x2 -> other)"},
  {"normalization_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_normalization_pass, "split/unbind/cat/stack/squeeze/reshape/clamp/detach -> one canonical form, dims >= 0, sections from meta"},
  /* pre-grad batch rules (ox_batch.c): upstream runs them before the pattern passes */
  {"batch_linear", OX_PHASE_PRE, OX_ENGINE_BATCH, ox_batch_pass_run, "linears with equal shapes -> stack, bmm/baddbmm, unbind"},
  {"batch_linear_lhs", OX_PHASE_PRE, OX_ENGINE_BATCH, ox_batch_pass_run, "linears sharing one input -> cat weights, mm/addmm, split"},
  {"batch_layernorm", OX_PHASE_PRE, OX_ENGINE_BATCH, ox_batch_pass_run, "layer_norms with equal shapes -> stack, layer_norm, unbind"},
  {"batch_tanh", OX_PHASE_PRE, OX_ENGINE_BATCH, ox_batch_pass_run, "tanh of equal shapes -> stack, tanh, unbind"},
  {"batch_sigmoid", OX_PHASE_PRE, OX_ENGINE_BATCH, ox_batch_pass_run, "sigmoid of equal shapes -> stack, sigmoid, unbind"},
  {"batch_relu", OX_PHASE_PRE, OX_ENGINE_BATCH, ox_batch_pass_run, "relu of equal shapes -> stack, relu, unbind"},
  {"batch_detach", OX_PHASE_PRE, OX_ENGINE_BATCH, ox_batch_pass_run, "detach of equal shapes -> stack, detach, unbind"},
  {"batch_nan_to_num", OX_PHASE_PRE, OX_ENGINE_BATCH, ox_batch_pass_run, "nan_to_num of equal shapes -> stack, nan_to_num, unbind"},
  {"batch_clamp", OX_PHASE_PRE, OX_ENGINE_BATCH, ox_batch_pass_run, "clamp of equal shapes and bounds -> stack, clamp, unbind"},
  {"batch_dropout", OX_PHASE_PRE, OX_ENGINE_BATCH, ox_batch_pass_run, "dropout of equal shapes -> stack, dropout, unbind"},
  /* opt-in (upstream: off unless pre_grad_fusion_options names it) */
  {"cat_linear", OX_PHASE_PRE, OX_ENGINE_BATCH, ox_misc_cat_linear_pass, "linear(cat(2-3 parts, -1)) -> sum of per-part linears on weight column slices (narrow outputs, big cats)"},
  /* pre-grad split/cat pattern passes (ox_splitcat.c), in the canonical order of spec 2.1 */
  {"remove_split_with_size_one_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_remove_split_with_size_one_pass, "split with one section -> its input"},
  {"merge_getitem_cat_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_merge_getitem_cat_pass, "cat of consecutive single-user pieces of a split -> one merged section"},
  {"merge_splits_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_merge_splits_pass, "split of a split piece on the same dim -> one split"},
  {"mutate_cat_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_mutate_cat_pass, "cat of consecutive pieces of a split -> the input or a slice of it"},
  {"split_cat_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_split_cat_pass, "split+squeeze -> unbind; split -> cat/stack networks simplified (scmerge_*)"},
  {"unbind_stack_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_unbind_stack_pass, "cat/stack of every unbind output -> the input (movedim/flatten)"},
  {"merge_stack_tahn_unbind_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_merge_stack_tahn_unbind_pass, "split -> stack -> tanh -> unbind -> one tanh on the merged section, split"},
  {"split_cat_to_slices_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_split_cat_to_slices_pass, "cat over split pieces -> the input / slices (threshold_to_cat)"},
  {"unbind_cat_to_view_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_unbind_cat_to_view_pass, "cat over unbind pieces -> views of the input (threshold_to_cat)"},
  {"split_stack_to_cats_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_split_stack_to_cats_pass, "stack over split pieces -> cat of slices, unflatten, movedim"},
  {"unbind_stack_to_slices_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_unbind_stack_to_slices_pass, "stack over unbind pieces -> slices of the input, movedim"},
  {"move_reshape_out_of_split_stack_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_splitcat_move_reshape_out_of_split_stack_pass, "stack of reshapes of split pieces -> one view of the split input, other inputs stacked, one cat"},
  {"einsum_to_pointwise_pass", OX_PHASE_PRE, OX_ENGINE_PATTERN, ox_misc_einsum_to_pointwise_pass, "einsum(\"abc,abcd->abd\", x, w) feeding an add -> sum(unsqueeze(x, -1) * w, -2)"},
  /* post-grad batch rules (ox_batch.c), before the post-grad pattern passes */
  {"batch_linear_post_grad", OX_PHASE_POST, OX_ENGINE_BATCH, ox_batch_pass_run, "mm/addmm with equal shapes -> cat, bmm, select"},
  {"batch_aten_add", OX_PHASE_POST, OX_ENGINE_BATCH, ox_batch_pass_run, "aten add of equal shapes -> cat, add, select"},
  {"batch_aten_sub", OX_PHASE_POST, OX_ENGINE_BATCH, ox_batch_pass_run, "aten sub of equal shapes -> cat, sub, select"},
  {"batch_aten_mul", OX_PHASE_POST, OX_ENGINE_BATCH, ox_batch_pass_run, "aten mul of equal shapes -> cat, mul, select"},
  {"batch_aten_div", OX_PHASE_POST, OX_ENGINE_BATCH, ox_batch_pass_run, "aten div of equal shapes -> cat, div, select"},
  {"batch_aten_tanh", OX_PHASE_POST, OX_ENGINE_BATCH, ox_batch_pass_run, "aten tanh of equal shapes -> cat, tanh, select"},
  {"batch_aten_sigmoid", OX_PHASE_POST, OX_ENGINE_BATCH, ox_batch_pass_run, "aten sigmoid of equal shapes -> cat, sigmoid, select"},
  {"batch_aten_relu", OX_PHASE_POST, OX_ENGINE_BATCH, ox_batch_pass_run, "aten relu of equal shapes -> cat, relu, select"},
  {"group_linear", OX_PHASE_POST, OX_ENGINE_BATCH, ox_batch_pass_run, "mm/addmm of any shapes -> one optimus.grouped_mm"},
  /* post-grad split/cat pattern passes (ox_splitcat.c), spec 2.2 */
  {"normalization_aten_pass", OX_PHASE_POST, OX_ENGINE_PATTERN, ox_splitcat_normalization_aten_pass, "aten split -> split_with_sizes (sections from meta), cat dims >= 0"},
  {"decompose_mm_pass", OX_PHASE_POST, OX_ENGINE_PATTERN, ox_misc_decompose_mm_pass, "memory-bound aten mm/addmm/bmm (per-device size thresholds) -> sum(unsqueeze * unsqueeze, -2)"},
  {"split_cat_aten_pass", OX_PHASE_POST, OX_ENGINE_PATTERN, ox_splitcat_split_cat_aten_pass, "aten cat over split pieces -> the input / aten.slice (threshold_to_cat)"},
  {"select_cat_aten_pass", OX_PHASE_POST, OX_ENGINE_PATTERN, ox_splitcat_select_cat_aten_pass, "aten cat of every select of x -> view of x"},
  {"unbind_stack_aten_pass", OX_PHASE_POST, OX_ENGINE_PATTERN, ox_splitcat_unbind_stack_aten_pass, "aten cat of unsqueeze(select(p, d, i)) for every i -> p"},
  {"move_view_after_cat_aten_pass", OX_PHASE_POST, OX_ENGINE_PATTERN, ox_splitcat_move_view_after_cat_aten_pass, "aten cat of reshaped split pieces -> reshape(permute(x))"},
  {NULL, OX_PHASE_PRE, OX_ENGINE_BATCH, NULL, NULL},
};

bool ox_pass_opt_in(const OxPassInfo *p) {
  static const char *const names[] = {"cat_linear", "einsum_to_pointwise_pass", "decompose_mm_pass"};
  size_t n = sizeof passes / sizeof passes[0] - 1;
  if (!p || p < passes || p >= passes + n) return false; /* rule-file passes are never opt-in */
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(p->name, names[i]) == 0) return true;
  return false;
}

const OxPassInfo *ox_passes(size_t *count) {
  *count = sizeof passes / sizeof passes[0] - 1; /* the last entry terminates the table */
  return passes;
}
