#!/usr/bin/python3
"""End to end against real PyTorch: export -> optimus optimize -> load -> compare.

Run by meson (suite 'torch', test 'torch-e2e') with /usr/bin/python3; prints TAP itself.
Without torch it prints "1..0 # SKIP torch not available" and exits 0.

For every model of tests/torch/e2e_models.py:
  e2e/NAME/optimize  `optimus optimize model.json -o opt.json --trace t.json --json` (default
                     pipeline, all checks) succeeds, its --json summary agrees with the trace,
                     and the counters the model was built to trigger are > 0
  e2e/NAME/checks    no applied step failed a check (no check_failed record), every applied
                     step ran the structure and shape checks, and none reports a failed check
  e2e/NAME/outputs   load(opt.json, root=module) run on the recorded inputs gives the original
                     module's outputs (f32, atol = rtol = 1e-4)
  e2e/NAME/verify    `optimus verify opt.json` exits 0 (the C interpreter agrees with the record)
  e2e/NAME/replay    `optimus replay model.json t.json -o replayed.json` gives opt.json's graph
  e2e/NAME/unchecked (some models) optimized with --checks structure,shape: the expected
                     counters fire and the outputs still match
  e2e/NAME/counter/C a counter the model should trigger but a known engine bug keeps at 0
plus e2e/replay-provenance (the replayed file also carries opt.json's node provenance).

Known engine bugs are listed in KNOWN_BUGS: those tests still run and print
"not ok N name # TODO known bug: ..." (an unexpected pass fails the run).

Environment: OPTIMUS_SOURCE_ROOT (source tree), OPTIMUS_CLI (the optimus binary).
"""

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

try:
    import torch
except ImportError:
    torch = None

if torch is not None:
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(SOURCE_ROOT, "tools"))
    import e2e_models as em
    import optimus_fx as ox
    from tap import TapResult

ATOL = RTOL = 1e-4
SUMMARY_KEYS = ("counters", "applied", "rejected", "check_failures", "seconds")

# TAP name -> the engine bug that makes it fail (reported to the pass owners).
KNOWN_BUGS = {
    # none open
}


# ----------------------------------------------------------------------------- running

def cli():
    path = os.environ.get("OPTIMUS_CLI")
    if not path or not os.path.exists(path):
        raise unittest.SkipTest("optimus CLI not built (set OPTIMUS_CLI)")
    return path


def run_cli(*args):
    return subprocess.run([cli(), *args], capture_output=True, text=True, timeout=600)


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class Run:
    """One model through the whole flow, in its own temporary directory."""

    def __init__(self, case, workdir):
        self.case = case
        self.dir = os.path.join(workdir, case.name)
        os.makedirs(self.dir)
        self.model = os.path.join(self.dir, "model.json")
        self.opt = os.path.join(self.dir, "opt.json")
        self.trace_path = os.path.join(self.dir, "t.json")
        self.module, self.inputs, self.ref = case.build()
        ox.export(self.module, self.inputs, self.model, record_io=True)
        opts = [a for o in case.options for a in ("--option", o)]
        self.proc = run_cli("optimize", self.model, "-o", self.opt, "--trace", self.trace_path,
                            "--json", *opts)
        self.error = None
        if self.proc.returncode != 0:
            self.error = "optimus optimize %s exited %d:\n%s%s" % (
                self.model, self.proc.returncode, self.proc.stdout, self.proc.stderr)
            return
        self.summary = json.loads(self.proc.stdout)
        self.trace = ox.read_trace(self.trace_path)  # names in place of version 3 indices

    def describe(self):
        return "%s (%s)" % (self.case.name, self.dir)

    def steps(self, kind=None, pass_name=None):
        return [s for s in self.trace["steps"] if (kind is None or s["kind"] == kind) and
                (pass_name is None or s["pass"] == pass_name)]

    def root(self):
        """load()'s root: the module itself; make_fx graphs read only placeholders."""
        if isinstance(self.module, torch.fx.GraphModule):
            return None
        return self.module


_runs = {}
_workdir = None


def get_run(name):
    """The cached run of model `name`; every test of a model fails with the run's error when
    export or optimize failed, and skips when there is no optimus binary."""
    global _workdir
    cli()
    if name not in _runs:
        if _workdir is None:
            _workdir = tempfile.mkdtemp(prefix="optimus-e2e-")
        try:
            _runs[name] = Run(em.CASES_BY_NAME[name], _workdir)
        except Exception as e:  # export itself failed: every test of the model says so
            _runs[name] = e
    r = _runs[name]
    if isinstance(r, Exception):
        raise AssertionError("%s: export failed: %r" % (name, r))
    if r.error:
        raise AssertionError(r.error)
    return r


def why_not(run, counter):
    """The trace's rejections of the pass behind `counter`, for a failure message."""
    lines = []
    for s in run.steps(pass_name=counter):
        if s["kind"] != "applied":
            reason = ox.reason_text(s) or json.dumps(s.get("checks"))[:300]
            lines.append("  %s %s at %s: %s" % (s["kind"], s.get("rule"), s.get("anchor"), reason))
    return "\n".join(lines[:8]) or "  (no record of %s in the trace)" % counter


def strip_provenance(doc):
    doc = json.loads(json.dumps(doc))
    for g in doc.get("graphs", []):
        for n in g.get("nodes", []):
            n.pop("provenance", None)
    return doc


# ----------------------------------------------------------------------------- tests

class E2ETests(unittest.TestCase):
    pass


def _optimize(self, name):
    r = get_run(name)
    for k in SUMMARY_KEYS:
        self.assertIn(k, r.summary, "optimize --json lacks %r" % k)
    self.assertEqual(r.trace["format"], "optimus-trace")
    self.assertEqual(r.summary["counters"], r.trace["counters"], "--json and trace counters differ")
    self.assertEqual(r.summary["applied"], len(r.steps("applied")))
    # the per-pass table: the same in --json and in the trace, adding up to the summary's counts
    table = [(p["pass"], p["phase"], p["runs"], p["applied"], p["rejected"]) for p in r.summary["passes"]]
    self.assertEqual(table, [(p["pass"], p["phase"], p["runs"], p["applied"], p["rejected"])
                             for p in r.trace["passes"]])
    self.assertEqual(sum(p[3] for p in table), r.summary["applied"])
    self.assertEqual(sum(p[4] for p in table), r.summary["rejected"])
    self.assertEqual(r.trace["checks"], "structure,shape,numeric")
    missing = [c for c in r.case.expect if not r.summary["counters"].get(c)]
    self.assertFalse(missing, "%s: expected counters stayed 0: %s; counters %s\n%s" % (
        r.describe(), missing, r.summary["counters"],
        "\n".join("%s:\n%s" % (c, why_not(r, c)) for c in missing)))


def _checks(self, name):
    r = get_run(name)
    failed = r.steps("check_failed")
    self.assertFalse(failed, "%s: %d steps failed a check:\n%s" % (
        r.describe(), len(failed),
        "\n".join("  %s %s at %s: %s" % (s["pass"], s.get("rule"), s.get("anchor"),
                                         json.dumps(s.get("checks"))[:600]) for s in failed)))
    self.assertEqual(r.summary["check_failures"], 0)
    for s in r.steps("applied"):
        checks = s.get("checks") or {}
        for c in ("structure", "shape", "numeric"):
            self.assertIn(c, checks, "step %d (%s) has no %s check" % (s["seq"], s["pass"], c))
            self.assertIn(checks[c]["status"], ("passed", "skipped"),
                          "step %d (%s): %s check %s" % (s["seq"], s["pass"], c, checks[c]))
        for c in ("structure", "shape"):
            self.assertEqual(checks[c]["status"], "passed",
                             "step %d (%s): %s check %s" % (s["seq"], s["pass"], c, checks[c]))


def _outputs(self, name):
    r = get_run(name)
    doc = read_json(r.opt)
    inputs = ox.record_inputs(doc)
    for a, b in zip(inputs, r.inputs):
        self.assertTrue(torch.equal(a, b), "opt.json's recorded inputs changed")
    gm = ox.load(doc, root=r.root())
    got = ox.run(gm, inputs)
    with torch.no_grad():
        want = ox._flatten_outputs(r.ref(*r.inputs), [])
    self.assertEqual(len(got), len(want), "%s: output count" % r.describe())
    for i, (w, g) in enumerate(zip(want, got)):
        self.assertEqual((g.dtype, tuple(g.shape)), (w.dtype, tuple(w.shape)), "output %d" % i)
        err = float((g.double() - w.double()).abs().max()) if w.numel() else 0.0
        self.assertTrue(torch.allclose(g, w, atol=ATOL, rtol=RTOL),
                        "%s: output %d differs from the original module: max abs %.3g" %
                        (r.describe(), i, err))
    # the rewritten graph is what ran, not the original
    original = [(n["name"], n["target"]) for n in read_json(r.model)["graphs"][0]["nodes"]]
    self.assertNotEqual(original, [(n.name, ox.target_name(n.target)) for n in gm.graph.nodes])


def _verify(self, name):
    r = get_run(name)
    p = run_cli("verify", r.opt)
    self.assertEqual(p.returncode, 0, "optimus verify %s:\n%s%s" % (r.opt, p.stdout, p.stderr))


def _replay(self, name):
    r = get_run(name)
    out = os.path.join(r.dir, "replayed.json")
    p = run_cli("replay", r.model, r.trace_path, "-o", out)
    self.assertEqual(p.returncode, 0, "optimus replay:\n%s%s" % (p.stdout, p.stderr))
    a, b = strip_provenance(read_json(out)), strip_provenance(read_json(r.opt))
    self.assertEqual(a["graphs"], b["graphs"], "%s: replayed graph differs from opt.json" % r.describe())
    self.assertEqual(a.get("record"), b.get("record"))


def _unchecked(self, name):
    """The same model optimized with --checks structure,shape: the expected counters fire and
    the outputs still match (the rewrite is right even where the numeric check rejects it)."""
    r = get_run(name)
    out = os.path.join(r.dir, "opt-unchecked.json")
    opts = [a for o in r.case.options for a in ("--option", o)]
    p = run_cli("optimize", r.model, "-o", out, "--checks", "structure,shape", "--json", *opts)
    self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
    counters = json.loads(p.stdout)["counters"]
    missing = [c for c in r.case.expect if not counters.get(c)]
    self.assertFalse(missing, "counters stayed 0: %s (%s)" % (missing, counters))
    got = ox.run(ox.load(out, root=r.root()), r.inputs)
    with torch.no_grad():
        want = ox._flatten_outputs(r.ref(*r.inputs), [])
    for i, (w, g) in enumerate(zip(want, got)):
        self.assertTrue(torch.allclose(g, w, atol=ATOL, rtol=RTOL), "output %d differs" % i)


def _counter(self, name, counter):
    r = get_run(name)
    self.assertGreater(r.summary["counters"].get(counter, 0), 0,
                       "%s: %s stayed 0\n%s" % (r.describe(), counter, why_not(r, counter)))


def _add_tests():
    for case in em.CASES:
        for kind, fn in (("optimize", _optimize), ("checks", _checks), ("outputs", _outputs),
                         ("verify", _verify), ("replay", _replay)):
            def test(self, fn=fn, name=case.name):
                fn(self, name)
            test.__doc__ = "e2e/%s/%s" % (case.name, kind)
            setattr(E2ETests, "test_%s_%s" % (case.name, kind), test)
        if case.unchecked:
            def test(self, name=case.name):
                _unchecked(self, name)
            test.__doc__ = "e2e/%s/unchecked" % case.name
            setattr(E2ETests, "test_%s_unchecked" % case.name, test)
        for counter in case.expect_known:
            def test(self, name=case.name, counter=counter):
                _counter(self, name, counter)
            test.__doc__ = "e2e/%s/counter/%s" % (case.name, counter)
            setattr(E2ETests, "test_%s_counter_%s" % (case.name, counter), test)

    def provenance(self):
        r = get_run("towers_functional")
        out = os.path.join(r.dir, "replayed-prov.json")
        p = run_cli("replay", r.model, r.trace_path, "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        a, b = read_json(out), read_json(r.opt)
        prov = {n["name"]: n.get("provenance") for n in b["graphs"][0]["nodes"]}
        got = {n["name"]: n.get("provenance") for n in a["graphs"][0]["nodes"]}
        diff = [k for k in prov if prov[k] != got.get(k)]
        self.assertFalse(diff, "%d nodes' provenance differs, e.g. %s: opt %s, replayed %s" % (
            len(diff), diff[0], prov[diff[0]], got.get(diff[0])) if diff else "")
    provenance.__doc__ = "e2e/replay-provenance"
    E2ETests.test_zz_replay_provenance = provenance

    def control(self):
        r = get_run("towers_functional")
        doc = read_json(r.opt)
        changed = 0
        for n in doc["graphs"][0]["nodes"]:
            if n.get("target") == "torch.tanh" and not changed:
                n["target"] = "torch.sigmoid"
                changed += 1
        self.assertEqual(changed, 1, "no torch.tanh in the optimized towers")
        got = ox.run(ox.load(doc, root=r.root()), r.inputs)
        with torch.no_grad():
            want = ox._flatten_outputs(r.ref(*r.inputs), [])
        self.assertFalse(all(torch.allclose(g, w, atol=ATOL, rtol=RTOL) for g, w in zip(got, want)),
                         "the comparison does not notice tanh -> sigmoid")
        bad = os.path.join(r.dir, "tampered.json")
        with open(bad, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        p = run_cli("verify", bad)
        self.assertEqual(p.returncode, 1, "optimus verify accepts a tampered graph:\n" + p.stdout)
    control.__doc__ = "e2e/control/tampered: a changed op in opt.json is caught by load+compare and by verify"
    E2ETests.test_zz_control = control


def main():
    if torch is None:
        print("1..0 # SKIP torch not available")
        return 0
    KNOWN_BUGS.update({"e2e/%s/counter/%s" % (c.name, k): v
                       for c in em.CASES for k, v in c.expect_known.items()})
    _add_tests()
    suite = unittest.TestSuite()
    # the order the tests were added in: model by model
    names = [n for n in E2ETests.__dict__ if n.startswith("test_")]
    for n in names:
        suite.addTest(E2ETests(n))
    only = sys.argv[1:]
    if only:
        suite = unittest.TestSuite(t for t in suite if any(
            o in t.id() or o in (t.shortDescription() or "") for o in only))
    print("1..%d" % suite.countTestCases(), flush=True)
    result = TapResult(KNOWN_BUGS)
    try:
        suite.run(result)
    finally:
        if _workdir and result.wasSuccessful() and not os.environ.get("OPTIMUS_KEEP_E2E"):
            shutil.rmtree(_workdir, ignore_errors=True)
        elif _workdir:
            print("# work files kept in %s" % _workdir, flush=True)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
