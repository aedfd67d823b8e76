#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make install` / `make uninstall` into a scratch module tree (INSTALL_MOD_PATH): the test
# kernel's own modules (modules_install: kernel/drivers/infiniband/core/ib_cm.ko is the C one)
# plus ours from `make install`; depmod/modinfo/modprobe must then resolve ib_cm, and rdma_cm's
# dependency on it, to updates/ib_cm.ko, and back to the in-tree one after `make uninstall`.
# Leaves the installed tree in OUT/modroot-install for the guest check (guest-test.sh).
#
#   install-test.sh KDIR OUT      prints `RESULT <passed> <failed>` last
set -uo pipefail
source "$(dirname "$0")/lib.sh"
top=$itop
kdir=$1 out=$2
rel=$(release_of "$kdir")
read -r -a ktools <<<"$("$top/scripts/lib.sh" ktools)"
root=$(mktemp -d /tmp/ibcm-install.XXXXXX)
trap 'rm -rf "$root"' EXIT
mods=$root/lib/modules/$rel
intree=kernel/drivers/infiniband/core/ib_cm.ko
ours_author="The ib_cm-rs developers"

resolve() { modinfo -b "$root" -k "$rel" -n ib_cm 2>/dev/null | sed "s|^$mods/||"; }
author() { modinfo -b "$root" -k "$rel" -F author ib_cm 2>/dev/null; }
deps_of() { modprobe -d "$root" -S "$rel" --show-depends "$1" 2>/dev/null | sed "s|^insmod $mods/||; s| *$||"; }

make -s -C "$kdir" "${ktools[@]}" INSTALL_MOD_PATH="$root" modules_install >"$out/modules_install.log" 2>&1 ||
	{ notok install_setup_in_tree_modules "modules_install of the test kernel failed (log: $out/modules_install.log)"; result; exit; }
WHY="the test kernel has no in-tree $intree" check install_setup_in_tree_c_ib_cm test -f "$mods/$intree"
WHY="before make install: resolves to '$(resolve)'" check install_before_resolves_in_tree test "$(resolve)" = "$intree"
before_author=$(author)
WHY="the in-tree module already has our author string" check install_authors_differ test "$before_author" != "$ours_author"

# Without KDIR, make install refuses at once (the default KDIR is the project's test kernel).
out_=$(make -s -C "$top" install INSTALL_MOD_PATH="$root" 2>&1)
rc=$?
WHY="rc $rc: $(tr '\n' ' ' <<<"$out_")" check make_install_without_kdir_refused \
	bash -c '(($1 != 0)) && grep -q "needs the kernel to install for" <<<"$2" && test ! -e "$3"' _ "$rc" "$out_" "$mods/updates"

start=$(date +%s)
if make -s -C "$top" install KDIR="$kdir" INSTALL_MOD_PATH="$root" >"$out/make-install.log" 2>&1; then
	ok "make_install_succeeds ($(($(date +%s) - start)) s)"
else
	notok make_install_succeeds "$(tail -3 "$out/make-install.log" | tr '\n' ' ')"
fi
WHY="no $mods/updates/ib_cm.ko" check install_module_in_updates test -f "$mods/updates/ib_cm.ko"
WHY="the in-tree ib_cm.ko was changed" check install_keeps_in_tree_module cmp -s "$mods/$intree" "$kdir/drivers/infiniband/core/ib_cm.ko"
WHY="modinfo resolves ib_cm to '$(resolve)'" check install_modinfo_resolves_updates test "$(resolve)" = updates/ib_cm.ko
WHY="author '$(author)'" check install_modinfo_author_is_ib_cm_rs test "$(author)" = "$ours_author"
d=$(deps_of rdma_cm)
WHY="rdma_cm's dependencies: $(tr '\n' ' ' <<<"$d")" check install_rdma_cm_depends_on_ours \
	bash -c 'grep -qx updates/ib_cm.ko <<<"$1" && ! grep -q "^$2" <<<"$1"' _ "$d" "$intree"
WHY="modules.dep: $(grep '^kernel/drivers/infiniband/core/rdma_cm.ko:' "$mods/modules.dep")" \
	check install_modules_dep_lists_ours grep -q '^kernel/drivers/infiniband/core/rdma_cm.ko:.* updates/ib_cm.ko' "$mods/modules.dep"

rm -rf "$out/modroot-install"
cp -a "$root" "$out/modroot-install"

if make -s -C "$top" uninstall KDIR="$kdir" INSTALL_MOD_PATH="$root" >"$out/make-uninstall.log" 2>&1; then
	ok make_uninstall_succeeds
else
	notok make_uninstall_succeeds "$(tail -3 "$out/make-uninstall.log" | tr '\n' ' ')"
fi
WHY="updates/ib_cm.ko still there" check uninstall_removes_module test ! -e "$mods/updates/ib_cm.ko"
WHY="resolves to '$(resolve)'" check uninstall_resolves_in_tree_again test "$(resolve)" = "$intree"
WHY="rdma_cm's dependencies: $(deps_of rdma_cm | tr '\n' ' ')" check uninstall_rdma_cm_depends_on_in_tree \
	bash -c 'grep -qx "$2" <<<"$1"' _ "$(deps_of rdma_cm)" "$intree"
WHY="uninstall by KERNELRELEASE failed" check uninstall_again_by_release_is_harmless \
	make -s -C "$top" uninstall KERNELRELEASE="$rel" INSTALL_MOD_PATH="$root"
result
