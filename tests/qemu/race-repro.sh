#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Reproduces the race of cm.c's REJ TIMEOUT lookup (Documentation/testing.rst, under
# destroy_passive_races_rej_timeout): boots the debug image with an init that runs that KUnit
# case (twenty rounds) RUNS times on CM (c or rs) and stops at the first KASAN report, while
# LOAD busy loops on the host preempt the guest's CPUs: the window is a few instructions wide
# and on an idle host it hardly ever opens. Not part of `make check` (on C it is meant to fail),
# and not to be run beside it: it rebuilds out/debug, which the check's boots use.
# Exit status: 0 if all RUNS runs passed without a KASAN report, 1 on a KASAN report, 2 if
# the set-up or the boot failed or a run failed otherwise.
#
#   tests/qemu/race-repro.sh CM [RUNS] [LOAD]
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
source "$top/scripts/lib.sh"
fail() { log "race-repro: error: $*"; exit 2; }
cm=${1:-}
runs=${2:-250}
load=${3:-3}
[[ $cm == c || $cm == rs ]] || fail "usage: race-repro.sh c|rs [RUNS] [LOAD]"
[[ $runs =~ ^[1-9][0-9]*$ && $load =~ ^[0-9]+$ ]] || fail "RUNS must be a count above 0, LOAD a count"
out=$("$top/tests/build.sh" debug) || fail "build failed"
tmp=$(mktemp -d)
loops=()
cleanup() {
	((${#loops[@]})) && kill "${loops[@]}" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/root"
(cd "$tmp/root" && zcat "$out/initramfs.cpio.gz" | cpio -idm --quiet) || fail "cannot unpack the initramfs"
# Right after the CM is loaded, the init runs the case RUNS times instead of the checks.
python3 - "$tmp/root/init" "$runs" <<'PY' || fail "cannot patch the init"
import sys
path, runs = sys.argv[1], sys.argv[2]
s = open(path).read()
anchor = 'e2e "ok load_ib_cm_$CM"\n'
block = anchor + f'''KF=/sys/module/kunit/parameters/filter_glob
for i in $(seq 1 {runs}); do
	printf '%s' 'ib_cm_conn_rs_only.destroy_passive_races_rej_timeout' >$KF
	klog "IBCM-KTAP-BEGIN repro-$i-$CM"
	ins /lib/modules/test/ib_cm_conn_conformance.ko cm=$CM dev0=rxe0 dev1=rxe1
	klog "IBCM-KTAP-END repro-$i-$CM"
	rmmod ib_cm_conn_conformance 2>/dev/null
	dmesg | grep -q "BUG: KASAN" && break
done
finish
'''
if s.count(anchor) != 1:
    sys.exit('the init has no single load line')
open(path, 'w').write(s.replace(anchor, block))
PY
(cd "$tmp/root" && find . | cpio -o -H newc --quiet | gzip -1) >"$tmp/initramfs.cpio.gz"
for _ in $(seq 1 "$load"); do
	sh -c 'while :; do :; done' &
	loops+=($!)
done
res=$top/out/race-repro
mkdir -p "$res"
log "race-repro: $cm, up to $runs runs of 20 rounds, $load busy loops on the host"
"$top/tests/qemu/run.sh" "$out/bzImage" "$tmp/initramfs.cpio.gz" "$cm" check "$res/$cm.log" \
	$((runs * 6 + 300))
rc=$?
# A report counts even if the guest then died or hung; its run is the last one begun before it.
if grep -q "BUG: KASAN" "$res/$cm.log"; then
	run=$(sed -n '/BUG: KASAN/q; s/.*IBCM-KTAP-BEGIN repro-\([0-9]*\)-.*/\1/p' "$res/$cm.log" | tail -1)
	log "race-repro: $cm: KASAN report in run ${run:-?}: $(grep -m 1 'BUG: KASAN' "$res/$cm.log" | cut -c1-120)"
	exit 1
fi
((rc == 0)) || fail "the boot failed (run.sh status $rc, log: $res/$cm.log)"
ended=$(grep -c "IBCM-KTAP-END repro-" "$res/$cm.log")
failed=$(grep -c "not ok 1 destroy_passive_races_rej_timeout" "$res/$cm.log")
passed=$(grep -c "^[^a-z]*ok 1 destroy_passive_races_rej_timeout" "$res/$cm.log")
((ended == runs && passed == runs && failed == 0)) ||
	fail "$cm: $ended of $runs runs ended, $passed passed, $failed failed (log: $res/$cm.log)"
log "race-repro: $cm: no KASAN report in $runs runs ($((runs * 20)) rounds)"
