#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by the sandbox tests (sandbox*.bats): running `moat sandbox`, checking its result
# against the schema, and checking that a sandbox left nothing behind.
# shellcheck disable=SC2154 # bats sets status, output

SANDBOX_ROOT=/run/moat-sandbox
SANDBOX_ARGS=() # options every sandbox_run of a file adds (the microVM file's isolation)

# sandbox_run ARGS...: `moat sandbox run --rootfs $ROOTFS_CACHE ARGS...`, the result in
# $TEST_DIR/result.json (and $RESULT), the exit status in $status, stderr in $stderr.
sandbox_run() {
	RESULT=$TEST_DIR/result.json
	rm -f "$RESULT"
	run --separate-stderr timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" sandbox run \
		--rootfs "$ROOTFS_CACHE" "${SANDBOX_ARGS[@]}" --result "$RESULT" "$@"
	if [[ -s $RESULT ]]; then
		validate_result "$RESULT"
	fi
}

# validate_result FILE: the document is valid against docs/sandbox-result.schema.json.
validate_result() {
	local validator=$BATS_TEST_DIRNAME/validate-result.py
	if [[ -x $validator || -f $validator ]]; then
		python3 "$validator" "$1" || fail "the result does not match the schema: $(cat "$1")"
	else
		jq -e '.schema == "moat.sandbox.result/v1"' "$1" >/dev/null ||
			fail "not a moat.sandbox.result/v1 document: $(cat "$1")"
	fi
}

# r JQ: a member of the result
r() {
	jq -r "$1" "$RESULT"
}

# sandbox_residue: what a sandbox of this uid left: state, containers' state, cgroups,
# loans, keepers (one line each; nothing when clean).
sandbox_residue() {
	local d
	# .runtime/.seccomp-cache is the compiled profiles' cache, kept on purpose
	for d in "$SANDBOX_ROOT/$EUID" "$SANDBOX_ROOT/.runtime"; do
		[[ -d $d ]] && find "$d" -mindepth 1 -maxdepth 1 ! -name .seccomp-cache -printf 'state: %p\n'
	done
	find /sys/fs/cgroup -maxdepth 4 -type d -name "$EUID-*" -path '*/moat/*' \
		-printf 'cgroup: %p\n' 2>/dev/null
	grep -l "^$SANDBOX_ROOT/" /run/moat-userns/* 2>/dev/null | sed 's/^/loan: /'
	pgrep -f 'moat-sandbox-[i]nit|/\.moat/[i]nit' | sed 's/^/init process: /'
	grep -F "$SANDBOX_ROOT" /proc/self/mountinfo | sed 's/^/mount: /'
	return 0
}

# assert_no_residue [SECONDS]: nothing is left, within SECONDS (default 5).
assert_no_residue() {
	local tries=$((${1:-5} * 10)) left
	while :; do
		left=$(sandbox_residue)
		[[ -z $left ]] && return 0
		if ((tries-- <= 0)); then
			fail "left behind: $left"
			return 1
		fi
		sleep 0.1
	done
}

# blob DIR FILE: FILE moved into DIR/blobs/sha256 under its digest; prints the digest.
blob() {
	local d
	d=$(sha256sum "$2" | cut -d' ' -f1)
	mkdir -p "$1/blobs/sha256"
	mv "$2" "$1/blobs/sha256/$d"
	echo "$d"
}

# make_oci_image DIR: an OCI image layout made by hand from the busybox rootfs, with a second
# layer that adds /etc/motd and whites out /bin/vi.
make_oci_image() {
	local dir=$1 work=$TEST_DIR/image-work l1 l2 cfg man s1 s2 sc
	mkdir -p "$dir" "$work/l2/etc" "$work/l2/bin"
	tar -C "$ROOTFS_CACHE" --exclude=./.complete -czf "$work/l1.tgz" .
	echo "hello from layer 2" >"$work/l2/etc/motd"
	: >"$work/l2/bin/.wh.vi"
	tar -C "$work/l2" -cf "$work/l2.tar" .
	s1=$(stat -c %s "$work/l1.tgz") s2=$(stat -c %s "$work/l2.tar")
	l1=$(blob "$dir" "$work/l1.tgz") l2=$(blob "$dir" "$work/l2.tar")
	jq -n --arg a "sha256:$(gzip -dc "$dir/blobs/sha256/$l1" | sha256sum | cut -d' ' -f1)" \
		--arg b "sha256:$l2" \
		'{architecture: "amd64", os: "linux", config: {}, rootfs: {type: "layers", diff_ids: [$a, $b]}}' \
		>"$work/config.json"
	sc=$(stat -c %s "$work/config.json")
	cfg=$(blob "$dir" "$work/config.json")
	jq -n --arg c "sha256:$cfg" --argjson sc "$sc" --arg l1 "sha256:$l1" --argjson s1 "$s1" \
		--arg l2 "sha256:$l2" --argjson s2 "$s2" '{schemaVersion: 2,
		mediaType: "application/vnd.oci.image.manifest.v1+json",
		config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $sc},
		layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: $l1, size: $s1},
			{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l2, size: $s2}]}' \
		>"$work/manifest.json"
	s1=$(stat -c %s "$work/manifest.json")
	man=$(blob "$dir" "$work/manifest.json")
	jq -n --arg m "sha256:$man" --argjson s "$s1" '{schemaVersion: 2, manifests: [{
		mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $m, size: $s}]}' \
		>"$dir/index.json"
	echo '{"imageLayoutVersion": "1.0.0"}' >"$dir/oci-layout"
	rm -rf "$work"
}
