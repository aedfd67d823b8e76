#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Connection setup/teardown benchmark: ours vs the in-tree C ib_cm, same image, same run.
#
# One guest per boot (release kernel: no lockdep/KASAN), two rxe devices, rdma_cm on top, and
# unmodified `cmtime -c N` run ROUNDS times (the first is a warm-up); boots alternate C / ours
# BOOTS times. Reported, as medians and ratios ours / C:
#   - cmtime's per-connection connect and disconnect step times (wall time, us per connection);
#   - the CM's own CPU per connection: ftrace's function profiler self time of the CM's entry
#     points (MAD receive/send handlers, work functions, the exported calls), with rdma_cm's
#     handlers profiled too so that their time is not counted as the CM's;
#   - the guest's busy CPU per connection (/proc/stat), everything included.
# A benchmark, not a test: nothing here passes or fails on speed.
#
# ICOUNT=1 (IBCM_ICOUNT): the low-noise mode. Each guest has one CPU and QEMU's -icount
# clock (one instruction = 1 ns, idle time skipped), so every figure is an instruction count
# (1 us = 1000 guest instructions) that host load cannot disturb: the wall-clock figures of
# TCG vary by 1.4x from boot to boot even for rdma_cm's own handlers, the same code under both
# CMs. One CPU, because with two QEMU runs the vCPUs in turn under -icount, and one spinning on
# a lock whose holder is not running burns instructions until the switch.
#
# PERF=1 (IBCM_PERF) adds a perf cpu-clock profile of the whole guest over the same rounds,
# by symbol, into out/bench/conn-perf-CM-BOOT.txt (a diagnostic; it perturbs the timings).
#
# TBPROF=1 (IBCM_TBPROF) adds one more boot per CM, one CPU under -icount, with no ftrace
# profiler but QEMU's tbcount plugin (tests/bench/tbcount.c, built here with gcc): the
# instruction count of every kernel function over the same measured rounds, mapped to
# functions by tests/bench/tbprof.py into out/bench/tbprof.txt: each module's instructions per
# connection, the CM module's own functions (self instructions), and the kernel functions
# whose count differs most between the CMs. A diagnostic of where instructions go; the
# ratios above stay ftrace's. LINES=1 (IBCM_TBLINES) with it: the same counts for ib_cm-rs by
# source line and by function frame, inlined ones included (tests/bench/tblines.py, into
# out/bench/tblines.txt), through a second build of the module with line tables.
#
#   tests/bench/conn_bench.sh [BOOTS] [N] [ROUNDS]
set -uo pipefail
icount=""
[[ ${IBCM_ICOUNT:-} == 1 ]] && icount=1
top=$(cd "$(dirname "$0")/../.." && pwd)
source "$top/scripts/lib.sh"
boots=${1:-2}
n=${2:-100}
rounds=${3:-4}
out=$("$top/tests/build.sh" release) || die "build failed"
res=$top/out/bench
mkdir -p "$res"
: >"$res/conn-raw.txt"
: >"$res/conn-mem.txt"
rm -f "$res/tbprof.txt" "$res/tblines.txt"
for b in $(seq 1 "$boots"); do
	for cm in c rs; do
		log "conn bench: boot $b, $cm CM"
		QEMU_ICOUNT=$icount QEMU_SMP=${icount:+1} KAPPEND="ibcm.bench_n=$n ibcm.bench_rounds=$rounds${IBCM_PROF:+ ibcm.prof=$IBCM_PROF}${IBCM_PERF:+ ibcm.perf=1}" "$top/tests/qemu/run.sh" \
			"$out/bzImage" "$out/initramfs.cpio.gz" "$cm" connbench "$res/conn-$cm-$b.log" 1800 ||
			log "conn bench: warning: boot $b ($cm) did not finish cleanly"
		# ftrace's profiler reads sched_clock: on the jiffies clocksource (the guest could not
		# calibrate its TSC) its figures have 4 ms steps, so that boot's profile is left out.
		if grep -q "clocksource: Switched to clocksource tsc" "$res/conn-$cm-$b.log"; then
			sed -n "s/.*IBCM-BENCH: \(.*\)/boot=$b \1/p" "$res/conn-$cm-$b.log" >>"$res/conn-raw.txt"
		else
			log "conn bench: warning: boot $b ($cm) has no TSC clocksource: its CM profile is left out"
			sed -n "s/.*IBCM-BENCH: \(.*\)/boot=$b \1/p" "$res/conn-$cm-$b.log" |
				grep -v " prof \| profiled_connections=" >>"$res/conn-raw.txt"
		fi
		grep -h -o "IBCM-MEM: .*\|ib_cm: connection end: .*" "$res/conn-$cm-$b.log" >>"$res/conn-mem.txt"
		grep -h -o "IBCM-PERF: .*" "$res/conn-$cm-$b.log" >"$res/conn-perf-$cm-$b.txt" || true
	done
done
# The tbcount boots come after the measured ones; a failure here only loses the profile.
tbprof() {
	gcc -O2 -Wall -Wextra -Wno-unused-parameter -shared -fPIC -o "$res/tbcount.so" "$top/tests/bench/tbcount.c" -lpthread ||
		{ log "conn bench: warning: tbcount plugin build failed: no profile"; return; }
	local on off cm
	on=$(awk '$3 == "__x64_sys_sethostname" { print $1 }' "$out/System.map")
	off=$(awk '$3 == "__x64_sys_sync" { print $1 }' "$out/System.map")
	[[ -n $on && -n $off ]] || { log "conn bench: warning: no sethostname/sync syscall in System.map: no profile"; return; }
	for cm in c rs; do
		log "conn bench: tbcount boot, $cm CM"
		rm -f "$res/tb-$cm.txt"
		if ! QEMU_ICOUNT=1 QEMU_SMP=1 QEMU_EXTRA="-plugin file=$res/tbcount.so,on=$on,off=$off,out=$res/tb-$cm.txt" \
			KAPPEND="ibcm.bench_n=$n ibcm.bench_rounds=$rounds ibcm.tbprof=1" "$top/tests/qemu/run.sh" \
			"$out/bzImage" "$out/initramfs.cpio.gz" "$cm" connbench "$res/conn-tb-$cm.log" 1800; then
			log "conn bench: warning: tbcount boot ($cm) did not finish cleanly: no profile"
			return
		fi
		if [[ ! -s $res/tb-$cm.txt ]]; then
			log "conn bench: warning: the tbcount plugin wrote no counts for $cm (QEMU without plugin support, or the guest never reached its end marker): no profile"
			return
		fi
	done
	# Written aside and kept only whole: tbprof.py fails if a run printed no module symbols.
	if python3 "$top/tests/bench/tbprof.py" "$out/System.map" "$res" $((n * (rounds - 1))) >"$res/tbprof.tmp"; then
		mv "$res/tbprof.tmp" "$res/tbprof.txt"
	else
		rm -f "$res/tbprof.tmp"
		log "conn bench: warning: tbprof.py failed: no profile"
		return
	fi
	if [[ ${IBCM_TBLINES:-} == 1 ]]; then
		tblines
	fi
}
# LINES=1: the module again with line tables (IBCM_DEBUGINFO=1), checked to have the very
# .text that ran, and the rs profile by source line and inlined function.
tblines() {
	local kdir ktools lko=$res/ib_cm-lines.ko
	kdir=$("$top/scripts/kernel.sh" kdir release) ||
		{ log "conn bench: warning: no release kernel tree: no line profile"; return; }
	read -r -a ktools <<<"$("$top/scripts/lib.sh" ktools)"
	log "conn bench: ib_cm.ko with line tables"
	# Built as the measured module was (rustc, not clippy-driver, whatever CLIPPY the caller's
	# make passes down).
	make -s -C "$kdir" M="$top" "${ktools[@]}" CLIPPY= IBCM_DEBUGINFO=1 modules >"$res/lines-build.log" 2>&1 ||
		{ log "conn bench: warning: the build with line tables failed: no line profile"; return; }
	cp "$top/ib_cm.ko" "$lko"
	llvm-objcopy -O binary --only-section=.text "$lko" "$res/lines.text" &&
		llvm-objcopy -O binary --only-section=.text "$out/ib_cm-prod.ko" "$res/prod.text" &&
		cmp -s "$res/lines.text" "$res/prod.text" ||
		{ log "conn bench: warning: line tables changed the code: no line profile"; return; }
	rm -f "$res/lines.text" "$res/prod.text"
	python3 "$top/tests/bench/tblines.py" "$lko" "$res" $((n * (rounds - 1))) >"$res/tblines.tmp" &&
		mv "$res/tblines.tmp" "$res/tblines.txt" ||
		{ rm -f "$res/tblines.tmp"; log "conn bench: warning: tblines.py failed: no line profile"; }
}
if [[ ${IBCM_TBPROF:-} == 1 ]]; then
	if ((rounds < 2)); then
		log "conn bench: warning: TBPROF needs at least 2 rounds (the first is a warm-up): no profile"
	else
		tbprof
	fi
fi
if [[ -n $icount ]]; then
	echo "icount mode (one CPU per guest): every us below is 1000 guest instructions" | tee "$res/conn-results.txt"
else
	: >"$res/conn-results.txt"
fi
python3 - "$res/conn-raw.txt" <<'PY' | tee -a "$res/conn-results.txt"
import statistics, sys
rounds, prof, conns = [], {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    kv = dict(x.split("=", 1) for x in f if "=" in x)
    cm = f[1]
    if "round" in kv and kv.get("round") != "0" and "connect_us" in kv:
        try:
            rounds.append((cm, float(kv["connect_us"]), float(kv["disconnect_us"]),
                           float(kv["busy_ticks"]) * 10000 / float(kv["n"])))
        except ValueError:
            pass
    elif "fn" in kv:
        key = (cm, kv["boot"])
        prof.setdefault(key, {})[kv["fn"]] = (kv["kind"], int(kv["hits"]), float(kv["us"]))
    elif "profiled_connections" in kv:
        conns[(cm, kv["boot"])] = int(kv["profiled_connections"])
def med(cm, i):
    v = [r[i] for r in rounds if r[0] == cm]
    return statistics.median(v) if v else float("nan"), len(v)
for i, what in ((1, "cmtime connect step, us per connection"), (2, "cmtime disconnect step, us per connection"),
                (3, "guest busy CPU per connection, us")):
    (c, nc), (r, nr) = med("c", i), med("rs", i)
    print(f"{what}: C {c:.0f} (n={nc}), ib_cm-rs {r:.0f} (n={nr}), ours/C {r / c:.2f}")
def cm_us(cm):
    v = []
    for (k, b), fns in prof.items():
        if k != cm or not conns.get((k, b)):
            continue
        v.append(sum(us for kind, _, us in fns.values() if kind in ("cm", "api")) / conns[(k, b)])
    return statistics.median(v) if v else float("nan"), len(v)
(c, nc), (r, nr) = cm_us("c"), cm_us("rs")
print(f"CM's own CPU per connection (ftrace self time of its entry points): C {c:.1f} us (boots={nc}), "
      f"ib_cm-rs {r:.1f} us (boots={nr}), ours/C {r / c:.2f}")
for cm in ("c", "rs"):
    tot = {}
    for (k, b), fns in prof.items():
        if k == cm:
            for fn, (kind, hits, us) in fns.items():
                t = tot.setdefault(fn, [kind, 0, 0.0]); t[1] += hits; t[2] += us
    n = sum(v for (k, _), v in conns.items() if k == cm) or 1
    for fn, (kind, hits, us) in sorted(tot.items(), key=lambda x: -x[1][2]):
        print(f"  {cm:2} {kind:3} {fn:28} {hits / n:6.2f} calls/conn {us / n:9.1f} us/conn")
PY
echo "memory per connection end:" | tee -a "$res/conn-results.txt"
sort -u "$res/conn-mem.txt" | tee -a "$res/conn-results.txt"
if [[ ${IBCM_TBPROF:-} == 1 && -s $res/tbprof.txt ]]; then
	tee -a "$res/conn-results.txt" <"$res/tbprof.txt"
fi
