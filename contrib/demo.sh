#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# moat's demo: on a fresh Debian 12 machine, as root, install what moat needs,
# build it, and run a hardened container from a busybox root filesystem.
#
#   bash contrib/demo.sh
#
# Nothing is left behind: the bundle and the state live in a temp directory
# that is removed at the end.
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
	pkg-config libyajl-dev libseccomp-dev libcap-dev libselinux1-dev busybox-static jq procps \
	>/dev/null
if ! [ -f Makefile ]; then
	./autogen.sh >/dev/null 2>&1
	./configure -q
fi
make -s -j"$(nproc)"

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
