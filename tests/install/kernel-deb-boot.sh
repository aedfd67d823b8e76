#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make kernel-deb-check`: the packages a finished `make kernel-deb` left, used the way
# Documentation/install.rst tells a user to use them, short of a reboot. Nothing on the host
# is installed:
#   - the linux-image and linux-headers packages are unpacked (dpkg-deb -x) into a scratch root;
#   - the headers must pass the build preflight, and ib_cm.ko is built against them and put in
#     place by `make install KDIR=<headers> INSTALL_MOD_PATH=<root>`, next to the image's own
#     in-tree ib_cm.ko;
#   - the image's kernel boots under QEMU with that module tree (only the modules rxe, rdma_cm
#     and veth need, with their dependencies; the whole tree is gigabytes), and in the guest an
#     unmodified `modprobe rdma_cm` must load ib_cm-rs, rping must listen through it and an
#     rping client on a second rxe device must connect (tests/install/guest-init.sh, as for the
#     test kernel's install check);
#   - the same with the ib-cm-rs-dkms package (`make deb`) instead of make install: dpkg --root
#     into a second scratch root whose build link is the headers, dkms builds ours with the
#     kernel's clang, and the guest boot must pass with that module tree.
# The guest's userspace is the test initramfs (out/VARIANT/initramfs.cpio.gz): if there is
# none yet, tests/build.sh makes it, which builds the test kernel first (about 20 minutes once).
# It is not part of `make check`: the packages take hours to build (Documentation/install.rst,
# "A Debian kernel with Rust: make kernel-deb").
#
#   kernel-deb-boot.sh [VARIANT]    prints `RESULT <passed> <failed>` last
set -uo pipefail
source "$(dirname "$0")/lib.sh"
top=$itop
variant=${1:-debug}
debs=$IBCM_CACHE/kernel-deb
out=$top/out/install
mkdir -p "$out"
work=$(mktemp -d /tmp/ibcm-kdeb-boot.XXXXXX)
trap 'rm -rf "$work"' EXIT

shopt -s nullglob
# The packages of linux-source-6.12's version (make kernel-deb removes other versions' anyway).
ver=$(kernel_pkg_version) || { notok kernel_deb_packages_present "linux-source-6.12 is not installed"; result; exit; }
images=() headers=("$debs"/linux-headers-*-rust_"$ver+rust1"_*.deb)
for d in "$debs"/linux-image-*-rust_"$ver+rust1"_*.deb; do
	[[ $d == *-dbg_* ]] || images+=("$d")
done
if ((${#images[@]} != 1 || ${#headers[@]} != 1)); then
	notok kernel_deb_packages_present "want one linux-image and one linux-headers package in $debs (make kernel-deb), found: $(cd "$debs" 2>/dev/null && ls | tr '\n' ' ')"
	result
	exit
fi
ok "kernel_deb_packages_present: $(basename "${images[0]}") $(du -h "${images[0]}" | cut -f1), $(basename "${headers[0]}") $(du -h "${headers[0]}" | cut -f1)"

img=$work/image hdr=$work/headers root=$work/root
dpkg-deb -x "${images[0]}" "$img" && dpkg-deb -x "${headers[0]}" "$hdr" ||
	{ notok kernel_deb_packages_unpack "dpkg-deb -x failed"; result; exit; }
rel=$(cd "$img/lib/modules" && ls)
kdir=$hdr/usr/src/linux-headers-$rel
bz=$img/boot/vmlinuz-$rel
WHY="image: modules for '$rel', kernel $(ls "$img/boot" | tr '\n' ' '); headers: $(ls "$hdr/usr/src" | tr '\n' ' ')" \
	check kernel_deb_packages_match test -f "$bz" -a -d "$kdir"
[[ -f $bz && -d $kdir ]] || { result; exit; }
WHY="$("$top/scripts/check-kdir.sh" "$kdir" 2>&1 | tr '\n' ' ')" check kernel_deb_headers_pass_preflight \
	"$top/scripts/check-kdir.sh" --quiet "$kdir"

# The module tree of the guest: what modprobe needs for these, from the image's tree.
mods=$root/lib/modules/$rel
mkdir -p "$mods"
deps=
# crypto-crc32: rxe's ICRC, which the kernel requests when a device is added.
for m in rdma_ucm rdma_rxe veth ib_cm crypto-crc32; do # one each: modprobe takes further words as parameters
	if ! d=$(modprobe -d "$img" -S "$rel" --show-depends "$m" 2>&1); then
		notok kernel_deb_module_tree "modprobe --show-depends $m: $(tr '\n' ' ' <<<"$d")"
		result
		exit
	fi
	deps+=$d$'\n'
done
n=0
while read -r verb path _; do
	[[ $verb == insmod ]] || continue
	rpath=${path#"$img/lib/modules/$rel/"}
	[[ -e $mods/$rpath ]] && continue # a dependency of more than one of them
	mkdir -p "$mods/$(dirname "$rpath")"
	cp "$path" "$mods/$rpath" && n=$((n + 1))
done <<<"$deps"
cp "$img/lib/modules/$rel"/modules.{order,builtin,builtin.modinfo} "$mods/" 2>/dev/null
intree=$(cd "$mods" && ls kernel/drivers/infiniband/core/ib_cm.ko* 2>/dev/null)
WHY="$n modules copied; the in-tree ib_cm is '$intree'" check kernel_deb_module_tree_has_in_tree_ib_cm test -n "$intree"

# ib_cm.ko against the headers package, installed into the scratch root by make install.
tree_copy "$work/src"
s=$(date +%s)
if make -C "$work/src" KDIR="$kdir" >"$out/kernel-deb-build.log" 2>&1 &&
	make -C "$work/src" install KDIR="$kdir" INSTALL_MOD_PATH="$root" >>"$out/kernel-deb-build.log" 2>&1; then
	ok "kernel_deb_headers_build_and_make_install ($(($(date +%s) - s)) s, vermagic $(modinfo -F vermagic "$work/src/ib_cm.ko"))"
else
	notok kernel_deb_headers_build_and_make_install "$(grep -m3 -E 'error|Error' "$out/kernel-deb-build.log" | tr '\n' ' ') (log: $out/kernel-deb-build.log)"
	result
	exit
fi
# Built with the kernel's clang 19: the return thunks and retpolines its mitigations demand.
thunk_check kernel_deb_module_has_return_thunks_and_retpolines "$work/src/ib_cm.ko" "$(kdir_config "$kdir")"
resolved=$(modinfo -b "$root" -k "$rel" -n ib_cm 2>&1)
WHY="modinfo resolves ib_cm to '$resolved'" check kernel_deb_modinfo_resolves_updates \
	bash -c '[[ $1 == "$2"/updates/ib_cm.ko* ]]' _ "$resolved" "$mods"

# The kernel signs its modules and ours is unsigned: taint E besides O (out of tree).
res=$(BZIMAGE=$bz IBCM_GUEST_TAINT=OE "$top/tests/install/guest-test.sh" "$variant" "$kdir" kernel-deb "$root" | tail -1)
# The guest reports 7 results; fewer (or none: the script died) is a failure.
if ! read_counts "$res"; then
	notok kernel_deb_guest_ran "no result line from guest-test.sh: '$res'"
else
	npass=$((npass + p)) nfail=$((nfail + f))
	WHY="$((p + f)) results from the guest" check kernel_deb_guest_gave_all_results test $((p + f)) -ge 7
fi

# The administrator's other way (Documentation/install.rst): the ib-cm-rs-dkms package, whose
# postinst has dkms build ours against these headers (bindeb-pkg's headers have no .config:
# the build must still take the kernel's clang 19 from include/config/auto.conf). dpkg works
# on a second scratch root with the same module subset and no make-install module.
droot=$work/droot dmods=$work/droot/lib/modules/$rel
scratch_dpkg_root "$droot"
mkdir -p "$dmods"
cp -a "$mods/." "$dmods/" && rm -rf "$dmods/updates"
ln -sfn "$kdir" "$dmods/build"
pver=$("$top/scripts/version.sh")
if deb=$("$top/scripts/deb.sh" "$work/deb" 2>"$work/deb.err") && [[ -f $deb ]]; then
	s=$(date +%s)
	dpkg_in "$droot" -i "$deb" >"$out/kernel-deb-dkms.log" 2>&1
	rc=$?
	sed -n 's/^ib-cm-rs-dkms: /        postinst: /p' "$out/kernel-deb-dkms.log" >&2
	st=$(dkms_status_in "$droot" -m ib-cm-rs 2>&1)
	WHY="dpkg -i exit $rc; dkms status: $st (log: $out/kernel-deb-dkms.log)" \
		check "kernel_deb_dkms_package_builds_for_packaged_kernel ($(($(date +%s) - s)) s)" \
		bash -c '(($1 == 0)) && grep -q "^ib-cm-rs/$2, $3, x86_64: installed" <<<"$4"' _ "$rc" "$pver" "$rel" "$st"
	dko=$(cd "$dmods" && ls updates/dkms/ib_cm.ko* 2>/dev/null | head -1)
	# scripts/dkms-make.sh traces the kernel make it runs into dkms' make.log.
	mlog=$droot/var/lib/dkms/ib-cm-rs/$pver/$rel/x86_64/log/make.log
	WHY="make.log: $(grep -m1 '^+ exec make' "$mlog" 2>&1)" check kernel_deb_dkms_build_uses_clang_$KDEB_LLVM \
		grep -q "^+ exec make .* LLVM=-$KDEB_LLVM .*LIBCLANG_PATH=/usr/lib/llvm-$KDEB_LLVM/lib" "$mlog"
	thunk_check kernel_deb_dkms_module_has_return_thunks_and_retpolines "$dmods/$dko" "$(kdir_config "$kdir")"
	res=$(BZIMAGE=$bz IBCM_GUEST_TAINT=OE IBCM_GUEST_VERSION=$pver "$top/tests/install/guest-test.sh" "$variant" "$kdir" kernel-deb-dkms "$droot" | tail -1)
	if ! read_counts "$res"; then
		notok kernel_deb_dkms_guest_ran "no result line from guest-test.sh: '$res'"
	else
		npass=$((npass + p)) nfail=$((nfail + f))
		WHY="$((p + f)) results from the guest" check kernel_deb_dkms_guest_gave_all_results test $((p + f)) -ge 7
	fi
	# Purging the package gives the kernel its in-tree ib_cm back and leaves dkms nothing.
	dpkg_in "$droot" -P ib-cm-rs-dkms >>"$out/kernel-deb-dkms.log" 2>&1
	rc=$?
	got=$(modinfo -b "$droot" -k "$rel" -n ib_cm 2>&1)
	st=$(dkms_status_in "$droot" -m ib-cm-rs 2>&1)
	WHY="dpkg -P exit $rc; modinfo resolves ib_cm to '$got'; dkms status: '$st'; updates/: $(ls -R "$dmods/updates" 2>/dev/null | tr '\n' ' ')" \
		check kernel_deb_dkms_purge_restores_in_tree_ib_cm \
		bash -c '(($1 == 0)) && [[ $2 == "$3"/kernel/drivers/infiniband/core/ib_cm.ko* && -z $4 ]] &&
			! ls "$3"/updates/dkms/ib_cm.ko* >/dev/null 2>&1' _ "$rc" "$got" "$dmods" "$st"
else
	notok kernel_deb_dkms_package_builds_for_packaged_kernel "scripts/deb.sh failed: $(tail -3 "$work/deb.err" | tr '\n' ' ')"
fi
result
