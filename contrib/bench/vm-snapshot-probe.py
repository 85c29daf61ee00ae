#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Can a moat guest be saved once its agent is READY and restored for another container, and
how fast? The measurement behind docs/microvm-snapshot.md (issue 21); moat does not do this
yet.

    contrib/bench/vm-snapshot-probe.py [-n N] [VM_DIR]

It boots QEMU with moat's command line for a TCG guest (as vm-bench.sh's bare boot does, plus
a QMP socket) until the agent's READY, stops it and saves it to a file through an fd
(migrate "fd:", as a jailed QEMU without spawn would have to). Then N times: a new QEMU
restores that file with -incoming, sharing another, empty root directory over 9p, runs on,
and is sent SHUTDOWN on the agent's port; the agent's power-off (QEMU's exit 0) shows it is
alive. It prints the boot, the save, each restore until the guest runs again and the agent's
answer. Must run as root; writes only under a temporary directory.
"""
import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time

from moat_qemu import qemu_argv, wait_ready

MSG_SHUTDOWN = 0x06


def probe_argv(vmdir, rootfs, agent_fd, qmp_path, extra=()):
    return qemu_argv(vmdir, rootfs, agent_fd, "tcg",
                     ("-qmp", f"unix:{qmp_path},server=on,wait=off", *extra))


class QMP:
    def __init__(self, path):
        for _ in range(500):
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                time.sleep(0.01)
        else:
            raise SystemExit(f"no QMP socket at {path}")
        self.lines = self.sock.makefile("r")
        self.lines.readline()
        self.cmd("qmp_capabilities")

    def cmd(self, name, args=None, fds=()):
        msg = json.dumps({"execute": name, **({"arguments": args} if args else {})}).encode()
        socket.send_fds(self.sock, [msg], list(fds))
        while True:
            reply = json.loads(self.lines.readline())
            if "error" in reply:
                raise SystemExit(f"QMP {name}: {reply['error']['desc']}")
            if "return" in reply:
                return reply["return"]

    def close(self):
        self.lines.close()
        self.sock.close()


def start(argv_of):
    host, guest = socket.socketpair()
    p = subprocess.Popen(argv_of(guest.fileno()), pass_fds=(guest.fileno(),) + argv_of.fds)
    guest.close()
    return p, host


def wait_migration(q):
    while True:
        st = q.cmd("query-migrate")
        if st.get("status") == "completed":
            return
        if st.get("status") == "failed":
            raise SystemExit(f"migration failed: {st.get('error-desc', '')}")
        time.sleep(0.005)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("vmdir", nargs="?", default=os.path.join(here, "..", "..", "vm"))
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="moat-snapshot-")
    try:
        roots = [os.path.join(work, r) for r in ("root-a", "root-b")]
        for r in roots:
            os.makedirs(r)

        def first(fd):
            return probe_argv(a.vmdir, roots[0], fd, f"{work}/qmp-a")
        first.fds = ()
        t0 = time.monotonic()
        p, host = start(first)
        wait_ready(host, "boot")
        boot = time.monotonic() - t0
        q = QMP(f"{work}/qmp-a")
        q.cmd("stop")
        with open(f"{work}/snapshot", "wb") as f:
            q.cmd("getfd", {"fdname": "snap"}, [f.fileno()])
            t1 = time.monotonic()
            q.cmd("migrate", {"uri": "fd:snap"})
            wait_migration(q)
            save = time.monotonic() - t1
        q.close()
        p.kill()
        p.wait()
        host.close()
        size = os.path.getsize(f"{work}/snapshot")
        print(f"boot to READY {boot * 1000:.0f} ms; saved in {save * 1000:.0f} ms, "
              f"{size / 1e6:.1f} MB")
        for i in range(a.n):
            snap = os.open(f"{work}/snapshot", os.O_RDONLY)

            def restored(fd, snap=snap):
                return probe_argv(a.vmdir, roots[1], fd, f"{work}/qmp-b", ("-incoming", f"fd:{snap}"))
            restored.fds = (snap,)
            t2 = time.monotonic()
            p, host = start(restored)
            os.close(snap)
            q = QMP(f"{work}/qmp-b")
            wait_migration(q)
            q.cmd("cont")
            running = time.monotonic() - t2
            host.sendall(struct.pack("<IHI", 0, MSG_SHUTDOWN, 0))
            rc = p.wait(timeout=60)
            answered = time.monotonic() - t2 - running
            q.close()
            host.close()
            print(f"restore {i + 1}: running after {running * 1000:.0f} ms "
                  f"({running / boot:.2f} of the boot); SHUTDOWN obeyed in {answered * 1000:.0f} ms, "
                  f"QEMU exit {rc}")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
