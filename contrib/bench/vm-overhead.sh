#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What one idle microVM costs the host, for a RuntimeClass's `overhead`
# (contrib/engines/kubernetes/runtimeclass.yaml).
#
#   contrib/bench/vm-overhead.sh [-n N] [-p K] [-m MOAT_BINARY] [-d VM_DIR] [-a tcg|kvm]
#
# N times (default 3): a microVM container whose workload only sleeps (guest
# memory: moat's default, 256 MiB), and with -p K, K more containers joining
# its network, IPC and UTS namespaces (a pod of 1 + K: they run in the same
# guest, docs/microvm-network.md), each sleeping too; once all are up, 5 s
# later:
#   memory  what their memory cgroups are charged (memory.usage_in_bytes):
#           QEMU, the guest RAM it has touched (kernel, agent, the containers'
#           processes, page cache), the supervisor, and each member's relay
#   cpu     their cgroups' CPU time over the next 10 s, in millicores
# It prints each run and the medians. Must run as root.
set -euo pipefail

n=3
members=0
here=$(cd "$(dirname "$0")/../.." && pwd)
moat=${MOAT_BINARY:-$here/moat}
vmdir=${MOAT_VM_DIR:-$here/vm}
accel=tcg
while getopts "n:p:m:d:a:h" opt; do
	case $opt in
	n) n=$OPTARG ;;
	p) members=$OPTARG ;;
	m) moat=$OPTARG ;;
	d) vmdir=$OPTARG ;;
	a) accel=$OPTARG ;;
	*) sed -n '3,19p' "$0"; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "vm-overhead: must run as root" >&2; exit 1; }
export MOAT_VM_DIR=$vmdir

work=$(mktemp -d /tmp/moat-vm-overhead.XXXXXX)
id=overhead-$$
cleanup() {
	for ((k = 1; k <= members; k++)); do
		"$moat" --root "$work/state" delete --force "$id-$k" >/dev/null 2>&1 || true
	done
	"$moat" --root "$work/state" delete --force "$id" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/bundle/rootfs/bin"
cp /bin/busybox "$work/bundle/rootfs/bin/"
for a in sh sleep; do ln -s busybox "$work/bundle/rootfs/bin/$a"; done
"$moat" spec --bundle "$work/bundle"
# booted, as a Kubernetes pod's VM is: its CNI interface rules out a snapshot (vm-snapshot.h)
jq --arg accel "$accel" '.process.args = ["sh", "-c", "echo up; exec sleep 600"]
	| .process.terminal = false | .root.readonly = false
	| .annotations["moat.isolation"] = "microvm" | .annotations["moat.vm.accel"] = $accel
	| .annotations["moat.vm.boot"] = "cold"
	| .linux.namespaces |= map(select(.type != "user"))
	| del(.linux.uidMappings, .linux.gidMappings)' \
	"$work/bundle/config.json" >"$work/config.json"
mv "$work/config.json" "$work/bundle/config.json"
for ((k = 1; k <= members; k++)); do
	cp -a "$work/bundle" "$work/member$k"
done

# member_config K PID: member K's config joins the sandbox PID's network, IPC and UTS
member_config() {
	jq --arg pid "$2" '.linux.namespaces |= map(if .type == "network" or .type == "ipc"
		or .type == "uts" then .path = ("/proc/" + $pid + "/ns/" + (if .type == "network"
		then "net" else .type end)) else . end)' "$work/bundle/config.json" \
		>"$work/member$1/config.json"
}

# cgroup_file PID CONTROLLER FILE: FILE of PID's v1 cgroup of CONTROLLER.
cgroup_file() {
	local path
	path=$(awk -F: -v c="$2" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' "/proc/$1/cgroup")
	for mnt in "/sys/fs/cgroup/$2" "/sys/fs/cgroup/cpu,cpuacct"; do
		[ -e "$mnt$path/$3" ] && { echo "$mnt$path/$3"; return; }
	done
	echo "vm-overhead: no $2 cgroup file $3 for pid $1" >&2
	exit 1
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

mems=() cpus=()
for ((i = 1; i <= n; i++)); do
	"$moat" --root "$work/state" run -d --bundle "$work/bundle" "$id" >"$work/out" 2>&1 </dev/null
	for ((t = 0; t < 600; t++)); do
		grep -q up "$work/out" && break
		sleep 0.1
	done
	grep -q up "$work/out" || { echo "vm-overhead: the guest did not come up" >&2; cat "$work/out" >&2; exit 1; }
	pids=("$("$moat" --root "$work/state" state "$id" | jq .pid)")
	for ((k = 1; k <= members; k++)); do
		member_config "$k" "${pids[0]}"
		"$moat" --root "$work/state" run -d --bundle "$work/member$k" "$id-$k" \
			>"$work/out$k" 2>&1 </dev/null
		for ((t = 0; t < 600; t++)); do
			grep -q up "$work/out$k" && break
			sleep 0.1
		done
		grep -q up "$work/out$k" || { echo "vm-overhead: member $k did not come up" >&2; cat "$work/out$k" >&2; exit 1; }
		pids+=("$("$moat" --root "$work/state" state "$id-$k" | jq .pid)")
	done
	sleep 5
	mem=0 a=0 b=0
	for pid in "${pids[@]}"; do
		mem=$((mem + $(cat "$(cgroup_file "$pid" memory memory.usage_in_bytes)") / 1048576))
		a=$((a + $(cat "$(cgroup_file "$pid" cpuacct cpuacct.usage)")))
	done
	sleep 10
	for pid in "${pids[@]}"; do
		b=$((b + $(cat "$(cgroup_file "$pid" cpuacct cpuacct.usage)")))
	done
	cpu=$(((b - a) / 10000000))
	echo "run $i: memory ${mem} MiB, cpu ${cpu}m (a pod of $((members + 1)))"
	mems+=("$mem") cpus+=("$cpu")
	for ((k = 1; k <= members; k++)); do
		"$moat" --root "$work/state" delete --force "$id-$k"
	done
	"$moat" --root "$work/state" delete --force "$id"
done
echo "median: memory $(printf '%s\n' "${mems[@]}" | median) MiB, cpu $(printf '%s\n' "${cpus[@]}" | median)m (accel $accel, guest memory 256 MiB, a pod of $((members + 1)))"
