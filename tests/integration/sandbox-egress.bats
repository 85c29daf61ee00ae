#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# moat sandbox --allow: no route out but moat's egress proxy, which lets through the names
# and ports listed and logs every attempt. The upstreams are servers this file starts on
# the host's loopback; names reach them through --resolve, never DNS.
# shellcheck disable=SC2016,SC2154 # $ meant literally (sh -c); bats sets status, output

load helpers
load sandbox

setup() {
	moat_setup
	N=e-$BATS_TEST_NUMBER
	egress_upstream
}

teardown() {
	sbx_remove_all
	egress_upstream_stop
	moat_teardown
	assert_no_residue 10
}

@test "egress: without --allow, no proxy, no resolver, no route: nothing leaves" {
	sandbox_run -- sh -c 'env | grep -ci proxy; wget -q -O - http://127.0.0.1:'"$PORT"'/ ||
		echo wget failed; nslookup example.com >/dev/null 2>&1; echo dns=$?; ip -o link | cut -d: -f2'
	assert_equal "$(r .network.egress)" none
	assert_equal "$(r '.network.connections | length')" 0
	assert_equal "$(r .stdout.text)" $'0\nwget failed\ndns=1\n lo'
}

@test "egress: an allowed name is reached through the proxy; the result and the log say so" {
	sandbox_run "${EGRESS[@]}" -- sh -c 'echo $HTTP_PROXY $https_proxy $NO_PROXY;
		wget -q -O - http://up.test:'"$PORT"'/index.html'
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text)" "http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1"$'\nhello-upstream'
	assert_equal "$(r .network.egress)" proxy
	assert_equal "$(r .network.allow[0])" "up.test:$PORT+loopback"
	assert_equal "$(conn 0 .host)" up.test
	assert_equal "$(conn 0 .port)" "$PORT"
	assert_equal "$(conn 0 .address)" 127.0.0.1
	assert_equal "$(conn 0 .allowed)" true
	assert_equal "$(conn 0 .rule)" "up.test:$PORT+loopback"
	(($(conn 0 .bytes_in) > 15))
	assert_equal "$(r .network.refused)" 0
	# the upstream saw a request in origin form, for the name the sandbox asked for
	grep -q '"GET /index.html HTTP/1.1" 200' "$TEST_DIR/http.log"
}

@test "egress: CONNECT tunnels any TCP to an allowed name; the byte counts add up" {
	sandbox_run "${EGRESS[@]}" -- sh -c 'printf "CONNECT up.test:'"$PORT"' HTTP/1.1\r\n\r\nGET /big HTTP/1.0\r\n\r\n" |
		nc 127.0.0.1 3128 | wc -c'
	assert_equal "$status" 0
	(($(r .stdout.text) > 300000))
	assert_equal "$(conn 0 .allowed)" true
	(($(conn 0 .bytes_in) > 300000))
}

@test "egress: a name not listed, an address, another port, a private address: each refused with its rule" {
	sandbox_run --allow "up.test:$PORT" --allow "meta.test:$PORT" --resolve meta.test=169.254.169.254 \
		--allow "*.wild.test:$PORT+loopback" --resolve a.wild.test=127.0.0.1 --resolve up.test=127.0.0.1 -- sh -c '
		for url in http://other.test:'"$PORT"'/ http://127.0.0.1:'"$PORT"'/ http://up.test:1/ \
			http://up.test:'"$PORT"'/ http://meta.test:'"$PORT"'/ http://wild.test:'"$PORT"'/ \
			http://a.wild.test:'"$PORT"'/index.html; do
			wget -q -O - "$url" 2>/dev/null || echo refused
		done'
	assert_equal "$(r .stdout.text)" $'refused\nrefused\nrefused\nrefused\nrefused\nrefused\nhello-upstream'
	assert_equal "$(r .network.refused)" 6
	assert_equal "$(r '[.network.connections[].refused] | join(",")')" \
		"not-allowed,ip-literal,port,address-class,address-class,not-allowed,"
	# up.test resolved to loopback without +loopback; meta.test to the metadata address
	assert_equal "$(conn 3 .address)" 127.0.0.1
	assert_equal "$(conn 4 .address)" 169.254.169.254
}

@test "egress: a raw connection, a UDP packet to port 53 and a lookup all fail inside" {
	egress_check_no_way_around
}

@test "egress: a session's proxy killed mid-transfer ends that connection, not the session; the next command has one again" {
	egress_check_proxy_killed "$N"
}

@test "egress: bad rules are one-line errors naming --allow" {
	sandbox_run --allow 'bad host' -- true
	assert_equal "$status" 1
	[[ $stderr == *"--allow 'bad host'"* ]]
	sandbox_run --allow 'up.test:99999' -- true
	assert_equal "$status" 1
	sandbox_run --allow 'up.test+public' -- true
	assert_equal "$status" 1
	[[ $stderr == *"+public"* ]]
	sandbox_run --resolve 'up.test' -- true
	assert_equal "$status" 1
	[[ $stderr == *"--resolve 'up.test'"* ]]
}

@test "egress: --proxy-header puts a credential into requests to its host, which the sandbox never sees" {
	local port=$((PORT + 1))
	python3 "$BATS_TEST_DIRNAME/progs/echo-headers.py" "$port" >/dev/null 2>&1 3>&- &
	echo $! >"$TEST_DIR/echo.pid"
	retry bash -c "exec 9<>/dev/tcp/127.0.0.1/$port" 2>/dev/null
	sandbox_run --allow "echo.test:$port+loopback" --resolve echo.test=127.0.0.1 \
		--proxy-header 'echo.test=Authorization: Bearer s3cret' -- \
		sh -c 'env | grep -c s3cret; wget -q -O - --header "Authorization: mine" http://echo.test:'"$port"'/x'
	kill "$(cat "$TEST_DIR/echo.pid")"
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text | head -1)" 0
	assert_equal "$(r .stdout.text | grep -c '^Authorization: ')" 1
	r .stdout.text | grep -qx 'Authorization: Bearer s3cret'
	r .stdout.text | grep -qx 'GET /x HTTP/1.1'
	r .stdout.text | grep -qx "Host: echo.test:$port"
	r .stdout.text | grep -qx 'Connection: close'
	sandbox_run --proxy-header 'echo.test' -- true
	assert_equal "$status" 1
	[[ $stderr == *"--proxy-header 'echo.test'"* ]]
}

@test "egress: Python's urllib inside reaches an allowed name over HTTP and over TLS through CONNECT" {
	egress_check_python
}

@test "egress: a container's moat.egress.allow annotation: its proxy, its log in the state, gone with it" {
	make_bundle
	cfg_set '.annotations["moat.egress.allow"] = $a | .annotations["moat.egress.resolve"] = "up.test=127.0.0.1"' \
		--arg a "up.test:$PORT+loopback"
	cfg_set '.hooks.poststop = [{path: "/bin/cp", args: ["cp", $log, $keep]}]' \
		--arg log "$MOAT_ROOT/$CID/egress.log" --arg keep "$TEST_DIR/egress.log"
	run_sh 'wget -q -O - http://up.test:'"$PORT"'/index.html; wget -q -O - http://no.test:'"$PORT"'/ || echo refused'
	assert_success
	assert_equal "$output" $'hello-upstream\nrefused'
	# the log, kept by a poststop hook before delete took the state away
	assert_equal "$(jq -s -c 'map([.host, .allowed, .refused])' "$TEST_DIR/egress.log")" \
		'[["up.test",true,null],["no.test",false,"not-allowed"]]'
	retry bash -c '! pgrep -u nobody -f "moat.*'"$CID"'" >/dev/null'
	# a container joining a network namespace made elsewhere (as an engine's network is):
	# refused, nothing left
	unshare --net sleep 60 3>&- &
	local other=$!
	retry bash -c "[[ \$(readlink /proc/$other/ns/net) != \$(readlink /proc/self/ns/net) ]]"
	cfg_set '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' \
		--arg p "/proc/$other/ns/net"
	run_sh true
	kill "$other"
	assert_failure
	[[ $stderr == *"annotation moat.egress.allow: the container needs a network namespace of its own"* ]]
	[[ ! -e $MOAT_ROOT/$CID ]]
}

@test "egress: at most 32 connections at once; the next is refused with its reason, and later ones pass" {
	sandbox_run "${EGRESS[@]}" -- sh -c '
		mkfifo hold
		exec 3<>hold
		pids=
		for i in $(seq 32); do
			nc 127.0.0.1 3128 <hold >/dev/null &
			pids="$pids $!"
		done
		sleep 2
		wget -q -O - http://up.test:'"$PORT"'/index.html 2>&1 | head -1
		kill $pids
		sleep 1
		wget -q -O - http://up.test:'"$PORT"'/index.html'
	assert_equal "$status" 0
	[[ $(r .stdout.text) == *"503"*$'\nhello-upstream' ]] || fail "stdout: $(r .stdout.text)"
	assert_equal "$(r '[.network.connections[] | select(.refused == "too-many-connections")] | length')" 1
	# the 32 that connected and said nothing are no attempts
	assert_equal "$(r '.network.connections | length')" 2
	assert_equal "$(r .network.refused)" 1
}
