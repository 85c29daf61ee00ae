#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# In the cgroup v2 test host (tests/testhost/README.md), as root at boot: run the test files
# the host's request names and leave their TAP in the results directory, then say done.
#
#   guest-run.sh RESULTS
#   guest-run.sh RESULTS --one WHO NAME    (itself, for one file of the queue)
#
# The files run two at a time, one per vCPU, taken in the request's order as a slot frees
# (so the longest come first), except the residue files (zz-*), which run last, alone, as
# root. Every file has its own state root and temporary directory, so two can share the host.
#
# RESULTS/request (shell assignments, written by the host's run.sh):
#   TREE        moat's tree, mounted read-only at the host's own path
#   BINARY      the moat binary under test (in TREE)
#   ROOT_TESTS  test files, relative to TREE/tests without .bats, run as root
#   USER_TESTS  the same, run as the user moattest in a scope of its systemd user
#               manager, under the controllers user@.service delegates
# For each file NAME run as WHO (root or user): RESULTS/WHO-NAME.tap (its TAP) and
# RESULTS/WHO-NAME.status (bats's exit status) and RESULTS/WHO-NAME.seconds (how long it
# took). RESULTS/host-info describes the host, the time from boot to the first test is in
# RESULTS/boot-seconds, and
# RESULTS/done is written last. The test files' own temporary files stay in the guest.
set -u
results=$1
# shellcheck disable=SC1091 # the host writes it
. "$results/request"
export MOAT_BINARY=$BINARY
export MOAT_TEST_NO_MICROVM="the test host runs no microVMs (QEMU's TCG inside QEMU's TCG); the development host runs them"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# run_file WHO NAME CMD...: the test file NAME run by CMD (bats and its arguments)
run_file() {
	local who=$1 name=$2 out started=$SECONDS
	shift 2
	out=$results/$who-${name//\//-}
	echo "moat-testhost: $who: $name" >&2
	"$@" "$TREE/tests/$name.bats" >"$out.tap" 2>&1 </dev/null
	echo $? >"$out.status"
	echo $((SECONDS - started)) >"$out.seconds"
}

# one WHO NAME: run file NAME as root (in a temporary directory of its own) or as the user
one() {
	local who=$1 name=$2 run
	if [[ $who == root ]]; then
		run=$(mktemp -d /tmp/moat-run.XXXXXX)
		chmod 0755 "$run"
		run_file root "$name" env TMPDIR="$run" MOAT_RUN_DIR="$run" MOAT_TEST_CACHE="$cache" \
			bats --tap --timing
		rm -rf --one-file-system "$run"
	else
		run_file user "$name" runuser -u moattest -- env -i PATH="$PATH" HOME=/home/moattest \
			XDG_RUNTIME_DIR=/run/user/1000 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus \
			MOAT_BINARY="$MOAT_BINARY" MOAT_TEST_NO_MICROVM="$MOAT_TEST_NO_MICROVM" \
			systemd-run --user --scope --quiet -- bats --tap --timing
	fi
}

# The root files' rootfs and test programs, built by the first file that needs them, as the
# host's runner shares its cache (helpers.bash, build_rootfs_cache): each build is seconds
# under TCG.
cache=/tmp/moat-test-cache
mkdir -p "$cache"

if [[ ${2:-} == --one ]]; then
	one "$3" "$4"
	exit 0
fi

cut -d' ' -f1 /proc/uptime >"$results/boot-seconds"
{
	echo "kernel $(uname -r)"
	echo "init $(readlink /proc/1/exe)"
	echo "cgroup $(stat -fc %T /sys/fs/cgroup)"
	echo "controllers $(cat /sys/fs/cgroup/cgroup.controllers)"
	echo "user-delegated $(cat /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/cgroup.controllers 2>/dev/null)"
	systemctl --version | head -n 1
} >"$results/host-info" 2>&1

queue=()
last=()
for name in ${ROOT_TESTS:-}; do
	case ${name##*/} in
	zz-*) last+=("$name") ;;
	*) queue+=("root $name") ;;
	esac
done
for name in ${USER_TESTS:-}; do
	queue+=("user $name")
done
((${#queue[@]} == 0)) ||
	printf '%s\n' "${queue[@]}" | xargs -P 2 -L 1 bash "${BASH_SOURCE[0]}" "$results" --one
for name in "${last[@]}"; do
	one root "$name"
done

sync
touch "$results/done"
