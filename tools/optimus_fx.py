#!/usr/bin/python3
"""optimus_fx - the bridge between real PyTorch FX graphs and Optimus's JSON dumps.

Optimus's C engine never runs Python and never executes its input. This module is the one
place where PyTorch runs: it turns an nn.Module (or an existing torch.fx.GraphModule) into
our JSON dump format (docs/format-json.md) with per-node shapes/dtypes/strides, and it turns
a JSON dump (original, or rewritten by the engine) back into a runnable GraphModule so the
two can be compared numerically against real PyTorch.

    export(module_or_gm, example_inputs, path, record_io=False, param_fill=None)
    load(path, root=None, allow_namespaces=()) -> torch.fx.GraphModule
    own_namespaces(root=None, spec=None)       # the model's own packages, for allow_namespaces
    restore_params(root, path_or_doc)          # copy record.params into a module
    bench(original, optimized, module=None, ...) -> dict   # interleaved eager timing

Loading is data-driven and safe: call_function targets are resolved from their qualified name
through a whitelist of torch namespaces, plus functions defined in the namespaces the caller
allows (the model's own package with --module, --allow-namespace PKG), by import and attribute
lookup (never eval/exec); the canonical op names of the engine's op table (engine/ops/ox_ops.def,
e.g. "grouped_mm") map to the functions in OPTIMUS_OPS. Module paths are looked up segment by
segment, so any submodule name PyTorch accepts ("block1-0") works.

CLI (see docs/bridge.md):
    /usr/bin/python3 tools/optimus_fx.py export MODULE_SPEC --input-shape 8,16 -o out.json [--record]
    /usr/bin/python3 tools/optimus_fx.py compare ORIGINAL.json OPTIMIZED.json [--module MODULE_SPEC]
                                         [--allow-namespace PKG ...]
    /usr/bin/python3 tools/optimus_fx.py roundtrip MODULE_SPEC --input-shape 8,16 [--allow-namespace PKG]
    /usr/bin/python3 tools/optimus_fx.py bench ORIGINAL.json OPTIMIZED.json [--module MODULE_SPEC]
                                         [--runs N] [--threads N] [--per-pass] [--trace T.json] [--json]
MODULE_SPEC is "package.module:Name" or "path/to/file.py:Name"; it IMPORTS AND RUNS that code.

Runs under Debian's /usr/bin/python3 with python3-torch 1.13; stdlib + torch only.
"""

import argparse
import array
import dis
import gc
import heapq
import importlib
import importlib.util
import inspect
import json
import keyword
import math
import operator
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

FORMAT = "optimus-fx"
VERSION = 1

# ----------------------------------------------------------------------------- dtypes

_DTYPES = [
    (torch.float32, "f32"), (torch.float64, "f64"), (torch.float16, "f16"),
    (torch.bfloat16, "bf16"), (torch.int64, "i64"), (torch.int32, "i32"),
    (torch.int16, "i16"), (torch.int8, "i8"), (torch.uint8, "u8"), (torch.bool, "b8"),
    (torch.complex64, "c64"), (torch.complex128, "c128"),
]
DTYPE_TO_ABBR = {dt: ab for dt, ab in _DTYPES}
ABBR_TO_DTYPE = {ab: dt for dt, ab in _DTYPES}
# torch.float32 -> "torch.float32" and back, for {"dtype": ...} argument values
_DTYPE_BY_TORCH_NAME = {str(dt): dt for dt, _ in _DTYPES}
for _alias in ("float", "double", "half", "long", "int", "short", "cfloat", "cdouble"):
    _DTYPE_BY_TORCH_NAME["torch." + _alias] = getattr(torch, _alias)

_ENUMS = {str(e): e for e in (
    torch.contiguous_format, torch.channels_last, torch.channels_last_3d,
    torch.preserve_format, torch.strided, torch.sparse_coo)}


# ----------------------------------------------------------------------------- py3.11 fix

def _fx_needs_py311_patch():
    major = int(torch.__version__.split(".")[0])
    return sys.version_info >= (3, 11) and major < 2


def _proxy_iter_py311(self):
    """Proxy.__iter__ for Python 3.11: torch 1.13 indexes dis.get_instructions() with
    f_lasti // 2, which is wrong once 3.11 inserts inline CACHE entries; find the
    instruction by its byte offset instead."""
    frame = inspect.currentframe()
    calling = frame.f_back
    for inst in dis.get_instructions(calling.f_code):
        if inst.offset == calling.f_lasti:
            if inst.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(inst.argval))
            break
    return self.tracer.iter(self)


def ensure_fx_patch():
    """Install the Proxy.__iter__ fix once, only on Python >= 3.11 with torch < 2."""
    if _fx_needs_py311_patch() and torch.fx.proxy.Proxy.__iter__ is not _proxy_iter_py311:
        torch.fx.proxy.Proxy.__iter__ = _proxy_iter_py311


# ----------------------------------------------------------------------------- engine ops

def _binary(op, torch_fn):
    """add/sub on the canonical slots (self, other, alpha); self may be a Python scalar
    (operator.add(2.0, x) normalizes to add(self=2.0, other=x))."""
    def fn(self, other, alpha=1):
        if isinstance(self, torch.Tensor):
            return torch_fn(self, other) if alpha == 1 else torch_fn(self, other, alpha=alpha)
        return op(self, other if alpha == 1 else other * alpha)
    return fn


def _mul(self, other):
    return self * other


def _div(self, other, rounding_mode=None):
    if rounding_mode is None:
        return self / other
    if not isinstance(self, torch.Tensor):
        self = torch.tensor(self)
    return torch.div(self, other, rounding_mode=rounding_mode)


def _pow(self, exponent):
    return torch.pow(self, exponent)


def _where(condition, self, other):
    return torch.where(condition, self, other)


def _reduce(torch_fn):
    def fn(self, dim=None, keepdim=False, dtype=None):
        if dim is None:
            return torch_fn(self, dtype=dtype)
        return torch_fn(self, dim, keepdim=keepdim, dtype=dtype)
    return fn


def _softmax(self, dim, dtype=None):
    return F.softmax(self, dim, dtype=dtype)


def _slice(self, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * self.dim()
    index[dim] = slice(start, end, step)
    return self[tuple(index)]


def _squeeze(self, dim=None):
    return self.squeeze() if dim is None else self.squeeze(dim)


def _clone(self, memory_format=None):
    return self.clone() if memory_format is None else self.clone(memory_format=memory_format)


def _contiguous(self, memory_format=None):
    if memory_format is None:
        return self.contiguous()
    return self.contiguous(memory_format=memory_format)


def _embedding(weight, indices, padding_idx=None):
    return F.embedding(indices, weight, padding_idx=padding_idx)


_EMBEDDING_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


def _embedding_bag(weight, indices, offsets=None, mode="mean", per_sample_weights=None,
                   include_last_offset=False, padding_idx=None):
    """The aten-level embedding_bag: a 4-tuple (output, offset2bag, bag_size, max_indices),
    as the op table marks it multi-output."""
    if offsets is None:
        if indices.dim() != 2:
            raise ValueError("embedding_bag: 1-D indices need offsets")
        bags, per_bag = indices.shape
        offsets = torch.arange(0, bags * per_bag, per_bag, dtype=indices.dtype)
        indices = indices.reshape(-1)
    return torch.embedding_bag(weight, indices, offsets, False, _EMBEDDING_BAG_MODES[mode],
                               False, per_sample_weights, include_last_offset, padding_idx)


def _to(self, dtype=None):
    return self if dtype is None else self.to(dtype)


def _size(self, dim=None):
    return self.size() if dim is None else self.size(dim)


def grouped_mm(inputs, weights, biases=None):
    """The engine's grouped matmul (group_linear): out[i] = inputs[i] @ weights[i].T (+ biases[i])."""
    if len(inputs) != len(weights) or (biases is not None and len(biases) != len(inputs)):
        raise ValueError("grouped_mm: inputs, weights and biases differ in length")
    outs = []
    for i, (x, w) in enumerate(zip(inputs, weights)):
        b = None if biases is None else biases[i]
        outs.append(F.linear(x, w, b))
    return tuple(outs)


def _identity(input):
    return input


def _stochastic_depth(input, p, mode, training=True):
    from torchvision.ops import stochastic_depth  # only models that use it need torchvision
    return stochastic_depth(input, p, mode, training)


def _swin(name):
    """torchvision's Swin functions, imported when first called (only Swin models need them)."""
    def call(*args, **kwargs):
        from torchvision.models import swin_transformer
        return getattr(swin_transformer, name)(*args, **kwargs)
    call.__name__ = name.lstrip("_")
    return call


def multi_head_attention(query, key, value, num_heads, in_proj_weight, in_proj_bias,
                         out_proj_weight, out_proj_bias, need_weights=True,
                         average_attn_weights=True, batch_first=False, key_padding_mask=None,
                         attn_mask=None, q_proj_weight=None, k_proj_weight=None, v_proj_weight=None):
    """The engine's canonical attention op: nn.MultiheadAttention.forward in eval mode with its
    masks, given the module's parameters (in_proj_weight, or q/k/v_proj_weight when kdim / vdim
    differ from embed_dim); (output, weights or None)."""
    batched = query.dim() == 3
    if batch_first and batched:
        query, key, value = (x.transpose(1, 0) for x in (query, key, value))
    separate = in_proj_weight is None
    out, weights = F.multi_head_attention_forward(
        query, key, value, query.shape[-1], num_heads, in_proj_weight, in_proj_bias, None, None,
        False, 0.0, out_proj_weight, out_proj_bias, training=False,
        key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
        use_separate_proj_weight=separate, q_proj_weight=q_proj_weight,
        k_proj_weight=k_proj_weight, v_proj_weight=v_proj_weight,
        average_attn_weights=average_attn_weights)
    if batch_first and batched:
        out = out.transpose(1, 0)
    return out, weights


def _params_dict(params):
    """A sequence module's `params` slot: (relative name, tensor) pairs, or a dict."""
    return dict(params.items() if isinstance(params, dict) else params)


def _encoder_layer_module(d_model, nhead, ff, activation, layer_norm_eps, batch_first, norm_first):
    act = {"relu": F.relu, "gelu": F.gelu}.get(activation)
    if act is None:
        raise ValueError("activation %r is not supported (relu or gelu)" % (activation,))
    return nn.TransformerEncoderLayer(d_model, nhead, ff, dropout=0.0, activation=act,
                                      layer_norm_eps=layer_norm_eps, batch_first=batch_first,
                                      norm_first=norm_first)


def transformer_encoder_layer(src, params, nhead, activation="relu", layer_norm_eps=1e-5,
                              batch_first=False, norm_first=False, src_mask=None,
                              src_key_padding_mask=None):
    """The engine's canonical encoder layer: nn.TransformerEncoderLayer in eval mode with the
    given parameters (names as the module's state_dict has them)."""
    p = _params_dict(params)
    w1 = p["linear1.weight"]
    m = _encoder_layer_module(w1.shape[1], nhead, w1.shape[0], activation, layer_norm_eps,
                              batch_first, norm_first).to(dtype=w1.dtype)
    m.load_state_dict(p)
    with torch.no_grad():
        return m.eval()(src, src_mask=src_mask, src_key_padding_mask=src_key_padding_mask)


def transformer_encoder(src, params, num_layers, nhead, activation="relu", layer_norm_eps=1e-5,
                        batch_first=False, norm_first=False, norm_eps=None, mask=None,
                        src_key_padding_mask=None, enable_nested_tensor=True):
    """The engine's canonical encoder: layers.0 ... then the final norm when norm_eps is set."""
    p = _params_dict(params)
    w1 = p["layers.0.linear1.weight"]
    layer = _encoder_layer_module(w1.shape[1], nhead, w1.shape[0], activation, layer_norm_eps,
                                  batch_first, norm_first)
    norm = None if norm_eps is None else nn.LayerNorm(w1.shape[1], eps=norm_eps)
    m = nn.TransformerEncoder(layer, num_layers, norm=norm,
                              enable_nested_tensor=enable_nested_tensor).to(dtype=w1.dtype)
    m.load_state_dict(p)
    with torch.no_grad():
        return m.eval()(src, mask=mask, src_key_padding_mask=src_key_padding_mask)


def _recurrent(cls):
    def call(input, params, hidden_size, hx=None, num_layers=1, bias=True, batch_first=False,
             bidirectional=False, **extra):
        p = _params_dict(params)
        w = p["weight_ih_l0"]
        m = cls(w.shape[1], hidden_size, num_layers=num_layers, bias=bias, batch_first=batch_first,
                bidirectional=bidirectional, **extra).to(dtype=w.dtype)
        m.load_state_dict(p)
        with torch.no_grad():
            return m.eval()(input, hx)
    call.__name__ = cls.__name__.lower()
    call.__doc__ = ("The engine's canonical %s: nn.%s in eval mode with the given parameters."
                    % (cls.__name__.lower(), cls.__name__))
    return call


def _fill(fn):
    def call(size, dtype=None):
        return fn(tuple(size) if isinstance(size, (list, tuple)) else (size,), dtype=dtype)
    call.__name__ = fn.__name__
    return call


def _full(size, fill_value, dtype=None):
    return torch.full(tuple(size) if isinstance(size, (list, tuple)) else (size,), fill_value, dtype=dtype)


def _arange(start, end=None, step=1, dtype=None):
    if end is None:
        return torch.arange(start, dtype=dtype)
    return torch.arange(start, end, step, dtype=dtype)


# Canonical op name (engine/ops/ox_ops.def) -> torch callable taking the canonical slots
# (positional in slot order, or by slot name). The engine may emit these bare names.
OPTIMUS_OPS = {
    "linear": F.linear,
    "addmm": torch.addmm,
    "mm": torch.mm,
    "bmm": torch.bmm,
    "baddbmm": torch.baddbmm,
    "matmul": torch.matmul,
    "einsum": torch.einsum,
    "grouped_mm": grouped_mm,
    "layer_norm": F.layer_norm,
    "native_layer_norm": torch.native_layer_norm,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": F.relu,
    "gelu": F.gelu,
    "silu": F.silu,
    "dropout": F.dropout,
    "clamp": torch.clamp,
    "nan_to_num": torch.nan_to_num,
    "detach": torch.detach,
    "clone": _clone,
    "contiguous": _contiguous,
    "neg": torch.neg,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "add": _binary(operator.add, torch.add),
    "sub": _binary(operator.sub, torch.sub),
    "mul": _mul,
    "div": _div,
    "pow": _pow,
    "where": _where,
    "sum": _reduce(torch.sum),
    "mean": _reduce(torch.mean),
    "softmax": _softmax,
    "split": torch.split,
    "split_with_sizes": torch.split,
    "chunk": torch.chunk,
    "unbind": torch.unbind,
    "cat": torch.cat,
    "stack": torch.stack,
    "getitem": operator.getitem,
    "select": torch.select,
    "slice": _slice,
    "narrow": torch.narrow,
    "squeeze": _squeeze,
    "unsqueeze": torch.unsqueeze,
    "view": torch.Tensor.view,
    "reshape": torch.reshape,
    "flatten": torch.flatten,
    "unflatten": torch.unflatten,
    "permute": torch.permute,
    "transpose": torch.transpose,
    "t": torch.t,
    "movedim": torch.movedim,
    "expand": torch.Tensor.expand,
    "embedding": _embedding,
    "embedding_bag": _embedding_bag,
    "conv2d": F.conv2d,
    "batch_norm": F.batch_norm,
    "max_pool2d": F.max_pool2d,
    "adaptive_avg_pool2d": F.adaptive_avg_pool2d,
    "avg_pool2d": F.avg_pool2d,
    "multi_head_attention": multi_head_attention,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "stochastic_depth": _stochastic_depth,
    "identity": _identity,
    "interpolate": F.interpolate,
    "shifted_window_attention": _swin("shifted_window_attention"),
    "relative_position_bias": _swin("_get_relative_position_bias"),
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "logical_not": torch.logical_not,
    "bitwise_not": torch.bitwise_not,
    "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
    "masked_fill": torch.masked_fill,
    "triu": torch.triu,
    "tril": torch.tril,
    "ones": _fill(torch.ones),
    "zeros": _fill(torch.zeros),
    "full": _full,
    "arange": _arange,
    "transformer_encoder_layer": transformer_encoder_layer,
    "transformer_encoder": transformer_encoder,
    "gru": _recurrent(nn.GRU),
    "lstm": _recurrent(nn.LSTM),
    "rnn": _recurrent(nn.RNN),
    "patch_merging_pad": _swin("_patch_merging_pad"),
    "to": _to,
    "size": _size,
}
# Prefixes under which the engine's canonical names are also accepted.
_OPTIMUS_PREFIXES = ("", "optimus.", "optimus.ops.")
# Our own helper callables, written back as their canonical name on export.
_OWN_CALLABLES = {id(fn): "optimus." + name for name, fn in OPTIMUS_OPS.items()
                  if getattr(fn, "__module__", None) == __name__}


# ----------------------------------------------------------------------------- targets

def target_name(target):
    """The qualified name torch.fx prints for a call_function target: operator.getitem,
    builtins.getattr, torch.nn.functional.relu, torch.ops.aten.mm.default ..."""
    if isinstance(target, str):
        return target
    own = _OWN_CALLABLES.get(id(target))
    if own is not None:
        return own
    if isinstance(target, torch._ops.OpOverload):
        return "torch.ops.%s.%s.%s" % (target.namespace, target._schema.name.split("::")[-1],
                                       target._overloadname)
    if isinstance(target, torch._ops.OpOverloadPacket):
        return "torch.ops.%s" % target._qualified_op_name.replace("::", ".")
    module = getattr(target, "__module__", None)
    if module == "builtins":
        return "builtins." + target.__name__
    if module == "_operator":
        return "operator." + target.__name__
    return torch.fx.node._get_qualified_name(target)


# Namespaces a call_function target may come from. Only direct attributes of these are
# looked up (no deeper attribute walks), and only callables defined by torch or operator.
_TARGET_NAMESPACES = {
    "torch": torch,
    "torch.functional": torch.functional,
    "torch.nn.functional": F,
    "torch._C._nn": torch._C._nn,
    "torch._C._VariableFunctions": torch._C._VariableFunctions,
    "torch.Tensor": torch.Tensor,
    "torch.special": torch.special,
    "torch.linalg": torch.linalg,
    "torch.fft": torch.fft,
    "operator": operator,
    "_operator": operator,
}
# Names in those namespaces that touch files, global state or the RNG seed: never loaded.
_TARGET_DENY = {
    "load", "save", "from_file", "compile", "manual_seed", "seed", "initial_seed",
    "use_deterministic_algorithms", "import_ir_module", "import_ir_module_from_buffer",
    "classes", "hub", "jit", "autograd", "library", "ops", "device", "Tensor",
}
_BUILTIN_TARGETS = {"getattr": getattr}
_OP_NAMESPACES = ("aten", "prims")


class TargetError(ValueError):
    pass


def _is_torch_callable(obj):
    if not callable(obj) or inspect.isclass(obj) or inspect.ismodule(obj):
        return False
    module = getattr(obj, "__module__", None) or ""
    if module in ("_operator", "operator"):
        return True
    if module.startswith("torch"):
        return True
    # builtin methods/functions of torch's C extension and Tensor method descriptors
    objclass = getattr(obj, "__objclass__", None)
    if objclass is not None and issubclass(objclass, torch._C._TensorBase):
        return True
    self_obj = getattr(obj, "__self__", None)
    return self_obj is not None and getattr(self_obj, "__name__", "").startswith("torch")


# Private torch functions that traced models call and that are harmless to load
# (torch._assert: symbolic_trace records the shape asserts of vit_b_16 and others).
_TORCH_PRIVATE_ALLOWED = {"torch._assert"}
# What the fixed whitelist above covers, for error messages.
_FIXED_NAMESPACES_TEXT = ("torch (torch, torch.functional, torch.nn.functional, torch._C._nn, "
                          "torch._C._VariableFunctions, torch.Tensor, torch.special, torch.linalg, "
                          "torch.fft, torch.ops.aten/prims), operator, builtins.getattr, optimus")


def _is_dunder(segment):
    return segment.startswith("__")


def check_namespace(ns):
    """A namespace a dump's call_function targets may come from besides torch: a dotted
    package or module name ("torchvision", "mypkg.layers"). Torch (it has its own fixed
    whitelist) and the standard library are refused. Returns ns."""
    parts = ns.split(".") if isinstance(ns, str) else []
    if not parts or any(not p.isidentifier() or keyword.iskeyword(p) or _is_dunder(p)
                        for p in parts):
        raise TargetError("bad namespace %r (a dotted package name such as 'torchvision')" % (ns,))
    if parts[0] == "torch":
        raise TargetError("namespace %r: torch is resolved through its fixed whitelist only" % ns)
    if parts[0] in getattr(sys, "stdlib_module_names", ()) or parts[0] in sys.builtin_module_names:
        raise TargetError("namespace %r is part of the Python standard library; it cannot be "
                          "allowed" % ns)
    return ns


def own_namespaces(root=None, spec=None):
    """The namespaces a model's own code lives in: the top-level package of MODULE_SPEC's
    module ('torchvision.models:resnet18' -> 'torchvision'; a file spec 'path/net.py:Net' ->
    its module 'optimus_user_net') and the top-level package that defines root's class.
    Torch and the standard library are left out (torch has its fixed whitelist)."""
    out = []
    names = []
    if spec is not None:
        mod_part = spec.rpartition(":")[0]
        if mod_part.endswith(".py") or os.sep in mod_part:
            names.append(_file_module_name(mod_part))
        else:
            names.append(mod_part.split(".")[0])
    if root is not None:
        names.append((type(root).__module__ or "").split(".")[0])
    for n in names:
        try:
            check_namespace(n)
        except TargetError:
            continue
        if n not in out:
            out.append(n)
    return out


def _outside_error(name, namespaces):
    top = name.split(".")[0]
    allowed = _FIXED_NAMESPACES_TEXT
    if namespaces:
        allowed += ", " + ", ".join(namespaces)
    hint = "allow another package with --allow-namespace PKG"
    if top.isidentifier() and top != "torch" and top not in namespaces:
        hint = "allow its package with --allow-namespace %s" % top
    return TargetError("call_function target %r is outside the allowed namespaces: %s; "
                       "%s (allow_namespaces= in load())" % (name, allowed, hint))


def _resolve_in_namespace(name, ns):
    """name inside namespace ns: every segment but the last is a module, imported by its full
    dotted name (so an attribute that merely refers to another module, such as
    'pkg.mod.os', is never followed); the last is an attribute of that module, which must
    be a function (not a class or module) defined inside ns. Private names are fine,
    dunder segments are not. Nothing is evaluated."""
    parts = name.split(".")
    for p in parts:
        if not p.isidentifier() or keyword.iskeyword(p) or _is_dunder(p):
            raise TargetError("call_function target %r is not allowed (bad segment %r)" % (name, p))
    if len(parts) <= len(ns.split(".")):
        raise TargetError("call_function target %r names no function inside %s" % (name, ns))
    module = None
    for i in range(len(ns.split(".")), len(parts)):
        modname = ".".join(parts[:i])
        try:
            module = importlib.import_module(modname)
        except Exception as e:  # ModuleNotFoundError, or the package failed to import
            raise TargetError("call_function target %r: cannot import %s: %s" %
                              (name, modname, e)) from None
        if module.__name__ != modname:
            raise TargetError("call_function target %r: %s is not a module" % (name, modname))
    obj = getattr(module, parts[-1], None)
    if obj is None:
        raise TargetError("call_function target %r: %s has no attribute %r" %
                          (name, module.__name__, parts[-1]))
    defined_in = getattr(obj, "__module__", None) or ""
    if not callable(obj) or inspect.isclass(obj) or inspect.ismodule(obj) or \
            not (defined_in == ns or defined_in.startswith(ns + ".")):
        raise TargetError("call_function target %r is not a function defined in %s" % (name, ns))
    return obj


def resolve_target(name, namespaces=()):
    """Maps a call_function target name from a dump to a callable: the engine's ops, the
    fixed torch/operator whitelist, and functions defined inside the allowed `namespaces`
    (packages such as 'torchvision', see own_namespaces()), found by import and attribute
    lookup. Raises TargetError for anything else (the text is never evaluated)."""
    if not isinstance(name, str) or not name:
        raise TargetError("bad call_function target %r" % (name,))
    for prefix in _OPTIMUS_PREFIXES:
        if prefix and name.startswith(prefix) and name[len(prefix):] in OPTIMUS_OPS:
            return OPTIMUS_OPS[name[len(prefix):]]
    if name in OPTIMUS_OPS:
        return OPTIMUS_OPS[name]
    if name.startswith("builtins."):
        name = name[len("builtins."):]
    if name in _BUILTIN_TARGETS:
        return _BUILTIN_TARGETS[name]
    parts = name.split(".")
    # torch.ops.aten.mm.default / aten.mm.default / torch.ops.aten.mm
    if parts[:2] == ["torch", "ops"]:
        parts = parts[2:]
    if parts and parts[0] in _OP_NAMESPACES:
        if len(parts) not in (2, 3) or not all(p.isidentifier() for p in parts):
            raise TargetError("bad operator target %r" % name)
        ns = getattr(torch.ops, parts[0])
        try:
            packet = getattr(ns, parts[1])
            return packet if len(parts) == 2 else getattr(packet, parts[2])
        except (AttributeError, RuntimeError) as e:
            raise TargetError("unknown operator %r: %s" % (name, e)) from None
    module_name, _, attr = name.rpartition(".")
    namespace = _TARGET_NAMESPACES.get(module_name)
    if namespace is None:
        for ns in namespaces or ():
            check_namespace(ns)
            if name.startswith(ns + "."):
                return _resolve_in_namespace(name, ns)
        raise _outside_error(name, list(namespaces or ()))
    if name not in _TORCH_PRIVATE_ALLOWED and (
            not attr.isidentifier() or attr.startswith("_") or attr in _TARGET_DENY
            or attr.startswith("set_")):
        raise TargetError("call_function target %r is not allowed" % name)
    obj = getattr(namespace, attr, None)
    if obj is None or not _is_torch_callable(obj):
        raise TargetError("call_function target %r is not a torch callable" % name)
    return obj


_METHOD_DUNDERS = {
    "__getitem__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
    "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__pow__",
    "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__and__", "__or__",
    "__xor__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
}


def check_method(name):
    """call_method targets must be public Tensor methods (or arithmetic dunders)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise TargetError("bad call_method target %r" % (name,))
    if name in _METHOD_DUNDERS or (not name.startswith("_") and hasattr(torch.Tensor, name)
                                   and name not in ("register_hook", "backward", "storage",
                                                    "untyped_storage", "share_memory_",
                                                    "numpy", "tolist")):
        return name
    raise TargetError("call_method target %r is not an allowed Tensor method" % name)


def _path_segment_ok(p):
    """A segment of a module/attribute path: any name PyTorch accepts for a submodule
    (non-empty, no '.': "block1-0", "0", "conv1") that torch.fx's generated code can carry in
    a getattr(x, "...") string literal (printable, no quote or backslash); never a dunder."""
    return bool(p) and not _is_dunder(p) and p.isprintable() and not any(c in p for c in '"\\')


def _check_attr_path(path):
    """A dotted get_attr/call_module target split into its segments (looked up one by one
    with getattr, never as Python syntax). Empty and dunder segments are refused."""
    parts = path.split(".") if isinstance(path, str) else []
    if not parts or not all(_path_segment_ok(p) for p in parts):
        raise TargetError("bad attribute path %r" % (path,))
    return parts


# ----------------------------------------------------------------------------- values

def encode_value(v):
    """A Python/FX argument value as JSON (docs/format-json.md, 'Values')."""
    if isinstance(v, torch.fx.Node):
        return {"node": v.name}
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if math.isnan(v):
            return {"float": "nan"}
        if math.isinf(v):
            return {"float": "inf" if v > 0 else "-inf"}
        return float(v)
    if isinstance(v, torch.dtype):
        return {"dtype": str(v)}
    if isinstance(v, torch.device):
        return {"device": str(v)}
    if isinstance(v, (torch.memory_format, torch.layout)):
        return {"enum": str(v)}
    if v is Ellipsis:
        return {"ellipsis": True}
    if isinstance(v, slice):
        return {"slice": [encode_value(v.start), encode_value(v.stop), encode_value(v.step)]}
    if isinstance(v, list):
        return [encode_value(x) for x in v]
    if isinstance(v, tuple):
        return {"tuple": [encode_value(x) for x in v]}
    if isinstance(v, dict):
        return {"dict": [[k if isinstance(k, str) else encode_value(k), encode_value(x)]
                         for k, x in v.items()]}
    if type(v).__name__ in ("SymInt", "SymIntNode"):
        return {"sym": str(v)}
    return {"raw": repr(v)}


def decode_value(v, nodes):
    """JSON -> Python/FX argument value; nodes maps node names to created fx.Nodes."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return [decode_value(x, nodes) for x in v]
    if not isinstance(v, dict) or len(v) != 1:
        raise ValueError("bad value %r" % (v,))
    (kind, x), = v.items()
    if kind == "tuple":
        return tuple(decode_value(i, nodes) for i in x)
    if kind == "node":
        if x not in nodes:
            raise ValueError("reference to unknown or later node %r" % (x,))
        return nodes[x]
    if kind == "float":
        if x not in ("inf", "-inf", "nan"):
            raise ValueError("bad float %r" % (x,))
        return float(x)
    if kind == "dtype":
        dt = _DTYPE_BY_TORCH_NAME.get(x) or ABBR_TO_DTYPE.get(x)
        if dt is None:
            raise ValueError("unknown dtype %r" % (x,))
        return dt
    if kind == "device":
        return torch.device(x)
    if kind == "enum":
        if x not in _ENUMS:
            raise ValueError("unknown enum %r" % (x,))
        return _ENUMS[x]
    if kind == "ellipsis":
        return Ellipsis
    if kind == "slice":
        if not isinstance(x, list) or len(x) != 3:
            raise ValueError("bad slice %r" % (x,))
        return slice(*(decode_value(i, nodes) for i in x))
    if kind == "dict":
        return {k if isinstance(k, str) else decode_value(k, nodes): decode_value(i, nodes)
                for k, i in x}
    if kind == "sym":
        raise ValueError("symbolic value %r cannot be run" % (x,))
    if kind == "raw":
        raise ValueError("raw value %r cannot be run (never evaluated)" % (x,))
    raise ValueError("unknown value kind %r" % (kind,))


# ----------------------------------------------------------------------------- meta

def tensor_meta(t):
    return {"dtype": DTYPE_TO_ABBR.get(t.dtype, str(t.dtype)), "shape": list(t.shape),
            "stride": list(t.stride()), "device": str(t.device)}


def value_meta(v):
    """Per-node meta from the value the node produced (None if it carries nothing)."""
    if isinstance(v, torch.Tensor):
        return {"tensor": tensor_meta(v)}
    if isinstance(v, (tuple, list)) and v and all(isinstance(x, torch.Tensor) for x in v):
        return {"tuple": [tensor_meta(x) for x in v]}
    if type(v).__name__ in ("SymInt", "SymIntNode"):
        return {"symint": str(v)}
    if isinstance(v, (bool, int, float)) or (isinstance(v, (tuple, list)) and
                                             all(isinstance(x, (bool, int, float)) for x in v)):
        return {"scalar": True}
    return None


class _Prop(ShapeProp):
    """ShapeProp that also keeps our per-node meta (ShapeProp's TensorMetadata has no device)."""

    def __init__(self, gm):
        super().__init__(gm)
        self.metas = {}

    def run_node(self, n):
        result = super().run_node(n)
        self.metas[n.name] = value_meta(result)
        return result


# ----------------------------------------------------------------------------- modules

def module_type_name(m):
    cls = type(m)
    if getattr(nn, cls.__name__, None) is cls:
        return "torch.nn." + cls.__name__
    return "%s.%s" % (cls.__module__, cls.__qualname__)


# Constructor hyper-parameters written as kwargs of call_module nodes (agreed with the op
# table, engine/ops/ox_ops.c): the engine's module spellings read them (shape rules need the
# sizes: a module's parameters are not graph values), load() compares them with root's
# module and strips them again. Arguments the engine only accepts at their neutral value
# (padding_mode, track_running_stats, max_norm) are written too, so a module that uses
# anything else is refused by the engine instead of being computed wrongly.
# "bias" is written as a bool (the module has a bias parameter), as the constructor takes it.
MODULE_HPARAMS = [
    (nn.Conv2d, ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                 "groups", "bias", "padding_mode")),
    (nn.Linear, ("in_features", "out_features", "bias")),
    (nn.LayerNorm, ("normalized_shape", "eps", "elementwise_affine")),
    (nn.MaxPool2d, ("kernel_size", "stride", "padding", "dilation", "ceil_mode")),
    (nn.Dropout, ("p", "training")),
    (nn.Softmax, ("dim",)),
    (nn.Flatten, ("start_dim", "end_dim")),
    (nn.Embedding, ("num_embeddings", "embedding_dim", "padding_idx", "max_norm")),
    (nn.EmbeddingBag, ("num_embeddings", "embedding_dim", "max_norm", "mode",
                       "include_last_offset", "padding_idx")),
    (nn.BatchNorm2d, ("num_features", "eps", "momentum", "affine", "track_running_stats",
                      "training")),
    (nn.AdaptiveAvgPool2d, ("output_size",)),
    (nn.AvgPool2d, ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                    "divisor_override")),
    (nn.Hardswish, ("inplace",)),
    (nn.ReLU6, ("inplace",)),  # a Hardtanh of fixed bounds: before Hardtanh
    (nn.Upsample, ("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor")),
    (nn.Hardtanh, ("min_val", "max_val", "inplace")),
    (nn.Hardsigmoid, ("inplace",)),
    # "bias": the module has in_proj_bias; "add_bias_kv": it has bias_k; "training" refused by
    # the engine (its attention runs in eval mode only)
    (nn.MultiheadAttention, ("embed_dim", "num_heads", "dropout", "bias", "add_bias_kv",
                             "add_zero_attn", "kdim", "vdim", "batch_first", "training")),
    # Sequence modules (docs/interpreter.md): an encoder layer's settings are read off its
    # submodules ("activation" as "relu", "gelu" or the callable's qualified name, which the
    # engine refuses); an encoder writes its first layer's (its layers are copies of one) and
    # "norm_eps", the final norm's eps or None.
    (nn.TransformerEncoderLayer, ("d_model", "nhead", "dim_feedforward", "dropout", "activation",
                                  "layer_norm_eps", "batch_first", "norm_first", "training")),
    (nn.TransformerEncoder, ("num_layers", "d_model", "nhead", "dim_feedforward", "dropout",
                             "activation", "layer_norm_eps", "batch_first", "norm_first",
                             "norm_eps", "enable_nested_tensor", "training")),
    (nn.LSTM, ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
               "bidirectional", "proj_size", "training")),
    (nn.GRU, ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
              "bidirectional", "training")),
    (nn.RNN, ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
              "bidirectional", "nonlinearity", "training")),
]


def _activation_name(a):
    if a is F.relu or isinstance(a, nn.ReLU):
        return "relu"
    if a is F.gelu or (isinstance(a, nn.GELU) and a.approximate == "none"):
        return "gelu"
    if isinstance(a, nn.Module):
        return module_type_name(a)
    return "%s.%s" % (getattr(a, "__module__", "?"), getattr(a, "__qualname__", repr(a)))


def _encoder_layer_hparam(m, name):
    if name == "d_model":
        return m.self_attn.embed_dim
    if name == "nhead":
        return m.self_attn.num_heads
    if name == "dim_feedforward":
        return m.linear1.out_features
    if name == "dropout":
        return m.dropout.p
    if name == "activation":
        return _activation_name(m.activation)
    if name == "layer_norm_eps":
        return m.norm1.eps
    if name == "batch_first":
        return m.self_attn.batch_first
    return getattr(m, name)  # norm_first, training


def _hparam(m, name):
    if isinstance(m, nn.TransformerEncoderLayer):
        return _encoder_layer_hparam(m, name)
    if isinstance(m, nn.TransformerEncoder):
        if name == "norm_eps":
            return None if m.norm is None else m.norm.eps
        if name in ("num_layers", "enable_nested_tensor", "training"):
            return getattr(m, name, None)
        return _encoder_layer_hparam(m.layers[0], name)
    if isinstance(m, nn.RNNBase) and name == "bias":
        return bool(m.bias)  # the constructor flag itself (no "bias" parameter)
    if isinstance(m, nn.MultiheadAttention) and name in ("bias", "add_bias_kv"):
        return (m.in_proj_bias if name == "bias" else m.bias_k) is not None
    if name == "bias":  # the constructor flag, not the parameter
        return m.bias is not None
    return getattr(m, name)


def module_hparams(m):
    for cls, names in MODULE_HPARAMS:
        if isinstance(m, cls):
            return {k: _hparam(m, k) for k in names}
    return {}


def _get_path(root, path):
    obj = root
    for p in _check_attr_path(path):
        obj = getattr(obj, p)
    return obj


# ----------------------------------------------------------------------------- tensors

def _json_number(x):
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return x


# Tensors of at least this many values are recorded as "b64": the base64 of their values'
# little-endian bytes (docs/interpreter.md, "The record section"). Exact by construction and
# written at memory speed, where "data" formats every value as a decimal in Python (vit_b_16's
# 86.6M weights: minutes and gigabytes); smaller ones stay readable "data" arrays.
B64_MIN_VALUES = 64
# numpy dtypes of the b64 form, little-endian (bf16 has none in numpy: its 16 bits as int16)
_B64_NUMPY = {torch.float32: "<f4", torch.float64: "<f8", torch.float16: "<f2", torch.bfloat16: "<i2",
              torch.int64: "<i8", torch.int32: "<i4", torch.bool: "|u1"}


def tensor_to_json(t, b64_min=B64_MIN_VALUES):
    t = t.detach().cpu()
    if t.dtype not in DTYPE_TO_ABBR or t.is_complex():
        raise ValueError("cannot record tensor of dtype %s" % t.dtype)
    t = t.contiguous()
    if t.dtype in _B64_NUMPY and t.numel() >= b64_min:
        import base64
        src = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
        raw = src.reshape(-1).numpy().astype(_B64_NUMPY[t.dtype], copy=False).tobytes()
        return {"dtype": DTYPE_TO_ABBR[t.dtype], "shape": list(t.shape),
                "b64": base64.b64encode(raw).decode("ascii")}
    flat = t.reshape(-1).tolist()
    conv = _short_f32 if t.dtype == torch.float32 else _json_number
    return {"dtype": DTYPE_TO_ABBR[t.dtype], "shape": list(t.shape),
            "data": [conv(x) for x in flat]}


_F32 = struct.Struct("f")


def _short_f32(x):
    """The shortest decimal that a reader parsing it as a double and rounding to f32 (what
    strtod + a C cast does) turns back into exactly x; keeps fixtures small."""
    if not math.isfinite(x):
        return _json_number(x)
    for p in (6, 7, 8, 9):
        y = float("%.*g" % (p, x))
        if _F32.unpack(_F32.pack(y))[0] == x:
            return y
    return x


def sin_fill_values(n, scale, freq, phase):
    """value[i] = scale * sin(freq * i + phase), in double, exactly as the C side computes it
    (math.sin is the platform libm, like C's sin)."""
    vals = array.array("d", (scale * math.sin(freq * i + phase) for i in range(n)))
    return torch.frombuffer(vals, dtype=torch.float64).clone() if n else torch.zeros(0, dtype=torch.float64)


def tensor_from_json(d):
    if not isinstance(d, dict) or "dtype" not in d or "shape" not in d:
        raise ValueError("bad tensor %r" % (d,))
    dt = ABBR_TO_DTYPE.get(d["dtype"])
    if dt is None:
        raise ValueError("unknown tensor dtype %r" % (d["dtype"],))
    shape = [int(s) for s in d["shape"]]
    n = math.prod(shape)
    if "fill" in d:
        f = d["fill"]
        if f.get("kind") != "sin":
            raise ValueError("unknown fill kind %r" % (f.get("kind"),))
        return sin_fill_values(n, float(f["scale"]), float(f["freq"]),
                               float(f["phase"])).to(dt).reshape(shape)
    if "b64" in d:
        import base64
        import binascii
        import numpy as np
        if dt not in _B64_NUMPY:
            raise ValueError("no b64 form for dtype %r" % (d["dtype"],))
        try:
            raw = base64.b64decode(d["b64"], validate=True)
        except (binascii.Error, TypeError, ValueError) as e:
            raise ValueError("bad b64 tensor data: %s" % e) from None
        width = np.dtype(_B64_NUMPY[dt]).itemsize
        if len(raw) != n * width:
            raise ValueError("b64 tensor data has %d bytes for shape %s (%d needed)" % (len(raw), shape, n * width))
        a = np.frombuffer(raw, dtype=_B64_NUMPY[dt]).copy()
        if dt == torch.bfloat16:
            return torch.from_numpy(a).view(torch.bfloat16).reshape(shape)
        if dt == torch.bool:
            if (a > 1).any():
                raise ValueError("b64 bool tensor data has bytes other than 0 and 1")
            return torch.from_numpy(a.astype(bool)).reshape(shape)
        return torch.from_numpy(a).to(dt).reshape(shape)
    data = d["data"]
    if len(data) != n:
        raise ValueError("tensor data has %d values for shape %s" % (len(data), shape))
    if dt.is_floating_point:
        vals = array.array("d", (float(x) for x in data))
        t = torch.frombuffer(vals, dtype=torch.float64).clone() if n else torch.zeros(0, dtype=torch.float64)
        return t.to(dt).reshape(shape)
    return torch.tensor(data, dtype=dt).reshape(shape)


def _fill_params(module, tensor_index):
    """param_fill="sin": sets every parameter and float buffer of the module to the closed
    form fill, returns {full name: fill dict}. Scale 1/sqrt(fan_in); running_var stays
    positive (phase/freq keep the argument inside (0, pi))."""
    fills = {}
    named = list(module.named_parameters()) + [
        (n, b) for n, b in module.named_buffers() if b.is_floating_point()]
    for k, (name, t) in enumerate(sorted(named, key=lambda x: x[0])):
        n = t.numel()
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "running_var":
            scale, freq, phase = 1.0, 2.5 / max(n, 1), 0.3
        else:
            fan_in = n // t.shape[0] if t.dim() >= 2 else max(n, 1)
            scale = 1.0 / math.sqrt(fan_in) if t.dim() >= 2 else 0.5
            if leaf == "running_mean":
                scale = 0.1
            freq = 0.7 + 0.013 * ((k * 7) % 37)
            phase = 0.1 + 0.37 * k
        vals = sin_fill_values(n, scale, freq, phase).to(t.dtype).reshape(t.shape)
        with torch.no_grad():
            t.copy_(vals)
        fills[name] = {"kind": "sin", "scale": scale, "freq": freq, "phase": phase}
    return fills


# ----------------------------------------------------------------------------- export

def _trace(m):
    if isinstance(m, torch.fx.GraphModule):
        return m
    if not isinstance(m, nn.Module):
        raise TypeError("export needs an nn.Module or a torch.fx.GraphModule")
    ensure_fx_patch()
    return torch.fx.symbolic_trace(m)


def _flatten_outputs(v, out):
    if isinstance(v, (tuple, list)):
        for x in v:
            _flatten_outputs(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _flatten_outputs(x, out)
    else:
        out.append(v)
    return out


def export_doc(m, example_inputs, record_io=False, param_fill=None):
    """Builds the JSON document (a dict) for module or GraphModule m; see export()."""
    if param_fill not in (None, "sin"):
        raise ValueError("param_fill must be None or 'sin'")
    example_inputs = tuple(example_inputs)
    fills = _fill_params(m, 0) if param_fill == "sin" else {}
    gm = _trace(m)
    prop = _Prop(gm)
    with torch.no_grad():
        result = prop.propagate(*example_inputs)
    modules = dict(gm.named_modules())
    nodes = []
    used_params = []
    for node in gm.graph.nodes:
        kwargs = dict(node.kwargs)
        jn = {"name": node.name, "op": node.op}
        if node.op == "call_function":
            jn["target"] = target_name(node.target)
        else:
            jn["target"] = node.target
        if node.op == "call_module":
            sub = modules[node.target]
            for k, v in module_hparams(sub).items():
                if k in kwargs:
                    raise ValueError("call_module %s already has kwarg %s" % (node.name, k))
                kwargs[k] = v
            for pname, _ in list(sub.named_parameters()) + list(sub.named_buffers()):
                used_params.append(node.target + "." + pname)
        elif node.op == "get_attr":
            used_params.append(node.target)
        jn["args"] = [encode_value(a) for a in node.args]
        jn["kwargs"] = {k: encode_value(v) for k, v in kwargs.items()}
        meta = prop.metas.get(node.name)
        if meta is not None:
            jn["meta"] = meta
        if node.op == "call_module":
            jn["module_type"] = module_type_name(modules[node.target])
        if node.stack_trace:
            jn["stack_trace"] = node.stack_trace
        nodes.append(jn)
    doc = {"format": FORMAT, "version": VERSION,
           "graphs": [{"name": "graph", "nodes": nodes, "subgraphs": []}]}
    if record_io:
        placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(example_inputs):
            raise ValueError("%d example inputs for %d placeholders" %
                             (len(example_inputs), len(placeholders)))
        inputs = {}
        for name, x in zip(placeholders, example_inputs):
            if not isinstance(x, torch.Tensor):
                raise ValueError("record_io: input %s is not a tensor" % name)
            inputs[name] = tensor_to_json(x)
        params = {}
        for path in dict.fromkeys(used_params):
            t = _get_path(gm, path)
            if not isinstance(t, torch.Tensor):
                continue
            entry = {"dtype": DTYPE_TO_ABBR[t.dtype], "shape": list(t.shape)}
            if path in fills:
                entry["fill"] = fills[path]
            else:
                entry = tensor_to_json(t)
            params[path] = entry
        outputs = []
        for v in _flatten_outputs(result, []):
            if v is None:
                outputs.append(None)
            elif isinstance(v, torch.Tensor):
                outputs.append(tensor_to_json(v))
            else:
                raise ValueError("record_io: output of type %s" % type(v).__name__)
        doc["record"] = {"inputs": inputs, "params": params, "outputs": outputs,
                         "seed": torch.initial_seed()}
    return doc


def dumps(doc):
    """Our JSON layout: one node or recorded tensor per line, floats via repr (exact)."""
    def j(v):
        return json.dumps(v, allow_nan=False, separators=(", ", ": "))
    out = ['{"format": %s, "version": %d, "graphs": [' % (j(doc["format"]), doc["version"])]
    for gi, g in enumerate(doc["graphs"]):
        out.append(' {"name": %s, "nodes": [' % j(g["name"]))
        out.append(",\n".join("  " + j(n) for n in g["nodes"]))
        out.append(' ], "subgraphs": %s}%s' % (j(g.get("subgraphs", [])),
                                               "," if gi + 1 < len(doc["graphs"]) else ""))
    rec = doc.get("record")
    if rec is None:
        out.append("]}")
    else:
        out.append('], "record": {')
        for key in ("inputs", "params"):
            out.append(' %s: {' % j(key))
            out.append(",\n".join("  %s: %s" % (j(k), j(v)) for k, v in rec[key].items()))
            out.append(' },')
        out.append(' "outputs": [')
        out.append(",\n".join("  " + j(v) for v in rec["outputs"]))
        out.append(' ], "seed": %s' % j(rec.get("seed", 0)))
        out.append('}}')
    return "\n".join(out) + "\n"


def write_atomic(path, text):
    """Writes text to path through a temporary file in the same folder, synced, then renamed:
    a reader sees the old file or the whole new one. The file gets the usual permissions
    (0666 less the umask), not mkstemp's 0600, as the optimus CLI's writes do."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".optimus-fx-", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
            mask = os.umask(0)
            os.umask(mask)
            os.fchmod(f.fileno(), 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def export(m, example_inputs, path, record_io=False, param_fill=None):
    """Traces m (symbolic_trace for an nn.Module; a GraphModule is used as is), runs
    ShapeProp on example_inputs and writes our JSON to path atomically. With record_io the
    inputs, the parameters/buffers the graph reads and the flattened outputs are recorded.
    param_fill="sin" first overwrites m's parameters and float buffers with the closed-form
    sin fill and records them as fills. Returns the document (dict)."""
    doc = export_doc(m, example_inputs, record_io=record_io, param_fill=param_fill)
    write_atomic(path, dumps(doc))
    return doc


# ----------------------------------------------------------------------------- load

def read_doc(path_or_doc):
    if isinstance(path_or_doc, dict):
        doc = path_or_doc
    else:
        with open(path_or_doc, encoding="utf-8") as f:
            doc = json.load(f)
    if doc.get("format") != FORMAT:
        raise ValueError("not an optimus-fx document (format=%r)" % (doc.get("format"),))
    if doc.get("version") != VERSION:
        raise ValueError("unsupported optimus-fx version %r" % (doc.get("version"),))
    return doc


def record_params(doc):
    """record.params decoded to tensors (fills expanded)."""
    rec = doc.get("record") or {}
    return {k: tensor_from_json(v) for k, v in (rec.get("params") or {}).items()}


def record_inputs(doc):
    """record.inputs decoded, in placeholder order of the main graph."""
    rec = doc.get("record") or {}
    inputs = rec.get("inputs") or {}
    names = [n["name"] for n in doc["graphs"][0]["nodes"] if n["op"] == "placeholder"]
    missing = [n for n in names if n not in inputs]
    if missing:
        raise ValueError("record has no input for placeholder(s) %s" % ", ".join(missing))
    return [tensor_from_json(inputs[n]) for n in names]


def record_outputs(doc):
    rec = doc.get("record") or {}
    return [None if o is None else tensor_from_json(o) for o in rec.get("outputs") or []]


def restore_params(root, path_or_doc):
    """Copies record.params into root's parameters/buffers (by dotted path). Entries that
    root does not have are skipped; returns the list of paths copied."""
    doc = read_doc(path_or_doc)
    done = []
    for path, t in record_params(doc).items():
        try:
            dst = _get_path(root, path)
        except (AttributeError, TargetError):
            continue
        if not isinstance(dst, torch.Tensor) or dst.shape != t.shape:
            raise ValueError("record param %s: shape %s does not match the module's %s" %
                             (path, list(t.shape), list(getattr(dst, "shape", []))))
        with torch.no_grad():
            dst.copy_(t.to(dst.dtype))
        done.append(path)
    return done


def _same_hparam(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_hparam(x, y) for x, y in zip(a, b))
    return a == b


def _node_refs(v, out):
    if isinstance(v, list):
        for x in v:
            _node_refs(x, out)
    elif isinstance(v, dict):
        if len(v) == 1 and "node" in v:
            out.append(v["node"])
        else:
            for x in v.values():
                _node_refs(x, out)
    return out


def stable_toposort(jnodes):
    """JSON nodes in an order where every node follows the nodes it uses (the JSON format
    allows forward references; torch.fx does not), keeping the given order wherever it
    already holds. References to names that no node defines are left for load() to report;
    a cycle raises ValueError."""
    names = {n["name"] for n in jnodes}
    deps = [set(r for r in _node_refs([n.get("args", []), n.get("kwargs", {})], [])
                if r in names and r != n["name"]) for n in jnodes]
    if all(d <= {m["name"] for m in jnodes[:i]} for i, d in enumerate(deps)):
        return list(jnodes)
    index = {n["name"]: i for i, n in enumerate(jnodes)}
    users = [[] for _ in jnodes]
    waiting = [len(d) for d in deps]
    for i, d in enumerate(deps):
        for r in d:
            users[index[r]].append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        i = heapq.heappop(ready)
        out.append(jnodes[i])
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(out) != len(jnodes):
        raise ValueError("graph has a cycle")
    return out


def load(path_or_doc, root=None, graph_name=None, allow_namespaces=()):
    """Builds a runnable torch.fx.GraphModule from our JSON (original or optimized).
    get_attr and call_module targets resolve against root (an nn.Module) segment by segment;
    get_attr targets root lacks are taken from record.params. Hyper-parameter kwargs that
    export() added to call_module nodes are checked against root's module and dropped.
    call_function targets resolve through resolve_target(): torch's whitelist plus functions
    defined in allow_namespaces (e.g. own_namespaces(root, spec) for the model's package)."""
    doc = read_doc(path_or_doc)
    allow_namespaces = [check_namespace(ns) for ns in allow_namespaces or ()]
    graphs = doc.get("graphs") or []
    if not graphs:
        raise ValueError("document has no graphs")
    g = graphs[0] if graph_name is None else next(
        (x for x in graphs if x.get("name") == graph_name), None)
    if g is None:
        raise ValueError("no graph named %r" % graph_name)
    if root is None:
        root = nn.Module()
    recorded = None
    graph = torch.fx.Graph()
    nodes = {}
    owner = {}  # attribute path -> object, for GraphModule's dict root
    for jn in stable_toposort(g["nodes"]):
        op, target, name = jn["op"], jn.get("target"), jn["name"]
        args = tuple(decode_value(a, nodes) for a in jn.get("args", []))
        kwargs = {k: decode_value(v, nodes) for k, v in (jn.get("kwargs") or {}).items()}
        if op == "placeholder":
            pass
        elif op == "output":
            target = "output"
        elif op == "call_function":
            target = resolve_target(target, allow_namespaces)
        elif op == "call_method":
            check_method(target)
        elif op == "get_attr":
            try:
                owner[target] = _get_path(root, target)
            except AttributeError:
                if recorded is None:
                    recorded = record_params(doc)
                if target not in recorded:
                    raise ValueError("get_attr %s: %r is neither in root nor in record.params" %
                                     (name, target)) from None
                owner[target] = recorded[target]
        elif op == "call_module":
            try:
                sub = _get_path(root, target)
            except AttributeError:
                raise ValueError("call_module %s: root has no module %r" % (name, target)) from None
            if not isinstance(sub, nn.Module):
                raise ValueError("call_module %s: %r is not a module" % (name, target))
            owner[target] = sub
            hp = module_hparams(sub)
            for k in list(kwargs):
                if k in hp:
                    if not _same_hparam(kwargs[k], hp[k]):
                        raise ValueError("call_module %s: %s=%r in the dump but %r in the module" %
                                         (name, k, kwargs[k], hp[k]))
                    del kwargs[k]
        else:
            raise ValueError("node %s: unknown op %r" % (name, op))
        fx_node = graph.create_node(op, target, args, kwargs, name=name)
        if "meta" in jn:
            fx_node.meta["optimus"] = jn["meta"]
        nodes[name] = fx_node
    graph.lint()
    return torch.fx.GraphModule(owner, graph, class_name="OptimusGraph")


# ----------------------------------------------------------------------------- compare

TOLERANCES = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 1e-2,
              torch.bfloat16: 2e-2}


def diff(ref, got):
    """(max abs diff, max rel diff, ok) for one tensor pair; rel is abs / max(|ref|) (the
    output scale), ok uses the dtype's tolerance relative to that scale."""
    if ref.shape != got.shape or ref.dtype != got.dtype:
        return math.inf, math.inf, False
    if not ref.is_floating_point():
        bad = int((ref != got).sum())
        return float(bad), float(bad), bad == 0
    r, o = ref.double(), got.double()
    same_nan = torch.isnan(r) == torch.isnan(o)
    fin = torch.isfinite(r) & torch.isfinite(o)
    same_inf = torch.where(torch.isinf(r) | torch.isinf(o), r == o, torch.ones_like(same_nan))
    if not bool(same_nan.all()) or not bool(same_inf.all()):
        return math.inf, math.inf, False
    if not bool(fin.any()):
        return 0.0, 0.0, True
    abs_d = float((r[fin] - o[fin]).abs().max())
    scale = max(float(r[fin].abs().max()), 1.0)
    rel = abs_d / scale
    return abs_d, rel, rel <= TOLERANCES.get(ref.dtype, 1e-5)


def run(gm, inputs):
    with torch.no_grad():
        return _flatten_outputs(gm(*inputs), [])


# ----------------------------------------------------------------------------- bench

BENCH_RUNS, BENCH_WARMUP, BENCH_MIN_TIME, BENCH_THREADS = 31, 5, 0.01, 1


def find_optimus(path=None):
    """The optimus binary: `path` when given, else $OPTIMUS_CLI (what meson gives the tests),
    else build/app/optimus of this source tree, else `optimus` on PATH."""
    def ok(p):
        return os.path.isfile(p) and os.access(p, os.X_OK)
    if path:
        if not ok(path):
            raise ValueError("--optimus %s: not an executable file" % path)
        return path
    env = os.environ.get("OPTIMUS_CLI")
    if env:
        if not ok(env):
            raise ValueError("OPTIMUS_CLI=%s: not an executable file" % env)
        return env
    tree = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "build", "app", "optimus")
    if ok(tree):
        return tree
    found = shutil.which("optimus")
    if found:
        return found
    raise ValueError("cannot find the optimus binary (no --optimus, no $OPTIMUS_CLI, no %s, "
                     "none on PATH): build it (meson setup build && ninja -C build) or pass "
                     "--optimus PATH" % tree)


def _run_optimus(optimus, args, what):
    cmd = [optimus, *args]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        raise ValueError("%s: `%s` did not finish in 900 s" % (what, " ".join(cmd))) from None
    if p.returncode != 0:
        raise ValueError("%s: `%s` exited %d: %s" % (what, " ".join(cmd), p.returncode,
                                                     (p.stderr or p.stdout).strip()))
    return p.stdout


def _concrete_shape(spec):
    shape = spec.get("shape") if isinstance(spec, dict) else None
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        return None
    return shape


def random_tensor(spec, gen, int_high=10, weight=False):
    """A random tensor for a tensor meta {"dtype", "shape"} (concrete dims only): floats are
    standard normal (scaled by 1/sqrt(fan_in) when `weight` and rank >= 2), integers uniform
    in [0, int_high), bools fair coins. Returns None when the meta has no concrete shape or
    a dtype that cannot be drawn."""
    shape = _concrete_shape(spec)
    dtype = ABBR_TO_DTYPE.get(spec.get("dtype", "f32")) if isinstance(spec, dict) else None
    if shape is None or dtype is None or dtype.is_complex:
        return None
    if dtype.is_floating_point:
        t = torch.randn(shape, generator=gen)
        if weight and len(shape) >= 2:
            t = t / math.sqrt(max(1, math.prod(shape[1:])))
        return t.to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    return torch.randint(0, int_high, shape, generator=gen).to(dtype)


def random_inputs(doc, seed=0, int_high=10):
    """One random tensor per placeholder of the main graph, in order, from its tensor meta
    (a generator seeded with `seed`); a placeholder without a concrete tensor meta raises
    ValueError naming it."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for n in doc["graphs"][0]["nodes"]:
        if n["op"] != "placeholder":
            continue
        spec = (n.get("meta") or {}).get("tensor")
        t = random_tensor(spec, gen, int_high) if spec else None
        if t is None:
            raise ValueError("placeholder %s: no recorded input and no concrete tensor shape in "
                             "its meta (%s) to draw one from; export with --record or set its "
                             "shape (optimus convert --input-shape)" %
                             (n["name"], json.dumps((n.get("meta") or {}).get("tensor"))))
        out.append(t)
    return out


def _set_path(root, path, tensor):
    """Registers `tensor` as a buffer at dotted `path` under root, creating empty submodules
    for the missing segments."""
    parts = _check_attr_path(path)
    obj = root
    for p in parts[:-1]:
        nxt = getattr(obj, p, None)
        if nxt is None:
            nxt = nn.Module()
            obj.add_module(p, nxt)
        elif not isinstance(nxt, nn.Module):
            raise ValueError("get_attr %r: %r is not a module" % (path, p))
        obj = nxt
    obj.register_buffer(parts[-1], tensor)


def random_params(docs, root=None, seed=0, int_high=10):
    """get_attr targets that neither `root` nor the document's own record.params provides
    (a dump of a model nobody has at hand, such as gen-recsys's), drawn at random from the
    get_attr node's meta (seeded generator; weights of rank >= 2 scaled by 1/sqrt(fan_in)) and
    registered as buffers under root (an empty nn.Module when root is None), so every graph
    loaded on root reads the same tensors. Returns (root, list of the targets drawn)."""
    wanted = {}
    for doc in docs:
        params = (doc.get("record") or {}).get("params") or {}
        for n in doc["graphs"][0]["nodes"]:
            if n["op"] != "get_attr" or n.get("target") in params or n.get("target") in wanted:
                continue
            if root is not None:
                try:
                    _get_path(root, n["target"])
                    continue
                except AttributeError:
                    pass
            wanted[n["target"]] = n
    if not wanted:
        return root, []
    if root is None:
        root = nn.Module()
    gen = torch.Generator().manual_seed(seed + 1)
    for target in sorted(wanted):
        n = wanted[target]
        spec = (n.get("meta") or {}).get("tensor")
        t = random_tensor(spec, gen, int_high, weight=True) if spec else None
        if t is None:
            raise ValueError("get_attr %s: %r is neither in the module nor in record.params, and "
                             "its meta has no concrete tensor shape to draw it from; give "
                             "--module" % (n["name"], target))
        _set_path(root, target, t)
    return root, sorted(wanted)


def _describe_tensor(t):
    return "%s %s" % (DTYPE_TO_ABBR.get(t.dtype, str(t.dtype)), list(t.shape))


def output_diffs(refs, gots):
    """Per output of `refs` (the original's) against `gots`: a dict with the max absolute and
    relative error and whether it is within compare's tolerance (TOLERANCES). A different
    number of outputs is one failing entry."""
    if len(refs) != len(gots):
        return [{"index": None, "ok": False,
                 "detail": "%d outputs vs %d" % (len(refs), len(gots))}]
    out = []
    for i, (r, g) in enumerate(zip(refs, gots)):
        if isinstance(r, torch.Tensor) and isinstance(g, torch.Tensor):
            a, rel, good = diff(r, g)
            if r.shape != g.shape or r.dtype != g.dtype:
                detail = "%s vs %s" % (_describe_tensor(r), _describe_tensor(g))
            else:
                detail = "%s max abs %.3g max rel %.3g" % (_describe_tensor(r), a, rel)
            out.append({"index": i, "ok": good, "max_abs": a, "max_rel": rel,
                        "tol": TOLERANCES.get(r.dtype, 1e-5) if r.is_floating_point() else 0,
                        "detail": detail})
        else:
            same = type(r) is type(g) and (r is None or r == g)
            out.append({"index": i, "ok": bool(same),
                        "detail": "%r vs %r" % (r, g) if not same else "equal (%r)" % (r,)})
    return out


def _quartiles(xs):
    xs = sorted(xs)
    q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return {"min": xs[0], "q1": q1, "median": statistics.median(xs), "q3": q3, "max": xs[-1]}


CLOCKS = ("wall", "cpu")


def time_interleaved(fns, inputs, runs, warmup, min_time):
    """Times callables fns[i](*inputs) interleaved: `warmup` rounds of one call each, then
    `runs` rounds where every fn gives one sample of `number` calls; the order rotates by one
    each round (A B, B A, A B ... for two), so each fn runs at every position equally often and
    the fns of one round share the machine's state. `number` is the smallest count for which
    the fastest fn's sample lasts min_time seconds (from the warm-up's median call time; 1 when
    min_time is 0). The garbage collector is off while timing. Each sample is taken on two
    clocks: wall (time.perf_counter) and the process's CPU time (time.process_time: every
    thread, nothing while the process waits for a core). Returns ({"wall": samples, "cpu":
    samples}, number): samples[i][r] is fn i's time per call, in ms, in round r."""
    n = len(fns)
    if warmup < 1 or runs < 3:
        raise ValueError("need at least 1 warm-up round and 3 runs")
    wall, cpu = time.perf_counter, time.process_time
    gc_was = gc.isenabled()
    with torch.no_grad():
        warm = [[] for _ in fns]
        for w in range(warmup):
            for k in range(n):
                i = (w + k) % n
                t0 = wall()
                fns[i](*inputs)
                warm[i].append(wall() - t0)
        per_call = max(min(statistics.median(x) for x in warm), 1e-9)
        number = max(1, math.ceil(min_time / per_call)) if min_time > 0 else 1
        out = {"wall": [[] for _ in fns], "cpu": [[] for _ in fns]}
        gc.collect()
        gc.disable()
        try:
            for r in range(runs):
                for k in range(n):
                    i = (r + k) % n
                    f = fns[i]
                    c0, t0 = cpu(), wall()
                    for _ in range(number):
                        f(*inputs)
                    t1, c1 = wall(), cpu()
                    out["wall"][i].append((t1 - t0) * 1e3 / number)
                    out["cpu"][i].append((c1 - c0) * 1e3 / number)
        finally:
            if gc_was:
                gc.enable()
    return out, number


def _verdict(rounds):
    """From the quartiles of the per-round ratios original/other."""
    if rounds["q1"] > 1.0:
        return "faster"
    if rounds["q3"] < 1.0:
        return "slower"
    return "within noise"


def _versus(base, other):
    """other's samples against base's (same rounds): medians, quartiles, the speedup (ratio of
    medians) and the quartiles of the per-round ratios."""
    stats = _quartiles(other)
    rounds = _quartiles([x / y for x, y in zip(base, other)])
    return {"ms": stats["median"], "stats": stats, "speedup": statistics.median(base) / stats["median"],
            "speedup_rounds": rounds, "verdict": _verdict(rounds)}


class _BenchGraph:
    """One graph of a bench session: its label, document, GraphModule, and once run, its
    outputs against the original's and its samples per clock."""

    def __init__(self, label, doc, gm, kind, extra=None):
        self.label, self.doc, self.gm, self.kind = label, doc, gm, kind
        self.extra = dict(extra or {})
        self.outputs = None
        self.diffs = []
        self.ok = True
        self.error = None
        self.samples = None  # {"wall": [...], "cpu": [...]}


def _nodes_signature(doc):
    return [(n["name"], n["op"], n.get("target"), json.dumps(n.get("args", []), sort_keys=True),
             json.dumps(n.get("kwargs") or {}, sort_keys=True)) for n in doc["graphs"][0]["nodes"]]


def _placeholders(doc):
    return [n["name"] for n in doc["graphs"][0]["nodes"] if n["op"] == "placeholder"]


def read_trace(path):
    """An optimus trace (docs/trace-format.md) as a dict, in the version 2 shape whatever its
    version (decode_trace); ValueError when it is not one."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        if raw[:2] == b"\x1f\x8b":  # T.json.gz (optimize --trace T.json.gz)
            import gzip
            raw = gzip.decompress(raw)
        tr = json.loads(raw.decode("utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError("%s:%d:%d: not JSON: %s" % (path, e.lineno, e.colno, e.msg)) from None
    except (OSError, EOFError, UnicodeDecodeError) as e:  # gzip.BadGzipFile is an OSError
        raise ValueError("%s: %s" % (path, e)) from None
    if not isinstance(tr, dict) or tr.get("format") != "optimus-trace":
        raise ValueError("%s: not an optimus trace (format=%r)" %
                         (path, tr.get("format") if isinstance(tr, dict) else None))
    try:
        return decode_trace(tr)
    except (IndexError, KeyError, TypeError, ValueError) as e:
        raise ValueError("%s: a damaged version %s trace (%s: %s); `optimus replay` locates the damage" %
                         (path, tr.get("version"), type(e).__name__, e)) from None


def _index(i, what="node"):
    """An index into one of a trace's tables: a non-negative int (IndexError otherwise, as for
    one out of range)."""
    if not isinstance(i, int) or isinstance(i, bool) or i < 0:
        raise IndexError("%s index %r" % (what, i))
    return i


def _expand_indices(items, ranges):
    """The indices an index list stands for: in version 5 (ranges) an item [first, last]
    (first < last) stands for first, first + 1, ..., last."""
    out = []
    for i in items:
        if ranges and isinstance(i, list):
            if len(i) != 2 or _index(i[0]) >= _index(i[1]):
                raise ValueError("a range must be [first, last] with first < last, not %r" % (i,))
            out.extend(range(i[0], i[1] + 1))
        else:
            out.append(_index(i))
    return out


def _decode_value(v, names, ranges=False):
    """A version 3 to 5 value: {"node": i} -> {"node": names[i]}, {"nodes": [i, ...]} (version 4;
    version 5 with ranges) -> [{"node": names[i]}, ...], the rest as it is."""
    if isinstance(v, list):
        return [_decode_value(x, names, ranges) for x in v]
    if isinstance(v, dict):
        if len(v) == 1 and isinstance(v.get("node"), int):
            return {"node": names[_index(v["node"])]}
        if len(v) == 1 and isinstance(v.get("nodes"), list):  # version 4: a list of node references
            return [{"node": names[i]} for i in _expand_indices(v["nodes"], ranges)]
        return {k: _decode_value(x, names, ranges) for k, x in v.items()}
    return v


def decode_trace(tr):
    """A version 3 to 5 trace (node names, targets and metas in tables, edits as arrays, in
    version 4 runs of edits as one, provenance left out when the replace runs say it, and reason
    arguments in a "strings" table; in version 5 each step's phase, pass and rule in a "rules"
    table, check details in "strings", ranges in index lists and getitems items;
    docs/trace-format.md) in the shape of version 2: names in place of indices, edits as
    objects, "seq", "removed" and "added" as version 2 writes them, "nodes" in every reason.
    The formatted reason text is not rebuilt (its templates live in the engine): reason_text()
    gives it when the trace has it, else the code and arguments. "version" stays as it is. Versions 1
    and 2 are returned as they are. Raises IndexError/KeyError/TypeError on a damaged trace."""
    if not isinstance(tr.get("version"), int) or tr["version"] < 3:
        return tr
    version = tr["version"]
    if version > 5:
        raise ValueError("unsupported trace version %d (this reader knows versions 1 to 5)" % version)
    names, targets, metas = tr["names"], tr.get("targets") or [], tr.get("metas") or []
    strings, rules = tr.get("strings") or [], tr.get("rules") or []
    ranges = version >= 5

    def name(i):
        return None if i is None else names[_index(i)]

    def name_list(items):
        return [names[i] for i in _expand_indices(items, ranges)]

    def value(v):
        return _decode_value(v, names, ranges)

    def index(table, i, what):
        return table[_index(i, what)]

    def edit(e):
        kind = e[0]
        if kind == "toposort":
            return {"kind": "toposort"}
        d = {"kind": kind, "name": name(e[1])}
        if kind == "add":
            op, target = index(targets, e[3], "target")
            d.update(after=name(e[2]), op=op, target=target, args=value(e[4]),
                     kwargs=value(e[6]) if len(e) > 6 else {"dict": []})
            if len(e) > 5 and e[5] is not None:
                d["meta"] = index(metas, e[5], "meta")
        elif kind == "args":
            d.update(args=value(e[2]),
                     kwargs=value(e[3]) if len(e) > 3 else {"dict": []})
        elif kind == "move":
            d["after"] = name(e[2])
        elif kind == "meta":
            d["meta"] = index(metas, e[2], "meta")
        elif kind == "rename":
            d["to"] = e[2]
        elif kind == "replace_input":
            d.update(old=name(e[2]), new=name(e[3]))
        elif kind != "erase":
            raise ValueError("unknown edit kind %r" % (kind,))
        return d

    def getitems(e):
        """["getitems", src, first, k, meta, count | [entry, ...]] (version 5): getitem(src, k),
        getitem(src, k + 1) ... named names[first], names[first + 1] ..., each right after the
        one before (the first after src); an entry [old, [users]] makes that add replace old."""
        if len(e) != 6:
            raise ValueError("a getitems edit has 6 items, not %d" % len(e))
        src, first, k0, meta, body = name(e[1]), _index(e[2]), e[3], e[4], e[5]
        entries = body if isinstance(body, list) else [None] * body if isinstance(body, int) else None
        if not entries or not isinstance(k0, int) or isinstance(k0, bool):
            raise ValueError("a getitems edit needs an int index and a count or entries, not %r, %r" % (k0, body))
        if isinstance(meta, list) and len(meta) != len(entries):
            raise ValueError("a getitems edit's metas: %d for %d getitems" % (len(meta), len(entries)))
        out, after = [], src
        for j, entry in enumerate(entries):
            m = meta[j] if isinstance(meta, list) else meta
            add = {"kind": "add", "name": name(first + j), "after": after, "op": "call_function",
                   "target": "operator.getitem", "args": [{"node": src}, k0 + j], "kwargs": {"dict": []}}
            if m is not None:
                add["meta"] = index(metas, m, "meta")
            out.append(add)
            after = add["name"]
            if entry is None:
                continue
            if not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[1], list) or not entry[1]:
                raise ValueError("a getitems entry must be null or [old, [users]], not %r" % (entry,))
            old = name(entry[0])
            out += [{"kind": "replace_input", "name": u, "old": old, "new": add["name"]} for u in name_list(entry[1])]
            out.append({"kind": "erase", "name": old})
        return out

    def edits(e):
        """An item of "edits" as the edits it stands for (version 4 runs them together)."""
        kind = e[0] if e else None
        if version >= 5 and kind == "getitems":
            return getitems(e)
        if version < 4 or kind not in ("replace", "erase", "move", "replace_input"):
            return [edit(e)]
        if kind == "replace":  # ["replace", old, [users], name, after, target, args(, meta(, kwargs))]
            if not isinstance(e[2], list) or not e[2]:
                raise ValueError("a replace edit's users must be a non-empty list")
            add = edit(["add"] + e[3:])
            old = name(e[1])
            return ([add] + [{"kind": "replace_input", "name": u, "old": old, "new": add["name"]}
                             for u in name_list(e[2])] + [{"kind": "erase", "name": old}])
        base = {"erase": 2, "move": 3, "replace_input": 4}[kind]
        out = [edit(e[:base])]
        for u in name_list(e[base:]):
            d = dict(out[0], name=u)
            if kind == "move":
                d["after"] = out[-1]["name"]
            out.append(d)
        return out

    def replace_runs(es):
        """The (old, name) pairs of the add / replace_input... / erase runs in es (version 4
        leaves a step's provenance out when it is these)."""
        pairs, i = [], 0
        while i < len(es):
            e = es[i]
            if (e["kind"] == "add" and i + 2 < len(es) and es[i + 1]["kind"] == "replace_input"):
                old, j = es[i + 1]["old"], i + 1
                while (j < len(es) and es[j]["kind"] == "replace_input" and es[j]["old"] == old
                       and es[j]["new"] == e["name"]):
                    j += 1
                if j < len(es) and es[j]["kind"] == "erase" and es[j]["name"] == old:
                    pairs.append([old, e["name"]])
                    i = j + 1
                    continue
            i += 1
        return pairs

    steps = []
    for seq, s in enumerate(tr.get("steps") or []):
        s = dict(s, seq=seq)
        if version >= 5 and s.get("rule") is not None:  # an index into "rules": phase, pass, rule
            r = index(rules, s.pop("rule"), "rule")
            if not isinstance(r, dict):
                raise ValueError("a rule must be an object, not %r" % (r,))
            s.update({k: r[k] for k in ("phase", "pass", "rule") if r.get(k) is not None})
        if version >= 5 and isinstance(s.get("checks"), dict):  # details: indices into "strings"
            s["checks"] = {k: dict(c, detail=index(strings, c["detail"], "string"))
                           if isinstance(c, dict) and isinstance(c.get("detail"), int) else c
                           for k, c in s["checks"].items()}
        if "anchor" in s:
            s["anchor"] = name(s["anchor"])
        for key in ("matched", "removed", "added", "scaffolding"):
            if key in s:
                s[key] = name_list(s[key])
        if "provenance" in s:
            s["provenance"] = [[name(a), name(b)] for a, b in s["provenance"]]
        if "edits" in s:
            s["edits"] = [d for e in s["edits"] for d in edits(e)]
            pairs = replace_runs(s["edits"]) if version >= 4 and "provenance" not in s else None
            if pairs:
                s["provenance"] = pairs
            for key, kind in (("removed", "erase"), ("added", "add")):
                if key not in s:
                    s[key] = [e["name"] for e in s["edits"] if e["kind"] == kind]
        for key in ("removed", "added"):
            if key in s and not s[key]:
                del s[key]
        if "reason" in s:
            r = s["reason"] = dict(s["reason"])
            if version >= 4:  # arguments are indices into "strings"
                r["args"] = [index(strings, i, "string") for i in r.get("args") or []]
            r.setdefault("nodes", [False] * len(r.get("args") or []))
        steps.append(s)
    out = {k: v for k, v in tr.items() if k not in ("names", "targets", "metas", "strings", "rules", "steps")}
    out["steps"] = steps
    return out


def reason_text(step):
    """A step's reason as text: the formatted text of a version 1 or 2 trace, else its code
    and arguments ("SET_TOO_SMALL: 3; 5"); "" when the step has no reason."""
    r = step.get("reason") or {}
    if r.get("text"):
        return r["text"]
    if not r.get("code"):
        return ""
    return "%s: %s" % (r["code"], "; ".join(str(a) for a in r.get("args") or []))


def trace_groups(trace, by="pass"):
    """The applied steps of a trace (those with an applied_index), as groups: consecutive
    steps of the same pass (by="pass"; rejected attempts in between do not split a group) or
    one group per step (by="step"). Each group: {"pass", "first", "last", "count", "rules"}."""
    groups = []
    for s in trace.get("steps") or []:
        k = s.get("applied_index")
        if not k:
            continue
        if by == "pass" and groups and groups[-1]["pass"] == s.get("pass"):
            g = groups[-1]
            g["last"] = k
            g["count"] += 1
        else:
            g = {"pass": s.get("pass"), "first": k, "last": k, "count": 1, "rules": {}}
            groups.append(g)
        g["rules"][s.get("rule")] = g["rules"].get(s.get("rule"), 0) + 1
    return groups


def _per_pass_docs(exe, original, passes, opts, workdir):
    """[(pass, doc, summary)] for every pass with an applied step when run alone on the
    original (`optimus optimize ORIGINAL --passes P`), and the passes without one."""
    if not passes:
        tpath = os.path.join(workdir, "pipeline.trace.json")
        _run_optimus(exe, ["optimize", str(original), "-o", os.path.join(workdir, "pipeline.json"),
                           "--trace", tpath, "--checks", "none", *opts],
                     "listing the pipeline's passes")
        cfg = read_trace(tpath).get("config") or {}
        passes = [p for key in ("pre_grad_fusion_options", "post_grad_fusion_options")
                  for p in (cfg.get(key) or {})]
    done, skipped = [], []
    for p in passes:
        out = os.path.join(workdir, "pass-%d.json" % len(done + skipped))
        summary = json.loads(_run_optimus(
            exe, ["optimize", str(original), "--passes", p, "-o", out, "--json", *opts],
            "optimizing with pass %s alone" % p))
        if summary.get("applied"):
            done.append((p, read_doc(out), summary))
        else:
            skipped.append(p)
    return done, skipped


def _prefix_docs(exe, original, trace, by, workdir):
    """The trace's groups, each with the graph after its last step (`optimus replay ORIGINAL
    TRACE --step K`)."""
    groups = trace_groups(read_trace(trace), by)
    for grp in groups:
        out = os.path.join(workdir, "step-%d.json" % grp["last"])
        _run_optimus(exe, ["replay", str(original), str(trace), "--step", str(grp["last"]),
                           "-o", out], "replaying %s to step %d" % (trace, grp["last"]))
        grp["doc"] = read_doc(out)
    return groups


def bench(original, optimized, module=None, seed=0, int_high=10, allow_namespaces=(),
          runs=BENCH_RUNS, warmup=BENCH_WARMUP, min_time=BENCH_MIN_TIME, threads=BENCH_THREADS,
          clock="wall", per_pass=False, passes=None, trace=None, trace_by="pass", options=(),
          optimus=None):
    """Checks that the optimized graph computes the original's outputs, then times both in
    eager PyTorch, interleaved (docs/bridge.md, `bench`). original/optimized are paths of
    optimus-fx JSON dumps (or their dicts); `module` a MODULE_SPEC or an nn.Module, the root
    for get_attr/call_module. Inputs are the original's recorded ones, else random from the
    placeholders' meta; get_attr tensors neither the module nor the record has are random from
    their meta. per_pass adds the original optimized by each pass alone (the pipeline's
    passes, or `passes`); trace (the optimize run's trace) adds the graph after each pass's
    steps (trace_by="step": after each step), replayed, and attributes the time to them. All
    graphs are timed in one interleaved session. `clock` ("wall" or "cpu") is the clock of the
    headline numbers; both are recorded. Returns the result dict (what --json prints); its
    "outputs_equal" is False when any graph disagrees with the original."""
    if clock not in CLOCKS:
        raise ValueError("clock must be one of %s" % ", ".join(CLOCKS))
    doc_a, doc_b = read_doc(original), read_doc(optimized)
    namespaces = [check_namespace(ns) for ns in allow_namespaces or ()]
    root, params_from = None, []
    if module is not None:
        torch.manual_seed(seed)
        root = instantiate(module) if isinstance(module, str) else module
        params_from.append("module %s (seed %d)" % (module, seed) if isinstance(module, str)
                           else "module %s" % type(module).__name__)
        if isinstance(module, str):
            namespaces += [ns for ns in own_namespaces(root, module) if ns not in namespaces]
    if (doc_a.get("record") or {}).get("params"):
        if root is not None:
            restore_params(root, doc_a)
        params_from.append("record.params of the original")

    if (doc_a.get("record") or {}).get("inputs"):
        inputs, inputs_from = record_inputs(doc_a), "recorded"
    else:
        inputs, inputs_from = random_inputs(doc_a, seed, int_high), "random (seed %d)" % seed
    if _placeholders(doc_b) != _placeholders(doc_a):
        raise ValueError("%s and %s have different placeholders (%s vs %s): not the same "
                         "graph's inputs" % (original, optimized, ", ".join(_placeholders(doc_a)),
                                             ", ".join(_placeholders(doc_b))))

    pass_docs, skipped, groups = [], [], []
    if per_pass or trace:
        exe = find_optimus(optimus)
        opts = [x for o in options or () for x in ("--option", o)]
        workdir = tempfile.mkdtemp(prefix="optimus-bench-")
        try:
            if per_pass:
                pass_docs, skipped = _per_pass_docs(exe, original, passes, opts, workdir)
            if trace:
                groups = _prefix_docs(exe, original, trace, trace_by, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    # the trace replayed to its end is normally the optimized graph: time it once
    final_same = bool(groups) and _nodes_signature(groups[-1]["doc"]) == _nodes_signature(doc_b)

    extra = [("pass", p, d, {"applied": s.get("applied"), "nodes": s.get("nodes_after")})
             for p, d, s in pass_docs]
    for gi, grp in enumerate(groups):
        if not (final_same and gi == len(groups) - 1):
            extra.append(("prefix", "after step %d" % grp["last"], grp["doc"], {"group": gi}))
    docs = [doc_a, doc_b] + [d for _, _, d, _ in extra]
    root, drawn = random_params(docs, root, seed, int_high)
    if drawn:
        params_from.append("%d get_attr tensors random from their meta (seed %d)" %
                           (len(drawn), seed + 1))

    def make(label, doc, kind, more=None):
        return _BenchGraph(label, doc, load(doc, root, allow_namespaces=namespaces), kind, more)
    graphs = [make("original", doc_a, "original"), make("optimized", doc_b, "optimized")]
    graphs += [make(label, d, kind, more) for kind, label, d, more in extra]

    # correctness first: every graph against the original, on the same inputs
    ref = None
    for g in graphs:
        try:
            g.outputs = run(g.gm, inputs)
        except Exception as e:  # a graph torch cannot run fails the bench, it is not a crash
            g.ok, g.error = False, "%s: %s" % (type(e).__name__, e)
            if g.kind == "original":
                raise ValueError("the original graph does not run: %s" % g.error) from None
            continue
        if ref is None:
            ref = g.outputs
        else:
            g.diffs = output_diffs(ref, g.outputs)
            g.ok = all(x["ok"] for x in g.diffs)
    recorded = record_outputs(doc_a) if inputs_from == "recorded" else []
    rec_diffs = output_diffs(recorded, ref) if recorded else []

    prev_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        used_threads = torch.get_num_threads()
        load_before = os.getloadavg()
        runnable = [g for g in graphs if g.error is None]
        samples, number = time_interleaved([g.gm for g in runnable], inputs, runs, warmup,
                                           min_time)
        load_after = os.getloadavg()
    finally:
        torch.set_num_threads(prev_threads)
    for i, g in enumerate(runnable):
        g.samples = {c: samples[c][i] for c in CLOCKS}

    a, b = graphs[0], graphs[1]
    res = {"original": str(original), "optimized": str(optimized), "clock": clock}
    per_clock = {}
    for c in CLOCKS:
        e = {"original_ms": statistics.median(a.samples[c]), "original_stats":
             _quartiles(a.samples[c])}
        if b.samples:
            v = _versus(a.samples[c], b.samples[c])
            e.update({"optimized_ms": v["ms"], "speedup": v["speedup"], "optimized_stats":
                      v["stats"], "speedup_rounds": v["speedup_rounds"], "verdict": v["verdict"]})
        else:
            e.update({"optimized_ms": None, "speedup": None, "optimized_stats": None,
                      "speedup_rounds": None, "verdict": None})
        per_clock[c] = e
    res.update(per_clock[clock])
    res.update({
        "runs": runs, "warmup": warmup, "number": number, "min_time": min_time,
        "threads": used_threads, "cpu_count": os.cpu_count(), "torch": torch.__version__,
        "device": "cpu", "mode": "eager",
        "loadavg": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "inputs": inputs_from,
        "input_shapes": [_describe_tensor(t) for t in inputs if isinstance(t, torch.Tensor)],
        "params": params_from, "seed": seed,
        "outputs_equal": all(g.ok for g in graphs) and all(x["ok"] for x in rec_diffs),
        "optimized_outputs_equal": b.ok, "outputs": b.diffs, "optimized_error": b.error,
        "recorded_outputs": rec_diffs,
    })
    res.update(per_clock)
    res["samples_ms"] = {c: {"original": a.samples[c], "optimized": b.samples[c] if b.samples
                             else None} for c in CLOCKS}
    if per_pass:
        res["per_pass"] = []
        for g in graphs:
            if g.kind != "pass":
                continue
            entry = {"pass": g.label, "applied": g.extra["applied"], "nodes": g.extra["nodes"],
                     "outputs_equal": g.ok, "outputs": g.diffs, "error": g.error}
            if g.samples:
                v = _versus(a.samples[clock], g.samples[clock])
                entry.update({"ms": v["ms"], "speedup": v["speedup"], "stats": v["stats"],
                              "speedup_rounds": v["speedup_rounds"], "verdict": v["verdict"],
                              "samples_ms": g.samples[clock]})
                other = [c for c in CLOCKS if c != clock][0]
                vo = _versus(a.samples[other], g.samples[other])
                entry[other] = {"ms": vo["ms"], "speedup": vo["speedup"]}
            res["per_pass"].append(entry)
        res["per_pass_skipped"] = skipped
    if trace:
        res["attribution"] = _attribution(graphs, groups, final_same, trace, trace_by, clock)
    return res


def _attribution(graphs, groups, final_same, trace, by, clock):
    """Each group of steps' share of the time: the median after the group minus the median
    before it (medians of the same interleaved session, so the rows telescope: they sum to the
    original's median minus the last graph's), and the quartiles of the per-round differences
    as its noise."""
    a, b = graphs[0], graphs[1]
    prefix = {g.extra["group"]: g for g in graphs if g.kind == "prefix"}
    rows = []
    prev = a
    ok = True
    for gi, grp in enumerate(groups):
        g = b if final_same and gi == len(groups) - 1 else prefix[gi]
        row = {"pass": grp["pass"], "steps": [grp["first"], grp["last"]], "count": grp["count"],
               "rules": grp["rules"], "graph": g.label, "outputs_equal": g.ok, "error": g.error}
        ok &= g.ok
        if g.samples and prev is not None:
            before = statistics.median(prev.samples[clock])
            after = statistics.median(g.samples[clock])
            row.update({"ms_before": before, "ms_after": after, "gain_ms": before - after,
                        "gain_rounds": _quartiles([x - y for x, y in
                                                   zip(prev.samples[clock], g.samples[clock])])})
            prev = g
        else:
            prev = None  # a graph that does not run breaks the chain of differences
        rows.append(row)
    orig = statistics.median(a.samples[clock])
    final = statistics.median(prev.samples[clock]) if prev is not None else None
    total = None if final is None else orig - final
    for r in rows:
        if "gain_ms" in r and total:
            r["share"] = r["gain_ms"] / total
    return {"trace": str(trace), "by": by, "clock": clock, "groups": rows,
            "original_ms": orig, "final_ms": final, "gain_ms": total,
            "sum_of_gains_ms": sum(r.get("gain_ms", 0.0) for r in rows) if total is not None
            else None, "replay_equals_optimized": final_same, "outputs_equal": ok}


def _fmt_ms(x):
    return "-" if x is None else "%.4g" % x


_VERDICT_TEXT = {"faster": "optimized faster", "slower": "optimized slower",
                 "within noise": "the difference is within the noise"}


def print_bench(res, out=None):
    """The human-readable bench report."""
    out = out or sys.stdout

    def w(s=""):
        print(s, file=out)
    clock = res["clock"]
    other = [c for c in CLOCKS if c != clock][0]
    w("bench: %s (original) vs %s (optimized)" % (res["original"], res["optimized"]))
    shapes = res["input_shapes"]
    w("inputs: %s, %d tensor%s (%s%s); parameters: %s" % (
        res["inputs"], len(shapes), "" if len(shapes) == 1 else "s", ", ".join(shapes[:3]),
        ", ..." if len(shapes) > 3 else "", "; ".join(res["params"]) or "none"))
    if res["optimized_error"]:
        w("outputs: MISMATCH: the optimized graph fails to run: %s" % res["optimized_error"])
    else:
        w("outputs: %s (optimized vs original, compare's tolerances)" %
          ("equal" if res["optimized_outputs_equal"] else "MISMATCH"))
        for d in res["outputs"]:
            w("  output %s: %s %s" % (d["index"], d["detail"], "ok" if d["ok"] else "MISMATCH"))
    for d in res["recorded_outputs"]:
        if not d["ok"]:
            w("  original vs its recorded output %s: %s MISMATCH (not the module the dump was "
              "recorded from?)" % (d["index"], d["detail"]))
    w("setup: torch %s eager (GraphModule forward, no_grad) on cpu (no GPU used), %d thread%s "
      "(torch.set_num_threads), %d cores; load average %s before, %s after" %
      (res["torch"], res["threads"], "" if res["threads"] == 1 else "s", res["cpu_count"],
       " ".join("%.2f" % x for x in res["loadavg"]),
       " ".join("%.2f" % x for x in res["loadavg_after"])))
    w("timing: %d warm-up rounds, then %d rounds with every graph interleaved (the order "
      "rotates each round), %d call%s per sample (min time %g s); %s clock" %
      (res["warmup"], res["runs"], res["number"], "" if res["number"] == 1 else "s",
       res["min_time"], {"wall": "wall", "cpu": "process CPU time"}[clock]))
    w()
    rows = [("original", res["original_stats"])]
    if res["optimized_stats"]:
        rows.append(("optimized", res["optimized_stats"]))
    w("%-12s %10s %10s %10s %10s %10s %8s" % ("graph", "median ms", "min", "q1", "q3", "max",
                                               "IQR/med"))
    for name, s in rows:
        w("%-12s %10s %10s %10s %10s %10s %7.1f%%" %
          (name, _fmt_ms(s["median"]), _fmt_ms(s["min"]), _fmt_ms(s["q1"]), _fmt_ms(s["q3"]),
           _fmt_ms(s["max"]), 100 * (s["q3"] - s["q1"]) / s["median"]))
    if res["speedup"] is not None:
        r = res["speedup_rounds"]
        o = res[other]
        w("speedup %.3fx (median original / median optimized); per-round ratio median %.3f, "
          "middle half %.3f-%.3f: %s%s" %
          (res["speedup"], r["median"], r["q1"], r["q3"], _VERDICT_TEXT[res["verdict"]],
           "" if res["optimized_outputs_equal"] else "  [NOT VALID: the outputs differ]"))
        w("%s clock: original %s ms, optimized %s ms, speedup %.3fx (per-round middle half "
          "%.3f-%.3f)" % (other, _fmt_ms(o["original_ms"]), _fmt_ms(o["optimized_ms"]),
                          o["speedup"], o["speedup_rounds"]["q1"], o["speedup_rounds"]["q3"]))
    if "per_pass" in res:
        w()
        w("per pass (optimus optimize ORIGINAL --passes P: each pass alone on the original)")
        w("%-38s %6s %10s %9s %15s  %s" % ("pass", "steps", "median ms", "speedup",
                                            "round ratios", "outputs"))
        for e in res["per_pass"]:
            if "ms" in e:
                rr = e["speedup_rounds"]
                w("%-38s %6d %10s %8.3fx %7.3f-%-7.3f  %s" %
                  (e["pass"], e["applied"], _fmt_ms(e["ms"]), e["speedup"], rr["q1"], rr["q3"],
                   "equal" if e["outputs_equal"] else "MISMATCH"))
            else:
                w("%-38s %6d %10s %9s %15s  MISMATCH: %s" % (e["pass"], e["applied"], "-", "-",
                                                            "-", e["error"]))
        if res["per_pass_skipped"]:
            w("no applied step alone (not timed): %s" % ", ".join(res["per_pass_skipped"]))
    if "attribution" in res:
        at = res["attribution"]
        w()
        w("attribution (%s, by %s; the graph after each group replayed with optimus replay "
          "--step K)" % (at["trace"], at["by"]))
        w("%-9s %-38s %10s %10s %8s %21s  %s" % ("steps", "pass", "ms after", "gain ms", "share",
                                                 "round gains q1..q3", "outputs"))
        w("(gain = median before - median after; share = gain / total change, so the shares "
          "sum to 100 %; a row against the total's sign has a negative share)")
        for r in at["groups"]:
            steps = ("%d" % r["steps"][0] if r["steps"][0] == r["steps"][1]
                     else "%d-%d" % tuple(r["steps"]))
            if "ms_after" not in r:
                w("%-9s %-38s %10s %10s %8s %21s  %s" % (
                    steps, r["pass"], "-", "-", "-", "-",
                    "MISMATCH: " + r["error"] if r["error"] else "not timed (an earlier graph "
                    "does not run)"))
                continue
            g = r["gain_rounds"]
            share = "%7.1f%%" % (100 * r["share"]) if "share" in r else "%8s" % "-"
            w("%-9s %-38s %10s %+10.4f %s %+10.4f..%+-9.4f  %s" %
              (steps, r["pass"], _fmt_ms(r["ms_after"]), r["gain_ms"], share, g["q1"], g["q3"],
               "equal" if r["outputs_equal"] else "MISMATCH"))
        if at["gain_ms"] is not None:
            w("total gain %.4f ms = %s ms (original) - %s ms (after the last step); the rows sum "
              "to %.4f ms" % (at["gain_ms"], _fmt_ms(at["original_ms"]), _fmt_ms(at["final_ms"]),
                              at["sum_of_gains_ms"]))
        if at["groups"]:
            w("the trace replayed to its last step %s" %
              ("is OPTIMIZED (same nodes): its row is the optimized graph's time"
               if at["replay_equals_optimized"] else
               "is NOT the optimized graph given (another run's trace?); it was timed on its own"))
        else:
            w("the trace has no applied step: nothing to attribute")


def _mismatches(res):
    bad = []
    if not res["optimized_outputs_equal"]:
        bad.append("the optimized graph")
    bad += ["pass %s alone" % e["pass"] for e in res.get("per_pass", ()) if not e["outputs_equal"]]
    bad += ["the graph after step %d" % r["steps"][1]
            for r in (res.get("attribution") or {}).get("groups", ()) if not r["outputs_equal"]]
    if any(not d["ok"] for d in res["recorded_outputs"]):
        bad.append("the original (against its own recorded outputs)")
    return bad


def cmd_bench(a):
    res = bench(a.original, a.optimized, module=a.module, seed=a.seed, int_high=a.int_high,
                allow_namespaces=a.allow_namespace, runs=a.runs, warmup=a.warmup,
                min_time=a.min_time, threads=a.threads, clock=a.clock, per_pass=a.per_pass,
                passes=[p for p in a.passes.split(",") if p] if a.passes else None,
                trace=a.trace, trace_by=a.trace_by, options=a.option, optimus=a.optimus)
    bad = _mismatches(res)
    if a.json:
        print(json.dumps(res))
    else:
        print_bench(res)
        print()
        print("MISMATCH: %s" % ", ".join(bad) if bad else
              "OK: every graph timed computes the original's outputs")
    if bad:
        print("optimus_fx.py bench: MISMATCH: %s computes other outputs than the original; the "
              "timings compare graphs that do not compute the same thing" % ", ".join(bad),
              file=sys.stderr)
        return 1
    return 0


# ----------------------------------------------------------------------------- CLI

def _file_module_name(path):
    """The module name a file MODULE_SPEC is imported under (its functions' targets start
    with it): 'path/net.py' -> 'optimus_user_net'."""
    return "optimus_user_" + os.path.splitext(os.path.basename(path))[0]


def import_module_spec(spec):
    """'package.module:Name' or 'path/file.py:Name' -> the object Name. This imports and
    runs the user's code: it is meant for models the user has in hand."""
    mod_part, sep, attr = spec.rpartition(":")
    if not sep or not mod_part or not attr:
        raise ValueError("MODULE_SPEC must be 'module:Name' or 'file.py:Name', got %r" % spec)
    if mod_part.endswith(".py") or os.sep in mod_part:
        name = _file_module_name(mod_part)
        s = importlib.util.spec_from_file_location(name, mod_part)
        if s is None:
            raise ValueError("cannot import %s" % mod_part)
        module = importlib.util.module_from_spec(s)
        sys.modules[name] = module
        s.loader.exec_module(module)
    else:
        module = importlib.import_module(mod_part)
    obj = module
    for p in attr.split("."):
        obj = getattr(obj, p)
    return obj


def instantiate(spec):
    obj = import_module_spec(spec)
    m = obj() if callable(obj) and not isinstance(obj, nn.Module) else obj
    if not isinstance(m, nn.Module):
        raise ValueError("%s did not give an nn.Module" % spec)
    return m.eval()


def parse_input_spec(text):
    """'8,16' or '8,16:i64' (name= prefixes are accepted and ignored) -> (shape, dtype)."""
    if "=" in text:
        text = text.split("=", 1)[1]
    dims, _, dt = text.partition(":")
    dtype = ABBR_TO_DTYPE.get(dt or "f32")
    if dtype is None:
        raise ValueError("unknown dtype %r in --input-shape" % dt)
    shape = [int(x) for x in dims.split(",") if x.strip()] if dims.strip() else []
    return shape, dtype


def make_inputs(specs, seed, int_high):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for text in specs:
        shape, dtype = parse_input_spec(text)
        if dtype.is_floating_point:
            out.append(torch.randn(shape, generator=gen).to(dtype))
        elif dtype == torch.bool:
            out.append(torch.randint(0, 2, shape, generator=gen).bool())
        else:
            out.append(torch.randint(0, int_high, shape, generator=gen).to(dtype))
    return out


def _print_diffs(label, refs, gots):
    ok = True
    if len(refs) != len(gots):
        print("%s: %d outputs vs %d" % (label, len(refs), len(gots)))
        return False
    for i, (r, o) in enumerate(zip(refs, gots)):
        if r is None or o is None:
            same = r is None and o is None
            print("%s output %d: %s" % (label, i, "both None" if same else "None mismatch"))
            ok &= same
            continue
        a, rel, good = diff(r, o)
        print("%s output %d: %s %s max abs %.3g max rel %.3g %s" %
              (label, i, DTYPE_TO_ABBR.get(r.dtype, r.dtype), list(r.shape), a, rel,
               "ok" if good else "MISMATCH"))
        ok &= good
    return ok


def cmd_export(a):
    torch.manual_seed(a.seed)
    m = instantiate(a.module)
    inputs = make_inputs(a.input_shape, a.seed, a.int_high)
    export(m, inputs, a.output, record_io=a.record, param_fill=a.param_fill)
    return 0


def _namespaces(a, root=None, spec=None):
    """--allow-namespace values, then the model's own packages (with a MODULE_SPEC)."""
    out = [check_namespace(ns) for ns in a.allow_namespace or ()]
    if spec is not None:
        out += [ns for ns in own_namespaces(root, spec) if ns not in out]
    return out


def cmd_compare(a):
    doc_a, doc_b = read_doc(a.original), read_doc(a.optimized)
    namespaces = _namespaces(a)  # bad --allow-namespace values fail before the model is built
    if a.module:
        torch.manual_seed(a.seed)
        root = instantiate(a.module)
        restore_params(root, doc_a)
        namespaces = _namespaces(a, root, a.module)
    else:
        root = None
    inputs = record_inputs(doc_a)
    outs_a = run(load(doc_a, root, allow_namespaces=namespaces), inputs)
    outs_b = run(load(doc_b, root, allow_namespaces=namespaces), inputs)
    ok = _print_diffs("optimized vs original", outs_a, outs_b)
    rec = record_outputs(doc_a)
    if rec:
        ok &= _print_diffs("original vs recorded", rec, outs_a)
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


def roundtrip(m, inputs, path, allow_namespaces=None):
    """export m, load it back on m itself, and check outputs bit-for-bit and node targets.
    allow_namespaces defaults to m's own package (own_namespaces(m)). Returns a list of
    problems (empty when the round trip is exact)."""
    doc = export(m, inputs, path, record_io=True)
    if allow_namespaces is None:
        allow_namespaces = own_namespaces(m)
    gm = load(path, m, allow_namespaces=allow_namespaces)
    problems = []
    with torch.no_grad():
        want = _flatten_outputs(m(*inputs), [])
    got = run(gm, inputs)
    if len(want) != len(got):
        problems.append("%d outputs vs %d" % (len(want), len(got)))
    for i, (w, g) in enumerate(zip(want, got)):
        if not (isinstance(w, torch.Tensor) and isinstance(g, torch.Tensor) and
                w.dtype == g.dtype and w.shape == g.shape and
                torch.equal(torch.nan_to_num(w), torch.nan_to_num(g)) and
                torch.equal(torch.isnan(w), torch.isnan(g))):
            problems.append("output %d differs" % i)
    want_t = [(n["op"], n["target"]) for n in doc["graphs"][0]["nodes"]]
    got_t = [(n.op, target_name(n.target)) for n in gm.graph.nodes]
    if want_t != got_t:
        problems.append("node targets differ: %s" %
                        next((x, y) for x, y in zip(want_t + [None], got_t + [None]) if x != y))
    return problems


def cmd_roundtrip(a):
    _namespaces(a)
    torch.manual_seed(a.seed)
    m = instantiate(a.module)
    inputs = make_inputs(a.input_shape, a.seed, a.int_high)
    with tempfile.TemporaryDirectory() as d:
        problems = roundtrip(m, inputs, os.path.join(d, "roundtrip.json"),
                             _namespaces(a, m, a.module))
    for p in problems:
        print("roundtrip: " + p)
    print("OK" if not problems else "MISMATCH")
    return 0 if not problems else 1


def main(argv=None):
    p = argparse.ArgumentParser(prog="optimus_fx.py", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def model_args(sp):
        sp.add_argument("module", metavar="MODULE_SPEC",
                        help="package.module:Name or path/file.py:Name (imports and runs it)")
        sp.add_argument("--input-shape", action="append", required=True, metavar="D0,D1[:DTYPE]",
                        help="one per forward() input, e.g. 8,16 or 4,3:i64")
        sp.add_argument("--seed", type=int, default=0)
        sp.add_argument("--int-high", type=int, default=10,
                        help="integer inputs are drawn from [0, INT_HIGH)")

    def allow_arg(sp):
        sp.add_argument("--allow-namespace", action="append", default=[], metavar="PKG",
                        help="also resolve call_function targets defined in package PKG "
                             "(repeatable; torch and the standard library are refused)")

    e = sub.add_parser("export", help="trace a module and write our JSON")
    model_args(e)
    e.add_argument("-o", "--output", required=True)
    e.add_argument("--record", action="store_true", help="record inputs, params and outputs")
    e.add_argument("--param-fill", choices=["sin"], default=None,
                   help="overwrite parameters with the closed-form sin fill (small fixtures)")
    e.set_defaults(fn=cmd_export)

    c = sub.add_parser("compare", help="run two dumps on the recorded inputs and compare")
    c.add_argument("original")
    c.add_argument("optimized")
    c.add_argument("--module", metavar="MODULE_SPEC",
                   help="root module for call_module/get_attr; its own package's functions "
                        "may be call_function targets")
    c.add_argument("--seed", type=int, default=0)
    allow_arg(c)
    c.set_defaults(fn=cmd_compare)

    r = sub.add_parser("roundtrip", help="export then load back, check bit-exact outputs")
    model_args(r)
    allow_arg(r)
    r.set_defaults(fn=cmd_roundtrip)

    def positive_int(minimum):
        def parse(text):
            v = int(text)
            if v < minimum:
                raise argparse.ArgumentTypeError("must be at least %d" % minimum)
            return v
        return parse

    def non_negative_float(text):
        v = float(text)
        if not v >= 0 or math.isinf(v):
            raise argparse.ArgumentTypeError("must be a finite number >= 0")
        return v

    b = sub.add_parser("bench", help="time the original and the optimized graph in eager "
                                     "PyTorch, interleaved, after checking their outputs agree")
    b.add_argument("original")
    b.add_argument("optimized")
    b.add_argument("--module", metavar="MODULE_SPEC",
                   help="root module for call_module/get_attr (as for compare)")
    b.add_argument("--seed", type=int, default=0,
                   help="seeds the module's construction, random inputs (SEED) and random "
                        "get_attr tensors (SEED+1)")
    b.add_argument("--int-high", type=int, default=10,
                   help="random integer inputs are drawn from [0, INT_HIGH)")
    b.add_argument("--runs", type=positive_int(3), default=BENCH_RUNS,
                   help="timed samples per graph (default %d)" % BENCH_RUNS)
    b.add_argument("--warmup", type=positive_int(1), default=BENCH_WARMUP,
                   help="untimed warm-up rounds (default %d)" % BENCH_WARMUP)
    b.add_argument("--min-time", type=non_negative_float, default=BENCH_MIN_TIME, metavar="S",
                   help="repeat calls within a sample until the fastest graph's sample lasts S "
                        "seconds (default %g; 0 = one call per sample)" % BENCH_MIN_TIME)
    b.add_argument("--threads", type=positive_int(1), default=BENCH_THREADS,
                   help="torch.set_num_threads while timing (default %d)" % BENCH_THREADS)
    b.add_argument("--clock", choices=CLOCKS, default="wall",
                   help="the clock of the headline numbers (both are measured): wall, or the "
                        "process's CPU time (not counting waits for a core on a busy machine)")
    b.add_argument("--json", action="store_true", help="print one JSON object")
    b.add_argument("--per-pass", action="store_true",
                   help="also time the original optimized by each pass alone (optimus optimize "
                        "--passes P); passes without an applied step are listed, not timed")
    b.add_argument("--passes", metavar="P1,P2",
                   help="--per-pass: these passes (default: the pipeline of the original's "
                        "level, as optimus optimize runs it)")
    b.add_argument("--option", action="append", default=[], metavar="P.K=V",
                   help="forwarded to every optimus optimize run of --per-pass (repeatable)")
    b.add_argument("--trace", metavar="T.json",
                   help="the trace of the optimize run: time the graph after each pass's steps "
                        "(optimus replay --step K) and attribute the gain to them")
    b.add_argument("--trace-by", choices=["pass", "step"], default="pass",
                   help="--trace: one replayed graph per pass (consecutive steps) or per step")
    b.add_argument("--optimus", metavar="PATH",
                   help="the optimus binary (default: $OPTIMUS_CLI, build/app/optimus, PATH)")
    allow_arg(b)
    b.set_defaults(fn=cmd_bench)

    a = p.parse_args(argv)
    try:
        return a.fn(a)
    except (ValueError, TargetError, OSError) as err:
        print("optimus_fx.py: error: %s" % err, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
