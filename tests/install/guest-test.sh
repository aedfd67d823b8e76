#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Boots the test kernel with a module tree as installed by `make install` or dkms and checks,
# inside the guest, that `modprobe rdma_cm` loads ib_cm-rs, rping listens through it and a
# client connects (tests/install/guest-init.sh). The image is the test initramfs
# (tests/build.sh) with a second cpio archive appended (the kernel unpacks both): the module
# tree, kmod and the init script.
# Nothing in tests/qemu/ changes: the guest is booted with rdinit=/install-init.sh.
#
#   guest-test.sh VARIANT KDIR NAME MODROOT    prints `RESULT <passed> <failed>` last
# The kernel is KDIR's bzImage ($BZIMAGE if set: kernel-deb-boot.sh boots a packaged kernel);
# the loaded ib_cm must have the taint $IBCM_GUEST_TAINT (default O, out of tree) and, if
# $IBCM_GUEST_VERSION is set, that version; IBCM_GUEST_EXPECT=intree expects the in-tree C
# ib_cm instead (after a removal);
# the base initramfs only brings userspace (busybox, rping, ip, their libraries), so one left
# by an earlier tests/build.sh of VARIANT is reused.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
top=$itop
variant=$1 kdir=$2 name=$3 modroot=$4
base=$top/out/$variant
out=$top/out/install
mkdir -p "$out"

if [[ ! -f $base/initramfs.cpio.gz ]]; then
	"$top/tests/build.sh" "$variant" >/dev/null || { notok "${name}_guest_image" "tests/build.sh failed"; result; exit; }
fi
[[ -d $modroot/lib/modules ]] || { notok "${name}_guest_image" "no module tree $modroot"; result; exit; }

extra=$(mktemp -d /tmp/ibcm-guest.XXXXXX)
trap 'rm -rf "$extra"' EXIT
mkdir -p "$extra"/{lib,usr/sbin}
cp -a "$modroot/lib/modules" "$extra/lib/"
cp /usr/bin/kmod "$extra/usr/sbin/kmod"
for t in modprobe modinfo lsmod; do ln -s kmod "$extra/usr/sbin/$t"; done
for lib in $(ldd /usr/bin/kmod | grep -oE '/[^ ]+\.so[^ ]*'); do
	mkdir -p "$extra$(dirname "$lib")"
	cp -L "$lib" "$extra$lib"
done
cp "$top/tests/install/guest-init.sh" "$extra/install-init.sh"
chmod +x "$extra/install-init.sh"
img=$out/initramfs-$name.cpio.gz
{ cat "$base/initramfs.cpio.gz"; (cd "$extra" && find . | cpio -o -H newc --quiet | gzip -1); } >"$img"

log=$out/guest-$name.log
start=$(date +%s)
KAPPEND="rdinit=/install-init.sh ibcm.install=$name ibcm.taint=${IBCM_GUEST_TAINT:-O}${IBCM_GUEST_EXPECT:+ ibcm.expect=$IBCM_GUEST_EXPECT}${IBCM_GUEST_VERSION:+ ibcm.version=$IBCM_GUEST_VERSION}" \
	"$top/tests/qemu/run.sh" "${BZIMAGE:-$kdir/arch/x86/boot/bzImage}" "$img" none install "$log" 300 ||
	notok "${name}_guest_boot" "QEMU failed or timed out (log: $log)"
res=$("$top/tests/qemu/parse.py" "$log")
sed '$d' <<<"$res" | sed 's/^/        /' >&2
read -r _ p f < <(tail -1 <<<"$res")
# A guest that printed no result at all did not run the check.
if ((p + f == 0)); then notok "${name}_guest_ran" "no results in $log"; fi
echo "        (${name} guest: $(($(date +%s) - start)) s)" >&2
npass=$((npass + p)) nfail=$((nfail + f))
result
