#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Build (once) and locate the cached test kernel.
#
#   scripts/kernel.sh kdir [debug|release|latency]   build if needed, print the build directory
#   scripts/kernel.sh key  [debug|release|latency]   print the cache key only
#
# The source tree is extracted once per Debian package version; each variant is built out of
# tree (O=) into a directory keyed by package version, variant and a hash of the config
# fragments and the toolchain, so a second run reuses it and a changed fragment rebuilds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

cmd=${1:-kdir}
variant=${2:-debug}
frags=("$top/tests/qemu/kernel.config")
case $variant in
debug) frags+=("$top/tests/qemu/kernel-debug.config") ;;
release) frags+=("$top/tests/qemu/kernel-release.config") ;;
latency) frags+=("$top/tests/qemu/kernel-release.config" "$top/tests/qemu/kernel-latency.config") ;;
*) die "unknown kernel variant '$variant' (debug, release or latency)" ;;
esac

ver=$(kernel_pkg_version) || true
[[ -n $ver ]] || die "linux-source-6.12 is not installed (run scripts/deps.sh)"
[[ -x $BINDGEN_BIN ]] || die "bindgen not found at $BINDGEN_BIN (run scripts/deps.sh)"
hash=$( { cat "${frags[@]}"; /usr/bin/rustc --version; clang --version | head -1;
	  "$BINDGEN_BIN" --version; } | sha256sum | cut -c1-12)
key="$ver-$variant-$hash"
src="$IBCM_CACHE/src/linux-$ver"
build="$IBCM_CACHE/build/$key"

if [[ $cmd == key ]]; then echo "$key"; exit 0; fi
[[ $cmd == kdir ]] || die "usage: $0 kdir|key [debug|release]"

if [[ -f $build/.ibcm-built ]]; then echo "$build"; exit 0; fi

mkdir -p "$IBCM_CACHE/src" "$IBCM_CACHE/build"
exec 9>"$IBCM_CACHE/.kernel.lock"
flock 9
if [[ -f $build/.ibcm-built ]]; then echo "$build"; exit 0; fi

if [[ ! -f $src/.ibcm-extracted ]]; then
	log "kernel: extracting $KTARBALL"
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -C "$src.tmp" -xf "$KTARBALL" || die "cannot extract $KTARBALL"
	mv "$src.tmp"/linux-source-6.12 "$src" || die "unexpected layout in $KTARBALL"
	rmdir "$src.tmp"
	touch "$src/.ibcm-extracted"
fi

rm -rf "$build"
mkdir -p "$build"
blog="$build/build.log"
kmake() { make -C "$src" O="$build" "${KTOOLS[@]}" "$@"; }

log "kernel: configuring $key"
{
	kmake tinyconfig
	"$src/scripts/kconfig/merge_config.sh" -m -O "$build" "$build/.config" "${frags[@]}"
	kmake olddefconfig
} >"$blog" 2>&1 || { tail -30 "$blog" >&2; die "kernel configuration failed (log: $blog)"; }

# Every fragment line must have survived olddefconfig, or the kernel is not what we test.
bad=0
for f in "${frags[@]}"; do
	while IFS= read -r line; do
		if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
			grep -qxF "$line" "$build/.config" || { echo "config: $line did not survive (have: $(grep "^${BASH_REMATCH[1]}=" "$build/.config" || echo unset))" >&2; bad=1; }
		elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
			! grep -q "^${BASH_REMATCH[1]}=" "$build/.config" || { echo "config: ${BASH_REMATCH[1]} should be unset" >&2; bad=1; }
		fi
	done <"$f"
done
((bad == 0)) || die "kernel config fragment not honoured (see above)"

kmake rustavailable >>"$blog" 2>&1 || { tail -20 "$blog" >&2; die "Rust toolchain not usable for this kernel (make rustavailable)"; }

log "kernel: building $key (a few minutes; log: $blog)"
kmake -j"$(nproc)" bzImage modules >>"$blog" 2>&1 || { tail -40 "$blog" >&2; die "kernel build failed (log: $blog)"; }
for m in drivers/infiniband/core/ib_cm.ko drivers/infiniband/sw/rxe/rdma_rxe.ko; do
	[[ -f $build/$m ]] || die "kernel build did not produce $m"
done
touch "$build/.ibcm-built"
log "kernel: done"
echo "$build"
