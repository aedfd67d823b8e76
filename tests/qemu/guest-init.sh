#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# /init of the test guest. Kernel command line:
#   ibcm.cm=rs|c          which CM to load (ours or the in-tree C ib_cm)
#   ibcm.mode=check|demo  run the tests, or the demo of the main job
# Results go to the kernel log (/dev/kmsg) so they stay in order with KUnit's KTAP output:
#   IBCM-KTAP-BEGIN <name> ... IBCM-KTAP-END <name>   around each KUnit run
#   IBCM-E2E: ok|not ok|todo <name> [# reason]        end-to-end checks
#   IBCM-DONE                                         the guest reached the end
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/pts /run
echo /bin/true >/proc/sys/kernel/modprobe

CM=rs
MODE=check
ROLE=
PROF=
for arg in $(cat /proc/cmdline); do
	case $arg in
	ibcm.cm=*) CM=${arg#ibcm.cm=} ;;
	ibcm.mode=*) MODE=${arg#ibcm.mode=} ;;
	ibcm.role=*) ROLE=${arg#ibcm.role=} ;;
	ibcm.prof=*) PROF=$(echo "${arg#ibcm.prof=}" | tr , ' ') ;;
	ibcm.bench_n=*) BENCH_N=${arg#ibcm.bench_n=} ;;
	ibcm.bench_rounds=*) BENCH_ROUNDS=${arg#ibcm.bench_rounds=} ;;
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
	[ -w /sys/kernel/debug/kmemleak ] || return 0
	echo scan >/sys/kernel/debug/kmemleak
	sleep 1
	echo scan >/sys/kernel/debug/kmemleak
	leaks=$(grep -c "unreferenced object" /sys/kernel/debug/kmemleak)
	if [ "$leaks" = 0 ]; then
		e2e "ok kmemleak_clean_$1"
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
/usr/bin/ip link add veth0 type veth peer name veth1 || fatal setup_veth "cannot create veth"
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
# The benchmark measures the production build (no KUnit suites compiled in).
[ "$MODE" = connbench ] && [ "$CM" = rs ] && cmdir=rs-prod
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

# --- black-box conformance suite (the same module against either CM) ---
klog "IBCM-KTAP-BEGIN conformance-$CM"
ins /lib/modules/test/ib_cm_conformance.ko cm=$CM dev0=rxe0 dev1=rxe1 ||
	e2e "not ok conformance_load_$CM # insmod failed"
klog "IBCM-KTAP-END conformance-$CM"
rmmod ib_cm_conformance 2>/dev/null

# --- connection conformance: a whole connection through the exported API, both CMs ---
klog "IBCM-KTAP-BEGIN conn-conformance-$CM"
ins /lib/modules/test/ib_cm_conn_conformance.ko cm=$CM dev0=rxe0 dev1=rxe1 ||
	e2e "not ok conn_conformance_load_$CM # insmod failed"
klog "IBCM-KTAP-END conn-conformance-$CM"
rmmod ib_cm_conn_conformance 2>/dev/null

# --- end to end: unmodified rdma_cm on top of the CM, rdma-core tools over rxe ---
ok=1
for m in iw_cm rdma_cm rdma_ucm; do
	ins /lib/modules/base/$m.ko || ok=0
done
if [ $ok = 1 ]; then e2e "ok rdma_cm_loads_on_$CM"; else e2e "not ok rdma_cm_loads_on_$CM # insmod failed"; fi

# An rdma_cm listener goes through ib_cm_insert_listen() on every rxe device.
rping -s -a 10.0.0.1 -p 7174 -v >/tmp/rping-s.log 2>&1 &
srv=$!
sleep 1
[ "$MODE" = demo ] && say "rping -s started on 10.0.0.1:7174; its rdma_listen() goes through ib_cm_insert_listen(rxe0, cma_ib_req_handler, 0x0000000001061c06) of the loaded CM and fails if that fails"
if kill -0 $srv 2>/dev/null; then
	e2e "ok rping_server_listens_$CM"
else
	e2e "not ok rping_server_listens_$CM # rping -s exited: $(tail -1 /tmp/rping-s.log)"
fi
# A second server on the same port is refused by rdma_cm (the port is bound), not by ib_cm.
if rping -s -a 10.0.0.1 -p 7174 >/tmp/rping-s2.log 2>&1; then
	e2e "not ok rping_second_server_refused_$CM # second server did not fail"
else
	e2e "ok rping_second_server_refused_$CM"
fi

if timeout 60 rping -c -a 10.0.0.1 -I 10.0.0.2 -p 7174 -C 100 -v >/tmp/rping-c.log 2>&1 &&
	[ "$(grep -c 'ping data' /tmp/rping-c.log)" = 100 ]; then
	e2e "ok rping_connect_$CM"
else
	e2e "not ok rping_connect_$CM # $(tail -1 /tmp/rping-c.log)"
fi
kill $srv 2>/dev/null
wait $srv 2>/dev/null

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

# Everything unloads: no listener or id keeps a module reference.
ok=1
for m in rdma_ucm rdma_cm iw_cm ib_cm; do rmmod $m 2>/dev/null || ok=0; done
if [ $ok = 1 ]; then e2e "ok unload_$CM"; else e2e "not ok unload_$CM # rmmod failed: $(cat /proc/modules | cut -d' ' -f1,3 | tr '\n' ' ')"; fi

# --- leak check: kmemleak, if the kernel has it ---
kmemleak_check $CM
finish
