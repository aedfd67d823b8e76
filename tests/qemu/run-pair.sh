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
port=$(( 20000 + RANDOM % 20000 ))

QEMU_NET="-netdev socket,id=n0,listen=127.0.0.1:$port -device virtio-net-pci,netdev=n0,mac=52:54:00:12:34:01" \
KAPPEND="ibcm.role=a" "$here/run.sh" "$bz" "$initrd" none "$mode" "$log_a" "$limit" &
pa=$!
sleep 1
QEMU_NET="-netdev socket,id=n0,connect=127.0.0.1:$port -device virtio-net-pci,netdev=n0,mac=52:54:00:12:34:02" \
KAPPEND="ibcm.role=b ${IBCM_PROF:+ibcm.prof=$IBCM_PROF}" "$here/run.sh" "$bz" "$initrd" "$bcm" "$mode" "$log_b" "$limit" &
pb=$!
rc=0
wait $pa || rc=1
wait $pb || rc=1
exit $rc
