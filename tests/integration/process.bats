#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
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

# Issue 14: runc and crun create a missing cwd, inside the root, for the process's user.
@test "a missing process.cwd is made inside the root, owned by the process's user" {
	make_bundle
	# (as engines write it: moat's user namespace, in which the image's owner is mapped)
	cfg_set '.process.cwd = "/work/here" | .process.user = {"uid": 1000, "gid": 2000}
		| .root.readonly = false | .linux.namespaces |= map(select(.type != "user"))
		| del(.linux.uidMappings, .linux.gidMappings)'
	run_sh 'pwd; stat -c "%u:%g %a" . ..; touch made-by-the-user && echo wrote'
	assert_success
	assert_line --index 0 /work/here
	assert_line --index 1 '1000:2000 755'
	assert_line --index 2 '0:0 755'
	assert_line --index 3 wrote
	# it is the image's directory, made inside the bundle's rootfs, not on the host
	[[ -d $BUNDLE/rootfs/work/here && ! -e /work/here ]] || fail "the cwd was made outside the rootfs"
	# a symlink leading out of the root leads inside it
	ln -s /outside-cwd "$BUNDLE/rootfs/link"
	cfg_set '.process.cwd = "/link/sub"'
	run_sh pwd
	assert_success
	[[ -d $BUNDLE/rootfs/outside-cwd/sub && ! -e /outside-cwd ]] || fail "the cwd was made outside the rootfs"
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
