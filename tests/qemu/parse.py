#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Parses a test guest's console log: KTAP of each KUnit run, end-to-end results, splats.

Usage: parse.py [--compare-counters CM] LOG [LOG...]
       parse.py --self-test   (the comparers against planted logs; make check's host layer)
prints one line per result and, last, `RESULT <passed> <failed>`.
A failing case, a skipped case (KUnit or end to end), a suite that did not run, a missing end
marker and any kernel splat (BUG, WARNING, Oops, KASAN, lockdep, kmemleak, hung task) each
count as a failure.

Counters: a guest prints `IBCM-COUNTERS: <cm> <dev> <group> <file>=<delta>...` (or `<group>
missing`) for a fixed workload. When the logs hold counters of the C CM and of another CM, one
result `counters_match_c_<cm>` compares them file by file, exactly, and lists what differs.
`--compare-counters CM` makes that result mandatory: it fails if either side printed none.
Without it, a run with no C counters (`make run`'s demo boots only ours) compares nothing.
"""
import re
import sys

TS = re.compile(r'^\[\s*\d+\.\d+\]\s?')
CASE = re.compile(r'^    (ok|not ok) (\d+) (\S+)(.*)$')
SUITE = re.compile(r'^(ok|not ok) (\d+) (\S+)(.*)$')
E2E = re.compile(r'IBCM-E2E: (ok|not ok|skip|todo) (\S+)(.*)$')
COUNTERS = re.compile(r'IBCM-COUNTERS: (\S+) (\S+) (\S+) (.*)$')
RETRY = re.compile(r'IBCM-RETRY: (.*)$')
# A leak check that passed by allowing the known leak of one KUnit case (guest-init.sh).
KNOWN_LEAK = re.compile(r'known leak of (\w+)')
SPLATS = [
    r'BUG:', r'WARNING:', r'Oops', r'general protection fault', r'Kernel panic',
    r'unreferenced object 0x', r'blocked for more than', r'Call Trace:', r'UBSAN:',
    r'DEBUG_LOCKS_WARN_ON', r'possible (circular|recursive) locking', r'inconsistent lock state',
    r'sleeping function called from invalid context', r'refcount_t:',
]
SPLAT = re.compile('|'.join(SPLATS))


def parse(path, results, counters):
    try:
        raw = open(path, errors='replace').read().splitlines()
    except OSError as e:
        results.append(('not ok', f'{path}: log unreadable: {e}'))
        return
    lines = [TS.sub('', l.rstrip('\r')) for l in raw]
    name = path.rsplit('/', 1)[-1].removesuffix('.log')
    section = None
    counts = {}
    ran = set()     # the KUnit cases that ran (passed or failed, not skipped) in this log
    known = []      # results that pass only thanks to a known leak: (test, rest, its case)
    for l in lines:
        m = re.search(r'IBCM-KTAP-BEGIN (\S+)', l)
        if m:
            section = m.group(1)
            counts[section] = [0, 0, 0]
            continue
        m = re.search(r'IBCM-KTAP-END (\S+)', l)
        if m:
            section = None
            continue
        if section:
            m = CASE.match(l)
            if m:
                status, _, case, rest = m.groups()
                if '# SKIP' in rest:
                    results.append(('not ok', f'{name}: {section}: {case} skipped{rest}'))
                    counts[section][2] += 1
                else:
                    results.append((status, f'{name}: {section}: {case}'))
                    counts[section][0 if status == 'ok' else 1] += 1
                    ran.add(case)
                continue
            m = SUITE.match(l)
            if m and m.group(1) == 'not ok':
                results.append(('not ok', f'{name}: {section}: suite {m.group(3)} failed{m.group(4)}'))
        m = E2E.search(l)
        if m:
            status, test, rest = m.groups()
            if status == 'todo':
                results.append(('todo', f'{name}: e2e {test}{rest}'))
            elif status == 'skip':
                results.append(('not ok', f'{name}: e2e {test} skipped{rest}'))
            elif status == 'ok' and KNOWN_LEAK.search(rest):
                known.append((test, rest, KNOWN_LEAK.search(rest).group(1)))
            else:
                results.append((status, f'{name}: e2e {test}{rest}'))
        m = RETRY.search(l)
        if m:
            # Not a failure (the retried boot's own results count), but never hidden.
            results.append(('retry', f'{name}: {m.group(1).strip()}'))
            continue
        m = COUNTERS.search(l)
        if m:
            cm, dev, group, values = m.groups()
            seen = counters.setdefault(cm, {})
            if values.strip() == 'missing':
                seen[f'{dev}/{group}'] = 'missing'
            for kv in values.split():
                if '=' in kv:
                    k, v = kv.split('=', 1)
                    seen[f'{dev}/{group}/{k}'] = v
        if SPLAT.search(l):
            results.append(('not ok', f'{name}: kernel splat: {l.strip()[:160]}'))
    # A leak check that passed by allowing a case's known leak holds only if that case ran.
    for test, rest, case in known:
        if case in ran:
            results.append(('ok', f'{name}: e2e {test}{rest}'))
        else:
            results.append(('not ok', f'{name}: e2e {test}{rest} (but {case} did not run in '
                                      f'this log: the allowance does not apply)'))
    # A KUnit run that printed no case at all did not run (e.g. module failed to load), unless it
    # is the C CM's load section, which has no suite.
    for sec, (p, f, s) in counts.items():
        if p + f + s == 0 and not sec.startswith('load-c'):
            results.append(('not ok', f'{name}: {sec}: no KUnit results (suite did not run)'))
    if not any('IBCM-DONE' in l for l in lines):
        results.append(('not ok', f'{name}: guest did not reach the end (crash, hang or timeout)'))


QPATTR = re.compile(r'IBCM-QPATTR: (\S+) (\S+) (.*)$')


def qp_attrs(path):
    """The ib_cm_init_qp_attr() results and REQ/REP event fields the connection-conformance run
    printed, by (side, state): every line, in order (a key printed twice is compared twice).
    Only the traced, deterministic suite counts: the races suite that follows prints events
    whose number depends on timing."""
    out = {}
    inside = False
    try:
        for l in open(path, errors='replace'):
            if 'IBCM-KTAP-BEGIN conn-conformance' in l:
                inside = True
                continue
            if 'IBCM-KTAP-END conn-conformance' in l:
                inside = False
                continue
            m = QPATTR.search(l)
            if m and inside:
                out.setdefault((m.group(1), m.group(2)), []).append(m.group(3).strip())
    except OSError:
        pass
    return out


def single_guest_logs(paths):
    """The C and rs single-guest boot logs among `paths`, or None unless both are there."""
    c = [p for p in paths if p.endswith('guest-c.log')]
    rs = [p for p in paths if p.endswith('guest-rs.log')]
    return (c[0], rs[0]) if c and rs else None


def compare_qp_attrs(paths, results):
    """ib_cm_init_qp_attr() field by field: the rs boot against the C boot of the same run."""
    logs = single_guest_logs(paths)
    if not logs:
        return
    want, got = qp_attrs(logs[0]), qp_attrs(logs[1])
    if not want:
        results.append(('not ok', 'qp_attr_matches_c: the C boot printed no IBCM-QPATTR lines'))
        return
    diffs = []
    for key in sorted(set(want) | set(got)):
        ws, gs = want.get(key, []), got.get(key, [])
        if len(ws) != len(gs):
            diffs.append(f'{key[0]} {key[1]}: printed {len(ws)} times by c, {len(gs)} by rs')
            continue
        for n, (wl, gl) in enumerate(zip(ws, gs)):
            w = dict(f.split('=', 1) for f in wl.split())
            g = dict(f.split('=', 1) for f in gl.split())
            bad = [f'{k}: c={w[k]} rs={g.get(k, "missing")}' for k in w if g.get(k) != w[k]]
            bad += [f'{k}: not in c' for k in g if k not in w]
            if bad:
                diffs.append(f'{key[0]} {key[1]}#{n}: ' + ', '.join(bad))
    if diffs:
        results.append(('not ok', 'qp_attr_matches_c: ' + '; '.join(diffs)[:600]))
    else:
        n = sum(len(v) for v in want.values())
        results.append(('ok', f'qp_attr_matches_c ({n} results of {len(want)} kinds, every field)'))


TRACE = re.compile(r'IBCM-TRACE: (icm_\w+) ?(.*)$')
TRACEFMT = re.compile(r'IBCM-TRACEFMT: (icm_\w+) (.*)$')
# The guest prints each traced run's events after a section line: `rxe` (the connection suite
# on rxe) and `ib` (the connection suites on the soft IB HCA).
TRACESEC = re.compile(r'IBCM-TRACE-SECTION: (\S+)')
# The guest's mode, from the kernel command line the console log starts with.
MODE = re.compile(r'ibcm\.mode=(\S+)')
# The traced sections a boot of each mode records; each is compared with C's on its own.
TRACE_SECTIONS = {'check': ('rxe', 'ib'), 'softib': ('ib',)}
# Comm IDs are random per boot; everything else an event prints must match.
TRACE_IDS = re.compile(r'\b(local_id|remote_id)=\d+')


def traces(path):
    """The icm_* events a boot recorded, by section (name + normalised fields: count), the
    event formats, and the boot's mode (None if the log does not say)."""
    events, formats, mode = {}, {}, None
    section = None
    try:
        for l in open(path, errors='replace'):
            m = TRACE.search(l)
            if m:
                key = m.group(1) + ' ' + TRACE_IDS.sub(r'\1=N', m.group(2).strip())
                sec = events.setdefault(section or 'unsectioned', {})
                sec[key] = sec.get(key, 0) + 1
                continue
            m = TRACESEC.search(l)
            if m:
                section = m.group(1)
                events.setdefault(section, {})
                continue
            m = TRACEFMT.search(l)
            if m:
                formats.setdefault(m.group(1), []).append(m.group(2).strip())
                continue
            m = MODE.search(l)
            if m and mode is None:
                mode = m.group(1)
    except OSError:
        pass
    return events, formats, mode


def compare_traces(paths, results):
    """The ib_cma:icm_* tracepoints of the rs boot against the C boot's: the same events with
    the same fields, and, section by section (rxe, IB), the same events fired (with their
    states) by the same run. A section the boot's mode runs must hold events on the C side:
    an empty or missing C section fails instead of matching an empty rs one."""
    logs = single_guest_logs(paths)
    if not logs:
        return
    (cev, cfmt, cmode), (rev, rfmt, _) = traces(logs[0]), traces(logs[1])
    if not cfmt:
        results.append(('not ok', 'trace_formats_match_c: the C boot printed no icm_* formats'))
    else:
        diffs = [f'{e}: {"missing" if e not in rfmt else "differs"}'
                 for e in sorted(cfmt) if rfmt.get(e) != cfmt[e]]
        diffs += [f'{e}: not in C' for e in sorted(set(rfmt) - set(cfmt))]
        if diffs:
            results.append(('not ok', 'trace_formats_match_c: ' + '; '.join(diffs)[:800]))
        else:
            results.append(('ok', f'trace_formats_match_c ({len(cfmt)} events, fields and output)'))
    sections = list(TRACE_SECTIONS.get(cmode, ()))
    sections += sorted((set(cev) | set(rev)) - set(sections))
    if not sections:
        results.append(('not ok', 'trace_events_match_c: the C boot recorded no icm_* events'))
    for sec in sections:
        test = f'trace_events_match_c_{sec}'
        c, r = cev.get(sec, {}), rev.get(sec, {})
        if not c:
            results.append(('not ok', f'{test}: the C boot recorded no icm_* events in its '
                                      f'{sec} section (rs: {sum(r.values())})'))
            continue
        diffs = [f'{k}: c={c.get(k, 0)} rs={r.get(k, 0)}'
                 for k in sorted(set(c) | set(r)) if c.get(k, 0) != r.get(k, 0)]
        if diffs:
            results.append(('not ok', f'{test}: ' + '; '.join(diffs)[:1200]))
        else:
            results.append(('ok', f'{test} ({sum(c.values())} events, {len(c)} kinds)'))


# The duplicate matrix (ib_dup_matrix in the IB fault suite): one line per (message, receiver
# state) pair, what the receiver of a released copy did, as `<msg> <state> key=value...`.
DUPM = re.compile(r'IBCM-DUPM: (\S+) (\S+) (.*)$')
# Pairs where ib_cm-rs answers a copy differently from cm.c on purpose (README, "Divergences
# from cm.c"), by (message, state): the reason. A listed pair that no longer differs fails, so
# the list cannot go stale.
DUPM_DIVERGENCES = {}


def dup_matrix(path):
    """The IBCM-DUPM lines of a boot, by (message, state): every line, in order."""
    out = {}
    try:
        for l in open(path, errors='replace'):
            m = DUPM.search(l)
            if m:
                out.setdefault((m.group(1), m.group(2)), []).append(m.group(3).strip())
    except OSError:
        pass
    return out


def compare_dup_matrix(paths, results, divergences=None):
    """What each CM did with a copy of every message in every state, the rs boot against the
    C boot, pair by pair and field by field: a missing or extra pair fails, as does an empty C
    side; a difference fails unless DUPM_DIVERGENCES names the pair (with its reason)."""
    if divergences is None:
        divergences = DUPM_DIVERGENCES
    logs = single_guest_logs(paths)
    if not logs:
        return
    want, got = dup_matrix(logs[0]), dup_matrix(logs[1])
    if not want:
        results.append(('not ok', 'dup_matrix_matches_c: the C boot printed no IBCM-DUPM lines'))
        return
    diffs, known = [], []
    for key in sorted(set(want) | set(got)):
        name = f'{key[0]} in {key[1]}'
        ws, gs = want.get(key, []), got.get(key, [])
        if len(ws) != len(gs):
            bad = [f'{name}: printed {len(ws)} times by c, {len(gs)} by rs']
        else:
            bad = []
            for wl, gl in zip(ws, gs):
                w = dict(f.split('=', 1) for f in wl.split())
                g = dict(f.split('=', 1) for f in gl.split())
                fields = [f'{k}: c={w[k]} rs={g.get(k, "missing")}' for k in w
                          if g.get(k) != w[k]]
                fields += [f'{k}: not in c' for k in g if k not in w]
                if fields:
                    bad.append(f'{name}: ' + ', '.join(fields))
        if key in divergences:
            if bad:
                known.append(f'{name} ({divergences[key]})')
            else:
                diffs.append(f'{name}: listed as a divergence ({divergences[key]}) but the '
                             f'same as c')
        else:
            diffs += bad
    if diffs:
        results.append(('not ok', 'dup_matrix_matches_c: ' + '; '.join(diffs)[:1500]))
    else:
        n = sum(len(v) for v in want.values())
        note = f'; differ on purpose: {"; ".join(known)}' if known else ''
        results.append(('ok', f'dup_matrix_matches_c ({n} pairs, counters, events and states'
                              f'{note})'))


def compare_counters(counters, required, results):
    """One result per CM other than C whose counters were printed (or required)."""
    others = sorted(set(counters) - {'c'} | set(required))
    if 'c' not in counters and not required:
        # A run of one CM (`make run`'s demo): nothing to compare with.
        return
    for cm in others:
        test = f'counters_match_c_{cm}'
        if 'c' not in counters or cm not in counters:
            absent = ' and '.join(x for x in ('c', cm) if x not in counters)
            results.append(('not ok', f'{test} # no counters from {absent}'))
            continue
        c, o = counters['c'], counters[cm]
        # A group directory missing on one side is one difference, not one per file.
        gone = {k for k in set(c) | set(o) if 'missing' in (c.get(k), o.get(k))}
        diff = [f'{k} c={c.get(k, "absent")} {cm}={o.get(k, "absent")}'
                for k in sorted(set(c) | set(o))
                if c.get(k) != o.get(k) and (k in gone or k.rsplit('/', 1)[0] not in gone)]
        if diff:
            results.append(('not ok', f'{test} # {len(diff)} differ: ' + ', '.join(diff)))
        else:
            results.append(('ok', f'{test} ({len(c)} files)'))


def self_test():
    """The trace comparer against planted logs: each broken C side must fail it, the good pair
    must pass. Returns the number of checks that went wrong (0: the comparer works)."""
    import os
    import tempfile

    fmt = 'IBCM-TRACEFMT: icm_send_req field:int x; offset:0; size:4; signed:1;'

    def log(mode, sections):
        lines = [f'Command line: console=ttyS0 ibcm.cm=c ibcm.mode={mode}', fmt]
        for sec, evs in sections:
            if sec:
                lines.append(f'IBCM-TRACE-SECTION: {sec}')
            lines += [f'IBCM-TRACE: {e}' for e in evs]
        return '\n'.join(lines) + '\n'

    rxe = ['icm_send_req local_id=5 remote_id=0 state=IDLE',
           'icm_send_rep local_id=7 remote_id=5 state=REQ_RCVD']
    ib = ['icm_send_req local_id=9 remote_id=0 state=IDLE', 'icm_send_rtu local_id=9 state=X']
    # (what, mode, C's sections, rs' sections, the results that must fail (by name prefix)).
    plans = [
        ('matching check boot', 'check', [('rxe', rxe), ('ib', ib)], [('rxe', rxe), ('ib', ib)],
         []),
        ('matching softib boot', 'softib', [('ib', ib)], [('ib', ib)], []),
        ('empty C IB section', 'softib', [('ib', [])], [('ib', ib)],
         ['trace_events_match_c_ib']),
        ('C IB section missing', 'check', [('rxe', rxe)], [('rxe', rxe), ('ib', ib)],
         ['trace_events_match_c_ib']),
        ('both IB sections empty', 'check', [('rxe', rxe), ('ib', [])],
         [('rxe', rxe), ('ib', [])], ['trace_events_match_c_ib']),
        ('mismatching IB section', 'softib', [('ib', ib)], [('ib', ib + ib[:1])],
         ['trace_events_match_c_ib']),
        # The same events in both boots, in other sections: one combined count would match.
        ('events moved between sections', 'check', [('rxe', rxe), ('ib', ib)],
         [('rxe', rxe + ib[:1]), ('ib', ib[1:])],
         ['trace_events_match_c_rxe', 'trace_events_match_c_ib']),
        ('C rxe section empty', 'check', [('rxe', []), ('ib', ib)], [('rxe', []), ('ib', ib)],
         ['trace_events_match_c_rxe']),
    ]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for what, mode, csecs, rsecs, must_fail in plans:
            paths = [os.path.join(tmp, 'guest-c.log'), os.path.join(tmp, 'guest-rs.log')]
            for path, secs in zip(paths, (csecs, rsecs)):
                with open(path, 'w') as f:
                    f.write(log(mode, secs))
            results = []
            compare_traces(paths, results)
            failed = [w for st, w in results if st == 'not ok']
            passed = [w.split()[0] for st, w in results if st == 'ok']
            missed = [t for t in must_fail if not any(w.startswith(t + ':') for w in failed)]
            extra = [w for w in failed if not any(w.startswith(t + ':') for t in must_fail)]
            want_ok = {f'trace_events_match_c_{s}' for s, _ in csecs} - set(must_fail)
            unseen = sorted(want_ok - set(passed))
            if missed or extra or unseen:
                bad += 1
                print(f'FAIL {what}: not failed: {missed}; failed wrongly: {extra}; '
                      f'no ok result: {unseen}')
            else:
                print(f'ok   {what}')
        bad += self_test_known_leaks(tmp)
        bad += self_test_dup_matrix(tmp)
    return bad


def self_test_dup_matrix(tmp):
    """The duplicate-matrix comparer against planted logs: each broken pair must fail it."""
    import os
    req = 'IBCM-DUPM: REQ ESTABLISHED a_rx=- p_rx=req:1 p_dup=req:1 a_ev=- p_ev=- p_state=ESTABLISHED'
    rep = 'IBCM-DUPM: REP ESTABLISHED a_rx=rep:1 a_dup=rep:1 a_tx=rtu:1 p_ev=- a_state=ESTABLISHED'
    other = rep.replace('a_tx=rtu:1', 'a_tx=-')
    key = ('REP', 'ESTABLISHED')
    # (what, C's lines, rs' lines, divergences, whether it must pass).
    plans = [
        ('matching matrix', [req, rep], [rep, req], {}, True),
        ('C matrix empty', [], [req, rep], {}, False),
        ('both matrices empty', [], [], {}, False),
        ('pair missing in rs', [req, rep], [req], {}, False),
        ('extra pair in rs', [req], [req, rep], {}, False),
        ('pair printed twice by rs', [req, rep], [req, rep, rep], {}, False),
        ('one field differs', [req, rep], [req, other], {}, False),
        ('field missing in rs', [req, rep], [req, rep.replace(' p_ev=-', '')], {}, False),
        ('difference listed as a divergence', [req, rep], [req, other],
         {key: 'on purpose'}, True),
        ('divergence listed but the same', [req, rep], [req, rep], {key: 'stale'}, False),
    ]
    bad = 0
    paths = [os.path.join(tmp, 'dupm-guest-c.log'), os.path.join(tmp, 'dupm-guest-rs.log')]
    for what, clines, rlines, div, ok in plans:
        for path, lines in zip(paths, (clines, rlines)):
            with open(path, 'w') as f:
                f.write('\n'.join(['Command line: ibcm.mode=softib'] + lines) + '\n')
        results = []
        compare_dup_matrix(paths, results, div)
        got = [st for st, w in results if w.startswith('dup_matrix_matches_c')]
        if got != ['ok' if ok else 'not ok']:
            bad += 1
            print(f'FAIL {what}: dup_matrix_matches_c gave {got}, want {"ok" if ok else "not ok"}')
        else:
            print(f'ok   {what}')
    return bad


def self_test_known_leaks(tmp):
    """A leak check passed by a case's known leak counts only in a log where that case ran."""
    import os
    claim = ('IBCM-E2E: ok kmemleak_clean_c # only the 2 known objects '
             '(known leak of ib_path_mig_without_alternate): stub')
    case = ['IBCM-KTAP-BEGIN conn-ib-divergences-c', '    ok 1 ib_path_mig_without_alternate',
            'IBCM-KTAP-END conn-ib-divergences-c']
    skipped = ['IBCM-KTAP-BEGIN conn-ib-divergences-c',
               '    ok 1 ib_path_mig_without_alternate # SKIP stub',
               'IBCM-KTAP-END conn-ib-divergences-c']
    plans = [('known leak, its case ran', case, 'ok'),
             ('known leak, its case absent', [], 'not ok'),
             ('known leak, its case skipped', skipped, 'not ok')]
    bad = 0
    path = os.path.join(tmp, 'leak-c.log')
    for what, lines, want in plans:
        with open(path, 'w') as f:
            f.write('\n'.join(lines + [claim, 'IBCM-DONE']) + '\n')
        results = []
        parse(path, results, {})
        got = [st for st, w in results if 'kmemleak_clean_c' in w]
        if got != [want]:
            bad += 1
            print(f'FAIL {what}: kmemleak_clean_c gave {got}, want [{want!r}]')
        else:
            print(f'ok   {what}')
    return bad


def main():
    args = sys.argv[1:]
    if args == ['--self-test']:
        sys.exit(1 if self_test() else 0)
    required = []
    while args and args[0] == '--compare-counters':
        required.append(args[1])
        args = args[2:]
    results = []
    counters = {}
    for path in args:
        parse(path, results, counters)
    compare_counters(counters, required, results)
    compare_qp_attrs(args, results)
    compare_traces(args, results)
    compare_dup_matrix(args, results)
    passed = sum(1 for s, _ in results if s == 'ok')
    failed = sum(1 for s, _ in results if s == 'not ok')
    for s, what in results:
        print(f'{s.upper() if s != "ok" else "ok":7} {what}')
    retried = sum(1 for s, _ in results if s == 'retry')
    if retried:
        print(f'NOTE: {retried} guest boot(s) retried after dying before their init ran')
    print(f'RESULT {passed} {failed}')


if __name__ == '__main__':
    main()
