"""Recommendation-style tower models for `optimus_fx.py bench` (docs/benchmarks.md, issue 18).

The shape Optimus targets: the input x: f32[B, T*W] is split into T pieces of width W; each
piece runs its own linear(W -> H) -> layer_norm(H) -> tanh, and cat(dim=1) joins the towers.
The functional forms (F.linear / F.layer_norm with parameters read by get_attr) are what the
pre-grad batch fusions see; nn.Linear modules would hide the op from them (docs/bridge.md).

MODULE_SPECs (each a factory called without arguments, as MODULE_SPEC requires):
    tools/recsys_towers.py:towers_8      8 towers, W = 32, H = 24
    tools/recsys_towers.py:towers_32    32 towers
    tools/recsys_towers.py:towers_128  128 towers
The batch size is the export's --input-shape: B,T*W (towers_8 at batch 16: 16,256).

Parameters come from the global torch RNG; `optimus_fx.py export` and `bench` both seed it with
--seed (default 0) before building the module, so the same SPEC and seed give the same weights.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Towers(nn.Module):
    def __init__(self, towers=8, width=32, hidden=24):
        super().__init__()
        self.towers, self.width, self.hidden = towers, width, hidden
        bound = 1.0 / width ** 0.5

        def plist(*shape, scale, shift=0.0):
            return nn.ParameterList([nn.Parameter(torch.randn(*shape) * scale + shift)
                                     for _ in range(towers)])
        self.w = plist(hidden, width, scale=bound)
        self.b = plist(hidden, scale=bound)
        self.ln_w = plist(hidden, scale=0.1, shift=1.0)
        self.ln_b = plist(hidden, scale=0.1)

    def forward(self, x):
        parts = torch.split(x, self.width, dim=1)
        outs = []
        for i in range(self.towers):
            h = F.linear(parts[i], self.w[i], self.b[i])
            h = F.layer_norm(h, (self.hidden,), self.ln_w[i], self.ln_b[i], eps=1e-5)
            outs.append(torch.tanh(h))
        return torch.cat(outs, dim=1)


def towers_8():
    return Towers(8)


def towers_32():
    return Towers(32)


def towers_128():
    return Towers(128)
