#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Init of the install check guest (booted with rdinit=/install-init.sh, so the test guest's own
# /init does not run): the image carries a real module tree, /lib/modules/$(uname -r), with the
# in-tree C ib_cm under kernel/ and ib_cm-rs under updates/ (from `make install` or from dkms),
# and kmod's modprobe. Checks that an unmodified `modprobe rdma_cm` loads ib_cm-rs, that
# rping listens through it, and that an rping client connects to it (10 pings). Kernel command
# line: ibcm.install=<name> names the run, ibcm.taint=<flags> is the taint expected of ib_cm.
# Results in the test guest's format (IBCM-E2E lines, IBCM-DONE), for tests/qemu/parse.py.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
# The harness (tests/qemu/run.sh) retries a boot whose log lacks this line: its init never ran.
echo "IBCM-INIT" >/dev/kmsg
mkdir -p /dev/pts /run
# The kernel's own module requests (a crypto algorithm, a netdev type) go to kmod's modprobe
# and the image's module tree, as on a real machine.
echo /usr/sbin/modprobe >/proc/sys/kernel/modprobe

NAME=install
TAINT=O
EXPECT=ours
WANT_VERSION=
for arg in $(cat /proc/cmdline); do
	case $arg in
	ibcm.install=*) NAME=${arg#ibcm.install=} ;;
	ibcm.taint=*) TAINT=${arg#ibcm.taint=} ;;
	ibcm.expect=*) EXPECT=${arg#ibcm.expect=} ;;
	ibcm.version=*) WANT_VERSION=${arg#ibcm.version=} ;;
	esac
done
klog() { echo "$*" >/dev/kmsg; }
e2e() { klog "IBCM-E2E: $*"; }
finish() {
	klog "IBCM-DONE"
	sync
	reboot -f
}
# busybox runs its own modprobe/modinfo applets before PATH: name kmod's explicitly.
MODPROBE=/usr/sbin/modprobe
MODINFO=/usr/sbin/modinfo
rel=$(uname -r)
ours="The ib_cm-rs developers"
CM=ib_cm_rs
[ "$EXPECT" != intree ] || CM=in_tree_ib_cm

path=$($MODINFO -n ib_cm 2>&1)
if [ "$EXPECT" = intree ]; then
	# ibcm.expect=intree: ib_cm-rs has been removed (make uninstall, package purge); the
	# in-tree C ib_cm must be the one modprobe finds, loads and rping goes through.
	case $path in
	/lib/modules/$rel/kernel/*) e2e "ok ${NAME}_guest_modinfo_resolves_in_tree" ;;
	*) e2e "not ok ${NAME}_guest_modinfo_resolves_in_tree # modinfo -n ib_cm: $path" ;;
	esac
else
	case $path in
	/lib/modules/$rel/updates/*) e2e "ok ${NAME}_guest_modinfo_resolves_updates" ;;
	*) e2e "not ok ${NAME}_guest_modinfo_resolves_updates # modinfo -n ib_cm: $path" ;;
	esac
fi

# rxe's dependencies (ib_core, the UDP tunnels) come from the module tree too.
$MODPROBE rdma_rxe 2>/tmp/mp.err || { cat /tmp/mp.err >/dev/kmsg; e2e "not ok ${NAME}_guest_modprobe_rdma_rxe # $(cat /tmp/mp.err)"; finish; }
e2e "ok ${NAME}_guest_modprobe_rdma_rxe"
# veth is built in on the test kernel and a module on Debian's configuration (make kernel-deb).
grep -qw veth "/lib/modules/$rel/modules.builtin" 2>/dev/null || [ -d /sys/module/veth ] ||
	$MODPROBE veth 2>/dev/null
/usr/bin/ip link set lo up
/usr/bin/ip link add veth0 type veth peer name veth1 || { e2e "not ok ${NAME}_guest_setup # veth"; finish; }
/usr/bin/ip addr add 10.0.0.1/24 dev veth0
/usr/bin/ip addr add 10.0.0.2/24 dev veth1
/usr/bin/ip link set veth0 up
/usr/bin/ip link set veth1 up
# Both ends are local addresses of this one guest: accept them on the veth (as the test guest).
echo 1 >/proc/sys/net/ipv4/conf/all/accept_local
echo 0 >/proc/sys/net/ipv4/conf/all/rp_filter
rdma link add rxe0 type rxe netdev veth0 || { e2e "not ok ${NAME}_guest_setup # rdma link add rxe0"; finish; }
rdma link add rxe1 type rxe netdev veth1 || { e2e "not ok ${NAME}_guest_setup # rdma link add rxe1"; finish; }
ping -c 1 -W 2 -I veth1 10.0.0.1 >/dev/null 2>&1

# The point: nothing names our module, modprobe picks it from updates/ as rdma_cm's dependency.
if $MODPROBE rdma_ucm 2>/tmp/mp.err; then
	e2e "ok ${NAME}_guest_modprobe_rdma_cm"
else
	cat /tmp/mp.err >/dev/kmsg
	e2e "not ok ${NAME}_guest_modprobe_rdma_cm # $(cat /tmp/mp.err)"
	finish
fi
# The loaded ib_cm is ours: out-of-tree taint (O), our version file, and modinfo's author.
taint=$(cat /sys/module/ib_cm/taint 2>/dev/null)
version=$(cat /sys/module/ib_cm/version 2>/dev/null)
author=$($MODINFO -F author ib_cm 2>/dev/null)
klog "IBCM-SAY: ib_cm loaded: taint '$taint', version '$version', author '$author', $(grep '^ib_cm ' /proc/modules)"
# O: out of tree; a kernel that signs its modules (Debian's configuration) adds E, since ours
# is unsigned there (ibcm.taint= says which to expect).
if [ "$EXPECT" = intree ]; then
	# The in-tree module: no taint, no version file, cm.c's author.
	if [ -z "$taint" ] && [ -z "$version" ] && [ "$author" != "$ours" ] && [ -n "$author" ]; then
		e2e "ok ${NAME}_guest_loaded_ib_cm_is_in_tree"
	else
		e2e "not ok ${NAME}_guest_loaded_ib_cm_is_in_tree # taint '$taint', version '$version', author '$author'"
	fi
elif [ "$taint" = "$TAINT" ] && [ -n "$version" ] && [ "$author" = "$ours" ] &&
	{ [ -z "$WANT_VERSION" ] || [ "$version" = "$WANT_VERSION" ]; }; then
	e2e "ok ${NAME}_guest_loaded_ib_cm_is_ib_cm_rs${WANT_VERSION:+ (version $version)}"
else
	e2e "not ok ${NAME}_guest_loaded_ib_cm_is_ib_cm_rs # taint '$taint', version '$version' (want '${WANT_VERSION:-any}'), author '$author'"
fi

rping -s -a 10.0.0.1 -p 7174 >/tmp/rping-s.log 2>&1 &
srv=$!
sleep 1
if kill -0 $srv 2>/dev/null; then
	e2e "ok ${NAME}_guest_rping_listens_through_$CM"
else
	e2e "not ok ${NAME}_guest_rping_listens_through_$CM # rping -s exited: $(tail -1 /tmp/rping-s.log)"
fi
# And a whole connection through it: REQ, REP, RTU, 10 pings, DREQ, DREP (rxe1 to rxe0).
if timeout 60 rping -c -a 10.0.0.1 -I 10.0.0.2 -p 7174 -C 10 -v >/tmp/rping-c.log 2>&1; then
	pings=$(grep -c '^ping data: ' /tmp/rping-c.log)
	if [ "$pings" = 10 ]; then
		e2e "ok ${NAME}_guest_rping_connects_through_$CM"
	else
		e2e "not ok ${NAME}_guest_rping_connects_through_$CM # $pings of 10 pings printed"
	fi
else
	e2e "not ok ${NAME}_guest_rping_connects_through_$CM # rping -c failed: $(tail -1 /tmp/rping-c.log)"
fi
kill $srv 2>/dev/null
wait $srv 2>/dev/null

if $MODPROBE -r rdma_ucm rdma_cm iw_cm ib_cm 2>/tmp/mp.err && [ ! -d /sys/module/ib_cm ]; then
	e2e "ok ${NAME}_guest_modprobe_r_unloads"
else
	e2e "not ok ${NAME}_guest_modprobe_r_unloads # $(cat /tmp/mp.err) $(cut -d' ' -f1,3 /proc/modules | tr '\n' ' ')"
fi
finish
