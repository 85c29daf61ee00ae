# SPDX-License-Identifier: GPL-2.0-or-later
"""QEMU with the command line moat gives a microVM (src/libmoat/vm/vm-launch.c), and the wait
for its agent's READY, for the benchmarks that boot a guest without moat: vm-bench.sh's bare
boot and vm-snapshot-probe.py.
Keep it in step with vm-launch.c; what it leaves out is said below."""


def qemu_argv(vmdir, rootfs, agent_fd, accel="tcg", extra=()):
    """The argv of a 1-vCPU, 256 MiB guest booting moat's kernel and agent, its root shared
    over 9p from rootfs, the agent's port on the socket agent_fd. Left out: the jail, QEMU's
    seccomp filter (-sandbox), the pod's share, the egress port and tsc_early_khz= (the host's
    TSC rate, which moat measures: without it the guest calibrates against the PIT)."""
    return ["/usr/bin/qemu-system-x86_64", "-M", "microvm,acpi=off,x-option-roms=off,rtc=off",
            "-accel", accel, "-cpu", "max,erms=off" if accel == "tcg" else "host", "-smp", "1",
            "-m", "256M", "-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
            "-kernel", f"{vmdir}/moat-guest-kernel", "-initrd", f"{vmdir}/moat-initramfs",
            "-append", "console=hvc0 quiet panic=-1 reboot=t no_timer_check"
            + (" tsc=reliable" if accel == "tcg" else "") + " moat.rootfs=9p",
            "-device", "virtio-serial-device,max_ports=2", "-chardev", "null,id=con",
            "-device", "virtconsole,chardev=con", "-chardev", f"socket,id=agent,fd={agent_fd}",
            "-device", "virtserialport,chardev=agent,name=moat.0",
            "-fsdev", f"local,id=root,path={rootfs},security_model=none",
            "-device", "virtio-9p-device,fsdev=root,mount_tag=moatroot", *extra]


MSG_READY = 0x81


def wait_ready(sock, who):
    """Read the agent's first frame from its port's socket; fail, naming who, unless it is
    READY (frame header: u32 length, u16 type, u32 id)."""
    frame = b""
    while len(frame) < 10:
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit(f"{who}: the agent never answered")
        frame += chunk
    if frame[4] != MSG_READY:
        raise SystemExit(f"{who}: the first frame is not READY")
