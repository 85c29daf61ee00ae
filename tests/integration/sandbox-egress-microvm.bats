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

conn() {
	r ".network.connections[$1]$2"
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
	sandbox_run "${EGRESS[@]}" -- sh -c 'nc -w 2 127.0.0.1 '"$PORT"' </dev/null; echo tcp=$?;
		nc -w 2 up.test '"$PORT"' </dev/null 2>/dev/null; echo name=$?;
		echo x | nc -u -w 1 10.0.0.1 53 2>/dev/null; echo udp=$?;
		nslookup up.test >/dev/null 2>&1; echo dns=$?;
		ls /sys/class/net'
	assert_equal "$(r .stdout.text)" $'tcp=1\nname=1\nudp=1\ndns=1\nlo'
	assert_equal "$(r '.network.connections | length')" 0
}

@test "egress microvm: Python's urllib reaches an allowed name over HTTP and over TLS through CONNECT" {
	egress_tls_upstream
	run --separate-stderr timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" sandbox run --rootfs "$PY_ROOT" \
		"${SANDBOX_ARGS[@]}" --result "$TEST_DIR/result.json" "${EGRESS[@]}" \
		--allow "tls.test:$TLS_PORT+loopback" --resolve tls.test=127.0.0.1 \
		--copy-in "$TEST_DIR/get.py:get.py" --copy-in "$TEST_DIR/tls/cert.pem:cert.pem" -- \
		python3 get.py "http://up.test:$PORT/index.html" "https://tls.test:$TLS_PORT/secure"
	RESULT=$TEST_DIR/result.json
	validate_result "$RESULT"
	assert_equal "$(r .isolation.mode)" microvm
	assert_equal "$(r .stderr.text)" ""
	assert_equal "$(r .stdout.text)" $'200 hello-upstream\n200 GET /secure HTTP/1.1'
	assert_equal "$(r '[.network.connections[] | "\(.host):\(.port) \(.allowed)"] | join(",")')" \
		"up.test:$PORT true,tls.test:$TLS_PORT true"
}

@test "egress microvm: a session's proxy killed mid-transfer ends that connection, not the session; rm leaves nothing" {
	local keeper proxy
	sbx_create "$N" "${EGRESS[@]}"
	keeper=$(sbx_info "$N" | jq -r .keeper_pid)
	proxy=$(pgrep -P "$keeper" -u nobody | head -1)
	[[ -n $proxy ]] || fail "no proxy process under the keeper $keeper"
	# (in /tmp: the 9p share makes no FIFO)
	sbx_exec_bg "$N" -- sh -c 'cd /tmp; mkfifo f; nc 127.0.0.1 3128 <f >/dev/null & n=$!; exec 3>f;
		printf "CONNECT up.test:'"$PORT"' HTTP/1.1\r\n\r\n" >&3; wait $n; echo ended'
	retry bash -c "pgrep -P $proxy >/dev/null"
	kill -KILL "$proxy"
	retry bash -c "! kill -0 $(cat "$TEST_DIR/bg.pid") 2>/dev/null"
	RESULT=$TEST_DIR/bg.json
	assert_equal "$(r .stdout.text)" ended
	assert_equal "$(r .exit.reason)" exited
	# the keeper started a proxy again before the next command, and the tunnel still runs
	sbx_exec "$N" -- wget -q -O - "http://up.test:$PORT/index.html"
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text)" hello-upstream
	assert_equal "$(r .isolation.mode)" microvm
	sbx_ok rm "$N"
	retry bash -c "! pgrep -u nobody -f 'sandbox create' >/dev/null"
}
