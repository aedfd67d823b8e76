#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The version of a tree with uncommitted changes (scripts/version.sh), in a scratch clone of
# HEAD whose tags are replaced by one v1.2.3 made here (the repository's own tags are not
# touched, and the checks do not depend on them):
#   - on the tag, clean: 1.2.3 and the bare commit; an untracked file changes neither;
#   - a tracked file changed: 1.2.3+0.gHASH.dirty and HASH-dirty; one commit later, clean:
#     1.2.3+1.gHASH2, changed again: 1.2.3+1.gHASH2.dirty; no tag at all: 0.0.0~gHASH.dirty;
#   - dpkg orders them 1.2.3 < 1.2.3+0.gHASH.dirty < 1.2.3+1.gHASH2 < 1.2.3+1.gHASH2.dirty <
#     the next commit's version (a dirty build upgrades its own commit's, never a later one's);
#   - ib_cm.ko built in the changed tree against KDIR shows that version and commit in modinfo.
#
#   version-test.sh KDIR     prints `RESULT <passed> <failed>` last
set -uo pipefail
source "$(dirname "$0")/lib.sh"
kdir=${1:?usage: version-test.sh KDIR}
work=$(mktemp -d /tmp/ibcm-version.XXXXXX)
trap 'rm -rf "$work"' EXIT
c=$work/c
gc() { git -C "$c" -c user.name=test -c user.email=test@localhost "$@"; }
v() { "$c/scripts/version.sh" "$@"; }

# The committed tree of HEAD with this tree's scripts/version.sh on top, committed in the
# clone (so a tree under test with uncommitted changes to version.sh tests those).
if ! { git clone -q --no-checkout "$itop" "$c" && gc checkout -q "$(git -C "$itop" rev-parse HEAD)" &&
	cp "$itop/scripts/version.sh" "$c/scripts/version.sh" && gc commit -q -a -m "version.sh under test" --allow-empty &&
	gc tag -l | xargs -r git -C "$c" tag -d >/dev/null && gc tag v1.2.3; } 2>"$work/setup.err"; then
	notok version_setup "cannot make the clone: $(tr '\n' ' ' <"$work/setup.err")"
	result
	exit
fi
h1=$(gc rev-parse HEAD)

WHY="version '$(v)', commit '$(v --commit)'" check version_on_tag_clean \
	bash -c '[[ $($0) == 1.2.3 && $($0 --commit) == "$1" ]]' "$c/scripts/version.sh" "$h1"
: >"$c/untracked-file"
WHY="version '$(v)', commit '$(v --commit)'" check version_untracked_file_is_not_dirty \
	bash -c '[[ $($0) == 1.2.3 && $($0 --commit) == "$1" ]]' "$c/scripts/version.sh" "$h1"
rm -f "$c/untracked-file"

echo "a local change" >>"$c/README.md"
d1=$(v)
WHY="version '$d1', commit '$(v --commit)'" check version_on_tag_dirty \
	bash -c '[[ $1 == "1.2.3+0.g${2:0:12}.dirty" && $($0 --commit) == "$2-dirty" ]]' "$c/scripts/version.sh" "$d1" "$h1"

# modinfo of a module built in that tree (its commit's clean build is what the package of
# the tag would be).
read -r -a ktools <<<"$("$itop/scripts/lib.sh" ktools "$kdir")"
s=$(date +%s)
if make -C "$kdir" M="$c" "${ktools[@]}" modules >"$work/build.log" 2>&1 && [[ -f $c/ib_cm.ko ]]; then
	mv=$(modinfo -F version "$c/ib_cm.ko") mc=$(modinfo -F commit "$c/ib_cm.ko")
	WHY="modinfo version '$mv' commit '$mc', tree: '$d1' '$h1-dirty'" \
		check "version_dirty_shown_by_modinfo ($(($(date +%s) - s)) s)" \
		test "$mv" = "$d1" -a "$mc" = "$h1-dirty"
else
	notok version_dirty_shown_by_modinfo "the build failed: $(grep -m3 -iE 'error' "$work/build.log" | tr '\n' ' ')"
fi

gc commit -q -a -m "one commit after the tag"
h2=$(gc rev-parse HEAD)
c2=$(v)
WHY="version '$c2'" check version_after_tag_clean test "$c2" = "1.2.3+1.g${h2:0:12}"
echo "another local change" >>"$c/README.md"
d2=$(v)
WHY="version '$d2', commit '$(v --commit)'" check version_after_tag_dirty \
	bash -c '[[ $1 == "1.2.3+1.g${2:0:12}.dirty" && $($0 --commit) == "$2-dirty" ]]' "$c/scripts/version.sh" "$d2" "$h2"
gc commit -q -a -m "two commits after the tag"
c3=$(v)
WHY="dpkg order of 1.2.3 '$d1' '$c2' '$d2' '$c3'" check version_dirty_sorts_between_its_commit_and_the_next \
	bash -c 'for ((i = 1; i < $#; i++)); do j=$((i + 1)); dpkg --compare-versions "${!i}" lt "${!j}" || { echo "not ${!i} < ${!j}"; exit 1; }; done' \
	_ 1.2.3 "$d1" "$c2" "$d2" "$c3"

echo "a change without a tag" >>"$c/README.md"
git -C "$c" tag -d v1.2.3 >/dev/null
h3=$(gc rev-parse HEAD)
d4=$(v)
WHY="version '$d4'" check version_untagged_dirty test "$d4" = "0.0.0~g${h3:0:12}.dirty"
result
