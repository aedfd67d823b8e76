#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Guest side of `make bench-storm` (sourced by /init with ibcm.mode=storm, after the CM is
# loaded on rxe0/rxe1): connection storms through rdma_cm, with unmodified cmtime (rdma-core),
# which opens all of its -c connections at once (every id resolves, then every id connects,
# then every id disconnects; each connection with its QP and CQs).
#
# Shapes (ibcm.storm=SHAPE,SHAPE,...; SHAPE is KIND:PxC):
#   m1:PxC  many-to-one: one cmtime server on 10.0.0.1 (rxe0); P client processes bound to
#           10.0.0.2 (rxe1), started together, each opening C connections.
#   mm:PxC  many-to-many: P pairs (server and client) started together, half with the server
#           on rxe0 and half on rxe1, so that both devices send REQs and answer them (REPs,
#           RTUs) at the same moment, each pair with C connections.
#   m1n, mmn  the same without QPs: tests/tools/cm_storm (librdmacm, the same steps as cmtime,
#           connections named by QP number only), so no CQ or QP is made and the count is not
#           bounded by rxe's 16384 CQs per device; every CM MAD is the same.
# For each shape one IBCM-STORM line: the time from the storm's start until the last connection
# was ESTABLISHED (estab_ms; cmtime's shapes: from the clients' start, by cmtime's step
# timings; cm_storm's: from the signal that starts every client's connects once all resolved
# their routes, prep_ms after the clients' start) and until the last client was done, the
# clients that failed and the errors they printed, the CM's REQ and REP retransmissions and (ours) the
# messages whose retries ran out (per-port sysfs counters, both devices), hung-task messages
# (threshold lowered to 10 s), and the peak of the kernel's slab and of used memory while the
# shape ran. tests/bench/storm.sh compares the CMs.
SHAPES=$(echo "${STORM:-m1:4x25,mm:4x25}" | tr , ' ')
for m in iw_cm rdma_cm rdma_ucm; do ins /lib/modules/base/$m.ko || fatal storm_modules "insmod $m"; done
echo 10 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
echo 1000 >/proc/sys/kernel/hung_task_warnings 2>/dev/null
ulimit -n 65536 2>/dev/null
# rdma_ucm queues at most max_backlog unanswered connect requests per listener and rejects the
# rest. cmtime's servers (backlog 0) get rdma_ucm's own default; cm_storm's ask for 65536 and
# the shapes without QPs raise max_backlog to that while they run (16k requests to one server).
BACKLOG0=$(cat /proc/sys/net/rdma_ucm/max_backlog 2>/dev/null)

# The latency variant's irqsoff tracer (make bench-storm VARIANT=latency): armed per shape.
TRS=/sys/kernel/tracing
mount -t tracefs tracefs $TRS 2>/dev/null
irqsoff=
grep -qw irqsoff $TRS/available_tracers 2>/dev/null && irqsoff=1
# With histogram triggers as well (the latency variant), in a tracing instance of their own
# (their absolute timestamps would upset the irqsoff tracer's): the CM's own interrupts-off
# stretches. The irq_disable and irq_enable tracepoints carry the address of the function that
# called the lock or irq-save (`parent_offs`, from _stext; the latency kernel has frame
# pointers for it); a stretch whose disable and enable both come from the CM module's code
# (/proc/modules) is timed per CPU and becomes a synthetic `irqoff` event with its length, and
# a histogram keyed by the stack of the enable keeps each stack's longest of 10 us or more
# (onmax). Interrupts the CM turns off in its own code are timed until the CM turns them on
# again, MAD-layer and driver calls made meanwhile included; a stretch some other code began
# (the CM called with interrupts off) is not the CM's. Armed per shape.
hist=
INST=$TRS/instances/ibcm
if [ -n "$irqsoff" ] && [ -d $TRS/events/preemptirq ] && [ -e $TRS/synthetic_events ]; then
	echo 'irqoff u64 lat' >>$TRS/synthetic_events && mkdir -p $INST && [ -d $INST/events/synthetic ] && hist=1
fi
# The CM module's code as offsets from _stext (kernel text and modules share the top 4 GiB
# on x86_64, so the low 32 bits of the addresses suffice).
cm_range() {
	st=$(awk '$3 == "_stext" { print $1; exit }' /proc/kallsyms)
	set -- $(awk '$1 == "ib_cm" { print $2, $6 }' /proc/modules)
	[ -n "$st" ] && [ -n "${2:-}" ] || return 1
	lo=$((0x${2#0x????????} - 0x${st#????????}))
	hi=$((lo + $1))
	HIST_DIS="hist:keys=common_cpu:ts0=common_timestamp.usecs if parent_offs >= $lo && parent_offs < $hi"
	HIST_EN="hist:keys=common_cpu:lat=common_timestamp.usecs-\$ts0:onmatch(preemptirq.irq_disable).trace(irqoff,\$lat) if parent_offs >= $lo && parent_offs < $hi"
}
HIST_SYN='hist:keys=common_stacktrace:mx=lat:onmax($mx).save(lat):size=16384 if lat >= 10'
hist_on() {
	cm_range &&
		echo "$HIST_DIS" >$INST/events/preemptirq/irq_disable/trigger &&
		echo "$HIST_EN" >$INST/events/preemptirq/irq_enable/trigger &&
		echo "$HIST_SYN" >$INST/events/synthetic/irqoff/trigger
}
hist_off() {
	echo "!$HIST_SYN" >>$INST/events/synthetic/irqoff/trigger
	echo "!$HIST_EN" >>$INST/events/preemptirq/irq_enable/trigger
	echo "!$HIST_DIS" >>$INST/events/preemptirq/irq_disable/trigger
}
# From the histogram: "max/function/stacks/dropped": the longest stretch and the first CM
# function on its stack ("0/none" if none was 10 us or more), the stacks kept and the
# stretches a full table dropped; "na/na/na/na" without the histogram.
HIST_AWK='
	/^\{ common_stacktrace:/ { cm = ""; stacks++; st = ""; next }
	/^ *Dropped:/ { dropped = $2; next }
	/^ *(Hits|Entries):/ { next }
	/^ +[^ ]/ {
		st = st " < " $1 ($2 ~ /^\[/ ? " " $2 : "")
		if (cm == "" && /\[ib_cm\]/) { cm = $1; sub(/\+.*/, "", cm) }
		next
	}
	/^[ \t]*max:/ { n = $2 + 0; if (n > max) { max = n; at = cm == "" ? "?" : cm }; print n, st > "/tmp/cmirq-stacks" }
	END { printf "%d/%s/%d/%s", max, max ? at : "none", stacks, dropped == "" ? "na" : dropped }'
hist_cm() {
	[ -e $INST/events/synthetic/irqoff/hist ] || { echo "na/na/na/na"; return; }
	rm -f /tmp/cmirq-stacks
	awk "$HIST_AWK" $INST/events/synthetic/irqoff/hist
}
ms() { read -r up _ </proc/uptime; echo "$up" | awk '{ printf "%d", $1 * 1000 }'; }
# The CM's counters of both devices: cm_tx_msgs, cm_tx_retries and (ours) cm_tx_timeouts and
# cm_rx_dropped.
cnt() { grep -H . /sys/class/infiniband/rxe[01]/ports/1/cm_tx_*/* /sys/class/infiniband/rxe[01]/ports/1/cm_rx_dropped/* 2>/dev/null; }
# Sum of the deltas of the files matching $3 between snapshots $1 and $2.
delta() {
	awk -F: -v pat="$3" 'NR == FNR { b[$1] = $2; next } $1 ~ pat { s += $2 - b[$1]; seen = 1 }
		END { if (seen) print s + 0; else print "na" }' "$1" "$2"
}
# Used memory and slab in kB, sampled every 200 ms into $1 until $1.stop exists.
sampler() {
	while [ ! -e "$1.stop" ]; do
		awk '/^MemTotal:/ { t = $2 } /^MemAvailable:/ { a = $2 } /^Slab:/ { s = $2 }
			END { print t - a, s }' /proc/meminfo >>"$1"
		sleep 0.2
	done
}
port=20000
for shape in $SHAPES; do
	kind=${shape%%:*}
	pc=${shape#*:}
	P=${pc%x*}
	C=${pc#*x}
	rm -f /tmp/st-* /tmp/mem /tmp/mem.stop
	case $kind in
	m1n | mmn) echo 65536 >/proc/sys/net/rdma_ucm/max_backlog 2>/dev/null ;;
	*) [ -z "$BACKLOG0" ] || echo "$BACKLOG0" >/proc/sys/net/rdma_ucm/max_backlog 2>/dev/null ;;
	esac
	cnt >/tmp/st-cnt0
	klog "IBCM-STORM-MARK: $shape"
	if [ -n "$irqsoff" ]; then
		echo 0 >$TRS/tracing_max_latency
		echo irqsoff >$TRS/current_tracer
	fi
	harmed=
	if [ -n "$hist" ]; then
		if hist_on; then
			harmed=1
		else
			klog "IBCM-STORM-NOTE: $CM $shape histogram triggers refused"
			hist_off 2>/dev/null
		fi
	fi
	sampler /tmp/mem &
	samp=$!
	srvs=""
	i=0
	while [ $i -lt "$P" ]; do
		# cm_storm's QP numbers: servers from 0x800000, clients from 0x100, C apart (distinct
		# among each device's connections, which a CM requires).
		case $kind in
		m1)
			[ $i = 0 ] || break
			cmtime -b 10.0.0.1 -p $port >/tmp/st-srv-$i.log 2>&1 &
			;;
		m1n)
			[ $i = 0 ] || break
			cm_storm -b 10.0.0.1 -p $port -q $((0x800000)) >/tmp/st-srv-$i.log 2>&1 &
			;;
		*)
			if [ $((i % 2)) = 0 ]; then s=10.0.0.1; else s=10.0.0.2; fi
			if [ "$kind" = mm ]; then
				cmtime -b $s -p $((port + i)) >/tmp/st-srv-$i.log 2>&1 &
			else
				cm_storm -b $s -p $((port + i)) -q $((0x800000 + i * C)) >/tmp/st-srv-$i.log 2>&1 &
			fi
			;;
		esac
		srvs="$srvs $!"
		i=$((i + 1))
	done
	# Every server listens before the storm starts (rdma_listen went through the CM).
	want=$(echo $srvs | wc -w)
	n=0
	while [ $n -lt 150 ]; do
		[ "$(rdma resource show cm_id 2>/dev/null | grep -c 'state LISTEN')" -ge "$want" ] && break
		sleep 0.2
		n=$((n + 1))
	done
	t0=$(ms)
	i=0
	clis=""
	while [ $i -lt "$P" ]; do
		if [ "$kind" = m1 ] || [ "$kind" = m1n ]; then
			s=10.0.0.1 b=10.0.0.2 p=$port
		elif [ $((i % 2)) = 0 ]; then
			s=10.0.0.1 b=10.0.0.2 p=$((port + i))
		else
			s=10.0.0.2 b=10.0.0.1 p=$((port + i))
		fi
		(
			ms >/tmp/st-start-$i
			case $kind in
			m1 | mm) timeout 600 cmtime -s $s -b $b -p $p -c "$C" >/tmp/st-cli-$i.log 2>&1 ;;
			*) timeout 600 cm_storm -s $s -b $b -p $p -q $((0x100 + i * C)) -c "$C" -r /tmp/st-ready-$i \
				>/tmp/st-cli-$i.log 2>&1 ;;
			esac
			echo "$? $(ms)" >/tmp/st-end-$i
		) &
		clis="$clis $!"
		i=$((i + 1))
	done
	# cm_storm's clients resolve every address and route, then wait: once all are ready (or
	# gone), one signal starts every connect at the same moment, and the storm is timed from
	# there (cmtime's clients start connecting when each is ready, timed from their start).
	tgo=$t0
	case $kind in
	m1n | mmn)
		n=0
		while [ $n -lt 3000 ]; do
			# Clients ready, or gone before (a client that failed early).
			j=0 r=0
			while [ $j -lt "$P" ]; do
				{ [ -e /tmp/st-ready-$j ] || [ -e /tmp/st-end-$j ]; } && r=$((r + 1))
				j=$((j + 1))
			done
			[ "$r" -ge "$P" ] && break
			sleep 0.1
			n=$((n + 1))
		done
		pids= j=0
		while [ $j -lt "$P" ]; do
			if [ -e /tmp/st-ready-$j ]; then
				read -r pid </tmp/st-ready-$j
				pids="$pids $pid"
			fi
			j=$((j + 1))
		done
		tgo=$(ms)
		kill -USR1 $pids 2>/dev/null
		;;
	esac
	wait $clis
	t1=$(ms)
	touch /tmp/mem.stop
	wait $samp
	# A server may be between its check of the signal and its wait for an event, which a
	# second signal then interrupts. (cm_storm's servers report on SIGTERM, then exit.)
	kill $srvs 2>/dev/null
	sleep 0.3
	kill $srvs 2>/dev/null
	wait $srvs 2>/dev/null
	cnt >/tmp/st-cnt1
	# Per client: exit status; when its last connection was ESTABLISHED, from the storm's
	# start: its own start plus cmtime's steps up to connect (each step's total runs from its
	# first id's start to its last id's end, and the steps run one after the other); when it
	# ended (disconnects and destroys included).
	failed=0 errs=0 estab=0 last=0 unreach=0 estab_active=
	i=0
	while [ $i -lt "$P" ]; do
		read -r rc end </tmp/st-end-$i
		read -r start </tmp/st-start-$i
		[ "$rc" = 0 ] || failed=$((failed + 1))
		case $kind in
		m1 | mm) e=$(grep -c -i -E 'error|fail|reject|unreach|timeout' /tmp/st-cli-$i.log) ;;
		*)
			e=$(sed -n 's/.* failed=\([0-9]*\).*/\1/p' /tmp/st-cli-$i.log)
			e=${e:-1}
			# Connects whose REQ retries ran out (UNREACHABLE) or that failed otherwise.
			u=$(sed -n 's/.* unreachable=\([0-9]*\) connect_error=\([0-9]*\).*/\1 \2/p' \
				/tmp/st-cli-$i.log)
			for x in $u; do unreach=$((unreach + x)); done
			;;
		esac
		errs=$((errs + e))
		case $kind in
		m1 | mm)
			c=$(awk -F: '{ n = $1; sub(/ +$/, "", n); split($2, v, " ") }
				n ~ /^(create id|resolve addr|resolve route|create qp|connect)$/ { t += v[1]; seen++ }
				END { if (seen == 5) printf "%d", t }' /tmp/st-cli-$i.log)
			[ -n "$c" ] && c=$((start - t0 + c))
			;;
		*)
			# cm_storm prints the (uptime) millisecond of its last established connection.
			c=$(sed -n 's/.* last_established_ms=\([0-9]*\).*/\1/p' /tmp/st-cli-$i.log)
			[ -n "$c" ] && [ "$c" -gt 0 ] && c=$((c - tgo)) || c=
			;;
		esac
		[ -n "$c" ] && [ "$c" -gt "$estab" ] && estab=$c
		[ -n "$end" ] && [ $((end - t0)) -gt "$last" ] && last=$((end - t0))
		i=$((i + 1))
	done
	# cm_storm's servers: when each saw its last connection ESTABLISHED (its RTU received).
	# The connection is complete only then, so the later of the two sides counts.
	estab_passive=na
	case $kind in
	m1n | mmn)
		estab_passive=0
		for f in /tmp/st-srv-*.log; do
			c=$(sed -n 's/.* last_established_ms=\([0-9]*\).*/\1/p' "$f")
			[ -n "$c" ] && [ "$c" -gt 0 ] && [ $((c - tgo)) -gt "$estab_passive" ] &&
				estab_passive=$((c - tgo))
		done
		estab_active=$estab
		[ "$estab_passive" -gt "$estab" ] && estab=$estab_passive
		;;
	esac
	[ $failed = 0 ] || klog "IBCM-STORM-NOTE: $CM $shape first failed client: $(grep -l . /tmp/st-cli-* | head -1 | xargs tail -3 | tr '\n' ' ')"
	hung=$(dmesg | sed -n "/IBCM-STORM-MARK: $shape\$/,\$p" | grep -c -E 'blocked for more than|soft lockup|self-detected stall|rcu_preempt detected|hard LOCKUP')
	peak=$(awk 'NR == 1 { u0 = $1; s0 = $2 } { if ($1 > u) u = $1; if ($2 > s) s = $2 }
		END { printf "%d %d", u - u0, s - s0 }' /tmp/mem)
	# The longest stretch with interrupts off while the shape ran (us), and the functions that
	# began and ended it (the irqsoff tracer's snapshot of the worst one).
	irq=na at=na cmirq=na/na/na/na
	if [ -n "$harmed" ]; then
		cmirq=$(hist_cm)
		klog "IBCM-STORM-CMIRQ: $CM $shape longest/function/stacks/dropped $cmirq"
		# The CM's three longest with their stacks, for the log.
		sort -rn /tmp/cmirq-stacks 2>/dev/null | head -3 | while read -r line; do
			klog "IBCM-STORM-CMIRQ-STACK: $CM $shape $line"
		done
		hist_off
	fi
	if [ -n "$irqsoff" ]; then
		echo 0 >$TRS/tracing_on
		irq=$(cat $TRS/tracing_max_latency)
		at=$(sed -n -E 's/^#* *=> (started|ended) at: *([^ ]*).*/\2/p' $TRS/trace | head -2 | tr '\n' '/')
		klog "IBCM-STORM-IRQSOFF: $CM $shape $(grep -v '^#' $TRS/trace | head -40 | tr -s ' ' | tr '\n' '|')"
		echo nop >$TRS/current_tracer
		echo 1 >$TRS/tracing_on
	fi
	# Ours: the most REQs/DREQs that waited for a flow-control slot on either device so far in
	# this boot (the mark only rises; the C CM has none).
	bhw=$(cat /sys/class/infiniband/rxe[01]/ports/1/cm_flow/backlog_high_water 2>/dev/null | sort -n | tail -1)
	klog "IBCM-STORM: cm=$CM shape=$shape backlog_hw=${bhw:-na} irqsoff_max_us=$irq irqsoff_at=${at:-na} cm_irqsoff_us=$(echo $cmirq | cut -d/ -f1) cm_irqsoff_at=$(echo $cmirq | cut -d/ -f2) irq_stacks=$(echo $cmirq | cut -d/ -f3) irq_dropped=$(echo $cmirq | cut -d/ -f4) conns=$((P * C)) prep_ms=$((tgo - t0)) wall_ms=$((t1 - t0)) last_client_ms=$last estab_ms=$estab estab_active_ms=${estab_active:-na} estab_passive_ms=$estab_passive failed_clients=$failed error_lines=$errs conn_unreachable=$( [ "$kind" = m1n ] || [ "$kind" = mmn ] && echo $unreach || echo na) req_retries=$(delta /tmp/st-cnt0 /tmp/st-cnt1 'cm_tx_retries/req$') rep_retries=$(delta /tmp/st-cnt0 /tmp/st-cnt1 'cm_tx_retries/rep$') reqs_sent=$(delta /tmp/st-cnt0 /tmp/st-cnt1 'cm_tx_msgs/req$') timeouts=$(delta /tmp/st-cnt0 /tmp/st-cnt1 'cm_tx_timeouts/') rx_overload=$(delta /tmp/st-cnt0 /tmp/st-cnt1 'cm_rx_dropped/overload$') hung=$hung mem_peak_kb=${peak% *} slab_peak_kb=${peak#* }"
	port=$((port + 1000))
	# The connections' timewaits (and the ids in them) end before the next shape.
	sleep 5
done
[ -z "$BACKLOG0" ] || echo "$BACKLOG0" >/proc/sys/net/rdma_ucm/max_backlog 2>/dev/null
