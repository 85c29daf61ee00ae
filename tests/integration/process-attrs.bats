#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The process attributes runtime-spec 1.2 defines beyond user, capabilities
# and rlimits: process.scheduler, process.ioPriority, process.execCPUAffinity,
# linux.personality, linux.memoryPolicy, process.selinuxLabel and
# process.apparmorProfile.
#
# What the container can see is checked from inside it (and, for the init
# waiting after `create`, from the host). What a user namespace cannot grant,
# and every value the config alone shows to be wrong, must fail `create` with
# one line that names the field, and leave nothing behind.
#
# Not exercised here, because this host cannot: a successful real-time or
# deadline policy and the real-time I/O class (they need CAP_SYS_NICE in the
# initial user namespace, and moat's default config has a user namespace);
# SELinux and AppArmor labels being set (neither LSM is enabled, so only the
# "asked for but absent" refusals run); execCPUAffinity.initial as distinct
# from .final (only the affinity at exec is observable).

# shellcheck disable=SC2016 # single-quoted scripts and jq filters expand later
# shellcheck disable=SC2030,SC2031 # CID changes per case within one test
load helpers

setup() {
	moat_setup
	make_bundle
	cp "$CONFIG" "$TEST_DIR/pristine.json"
	BASE_CID=$CID
	CASE=0
}

# The container's own scheduling fields, read by the shell itself (a
# builtin `read`, so /proc/self is the container process, not a child):
# /proc/PID/stat fields 18 priority, 19 nice, 40 rt_priority, 41 policy,
# counted here from field 3, after the command name.
STAT_FIELDS='read -r s </proc/self/stat; set -- ${s##*) }
echo "priority=${16} nice=${17} rt_priority=${38} policy=${39}"'

# The affinity the container process runs with, read by the shell itself.
CPUS_ALLOWED='while read -r k v; do if [ "$k" = Cpus_allowed_list: ]; then echo "$v"; fi
done </proc/self/status'

# cpu_online N: CPU N is online on this host.
cpu_online() {
	local range
	local -a ranges
	IFS=, read -ra ranges </sys/devices/system/cpu/online
	for range in "${ranges[@]}"; do
		((${range%-*} <= $1 && $1 <= ${range#*-})) && return 0
	done
	return 1
}

require_cpus_0_and_1() {
	if ! cpu_online 0 || ! cpu_online 1; then
		skip "needs CPUs 0 and 1 online"
	fi
}

require_numa_node0() {
	if [[ ! -d /sys/devices/system/node/node0 ]]; then
		skip "the host kernel has no NUMA node 0"
	fi
}

require_userns() {
	if [[ $(cfg_get '[.linux.namespaces[].type] | index("user")') == null ]]; then
		skip "the default config has no user namespace"
	fi
}

# refuse_config FILTER REGEX: with the jq FILTER applied to the bundle's
# original config, `create` fails with one line matching REGEX and leaves
# nothing of the container behind. Each case gets its own container ID.
refuse_config() {
	cp "$TEST_DIR/pristine.json" "$CONFIG"
	cfg_set "$1"
	cfg_args echo must-not-run
	CASE=$((CASE + 1))
	CID=$BASE_CID-$CASE
	run_moat create --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$CID"
	assert_moat_error "$2"
	refute_output --partial must-not-run
	assert_no_residue "$CID"
}

# --- what the container sees ------------------------------------------------

@test "linux.personality LINUX32: the container's uname -m reports i686" {
	[[ $(uname -m) == x86_64 ]] || skip "LINUX32 shows i686 on x86_64 hosts only"
	cfg_set '.linux.personality = {domain: "LINUX32"}'
	run_sh 'uname -m'
	assert_success
	assert_output i686
}

@test "linux.personality LINUX: the container sees the host's machine" {
	cfg_set '.linux.personality = {domain: "LINUX"}'
	run_sh 'uname -m'
	assert_success
	assert_output "$(uname -m)"
}

@test "process.execCPUAffinity.final is the affinity the process runs with" {
	require_cpus_0_and_1
	cfg_set '.process.execCPUAffinity = {initial: "0", final: "1"}'
	run_sh "$CPUS_ALLOWED"
	assert_success
	assert_output 1
}

@test "process.execCPUAffinity.initial alone stays the affinity at exec" {
	require_cpus_0_and_1
	cfg_set '.process.execCPUAffinity = {initial: "1"}'
	run_sh "$CPUS_ALLOWED"
	assert_success
	assert_output 1
}

@test "process.execCPUAffinity.final applies after the switch to a non-root user" {
	require_cpus_0_and_1
	cfg_set '.process.user = {uid: 1000, gid: 1000}
		| .process.execCPUAffinity = {initial: "0", final: "1"}
		| .process.scheduler = {policy: "SCHED_BATCH", nice: 4}'
	run_sh "id -u; $CPUS_ALLOWED; $STAT_FIELDS"
	assert_success
	assert_output "1000
1
priority=24 nice=4 rt_priority=0 policy=3"
}

@test "an empty process.execCPUAffinity leaves the affinity as the kernel gives it" {
	local mine
	mine=$(awk '$1 == "Cpus_allowed_list:" { print $2 }' /proc/self/status)
	cfg_set '.process.execCPUAffinity = {initial: "", final: ""}'
	run_sh "$CPUS_ALLOWED"
	assert_success
	assert_output "$mine"
}

@test "process.scheduler SCHED_BATCH with nice 7 shows in /proc/self/stat" {
	cfg_set '.process.scheduler = {policy: "SCHED_BATCH", nice: 7}'
	run_sh "$STAT_FIELDS"
	assert_success
	# priority is 20 + nice for the fair policies; SCHED_BATCH is 3
	assert_output 'priority=27 nice=7 rt_priority=0 policy=3'
}

@test "process.scheduler SCHED_OTHER with nice 19 shows in /proc/self/stat" {
	cfg_set '.process.scheduler = {policy: "SCHED_OTHER", nice: 19}'
	run_sh "$STAT_FIELDS"
	assert_success
	assert_output 'priority=39 nice=19 rt_priority=0 policy=0'
}

@test "process.scheduler SCHED_IDLE shows in /proc/self/stat" {
	cfg_set '.process.scheduler = {policy: "SCHED_IDLE"}'
	run_sh "$STAT_FIELDS"
	assert_success
	# SCHED_IDLE is 5
	assert_output --regexp ' rt_priority=0 policy=5$'
}

@test "process.ioPriority IOPRIO_CLASS_BE is what ionice reports" {
	local prio
	# two levels, so one differs from whatever the test runner passes down
	for prio in 1 3; do
		cfg_set '.process.ioPriority = {class: "IOPRIO_CLASS_BE", priority: $p}' \
			--argjson p "$prio"
		CASE=$((CASE + 1))
		CID=$BASE_CID-$CASE
		run_sh 'ionice -p $$'
		assert_success
		assert_output "best-effort: prio $prio"
	done
}

@test "process.ioPriority IOPRIO_CLASS_IDLE is what ionice reports" {
	cfg_set '.process.ioPriority = {class: "IOPRIO_CLASS_IDLE", priority: 0}'
	run_sh 'ionice -p $$'
	assert_success
	assert_output idle
}

@test "linux.memoryPolicy: each mode shows in /proc/self/numa_maps" {
	require_numa_node0
	local case mode nodes flags want
	# mode | nodes | flags | the policy numa_maps shows
	local -a cases=(
		'MPOL_DEFAULT|||default'
		'MPOL_BIND|0||bind:0'
		'MPOL_BIND|0|MPOL_F_STATIC_NODES|bind=static:0'
		'MPOL_BIND|0|MPOL_F_RELATIVE_NODES|bind=relative:0'
		'MPOL_BIND|0|MPOL_F_NUMA_BALANCING|bind=balancing:0'
		'MPOL_INTERLEAVE|0||interleave:0'
		'MPOL_PREFERRED|0||prefer:0'
		'MPOL_PREFERRED_MANY|0||prefer (many):0'
		'MPOL_LOCAL|||local'
	)
	# Linux 6.9 added weighted interleaving, with this directory
	if [[ -d /sys/kernel/mm/mempolicy/weighted_interleave ]]; then
		cases+=('MPOL_WEIGHTED_INTERLEAVE|0||weighted interleave:0')
	fi
	for case in "${cases[@]}"; do
		IFS='|' read -r mode nodes flags want <<<"$case"
		cp "$TEST_DIR/pristine.json" "$CONFIG"
		cfg_set '.linux.memoryPolicy = {mode: $m}
			| if $n != "" then .linux.memoryPolicy.nodes = $n else . end
			| if $f != "" then .linux.memoryPolicy.flags = [$f] else . end' \
			--arg m "$mode" --arg n "$nodes" --arg f "$flags"
		CASE=$((CASE + 1))
		CID=$BASE_CID-$CASE
		# the first mapping is the program's text: no policy of its own
		run_sh 'read -r addr policy rest </proc/self/numa_maps; echo "$policy $rest"'
		assert_success
		assert_output --partial "$want file="
	done
}

@test "the attributes are in force when create returns, before start" {
	require_cpus_0_and_1
	local pid
	cfg_set '.linux.personality = {domain: "LINUX32"}
		| .process.scheduler = {policy: "SCHED_BATCH", nice: 5}
		| .process.ioPriority = {class: "IOPRIO_CLASS_IDLE", priority: 0}
		| .process.execCPUAffinity = {initial: "0", final: "1"}'
	cfg_args true
	moat_create
	pid=$(host_pid)
	# the init waits on the exec fifo; the host sees what it will exec with
	run cat "/proc/$pid/personality"
	assert_output 00000008
	run awk '{ print "nice=" $19 " policy=" $41 }' "/proc/$pid/stat"
	assert_output 'nice=5 policy=3'
	run awk '$1 == "Cpus_allowed_list:" { print $2 }' "/proc/$pid/status"
	assert_output 1
	if command -v ionice >/dev/null; then
		run ionice -p "$pid"
		assert_output idle
	fi
	moat start "$CID"
	retry process_gone "$pid"
}

# --- what a user namespace cannot grant ------------------------------------

@test "real-time and deadline scheduling in a user namespace fail create, naming CAP_SYS_NICE" {
	require_userns
	refuse_config '.process.scheduler = {policy: "SCHED_FIFO", priority: 10}' \
		'^moat: process\.scheduler\.policy: SCHED_FIFO at priority 10 needs CAP_SYS_NICE in the initial user namespace.*RLIMIT_RTPRIO'
	refuse_config '.process.scheduler = {policy: "SCHED_RR", priority: 1}' \
		'^moat: process\.scheduler\.policy: SCHED_RR at priority 1 needs CAP_SYS_NICE in the initial user namespace'
	refuse_config '.process.scheduler = {policy: "SCHED_DEADLINE", runtime: 1000000,
		deadline: 10000000, period: 10000000}' \
		'^moat: process\.scheduler\.policy: SCHED_DEADLINE needs CAP_SYS_NICE in the initial user namespace'
}

@test "lowering nice in a user namespace fails create, naming CAP_SYS_NICE and RLIMIT_NICE" {
	require_userns
	local nice_limit
	nice_limit=$(ulimit -e)
	if [[ $nice_limit == unlimited ]] || ((nice_limit >= 25)); then
		skip "RLIMIT_NICE here would allow nice -5"
	fi
	refuse_config '.process.scheduler = {policy: "SCHED_OTHER", nice: -5}' \
		'^moat: process\.scheduler\.nice: lowering it from -?[0-9]+ to -5 needs CAP_SYS_NICE in the initial user namespace .* RLIMIT_NICE of at least 25'
}

@test "IOPRIO_CLASS_RT in a user namespace fails create, naming CAP_SYS_NICE" {
	require_userns
	refuse_config '.process.ioPriority = {class: "IOPRIO_CLASS_RT", priority: 0}' \
		'^moat: process\.ioPriority\.class: IOPRIO_CLASS_RT needs CAP_SYS_NICE or CAP_SYS_ADMIN in the initial user namespace'
}

# --- values the config alone shows to be wrong -----------------------------

@test "invalid process.scheduler values fail create naming the field" {
	refuse_config '.process.scheduler = {policy: "SCHED_LOTTERY"}' 'process\.scheduler\.policy'
	refuse_config '.process.scheduler = {policy: "SCHED_ISO"}' \
		'process\.scheduler\.policy: SCHED_ISO is reserved by Linux and no kernel schedules it'
	refuse_config '.process.scheduler = {policy: "SCHED_OTHER", nice: 20}' \
		'process\.scheduler\.nice: 20 outside -20\.\.19'
	refuse_config '.process.scheduler = {policy: "SCHED_BATCH", nice: -21}' \
		'process\.scheduler\.nice: -21 outside -20\.\.19'
	refuse_config '.process.scheduler = {policy: "SCHED_FIFO", priority: 10, nice: 5}' \
		'process\.scheduler\.nice: SCHED_FIFO ignores the nice value'
	refuse_config '.process.scheduler = {policy: "SCHED_IDLE", nice: 5}' \
		'process\.scheduler\.nice: SCHED_IDLE ignores the nice value'
	refuse_config '.process.scheduler = {policy: "SCHED_FIFO"}' \
		'process\.scheduler\.priority: required for SCHED_FIFO \(1\.\.99\)'
	refuse_config '.process.scheduler = {policy: "SCHED_RR", priority: 100}' \
		'process\.scheduler\.priority: 100 outside 1\.\.99 for SCHED_RR'
	refuse_config '.process.scheduler = {policy: "SCHED_OTHER", priority: 5}' \
		'process\.scheduler\.priority: must be 0 for SCHED_OTHER, got 5'
	refuse_config '.process.scheduler = {policy: "SCHED_OTHER", flags: ["SCHED_FLAG_RECLAIM"]}' \
		'process\.scheduler\.flags\[0\]: SCHED_FLAG_RECLAIM applies only to SCHED_DEADLINE'
	refuse_config '.process.scheduler = {policy: "SCHED_OTHER",
		flags: ["SCHED_FLAG_RESET_ON_FORK", "SCHED_FLAG_UTIL_CLAMP_MAX"]}' \
		'process\.scheduler\.flags\[1\]: SCHED_FLAG_UTIL_CLAMP_MAX needs a utilization value'
	refuse_config '.process.scheduler = {policy: "SCHED_OTHER", flags: ["SCHED_FLAG_BOGUS"]}' \
		'process\.scheduler\.flags'
	refuse_config '.process.scheduler = {policy: "SCHED_OTHER", nice: 3,
		flags: ["SCHED_FLAG_KEEP_PARAMS"]}' \
		'process\.scheduler: SCHED_FLAG_KEEP_PARAMS keeps the current nice'
	refuse_config '.process.scheduler = {policy: "SCHED_BATCH", runtime: 1000000}' \
		'process\.scheduler: runtime, deadline and period apply only to SCHED_DEADLINE'
}

@test "invalid SCHED_DEADLINE parameters fail create naming the field" {
	refuse_config '.process.scheduler = {policy: "SCHED_DEADLINE", runtime: 1000000}' \
		'process\.scheduler\.deadline: required for SCHED_DEADLINE'
	refuse_config '.process.scheduler = {policy: "SCHED_DEADLINE", deadline: 1000000}' \
		'process\.scheduler\.runtime: SCHED_DEADLINE needs a runtime of at least 1024 ns, got 0'
	refuse_config '.process.scheduler = {policy: "SCHED_DEADLINE", runtime: 2000000,
		deadline: 1000000}' \
		'process\.scheduler\.runtime: 2000000 ns is longer than the deadline'
	refuse_config '.process.scheduler = {policy: "SCHED_DEADLINE", runtime: 1000000,
		deadline: 2000000, period: 1500000}' \
		'process\.scheduler\.period: 1500000 ns is shorter than the deadline'
	local min_us
	min_us=$(cat /proc/sys/kernel/sched_deadline_period_min_us 2>/dev/null) || min_us=0
	if ((min_us > 50)); then
		refuse_config '.process.scheduler = {policy: "SCHED_DEADLINE", runtime: 2000,
			deadline: 50000}' \
			"process\\.scheduler\\.deadline: 50000 ns is outside this host's deadline period range"
	fi
}

@test "SCHED_DEADLINE with an affinity smaller than the online CPUs fails create" {
	require_cpus_0_and_1
	refuse_config '.process.scheduler = {policy: "SCHED_DEADLINE", runtime: 1000000,
		deadline: 10000000} | .process.execCPUAffinity = {initial: "0"}' \
		"process\\.execCPUAffinity\\.initial: SCHED_DEADLINE needs an affinity that covers every online CPU, and '0' leaves out CPU 1"
}

@test "invalid process.ioPriority values fail create naming the field" {
	refuse_config '.process.ioPriority = {class: "IOPRIO_CLASS_BE"}' \
		'process\.ioPriority\.priority: required for IOPRIO_CLASS_BE'
	refuse_config '.process.ioPriority = {class: "IOPRIO_CLASS_BE", priority: 8}' \
		'process\.ioPriority\.priority'
	refuse_config '.process.ioPriority = {class: "IOPRIO_CLASS_BE", priority: -1}' \
		'process\.ioPriority\.priority'
	refuse_config '.process.ioPriority = {class: "IOPRIO_CLASS_NONE", priority: 0}' \
		'process\.ioPriority\.class'
}

@test "invalid process.execCPUAffinity values fail create naming the field" {
	refuse_config '.process.execCPUAffinity = {final: "0-x"}' \
		"process\\.execCPUAffinity\\.final: '0-x' is not a CPU list"
	refuse_config '.process.execCPUAffinity = {initial: "1-0"}' \
		"process\\.execCPUAffinity\\.initial: '1-0' is not a CPU list"
	refuse_config '.process.execCPUAffinity = {initial: "0,"}' \
		"process\\.execCPUAffinity\\.initial: '0,' is not a CPU list"
	refuse_config '.process.execCPUAffinity = {final: " 0"}' \
		"process\\.execCPUAffinity\\.final: ' 0' is not a CPU list"
	refuse_config '.process.execCPUAffinity = {final: "8192"}' \
		"process\\.execCPUAffinity\\.final: '8192' is not a CPU list"
	if ! cpu_online 8191; then
		refuse_config '.process.execCPUAffinity = {final: "0,8191"}' \
			'process\.execCPUAffinity\.final: CPU 8191 is not online on this host \(online: '
	fi
}

@test "process.execCPUAffinity outside linux.resources.cpu.cpus fails create" {
	require_cpus_0_and_1
	refuse_config '.linux.resources.cpu.cpus = "0" | .process.execCPUAffinity = {final: "1"}' \
		"process\\.execCPUAffinity\\.final: CPU 1 is outside the container's cpuset \\(linux\\.resources\\.cpu\\.cpus '0'\\)"
}

@test "invalid linux.personality values fail create naming the field" {
	refuse_config '.linux.personality = {domain: "PER_BSD"}' 'linux\.personality\.domain'
	refuse_config '.linux.personality = {domain: "LINUX32", flags: ["ADDR_NO_RANDOMIZE"]}' \
		"linux\\.personality\\.flags\\[0\\]: 'ADDR_NO_RANDOMIZE' is not supported"
}

@test "invalid linux.memoryPolicy values fail create naming the field" {
	refuse_config '.linux.memoryPolicy = {mode: "MPOL_RANDOM"}' 'linux\.memoryPolicy\.mode'
	refuse_config '.linux.memoryPolicy = {mode: "MPOL_BIND"}' \
		'linux\.memoryPolicy\.nodes: required for MPOL_BIND'
	refuse_config '.linux.memoryPolicy = {mode: "MPOL_DEFAULT", nodes: "0"}' \
		"linux\\.memoryPolicy\\.nodes: MPOL_DEFAULT takes no nodes, got '0'"
	refuse_config '.linux.memoryPolicy = {mode: "MPOL_LOCAL", nodes: "0"}' \
		'linux\.memoryPolicy\.nodes: MPOL_LOCAL takes no nodes'
	refuse_config '.linux.memoryPolicy = {mode: "MPOL_PREFERRED", nodes: "0-1"}' \
		'linux\.memoryPolicy\.nodes: MPOL_PREFERRED takes one node'
	refuse_config '.linux.memoryPolicy = {mode: "MPOL_BIND", nodes: "0-"}' \
		"linux\\.memoryPolicy\\.nodes: '0-' is not a NUMA node list"
	refuse_config '.linux.memoryPolicy = {mode: "MPOL_DEFAULT", flags: ["MPOL_F_STATIC_NODES"]}' \
		'linux\.memoryPolicy\.flags\[0\]: MPOL_DEFAULT takes no flags'
	refuse_config '.linux.memoryPolicy = {mode: "MPOL_BIND", nodes: "0",
		flags: ["MPOL_F_STATIC_NODES", "MPOL_F_RELATIVE_NODES"]}' \
		'linux\.memoryPolicy\.flags: MPOL_F_STATIC_NODES and MPOL_F_RELATIVE_NODES exclude each other'
	refuse_config '.linux.memoryPolicy = {mode: "MPOL_INTERLEAVE", nodes: "0",
		flags: ["MPOL_F_NUMA_BALANCING"]}' \
		'linux\.memoryPolicy\.flags\[0\]: MPOL_F_NUMA_BALANCING applies only to MPOL_BIND and MPOL_PREFERRED_MANY'
	refuse_config '.linux.memoryPolicy = {mode: "MPOL_PREFERRED", flags: ["MPOL_F_STATIC_NODES"]}' \
		'linux\.memoryPolicy\.flags: MPOL_F_STATIC_NODES and MPOL_F_RELATIVE_NODES need nodes'
	if [[ -d /sys/devices/system/node && ! -d /sys/devices/system/node/node1023 ]]; then
		refuse_config '.linux.memoryPolicy = {mode: "MPOL_BIND", nodes: "0,1023"}' \
			'linux\.memoryPolicy\.nodes: NUMA node 1023 is not online on this host'
	fi
}

# --- LSM labels on a host without the LSM -----------------------------------

@test "process.selinuxLabel on a host without SELinux fails create naming the field" {
	if [[ -e /sys/fs/selinux/enforce ]]; then
		skip "SELinux is enabled on this host"
	fi
	refuse_config '.process.selinuxLabel = "system_u:system_r:container_t:s0:c1,c2"' \
		'^moat: process\.selinuxLabel: (SELinux is not enabled on this host|this moat was built without SELinux support)'
}

@test "process.apparmorProfile on a host without AppArmor fails create naming the field" {
	if [[ $(cat /sys/module/apparmor/parameters/enabled 2>/dev/null) == Y ]]; then
		skip "AppArmor is enabled on this host"
	fi
	refuse_config '.process.apparmorProfile = "moat-default"' \
		'^moat: process\.apparmorProfile: AppArmor is not enabled on this host$'
}

@test "empty process.selinuxLabel and process.apparmorProfile ask for nothing" {
	cfg_set '.process.selinuxLabel = "" | .process.apparmorProfile = ""'
	run_sh 'echo ok'
	assert_success
	assert_output ok
}
