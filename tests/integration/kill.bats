#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# `moat kill [--all] ID [SIGNAL]`: default SIGTERM, signal names with or
# without SIG, numbers, and --all for every process of the container.

load helpers

# A container whose pid 1 reports each signal it catches on stdout and exits
# on SIGTERM. `sleep & wait` lets a trap run as soon as the signal arrives.
make_signal_container() {
	make_bundle
	add_script sigreport <<-'EOF'
		#!/bin/sh
		for s in HUP INT USR1 USR2; do
			trap "echo got-$s" "$s"
		done
		trap 'echo got-TERM; exit 0' TERM
		echo ready
		while :; do sleep 1 & wait $!; done
	EOF
	cfg_args /bin/sigreport
}

start_signal_container() {
	make_signal_container
	moat_create
	moat start "$CID"
	wait_for_output '^ready$'
}

@test "kill without a signal sends SIGTERM" {
	start_signal_container
	run_moat kill "$CID"
	assert_success
	wait_for_output '^got-TERM$'
	wait_for_status stopped
}

@test "kill accepts a signal name with the SIG prefix" {
	start_signal_container
	run_moat kill "$CID" SIGUSR1
	assert_success
	wait_for_output '^got-USR1$'
	assert_equal "$(status_of)" running
}

@test "kill accepts a signal name without the SIG prefix" {
	start_signal_container
	run_moat kill "$CID" USR2
	assert_success
	wait_for_output '^got-USR2$'
	assert_equal "$(status_of)" running
}

@test "kill accepts a signal number" {
	start_signal_container
	run_moat kill "$CID" 1
	assert_success
	wait_for_output '^got-HUP$'
	run_moat kill "$CID" 10
	assert_success
	wait_for_output '^got-USR1$'
	run_moat kill "$CID" 15
	assert_success
	wait_for_output '^got-TERM$'
	wait_for_status stopped
}

@test "kill SIGKILL stops a container whose pid 1 handles nothing" {
	make_bundle
	cfg_args sleep 100000
	moat_create
	moat start "$CID"
	pid=$(host_pid)
	run_moat kill "$CID" SIGKILL
	assert_success
	wait_for_status stopped
	retry process_gone "$pid"
}

@test "kill of a created container stops it before its process ever runs" {
	make_bundle
	cfg_sh 'echo must-not-run'
	moat_create
	run_moat kill "$CID" KILL
	assert_success
	wait_for_status stopped
	run_moat start "$CID"
	assert_failure
	refute [ -s "$(out_file "$CID")" ]
}

@test "kill with an unknown signal name fails with one line and sends nothing" {
	start_signal_container
	run_moat kill "$CID" SIGNOPE
	assert_moat_error 'NOPE'
	run_moat kill "$CID" NOPE
	assert_moat_error 'NOPE'
	assert_equal "$(status_of)" running
	refute grep -q '^got-' "$(out_file "$CID")"
}

@test "kill with an out-of-range signal number fails with one line" {
	start_signal_container
	for sig in 65 999 12abc; do
		run_moat kill "$CID" "$sig"
		assert_moat_error
	done
	assert_equal "$(status_of)" running
}

# start_parent_and_child: a running container whose init (/bin/parent)
# has a child (/bin/child); each reports the USR1/USR2 it receives.
start_parent_and_child() {
	make_bundle
	add_script child <<-'EOF'
		#!/bin/sh
		trap 'echo child-got-USR1' USR1
		trap 'echo child-got-USR2; exit 0' USR2
		echo child-ready
		while :; do sleep 1 & wait $!; done
	EOF
	add_script parent <<-'EOF'
		#!/bin/sh
		trap 'echo parent-got-USR1' USR1
		trap 'echo parent-got-USR2' USR2
		/bin/child &
		echo parent-ready
		while :; do sleep 1 & wait $!; done
	EOF
	cfg_args /bin/parent
	moat_create
	moat start "$CID"
	wait_for_output '^parent-ready$'
	wait_for_output '^child-ready$'
}

@test "kill --all signals every process in the container" {
	start_parent_and_child
	run_moat kill --all "$CID" USR1
	assert_success
	wait_for_output '^parent-got-USR1$'
	wait_for_output '^child-got-USR1$'
}

@test "kill without --all signals only the container's main process" {
	start_parent_and_child
	moat kill "$CID" USR1
	wait_for_output '^parent-got-USR1$'
	# USR2 to everyone: had the child received USR1, its USR1 trap (lower
	# signal number, sent earlier) would have printed before this one
	moat kill -a "$CID" USR2
	wait_for_output '^child-got-USR2$'
	refute grep -q '^child-got-USR1$' "$(out_file "$CID")"
}

@test "kill -a is the short form of --all" {
	make_bundle
	cfg_args sleep 100000
	moat_create
	moat start "$CID"
	run_moat kill -a "$CID" KILL
	assert_success
	wait_for_status stopped
}
