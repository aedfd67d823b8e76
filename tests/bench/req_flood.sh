#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# REQ flood benchmark: ours vs the in-tree C ib_cm, same image, same run.
#
# Two guests on a QEMU socket network (release kernel: no lockdep/KASAN). Guest A floods
# guest B with CM REQs through ib_umad (cm_umad, at most 256 unanswered): first for a service
# nobody listens on (B answers each with REJ INVALID_SERVICE_ID), then for a service the test
# ULP listens on (B dispatches each REQ to the ULP's handler, which rejects it). Each boot runs
# 5 floods per case; boots alternate C / ours ROUNDS times. Reported: medians of REJs/s (and of
# the responder's busy CPU time per 1000 REQs, from its /proc/stat) and
# the ratio ours / C. A benchmark, not a test: nothing here passes or fails on speed.
#
#   tests/bench/req_flood.sh [ROUNDS] [N]
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
source "$top/scripts/lib.sh"
rounds=${1:-2}
n=${2:-2000}
out=$("$top/tests/build.sh" release) || die "build failed"
res=$top/out/bench
mkdir -p "$res"
: >"$res/raw.txt"
for r in $(seq 1 "$rounds"); do
	for cm in c rs; do
		log "bench: round $r, responder $cm"
		"$top/tests/qemu/run-pair.sh" "$out/bzImage" "$out/initramfs.cpio.gz" "$cm" \
			"$res/a-$cm-$r.log" "$res/b-$cm-$r.log" 900 bench ||
			log "bench: warning: round $r ($cm) did not finish cleanly"
		sed -n "s/.*IBCM-BENCH: \([a-z_]*\) FLOOD .*replies=\([0-9]*\) .*rate=\([0-9]*\) peer_busy_ms=\([0-9-]*\).*/$cm \1 \3 \2 \4/p" \
			"$res/a-$cm-$r.log" >>"$res/raw.txt"
	done
done
python3 - "$res/raw.txt" <<'PY' | tee "$res/results.txt"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def med(cm, case, f):
    v = [f(r) for r in rows if r[0] == cm and r[1] == case]
    return (statistics.median(v), len(v)) if v else (0.0, 0)
rate = lambda r: float(r[2])
# B's busy CPU milliseconds per 1000 answered REQs.
cpu = lambda r: float(r[4]) * 1000 / max(float(r[3]), 1)
for case in ("unknown_service", "listening_service"):
    (c, nc), (rs, nr) = med("c", case, rate), med("rs", case, rate)
    ratio = rs / c if c else float("nan")
    print(f"{case}: C {c:.0f} REJ/s (n={nc}), ib_cm-rs {rs:.0f} REJ/s (n={nr}), ratio {ratio:.2f}")
    (c, _), (rs, _) = med("c", case, cpu), med("rs", case, cpu)
    ratio = c / rs if rs else float("nan")
    print(f"{case}: responder CPU per 1000 REQs: C {c:.0f} ms, ib_cm-rs {rs:.0f} ms, C/ours {ratio:.2f}")
PY
