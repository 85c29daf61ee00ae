#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The command line itself: version, help, global options, error reporting.

load helpers

@test "--version prints the version line and the feature tags" {
	run --separate-stderr "$MOAT_BINARY" --version
	assert_success
	assert_line --index 0 --regexp '^moat version [0-9]+\.[0-9]+\.[0-9]+$'
	assert_line --regexp '(^| )[+-]SECCOMP( |$)'
	assert_line --regexp '(^| )[+-]CAP( |$)'
	assert_line --regexp '(^| )[+-]SELINUX( |$)'
}

@test "-v is the short form of --version" {
	run "$MOAT_BINARY" --version
	long=$output
	run --separate-stderr "$MOAT_BINARY" -v
	assert_success
	assert_output "$long"
}

@test "--version tags say whether SELinux support was built in" {
	run "$MOAT_BINARY" --version
	assert_success
	# exactly one of +SELINUX / -SELINUX
	assert_equal "$(grep -oE '[+-]SELINUX' <<<"$output" | wc -l)" 1
}

@test "--help lists every command" {
	run --separate-stderr "$MOAT_BINARY" --help
	assert_success
	for cmd in create delete events exec features kill list pause ps resume run spec start state update; do
		assert_line --regexp "^ +$cmd( |$)"
	done
}

@test "--help does not list commands moat does not have" {
	run --separate-stderr "$MOAT_BINARY" --help
	assert_success
	for cmd in checkpoint restore; do
		refute_line --regexp "^ +$cmd( |$)"
	done
}

@test "--help lists the global options" {
	run --separate-stderr "$MOAT_BINARY" --help
	assert_success
	for opt in --root --log --log-format --debug --systemd-cgroup --cgroup-manager --rootless --criu --version --help; do
		assert_output --partial -- "$opt"
	done
}

@test "--help names the exec and run flags beyond the lifecycle's own" {
	run --separate-stderr "$MOAT_BINARY" --help
	assert_success
	for opt in 'exec --cgroup' 'exec --ignore-paused' 'exec --process-label' --apparmor 'run --keep'; do
		assert_output --partial -- "$opt"
	done
}

@test "-h is the short form of --help" {
	run "$MOAT_BINARY" --help
	long=$output
	run --separate-stderr "$MOAT_BINARY" -h
	assert_success
	assert_output "$long"
}

@test "every command has --help that succeeds and names its flags" {
	declare -A flags=(
		[spec]='--bundle --rootless'
		[run]='--bundle --pid-file --detach --keep --no-pivot --no-new-keyring --preserve-fds --console-socket'
		[exec]='--process --tty --detach --pid-file --cgroup --ignore-paused --process-label --apparmor'
		[create]='--bundle --pid-file --no-pivot --no-new-keyring --preserve-fds --console-socket'
		[start]=''
		[state]=''
		[list]='--format --quiet'
		[kill]='--all'
		[delete]='--force'
	)
	for cmd in "${!flags[@]}"; do
		run --separate-stderr "$MOAT_BINARY" "$cmd" --help
		assert_success
		assert_output --partial "$cmd"
		for flag in ${flags[$cmd]}; do
			assert_output --partial -- "$flag"
		done
	done
}

@test "no command prints usage and fails" {
	run --separate-stderr "$MOAT_BINARY"
	assert_failure
}

@test "an unknown command fails with one line naming it" {
	run_moat frobnicate
	assert_moat_error 'frobnicate'
}

@test "commands moat does not have are unknown commands" {
	for cmd in checkpoint restore; do
		run_moat "$cmd" x
		assert_moat_error "$cmd"
	done
}

@test "an unknown global option fails" {
	run --separate-stderr "$MOAT_BINARY" --no-such-option list
	assert_moat_error 'no-such-option'
	assert_output ''
}

@test "an unknown command option fails with one line" {
	run_moat list --no-such-option
	assert_moat_error
}

@test "a command missing its container ID fails with one line" {
	for cmd in create run start state kill delete; do
		run_moat "$cmd"
		assert_moat_error
	done
}

@test "a command given two container IDs fails with one line" {
	for cmd in start state delete; do
		run_moat "$cmd" a b
		assert_moat_error
	done
}

@test "--root selects the state directory" {
	make_bundle
	cfg_args sleep 1000
	moat_create
	[[ -d $MOAT_ROOT/$CID ]]
	run "$MOAT_BINARY" --root "$TEST_DIR/other-root" list -q
	refute_line_exact "$CID"
	run moat list -q
	assert_line "$CID"
}

@test "--log-format accepts text and json and refuses anything else" {
	run_moat --log-format text list
	assert_success
	run_moat --log-format json list
	assert_success
	run_moat --log-format xml list
	assert_moat_error 'xml'
}

@test "--log FILE with --log-format json writes errors as JSON lines with level, msg and time" {
	log=$TEST_DIR/moat.log
	run_moat --log "$log" --log-format json state no-such-container
	assert_failure
	[[ -s $log ]]
	# every line is one JSON object
	while IFS= read -r line; do
		jq -e 'type == "object"' <<<"$line" >/dev/null || fail "not a JSON object: $line"
	done <"$log"
	run jq -e -s 'map(select(.level == "error")) | length >= 1' "$log"
	assert_success
	run jq -r -s 'map(select(.level == "error"))[0] | .msg' "$log"
	assert_output --partial no-such-container
	run jq -r -s 'map(select(.level == "error"))[0] | .time' "$log"
	assert_output --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}'
}

@test "--log FILE in text format receives the error too" {
	log=$TEST_DIR/moat.log
	run_moat --log "$log" state no-such-container
	assert_failure
	grep -q no-such-container "$log"
}

@test "--log to an unwritable path fails with one line" {
	run_moat --log "$TEST_DIR/no/such/dir/log" list
	assert_moat_error
}

@test "--debug is accepted" {
	run_moat --debug list
	assert_success
}

@test "--systemd-cgroup is accepted" {
	run_moat --systemd-cgroup list
	assert_success
}

@test "--cgroup-manager accepts cgroupfs, systemd and disabled only" {
	for m in cgroupfs systemd disabled; do
		run_moat --cgroup-manager "$m" list
		assert_success
	done
	run_moat --cgroup-manager bogus list
	assert_moat_error 'bogus'
}

@test "--rootless accepts true, false and auto only" {
	for v in true false auto; do
		run_moat --rootless "$v" list
		assert_success
	done
	run_moat --rootless maybe list
	assert_moat_error 'maybe'
}

@test "global options go before the command" {
	run --separate-stderr "$MOAT_BINARY" --root "$MOAT_ROOT" --debug --log "$TEST_DIR/log" --log-format json list -q
	assert_success
	assert_output ''
}

@test "features prints the runtime-spec features document of what moat supports" {
	run --separate-stderr "$MOAT_BINARY" features
	assert_success
	run jq -c '[.ociVersionMin, .ociVersionMax, (.hooks | length), (.mountOptions | index("ridmap") != null),
		(.linux.namespaces | sort), (.linux.capabilities | index("CAP_SYS_ADMIN") != null),
		.linux.mountExtensions.idmap.enabled, .linux.cgroup.v1, .linux.cgroup.v2,
		.annotations["org.opencontainers.runtime-spec.features.runtime"]]' <<<"$output"
	assert_output '["1.0.0","1.2.0",6,true,["cgroup","ipc","mount","network","pid","time","user","uts"],true,true,true,true,"moat"]'
}

@test "features names the policy in force, each rule's switch, and the moat.* annotations moat reads" {
	printf '{"rules": {"network": {"enabled": false}}, "containerMayRelax": ["deny-host-mounts", "deny-devices"]}\n' >"$TEST_DIR/p.json"
	run --separate-stderr "$MOAT_BINARY" --policy "$TEST_DIR/p.json" features
	assert_success
	run jq -r '.annotations["moat.policy.file"], .annotations["moat.policy.rules"],
		.annotations["moat.policy.containerMayRelax"],
		(.annotations | keys | map(select(startswith("moat.annotation."))) | join(" ")),
		(.potentiallyUnsafeConfigAnnotations | join(" "))' <<<"$output"
	assert_line --index 0 "$TEST_DIR/p.json"
	assert_line --index 1 'default-seccomp=on,deny-host-mounts=on,no-new-privileges=on,capability-ceiling=on,deny-devices=on,network=off,auto-userns=on'
	assert_line --index 2 'deny-host-mounts,deny-devices'
	assert_line --index 3 'moat.annotation.moat.isolation moat.annotation.moat.policy.allow moat.annotation.moat.vm.accel moat.annotation.moat.vm.boot moat.annotation.moat.vm.cpus moat.annotation.moat.vm.memory_mib moat.annotation.moat.vm.share moat.annotation.moat.vm.vmm-user'
	assert_line --index 4 'moat.policy.allow'
	# a policy that does not load is reported, and features still answers (engines call it)
	echo '{"rules": {"bogus": {}}}' >"$TEST_DIR/bad.json"
	run --separate-stderr "$MOAT_BINARY" --policy "$TEST_DIR/bad.json" features
	assert_success
	assert_equal "$(jq -r '.annotations["moat.policy.error"]' <<<"$output")" \
		"policy: $TEST_DIR/bad.json: rules.bogus: invalid value \"bogus\" (expected one of: default-seccomp, deny-host-mounts, no-new-privileges, capability-ceiling, deny-devices, network, auto-userns)"
}

@test "features lists exactly the capabilities this kernel has" {
	local last
	last=$(cat /proc/sys/kernel/cap_last_cap)
	run --separate-stderr "$MOAT_BINARY" features
	assert_success
	assert_equal "$(jq '.linux.capabilities | length' <<<"$output")" $((last + 1))
}

@test "features with an argument fails with one line" {
	run_moat features extra
	assert_moat_error "unexpected argument 'extra'"
}

@test "--debug logs the command and its exit status" {
	run --separate-stderr "$MOAT_BINARY" --root "$MOAT_ROOT" --debug list -q
	assert_success
	assert_equal "${stderr_lines[0]}" "moat: debug: list: root $MOAT_ROOT, pid ${stderr_lines[0]##*pid }"
	assert_equal "${stderr_lines[1]}" 'moat: debug: list: exit status 0'
}

# The libraries few commands need are opened when first used (src/libmoat/base/dlib.h):
# linked in, the loader maps and relocates them at every start, twice per container.
@test "a start loads none of the libraries moat opens on first use" {
	run --separate-stderr env LD_DEBUG=libs "$MOAT_BINARY" --version
	assert_success
	# the loader names each library it initializes; libc is one, so the trace is there
	grep -q 'calling init: .*libc\.so' <<<"$stderr"
	run grep -E 'calling init: .*(libselinux|libpcre2|libarchive|libsystemd)' <<<"$stderr"
	assert_failure
}

# configure.ac: moat's runtime is built with the hardening Debian gives crun (dpkg-buildflags).
@test "moat is built with full RELRO, the stack protector and _FORTIFY_SOURCE" {
	command -v readelf >/dev/null || skip "readelf (binutils) is not installed"
	run readelf -d "$MOAT_RUNTIME"
	assert_success
	assert_output --regexp 'FLAGS.*BIND_NOW'
	run readelf -lW "$MOAT_RUNTIME"
	assert_output --partial GNU_RELRO
	run readelf --dyn-syms -W "$MOAT_RUNTIME"
	assert_output --partial __stack_chk_fail
	assert_output --regexp '__[a-z]+_chk@'
}
