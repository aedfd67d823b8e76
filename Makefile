# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
#   make            build ib_cm.ko against KDIR (default: the cached test kernel, built if needed)
#   make check      host tests + QEMU tests (KUnit, conformance vs the C CM, end-to-end)
#   make run        the main job: build everything, boot QEMU, show ib_cm working on rxe
#   make host-test  only the host cargo tests      make qemu-test  only the QEMU layer
#   make clippy     module build with CLIPPY=1     make clean
#   make fuzz       long run of the wire-codec fuzz driver (IBCM_FUZZ_ITERS, default 20M)
#   make bench      REQ flood, connection (cmtime) and storm benchmarks, ours vs the in-tree C ib_cm
#   make bench-conn the connection benchmark only (release kernel); ICOUNT=1: low-noise
#                   mode (one CPU, QEMU -icount: every figure counts guest instructions);
#                   TBPROF=1: plus an instruction profile by function (QEMU plugin);
#                   LINES=1 with it: ours also by source line and inlined function
#   make bench-storm the connection storm benchmark only (release kernel); SHAPES=m1:PxC,mm:PxC
#                   (m1n:PxC, mmn:PxC: the same without QPs, up to 16k connections);
#                   VARIANT=latency: with the irqsoff tracer, histogram triggers (the CM's own
#                   interrupts-off stretches) and the soft-lockup detector
#   make install    (root) ib_cm.ko into /lib/modules/<release>/updates/ + depmod (INSTALL_MOD_PATH=)
#   make uninstall  removes it again (KDIR= or KERNELRELEASE= names the kernel)
#   make install-test  the INSTALL layer alone (preflight, install, DKMS, kernel-deb config)
#   make dkms-check    dkms add/build/install/remove against the cached test kernel, in a temp tree
#   make deb        the DKMS Debian package out/deb/ib-cm-rs-dkms_<version>_all.deb (scripts/deb.sh)
#   make deb-check  that package installed with dpkg into a throwaway root: dkms builds ours for the
#                   cached test kernel, QEMU boots it (modprobe rdma_cm, rping), purge restores C
#   make kernel-deb    Debian kernel packages (bindeb-pkg) from Debian's 6.12 config plus Rust
#   make kernel-deb-check  after make kernel-deb: ib_cm.ko built against its headers package,
#                   make install next to its image's modules, that kernel booted in QEMU,
#                   modprobe rdma_cm loads ours and rping connects (not part of make check)
#
# KDIR=/path/to/kernel/build builds against that kernel (no test kernel is built); it is checked
# first by scripts/check-kdir.sh (Rust, 6.12, no MODVERSIONS, the rdma ABI) and refused with one
# message if ib_cm-rs cannot be built for it.
#
# VARIANT=debug (default: lockdep, DEBUG_ATOMIC_SLEEP, KASAN, kmemleak) or VARIANT=release.

VARIANT ?= debug
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
# The compilers KDIR was built with (LLVM=1, or LLVM=-19 for make kernel-deb's kernel).
KTOOLS = $(shell $(TOP)/scripts/lib.sh ktools $(KDIR))
# A KDIR given by the user (command line or environment) is used as it is; only the default,
# the cached test kernel, is built on demand.
ifeq ($(filter command line environment,$(origin KDIR)),)
KDIR = $(shell $(TOP)/scripts/kernel.sh kdir $(VARIANT))
MODULES_PREREQ := kernel
endif

.PHONY: all modules deps kernel clippy clean check host-test qemu-test run bench bench-conn bench-storm fuzz \
	install uninstall install-test dkms-check kernel-deb kernel-deb-check deb deb-check

all: modules

deps:
	@$(TOP)/scripts/deps.sh

kernel: deps
	@$(TOP)/scripts/kernel.sh kdir $(VARIANT) >/dev/null

modules: $(MODULES_PREREQ)
	@test -n "$(KDIR)" || { echo "error: no kernel build directory (KDIR)" >&2; exit 1; }
	@RUSTC=/usr/bin/rustc $(TOP)/scripts/check-kdir.sh --quiet $(KDIR)
	$(MAKE) -C $(KDIR) M=$(TOP) $(KTOOLS) $(if $(IBCM_KUNIT),IBCM_KUNIT=$(IBCM_KUNIT)) modules

# Both builds (with and without the KUnit suites) must be clippy-clean.
clippy: kernel
	@mkdir -p $(TOP)/out
	$(MAKE) -C $(KDIR) M=$(TOP) $(KTOOLS) CLIPPY=1 modules 2>&1 | tee $(TOP)/out/clippy.log
	$(MAKE) -C $(KDIR) M=$(TOP) $(KTOOLS) CLIPPY=1 IBCM_KUNIT=1 modules 2>&1 | tee -a $(TOP)/out/clippy.log
	@! grep -E '^(warning|error)' $(TOP)/out/clippy.log || { echo "error: clippy reported warnings" >&2; exit 1; }

host-test: deps
	@$(TOP)/tests/run-host.sh

qemu-test: deps
	@$(TOP)/tests/run-qemu.sh $(VARIANT)

check: deps
	@$(TOP)/tests/check.sh $(VARIANT)

run: deps
	@$(TOP)/tests/run-demo.sh $(VARIANT)

fuzz: deps
	cd $(TOP)/tests/host && IBCM_FUZZ_ITERS=$${IBCM_FUZZ_ITERS:-20000000} \
		IBCM_FUZZ_SEED=$${IBCM_FUZZ_SEED:-$$(date +%s)} cargo test --release fuzz_smoke -- --nocapture

bench: deps
	@IBCM_PROF=$(PROF) $(TOP)/tests/bench/req_flood.sh $${ROUNDS:-2} $${N:-2000}
	@IBCM_PROF=$(PROF) IBCM_PERF=$(PERF) IBCM_ICOUNT=$(ICOUNT) IBCM_TBPROF=$(TBPROF) IBCM_TBLINES=$(LINES) $(TOP)/tests/bench/conn_bench.sh $${BOOTS:-2} $${CONNS:-100} $${CONN_ROUNDS:-4}
	@$(TOP)/tests/bench/storm.sh $${STORM_BOOTS:-1} $${SHAPES:-m1:16x100,mm:16x100,m1:32x100,mm:32x100,m1n:32x512,mmn:32x512,m1n:512x32}

# Only the connection storm benchmark (many clients at once, ours vs C; up to 16k connections).
bench-storm: deps
	@$(TOP)/tests/bench/storm.sh $${BOOTS:-1} $${SHAPES:-m1:16x100,mm:16x100,m1:32x100,mm:32x100,m1n:32x512,mmn:32x512,m1n:512x32}

# Only the connection benchmark (cmtime through rdma_cm, ours vs C).
bench-conn: deps
	@IBCM_PROF=$(PROF) IBCM_PERF=$(PERF) IBCM_ICOUNT=$(ICOUNT) IBCM_TBPROF=$(TBPROF) IBCM_TBLINES=$(LINES) $(TOP)/tests/bench/conn_bench.sh $${BOOTS:-2} $${CONNS:-100} $${CONN_ROUNDS:-4}

# Installing needs the kernel named: the default KDIR is the project's test kernel.
ifeq ($(MODULES_PREREQ),kernel)
install:
	@echo "error: make install needs the kernel to install for, e.g. sudo make install KDIR=/lib/modules/\$$(uname -r)/build" >&2; exit 1
else
install: modules
	@$(TOP)/scripts/install.sh install $(KDIR)
endif

uninstall:
	@$(TOP)/scripts/install.sh uninstall $(if $(KERNELRELEASE),,$(if $(MODULES_PREREQ),,$(KDIR)))

install-test: deps
	@$(TOP)/tests/run-install.sh $(VARIANT)

dkms-check: deps
	@$(TOP)/tests/install/dkms-check.sh $(VARIANT)

deb:
	@$(TOP)/scripts/deb.sh $(TOP)/out/deb

deb-check: deps
	@r=$$($(TOP)/tests/install/deb-test.sh $(VARIANT) | tail -1); set -- $$r; \
		echo "$$2 passed, $$3 failed"; [ "$$3" = 0 ] && [ "$$2" -gt 0 ]

kernel-deb:
	@$(TOP)/scripts/deps.sh kernel-deb
	@$(TOP)/scripts/kernel-deb.sh build

kernel-deb-check: deps
	@r=$$($(TOP)/tests/install/kernel-deb-boot.sh $(VARIANT) | tail -1); set -- $$r; \
		echo "$$2 passed, $$3 failed"; [ "$$3" = 0 ] && [ "$$2" -gt 0 ]

clean:
	@if [ -n "$$(ls $(TOP)/scripts 2>/dev/null)" ] && KD=$$($(TOP)/scripts/kernel.sh kdir $(VARIANT) 2>/dev/null); then \
		$(MAKE) -C $$KD M=$(TOP) $$($(TOP)/scripts/lib.sh ktools $$KD) clean; fi
	rm -rf $(TOP)/out $(TOP)/tests/host/target
