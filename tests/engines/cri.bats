#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Kubernetes' path: containerd's CRI plugin driven as the kubelet drives it,
# by cri/cri.py (a small CRI client of our own: Debian 12 has no kubelet and
# no crictl), with moat and moat-vm as runtime handlers (contrib's
# containerd configuration, the paths of this file's wrappers).
#
# Each test has a node of its own: containerd runs in a network namespace
# the test makes (held by a sleeping process), with its root, state, sockets,
# the pods' network namespaces (netns_mounts_under_state_dir) and the
# runtimes' state root (the shim's Root option) in the test's directory. So
# the CNI bridges, the pods' veths and the stream server's socket live in
# that namespace only: nothing here changes the host's network or talks to
# an address outside namespaces the test made. The CNI plugins are Debian's
# (containernetworking-plugins): a bridge with host-local IPAM and no
# gateway, so a pod reaches only pods on its own bridge; containerd adds the
# loopback network itself. Two networks:
#
#   moat-cri-a  bridge moatcri0, 10.88.77.0/24  the default (conf_dir)
#   moat-cri-b  bridge moatcri1, 10.88.78.0/24  for the handler moat-netb
#                                               (moat under another name,
#                                               with its own cni_conf_dir)
#
# The image is the suite's busybox rootfs as an OCI image layout imported
# into containerd's k8s.io namespace (no registry); it is the sandbox
# (pause) image too, so its config's command is one that waits.
# shellcheck disable=SC2030,SC2031 # bats's run sets status and output in each test's subshell

load engines

IMAGE=localhost/moat-busybox:test
PYTHON=/usr/bin/python3
NET_A=10.88.77
NET_B=10.88.78

# cri ARGS...: cri.py on this test's containerd
cri() {
	timeout -k 10 300 "$PYTHON" "$BATS_TEST_DIRNAME/cri/cri.py" --sock "$NODE/containerd.sock" "$@"
}

ctr_k8s() {
	timeout -k 10 300 ctr --address "$NODE/containerd.sock" --namespace k8s.io "$@"
}

node_netns() {
	echo "/proc/$(cat "$NODE/holder.pid")/ns/net"
}

# in_node CMD...: CMD in containerd's network namespace
in_node() {
	nsenter --net="$(node_netns)" "$@"
}

node_netns_ready() {
	[[ $(readlink "$(node_netns)") != "$(readlink /proc/self/ns/net)" ]] &&
		in_node ip -o link show lo | grep -q '[<,]UP[,>]'
}

cri_up() {
	[[ -S $NODE/containerd.sock ]] && cri --rpc-timeout 2 version >/dev/null 2>&1
}

image_known() {
	cri image-status "$IMAGE" 2>/dev/null | jq -e --arg i "$IMAGE" '.image.repo_tags | index($i)' >/dev/null
}

# write_cni DIR NAME BRIDGE PREFIX: a CNI network of one bridge, PREFIX.0/24
write_cni() {
	mkdir -p "$1"
	jq -n --arg name "$2" --arg br "$3" --arg subnet "$4.0/24" --arg data "$NODE/cni-ipam" '{
		cniVersion: "0.4.0", name: $name,
		plugins: [{type: "bridge", bridge: $br, isGateway: false, ipMasq: false,
			ipam: {type: "host-local", ranges: [[{subnet: $subnet}]], dataDir: $data}}]
	}' >"$1/10-$2.conflist"
}

# write_config: containerd's configuration. Its own paths, then contrib's
# handlers with this file's wrappers, the shim's runtime root in this
# directory and the sandbox image and CNI settings added, then moat-netb.
write_config() {
	cat >"$NODE/containerd.toml" <<-EOF
		version = 2
		root = "$NODE/root"
		state = "$NODE/state"

		[grpc]
		  address = "$NODE/containerd.sock"

		[ttrpc]
		  address = "$NODE/containerd.sock.ttrpc"

		[debug]
		  address = "$NODE/containerd-debug.sock"

		[plugins."io.containerd.internal.v1.opt"]
		  path = "$NODE/opt"

	EOF
	sed -e '/^version = 2$/d' \
		-e "s|/usr/local/bin/moat-vm\"|$(runtime_for moat-vm)\"|" \
		-e "s|/usr/local/bin/moat\"|$(runtime_for moat)\"|" \
		-e "/BinaryName = /a\\    Root = \"$NODE/runc-root\"" \
		-e "/^  restrict_oom_score_adj = /a\\  sandbox_image = \"$IMAGE\"\\n  netns_mounts_under_state_dir = true" \
		"$BATS_TEST_DIRNAME/../../contrib/engines/containerd/config.toml" \
		>>"$NODE/containerd.toml"
	cat >>"$NODE/containerd.toml" <<-EOF

		[plugins."io.containerd.grpc.v1.cri".cni]
		  bin_dir = "/usr/lib/cni"
		  conf_dir = "$NODE/cni-a"
		  max_conf_num = 1

		[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.moat-netb]
		  runtime_type = "io.containerd.runc.v2"
		  cni_conf_dir = "$NODE/cni-b"
		  cni_max_conf_num = 1
		  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.moat-netb.options]
		    BinaryName = "$(runtime_for moat)"
		    Root = "$NODE/runc-root"
	EOF
}

# node_up: this test's network namespace, containerd in it, the image
node_up() {
	NODE=$ENGINE_DIR/node$BATS_SUITE_TEST_NUMBER
	mkdir -p "$NODE/pods" "$NODE/logs"
	write_cni "$NODE/cni-a" moat-cri-a moatcri0 "$NET_A"
	write_cni "$NODE/cni-b" moat-cri-b moatcri1 "$NET_B"
	write_config
	unshare --net sh -c 'ip link set lo up && exec sleep 2147483647' </dev/null >/dev/null 2>&1 3>&- &
	echo "$!" >"$NODE/holder.pid"
	retry node_netns_ready || return 1
	nsenter --net="$(node_netns)" containerd --config "$NODE/containerd.toml" \
		>"$NODE/containerd.log" 2>&1 </dev/null 3>&- &
	echo "$!" >"$NODE/containerd.pid"
	if ! retry cri_up; then
		echo "# containerd did not start:" >&2
		tail -20 "$NODE/containerd.log" >&2
		return 1
	fi
	ctr_k8s images import --base-name localhost/moat-busybox "$ENGINE_DIR/busybox-oci.tar" >/dev/null || return 1
	retry image_known
}

# moat_roots: the state roots moat may keep this test's containers in (the
# wrappers' own, and the one the shim passes for containerd's k8s.io namespace)
moat_roots() {
	echo "$ENGINE_DIR/moat-state" "$NODE/runc-root/k8s.io"
}

# moat_ids: every moat container in those roots
moat_ids() {
	local root
	for root in $(moat_roots); do
		"$MOAT_BINARY" --root "$root" list -q 2>/dev/null
	done
	return 0
}

moat_state() {
	"$MOAT_BINARY" --root "$NODE/runc-root/k8s.io" state "$1"
}

# node_down: every pod this test made stopped and removed, then containerd,
# its shims and moat-vm's supervisors (their command lines name this node's
# directory) stopped, moat's leftovers deleted, the namespace's holder
# stopped and nothing left mounted under the node's directory
node_down() {
	local pod id root
	if [[ -f $NODE/pods.list ]] && cri_up; then
		while read -r pod; do
			cri stop-pod "$pod" >/dev/null 2>&1
			cri remove-pod "$pod" >/dev/null 2>&1
		done <"$NODE/pods.list"
	fi
	stop_pids "$(cat "$NODE/containerd.pid" 2>/dev/null)"
	# shellcheck disable=SC2046 # one pid per word
	stop_pids $(pids_of_cmdline "$NODE/")
	for root in $(moat_roots); do
		for id in $("$MOAT_BINARY" --root "$root" list -q 2>/dev/null); do
			"$MOAT_BINARY" --root "$root" delete --force "$id" >/dev/null 2>&1 || true
		done
	done
	stop_pids "$(cat "$NODE/holder.pid" 2>/dev/null)"
	unmount_under "$NODE" || {
		echo "# teardown: mounts remain under $NODE:" >&2
		mounts_under "$NODE" >&2
		return 1
	}
}

# --- pods and containers ---------------------------------------------------

# The namespaces the kubelet asks for a pod without shareProcessNamespace:
# network and IPC the pod's, PID the container's own.
NS_OPTIONS='{network: "POD", pid: "CONTAINER", ipc: "POD"}'

# run_pod NAME HANDLER: RunPodSandbox with a PodSandboxConfig kept as
# $NODE/pods/NAME.json; prints the pod's id and records it for node_down
run_pod() {
	local name config id
	name=$(cname "$1")
	config=$NODE/pods/$1.json
	mkdir -p "$NODE/logs/$1"
	jq -n --arg name "$name" --arg logs "$NODE/logs/$1" "{
		metadata: {name: \$name, uid: (\$name + \"-uid\"), namespace: \"moat-test\", attempt: 0},
		hostname: \$name, log_directory: \$logs,
		linux: {security_context: {namespace_options: $NS_OPTIONS}}
	}" >"$config" || return 1
	id=$(cri run-pod "$config" --handler "$2") || return 1
	echo "$id" >>"$NODE/pods.list"
	echo "$id"
}

# create_in POD-ID POD-NAME NAME CMD...: CreateContainer in the pod, its
# log at LOGS/NAME.log; prints the container's id
create_in() {
	local config=$NODE/pods/$2-$3.json
	jq -n --arg name "$3" --arg image "$IMAGE" "{
		metadata: {name: \$name, attempt: 0}, image: {image: \$image},
		command: \$ARGS.positional, log_path: (\$name + \".log\"),
		linux: {security_context: {namespace_options: $NS_OPTIONS}}
	}" --args -- "${@:4}" >"$config" || return 1
	cri create "$1" "$config" "$NODE/pods/$2.json"
}

# run_in POD-ID POD-NAME NAME CMD...: CreateContainer and StartContainer
run_in() {
	local id
	id=$(create_in "$@") || return 1
	cri start "$id" || return 1
	echo "$id"
}

pod_ip() {
	cri pod-status "$1" | jq -r .status.network.ip
}

state_of_container() {
	cri status "$1" | jq -r .status.state
}

state_is() {
	[[ $(state_of_container "$1" 2>/dev/null) == "$2" ]]
}

# fetches ID URL: ExecSync of wget in container ID succeeds within 5 s.
# (busybox 1.35's wget -T crashes, so ExecSync's own timeout bounds it.)
fetches() {
	cri exec-sync --timeout 5 "$1" -- wget -q -O /dev/null "$2" >/dev/null 2>&1
}

# the web server and a client that ends at SIGTERM
WEB='mkdir -p /www && echo hello >/www/index.html && echo web-starting && echo web-stderr >&2 && exec httpd -f -p 8080 -h /www'
CLIENT='trap "echo got-TERM; exit 0" TERM; echo client-up; while :; do sleep 0.2; done'

# check_pod_of_two POD NAME WEB CLIENT: the pod's web server and client as the kubelet sees
# them: ExecSync's exit code and output, ContainerStatus, ListContainers and the CRI logs
# (in $NODE/logs/NAME); then StopContainer and RemoveContainer
check_pod_of_two() {
	local pod=$1 logs=$NODE/logs/$2 web=$3 client=$4
	run cri exec-sync "$client" -- sh -c 'echo out; echo err >&2; exit 3'
	assert_equal "$status" 3
	assert_output --partial out

	assert_equal "$(state_of_container "$web")" CONTAINER_RUNNING
	assert_equal "$(state_of_container "$client")" CONTAINER_RUNNING
	run cri list --pod "$pod" --state running
	assert_success
	assert_equal "$(jq -r '.containers | map(.metadata.name) | sort | join(" ")' <<<"$output")" "client web"
	assert_equal "$(cri status "$web" | jq -r .status.log_path)" "$logs/web.log"

	# CRI log lines: TIME STREAM TAG MESSAGE
	retry grep -q 'stdout F client-up$' "$logs/client.log"
	run cat "$logs/web.log"
	assert_line --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9:]+) stdout F web-starting$'
	assert_line --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9:]+) stderr F web-stderr$'

	# the client ends at SIGTERM; httpd, pid 1 of its own, ignores it and is killed
	cri stop --timeout 10 "$client"
	assert_equal "$(state_of_container "$client")" CONTAINER_EXITED
	assert_equal "$(cri status "$client" | jq -r .status.exit_code)" 0
	retry grep -q 'stdout F got-TERM$' "$logs/client.log"
	cri stop --timeout 1 "$web"
	assert_equal "$(state_of_container "$web")" CONTAINER_EXITED
	assert_equal "$(cri status "$web" | jq -r .status.exit_code)" 137
	cri remove "$client"
	cri remove "$web"
	run cri list --pod "$pod"
	assert_success
	assert_equal "$(jq '.containers | length' <<<"$output")" 0
}

# node_processes: the processes naming this node's directory (shims, moat-vm's
# supervisors and QEMU) other than containerd
node_processes() {
	local pid
	for pid in $(pids_of_cmdline "$NODE/"); do
		[[ $pid == "$(cat "$NODE/containerd.pid")" ]] || echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
	done
	return 0
}

no_node_processes() {
	[[ -z $(node_processes) ]]
}

# assert_node_clean: no moat container, no veth and no process of a pod left
# in the node
assert_node_clean() {
	run moat_ids
	assert_output ''
	run in_node ip -o link show type veth
	assert_success
	assert_output ''
	retry no_node_processes || fail "processes remain: $(node_processes)"
	run k8s_cgroups
	assert_output ''
}

# k8s_cgroups: the cgroups containerd's CRI plugin made for pods (below
# k8s.io on each hierarchy)
k8s_cgroups() {
	find /sys/fs/cgroup/k8s.io /sys/fs/cgroup/*/k8s.io -mindepth 1 -maxdepth 1 -type d 2>/dev/null
	return 0
}

# remove_k8s_cgroup_parents: the CRI plugin's k8s.io parents, when this file
# made them and they are empty (rmdir removes nothing else)
remove_k8s_cgroup_parents() {
	local dir
	[[ -f $ENGINE_DIR/k8s-cgroups-existed ]] && return 0
	for dir in /sys/fs/cgroup/k8s.io /sys/fs/cgroup/*/k8s.io; do
		[[ -d $dir ]] && rmdir "$dir" 2>/dev/null
	done
	return 0
}

# --- set-up ------------------------------------------------------------------

setup_file() {
	command -v containerd >/dev/null || return 0
	engine_setup_file || return 1
	[[ -n ${ENGINE_DIR:-} ]] || return 0
	# the sandbox's command: the image's config says to wait (a pod's
	# sandbox is killed with SIGKILL)
	make_oci_archive "$ENGINE_DIR/busybox.tar" "$ENGINE_DIR/busybox-oci.tar" \
		'{"Cmd":["sleep","2147483647"]}' || return 1
	# containerd makes a k8s.io cgroup on each hierarchy for the pods
	if [[ -d /sys/fs/cgroup/k8s.io ]] || compgen -G '/sys/fs/cgroup/*/k8s.io' >/dev/null; then
		touch "$ENGINE_DIR/k8s-cgroups-existed"
	fi
}

teardown_file() {
	[[ -n ${ENGINE_DIR:-} ]] && remove_k8s_cgroup_parents
	engine_teardown_file
}

setup() {
	command -v containerd >/dev/null || skip "containerd is not installed (Debian package containerd)"
	"$PYTHON" -c 'import grpc, google.protobuf' 2>/dev/null ||
		skip "python3-grpcio or python3-protobuf is not installed (Debian packages)"
	[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] ||
		skip "the CNI plugins are not installed (Debian package containernetworking-plugins)"
	command -v jq >/dev/null || skip "jq is not installed"
	engine_setup
	node_up
}

teardown() {
	[[ -n ${NODE:-} ]] && node_down
	return 0
}

# --- tests -------------------------------------------------------------------

@test "cri: containerd serves runtime.v1 with the moat, moat-vm and moat-netb handlers" {
	run cri version
	assert_success
	assert_equal "$(jq -r .runtime_name <<<"$output")" containerd
	assert_equal "$(jq -r .runtime_api_version <<<"$output")" v1
	run cri runtime-status
	assert_success
	jq -e '.status.conditions | map(select(.type == "NetworkReady")) | .[0].status' <<<"$output"
	grep -F 'Start cri plugin with config' "$NODE/containerd.log" >"$BATS_TEST_TMPDIR/cri-config"
	run cat "$BATS_TEST_TMPDIR/cri-config"
	assert_output --partial "BinaryName:$(runtime_for moat)"
	assert_output --partial "BinaryName:$(runtime_for moat-vm)"
	assert_output --partial "NetworkPluginConfDir:$NODE/cni-b"
}

@test "cri moat: a pod of two containers on the bridge; ExecSync fetches from the other over the pod IP; status, list, logs; nothing left" {
	local pod ip web client
	pod=$(run_pod a moat)
	ip=$(pod_ip "$pod")
	[[ $ip == "$NET_A".* ]] || fail "pod IP '$ip' is not in $NET_A.0/24"
	web=$(run_in "$pod" a web sh -c "$WEB")
	client=$(run_in "$pod" a client sh -c "$CLIENT")
	retry fetches "$client" "http://$ip:8080/"
	run cri exec-sync "$client" -- wget -q -O - "http://$ip:8080/"
	assert_success
	assert_output hello
	# one network namespace: the server is on the client's loopback too
	run cri exec-sync "$client" -- wget -q -O - http://127.0.0.1:8080/
	assert_success
	assert_output hello
	check_pod_of_two "$pod" a "$web" "$client"
	cri stop-pod "$pod"
	cri remove-pod "$pod"
	run cri pod-status "$pod"
	assert_failure
	assert_output --partial NOT_FOUND
	assert_node_clean
	run in_node ip -o link show type bridge
	assert_output --partial moatcri0
}

# "Allowed" here is the CNI configuration's: pods on one bridge reach each
# other; a bridge without a gateway gives its pods no route off it, so a pod
# of moat-cri-b has no path to moat-cri-a.
@test "cri moat: a pod on the same network reaches another pod's port; a pod on another network does not" {
	local pod_a pod_c pod_b ip_a ip_b client
	pod_a=$(run_pod a moat)
	ip_a=$(pod_ip "$pod_a")
	run_in "$pod_a" a web sh -c "$WEB" >/dev/null
	pod_c=$(run_pod c moat)
	[[ $(pod_ip "$pod_c") == "$NET_A".* ]] || fail "pod c is not on $NET_A.0/24"
	client=$(run_in "$pod_c" c client sh -c "$CLIENT")
	retry fetches "$client" "http://$ip_a:8080/"
	run cri exec-sync "$client" -- wget -q -O - "http://$ip_a:8080/"
	assert_output hello

	pod_b=$(run_pod b moat-netb)
	ip_b=$(pod_ip "$pod_b")
	[[ $ip_b == "$NET_B".* ]] || fail "pod b's IP '$ip_b' is not in $NET_B.0/24"
	client=$(run_in "$pod_b" b client sh -c "$CLIENT")
	SECONDS=0
	run cri exec-sync --timeout 10 "$client" -- wget -q -O - "http://$ip_a:8080/"
	assert_failure
	refute_output --partial hello
	((SECONDS < 10)) || fail "the refusal took ${SECONDS}s"
	echo "# pod b to pod a: $output" >&3

	for pod in "$pod_b" "$pod_c" "$pod_a"; do
		cri stop-pod "$pod"
		cri remove-pod "$pod"
	done
	assert_node_clean
}

# A moat-vm pod: its sandbox runs in a microVM with the pod's interface
# carried into it. The guest answers on the bridge: a closed port's TCP reset
# ("Connection refused") comes from the guest's kernel, the only holder of
# the pod IP.

# vm_pod NAME: a moat-vm pod (sets VM_POD, VM_IP) and a moat pod on the same
# bridge with a client in it (sets PROBE)
vm_pod() {
	VM_POD=$(run_pod "$1" moat-vm) || return 1
	VM_IP=$(pod_ip "$VM_POD")
	[[ $VM_IP == "$NET_A".* ]] || fail "pod IP '$VM_IP' is not in $NET_A.0/24"
	local probe_pod
	probe_pod=$(run_pod "$1-probe" moat) || return 1
	PROBE=$(run_in "$probe_pod" "$1-probe" client sh -c "$CLIENT")
}

# guest_answers: the probe's connection to the VM's closed port is refused
guest_answers() {
	cri exec-sync --timeout 5 "$PROBE" -- wget -q -O - "http://$VM_IP:8080/" 2>&1 |
		grep -q 'Connection refused'
}

# remove_pods: StopPodSandbox and RemovePodSandbox of every pod this test ran
remove_pods() {
	local pod
	while read -r pod; do
		cri stop-pod "$pod" || return 1
		cri remove-pod "$pod" || return 1
	done <"$NODE/pods.list"
}

@test "cri moat-vm: the sandbox's microVM holds the pod IP and answers on the bridge under its own kernel; RemovePodSandbox leaves nothing" {
	skip_unless_vm
	vm_pod v
	run moat_state "$VM_POD"
	assert_success
	assert_equal "$(jq -r '.annotations["moat.isolation"]' <<<"$output")" microvm
	assert_equal "$(jq -r '.annotations["moat.vm.network"]' <<<"$output")" "eth0 $VM_IP/24"
	retry guest_answers
	# ExecSync is for containers, not sandboxes; containerd's own exec reaches
	# the sandbox's task: it runs under the guest's kernel
	run cri exec-sync "$VM_POD" -- uname -r
	assert_failure
	assert_output --partial NOT_FOUND
	run ctr_k8s task exec --exec-id uname "$VM_POD" uname -r
	assert_success
	assert_output --regexp '^6\.1\.'
	[[ $output != "$(uname -r)" ]] || fail "the sandbox ran under the host's kernel"
	remove_pods
	assert_node_clean
}

# The pod is one VM (docs/microvm-network.md): its containers run in the sandbox's guest,
# each in a container of its own there, on the pod's network.
@test "cri moat-vm: a pod of two containers in one VM: both under the guest's kernel, one fetches from the other over the pod IP; status, list, logs, exec; nothing left" {
	skip_unless_vm
	local web client kernel
	vm_pod v
	web=$(run_in "$VM_POD" v web sh -c "$WEB")
	client=$(run_in "$VM_POD" v client sh -c "$CLIENT")
	# no second VM: the containers' host processes are their relays, and one QEMU runs
	run moat_state "$web"
	assert_equal "$(jq -r '.annotations["moat.vm.pod"]' <<<"$output")" "$VM_POD"
	# (moat's microVMs share the rootfs by the tag moatroot; the test host's QEMU does not)
	assert_equal "$(pgrep -c -f "qemu-system-x86_64.*moatroot")" 1
	kernel=$(cri exec-sync "$web" -- uname -r)
	[[ $kernel == 6.1.* && $kernel != "$(uname -r)" ]] || fail "the web container ran under kernel '$kernel'"
	run cri exec-sync "$client" -- uname -r
	assert_output "$kernel"
	retry fetches "$client" "http://$VM_IP:8080/"
	run cri exec-sync "$client" -- wget -q -O - "http://$VM_IP:8080/"
	assert_success
	assert_output hello
	run cri exec-sync "$client" -- wget -q -O - http://127.0.0.1:8080/
	assert_output hello
	# the pod's bridge reaches the web container in the guest
	run cri exec-sync "$PROBE" -- wget -q -O - "http://$VM_IP:8080/"
	assert_output hello
	# each has its own rootfs: the page is the web container's only
	run cri exec-sync "$client" -- cat /www/index.html
	assert_failure
	# member-update-reaches-guest: UpdateContainerResources, the kubelet's in-place resize,
	# reaches the container's cgroup in the guest (where /proc/self/cgroup places it)
	echo '{"memory_limit_in_bytes": "67108864", "cpu_quota": "50000", "cpu_period": "100000"}' \
		>"$NODE/resources.json"
	cri update "$web" "$NODE/resources.json"
	run cri exec-sync "$web" -- sh -c 'd=/sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup)
		cat "$d/memory.max" "$d/cpu.max"'
	assert_success
	assert_output "$(printf '%s\n' 67108864 '50000 100000')"
	check_pod_of_two "$VM_POD" v "$web" "$client"
	# the sandbox's guest still answers on the bridge
	retry guest_answers
	remove_pods
	assert_node_clean
}
