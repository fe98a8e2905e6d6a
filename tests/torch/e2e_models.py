"""Models for the end-to-end test (tests/torch/test_e2e.py): each is exported with the bridge,
optimized by `optimus optimize` (default pipeline, all checks) and loaded back with
optimus_fx.load() to run against the original.

A case says which counters of the trace must be > 0 (`expect`): a model whose passes do not
fire proves nothing, so every case is built to trigger specific passes and the test checks
they did. `expect_known` lists counters that should fire but do not because of a known engine
bug (each becomes its own TAP test, reported as "not ok ... # TODO known bug").

Pre-grad models use the functional forms (F.linear / F.layer_norm with parameters read by
get_attr) where module forms would hide the op from a batch pass (a module's parameters are
not graph values), and module forms once (towers_module) to show what still fires there.
Forward functions take fixed arguments (torch 1.13's symbolic_trace cannot patch *args on
Python 3.11) and bind each split piece once (every `p[i]` is a new getitem node, and a split
with duplicate getitems is rightly left alone by the passes).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 0


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(g, *shape, scale=1.0):
    return torch.randn(*shape, generator=g) * scale


class Case:
    def __init__(self, name, build, expect, expect_known=None, unchecked=False, options=()):
        self.name = name
        self.options = list(options)  # --option PASS.KEY=VALUE for every optimize run
        self.build = build              # () -> (module_or_gm, inputs, reference callable)
        self.expect = list(expect)      # counters that must be > 0
        self.expect_known = dict(expect_known or {})  # counter -> known bug keeping it at 0
        # also optimize with --checks structure,shape (no per-step numeric check) and compare
        # the outputs: the pass's rewrite itself is right even where the numeric check rejects it
        self.unchecked = unchecked


# ----------------------------------------------------------------------------- towers

class TowersFunctional(nn.Module):
    """Recommendation-style parallel towers between a split and a cat, functional forms:
    per tower linear -> layer_norm -> tanh -> linear -> relu -> sigmoid, T towers."""

    def __init__(self, towers=6, d_in=8, hidden=16):
        super().__init__()
        self.towers, self.d_in, self.hidden = towers, d_in, hidden

        def plist(*shape, scale=0.3, shift=0.0):
            return nn.ParameterList([nn.Parameter(torch.randn(*shape) * scale + shift)
                                     for _ in range(towers)])
        self.w1, self.b1 = plist(hidden, d_in), plist(hidden, scale=0.1)
        self.ln_w, self.ln_b = plist(hidden, scale=0.2, shift=1.0), plist(hidden, scale=0.1)
        self.w2, self.b2 = plist(hidden, hidden), plist(hidden, scale=0.1)

    def forward(self, x):
        parts = torch.split(x, self.d_in, dim=1)
        outs = []
        for i in range(self.towers):
            h = F.linear(parts[i], self.w1[i], self.b1[i])
            h = F.layer_norm(h, (self.hidden,), self.ln_w[i], self.ln_b[i], eps=1e-5)
            h = torch.tanh(h)
            h = torch.relu(F.linear(h, self.w2[i], self.b2[i]))
            outs.append(torch.sigmoid(h))
        return torch.cat(outs, dim=1)


class TowersModule(nn.Module):
    """The same towers with nn.Linear / nn.LayerNorm / nn.Tanh / nn.ReLU / nn.Sigmoid modules
    (7 towers of different activation order)."""

    def __init__(self, towers=7, d_in=6, hidden=12):
        super().__init__()
        self.towers, self.d_in = towers, d_in
        self.fc = nn.ModuleList([nn.Linear(d_in, hidden) for _ in range(towers)])
        self.norm = nn.ModuleList([nn.LayerNorm(hidden) for _ in range(towers)])
        self.tanh = nn.ModuleList([nn.Tanh() for _ in range(towers)])
        self.relu = nn.ModuleList([nn.ReLU() for _ in range(towers)])
        self.sig = nn.Sigmoid()

    def forward(self, x):
        parts = torch.split(x, self.d_in, dim=1)
        outs = []
        for i in range(self.towers):
            h = self.tanh[i](self.norm[i](self.fc[i](parts[i])))
            outs.append(self.sig(self.relu[i](h)))
        return torch.cat(outs, dim=1)


class SharedInput(nn.Module):
    """Heads sharing one input (batch_linear_lhs) followed by per-head clamp, nan_to_num,
    detach and eval-mode dropout (the pointwise batch fusions)."""

    def __init__(self, heads=5, d_in=10):
        super().__init__()
        self.heads = heads
        self.w = nn.ParameterList([nn.Parameter(torch.randn(4 + i, d_in) * 0.4) for i in range(heads)])
        self.b = nn.ParameterList([nn.Parameter(torch.randn(4 + i) * 0.1) for i in range(heads)])
        self.v = nn.ParameterList([nn.Parameter(torch.randn(6, 6) * 0.4) for _ in range(heads)])

    def forward(self, x, y):
        outs = [F.linear(x, self.w[i], self.b[i]) for i in range(self.heads)]
        parts = torch.split(y, 6, dim=1)
        more = []
        for i in range(self.heads):
            h = F.linear(parts[i], self.v[i])
            h = torch.clamp(h, min=-0.5, max=0.5)
            h = torch.nan_to_num(h, nan=0.0)
            h = F.dropout(h.detach(), p=0.3, training=False)
            more.append(h)
        return torch.cat(outs, dim=1), torch.cat(more, dim=1)


def _build_shared_input():
    torch.manual_seed(SEED)
    m = SharedInput().eval()
    g = _gen(7)
    return m, [_randn(g, 3, 10), _randn(g, 3, 30)], m


def _build_towers_functional():
    torch.manual_seed(SEED)
    m = TowersFunctional().eval()
    return m, [_randn(_gen(1), 4, 48)], m


def _build_towers_module():
    torch.manual_seed(SEED)
    m = TowersModule().eval()
    return m, [_randn(_gen(2), 5, 42)], m


# ----------------------------------------------------------------------------- split/cat

class Fn(nn.Module):
    """Wraps a one-argument function so symbolic_trace traces it as forward()."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def cat_all(x):
    """cat of every getitem of a split, in order: the split disappears."""
    y = torch.relu(x)
    a, b, c = torch.split(y, [2, 4, 6], dim=1)
    return torch.cat([a, b, c], dim=1) * 2.0


def cat_run(x):
    """cat of a consecutive run of single-user pieces: one merged section."""
    p0, p1, p2, p3, p4, p5 = torch.split(x, 2, dim=1)
    return torch.cat([p1, p2, p3], dim=1), p0 + p5, torch.sigmoid(p4)


def cat_run_multi(x):
    """cat of a consecutive run whose pieces have other users too: a slice of the input."""
    p0, p1, p2, p3, p4, p5 = torch.split(x, 2, dim=1)
    return torch.cat([p1, p2, p3], dim=1), p1 * p0, torch.sigmoid(p2) + p3 - p4 * p5


def stack_split(x):
    """stack of every split piece."""
    p0, p1, p2, p3 = torch.split(x, 3, dim=1)
    return torch.stack([p0, p1, p2, p3], dim=1) + 1.0


def stack_split_part(x):
    """stack mixing split pieces and another tensor."""
    p0, p1, p2, p3 = torch.split(x, 3, dim=1)
    return torch.stack([p0, p1, torch.tanh(p2), p3], dim=0)


def unbind_stack(x):
    """unbind then stack of every piece, on the same dim and on another dim."""
    u = torch.unbind(x, dim=1)
    pieces = [u[i] for i in range(6)]
    return torch.stack(pieces, dim=1) * 3.0


def unbind_stack_other(x):
    u = torch.unbind(x, dim=1)
    pieces = [u[i] for i in range(6)]
    return torch.stack(pieces, dim=2) - 1.0


def unbind_cat(x):
    """cat of every unbind piece: a view of the input."""
    u = torch.unbind(x, dim=1)
    return torch.cat([u[i] for i in range(6)], dim=1)


def nested_splits(x):
    """a split of a split piece on the same dim: one split."""
    a, b = torch.split(x, [4, 8], dim=1)
    c, d = torch.split(b, [3, 5], dim=1)
    return torch.cat([torch.relu(a), c, torch.tanh(d)], dim=1)


def split_squeeze(x):
    """split into size-1 pieces, each squeezed on the split dim: an unbind."""
    p = torch.split(x, 1, dim=1)
    sq = [torch.squeeze(p[i], 1) for i in range(6)]
    return torch.stack(sq, dim=0) * 0.5


def split_one(x):
    """a split with one section is its input."""
    (a,) = torch.split(x, 12, dim=1)
    return torch.relu(a)


def cat_many(x):
    """cat of a long run of split pieces (>= threshold_to_cat) with other tensors around."""
    p = torch.split(x, 2, dim=1)
    return torch.cat([torch.relu(p[0])] + [p[i] for i in range(1, 11)] + [p[11] * 2.0], dim=1)


def reshape_stack(x):
    """stack of equal reshapes of split pieces: one reshape after the stack."""
    p0, p1, p2 = torch.split(x, 4, dim=1)
    return torch.stack([p0.reshape(4, 2, 2), p1.reshape(4, 2, 2), p2.reshape(4, 2, 2)], dim=1)


def _fn_case(fn, shape):
    def build():
        m = Fn(fn).eval()
        return m, [_randn(_gen(3), *shape)], m
    return build


# ----------------------------------------------------------------------------- DLRM

class DLRMLike(nn.Module):
    """embedding_bag tables (nn.EmbeddingBag) + a bottom MLP (nn.Sequential), per-table
    projections F.linear + relu, interaction by cat, a top MLP."""

    def __init__(self, tables=6, dim=8, per_bag=3):
        super().__init__()
        self.tables, self.per_bag = tables, per_bag
        self.bot = nn.Sequential(nn.Linear(13, 32), nn.ReLU(), nn.Linear(32, dim), nn.ReLU())
        self.emb = nn.ModuleList([nn.EmbeddingBag(20 + 5 * i, dim, mode="sum" if i % 2 else "mean")
                                  for i in range(tables)])
        self.pw = nn.ParameterList([nn.Parameter(torch.randn(dim, dim) * 0.3) for _ in range(tables)])
        self.pb = nn.ParameterList([nn.Parameter(torch.randn(dim) * 0.1) for _ in range(tables)])
        self.top = nn.Sequential(nn.Linear(dim * (tables + 1), 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, dense, idx):
        d = self.bot(dense)
        ids = torch.split(idx, self.per_bag, dim=1)
        feats = [d]
        for i in range(self.tables):
            e = self.emb[i](ids[i])
            feats.append(torch.relu(F.linear(e, self.pw[i], self.pb[i])))
        z = torch.cat(feats, dim=1)
        return torch.sigmoid(self.top(z))


def _build_dlrm():
    torch.manual_seed(SEED)
    m = DLRMLike().eval()
    g = _gen(4)
    return m, [_randn(g, 4, 13), torch.randint(0, 20, (4, 18), generator=g)], m


class SequentialRec(nn.Module):
    """A sequential recommender (BST / BERT4Rec style, with DIEN's GRU): item embeddings plus
    positions through an nn.TransformerEncoder that masks the padding (ids == 0) out of its
    attention, the same sequence through an nn.GRU, the
    encoder's tokens split into per-position heads of functional towers (F.linear -> tanh, the
    batch fusions' food) and everything concatenated for a top linear. The sequence modules are
    called whole (FX leaves): the engine rewrites around them and its checks and `verify` run
    them."""

    def __init__(self, items=50, d=8, length=5, heads=2):
        super().__init__()
        self.length, self.d = length, d
        self.emb = nn.Embedding(items, d)
        self.pos = nn.Parameter(torch.randn(1, length, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, heads, 16, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(d), enable_nested_tensor=False)
        self.gru = nn.GRU(d, 6, batch_first=True)
        self.w = nn.ParameterList([nn.Parameter(torch.randn(4, d) * 0.4) for _ in range(length)])
        self.b = nn.ParameterList([nn.Parameter(torch.randn(4) * 0.1) for _ in range(length)])
        self.top_w = nn.Parameter(torch.randn(1, 4 * length + 6) * 0.3)

    def forward(self, ids):
        pad = ids == 0  # item 0 pads short histories: masked out of attention
        x = self.emb(ids) + self.pos
        h = self.enc(x, src_key_padding_mask=pad)
        _, state = self.gru(x)
        tokens = torch.unbind(h, dim=1)
        heads = [torch.tanh(F.linear(tokens[i], self.w[i], self.b[i])) for i in range(self.length)]
        z = torch.cat(heads + [state[0]], dim=1)
        return torch.sigmoid(F.linear(z, self.top_w))


def _build_sequential_rec():
    torch.manual_seed(SEED)
    m = SequentialRec().eval()
    ids = torch.randint(1, 50, (4, 5), generator=_gen(8))
    ids[1, 3:] = 0  # two histories shorter than 5
    ids[3, 4:] = 0
    return m, [ids], m


# ----------------------------------------------------------------------------- post-grad

ATEN_TOWERS = 6


def aten_towers(x, w, b, y):
    """Post-grad (make_fx) towers: t + addmm per tower, tensor add/sub/mul/div, tanh,
    sigmoid, relu; a cat of 12 split pieces; a cat of every select of y."""
    # x (8, 48); w (T, 16, 8); b (T, 16); y (6, 8, 4)
    parts = torch.split(x, 8, dim=1)
    outs = []
    for i in range(ATEN_TOWERS):
        h = F.linear(parts[i], w[i], b[i])
        s = torch.sigmoid(h)
        h = torch.tanh(h) * s + torch.relu(h) - h / (s + 1.0)
        outs.append(h)
    c = torch.cat(outs, dim=1)
    p = torch.split(c, 8, dim=1)
    many = torch.cat([p[i] for i in range(12)], dim=1)
    sel = torch.cat([y.select(0, i) for i in range(6)], dim=0)
    return many, sel


def _build_aten_towers():
    from torch.fx.experimental.proxy_tensor import make_fx
    g = _gen(5)
    inputs = [_randn(g, 8, 48), _randn(g, ATEN_TOWERS, 16, 8, scale=0.3),
              _randn(g, ATEN_TOWERS, 16, scale=0.1), _randn(g, 6, 8, 4)]
    return make_fx(aten_towers)(*inputs), inputs, aten_towers


def aten_group(x, w0, w1, w2, w3, w4, b0, b1, b2, b3, b4, y, z):
    """Post-grad linears of different shapes (group_linear), cat of unsqueezed selects
    (unbind_stack_aten), cat of size-1 split pieces viewed without the split dim
    (move_view_after_cat_aten)."""
    x0, x1, x2, x3, x4 = torch.split(x, [4, 6, 8, 4, 10], dim=1)
    outs = [F.linear(x0, w0, b0), F.linear(x1, w1, b1), F.linear(x2, w2, b2),
            F.linear(x3, w3, b3), F.linear(x4, w4, b4)]
    h = torch.cat(outs, dim=1)
    us = torch.cat([y.select(1, i).unsqueeze(1) for i in range(4)], dim=1)
    q = torch.split(z, 1, dim=1)
    mv = torch.cat([q[i].view(6, 4) for i in range(5)], dim=1)
    return h, us, mv


def _build_aten_group():
    from torch.fx.experimental.proxy_tensor import make_fx
    g = _gen(6)
    inputs = [_randn(g, 6, 32), _randn(g, 8, 4, scale=0.3), _randn(g, 10, 6, scale=0.3),
              _randn(g, 4, 8, scale=0.3), _randn(g, 6, 4, scale=0.3), _randn(g, 8, 10, scale=0.3),
              _randn(g, 8, scale=0.1), _randn(g, 10, scale=0.1), _randn(g, 4, scale=0.1),
              _randn(g, 6, scale=0.1), _randn(g, 8, scale=0.1), _randn(g, 3, 4, 5),
              _randn(g, 6, 5, 4)]
    return make_fx(aten_group)(*inputs), inputs, aten_group


# ----------------------------------------------------------------------------- registry

CASES = [
    Case("towers_functional", _build_towers_functional,
         ["batch_linear", "batch_layernorm", "batch_tanh", "batch_relu", "batch_sigmoid",
          "split_cat_pass", "unbind_stack_pass"]),
    Case("shared_input", _build_shared_input,
         ["batch_linear_lhs", "batch_linear", "batch_clamp", "batch_nan_to_num", "batch_detach",
          "batch_dropout"]),
    Case("towers_module", _build_towers_module, ["batch_tanh", "batch_relu", "batch_sigmoid"]),
    Case("cat_all", _fn_case(cat_all, (4, 12)), ["merge_getitem_cat_pass"]),
    Case("cat_run", _fn_case(cat_run, (4, 12)), ["merge_getitem_cat_pass"]),
    Case("cat_run_multi", _fn_case(cat_run_multi, (4, 12)), ["mutate_cat_pass"], unchecked=True),
    Case("stack_split", _fn_case(stack_split, (4, 12)), ["split_cat_pass"]),
    Case("stack_split_part", _fn_case(stack_split_part, (4, 12)), ["split_cat_pass"]),
    Case("unbind_stack", _fn_case(unbind_stack, (4, 6, 5)), ["unbind_stack_pass"]),
    Case("unbind_stack_other", _fn_case(unbind_stack_other, (4, 6, 5)), ["unbind_stack_pass"]),
    Case("unbind_cat", _fn_case(unbind_cat, (4, 6, 5)), ["unbind_stack_pass"]),
    Case("nested_splits", _fn_case(nested_splits, (4, 12)), ["merge_splits_pass"]),
    Case("split_squeeze", _fn_case(split_squeeze, (4, 6, 5)), ["split_cat_pass"]),
    Case("split_one", _fn_case(split_one, (4, 12)), ["remove_split_with_size_one_pass"]),
    Case("cat_many", _fn_case(cat_many, (4, 24)), ["split_cat_pass"]),
    Case("reshape_stack", _fn_case(reshape_stack, (4, 12)), ["move_reshape_out_of_split_stack_pass"]),
    Case("dlrm", _build_dlrm, ["batch_linear", "batch_relu"]),
    Case("sequential_rec", _build_sequential_rec, ["batch_linear", "batch_tanh", "unbind_stack_pass"]),
    Case("aten_towers", _build_aten_towers,
         ["batch_linear_post_grad", "batch_aten_add", "batch_aten_sub", "batch_aten_mul",
          "batch_aten_div", "batch_aten_tanh", "batch_aten_sigmoid", "batch_aten_relu",
          "normalization_aten_pass", "split_cat_aten_pass", "select_cat_aten_pass"]),
    # the model's own aten.select.int: unbind_stack_aten_pass takes them only with the
    # extension option (upstream accepts the generic aten.select its batch fusions emit)
    Case("aten_group", _build_aten_group,
         ["group_linear", "unbind_stack_aten_pass", "move_view_after_cat_aten_pass"],
         options=["unbind_stack_aten_pass.match_select_overload=true"]),
]

CASES_BY_NAME = {c.name: c for c in CASES}
