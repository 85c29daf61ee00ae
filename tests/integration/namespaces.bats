#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Namespaces: the default spec gives the container its own pid, network,
# ipc, uts, mount, cgroup and user namespaces; a namespace given by path is
# joined.

load helpers

# ns_inode TYPE: the inode of this (host) process's TYPE namespace.
ns_inode() {
	stat -L -c %i "/proc/self/ns/$1"
}

@test "the container process is pid 1 of its own pid namespace" {
	make_bundle
	run_sh 'echo $$; readlink /proc/self/ns/pid'
	assert_success
	assert_line --index 0 1
	refute_line --index 1 "pid:[$(ns_inode pid)]"
}

@test "the container sees only its own processes" {
	make_bundle
	run_sh 'ls -d /proc/[0-9]* | wc -l'
	assert_success
	# sh (pid 1) and ls, perhaps wc: nothing of the host's
	((output <= 3))
}

@test "the container has its own network namespace with only lo" {
	make_bundle
	run_sh 'readlink /proc/self/ns/net; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
	assert_success
	refute_line --index 0 "net:[$(ns_inode net)]"
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 lo
}

@test "ip link inside the container lists only lo" {
	make_bundle
	run_sh 'ip -o link show | cut -d: -f2 | tr -d " "'
	assert_success
	assert_output lo
}

# Issue 14: a new network namespace starts with lo down; moat brings it up, as runc does.
# The server's stdin stays open (a fifo the shell holds) until the exchange is
# over: with /dev/null it would shut its sending side at once, and a client
# that saw that FIN before reading its own stdin left without sending (a CI
# failure: the output lacked over-loopback).
@test "lo is up in the container's network namespace: a server on 127.0.0.1 answers" {
	make_bundle
	run_sh 'ip -o link show lo | grep -o "<[^>]*>"
		mkfifo /tmp/in
		nc -l -p 4711 </tmp/in >/tmp/got & server=$!
		exec 3>/tmp/in
		for i in 1 2 3 4 5 6 7 8 9 10; do echo over-loopback | nc 127.0.0.1 4711 && break; sleep 0.2; done
		wait $server; exec 3>&-; cat /tmp/got'
	assert_success
	assert_line --regexp '^<LOOPBACK,UP,LOWER_UP>$'
	assert_line over-loopback
}

@test "the container has its own uts namespace with the configured hostname" {
	make_bundle
	cfg_set '.hostname = "moat-test-host"'
	run_sh 'hostname; readlink /proc/self/ns/uts'
	assert_success
	assert_line --index 0 moat-test-host
	refute_line --index 1 "uts:[$(ns_inode uts)]"
	# the host's name is untouched
	refute [ "$(hostname)" = moat-test-host ]
}

@test "the container has its own ipc, mount and cgroup namespaces" {
	make_bundle
	run_sh 'for t in ipc mnt cgroup; do readlink /proc/self/ns/$t; done'
	assert_success
	refute_line --index 0 "ipc:[$(ns_inode ipc)]"
	refute_line --index 1 "mnt:[$(ns_inode mnt)]"
	refute_line --index 2 "cgroup:[$(ns_inode cgroup)]"
}

@test "two containers do not share namespaces" {
	make_bundle
	cfg_args sleep 100000
	first=$CID-1
	CID=$first moat_create
	moat start "$first"
	pid=$(host_pid "$first")
	cfg_sh 'for t in pid net ipc uts mnt user cgroup; do readlink /proc/self/ns/$t; done'
	run_moat run --bundle "$BUNDLE" "$CID-2"
	assert_success
	assert_equal "${#lines[@]}" 7
	for t in pid net ipc uts mnt user cgroup; do
		refute_line "$(readlink "/proc/$pid/ns/$t")"
	done
}

# --- joining a namespace by path ------------------------------------------

# make_netns FILE: a new network namespace kept alive by a bind mount on
# FILE (under $TEST_DIR, so teardown unmounts it).
make_netns() {
	touch "$1"
	unshare --net="$1" true
}

@test "a network namespace given by path is joined" {
	make_bundle
	make_netns "$TEST_DIR/netns"
	inode=$(stat -L -c %i "$TEST_DIR/netns")
	cfg_set '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' \
		--arg p "$TEST_DIR/netns"
	run_sh 'readlink /proc/self/ns/net'
	assert_success
	assert_output "net:[$inode]"
}

@test "a joined network namespace is shared by two containers" {
	make_bundle
	make_netns "$TEST_DIR/netns"
	inode=$(stat -L -c %i "$TEST_DIR/netns")
	cfg_set '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' \
		--arg p "$TEST_DIR/netns"
	cfg_args sleep 100000
	CID=$CID-1 moat_create
	moat start "$CID-1"
	cfg_sh 'readlink /proc/self/ns/net'
	run_moat run --bundle "$BUNDLE" "$CID-2"
	assert_success
	assert_output "net:[$inode]"
	assert_equal "$(readlink "/proc/$(host_pid "$CID-1")/ns/net")" "net:[$inode]"
}

# Issue 14: the spec lets a joined uts namespace get the config's names, as runc sets them.
@test "hostname and domainname are set in a uts namespace joined by path" {
	use_policy_without auto-userns
	make_bundle
	touch "$TEST_DIR/uts"
	unshare --uts="$TEST_DIR/uts" true
	cfg_set '.linux.namespaces |= map(select(.type != "user") | if .type == "uts" then .path = $p else . end)
		| del(.linux.uidMappings, .linux.gidMappings) | .hostname = "joined-host"
		| .domainname = "joined-domain"' --arg p "$TEST_DIR/uts"
	run_sh 'hostname; cat /proc/sys/kernel/domainname'
	assert_success
	assert_output "$(printf 'joined-host\njoined-domain')"
	assert_equal "$(nsenter --uts="$TEST_DIR/uts" hostname)" joined-host
	[[ $(hostname) != joined-host ]] || fail "the host's hostname changed"
}

@test "a network namespace path that does not exist fails with one line naming it" {
	make_bundle
	cfg_set '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' \
		--arg p "$TEST_DIR/no-such-netns"
	cfg_args echo must-not-run
	run_moat run --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$CID"
	assert_moat_error 'no-such-netns'
	refute_output --partial must-not-run
	assert_no_residue "$CID"
}

@test "a namespace path that is not a namespace of that type fails with one line" {
	make_bundle
	cfg_set '.linux.namespaces |= map(if .type == "network" then .path = "/proc/self/ns/uts" else . end)'
	cfg_args echo must-not-run
	run_moat run --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$CID"
	assert_moat_error 'network|net'
	refute_output --partial must-not-run
	assert_no_residue "$CID"
}

@test "deleting a container that joined a network namespace leaves the namespace alone" {
	make_bundle
	make_netns "$TEST_DIR/netns"
	inode=$(stat -L -c %i "$TEST_DIR/netns")
	cfg_set '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' \
		--arg p "$TEST_DIR/netns"
	cfg_args sleep 100000
	moat_create
	moat start "$CID"
	moat delete --force "$CID"
	assert_equal "$(stat -L -c %i "$TEST_DIR/netns")" "$inode"
	run nsenter --net="$TEST_DIR/netns" true
	assert_success
}
