#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build, once, the disk image of moat's cgroup v2 test host (tests/testhost/README.md): a
# Debian 12 system with systemd as PID 1, which boots under QEMU and runs moat's tests.
#
#   tests/testhost/mkimage.sh
#
# The image is ${MOAT_VM_CACHE:-/var/cache/moat}/testhost/<key>/root.img, where <key> is the
# sha256 of this script and of guest-boot.sh (the recipe); its path is the last line on
# stdout, progress and errors go to stderr. A cached image is used as it is; building one
# removes the older recipes' images. Needs root (mmdebstrap's root mode) and mmdebstrap and
# mke2fs (Debian's mmdebstrap and e2fsprogs).
#
# What is in it:
#   - bookworm's minbase with systemd as init, dbus (the system's and each user's) and logind
#     (libpam-systemd), the
#     libraries moat links (yajl, libseccomp, libcap, libselinux, libsystemd), and what
#     moat's tests use: bats, jq, busybox-static, iproute2, procps, uidmap, and Podman with
#     conmon, catatonit and runc (its engine test, with the systemd cgroup manager, compares
#     moat with runc);
#   - no manual pages, info pages, translations or documentation;
#   - a user moattest (uid 1000) with subordinate ids and a lingering systemd user manager,
#     to which user@.service delegates the memory, pids and cpu controllers;
#   - moat-testhost.service, which at boot runs guest-boot.sh (copied in) to mount the
#     shares the host gives and run the tests they name, then reboots: with QEMU's
#     -no-reboot, that ends the VM;
#   - the journal in memory, no getty, hostname moat-testhost.
# The cgroup v2 hierarchy is systemd's default: unified, at /sys/fs/cgroup.

if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi

set -euo pipefail

prog=${0##*/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${MOAT_VM_CACHE:-/var/cache/moat}/testhost
suite=bookworm
image_size=3G
packages=(systemd systemd-sysv dbus dbus-user-session libpam-systemd
	libyajl2 libseccomp2 libcap2 libselinux1 libsystemd0 libarchive13
	bats bats-assert bats-support jq busybox-static iproute2 procps util-linux uidmap
	podman conmon catatonit runc)
dpkg_opts=('path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/info/*'
	'path-exclude=/usr/share/locale/*' 'path-exclude=/usr/share/doc/*')

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

note() {
	printf '%s: %s\n' "$prog" "$*" >&2
}

key=$(cat "$0" "$here/guest-boot.sh" | sha256sum)
key=${key%% *}
out=$cache/$key
if [ -f "$out/root.img" ]; then
	note "cached image $out/root.img"
	echo "$out/root.img"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || die "building the test host's image needs root (mmdebstrap's root mode)"
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing (Debian package mmdebstrap)"
command -v mke2fs >/dev/null || die "mke2fs is missing (Debian package e2fsprogs)"

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 || die "cannot lock $cache/.lock"
if [ -f "$out/root.img" ]; then
	echo "$out/root.img"
	exit 0
fi

tmp=$cache/.build.$$
# shellcheck disable=SC2317 # the EXIT trap's
cleanup() {
	local m
	findmnt -rn -o TARGET | while IFS= read -r m; do
		case $m in "$tmp"/*) printf '%s\n' "$m" ;; esac
	done | sort -r | while IFS= read -r m; do umount -l -- "$m" || true; done
	rm -rf --one-file-system -- "$tmp"
}
trap cleanup EXIT
rm -rf --one-file-system -- "$cache"/.build.*
mkdir -p "$tmp/root"

# The system's own configuration, written into the tree before the image is made.
customize() {
	local root=$1
	printf 'moat-testhost\n' >"$root/etc/hostname"
	: >"$root/etc/resolv.conf"
	mkdir -p "$root/etc/systemd/journald.conf.d" "$root/etc/systemd/system/user@.service.d"
	printf '[Journal]\nStorage=volatile\nRuntimeMaxUse=16M\n' \
		>"$root/etc/systemd/journald.conf.d/moat.conf"
	printf '[Service]\nDelegate=memory pids cpu\n' \
		>"$root/etc/systemd/system/user@.service.d/moat-delegate.conf"
	chroot "$root" useradd --create-home --uid 1000 --shell /bin/bash moattest
	printf 'moattest:100000:65536\n' >"$root/etc/subuid"
	printf 'moattest:100000:65536\n' >"$root/etc/subgid"
	mkdir -p "$root/var/lib/systemd/linger"
	touch "$root/var/lib/systemd/linger/moattest"
	install -m 0755 "$here/guest-boot.sh" "$root/usr/local/sbin/moat-testhost-boot"
	cat >"$root/etc/systemd/system/moat-testhost.service" <<-'UNIT'
		[Unit]
		Description=moat's tests on the cgroup v2 test host
		After=multi-user.target user@1000.service
		Wants=user@1000.service

		[Service]
		Type=oneshot
		ExecStart=/usr/local/sbin/moat-testhost-boot
		ExecStopPost=/usr/bin/systemctl --no-block reboot
		StandardOutput=journal+console
		StandardError=journal+console
		TimeoutStartSec=infinity

		[Install]
		WantedBy=multi-user.target
	UNIT
	chroot "$root" systemctl enable moat-testhost.service
	chroot "$root" systemctl mask serial-getty@hvc0.service getty@tty1.service \
		systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer \
		e2scrub_reap.service 2>/dev/null || true
	printf '/dev/vda / ext4 rw,relatime 0 1\n' >"$root/etc/fstab"
}

args=(--variant=minbase --include="$(IFS=,; echo "${packages[*]}")"
	--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr)
for o in "${dpkg_opts[@]}"; do
	args+=(--dpkgopt="$o")
done
note "building the test host's system with mmdebstrap (log: $tmp/mmdebstrap.log)"
started=$SECONDS
# (without the caller's fds 3-9: see contrib/sandbox/mkrootfs-python.sh)
if ! mmdebstrap "${args[@]}" "$suite" "$tmp/root" </dev/null >"$tmp/mmdebstrap.log" 2>&1 \
	3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; then
	tail -n 30 "$tmp/mmdebstrap.log" >&2
	die "mmdebstrap failed"
fi
customize "$tmp/root"
note "making the ext4 image ($image_size, sparse)"
mke2fs -q -t ext4 -L moat-testhost -d "$tmp/root" "$tmp/root.img" "$image_size" ||
	die "mke2fs failed"
mkdir -p "$tmp/out"
mv "$tmp/root.img" "$tmp/out/root.img"
printf 'recipe %s\nbuilt %s\n' "$key" "$(date -u +%FT%TZ)" >"$tmp/out/info"
rm -rf -- "$out"
mv -T "$tmp/out" "$out"
# Older recipes' images go: the cache keeps one (a VM still booted from one keeps its file)
for old in "$cache"/*/; do
	[ "${old%/}" = "$out" ] || rm -rf -- "${old%/}"
done
note "built in $((SECONDS - started)) s: $out/root.img ($(du -h "$out/root.img" | cut -f1) used)"
echo "$out/root.img"
