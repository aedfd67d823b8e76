#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make run`, the main job: builds the test kernel and ib_cm.ko, boots QEMU, loads the module
# on two rxe devices and shows it working (KUnit suites, rdma_cm on top, rping listening).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/scripts/lib.sh"
variant=${1:-debug}
out=$("$top/tests/build.sh" "$variant") || die "build failed"
log "run: booting QEMU with ib_cm-rs (log: $out/demo.log)"
"$top/tests/qemu/run.sh" "$out/bzImage" "$out/initramfs.cpio.gz" rs demo "$out/demo.log" 600
rc=$?
sed -n 's/.*IBCM-SAY: /guest: /p' "$out/demo.log"
"$top/tests/qemu/parse.py" "$out/demo.log" | tee "$out/demo-results.txt"
read -r _ passed failed < <(tail -1 "$out/demo-results.txt")
echo "demo: $passed passed, $failed failed"
(( rc == 0 && failed == 0 ))
