/* ox_ops.c - the op table: canonical slot schemas (ox_ops.def), every spelling of every op
 * across PyTorch levels, lookup of a node's op, and argument normalization onto slots.
 *
 * Spelling schemas. Each spelling carries the schema PyTorch prints for it; its entries
 * are mapped onto the op's canonical slots by name:
 *   name[=default]        the canonical slot `name`
 *   slot:name[=default]   printed as `name`, fills canonical slot `slot` (F.embedding's
 *                         `indices:input`)
 *   -name=value           an argument the canonical op lacks: accepted only while it holds
 *                         its neutral value (`-max_norm=None`), else normalization fails with
 *                         "max_norm=1.0 is not supported"
 *   ~name=value           an argument the canonical op lacks and whose value does not change
 *                         the forward result (cudnn_enable, sparse): accepted, ignored
 *   *                     the following entries are keyword-only
 *   *name                 varargs: the remaining positionals fill slot `name` (x.view(2, 3));
 *                         a single list/tuple argument is taken as is (x.view([2, 3]))
 * Defaults are Python literals (None, True, False, ints, floats, 'str', [lists]). Canonical
 * slots a spelling does not mention take the canonical default; call_module spellings get
 * their weight/bias/running_mean/running_var slots from the module's parameters
 * (ox_op_module_param sentinel, parameter "<module_path>.<slot>").
 *
 * A few spellings need a fix-up after mapping (hooks): aten._softmax's half_to_float sets
 * dtype=float32; aten._embedding_bag's int mode becomes 'sum'/'mean'/'max'; torch.split
 * with a list becomes split_with_sizes; operator.floordiv sets rounding_mode='floor';
 * Tensor.float()/half()/... set dtype; Tensor.to(...) sorts dtype from device arguments.
 *
 * Invariants: the table is built once (pthread_once) and immutable afterwards, so every
 * query is thread-safe; lookup is one hash probe sequence on (call kind, target).
 * aten spellings are listed once as "aten.X.Y" and registered under "torch.ops.aten.X.Y",
 * "aten.X.Y" and executorch's "executorch.exir.dialects.edge._ops.aten.X.Y".
 */
#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"
#include "ops/ox_ops.h"
#include "ops/ox_shape.h"

enum { H_NONE = 0, H_SOFTMAX_HALF, H_EBAG_MODE, H_FLOORDIV, H_FIXED_DTYPE, H_TO_METHOD };

typedef struct Src {
  const char *target;
  OxOpLevel level;
  OxOpId op;
  const char *schema;
  const char *note;
  uint8_t hook;
  int8_t outputs;  /* ox_spelling_outputs; 0 = single tensor */
  OxDType dtype;   /* H_FIXED_DTYPE */
} Src;

#define F(t, o, s) {t, OX_LEVEL_TORCH, OX_OPID_##o, s, NULL, H_NONE, 0, OX_DT_UNKNOWN}
#define FN(t, o, s, n) {t, OX_LEVEL_TORCH, OX_OPID_##o, s, n, H_NONE, 0, OX_DT_UNKNOWN}
#define M(t, o, s) {t, OX_LEVEL_METHOD, OX_OPID_##o, s, NULL, H_NONE, 0, OX_DT_UNKNOWN}
#define A(t, o, s) {t, OX_LEVEL_ATEN, OX_OPID_##o, s, NULL, H_NONE, 0, OX_DT_UNKNOWN}
#define AO(t, o, s, k, n) {t, OX_LEVEL_ATEN, OX_OPID_##o, s, n, H_NONE, k, OX_DT_UNKNOWN}
/* an overload packet (torch.ops.aten.cat, no overload name): what upstream's post-grad batch
   fusions emit (decompose_stack's unsqueeze + cat, bmm, select, the bias add) */
#define AP(t, o, s) {t, OX_LEVEL_ATEN, OX_OPID_##o, s, "overload packet (post-grad batch fusions emit it)", H_NONE, 0, OX_DT_UNKNOWN}
#define MOD(t, o, s) {t, OX_LEVEL_MODULE, OX_OPID_##o, s, NULL, H_NONE, 0, OX_DT_UNKNOWN}
#define MDT(t, dt) {t, OX_LEVEL_METHOD, OX_OPID_TO, "self, ~memory_format=None", "dtype " #dt, H_FIXED_DTYPE, 0, OX_DT_##dt}
#define UNARY(n, O)                                                                   \
  F("torch." n, O, "self:input"), M(n, O, "self"), A("aten." n ".default", O, "self")

static const Src src_table[] = {
  /* ---------------------------------------------------------------- linear algebra */
  F("torch.nn.functional.linear", LINEAR, "input, weight, bias=None"),
  F("torch._C._nn.linear", LINEAR, "input, weight, bias=None"),
  A("aten.linear.default", LINEAR, "input, weight, bias=None"),
  MOD("torch.nn.Linear", LINEAR, "input, *, ~in_features=None, ~out_features=None, ~bias=True, ~device=None, ~dtype=None"),
  F("torch.addmm", ADDMM, "self:input, mat1, mat2, *, beta=1, alpha=1"),
  M("addmm", ADDMM, "self, mat1, mat2, *, beta=1, alpha=1"),
  A("aten.addmm.default", ADDMM, "self, mat1, mat2, *, beta=1, alpha=1"),
  F("torch.mm", MM, "self:input, mat2"),
  M("mm", MM, "self, mat2"),
  A("aten.mm.default", MM, "self, mat2"),
  F("torch.bmm", BMM, "self:input, mat2"),
  M("bmm", BMM, "self, mat2"),
  A("aten.bmm.default", BMM, "self, mat2"),
  AP("aten.bmm", BMM, "self, mat2"),
  F("torch.baddbmm", BADDBMM, "self:input, batch1, batch2, *, beta=1, alpha=1"),
  M("baddbmm", BADDBMM, "self, batch1, batch2, *, beta=1, alpha=1"),
  A("aten.baddbmm.default", BADDBMM, "self, batch1, batch2, *, beta=1, alpha=1"),
  F("torch.matmul", MATMUL, "self:input, other"),
  F("operator.matmul", MATMUL, "self:a, other:b"),
  M("matmul", MATMUL, "self, other"),
  M("__matmul__", MATMUL, "self, other"),
  A("aten.matmul.default", MATMUL, "self, other"),
  F("torch.einsum", EINSUM, "equation, *operands"),
  F("torch.functional.einsum", EINSUM, "equation, *operands"),
  A("aten.einsum.default", EINSUM, "equation, operands:tensors, *, ~path=None"),
  {"optimus.grouped_mm", OX_LEVEL_TORCH, OX_OPID_GROUPED_MM, "inputs, weights, biases=None",
   "emitted by group_linear; one output per group", H_NONE, -1, OX_DT_UNKNOWN},
  /* ---------------------------------------------------------------- normalization */
  F("torch.nn.functional.layer_norm", LAYER_NORM, "input, normalized_shape, weight=None, bias=None, eps=1e-05"),
  F("torch.layer_norm", LAYER_NORM, "input, normalized_shape, weight=None, bias=None, eps=1e-05, ~cudnn_enable=True"),
  A("aten.layer_norm.default", LAYER_NORM, "input, normalized_shape, weight=None, bias=None, eps=1e-05, ~cudnn_enable=True"),
  MOD("torch.nn.LayerNorm", LAYER_NORM, "input, *, normalized_shape, eps=1e-05, ~elementwise_affine=True, ~bias=True, ~device=None, ~dtype=None"),
  AO("aten.native_layer_norm.default", NATIVE_LAYER_NORM, "input, normalized_shape, weight, bias, eps", 3,
     "returns (out, mean, rstd)"),
  /* ---------------------------------------------------------------- unary pointwise */
  UNARY("tanh", TANH),
  F("torch.nn.functional.tanh", TANH, "self:input"),
  MOD("torch.nn.Tanh", TANH, "self:input"),
  UNARY("sigmoid", SIGMOID),
  F("torch.nn.functional.sigmoid", SIGMOID, "self:input"),
  MOD("torch.nn.Sigmoid", SIGMOID, "self:input"),
  F("torch.relu", RELU, "self:input"),
  F("torch.nn.functional.relu", RELU, "self:input, inplace=False"),
  M("relu", RELU, "self"),
  A("aten.relu.default", RELU, "self"),
  MOD("torch.nn.ReLU", RELU, "self:input, *, inplace=False"),
  F("torch.nn.functional.gelu", GELU, "self:input, approximate='none'"),
  F("torch._C._nn.gelu", GELU, "self:input, approximate='none'"),
  A("aten.gelu.default", GELU, "self, *, approximate='none'"),
  MOD("torch.nn.GELU", GELU, "self:input, *, approximate='none'"),
  F("torch.nn.functional.silu", SILU, "self:input, inplace=False"),
  A("aten.silu.default", SILU, "self"),
  MOD("torch.nn.SiLU", SILU, "self:input, *, inplace=False"),
  FN("torch.nn.functional.dropout", DROPOUT, "input, p=0.5, training=True, inplace=False", "identity unless training=True"),
  F("torch.dropout", DROPOUT, "input, p, training:train"),
  A("aten.dropout.default", DROPOUT, "input, p, training:train"),
  {"torch.nn.Dropout", OX_LEVEL_MODULE, OX_OPID_DROPOUT, "input, *, p=0.5, inplace=False, training=False",
   "the bridge writes training=True for a module in training mode", H_NONE, 0, OX_DT_UNKNOWN},
  F("torch.clamp", CLAMP, "self:input, min=None, max=None"),
  F("torch.clip", CLAMP, "self:input, min=None, max=None"),
  M("clamp", CLAMP, "self, min=None, max=None"),
  M("clip", CLAMP, "self, min=None, max=None"),
  A("aten.clamp.default", CLAMP, "self, min=None, max=None"),
  F("torch.nn.functional.hardtanh", CLAMP, "self:input, min:min_val=-1.0, max:max_val=1.0, inplace=False"),
  A("aten.hardtanh.default", CLAMP, "self, min:min_val=-1, max:max_val=1"),
  MOD("torch.nn.Hardtanh", CLAMP, "self:input, *, min:min_val=-1.0, max:max_val=1.0, inplace=False"),
  F("torch.nn.functional.relu6", CLAMP, "self:input, inplace=False, *, min=0.0, max=6.0"),
  MOD("torch.nn.ReLU6", CLAMP, "self:input, *, inplace=False, min=0.0, max=6.0"),
  F("torch.nan_to_num", NAN_TO_NUM, "self:input, nan=0.0, posinf=None, neginf=None"),
  M("nan_to_num", NAN_TO_NUM, "self, nan=0.0, posinf=None, neginf=None"),
  A("aten.nan_to_num.default", NAN_TO_NUM, "self, nan=None, posinf=None, neginf=None"),
  F("torch.detach", DETACH, "self:input"),
  M("detach", DETACH, "self"),
  A("aten.detach.default", DETACH, "self"),
  F("torch.clone", CLONE, "self:input, *, memory_format=None"),
  M("clone", CLONE, "self, *, memory_format=None"),
  A("aten.clone.default", CLONE, "self, *, memory_format=None"),
  M("contiguous", CONTIGUOUS, "self, memory_format=None"),
  UNARY("neg", NEG),
  F("operator.neg", NEG, "self:a"),
  M("__neg__", NEG, "self"),
  UNARY("exp", EXP),
  UNARY("log", LOG),
  UNARY("sqrt", SQRT),
  UNARY("rsqrt", RSQRT),
  F("torch.nn.functional.hardswish", HARDSWISH, "self:input, inplace=False"),
  F("torch._C._nn.hardswish", HARDSWISH, "self"),
  A("aten.hardswish.default", HARDSWISH, "self"),
  MOD("torch.nn.Hardswish", HARDSWISH, "self:input, *, inplace=False"),
  F("torch.nn.functional.hardsigmoid", HARDSIGMOID, "self:input, inplace=False"),
  F("torch._C._nn.hardsigmoid", HARDSIGMOID, "self"),
  A("aten.hardsigmoid.default", HARDSIGMOID, "self"),
  MOD("torch.nn.Hardsigmoid", HARDSIGMOID, "self:input, *, inplace=False"),
  FN("torchvision.ops.stochastic_depth.stochastic_depth", STOCHASTIC_DEPTH, "input, p, mode, training=True",
     "identity unless training=True and p > 0"),
  FN("torchvision.ops.stochastic_depth", STOCHASTIC_DEPTH, "input, p, mode, training=True",
     "identity unless training=True and p > 0"),
  /* ---------------------------------------------------------------- comparisons, masks */
#define CMP(n, O, py)                                                                                   \
  F("torch." n, O, "self:input, other"), F("operator." py, O, "self:a, other:b"), M(n, O, "self, other"), \
      M("__" py "__", O, "self, other"), A("aten." n ".Tensor", O, "self, other"),                       \
      A("aten." n ".Scalar", O, "self, other")
  CMP("eq", EQ, "eq"),
  CMP("ne", NE, "ne"),
  CMP("lt", LT, "lt"),
  CMP("le", LE, "le"),
  CMP("gt", GT, "gt"),
  CMP("ge", GE, "ge"),
#undef CMP
  F("torch.logical_not", LOGICAL_NOT, "self:input"),
  M("logical_not", LOGICAL_NOT, "self"),
  A("aten.logical_not.default", LOGICAL_NOT, "self"),
  F("torch.bitwise_not", BITWISE_NOT, "self:input"),
  F("operator.invert", BITWISE_NOT, "self:a"),
  M("bitwise_not", BITWISE_NOT, "self"),
  M("__invert__", BITWISE_NOT, "self"),
  A("aten.bitwise_not.default", BITWISE_NOT, "self"),
#define BITS(n, O, py)                                                                                  \
  F("torch.bitwise_" n, O, "self:input, other"), F("operator." py, O, "self:a, other:b"),                \
      M("bitwise_" n, O, "self, other"), M("__" n "__", O, "self, other"),                               \
      A("aten.bitwise_" n ".Tensor", O, "self, other"), A("aten.bitwise_" n ".Scalar", O, "self, other")
  BITS("and", BITWISE_AND, "and_"),
  BITS("or", BITWISE_OR, "or_"),
  BITS("xor", BITWISE_XOR, "xor"),
#undef BITS
  F("torch.masked_fill", MASKED_FILL, "self:input, mask, value"),
  M("masked_fill", MASKED_FILL, "self, mask, value"),
  A("aten.masked_fill.Scalar", MASKED_FILL, "self, mask, value"),
  A("aten.masked_fill.Tensor", MASKED_FILL, "self, mask, value"),
  F("torch.triu", TRIU, "self:input, diagonal=0"),
  M("triu", TRIU, "self, diagonal=0"),
  A("aten.triu.default", TRIU, "self, diagonal=0"),
  F("torch.tril", TRIL, "self:input, diagonal=0"),
  M("tril", TRIL, "self, diagonal=0"),
  A("aten.tril.default", TRIL, "self, diagonal=0"),
  /* ---------------------------------------------------------------- binary pointwise */
  F("torch.add", ADD, "self:input, other, *, alpha=1"),
  F("operator.add", ADD, "self:a, other:b"),
  M("add", ADD, "self, other, *, alpha=1"),
  M("__add__", ADD, "self, other"),
  M("__radd__", ADD, "other:self, self:other"),
  A("aten.add.Tensor", ADD, "self, other, *, alpha=1"),
  AP("aten.add", ADD, "self, other, *, alpha=1"),
  {"aten.add.Scalar", OX_LEVEL_ATEN, OX_OPID_ADD, "self, other, alpha=1", "other is a Python scalar", H_NONE, 0, OX_DT_UNKNOWN},
  F("torch.sub", SUB, "self:input, other, *, alpha=1"),
  F("operator.sub", SUB, "self:a, other:b"),
  M("sub", SUB, "self, other, *, alpha=1"),
  M("__sub__", SUB, "self, other"),
  A("aten.sub.Tensor", SUB, "self, other, *, alpha=1"),
  A("aten.sub.Scalar", SUB, "self, other, alpha=1"),
  F("torch.mul", MUL, "self:input, other"),
  F("operator.mul", MUL, "self:a, other:b"),
  M("mul", MUL, "self, other"),
  M("__mul__", MUL, "self, other"),
  M("__rmul__", MUL, "other:self, self:other"),
  A("aten.mul.Tensor", MUL, "self, other"),
  A("aten.mul.Scalar", MUL, "self, other"),
  F("torch.div", DIV, "self:input, other, *, rounding_mode=None"),
  F("operator.truediv", DIV, "self:a, other:b"),
  {"operator.floordiv", OX_LEVEL_TORCH, OX_OPID_DIV, "self:a, other:b", "rounding_mode='floor'", H_FLOORDIV, 0, OX_DT_UNKNOWN},
  M("div", DIV, "self, other, *, rounding_mode=None"),
  M("__truediv__", DIV, "self, other"),
  A("aten.div.Tensor", DIV, "self, other"),
  A("aten.div.Tensor_mode", DIV, "self, other, *, rounding_mode"),
  A("aten.div.Scalar", DIV, "self, other"),
  F("torch.pow", POW, "self:input, exponent"),
  F("operator.pow", POW, "self:a, exponent:b"),
  M("pow", POW, "self, exponent"),
  A("aten.pow.Tensor_Scalar", POW, "self, exponent"),
  A("aten.pow.Tensor_Tensor", POW, "self, exponent"),
  A("aten.pow.Scalar", POW, "self, exponent"),
  F("torch.where", WHERE, "condition, self:input, other"),
  M("where", WHERE, "self, condition, other"),
  A("aten.where.self", WHERE, "condition, self, other"),
  /* ---------------------------------------------------------------- reductions */
  F("torch.sum", SUM, "self:input, dim=None, keepdim=False, *, dtype=None"),
  M("sum", SUM, "self, dim=None, keepdim=False, *, dtype=None"),
  A("aten.sum.dim_IntList", SUM, "self, dim, keepdim=False, *, dtype=None"),
  {"aten.sum.default", OX_LEVEL_ATEN, OX_OPID_SUM, "self, *, dtype=None", "reduces every dim", H_NONE, 0, OX_DT_UNKNOWN},
  F("torch.mean", MEAN, "self:input, dim=None, keepdim=False, *, dtype=None"),
  M("mean", MEAN, "self, dim=None, keepdim=False, *, dtype=None"),
  {"aten.mean.dim", OX_LEVEL_ATEN, OX_OPID_MEAN, "self, dim, keepdim=False, *, dtype=None",
   "also global average pooling: mean.dim(x, [-1, -2], True)", H_NONE, 0, OX_DT_UNKNOWN},
  A("aten.mean.default", MEAN, "self, *, dtype=None"),
  F("torch.softmax", SOFTMAX, "self:input, dim, dtype=None"),
  FN("torch.nn.functional.softmax", SOFTMAX, "self:input, dim=None, ~_stacklevel=3, dtype=None",
     "dim=None picks torch's legacy implicit dim"),
  M("softmax", SOFTMAX, "self, dim, dtype=None"),
  A("aten.softmax.int", SOFTMAX, "self, dim, dtype=None"),
  {"aten._softmax.default", OX_LEVEL_ATEN, OX_OPID_SOFTMAX, "self, dim, ~half_to_float",
   "half_to_float=True means dtype=torch.float32", H_SOFTMAX_HALF, 0, OX_DT_UNKNOWN},
  MOD("torch.nn.Softmax", SOFTMAX, "self:input, *, dim=None"),
  /* ---------------------------------------------------------------- split / cat plumbing */
  {"torch.split", OX_LEVEL_TORCH, OX_OPID_SPLIT, "self:tensor, split_size:split_size_or_sections, dim=0",
   "a list of sections makes it split_with_sizes", H_NONE, -1, OX_DT_UNKNOWN},
  {"torch.functional.split", OX_LEVEL_TORCH, OX_OPID_SPLIT, "self:tensor, split_size:split_size_or_sections, dim=0",
   "a list of sections makes it split_with_sizes", H_NONE, -1, OX_DT_UNKNOWN},
  {"split", OX_LEVEL_METHOD, OX_OPID_SPLIT, "self, split_size, dim=0",
   "a list of sections makes it split_with_sizes", H_NONE, -1, OX_DT_UNKNOWN},
  AO("aten.split.Tensor", SPLIT, "self, split_size, dim=0", -1, NULL),
  AO("aten.split_copy.Tensor", SPLIT, "self, split_size, dim=0", -1, NULL),
  AO("aten.split_with_sizes.default", SPLIT_WITH_SIZES, "self, split_sizes, dim=0", -1, NULL),
  AO("aten.split_with_sizes_copy.default", SPLIT_WITH_SIZES, "self, split_sizes, dim=0", -1, NULL),
  AO("aten.split.sizes", SPLIT_WITH_SIZES, "self, split_sizes:split_size, dim=0", -1, NULL),
  {"torch.split_with_sizes", OX_LEVEL_TORCH, OX_OPID_SPLIT_WITH_SIZES, "self:input, split_sizes, dim=0", NULL, H_NONE, -1, OX_DT_UNKNOWN},
  {"split_with_sizes", OX_LEVEL_METHOD, OX_OPID_SPLIT_WITH_SIZES, "self, split_sizes, dim=0", NULL, H_NONE, -1, OX_DT_UNKNOWN},
  {"torch.chunk", OX_LEVEL_TORCH, OX_OPID_CHUNK, "self:input, chunks, dim=0", NULL, H_NONE, -1, OX_DT_UNKNOWN},
  {"chunk", OX_LEVEL_METHOD, OX_OPID_CHUNK, "self, chunks, dim=0", NULL, H_NONE, -1, OX_DT_UNKNOWN},
  AO("aten.chunk.default", CHUNK, "self, chunks, dim=0", -1, NULL),
  {"torch.unbind", OX_LEVEL_TORCH, OX_OPID_UNBIND, "self:input, dim=0", NULL, H_NONE, -1, OX_DT_UNKNOWN},
  {"unbind", OX_LEVEL_METHOD, OX_OPID_UNBIND, "self, dim=0", NULL, H_NONE, -1, OX_DT_UNKNOWN},
  AO("aten.unbind.int", UNBIND, "self, dim=0", -1, NULL),
  AO("aten.unbind_copy.int", UNBIND, "self, dim=0", -1, NULL),
  F("torch.cat", CAT, "tensors, dim=0, *, -out=None"),
  F("torch.concat", CAT, "tensors, dim=0, *, -out=None"),
  F("torch.concatenate", CAT, "tensors, dim:axis=0, *, -out=None"),
  A("aten.cat.default", CAT, "tensors, dim=0"),
  AP("aten.cat", CAT, "tensors, dim=0"),
  A("aten.concat.default", CAT, "tensors, dim=0"),
  F("torch.stack", STACK, "tensors, dim=0, *, -out=None"),
  A("aten.stack.default", STACK, "tensors, dim=0"),
  FN("operator.getitem", GETITEM, "self:a, index:b", "tuple element or tensor indexing (ints, slices, None, ...)"),
  F("_operator.getitem", GETITEM, "self:a, index:b"),
  M("__getitem__", GETITEM, "self, index"),
  F("torch.select", SELECT, "self:input, dim, index"),
  M("select", SELECT, "self, dim, index"),
  A("aten.select.int", SELECT, "self, dim, index"),
  AP("aten.select", SELECT, "self, dim, index"),
  A("aten.select_copy.int", SELECT, "self, dim, index"),
  A("aten.slice.Tensor", SLICE, "self, dim=0, start=None, end=None, step=1"),
  A("aten.slice_copy.Tensor", SLICE, "self, dim=0, start=None, end=None, step=1"),
  F("torch.narrow", NARROW, "self:input, dim, start, length"),
  M("narrow", NARROW, "self, dim, start, length"),
  A("aten.narrow.default", NARROW, "self, dim, start, length"),
  /* ---------------------------------------------------------------- shape / layout views */
  F("torch.squeeze", SQUEEZE, "self:input, dim=None"),
  M("squeeze", SQUEEZE, "self, dim=None"),
  A("aten.squeeze.dim", SQUEEZE, "self, dim"),
  A("aten.squeeze.dims", SQUEEZE, "self, dim"),
  A("aten.squeeze.default", SQUEEZE, "self"),
  A("aten.squeeze_copy.dims", SQUEEZE, "self, dim"),
  F("torch.unsqueeze", UNSQUEEZE, "self:input, dim"),
  M("unsqueeze", UNSQUEEZE, "self, dim"),
  A("aten.unsqueeze.default", UNSQUEEZE, "self, dim"),
  AP("aten.unsqueeze", UNSQUEEZE, "self, dim"),
  A("aten.unsqueeze_copy.default", UNSQUEEZE, "self, dim"),
  M("view", VIEW, "self, *size"),
  A("aten.view.default", VIEW, "self, size"),
  A("aten._unsafe_view.default", VIEW, "self, size"),
  A("aten.view_copy.default", VIEW, "self, size"),
  F("torch.reshape", RESHAPE, "self:input, shape"),
  M("reshape", RESHAPE, "self, *shape"),
  A("aten.reshape.default", RESHAPE, "self, shape"),
  /* make_fx on torch 1.13 turns a viewable reshape into _reshape_alias(self, size, stride);
     the strides describe the same row-major view, so the values are reshape's */
  A("aten._reshape_alias.default", RESHAPE, "self, shape:size, ~stride=None"),
  F("torch.flatten", FLATTEN, "self:input, start_dim=0, end_dim=-1"),
  M("flatten", FLATTEN, "self, start_dim=0, end_dim=-1"),
  A("aten.flatten.using_ints", FLATTEN, "self, start_dim=0, end_dim=-1"),
  MOD("torch.nn.Flatten", FLATTEN, "self:input, *, start_dim=1, end_dim=-1"),
  MOD("torch.nn.Identity", IDENTITY, "input"),
  F("torch.unflatten", UNFLATTEN, "self:input, dim, sizes"),
  M("unflatten", UNFLATTEN, "self, dim, sizes"),
  A("aten.unflatten.int", UNFLATTEN, "self, dim, sizes"),
  F("torch.permute", PERMUTE, "self:input, dims"),
  M("permute", PERMUTE, "self, *dims"),
  A("aten.permute.default", PERMUTE, "self, dims"),
  A("aten.permute_copy.default", PERMUTE, "self, dims"),
  F("torch.transpose", TRANSPOSE, "self:input, dim0, dim1"),
  M("transpose", TRANSPOSE, "self, dim0, dim1"),
  A("aten.transpose.int", TRANSPOSE, "self, dim0, dim1"),
  A("aten.transpose_copy.int", TRANSPOSE, "self, dim0, dim1"),
  F("torch.swapaxes", TRANSPOSE, "self:input, dim0:axis0, dim1:axis1"),
  M("swapaxes", TRANSPOSE, "self, dim0:axis0, dim1:axis1"),
  F("torch.swapdims", TRANSPOSE, "self:input, dim0, dim1"),
  M("swapdims", TRANSPOSE, "self, dim0, dim1"),
  F("torch.t", T, "self:input"),
  M("t", T, "self"),
  A("aten.t.default", T, "self"),
  A("aten.t_copy.default", T, "self"),
  F("torch.movedim", MOVEDIM, "self:input, source, destination"),
  M("movedim", MOVEDIM, "self, source, destination"),
  A("aten.movedim.int", MOVEDIM, "self, source, destination"),
  A("aten.movedim.intlist", MOVEDIM, "self, source, destination"),
  M("expand", EXPAND, "self, *size"),
  A("aten.expand.default", EXPAND, "self, size, *, ~implicit=False"),
  A("aten.broadcast_to.default", EXPAND, "self, size"),
  A("aten.expand_copy.default", EXPAND, "self, size, *, ~implicit=False"),
  /* ---------------------------------------------------------------- embeddings */
  F("torch.nn.functional.embedding", EMBEDDING,
    "indices:input, weight, padding_idx=None, -max_norm=None, ~norm_type=2.0, ~scale_grad_by_freq=False, ~sparse=False"),
  AO("aten.embedding.default", EMBEDDING, "weight, indices, padding_idx=-1, ~scale_grad_by_freq=False, ~sparse=False", 0,
     "padding_idx=-1 means none"),
  MOD("torch.nn.Embedding", EMBEDDING,
      "indices:input, *, ~num_embeddings=None, ~embedding_dim=None, padding_idx=None, -max_norm=None, ~norm_type=2.0, ~scale_grad_by_freq=False, ~sparse=False, ~device=None, ~dtype=None"),
  FN("torch.nn.functional.embedding_bag", EMBEDDING_BAG,
     "indices:input, weight, offsets=None, -max_norm=None, ~norm_type=2, ~scale_grad_by_freq=False, mode='mean', ~sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None",
     "returns one tensor"),
  {"aten._embedding_bag.default", OX_LEVEL_ATEN, OX_OPID_EMBEDDING_BAG,
   "weight, indices, offsets, ~scale_grad_by_freq=False, mode=0, ~sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=-1",
   "mode 0/1/2 = 'sum'/'mean'/'max'; returns (output, offset2bag, bag_size, max_indices)", H_EBAG_MODE, 4, OX_DT_UNKNOWN},
  {"aten.embedding_bag.padding_idx", OX_LEVEL_ATEN, OX_OPID_EMBEDDING_BAG,
   "weight, indices, offsets, ~scale_grad_by_freq, mode, ~sparse, per_sample_weights, include_last_offset, padding_idx",
   "mode 0/1/2 = 'sum'/'mean'/'max'; returns 4 tensors", H_EBAG_MODE, 4, OX_DT_UNKNOWN},
  {"aten.embedding_bag.default", OX_LEVEL_ATEN, OX_OPID_EMBEDDING_BAG,
   "weight, indices, offsets, ~scale_grad_by_freq=False, mode=0, ~sparse=False, per_sample_weights=None, include_last_offset=False",
   "mode 0/1/2 = 'sum'/'mean'/'max'; returns 4 tensors", H_EBAG_MODE, 4, OX_DT_UNKNOWN},
  MOD("torch.nn.EmbeddingBag", EMBEDDING_BAG,
      "indices:input, offsets=None, per_sample_weights=None, *, ~num_embeddings=None, ~embedding_dim=None, -max_norm=None, ~norm_type=2.0, ~scale_grad_by_freq=False, mode='mean', ~sparse=False, include_last_offset=False, padding_idx=None, ~device=None, ~dtype=None"),
  /* ---------------------------------------------------------------- convolution / pooling */
  F("torch.conv2d", CONV2D, "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1"),
  F("torch.nn.functional.conv2d", CONV2D, "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1"),
  A("aten.conv2d.default", CONV2D, "input, weight, bias=None, stride=[1], padding=[0], dilation=[1], groups=1"),
  {"aten.convolution.default", OX_LEVEL_ATEN, OX_OPID_CONV2D,
   "input, weight, bias, stride, padding, dilation, -transposed=False, -output_padding=[0], groups",
   "transposed convolution is not supported", H_NONE, 0, OX_DT_UNKNOWN},
  MOD("torch.nn.Conv2d", CONV2D,
      "input, *, ~in_channels=None, ~out_channels=None, ~kernel_size=None, stride=1, padding=0, dilation=1, groups=1, ~bias=True, -padding_mode='zeros', ~device=None, ~dtype=None"),
  F("torch.nn.functional.batch_norm", BATCH_NORM,
    "input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05"),
  F("torch.batch_norm", BATCH_NORM,
    "input, weight, bias, running_mean, running_var, training, momentum, eps, ~cudnn_enabled"),
  A("aten.batch_norm.default", BATCH_NORM,
    "input, weight, bias, running_mean, running_var, training, momentum, eps, ~cudnn_enabled"),
  AO("aten._native_batch_norm_legit_no_training.default", BATCH_NORM,
     "input, weight, bias, running_mean, running_var, momentum, eps", 3, "returns (out, save_mean, save_rstd); eval mode"),
  {"torch.nn.BatchNorm2d", OX_LEVEL_MODULE, OX_OPID_BATCH_NORM,
   "input, *, ~num_features=None, eps=1e-05, momentum=0.1, ~affine=True, -track_running_stats=True, training=False, ~device=None, ~dtype=None",
   "the bridge writes training=True for a module in training mode", H_NONE, 0, OX_DT_UNKNOWN},
  F("torch.nn.functional.max_pool2d", MAX_POOL2D,
    "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, -return_indices=False"),
  F("torch.nn.functional._max_pool2d", MAX_POOL2D,
    "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, -return_indices=False"),
  F("torch.max_pool2d", MAX_POOL2D, "input:self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False"),
  A("aten.max_pool2d.default", MAX_POOL2D, "input:self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False"),
  AO("aten.max_pool2d_with_indices.default", MAX_POOL2D,
     "input:self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False", 2, "returns (out, indices)"),
  MOD("torch.nn.MaxPool2d", MAX_POOL2D,
      "input, *, kernel_size, stride=None, padding=0, dilation=1, -return_indices=False, ceil_mode=False"),
  F("torch.nn.functional.adaptive_avg_pool2d", ADAPTIVE_AVG_POOL2D, "input, output_size"),
  F("torch._C._nn.adaptive_avg_pool2d", ADAPTIVE_AVG_POOL2D, "input, output_size"),
  A("aten.adaptive_avg_pool2d.default", ADAPTIVE_AVG_POOL2D, "input:self, output_size"),
  A("aten._adaptive_avg_pool2d.default", ADAPTIVE_AVG_POOL2D, "input:self, output_size"),
  MOD("torch.nn.AdaptiveAvgPool2d", ADAPTIVE_AVG_POOL2D, "input, *, output_size"),
  F("torch.nn.functional.interpolate", INTERPOLATE,
    "input, size=None, scale_factor=None, mode='nearest', align_corners=None, recompute_scale_factor=None, -antialias=False"),
  F("torch.nn.functional.upsample", INTERPOLATE, "input, size=None, scale_factor=None, mode='nearest', align_corners=None"),
  MOD("torch.nn.Upsample", INTERPOLATE,
      "input, *, size=None, scale_factor=None, mode='nearest', align_corners=None, recompute_scale_factor=None"),
  F("torch.nn.functional.avg_pool2d", AVG_POOL2D,
    "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None"),
  F("torch._C._nn.avg_pool2d", AVG_POOL2D,
    "input:self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None"),
  F("torch.avg_pool2d", AVG_POOL2D,
    "input:self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None"),
  A("aten.avg_pool2d.default", AVG_POOL2D,
    "input:self, kernel_size, stride=[], padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None"),
  MOD("torch.nn.AvgPool2d", AVG_POOL2D,
      "input, *, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None"),
  /* ---------------------------------------------------------------- attention */
  {"torch.nn.MultiheadAttention", OX_LEVEL_MODULE, OX_OPID_MULTI_HEAD_ATTENTION,
   "query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None, average_attn_weights=True, ~is_causal=False, *, "
   "~embed_dim=None, num_heads, ~dropout=0.0, ~bias=True, -add_bias_kv=False, -add_zero_attn=False, ~kdim=None, "
   "~vdim=None, batch_first=False, -training=False",
   "eval mode; masks bool or additive; parameters in_proj_weight (kdim and vdim equal to embed_dim) or "
   "q_proj_weight, k_proj_weight, v_proj_weight; in_proj_bias, out_proj.weight, out_proj.bias", H_NONE, 2, OX_DT_UNKNOWN},
  FN("torchvision.models.swin_transformer.shifted_window_attention", SHIFTED_WINDOW_ATTENTION,
     "input, qkv_weight, proj_weight, relative_position_bias, window_size, num_heads, shift_size, attention_dropout=0.0, "
     "dropout=0.0, qkv_bias=None, proj_bias=None, logit_scale=None",
     "torchvision's Swin window attention (V2 with logit_scale); its dropouts run even in eval, so only p = 0 "
     "is reproducible"),
  /* ---------------------------------------------------------------- sequence modules */
  {"torch.nn.TransformerEncoderLayer", OX_LEVEL_MODULE, OX_OPID_TRANSFORMER_ENCODER_LAYER,
   "src, src_mask=None, src_key_padding_mask=None, ~is_causal=None, *, ~d_model=None, nhead, "
   "~dim_feedforward=None, ~dropout=0.1, activation='relu', layer_norm_eps=1e-05, batch_first=False, "
   "norm_first=False, -training=False",
   "eval mode; activation relu or gelu; parameters self_attn.in_proj_weight ... norm2.bias",
   H_NONE, 0, OX_DT_UNKNOWN},
  {"torch.nn.TransformerEncoder", OX_LEVEL_MODULE, OX_OPID_TRANSFORMER_ENCODER,
   "src, mask=None, src_key_padding_mask=None, ~is_causal=None, *, num_layers, nhead, ~d_model=None, "
   "~dim_feedforward=None, ~dropout=0.1, activation='relu', layer_norm_eps=1e-05, batch_first=False, "
   "norm_first=False, norm_eps=None, enable_nested_tensor=True, ~mask_check=True, -training=False",
   "eval mode; the layers' settings are those of layers.0 (the bridge writes them); "
   "norm_eps: the final norm's eps, None without one; torch 1.13's nested-tensor path in inference "
   "(a bool padding mask, post-norm, batch_first): padded positions 0", H_NONE, 0, OX_DT_UNKNOWN},
#define RNN_MOD(t, o, extra)                                                                            \
  {t, OX_LEVEL_MODULE, OX_OPID_##o,                                                                    \
   "input, hx=None, *, ~input_size=None, hidden_size, num_layers=1, bias=True, batch_first=False, "    \
   "~dropout=0.0, bidirectional=False, -training=False" extra,                                          \
   "eval mode; a tensor input (no PackedSequence); returns (output, h_n)", H_NONE, 2, OX_DT_UNKNOWN}
  RNN_MOD("torch.nn.GRU", GRU, ""),
  RNN_MOD("torch.nn.LSTM", LSTM, ", -proj_size=0"),
  RNN_MOD("torch.nn.RNN", RNN, ", nonlinearity='tanh'"),
#undef RNN_MOD
  F("torchvision.models.swin_transformer._get_relative_position_bias", RELATIVE_POSITION_BIAS,
    "relative_position_bias_table, relative_position_index, window_size"),
  F("torchvision.models.swin_transformer._patch_merging_pad", PATCH_MERGING_PAD, "x"),
  /* ---------------------------------------------------------------- constants */
  F("torch.ones", ONES, "*size, dtype=None, ~layout=None, ~device=None, ~pin_memory=False, ~requires_grad=False"),
  F("torch.zeros", ZEROS, "*size, dtype=None, ~layout=None, ~device=None, ~pin_memory=False, ~requires_grad=False"),
  F("torch.full", FULL, "size, fill_value, *, dtype=None, ~layout=None, ~device=None, ~pin_memory=False, ~requires_grad=False"),
  F("torch.arange", ARANGE, "start, end=None, step=1, *, dtype=None, ~layout=None, ~device=None, ~pin_memory=False, ~requires_grad=False"),
  A("aten.ones.default", ONES, "size, *, dtype=None, ~layout=None, ~device=None, ~pin_memory=None"),
  A("aten.zeros.default", ZEROS, "size, *, dtype=None, ~layout=None, ~device=None, ~pin_memory=None"),
  A("aten.full.default", FULL, "size, fill_value, *, dtype=None, ~layout=None, ~device=None, ~pin_memory=None"),
  A("aten.arange.default", ARANGE, "start:end, *, dtype=None, ~layout=None, ~device=None, ~pin_memory=None"),
  A("aten.arange.start", ARANGE, "start, end, *, dtype=None, ~layout=None, ~device=None, ~pin_memory=None"),
  A("aten.arange.start_step", ARANGE, "start, end, step=1, *, dtype=None, ~layout=None, ~device=None, ~pin_memory=None"),
  /* ---------------------------------------------------------------- dtype conversion, size */
  {"to", OX_LEVEL_METHOD, OX_OPID_TO, "self, *args, dtype=None, ~device=None, ~non_blocking=False, ~copy=False, ~memory_format=None",
   "dtype and device in any order; a device only is an identity; to(other_tensor) unsupported", H_TO_METHOD, 0, OX_DT_UNKNOWN},
  MDT("float", F32), MDT("double", F64), MDT("half", F16), MDT("bfloat16", BF16),
  MDT("long", I64), MDT("int", I32), MDT("bool", BOOL),
  A("aten._to_copy.default", TO, "self, *, dtype=None, ~layout=None, ~device=None, ~pin_memory=None, ~non_blocking=False, ~memory_format=None"),
  A("aten.to.dtype", TO, "self, dtype, ~non_blocking=False, ~copy=False, ~memory_format=None"),
  A("prims.convert_element_type.default", TO, "self:a, dtype"),
  M("size", SIZE, "self, dim=None"),
  A("aten.sym_size.int", SIZE, "self, dim"),
  A("aten.sym_size.default", SIZE, "self"),
};

#undef F
#undef FN
#undef M
#undef A
#undef AO
#undef MOD
#undef MDT
#undef UNARY

/* ------------------------------------------------------------------ parsed schemas */

enum { P_SLOT = 0, P_NEUTRAL, P_IGNORED };
#define MAX_PARAMS 24

typedef struct Param {
  const char *name;   /* printed name */
  int slot;           /* canonical slot (P_SLOT), -1 otherwise */
  uint8_t kind;
  bool kwonly;
  bool varargs;
  const OxValue *def; /* NULL = required */
} Param;

typedef struct Parsed {
  Param p[MAX_PARAMS];
  uint32_t n;
  uint32_t n_positional; /* params accepting a positional argument (varargs counts once) */
  int varargs;           /* index of the *name param, -1 if none */
} Parsed;

typedef struct Table {
  OxOpInfo info[OX_OPID_COUNT];
  OxSpelling *sp;
  const Src **src; /* per spelling: its source entry (hook, outputs) */
  Parsed *parsed;
  size_t n_sp;
  uint32_t *hash;  /* open addressing: index+1 into sp, 0 = empty */
  size_t hash_cap;
} Table;

static Table T;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static int table_ready; /* set (release) at the end of table_init: later calls skip pthread_once */

static const char *const canon_src[OX_OPID_COUNT] = {
  [OX_OPID_NONE] = NULL,
#define OX_OPDEF(id, name, flags, schema) [OX_OPID_##id] = schema,
#include "ops/ox_ops.def"
#undef OX_OPDEF
};
static const char *const canon_names[OX_OPID_COUNT] = {
#define OX_OPDEF(id, name, flags, schema) [OX_OPID_##id] = name,
#include "ops/ox_ops.def"
#undef OX_OPDEF
};
static const unsigned canon_flags[OX_OPID_COUNT] = {
#define OX_OPDEF(id, name, flags, schema) [OX_OPID_##id] = flags,
#include "ops/ox_ops.def"
#undef OX_OPDEF
};

static char *dupn(const char *s, size_t n) {
  char *p = ox_xrealloc(NULL, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

static void trim(const char **s, const char **e) {
  while (*s < *e && (**s == ' ' || **s == '\t')) (*s)++;
  while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t')) (*e)--;
}

/* Parses a Python literal used as a default; the table is ours, so bad text is our bug. */
static OxValue *parse_literal(const char *s, const char *e) {
  OxValue *v = ox_xcalloc(1, sizeof *v);
  trim(&s, &e);
  size_t n = (size_t)(e - s);
  assert(n > 0);
  if (n == 4 && !memcmp(s, "None", 4)) v->kind = OX_V_NONE;
  else if (n == 4 && !memcmp(s, "True", 4)) { v->kind = OX_V_BOOL; v->u.b = true; }
  else if (n == 5 && !memcmp(s, "False", 5)) { v->kind = OX_V_BOOL; v->u.b = false; }
  else if (*s == '\'') {
    assert(n >= 2 && e[-1] == '\'');
    v->kind = OX_V_STR;
    v->s = dupn(s + 1, n - 2);
  } else if (*s == '[') {
    assert(e[-1] == ']');
    v->kind = OX_V_LIST;
    const char *p = s + 1, *end = e - 1;
    OxValue *items = NULL;
    uint32_t k = 0;
    while (p < end) {
      const char *q = p;
      while (q < end && *q != ',') q++;
      const char *a = p, *b = q;
      trim(&a, &b);
      if (b > a) {
        OxValue *it = parse_literal(a, b);
        items = ox_xrealloc(items, (k + 1) * sizeof *items);
        items[k++] = *it;
        free(it);
      }
      p = q + 1;
    }
    v->n = k;
    v->u.items = items;
  } else {
    char *tmp = dupn(s, n), *end = NULL;
    long long i = strtoll(tmp, &end, 10);
    if (*end == 0) {
      v->kind = OX_V_INT;
      v->u.i = i;
    } else {
      double f = strtod(tmp, &end);
      assert(*end == 0);
      v->kind = OX_V_FLOAT;
      v->u.f = f;
    }
    free(tmp);
  }
  return v;
}

/* Splits a schema at top-level commas; calls fn(entry start, end) for each. */
typedef void (*EntryFn)(const char *s, const char *e, void *data);
static void split_schema(const char *schema, EntryFn fn, void *data) {
  const char *p = schema;
  int depth = 0;
  bool quote = false;
  const char *start = p;
  for (;; p++) {
    char c = *p;
    if (c == '\'') quote = !quote;
    else if (!quote && (c == '[' || c == '(')) depth++;
    else if (!quote && (c == ']' || c == ')')) depth--;
    if (c == 0 || (c == ',' && depth == 0 && !quote)) {
      const char *a = start, *b = p;
      trim(&a, &b);
      if (b > a) fn(a, b, data);
      if (c == 0) break;
      start = p + 1;
    }
  }
}

static void canon_entry(const char *s, const char *e, void *data) {
  OxOpInfo *info = data;
  assert(info->n_slots < OX_MAX_SLOTS);
  const char *eq = memchr(s, '=', (size_t)(e - s));
  const char *ne = eq ? eq : e;
  const char *a = s;
  trim(&a, &ne);
  info->slot_names[info->n_slots] = dupn(a, (size_t)(ne - a));
  info->slot_defaults[info->n_slots] = eq ? parse_literal(eq + 1, e) : NULL;
  info->n_slots++;
}

static int canon_slot(const OxOpInfo *info, const char *name, size_t n) {
  for (uint32_t i = 0; i < info->n_slots; i++)
    if (strlen(info->slot_names[i]) == n && !memcmp(info->slot_names[i], name, n)) return (int)i;
  return -1;
}

typedef struct {
  Parsed *ps;
  const OxOpInfo *info;
  bool kwonly;
} SpellCtx;

static void spell_entry(const char *s, const char *e, void *data) {
  SpellCtx *c = data;
  if (e - s == 1 && *s == '*') {
    c->kwonly = true;
    return;
  }
  assert(c->ps->n < MAX_PARAMS);
  Param *p = &c->ps->p[c->ps->n];
  memset(p, 0, sizeof *p);
  p->slot = -1;
  if (*s == '-') { p->kind = P_NEUTRAL; s++; }
  else if (*s == '~') { p->kind = P_IGNORED; s++; }
  else if (*s == '*') { p->varargs = true; s++; }
  const char *eq = memchr(s, '=', (size_t)(e - s));
  const char *ne = eq ? eq : e;
  const char *colon = memchr(s, ':', (size_t)(ne - s));
  const char *name = colon ? colon + 1 : s;
  const char *a = name, *b = ne;
  trim(&a, &b);
  p->name = dupn(a, (size_t)(b - a));
  if (p->kind == P_SLOT) {
    const char *sa = s, *sb = colon ? colon : ne;
    trim(&sa, &sb);
    p->slot = canon_slot(c->info, sa, (size_t)(sb - sa));
    if (!strcmp(p->name, "args") && p->varargs) p->slot = -1; /* Tensor.to(*args): hook */
    else assert(p->slot >= 0 && "spelling schema names a slot the op lacks");
  }
  p->def = eq ? parse_literal(eq + 1, e) : NULL;
  p->kwonly = c->kwonly;
  if (p->varargs) {
    c->ps->varargs = (int)c->ps->n;
    c->ps->n_positional++;
    c->kwonly = true; /* after *args everything is keyword-only */
  } else if (!c->kwonly) {
    c->ps->n_positional++;
  }
  c->ps->n++;
}

static uint64_t hash_key(int cls, const char *s) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)cls;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static int level_class(OxOpLevel l) {
  return l == OX_LEVEL_METHOD ? 1 : l == OX_LEVEL_MODULE ? 2 : 0;
}

static void add_spelling(size_t *k, const Src *s, const char *target) {
  OxSpelling *sp = &T.sp[*k];
  sp->target = target;
  sp->level = s->level;
  sp->op = s->op;
  sp->schema = s->schema;
  sp->note = s->note;
  T.src[*k] = s;
  Parsed *ps = &T.parsed[*k];
  ps->varargs = -1;
  SpellCtx c = {ps, &T.info[s->op], false};
  split_schema(s->schema, spell_entry, &c);
  (*k)++;
}

static void table_init(void) {
  for (int id = 1; id < OX_OPID_COUNT; id++) {
    OxOpInfo *info = &T.info[id];
    info->id = (OxOpId)id;
    info->name = canon_names[id];
    info->flags = canon_flags[id];
    info->schema = canon_src[id];
    split_schema(canon_src[id], canon_entry, info);
  }
  size_t n_src = sizeof src_table / sizeof src_table[0], n = 0;
  for (size_t i = 0; i < n_src; i++) n += src_table[i].level == OX_LEVEL_ATEN ? 3 : 1;
  T.sp = ox_xcalloc(n, sizeof *T.sp);
  T.src = ox_xcalloc(n, sizeof *T.src);
  T.parsed = ox_xcalloc(n, sizeof *T.parsed);
  size_t k = 0;
  for (size_t i = 0; i < n_src; i++) {
    const Src *s = &src_table[i];
    assert((s->level == OX_LEVEL_ATEN) == (!strncmp(s->target, "aten.", 5) || !strncmp(s->target, "prims.", 6)));
    if (s->level != OX_LEVEL_ATEN) {
      add_spelling(&k, s, s->target);
      continue;
    }
    /* "aten.mm.default" -> torch.ops.aten.mm.default, aten.mm.default, and (aten only)
       executorch's edge dialect name; prims.* get torch.ops.prims.* twice-less */
    size_t len = strlen(s->target);
    char *full = ox_xrealloc(NULL, len + 11);
    snprintf(full, len + 11, "torch.ops.%s", s->target);
    add_spelling(&k, s, full);
    add_spelling(&k, s, s->target);
    if (!strncmp(s->target, "aten.", 5)) {
      const char *pre = "executorch.exir.dialects.edge._ops.";
      size_t cap = strlen(pre) + len + 1;
      char *edge = ox_xrealloc(NULL, cap);
      snprintf(edge, cap, "%s%s", pre, s->target);
      add_spelling(&k, s, edge);
    } else {
      /* keep the count exact: a third name only exists for aten */
      n--;
    }
  }
  assert(k == n);
  T.n_sp = n;
  assert(OX_OPIX_SPELLING + n < OX_OPIX_STALE - OX_OPIX_MUTATING && "op index: too many spellings");
  T.hash_cap = 16;
  while (T.hash_cap < 2 * n) T.hash_cap *= 2;
  T.hash = ox_xcalloc(T.hash_cap, sizeof *T.hash);
  for (size_t i = 0; i < n; i++) {
    uint64_t h = hash_key(level_class(T.sp[i].level), T.sp[i].target);
    size_t j = h & (T.hash_cap - 1);
    while (T.hash[j]) {
      const OxSpelling *o = &T.sp[T.hash[j] - 1];
      assert(!(level_class(o->level) == level_class(T.sp[i].level) && !strcmp(o->target, T.sp[i].target)) &&
             "duplicate spelling");
      (void)o;
      j = (j + 1) & (T.hash_cap - 1);
    }
    T.hash[j] = (uint32_t)i + 1;
  }
  __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

static void ensure(void) {
  if (__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) return;
  pthread_once(&table_once, table_init);
}

const OxOpInfo *ox_op_info(OxOpId id) {
  ensure();
  return (id > OX_OPID_NONE && id < OX_OPID_COUNT) ? &T.info[id] : NULL;
}

OxOpId ox_op_by_name(const char *name) {
  ensure();
  for (int id = 1; id < OX_OPID_COUNT; id++)
    if (!strcmp(T.info[id].name, name)) return (OxOpId)id;
  return OX_OPID_NONE;
}

const OxSpelling *ox_op_spellings(size_t *count) {
  ensure();
  if (count) *count = T.n_sp;
  return T.sp;
}

static const OxSpelling *lookup(int cls, const char *target) {
  if (!target) return NULL;
  size_t j = hash_key(cls, target) & (T.hash_cap - 1);
  while (T.hash[j]) {
    const OxSpelling *s = &T.sp[T.hash[j] - 1];
    if (level_class(s->level) == cls && !strcmp(s->target, target)) return s;
    j = (j + 1) & (T.hash_cap - 1);
  }
  return NULL;
}

/* Node targets are interned strings, so the passes ask about the same few pointers millions of
 * times. A per-thread direct-mapped cache keyed by (string table serial, pointer) answers
 * without touching the string: a graph's interned strings never move or change, and serials
 * are never reused, so a hit is always right. Without the graph (g NULL) it looks up by text. */
enum { OP_CACHE_BITS = 10 };
typedef struct OpCacheEnt {
  const char *key;
  uint64_t serial;
  const OxSpelling *sp; /* NULL: not an op */
} OpCacheEnt;
static _Thread_local OpCacheEnt op_cache[3][1u << OP_CACHE_BITS];

static const OxSpelling *lookup_cached(const OxGraph *g, int cls, const char *target) {
  if (!target) return NULL;
  uint64_t serial = g ? ox_strtab_serial(g->strings) : 0;
  if (!serial) return lookup(cls, target);
  uint64_t h = (((uint64_t)(uintptr_t)target ^ serial) * 0x9E3779B97F4A7C15ull) >> (64 - OP_CACHE_BITS);
  OpCacheEnt *e = &op_cache[cls][h];
  if (e->key == target && e->serial == serial) return e->sp;
  const OxSpelling *s = lookup(cls, target);
  e->key = target;
  e->serial = serial;
  e->sp = s;
  return s;
}

OxOpId ox_op_of_node(const OxGraph *g, const OxNode *n, const OxSpelling **spelling) {
  ensure();
  const OxSpelling *s = NULL;
  if (n && !n->erased) {
    if (n->op == OX_OP_CALL_FUNCTION) s = lookup_cached(g, 0, n->target);
    else if (n->op == OX_OP_CALL_METHOD) s = lookup_cached(g, 1, n->target);
    else if (n->op == OX_OP_CALL_MODULE) s = lookup_cached(g, 2, n->module_type);
  }
  if (spelling) *spelling = s;
  return s ? s->op : OX_OPID_NONE;
}

/* ------------------------------------------------------------------ op index */

bool ox_target_mutating(const char *t) {
  if (!t) return false;
  size_t len = strlen(t);
  if (len >= 2 && t[len - 1] == '_' && t[len - 2] != '_') return true; /* add_, copy_ (not __add__) */
  /* aten in-place overloads: aten.add_.Tensor */
  for (const char *s = t; (s = strstr(s, "_.")) != NULL; s++)
    if (s > t && s[-1] != '_') return true;
  if (!strncmp(t, "operator.i", 10) && strcmp(t, "operator.invert") != 0 && strcmp(t, "operator.is_") != 0 &&
      strcmp(t, "operator.is_not") != 0 && strcmp(t, "operator.index") != 0)
    return true;
  return false;
}

static bool has_out_kwarg(const OxNode *n) {
  for (uint32_t i = 0; n->kwargs.kind == OX_V_DICT && i < n->kwargs.n; i++)
    if (strcmp(n->kwargs.keys[i], "out") == 0) return true;
  return false;
}

static uint16_t opix_compute(const OxGraph *g, OxNodeId id) {
  if (!id || id >= g->n_nodes) return OX_OPIX_ERASED;
  const OxNode *n = &g->nodes[id];
  if (n->erased) return OX_OPIX_ERASED;
  int cls = n->op == OX_OP_CALL_FUNCTION ? 0 : n->op == OX_OP_CALL_METHOD ? 1 : n->op == OX_OP_CALL_MODULE ? 2 : -1;
  if (cls < 0) return OX_OPIX_NOT_CALL;
  const OxSpelling *s = lookup_cached(g, cls, cls == 2 ? n->module_type : n->target);
  uint16_t v = s ? ox_opix_of_spelling(s) : (uint16_t)(OX_OPIX_UNKNOWN_CALL + cls);
  if (cls < 2 && ((s && (T.info[s->op].flags & OX_OPF_MUTATING)) || ox_target_mutating(n->target) ||
                  has_out_kwarg(n)))
    v |= OX_OPIX_MUTATING;
  return v;
}

uint16_t ox_opix_of_spelling(const OxSpelling *s) {
  ensure();
  return (uint16_t)(OX_OPIX_SPELLING + (s - T.sp));
}

const OxSpelling *ox_opix_spelling(uint16_t ix) {
  ensure();
  if (ix == OX_OPIX_ERASED || ix == OX_OPIX_STALE) return NULL;
  uint16_t k = ix & (uint16_t)~OX_OPIX_MUTATING;
  return k >= OX_OPIX_SPELLING && (size_t)(k - OX_OPIX_SPELLING) < T.n_sp ? &T.sp[k - OX_OPIX_SPELLING] : NULL;
}

uint16_t ox_op_index_compute(OxGraph *g, OxNodeId id) {
  ensure();
  if (id >= g->cap_opix) {
    uint32_t cap = g->cap_nodes > id ? g->cap_nodes : id + 1;
    g->opix = ox_xrealloc(g->opix, cap * sizeof *g->opix);
    for (uint32_t i = g->cap_opix; i < cap; i++) g->opix[i] = OX_OPIX_STALE;
    g->cap_opix = cap;
  }
  uint16_t v = g->opix[id];
  if (v == OX_OPIX_STALE) g->opix[id] = v = opix_compute(g, id);
  return v;
}

const OxSpelling *ox_spelling_find(OxOp kind, const char *target) {
  ensure();
  int cls = kind == OX_OP_CALL_FUNCTION ? 0 : kind == OX_OP_CALL_METHOD ? 1 : kind == OX_OP_CALL_MODULE ? 2 : -1;
  return cls < 0 ? NULL : lookup(cls, target);
}

OxOp ox_spelling_kind(const OxSpelling *s) {
  int cls = level_class(s->level);
  return cls == 0 ? OX_OP_CALL_FUNCTION : cls == 1 ? OX_OP_CALL_METHOD : OX_OP_CALL_MODULE;
}

uint32_t ox_op_index_check(OxGraph *g) {
  uint32_t bad = 0;
  for (uint32_t id = 0; id < g->cap_opix; id++)
    if (g->opix[id] != OX_OPIX_STALE && g->opix[id] != opix_compute(g, id)) bad++;
  return bad;
}

int ox_spelling_outputs(const OxSpelling *s) {
  ensure();
  if (!s || s < T.sp || s >= T.sp + T.n_sp) return 0;
  return T.src[s - T.sp]->outputs;
}

bool ox_op_slot_is_module_param(const char *slot_name) {
  static const char *const names[] = {"weight",          "bias",         "running_mean",    "running_var",
                                      "in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias",
                                      "params", "q_proj_weight", "k_proj_weight", "v_proj_weight"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(slot_name, names[i])) return true;
  return false;
}

static const OxValue module_param_v = {.kind = OX_V_RAW, .s = "<module parameter>"};
const OxValue *ox_op_module_param(void) { return &module_param_v; }
bool ox_op_is_module_param(const OxValue *v) { return v == &module_param_v; }

/* ------------------------------------------------------------------ value formatting */

typedef struct Out {
  char *buf;
  size_t cap, len;
} Out;

/* Appends n bytes of s as snprintf would: what fits (and a NUL), while len counts it all. A
 * trace's reason texts format ~400k values at 100k nodes: vsnprintf per piece was 4 % of it. */
static void outs(Out *o, const char *s, size_t n) {
  if (o->len < o->cap) {
    size_t room = o->cap - o->len - 1;
    size_t c = n < room ? n : room;
    memcpy(o->buf + o->len, s, c);
    o->buf[o->len + c] = 0;
  }
  o->len += n;
}
#define OUTL(o, lit) outs((o), (lit), sizeof(lit) - 1)
static void outz(Out *o, const char *s) { outs(o, s, strlen(s)); }

static void fmt_value(Out *o, const OxGraph *g, const OxValue *v, int depth) {
  if (o->len >= o->cap) return; /* the text is cut there anyway: a 128-input list stops early */
  if (depth > 8) { OUTL(o, "..."); return; }
  switch ((OxValueKind)v->kind) {
  case OX_V_NONE: OUTL(o, "None"); break;
  case OX_V_BOOL: outz(o, v->u.b ? "True" : "False"); break;
  case OX_V_INT: {
    char t[24];
    outs(o, t, (size_t)ox_fmt_i64(t, v->u.i));
    break;
  }
  case OX_V_FLOAT:
    if (isnan(v->u.f)) OUTL(o, "nan");
    else if (isinf(v->u.f)) outz(o, v->u.f > 0 ? "inf" : "-inf");
    else {
      /* Python repr: the shortest text that reads back as the same double, ".0" if integral.
       * The search costs ~2k instructions and batch keys format the same eps or alpha for
       * every candidate: the last few texts are remembered (per thread). */
      enum { FLOAT_MEMO = 4 };
      static _Thread_local struct {
        uint64_t bits;
        bool set;
        char text[40];
      } memo[FLOAT_MEMO];
      static _Thread_local unsigned memo_next;
      uint64_t bits;
      memcpy(&bits, &v->u.f, sizeof bits);
      bool hit = false;
      for (unsigned i = 0; i < FLOAT_MEMO && !hit; i++)
        if (memo[i].set && memo[i].bits == bits) {
          outz(o, memo[i].text);
          hit = true;
        }
      if (hit) break;
      char t[64];
      double f = v->u.f, a = fabs(f);
      if (a != 0 && (a < 1e-4 || a >= 1e16)) {
        for (int prec = 0; prec <= 17; prec++) {
          snprintf(t, sizeof t, "%.*e", prec, f);
          if (strtod(t, NULL) == f) break;
        }
      } else {
        for (int dec = 1; dec <= 20; dec++) {
          snprintf(t, sizeof t, "%.*f", dec, f);
          if (strtod(t, NULL) == f) break;
        }
      }
      if (strlen(t) < sizeof memo[0].text) {
        unsigned i = memo_next++ % FLOAT_MEMO;
        memo[i].bits = bits;
        memo[i].set = true;
        memcpy(memo[i].text, t, strlen(t) + 1);
      }
      outz(o, t);
    }
    break;
  case OX_V_STR:
    OUTL(o, "'");
    outz(o, v->s ? v->s : "");
    OUTL(o, "'");
    break;
  case OX_V_NODE: {
    const char *name = ox_graph_ref_name(g, v->u.node);
    OUTL(o, "%");
    outz(o, name ? name : "?");
    break;
  }
  case OX_V_DTYPE: outz(o, v->s ? v->s : ox_dtype_torch_name(v->u.dtype)); break;
  case OX_V_SYM:
  case OX_V_DEVICE:
  case OX_V_ENUM:
  case OX_V_RAW: outz(o, v->s ? v->s : ""); break;
  case OX_V_ELLIPSIS: OUTL(o, "..."); break;
  case OX_V_SLICE:
    OUTL(o, "slice(");
    for (uint32_t i = 0; i < v->n; i++) {
      if (i) OUTL(o, ", ");
      fmt_value(o, g, &v->u.items[i], depth + 1);
    }
    OUTL(o, ")");
    break;
  case OX_V_LIST:
  case OX_V_TUPLE:
  case OX_V_DICT: {
    bool list = v->kind == OX_V_LIST, dict = v->kind == OX_V_DICT;
    outz(o, list ? "[" : dict ? "{" : "(");
    for (uint32_t i = 0; i < v->n && o->len < o->cap; i++) {
      if (i) OUTL(o, ", ");
      if (dict) {
        outz(o, v->keys[i]);
        OUTL(o, ": ");
      }
      fmt_value(o, g, &v->u.items[i], depth + 1);
    }
    if (v->kind == OX_V_TUPLE && v->n == 1) OUTL(o, ",");
    outz(o, list ? "]" : dict ? "}" : ")");
    break;
  }
  }
}

const char *ox_value_format(const OxGraph *g, const OxValue *v, char *buf, size_t cap) {
  Out o = {buf, cap, 0};
  if (cap) buf[0] = 0;
  fmt_value(&o, g, v, 0);
  if (cap && o.len >= cap) {
    /* cut at an item boundary ("[%a, %b, …]"), never inside a name; a container keeps its closer */
    const char *close = v->kind == OX_V_LIST ? "]" : v->kind == OX_V_TUPLE ? ")" : v->kind == OX_V_DICT ? "}" : "";
    size_t cl = strlen(close);
    size_t have = strlen(buf);
    if (have > cap - cl - 1) have = cap - cl - 1;
    size_t n = ox_text_clip_cut(buf, cap - cl, have);
    memcpy(buf + n, close, cl + 1);
  }
  return buf;
}

/* ------------------------------------------------------------------ normalization */

static bool is_num(const OxValue *v) {
  return v->kind == OX_V_INT || v->kind == OX_V_FLOAT || v->kind == OX_V_BOOL;
}
static double num(const OxValue *v) {
  return v->kind == OX_V_INT ? (double)v->u.i : v->kind == OX_V_FLOAT ? v->u.f : (double)v->u.b;
}

/* Does value v hold the neutral value d? Numbers compare by value (1 == 1.0), an int[N]
 * argument matches a scalar or one-element default by broadcasting ([0, 0] ~ 0 ~ [0]). */
static bool neutral_match(const OxValue *v, const OxValue *d) {
  if (is_num(v) && is_num(d)) return num(v) == num(d);
  bool vseq = v->kind == OX_V_LIST || v->kind == OX_V_TUPLE;
  bool dseq = d->kind == OX_V_LIST || d->kind == OX_V_TUPLE;
  if (vseq && (is_num(d) || (dseq && d->n == 1))) {
    const OxValue *e = dseq ? &d->u.items[0] : d;
    for (uint32_t i = 0; i < v->n; i++)
      if (!neutral_match(&v->u.items[i], e)) return false;
    return true;
  }
  if (vseq && dseq) {
    if (v->n != d->n) return false;
    for (uint32_t i = 0; i < v->n; i++)
      if (!neutral_match(&v->u.items[i], &d->u.items[i])) return false;
    return true;
  }
  if (v->kind != d->kind) return false;
  switch ((OxValueKind)v->kind) {
  case OX_V_NONE:
  case OX_V_ELLIPSIS: return true;
  case OX_V_STR:
  case OX_V_ENUM:
  case OX_V_DEVICE:
  case OX_V_SYM:
  case OX_V_RAW: return v->s && d->s && !strcmp(v->s, d->s);
  case OX_V_DTYPE: return v->u.dtype == d->u.dtype;
  default: return false;
  }
}

static int fail(char *err, size_t cap, const char *fmt, ...) {
  if (cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static const OxValue v_f32 = {.kind = OX_V_DTYPE, .u.dtype = OX_DT_F32};
static const OxValue v_dtypes[OX_DT_COUNT] = {
  [OX_DT_F32] = {.kind = OX_V_DTYPE, .u.dtype = OX_DT_F32},
  [OX_DT_F64] = {.kind = OX_V_DTYPE, .u.dtype = OX_DT_F64},
  [OX_DT_F16] = {.kind = OX_V_DTYPE, .u.dtype = OX_DT_F16},
  [OX_DT_BF16] = {.kind = OX_V_DTYPE, .u.dtype = OX_DT_BF16},
  [OX_DT_I64] = {.kind = OX_V_DTYPE, .u.dtype = OX_DT_I64},
  [OX_DT_I32] = {.kind = OX_V_DTYPE, .u.dtype = OX_DT_I32},
  [OX_DT_BOOL] = {.kind = OX_V_DTYPE, .u.dtype = OX_DT_BOOL},
};
static const OxValue v_modes[3] = {
  {.kind = OX_V_STR, .s = "sum"}, {.kind = OX_V_STR, .s = "mean"}, {.kind = OX_V_STR, .s = "max"}};
static const OxValue v_floor = {.kind = OX_V_STR, .s = "floor"};
static const OxValue v_none = {.kind = OX_V_NONE};

static int find_param(const Parsed *ps, const char *name) {
  for (uint32_t i = 0; i < ps->n; i++)
    if (!strcmp(ps->p[i].name, name)) return (int)i;
  return -1;
}

static int set_slot(OxOpArgs *out, const OxOpInfo *info, const char *name, const OxValue *v) {
  for (uint32_t i = 0; i < info->n_slots; i++)
    if (!strcmp(info->slot_names[i], name)) {
      out->slot[i] = v;
      out->from_default[i] = false;
      return (int)i;
    }
  return -1;
}

/* Tensor.to(*args, **kwargs): positionals may be a dtype, a device (or device string), or
 * both, in torch's accepted orders; a tensor argument (to(other)) is not supported. */
static int normalize_to_method(const OxGraph *g, const OxNode *n, const OxSpelling *sp, const OxOpInfo *info,
                               OxOpArgs *out, char *err, size_t errcap) {
  const OxValue *args = &n->args;
  char b[96];
  if (args->n < 1) return fail(err, errcap, "%s: missing argument self", sp->target);
  out->slot[0] = &args->u.items[0];
  out->slot[1] = info->slot_defaults[1];
  out->from_default[1] = true;
  bool have_dtype = false;
  for (uint32_t i = 1; i < args->n; i++) {
    const OxValue *a = &args->u.items[i];
    if (a->kind == OX_V_DTYPE && !have_dtype) {
      out->slot[1] = a;
      out->from_default[1] = false;
      have_dtype = true;
    } else if (a->kind == OX_V_DEVICE || a->kind == OX_V_STR || (a->kind == OX_V_BOOL && i >= 2) ||
               a->kind == OX_V_NONE || a->kind == OX_V_ENUM) {
      /* device, non_blocking, copy, memory_format: no effect on values */
    } else {
      return fail(err, errcap, "%s: argument %s is not supported (only dtype/device conversion)", sp->target,
                  ox_value_format(g, a, b, sizeof b));
    }
  }
  const OxValue *kw = &n->kwargs;
  for (uint32_t i = 0; kw->kind == OX_V_DICT && i < kw->n; i++) {
    const char *k = kw->keys[i];
    if (!strcmp(k, "dtype")) {
      if (have_dtype) return fail(err, errcap, "%s: got multiple values for argument 'dtype'", sp->target);
      out->slot[1] = &kw->u.items[i];
      out->from_default[1] = false;
      have_dtype = true;
    } else if (!strcmp(k, "device") || !strcmp(k, "non_blocking") || !strcmp(k, "copy") ||
               !strcmp(k, "memory_format")) {
    } else {
      return fail(err, errcap, "%s: unexpected keyword argument '%s'", sp->target, k);
    }
  }
  return 0;
}

int ox_op_normalize(const OxGraph *g, const OxNode *n, OxOpArgs *out, char *err, size_t errcap) {
  ensure();
  memset(out, 0, sizeof *out);
  if (errcap) err[0] = 0;
  const OxSpelling *sp = NULL;
  OxOpId op = ox_op_of_node(g, n, &sp);
  if (!op) {
    if (!n) return fail(err, errcap, "no node");
    const char *t = n->op == OX_OP_CALL_MODULE ? n->module_type : n->target;
    return fail(err, errcap, "unknown op %s[target=%s]", ox_op_name((OxOp)n->op), t ? t : "?");
  }
  size_t idx = (size_t)(sp - T.sp);
  const Src *src = T.src[idx];
  const Parsed *ps = &T.parsed[idx];
  const OxOpInfo *info = &T.info[op];
  out->op = op;
  out->spelling = sp;
  out->n_slots = info->n_slots;
  if (n->op == OX_OP_CALL_MODULE) out->module_path = n->target;
  if (src->hook == H_TO_METHOD) return normalize_to_method(g, n, sp, info, out, err, errcap);

  const OxValue *vals[MAX_PARAMS] = {0};
  bool fromdef[MAX_PARAMS] = {0};
  char b[96];
  const OxValue *args = &n->args;
  uint32_t nargs = (args->kind == OX_V_TUPLE || args->kind == OX_V_LIST) ? args->n : 0;
  for (uint32_t i = 0; i < nargs; i++) {
    if (ps->varargs >= 0 && i >= (uint32_t)ps->varargs) {
      uint32_t rem = nargs - i;
      const OxValue *first = &args->u.items[i];
      if (rem == 1 && (first->kind == OX_V_LIST || first->kind == OX_V_TUPLE)) {
        vals[ps->varargs] = first;
      } else {
        out->packed.kind = OX_V_TUPLE;
        out->packed.n = rem;
        out->packed.u.items = args->u.items + i;
        vals[ps->varargs] = &out->packed;
      }
      break;
    }
    if (i >= ps->n_positional)
      return fail(err, errcap, "%s: takes at most %u positional arguments (%u given)", sp->target,
                  ps->n_positional, nargs);
    vals[i] = &args->u.items[i];
  }
  const OxValue *kw = &n->kwargs;
  for (uint32_t i = 0; kw->kind == OX_V_DICT && i < kw->n; i++) {
    int p = find_param(ps, kw->keys[i]);
    if (p < 0) return fail(err, errcap, "%s: unexpected keyword argument '%s'", sp->target, kw->keys[i]);
    if (vals[p]) return fail(err, errcap, "%s: got multiple values for argument '%s'", sp->target, kw->keys[i]);
    vals[p] = &kw->u.items[i];
  }
  for (uint32_t p = 0; p < ps->n; p++) {
    const Param *pa = &ps->p[p];
    if (!vals[p]) {
      if (pa->def) {
        vals[p] = pa->def;
        fromdef[p] = true;
      } else if (pa->kind == P_SLOT) {
        return fail(err, errcap, "%s: missing argument %s", sp->target, pa->name);
      }
      continue;
    }
    if (pa->kind == P_NEUTRAL && pa->def && !neutral_match(vals[p], pa->def))
      return fail(err, errcap, "%s: %s=%s is not supported", sp->target, pa->name,
                  ox_value_format(g, vals[p], b, sizeof b));
  }
  for (uint32_t p = 0; p < ps->n; p++) {
    const Param *pa = &ps->p[p];
    if (pa->kind != P_SLOT || pa->slot < 0 || !vals[p]) continue;
    out->slot[pa->slot] = vals[p];
    out->from_default[pa->slot] = fromdef[p];
  }
  bool is_module = n->op == OX_OP_CALL_MODULE;
  for (uint32_t s = 0; s < info->n_slots; s++) {
    if (out->slot[s]) continue;
    const char *nm = info->slot_names[s];
    if (is_module && ox_op_slot_is_module_param(nm)) {
      out->slot[s] = &module_param_v;
      continue;
    }
    if (!info->slot_defaults[s]) return fail(err, errcap, "%s: missing argument %s", sp->target, nm);
    out->slot[s] = info->slot_defaults[s];
    out->from_default[s] = true;
  }
  if (is_module) {
    /* constructor flags that remove parameters: bias=False, affine=False, elementwise_affine=False */
    int p;
    if ((p = find_param(ps, "bias")) >= 0 && ps->p[p].kind != P_SLOT && vals[p] && vals[p]->kind == OX_V_BOOL &&
        !vals[p]->u.b)
      set_slot(out, info, "bias", &v_none);
    if (((p = find_param(ps, "affine")) >= 0 || (p = find_param(ps, "elementwise_affine")) >= 0) && vals[p] &&
        vals[p]->kind == OX_V_BOOL && !vals[p]->u.b) {
      set_slot(out, info, "weight", &v_none);
      set_slot(out, info, "bias", &v_none);
    }
  }
  switch (src->hook) {
  case H_SOFTMAX_HALF: {
    int p = find_param(ps, "half_to_float");
    if (vals[p] && vals[p]->kind == OX_V_BOOL && vals[p]->u.b) set_slot(out, info, "dtype", &v_f32);
    else if (vals[p] && vals[p]->kind != OX_V_BOOL)
      return fail(err, errcap, "%s: half_to_float=%s is not a bool", sp->target,
                  ox_value_format(g, vals[p], b, sizeof b));
    break;
  }
  case H_EBAG_MODE: {
    int s = canon_slot(info, "mode", 4);
    const OxValue *m = out->slot[s];
    if (m->kind == OX_V_INT) {
      if (m->u.i < 0 || m->u.i > 2) return fail(err, errcap, "%s: mode=%lld is not 0, 1 or 2", sp->target, (long long)m->u.i);
      out->slot[s] = &v_modes[m->u.i];
    }
    break;
  }
  case H_FLOORDIV: set_slot(out, info, "rounding_mode", &v_floor); break;
  case H_FIXED_DTYPE: set_slot(out, info, "dtype", &v_dtypes[src->dtype]); break;
  default: break;
  }
  /* torch.split / Tensor.split with a list of sections is split_with_sizes */
  if (op == OX_OPID_SPLIT && (out->slot[1]->kind == OX_V_LIST || out->slot[1]->kind == OX_V_TUPLE))
    out->op = OX_OPID_SPLIT_WITH_SIZES;
  return 0;
}
