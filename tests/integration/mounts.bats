#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The default filesystem view: read-only root, writable tmpfs /tmp, proc and
# sys, masked and read-only paths, and nothing propagating to the host.

load helpers

# A directory that anyone may write, so that a failed write in it can only
# be the read-only mount's doing, whatever the ownership inside.
make_world_writable_dir() {
	mkdir -p "$BUNDLE/rootfs/data"
	chmod 1777 "$BUNDLE/rootfs/data"
}

@test "the root filesystem is mounted read-only" {
	make_bundle
	run_sh 'awk '"'"'$5 == "/" { print $6 }'"'"' /proc/self/mountinfo | tail -1'
	assert_success
	assert_output --regexp '(^|,)ro(,|$)'
}

@test "writing to the read-only root fails with EROFS" {
	make_bundle
	make_world_writable_dir
	run_sh 'touch /data/x 2>&1; test -e /data/x && echo created || echo not-created'
	assert_success
	assert_output --partial 'Read-only file system'
	assert_line not-created
	[[ ! -e $BUNDLE/rootfs/data/x ]]
}

@test "root.readonly=false makes the root writable" {
	make_bundle
	make_world_writable_dir
	cfg_set '.root.readonly = false'
	run_sh 'touch /data/x && echo created'
	assert_success
	assert_output created
	[[ -e $BUNDLE/rootfs/data/x ]]
}

@test "/tmp is a writable tmpfs" {
	make_bundle
	run_sh 'awk '"'"'$5 == "/tmp" { sub(/.* - /, ""); print $1 }'"'"' /proc/self/mountinfo | tail -1;
		echo data > /tmp/file && cat /tmp/file'
	assert_success
	assert_line --index 0 tmpfs
	assert_line --index 1 data
	# it is not the bundle's rootfs/tmp
	[[ ! -e $BUNDLE/rootfs/tmp/file ]]
}

@test "/proc is a procfs and /sys a read-only sysfs" {
	make_bundle
	run_sh 'awk '"'"'$5 == "/proc" || $5 == "/sys" { o = $6; sub(/.* - /, ""); print $1, o }'"'"' /proc/self/mountinfo'
	assert_success
	assert_line --regexp '^proc '
	assert_line --regexp '^sysfs (.*,)?ro(,|$)'
}

@test "/proc/kcore is masked: it reads as empty" {
	[[ -e /proc/kcore ]] || skip "this kernel has no /proc/kcore"
	make_bundle
	run_sh 'wc -c < /proc/kcore'
	assert_success
	assert_output 0
}

@test "every masked file in the default spec reads as empty" {
	make_bundle
	script='for p in "$@"; do
		if [ -d "$p" ]; then n=$(ls -A "$p" | wc -l); echo "$p dir $n";
		elif [ -e "$p" ]; then n=$(head -c 1 "$p" 2>/dev/null | wc -c); echo "$p file $n";
		fi; done'
	# shellcheck disable=SC2046 # one argument per masked path
	cfg_args /bin/sh -c "$script" sh $(cfg_get '.linux.maskedPaths[]')
	run_moat run --bundle "$BUNDLE" "$CID"
	assert_success
	# what exists is empty; what does not exist on this kernel is skipped
	refute_output --regexp ' (dir|file) [1-9]'
	assert_line '/proc/keys file 0'
	if [[ -e /proc/kcore ]]; then
		assert_line '/proc/kcore file 0'
	fi
}

@test "/proc/keys and /proc/timer_list are masked" {
	make_bundle
	run_sh 'wc -c < /proc/keys; wc -c < /proc/timer_list'
	assert_success
	assert_line --index 0 0
	assert_line --index 1 0
}

@test "/sys/firmware is masked: it lists as empty" {
	make_bundle
	[[ -d /sys/firmware ]] || skip "this host has no /sys/firmware"
	run_sh 'ls -A /sys/firmware | wc -l'
	assert_success
	assert_output 0
}

@test "/proc/sys is mounted read-only" {
	make_bundle
	run_sh 'awk '"'"'$5 == "/proc/sys" { print $6 }'"'"' /proc/self/mountinfo | tail -1'
	assert_success
	assert_output --regexp '(^|,)ro(,|$)'
}

@test "writing to /proc/sys fails" {
	make_bundle
	run_sh 'echo moat > /proc/sys/kernel/hostname 2>/dev/null && echo written || echo refused; hostname'
	assert_success
	assert_line --index 0 refused
}

@test "/proc/sysrq-trigger is read-only" {
	[[ -e /proc/sysrq-trigger ]] || skip "this kernel has no /proc/sysrq-trigger"
	make_bundle
	run_sh 'awk '"'"'$5 == "/proc/sysrq-trigger" { print $6 }'"'"' /proc/self/mountinfo | tail -1'
	assert_success
	assert_output --regexp '(^|,)ro(,|$)'
}

# Issue 14: the recursive rslave of the root, made after the mounts, turned a bind's own
# "shared" into private.
@test "a mount's own propagation holds after the root's: shared and private binds" {
	use_policy_without deny-host-mounts
	make_bundle
	mkdir "$TEST_DIR/shared" "$TEST_DIR/private"
	cfg_set '.mounts += [{destination: "/root", type: "bind", source: $s, options: ["rbind", "shared"]},
		{destination: "/etc", type: "bind", source: $p, options: ["rbind", "private"]}]' \
		--arg s "$TEST_DIR/shared" --arg p "$TEST_DIR/private"
	for prop in '' rshared; do
		cfg_set 'if $p == "" then del(.linux.rootfsPropagation) else .linux.rootfsPropagation = $p end' \
			--arg p "$prop"
		run_sh 'grep -E "^[0-9]+ [0-9]+ [^ ]+ [^ ]+ /(root|etc) " /proc/self/mountinfo'
		assert_success
		assert_line --regexp ' /root [^ ]+ shared:[0-9]+ - '
		assert_line --regexp ' /etc [^ ]+ - '
		refute_line --regexp ' /etc [^ ]+ [^-]'
	done
}

@test "the container's mounts are not visible on the host while it runs" {
	make_bundle
	cfg_args sleep 100000
	moat_create
	moat start "$CID"
	wait_for_status running
	run mounts_under "$BUNDLE"
	assert_output ''
	run mounts_under "$MOAT_ROOT"
	assert_output ''
}

@test "nothing stays mounted under the bundle after the container is deleted" {
	make_bundle
	cfg_args sleep 100000
	moat_create
	moat start "$CID"
	wait_for_status running
	moat delete --force "$CID"
	assert_no_residue "$CID"
}

# Issue 14 (15): the init opens nothing of the host in its user namespace, whose capabilities
# do not reach host files; moat opens the bind sources as the host's root, in the container's
# mount namespace, and hands them over. A directory of mode 0000 only root may traverse.
@test "a bind source under a directory only the host's root can traverse is bound, as a directory and as a file" {
	local api
	mkdir -p "$TEST_DIR/locked/dir"
	echo 'bound directory' >"$TEST_DIR/locked/dir/marker"
	echo 'bound file' >"$TEST_DIR/locked/file"
	chmod 0000 "$TEST_DIR/locked"
	for api in new-api mount-syscall; do
		unset MOAT_TEST_FORCE_MOUNT_FALLBACK
		[[ $api == mount-syscall ]] && export MOAT_TEST_FORCE_MOUNT_FALLBACK=1
		make_bundle "$TEST_DIR/bundle-$api"
		use_policy_without deny-host-mounts
		cfg_set '.mounts += [
			{"destination": "/tmp/dir", "type": "bind", "source": $d, "options": ["bind", "ro"]},
			{"destination": "/tmp/file", "type": "bind", "source": $f, "options": ["bind", "ro"]}]' \
			--arg d "$TEST_DIR/locked/dir" --arg f "$TEST_DIR/locked/file"
		run_sh 'cat /tmp/dir/marker /tmp/file'
		assert_success
		assert_output "bound directory
bound file"
	done
}

# Issue 14 (13): a tmpfs over a directory of the image takes that directory's mode, as runc
# does, unless its options give mode=; over a directory moat makes, tmpfs's own 1777.
@test "a tmpfs over an existing directory takes its mode unless mode= is given" {
	local api
	for api in new-api mount-syscall; do
		unset MOAT_TEST_FORCE_MOUNT_FALLBACK
		[[ $api == mount-syscall ]] && export MOAT_TEST_FORCE_MOUNT_FALLBACK=1
		make_bundle "$TEST_DIR/bundle-$api"
		mkdir -m 0750 "$BUNDLE/rootfs/private" "$BUNDLE/rootfs/given"
		chmod 2710 "$BUNDLE/rootfs/private"
		cfg_set '.mounts += [
			{"destination": "/private", "type": "tmpfs", "source": "tmpfs"},
			{"destination": "/given", "type": "tmpfs", "source": "tmpfs", "options": ["mode=711"]},
			{"destination": "/tmp/new", "type": "tmpfs", "source": "tmpfs"}]'
		run_sh 'stat -c "%n %a" /private /given /tmp/new'
		assert_success
		assert_equal "${lines[*]}" '/private 2710 /given 711 /tmp/new 1777'
	done
}

# Issue 14 (3): without a cgroup namespace of its own (the compat preset, as engines on cgroup
# v1 ask), a cgroup mount showed the host's whole hierarchy, read-write, other containers'
# cgroups too. Each hierarchy now shows the container's own cgroup (its pids limit, not the
# host root's absent pids.max), read-only unless the options say rw, as runc binds them.
@test "a cgroup mount without a cgroup namespace shows only the container's own cgroup, read-only unless rw" {
	local api opt line
	for api in new-api mount-syscall; do
		unset MOAT_TEST_FORCE_MOUNT_FALLBACK
		[[ $api == mount-syscall ]] && export MOAT_TEST_FORCE_MOUNT_FALLBACK=1
		for opt in none rw; do
			make_bundle "$TEST_DIR/bundle-$api-$opt"
			export MOAT_TEST_POLICY=$BATS_TEST_DIRNAME/../../contrib/policy/compat.json
			cfg_set '.linux.namespaces |= map(select(.type != "user" and .type != "cgroup"))
				| del(.linux.uidMappings, .linux.gidMappings)
				| .mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup",
					options: (["nosuid", "noexec", "nodev"] + (if $o == "rw" then ["rw"] else [] end))}]' \
				--arg o "$opt"
			run_sh 'cat /sys/fs/cgroup/pids/pids.max
				awk '"'"'$5 ~ /^\/sys\/fs\/cgroup\/[a-z]+$/ { print $4, $5, $6 }'"'"' /proc/self/mountinfo'
			assert_success
			assert_line --index 0 1024
			[[ ${#lines[@]} -gt 2 ]] || fail "no hierarchy is mounted: $output"
			for line in "${lines[@]:1}"; do
				if [[ $api == mount-syscall && $line == '/ '* ]]; then
					continue # mount(2) leaves the whole hierarchy beneath, covered
				fi
				[[ ${line%% *} == "/moat/$CID" ]] || fail "$api $opt: not the container's cgroup: $line"
				if [[ $opt == rw ]]; then
					[[ $line =~ \ rw, ]] || fail "$api $opt: not read-write: $line"
				else
					[[ $line =~ \ ro, ]] || fail "$api $opt: not read-only: $line"
				fi
			done
		done
	done
}

# Issue 14 (27): every tmpfs moat makes is bounded in inodes, one per 4 KiB page of its size:
# the default spec's /tmp, /dev/shm and /dev (16384 for 64 MiB), a masked directory's (one:
# its root) and the cgroup mount's tmpfs (64); /tmp refuses a file past its bound.
@test "every tmpfs moat makes has an inode bound of one inode per page of its size" {
	make_bundle
	cfg_set '.mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup", options: ["ro"]}]'
	run_sh 'stat -f -c "%n %c" /tmp /dev/shm /dev /sys/firmware /sys/fs/cgroup
		i=0; while [ $i -lt 16384 ] && printf "" 2>/dev/null >/tmp/f$i; do i=$((i + 1)); done
		echo "files in /tmp: $i"'
	assert_success
	assert_line --index 0 '/tmp 16384'
	assert_line --index 1 '/dev/shm 16384'
	assert_line --index 2 '/dev 16384'
	assert_line --index 3 '/sys/firmware 1'
	assert_line --index 4 '/sys/fs/cgroup 64'
	# the root directory takes one inode
	assert_line --index 5 'files in /tmp: 16383'
}
