#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Preflight: can ib_cm.ko be built against the kernel build directory KDIR?
#
#   scripts/check-kdir.sh [--quiet] KDIR     exit 0 if yes; else one message, exit 1
#   scripts/check-kdir.sh --abi-dump KDIR    print KDIR's include/rdma/ib_cm.h, normalised
#   scripts/check-kdir.sh --normalise < H    normalise a header read from stdin
#
# Called by the Makefile before `make -C KDIR` and by the guard at the top of Kbuild, so a
# kernel this module cannot work with is refused before any compiler runs: no Rust, not 6.12,
# CONFIG_MODVERSIONS, a gcc-built tree (we build with LLVM=1), Rust metadata from another
# rustc, no built rust/ directory, ib_cm built in, or an <rdma/ib_cm.h> that is not the one
# this module implements (scripts/abi/ib_cm.h, Linux 6.12). RUSTC (default /usr/bin/rustc)
# names the compiler the module will be built with.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
ref=$here/abi/ib_cm.h

# Comments, line continuations and layout removed; one preprocessor line or C statement per
# line, no blanks next to punctuation. Idempotent, so the reference is itself a valid input.
normalise() {
	perl -e '
		my $t = do { local $/; <STDIN> };
		$t =~ s{\\\n}{ }g;
		$t =~ s{/\*.*?\*/}{ }gs;
		$t =~ s{//[^\n]*}{}g;
		my (@out, $buf);
		$buf = "";
		sub tidy { my $s = shift; $s =~ s/\s+/ /g; $s =~ s/\s*([()\[\],;*{}=])\s*/$1/g;
			   $s =~ s/^\s+|\s+$//g; return $s; }
		sub flush { for my $s (split /(?<=[;{}])/, $buf) { $s = tidy($s); push @out, $s if length $s; }
			    $buf = ""; }
		for my $line (split /\n/, $t) {
			if ($line =~ /^\s*#/) { flush(); my $s = tidy($line); $s =~ s/^#\s*/#/; push @out, $s; }
			else { $buf .= " $line"; }
		}
		flush();
		print "$_\n" for @out;'
}

# The kernel source tree of KDIR: an O= build directory links it as `source`; Debian's
# linux-headers-*-ARCH directory includes the -common one from its Makefile.
srctree_of() {
	local kdir=$1 inc
	if [[ -e $kdir/source ]]; then
		readlink -f "$kdir/source"
		return
	fi
	inc=$(sed -n 's/^include \(\/.*\)\/Makefile$/\1/p' "$kdir/Makefile" 2>/dev/null | head -1)
	if [[ -n $inc && -d $inc ]]; then echo "$inc"; else echo "$kdir"; fi
}

quiet=0
case ${1:-} in
--normalise) normalise; exit ;;
--abi-dump)
	[[ -n ${2:-} ]] || { echo "usage: $0 --abi-dump KDIR" >&2; exit 2; }
	h=$(srctree_of "$2")/include/rdma/ib_cm.h
	[[ -f $h ]] || { echo "check-kdir: $h missing" >&2; exit 1; }
	normalise <"$h"
	exit ;;
--quiet) quiet=1; shift ;;
esac
[[ $# == 1 && -n $1 ]] || { echo "usage: $0 [--quiet] KDIR" >&2; exit 2; }
kdir=$1
rustc=${RUSTC:-/usr/bin/rustc}

reasons=()
why() { reasons+=("$*"); }
report() {
	{
		echo "ib_cm-rs: cannot build against KDIR=$kdir${release:+ (kernel $release)}:"
		for r in "${reasons[@]}"; do
			if [[ $r == ' '* ]]; then echo "$r"; else echo "  - $r"; fi
		done
		echo "What kernel ib_cm-rs needs, and how to build and install one: Documentation/install.rst."
	} >&2
	exit 1
}

release=
if [[ ! -d $kdir ]]; then
	why "$kdir does not exist (KDIR must be a kernel build directory, e.g. /lib/modules/<release>/build)"
	report
fi
if [[ ! -f $kdir/Makefile ]]; then
	why "$kdir has no Makefile: not a kernel build directory (e.g. /lib/modules/<release>/build)"
	report
fi

conf=
for c in "$kdir/.config" "$kdir/include/config/auto.conf"; do
	[[ -f $c ]] && { conf=$c; break; }
done
if [[ -z $conf ]]; then
	why "no .config in $kdir: the kernel tree is not configured and built"
	report
fi
# Value of a Kconfig symbol ("" when unset).
cfg() { sed -n "s/^$1=//p" "$conf" | tail -1; }

if [[ -f $kdir/include/config/kernel.release ]]; then
	release=$(<"$kdir/include/config/kernel.release")
elif [[ -f $kdir/include/generated/utsrelease.h ]]; then
	release=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kdir/include/generated/utsrelease.h")
fi
if [[ -z $release ]]; then
	why "no include/config/kernel.release: the kernel tree has not been built (make prepare / make)"
elif [[ ! $release =~ ^6\.12([.+~-]|$) ]]; then
	why "kernel $release is not Linux 6.12: ib_cm-rs implements the ib_cm ABI of 6.12 (<rdma/ib_cm.h> and the ib_core calls it makes) and is only built for 6.12.y"
fi

rust=$(cfg CONFIG_RUST)
[[ $rust == y ]] ||
	why "CONFIG_RUST is not set: ib_cm-rs is written in Rust and needs a kernel built with Rust support (Debian's own kernels have none)"
[[ $(cfg CONFIG_MODVERSIONS) != y ]] ||
	why "CONFIG_MODVERSIONS=y: Linux 6.12 cannot build Rust code for a kernel with symbol versions (CONFIG_RUST depends on !MODVERSIONS; Debian's kernels have it on)"
if [[ $(cfg CONFIG_CC_IS_CLANG) != y ]]; then
	why "the kernel was built with $( [[ $(cfg CONFIG_CC_IS_GCC) == y ]] && echo gcc || echo 'a compiler other than clang'): ib_cm-rs is built with LLVM=1 (clang/lld, as bindgen needs) and the module must be built by the kernel's own compiler"
else
	# The module is built by the kernel's own clang major version (scripts/lib.sh ktools KDIR:
	# LLVM=-N for a kernel built with clang-N, such as make kernel-deb's clang-19), and bindgen
	# needs that version's libclang.
	ccv=$(cfg CONFIG_CC_VERSION_TEXT | tr -d '"')
	ccm=$(sed -n 's/.*clang version \([0-9][0-9]*\)\..*/\1/p' <<<"$ccv")
	defm=$(clang --version 2>/dev/null | sed -n '1s/.*clang version \([0-9]*\)\..*/\1/p')
	if [[ -n $ccm ]]; then
		miss=()
		if [[ $ccm == "$defm" ]]; then
			for t in clang ld.lld; do command -v $t >/dev/null || miss+=("$t"); done
		else
			for t in clang-$ccm ld.lld-$ccm llvm-ar-$ccm; do command -v "$t" >/dev/null || miss+=("$t"); done
		fi
		compgen -G "/usr/lib/llvm-$ccm/lib/libclang*.so*" >/dev/null || miss+=("libclang $ccm (/usr/lib/llvm-$ccm/lib)")
		((${#miss[@]} == 0)) ||
			why "the kernel was built with $ccv and its modules must be built with the same clang, but ${miss[*]} is not installed (packages clang-$ccm lld-$ccm llvm-$ccm: scripts/deps.sh kernel-deb, or scripts/deps.sh build)"
	fi
fi
case $(cfg CONFIG_INFINIBAND) in
m) ;;
y) why "CONFIG_INFINIBAND=y: the in-tree ib_cm is built into the kernel image and cannot be replaced by a module (it must be =m)" ;;
*) why "CONFIG_INFINIBAND is not set: the kernel has no RDMA core (ib_core) for ib_cm to run on" ;;
esac

if [[ $rust == y ]]; then
	want=$(cfg CONFIG_RUSTC_VERSION_TEXT | sed 's/^"//; s/"$//')
	if [[ ! -x $rustc ]] && ! command -v "$rustc" >/dev/null 2>&1; then
		why "no Rust compiler $rustc (Debian's rustc-web: make deps, or RUSTC=...)"
	else
		have=$("$rustc" --version 2>/dev/null)
		[[ -z $want || $want == "$have" ]] ||
			why "the kernel's Rust code was compiled by \"$want\" but RUSTC=$rustc is \"$have\": Rust metadata only works with the very same compiler (pass RUSTC= of the kernel build)"
	fi
	# bindgen generates the module's rdma bindings: BINDGEN if given, else the one the build
	# will use, scripts/lib.sh ktools's BINDGEN (the bindgen-cli scripts/deps.sh builds), never
	# another one found in PATH (Debian 12's bindgen is 0.60). The kernel wants >= 0.65.1
	# (scripts/min-tool-version.sh).
	bg=${BINDGEN:-$(source "$here/lib.sh" && echo "$BINDGEN_BIN")}
	[[ $bg == */* ]] || bg=$(command -v "$bg" 2>/dev/null || echo "$bg")
	bgmin=0.65.1
	if [[ ! -x $bg ]]; then
		why "no bindgen ($bg): the module's bindings are generated at build time; $here/deps.sh build (as root) builds bindgen-cli 0.70.1 there"
	else
		bgv=$("$bg" --version 2>/dev/null | sed -n '1s/^bindgen \([0-9][0-9.]*\).*/\1/p')
		[[ -n $bgv && $(printf '%s\n' "$bgmin" "$bgv" | sort -V | head -1) == "$bgmin" ]] ||
			why "bindgen $bg is version '${bgv:-unknown}'; the kernel needs $bgmin or newer: $here/deps.sh build (as root) builds bindgen-cli 0.70.1"
	fi
	missing=()
	for f in rust/libkernel.rmeta rust/libmacros.so rust/libcore.rmeta scripts/target.json; do
		[[ -e $kdir/$f ]] || missing+=("$f")
	done
	src=$(srctree_of "$kdir")
	[[ -e $src/rust/bindgen_parameters ]] || missing+=("rust/bindgen_parameters (source tree)")
	((${#missing[@]} == 0)) ||
		why "no built Rust support in the tree (missing ${missing[*]}): a 6.12 linux-headers package does not ship rust/; build against the kernel's full build directory, or a headers package made by 'make kernel-deb'"
fi

((${#reasons[@]} == 0)) || report

# Only a tree we could build for is worth comparing: the ABI we export is <rdma/ib_cm.h>.
src=$(srctree_of "$kdir")
hdr=$src/include/rdma/ib_cm.h
if [[ ! -f $hdr ]]; then
	why "$hdr missing: the kernel's rdma headers are not in the tree"
	report
fi
[[ -f $ref ]] || { echo "check-kdir: reference $ref missing (broken checkout)" >&2; exit 1; }
if ! d=$(diff <(normalise <"$ref") <(normalise <"$hdr")); then
	why "$hdr is not the <rdma/ib_cm.h> ib_cm-rs implements (Linux 6.12, scripts/abi/ib_cm.h): its users would be compiled against another ABI. First differences (< ours, > this kernel's):"
	while IFS= read -r l; do reasons+=("    $l"); done < <(grep "^[<>]" <<<"$d" | head -8 | cut -c1-200)
	report
fi

((quiet)) || echo "check-kdir: $kdir ok (Linux $release, Rust: $(cfg CONFIG_RUSTC_VERSION_TEXT | tr -d '"'))"
exit 0
