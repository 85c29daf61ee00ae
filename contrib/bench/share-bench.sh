#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A microVM's root share as moat runs it, jailed: virtio-fs (virtiofsd) against 9p (QEMU).
#
#   contrib/bench/share-bench.sh [-n N] [-m MOAT_BINARY] [-d VM_DIR] [-a tcg|kvm]
#
# The rootfs holds 2000 small files in /d and a 50 MB file. Each run is a `moat run`, cold
# boot, of a script that times in the guest (/proc/uptime, 10 ms steps) `ls -lR /d` (a stat
# of every file) twice and a read of the big file twice: the first time, and again with
# whatever the guest cached. Interleaved, N runs per share (moat.vm.share=virtiofs, =9p);
# it prints the medians and the 9p/virtio-fs ratios. Must run as root.
set -euo pipefail

n=5
here=$(cd "$(dirname "$0")/../.." && pwd)
moat=${MOAT_BINARY:-$here/moat}
vmdir=${MOAT_VM_DIR:-$here/vm}
accel=tcg
while getopts "n:m:d:a:h" opt; do
	case $opt in
	n) n=$OPTARG ;;
	m) moat=$OPTARG ;;
	d) vmdir=$OPTARG ;;
	a) accel=$OPTARG ;;
	*) sed -n '3,11p' "$0"; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "share-bench: must run as root" >&2; exit 1; }
export MOAT_VM_DIR=$vmdir

work=$(mktemp -d /tmp/moat-share-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
mkdir -p "$rootfs/bin" "$rootfs"/{proc,dev,sys,tmp,etc,d}
cp /bin/busybox "$rootfs/bin/busybox"
for a in sh ls cat cut echo; do ln -s busybox "$rootfs/bin/$a"; done
for i in $(seq 2000); do echo "$i" >"$rootfs/d/f$i"; done
head -c 50000000 /dev/zero >"$rootfs/big"
cat >"$rootfs/bin/probe" <<'EOF'
#!/bin/sh
t() { cut -d' ' -f1 /proc/uptime; }
a=$(t); ls -lR /d >/dev/null; b=$(t); ls -lR /d >/dev/null; c=$(t)
cat /big >/dev/null; d=$(t); cat /big >/dev/null; e=$(t)
echo "$a $b $c $d $e"
EOF
chmod 755 "$rootfs/bin/probe" "$work"
for share in virtiofs 9p; do
	mkdir "$work/$share"
	ln -s ../rootfs "$work/$share/rootfs"
	"$moat" spec --bundle "$work/$share"
	jq --arg a "$accel" --arg s "$share" '.process.args = ["/bin/probe"] | .process.terminal = false
		| .annotations = {"moat.isolation": "microvm", "moat.vm.accel": $a,
			"moat.vm.boot": "cold", "moat.vm.share": $s}
		| .linux.namespaces |= map(select(.type != "user"))
		| del(.linux.uidMappings, .linux.gidMappings)' \
		"$work/$share/config.json" >"$work/c" && mv "$work/c" "$work/$share/config.json"
done

for i in $(seq "$n"); do
	for share in virtiofs 9p; do
		out=$("$moat" --root "$work/state" run --bundle "$work/$share" "$share$i" </dev/null)
		echo "$share $out"
	done
done | awk '
	{ s = $1; k[s]++; st1[s, k[s]] = $3 - $2; st2[s, k[s]] = $4 - $3
	  rd1[s, k[s]] = $5 - $4; rd2[s, k[s]] = $6 - $5 }
	function med(a, s,   i, m, v, j, t) {
		m = k[s]; for (i = 1; i <= m; i++) v[i] = a[s, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
	END {
		printf "runs: %d per share (interleaved), cold boots, seconds in the guest (medians)\n", k["9p"]
		printf "%-10s %10s %10s %10s %10s\n", "share", "stat 1st", "stat 2nd", "read 1st", "read 2nd"
		split("virtiofs 9p", names, " ")
		for (n = 1; n <= 2; n++) { s = names[n]
			r[s, 1] = med(st1, s); r[s, 2] = med(st2, s); r[s, 3] = med(rd1, s); r[s, 4] = med(rd2, s)
			printf "%-10s %10.2f %10.2f %10.2f %10.2f\n", s, r[s, 1], r[s, 2], r[s, 3], r[s, 4] }
		printf "%-10s", "9p/virtiofs"
		for (c = 1; c <= 4; c++) {
			ratio = "-"
			if (r["virtiofs", c] != 0) ratio = sprintf("%.1f", r["9p", c] / r["virtiofs", c])
			printf " %10s", ratio
		}
		printf "\n" }'
