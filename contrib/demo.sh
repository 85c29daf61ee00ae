#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# moat's demo: on a fresh Debian 12 machine, as root, install what moat needs,
# build it (with the microVM's guest kernel), run a hardened container from a
# busybox root filesystem, and then moat's main job: `moat sandbox run` of a
# Python program in a microVM and in a container, a session (create, cp,
# exec, diff, rm), and a runaway program stopped by its timeout.
#
#   bash contrib/demo.sh
#
# The Python root filesystem is made once from Debian's packages
# (contrib/sandbox/mkrootfs-python.sh, cached under /var/cache/moat); the
# guest kernel is built once from linux-source-6.1 (cached too). The
# microVM runs under TCG unless MOAT_DEMO_ACCEL=kvm (these development
# machines' nested KVM cannot run a guest kernel at useful speed). Nothing
# else is left behind: the bundle and the state live in a temp directory
# that is removed at the end, and each sandbox destroys itself.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "demo: run as root (moat creates namespaces and cgroups)" >&2
	exit 1
fi

# Install what moat needs (quick when it is there) and build (incremental).
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends build-essential autoconf automake libtool \
	pkg-config libyajl-dev libseccomp-dev libcap-dev libselinux1-dev libarchive-dev libsystemd-dev \
	busybox-static jq procps mmdebstrap qemu-system-x86 linux-source-6.1 flex bison bc \
	libelf-dev xz-utils >/dev/null
if ! [ -f Makefile ]; then
	./autogen.sh >/dev/null 2>&1
	./configure -q
fi
make -s -j"$(nproc)"
make -s vm-kernel >/dev/null

work=$(mktemp -d /tmp/moat-demo.XXXXXX)
chmod 755 "$work"
trap './moat --root "$work/state" delete --force demo >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
moat() { ./moat --root "$work/state" "$@"; }
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

# A root filesystem: busybox-static and its applets.
mkdir -p "$work/bundle/rootfs"/{bin,proc,dev,sys,tmp,etc}
cp /bin/busybox "$work/bundle/rootfs/bin/busybox"
for applet in $(/bin/busybox --list); do
	[ "$applet" = busybox ] || ln -s busybox "$work/bundle/rootfs/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$work/bundle/rootfs/etc/passwd"
printf 'root:x:0:\nnobody:x:65534:\n' >"$work/bundle/rootfs/etc/group"

# What the container will report about itself.
cat >"$work/bundle/rootfs/bin/probe" <<'PROBE'
#!/bin/sh
echo "inside:             $(id)"
echo "uid map:            $(cat /proc/self/uid_map)"
echo "capabilities:       $(grep CapEff /proc/self/status)"
echo "no_new_privs:       $(grep NoNewPrivs /proc/self/status)"
echo "network interfaces: $(ls /sys/class/net)"
echo "PID in container:   $$"
touch /rootfs-write 2>/dev/null || echo "root filesystem:    read-only"
echo hi >/tmp/x && echo "/tmp:               writable tmpfs"
PROBE
chmod 755 "$work/bundle/rootfs/bin/probe"

cfg() { jq "$1" "$work/bundle/config.json" >"$work/config.tmp" && mv "$work/config.tmp" "$work/bundle/config.json"; }

say moat spec --bundle bundle
moat spec --bundle "$work/bundle"
jq -c '{process: {user: .process.user, capabilities: .process.capabilities, noNewPrivileges: .process.noNewPrivileges}, namespaces: [.linux.namespaces[].type], uidMappings: .linux.uidMappings, readonlyRoot: .root.readonly}' "$work/bundle/config.json"
cfg '.process.args = ["/bin/probe"]'

say moat run --bundle bundle demo
moat run --bundle "$work/bundle" demo

say "moat create --bundle bundle demo; moat state demo"
cfg '.process.args = ["sleep", "30"]'
moat create --bundle "$work/bundle" demo
moat state demo
pid=$(moat state demo | jq .pid)
say "moat start demo; moat list"
moat start demo
moat list
echo "host view of the container's process: $(ps -o user=,pid=,comm= -p "$pid")"
say "moat kill demo KILL; moat delete demo"
moat kill demo KILL
while [ "$(moat state demo | jq -r .status)" != stopped ]; do sleep 0.1; done
moat delete demo
moat list

# --- moat sandbox: a program nobody reviewed, under moat's contract ---------
# The seeds' example: the task's files are copied in, the program runs as an
# unprivileged user, and the caller parses its answer out of the result.
python_root=$(bash contrib/sandbox/mkrootfs-python.sh | tail -n 1)
mkdir -p "$work/task"
cat >"$work/task/sum.py" <<'PY'
import json, os, sys
numbers = [3, 4, 5, 6, 7]
print(f"running as uid {os.getuid()}", file=sys.stderr)
print(json.dumps({"total": sum(numbers)}))
PY
export MOAT_VM_DIR=${MOAT_VM_DIR:-$PWD/vm}
accel=${MOAT_DEMO_ACCEL:-tcg}

for mode in microvm container; do
	say "moat sandbox run --rootfs python3 --isolation $mode --copy-in task:task -- python3 task/sum.py"
	./moat sandbox run --rootfs "$python_root" --isolation "$mode" --accel "$accel" \
		--copy-in "$work/task:task" --timeout 60s --memory 512m -- python3 task/sum.py \
		>"$work/result.json"
	jq -c '{exit, isolation: (.isolation | {mode, accelerator}),
		time: (.time | {setup_ms, run_ms, teardown_ms}), stdout: .stdout.text,
		stderr: .stderr.text}' "$work/result.json"
	total=$(jq -r .stdout.text "$work/result.json" | jq .total)
	echo "the caller reads: total = $total"
	[ "$total" = 25 ]
done

# A session: one sandbox across several commands, each with its own result.
session=demo-$$
say "moat sandbox create --rootfs python3 --lifetime 5m $session; cp; exec; exec; diff; rm"
./moat sandbox create --rootfs "$python_root" --lifetime 5m --timeout 30s "$session"
trap './moat sandbox rm --force "$session" >/dev/null 2>&1 || true; ./moat --root "$work/state" delete --force demo >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
./moat sandbox cp "$work/task" "$session:."
./moat sandbox exec "$session" -- python3 task/sum.py >"$work/result.json"
jq -c '{exit, stdout: .stdout.text}' "$work/result.json"
./moat sandbox exec "$session" -- python3 -c 'open("answer.txt", "w").write("25\n")' |
	jq -c '{exit, files: [.files.entries[] | {path, change, size}]}'
./moat sandbox cp "$session:answer.txt" "$work/answer.txt"
echo "copied out: $(cat "$work/answer.txt")"
./moat sandbox diff "$session" | jq -c '[.files.entries[] | .path]'
./moat sandbox rm "$session"
[ "$(cat "$work/answer.txt")" = 25 ]

say "moat sandbox run --timeout 2s -- python3 -c 'while True: pass'"
status=0
./moat sandbox run --rootfs "$python_root" --timeout 2s -- python3 -c 'while True: pass' \
	>"$work/result.json" || status=$?
jq -c '{exit, time: (.time | {run_ms})}' "$work/result.json"
echo "exit status $status, reason: $(jq -r .exit.reason "$work/result.json")"
[ "$(jq -r .exit.reason "$work/result.json")" = timeout ]
