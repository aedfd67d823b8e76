#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""ib_cm-rs's instructions per connection by source line and by inlined function
(`make bench-conn TBPROF=1 LINES=1`).

    tblines.py LINES_KO RESULTS_DIR CONNECTIONS [SYMBOL_SUBSTRING]

tbprof.py charges each block to the symbol it starts in, so everything the compiler inlined
into a function (most of the CM: the handlers inline into the receive work, the sender into
`send_msg`) is one figure. This maps the same tbcount output (RESULTS_DIR/tb-rs.txt, and the
module's load address from the IBCM-SYM lines of RESULTS_DIR/conn-tb-rs.log) to the
instructions of LINES_KO, a build of the module that ran with line tables
(IBCM_DEBUGINFO=1, same code: conn_bench.sh checks that its .text is byte for byte the
one that ran), and gives each instruction the block's executions. Printed per connection:
the source lines that cost most, every function frame (inlined or not) with the
instructions executed inside it (a frame counts once per instruction however deep it is
inlined), and every symbol. SYMBOL_SUBSTRING keeps only the instructions of symbols whose
name contains it; TBLINES_FRAMES=N prints N frames (80). The C glue has no line tables: its
lines show as "??".
"""
import bisect
import collections
import os
import re
import subprocess
import sys

SYM = re.compile(r"IBCM-SYM: ([0-9a-f]+) (\w) (\S+)\s+\[ib_cm\]")


def text_symbols(ko):
    """(offset, name, demangled name) of the .text functions of `ko`, sorted."""
    syms = []
    for demangle in ([], ["-C"]):
        out = subprocess.run(["llvm-objdump", "-t", *demangle, ko], capture_output=True,
                             text=True, check=True).stdout
        syms.append([m.groups() for m in re.finditer(
            r"(?m)^([0-9a-f]+) .* F \.text\s+[0-9a-f]+ (.*)$", out)])
    return sorted((int(a, 16), n, d) for (a, n), (_, d) in zip(*syms))


def instructions(ko):
    """The start offsets of .text's instructions."""
    out = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", "-j", ".text", ko],
                         capture_output=True, text=True, check=True).stdout
    return [int(m.group(1), 16) for m in re.finditer(r"(?m)^\s*([0-9a-f]+):\s", out)]


def frame_name(f):
    # `<Foo<Bar> as Trait<T>>::baz` -> `Foo::baz`: the type an impl is for stays, generic
    # arguments go (innermost first).
    while True:
        g = re.sub(r"(\w)<[^<>]*>", r"\1", f)
        g = re.sub(r"<([^<>]*?) as [^<>]*>", r"\1", g)
        g = re.sub(r"<([^<>]*)>::", r"\1::", g)
        if g == f:
            return f.removeprefix("ib_cm_rs::")[:100]
        f = g


def main():
    ko, res, conns = sys.argv[1], sys.argv[2], float(sys.argv[3])
    only = sys.argv[4] if len(sys.argv) > 4 else None
    syms = text_symbols(ko)
    by_name = {n: o for o, n, _ in syms}
    # The load address of .text: the guest address of a symbol minus its offset, agreed by
    # (nearly) all of them.
    bases = collections.Counter()
    for line in open(f"{res}/conn-tb-rs.log", errors="replace"):
        m = SYM.search(line)
        if m and m.group(3) in by_name:
            bases[int(m.group(1), 16) - by_name[m.group(3)]] += 1
    if not bases:
        sys.exit("tblines.py: no ib_cm symbols in conn-tb-rs.log")
    base = bases.most_common(1)[0][0]
    insns = instructions(ko)
    end = insns[-1]
    execs = collections.Counter()
    for line in open(f"{res}/tb-rs.txt"):
        va, n, ex = line.split()
        off = int(va, 16) - base
        if off < 0 or off > end:
            continue
        i = bisect.bisect_left(insns, off)
        if i == len(insns) or insns[i] != off:
            sys.exit(f"tblines.py: a block at .text+{off:#x} is not at an instruction: "
                     "not the module that ran")
        for a in insns[i:i + int(n)]:
            execs[a] += int(ex)
    starts = [o for o, _, _ in syms]

    def symbol(a):
        i = bisect.bisect_right(starts, a) - 1
        return frame_name(syms[i][2]) if i >= 0 else "?"

    addrs = sorted(a for a in execs if not only or only in symbol(a))
    out = subprocess.run(["llvm-symbolizer", "--inlining", "--obj", ko, "--output-style=LLVM"],
                         input="\n".join(hex(a) for a in addrs), capture_output=True,
                         text=True, check=True).stdout
    lines, frames, outer = collections.Counter(), collections.Counter(), collections.Counter()
    for a, block in zip(addrs, out.split("\n\n")):
        f = block.strip().splitlines()
        pairs = list(zip(f[0::2], f[1::2]))
        c = execs[a]
        outer[symbol(a)] += c
        if not pairs or pairs[0][1].startswith("??"):
            pairs = [(symbol(a), "??:0")]
        # The outermost frame is named from the symbol table, where the symbolizer may pick a
        # data symbol at the same offset (the .ko's sections all start at 0): the .text
        # symbol is the function. (The C glue has no line table: it is only that frame.)
        pairs[-1] = (symbol(a), pairs[-1][1])
        loc = pairs[0][1].rsplit(":", 1)[0]
        loc = re.sub(r"^.*/library/(\w+)/src/", r"\1/", loc)
        loc = re.sub(r"^.*/rust/kernel/", "kernel/", loc)
        loc = re.sub(r"^/.*?/src/", "src/", loc)
        lines[(loc, frame_name(pairs[0][0]))] += c
        for name in {frame_name(fn) for fn, _ in pairs}:
            frames[name] += c
    total = sum(outer.values())
    print(f"ib_cm-rs instructions per connection by source ({conns:.0f} connections, both "
          f"ends{', symbols matching ' + only if only else ''}): {total / conns:.0f}")
    print("  source lines:")
    for (loc, fn), c in lines.most_common(60):
        print(f"  {c / conns:8.1f}  {loc:45} {fn}")
    print("  function frames, inlined ones included (instructions inside each):")
    for fn, c in frames.most_common(int(os.environ.get("TBLINES_FRAMES", "80"))):
        print(f"  {c / conns:8.1f}  {fn}")
    print("  symbols:")
    for fn, c in outer.most_common():
        print(f"  {c / conns:8.1f}  {fn}")


if __name__ == "__main__":
    main()
