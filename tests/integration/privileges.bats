#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The default process has no capabilities in any set and no_new_privs set.

load helpers

@test "the default process has no capabilities in any set" {
	make_bundle
	run_sh 'grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb):" /proc/self/status'
	assert_success
	for set in CapInh CapPrm CapEff CapBnd CapAmb; do
		assert_line --regexp "^$set:[[:space:]]+0000000000000000$"
	done
}

@test "a non-root process.user has no capabilities either" {
	make_bundle
	cfg_set '.process.user = {"uid": 1000, "gid": 1000}'
	run_sh 'grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb):" /proc/self/status'
	assert_success
	for set in CapInh CapPrm CapEff CapBnd CapAmb; do
		assert_line --regexp "^$set:[[:space:]]+0000000000000000$"
	done
}

@test "the running container process has no capabilities, seen from the host" {
	make_bundle
	cfg_args sleep 100000
	moat_create
	moat start "$CID"
	wait_for_status running
	run grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' "/proc/$(host_pid)/status"
	for set in CapInh CapPrm CapEff CapBnd CapAmb; do
		assert_line --regexp "^$set:[[:space:]]+0000000000000000$"
	done
}

@test "the default process has no_new_privs set" {
	make_bundle
	run_sh 'grep "^NoNewPrivs:" /proc/self/status'
	assert_success
	assert_output --regexp '^NoNewPrivs:[[:space:]]+1$'
}

@test "no_new_privs is inherited by the container's children" {
	make_bundle
	run_sh 'sh -c "grep ^NoNewPrivs: /proc/self/status"'
	assert_success
	assert_output --regexp '^NoNewPrivs:[[:space:]]+1$'
}

@test "container root cannot mount, even a tmpfs" {
	make_bundle
	run_sh 'mkdir -p /tmp/m && mount -t tmpfs none /tmp/m && echo mounted || echo refused'
	assert_success
	assert_output --partial refused
	refute_output --partial mounted
}

@test "container root cannot change the hostname" {
	make_bundle
	run_sh 'hostname evil 2>/dev/null && echo changed || echo refused; hostname'
	assert_success
	assert_line --index 0 refused
	assert_line --index 1 "$(cfg_get .hostname)"
}

@test "container root cannot create device nodes" {
	make_bundle
	run_sh 'mknod /tmp/mem c 1 1 2>/dev/null && echo created || echo refused'
	assert_success
	assert_output refused
}

@test "container root cannot give its own file to another uid" {
	make_bundle
	run_sh 'touch /tmp/f && chown 1234 /tmp/f 2>/dev/null && echo chowned || echo refused'
	assert_success
	assert_output refused
}
