#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# A microVM restored from a snapshot instead of booted (src/libmoat/vm/vm-snapshot.h,
# docs/microvm-snapshot.md): the first create with a given QEMU, kernel, initramfs and
# command line boots a guest to the agent's READY in its jail and saves it; every later
# create restores that file. Each test has a cache of its own (MOAT_VM_SNAPSHOT_DIR), so it
# sees the file made and used.

load helpers

setup_file() {
	microvm_setup_file
}

setup() {
	microvm_setup
	MOAT_VM_SNAPSHOT_DIR=$TEST_DIR/snapshots
	export MOAT_VM_SNAPSHOT_DIR
}

# snapshot_files: the cache's snapshots (not their locks), one per line.
snapshot_files() {
	find "$MOAT_VM_SNAPSHOT_DIR" -maxdepth 1 -type f -regextype posix-extended \
		-regex '.*/[0-9a-f]{64}' 2>/dev/null
}

# stream_at FILE: where a snapshot's migration stream starts, after the guest's RAM (a whole
# number of MiB; the stream is tens of KB).
stream_at() {
	echo $(($(stat -c %s "$1") / 1048576 * 1048576))
}

# qemu_of CID: the pid of the container's QEMU.
qemu_of() {
	pgrep -P "$(host_pid "$1")" qemu-system
}

@test "microvm snapshot: the first create saves one, read-only in a private cache; the state says moat.vm.boot=snapshot" {
	run_sh 'echo first'
	assert_success
	assert_output first
	run snapshot_files
	assert_equal "${#lines[@]}" 1
	assert_equal "$(stat -c %a "$MOAT_VM_SNAPSHOT_DIR")" 700
	assert_equal "$(stat -c %a "${lines[0]}")" 400
	first=${lines[0]}
	assert_equal "$(tail -c +$(($(stream_at "$first") + 1)) "$first" | head -c 4)" QEVM
	inode=$(stat -c %i "$first")

	# the second restores it: the same file, no other (it runs until killed: an echo could
	# have exited before the kill)
	CID=$CID-2
	cfg_sh 'sleep 600'
	moat_create_started
	run state_of
	assert_success
	assert_equal "$(jq -r '.annotations["moat.vm.boot"]' <<<"$output")" snapshot
	assert_equal "$(jq -r '.annotations["moat.isolation"]' <<<"$output")" microvm
	moat kill "$CID" KILL
	wait_for_status stopped
	moat delete "$CID"
	run snapshot_files
	assert_equal "${lines[*]}" "$first"
	assert_equal "$(stat -c %i "$first")" "$inode"
}

@test "microvm snapshot: restored guests get the host's entropy: their boot ids and urandom differ; their clock is the TSC" {
	script='cat /proc/sys/kernel/random/boot_id; head -c 16 /dev/urandom | od -An -tx1 | tr -d " "
		cat /sys/devices/system/clocksource/clocksource0/current_clocksource'
	# the first makes the snapshot; the next two are restored from it
	run_sh "$script"
	assert_success
	CID=$CID-a
	run_sh "$script"
	assert_success
	a=("${lines[@]}")
	CID=$CID-b
	run_sh "$script"
	assert_success
	b=("${lines[@]}")
	assert_equal "${#a[@]}" 3
	assert_equal "${#b[@]}" 3
	[[ ${a[0]} != "${b[0]}" ]] || fail "two restores share the boot id ${a[0]}"
	[[ ${a[1]} != "${b[1]}" ]] || fail "two restores read the same urandom bytes ${a[1]}"
	# not jiffies: a guest saved after losing its TSC hung every restore (clocksource-watchdog);
	# tsc-early until the kernel registers the TSC proper, a moment after boot
	[[ ${a[2]} =~ ^tsc(-early)?$ && ${b[2]} =~ ^tsc(-early)?$ ]] ||
		fail "the restored guests' clocks are ${a[2]} and ${b[2]}, not the TSC"
}

@test "microvm snapshot: moat.vm.boot=cold boots without the cache, and the state says cold" {
	cfg_set '.annotations["moat.vm.boot"] = "cold"'
	moat_create_started
	run state_of
	assert_success
	assert_equal "$(jq -r '.annotations["moat.vm.boot"]' <<<"$output")" cold
	[[ ! -e $MOAT_VM_SNAPSHOT_DIR ]] || fail "a cold boot made $MOAT_VM_SNAPSHOT_DIR"
}

@test "microvm snapshot: a bad moat.vm.boot is refused, naming the annotation" {
	cfg_set '.annotations["moat.vm.boot"] = "warm"'
	run_sh true
	assert_moat_error "annotations.moat.vm.boot: 'warm' is not cold or snapshot"
	assert_no_residue "$CID"
}

@test "microvm snapshot: moat.vm.boot=snapshot with the egress tunnel is refused, naming the annotation" {
	cfg_set '.annotations["moat.vm.boot"] = "snapshot" | .annotations["moat.egress.allow"] = "up.test:80"'
	run_sh true
	assert_moat_error "annotations.moat.vm.boot=snapshot: a microVM with the egress tunnel boots cold"
	assert_no_residue "$CID"
	[[ -z $(snapshot_files) ]] || fail "a snapshot was made: $(snapshot_files)"
}

@test "microvm snapshot: a damaged snapshot fails with one line naming the file, and nothing is left" {
	run_sh true
	assert_success
	file=$(snapshot_files)
	[[ -n $file ]]
	at=$(stream_at "$file")
	# no migration stream at all: refused before QEMU sees it
	chmod 600 "$file"
	head -c 4096 /dev/zero >"$file"
	CID=$CID-zero
	run_sh true
	assert_moat_error "the snapshot $file is damaged .*delete it, or set annotations.moat.vm.boot=cold"
	assert_no_residue "$CID"
	# a stream cut short: QEMU cannot load it, and the last line says which file
	truncate -s "$at" "$file"
	printf 'QEVM\0\0\0\3' >>"$file"
	CID=$CID-cut
	run_sh true
	assert_failure
	[[ ${stderr_lines[-1]} == "moat: microvm: QEMU could not restore the guest from the snapshot $file "* ]] ||
		fail "the last line does not name the snapshot: $stderr"
	assert_no_residue "$CID"
}

@test "microvm snapshot: the container's processes hold no writable fd of the snapshot, even the create that made it" {
	# a workload that stays: the default sh, with stdin /dev/null, ended the VM at once, and
	# on a loaded machine the VM was gone before the check (CI, 2026-12-07)
	cfg_sh 'sleep 600'
	moat_create_started
	file=$(snapshot_files)
	[[ -n $file ]]
	inode=$(stat -c %i "$file")
	pid=$(host_pid "$CID")
	found=0
	for p in $pid $(pgrep -P "$pid"); do
		for fd in /proc/"$p"/fd/*; do
			[[ $(stat -L -c %i "$fd" 2>/dev/null) == "$inode" ]] || continue
			found=$((found + 1))
			flags=$(awk '/^flags:/ { print $2 }' "/proc/$p/fdinfo/${fd##*/}")
			# O_ACCMODE: 0 is O_RDONLY
			(((8#$flags & 3) == 0)) || fail "process $p holds $fd with flags $flags"
		done
	done
	# QEMU reads it, and the supervisor holds it for a restart
	((found >= 1)) || fail "no process holds the snapshot"
}

@test "microvm snapshot: two creates at once with an empty cache make one snapshot and both run" {
	cfg_sh 'echo ran'
	moat run --bundle "$BUNDLE" "$CID-x" >"$TEST_DIR/x.out" 2>&1 &
	x=$!
	moat run --bundle "$BUNDLE" "$CID-y" >"$TEST_DIR/y.out" 2>&1 &
	y=$!
	wait "$x" || fail "the first run failed: $(cat "$TEST_DIR/x.out")"
	wait "$y" || fail "the second run failed: $(cat "$TEST_DIR/y.out")"
	assert_equal "$(cat "$TEST_DIR/x.out")" ran
	assert_equal "$(cat "$TEST_DIR/y.out")" ran
	run snapshot_files
	assert_equal "${#lines[@]}" 1
}

@test "microvm snapshot: snapshot-ram-private: a restored guest's memory is a copy of its own; the cached file is untouched" {
	cfg_set '.annotations["moat.vm.memory_mib"] = "256"'
	run_sh true
	assert_success
	file=$(snapshot_files)
	[[ -n $file ]]
	before=$(sha256sum <"$file")
	# the guest writes 64 MiB of its memory (its /dev/shm is in the guest's RAM)
	cfg_sh 'dd if=/dev/zero of=/dev/shm/fill bs=1M count=64 2>/dev/null && sleep 600'
	CID=$CID-fill
	moat_create_started
	qemu=$(qemu_of "$CID")
	[[ -n $qemu ]] || fail "no QEMU under $(host_pid "$CID")"
	shmem=0
	for ((i = 0; i < 600 && shmem < 65536; i++)); do
		sleep 0.1
		shmem=$(awk '/^RssShmem:/ { print $2 }' "/proc/$qemu/status")
	done
	((shmem >= 65536)) || fail "the guest's writes did not reach its memory: $shmem KiB"
	# QEMU maps the copy the supervisor made, shared with nobody, and not the cached file
	grep -q '/memfd:moat-vm-ram' "/proc/$qemu/maps" || fail "QEMU maps no moat-vm-ram memfd"
	! grep -qF "$file" "/proc/$qemu/maps" || fail "QEMU maps the cached snapshot"
	moat kill "$CID" KILL
	wait_for_status stopped
	moat delete "$CID"
	assert_equal "$(sha256sum <"$file")" "$before"
}

@test "microvm snapshot: restore-untouched-memory: a restored 256 MiB guest is not all resident, and the file keeps its RAM sparse" {
	cfg_sh 'sleep 600'
	cfg_set '.annotations["moat.vm.memory_mib"] = "256"'
	moat_create_started
	file=$(snapshot_files)
	[[ -n $file ]]
	# QEMU once read every page the stream said was zero, and each read allocated one here:
	# 308 MiB resident for a 256 MiB guest. Now only what the guest touches is.
	CID=$CID-2
	moat_create_started
	# an exec answered: the guest is restored and runs
	moat exec "$CID" true
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$(qemu_of "$CID")/status")
	((rss < 200 * 1024)) || fail "QEMU is resident for $rss KiB"
	# the RAM's pages of zeros are holes
	used=$(($(stat -c '%b * %B' "$file")))
	((used < 128 << 20)) || fail "the snapshot takes $used bytes on disk"
	assert_equal "$(stream_at "$file")" $((256 << 20))
}
