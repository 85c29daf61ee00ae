#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The policy (contrib/policy/README.md): each rule's refusal, allowing through the policy
# file, relaxing through the annotation moat.policy.allow, the compat preset, the changes
# shown by `moat state`, `moat policy explain` and `show`, and malformed policy files.
# Every test names its policy file with --policy, so a policy installed on the host does
# not change the outcome.

load helpers

setup() {
	moat_setup
	CONTRIB=$BATS_TEST_DIRNAME/../../contrib/policy
	HARDENED=$TEST_DIR/hardened.json
	COMPAT=$TEST_DIR/compat.json
	cp "$CONTRIB/hardened.json" "$HARDENED"
	cp "$CONTRIB/compat.json" "$COMPAT"
}

# re TEXT: TEXT as a literal grep -E pattern.
re() {
	printf '%s' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g'
}

# write_policy NAME JSON: $TEST_DIR/NAME.json holding JSON; prints the path.
write_policy() {
	printf '%s\n' "$2" >"$TEST_DIR/$1.json"
	echo "$TEST_DIR/$1.json"
}

# add_bind SOURCE [DESTINATION]: append a read-only bind of SOURCE (mounts[7] after the
# default spec's seven mounts), with a mount point for it in the rootfs.
add_bind() {
	local dest=$BUNDLE/rootfs${2:-/hostpath}
	if [[ -d $1 ]]; then
		mkdir -p "$dest"
	elif [[ ! -e $dest ]]; then
		mkdir -p "$(dirname "$dest")" && touch "$dest"
	fi
	cfg_set '.mounts += [{destination: $d, type: "bind", source: $s, options: ["bind", "ro"]}]' \
		--arg s "$1" --arg d "${2:-/hostpath}"
}

# create_under POLICY: `moat --policy POLICY create` of $CID, through run_moat.
create_under() {
	run_moat --policy "$1" create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
}

# run_under POLICY SCRIPT: SCRIPT in a foreground container under POLICY.
run_under() {
	cfg_sh "$2" || return 1
	run_moat --policy "$1" run --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
}

# refused_under POLICY REGEX: create is refused with one line matching REGEX, and leaves
# nothing behind.
refused_under() {
	create_under "$1"
	assert_moat_error "$2"
	assert_no_residue "$CID"
}

# explain_line RULE STATE [TEXT]: a line of `policy explain` (explain_more TEXT: a further
# finding of the same rule).
explain_line() {
	if [[ -n ${3:-} ]]; then
		printf '%-19s %-8s %s' "$1" "$2" "$3"
	else
		printf '%-19s %s' "$1" "$2"
	fi
}
explain_more() {
	printf '%-28s %s' '' "$1"
}

# explain_under POLICY: `moat policy explain` of $BUNDLE, through run_moat.
explain_under() {
	run_moat --policy "$1" policy explain --bundle "$BUNDLE"
}

# ---- deny-host-mounts ---------------------------------------------------------------

@test "deny-host-mounts: a bind of an engine socket is refused in one line naming the mount and the policy file" {
	make_bundle
	add_bind /var/run/docker.sock /var/run/docker.sock
	refused_under "$HARDENED" "^moat: policy deny-host-mounts: mounts\[7\] binds host path /var/run/docker\.sock; allow it in $(re "$HARDENED")\$"
}

@test "deny-host-mounts: /, /etc, a subdirectory of /etc, /run and an ancestor of /var/run are refused" {
	make_bundle
	local src
	for src in / /etc /etc/ssl /proc /sys/kernel /run /var /root /home /boot; do
		cfg_set '.mounts[7:] = []'
		add_bind "$src"
		refused_under "$HARDENED" "^moat: policy deny-host-mounts: mounts\[7\] binds host path $(re "$src"); allow it in "
	done
}

@test "deny-host-mounts: a symlink to a sensitive path is judged by its target" {
	make_bundle
	ln -s /etc "$TEST_DIR/innocent"
	add_bind "$TEST_DIR/innocent"
	refused_under "$HARDENED" "mounts\[7\] binds host path $(re "$TEST_DIR/innocent") \(resolves to /etc\); allow it in "
}

@test "deny-host-mounts: a root.path that is the host's / is refused" {
	make_bundle
	cfg_set '.root.path = "/"'
	refused_under "$HARDENED" '^moat: policy deny-host-mounts: root\.path is host path /; allow it in '
}

@test "deny-host-mounts: a bind of an ordinary host directory runs" {
	make_bundle
	mkdir "$TEST_DIR/data"
	echo shared >"$TEST_DIR/data/file"
	chmod -R a+rX "$TEST_DIR/data"
	add_bind "$TEST_DIR/data" /data
	run_under "$HARDENED" 'cat /data/file'
	assert_success
	assert_output shared
}

@test "deny-host-mounts: the file's deny list refuses a path (and its ancestors), its allow list wins" {
	make_bundle
	mkdir -p "$TEST_DIR/secret/public"
	chmod -R a+rX "$TEST_DIR/secret"
	local policy
	policy=$(write_policy deny "{\"rules\": {\"deny-host-mounts\": {\"deny\": [\"$TEST_DIR/secret\"]}}}")
	add_bind "$TEST_DIR/secret/public"
	refused_under "$policy" "mounts\[7\] binds host path $(re "$TEST_DIR/secret/public"); allow it in $(re "$policy")\$"
	cfg_set '.mounts[7:] = []'
	add_bind "$TEST_DIR"
	refused_under "$policy" "mounts\[7\] binds host path $(re "$TEST_DIR");"

	policy=$(write_policy allow "{\"rules\": {\"deny-host-mounts\": {\"deny\": [\"$TEST_DIR/secret\"], \"allow\": [\"$TEST_DIR/secret/public\"]}}}")
	cfg_set '.mounts[7:] = []'
	add_bind "$TEST_DIR/secret/public" /public
	run_under "$policy" 'test -d /public && echo bound'
	assert_success
	assert_output bound
}

@test "deny-host-mounts: the file's allow list lets a subdirectory of /etc through" {
	[[ -d /etc/ssl/certs ]] || skip "no /etc/ssl/certs on this host"
	make_bundle
	local policy
	policy=$(write_policy allow '{"rules": {"deny-host-mounts": {"allow": ["/etc/ssl/certs"]}}}')
	add_bind /etc/ssl/certs /certs
	run_under "$policy" 'test -d /certs && echo bound'
	assert_success
	assert_output bound
	# the rest of /etc stays refused
	cfg_set '.mounts[7].source = "/etc/ssl"'
	refused_under "$policy" 'mounts\[7\] binds host path /etc/ssl;'
}

@test "deny-host-mounts: engines' per-container files are allowed, their state dirs and sockets are not" {
	make_bundle
	local src
	for src in /var/lib/docker/containers/0123abcd/hosts \
		/var/lib/docker/volumes/data/_data \
		/run/containers/storage/overlay-containers/0123abcd/userdata/resolv.conf \
		/var/lib/containers/storage/overlay-containers/0123abcd/userdata/shm \
		/run/containerd/io.containerd.runtime.v2.task/k8s.io/0123abcd/hostname \
		/run/containerd/io.containerd.grpc.v1.cri/sandboxes/0123abcd/shm \
		/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/0123abcd/resolv.conf \
		/var/lib/kubelet/pods/0123-abcd/volumes/kubernetes.io~empty-dir/cache \
		/run/user/1000/containers/overlay-containers/0123abcd/userdata/hosts \
		/var/lib/docker /var/lib/docker/overlay2 /var/lib/kubelet/pods \
		/run/containerd/containerd.sock /var/lib/docker/containers/0123abcd/docker.sock; do
		add_bind "$src" "/m$RANDOM"
	done
	explain_under "$HARDENED"
	assert_failure 1
	assert_line_exact "$(explain_line deny-host-mounts on 'refuses: mounts[16] binds host path /var/lib/docker')"
	assert_line_exact "$(explain_more 'refuses: mounts[17] binds host path /var/lib/docker/overlay2')"
	assert_line_exact "$(explain_more 'refuses: mounts[18] binds host path /var/lib/kubelet/pods')"
	assert_line_exact "$(explain_more 'refuses: mounts[19] binds host path /run/containerd/containerd.sock')"
	assert_line_exact "$(explain_more 'refuses: mounts[20] binds host path /var/lib/docker/containers/0123abcd/docker.sock')"
	assert_line_exact 'refused: 5 refusals'
}

# ---- no-new-privileges and default-seccomp: changes, shown by `moat state` ------------

@test "no-new-privileges: a config that turns it off runs with no_new_privs, and state says so" {
	make_bundle
	cfg_set '.process.noNewPrivileges = false'
	run_under "$HARDENED" 'grep NoNewPrivs /proc/self/status'
	assert_success
	assert_output "$(printf 'NoNewPrivs:\t1')"

	cfg_args sleep 60
	with_container_stdio moat --policy "$HARDENED" create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	run state_of
	assert_success
	assert_equal "$(jq -r '.annotations["moat.policy.no-new-privileges"]' <<<"$output")" \
		'set process.noNewPrivileges to true'
}

@test "default-seccomp: a config without linux.seccomp gets moat's profile, recorded in state, not in the config's annotations" {
	make_bundle
	cfg_set 'del(.linux.seccomp)'
	cfg_set '.annotations = {"org.example.keep": "yes"}'
	cfg_args sleep 60
	with_container_stdio moat --policy "$HARDENED" create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	run state_of
	assert_success
	assert_equal "$(jq -r '.annotations["moat.policy.default-seccomp"]' <<<"$output")" \
		"added moat's default profile"
	assert_equal "$(jq -r '.annotations["org.example.keep"]' <<<"$output")" yes
	# moat's own records: the change in state.json, the profile in the saved config
	assert_equal "$(jq -r '.policy["default-seccomp"]' "$MOAT_ROOT/$CID/state.json")" \
		"added moat's default profile"
	jq -e '.linux.seccomp.defaultAction | type == "string"' "$MOAT_ROOT/$CID/config.json" >/dev/null
	jq -e '.annotations | keys == ["org.example.keep"]' "$MOAT_ROOT/$CID/config.json" >/dev/null
}

@test "default-seccomp: a config with its own profile keeps it, and nothing is recorded" {
	make_bundle
	cfg_set '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW"}'
	cfg_args sleep 60
	with_container_stdio moat --policy "$HARDENED" create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	run state_of
	assert_success
	assert_equal "$(jq -r '.annotations["moat.policy.default-seccomp"] // "none"' <<<"$output")" none
	jq -e '.linux.seccomp == {defaultAction: "SCMP_ACT_ALLOW"}' "$MOAT_ROOT/$CID/config.json" >/dev/null
}

# ---- capability-ceiling -------------------------------------------------------------

@test "capability-ceiling: a capability above the ceiling is refused in any set, whatever its spelling" {
	make_bundle
	cfg_set '.process.capabilities.bounding = ["CAP_CHOWN", "CAP_SYS_ADMIN"]'
	refused_under "$HARDENED" "^moat: policy capability-ceiling: process\.capabilities\.bounding\[1\] asks for CAP_SYS_ADMIN; allow it in $(re "$HARDENED")\$"
	cfg_set '.process.capabilities.bounding = [] | .process.capabilities.ambient = ["sys_ptrace"]'
	refused_under "$HARDENED" 'policy capability-ceiling: process\.capabilities\.ambient\[0\] asks for sys_ptrace;'
	cfg_set '.process.capabilities.ambient = [] | .process.capabilities.permitted = ["NET_ADMIN"]'
	refused_under "$HARDENED" 'policy capability-ceiling: process\.capabilities\.permitted\[0\] asks for NET_ADMIN;'
}

@test "capability-ceiling: the file's allow list lets a capability through; its deny list replaces the ceiling" {
	make_bundle
	local policy
	policy=$(write_policy caps '{"rules": {"capability-ceiling": {"allow": ["CAP_SYS_ADMIN"]}}}')
	cfg_set '.process.capabilities.bounding = ["CAP_SYS_ADMIN"] | .process.capabilities.permitted = ["CAP_SYS_ADMIN"] | .process.capabilities.effective = ["CAP_SYS_ADMIN"]'
	run_under "$policy" 'grep CapEff /proc/self/status'
	assert_success
	assert_output "$(printf 'CapEff:\t0000000000200000')"

	policy=$(write_policy ceiling '{"rules": {"capability-ceiling": {"deny": ["chown"]}}}')
	explain_under "$policy"
	assert_success
	assert_line_exact "$(explain_line capability-ceiling on 'ok')"
	cfg_set '.process.capabilities.bounding = ["CAP_CHOWN"]'
	refused_under "$policy" 'process\.capabilities\.bounding\[0\] asks for CAP_CHOWN;'
}

# ---- deny-devices -------------------------------------------------------------------

@test "deny-devices: a block device, /dev/mem under another name and /dev/kvm are refused in linux.devices" {
	make_bundle
	cfg_set '.linux.devices = [{type: "b", path: "/dev/xloop", major: 7, minor: 0}]'
	refused_under "$HARDENED" "^moat: policy deny-devices: linux\.devices\[0\] is host device /dev/xloop \(a block device\); allow it in $(re "$HARDENED")\$"
	cfg_set '.linux.devices = [{type: "c", path: "/dev/notmem", major: 1, minor: 1}]'
	refused_under "$HARDENED" 'linux\.devices\[0\] is host device /dev/notmem \(physical memory\);'
	cfg_set '.linux.devices = [{type: "c", path: "/dev/port", major: 1, minor: 4}]'
	refused_under "$HARDENED" 'linux\.devices\[0\] is host device /dev/port \(I/O ports\);'
	cfg_set '.linux.devices = [{type: "c", path: "/dev/kvm", major: 10, minor: 232}]'
	refused_under "$HARDENED" 'linux\.devices\[0\] is host device /dev/kvm \(KVM, allowed only with moat\.isolation=microvm\);'
}

@test "deny-devices: /dev/kvm passes under moat.isolation=microvm; the allow list names a device that passes" {
	make_bundle
	cfg_set '.linux.devices = [{type: "c", path: "/dev/kvm", major: 10, minor: 232}] | .annotations["moat.isolation"] = "microvm"'
	explain_under "$HARDENED"
	assert_success
	assert_line_exact "$(explain_line deny-devices on 'ok')"

	local policy
	policy=$(write_policy dev '{"rules": {"deny-devices": {"allow": ["/dev/xloop"], "deny": ["/dev/fuse"]}}}')
	cfg_set '.linux.devices = [{type: "b", path: "/dev/xloop", major: 7, minor: 0}]'
	explain_under "$policy"
	assert_success
	cfg_set '.linux.devices = [{type: "c", path: "/dev/fuse", major: 10, minor: 229}]'
	refused_under "$policy" 'linux\.devices\[0\] is host device /dev/fuse \(in the policy.s deny list\);'
}

@test "deny-devices: a bind of a host block device is refused; a bind of /dev/null runs" {
	local dev
	dev=$(find /dev -maxdepth 1 -type b -print -quit)
	[[ -n $dev ]] || skip "no block device on this host"
	make_bundle
	add_bind "$dev" /disk
	refused_under "$HARDENED" "^moat: policy deny-devices: mounts\[7\] binds host device $(re "$dev") \(a block device\); allow it in "
	cfg_set '.mounts[7:] = []'
	add_bind /dev/null /hostnull
	run_under "$HARDENED" 'test -c /hostnull && echo char'
	assert_success
	assert_output char
}

@test "deny-devices: a device cgroup rule that opens every device is refused" {
	make_bundle
	cfg_set '.linux.resources.devices = [{allow: false, access: "rwm"}, {allow: true, access: "rwm"}]'
	refused_under "$HARDENED" '^moat: policy deny-devices: linux\.resources\.devices\[1\] allows every device; allow it in '
	cfg_set '.linux.resources.devices = [{allow: true, type: "b", access: "rw"}]'
	refused_under "$HARDENED" 'linux\.resources\.devices\[0\] allows every block device;'
	# mknod only, or one device by number, is not "every device"
	cfg_set '.linux.resources.devices = [{allow: true, type: "a", access: "m"}, {allow: true, type: "c", major: 1, minor: 3, access: "rwm"}]'
	explain_under "$HARDENED"
	assert_success
}

# ---- network and auto-userns --------------------------------------------------------

@test "network: a config without a network namespace is refused, as is joining moat's own" {
	make_bundle
	cfg_set '.linux.namespaces |= map(select(.type != "network"))'
	refused_under "$HARDENED" "^moat: policy network: linux\.namespaces has no network namespace \(the container would share the host's network\); allow it in $(re "$HARDENED")\$"
	cfg_set '.linux.namespaces += [{type: "network", path: $p}]' --arg p "/proc/$$/ns/net"
	refused_under "$HARDENED" "policy network: linux\\.namespaces\\[[0-9]+\\]\\.path /proc/$$/ns/net is the network namespace moat runs in;"
}

@test "network: a path to a network namespace an engine made is fine" {
	make_bundle
	touch "$TEST_DIR/netns"
	unshare --net="$TEST_DIR/netns" true
	cfg_set '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' --arg p "$TEST_DIR/netns"
	explain_under "$HARDENED"
	assert_success
	assert_line_exact "$(explain_line network on 'ok')"
}

@test "auto-userns: a config without a user namespace gets one (auto-userns.bats); turned off, it runs as host root" {
	make_bundle
	cfg_set '.linux.namespaces |= map(select(.type != "user")) | del(.linux.uidMappings, .linux.gidMappings)'
	explain_under "$HARDENED"
	assert_success
	assert_line_exact "$(explain_line auto-userns on 'changes: user namespace added: container ids 0-65535 map to a host range lent from the pool, rootfs and bind mounts idmapped')"
	local policy
	policy=$(write_policy nouserns '{"rules": {"auto-userns": {"enabled": false}}}')
	run_under "$policy" 'cat /proc/self/uid_map'
	assert_success
	assert_output --regexp '^ +0 +0 +4294967295$'
}

@test "auto-userns: joining moat's own user namespace is refused" {
	make_bundle
	cfg_set '.linux.namespaces |= map(if .type == "user" then .path = $p else . end) | del(.linux.uidMappings, .linux.gidMappings)' --arg p "/proc/$$/ns/user"
	refused_under "$HARDENED" "^moat: policy auto-userns: linux\\.namespaces\\[[0-9]+\\]\\.path /proc/$$/ns/user is the user namespace moat runs in; allow it in "
}

# Issue 14: without a mount namespace the container would share the host's mounts. runc then
# skips pivot_root and masked paths and makes the config's mounts in the host's namespace;
# moat refuses under every preset (docs/compatibility.md), naming the rule under hardened.
@test "deny-host-mounts: a config without a mount namespace is refused, and under compat too" {
	make_bundle
	cfg_set '.linux.namespaces |= map(select(.type != "mount"))'
	refused_under "$HARDENED" "^moat: policy deny-host-mounts: linux\.namespaces has no mount namespace: the container would share the host's mounts; allow it in "
	refused_under "$COMPAT" "^moat: linux\.namespaces: no mount namespace: moat does not run a container in the host's .*; add \{\"type\": \"mount\"\}$"
}

# Issue 14: a config's own user namespace that maps to host root isolates nothing.
@test "auto-userns: a config's own user namespace may not map any id to host root" {
	local maps
	make_bundle
	for maps in '[{"containerID": 0, "hostID": 0, "size": 4294967295}]' \
		'[{"containerID": 1000, "hostID": 0, "size": 10}]' \
		'[{"containerID": 0, "hostID": 100000, "size": 65536}, {"containerID": 65536, "hostID": 0, "size": 1}]'; do
		cfg_set '.linux.uidMappings = $m' --argjson m "$maps"
		refused_under "$HARDENED" "^moat: policy auto-userns: linux\.uidMappings\[[01]\] maps container id [0-9]+ to host root \(host id 0\), which a user namespace must not reach; map to other host ids; allow it in "
	done
	cfg_set '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]'
	refused_under "$HARDENED" "^moat: policy auto-userns: linux\.gidMappings\[0\] maps container id 0 to host root"
	# compat (auto-userns off) lets it run, as runc does
	create_under "$COMPAT"
	assert_success
}

@test "auto-userns: a config's own user namespace may not map host ids the pool has lent to another container" {
	local lent other=$CID-own
	make_bundle
	cfg_set '.linux.namespaces |= map(select(.type != "user")) | del(.linux.uidMappings, .linux.gidMappings)'
	cfg_args sleep 300
	run_moat --policy "$HARDENED" run --detach --bundle "$BUNDLE" "$CID"
	assert_success
	lent=$(awk '{print $2}' "/proc/$(state_of | jq .pid)/uid_map")
	make_bundle "$TEST_DIR/own"
	cfg_set '.linux.uidMappings = [{"containerID": 0, "hostID": ($h + 100), "size": 65536}]' --argjson h "$lent"
	run_moat --policy "$HARDENED" create --bundle "$BUNDLE" "$other"
	assert_moat_error "^moat: policy auto-userns: linux\.uidMappings\[0\] maps host ids $((lent + 100))-$((lent + 100 + 65535)), which overlap the range $lent-$((lent + 65535)) the pool has lent to another container; allow it in "
	assert_no_residue "$other"
	# once that container is gone, the range is free again
	moat delete --force "$CID"
	run_moat --policy "$HARDENED" create --bundle "$BUNDLE" "$other"
	assert_success
	moat delete --force "$other"
}

# ---- presets and relaxing -----------------------------------------------------------

@test "compat runs what hardened refuses and changes nothing" {
	make_bundle
	cfg_set '.linux.namespaces |= map(select(.type != "user" and .type != "network"))
		| del(.linux.uidMappings, .linux.gidMappings)
		| .process.noNewPrivileges = false
		| .process.capabilities.bounding = ["CAP_SYS_ADMIN"]
		| .mounts += [{destination: "/hostname", type: "bind", source: "/etc/hostname", options: ["bind", "ro"]}]'
	create_under "$HARDENED"
	assert_moat_error '^moat: policy '
	assert_no_residue "$CID"

	run_under "$COMPAT" 'grep NoNewPrivs /proc/self/status; test -s /hostname && echo bound'
	assert_success
	assert_line --index 0 "$(printf 'NoNewPrivs:\t0')"
	assert_line --index 1 bound

	cfg_args sleep 60
	CID=$CID-2
	with_container_stdio moat --policy "$COMPAT" create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	run state_of
	assert_success
	assert_equal "$(jq '.annotations // {} | with_entries(select(.key | startswith("moat.policy."))) | length' <<<"$output")" 0
}

@test "moat.policy.allow relaxes a rule the file lets containers relax; state records it" {
	make_bundle
	mkdir "$TEST_DIR/secret"
	local policy
	policy=$(write_policy relax "{\"rules\": {\"deny-host-mounts\": {\"deny\": [\"$TEST_DIR/secret\"]}}, \"containerMayRelax\": [\"deny-host-mounts\"]}")
	add_bind "$TEST_DIR/secret" /secret
	cfg_args sleep 60
	# the refusal offers the annotation, since this file lets containers use it
	refused_under "$policy" "^moat: policy deny-host-mounts: mounts\[7\] binds host path $(re "$TEST_DIR/secret"); allow it in $(re "$policy") or annotate moat\.policy\.allow=deny-host-mounts\$"

	cfg_set '.annotations["moat.policy.allow"] = "deny-host-mounts"'
	with_container_stdio moat --policy "$policy" create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	run state_of
	assert_success
	assert_equal "$(jq -r '.annotations["moat.policy.deny-host-mounts"]' <<<"$output")" \
		'relaxed by annotation moat.policy.allow'
}

@test "moat.policy.allow naming a rule the file does not let containers relax is refused" {
	make_bundle
	local policy
	policy=$(write_policy relax '{"containerMayRelax": ["deny-host-mounts"]}')
	cfg_set '.annotations["moat.policy.allow"] = "deny-host-mounts,capability-ceiling"'
	refused_under "$policy" "^moat: policy capability-ceiling: annotation moat\.policy\.allow relaxes this rule, but $(re "$policy") does not list it in containerMayRelax\$"
	# without a file, no rule may be relaxed
	refused_under "$HARDENED" '^moat: policy deny-host-mounts: annotation moat\.policy\.allow relaxes this rule, but '
}

@test "moat.policy.allow naming an unknown rule is refused" {
	make_bundle
	cfg_set '.annotations["moat.policy.allow"] = "everything"'
	refused_under "$HARDENED" "^moat: policy: annotations\.moat\.policy\.allow: unknown rule 'everything'\$"
}

@test "a config may not bring its own moat.policy.* record, under any preset" {
	make_bundle
	cfg_set '.annotations["moat.policy.default-seccomp"] = "added moat'"'"'s default profile"'
	refused_under "$COMPAT" "^moat: policy: annotations\.moat\.policy\.default-seccomp: moat\.policy\.\* is reserved for what the policy records \(a config may set only moat\.policy\.allow\)\$"
}

# ---- explain and show ---------------------------------------------------------------

@test "policy explain lists every rule and exits 0 for moat's default spec" {
	make_bundle
	local seccomp=ok
	[[ $(cfg_get '.linux.seccomp // empty') ]] || seccomp="changes: added moat's default profile"
	explain_under "$HARDENED"
	assert_success
	assert_line --index 0 "policy: $HARDENED"
	assert_line --index 1 "config: $(realpath "$BUNDLE")/config.json"
	assert_line --index 2 "$(explain_line default-seccomp on "$seccomp")"
	assert_line --index 3 "$(explain_line deny-host-mounts on 'ok')"
	assert_line --index 4 "$(explain_line no-new-privileges on 'ok')"
	assert_line --index 5 "$(explain_line capability-ceiling on 'ok')"
	assert_line --index 6 "$(explain_line deny-devices on 'ok')"
	assert_line --index 7 "$(explain_line network on 'ok')"
	assert_line --index 8 "$(explain_line auto-userns on 'ok')"
	assert_line --index 9 accepted
	assert_equal "${#lines[@]}" 10
}

@test "policy explain lists what it would refuse and change, runs nothing, and exits 1" {
	make_bundle
	add_bind /var/run/docker.sock
	cfg_set '.process.noNewPrivileges = false | .process.capabilities.bounding = ["CAP_BPF"]'
	explain_under "$HARDENED"
	assert_failure 1
	assert_line_exact "$(explain_line deny-host-mounts on 'refuses: mounts[7] binds host path /var/run/docker.sock')"
	assert_line_exact "$(explain_line no-new-privileges on 'changes: set process.noNewPrivileges to true')"
	assert_line_exact "$(explain_line capability-ceiling on 'refuses: process.capabilities.bounding[0] asks for CAP_BPF')"
	assert_line_exact 'refused: 2 refusals'
	run moat list -q
	assert_output ''
}

@test "policy explain shows rules off and relaxed, from the current directory by default" {
	make_bundle
	local policy
	policy=$(write_policy mixed '{"rules": {"network": {"enabled": false}}, "containerMayRelax": ["capability-ceiling"]}')
	cfg_set '.annotations["moat.policy.allow"] = "capability-ceiling" | .process.capabilities.bounding = ["CAP_SYS_ADMIN"]'
	cd "$BUNDLE"
	run_moat --policy "$policy" policy explain
	assert_success
	assert_line_exact "$(explain_line capability-ceiling relaxed 'changes: relaxed by annotation moat.policy.allow')"
	assert_line_exact "$(explain_line network off)"
	assert_line_exact accepted
}

@test "policy show prints the effective policy, and its output reads back as the same policy" {
	run_moat --policy "$COMPAT" policy show
	assert_success
	assert_equal "$(jq -c '[.rules[].enabled] | unique' <<<"$output")" '[false]'
	assert_equal "$(jq -r .preset <<<"$output")" compat

	local policy
	policy=$(write_policy caps '{"rules": {"capability-ceiling": {"allow": ["SYS_ADMIN", "cap_bpf"]}, "deny-host-mounts": {"allow": ["/srv"]}}}')
	run_moat --policy "$policy" policy show
	assert_success
	jq -e '.rules["capability-ceiling"].deny | (index("CAP_SYS_ADMIN") == null) and (index("CAP_BPF") == null) and (index("CAP_SYS_MODULE") != null)' <<<"$output" >/dev/null
	jq -e '.rules["deny-host-mounts"].allow == ["/srv"]' <<<"$output" >/dev/null
	printf '%s\n' "$output" >"$TEST_DIR/shown.json"
	run_moat --policy "$TEST_DIR/shown.json" policy show
	assert_success
	assert_equal "$output" "$(cat "$TEST_DIR/shown.json")"
}

@test "contrib/policy/hardened.json is the built-in default, spelled out" {
	run_moat --policy "$HARDENED" policy show
	assert_success
	local shown=$output
	run_moat --policy "$(write_policy empty '{}')" policy show
	assert_success
	assert_equal "$output" "$shown"
}

# ---- the policy file ----------------------------------------------------------------

@test "a malformed policy file is refused with the JSON path of the fault, before anything is made" {
	make_bundle
	local -a cases=(
		'{"rules": {"bogus": {}}}|rules\.bogus: invalid value "bogus" \(expected one of: default-seccomp, '
		'{"rules": {"network": {"enabled": "no"}}}|rules\.network\.enabled: expected boolean, got string'
		'{"rules": {"deny-host-mounts": {"alow": ["/srv"]}}}|rules\.deny-host-mounts\.alow: unknown member'
		'{"rules": {}, "containerMayRelx": []}|: containerMayRelx: unknown member'
		'{"rules": {"deny-host-mounts": {"allow": ["srv"]}}}|rules\.deny-host-mounts\.allow\[0\]: .srv. is not an absolute path'
		'{"rules": {"capability-ceiling": {"deny": ["CAP_SYS_ADMIN", "CAP_FLY"]}}}|rules\.capability-ceiling\.deny\[1\]: unknown capability .CAP_FLY.'
		'{"rules": {"network": {"allow": []}}}|rules\.network\.allow: the network rule takes no list'
		'{"preset": "lax"}|preset: invalid value "lax" \(expected one of: hardened, compat\)'
		'{"containerMayRelax": ["deny-host-mounts", "all"]}|containerMayRelax\[1\]: invalid value "all"'
		'{"autoUserns": {"size": 5}}|autoUserns\.size: unknown member'
		'{"autoUserns": {"containers": 0}}|autoUserns\.containers: must be > 0'
		'{"autoUserns": {"hostStart": 0}}|autoUserns\.hostStart: must not be 0'
		'{"autoUserns": {"hostStart": 4294901760, "containers": 2}}|autoUserns: hostStart \+ idsPerContainer \* containers passes the last valid id'
		'{"microvm": {"default": "yes"}}|microvm\.default: expected boolean, got string'
		'{"microvm": {"accel": "hvf"}}|microvm\.accel: invalid value "hvf"'
		'{"microvm": {"kernel": "/k"}}|microvm\.kernel: unknown member'
		'{"rules": |parse error'
	)
	local c json pattern policy
	for c in "${cases[@]}"; do
		json=${c%%|*}
		pattern=${c#*|}
		policy=$(write_policy bad "$json")
		run_moat --policy "$policy" policy show
		assert_moat_error "^moat: policy: $(re "$policy").*$pattern"
		refused_under "$policy" "^moat: policy: $(re "$policy").*$pattern"
	done
}

@test "a missing --policy file is an error; an absent default file means the built-in hardened preset" {
	make_bundle
	refused_under "$TEST_DIR/nope.json" "^moat: policy: open '$(re "$TEST_DIR/nope.json")': No such file or directory\$"

	run_moat policy explain --bundle "$BUNDLE"
	local default
	default=$(sed -n 's/^policy: \(.*\) (absent: the built-in hardened preset)$/\1/p' <<<"$output")
	if [[ -z $default ]]; then
		skip "a policy file is installed on this host: $(head -1 <<<"$output")"
	fi
	assert_success
	[[ ! -e $default ]]
	run_moat --help
	assert_output --partial "--policy FILE           the policy file (default $default,"
}

@test "moat spec --rootless writes a config the hardened policy accepts" {
	make_bundle
	rm "$CONFIG"
	"$MOAT_BINARY" spec --rootless --bundle "$BUNDLE"
	# it maps container root to the caller's ids: here root's, which the policy refuses
	# (a user namespace must not reach host root); as a user of uid 1000 would write it
	explain_under "$HARDENED"
	assert_failure 1
	assert_line --partial 'linux.uidMappings[0] maps container id 0 to host root'
	cfg_set '.linux.uidMappings[0].hostID = 1000 | .linux.gidMappings[0].hostID = 1000'
	explain_under "$HARDENED"
	assert_success
	assert_line_exact accepted
	# runc's and crun's rootless specs bind the host's /sys instead: refused
	cfg_set '(.mounts[] | select(.destination == "/sys")) |= {destination: "/sys", type: "bind", source: "/sys", options: ["rbind", "nosuid", "noexec", "nodev", "ro"]}'
	explain_under "$HARDENED"
	assert_failure 1
	assert_line_exact "$(explain_line deny-host-mounts on 'refuses: mounts[5] binds host path /sys')"
}

# ---- exec and update are held to the policy too ------------------------------------

@test "capability-ceiling: exec --cap and exec --process asking for a capability above the ceiling are refused" {
	make_bundle
	cfg_args sleep 60
	MOAT_TEST_POLICY=$HARDENED
	moat_create_started
	run_moat exec --cap CAP_SYS_ADMIN "$CID" true
	assert_moat_error "^moat: exec: policy capability-ceiling: process\\.capabilities\\.bounding\\[[0-9]+\\] asks for CAP_SYS_ADMIN; allow it in $(re "$HARDENED")\$"
	jq '.process | .args = ["true"] | .capabilities.effective = ["CAP_BPF"]' "$CONFIG" >"$TEST_DIR/process.json"
	run_moat exec --process "$TEST_DIR/process.json" "$CID"
	assert_moat_error "^moat: exec: policy capability-ceiling: process\\.capabilities\\.effective\\[0\\] asks for CAP_BPF; allow it in "
	# a capability under the ceiling is fine
	run_moat exec --cap CAP_CHOWN "$CID" sh -c 'grep CapBnd /proc/self/status'
	assert_success
	assert_output "$(printf 'CapBnd:\t0000000000000001')"
}

@test "no-new-privileges: an exec'd process asking for no_new_privs off gets it on" {
	make_bundle
	cfg_args sleep 60
	MOAT_TEST_POLICY=$HARDENED
	moat_create_started
	jq '.process | .args = ["grep", "NoNewPrivs", "/proc/self/status"] | .noNewPrivileges = false' "$CONFIG" >"$TEST_DIR/process.json"
	run_moat exec --process "$TEST_DIR/process.json" "$CID"
	assert_success
	assert_output "$(printf 'NoNewPrivs:\t1')"
	# with the rule off, it is as asked
	local policy
	policy=$(write_policy nonnp '{"rules": {"no-new-privileges": {"enabled": false}}}')
	run_moat --policy "$policy" exec --process "$TEST_DIR/process.json" "$CID"
	assert_success
	assert_output "$(printf 'NoNewPrivs:\t0')"
}

@test "deny-devices: update --resources opening every device is refused, and nothing changes" {
	make_bundle
	cfg_args sleep 60
	MOAT_TEST_POLICY=$HARDENED
	moat_create_started
	local pids_max=/sys/fs/cgroup/pids/moat/$CID/pids.max before
	[[ -f $pids_max ]] || pids_max=$(find /sys/fs/cgroup -path "*/moat/$CID/pids.max" | head -1)
	before=$(cat "$pids_max")
	echo '{"devices": [{"allow": true, "access": "rwm"}], "pids": {"limit": 77}}' >"$TEST_DIR/res.json"
	run_moat update --resources "$TEST_DIR/res.json" "$CID"
	assert_moat_error "^moat: update: policy deny-devices: linux\\.resources\\.devices\\[0\\] allows every device; allow it in $(re "$HARDENED")\$"
	assert_equal "$(cat "$pids_max")" "$before"
	# one device by number is fine
	echo '{"devices": [{"allow": true, "type": "c", "major": 1, "minor": 3, "access": "rwm"}]}' >"$TEST_DIR/res.json"
	run_moat update --resources "$TEST_DIR/res.json" "$CID"
	assert_success
}
