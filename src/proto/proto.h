/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the wire protocol between the microVM supervisor (host) and the guest
 * agent (PID 1 in the guest), spoken over one virtio-serial port, `moat.0`.
 *
 * This file is shared by both sides and knows nothing of either: it encodes
 * and decodes messages and checks every limit. Each side treats the other as
 * hostile: a decoder never reads outside its input, never allocates more
 * than the frame it was given justifies, and refuses anything it does not
 * fully understand with a one-line error naming the message and the field.
 *
 * FRAMES
 *   offset 0  u32  payload length (little-endian), at most MOAT_PROTO_MAX_PAYLOAD
 *   offset 4  u16  message type (MOAT_MSG_*)
 *   offset 6  u32  id: the process the message is about (0: the agent itself)
 *   offset 10      payload: a sequence of fields
 * A frame whose length is over the limit cannot be skipped safely: the stream
 * is broken and the reader must give up on it. Any other bad frame can be
 * skipped whole (its length is trusted once it is in bounds).
 *
 * FIELDS (TLV)
 *   u16 tag, u32 length (little-endian), then length bytes of value.
 *   Integers are little-endian and exactly as wide as their type (u8, u16,
 *   u32, u64); booleans are a u8 that is 0 or 1. Strings carry no NUL and may
 *   not contain one; text is a string without control characters (bytes
 *   below 0x20, and 0x7f), safe to print. Lists of strings or of objects
 *   repeat their tag, in order; a tag that is not a list may appear once. An
 *   object field's value is itself a sequence of fields.
 *   Tag bit 0x8000 (MOAT_TAG_IGNORABLE) marks a field that a receiver which
 *   does not know it may skip. A receiver refuses an unknown tag without that
 *   bit: a new security setting is never dropped silently. Tags are numbered
 *   per object. Every field listed below is known to version 1 and none has
 *   the bit.
 *
 * PROCESS IDS
 *   The host chooses the id of every process: the workload's in START, each
 *   exec'd process's in EXEC. Ids are non-zero and unique among the processes
 *   the agent still knows (until it has sent their EXITED). Id 0 means the
 *   agent itself: READY, SHUTDOWN, and an ERROR about no one process.
 *
 * MESSAGES, host -> guest
 *   START    (0x01, id = workload)  start the container: set up the rootfs
 *            and run the workload. Sent once.
 *              1 process        object, required (see PROCESS SPEC)
 *              2 mount          object, list, at most MOAT_PROTO_MAX_MOUNTS,
 *                               done in order (see MOUNT)
 *              3 hostname       string, at most MOAT_PROTO_MAX_HOSTNAME
 *              4 root_readonly  bool: remount the rootfs read-only last
 *              5 winsize        object: initial terminal size (see WINSIZE)
 *              6 namespaces     u32 mask of MOAT_PROTO_NS_*: namespaces of its own
 *                               the workload gets in the guest (it always gets a
 *                               mount namespace); exec'd processes join them
 *              7 resources      object: limits on the workload and the processes
 *                               exec'd into it, in a cgroup of the guest's (see
 *                               RESOURCES)
 *              8 realtime       u64, 1..: the host's wall clock (ns since the epoch)
 *                               when it sent START; the guest has no RTC and sets
 *                               its clock to this (certificates check the date)
 *              9 interface      object, list, at most MOAT_PROTO_MAX_INTERFACES: a
 *                               network interface of the container's, whose traffic
 *                               the guest's virtio-net devices carry, in order (see
 *                               INTERFACE; docs/microvm-network.md)
 *             11 masked         string, list, at most MOAT_PROTO_MAX_MOUNTS: absolute
 *                               paths (linux.maskedPaths) covered once the mounts are
 *                               made, a directory by an empty read-only tmpfs, anything
 *                               else by /dev/null; a missing one is left alone
 *             12 readonly       string, list, at most MOAT_PROTO_MAX_MOUNTS: absolute
 *                               paths (linux.readonlyPaths) bound onto themselves
 *                               read-only before the masks; a missing one is left alone
 *             13 seed           bytes, MOAT_PROTO_SEED_SIZE: host randomness the agent
 *                               credits to the guest's RNG and reseeds it with before
 *                               anything runs; a guest restored from a snapshot starts
 *                               with the RNG state every other restore has
 *   EXEC     (0x02, id = new process)  run one more process in a container.
 *              1 process        object, required
 *              2 winsize        object: initial terminal size
 *              3 container      u32, 1..: the id of the first process of the container
 *                               to run it in (a CONTAINER's); absent: START's
 *   DATA     (0x03, MOAT_MSG_STDIN)  bytes for the process's stdin (or pty).
 *              1 bytes          bytes, required, at most MOAT_PROTO_MAX_DATA;
 *                               empty: close stdin
 *            The host may have at most MOAT_PROTO_STDIN_WINDOW bytes of a
 *            process's stdin unacknowledged; CREDIT acknowledges them.
 *   SIGNAL   (0x04)  1 signo    u32, 1..MOAT_PROTO_MAX_SIGNAL, required
 *   RESIZE   (0x05)  1 winsize  object, required: the new terminal size
 *   SHUTDOWN (0x06, id = 0)  kill every process, sync, power off. No fields.
 *   CONTAINER (0x07, id = its first process)  make one more container, a member of the
 *            pod that START's workload holds (docs/microvm-network.md), and run its
 *            process. Fields 1..7, 11 and 12 as in START (interface, realtime and seed
 *            are START's only), and:
 *             10 name           text, 1..MOAT_PROTO_MAX_NAME, required: the container's
 *                               directory in the pod's share (MOAT_PROTO_POD_TAG), which
 *                               holds its rootfs and the host's binds in it; a file name,
 *                               neither "." nor ".." nor with a '/'
 *            Its namespaces field lists those it gets of its own; each of PID, IPC, UTS and
 *            cgroup it does not get, it shares with START's workload. It always has a mount
 *            namespace and a cgroup of its own in the guest. Sent once START's workload runs,
 *            any number of times; each container ends with its first process.
 *   FREEZE   (0x08, id = a container's first process)  stop or resume every process of
 *            that container (START's or a CONTAINER's), as cgroup.freeze does.
 *              1 frozen         bool: freeze (1) or thaw (0)
 *   UPDATE   (0x09, id = a container's first process)  new limits for that container (START's
 *            or a CONTAINER's): what `moat update` changed. Its cgroup's pids.max,
 *            memory.max and cpu.max become these; an absent one means no limit, as in START.
 *            (The host sends memory_limit for a pod's member only: the workload's memory is
 *            the guest's, fixed when it boots.)
 *              1 resources      object, required (see RESOURCES)
 *   STATS    (0x0a, id = a container's first process)  what that container's cgroup in the
 *            guest has counted: answered by USAGE. No fields.
 *
 * MESSAGES, guest -> host
 *   READY    (0x81, id = 0)  the agent is up, sent once before anything else;
 *            an ERROR with id 0 right after it means the guest is
 *            misconfigured (a bad moat.* kernel option), and START will fail.
 *              1 version        u32, required: MOAT_PROTO_VERSION
 *              2 release        text, required: the guest kernel's `uname -r`
 *   STARTED  (0x82)  the process runs (its execve is next).
 *              1 pid            u32, 1..MOAT_PROTO_MAX_PID, required
 *   DATA     (0x83, MOAT_MSG_OUTPUT)  output of a process.
 *              1 stream         u8, required: 1 stdout (and a pty's output),
 *                               2 stderr
 *              2 bytes          bytes, required, at most MOAT_PROTO_MAX_DATA;
 *                               empty: the stream reached end of file
 *   EXITED   (0x84)  the process ended; its last DATA was sent before this.
 *              1 status         u32, 0..255: it exited with this status
 *              2 signal         u32, 1..MOAT_PROTO_MAX_SIGNAL: a signal killed it
 *              exactly one of the two; moat_proto_exit_code() gives the
 *              shell's number (status, or 128 + signal).
 *   ERROR    (0x85)  something failed; for a process id, the process did not
 *            start (no STARTED, no EXITED follow) or it broke after starting
 *            (EXITED still follows).
 *              1 message        text, required, one line, at most
 *                               MOAT_PROTO_MAX_MESSAGE, e.g.
 *                               "exec /bin/foo: No such file or directory"
 *              2 errno          u32, 1..4095: the cause, when it is one
 *   CREDIT   (0x86)  the agent consumed stdin bytes of the process.
 *              1 bytes          u32, 1..MOAT_PROTO_STDIN_WINDOW, required
 *   FROZEN   (0x87, id = a container's first process)  the answer to FREEZE: whether
 *            every process of the container is stopped now.
 *              1 frozen         bool: as FREEZE asked, or the other when it failed
 *   UPDATED  (0x88, id = as UPDATE)  the answer to UPDATE: the limits hold. No fields.
 *            When they could not be set, an ERROR with the same id answers instead.
 *   USAGE    (0x89, id = as STATS)  the answer to STATS, read from the container's cgroup in
 *            the guest; an ERROR with the same id answers instead when it could not be. Each
 *            count is at most 2^63 - 1, each CPU time at most (2^63 - 1) / 1000.
 *              1 oom_kills      u64, required: its processes the OOM killer ended
 *                               (memory.events oom_kill), the guest's global OOM included
 *              2 pids_max       u64, required: forks refused at pids.max (pids.events max)
 *              3 pids_peak      u64: the most processes it held at once (pids.peak)
 *              4 memory_peak    u64: its most memory in use, bytes (memory.peak)
 *              5 cpu_user_us    u64, required: CPU time in user mode (cpu.stat user_usec)
 *              6 cpu_system_us  u64, required: and in the kernel (cpu.stat system_usec)
 *
 * PROCESS SPEC (object, in START and EXEC)
 *    1 arg            string, list, 1..MOAT_PROTO_MAX_ARGS, required
 *    2 env            string "NAME=value", list, at most MOAT_PROTO_MAX_ENV
 *    3 cwd            absolute path, required
 *    4 uid, 5 gid     u32, required, not 0xffffffff
 *    6 groups         u32 array (4 bytes each), additional gids
 *    7 umask          u32, at most 0777; absent: 0022
 *    8 cap_bounding, 9 cap_effective, 10 cap_inheritable,
 *   11 cap_permitted, 12 cap_ambient
 *                     u64 bitmask (bit n = capability n); absent: empty
 *   13 rlimit         object, list, one per resource (see RLIMIT)
 *   14 no_new_privs   bool
 *   15 terminal       bool: run on a pty (output comes as stream 1)
 *   16 seccomp        classic BPF program: an array of struct sock_filter
 *                     (u16 code, u8 jt, u8 jf, u32 k), 8 bytes each,
 *                     1..MOAT_PROTO_MAX_BPF_INSNS instructions, for the
 *                     guest's architecture; installed last before execve
 *   17 seccomp_flags  u32, SECCOMP_FILTER_FLAG_* within
 *                     MOAT_PROTO_SECCOMP_FLAGS; only with a program
 * RLIMIT (object)   1 type u32 (< MOAT_PROTO_MAX_RLIMITS), 2 soft u64,
 *                   3 hard u64; all required, soft <= hard
 * WINSIZE (object) 1 rows u16, 2 cols u16; both required
 * RESOURCES (object) 1 pids_limit  u64, 1..MOAT_PROTO_MAX_PIDS_LIMIT: pids.max
 *                    2 cpu_quota   u64 microseconds, MOAT_PROTO_MIN_CPU_QUOTA..
 *                                  MOAT_PROTO_MAX_CPU_QUOTA, per period: cpu.max
 *                    3 cpu_period  u64 microseconds, MOAT_PROTO_MIN_CPU_PERIOD..
 *                                  MOAT_PROTO_MAX_CPU_PERIOD; only with a quota;
 *                                  absent: MOAT_PROTO_DEFAULT_CPU_PERIOD
 *                    4 memory_limit u64 bytes, MOAT_PROTO_MIN_MEMORY_LIMIT..: memory.max
 *                    each absent: no limit
 * INTERFACE (object) 1 name     text, 1..MOAT_PROTO_MAX_IFNAME, required: the guest's
 *                               device is renamed to it
 *                    2 mac      bytes, exactly 6, required
 *                    3 mtu      u32, MOAT_PROTO_MIN_MTU..MOAT_PROTO_MAX_MTU, required
 *                    4 address  object, list, at most MOAT_PROTO_MAX_IFADDRS
 *                               (see IFADDR)
 *                    5 route    object, list, at most MOAT_PROTO_MAX_ROUTES, added
 *                               after the addresses (see ROUTE)
 * IFADDR (object)   1 address   bytes, 4 (IPv4) or 16 (IPv6), required
 *                   2 prefix    u8, at most 32 or 128, required
 * ROUTE (object)    1 dst       bytes, 4 or 16, required (0.0.0.0 with length 0:
 *                               the default route)
 *                   2 dst_len   u8, at most 32 or 128, required
 *                   3 gateway   bytes, as long as dst
 *                   4 priority  u32 (the metric)
 * MOUNT (object)    1 type    string, required (a filesystem, "bind", or
 *                             MOAT_PROTO_SHARE_MOUNT: a bind the host made at
 *                             dest, which the guest must see there, over any
 *                             guest mount made before it; flags: MS_RDONLY,
 *                             MS_NOSUID, MS_NODEV, MS_NOEXEC)
 *                   2 source  string, at most a path long; for a bind mount,
 *                             a path inside the rootfs
 *                   3 dest    absolute path inside the rootfs, required
 *                   4 flags   u64, MS_* as for mount(2) (MS_BIND, MS_REC,
 *                             propagation and MS_RDONLY included)
 *                   5 data    string, at most MOAT_PROTO_MAX_MOUNT_DATA
 *
 * ORDER AND FLOW
 *   The agent sends READY once the host's end of the port is open, then
 *   waits for START. For each process: STARTED, DATA, then EXITED after the
 *   last DATA of both streams (an empty DATA marks each stream's end); or
 *   ERROR and nothing else when it could not be started. When a CONTAINER's
 *   first process exits, the agent kills every other process of that
 *   container (they get their EXITED too). When the workload
 *   exits the agent kills every other process (they get their EXITED too),
 *   sends the workload's EXITED, and waits for SHUTDOWN, which the host
 *   sends once it has read everything: the guest cannot see what the host
 *   has read, so it never powers off on its own while the host is there.
 *   It powers off on SHUTDOWN (after a moment to write what is queued), or
 *   at once when the host closes its end. If START fails (ERROR for the
 *   workload's id) the agent waits for SHUTDOWN the same way. A frame the
 *   agent cannot use gets an ERROR with id 0 and is skipped; after a frame
 *   over the size limit the agent reads nothing more, kills the workload
 *   and waits for the host to close its end.
 *   Closing stdin of a process on a terminal sends the terminal's
 *   end-of-file character instead (closing would hang the session up).
 *   Output is flow-controlled by the transport: a host that stops reading
 *   stops the workload at its next write. Stdin is flow-controlled by
 *   CREDIT: stdin for a closed or exited process is dropped and credited.
 *   Both sides must read and write the socket without blocking, or they can
 *   deadlock each other.
 */
#ifndef MOAT_GUEST_PROTO_H
#define MOAT_GUEST_PROTO_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define MOAT_PROTO_VERSION 1

/* Every limit on what the peer sends, with the reason for its value. */
enum {
	/* The frame header: u32 length, u16 type, u32 id. */
	MOAT_PROTO_HEADER_SIZE = 10,
	/* The largest message needed is START: a filter of 4096 instructions is
	 * 32 KiB, and args, env and mounts of real configs stay far below the
	 * rest. It bounds what either side buffers for one frame. */
	MOAT_PROTO_MAX_PAYLOAD = 1 << 20,
	/* One pipe buffer: a sender splits larger output, so one stream cannot
	 * hold the port for long. */
	MOAT_PROTO_MAX_DATA = 64 << 10,
	/* Stdin the host may send ahead of the agent's CREDIT, per process:
	 * what the agent buffers for a process that does not read its stdin. */
	MOAT_PROTO_STDIN_WINDOW = 256 << 10,
	/* Far above any real command line or environment; it bounds the
	 * pointer arrays one message makes the decoder allocate. */
	MOAT_PROTO_MAX_ARGS = 8192,
	MOAT_PROTO_MAX_ENV = 8192,
	/* MAX_ARG_STRLEN: execve refuses a longer argument or variable. */
	MOAT_PROTO_MAX_STRING = 32 * 4096,
	/* PATH_MAX, its NUL included: the kernel refuses longer paths. */
	MOAT_PROTO_MAX_PATH = 4095,
	/* HOST_NAME_MAX: sethostname refuses longer. */
	MOAT_PROTO_MAX_HOSTNAME = 64,
	/* START's seed: 256 bits, what the kernel's CRNG keys itself with. */
	MOAT_PROTO_SEED_SIZE = 32,
	/* Filesystem type names are short words ("tmpfs", "devpts"). */
	MOAT_PROTO_MAX_FSTYPE = 64,
	/* mount(2) copies one page of options, its NUL included. */
	MOAT_PROTO_MAX_MOUNT_DATA = 4095,
	/* Far above the mounts of any real config (a few dozen). */
	MOAT_PROTO_MAX_MOUNTS = 512,
	/* A container with more NICs than a microvm has virtio-mmio slots to spare is not
	 * one moat serves; addresses and routes per interface far above real configs. */
	MOAT_PROTO_MAX_INTERFACES = 8,
	MOAT_PROTO_MAX_IFADDRS = 32,
	MOAT_PROTO_MAX_ROUTES = 64,
	/* IFNAMSIZ without its NUL. */
	MOAT_PROTO_MAX_IFNAME = 15,
	/* IPv4's minimum (RFC 791) and what a virtio-net device takes. */
	MOAT_PROTO_MIN_MTU = 68,
	MOAT_PROTO_MAX_MTU = 65535,
	/* NGROUPS_MAX: setgroups refuses more. */
	MOAT_PROTO_MAX_GROUPS = 65536,
	/* RLIM_NLIMITS: one entry per resource. */
	MOAT_PROTO_MAX_RLIMITS = 16,
	/* BPF_MAXINSNS: seccomp refuses a longer classic program. */
	MOAT_PROTO_MAX_BPF_INSNS = 4096,
	/* Signals 1.._NSIG-1 on Linux. */
	MOAT_PROTO_MAX_SIGNAL = 64,
	/* PID_MAX_LIMIT on 64-bit Linux. */
	MOAT_PROTO_MAX_PID = 4 * 1024 * 1024,
	/* An error is one line a person reads; a path or two fits. */
	MOAT_PROTO_MAX_MESSAGE = 1024,
	/* __NEW_UTS_LEN: the size of utsname.release. */
	MOAT_PROTO_MAX_RELEASE = 64,
	/* Errno values are below 4096 (MAX_ERRNO). */
	MOAT_PROTO_MAX_ERRNO = 4095,
	/* PID_MAX_LIMIT of a 64-bit kernel, the most any pids.max takes (a guest kernel
	 * built small takes less: there the agent writes "max", the same limit). */
	MOAT_PROTO_MAX_PIDS_LIMIT = 4 * 1024 * 1024,
	/* cpu.max, as the kernel takes it (tg_set_cfs_bandwidth): a period of 1 ms to 1 s,
	 * a quota of at least 1 ms; the period cgroups default to. */
	MOAT_PROTO_MIN_CPU_PERIOD = 1000,
	MOAT_PROTO_MAX_CPU_PERIOD = 1000000,
	MOAT_PROTO_DEFAULT_CPU_PERIOD = 100000,
	MOAT_PROTO_MIN_CPU_QUOTA = 1000,
	/* NAME_MAX: a CONTAINER's name is a directory's. */
	MOAT_PROTO_MAX_NAME = 255,
	/* Below a MiB no process starts; the kernel itself takes any number of pages. */
	MOAT_PROTO_MIN_MEMORY_LIMIT = 1 << 20,
};

/* The largest quota the kernel takes: 2^44 - 1 us (MAX_BW with BW_SHIFT 20), 203 days. */
#define MOAT_PROTO_MAX_CPU_QUOTA ((UINT64_C(1) << 44) - 1)

/* START's namespaces. */
#define MOAT_PROTO_NS_PID 0x1u    /* its own PID namespace: the workload is PID 1 */
#define MOAT_PROTO_NS_CGROUP 0x2u /* its own cgroup namespace, rooted at its cgroup */
#define MOAT_PROTO_NS_IPC 0x4u    /* its own IPC namespace (SysV IPC, POSIX queues) */
#define MOAT_PROTO_NS_UTS 0x8u    /* its own UTS namespace (hostname, domain name) */
#define MOAT_PROTO_NAMESPACES \
	(MOAT_PROTO_NS_PID | MOAT_PROTO_NS_CGROUP | MOAT_PROTO_NS_IPC | MOAT_PROTO_NS_UTS)

/* The tag of the pod's share: one directory per CONTAINER, named by its name field. */
#define MOAT_PROTO_POD_TAG "moatpod"

/* SECCOMP_FILTER_FLAG_TSYNC | _LOG | _SPEC_ALLOW. NEW_LISTENER is refused:
 * nobody in the guest could take the notifications. */
#define MOAT_PROTO_SECCOMP_FLAGS 0x7u

/* Tag bit: a receiver that does not know this field may skip it. */
#define MOAT_TAG_IGNORABLE 0x8000u

enum moat_msg_type {
	/* host -> guest */
	MOAT_MSG_START = 0x01,
	MOAT_MSG_EXEC = 0x02,
	MOAT_MSG_STDIN = 0x03, /* DATA towards the process */
	MOAT_MSG_SIGNAL = 0x04,
	MOAT_MSG_RESIZE = 0x05,
	MOAT_MSG_SHUTDOWN = 0x06,
	MOAT_MSG_CONTAINER = 0x07,
	MOAT_MSG_FREEZE = 0x08,
	MOAT_MSG_UPDATE = 0x09,
	MOAT_MSG_STATS = 0x0a,
	/* guest -> host */
	MOAT_MSG_READY = 0x81,
	MOAT_MSG_STARTED = 0x82,
	MOAT_MSG_OUTPUT = 0x83, /* DATA from the process */
	MOAT_MSG_EXITED = 0x84,
	MOAT_MSG_ERROR = 0x85,
	MOAT_MSG_CREDIT = 0x86,
	MOAT_MSG_FROZEN = 0x87,
	MOAT_MSG_UPDATED = 0x88,
	MOAT_MSG_USAGE = 0x89,
};

/* Who sent the bytes being decoded: each side accepts only the other's
 * messages. */
enum moat_proto_peer {
	MOAT_PEER_HOST,
	MOAT_PEER_GUEST,
};

enum moat_proto_stream {
	MOAT_STREAM_STDOUT = 1,
	MOAT_STREAM_STDERR = 2,
};

struct moat_proto_rlimit {
	uint32_t type;
	uint64_t soft;
	uint64_t hard;
};

/* The type of a MOUNT the host made (see MOUNT above). */
#define MOAT_PROTO_SHARE_MOUNT "moat-share"

struct moat_proto_mount {
	char *type;
	char *source; /* NULL when absent */
	char *dest;
	uint64_t flags;
	char *data; /* NULL when absent */
};

struct moat_proto_process {
	char **args;
	size_t n_args;
	char **env;
	size_t n_env;
	char *cwd;
	uint32_t uid;
	uint32_t gid;
	uint32_t *groups;
	size_t n_groups;
	bool has_umask;
	uint32_t umask;
	uint64_t cap_bounding;
	uint64_t cap_effective;
	uint64_t cap_inheritable;
	uint64_t cap_permitted;
	uint64_t cap_ambient;
	struct moat_proto_rlimit *rlimits;
	size_t n_rlimits;
	bool no_new_privs;
	bool terminal;
	struct sock_filter *seccomp; /* NULL: no filter */
	size_t n_seccomp;
	bool has_seccomp_flags;
	uint32_t seccomp_flags;
};

struct moat_proto_winsize {
	uint16_t rows;
	uint16_t cols;
};

struct moat_proto_resources {
	bool has_pids_limit;
	uint64_t pids_limit;
	bool has_cpu_quota;
	uint64_t cpu_quota;
	bool has_cpu_period;
	uint64_t cpu_period;
	bool has_memory_limit;
	uint64_t memory_limit;
};

struct moat_proto_ifaddr {
	uint8_t *address;
	size_t address_len; /* 4 or 16 */
	uint8_t prefix;
};

struct moat_proto_route {
	uint8_t *dst;
	size_t dst_bytes; /* 4 or 16 */
	uint8_t dst_len;
	uint8_t *gateway; /* NULL: none */
	size_t gateway_len;
	bool has_priority;
	uint32_t priority;
};

struct moat_proto_interface {
	char *name;
	uint8_t *mac;
	size_t mac_len; /* 6 */
	uint32_t mtu;
	struct moat_proto_ifaddr *addresses;
	size_t n_addresses;
	struct moat_proto_route *routes;
	size_t n_routes;
};

struct moat_msg_start {
	struct moat_proto_process process;
	struct moat_proto_mount *mounts;
	size_t n_mounts;
	char *hostname; /* NULL: leave it */
	bool root_readonly;
	bool has_winsize;
	struct moat_proto_winsize winsize;
	uint32_t namespaces; /* MOAT_PROTO_NS_* */
	bool has_resources;
	struct moat_proto_resources resources;
	bool has_realtime;
	uint64_t realtime_ns; /* the host's CLOCK_REALTIME when it sent START */
	uint8_t *seed;        /* NULL: none */
	size_t seed_len;
	struct moat_proto_interface *interfaces;
	size_t n_interfaces;
	char *name;    /* CONTAINER only: its directory in the pod's share */
	char **masked; /* linux.maskedPaths */
	size_t n_masked;
	char **readonly; /* linux.readonlyPaths */
	size_t n_readonly;
};

struct moat_msg_exec {
	struct moat_proto_process process;
	bool has_winsize;
	struct moat_proto_winsize winsize;
	uint32_t container; /* 0: START's */
};

/* FREEZE and FROZEN. */
struct moat_msg_freeze {
	bool frozen;
};

/* UPDATE. */
struct moat_msg_update {
	struct moat_proto_resources resources;
};

/* USAGE. */
struct moat_msg_usage {
	uint64_t oom_kills;
	uint64_t pids_max;
	bool has_pids_peak;
	uint64_t pids_peak;
	bool has_memory_peak;
	uint64_t memory_peak;
	uint64_t cpu_user_us;
	uint64_t cpu_system_us;
};

/* STDIN and OUTPUT. When encoding, data points at the caller's bytes; a
 * decoded message owns a copy. */
struct moat_msg_data {
	uint8_t stream; /* OUTPUT only */
	uint8_t *data;
	size_t len;
};

struct moat_msg_signal {
	uint32_t signo;
};

struct moat_msg_resize {
	struct moat_proto_winsize winsize;
};

struct moat_msg_ready {
	uint32_t version;
	char *release;
};

struct moat_msg_started {
	uint32_t pid;
};

struct moat_msg_exited {
	bool has_status;
	uint32_t status;
	bool has_signal;
	uint32_t signal;
};

struct moat_msg_error {
	char *message;
	bool has_errno;
	uint32_t errnum;
};

struct moat_msg_credit {
	uint32_t bytes;
};

struct moat_msg {
	uint16_t type; /* enum moat_msg_type */
	uint32_t id;
	union {
		struct moat_msg_start start; /* START, CONTAINER */
		struct moat_msg_exec exec;
		struct moat_msg_freeze freeze; /* FREEZE, FROZEN */
		struct moat_msg_update update;
		struct moat_msg_usage usage;
		struct moat_msg_data data; /* STDIN, OUTPUT */
		struct moat_msg_signal signal;
		struct moat_msg_resize resize;
		struct moat_msg_ready ready;
		struct moat_msg_started started;
		struct moat_msg_exited exited;
		struct moat_msg_error error;
		struct moat_msg_credit credit;
	} u;
};

/* A growable byte buffer: frames are encoded into one and read into one. */
struct moat_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

void moat_buf_append(struct moat_buf *b, const void *p, size_t n);
/* Drop the first n bytes (n <= len). */
void moat_buf_consume(struct moat_buf *b, size_t n);
void moat_buf_free(struct moat_buf *b);

/* The name of a message type ("START"), or NULL when it is not one. */
const char *moat_proto_type_name(uint16_t type);

/* Check msg against every rule a decoder applies, then append its frame to
 * out. A message that would be refused is not sent: on error out is as it
 * was. sender is who is sending (MOAT_PEER_HOST for START). The message is
 * not modified or freed. */
int moat_proto_encode(enum moat_proto_peer sender, const struct moat_msg *msg, struct moat_buf *out,
		      moat_error *err);

/* The bytes of an OUTPUT frame (DATA from the guest) that come before its data: the header,
 * the stream field, and the bytes field's tag and length. Followed by exactly len bytes
 * (1..MOAT_PROTO_MAX_DATA) they are the frame moat_proto_encode makes; the agent writes
 * the data from a pipe straight to the port (splice) behind them. */
#define MOAT_PROTO_OUTPUT_PREFIX (MOAT_PROTO_HEADER_SIZE + 7 + 6)
void moat_proto_output_prefix(uint8_t out[MOAT_PROTO_OUTPUT_PREFIX], uint32_t id, uint8_t stream,
			      uint32_t len);

/* Decode the frame at the start of buf[0..len), sent by from.
 *   1: *ret holds the message (release it with moat_msg_clear) and
 *      *ret_used its frame's size;
 *   0: the frame is not complete yet (*ret_used = 0);
 *   negative errno with err set: the frame is bad. If *ret_used is not 0 the
 *      frame can be skipped and the stream read on; if it is 0 the stream is
 *      broken (its framing cannot be trusted any more).
 * *ret is zeroed first and needs no clearing after an error. */
int moat_proto_decode(enum moat_proto_peer from, const uint8_t *buf, size_t len, size_t *ret_used,
		      struct moat_msg *ret, moat_error *err);

/* Release what a decoded message owns and zero it. NULL is fine. Do not call
 * it on a message built for encoding that points at the caller's memory. */
void moat_msg_clear(struct moat_msg *msg);

/* The status a shell reports for an EXITED message: status, or 128 + signal. */
int moat_proto_exit_code(const struct moat_msg_exited *e);

/* Copy text into dst (size > 0) so that it is a valid text field: control
 * characters become '?', and it is cut to fit both dst and
 * MOAT_PROTO_MAX_MESSAGE. For messages built from untrusted strings. */
void moat_proto_sanitize_text(char *dst, size_t size, const char *text);

#endif
