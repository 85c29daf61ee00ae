#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shared set-up for the engine tests: a real Podman, containerd or Docker from
# Debian runs containers with moat and moat-vm. Every .bats file here does
# `load engines` and gets:
#
#   engine_setup_file    a directory of its own ($ENGINE_DIR) holding the
#                        engine's state, the runtimes it is given
#                        ($ENGINE_DIR/bin/moat and moat-vm) and a busybox image
#                        as a tar ($ENGINE_DIR/busybox.tar), made from the
#                        suite's busybox-static rootfs (no registry)
#   engine_teardown_file unmounts and removes all of it
#   skip_unless_vm       skips a microVM test when there is no guest kernel
#
# The runtimes are small wrappers: each gives moat a state root inside
# $ENGINE_DIR (Podman passes none; containerd and Docker pass their own, which
# comes later on the command line and wins), and moat-vm is moat under that
# name with a policy file that picks QEMU's TCG (this machine's KVM cannot run
# a guest kernel at a useful speed) and MOAT_VM_DIR for the guest kernel.
#
# The checks both Podman and Docker pass (their command lines are the same)
# are the check_* functions at the end; $ENGINE names the command (a shell
# function of the .bats file) and $IMAGE the image.

# shellcheck disable=SC2154 # bats sets status, output, stderr
load ../integration/helpers

# The pool auto-userns lends host ids from by default (contrib/policy/README.md).
POOL_START=$((0x70000000))
POOL_END=$((0x70000000 + 4096 * 65536))

engine_setup_file() {
	((EUID == 0)) || return 0
	build_rootfs_cache || return 1
	ENGINE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/moat-engine.XXXXXX") || return 1
	chmod 0755 "$ENGINE_DIR"
	export ENGINE_DIR
	mkdir -p "$ENGINE_DIR/bin" "$ENGINE_DIR/moat-state"
	printf '{"microvm": {"accel": "tcg"}}\n' >"$ENGINE_DIR/vm-policy.json"
	cat >"$ENGINE_DIR/bin/moat" <<-EOF
		#!/bin/bash
		exec "$MOAT_BINARY" --root "$ENGINE_DIR/moat-state" "\$@"
	EOF
	cat >"$ENGINE_DIR/bin/moat-vm" <<-EOF
		#!/bin/bash
		export MOAT_VM_DIR="${MOAT_VM_DIR:-}"
		exec -a moat-vm "$MOAT_BINARY" --root "$ENGINE_DIR/moat-state" --policy "$ENGINE_DIR/vm-policy.json" "\$@"
	EOF
	chmod 0755 "$ENGINE_DIR/bin/moat" "$ENGINE_DIR/bin/moat-vm"
	tar -C "$ROOTFS_CACHE" --exclude ./.complete -cf "$ENGINE_DIR/busybox.tar" .
}

# engine_teardown_file [ROOT...]: every moat container the engine left is
# deleted (from the wrappers' state root and each ROOT, the state roots an
# engine passes moat itself), then nothing may stay mounted under $ENGINE_DIR
# before it goes.
engine_teardown_file() {
	[[ -n ${ENGINE_DIR:-} && -d $ENGINE_DIR ]] || return 0
	local id root
	for root in "$ENGINE_DIR/moat-state" "$@"; do
		for id in $("$MOAT_BINARY" --root "$root" list -q 2>/dev/null); do
			"$MOAT_BINARY" --root "$root" delete --force "$id" >/dev/null 2>&1 || true
		done
	done
	if ! unmount_under "$ENGINE_DIR"; then
		echo "# teardown: mounts remain under $ENGINE_DIR:" >&2
		mounts_under "$ENGINE_DIR" >&2
		return 1
	fi
	rm -rf --one-file-system "$ENGINE_DIR"
}

# stop_pids PID...: TERM, then KILL after 10 s, each process this file started.
stop_pids() {
	local pid i
	for pid in "$@"; do
		[[ $pid =~ ^[0-9]+$ ]] || continue
		kill -TERM "$pid" 2>/dev/null || continue
		for ((i = 0; i < 100; i++)); do
			process_alive "$pid" || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done
	return 0
}

# pids_of_cmdline TEXT: the processes whose command line contains TEXT (the
# engine's own shims, named by this file's socket path).
pids_of_cmdline() {
	local f pid
	for f in /proc/[0-9]*/cmdline; do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		[[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
		# (a process may end between the glob and the read)
		{ tr '\0' ' ' <"$f"; } 2>/dev/null | grep -qF -- "$1" && echo "$pid"
	done
	return 0
}

# --- an image without a registry (containerd) ---------------------------

# oci_blob DIR MEDIATYPE FILE: FILE moved into the image layout DIR's blobs;
# prints its descriptor
oci_blob() {
	local digest size
	digest=$(sha256sum <"$3") || return 1
	digest=sha256:${digest%% *}
	size=$(stat -c %s "$3") || return 1
	mv "$3" "$1/blobs/sha256/${digest#sha256:}" || return 1
	printf '{"mediaType":"%s","digest":"%s","size":%s}' "$2" "$digest" "$size"
}

# make_oci_archive TAR OUT [CONFIG]: OUT is an OCI image archive (the image
# layout `ctr images import` takes) with the rootfs TAR as its one,
# uncompressed, layer, named "test" in its index; CONFIG is the image
# config's "config" object (default: {"Cmd":["/bin/sh"]})
make_oci_archive() {
	local dir layer config manifest cfg=${3:-'{"Cmd":["/bin/sh"]}'}
	dir=$(mktemp -d "$ENGINE_DIR/oci.XXXXXX") || return 1
	mkdir -p "$dir/blobs/sha256"
	cp "$1" "$dir/layer" || return 1
	layer=$(oci_blob "$dir" application/vnd.oci.image.layer.v1.tar "$dir/layer") || return 1
	# an uncompressed layer's diff_id is its digest
	[[ $layer =~ \"digest\":\"(sha256:[0-9a-f]{64})\" ]] || return 1
	printf '{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["%s"]},"config":%s}' \
		"${BASH_REMATCH[1]}" "$cfg" >"$dir/config"
	config=$(oci_blob "$dir" application/vnd.oci.image.config.v1+json "$dir/config") || return 1
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":%s,"layers":[%s]}' \
		"$config" "$layer" >"$dir/manifest"
	manifest=$(oci_blob "$dir" application/vnd.oci.image.manifest.v1+json "$dir/manifest") || return 1
	printf '{"schemaVersion":2,"manifests":[%s,"annotations":{"org.opencontainers.image.ref.name":"test"}}]}' \
		"${manifest%\}}" >"$dir/index.json"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$dir/oci-layout"
	tar -C "$dir" -cf "$2" oci-layout index.json blobs || return 1
	rm -rf "$dir"
}

engine_setup() {
	((EUID == 0)) || skip "engine tests need root"
	[[ -n ${ENGINE_DIR:-} ]] || skip "the engine did not start (see setup_file's output)"
	exec </dev/null
}

skip_unless_vm() {
	[[ -z ${MOAT_TEST_NO_MICROVM:-} ]] || skip "$MOAT_TEST_NO_MICROVM"
	[[ -f ${MOAT_VM_DIR:-/nonexistent}/moat-guest-kernel ]] ||
		skip "no guest kernel in MOAT_VM_DIR (build it with make vm-kernel)"
	command -v qemu-system-x86_64 >/dev/null || skip "QEMU is not installed (qemu-system-x86)"
}

# runtime_for NAME: the wrapper the engine was given for moat or moat-vm.
runtime_for() {
	echo "$ENGINE_DIR/bin/$1"
}

# host_uid_of PID: the real uid of a host process.
host_uid_of() {
	awk '/^Uid:/ { print $2 }' "/proc/$1/status"
}

# assert_pool_uid PID: PID runs as an unprivileged uid lent from moat's pool.
assert_pool_uid() {
	local uid
	uid=$(host_uid_of "$1")
	[[ $uid =~ ^[0-9]+$ ]] || fail "no uid for pid $1"
	((uid >= POOL_START && uid < POOL_END)) || fail "pid $1 runs as host uid $uid, not one of moat's pool"
}

# memory_limit_of PID: the memory limit of PID's cgroup (memory.limit_in_bytes on v1, memory.max on v2).
memory_limit_of() {
	local path
	path=$(awk -F: '$2 == "memory" { print $3 }' "/proc/$1/cgroup")
	if [[ -n $path ]]; then
		cat "/sys/fs/cgroup/memory$path/memory.limit_in_bytes"
	else # cgroup v2 (the test host)
		path=$(awk -F: '$1 == 0 { print $3 }' "/proc/$1/cgroup")
		cat "/sys/fs/cgroup$path/memory.max"
	fi
}

# --- checks Podman and Docker share --------------------------------------
# $ENGINE: the engine's command (a function); $IMAGE: the busybox image; RT:
# moat or moat-vm. Containers are named after the test, so teardown finds them.

cname() {
	echo "moat-e$BATS_SUITE_TEST_NUMBER-$1"
}

# check_run RT: output on both streams and the exit code, zero and non-zero
check_run() {
	run --separate-stderr "$ENGINE" run --rm --network none --runtime "$1" "$IMAGE" \
		sh -c 'echo to-stdout; echo to-stderr >&2; exit 3'
	assert_equal "$status" 3
	assert_output to-stdout
	assert_equal "$stderr" to-stderr
	run "$ENGINE" run --rm --network none --runtime "$1" "$IMAGE" true
	assert_success
}

# check_defaults RT: the engine's own seccomp profile and capabilities, as
# runc gets them from the same engine, with moat's no_new_privs; the
# container's root is a host uid from moat's pool.
check_defaults() {
	local name want got pid
	name=$(cname "$1")
	want=$("$ENGINE" run --rm --network none --runtime runc "$IMAGE" \
		grep -E '^(CapBnd|CapEff|Seccomp):' /proc/self/status)
	"$ENGINE" run -d --name "$name" --network none --runtime "$1" "$IMAGE" sleep 600
	got=$("$ENGINE" exec "$name" grep -E '^(CapBnd|CapEff|Seccomp|NoNewPrivs):' /proc/self/status)
	assert_equal "$(grep -v NoNewPrivs <<<"$got")" "$want"
	assert_equal "$(awk '/^NoNewPrivs:/ { print $2 }' <<<"$got")" 1
	grep -q '^Seccomp:[[:space:]]*2$' <<<"$want" || fail "the engine gave no seccomp filter: $want"
	pid=$("$ENGINE" inspect --format '{{.State.Pid}}' "$name")
	assert_pool_uid "$pid"
}

# check_exec RT: exec's output and exit code, exec -t on a pty, and run -t (the
# container's own terminal, through --console-socket)
check_exec() {
	local name
	name=$(cname "$1")
	run "$ENGINE" run --rm -t --network none --runtime "$1" "$IMAGE" sh -c '[ -t 0 ] && [ -t 1 ] && tty'
	assert_success
	assert_output --regexp '^/dev/(pts/[0-9]+|console)'

	"$ENGINE" run -d --name "$name" --network none --runtime "$1" "$IMAGE" sleep 600
	run "$ENGINE" exec "$name" sh -c 'echo exec-ran; exit 7'
	assert_equal "$status" 7
	assert_output exec-ran
	run "$ENGINE" exec -t "$name" sh -c '[ -t 0 ] && [ -t 1 ] && tty'
	assert_success
	assert_output --regexp '^/dev/pts/[0-9]+'
}

# check_pause RT: paused and resumed, and the container works after
check_pause() {
	local name
	name=$(cname "$1")
	"$ENGINE" run -d --name "$name" --network none --runtime "$1" "$IMAGE" sleep 600
	"$ENGINE" pause "$name"
	run "$ENGINE" inspect --format '{{.State.Status}}' "$name"
	assert_output paused
	"$ENGINE" unpause "$name"
	run "$ENGINE" inspect --format '{{.State.Status}}' "$name"
	assert_output running
	run "$ENGINE" exec "$name" echo alive
	assert_output alive
}

# check_update_top_stats RT: update --memory reaches the container's cgroup
# (for a microVM, only a limit its guest and QEMU fit in: 256 MiB + 64 MiB);
# top lists its processes; stats reads its usage
check_update_top_stats() {
	local name pid mib=300
	name=$(cname "$1")
	"$ENGINE" run -d --name "$name" --network none --runtime "$1" "$IMAGE" sleep 600
	pid=$("$ENGINE" inspect --format '{{.State.Pid}}' "$name")
	if [[ $1 == moat-vm ]]; then
		run "$ENGINE" update --memory 300m --memory-swap 600m "$name"
		assert_failure
		assert_output --partial 'is below what this microVM needs: its guest has 256 MiB'
		mib=400
	fi
	run "$ENGINE" update --memory "${mib}m" --memory-swap 800m "$name"
	assert_success
	assert_equal "$(memory_limit_of "$pid")" $((mib << 20))
	run "$ENGINE" top "$name"
	assert_success
	# the workload (a container) or its microVM's QEMU (moat-vm)
	if [[ $1 == moat-vm ]]; then
		assert_output --partial qemu-system-x86_64
	else
		assert_output --partial 'sleep 600'
	fi
	run "$ENGINE" stats --no-stream --format '{{.Name}} {{.MemUsage}}' "$name"
	assert_success
	# (Podman 4.3 shows the host's memory as the limit on cgroup v1, with runc too)
	assert_output --regexp "^$name [0-9.]+[kKMG]i?B / [0-9.]+[kKMG]i?B$"
}

# check_stop_kill RT: stop's SIGTERM reaches the workload's trap; kill ends
# a container with 137
check_stop_kill() {
	local name
	name=$(cname "$1")
	"$ENGINE" run -d --name "$name" --network none --runtime "$1" "$IMAGE" \
		sh -c 'trap "echo got-TERM; exit 0" TERM; echo started; while :; do sleep 0.1; done'
	retry logs_contain "$name" started
	"$ENGINE" stop -t 60 "$name"
	run "$ENGINE" logs "$name"
	assert_output --partial got-TERM
	run "$ENGINE" inspect --format '{{.State.ExitCode}}' "$name"
	assert_output 0
	"$ENGINE" rm "$name"
	"$ENGINE" run -d --name "$name" --network none --runtime "$1" "$IMAGE" sleep 600
	"$ENGINE" kill "$name"
	retry inspect_is "$name" '{{.State.Status}}' exited
	run "$ENGINE" inspect --format '{{.State.ExitCode}}' "$name"
	assert_output 137
}

# check_policy RT: what the hardened policy refuses reaches the engine's user
# with moat's message
check_policy() {
	touch "$ENGINE_DIR/docker.sock"
	run "$ENGINE" run --rm --network none --runtime "$1" \
		-v "$ENGINE_DIR/docker.sock:/var/run/docker.sock" "$IMAGE" true
	assert_failure
	assert_output --regexp "policy deny-host-mounts: mounts\[[0-9]+\] binds host path $ENGINE_DIR/docker.sock"
	run "$ENGINE" run --rm --network none --runtime "$1" --privileged "$IMAGE" true
	assert_failure
	assert_output --partial "policy capability-ceiling: process.capabilities."
}

# check_guest_kernel: moat-vm runs the workload under its own kernel
check_guest_kernel() {
	run "$ENGINE" run --rm --network none --runtime moat-vm "$IMAGE" uname -r
	assert_success
	assert_output --regexp '^6\.1\.'
	[[ $output != "$(uname -r)" ]] || fail "the workload ran under the host's kernel"
}

logs_contain() {
	"$ENGINE" logs "$1" 2>&1 | grep -q -- "$2"
}

inspect_is() {
	[[ $("$ENGINE" inspect --format "$2" "$1" 2>/dev/null) == "$3" ]]
}

# remove_test_containers: every container this test named
remove_test_containers() {
	local name
	for name in $("$ENGINE" ps -a --format '{{.Names}}' 2>/dev/null); do
		[[ $name == "moat-e$BATS_SUITE_TEST_NUMBER-"* ]] || continue
		"$ENGINE" rm -f "$name" >/dev/null 2>&1 || true
	done
	return 0
}
