#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Guest side of `make bench`'s connection benchmark (sourced by /init with ibcm.mode=connbench,
# after the CM is loaded on rxe0/rxe1): rdma_cm on top, then ROUNDS runs of unmodified
# `cmtime -c N` (server on 10.0.0.1, client bound to 10.0.0.2). The first run is a warm-up;
# during the others the ftrace function profiler (self time: graph-time off, sleep-time off)
# times the CM's entry points: its MAD receive and send handlers, its work functions and the
# 16 exported calls, minus nothing else, because rdma_cm's handlers that the CM calls are
# profiled too and their time is not the CM's (self time excludes nested profiled functions).
# Prints IBCM-BENCH lines for tests/bench/conn_bench.sh.
#
# TBPROF=1 (ibcm.tbprof=1, a boot of its own): no ftrace profiler; QEMU's tbcount plugin
# (tests/bench/tbcount.c) counts the instructions of every kernel function over the measured
# rounds instead, between the `hostname` before them (its sethostname syscall turns counting
# on) and the `sync` after them (off). The guest then prints its modules' symbols (IBCM-SYM
# lines) for tests/bench/tbprof.py.
N=${BENCH_N:-100}
ROUNDS=${BENCH_ROUNDS:-4}
for m in iw_cm rdma_cm rdma_ucm; do ins /lib/modules/base/$m.ko || fatal bench_modules "insmod $m"; done
T=/sys/kernel/tracing
[ -d $T/options ] || mount -t tracefs nodev $T
if [ "$CM" = c ]; then
	CMFN="cm_recv_handler cm_work_handler cm_send_handler"
else
	CMFN="ibcm_glue_recv_handler ibcm_glue_recv_work_fn ibcm_glue_send_handler ibcm_glue_timewait_fn"
fi
API="ib_create_cm_id ib_destroy_cm_id ib_cm_listen ib_cm_insert_listen ib_send_cm_req ib_send_cm_rep
ib_send_cm_rtu ib_send_cm_dreq ib_send_cm_drep ib_send_cm_rej ib_send_cm_mra ib_send_cm_sidr_req
ib_send_cm_sidr_rep ib_cm_notify ib_cm_init_qp_attr"
ULP="cma_ib_handler cma_ib_req_handler cma_sidr_rep_handler"
# Functions the CM calls, asked for with PROF= (ibcm.prof=): profiled too, so the CM's self time
# then excludes them and their own calls and time show where it goes (kind "lib").
LIB=$PROF
: >$T/set_ftrace_filter
for f in $CMFN $API $ULP $LIB; do echo "$f" >>$T/set_ftrace_filter 2>/dev/null || klog "IBCM-BENCH: note: cannot profile $f"; done
echo 0 >$T/options/graph-time
echo 0 >$T/options/sleep-time
cmtime -b 10.0.0.1 >/tmp/cmtime-s.log 2>&1 &
srv=$!
sleep 1
r=0
while [ $r -lt "$ROUNDS" ]; do
	if [ $r = 1 ] && [ -n "$TBPROF" ]; then
		hostname ibcm-tbprof
	elif [ $r = 1 ]; then
		echo 1 >$T/function_profile_enabled
		# PERF=1: every CPU sampled (software clock: TCG has no PMU) through the profiled rounds.
		if [ -n "$PERF" ] && [ -x /usr/bin/perf ]; then
			echo 0 >/proc/sys/kernel/kptr_restrict
			echo -1 >/proc/sys/kernel/perf_event_paranoid
			perf record -q -a -g -e cpu-clock -F 2000 -o /tmp/perf.data >/tmp/perf-rec.log 2>&1 &
			perfpid=$!
		fi
	fi
	cpu0=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat)
	if ! timeout 300 cmtime -s 10.0.0.1 -b 10.0.0.2 -c "$N" >/tmp/cmtime-c.log 2>&1; then
		klog "IBCM-BENCH: $CM round=$r failed: $(tail -2 /tmp/cmtime-c.log | tr '\n' ' ')"
	fi
	cpu1=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat)
	conn=$(awk '$1 == "connect" { print $(NF) }' /tmp/cmtime-c.log)
	disc=$(awk '$1 == "disconnect" { print $(NF) }' /tmp/cmtime-c.log)
	klog "IBCM-BENCH: $CM round=$r n=$N connect_us=$conn disconnect_us=$disc busy_ticks=$((cpu1 - cpu0))"
	r=$((r + 1))
	# cmtime's server handles one client run at a time; give its disconnects time to drain.
	sleep 1
done
echo 0 >$T/function_profile_enabled
if [ -n "$TBPROF" ]; then
	sync
	# Every module's text symbols, so that no module's code is charged to the one before it.
	grep -E "^[0-9a-f]+ [tTwW] .*\[[a-z0-9_]+\]$" /proc/kallsyms |
		while IFS= read -r l; do klog "IBCM-SYM: $l"; done
fi
if [ -n "${perfpid:-}" ]; then
	kill -INT "$perfpid"
	wait "$perfpid"
	rep() { perf report -i /tmp/perf.data --stdio "$@" 2>/dev/null | grep -v '^#' | grep -v '^ *$'; }
	# Self time by symbol (idle left out), the CM module's own symbols, and by module.
	rep --no-children --sort dso,sym -g none --percent-limit 0.05 | grep -v 'default_idle\|\[k\] __sched_text_start' |
		head -150 | while IFS= read -r l; do klog "IBCM-PERF: $CM self $l"; done
	rep --no-children --sort sym -g none --dsos '[ib_cm]' | head -60 | while IFS= read -r l; do klog "IBCM-PERF: $CM cm $l"; done
	# Inclusive time (callees included) of everything the CM module's code ran.
	rep --children --sort sym -g none --percent-limit 0.05 | grep -v 'default_idle' | head -100 |
		while IFS= read -r l; do klog "IBCM-PERF: $CM incl $l"; done
	rep --no-children --sort dso -g none | head -12 | while IFS= read -r l; do klog "IBCM-PERF: $CM dso $l"; done
fi
cat $T/trace_stat/function* >/tmp/prof.txt 2>/dev/null
# Self time per function over the profiled rounds: name, hits, total (us).
awk -v cm=" $CMFN " -v api=" $(echo $API) " -v ulp=" $ULP " -v lib=" $LIB " '
	$2 ~ /^[0-9]+$/ { n[$1] += $2; t[$1] += $3 }
	END {
		for (f in n) {
			kind = index(cm, " " f " ") ? "cm" : index(api, " " f " ") ? "api" : index(ulp, " " f " ") ? "ulp" : index(lib, " " f " ") ? "lib" : ""
			if (kind != "") printf "%s %s %d %.1f\n", kind, f, n[f], t[f]
		}
	}' /tmp/prof.txt | while read -r kind f hits us; do
	klog "IBCM-BENCH: $CM prof kind=$kind fn=$f hits=$hits us=$us"
done
klog "IBCM-BENCH: $CM profiled_connections=$((N * (ROUNDS - 1)))"
kill $srv 2>/dev/null
wait $srv 2>/dev/null
# Memory per connection end: ib_cm-rs prints its own at load; cm.c's (cm_id_private and
# cm_timewait_info slabs) comes from the connection conformance suite, run here once.
ins /lib/modules/test/ib_cm_conn_conformance.ko cm=$CM dev0=rxe0 dev1=rxe1 >/dev/null 2>&1
rmmod ib_cm_conn_conformance 2>/dev/null
