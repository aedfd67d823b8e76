#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The version of ib_cm-rs and the commit it was built from, for modinfo (Kbuild, version.c),
# dkms.conf's PACKAGE_VERSION and the Debian package (scripts/deb.sh).
#
#   scripts/version.sh                 the version, e.g. 0.9.0
#   scripts/version.sh --commit        the source commit (40 hex digits, "-dirty" if the work
#                                      tree has uncommitted changes to tracked files)
#   scripts/version.sh --write DIR     write both into DIR/.version (an exported source tree)
#
# Where they come from, first that applies:
#   1. a git work tree: `git describe` against the latest tag vX.Y.Z. On the tag: X.Y.Z; N
#      commits after it: X.Y.Z+N.gHASH (sorts after X.Y.Z for dpkg and dkms); no tag at all:
#      0.0.0+N.gHASH, N counting from the first commit.
#   2. the tree's .version: "VERSION COMMIT". In a `git archive` tarball git has filled it in
#      (.gitattributes: export-subst); `make deb` and the tests' tree copies write it.
#   3. neither (a tarball made without git): the newest released version of CHANGELOG.md with
#      "+unknown", and the commit "unknown".
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# git describe output (vX.Y.Z[-N-gHASH]) -> X.Y.Z[+N.gHASH]
from_describe() {
	local d=${1#v}
	if [[ $d =~ ^([0-9][0-9A-Za-z.~]*)-([0-9]+)-g([0-9a-f]+)$ ]]; then
		echo "${BASH_REMATCH[1]}+${BASH_REMATCH[2]}.g${BASH_REMATCH[3]}"
	else
		echo "$d"
	fi
}

in_git() { git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
	[[ $(git -C "$top" rev-parse --show-toplevel 2>/dev/null) == "$top" ]]; }

version() {
	local d n h v c
	if in_git; then
		if d=$(git -C "$top" describe --tags --match 'v[0-9]*' --abbrev=12 2>/dev/null); then
			from_describe "$d"
		else
			n=$(git -C "$top" rev-list --count HEAD) h=$(git -C "$top" rev-parse --short=12 HEAD)
			echo "0.0.0+$n.g$h"
		fi
		return
	fi
	if [[ -f $top/.version ]] && read -r v c <"$top/.version" && [[ $v != *'$Format'* && -n $v ]]; then
		if [[ $v =~ ^[0-9a-f]{40}$ && -z $c ]]; then
			# A `git archive` of an untagged commit: %(describe) is empty, the commit is there.
			echo "0.0.0+g${v:0:12}"
		else
			# git archive wrote `git describe` (vX.Y.Z[-N-gHASH]); make deb wrote the version.
			from_describe "$v"
		fi
		return
	fi
	v=$(sed -n 's/^## \[\([0-9][0-9A-Za-z.~+-]*\)\].*/\1/p' "$top/CHANGELOG.md" 2>/dev/null | head -1)
	echo "${v:-0.0.0}+unknown"
}

commit() {
	local v c
	if in_git; then
		c=$(git -C "$top" rev-parse HEAD)
		git -C "$top" diff --quiet HEAD -- 2>/dev/null || c+=-dirty
		echo "$c"
		return
	fi
	if [[ -f $top/.version ]] && read -r v c <"$top/.version" && [[ $v != *'$Format'* ]]; then
		# "VERSION COMMIT", or a git archive of an untagged commit: "COMMIT" alone.
		[[ -n $c ]] || c=$v
		[[ $c =~ ^[0-9a-f]{40}(-dirty)?$ ]] && { echo "$c"; return; }
	fi
	echo unknown
}

case ${1:-} in
"") version ;;
--commit) commit ;;
--write)
	[[ -d ${2:-} ]] || { echo "usage: $0 --write DIR" >&2; exit 2; }
	echo "$(version) $(commit)" >"$2/.version"
	;;
*) echo "usage: $0 [--commit | --write DIR]" >&2; exit 2 ;;
esac
