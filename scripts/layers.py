#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Layer check of src/: every file's imports must run downward, and no file-level cycle.

Reads every src/**/*.rs (comments and string/char literals blanked by a small lexer), collects
the files it names through `use` trees (groups, globs, `as` aliases), `crate::`, `super::`
(counted from the enclosing inline `mod`, any number of times) and `self::` paths, relative
paths through a child module (`mod x;` then `x::f` or `use x::f`) or through a module brought
in by `use` (by name, alias or glob), and, by a heuristic (see method_calls), calls of a method
only one file's inherent `impl` defines. Maps each file to its layer (LAYERS below;
Documentation/design.rst's "Layers" table is checked to list the same files in the same
layers), and reports:
  - an import of a file in a higher layer (upward import);
  - every file-level import cycle (strongly connected component of more than one file) but
    a module root <-> direct child cycle (root_child_only);
  - a `#[no_mangle]` or `#[export_name]` function (plain or `unsafe(...)`) outside src/entry/.
Prints `layers: ok (...)` and exits 0, or the findings and exits 1.
`--graph` prints the edges; `--count` prints upward imports and cycle sizes only; `--table`
prints the layer table in design.rst's format; `--self-test` plants each known evasion in a
throwaway tree and checks that the check fails on it (and passes on the clean tree).
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
    ("L1 rim", ["bindings.rs", "alloc.rs", "backlog.rs", "lock.rs", "error.rs", "use_count.rs", "slot.rs",
                "wq.rs", "comm_index.rs", "ah.rs", "av.rs", "recv_wc.rs", "path.rs", "tunables.rs",
                "send_pool.rs"]),
    ("L2 objects", ["cm_id.rs", "device.rs", "listen.rs", "timewait.rs", "tw_queue.rs", "port.rs",
                    "event.rs", "reply_ah.rs", "send.rs", "trace.rs"]),
    ("L3 containers", ["comm_id.rs", "remote.rs"]),
    ("L4 protocol", ["conn/", "recv.rs"]),
    ("L5 entry", ["entry/"]),
]

# Where every `#[no_mangle] extern "C"` function must be.
ENTRY_DIR = "entry/"

# A module root and its direct children importing each other (d/mod.rs <-> d/x.rs, same
# layer, no other edge inside the cycle) is allowed: CONVENTIONS.md has files of one layer
# meet through the layer's module root, and a root that declares `mod x;` and re-exports or
# dispatches into x while x uses the root's shared items is that pattern (root_child_only).
#
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# A path: `a::b::c` (spaces around `::` allowed), not itself the tail of a longer path.
PATH_RE = re.compile(r"(?<![\w:])(" + IDENT + r"(?:\s*::\s*" + IDENT + r")+)")
USE_RE = re.compile(r"\buse\s+")
# Every way to give a function a C symbol name: `#[no_mangle]`, `#[unsafe(no_mangle)]`,
# `#[export_name = ...]`, `#[unsafe(export_name = ...)]`, `#[cfg_attr(.., no_mangle)]`.
EXPORT_RE = re.compile(r"#!?\s*\[[^\]]*\b(no_mangle|export_name)\b")


def strip_comments(text):
    """`text` with comments blanked and string/char literal contents blanked (offsets and
    newlines kept). A real lexer: `//` inside a string is not a comment, a path inside a
    comment or a string is not a path, block comments nest, raw strings end at their `"#..`."""
    out, i, n = [], 0, len(text)

    def ident(c):
        return c.isalnum() or c == "_"

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and (i == 0 or not ident(text[i - 1]) or
                           (text[i - 1] == "b" and (i < 2 or not ident(text[i - 2])))) \
                and re.match(r'r(#*)"', text[i:i + 300]):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            close = '"' + hashes
            j = text.find(close, i + 2 + len(hashes))
            j = n if j < 0 else j + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + '"')
            i = j
        elif c == "'":
            m = re.match(r"'(?:\\(?:u\{[0-9a-fA-F_]*\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'", text[i:i + 16])
            if m:
                out.append("' '" + " " * (m.end() - 3))
                i += m.end()
            else:  # a lifetime or label
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


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


def child_modules(mod):
    """Names of the file modules directly below module path `mod` (for a glob import)."""
    d = os.path.join(SRC, *mod)
    if not os.path.isdir(d):
        return []
    out = []
    for e in os.listdir(d):
        if e.endswith(".rs") and e not in ("mod.rs", "ib_cm_rs.rs", "bindings_generated.rs"):
            out.append(e[:-3])
        elif os.path.isfile(os.path.join(d, e, "mod.rs")):
            out.append(e)
    return out


def expand_use(body):
    """Expand a use tree body into (segments, alias, glob) triples; segments keep a leading
    `crate`/`super`/`self`; `self` inside a group names the group's prefix."""
    out = []

    def rec(prefix, s):
        s = s.strip()
        if not s:
            return
        s = re.sub(r"^::\s*", "", s)
        if s.startswith("{") and s.endswith("}"):
            for part in split_top(s[1:-1]):
                rec(prefix, part)
            return
        if s == "*":
            out.append((prefix, None, True))
            return
        m = re.match(r"^(" + IDENT + r"(?:\s*::\s*" + IDENT + r")*)\s*(?:::\s*(\{.*\}|\*))?\s*(?:as\s+(\w+))?$", s, re.S)
        if not m:
            return
        segs = [x.strip() for x in m.group(1).split("::")]
        if m.group(2) == "*":
            out.append((prefix + segs, None, True))
        elif m.group(2):
            rec(prefix + segs, m.group(2))
        else:
            full = prefix + segs
            alias = m.group(3)
            if full and full[-1] == "self" and len(full) > 1:
                full = full[:-1]
            out.append((full, alias or (full[-1] if full else None), False))

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


def match_brace(text, i):
    """Index just past the `}` closing the `{` at `text[i]`."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def read_stripped(rel):
    return strip_comments(open(os.path.join(SRC, rel)).read())


def deps_of(rel):
    """Files `rel` names: `use` trees (groups, globs, `as`), `crate::`/`super::`/`self::`
    paths (`super` counted from the enclosing inline `mod`), paths through a child module
    (`mod x;` then `x::f`) and through a module brought in by `use` (by name, alias or glob)."""
    text = read_stripped(rel)
    me = module_dir(rel)
    # Inline modules (`mod tests { ... }`): spans and module paths.
    blocks = []
    for m in re.finditer(r"\bmod\s+(" + IDENT + r")\s*\{", text):
        blocks.append((m.start(), match_brace(text, m.end() - 1), m.group(1)))

    def scope_at(pos):
        inner = sorted((b for b in blocks if b[0] <= pos < b[1]), key=lambda b: b[0])
        return me + [b[2] for b in inner]

    # Names usable as the first segment of a relative path, per file (an approximation:
    # a `use` inside an inline module counts for the whole file).
    names = {}
    for m in re.finditer(r"\bmod\s+(" + IDENT + r")\s*;", text):
        names[m.group(1)] = scope_at(m.start()) + [m.group(1)]
    for b in blocks:
        names.setdefault(b[2], scope_at(b[0]) + [b[2]])
    deps = set()

    def absolute(segs, pos):
        scope = scope_at(pos)
        if not segs:
            return None
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] in ("super", "self"):
            base = list(scope)
            k = 0
            while k < len(segs) and segs[k] in ("super", "self"):
                if segs[k] == "super":
                    base = base[:-1]
                k += 1
            return base + segs[k:]
        if segs[0] in names:
            return names[segs[0]] + segs[1:]
        return None  # an external crate (kernel, core) or a local name

    def add(full):
        f, n = resolve(full)
        if f != rel:
            deps.add(f)
        return f, n

    uses = []
    for m in USE_RE.finditer(text):
        end = text.find(";", m.end())
        if end < 0:
            continue
        uses.append((m.start(), end, text[m.end():end]))
    # Two passes: a `use` of a child module may follow a `use` through it.
    for _ in range(2):
        for start, end, body in uses:
            for segs, alias, glob in expand_use(body):
                full = absolute(segs, start)
                if full is None:
                    continue
                f, n = add(full)
                if glob:
                    if n == len(full):
                        for c in child_modules(full):
                            names.setdefault(c, full + [c])
                elif n == len(full) and alias and full:
                    names[alias] = full
    for start, end, _ in uses:
        text = text[:start] + " " * (end - start) + text[end:]
    # Inline paths.
    for m in PATH_RE.finditer(text):
        segs = [s.strip() for s in m.group(1).split("::")]
        full = absolute(segs, m.start())
        if full is not None:
            add(full)
    deps.discard("ib_cm_rs.rs")
    return deps


# Heuristic for methods (Rust resolves `x.m()` by type, which this script does not know):
# a method call `.m(` in a file is counted as a call into the file that defines `m` when `m`
# is defined by exactly one `fn m` in the whole crate and that one is in an inherent
# `impl Type { ... }` block (a trait's method can be called on any implementor). Names that
# core/kernel types also have are skipped (COMMON_METHODS), since `.get(` on a slice would
# otherwise count as a call to the crate's one `fn get`. Limits: a method name defined twice
# anywhere (say `destroy` on two types) is not checked at all; a call through a trait, a
# closure field or `Type::m(x)` is not seen; a core/kernel method not in COMMON_METHODS that
# shares a name with a crate method unique crate-wide gives a false upward finding (add it).
COMMON_METHODS = {
    "new", "get", "get_mut", "set", "insert", "remove", "push", "pop", "len", "is_empty",
    "clone", "lock", "unlock", "drop", "into", "from", "as_ref", "as_mut", "as_ptr",
    "iter", "next", "take", "replace", "map", "unwrap", "cast", "deref", "load", "store",
    "fmt", "eq", "cmp", "hash", "contains", "clear", "swap", "add", "sub", "init", "read",
    "write", "wait", "notify", "flush", "send", "cancel", "find", "entry", "reset", "update",
    "is_some", "is_none", "is_ok", "is_err", "ok", "err", "expect", "first", "last", "copied",
    "cloned", "min", "max", "name",
}


def method_defs(files):
    """{name: [(file, inherent)]} of every `fn name` in the crate."""
    defs = {}
    for rel in files:
        text = read_stripped(rel)
        inherent_spans = []
        for m in re.finditer(r"\bimpl\b", text):
            brace = text.find("{", m.end())
            semi = text.find(";", m.end())
            if brace < 0 or (0 <= semi < brace):
                continue
            header = text[m.end():brace]
            if re.search(r"\bfor\b", re.sub(r"<[^<>]*>", "", header)):
                continue  # `impl Trait for Type`
            inherent_spans.append((brace, match_brace(text, brace)))
        for m in re.finditer(r"\bfn\s+(" + IDENT + r")", text):
            inh = any(a <= m.start() < b for a, b in inherent_spans)
            defs.setdefault(m.group(1), []).append((rel, inh))
    return defs


def method_calls(rel, defs):
    """Files whose unique inherent method `rel` calls (see the heuristic above)."""
    text = read_stripped(rel)
    out = {}
    for m in re.finditer(r"\.\s*(" + IDENT + r")\s*(?:::\s*<[^()]*>\s*)?\(", text):
        name = m.group(1)
        d = defs.get(name, [])
        if name in COMMON_METHODS or len(d) != 1 or not d[0][1] or d[0][0] == rel:
            continue
        out.setdefault(d[0][0], set()).add(name)
    return out


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


def is_root_child(a, b):
    """`a` is a directory's module root (`d/mod.rs`) and `b` a file directly in `d`, or the
    other way round."""
    for root, child in ((a, b), (b, a)):
        if root.endswith("/mod.rs"):
            d = root[: -len("mod.rs")]
            rest = child[len(d):] if child.startswith(d) else None
            if rest and "/" not in rest:
                return True
    return False


def root_child_only(comp, graph):
    """Whether cycle `comp` is only a module root and its direct children (same directory,
    same layer) importing each other: every edge inside it joins the root and a child
    (CONVENTIONS.md: within a layer, through that layer's module root). A child-to-child edge,
    a grandchild or a file of another directory in the cycle makes it a real cycle."""
    roots = {f for f in comp if f.endswith("/mod.rs")}
    if len(roots) != 1 or len({layer_of(f) for f in comp}) != 1:
        return False
    return all(is_root_child(a, b) for a in comp for b in graph[a] if b in comp)


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


def main(argv=()):
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
        m = EXPORT_RE.search(read_stripped(f))
        if m:
            problems.append(f"{f}: has a #[{m.group(1)}] function outside {ENTRY_DIR}")
    # Methods (heuristic, see method_calls): a call to a method only a higher file defines.
    defs = method_defs(files)
    for f in files:
        lf = layer_of(f)
        if lf is None:
            continue
        for d, names in sorted(method_calls(f, defs).items()):
            ld = layer_of(d)
            if ld is not None and ld > lf:
                upward.append((f, d))
                problems.append(f"{f} ({LAYERS[lf][0]}) calls {', '.join(sorted(names))}, a method "
                                f"only {d} ({LAYERS[ld][0]}) defines: upward")
    cycles = sccs(graph)
    for c in cycles:
        if root_child_only(c, graph):
            continue
        edges = {(a, b) for a in c for b in graph[a] if b in c}
        inner = [f"{a}->{b}" for a, b in sorted(edges)]
        problems.append(f"import cycle of {len(c)} files: {' '.join(c)} (edges: {' '.join(inner)})")
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
    if "--graph" in argv:
        for f in files:
            print(f, "->", " ".join(sorted(graph[f])))
    if "--count" in argv:
        print(f"upward imports: {len(upward)}; cycles: {[len(c) for c in cycles]}")
        return 0
    if "--table" in argv:
        for name, pats in LAYERS:
            print(f"  {name:<14} | {' '.join(pats)}")
        return 0
    if problems:
        for p in problems:
            print("layers:", p)
        print(f"layers: FAILED ({len(upward)} upward imports, {len(cycles)} cycles)")
        return 1
    print(f"layers: ok ({len(files)} files, no upward import, no cycle but module root <-> "
          "child)")
    return 0


# --self-test: throwaway source trees, a clean one that must pass and one per evasion the check
# once missed, each of which must fail. Each plant is {file: text} over the clean tree.
CLEAN = {
    "ib_cm_rs.rs": "mod logic; mod error; mod cm_id; mod device; mod listen; mod timewait;\n"
                   "mod comm_id; mod conn; mod entry;\n",
    "logic/mod.rs": "pub mod timeout;\n",
    "logic/timeout.rs": "pub fn t() {}\n#[cfg(test)]\nmod tests {\n    use super::t;\n}\n",
    "error.rs": "use crate::logic::timeout::t;\n// crate::entry::abi::ib_x()\n"
                "pub fn e() { let _ = \"crate::entry::abi\"; let _ = '\"'; t() }\n",
    "cm_id.rs": "use crate::{device::Dev, listen::L};\npub struct CmId;\n"
                "impl CmId { pub fn only_here(&self) {} }\n",
    "device.rs": "use crate::{listen::L, timewait::T};\npub struct Dev<I>(I);\n",
    "listen.rs": "pub struct L;\n",
    "timewait.rs": "pub struct T;\n",
    "comm_id.rs": "use crate::cm_id::CmId;\npub fn c(id: &CmId) { id.only_here() }\n",
    "conn/mod.rs": "pub mod req;\npub mod deliver;\npub fn run() { req::on_req() }\n",
    "conn/req.rs": "use super::run;\npub fn on_req() { crate::comm_id::c(); }\npub fn h() {}\n",
    "conn/deliver.rs": "use crate::cm_id::CmId;\nimpl CmId { pub fn destroy_with(&self) {} }\n"
                       "pub fn d() {}\n",
    "entry/mod.rs": "pub mod abi;\n",
    "entry/abi.rs": "#[no_mangle]\npub extern \"C\" fn ib_x() { crate::conn::run(); }\n",
}
ERR = CLEAN["error.rs"]
# conn/req.rs -> conn/deliver.rs -> conn/mod.rs: with conn/mod.rs -> conn/req.rs, a cycle
# with a child-to-child edge (not the allowed root <-> child pattern).
LOOP = {
    "conn/req.rs": "pub fn on_req() {}\npub fn h() { crate::conn::deliver::d() }\n",
    "conn/deliver.rs": "use crate::cm_id::CmId;\nimpl CmId { pub fn destroy_with(&self) {} }\n"
                       "pub fn d() { super::run() }\n",
}
EVASIONS = [
    ("a) glob use", {"error.rs": ERR + "use crate::entry::*;\n"}),
    ("a) glob in a group", {"error.rs": ERR + "use crate::{conn::*};\n"}),
    ("a) glob then child name", {"error.rs": ERR + "use crate::*;\nfn g() { entry::abi::ib_x() }\n"}),
    ("a) use as alias", {"error.rs": ERR + "use crate::entry as z;\nfn g() { z::abi::ib_x() }\n"}),
    ("b) super::super", {"logic/timeout.rs": "pub fn t() { super::super::entry::abi::ib_x() }\n"}),
    ("c) // in a string", {"error.rs": ERR + "fn g() { c_str!(\"http://x\"); crate::conn::req::on_req() }\n"}),
    ("c) raw string", {"error.rs": ERR + "fn g() { f(r#\"a//\"#); crate::conn::run() }\n"}),
    ("d) unsafe(no_mangle)", {"error.rs": ERR + "#[unsafe(no_mangle)]\npub extern \"C\" fn x() {}\n"}),
    ("d) export_name", {"error.rs": ERR + "#[export_name = \"x\"]\npub extern \"C\" fn x() {}\n"}),
    ("d) unsafe(export_name)", {"error.rs": ERR + "#[unsafe(export_name = \"x\")]\nextern \"C\" fn x() {}\n"}),
    ("e) child path x::f()", dict(LOOP)),
    ("e) use of a child", dict(LOOP, **{"conn/mod.rs": "pub mod req;\npub mod deliver;\n"
                                        "use req::on_req;\npub fn run() { on_req() }\n"})),
    ("e) self::child", dict(LOOP, **{"conn/mod.rs": "pub mod req;\npub mod deliver;\n"
                                     "pub fn run() { self::req::on_req() }\n"})),
    ("f) method of a higher file", {"device.rs": CLEAN["device.rs"] +
                                    "fn z(id: &CmId) { id.destroy_with() }\n"}),
    ("g) super:: in inline mod", dict(LOOP, **{"conn/mod.rs": "pub mod req;\npub mod deliver;\n"
                                               "pub fn run() {}\n#[cfg(test)]\nmod tests {\n"
                                               "    fn t() { super::req::h() }\n}\n"})),
    ("upward use (control)", {"error.rs": ERR + "use crate::conn::run;\n"}),
    ("id/device cycle", {"device.rs": CLEAN["device.rs"] + "use crate::cm_id::CmId;\n"}),
    ("cycle (control)", {"comm_id.rs": CLEAN["comm_id.rs"] + "use crate::remote::R;\n",
                         "remote.rs": "use crate::comm_id::c;\npub struct R;\n"}),
]


def self_test():
    import contextlib
    import io
    import shutil
    import tempfile
    global TOP, SRC
    saved = (TOP, SRC)
    table = "".join(f"  {name:<14} | {' '.join(pats)}\n" for name, pats in LAYERS)
    design = "x\n=\n\nLayers\n======\n\n::\n\n" + table + "\nNext\n====\n"
    failures = []
    try:
        for name, plant in [("clean", {})] + EVASIONS:
            d = tempfile.mkdtemp(prefix="layers-selftest-")
            try:
                TOP, SRC = d, os.path.join(d, "src")
                os.makedirs(os.path.join(d, "Documentation"))
                with open(os.path.join(d, "Documentation", "design.rst"), "w") as f:
                    f.write(design)
                for rel, text in dict(CLEAN, **plant).items():
                    path = os.path.join(SRC, rel)
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "w") as f:
                        f.write(text)
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    rc = main()
                want = 0 if name == "clean" else 1
                verdict = "ok" if rc == want else "WRONG"
                print(f"layers self-test: {name}: {'passes' if rc == 0 else 'fails'} ... {verdict}")
                if rc != want:
                    failures.append(name)
                    print(out.getvalue().rstrip())
            finally:
                shutil.rmtree(d)
    finally:
        TOP, SRC = saved
    if failures:
        print(f"layers self-test: FAILED ({', '.join(failures)})")
        return 1
    print(f"layers self-test: ok ({len(EVASIONS)} evasions caught, clean tree passes)")
    return 0


if __name__ == "__main__":
    if "--self-test" in sys.argv:
        sys.exit(self_test())
    sys.exit(main(sys.argv[1:]))
