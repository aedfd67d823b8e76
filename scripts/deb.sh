#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make deb`: the DKMS Debian package ib-cm-rs-dkms_<version>_all.deb, as the in-distro
# *-dkms packages are made: the module's sources under /usr/src/ib-cm-rs-<version>/ (what
# dkms.conf's build needs and nothing else), a postinst that adds, builds and installs the
# module through dkms for every installed kernel it can support (packaging/debian/postinst,
# scripts/dkms-pkg.sh) and a prerm that removes it again.
#
#   scripts/deb.sh [OUTDIR]      build it into OUTDIR (default: out/deb); prints the .deb's path
#
# Works in a git tree and in an exported tarball: the version is scripts/version.sh's (git
# describe, else .version, else CHANGELOG.md's newest release + "~unknown"). Built with
# dpkg-deb from a tree laid out here (control, md5sums, maintainer scripts, copyright,
# changelog), as root-owned files without fakeroot (--root-owner-group).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
top=$(cd "$here/.." && pwd -P)
# Before anything is created: dpkg-deb refuses a DEBIAN/ of mode 0700 (a caller's umask 077).
umask 022
outdir=${1:-$top/out/deb}
pkgdir=$top/packaging/debian

die() { echo "deb: error: $*" >&2; exit 1; }
command -v dpkg-deb >/dev/null || die "dpkg-deb missing (package dpkg)"

name=ib-cm-rs
pkg=$name-dkms
ver=$("$here/version.sh") || die "no version (scripts/version.sh)"
commit=$("$here/version.sh" --commit) || die "no commit (scripts/version.sh)"
[[ $ver =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || die "version '$ver' is not a valid Debian native version"

# What the DKMS build reads: Kbuild (not the top-level Makefile, which finds the project's
# test kernel), dkms.conf, the sources, the scripts Kbuild, dkms.conf and the maintainer
# scripts call, and scripts/deps.sh, which the preflight names for bindgen-cli (no Debian 12
# package has a version the kernel accepts).
ship=(Kbuild dkms.conf version.c src include scripts/abi scripts/lib.sh
      scripts/version.sh scripts/check-kdir.sh scripts/dkms-make.sh scripts/dkms-pkg.sh
      scripts/deps.sh)
list_files() {
	# version.sh has already failed if a .git here is unreadable.
	if [[ -e $top/.git ]]; then
		# As git has them, uncommitted files included, no build outputs.
		git -c safe.directory="$top" -C "$top" ls-files -co --exclude-standard -- "${ship[@]}"
	else
		# An exported tree: the same files, less anything a build left (.gitignore's patterns).
		(cd "$top" && find "${ship[@]}" -type f ! -name '*.o' ! -name '*.ko' ! -name '*.mod' \
			! -name '*.mod.c' ! -name '*.cmd' ! -name '*.d' ! -name '*.symvers' \
			! -name '*.order' ! -name '*_generated.rs' | sort)
	fi
}

work=$(mktemp -d /tmp/ibcm-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
srcdir=$root/usr/src/$name-$ver
doc=$root/usr/share/doc/$pkg
mkdir -p "$srcdir" "$doc" "$root/DEBIAN"

(cd "$top" && list_files | tar -c --no-recursion -T -) | tar -x -C "$srcdir" ||
	die "cannot copy the sources"
for f in "${ship[@]}"; do [[ -e $srcdir/$f ]] || die "$f missing from the source tree"; done
# The version and commit, fixed for a tree without git.
echo "$ver $commit" >"$srcdir/.version"
# Plain permissions: scripts executable, everything else 0644, directories 0755.
find "$srcdir" -type d -exec chmod 0755 {} +
find "$srcdir" -type f -exec chmod 0644 {} +
chmod 0755 "$srcdir"/scripts/*.sh

# /usr/share/doc: copyright (machine-readable), the changelog (native package: changelog.gz,
# from CHANGELOG.md's releases), and a README saying where the rest is.
install -m 0644 "$pkgdir/copyright" "$doc/copyright"
maint=$(sed -n 's/^Maintainer: //p' "$pkgdir/control")
"$here/deb-changelog.sh" "$top/CHANGELOG.md" "$ver" "$commit" "$maint" | gzip -9n >"$doc/changelog.gz"
install -m 0644 "$pkgdir/README.Debian" "$doc/README.Debian"
# The changelog's date, not the build time: the same tree gives the same package.
date=$(zcat "$doc/changelog.gz" | sed -n 's/^ -- .*>  //p' | head -1)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date -d "$date" +%s)}

for s in postinst prerm postrm; do
	sed "s/#VERSION#/$ver/g" "$pkgdir/$s" >"$root/DEBIAN/$s"
	chmod 0755 "$root/DEBIAN/$s"
done
size=$(du -sk --apparent-size "$root" --exclude=DEBIAN | cut -f1)
sed -e "s/#VERSION#/$ver/g" -e "s/#SIZE#/$size/g" "$pkgdir/control" >"$root/DEBIAN/control"
(cd "$root" && find usr -type f -printf '%P\n' | sort | sed 's|^|usr/|' | xargs -d '\n' md5sum >DEBIAN/md5sums)
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$outdir"
deb=$outdir/${pkg}_${ver}_all.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null || die "dpkg-deb --build failed"
echo "$deb"
