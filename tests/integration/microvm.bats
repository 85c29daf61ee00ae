#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# microVM isolation (src/libmoat/vm/, src/guest/): the container's process runs under moat's
# own guest kernel in QEMU's microvm machine, with QEMU jailed. Every test here uses the TCG
# accelerator: these machines' /dev/kvm is a software nested KVM that cannot run a guest
# kernel (shared notes), and moat refuses kvm on them.
#
# The guest kernel and the agent's initramfs come from MOAT_VM_DIR (tests/run-tests.sh
# points it at the build tree; `make vm-kernel` builds the kernel).

load helpers

setup_file() {
	microvm_setup_file
}

setup() {
	microvm_setup
}

# count_above N: the workload's counter in /srv/count has passed N.
count_above() {
	[[ $(cat "$BUNDLE/rootfs/srv/count") -gt $1 ]]
}

guest_release() {
	# the config fragment builds from Debian's linux-source-6.1
	echo '^6\.1\.'
}

@test "microvm: output, stderr and exit codes come back from the guest" {
	run_sh 'echo out; echo err >&2; exit 3'
	assert_failure 3
	assert_output out
	assert_equal "$stderr" err
	# (a child: the workload is PID 1 of its PID namespace, which ignores even SIGKILL from
	# inside it, as in container mode)
	run_sh 'sh -c "kill -9 \$\$"; exit $?'
	assert_failure 137
}

@test "microvm: 24 MiB on stdout and on stderr at once arrive whole and in order" {
	# random bytes, so a lost, repeated or reordered piece shows; both streams at once, so
	# the frames of the two interleave on the port
	mkdir -p "$BUNDLE/rootfs/srv"
	head -c $((24 << 20)) /dev/urandom >"$BUNDLE/rootfs/srv/blob"
	cfg_sh 'cat /srv/blob & cat /srv/blob >&2; wait'
	moat run --bundle "$BUNDLE" "$CID" >"$TEST_DIR/out" 2>"$TEST_DIR/err"
	want=$(sha256sum <"$BUNDLE/rootfs/srv/blob")
	assert_equal "$(sha256sum <"$TEST_DIR/out")" "$want"
	assert_equal "$(sha256sum <"$TEST_DIR/err")" "$want"
}

@test "microvm: splice-overrun: a workload whose pipes hold 1 MiB floods both streams; all of it arrives and the guest lives" {
	# The agent splices output to the port without a copy. virtio_console's splice builds
	# its list for the whole pipe, and Linux 6.1 overran it (a NULL page, the guest kernel
	# dead) when the agent spliced part of a pipe. A workload grows its own pipes past the
	# 64 KiB of a frame here, so its pipes hold more than a frame: only the agent's staging
	# pipe, always emptied whole, goes to the port.
	prog=$(build_prog bigpipe-cat) || skip "cc -static is not available: cannot build the writer"
	mkdir -p "$BUNDLE/rootfs/srv"
	cp "$prog" "$BUNDLE/rootfs/srv/bigpipe-cat"
	head -c $((16 << 20)) /dev/urandom >"$BUNDLE/rootfs/srv/blob"
	cfg_sh '/srv/bigpipe-cat /srv/blob & /srv/bigpipe-cat /srv/blob 2; a=$?; wait $!; echo "$a $?" >/srv/status'
	moat run --bundle "$BUNDLE" "$CID" >"$TEST_DIR/out" 2>"$TEST_DIR/err" ||
		fail "status $?: $(tail -c 300 "$TEST_DIR/err" | tr -cd '[:print:]')"
	assert_equal "$(cat "$BUNDLE/rootfs/srv/status")" "0 0"
	want=$(sha256sum <"$BUNDLE/rootfs/srv/blob")
	assert_equal "$(sha256sum <"$TEST_DIR/out")" "$want"
	assert_equal "$(sha256sum <"$TEST_DIR/err")" "$want"
}

@test "microvm: uname -r is the guest kernel's, not the host's" {
	run_sh 'uname -r'
	assert_success
	assert_output --regexp "$(guest_release)"
	[[ $output != "$(uname -r)" ]] || fail "the guest runs the host's kernel $output"
}

@test "microvm: files written in the guest appear in the rootfs, and the other way round" {
	# (the config mounts a tmpfs of the guest's own on /tmp: this goes through /srv)
	mkdir -p "$BUNDLE/rootfs/srv"
	echo from-host >"$BUNDLE/rootfs/srv/host-file"
	run_sh 'cat /srv/host-file; echo from-guest >/srv/guest-file'
	[[ $status == 0 ]] || fail "status $status: $stderr"
	assert_output from-host
	assert_equal "$(cat "$BUNDLE/rootfs/srv/guest-file")" from-guest
}

@test "microvm: the host's processes are invisible in the guest" {
	run_sh 'cat /proc/[0-9]*/comm'
	assert_success
	assert_line cat
	# none of the host's: not this test, not moat, not QEMU
	refute_line --regexp '^(bash|bats.*|moat|qemu-system.*|timeout)$'
	# user space is the agent and the workload's few; the rest are the guest kernel's threads
	run_sh 'for p in /proc/[0-9]*; do head -c1 $p/cmdline; done | wc -c'
	assert_success
	((output <= 6)) || fail "$output user processes in the guest"
}

@test "microvm: the config's user and moat's default seccomp profile apply inside the guest" {
	cfg_set '.process.user = {uid: 1000, gid: 1000}'
	run_sh 'id -u; id -g; unshare -U true 2>&1; grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status'
	assert_success
	assert_line --index 0 1000
	assert_line --index 1 1000
	assert_line --index 2 'unshare: unshare(0x10000000): Function not implemented'
	assert_line --regexp '^NoNewPrivs:[[:space:]]+1$'
	assert_line --regexp '^Seccomp:[[:space:]]+2$'
}

# The agent once ignored both lists, and the guest's /proc/timer_list and /proc/interrupts
# were readable (tests/redteam/host-reach.bats found it).
@test "microvm: linux.maskedPaths and linux.readonlyPaths apply in the guest, as in a container" {
	mkdir -p "$BUNDLE/rootfs/srv/secret" "$BUNDLE/rootfs/srv/ro"
	echo hidden >"$BUNDLE/rootfs/srv/secret/key"
	echo hidden >"$BUNDLE/rootfs/srv/file"
	cfg_set '.linux.maskedPaths += ["/srv/secret", "/srv/file", "/srv/missing"]
		| .linux.readonlyPaths += ["/srv/ro"]'
	run_sh 'echo "timer_list: $(wc -c </proc/timer_list)"
		echo "interrupts: $(wc -c </proc/interrupts)"
		echo "firmware: $(ls -A /sys/firmware | wc -l)"
		echo "secret: $(ls -A /srv/secret | wc -l)"
		echo "file: $(wc -c </srv/file)"
		{ echo 1 >/proc/sys/kernel/domainname; } 2>&1
		{ touch /srv/ro/x; } 2>&1
		touch /srv/rw && echo rw-ok'
	assert_success
	assert_line 'timer_list: 0'
	assert_line 'interrupts: 0'
	assert_line 'firmware: 0'
	assert_line 'secret: 0'
	assert_line 'file: 0'
	assert_line --regexp 'domainname: Read-only file system'
	assert_line --regexp "/srv/ro/x.*Read-only file system"
	assert_line rw-ok
}

@test "microvm: moat kill reaches the workload; moat state shows the isolation and accelerator" {
	cfg_sh 'trap "echo got TERM; exit 7" TERM; echo ready; while :; do sleep 1; done'
	moat_run_detached
	wait_for_output ready
	run state_of
	assert_success
	assert_equal "$(jq -r '.annotations["moat.isolation"], .annotations["moat.vm.accel"]' <<<"$output" | tr '\n' ' ')" 'microvm tcg '
	moat kill "$CID" TERM
	retry grep -q 'got TERM' "$(out_file)"
	wait_for_status stopped
}

@test "microvm: exec runs in the guest, with exit codes, stdin and --detach" {
	cfg_sh 'echo ready; while :; do sleep 1; done'
	moat_run_detached
	wait_for_output ready
	run_moat exec "$CID" sh -c 'uname -r; exit 5'
	assert_failure 5
	assert_output --regexp "$(guest_release)"
	run bash -c "echo piped | '$MOAT_BINARY' --root '$MOAT_ROOT' exec '$CID' cat"
	assert_success
	assert_output piped
	run_moat exec --detach --pid-file "$TEST_DIR/exec.pid" "$CID" sh -c 'sleep 1; exit 4'
	assert_success
	local pid
	pid=$(cat "$TEST_DIR/exec.pid")
	# the pid is a host process that lives as long as the guest process, then exits with its code
	process_alive "$pid"
	run_moat exec "$CID" /no/such/program
	assert_moat_error 'exec /no/such/program: No such file or directory'
}

# Engines exec as soon as start returns, while the guest may still be booting.
@test "microvm: an exec right after start waits for the guest instead of failing" {
	cfg_sh 'while :; do sleep 1; done'
	moat_run_detached
	run_moat exec "$CID" sh -c 'echo first-exec; exit 6'
	assert_failure 6
	assert_output first-exec
}

guest_file_has() {
	grep -q -- "$2" "$BUNDLE/rootfs/srv/$1" 2>/dev/null
}

# An engine signals an exec'd process through the pid it was given (containerd's
# `task kill --exec-id`): the host process behind --detach passes the signal on.
@test "microvm: a signal to exec's process reaches the guest process; killing it kills the guest process" {
	mkdir -p "$BUNDLE/rootfs/srv"
	cfg_sh 'echo ready; while :; do sleep 1; done'
	moat_run_detached
	wait_for_output ready
	run_moat exec --detach --pid-file "$TEST_DIR/exec.pid" "$CID" \
		sh -c 'trap "echo got-TERM >/srv/term; exit 3" TERM; echo up >/srv/up; while :; do sleep 0.1; done'
	assert_success
	retry guest_file_has up up
	kill -TERM "$(cat "$TEST_DIR/exec.pid")"
	retry guest_file_has term got-TERM
	# SIGKILL cannot be passed on: the guest process goes with its host process
	run_moat exec --detach --pid-file "$TEST_DIR/exec2.pid" "$CID" \
		sh -c 'echo $$ >/srv/pid; while :; do sleep 0.1; done'
	assert_success
	retry test -s "$BUNDLE/rootfs/srv/pid"
	kill -KILL "$(cat "$TEST_DIR/exec2.pid")"
	retry guest_process_gone "$(cat "$BUNDLE/rootfs/srv/pid")"
}

guest_process_gone() {
	[[ $(moat exec "$CID" sh -c "kill -0 $1 2>/dev/null && echo alive || echo gone") == gone ]]
}

@test "microvm: a foreground exec passes its signals to the guest process and exits with its code" {
	cfg_sh 'echo ready; while :; do sleep 1; done'
	moat_run_detached
	wait_for_output ready
	"$MOAT_BINARY" --root "$MOAT_ROOT" exec "$CID" \
		sh -c 'trap "echo got-TERM; exit 4" TERM; echo up; while :; do sleep 0.1; done' \
		>"$TEST_DIR/fg.out" 2>&1 </dev/null &
	local pid=$! rc=0
	echo "$pid" >"$TEST_DIR/fg.pid"
	wait_for_output up "$TEST_DIR/fg.out"
	kill -TERM "$pid"
	wait "$pid" || rc=$?
	assert_equal "$rc" 4
	run cat "$TEST_DIR/fg.out"
	assert_output "up
got-TERM"
}

@test "microvm: exec --tty gets a terminal of the guest's, sized as the caller's" {
	cfg_sh 'echo ready; while :; do sleep 1; done'
	moat_run_detached
	wait_for_output ready
	run script -qec "stty rows 33 cols 101; '$MOAT_BINARY' --root '$MOAT_ROOT' exec --tty '$CID' sh -c 'tty; stty size'" /dev/null
	assert_success
	assert_output --partial /dev/pts/
	assert_output --partial '33 101'
}

@test "microvm: run --tty gives the workload a terminal of the guest's, sized as the caller's" {
	cfg_set '.process.terminal = true'
	cfg_sh 'tty; stty size; exit 6'
	run script -qec "stty rows 31 cols 97; '$MOAT_BINARY' --root '$MOAT_ROOT' run --bundle '$BUNDLE' '$CID'; echo status=\$?" /dev/null
	assert_output --partial /dev/pts/
	assert_output --partial '31 97'
	assert_output --partial status=6
}

@test "microvm: pause freezes the VM in the container's cgroup, resume thaws it" {
	cfg_sh 'i=0; while :; do i=$((i+1)); echo $i >/srv/count; sleep 0.2; done'
	mkdir -p "$BUNDLE/rootfs/srv"
	moat_run_detached
	retry test -s "$BUNDLE/rootfs/srv/count"
	moat pause "$CID"
	assert_equal "$(status_of)" paused
	local a
	a=$(cat "$BUNDLE/rootfs/srv/count")
	sleep 1
	assert_equal "$(cat "$BUNDLE/rootfs/srv/count")" "$a"
	moat resume "$CID"
	retry count_above "$a"
	assert_equal "$(status_of)" running
}

@test "microvm: QEMU runs jailed: an unprivileged uid, no capabilities, no view of the host's files" {
	cfg_sh 'echo ready; while :; do sleep 1; done'
	moat_run_detached
	wait_for_output ready
	local qemu
	qemu=$(pgrep -P "$(host_pid)" qemu-system)
	[[ -n $qemu ]] || fail "no QEMU under the supervisor"
	run grep -E '^(Uid|CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' "/proc/$qemu/status"
	assert_line --regexp '^Uid:[[:space:]]+([1-9][0-9]{4,})'
	refute_line --regexp '^Uid:[[:space:]]+0[[:space:]]'
	assert_line --regexp '^CapEff:[[:space:]]+0000000000000000$'
	assert_line --regexp '^CapBnd:[[:space:]]+0000000000000000$'
	assert_line --regexp '^NoNewPrivs:[[:space:]]+1$'
	assert_line --regexp '^Seccomp:[[:space:]]+2$'
	for p in home root etc/shadow etc/passwd var; do
		[[ ! -e /proc/$qemu/root/$p ]] || fail "QEMU's root has /$p"
	done
	[[ -e /proc/$qemu/root/rootfs/bin/busybox ]] || fail "QEMU's root has no rootfs to share"
}

@test "microvm: delete --force of a running VM leaves no process, socket, mount or cgroup" {
	cfg_sh 'echo ready; while :; do sleep 1; done'
	moat_run_detached
	wait_for_output ready
	local init qemu
	init=$(host_pid)
	qemu=$(pgrep -P "$init" qemu-system)
	moat delete --force "$CID"
	retry process_gone "$init"
	retry process_gone "$qemu"
	assert_no_residue "$CID"
	[[ ! -e $MOAT_ROOT/$CID ]] || fail "the state directory (and its exec socket) remains"
}

@test "microvm: a missing guest kernel fails create with one line naming it, and nothing is left" {
	MOAT_VM_DIR=$TEST_DIR/empty
	mkdir -p "$MOAT_VM_DIR"
	run_moat create --bundle "$BUNDLE" "$CID"
	assert_moat_error "^moat: microvm: the guest kernel $TEST_DIR/empty/moat-guest-kernel \\(build it with .make vm-kernel. and install moat\\): No such file or directory\$"
	assert_no_residue "$CID"
}

@test "microvm: a missing QEMU fails create with one line naming the package" {
	cfg_args true
	run unshare -m --propagation private bash -c "mount --bind /dev/null /usr/bin/qemu-system-x86_64 &&
		'$MOAT_BINARY' --root '$MOAT_ROOT' create --bundle '$BUNDLE' '$CID' 2>&1"
	assert_failure
	assert_output "moat: microvm: /usr/bin/qemu-system-x86_64 (install Debian's qemu-system-x86): Permission denied"
	assert_no_residue "$CID"
}

@test "microvm: kvm is refused on a host without hardware virtualization, naming tcg" {
	if grep -qw -e vmx -e svm /proc/cpuinfo && [[ ! -e /sys/module/kvm_pvm ]]; then
		skip "this host has hardware virtualization"
	fi
	cfg_set '.annotations["moat.vm.accel"] = "kvm"'
	run_moat create --bundle "$BUNDLE" "$CID"
	assert_moat_error 'moat\.vm\.accel=kvm: this host.s CPU has no hardware virtualization.*ask for moat\.vm\.accel=tcg'
	assert_no_residue "$CID"
}

@test "microvm: moat-vm runs every container as a microVM, whatever the annotation says" {
	ln -s "$MOAT_BINARY" "$TEST_DIR/moat-vm"
	cfg_set '.annotations["moat.isolation"] = "container"'
	cfg_sh 'uname -r'
	run "$TEST_DIR/moat-vm" --root "$MOAT_ROOT" run --bundle "$BUNDLE" "$CID"
	assert_success
	assert_output --regexp "$(guest_release)"
}

@test "microvm: the policy can make microVMs the default; a config may still ask for a container" {
	printf '{"microvm": {"default": true, "accel": "tcg"}}\n' >"$TEST_DIR/policy.json"
	MOAT_TEST_POLICY=$TEST_DIR/policy.json
	cfg_set 'del(.annotations["moat.isolation"], .annotations["moat.vm.accel"])'
	run_sh 'uname -r'
	assert_success
	assert_output --regexp "$(guest_release)"
	cfg_set '.annotations["moat.isolation"] = "container"'
	CID=$CID-c run_sh 'uname -r'
	assert_success
	assert_output "$(uname -r)"
}

# Issue 14 (1): the kernel leaves lo down in a new network namespace, the guest's too; the
# agent brings it up at boot, as runc does in a container's.
@test "microvm: the guest's lo is up: a TCP listener on 127.0.0.1 is reached from the guest" {
	# (the listener's stdin stays open: at EOF on it busybox nc may end the connection
	# before what the client sent has arrived; it then waits for the data, not for the
	# listener, which ends with the workload)
	cfg_sh 'ip link show lo
		sleep 60 | nc -l -p 7777 >/tmp/got &
		i=0
		until echo over-lo | nc 127.0.0.1 7777 2>/dev/null; do
			i=$((i + 1)); [ $i -lt 100 ] || { echo "no connection"; exit 9; }; sleep 0.1
		done
		i=0
		until [ -s /tmp/got ] || [ $i -ge 100 ]; do i=$((i + 1)); sleep 0.1; done
		cat /tmp/got'
	run_moat run --bundle "$BUNDLE" "$CID"
	assert_success
	assert_line --regexp '^1: lo: <LOOPBACK,UP,LOWER_UP>'
	assert_line over-lo
}

# Issue 14 (24): the agent took exec --tty's pty from the rootfs's /dev/ptmx, which the
# workload may replace ('unlock the pty: Inappropriate ioctl for device'); it now opens it
# in the container's devpts, held since before the workload ran.
@test "microvm: exec --tty gets a pty although the workload made /dev/ptmx a symlink to /dev/null" {
	cfg_sh 'rm /dev/ptmx && ln -s /dev/null /dev/ptmx && echo ready; while :; do sleep 1; done'
	moat_run_detached
	wait_for_output ready
	run script -qec "'$MOAT_BINARY' --root '$MOAT_ROOT' exec --tty '$CID' sh -c 'tty; readlink /dev/ptmx'" /dev/null
	assert_success
	assert_output --regexp '/dev/pts/[0-9]+'
	assert_output --partial /dev/null
}

# Issue 14 (29), CVE-2024-21626 in the guest: the agent's chdir(process.cwd) followed magic
# links (/proc/self/root, /proc/self/fd/N on an fd the agent holds). process.cwd is now
# resolved inside the root with RESOLVE_NO_MAGICLINKS, as container mode resolves it;
# ordinary symlinks still resolve, inside the root.
@test "microvm: process.cwd through a magic link is refused, by exec and by run; a symlink stays inside" {
	mkdir -p "$BUNDLE/rootfs/srv"
	ln -s ../../../../etc "$BUNDLE/rootfs/srv/up"
	cfg_sh 'echo ready; while :; do sleep 1; done'
	moat_run_detached
	wait_for_output ready
	local cwd
	for cwd in /proc/self/root /proc/self/cwd /proc/1/root /proc/self/fd/{3..10}; do
		run_moat exec --cwd "$cwd" "$CID" sh -c 'echo "ran in $(pwd -P)"'
		refute_output --partial 'ran in'
		assert_moat_error "process\\.cwd '$cwd'"
	done
	run_moat exec --cwd /srv/up "$CID" pwd -P
	assert_success
	assert_output /etc
	CID=$CID-run
	cfg_set '.process.cwd = "/proc/self/root"'
	cfg_sh 'echo "ran in $(pwd -P)"'
	run_moat run --bundle "$BUNDLE" "$CID"
	refute_output --partial 'ran in'
	assert_moat_error "process\\.cwd '/proc/self/root'"
	assert_no_residue "$CID"
}

# Issue 14 (26): the workload saw the agent and the guest's kernel threads although the config
# asks for a PID namespace. It now runs in one of its own in the guest, as PID 1; exec'd
# processes are made in it.
# Issue 15: the agent resolves paths inside the rootfs with container mode's own code
# (safe-path.c) instead of a resolver of its own, which refused a destination that is a
# dangling symlink. Now the guest makes the link's target, inside the rootfs, as container
# mode does; the ".." that would climb out stops at the rootfs.
@test "microvm: a mount destination that is a dangling symlink is made where it leads, inside the rootfs" {
	ln -s ../../../../../../made/here "$BUNDLE/rootfs/dangling"
	cfg_set '.mounts += [{destination: "/dangling", type: "tmpfs", source: "tmpfs"}]'
	run_sh 'grep -c " /made/here tmpfs " /proc/self/mounts; readlink /dangling'
	[[ $status == 0 ]] || fail "status $status: $stderr"
	assert_output "$(printf '1\n../../../../../../made/here')"
	[[ -d $BUNDLE/rootfs/made/here ]] || fail "no /made/here in the rootfs"
}

@test "microvm: the workload is PID 1 of its own PID namespace, and exec'd processes join it" {
	cfg_sh 'echo "pid=$$"; ps -o pid,args; echo ready; while :; do sleep 1; done'
	moat_run_detached
	wait_for_output ready
	run cat "$(out_file)"
	assert_line pid=1
	assert_line --regexp '^ +1 +/bin/sh -c echo "pid=\$\$"'
	refute_output --regexp 'kthreadd|kworker|/init'
	run_moat exec "$CID" sh -c 'echo "exec=$$"; tr "\0" " " </proc/1/cmdline; echo; ps -o pid,args'
	assert_success
	assert_line --regexp '^exec=[0-9]+$'
	refute_line exec=1
	assert_line --regexp '^/bin/sh -c echo "pid=\$\$"'
	refute_output --regexp 'kthreadd|kworker|/init'
	# the workload, its sleep, this sh and its ps: nothing else in the namespace
	local procs
	procs=$(grep -cE '^ +[0-9]+ ' <<<"$output")
	((procs <= 4)) || fail "$procs processes in the container's PID namespace: $output"
}

# Issue 14 (25, 29): the config's pids limit and CPU quota did not reach the guest (1,858
# forks under a limit of 1,024; a spinning workload under a 20% quota measured its CPU time
# at all of its wall time). The host's cgroup holds QEMU under the quota; inside the guest the
# workload and every exec'd process are made in a cgroup of the guest's with the config's
# pids.max and cpu.max (memory needs none: the guest is sized from the memory limit).
@test "microvm: the pids limit and CPU quota hold in a guest cgroup for the workload and exec; QEMU is in the host's" {
	cfg_set '.linux.resources = {pids: {limit: 16}, cpu: {quota: 20000, period: 100000}}
		| .mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup",
			options: ["nosuid", "noexec", "nodev"]}]'
	# the workload forks nothing once ready: the limit is reached below
	cfg_sh 'cat /proc/self/cgroup /sys/fs/cgroup/pids.max /sys/fs/cgroup/cpu.max; nproc
		echo ready; exec sleep 100000'
	moat_run_detached
	wait_for_output ready
	run cat "$(out_file)"
	assert_output "0::/
16
20000 100000
1
ready"
	# outside: QEMU is in the container's cgroup on the host, under the config's quota
	local qemu
	qemu=$(pgrep -P "$(host_pid)" qemu-system)
	[[ -n $qemu ]] || fail "no QEMU under the supervisor"
	run grep -E '^[0-9]+:cpu:' "/proc/$qemu/cgroup"
	assert_output "1:cpu:/moat/$CID"
	grep -qx "$qemu" "/sys/fs/cgroup/cpu/moat/$CID/cgroup.procs" || fail "QEMU is not in the cgroup"
	assert_equal "$(cat "/sys/fs/cgroup/cpu/moat/$CID/cpu.cfs_quota_us")" 20000
	# inside: an exec'd process is in the workload's cgroup, whose forks stop at 16 tasks
	run_moat exec "$CID" sh -c 'cat /proc/self/cgroup; grep -qx $$ /sys/fs/cgroup/cgroup.procs && echo in-cgroup
		(for i in $(seq 40); do sleep 1000 >/dev/null 2>&1 & done) 2>/dev/null
		read current </sys/fs/cgroup/pids.current; read events </sys/fs/cgroup/pids.events
		echo "current=$current $events"; kill -9 -1'
	assert_success
	assert_line --index 0 '0::/'
	assert_line --index 1 in-cgroup
	# forks were refused at the limit (pids.events counts them), and no more ran than it allows
	assert_line --regexp '^current=[0-9]+ max [1-9][0-9]*$'
	local current
	current=$(sed -n 's/^current=\([0-9]*\) .*/\1/p' <<<"$output")
	((current <= 16)) || fail "$current tasks in the cgroup under a limit of 16"
}

# update-reaches-guest: `moat update` of a microVM's pids limit or CPU quota wrote only the
# host's cgroup, where QEMU is: the workload, held by its cgroup in the guest, kept the limits
# it started with.
@test "microvm: update-reaches-guest: update --pids-limit and --cpu-quota change the guest's cgroup; -1 lifts them" {
	cfg_set '.linux.resources = {pids: {limit: 16}, cpu: {quota: 20000, period: 100000}}
		| .mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup",
			options: ["nosuid", "noexec", "nodev"]}]'
	cfg_sh 'echo ready; exec sleep 100000'
	# created, the guest does not run yet: refused, nothing changed
	run moat_create
	assert_success
	run_moat update --pids-limit 40 "$CID"
	assert_moat_error "update: microVM container '$CID' is created: the limits its guest holds \(pids, CPU quota, a pod member's memory\) change only while it runs"
	# the host's limit has room for the VMM's 160 tasks beside the workload's (vm-jail.h)
	assert_equal "$(cat "/sys/fs/cgroup/pids/moat/$CID/pids.max")" $((16 + 160))
	moat start "$CID"
	wait_for_output ready
	moat update --pids-limit 40 --cpu-quota 50000 "$CID"
	run_moat exec "$CID" cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/cpu.max
	assert_success
	assert_output "40
50000 100000"
	assert_equal "$(cat "/sys/fs/cgroup/pids/moat/$CID/pids.max")" $((40 + 160))
	# the saved config keeps the limit asked for
	assert_equal "$(jq .linux.resources.pids.limit "$MOAT_ROOT/$CID/config.json")" 40
	moat update --pids-limit -1 --cpu-quota -1 "$CID"
	run_moat exec "$CID" cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/cpu.max
	assert_success
	assert_output "max
max 100000"
	assert_equal "$(cat "/sys/fs/cgroup/pids/moat/$CID/pids.max")" max
}

# vmm-pids-room: the host's pids limit of a microVM was the workload's, and QEMU's and
# virtiofsd's threads count there too: under a limit of 8 virtiofsd could not start its
# threads and the VM died before the workload's first line. The guest holds the workload to
# the limit; the host's cgroup has room for the VMM beside it.
@test "microvm: vmm-pids-room: a cold VM under a pids limit of 8 runs, and its workload is held to 8" {
	[[ -x /usr/lib/qemu/virtiofsd ]] || skip "no /usr/lib/qemu/virtiofsd (qemu-system-common)"
	cfg_set '.annotations["moat.vm.boot"] = "cold" | .linux.resources = {pids: {limit: 8}}
		| .mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup",
			options: ["nosuid", "noexec", "nodev"]}]'
	cfg_sh 'cat /sys/fs/cgroup/pids.max
		(for i in $(seq 20); do sleep 1000 >/dev/null 2>&1 & done) 2>/dev/null
		read current </sys/fs/cgroup/pids.current; echo "current=$current"; kill -9 -1'
	run_moat run --bundle "$BUNDLE" "$CID"
	assert_line --index 0 8
	assert_line --regexp '^current=[1-8]$'
	refute_output --partial virtiofsd
}

# jail-devices-on-update: `moat update` with device rules reprogrammed a microVM's host
# cgroup, where its VMM runs, and allowed there again the devices the user's config lists,
# which are the guest's: the VMM's jail was given a device create never gave it (and a KVM
# VM's /dev/kvm, which the jail lists, was not allowed again).
@test "microvm: jail-devices-on-update: an update's device rules allow the jail's devices again, never the guest's" {
	cfg_set '.linux.devices = [{path: "/dev/fuse", type: "c", major: 10, minor: 229, fileMode: 438}]'
	cfg_sh 'echo ready; exec sleep 100000'
	moat_create_started
	wait_for_output ready
	local list=/sys/fs/cgroup/devices/moat/$CID/devices.list
	[[ -e $list ]] || skip "no v1 devices hierarchy on this host"
	run cat "$list"
	refute_output --partial "c 10:229"
	echo '{"devices": [{"allow": false, "access": "rwm"}]}' >"$BATS_TEST_TMPDIR/res.json"
	moat update --resources "$BATS_TEST_TMPDIR/res.json" "$CID"
	run cat "$list"
	assert_output --partial "c 1:3 rwm"
	refute_output --partial "c 10:229"
}

# Issue 15 (section 5): `moat update --memory` rewrote a microVM's cgroup without counting
# QEMU, charged to it beside the guest's memory: a lower limit could have the kernel OOM-kill
# QEMU rather than the workload. A limit below the guest's memory and QEMU's 64 MiB is refused
# with one line naming both. The guest's memory is the one it booted with (recorded in the
# state), even once an update has raised the limit in the saved config; a state without the
# record (from an older moat) gets what create computes from the saved config.
@test "microvm: update --memory below the guest's memory and QEMU's share is refused, naming both" {
	# 384 MiB: a guest of 320 MiB and QEMU's 64
	cfg_set '.linux.resources.memory = {limit: 402653184}'
	cfg_sh 'echo ready; exec sleep 100000'
	moat_run_detached
	wait_for_output ready
	local limit=/sys/fs/cgroup/memory/moat/$CID/memory.limit_in_bytes
	local needs='is below what this microVM needs: its guest has 320 MiB and QEMU takes 64 MiB beside it \(384 MiB\)$'
	run_moat update --memory 200m "$CID"
	assert_moat_error "^moat: update: linux\.resources\.memory\.limit 200 MiB $needs"
	assert_equal "$(cat "$limit")" 402653184
	# raised to 1 GiB, which the saved config now says: the guest still has its 320 MiB
	run_moat update --memory 1g "$CID"
	assert_success
	assert_equal "$(cat "$limit")" $((1 << 30))
	run_moat update --resources - "$CID" <<<'{"memory": {"limit": 402653183}}'
	assert_moat_error "limit 402653183 bytes $needs"
	assert_equal "$(cat "$limit")" $((1 << 30))
	# exactly what it needs is allowed
	run_moat update --memory 384m "$CID"
	assert_success
	assert_equal "$(cat "$limit")" 402653184
	# an older state, without the record: sized from the saved config (now 384 MiB) as create
	# sizes it
	local st=$MOAT_ROOT/$CID/state.json
	jq -e 'has("vmMemoryMib")' "$st"
	jq 'del(.vmMemoryMib)' "$st" >"$st.new" && mv "$st.new" "$st"
	run_moat update --memory 256m "$CID"
	assert_moat_error "limit 256 MiB $needs"
	assert_equal "$(cat "$limit")" 402653184
	assert_equal "$(status_of)" running
}

# Found by the Podman pod test (issue 18): Podman's infra image has no /proc, /dev or /sys,
# and its root directory, like every layer Podman stores, has mode 0555. QEMU serves the
# share without capabilities, so the guest could not make the mount points ("mount proc on
# /proc: create directory '/proc' in the container root: Permission denied"); the init makes
# them on the host side now, for a writable root as for a read-only one.
@test "microvm: a rootfs of mode 0555 without /proc, /dev or /sys boots: the mount points are made on the host side" {
	rm -rf "$BUNDLE/rootfs/proc" "$BUNDLE/rootfs/dev" "$BUNDLE/rootfs/sys"
	chmod 0555 "$BUNDLE/rootfs"
	cfg_sh 'grep -c " /proc .* - proc " /proc/self/mountinfo; ls -d /dev /sys'
	run_moat run --bundle "$BUNDLE" "$CID"
	chmod 0755 "$BUNDLE/rootfs"
	assert_success
	assert_equal "$output" $'1\n/dev\n/sys'
}
