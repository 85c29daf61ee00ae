#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# At the cgroup v2 test host's boot (moat-testhost.service, tests/testhost/README.md):
# mount the host's two shares, the results directory (tag moatresults, writable) and moat's
# tree (tag moattree, read-only, at the path the request names, the host's own), then run
# the tree's guest-run.sh with the request. Baked into the image: the rest of what runs in
# the guest comes from the tree, so a change to it needs no new image.
set -u
results=/run/moat-testhost
opts=trans=virtio,version=9p2000.L,msize=262144
mkdir -p "$results"
if ! mount -t 9p -o "$opts" moatresults "$results"; then
	echo "moat-testhost: no results share: nothing to do" >&2
	exit 0
fi
if [ ! -r "$results/request" ]; then
	echo "moat-testhost: no request in the results share" >&2
	exit 0
fi
# shellcheck disable=SC1091 # the host writes it: TREE=...
. "$results/request"
mkdir -p "$TREE"
# cache=loose: the tree does not change while the tests run (the host's runner must not
# rebuild it meanwhile), so the guest keeps what it read in its page cache. With 9p's
# default, every exec of moat and every file bats sources crosses the share again, under TCG.
if ! mount -t 9p -o "$opts,ro,cache=loose" moattree "$TREE"; then
	echo "moat-testhost: cannot mount moat's tree at $TREE" >"$results/error"
	exit 0
fi
exec "$TREE/tests/testhost/guest-run.sh" "$results"
