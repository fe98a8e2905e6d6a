"""TAP output for the torch suite's unittest runs (test_bridge.py, test_e2e.py).

A test's TAP name is the part of its docstring's first line before ':' when that contains a
'/', else its unittest id. `known` maps TAP names to the reason of a known bug: such a test
still runs; a failure prints "not ok N name # TODO known bug: REASON" (meson counts it as an
expected failure, so the bug stays visible without failing the suite) and a pass prints
"ok N name # TODO ..." (an unexpected pass, which fails: remove the entry once fixed).
"""

import unittest


class TapResult(unittest.TestResult):
    def __init__(self, known=None):
        super().__init__()
        self.k = 0
        self.known = dict(known or {})
        self.expected_failures_seen = []

    def name(self, test):
        doc = test.shortDescription() or test.id()
        head = doc.split(":")[0]
        return head if "/" in head else test.id()

    def _line(self, status, test, extra=""):
        self.k += 1
        print("%s %d %s%s" % (status, self.k, self.name(test), extra), flush=True)

    def _todo(self, test):
        reason = self.known.get(self.name(test))
        return None if reason is None else " # TODO known bug: " + reason

    def addSuccess(self, test):
        todo = self._todo(test)
        if todo is not None:
            # an unexpected pass: fail the run so the KNOWN_BUGS entry gets removed
            self.unexpectedSuccesses.append(test)
            self._line("ok", test, todo)
            print("# %s passes now: remove it from KNOWN_BUGS" % self.name(test), flush=True)
            return
        super().addSuccess(test)
        self._line("ok", test)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._line("ok", test, " # SKIP " + reason)

    def _fail(self, test, err, kind):
        todo = self._todo(test)
        self._line("not ok", test, todo or "")
        for line in self._exc_info_to_string(err, test).rstrip().splitlines():
            print("# " + line)
        if todo is not None:
            self.expected_failures_seen.append(test)
        else:
            getattr(self, kind).append((test, self._exc_info_to_string(err, test)))

    def addFailure(self, test, err):
        self._fail(test, err, "failures")

    def addError(self, test, err):
        self._fail(test, err, "errors")
