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

# The guest on the container's network (docs/microvm-network.md): Docker's default bridge
# gives the container a veth from libnetwork's prestart hook, moat-vm carries it into the
# guest, and the port Docker publishes (its NAT rules on docker0, and its userland proxy on
# loopback) reaches the guest's server. This test's dockerd is a second one, with a bridge
# and its NAT rules, in a network namespace of the test's own: the host's tables are never
# touched.
@test "docker moat-vm: the default bridge network and a published port reach the guest's server" {
	skip_unless_vm
	local dir=$ENGINE_DIR/bridge out
	mkdir -p "$dir"
	printf '{"runtimes": {"moat-vm": {"path": "%s"}}}\n' "$(runtime_for moat-vm)" >"$dir/daemon.json"
	out=$(unshare --net bash -c '
		set -e
		dir=$1 docker=$2 image=$3 moat=$4 tar=$5
		d() { timeout -k 10 120 "$docker" --host "unix://$dir/docker.sock" "$@"; }
		ip link set lo up
		dockerd --config-file "$dir/daemon.json" --data-root "$dir/docker" \
			--exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
			--host "unix://$dir/docker.sock" --containerd-namespace moat-bridge \
			--containerd-plugins-namespace moat-bridge-plugins \
			--storage-driver overlay2 >"$dir/dockerd.log" 2>&1 </dev/null &
		for i in $(seq 150); do d version >/dev/null 2>&1 && break; sleep 0.2; done
		d import "$tar" "$image" >/dev/null
		d run -d --name web --runtime moat-vm -p 8080:80 "$image" \
			sh -c "mkdir -p /tmp/www && echo hello-published >/tmp/www/index.html && exec httpd -f -p 80 -h /tmp/www" >/dev/null
		for i in $(seq 300); do
			timeout 5 curl -sf http://172.17.0.1:8080/ >/dev/null && break
			sleep 0.2
		done
		timeout 5 curl -sf http://172.17.0.1:8080/
		timeout 5 curl -sf http://127.0.0.1:8080/
		id=$(d inspect --format "{{.Id}}" web)
		"$moat" --root "$dir/exec/runtime-runc/moat-bridge" state "$id" | jq -r ".annotations[\"moat.vm.network\"]"
		d rm -f web >/dev/null
		kill "$(cat "$dir/dockerd.pid")"
		for i in $(seq 150); do kill -0 "$(cat "$dir/dockerd.pid")" 2>/dev/null || break; sleep 0.2; done
		' _ "$dir" "$DOCKER" "$IMAGE" "$MOAT_BINARY" "$ENGINE_DIR/busybox.tar" 3>&-) || true
	# shellcheck disable=SC2046 # one pid per word
	stop_pids $(pids_of_cmdline "$dir/")
	[[ $out =~ ^hello-published$'\n'hello-published$'\n'eth0\ 172\.17\.[0-9]+\.[0-9]+/16$ ]] ||
		fail "got: $out; dockerd said: $(tail -5 "$dir/dockerd.log")"
}
