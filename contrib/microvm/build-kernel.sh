#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build moat's microVM guest kernel from Debian's linux-source-6.1 package.
#
#   build-kernel.sh --out DIR [--jobs N] [--fragment FILE --name NAME]
#
# Steps: extract /usr/src/linux-source-6.1.tar.xz into the cache, run
# `make tinyconfig`, merge guest-kernel.config (merge_config.sh -m), run
# `make olddefconfig`, check that every line of the fragment made it into
# the final .config, build, and copy the kernel to DIR/moat-guest-kernel.
# --fragment FILE merges one more fragment after it (checked the same way),
# and --name NAME names the image DIR/NAME instead: the cgroup v2 test host's
# kernel is the guest's with tests/testhost/testhost-kernel.config on top.
#
# The image is an uncompressed, stripped x86_64 vmlinux (ELF) that QEMU
# boots directly through its PVH entry point (-kernel FILE).
#
# Results are cached under ${MOAT_VM_CACHE:-/var/cache/moat}/kernel/<key>/,
# where <key> is the sha256 of the fragment, the linux-source-6.1 package
# version and the build settings below; a cached image is copied without
# building anything.

# Make runs this with $(SHELL), which may be dash: re-run under bash.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi

set -euo pipefail

readonly prog=${0##*/}
readonly pkg=linux-source-6.1
readonly tarball=/usr/src/$pkg.tar.xz
image_name=moat-guest-kernel

# Build-relevant settings. All of them are part of the cache key; bump
# recipe whenever the build steps below change what ends up in the image.
readonly recipe=1
readonly karch=x86_64
readonly ktarget=vmlinux
readonly kstrip=yes
readonly settings="recipe=$recipe arch=$karch target=$ktarget strip=$kstrip"

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

note() {
	printf '%s: %s\n' "$prog" "$*" >&2
}

usage() {
	printf 'usage: %s --out DIR [--jobs N] [--fragment FILE --name NAME]\n' "$prog"
}

out=
jobs=
extra=
while [ $# -gt 0 ]; do
	case $1 in
	--fragment) [ $# -ge 2 ] || die "--fragment needs a file"; extra=$2; shift 2 ;;
	--name) [ $# -ge 2 ] || die "--name needs a name"; image_name=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || die "--out needs a directory"; out=$2; shift 2 ;;
	--out=*) out=${1#--out=}; shift ;;
	--jobs|-j) [ $# -ge 2 ] || die "--jobs needs a number"; jobs=$2; shift 2 ;;
	--jobs=*) jobs=${1#--jobs=}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done
[ -n "$out" ] || { usage >&2; die "--out DIR is required"; }
if [ -z "$jobs" ]; then
	jobs=$(nproc 2>/dev/null || echo 1)
fi
case $jobs in
''|*[!0-9]*|0) die "--jobs must be a positive integer, not '$jobs'" ;;
esac

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fragments=("$script_dir/guest-kernel.config")
[ -n "$extra" ] && fragments+=("$(cd "$(dirname "$extra")" && pwd)/$(basename "$extra")")
for fragment in "${fragments[@]}"; do
	[ -r "$fragment" ] || die "config fragment not found: $fragment"
done
case $image_name in
'' | */* | .*) die "--name must be a file name, not '$image_name'" ;;
esac

# The source package: its version is part of the cache key.
pkg_version=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
pkg_status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
if [ -z "$pkg_version" ] || [ "$pkg_status" != installed ] || [ ! -r "$tarball" ]; then
	die "Debian package $pkg is not installed (it provides $tarball); install it with: apt-get install $pkg"
fi

key=$({
	for fragment in "${fragments[@]}"; do
		printf 'fragment\n'
		cat "$fragment"
	done
	# (the guest kernel's key stays as it was before there were others)
	[ "$image_name" = moat-guest-kernel ] || printf 'image %s\n' "$image_name"
	printf 'package %s %s\n' "$pkg" "$pkg_version"
	printf 'settings %s\n' "$settings"
} | sha256sum)
key=${key%% *}

cache_root=${MOAT_VM_CACHE:-/var/cache/moat}/kernel
entry=$cache_root/$key

install_image() {
	mkdir -p -- "$out" || die "cannot create output directory $out"
	cp -- "$entry/$image_name" "$out/.$image_name.tmp.$$" ||
		die "cannot write to $out"
	mv -f -- "$out/.$image_name.tmp.$$" "$out/$image_name"
}

# Fast path: a cached image needs no tools beyond coreutils.
if [ -f "$entry/$image_name" ]; then
	install_image
	note "cached kernel $key -> $out/$image_name"
	exit 0
fi

# Build tools, each with the Debian package that provides it.
missing=()
need_cmd() {
	command -v "$1" >/dev/null 2>&1 || missing+=("$1 (package $2)")
}
need_cmd make make
need_cmd gcc gcc
need_cmd ld binutils
need_cmd objcopy binutils
need_cmd strip binutils
need_cmd flex flex
need_cmd bison bison
need_cmd bc bc
need_cmd perl perl
need_cmd xz xz-utils
need_cmd tar tar
need_cmd flock util-linux
if command -v gcc >/dev/null 2>&1; then
	printf '#include <libelf.h>\n' | gcc -E -x c - >/dev/null 2>&1 ||
		missing+=("libelf.h (package libelf-dev)")
	printf '#include <stdio.h>\n' | gcc -E -x c - >/dev/null 2>&1 ||
		missing+=("C library headers (package libc6-dev)")
fi
if [ ${#missing[@]} -gt 0 ]; then
	pkgs=$(printf '%s\n' "${missing[@]}" | sed 's/.*(package \(.*\))/\1/' | sort -u | tr '\n' ' ')
	die "missing build tools: $(printf '%s, ' "${missing[@]}" | sed 's/, $//'); install them with: apt-get install ${pkgs% }"
fi

mkdir -p -- "$cache_root" 2>/dev/null ||
	die "cannot create cache directory $cache_root (set MOAT_VM_CACHE to a writable directory)"
[ -w "$cache_root" ] ||
	die "cache directory $cache_root is not writable (set MOAT_VM_CACHE to a writable directory)"

# One build at a time per cache: the source tree and build tree are shared.
exec 9>"$cache_root/.lock"
flock 9 || die "cannot lock $cache_root/.lock"

# Another build may have produced the image while we waited for the lock.
if [ -f "$entry/$image_name" ]; then
	install_image
	note "cached kernel $key -> $out/$image_name"
	exit 0
fi

# Source tree, extracted once per package version. The build tree is kept
# per package version too, so a changed fragment rebuilds incrementally.
src=$cache_root/src/$pkg-$pkg_version
build=$cache_root/build/$pkg-$pkg_version
# each image a build tree of its own, so that building one does not undo the other's
[ "$image_name" = moat-guest-kernel ] || build=$build-$image_name
if [ ! -f "$src/Makefile" ]; then
	note "extracting $tarball"
	rm -rf -- "$src" "$src.tmp"
	mkdir -p -- "$src.tmp"
	tar -xJf "$tarball" -C "$src.tmp" --strip-components=1 ||
		die "cannot extract $tarball"
	mv -- "$src.tmp" "$src"
fi
mkdir -p -- "$build"
log=$build/build.log
: >"$log"

kmake() {
	make -C "$src" O="$build" ARCH="$karch" \
		KBUILD_BUILD_USER=moat KBUILD_BUILD_HOST=moat "$@" >>"$log" 2>&1 || {
		tail -n 40 "$log" >&2
		die "make $* failed (full log: $log)"
	}
}

note "configuring (tinyconfig + $(for f in "${fragments[@]}"; do printf '%s ' "$(basename "$f")"; done))"
kmake tinyconfig
# merge_config.sh keeps its temporary files in the current directory: run
# it in the build tree so that the source tree stays untouched.
(cd "$build" && "$src/scripts/kconfig/merge_config.sh" -m -O "$build" \
	"$build/.config" "${fragments[@]}") >>"$log" 2>&1 ||
	die "merge_config.sh failed (full log: $log)"
kmake olddefconfig

# Every option a fragment sets must be in the final .config as written;
# every option it unsets must not be set at all.
bad=()
while IFS= read -r line; do
	case $line in
	CONFIG_*=*)
		grep -qxF -- "$line" "$build/.config" && continue
		opt=${line%%=*}
		;;
	'# CONFIG_'*' is not set')
		opt=${line#\# }
		opt=${opt%% *}
		grep -q "^$opt=" "$build/.config" || continue
		;;
	*) continue ;;
	esac
	final=$(grep -E "^($opt=|# $opt is not set)" "$build/.config" || true)
	bad+=("$line (final: ${final:-absent})")
done < <(cat "${fragments[@]}")
if [ ${#bad[@]} -gt 0 ]; then
	printf '  %s\n' "${bad[@]}" >&2
	die "${#bad[@]} fragment option(s) did not survive olddefconfig (missing dependencies?); final config: $build/.config"
fi

note "building $ktarget (make -j$jobs, log: $log)"
kmake -j"$jobs" "$ktarget"

# Publish the cache entry atomically: fill a temporary directory, rename.
tmp=$cache_root/.$key.tmp.$$
rm -rf -- "$tmp"
mkdir -p -- "$tmp"
if [ "$kstrip" = yes ]; then
	strip -o "$tmp/$image_name" "$build/$ktarget"
else
	cp -- "$build/$ktarget" "$tmp/$image_name"
fi
cp -- "$build/.config" "$tmp/config"
cat "${fragments[@]}" >"$tmp/fragments.config"
printf '%s\n' "package $pkg $pkg_version" "settings $settings" >"$tmp/info"
rm -rf -- "$entry"
mv -- "$tmp" "$entry"

install_image
note "built kernel $key -> $out/$image_name"
