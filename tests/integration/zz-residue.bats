#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs last (files run in name order): after the whole suite, nothing the
# tests created remains on the host.

load helpers

@test "no cgroup made by the tests remains on any hierarchy" {
	local left
	left=$(find /sys/fs/cgroup -maxdepth 4 -type d \
		\( -name 'moat-test-*' -o -name 'moat-test' -o -name 'moat-unit-*' \) 2>/dev/null)
	[[ -z $left ]] || fail "cgroups left behind: $left"
}

@test "no test state root, bundle or mount remains" {
	local left
	left=$(find "${TMPDIR:-/tmp}" -maxdepth 1 \( -name 'moat-test.*' -o -name 'moat-root.*' \
		-o -name 'moat-engine.*' \) 2>/dev/null)
	# this test's own directories exist while it runs
	left=$(grep -vxF -e "$TEST_DIR" -e "$MOAT_ROOT" <<<"$left" || true)
	[[ -z $left ]] || fail "temporary directories left behind: $left"
	run grep -F " ${TMPDIR:-/tmp}/moat-" /proc/self/mountinfo
	assert_output ''
}

@test "no process of a test container remains" {
	local left
	left=$(pgrep -f 'moat-test-[0-9]+-[0-9]+' || true)
	left=$(grep -vx -e "$$" -e "$BASHPID" <<<"$left" || true)
	[[ -z $left ]] || fail "processes left behind: $(ps -o pid,args -p "${left//$'\n'/,}")"
}

@test "no auto-userns loan names a test's state directory" {
	local left
	left=$(grep -lE "^${TMPDIR:-/tmp}/moat-(root|test)\." /run/moat-userns/* 2>/dev/null || true)
	left=$(grep -v -e "$MOAT_ROOT" <<<"$left" || true)
	[[ -z $left ]] || fail "loans left behind: $left"
}

@test "no engine the engine tests started remains, nor its shims or conmon" {
	local left
	left=$(pgrep -f "${TMPDIR:-/tmp}/moat-engine\." || true)
	left=$(grep -vx -e "$$" -e "$BASHPID" <<<"$left" || true)
	[[ -z $left ]] || fail "processes left behind: $(ps -o pid,args -p "${left//$'\n'/,}")"
}

@test "no sandbox, sandbox container, keeper or idle init remains" {
	load sandbox
	assert_no_residue 5
}
