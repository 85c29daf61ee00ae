#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The parsers that read what an untrusted side sends, under libFuzzer for a bounded time
# (clang's -fsanitize=fuzzer,address,undefined): the egress proxy's request parser, which
# reads a sandbox's client, and the host/guest protocol decoder, which reads a guest.

load helpers

setup() {
	command -v clang >/dev/null || skip "clang is not installed (.ci/run installs it)"
	ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	[[ -f $ROOT/Makefile ]] || skip "not a configured build tree: $ROOT"
	moat_setup
}

teardown() {
	moat_teardown
}

# fuzz TARGET BINARY SEEDS...: build TARGET, run it for 30 s from the seeds
fuzz() {
	local target=$1 bin=$ROOT/$2 corpus=$TEST_DIR/corpus-$1 i=0
	shift 2
	make -s -C "$ROOT" "$target" >"$TEST_DIR/build.log" 2>&1 || fail "make $target: $(tail -5 "$TEST_DIR/build.log")"
	mkdir -p "$corpus"
	for seed in "$@"; do
		printf '%b' "$seed" >"$corpus/seed-$((i++))"
	done
	run "$bin" -max_total_time=30 -rss_limit_mb=1024 -artifact_prefix="$TEST_DIR/" "$corpus"
	[[ $status == 0 ]] || fail "$target found a crash: $(grep -a -m3 'ERROR\|SUMMARY\|Test unit written' <<<"$output")"
	[[ $output == *"Done "*" runs in "* ]] || fail "$target did not run: $(tail -3 <<<"$output")"
}

@test "fuzz: the egress proxy's request parser, 30 s, no crash" {
	fuzz fuzz-egress tests/fuzz/fuzz-egress \
		'CONNECT up.test:80 HTTP/1.1\r\n\r\n' \
		'CONNECT [::1]:8080 HTTP/1.1\r\nHost: x\r\n\r\nbody' \
		'GET http://up.test/a?b HTTP/1.1\r\nHost: y\r\nProxy-Connection: k\r\n\r\n' \
		'POST http://a.cdn.test:443/ HTTP/1.0\n\n' \
		'A B HTTP\n\n'
}

@test "fuzz: the host/guest protocol decoder, 30 s, no crash" {
	fuzz fuzz-proto tests/guest/fuzz-proto '\x00' '\x01'
}
