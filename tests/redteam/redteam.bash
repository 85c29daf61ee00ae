# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# The red team's helpers (tests/redteam/README.md). A file runs its attacks once in each
# mode, in setup_file: as a container's program and as a microVM's (TCG), under moat's
# default policy, saving what attack.c printed. Each test then reads one case's line of one
# mode: contained passes, ESCAPED or no line fails, and the line says what was tried.

# A file loads ../integration/helpers first, then this.

# attack_binary: attack.c built static, once per run, into the shared cache.
attack_binary() {
	local base=${MOAT_TEST_CACHE:-$BATS_RUN_TMPDIR} out
	out=$base/redteam/attack
	if [[ ! -x $out ]]; then
		mkdir -p "$base/redteam" || return 1
		cc -static -O2 -Wall -o "$out.$$" "$BATS_TEST_DIRNAME/attack.c" 2>/dev/null || return 1
		mv "$out.$$" "$out"
	fi
	echo "$out"
}

# redteam_bundle MODE [NAME]: $BUNDLE (NAME, default bundle) for MODE (container or
# microvm), with the attack at /attack.
redteam_bundle() {
	make_bundle "$TEST_DIR/${2:-bundle}-$1" || return 1
	# the user namespace is the policy's (auto-userns), as for an engine's config
	cfg_set '.linux.namespaces |= map(select(.type != "user"))
		| del(.linux.uidMappings, .linux.gidMappings)'
	if [[ $1 == microvm ]]; then
		cfg_set '.annotations["moat.isolation"] = "microvm" | .annotations["moat.vm.accel"] = "tcg"'
	fi
	install -m 0755 "$ATTACK" "$BUNDLE/rootfs/attack"
}

# microvm_unavailable: why this machine cannot run a microVM, or nothing.
microvm_unavailable() {
	: "${MOAT_VM_DIR:=$(dirname "$MOAT_BINARY")/vm}"
	export MOAT_VM_DIR
	if [[ -n ${MOAT_TEST_NO_MICROVM:-} ]]; then
		echo "$MOAT_TEST_NO_MICROVM"
	elif [[ ! -r $MOAT_VM_DIR/moat-guest-kernel ]]; then
		echo "no guest kernel in $MOAT_VM_DIR (build it with make vm-kernel)"
	elif ! command -v qemu-system-x86_64 >/dev/null; then
		echo "qemu-system-x86_64 is not installed"
	fi
}

# redteam_setup_file [PREPARE]: the file's setup: builds the attack, then for each mode
# makes a bundle, runs PREPARE (a function that may change $CONFIG and the rootfs; $MODE
# says which, and $CID is the container's ID), and runs `/attack $CASES` in it, saving
# stdout and stderr under $BATS_FILE_TMPDIR. Where a mode cannot run, its reason is saved
# instead.
redteam_setup_file() {
	local prepare=${1:-} why status
	moat_setup_file
	moat_setup
	ATTACK=$(attack_binary) || {
		echo "cc -static is not available: cannot build the attack" >"$BATS_FILE_TMPDIR/skip"
		return 0
	}
	for MODE in container microvm; do
		if [[ $MODE == microvm ]] && why=$(microvm_unavailable) && [[ -n $why ]]; then
			echo "$why" >"$BATS_FILE_TMPDIR/skip-$MODE"
			continue
		fi
		redteam_bundle "$MODE" || return 1
		CID=redteam-$MODE-$$-$RANDOM
		[[ -z $prepare ]] || "$prepare" || return 1
		# shellcheck disable=SC2086 # CASES is a list
		cfg_args /attack $CASES
		status=0
		"$MOAT_BINARY" --root "$MOAT_ROOT" run --bundle "$BUNDLE" "$CID" </dev/null \
			>"$BATS_FILE_TMPDIR/$MODE.out" 2>"$BATS_FILE_TMPDIR/$MODE.err" || status=$?
		echo "$status" >"$BATS_FILE_TMPDIR/$MODE.status"
	done
}

# redteam_shell_setup: the setup of a file whose tests run the attack themselves (a shell
# test, not a case line): a test's own state root, and $ATTACK built.
redteam_shell_setup() {
	moat_setup
	ATTACK=$(attack_binary) || skip "cc -static is not available: cannot build the attack"
}

redteam_teardown_file() {
	moat_teardown
}

# contained MODE CASE: CASE's line of MODE's run says contained.
contained() {
	local mode=$1 name=$2 line
	[[ ! -e $BATS_FILE_TMPDIR/skip ]] || skip "$(cat "$BATS_FILE_TMPDIR/skip")"
	[[ ! -e $BATS_FILE_TMPDIR/skip-$mode ]] || skip "$(cat "$BATS_FILE_TMPDIR/skip-$mode")"
	line=$(grep -m1 "^$name: " "$BATS_FILE_TMPDIR/$mode.out") || true
	[[ -n $line ]] || fail "no result for $name in $mode mode (moat run exited $(cat "$BATS_FILE_TMPDIR/$mode.status")):
$(tail -5 "$BATS_FILE_TMPDIR/$mode.err")"
	echo "# $line" >&3
	[[ $line == *"; contained: "* ]] || fail "$line"
}
