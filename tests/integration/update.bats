#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# moat update: a running container's limits change, from flags or from OCI
# LinuxResources JSON (a file or stdin, as containerd sends it), and the new
# values are what the saved config and a second update build on.
#
# Each limit is read back from the container's cgroup on this host's layout: the v1
# controller's file, or on cgroup v2 the file and the value moat converts it to
# (cgroup-resources.c): memory.max, memory.swap.max (OCI's swap counts memory+swap, v2's
# swap alone), cpu.max ("QUOTA PERIOD"), cpu.weight (from cpu.shares), "max" for no limit.

load helpers

# start_limited [RESOURCES]: a sleeping container limited to 64 MiB and 50 pids, with the
# jq object RESOURCES added to its linux.resources.
start_limited() {
	make_bundle
	cfg_set ".linux.resources = {memory: {limit: 67108864}, pids: {limit: 50}} + ${1:-null}"
	cfg_args sleep 300
	moat_run_detached
}

# cg CTRL V1FILE V2FILE: what the container's cgroup file for a setting holds (cgroup_file;
# '-' names no file, for a layout the caller does not read there).
cg() {
	cat "$(cgroup_file "$@")"
}

# v2_weight SHARES: the cpu.weight moat writes for cpu.shares SHARES on cgroup v2 (the
# mapping of runc, crun and systemd).
v2_weight() {
	echo $((1 + ($1 - 2) * 9999 / 262142))
}

@test "update --memory and --pids-limit change the live limits" {
	start_limited
	run_moat update --memory 128m --pids-limit 99 "$CID"
	assert_success
	assert_equal "$(cg memory memory.limit_in_bytes memory.max)" 134217728
	assert_equal "$(cg pids pids.max pids.max)" 99
}

@test "update --cpu-quota, --cpu-period, --cpu-share (runc's spelling) and --cpuset-cpus" {
	start_limited
	run_moat update --cpu-period 50000 --cpu-quota 25000 --cpu-share 512 --cpuset-cpus 0 "$CID"
	assert_success
	if cgroup_v2; then
		assert_equal "$(cg cpu - cpu.max)" "25000 50000"
		assert_equal "$(cg cpu - cpu.weight)" "$(v2_weight 512)"
	else
		assert_equal "$(cg cpu cpu.cfs_period_us -)" 50000
		assert_equal "$(cg cpu cpu.cfs_quota_us -)" 25000
		assert_equal "$(cg cpu cpu.shares -)" 512
	fi
	assert_equal "$(cg cpuset cpuset.cpus cpuset.cpus)" 0
}

@test "update --memory-swap and -1 for unlimited" {
	start_limited
	run_moat update --memory 64m --memory-swap 96m "$CID"
	assert_success
	if cgroup_v2; then
		# swap alone: memory+swap less memory
		assert_equal "$(cg memory - memory.swap.max)" $((32 << 20))
	else
		assert_equal "$(cg memory memory.memsw.limit_in_bytes -)" $((96 << 20))
	fi
	run_moat update --pids-limit -1 "$CID"
	assert_success
	assert_equal "$(cg pids pids.max pids.max)" max
}

@test "update --resources - reads LinuxResources JSON from stdin" {
	start_limited
	run_moat update --resources - "$CID" <<<'{"memory": {"limit": 100663296}, "pids": {"limit": 77}}'
	assert_success
	assert_equal "$(cg memory memory.limit_in_bytes memory.max)" 100663296
	assert_equal "$(cg pids pids.max pids.max)" 77
}

# what `docker update --memory 300m --memory-swap 300m` sends through containerd
@test "update --resources: Docker's zeros for the values left alone change nothing" {
	# shares of 512, not the default, so that a reset to the default would show
	start_limited '{cpu: {shares: 512}}'
	run_moat update --resources - "$CID" <<<'{"memory":{"limit":314572800,"reservation":0,"swap":314572800,"kernel":0},"cpu":{"shares":0,"quota":0,"period":0},"blockIO":{"weight":0}}'
	assert_success
	assert_equal "$(cg memory memory.limit_in_bytes memory.max)" 314572800
	if cgroup_v2; then
		assert_equal "$(cg memory - memory.swap.max)" 0
		assert_equal "$(cg cpu - cpu.weight)" "$(v2_weight 512)"
		assert_equal "$(cg cpu - cpu.max)" "max 100000"
	else
		assert_equal "$(cg memory memory.memsw.limit_in_bytes -)" 314572800
		assert_equal "$(cg cpu cpu.shares -)" 512
		assert_equal "$(cg cpu cpu.cfs_quota_us -)" -1
	fi
}

@test "update --resources FILE" {
	start_limited
	echo '{"cpu": {"quota": 20000, "period": 100000}}' >"$TEST_DIR/res.json"
	run_moat update -r "$TEST_DIR/res.json" "$CID"
	assert_success
	if cgroup_v2; then
		assert_equal "$(cg cpu - cpu.max)" "20000 100000"
	else
		assert_equal "$(cg cpu cpu.cfs_quota_us -)" 20000
	fi
}

@test "update records the new values in the saved config, keeping the others" {
	start_limited
	moat update --pids-limit 33 "$CID"
	run jq -c .linux.resources "$MOAT_ROOT/$CID/config.json"
	assert_output '{"memory":{"limit":67108864},"pids":{"limit":33}}'
	moat update --memory 80m "$CID"
	run jq -c .linux.resources "$MOAT_ROOT/$CID/config.json"
	assert_output '{"memory":{"limit":83886080},"pids":{"limit":33}}'
}

@test "a raised memory limit lets a process that was killed at the old one live" {
	make_bundle
	cfg_set '.linux.resources = {memory: {limit: 33554432, swap: 33554432}}'
	cfg_args sleep 300
	moat_run_detached
	# shellcheck disable=SC2016 # expanded by the container's shell
	# a shell holding 48 MiB: killed by the OOM killer under 32 MiB
	run moat exec "$CID" sh -c 'x=$(head -c 50331648 /dev/zero | tr "\0" a); echo ${#x}'
	assert_equal "$status" 137
	moat update --memory 256m --memory-swap 256m "$CID"
	run moat exec "$CID" sh -c 'x=$(head -c 50331648 /dev/zero | tr "\0" a); echo ${#x}'
	assert_success
	assert_output 50331648
}

@test "update errors are one line and name the flag or field" {
	start_limited
	run_moat update --memory 12x "$CID"
	assert_moat_error "--memory: '12x' is not a size"
	run_moat update --blkio-weight 5 "$CID"
	assert_moat_error '--blkio-weight'
	run_moat update -r - --memory 1m "$CID" <<<'{}'
	assert_moat_error '--resources cannot be combined with resource flags'
	run_moat update "$CID"
	assert_moat_error 'nothing to change'
	run_moat update -r - "$CID" <<<'{"memory": {"limit": "big"}}'
	assert_moat_error '--resources: stdin: memory.limit: expected integer, got string'
	run_moat update --cpuset-cpus 99 "$CID"
	assert_moat_error 'linux.resources.cpu.cpus'
	run_moat update --memory 1m no-such-container
	assert_moat_error 'no-such-container'
}

@test "update of a stopped container fails with one line" {
	make_bundle
	cfg_args true
	moat_run_detached
	retry status_is "$CID" stopped
	run_moat update --pids-limit 10 "$CID"
	assert_moat_error "update: container '$CID' is stopped"
}

@test "the state records what was written for each resource, and update keeps it current" {
	start_limited
	run jq -r '.cgroupApplied["linux.resources.memory.limit"], .cgroupApplied["linux.resources.pids.limit"]' \
		"$MOAT_ROOT/$CID/state.json"
	assert_line --index 0 "$(cgroup_file memory memory.limit_in_bytes memory.max)=67108864"
	assert_line --index 1 "$(cgroup_file pids pids.max pids.max)=50"
	moat update --pids-limit 9 "$CID"
	run jq -r '.cgroupApplied["linux.resources.pids.limit"]' "$MOAT_ROOT/$CID/state.json"
	assert_output "$(cgroup_file pids pids.max pids.max)=9"
}

@test "update --memory -1 lifts memory+swap too unless --memory-swap is given" {
	make_bundle
	cfg_set '.linux.resources = {memory: {limit: 67108864, swap: 100663296}}'
	cfg_args sleep 300
	moat_run_detached
	run_moat update --memory -1 "$CID"
	assert_success
	if cgroup_v2; then
		assert_equal "$(cg memory - memory.max)" max
		assert_equal "$(cg memory - memory.swap.max)" max
	else
		# v1 has no "max": unlimited reads as a huge number
		[[ $(cg memory memory.limit_in_bytes -) -gt $((1 << 40)) ]]
		[[ $(cg memory memory.memsw.limit_in_bytes -) -gt $((1 << 40)) ]]
	fi
}

# issue 14 (20): as at create, memory.kernel where the kernel has no such limit (cgroup v1
# since Linux 6.1, and cgroup v2) is ignored with a warning and a moat.cgroup.ignored note,
# and the rest of the update applies.
@test "update with memory.kernel the kernel ignores: the rest applies, with a warning and a note in moat state" {
	local v major minor why
	if cgroup_v2; then
		why='the kernel has no kernel-memory limit on cgroup v2'
	else
		[[ -e $(cgroup_dirs memory)/memory.kmem.limit_in_bytes ]] ||
			skip "no cgroup v1 memory.kmem.limit_in_bytes"
		v=$(uname -r)
		major=${v%%.*}
		minor=${v#*.}
		minor=${minor%%[!0-9]*}
		((major > 6 || (major == 6 && minor >= 1))) || skip "kernels before 6.1 honour memory.kmem.limit_in_bytes"
		why='the kernel has no kernel-memory limit (a write to memory.kmem.limit_in_bytes has no effect)'
	fi
	start_limited
	run_moat update --resources - "$CID" <<<'{"memory": {"kernel": 16777216}, "pids": {"limit": 66}}'
	assert_success
	# shellcheck disable=SC2154 # run_moat sets stderr
	assert_equal "$stderr" "moat: warning: linux.resources.memory.kernel: ignored: $why"
	assert_equal "$(cg pids pids.max pids.max)" 66
	run state_of
	assert_success
	assert_equal "$(jq -r '.annotations["moat.cgroup.ignored"]' <<<"$output")" \
		"linux.resources.memory.kernel: $why"
}
