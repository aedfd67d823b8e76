#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Reproduces the race of cm.c's REJ TIMEOUT lookup (Documentation/testing.rst, under
# destroy_passive_races_rej_timeout): boots the debug image with an init that runs that KUnit
# case (twenty rounds) RUNS times on CM (c or rs) and stops at the first KASAN report, while
# LOAD busy loops on the host preempt the guest's CPUs: the window is a few instructions wide
# and on an idle host it hardly ever opens. Not part of `make check` (on C it is meant to fail).
# Exit status: 0 if no KASAN report, 1 if one, 2 if the boot failed.
#
#   tests/qemu/race-repro.sh CM [RUNS] [LOAD]
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
source "$top/scripts/lib.sh"
cm=${1:?usage: race-repro.sh c|rs [RUNS] [LOAD]}
runs=${2:-250}
load=${3:-3}
[[ $cm == c || $cm == rs ]] || die "CM must be c or rs"
out=$("$top/tests/build.sh" debug) || die "build failed"
tmp=$(mktemp -d)
loops=()
cleanup() {
	((${#loops[@]})) && kill "${loops[@]}" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/root"
(cd "$tmp/root" && zcat "$out/initramfs.cpio.gz" | cpio -idm --quiet) || die "cannot unpack the initramfs"
# Right after the CM is loaded, the init runs the case RUNS times instead of the checks.
python3 - "$tmp/root/init" "$runs" <<'PY' || die "cannot patch the init"
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
	$((runs * 6 + 300)) || { log "race-repro: the boot failed (log: $res/$cm.log)"; exit 2; }
done_runs=$(grep -c "ok 1 destroy_passive_races_rej_timeout" "$res/$cm.log")
if grep -q "BUG: KASAN" "$res/$cm.log"; then
	log "race-repro: $cm: KASAN report in run $((done_runs + 1)): $(grep -m 1 'BUG: KASAN' "$res/$cm.log" | cut -c1-120)"
	exit 1
fi
log "race-repro: $cm: no KASAN report in $done_runs runs ($((done_runs * 20)) rounds)"
