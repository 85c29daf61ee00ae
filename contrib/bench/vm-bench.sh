#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A microVM's time to first command, cold and restored from a snapshot, against the VM's boot.
#
#   contrib/bench/vm-bench.sh [-n N] [-m MOAT_BINARY] [-d VM_DIR] [-a tcg|kvm]
#
# Interleaved, N times each:
#   bare      QEMU started with moat's command line, from moat_qemu.py (same kernel,
#             initramfs, machine, 9p share, agent port), timed until the guest agent sends
#             READY on its port: the cold boot alone.
#   cold      `moat run` of `echo` in microVM mode with moat.vm.boot=cold: until its output's
#             first byte (the first command), and until moat exits (boot, START, the
#             workload, SHUTDOWN, and all of moat's container setup: namespaces, cgroup, jail).
#             Its root is shared over virtio-fs where virtiofsd is installed.
#   cold-9p   the same with moat.vm.share=9p: what virtiofsd costs a boot.
#   snapshot  the same, restored from a snapshot (vm-snapshot.h; the cache is made before
#             the timed runs, in a directory of the benchmark's own).
#   sandbox   `moat sandbox create --isolation microvm`, then two `moat sandbox exec` of
#             /bin/true: each step's time; the second exec is a session's second command.
# It prints the medians and their ratios to the bare boot, then the resident memory of QEMU
# and of the supervisor (the container's init) for one running microVM, and the guest image
# and snapshot sizes. VM_DIR holds moat-guest-kernel and moat-initramfs (default: the build
# tree's vm/). Must run as root.
set -euo pipefail

n=10
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
	*) sed -n '3,22p' "$0"; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "vm-bench: must run as root" >&2; exit 1; }
export MOAT_VM_DIR=$vmdir

work=$(mktemp -d /tmp/moat-vm-bench.XXXXXX)
cleanup() {
	for id in rss-cold rss-snapshot; do
		"$moat" --root "$work/state" delete --force "$id" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

bundle=$work/bundle
mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs"/{proc,dev,sys,tmp,etc}
cp /bin/busybox "$bundle/rootfs/bin/busybox"
for a in true sh sleep echo; do ln -s busybox "$bundle/rootfs/bin/$a"; done
chmod 755 "$work" "$bundle" "$bundle/rootfs"
"$moat" spec --bundle "$bundle"
# as an engine writes it (no user namespace: moat adds one), in a microVM
jq --arg a "$accel" '.process.args = ["echo", "first"] | .process.terminal = false
	| .annotations = {"moat.isolation": "microvm", "moat.vm.accel": $a}
	| .linux.namespaces |= map(select(.type != "user")) | del(.linux.uidMappings, .linux.gidMappings)' \
	"$bundle/config.json" >"$work/c" && mv "$work/c" "$bundle/config.json"
: >"$work/in"
# the same bundle three times: moat.vm.boot=cold, the same on 9p, and =snapshot
for boot in cold cold-9p snapshot; do
	mkdir "$work/$boot"
	ln -s ../bundle/rootfs "$work/$boot/rootfs"
	jq --arg b "${boot%-9p}" '.annotations["moat.vm.boot"] = $b' "$bundle/config.json" >"$work/$boot/config.json"
done
jq '.annotations["moat.vm.share"] = "9p"' "$work/cold-9p/config.json" >"$work/c" && mv "$work/c" "$work/cold-9p/config.json"

python3 - "$n" "$moat" "$work" "$vmdir" "$accel" "$(dirname "$0")" <<'EOF'
import os, socket, statistics, subprocess, sys, time

n, moat, work, vmdir, accel = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
sys.path.insert(0, sys.argv[6])
from moat_qemu import qemu_argv, wait_ready
bundle = os.path.join(work, "bundle")

def bare_boot():
    """QEMU with moat's command line, until the agent's READY (frame type 0x81)."""
    host, guest = socket.socketpair()
    argv = qemu_argv(vmdir, f"{bundle}/rootfs", guest.fileno(), accel)
    t0 = time.monotonic()
    p = subprocess.Popen(argv, pass_fds=(guest.fileno(),))
    guest.close()
    wait_ready(host, "bare boot")
    t1 = time.monotonic()
    p.kill(); p.wait(); host.close()
    return (t1 - t0) * 1000

def moat_run(i, boot):
    """moat run of echo: (ms to its output's first byte, ms to moat's exit)."""
    env = dict(os.environ, MOAT_VM_SNAPSHOT_DIR=f"{work}/snapshots")
    t0 = time.monotonic()
    p = subprocess.Popen([moat, "--root", f"{work}/state", "run", "--bundle", f"{work}/{boot}",
                          f"{boot}{i}"], stdin=open(f"{work}/in"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    first = p.stdout.read(1)
    t1 = time.monotonic()
    rest = p.stdout.read()
    err = p.stderr.read()
    p.wait()
    t2 = time.monotonic()
    if p.returncode != 0 or first + rest != b"first\n":
        raise SystemExit(f"moat run ({boot}) failed: {err.decode().strip()}")
    return (t1 - t0) * 1000, (t2 - t0) * 1000

def sandbox(i):
    """moat sandbox create, exec, exec: the ms of each."""
    env = dict(os.environ, MOAT_VM_SNAPSHOT_DIR=f"{work}/snapshots")
    base = [moat, "--root", f"{work}/state", "sandbox"]
    steps = [["create", "--isolation", "microvm", "--accel", accel, "--rootfs",
              f"{bundle}/rootfs", f"s{i}"],
             ["exec", f"s{i}", "--", "/bin/true"], ["exec", f"s{i}", "--", "/bin/true"]]
    times = []
    try:
        for step in steps:
            t0 = time.monotonic()
            r = subprocess.run(base + step, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=env)
            times.append((time.monotonic() - t0) * 1000)
            if r.returncode != 0:
                raise SystemExit(f"moat sandbox {step[0]} failed: {r.stderr.decode().strip()}")
    finally:
        subprocess.run(base + ["rm", "--force", f"s{i}"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env)
    return times

med = statistics.median
bare, cold, cold9p, snap, sbx = [], [], [], [], []
# warm-up: the page cache, and the snapshot made
bare_boot(); moat_run("warm", "cold"); moat_run("warm", "snapshot"); sandbox("warm")
for i in range(n):
    bare.append(bare_boot())
    cold.append(moat_run(i, "cold"))
    cold9p.append(moat_run(i, "cold-9p"))
    snap.append(moat_run(i, "snapshot"))
    sbx.append(sandbox(i))
mb = med(bare)
print(f"runs: {n} each (interleaved), accelerator {accel}, host kernel {os.uname().release}")
print(f"bare QEMU boot to the agent's READY        median {mb:8.1f} ms")
for name, runs in (("cold", cold), ("cold-9p", cold9p), ("snapshot", snap)):
    f, t = med([r[0] for r in runs]), med([r[1] for r in runs])
    print(f"moat run ({name:8}): first command     median {f:8.1f} ms  ({f / mb:.2f} of the boot)")
    print(f"moat run ({name:8}): moat's exit       median {t:8.1f} ms  ({t / mb:.2f} of the boot)")
for k, step in enumerate(("create", "first exec", "second exec")):
    v = med([r[k] for r in sbx])
    print(f"sandbox (snapshot): {step:12}         median {v:8.1f} ms  ({v / mb:.2f} of the boot)")
EOF

# resident memory of one running microVM, booted and restored
export MOAT_VM_SNAPSHOT_DIR=$work/snapshots
rss() { awk '/^VmRSS:/ { print $2 / 1024 }' "/proc/$1/status"; }
for boot in cold snapshot; do
	jq '.process.args = ["sleep", "1000"]' "$work/$boot/config.json" >"$work/c" && mv "$work/c" "$work/$boot/config.json"
	"$moat" --root "$work/state" run -d --bundle "$work/$boot" "rss-$boot" <"$work/in" >/dev/null 2>&1
	sleep 3
	init=$("$moat" --root "$work/state" state "rss-$boot" | jq .pid)
	qemu=$(pgrep -P "$init" qemu-system)
	share=$("$moat" --root "$work/state" state "rss-$boot" | jq -r '.annotations["moat.vm.share"]')
	printf 'resident memory (%s): QEMU %.1f MiB, supervisor %.1f MiB (guest memory 256 MiB, %s)\n' \
		"$boot" "$(rss "$qemu")" "$(rss "$init")" "$share"
	"$moat" --root "$work/state" delete --force "rss-$boot" >/dev/null 2>&1
done
printf 'guest kernel %s: %.1f MB, initramfs: %.1f MB\n' "$(file -b "$vmdir/moat-guest-kernel" | cut -d, -f1)" \
	"$(($(stat -c %s "$vmdir/moat-guest-kernel") / 1000))e-3" "$(($(stat -c %s "$vmdir/moat-initramfs") / 1000))e-3"
snapshot=$(find "$work/snapshots" -maxdepth 1 -type f ! -name '*.lock' | head -1)
# the guest's RAM, sparse, then the stream (docs/microvm-snapshot.md): its size and its blocks
printf 'snapshot: %.1f MB, %.1f MB on disk\n' "$(($(stat -c %s "$snapshot") / 1000))e-3" \
	"$(($(stat -c '%b * %B' "$snapshot") / 1000))e-3"
