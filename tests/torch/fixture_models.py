"""The small models behind tests/data/fixtures/*.json.

Shared by make_fixtures.py (which writes the fixtures) and test_bridge.py (which re-exports
them and checks the committed files are current). Every model is built under
torch.manual_seed(seed) and fed deterministic inputs, so a fresh export reproduces the
committed fixture. Together the models use every op of engine/ops/ox_ops.def, in the spellings
PyTorch really produces (torch.*, Tensor methods, nn modules, aten overloads via make_fx).

Only ops of the engine's op table appear (plus nn modules whose type the op table knows), so
the C interpreter can run every fixture; a model needing a new op means a new ox_ops.def entry.
"""

import operator
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("OPTIMUS_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_ROOT, "tools"))

import optimus_fx as ox  # noqa: E402

FIXTURE_DIR = os.path.join(SOURCE_ROOT, "tests", "data", "fixtures")


def _gen(seed):
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- models

class MLP(nn.Module):
    """linear (module and functional, with/without bias) and every activation spelling."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 12)
        self.act1 = nn.ReLU()
        self.fc2 = nn.Linear(12, 12)
        self.act2 = nn.GELU()
        self.act3 = nn.Tanh()
        self.act4 = nn.Sigmoid()
        self.act5 = nn.SiLU()
        self.w = nn.Parameter(torch.randn(8, 12) * 0.3)
        self.b = nn.Parameter(torch.randn(8) * 0.1)
        self.w2 = nn.Parameter(torch.randn(4, 8) * 0.3)

    def forward(self, x):
        h = self.act1(self.fc1(x))
        h = F.relu(h) + torch.relu(h - 0.1) + h.relu()
        g = self.fc2(h)
        a = self.act2(g) + F.gelu(g) + F.gelu(g, approximate="tanh")
        t = self.act3(g) + torch.tanh(a) + a.tanh()
        s = self.act4(t) + torch.sigmoid(g) + g.sigmoid()
        u = self.act5(s) + F.silu(t)
        y = F.linear(u, self.w, self.b)
        z = F.linear(y, self.w2)
        return torch.sigmoid(z), y


class RecsysLayerNorm(nn.Module):
    """The Optimus target: split -> per-feature layer_norm/linear towers -> cat."""

    def __init__(self):
        super().__init__()
        self.norms = nn.ModuleList([nn.LayerNorm(8) for _ in range(4)])
        self.towers = nn.ModuleList([nn.Linear(8, 6) for _ in range(4)])
        self.ln_w = nn.Parameter(torch.rand(12) + 0.5)
        self.ln_b = nn.Parameter(torch.randn(12) * 0.1)
        self.wide = nn.LayerNorm([4, 3], eps=1e-6)

    def forward(self, x):
        parts = torch.split(x, 8, dim=1)
        outs = []
        for i in range(4):
            outs.append(torch.tanh(self.towers[i](self.norms[i](parts[i]))))
        y = torch.cat(outs, dim=1)
        a, b = y.split([12, 12], dim=1)
        a = F.layer_norm(a, (12,), self.ln_w, self.ln_b, eps=1e-5)
        b = F.layer_norm(b, [12])
        w = self.wide(b.view(-1, 4, 3)).view(-1, 12)
        stacked = torch.stack([a, w], dim=0)
        return torch.cat([stacked.sum(0), torch.sigmoid(y)], dim=-1)


class Plumbing(nn.Module):
    """split / split_with_sizes / chunk / unbind / stack / cat / getitem / select / narrow."""

    def forward(self, x):  # (4, 6, 8)
        s = torch.split(x, 2, dim=1)
        s2 = x.split([3, 5], dim=2)
        s3 = x.split_with_sizes([1, 3], dim=0)
        c = torch.chunk(x, 3, dim=1)
        c2 = x.chunk(2, -1)
        u = torch.unbind(x, 0)
        u2 = x.unbind(dim=1)
        st = torch.stack([s[0], s[1], s[2]], dim=0)
        st2 = torch.stack([u[0], u[1], u[2], u[3]], 1)
        cat1 = torch.cat([c[2], c[0], c[1]], dim=1)
        cat2 = torch.concat([s2[1], s2[0]], -1)
        cat3 = torch.cat((u2[0], u2[5]), dim=0)
        g1 = x[0]
        g2 = x[:, 1]
        g3 = x[..., 2]
        g4 = x[:, None, 1:3]
        g5 = x[1:3, ::2]
        g6 = x[:, -1, 2:]
        g7 = x[None]
        sel = torch.select(x, 1, 2) + x.select(1, -1)
        na = torch.narrow(x, 2, 1, 4)
        nb = x.narrow(0, 1, 2)
        return (st, st2, cat1, cat2, cat3, s3[1], c2[1], g1, g2, g3, g4, g5, g6, g7, sel, na, nb)


class Views(nn.Module):
    """view / reshape / flatten / unflatten / permute / transpose / t / movedim / expand /
    squeeze / unsqueeze / contiguous."""

    def forward(self, x):  # (2, 3, 4)
        a = x.view(2, 12)
        b = x.reshape(6, 4)
        c = torch.reshape(x, (-1,))
        d = torch.flatten(x, 1)
        e = x.flatten()
        f = d.unflatten(1, (3, 4))
        f2 = torch.unflatten(e, 0, (4, 6))
        g = x.permute(2, 0, 1)
        h = torch.permute(x, (1, 2, 0))
        i = x.transpose(0, 1)
        j = torch.transpose(x, 1, 2)
        k = a.t()
        l2 = torch.t(b)
        m = torch.movedim(x, 0, 2)
        n = x.movedim(1, 0)
        o = x[:, :1, :].expand(2, 3, 4)
        p = x.unsqueeze(1).expand(-1, 5, -1, -1)
        q = torch.unsqueeze(x, -1)
        r = q.squeeze(-1)
        s = x[:, :1].squeeze()
        t = torch.squeeze(x[:, :1], 1)
        u = g.contiguous().view(4, 6)
        v = x.view(x.size(0), -1) * 2.0 + x.reshape(x.size(0), x.size()[1] * 4)
        return a, b, c, e, f, f2, h, i, j, k, l2, m, n, o, p, r, s, t, u, v


class Reductions(nn.Module):
    """sum / mean (all, dims, keepdim, dtype) and softmax in every spelling."""

    def __init__(self):
        super().__init__()
        self.sm = nn.Softmax(dim=1)

    def forward(self, x, k):  # x (2, 3, 4) f32, k (3, 4) i64
        return (x.sum(), torch.sum(x, 1), x.sum(dim=(0, 2)), x.sum(-1, keepdim=True),
                torch.sum(x, dim=1, dtype=torch.float64),
                x.mean(), torch.mean(x, [1, 2]), x.mean(-1, keepdim=True), torch.mean(x, 0),
                F.softmax(x, dim=-1), x.softmax(1), self.sm(x), torch.softmax(x, 0),
                F.softmax(x, dim=-1, dtype=torch.float64),
                k.sum(), torch.sum(k, 0))


class Pointwise(nn.Module):
    """add/sub/mul/div (tensor and scalar, alpha, rounding_mode), pow/exp/log/sqrt/rsqrt/neg,
    clamp, nan_to_num, where, detach, clone, contiguous, with broadcasting."""

    def forward(self, x, y, b, m, z, k):
        # x, y (3, 4); b (4,); m (3, 4) bool; z (6,) with nan/inf; k (3, 4) i64
        p = torch.exp(y)  # positive
        add = x + y + 1.0 + torch.add(x, b, alpha=2) + x.add(y) + torch.add(x, 3) + (2.0 + x)
        sub = x - y - torch.sub(x, b, alpha=0.5) - x.sub(2.0) + (1 - x)
        mul = x * y * 2 + torch.mul(x, b) + x.mul(0.5)
        div = x / p + torch.div(x, 2.0) + torch.div(x, p, rounding_mode="floor") \
            + x.div(p, rounding_mode="trunc") + 1.0 / p
        pw = x.pow(2) + torch.pow(x, 3.0) + x ** 2 + 2 ** x + torch.pow(p, y)
        un = torch.exp(x) + torch.log(p) + p.log() + torch.sqrt(p) + p.rsqrt() + torch.rsqrt(p) \
            + (-x) + torch.neg(x) + x.neg() + x.exp()
        cl = torch.clamp(x, min=-0.5, max=0.5) + x.clamp(min=0.0) + torch.clamp(x, -1, 1) \
            + x.clamp(max=0.2)
        nz = torch.nan_to_num(z) + z.nan_to_num(nan=0.5, posinf=2.0, neginf=-2.0) \
            + torch.nan_to_num(z, 1.0)
        wh = torch.where(m, x, y) + torch.where(m, x, b)
        dc = x.detach() + torch.detach(y) + x.clone() + torch.clone(y) + x.t().contiguous().t()
        ik = k + 1 + k * 2 - k + torch.div(k, 2, rounding_mode="floor")
        return add, sub, mul, div, pw, un, cl, nz, wh, dc, ik


class MatmulFamily(nn.Module):
    """mm / bmm / baddbmm / addmm / matmul with broadcasting, einsum (explicit and implicit
    output), on parameters (get_attr)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 5) * 0.5)
        self.w3 = nn.Parameter(torch.randn(2, 4, 5) * 0.5)
        self.bias = nn.Parameter(torch.randn(5) * 0.1)
        self.c = nn.Parameter(torch.randn(2, 3, 5) * 0.1)
        self.v = nn.Parameter(torch.randn(4))

    def forward(self, a, x3, x4):  # a (3, 4), x3 (2, 3, 4), x4 (2, 1, 3, 4)
        mm = torch.mm(a, self.w) + a.mm(self.w)
        bmm = torch.bmm(x3, self.w3) + x3.bmm(self.w3)
        bad = torch.baddbmm(self.c, x3, self.w3, beta=0.5, alpha=2.0) + torch.baddbmm(self.c, x3, self.w3)
        adm = torch.addmm(self.bias, a, self.w) + torch.addmm(self.c[0], a, self.w, beta=2, alpha=0.5)
        mt = a @ self.w
        m3 = torch.matmul(x3, self.w)
        m1 = torch.matmul(self.v, self.w)
        m31 = torch.matmul(x3, self.v)
        m4 = torch.matmul(x4, self.w3)
        mv = x3.matmul(self.w3)
        ein = torch.einsum("bij,bjk->bik", x3, self.w3) + torch.einsum("ij,jk", a, self.w)
        return mm, bmm, bad, adm, mt, m3, m1, m31, m4, mv, ein


class DLRM(nn.Module):
    """embedding + embedding_bag (sum and mean, 2-D and offsets forms), bottom/top MLPs and a
    bmm feature interaction."""

    def __init__(self):
        super().__init__()
        self.bot = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU())
        self.emb_sum = nn.EmbeddingBag(20, 8, mode="sum")
        self.emb_mean = nn.EmbeddingBag(30, 8, mode="mean")
        self.emb = nn.Embedding(10, 8)
        self.table = nn.Parameter(torch.randn(30, 8) * 0.5)
        self.top = nn.Sequential(nn.Linear(8 + 15, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, dense, idx2d, idx, offsets, ids):
        # dense (4, 8); idx2d (4, 3) i64; idx (12,) i64; offsets (4,) i64; ids (4,) i64
        d = self.bot(dense)
        e0 = self.emb_sum(idx2d)
        e1 = self.emb_mean(idx, offsets)
        e2 = self.emb(ids)
        e3 = F.embedding_bag(idx, self.table, offsets, mode="sum")
        e4 = F.embedding(ids, self.table)
        e5 = F.embedding_bag(idx2d, self.table, mode="mean")
        t = torch.stack([d, e0, e1, e2 + e4, e3 + e5], dim=1)
        z = torch.bmm(t, t.transpose(1, 2))
        iu = z.flatten(1)[:, :15]
        return torch.sigmoid(self.top(torch.cat([d, iu], dim=1)))


class DropoutEval(nn.Module):
    """dropout in eval: nn.Dropout and F.dropout(training=False) are identities."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        h = self.drop(torch.relu(self.fc(x)))
        h = F.dropout(h, p=0.2, training=self.training)
        return F.dropout(h + x, 0.1, False)


class SmallCNN(nn.Module):
    """conv2d / batch_norm / relu / max_pool2d / adaptive_avg_pool2d / flatten / linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.gap = nn.AdaptiveAvgPool2d((1, 1))
        self.flat = nn.Flatten()
        self.fc = nn.Linear(16, 10)
        self.kw = nn.Parameter(torch.randn(4, 8, 1, 1) * 0.3)
        with torch.no_grad():  # non-trivial running statistics
            for bn in (self.bn1, self.bn2):
                bn.running_mean.copy_(torch.randn(bn.num_features) * 0.1)
                bn.running_var.copy_(torch.rand(bn.num_features) + 0.5)
                bn.weight.copy_(torch.rand(bn.num_features) + 0.5)
                bn.bias.copy_(torch.randn(bn.num_features) * 0.1)

    def forward(self, x):
        h = self.pool(self.relu(self.bn1(self.conv1(x))))
        side = F.conv2d(h, self.kw, None, 1, 0)              # functional spellings
        side = F.batch_norm(side, self.bn1.running_mean[:4], self.bn1.running_var[:4],
                            self.bn1.weight[:4], self.bn1.bias[:4], False, 0.1, 1e-5)
        side = F.adaptive_avg_pool2d(F.max_pool2d(side, 2, 2), 1)
        h = self.relu(self.bn2(self.conv2(h)))
        return self.fc(self.flat(self.gap(h))), torch.flatten(side, 1)


class Vision(nn.Module):
    """What torchvision's classifiers add: nn.MultiheadAttention (batch_first or not, self- and
    cross-attention, with and without its weights, averaged or per head, unbatched, without
    biases), avg_pool2d (module and functional: padding, ceil_mode, count_include_pad,
    divisor_override), hardswish / hardsigmoid (module and functional) and torchvision's
    stochastic_depth in eval, nn.Identity, relu6 / hardtanh (clamps), interpolate / nn.Upsample
    (nearest 1-D and 2-D, bilinear with and without align_corners, to a size or by a factor) and a
    dict among the outputs (segmentation models return one), Swin's shifted window attention (padding, roll, masks; a window
    covering the map) and patch merging (vit_b_16, mobilenet_v3, efficientnet, convnext,
    inception_v3, swin_t)."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.cross = nn.MultiheadAttention(8, 4)
        self.nobias = nn.MultiheadAttention(8, 1, bias=False, batch_first=True)
        self.pool = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        self.hs = nn.Hardswish()
        self.hsig = nn.Hardsigmoid()
        self.ident = nn.Identity()
        self.relu6, self.htanh = nn.ReLU6(), nn.Hardtanh(-2.0, 2.0)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        from torchvision.ops import StochasticDepth  # traced as a call of the wrapped function
        self.sd_row, self.sd_batch = StochasticDepth(0.2, "row"), StochasticDepth(0.5, "batch")
        from torchvision.models.swin_transformer import (PatchMerging, ShiftedWindowAttention,
                                                         ShiftedWindowAttentionV2)
        # windows of 3x3 over a 5x7 map: padded to 6x9, rolled by (1, 2), regions masked apart;
        # and a window that covers the padded map (no shift along it)
        self.swin = ShiftedWindowAttention(8, [3, 3], [1, 2], 2)
        self.swin_wide = ShiftedWindowAttention(8, [6, 3], [1, 1], 4, qkv_bias=False, proj_bias=False)
        self.merge = PatchMerging(8)  # odd H and W: the zero padding
        self.swin_v2 = ShiftedWindowAttentionV2(8, [3, 3], [1, 1], 2)  # cosine attention
        with torch.no_grad():  # scales of their own per head, one of them over the clamp
            self.swin_v2.logit_scale.copy_(torch.tensor([0.5, 5.0]).view(2, 1, 1))
            self.swin_v2.qkv.bias.normal_(0.0, 1.0)  # its key part is ignored: V2 zeroes it
        with torch.no_grad():  # a bias table that matters next to the scores
            self.swin.relative_position_bias_table.normal_(0.0, 1.0)

    def forward(self, x, img, grid):
        # x (2, 5, 8) batch first; img (2, 3, 7, 7); grid (2, 5, 7, 8) channels last
        a, _ = self.attn(x, x, x, need_weights=False)
        b, w = self.cross(x.transpose(0, 1), a.transpose(0, 1), a.transpose(0, 1))
        c, wh = self.nobias(x, a, b.transpose(0, 1), average_attn_weights=False)
        d, wu = self.attn(x[0], x[1], x[1])                     # unbatched: (L, E)
        p = self.pool(img)
        p2 = F.avg_pool2d(img, 2) + F.avg_pool2d(img, (3, 2), stride=(2, 1), padding=1)[:, :, :3, 2:5]
        p3 = F.avg_pool2d(img, 3, 2, 1, True, True, 5)
        h = self.hs(p) * self.hsig(self.ident(p)) + F.hardswish(p) - F.hardsigmoid(p)
        h = h + self.relu6(p * 8.0) + F.relu6(p * 8.0 - 1.0) - self.htanh(p * 3.0) + F.hardtanh(p, -0.5, 0.25)
        s = self.sd_row(h) + self.sd_batch(h)
        sw = self.swin(grid) + self.swin_wide(grid) + self.swin_v2(grid.swapaxes(1, 2)).swapdims(1, 2)
        # segmentation heads' resizing: to the input's size (x.shape[-2:]), by a factor, up and down
        up = F.interpolate(p, size=img.shape[-2:], mode="bilinear", align_corners=False)
        up = up + F.interpolate(img, scale_factor=1.5, mode="nearest")[:, :, :7, :7]
        up = up + self.up(p)[:, :, :7, :7] + F.interpolate(img, size=(5, 3), mode="bilinear")[:, :, :1, :1]
        near1d = F.interpolate(x, size=11, mode="nearest")
        return c + a, w, wh, d, wu, s, p2, p3, sw, self.merge(grid), {"up": up, "near": near1d}


class Dtypes(nn.Module):
    """f64, bf16, f16, i32 and bool tensors through ops the CPU supports for them."""

    def __init__(self):
        super().__init__()
        self.fc64 = nn.Linear(4, 3).double()
        self.fc16 = nn.Linear(4, 3).to(torch.bfloat16)

    def forward(self, d, bf, h, i, m):
        # d (2, 4) f64; bf (2, 4) bf16; h (2, 4) f16; i (2, 4) i32; m (2, 4) bool
        a = torch.tanh(self.fc64(d)) + d.sum(-1, keepdim=True) * 0.5
        b = F.softmax(self.fc16(bf), -1) + torch.sigmoid(bf).sum()
        b2 = F.layer_norm(bf, (4,)) * 2.0 - bf
        c = (h + h * 0.5 - h / 3.0).pow(2) + (-h).sum(0)
        c2 = torch.where(m, h, -h)
        j = i * 3 + i - 1 + torch.where(m, i, i + 2)
        conv = d.to(torch.float32) + bf.float() + h.to(dtype=torch.float32) + i.to(torch.float32)
        back = conv.double() + conv.to(torch.float64).sum(d.size(-1) - 3, keepdim=True)
        return a, b, b2, c, c2, j, torch.cat([d, d * 2.0], 1).mean(0), back, i.long() * 3


def _grouped_mm_module():
    """A GraphModule built by hand around the engine's own grouped_mm op (what group_linear
    emits): no PyTorch model spells it, so the bridge's op map is the only way to cover it."""
    root = nn.Module()
    root.w0 = nn.Parameter(torch.randn(6, 8) * 0.3)
    root.w1 = nn.Parameter(torch.randn(2, 5) * 0.3)
    root.w2 = nn.Parameter(torch.randn(3, 6) * 0.3)
    root.b0 = nn.Parameter(torch.randn(6) * 0.1)
    root.b1 = nn.Parameter(torch.randn(2) * 0.1)
    g = torch.fx.Graph()
    x0 = g.placeholder("x0")
    x1 = g.placeholder("x1")
    w0, w1, w2, b0, b1 = (g.get_attr(n) for n in ("w0", "w1", "w2", "b0", "b1"))
    gmm = g.call_function(ox.grouped_mm, ([x0, x1], [w0, w1], [b0, b1]))
    y0 = g.call_function(torch.relu, (g.call_function(operator.getitem, (gmm, 0)),))
    y1 = g.call_function(operator.getitem, (gmm, 1))
    gmm2 = g.call_function(ox.grouped_mm, (), {"inputs": [y0, x0], "weights": [w2, w0]})
    z0 = g.call_function(operator.getitem, (gmm2, 0))
    z1 = g.call_function(operator.getitem, (gmm2, 1))
    g.output((y1, z0, z1))
    return torch.fx.GraphModule(root, g)


def _aten_fn(x, w, b, lw, lb, y3, w3):
    """Post-grad style ops for make_fx: addmm, split_with_sizes, native_layer_norm, slice,
    select, mm, bmm, view, permute, expand, sum, mean, softmax ..."""
    h = F.linear(x, w, b)                      # t + addmm
    p, q = torch.split(h, [4, 8], dim=1)       # split_with_sizes
    n = F.layer_norm(q, (8,), lw, lb)          # native_layer_norm
    s = h[:, 2:6]                              # slice
    sel = h[1]                                 # select
    m = torch.matmul(p, s.t())                 # mm
    bb = torch.bmm(y3, w3)                     # bmm
    v = bb.view(2, -1).permute(1, 0).contiguous()
    e = sel.unsqueeze(0).expand(3, -1)
    r = torch.relu(n).sum(1) + torch.tanh(m).mean(0)
    sm = torch.softmax(h, -1)
    c = torch.cat([p, n, e], dim=1)
    return c, r, v, sm


def _aten_module(seed):
    from torch.fx.experimental.proxy_tensor import make_fx
    g = _gen(seed)
    inputs = [torch.randn(3, 6, generator=g), torch.randn(12, 6, generator=g) * 0.4,
              torch.randn(12, generator=g) * 0.1, torch.rand(8, generator=g) + 0.5,
              torch.randn(8, generator=g) * 0.1, torch.randn(2, 3, 4, generator=g),
              torch.randn(2, 4, 5, generator=g)]
    return make_fx(_aten_fn)(*inputs), inputs


def _aten_embedding_fn(weight, idx, offsets, ids):
    bag = F.embedding_bag(idx, weight, offsets, mode="sum")
    bag2 = F.embedding_bag(idx, weight, offsets, mode="mean")
    e = F.embedding(ids, weight)
    return torch.cat([bag, bag2, e], 1)


def _aten_embedding_module(seed):
    from torch.fx.experimental.proxy_tensor import make_fx
    g = _gen(seed)
    inputs = [torch.randn(10, 4, generator=g).requires_grad_(), torch.randint(0, 10, (8,), generator=g),
              torch.tensor([0, 2, 5, 5]), torch.randint(0, 10, (4,), generator=g)]
    return make_fx(_aten_embedding_fn)(*inputs), inputs


def _aten_masks_fn(x, ids):
    # what make_fx keeps of mask building (symbolic_trace folds constant factories into tensors)
    n = ids.shape[1]
    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    pos = torch.arange(n) + torch.arange(1, 2 * n + 1, 2) + torch.arange(0.5, 2.0, 0.75).sum().long()
    scores = x.masked_fill(causal, float("-inf")).softmax(-1)
    pad = (ids == 0) | (pos.unsqueeze(0) > 3)
    return (scores, torch.full((2, n), 7) + torch.zeros(2, n, dtype=torch.long), pad,
            torch.tril(x, -1) > torch.ones(n, n) * 0.25, pos)


def _aten_masks_module(seed):
    from torch.fx.experimental.proxy_tensor import make_fx
    g = _gen(seed)
    inputs = [torch.randn(4, 4, generator=g), torch.tensor([[1, 0, 2, 0]])]
    return make_fx(_aten_masks_fn)(*inputs), inputs


def _resnet18():
    import torchvision
    return torchvision.models.resnet18(weights=None)


# ----------------------------------------------------------------------------- registry

def _randn(g, *shape):
    return torch.randn(*shape, generator=g)


def _inputs_pointwise(g):
    z = torch.randn(6, generator=g)
    z[1], z[3], z[4] = float("nan"), float("inf"), float("-inf")
    return [_randn(g, 3, 4), _randn(g, 3, 4), _randn(g, 4), torch.rand(3, 4, generator=g) > 0.5,
            z, torch.randint(-5, 6, (3, 4), generator=g)]


def _inputs_dlrm(g):
    return [_randn(g, 4, 8), torch.randint(0, 20, (4, 3), generator=g),
            torch.randint(0, 30, (12,), generator=g), torch.tensor([0, 3, 7, 7]),
            torch.randint(0, 10, (4,), generator=g)]


def _inputs_dtypes(g):
    return [_randn(g, 2, 4).double(), _randn(g, 2, 4).to(torch.bfloat16),
            _randn(g, 2, 4).half(), torch.randint(-4, 5, (2, 4), generator=g).int(),
            torch.rand(2, 4, generator=g) > 0.5]


# name -> (builder(seed) -> (module_or_gm, inputs), param_fill)
def _simple(cls, inputs_fn):
    def build(seed):
        torch.manual_seed(seed)
        m = cls().eval()
        return m, inputs_fn(_gen(seed + 1))
    return build


def _build_grouped(seed):
    torch.manual_seed(seed)
    m = _grouped_mm_module()
    g = _gen(seed + 1)
    return m, [_randn(g, 4, 8), _randn(g, 3, 5)]


class Sequence(nn.Module):
    """Sequence models' modules, which a traced model calls whole (sequential recommenders:
    BERT4Rec / SASRec / BST encoders, DIEN's GRU): nn.TransformerEncoder (post-norm relu, and
    pre-norm gelu with a final norm, batch_first or not), a lone nn.TransformerEncoderLayer on an
    unbatched sequence, nn.GRU (two layers, bidirectional, batch_first), nn.LSTM (two layers,
    given (h0, c0)), nn.RNN (relu, without biases), an unbatched GRU, and masks: attention with a
    bool padding mask and a float attn_mask, an encoder on torch's nested-tensor path, a causal
    mask; attention with kdim / vdim unlike embed_dim (separate q, k, v projections)."""

    def __init__(self):
        super().__init__()
        post = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1)
        self.enc = nn.TransformerEncoder(post, 2, enable_nested_tensor=False)
        pre = nn.TransformerEncoderLayer(8, 4, 12, dropout=0.0, activation="gelu",
                                         batch_first=True, norm_first=True, layer_norm_eps=1e-3)
        self.enc_pre = nn.TransformerEncoder(pre, 2, norm=nn.LayerNorm(8, eps=1e-4),
                                             enable_nested_tensor=False)
        self.layer = nn.TransformerEncoderLayer(8, 1, 8, dropout=0.0)
        self.gru = nn.GRU(8, 6, num_layers=2, batch_first=True, bidirectional=True)
        self.lstm = nn.LSTM(8, 5, num_layers=2)
        self.rnn = nn.RNN(8, 4, nonlinearity="relu", bias=False, bidirectional=True)
        self.gru1 = nn.GRU(8, 3)
        # masks: attention with a bool padding mask and a float attn_mask; a post-norm batch-first
        # encoder given only a padding mask (torch runs it as a nested tensor in inference: padded
        # positions come out 0); a causal (bool) mask with a padding mask and no nested tensor
        self.attn_m = nn.MultiheadAttention(8, 2, batch_first=True)
        # target attention over features of other widths (kdim 6, vdim 4: q/k/v_proj_weight)
        self.cross = nn.MultiheadAttention(8, 2, kdim=6, vdim=4)
        nested = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        self.enc_nested = nn.TransformerEncoder(nested, 2)
        causal = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu")
        self.enc_causal = nn.TransformerEncoder(causal, 1, enable_nested_tensor=False)
        with torch.no_grad():  # norms that matter: away from (1, 0)
            for n, p in self.named_parameters():
                if "norm" in n:
                    p.normal_(0.5 if n.endswith("weight") else 0.0, 0.5)

    def forward(self, seq, h0, c0, pad, causal, bias):
        a = self.enc(seq)                          # [L, N, E]
        b = self.enc_pre(seq.transpose(0, 1))      # [N, L, E]
        c = self.layer(seq[:, 0])                  # unbatched [L, E]
        g, gh = self.gru(b)
        o, (h, cc) = self.lstm(a, (h0, c0))
        r, rh = self.rnn(a)
        u, uh = self.gru1(seq[:, 1])
        bf = seq.transpose(0, 1)                   # [N, L, E]
        m, mw = self.attn_m(bf, bf, bf, key_padding_mask=pad, attn_mask=bias)
        n = self.enc_nested(bf, src_key_padding_mask=pad)
        e = self.enc_causal(seq, mask=causal, src_key_padding_mask=pad)
        x, xw = self.cross(seq, seq[..., :6] * 2.0, seq[..., 2:6], key_padding_mask=pad)
        return a, b, c, g, gh, o, h, cc, r, rh, u, uh, m, mw, n, e, x, xw


class Masks(nn.Module):
    """How models build their attention masks in the graph: a padding mask from ids == 0, its
    negation (~ and logical_not), a causal mask torch.triu(torch.ones(L, L, dtype=bool), 1) of the
    configured length, positions torch.arange(L), scores.masked_fill(mask, -inf) into a softmax,
    comparisons of tensors and numbers with promotion (int against float), torch.full / zeros,
    tril, & | ^ of masks and ints, bitwise_not of ints; the masks feed nn.MultiheadAttention and nn.TransformerEncoder."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8, padding_idx=0)
        self.pos = nn.Embedding(6, 8)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 1)

    def forward(self, ids, x):
        L = 5  # a model's configured length (torch.arange / ones of a traced size do not trace)
        pad = ids == 0                              # [N, L] bool
        keep = ~pad
        pos = torch.arange(L)
        h = self.emb(ids) + self.pos(pos)
        causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
        a, _ = self.attn(h, h, h, key_padding_mask=pad, need_weights=False)
        e = self.enc(h, mask=causal, src_key_padding_mask=pad)
        scores = torch.matmul(h, h.transpose(1, 2))
        masked = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
        cmp = torch.stack([x < 0.5, x <= ids[:, :1].float(), x > -0.25, x >= 0, x != 0.0,
                           torch.logical_not(x > 0)]).to(torch.float32)
        low = torch.tril(x.unsqueeze(1) * torch.ones(L, L), diagonal=-1)
        filled = torch.full((2, L), 1.5) + torch.zeros(2, L)
        inv = torch.bitwise_not(ids)
        both = (keep & (x > 0)) | (pad ^ (x < -0.5))
        return a, e, masked, cmp, low, filled, inv, keep, both, torch.bitwise_xor(ids, 5) & 6


def _inputs_sequence(g):
    # padding at the end of two of the three sequences (5 long); a causal mask; a float bias
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    return [_randn(g, 5, 3, 8), _randn(g, 2, 3, 5), _randn(g, 2, 3, 5), pad, causal, _randn(g, 5, 5)]


def _build_resnet(seed):
    torch.manual_seed(seed)
    return _resnet18().eval(), [_randn(_gen(seed + 1), 1, 3, 32, 32)]


MODELS = {
    "mlp": (_simple(MLP, lambda g: [_randn(g, 4, 16)]), None),
    "recsys_layernorm": (_simple(RecsysLayerNorm, lambda g: [_randn(g, 4, 32)]), None),
    "plumbing": (_simple(Plumbing, lambda g: [_randn(g, 4, 6, 8)]), None),
    "views": (_simple(Views, lambda g: [_randn(g, 2, 3, 4)]), None),
    "reductions": (_simple(Reductions, lambda g: [_randn(g, 2, 3, 4),
                                                  torch.randint(-9, 10, (3, 4), generator=g)]), None),
    "pointwise": (_simple(Pointwise, _inputs_pointwise), None),
    "matmul": (_simple(MatmulFamily, lambda g: [_randn(g, 3, 4), _randn(g, 2, 3, 4),
                                                _randn(g, 2, 1, 3, 4)]), None),
    "dlrm": (_simple(DLRM, _inputs_dlrm), None),
    "dropout_eval": (_simple(DropoutEval, lambda g: [_randn(g, 3, 8)]), None),
    "cnn": (_simple(SmallCNN, lambda g: [_randn(g, 2, 3, 16, 16)]), None),
    "dtypes": (_simple(Dtypes, _inputs_dtypes), None),
    "vision": (_simple(Vision, lambda g: [_randn(g, 2, 5, 8), _randn(g, 2, 3, 7, 7), _randn(g, 2, 5, 7, 8)]), None),
    "sequence": (_simple(Sequence, _inputs_sequence), None),
    "masks": (_simple(Masks, lambda g: [torch.tensor([[3, 1, 4, 0, 0], [2, 7, 1, 8, 2], [5, 0, 0, 0, 0]]),
                                        _randn(g, 3, 5)]), None),
    "aten_masks": (lambda seed: _aten_masks_module(seed), None),
    "grouped_mm": (_build_grouped, None),
    "aten_post_grad": (lambda seed: _aten_module(seed), None),
    "aten_embedding": (lambda seed: _aten_embedding_module(seed), None),
    "resnet18": (_build_resnet, "sin"),
}

# Packages besides torch whose functions a fixture's graph calls: loading it back needs them
# allowed (tools/optimus_fx.py load(allow_namespaces=...)).
NAMESPACES = {"vision": ("torchvision",)}

SEED = 0


def build(name):
    """(module_or_gm, inputs, param_fill) for a fixture, deterministically."""
    builder, fill = MODELS[name]
    m, inputs = builder(SEED)
    return m, inputs, fill


def fixture_path(name):
    return os.path.join(FIXTURE_DIR, name + ".json")


def export_fixture(name, path=None):
    """Exports fixture `name` (record_io=True) to path (default: the committed location);
    returns (doc, module) with the module's parameters as exported."""
    m, inputs, fill = build(name)
    doc = ox.export(m, inputs, path or fixture_path(name), record_io=True, param_fill=fill)
    return doc, m
