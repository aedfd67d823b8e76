#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Boots the test kernel under QEMU (TCG) with a hard timeout and writes the console log.
#
#   run.sh BZIMAGE INITRAMFS CM MODE LOG [TIMEOUT_S]
# CM is rs, c or none, MODE is check or demo. $QEMU_NET replaces `-nic none` (the two-guest
# socket network), $QEMU_EXTRA is added to QEMU's options (the benchmark's `-plugin`) and
# $KAPPEND to the kernel command line. QEMU_SMP=N gives the guest
# N CPUs (default 2); QEMU_ICOUNT=1 runs it on QEMU's instruction-counting clock (below).
# Exit status: 0 if the guest reached the end, 2 if QEMU timed out (the guest hung), 3 if it
# was ended by a TERM, 1 on any other QEMU failure or a guest that did not reach the end. A
# guest that dies before its /init runs is booted once more (see below).
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
# no_timer_check: on a loaded host TCG can get no CPU during the kernel's IO-APIC timer check,
# which then panics ("IO-APIC + timer doesn't work!"); the check proves nothing under emulation.
# QEMU runs in the background so that a TERM (run-pair.sh ending a pair whose other side is
# gone) reaches it through `timeout`, which passes the signal on.
qpid=
# The trap waits for QEMU (through `timeout`, whose -k 5 KILLs a QEMU that ignores the TERM)
# so that nothing of this guest is left running when run.sh ends.
trap '[[ -n $qpid ]] && { kill -TERM $qpid 2>/dev/null; wait $qpid; }; exit 3' TERM INT
boot() {
	timeout --foreground -k 5 "$limit" qemu-system-x86_64 \
		-machine pc -cpu max -m 2G -smp "$smp,sockets=$smp" \
		-kernel "$bz" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 oops=panic tsc=reliable no_timer_check loglevel=7 ibcm.cm=$cm ibcm.mode=$mode$clock ${KAPPEND:-}" \
		"${icount[@]}" -display none -monitor none -serial "file:$log" ${QEMU_NET:--nic none} ${QEMU_EXTRA:-} -no-reboot </dev/null &
	qpid=$!
	wait $qpid
	local r=$?
	qpid=
	return $r
}
boot
rc=$?
# A guest that ended before its /init printed IBCM-INIT died in the kernel's boot (a panic of
# a starved TCG guest, QEMU killed): boot it once more, and say so in the log and on stderr.
# Whatever QEMU's status: with panic=-1 and -no-reboot a guest panic ends QEMU with status 0.
# Not after a timeout (124, or 137 once `timeout` had to KILL): a guest that hangs before its
# init hangs again. RUN_NO_RETRY=1 (a pair run retries both guests together) turns this off.
if ((rc != 124 && rc != 137)) && [[ -z ${RUN_NO_RETRY:-} ]] &&
	! grep -q "IBCM-INIT" "$log" 2>/dev/null; then
	cp "$log" "$log.boot1" 2>/dev/null
	why=$(grep -m 1 -E "Kernel panic|timed out|BUG:" "$log.boot1" 2>/dev/null | tr -d '\r' | cut -c1-160)
	echo "run: retry: guest ($cm, $mode) died before its init ran (status $rc: ${why:-no panic line}); booting it again (first log: $log.boot1)" >&2
	boot
	rc=$?
	echo "IBCM-RETRY: guest ($cm, $mode) booted twice: the first boot died before its init ran (the retry ended with status $rc; first boot: ${why:-no panic line}; log $log.boot1)" >>"$log"
fi
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
