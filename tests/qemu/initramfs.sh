#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Builds the test initramfs: busybox-static, the kernel's rdma modules (the in-tree C ib_cm
# under /lib/modules/c, ours under /lib/modules/rs), the conformance suite, rdma-core tools
# with their shared libraries and the rxe provider, perftest, python3 with pyverbs and
# rdma-core's RDMA CM tests, the NVMe-over-RDMA modules (null_blk, nvme-core, nvme-fabrics,
# nvme-rdma, nvmet, nvmet-rdma), and the guest scripts.
#
#   initramfs.sh KDIR OUT.cpio.gz RS_KO TEST_MODULE_DIR TOOLS_DIR RS_PROD_KO [SOFTIB_KO]
# TOOLS_DIR holds tests/tools' cm_umad and cm_storm, installed in /usr/bin.
# RS_KO is the test build (white-box KUnit compiled in) used by the tests; RS_PROD_KO the
# production build, used by the benchmark (/lib/modules/rs-prod); SOFTIB_KO the soft IB HCA
# (tests/softib), installed as /lib/modules/test/softib.ko.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kdir=$1 out=$2 rs_ko=$3 test_dir=$4 tools=$5 prod_ko=$6 softib_ko=${7:-}

die() { echo "initramfs: error: $*" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,etc,proc,sys,dev,tmp,run,root}
mkdir -p "$root"/lib/modules/{base,c,rs,rs-prod,test} "$root/etc/libibverbs.d"

[[ -x /bin/busybox ]] || die "busybox-static missing (/bin/busybox)"
cp /bin/busybox "$root/bin/busybox"
for a in $(/bin/busybox --list); do
	[[ -e $root/bin/$a ]] || ln -s busybox "$root/bin/$a"
done

mod() { [[ -f $kdir/$1 ]] || die "module $1 not built in $kdir"; cp "$kdir/$1" "$root/lib/modules/$2/"; }
for m in net/ipv4/udp_tunnel.ko net/ipv6/ip6_udp_tunnel.ko drivers/infiniband/core/ib_core.ko \
	 drivers/infiniband/core/ib_uverbs.ko drivers/infiniband/core/ib_umad.ko \
	 drivers/infiniband/sw/rxe/rdma_rxe.ko drivers/infiniband/core/iw_cm.ko \
	 drivers/infiniband/core/rdma_cm.ko drivers/infiniband/core/rdma_ucm.ko \
	 drivers/block/null_blk/null_blk.ko drivers/nvme/host/nvme-core.ko \
	 drivers/nvme/host/nvme-fabrics.ko drivers/nvme/host/nvme-rdma.ko \
	 drivers/nvme/target/nvmet.ko drivers/nvme/target/nvmet-rdma.ko; do
	mod "$m" base
done
mod drivers/infiniband/core/ib_cm.ko c
[[ -f $rs_ko ]] || die "our module $rs_ko not built"
cp "$rs_ko" "$root/lib/modules/rs/ib_cm.ko"
[[ -f $prod_ko ]] || die "production module $prod_ko not built"
cp "$prod_ko" "$root/lib/modules/rs-prod/ib_cm.ko"
for t in ib_cm_conformance ib_cm_conn_conformance ib_cm_test_ulp; do
	[[ -f $test_dir/$t.ko ]] || die "test module $t.ko not built in $test_dir"
	cp "$test_dir/$t.ko" "$root/lib/modules/test/"
done

if [[ -n $softib_ko ]]; then
	[[ -f $softib_ko ]] || die "soft IB HCA $softib_ko not built"
	cp "$softib_ko" "$root/lib/modules/test/softib.ko"
fi

# Userspace: real binaries (busybox's own `ip` cannot create veth) and their libraries.
bins=(/usr/bin/rping /usr/bin/ucmatose /usr/bin/udaddy /usr/bin/rdma_server /usr/bin/rdma_client
      /usr/bin/cmtime /usr/bin/ib_send_bw /usr/bin/ibv_devices /usr/bin/rdma /usr/sbin/ip
      "$tools/cm_umad" "$tools/cm_storm")
# `make bench-conn PERF=1`: perf (package linux-perf) for a sampled profile of the guest.
if [[ -n ${IBCM_PERF:-} ]]; then
	[[ -x /usr/bin/perf ]] || die "PERF=1: /usr/bin/perf missing (apt-get install linux-perf)"
	bins+=(/usr/bin/perf)
fi
libs=()
for b in "${bins[@]}"; do
	[[ -x $b ]] || die "$b missing (rdmacm-utils, ibverbs-utils, perftest, iproute2)"
	cp "$b" "$root/usr/bin/"
	while read -r lib; do libs+=("$lib"); done < <(ldd "$b" | grep -oE '/[^ ]+\.so[^ ]*')
done
prov=/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
[[ -f $prov ]] || die "rxe provider $prov missing (ibverbs-providers)"
while read -r lib; do libs+=("$lib"); done < <(ldd "$prov" | grep -oE '/[^ ]+\.so[^ ]*')

# Python 3 (Debian's, the one pyverbs is built for), its standard library without the parts
# nothing here imports, pyverbs, and rdma-core's test package (python3-pyverbs ships it under
# /usr/share/doc with some files gzipped) with only test_rdmacm.py of its test files: the
# package's __init__ imports every test_*.py it finds.
py=/usr/bin/python3.11 pylib=/usr/lib/python3.11 pyverbs=/usr/lib/python3/dist-packages/pyverbs
rtests=/usr/share/doc/rdma-core/tests
[[ -x $py && -d $pylib ]] || die "$py missing (python3)"
[[ -d $pyverbs && -f $rtests/test_rdmacm.py ]] || die "pyverbs or its tests missing (python3-pyverbs)"
cp "$py" "$root/usr/bin/python3"
mkdir -p "$root$pylib" "$root$(dirname "$pyverbs")"
pyskip=(test idlelib tkinter turtledemo ensurepip lib2to3 pydoc_data 'config-*' distutils venv
	email http xml xmlrpc asyncio sqlite3 curses dbm html wsgiref site-packages dist-packages
	'lib-dynload/_test*' 'lib-dynload/xx*' 'lib-dynload/_ssl*' 'lib-dynload/_hashlib*'
	'lib-dynload/_sqlite3*' 'lib-dynload/_dbm*' 'lib-dynload/_gdbm*' 'lib-dynload/_curses*'
	'lib-dynload/readline*' 'lib-dynload/nis*' 'lib-dynload/_crypt*' 'lib-dynload/_tkinter*')
tar -C "$pylib" -cf - --dereference "${pyskip[@]/#/--exclude=./}" . | tar -C "$root$pylib" -xf -
cp -r "$pyverbs" "$root$(dirname "$pyverbs")/"
for so in "$root$pylib"/lib-dynload/*.so $(find "$pyverbs" -name '*.so'); do
	while read -r lib; do libs+=("$lib"); done < <(ldd "$so" | grep -oE '/[^ ]+\.so[^ ]*')
done
tdir=$root/usr/share/rdma-core-tests/tests
mkdir -p "$tdir"
for f in "$rtests"/*; do
	n=${f##*/}
	case $n in test_*) [[ $n == test_rdmacm.py ]] || continue ;; esac
	case $n in
	*.py.gz) gzip -dc "$f" >"$tdir/${n%.gz}" ;;
	*.py) cp "$f" "$tdir/" ;;
	esac
done
cp "$here/pyverbs-rdmacm.py" "$root/usr/bin/pyverbs-rdmacm"
chmod +x "$root/usr/bin/pyverbs-rdmacm"
# Compiled once here, so the guest does not compile the suite under TCG in every run.
"$py" -m compileall -q "$root/usr/share/rdma-core-tests" >/dev/null || die "cannot compile rdma-core's tests"

gcc_s=$(ls /lib/x86_64-linux-gnu/libgcc_s.so.1 2>/dev/null || true)
[[ -n $gcc_s ]] && libs+=("$gcc_s")
for lib in $(printf '%s\n' "${libs[@]}" | sort -u); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
mkdir -p "$root$(dirname "$prov")"
cp -L "$prov" "$root$prov"
cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
# /lib and /lib64 are the same directory on Debian; ld.so must be found under both names.
[[ -e $root/lib64/ld-linux-x86-64.so.2 ]] || cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"

cp "$here/guest-init.sh" "$root/init"
cp "$here/guest-pair.sh" "$root/pair.sh"
cp "$here/guest-connbench.sh" "$root/connbench.sh"
cp "$here/guest-storm.sh" "$root/storm.sh"
chmod +x "$root/init"
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"

mkdir -p "$(dirname "$out")"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
