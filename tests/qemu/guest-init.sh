#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# /init of the test guest. Kernel command line:
#   ibcm.cm=rs|c          which CM to load (ours or the in-tree C ib_cm)
#   ibcm.mode=check|demo|softib  run the tests, the demo of the main job, or only the
#                         soft IB HCA's part (the connection suites on softib0/softib1)
# Results go to the kernel log (/dev/kmsg) so they stay in order with KUnit's KTAP output:
#   IBCM-KTAP-BEGIN <name> ... IBCM-KTAP-END <name>   around each KUnit run
#   IBCM-E2E: ok|not ok|skip|todo <name> [# reason]   end-to-end checks (skip fails)
#   IBCM-TRACE-SECTION: rxe|ib, then IBCM-TRACE: <event> <fields>  the icm_* events of a run
#   IBCM-COUNTERS: <cm> <dev> <group> <file>=<delta>...  CM counters of a fixed workload
#   IBCM-CMTIME: <cm> <line>                          cmtime's table
#   IBCM-DONE                                         the guest reached the end
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/pts /dev/shm /run
mount -t tmpfs shm /dev/shm
echo /bin/true >/proc/sys/kernel/modprobe
# The harness retries a guest that dies before this line (tests/qemu/run.sh).
echo "IBCM-INIT" >/dev/kmsg

CM=rs
MODE=check
ROLE=
PROF=
PERF=
TBPROF=
for arg in $(cat /proc/cmdline); do
	case $arg in
	ibcm.cm=*) CM=${arg#ibcm.cm=} ;;
	ibcm.mode=*) MODE=${arg#ibcm.mode=} ;;
	ibcm.role=*) ROLE=${arg#ibcm.role=} ;;
	ibcm.prof=*) PROF=$(echo "${arg#ibcm.prof=}" | tr , ' ') ;;
	ibcm.perf=*) PERF=${arg#ibcm.perf=} ;;
	ibcm.tbprof=*) TBPROF=${arg#ibcm.tbprof=} ;;
	ibcm.bench_n=*) BENCH_N=${arg#ibcm.bench_n=} ;;
	ibcm.bench_rounds=*) BENCH_ROUNDS=${arg#ibcm.bench_rounds=} ;;
	ibcm.storm=*) STORM=${arg#ibcm.storm=} ;;
	esac
done

klog() { echo "$*" >/dev/kmsg; }
say() { echo "$*"; klog "IBCM-SAY: $*"; }
e2e() { klog "IBCM-E2E: $*"; }
finish() {
	klog "IBCM-DONE"
	sync
	reboot -f
}
fatal() {
	e2e "not ok $1 # $2"
	finish
}

ins() { insmod "$@" 2>/tmp/insmod.err || { cat /tmp/insmod.err >/dev/kmsg; return 1; }; }

kmemleak_check() {
	if [ ! -w /sys/kernel/debug/kmemleak ]; then
		e2e "not ok kmemleak_available_$1 # this kernel has no kmemleak (CONFIG_DEBUG_KMEMLEAK), no leak check ran"
		return 0
	fi
	echo scan >/sys/kernel/debug/kmemleak
	sleep 1
	echo scan >/sys/kernel/debug/kmemleak
	leaks=$(grep -c "unreferenced object" /sys/kernel/debug/kmemleak)
	# A leak of the C CM that a case provokes on purpose (KNOWN_LEAKS objects, each allocated
	# under ib_core's add_client_context: the client's per-device state) is named, not hidden.
	client=$(grep -c "add_client_context" /sys/kernel/debug/kmemleak)
	if [ "$leaks" = 0 ]; then
		e2e "ok kmemleak_clean_$1"
	elif [ "$leaks" = "${KNOWN_LEAKS:-0}" ] && [ "$client" = "$leaks" ]; then
		e2e "ok kmemleak_clean_$1 # only the $leaks known objects (known leak of $KNOWN_CASE): $KNOWN_WHY"
	else
		# One line per write: /dev/kmsg refuses a multi-line record.
		head -120 /sys/kernel/debug/kmemleak | while IFS= read -r l; do echo "kmemleak: $l" >/dev/kmsg; done
		e2e "not ok kmemleak_clean_$1 # $leaks unreferenced objects"
	fi
}

if [ -n "$ROLE" ]; then
	. /pair.sh "$ROLE"
	kmemleak_check pair_$ROLE
	finish
fi

# --- base stack: ib_core, rxe, two rxe devices on a veth pair (no outside network) ---
for m in udp_tunnel ip6_udp_tunnel ib_core ib_uverbs ib_umad rdma_rxe; do
	ins /lib/modules/base/$m.ko || fatal setup_modules "insmod $m failed"
done
/usr/bin/ip link set lo up
# Fixed MAC addresses: the RTR address (its DMAC) that ib_cm_init_qp_attr gives is compared
# between the C and rs boots field by field, and veth would otherwise pick random ones.
/usr/bin/ip link add veth0 address 02:00:0a:00:00:01 type veth peer name veth1 address 02:00:0a:00:00:02 || fatal setup_veth "cannot create veth"
/usr/bin/ip addr add 10.0.0.1/24 dev veth0
/usr/bin/ip addr add 10.0.0.2/24 dev veth1
/usr/bin/ip link set veth0 up
/usr/bin/ip link set veth1 up
echo 1 >/proc/sys/net/ipv4/conf/all/accept_local
echo 0 >/proc/sys/net/ipv4/conf/all/rp_filter
rdma link add rxe0 type rxe netdev veth0 || fatal setup_rxe "rdma link add rxe0 failed"
rdma link add rxe1 type rxe netdev veth1 || fatal setup_rxe "rdma link add rxe1 failed"
ping -c 1 -W 2 -I veth1 10.0.0.1 >/dev/null 2>&1

# --- the CM under test; the rs test build runs its white-box KUnit suite at insmod ---
klog "IBCM-KTAP-BEGIN load-$CM"
cmdir=$CM
# The benchmarks measure the production build (no KUnit suites compiled in).
[ "$MODE" = connbench ] && [ "$CM" = rs ] && cmdir=rs-prod
[ "$MODE" = storm ] && [ "$CM" = rs ] && cmdir=rs-prod
if ! ins /lib/modules/$cmdir/ib_cm.ko; then
	klog "IBCM-KTAP-END load-$CM"
	fatal load_ib_cm "insmod ib_cm ($CM) failed"
fi
klog "IBCM-KTAP-END load-$CM"
e2e "ok load_ib_cm_$CM"

if [ "$MODE" = demo ]; then
	say "kernel $(uname -r); CM module: $(grep '^ib_cm ' /proc/modules | cut -d' ' -f1-3)"
	say "module info: $(modinfo /lib/modules/rs/ib_cm.ko 2>/dev/null | grep -E '^(license|description)' | tr -s ' \t\n' ' ')"
	say "RDMA devices: $(rdma link show | tr '\n' ';')"
fi

# --- `make bench`: the connection benchmark (tests/qemu/guest-connbench.sh), then done ---
if [ "$MODE" = connbench ]; then
	. /connbench.sh
	finish
fi
# --- `make bench-storm`: connection storms (tests/qemu/guest-storm.sh), then done ---
if [ "$MODE" = storm ]; then
	. /storm.sh
	finish
fi

# --- InfiniBand: the soft IB HCA (tests/softib) with the CM already loaded ---
# Two devices, softib0 (LIDs 0x10-0x11) and softib1 (0x20-0x21), one port each: the same
# connection suite as on rxe (traced, its attributes compared with C's), then the IB-only
# suite (alternate paths, path migration on a real RC QP, P_Keys, routed REQs, injected
# faults), then the HCA is removed under the loaded CM.
softib_wait_active() {
	i=0
	while [ $i -lt 50 ]; do
		n=0
		for d in softib0 softib1; do
			case "$(cat /sys/class/infiniband/$d/ports/1/state 2>/dev/null)" in
			*ACTIVE*) n=$((n + 1)) ;;
			esac
		done
		[ $n = 2 ] && return 0
		i=$((i + 1))
		sleep 0.1
	done
	return 1
}
# conn_ah_field NAME [DEVS]: the sum of the field NAME of the debugfs conn_ahs files of the
# devices DEVS (a glob; rxe0 and rxe1 by default). Ours only.
conn_ah_field() {
	awk -v f="$1" '$1 == f { n += $2 } END { print n + 0 }' /sys/kernel/debug/ib_cm/${2:-rxe[01]}/conn_ahs 2>/dev/null
}

# wait_conn_ahs_released [DEVS]: waits (up to 60 s, timewaits included) until no id of those
# devices holds a connection handle; prints how many still do.
wait_conn_ahs_released() {
	i=0
	while [ "$(conn_ah_field held "$1")" != 0 ] && [ $i -lt 120 ]; do
		usleep 500000
		i=$((i + 1))
	done
	conn_ah_field held "$1"
}

softib_check() {
	if ! ins /lib/modules/test/softib.ko; then
		e2e "not ok softib_loads_$CM # insmod softib failed"
		return
	fi
	if softib_wait_active; then
		e2e "ok softib_loads_$CM # $(cat /sys/class/infiniband/softib0/ports/1/link_layer) $(cat /sys/class/infiniband/softib0/ports/1/lid)/$(cat /sys/class/infiniband/softib1/ports/1/lid)"
	else
		e2e "not ok softib_loads_$CM # ports not ACTIVE: $(cat /sys/class/infiniband/softib*/ports/1/state 2>&1 | tr '\n' ' ')"
	fi
	# The CM registered on the new devices: IB_PORT_CM_SUP (bit 16) in the port's cap_mask.
	cap=$(cat /sys/class/infiniband/softib0/ports/1/cap_mask 2>/dev/null)
	if [ -n "$cap" ] && [ $(((cap >> 16) & 1)) = 1 ]; then
		e2e "ok softib_cm_sup_set_$CM # cap_mask $cap"
	else
		e2e "not ok softib_cm_sup_set_$CM # cap_mask ${cap:-missing}"
	fi
	# Slab fault injection for the SIDR_REP failure case (armed as in the rxe run).
	F=/sys/kernel/debug/failslab
	if [ -d $F ]; then
		echo Y >$F/task-filter && echo 100 >$F/probability && echo 1 >$F/interval &&
			echo -1 >$F/times && echo 0 >$F/verbose
	fi
	TR=/sys/kernel/tracing
	KF=/sys/module/kunit/parameters/filter_glob
	traced=
	mount -t tracefs tracefs $TR 2>/dev/null
	if [ -d $TR/events/ib_cma ]; then
		# The rxe run printed the event formats already; alone, this run prints them.
		[ "$MODE" = softib ] && for f in $TR/events/ib_cma/*/format; do
			ev=${f%/format}
			ev=${ev##*/}
			grep -E '^[[:space:]]+field:' "$f" | tr -s ' \t' ' ' | while IFS= read -r l; do
				klog "IBCM-TRACEFMT: $ev $l"
			done
			klog "IBCM-TRACEFMT: $ev print fmt md5 $(grep '^print fmt:' "$f" | tr -s ' \t' ' ' | md5sum | cut -d' ' -f1)"
		done
		: >$TR/trace
		echo 1 >$TR/events/ib_cma/enable && traced=1
	fi
	printf '%s' 'ib_cm_conn_conformance.*' >$KF
	klog "IBCM-KTAP-BEGIN conn-conformance-ib-$CM"
	ins /lib/modules/test/ib_cm_conn_conformance.ko cm=$CM dev0=softib0 dev1=softib1 ||
		e2e "not ok conn_conformance_ib_load_$CM # insmod failed"
	klog "IBCM-KTAP-END conn-conformance-ib-$CM"
	rmmod ib_cm_conn_conformance 2>/dev/null
	printf '%s' 'ib_cm_conn_ib.*' >$KF
	klog "IBCM-KTAP-BEGIN conn-conformance-ibonly-$CM"
	ins /lib/modules/test/ib_cm_conn_conformance.ko cm=$CM dev0=softib0 dev1=softib1 ||
		e2e "not ok conn_ib_load_$CM # insmod failed"
	klog "IBCM-KTAP-END conn-conformance-ibonly-$CM"
	rmmod ib_cm_conn_conformance 2>/dev/null
	if [ -n "$traced" ]; then
		echo 0 >$TR/events/ib_cma/enable
		# parse.py compares this section with C's on its own (and fails an empty C one).
		klog "IBCM-TRACE-SECTION: ib"
		grep -v '^#' $TR/trace | sed -n 's/.*: \(icm_[a-z_]*\): /\1 /p' | while IFS= read -r l; do
			klog "IBCM-TRACE: $l"
		done
	fi
	# Injected faults: timing-dependent retransmissions, outside the traced comparison.
	printf '%s' 'ib_cm_conn_ib_faults.*' >$KF
	klog "IBCM-KTAP-BEGIN conn-ib-faults-$CM"
	ins /lib/modules/test/ib_cm_conn_conformance.ko cm=$CM dev0=softib0 dev1=softib1 ||
		e2e "not ok conn_ib_faults_load_$CM # insmod failed"
	klog "IBCM-KTAP-END conn-ib-faults-$CM"
	rmmod ib_cm_conn_conformance 2>/dev/null
	# Documented divergences from cm.c: each CM checked against its own result, not compared.
	printf '%s' 'ib_cm_conn_ib_divergences.*' >$KF
	klog "IBCM-KTAP-BEGIN conn-ib-divergences-$CM"
	ins /lib/modules/test/ib_cm_conn_conformance.ko cm=$CM dev0=softib0 dev1=softib1 ||
		e2e "not ok conn_ib_divergences_load_$CM # insmod failed"
	klog "IBCM-KTAP-END conn-ib-divergences-$CM"
	rmmod ib_cm_conn_conformance 2>/dev/null
	# The allowance holds only if the case that leaks ran in this boot (not skipped); parse.py
	# checks the same in the log (a "known leak of CASE" whose CASE has no result fails).
	KNOWN_CASE=ib_path_mig_without_alternate
	if [ "$CM" = c ] && dmesg | grep -E "ok [0-9]+ $KNOWN_CASE\$" >/dev/null; then
		KNOWN_LEAKS=2
		KNOWN_WHY="cm.c's cm_device and port of softib1, whose reference cm_migrate drops"
	fi
	printf '%s' '*.*' >$KF
	# Ours: every IB connection's address handle went back to its device's budget, also on
	# the paths that retire one early (LAP, PATH_MIG) or never make one.
	if [ "$CM" = rs ]; then
		left=$(wait_conn_ahs_released 'softib[01]')
		if [ "$left" = 0 ]; then
			e2e "ok conn_ahs_released_after_ib_suites_$CM"
		else
			e2e "not ok conn_ahs_released_after_ib_suites_$CM # $left still held: $(cat /sys/kernel/debug/ib_cm/softib[01]/conn_ahs | tr '\n' ' ')"
		fi
	fi
	klog "IBCM-INFO: softib stats: $(tr '\n' ' ' </sys/kernel/debug/softib/stats 2>/dev/null)"
	# No suite sends a MAD longer than a receive buffer or outruns a CQ on purpose: a CM that
	# posts too few receives, builds an oversized MAD or stops polling would show here.
	ovf=$(awk '$1 == "cq_overflow" { print $2 }' /sys/kernel/debug/softib/stats 2>/dev/null)
	dlen=$(awk '$1 == "drop_len" { print $2 }' /sys/kernel/debug/softib/stats 2>/dev/null)
	if [ "$ovf" = 0 ] && [ "$dlen" = 0 ]; then
		e2e "ok softib_no_cq_overflow_or_too_long_$CM"
	else
		e2e "not ok softib_no_cq_overflow_or_too_long_$CM # cq_overflow=${ovf:-missing} drop_len=${dlen:-missing}"
	fi
	if rmmod softib; then
		e2e "ok softib_removed_under_cm_$CM"
	else
		e2e "not ok softib_removed_under_cm_$CM # rmmod softib failed"
	fi
}
# `ibcm.mode=softib`: only the soft IB HCA's part, then done (tests/run-qemu.sh softib).
if [ "$MODE" = softib ]; then
	softib_check
	if rmmod ib_cm; then e2e "ok unload_$CM"; else e2e "not ok unload_$CM # rmmod ib_cm failed"; fi
	kmemleak_check $CM
	finish
fi

# --- black-box conformance suite (the same module against either CM) ---
klog "IBCM-KTAP-BEGIN conformance-$CM"
ins /lib/modules/test/ib_cm_conformance.ko cm=$CM dev0=rxe0 dev1=rxe1 ||
	e2e "not ok conformance_load_$CM # insmod failed"
klog "IBCM-KTAP-END conformance-$CM"
rmmod ib_cm_conformance 2>/dev/null

# --- connection conformance: a whole connection through the exported API, both CMs ---
# Slab fault injection for the tasks that ask for it (make_it_fail): the SIDR_REP failure case
# sets it around one call; nothing else in the guest does.
F=/sys/kernel/debug/failslab
if [ -d $F ] && echo Y >$F/task-filter && echo 100 >$F/probability && echo 1 >$F/interval &&
	echo -1 >$F/times && echo 0 >$F/verbose; then
	e2e "ok failslab_armed_$CM"
else
	e2e "not ok failslab_armed_$CM # no /sys/kernel/debug/failslab (CONFIG_FAILSLAB): the SIDR_REP failure case cannot run"
fi
# The ib_cma:icm_* tracepoints are recorded during this run: parse.py compares their formats
# and the events (name, states, reason) with the C boot's.
TR=/sys/kernel/tracing
traced=
mount -t tracefs tracefs $TR 2>/dev/null
if [ -d $TR/events/ib_cma ]; then
	for f in $TR/events/ib_cma/*/format; do
		ev=${f%/format}
		ev=${ev##*/}
		grep -E '^[[:space:]]+field:' "$f" | tr -s ' \t' ' ' | while IFS= read -r l; do
			klog "IBCM-TRACEFMT: $ev $l"
		done
		# The output format can exceed a kernel log line: compared by digest.
		klog "IBCM-TRACEFMT: $ev print fmt md5 $(grep '^print fmt:' "$f" | tr -s ' \t' ' ' | md5sum | cut -d' ' -f1)"
	done
	: >$TR/trace
	echo 1 >$TR/events/ib_cma/enable && traced=1
else
	e2e "not ok tracepoints_present_$CM # no $TR/events/ib_cma (CONFIG_TRACEPOINTS?)"
fi
# KUnit's filter picks the module's suites: the deterministic one while tracing, then the
# timing-dependent races.
KF=/sys/module/kunit/parameters/filter_glob
tx_timeouts() { grep -H . /sys/class/infiniband/rxe[01]/ports/1/cm_tx_timeouts/* 2>/dev/null; }
rej_counts() {
	grep -H . /sys/class/infiniband/rxe[01]/ports/1/cm_rej_*/* \
		/sys/class/infiniband/rxe[01]/ports/1/cm_[tr]x_msgs/rej 2>/dev/null
}
tx_timeouts >/tmp/cnt-conf-before
rej_counts >/tmp/rej-conf-before
printf '%s' 'ib_cm_conn_conformance.*' >$KF
klog "IBCM-KTAP-BEGIN conn-conformance-$CM"
ins /lib/modules/test/ib_cm_conn_conformance.ko cm=$CM dev0=rxe0 dev1=rxe1 ||
	e2e "not ok conn_conformance_load_$CM # insmod failed"
klog "IBCM-KTAP-END conn-conformance-$CM"
rmmod ib_cm_conn_conformance 2>/dev/null
if [ -n "$traced" ]; then
	echo 0 >$TR/events/ib_cma/enable
	klog "IBCM-TRACE-SECTION: rxe"
	grep -v '^#' $TR/trace | sed -n 's/.*: \(icm_[a-z_]*\): /\1 /p' | while IFS= read -r l; do
		klog "IBCM-TRACE: $l"
	done
	e2e "ok tracepoints_present_$CM"
fi
printf '%s' 'ib_cm_conn_races.*' >$KF
klog "IBCM-KTAP-BEGIN conn-races-$CM"
ins /lib/modules/test/ib_cm_conn_conformance.ko cm=$CM dev0=rxe0 dev1=rxe1 ||
	e2e "not ok conn_races_load_$CM # insmod failed"
klog "IBCM-KTAP-END conn-races-$CM"
rmmod ib_cm_conn_conformance 2>/dev/null
# Ours, beyond cm.c: the conformance suite's req_times_out, rep_times_out, dreq_times_out and
# sidr_req_times_out each let a message's retries run out, which the sender's port counts in
# cm_tx_timeouts (the races add more of some).
if [ "$CM" = rs ]; then
	# Every REJ a device sent is counted under its reason (the sums match cm_tx_msgs/rej),
	# every REJ it received and handled too (at most cm_rx_msgs/rej, which also counts
	# malformed ones), and the suites' REJs carry several reasons.
	# Read until two snapshots agree: a REJ completing between the reads of cm_rej_sent and
	# cm_tx_msgs/rej would otherwise show as a difference.
	rej_counts >/tmp/rej-conf-after
	for i in 1 2 3 4 5; do
		sleep 0.2
		rej_counts >/tmp/rej-conf-again
		cmp -s /tmp/rej-conf-after /tmp/rej-conf-again && break
		mv /tmp/rej-conf-again /tmp/rej-conf-after
	done
	e2e "$(awk -F: -v cm="$CM" 'NR == FNR { b[$1] = $2; next }
		{	n = split($1, p, "/"); dev = p[5]; grp = p[8]; d = $2 - b[$1]
			if (grp == "cm_rej_sent") { sent[dev] += d; if (d > 0) reasons[p[9]] = 1 }
			else if (grp == "cm_rej_rcvd") rcvd[dev] += d
			else if (grp == "cm_tx_msgs") tx[dev] += d
			else if (grp == "cm_rx_msgs") rx[dev] += d
		}
		END {
			ok = 1; r = ""
			for (i = 0; i <= 1; i++) {
				dev = "rxe" i
				r = r sprintf(" %s: sent %d of %d, received %d of %d;", dev, sent[dev], tx[dev], rcvd[dev], rx[dev])
				if (sent[dev] != tx[dev] || rcvd[dev] > rx[dev] || rcvd[dev] < 1) ok = 0
			}
			k = 0; for (x in reasons) { k++; r = r " " x }
			if (k < 3) ok = 0
			print (ok ? "ok" : "not ok") " rej_reasons_counted_" cm " #" r
		}' /tmp/rej-conf-before /tmp/rej-conf-after)"
	tx_timeouts >/tmp/cnt-conf-after
	e2e "$(awk -F: -v cm="$CM" 'NR == FNR { b[$1] = $2; next }
		$1 ~ /\/cm_tx_timeouts\// { n = split($1, p, "/"); d[p[n]] += $2 - b[$1]; seen = 1 }
		END {
			r = sprintf("req %d, rep %d, dreq %d, sidr_req %d", d["req"], d["rep"], d["dreq"], d["sidr_req"])
			if (seen && d["req"] >= 1 && d["rep"] >= 1 && d["dreq"] >= 1 && d["sidr_req"] >= 1)
				print "ok tx_timeouts_counted_" cm " # " r
			else
				print "not ok tx_timeouts_counted_" cm " # want at least 1 each" (seen ? "" : ", no cm_tx_timeouts group") ": " r
		}' /tmp/cnt-conf-before /tmp/cnt-conf-after)"
fi
# Ours only: failures forced through the test build's switches (the C CM has none).
if [ "$CM" = rs ]; then
	printf '%s' 'ib_cm_conn_rs_only.*' >$KF
	klog "IBCM-KTAP-BEGIN conn-rs-only-$CM"
	ins /lib/modules/test/ib_cm_conn_conformance.ko cm=$CM dev0=rxe0 dev1=rxe1 ||
		e2e "not ok conn_rs_only_load_$CM # insmod failed"
	klog "IBCM-KTAP-END conn-rs-only-$CM"
	rmmod ib_cm_conn_conformance 2>/dev/null

	# Ours only: the administrator's retry policy and bounds (module parameters, default off).
	# Each range parameter refuses what is outside its range and keeps its value.
	MP=/sys/module/ib_cm/parameters
	bad=
	for kv in retry_backoff_after=16 retry_backoff_after=-2 cm_response_timeout_floor=32 \
		cm_response_timeout_cap=32 cm_retries_floor=16 cm_retries_cap=x; do
		if echo "${kv#*=}" >"$MP/${kv%%=*}" 2>/dev/null; then bad="$bad $kv"; fi
	done
	vals=$(cat $MP/mra_wait_once $MP/retry_backoff_after $MP/cm_response_timeout_floor \
		$MP/cm_response_timeout_cap $MP/cm_retries_floor $MP/cm_retries_cap 2>&1 | tr '\n' ' ')
	if [ -z "$bad" ] && [ "$vals" = "N -1 0 31 0 15 " ]; then
		e2e "ok retry_tunables_checked_$CM # defaults $vals"
	else
		e2e "not ok retry_tunables_checked_$CM # accepted:${bad:- none}; values: $vals (want N -1 0 31 0 15)"
	fi
	# A retry floor of 4 and backoff after 1 retry: req_times_out's REQ, which asks for 2
	# retries, goes out 5 times (the MAD layer's 1 retry at the REQ's own timeout, then 3 that
	# the CM posts again itself, each waiting twice as long), and its port counts 4 retries and
	# 1 timeout.
	req_cnt() { cat /sys/class/infiniband/rxe1/ports/1/cm_tx_retries/req \
		/sys/class/infiniband/rxe1/ports/1/cm_tx_timeouts/req 2>/dev/null | tr '\n' ' '; }
	before=$(req_cnt)
	echo 4 >$MP/cm_retries_floor
	echo 1 >$MP/retry_backoff_after
	printf '%s' 'ib_cm_conn_conformance.req_times_out' >$KF
	klog "IBCM-KTAP-BEGIN retry-policy-$CM"
	ins /lib/modules/test/ib_cm_conn_conformance.ko cm=$CM dev0=rxe0 dev1=rxe1 req_copies=5 ||
		e2e "not ok retry_policy_load_$CM # insmod failed"
	klog "IBCM-KTAP-END retry-policy-$CM"
	rmmod ib_cm_conn_conformance 2>/dev/null
	echo 0 >$MP/cm_retries_floor
	echo -1 >$MP/retry_backoff_after
	after=$(req_cnt)
	d=$(echo "$before $after" | awk 'NF == 4 { print $3 - $1, $4 - $2 }')
	if [ "$d" = "4 1" ]; then
		e2e "ok retry_backoff_counted_$CM # req retries +4, timeouts +1"
	else
		e2e "not ok retry_backoff_counted_$CM # before: $before, after: $after (want retries +4, timeouts +1)"
	fi
fi
printf '%s' '*.*' >$KF

softib_check

# --- end to end: unmodified rdma_cm on top of the CM, rdma-core tools over rxe ---
ok=1
for m in iw_cm rdma_cm rdma_ucm; do
	ins /lib/modules/base/$m.ko || ok=0
done
if [ $ok = 1 ]; then e2e "ok rdma_cm_loads_on_$CM"; else e2e "not ok rdma_cm_loads_on_$CM # insmod failed"; fi

# Every command below runs under `timeout`, so a hang costs its limit and nothing more. The
# server is bound to 10.0.0.1 (veth0, rxe0), the client to 10.0.0.2 (veth1, rxe1): the CM's
# messages cross the veth pair between the two devices. Both CMs run the same commands.

# now: seconds since boot, without a fork (a fork is slow under TCG with KASAN).
now() { read -r up _ </proc/uptime; echo "${up%.*}"; }
# wait_listen PORT SECS: an rdma_cm id listens on PORT (rdma_listen() went through
# ib_cm_insert_listen() of the loaded CM).
wait_listen() {
	end=$(($(now) + $2))
	while [ "$(now)" -lt $end ]; do
		rdma resource show cm_id 2>/dev/null | grep "state LISTEN" | grep -q ":$1 " && return 0
		sleep 0.2
	done
	return 1
}
# wait_connected PORT SECS: both ends of a connection to PORT are CONNECT in rdma_cm.
wait_connected() {
	end=$(($(now) + $2))
	while [ "$(now)" -lt $end ]; do
		n=$(rdma resource show cm_id 2>/dev/null | grep "state CONNECT" | grep -cE ":$1( |\$)")
		[ "${n:-0}" -ge 2 ] && return 0
		sleep 0.2
	done
	return 1
}
# reap PID SECS [NAME]: wait up to SECS for PID to end by itself, kill it after that; its exit
# status (or 143 if it had to be killed) is in $reaped, and $reap_killed is 1 if it had to be
# killed (empty if it ended by itself). With NAME, what a killed one waited for is logged.
reap() {
	end=$(($(now) + $2))
	while kill -0 $1 2>/dev/null && [ "$(now)" -lt $end ]; do
		sleep 0.2
	done
	reap_killed=
	if kill -0 $1 2>/dev/null; then
		reap_killed=1
		if [ -n "${3:-}" ]; then stuck $1 $3; fi
	fi
	kill $1 2>/dev/null
	wait $1
	reaped=$?
}
# stuck PID NAME: what the tool under `timeout` PID waits for although its peer is done (wait
# channel and kernel stack of each of its threads), into the log before it is killed.
stuck() {
	for c in $(pgrep -P "$1"); do
		klog "IBCM-DIAG: $2 pid $c ($(cat /proc/$c/comm 2>/dev/null)) did not end; wchan $(cat /proc/$c/wchan 2>/dev/null)"
		for t in /proc/$c/task/*; do
			sed "s|^|IBCM-DIAG: $2 task ${t##*/}: |" $t/stack 2>/dev/null | while IFS= read -r l; do klog "$l"; done
		done
	done
}
# last LOG: for a `# reason`, the first lines of a tool's output that look like an error,
# else its last lines.
last() {
	{ grep -i -m 3 -E 'error|fail|unable|not supported|refused|timed out|reject' "$1" ||
		tail -3 "$1"; } 2>/dev/null | tr '\n\t' '  ' | cut -c1-300
}

# counters: every CM counter of both ports, as path:value lines (one grep, one fork).
counters() { grep -H . /sys/class/infiniband/rxe[01]/ports/1/cm_*/* 2>/dev/null; }
# senders: which device sent the requests (REQ and SIDR_REQ) between two counters snapshots.
# rdma_cm puts a client on the device of the destination address when the route to it goes
# through lo and the id was not bound first (rdma_set_src_addr_rcu): only a client that binds
# (rping -I) really sends from rxe1.
senders() {
	awk -F: 'NR == FNR { b[$1] = $2; next }
		$1 ~ /cm_tx_msgs\/(req|sidr_req)$/ { split($1, p, "/"); n[p[5]] += $2 - b[$1] }
		END { printf "requests sent by rxe0 %d, rxe1 %d", n["rxe0"], n["rxe1"] }' "$1" "$2"
}

# pair NAME LIMIT PORT "SERVER" "CLIENT" [forever]: runs SERVER in the background, waits
# until it listens on PORT, runs CLIENT under LIMIT seconds; the server then gets 30 s to end
# (then its stack is logged and it is killed). Sets $crc and $src (exit
# statuses) and writes /tmp/NAME-s.log and /tmp/NAME-c.log. A failed client ends the server at
# once. A `forever` server (cmtime's never exits) must still be running when its client is
# done; it is then ended and counts as a success.
pair() {
	name=$1 limit=$2 port=$3 scmd=$4 ccmd=$5 forever=${6:-}
	crc=255 src=255
	t0=$(now)
	counters >/tmp/pair-before
	# The server's own limit is only a backstop: it outlasts the client's limit and the reap's
	# grace below, so a server still running after its client is done is caught by `stuck`
	# (its kernel stack goes into the log) rather than ended by its own `timeout` first.
	timeout $((limit + 120)) $scmd >/tmp/$name-s.log 2>&1 &
	spid=$!
	if ! wait_listen $port 60; then
		reap $spid 0
		e2e "not ok ${name}_$CM # server did not listen on $port: $(last /tmp/$name-s.log)"
		return 1
	fi
	t1=$(now)
	timeout $limit $ccmd >/tmp/$name-c.log 2>&1
	crc=$?
	t2=$(now)
	if [ -n "$forever" ] && kill -0 $spid 2>/dev/null; then
		reap $spid 0
		src=0
	else
		# A server ends once its last connection is torn down; on a loaded host that can
		# take a while after the client is done (a C-CM ucmatose server once needed more
		# than 15 s with every guest step ten times slower than usual).
		if [ $crc = 0 ]; then reap $spid 30 $name; else reap $spid 0; fi
		src=$reaped
	fi
	counters >/tmp/pair-after
	took="$((t2 - t0)) s (listening after $((t1 - t0)) s); $(senders /tmp/pair-before /tmp/pair-after)"
	return 0
}
# pair_result NAME [EXTRA_REASON]: ok if both sides exited 0 and EXTRA_REASON is empty.
pair_result() {
	if [ $crc = 0 ] && [ $src = 0 ] && [ -z "$2" ]; then
		e2e "ok ${1}_$CM # $took"
	else
		e2e "not ok ${1}_$CM # client status $crc, server status $src${2:+; $2}; client: $(last /tmp/$1-c.log); server: $(last /tmp/$1-s.log)"
	fi
}

# --- counters of a fixed workload: one rping connection of 10 pings, then its disconnect ---
# The per-port sysfs counters of both devices, before and after; parse.py compares the deltas
# of the two CMs file by file (counters_match_c).
counters >/tmp/cnt-before
if pair counters_workload 20 7177 "rping -s -a 10.0.0.1 -p 7177" "rping -c -a 10.0.0.1 -I 10.0.0.2 -p 7177 -C 10"; then
	pair_result counters_workload
fi
sleep 1
counters >/tmp/cnt-after
awk -F: -v cm="$CM" '
	NR == FNR { before[$1] = $2; next }
	{	# /sys/class/infiniband/<dev>/ports/1/<group>/<file>
		n = split($1, p, "/"); key = p[5] " " p[8]
		line[key] = line[key] " " p[9] "=" ($2 - before[$1])
	}
	END {
		split("rxe0 rxe1", dev, " ")
		split("cm_tx_msgs cm_tx_retries cm_rx_msgs cm_rx_duplicates", grp, " ")
		for (i = 1; i <= 2; i++)
			for (j = 1; j <= 4; j++) {
				key = dev[i] " " grp[j]
				print "IBCM-COUNTERS: " cm " " key ((key in line) ? line[key] : " missing")
			}
	}' /tmp/cnt-before /tmp/cnt-after >/tmp/cnt-lines
while IFS= read -r l; do klog "$l"; done </tmp/cnt-lines

# --- 1. rping: 100 pings, each printed by -v ---
rping -s -a 10.0.0.1 -p 7174 -v >/tmp/rping-s.log 2>&1 &
srv=$!
[ "$MODE" = demo ] && sleep 1 && say "rping -s started on 10.0.0.1:7174; its rdma_listen() goes through ib_cm_insert_listen(rxe0, cma_ib_req_handler, 0x0000000001061c06) of the loaded CM and fails if that fails"
if wait_listen 7174 60; then
	e2e "ok rping_server_listens_$CM"
else
	e2e "not ok rping_server_listens_$CM # rping -s: $(last /tmp/rping-s.log)"
fi
kill $srv 2>/dev/null
wait $srv 2>/dev/null
if pair rping 45 7178 "rping -s -a 10.0.0.1 -p 7178" "rping -c -a 10.0.0.1 -I 10.0.0.2 -p 7178 -C 100 -v"; then
	pings=$(grep -c '^ping data: ' /tmp/rping-c.log)
	bad=
	[ "$pings" = 100 ] || bad="$pings ping lines, not 100"
	pair_result rping "$bad"
fi

# --- 2. ucmatose: 50 RC connections, 10 messages each ---
if pair ucmatose 120 7190 "ucmatose -b 10.0.0.1 -p 7190 -c 50 -C 10" "ucmatose -s 10.0.0.1 -b 10.0.0.2 -p 7190 -c 50 -C 10"; then
	pair_result ucmatose
fi

# --- 3. udaddy: UD, the address handle comes from SIDR_REQ / SIDR_REP ---
# (udaddy's -p is the port space; its port is always 7174)
if pair udaddy 30 7174 "udaddy -b 10.0.0.1" "udaddy -s 10.0.0.1 -b 10.0.0.2"; then
	pair_result udaddy
fi

# --- 4. rdma_server / rdma_client: the synchronous rdma_cm verbs (rdma_get_request ...) ---
# rdma_client has no bind option: its route to the local 10.0.0.1 stays on rxe0.
if pair rdma_server 30 7192 "rdma_server -s 10.0.0.1 -p 7192" "rdma_client -s 10.0.0.1 -p 7192"; then
	pair_result rdma_server
fi

# --- 5. cmtime: 200 connections, each step timed (the table goes into the log) ---
# The server never exits by itself.
# On ours, debugfs is read in a loop all through it: the reads must not stall the CM (cmtime
# passes) and must all succeed.
rm -f /tmp/cmtime-done
if [ "$CM" = rs ]; then
	(n=0 bad=0 peak=0; while [ ! -e /tmp/cmtime-done ]; do
		cat /sys/kernel/debug/ib_cm/rxe0/listeners /sys/kernel/debug/ib_cm/rxe0/ids \
			/sys/kernel/debug/ib_cm/rxe1/ids >/dev/null 2>&1 || bad=$((bad + 1))
		h=$(conn_ah_field held)
		[ "${h:-0}" -gt $peak ] && peak=$h
		n=$((n + 1))
		usleep 20000
	done; echo "$n $bad $peak" >/tmp/debugfs-reads) &
	rdr=$!
fi
if pair cmtime 120 7193 "cmtime -b 10.0.0.1 -p 7193" "cmtime -s 10.0.0.1 -b 10.0.0.2 -p 7193 -c 200" forever; then
	grep -v '^ *$' /tmp/cmtime-c.log | while IFS= read -r l; do klog "IBCM-CMTIME: $CM $l"; done
	pair_result cmtime
fi
touch /tmp/cmtime-done
if [ "$CM" = rs ]; then
	wait $rdr 2>/dev/null
	read -r n bad peak </tmp/debugfs-reads 2>/dev/null
	if [ "${n:-0}" -gt 0 ] && [ "${bad:-1}" = 0 ]; then
		e2e "ok debugfs_read_during_cmtime_$CM # $n reads of 3 files"
	else
		e2e "not ok debugfs_read_during_cmtime_$CM # ${n:-0} reads, ${bad:-?} failed"
	fi
fi

# Ours: once cmtime's 200 connections are gone (their timewaits ended), no connection handle
# is held any more. Then the fallback: with conn_ahs_per_device=0 no connection may keep a
# handle, every REQ and REP goes on a handle of its own (counted as over budget), and cmtime's
# connections must still all complete.
if [ "$CM" = rs ]; then
	# The handles were there (a peak of at least 100 of the 400 connection ends, sampled
	# every 20 ms while cmtime ran), and all are gone.
	left=$(wait_conn_ahs_released)
	if [ "$left" = 0 ] && [ "${peak:-0}" -ge 100 ]; then
		e2e "ok conn_ahs_released_after_cmtime_$CM # peak $peak held"
	else
		e2e "not ok conn_ahs_released_after_cmtime_$CM # peak ${peak:-?} held (want >= 100), $left still held: $(cat /sys/kernel/debug/ib_cm/rxe[01]/conn_ahs | tr '\n' ' ')"
	fi
	P=/sys/module/ib_cm/parameters/conn_ahs_per_device
	over0=$(conn_ah_field over_budget)
	if echo 0 >$P; then
		if pair cmtime_without_conn_ahs 120 7194 "cmtime -b 10.0.0.1 -p 7194" "cmtime -s 10.0.0.1 -b 10.0.0.2 -p 7194 -c 50" forever; then
			over=$(($(conn_ah_field over_budget) - over0))
			held=$(conn_ah_field held)
			# 50 REQs and 50 REPs, each sent on its own handle.
			if [ $over -ge 100 ] && [ "$held" = 0 ]; then
				pair_result cmtime_without_conn_ahs
			else
				pair_result cmtime_without_conn_ahs "over budget $over (want >= 100), held $held (want 0)"
			fi
		fi
	else
		e2e "not ok cmtime_without_conn_ahs_$CM # cannot write $P"
	fi
	echo -1 >$P
	# No spare send buffers (send_pool_size 0): every MAD gets a buffer of its own and frees
	# it, as the in-tree CM; the connections work the same.
	SP=/sys/module/ib_cm/parameters/send_pool_size
	sp0=$(cat $SP)
	if echo 0 >$SP; then
		if pair cmtime_without_send_pool 120 7197 "cmtime -b 10.0.0.1 -p 7197" "cmtime -s 10.0.0.1 -b 10.0.0.2 -p 7197 -c 50" forever; then
			pair_result cmtime_without_send_pool
		fi
	else
		e2e "not ok cmtime_without_send_pool_$CM # cannot write $SP"
	fi
	echo "$sp0" >$SP
	# The driver cannot make the handle (the test build's fail_conn_ahs fails every creation,
	# as a driver out of handles or memory would): the same fallback, counted as failed.
	F=/sys/module/ib_cm/parameters/fail_conn_ahs
	failed0=$(conn_ah_field failed)
	if echo 1 >$F; then
		if pair cmtime_conn_ah_creation_fails 120 7195 "cmtime -b 10.0.0.1 -p 7195" "cmtime -s 10.0.0.1 -b 10.0.0.2 -p 7195 -c 20" forever; then
			failed=$(($(conn_ah_field failed) - failed0))
			held=$(conn_ah_field held)
			if [ $failed -ge 40 ] && [ "$held" = 0 ]; then
				pair_result cmtime_conn_ah_creation_fails
			else
				pair_result cmtime_conn_ah_creation_fails "failed $failed (want >= 40), held $held (want 0)"
			fi
		fi
	else
		e2e "not ok cmtime_conn_ah_creation_fails_$CM # cannot write $F"
	fi
	echo 0 >$F
	# Flow control held to 2 outstanding REQs/DREQs per port: cmtime's 100 connections, all
	# asked for at once, queue behind them (the backlog's high-water mark climbs well past the
	# KUnit case's 1), all connect and disconnect, none is refused, and nothing is left out or
	# waiting afterwards.
	FL=/sys/module/ib_cm/parameters/flow_control_limit
	FD=/sys/class/infiniband/rxe1/ports/1/cm_flow
	ref0=$(cat $FD/refused 2>/dev/null)
	hw0=$(cat $FD/backlog_high_water 2>/dev/null)
	if echo 2 >$FL; then
		if pair cmtime_flow_limited 180 7196 "cmtime -b 10.0.0.1 -p 7196" "cmtime -s 10.0.0.1 -b 10.0.0.2 -p 7196 -c 100" forever; then
			sleep 1
			fl="high_water $(cat $FD/backlog_high_water) refused $(($(cat $FD/refused) - ref0)) outstanding $(cat $FD/outstanding) backlog $(cat $FD/backlog) limit $(cat $FD/limit)"
			# The high-water mark only rises: it must have risen past the earlier cases' own.
			case "$fl" in
			"high_water "[1-9][0-9]*" refused 0 outstanding 0 backlog 0 limit 2")
				if [ "$(cat $FD/backlog_high_water)" -gt "${hw0:-0}" ]; then
					pair_result cmtime_flow_limited
				else
					pair_result cmtime_flow_limited "$fl: high_water did not rise from $hw0"
				fi ;;
			*) pair_result cmtime_flow_limited "$fl (want high_water >= 10, the rest 0, limit 2)" ;;
			esac
			klog "IBCM-FLOW: $CM $fl"
		fi
	else
		e2e "not ok cmtime_flow_limited_$CM # cannot write $FL"
	fi
	echo -1 >$FL
	# The counters cm.c does not keep: each device's debugfs stats file, with the destroys
	# that waited past their id's budget (the white-box suite checks the counting) and a line
	# per port of flow control.
	st=$(cat /sys/kernel/debug/ib_cm/rxe0/stats /sys/kernel/debug/ib_cm/rxe1/stats 2>&1)
	n=$(echo "$st" | awk '$1 == "destroy_waits_over_budget" && $2 ~ /^[0-9]+$/ { c++ }
		$1 == "port" && $3 == "flow_limit" && $4 == 128 && $12 ~ /^[0-9]+$/ { c++ } END { print c + 0 }')
	if [ "$n" = 4 ]; then
		e2e "ok debugfs_stats_$CM # $(echo $st)"
	else
		e2e "not ok debugfs_stats_$CM # want destroy_waits_over_budget and a flow line (limit 128) of rxe0 and rxe1: $(echo $st)"
	fi
fi

# --- 6. perftest over RDMA CM ---
if pair ib_send_bw 60 18515 "ib_send_bw -R -F -d rxe0 -n 100" "ib_send_bw -R -F -d rxe1 -n 100 --source_ip 10.0.0.2 10.0.0.1"; then
	pair_result ib_send_bw
fi

# --- 7. rdma-core's Python suite: test_rdmacm on rxe0 (10.0.0.1), both players on the device ---
# Each case is its own result; a case that did not report (suite killed) fails too. One run,
# not one per device at once: each case must end within the suite's own limits (a 15 s
# barrier, about 30 s per case), and the slowest take 17 s under TCG when alone.
# (multiprocessing's Barrier and Queue need POSIX semaphores: /dev/shm)
pyverbs_results() { # RESULTS LOG DEV STATUS
	plan=$(sed -n 's/^plan //p' "$1" 2>/dev/null)
	if [ -z "$plan" ]; then
		e2e "not ok pyverbs_rdmacm_${3}_$CM # the suite did not start (status $4): $(last "$2")"
		return
	fi
	grep -v '^plan ' "$1" | while IFS= read -r l; do
		case $l in
		ok\ *) st=ok r=${l#ok } ;;
		not\ ok\ *) st="not ok" r=${l#not ok } ;;
		skip\ *) st=skip r=${l#skip } ;;
		*) continue ;;
		esac
		t=${r%% *}
		r=${r#"$t"}
		e2e "$st pyverbs_${t}_$CM # $3,${r# #}"
	done
	for t in $plan; do
		grep -Eq "^(ok|not ok|skip) $t( |\$)" "$1" ||
			e2e "not ok pyverbs_${t}_$CM # $3, did not finish (suite status $4): $(last "$2")"
	done
}
t0=$(now)
timeout 300 python3 /usr/bin/pyverbs-rdmacm /usr/share/rdma-core-tests/tests /tmp/py.res \
	--dev rxe0 >/tmp/py.log 2>&1
prc=$?
klog "IBCM-INFO: pyverbs test_rdmacm: status $prc after $(($(now) - t0)) s"
pyverbs_results /tmp/py.res /tmp/py.log rxe0 $prc

# --- 7b. a kernel ULP: NVMe over RDMA, unmodified nvmet-rdma and nvme-rdma over rdma_cm ---
# The target (nvmet-rdma) listens on 10.0.0.1:4420 (rxe0) and exports a memory-backed
# null_blk device; the host (nvme-rdma) connects from 10.0.0.2 (rxe1) with an admin queue and
# an I/O queue per CPU (at most two), each its own RC connection whose REQ the target accepts
# from inside its rdma_cm handler. 1 MiB of random data goes to the namespace and comes back
# with O_DIRECT (null_blk's own statistics must show it arrived there), then the host deletes
# the controller (a DREQ on every queue, answered by the target's DREP), a connect to a port
# nobody listens on must be refused (REJ to a kernel ULP), and the target's port goes (its
# listener is destroyed). The CM counters of both devices must show every one of those
# messages: the target would also tear its queues down without any DREQ (keep-alive expiry,
# port removal, module unload), so the ids being gone proves nothing about the wire. Section
# 8 below checks that no id is left; kmemleak checks that nothing leaked.
NQN=ibcm-nvme-test
NV=/sys/kernel/config/nvmet
# nvme_fail REASON: the test's first failure is the one reported.
nvme_fail() { [ -n "$nvme_err" ] || nvme_err=$1; }
# nvme_step WHAT CMD...: runs CMD; on failure sets $nvme_err (the first failure) and fails.
nvme_step() {
	what=$1
	shift
	"$@" >/tmp/nvme-step.err 2>&1
	rc=$?
	[ $rc = 0 ] && return 0
	[ "$1" = ins ] && cat /tmp/insmod.err >>/tmp/nvme-step.err 2>/dev/null
	nvme_fail "$what failed (status $rc): $(head -c 200 /tmp/nvme-step.err | tr '\n' ' ')"
	return 1
}
nvme_wr() { echo "$2" >"$1"; }
# nvme_wait WHAT SECS CMD...: CMD succeeds within SECS seconds, else $nvme_err says WHAT.
nvme_wait() {
	what=$1 end=$(($(now) + $2))
	shift 2
	while ! "$@" 2>/dev/null; do
		if [ "$(now)" -ge $end ]; then
			nvme_fail "$what"
			return 1
		fi
		sleep 0.2
	done
}
# nvme_rmmod MODULE...: unloads each that is loaded; one that will not go is a failure.
nvme_rmmod() {
	for m in "$@"; do
		grep -q "^$m " /proc/modules && ! rmmod $m 2>/dev/null &&
			nvme_fail "rmmod $m failed: $(grep "^$m " /proc/modules)"
	done
}
# Bounded recovery: a broken connection must end the test within seconds, not stall it in
# ten minutes of reconnects (an O_DIRECT read waits uninterruptibly through recovery); the
# 30 s keep-alive leaves room for a slow TCG guest. Any recovery at all is a failure (the log
# is checked below).
NVME_OPTS="transport=rdma,traddr=10.0.0.1,host_traddr=10.0.0.2,nqn=$NQN,nr_io_queues=2,keep_alive_tmo=30,ctrl_loss_tmo=20,reconnect_delay=2,fast_io_fail_tmo=0"
nvme_target_up() {
	nvme_step "insmod null_blk" ins /lib/modules/base/null_blk.ko nr_devices=1 memory_backed=1 gb=1 &&
		nvme_step "insmod nvmet" ins /lib/modules/base/nvmet.ko &&
		nvme_step "insmod nvmet-rdma" ins /lib/modules/base/nvmet-rdma.ko &&
		{ [ -d $NV ] || nvme_step "mount configfs" mount -t configfs none /sys/kernel/config; } &&
		nvme_step "create subsystem" mkdir $NV/subsystems/$NQN &&
		nvme_step "allow any host" nvme_wr $NV/subsystems/$NQN/attr_allow_any_host 1 &&
		nvme_step "create namespace" mkdir $NV/subsystems/$NQN/namespaces/1 &&
		nvme_step "namespace device" nvme_wr $NV/subsystems/$NQN/namespaces/1/device_path /dev/nullb0 &&
		nvme_step "enable namespace" nvme_wr $NV/subsystems/$NQN/namespaces/1/enable 1 &&
		nvme_step "create port" mkdir $NV/ports/1 &&
		nvme_step "port transport" nvme_wr $NV/ports/1/addr_trtype rdma &&
		nvme_step "port family" nvme_wr $NV/ports/1/addr_adrfam ipv4 &&
		nvme_step "port address" nvme_wr $NV/ports/1/addr_traddr 10.0.0.1 &&
		nvme_step "port service" nvme_wr $NV/ports/1/addr_trsvcid 4420 &&
		nvme_step "enable port (rdma_listen)" ln -s $NV/subsystems/$NQN $NV/ports/1/subsystems/$NQN &&
		{ wait_listen 4420 30 || { nvme_fail "the target does not listen on 4420"; false; }; }
}
nvme_target_down() {
	rm -f $NV/ports/1/subsystems/$NQN 2>/dev/null
	rmdir $NV/ports/1 2>/dev/null
	echo 0 >$NV/subsystems/$NQN/namespaces/1/enable 2>/dev/null
	rmdir $NV/subsystems/$NQN/namespaces/1 $NV/subsystems/$NQN 2>/dev/null
	nvme_rmmod nvmet_rdma nvmet null_blk
}
# Connected queues seen from the host (ids to 10.0.0.1:4420) and from the target.
nvme_host_ids() {
	rdma resource show cm_id 2>/dev/null | grep "state CONNECT" | grep -cE "dst-addr 10.0.0.1:4420( |\$)"
}
nvme_target_ids() {
	rdma resource show cm_id 2>/dev/null | grep "state CONNECT" | grep "src-addr 10.0.0.1:4420 " | grep -c "dst-addr 10.0.0.2:"
}
# Sectors read and written by null_blk (fields 3 and 7 of its block statistics).
nvme_nullb_sectors() { awk '{ print $3, $7 }' /sys/block/nullb0/stat 2>/dev/null; }
# counter_deltas BEFORE AFTER: the counters that moved between two `counters` snapshots, as
# DEVICE/GROUP/MESSAGE+DELTA words.
counter_deltas() {
	awk -F: 'NR == FNR { b[$1] = $2; next }
		$2 != b[$1] { split($1, p, "/"); printf "%s/%s/%s+%d ", p[5], p[8], p[9], $2 - b[$1] }' "$1" "$2"
}
# nvme_cm_msgs QUEUES DELTAS: what the CM counters must show (at least, as a CM's transmit
# counts include retransmissions), given counter_deltas' words; empty if all is there.
nvme_cm_msgs() {
	echo "$2" | tr ' ' '\n' | awk -F+ -v q="$1" 'NF == 2 { d[$1] = $2 }
		function want(k, n, what) { if (d[k] + 0 < n) r = r " " what " " d[k] + 0 " (want " n ")" }
		END {
			want("rxe1/cm_tx_msgs/req", q + 1, "REQs sent by rxe1")
			want("rxe0/cm_tx_msgs/rep", q, "REPs sent by rxe0")
			want("rxe0/cm_rx_msgs/rtu", q, "RTUs received by rxe0")
			want("rxe0/cm_rx_msgs/dreq", q, "DREQs received by rxe0")
			want("rxe0/cm_tx_msgs/drep", q, "DREPs sent by rxe0")
			want("rxe0/cm_tx_msgs/rej", 1, "REJs sent by rxe0")
			want("rxe1/cm_rx_msgs/rej", 1, "REJs received by rxe1")
			# One REJ per copy of the refused REQ (a retransmitted copy finds no id either),
			# none for the REQs of the queues (their retransmissions count as duplicates), none
			# from the host.
			refused = d["rxe0/cm_rx_msgs/req"] - d["rxe0/cm_rx_duplicates/req"] - q
			if (d["rxe0/cm_tx_msgs/rej"] > refused || d["rxe1/cm_tx_msgs/rej"] > 0)
				r = r " REJs: " d["rxe0/cm_tx_msgs/rej"] + 0 " sent by rxe0 for " refused " refused REQ(s), " d["rxe1/cm_tx_msgs/rej"] + 0 " by rxe1"
			print r
		}'
}
nvme_check() {
	nvme_err=
	t0=$(now)
	cpus=$(nproc)
	nvme_q=$((1 + (cpus < 2 ? cpus : 2)))
	counters >/tmp/nvme-cnt0
	if nvme_target_up &&
		nvme_step "insmod nvme-core" ins /lib/modules/base/nvme-core.ko &&
		nvme_step "insmod nvme-fabrics" ins /lib/modules/base/nvme-fabrics.ko &&
		nvme_step "insmod nvme-rdma" ins /lib/modules/base/nvme-rdma.ko &&
		nvme_step "connect (write to /dev/nvme-fabrics)" timeout 120 sh -c \
			"echo $NVME_OPTS,trsvcid=4420 >/dev/nvme-fabrics" &&
		nvme_wait "no namespace block device after 60 s" 60 test -b /dev/nvme0n1; then
		h=$(nvme_host_ids) t=$(nvme_target_ids) qc=$(cat /sys/class/nvme/nvme0/queue_count 2>/dev/null)
		[ "$h" = $nvme_q ] && [ "$t" = $nvme_q ] && [ "$qc" = $nvme_q ] ||
			nvme_fail "queues: $h connected at the host, $t at the target, queue_count ${qc:-none}; want $nvme_q ($cpus CPUs)"
		s0=$(nvme_nullb_sectors)
		dd if=/dev/urandom of=/tmp/nvme-a bs=4096 count=256 2>/dev/null
		nvme_step "write 1 MiB (O_DIRECT)" timeout 120 dd if=/tmp/nvme-a of=/dev/nvme0n1 bs=4096 oflag=direct &&
			nvme_step "read 1 MiB back (O_DIRECT)" timeout 120 dd if=/dev/nvme0n1 of=/tmp/nvme-b bs=4096 count=256 iflag=direct &&
			nvme_step "compare what was read with what was written" cmp /tmp/nvme-a /tmp/nvme-b
		s1=$(nvme_nullb_sectors)
		set -- $s0 $s1
		[ $# = 4 ] && [ $(($3 - $1)) -ge 2048 ] && [ $(($4 - $2)) -ge 2048 ] ||
			nvme_fail "null_blk did not see the 1 MiB read and written (sectors read/written before '$s0', after '$s1')"
	fi
	if [ -e /sys/class/nvme/nvme0/delete_controller ]; then
		nvme_step "delete controller (disconnect)" timeout 120 sh -c 'echo 1 >/sys/class/nvme/nvme0/delete_controller'
	fi
	nvme_wait "host queues still connected 30 s after delete_controller" 30 \
		sh -c "rdma resource show cm_id >/tmp/nvme-ids && ! grep -q 'dst-addr 10.0.0.1:4420' /tmp/nvme-ids"
	# Nobody listens on 4421: the CM answers the REQ with a REJ, the connect fails.
	if grep -q "^nvme_rdma " /proc/modules; then
		if timeout 60 sh -c "echo $NVME_OPTS,trsvcid=4421 >/dev/nvme-fabrics" 2>/dev/null; then
			nvme_fail "a connect to port 4421, where nobody listens, succeeded"
			for f in /sys/class/nvme/nvme*/delete_controller; do echo 1 >"$f"; done 2>/dev/null
		fi
	fi
	nvme_rmmod nvme_rdma nvme_fabrics nvme_core
	nvme_target_down
	rm -f /tmp/nvme-a /tmp/nvme-b
	counters >/tmp/nvme-cnt1
	# Every counter that moved, retransmissions and duplicates included, goes into the log (the
	# checks are lower bounds, as a CM's transmit counts include retransmissions).
	deltas=$(counter_deltas /tmp/nvme-cnt0 /tmp/nvme-cnt1)
	klog "IBCM-INFO: nvme_rdma CM counter deltas: $deltas"
	if [ -z "$nvme_err" ]; then
		m=$(nvme_cm_msgs $nvme_q "$deltas")
		[ -n "$m" ] && nvme_fail "CM counters:$m"
	fi
	# The kernel's log of the test, without our own markers (read once).
	dmesg | grep -v 'IBCM-' >/tmp/nvme-dmesg
	# Any error recovery (a queue that broke, a keep-alive that expired) is a failure here.
	rec=$(grep -m 1 -E 'starting error recovery|Reconnecting in|keep-alive timer .* expired|fatal error occurred|failed nvme_keep_alive_end_io' /tmp/nvme-dmesg)
	[ -n "$rec" ] && nvme_fail "recovery: ${rec#*] }"
	# The refused connect: nvme-rdma got the CM's REJ, with its reason (cm.c's for no listener).
	grep -q 'Connect rejected: status 8 (invalid service ID)' /tmp/nvme-dmesg ||
		nvme_fail "nvme-rdma did not log the REJ of port 4421 as 'Connect rejected: status 8 (invalid service ID)'"
	if [ -z "$nvme_err" ]; then
		e2e "ok nvme_rdma_$CM # $nvme_q queues at both ends, 1 MiB written and read back, disconnected, a REJ for port 4421; $(($(now) - t0)) s"
	else
		grep -iE 'nvme|rdma_cm|ib_cm|null_blk' /tmp/nvme-dmesg | tail -20 >/tmp/nvme-diag
		rdma resource show cm_id >>/tmp/nvme-diag 2>&1
		e2e "not ok nvme_rdma_$CM # $nvme_err"
		while IFS= read -r l; do klog "IBCM-DIAG: nvme: $l"; done </tmp/nvme-diag
	fi
}
nvme_check

# --- 8. nothing is left behind: no rdma_cm id once every tool has ended ---
ids=$(rdma resource show cm_id 2>&1)
if [ -z "$ids" ]; then
	e2e "ok no_cm_ids_left_$CM"
else
	e2e "not ok no_cm_ids_left_$CM # $(echo "$ids" | head -3 | tr '\n' ' ' | cut -c1-300)"
fi

# Device removal under a live listener: rdma_cm (removed first, it registered later) destroys
# its ib_cm listeners, then the CM drops the device; the device comes back and listens again.
rping -s -a 10.0.0.1 -p 7175 >/tmp/rping-s3.log 2>&1 &
srv=$!
sleep 1
if rdma link del rxe0 && rdma link add rxe0 type rxe netdev veth0; then
	rping -s -a 10.0.0.1 -p 7176 >/tmp/rping-s4.log 2>&1 &
	srv2=$!
	sleep 1
	if kill -0 $srv2 2>/dev/null; then
		e2e "ok device_remove_and_readd_$CM"
	else
		e2e "not ok device_remove_and_readd_$CM # listen after re-add failed: $(tail -1 /tmp/rping-s4.log)"
	fi
	kill $srv2 2>/dev/null
	wait $srv2 2>/dev/null
else
	e2e "not ok device_remove_and_readd_$CM # rdma link del/add failed"
fi
kill $srv 2>/dev/null
wait $srv 2>/dev/null

# debugfs (ours only; cm.c has none): with rping connected on port 7178, rxe0's listeners show
# rdma_cm's listener for it (service ID 0x0106 << 16 | port, handler cma_ib_req_handler) and
# both devices' ids show an ESTABLISHED connection end.
debugfs_check() {
	D=/sys/kernel/debug/ib_cm
	sid=$(printf '0x%016x' $((0x01060000 + 7178)))
	l=$(grep "^$sid " $D/rxe0/listeners 2>/dev/null)
	# The client may still be resolving its route: wait for both connection ends.
	i=0
	while :; do
		e0=$(grep -c ' ESTABLISHED ' $D/rxe0/ids 2>/dev/null)
		e1=$(grep -c ' ESTABLISHED ' $D/rxe1/ids 2>/dev/null)
		[ "${e0:-0}" -ge 1 ] && [ "${e1:-0}" -ge 1 ] && break
		i=$((i + 1))
		[ $i -ge 40 ] && break
		usleep 500000
	done
	case "$l" in
	*cma_ib_req_handler*) ok_l=1 ;;
	*) ok_l= ;;
	esac
	if [ -n "$ok_l" ] && [ "${e0:-0}" -ge 1 ] && [ "${e1:-0}" -ge 1 ]; then
		e2e "ok debugfs_shows_listener_and_connection_$CM # $(echo $l | tr -s ' ')"
	else
		e2e "not ok debugfs_shows_listener_and_connection_$CM # listener: '$l'; ESTABLISHED ids: rxe0 ${e0:-none}, rxe1 ${e1:-none}"
		for f in $D/*/*; do sed "s|^|debugfs $f: |" $f >/dev/kmsg 2>/dev/null; done
	fi
	# Design A: each connection end keeps the address handle its REQ or REP made until it is
	# back in IDLE, so every established id holds one (conn_ah column 'held'), on either side.
	h=$(cat $D/rxe0/ids $D/rxe1/ids 2>/dev/null | awk '$3 == "ESTABLISHED" && $5 != "held"' | wc -l)
	if [ "${e0:-0}" -ge 1 ] && [ "${e1:-0}" -ge 1 ] && [ "$h" = 0 ]; then
		e2e "ok debugfs_established_ids_hold_conn_ah_$CM"
	else
		e2e "not ok debugfs_established_ids_hold_conn_ah_$CM # $h established id(s) without one: $(cat $D/rxe0/ids $D/rxe1/ids | tr '\n' '|')"
	fi
}

# Device removal under an established connection: the client's device goes away while rping
# is connected through it. rdma_cm (removed first) sees DEVICE_REMOVAL on its ids and destroys
# them, with their ib_cm ids in ESTABLISHED; the removal must finish (no destroy waiting
# forever), the peer's side must end, and a new connection must work once the device is back.
# kmemleak below checks that nothing leaked; a splat fails the boot.
rping -s -a 10.0.0.1 -p 7178 >/tmp/rping-s5.log 2>&1 &
srv=$!
connected= cli=
if wait_listen 7178 60; then
	timeout 120 rping -c -a 10.0.0.1 -I 10.0.0.2 -p 7178 -C 1000000 >/tmp/rping-c5.log 2>&1 &
	cli=$!
	wait_connected 7178 60 && connected=1
fi
if [ -z "$connected" ]; then
	e2e "not ok device_remove_with_connection_$CM # no connection: server: $(last /tmp/rping-s5.log); client: $(last /tmp/rping-c5.log)"
	[ -n "$cli" ] && reap $cli 0
else
	[ "$CM" = rs ] && debugfs_check
	t0=$(now)
	if timeout 60 rdma link del rxe1; then
		took=$(($(now) - t0))
		# The client must see the removal and end by itself: rdma_cm delivers
		# DEVICE_REMOVAL to its id, whose ib_cm id is destroyed in ESTABLISHED.
		reap $cli 30
		klog "IBCM-SAY: rping client at device removal: $(tail -n 3 /tmp/rping-c5.log | tr '\n' '|')"
		if [ -z "$reap_killed" ] && grep -q "device removal" /tmp/rping-c5.log; then
			e2e "ok device_removal_reaches_client_$CM"
		else
			e2e "not ok device_removal_reaches_client_$CM # killed after 30 s: ${reap_killed:-no}: $(last /tmp/rping-c5.log)"
		fi
		timeout 60 rdma link add rxe1 type rxe netdev veth1 || true
		ping -c 1 -W 2 -I veth1 10.0.0.1 >/dev/null 2>&1
		# The server (not persistent) ended with its connection: a new one for the new device.
		reap $srv 10
		rping -s -a 10.0.0.1 -p 7178 >/tmp/rping-s6.log 2>&1 &
		srv=$!
		if wait_listen 7178 30 && timeout 60 rping -c -a 10.0.0.1 -I 10.0.0.2 -p 7178 -C 5 >/tmp/rping-c6.log 2>&1; then
			e2e "ok device_remove_with_connection_$CM # removal took $took s, with rping connected"
		else
			e2e "not ok device_remove_with_connection_$CM # no new connection after re-add: server: $(last /tmp/rping-s6.log); client: $(last /tmp/rping-c6.log)"
		fi
	else
		e2e "not ok device_remove_with_connection_$CM # rdma link del rxe1 failed or hung"
		reap $cli 0
	fi
fi
reap $srv 0

# rmmod ib_cm is refused while rdma_cm holds it.
if rmmod ib_cm 2>/dev/null; then
	e2e "not ok rmmod_refused_while_used_$CM # ib_cm unloaded under rdma_cm"
else
	e2e "ok rmmod_refused_while_used_$CM"
fi

# Everything unloads: no listener or id keeps a module reference.
ok=1
for m in rdma_ucm rdma_cm iw_cm ib_cm; do rmmod $m 2>/dev/null || ok=0; done
if [ $ok = 1 ]; then e2e "ok unload_$CM"; else e2e "not ok unload_$CM # rmmod failed: $(cat /proc/modules | cut -d' ' -f1,3 | tr '\n' ' ')"; fi

# --- leak check: kmemleak, if the kernel has it ---
kmemleak_check $CM
finish
