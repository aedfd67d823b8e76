#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Host layer: `cargo test` of the pure-logic files. Prints `HOST <passed> <failed>` last.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$top/out"
log=$top/out/host-tests.log
(cd "$top/tests/host" && cargo test --offline 2>&1 || cargo test 2>&1) | tee "$log" | grep -E '^test |test result|error' >&2
rc=${PIPESTATUS[0]}
passed=$(grep -oE 'test result: .* ([0-9]+) passed' "$log" | grep -oE '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
failed=$(grep -oE '([0-9]+) failed' "$log" | awk '{s+=$1} END {print s+0}')
if ((rc != 0 && failed == 0)); then
	echo "host: error: cargo test failed to build or run (log: $log)" >&2
	failed=1
fi
echo "HOST $passed $failed"
