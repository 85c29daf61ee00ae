#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# A microVM on the container's network (docs/microvm-network.md): the interfaces of the
# network namespace the config joins reach the guest through a tap and a tc redirect, with
# their addresses moved into the guest and put back at delete. The namespaces, the veth
# pair and the peer's server are this file's own; nothing talks to any other address.
# shellcheck disable=SC2154 # bats sets status, output

load helpers

setup_file() {
	microvm_setup_file
}

setup() {
	microvm_setup
	# the container's namespace and a peer's, each held by a sleeping process
	unshare --net sleep 600 3>&- &
	echo $! >"$TEST_DIR/cns.pid"
	unshare --net sleep 600 3>&- &
	echo $! >"$TEST_DIR/pns.pid"
	CNS=/proc/$(cat "$TEST_DIR/cns.pid")/ns/net
	PNS=/proc/$(cat "$TEST_DIR/pns.pid")/ns/net
	retry bash -c "[[ \$(readlink $CNS) != \$(readlink /proc/self/ns/net) && \$(readlink $PNS) != \$(readlink /proc/self/ns/net) ]]"
	in_c ip link add eth0 type veth peer name peer0
	in_c ip link set peer0 netns "$(cat "$TEST_DIR/pns.pid")"
	in_c ip link set eth0 mtu 1400 up
	in_c ip addr add 10.231.0.2/24 dev eth0
	in_c ip addr add fd00:231::2/64 dev eth0 nodad
	in_c ip route add default via 10.231.0.1
	in_p ip link set lo up
	in_p ip link set peer0 mtu 1400 up
	in_p ip addr add 10.231.0.1/24 dev peer0
	in_p ip addr add fd00:231::1/64 dev peer0 nodad
	cfg_set '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' --arg p "$CNS"
	mkdir -p "$BUNDLE/rootfs/www" "$TEST_DIR/pwww"
	echo from-guest >"$BUNDLE/rootfs/www/index.html"
	echo from-peer >"$TEST_DIR/pwww/index.html"
}

teardown() {
	moat delete --force "$CID" >/dev/null 2>&1 || true
	local f
	for f in cns pns phttpd; do
		[[ -f $TEST_DIR/$f.pid ]] && kill "$(cat "$TEST_DIR/$f.pid")" 2>/dev/null
	done
	moat_teardown
}

in_c() {
	nsenter --net="$CNS" "$@"
}

in_p() {
	nsenter --net="$PNS" "$@"
}

@test "microvm network: the guest holds the container's addresses; the peer reaches it and it reaches the peer, over IPv4 and IPv6" {
	local mac
	# (ip, not /sys/class/net: nsenter --net keeps the host's sysfs)
	mac=$(in_c ip -o link show dev eth0 | sed 's|.*link/ether \([^ ]*\).*|\1|')
	# (nsenter, not in_p: $! must be the server itself, which nsenter becomes)
	nsenter --net="$PNS" busybox httpd -f -p 8081 -h "$TEST_DIR/pwww" 3>&- &
	echo $! >"$TEST_DIR/phttpd.pid"
	cfg_sh 'cat /sys/class/net/eth0/address /sys/class/net/eth0/mtu > /www/seen
		ip -o addr show dev eth0 | grep -v fe80 | awk "{print \$4}" >> /www/seen
		ip route | grep default >> /www/seen
		wget -q -O - http://10.231.0.1:8081/ >> /www/seen
		wget -q -O - "http://[fd00:231::1]:8081/" >> /www/seen
		exec httpd -f -p 8080 -h /www'
	run_moat run --detach --bundle "$BUNDLE" "$CID"
	assert_success
	retry in_p busybox wget -q -O /dev/null http://10.231.0.2:8080/
	assert_equal "$(in_p busybox wget -q -O - http://10.231.0.2:8080/)" from-guest
	assert_equal "$(in_p busybox wget -q -O - 'http://[fd00:231::2]:8080/')" from-guest
	assert_equal "$(cat "$BUNDLE/rootfs/www/seen")" \
		"$mac"$'\n1400\n10.231.0.2/24\nfd00:231::2/64\ndefault via 10.231.0.1 dev eth0 \nfrom-peer\nfrom-peer'
	# the host side holds no address for the container, and the state says where they went
	assert_equal "$(in_c ip -o addr show dev eth0 | grep -cv fe80)" 0
	state_of | jq -e '.annotations["moat.vm.network"] == "eth0 10.231.0.2/24 fd00:231::2/64"'
	run_moat delete --force "$CID"
	assert_success
	# all back as it was: the addresses, the route, no qdisc, no tap
	assert_equal "$(in_c ip -o addr show dev eth0 | grep -v fe80 | awk '{print $4}' | sort | tr '\n' ' ')" \
		"10.231.0.2/24 fd00:231::2/64 "
	in_c ip route | grep -qx 'default via 10.231.0.1 dev eth0 '
	assert_equal "$(in_c tc qdisc show dev eth0 | grep -c ingress)" 0
	assert_equal "$(in_c ip -o link | grep -c moat-tap)" 0
}

@test "microvm network: more interfaces than the guest takes fail create with one line; everything is put back" {
	# eth0 and four more veth pairs: nine interfaces
	for i in $(seq 4); do
		in_c ip link add "v$i" type veth peer name "w$i"
		in_c ip addr add "10.232.$i.1/24" dev "v$i"
	done
	cfg_sh true
	run_moat create --bundle "$BUNDLE" "$CID"
	assert_failure
	assert_moat_error "^moat: microvm: interface [a-z0-9]+: at most 8 interfaces reach the guest\$"
	assert_equal "$(in_c ip -o -4 addr show | grep -c 10.23)" 5
	assert_equal "$(in_c tc qdisc show | grep -c ingress)" 0
	[[ ! -e $MOAT_ROOT/$CID ]] || fail "the state directory remains"
}

@test "microvm network: a second container on the same namespace joins the first's pod: it runs in that guest, on its network" {
	cfg_sh 'exec httpd -f -p 8080 -h /www'
	run_moat run --detach --bundle "$BUNDLE" "$CID"
	assert_success
	retry in_p busybox wget -q -O /dev/null http://10.231.0.2:8080/
	# (nsenter, not in_p: $! must be the server itself, which nsenter becomes)
	nsenter --net="$PNS" busybox httpd -f -p 8081 -h "$TEST_DIR/pwww" 3>&- &
	echo $! >"$TEST_DIR/phttpd.pid"
	# the same bundle, so the same namespace: no VM of its own, no interface taken twice
	cfg_sh 'wget -q -O - http://10.231.0.1:8081/; wget -q -O - http://127.0.0.1:8080/'
	run_moat run --bundle "$BUNDLE" "$CID-2"
	assert_success
	assert_equal "$output" $'from-peer\nfrom-guest'
	[[ ! -e $MOAT_ROOT/$CID-2 ]] || fail "the second state directory remains"
	# nothing of the first was undone
	assert_equal "$(in_p busybox wget -q -O - http://10.231.0.2:8080/)" from-guest
	assert_equal "$(in_c ip -o addr show dev eth0 | grep -cv fe80)" 0
	assert_equal "$(in_c tc qdisc show | grep -c ingress)" 2
}

# Docker's libnetwork moves its veth in from a prestart hook, after create took the
# namespace's interfaces: such an interface is refused, never left behind silently.
@test "microvm network: an interface a prestart hook adds is refused with one line; eth0 gets its addresses back" {
	cfg_sh true
	cfg_set '.hooks.prestart = [{path: "/usr/bin/nsenter",
		args: ["nsenter", ("--net=" + $ns), "ip", "link", "add", "late0", "type", "veth", "peer", "name", "late1"]}]' \
		--arg ns "$CNS"
	run_moat create --bundle "$BUNDLE" "$CID"
	assert_failure
	assert_moat_error "^moat: microvm: interface late[01] appeared after create took the namespace's interfaces into the guest"
	[[ ! -e $MOAT_ROOT/$CID ]] || fail "the state directory remains"
	assert_equal "$(in_c ip -o addr show dev eth0 | grep -v fe80 | awk '{print $4}' | sort | tr '\n' ' ')" \
		"10.231.0.2/24 fd00:231::2/64 "
	assert_equal "$(in_c tc qdisc show dev eth0 | grep -c ingress)" 0
}

# Docker's libnetwork gives a container's own network namespace its veth from a prestart
# hook (libnetwork-setkey), after create forked the init: moat takes the interfaces that are
# there once the hooks ran. This hook does what libnetwork does, with the peer's namespace
# of this test for the other end.
@test "microvm network: the interface a prestart hook gives the container's own namespace (as Docker's libnetwork does) reaches the guest" {
	cat >"$TEST_DIR/hook.sh" <<-HOOK
		set -e
		pid=\$(jq -r .pid)
		nsenter --net=$PNS ip link add hpeer type veth peer name eth0 netns "\$pid"
		nsenter --net=$PNS ip addr add 10.233.0.1/24 dev hpeer
		nsenter --net=$PNS ip link set hpeer up
		nsenter -t "\$pid" -n ip addr add 10.233.0.2/24 dev eth0
		nsenter -t "\$pid" -n ip link set eth0 up
		nsenter -t "\$pid" -n ip route add default via 10.233.0.1
	HOOK
	cfg_set '.linux.namespaces |= map(if .type == "network" then del(.path) else . end)
		| .hooks.prestart = [{path: "/bin/bash", args: ["bash", $hook]}]' --arg hook "$TEST_DIR/hook.sh"
	cfg_sh 'ip -o -4 addr show dev eth0 | awk "{print \$4}" > /www/seen; exec httpd -f -p 8080 -h /www'
	run_moat run --detach --bundle "$BUNDLE" "$CID"
	assert_success
	retry in_p busybox wget -q -O /dev/null http://10.233.0.2:8080/
	assert_equal "$(in_p busybox wget -q -O - http://10.233.0.2:8080/)" from-guest
	assert_equal "$(cat "$BUNDLE/rootfs/www/seen")" 10.233.0.2/24
	state_of | jq -e '.annotations["moat.vm.network"] == "eth0 10.233.0.2/24"'
	run_moat delete --force "$CID"
	assert_success
	# the namespace went with the container, and the veth with it
	retry bash -c "! nsenter --net=$PNS ip link show hpeer >/dev/null 2>&1"
}
