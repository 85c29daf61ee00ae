#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What moat's microVM mode costs on top of the VM itself.
#
#   contrib/bench/vm-bench.sh [-n N] [-m MOAT_BINARY] [-d VM_DIR] [-a tcg|kvm]
#
# Interleaved, N times each:
#   bare  QEMU started with moat's command line, from moat_qemu.py (same kernel, initramfs,
#         machine, 9p share, agent port), timed until the guest agent sends READY on its
#         port: the boot alone.
#   moat  `moat run` of /bin/true in microVM mode, start to exit: boot, START, the workload,
#         SHUTDOWN, and all of moat's container setup (namespaces, cgroup, jail).
# It prints both medians and their ratio, then the resident memory of QEMU and of the
# supervisor (the container's init) for one running microVM, and the guest image sizes.
# VM_DIR holds moat-guest-kernel and moat-initramfs (default: the build tree's vm/).
# Must run as root.
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
	*) sed -n '3,17p' "$0"; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "vm-bench: must run as root" >&2; exit 1; }
export MOAT_VM_DIR=$vmdir

work=$(mktemp -d /tmp/moat-vm-bench.XXXXXX)
cleanup() {
	"$moat" --root "$work/state" delete --force rss >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

bundle=$work/bundle
mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs"/{proc,dev,sys,tmp,etc}
cp /bin/busybox "$bundle/rootfs/bin/busybox"
for a in true sh sleep; do ln -s busybox "$bundle/rootfs/bin/$a"; done
chmod 755 "$work" "$bundle" "$bundle/rootfs"
"$moat" spec --bundle "$bundle"
# as an engine writes it (no user namespace: moat adds one), in a microVM
jq --arg a "$accel" '.process.args = ["/bin/true"] | .process.terminal = false
	| .annotations = {"moat.isolation": "microvm", "moat.vm.accel": $a}
	| .linux.namespaces |= map(select(.type != "user")) | del(.linux.uidMappings, .linux.gidMappings)' \
	"$bundle/config.json" >"$work/c" && mv "$work/c" "$bundle/config.json"
: >"$work/in"

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

def moat_run(i):
    t0 = time.monotonic()
    r = subprocess.run([moat, "--root", f"{work}/state", "run", "--bundle", bundle, f"b{i}"],
                       stdin=open(f"{work}/in"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t1 = time.monotonic()
    if r.returncode != 0:
        raise SystemExit(f"moat run failed: {r.stderr.decode().strip()}")
    return (t1 - t0) * 1000

bare, full = [], []
bare_boot(); moat_run("warm")
for i in range(n):
    bare.append(bare_boot())
    full.append(moat_run(i))
mb, mf = statistics.median(bare), statistics.median(full)
print(f"runs: {n} each (interleaved), accelerator {accel}, host kernel {os.uname().release}")
print(f"bare QEMU boot to the agent's READY   median {mb:8.1f} ms")
print(f"moat run /bin/true in a microVM       median {mf:8.1f} ms")
print(f"moat/bare: {mf / mb:.2f}  (moat adds {mf - mb:.1f} ms)")
EOF

# resident memory of one running microVM
jq '.process.args = ["sleep", "1000"]' "$bundle/config.json" >"$work/c" && mv "$work/c" "$bundle/config.json"
"$moat" --root "$work/state" run -d --bundle "$bundle" rss <"$work/in" >/dev/null 2>&1
sleep 3
init=$("$moat" --root "$work/state" state rss | jq .pid)
qemu=$(pgrep -P "$init" qemu-system)
rss() { awk '/^VmRSS:/ { print $2 / 1024 }' "/proc/$1/status"; }
printf 'resident memory: QEMU %.1f MiB, supervisor %.1f MiB (guest memory 256 MiB, 9p: no virtiofsd)\n' \
	"$(rss "$qemu")" "$(rss "$init")"
printf 'guest kernel %s: %.1f MB, initramfs: %.1f MB\n' "$(file -b "$vmdir/moat-guest-kernel" | cut -d, -f1)" \
	"$(($(stat -c %s "$vmdir/moat-guest-kernel") / 1000))e-3" "$(($(stat -c %s "$vmdir/moat-initramfs") / 1000))e-3"
