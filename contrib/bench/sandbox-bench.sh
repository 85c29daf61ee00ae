#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `moat sandbox run` against `podman run --rm` and `docker run --rm` of the same
# busybox-static rootfs, interleaved, printed as a markdown table of medians
# with each engine's ratio to moat (container mode).
#
#   contrib/bench/sandbox-bench.sh [-n N] [-m N] [-s N] [--no-podman] [--no-docker] [--no-vm]
#
#   -n N  iterations of the per-run measurements (default 20)
#   -m N  of those, how many also run moat in a microVM, QEMU TCG (default 3)
#   -s N  repetitions of the 100-command session (default 3)
#
# What is measured:
#   run           the wall time of one whole run of /bin/true: the command, start to exit.
#   first output  for Podman and Docker: from the command's start until the first byte of
#                 `echo x` reaches the pipe. moat sandbox prints nothing until its result,
#                 at the end; its figure is from the command's start until the result's
#                 time.started (moat's own start-up, then time.setup_ms: created->started).
#                 time.started is taken just before moat execs the program into the
#                 sandbox, so it is a lower bound; in a microVM the guest boots after it
#                 (the boot falls in time.run_ms), so for the microVM it leaves the boot
#                 out. The row "program's end" (time.started + time.run_ms) is the upper
#                 bound: `echo x` has written its byte by then.
#   session       100 commands one after the other in one sandbox: `moat sandbox exec
#                 NAME -- /bin/true` (each prints its result) into a session made by
#                 `moat sandbox create`, and `exec /bin/true` into one running container for
#                 Podman and Docker. Making the sandbox or container, one untimed exec (it
#                 boots a microVM's guest) and removing it are outside the timed part.
#   deadline      moat only, -s times: a shell and a setsid daemon ignoring TERM under a 1 s
#                 --timeout; the result's run_ms minus 1000 is the time from the deadline
#                 until the command was over, all its processes killed. For a run and for
#                 an exec into a session (which kills all but the sandbox's init; a
#                 microVM is torn down).
#
# The limits are moat's defaults, given to all: 512 MiB of memory (no swap past it), 256
# pids, no network but loopback, user 1000:1000 in /work. What still differs:
#   - moat's root is the read-only rootfs under an overlay whose upper layer is a tmpfs of
#     256 MiB (--disk), so all of it is writable, and moat diffs it after the run. The
#     engines get --read-only and a 256 MiB tmpfs at /work, the closest they offer without
#     XFS project quotas (Podman adds tmpfs on /tmp, /var/tmp and /run: --read-only-tmpfs).
#   - moat gives each sandbox its own user namespace (host ids from its pool, idmapped
#     rootfs), its seccomp profile and no capabilities; the engines run the container as
#     host ids 1000:1000 with their default seccomp profile.
#   - moat enforces a 60 s timeout and a 1 MiB output limit, and collects the output and
#     the cgroup's counters into the result; the engines do none of that.
#   - Podman runs crun (cgroupfs manager), Docker runc; moat runs itself.
# Each engine has its storage and state in a temporary directory (Docker: its own dockerd,
# which starts its own containerd there); the image is the rootfs imported as a tar. moat
# sandbox keeps its state in /run/moat-sandbox, which `run` removes itself. Everything runs
# in a private mount namespace with the cgroup2 hierarchy at /sys/fs/cgroup/unified
# unmounted, because crun 1.8 refuses hybrid hosts; the host's mounts are not touched.
# MOAT_BINARY and MOAT_VM_DIR (default: the build tree's moat and vm/) name moat and its
# guest kernel. Needs root, jq, busybox-static, and the engines' Debian packages.
set -euo pipefail

n=20
m=3
s=3
podman=1
docker=1
vm=1
here=$(cd "$(dirname "$0")/../.." && pwd)
moat=${MOAT_BINARY:-$here/moat}
session_name=bench-$$ # moat's session sandbox
export MOAT_VM_DIR=${MOAT_VM_DIR:-$here/vm}
usage() { sed -n '3,11p' "$0"; exit 2; }
args=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	-n | -m | -s)
		[[ ${2:-} =~ ^[0-9]+$ ]] || usage
		case $1 in -n) n=$2 ;; -m) m=$2 ;; -s) s=$2 ;; esac
		shift 2
		;;
	--no-podman) podman=0; shift ;;
	--no-docker) docker=0; shift ;;
	--no-vm) vm=0; shift ;;
	*) usage ;;
	esac
done
((m <= n)) || m=$n
((vm)) || m=0

if [ -z "${MOAT_BENCH_INNER:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "sandbox-bench: must run as root" >&2; exit 1; }
	exec env MOAT_BENCH_INNER=1 unshare -m --propagation private "$0" "${args[@]}"
fi
if mountpoint -q /sys/fs/cgroup/unified; then
	umount /sys/fs/cgroup/unified
fi

work=$(mktemp -d /tmp/moat-sandbox-bench.XXXXXX)
chmod 0755 "$work"
pids=()
# the engines' parent cgroups that this run makes (they stay, empty, after the engines)
new_cgroups=()
for dir in /sys/fs/cgroup/*/docker /sys/fs/cgroup/*/libpod_parent; do
	[ -d "$dir" ] || new_cgroups+=("$dir")
done
cleanup() {
	local pid dir
	if [ -f "$work/containers.conf" ]; then
		podman_in rm -a -f -t 0 >/dev/null 2>&1 || true
	fi
	if [ -S "$work/docker.sock" ]; then
		docker_in rm -f bench-session >/dev/null 2>&1 || true
	fi
	"$moat" sandbox rm --force "$session_name" >/dev/null 2>&1 || true
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	done
	# what the engines started for this run (conmon, containerd and its shims), named by
	# this directory in their command lines
	for pid in $(pgrep -f "$work/" || true); do
		[ "$pid" = "$$" ] || kill "$pid" 2>/dev/null || true
	done
	sleep 1
	# (the clean-up must not stop at a command that fails: set -e applies in a trap too)
	{ grep -F " $work/" /proc/self/mountinfo || true; } | awk '{ print $5 }' | sort -r |
		while read -r mp; do umount -l "$mp" 2>/dev/null || true; done
	rm -rf --one-file-system "$work" || true
	for dir in "${new_cgroups[@]}"; do
		if [ -d "$dir" ]; then find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
	done
}
trap cleanup EXIT

# the rootfs: busybox-static with every applet, as tests/integration/helpers.bash builds it
busybox=/bin/busybox
if [ ! -x "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
	echo "sandbox-bench: $busybox is missing or not static: install busybox-static" >&2
	exit 1
fi
rootfs=$work/rootfs
mkdir -p "$rootfs"/{bin,dev,proc,sys,tmp,etc,root,work}
cp "$busybox" "$rootfs/bin/busybox"
for applet in $("$rootfs/bin/busybox" --list); do
	[ "$applet" = busybox ] || [ -e "$rootfs/bin/$applet" ] || ln -s busybox "$rootfs/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
	>"$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
chown -R 0:0 "$rootfs"
chmod -R a+rX,go-w "$rootfs"
chmod 1777 "$rootfs/tmp"
tar -C "$rootfs" -cf "$work/busybox.tar" .
image=localhost/moat-sandbox-bench:latest
limits=(--network none --memory 512m --memory-swap 512m --pids-limit 256 --user 1000:1000
	--read-only --tmpfs "/work:rw,size=256m,mode=1777" --workdir /work)

podman_in() {
	CONTAINERS_CONF=$work/containers.conf CONTAINERS_STORAGE_CONF=$work/storage.conf podman "$@"
}
docker_in() {
	/usr/bin/docker --host "unix://$work/docker.sock" "$@"
}

wait_for() {
	for _ in $(seq 300); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
	echo "sandbox-bench: gave up waiting for: $*" >&2
	return 1
}

setup_podman() {
	# (the limits engine-bench.sh gives too: Podman's default nofile is past what crun may
	# set here)
	cat >"$work/containers.conf" <<-EOF
		[containers]
		default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
		[engine]
		cgroup_manager = "cgroupfs"
		events_logger = "file"
		events_logfile_path = "$work/podman-events.log"
		tmp_dir = "$work/podman-tmp"
	EOF
	printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' \
		"$work/podman-storage" "$work/podman-run" >"$work/storage.conf"
	podman_in import --quiet "$work/busybox.tar" "$image" >/dev/null
}

setup_docker() {
	dockerd --data-root "$work/docker" --exec-root "$work/docker-exec" \
		--pidfile "$work/dockerd.pid" --host "unix://$work/docker.sock" \
		--containerd-namespace moat-bench --containerd-plugins-namespace moat-bench-plugins \
		--iptables=false --ip6tables=false --ip-forward=false --ip-masq=false --bridge=none \
		>"$work/dockerd.log" 2>&1 </dev/null &
	pids+=("$!")
	wait_for docker_in version
	docker_in import "$work/busybox.tar" "$image" >/dev/null
}

ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'; }
epoch() { date -d "$1" +%s.%N; }

# sandbox_run SYSTEM PROGRAM...: one `moat sandbox run`, its result in $work/result; its
# exit status is the program's (125 when moat failed)
sandbox_run() {
	local mode=()
	[ "$1" = moat ] || mode=(--isolation microvm --accel tcg)
	shift
	"$moat" sandbox run --rootfs "$rootfs" "${mode[@]}" --memory 512m --pids 256 --disk 256m \
		-- "$@" >"$work/result"
}
# (jq takes tens of ms to start: it reads the result after the clock has stopped)
check_result() { jq -e "$1" "$work/result" >/dev/null; }

# one_run SYSTEM: the wall time of one run of /bin/true, in ms
one_run() {
	local t0 t1
	t0=$EPOCHREALTIME
	case $1 in
	moat | moat-vm) sandbox_run "$1" /bin/true || return ;;
	*) "${1}_in" run --rm "${limits[@]}" "$image" /bin/true || return ;;
	esac
	t1=$EPOCHREALTIME
	if [[ $1 == moat* ]]; then check_result '.exit.reason == "exited"' || return; fi
	ms "$t0" "$t1"
}

# first_output SYSTEM: the time to the first output of `echo x`, in ms (see the top); for
# moat, the upper bound (the program's end) goes to $work/end
first_output() {
	local t0 started
	t0=$EPOCHREALTIME
	if [[ $1 == moat* ]]; then
		sandbox_run "$1" echo x || return
		check_result '.stdout.text == "x\n"' || return
		started=$(epoch "$(jq -r .time.started "$work/result")") || return
		awk -v a="$t0" -v b="$started" -v r="$(jq .time.run_ms "$work/result")" \
			'BEGIN { printf "%.1f\n", (b - a) * 1000 + r }' >"$work/end"
		ms "$t0" "$started"
		return
	fi
	rm -f "$work/first"
	"${1}_in" run --rm "${limits[@]}" "$image" echo x |
		{ IFS= read -r -n 1 _ && echo "$EPOCHREALTIME" >"$work/first" && cat >/dev/null; } || return
	ms "$t0" "$(<"$work/first")"
}

# deadline SYSTEM: for moat, how long after a 1 s timeout the command (a shell with a setsid
# daemon ignoring TERM) was over, every process of it gone: run_ms - 1000, from the result;
# the file deadline-session-SYSTEM gets the same for an exec into a session
deadline() {
	local mode=()
	[[ $1 == moat* ]] || return 0
	[ "$1" = moat ] || mode=(--isolation microvm --accel tcg)
	local prog=(sh -c "setsid sh -c 'trap \"\" TERM; exec sleep 300' & exec sleep 300")
	"$moat" sandbox run --rootfs "$rootfs" "${mode[@]}" --timeout 1s -- "${prog[@]}" \
		>"$work/result" && return 1
	check_result '.exit.reason == "timeout"' || return
	jq -r '(.time.run_ms - 1000) * 10 | round / 10' "$work/result"
	"$moat" sandbox create --rootfs "$rootfs" "${mode[@]}" "$session_name" >/dev/null || return
	"$moat" sandbox exec "$session_name" -- /bin/true >/dev/null || return
	"$moat" sandbox exec --timeout 1s "$session_name" -- "${prog[@]}" >"$work/result" && return 1
	check_result '.exit.reason == "timeout"' || return
	jq -r '(.time.run_ms - 1000) * 10 | round / 10' "$work/result" >>"$work/deadline-session-$1"
	"$moat" sandbox rm --force "$session_name" >/dev/null 2>&1 || true
}

# session SYSTEM: the wall time of 100 commands, in ms (see the top)
session() {
	local t0 t1 i
	case $1 in
	podman | docker)
		"${1}_in" run -d --name bench-session "${limits[@]}" "$image" sleep 100000 >/dev/null || return
		"${1}_in" exec bench-session /bin/true || return
		t0=$EPOCHREALTIME
		for ((i = 0; i < 100; i++)); do "${1}_in" exec bench-session /bin/true || return; done
		t1=$EPOCHREALTIME
		# (sleep, as pid 1, ignores SIGTERM: no grace period)
		if [ "$1" = podman ]; then podman_in rm -f -t 0 bench-session; else docker_in rm -f bench-session; fi >/dev/null
		;;
	moat | moat-vm)
		local mode=()
		[ "$1" = moat ] || mode=(--isolation microvm --accel tcg)
		"$moat" sandbox create --rootfs "$rootfs" "${mode[@]}" --memory 512m --pids 256 \
			--disk 256m "$session_name" >/dev/null || return
		"$moat" sandbox exec "$session_name" -- /bin/true >"$work/result" || return
		t0=$EPOCHREALTIME
		for ((i = 0; i < 100; i++)); do
			"$moat" sandbox exec "$session_name" -- /bin/true >"$work/result" || return
		done
		t1=$EPOCHREALTIME
		"$moat" sandbox rm "$session_name" >/dev/null || return
		;;
	esac
	ms "$t0" "$t1"
}

# measure FUNC SYSTEM FILE: FUNC's figure for SYSTEM, appended to FILE. A failed moat run
# (for a session: any of its 100) is noted in $work/failures, listed under the table, and
# the measurement is made again, up to 5 times, so that one failure does not lose the
# bench. (Seen: a moat older than the keeper's lock, run beside a newer one, has its
# sandboxes taken for abandoned and removed mid-run by the newer one's collector: "container
# '...' does not exist", "exec: the microVM's supervisor hung up".) An engine's failure
# ends the bench.
measure() {
	local tries=0 v
	while ! v=$("$1" "$2" 2>"$work/err"); do
		"$moat" sandbox rm --force "$session_name" >/dev/null 2>&1 || true
		echo "$2, $1: $(tail -1 "$work/err" | sed 's/run-[0-9a-f]*/run-.../')" >>"$work/failures"
		if [[ $2 != moat* ]] || ((++tries >= 5)); then
			cat "$work/err" "$work/failures" >&2
			return 1
		fi
	done
	echo "$v" >>"$3"
}

systems=(moat)
if ((vm && m > 0)); then systems+=(moat-vm); fi
# (not in a condition: set -e stops the bench at a failing setup, and the trap cleans up)
if ((podman)); then systems+=(podman); fi
if ((docker)); then systems+=(docker); fi
for sys in "${systems[@]}"; do
	case $sys in podman) setup_podman ;; docker) setup_docker ;; esac
done
usable=()
for sys in "${systems[@]}"; do
	if measure one_run "$sys" /dev/null 2>/dev/null && measure first_output "$sys" /dev/null 2>/dev/null; then
		usable+=("$sys")
		: >"$work/run-$sys"
		: >"$work/first-$sys"
		: >"$work/end-$sys"
		: >"$work/session-$sys"
		: >"$work/deadline-$sys"
		: >"$work/deadline-session-$sys"
	else
		echo "# $sys: cannot run here, skipped: $(tail -1 "$work/err")"
	fi
done
[ "${usable[0]:-}" = moat ] || { echo "sandbox-bench: moat sandbox run fails here" >&2; exit 1; }

for ((i = 0; i < n; i++)); do
	for sys in "${usable[@]}"; do
		[ "$sys" != moat-vm ] || ((i < m)) || continue
		measure one_run "$sys" "$work/run-$sys"
		measure first_output "$sys" "$work/first-$sys"
		[[ $sys != moat* ]] || cat "$work/end" >>"$work/end-$sys"
	done
done
for ((i = 0; i < s; i++)); do
	for sys in "${usable[@]}"; do
		measure session "$sys" "$work/session-$sys"
		[[ $sys != moat* ]] || measure deadline "$sys" "$work/deadline-$sys"
	done
done

median() {
	[ -s "$1" ] || { echo -; return; }
	sort -n "$1" | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
# cell FILE: the median of FILE with its unit, or - when there is none
cell() { local v; v=$(median "$1"); [ "$v" = - ] && echo - || echo "$v ms"; }
ratio() {
	local a b
	a=$(median "$1")
	b=$(median "$2")
	if [ "$a" = - ] || [ "$b" = - ]; then echo -; else awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f\n", b / a }'; fi
}
# row NAME KIND: one line of the table
row() {
	local line="| $1" sys
	for sys in moat moat-vm podman docker; do line+=" | $(cell "$work/$2-$sys")"; done
	for sys in podman docker; do line+=" | $(ratio "$work/$2-moat" "$work/$2-$sys")"; done
	echo "$line |"
}

echo "runs: $n (microVM: $m), sessions: $s, interleaved; kernel $(uname -r), $("$moat" --version | head -1)"
echo
echo "| measurement | moat | moat microVM (TCG) | Podman | Docker | Podman/moat | Docker/moat |"
echo "|---|---|---|---|---|---|---|"
row "run of /bin/true" run
row "first output of \`echo x\` (moat: until time.started, a lower bound)" first
row "moat: until the program's end (time.started + run_ms, an upper bound)" end
row "session of 100 commands" session
row "moat: timeout, from the deadline to every process gone (run)" deadline
row "moat: the same for an exec in a session (a microVM: torn down)" deadline-session
if [ -s "$work/failures" ]; then
	echo
	echo "failed measurements, not counted (each made again): $(wc -l <"$work/failures")"
	sort "$work/failures" | uniq -c | sed 's/^ */- /'
fi
