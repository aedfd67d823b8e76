#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make install` / `make uninstall`: put the built ib_cm.ko where modprobe prefers it over the
# in-tree module, or take it away again.
#
#   scripts/install.sh install KDIR      ib_cm.ko (built for KDIR) -> <root>/lib/modules/<release>/updates/
#   scripts/install.sh uninstall [KDIR]  remove it (release from KDIR, or from $KERNELRELEASE)
#
# <root> is $INSTALL_MOD_PATH (default /, which needs root). The copy is made by the kernel's
# own modules_install (INSTALL_MOD_DIR=updates), so INSTALL_MOD_STRIP, module signing with the
# tree's key and CONFIG_MODULE_COMPRESS_* apply as to any module of that kernel; then depmod
# runs (with -b <root>) whether or not the tree has a System.map. depmod searches updates/
# before the kernel's own directory, so `modprobe ib_cm` (and rdma_cm's dependency on it)
# resolves to ours while the in-tree ib_cm.ko stays untouched.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

cmd=${1:-}
kdir=${2:-}
root=${INSTALL_MOD_PATH:-}
root=${root%/}

release_of() {
	[[ -f $1/include/config/kernel.release ]] || die "$1/include/config/kernel.release missing (KDIR is not a built kernel tree)"
	cat "$1/include/config/kernel.release"
}

depmod_run() {
	local args=(-a)
	[[ -n $root ]] && args+=(-b "$root")
	command -v depmod >/dev/null || die "depmod not found (package kmod)"
	depmod "${args[@]}" "$1" || die "depmod ${args[*]} $1 failed"
}

# Which ib_cm modprobe would load now, as a path relative to the release's module directory.
resolved() {
	local args=(-k "$1" -n)
	[[ -n $root ]] && args+=(-b "$root")
	modinfo "${args[@]}" ib_cm 2>/dev/null | sed "s|^$root/lib/modules/$1/||" || true
}

need_root() {
	[[ -n $root || $(id -u) == 0 ]] ||
		die "make $cmd writes to /lib/modules and runs depmod: run it as root (or set INSTALL_MOD_PATH=)"
}

case $cmd in
install)
	[[ -n $kdir ]] || die "usage: $0 install KDIR"
	need_root
	release=$(release_of "$kdir")
	[[ -f $top/ib_cm.ko ]] || die "$top/ib_cm.ko not built (make KDIR=$kdir)"
	vermagic=$(modinfo -F vermagic "$top/ib_cm.ko")
	[[ $vermagic == "$release "* ]] ||
		die "$top/ib_cm.ko was built for '$vermagic', not for $release: rebuild with make KDIR=$kdir"
	dir=$root/lib/modules/$release
	[[ -d $dir ]] || log "install: $dir does not exist yet; creating it (is kernel $release installed?)"
	rm -f "$dir"/updates/ib_cm.ko "$dir"/updates/ib_cm.ko.{xz,gz,zst}
	read -r -a ktools <<<"$("$here/lib.sh" ktools "$kdir")"
	make -s -C "$kdir" M="$top" "${ktools[@]}" INSTALL_MOD_DIR=updates \
		${root:+INSTALL_MOD_PATH="$root"} modules_install ||
		die "modules_install into $dir/updates failed"
	depmod_run "$release"
	got=$(resolved "$release")
	case $got in
	updates/ib_cm.ko*) ;;
	*) die "installed, but modprobe would load '${got:-nothing}' instead of updates/ib_cm.ko (is there a DKMS copy, or a depmod.d override?)" ;;
	esac
	for other in "$dir"/updates/dkms/ib_cm.ko*; do
		[[ -e $other ]] && log "install: warning: a DKMS build is installed too ($other): keep one (dkms remove ib_cm-rs/<version> --all)"
	done
	echo "install: $dir/$got (modprobe ib_cm now loads ib_cm-rs; in-tree: $(ls "$dir"/kernel/drivers/infiniband/core/ib_cm.ko* 2>/dev/null || echo none))"
	;;
uninstall)
	need_root
	if [[ -n ${KERNELRELEASE:-} ]]; then
		release=$KERNELRELEASE
	else
		[[ -n $kdir ]] || die "make uninstall needs the kernel to uninstall from: KDIR=/lib/modules/<release>/build or KERNELRELEASE=<release>, e.g. KERNELRELEASE=\$(uname -r)"
		release=$(release_of "$kdir")
	fi
	dir=$root/lib/modules/$release
	removed=0
	for f in "$dir"/updates/ib_cm.ko "$dir"/updates/ib_cm.ko.{xz,gz,zst}; do
		[[ -e $f ]] && { rm -f "$f"; removed=1; echo "uninstall: removed $f"; }
	done
	((removed)) || echo "uninstall: no ib_cm.ko in $dir/updates (nothing to remove)"
	[[ -d $dir ]] && depmod_run "$release"
	got=$(resolved "$release")
	echo "uninstall: modprobe ib_cm now loads: ${got:-nothing (no ib_cm module for $release)}"
	;;
*) die "usage: $0 install KDIR | uninstall [KDIR]" ;;
esac
