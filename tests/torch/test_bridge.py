#!/usr/bin/python3
"""The torch suite: tools/optimus_fx.py against real PyTorch, and the committed fixtures.

Run by meson (suite 'torch') with /usr/bin/python3; prints TAP itself. Without torch it
prints "1..0 # SKIP torch not available" and exits 0.

Per fixture model (tests/torch/fixture_models.py):
  roundtrip/NAME  load(export(m)) on m gives bit-identical outputs and the same node targets
  current/NAME    the committed tests/data/fixtures/NAME.json equals a fresh export (graph
                  exactly, record within 1e-6 of the output scale) and, loaded from disk,
                  reproduces its recorded outputs
  verify/NAME     `optimus verify NAME.json` exits 0
  shapes/NAME     `optimus convert --input-shape NAME=DTYPE:DIMS` infers ShapeProp's
                  shapes/dtypes on every node (get_attr nodes keep their annotated meta)
(verify/shapes are skipped only when OPTIMUS_CLI names no binary). Known engine gaps are
listed in KNOWN_BUGS and reported as "not ok ... # TODO known bug: ...".
plus tests of the target whitelist, the namespaces a dump's functions may come from (the
model's own package, --allow-namespace), module paths that are not Python identifiers,
the engine-op map, an engine-style rewritten graph, and the optimus_fx.py command line.

Environment: OPTIMUS_SOURCE_ROOT (source tree), OPTIMUS_CLI (the optimus binary).
"""

import atexit
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("OPTIMUS_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
os.environ["OPTIMUS_SOURCE_ROOT"] = SOURCE_ROOT
PYTHON = sys.executable
TOOL = os.path.join(SOURCE_ROOT, "tools", "optimus_fx.py")

try:
    import torch
    import torch.nn as nn
except ImportError:
    torch = None

if torch is not None:
    sys.path.insert(0, HERE)
    import fixture_models as fm
    import op_coverage
    import optimus_fx as ox
    from tap import TapResult

FRESH_TOL = 1e-6  # committed fixture vs fresh export, relative to max(1, output scale)


# ----------------------------------------------------------------------------- helpers

_fresh = {}
_fresh_dir = None


def _fresh_root():
    """One temporary folder per run for the fresh exports, removed when the run ends."""
    global _fresh_dir
    if _fresh_dir is None:
        _fresh_dir = tempfile.mkdtemp(prefix="optimus-bridge-")
        atexit.register(shutil.rmtree, _fresh_dir, True)
    return _fresh_dir


def fresh_export(name):
    """(doc, module, path) of a fresh export of fixture `name`, cached per run."""
    if name not in _fresh:
        d = tempfile.mkdtemp(prefix=name + "-", dir=_fresh_root())
        path = os.path.join(d, name + ".json")
        doc, m = fm.export_fixture(name, path)
        _fresh[name] = (doc, m, path)
    return _fresh[name]


def load_committed(name):
    path = fm.fixture_path(name)
    with open(path, encoding="utf-8") as f:
        return json.load(f), path


def max_rel(a, b):
    _, rel, _ = ox.diff(a, b)
    return rel


def run_cli(*args):
    return subprocess.run([os.environ["OPTIMUS_CLI"], *args], capture_output=True, text=True,
                          timeout=600)


# ----------------------------------------------------------------------------- per fixture

class FixtureTests(unittest.TestCase):
    pass


def _roundtrip(self, name):
    doc, m, path = fresh_export(name)
    _, inputs, _ = fm.build(name)  # same seed -> same inputs
    gm = ox.load(path, m, allow_namespaces=fm.NAMESPACES.get(name, ()))
    with torch.no_grad():
        want = ox._flatten_outputs(m(*inputs), [])
    got = ox.run(gm, inputs)
    self.assertEqual(len(want), len(got))
    for i, (w, g) in enumerate(zip(want, got)):
        self.assertEqual((w.dtype, w.shape), (g.dtype, g.shape), "output %d" % i)
        self.assertTrue(torch.equal(torch.isnan(w), torch.isnan(g)), "output %d nan" % i)
        self.assertTrue(torch.equal(torch.nan_to_num(w), torch.nan_to_num(g)),
                        "output %d not bit-identical" % i)
    want_t = [(n["name"], n["op"], n["target"]) for n in doc["graphs"][0]["nodes"]]
    got_t = [(n.name, n.op, ox.target_name(n.target)) for n in gm.graph.nodes]
    self.assertEqual(want_t, got_t)
    # the recorded outputs are exactly what the module computed
    for i, (w, r) in enumerate(zip(want, ox.record_outputs(doc))):
        self.assertTrue(torch.equal(torch.nan_to_num(w), torch.nan_to_num(r)), "record %d" % i)


def _current(self, name):
    doc, _, _ = fresh_export(name)
    committed, path = load_committed(name)
    stale = "stale fixture %s: regenerate with tests/torch/make_fixtures.py" % path
    self.assertEqual(committed["graphs"], doc["graphs"], stale + " (graph differs)")
    rec_c, rec_f = committed["record"], doc["record"]
    self.assertEqual(rec_c["inputs"], rec_f["inputs"], stale + " (inputs differ)")
    self.assertEqual(sorted(rec_c["params"]), sorted(rec_f["params"]), stale + " (param set)")
    for k, v in rec_c["params"].items():
        if "fill" in v or "fill" in rec_f["params"][k]:
            self.assertEqual(v, rec_f["params"][k], stale + " (param %s)" % k)
        else:
            rel = max_rel(ox.tensor_from_json(rec_f["params"][k]), ox.tensor_from_json(v))
            self.assertLessEqual(rel, FRESH_TOL, stale + " (param %s)" % k)
    outs_c, outs_f = ox.record_outputs(committed), ox.record_outputs(doc)
    self.assertEqual(len(outs_c), len(outs_f), stale)
    for i, (c, f) in enumerate(zip(outs_c, outs_f)):
        self.assertLessEqual(max_rel(f, c), FRESH_TOL, stale + " (output %d)" % i)
    # the file on disk alone (fresh root + recorded params) reproduces its outputs
    m, _, _ = fm.build(name)
    ox.restore_params(m, committed)
    gm = ox.load(committed, m, allow_namespaces=fm.NAMESPACES.get(name, ()))
    got = ox.run(gm, ox.record_inputs(committed))
    for i, (c, g) in enumerate(zip(outs_c, got)):
        _, rel, ok = ox.diff(c, g)
        self.assertTrue(ok, "output %d of the loaded fixture: rel %.3g" % (i, rel))


def _need_cli(self):
    """The optimus binary must be there (meson passes OPTIMUS_CLI); run by hand without it,
    the CLI tests are skipped with that reason. A binary that lacks a command fails."""
    cli = os.environ.get("OPTIMUS_CLI")
    if not cli or not os.path.exists(cli):
        self.skipTest("optimus CLI not built (set OPTIMUS_CLI)")


def _verify(self, name):
    _need_cli(self)
    p = run_cli("verify", fm.fixture_path(name))
    self.assertEqual(p.returncode, 0, "optimus verify %s:\n%s%s" % (name, p.stdout, p.stderr))


def _shape_specs(doc):
    """--input-shape NAME=DTYPE:D0,D1 for every placeholder, and the doc with the record and
    the metas of placeholders and call nodes removed. get_attr nodes keep theirs: a
    parameter's shape is an annotation of the dump (torch.fx dumps carry it), not something
    --input-shape sets or the graph lets anyone infer."""
    stripped = copy.deepcopy(doc)
    stripped.pop("record", None)
    specs = []
    for n in stripped["graphs"][0]["nodes"]:
        meta = n.get("meta", {})
        if n["op"] == "placeholder" and "tensor" in meta:
            specs += ["--input-shape", "%s=%s:%s" % (
                n["name"], meta["tensor"]["dtype"],
                ",".join(str(d) for d in meta["tensor"]["shape"]))]
        if n["op"] != "get_attr":
            n.pop("meta", None)
    return stripped, specs


def _shapes(self, name):
    _need_cli(self)
    committed, _ = load_committed(name)
    stripped, specs = _shape_specs(committed)
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "in.json"), os.path.join(d, "out.json")
        with open(src, "w", encoding="utf-8") as f:
            json.dump(stripped, f)
        p = run_cli("convert", src, *specs, "-o", out)
        self.assertEqual(p.returncode, 0, "optimus convert:\n%s%s" % (p.stdout, p.stderr))
        with open(out, encoding="utf-8") as f:
            inferred = {n["name"]: n.get("meta") for n in json.load(f)["graphs"][0]["nodes"]}
    problems = []
    for n in committed["graphs"][0]["nodes"]:
        if n["op"] == "output":
            continue  # its meta restates the outputs' metas
        want = n.get("meta") or {}
        got = inferred.get(n["name"]) or {}
        if "tensor" in want:
            w, g = want["tensor"], got.get("tensor") or {}
            if (w["shape"], w["dtype"]) != (g.get("shape"), g.get("dtype")):
                problems.append("%s: ShapeProp %s %s, inferred %s" %
                                (n["name"], w["dtype"], w["shape"], got or "nothing"))
        elif "tuple" in want:
            w = [(t["dtype"], t["shape"]) for t in want["tuple"]]
            g = [(t.get("dtype"), t.get("shape")) for t in got.get("tuple") or []]
            if w != g:
                problems.append("%s: ShapeProp %s, inferred %s" % (n["name"], w, g or "nothing"))
    self.assertFalse(problems, "\n".join(problems))


def _add_fixture_tests():
    for name in fm.MODELS:
        for kind, fn in (("roundtrip", _roundtrip), ("current", _current), ("verify", _verify),
                         ("shapes", _shapes)):
            def test(self, fn=fn, name=name):
                fn(self, name)
            test.__doc__ = "%s/%s" % (kind, name)
            setattr(FixtureTests, "test_%s_%s" % (kind, name), test)


# ----------------------------------------------------------------------------- bridge

class BridgeTests(unittest.TestCase):
    def test_fixtures_cover_op_table(self):
        """coverage/ox_ops.def: every op of the engine's op table is used by a fixture"""
        self.assertEqual(op_coverage.uncovered_ops(), [])

    def test_engine_op_map_complete(self):
        """engine-ops/map: every op of ox_ops.def maps back to a torch callable"""
        missing = [op for op in op_coverage.def_ops() if op not in ox.OPTIMUS_OPS]
        self.assertEqual(missing, [])
        for op in op_coverage.def_ops():
            for prefix in ("", "optimus."):
                self.assertIs(ox.resolve_target(prefix + op), ox.OPTIMUS_OPS[op])

    def test_read_trace_gzip(self):
        """traces/gzip: read_trace reads T.json.gz as T.json; a cut one is a ValueError"""
        _need_cli(self)
        example = os.path.join(SOURCE_ROOT, "data", "examples", "recsys-towers.txt")
        with tempfile.TemporaryDirectory() as d:
            plain, gz = os.path.join(d, "t.json"), os.path.join(d, "t.json.gz")
            for t in (plain, gz):
                p = run_cli("optimize", example, "-o", os.path.join(d, "o.json"), "--trace", t)
                self.assertEqual(p.returncode, 0, p.stderr)
            with open(gz, "rb") as f:
                raw = f.read()
            self.assertEqual(raw[:2], b"\x1f\x8b")
            a, b = ox.read_trace(plain), ox.read_trace(gz)
            for t in (a, b):
                t.pop("seconds", None)
                for e in t.get("passes", []):  # the per-pass table: each pass's wall time
                    e.pop("seconds", None)
                self.assertTrue(t.get("passes"))
                for s in t["steps"]:
                    s.pop("seconds", None)
                    for c in s.get("checks", {}).values():
                        c.pop("seconds", None)
            self.assertEqual(a, b)
            cut = os.path.join(d, "cut.json.gz")
            with open(cut, "wb") as f:
                f.write(raw[:len(raw) // 2])
            with self.assertRaises(ValueError):
                ox.read_trace(cut)

    def test_read_trace_versions(self):
        """traces/versions: read_trace gives the same trace from versions 3, 4 and 5 of one run
        (version 4's runs of edits, node lists and left-out provenance expanded; version 5's
        rules, check details, ranges and getitems items; its times have 3 digits)"""
        _need_cli(self)
        example = os.path.join(SOURCE_ROOT, "data", "examples", "recsys-towers.txt")
        with tempfile.TemporaryDirectory() as d:
            got = {}
            for v in ("3", "4", "5"):
                t = os.path.join(d, "t%s.json" % v)
                p = run_cli("optimize", example, "-o", os.path.join(d, "o.json"), "--trace", t,
                            "--trace-format", v)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(t, encoding="utf-8") as f:
                    self.assertIn('"version":%s,' % v, f.readline())
                got[v] = tr = ox.read_trace(t)
                tr.pop("version")
                tr.pop("seconds", None)
                for e in tr.get("passes", []):
                    e.pop("seconds", None)
                for s in tr["steps"]:
                    s.pop("seconds", None)
                    for c in s.get("checks", {}).values():
                        c.pop("seconds", None)
            with open(os.path.join(d, "t4.json"), encoding="utf-8") as f:
                text = f.read()
            self.assertIn('["replace",', text)  # the encodings differ, the traces do not
            self.assertIn('{"nodes":[', text)
            steps = [s for s in got["4"]["steps"] if s.get("edits")]
            self.assertTrue(steps and any(s.get("provenance") for s in steps))
            self.assertEqual(got["3"], got["4"])
            with open(os.path.join(d, "t5.json"), encoding="utf-8") as f:
                text = f.read()
            self.assertIn('"rules":[', text)
            self.assertIn('["getitems",', text)
            self.assertRegex(text, r'\[\[[0-9]+,[0-9]+\]')  # a range in an index list
            self.assertNotIn('"pass":"', text.split('"steps":[', 1)[1].split("\n],", 1)[0])
            self.assertEqual(got["4"], got["5"])

    def test_fixture_dir_small(self):
        """fixtures/size: the committed fixtures stay under 2 MB"""
        total = sum(os.path.getsize(os.path.join(fm.FIXTURE_DIR, f))
                    for f in os.listdir(fm.FIXTURE_DIR))
        self.assertLess(total, 2 * 1024 * 1024)

    def test_target_whitelist(self):
        """targets/whitelist: qualified names resolve, anything else is refused"""
        import operator
        import torch.nn.functional as F
        ok = {"torch.cat": torch.cat, "operator.getitem": operator.getitem,
              "_operator.add": operator.add, "torch.nn.functional.relu": F.relu,
              "torch._C._nn.linear": F.linear, "torch.functional.split": torch.functional.split,
              "builtins.getattr": getattr, "getattr": getattr,
              "torch.ops.aten.mm.default": torch.ops.aten.mm.default,
              "aten.addmm.default": torch.ops.aten.addmm.default,
              "torch.ops.aten.split_with_sizes": torch.ops.aten.split_with_sizes}
        for name, fn in ok.items():
            self.assertIs(ox.resolve_target(name), fn, name)
        for bad in ("os.system", "torch.load", "torch.save", "torch.serialization.os.system",
                    "builtins.eval", "eval", "exec", "__import__", "torch.manual_seed",
                    "torch.set_default_dtype", "torch._C._nn.__dict__", "torch.ops.aten.mm.default();x",
                    "torch.ops.fake.op.default", "subprocess.run", "torch.fx.graph.Graph",
                    "torch.nn.Linear", "torch.hub.load", "torch.jit.load", "torch.os",
                    "torch.Tensor.__init__", "operator.attrgetter.__call__", ""):
            with self.assertRaises(ox.TargetError, msg=bad):
                ox.resolve_target(bad)
        self.assertEqual(ox.check_method("view"), "view")
        for bad in ("__class__", "__reduce_ex__", "numpy", "register_hook", "a.b", "__init__"):
            with self.assertRaises(ox.TargetError, msg=bad):
                ox.check_method(bad)

    def test_values_roundtrip(self):
        """values/encode-decode: every value kind of the schema survives encode + decode"""
        vals = [None, True, 3, -2, 1.0, 1e-5, float("inf"), float("-inf"), "mean", [1, 2],
                (1, (2, 3)), torch.float16, torch.int64, torch.device("cpu"),
                torch.contiguous_format, Ellipsis, slice(1, None, 2), {"a": 1, "b": [1.5]}]
        for v in vals:
            enc = ox.encode_value(v)
            self.assertEqual(json.loads(json.dumps(enc)), enc)
            self.assertEqual(ox.decode_value(enc, {}), v)
        self.assertEqual(json.dumps(ox.encode_value(1.0)), "1.0")
        nan = ox.decode_value(ox.encode_value(float("nan")), {})
        self.assertNotEqual(nan, nan)
        for bad in ({"raw": "__import__('os')"}, {"sym": "s0"}, {"node": "missing"},
                    {"dtype": "torch.nonsense"}, {"enum": "os.system"}, {"tuple": [1], "x": 2}):
            with self.assertRaises(ValueError, msg=str(bad)):
                ox.decode_value(bad, {})

    def test_tensor_json_exact(self):
        """tensors/exact: recorded data and sin fills round-trip bit-exactly"""
        g = torch.Generator().manual_seed(3)
        for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
            t = (torch.randn(257, generator=g) * 1e3).to(dt)
            t[5], t[6], t[7] = float("nan"), float("inf"), float("-inf")
            back = ox.tensor_from_json(json.loads(json.dumps(ox.tensor_to_json(t))))
            self.assertEqual(back.dtype, dt)
            self.assertTrue(torch.equal(torch.nan_to_num(back), torch.nan_to_num(t)), dt)
        for t in (torch.tensor([[True, False]]), torch.tensor([-(2 ** 62), 7]),
                  torch.tensor([3], dtype=torch.int32)):
            self.assertTrue(torch.equal(ox.tensor_from_json(ox.tensor_to_json(t)), t))
        # 64 values and more: "b64", the values' bytes (every dtype; -0.0 and subnormals kept)
        for t in (torch.rand(8, 9, generator=g) > 0.5, torch.arange(-40, 40) * (2 ** 56),
                  torch.arange(-40, 40, dtype=torch.int32) * 50_000_000,
                  torch.tensor([-0.0, 1e-45, -3e-39] * 30), torch.tensor([-0.0, 6e-8] * 40, dtype=torch.float16)):
            enc = ox.tensor_to_json(t)
            self.assertIn("b64", enc, t.dtype)
            back = ox.tensor_from_json(json.loads(json.dumps(enc)))
            self.assertEqual(back.dtype, t.dtype)
            self.assertEqual(back.shape, t.shape)
            if t.is_floating_point():
                self.assertTrue(torch.equal(back.view(torch.int32 if t.dtype == torch.float32 else torch.int16),
                                            t.view(torch.int32 if t.dtype == torch.float32 else torch.int16)))
            else:
                self.assertTrue(torch.equal(back, t))
        for bad in ({"dtype": "f32", "shape": [2], "b64": "AADAPw=="},       # one value for two
                    {"dtype": "f32", "shape": [1], "b64": "AAD*Pw=="},       # not base64
                    {"dtype": "b8", "shape": [1], "b64": "Ag=="}):           # a bool byte 2
            with self.assertRaises(ValueError, msg=str(bad)):
                ox.tensor_from_json(bad)
        f = ox.tensor_from_json({"dtype": "f32", "shape": [2, 2],
                                 "fill": {"kind": "sin", "scale": 0.5, "freq": 0.7, "phase": 0.1}})
        import math
        want = [0.5 * math.sin(0.7 * i + 0.1) for i in range(4)]
        self.assertTrue(torch.equal(f, torch.tensor(want, dtype=torch.float64).float().reshape(2, 2)))

    def test_engine_ops_numerics(self):
        """engine-ops/numerics: canonical-slot helpers compute what torch computes"""
        import torch.nn.functional as F
        g = torch.Generator().manual_seed(1)
        x = torch.randn(3, 4, generator=g)
        y = torch.randn(3, 4, generator=g)
        w = torch.randn(10, 4, generator=g)
        idx = torch.tensor([1, 2, 3, 4, 5, 6])
        off = torch.tensor([0, 2, 2])
        op = ox.OPTIMUS_OPS
        eq = self.assertTrue
        eq(torch.equal(op["slice"](x, 1, 1, None, 2), x[:, 1::2]))
        eq(torch.equal(op["add"](x, y, alpha=0.3), torch.add(x, y, alpha=0.3)))
        eq(torch.equal(op["sub"](x, y, alpha=0.3), torch.sub(x, y, alpha=0.3)))
        eq(torch.equal(op["add"](2.0, x), 2.0 + x))
        eq(torch.equal(op["sub"](1, x), 1 - x))
        eq(torch.equal(op["div"](x, y, rounding_mode="floor"), torch.div(x, y, rounding_mode="floor")))
        eq(torch.equal(op["div"](3.0, x, "trunc"), torch.div(torch.tensor(3.0), x, rounding_mode="trunc")))
        eq(torch.equal(op["sum"](x), x.sum()))
        eq(torch.equal(op["mean"](x, [0], True), x.mean([0], keepdim=True)))
        eq(torch.equal(op["squeeze"](x[None]), x))
        eq(torch.equal(op["embedding"](w, idx), F.embedding(idx, w)))
        out = op["embedding_bag"](w, idx, off, "mean")
        eq(isinstance(out, tuple) and len(out) == 4)
        eq(torch.equal(out[0], F.embedding_bag(idx, w, off, mode="mean")))
        eq(torch.equal(op["embedding_bag"](w, idx.view(3, 2), None, "sum")[0],
                       F.embedding_bag(idx.view(3, 2), w, mode="sum")))
        eq(torch.equal(op["split_with_sizes"](x, [1, 3], 1)[1], x[:, 1:]))
        eq(op["to"](x, torch.float64).dtype == torch.float64 and op["to"](x) is x)
        eq(op["size"](x) == (3, 4) and op["size"](x, -1) == 4)
        b0, b1 = w[:, 0], w[1, :3]
        gm = ox.grouped_mm([x, y[:, :2]], [w, w[:3, :2]], [b0, b1])
        eq(torch.equal(gm[0], F.linear(x, w, b0)))
        eq(torch.equal(gm[1], F.linear(y[:, :2], w[:3, :2], b1)))
        eq(torch.equal(ox.grouped_mm([x], [w])[0], F.linear(x, w)))

    def test_engine_style_rewrite(self):
        """load/optimized: an engine-style rewrite (4 towers -> optimus.grouped_mm on
        get_attr weights) loads against the original module and matches"""
        committed, _ = load_committed("recsys_layernorm")
        doc = copy.deepcopy(committed)
        nodes = doc["graphs"][0]["nodes"]
        towers = [n for n in nodes if n["op"] == "call_module" and n["target"].startswith("towers.")]
        self.assertEqual(len(towers), 4)
        first = nodes.index(towers[0])
        new = []
        for i, t in enumerate(towers):
            for leaf in ("weight", "bias"):
                new.append({"name": "w_%d_%s" % (i, leaf), "op": "get_attr",
                            "target": "%s.%s" % (t["target"], leaf), "args": [], "kwargs": {}})
        new.append({"name": "gmm", "op": "call_function", "target": "optimus.grouped_mm",
                    "args": [[t["args"][0] for t in towers],
                             [{"node": "w_%d_weight" % i} for i in range(4)],
                             [{"node": "w_%d_bias" % i} for i in range(4)]], "kwargs": {}})
        for i, t in enumerate(towers):
            new.append({"name": t["name"], "op": "call_function", "target": "operator.getitem",
                        "args": [{"node": "gmm"}, i], "kwargs": {}})
        rest = [n for n in nodes if n not in towers]
        # placed where the first tower was: some users now come before the group; the
        # JSON format allows forward references and load() orders the nodes
        doc["graphs"][0]["nodes"] = rest[:first] + new + rest[first:]
        m, _, _ = fm.build("recsys_layernorm")
        ox.restore_params(m, committed)
        inputs = ox.record_inputs(committed)
        ref = ox.run(ox.load(committed, m), inputs)
        got = ox.run(ox.load(doc, m), inputs)
        gm = ox.load(doc, m)
        self.assertIn("optimus.grouped_mm", [ox.target_name(n.target) for n in gm.graph.nodes])
        for r, o in zip(ref, got):
            self.assertTrue(ox.diff(r, o)[2])

    def test_hparam_mismatch_refused(self):
        """load/hparams: a call_module hyper-parameter that differs from root's module is refused"""
        committed, _ = load_committed("cnn")
        doc = copy.deepcopy(committed)
        for n in doc["graphs"][0]["nodes"]:
            if n["target"] == "conv2":
                n["kwargs"]["stride"] = {"tuple": [1, 1]}
        m, _, _ = fm.build("cnn")
        with self.assertRaisesRegex(ValueError, "stride"):
            ox.load(doc, m)
        ox.load(committed, m)
        # bias is written as the constructor flag: a dump of Linear(bias=True) does not load
        # on a module without bias (its call_module node would compute something else)
        doc = copy.deepcopy(committed)
        fc = next(n for n in doc["graphs"][0]["nodes"] if n["target"] == "fc")
        self.assertIs(fc["kwargs"]["bias"], True)
        m.fc = nn.Linear(16, 10, bias=False)
        with self.assertRaisesRegex(ValueError, "bias"):
            ox.load(doc, m)
        fc["kwargs"]["bias"] = False
        ox.load(doc, m)

    def test_module_hparams_written(self):
        """modules/hparams: call_module nodes carry the constructor hyper-parameters the op
        table's shape rules read, and `optimus convert --to json -o -` keeps them"""
        want = {
            "torch.nn.Linear": {"in_features", "out_features", "bias"},
            "torch.nn.Conv2d": {"in_channels", "out_channels", "kernel_size", "bias"},
            "torch.nn.Embedding": {"num_embeddings", "embedding_dim"},
            "torch.nn.EmbeddingBag": {"num_embeddings", "embedding_dim", "mode"},
            "torch.nn.BatchNorm2d": {"num_features", "affine"},
            "torch.nn.LayerNorm": {"elementwise_affine", "normalized_shape"},
        }
        seen = set()
        for name in ("mlp", "recsys_layernorm", "dlrm", "cnn", "resnet18"):
            committed, path = load_committed(name)
            mods = [n for n in committed["graphs"][0]["nodes"] if n["op"] == "call_module"]
            for n in mods:
                need = want.get(n["module_type"], set())
                self.assertLessEqual(need, set(n["kwargs"]), "%s %s" % (name, n["name"]))
                if need:
                    seen.add(n["module_type"])
            cli = os.environ.get("OPTIMUS_CLI")
            if not cli or not os.path.exists(cli):
                continue
            p = run_cli("convert", path, "--to", "json", "-o", "-")
            self.assertEqual(p.returncode, 0, p.stderr)
            conv = {n["name"]: n for n in json.loads(p.stdout)["graphs"][0]["nodes"]}
            for n in mods:
                self.assertEqual(conv[n["name"]]["kwargs"], n["kwargs"], "%s %s" % (name, n["name"]))
                self.assertEqual(conv[n["name"]].get("module_type"), n["module_type"])
            m, _, _ = fm.build(name)
            ox.load(json.loads(p.stdout), m)  # the hyper-parameters still agree with the module
        self.assertEqual(seen, set(want))

    def test_py311_patch_scope(self):
        """fx/py311-patch: the Proxy.__iter__ fix is installed only on Python>=3.11 with torch<2,
        and tuple unpacking traces"""
        needs = sys.version_info >= (3, 11) and int(torch.__version__.split(".")[0]) < 2
        self.assertEqual(ox._fx_needs_py311_patch(), needs)

        class Unpack(nn.Module):
            def forward(self, x):
                a, b = torch.split(x, 2, dim=1)
                return a * b

        with tempfile.TemporaryDirectory() as d:
            x = torch.randn(2, 4)
            self.assertEqual(ox.roundtrip(Unpack(), [x], os.path.join(d, "u.json")), [])
        self.assertEqual(torch.fx.proxy.Proxy.__iter__ is ox._proxy_iter_py311, needs)


# ----------------------------------------------------------------------------- namespaces

# Two small packages written to a temporary directory for the namespace tests: the model's
# own package (oxns_models, with a private wrapped function) and another one (oxns_extra).
_NS_FILES = {
    "oxns_extra/__init__.py": (
        "import os  # an attribute that refers to another module: never followed\n"
        "from functools import partial  # defined elsewhere: refused\n"
        "import torch\n\n\n"
        "def shift(x):\n"
        "    return x - 1.0\n\n\n"
        "class Box:\n"
        "    pass\n"),
    "oxns_models/__init__.py": (
        "import torch\n"
        "import torch.fx\n"
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "from oxns_extra import shift\n\n\n"
        "def _scale(x):\n"
        "    return x * 2.0 + 0.5\n\n\n"
        "torch.fx.wrap('_scale')\n"
        "torch.fx.wrap('shift')\n\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.w = nn.Parameter(torch.randn(4, 4))\n"
        "        self.b = nn.Parameter(torch.randn(4))\n\n"
        "    def forward(self, x):\n"
        "        return shift(_scale(F.linear(x, self.w, self.b)))\n"),
}
_ns_dir = None


def ns_packages():
    """The directory holding oxns_models and oxns_extra (on sys.path from then on)."""
    global _ns_dir
    if _ns_dir is None:
        _ns_dir = tempfile.mkdtemp(prefix="optimus-ns-")
        for rel, text in _NS_FILES.items():
            os.makedirs(os.path.join(_ns_dir, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(_ns_dir, rel), "w", encoding="utf-8") as f:
                f.write(text)
        sys.path.insert(0, _ns_dir)
    return _ns_dir


class NamespaceTests(unittest.TestCase):
    """call_function targets outside torch: the model's own package, --allow-namespace."""

    def tool(self, *args):
        env = dict(os.environ, PYTHONPATH=ns_packages())
        return subprocess.run([PYTHON, TOOL, *args], capture_output=True, text=True,
                              timeout=600, cwd=SOURCE_ROOT, env=env)

    def export_net(self, d):
        out = os.path.join(d, "net.json")
        p = self.tool("export", "oxns_models:Net", "--input-shape", "3,4", "--record", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, encoding="utf-8") as f:
            targets = [n["target"] for n in json.load(f)["graphs"][0]["nodes"]
                       if n["op"] == "call_function"]
        self.assertEqual(targets, ["torch._C._nn.linear", "oxns_models._scale", "oxns_extra.shift"])
        return out

    def test_own_package_with_module(self):
        """namespaces/own-package: with --module, a (private) function of the module's own
        package resolves; a target outside every allowed namespace is refused, and the error
        names the allowed namespaces and --allow-namespace"""
        with tempfile.TemporaryDirectory() as d:
            path = self.export_net(d)
            p = self.tool("compare", path, path, "--module", "oxns_models:Net")
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertNotIn("oxns_models._scale", p.stderr)  # that one resolved
            self.assertIn("'oxns_extra.shift' is outside the allowed namespaces", p.stderr)
            for ns in ("torch", "operator", "oxns_models", "--allow-namespace oxns_extra"):
                self.assertIn(ns, p.stderr)
            # without --module the own package is not implied either
            p = self.tool("compare", path, path, "--allow-namespace", "oxns_extra")
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn("'oxns_models._scale' is outside the allowed namespaces", p.stderr)
            self.assertIn("--allow-namespace oxns_models", p.stderr)

    def test_allow_namespace_flag(self):
        """namespaces/allow-flag: --allow-namespace PKG (repeatable) allows PKG's functions;
        torch and the standard library cannot be allowed"""
        with tempfile.TemporaryDirectory() as d:
            path = self.export_net(d)
            p = self.tool("compare", path, path, "--module", "oxns_models:Net",
                          "--allow-namespace", "oxns_extra")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("OK", p.stdout)
            p = self.tool("compare", path, path, "--allow-namespace", "oxns_extra",
                          "--allow-namespace", "oxns_models")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            for bad in ("os", "torch", "builtins", "a..b", "x;y"):
                p = self.tool("compare", path, path, "--allow-namespace", bad)
                self.assertEqual(p.returncode, 2, bad)
                self.assertIn("namespace", p.stderr, bad)
        # the API: load(..., allow_namespaces=...)
        ns_packages()
        import oxns_models
        m = oxns_models.Net().eval()
        x = torch.randn(3, 4)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "n.json")
            ox.export(m, [x], path)
            with self.assertRaisesRegex(ox.TargetError, "--allow-namespace oxns_models"):
                ox.load(path, m)
            gm = ox.load(path, m, allow_namespaces=ox.own_namespaces(m) + ["oxns_extra"])
            self.assertEqual(ox.own_namespaces(m), ["oxns_models"])
            with torch.no_grad():
                self.assertTrue(torch.equal(gm(x), m(x)))

    def test_namespace_resolution_rules(self):
        """namespaces/rules: only functions defined inside the namespace, reached through
        real submodules; no classes, no aliases of other modules, no dunders, no syntax"""
        ns_packages()
        import oxns_extra
        import oxns_models
        self.assertIs(ox.resolve_target("oxns_extra.shift", ["oxns_extra"]), oxns_extra.shift)
        self.assertIs(ox.resolve_target("oxns_models._scale", ["oxns_models"]),
                      oxns_models._scale)
        for bad in ("oxns_extra.os.system", "oxns_extra.partial", "oxns_extra.Box",
                    "oxns_extra.torch.load", "oxns_extra.__builtins__", "oxns_extra.__dict__",
                    "oxns_extra.shift.__globals__", "oxns_extra.shift(1)", "oxns_extra.nothing",
                    "oxns_extra", "oxns_extra.", "oxns_extra..shift", "oxns_extra.shift;x",
                    "oxns_extra.missing_module.f"):
            with self.assertRaises(ox.TargetError, msg=bad):
                ox.resolve_target(bad, ["oxns_extra"])
        # another package's function is not inside the namespace, even when reachable from it
        with self.assertRaises(ox.TargetError):
            ox.resolve_target("oxns_models.shift", ["oxns_models"])
        for bad in ("os", "torch", "torch.nn", "sys", "builtins", "__main__", "a..b", "", "1x",
                    "import"):
            with self.assertRaises(ox.TargetError, msg=bad):
                ox.check_namespace(bad)
        self.assertEqual(ox.own_namespaces(nn.Linear(2, 2)), [])  # torch is never "own"
        self.assertEqual(ox.own_namespaces(spec="torchvision.models:resnet18"), ["torchvision"])
        self.assertEqual(ox.own_namespaces(spec="tests/torch/real_models.py:swin_t"),
                         ["optimus_user_real_models"])

    def test_torchvision_targets(self):
        """namespaces/torchvision: the targets traced torchvision models call (stochastic
        depth, swin's private helpers) resolve with the torchvision namespace only"""
        try:
            import torchvision  # noqa: F401
            from torchvision.models import swin_transformer
            from torchvision.ops import stochastic_depth  # the function: it shadows its module
        except ImportError:
            self.skipTest("torchvision not available")
        name = "torchvision.ops.stochastic_depth.stochastic_depth"
        self.assertIs(ox.resolve_target(name, ["torchvision"]), stochastic_depth)
        self.assertIs(ox.resolve_target("torchvision.ops.stochastic_depth", ["torchvision"]),
                      stochastic_depth)  # a re-export, still defined inside torchvision
        self.assertIs(ox.resolve_target("torchvision.models.swin_transformer."
                                        "_get_relative_position_bias", ["torchvision"]),
                      swin_transformer._get_relative_position_bias)
        with self.assertRaisesRegex(ox.TargetError, "allowed namespaces.*--allow-namespace "
                                                    "torchvision"):
            ox.resolve_target(name)
        for bad in ("torchvision.models.resnet.torch.load", "torchvision.models.resnet.partial",
                    "torchvision.models.resnet.ResNet", "torchvision.models.resnet.nn.Linear",
                    "torchvision.models.resnet.__builtins__"):
            with self.assertRaises(ox.TargetError, msg=bad):
                ox.resolve_target(bad, ["torchvision"])

    def test_never_evaluates(self):
        """namespaces/no-eval: resolution is import + getattr: eval, exec and compile are never
        called, and the modules imported are exactly the target's dotted prefixes (imported
        once beforehand: a first import runs the module's code, which is not resolution)"""
        ns_packages()
        import builtins
        import oxns_extra  # noqa: F401
        try:
            import torchvision.ops.stochastic_depth  # noqa: F401
            have_tv = True
        except ImportError:
            have_tv = False
        imported = []
        real_import = ox.importlib.import_module

        def recording_import(name, *a):
            imported.append(name)
            return real_import(name, *a)

        def refuse(*a, **k):
            raise AssertionError("resolve_target evaluated text")

        saved = builtins.eval, builtins.exec, builtins.compile
        ox.importlib.import_module = recording_import
        builtins.eval = builtins.exec = builtins.compile = refuse
        try:
            ox.resolve_target("oxns_extra.shift", ["oxns_extra"])
            ox.resolve_target("torch._assert")
            ox.resolve_target("torch.ops.aten.mm.default")
            if have_tv:
                ox.resolve_target("torchvision.ops.stochastic_depth.stochastic_depth",
                                  ["torchvision"])
            for bad in ("oxns_extra.shift(__import__('os'))", "__import__('os').system"):
                with self.assertRaises(ox.TargetError):
                    ox.resolve_target(bad, ["oxns_extra"])
        finally:
            builtins.eval, builtins.exec, builtins.compile = saved
            ox.importlib.import_module = real_import
        want = ["oxns_extra"]
        if have_tv:
            want += ["torchvision", "torchvision.ops", "torchvision.ops.stochastic_depth"]
        self.assertEqual(imported, want)
        # and the bridge's source calls none of them (nor __import__) anywhere
        import ast
        with open(TOOL, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        calls = [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and
                 isinstance(n.func, ast.Name) and
                 n.func.id in ("eval", "exec", "compile", "__import__")]
        self.assertEqual(calls, [])

    def test_module_path_with_dash(self):
        """paths/dash: submodule names PyTorch accepts but Python cannot spell ("block1-0", as
        in regnet) export and load back bit-exactly, by path segments; empty and dunder
        segments are still refused"""

        class Dashed(nn.Module):
            def __init__(self):
                super().__init__()
                inner = nn.Sequential()
                inner.add_module("block1-0", nn.Linear(4, 5))
                inner.add_module("proj 1", nn.ReLU())
                self.add_module("trunk-output", inner)
                self.register_buffer("scale-x", torch.full((5,), 0.5))

            def forward(self, x):
                y = getattr(self, "trunk-output")(x)
                return y * getattr(self, "scale-x")

        torch.manual_seed(0)
        m = Dashed().eval()
        x = torch.randn(3, 4)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "dash.json")
            self.assertEqual(ox.roundtrip(m, [x], path), [])
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            targets = [n["target"] for n in doc["graphs"][0]["nodes"]]
            self.assertIn("trunk-output.block1-0", targets)
            self.assertIn("trunk-output.proj 1", targets)
            self.assertIn("scale-x", targets)
            self.assertIn("trunk-output.block1-0.weight", doc["record"]["params"])
            # sin fill, then the file alone on a fresh module (restore_params by path)
            ox.export(m, [x], path, record_io=True, param_fill="sin")
            fresh = Dashed().eval()
            self.assertIn("trunk-output.block1-0.weight", ox.restore_params(fresh, path))
            doc = ox.read_doc(path)
            got = ox.run(ox.load(doc, fresh), ox.record_inputs(doc))
            self.assertTrue(torch.equal(got[0], ox.record_outputs(doc)[0]))
        for bad in ("", "a..b", ".a", "a.", "a.__class__", "__dict__", 'a."x', "a.b\\c",
                    "a.b\nc"):
            with self.assertRaises(ox.TargetError, msg=repr(bad)):
                ox._check_attr_path(bad)
        self.assertEqual(ox._check_attr_path("trunk_output.block1.block1-0.proj.0.weight"),
                         ["trunk_output", "block1", "block1-0", "proj", "0", "weight"])

    def test_torch_assert_loads(self):
        """targets/torch-assert: torch._assert (traced vit_b_16's shape checks) loads and runs;
        other private torch names stay refused"""
        self.assertIs(ox.resolve_target("torch._assert"), torch._assert)

        class Asserting(nn.Module):
            def forward(self, x):
                torch._assert(x.shape[1] == 4, "want 4 features")
                return torch.tanh(x)

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "a.json")
            self.assertEqual(ox.roundtrip(Asserting(), [torch.randn(2, 4)], path), [])
            with open(path, encoding="utf-8") as f:
                self.assertIn("torch._assert", [n["target"] for n in
                                                json.load(f)["graphs"][0]["nodes"]])
        for bad in ("torch._C._nn.__dict__", "torch._load_global_deps", "torch._assert.x",
                    "torch._C._set_grad_enabled", "torch._utils._rebuild_tensor"):
            with self.assertRaises(ox.TargetError, msg=bad):
                ox.resolve_target(bad)


class CliTests(unittest.TestCase):
    """tools/optimus_fx.py as a command."""

    def tool(self, *args):
        return subprocess.run([PYTHON, TOOL, *args], capture_output=True, text=True, timeout=600,
                              cwd=SOURCE_ROOT)

    def test_export_roundtrip_compare(self):
        """cli/export-roundtrip-compare: export a model file, round trip it, compare dumps"""
        spec = os.path.join(HERE, "cli_model.py") + ":Net"
        with tempfile.TemporaryDirectory() as d:
            a = os.path.join(d, "a.json")
            p = self.tool("export", spec, "--input-shape", "4,8", "--input-shape", "4:i64",
                          "-o", a, "--record")
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(a, encoding="utf-8") as f:
                doc = json.load(f)
            self.assertEqual(doc["format"], "optimus-fx")
            self.assertEqual(sorted(doc["record"]["inputs"]), ["ids", "x"])
            p = self.tool("roundtrip", spec, "--input-shape", "4,8", "--input-shape", "4:i64")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            p = self.tool("compare", a, a, "--module", spec)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("OK", p.stdout)
            # an "optimized" dump that computes something else is caught
            for n in doc["graphs"][0]["nodes"]:
                if n["target"] == "torch.tanh":
                    n["target"] = "torch.sigmoid"
            b = os.path.join(d, "b.json")
            with open(b, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            p = self.tool("compare", a, b, "--module", spec)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("MISMATCH", p.stdout)

    def test_compare_without_module(self):
        """cli/compare-no-module: get_attr-only dumps (make_fx) compare from the record alone"""
        path = fm.fixture_path("aten_post_grad")
        p = self.tool("compare", path, path)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_export_torchvision_spec(self):
        """cli/torchvision: MODULE_SPEC package:function (resnet18, sin fill)"""
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.json")
            p = self.tool("export", "torchvision.models:resnet18", "--input-shape", "1,3,32,32",
                          "--record", "--param-fill", "sin", "-o", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertLess(os.path.getsize(out), 200000)
            p = self.tool("compare", out, out, "--module", "torchvision.models:resnet18")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_bad_spec(self):
        """cli/errors: a bad MODULE_SPEC or a non-dump file is an error, not a traceback"""
        p = self.tool("export", "nonsense", "--input-shape", "2", "-o", "/nonexistent/x.json")
        self.assertEqual(p.returncode, 2)
        self.assertIn("error", p.stderr)
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write('{"format": "other"}')
            f.flush()
            p = self.tool("compare", f.name, f.name)
            self.assertEqual(p.returncode, 2)
            self.assertIn("not an optimus-fx document", p.stderr)


# ----------------------------------------------------------------------------- TAP

# Known gaps of the C engine, reported to their owners: the test still runs and prints
# "not ok N name # TODO known bug: ..." (an unexpected pass fails, so a fix is noticed).
KNOWN_BUGS = {
    # none open: shape inference now equals ShapeProp on every node of every fixture
}


def main():
    if torch is None:
        print("1..0 # SKIP torch not available")
        return 0
    _add_fixture_tests()
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    for cls in (BridgeTests, NamespaceTests, CliTests, FixtureTests):
        suite.addTests(loader.loadTestsFromTestCase(cls))
    only = sys.argv[1:]
    if only:
        suite = unittest.TestSuite(t for t in suite if any(o in t.id() or o in
                                                           (t.shortDescription() or "")
                                                           for o in only))
    print("1..%d" % suite.countTestCases(), flush=True)
    result = TapResult(KNOWN_BUGS)
    try:
        suite.run(result)
    finally:
        if _ns_dir:
            shutil.rmtree(_ns_dir, ignore_errors=True)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
