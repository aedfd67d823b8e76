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

# scratch_dpkg_root ROOT: an empty dpkg database and empty source, dkms and module trees under
# ROOT, for a package installed there with dpkg_in and looked at with dkms_status_in.
scratch_dpkg_root() {
	mkdir -p "$1/var/lib/dpkg/info" "$1/var/lib/dpkg/updates" "$1/var/lib/dkms" "$1/usr/src" "$1/lib/modules"
	touch "$1/var/lib/dpkg/status"
}
# dpkg_in ROOT ARGS...: dpkg on ROOT's database; the maintainer scripts run from the host with
# DPKG_ROOT=ROOT (scripts/dkms-pkg.sh looks up its trees under it).
dpkg_in() {
	local r=$1
	shift
	dpkg --root="$r" --force-script-chrootless --force-depends --force-not-root "$@"
}
# dkms_status_in ROOT ARGS...: `dkms status ARGS` on ROOT's source, dkms and module trees.
dkms_status_in() {
	local r=$1
	shift
	dkms status "$@" --sourcetree "$r/usr/src" --dkmstree "$r/var/lib/dkms" --installtree "$r/lib/modules"
}

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

# skip NAME REASON: a check that cannot run here. Counted neither as passed nor as failed.
skip() { echo "skipped install: $1 # skipped: $2" >&2; }

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

# --- keeping the host's dkms, /usr/src and /lib/modules out of reach ---
# The trees dkms, dpkg's maintainer scripts and the kernel hooks write to by default.
host_trees=(/var/lib/dkms /usr/src /lib/modules)

# What is in them: every entry with its type, size and modification time (an absent tree is
# listed as absent), to compare before and after a test.
host_trees_listing() {
	local p
	for p in "${host_trees[@]}"; do
		if [[ -e $p ]]; then
			find "$p" -printf '%p %y %s %T@\n' 2>/dev/null | LC_ALL=C sort
		else
			echo "$p absent"
		fi
	done
}

# scratch_mount P BASE: in this (private) mount namespace, make P an empty tmpfs. A P that
# does not exist (/lib/modules on a machine with no kernel package) is made in an overlay of
# its nearest existing parent, upper layer under BASE, so the host never sees it.
scratch_mount() {
	local p a o
	p=$(realpath -m "$1")
	if [[ ! -d $p ]]; then
		a=$(dirname "$p")
		while [[ ! -d $a ]]; do a=$(dirname "$a"); done
		o=$(mktemp -d "$2/ovl.XXXXXX") && mkdir "$o/u" "$o/w" &&
			mount -t overlay overlay -o "lowerdir=$a,upperdir=$o/u,workdir=$o/w" "$a" &&
			mkdir -p "$p" || return 1
	fi
	mount -t tmpfs -o mode=0755 ibcm-scratch "$p"
}

# isolate_host NAME "$@", right after sourcing this file: runs the calling script ("$0" "$@")
# again in a private mount namespace (unshare -m) where /var/lib/dkms, /usr/src and
# /lib/modules are empty scratch trees, so neither dkms (whatever --dkmstree says, its signing
# step writes to /var/lib/dkms), nor a maintainer script, nor a kernel hook can change the
# host's. The inner run leaves a probe file in each; outside, NAME_left_host_untouched
# compares the host's listing before and after (a probe showing up on the host means the
# isolation failed) and is added to the inner run's result, which this prints and exits with.
# In the inner run (and in the scripts it calls, same namespace) it just returns.
isolate_host() {
	local tag=$1 ns base before after res p f q
	shift
	ns=$(readlink /proc/self/ns/mnt)
	[[ ${IBCM_ISOLATED:-} == "$ns" ]] && return 0
	if [[ ${IBCM_ISOLATED:-} == setup:* ]]; then
		base=${IBCM_ISOLATED#setup:}
		for p in "${host_trees[@]}"; do
			scratch_mount "$p" "$base" || { notok "${tag}_isolation" "cannot mount a scratch $p"; result; exit 1; }
			: >"$p/.ibcm-isolation-probe"
		done
		export IBCM_ISOLATED=$ns
		return 0
	fi
	if ! command -v unshare >/dev/null || ! unshare -m true 2>/dev/null; then
		notok "${tag}_isolation" "unshare -m (util-linux, as root) is needed to keep dkms off the host's trees"
		result
		exit 1
	fi
	base=$(mktemp -d /tmp/ibcm-isolate.XXXXXX)
	before=$(host_trees_listing)
	res=$(IBCM_ISOLATED=setup:$base unshare -m --propagation private bash "$0" "$@" | tail -1)
	after=$(host_trees_listing)
	rm -rf "$base"
	read_counts "$res" || { p=0 f=1; notok "$tag" "no result line from the isolated run"; }
	npass=$((npass + p)) nfail=$((nfail + f))
	WHY="the host's trees changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -8 | tr '\n' ' ')" \
		check "${tag}_left_host_untouched ($(grep -c . <<<"$before") entries in ${host_trees[*]})" \
		test "$before" = "$after"
	# A probe that got out: take it back (only these files, made by the inner run).
	for q in "${host_trees[@]}"; do
		[[ ! -f $q/.ibcm-isolation-probe ]] || grep -q "^$q/.ibcm-isolation-probe " <<<"$before" ||
			rm -f "$q/.ibcm-isolation-probe"
	done
	result
	exit
}

# thunk_check NAME KO KCONFIG: NAME passes if KO has the return thunks and retpolines KCONFIG's
# mitigations demand (tests/install/thunk-check.sh); skipped where KCONFIG demands neither.
thunk_check() {
	local out rc
	out=$("$itop/tests/install/thunk-check.sh" "$2" "$3" 2>&1)
	rc=$?
	case $rc in
	0) ok "$1 ($out)" ;;
	77) skip "$1" "$out" ;;
	*) notok "$1" "$(tr '\n' ' ' <<<"$out")" ;;
	esac
}
