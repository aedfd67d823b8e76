#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make kernel-deb` without building the kernel: the configuration step (Debian's 6.12 amd64
# config + scripts/kernel-deb.config, olddefconfig with kernel-deb's clang 19) must give Rust
# on, MODVERSIONS off, every RDMA/HCA option as Debian has it and every security option
# Debian's config sets (CPU mitigations, hardening, LSMs) kept; the check itself must catch a
# config that breaks any of those; ib_cm.ko must build against that configuration (its
# modules_prepare tree, not a whole kernel build); and the headers repack (add-rust-headers)
# must turn a linux-headers package as bindeb-pkg makes it (here: of the test kernel, through
# the kernel's own install-extmod-build) into one ib_cm.ko builds against.
#
#   kernel-deb-test.sh KDIR       prints `RESULT <passed> <failed>` last
set -uo pipefail
source "$(dirname "$0")/lib.sh"
top=$itop
kdeb=$top/scripts/kernel-deb.sh
kdir=$1
work=$(mktemp -d /tmp/ibcm-kdeb.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The configuration lives in the input-hashed build directory of `make kernel-deb` (made once,
# checked every time); the mutations below work on copies.
start=$(date +%s)
cfgdir=$("$kdeb" dir)
if out=$("$kdeb" config 2>&1); then
	ok "kernel_deb_config_rust_and_debian_rdma_options ($(($(date +%s) - start)) s): $(grep 'config ok' <<<"$out" | sed 's/^kernel-deb: //')"
else
	notok kernel_deb_config_rust_and_debian_rdma_options "$(tail -5 <<<"$out" | tr '\n' ' ')"
fi
grep 'lost' <<<"$out" | sed 's/^/        /' >&2

# The check must refuse each of these breakages of the configured .config.
deb=$cfgdir/.config.debian new=$cfgdir/.config
mutate() { # NAME EXPECTED-MESSAGE SED-SCRIPT
	local m=$work/mut-$1
	[[ -f $new ]] || { notok "kernel_deb_verify_catches_$1" "no configured .config"; return; }
	sed "$3" "$new" >"$m"
	if cmp -s "$m" "$new"; then notok "kernel_deb_verify_catches_$1" "test setup: sed changed nothing"; return; fi
	if out=$("$kdeb" verify "$deb" "$m" 2>&1); then
		notok "kernel_deb_verify_catches_$1" "verify accepted it"
	elif grep -qE -- "$2" <<<"$out"; then
		ok "kernel_deb_verify_catches_$1"
	else
		notok "kernel_deb_verify_catches_$1" "message lacks '$2': $(tr '\n' ' ' <<<"$out")"
	fi
}
mutate rust_off "CONFIG_RUST is not y" 's/^CONFIG_RUST=y$/# CONFIG_RUST is not set/'
mutate modversions_on "CONFIG_MODVERSIONS is still set" 's/^# CONFIG_MODVERSIONS is not set$/CONFIG_MODVERSIONS=y/'
mutate mlx5_dropped "CONFIG_MLX5_INFINIBAND" '/^CONFIG_MLX5_INFINIBAND=/d'
mutate irdma_builtin "CONFIG_INFINIBAND_IRDMA: Debian has m, this config has y" 's/^CONFIG_INFINIBAND_IRDMA=m$/CONFIG_INFINIBAND_IRDMA=y/'
mutate nvme_rdma_dropped "CONFIG_NVME_RDMA" '/^CONFIG_NVME_RDMA=/d'
mutate btf_dropped "CONFIG_DEBUG_INFO_BTF=y was dropped" 's/^CONFIG_DEBUG_INFO_BTF=y$/# CONFIG_DEBUG_INFO_BTF is not set/'
# What clang 14 does to Debian's config (olddefconfig drops what the compiler cannot do),
# and hardening outside the mitigations menu, and an LSM list changed.
mutate srso_sls_lost "lost after olddefconfig with Debian clang version $KDEB_LLVM.* MITIGATION_SLS MITIGATION_SRSO" \
	's/^CONFIG_MITIGATION_SRSO=y$/# CONFIG_MITIGATION_SRSO is not set/; s/^CONFIG_MITIGATION_SLS=y$/# CONFIG_MITIGATION_SLS is not set/'
mutate call_thunks_lost "CALL_PADDING CALL_THUNKS" '/^CONFIG_CALL_PADDING=y$/d; /^CONFIG_CALL_THUNKS=y$/d'
mutate stackprotector_lost "STACKPROTECTOR_STRONG" 's/^CONFIG_STACKPROTECTOR_STRONG=y$/# CONFIG_STACKPROTECTOR_STRONG is not set/'
mutate lsm_changed 'LSM="landlock"' 's/^CONFIG_LSM=.*/CONFIG_LSM="landlock"/'
# A choice member (indented `config` in Kconfig): another clang can drop zeroed stack
# variables to INIT_STACK_NONE without a word from olddefconfig.
mutate init_stack_zero_lost "lost after olddefconfig.*INIT_STACK_ALL_ZERO" \
	'/^# CONFIG_INIT_STACK_NONE is not set$/d; s/^CONFIG_INIT_STACK_ALL_ZERO=y$/CONFIG_INIT_STACK_NONE=y/'
# An option on none of the lists: any difference from Debian's config that is not expected.
mutate unexpected_difference "kernel-deb:   CONFIG_ZRAM m n" 's/^CONFIG_ZRAM=m$/# CONFIG_ZRAM is not set/'

read -r -a ktools <<<"$("$top/scripts/lib.sh" ktools)"
# uses_kdeb_llvm MAKE-VARIABLES...: they name kernel-deb's LLVM and its libclang.
uses_kdeb_llvm() {
	[[ " $* " == *" LLVM=-$KDEB_LLVM "* && " $* " == *" LIBCLANG_PATH=/usr/lib/llvm-$KDEB_LLVM/lib "* ]]
}

# ib_cm.ko against Debian's configuration itself, not only against the test kernel's: options
# Debian sets change the rdma structs and the types they name (CONFIG_CGROUP_RDMA puts a
# `struct rdmacg_device` into `struct ib_device`). modules_prepare of the configured tree
# (rust/ included; minutes once, then cached) is enough to build against it.
s=$(date +%s)
if ddir=$("$kdeb" prepare 2>"$work/prepare.err"); then
	WHY="$("$top/scripts/check-kdir.sh" "$ddir" 2>&1 | tr '\n' ' ')" check kernel_deb_config_passes_preflight \
		"$top/scripts/check-kdir.sh" --quiet "$ddir"
	tree_copy "$work/d"
	# A modules_prepare tree has no Module.symvers (only the whole build makes it), so modpost
	# cannot resolve the module's imports there: it warns instead. The test kernel's builds
	# check them, and `make kernel-deb-check` against the packaged headers.
	symvers=() how="modpost checked against the tree's Module.symvers"
	[[ -f $ddir/Module.symvers ]] || symvers=(KBUILD_MODPOST_WARN=1) how="modules_prepare tree: imports unchecked"
	# With the tree's own compilers: clang 19 (LLVM=-19, libclang 19), as DKMS and make do.
	read -r -a dtools <<<"$("$top/scripts/lib.sh" ktools "$ddir")"
	WHY="ktools for the tree: ${dtools[*]}" check kernel_deb_module_build_uses_clang_$KDEB_LLVM \
		uses_kdeb_llvm "${dtools[@]}"
	# The headers package bindeb-pkg makes has no .config, only include/config/auto.conf, whose
	# strings are unquoted: DKMS and make against it must still pick the tree's clang.
	mkdir -p "$work/hdrcfg/include/config"
	cp "$ddir/include/config/auto.conf" "$work/hdrcfg/include/config/"
	read -r -a htools <<<"$("$top/scripts/lib.sh" ktools "$work/hdrcfg")"
	WHY="ktools for a tree with auto.conf only ($(grep -m1 '^CONFIG_CC_VERSION_TEXT=' "$work/hdrcfg/include/config/auto.conf")): ${htools[*]}" \
		check kernel_deb_headers_tree_uses_clang_$KDEB_LLVM uses_kdeb_llvm "${htools[@]}"
	if make -C "$ddir" M="$work/d" "${dtools[@]}" "${symvers[@]}" modules >"$work/dbuild.log" 2>&1 &&
		[[ -f $work/d/ib_cm.ko ]]; then
		ok "kernel_deb_config_builds_ib_cm ($(($(date +%s) - s)) s, $how, vermagic $(modinfo -F vermagic "$work/d/ib_cm.ko"))"
	else
		notok kernel_deb_config_builds_ib_cm "$(grep -m3 -E 'error|Error' "$work/dbuild.log" | tr '\n' ' ')"
	fi
else
	notok kernel_deb_config_modules_prepare "$(tail -3 "$work/prepare.err" | tr '\n' ' ')"
fi

# Options common on other kernels (debug builds, distributions) that change what the rdma
# headers name: the bindings must still build. A kernel's own bindings are generated with its
# configuration, so a type that only the rdma headers name under an option must be in ours:
# CONFIG_NET_DEV_REFCNT_TRACKER makes `netdevice_tracker` a `struct ref_tracker *`. The test
# kernel has it off; defining it for this compile-only build (never loaded) is what a kernel
# with it on gives the bindings. (CONFIG_CGROUP_RDMA needs cgroups: Debian's build above.)
flips="-DCONFIG_NET_DEV_REFCNT_TRACKER=1 -DCONFIG_REF_TRACKER=1"
tree_copy "$work/f"
s=$(date +%s)
if make -C "$kdir" M="$work/f" "${ktools[@]}" KCFLAGS="$flips" modules >"$work/fbuild.log" 2>&1 &&
	[[ -f $work/f/ib_cm.ko ]]; then
	ok "bindings_build_with_other_config_options ($(($(date +%s) - s)) s: $flips)"
else
	notok bindings_build_with_other_config_options "$flips: $(grep -m3 -E 'error' "$work/fbuild.log" | tr '\n' ' ')"
fi

# The module built with clang 19 against Debian's configuration must have the return thunks
# and retpolines that configuration's mitigations (RETHUNK, RETPOLINE, and CALL_DEPTH_TRACKING,
# SRSO, ITS on top of them) demand. And the check must catch a module without them: the test
# kernel's (clang 14 cannot do RETHUNK) measured against Debian's configuration.
if [[ -f ${ddir:-}/.config && -f $work/d/ib_cm.ko ]]; then
	thunk_check kernel_deb_module_has_return_thunks_and_retpolines "$work/d/ib_cm.ko" "$ddir/.config"
	if grep -qE '^CONFIG_MITIGATION_(RETHUNK|RETPOLINE)=y' "$kdir/.config"; then
		skip kernel_deb_thunk_check_catches_a_module_without_thunks "the test kernel has the mitigations too: no module without thunks here"
	elif [[ -f $work/f/ib_cm.ko ]]; then
		out=$("$top/tests/install/thunk-check.sh" "$work/f/ib_cm.ko" "$ddir/.config" 2>&1)
		rc=$?
		WHY="exit $rc: $(tr '\n' ' ' <<<"$out")" check kernel_deb_thunk_check_catches_a_module_without_thunks \
			bash -c '(($1 == 1)) && grep -q "bare ret" <<<"$2" && grep -q "indirect call/jmp" <<<"$2"' _ "$rc" "$out"
	else
		notok kernel_deb_thunk_check_catches_a_module_without_thunks "no test-kernel module (above)"
	fi
else
	skip kernel_deb_module_has_return_thunks_and_retpolines "no ib_cm.ko built against kernel-deb's clang-$KDEB_LLVM configuration (above)"
fi

# A linux-headers .deb as bindeb-pkg builds it (builddeb: install-extmod-build, the build link).
rel=$(release_of "$kdir")
src=$(readlink -f "$kdir/source")
pkg=$work/pkg
hdr=$pkg/usr/src/linux-headers-$rel
mkdir -p "$hdr" "$pkg/lib/modules/$rel" "$pkg/DEBIAN"
if (cd "$kdir" && srctree=$src SRCARCH=x86 CC=clang HOSTCC=clang MAKE=make \
	sh "$src/scripts/package/install-extmod-build" "$hdr") >"$work/extmod.log" 2>&1; then
	ln -s "/usr/src/linux-headers-$rel" "$pkg/lib/modules/$rel/build"
	printf 'Package: linux-headers-%s\nVersion: 1\nArchitecture: amd64\nMaintainer: test <t@localhost>\nDescription: test\n' \
		"$rel" >"$pkg/DEBIAN/control"
	(cd "$pkg" && find usr -type f -exec md5sum {} + >DEBIAN/md5sums)
	dpkg-deb --root-owner-group -Znone -b "$pkg" "$work/headers.deb" >/dev/null
	mkdir -p "$work/plain"
	dpkg-deb -x "$work/headers.deb" "$work/plain"
	out=$("$top/scripts/check-kdir.sh" "$work/plain/usr/src/linux-headers-$rel" 2>&1)
	WHY="the preflight accepted a 6.12 headers package without rust/" check kernel_deb_plain_headers_have_no_rust \
		grep -q "no built Rust support" <<<"$out"
	if IBCM_DEB_COMPRESS=none "$kdeb" add-rust-headers "$work/headers.deb" "$kdir" >&2; then
		mkdir -p "$work/rusty"
		dpkg-deb -x "$work/headers.deb" "$work/rusty"
		h=$work/rusty/usr/src/linux-headers-$rel
		WHY="$(cd "$h" && ls rust 2>&1 | tr '\n' ' ')" check kernel_deb_headers_get_rust \
			test -f "$h/rust/libkernel.rmeta" -a -f "$h/rust/libmacros.so" -a -f "$h/rust/bindgen_parameters"
		WHY="$(dpkg-deb -I "$work/headers.deb" md5sums 2>&1 | grep -c rust/) rust/ lines" check kernel_deb_headers_md5sums_list_rust \
			bash -c 'dpkg-deb -I "$1" md5sums | grep -q "rust/libkernel.rmeta"' _ "$work/headers.deb"
		WHY="$("$top/scripts/check-kdir.sh" "$h" 2>&1 | tr '\n' ' ')" check kernel_deb_headers_pass_preflight \
			"$top/scripts/check-kdir.sh" --quiet "$h"
		tree_copy "$work/m"
		s=$(date +%s)
		if make -C "$h" M="$work/m" "${ktools[@]}" modules >"$work/build.log" 2>&1 && [[ -f $work/m/ib_cm.ko ]]; then
			ok "kernel_deb_headers_build_ib_cm ($(($(date +%s) - s)) s, vermagic $(modinfo -F vermagic "$work/m/ib_cm.ko"))"
		else
			notok kernel_deb_headers_build_ib_cm "$(grep -m3 -E 'error|Error' "$work/build.log" | tr '\n' ' ')"
		fi
	else
		notok kernel_deb_headers_get_rust "add-rust-headers failed"
	fi
else
	notok kernel_deb_headers_package "install-extmod-build failed: $(tail -3 "$work/extmod.log" | tr '\n' ' ')"
fi
result
