#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Boot moat's cgroup v2 test host and run moat's tests in it (tests/testhost/README.md):
# a Debian 12 system with systemd as PID 1 and the unified hierarchy, under QEMU (TCG),
# which these development machines (hybrid v1, no systemd) cannot be.
#
#   tests/testhost/run.sh
#
# Prints one TAP stream: every result of every file run in the test host, numbered anew and
# named "testhost root FILE: TEST" (or "testhost user ..."), then its plan. When the test
# host cannot be had here (not root, no QEMU, no linux-source-6.1 for its kernel, no
# mmdebstrap for its image) it reports one skipped test that says why.
#
# Environment:
#   MOAT_BINARY      the moat binary under test; it must be inside moat's tree, which the
#                    test host mounts read-only at the same path (default: TREE/moat)
#   MOAT_VM_DIR      where the test host's kernel is built (default: TREE/vm)
#   TESTHOST_ROOT    test files (relative to tests/, without .bats) run as root
#   TESTHOST_USER    test files run as an unprivileged user with systemd's delegation
#   TESTHOST_TIMEOUT how long the VM may run, in seconds (default 2700); it stops a hang,
#                    it asserts nothing about speed (run alone, the files take about 10
#                    minutes; beside the whole suite, on two cores, about twice that)
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tree=$(cd "$here/../.." && pwd)
binary=${MOAT_BINARY:-$tree/moat}
vmdir=${MOAT_VM_DIR:-$tree/vm}
# (the longest first: the test host runs them two at a time, as a slot frees)
root_tests=${TESTHOST_ROOT-"integration/cgroups engines/podman integration/devices integration/update integration/kill integration/events integration/pause integration/ps testhost/systemd integration/cgroup-paths integration/rlimits integration/zz-residue"}
user_tests=${TESTHOST_USER-testhost/rootless}
timeout=${TESTHOST_TIMEOUT:-2700}

skip_all() {
	echo "1..1"
	echo "ok 1 testhost # skip $*"
	exit 0
}

fail_all() {
	echo "1..1"
	echo "not ok 1 testhost: $1"
	shift
	for line in "$@"; do
		printf '# %s\n' "$line"
	done
	exit 1
}

((EUID == 0)) || skip_all "the test host needs root (QEMU's shares, mmdebstrap)"
command -v qemu-system-x86_64 >/dev/null || skip_all "qemu-system-x86_64 is not installed (Debian package qemu-system-x86)"
command -v mmdebstrap >/dev/null || skip_all "mmdebstrap is not installed (Debian package mmdebstrap)"
[[ -r /usr/src/linux-source-6.1.tar.xz ]] || skip_all "linux-source-6.1 is not installed: no kernel for the test host"
case $binary in
"$tree"/*) ;;
*) skip_all "MOAT_BINARY $binary is not in moat's tree $tree, which is all the test host sees" ;;
esac

# The kernel (cached under /var/cache/moat like the guest's) and the image (cached too).
echo "# testhost: the kernel" >&2
bash "$tree/contrib/microvm/build-kernel.sh" --out "$vmdir" \
	--fragment "$here/testhost-kernel.config" --name moat-testhost-kernel >&2 ||
	fail_all "the test host's kernel could not be built"
echo "# testhost: the image" >&2
image=$(bash "$here/mkimage.sh") || fail_all "the test host's image could not be built"
image=$(tail -n 1 <<<"$image")
[[ -f $image ]] || fail_all "the test host's image is not at '$image'"

results=$(mktemp -d "${TMPDIR:-/tmp}/moat-testhost.XXXXXX") || fail_all "mktemp"
chmod 0755 "$results"
trap 'rm -rf --one-file-system "$results"' EXIT
cat >"$results/request" <<EOF
TREE='$tree'
BINARY='$binary'
ROOT_TESTS='$root_tests'
USER_TESTS='$user_tests'
EOF

# (-cpu max without ERMS: the guest kernel then copies and clears memory 8 bytes a TCG
# iteration, not one, as moat's own microVMs do; src/libmoat/vm/vm-launch.c)
echo "# testhost: booting (QEMU TCG, 2 vCPUs, 2 GiB)" >&2
started=$SECONDS
timeout -k 10 "$timeout" qemu-system-x86_64 \
	-M microvm,acpi=off,x-option-roms=off,rtc=off -accel tcg -cpu max,erms=off -smp 2 -m 2048 \
	-nodefaults -no-user-config -nographic -no-reboot \
	-kernel "$vmdir/moat-testhost-kernel" \
	-append "root=/dev/vda rw console=hvc0 quiet panic=-1 reboot=t systemd.show_status=0" \
	-drive "file=$image,format=raw,if=none,id=root,snapshot=on" \
	-device virtio-blk-device,drive=root \
	-fsdev "local,id=tree,path=$tree,security_model=none,readonly=on,multidevs=remap" \
	-device virtio-9p-device,fsdev=tree,mount_tag=moattree \
	-fsdev "local,id=results,path=$results,security_model=none" \
	-device virtio-9p-device,fsdev=results,mount_tag=moatresults \
	-device virtio-serial-device \
	-chardev "file,id=con,path=$results/console.log" -device virtconsole,chardev=con \
	</dev/null >"$results/qemu.log" 2>&1 &
qemu=$!
# stopped early (the suite's runner cut short): QEMU goes, then the results directory
trap 'kill "$qemu" 2>/dev/null; wait "$qemu"; exit 1' TERM INT HUP
wait "$qemu"
qemu_status=$?
trap - TERM INT HUP
echo "# testhost: the VM ran $((SECONDS - started)) s (QEMU exit status $qemu_status)" >&2

if [[ ! -e $results/done ]]; then
	mapfile -t tail_lines < <(tail -n 30 "$results/console.log" 2>/dev/null; tail -n 5 "$results/qemu.log")
	fail_all "the test host ended without its results (QEMU exit status $qemu_status)" "${tail_lines[@]}"
fi
sed 's/^/# testhost: /' "$results/host-info"
echo "# testhost: boot to the first test $(cat "$results/boot-seconds" 2>/dev/null) s"
for f in "$results"/*.seconds; do
	[[ -e $f ]] && echo "# testhost: $(basename "$f" .seconds) ran $(cat "$f") s"
done

# Every file's results, numbered anew; a file that failed without saying so counts once.
n=0
for tap in "$results"/root-*.tap "$results"/user-*.tap; do
	[[ -e $tap ]] || continue
	who=${tap##*/}
	who=${who%%-*}
	file=${tap##*/}
	file=${file#*-}
	file=${file%.tap}
	status=$(cat "${tap%.tap}.status" 2>/dev/null || echo 1)
	bad=0
	while IFS= read -r line; do
		if [[ $line =~ ^(not\ )?ok\ [0-9]+\ ?(.*)$ ]]; then
			n=$((n + 1))
			[[ -n ${BASH_REMATCH[1]} ]] && bad=1
			echo "${BASH_REMATCH[1]}ok $n testhost $who $file: ${BASH_REMATCH[2]}"
		elif [[ $line == '#'* ]]; then
			echo "$line"
		fi
	done <"$tap"
	if ((status != 0 && bad == 0)); then
		n=$((n + 1))
		echo "not ok $n testhost $who $file: bats exited with status $status"
		sed 's/^/# /' "$tap" | tail -n 20
	fi
done
echo "1..$n"
