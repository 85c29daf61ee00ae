#!/usr/bin/env bats
# process.args, env, cwd, user (uid, gid, additionalGids) from config.json.

load helpers

@test "process.args reach the program exactly, spaces and dashes included" {
	make_bundle
	cfg_args printf '%s|' 'two words' --dash '' "quote'd" '$HOME'
	run_moat run --bundle "$BUNDLE" "$CID"
	assert_success
	assert_output "two words|--dash||quote'd|\$HOME|"
}

@test "process.env is the whole environment" {
	make_bundle
	cfg_set '.process.env = ["PATH=/bin", "FOO=bar", "EMPTY=", "SPACED=a b"]'
	export MOAT_HOST_ONLY_VARIABLE=leak
	run_sh 'env | sort'
	assert_success
	assert_line 'FOO=bar'
	assert_line 'EMPTY='
	assert_line 'SPACED=a b'
	assert_line 'PATH=/bin'
	refute_output --partial MOAT_HOST_ONLY_VARIABLE
	refute_output --partial MOAT_ROOT
	refute_output --partial BATS_
}

@test "process.cwd is the working directory" {
	make_bundle
	cfg_set '.process.cwd = "/etc"'
	run_sh 'pwd; cat group | head -1'
	assert_success
	assert_line --index 0 /etc
	assert_line --index 1 'root:x:0:'
}

@test "process.user uid and gid are the process's ids" {
	make_bundle
	cfg_set '.process.user = {"uid": 1000, "gid": 2000}'
	run_sh 'id -u; id -g; grep -E "^(Uid|Gid):" /proc/self/status'
	assert_success
	assert_line --index 0 1000
	assert_line --index 1 2000
	assert_line --regexp '^Uid:[[:space:]]+1000[[:space:]]+1000[[:space:]]+1000[[:space:]]+1000$'
	assert_line --regexp '^Gid:[[:space:]]+2000[[:space:]]+2000[[:space:]]+2000[[:space:]]+2000$'
}

@test "process.user.additionalGids are the supplementary groups, and only those" {
	make_bundle
	cfg_set '.process.user = {"uid": 1000, "gid": 1000, "additionalGids": [2000, 3000]}'
	run_sh 'grep "^Groups:" /proc/self/status'
	assert_success
	groups=$(sed -E 's/^Groups:[[:space:]]*//' <<<"$output" | tr ' ' '\n' | sed '/^$/d' | sort -n | tr '\n' ' ')
	assert_equal "$groups" '2000 3000 '
}

@test "without additionalGids the process has no supplementary groups" {
	make_bundle
	cfg_set '.process.user = {"uid": 1000, "gid": 1000}'
	run_sh 'grep "^Groups:" /proc/self/status'
	assert_success
	assert_output --regexp '^Groups:[[:space:]]*$'
}

@test "the default user is root of the container" {
	make_bundle
	run_sh 'id -u; id -g'
	assert_success
	assert_line --index 0 0
	assert_line --index 1 0
}

@test "a user that does not exist in /etc/passwd still runs by number" {
	make_bundle
	cfg_set '.process.user = {"uid": 4321, "gid": 4321}'
	run_sh 'id -u'
	assert_success
	assert_output 4321
}
