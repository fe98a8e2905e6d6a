#!/usr/bin/python3
"""Real torchvision classifiers through the whole bridge, as a user runs it (issue 15).

Run by meson (suite 'torch', test 'torch-models') with /usr/bin/python3; prints TAP itself.
Without torch or torchvision it prints "1..0 # SKIP ..." and exits 0.

For every model of tests/torch/real_models.py (MODULE_SPEC tests/torch/real_models.py:NAME):
  models/NAME/export    `optimus_fx.py export SPEC --input-shape ... --record --param-fill sin
                        -o model.json` exits 0 (a model torch 1.13 FX cannot trace is listed
                        in real_models.UNTRACEABLE and skipped with the reason)
  models/NAME/optimize  `optimus optimize model.json -o opt.json --trace t.json --checks all
                        --json` exits 0 and its summary agrees with the trace; the applied
                        steps per pass are printed
  models/NAME/checks    no step failed a check, every applied step passed its structure, shape
                        and numeric checks; a check that was skipped or not run is reported
                        as a SKIP with its reason, as is a run with no applied step (nothing
                        was checked) - never as a pass
  models/NAME/compare   `optimus_fx.py compare model.json opt.json --module SPEC` exits 0:
                        both dumps loaded back on the module and run on the recorded inputs
                        agree within tolerance, and the original reproduces the outputs the
                        module recorded at export
plus models/control/tampered (an opt.json whose last ReLU became a tanh must fail compare).
The last lines are the per-model table (docs/benchmarks.md, "Real models through the bridge").

Environment: OPTIMUS_SOURCE_ROOT (source tree), OPTIMUS_CLI (the optimus binary, default
build/app/optimus), OPTIMUS_KEEP_MODELS=1 keeps the work files (the path is printed).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("OPTIMUS_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
os.environ["OPTIMUS_SOURCE_ROOT"] = SOURCE_ROOT
PYTHON = sys.executable
TOOL = os.path.join(SOURCE_ROOT, "tools", "optimus_fx.py")
MODELS_FILE = os.path.join(HERE, "real_models.py")

MISSING = None
try:
    import torch  # noqa: F401
except ImportError:
    MISSING = "torch not available"
if MISSING is None:
    try:
        import torchvision  # noqa: F401
    except ImportError:
        MISSING = "torchvision not available"

if MISSING is None:
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(SOURCE_ROOT, "tools"))
    import optimus_fx as ox
    import real_models as rm
    from tap import TapResult

TIMEOUT = 600
_DIFF = re.compile(r"^optimized vs original output (\d+): .* max abs (\S+) max rel (\S+) (ok|MISMATCH)$")

# TAP name -> the engine bug that makes it fail (reported to the pass owners).
KNOWN_BUGS = {
    # none open
}


def cli():
    path = os.environ.get("OPTIMUS_CLI") or os.path.join(SOURCE_ROOT, "build", "app", "optimus")
    if not os.path.exists(path):
        raise unittest.SkipTest("optimus CLI not built (set OPTIMUS_CLI)")
    return path


def spec(name):
    return MODELS_FILE + ":" + name


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT, cwd=SOURCE_ROOT)


def tool(*args):
    return run([PYTHON, TOOL, *args])


def tail(p, n=30):
    return "\n".join((p.stdout + p.stderr).rstrip().splitlines()[-n:])


class Run:
    """One model through export, optimize and compare, in its own directory; each stage is
    run once, when a test first needs it, and timed."""

    def __init__(self, model, workdir):
        self.m = model
        self.dir = os.path.join(workdir, model.name)
        os.makedirs(self.dir)
        self.model = os.path.join(self.dir, "model.json")
        self.opt = os.path.join(self.dir, "opt.json")
        self.trace_path = os.path.join(self.dir, "t.json")
        self.seconds = {}
        self.export_proc = self.optimize_proc = self.compare_proc = None
        self.summary = self.trace = None
        self.diffs = []
        self.verified = None  # what `optimus verify` said, for the table

    def _timed(self, stage, args):
        t = time.monotonic()
        p = run(args)
        self.seconds[stage] = time.monotonic() - t
        return p

    def export(self):
        if self.export_proc is None:
            self.export_proc = self._timed("export", [
                PYTHON, TOOL, "export", spec(self.m.name),
                "--input-shape", ",".join(str(d) for d in self.m.shape),
                "--record", "--param-fill", "sin", "-o", self.model])
        if self.export_proc.returncode != 0:
            raise AssertionError("%s: export exited %d:\n%s" % (
                self.m.name, self.export_proc.returncode, tail(self.export_proc)))

    def optimize(self):
        self.export()
        if self.optimize_proc is None:
            self.optimize_proc = self._timed("optimize", [
                cli(), "optimize", self.model, "-o", self.opt, "--trace", self.trace_path,
                "--checks", "all", "--json"])
            if self.optimize_proc.returncode == 0:
                self.summary = json.loads(self.optimize_proc.stdout)
                self.trace = ox.read_trace(self.trace_path)  # names and rules in place of indices
        if self.optimize_proc.returncode != 0:
            raise AssertionError("%s: optimus optimize exited %d:\n%s" % (
                self.m.name, self.optimize_proc.returncode, tail(self.optimize_proc)))

    def compare(self):
        self.optimize()
        if self.compare_proc is None:
            self.compare_proc = self._timed("compare", [
                PYTHON, TOOL, "compare", self.model, self.opt, "--module", spec(self.m.name)])
            for line in self.compare_proc.stdout.splitlines():
                d = _DIFF.match(line)
                if d:
                    self.diffs.append((float(d.group(2)), float(d.group(3)), d.group(4) == "ok"))
        return self.compare_proc

    def steps(self, kind):
        return [s for s in self.trace["steps"] if s["kind"] == kind]

    def applied_per_pass(self):
        out = {}
        for s in self.steps("applied"):
            out[s["pass"]] = out.get(s["pass"], 0) + 1
        return out

    def unchecked(self):
        """Applied steps whose structure, shape or numeric check did not pass: [(seq, pass,
        check, status, detail)]."""
        out = []
        for s in self.steps("applied"):
            checks = s.get("checks") or {}
            for c in ("structure", "shape", "numeric"):
                st = checks.get(c) or {"status": "missing", "detail": "no %s check recorded" % c}
                if st.get("status") != "passed":
                    out.append((s["seq"], s["pass"], c, st.get("status"), st.get("detail", "")))
        return out


_runs = {}
_workdir = None


def get_run(name):
    global _workdir
    reason = rm.UNTRACEABLE.get(name)
    if reason:
        raise unittest.SkipTest("torch 1.13 FX cannot trace it: " + reason)
    if name not in _runs:
        if _workdir is None:
            _workdir = tempfile.mkdtemp(prefix="optimus-models-")
        _runs[name] = Run(next(m for m in rm.MODELS if m.name == name), _workdir)
    return _runs[name]


class ModelTests(unittest.TestCase):
    pass


def _export(self, name):
    r = get_run(name)
    r.export()
    with open(r.model, encoding="utf-8") as f:
        doc = json.load(f)
    self.assertTrue(doc.get("record"), "model.json has no record")
    self.assertTrue(doc["record"]["params"], "model.json records no parameters")
    mask = os.umask(0)
    os.umask(mask)
    self.assertEqual(os.stat(r.model).st_mode & 0o777, 0o666 & ~mask,
                     "model.json has mkstemp's permissions, not 0666 less the umask")


def _optimize(self, name):
    r = get_run(name)
    r.optimize()
    s, t = r.summary, r.trace
    self.assertIn(t["checks"], ("all", "structure,shape,numeric"), "--checks all did not ask for all")
    self.assertEqual(s["applied"], len(r.steps("applied")), "--json and trace disagree (applied)")
    self.assertEqual(s["check_failures"], len(r.steps("check_failed")),
                     "--json and trace disagree (check failures)")
    self.assertEqual(s["counters"], t["counters"], "--json and trace counters differ")
    per_pass = r.applied_per_pass()
    print("# %s: %d -> %d nodes, applied per pass: %s; %d rejected" % (
        name, s["nodes_before"], s["nodes_after"],
        ", ".join("%s %d" % kv for kv in sorted(per_pass.items())) or "none", s["rejected"]),
        flush=True)
    # why the rest did not fire: rejections per pass, with their most frequent reason
    why = {}
    for st in r.steps("rejected"):
        code = (st.get("reason") or {}).get("code", "?")
        why.setdefault(st["pass"], {}).setdefault(code, 0)
        why[st["pass"]][code] += 1
    if why:
        print("#   rejected: %s" % "; ".join(
            "%s %d (mostly %s)" % (p, sum(c.values()), max(c, key=c.get))
            for p, c in sorted(why.items())), flush=True)


def _checks(self, name):
    r = get_run(name)
    r.optimize()
    failed = r.steps("check_failed")
    self.assertFalse(failed, "%s: %d steps failed a check:\n%s" % (
        name, len(failed), "\n".join("  #%d %s %s at %s: %s" % (
            s["seq"], s["pass"], s.get("rule"), s.get("anchor"),
            json.dumps(s.get("checks"))[:600]) for s in failed[:8])))
    bad = r.unchecked()
    hard = [b for b in bad if b[3] == "failed"]
    self.assertFalse(hard, "%s: applied steps with a failed check:\n%s" % (
        name, "\n".join("  #%d %s %s: %s" % (b[0], b[1], b[2], b[4]) for b in hard[:8])))
    if bad:
        self.skipTest("%d checks of applied steps did not run, e.g. step #%d (%s) %s %s: %s" % (
            len(bad), bad[0][0], bad[0][1], bad[0][2], bad[0][3], bad[0][4]))
    if not r.steps("applied"):
        self.skipTest("no applied step, nothing was checked (%d rejected attempts)" %
                      r.summary["rejected"])


def _compare(self, name):
    r = get_run(name)
    p = r.compare()
    self.assertEqual(p.returncode, 0, "%s: optimus_fx.py compare exited %d:\n%s" % (
        name, p.returncode, tail(p)))
    self.assertEqual(p.stdout.strip().splitlines()[-1], "OK", tail(p))
    self.assertTrue(r.diffs and all(ok for _, _, ok in r.diffs), tail(p))


def _verify(self, name):
    """`optimus verify` (the engine's own interpreter against what PyTorch recorded) on the
    export and on the optimized graph; an op without a kernel is a SKIP naming it."""
    r = get_run(name)
    r.optimize()
    for label, path in (("model.json", r.model), ("opt.json", r.opt)):
        t = time.monotonic()
        p = run([cli(), "verify", path, "--json"])
        r.seconds["verify"] = r.seconds.get("verify", 0.0) + time.monotonic() - t
        try:
            numeric = json.loads(p.stdout)["numeric"]
        except (ValueError, KeyError):
            self.fail("%s: optimus verify %s exited %d without a report:\n%s" % (
                name, label, p.returncode, tail(p)))
        if numeric["status"] == "error" and "no kernel for" in numeric["reason"]:
            r.verified = "not run: " + numeric["reason"].split(": ", 1)[-1]
            self.skipTest("%s: the interpreter cannot run it: %s" % (label, numeric["reason"]))
        r.verified = "**failed**"
        self.assertEqual(numeric["status"], "passed", "%s: optimus verify %s:\n%s" % (
            name, label, p.stdout[:2000]))
        self.assertEqual(p.returncode, 0, tail(p))
        weak = [o for o in numeric["outputs"] if o.get("note", "").startswith("weak:")]
        r.verified = "ok (%.3g)" % max(o["max_abs"] for o in numeric["outputs"])
        if weak:
            r.verified = "weak (all zeros or NaN)"
            self.skipTest("%s: %d of %d outputs are all zeros or all NaN (a weak check)" % (
                label, len(weak), len(numeric["outputs"])))


def _add_tests():
    for m in rm.MODELS:
        for kind, fn in (("export", _export), ("optimize", _optimize), ("checks", _checks),
                         ("compare", _compare), ("verify", _verify)):
            def test(self, fn=fn, name=m.name):
                fn(self, name)
            test.__doc__ = "models/%s/%s" % (m.name, kind)
            setattr(ModelTests, "test_%s_%s" % (m.name, kind), test)

    def control(self):
        r = get_run("squeezenet1_1")
        r.optimize()
        with open(r.opt, encoding="utf-8") as f:
            doc = json.load(f)
        relu = [n for n in doc["graphs"][0]["nodes"] if n.get("module_type") == "torch.nn.ReLU"][-1]
        relu.update(op="call_function", target="torch.tanh", kwargs={})  # same shape, other values
        del relu["module_type"]
        bad = os.path.join(r.dir, "tampered.json")
        with open(bad, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        p = tool("compare", r.model, bad, "--module", spec(r.m.name))
        self.assertEqual(p.returncode, 1, "compare accepts a tampered graph:\n" + tail(p))
        self.assertIn("MISMATCH", p.stdout)
    control.__doc__ = ("models/control/tampered: squeezenet's opt.json with its last ReLU "
                       "turned into a tanh fails the comparison")
    ModelTests.test_zz_control = control


def table_lines():
    """The per-model table, as in docs/benchmarks.md."""
    out = ["| model | family | input | nodes before -> after | applied steps per pass | "
           "checks failed | outputs equal (max abs) | `optimus verify` (max abs) | "
           "seconds (export + optimize + compare + verify) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for m in rm.MODELS:
        name = m.name + (" (%s)" % m.note if m.note else "")
        shape = "x".join(str(d) for d in m.shape)
        if m.name in rm.UNTRACEABLE:
            out.append("| %s | %s | %s | skipped: %s | | | | | |" % (
                name, m.family, shape, rm.UNTRACEABLE[m.name]))
            continue
        r = _runs.get(m.name)
        if r is None:
            continue  # filtered out
        if r.summary is None:
            out.append("| %s | %s | %s | **failed**: see the TAP output | | | | | |" % (
                name, m.family, shape))
            continue
        per_pass = ", ".join("%s %d" % kv for kv in sorted(r.applied_per_pass().items())) or "0"
        skipped = len(r.unchecked())
        failed = "%d" % r.summary["check_failures"]
        if skipped:
            failed += " (%d not run)" % skipped
        if r.compare_proc is None:
            equal = "not compared"
        elif r.compare_proc.returncode == 0 and r.diffs:
            equal = "yes (%.3g)" % max(a for a, _, _ in r.diffs)
        else:
            equal = "**no** (%s)" % (", ".join("%.3g" % a for a, _, _ in r.diffs) or "error")
        secs = sum(r.seconds.values())
        out.append("| %s | %s | %s | %d -> %d | %s | %s | %s | %s | %.1f (%s) |" % (
            name, m.family, shape, r.summary["nodes_before"], r.summary["nodes_after"],
            per_pass, failed, equal, r.verified or "not run", secs,
            " + ".join("%.1f" % r.seconds.get(k, 0.0)
                       for k in ("export", "optimize", "compare", "verify"))))
    return out


def main():
    if MISSING is not None:
        print("1..0 # SKIP " + MISSING)
        return 0
    _add_tests()
    suite = unittest.TestSuite()
    for n in [n for n in ModelTests.__dict__ if n.startswith("test_")]:
        suite.addTest(ModelTests(n))
    only = sys.argv[1:]
    if only:
        suite = unittest.TestSuite(t for t in suite if any(
            o in t.id() or o in (t.shortDescription() or "") for o in only))
    print("1..%d" % suite.countTestCases(), flush=True)
    result = TapResult(KNOWN_BUGS)
    t0 = time.monotonic()
    try:
        suite.run(result)
    finally:
        for line in table_lines():
            print("# " + line)
        print("# total %.1f s" % (time.monotonic() - t0), flush=True)
        if _workdir and result.wasSuccessful() and not os.environ.get("OPTIMUS_KEEP_MODELS"):
            shutil.rmtree(_workdir, ignore_errors=True)
        elif _workdir:
            print("# work files kept in %s" % _workdir, flush=True)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
