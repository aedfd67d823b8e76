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
# With QEMU_ICOUNT=1 the guests' clocks count instructions: the CM's time per REQ then follows
# its instruction path, not the host's load, while the rates and busy-CPU figures mean nothing
# (Documentation/performance.rst).
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
		sed -n "s/.*IBCM-BENCH: \([a-z_]*\) FLOOD \(.*\)/cm=$cm case=\1 \2/p" "$res/a-$cm-$r.log" >>"$res/raw.txt"
	done
done
python3 - "$res/raw.txt" <<'PY' | tee "$res/results.txt"
import statistics, sys
rows = []
for line in open(sys.argv[1]):
    kv = dict(f.split("=", 1) for f in line.split() if "=" in f)
    if "rate" in kv:
        rows.append(kv)
def med(cm, case, f):
    v = [f(r) for r in rows if r["cm"] == cm and r["case"] == case and f(r) is not None]
    return (statistics.median(v), len(v)) if v else (float("nan"), 0)
def num(r, k):
    try:
        return float(r[k])
    except (KeyError, ValueError):
        return None
rate = lambda r: num(r, "rate")
# B's busy CPU milliseconds per 1000 answered REQs (whole guest: rxe, network, MAD layer, CM).
def cpu(r):
    b, n = num(r, "peer_busy_ms"), num(r, "replies")
    return b * 1000 / n if b is not None and n else None
# The CM's own time per REQ on B, in microseconds: its MAD receive handler, its receive work
# item and its send-completion handler (ftrace profiler and workqueue tracepoints; wall time
# inside those functions, so interrupts that hit them are included for both CMs alike).
def cm_us(r):
    parts = [num(r, k) for k in ("work_us", "recv_us", "send_us")]
    n = num(r, "recv_n")
    if None in parts or not n or num(r, "work_n") != n:
        return None
    return sum(parts) / n
def part(k):
    return lambda r: (num(r, k) / num(r, "recv_n")) if num(r, k) is not None and num(r, "recv_n") else None
for case in ("unknown_service", "listening_service"):
    (c, nc), (rs, nr) = med("c", case, rate), med("rs", case, rate)
    print(f"{case}: C {c:.0f} REJ/s (n={nc}), ib_cm-rs {rs:.0f} REJ/s (n={nr}), ratio {rs / c:.2f}")
    (c, _), (rs, _) = med("c", case, cpu), med("rs", case, cpu)
    print(f"{case}: responder CPU per 1000 REQs: C {c:.0f} ms, ib_cm-rs {rs:.0f} ms, C/ours {c / rs:.2f}")
    (c, nc), (rs, nr) = med("c", case, cm_us), med("rs", case, cm_us)
    print(f"{case}: CM time per REQ: C {c:.1f} us (n={nc}), ib_cm-rs {rs:.1f} us (n={nr}), "
          f"C/ours {c / rs:.2f} (REQs/s per CPU the CM alone sustains: C {1e6 / c:.0f}, ib_cm-rs {1e6 / rs:.0f})")
    for k, what in (("rej_stale", "REJ STALE_CONN"), ("rej_other", "other REJ reasons")):
        (c, _), (rs, _) = med("c", case, lambda r: num(r, k)), med("rs", case, lambda r: num(r, k))
        print(f"{case}: {what} per flood: C {c:.0f}, ib_cm-rs {rs:.0f}")
    for k in ("recv_us", "work_us", "send_us"):
        (c, _), (rs, _) = med("c", case, part(k)), med("rs", case, part(k))
        print(f"{case}:   {k[:-3]:<5} C {c:.1f} us, ib_cm-rs {rs:.1f} us")
PY
