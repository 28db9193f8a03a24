"""Runs PyTorch's distributed suite (test_distributed_spawn.py's
TestDistBackendWithSpawn) and writes one line per test to RESULTS:
"name outcome[ reason]", outcome ok, FAIL, ERROR or skipped. The ranks'
own output (logs, tracebacks) goes to the log as usual; the results do
not get mixed into it. Used by run_dist_tests.sh, which sets the
environment PyTorch's run_test.py would.

    python3 dist_suite.py TEST_DIR RESULTS [-k PATTERN]...
"""

import os
import sys
import traceback
import unittest


def main():
    test_dir, results = sys.argv[1], sys.argv[2]
    patterns = []
    rest = sys.argv[3:]
    while rest:
        if rest[0] == "-k" and len(rest) > 1:
            patterns.append(f"*{rest[1]}*")
            rest = rest[2:]
        else:
            rest = rest[1:]
    sys.argv = [sys.argv[0]]  # PyTorch's common_utils parses argv
    sys.path.insert(0, test_dir)
    import test_distributed_spawn as spawn

    loader = unittest.TestLoader()
    if patterns:
        loader.testNamePatterns = patterns
    suite = loader.loadTestsFromTestCase(spawn.TestDistBackendWithSpawn)
    out = open(results, "w", buffering=1)

    class Result(unittest.TextTestResult):
        def addSuccess(self, test):
            super().addSuccess(test)
            out.write(f"{test._testMethodName} ok\n")

        def addFailure(self, test, err):
            super().addFailure(test, err)
            out.write(f"{test._testMethodName} FAIL\n")

        def addError(self, test, err):
            super().addError(test, err)
            out.write(f"{test._testMethodName} ERROR\n")

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            reason = " ".join(str(reason).split())
            out.write(f"{test._testMethodName} skipped {reason}\n")

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            out.write(f"{test._testMethodName} ok (expected failure)\n")

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            out.write(f"{test._testMethodName} FAIL (unexpected success)\n")

    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=2,
                                     resultclass=Result)
    r = runner.run(suite)
    return 0 if r.wasSuccessful() else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:
        traceback.print_exc()
        sys.exit(2)
