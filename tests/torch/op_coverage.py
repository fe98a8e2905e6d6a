"""Which canonical ops of engine/ops/ox_ops.def the committed fixtures use.

A rough, spelling-based mapping (the C op table is the real one): it only has to notice when
ox_ops.def grows an op that no fixture exercises yet.
"""

import json
import os
import re

import fixture_models as fm

_MODULES = {"Linear": "linear", "LayerNorm": "layer_norm", "ReLU": "relu", "GELU": "gelu",
            "Tanh": "tanh", "Sigmoid": "sigmoid", "SiLU": "silu", "Dropout": "dropout",
            "Softmax": "softmax", "Flatten": "flatten", "Embedding": "embedding",
            "EmbeddingBag": "embedding_bag", "Conv2d": "conv2d", "BatchNorm2d": "batch_norm",
            "MaxPool2d": "max_pool2d", "AdaptiveAvgPool2d": "adaptive_avg_pool2d",
            "AvgPool2d": "avg_pool2d", "Hardswish": "hardswish", "Hardsigmoid": "hardsigmoid",
            "MultiheadAttention": "multi_head_attention", "Identity": "identity", "ReLU6": "clamp", "Hardtanh": "clamp",
            "Upsample": "interpolate", "TransformerEncoderLayer": "transformer_encoder_layer",
            "TransformerEncoder": "transformer_encoder", "GRU": "gru", "LSTM": "lstm", "RNN": "rnn"}
_ALIASES = {"truediv": "div", "floordiv": "div", "concat": "cat", "unsafe_view": "view", "invert": "bitwise_not", "and_": "bitwise_and",
            "or_": "bitwise_or", "xor": "bitwise_xor",
            "matmul": "matmul", "get_relative_position_bias": "relative_position_bias"}


def def_ops(source_root=None):
    path = os.path.join(source_root or fm.SOURCE_ROOT, "engine", "ops", "ox_ops.def")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r'^OX_OPDEF\(\s*\w+\s*,\s*"([^"]+)"', text, re.M)


def node_op(n):
    op, target = n["op"], n.get("target") or ""
    if op == "call_module":
        return _MODULES.get((n.get("module_type") or "").rsplit(".", 1)[-1])
    if op == "call_method":
        name = target
    elif op == "call_function":
        parts = target.split(".")
        if parts[:2] == ["torch", "ops"] and len(parts) >= 4:
            name = parts[3]
        else:
            name = parts[-1]
    else:
        return None
    name = name.lstrip("_")
    return _ALIASES.get(name, name)


def used_ops(fixture_dir=None):
    d = fixture_dir or fm.FIXTURE_DIR
    used = {}
    for f in sorted(os.listdir(d)):
        if not f.endswith(".json"):
            continue
        with open(os.path.join(d, f), encoding="utf-8") as fh:
            doc = json.load(fh)
        for n in doc["graphs"][0]["nodes"]:
            name = node_op(n)
            if name:
                used.setdefault(name, set()).add(f[:-5])
    return used


def uncovered_ops(source_root=None, fixture_dir=None):
    used = used_ops(fixture_dir)
    return [op for op in def_ops(source_root) if op not in used]
