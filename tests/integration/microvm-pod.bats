#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# A pod is one VM (docs/microvm-network.md): a container whose config joins the network
# namespace of a microVM that moat runs (the sandbox, as a Kubernetes pod's pause container
# or a Podman pod's infra container) boots no VM of its own. It runs in the sandbox's guest
# as one more container there, with its own rootfs, mount and (unless shared) PID namespace,
# and the sandbox's network, IPC and UTS namespaces; state, exec, kill, pause, delete and
# its exit code work as for any container. Every VM here is QEMU's TCG.
# shellcheck disable=SC2154 # bats sets status, output

load helpers

setup_file() {
	microvm_setup_file
}

# The sandbox is $CID from $BUNDLE (as microvm_setup makes them); the member, $MEMBER from
# $MEMBER_BUNDLE: a busybox rootfs with a file of its own, and the same microVM annotations.
setup() {
	microvm_setup
	SANDBOX_BUNDLE=$BUNDLE
	cfg_set '.hostname = "podhost"'
	cfg_sh 'echo sandbox-up; exec sleep 2147483647'
	echo sandbox >"$BUNDLE/rootfs/whoami"
	make_bundle "$TEST_DIR/member"
	MEMBER_BUNDLE=$BUNDLE
	MEMBER=$CID-m
	cfg_set '.annotations["moat.vm.accel"] = "tcg" | .root.readonly = false | del(.hostname)
		| .linux.namespaces |= map(select(.type != "user"))
		| del(.linux.uidMappings, .linux.gidMappings)'
	echo member >"$BUNDLE/rootfs/whoami"
	BUNDLE=$SANDBOX_BUNDLE
	CONFIG=$BUNDLE/config.json
	export SANDBOX_BUNDLE MEMBER_BUNDLE MEMBER
}

teardown() {
	moat delete --force "$MEMBER" >/dev/null 2>&1 || true
	moat_teardown
}

# start_sandbox: the sandbox runs, its guest answers exec
start_sandbox() {
	moat_run_detached || return 1
	retry moat exec "$CID" true
}

# member_cfg SCRIPT [JQ-FILTER]: the member's config joins the sandbox's network, IPC and
# UTS namespaces by path, has a PID namespace of its own and runs SCRIPT (sh -c)
member_cfg() {
	local pid
	pid=$(state_of "$CID" | jq -r .pid) || return 1
	CONFIG=$MEMBER_BUNDLE/config.json cfg_set '.process.args = ["/bin/sh", "-c", $script]
		| .linux.namespaces |= map(
			if .type == "network" or .type == "ipc" or .type == "uts"
			then .path = ("/proc/" + $pid + "/ns/" + (if .type == "network" then "net" else .type end))
			else . end) | '"${2:-.}" --arg script "$1" --arg pid "$pid"
}

# run_member [FLAGS...]: `moat run --detach` of the member, its stdio in its files
run_member() {
	CID=$MEMBER BUNDLE=$MEMBER_BUNDLE moat_run_detached "$@"
}

# ns_of ID: the namespaces an exec'd process of container ID is in, in the guest
ns_of() {
	moat exec "$1" sh -c 'for n in net ipc uts pid mnt; do echo "$n $(readlink /proc/self/ns/$n)"; done'
}

# pod_mounts: what is mounted under /pod in the sandbox VMM's jail
pod_mounts() {
	awk '$5 ~ "^/pod/" { print $5 }' "/proc/$(state_of "$CID" | jq -r .pid)/mountinfo"
}

@test "microvm pod: a container joining a microVM's network runs in its guest: own rootfs and PID namespace, the pod's network, IPC and UTS" {
	local sandbox_ns member_ns
	start_sandbox
	member_cfg 'echo member-up; exec httpd -f -p 8080 -h /'
	run_member
	retry grep -q member-up "$(out_file "$MEMBER")"
	run state_of "$MEMBER"
	assert_success
	assert_equal "$(jq -r .status <<<"$output")" running
	assert_equal "$(jq -r '.annotations["moat.isolation"]' <<<"$output")" microvm
	assert_equal "$(jq -r '.annotations["moat.vm.pod"]' <<<"$output")" "$CID"
	assert_equal "$(jq -r '.annotations["moat.vm.accel"]' <<<"$output")" tcg
	# no VM of its own: its host pid is its relay, alone, and the one QEMU is the sandbox's
	assert_equal "$(process_tree "$(jq -r .pid <<<"$output")" | wc -l)" 1
	assert_equal "$(pgrep -c -P "$(state_of "$CID" | jq -r .pid)" qemu-system)" 1

	run moat exec "$MEMBER" sh -c 'cat /whoami; uname -r; hostname; ps -o pid,args | grep -c "[h]ttpd -f"'
	assert_success
	assert_equal "${lines[0]}" member
	assert_output --regexp $'\n6\\.1\\.'
	[[ ${lines[1]} != "$(uname -r)" ]] || fail "the member ran under the host's kernel"
	assert_equal "${lines[2]}" podhost
	assert_equal "${lines[3]}" 1
	# the sandbox's rootfs is its own, and it sees none of the member's processes
	run moat exec "$CID" sh -c 'cat /whoami; ps -o args | grep -c "[h]ttpd -f"'
	assert_equal "${lines[0]}" sandbox
	assert_equal "${lines[1]}" 0
	# one network: the sandbox reaches the member's server on its loopback
	run moat exec "$CID" wget -q -O - http://127.0.0.1:8080/whoami
	assert_success
	assert_output member
	sandbox_ns=$(ns_of "$CID")
	member_ns=$(ns_of "$MEMBER")
	for n in net ipc uts; do
		assert_equal "$(grep "^$n " <<<"$member_ns")" "$(grep "^$n " <<<"$sandbox_ns")"
	done
	for n in pid mnt; do
		[[ $(grep "^$n " <<<"$member_ns") != "$(grep "^$n " <<<"$sandbox_ns")" ]] ||
			fail "the member shares the sandbox's $n namespace"
	done
}

@test "microvm pod: a member sharing the pod's PID namespace sees the sandbox's processes" {
	start_sandbox
	member_cfg 'exec sleep 2147483647' '.linux.namespaces |= map(if .type == "pid" then .path = ("/proc/" + $pid + "/ns/pid") else . end)'
	run_member
	# PID 1 is the sandbox's process; the member's is another
	run moat exec "$MEMBER" ps -o pid,args
	assert_success
	assert_line --regexp '^ +1 +sleep 2147483647$'
	run moat exec "$MEMBER" cat /proc/1/root/whoami
	assert_output sandbox
	assert_equal "$(ns_of "$MEMBER" | grep '^pid ')" "$(ns_of "$CID" | grep '^pid ')"
}

@test "microvm pod: the member's exit code, kill, and a foreground run's status are the guest process's" {
	start_sandbox
	member_cfg 'trap "echo got-TERM; exit 3" TERM; echo ready; while :; do sleep 0.1; done'
	run_member
	retry grep -q ready "$(out_file "$MEMBER")"
	run_moat kill "$MEMBER" TERM
	assert_success
	retry status_is "$MEMBER" stopped
	grep -q got-TERM "$(out_file "$MEMBER")"
	run_moat delete "$MEMBER"
	assert_success

	member_cfg 'echo out; echo err >&2; exit 42'
	run_moat run --bundle "$MEMBER_BUNDLE" "$MEMBER"
	assert_equal "$status" 42
	assert_equal "$output" out
	assert_equal "$stderr" err
	[[ ! -e $MOAT_ROOT/$MEMBER ]] || fail "run left the member's state"

	member_cfg 'exec sleep 2147483647'
	run_member
	run_moat kill "$MEMBER" KILL
	assert_success
	retry status_is "$MEMBER" stopped
	# the sandbox runs on
	assert_equal "$(status_of "$CID")" running
	moat exec "$CID" true
}

@test "microvm pod: exec into a member runs in its container, with its exit code and stdio" {
	start_sandbox
	member_cfg 'exec sleep 2147483647'
	run_member
	run moat exec "$MEMBER" sh -c 'cat /whoami; echo to-err >&2; exit 5'
	assert_equal "$status" 5
	assert_output --partial member
	run_moat exec "$MEMBER" sh -c 'cat >/got; cat /got' <<<"from-stdin"
	assert_success
	assert_equal "$output" from-stdin
	assert_equal "$(cat "$MEMBER_BUNDLE/rootfs/got")" from-stdin
}

@test "microvm pod: pause freezes the member's processes in the guest, and only them; resume thaws them" {
	local a b
	start_sandbox
	member_cfg 'i=0; while :; do i=$((i+1)); echo $i > /count.new; mv /count.new /count; sleep 0.05; done'
	run_member
	retry test -s "$MEMBER_BUNDLE/rootfs/count"
	run_moat pause "$MEMBER"
	assert_success
	assert_equal "$(status_of "$MEMBER")" paused
	a=$(cat "$MEMBER_BUNDLE/rootfs/count")
	sleep 1
	b=$(cat "$MEMBER_BUNDLE/rootfs/count")
	assert_equal "$b" "$a"
	# the sandbox is not frozen
	run moat exec "$CID" echo alive
	assert_output alive
	run_moat resume "$MEMBER"
	assert_success
	assert_equal "$(status_of "$MEMBER")" running
	retry bash -c "(( \$(cat '$MEMBER_BUNDLE/rootfs/count') > $b ))"
}

# member-update-reaches-guest: `moat update` of a member changed only its host cgroup, which
# holds its init alone; its processes in the pod's guest kept the limits they started with.
@test "microvm pod: the member's memory limit is its cgroup's in the guest; a hog is OOM-killed there, the pod lives on; member-update-reaches-guest: update changes it there" {
	start_sandbox
	member_cfg 'exec sleep 2147483647' '.linux.resources.memory.limit = 33554432
		| .mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup",
			options: ["nosuid", "noexec", "nodev"]}]'
	run_member
	run moat exec "$MEMBER" cat /sys/fs/cgroup/memory.max
	assert_success
	assert_output 33554432
	run moat exec "$MEMBER" sh -c 'head -c 200m /dev/zero | tail > /dev/null'
	assert_equal "$status" 137
	run moat exec "$MEMBER" sh -c 'grep -w oom_kill /sys/fs/cgroup/memory.events'
	assert_output --regexp '^oom_kill [1-9]'
	assert_equal "$(status_of "$MEMBER")" running
	moat exec "$CID" true
	moat update --memory 64m --pids-limit 40 --cpu-quota 50000 --cpu-period 100000 "$MEMBER"
	run moat exec "$MEMBER" cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max /sys/fs/cgroup/cpu.max
	assert_success
	assert_output "$(printf '%s\n' 67108864 40 '50000 100000')"
	moat update --memory -1 --pids-limit -1 --cpu-quota -1 "$MEMBER"
	run moat exec "$MEMBER" cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max /sys/fs/cgroup/cpu.max
	assert_output "$(printf '%s\n' max max 'max 100000')"
}

@test "microvm pod: delete takes the member's root out of the VM; the sandbox runs on and the same id runs again" {
	start_sandbox
	member_cfg 'exec sleep 2147483647'
	run_member
	assert_equal "$(pod_mounts)" "/pod/$MEMBER"
	run_moat delete --force "$MEMBER"
	assert_success
	assert_equal "$(pod_mounts)" ""
	[[ ! -e $MOAT_ROOT/$CID/pod/$MEMBER ]] || fail "the member's directory in the pod's share remains"
	[[ ! -e $MOAT_ROOT/$MEMBER ]] || fail "the member's state remains"
	run_member
	run moat exec "$MEMBER" cat /whoami
	assert_output member
	assert_equal "$(status_of "$CID")" running
}

@test "microvm pod: the sandbox's end ends its members: they stop with 137, and delete leaves nothing" {
	start_sandbox
	member_cfg 'exec sleep 2147483647'
	run_member
	run_moat kill "$CID" KILL
	assert_success
	retry status_is "$CID" stopped
	retry status_is "$MEMBER" stopped
	run_moat delete "$MEMBER"
	assert_success
	run_moat delete "$CID"
	assert_success
	assert_equal "$(ls "$MOAT_ROOT")" ""
	assert_no_residue "$CID"
	assert_no_residue "$MEMBER" "$MEMBER_BUNDLE"
}

@test "microvm pod: a member whose program is missing fails at start with one line; delete leaves nothing" {
	start_sandbox
	member_cfg 'true' '.process.args = ["/no/such/program"]'
	run_member
	retry status_is "$MEMBER" stopped
	run cat "$(err_file "$MEMBER")"
	assert_output --regexp '^moat: .*/no/such/program.*No such file or directory$'
	assert_equal "${#lines[@]}" 1
	run_moat delete "$MEMBER"
	assert_success
	assert_equal "$(pod_mounts)" ""
	moat exec "$CID" true
}

@test "microvm pod: a member that asks for container isolation is refused with one line naming the pod" {
	start_sandbox
	member_cfg 'true' '.annotations["moat.isolation"] = "container"'
	CID=$MEMBER BUNDLE=$MEMBER_BUNDLE run_moat create --bundle "$MEMBER_BUNDLE" "$MEMBER"
	assert_moat_error "^moat: annotations.moat.isolation: container, but the config joins the network namespace of microVM $CID"
	[[ ! -e $MOAT_ROOT/$MEMBER ]] || fail "the member's state remains"
}

@test "microvm pod: a member whose bind source is missing fails create with one line; nothing is left in the pod's share" {
	start_sandbox
	member_cfg 'true' '.mounts += [{destination: "/data", type: "bind", source: "/no/such/dir", options: ["rbind"]}]'
	use_policy_without deny-host-mounts
	run_moat create --bundle "$MEMBER_BUNDLE" "$MEMBER"
	assert_moat_error "/no/such/dir"
	[[ ! -e $MOAT_ROOT/$MEMBER ]] || fail "the member's state remains"
	[[ -z $(ls -A "$MOAT_ROOT/$CID/pod") ]] || fail "the pod's share holds: $(ls -A "$MOAT_ROOT/$CID/pod")"
	assert_equal "$(pod_mounts)" ""
	moat exec "$CID" true
}

# An exec into a member gets the member's seccomp filter, not the sandbox's.
@test "microvm pod: a process exec'd into a member is under the member's seccomp filter" {
	start_sandbox
	member_cfg 'exec sleep 2147483647' '.linux.seccomp.syscalls |= (map(.names -= ["mkdir", "mkdirat"])
		| map(select(.names | length > 0))
		| . + [{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO", errnoRet: 1}])'
	run_member
	run moat exec "$MEMBER" mkdir /made-by-exec
	assert_failure
	assert_output --partial 'Operation not permitted'
	run moat exec "$CID" mkdir /made-by-exec
	assert_success
}
