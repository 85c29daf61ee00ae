#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Where a `run` of /bin/true spends its time, by phase, for moat and crun, on the same bundle
# and config as run-bench.sh. Each run is traced with strace on six system calls only (a
# seccomp filter stops the tracee at those and at nothing else), and the phases lie between
# them:
#
#   start    the runtime's execve to its re-exec (execveat): the first image's start-up
#   setup    the re-exec to the first fork: config, policy, seccomp, state, (moat) cgroups
#   ns+root  the first fork to pivot_root: namespaces, id maps, mounts, (crun) cgroups
#   finish   pivot_root to the workload's execve: the rest of the init, the state, start
#   workload the workload's execve to its exit
#   teardown the workload's exit to the runtime's
#
# The traced stops add some time to each phase; the untraced median of the same runs is
# printed beside the total.
#
#   contrib/bench/run-phases.sh [-n N] [-m MOAT_BINARY]
set -euo pipefail

n=30
moat=${MOAT_BINARY:-$(cd "$(dirname "$0")/../.." && pwd)/moat}
while getopts "n:m:h" opt; do
	case $opt in
	n) n=$OPTARG ;;
	m) moat=$OPTARG ;;
	*) sed -n '3,19p' "$0"; exit 2 ;;
	esac
done

# shellcheck source=contrib/bench/run-bundle.sh
. "$(dirname "$0")/run-bundle.sh"
enter_private_mounts run-phases strace -n "$n" -m "$moat"
leave_hybrid

work=$(mktemp -d /tmp/moat-phases.XXXXXX)
trap 'rm -rf "$work"' EXIT
runtime_bin() { if [ "$1" = moat ]; then echo "$moat"; else command -v "$1"; fi; }

bundle=$work/bundle
chmod 755 "$work"
make_run_bundle "$bundle" "$moat"
: >"$work/in"

# phases FILE: the six phase lengths in ms of one strace -f -ttt log
phases() {
	awk '
	function ms(a, b) { return sprintf("%.3f", (b - a) * 1000) }
	{
		pid = $1; t = $2; call = $3; sub(/\(.*/, "", call)
		if (call == "execve" && start == "") { start = t; main = pid; next }
		if (call == "execveat" && pid == main && reexec == "") { reexec = t; next }
		if ((call == "clone" || call == "clone3") && fork == "") { fork = t; next }
		if (call == "pivot_root" && pivot == "") { pivot = t; init = pid; next }
		if (call == "execve" && pivot != "" && pid == init && wl == "") { wl = t; next }
		if (call == "exit_group" && pid == init && wl != "" && wlx == "") { wlx = t; next }
		if (call == "exit_group" && pid == main) { end = t }
	}
	END {
		if (reexec == "") reexec = start
		print ms(start, reexec), ms(reexec, fork), ms(fork, pivot), ms(pivot, wl), ms(wl, wlx), ms(wlx, end), ms(start, end)
	}' "$1"
}

median_col() { awk -v c="$2" '{ print $c }' "$1" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

runtimes=()
for rt in moat crun; do
	bin=$(runtime_bin "$rt" || true)
	if [ -z "$bin" ] || [ ! -x "$bin" ]; then
		echo "# $rt: not installed, skipped"
		continue
	fi
	runtimes+=("$rt")
	: >"$work/phases-$rt"
	: >"$work/plain-$rt"
done
for ((i = 0; i < n; i++)); do
	for rt in "${runtimes[@]}"; do
		bin=$(runtime_bin "$rt")
		strace -f -qq --seccomp-bpf -ttt -o "$work/trace" \
			-e trace=execve,execveat,clone,clone3,pivot_root,exit_group \
			"$bin" --root "$work/state-$rt" run --bundle "$bundle" "t$i" <"$work/in" >/dev/null
		phases "$work/trace" >>"$work/phases-$rt"
		t0=$EPOCHREALTIME
		"$bin" --root "$work/state-$rt" run --bundle "$bundle" "p$i" <"$work/in" >/dev/null
		t1=$EPOCHREALTIME
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }' >>"$work/plain-$rt"
	done
done

echo "runs per runtime: $n (interleaved), kernel $(uname -r); medians in ms"
printf "%-8s %8s %8s %8s %8s %8s %8s %8s %10s\n" runtime start setup ns+root finish workload \
	teardown total untraced
for rt in "${runtimes[@]}"; do
	printf "%-8s" "$rt"
	for c in 1 2 3 4 5 6 7; do
		printf " %8s" "$(median_col "$work/phases-$rt" "$c")"
	done
	printf " %10s\n" "$(median_col "$work/plain-$rt" 1)"
done
