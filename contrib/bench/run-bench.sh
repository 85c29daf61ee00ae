#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Time N sequential `run` of /bin/true in one busybox bundle for moat, crun
# and runc (each when installed), interleaved so that every runtime sees the
# same machine state, and print the median per run and moat's ratio to each.
#
#   contrib/bench/run-bench.sh [-n N] [-m MOAT_BINARY] [-b] [-p MS] [-d]
#
# -b: in blocks instead, each runtime's N runs back to back in two halves (moat,
# crun, runc, then again), so that no run inherits the kernel state another
# runtime's run left. Interleaved, a runtime that writes a pid to cgroup.procs
# leaves the cgroup lock's RCU sync in its slow mode for a grace period, and the
# next runtime's write skips the grace period it would otherwise wait (7-15 ms
# here); moat writes none (cgroup.h), so interleaving with it charges crun the
# full wait and flatters moat, while the blocks give each its own steady state.
# -p MS: sleep MS milliseconds before each run, as between the creates of a
# host that starts containers now and then rather than in a tight loop; the
# lock's slow mode has then ended, and a runtime that writes cgroup.procs
# waits the grace period every time.
# -d: also time moat's runtime started directly, without the launcher
# (moat-direct): it then re-executes itself from a read-only overlay of its
# directory, as every moat did before the launcher (docs/launcher.md).
#
# All three runtimes get the same config.json: moat's hardened default (user
# namespace, no capabilities, read-only root, own network namespace) with
# args ["/bin/true"]. The loop runs in a private mount namespace in which the
# cgroup2 hierarchy at /sys/fs/cgroup/unified is unmounted: crun 1.8 refuses
# hybrid hosts ("cgroups in hybrid mode not supported") otherwise. The host's
# mounts are not touched. Must run as root.
set -euo pipefail

n=100
blocks=
pause=0
direct=
moat=${MOAT_BINARY:-$(cd "$(dirname "$0")/../.." && pwd)/moat}
while getopts "n:m:bp:dh" opt; do
	case $opt in
	n) n=$OPTARG ;;
	m) moat=$OPTARG ;;
	b) blocks=-b ;;
	p) pause=$OPTARG ;;
	d) direct=-d ;;
	*) sed -n '3,30p' "$0"; exit 2 ;;
	esac
done

# shellcheck source=contrib/bench/run-bundle.sh
. "$(dirname "$0")/run-bundle.sh"
enter_private_mounts run-bench "" -n "$n" -m "$moat" -p "$pause" $blocks $direct
leave_hybrid

work=$(mktemp -d /tmp/moat-bench.XXXXXX)
cleanup() {
	local rt
	for rt in moat moat-direct crun runc; do
		[ -d "$work/state-$rt" ] || continue
		for dir in "$work/state-$rt"/*/; do
			[ -d "$dir" ] || continue
			"$(runtime_bin "$rt")" --root "$work/state-$rt" delete --force "$(basename "$dir")" \
				>/dev/null 2>&1 || true
		done
	done
	rm -rf "$work"
}
runtime_bin() {
	case $1 in
	moat) echo "$moat" ;;
	moat-direct) runtime_of "$moat" ;;
	*) command -v "$1" ;;
	esac
}
trap cleanup EXIT

bundle=$work/bundle
chmod 755 "$work"
make_run_bundle "$bundle" "$moat"

# Never hand a runtime the host's /dev/null as stdio: crun 1.8.1 chowns
# its stdio to the container's root, which would make the host's /dev/null
# owned by uid 100000. Plain files take the chown harmlessly.
: >"$work/in"
rts=(moat crun runc)
[ -z "$direct" ] || rts=(moat moat-direct crun runc)
runtimes=()
for rt in "${rts[@]}"; do
	bin=$(runtime_bin "$rt" || true)
	if [ -z "$bin" ] || [ ! -x "$bin" ]; then
		echo "# $rt: not installed, skipped"
		continue
	fi
	if ! "$bin" --root "$work/state-$rt" run --bundle "$bundle" "probe-$rt" <"$work/in" \
		>"$work/out" 2>"$work/err"; then
		echo "# $rt: cannot run the bundle here, skipped: $(tail -1 "$work/err")"
		continue
	fi
	runtimes+=("$rt")
	: >"$work/times-$rt"
done

# one_run RT I: one timed run of runtime RT, container bI
one_run() {
	local bin t0 t1
	bin=$(runtime_bin "$1")
	((pause == 0)) || sleep "$(awk -v p="$pause" 'BEGIN { print p / 1000 }')"
	t0=$EPOCHREALTIME
	"$bin" --root "$work/state-$1" run --bundle "$bundle" "b$2" <"$work/in" >"$work/out"
	t1=$EPOCHREALTIME
	echo "$t0 $t1" | awk '{ printf "%.3f\n", ($2 - $1) * 1000 }' >>"$work/times-$1"
}

if [ -n "$blocks" ]; then
	for half in 0 1; do
		for rt in "${runtimes[@]}"; do
			for ((i = half * n / 2; i < (half + 1) * n / 2; i++)); do
				one_run "$rt" "$i"
			done
		done
	done
else
	for ((i = 0; i < n; i++)); do
		for rt in "${runtimes[@]}"; do
			one_run "$rt" "$i"
		done
	done
fi

median() { sort -n "$1" | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo "runs per runtime: $n (${blocks:+in blocks, not }interleaved, ${pause} ms before each), kernel $(uname -r)"
printf "%-11s %12s\n" runtime "median ms"
declare -A med
for rt in "${runtimes[@]}"; do
	med[$rt]=$(median "$work/times-$rt")
	printf "%-11s %12s\n" "$rt" "${med[$rt]}"
done
for mine in moat moat-direct; do
	for other in crun runc; do
		if [ -n "${med[$mine]:-}" ] && [ -n "${med[$other]:-}" ]; then
			awk -v a="${med[$mine]}" -v b="${med[$other]}" -v m="$mine" -v o="$other" \
				'BEGIN { printf "%s/%s: %.2f\n", m, o, a / b }'
		fi
	done
done
