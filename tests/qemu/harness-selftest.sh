#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Self-test of the retry logic of run.sh and run-pair.sh (Documentation/testing.rst, "Harness
# robustness on a loaded host"), with a stub qemu-system-x86_64 first in PATH: no guest boots.
# Each boot of the stub takes the next line of its plan (one plan per guest role) and acts it:
#   panic0   prints a kernel panic and exits 0 (QEMU's status for panic=-1 -no-reboot)
#   panic1   prints a kernel panic and exits 1
#   latepanic  panic0 after 2 s (its peer of a pair is up by then)
#   hang     prints nothing and sleeps until `timeout` ends it
#   waitkill sleeps 60 s without printing IBCM-INIT, until run-pair ends it; notes the end
#            (boot number) in ended-<role>, and nothing is left of it once run.sh returns
#   postinit prints IBCM-INIT, then exits 0 without IBCM-DONE (a failure after init)
#   ok       prints IBCM-INIT and IBCM-DONE, exits 0
# Prints one line per check and exits non-zero if any failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
: >"$tmp/bzImage"
: >"$tmp/initrd"
cat >"$tmp/bin/qemu-system-x86_64" <<'STUB'
#!/usr/bin/env bash
log= role=x
while (($#)); do
	case $1 in
	-serial) log=${2#file:}; shift ;;
	-append) [[ $2 == *ibcm.role=b* ]] && role=b; [[ $2 == *ibcm.role=a* ]] && role=a; shift ;;
	esac
	shift
done
plan=$STUB_DIR/plan-$role
n=$(($(cat "$STUB_DIR/boots-$role" 2>/dev/null || echo 0) + 1))
echo $n >"$STUB_DIR/boots-$role"
what=$(sed -n "${n}p" "$plan")
: >"$log"
case $what in
panic0) echo "Kernel panic - not syncing: IO-APIC + timer doesn't work!" >>"$log"; exit 0 ;;
panic1) echo "Kernel panic - not syncing: stub" >>"$log"; exit 1 ;;
latepanic) sleep 2; echo "Kernel panic - not syncing: stub" >>"$log"; exit 0 ;;
hang) exec sleep 60 ;;
waitkill)
	sleep 60 &
	trap 'kill $! 2>/dev/null; echo $n >>"$STUB_DIR/ended-$role"; exit 143' TERM
	wait
	exit 0
	;;
postinit) echo "IBCM-INIT" >>"$log"; exit 0 ;;
ok) printf 'IBCM-INIT\nIBCM-DONE\n' >>"$log"; exit 0 ;;
*) echo "stub: no plan for boot $n of $role" >>"$log"; exit 1 ;;
esac
STUB
chmod +x "$tmp/bin/qemu-system-x86_64"
export PATH="$tmp/bin:$PATH" STUB_DIR="$tmp"
fails=0

check() {
	local what=$1 want=$2 got=$3
	if [[ $got == "$want" ]]; then
		echo "ok $what"
	else
		echo "not ok $what # want $want, got $got"
		fails=$((fails + 1))
	fi
}

# run.sh with a plan for the single guest (role x): status, boots, RETRY lines in the log.
single() {
	local name=$1 plan=$2 want_rc=$3 want_boots=$4 want_retry=$5 rc
	rm -f "$tmp"/boots-* "$tmp"/*.log*
	tr ' ' '\n' <<<"$plan" >"$tmp/plan-x"
	"$here/run.sh" "$tmp/bzImage" "$tmp/initrd" rs check "$tmp/g.log" 2 2>"$tmp/stderr"
	rc=$?
	check "run_${name}_status" "$want_rc" "$rc"
	check "run_${name}_boots" "$want_boots" "$(cat "$tmp/boots-x")"
	check "run_${name}_retry_line" "$want_retry" "$(grep -c IBCM-RETRY "$tmp/g.log")"
	if ((want_retry)); then
		check "run_${name}_retry_on_stderr" 1 "$(grep -c 'run: retry:' "$tmp/stderr")"
	fi
}

# A panic with QEMU's status 0 (panic=-1 -no-reboot) is retried, as one with status 1 is.
single panic_status0_retried "panic0 ok" 0 2 1
single panic_status1_retried "panic1 ok" 0 2 1
single panic_twice_fails "panic0 panic0" 1 2 1
# A timeout is not retried; nor is a failure after init.
single timeout_not_retried "hang ok" 2 1 0
single postinit_not_retried "postinit ok" 1 1 0
single ok_once "ok" 0 1 0
RUN_NO_RETRY=1 single no_retry_in_pair_mode "panic0 ok" 1 1 0

# run-pair.sh with one plan per role: status, boots of each guest, RETRY lines.
pair() {
	local name=$1 plan_a=$2 plan_b=$3 want_rc=$4 want_boots=$5 want_retry=$6 want_ended=${7:-0} rc
	rm -f "$tmp"/boots-* "$tmp"/ended-* "$tmp"/*.log*
	tr ' ' '\n' <<<"$plan_a" >"$tmp/plan-a"
	tr ' ' '\n' <<<"$plan_b" >"$tmp/plan-b"
	local t0=$SECONDS
	"$here/run-pair.sh" "$tmp/bzImage" "$tmp/initrd" rs "$tmp/a.log" "$tmp/b.log" 20 bench \
		2>"$tmp/stderr"
	rc=$?
	local took=$((SECONDS - t0))
	check "pair_${name}_status" "$want_rc" "$rc"
	check "pair_${name}_boots" "$want_boots" "$(cat "$tmp/boots-a")/$(cat "$tmp/boots-b")"
	check "pair_${name}_retry_lines" "$want_retry" "$(cat "$tmp"/a.log "$tmp"/b.log | grep -c IBCM-RETRY)"
	# A waitkill guest is ended by run-pair as soon as its peer is gone, not by its own 20 s
	# limit: its stub saw the TERM, the pair returned well before the limit (the other side
	# is gone after at most 2 s per boot), and no stub process outlives run-pair.
	if [[ "$plan_a $plan_b" == *waitkill* ]]; then
		check "pair_${name}_other_ended" "$want_ended" "$(cat "$tmp"/ended-* 2>/dev/null | wc -l)"
		check "pair_${name}_stopped_early" yes "$( ((took < 15)) && echo yes || echo "no (${took} s)")"
		check "pair_${name}_nothing_left" 0 "$(pgrep -fc "$tmp/bin/qemu-system-x86_64")"
	fi
}

# A dies before its init: B (waiting for its peer) is ended at once, the pair booted again.
pair a_panics_retried "latepanic ok" "waitkill ok" 0 2/2 2 1
# B fails after its init while A is still booting (ended before its own init): not retried,
# although A's log has no IBCM-INIT either.
pair b_fails_after_init_not_retried "waitkill ok" "postinit ok" 1 1/1 0 1
# A passes first, then B dies before its init: retried on B's log.
pair b_panics_after_a_passed_retried "ok ok" "panic1 ok" 0 2/2 2
pair both_ok "ok" "ok" 0 1/1 0

# make check's summary: a NOTE: line for each report with RETRY lines, none without.
source "$here/../../scripts/lib.sh"
printf 'ok      guest-c: e2e x\nRETRY   guest-rs: guest (rs, check) booted twice\nRESULT 1 0\n' >"$tmp/report"
check note_on_retry "NOTE: 1 guest boot(s) retried after dying before their init ran:|  guest-rs: guest (rs, check) booted twice" "$(retry_note "$tmp/report" | paste -sd'|')"
printf 'ok      guest-c: e2e x\nRESULT 1 0\n' >"$tmp/report"
check no_note_without_retry "" "$(retry_note "$tmp/report")"

((fails == 0))
