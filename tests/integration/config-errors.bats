#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# A bad bundle fails create and run with one line that names the field (its
# JSON path) or the file, and leaves nothing behind.

load helpers

setup() {
	moat_setup
	make_bundle
	cfg_args echo must-not-run
}

# assert_config_refused REGEX: create and run both fail with one line
# matching REGEX, and nothing of the container remains.
assert_config_refused() {
	local cmd
	for cmd in create run; do
		run_moat "$cmd" --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$CID"
		assert_moat_error "$1"
		refute_output --partial must-not-run
		assert_no_residue "$CID"
	done
}

@test "a missing config.json is named in the error" {
	rm "$BUNDLE/config.json"
	assert_config_refused 'config\.json'
}

@test "a config.json that is not JSON is named in the error" {
	echo '{"ociVersion": "1.2.0", "process": ' >"$BUNDLE/config.json"
	assert_config_refused 'config\.json'
}

@test "a config.json that is a JSON array is refused" {
	echo '[]' >"$BUNDLE/config.json"
	assert_config_refused 'config\.json'
}

@test "a string where an integer belongs names the field path" {
	cfg_set '.linux.resources.memory.limit = "lots"'
	assert_config_refused 'linux\.resources\.memory\.limit: expected integer, got string'
}

@test "a string where an array belongs names the field path" {
	cfg_set '.process.args = "echo hi"'
	assert_config_refused 'process\.args: expected array'
}

@test "a wrong type inside an array names the element" {
	cfg_set '.mounts[1].destination = 42'
	assert_config_refused 'mounts(\[1\]|\.1)\.destination: expected string'
}

@test "a negative uid names process.user.uid" {
	cfg_set '.process.user.uid = -1'
	assert_config_refused 'process\.user\.uid'
}

@test "a missing ociVersion names ociVersion" {
	cfg_set 'del(.ociVersion)'
	assert_config_refused 'ociVersion'
}

@test "a config without a process cannot be created and says process" {
	cfg_set 'del(.process)'
	assert_config_refused 'process'
}

@test "a config with empty process.args names process.args" {
	cfg_set '.process.args = []'
	assert_config_refused 'process\.args'
}

@test "a relative process.cwd names process.cwd" {
	cfg_set '.process.cwd = "relative/dir"'
	assert_config_refused 'process\.cwd'
}

@test "an unknown namespace type names linux.namespaces" {
	cfg_set '.linux.namespaces += [{"type": "bogus"}]'
	assert_config_refused 'linux\.namespaces'
}

@test "a mount without a destination names the mount" {
	cfg_set '.mounts += [{"type": "tmpfs", "source": "tmpfs"}]'
	assert_config_refused 'mounts(\[[0-9]+\]|\.[0-9]+)?\.destination|destination'
}

@test "a missing rootfs directory names root.path" {
	rm -rf "$BUNDLE/rootfs"
	assert_config_refused 'root\.path'
}

@test "a rootfs that is a file names root.path" {
	rm -rf "$BUNDLE/rootfs"
	echo not-a-dir >"$BUNDLE/rootfs"
	assert_config_refused 'root\.path'
}

@test "a bundle directory that does not exist is named in the error" {
	rm -rf "$BUNDLE"
	BUNDLE=$TEST_DIR/bundle
	assert_config_refused 'bundle|config\.json'
}

@test "unknown fields are ignored, as the runtime spec requires" {
	cfg_set '.fooExtension = {"a": 1} | .process.barField = "x" | .linux.bazField = [1, 2]'
	cfg_args echo unknown-fields-ok
	run_moat run --bundle "$BUNDLE" "$CID"
	assert_success
	assert_output unknown-fields-ok
}

@test "with --log-format json the config error is one JSON line naming the field" {
	cfg_set '.linux.resources.memory.limit = "lots"'
	run_moat --log "$TEST_DIR/log.json" --log-format json \
		create --bundle "$BUNDLE" "$CID"
	assert_failure
	run jq -r -s 'map(select(.level == "error")) | .[0].msg' "$TEST_DIR/log.json"
	assert_success
	assert_output --partial 'linux.resources.memory.limit'
	assert_no_residue "$CID"
}

@test "a failed create leaves the ID free for a good config" {
	cfg_set '.linux.resources.memory.limit = "lots"'
	run_moat create --bundle "$BUNDLE" "$CID"
	assert_failure
	cfg_set 'del(.linux.resources.memory)'
	cfg_args true
	run_moat create --bundle "$BUNDLE" "$CID"
	assert_success
	assert_equal "$(status_of)" created
}

@test "linux.sysctl kernel.hostname beside hostname is refused, naming both" {
	cfg_set '.hostname = "from-field" | .linux.sysctl["kernel.hostname"] = "from-sysctl"'
	assert_config_refused "^moat: linux\.sysctl: 'kernel\.hostname' conflicts with hostname 'from-field': set one of them\$"
}

@test "linux.sysctl kernel.domainname beside domainname is refused, naming both" {
	cfg_set '.domainname = "field.example" | .linux.sysctl["kernel.domainname"] = "sysctl.example"'
	assert_config_refused "^moat: linux\.sysctl: 'kernel\.domainname' conflicts with domainname 'field\.example': set one of them\$"
}

@test "linux.sysctl kernel.hostname and kernel.domainname alone set the names" {
	# a user namespace's root may not write these: a rootful container
	use_policy_without auto-userns
	cfg_set 'del(.hostname) | .linux.sysctl["kernel.hostname"] = "from-sysctl"
		| .linux.sysctl["kernel.domainname"] = "sysctl.example"
		| .linux.namespaces |= map(select(.type != "user"))
		| del(.linux.uidMappings, .linux.gidMappings)'
	cfg_args cat /proc/sys/kernel/hostname /proc/sys/kernel/domainname
	run_moat run --bundle "$BUNDLE" "$CID"
	assert_success "$stderr"
	assert_output "from-sysctl
sysctl.example"
}

@test "a path with a newline in it is named on one line, the newline shown as \\n" {
	cfg_set '.root.path = $p' --arg p "missing"$'\n'"rootfs"
	assert_config_refused "^moat: root\.path '$BUNDLE/missing\\\\nrootfs': No such file or directory\$"
}
