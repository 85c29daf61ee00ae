#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# linux.resources on real cgroups.
#
# Every field moat supports on this host is read back, while the container
# runs, from its cgroup's files on the host and (through a cgroup mount,
# which shows the container's own cgroup as the root of each hierarchy) from
# inside the container. A field this host cannot honour, and a value the
# kernel rejects, fail `create` with one line that names the field (and the
# file, when the kernel refused the write), and leave no cgroup behind. The
# limits bite: a memory hog is OOM-killed inside its cgroup, a fork bomb stops
# at pids.max, a CPU hog is throttled by its CFS quota.
#
# A container without linux.cgroupsPath lives at /moat/<id> in every
# hierarchy: /sys/fs/cgroup/<controller>/moat/<id> for a v1 controller, the
# cgroup2 mount's moat/<id> for what is on the unified hierarchy. Two layouts
# are met: hybrid (this project's development machines: v1 controllers, and
# cgroup2 at /sys/fs/cgroup/unified with hugetlb and the core cgroup.* files)
# and pure cgroup v2 (the test host of tests/testhost/: every controller on
# the unified hierarchy, mounted at /sys/fs/cgroup itself). Inside, the cgroup
# mount mirrors the host's layout: on a hybrid host a tmpfs with a directory
# per v1 hierarchy and "unified", on a pure v2 host cgroup2 at /sys/fs/cgroup.
#
# Each field has a test that reads its v1 file (skipped where its controller
# is not on cgroup v1) and, where cgroup v2 has one, a "cgroup v2:" test that
# reads the v2 file moat writes (skipped where the unified hierarchy does not
# offer the controller), with the value conversions moat makes (cpu.shares
# onto cpu.weight, OCI's memory+swap onto memory.swap.max, blkio weights onto
# io.weight) spelled out. Fields cgroup v2 has no file for are refused there
# naming the field, and are tested as refusals.
#
# The container IDs of this file start with $CG_PREFIX, unique to one run of
# the file, so that its last test can tell none of them left a cgroup.
#
# A real-time runtime under /moat comes out of the root's real-time budget:
# moat raises /moat's cpu.rt_runtime_us by what the container needs (the
# kernel lets a child have at most what its parent has) and lowers it again
# when the container is deleted; the tests of it check /moat's budget before
# and after, so they expect no other moat to be changing it meanwhile.
#
# Not read back here, because no host of this project can: per-device blockIO
# weights where the disk's I/O scheduler is not BFQ (on cgroup v2 too: the
# test host has no iocost for io.weight), rdma limits (no RDMA device).

# shellcheck disable=SC2016 # single-quoted scripts and jq filters expand later
# shellcheck disable=SC2030,SC2031 # CID changes per case within one test
load helpers

setup_file() {
	moat_setup_file
	CG_PREFIX=moat-test-cgroups-$$-$RANDOM
	export CG_PREFIX
}

setup() {
	# (before moat_setup: a test that skips makes nothing, and its teardown has nothing to do)
	early_requirement
	moat_setup
	CID=$CG_PREFIX-$BATS_TEST_NUMBER
	make_bundle
	cp "$CONFIG" "$TEST_DIR/pristine.json"
	BASE_CID=$CID
	CASE=0
}

# --- the host's layout --------------------------------------------------------

# v1_mount CTRL: where the v1 hierarchy holding controller CTRL is mounted
# (CTRL as the mount options name it: "cpu", "name=systemd"); empty if none.
v1_mount() {
	awk -v c="$1" '{
		for (i = 7; $i != "-"; i++)
			;
		if ($(i + 1) != "cgroup")
			next
		n = split($(i + 3), o, ",")
		for (j = 1; j <= n; j++)
			if (o[j] == c) {
				print $5
				exit
			}
	}' /proc/self/mountinfo
}

# unified_mount: where cgroup2 is mounted (/sys/fs/cgroup itself if it is
# there, as moat prefers it); empty if nowhere.
unified_mount() {
	awk '{
		for (i = 7; $i != "-"; i++)
			;
		if ($(i + 1) == "cgroup2") {
			if ($5 == "/sys/fs/cgroup") {
				m = $5
				exit
			}
			if (m == "")
				m = $5
		}
	} END {
		if (m != "")
			print m
	}' /proc/self/mountinfo
}

# cg_mounts: the mount point of every cgroup hierarchy, v1 and cgroup2.
cg_mounts() {
	awk '{
		for (i = 7; $i != "-"; i++)
			;
		if ($(i + 1) == "cgroup" || $(i + 1) == "cgroup2")
			print $5
	}' /proc/self/mountinfo | sort -u
}

# pure_v2: the host has the unified hierarchy alone, at /sys/fs/cgroup.
pure_v2() {
	[[ $(unified_mount) == /sys/fs/cgroup ]]
}

# v2_has CTRL: the unified hierarchy offers controller CTRL (by its v2 name:
# "io", not "blkio"). The kernel puts a controller on one hierarchy only, so
# where this holds no v1 hierarchy has it.
v2_has() {
	local u
	u=$(unified_mount)
	[[ -n $u ]] && grep -qw -- "$1" "$u/cgroup.controllers"
}

require_v1() {
	if [[ -z $(v1_mount "$1") ]]; then
		skip "no cgroup v1 $1 hierarchy: these tests read the v1 files"
	fi
}

require_v2() {
	if ! v2_has "$1"; then
		skip "no $1 controller on the unified hierarchy (cgroup v2): these tests read the v2 files"
	fi
}

# early_requirement: a test whose first step is `require_v1 CTRL` or `require_v2 CTRL` takes
# that step before its bundle is made. Half of those tests skip on any one host, and under the
# cgroup v2 test host's TCG a bundle and its teardown cost seconds each.
early_requirement() {
	local first
	first=$(declare -f "$BATS_TEST_NAME" | sed -n '3{s/^[[:space:]]*//;s/;$//;p}')
	if [[ $first =~ ^require_v[12]\ [a-z]+$ ]]; then
		${first% *} "${first#* }"
	fi
}

# v2_swap_accounted: cgroup v2 has memory.swap.max (a kernel with swap, not
# booted with swap accounting off).
v2_swap_accounted() {
	[[ -e /proc/swaps ]] &&
		! grep -qE '(^| )(swapaccount=0|cgroup\.memory=[^ ]*noswap)' /proc/cmdline
}

# bfq_available: the kernel has the BFQ I/O scheduler (built in, or its
# module loaded), whose cgroup files are blkio.bfq.* (v1) and io.bfq.* (v2).
bfq_available() {
	[[ -d /sys/module/bfq ]] || grep -qw bfq /sys/block/*/queue/scheduler 2>/dev/null
}

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

# kernel_at_least MAJOR MINOR
kernel_at_least() {
	local v major minor
	v=$(uname -r)
	major=${v%%.*}
	minor=${v#*.}
	minor=${minor%%[!0-9]*}
	((major > $1 || (major == $1 && minor >= $2)))
}

# root_disk: major:minor of the whole disk that holds /, empty when / is not
# on a block device (per-device blkio rules take whole disks only).
root_disk() {
	local dev sys
	dev=$(stat -c '%Hd:%Ld' /)
	sys=$(readlink -f "/sys/dev/block/$dev" 2>/dev/null) || return 0
	[[ -n $sys && -e $sys/dev ]] || return 0
	[[ -e $sys/partition ]] && sys=${sys%/*}
	cat "$sys/dev"
}

require_root_disk() {
	DISK=$(root_disk)
	if [[ -z $DISK ]]; then
		skip "/ is not on a block device, so there is no disk for per-device rules"
	fi
	DISK_MAJOR=${DISK%:*}
	DISK_MINOR=${DISK#*:}
}

# hugepage_sizes: the page sizes /sys/kernel/mm/hugepages lists, as cgroup
# file names spell them ("2MB", "1GB").
hugepage_sizes() {
	local d kb
	for d in /sys/kernel/mm/hugepages/hugepages-*kB; do
		[[ -d $d ]] || continue
		kb=${d##*-}
		kb=${kb%kB}
		if ((kb % 1048576 == 0)); then
			echo "$((kb / 1048576))GB"
		elif ((kb % 1024 == 0)); then
			echo "$((kb / 1024))MB"
		else
			echo "${kb}KB"
		fi
	done
}

# page_bytes SIZE: "2MB" -> 2097152.
page_bytes() {
	local n=${1%??}
	case $1 in
	*GB) echo $((n << 30)) ;;
	*MB) echo $((n << 20)) ;;
	*KB) echo $((n << 10)) ;;
	esac
}

# --- the container and its cgroup files ---------------------------------------

# cg_dir CTRL [ID]: the cgroup directory of ID (default $CID) on the host: in
# the v1 hierarchy holding CTRL, or in the unified one for CTRL "unified".
cg_dir() {
	local m
	if [[ $1 == unified ]]; then
		m=$(unified_mount)
	else
		m=$(v1_mount "$1")
	fi
	[[ -n $m ]] || fail "no hierarchy for $1"
	echo "$m/moat/${2:-$CID}"
}

# cg_read CTRL FILE [ID]: a file of the container's cgroup, read on the host.
cg_read() {
	cat "$(cg_dir "$1" "${3:-}")/$2"
}

# cg_inside CTRL: the container's cgroup directory as the container sees it
# through its cgroup mount at /sys/fs/cgroup (CGROUP_MOUNT), which shows the
# container's cgroup as the root of each hierarchy in the host's layout:
# /sys/fs/cgroup/<controller> for a v1 one; for "unified", /sys/fs/cgroup
# itself on a pure v2 host and /sys/fs/cgroup/unified on a hybrid one.
cg_inside() {
	if [[ $1 != unified ]]; then
		echo "/sys/fs/cgroup/$1"
	elif pure_v2; then
		echo /sys/fs/cgroup
	else
		echo /sys/fs/cgroup/unified
	fi
}

CGROUP_MOUNT='{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup",
	options: ["nosuid", "noexec", "nodev", "ro"]}'

# start_sleeper: run $CID detached from $BUNDLE with the host's cgroup layout
# mounted at /sys/fs/cgroup, doing nothing.
start_sleeper() {
	cfg_set ".mounts += [$CGROUP_MOUNT]"
	cfg_args sleep 100000
	moat_run_detached
}

# assert_cg CTRL FILE VALUE: FILE of the container's cgroup holds exactly
# VALUE on the host, and inside the container, where the cgroup mount shows
# the container's cgroup as the root of each hierarchy.
assert_cg() {
	local ctrl=$1 file=$2 want=$3 got
	got=$(cg_read "$ctrl" "$file") || fail "cannot read $(cg_dir "$ctrl")/$file"
	if [[ $got != "$want" ]]; then
		fail "$(cg_dir "$ctrl")/$file holds '$got', expected '$want'"
	fi
	run_moat exec "$CID" cat "$(cg_inside "$ctrl")/$file"
	assert_success
	if [[ $output != "$want" ]]; then
		fail "inside the container, $(cg_inside "$ctrl")/$file holds '$output', expected '$want'"
	fi
}

# assert_cg_line CTRL FILE LINE: as assert_cg, for one line of FILE.
assert_cg_line() {
	local ctrl=$1 file=$2 want=$3
	if ! grep -qxF -- "$want" "$(cg_dir "$ctrl")/$file"; then
		fail "$(cg_dir "$ctrl")/$file has no line '$want': $(cg_read "$ctrl" "$file")"
	fi
	run_moat exec "$CID" cat "$(cg_inside "$ctrl")/$file"
	assert_success
	assert_line_exact "$want"
}

# cg_key CTRL FILE KEY [ID]: the value of "KEY value" in FILE of the cgroup of
# ID (default $CID): cpu.stat, memory.oom_control, memory.events, pids.events.
cg_key() {
	awk -v k="$3" '$1 == k { print $2 }' "$(cg_dir "$1" "${4:-}")/$2"
}

# refuse_config FILTER REGEX: with the jq FILTER applied to the bundle's
# original config, `create` fails with one line matching REGEX and leaves
# nothing of the container behind (no cgroup in any hierarchy). Each case
# gets its own container ID.
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

# --- where the cgroup is ----------------------------------------------------------

@test "without linux.cgroupsPath the container is in /moat/<id> of every hierarchy, the root of its own" {
	start_sleeper
	local pid line
	pid=$(host_pid)
	while IFS= read -r line; do
		[[ ${line##*:} == "/moat/$CID" ]] || fail "/proc/$pid/cgroup: $line"
	done <"/proc/$pid/cgroup"
	# inside, through the cgroup namespace, every one of them is "/"
	run_moat exec "$CID" cat /proc/self/cgroup
	assert_success
	while IFS= read -r line; do
		[[ ${line##*:} == / ]] || fail "inside: /proc/self/cgroup: $line"
	done <<<"$output"
	[[ -n $output ]]
}

# --- memory -------------------------------------------------------------------------

@test "memory.limit, reservation and swap: memory.limit_in_bytes, soft_limit_in_bytes, memsw.limit_in_bytes" {
	require_v1 memory
	if [[ ! -e $(v1_mount memory)/memory.memsw.limit_in_bytes ]]; then
		skip "the kernel does not account swap (no memory.memsw.limit_in_bytes)"
	fi
	cfg_set '.linux.resources.memory = {limit: 67108864, reservation: 33554432, swap: 134217728}'
	start_sleeper
	assert_cg memory memory.limit_in_bytes 67108864
	assert_cg memory memory.soft_limit_in_bytes 33554432
	assert_cg memory memory.memsw.limit_in_bytes 134217728
}

@test "memory.swap equal to memory.limit (no swap at all) is written in the order the kernel accepts" {
	require_v1 memory
	if [[ ! -e $(v1_mount memory)/memory.memsw.limit_in_bytes ]]; then
		skip "the kernel does not account swap (no memory.memsw.limit_in_bytes)"
	fi
	# a new cgroup's memsw limit is unlimited: the limit must go in first
	# here, and memsw first when raising both later
	cfg_set '.linux.resources.memory = {limit: 33554432, swap: 33554432}'
	start_sleeper
	assert_cg memory memory.limit_in_bytes 33554432
	assert_cg memory memory.memsw.limit_in_bytes 33554432
}

@test "memory.swappiness: memory.swappiness" {
	require_v1 memory
	cfg_set '.linux.resources.memory = {swappiness: 17}'
	start_sleeper
	assert_cg memory memory.swappiness 17
}

@test "memory.disableOOMKiller: oom_kill_disable 1 in memory.oom_control" {
	require_v1 memory
	cfg_set '.linux.resources.memory = {limit: 67108864, disableOOMKiller: true}'
	start_sleeper
	assert_cg_line memory memory.oom_control 'oom_kill_disable 1'
}

@test "memory.useHierarchy true: memory.use_hierarchy 1" {
	require_v1 memory
	# Since Linux 6.1 the file is always 1 and only a write of 1 is accepted:
	# this fails if moat refuses the field or writes something else to it.
	cfg_set '.linux.resources.memory = {useHierarchy: true}'
	start_sleeper
	assert_cg memory memory.use_hierarchy 1
}

@test "memory.kernelTCP: memory.kmem.tcp.limit_in_bytes" {
	require_v1 memory
	if [[ ! -e $(v1_mount memory)/memory.kmem.tcp.limit_in_bytes ]]; then
		skip "the kernel has no memory.kmem.tcp.limit_in_bytes"
	fi
	cfg_set '.linux.resources.memory = {kernelTCP: 16777216}'
	start_sleeper
	assert_cg memory memory.kmem.tcp.limit_in_bytes 16777216
}

# issue 14 (20): the runtime spec marks memory.kernel NOT RECOMMENDED, runc and crun ignore
# it, and since Linux 6.1 the kernel takes memory.kmem.limit_in_bytes and does nothing with
# it. The rest of the config applies; what was not is a warning in the log and a note in
# moat state, never silence.
@test "memory.kernel where the kernel ignores it: the container runs, with a warning and a moat.cgroup.ignored note" {
	require_v1 memory
	if ! kernel_at_least 6 1; then
		skip "kernels before 6.1 honour memory.kmem.limit_in_bytes"
	fi
	local note='linux.resources.memory.kernel: the kernel has no kernel-memory limit (a write to memory.kmem.limit_in_bytes has no effect)'
	cfg_set '.linux.resources.memory = {limit: 67108864, kernel: 16777216}'
	cfg_set ".mounts += [$CGROUP_MOUNT]"
	cfg_args sleep 100000
	with_container_stdio moat --log "$TEST_DIR/moat.log" run --detach --bundle "$BUNDLE" \
		--pid-file "$(pid_file)" "$CID"
	assert_cg memory memory.limit_in_bytes 67108864
	grep -qF "warning: linux.resources.memory.kernel: ignored: the kernel has no kernel-memory limit" \
		"$TEST_DIR/moat.log" || fail "no warning in the log: $(cat "$TEST_DIR/moat.log")"
	run state_of
	assert_success
	assert_equal "$(jq -r '.annotations["moat.cgroup.ignored"]' <<<"$output")" "$note"
}

# OCI's memory.swap is memory+swap (v1's memsw); cgroup v2's memory.swap.max is the swap
# alone, so moat writes swap - limit (cg_v2_swap_max).
@test "cgroup v2: memory.limit, reservation and swap: memory.max, memory.low, memory.swap.max (swap less the limit)" {
	require_v2 memory
	v2_swap_accounted || skip "the kernel does not account swap (no memory.swap.max)"
	cfg_set '.linux.resources.memory = {limit: 67108864, reservation: 33554432, swap: 134217728}'
	start_sleeper
	assert_cg unified memory.max 67108864
	assert_cg unified memory.low 33554432
	assert_cg unified memory.swap.max 67108864
}

@test "cgroup v2: memory.swap equal to memory.limit (no swap at all): memory.swap.max 0" {
	require_v2 memory
	v2_swap_accounted || skip "the kernel does not account swap (no memory.swap.max)"
	# a new cgroup's memory.swap.max is max: 0 shows the write
	cfg_set '.linux.resources.memory = {limit: 33554432, swap: 33554432}'
	start_sleeper
	assert_cg unified memory.max 33554432
	assert_cg unified memory.swap.max 0
}

# cgroup v2 has no per-cgroup swappiness, no way to turn the OOM killer off and no
# non-hierarchical accounting: moat takes what v2 always does (disableOOMKiller false,
# useHierarchy true) and refuses the rest (refused in "cgroup v2: memory values ...").
@test "cgroup v2: memory.disableOOMKiller false and useHierarchy true are what v2 does: the container runs" {
	require_v2 memory
	cfg_set '.linux.resources.memory = {limit: 67108864, disableOOMKiller: false, useHierarchy: true}'
	start_sleeper
	status_is "$CID" running
	assert_cg unified memory.max 67108864
}

# issue 14 (20), on cgroup v2: no file for either field; the rest of the config applies and
# what was not is a warning and a note, as where v1's kernel ignores memory.kernel.
@test "cgroup v2: memory.kernel and kernelTCP: the container runs, with warnings and a moat.cgroup.ignored note" {
	require_v2 memory
	local kernel='linux.resources.memory.kernel: the kernel has no kernel-memory limit on cgroup v2'
	local tcp='linux.resources.memory.kernelTCP: the kernel has no limit of its own for TCP buffers on cgroup v2'
	cfg_set '.linux.resources.memory = {limit: 67108864, kernel: 16777216, kernelTCP: 8388608}'
	cfg_set ".mounts += [$CGROUP_MOUNT]"
	cfg_args sleep 100000
	with_container_stdio moat --log "$TEST_DIR/moat.log" run --detach --bundle "$BUNDLE" \
		--pid-file "$(pid_file)" "$CID"
	assert_cg unified memory.max 67108864
	# one warning line, its warnings "; "-separated (moat_error_warn)
	grep -qF "warning: ${kernel/: /: ignored: }; ${tcp/: /: ignored: }" "$TEST_DIR/moat.log" ||
		fail "no warning for memory.kernel and kernelTCP in the log: $(cat "$TEST_DIR/moat.log")"
	run state_of
	assert_success
	assert_equal "$(jq -r '.annotations["moat.cgroup.ignored"]' <<<"$output")" "$kernel; $tcp"
}

# --- cpu and cpuset ---------------------------------------------------------------

@test "cpu.shares, quota and period: cpu.shares, cpu.cfs_quota_us, cpu.cfs_period_us" {
	require_v1 cpu
	cfg_set '.linux.resources.cpu = {shares: 512, quota: 50000, period: 200000}'
	start_sleeper
	assert_cg cpu cpu.shares 512
	assert_cg cpu cpu.cfs_quota_us 50000
	assert_cg cpu cpu.cfs_period_us 200000
}

@test "cpu.burst: cpu.cfs_burst_us" {
	require_v1 cpu
	if [[ ! -e $(v1_mount cpu)/cpu.cfs_burst_us ]]; then
		skip "the kernel has no cpu.cfs_burst_us (CFS burst, Linux 5.14)"
	fi
	cfg_set '.linux.resources.cpu = {quota: 50000, period: 100000, burst: 20000}'
	start_sleeper
	assert_cg cpu cpu.cfs_burst_us 20000
	assert_cg cpu cpu.cfs_quota_us 50000
}

@test "cpu.realtimePeriod and realtimeRuntime: cpu.rt_period_us and cpu.rt_runtime_us" {
	require_v1 cpu
	if [[ ! -e $(v1_mount cpu)/cpu.rt_runtime_us ]]; then
		skip "the kernel has no real-time group scheduling (CONFIG_RT_GROUP_SCHED)"
	fi
	# a runtime of 0 needs no budget; the period shows the write happened
	cfg_set '.linux.resources.cpu = {realtimePeriod: 500000, realtimeRuntime: 0}'
	start_sleeper
	assert_cg cpu cpu.rt_period_us 500000
	assert_cg cpu cpu.rt_runtime_us 0
}

# rt_budget: /moat's cpu.rt_runtime_us in the cpu hierarchy.
rt_budget() {
	cat "$(v1_mount cpu)/moat/cpu.rt_runtime_us"
}

require_rt_budget() {
	require_v1 cpu
	local root
	root=$(v1_mount cpu)
	if [[ ! -e $root/cpu.rt_runtime_us ]]; then
		skip "the kernel has no real-time group scheduling (CONFIG_RT_GROUP_SCHED)"
	fi
	if (($(cat "$root/cpu.rt_runtime_us") < 0)); then
		skip "real-time throttling is off on this host (sched_rt_runtime_us -1)"
	fi
}

# issue 14 (21): /moat starts with no real-time budget, and a child can have at most its
# parent's, so before moat raised /moat's no container could get any runtime at all.
@test "cpu.realtimeRuntime: /moat gets the budget from the root, a real-time task runs in the container, delete gives it back" {
	require_rt_budget
	local before policy
	mkdir -p "$(v1_mount cpu)/moat"
	before=$(rt_budget)
	cfg_set '.linux.resources.cpu = {realtimePeriod: 1000000, realtimeRuntime: 10000}'
	start_sleeper
	assert_cg cpu cpu.rt_runtime_us 10000
	(($(rt_budget) >= 10000)) || fail "/moat holds $(rt_budget) us, less than its child's 10000"
	# the budget is real: the container's process can be made SCHED_FIFO (the kernel refuses
	# that in a group without real-time runtime)
	chrt -f -p 1 "$(host_pid)"
	policy=$(chrt -p "$(host_pid)")
	[[ $policy == *SCHED_FIFO* ]] || fail "chrt -p: $policy"
	# update takes more the same way
	run_moat update --cpu-rt-runtime 20000 "$CID"
	assert_success
	assert_equal "$(cg_read cpu cpu.rt_runtime_us)" 20000
	(($(rt_budget) >= 20000)) || fail "/moat holds $(rt_budget) us, less than its child's 20000"
	run_moat delete --force "$CID"
	assert_success
	# shellcheck disable=SC2154 # run_moat sets stderr
	assert_equal "$stderr" ''
	(($(rt_budget) <= before)) || fail "/moat holds $(rt_budget) us after delete, $before before"
	if ((before == 0)); then
		assert_equal "$(rt_budget)" 0
	fi
}

@test "cpu.realtimeRuntime under a parent that is not moat's own /moat is refused naming that parent's budget" {
	require_rt_budget
	local parent=moat-test-rt-$$-$RANDOM
	cfg_set '.linux.cgroupsPath = $p | .linux.resources.cpu = {realtimePeriod: 1000000, realtimeRuntime: 10000}' \
		--arg p "/$parent/$CID"
	cfg_args echo must-not-run
	run_moat create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	assert_moat_error "linux\.resources\.cpu\.realtimeRuntime: write '10000' to '.*/$parent/$CID/cpu\.rt_runtime_us': Invalid argument; the parent cgroup '.*/$parent' has a real-time budget \(cpu\.rt_runtime_us\) of 0 of every 1000000 us, 0 of it held by its other children, and moat raises no budget but that of its own /moat"
	assert_no_residue "$CID"
	[[ ! -e $(v1_mount cpu)/$parent ]] || fail "the parent $parent remains"
}

@test "cpu.realtimeRuntime beyond the host's whole real-time budget is refused, naming cpu.rt_runtime_us" {
	require_v1 cpu
	local root runtime period
	root=$(v1_mount cpu)
	if [[ ! -e $root/cpu.rt_runtime_us ]]; then
		skip "the kernel has no real-time group scheduling (CONFIG_RT_GROUP_SCHED)"
	fi
	runtime=$(cat "$root/cpu.rt_runtime_us")
	period=$(cat "$root/cpu.rt_period_us")
	if ((runtime < 0 || runtime >= period)); then
		skip "real-time throttling is off on this host (sched_rt_runtime_us $runtime)"
	fi
	# /moat can be given at most what the root has; the message names both budgets
	refuse_config ".linux.resources.cpu = {realtimePeriod: $period, realtimeRuntime: $((runtime + 1))}" \
		"linux\.resources\.cpu\.realtimeRuntime: $((runtime + 1)) of every $period us does not fit: moat's parent cgroup '.*/moat' would need a real-time budget \(cpu\.rt_runtime_us\) of [0-9]+ of every [0-9]+ us for its containers, and the root cgroup's $runtime of every $period us leaves it [0-9]+ beside the other cgroups' budgets"
}

@test "cpu.cpus and cpu.mems: cpuset.cpus and cpuset.mems, and the container runs on them" {
	require_v1 cpuset
	if ! cpu_online 0 || ! cpu_online 1; then
		skip "needs CPUs 0 and 1 online, so that a one-CPU set differs from the parent's"
	fi
	cfg_set '.linux.resources.cpu = {cpus: "1", mems: "0"}'
	start_sleeper
	assert_cg cpuset cpuset.cpus 1
	assert_cg cpuset cpuset.mems 0
	run_moat exec "$CID" grep -E '^(Cpus|Mems)_allowed_list:' /proc/self/status
	assert_success
	assert_line --regexp '^Cpus_allowed_list:[[:space:]]+1$'
	assert_line --regexp '^Mems_allowed_list:[[:space:]]+0$'
	grep -qE '^Cpus_allowed_list:[[:space:]]+1$' "/proc/$(host_pid)/status"
}

@test "cpu.idle: cpu.idle" {
	require_v1 cpu
	if [[ ! -e $(v1_mount cpu)/cpu.idle ]]; then
		skip "the kernel has no cpu.idle (SCHED_IDLE groups, Linux 5.15)"
	fi
	cfg_set '.linux.resources.cpu = {idle: 1}'
	start_sleeper
	assert_cg cpu cpu.idle 1
}

# cpu.shares 2..262144 maps onto cpu.weight 1..10000 as runc, crun and systemd map it
# (cg_v2_cpu_weight): 1 + (shares - 2) * 9999 / 262142, so 512 -> 20 (the default is 100).
# Quota and period go into cpu.max as "quota period".
@test "cgroup v2: cpu.shares, quota and period: cpu.weight (shares mapped onto 1..10000) and cpu.max" {
	require_v2 cpu
	cfg_set '.linux.resources.cpu = {shares: 512, quota: 50000, period: 200000}'
	start_sleeper
	assert_cg unified cpu.weight 20
	assert_cg unified cpu.max '50000 200000'
}

@test "cgroup v2: cpu.period without a quota: cpu.max keeps its quota (max) and takes the period" {
	require_v2 cpu
	cfg_set '.linux.resources.cpu = {period: 200000}'
	start_sleeper
	assert_cg unified cpu.max 'max 200000'
}

@test "cgroup v2: cpu.burst: cpu.max.burst" {
	require_v2 cpu
	if ! kernel_at_least 5 14; then
		skip "the kernel has no cpu.max.burst (CFS burst, Linux 5.14)"
	fi
	cfg_set '.linux.resources.cpu = {quota: 50000, period: 100000, burst: 20000}'
	start_sleeper
	assert_cg unified cpu.max.burst 20000
	assert_cg unified cpu.max '50000 100000'
}

@test "cgroup v2: cpu.cpus and cpu.mems: cpuset.cpus and cpuset.mems, and the container runs on them" {
	require_v2 cpuset
	if ! cpu_online 0 || ! cpu_online 1; then
		skip "needs CPUs 0 and 1 online, so that a one-CPU set differs from the parent's"
	fi
	cfg_set '.linux.resources.cpu = {cpus: "1", mems: "0"}'
	start_sleeper
	assert_cg unified cpuset.cpus 1
	assert_cg unified cpuset.mems 0
	run_moat exec "$CID" grep -E '^(Cpus|Mems)_allowed_list:' /proc/self/status
	assert_success
	assert_line --regexp '^Cpus_allowed_list:[[:space:]]+1$'
	assert_line --regexp '^Mems_allowed_list:[[:space:]]+0$'
	grep -qE '^Cpus_allowed_list:[[:space:]]+1$' "/proc/$(host_pid)/status"
}

@test "cgroup v2: cpu.idle: cpu.idle" {
	require_v2 cpu
	if ! kernel_at_least 5 15; then
		skip "the kernel has no cpu.idle (SCHED_IDLE groups, Linux 5.15)"
	fi
	cfg_set '.linux.resources.cpu = {idle: 1}'
	start_sleeper
	assert_cg unified cpu.idle 1
}

# --- pids -----------------------------------------------------------------------------

@test "pids.limit: pids.max" {
	require_v1 pids
	cfg_set '.linux.resources.pids = {limit: 20}'
	start_sleeper
	assert_cg pids pids.max 20
}

@test "cgroup v2: pids.limit: pids.max" {
	require_v2 pids
	cfg_set '.linux.resources.pids = {limit: 20}'
	start_sleeper
	assert_cg unified pids.max 20
}

# --- blockIO ----------------------------------------------------------------------------

# Which file the weight goes to depends on the host's I/O schedulers: blkio.weight (CFQ, gone
# since 5.0), blkio.bfq.weight once BFQ is loaded; neither without BFQ (found on a machine
# where no device had BFQ and its module was not loaded: the test assumed one of them).
@test "blockIO.weight: blkio.weight, or blkio.bfq.weight where BFQ has it, or an error naming the field" {
	require_v1 blkio
	local root file=blkio.weight
	root=$(v1_mount blkio)
	cfg_set '.linux.resources.blockIO = {weight: 300}'
	if [[ ! -e $root/blkio.weight && ! -e $root/blkio.bfq.weight ]]; then
		run_moat run --detach --bundle "$BUNDLE" "$CID"
		assert_moat_error '^moat: cgroup: linux.resources.blockIO.weight: not supported on this host \(no blkio.weight or blkio.bfq.weight\)$'
		return
	fi
	start_sleeper
	[[ -e $(cg_dir blkio)/$file ]] || file=blkio.bfq.weight
	assert_cg blkio "$file" 300
}

@test "blockIO.weightDevice: the per-device weight file, or an error naming it where the disk has no BFQ" {
	require_v1 blkio
	require_root_disk
	local sched
	sched=$(cat "/sys/dev/block/$DISK/queue/scheduler" 2>/dev/null || true)
	cfg_set '.linux.resources.blockIO = {weightDevice: [{major: $ma, minor: $mi, weight: 200}]}' \
		--argjson ma "$DISK_MAJOR" --argjson mi "$DISK_MINOR"
	if [[ -e $(v1_mount blkio)/blkio.weight_device ]]; then
		start_sleeper
		assert_cg_line blkio blkio.weight_device "$DISK 200"
	elif [[ $sched == *"[bfq]"* ]]; then
		start_sleeper
		assert_cg_line blkio blkio.bfq.weight_device "$DISK 200"
	else
		# the kernel takes per-device BFQ weights only for a disk BFQ schedules
		cfg_args echo must-not-run
		run_moat create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
		assert_moat_error 'linux\.resources\.blockIO\.weightDevice\[0\]\.weight.*blkio\.bfq\.weight_device'
		assert_no_residue "$CID"
	fi
}

@test "blockIO throttle read/write bps and iops: the blkio.throttle.* device files" {
	require_v1 blkio
	require_root_disk
	cfg_set '.linux.resources.blockIO = {
		throttleReadBpsDevice: [{major: $ma, minor: $mi, rate: 1048576}],
		throttleWriteBpsDevice: [{major: $ma, minor: $mi, rate: 2097152}],
		throttleReadIOPSDevice: [{major: $ma, minor: $mi, rate: 300}],
		throttleWriteIOPSDevice: [{major: $ma, minor: $mi, rate: 400}]}' \
		--argjson ma "$DISK_MAJOR" --argjson mi "$DISK_MINOR"
	start_sleeper
	assert_cg_line blkio blkio.throttle.read_bps_device "$DISK 1048576"
	assert_cg_line blkio blkio.throttle.write_bps_device "$DISK 2097152"
	assert_cg_line blkio blkio.throttle.read_iops_device "$DISK 300"
	assert_cg_line blkio blkio.throttle.write_iops_device "$DISK 400"
}

@test "blockIO.leafWeight and weightDevice leafWeight are refused where the kernel has no leaf weights" {
	require_v1 blkio
	require_root_disk
	if ! kernel_at_least 5 0; then
		skip "kernels before 5.0 have CFQ's blkio.leaf_weight"
	fi
	refuse_config '.linux.resources.blockIO = {leafWeight: 200}' \
		'linux\.resources\.blockIO\.leafWeight: .*blkio\.leaf_weight'
	refuse_config ".linux.resources.blockIO = {weightDevice: [{major: $DISK_MAJOR, minor: $DISK_MINOR, leafWeight: 200}]}" \
		'linux\.resources\.blockIO\.weightDevice\[0\]\.leafWeight: .*blkio\.leaf_weight_device'
}

# On cgroup v2 moat writes the weight to io.bfq.weight where BFQ is (the number as it is;
# the file reads "default N"), else to io.weight (iocost), mapped from 10..1000 onto
# 1..10000 (cg_v2_io_weight: 1 + (w - 10) * 9999 / 990, so 300 -> 2930); neither without
# BFQ or iocost.
@test "cgroup v2: blockIO.weight: io.bfq.weight where BFQ is, else io.weight (mapped onto 1..10000), or an error naming the field" {
	require_v2 io
	if ! bfq_available && [[ ! -e $(unified_mount)/io.cost.qos ]]; then
		refuse_config '.linux.resources.blockIO = {weight: 300}' \
			'^moat: cgroup: linux\.resources\.blockIO\.weight: not supported on this host \(no io\.bfq\.weight or io\.weight\)$'
		return
	fi
	cfg_set '.linux.resources.blockIO = {weight: 300}'
	start_sleeper
	if [[ -e $(cg_dir unified)/io.bfq.weight ]]; then
		assert_cg_line unified io.bfq.weight 'default 300'
	else
		assert_cg_line unified io.weight 'default 2930'
	fi
}

@test "cgroup v2: blockIO.weightDevice: io.bfq.weight for a disk BFQ schedules, or an error naming it where the disk has no BFQ" {
	require_v2 io
	require_root_disk
	local sched filter
	sched=$(cat "/sys/dev/block/$DISK/queue/scheduler" 2>/dev/null || true)
	filter=".linux.resources.blockIO = {weightDevice: [{major: $DISK_MAJOR, minor: $DISK_MINOR, weight: 200}]}"
	if [[ $sched == *"[bfq]"* ]]; then
		cfg_set "$filter"
		start_sleeper
		assert_cg_line unified io.bfq.weight "$DISK 200"
	elif bfq_available; then
		# the kernel takes per-device BFQ weights only for a disk BFQ schedules
		refuse_config "$filter" \
			"linux\\.resources\\.blockIO\\.weightDevice\\[0\\]\\.weight: write '$DISK 200' to '.*/io\\.bfq\\.weight'"
	elif [[ ! -e $(unified_mount)/io.cost.qos ]]; then
		refuse_config "$filter" \
			'linux\.resources\.blockIO\.weightDevice\[0\]\.weight: not supported on this host \(no io\.bfq\.weight or io\.weight\)'
	else
		skip "the disk has no BFQ: a per-device io.weight needs iocost enabled on it"
	fi
}

@test "cgroup v2: blockIO throttle read/write bps and iops: the disk's line of io.max" {
	require_v2 io
	require_root_disk
	cfg_set '.linux.resources.blockIO = {
		throttleReadBpsDevice: [{major: $ma, minor: $mi, rate: 1048576}],
		throttleWriteBpsDevice: [{major: $ma, minor: $mi, rate: 2097152}],
		throttleReadIOPSDevice: [{major: $ma, minor: $mi, rate: 300}],
		throttleWriteIOPSDevice: [{major: $ma, minor: $mi, rate: 400}]}' \
		--argjson ma "$DISK_MAJOR" --argjson mi "$DISK_MINOR"
	start_sleeper
	assert_cg_line unified io.max "$DISK rbps=1048576 wbps=2097152 riops=300 wiops=400"
}

# --- hugetlb ------------------------------------------------------------------------------

@test "hugepageLimits: hugetlb.<size>.limit_in_bytes (v1) or hugetlb.<size>.max (unified) for each page size" {
	local -a sizes
	local filter='.linux.resources.hugepageLimits = []' size file
	mapfile -t sizes < <(hugepage_sizes)
	((${#sizes[@]} > 0)) || skip "the kernel lists no huge page sizes in /sys/kernel/mm/hugepages"
	# a limit of two pages of each size
	for size in "${sizes[@]}"; do
		filter+=" | .linux.resources.hugepageLimits += [{pageSize: \"$size\", limit: $((2 * $(page_bytes "$size")))}]"
	done
	if [[ -n $(v1_mount hugetlb) ]]; then
		cfg_set "$filter"
		start_sleeper
		for size in "${sizes[@]}"; do
			assert_cg hugetlb "hugetlb.$size.limit_in_bytes" "$((2 * $(page_bytes "$size")))"
		done
	elif v2_has hugetlb; then
		cfg_set "$filter"
		start_sleeper
		for size in "${sizes[@]}"; do
			file=hugetlb.$size.max
			assert_cg unified "$file" "$((2 * $(page_bytes "$size")))"
		done
	else
		refuse_config "$filter" 'linux\.resources\.hugepageLimits\[0\]: .*hugetlb'
	fi
}

@test "hugepageLimits of a page size the kernel lacks is refused naming the field and the size's file" {
	local file
	if [[ -n $(v1_mount hugetlb) ]]; then
		file='hugetlb\.3MB\.limit_in_bytes'
	elif v2_has hugetlb; then
		file='hugetlb\.3MB\.max'
	else
		skip "no hugetlb controller"
	fi
	[[ ! -e /sys/kernel/mm/hugepages/hugepages-3072kB ]] || skip "the kernel has 3 MB pages"
	refuse_config '.linux.resources.hugepageLimits = [{pageSize: "3MB", limit: 6291456}]' \
		"linux\\.resources\\.hugepageLimits\\[0\\]: not supported on this host \\(no $file\\)"
}

# --- network ----------------------------------------------------------------------------

# net_cls and net_prio are v1 only: on a pure v2 host moat says the field is not supported on
# cgroup v2, elsewhere that the host has no such controller.
@test "network.classID: net_cls.classid, or an error naming the field (without net_cls, or on cgroup v2)" {
	local filter='.linux.resources.network = {classID: 1048577}'
	if [[ -n $(v1_mount net_cls) ]]; then
		cfg_set "$filter"
		start_sleeper
		assert_cg net_cls net_cls.classid 1048577
	elif pure_v2; then
		refuse_config "$filter" 'linux\.resources\.network\.classID: not supported on cgroup v2$'
	else
		refuse_config "$filter" \
			'linux\.resources\.network\.classID: not supported on this host \(no net_cls controller\)$'
	fi
}

@test "network.priorities: net_prio.ifpriomap, or an error naming the field (without net_prio, or on cgroup v2)" {
	local filter='.linux.resources.network = {priorities: [{name: "lo", priority: 5}]}'
	if [[ -n $(v1_mount net_prio) ]]; then
		cfg_set "$filter"
		start_sleeper
		assert_cg_line net_prio net_prio.ifpriomap 'lo 5'
	elif pure_v2; then
		refuse_config "$filter" \
			'linux\.resources\.network\.priorities\[0\]: not supported on cgroup v2$'
	else
		refuse_config "$filter" \
			'linux\.resources\.network\.priorities\[0\]: not supported on this host \(no net_prio controller\)$'
	fi
}

# --- rdma -------------------------------------------------------------------------------

@test "rdma limits are refused naming the device's field where there is no rdma controller" {
	if [[ -n $(v1_mount rdma) ]] || v2_has rdma; then
		skip "this host has an rdma controller; reading a limit back needs an RDMA device"
	fi
	refuse_config '.linux.resources.rdma = {mlx5_0: {hcaHandles: 3, hcaObjects: 1000}}' \
		'linux\.resources\.rdma\.mlx5_0: .*rdma'
}

# --- devices ----------------------------------------------------------------------------

@test "devices: devices.list holds the config's rules and the default devices, not 'a *:* rwm'" {
	require_v1 devices
	cfg_set '.linux.resources.devices = [
		{allow: false, access: "rwm"},
		{allow: true, type: "c", major: 10, minor: 200, access: "rw"},
		{allow: true, type: "b", major: 7, access: "r"}]'
	start_sleeper
	assert_cg_line devices devices.list 'c 10:200 rw'
	assert_cg_line devices devices.list 'b 7:* r'
	assert_cg_line devices devices.list 'c 1:3 rwm'
	assert_cg_line devices devices.list 'c 136:* rwm'
	refute_line_exact 'a *:* rwm'
	if grep -qxF 'a *:* rwm' "$(cg_dir devices)/devices.list"; then
		fail "the host's devices.list still allows every device"
	fi
}

# --- unified ----------------------------------------------------------------------------

@test "unified cgroup.max.depth is written to the container's unified cgroup" {
	if [[ -z $(unified_mount) ]]; then
		skip "no cgroup2 hierarchy: linux.resources.unified needs one"
	fi
	cfg_set '.linux.resources.unified = {"cgroup.max.depth": "3"}'
	start_sleeper
	assert_cg unified cgroup.max.depth 3
}

@test "unified keys of a controller on cgroup v1, or the ones moat manages, are refused naming the key" {
	if [[ -z $(unified_mount) ]]; then
		skip "no cgroup2 hierarchy: linux.resources.unified needs one"
	fi
	if [[ -z $(v1_mount memory) ]]; then
		skip "memory is not on cgroup v1 here (not a hybrid host)"
	fi
	refuse_config '.linux.resources.unified = {"memory.high": "67108864"}' \
		'linux\.resources\.unified\["memory\.high"\]: .*memory controller is on cgroup v1'
	refuse_config '.linux.resources.unified = {"cgroup.procs": "1"}' \
		'linux\.resources\.unified\["cgroup\.procs"\]: moat manages this file'
}

@test "cgroup v2: unified keys of a controller: each value in the key's file" {
	require_v2 memory
	# memory.high has no linux.resources field of its own; cgroup.max.descendants is one of
	# the core files a config may set (the default of both is max)
	cfg_set '.linux.resources.unified = {"memory.high": "50331648", "cgroup.max.descendants": "4"}'
	start_sleeper
	assert_cg unified memory.high 50331648
	assert_cg unified cgroup.max.descendants 4
}

@test "unified keys of a controller on the unified hierarchy of any host: the key's file (hugetlb.<size>.max)" {
	local size
	v2_has hugetlb || skip "no hugetlb controller on the unified hierarchy"
	size=$(hugepage_sizes | head -n 1)
	[[ -n $size ]] || skip "the kernel lists no huge page sizes in /sys/kernel/mm/hugepages"
	cfg_set '.linux.resources.unified = {($k): ($v | tostring)}' \
		--arg k "hugetlb.$size.max" --argjson v "$((3 * $(page_bytes "$size")))"
	start_sleeper
	assert_cg unified "hugetlb.$size.max" "$((3 * $(page_bytes "$size")))"
}

@test "unified keys moat cannot write are refused naming the key: a core file moat manages, an unknown controller, a file the controller lacks" {
	local ctrl
	if [[ -z $(unified_mount) ]]; then
		skip "no cgroup2 hierarchy: linux.resources.unified needs one"
	fi
	refuse_config '.linux.resources.unified = {"cgroup.procs": "1"}' \
		'linux\.resources\.unified\["cgroup\.procs"\]: moat manages this file itself$'
	refuse_config '.linux.resources.unified = {"cgroup.subtree_control": "+memory"}' \
		'linux\.resources\.unified\["cgroup\.subtree_control"\]: moat manages this file itself$'
	refuse_config '.linux.resources.unified = {"nosuch.max": "1"}' \
		"linux\\.resources\\.unified\\[\"nosuch\\.max\"\\]: no cgroup v2 controller is called 'nosuch'\$"
	# a controller this host has on the unified hierarchy, and a file it does not have
	ctrl=$(awk '{ print $1 }' "$(unified_mount)/cgroup.controllers")
	[[ -n $ctrl ]] || skip "no controller on the unified hierarchy"
	refuse_config ".linux.resources.unified = {\"$ctrl.nosuch\": \"1\"}" \
		"linux\\.resources\\.unified\\[\"$ctrl\\.nosuch\"\\]: not supported on this host \\(no $ctrl\\.nosuch\\)\$"
}

# --- values the kernel rejects ------------------------------------------------------------

# refuse_missing_cpu: cpu.cpus "99" on a host without CPU 99 fails create and run naming the
# field and cpuset.cpus (the file is called that on v1 and v2), leaving nothing behind.
refuse_missing_cpu() {
	(($(nproc --all) < 100)) || skip "the host has a CPU 99"
	refuse_config '.linux.resources.cpu = {cpus: "99"}' \
		'linux\.resources\.cpu\.cpus: .*cpuset\.cpus'
	# run, too, leaves nothing behind
	CASE=$((CASE + 1))
	CID=$BASE_CID-$CASE
	run_moat run --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$CID"
	assert_moat_error 'linux\.resources\.cpu\.cpus: .*cpuset\.cpus'
	assert_no_residue "$CID"
}

@test "cpu.cpus naming a CPU the host lacks is refused naming the field and cpuset.cpus" {
	require_v1 cpuset
	refuse_missing_cpu
}

@test "cgroup v2: cpu.cpus naming a CPU the host lacks is refused naming the field and cpuset.cpus" {
	require_v2 cpuset
	refuse_missing_cpu
}

@test "blockIO.weight above 1000 is refused naming the field and the range" {
	require_v1 blkio
	refuse_config '.linux.resources.blockIO = {weight: 1001}' \
		'linux\.resources\.blockIO\.weight: 1001 is outside 10\.\.1000'
}

@test "blockIO.weight below the runtime spec's 10..1000 is refused on cgroup v1 as on v2" {
	require_v1 blkio
	# The runtime spec's schema (defs-linux.json, blkioWeight) allows 10..1000.
	# BFQ's own range is 1..1000, so the kernel takes 5 into blkio.bfq.weight:
	# moat must check the spec's range itself, as it does for v2's io.weight.
	refuse_config '.linux.resources.blockIO = {weight: 5}' \
		'linux\.resources\.blockIO\.weight\b'
}

@test "cgroup v2: blockIO.weight outside 10..1000 is refused naming the field and the range" {
	require_v2 io
	# io.bfq.weight would take 5 (BFQ's range is 1..1000) and io.weight 1001 (1..10000)
	refuse_config '.linux.resources.blockIO = {weight: 1001}' \
		'linux\.resources\.blockIO\.weight: 1001 is outside 10\.\.1000$'
	refuse_config '.linux.resources.blockIO = {weight: 5}' \
		'linux\.resources\.blockIO\.weight: 5 is outside 10\.\.1000$'
}

@test "memory values the kernel rejects are refused naming the field and the file" {
	require_v1 memory
	# the kernel takes 0..200 (since 5.8; 0..100 before)
	refuse_config '.linux.resources.memory = {swappiness: 201}' \
		'linux\.resources\.memory\.swappiness: .*memory\.swappiness'
	if kernel_at_least 6 1; then
		refuse_config '.linux.resources.memory = {useHierarchy: false}' \
			'linux\.resources\.memory\.useHierarchy: .*memory\.use_hierarchy'
	fi
	if [[ -e $(v1_mount memory)/memory.memsw.limit_in_bytes ]]; then
		# memory+swap below memory alone
		refuse_config '.linux.resources.memory = {limit: 67108864, swap: 33554432}' \
			'linux\.resources\.memory\.swap: .*memory\.memsw\.limit_in_bytes'
	fi
}

# What cgroup v2 cannot express is moat's to refuse, before any write: v2 has no swappiness,
# no switch for the OOM killer and no non-hierarchical accounting, and OCI's memory+swap
# needs a limit to subtract and cannot be below it.
@test "cgroup v2: memory values cgroup v2 cannot take are refused naming the field" {
	require_v2 memory
	refuse_config '.linux.resources.memory = {swappiness: 17}' \
		'linux\.resources\.memory\.swappiness: not supported on cgroup v2$'
	refuse_config '.linux.resources.memory = {limit: 67108864, disableOOMKiller: true}' \
		'linux\.resources\.memory\.disableOOMKiller: true is not supported on cgroup v2$'
	refuse_config '.linux.resources.memory = {useHierarchy: false}' \
		'linux\.resources\.memory\.useHierarchy: false is not supported on cgroup v2$'
	refuse_config '.linux.resources.memory = {limit: 67108864, swap: 33554432}' \
		'linux\.resources\.memory\.swap: 33554432 is below memory\.limit 67108864 \(swap counts memory\+swap\)$'
	refuse_config '.linux.resources.memory = {swap: 134217728}' \
		'linux\.resources\.memory\.swap: on cgroup v2 it needs a memory\.limit to subtract'
}

@test "cpu.quota below the kernel's 1 ms minimum is refused naming the field and cpu.cfs_quota_us" {
	require_v1 cpu
	refuse_config '.linux.resources.cpu = {quota: 500, period: 100000}' \
		'linux\.resources\.cpu\.quota: .*cpu\.cfs_quota_us'
}

@test "cgroup v2: cpu.quota below the kernel's 1 ms minimum is refused naming the field and cpu.max" {
	require_v2 cpu
	refuse_config '.linux.resources.cpu = {quota: 500, period: 100000}' \
		"linux\\.resources\\.cpu\\.quota: write '500 100000' to '.*/cpu\\.max': Invalid argument"
}

@test "cgroup v2: cpu.realtimePeriod and realtimeRuntime are refused (no real-time groups on cgroup v2)" {
	require_v2 cpu
	refuse_config '.linux.resources.cpu = {realtimePeriod: 1000000}' \
		'linux\.resources\.cpu\.realtimePeriod: not supported on cgroup v2$'
	refuse_config '.linux.resources.cpu = {realtimeRuntime: 10000}' \
		'linux\.resources\.cpu\.realtimeRuntime: not supported on cgroup v2$'
}

@test "cgroup v2: blockIO.leafWeight and weightDevice leafWeight are refused (no leaf weights on cgroup v2)" {
	require_v2 io
	require_root_disk
	refuse_config '.linux.resources.blockIO = {leafWeight: 200}' \
		'linux\.resources\.blockIO\.leafWeight: not supported on cgroup v2$'
	refuse_config ".linux.resources.blockIO = {weightDevice: [{major: $DISK_MAJOR, minor: $DISK_MINOR, leafWeight: 200}]}" \
		'linux\.resources\.blockIO\.weightDevice\[0\]\.leafWeight: not supported on cgroup v2$'
}

# --- the limits bite --------------------------------------------------------------------

# start_hog MEMORY: $CID runs from a bundle of its own with linux.resources.memory = MEMORY
# (jq), its init starting a memory hog that reports its exit status, then sleeping. The hog
# is a child that doubles a shell string; the init survives to report. The doubling stops
# at 128 MiB, so a limit that is not there fails the test ("hog exited 0") instead of
# exhausting the host.
start_hog() {
	make_bundle "$TEST_DIR/hog"
	cfg_set ".linux.resources.memory = $1"
	cfg_sh 'sh -c "x=0123456789abcdef; while [ \${#x} -lt 134217728 ]; do x=\$x\$x; done"
echo "hog exited $?"
exec sleep 100000'
	moat_run_detached
	wait_for_output '^hog exited'
	run cat "$(out_file)"
	assert_output 'hog exited 137'
}

@test "a memory hog is OOM-killed inside its 32 MiB cgroup; a container without a limit is unaffected" {
	require_v1 memory
	if [[ ! -e $(v1_mount memory)/memory.memsw.limit_in_bytes ]]; then
		skip "the kernel does not account swap (no memory.memsw.limit_in_bytes)"
	fi
	local hog=$CID bystander=$CID-bystander by_pid hog_pid oom peak
	make_bundle "$TEST_DIR/bystander"
	cfg_args sleep 100000
	CID=$bystander
	moat_run_detached
	by_pid=$(host_pid)

	CID=$hog
	# swap = limit: no swap, so the hog cannot escape into it
	start_hog '{limit: 33554432, swap: 33554432}'
	hog_pid=$(host_pid)

	oom=$(cg_key memory memory.oom_control oom_kill)
	((oom > 0)) || fail "memory.oom_control reports oom_kill '$oom'"
	# the cgroup never held more than its limit (memory.failcnt stays 0 on
	# this kernel even when the limit is hit, so it is not asserted)
	peak=$(cg_read memory memory.max_usage_in_bytes)
	((peak <= 33554432)) || fail "memory.max_usage_in_bytes is $peak, above the limit"
	# the kill stayed inside: the hog's init and the other container live on
	process_alive "$hog_pid"
	process_alive "$by_pid"
	status_is "$bystander" running
	oom=$(cg_key memory memory.oom_control oom_kill "$bystander")
	[[ $oom == 0 ]] || fail "the bystander's memory.oom_control reports oom_kill '$oom'"
}

@test "cgroup v2: a memory hog is OOM-killed inside its 32 MiB cgroup (memory.events oom_kill); a container without a limit is unaffected" {
	require_v2 memory
	v2_swap_accounted || skip "the kernel does not account swap (no memory.swap.max)"
	local hog=$CID bystander=$CID-bystander by_pid hog_pid oom peak
	make_bundle "$TEST_DIR/bystander"
	cfg_args sleep 100000
	CID=$bystander
	moat_run_detached
	by_pid=$(host_pid)

	CID=$hog
	# swap = limit: memory.swap.max 0, so the hog cannot escape into swap
	start_hog '{limit: 33554432, swap: 33554432}'
	hog_pid=$(host_pid)
	[[ $(cg_read unified memory.max) == 33554432 ]] || fail "memory.max is $(cg_read unified memory.max)"
	[[ $(cg_read unified memory.swap.max) == 0 ]] || fail "memory.swap.max is $(cg_read unified memory.swap.max)"

	oom=$(cg_key unified memory.events oom_kill)
	((oom > 0)) || fail "memory.events reports oom_kill '$oom'"
	# the cgroup never held more than its limit (memory.peak: Linux 5.19)
	if [[ -e $(cg_dir unified)/memory.peak ]]; then
		peak=$(cg_read unified memory.peak)
		((peak <= 33554432)) || fail "memory.peak is $peak, above the limit"
	fi
	# the kill stayed inside: the hog's init and the other container live on
	process_alive "$hog_pid"
	process_alive "$by_pid"
	status_is "$bystander" running
	oom=$(cg_key unified memory.events oom_kill "$bystander")
	[[ $oom == 0 ]] || fail "the bystander's memory.events reports oom_kill '$oom'"
}

# fork_bomb SIDE: with pids.limit 20, a fork bomb stops at pids.max, which SIDE's cgroup
# files show (pids.current, pids.peak, pids.events: named alike on v1 and v2); the container
# stays alive and is deleted cleanly.
fork_bomb() {
	local side=$1 current peak events
	cfg_set '.linux.resources.pids = {limit: 20}'
	# The bomb runs in a subshell: busybox sh gives up on the first failed
	# fork, and the init, which needs no fork after it, reports and waits.
	cfg_sh 'sleep 100000 & keeper=$!
( i=0; while [ $i -lt 100 ]; do sleep 100000 & i=$((i + 1)); done ) 2>&1
echo "bomb stopped"
wait $keeper'
	moat_run_detached
	[[ $(cg_read "$side" pids.max) == 20 ]] || fail "pids.max is $(cg_read "$side" pids.max)"
	wait_for_output '^bomb stopped'
	run cat "$(out_file)"
	assert_output --regexp "can't fork|Resource temporarily unavailable"

	current=$(cg_read "$side" pids.current)
	((current <= 20)) || fail "pids.current is $current"
	((current >= 18)) || fail "pids.current is only $current: the bomb did not reach the limit"
	if [[ -e $(cg_dir "$side")/pids.peak ]]; then
		peak=$(cg_read "$side" pids.peak)
		((peak <= 20)) || fail "pids.peak is $peak"
	fi
	events=$(cg_key "$side" pids.events max)
	((events > 0)) || fail "pids.events reports max '$events'"

	process_alive "$(host_pid)"
	status_is "$CID" running
	run_moat delete --force "$CID"
	assert_success
	assert_no_residue "$CID"
}

@test "a fork bomb stops at pids.max; the container stays alive and is deleted cleanly" {
	require_v1 pids
	fork_bomb pids
}

@test "cgroup v2: a fork bomb stops at pids.max; the container stays alive and is deleted cleanly" {
	require_v2 pids
	fork_bomb unified
}

# throttled SIDE: cpu.stat of $CID (named alike on v1 and v2) counts at least one throttled
# period.
throttled() {
	local n
	n=$(cg_key "$1" cpu.stat nr_throttled)
	((n > 0))
}

@test "a CPU hog with quota 10000/100000 is throttled" {
	require_v1 cpu
	cfg_set '.linux.resources.cpu = {quota: 10000, period: 100000}'
	cfg_sh 'while :; do :; done'
	moat_run_detached
	[[ $(cg_read cpu cpu.cfs_quota_us) == 10000 ]]
	# no timing: a bounded wait until the kernel has throttled it once
	retry throttled cpu
}

@test "cgroup v2: a CPU hog with cpu.max 10000 100000 is throttled (cpu.stat nr_throttled)" {
	require_v2 cpu
	cfg_set '.linux.resources.cpu = {quota: 10000, period: 100000}'
	cfg_sh 'while :; do :; done'
	moat_run_detached
	[[ $(cg_read unified cpu.max) == '10000 100000' ]] || fail "cpu.max is $(cg_read unified cpu.max)"
	# no timing: a bounded wait until the kernel has throttled it once
	retry throttled unified
}

# --- last -----------------------------------------------------------------------------------

@test "a device rule of type a with numbers is refused on v1 rather than widened to every device" {
	require_v1 devices
	# v1 reads "a" as every device whatever numbers follow
	refuse_config '.linux.resources.devices = [{allow: true, type: "a", major: 1, minor: 3, access: "rwm"}]' \
		'linux\.resources\.devices\[0\]: type "a" with a major or minor number cannot be written on cgroup v1'
}

@test "delete --force kills processes moved into a sub-cgroup and removes it in every hierarchy" {
	require_v1 pids
	require_v1 memory
	cfg_set '.linux.resources = {pids: {limit: 100}}'
	cfg_sh 'sleep 300 & sleep 300 & wait'
	moat_run_detached
	retry test "$(moat ps --format json "$CID" | jq length)" -eq 3
	local child h
	child=$(moat ps --format json "$CID" | jq '.[-1]')
	# the child escapes to a sub-cgroup of the container's, in two hierarchies
	for h in pids memory; do
		mkdir "/sys/fs/cgroup/$h/moat/$CID/escaped"
		echo "$child" >"/sys/fs/cgroup/$h/moat/$CID/escaped/cgroup.procs"
	done
	run_moat delete --force "$CID"
	assert_success
	process_gone "$child"
	for h in pids memory; do
		[[ ! -e /sys/fs/cgroup/$h/moat/$CID ]] || fail "/sys/fs/cgroup/$h/moat/$CID remains"
	done
	assert_no_residue "$CID"
}

@test "cgroup v2: delete --force kills processes moved into a sub-cgroup and removes it" {
	require_v2 pids
	cfg_set '.linux.resources = {pids: {limit: 100}}'
	cfg_sh 'sleep 300 & sleep 300 & wait'
	moat_run_detached
	retry test "$(moat ps --format json "$CID" | jq length)" -eq 3
	local child dir
	child=$(moat ps --format json "$CID" | jq '.[-1]')
	dir=$(cg_dir unified)
	# the child escapes to a sub-cgroup of the container's (the container's cgroup enables
	# no controller for its children, so a process may go below it)
	mkdir "$dir/escaped"
	echo "$child" >"$dir/escaped/cgroup.procs"
	grep -qx "0::/moat/$CID/escaped" "/proc/$child/cgroup" || fail "/proc/$child/cgroup: $(cat "/proc/$child/cgroup")"
	run_moat delete --force "$CID"
	assert_success
	process_gone "$child"
	[[ ! -e $dir ]] || fail "$dir remains"
	assert_no_residue "$CID"
}

@test "no cgroup of this file's containers remains under /moat in any hierarchy" {
	# Keep this test last: every earlier test's containers, created, run or
	# refused, have been deleted by now (by moat or the standard teardown).
	# A cgroup that delete or a failed create left behind breaks it.
	local -a mounts
	local m found left=''
	mapfile -t mounts < <(cg_mounts)
	((${#mounts[@]} > 0)) || fail "no cgroup hierarchy in /proc/self/mountinfo"
	for m in "${mounts[@]}"; do
		[[ -d $m/moat ]] || continue
		# find fails when a directory vanishes mid-walk (another moat's delete); what it
		# printed still counts
		found=$(find "$m/moat" -mindepth 1 -maxdepth 1 -type d -name "$CG_PREFIX-*" 2>/dev/null || true)
		left+=${found:+$found$'\n'}
	done
	[[ -z $left ]] || fail "cgroups remain: $left"
}
