"""Records a Python function's torch-level calls as a torch.fx.GraphModule, shaped like the
graph Dynamo hands Inductor's pre-grad passes, on torch 1.13 (which has no Dynamo).

torch.fx.symbolic_trace cannot stand in for Dynamo here: it does not know how many outputs a
split has, so `[relu(s) for s in torch.split(x, 2, 1)]` fails and `torch.cat(torch.split(x, 4,
1), 1)` becomes a cat of the split node itself instead of a cat of one getitem per piece. This
recorder runs the function eagerly under a TorchFunctionMode and writes one node per torch
call it sees, with the real values at hand, as Dynamo does for static shapes:

* function calls keep their function (`torch.functional.split`, `torch.cat`, `torch.relu`,
  `torch._C._nn.linear` for an nn.Linear or F.linear, `torch.nn.functional.layer_norm`);
  Tensor methods become call_method nodes (`x.split(2, 1)`, `x.view(...)`, `s.squeeze(1)`,
  `a.add(b)` for `a + b`), `t[i]` / `t[1:]` become operator.getitem;
* a call that returns a tuple of tensors (split, unbind) is one node; each element gets an
  operator.getitem node the first time it is used (Dynamo creates them all and drops the
  unused ones);
* shape queries (`x.dim()`, `x.shape`) run and their values become constants (static shapes);
* tensors that are not produced by the graph are placeholders (the inputs), get_attr of the
  module's parameters and buffers (found by identity), or constants kept on the module;
* in-place calls (`copy_`, `add_`) are recorded; later uses of the tensor keep referring to
  the node that produced it, as FX graphs with mutation do.

Nested calls are not recorded: a mode is disabled inside its own handler, so F.batch_norm is
one node, not the torch.batch_norm it calls.
"""

import operator

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

_TENSOR_OWNERS = ("_TensorBase.", "Tensor.")


class _Lazy:
    """Element k of a multi-output node; its getitem is created at first use."""

    __slots__ = ("node", "k")

    def __init__(self, node, k):
        self.node, self.k = node, k


class _Recorder(TorchFunctionMode):
    def __init__(self, graph, params, consts):
        super().__init__()
        self.graph = graph
        self.env = {}        # id(tensor) -> fx.Node or _Lazy
        self.keep = []       # tensors whose ids are in env (ids must not be reused)
        self.params = params  # id(parameter or buffer) -> dotted name
        self.consts = consts  # attribute name -> tensor

    # ---------------------------------------------------------------- values <-> nodes

    def bind(self, t, node):
        self.env[id(t)] = node
        self.keep.append(t)

    def node_of(self, t):
        v = self.env.get(id(t))
        if isinstance(v, _Lazy):
            v = self.graph.call_function(operator.getitem, (v.node, v.k))
            self.env[id(t)] = v
        if v is not None:
            return v
        name = self.params.get(id(t))
        if name is None:
            name = "_tensor_constant%d" % len(self.consts)
            self.consts[name] = t
        node = self.graph.get_attr(name)
        self.bind(t, node)
        return node

    def arg(self, v):
        if isinstance(v, torch.Tensor):
            return self.node_of(v)
        if isinstance(v, torch.Size):
            return tuple(int(d) for d in v)
        if isinstance(v, list):
            return [self.arg(x) for x in v]
        if isinstance(v, tuple):
            return tuple(self.arg(x) for x in v)
        if isinstance(v, dict):
            return {k: self.arg(x) for k, x in v.items()}
        if isinstance(v, slice):
            return slice(self.arg(v.start), self.arg(v.stop), self.arg(v.step))
        return v

    # ---------------------------------------------------------------- calls

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        tensors = _tensors(out)
        if not tensors:
            return out  # shape queries and other Python values: constants
        qual = getattr(func, "__qualname__", "") or ""
        name = getattr(func, "__name__", "") or ""
        if qual.startswith("getset_descriptor") or name == "__get__":
            raise NotImplementedError("tensor-valued property %r is not recorded" % (func,))
        a, kw = self.arg(tuple(args)), self.arg(dict(kwargs))
        if qual.startswith(_TENSOR_OWNERS):
            if name == "__getitem__":
                node = self.graph.call_function(operator.getitem, a, kw)
            elif name.startswith("__"):
                raise NotImplementedError("Tensor.%s is not recorded" % name)
            else:
                node = self.graph.call_method(name, a, kw)
            inplace = name.endswith("_") and not name.endswith("__")
        else:
            node = self.graph.call_function(func, a, kw)
            inplace = False
        if inplace:
            return out  # the tensor keeps its producer; the mutation is a node of its own
        if isinstance(out, torch.Tensor):
            self.bind(out, node)
        else:
            for k, t in enumerate(out):
                self.env[id(t)] = _Lazy(node, k)
                self.keep.append(t)
        return out


def _tensors(v):
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (tuple, list)) and v and all(isinstance(x, torch.Tensor) for x in v):
        return list(v)
    return []


def _flat_inputs(args, out):
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            _flat_inputs(a, out)
        else:
            raise TypeError("inputs must be tensors or lists of tensors, not %s" % type(a).__name__)
    return out


def record(fn, args, module=None):
    """Runs fn(*args) (module: the nn.Module whose parameters fn reads, if any) and returns
    (GraphModule, flat_inputs, eager_result). The GraphModule takes the tensors of args
    flattened depth-first (a list argument becomes one placeholder per tensor, as Dynamo
    does) and returns fn's result structure."""
    graph = torch.fx.Graph()
    params = {}
    if module is not None:
        for mname, sub in module.named_modules():
            for table in (sub._parameters, sub._buffers):
                for pname, p in table.items():
                    if p is not None:
                        params.setdefault(id(p), mname + "." + pname if mname else pname)
    consts = {}
    rec = _Recorder(graph, params, consts)
    flat = _flat_inputs(args, [])
    for i, t in enumerate(flat):
        rec.bind(t, graph.placeholder("x" if i == 0 else "x_%d" % i))
    with rec:
        result = fn(*args)
    graph.output(_map_result(rec, result))
    attrs = {}
    for node in graph.nodes:
        if node.op == "get_attr":
            attrs[node.target] = consts[node.target] if node.target in consts else \
                _get_path(module, node.target)
    gm = torch.fx.GraphModule(attrs, graph)
    gm.graph.lint()
    return gm, flat, result


def _map_result(rec, v):
    if isinstance(v, torch.Tensor):
        return rec.node_of(v)
    if isinstance(v, (list, tuple)):
        return type(v)(_map_result(rec, x) for x in v)
    raise TypeError("result of type %s" % type(v).__name__)


def _get_path(root, path):
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj

