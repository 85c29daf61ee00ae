#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Where a moat `run` of /bin/true spends its time, step by step, nearly untraced: uprobes on
# the functions of create, start and delete, the scheduler's fork, exec and exit events, and
# a few system calls, recorded by `perf record` (the kernel stamps each event; nothing stops
# the process), over N runs of run-bench.sh's bundle. It prints, for the runs whose events
# came in the most common order, the median time from each event to the next.
#
# Finer than run-phases.sh, and for moat only: the probes need moat's debug information
# (the build's -g) and Debian's linux-perf. The probes are removed at exit.
#
#   contrib/bench/run-timeline.sh [-n N] [-m MOAT_BINARY]
set -euo pipefail

n=30
moat=${MOAT_BINARY:-$(cd "$(dirname "$0")/../.." && pwd)/moat}
while getopts "n:m:h" opt; do
	case $opt in
	n) n=$OPTARG ;;
	m) moat=$OPTARG ;;
	*) sed -n '3,12p' "$0"; exit 2 ;;
	esac
done

# shellcheck source=contrib/bench/run-bundle.sh
. "$(dirname "$0")/run-bundle.sh"
enter_private_mounts run-timeline perf -n "$n" -m "$moat"
leave_hybrid

# The steps, in the order a run reaches them: the parent's create, stage 1 or the init cloned
# into its namespaces (moat_init_direct), the init (stage2),
# start and delete. A name the compiler inlined away is skipped.
probes=(main moat_exec_sealed_self moat_container_create oci_config_parse_file apply_policy
	moat_state_dir_create make_cgroup spawn talk_to_children moat_init_stage1 moat_init_direct
	moat_cgroup_join_v1 enter_namespaces stage2 moat_rootfs_enter moat_process_setup_env
	moat_process_become_user save_state wait_for_start moat_container_start
	moat_init_confine_last moat_container_delete moat_cgroup_destroy moat_state_dir_remove)
events=sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit
events+=,syscalls:sys_enter_execveat,syscalls:sys_enter_unshare,syscalls:sys_enter_pivot_root

work=$(mktemp -d /tmp/moat-timeline.XXXXXX)
group=moat_timeline_$$
cleanup() {
	perf probe -q -d "$group:*" 2>/dev/null || true
	for dir in "$work"/state/*/; do
		[ -d "$dir" ] && "$moat" --root "$work/state" delete --force "$(basename "$dir")" \
			>/dev/null 2>&1
	done
	rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"
make_run_bundle "$work/bundle" "$moat"
: >"$work/in"

# the probes go on the runtime that the launcher starts (docs/launcher.md)
runtime=$(runtime_of "$moat")
added=0
for f in "${probes[@]}"; do
	if perf probe -q -x "$runtime" --add "$group:$f=$f" >/dev/null 2>&1; then
		added=$((added + 1))
	fi
done
((added > 0)) || { echo "run-timeline: no probe took (is $runtime built with -g?)" >&2; exit 1; }

loop() {
	local i
	for ((i = 0; i < n; i++)); do
		"$moat" --root "$work/state" run --bundle "$work/bundle" "t$i" <"$work/in"
	done
}
perf record -q -o "$work/perf.data" -e "$group:*" -e "$events" -- \
	bash -c "$(declare -f loop); n=$n moat=$moat work=$work; loop" >/dev/null 2>&1
perf script -i "$work/perf.data" -F comm,pid,time,event,trace 2>/dev/null >"$work/events.txt"

echo "runs: $n, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/events.txt" <<'EOF'
import collections, re, statistics, sys

runs, cur = [], None
for line in open(sys.argv[1]):
    m = re.match(r'\s*(\S+)\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)', line)
    if not m:
        continue
    comm, event, rest, t = m.group(1), m.group(4).split(':')[1], m.group(5), float(m.group(3))
    # each run starts when the loop's shell forks it
    if event == 'sched_process_fork' and comm == 'bash':
        cur = []
        runs.append(cur)
        continue
    if cur is None:
        continue
    if event == 'sched_process_exec':
        path = rest.split()[0].split('=')[1]
        event = 'exec ' + ('(the sealed view)' if path.startswith('/dev/fd/') else path)
    elif event == 'sched_process_exit':
        event = 'exit ' + comm
    elif event == 'sched_process_fork':
        event = 'fork'
    elif event.startswith('sys_enter_'):
        event = event[len('sys_enter_'):] + '()'
    cur.append((event, t))

def labelled(run):
    seen = collections.Counter()
    out = []
    for event, t in run:
        seen[event] += 1
        out.append((event if seen[event] == 1 else f'{event} #{seen[event]}', t))
    return out

runs = [labelled(r) for r in runs if r]
if not runs:
    sys.exit('run-timeline: no run was recorded')
orders = collections.Counter(tuple(e for e, _ in r) for r in runs)
order, count = orders.most_common(1)[0]
same = [r for r in runs if tuple(e for e, _ in r) == order]
print(f'{count} of {len(runs)} runs in the most common order; medians in ms')
for i in range(1, len(order)):
    d = statistics.median((r[i][1] - r[i - 1][1]) * 1000 for r in same)
    print(f'{d:7.2f}  {order[i - 1]} -> {order[i]}')
total = statistics.median((r[-1][1] - r[0][1]) * 1000 for r in same)
print(f'{total:7.2f}  total, from the first exec to the last exit')
EOF
