#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Install everything the build and the tests need on a Debian 12 machine.
# Idempotent: a second run with everything present does nothing but check. It never removes
# a package: apt-get runs with --no-remove and this script fails instead (installing
# qemu-system-x86 once made apt remove a newer qemu-utils that was already installed).
set -euo pipefail

PKGS=(linux-source-6.12 rustc-web rust-web-src clang lld llvm libclang-dev bc flex
      bison libelf-dev libssl-dev cpio qemu-system-x86 busybox-static rdmacm-utils
      ibverbs-utils ibverbs-providers iproute2 perftest xz-utils make python3
      python3-pyverbs rust-web-clippy gcc libc6-dev linux-libc-dev dkms linux-config-6.12 dwarves
      clang-19 lld-19 llvm-19 libclang1-19 lintian librdmacm-dev)
# librdmacm-dev builds tests/tools/cm_storm.c (the storm bench's connections without QPs).
# clang/lld/llvm 19 are make kernel-deb's compilers (scripts/lib.sh KDEB_LLVM): `make check`
# configures that kernel and builds ib_cm.ko against it. The test kernels use the default
# clang (14). lintian checks the package `make deb` builds.

# `scripts/deps.sh kernel-deb` (make kernel-deb) adds what bindeb-pkg runs: dpkg-buildpackage,
# debian/rules' dh_listpackages, the headers package's rsync, GNU time for the build's figures.
[[ ${1:-} != kernel-deb ]] || PKGS+=(dpkg-dev debhelper rsync kmod time)
# `scripts/deps.sh build`: only what building and installing ib_cm.ko against an installed
# kernel's headers needs (a machine with an HCA: no QEMU, no test tools, no kernel source).
PROFILE=${1:-all}
case $PROFILE in all | build | kernel-deb) ;; *) echo "usage: $0 [build|kernel-deb]" >&2; exit 1 ;; esac
# clang-19 for kernels made by make kernel-deb, the default clang for kernels built with it.
[[ $PROFILE != build ]] || PKGS=(rustc-web rust-web-src clang lld llvm libclang-dev make bc
	libelf-dev dwarves kmod xz-utils gcc libc6-dev dkms clang-19 lld-19 llvm-19 libclang1-19
	python3)  # make deb: scripts/deb-changelog.sh
# bindgen-cli is built with cargo: Debian's cargo-web (the version of rustc-web) if there is no
# cargo at all (this machine kind has rustup's).
# cargo-web depends on the rustc-web of its own version: pinned to the installed rustc-web, so
# that installing it never upgrades the rustc the kernels were built with (an upgraded one makes
# every Rust kernel refused; README.Debian says to hold it, and a hold makes apt refuse).
if ! command -v cargo >/dev/null; then
	rv=$(dpkg-query -W -f='${Version}' rustc-web 2>/dev/null || true)
	PKGS+=("cargo-web${rv:+=$rv}")
fi

CACHE=${IBCM_CACHE:-/var/cache/ib_cm-rs}
BINDGEN_VERSION=0.70.1

die() { echo "deps: error: $*" >&2; exit 1; }

# QEMU must match an installed qemu-utils: qemu-utils 10 (bookworm-backports) Breaks
# qemu-system-common << 8.0, so bookworm's qemu-system-x86 7.2 would make apt remove it. Such a
# machine gets the qemu-system-x86 of the same version, from bookworm-backports (its source is
# added, as /etc/apt/sources.list.d/ib_cm-rs-backports.sources, if apt has none offering it).
BPO_SOURCES=/etc/apt/sources.list.d/ib_cm-rs-backports.sources
qemu_matching_utils() {
	local qv cand
	[[ $(dpkg-query -W -f='${Status}' qemu-system-x86 2>/dev/null) != "install ok installed" ]] || return 0
	[[ $(dpkg-query -W -f='${Status}' qemu-utils 2>/dev/null) == "install ok installed" ]] || return 0
	qv=$(dpkg-query -W -f='${Version}' qemu-utils)
	cand=$(apt-cache policy qemu-system-x86 | sed -n 's/^ *Candidate: //p')
	[[ $cand != "$qv" ]] || return 0
	[[ $(id -u) == 0 ]] || die "qemu-system-x86 missing and not root"
	if ! apt-cache madison qemu-system-x86 | grep -qF "| $qv |"; then
		[[ $qv == *bpo12* ]] || die "qemu-utils $qv is installed and no apt source has qemu-system-x86 $qv; bookworm's $cand would remove it: install a matching qemu-system-x86 by hand"
		echo "deps: qemu-utils $qv is from bookworm-backports: adding $BPO_SOURCES"
		printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' 'Suites: bookworm-backports' \
			'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' > "$BPO_SOURCES"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq || die "apt-get update failed"
		apt-cache madison qemu-system-x86 | grep -qF "| $qv |" || die "bookworm-backports has no qemu-system-x86 $qv to match the installed qemu-utils"
	fi
	local rel=()
	[[ $qv != *bpo12* ]] || rel=(-t bookworm-backports) # its seabios is there too
	echo "deps: installing qemu-system-x86 $qv (the version of the installed qemu-utils)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends --no-remove \
		"${rel[@]}" "qemu-system-x86=$qv" "qemu-system-common=$qv" "qemu-system-data=$qv" ||
		die "installing qemu-system-x86 $qv failed"
}
[[ $PROFILE == build ]] || qemu_matching_utils
missing=()
for p in "${PKGS[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "${p%%=*}" 2>/dev/null || true)
	[[ $st == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]})); then
	[[ $(id -u) == 0 ]] || die "packages missing (${missing[*]}) and not root"
	echo "deps: installing ${missing[*]}"
	# linux-source-6.12 and rustc-web come from bookworm-security / bookworm-updates.
	DEBIAN_FRONTEND=noninteractive apt-get update -qq || die "apt-get update failed"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends --no-remove \
		"${missing[@]}"; then
		removals=$(apt-get install -s --no-install-recommends "${missing[@]}" 2>/dev/null | sed -n 's/^Remv \([^ ]*\).*/\1/p' | tr '\n' ' ')
		[[ -z $removals ]] || die "installing ${missing[*]} would remove installed packages ($removals); refused (--no-remove): install by hand, choosing what to keep"
		die "apt-get install failed for: ${missing[*]}"
	fi
fi

for p in "${PKGS[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "${p%%=*}" 2>/dev/null || true)
	[[ $st == "install ok installed" ]] || die "package $p is still not installed"
done

[[ $PROFILE == build || -f /usr/src/linux-source-6.12.tar.xz ]] || die "/usr/src/linux-source-6.12.tar.xz missing"
[[ -x /usr/bin/rustc ]] || die "/usr/bin/rustc (rustc-web) missing"
[[ -d /usr/lib/rustlib/src/rust/library ]] || die "rust-web-src library missing"

BG="$CACHE/bindgen-$BINDGEN_VERSION/bin/bindgen"
if [[ ! -x $BG ]] || ! "$BG" --version 2>/dev/null | grep -q "$BINDGEN_VERSION"; then
	command -v cargo >/dev/null || die "cargo not found (needed for bindgen-cli)"
	echo "deps: cargo install bindgen-cli $BINDGEN_VERSION"
	mkdir -p "$CACHE"
	cargo install --locked --quiet --root "$CACHE/bindgen-$BINDGEN_VERSION" \
		bindgen-cli --version "$BINDGEN_VERSION" || die "cargo install bindgen-cli failed"
fi
# bindgen-cli loads libclang at run time and, with no LIBCLANG_PATH, takes the newest one
# installed: with clang-19 (kernel-deb) that is libclang 19, which rejects clang 14's flags
# (-enable-trivial-auto-var-init-zero-knowing-it-will-be-removed-from-clang) when a module is
# built for a clang-14 kernel. The project's make, make install and DKMS pass LIBCLANG_PATH
# (scripts/lib.sh ktools KDIR); for anything else, e.g. a plain `make -C KDIR M=...`, bindgen
# is a wrapper that defaults it to the default clang's libclang, as before clang-19 came.
# The real binary is found next to the wrapper's own file, so a symlink to the wrapper or a
# call through PATH works too. An older wrapper is replaced.
[[ $(head -c4 "$BG" | od -An -c | tr -d ' ') != 177ELF ]] || mv "$BG" "$BG.real"
printf '%s\n' '#!/bin/sh' \
	'# scripts/deps.sh: the libclang of the default clang unless LIBCLANG_PATH names one.' \
	'm=$(clang --version 2>/dev/null | sed -n "1s/.*clang version \([0-9]*\)\..*/\1/p")' \
	'[ -n "${LIBCLANG_PATH:-}" ] || [ -z "$m" ] || export LIBCLANG_PATH=/usr/lib/llvm-$m/lib' \
	'exec "$(dirname "$(readlink -f "$0")")/bindgen.real" "$@"' >"$BG.new"
chmod 0755 "$BG.new"
if cmp -s "$BG.new" "$BG"; then rm -f "$BG.new"; else mv "$BG.new" "$BG"; fi
"$BG" --version >/dev/null || die "bindgen does not run"
echo "deps: ok"
