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

Loading is data-driven and safe: call_function targets are resolved from their qualified name
through a whitelist of torch namespaces, plus functions defined in the namespaces the caller
allows (the model's own package with --module, --allow-namespace PKG), by import and attribute
lookup (never eval/exec); the canonical op names of the engine's op table (engine/ox_ops.def,
e.g. "grouped_mm") map to the functions in OPTIMUS_OPS. Module paths are looked up segment by
segment, so any submodule name PyTorch accepts ("block1-0") works.

CLI (see docs/bridge.md):
    /usr/bin/python3 tools/optimus_fx.py export MODULE_SPEC --input-shape 8,16 -o out.json [--record]
    /usr/bin/python3 tools/optimus_fx.py compare ORIGINAL.json OPTIMIZED.json [--module MODULE_SPEC]
                                         [--allow-namespace PKG ...]
    /usr/bin/python3 tools/optimus_fx.py roundtrip MODULE_SPEC --input-shape 8,16 [--allow-namespace PKG]
MODULE_SPEC is "package.module:Name" or "path/to/file.py:Name"; it IMPORTS AND RUNS that code.

Runs under Debian's /usr/bin/python3 with python3-torch 1.13; stdlib + torch only.
"""

import argparse
import array
import dis
import heapq
import importlib
import importlib.util
import inspect
import json
import keyword
import math
import operator
import os
import struct
import sys
import tempfile

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


# Canonical op name (engine/ox_ops.def) -> torch callable taking the canonical slots
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
# table, engine/ox_ops.c): the engine's module spellings read them (shape rules need the
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
]


def _hparam(m, name):
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


def tensor_to_json(t):
    t = t.detach().cpu()
    if t.dtype not in DTYPE_TO_ABBR or t.is_complex():
        raise ValueError("cannot record tensor of dtype %s" % t.dtype)
    flat = t.contiguous().reshape(-1).tolist()
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
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".optimus-fx-", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
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

    a = p.parse_args(argv)
    try:
        return a.fn(a)
    except (ValueError, TargetError, OSError) as err:
        print("optimus_fx.py: error: %s" % err, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
