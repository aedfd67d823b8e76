#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Host layer: `cargo test` of the pure-logic files, `rustfmt --check` of every Rust file
# (the module's crate and the host crate) with the kernel's .rustfmt.toml, and the layer check
# of src/ (scripts/layers.py) and its self-test, the log parser's self-test (tests/qemu/parse.py)
# and the QEMU harness's retry self-test.
# Prints `HOST <passed> <failed>` last.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/scripts/lib.sh"
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
# Formatting: kernel rustfmt settings (the extracted kernel source has them; the setting that
# matters, edition 2021, is also passed directly so the check works before the kernel exists).
cfg=()
src=$IBCM_CACHE/src/linux-$(kernel_pkg_version)/.rustfmt.toml
[[ -f $src ]] && cfg=(--config-path "$src")
if rustfmt "${cfg[@]}" --edition 2021 --check "$top/src/ib_cm_rs.rs" "$top/tests/host/lib.rs" >"$top/out/rustfmt.log" 2>&1; then
	echo "test rustfmt_check ... ok" >&2
	passed=$((passed + 1))
else
	echo "test rustfmt_check ... FAILED (see $top/out/rustfmt.log)" >&2
	failed=$((failed + 1))
fi
# One script check as a test result: NAME, LOG, then the command.
script_test() {
	local name=$1 log=$2
	shift 2
	if "$@" >"$log" 2>&1; then
		echo "test $name ... ok" >&2
		passed=$((passed + 1))
	else
		echo "test $name ... FAILED (see $log)" >&2
		cat "$log" >&2
		failed=$((failed + 1))
	fi
}
# Layers: imports in src/ run downward (scripts/layers.py, Documentation/design.rst "Layers").
script_test layers_check "$top/out/layers.log" python3 "$top/scripts/layers.py"
# The layer check's own test: each known evasion planted in a throwaway tree must fail it.
script_test layers_selftest "$top/out/layers-selftest.log" python3 "$top/scripts/layers.py" --self-test
# The log parser's comparers against planted logs (an empty or mismatching C section fails).
script_test parse_selftest "$top/out/parse-selftest.log" python3 "$top/tests/qemu/parse.py" --self-test
# The QEMU harness's retry logic (run.sh, run-pair.sh) against a stub QEMU: no guest boots.
script_test harness_selftest "$top/out/harness-selftest.log" "$top/tests/qemu/harness-selftest.sh"
echo "HOST $passed $failed"
