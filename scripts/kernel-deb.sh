#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Debian kernel packages that ib_cm-rs can be built for and loaded into: Debian's own 6.12
# amd64 configuration plus Rust (scripts/kernel-deb.config), built from linux-source-6.12
# by the kernel's bindeb-pkg with clang/lld/llvm 19 (LLVM=-19, libclang 19 for bindgen),
# rustc-web and bindgen: clang 19 keeps every CPU mitigation and hardening option Debian's
# gcc build has, which the default clang 14 cannot (return thunks, SRSO, SLS, ITS, ...).
# IBCM_KDEB_LLVM=N configures with clang-N instead (e.g. 14, to see what the check refuses).
#
#   scripts/kernel-deb.sh config [DIR]   configure only, into DIR (default: the build directory
#                                        of `build`, reused once configured), and verify it
#   scripts/kernel-deb.sh verify DEBIAN_CONFIG NEW_CONFIG
#                                        the check alone: Rust on, MODVERSIONS off, every RDMA/HCA
#                                        option and every security option (CPU mitigations,
#                                        hardening, LSMs) of Debian's config unchanged
#   scripts/kernel-deb.sh dir            print that build directory
#   scripts/kernel-deb.sh prepare        config + modules_prepare (rust/ included) in a directory
#                                        of its own: enough to build ib_cm.ko against Debian's
#                                        configuration (a minute or two, not hours); prints it
#   scripts/kernel-deb.sh build          config + bindeb-pkg; packages in $IBCM_CACHE/kernel-deb/
#   scripts/kernel-deb.sh add-rust-headers HEADERS_DEB KBUILD_DIR
#                                        add rust/ (metadata, macros, bindgen parameters) to a
#                                        linux-headers .deb, which 6.12 does not ship
#
# IBCM_DEB_COMPRESS (default xz) is the repacked headers package's compression.
# The build takes hours on a small machine (Debian's config builds thousands of modules with
# debug info); `make check` runs `config` and `prepare` only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

frag=$here/kernel-deb.config
debcfg_xz=/usr/src/linux-config-6.12/config.amd64_none_amd64.xz

# The RDMA/HCA options: every symbol declared under drivers/infiniband/, every *INFINIBAND*,
# *RDMA*, *IPOIB* symbol elsewhere (NVMe-oF, RDS, 9p, SMB Direct, ...) and the Ethernet/HCA
# core drivers the RDMA drivers sit on.
rdma_symbols() { # SRCTREE DEBIAN_CONFIG
	{
		find "$1/drivers/infiniband" -name 'Kconfig*' -exec sed -n 's/^[[:space:]]*\(menu\)\?config \([A-Z0-9_]*\).*/CONFIG_\2/p' {} +
		grep -oE '^(# )?CONFIG_[A-Z0-9_]*(INFINIBAND|RDMA|IPOIB)[A-Z0-9_]*' "$2" | sed 's/^# //'
		grep -oE '^(# )?CONFIG_(MLX4|MLX5)_[A-Z0-9_]*|^(# )?CONFIG_(MLXFW|ICE|I40E|IDPF|BNXT|QED|QEDE|MICROSOFT_MANA|CHELSIO_T4|BE2NET|ENIC|HNS3)\b' "$2" | sed 's/^# //'
	} | sort -u
}

# The security options: every CPU mitigation (the CPU_MITIGATIONS menu of arch/x86/Kconfig:
# MITIGATION_*, CALL_PADDING/CALL_THUNKS, return thunks, SRSO, SLS, ITS, ...), every option
# declared under security/ (LSMs, hardening: stack init, FORTIFY_SOURCE, usercopy, ...), and
# the hardening options declared elsewhere. Compiler capability symbols (CC_HAS_*, *_HAS_*)
# are not options and are left out: only what Debian's config turns on is compared.
security_symbols() { # SRCTREE DEBIAN_CONFIG
	{
		sed -n '/^menuconfig CPU_MITIGATIONS/,/^endif/s/^[[:space:]]*\(menu\)\?config \([A-Z0-9_]*\).*/CONFIG_\2/p' "$1/arch/x86/Kconfig"
		grep -oE '^(# )?CONFIG_(MITIGATION_[A-Z0-9_]+|CPU_MITIGATIONS|CALL_PADDING|CALL_THUNKS|CALL_DEPTH_TRACKING|RETHUNK|RETPOLINE|SLS|CPU_SRSO|CPU_UNRET_ENTRY|CPU_IBPB_ENTRY|CPU_IBRS_ENTRY)\b' "$2" | sed 's/^# //'
		find "$1/security" -name 'Kconfig*' -exec sed -n 's/^[[:space:]]*\(menu\)\?config \([A-Z0-9_]*\).*/CONFIG_\2/p' {} +
		printf 'CONFIG_%s\n' STACKPROTECTOR STACKPROTECTOR_STRONG RANDOMIZE_BASE RANDOMIZE_MEMORY \
			RANDOMIZE_KSTACK_OFFSET RANDOMIZE_KSTACK_OFFSET_DEFAULT STRICT_KERNEL_RWX STRICT_MODULE_RWX \
			VMAP_STACK X86_KERNEL_IBT X86_USER_SHADOW_STACK X86_UMIP X86_SMAP X86_INTEL_TSX_MODE_OFF \
			LEGACY_VSYSCALL_NONE SLAB_FREELIST_HARDENED SLAB_FREELIST_RANDOM SHUFFLE_PAGE_ALLOCATOR \
			RANDOM_KMALLOC_CACHES LIST_HARDENED BUG_ON_DATA_CORRUPTION SCHED_STACK_END_CHECK \
			SECCOMP SECCOMP_FILTER MODULE_SIG STACKLEAK_METRICS KFENCE INIT_ON_FREE_DEFAULT_ON \
			PAGE_TABLE_CHECK PAGE_TABLE_CHECK_ENFORCED DEBUG_WX HARDENED_USERCOPY UBSAN_BOUNDS CFI_CLANG \
			IOMMU_DEFAULT_DMA_STRICT IOMMU_DEFAULT_DMA_LAZY INTEL_IOMMU_DEFAULT_ON PROC_MEM_NO_FORCE \
			SECURITY_DMESG_RESTRICT STATIC_USERMODEHELPER STRICT_DEVMEM IO_STRICT_DEVMEM SLAB_BUCKETS \
			KEXEC_SIG KEXEC_BZIMAGE_VERIFY_SIG BPF_UNPRIV_DEFAULT_OFF DEBUG_LIST PAGE_POISONING \
			SECONDARY_TRUSTED_KEYRING MODULE_SIG_SHA256
	} | grep -vE '^CONFIG_([A-Z0-9_]*_)?(CC|HAVE|ARCH|AS|LD|RUSTC|TOOLCHAIN)_[A-Z0-9_]*$|_HAS_' | sort -u
}

# What may differ between Debian's config and this one: the toolchain's own symbols (compiler,
# assembler, linker, rustc, pahole, bindgen versions and capabilities), Rust, what the build
# itself sets (MODVERSIONS off, LOCALVERSION, BUILD_SALT, bindeb-pkg's signing key and trusted
# keys, MODULE_SIG_ALL), and what LLVM decides: the x32 syscall ABI (llvm-objcopy cannot make
# x32 objects; Debian builds it but disables it by default, X86_X32_DISABLED), the %gs named
# address space (USE_X86_SEG_SUPPORT) and how mcount call sites are found (FTRACE_MCOUNT_USE_*).
# "n" and not present count as the same.
expected_diff='^CONFIG_(([A-Z0-9_]*_)?(CC|AS|LD|GCC|CLANG|LLD|RUSTC|PAHOLE|BINDGEN)_[A-Z0-9_]+|HAVE_[A-Z0-9_]+|HAS_[A-Z0-9_]+|[A-Z0-9_]+_HAS_[A-Z0-9_]+|RUST|RUST_[A-Z0-9_]+|MODVERSIONS|ASM_MODVERSIONS|LOCALVERSION|BUILD_SALT|MODULE_SIG_ALL|MODULE_SIG_KEY|SYSTEM_TRUSTED_KEYS|X86_X32_ABI|X86_X32_DISABLED|USE_X86_SEG_SUPPORT|FTRACE_MCOUNT_USE_CC|FTRACE_MCOUNT_USE_OBJTOOL)$'

# "SYMBOL<TAB>VALUE" for every symbol of a config, "n" for "is not set"; sorted.
cfg_values() { sed -nE 's/^(CONFIG_[A-Za-z0-9_]+)=(.*)$/\1\t\2/p; s/^# (CONFIG_[A-Za-z0-9_]+) is not set$/\1\tn/p' "$1" | LC_ALL=C sort; }

# Every symbol whose value differs and is not an expected difference: "SYMBOL DEBIAN THIS".
unexpected_diffs() { # DEBIAN_CONFIG NEW_CONFIG
	LC_ALL=C join -t $'\t' -a1 -a2 -e n -o 0,1.2,2.2 <(cfg_values "$1") <(cfg_values "$2") |
		awk -F '\t' -v re="$expected_diff" '$2 != $3 && $1 !~ re' | tr '\t' ' '
}

# "y", "m", a value, or "unset".
value() { # CONFIG SYMBOL
	local v
	v=$(grep -m1 -E "^$2=" "$1" | cut -d= -f2-) || true
	echo "${v:-unset}"
}

verify() { # DEBIAN_CONFIG NEW_CONFIG [SRCTREE]
	local deb=$1 new=$2 srct=${3:-} bad=0 n=0 kept=0 s a b line
	[[ -n $srct ]] || srct=$IBCM_CACHE/src/linux-$(kernel_pkg_version)
	[[ $(value "$new" CONFIG_RUST) == y ]] || { echo "kernel-deb: CONFIG_RUST is not y after olddefconfig" >&2; bad=1; }
	[[ $(value "$new" CONFIG_MODVERSIONS) == unset ]] || { echo "kernel-deb: CONFIG_MODVERSIONS is still set" >&2; bad=1; }
	[[ $(value "$new" CONFIG_CC_IS_CLANG) == y ]] || { echo "kernel-deb: not configured for clang (LLVM=1)" >&2; bad=1; }
	while IFS= read -r line; do
		if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
			grep -qxF "$line" "$new" || { echo "kernel-deb: fragment line '$line' did not survive (have: $(value "$new" "${BASH_REMATCH[1]}"))" >&2; bad=1; }
		fi
	done <"$frag"
	# Debian's BTF (bpftrace, systemd's BPF programs) stays: Rust allows it with pahole >= 1.24.
	if [[ $(value "$deb" CONFIG_DEBUG_INFO_BTF) == y && $(value "$new" CONFIG_DEBUG_INFO_BTF) != y ]]; then
		echo "kernel-deb: Debian's CONFIG_DEBUG_INFO_BTF=y was dropped (pahole >= 1.24 missing? package dwarves)" >&2
		bad=1
	fi
	while IFS= read -r s; do
		n=$((n + 1))
		a=$(value "$deb" "$s")
		b=$(value "$new" "$s")
		if [[ $a != "$b" ]]; then
			echo "kernel-deb: $s: Debian has $a, this config has $b" >&2
			bad=1
		elif [[ $a == y || $a == m ]]; then
			kept=$((kept + 1))
		fi
	done < <(rdma_symbols "$srct" "$deb")
	# The drivers named in the issue: each a module, as Debian ships it.
	for s in CONFIG_INFINIBAND CONFIG_MLX4_INFINIBAND CONFIG_MLX5_INFINIBAND CONFIG_INFINIBAND_IRDMA \
		CONFIG_INFINIBAND_BNXT_RE CONFIG_RDMA_RXE CONFIG_INFINIBAND_IPOIB CONFIG_INFINIBAND_SRPT; do
		[[ $(value "$new" "$s") == m ]] || { echo "kernel-deb: $s is $(value "$new" "$s"), not m" >&2; bad=1; }
	done
	((kept >= 40)) || { echo "kernel-deb: only $kept RDMA/HCA options set in $deb (wrong config file?)" >&2; bad=1; }
	# Every security option Debian's config turns on must be on, with Debian's value: no
	# administrator should trade a CPU mitigation for ib_cm-rs. clang 14, for one, has no
	# -mfunction-return=thunk-extern, -fpatchable-function-entry or -mharden-sls, and
	# olddefconfig silently drops the return-thunk, SRSO, SLS, ITS and call-depth mitigations.
	local lost=() nsec=0 cc
	while IFS= read -r s; do
		a=$(value "$deb" "$s")
		[[ $a != unset && $a != n ]] || continue
		nsec=$((nsec + 1))
		b=$(value "$new" "$s")
		[[ $a == "$b" ]] || lost+=("${s#CONFIG_}$([[ $b == unset ]] || echo "=$b (Debian: $a)")")
	done < <(security_symbols "$srct" "$deb")
	cc=$(value "$new" CONFIG_CC_VERSION_TEXT | tr -d '"')
	if ((${#lost[@]})); then
		echo "kernel-deb: security options of Debian's config lost after olddefconfig with $cc: ${lost[*]}" >&2
		echo "kernel-deb: (clang-$kdeb_llvm_default, make kernel-deb's compiler, keeps them: scripts/deps.sh kernel-deb installs it)" >&2
		bad=1
	fi
	((nsec >= 40)) || { echo "kernel-deb: only $nsec security options set in $deb (wrong config file?)" >&2; bad=1; }
	# Beyond those lists: any other option that differs from Debian's and is not expected.
	local other
	other=$(unexpected_diffs "$deb" "$new")
	if [[ -n $other ]]; then
		echo "kernel-deb: options that differ from Debian's config and are not expected differences (symbol, Debian, this config):" >&2
		sed 's/^/kernel-deb:   /' <<<"$other" >&2
		bad=1
	fi
	((bad == 0)) || return 1
	echo "kernel-deb: config ok ($cc): Rust on, MODVERSIONS off, $n RDMA/HCA options as Debian has them ($kept of them y/m), all $nsec security options Debian sets kept, no other difference but the toolchain's, Rust's and the build's"
}

ver=$(kernel_pkg_version) || true
src=$IBCM_CACHE/src/linux-$ver
# The compilers of this kernel (scripts/lib.sh): LLVM=-19, libclang 19.
kdeb_llvm_default=$KDEB_LLVM
if [[ -n ${IBCM_KDEB_LLVM:-} && $IBCM_KDEB_LLVM != "$KDEB_LLVM" ]]; then
	KDEB_LLVM=$IBCM_KDEB_LLVM
	KTOOLS_DEB=("${KTOOLS[@]/#LLVM=1/LLVM=-$KDEB_LLVM}")
	KTOOLS_DEB=("${KTOOLS_DEB[@]/#LIBCLANG_PATH=*/LIBCLANG_PATH=$(libclang_dir "$KDEB_LLVM")}")
fi
kclang=clang-$KDEB_LLVM
kmake() { make -C "$src" O="$1" "${KTOOLS_DEB[@]}" "${@:2}"; }
need_llvm() {
	local t
	for t in "$kclang" "ld.lld-$KDEB_LLVM" "llvm-ar-$KDEB_LLVM"; do
		command -v "$t" >/dev/null || die "$t missing: make kernel-deb builds with clang/lld/llvm $KDEB_LLVM (scripts/deps.sh kernel-deb installs them)"
	done
	compgen -G "$(libclang_dir "$KDEB_LLVM")/libclang*.so*" >/dev/null ||
		die "libclang $KDEB_LLVM missing in $(libclang_dir "$KDEB_LLVM") (package libclang1-$KDEB_LLVM: scripts/deps.sh kernel-deb)"
}

# The extracted source, shared with scripts/kernel.sh (same place, marker and lock).
need_source() {
	[[ -n $ver ]] || die "linux-source-6.12 is not installed (run scripts/deps.sh)"
	[[ -f $src/.ibcm-extracted ]] && return
	mkdir -p "$IBCM_CACHE/src"
	exec 9>"$IBCM_CACHE/.kernel.lock"
	flock 9
	if [[ ! -f $src/.ibcm-extracted ]]; then
		log "kernel-deb: extracting $KTARBALL"
		rm -rf "$src" "$src.tmp"
		mkdir -p "$src.tmp"
		tar -C "$src.tmp" -xf "$KTARBALL" || die "cannot extract $KTARBALL"
		mv "$src.tmp"/linux-source-6.12 "$src" && rmdir "$src.tmp"
		touch "$src/.ibcm-extracted"
	fi
	exec 9>&-
}

build_dir() {
	local hash
	need_llvm
	hash=$( { xz -dc "$debcfg_xz"; cat "$frag"; /usr/bin/rustc --version; "$kclang" --version | head -1;
		  "$BINDGEN_BIN" --version; } | sha256sum | cut -c1-12)
	echo "$IBCM_CACHE/build/$ver-deb-$hash"
}

# In the default (input-hashed) directory a finished configuration is reused, as
# scripts/kernel.sh reuses a kernel build; its check runs every time.
configure() { # DIR [reuse]
	local dir=$1
	if [[ ${2:-} == reuse && -f $dir/.ibcm-configured ]]; then
		verify "$dir/.config.debian" "$dir/.config" "$src"
		return
	fi
	[[ -f $debcfg_xz ]] || die "$debcfg_xz missing (package linux-config-6.12: scripts/deps.sh)"
	command -v pahole >/dev/null || die "pahole missing (package dwarves: scripts/deps.sh): Debian's BTF would be dropped"
	need_llvm
	need_source
	mkdir -p "$dir"
	xz -dc "$debcfg_xz" >"$dir/.config"
	cp "$dir/.config" "$dir/.config.debian"
	{
		"$src/scripts/kconfig/merge_config.sh" -m -O "$dir" "$dir/.config" "$frag"
		kmake "$dir" olddefconfig
	} >"$dir/config.log" 2>&1 || { tail -20 "$dir/config.log" >&2; die "configuration failed (log: $dir/config.log)"; }
	verify "$dir/.config.debian" "$dir/.config" "$src" || return 1
	touch "$dir/.ibcm-configured"
}

# 6.12's linux-headers package has no rust/: out-of-tree Rust modules (and so DKMS) cannot
# be built against it. Repack it with what an external Rust module build reads.
add_rust_headers() { # HEADERS_DEB KBUILD_DIR
	local deb=$1 kb=$2 tmp hdir f
	tmp=$(mktemp -d)
	dpkg-deb -R "$deb" "$tmp" || die "cannot unpack $deb"
	hdir=$(find "$tmp/usr/src" -mindepth 1 -maxdepth 1 -type d -name 'linux-headers-*' | head -1)
	[[ -n $hdir ]] || die "$deb has no /usr/src/linux-headers-* directory"
	mkdir -p "$hdir/rust"
	for f in "$kb"/rust/*.rmeta "$kb"/rust/libmacros.so; do
		[[ -e $f ]] || die "$kb has no built $(basename "$f") (CONFIG_RUST build?)"
		cp "$f" "$hdir/rust/"
	done
	cp "$(readlink -f "$kb/source" 2>/dev/null || echo "$kb")/rust/bindgen_parameters" "$hdir/rust/" ||
		die "no rust/bindgen_parameters in the source tree"
	[[ -e $hdir/scripts/target.json || ! -e $kb/scripts/target.json ]] || cp "$kb/scripts/target.json" "$hdir/scripts/"
	# md5sums must list the new files for debsums/dpkg --verify.
	if [[ -f $tmp/DEBIAN/md5sums ]]; then
		(cd "$tmp" && find "${hdir#"$tmp"/}/rust" -type f -exec md5sum {} + >>DEBIAN/md5sums)
		[[ ! -e $hdir/scripts/target.json ]] || (cd "$tmp" && md5sum "${hdir#"$tmp"/}/scripts/target.json" >>DEBIAN/md5sums)
	fi
	# Installed-Size (KiB) is what apt tells the user the package takes: count rust/ in.
	sed -i "s/^Installed-Size: .*/Installed-Size: $(du -sk --apparent-size --exclude=DEBIAN "$tmp" | cut -f1)/" "$tmp/DEBIAN/control"
	dpkg-deb --root-owner-group -Z"${IBCM_DEB_COMPRESS:-xz}" -b "$tmp" "$deb.new" >/dev/null || die "cannot repack $deb"
	mv "$deb.new" "$deb"
	rm -rf "$tmp"
	echo "kernel-deb: added rust/ to $(basename "$deb")"
}

# lock_dir DIR FLOCK-OPTION... : DIR made if needed, and its lock (DIR.lock, next to it) held on
# fd 8 until the script ends; fails as flock does (-n: at once, -w N: after N seconds).
lock_dir() {
	mkdir -p "$1"
	exec 8>"$1.lock"
	flock "${@:2}" 8
}

# Everything runs from main, and `main "$@"; exit` is one line, which bash has read whole
# before main starts: editing this file while a build runs (hours) cannot change what the
# running build does next.
main() {
case ${1:-} in
dir) build_dir ;;
verify) verify "$2" "$3" "${4:-}" ;;
config)
	if [[ -n ${2:-} ]]; then
		configure "$2"
	else
		# Only the first configuration writes the build directory; then it is only verified.
		dir=$(build_dir)
		[[ -f $dir/.ibcm-configured ]] || lock_dir "$dir" -w 600 || die "$dir is locked by a running make kernel-deb"
		configure "$dir" reuse
	fi
	;;
add-rust-headers) add_rust_headers "$2" "$3" ;;
prepare)
	# A directory of its own, next to the build's: `make check` runs this while a `build` may be
	# running for hours, and two makes in one O= directory race.
	full=$(build_dir)
	dir=$full-prep
	lock_dir "$dir" -w 600 || die "$dir is locked by another prepare"
	configure "$dir" reuse >&2
	kmake "$dir" -j"$(nproc)" modules_prepare >"$dir/prepare.log" 2>&1 ||
		{ tail -20 "$dir/prepare.log" >&2; die "modules_prepare failed (log: $dir/prepare.log)"; }
	# A finished `build` of the same configuration (same hash) has the Module.symvers that
	# modpost checks a module's imports against; modules_prepare makes none.
	rm -f "$dir/Module.symvers"
	if [[ -f $full/build-summary && -f $full/Module.symvers ]] && exec 7>"$full.lock" && flock -n 7; then
		cp "$full/Module.symvers" "$dir/Module.symvers"
	fi
	exec 7>&-
	echo "$dir"
	;;
build)
	for c in dpkg-buildpackage dh_listpackages rsync /usr/bin/time; do
		command -v "$c" >/dev/null || die "$c missing (scripts/deps.sh kernel-deb installs it)"
	done
	dir=$(build_dir)
	lock_dir "$dir" -n || die "another make kernel-deb is building in $dir"
	configure "$dir" reuse
	outdir=$IBCM_CACHE/kernel-deb
	log "kernel-deb: bindeb-pkg in $dir (hours on 2 cores; log: $dir/build.log)"
	# The build is resumable: an interrupted run (a session that ends, ^C) leaves its objects,
	# and the next run goes on from them. Each run's wall time is kept so the total is known:
	# a run's start is in build-runs, its end is the mtime of its log (rotated to build.log.N).
	runs=$dir/build-runs
	rm -f "$dir/build-summary" # written again when this run has finished
	# GNU time reports nothing for a run that is killed (^C aside), so this run's CPU is also
	# sampled each minute into build-cpu.<run>, whose last sample survives a kill: the CPU of
	# the process group (its live processes and the children they reaped) since the run began.
	# When the run completes, GNU time's exact figure replaces the sample.
	pgid=$(sed 's/.*) //' /proc/$$/stat | cut -d' ' -f3)
	pgcpu() {
		# cat fails on processes that end meanwhile; pipefail must not drop the sample.
		{ cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v g="$pgid" -v hz="$(getconf CLK_TCK)" \
			'{ sub(/^.*\) /, ""); if ($3 == g) t += $12 + $13 + $14 + $15 } END { printf "%d\n", t / hz }'
	}
	base=$(pgcpu)
	if [[ -f $dir/build.log ]]; then
		i=1
		while [[ -e $dir/build.log.$i ]]; do i=$((i + 1)); done
		mv "$dir/build.log" "$dir/build.log.$i"
	fi
	start=$(date +%s)
	echo "$start" >>"$runs"
	run=$(wc -l <"$runs")
	(
		exec 8>&- # not the build's lock: a sleep of this loop may outlive the build by a minute
		while sleep 60 && kill -0 $$ 2>/dev/null; do
			echo $(($(pgcpu) - base)) >"$dir/build-cpu.$run.new" && mv "$dir/build-cpu.$run.new" "$dir/build-cpu.$run"
		done
	) >/dev/null 2>&1 &
	sampler=$!
	trap 'kill $sampler 2>/dev/null || true' EXIT
	# bindeb-pkg leaves the packages in the parent of the build directory.
	/usr/bin/time -f 'cpu: %U s user %S s sys, %e s wall' -a -o "$dir/build-cpu" \
		make -C "$src" O="$dir" "${KTOOLS_DEB[@]}" -j"$(nproc)" KDEB_PKGVERSION="$ver+rust1" bindeb-pkg \
		>"$dir/build.log" 2>&1 ||
		{ tail -40 "$dir/build.log" >&2; die "bindeb-pkg failed (log: $dir/build.log)"; }
	end=$(date +%s)
	# Earlier, interrupted runs: start from build-runs, end from their log's mtime.
	total=$((end - start)) n=1
	mapfile -t starts <"$runs"
	for ((i = 1; i < ${#starts[@]}; i++)); do
		[[ -e $dir/build.log.$i ]] || continue
		total=$((total + $(stat -c %Y "$dir/build.log.$i") - starts[i - 1])) n=$((n + 1))
	done
	shopt -s nullglob
	debs=("$(dirname "$dir")"/linux-*"$ver+rust1"*.deb)
	((${#debs[@]})) || die "bindeb-pkg produced no .deb (log: $dir/build.log)"
	# rust/ goes into the headers package before it is published: a reader of $outdir never
	# sees one without it. Packages of another version go, so $outdir holds one kernel.
	for h in "$(dirname "$dir")"/linux-headers-*"$ver+rust1"*.deb; do add_rust_headers "$h" "$dir"; done
	mkdir -p "$outdir"
	for old in "$outdir"/linux-*.deb; do
		[[ $old == *"_$ver+rust1_"* ]] || rm -f "$old"
	done
	mv "${debs[@]}" "$outdir/"
	kill "$sampler" 2>/dev/null || true
	tail -1 "$dir/build-cpu" | awk '{ printf "%d\n", $2 + $5 }' >"$dir/build-cpu.$run"
	cpu=0 ncpu=0
	for f in "$dir"/build-cpu.[0-9]*; do
		[[ $f == *.new ]] || { cpu=$((cpu + $(cat "$f"))); ncpu=$((ncpu + 1)); }
	done
	summary="kernel-deb: done: this run $((end - start)) s, $total s wall over $n run(s) ($(tail -1 "$dir/build-cpu")); CPU of the $ncpu run(s) with a figure: $cpu s: $(ls "$outdir" | tr '\n' ' ')"
	echo "$summary" >"$dir/build-summary"
	log "$summary"
	echo "$outdir"
	;;
*) die "usage: $0 config [DIR] | dir | verify DEBIAN_CONFIG NEW_CONFIG | prepare | build | add-rust-headers DEB KBUILD_DIR" ;;
esac
}
main "$@"; exit
