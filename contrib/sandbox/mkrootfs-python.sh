#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build, once, the Debian 12 root filesystem with python3 that moat's sandbox
# demo and tests run programs in.
#
#   mkrootfs-python.sh [OUTDIR]
#
# OUTDIR is the root filesystem itself (default:
# /var/cache/moat/rootfs/python3-bookworm). A rootfs already there that was
# built by this recipe is used as it is; otherwise one is built with
# mmdebstrap from Debian's packages (the apt package of that name is
# installed when missing) and put in its place. The absolute path of the
# rootfs is the last line on stdout; progress and errors go to stderr.
# Needs root: mmdebstrap's root mode, and chown of the sandbox user's home.
#
# What is in it:
#   - the Essential:yes set of bookworm (+ updates and security: mmdebstrap
#     adds them by itself when no mirror is named, as the host's own apt
#     sources have them) and python3 with its whole standard library;
#   - merged /usr (/bin -> usr/bin, ...);
#   - no manual pages, info pages, translations or documentation except the
#     copyright files (dpkg path-exclude, kept in /etc/dpkg/dpkg.cfg.d);
#   - a user sandbox, uid 1000, gid 1000, home /home/sandbox (mode 0755,
#     owned by it), shell /bin/sh; python3 also runs as a uid without a
#     passwd entry (checked after the build);
#   - /etc/hostname "sandbox", an empty /etc/resolv.conf (the host's are
#     not carried in), and /etc/moat-rootfs naming the recipe it came from.
#   No /work or other mount point is made: the runtime makes its own.
#
# Why the essential variant with python3, measured on this project's machine
# (bookworm, dpkg excludes as below unless said otherwise; time includes
# the download, which dominates):
#
#   --variant=essential --include=python3-minimal    81 MB  21 s
#       python3-minimal lacks most of the standard library: json, shutil,
#       dataclasses, asyncio, unittest, sqlite3, ctypes, decimal, xml,
#       multiprocessing, urllib.request fail to import. Not a usable python.
#   --variant=essential --include=python3           102 MB  23 s   (chosen)
#   --variant=apt --include=python3                 119 MB  27 s
#       apt, gpgv and their libraries, of no use in a sandbox without network.
#   --variant=essential --include=python3, without the excludes: 141 MB.
#   --variant=essential --include=python3, without the merged-usr hook:
#       177 MB: init-system-helpers' "usrmerge | usr-is-merged" is then met
#       by usrmerge, which pulls in perl (libperl5.36 + perl-modules, 46 MB).
#   (The custom variant, without the essential set, is smaller but has no
#   dpkg, shell or coreutils for the maintainer scripts or a demo to use.)
#
# Concurrency and interruption: builds hold an flock on .NAME.lock beside
# OUTDIR, so two at once do not race (the second waits, then finds the
# first one's rootfs). A build fills .NAME.tmp.PID beside OUTDIR and renames
# it into place, so OUTDIR is either absent, the previous rootfs or the whole
# new one; a build that was killed leaves only that temporary directory,
# which the next build removes (unmounting anything mmdebstrap left mounted
# under it first). A rootfs from an older recipe is replaced by a rebuild:
# do not rebuild while a sandbox is running on it.

if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi

set -euo pipefail

readonly prog=${0##*/}
readonly default_out=/var/cache/moat/rootfs/python3-bookworm

# The recipe. All of it is part of the key written to /etc/moat-rootfs;
# bump recipe when the steps below change what ends up in the rootfs.
readonly recipe=1
readonly suite=bookworm
readonly variant=essential
readonly packages=python3
readonly hook_dir=/usr/share/mmdebstrap/hooks/merged-usr
readonly dpkg_opts=(
	'path-exclude=/usr/share/man/*'
	'path-exclude=/usr/share/info/*'
	'path-exclude=/usr/share/locale/*'
	'path-exclude=/usr/share/doc/*'
	'path-include=/usr/share/doc/*/copyright'
)
readonly user=sandbox uid=1000 gid=1000 home=/home/sandbox
# What the smoke test imports: a python3 that lacks one of these is broken.
readonly smoke_modules='json os shutil subprocess tempfile pathlib dataclasses hashlib sqlite3 asyncio unittest'

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

note() {
	printf '%s: %s\n' "$prog" "$*" >&2
}

usage() {
	printf 'usage: %s [OUTDIR]   (default OUTDIR: %s)\n' "$prog" "$default_out"
}

case ${1:-} in
-h | --help) usage; exit 0 ;;
-*) usage >&2; die "unknown option: $1" ;;
esac
[ $# -le 1 ] || { usage >&2; die "too many arguments"; }

out=$(realpath -m -- "${1:-$default_out}")
parent=$(dirname -- "$out")
name=$(basename -- "$out")
[ "$out" != / ] || die "OUTDIR cannot be /"
case $out in
*[[:space:]]*) die "OUTDIR must not contain white space: '$out'" ;;
esac

key=$({
	printf 'recipe %s\nsuite %s\nvariant %s\npackages %s\nhooks %s\n' \
		"$recipe" "$suite" "$variant" "$packages" "$hook_dir"
	printf 'dpkg %s\n' "${dpkg_opts[@]}"
	printf 'user %s %s %s %s\n' "$user" "$uid" "$gid" "$home"
} | sha256sum)
key=${key%% *}

# is_current DIR: DIR is a rootfs of this recipe.
is_current() {
	[ -f "$1/etc/moat-rootfs" ] && grep -qx "key=$key" "$1/etc/moat-rootfs"
}

done_with() {
	note "rootfs $1 ($(du -sh -- "$out" 2>/dev/null | cut -f1))"
	printf '%s\n' "$out"
	exit 0
}

# Fast path, without the lock: the rename that publishes a rootfs is atomic.
if is_current "$out"; then
	done_with cached
fi

# Never replace what this script did not build.
if [ -L "$out" ] || { [ -e "$out" ] && [ ! -d "$out" ]; }; then
	die "$out exists and is not a directory"
elif [ -d "$out" ] && [ ! -f "$out/etc/moat-rootfs" ] && [ -n "$(ls -A -- "$out")" ]; then
	die "$out is a directory that this script did not build: remove it or name another OUTDIR"
fi

[ "$(id -u)" -eq 0 ] || die "building the rootfs needs root (mmdebstrap's root mode, chown)"

# remove_tree DIR: remove DIR, which a killed mmdebstrap may have left with
# /proc, /sys or /dev mounted under it. Those are unmounted first, deepest
# first; --one-file-system keeps rm out of anything that stayed mounted.
remove_tree() {
	local dir=$1 m
	[ -e "$dir" ] || return 0
	findmnt -rn -o TARGET | while IFS= read -r m; do
		m=$(printf '%b' "$m") # findmnt -r escapes white space as \x20
		case $m in "$dir"/*) printf '%s\n' "$m" ;; esac
	done | sort -r | while IFS= read -r m; do
		umount -l -- "$m" || note "cannot unmount $m"
	done
	rm -rf --one-file-system -- "$dir"
}

tmp=
old=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [ -n "$tmp" ]; then remove_tree "$tmp"; fi
	if [ -n "$old" ]; then remove_tree "$old"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p -- "$parent" || die "cannot create $parent"
exec 9>"$parent/.$name.lock" || die "cannot open $parent/.$name.lock"
flock 9 || die "cannot lock $parent/.$name.lock"

# Another build may have finished while this one waited for the lock.
if is_current "$out"; then
	done_with "cached (built while waiting for the lock)"
fi

# Holding the lock, no other build runs: what is left of earlier ones is stale.
for stale in "$parent/.$name.tmp."* "$parent/.$name.old."*; do
	[ -e "$stale" ] || continue
	note "removing $stale, left by an interrupted build"
	remove_tree "$stale"
done

if ! command -v mmdebstrap >/dev/null 2>&1; then
	note "installing mmdebstrap (apt-get install mmdebstrap)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q mmdebstrap </dev/null >&2 || {
		apt-get update -q </dev/null >&2 &&
			apt-get install -y -q mmdebstrap </dev/null >&2
	} || die "cannot install mmdebstrap"
fi
[ -d "$hook_dir" ] || die "mmdebstrap's hook directory $hook_dir is missing (mmdebstrap too old?)"

tmp=$parent/.$name.tmp.$$
log=$parent/.$name.log
mkdir -- "$tmp"
args=(--variant="$variant" --include="$packages" --hook-dir="$hook_dir")
for o in "${dpkg_opts[@]}"; do
	args+=(--dpkgopt="$o")
done
note "building $out with mmdebstrap ${args[*]} $suite (log: $log)"
started=$SECONDS
# No mirror: mmdebstrap uses deb.debian.org with bookworm-updates and
# bookworm-security, the sources the host has. Without the caller's fds 3-9
# (bats holds several, and the lock is fd 9): mmdebstrap hands apt the lowest
# free fd for "cat >&N", which dash, running it, cannot parse above 9 ("Bad fd
# number": every build under bats failed so).
if ! mmdebstrap "${args[@]}" "$suite" "$tmp" </dev/null >"$log" 2>&1 \
	3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; then
	tail -n 30 -- "$log" >&2
	die "mmdebstrap failed (full log: $log)"
fi

# The sandbox user. The essential set has no shadow files (nor useradd):
# the entries go straight into passwd and group, with '*' like the system
# accounts base-passwd writes.
printf '%s:*:%s:%s:moat sandbox:%s:/bin/sh\n' "$user" "$uid" "$gid" "$home" >>"$tmp/etc/passwd"
printf '%s:*:%s:\n' "$user" "$gid" >>"$tmp/etc/group"
mkdir -p -- "$(dirname -- "$tmp$home")"
mkdir -m 0755 -- "$tmp$home"
chown "$uid:$gid" -- "$tmp$home"

# mmdebstrap copies the host's hostname and resolv.conf: not the sandbox's.
rm -f -- "$tmp/etc/hostname" "$tmp/etc/resolv.conf"
printf 'sandbox\n' >"$tmp/etc/hostname"
: >"$tmp/etc/resolv.conf"
chmod 0644 -- "$tmp/etc/hostname" "$tmp/etc/resolv.conf"

# Smoke test: python3 with its standard library, as the sandbox user and as
# a uid that has no passwd entry, with a bare environment.
smoke='import importlib, os, sys
for m in sys.argv[1].split():
    importlib.import_module(m)
print(os.getuid(), sys.version.split()[0])'
for ids in "$uid:$gid" 4242:4242; do
	got=$(chroot --userspec="$ids" --groups= "$tmp" /usr/bin/env -i PATH=/usr/bin:/bin \
		HOME="$home" python3 -I -c "$smoke" "$smoke_modules" 2>&1) ||
		die "python3 does not run as $ids in the new rootfs: $got"
	note "python3 as uid ${got%% *}: ok (python ${got#* })"
done
python_version=${got#* }

printf 'key=%s\nrecipe=%s\nsuite=%s\nvariant=%s\npackages=%s\npython=%s\n' \
	"$key" "$recipe" "$suite" "$variant" "$packages" "$python_version" >"$tmp/etc/moat-rootfs"

# Publish: the old rootfs (another recipe's) moves aside, the new one into place.
if [ -f "$out/etc/moat-rootfs" ]; then
	old=$parent/.$name.old.$$
	note "replacing $out (built by another recipe)"
	mv -T -- "$out" "$old"
elif [ -d "$out" ] && [ ! -L "$out" ]; then
	rmdir -- "$out" # checked empty before the build
fi
mv -T -- "$tmp" "$out"
tmp=
rm -f -- "$log"
note "built in $((SECONDS - started)) s"
done_with built
