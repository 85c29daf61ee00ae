#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Every parser of what moat reads, under libFuzzer for a bounded time (clang's
# -fsanitize=fuzzer,address,undefined; `make fuzz`, tests/fuzz/): what an untrusted side
# sends (the egress proxy's requests, the host/guest protocol), a bundle's config.json through
# everything create checks, a seccomp profile compiled to BPF, the policy file, a mount's
# options, state.json and linux.cgroupsPath. Each runs 10 s from a copy of its corpus in
# tests/fuzz/corpus/<name>/ (`make fuzz-long` runs them for longer).

load helpers

setup_file() {
	command -v clang >/dev/null || skip "clang is not installed (.ci/run installs it)"
	ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	[[ -f $ROOT/Makefile ]] || skip "not a configured build tree: $ROOT"
	# built once for every test (make check has built them already: then this does nothing)
	make -s -j2 -C "$ROOT" fuzz >"$BATS_FILE_TMPDIR/build.log" 2>&1 ||
		echo "make fuzz failed: $(tail -5 "$BATS_FILE_TMPDIR/build.log")" >"$BATS_FILE_TMPDIR/build-failed"
}

setup() {
	command -v clang >/dev/null || skip "clang is not installed (.ci/run installs it)"
	ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	[[ -f $ROOT/Makefile ]] || skip "not a configured build tree: $ROOT"
	[[ ! -e $BATS_FILE_TMPDIR/build-failed ]] || fail "$(cat "$BATS_FILE_TMPDIR/build-failed")"
	moat_setup
}

teardown() {
	moat_teardown
}

# fuzz NAME: run tests/fuzz/fuzz-NAME for 10 s from a copy of its corpus; the files it
# writes go under the test's directory too
fuzz() {
	local name=$1 corpus=$TEST_DIR/corpus-$1
	cp -r "$ROOT/tests/fuzz/corpus/$name" "$corpus"
	mkdir -p "$TEST_DIR/tmp"
	run env TMPDIR="$TEST_DIR/tmp" "$ROOT/tests/fuzz/fuzz-$name" -max_total_time=10 \
		-rss_limit_mb=2048 -artifact_prefix="$TEST_DIR/" "$corpus"
	[[ $status == 0 ]] || fail "fuzz-$name found a crash: $(grep -a -m3 'ERROR\|SUMMARY\|Test unit written' <<<"$output")"
	[[ $output == *"Done "*" runs in "* ]] || fail "fuzz-$name did not run: $(tail -3 <<<"$output")"
}

@test "fuzz: the egress proxy's request parser, 10 s, no crash" {
	fuzz egress
}

@test "fuzz: the host/guest protocol decoder, 10 s, no crash" {
	fuzz proto
}

@test "fuzz: config.json through every check of create, 10 s, no crash" {
	fuzz config
}

@test "fuzz: the seccomp compiler, profile to BPF, 10 s, no crash" {
	fuzz seccomp
}

@test "fuzz: the policy file's parser, 10 s, no crash" {
	fuzz policy
}

@test "fuzz: a mount's options, 10 s, no crash" {
	fuzz mount-options
}

@test "fuzz: state.json, 10 s, no crash" {
	fuzz state
}

@test "fuzz: the cgroup path mapper (and systemd's slice:prefix:name), 10 s, no crash" {
	fuzz cgroup-path
}
