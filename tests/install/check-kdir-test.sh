#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Tests of the build preflight (scripts/check-kdir.sh, its Makefile and Kbuild hooks) on fake
# kernel trees, each one crafted .config / kernel.release / rust/ / <rdma/ib_cm.h> away from a
# good one; then, when given, on the real test kernel (must pass), on Debian's own
# linux-headers (must be refused) and through Kbuild with another rustc (must be refused
# before rustc runs).
#
#   check-kdir-test.sh [KDIR]      prints `RESULT <passed> <failed>` last
set -uo pipefail
source "$(dirname "$0")/lib.sh"
top=$itop
chk=$top/scripts/check-kdir.sh
real_kdir=${1:-}
work=$(mktemp -d /tmp/ibcm-kdir.XXXXXX)
trap 'rm -rf "$work"' EXIT
rustc_text=$(/usr/bin/rustc --version)

# A tree the preflight accepts; the cases below each break one thing.
mktree() {
	local d=$work/$1
	rm -rf "$d"
	mkdir -p "$d"/{include/config,rust,scripts,src/include/rdma,src/rust}
	echo "# fake kernel build directory" >"$d/Makefile"
	echo "${2:-6.12.117}" >"$d/include/config/kernel.release"
	cat >"$d/.config" <<-EOF
		CONFIG_CC_IS_CLANG=y
		CONFIG_MODULES=y
		CONFIG_RUST=y
		CONFIG_RUSTC_VERSION_TEXT="$rustc_text"
		# CONFIG_MODVERSIONS is not set
		CONFIG_INFINIBAND=m
	EOF
	touch "$d"/rust/{libkernel.rmeta,libmacros.so,libcore.rmeta} "$d/scripts/target.json" \
		"$d/src/rust/bindgen_parameters"
	ln -s src "$d/source"
	cp "$top/scripts/abi/ib_cm.h" "$d/src/include/rdma/ib_cm.h"
	echo "$d"
}
setcfg() { sed -i "/^$2=/d; /^# $2 is not set/d" "$1/.config"; [[ -z ${3:-} ]] || echo "$2=$3" >>"$1/.config"; }

# expect NAME RC TREE [PATTERN...]: the preflight exits RC; when refused, the message has every
# PATTERN, the pointer to Documentation/install.rst, and stays one short message.
expect() {
	local name=$1 rc=$2 tree=$3 out got p
	shift 3
	out=$(RUSTC=${TEST_RUSTC:-/usr/bin/rustc} "$chk" "$tree" 2>&1)
	got=$?
	if ((got != rc)); then
		notok "preflight_$name" "exit $got, expected $rc: $(head -3 <<<"$out" | tr '\n' ' ')"
		return
	fi
	if ((rc != 0)); then
		for p in "$@" 'Documentation/install.rst'; do
			grep -qF -- "$p" <<<"$out" || { notok "preflight_$name" "message lacks '$p': $(tr '\n' ' ' <<<"$out")"; return; }
		done
		(($(wc -l <<<"$out") <= 16)) || { notok "preflight_$name" "message is $(wc -l <<<"$out") lines"; return; }
	fi
	ok "preflight_$name"
}

t=$(mktree good)
expect accepts_good_tree 0 "$t"
t=$(mktree deb 6.12.117+deb12-amd64)
expect accepts_debian_style_release 0 "$t"

t=$(mktree norust); setcfg "$t" CONFIG_RUST; rm -rf "$t/rust"
expect refuses_no_rust 1 "$t" "CONFIG_RUST is not set"
t=$(mktree debianlike 6.12.117+deb12-amd64)
setcfg "$t" CONFIG_RUST; setcfg "$t" CONFIG_CC_IS_CLANG; setcfg "$t" CONFIG_CC_IS_GCC y
setcfg "$t" CONFIG_MODVERSIONS y; rm -rf "$t/rust"
expect refuses_debian_like_all_reasons 1 "$t" "CONFIG_RUST is not set" "CONFIG_MODVERSIONS=y" "built with gcc"
t=$(mktree modversions); setcfg "$t" CONFIG_MODVERSIONS y
expect refuses_modversions 1 "$t" "CONFIG_MODVERSIONS=y"
t=$(mktree gcc); setcfg "$t" CONFIG_CC_IS_CLANG; setcfg "$t" CONFIG_CC_IS_GCC y
expect refuses_gcc_tree 1 "$t" "built with gcc"

for rel in 6.1.0-28-amd64 6.13.1 6.120.1 5.12.6; do
	t=$(mktree "v$rel" "$rel")
	expect "refuses_release_$rel" 1 "$t" "kernel $rel is not Linux 6.12"
done
t=$(mktree norelease); rm "$t/include/config/kernel.release"
expect refuses_unbuilt_tree 1 "$t" "no include/config/kernel.release"

t=$(mktree normeta); rm "$t/rust/libkernel.rmeta"
expect refuses_missing_rust_build 1 "$t" "no built Rust support" "rust/libkernel.rmeta"
t=$(mktree nobgp); rm "$t/src/rust/bindgen_parameters"
expect refuses_missing_bindgen_parameters 1 "$t" "rust/bindgen_parameters"
# bindgen: the one the build passes (scripts/lib.sh ktools: the cache's bindgen-cli), not any
# bindgen in PATH; and 0.65.1 or newer. A Debian 12 bindgen (0.60) in PATH, the cache gone:
# refused, not accepted only for the build to fail (the kernel's installation with it).
mkdir -p "$work/oldbg" "$work/nocache"
printf '#!/bin/sh\necho "bindgen 0.60.1"\n' >"$work/oldbg/bindgen"
chmod +x "$work/oldbg/bindgen"
t=$(mktree bgpath)
# The message names the deps.sh next to the preflight (the package ships both), by its real
# path (dkms runs the preflight through its source/ link to /usr/src): an administrator with
# only the package can follow it.
PATH=$work/oldbg:$PATH IBCM_CACHE=$work/nocache expect refuses_bindgen_from_path_only 1 "$t" "no bindgen ($work/nocache/bindgen-" \
	"$(cd "$(dirname "$chk")" && pwd -P)/deps.sh build (as root)"
t=$(mktree bgold)
BINDGEN=$work/oldbg/bindgen expect refuses_old_bindgen 1 "$t" "version '0.60.1'" "0.65.1 or newer"
t=$(mktree rustc); setcfg "$t" CONFIG_RUSTC_VERSION_TEXT '"rustc 1.78.0 (9b00956e5 2024-04-29)"'
expect refuses_other_rustc 1 "$t" "rustc 1.78.0" "very same compiler"
t=$(mktree ibbuiltin); setcfg "$t" CONFIG_INFINIBAND y
expect refuses_builtin_infiniband 1 "$t" "CONFIG_INFINIBAND=y"
t=$(mktree noib); setcfg "$t" CONFIG_INFINIBAND
expect refuses_no_infiniband 1 "$t" "CONFIG_INFINIBAND is not set"

# The rdma ABI: a changed prototype or constant is refused and shown; layout is not an ABI.
t=$(mktree abiproto)
sed -i 's/^int ib_send_cm_req(struct ib_cm_id\*cm_id,struct ib_cm_req_param\*param);$/int ib_send_cm_req(struct ib_cm_id*cm_id,struct ib_cm_req_param*param,gfp_t gfp);/' \
	"$t/src/include/rdma/ib_cm.h"
if cmp -s "$t/src/include/rdma/ib_cm.h" "$top/scripts/abi/ib_cm.h"; then
	notok preflight_refuses_other_ib_cm_prototype "test setup: the sed did not change the header"
else
	expect refuses_other_ib_cm_prototype 1 "$t" "is not the <rdma/ib_cm.h>" "gfp_t gfp"
fi
t=$(mktree abiconst)
sed -i 's/IB_CM_REQ_PRIVATE_DATA_SIZE=92/IB_CM_REQ_PRIVATE_DATA_SIZE=96/' "$t/src/include/rdma/ib_cm.h"
expect refuses_other_ib_cm_constant 1 "$t" "IB_CM_REQ_PRIVATE_DATA_SIZE=96"
t=$(mktree abimissing); rm "$t/src/include/rdma/ib_cm.h"
expect refuses_missing_ib_cm_header 1 "$t" "include/rdma/ib_cm.h missing"
t=$(mktree abilayout)
perl -pi -e 's/,/ ,\n\t/g; s/;$/; \/* a comment *\//; s/^(struct \w+)\{/$1\n{/' "$t/src/include/rdma/ib_cm.h"
expect accepts_ib_cm_with_other_layout_and_comments 0 "$t"
src=$(readlink -f "$real_kdir/source" 2>/dev/null)
if [[ -n $real_kdir && -f $src/include/rdma/ib_cm.h ]]; then
	t=$(mktree abireal); cp "$src/include/rdma/ib_cm.h" "$t/src/include/rdma/ib_cm.h"
	expect accepts_the_real_6.12_ib_cm_header 0 "$t"
fi

expect refuses_missing_kdir 1 "$work/nonexistent" "does not exist"
mkdir -p "$work/empty"
expect refuses_dir_without_makefile 1 "$work/empty" "not a kernel build directory"
t=$(mktree noconfig); rm "$t/.config"
expect refuses_unconfigured_tree 1 "$t" "no .config"

# `make KDIR=<refused tree>` stops at once with that message: no compiler, no test kernel build.
t=$(mktree makedeb 6.12.117+deb12-amd64)
setcfg "$t" CONFIG_RUST; setcfg "$t" CONFIG_MODVERSIONS y; rm -rf "$t/rust"
start=$(date +%s%N)
out=$(make -C "$top" KDIR="$t" 2>&1)
rc=$? ms=$((($(date +%s%N) - start) / 1000000))
if ((rc == 0)); then
	notok make_kdir_refused_at_once "make succeeded"
elif ! grep -q "CONFIG_RUST is not set" <<<"$out" || ! grep -qF "Documentation/install.rst" <<<"$out"; then
	notok make_kdir_refused_at_once "no preflight message: $(tail -3 <<<"$out" | tr '\n' ' ')"
elif grep -qE 'error\[E|^[^ ].*: error:|kernel: (building|configuring)' <<<"$out"; then
	notok make_kdir_refused_at_once "compiler errors or a kernel build in the output"
elif ((ms > 10000)); then
	notok make_kdir_refused_at_once "took ${ms} ms"
else
	ok "make_kdir_refused_at_once (${ms} ms, $(wc -l <<<"$out") lines)"
fi

if [[ -n $real_kdir ]]; then
	expect accepts_the_test_kernel 0 "$real_kdir"

	# Straight through Kbuild (as `make -C KDIR M=...` and DKMS do), with another compiler
	# than the kernel's: the guard at the top of Kbuild refuses before rustc runs (E0514
	# "found crate compiled by an incompatible version of rustc" otherwise).
	printf '#!/bin/sh\necho "rustc 1.80.0 (051478957 2024-07-21)"\n' >"$work/rustc-other"
	chmod +x "$work/rustc-other"
	read -r -a ktools <<<"$("$top/scripts/lib.sh" ktools)"
	tree_copy "$work/m"
	out=$(make -C "$real_kdir" M="$work/m" "${ktools[@]}" RUSTC="$work/rustc-other" modules 2>&1)
	rc=$?
	if ((rc != 0)) && grep -q 'very same compiler' <<<"$out" && grep -q 'Kbuild:.*refused' <<<"$out" &&
		! grep -qE 'error\[E' <<<"$out" && [[ ! -e $work/m/ib_cm.ko ]]; then
		ok kbuild_guard_refuses_other_rustc
	else
		notok kbuild_guard_refuses_other_rustc "rc=$rc: $(tail -4 <<<"$out" | tr '\n' ' ')"
	fi
fi

if deb=$(debian_headers); then
	expect refuses_debian_linux_headers 1 "$deb" "CONFIG_RUST is not set" "CONFIG_MODVERSIONS=y" \
		"$(cat "$deb/include/config/kernel.release")"
else
	notok preflight_refuses_debian_linux_headers "could not fetch Debian's linux-headers package (apt-get download)"
fi
result
