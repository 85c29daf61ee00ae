#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# moat's egress proxy against a direct loopback connection on the host: the throughput of a
# 100 MB download and the time of 200 small requests, medians of N runs and their ratios,
# and the proxy's memory.
#
#   contrib/bench/egress-bench.sh [-n N] [-m]      (default 5 runs)
#
# -m: also a microVM session (TCG), whose wget reaches the same proxy over the egress
# tunnel (docs/egress.md): a third column, and its ratio to the container's.
#
# The upstream is busybox httpd on the host's 127.0.0.1. The client is busybox wget, on the
# host for "direct", and inside a moat sandbox session (container mode, --allow with
# +loopback and a --resolve pin) for "proxied", where the figure is the exec's
# time.run_ms: the command's wall time inside, which includes starting it (a few ms).
# Memory: the proxy process's proportional set size (PSS) while idle, and the PSS of one
# connection's child during a download. Needs root, jq and busybox-static.
set -euo pipefail

n=5
vm=
while [ $# -gt 0 ]; do
	case $1 in
	-n) n=$2; shift 2 ;;
	-m) vm=1; shift ;;
	*) sed -n '3,18p' "$0"; exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")/../.." && pwd)
moat=${MOAT_BINARY:-$here/moat}
work=$(mktemp -d /tmp/moat-egress-bench.XXXXXX)
name=egress-bench-$$
port=$((20000 + RANDOM % 20000))
httpd=
cleanup() {
	"$moat" sandbox rm --force "$name" >/dev/null 2>&1 || true
	[ -z "$vm" ] || "$moat" sandbox rm --force "$name-vm" >/dev/null 2>&1 || true
	[ -z "$httpd" ] || kill "$httpd" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

rootfs=$work/rootfs
mkdir -p "$rootfs"/{bin,dev,proc,sys,tmp,etc} "$work/www"
cp /bin/busybox "$rootfs/bin/busybox"
for a in sh wget seq; do ln -s busybox "$rootfs/bin/$a"; done
head -c 100000000 /dev/zero >"$work/www/big"
echo small >"$work/www/small"
busybox httpd -f -p "127.0.0.1:$port" -h "$work/www" &
httpd=$!
sleep 0.5

"$moat" sandbox create --rootfs "$rootfs" --allow "up.test:$port+loopback" \
	--resolve up.test=127.0.0.1 --timeout 5m "$name" >/dev/null
if [ -n "$vm" ]; then
	: "${MOAT_VM_DIR:=$here/vm}"
	export MOAT_VM_DIR
	"$moat" sandbox create --rootfs "$rootfs" --isolation microvm --accel tcg \
		--allow "up.test:$port+loopback" --resolve up.test=127.0.0.1 --timeout 10m "$name-vm" >/dev/null
fi
keeper=$("$moat" sandbox ls --format json | jq -r --arg n "$name" '.[] | select(.name == $n) | .keeper_pid')
proxy=$(pgrep -P "$keeper" -u nobody | head -1)
pss() { awk '/^Pss:/ { print $2 }' "/proc/$1/smaps_rollup"; }
idle_pss=$(pss "$proxy")

ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'; }
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
inside() { "$moat" sandbox exec "$2" -- sh -c "$1" | jq -r '.time.run_ms'; }

big_url=http://127.0.0.1:$port/big
# shellcheck disable=SC2016 # $(seq) is the sandbox shell's
small_loop='for i in $(seq 200); do wget -q -O /dev/null '
for f in d-big p-big d-small p-small v-big v-small; do : >"$work/$f"; done
for ((i = 0; i < n; i++)); do
	t0=$EPOCHREALTIME
	busybox wget -q -O /dev/null "$big_url"
	ms "$t0" "$EPOCHREALTIME" >>"$work/d-big"
	inside "wget -q -O /dev/null http://up.test:$port/big" "$name" >>"$work/p-big"
	[ -z "$vm" ] || inside "wget -q -O /dev/null http://up.test:$port/big" "$name-vm" >>"$work/v-big"
	t0=$EPOCHREALTIME
	for ((k = 0; k < 200; k++)); do busybox wget -q -O /dev/null "http://127.0.0.1:$port/small"; done
	ms "$t0" "$EPOCHREALTIME" >>"$work/d-small"
	inside "${small_loop}http://up.test:$port/small; done" "$name" >>"$work/p-small"
	[ -z "$vm" ] || inside "${small_loop}http://up.test:$port/small; done" "$name-vm" >>"$work/v-small"
done
# one connection's child, during a download
"$moat" sandbox exec "$name" -- sh -c "wget -q -O - http://up.test:$port/big | (sleep 1; cat >/dev/null)" \
	>/dev/null &
reader=$!
sleep 0.7
child=$(pgrep -P "$proxy" | head -1)
conn_pss=$(pss "$child" 2>/dev/null || echo -)
wait "$reader"

db=$(median <"$work/d-big") pb=$(median <"$work/p-big")
ds=$(median <"$work/d-small") ps=$(median <"$work/p-small")
rate() { awk -v ms="$1" 'BEGIN { printf "%.0f MB/s", 100 / (ms / 1000) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b / a }'; }
echo "runs: $n; kernel $(uname -r), $("$moat" --version | head -1)"
echo
if [ -z "$vm" ]; then
	echo "| measurement | direct (host) | through moat's proxy | proxy/direct |"
	echo "|---|---|---|---|"
	echo "| 100 MB download | $db ms ($(rate "$db")) | $pb ms ($(rate "$pb")) | $(ratio "$db" "$pb") |"
	echo "| 200 small requests, one after another | $ds ms | $ps ms | $(ratio "$ds" "$ps") |"
else
	vb=$(median <"$work/v-big") vs=$(median <"$work/v-small")
	echo "| measurement | direct (host) | container, proxy | microVM (TCG), tunnel and proxy | proxy/direct | microVM/container |"
	echo "|---|---|---|---|---|---|"
	echo "| 100 MB download | $db ms ($(rate "$db")) | $pb ms ($(rate "$pb")) | $vb ms ($(rate "$vb")) | $(ratio "$db" "$pb") | $(ratio "$pb" "$vb") |"
	echo "| 200 small requests, one after another | $ds ms | $ps ms | $vs ms | $(ratio "$ds" "$ps") | $(ratio "$ps" "$vs") |"
fi
echo
echo "proxy memory (PSS): ${idle_pss} KiB idle, ${conn_pss} KiB per open connection's child"
