#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# QEMU layer: boots the same image twice, once with the in-tree C ib_cm and once with ours,
# runs KUnit (white-box and conformance) and end-to-end checks; then runs the two-guest
# interop (responder with ours, then with C; wire checks, then the rdma-core tool matrix);
# parses all the logs.
# Prints the parsed results and `QEMU <passed> <failed>` last.
#
#   run-qemu.sh [debug|release] [softib]
# `softib` runs only the InfiniBand part (the soft IB HCA, tests/softib): one boot per CM in
# guest mode softib (the connection suites on softib0/softib1), compared with each other; no
# rxe tests, no two-guest run.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/scripts/lib.sh"
variant=${1:-debug}
only=${2:-}
out=$("$top/tests/build.sh" "$variant") || { echo "QEMU 0 1"; exit 1; }

if [[ $only == softib ]]; then
	logs=()
	for cm in c rs; do
		log "qemu: soft IB HCA only, with the $cm CM"
		"$top/tests/qemu/run.sh" "$out/bzImage" "$out/initramfs.cpio.gz" "$cm" softib "$out/guest-$cm.log" 900
		logs+=("$out/guest-$cm.log")
	done
	"$top/tests/qemu/parse.py" "${logs[@]}" | tee "$out/qemu-softib-results.txt" | sed '$d' >&2
	retry_note "$out/qemu-softib-results.txt" >&2
	read -r _ passed failed < <(tail -1 "$out/qemu-softib-results.txt")
	echo "QEMU $passed $failed"
	exit 0
fi

logs=()
fail_boot=0
for cm in c rs; do
	log "qemu: booting with the $cm CM"
	# A hang guard, not a budget: one boot takes 5 to 8 minutes on a busy 2-core host.
	"$top/tests/qemu/run.sh" "$out/bzImage" "$out/initramfs.cpio.gz" "$cm" check "$out/guest-$cm.log" 1200 || fail_boot=1
	logs+=("$out/guest-$cm.log")
done
# Interop over a wire: A (raw MADs, then the stock C stack) against B running ours, then B
# running C (the test checks the wire, so both must pass). Each boot ends with the rdma-core
# tool matrix (rping, ucmatose, udaddy both ways, C on A against B's CM): the B=c boot is the
# harness reference of the B=rs one, in the same run.
for bcm in rs c; do
	log "qemu: two guests, responder runs the $bcm CM"
	"$top/tests/qemu/run-pair.sh" "$out/bzImage" "$out/initramfs.cpio.gz" "$bcm" \
		"$out/pair-$bcm-a.log" "$out/pair-$bcm-b.log" 600 || fail_boot=1
	logs+=("$out/pair-$bcm-a.log" "$out/pair-$bcm-b.log")
done
"$top/tests/qemu/parse.py" --compare-counters rs "${logs[@]}" | tee "$out/qemu-results.txt" | sed '$d' >&2
read -r _ passed failed < <(tail -1 "$out/qemu-results.txt")
echo "QEMU $passed $failed"
