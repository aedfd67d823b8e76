#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Boots the test kernel under QEMU (TCG) with a hard timeout and writes the console log.
#
#   run.sh BZIMAGE INITRAMFS CM MODE LOG [TIMEOUT_S]
# CM is rs, c or none, MODE is check or demo. $QEMU_NET replaces `-nic none` (the two-guest
# socket network), $QEMU_EXTRA is added to QEMU's options (the benchmark's `-plugin`) and
# $KAPPEND to the kernel command line. QEMU_SMP=N gives the guest
# N CPUs (default 2); QEMU_ICOUNT=1 runs it on QEMU's instruction-counting clock (below).
# Exit status: 0 if the guest reached the end, 2 if QEMU timed out (the guest hung), 1 on any
# other QEMU failure.
set -uo pipefail
bz=$1 initrd=$2 cm=$3 mode=$4 log=$5 limit=${6:-600}

command -v qemu-system-x86_64 >/dev/null || { echo "run: error: qemu-system-x86_64 missing" >&2; exit 1; }
[[ -f $bz ]] || { echo "run: error: kernel image $bz missing" >&2; exit 1; }
[[ -f $initrd ]] || { echo "run: error: initramfs $initrd missing" >&2; exit 1; }

# The guest's TSC under TCG is the host's. The guest calibrates it against the PIT, which on a
# busy host fails now and then ("Fast TSC calibration failed", "Marking TSC unstable"): the
# guest then runs on the jiffies clocksource and sched_clock, and every timestamp (ftrace's
# profiler, dmesg) has 4 ms steps. So the host's TSC frequency is handed over when it is known
# (a host with a constant TSC: its kernel's "tsc: Detected", else /proc/cpuinfo).
tsc_khz() {
	grep -qw constant_tsc /proc/cpuinfo 2>/dev/null || return 0
	local mhz
	mhz=$(dmesg 2>/dev/null | sed -n 's/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p; s/.*tsc: Detected \([0-9.]*\) MHz processor.*/\1/p' | tail -1)
	[[ -n $mhz ]] || mhz=$(awk -F': *' '/^cpu MHz/ { print $2; exit }' /proc/cpuinfo)
	[[ -n $mhz ]] && awk -v m="$mhz" 'BEGIN { printf " tsc_early_khz=%d", m * 1000 }'
}
# QEMU_ICOUNT=1 (the connection benchmark's low-noise mode): the guest's clock counts
# executed instructions (-icount shift=0: one instruction is one nanosecond, idle time skipped),
# so every time the guest measures is its instruction path length, free of host load. The
# guest calibrates its TSC against that clock itself (the host's frequency would be wrong).
clock="$(tsc_khz)"
icount=()
if [[ -n ${QEMU_ICOUNT:-} ]]; then
	clock=""
	icount=(-icount shift=0,sleep=off)
fi
smp=${QEMU_SMP:-2}
# One socket per CPU so the guest really has them all (no ACPI: -smp N alone boots one CPU);
# tsc=reliable keeps timestamps fine-grained; panic=-1 makes a panic end QEMU at once.
timeout --foreground -k 5 "$limit" qemu-system-x86_64 \
	-machine pc -cpu max -m 2G -smp "$smp,sockets=$smp" \
	-kernel "$bz" -initrd "$initrd" \
	-append "console=ttyS0 panic=-1 oops=panic tsc=reliable loglevel=7 ibcm.cm=$cm ibcm.mode=$mode$clock ${KAPPEND:-}" \
	"${icount[@]}" -display none -monitor none -serial "file:$log" ${QEMU_NET:--nic none} ${QEMU_EXTRA:-} -no-reboot </dev/null
rc=$?
if ((rc == 124 || rc == 137)); then
	echo "run: error: QEMU ($cm, $mode) timed out after ${limit}s; guest killed (log: $log)" >&2
	exit 2
fi
if ((rc != 0)); then
	echo "run: error: QEMU ($cm, $mode) failed with status $rc (log: $log)" >&2
	exit 1
fi
grep -q "IBCM-DONE" "$log" || { echo "run: error: guest ($cm) did not reach the end (log: $log)" >&2; exit 1; }
exit 0
