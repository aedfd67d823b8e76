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
# was ESTABLISHED (from cmtime's step timings) and until the last client was done, the clients that
# failed and the errors they printed, the CM's REQ and REP retransmissions and (ours) the
# messages whose retries ran out (per-port sysfs counters, both devices), hung-task messages
# (threshold lowered to 10 s), and the peak of the kernel's slab and of used memory while the
# shape ran. tests/bench/storm.sh compares the CMs.
SHAPES=$(echo "${STORM:-m1:4x25,mm:4x25}" | tr , ' ')
for m in iw_cm rdma_cm rdma_ucm; do ins /lib/modules/base/$m.ko || fatal storm_modules "insmod $m"; done
echo 10 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
echo 1000 >/proc/sys/kernel/hung_task_warnings 2>/dev/null
ulimit -n 65536 2>/dev/null
# rdma_ucm queues at most max_backlog unanswered connect requests per listener and rejects the
# rest; cm_storm's servers ask for 65536 (cmtime's for rdma_ucm's default 1024).
echo 65536 >/proc/sys/net/rdma_ucm/max_backlog 2>/dev/null

# The latency variant's irqsoff tracer (make bench-storm VARIANT=latency): armed per shape.
TRS=/sys/kernel/tracing
mount -t tracefs tracefs $TRS 2>/dev/null
irqsoff=
grep -qw irqsoff $TRS/available_tracers 2>/dev/null && irqsoff=1
# With histogram triggers as well (the latency variant): every interrupts-off stretch of at
# least 10 us becomes a synthetic `irqoff` event with its length, timed per CPU from the
# irq_disable to the irq_enable tracepoint, and a histogram keeps each (stack that turned
# interrupts back on, length) pair. A stretch is the CM's when the CM module is on that
# stack: the CM turned interrupts off in a function of its own or in one it called (a lock
# released in the CM, the MAD layer or the driver called from it). Armed per shape.
hist=
if [ -n "$irqsoff" ] && [ -d $TRS/events/preemptirq ] && [ -e $TRS/synthetic_events ]; then
	echo 'irqoff u64 lat' >>$TRS/synthetic_events && hist=1
fi
hist_on() {
	echo 'hist:keys=common_cpu:ts0=common_timestamp.usecs' >$TRS/events/preemptirq/irq_disable/trigger
	echo 'hist:keys=common_cpu:lat=common_timestamp.usecs-$ts0:onmatch(preemptirq.irq_disable).trace(irqoff,$lat)' \
		>$TRS/events/preemptirq/irq_enable/trigger
	echo 'hist:keys=common_stacktrace,lat:size=16384 if lat >= 10' >$TRS/events/synthetic/irqoff/trigger
}
hist_off() {
	echo '!hist:keys=common_stacktrace,lat:size=16384 if lat >= 10' >>$TRS/events/synthetic/irqoff/trigger
	echo '!hist:keys=common_cpu:lat=common_timestamp.usecs-$ts0:onmatch(preemptirq.irq_disable).trace(irqoff,$lat)' \
		>>$TRS/events/preemptirq/irq_enable/trigger
	echo '!hist:keys=common_cpu:ts0=common_timestamp.usecs' >>$TRS/events/preemptirq/irq_disable/trigger
}
# From the histogram: the longest stretch whose stack has a function of the CM module (ib_cm),
# and that function; "0/none" if none was 10 us or more.
hist_cm() {
	[ -e $TRS/events/synthetic/irqoff/hist ] || { echo "na/na"; return; }
	awk '/^\{ common_stacktrace:/ { cm = ""; next }
		/\[ib_cm\]/ && cm == "" { cm = $1; sub(/\+.*/, "", cm) }
		/^, lat:/ { n = $3 + 0; if (cm != "" && n > max) { max = n; at = cm } }
		END { if (max) printf "%d/%s", max, at; else print "0/none" }' $TRS/events/synthetic/irqoff/hist
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
	cnt >/tmp/st-cnt0
	klog "IBCM-STORM-MARK: $shape"
	if [ -n "$irqsoff" ]; then
		echo 0 >$TRS/tracing_max_latency
		echo irqsoff >$TRS/current_tracer
	fi
	[ -z "$hist" ] || hist_on
	sampler /tmp/mem &
	samp=$!
	srvs=""
	i=0
	while [ $i -lt "$P" ]; do
		# cm_storm's QP numbers: servers from 0x800000, clients from 1, C apart (distinct
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
			*) timeout 600 cm_storm -s $s -b $b -p $p -q $((1 + i * C)) -c "$C" >/tmp/st-cli-$i.log 2>&1 ;;
			esac
			echo "$? $(ms)" >/tmp/st-end-$i
		) &
		clis="$clis $!"
		i=$((i + 1))
	done
	wait $clis
	t1=$(ms)
	touch /tmp/mem.stop
	wait $samp
	kill $srvs 2>/dev/null
	wait $srvs 2>/dev/null
	cnt >/tmp/st-cnt1
	# Per client: exit status; when its last connection was ESTABLISHED, from the storm's
	# start: its own start plus cmtime's steps up to connect (each step's total runs from its
	# first id's start to its last id's end, and the steps run one after the other); when it
	# ended (disconnects and destroys included).
	failed=0 errs=0 estab=0 last=0
	i=0
	while [ $i -lt "$P" ]; do
		read -r rc end </tmp/st-end-$i
		read -r start </tmp/st-start-$i
		[ "$rc" = 0 ] || failed=$((failed + 1))
		case $kind in
		m1 | mm) e=$(grep -c -i -E 'error|fail|reject|unreach|timeout' /tmp/st-cli-$i.log) ;;
		*) e=$(sed -n 's/.* failed=\([0-9]*\).*/\1/p' /tmp/st-cli-$i.log); e=${e:-1} ;;
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
			[ -n "$c" ] && [ "$c" -gt 0 ] && c=$((c - t0)) || c=
			;;
		esac
		[ -n "$c" ] && [ "$c" -gt "$estab" ] && estab=$c
		[ -n "$end" ] && [ $((end - t0)) -gt "$last" ] && last=$((end - t0))
		i=$((i + 1))
	done
	[ $failed = 0 ] || klog "IBCM-STORM-NOTE: $CM $shape first failed client: $(grep -l . /tmp/st-cli-* | head -1 | xargs tail -3 | tr '\n' ' ')"
	hung=$(dmesg | sed -n "/IBCM-STORM-MARK: $shape\$/,\$p" | grep -c -E 'blocked for more than|soft lockup|self-detected stall|rcu_preempt detected|hard LOCKUP')
	peak=$(awk 'NR == 1 { u0 = $1; s0 = $2 } { if ($1 > u) u = $1; if ($2 > s) s = $2 }
		END { printf "%d %d", u - u0, s - s0 }' /tmp/mem)
	# The longest stretch with interrupts off while the shape ran (us), and the functions that
	# began and ended it (the irqsoff tracer's snapshot of the worst one).
	irq=na at=na cmirq=na
	if [ -n "$hist" ]; then
		cmirq=$(hist_cm)
		klog "IBCM-STORM-CMIRQ: $CM $shape $(grep -c '^{ common_stacktrace' $TRS/events/synthetic/irqoff/hist 2>/dev/null) stretches of 10 us or more, the CM's longest $cmirq"
		# The CM's three longest with their stacks, for the log.
		awk '/^\{ common_stacktrace:/ { st = ""; cm = 0; next }
			/\[ib_cm\]/ { cm = 1 }
			/^ +[^ ]/ && !/^, lat:/ { sub(/^ +/, ""); st = st " < " $0; next }
			/^, lat:/ { if (cm) print $3 + 0, st }' $TRS/events/synthetic/irqoff/hist 2>/dev/null |
			sort -rn | head -3 | while read -r line; do klog "IBCM-STORM-CMIRQ-STACK: $CM $shape $line"; done
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
	klog "IBCM-STORM: cm=$CM shape=$shape backlog_hw=${bhw:-na} irqsoff_max_us=$irq irqsoff_at=${at:-na} cm_irqsoff_us=${cmirq%%/*} cm_irqsoff_at=${cmirq#*/} conns=$((P * C)) wall_ms=$((t1 - t0)) last_client_ms=$last estab_ms=$estab failed_clients=$failed error_lines=$errs req_retries=$(delta /tmp/st-cnt0 /tmp/st-cnt1 'cm_tx_retries/req$') rep_retries=$(delta /tmp/st-cnt0 /tmp/st-cnt1 'cm_tx_retries/rep$') reqs_sent=$(delta /tmp/st-cnt0 /tmp/st-cnt1 'cm_tx_msgs/req$') timeouts=$(delta /tmp/st-cnt0 /tmp/st-cnt1 'cm_tx_timeouts/') rx_overload=$(delta /tmp/st-cnt0 /tmp/st-cnt1 'cm_rx_dropped/overload$') hung=$hung mem_peak_kb=${peak% *} slab_peak_kb=${peak#* }"
	port=$((port + 1000))
	# The connections' timewaits (and the ids in them) end before the next shape.
	sleep 5
done
