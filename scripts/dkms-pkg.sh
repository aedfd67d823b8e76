#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# What the ib-cm-rs-dkms package's maintainer scripts do (packaging/debian/postinst, prerm),
# run from the installed sources /usr/src/ib-cm-rs-<version>/.
#
#   dkms-pkg.sh configure VERSION   dkms add; then, for every kernel in /lib/modules with a
#                                   build tree or headers (the running kernel first), the
#                                   preflight (scripts/check-kdir.sh), dkms build and install,
#                                   depmod; says which ib_cm modprobe now loads there
#   dkms-pkg.sh remove VERSION      dkms remove --all, depmod for the kernels it was in; if
#                                   dkms fails, the same by hand (the module of VERSION out of
#                                   every updates/dkms/, dkms's entry for VERSION deleted)
#
# Neither ever fails the package's installation or removal: a kernel ib_cm-rs cannot support
# is refused with the preflight's message (the one `make KDIR=...` gives) and keeps its
# in-tree ib_cm; a build that fails leaves that kernel "added" in dkms (as before the build,
# nothing half-installed) and says where the log is; dkms is left in a state it can act on.
#
# DPKG_ROOT (set by dpkg --root ... --force-script-chrootless) is honoured: the sources, the
# dkms tree, /lib/modules and the kernels' build trees are looked up under it, which is how
# the tests install the package into a throwaway root (tests/install/deb-test.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=ib-cm-rs
cmd=${1:-}
ver=${2:-}
[[ -n $cmd && -n $ver ]] || { echo "usage: $0 configure|remove VERSION" >&2; exit 2; }
root=${DPKG_ROOT:-}
root=${root%/}
opts=()
[[ -z $root ]] || opts=(--sourcetree "$root/usr/src" --dkmstree "$root/var/lib/dkms" --installtree "$root/lib/modules")
say() { echo "ib-cm-rs-dkms: $*"; }

command -v dkms >/dev/null || { say "dkms is not installed: nothing done"; exit 0; }

depmod_k() { depmod ${root:+-b "$root"} -a "$1" 2>/dev/null || say "warning: depmod for $1 failed"; }

# The build tree of kernel K, under DPKG_ROOT when its link is absolute and resolves there.
kdir_of() {
	local l=$root/lib/modules/$1/build t
	if [[ -L $l ]]; then
		t=$(readlink "$l")
		if [[ -n $root && $t == /* && -e $root$t ]]; then echo "$root$t"; return; fi
	fi
	echo "$l"
}

# Which ib_cm `modprobe` loads for kernel K.
which_cm() {
	local p
	p=$(modinfo ${root:+-b "$root"} -k "$1" -n ib_cm 2>/dev/null) || { echo "no ib_cm module"; return; }
	case $p in
	*/updates/*) echo "ib_cm-rs ($p)" ;;
	*) echo "the in-tree ib_cm ($p)" ;;
	esac
}

dkmsdir=$root/var/lib/dkms/$name

# forget: what `dkms remove --all` does, by hand, for when dkms cannot. Left alone, a failed
# removal leaves /var/lib/dkms/ib-cm-rs/VERSION/source pointing at the sources dpkg then
# deletes (Debian 12's dkms dies on that in every later `dkms autoinstall`, that is at every
# kernel installation) and this version's ib_cm.ko in updates/dkms/, loaded with nothing to
# remove it. So: the module of this version goes from every kernel's updates/dkms/ (depmod
# there), then dkms's record of it.
forget() {
	local d k f l
	for d in "$root"/lib/modules/*/; do
		k=$(basename "$d")
		for f in "$d"updates/dkms/ib_cm.ko*; do
			[[ -f $f && $(modinfo -F version "$f" 2>/dev/null) == "$ver" ]] || continue
			rm -f "$f"
			say "$k: removed $f by hand"
			depmod_k "$k"
		done
	done
	rm -rf "${dkmsdir:?}/$ver"
	# dkms's kernel-<release>-<arch> links (relative: VERSION/<release>/<arch>) to it.
	for l in "$dkmsdir"/kernel-*; do
		[[ -L $l && ! -e $l ]] && rm -f "$l"
	done
	rmdir "$dkmsdir" 2>/dev/null
	return 0
}

case $cmd in
configure)
	# A registration of this version left by an earlier install (or by hand) goes first.
	if [[ -n $(dkms status -m "$name" -v "$ver" "${opts[@]}" 2>/dev/null) ]]; then
		dkms remove -m "$name" -v "$ver" --all --no-depmod "${opts[@]}" >/dev/null 2>&1 || forget
	fi
	if ! dkms add -m "$name" -v "$ver" "${opts[@]}" >/dev/null; then
		say "dkms add $name/$ver failed: the module is not built for any kernel"
		exit 0
	fi
	running=$(uname -r)
	kernels=()
	[[ -d $root/lib/modules/$running ]] && kernels+=("$running")
	for d in "$root"/lib/modules/*/; do
		[[ -d $d ]] || continue # no kernel at all: the pattern itself
		k=$(basename "$d")
		[[ $k == "$running" ]] || kernels+=("$k")
	done
	n=0
	for k in "${kernels[@]}"; do
		kd=$(kdir_of "$k")
		if [[ ! -f $kd/Makefile ]]; then
			say "$k: no kernel headers or build tree (/lib/modules/$k/build): not built"
			continue
		fi
		# The preflight prints its reasons (the same message as make KDIR=...); nothing is built.
		if ! "$here/check-kdir.sh" --quiet "$kd"; then
			say "$k: not built (the reasons above); modprobe ib_cm there gives $(which_cm "$k")"
			continue
		fi
		say "$k: building ib_cm-rs $ver (a minute or two)"
		if ! dkms build -m "$name" -v "$ver" -k "$k" --kernelsourcedir "$kd" "${opts[@]}" >/dev/null; then
			say "$k: the build failed (log: ${root:-}/var/lib/dkms/$name/$ver/build/make.log); the in-tree ib_cm stays in use"
			continue
		fi
		if ! dkms install -m "$name" -v "$ver" -k "$k" --kernelsourcedir "$kd" --no-depmod "${opts[@]}" >/dev/null; then
			say "$k: dkms install failed; the in-tree ib_cm stays in use"
			dkms uninstall -m "$name" -v "$ver" -k "$k" --no-depmod "${opts[@]}" >/dev/null 2>&1
			continue
		fi
		depmod_k "$k"
		n=$((n + 1))
		say "$k: installed; modprobe now loads $(which_cm "$k")"
	done
	((n > 0)) || say "ib_cm-rs $ver is registered with dkms but built for no kernel; dkms builds it for each Rust kernel installed later"
	if [[ -z $root && -d /sys/module/ib_cm && ! -e /sys/module/ib_cm/version ]]; then
		say "note: the ib_cm loaded now is the in-tree one; unload it and its users, or reboot (Documentation/install.rst)"
	fi
	;;
remove)
	# The kernels it is installed for, read before dkms forgets them.
	mapfile -t ks < <(dkms status -m "$name" -v "$ver" "${opts[@]}" 2>/dev/null |
		sed -n 's/^[^,]*, \([^,]*\), [^:]*: installed.*/\1/p')
	if [[ -n $(dkms status -m "$name" -v "$ver" "${opts[@]}" 2>/dev/null) ]]; then
		if ! dkms remove -m "$name" -v "$ver" --all --no-depmod "${opts[@]}" >/dev/null; then
			say "warning: dkms remove $name/$ver failed: removing its modules and its dkms entry by hand"
			forget
		fi
	fi
	# Whatever dkms status no longer lists but left behind (a removal by hand, an older dkms).
	[[ ! -e $dkmsdir/$ver && ! -L $dkmsdir/$ver/source ]] || forget
	for k in "${ks[@]}"; do
		[[ -d $root/lib/modules/$k ]] || continue
		depmod_k "$k"
		say "$k: removed; modprobe now loads $(which_cm "$k")"
	done
	;;
*) echo "usage: $0 configure|remove VERSION" >&2; exit 2 ;;
esac
exit 0
