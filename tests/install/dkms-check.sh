#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make dkms-check`: Debian's dkms against dkms.conf, for the cached test kernel, entirely in a
# scratch directory: --sourcetree (instead of /usr/src), --dkmstree (instead of /var/lib/dkms)
# and --installtree (instead of /lib/modules, pre-filled with the test kernel's own modules);
# `dkms remove --all` and the scratch directory's removal undo the rest. It runs in a private
# mount namespace where the host's /var/lib/dkms, /usr/src and /lib/modules are scratch
# tmpfs (isolate_host, tests/install/lib.sh): whatever dkms writes there despite the options
# stays out of the host's, and dkms_left_host_untouched compares the host's listing of the
# three before and after. add, build (--kernelsourcedir), install, status, the built module's modinfo,
# modprobe resolution (updates/ wins over the in-tree ib_cm), Debian's own kernel skipped as
# not applicable (BUILD_EXCLUSIVE_*), remove. Leaves the installed tree in
# OUT/modroot-dkms for the guest check.
#
#   dkms-check.sh [VARIANT | KDIR OUT]     prints `RESULT <passed> <failed>` last
set -uo pipefail
source "$(dirname "$0")/lib.sh"
isolate_host dkms "$@"
top=$itop
if (($# == 2)); then
	kdir=$1 out=$2
else
	kdir=$("$top/scripts/kernel.sh" kdir "${1:-debug}") || { notok dkms_setup "no test kernel"; result; exit 1; }
	out=$top/out/install
fi
mkdir -p "$out"
rel=$(release_of "$kdir")
arch=x86_64
command -v dkms >/dev/null || { notok dkms_setup "dkms not installed (scripts/deps.sh)"; result; exit 1; }
name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"$/\1/p' "$top/dkms.conf")
ver=$(bash -c 'source "$1" && echo "$PACKAGE_VERSION"' _ "$top/dkms.conf")
work=$(mktemp -d /tmp/ibcm-dkms.XXXXXX)
root=$work/root
mods=$root/lib/modules/$rel
opts=(--sourcetree "$work/src" --dkmstree "$work/dkms" --installtree "$root/lib/modules")
log=$out/dkms.log
: >"$log"
cleanup() {
	dkms remove "$name/$ver" --all --no-depmod "${opts[@]}" >>"$log" 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
run() { echo "+ $*" >>"$log"; "$@" >>"$log" 2>&1; }

# The source as a user has it: a git clone (the same commit and tags) with this tree's
# uncommitted files on top, added with `dkms add .` as the guide does. dkms copies the files
# but no dot files (no .git, no .version) to $work/src/$name-<version>; its dkms.conf must give
# the version dkms registered, and the build must find its tree.
mkdir -p "$work/dkms" "$work/src" "$root"
git clone -q --no-hardlinks "$itop" "$work/git" >>"$log" 2>&1 &&
	git -C "$itop" ls-files -co --exclude-standard -z -- ':!.version' | (cd "$itop" && tar --null -T - -c) | tar -x -C "$work/git" ||
	notok dkms_setup_clone "cannot clone $itop"
WHY="the clone's version is '$(cd "$work/git" && bash -c 'source ./dkms.conf && echo "$PACKAGE_VERSION"')', this tree's $ver" \
	check dkms_clone_has_the_version bash -c 'cd "$1" && source ./dkms.conf && [[ $PACKAGE_VERSION == "$2" ]]' _ "$work/git" "$ver"
# The guide's other way: `git archive` into /usr/src/ib-cm-rs-<version>, then dkms add
# ib-cm-rs/<version>. The tarball's .version must give the same version as git for HEAD (the
# committed tree: uncommitted changes, ".dirty" in this tree's version, are not in it).
hv=$(head_version)
mkdir -p "$work/arch/$name-$hv"
git -C "$work/git" archive HEAD | tar -x -C "$work/arch/$name-$hv"
rm -rf "$work/arch/$name-$hv/scripts" && cp -r "$work/git/scripts" "$work/arch/$name-$hv/"
av=$(cd "$work/arch/$name-$hv" && bash -c 'source ./dkms.conf && echo "$PACKAGE_VERSION"')
WHY="git archive's tree says '$av', git '$hv' for HEAD" check dkms_git_archive_has_the_version test -n "$hv" -a "$av" = "$hv"
read -r -a ktools <<<"$("$top/scripts/lib.sh" ktools)"
make -s -C "$kdir" "${ktools[@]}" INSTALL_MOD_PATH="$root" modules_install >>"$log" 2>&1 ||
	notok dkms_setup_in_tree_modules "modules_install of the test kernel failed"

WHY="dkms add . failed (log: $log)" check dkms_add bash -c 'cd "$1" && shift && echo "+ dkms add . $*" >>"$0" && dkms add . "$@" >>"$0" 2>&1' "$log" "$work/git" "${opts[@]}"
cv=$(cd "$work/src/$name-$ver" 2>/dev/null && bash -c 'source ./dkms.conf && echo "$PACKAGE_VERSION"')
WHY="dkms's copy $work/src/$name-$ver says '$cv'" check dkms_copy_keeps_the_registered_version test "$cv" = "$ver"
start=$(date +%s)
if run dkms build -m "$name" -v "$ver" -k "$rel" -a "$arch" --kernelsourcedir "$kdir" "${opts[@]}"; then
	ok "dkms_build ($(($(date +%s) - start)) s)"
else
	notok dkms_build "see $log and $work/dkms/$name/$ver/build/make.log"
	cat "$work/dkms/$name/$ver/build/make.log" >>"$log" 2>/dev/null
fi
built=$work/dkms/$name/$ver/$rel/$arch/module/ib_cm.ko
WHY="no $built" check dkms_built_module_exists test -f "$built"
WHY="author '$(modinfo -F author "$built" 2>/dev/null)'" check dkms_built_module_is_ib_cm_rs \
	test "$(modinfo -F author "$built" 2>/dev/null)" = "The ib_cm-rs developers"
WHY="vermagic '$(modinfo -F vermagic "$built" 2>/dev/null)'" check dkms_built_for_the_test_kernel \
	bash -c '[[ $(modinfo -F vermagic "$1") == "$2 "* ]]' _ "$built" "$rel"
# scripts/dkms-make.sh (dkms.conf's MAKE) traces the kernel make it runs into make.log.
mlog=$work/dkms/$name/$ver/$rel/$arch/log/make.log
WHY="make.log shows no kernel make with the ktools (LLVM=1, RUSTC=/usr/bin/rustc)" check dkms_make_uses_ktools \
	grep -qF "M=$work/dkms/$name/$ver/build ARCH=x86_64 LLVM=1 RUSTC=/usr/bin/rustc" "$mlog"
WHY="dkms' CC=clang LD=ld.lld reached the kernel make" check dkms_make_drops_dkms_cc_override \
	bash -c 'grep -q "^+ exec make" "$1" && ! grep "^+ exec make" "$1" | grep -q " CC=clang"' _ "$mlog"
WHY="version '$(modinfo -F version "$built" 2>/dev/null)', dkms.conf says $ver" check dkms_module_version_is_package_version \
	test "$(modinfo -F version "$built" 2>/dev/null)" = "$ver"
# `dkms add .` copies no .git and no .version: the commit is not known in dkms's copy.
WHY="commit '$(modinfo -F commit "$built" 2>/dev/null)'" check dkms_module_commit_is_unknown_after_dkms_add_dot \
	test "$(modinfo -F commit "$built" 2>/dev/null)" = unknown

if run dkms install -m "$name" -v "$ver" -k "$rel" -a "$arch" --kernelsourcedir "$kdir" --no-depmod "${opts[@]}"; then
	ok dkms_install
else
	notok dkms_install "see $log"
fi
inst=$(cd "$mods" 2>/dev/null && ls updates/dkms/ib_cm.ko* updates/ib_cm.ko* 2>/dev/null | head -1)
WHY="nothing under $mods/updates" check dkms_installs_under_updates test -n "$inst"
depmod -a -b "$root" "$rel" >>"$log" 2>&1
got=$(modinfo -b "$root" -k "$rel" -n ib_cm 2>/dev/null | sed "s|^$mods/||")
WHY="modprobe would load '$got'" check dkms_module_wins_over_in_tree test "$got" = "$inst"
WHY="the in-tree ib_cm.ko is gone or changed" check dkms_keeps_in_tree_module \
	cmp -s "$mods/kernel/drivers/infiniband/core/ib_cm.ko" "$kdir/drivers/infiniband/core/ib_cm.ko"
st=$(dkms status -m "$name" -v "$ver" "${opts[@]}" 2>&1)
WHY="dkms status: $st" check dkms_status_installed grep -q "$name/$ver, $rel, $arch: installed" <<<"$st"
rm -rf "$out/modroot-dkms"
cp -a "$root" "$out/modroot-dkms"

# Debian's own kernel (no Rust, MODVERSIONS): dkms must skip it as not applicable, not fail.
if deb=$(debian_headers); then
	drel=$(release_of "$deb")
	dkms build -m "$name" -v "$ver" -k "$drel" -a "$arch" --kernelsourcedir "$deb" "${opts[@]}" >"$work/deb.out" 2>&1
	rc=$?
	cat "$work/deb.out" >>"$log"
	WHY="exit $rc: $(tail -2 "$work/deb.out" | tr '\n' ' ')" check dkms_skips_debian_kernel_as_not_applicable \
		bash -c '(($1 == 77)) && grep -q "BUILD_EXCLUSIVE" "$2"' _ "$rc" "$work/deb.out"
	# ... saying why, with the preflight's message (the one `make KDIR=...` gives).
	WHY="$(head -3 "$work/deb.out" | tr '\n' ' ')" check dkms_refusal_gives_preflight_message \
		bash -c 'grep -q "ib_cm-rs: cannot build against KDIR=$1" "$2" && grep -q "CONFIG_RUST is not set" "$2"' _ "$deb" "$work/deb.out"
	# The kernel hooks run `dkms autoinstall` when a kernel is installed: Debian's dkms 3.0.10
	# fails it (exit 11) for a BUILD_EXCLUSIVE skip, which would fail the kernel's own
	# installation. For a refused kernel dkms.conf turns AUTOINSTALL off: exit 0, the reasons
	# printed, nothing built.
	dkms autoinstall -k "$drel" --kernelsourcedir "$deb" "${opts[@]}" >"$work/auto.out" 2>&1
	rc=$?
	cat "$work/auto.out" >>"$log"
	WHY="exit $rc: $(tail -2 "$work/auto.out" | tr '\n' ' ')" check dkms_autoinstall_of_debian_kernel_succeeds_building_nothing \
		bash -c '(($1 == 0)) && grep -q "CONFIG_RUST is not set" "$2" &&
			! dkms status -m "$3" -k "$4" "${@:5}" 2>/dev/null | grep -qE "built|installed"' \
		_ "$rc" "$work/auto.out" "$name" "$drel" "${opts[@]}"
else
	notok dkms_skips_debian_kernel_as_not_applicable "could not fetch Debian's linux-headers package"
fi

WHY="dkms remove failed (log: $log)" check dkms_remove run dkms remove "$name/$ver" --all --no-depmod "${opts[@]}"
WHY="still installed: $(cd "$mods" && ls updates/dkms 2>/dev/null)" check dkms_remove_uninstalls \
	bash -c '! ls "$1"/updates/dkms/ib_cm.ko* >/dev/null 2>&1' _ "$mods"
WHY="$work/dkms/$name still there" check dkms_remove_cleans_its_tree test ! -e "$work/dkms/$name"
result
