#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Layer check of src/: every file's imports must run downward, and no file-level cycle.

Reads every src/**/*.rs, collects the files it names through `use crate::...` (groups included),
`crate::a::b` paths in code, `super::` paths, and `m::x` paths through a module `m` it imported,
maps each file to its layer (LAYERS below; Documentation/design.rst's "Layers" table is checked
to list the same files in the same layers), and reports:
  - an import of a file in a higher layer (upward import);
  - every file-level import cycle (strongly connected component of more than one file) but the
    one named in KNOT;
  - a `#[no_mangle]` function outside src/entry/.
Prints `layers: ok (...)` and exits 0, or the findings and exits 1.
`--graph` prints the edges; `--count` prints upward imports and cycle sizes only; `--table`
prints the layer table in design.rst's format.
"""
import os
import re
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SRC = os.path.join(TOP, "src")

# Layer table: keep in the order of design.rst's "Layers" section. Patterns are paths under
# src/ ("dir/" matches everything below it).
LAYERS = [
    ("L0 logic", ["logic/"]),
    ("L1 rim", ["bindings.rs", "alloc.rs", "lock.rs", "error.rs", "use_count.rs", "slot.rs",
                "wq.rs", "comm_index.rs", "ah.rs", "av.rs", "recv_wc.rs", "path.rs"]),
    ("L2 objects", ["cm_id.rs", "device.rs", "listen.rs", "timewait.rs", "port.rs", "event.rs",
                    "reply_ah.rs", "send.rs", "trace.rs", "recv_work.rs"]),
    ("L3 containers", ["comm_id.rs", "remote.rs"]),
    ("L4 protocol", ["conn/", "recv.rs"]),
    ("L5 entry", ["entry/"]),
]

# Where every `#[no_mangle] extern "C"` function must be.
ENTRY_DIR = "entry/"

# The one cycle the check accepts: the id and its device refer to each other by type (an id
# holds an `Arc` of its device; the device holds its listener tree and timewait queue, which
# hold ids), as Binder's `Process` and `Node` do. Breaking it takes a device generic over its
# id type. Any other cycle, or one of these files in a cycle with another file, fails; so does
# a file listed here that is no longer in the cycle (keep the list exact).
KNOT = {"cm_id.rs", "device.rs", "listen.rs", "timewait.rs"}

USE_RE = re.compile(r"\b(?:pub(?:\([a-z]+\))?\s+)?use\s+(crate|super)::", re.S)
PATH_RE = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return text


def rs_files():
    out = []
    for root, _, files in os.walk(SRC):
        for f in files:
            if f.endswith(".rs") and f != "bindings_generated.rs":
                out.append(os.path.relpath(os.path.join(root, f), SRC))
    return sorted(out)


def module_dir(rel):
    """The module path (list of names) of file `rel`."""
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "ib_cm_rs"):
        parts = parts[:-1]
    return parts


def resolve(segments):
    """File (rel to src/) named by crate path `segments`, and how many segments it consumed."""
    cur = []
    best = ("ib_cm_rs.rs", 0)
    for i, seg in enumerate(segments):
        cur.append(seg)
        base = os.path.join(SRC, *cur)
        if os.path.isfile(base + ".rs"):
            best = ("/".join(cur) + ".rs", i + 1)
            if not os.path.isdir(base):
                break
        elif os.path.isfile(os.path.join(base, "mod.rs")):
            best = ("/".join(cur) + "/mod.rs", i + 1)
        else:
            break
    return best


def expand_use(body):
    """Expand a use tree body (after `crate::`) into a list of segment lists."""
    out = []

    def rec(prefix, s):
        s = s.strip()
        if not s:
            return
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*(::\s*\{(.*)\})?\s*(as\s+\w+)?$", s, re.S)
        if not m:
            if s == "*" or s.startswith("{"):
                if s.startswith("{"):
                    for part in split_top(s[1:-1]):
                        rec(prefix, part)
                return
            return
        segs = [x.strip() for x in m.group(1).split("::")]
        if m.group(2):
            for part in split_top(m.group(3)):
                rec(prefix + segs, part)
        else:
            out.append(prefix + [x for x in segs if x != "self"])

    rec([], body)
    return out


def split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in parts if p.strip()]


def deps_of(rel):
    text = strip_comments(open(os.path.join(SRC, rel)).read())
    me = module_dir(rel)
    parent = me[:-1]
    deps = set()
    imported_mods = {}

    def add(segs, root):
        base = [] if root == "crate" else list(parent)
        f, n = resolve(base + segs)
        if f != rel:
            deps.add(f)
        return f, n, base

    # `use` statements, groups expanded.
    for m in USE_RE.finditer(text):
        root = m.group(1)
        end = text.index(";", m.end())
        body = text[m.end():end]
        for segs in expand_use(body):
            if not segs:
                continue
            f, n, base = add(segs, root)
            full = base + segs
            # A module imported by name: later `name::x` paths go through it.
            if n == len(full) and (f.endswith("/mod.rs") or f[:-3].split("/")[-1] == full[-1]):
                imported_mods[full[-1]] = full
        text = text[:m.start()] + " " * (end - m.start()) + text[end:]
    # Inline paths.
    for m in PATH_RE.finditer(text):
        segs = [s for s in m.group(2).split("::") if s]
        add(segs, m.group(1))
    for name, full in imported_mods.items():
        for m in re.finditer(r"(?<![:\w])" + name + r"((?:::[A-Za-z_][A-Za-z0-9_]*)+)", text):
            segs = full + [s for s in m.group(1).split("::") if s]
            f, _ = resolve(segs)
            if f != rel:
                deps.add(f)
    deps.discard("ib_cm_rs.rs")
    return deps


def layer_of(rel):
    best, best_len = None, -1
    for idx, (_, pats) in enumerate(LAYERS):
        for p in pats:
            if (p.endswith("/") and rel.startswith(p)) or rel == p:
                if len(p) > best_len:
                    best, best_len = idx, len(p)
    return best


def sccs(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def design_table():
    """The (file, layer name) rows of design.rst's Layers table, or None if it has none."""
    path = os.path.join(TOP, "Documentation", "design.rst")
    try:
        text = open(path).read()
    except OSError:
        return None
    m = re.search(r"\nLayers\n=+\n(.*?)(\n[^\n]+\n=+\n|\Z)", text, re.S)
    if not m:
        return None
    rows = {}
    for line in m.group(1).splitlines():
        lm = re.match(r"^\s*(L[0-5])\s+\S+\s*\|\s*(.*)$", line)
        if lm:
            for pat in lm.group(2).split():
                rows[pat.rstrip(",")] = lm.group(1)
    return rows


def main():
    files = rs_files()
    graph = {f: deps_of(f) for f in files}
    problems = []
    unmapped = [f for f in files if f != "ib_cm_rs.rs" and layer_of(f) is None]
    for f in unmapped:
        problems.append(f"{f}: in no layer (add it to scripts/layers.py's LAYERS)")
    upward = []
    for f in files:
        lf = layer_of(f)
        if lf is None:
            continue
        for d in sorted(graph[f]):
            ld = layer_of(d)
            if ld is not None and ld > lf:
                upward.append((f, d))
                problems.append(f"{f} ({LAYERS[lf][0]}) imports {d} ({LAYERS[ld][0]}): upward")
    # Every function C calls in (`#[no_mangle]`) is in the entry layer.
    for f in files:
        if f.startswith(ENTRY_DIR):
            continue
        if re.search(r"#\[\s*no_mangle\s*\]", strip_comments(open(os.path.join(SRC, f)).read())):
            problems.append(f"{f}: has a #[no_mangle] function outside {ENTRY_DIR}")
    cycles = sccs(graph)
    knot_seen = set()
    for c in cycles:
        if set(c) <= KNOT:
            knot_seen |= set(c)
            continue
        problems.append(f"import cycle of {len(c)} files: {' '.join(c)}")
    for f in sorted(KNOT - knot_seen):
        problems.append(f"{f} is no longer in the accepted id/device cycle: drop it from KNOT")
    table = design_table()
    if table is not None:
        for idx, (name, pats) in enumerate(LAYERS):
            for p in pats:
                if table.get(p) != name.split()[0]:
                    problems.append(f"design.rst's Layers table: {p} should be in {name}")
        known = {p for _, pats in LAYERS for p in pats}
        for p in table:
            if p not in known:
                problems.append(f"design.rst's Layers table names {p}, which scripts/layers.py does not")
    else:
        problems.append("Documentation/design.rst has no Layers section")
    if "--graph" in sys.argv:
        for f in files:
            print(f, "->", " ".join(sorted(graph[f])))
    if "--count" in sys.argv:
        print(f"upward imports: {len(upward)}; cycles: {[len(c) for c in cycles]}")
        return 0
    if "--table" in sys.argv:
        for name, pats in LAYERS:
            print(f"  {name:<14} | {' '.join(pats)}")
        return 0
    if problems:
        for p in problems:
            print("layers:", p)
        print(f"layers: FAILED ({len(upward)} upward imports, {len(cycles)} cycles)")
        return 1
    print(f"layers: ok ({len(files)} files, no upward import, no cycle but the id/device knot)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
