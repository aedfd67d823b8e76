#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# INSTALL layer: building and installing on a real machine, tested against the cached test
# kernel, Debian's own linux-headers and scratch module trees (nothing on the host changes):
#   tests/install/check-kdir-test.sh   build preflight (Makefile, Kbuild guard) on good and bad trees
#   tests/install/install-test.sh      make install / uninstall, modprobe resolution
#   tests/install/dkms-check.sh        dkms add / build / install / remove (`make dkms-check`)
#   tests/install/kernel-deb-test.sh   `make kernel-deb` configuration step, headers with rust/
#   tests/install/guest-test.sh        QEMU: modprobe rdma_cm loads ib_cm-rs (make install's and
#                                      dkms's module trees), rping listens through it
#   tests/install/deb-test.sh          `make deb`'s ib-cm-rs-dkms package: built (git tree,
#                                      tarball), lintian, dpkg into a throwaway root (dkms builds
#                                      ours), QEMU (modprobe rdma_cm, rping), purge (in-tree back)
# Prints each result and `INSTALL <passed> <failed>` last.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/scripts/lib.sh"
variant=${1:-debug}
out=$top/out/install
mkdir -p "$out"
start=$(date +%s)
kdir=$("$top/scripts/kernel.sh" kdir "$variant") || { echo "INSTALL 0 1"; exit 1; }

passed=0 failed=0
layer() {
	local name=$1 s=$(date +%s) res p f
	shift
	log "install: $name"
	res=$("$@" | tail -1)
	if ! read_counts "$res"; then
		echo "NOT OK  install: $name # no result line" >&2
		p=0 f=1
	fi
	passed=$((passed + p)) failed=$((failed + f))
	echo "        ($name: $p passed, $f failed, $(($(date +%s) - s)) s)" >&2
}
layer preflight "$top/tests/install/check-kdir-test.sh" "$kdir"
layer make-install "$top/tests/install/install-test.sh" "$kdir" "$out"
layer dkms "$top/tests/install/dkms-check.sh" "$kdir" "$out"
layer kernel-deb "$top/tests/install/kernel-deb-test.sh" "$kdir"
layer guest-make-install "$top/tests/install/guest-test.sh" "$variant" "$kdir" make-install "$out/modroot-install"
layer guest-dkms "$top/tests/install/guest-test.sh" "$variant" "$kdir" dkms "$out/modroot-dkms"
layer deb "$top/tests/install/deb-test.sh" "$variant" "$kdir" "$out"
log "install: $passed passed, $failed failed, $(($(date +%s) - start)) s"
echo "INSTALL $passed $failed"
