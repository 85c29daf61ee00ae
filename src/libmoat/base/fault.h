/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: named steps where a test build of moat kills itself (tests/integration/kill-steps.bats).
 *
 * A build with MOAT_FAULT_INJECTION (`make check` builds tests/moat-faults so; configure's
 * --enable-fault-injection builds moat so, and `moat --version` then says it) names each step
 * of create, start, exec and delete. At a step, MOAT_TEST_STEPS=FILE appends the step's name
 * to FILE, and MOAT_TEST_KILL_AT=NAME makes moat SIGKILL itself there, as a caller killing it
 * at that moment would. (A container's init, PID 1 of its PID namespace, cannot kill itself:
 * a microVM's supervisor _exits with status 137 there instead, as abruptly.) Any other build
 * compiles the steps to nothing.
 */
#ifndef MOAT_FAULT_H
#define MOAT_FAULT_H

#ifdef MOAT_FAULT_INJECTION
void moat_fault_step(const char *name);
/* This process's part, for a process of moat's that runs the same steps as its caller (a
 * sandbox's keeper): its steps are logged, and may be killed at, as ROLE/NAME; a bare NAME
 * still matches. */
void moat_fault_role(const char *role);
#else
static inline void moat_fault_step(const char *name)
{
	(void)name;
}
static inline void moat_fault_role(const char *role)
{
	(void)role;
}
#endif

#endif
