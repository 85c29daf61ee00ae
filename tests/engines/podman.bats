#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Podman (Debian's podman, conmon) with moat and moat-vm as its runtimes, the
# way contrib/engines/podman/containers.conf registers them. Podman's state,
# storage and configuration live in this file's own directory; the image is
# the suite's busybox rootfs, imported with `podman import`.

load engines

IMAGE=localhost/moat-busybox:test
ENGINE=podman_in_dir

podman_in_dir() {
	CONTAINERS_CONF=$ENGINE_DIR/containers.conf \
		CONTAINERS_STORAGE_CONF=$ENGINE_DIR/storage.conf \
		CONTAINERS_REGISTRIES_CONF=$ENGINE_DIR/registries.conf \
		timeout -k 10 300 podman "$@"
}

# podman_cgroup_manager: Podman's own default, systemd, where systemd is PID 1
podman_cgroup_manager() {
	if [[ -d /run/systemd/system ]]; then
		echo systemd
	else
		echo cgroupfs
	fi
}

setup_file() {
	command -v podman >/dev/null || return 0
	engine_setup_file || return 1
	[[ -n ${ENGINE_DIR:-} ]] || return 0
	# what this machine needs (no CAP_SYS_RESOURCE: Podman's default ulimits
	# would exceed the hard limits; a file event log; where systemd is PID 1, as in
	# the cgroup v2 test host, Podman's default systemd cgroup manager, cgroupfs elsewhere),
	# then contrib's runtime_supports_json (moat's warnings to its log, not the
	# container's stderr) and runtimes table, with the paths of this file's wrappers
	cat >"$ENGINE_DIR/containers.conf" <<-EOF
		[containers]
		default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

		[engine]
		cgroup_manager = "$(podman_cgroup_manager)"
		events_logger = "file"
		events_logfile_path = "$ENGINE_DIR/events.log"
		tmp_dir = "$ENGINE_DIR/tmp"
		volume_path = "$ENGINE_DIR/volumes"

	EOF
	sed -n -e "s|/usr/local/bin/moat-vm|$(runtime_for moat-vm)|" \
		-e "s|/usr/local/bin/moat\"|$(runtime_for moat)\"|" \
		-e '/^runtime_supports_json = /p' -e '/^\[engine.runtimes\]/,$p' \
		"$BATS_TEST_DIRNAME/../../contrib/engines/podman/containers.conf" \
		>>"$ENGINE_DIR/containers.conf"
	printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' \
		"$ENGINE_DIR/storage" "$ENGINE_DIR/run" >"$ENGINE_DIR/storage.conf"
	printf 'unqualified-search-registries = []\n' >"$ENGINE_DIR/registries.conf"
	mkdir -p "$ENGINE_DIR/tmp"
	podman_in_dir import "$ENGINE_DIR/busybox.tar" "$IMAGE" >/dev/null
}

teardown_file() {
	if [[ -n ${ENGINE_DIR:-} ]]; then
		podman_in_dir rm -a -f -t 0 >/dev/null 2>&1 || true
		podman_in_dir rmi -a -f >/dev/null 2>&1 || true
		# conmon processes of this directory, if any outlived their containers
		# shellcheck disable=SC2046 # one pid per word
		stop_pids $(pids_of_cmdline "$ENGINE_DIR/")
	fi
	engine_teardown_file
}

setup() {
	command -v podman >/dev/null || skip "podman is not installed (Debian package podman)"
	engine_setup
}

teardown() {
	if [[ -n ${ENGINE_DIR:-} ]]; then
		podman_in_dir pod rm -f -t 0 "$(cname pod)" >/dev/null 2>&1 || true
		remove_test_containers
	fi
	[[ -z ${NETNS:-} ]] || ip netns delete "$NETNS" 2>/dev/null
	return 0
}

@test "podman moat: run prints both streams and returns the workload's exit code" {
	check_run moat
}

@test "podman moat-vm: run prints both streams and returns the workload's exit code" {
	skip_unless_vm
	check_run moat-vm
}

@test "podman moat: Podman's seccomp profile and capabilities apply unchanged, root is a pool uid" {
	check_defaults moat
}

@test "podman moat-vm: Podman's seccomp profile and capabilities apply in the guest, the VM runs as a pool uid" {
	skip_unless_vm
	check_defaults moat-vm
}

@test "podman moat: exec, exec -t and run -t" {
	check_exec moat
}

@test "podman moat-vm: exec, exec -t and run -t" {
	skip_unless_vm
	check_exec moat-vm
}

@test "podman moat: pause and unpause" {
	check_pause moat
}

@test "podman moat-vm: pause and unpause" {
	skip_unless_vm
	check_pause moat-vm
}

@test "podman moat: update --memory, top and stats" {
	check_update_top_stats moat
}

@test "podman moat-vm: update --memory, top and stats" {
	skip_unless_vm
	check_update_top_stats moat-vm
}

@test "podman moat: stop's SIGTERM reaches the workload, kill ends it" {
	check_stop_kill moat
}

@test "podman moat-vm: stop's SIGTERM reaches the workload, kill ends it" {
	skip_unless_vm
	check_stop_kill moat-vm
}

@test "podman moat: a socket bind and --privileged fail with moat's policy message" {
	check_policy moat
}

@test "podman moat-vm: a socket bind and --privileged fail with moat's policy message" {
	skip_unless_vm
	check_policy moat-vm
}

# check_egress RUNTIME: with --network none and moat.egress.allow, the container reaches the
# allowed name through moat's proxy (in a microVM, over the egress tunnel) and nothing else;
# the proxy ends with it.
check_egress() {
	local runtime=$1 port=$((20000 + RANDOM % 20000)) www=$BATS_TEST_TMPDIR/www httpd out
	mkdir -p "$www"
	echo hello-upstream >"$www/index.html"
	busybox httpd -f -p "127.0.0.1:$port" -h "$www" 3>&- &
	httpd=$!
	out=$("$ENGINE" run --rm --network none --runtime "$runtime" \
		--annotation "moat.egress.allow=up.test:$port+loopback" \
		--annotation moat.egress.resolve=up.test=127.0.0.1 "$IMAGE" sh -c "
		wget -q -O - http://up.test:$port/index.html
		wget -q -O - http://other.test:$port/ 2>/dev/null || echo refused
		nc -w 2 127.0.0.1 $port </dev/null || echo no-route") || true
	kill "$httpd"
	assert_equal "$out" $'hello-upstream\nrefused\nno-route'
	retry bash -c '! pgrep -u nobody -f moat >/dev/null'
}

@test "podman moat: --network none with moat.egress.allow reaches only the allowed name, through moat's proxy" {
	check_egress moat
	# with a network beside it, the rules are refused: a proxy there would filter nothing.
	# (A namespace the test makes, joined by path as Podman joins its networks': the test
	# host's Podman has no network plugins, and this needs none.)
	NETNS=moat-egress-$BATS_TEST_NUMBER-$$
	ip netns add "$NETNS"
	run --separate-stderr "$ENGINE" run --rm --runtime moat --network "ns:/run/netns/$NETNS" \
		--annotation "moat.egress.allow=up.test:1" "$IMAGE" true
	assert_failure
	[[ $stderr == *"moat.egress.allow: the container needs a network namespace of its own"* ]] ||
		fail "stderr: $stderr"
}

@test "podman moat-vm: --network none with moat.egress.allow reaches only the allowed name, over the egress tunnel" {
	skip_unless_vm
	check_egress moat-vm
}

# The guest on the container's network (docs/microvm-network.md): Podman's default bridge
# (CNI here) gives the container a veth, moat-vm carries it into the guest, and the port
# Podman publishes (portmap's DNAT on the bridge) reaches the guest's server. Podman, its
# bridge and its NAT rules run in a network namespace of this test's own, never in the
# host's tables.
@test "podman moat-vm: the default bridge network and a published port reach the guest's server" {
	skip_unless_vm
	local name out
	name=$(cname web)
	out=$(unshare --net bash -c "$(declare -f podman_in_dir)"'
		set -e
		ip link set lo up
		podman_in_dir run -d --name "$1" --runtime moat-vm -p 8080:80 "$2" \
			sh -c "mkdir -p /tmp/www && echo hello-published >/tmp/www/index.html && exec httpd -f -p 80 -h /tmp/www" >/dev/null
		for i in $(seq 300); do
			timeout 5 curl -sf http://10.88.0.1:8080/ && break
			sleep 0.2
		done
		id=$(podman_in_dir inspect --format "{{.Id}}" "$1")
		"$3" --root "$4" state "$id" | jq -r ".annotations[\"moat.vm.network\"]"
		podman_in_dir rm -f -t 0 "$1" >/dev/null' _ "$name" "$IMAGE" "$MOAT_BINARY" "$ENGINE_DIR/moat-state" 3>&-) || true
	[[ $out =~ ^hello-published$'\n'eth0\ 10\.88\.[0-9]+\.[0-9]+/16 ]] || fail "got: $out"
}

@test "podman moat-vm: the workload runs under the guest's kernel" {
	skip_unless_vm
	check_guest_kernel
}

# A pod's containers join its infra container's namespaces; under moat they also
# join its user namespace, so IPC and /dev/shm are shared as the pod expects.
@test "podman moat: a pod's containers share the infra container's user namespace, IPC and /dev/shm" {
	local pod infra member
	pod=$(cname pod)
	podman_in_dir --runtime moat pod create --name "$pod" --network none
	podman_in_dir --runtime moat run -d --name "$(cname member)" --pod "$pod" "$IMAGE" \
		sh -c 'echo shared >/dev/shm/x; sleep 600'
	run podman_in_dir --runtime moat run --rm --pod "$pod" "$IMAGE" cat /dev/shm/x
	assert_success
	assert_output shared
	infra=$(podman_in_dir inspect --format '{{.State.Pid}}' "$(podman_in_dir pod inspect --format '{{.InfraContainerID}}' "$pod")")
	member=$(podman_in_dir inspect --format '{{.State.Pid}}' "$(cname member)")
	assert_pool_uid "$infra"
	assert_equal "$(readlink "/proc/$member/ns/user")" "$(readlink "/proc/$infra/ns/user")"
	assert_equal "$(readlink "/proc/$member/ns/ipc")" "$(readlink "/proc/$infra/ns/ipc")"
	run "$MOAT_BINARY" --root "$ENGINE_DIR/moat-state" state "$(podman_in_dir inspect --format '{{.Id}}' "$(cname member)")"
	assert_success
	assert_output --partial "user namespace joined: the sandbox's, /proc/$infra/ns/user, rootfs and bind mounts idmapped"
}

# A pod is one VM (docs/microvm-network.md): the infra container is the microVM, and the
# pod's containers run in its guest, each with a rootfs of its own, on the pod's network and
# IPC, sharing the pod's /dev/shm (a bind of Podman's, through the pod's share).
@test "podman moat-vm: a pod's containers run in the infra container's VM, on its network, IPC and /dev/shm" {
	skip_unless_vm
	local pod infra
	pod=$(cname pod)
	podman_in_dir --runtime moat-vm pod create --name "$pod" --network none
	podman_in_dir --runtime moat-vm run -d --name "$(cname web)" --pod "$pod" "$IMAGE" \
		sh -c 'echo shared >/dev/shm/x; mkdir -p /tmp/www && echo hello-pod >/tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www'
	run podman_in_dir --runtime moat-vm run --rm --pod "$pod" "$IMAGE" sh -c '
		uname -r
		for i in $(seq 100); do wget -q -O - http://127.0.0.1:8080/ 2>/dev/null && break; sleep 0.1; done
		cat /dev/shm/x; ls /tmp/www 2>&1 | head -1'
	assert_success
	assert_line --index 0 --regexp '^6\.1\.'
	[[ ${lines[0]} != "$(uname -r)" ]] || fail "the member ran under the host's kernel"
	assert_line --index 1 hello-pod
	assert_line --index 2 shared
	assert_line --index 3 --partial 'No such file or directory'
	infra=$(podman_in_dir pod inspect --format '{{.InfraContainerID}}' "$pod")
	run "$MOAT_BINARY" --root "$ENGINE_DIR/moat-state" state "$(podman_in_dir inspect --format '{{.Id}}' "$(cname web)")"
	assert_success
	assert_equal "$(jq -r '.annotations["moat.vm.pod"]' <<<"$output")" "$infra"
	assert_equal "$(pgrep -c -P "$(podman_in_dir inspect --format '{{.State.Pid}}' "$infra")" qemu-system)" 1
	podman_in_dir pod rm -f -t 0 "$pod" >/dev/null
	run "$MOAT_BINARY" --root "$ENGINE_DIR/moat-state" list -q
	assert_output ''
}

# Podman passes --log-format=json and --log to a runtime named runc and reads
# its errors from that log instead of stderr.
@test "podman: moat registered under the name runc still shows its error to Podman's user" {
	sed -e "s|^moat = |runc = |" "$ENGINE_DIR/containers.conf" >"$ENGINE_DIR/containers-runc.conf"
	touch "$ENGINE_DIR/docker.sock"
	run env CONTAINERS_CONF="$ENGINE_DIR/containers-runc.conf" \
		CONTAINERS_STORAGE_CONF="$ENGINE_DIR/storage.conf" \
		CONTAINERS_REGISTRIES_CONF="$ENGINE_DIR/registries.conf" podman run --rm --network none --runtime runc -v "$ENGINE_DIR/docker.sock:/run/docker.sock" "$IMAGE" true
	assert_failure
	assert_output --regexp "runc: policy deny-host-mounts: mounts\[[0-9]+\] binds host path $ENGINE_DIR/docker.sock"
}
