#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# End-to-end `run --rm IMAGE true` through real engines, with moat, crun and
# runc as the engine's runtime, interleaved, and each median with moat's ratio
# to the others.
#
#   contrib/bench/engine-bench.sh [-n N] [-m MOAT_BINARY] [-e ENGINES]
#
# ENGINES: a comma-separated list of podman, docker, containerd (default: all
# three). Each engine runs with its state in a temporary directory and the
# three runtimes registered side by side (Podman: [engine.runtimes]; Docker:
# --add-runtime; containerd: `ctr run --runc-binary`, the runc v2 shim's
# BinaryName); the image is a busybox-static rootfs (no registry). Every run
# is `--network none`. Everything runs in a private mount namespace with the
# cgroup2 hierarchy at /sys/fs/cgroup/unified unmounted, because crun 1.8
# refuses hybrid hosts; the host's mounts are not touched. Needs root, jq,
# and the engines' Debian packages (podman for containerd's image too).
set -euo pipefail

n=20
moat=${MOAT_BINARY:-$(cd "$(dirname "$0")/../.." && pwd)/moat}
engines=podman,docker,containerd
while getopts "n:m:e:h" opt; do
	case $opt in
	n) n=$OPTARG ;;
	m) moat=$OPTARG ;;
	e) engines=$OPTARG ;;
	*) sed -n '3,17p' "$0"; exit 2 ;;
	esac
done
if [ -z "${MOAT_BENCH_INNER:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "engine-bench: must run as root" >&2; exit 1; }
	exec env MOAT_BENCH_INNER=1 unshare -m --propagation private "$0" -n "$n" -m "$moat" -e "$engines"
fi
if mountpoint -q /sys/fs/cgroup/unified; then
	umount /sys/fs/cgroup/unified
fi

work=$(mktemp -d /tmp/moat-engine-bench.XXXXXX)
chmod 0755 "$work"
pids=()
cleanup() {
	local pid
	if command -v podman >/dev/null && [ -f "$work/containers.conf" ]; then
		podman_in rm -a -f -t 0 >/dev/null 2>&1 || true
	fi
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	done
	# the engines' shims (started by them for this run), named by this directory's sockets
	for pid in $(pgrep -f "$work/" || true); do
		[ "$pid" = "$$" ] || kill "$pid" 2>/dev/null || true
	done
	sleep 1
	# (the clean-up must not stop at a command that fails: set -e applies in a trap too)
	{ grep -F " $work/" /proc/self/mountinfo || true; } | awk '{ print $5 }' | sort -r |
		while read -r mp; do umount -l "$mp" 2>/dev/null || true; done
	rm -rf --one-file-system "$work" || true
}
trap cleanup EXIT

declare -A bin=([moat]=$moat [crun]=$(command -v crun || true) [runc]=$(command -v runc || true))
runtimes=()
for rt in moat crun runc; do
	if [ -x "${bin[$rt]}" ]; then runtimes+=("$rt"); else echo "# $rt: not installed, skipped"; fi
done

# the image: busybox-static, as a tar of its root
mkdir -p "$work/rootfs/bin" "$work/rootfs/etc" "$work/rootfs/tmp"
cp /bin/busybox "$work/rootfs/bin/"
for a in sh true sleep; do ln -s busybox "$work/rootfs/bin/$a"; done
echo 'root:x:0:0:root:/root:/bin/sh' >"$work/rootfs/etc/passwd"
tar -C "$work/rootfs" -cf "$work/busybox.tar" .
image=localhost/moat-bench:latest

podman_in() {
	CONTAINERS_CONF=$work/containers.conf CONTAINERS_STORAGE_CONF=$work/storage.conf podman "$@"
}
docker_in() {
	/usr/bin/docker --host "unix://$work/docker.sock" "$@"
}
ctr_in() {
	ctr --address "$work/containerd.sock" --namespace moat-bench "$@"
}

wait_for() {
	for _ in $(seq 300); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
	echo "engine-bench: gave up waiting for: $*" >&2
	return 1
}

setup_podman() {
	cat >"$work/containers.conf" <<-EOF
		[containers]
		default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
		[engine]
		cgroup_manager = "cgroupfs"
		events_logger = "file"
		events_logfile_path = "$work/podman-events.log"
		tmp_dir = "$work/podman-tmp"
		[engine.runtimes]
		moat = ["$moat"]
		crun = ["${bin[crun]}"]
		runc = ["${bin[runc]}"]
	EOF
	printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' \
		"$work/podman-storage" "$work/podman-run" >"$work/storage.conf"
	podman_in import "$work/busybox.tar" "$image" >/dev/null 2>&1
}

setup_docker() {
	dockerd --data-root "$work/docker" --exec-root "$work/docker-exec" \
		--pidfile "$work/dockerd.pid" --host "unix://$work/docker.sock" \
		--containerd-namespace moat-bench --containerd-plugins-namespace moat-bench-plugins \
		--iptables=false --ip6tables=false --ip-forward=false --ip-masq=false --bridge=none \
		--add-runtime "moat=$moat" --add-runtime "crun=${bin[crun]}" \
		>"$work/dockerd.log" 2>&1 </dev/null &
	pids+=("$!")
	wait_for docker_in version
	docker_in import "$work/busybox.tar" "$image" >/dev/null
}

setup_containerd() {
	cat >"$work/containerd.toml" <<-EOF
		version = 2
		root = "$work/containerd/root"
		state = "$work/containerd/state"
		disabled_plugins = ["io.containerd.grpc.v1.cri"]
		[grpc]
		  address = "$work/containerd.sock"
		[ttrpc]
		  address = "$work/containerd.sock.ttrpc"
	EOF
	containerd --config "$work/containerd.toml" >"$work/containerd.log" 2>&1 </dev/null &
	pids+=("$!")
	wait_for ctr_in version
	[ -f "$work/busybox-oci.tar" ] || setup_podman_image_for_containerd
	ctr_in images import --base-name localhost/moat-bench "$work/busybox-oci.tar" >/dev/null
}

setup_podman_image_for_containerd() {
	[ -f "$work/containers.conf" ] || setup_podman
	podman_in save --format oci-archive -o "$work/busybox-oci.tar" "$image" >/dev/null 2>&1
}

# one_run ENGINE RUNTIME I: the engine's `run --rm IMAGE true` with RUNTIME
one_run() {
	case $1 in
	podman) podman_in run --rm --network none --runtime "$2" "$image" true ;;
	docker) docker_in run --rm --network none --runtime "$2" "$image" true ;;
	containerd) ctr_in run --rm --runc-binary "${bin[$2]}" --runc-root "$work/runc-root" \
		"$image" "bench-$2-$3" true ;;
	esac
}

median() {
	sort -n "$1" | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

IFS=, read -r -a list <<<"$engines"
echo "runs per runtime and engine: $n (interleaved), kernel $(uname -r)"
for engine in "${list[@]}"; do
	"setup_$engine"
	usable=()
	for rt in "${runtimes[@]}"; do
		if one_run "$engine" "$rt" probe >"$work/out" 2>&1; then
			usable+=("$rt")
			: >"$work/times-$engine-$rt"
		else
			echo "# $engine: $rt cannot run here, skipped: $(tail -1 "$work/out")"
		fi
	done
	for ((i = 0; i < n; i++)); do
		for rt in "${usable[@]}"; do
			t0=$EPOCHREALTIME
			one_run "$engine" "$rt" "$i" >/dev/null
			t1=$EPOCHREALTIME
			echo "$t0 $t1" | awk '{ printf "%.1f\n", ($2 - $1) * 1000 }' >>"$work/times-$engine-$rt"
		done
	done
	declare -A med=()
	line="$engine:"
	for rt in "${usable[@]}"; do
		med[$rt]=$(median "$work/times-$engine-$rt")
		line+=" $rt ${med[$rt]} ms"
	done
	for other in crun runc; do
		if [ -n "${med[moat]:-}" ] && [ -n "${med[$other]:-}" ]; then
			line+=$(awk -v a="${med[moat]}" -v b="${med[$other]}" -v o="$other" \
				'BEGIN { printf ", moat/%s %.2f", o, a / b }')
		fi
	done
	echo "$line"
	unset med
done
