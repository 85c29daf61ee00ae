#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by the sandbox tests (sandbox*.bats): running `moat sandbox`, checking its result
# against the schema, and checking that a sandbox left nothing behind.
# shellcheck disable=SC2154 # bats sets status, output

SANDBOX_ROOT=/run/moat-sandbox

# sandbox_run ARGS...: `moat sandbox run --rootfs $ROOTFS_CACHE ARGS...`, the result in
# $TEST_DIR/result.json (and $RESULT), the exit status in $status, stderr in $stderr.
sandbox_run() {
	RESULT=$TEST_DIR/result.json
	rm -f "$RESULT"
	run --separate-stderr timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" sandbox run \
		--rootfs "$ROOTFS_CACHE" ${SANDBOX_ARGS:-} --result "$RESULT" "$@"
	if [[ -s $RESULT ]]; then
		validate_result "$RESULT"
	fi
}

# validate_result FILE: the document is valid against docs/sandbox-result.schema.json.
validate_result() {
	local validator=$BATS_TEST_DIRNAME/validate-result.py
	if [[ -x $validator || -f $validator ]]; then
		python3 "$validator" "$1" || fail "the result does not match the schema: $(cat "$1")"
	else
		jq -e '.schema == "moat.sandbox.result/v1"' "$1" >/dev/null ||
			fail "not a moat.sandbox.result/v1 document: $(cat "$1")"
	fi
}

# r JQ: a member of the result
r() {
	jq -r "$1" "$RESULT"
}

# sandbox_residue: what a sandbox of this uid left: state, containers' state, cgroups,
# loans, keepers (one line each; nothing when clean).
sandbox_residue() {
	local d
	# .runtime/.seccomp-cache is the compiled profiles' cache, kept on purpose
	for d in "$SANDBOX_ROOT/$EUID" "$SANDBOX_ROOT/.runtime"; do
		[[ -d $d ]] && find "$d" -mindepth 1 -maxdepth 1 ! -name .seccomp-cache -printf 'state: %p\n'
	done
	find /sys/fs/cgroup -maxdepth 4 -type d -name "$EUID-*" -path '*/moat/*' \
		-printf 'cgroup: %p\n' 2>/dev/null
	grep -l "^$SANDBOX_ROOT/" /run/moat-userns/* 2>/dev/null | sed 's/^/loan: /'
	pgrep -f 'moat-sandbox-[i]nit|/\.moat/[i]nit' | sed 's/^/init process: /'
	grep -F "$SANDBOX_ROOT" /proc/self/mountinfo | sed 's/^/mount: /'
	return 0
}

# assert_no_residue [SECONDS]: nothing is left, within SECONDS (default 5).
assert_no_residue() {
	local tries=$((${1:-5} * 10)) left
	while :; do
		left=$(sandbox_residue)
		[[ -z $left ]] && return 0
		if ((tries-- <= 0)); then
			fail "left behind: $left"
			return 1
		fi
		sleep 0.1
	done
}
