/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: signal names and numbers, as `kill` accepts them. */
#include "signals.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "utils.h"

/* clang-format off */
static const struct {
	const char *name; /* without the SIG prefix */
	int sig;
} signal_table[] = {
	{ "HUP", SIGHUP },   { "INT", SIGINT },       { "QUIT", SIGQUIT },   { "ILL", SIGILL },
	{ "TRAP", SIGTRAP }, { "ABRT", SIGABRT },     { "IOT", SIGIOT },     { "BUS", SIGBUS },
	{ "FPE", SIGFPE },   { "KILL", SIGKILL },     { "USR1", SIGUSR1 },   { "SEGV", SIGSEGV },
	{ "USR2", SIGUSR2 }, { "PIPE", SIGPIPE },     { "ALRM", SIGALRM },   { "TERM", SIGTERM },
	{ "STKFLT", SIGSTKFLT }, { "CHLD", SIGCHLD }, { "CONT", SIGCONT },   { "STOP", SIGSTOP },
	{ "TSTP", SIGTSTP }, { "TTIN", SIGTTIN },     { "TTOU", SIGTTOU },   { "URG", SIGURG },
	{ "XCPU", SIGXCPU }, { "XFSZ", SIGXFSZ },     { "VTALRM", SIGVTALRM }, { "PROF", SIGPROF },
	{ "WINCH", SIGWINCH }, { "IO", SIGIO },       { "POLL", SIGPOLL },   { "PWR", SIGPWR },
	{ "SYS", SIGSYS },
};
/* clang-format on */

static int parse_number(const char *s, long min, long max, long *ret)
{
	char *end;
	long v;

	if (*s == '\0')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* RTMIN, RTMIN+n, RTMAX, RTMAX-n */
static int parse_realtime(const char *s, int *ret_sig)
{
	long n = 0;

	if (strncasecmp(s, "RTMIN", 5) == 0) {
		if (s[5] != '\0' &&
		    (s[5] != '+' || parse_number(s + 6, 0, SIGRTMAX - SIGRTMIN, &n) < 0))
			return -EINVAL;
		*ret_sig = SIGRTMIN + (int)n;
		return 0;
	}
	if (strncasecmp(s, "RTMAX", 5) == 0) {
		if (s[5] != '\0' &&
		    (s[5] != '-' || parse_number(s + 6, 0, SIGRTMAX - SIGRTMIN, &n) < 0))
			return -EINVAL;
		*ret_sig = SIGRTMAX - (int)n;
		return 0;
	}
	return -EINVAL;
}

int moat_signal_parse(const char *s, int *ret_sig)
{
	long n;
	size_t i;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	if (parse_number(s, 1, SIGRTMAX, &n) == 0) {
		*ret_sig = (int)n;
		return 0;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (i = 0; i < MOAT_ARRAY_SIZE(signal_table); i++) {
		if (strcasecmp(s, signal_table[i].name) == 0) {
			*ret_sig = signal_table[i].sig;
			return 0;
		}
	}
	return parse_realtime(s, ret_sig);
}

const char *moat_signal_name(int sig)
{
	static const char *const names[] = {
#define N(x) [SIG##x] = "SIG" #x
		N(HUP),  N(INT),    N(QUIT), N(ILL),   N(TRAP), N(ABRT), N(BUS),  N(FPE),
		N(KILL), N(USR1),   N(SEGV), N(USR2),  N(PIPE), N(ALRM), N(TERM), N(STKFLT),
		N(CHLD), N(CONT),   N(STOP), N(TSTP),  N(TTIN), N(TTOU), N(URG),  N(XCPU),
		N(XFSZ), N(VTALRM), N(PROF), N(WINCH), N(IO),   N(PWR),  N(SYS),
#undef N
	};

	if (sig <= 0 || (size_t)sig >= MOAT_ARRAY_SIZE(names))
		return NULL;
	return names[sig];
}
