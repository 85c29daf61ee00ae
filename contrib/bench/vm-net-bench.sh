#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The network of a microVM's guest against a container's, on the same veth: throughput of
# a 100 MB transfer and the time of 200 small HTTP requests, medians of N runs, as ratios.
#
#   contrib/bench/vm-net-bench.sh [-n N] [-a tcg|kvm]      (default 3, tcg)
#
# The script makes two network namespaces joined by a veth pair (10.233.0.1 for the peer,
# 10.233.0.2 for the container), the way an engine's bridge gives a container one
# interface. A container joins the second namespace by path, once as a container and once
# as a microVM (which carries the interface into the guest, docs/microvm-network.md), and
# runs busybox httpd serving a 100 MB file and a small one. From the peer's namespace,
# busybox wget fetches the big file (throughput) and then the small one 200 times in a
# row (latency). Nothing leaves the two namespaces. Needs root, jq and busybox-static.
set -euo pipefail

n=3
accel=tcg
while getopts "n:a:h" opt; do
	case $opt in
	n) n=$OPTARG ;;
	a) accel=$OPTARG ;;
	*) sed -n '3,15p' "$0"; exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")/../.." && pwd)
moat=${MOAT_BINARY:-$here/moat}
export MOAT_VM_DIR=${MOAT_VM_DIR:-$here/vm}
work=$(mktemp -d /tmp/moat-vm-net-bench.XXXXXX)
holders=()
cleanup() {
	for mode in container microvm; do
		"$moat" --root "$work/state" delete --force "net-$mode" >/dev/null 2>&1 || true
	done
	for p in "${holders[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

# the two namespaces, each held by a sleeping process
unshare --net sleep 3600 &
holders+=($!)
unshare --net sleep 3600 &
holders+=($!)
sleep 0.3
cns=/proc/${holders[0]}/ns/net pns=/proc/${holders[1]}/ns/net
nsenter --net="$cns" ip link add eth0 type veth peer name peer0
nsenter --net="$cns" ip link set peer0 netns "${holders[1]}"
nsenter --net="$cns" ip link set eth0 up
nsenter --net="$cns" ip addr add 10.233.0.2/24 dev eth0
nsenter --net="$pns" ip link set peer0 up
nsenter --net="$pns" ip addr add 10.233.0.1/24 dev peer0

bundle=$work/bundle
mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs"/{proc,dev,sys,tmp,etc,www}
cp /bin/busybox "$bundle/rootfs/bin/busybox"
for a in sh httpd; do ln -s busybox "$bundle/rootfs/bin/$a"; done
head -c 100000000 /dev/zero >"$bundle/rootfs/www/big"
echo small >"$bundle/rootfs/www/small"
chmod -R a+rX "$work"
"$moat" spec --bundle "$bundle"
config() {
	jq --arg iso "$1" --arg a "$accel" --arg ns "$cns" \
		'.process.args = ["httpd", "-f", "-p", "8080", "-h", "/www"] | .process.terminal = false
		| .annotations = {"moat.isolation": $iso, "moat.vm.accel": $a}
		| .linux.namespaces |= map(select(.type != "user") | if .type == "network" then .path = $ns else . end)
		| del(.linux.uidMappings, .linux.gidMappings)' "$work/config.orig" >"$bundle/config.json"
}
cp "$bundle/config.json" "$work/config.orig"

ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'; }
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
peer() { nsenter --net="$pns" busybox "$@"; }

# measure MODE: start the server in MODE, append N runs of each figure to $work/MODE-*
measure() {
	local mode=$1 t0 i k
	config "$mode"
	"$moat" --root "$work/state" run --detach --bundle "$bundle" "net-$mode" >/dev/null
	for ((i = 0; i < 600; i++)); do
		peer wget -q -O /dev/null http://10.233.0.2:8080/small 2>/dev/null && break
		sleep 0.1
	done
	for ((i = 0; i < n; i++)); do
		t0=$EPOCHREALTIME
		peer wget -q -O /dev/null http://10.233.0.2:8080/big
		ms "$t0" "$EPOCHREALTIME" >>"$work/$mode-big"
		t0=$EPOCHREALTIME
		for ((k = 0; k < 200; k++)); do peer wget -q -O /dev/null http://10.233.0.2:8080/small; done
		ms "$t0" "$EPOCHREALTIME" >>"$work/$mode-small"
	done
	"$moat" --root "$work/state" delete --force "net-$mode" >/dev/null
}

measure container
measure microvm
cb=$(median <"$work/container-big") vb=$(median <"$work/microvm-big")
cs=$(median <"$work/container-small") vs=$(median <"$work/microvm-small")
rate() { awk -v ms="$1" 'BEGIN { printf "%.0f MB/s", 100 / (ms / 1000) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b / a }'; }
echo "runs: $n; accelerator $accel; kernel $(uname -r), $("$moat" --version | head -1)"
echo
echo "| measurement (from a peer namespace over a veth) | container | microVM | microVM/container |"
echo "|---|---|---|---|"
echo "| 100 MB download | $cb ms ($(rate "$cb")) | $vb ms ($(rate "$vb")) | $(ratio "$cb" "$vb") |"
echo "| 200 small requests, one after another | $cs ms | $vs ms | $(ratio "$cs" "$vs") |"
