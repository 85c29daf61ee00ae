/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the host's TSC rate, for a TCG guest's kernel.
 *
 * Under TCG the guest's TSC is the host's counter. At boot the guest kernel measures its
 * rate against the emulated PIT, and on a busy host (or under a CPU quota) that fails: the
 * kernel then gives up the TSC and keeps time with jiffies, 10 ms a step. Such a guest saved
 * as a snapshot hung every guest restored from it (microvm-snapshot.bats,
 * clocksource-watchdog). moat measures the rate on the host and passes it as
 * tsc_early_khz=, so the guest never calibrates.
 */
#ifndef MOAT_VM_TSC_H
#define MOAT_VM_TSC_H

#include <stdint.h>

/* The host's TSC rate in kHz, rounded to a whole MHz so that it is the same every time
 * (it is part of QEMU's command line, hence of a snapshot's key); 0 where there is no TSC
 * (not x86-64) or it could not be measured. Takes about 20 ms. */
uint32_t moat_vm_host_tsc_khz(void);

/* The same, measured once per boot of the host: recorded with the boot id in root/.vm-tsc
 * (moat's state root, beside its seccomp cache), which later calls read instead of spending
 * the 20 ms again. A file that is missing, unreadable, of another boot or out of range is
 * measured over. */
uint32_t moat_vm_host_tsc_khz_cached(const char *root);

#endif
