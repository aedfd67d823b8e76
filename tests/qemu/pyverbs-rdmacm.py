#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Runs rdma-core's own RDMA CM tests (tests/test_rdmacm.py of python3-pyverbs) in the guest.

Usage: pyverbs-rdmacm.py TESTS_DIR RESULTS --dev DEV [unittest args]

TESTS_DIR holds rdma-core's `tests` package (unzipped). RESULTS gets one line per test case,
written as soon as the case ends, so a suite killed by a timeout still leaves what it did:
    plan <name>...                       first, every case that will run
    ok <name> # <seconds> s
    not ok <name> # <reason>; <seconds> s
    skip <name> # <reason>; <seconds> s
<name> is the test method's name.

As shipped (rdma-core 44), RDMATestCase._get_ip_mac() looks for the device's netdev under
/sys/class/infiniband/DEV/device/net/. A software device (rxe) has no parent device, so every
RDMA CM test finds no IP address and skips. The netdev is known to the kernel, per GID, in
/sys/class/infiniband/DEV/ports/PORT/gid_attrs/ndevs/INDEX: this wrapper replaces that one
method with a version that reads it there (and falls back to the original). Nothing else of
the suite is changed.
"""
import os
import sys
import tempfile
import time
import unittest


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tests_dir, results_path = sys.argv[1], sys.argv[2]
    # rdma-core's files import `args_parser` at top level and each other as `tests.*`.
    sys.path[0:0] = [tests_dir, os.path.dirname(os.path.abspath(tests_dir))]
    sys.argv[1:] = sys.argv[3:]

    from args_parser import parser
    parser.parse_args()
    import tests.base as base

    original = base.RDMATestCase._get_ip_mac

    def get_ip_mac_from_gid_table(self, dev, port, idx):
        net = None
        if idx is not None:
            try:
                with open(f'/sys/class/infiniband/{dev}/ports/{port}/gid_attrs/ndevs/{idx}') as f:
                    net = f.read().strip()
            except OSError:
                net = None
        if not net:
            return original(self, dev, port, idx)
        try:
            ip_addr, mac_addr = self.get_ip_mac_address(net)
        except (KeyError, IndexError):
            self.args.append([dev, port, idx, None, None])
        else:
            self.args.append([dev, port, idx, ip_addr, mac_addr])

    base.RDMATestCase._get_ip_mac = get_ip_mac_from_gid_table

    import tests.test_rdmacm as test_rdmacm
    suite = unittest.defaultTestLoader.loadTestsFromModule(test_rdmacm)
    cases = list(iter_cases(suite))
    out = open(results_path, 'w', buffering=1)
    out.write('plan ' + ' '.join(c._testMethodName for c in cases) + '\n')
    result = LineResult(out)
    for case in cases:
        case(result)
    out.close()
    sys.exit(0 if result.wasSuccessful() and not result.skipped else 1)


def iter_cases(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from iter_cases(t)
        else:
            yield t


class LineResult(unittest.TestResult):
    """Writes one line per case. While a case runs, fds 1 and 2 (which the forked passive and
    active players inherit) go to a temporary file; its last lines explain a failure."""

    def __init__(self, out):
        super().__init__()
        self.out = out
        self.capture = None
        self.saved = None

    def startTest(self, test):
        super().startTest(test)
        self.t0 = time.monotonic()
        sys.stdout.flush()
        sys.stderr.flush()
        self.capture = tempfile.TemporaryFile(mode='w+')
        self.saved = (os.dup(1), os.dup(2))
        os.dup2(self.capture.fileno(), 1)
        os.dup2(self.capture.fileno(), 2)

    def stopTest(self, test):
        self._restore()
        super().stopTest(test)

    def _restore(self):
        if self.saved is None:
            return ''
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        os.close(self.saved[0])
        os.close(self.saved[1])
        self.saved = None
        self.capture.seek(0)
        text = self.capture.read()
        self.capture.close()
        if text:
            sys.stdout.write(text)
        return text

    def _line(self, status, test, reason=''):
        captured = self._restore()
        why = [reason] if reason else []
        # The players print `Player passive|active got: <exception>` before exiting non-zero.
        why += [l.strip() for l in captured.splitlines() if 'got:' in l or 'Error' in l][:3]
        why = '; '.join(w.replace('\n', ' ') for w in why)[:300]
        took = f'{time.monotonic() - self.t0:.1f} s'
        self.out.write(f'{status} {test._testMethodName} # ' + (f'{why}; {took}' if why else took) + '\n')

    def addSuccess(self, test):
        super().addSuccess(test)
        self._line('ok', test)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._line('not ok', test, f'{err[0].__name__}: {err[1]}')

    def addError(self, test, err):
        super().addError(test, err)
        self._line('not ok', test, f'{err[0].__name__}: {err[1]}')

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._line('skip', test, reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._line('not ok', test, 'expected failure')

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._line('not ok', test, 'unexpected success')


if __name__ == '__main__':
    main()
