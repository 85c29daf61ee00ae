#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# moat's single test runner; `make check` calls it.
#
# Runs every cmocka unit test binary named in UNIT_TESTS (paths relative to
# the current directory, normally the build directory) with TAP output, then
# every tests/integration/*.bats file, every tests/redteam/*.bats file (attacks on moat,
# tests/redteam/README.md) and every tests/engines/*.bats file (real Podman,
# containerd and Docker running moat), with `bats --tap`, and the cgroup v2 test host
# (tests/testhost/run.sh: a VM with systemd as PID 1 running some of those files again),
# which boots first and runs beside the rest: its VM runs two bats files at a time under
# QEMU's multi-threaded TCG, and shares the two cores with the host's files.
# Its results are shown once it is done, before the integration files named zz-* (the
# residue checks), which run last. The other output streams through; the runner counts
# the TAP results across everything, repeats what the first three failures printed, lists
# every failure by name, and ends with exactly one line:
#
#     N passed, N failed, N skipped
#
# It exits non-zero if anything failed.
#
# Environment:
#   MOAT_BINARY  absolute path of the moat binary under test
#                (default: ./moat in the current directory)
#   UNIT_TESTS   space-separated unit test binaries (`make check` names each twice: the
#                plain build's, tests/unit/test-*, and the ASan+UBSan one's, tests/sanitize/test-*)
#   TESTS        optional glob: run only the bats files (and unit tests)
#                whose name, with or without .bats, matches it, e.g.
#                TESTS=lifecycle or TESTS='hard*'
#   BATS_TEST_TIMEOUT  per-test guard against hangs, in seconds (default 180);
#                it only stops a stuck test, it asserts nothing about speed.

# `make check` may start this with a plain sh: continue under bash.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

passed=0
failed=0
skipped=0
failures=()
details=()

MOAT_BINARY=${MOAT_BINARY:-$PWD/moat}
case $MOAT_BINARY in
/*) ;;
*) MOAT_BINARY=$PWD/$MOAT_BINARY ;;
esac
export MOAT_BINARY
export BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-180}

# Everything the tests make goes under one directory of this run, so the last
# check (zz-residue.bats) sees this run's leftovers only, not another run's.
MOAT_RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/moat-run.XXXXXX") || exit 2
chmod 0755 "$MOAT_RUN_DIR"
export MOAT_RUN_DIR
TMPDIR=$MOAT_RUN_DIR
export TMPDIR
log=$(mktemp "${TMPDIR:-/tmp}/moat-tests.XXXXXX") || exit 2
# Built once, shared by every bats file (see build_rootfs_cache); it only
# ever holds plain files that tests copy, never a mount.
MOAT_TEST_CACHE=$(mktemp -d "${TMPDIR:-/tmp}/moat-test-cache.XXXXXX") || exit 2
export MOAT_TEST_CACHE
# The run directory goes only if the tests left it empty (a mount left under it
# must not be walked into).
# (a test host still booted, when the run is cut short, is stopped: its runner stops QEMU)
trap '[[ -z ${testhost_pid:-} ]] || { kill "$testhost_pid"; wait "$testhost_pid"; } 2>/dev/null
	rm -f "$log"; rm -rf --one-file-system "$MOAT_TEST_CACHE"; rmdir "$MOAT_RUN_DIR" 2>/dev/null' EXIT

# selected NAME: true when TESTS is unset or matches NAME (with or without
# its .bats suffix).
selected() {
	local name=$1
	[[ -z ${TESTS:-} ]] && return 0
	# shellcheck disable=SC2053 # TESTS is a glob on purpose
	[[ $name == $TESTS || ${name%.bats} == $TESTS ]]
}

# tally LABEL STATUS: count the TAP lines saved in $log for one test
# program that exited with STATUS. A program that exits non-zero without
# reporting a failure, or reports fewer results than it planned, counts as
# one failure under its own name.
tally() {
	local label=$1 status=$2 line planned=0 seen=0 bad=0 re_plan='^1\.\.([0-9]+)'
	local re_result='^(not )?ok( |$)' re_skip='^(not )?ok( .*)?#[[:space:]]*skip( |$)'
	local detail=-1

	while IFS= read -r line; do
		# the first failures' own lines, kept for the summary (a CI log is often read
		# from its end)
		if ((detail >= 0)) && [[ $line == "#" || $line == "# "* ]] &&
			((${#details[detail]} < 1500)); then
			line=${line#\#}
			details[detail]+=$'\n'"#    $line"
			continue
		fi
		detail=-1
		if [[ $line =~ $re_plan ]]; then
			planned=$((planned + BASH_REMATCH[1]))
		elif [[ ${line,,} =~ $re_skip ]]; then
			seen=$((seen + 1))
			skipped=$((skipped + 1))
		elif [[ $line =~ $re_result ]]; then
			seen=$((seen + 1))
			if [[ -n ${BASH_REMATCH[1]} ]]; then
				bad=$((bad + 1))
				failed=$((failed + 1))
				failures+=("$label: ${line#not ok }")
				if ((${#details[@]} < 3)); then
					detail=${#details[@]}
					details[detail]="#   $label: ${line#not ok }"
				fi
			else
				passed=$((passed + 1))
			fi
		fi
	done <"$log"

	if ((seen < planned)); then
		failed=$((failed + 1))
		failures+=("$label: reported $seen of $planned planned results (exit status $status)")
	elif ((status != 0 && bad == 0)); then
		failed=$((failed + 1))
		failures+=("$label: exited with status $status without reporting a failure")
	fi
}

# run_one LABEL COMMAND...: run a test program, stream its output, tally it, and say how
# long it took (what the suite's budget is made of; nothing asserts on it).
run_one() {
	local label=$1 status started=$SECONDS
	shift
	echo "# --- $label"
	"$@" 2>&1 | tee "$log"
	status=${PIPESTATUS[0]}
	echo "# --- $label: $((SECONDS - started)) s"
	tally "$label" "$status"
}

# --- unit tests -----------------------------------------------------------
read -r -a units <<<"${UNIT_TESTS:-}"
for unit in "${units[@]}"; do
	selected "$(basename "$unit")" || continue
	if [[ ! -x $unit ]]; then
		failed=$((failed + 1))
		failures+=("$unit: not built or not executable")
		echo "# --- $unit: not built or not executable"
		continue
	fi
	case $unit in
	*/*) path=$unit ;;
	*) path=./$unit ;;
	esac
	CMOCKA_MESSAGE_OUTPUT=TAP run_one "$unit" "$path"
done

# --- integration tests ----------------------------------------------------
# run_bats FILE...: each bats file, or one failure when bats or moat is missing
run_bats() {
	local f
	(($# > 0)) || return 0
	if ! command -v bats >/dev/null; then
		failed=$((failed + 1))
		failures+=("integration: bats is not installed (Debian package bats)")
		echo "# bats is not installed (Debian package bats)"
	elif [[ ! -x $MOAT_BINARY ]]; then
		failed=$((failed + 1))
		failures+=("integration: MOAT_BINARY '$MOAT_BINARY' is not executable")
		echo "# MOAT_BINARY '$MOAT_BINARY' is not executable"
	else
		for f in "$@"; do
			run_one "$(basename "$(dirname "$f")")/$(basename "$f")" bats --tap "$f"
		done
	fi
}

bats_files=()
last_files=()
for f in "$here"/integration/[!z]*.bats "$here"/integration/z[!z]*.bats "$here"/redteam/*.bats \
	"$here"/engines/*.bats; do
	[[ -e $f ]] || continue
	selected "$(basename "$f")" && bats_files+=("$f")
done
# the zz- files (the residue checks) go last, after the engines' files and the test host
for f in "$here"/integration/zz*.bats; do
	[[ -e $f ]] || continue
	selected "$(basename "$f")" && last_files+=("$f")
done
# --- the cgroup v2 test host (testhost/README.md), in the background -----------
testhost_pid=
if selected testhost; then
	testhost_out=$(mktemp "${TMPDIR:-/tmp}/moat-testhost-tap.XXXXXX") || exit 2
	echo "# --- testhost: booting in the background; its results come before the zz- files"
	bash "$here/testhost/run.sh" </dev/null >"$testhost_out" 2>&1 &
	testhost_pid=$!
fi

run_bats "${bats_files[@]}"

if [[ -n $testhost_pid ]]; then
	waited=$SECONDS
	wait "$testhost_pid"
	testhost_status=$?
	testhost_pid=
	echo "# --- testhost (it ran $((SECONDS - waited)) s past the host's files; $SECONDS s since the start)"
	tee "$log" <"$testhost_out"
	rm -f "$testhost_out"
	tally testhost "$testhost_status"
fi

run_bats "${last_files[@]}"

if ((${#details[@]} > 0)); then
	echo "# The first failures, with what they printed:"
	printf '%s\n' "${details[@]}"
fi
if ((${#failures[@]} > 0)); then
	echo "# Failed:"
	printf '#   %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0))
