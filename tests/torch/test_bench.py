#!/usr/bin/python3
"""`optimus_fx.py bench` against real PyTorch (issue 18): it runs, checks outputs, and its
numbers are consistent. Nothing here asserts a speed: performance is measured in
docs/benchmarks.md, never in tests.

Run by meson (suite 'torch', test 'torch-bench') with /usr/bin/python3; prints TAP itself.
Without torch it prints "1..0 # SKIP torch not available"; without the optimus binary
(OPTIMUS_CLI) the tests that need it skip with that reason.

The model is tools/recsys_towers.py:towers_8 (8 towers: split -> linear(32->24) ->
layer_norm -> tanh -> cat) at batch 4, exported with --record and optimized once with the
default pipeline and a trace:
  bench/json          the CLI's --json: both graphs' outputs equal, fields present, positive
                      medians, speedup = original_ms / optimized_ms, runs and threads as asked,
                      quartiles ordered, samples per graph = runs
  bench/interleave    time_interleaved: warm-up rounds, then rounds of every graph once in a
                      rotating order, samples per graph = runs, calls per sample for --min-time
  bench/human         the human report names outputs, threads, clock and speedup; exit 0
  bench/mismatch      one tanh of the optimized JSON turned into sigmoid: MISMATCH on stdout and
                      stderr, exit 1 (human and --json)
  bench/threads       --threads 2 is used while timing and the caller's count is restored
  bench/random-inputs a dump without a record: inputs random from the placeholder meta,
                      parameters from --module; the seed changes the inputs
  bench/gen-recsys    the bundled example (gen-recsys FX text, converted to JSON, no module,
                      no record): get_attr tensors drawn from their meta, outputs equal
  bench/per-pass      --per-pass lists exactly the passes that apply alone (checked against
                      `optimus optimize --passes P --json` for every pass of the pipeline)
  bench/trace         --trace: one row per pass group covering the applied steps 1..N in order;
                      the gains telescope (each row starts where the previous ended, they sum
                      to original - final, shares sum to 1); the full replay is the optimized
                      graph; --trace-by step gives one row per step
  bench/errors        different placeholders, a trace of another graph, a placeholder without
                      shape or record: clear errors, exit 2
Environment: OPTIMUS_SOURCE_ROOT (source tree), OPTIMUS_CLI (the optimus binary).
"""

import contextlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("OPTIMUS_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(SOURCE_ROOT, "tools", "optimus_fx.py")
SPEC = os.path.join(SOURCE_ROOT, "tools", "recsys_towers.py") + ":towers_8"
EXAMPLE = os.path.join(SOURCE_ROOT, "data", "examples", "recsys-towers.txt")
FAST = ["--runs", "5", "--warmup", "1", "--min-time", "0"]

try:
    import torch
except ImportError:
    torch = None

if torch is not None:
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(SOURCE_ROOT, "tools"))
    import optimus_fx as ox
    from tap import TapResult


def cli():
    path = os.environ.get("OPTIMUS_CLI")
    if not path or not os.path.exists(path):
        raise unittest.SkipTest("optimus CLI not built (set OPTIMUS_CLI)")
    return path


def run_optimus(*args):
    p = subprocess.run([cli(), *args], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError("optimus %s exited %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def run_tool(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, OPTIMUS_CLI=cli()))


def run_main(*args):
    """optimus_fx.main(args) in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = ox.main(list(args))
        except SystemExit as e:  # argparse's usage errors
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


class Work:
    """The exported model, its optimized graph and trace, made once per run."""
    dir = None

    @classmethod
    def get(cls):
        cli()
        if cls.dir is None:
            cls.dir = tempfile.mkdtemp(prefix="optimus-bench-test-")
            cls.model = os.path.join(cls.dir, "model.json")
            cls.opt = os.path.join(cls.dir, "opt.json")
            cls.trace = os.path.join(cls.dir, "t.json")
            torch.manual_seed(0)
            m = ox.instantiate(SPEC)
            ox.export(m, [torch.randn(4, 256, generator=torch.Generator().manual_seed(0))],
                      cls.model, record_io=True)
            cls.summary = json.loads(run_optimus("optimize", cls.model, "-o", cls.opt,
                                                 "--trace", cls.trace, "--json"))
            cls.trace_doc = ox.read_trace(cls.trace)
        return cls

    @classmethod
    def path(cls, name):
        return os.path.join(cls.get().dir, name)

    @classmethod
    def cleanup(cls):
        if cls.dir:
            shutil.rmtree(cls.dir, ignore_errors=True)


def tampered(path, out):
    """opt.json with its first torch.tanh turned into torch.sigmoid."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    for n in doc["graphs"][0]["nodes"]:
        if n["op"] == "call_function" and n["target"] == "torch.tanh":
            n["target"] = "torch.sigmoid"
            break
    else:
        raise AssertionError("no torch.tanh in the optimized towers")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return out


class BenchTests(unittest.TestCase):
    def check_stats(self, s, what):
        self.assertTrue(0 < s["min"] <= s["q1"] <= s["median"] <= s["q3"] <= s["max"], (what, s))

    def test_json(self):
        """bench/json: --json fields present and consistent, outputs equal, runs/threads as asked"""
        w = Work.get()
        self.assertGreater(w.summary["applied"], 0, "nothing was optimized: the bench proves nothing")
        p = run_tool("bench", w.model, w.opt, "--module", SPEC, "--json", "--runs", "7",
                     "--warmup", "2", "--threads", "1", "--min-time", "0.001")
        self.assertEqual(p.returncode, 0, p.stderr)
        res = json.loads(p.stdout)
        for k in ("original_ms", "optimized_ms", "speedup", "runs", "threads", "warmup",
                  "number", "clock", "outputs_equal", "original_stats", "optimized_stats",
                  "speedup_rounds", "wall", "cpu", "loadavg", "torch", "samples_ms"):
            self.assertIn(k, res)
        self.assertTrue(res["outputs_equal"])
        self.assertTrue(res["optimized_outputs_equal"])
        self.assertEqual(res["inputs"], "recorded")
        self.assertTrue(res["outputs"] and all(d["ok"] and d["max_rel"] <= d["tol"]
                                               for d in res["outputs"]), res["outputs"])
        self.assertEqual((res["runs"], res["warmup"], res["threads"]), (7, 2, 1))
        self.assertEqual(res["clock"], "wall")
        self.assertGreaterEqual(res["number"], 1)
        for c in ("wall", "cpu"):
            e = res[c]
            self.assertGreater(e["original_ms"], 0)
            self.assertGreater(e["optimized_ms"], 0)
            self.assertAlmostEqual(e["speedup"], e["original_ms"] / e["optimized_ms"], places=12)
            self.check_stats(e["original_stats"], c)
            self.check_stats(e["optimized_stats"], c)
            self.assertEqual(len(res["samples_ms"][c]["original"]), 7)
            self.assertEqual(len(res["samples_ms"][c]["optimized"]), 7)
            self.assertAlmostEqual(e["original_ms"], sorted(res["samples_ms"][c]["original"])[3])
            ratios = sorted(x / y for x, y in zip(res["samples_ms"][c]["original"],
                                                  res["samples_ms"][c]["optimized"]))
            self.assertAlmostEqual(e["speedup_rounds"]["median"], ratios[3])
        self.assertEqual(res["original_ms"], res["wall"]["original_ms"])
        self.assertEqual(res["speedup"], res["wall"]["speedup"])

    def test_interleave(self):
        """bench/interleave: warm-up, then rounds with every graph once, the order rotating"""
        log = []
        fns = [lambda *_, i=i: log.append(i) for i in range(3)]
        samples, number = ox.time_interleaved(fns, [], runs=4, warmup=2, min_time=0)
        self.assertEqual(number, 1)
        self.assertEqual(log, [0, 1, 2, 1, 2, 0,              # warm-up
                               0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2])
        for c in ("wall", "cpu"):
            self.assertEqual([len(s) for s in samples[c]], [4, 4, 4])
            self.assertTrue(all(x >= 0 for s in samples[c] for x in s))
        log.clear()
        samples, number = ox.time_interleaved(fns, [], runs=3, warmup=1, min_time=0.001)
        self.assertGreater(number, 1)  # a call that appends to a list takes far less than 1 ms
        self.assertEqual([log.count(i) for i in range(3)], [1 + 3 * number] * 3)

    def test_human(self):
        """bench/human: the report states outputs, threads, clock and speedup, ends with OK"""
        w = Work.get()
        rc, out, err = run_main("bench", w.model, w.opt, "--module", SPEC, "--clock", "cpu", *FAST)
        self.assertEqual(rc, 0, err)
        for want in ("outputs: equal", "1 thread (torch.set_num_threads)", "process CPU time",
                     "speedup ", "wall clock: original", "load average"):
            self.assertIn(want, out)
        self.assertEqual(out.strip().splitlines()[-1],
                         "OK: every graph timed computes the original's outputs")

    def test_mismatch(self):
        """bench/mismatch: an optimized graph with one op changed is reported, exit 1"""
        w = Work.get()
        bad = tampered(w.opt, Work.path("bad.json"))
        rc, out, err = run_main("bench", w.model, bad, "--module", SPEC, *FAST)
        self.assertEqual(rc, 1)
        self.assertIn("outputs: MISMATCH", out)
        self.assertIn("NOT VALID: the outputs differ", out)
        self.assertTrue(out.strip().splitlines()[-1].startswith("MISMATCH: the optimized graph"))
        self.assertIn("MISMATCH: the optimized graph computes other outputs", err)
        p = run_tool("bench", w.model, bad, "--module", SPEC, "--json", *FAST)
        self.assertEqual(p.returncode, 1)
        res = json.loads(p.stdout)
        self.assertFalse(res["outputs_equal"])
        self.assertFalse(res["optimized_outputs_equal"])
        self.assertTrue(any(not d["ok"] and d["max_rel"] > d["tol"] for d in res["outputs"]))
        self.assertIn("MISMATCH", p.stderr)

    def test_threads(self):
        """bench/threads: --threads N is the count used while timing; the caller's is restored"""
        w = Work.get()
        before = torch.get_num_threads()
        res = ox.bench(w.model, w.opt, module=SPEC, threads=2, runs=3, warmup=1, min_time=0)
        self.assertEqual(res["threads"], 2)
        self.assertEqual(torch.get_num_threads(), before)

    def test_random_inputs(self):
        """bench/random-inputs: no record: random inputs from the placeholder meta, seeded"""
        w = Work.get()
        bare = Work.path("bare.json")
        with open(w.model, encoding="utf-8") as f:
            doc = json.load(f)
        del doc["record"]
        with open(bare, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        opt = Work.path("bare-opt.json")
        run_optimus("optimize", bare, "-o", opt)
        res = ox.bench(bare, opt, module=SPEC, runs=3, warmup=1, min_time=0)
        self.assertTrue(res["outputs_equal"])
        self.assertEqual(res["inputs"], "random (seed 0)")
        self.assertEqual(res["input_shapes"], ["f32 [4, 256]"])
        self.assertEqual(res["recorded_outputs"], [])
        a = ox.random_inputs(ox.read_doc(bare), 0)
        self.assertTrue(torch.equal(a[0], ox.random_inputs(ox.read_doc(bare), 0)[0]))
        self.assertFalse(torch.equal(a[0], ox.random_inputs(ox.read_doc(bare), 1)[0]))

    def test_gen_recsys(self):
        """bench/gen-recsys: the bundled example, no module and no record, runs and agrees"""
        cli()
        ex = Work.path("example.json")
        opt = Work.path("example-opt.json")
        run_optimus("convert", EXAMPLE, "-o", ex)
        summary = json.loads(run_optimus("optimize", ex, "-o", opt, "--json"))
        self.assertGreater(summary["applied"], 0)
        res = ox.bench(ex, opt, runs=3, warmup=1, min_time=0)
        self.assertTrue(res["outputs_equal"], res["outputs"])
        n_get_attr = sum(1 for n in ox.read_doc(ex)["graphs"][0]["nodes"] if n["op"] == "get_attr")
        self.assertGreater(n_get_attr, 0)
        self.assertIn("%d get_attr tensors random from their meta (seed 1)" % n_get_attr,
                      res["params"])
        self.assertEqual(res["inputs"], "random (seed 0)")

    def test_per_pass(self):
        """bench/per-pass: exactly the passes with an applied step alone are timed"""
        w = Work.get()
        res = ox.bench(w.model, w.opt, module=SPEC, runs=3, warmup=1, min_time=0, per_pass=True)
        self.assertTrue(res["outputs_equal"])
        timed = [e["pass"] for e in res["per_pass"]]
        pipeline = [p for k in ("pre_grad_fusion_options", "post_grad_fusion_options")
                    for p in w.trace_doc["config"].get(k) or {}]
        self.assertEqual(sorted(timed + res["per_pass_skipped"]), sorted(pipeline))
        applied = {}
        for p in pipeline:
            s = json.loads(run_optimus("optimize", w.model, "--passes", p, "-o",
                                       Work.path("alone.json"), "--json"))
            applied[p] = s["applied"]
        self.assertEqual(timed, [p for p in pipeline if applied[p] > 0])
        self.assertIn("batch_linear", timed)  # the model is built for it: not a vacuous list
        for e in res["per_pass"]:
            self.assertEqual(e["applied"], applied[e["pass"]])
            self.assertTrue(e["outputs_equal"])
            self.assertEqual(len(e["samples_ms"]), 3)
            self.assertAlmostEqual(e["speedup"], res["original_ms"] / e["ms"], places=12)
        rc, out, _ = run_main("bench", w.model, w.opt, "--module", SPEC, "--per-pass",
                              "--passes", "batch_linear,merge_splits_pass", *FAST)
        self.assertEqual(rc, 0)
        self.assertRegex(out, r"\nbatch_linear +%d " % applied["batch_linear"])
        self.assertIn("no applied step alone (not timed): merge_splits_pass", out)

    def test_trace(self):
        """bench/trace: the attribution covers the applied steps in order and telescopes"""
        w = Work.get()
        applied = [s for s in w.trace_doc["steps"] if s.get("applied_index")]
        self.assertGreater(len(applied), 1)
        res = ox.bench(w.model, w.opt, module=SPEC, runs=3, warmup=1, min_time=0, trace=w.trace)
        at = res["attribution"]
        self.assertTrue(at["outputs_equal"] and res["outputs_equal"])
        self.assertTrue(at["replay_equals_optimized"])
        rows = at["groups"]
        self.assertEqual(rows[0]["steps"][0], 1)
        self.assertEqual(rows[-1]["steps"][1], len(applied))
        for prev, row in zip(rows, rows[1:]):
            self.assertEqual(row["steps"][0], prev["steps"][1] + 1)
            self.assertNotEqual(row["pass"], prev["pass"])
            self.assertEqual(row["ms_before"], prev["ms_after"])
        for row in rows:
            passes = {s["pass"] for s in applied[row["steps"][0] - 1:row["steps"][1]]}
            self.assertEqual(passes, {row["pass"]})
            self.assertEqual(row["count"], row["steps"][1] - row["steps"][0] + 1)
            self.assertAlmostEqual(row["gain_ms"], row["ms_before"] - row["ms_after"], places=12)
        self.assertEqual(rows[0]["ms_before"], res["original_ms"])
        self.assertEqual(at["final_ms"], res["optimized_ms"])
        self.assertEqual(rows[-1]["graph"], "optimized")
        self.assertAlmostEqual(at["sum_of_gains_ms"], res["original_ms"] - res["optimized_ms"],
                               places=9)
        self.assertAlmostEqual(sum(r["gain_ms"] for r in rows), at["gain_ms"], places=9)
        if at["gain_ms"]:
            self.assertAlmostEqual(sum(r["share"] for r in rows), 1.0, places=9)
        by_step = ox.bench(w.model, w.opt, module=SPEC, runs=3, warmup=1, min_time=0,
                           trace=w.trace, trace_by="step")["attribution"]
        self.assertEqual([r["steps"] for r in by_step["groups"]],
                         [[k, k] for k in range(1, len(applied) + 1)])
        self.assertAlmostEqual(by_step["sum_of_gains_ms"], by_step["gain_ms"], places=9)

    def test_errors(self):
        """bench/errors: unusable inputs give a clear error and exit 2"""
        w = Work.get()
        with open(w.opt, encoding="utf-8") as f:
            doc = json.load(f)
        for n in doc["graphs"][0]["nodes"]:
            if n["op"] == "placeholder":
                n["name"] = n["target"] = "y"
        renamed = Work.path("renamed.json")
        with open(renamed, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        rc, _, err = run_main("bench", w.model, renamed, "--module", SPEC, *FAST)
        self.assertEqual(rc, 2)
        self.assertIn("different placeholders (x vs y)", err)

        ex = Work.path("example.json")
        run_optimus("convert", EXAMPLE, "-o", ex)
        rc, _, err = run_main("bench", ex, ex, "--trace", w.trace, *FAST)
        self.assertEqual(rc, 2)
        self.assertIn("replaying", err)

        with open(w.model, encoding="utf-8") as f:
            doc = json.load(f)
        del doc["record"]
        del doc["graphs"][0]["nodes"][0]["meta"]
        noshape = Work.path("noshape.json")
        with open(noshape, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        rc, _, err = run_main("bench", noshape, noshape, "--module", SPEC, *FAST)
        self.assertEqual(rc, 2)
        self.assertIn("placeholder x: no recorded input and no concrete tensor shape", err)

        rc, _, err = run_main("bench", w.model, w.opt, "--runs", "2")
        self.assertEqual(rc, 2)
        self.assertIn("at least 3", err)


def main():
    if torch is None:
        print("1..0 # SKIP torch not available")
        return 0
    suite = unittest.TestLoader().loadTestsFromTestCase(BenchTests)
    only = sys.argv[1:]
    if only:
        suite = unittest.TestSuite(t for t in suite if any(o in t.id() or o in
                                                           (t.shortDescription() or "")
                                                           for o in only))
    print("1..%d" % suite.countTestCases(), flush=True)
    result = TapResult()
    try:
        suite.run(result)
    finally:
        Work.cleanup()
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
