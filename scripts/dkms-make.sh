#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# dkms.conf's MAKE command: build ib_cm.ko in this (DKMS build) tree for the kernel tree KDIR
# with the compilers KDIR was built with (scripts/lib.sh ktools KDIR: LLVM=1, or LLVM=-19 and
# libclang 19 for make kernel-deb's kernel; Debian's rustc-web; bindgen).
#
#   dkms-make.sh KDIR [ignored...]
#
# A wrapper and not a plain `make` line because dkms appends `CC=clang LD=ld.lld` to MAKE when
# the kernel was built with clang, which would override LLVM=-19 and compile with clang 14.
# Those words (and anything else dkms adds) are dropped here. Kbuild's guard runs
# scripts/check-kdir.sh first, so a kernel ib_cm-rs cannot support is refused with its message.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kdir=${1:?usage: dkms-make.sh KDIR}
shift
[[ $# == 0 ]] || echo "dkms-make: ignoring '$*' (the kernel's own compilers come from scripts/lib.sh ktools)"
read -r -a ktools <<<"$("$here/lib.sh" ktools "$kdir")"
set -x
exec make -j"$(nproc)" -C "$kdir" M="$top" "${ktools[@]}" modules
