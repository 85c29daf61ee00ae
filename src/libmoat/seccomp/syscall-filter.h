/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: linux.seccomp, compiled with libseccomp and loaded into the container's process.
 *
 * Two steps, so a bad profile fails `create` on the host and the container only loads:
 *
 *   prepare  (anywhere, unprivileged, pure apart from libseccomp's probe of the kernel):
 *            checks every field and builds a libseccomp filter. Errors are one line that
 *            names the JSON path ("linux.seccomp.syscalls[3].action: unknown action
 *            \"SCMP_ACT_FOO\""). A prepared filter survives fork, so moat prepares it
 *            before it forks the container's processes.
 *   load     (in the process to confine, last thing before execve or close to it).
 *
 * How the profile is read (what the runtime spec leaves open, and libseccomp's limits):
 *
 *   - Architectures: the native one is always in the filter (the process could not run
 *     otherwise); `architectures` adds others. A syscall made through an architecture that
 *     is not in the filter (i386 `int 0x80`, x32's numbers with bit 30 set on x86_64)
 *     KILLS THE PROCESS (libseccomp's default is to kill only the thread, which leaves a
 *     half-dead multi-threaded program behind).
 *   - Names: a name libseccomp does not know for any architecture of the filter is
 *     skipped, with one warning per syscalls[] entry naming the skipped names; that is
 *     never an error (profiles list syscalls of other architectures and of newer kernels).
 *     Syscalls newer than the libseccomp moat was built with (up to Linux 6.17's
 *     file_setattr) are still compiled, by moat's own table of their numbers, when the
 *     filter has a single architecture with the generic numbering (x86_64, aarch64...).
 *   - args: comparisons on different argument indexes must all hold (AND). Several
 *     comparisons on the same index cannot go into one libseccomp rule; they are
 *     alternatives (OR): {0 EQ 1, 0 EQ 2, 2 EQ 0} compiles to the two rules
 *     (a0 == 1 && a2 == 0) and (a0 == 2 && a2 == 0). runc, crun and youki make every
 *     comparison of such an entry a rule of its own, which is the same when all share one
 *     index (the profiles in use) and broader when others are mixed in (a2 == 0 alone would
 *     match there). A range "a0 >= 1 && a0 <= 5" cannot be written in one entry. At most
 *     MOAT_SECCOMP_MAX_SPLIT rules come out of an entry.
 *   - MASKED_EQ: value is the mask and valueTwo the value compared: (arg & value) ==
 *     valueTwo. valueTwo with another operator is an error unless it is 0.
 *   - errnoRet / defaultErrnoRet: for SCMP_ACT_ERRNO (0..4095, default EPERM) and
 *     SCMP_ACT_TRACE (0..65535, the value the tracer sees, default EPERM); with any other
 *     action they are an error, as the spec requires.
 *   - A rule whose action is the default action is left out (libseccomp refuses it). Where
 *     it overlaps a rule with another action for the same syscall, that one decides: give a
 *     deny that must win over an allow its own errno.
 *   - Rules libseccomp would silently drop are errors: an unconditional rule and a rule
 *     with conditions (or two unconditional rules) giving the same syscall different
 *     actions. libseccomp keeps the unconditional one and forgets the other, so "allow
 *     ioctl" plus "deny ioctl TIOCSTI" would allow TIOCSTI. Write the allow with
 *     conditions too (contrib/seccomp/README.md shows how the default profile does it).
 *     Overlapping rules with conditions and different actions are not detected: which
 *     one wins is libseccomp's choice.
 *   - flags: SECCOMP_FILTER_FLAG_TSYNC, _LOG and _SPEC_ALLOW through libseccomp's
 *     attributes; _WAIT_KILLABLE_RECV needs libseccomp 2.6 and is an error with an older
 *     one (moat does not load a weaker filter than asked). Unknown flags are errors.
 *   - SCMP_ACT_NOTIFY needs listenerPath; it cannot be the default action nor apply to
 *     sendmsg: moat sends the listener fd with sendmsg after loading the filter, and a
 *     notification nobody can receive yet would block that for ever.
 *     listenerMetadata without listenerPath is an error (the spec says MUST NOT).
 *
 * Loading: libseccomp generates the BPF program once, at prepare (and the state root keeps
 * it, see seccomp-bpf.c); moat loads it with seccomp(2), with the profile's flags. The kernel
 * accepts a filter from a process that has no_new_privs set or CAP_SYS_ADMIN in its user
 * namespace; moat never sets no_new_privs for it (process.noNewPrivileges decides that):
 * without it, the process keeps CAP_SYS_ADMIN for the load alone (init.h,
 * moat_init_confine_last), which comes right before execve. The load error says which of
 * the two the process lacks.
 */
#ifndef MOAT_SYSCALL_FILTER_H
#define MOAT_SYSCALL_FILTER_H

#include <stdbool.h>
#include <linux/filter.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "oci-config.h"
#include "utils.h"

/* Rules one syscalls[] entry may expand to when it repeats argument indexes. */
#define MOAT_SECCOMP_MAX_SPLIT 64

struct moat_seccomp;

/* Check and compile s, down to the BPF program; warnings (skipped names) go to err->warn. */
int moat_seccomp_prepare(const struct oci_seccomp *s, struct moat_seccomp **ret, moat_error *err);

/* The same through the cache under the state root root (seccomp-bpf.c): a profile this moat
 * and libseccomp compiled before is read back, its warnings again in err->warn, instead of
 * being compiled again. root NULL: no cache. */
int moat_seccomp_prepare_cached(const struct oci_seccomp *s, const char *root,
				struct moat_seccomp **ret, moat_error *err);
/* The directory under the state root that holds the cache: not a container ID. */
#define MOAT_SECCOMP_CACHE_DIR ".seccomp-cache"

/* Whether the default action or a rule is SCMP_ACT_NOTIFY: load then returns a listener
 * fd, which goes to listenerPath. */
bool moat_seccomp_uses_notify(const struct moat_seccomp *sc);

/* The compiled program and the SECCOMP_FILTER_FLAG_* its profile asks for: what a guest
 * agent loads in microVM mode. */
const struct sock_filter *moat_seccomp_program(const struct moat_seccomp *sc, size_t *ret_len,
					       uint32_t *ret_flags);

/* Load the filter into the calling process (with TSYNC: into all its threads). Sets
 * *ret_notify_fd to the listener fd (close-on-exec, the caller's) when the filter uses
 * SCMP_ACT_NOTIFY, else to -1. */
int moat_seccomp_load(struct moat_seccomp *sc, int *ret_notify_fd, moat_error *err);

/* Write the compiled filter to fd: as the kernel's BPF program, or with pfc as
 * libseccomp's readable pseudo code. For debugging and for tests. */
int moat_seccomp_export(const struct moat_seccomp *sc, int fd, bool pfc, moat_error *err);

/* Accepts NULL. Does not close a listener fd that load returned. */
void moat_seccomp_free(struct moat_seccomp *sc);
MOAT_DEFINE_CLEANUP(struct moat_seccomp, moat_seccomp_free)

/* The runtime spec's seccomp notify protocol: connect to the unix stream socket at
 * listener_path and send one "container process state" ({"ociVersion", "fds":
 * ["seccompFd"], "pid", "metadata", "state"}) with notify_fd in SCM_RIGHTS, then close.
 * state_json is the container's state as `moat state` prints it (ociVersion comes from
 * it); pid is the host pid of the process that loaded the filter (an exec'd process's),
 * or 0 for the state's own pid (the init's); metadata is listenerMetadata, or NULL. */
int moat_seccomp_send_to_listener(const char *listener_path, const char *metadata, int notify_fd,
				  pid_t pid, const char *state_json, moat_error *err);

/* moat's default profile (contrib/seccomp/default.json, built into the binary): its JSON
 * text, and parsed. */
const char *moat_seccomp_default_json(void);
int moat_seccomp_default(struct oci_seccomp **ret, moat_error *err);

/* What `moat features` reports (linux.seccomp): NULL-terminated name lists. */
enum moat_seccomp_names {
	MOAT_SECCOMP_ACTIONS,
	MOAT_SECCOMP_OPERATORS,
	MOAT_SECCOMP_ARCHES,
	MOAT_SECCOMP_KNOWN_FLAGS,     /* every flag the spec defines */
	MOAT_SECCOMP_SUPPORTED_FLAGS, /* the ones this build can apply */
};
const char *const *moat_seccomp_names(enum moat_seccomp_names which);

#endif
