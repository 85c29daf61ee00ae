#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# What engines' runtime clients (containerd's go-runc, Podman's conmon)
# depend on beyond the OCI lifecycle: the words they look for in errors, the
# idempotent clean-up commands, and flags they pass.

load helpers

@test "kill of an exited container says 'container not running' (go-runc's test for it)" {
	make_bundle
	cfg_args true
	moat_run_detached
	retry status_is "$CID" stopped
	run_moat kill "$CID" KILL
	assert_moat_error "container '$CID' has exited: container not running"
}

@test "kill 0 checks that the container's process exists" {
	make_bundle
	cfg_args sleep 300
	moat_run_detached
	run_moat kill "$CID" 0
	assert_success
	process_alive "$(host_pid)"
	moat kill "$CID" KILL
	retry status_is "$CID" stopped
	run_moat kill "$CID" 0
	assert_moat_error 'container not running'
}

@test "delete --force of a container that does not exist succeeds silently" {
	run_moat delete --force no-such-container
	assert_success
	assert_equal "$stderr" ''
	# without --force it stays an error
	run_moat delete no-such-container
	assert_moat_error "container 'no-such-container' does not exist"
}

@test "delete --force twice: the second finds nothing and succeeds" {
	make_bundle
	cfg_args sleep 300
	moat_run_detached
	moat delete --force "$CID"
	run_moat delete --force "$CID"
	assert_success
	assert_no_residue "$CID"
}

@test "exec into a created container runs beside its waiting init" {
	make_bundle
	cfg_args echo from-init
	moat_create
	run --separate-stderr moat exec "$CID" sh -c 'echo exec-ran; cat /proc/1/cmdline | tr "\0" " "'
	assert_success
	assert_line --index 0 exec-ran
	# pid 1 is still moat's init, waiting to exec the program
	refute_line --partial 'echo from-init'
	run status_of
	assert_output created
	moat start "$CID"
	wait_for_output from-init
}

@test "the global --criu PATH that go-runc may pass is accepted" {
	run_moat --criu /usr/sbin/criu list
	assert_success
	assert_equal "$stderr" ''
}

@test "ambient capabilities that are not inheritable are left out with a warning, as runc does" {
	make_bundle
	# what `runc spec` writes: ambient caps without inheritable ones
	cfg_set '.process.capabilities = {bounding: ["CAP_KILL", "CAP_NET_BIND_SERVICE"],
		effective: ["CAP_KILL", "CAP_NET_BIND_SERVICE"], permitted: ["CAP_KILL", "CAP_NET_BIND_SERVICE"],
		ambient: ["CAP_KILL", "CAP_NET_BIND_SERVICE"]} | .process.user = {uid: 1000, gid: 1000}'
	run_sh 'grep -E "^Cap(Amb|Inh)" /proc/self/status'
	assert_success
	assert_line 'CapInh:	0000000000000000'
	assert_line 'CapAmb:	0000000000000000'
	assert_equal "${#stderr_lines[@]}" 1
	assert_equal "${stderr_lines[0]}" "moat: warning: process.capabilities.ambient: CAP_KILL left out: an ambient capability must also be inheritable and permitted; process.capabilities.ambient: CAP_NET_BIND_SERVICE left out: an ambient capability must also be inheritable and permitted"
}

@test "ambient capabilities that are inheritable and permitted are raised" {
	make_bundle
	cfg_set '.process.capabilities = {bounding: ["CAP_KILL"], effective: ["CAP_KILL"],
		permitted: ["CAP_KILL"], inheritable: ["CAP_KILL"], ambient: ["CAP_KILL"]} |
		.process.user = {uid: 1000, gid: 1000}'
	run_sh 'grep -E "^CapAmb" /proc/self/status'
	assert_success
	# CAP_KILL is bit 5
	assert_output 'CapAmb:	0000000000000020'
	assert_equal "$stderr" ''
}
