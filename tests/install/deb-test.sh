#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make deb-check` (and the INSTALL layer): the DKMS Debian package, used as an administrator
# would, against the cached test kernel, without touching the host's dpkg, dkms or modules:
#   - `scripts/deb.sh` builds ib-cm-rs-dkms_<version>_all.deb from the git tree, from a
#     `git archive` tarball (version from .version, filled in by git) and from a tree without
#     either (CHANGELOG.md's release + "~unknown", below that release), with umask 077;
#     lintian reports no error on it;
#   - dpkg installs it into a throwaway root (dpkg --root, --force-script-chrootless: the
#     maintainer scripts run on the host with DPKG_ROOT set, and scripts/dkms-pkg.sh points
#     dkms at the root's /usr/src, /var/lib/dkms and /lib/modules). The root holds the test
#     kernel's module tree with its build tree as `build`, and Debian's own kernel headers as
#     a second kernel. The postinst must build and install ours for the test kernel, refuse
#     Debian's kernel with the preflight's message and still succeed;
#   - QEMU boots the test kernel with that module tree: `modprobe rdma_cm` loads ib_cm-rs of
#     the package's version, rping connects through it (tests/install/guest-init.sh);
#   - dpkg --purge: the prerm removes it through dkms, modprobe resolves the in-tree ib_cm
#     again, and a second boot shows the in-tree ib_cm loaded and rping connecting through it;
#   - a kernel upgrade: the package installed into a second root with no kernel, then the
#     kernels "installed" one by one and dkms's own kernel hook run for each, as a kernel
#     package's postinst runs it (/etc/kernel/postinst.d/dkms -> dkms autoinstall
#     --kernelver): ours is built and installed for the test kernel; Debian's is refused with
#     the preflight's message, the hook succeeds, and dkms holds no entry for that kernel;
#   - tests/install/version-test.sh: the version of a tree with uncommitted changes.
# The whole runs in a private mount namespace whose /var/lib/dkms, /usr/src and /lib/modules
# are scratch (isolate_host, tests/install/lib.sh); deb_left_host_untouched compares the
# host's three trees before and after, and tests/install/isolation-test.sh shows on stand-in
# trees that the comparison fails when the isolation is broken.
#
#   deb-test.sh [VARIANT | VARIANT KDIR OUT]     prints `RESULT <passed> <failed>` last
set -uo pipefail
source "$(dirname "$0")/lib.sh"
isolate_host deb "$@"
top=$itop
variant=${1:-debug}
if (($# == 3)); then
	kdir=$2 out=$3
else
	kdir=$("$top/scripts/kernel.sh" kdir "$variant") || { notok deb_setup "no test kernel"; result; exit 1; }
	out=$top/out/install
fi
mkdir -p "$out"
rel=$(release_of "$kdir")
name=ib-cm-rs pkg=ib-cm-rs-dkms arch=x86_64
work=$(mktemp -d /tmp/ibcm-deb-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
log=$out/deb.log
: >"$log"

# --- building the package ---
ver=$("$top/scripts/version.sh")
s=$(date +%s)
# A umask 077 caller (root's on hardened machines) must still get a package dpkg-deb accepts.
if deb=$(umask 077 && "$top/scripts/deb.sh" "$work/deb" 2>>"$log") && [[ $deb == */${pkg}_${ver}_all.deb && -f $deb ]]; then
	ok "deb_builds_from_git_tree ($(($(date +%s) - s)) s: $(basename "$deb"), $(du -h "$deb" | cut -f1))"
else
	notok deb_builds_from_git_tree "scripts/deb.sh gave '${deb:-nothing}' (log: $log)"
	result
	exit
fi
WHY="$(dpkg-deb -f "$deb" Package Version Architecture Depends | tr '\n' ' ')" check deb_control_fields \
	bash -c '[[ $(dpkg-deb -f "$1" Package) == "$2" && $(dpkg-deb -f "$1" Version) == "$3" &&
		$(dpkg-deb -f "$1" Architecture) == all && $(dpkg-deb -f "$1" Depends) == *dkms* &&
		$(dpkg-deb -f "$1" Depends) == *clang-$4* && $(dpkg-deb -f "$1" Depends) == *rustc-web* ]]' \
	_ "$deb" "$pkg" "$ver" "$KDEB_LLVM"
WHY="$(dpkg-deb -c "$deb" | grep -c "usr/src/$name-$ver/") files under usr/src/$name-$ver" check deb_sources_under_usr_src \
	bash -c 'c=$(dpkg-deb -c "$1"); for f in dkms.conf Kbuild version.c .version src/ include/ scripts/check-kdir.sh scripts/dkms-make.sh scripts/dkms-pkg.sh scripts/deps.sh scripts/abi/ib_cm.h; do
		grep -q " ./usr/src/$2/$f" <<<"$c" || { echo "missing $f"; exit 1; }; done' _ "$deb" "$name-$ver"
if command -v lintian >/dev/null; then
	lintian --no-tag-display-limit "$deb" >"$work/lintian.out" 2>&1
	cat "$work/lintian.out" >>"$log"
	nE=$(grep -c '^E:' "$work/lintian.out") nW=$(grep -c '^W:' "$work/lintian.out")
	WHY="$(grep '^E:' "$work/lintian.out" | head -5 | tr '\n' ' ')" check "deb_lintian_no_errors ($nE errors, $nW warnings)" \
		test "$nE" = 0
else
	notok deb_lintian_no_errors "lintian not installed (scripts/deps.sh)"
fi

# From a `git archive` tarball of HEAD: no .git, git filled in .version (export-subst).
# git describe of HEAD (uncommitted changes, ".dirty" in the work tree's version, are not in
# the tarball): the same version as git gives for HEAD, tag or not (0.0.0~gHASH before any tag).
head_ver=$(head_version)
mkdir -p "$work/tar"
if (cd "$top" && git archive --format=tar HEAD) | tar -x -C "$work/tar" 2>>"$log"; then
	tv=$("$work/tar/scripts/version.sh") tc=$("$work/tar/scripts/version.sh" --commit)
	WHY="tarball: version '$tv' commit '$tc'; git: '$head_ver' $(git -C "$top" rev-parse HEAD)" check deb_tarball_version_from_git_archive \
		bash -c '[[ $1 == "$2" && $3 == $(git -C "$4" rev-parse HEAD) ]]' _ "$tv" "$head_ver" "$tc" "$top"
	if tdeb=$("$work/tar/scripts/deb.sh" "$work/tdeb" 2>>"$log") && [[ $tdeb == */${pkg}_${tv}_all.deb ]]; then
		ok "deb_builds_from_git_archive_tarball ($(basename "$tdeb"))"
	else
		notok deb_builds_from_git_archive_tarball "got '${tdeb:-nothing}' (log: $log)"
	fi
else
	notok deb_tarball_version_from_git_archive "git archive failed"
fi
# From a tree with neither git nor a filled-in .version (a copy of the work tree's files).
mkdir -p "$work/nogit"
(cd "$top" && git ls-files -z | tar --null -T - -c 2>/dev/null) | tar -x -C "$work/nogit"
rv=$(sed -n 's/^## \[\([0-9][^]]*\)\].*/\1/p' "$top/CHANGELOG.md" | head -1)
nv=$("$work/nogit/scripts/version.sh")
if [[ $nv == "$rv~unknown" ]] && ndeb=$("$work/nogit/scripts/deb.sh" "$work/ndeb" 2>>"$log") && [[ $ndeb == */${pkg}_${rv}~unknown_all.deb ]]; then
	ok "deb_builds_without_git_version_fallback ($(basename "$ndeb"))"
else
	notok deb_builds_without_git_version_fallback "version '$nv' (want '$rv~unknown'), package '${ndeb:-none}'"
fi
# Neither fallback may "upgrade" over a real build: both sort below the release, and an
# untagged build below the fallback's release too.
WHY="dpkg orders: $nv vs $rv, 0.0.0~g$(git -C "$top" rev-parse --short=12 HEAD) vs $rv" check deb_fallback_versions_sort_below_release \
	bash -c 'dpkg --compare-versions "$1" lt "$3" && dpkg --compare-versions "$1" lt "$3+1.gabc" &&
		dpkg --compare-versions "$2" lt "$3"' _ "$nv" "0.0.0~g$(git -C "$top" rev-parse --short=12 HEAD)" "$rv"

# A release: a clone of HEAD tagged v<CHANGELOG.md's newest release> (tags are made in the
# clone only) must give exactly that version, a package lintian accepts, and a changelog whose
# top entry is that release.
clone=$work/clone
if git clone -q --no-checkout "$top" "$clone" 2>>"$log" &&
	git -C "$clone" checkout -q "$(git -C "$top" rev-parse HEAD)" 2>>"$log" &&
	git -C "$clone" tag -f "v$rv" HEAD >>"$log" 2>&1; then
	cv=$("$clone/scripts/version.sh")
	if cdeb=$("$clone/scripts/deb.sh" "$work/cdeb" 2>>"$log") && [[ $cv == "$rv" && $cdeb == */${pkg}_${rv}_all.deb ]] &&
		dpkg-deb --fsys-tarfile "$cdeb" | tar -xO "./usr/share/doc/$pkg/changelog.gz" | zcat | head -1 |
		grep -qF "ib-cm-rs ($rv) unstable" && ! lintian "$cdeb" 2>/dev/null | grep -q '^E:'; then
		ok "deb_release_version_from_tag (v$rv: $(basename "$cdeb"))"
	else
		notok deb_release_version_from_tag "version '$cv', package '${cdeb:-none}' (want $rv; log: $log)"
	fi
else
	notok deb_release_version_from_tag "cannot clone and tag (log: $log)"
fi

# --- installing it into a throwaway root ---
root=$work/root
mods=$root/lib/modules/$rel
scratch_dpkg_root "$root"
read -r -a ktools <<<"$("$top/scripts/lib.sh" ktools "$kdir")"
make -s -C "$kdir" "${ktools[@]}" INSTALL_MOD_PATH="$root" modules_install >>"$log" 2>&1 ||
	notok deb_setup_in_tree_modules "modules_install of the test kernel failed"
ln -sfn "$kdir" "$mods/build"
# Debian's own kernel (no Rust, MODVERSIONS), headers installed: the postinst must refuse it.
drel=
if dh=$(debian_headers); then
	drel=$(release_of "$dh")
	mkdir -p "$root/lib/modules/$drel"
	ln -sfn "$dh" "$root/lib/modules/$drel/build"
fi
s=$(date +%s)
dpkg_in "$root" -i "$deb" >"$work/install.out" 2>&1
rc=$?
cat "$work/install.out" >>"$log"
sed -n 's/^ib-cm-rs-dkms: /        postinst: /p' "$work/install.out" >&2
WHY="dpkg -i exit $rc: $(tail -3 "$work/install.out" | tr '\n' ' ')" check "deb_dpkg_install_succeeds ($(($(date +%s) - s)) s)" \
	bash -c '(($1 == 0)) && [[ $(dpkg --root="$2" -s "$3" 2>/dev/null | sed -n "s/^Status: //p") == "install ok installed" ]]' _ "$rc" "$root" "$pkg"
st=$(dkms_status_in "$root" -m "$name" 2>&1)
WHY="dkms status: $st" check deb_postinst_dkms_installed_for_test_kernel \
	grep -q "^$name/$ver, $rel, $arch: installed" <<<"$st"
inst=$(cd "$mods" 2>/dev/null && ls updates/dkms/ib_cm.ko* 2>/dev/null | head -1)
got=$(modinfo -b "$root" -k "$rel" -n ib_cm 2>/dev/null | sed "s|^$mods/||")
WHY="modprobe would load '$got' (installed: '$inst')" check deb_module_wins_over_in_tree \
	test -n "$inst" -a "$got" = "$inst"
mv=$(modinfo -F version "$mods/$inst" 2>/dev/null) mc=$(modinfo -F commit "$mods/$inst" 2>/dev/null)
WHY="modinfo version '$mv' commit '$mc', package $ver, source $("$top/scripts/version.sh" --commit)" check deb_modinfo_version_is_package_version \
	test "$mv" = "$ver" -a "$mc" = "$("$top/scripts/version.sh" --commit)"
echo "        modinfo: version: $mv; commit: $mc" >&2
# The return thunks and retpolines the kernel's mitigations demand (none for the clang-14 test
# kernel: skipped there; kernel-deb-test.sh checks the clang-19 build against Debian's config).
thunk_check deb_module_has_the_thunks_its_kernel_demands "$mods/$inst" "$(kdir_config "$kdir")"
WHY="the in-tree ib_cm.ko is gone or changed" check deb_keeps_in_tree_module \
	cmp -s "$mods/kernel/drivers/infiniband/core/ib_cm.ko" "$kdir/drivers/infiniband/core/ib_cm.ko"
if [[ -n $drel ]]; then
	WHY="$(grep -A3 "cannot build against" "$work/install.out" | head -4 | tr '\n' ' ')" check deb_postinst_refuses_debian_kernel_with_preflight_message \
		bash -c 'grep -q "ib_cm-rs: cannot build against KDIR=.*$1" "$2" && grep -q "CONFIG_RUST is not set" "$2" &&
			grep -q "$1: not built (the reasons above)" "$2"' _ "$drel" "$work/install.out"
	dst=$(dkms_status_in "$root" -m "$name" -k "$drel" 2>/dev/null)
	WHY="$(dkms_status_in "$root" -m "$name" -k "$drel" 2>&1; ls "$root/lib/modules/$drel")" check deb_nothing_built_for_debian_kernel \
		bash -c '[[ -z $(grep -E "built|installed" <<<"$1") && ! -e $2/updates ]]' _ "$dst" "$root/lib/modules/$drel"
else
	notok deb_postinst_refuses_debian_kernel_with_preflight_message "could not fetch Debian's linux-headers package"
fi

# --- the test kernel booted with that module tree ---
res=$(IBCM_GUEST_VERSION=$ver "$top/tests/install/guest-test.sh" "$variant" "$kdir" deb "$root" | tail -1)
read_counts "$res" || { p=0 f=1; notok deb_guest "no result line"; }
npass=$((npass + p)) nfail=$((nfail + f))

# --- an upgrade to the release (the tagged clone's package), with `dkms remove` failing ---
# The old version's prerm must take its module and its dkms entry out by hand: nothing may be
# left pointing at the sources dpkg deletes (dkms 3.0.10's autoinstall dies on a dangling
# source link at every later kernel), and the new version is built and installed. When HEAD
# is the release itself this is a reinstall of the same version: the same prerm, the same check.
if [[ -n ${cdeb:-} && -f $cdeb ]]; then
	mkdir -p "$work/faildkms"
	printf '%s\n' '#!/bin/sh' '[ "$1" = remove ] && { echo "dkms remove: simulated failure" >&2; exit 1; }' \
		'exec /usr/sbin/dkms "$@"' >"$work/faildkms/dkms"
	chmod +x "$work/faildkms/dkms"
	s=$(date +%s)
	PATH=$work/faildkms:$PATH dpkg_in "$root" -i "$cdeb" >"$work/upgrade.out" 2>&1
	rc=$?
	cat "$work/upgrade.out" >>"$log"
	sed -n 's/^ib-cm-rs-dkms: /        upgrade: /p' "$work/upgrade.out" >&2
	WHY="dpkg -i exit $rc: $(tail -3 "$work/upgrade.out" | tr '\n' ' ')" check "deb_upgrade_succeeds_when_dkms_remove_fails ($(($(date +%s) - s)) s)" \
		bash -c '(($1 == 0)) && [[ $(dpkg --root="$2" -s "$3" 2>/dev/null | sed -n "s/^Version: //p") == "$4" ]] &&
			grep -q "dkms remove $5/$6 failed: removing its modules and its dkms entry by hand" "$7"' \
		_ "$rc" "$root" "$pkg" "$rv" "$name" "$ver" "$work/upgrade.out"
	st=$(dkms_status_in "$root" -m "$name" 2>&1)
	dangling=$(find "$root/var/lib/dkms" -xtype l 2>/dev/null)
	WHY="dkms status: $st; dangling links: $dangling" check deb_upgrade_leaves_only_the_new_version \
		bash -c '[[ -z $4 && $(grep -c . <<<"$1") == 1 && $1 == "$2/$3, "*": installed"* ]]' _ "$st" "$name" "$rv" "$dangling"
	if [[ $ver != "$rv" ]]; then
		WHY="left: $(cd "$root" && ls -d var/lib/dkms/$name/$ver usr/src/$name-$ver 2>/dev/null)" check deb_upgrade_forgets_the_old_version \
			bash -c '! ls -d "$1/var/lib/dkms/$2/$3" "$1/usr/src/$2-$3" >/dev/null 2>&1' _ "$root" "$name" "$ver"
	fi
	uv=$(modinfo -F version "$(modinfo -b "$root" -k "$rel" -n ib_cm 2>/dev/null)" 2>/dev/null)
	WHY="modprobe would load version '$uv'" check deb_upgrade_module_is_the_new_version test "$uv" = "$rv"
else
	notok deb_upgrade_succeeds_when_dkms_remove_fails "no release package from the tagged clone"
fi

# --- purge ---
dpkg_in "$root" -P "$pkg" >"$work/purge.out" 2>&1
rc=$?
cat "$work/purge.out" >>"$log"
sed -n 's/^ib-cm-rs-dkms: /        prerm: /p' "$work/purge.out" >&2
WHY="dpkg -P exit $rc: $(tail -3 "$work/purge.out" | tr '\n' ' ')" check deb_dpkg_purge_succeeds \
	bash -c '(($1 == 0)) && [[ -z $(dpkg --root="$2" -s "$3" 2>/dev/null | grep "^Status: install") ]]' _ "$rc" "$root" "$pkg"
WHY="left: $(cd "$root" && ls -d lib/modules/*/updates/dkms/ib_cm.ko* var/lib/dkms/$name usr/src/$name-* 2>/dev/null | tr '\n' ' ')" \
	check deb_purge_removes_module_sources_and_dkms_state \
	bash -c 'cd "$1" && ! ls -d lib/modules/*/updates/dkms/ib_cm.ko* var/lib/dkms/"$2" usr/src/"$2"-* >/dev/null 2>&1' _ "$root" "$name"
got=$(modinfo -b "$root" -k "$rel" -n ib_cm 2>/dev/null | sed "s|^$mods/||")
WHY="modprobe would load '$got'" check deb_purge_restores_in_tree_module \
	test "$got" = kernel/drivers/infiniband/core/ib_cm.ko
res=$(IBCM_GUEST_EXPECT=intree "$top/tests/install/guest-test.sh" "$variant" "$kdir" deb_purged "$root" | tail -1)
read_counts "$res" || { p=0 f=1; notok deb_purged_guest "no result line"; }
npass=$((npass + p)) nfail=$((nfail + f))

# --- a kernel upgrade: dkms's kernel hooks ---
# Debian 12's dkms installs /etc/kernel/postinst.d/dkms (and the same script as
# header_postinst.d/dkms); a kernel package's postinst runs it with the new release, and it
# runs /usr/lib/dkms/dkms_autoinstaller start RELEASE, which (if /lib/modules/RELEASE/build/
# include exists) runs `dkms autoinstall --kernelver RELEASE` on the default trees. Here those
# trees are a second throwaway root's, bound over /usr/src, /var/lib/dkms and /lib/modules
# in a mount namespace of their own.
hook=/etc/kernel/postinst.d/dkms
root2=$work/root2
scratch_dpkg_root "$root2"
# in_root2 CMD...: CMD with root2's trees where dkms and the hooks look.
in_root2() {
	unshare -m --propagation private bash -c 'r=$1; shift
		for t in /usr/src /var/lib/dkms /lib/modules; do mount --bind "$r$t" "$(realpath "$t")" || exit 99; done
		exec "$@"' _ "$root2" "$@"
}
# run_hook RELEASE OUTFILE: the hook as a kernel package runs it; its exit code.
run_hook() { in_root2 "$hook" "$1" >"$2" 2>&1; }
if [[ ! -x $hook ]]; then
	notok deb_kernel_hook_builds_for_new_rust_kernel "$hook missing (package dkms)"
else
	# The package first, with no kernel yet: registered, nothing built.
	dpkg_in "$root2" -i "$deb" >"$work/install2.out" 2>&1
	rc=$?
	cat "$work/install2.out" >>"$log"
	st=$(dkms_status_in "$root2" -m "$name" 2>&1)
	WHY="dpkg -i exit $rc; dkms status: $st; postinst: $(grep '^ib-cm-rs-dkms:' "$work/install2.out" | tr '\n' ' ')" \
		check deb_install_without_kernels_only_registers \
		bash -c '(($1 == 0)) && [[ $2 == "$3/$4: added" ]] && grep -q "built for no kernel" "$5" &&
			! grep -q "^ib-cm-rs-dkms: \*:" "$5"' _ "$rc" "$st" "$name" "$ver" "$work/install2.out"
	# The test kernel (Rust, built with the installed toolchain) arrives: its modules and its
	# build tree, then the hook.
	cp -a "$root/lib/modules/$rel" "$root2/lib/modules/" && rm -rf "$root2/lib/modules/$rel/updates"
	s=$(date +%s)
	run_hook "$rel" "$work/hook.out"
	rc=$?
	cat "$work/hook.out" >>"$log"
	sed -n 's/^/        hook: /p' "$work/hook.out" | grep -E 'autoinstall|cannot build|error' >&2
	st=$(dkms_status_in "$root2" -m "$name" 2>&1)
	inst=$(cd "$root2/lib/modules/$rel" 2>/dev/null && ls updates/dkms/ib_cm.ko* 2>/dev/null | head -1)
	got=$(modinfo -b "$root2" -k "$rel" -n ib_cm 2>/dev/null | sed "s|^$root2/lib/modules/$rel/||")
	hv=$(modinfo -F version "$root2/lib/modules/$rel/$inst" 2>/dev/null)
	WHY="hook exit $rc; dkms status: $st; modprobe would load '$got' (installed: '$inst') of version '$hv'" \
		check "deb_kernel_hook_builds_for_new_rust_kernel ($(($(date +%s) - s)) s)" \
		bash -c '(($1 == 0)) && grep -q "^$3/$4, $5, $6: installed" <<<"$2" && [[ -n $7 && $8 == "$7" && $9 == "$4" ]]' \
		_ "$rc" "$st" "$name" "$ver" "$rel" "$arch" "$inst" "$got" "$hv"
	if [[ -n $drel ]]; then
		# Debian's own kernel (no Rust) arrives: refused, with the preflight's own reasons, the
		# hook (so the kernel's installation) succeeds, and dkms holds nothing for it.
		mkdir -p "$root2/lib/modules/$drel"
		ln -sfn "$dh" "$root2/lib/modules/$drel/build"
		want=$("$top/scripts/check-kdir.sh" "$root2/lib/modules/$drel/build" 2>&1 | grep -E '^  - |^What kernel')
		for h in postinst.d header_postinst.d; do
			hook=/etc/kernel/$h/dkms
			run_hook "$drel" "$work/hook-$h.out"
			rc=$?
			cat "$work/hook-$h.out" >>"$log"
			WHY="$hook exit $rc: $(grep -v '^ *$' "$work/hook-$h.out" | head -6 | tr '
' ' ')" \
				check "deb_kernel_hook_${h%%.d}_refuses_rust_less_kernel_with_preflight_message" \
				bash -c '(($1 == 0)) && grep -q "ib_cm-rs: cannot build against KDIR=/lib/modules/$3/build (kernel $3)" "$2" &&
					grep -q "CONFIG_RUST is not set" "$2" && [[ -n $4 ]] &&
					while IFS= read -r l; do grep -qxF -- "$l" "$2" || { echo "missing: $l"; exit 1; }; done <<<"$4"' \
				_ "$rc" "$work/hook-$h.out" "$drel" "$want"
		done
		st=$(dkms_status_in "$root2" -m "$name" 2>&1)
		WHY="dkms status: $st; $(ls -d "$root2/var/lib/dkms/$name/$ver/$drel" "$root2/lib/modules/$drel/updates" 2>&1 | tr '
' ' ')" \
			check deb_kernel_hook_leaves_no_entry_for_refused_kernel \
			bash -c '[[ $(grep -c . <<<"$1") == 1 && $1 == "$2/$3, $4, $5: installed"* &&
				! -e $6/var/lib/dkms/$2/$3/$7 && ! -e $6/lib/modules/$7/updates ]]' \
			_ "$st" "$name" "$ver" "$rel" "$arch" "$root2" "$drel"
	else
		notok deb_kernel_hook_postinst_refuses_rust_less_kernel_with_preflight_message "could not fetch Debian's linux-headers package"
	fi
fi

# --- the isolation itself (isolate_host), on stand-in trees ---
res=$("$top/tests/install/isolation-test.sh" | tail -1)
read_counts "$res" || { p=0 f=1; notok deb_isolation_test "no result line"; }
npass=$((npass + p)) nfail=$((nfail + f))

# --- the version of a tree with uncommitted changes ---
res=$("$top/tests/install/version-test.sh" "$kdir" | tail -1)
read_counts "$res" || { p=0 f=1; notok deb_version_test "no result line"; }
npass=$((npass + p)) nfail=$((nfail + f))
result
