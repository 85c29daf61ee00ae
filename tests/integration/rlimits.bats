#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# process.rlimits, in the container's init and in a process `moat exec` starts. Inside a
# user namespace nothing can raise a hard limit (that takes CAP_SYS_RESOURCE in the initial
# one), so moat raises it from outside, before the process sets its limits itself
# (process.h moat_process_raise_hard_limits). Where moat cannot either (the development
# machines' bounding set lacks CAP_SYS_RESOURCE), create fails naming the field.

load helpers

setup() {
	moat_setup
	make_bundle
}

# limits_of NAME: the soft and hard values of NAME ("Max processes") in the process's
# /proc/self/limits lines in $output
limits_of() {
	grep "^$1 " <<<"$output" | awk '{ print $(NF - 2), $(NF - 1) }'
}

# has_sys_resource: moat, run by this shell, may raise a hard limit
has_sys_resource() {
	local bnd
	bnd=$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)
	(((0x$bnd >> 24) & 1))
}

@test "rlimits below moat's own are set in the init and in an exec'd process" {
	cfg_set '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 100, hard: 200},
		{type: "RLIMIT_NPROC", soft: 300, hard: 400}]'
	run_sh 'cat /proc/self/limits'
	assert_success
	assert_equal "$(limits_of 'Max open files')" "100 200"
	assert_equal "$(limits_of 'Max processes')" "300 400"

	cfg_args sleep 100000
	moat_run_detached
	run_moat exec "$CID" cat /proc/self/limits
	assert_success
	assert_equal "$(limits_of 'Max open files')" "100 200"
	assert_equal "$(limits_of 'Max processes')" "300 400"
	moat delete --force "$CID"
}

@test "a hard rlimit above moat's own is raised from outside the container's user namespace" {
	has_sys_resource || skip "this host's bounding set lacks CAP_SYS_RESOURCE (the test host runs this)"
	local hard
	hard=$(($(ulimit -Hu) + 1000))
	# (moat's own limits are this shell's: the container asks for more than they allow)
	cfg_set '.process.rlimits = [{type: "RLIMIT_NPROC", soft: 64, hard: $h}]' --argjson h "$hard"
	run_sh 'cat /proc/self/limits'
	assert_success
	assert_equal "$(limits_of 'Max processes')" "64 $hard"

	cfg_args sleep 100000
	moat_run_detached
	run_moat exec "$CID" cat /proc/self/limits
	assert_success
	assert_equal "$(limits_of 'Max processes')" "64 $hard"
	moat delete --force "$CID"
}

@test "a hard rlimit moat cannot raise fails create naming the field and CAP_SYS_RESOURCE" {
	! has_sys_resource || skip "moat can raise hard limits here (the development machines cannot)"
	local hard
	hard=$(($(ulimit -Hu) + 1000))
	cfg_set '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 64, hard: 64},
		{type: "RLIMIT_NPROC", soft: 64, hard: $h}]' --argjson h "$hard"
	cfg_args echo must-not-run
	run_moat create --bundle "$BUNDLE" "$CID"
	assert_moat_error "process\.rlimits\[1\] \(RLIMIT_NPROC\): hard limit $hard is above the current [0-9]+; raising it needs CAP_SYS_RESOURCE"
	assert_no_residue "$CID"
}
