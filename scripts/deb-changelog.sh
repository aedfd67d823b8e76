#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The Debian changelog of ib-cm-rs-dkms (a native package: /usr/share/doc/.../changelog.gz),
# made from CHANGELOG.md: one entry per released version, its text as bullets.
#
#   deb-changelog.sh CHANGELOG.md VERSION COMMIT "MAINTAINER <EMAIL>"
#
# A VERSION that is no release of CHANGELOG.md (a build after a tag, X.Y.Z+N.gHASH) gets an
# entry of its own on top, naming its commit and its date (the commit's, in a git tree).
set -euo pipefail
md=$1 ver=$2 commit=$3 maint=$4
here=$(cd "$(dirname "$0")" && pwd)
snapdate=
if [[ -n $(git -C "$here/.." rev-parse --git-dir 2>/dev/null) && $commit =~ ^[0-9a-f]{40} ]]; then
	snapdate=$(git -C "$here/.." log -1 --format=%cD "${commit%-dirty}" 2>/dev/null || true)
fi
python3 - "$md" "$ver" "$commit" "$maint" "${snapdate:-$(date -R)}" <<'EOF'
import re, sys, textwrap, email.utils, datetime
md, ver, commit, maint, snapdate = sys.argv[1:]
releases = []  # (version, date, [(level, text)])
cur = None
para = []
def flush_para():
    global para
    if cur is not None and para:
        cur[2].append((0, " ".join(para)))
    para = []
for line in open(md, encoding="utf-8"):
    line = line.rstrip("\n")
    m = re.match(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?", line)
    if m:
        flush_para()
        cur = None
        if m.group(1) != "Unreleased" and m.group(2):
            cur = (m.group(1), m.group(2), [])
            releases.append(cur)
        continue
    if cur is None:
        continue
    m = re.match(r"^### (.*)", line)
    if m:
        flush_para()
        cur[2].append((0, m.group(1) + ":"))
        continue
    m = re.match(r"^- (.*)", line)
    if m:
        flush_para()
        cur[2].append((1, m.group(1)))
        continue
    if line.startswith("  ") and cur[2] and cur[2][-1][0] == 1 and not para:
        lvl, text = cur[2][-1]
        cur[2][-1] = (lvl, text + " " + line.strip())
        continue
    if line.strip():
        para.append(line.strip())
    else:
        flush_para()
flush_para()

def entry(version, items, date):
    out = [f"ib-cm-rs ({version}) unstable; urgency=medium", ""]
    for lvl, text in items:
        if lvl == 0:
            out += textwrap.wrap(text, 78, initial_indent="  * ", subsequent_indent="    ", break_on_hyphens=False)
        else:
            out += textwrap.wrap(text, 78, initial_indent="    - ", subsequent_indent="      ", break_on_hyphens=False)
    out += ["", f" -- {maint}  {date}", ""]
    return "\n".join(out)

def rfc2822(day):
    d = datetime.datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc)
    return email.utils.format_datetime(d)

import subprocess
def le(a, b):
    return subprocess.run(["dpkg", "--compare-versions", a, "le", b]).returncode == 0

parts = []
if ver not in [r[0] for r in releases]:
    # A build after tag X.Y.Z (X.Y.Z+N.gHASH), with no tag (0.0.0~gHASH) or from a tree without
    # git or .version (X.Y.Z~unknown): an entry of its own, above the releases it comes after.
    m = re.match(r"^(.*)\+(\d+)\.g([0-9a-f]+)$", ver)
    u = re.match(r"^(.*)~unknown$", ver)
    if m:
        text = f"Development build of commit {commit}, {m.group(2)} commits after {m.group(1)}."
    elif u:
        text = (f"Build of a source tree without git or .version: its commit is unknown; "
                f"the newest release in its CHANGELOG.md is {u.group(1)}.")
    else:
        text = f"Development build of commit {commit}, before any tagged release."
    releases = [r for r in releases if le(r[0], ver)]
    when = email.utils.parsedate_to_datetime(snapdate)
    if releases:
        # dpkg and lintian want each entry newer than the one below it.
        rel = datetime.datetime.strptime(releases[0][1], "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc)
        when = max(when, rel + datetime.timedelta(hours=1))
    parts.append(entry(ver, [(0, text), (0, "What changed since: git log of the source tree.")],
                       email.utils.format_datetime(when)))
for v, d, items in releases:
    parts.append(entry(v, items, rfc2822(d)))
sys.stdout.write("\n".join(parts))
EOF
