#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared settings for the project's scripts: cache location, toolchain, kernel make flags.
# Sourced by the other scripts; `scripts/lib.sh ktools [KDIR]` prints the kernel make variables
# for building against KDIR (default: a test kernel), `ktools-deb` those of `make kernel-deb`.

IBCM_CACHE=${IBCM_CACHE:-/var/cache/ib_cm-rs}
BINDGEN_VERSION=0.70.1
BINDGEN_BIN=$IBCM_CACHE/bindgen-$BINDGEN_VERSION/bin/bindgen
KTARBALL=/usr/src/linux-source-6.12.tar.xz

# The LLVM of `make kernel-deb` (clang/lld/llvm-19, Debian 12's newest): it has every CPU
# mitigation Debian's gcc build has (return thunks, SRSO, SLS, ITS, call depth tracking), which
# the default clang (14) lacks. The test kernels stay on the default clang (README, install
# guide: "Why only kernel-deb uses clang 19").
KDEB_LLVM=19

# The major version of the default clang (/usr/bin/clang: 14 on Debian 12); empty without one.
default_clang_major() { clang --version 2>/dev/null | sed -n '1s/.*clang version \([0-9]*\)\..*/\1/p'; }

# bindgen-cli loads libclang at run time and, left alone, takes the newest one installed
# (clang-sys): with clang-19 installed that would no longer be the libclang of the clang the
# kernel is built with. LIBCLANG_PATH names the matching one.
libclang_dir() { echo "/usr/lib/llvm-$1/lib"; }

# rustup's rustc comes first in PATH and has no rust-src: name Debian's toolchain explicitly.
KTOOLS=(ARCH=x86_64 LLVM=1 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc HOSTRUSTC=/usr/bin/rustc
	CLIPPY_DRIVER=/usr/bin/clippy-driver
	BINDGEN="$BINDGEN_BIN" RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library)
_m=$(default_clang_major)
[[ -z $_m ]] || KTOOLS+=(LIBCLANG_PATH="$(libclang_dir "$_m")")
# The same with the LLVM of kernel-deb: LLVM=-19 makes the kernel call clang-19, ld.lld-19,
# llvm-ar-19, ... (HOSTCC too).
KTOOLS_DEB=("${KTOOLS[@]/#LLVM=1/LLVM=-$KDEB_LLVM}")
KTOOLS_DEB=("${KTOOLS_DEB[@]/#LIBCLANG_PATH=*/LIBCLANG_PATH=$(libclang_dir "$KDEB_LLVM")}")
[[ -n $_m ]] || KTOOLS_DEB+=(LIBCLANG_PATH="$(libclang_dir "$KDEB_LLVM")")

# The configuration file of a configured kernel tree: its .config, or, in a headers package
# made by bindeb-pkg (which ships no .config), include/config/auto.conf; empty for neither.
kdir_config() {
	local c
	for c in "$1/.config" "$1/include/config/auto.conf"; do
		[[ -f $c ]] && { echo "$c"; return; }
	done
}

# The clang major version a configured kernel tree was built with (CONFIG_CC_VERSION_TEXT:
# quoted in .config, unquoted in auto.conf since 5.16); empty for gcc or an unconfigured tree.
kdir_clang_major() {
	local c
	c=$(kdir_config "$1")
	[[ -n $c ]] || return 0
	sed -n 's/^CONFIG_CC_VERSION_TEXT="\{0,1\}.*clang version \([0-9][0-9]*\)\..*/\1/p' "$c" | head -1
}

# ktools_for [KDIR]: the kernel make variables for building against KDIR with the compilers
# it was built with: the default clang's, or LLVM=-N (and libclang N) for a tree built with
# clang-N such as kernel-deb's.
ktools_for() {
	local m
	m=$( [[ -n ${1:-} ]] && kdir_clang_major "$1")
	if [[ -n $m && $m != "$_m" ]]; then
		local t=("${KTOOLS[@]/#LLVM=1/LLVM=-$m}")
		t=("${t[@]/#LIBCLANG_PATH=*/LIBCLANG_PATH=$(libclang_dir "$m")}")
		[[ -n $_m ]] || t+=(LIBCLANG_PATH="$(libclang_dir "$m")")
		printf '%s ' "${t[@]}"
	else
		printf '%s ' "${KTOOLS[@]}"
	fi
	echo
}

die() { echo "error: $*" >&2; exit 1; }
log() { echo "[$(date +%T)] $*" >&2; }

# read_counts LINE: sets p and f from a `<WORD> <passed> <failed>` result line (in the caller's
# scope, locals included); fails unless both are counts.
read_counts() { read -r _ p f <<<"$1"; [[ $p =~ ^[0-9]+$ && $f =~ ^[0-9]+$ ]]; }

# retry_note REPORT: one `NOTE:` line saying how many guest boots the harness retried (a
# guest that died before its init: tests/qemu/run.sh, run-pair.sh), then each retry, from
# parse.py's RETRY lines in REPORT; nothing if there were none. A retry is neither a pass nor a
# failure, but it must show next to the summary, not only deep in the layer's output.
retry_note() {
	local n
	n=$(grep -c '^RETRY' "$1" 2>/dev/null)
	((${n:-0} > 0)) || return 0
	echo "NOTE: $n guest boot(s) retried after dying before their init ran:"
	grep '^RETRY' "$1" | sed 's/^RETRY *//; s/^/  /'
}

# The Debian package version of the kernel source, e.g. 6.12.117-1~deb12u1.
kernel_pkg_version() { dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null; }

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	case ${1:-} in
	ktools) ktools_for "${2:-}" ;;
	ktools-deb) printf '%s ' "${KTOOLS_DEB[@]}"; echo ;;
	cache) echo "$IBCM_CACHE" ;;
	*) die "usage: $0 ktools [KDIR] | ktools-deb | cache" ;;
	esac
fi
