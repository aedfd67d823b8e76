#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# isolate_host (tests/install/lib.sh), which keeps dkms-check.sh and deb-test.sh off the
# host's /var/lib/dkms, /usr/src and /lib/modules, tested on three stand-in trees under a
# scratch directory (one of them absent, as /lib/modules is on a machine without a kernel
# package), so the host's real trees are not touched even when the isolation is broken:
#   - isolated, a script that writes into all three (as dkms would) leaves them as they were,
#     and its _left_host_untouched check passes;
#   - with the scratch mounts taken out (the isolation broken), the same script's writes
#     reach the stand-ins and _left_host_untouched fails, naming what changed.
#
#   isolation-test.sh       prints `RESULT <passed> <failed>` last
#   (isolation-test.sh inner MODE BASE: the script under test, run by the above)
set -uo pipefail
source "$(dirname "$0")/lib.sh"

if [[ ${1:-} == inner ]]; then
	mode=$2 base=$3
	host_trees=("$base/var-lib-dkms" "$base/usr-src" "$base/absent/lib-modules")
	# Broken: "scratch" trees that are the real ones.
	[[ $mode == broken ]] && scratch_mount() { mkdir -p "$1"; }
	isolate_host demo inner "$mode" "$base"
	: >"${host_trees[0]}/mok.key"
	mkdir -p "${host_trees[1]}/ib-cm-rs-1.2.3" "${host_trees[2]}/6.12.118/updates/dkms"
	ok demo_wrote_into_the_trees
	result
	exit
fi

work=$(mktemp -d /tmp/ibcm-isolation.XXXXXX)
trap 'rm -rf "$work"' EXIT
for mode in isolated broken; do
	b=$work/$mode
	mkdir -p "$b/var-lib-dkms" "$b/usr-src"
	echo keep >"$b/usr-src/existing"
	before=$(cd "$b" && find . | sort)
	# Not in the caller's namespace: isolate_host must set up one of its own.
	env -u IBCM_ISOLATED "$0" inner "$mode" "$b" >"$work/$mode.out" 2>"$work/$mode.err"
	res=$(tail -1 "$work/$mode.out")
	after=$(cd "$b" && find . | sort)
	if [[ $mode == isolated ]]; then
		WHY="result '$res'; the stand-ins went from '$(tr '\n' ' ' <<<"$before")' to '$(tr '\n' ' ' <<<"$after")'; $(grep -v '^ok' "$work/$mode.err" | head -3 | tr '\n' ' ')" \
			check isolation_keeps_writes_off_the_host_trees \
			bash -c '[[ $1 == "RESULT 2 0" && $2 == "$3" ]] && grep -q "^ok .*demo_left_host_untouched" "$4"' \
			_ "$res" "$before" "$after" "$work/$mode.err"
	else
		WHY="result '$res'; $(grep 'demo_left_host_untouched' "$work/$mode.err" | head -1)" \
			check isolation_check_fails_when_writes_reach_the_host_trees \
			bash -c '[[ $1 == "RESULT 1 1" ]] && grep -q "^NOT OK.*demo_left_host_untouched.* # the host.s trees changed:.*mok.key" "$2"' \
			_ "$res" "$work/$mode.err"
	fi
done
result
