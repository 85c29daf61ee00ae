#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The result schema of moat sandbox (docs/sandbox-result.schema.json), tested through
# validate-result.py on the documents in fixtures/sandbox-results: every valid-*.json
# passes, and every invalid-* fails with a line that names the member at fault. This
# tests the schema itself: it needs no moat binary and no root, only Debian's python3
# with python3-jsonschema (the validator runs as /usr/bin/python3, so a python3 of
# another installation earlier on PATH does not change the outcome).

bats_require_minimum_version 1.5.0

load /usr/lib/bats/bats-support/load
load /usr/lib/bats/bats-assert/load

setup() {
	FIXTURES=$BATS_TEST_DIRNAME/fixtures/sandbox-results
	VALIDATE=$BATS_TEST_DIRNAME/validate-result.py
}

validate() {
	run /usr/bin/python3 "$VALIDATE" "$@"
}

# rejects FILE PATH: the validator fails on fixture FILE with a line naming PATH.
rejects() {
	validate "$FIXTURES/$1"
	assert_failure 1
	assert_line --partial "$FIXTURES/$1: $2: "
}

@test "sandbox-schema: every valid fixture passes" {
	local files=("$FIXTURES"/valid-*.json)
	((${#files[@]} >= 4))
	validate "${files[@]}"
	assert_success
	assert_output ''
}

@test "sandbox-schema: the example in docs/sandbox.md passes" {
	local doc=$BATS_TEST_DIRNAME/../../docs/sandbox.md
	awk '/^```json$/ { inside = 1; next } /^```$/ { inside = 0 } inside' "$doc" >"$BATS_TEST_TMPDIR/example.json"
	[[ -s $BATS_TEST_TMPDIR/example.json ]]
	validate "$BATS_TEST_TMPDIR/example.json"
	assert_success
	assert_output ''
}

@test "sandbox-schema: a document on standard input" {
	run /usr/bin/python3 "$VALIDATE" <"$FIXTURES/valid-microvm-timeout.json"
	assert_success
	assert_output ''
	run /usr/bin/python3 "$VALIDATE" <"$FIXTURES/invalid-missing-files.json"
	assert_failure 1
	assert_output '<stdin>: $: missing member "files"'
}

@test "sandbox-schema: several files, one line per failure, only for the bad ones" {
	validate "$FIXTURES/valid-container-exited.json" "$FIXTURES/invalid-exited-with-signal.json" \
		"$FIXTURES/invalid-exit-reason.json" "$BATS_TEST_TMPDIR/no-such-file.json"
	assert_failure 1
	assert_equal "${#lines[@]}" 4
	assert_line --partial "invalid-exited-with-signal.json: \$.exit.code: "
	assert_line --partial "invalid-exited-with-signal.json: \$.exit.signal: "
	assert_line --partial "invalid-exit-reason.json: \$.exit.reason: "
	assert_line "$BATS_TEST_TMPDIR/no-such-file.json: \$: cannot read: No such file or directory"
	refute_line --partial valid-container-exited.json
}

@test "sandbox-schema: a broken schema is exit status 2, not a verdict" {
	printf '{"type": 5}\n' >"$BATS_TEST_TMPDIR/schema.json"
	validate --schema "$BATS_TEST_TMPDIR/schema.json" "$FIXTURES/valid-container-exited.json"
	assert_failure 2
	assert_output --partial 'bad schema'
}

@test "sandbox-schema: every invalid fixture has a test below" {
	local f name missing=()
	for f in "$FIXTURES"/invalid-*; do
		name=${f##*/}
		grep -qF "rejects $name " "$BATS_TEST_FILENAME" || missing+=("$name")
	done
	assert_equal "${missing[*]}" ''
}

@test "sandbox-schema: not JSON" { rejects invalid-not-json.txt '$'; }
@test "sandbox-schema: a member name twice" { rejects invalid-duplicate-member.json '$'; }
@test "sandbox-schema: another schema version" { rejects invalid-schema-version.json '$.schema'; }
@test "sandbox-schema: a top-level member missing" { rejects invalid-missing-files.json '$'; }
@test "sandbox-schema: an unknown top-level member" { rejects invalid-extra-member.json '$'; }
@test "sandbox-schema: an empty command" { rejects invalid-command-empty.json '$.command'; }
@test "sandbox-schema: a command word that is not a string" { rejects invalid-command-not-string.json '$.command[1]'; }
@test "sandbox-schema: exit code above 255" { rejects invalid-exit-code-range.json '$.exit.code'; }
@test "sandbox-schema: signal 0" { rejects invalid-exit-signal-zero.json '$.exit.signal'; }
@test "sandbox-schema: an unknown exit reason" { rejects invalid-exit-reason.json '$.exit.reason'; }
@test "sandbox-schema: reason error without a message" { rejects invalid-error-without-message.json '$.exit'; }
@test "sandbox-schema: reason exited with a signal and no code" { rejects invalid-exited-with-signal.json '$.exit.signal'; }
@test "sandbox-schema: a container with an accelerator" { rejects invalid-container-accelerator.json '$.isolation.accelerator'; }
@test "sandbox-schema: a container with a guest kernel" { rejects invalid-container-guest-kernel.json '$.isolation.guest_kernel'; }
@test "sandbox-schema: a microVM without an accelerator" { rejects invalid-microvm-no-accelerator.json '$.isolation'; }
@test "sandbox-schema: a policy value that is not a string" { rejects invalid-policy-not-string.json '$.isolation.policy["default-seccomp"]'; }
@test "sandbox-schema: a time that is not RFC 3339" { rejects invalid-time-not-rfc3339.json '$.time.created'; }
@test "sandbox-schema: a negative duration" { rejects invalid-time-negative.json '$.time.setup_ms'; }
@test "sandbox-schema: started missing (null is how to say never)" { rejects invalid-time-no-started.json '$.time'; }
@test "sandbox-schema: negative CPU time" { rejects invalid-resources-negative.json '$.resources.cpu_system_ms'; }
@test "sandbox-schema: a fraction of a byte" { rejects invalid-resources-fraction.json '$.resources.memory_peak_bytes'; }
@test "sandbox-schema: a stream with text and base64" { rejects invalid-stream-two-bodies.json '$.stdout'; }
@test "sandbox-schema: a stream with no body" { rejects invalid-stream-no-body.json '$.stderr'; }
@test "sandbox-schema: base64 without its padding" { rejects invalid-stream-bad-base64.json '$.stderr.base64'; }
@test "sandbox-schema: an unknown stream member" { rejects invalid-stream-extra-member.json '$.stdout'; }
@test "sandbox-schema: files.truncated missing" { rejects invalid-files-no-truncated.json '$.files'; }
@test "sandbox-schema: a relative path in the diff" { rejects invalid-entry-relative-path.json '$.files.entries[0].path'; }
@test "sandbox-schema: an unknown change" { rejects invalid-entry-change.json '$.files.entries[3].change'; }
@test "sandbox-schema: a mode of three digits" { rejects invalid-entry-mode-digits.json '$.files.entries[0].mode'; }
@test "sandbox-schema: a deleted entry with a mode" { rejects invalid-entry-deleted-mode.json '$.files.entries[4].mode'; }
@test "sandbox-schema: a directory with a size" { rejects invalid-entry-dir-size.json '$.files.entries[1].size'; }
@test "sandbox-schema: a file without a size" { rejects invalid-entry-file-no-size.json '$.files.entries[3]'; }
@test "sandbox-schema: upper-case sha256" { rejects invalid-entry-sha256-case.json '$.files.entries[0].sha256'; }
@test "sandbox-schema: a symlink without a target" { rejects invalid-entry-symlink-no-target.json '$.files.entries[2]'; }
@test "sandbox-schema: a file with a target" { rejects invalid-entry-target-on-file.json '$.files.entries[0].target'; }
@test "sandbox-schema: an allowed connection with a refusal" { rejects invalid-egress-allowed-refused.json '$.network.connections[0].refused'; }
@test "sandbox-schema: an egress mode that is not none or proxy" { rejects invalid-egress-mode.json '$.network.egress'; }
