#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared settings for the project's scripts: cache location, toolchain, kernel make flags.
# Sourced by the other scripts; `scripts/lib.sh ktools` prints the kernel make variables
# for the top-level Makefile.

IBCM_CACHE=${IBCM_CACHE:-/var/cache/ib_cm-rs}
BINDGEN_VERSION=0.70.1
BINDGEN_BIN=$IBCM_CACHE/bindgen-$BINDGEN_VERSION/bin/bindgen
KTARBALL=/usr/src/linux-source-6.12.tar.xz

# rustup's rustc comes first in PATH and has no rust-src: name Debian's toolchain explicitly.
KTOOLS=(ARCH=x86_64 LLVM=1 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc HOSTRUSTC=/usr/bin/rustc
	CLIPPY_DRIVER=/usr/bin/clippy-driver
	BINDGEN="$BINDGEN_BIN" RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library)

die() { echo "error: $*" >&2; exit 1; }
log() { echo "[$(date +%T)] $*" >&2; }

# read_counts LINE: sets p and f from a `<WORD> <passed> <failed>` result line (in the caller's
# scope, locals included); fails unless both are counts.
read_counts() { read -r _ p f <<<"$1"; [[ $p =~ ^[0-9]+$ && $f =~ ^[0-9]+$ ]]; }

# The Debian package version of the kernel source, e.g. 6.12.117-1~deb12u1.
kernel_pkg_version() { dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null; }

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	case ${1:-} in
	ktools) printf '%s ' "${KTOOLS[@]}"; echo ;;
	cache) echo "$IBCM_CACHE" ;;
	*) die "usage: $0 ktools|cache" ;;
	esac
fi
