#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# moat sandbox --allow in a microVM (TCG): the guest has no network device; the agent's
# tunnel carries each connection to 127.0.0.1:3128 over the moat.egress port to the same
# host-side proxy as in container mode. The upstreams are servers this file starts on the
# host's loopback; names reach them through --resolve, never DNS.
# shellcheck disable=SC2016,SC2154 # $ meant literally (sh -c); bats sets status, output

load helpers
load sandbox

setup_file() {
	microvm_setup_file
}

setup() {
	microvm_setup
	SANDBOX_ARGS=(--isolation microvm --accel tcg)
	N=ev-$BATS_TEST_NUMBER
	egress_upstream
}

teardown() {
	sbx_remove_all
	egress_upstream_stop
	moat_teardown
	assert_no_residue 10
}

@test "egress microvm: an allowed name is reached through the tunnel; what is not allowed is refused with its rule" {
	sandbox_run "${EGRESS[@]}" --allow "meta.test:$PORT" --resolve meta.test=169.254.169.254 \
		--allow "near.test:$PORT" --resolve near.test=127.0.0.1 -- sh -c '
		echo $HTTP_PROXY
		for url in http://up.test:'"$PORT"'/index.html http://other.test:'"$PORT"'/ \
			http://127.0.0.1:'"$PORT"'/ http://up.test:1/ http://meta.test:'"$PORT"'/ \
			http://near.test:'"$PORT"'/; do
			wget -q -O - "$url" 2>/dev/null || echo refused
		done'
	assert_equal "$status" 0
	assert_equal "$(r .isolation.mode)" microvm
	assert_equal "$(r .stdout.text)" \
		$'http://127.0.0.1:3128\nhello-upstream\nrefused\nrefused\nrefused\nrefused\nrefused'
	assert_equal "$(r .network.egress)" proxy
	assert_equal "$(conn 0 .host)" up.test
	assert_equal "$(conn 0 .address)" 127.0.0.1
	assert_equal "$(conn 0 .allowed)" true
	assert_equal "$(conn 0 .rule)" "up.test:$PORT+loopback"
	assert_equal "$(r '[.network.connections[].refused] | join(",")')" \
		",not-allowed,ip-literal,port,address-class,address-class"
	assert_equal "$(conn 4 .address)" 169.254.169.254
	assert_equal "$(r .network.refused)" 5
	grep -q '"GET /index.html HTTP/1.1" 200' "$TEST_DIR/http.log"
}

@test "egress microvm: CONNECT carries more than the tunnel's window both ways; the byte counts add up" {
	local sink=$((PORT + 3))
	# an upstream that counts what each connection sends until end of file, then answers
	# with the count
	python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4)
while True:
    c, _ = s.accept(); n = 0
    while (b := c.recv(65536)):
        n += len(b)
    c.sendall(b"got %d\n" % n); c.close()' "$sink" 3>&- &
	echo $! >"$TEST_DIR/sink.pid"
	retry bash -c "exec 9<>/dev/tcp/127.0.0.1/$sink" 2>/dev/null
	# 300 kB down and 400 kB up: each more than the 256 KiB a connection may have
	# unacknowledged in the tunnel; the upload half-closes, and the answer comes back after
	sandbox_run "${EGRESS[@]}" --allow "sink.test:$sink+loopback" --resolve sink.test=127.0.0.1 -- sh -c '
		printf "CONNECT up.test:'"$PORT"' HTTP/1.1\r\n\r\nGET /big HTTP/1.0\r\n\r\n" |
			nc 127.0.0.1 3128 | wc -c
		{ printf "CONNECT sink.test:'"$sink"' HTTP/1.1\r\n\r\n"; head -c 400000 /dev/zero; } |
			nc 127.0.0.1 3128 | tail -1'
	kill "$(cat "$TEST_DIR/sink.pid")" 2>/dev/null || true
	assert_equal "$status" 0
	(($(r .stdout.text | head -1) > 300000)) || fail "stdout: $(r .stdout.text)"
	assert_equal "$(r .stdout.text | sed -n 2p)" "got 400000"
	(($(conn 0 .bytes_in) > 300000))
	assert_equal "$(conn 1 .bytes_out)" 400000
}

@test "egress microvm: a raw connection, a UDP packet to port 53 and a lookup all fail; the guest has only lo" {
	egress_check_no_way_around
}

@test "egress microvm: Python's urllib reaches an allowed name over HTTP and over TLS through CONNECT" {
	egress_check_python
	assert_equal "$(r .isolation.mode)" microvm
}

@test "egress microvm: a session's proxy killed mid-transfer ends that connection, not the session; rm leaves nothing" {
	egress_check_proxy_killed "$N"
}
