#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shared setup for moat's integration tests. Every .bats file does
# `load helpers` and gets:
#
#   setup_file   builds (once per run) a busybox-static rootfs cache
#   setup        a private state root ($MOAT_ROOT), a private temp dir
#                ($TEST_DIR, world-traversable) and a fresh container ID ($CID)
#   teardown     force-deletes every container under $MOAT_ROOT, kills the
#                pids recorded in pid files under $TEST_DIR (and their
#                children), lazily unmounts anything left under the temp
#                dirs (deepest first), then removes them
#
# A file that needs its own setup/teardown defines it and calls
# moat_setup / moat_teardown from it.
#
# The host's / is a shared mount: a mount leaked under a temp dir is visible
# on the host, and `rm -rf` of a dir with /proc bound under it walks into the
# host's /proc. Nothing here removes a directory that still has a mount
# under it.

# shellcheck disable=SC2154 # bats sets status, output, stderr, stderr_lines
bats_require_minimum_version 1.5.0

# bats-support and bats-assert, their sources read directly: their load.bash runs a dirname
# per file, and every test loads them again, which costs the cgroup v2 test host (TCG) most
# of a second per test.
for _lib in /usr/lib/bats/bats-support/src/{output,error,lang}.bash /usr/lib/bats/bats-assert/src/*.bash; do
	# shellcheck disable=SC1090 # Debian's bats-support and bats-assert
	source "$_lib" || return 1
done
unset _lib

: "${MOAT_BINARY:?MOAT_BINARY must be the absolute path of the moat binary}"
# moat's runtime, which MOAT_BINARY (the launcher, docs/launcher.md) starts: libexec/moat
# beside it in a build tree, ../libexec/moat/moat where it is installed
if [[ -z ${MOAT_RUNTIME:-} ]]; then
	MOAT_RUNTIME=$(dirname "$MOAT_BINARY")/libexec/moat
	[[ -x $MOAT_RUNTIME ]] || MOAT_RUNTIME=$(dirname "$MOAT_BINARY")/../libexec/moat/moat
fi

# How long the polling helpers wait for a state change, and how long one moat
# command may run before it is stopped. These bound a hang (a moat bug must
# not stall the suite); they are not performance assertions.
MOAT_WAIT_TRIES=${MOAT_WAIT_TRIES:-600} # x 0.1 s
MOAT_CMD_TIMEOUT=${MOAT_CMD_TIMEOUT:-60}

# --- the moat wrapper -----------------------------------------------------

# moat ARGS...: the binary under test with this test's private state root.
# While it runs, its pid is recorded in a pid file under $TEST_DIR, so a
# teardown after a hang or a test timeout can stop it and its children.
moat() {
	local pidf rc=0
	pidf=$(mktemp "$TEST_DIR/moat-cmd.XXXXXX") || return 1
	(
		echo "$BASHPID" >"$pidf"
		exec timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" --root "$MOAT_ROOT" \
			${MOAT_TEST_POLICY:+--policy "$MOAT_TEST_POLICY"} "$@"
	) || rc=$?
	rm -f "$pidf"
	return "$rc"
}

# use_policy_without RULE...: this test's moat commands run under the hardened policy with
# RULE... turned off (a policy file in $TEST_DIR), for a test whose config a policy rule
# refuses on purpose while its subject is something else, such as a rootful container
# (auto-userns) or a bind of a host path (deny-host-mounts). policy.bats tests the policy.
use_policy_without() {
	local rule rules=''
	for rule in "$@"; do
		rules+="${rules:+, }\"$rule\": {\"enabled\": false}"
	done
	MOAT_TEST_POLICY=$TEST_DIR/policy-without-$(IFS=-; echo "$*").json
	printf '{"rules": {%s}}\n' "$rules" >"$MOAT_TEST_POLICY"
	export MOAT_TEST_POLICY
}

# --- rootfs cache ---------------------------------------------------------

# build_rootfs_cache: a busybox-static rootfs shared by every file of this
# bats run, built once under $BATS_RUN_TMPDIR (or under $MOAT_TEST_CACHE,
# which tests/run-tests.sh sets so that all the files it runs share one).
build_rootfs_cache() {
	local base=${MOAT_TEST_CACHE:-$BATS_RUN_TMPDIR}
	ROOTFS_CACHE=$base/moat-rootfs
	export ROOTFS_CACHE
	[[ -e $ROOTFS_CACHE/.complete ]] && return 0

	local busybox=/bin/busybox tmp
	if [[ ! -x $busybox ]] || ldd "$busybox" >/dev/null 2>&1; then
		echo "# $busybox is missing or not static: install busybox-static" >&2
		return 1
	fi
	tmp=$(mktemp -d "$base/rootfs.XXXXXX")
	mkdir -p "$tmp"/{bin,dev,proc,sys,tmp,etc,root}
	cp "$busybox" "$tmp/bin/busybox"
	# every applet a link to busybox, made by one process (perl-base is essential in
	# Debian): a fork of ln for each of 400 applets took seconds under the cgroup v2 test
	# host's TCG, where every file builds this
	"$tmp/bin/busybox" --list | perl -ne 'BEGIN { $d = shift } chomp;
		next if $_ eq "busybox" || -l "$d/$_";
		symlink("busybox", "$d/$_") or die "symlink $_: $!\n"' -- "$tmp/bin" || return 1
	cat >"$tmp/etc/passwd" <<-'EOF'
		root:x:0:0:root:/root:/bin/sh
		nobody:x:65534:65534:nobody:/nonexistent:/bin/false
	EOF
	cat >"$tmp/etc/group" <<-'EOF'
		root:x:0:
		nogroup:x:65534:
	EOF
	chown -R 0:0 "$tmp"
	chmod -R a+rX,go-w "$tmp"
	chmod 1777 "$tmp/tmp"
	touch "$tmp/.complete"
	mv -T "$tmp" "$ROOTFS_CACHE" 2>/dev/null || rm -rf "$tmp"
	[[ -e $ROOTFS_CACHE/.complete ]]
}

# build_prog NAME: tests/integration/progs/NAME.c built with `cc -static`, once per run,
# into the shared cache (static, so it runs in a busybox rootfs); prints its path. Fails
# when there is no static C toolchain.
build_prog() {
	local name=$1 base=${MOAT_TEST_CACHE:-$BATS_RUN_TMPDIR} out
	out=$base/progs/$name
	if [[ ! -x $out ]]; then
		mkdir -p "$base/progs" || return 1
		cc -static -O2 -Wall -o "$out.$$" "$BATS_TEST_DIRNAME/progs/$name.c" || return 1
		mv "$out.$$" "$out"
	fi
	echo "$out"
}

# --- microVM tests ---------------------------------------------------------

# microvm_setup_file / microvm_setup: for the files that run microVMs (TCG: these machines'
# /dev/kvm cannot run a guest kernel). The guest kernel and the agent's initramfs come from
# MOAT_VM_DIR (tests/run-tests.sh points it at the build tree; `make vm-kernel` builds the
# kernel). The bundle is shaped as engines write it: no user namespace (moat adds one, with
# the rootfs idmapped), a writable root.
microvm_setup_file() {
	moat_setup_file
	: "${MOAT_VM_DIR:=$(dirname "$MOAT_BINARY")/vm}"
	export MOAT_VM_DIR
}

microvm_setup() {
	moat_setup
	# where microVMs are not run at all (the cgroup v2 test host): why
	[[ -z ${MOAT_TEST_NO_MICROVM:-} ]] || skip "$MOAT_TEST_NO_MICROVM"
	[[ -r $MOAT_VM_DIR/moat-guest-kernel ]] ||
		skip "no guest kernel in $MOAT_VM_DIR (build it with make vm-kernel)"
	[[ -r $MOAT_VM_DIR/moat-initramfs ]] ||
		skip "no guest initramfs in $MOAT_VM_DIR (built by make)"
	command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed"
	make_bundle "$TEST_DIR/bundle"
	cfg_set '.annotations["moat.isolation"] = "microvm" | .annotations["moat.vm.accel"] = "tcg"
		| .root.readonly = false | .linux.namespaces |= map(select(.type != "user"))
		| del(.linux.uidMappings, .linux.gidMappings)'
}

# --- per-test setup and teardown ------------------------------------------

moat_setup_file() {
	build_rootfs_cache
}

moat_setup() {
	if ((EUID != 0)); then
		skip "integration tests need root"
	fi
	TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/moat-test.XXXXXX")
	# The container's root is an unprivileged host uid: let it reach the
	# bundle the way it would reach one under /run/containerd.
	chmod 0755 "$TEST_DIR"
	MOAT_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/moat-root.XXXXXX")
	CID=moat-test-$BATS_SUITE_TEST_NUMBER-$RANDOM
	BUNDLE=
	CONFIG=
	CONTAINER_STDIN=
	MOAT_TEST_POLICY=
	export TEST_DIR MOAT_ROOT CID BUNDLE CONFIG CONTAINER_STDIN MOAT_TEST_POLICY
	# No test reads the terminal by accident.
	exec </dev/null
}

# mounts_under DIR...: mount points at or below each DIR, deepest first.
mounts_under() {
	local dir mp
	local -a found=()
	while read -r _ _ _ _ mp _; do
		printf -v mp '%b' "${mp//\\/\\0}" # mountinfo escapes as \040
		for dir in "$@"; do
			[[ -n $dir ]] || continue
			if [[ $mp == "$dir" || $mp == "$dir"/* ]]; then
				found+=("$mp")
				break
			fi
		done
	done </proc/self/mountinfo
	((${#found[@]} > 0)) || return 0
	printf '%s\n' "${found[@]}" | sort -r -u
}

# unmount_under DIR...: lazily unmount everything below DIR, deepest first,
# until nothing is left (stacked mounts need more than one pass).
unmount_under() {
	local pass mp left
	for ((pass = 0; pass < 8; pass++)); do
		left=$(mounts_under "$@")
		[[ -z $left ]] && return 0
		while IFS= read -r mp; do
			umount -l "$mp" 2>/dev/null || true
		done <<<"$left"
	done
	[[ -z $(mounts_under "$@") ]]
}

# known_container_ids: what `moat list -q` reports, plus any directory in
# the state root that list may have missed.
known_container_ids() {
	local d
	timeout -k 5 30 "$MOAT_BINARY" --root "$MOAT_ROOT" list -q </dev/null 2>/dev/null || true
	for d in "$MOAT_ROOT"/*; do
		[[ -d $d ]] && basename "$d"
	done
	return 0
}

# process_tree PID: PID and all its live descendants.
process_tree() {
	local root=$1 f stat pid rest ppid i
	local -A children=()
	local -a tree=("$root")
	for f in /proc/[0-9]*/stat; do
		read -r stat 2>/dev/null <"$f" || continue
		pid=${stat%% *}
		rest=${stat##*) }
		ppid=${rest#* }
		ppid=${ppid%% *}
		children[$ppid]+=" $pid"
	done
	for ((i = 0; i < ${#tree[@]}; i++)); do
		# shellcheck disable=SC2206 # split the list of child pids
		tree+=(${children[${tree[i]}]:-})
	done
	printf '%s\n' "${tree[@]}"
}

# kill_recorded_pids DIR: SIGKILL each pid named by a DIR/*.pid file (pid
# files the test passed to moat) or a DIR/moat-cmd.* file (the wrapper's, for
# moat commands still running), and the descendants of each.
kill_recorded_pids() {
	local f pid p
	for f in "$1"/*.pid "$1"/moat-cmd.*; do
		[[ -f $f ]] || continue
		pid=$(tr -cd '0-9' <"$f")
		[[ -n $pid ]] || continue
		((pid > 1)) || continue
		for p in $(process_tree "$pid"); do
			kill -KILL "$p" 2>/dev/null
		done
	done
	return 0
}

moat_teardown() {
	local id rc=0
	local -a dirs=()

	if [[ -n ${MOAT_ROOT:-} && -d $MOAT_ROOT ]]; then
		while IFS= read -r id; do
			[[ -n $id ]] || continue
			timeout -k 5 30 "$MOAT_BINARY" --root "$MOAT_ROOT" delete --force "$id" \
				>/dev/null 2>&1 </dev/null || true
		done < <(known_container_ids | sort -u)
		dirs+=("$MOAT_ROOT")
	fi
	if [[ -n ${TEST_DIR:-} && -d $TEST_DIR ]]; then
		kill_recorded_pids "$TEST_DIR"
		dirs+=("$TEST_DIR")
	fi
	((${#dirs[@]} > 0)) || return 0

	if ! unmount_under "${dirs[@]}"; then
		echo "# teardown: mounts remain, not removing ${dirs[*]}:" >&2
		mounts_under "${dirs[@]}" >&2
		return 1
	fi
	rm -rf --one-file-system "${dirs[@]}" || rc=1
	return "$rc"
}

setup_file() {
	moat_setup_file
}

setup() {
	moat_setup
}

teardown() {
	moat_teardown
}

# --- bundles and config ---------------------------------------------------

# make_bundle [DIR]: a fresh bundle (default $TEST_DIR/bundle) with a copy of
# the cached rootfs and moat's default config.json, made non-interactive
# (process.terminal=false) and given a user namespace of its own mapping
# container ids 0-65535 to host ids 100000-165535: the shape most tests are
# about (moat spec itself names none, leaving it to the policy's auto-userns, as
# engines' configs do; spec.bats tests that). Sets BUNDLE and CONFIG to it.
make_bundle() {
	local dir=${1:-$TEST_DIR/bundle}
	mkdir -p "$dir"
	chmod 0755 "$dir"
	cp -a "$ROOTFS_CACHE" "$dir/rootfs"
	rm -f "$dir/rootfs/.complete"
	"$MOAT_BINARY" spec --bundle "$dir" || return 1
	BUNDLE=$dir
	CONFIG=$dir/config.json
	# (a spec that already names one, as older moats wrote it, is left as it is)
	cfg_set '.process.terminal = false
		| if any(.linux.namespaces[]; .type == "user") then . else
			.linux.namespaces += [{type: "user"}]
			| .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
			| .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}] end'
}

# cfg_set FILTER [JQ OPTIONS...]: edit $CONFIG in place with jq, e.g.
#   cfg_set '.process.env += [$e]' --arg e FOO=bar
cfg_set() {
	local filter=$1 tmp
	shift
	tmp=$(mktemp "$CONFIG.XXXXXX") || return 1
	if jq "$@" "$filter" "$CONFIG" >"$tmp"; then
		mv "$tmp" "$CONFIG"
	else
		rm -f "$tmp"
		return 1
	fi
}

# cfg_get FILTER: read from $CONFIG (raw output).
cfg_get() {
	jq -r "$1" "$CONFIG"
}

# cfg_args ARG...: set process.args (any characters, leading dashes too).
cfg_args() {
	local a list='' i=0
	local -a jqargs=()
	for a in "$@"; do
		jqargs+=(--arg "a$i" "$a")
		list+="${list:+,}\$a$i"
		i=$((i + 1))
	done
	cfg_set ".process.args = [$list]" "${jqargs[@]}"
}

# cfg_sh SCRIPT: process.args = sh -c SCRIPT.
cfg_sh() {
	cfg_args /bin/sh -c "$1"
}

# add_script NAME: write stdin as an executable /bin/NAME in $BUNDLE's rootfs.
add_script() {
	local path=$BUNDLE/rootfs/bin/$1
	rm -f "$path"
	cat >"$path"
	chmod 0755 "$path"
}

# --- running containers ---------------------------------------------------

# pid_file [ID] / out_file [ID] / err_file [ID] (default $CID): where a test records the
# container's host pid (teardown kills whatever pid such a file names), and
# the container's stdout / stderr for moat_create and moat_run_detached.
# shellcheck disable=SC2120 # the ID is optional
pid_file() {
	echo "$TEST_DIR/${1:-$CID}.pid"
}
# shellcheck disable=SC2120
out_file() {
	echo "$TEST_DIR/${1:-$CID}.out"
}
# shellcheck disable=SC2120
err_file() {
	echo "$TEST_DIR/${1:-$CID}.err"
}

# with_container_stdio CMD...: run CMD (a moat command that leaves a
# container behind) with stdin from $CONTAINER_STDIN (default /dev/null,
# opened read-write so a FIFO does not block), stdout and stderr to
# out_file/err_file of $CID, and bats' fd 3 closed. Use it inside bats' `run`
# (`run with_container_stdio moat create ...`): a detached container that
# inherited run's capture pipe would block run until the container exits.
with_container_stdio() {
	local rc=0
	"$@" 0<>"${CONTAINER_STDIN:-/dev/null}" >"$(out_file "$CID")" 2>"$(err_file "$CID")" 3>&- || rc=$?
	if ((rc != 0)); then
		echo "# '$1 $2' exited with status $rc; stderr:"
		cat "$(err_file "$CID")"
	fi >&2
	return "$rc"
}

# moat_create [FLAGS...]: `moat create` $CID from $BUNDLE with a pid file and
# the container's stdio as with_container_stdio sets it. moat's own
# messages land in err_file too.
moat_create() {
	with_container_stdio moat create --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$@" "$CID"
}

# moat_run_detached [FLAGS...]: `moat run --detach`, same conventions.
moat_run_detached() {
	with_container_stdio moat run --detach --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$@" "$CID"
}

# moat_create_started [FLAGS...]: create and start $CID.
moat_create_started() {
	moat_create "$@" && moat start "$CID"
}

# run_moat ARGS...: like bats' `run --separate-stderr moat ARGS...` (sets
# status, output, lines, stderr, stderr_lines), but captures through files:
# a container that moat leaves behind (create, run -d, or a command that was
# expected to fail and did not) inherits files, not bats' capture pipe,
# which would otherwise block the test until the container exits.
run_moat() {
	capture moat "$@"
}

# capture CMD...: run CMD as bats' `run --separate-stderr` does ($status, $output,
# $stderr, $lines, $stderr_lines), but through files and without fd 3, so that a process
# CMD leaves running (a container's, a sandbox's keeper) cannot hold up the test.
# shellcheck disable=SC2034 # status, output, lines... are read by bats-assert
capture() {
	local out=$TEST_DIR/capture.out err=$TEST_DIR/capture.err
	status=0
	"$@" >"$out" 2>"$err" 3>&- || status=$?
	output=$(cat "$out")
	stderr=$(cat "$err")
	mapfile -t lines <"$out"
	mapfile -t stderr_lines <"$err"
	rm -f "$out" "$err"
	return 0
}

# run_sh SCRIPT [RUN FLAGS...]: run SCRIPT with /bin/sh -c in a foreground
# container from $BUNDLE, through run_moat (sets $status, $output, $stderr).
run_sh() {
	local script=$1
	shift
	cfg_sh "$script" || return 1
	run_moat run --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$@" "$CID"
}

# state_of [ID]: `moat state` JSON.
state_of() {
	moat state "${1:-$CID}"
}

# status_of [ID]: the status field of `moat state`.
status_of() {
	moat state "${1:-$CID}" | jq -r .status
}

# retry CMD...: run CMD every 0.1 s until it succeeds (bounded).
retry() {
	local i
	for ((i = 0; i < MOAT_WAIT_TRIES; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	echo "# gave up waiting for: $*" >&2
	return 1
}

# status_is ID STATUS
status_is() {
	[[ $(status_of "$1" 2>/dev/null) == "$2" ]]
}

# wait_for_status STATUS [ID]
wait_for_status() {
	retry status_is "${2:-$CID}" "$1"
}

# wait_for_output PATTERN [FILE]: until FILE (default out_file of $CID) has a
# line matching the grep -E PATTERN.
wait_for_output() {
	retry grep -qE -- "$1" "${2:-$(out_file "$CID")}"
}

# wait_for_file FILE: until FILE exists and is not empty.
wait_for_file() {
	retry test -s "$1"
}

# host_pid [ID]: the container's pid as written to its pid file.
host_pid() {
	tr -cd '0-9' <"$(pid_file "${1:-$CID}")"
}

# process_alive PID: PID exists and is not a zombie.
process_alive() {
	local stat
	[[ $1 =~ ^[0-9]+$ ]] || return 1
	read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
	stat=${stat##*) }
	[[ -n $stat && ${stat:0:1} != [ZX] ]]
}

process_gone() {
	! process_alive "$1"
}

# --- cgroups --------------------------------------------------------------

# cgroup_v2: the host has the unified hierarchy alone (cgroup2 at /sys/fs/cgroup, as
# under systemd); false on hybrid and v1 hosts, where each v1 controller has its own.
cgroup_v2() {
	[[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]]
}

# cgroup_dirs [CTRL...]: the directories a cgroup path lives under for the v1
# controllers CTRL..., one a line: /sys/fs/cgroup alone on cgroup v2, else
# /sys/fs/cgroup/CTRL for each (with no CTRL, every hierarchy mounted there).
cgroup_dirs() {
	local d
	if cgroup_v2; then
		echo /sys/fs/cgroup
	elif (($# > 0)); then
		printf '/sys/fs/cgroup/%s\n' "$@"
	else
		for d in /sys/fs/cgroup/*/; do
			echo "${d%/}"
		done
	fi
}

# cgroup_file CTRL V1FILE V2FILE [ID]: the file of container ID's (default $CID)
# cgroup /moat/ID that holds a setting: V1FILE in the v1 hierarchy of CTRL, or
# V2FILE on cgroup v2.
cgroup_file() {
	local file=$2
	cgroup_v2 && file=$3
	echo "$(cgroup_dirs "$1")/moat/${4:-$CID}/$file"
}

# --- assertions -----------------------------------------------------------

# refute_line_exact TEXT: no line of $output is exactly TEXT. (bats-assert's
# refute_line trips over an empty $output in this bats version.)
refute_line_exact() {
	if grep -qxF -- "$1" <<<"$output"; then
		fail "output has the line '$1':
$output"
	fi
}

# assert_line_exact TEXT: some line of $output is exactly TEXT.
assert_line_exact() {
	if ! grep -qxF -- "$1" <<<"$output"; then
		fail "output has no line '$1':
$output"
	fi
}

# assert_moat_error [REGEX]: after `run_moat ...` that should
# fail: non-zero status, exactly one stderr line, starting "moat: ", and
# matching REGEX (grep -E) when given.
assert_moat_error() {
	assert_failure
	if ((${#stderr_lines[@]} != 1)); then
		fail "expected exactly one line on stderr, got ${#stderr_lines[@]}:
$stderr"
	fi
	if [[ ${stderr_lines[0]} != "moat: "* ]]; then
		fail "stderr does not start with 'moat: ': $stderr"
	fi
	if [[ -n ${1:-} ]] && ! grep -qE -- "$1" <<<"$stderr"; then
		fail "stderr does not match /$1/: $stderr"
	fi
}

# distinctive_id ID: ID is a plain file name long enough to search for (in
# state dirs, command lines and cgroup names) without matching unrelated
# things; the odd IDs of the ID-rule tests are not.
distinctive_id() {
	[[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9_.+-]*$ && ${#1} -ge 8 && ${#1} -le 255 ]]
}

# pids_naming ID [BUNDLE]: live processes whose command line contains ID
# (when not empty), or whose cwd or root is in BUNDLE (when given), other
# than this shell.
pids_naming() {
	local id=$1 bundle=${2:-} f pid
	{
		[[ -n $id ]] && grep -l -a -F -e "$id" /proc/[0-9]*/cmdline 2>/dev/null
		if [[ -n $bundle ]]; then
			find /proc/[0-9]*/cwd /proc/[0-9]*/root -maxdepth 0 \
				\( -lname "$bundle" -o -lname "$bundle/*" \) 2>/dev/null
		fi
	} | while IFS= read -r f; do
		pid=${f#/proc/}
		pid=${pid%%/*}
		[[ $pid == "$$" || $pid == "$BASHPID" || $pid == "$PPID" ]] && continue
		process_alive "$pid" && echo "$pid"
	done | sort -u
}

# assert_no_residue ID [BUNDLE]: after a failed or finished command, nothing
# of container ID remains: no state directory, no live process with the pid
# it recorded, no process naming the ID or living in the bundle, no mount
# under the bundle, no cgroup directory named after the ID.
assert_no_residue() {
	local id=$1 bundle=${2:-$BUNDLE} pid leftover

	if distinctive_id "$id"; then
		if [[ -e $MOAT_ROOT/$id ]]; then
			fail "state directory $MOAT_ROOT/$id remains"
		fi
		if [[ -f $(pid_file "$id") ]]; then
			pid=$(host_pid "$id")
			if [[ -n $pid ]] && process_alive "$pid"; then
				fail "container process $pid (from the pid file) is still alive"
			fi
		fi
		# find fails when a directory vanishes mid-walk (another container's delete)
		leftover=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "*$id*" 2>/dev/null || true)
		if [[ -n $leftover ]]; then
			fail "cgroups remain: $leftover"
		fi
	else
		id=''
	fi
	for pid in $(pids_naming "$id" "$bundle"); do
		fail "process $pid remains: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
	done
	if [[ -n $bundle ]]; then
		leftover=$(mounts_under "$bundle")
		if [[ -n $leftover ]]; then
			fail "mounts remain under the bundle: $leftover"
		fi
	fi
}
