#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Docker (Debian's docker.io: dockerd with its own containerd and the runc v2
# shim) with moat and moat-vm registered as contrib/engines/docker/daemon.json
# does it. dockerd runs with its data, exec root, socket and containerd
# namespace in this file's own directory, and --iptables=false --bridge=none
# (no host firewall or bridge is touched); the image is the suite's busybox
# rootfs, imported with `docker import`.

load engines

IMAGE=localhost/moat-busybox:test
ENGINE=docker_in_dir
# Debian's client; another docker may come first in PATH
DOCKER=/usr/bin/docker

docker_in_dir() {
	timeout -k 10 300 "$DOCKER" --host "unix://$ENGINE_DIR/docker.sock" "$@"
}

docker_up() {
	docker_in_dir version >/dev/null 2>&1
}

setup_file() {
	command -v dockerd >/dev/null || return 0
	engine_setup_file || return 1
	[[ -n ${ENGINE_DIR:-} ]] || return 0
	sed -e "s|/usr/local/bin/moat-vm|$(runtime_for moat-vm)|" \
		-e "s|/usr/local/bin/moat\"|$(runtime_for moat)\"|" \
		"$BATS_TEST_DIRNAME/../../contrib/engines/docker/daemon.json" >"$ENGINE_DIR/daemon.json"
	dockerd --config-file "$ENGINE_DIR/daemon.json" \
		--data-root "$ENGINE_DIR/docker" --exec-root "$ENGINE_DIR/exec" \
		--pidfile "$ENGINE_DIR/dockerd.pid" --host "unix://$ENGINE_DIR/docker.sock" \
		--containerd-namespace moat-test --containerd-plugins-namespace moat-test-plugins \
		--iptables=false --ip6tables=false --ip-forward=false --ip-masq=false --bridge=none \
		--storage-driver overlay2 >"$ENGINE_DIR/dockerd.log" 2>&1 </dev/null 3>&- &
	echo "$!" >"$ENGINE_DIR/dockerd.started"
	if ! retry docker_up; then
		echo "# dockerd did not start:" >&2
		tail -20 "$ENGINE_DIR/dockerd.log" >&2
		return 1
	fi
	docker_in_dir import "$ENGINE_DIR/busybox.tar" "$IMAGE" >/dev/null
}

teardown_file() {
	if [[ -n ${ENGINE_DIR:-} ]]; then
		local ids
		ids=$(docker_in_dir ps -aq 2>/dev/null)
		# shellcheck disable=SC2086 # one id per word
		[[ -z $ids ]] || docker_in_dir rm -f $ids >/dev/null 2>&1 || true
		# dockerd stops its containerd; then any shim of this directory
		stop_pids "$(cat "$ENGINE_DIR/dockerd.started" 2>/dev/null)"
		# shellcheck disable=SC2046 # one pid per word
		stop_pids $(pids_of_cmdline "$ENGINE_DIR/")
	fi
	engine_teardown_file
}

setup() {
	command -v dockerd >/dev/null || skip "dockerd is not installed (Debian package docker.io)"
	engine_setup
}

teardown() {
	[[ -n ${ENGINE_DIR:-} ]] && remove_test_containers
	return 0
}

@test "docker moat: run prints both streams and returns the workload's exit code" {
	check_run moat
}

@test "docker moat-vm: run prints both streams and returns the workload's exit code" {
	skip_unless_vm
	check_run moat-vm
}

@test "docker moat: Docker's seccomp profile and capabilities apply unchanged, root is a pool uid" {
	check_defaults moat
}

@test "docker moat-vm: Docker's seccomp profile and capabilities apply in the guest, the VM runs as a pool uid" {
	skip_unless_vm
	check_defaults moat-vm
}

@test "docker moat: exec, exec -t and run -t" {
	check_exec moat
}

@test "docker moat-vm: exec, exec -t and run -t" {
	skip_unless_vm
	check_exec moat-vm
}

@test "docker moat: pause and unpause" {
	check_pause moat
}

@test "docker moat-vm: pause and unpause" {
	skip_unless_vm
	check_pause moat-vm
}

@test "docker moat: update --memory, top and stats" {
	check_update_top_stats moat
}

@test "docker moat-vm: update --memory, top and stats" {
	skip_unless_vm
	check_update_top_stats moat-vm
}

@test "docker moat: stop's SIGTERM reaches the workload, kill ends it" {
	check_stop_kill moat
}

@test "docker moat-vm: stop's SIGTERM reaches the workload, kill ends it" {
	skip_unless_vm
	check_stop_kill moat-vm
}

@test "docker moat: a socket bind and --privileged fail with moat's policy message" {
	check_policy moat
}

@test "docker moat-vm: a socket bind and --privileged fail with moat's policy message" {
	skip_unless_vm
	check_policy moat-vm
}

@test "docker moat-vm: the workload runs under the guest's kernel" {
	skip_unless_vm
	check_guest_kernel
}
