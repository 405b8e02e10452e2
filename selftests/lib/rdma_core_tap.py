#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""rdma-core's own test suite (pyverbs unittests) as TAP lines.

Usage: rdma_core_tap.py TESTS_DIR DEV MIN_RUN

TESTS_DIR is a copy of rdma-core's tests/ package (Debian ships it,
gzipped, in /usr/share/doc/rdma-core/tests); it is loaded as its own
run_tests.py loads it, with --dev DEV. Every test that runs is one TAP
line: ok, or not ok with its traceback as comments. A skipped test (the
suite skips what the device lacks: mlx5 and EFA direct verbs, device
memory, flow steering, ...) is no line of its own: the reasons are
counted in comments, and a last line checks that at least MIN_RUN tests
ran, so that a device the suite cannot use does not pass by skipping.
"""
import collections
import os
import sys
import traceback
import unittest


class TapResult(unittest.TestResult):
    """Prints a TAP line as each test ends."""

    def __init__(self):
        super().__init__()
        self.n = 0
        self.ran = 0
        self.bad = 0
        self.skip_reasons = collections.Counter()

    def line(self, good, test, why=None):
        self.n += 1
        self.ran += 1
        if not good:
            self.bad += 1
        print(f"{'ok' if good else 'not ok'} {self.n} {test.id()}", flush=True)
        for text in (why or '').rstrip().splitlines():
            print(f"# {text}", flush=True)

    def addSuccess(self, test):
        self.line(True, test)

    def addFailure(self, test, err):
        self.line(False, test, ''.join(traceback.format_exception(*err)))

    def addError(self, test, err):
        self.line(False, test, ''.join(traceback.format_exception(*err)))

    def addSkip(self, test, reason):
        self.skip_reasons[reason.splitlines()[0] if reason else '-'] += 1

    def addExpectedFailure(self, test, err):
        self.line(True, test, 'an expected failure, as the suite marks it')

    def addUnexpectedSuccess(self, test):
        self.line(False, test, 'marked as an expected failure, but passed')


def main():
    tests_dir, dev, min_run = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # The package imports 'args_parser' as a top-level module.
    sys.path[:0] = [tests_dir, os.path.dirname(tests_dir)]
    sys.argv = [sys.argv[0], '--dev', dev]
    from args_parser import parser  # pylint: disable=import-outside-toplevel
    parser.parse_args()
    tests = __import__(os.path.basename(tests_dir))
    suite = unittest.defaultTestLoader.loadTestsFromModule(tests)
    result = TapResult()
    print('TAP version 13', flush=True)
    suite.run(result)
    skipped = sum(result.skip_reasons.values())
    for reason, count in result.skip_reasons.most_common():
        print(f"# skipped {count}: {reason}")
    result.n += 1
    enough = result.ran >= min_run
    print(f"{'ok' if enough else 'not ok'} {result.n} at least {min_run} of "
          f"rdma-core's tests ran on {dev} (ran {result.ran}, "
          f"skipped {skipped})")
    print(f"1..{result.n}")
    return 0 if enough and not result.bad else 1


if __name__ == '__main__':
    sys.exit(main())
