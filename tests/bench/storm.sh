#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Connection storm benchmark: ours vs the in-tree C ib_cm, same image, same run.
#
# One guest per boot (release kernel, 2 vCPUs, 2 GiB), two rxe devices, rdma_cm on top, and
# unmodified cmtime (all of a client's connections at once) in the shapes of
# tests/qemu/guest-storm.sh: many-to-one (P clients of one server) and many-to-many (P pairs,
# half each way), each connection with its QP; the m1n and mmn shapes the same without QPs
# (tests/tools/cm_storm), which is how a 2-vCPU guest reaches 16k connections. Boots
# alternate C / ours BOOTS times; for each shape and CM the medians over boots of: the time
# until the last client's last connection was ESTABLISHED (and the connections per second
# that makes; m1n/mmn: from the moment every client had resolved its routes and all were let
# connect at once), failed clients and the error lines they printed, REQ and REP
# retransmissions, messages whose retries ran out and received MADs dropped as overload (ours
# only: the C CM has no such counters), hung-task messages, and the peak of used memory and
# of the slab while the shape ran. A benchmark, not a test: nothing here passes or fails.
#
#   tests/bench/storm.sh [BOOTS] [SHAPES]
# SHAPES: comma-separated KIND:PxC (default: STORM_SHAPES below).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
source "$top/scripts/lib.sh"
boots=${1:-1}
# What a 2-vCPU TCG guest holds (Documentation/performance.rst, "Connection storms"): rxe
# gives a device 16384 CQs and librdmacm makes two per connection end, so at most 8192
# connection ends per device with QPs (3200 connections is the largest shape that ran);
# without QPs (m1n, mmn) 16384 connections run, m1n:512x32 being issue 27's 512 x 32.
shapes=${2:-m1:16x100,mm:16x100,m1:32x100,mm:32x100,m1n:32x512,mmn:32x512,m1n:512x32}
# VARIANT=latency: the release kernel plus the irqsoff tracer and the soft-lockup detector
# (tests/qemu/kernel-latency.config): each shape then also reports the longest stretch with
# interrupts off and where it began and ended, and the longest one the CM was on the stack
# of (histogram triggers). Its rates are not comparable with release's.
variant=${VARIANT:-release}
case $variant in release | latency) ;; *) die "VARIANT must be release or latency" ;; esac
out=$("$top/tests/build.sh" "$variant") || die "build failed"
res=$top/out/bench
mkdir -p "$res"
: >"$res/storm-raw.txt"
for b in $(seq 1 "$boots"); do
	for cm in c rs; do
		log "storm bench: boot $b, $cm CM ($shapes)"
		KAPPEND="ibcm.storm=$shapes" "$top/tests/qemu/run.sh" "$out/bzImage" "$out/initramfs.cpio.gz" \
			"$cm" storm "$res/storm-$cm-$b.log" 3600 ||
			log "storm bench: warning: boot $b ($cm) did not finish cleanly"
		sed -n "s/.*IBCM-STORM: \(.*\)/boot=$b \1/p" "$res/storm-$cm-$b.log" >>"$res/storm-raw.txt"
		grep -h 'IBCM-STORM-NOTE' "$res/storm-$cm-$b.log" | sed 's/.*IBCM-STORM-NOTE: /storm bench: note: /' >&2
	done
done
python3 - "$res/storm-raw.txt" <<'PY' | tee "$res/storm-results.txt"
import statistics, sys
rows = [dict(f.split("=", 1) for f in l.split()) for l in open(sys.argv[1]) if "shape=" in l]
shapes = list(dict.fromkeys(r["shape"] for r in rows))
def med(cm, shape, key):
    v = [r[key] for r in rows if r["cm"] == cm and r["shape"] == shape]
    v = [float(x) for x in v if x not in ("", "na")]
    return statistics.median(v) if v else None
def fmt(x, unit=""):
    return "n/a" if x is None else f"{x:.0f}{unit}"
print("connection storms, rdma_cm + cmtime (m1n/mmn: cm_storm, no QPs) over two rxe devices, medians over boots")
def raw(cm, shape, key):
    return [r[key] for r in rows if r["cm"] == cm and r["shape"] == shape and key in r]
def readable(sym):
    # A Rust v0 symbol (_RNv...) as its last two path segments: each is a decimal length,
    # then that many characters (crate hashes and tags in between are skipped).
    if not sym.startswith("_R"):
        return sym
    idents, i = [], 2
    while i < len(sym):
        # Not a disambiguator (s<n>_) or a back reference (B<n>_).
        if sym[i].isdigit() and sym[i - 1] not in "0123456789sB":
            j = i
            while j < len(sym) and sym[j].isdigit():
                j += 1
            n = int(sym[i:j])
            ident = sym[j:j + n]
            if ident[:1].isalpha():
                idents.append(ident)
                i = j + n
                continue
        i += 1
    return "::".join(idents[-2:]) if idents else sym
for s in shapes:
    n = next(int(r["conns"]) for r in rows if r["shape"] == s)
    print(f"{s} ({n} connections):")
    last = {}
    for cm, name in (("c", "C"), ("rs", "ib_cm-rs")):
        if med(cm, s, "last_client_ms") is None:
            print(f"  {name}: no result")
            continue
        t = med(cm, s, "estab_ms")
        last[cm] = t
        rate = n / (t / 1000) if t else None
        prep = med(cm, s, "prep_ms")
        print(f"  {name}: " + (f"connects started {fmt(prep, ' ms')} after the clients (every "
                               f"route resolved), then " if prep else "") +
              f"last ESTABLISHED after {fmt(t, ' ms')} ({fmt(rate)} conn/s), "
              f"all clients done {fmt(med(cm, s, 'last_client_ms'), ' ms')}, "
              f"failed clients {fmt(med(cm, s, 'failed_clients'))}, error lines {fmt(med(cm, s, 'error_lines'))}, "
              f"REQ retries {fmt(med(cm, s, 'req_retries'))} (of {fmt(med(cm, s, 'reqs_sent'))} REQs sent), "
              f"REP retries {fmt(med(cm, s, 'rep_retries'))}, retries run out {fmt(med(cm, s, 'timeouts'))}, "
              + (f"connects unreachable or failed (clients' count) {fmt(med(cm, s, 'conn_unreachable'))}, "
                 f"last ESTABLISHED active / passive side {fmt(med(cm, s, 'estab_active_ms'), ' ms')} / "
                 f"{fmt(med(cm, s, 'estab_passive_ms'), ' ms')}, "
                 if med(cm, s, "conn_unreachable") is not None else "")
              + (f"received MADs dropped as overload {fmt(med(cm, s, 'rx_overload'))}, " if cm == "rs" else "") +
              f"hung-task messages {fmt(med(cm, s, 'hung'))}, "
              f"peak memory +{fmt(med(cm, s, 'mem_peak_kb'), ' kB')} (slab +{fmt(med(cm, s, 'slab_peak_kb'), ' kB')})"
              + (f", flow-control backlog high-water so far {fmt(med(cm, s, 'backlog_hw'))}" if cm == "rs" else ""))
    for cm, name in (("c", "C"), ("rs", "ib_cm-rs")):
        irq = [x for x in raw(cm, s, "irqsoff_max_us") if x != "na"]
        if irq:
            at = raw(cm, s, "irqsoff_at")
            # The CM's own longest stretch, with the function it was in, from the same row.
            cmrows = [r for r in rows if r["cm"] == cm and r["shape"] == s
                      and r.get("cm_irqsoff_us", "na") not in ("", "na")]
            worst = max(cmrows, key=lambda r: int(r["cm_irqsoff_us"]), default=None)
            print(f"  {name}: longest interrupts-off stretch {max(int(x) for x in irq)} us "
                  f"({at[0] if at else '?'})"
                  + (f"; the CM's own longest {worst['cm_irqsoff_us']} us "
                     f"({readable(worst['cm_irqsoff_at'])}; {worst.get('irq_stacks', '?')} "
                     f"stacks kept, {worst.get('irq_dropped', '?')} stretches dropped)"
                     if worst else ""))
    if last.get("c") and last.get("rs"):
        print(f"  connection rate ours / C: {last['c'] / last['rs']:.2f}")
PY
