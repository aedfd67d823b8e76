#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Does ib_cm.ko carry the return thunks and retpolines its kernel's configuration demands?
# Debian's config (make kernel-deb, clang 19) sets MITIGATION_RETHUNK and MITIGATION_RETPOLINE
# (with CALL_DEPTH_TRACKING, SRSO and ITS built on them): the kernel patches every return site
# and indirect call site of a module at load time, which works only if the module's code has
# them in the patchable form. From `objdump -dr` of the module's code sections (.text*,
# .init.text, .exit.text, .noinstr.text; not .altinstr_replacement, which is patch material):
#   MITIGATION_RETHUNK:   no bare `ret` (none is allowed in a module: the only exceptions the
#                         kernel makes, ANNOTATE_UNRET_SAFE, are in its entry code), returns
#                         jump to __x86_return_thunk, and objtool listed them (.return_sites);
#   MITIGATION_RETPOLINE: no indirect `call *`/`jmp *`; indirect calls go through
#                         __x86_indirect_thunk_<reg> (or __x86_indirect_its_thunk_<reg>), and
#                         objtool listed them (.retpoline_sites).
# Not checked: MITIGATION_SLS (int3 after ret/indirect jmp): rustc has no such option, so the
# kernel's own Rust code has none either; with RETHUNK no `ret` is left for it to guard.
#
#   thunk-check.sh KO KCONFIG    exit 0 and a summary; 1 and what is wrong; 77 and a reason
#                                when KCONFIG asks for neither mitigation (nothing to check)
set -uo pipefail
ko=${1:?usage: thunk-check.sh KO KCONFIG} cfg=${2:?usage: thunk-check.sh KO KCONFIG}
[[ -f $ko && -f $cfg ]] || { echo "thunk-check: no $ko or no $cfg"; exit 1; }
rethunk=$(grep -c '^CONFIG_MITIGATION_RETHUNK=y' "$cfg") retpoline=$(grep -c '^CONFIG_MITIGATION_RETPOLINE=y' "$cfg")
if ((!rethunk && !retpoline)); then
	echo "$(sed -n 's/^CONFIG_CC_VERSION_TEXT=//p' "$cfg") kernel: neither MITIGATION_RETHUNK nor MITIGATION_RETPOLINE set"
	exit 77
fi
command -v objdump >/dev/null || { echo "thunk-check: objdump missing (package binutils)"; exit 1; }
dis=$(objdump -dr -w --no-show-raw-insn "$ko" 2>&1) || { echo "thunk-check: objdump failed: ${dis:0:200}"; exit 1; }
# The code of the sections checked, each line prefixed with its function: "FUNC<TAB>insn".
code=$(awk '
	/^Disassembly of section / { s = $4; sub(/:$/, "", s); keep = (s ~ /^\.(text|init\.text|exit\.text|noinstr\.text)/); next }
	!keep { next }
	/^[0-9a-f]+ <.*>:$/ { f = $2; gsub(/[<>:]/, "", f); next }
	{ print f "\t" $0 }' <<<"$dis")
[[ -n $code ]] || { echo "thunk-check: no code sections in $ko"; exit 1; }
sections=$(objdump -h "$ko" | awk '{print $2}')
bad=0 sum=()
if ((rethunk)); then
	bare=$(grep -P '\t\s*[0-9a-f]+:\t(rep |bnd )?retq?(\s+\$0x[0-9a-f]+)?\s*$' <<<"$code")
	nbare=$(grep -c . <<<"$bare") nthunk=$(grep -c 'R_X86_64_PLT32\s__x86_return_thunk' <<<"$code")
	if ((nbare)); then
		echo "MITIGATION_RETHUNK: $nbare bare ret, in: $(cut -f1 <<<"$bare" | sort -u | head -3 | tr '\n' ' ')"
		bad=1
	fi
	((nthunk)) || { echo "MITIGATION_RETHUNK: no return through __x86_return_thunk"; bad=1; }
	grep -qx .return_sites <<<"$sections" || { echo "MITIGATION_RETHUNK: no .return_sites (objtool --rethunk did not run)"; bad=1; }
	sum+=("$nthunk returns through __x86_return_thunk, $nbare bare ret")
fi
if ((retpoline)); then
	ind=$(grep -P '\t\s*[0-9a-f]+:\t(cs |notrack |bnd )*(call|jmp)q?\s+\*' <<<"$code")
	nind=$(grep -c . <<<"$ind") nthunk=$(grep -cP 'R_X86_64_PLT32\s__x86_indirect_(its_)?thunk_' <<<"$code")
	if ((nind)); then
		echo "MITIGATION_RETPOLINE: $nind indirect call/jmp, in: $(cut -f1 <<<"$ind" | sort -u | head -3 | tr '\n' ' ')"
		bad=1
	fi
	((nthunk == 0)) || grep -qx .retpoline_sites <<<"$sections" ||
		{ echo "MITIGATION_RETPOLINE: no .retpoline_sites (objtool --retpoline did not run)"; bad=1; }
	sum+=("$nthunk indirect calls through __x86_indirect_thunk_*, $nind bare indirect call/jmp")
fi
((bad)) && exit 1
(IFS=';'; echo "${sum[*]}")
