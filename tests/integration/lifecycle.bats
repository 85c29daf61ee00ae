#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# create / start / state / delete, and the state reported at each step.

load helpers

# A container whose process waits for one line on a FIFO (its stdin), so
# the test decides when it exits on its own (no signal, no timing).
make_waiting_container() {
	make_bundle
	mkfifo "$TEST_DIR/go"
	CONTAINER_STDIN=$TEST_DIR/go
	cfg_sh 'echo started; read line; echo "exiting on $line"; exit 0'
}

release_waiting() {
	echo go >"$TEST_DIR/go"
}

@test "create leaves the container in state created with a live pid" {
	make_waiting_container
	run moat_create
	assert_success
	run --separate-stderr state_of
	assert_success
	assert_equal "$(jq -r .status <<<"$output")" created
	assert_equal "$(jq -r .id <<<"$output")" "$CID"
	pid=$(jq -r .pid <<<"$output")
	[[ $pid =~ ^[0-9]+$ ]] && ((pid > 0))
	process_alive "$pid"
}

@test "create does not run the user process until start" {
	make_waiting_container
	moat_create
	refute [ -s "$(out_file "$CID")" ]
	run moat start "$CID"
	assert_success
	wait_for_output '^started$'
}

@test "state reports ociVersion, id, status, pid, bundle and annotations" {
	make_waiting_container
	cfg_set '.annotations = {"org.example.key": "value"}'
	moat_create
	run --separate-stderr state_of
	assert_success
	jq -e . <<<"$output" >/dev/null
	assert_equal "$(jq -r .id <<<"$output")" "$CID"
	assert_equal "$(jq -r .bundle <<<"$output")" "$BUNDLE"
	assert_equal "$(jq -r '.annotations["org.example.key"]' <<<"$output")" value
	assert_equal "$(jq -r .pid <<<"$output")" "$(host_pid)"
	run jq -r .ociVersion <<<"$output"
	assert_output --regexp '^1\.[0-9]+\.[0-9]+'
}

@test "pid file holds the host pid of the container process" {
	make_waiting_container
	moat_create
	pid=$(host_pid)
	[[ -n $pid ]]
	process_alive "$pid"
	assert_equal "$(state_of | jq -r .pid)" "$pid"
	# the pid is a host pid: its pid namespace is not ours
	refute [ "$(readlink "/proc/$pid/ns/pid")" = "$(readlink /proc/self/ns/pid)" ]
}

@test "start moves the container to running" {
	make_waiting_container
	moat_create
	run moat start "$CID"
	assert_success
	wait_for_output '^started$'
	assert_equal "$(status_of)" running
}

@test "state is stopped after the process exits on its own" {
	make_waiting_container
	moat_create
	moat start "$CID"
	wait_for_output '^started$'
	assert_equal "$(status_of)" running
	release_waiting
	wait_for_output '^exiting on go$'
	wait_for_status stopped
	process_gone "$(host_pid)"
	assert_equal "$(status_of)" stopped
}

@test "a process that exits at once still ends up stopped" {
	make_bundle
	cfg_args true
	moat_create
	moat start "$CID"
	wait_for_status stopped
}

@test "a second start fails and leaves the container running" {
	make_waiting_container
	moat_create
	moat start "$CID"
	wait_for_output '^started$'
	run_moat start "$CID"
	assert_moat_error
	assert_equal "$(status_of)" running
	assert_equal "$(grep -c '^started$' "$(out_file "$CID")")" 1
}

@test "start of a stopped container fails" {
	make_bundle
	cfg_args true
	moat_create
	moat start "$CID"
	wait_for_status stopped
	run_moat start "$CID"
	assert_moat_error
	assert_equal "$(status_of)" stopped
}

@test "delete of a running container fails without --force" {
	make_waiting_container
	moat_create
	moat start "$CID"
	wait_for_output '^started$'
	run_moat delete "$CID"
	assert_moat_error
	assert_equal "$(status_of)" running
	process_alive "$(host_pid)"
}

@test "delete --force of a running container kills it and removes it" {
	make_waiting_container
	moat_create
	moat start "$CID"
	wait_for_output '^started$'
	pid=$(host_pid)
	run moat delete --force "$CID"
	assert_success
	retry process_gone "$pid"
	run_moat state "$CID"
	assert_moat_error
	assert_no_residue "$CID"
}

@test "delete -f is the short form of --force" {
	make_waiting_container
	moat_create
	moat start "$CID"
	wait_for_output '^started$'
	run moat delete -f "$CID"
	assert_success
	assert_no_residue "$CID"
}

@test "delete of a stopped container removes everything" {
	make_waiting_container
	moat_create
	moat start "$CID"
	release_waiting
	wait_for_status stopped
	run moat delete "$CID"
	assert_success
	refute_output
	assert_no_residue "$CID"
}

# As runc and crun do, and as containerd's shim relies on (it deletes a
# created task without --force): a created container never ran the user's
# program, so delete kills its init and removes it. A running one needs
# --force.
@test "delete of a created container kills its process and removes it" {
	make_waiting_container
	moat_create
	pid=$(host_pid)
	run moat delete "$CID"
	assert_success
	retry process_gone "$pid"
	assert_no_residue "$CID"
	refute [ -s "$(out_file "$CID")" ]
}

@test "state of a deleted container fails" {
	make_bundle
	cfg_args true
	moat_create
	moat delete --force "$CID"
	run_moat state "$CID"
	assert_moat_error "$CID"
}

@test "state, start, kill and delete of an unknown container fail with one line" {
	for cmd in state start kill delete; do
		run_moat "$cmd" no-such-container
		assert_moat_error 'no-such-container'
	done
}

@test "run --detach returns with the container running" {
	make_waiting_container
	run moat_run_detached
	assert_success
	wait_for_output '^started$'
	assert_equal "$(status_of)" running
	process_alive "$(host_pid)"
	assert_equal "$(state_of | jq -r .pid)" "$(host_pid)"
	release_waiting
	wait_for_status stopped
}

@test "run -d is the short form of --detach" {
	make_bundle
	cfg_args sleep 1000
	run with_container_stdio moat run -d --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$CID"
	assert_success
	assert_equal "$(status_of)" running
}

@test "create -b is the short form of --bundle" {
	make_bundle
	cfg_args sleep 1000
	run with_container_stdio moat create -b "$BUNDLE" --pid-file "$(pid_file "$CID")" "$CID"
	assert_success
	assert_equal "$(status_of)" created
}

@test "create without --bundle uses the current directory" {
	make_bundle
	cfg_args sleep 1000
	cd "$BUNDLE"
	run with_container_stdio moat create --pid-file "$(pid_file "$CID")" "$CID"
	assert_success
	assert_equal "$(state_of | jq -r .bundle)" "$BUNDLE"
}

@test "bundle given as a relative path is reported absolute" {
	make_bundle
	cfg_args sleep 1000
	cd "$TEST_DIR"
	run with_container_stdio moat create --bundle bundle --pid-file "$(pid_file "$CID")" "$CID"
	assert_success
	assert_equal "$(state_of | jq -r .bundle)" "$BUNDLE"
}

@test "a container started and deleted can be created again under the same id" {
	make_bundle
	cfg_args true
	moat_create
	moat start "$CID"
	wait_for_status stopped
	moat delete "$CID"
	run moat_create
	assert_success
	assert_equal "$(status_of)" created
}

# Issue 14: the init reopened the exec fifo through the container's /proc, so a config that
# mounts no /proc could not start ("open exec fifo: No such file or directory").
@test "a container whose config mounts no /proc starts, runs and stops" {
	make_bundle
	cfg_set '.mounts |= map(select(.destination != "/proc"))'
	cfg_args ls /proc
	moat_create
	moat start "$CID"
	wait_for_status stopped
	# the program ran, in a root whose /proc is the image's empty directory
	assert_equal "$(cat "$(out_file)")" ""
	run cat "$(err_file)"
	refute_output --partial 'exec fifo'
	moat delete "$CID"
	run_sh 'echo ran without /proc'
	assert_success
	assert_output 'ran without /proc'
}
