#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by run-bench.sh, run-phases.sh and run-timeline.sh: the private mount namespace
# they run in, and the bundle they time, the same for every runtime.

# enter_private_mounts NAME TOOL ARG...: the first time through, check that we run as root
# and that TOOL (none when empty) is installed, then run this script again with ARG... in a
# private mount namespace, where leave_hybrid may unmount; it does not return. Inside, it
# returns at once.
enter_private_mounts() {
	local name=$1 tool=$2
	shift 2
	[ -z "${MOAT_BENCH_INNER:-}" ] || return 0
	[ "$(id -u)" = 0 ] || { echo "$name: must run as root" >&2; exit 1; }
	[ -z "$tool" ] || command -v "$tool" >/dev/null ||
		{ echo "$name: needs $tool" >&2; exit 1; }
	exec env MOAT_BENCH_INNER=1 unshare -m --propagation private "$0" "$@"
}

# leave_hybrid: in the private mount namespace the caller runs in, unmount the cgroup2
# hierarchy at /sys/fs/cgroup/unified: crun 1.8 refuses hybrid hosts ("cgroups in hybrid mode
# not supported") otherwise. The host's mounts are not touched.
leave_hybrid() {
	if mountpoint -q /sys/fs/cgroup/unified; then
		umount /sys/fs/cgroup/unified
	fi
}

# make_run_bundle DIR MOAT: a busybox bundle in DIR whose config is moat's hardened default
# (user namespace, no capabilities, read-only root, own network namespace) running
# /bin/true, made by MOAT's spec.
make_run_bundle() {
	local bundle=$1 moat=$2
	mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs"/{proc,dev,sys,tmp,etc}
	cp /bin/busybox "$bundle/rootfs/bin/busybox"
	ln -s busybox "$bundle/rootfs/bin/true"
	ln -s busybox "$bundle/rootfs/bin/sh"
	chmod 755 "$bundle" "$bundle/rootfs"
	"$moat" spec --bundle "$bundle"
	# moat spec leaves the user namespace to moat's policy (auto-userns), which runc and crun
	# do not have: all get the same one, mapping root to host uid 100000 (an older moat's
	# spec names one already). crun 1.8 refuses ociVersion 1.2.0 ("unknown version
	# specified"); the config uses nothing newer than 1.0.
	jq '.process.args = ["/bin/true"] | .ociVersion = "1.0.2"
		| if any(.linux.namespaces[]; .type == "user") then .
		else .linux.namespaces += [{type: "user"}]
		| .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
		| .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}] end' \
		"$bundle/config.json" >"$bundle/config.json.new"
	mv "$bundle/config.json.new" "$bundle/config.json"
}

# runtime_of LAUNCHER: the runtime that moat's launcher starts: libexec/moat beside it in a
# build tree, ../libexec/moat/moat where it is installed
runtime_of() {
	local dir
	dir=$(dirname "$1")
	if [ -x "$dir/libexec/moat" ]; then echo "$dir/libexec/moat"; else echo "$dir/../libexec/moat/moat"; fi
}
