#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Builds what the QEMU layer needs for VARIANT (debug|release|latency) into out/VARIANT/:
# the test kernel (cached), ib_cm.ko (test build with the white-box KUnit suite), the
# conformance module, the soft IB HCA (tests/softib) and the initramfs.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/scripts/lib.sh"
variant=${1:-debug}
out=$top/out/$variant
mkdir -p "$out"

kdir=$("$top/scripts/kernel.sh" kdir "$variant")
read -r -a ktools <<<"$("$top/scripts/lib.sh" ktools)"

# Both builds go through clippy (CLIPPY=1) with the kernel lint set: any warning fails. The
# modules the tests load are then built as users build them, with rustc: clippy-driver also
# compiles, but with MIR optimisations off, a different module (about 9% more code, and
# slower; Documentation/testing.rst, "Benchmarks").
# A warning of either pass fails: rustc's and clippy's, objtool's (`...o: warning: objtool:`)
# and modpost's (`WARNING: modpost:`).
build_module() { # name log [make args...]
	local name=$1 mlog=$2 pass
	shift 2
	log "build: ib_cm.ko ($name: clippy, then rustc) against $kdir"
	for pass in CLIPPY=1 CLIPPY=; do
		make -s -C "$kdir" M="$top" "${ktools[@]}" "$pass" "$@" modules >"$mlog.$pass" 2>&1 ||
			{ cat "$mlog.$pass" >&2; die "module build failed ($pass)"; }
		cat "$mlog.$pass" >>"$mlog"
		! grep -E '(^|: )(warning|error)|^WARNING:' "$mlog.$pass" ||
			die "module build has warnings ($pass)"
		rm -f "$mlog.$pass"
	done
}
rm -f "$out/module-build-prod.log" "$out/module-build.log"
build_module "production build" "$out/module-build-prod.log"
cp "$top/ib_cm.ko" "$out/ib_cm-prod.ko"
build_module "test build, IBCM_KUNIT=1" "$out/module-build.log" IBCM_KUNIT=1
cp "$top/ib_cm.ko" "$out/ib_cm-kunit.ko"

log "build: conformance suite"
make -s -C "$kdir" M="$top/tests/kunit" "${ktools[@]}" modules >"$out/conformance-build.log" 2>&1 ||
	{ cat "$out/conformance-build.log" >&2; die "conformance module build failed"; }

log "build: softib (the soft InfiniBand HCA of the guest)"
make -s -C "$kdir" M="$top/tests/softib" "${ktools[@]}" modules >"$out/softib-build.log" 2>&1 ||
	{ cat "$out/softib-build.log" >&2; die "softib build failed"; }
! grep -E '(warning|error):' "$out/softib-build.log" || die "softib build has warnings"

log "build: cm_umad, cm_storm"
mkdir -p "$out/tools"
gcc -O2 -Wall -Wextra -Werror -o "$out/tools/cm_umad" "$top/tests/tools/cm_umad.c" ||
	die "cm_umad build failed"
gcc -O2 -Wall -Wextra -Werror -o "$out/tools/cm_storm" "$top/tests/tools/cm_storm.c" -lrdmacm ||
	die "cm_storm build failed (librdmacm-dev: scripts/deps.sh)"

log "build: initramfs"
"$top/tests/qemu/initramfs.sh" "$kdir" "$out/initramfs.cpio.gz" "$out/ib_cm-kunit.ko" \
	"$top/tests/kunit" "$out/tools" "$out/ib_cm-prod.ko" "$top/tests/softib/softib.ko"
cp "$kdir/arch/x86/boot/bzImage" "$out/bzImage"
cp "$kdir/System.map" "$out/System.map"
echo "$out"
