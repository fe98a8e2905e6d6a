"""Runs PyTorch's own Optimus test cases (test/inductor/test_split_cat_fx_passes.py and
test/inductor/test_group_batch_fusion.py, ported in test_split_cat_fx_passes.py and
test_group_batch_fusion.py next to this file) through the bridge and the `optimus` CLI.

One upstream case = one `Case`: the function (and module) the upstream test compiles, its
inputs, the `pre_grad_fusion_options` / `post_grad_fusion_options` the test patches, and the
counters it asserts. `run_case` does what torch.compile does with those options, with the
tools torch 1.13 has:

  pre-grad   the function's torch-level graph as Dynamo would build it (dynamo_like.record)
             -> export (tools/optimus_fx.py, shapes from real values) -> `optimus optimize
             --config` with the test's pre_grad_fusion_options -> load the result back
  post-grad  AOT autograd (functorch's aot_module, min-cut partitioner) of the (pre-grad
             optimized) graph: its functional aten forward and backward graphs, each ->
             export -> `optimus optimize --config` with the test's post_grad_fusion_options
             -> load, as Inductor's post_grad_passes runs on both

and then checks what the upstream test checks: every counter it asserts has its value (a
missing counter is 0, as in upstream's defaultdict), also after backward() where the test
reads them again, the compiled result equals eager (torch.testing.assert_close with the
test's tolerances) and, where the test compares gradients, so do the gradients of the
parameters and inputs after sum().backward().

A case that cannot run on torch 1.13 carries `skip=REASON` and is reported as a TAP skip
with that reason, never as a pass.

Environment: OPTIMUS_CLI (the optimus binary), OPTIMUS_SOURCE_ROOT. OPTIMUS_KEEP_UPSTREAM=1
keeps the work files.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("OPTIMUS_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))

try:
    import torch
except ImportError:
    torch = None

if torch is not None:
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(SOURCE_ROOT, "tools"))
    import dynamo_like
    import optimus_fx as ox
    from tap import TapResult
    from functorch.compile import aot_module, make_boxed_func, min_cut_rematerialization_partition


class Case:
    """One upstream test case.

    test, name   the upstream test method and the case inside it (the function name of a
                 parametrized loop, or has_bias=True ...); the TAP name is
                 upstream/FILE/TEST/NAME
    build        () -> (fn, args, module): fn(*args) is what the upstream test compiles;
                 module (or None) owns the parameters fn reads
    pre, post    the test's pre_grad_fusion_options / post_grad_fusion_options; a phase runs
                 when its options are not None (an empty dict runs it with nothing enabled)
    expect       {counter: value} the test asserts; callables value -> bool for assertGreater
    rtol, atol   assert_close tolerances (None: torch's defaults, as upstream's assert_close)
    outputs      'close' (compare with eager) or a callable (got, flat_inputs) raising
                 AssertionError, for outputs that are random (training-mode dropout)
    graph_check  (GraphModule after the last phase) -> None, raising AssertionError: the
                 structural checks upstream makes on the rewritten graph
    skip         reason the case cannot run on torch 1.13 (reported as a TAP skip)
    tracer       'dynamo' (dynamo_like.record, the default) or 'symbolic_trace' (what the
                 upstream test itself calls)
    edit_doc     (exported document) -> None: changes the pre-grad dump before optimizing
                 (symbolic_dims: the sizes Dynamo's dynamic=True gives the inputs)
    grads        assert_close tolerances: after sum().backward() the gradients of the module's
                 parameters and of the float inputs must equal eager's (upstream's
                 compare_gradients); None: no backward
    after_backward  counters upstream asserts after backward(): forward and backward graphs
    known        the analysed reason the case differs from upstream here; it still runs and
                 reports "not ok ... # TODO known bug: REASON" (an unexpected pass fails)
    """

    def __init__(self, test, name, build=None, pre=None, post=None, expect=None, rtol=None,
                 atol=None, outputs="close", graph_check=None, skip=None, note=None,
                 tracer="dynamo", edit_doc=None, grads=None, after_backward=None, inference=False,
                 known=None):
        self.test, self.name, self.build = test, name, build
        self.pre, self.post = pre, post
        self.expect = dict(expect or {})
        self.rtol, self.atol = rtol, atol
        self.outputs = outputs
        self.graph_check = graph_check
        self.skip = skip
        self.note = note
        self.tracer = tracer
        self.edit_doc = edit_doc
        self.grads = grads  # assert_close kwargs for the gradients after sum().backward()
        self.after_backward = dict(after_backward or {})
        self.inference = inference  # compiled and run under torch.no_grad (AOT's inference graph)
        self.known = known  # why this case differs from upstream: TAP "not ok # TODO", never a pass


# ----------------------------------------------------------------------------- running

def cli():
    path = os.environ.get("OPTIMUS_CLI")
    if not path or not os.path.exists(path):
        raise unittest.SkipTest("optimus CLI not built (set OPTIMUS_CLI)")
    return path


class Workdir:
    path = None

    @classmethod
    def get(cls):
        if cls.path is None:
            cls.path = tempfile.mkdtemp(prefix="optimus-upstream-")
        return cls.path


def symbolic_dims(doc):
    """torch.compile(dynamic=True): the placeholders' sizes become symbols s0, s1, .."""
    k = 0
    for n in doc["graphs"][0]["nodes"]:
        t = (n.get("meta") or {}).get("tensor")
        if n["op"] == "placeholder" and t:
            t["shape"] = ["s%d" % (k + i) for i in range(len(t["shape"]))]
            t.pop("stride", None)
            k += len(t["shape"])


def _optimize(tag, gm, inputs, section, options, edit=None):
    """Exports gm (edit changes the document first), runs `optimus optimize --config` with
    {section: options}, returns (loaded GraphModule, counters, work dir)."""
    d = os.path.join(Workdir.get(), tag)
    os.makedirs(d, exist_ok=True)
    model, opt = os.path.join(d, section + "-in.json"), os.path.join(d, section + "-out.json")
    cfg, trace = os.path.join(d, section + ".config.json"), os.path.join(d, section + ".trace.json")
    doc = ox.export_doc(gm, inputs, record_io=True)
    if edit:
        edit(doc)
    ox.write_atomic(model, ox.dumps(doc))
    with open(cfg, "w", encoding="utf-8") as f:
        json.dump({section: options}, f)
    p = subprocess.run([cli(), "optimize", model, "-o", opt, "--config", cfg, "--trace", trace,
                        "--json"], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError("optimus optimize %s --config %s exited %d:\n%s%s" % (
            model, cfg, p.returncode, p.stdout, p.stderr))
    summary = json.loads(p.stdout)
    if summary["check_failures"]:
        steps = [s for s in ox.read_trace(trace)["steps"] if s["kind"] == "check_failed"]
        raise AssertionError("%d steps failed a check (%s):\n%s" % (
            summary["check_failures"], trace, "\n".join(
                "  %s %s at %s: %s" % (s["pass"], s.get("rule"), s.get("anchor"),
                                       json.dumps(s.get("checks"))[:400]) for s in steps)))
    return ox.load(opt, root=gm), summary["counters"], d


def _why(dirs, counter):
    """The trace's rejections for a counter's pass, to explain a mismatch."""
    lines = []
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if not name.endswith(".trace.json"):
                continue
            for s in ox.read_trace(os.path.join(d, name))["steps"]:
                if s["pass"] == counter and s["kind"] != "applied":
                    lines.append("    %s %s at %s: %s" % (s["kind"], s.get("rule"), s.get("anchor"),
                                                          ox.reason_text(s)))
    return "\n".join(lines[:6])


def _flat(v, out):
    if isinstance(v, torch.Tensor):
        out.append(v)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _flat(x, out)
    else:
        raise TypeError("output of type %s" % type(v).__name__)
    return out


def _clone_args(args):
    if isinstance(args, torch.Tensor):
        return args.detach().clone()
    if isinstance(args, (list, tuple)):
        return type(args)(_clone_args(a) for a in args)
    return args


class _Wrap(torch.nn.Module if torch is not None else object):
    """fn over flat tensors, re-nesting them like args; holds the module so that AOT lifts its
    parameters (their gradients are compared)."""

    def __init__(self, fn, args, module):
        super().__init__()
        self.fn, self.args = fn, args
        if module is not None:
            self.module = module

    def forward(self, *flat):
        it = iter(flat)

        def rebuild(a):
            if isinstance(a, torch.Tensor):
                return next(it)
            return type(a)(rebuild(x) for x in a)
        return self.fn(*rebuild(self.args))


def _grad_inputs(flat):
    out = []
    for t in flat:
        t = t.detach().clone()
        if t.is_floating_point():
            t.requires_grad_(True)
        out.append(t)
    return out


def _grads(module, inputs):
    g = {}
    if module is not None:
        for name, p in module.named_parameters():
            g[name] = None if p.grad is None else p.grad.detach().clone()
            p.grad = None
    for i, t in enumerate(inputs):
        if t.requires_grad:
            g["input %d" % i] = None if t.grad is None else t.grad.detach().clone()
    return g


def run_case(case, tag):
    """Runs one case like torch.compile with the case's options; returns a dict: counters
    (forward graphs), counters_after_backward (forward and backward graphs), got / want
    (outputs), grads_got / grads_want (after sum().backward(), when case.grads), gm (the
    pre-grad optimized graph or None), dirs (work dirs), flat (inputs). Raises AssertionError
    with what went wrong."""
    if case.post is not None:
        try:
            import networkx  # noqa: F401  (functorch's min-cut partitioner needs it)
        except ImportError:
            raise unittest.SkipTest("python3-networkx is missing: AOT autograd's min-cut partitioner "
                                    "(the one Inductor uses) needs it; tools/dev.sh installs it") from None
    fn, args, module = case.build()
    flat0 = dynamo_like._flat_inputs(_clone_args(args), [])
    res = {"counters": {}, "counters_after_backward": {}, "dirs": [], "gm": None, "flat": flat0}
    grads = case.grads is not None
    if module is not None:
        module.zero_grad(set_to_none=True)
    # eager
    torch.manual_seed(0)
    inputs = _grad_inputs(flat0) if grads else _clone_args(flat0)
    with torch.set_grad_enabled(grads):
        out = _Wrap(fn, args, None)(*inputs)
    res["want"] = [t.detach() for t in _flat(out, [])]
    if grads:
        sum(t.sum() for t in _flat(out, []) if t.is_floating_point()).backward()
        res["grads_want"] = _grads(module, inputs)
    target = _Wrap(fn, args, module)
    fw, bw = {}, {}

    def add(bucket, got):
        for k, v in got.items():
            bucket[k] = bucket.get(k, 0) + v

    if case.pre is not None:
        if case.tracer == "symbolic_trace":
            gm = torch.fx.symbolic_trace(fn)
        else:
            gm, _, _ = dynamo_like.record(fn, _clone_args(args), module)
        # the recorded graph reproduces eager before anything is optimized
        torch.manual_seed(0)
        again = ox.run(gm, _clone_args(flat0))
        if callable(case.outputs):
            case.outputs(again, flat0)
        else:
            _assert_outputs(case, again, res["want"], "the recorded torch-level graph")
        gm, got, d = _optimize(tag, gm, _clone_args(flat0), "pre_grad_fusion_options", case.pre, case.edit_doc)
        res["dirs"].append(d)
        add(fw, got)
        res["gm"] = target = gm
    if case.post is not None:
        # AOT autograd (functorch): functional forward and backward aten graphs, each through
        # the post-grad passes, as Inductor's post_grad_passes sees them
        def compiler(kind, bucket):
            def c(agm, example_inputs):
                loaded, got, d = _optimize("%s-%s" % (tag, kind), agm, [e.detach() for e in example_inputs],
                                           "post_grad_fusion_options", case.post)
                res["dirs"].append(d)
                add(bucket, got)
                return make_boxed_func(loaded.forward)
            return c
        target = aot_module(target, fw_compiler=compiler("fw", fw), bw_compiler=compiler("bw", bw),
                            partition_fn=min_cut_rematerialization_partition)
    torch.manual_seed(0)
    inputs = _grad_inputs(flat0) if grads else _clone_args(flat0)
    with torch.set_grad_enabled(grads or (case.post is not None and not case.inference)):
        out = target(*inputs)
    res["got"] = [t.detach() for t in _flat(out, [])]
    res["counters"] = dict(fw)
    if grads:
        sum(t.sum() for t in _flat(out, []) if t.is_floating_point()).backward()
        res["grads_got"] = _grads(module, inputs)
    after = dict(fw)
    add(after, bw)
    res["counters_after_backward"] = after
    return res


def _assert_outputs(case, got, want, what):
    if len(got) != len(want):
        raise AssertionError("%s: %d outputs, eager has %d" % (what, len(got), len(want)))
    for i, (g, w) in enumerate(zip(got, want)):
        kw = {}
        if case.rtol is not None:
            kw = {"rtol": case.rtol, "atol": case.atol}
        try:
            torch.testing.assert_close(g, w, equal_nan=True, **kw)
        except AssertionError as e:
            raise AssertionError("%s: output %d differs from eager: %s" % (what, i, e)) from None


class UpstreamTests(unittest.TestCase):
    pass


def _check_counters(case_expect, counters, dirs, when):
    bad = []
    for name, value in case_expect.items():
        have = counters.get(name, 0)
        ok = value(have) if callable(value) else have == value
        if not ok:
            bad.append("%s: %s %s, upstream asserts %s\n%s" % (
                name, have, when, getattr(value, "text", value), _why(dirs, name)))
    return bad


def _test_body(case, tag):
    def test(self):
        if case.skip:
            self.skipTest(case.skip)
        r = run_case(case, tag)
        bad = _check_counters(case.expect, r["counters"], r["dirs"], "")
        bad += _check_counters(case.after_backward, r["counters_after_backward"], r["dirs"], "after backward()")
        self.assertFalse(bad, "counters differ from upstream's (all counters: %s):\n%s" % (
            r["counters"], "\n".join(bad)))
        if callable(case.outputs):
            case.outputs(r["got"], r["flat"])
        else:
            _assert_outputs(case, r["got"], r["want"], "the optimized graph")
        if case.grads is not None:
            want, got = r["grads_want"], r["grads_got"]
            self.assertEqual(sorted(want), sorted(got), "gradients of different tensors")
            for k in want:
                if want[k] is None or got[k] is None:
                    self.assertEqual(want[k] is None, got[k] is None, "gradient of %s: one side has none" % k)
                    continue
                try:
                    torch.testing.assert_close(got[k], want[k], equal_nan=True, **case.grads)
                except AssertionError as e:
                    raise AssertionError("gradient of %s differs from eager: %s" % (k, e)) from None
        if case.graph_check:
            case.graph_check(r["gm"])
    return test


def greater_than(n):
    f = lambda v: v > n  # noqa: E731
    f.text = "> %d" % n
    return f


def main(file_name, cases, argv=None):
    """Prints TAP for cases (named upstream/FILE_NAME/TEST/NAME); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if torch is None:
        print("1..0 # SKIP torch not available")
        return 0
    names = set()
    known = {}
    suite = unittest.TestSuite()
    for i, case in enumerate(cases):
        tap = "upstream/%s/%s/%s" % (file_name, case.test, case.name)
        if tap in names:
            raise ValueError("duplicate case %s" % tap)
        names.add(tap)
        if case.known:
            known[tap] = case.known
        attr = "test_%03d" % i
        body = _test_body(case, "%s-%s-%s" % (file_name, case.test, case.name))
        body.__doc__ = tap + ": " + (case.note or case.test)
        setattr(UpstreamTests, attr, body)
        if not argv or any(a in tap for a in argv):
            suite.addTest(UpstreamTests(attr))
    print("1..%d" % suite.countTestCases(), flush=True)
    result = TapResult(known)
    try:
        suite.run(result)
    finally:
        keep = os.environ.get("OPTIMUS_KEEP_UPSTREAM") or not result.wasSuccessful()
        if Workdir.path and not keep:
            shutil.rmtree(Workdir.path, ignore_errors=True)
        elif Workdir.path:
            print("# work files kept in %s" % Workdir.path, flush=True)
    ran = result.testsRun - len(result.skipped)
    differ = len(result.expected_failures_seen)
    failed = len(result.failures) + len(result.errors)
    print("# %s: %d cases, %d ran: %d as upstream (counters and outputs), %d known differences, "
          "%d failed; %d not portable (skipped)" % (
              file_name, result.testsRun, ran, ran - failed - differ - len(result.unexpectedSuccesses),
              differ, failed, len(result.skipped)), flush=True)
    return 0 if result.wasSuccessful() else 1
