/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: signal names and numbers, as `kill` accepts them. */
#ifndef MOAT_SIGNALS_H
#define MOAT_SIGNALS_H

/* Parse "TERM", "SIGTERM", "sigterm", "15", "RTMIN+2" or "SIGRTMAX-1".
 * Returns 0 or -EINVAL. */
int moat_signal_parse(const char *s, int *ret_sig);

/* "SIGTERM" for 15; NULL for an unknown or real-time number. */
const char *moat_signal_name(int sig);

#endif
