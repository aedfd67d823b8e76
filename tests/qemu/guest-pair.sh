#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Two-guest interop over a QEMU socket network (sourced by /init when ibcm.role is set).
#   role a: the requester. Runs with no CM first (cm_umad speaks raw CM MADs and checks the
#           answers field by field), then with the stock C stack (C ib_cm + rdma_cm) and the
#           unmodified rping / udaddy.
#   role b: the responder, with ibcm.cm=rs|c. First nothing listens; then the test ULP
#           listens with ib_cm_insert_listen() and turns everything down.
#   both, last: the rdma-core tool matrix. B loads rdma_cm and rdma_ucm on top of its CM, A the
#           stock C stack, and the unmodified rping, ucmatose and udaddy run in both directions:
#           B serves and A connects, then A serves and B connects; A reports one IBCM-E2E line
#           per (tool, direction). ibcm.mode=interop boots for this matrix alone.
# A drives B through a tiny command channel (busybox nc on port 9000).

ROLE=$1
MY_IP=10.1.0.1
PEER_IP=10.1.0.2
[ "$ROLE" = b ] && MY_IP=10.1.0.2 && PEER_IP=10.1.0.1

for m in udp_tunnel ip6_udp_tunnel ib_core ib_uverbs ib_umad rdma_rxe; do
	ins /lib/modules/base/$m.ko || fatal pair_setup_$ROLE "insmod $m failed"
done
/usr/bin/ip link set lo up
/usr/bin/ip link set eth0 up || fatal pair_setup_$ROLE "no eth0"
/usr/bin/ip addr add $MY_IP/24 dev eth0
rdma link add rxe0 type rxe netdev eth0 || fatal pair_setup_$ROLE "rdma link add failed"

# The interop runner, the same on both guests (A calls it directly, B through the channel):
#   serve TOOL        start TOOL's server in the background; "ok" once it listens
#   connect TOOL      run TOOL's client to the peer; "ok t=Ns" or "fail <why>"
#   reap TOOL GRACE   wait up to GRACE s for the server to end (then kill it); "ok" or "fail <why>"
# Every run is under `timeout`; a verdict needs exit status 0 and the tool's own success lines.
cat >/tmp/e2e.conf <<CONF
MY_IP=$MY_IP PEER_IP=$PEER_IP MY_CM=$CM
CONF
cat >/tmp/e2e.sh <<'E2E'
#!/bin/sh
. /tmp/e2e.conf
args() { # args TOOL server|client: the options of the run (servers bind to this guest's address)
	case $1.$2 in
	rping.server) echo "-s -a $MY_IP -C 20 -v" ;;
	rping.client) echo "-c -a $PEER_IP -C 20 -v" ;;
	ucmatose.server) echo "-b $MY_IP -c 10 -C 5" ;;
	ucmatose.client) echo "-s $PEER_IP -b $MY_IP -c 10 -C 5" ;;
	udaddy.server) echo "-b $MY_IP -c 10 -C 5" ;;
	udaddy.client) echo "-s $PEER_IP -b $MY_IP -c 10 -C 5" ;;
	esac
}
# Seconds a client may take: C against C takes 3-11 s on a loaded two-core TCG host (rping
# the longest). A server gets 20 s more, its client must connect first.
limit() { case $1 in udaddy) echo 20 ;; *) echo 30 ;; esac; }
gist() { # gist FILE: the first error lines of a run, else its last lines, on one line
	re='error|fail|reject|unreach|timed? ?out|abort|refused|invalid|status -'
	g=$({ grep -iE "$re" "$1" | head -2; grep -qiE "$re" "$1" || tail -2 "$1"; } | tr '\n' ' ' | head -c 200)
	echo "${g:-(no output)}"
}
judge() { # judge TOOL RC FILE SECONDS: the verdict of one side
	tool=$1 rc=$2 out=$3 t=$4
	why=
	if [ "$rc" != 0 ]; then
		why="rc=$rc"
	elif [ $tool = rping ]; then
		n=$(grep -c 'ping data' "$out")
		[ "$n" = 20 ] || why="$n of 20 pings"
	else
		grep -q 'test complete' "$out" || why="no 'test complete'"
	fi
	if [ -z "$why" ]; then echo "ok t=${t}s"; else echo "fail $why t=${t}s: $(gist "$out")"; fi
}
tool=$2
case $1 in
serve)
	rm -f /tmp/srv-$tool.*
	date +%s >/tmp/srv-$tool.start
	( timeout $(( $(limit $tool) + 20 )) $tool $(args $tool server) >/tmp/srv-$tool.out 2>&1 &
	  echo $! >/tmp/srv-$tool.pid
	  wait $!
	  echo $? >/tmp/srv-$tool.rc ) </dev/null >/dev/null 2>&1 &
	# Listening means rdma_cm shows the server's id in state LISTEN (restrack over netlink).
	i=0
	while [ $i -lt 50 ]; do
		if [ -f /tmp/srv-$tool.rc ]; then
			echo "fail server exited at once, rc=$(cat /tmp/srv-$tool.rc): $(gist /tmp/srv-$tool.out)"
			exit 0
		fi
		pid=$(cat /tmp/srv-$tool.pid 2>/dev/null)
		if [ -n "$pid" ] && rdma res show cm_id 2>/dev/null | grep -qE "state LISTEN .*pid $pid( |\$)"; then
			echo ok
			exit 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	echo "fail server not listening after 5 s: $(rdma res show cm_id 2>&1 | tr '\n' ' ' | head -c 200)" ;;
connect)
	s=$(date +%s)
	timeout $(limit $tool) $tool $(args $tool client) >/tmp/cli-$tool.out 2>&1
	rc=$?
	judge $tool $rc /tmp/cli-$tool.out $(( $(date +%s) - s )) ;;
reap)
	grace=$3
	i=0
	while [ ! -f /tmp/srv-$tool.rc ] && [ $i -lt $((grace * 10)) ]; do sleep 0.1; i=$((i + 1)); done
	killed=
	if [ ! -f /tmp/srv-$tool.rc ]; then
		kill "$(cat /tmp/srv-$tool.pid)" 2>/dev/null
		killed="server still running ${grace} s after its client ended, killed; "
		i=0
		while [ ! -f /tmp/srv-$tool.rc ] && [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done
	fi
	t=$(( $(date +%s) - $(cat /tmp/srv-$tool.start) ))
	r=$(judge $tool "$(cat /tmp/srv-$tool.rc 2>/dev/null || echo unknown)" /tmp/srv-$tool.out $t)
	if [ -n "$killed" ]; then echo "fail $killed${r#* }"; else echo "$r"; fi ;;
*) echo "fail unknown e2e command '$1'" ;;
esac
E2E
chmod +x /tmp/e2e.sh

check() { # check NAME FILE PATTERN... : every pattern must appear in FILE
	name=$1 file=$2
	shift 2
	for pat in "$@"; do
		if ! grep -q -- "$pat" "$file"; then
			e2e "not ok $name # missing '$pat' in: $(head -c 300 "$file" | tr '\n' ' ')"
			return 1
		fi
	done
	e2e "ok $name"
}

if [ "$ROLE" = b ]; then
	# The responder runs the production build (the white-box suite of the test build runs in
	# the single-guest boot, where its two-device cases have rxe0 and rxe1).
	dir=$CM
	[ "$CM" = rs ] && dir=rs-prod
	ins /lib/modules/$dir/ib_cm.ko || fatal pair_load_$CM "insmod ib_cm ($dir) failed"
	cat >/tmp/cmd.sh <<'CMD'
#!/bin/sh
read -r cmd
case $cmd in
ping) echo ok ;;
cm) . /tmp/e2e.conf; echo "$MY_CM" ;;
stack-load)
	for m in iw_cm rdma_cm rdma_ucm; do
		insmod /lib/modules/base/$m.ko 2>/tmp/stack.err || { echo "fail insmod $m: $(cat /tmp/stack.err)"; exit 0; }
	done
	echo ok ;;
stack-unload)
	for m in rdma_ucm rdma_cm iw_cm; do
		rmmod $m 2>/dev/null || { echo "fail rmmod $m: $(cut -d' ' -f1,3 /proc/modules | tr '\n' ' ')"; exit 0; }
	done
	echo ok ;;
e2e-*) /tmp/e2e.sh ${cmd#e2e-} ;;
stat) awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat ;;
ulp-load) insmod /lib/modules/test/ib_cm_test_ulp.ko dev=rxe0 >/dev/null 2>&1 && echo ok || echo fail ;;
ulp-unload) rmmod ib_cm_test_ulp && echo ok || echo fail ;;
ulp-mode-*) echo "${cmd#ulp-mode-}" >/sys/module/ib_cm_test_ulp/parameters/mode && echo ok || echo fail ;;
link-cycle)
	# The counters die with the device: keep them for the checks at the end.
	p=/sys/class/infiniband/rxe0/ports/1
	for g in cm_rx_msgs cm_tx_msgs; do for f in req rej sidr_req sidr_rep lap apr; do
		echo "$g/$f=$(cat $p/$g/$f)"; done; done >/tmp/counters.log
	cat $p/cm_rx_dropped/malformed >/tmp/malformed.log 2>/dev/null
	echo "dup_req=$(cat $p/cm_rx_duplicates/req) dup_sidr=$(cat $p/cm_rx_duplicates/sidr_req)" >/tmp/dups.log
	rdma link del rxe0 && rdma link add rxe0 type rxe netdev eth0 && echo ok || echo fail ;;
trace-start)
	# Per-handler CM time for the benchmark (release kernel): the function profiler on the
	# CM's MAD receive and send handlers (C functions in both CMs), and the workqueue
	# tracepoints for its receive work items (cm_work_handler in C; a Rust function in ours,
	# which ftrace cannot hook directly), filtered by the work function's address.
	. /tmp/bench.conf
	T=/sys/kernel/tracing
	[ -d $T/events ] || mount -t tracefs nodev $T
	addr=$(awk -v re="$WORK_RE" '$3 ~ re { print $1; exit }' /proc/kallsyms)
	[ -n "$addr" ] || { echo "fail no-work-fn"; exit 0; }
	echo 0 >$T/tracing_on; echo >$T/trace; echo 4096 >$T/buffer_size_kb
	for e in start end; do
		echo "function == 0x$addr" >$T/events/workqueue/workqueue_execute_$e/filter
		echo 1 >$T/events/workqueue/workqueue_execute_$e/enable
	done
	echo "$RECV_FN $SEND_FN" >$T/set_ftrace_filter
	for f in $PROF; do echo "$f" >>$T/set_ftrace_filter; done
	echo 1 >$T/function_profile_enabled
	echo 1 >$T/tracing_on
	echo ok ;;
trace-stop)
	. /tmp/bench.conf
	T=/sys/kernel/tracing
	echo 0 >$T/tracing_on
	echo 0 >$T/function_profile_enabled
	# Work items: pair each execute_start with the next execute_end of the same work struct.
	work=$(awk '/workqueue_execute_(start|end)/ {
		match($0, /[0-9]+[.][0-9]+: workqueue/); ts = substr($0, RSTART, RLENGTH - 11)
		match($0, /work struct [^:]*/); w = substr($0, RSTART + 12, RLENGTH - 12)
		if ($0 ~ /execute_start/) { st[w] = ts } else if (w in st) { t += ts - st[w]; n++; delete st[w] } }
		END { printf "work_n=%d work_us=%d", n, t * 1000000 }' $T/trace)
	cat $T/trace_stat/function* >/tmp/prof.txt 2>/dev/null
	prof=$(awk -v r="$RECV_FN" -v s="$SEND_FN" '
		$1 == r { rn += $2; rt += $3 } $1 == s { sn += $2; st += $3 }
		END { printf "recv_n=%d recv_us=%d send_n=%d send_us=%d", rn, rt, sn, st }' /tmp/prof.txt)
	# Extra functions asked for with ibcm.prof= (make bench PROF=f1,f2): calls and time.
	extra=$(awk -v fns=" $PROF " '
		index(fns, " " $1 " ") { n[$1] += $2; t[$1] += $3 }
		END { for (f in n) printf " prof_%s=%d/%d", f, n[f], t[f] }' /tmp/prof.txt)
	echo "$work $prof$extra lost=$(cat $T/per_cpu/cpu*/stats 2>/dev/null | awk '/^overrun/ { o += $2 } END { print o + 0 }')" ;;
done) touch /tmp/pair-done; echo ok ;;
*) echo unknown ;;
esac
CMD
	chmod +x /tmp/cmd.sh
	# What trace-start hooks: each CM's MAD handlers and its receive work function.
	if [ "$CM" = c ]; then
		printf '%s\n' RECV_FN=cm_recv_handler SEND_FN=cm_send_handler "WORK_RE='^cm_work_handler\$'"
	else
		printf '%s\n' RECV_FN=ibcm_glue_recv_handler SEND_FN=ibcm_glue_send_handler "WORK_RE='^ibcm_glue_recv_work_fn\$'"
	fi >/tmp/bench.conf
	echo "PROF='$PROF'" >>/tmp/bench.conf
	n=0
	while [ ! -f /tmp/pair-done ] && [ $n -lt 200 ]; do
		nc -l -p 9000 -e /tmp/cmd.sh
		n=$((n + 1))
	done
	if [ "$MODE" = bench ]; then
		rmmod ib_cm
		return 0
	fi
	if [ "$MODE" = interop ]; then
		rmmod ib_cm && e2e "ok pair_unload_$CM" || e2e "not ok pair_unload_$CM # rmmod ib_cm failed"
		return 0
	fi
	dmesg | grep -E 'ULP-' >/tmp/ulp.log
	# The tool's REQ: every field as sent; rping's: rdma_cm's header carries A's address.
	check ulp_req_fields_$CM /tmp/ulp.log "sid=0000000001061c06 listen=1 state=3 pkey=ffff bth_pkey=ffff qpn=000123 psn=abcdef port=1 ctx_null=1 alt=0 sgid_attr=1" \
		"pd=000102030405060708090a0b0c0d0e0f"
	check ulp_rping_req_$CM /tmp/ulp.log "cma_src=10.1.0.1"
	check ulp_sidr_fields_$CM /tmp/ulp.log "ULP-SIDR sid=0000000001111c06 listen=1 state=15 pkey=ffff port=1 pd=000102030405060708090a0b0c0d0e0f"
	check ulp_replies_sent_$CM /tmp/ulp.log "ULP-REJ ret=0" "ULP-SIDR-REP ret=0"
	# Counters as they stood before the device was cycled (saved by link-cycle).
	klog "IBCM-SAY: counters $(tr '\n' ' ' </tmp/counters.log)"
	cnt() { sed -n "s|^$1=||p" /tmp/counters.log; }
	rx_req=$(cnt cm_rx_msgs/req) tx_rej=$(cnt cm_tx_msgs/rej)
	rx_sidr=$(cnt cm_rx_msgs/sidr_req) tx_sidr=$(cnt cm_tx_msgs/sidr_rep)
	if [ "$rx_req" -ge 4 ] && [ "$tx_rej" -ge 4 ] && [ "$rx_sidr" -ge 2 ] && [ "$tx_sidr" -ge 2 ]; then
		e2e "ok counters_$CM"
	else
		e2e "not ok counters_$CM # $(tr '\n' ' ' </tmp/counters.log)"
	fi
	# A's two LAPs and two APRs (one of each per wire phase) are counted on receipt and
	# answered by nothing (RoCE: cm.c drops both before any lookup).
	check lap_apr_counted_$CM /tmp/counters.log "^cm_rx_msgs/lap=2$" "^cm_rx_msgs/apr=2$" \
		"^cm_tx_msgs/lap=0$" "^cm_tx_msgs/apr=0$"
	check duplicates_counted_$CM /tmp/dups.log "dup_req=2 dup_sidr=2"
	if [ "$CM" = rs ]; then
		bad=$(cat /tmp/malformed.log 2>/dev/null || echo 0)
		if [ "$bad" -ge 4 ]; then e2e "ok malformed_counted_$CM"; else e2e "not ok malformed_counted_$CM # $bad"; fi
	fi
	rmmod ib_cm && e2e "ok pair_unload_$CM" || e2e "not ok pair_unload_$CM # rmmod ib_cm failed"
	return 0
fi

# --- role a ---
cmd() {
	n=0
	while [ $n -lt 300 ]; do
		r=$(echo "$1" | nc $PEER_IP 9000 2>/dev/null)
		[ "$r" = ok ] && return 0
		n=$((n + 1))
		sleep 0.2
	done
	return 1
}
ask() { # ask SECONDS COMMAND: B's answer, or why there is none, in bounded time
	a=$(echo "$2" | timeout "$1" nc -w 5 $PEER_IP 9000 2>/dev/null)
	echo "${a:-fail no answer from B within $1 s}"
}

# One case of the tool matrix: SERVER_GUEST serves TOOL and the other guest connects. The
# server's verdict is collected after its client has ended: 10 s more after a good client,
# 2 s after a failed one, then it is killed.
interop() { # interop TOOL a|b
	tool=$1 srv=$2
	if [ $srv = b ]; then
		scm=$PEER_CM ccm=c
		s=$(ask 15 "e2e-serve $tool")
		if [ "$s" = ok ]; then
			c=$(/tmp/e2e.sh connect $tool)
			case $c in ok*) g=10 ;; *) g=2 ;; esac
			s=$(ask $((g + 10)) "e2e-reap $tool $g")
		else
			c="not run"
		fi
	else
		scm=c ccm=$PEER_CM
		s=$(/tmp/e2e.sh serve $tool)
		if [ "$s" = ok ]; then
			c=$(ask 45 "e2e-connect $tool")
			case $c in ok*) g=10 ;; *) g=2 ;; esac
			s=$(/tmp/e2e.sh reap $tool $g)
		else
			c="not run"
		fi
	fi
	name=pair_${tool}_server_${scm}_client_${ccm}_srv_$srv
	klog "IBCM-SAY: $name: server($scm): $s; client($ccm): $c"
	case "$c|$s" in
	ok*"|"ok*) e2e "ok $name" ;;
	*) e2e "not ok $name # server($scm): $s; client($ccm): $c" ;;
	esac
}

matrix() { # the rdma-core tool matrix: the stock C stack here, B's CM with rdma_cm there
	PEER_CM=$(ask 10 cm)
	case $PEER_CM in rs | c) ;; *) e2e "not ok pair_interop_peer # $PEER_CM"; return ;; esac
	for m in ib_cm iw_cm rdma_cm rdma_ucm; do
		[ $m = ib_cm ] && p=/lib/modules/c/ib_cm.ko || p=/lib/modules/base/$m.ko
		ins $p || { e2e "not ok pair_interop_load_c_a # insmod $m"; return; }
	done
	r=$(ask 30 stack-load)
	if [ "$r" != ok ]; then
		e2e "not ok pair_interop_load_${PEER_CM}_b # $r"
	else
		for tool in rping ucmatose udaddy; do
			interop $tool b
			interop $tool a
		done
		# Nothing the tools did may keep a module reference, on either side.
		r=$(ask 30 stack-unload)
		if [ "$r" = ok ]; then e2e "ok pair_interop_unload_${PEER_CM}_b"; else e2e "not ok pair_interop_unload_${PEER_CM}_b # $r"; fi
	fi
	ok=1
	for m in rdma_ucm rdma_cm iw_cm ib_cm; do rmmod $m 2>/dev/null || ok=0; done
	if [ $ok = 1 ]; then
		e2e "ok pair_interop_unload_c_a"
	else
		e2e "not ok pair_interop_unload_c_a # rmmod failed: $(cut -d' ' -f1,3 /proc/modules | tr '\n' ' ')"
	fi
}

cmd ping || fatal pair_peer "peer not reachable"
ping -c 1 -W 2 $PEER_IP >/dev/null 2>&1
BCM=peer

if [ "$MODE" = interop ]; then
	matrix
	cmd done
	return 0
fi

field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" "$2" | head -1; }
# B's busy CPU time, in USER_HZ ticks (10 ms), over the command channel.
peer_busy() { echo stat | nc $PEER_IP 9000 2>/dev/null; }

wire() { # wire PHASE: raw MADs with no CM on this side
	phase=$1
	cm_umad rxe0 $PEER_IP req 0x0000000001061C06 >/tmp/req.out 2>&1
	tid=$(field tid_low /tmp/req.out) comm=$(field local_comm_id /tmp/req.out)
	if [ $phase = none ]; then
		check wire_rej_unknown_service /tmp/req.out "REJ tid_low=$tid" "remote_comm_id=$comm" \
			"msg_rejected=0 ari_length=0 reason=8"
	else
		check wire_rej_consumer /tmp/req.out "REJ tid_low=$tid local_comm_id=00000000 remote_comm_id=$comm" \
			"msg_rejected=0 ari_length=0 reason=28" "private_data16=554c502d52454a454354000000000000"
	fi
	cm_umad rxe0 $PEER_IP sidr 0x0000000001111C06 >/tmp/sidr.out 2>&1
	tid=$(field tid_low /tmp/sidr.out) rid=$(field request_id /tmp/sidr.out)
	if [ $phase = none ]; then
		check wire_sidr_unsupported /tmp/sidr.out "SIDR_REP tid_low=$tid request_id=$rid status=1 qpn=000000 service_id=0000000001111c06"
	else
		check wire_sidr_reject /tmp/sidr.out "SIDR_REP tid_low=$tid request_id=$rid status=2"
	fi
	cm_umad rxe0 $PEER_IP altpath >/tmp/altpath.out 2>&1
	check wire_lap_apr_dropped_$phase /tmp/altpath.out "NO_REPLY"
	cm_umad rxe0 $PEER_IP bad >/dev/null 2>&1
}

tools() { # tools PHASE: the stock C stack and unmodified rdma-core tools
	phase=$1
	for m in ib_cm iw_cm rdma_cm rdma_ucm; do
		[ $m = ib_cm ] && p=/lib/modules/c/ib_cm.ko || p=/lib/modules/base/$m.ko
		ins $p || { e2e "not ok tools_$phase # insmod $m"; return; }
	done
	s=$(date +%s)
	timeout 60 rping -c -a $PEER_IP -C 1 -v >/tmp/rping.out 2>&1
	rc=$? t=$(( $(date +%s) - s ))
	# A reject ends rping at once with a REJECTED event; a lost REQ would take ~74 s.
	if [ $rc -ne 0 ] && [ $t -lt 10 ] && grep -q REJECTED /tmp/rping.out; then
		e2e "ok rping_rejected_$phase"
	else
		e2e "not ok rping_rejected_$phase # rc=$rc ${t}s $(tr '\n' ' ' </tmp/rping.out | head -c 200)"
	fi
	s=$(date +%s)
	timeout 60 udaddy -s $PEER_IP -c 1 >/tmp/udaddy.out 2>&1
	rc=$? t=$(( $(date +%s) - s ))
	if [ $rc -ne 0 ] && [ $t -lt 10 ] && grep -qi unreachable /tmp/udaddy.out; then
		e2e "ok udaddy_refused_$phase"
	else
		e2e "not ok udaddy_refused_$phase # rc=$rc ${t}s $(tr '\n' ' ' </tmp/udaddy.out | head -c 200)"
	fi
	klog "IBCM-SAY: rping($phase): $(tr '\n' ' ' </tmp/rping.out | head -c 200)"
	klog "IBCM-SAY: udaddy($phase): $(tr '\n' ' ' </tmp/udaddy.out | head -c 200)"
	for m in rdma_ucm rdma_cm iw_cm ib_cm; do rmmod $m; done
}

if [ "$MODE" = bench ]; then
	# REQ flood: REJs/s for an unknown service, then dispatches/s to a listener (the test
	# ULP, which rejects each REQ it is handed). Fewer than 512 in flight (MAD queue size).
	# Also B's busy CPU time per flood (user+nice+system+irq+softirq from /proc/stat).
	flood() {
		# Once: `cmd` retries anything but "ok", and each try uses up one of the peer's
		# command connections.
		r=$(echo trace-start | nc $PEER_IP 9000 2>/dev/null)
		[ "$r" = ok ] || klog "IBCM-SAY: peer could not start tracing: $r"
		b0=$(peer_busy)
		cm_umad rxe0 $PEER_IP flood 0x0000000001061C06 ${BENCH_N:-2000} >/tmp/flood.out 2>&1
		b1=$(peer_busy)
		tr=$(echo trace-stop | nc $PEER_IP 9000 2>/dev/null)
		klog "IBCM-BENCH: $1 $(cat /tmp/flood.out) peer_busy_ms=$(( (b1 - b0) * 10 )) $tr"
	}
	for i in 1 2 3 4 5; do flood unknown_service; done
	cmd ulp-load || fatal pair_ulp "peer could not load the test ULP"
	for i in 1 2 3 4 5; do flood listening_service; done
	cmd ulp-unload
	cmd done
	return 0
fi

wire none
tools no_listener
cmd ulp-load || fatal pair_ulp "peer could not load the test ULP"
wire ulp
# A handler's non-zero return destroys the new id: -ENOMEM drops the REQ silently (the peer
# retries), any other error sends REJ CONSUMER_DEFINED / SIDR_REP REJECT.
cmd ulp-mode-enomem
cm_umad rxe0 $PEER_IP req 0x0000000001061C06 >/tmp/req3.out 2>&1
check handler_enomem_drops_req /tmp/req3.out "NO_REPLY"
cmd ulp-mode-error
cm_umad rxe0 $PEER_IP req 0x0000000001061C06 >/tmp/req4.out 2>&1
check handler_error_rejects_req /tmp/req4.out "reason=28" "private_data16=00000000000000000000000000000000"
cm_umad rxe0 $PEER_IP sidr 0x0000000001111C06 >/tmp/sidr4.out 2>&1
check handler_error_rejects_sidr /tmp/sidr4.out "status=2"
# Retransmissions of a request whose id is still unanswered are duplicates: one answer.
cmd ulp-mode-defer
cm_umad rxe0 $PEER_IP dup 0x0000000001061C06 >/tmp/dup.out 2>&1
check duplicate_req_answered_once /tmp/dup.out "DUP sent=3 answers=1"
cm_umad rxe0 $PEER_IP dupsidr 0x0000000001111C06 >/tmp/dups.out 2>&1
check duplicate_sidr_answered_once /tmp/dups.out "DUP sent=3 answers=1"
# A second REQ from the same QP while the first is unanswered: REJ STALE_CONN (10) for it,
# the first one still gets its (deferred) answer.
cm_umad rxe0 $PEER_IP stale 0x0000000001061C06 >/tmp/stale.out 2>&1
check stale_req_rejected /tmp/stale.out "STALE first_reason=28 second_reason=10"
# A REQ with an alternate path the responder cannot turn into an address (RoCE, no source GID
# attribute for it): REJ INVALID_ALT_GID, message REQ, with the primary path's source GID
# (the responder's, ::ffff:$PEER_IP) as ARI, and no listener sees it (cm_req_handler).
cm_umad rxe0 $PEER_IP reqalt 0x0000000001061C06 >/tmp/reqalt.out 2>&1
check req_alt_path_rejected /tmp/reqalt.out "msg_rejected=0 ari_length=16 reason=18" \
	"ari16=00000000000000000000ffff$(printf '%02x' $(echo $PEER_IP | tr . ' '))" "local_comm_id=00000000"
# A new REQ from the QP of an established connection: REJ STALE_CONN (10) for it, and a DREQ
# for the old connection (cm_match_req), which the tester answers with a DREP.
cmd ulp-mode-accept
cm_umad rxe0 $PEER_IP stalest 0x0000000001061C06 >/tmp/stalest.out 2>&1
check stale_req_on_established_rejected_and_old_dreqed /tmp/stalest.out "STALEEST rej_reason=10 dreq_for_old=1"
cmd ulp-mode-reject
tools ulp
# A REQ storm while the listener is destroyed, then the device removed and re-added: the
# responder must not crash, leak or splat, and must serve the next good REQ. The storm stops
# (and the responder's MAD queues drain) before the removal: a MAD arriving while ib_core
# closes the MAD port trips a race in ib_core itself, whichever CM is loaded (mad.c's
# ib_mad_recv_done() checks that the port is open, then reposts its receive buffer after
# ib_mad_port_close() may have destroyed the QP, and rxe_post_recv() warns; the stack holds
# no CM frame).
cm_umad rxe0 $PEER_IP flood 0x0000000001061C06 3000 >/tmp/storm.out 2>&1 &
storm=$!
sleep 1
cmd ulp-unload || e2e "not ok storm_ulp_unload # peer could not unload the ULP"
sleep 1
kill $storm 2>/dev/null
wait $storm
klog "IBCM-SAY: storm: $(cat /tmp/storm.out)"
sleep 1
cmd link-cycle || e2e "not ok storm_link_cycle # peer could not cycle its rxe device"
sleep 1
cm_umad rxe0 $PEER_IP req 0x0000000001061C06 >/tmp/req2.out 2>&1
check storm_then_serves_next_req /tmp/req2.out "reason=8"
matrix
cmd done
return 0
