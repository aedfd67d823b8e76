#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Boots two guests joined by a QEMU socket network on 127.0.0.1 (nothing else): A, the
# requester (no CM, then the stock C stack), and B, the responder running CM B_CM (rs or c).
# check ends with the rdma-core tool matrix (C on A, B_CM on B); interop runs that matrix alone.
#
#   run-pair.sh BZIMAGE INITRAMFS B_CM LOG_A LOG_B [TIMEOUT_S] [check|bench|interop]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bz=$1 initrd=$2 bcm=$3 log_a=$4 log_b=$5 limit=${6:-600} mode=${7:-check}

# Under TCG the guest's TSC is the host's. Left to itself a guest calibrates it against the
# emulated PIT, which on a loaded host either fails (jiffies) or, now and then, "succeeds" with a
# wrong rate (440 MHz for a 2445 MHz TSC was seen): that guest's clock and TSC-deadline timers
# then run several times too fast and its `timeout`s fire early. Tell the guests the host's
# rate (rdtsc against CLOCK_MONOTONIC over 100 ms) so that both keep real time. Not for bench,
# whose method is documented with the jiffies clock.
tsc=
if [[ $mode != bench ]]; then
	tmp=$(mktemp -d)
	if gcc -O2 -x c -o "$tmp/tsc_khz" - 2>/dev/null <<'C'
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(void)
{
	double t0 = now(), t1;
	unsigned long long c0 = __rdtsc(), c1;
	do { t1 = now(); } while (t1 - t0 < 0.1);
	c1 = __rdtsc();
	printf("%.0f\n", (c1 - c0) / (t1 - t0) / 1000);
	return 0;
}
C
	then
		khz=$("$tmp/tsc_khz")
		# Plausible rates only (100 MHz .. 10 GHz); otherwise the guests calibrate as before.
		if (( khz > 100000 && khz < 10000000 )); then tsc="tsc_early_khz=$khz"; fi
	fi
	rm -rf "$tmp"
	[[ -n $tsc ]] || echo "run-pair: warning: host TSC rate unknown; guests calibrate their own" >&2
fi

# attempt: boots A and B; as soon as one of them is gone with a failure, the other is ended
# (it would otherwise wait for its peer until its own timeout). Status 0 if both reached the
# end; 4 if the guest that failed first died before its /init ran (the pair is then booted
# once more, together: one side cannot rejoin the other's socket network alone). Only that
# guest's log decides: the other one, ended here, may not have reached its init either.
attempt() {
	local port=$(( 20000 + RANDOM % 20000 ))
	RUN_NO_RETRY=1 QEMU_NET="-netdev socket,id=n0,listen=127.0.0.1:$port -device virtio-net-pci,netdev=n0,mac=52:54:00:12:34:01" \
	KAPPEND="ibcm.role=a $tsc" "$here/run.sh" "$bz" "$initrd" none "$mode" "$log_a" "$limit" &
	local pa=$!
	sleep 1
	RUN_NO_RETRY=1 QEMU_NET="-netdev socket,id=n0,connect=127.0.0.1:$port -device virtio-net-pci,netdev=n0,mac=52:54:00:12:34:02" \
	KAPPEND="ibcm.role=b $tsc ${IBCM_PROF:+ibcm.prof=$IBCM_PROF}" "$here/run.sh" "$bz" "$initrd" "$bcm" "$mode" "$log_b" "$limit" &
	local pb=$! first=0 second=0 done_pid
	wait -n -p done_pid $pa $pb || first=$?
	local other=$pb gone=A gone_log=$log_a other_log=$log_b
	[[ $done_pid == "$pb" ]] && other=$pa gone=B gone_log=$log_b other_log=$log_a
	if ((first != 0)); then
		echo "run-pair: guest $gone ended with status $first; ending the other one now" >&2
		kill -TERM $other 2>/dev/null
	fi
	wait $other || second=$?
	# The guest that failed first, with its run.sh status (2: timed out, never retried).
	local failed=$first failed_log=$gone_log
	died=$gone
	if ((first == 0)); then
		failed=$second failed_log=$other_log
		[[ $gone == A ]] && died=B || died=A
	fi
	((failed == 0)) && return 0
	if ((failed != 2)) && ! grep -q IBCM-INIT "$failed_log" 2>/dev/null; then
		died_log=$failed_log
		return 4
	fi
	return 1
}
died= died_log=
attempt
rc=$?
if ((rc == 4)); then
	why=$(grep -m 1 -E "Kernel panic|BUG:" "$died_log" 2>/dev/null | tr -d '\r' | cut -c1-160)
	cp "$log_a" "$log_a.boot1" 2>/dev/null
	cp "$log_b" "$log_b.boot1" 2>/dev/null
	echo "run-pair: retry: guest $died died before its init ran (${why:-no panic line}); booting the pair again" >&2
	attempt
	rc=$?
	for l in "$log_a" "$log_b"; do
		echo "IBCM-RETRY: pair ($bcm, $mode) booted twice: guest $died of the first pair died before its init ran (${why:-no panic line}; logs *.boot1)" >>"$l"
	done
fi
((rc == 0)) || exit 1
exit 0
