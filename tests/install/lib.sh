#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared by the INSTALL layer's scripts (tests/install/*.sh): result counting and helpers.
# Each script reports `ok NAME` / `not ok NAME # why` on stderr and ends with
# `RESULT <passed> <failed>` on stdout; tests/run-install.sh adds them up.

itop=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../scripts/lib.sh
source "$itop/scripts/lib.sh"

npass=0
nfail=0
ok() { echo "ok      install: $*" >&2; npass=$((npass + 1)); }
notok() { echo "NOT OK  install: $1${2:+ # $2}" >&2; nfail=$((nfail + 1)); }
# check NAME CONDITION-COMMAND...: ok if the command succeeds.
check() {
	local name=$1
	shift
	if "$@" >&2; then ok "$name"; else notok "$name" "${WHY:-failed: $*}"; fi
	WHY=
}
result() { echo "RESULT $npass $nfail"; }

# tree_copy DIR: the module's sources as git has them, uncommitted files included, no build
# outputs, copied into DIR (made if needed), with .version filled in as in a release tarball
# (the copy has no .git for scripts/version.sh to ask).
tree_copy() {
	mkdir -p "$1"
	(cd "$itop" && git ls-files -co --exclude-standard -z | tar --null -T - -c 2>/dev/null) | tar -x -C "$1"
	"$itop/scripts/version.sh" --write "$1"
}

# The kernel release of a build directory.
release_of() { cat "$1/include/config/kernel.release"; }

# Debian's own linux-headers for the linux-source-6.12 version, unpacked (not installed) under
# $IBCM_CACHE/debian-headers/; prints the -amd64 directory. The .debs are fetched once with
# apt-get download into $IBCM_CACHE/debs. The -amd64 Makefile includes the -common tree by its
# absolute /usr/src path, which is not there: fine for the preflight, which refuses the tree
# on its configuration before it looks at any header.
debian_headers() {
	local ver up name dir
	ver=$(kernel_pkg_version) || return 1
	up=${ver%%-*}
	name=linux-headers-$up+deb12-amd64
	dir=$IBCM_CACHE/debian-headers/$ver
	if [[ ! -f $dir/.unpacked ]]; then
		mkdir -p "$IBCM_CACHE/debs" "$dir" || return 1
		# A machine whose package lists are older than linux-source-6.12 needs them refreshed.
		(cd "$IBCM_CACHE/debs" && ls "$name"_*.deb >/dev/null 2>&1 ||
			apt-get download -qq "$name=$ver" 2>/dev/null ||
			{ apt-get update -qq && apt-get download -qq "$name=$ver" 2>/dev/null; }) || return 1
		dpkg-deb -x "$(ls "$IBCM_CACHE/debs/$name"_*.deb | head -1)" "$dir" || return 1
		touch "$dir/.unpacked"
	fi
	echo "$dir/usr/src/$name"
}

# head_version: scripts/version.sh of HEAD as committed (what `git archive HEAD` gives): the
# work tree's uncommitted changes, which add ".dirty", do not count.
head_version() {
	local d v
	d=$(mktemp -d /tmp/ibcm-head.XXXXXX) || return 1
	git clone -q --no-checkout "$itop" "$d/c" 2>/dev/null &&
		git -C "$d/c" checkout -q "$(git -C "$itop" rev-parse HEAD)" 2>/dev/null &&
		v=$("$d/c/scripts/version.sh")
	rm -rf "$d"
	[[ -n ${v:-} ]] && echo "$v"
}
