#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# How fast a workload's stdout reaches the caller: a container against a microVM.
#
#   contrib/bench/relay-bench.sh [-n N] [-s MIB] [-m MOAT_BINARY] [-d VM_DIR] [-a tcg|kvm]
#
# `moat run` of a workload that writes MIB MiB to its stdout, read by a reader that keeps
# up (Python, 1 MiB reads), N times per mode and writer, interleaved. The rate is the bytes
# over the time from the first byte to the end of the stream, so the microVM's boot is not
# in it. Two writers:
#   dd   dd if=/dev/zero bs=64k: the writer costs little, so the rate is the relay's
#   yes  yes | head -c: what the issue measured; under TCG the guest's own emulated `yes`
#        and `head` bound the microVM's rate, not the relay
# In a container moat's `run` hands the workload the caller's stdout, so nothing relays;
# in a microVM the agent reads the pipe and writes DATA frames to the virtio-serial port,
# QEMU writes them to its socket, and the supervisor writes them to the caller. Prints the
# medians and container/microVM for each writer, then the guest's own floor for each: the
# rate at which the writer in the microVM writes the same bytes to /dev/null, timed between
# a byte the workload prints before it and one after, which no relay can beat under that
# accelerator, and container/floor, the best container/microVM any relay could reach.
# Must run as root.
set -euo pipefail

n=5
mib=64
here=$(cd "$(dirname "$0")/../.." && pwd)
moat=${MOAT_BINARY:-$here/moat}
vmdir=${MOAT_VM_DIR:-$here/vm}
accel=tcg
while getopts "n:s:m:d:a:h" opt; do
	case $opt in
	n) n=$OPTARG ;;
	s) mib=$OPTARG ;;
	m) moat=$OPTARG ;;
	d) vmdir=$OPTARG ;;
	a) accel=$OPTARG ;;
	*) sed -n '3,17p' "$0"; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "relay-bench: must run as root" >&2; exit 1; }
export MOAT_VM_DIR=$vmdir

work=$(mktemp -d /tmp/moat-relay-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# one bundle per mode, the same busybox rootfs and moat's default config otherwise
for mode in container microvm; do
	bundle=$work/$mode
	mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs"/{proc,dev,sys,tmp,etc}
	cp /bin/busybox "$bundle/rootfs/bin/busybox"
	for a in sh dd yes head; do ln -s busybox "$bundle/rootfs/bin/$a"; done
	chmod 755 "$bundle" "$bundle/rootfs"
	"$moat" spec --bundle "$bundle"
	if [ "$mode" = microvm ]; then
		jq --arg a "$accel" '.annotations = {"moat.isolation": "microvm", "moat.vm.accel": $a}
			| .linux.namespaces |= map(select(.type != "user"))
			| del(.linux.uidMappings, .linux.gidMappings)' \
			"$bundle/config.json" >"$work/c" && mv "$work/c" "$bundle/config.json"
	fi
done

python3 - "$n" "$mib" "$moat" "$work" "$accel" <<'EOF'
import json, os, statistics, subprocess, sys, time

n, mib, moat, work, accel = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
size = mib << 20
writers = {
    "dd": f"dd if=/dev/zero bs=64k count={size >> 16}",
    "yes": f"yes | head -c {size}",
}

def set_args(mode, script):
    path = f"{work}/{mode}/config.json"
    with open(path) as f:
        cfg = json.load(f)
    cfg["process"]["args"] = ["/bin/sh", "-c", script]
    cfg["process"]["terminal"] = False
    with open(path, "w") as f:
        json.dump(cfg, f)

def rate(mode, i):
    """MiB/s from the first byte of the workload's stdout to its end."""
    p = subprocess.Popen([moat, "--root", f"{work}/state", "run", "--bundle", f"{work}/{mode}",
                          f"{mode}{i}"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    fd, got, first = p.stdout.fileno(), 0, None
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        if first is None:
            first = time.monotonic()
        got += len(b)
    last = time.monotonic()
    err = p.stderr.read().decode().strip()
    if p.wait() != 0 or got != size:
        raise SystemExit(f"relay-bench: {mode} run {i}: exit {p.returncode}, {got} of {size} bytes: {err}")
    return got / (1 << 20) / (last - first)

print(f"runs: {n} per mode and writer (interleaved), {mib} MiB each, accelerator {accel}, "
      f"host kernel {os.uname().release}")
container = {}
for name, script in writers.items():
    res = {"container": [], "microvm": []}
    for mode in res:
        set_args(mode, script + " 2>/dev/null")
    for i in range(n):
        for mode in res:
            res[mode].append(rate(mode, f"{name}{i}"))
    c, v = statistics.median(res["container"]), statistics.median(res["microvm"])
    container[name] = c
    print(f"{name:4} container median {c:8.1f} MiB/s   microVM median {v:8.1f} MiB/s   "
          f"container/microVM {c / v:5.2f}")

def floor(i):
    """MiB/s of a writer to /dev/null in the guest: from the byte before it to the end."""
    p = subprocess.Popen([moat, "--root", f"{work}/state", "run", "--bundle", f"{work}/microvm",
                          f"floor{i}"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    first = None
    while os.read(p.stdout.fileno(), 64):
        first = first or time.monotonic()
    last = time.monotonic()
    if p.wait() != 0 or first is None:
        raise SystemExit(f"relay-bench: floor run {i}: exit {p.returncode}")
    return mib / (last - first)

for name, script in writers.items():
    set_args("microvm", f"echo a; {script} >/dev/null 2>&1; echo b")
    g = statistics.median(floor(f"{name}{i}") for i in range(n))
    print(f"{name:4} to /dev/null inside the microVM: median {g:8.1f} MiB/s (the guest's own "
          f"floor)   container/floor {container[name] / g:5.2f}")
EOF
