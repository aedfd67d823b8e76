#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make check`: every test layer; the last line is `N passed, N failed` over all of them.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/scripts/lib.sh"
variant=${1:-debug}
start=$(date +%s)

"$top/scripts/deps.sh" || { echo "0 passed, 1 failed"; exit 1; }
# Each layer's report goes to the terminal and to a copy, from which the failures are listed
# again at the end, next to the summary (CI shows only the tail of a long log).
mkdir -p "$top/out"
report=$top/out/check-report.txt
: >"$report"
read -r _ hp hf < <("$top/tests/run-host.sh" 2> >(tee -a "$report" >&2) | tail -1)
read -r _ qp qf < <("$top/tests/run-qemu.sh" "$variant" 2> >(tee -a "$report" >&2) | tail -1)
read -r _ ip if_ < <("$top/tests/run-install.sh" "$variant" 2> >(tee -a "$report" >&2) | tail -1)
hp=${hp:-0} hf=${hf:-1} qp=${qp:-0} qf=${qf:-1} ip=${ip:-0} if_=${if_:-1}
sleep 1 # let the tee copies drain
if (( hf + qf + if_ > 0 )); then
	echo "failed:" >&2
	grep -E '^(NOT OK|not ok)|\.\.\. FAILED|error:' "$report" | sed 's/^/  /' >&2
fi
retry_note "$report" >&2
echo "host: $hp passed, $hf failed; qemu: $qp passed, $qf failed; install: $ip passed, $if_ failed; $(( $(date +%s) - start ))s" >&2
echo "$((hp + qp + ip)) passed, $((hf + qf + if_)) failed"
(( hf + qf + if_ == 0 ))
