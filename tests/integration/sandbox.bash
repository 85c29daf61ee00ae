#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by the sandbox tests (sandbox*.bats): running `moat sandbox`, checking its result
# against the schema, and checking that a sandbox left nothing behind.
# shellcheck disable=SC2154 # bats sets status, output

SANDBOX_ROOT=/run/moat-sandbox
SANDBOX_ARGS=() # options every sandbox_run of a file adds (the microVM file's isolation)

# A fork bomb that reaches a --pids of 32 and is gone when its command ends, for a session's
# next command: each process forks two and exits, 12 generations at most (an unbounded one
# may churn at the limit for ever), and the command's shell then waits, forking nothing (a
# refused fork would end it), until its pid namespace holds no more processes than before.
# The shells' "can't fork" lines go to /dev/null, out of an output limit's way.
# shellcheck disable=SC2016,SC2034 # expanded by the sandbox's shell; used by the .bats files
BOUNDED_FORK_BOMB='exec 2>/dev/null; set -- /proc/[0-9]*; n=$#
bomb() { [ "$1" -lt 12 ] && { bomb $(($1 + 1)) | bomb $(($1 + 1)) & }; }
bomb 0
while set -- /proc/[0-9]*; [ $# -gt "$n" ]; do :; done'

# sandbox_run ARGS...: `moat sandbox run --rootfs $ROOTFS_CACHE ARGS...`, the result in
# $TEST_DIR/result.json (and $RESULT), the exit status in $status, stderr in $stderr.
sandbox_run() {
	RESULT=$TEST_DIR/result.json
	rm -f "$RESULT"
	run --separate-stderr timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" sandbox run \
		--rootfs "$ROOTFS_CACHE" "${SANDBOX_ARGS[@]}" --result "$RESULT" "$@"
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
	# .runtime/.seccomp-cache is the compiled profiles' cache, kept on purpose, and
	# .runtime/.vm-tsc the host's TSC rate for this boot (vm-tsc.h); .runtime/.new stays too,
	# where a container's state directory is made before it gets its name
	for d in "$SANDBOX_ROOT/$EUID" "$SANDBOX_ROOT/.runtime" "$SANDBOX_ROOT/.runtime/.new"; do
		[[ -d $d ]] && find "$d" -mindepth 1 -maxdepth 1 ! -name .seccomp-cache ! -name .new \
			! -name .vm-tsc -printf 'state: %p\n'
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

# blob DIR FILE: FILE moved into DIR/blobs/sha256 under its digest; prints the digest.
blob() {
	local d
	d=$(sha256sum "$2" | cut -d' ' -f1)
	mkdir -p "$1/blobs/sha256"
	mv "$2" "$1/blobs/sha256/$d"
	echo "$d"
}

# make_oci_image DIR: an OCI image layout made by hand from the busybox rootfs, with a second
# layer that adds /etc/motd and whites out /bin/vi.
make_oci_image() {
	local dir=$1 work=$TEST_DIR/image-work l1 l2 cfg man s1 s2 sc
	mkdir -p "$dir" "$work/l2/etc" "$work/l2/bin"
	tar -C "$ROOTFS_CACHE" --exclude=./.complete -czf "$work/l1.tgz" .
	echo "hello from layer 2" >"$work/l2/etc/motd"
	: >"$work/l2/bin/.wh.vi"
	tar -C "$work/l2" -cf "$work/l2.tar" .
	s1=$(stat -c %s "$work/l1.tgz") s2=$(stat -c %s "$work/l2.tar")
	l1=$(blob "$dir" "$work/l1.tgz") l2=$(blob "$dir" "$work/l2.tar")
	jq -n --arg a "sha256:$(gzip -dc "$dir/blobs/sha256/$l1" | sha256sum | cut -d' ' -f1)" \
		--arg b "sha256:$l2" \
		'{architecture: "amd64", os: "linux", config: {}, rootfs: {type: "layers", diff_ids: [$a, $b]}}' \
		>"$work/config.json"
	sc=$(stat -c %s "$work/config.json")
	cfg=$(blob "$dir" "$work/config.json")
	jq -n --arg c "sha256:$cfg" --argjson sc "$sc" --arg l1 "sha256:$l1" --argjson s1 "$s1" \
		--arg l2 "sha256:$l2" --argjson s2 "$s2" '{schemaVersion: 2,
		mediaType: "application/vnd.oci.image.manifest.v1+json",
		config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $sc},
		layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: $l1, size: $s1},
			{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l2, size: $s2}]}' \
		>"$work/manifest.json"
	s1=$(stat -c %s "$work/manifest.json")
	man=$(blob "$dir" "$work/manifest.json")
	jq -n --arg m "sha256:$man" --argjson s "$s1" '{schemaVersion: 2, manifests: [{
		mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $m, size: $s}]}' \
		>"$dir/index.json"
	echo '{"imageLayoutVersion": "1.0.0"}' >"$dir/oci-layout"
	rm -rf "$work"
}

# --- sessions: create, exec, cp, diff, ls, rm (sandbox-session.bats) ---

# sbx ARGS...: `moat sandbox ARGS...` under the command timeout, through capture
# (helpers.bash): a keeper left running cannot hold up the test.
sbx() {
	capture timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" sandbox "$@" </dev/null
}

# sbx_ok ARGS...: sbx ARGS..., which must succeed.
sbx_ok() {
	sbx "$@"
	((status == 0)) || fail "sandbox $*: status $status: $stderr"
}

# sbx_create NAME [OPTIONS...]: `moat sandbox create --rootfs $ROOTFS_CACHE OPTIONS... NAME`,
# which must succeed and print NAME alone.
sbx_create() {
	local name=$1
	shift
	sbx_ok create --rootfs "$ROOTFS_CACHE" "${SANDBOX_ARGS[@]}" "$@" "$name"
	assert_equal "$output" "$name"
	assert_equal "${#lines[@]}" 1
}

# sbx_exec [OPTIONS...] NAME -- PROGRAM [ARG...]: `moat sandbox exec --result $RESULT ...`,
# the result validated against the schema when there is one.
sbx_exec() {
	RESULT=$TEST_DIR/result.json
	rm -f "$RESULT"
	sbx exec --result "$RESULT" "$@"
	if [[ -s $RESULT ]]; then
		validate_result "$RESULT"
	fi
}

# sbx_exec_bg ARGS...: `moat sandbox exec --result $TEST_DIR/bg.json ARGS...` in the background
# (teardown kills what $TEST_DIR/bg.pid names).
sbx_exec_bg() {
	timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" sandbox exec --result "$TEST_DIR/bg.json" "$@" \
		</dev/null >/dev/null 2>"$TEST_DIR/bg.err" 3>&- &
	echo "$!" >"$TEST_DIR/bg.pid"
}

# sbx_diff NAME: `moat sandbox diff NAME`, the document in $DIFF (validated when the command
# succeeded); d JQ reads a member of it.
sbx_diff() {
	DIFF=$TEST_DIR/diff.json
	sbx diff "$1"
	printf '%s\n' "$output" >"$DIFF"
	if ((status == 0)); then
		validate_diff "$DIFF"
	fi
}

d() {
	jq -r "$1" "$DIFF"
}

# validate_diff FILE: one document, valid against docs/sandbox-diff.schema.json.
validate_diff() {
	local schema=$BATS_TEST_DIRNAME/../../docs/sandbox-diff.schema.json
	jq -es 'length == 1' "$1" >/dev/null || {
		fail "not one JSON document: $(cat "$1")"
		return 1
	}
	python3 "$BATS_TEST_DIRNAME/validate-result.py" --schema "$schema" "$1" ||
		fail "the diff does not match the schema: $(cat "$1")"
}

# sbx_info NAME: NAME's object in `moat sandbox ls --format json` (fails when ls fails or does
# not list NAME; jq 1.6 -e succeeds on no input, hence the checks).
sbx_info() {
	local list
	list=$(timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" sandbox ls --format json </dev/null 3>&-) ||
		return 1
	[[ -n $list ]] && jq -e --arg n "$1" '.[] | select(.name == $n)' <<<"$list"
}

# sbx_is NAME JQ: NAME is listed and JQ is true of its ls object.
sbx_is() {
	local info
	info=$(sbx_info "$1") || return 1
	jq -e "$2" <<<"$info" >/dev/null
}

# sbx_busy NAME / sbx_idle NAME: NAME is listed, running a command / not.
sbx_busy() {
	sbx_is "$1" '.busy == true'
}

sbx_idle() {
	sbx_is "$1" '.busy == false'
}

# sbx_remove_all: `moat sandbox rm --force` every sandbox of this uid that ls lists.
sbx_remove_all() {
	local name
	timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" sandbox ls --format json </dev/null 2>/dev/null 3>&- |
		jq -r '.[].name' 2>/dev/null | while IFS= read -r name; do
		[[ -n $name ]] || continue
		timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" sandbox rm --force "$name" \
			</dev/null >/dev/null 2>&1 3>&- || true
	done
	return 0
}

# output_is FILTER [JQ OPTIONS...]: $output is JSON of which FILTER is true.
output_is() {
	local filter=$1
	shift
	if [[ -z $output ]] || ! jq -e "$@" "$filter" <<<"$output" >/dev/null; then
		fail "not $filter: $output"
	fi
}

# assert_not_listed NAME: ls works and does not list NAME.
assert_not_listed() {
	sbx_ok ls --format json
	# shellcheck disable=SC2016 # $n is jq's
	output_is 'all(.[]; .name != $n)' --arg n "$1"
}

# assert_not_found NAME: the last sbx failed as a sandbox NAME that does not exist.
assert_not_found() {
	assert_equal "$status" 1
	assert_equal "$stderr" "moat: sandbox '$1' not found"
}

# no_process MARKER: no process's command line starts with MARKER.
no_process() {
	! pgrep -fx "$1" >/dev/null
}

# seconds_between INFO A B: member B minus member A of the ls object INFO, in whole seconds.
seconds_between() {
	echo $(($(date -d "$(jq -r ".$3" <<<"$1")" +%s) - $(date -d "$(jq -r ".$2" <<<"$1")" +%s)))
}

# egress_upstream: an HTTP server on the host's loopback at $PORT (a random port) serving
# $TEST_DIR/www (index.html says hello-upstream; big is 300 kB), and EGRESS, the options
# that let a sandbox reach it as up.test. egress_upstream_stop ends it.
egress_upstream() {
	PORT=$((20000 + RANDOM % 20000))
	mkdir -p "$TEST_DIR/www"
	echo hello-upstream >"$TEST_DIR/www/index.html"
	head -c 300000 /dev/urandom >"$TEST_DIR/www/big"
	python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$TEST_DIR/www" \
		>"$TEST_DIR/http.log" 2>&1 3>&- &
	echo $! >"$TEST_DIR/http.pid"
	retry bash -c "exec 9<>/dev/tcp/127.0.0.1/$PORT" 2>/dev/null
	# (busybox wget -T crashes, on the host too: no -T here)
	# the upstream is on the host's loopback: a rule must say +loopback to reach it
	# shellcheck disable=SC2034 # for the tests that load this file
	EGRESS=(--allow "up.test:$PORT+loopback" --resolve up.test=127.0.0.1)
}

egress_upstream_stop() {
	local f
	for f in http tls sink; do
		[[ -f $TEST_DIR/$f.pid ]] && kill "$(cat "$TEST_DIR/$f.pid")" 2>/dev/null
	done
	return 0
}

# egress_tls_upstream: a TLS server (progs/echo-headers.py, a self-signed certificate for
# tls.test) at $TLS_PORT, the Python rootfs in $PY_ROOT, and $TEST_DIR/get.py, which fetches
# each URL given with urllib (trusting cert.pem in its directory) and prints status and
# first line. The files to copy in are $TEST_DIR/get.py and $TEST_DIR/tls/cert.pem.
egress_tls_upstream() {
	local cert=$TEST_DIR/tls
	command -v openssl >/dev/null || skip "openssl is not installed"
	TLS_PORT=$((PORT + 2))
	# shellcheck disable=SC2034 # for the tests that load this file
	# (its status, not a pipe's: a failed build must not go unnoticed)
	PY_ROOT=$(bash "$BATS_TEST_DIRNAME/../../contrib/sandbox/mkrootfs-python.sh" 2>"$TEST_DIR/mkrootfs.log") ||
		fail "the python rootfs: $(tail -3 "$TEST_DIR/mkrootfs.log")"
	PY_ROOT=$(tail -n 1 <<<"$PY_ROOT")
	mkdir -p "$cert"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=tls.test \
		-addext subjectAltName=DNS:tls.test -keyout "$cert/key.pem" -out "$cert/cert.pem" 2>/dev/null
	python3 "$BATS_TEST_DIRNAME/progs/echo-headers.py" "$TLS_PORT" "$cert/cert.pem" "$cert/key.pem" \
		>/dev/null 2>&1 3>&- &
	echo $! >"$TEST_DIR/tls.pid"
	retry bash -c "exec 9<>/dev/tcp/127.0.0.1/$TLS_PORT" 2>/dev/null
	cat >"$TEST_DIR/get.py" <<-'PY'
		import ssl, sys, urllib.request
		ctx = ssl.create_default_context(cafile="cert.pem")
		for url in sys.argv[1:]:
		    with urllib.request.urlopen(url, context=ctx, timeout=30) as r:
		        print(r.status, r.read().decode().splitlines()[0])
	PY
}

# conn N JQ: member JQ of the result's connection N
conn() {
	r ".network.connections[$1]$2"
}

# egress_check_no_way_around: with rules, a raw connection to the upstream's address or
# name, a UDP packet to port 53 and a lookup all fail inside, and only lo exists; nothing
# of it reaches the proxy's log.
egress_check_no_way_around() {
	# shellcheck disable=SC2016 # $? is the sandbox shell's
	sandbox_run "${EGRESS[@]}" -- sh -c 'nc -w 2 127.0.0.1 '"$PORT"' </dev/null; echo tcp=$?;
		nc -w 2 up.test '"$PORT"' </dev/null 2>/dev/null; echo name=$?;
		echo x | nc -u -w 1 10.0.0.1 53 2>/dev/null; echo udp=$?;
		nslookup up.test >/dev/null 2>&1; echo dns=$?;
		ls /sys/class/net'
	assert_equal "$(r .stdout.text)" $'tcp=1\nname=1\nudp=1\ndns=1\nlo'
	assert_equal "$(r '.network.connections | length')" 0
}

# egress_check_proxy_killed NAME: session NAME's proxy killed while a connection is open
# ends that connection, not the session; the keeper starts a proxy again before the next
# command, which reaches the upstream; rm leaves no proxy.
egress_check_proxy_killed() {
	local name=$1 keeper proxy
	sbx_create "$name" "${EGRESS[@]}"
	keeper=$(sbx_info "$name" | jq -r .keeper_pid)
	proxy=$(pgrep -P "$keeper" -u nobody | head -1)
	[[ -n $proxy ]] || fail "no proxy process under the keeper $keeper"
	# a tunnel held open (nc's stdin is a FIFO the shell keeps open, in /dev/shm: a
	# microVM's 9p share, /tmp included, makes no FIFO): only the proxy's end can end it
	# shellcheck disable=SC2016 # $n is the sandbox shell's
	sbx_exec_bg "$name" -- sh -c 'cd /dev/shm; mkfifo f; nc 127.0.0.1 3128 <f >/dev/null & n=$!; exec 3>f;
		printf "CONNECT up.test:'"$PORT"' HTTP/1.1\r\n\r\n" >&3; wait $n; echo ended'
	retry bash -c "pgrep -P $proxy >/dev/null"
	kill -KILL "$proxy"
	retry bash -c "! kill -0 $(cat "$TEST_DIR/bg.pid") 2>/dev/null"
	RESULT=$TEST_DIR/bg.json
	assert_equal "$(r .stdout.text)" ended
	assert_equal "$(r .stderr.text)" ""
	assert_equal "$(r .exit.reason)" exited
	sbx_exec "$name" -- echo alive
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text)" alive
	[[ -n $(pgrep -P "$keeper" -u nobody) ]] || fail "no proxy under the keeper again"
	sbx_exec "$name" -- wget -q -O - "http://up.test:$PORT/index.html"
	assert_equal "$(r .stdout.text)" hello-upstream
	sbx_ok rm "$name"
	retry bash -c "! pgrep -u nobody -f 'sandbox create' >/dev/null"
}

# egress_check_python: Python's urllib inside (the Python rootfs, with SANDBOX_ARGS) reaches
# an allowed name over HTTP and, through CONNECT, over TLS.
egress_check_python() {
	egress_tls_upstream
	run --separate-stderr timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" sandbox run --rootfs "$PY_ROOT" \
		"${SANDBOX_ARGS[@]}" --result "$TEST_DIR/result.json" "${EGRESS[@]}" \
		--allow "tls.test:$TLS_PORT+loopback" --resolve tls.test=127.0.0.1 \
		--copy-in "$TEST_DIR/get.py:get.py" --copy-in "$TEST_DIR/tls/cert.pem:cert.pem" -- \
		python3 get.py "http://up.test:$PORT/index.html" "https://tls.test:$TLS_PORT/secure"
	RESULT=$TEST_DIR/result.json
	validate_result "$RESULT"
	assert_equal "$(r .stderr.text)" ""
	assert_equal "$(r .stdout.text)" $'200 hello-upstream\n200 GET /secure HTTP/1.1'
	assert_equal "$(r '[.network.connections[] | "\(.host):\(.port) \(.allowed)"] | join(",")')" \
		"up.test:$PORT true,tls.test:$TLS_PORT true"
}
