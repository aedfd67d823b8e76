#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Instructions per kernel function from the tbcount plugin (`make bench-conn TBPROF=1`).

    tbprof.py SYSTEM_MAP RESULTS_DIR CONNECTIONS

Reads RESULTS_DIR/tb-{c,rs}.txt (translation-block address, instructions, executions over the
measured rounds) and the module symbols the guest printed (IBCM-SYM lines of
RESULTS_DIR/conn-tb-{c,rs}.log), maps every block to the function it starts in, and prints per
connection: each module's instructions (the whole guest: both CMs run the same rdma_cm, driver
and kernel), the CM module's own functions (self instructions: callees are counted where they
run), and the kernel functions whose count differs most between the two runs. The plugin
charges a block's instructions when the block runs, so a block cut short by an exception or
an interrupt counts in full.
"""
import bisect
import collections
import re
import sys

SYM = re.compile(r"IBCM-SYM: ([0-9a-f]+) (\w) (\S+)\s+\[(\w+)\]")


def symbols(system_map, log):
    syms = []
    for line in open(system_map):
        f = line.split()
        if len(f) >= 3 and f[1] in "tTwW":
            syms.append((int(f[0], 16), f[2], "vmlinux"))
    for line in open(log, errors="replace"):
        m = SYM.search(line)
        if m and m.group(2) in "tTwW":
            syms.append((int(m.group(1), 16), m.group(3), m.group(4)))
    if not any(mod == "ib_cm" for _, _, mod in syms):
        sys.exit(f"tbprof.py: {log} has no ib_cm symbols (IBCM-SYM lines): cannot map its code")
    syms.sort()
    return syms


def profile(system_map, res, cm):
    syms = symbols(system_map, f"{res}/conn-tb-{cm}.log")
    starts = [s[0] for s in syms]
    insns, calls, mods = collections.Counter(), collections.Counter(), collections.Counter()
    for line in open(f"{res}/tb-{cm}.txt"):
        va, n, execs = line.split()
        va, n, execs = int(va, 16), int(n), int(execs)
        i = bisect.bisect_right(starts, va) - 1
        if i < 0:
            continue
        start, name, mod = syms[i]
        insns[(mod, name)] += n * execs
        mods[mod] += n * execs
        if va == start:
            calls[(mod, name)] += execs
    return insns, calls, mods


def short(name):
    # Rust v0 symbols: keep the path after the crate's hash, which is readable enough.
    return re.sub(r"^_R\w*?8ib_cm_rs", "rs::", name)[:80]


def main():
    system_map, res, conns = sys.argv[1], sys.argv[2], float(sys.argv[3])
    if conns <= 0:
        sys.exit("tbprof.py: no measured connections")
    prof = {cm: profile(system_map, res, cm) for cm in ("c", "rs")}
    k = 1000 * conns
    print(f"tbcount profile, instructions per connection ({conns:.0f} connections, both ends)")
    mods = set(prof["c"][2]) | set(prof["rs"][2])
    for m in sorted(mods, key=lambda m: -(prof["c"][2][m] + prof["rs"][2][m])):
        c, r = prof["c"][2][m] / k, prof["rs"][2][m] / k
        print(f"  module {m:10} C {c:8.2f}k  ib_cm-rs {r:8.2f}k  diff {r - c:+7.2f}k")
    for cm in ("c", "rs"):
        insns, calls, _ = prof[cm]
        own = sorted(((n, v) for (m, n), v in insns.items() if m == "ib_cm"), key=lambda x: -x[1])
        total = sum(v for _, v in own)
        print(f"  {cm:2} ib_cm's own functions: {total / k:.2f}k per connection; the top ones:")
        for name, v in own[:25]:
            c = calls[("ib_cm", name)] / conns
            per = f"{v / conns / c:6.0f}/call" if c else "           "
            print(f"  {cm:2}   {v / conns:7.0f} {c:6.1f} calls {per}  {short(name)}")
    keys = set(prof["c"][0]) | set(prof["rs"][0])
    diff = sorted(((key, prof["rs"][0][key] - prof["c"][0][key]) for key in keys if key[0] != "ib_cm"),
                  key=lambda x: -abs(x[1]))
    print("  other functions whose count differs most (ib_cm-rs minus C, instructions per connection):")
    for (m, name), d in diff[:25]:
        print(f"     {d / conns:+7.0f}  (C {prof['c'][0][(m, name)] / conns:7.0f})  {m}:{name}")


main()
