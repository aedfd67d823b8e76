#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The version of ib_cm-rs and the commit it was built from, for modinfo (Kbuild, version.c),
# dkms.conf's PACKAGE_VERSION and the Debian package (scripts/deb.sh).
#
#   scripts/version.sh                 the version, e.g. 0.9.0 (0.9.0+0.gHASH.dirty with
#                                      uncommitted changes)
#   scripts/version.sh --commit        the source commit (40 hex digits, "-dirty" if the work
#                                      tree has uncommitted changes to tracked files)
#   scripts/version.sh --write DIR     write both into DIR/.version (an exported source tree)
#
# Where they come from, first that applies:
#   1. a git work tree (a .git in this directory): `git describe` against the latest tag
#      vX.Y.Z. On the tag: X.Y.Z; N commits after it: X.Y.Z+N.gHASH (sorts after X.Y.Z for dpkg
#      and dkms); no tag at all: 0.0.0~gHASH (below every release). A pre-release tag
#      vX.Y.Z-rc1 gives X.Y.Z~rc1, which sorts below X.Y.Z.
#      Uncommitted changes to tracked files add ".dirty" to the long form: X.Y.Z+N.gHASH.dirty,
#      on the tag itself X.Y.Z+0.gHASH.dirty, untagged 0.0.0~gHASH.dirty. For dpkg (and dkms)
#      such a build sorts just above its commit's clean build and below the next commit's:
#      X.Y.Z < X.Y.Z+0.gA.dirty < X.Y.Z+1.gB < X.Y.Z+1.gB.dirty < X.Y.Z+2.gC (a bare "+dirty"
#      on X.Y.Z would sort above every later X.Y.Z+N.gHASH).
#   2. the tree's .version: "VERSION COMMIT". In a `git archive` tarball git has filled it in
#      (.gitattributes: export-subst); `make deb` and the tests' tree copies write it. A tarball
#      of an untagged commit gives 0.0.0~gHASH, as git does.
#   3. a tree named ib-cm-rs-VERSION (dkms's copy in /usr/src: `dkms add .` copies the files
#      but not the dot files, so neither .git nor .version) or dkms's .../ib-cm-rs/VERSION/build:
#      VERSION, the one dkms registered (the commit is then "unknown").
#   4. none of these (a tarball made without git): the newest released version of CHANGELOG.md
#      with "~unknown" (below that release and every build from git), and the commit "unknown".
# A .git that git cannot read (not a repository, or owned by another user: safe.directory is
# allowed for this tree only) is an error, not a silent "unknown".
set -uo pipefail
# -P: git reports the top level with symlinks resolved; compare like with like.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)

g() { git -c safe.directory="$top" -C "$top" "$@"; }

# git describe output (vX.Y.Z[-pre][-N-gHASH]) -> X.Y.Z[~pre][+N.gHASH]
from_describe() {
	local d=${1#v}
	if [[ $d =~ ^([0-9][0-9A-Za-z.~-]*)-([0-9]+)-g([0-9a-f]+)$ ]]; then
		local t=${BASH_REMATCH[1]}
		echo "${t//-/\~}+${BASH_REMATCH[2]}.g${BASH_REMATCH[3]}"
	else
		echo "${d//-/\~}"
	fi
}

in_git() {
	[[ -e $top/.git ]] || return 1
	local t
	if ! t=$(g rev-parse --show-toplevel 2>&1) || [[ $t != "$top" ]]; then
		echo "version.sh: error: $top/.git is there but git cannot read it ($t)" >&2
		exit 1
	fi
}

# Uncommitted changes to tracked files (untracked files do not count).
dirty() { ! g diff --quiet HEAD -- 2>/dev/null; }

version() {
	local d v c long= sfx=
	if in_git; then
		dirty && long=--long sfx=.dirty
		if d=$(g describe --tags --match 'v[0-9]*' --abbrev=12 $long 2>/dev/null); then
			echo "$(from_describe "$d")$sfx"
		else
			echo "0.0.0~g$(g rev-parse --short=12 HEAD)$sfx"
		fi
		return
	fi
	if [[ -f $top/.version ]] && read -r v c <"$top/.version" && [[ $v != *'$Format'* && -n $v ]]; then
		if [[ $v =~ ^[0-9a-f]{40}$ && -z $c ]]; then
			# A `git archive` of an untagged commit: %(describe) is empty, the commit is there.
			echo "0.0.0~g${v:0:12}"
		else
			# git archive wrote `git describe` (vX.Y.Z[-N-gHASH]); make deb wrote the version.
			from_describe "$v"
		fi
		return
	fi
	if [[ $(basename "$top") =~ ^ib-cm-rs-([0-9][0-9A-Za-z.+~]*)$ ||
		$top =~ /ib-cm-rs/([0-9][0-9A-Za-z.+~]*)/build$ ]]; then
		echo "${BASH_REMATCH[1]}"
		return
	fi
	v=$(sed -n 's/^## \[\([0-9][0-9A-Za-z.~+-]*\)\].*/\1/p' "$top/CHANGELOG.md" 2>/dev/null | head -1)
	echo "${v:-0.0.0}~unknown"
}

commit() {
	local v c
	if in_git; then
		c=$(g rev-parse HEAD)
		dirty && c+=-dirty
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
	v=$(version) && c=$(commit) || exit 1
	echo "$v $c" >"$2/.version"
	;;
*) echo "usage: $0 [--commit | --write DIR]" >&2; exit 2 ;;
esac
