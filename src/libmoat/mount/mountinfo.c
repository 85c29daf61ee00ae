/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: reading /proc/<pid>/mountinfo (see mountinfo.h). */
#include "mountinfo.h"

#include <string.h>

#include "utils.h"

void moat_mountinfo_unescape(char *s)
{
	char *w = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
			s += 4;
		} else {
			*w++ = *s++;
		}
	}
	*w = '\0';
}

bool moat_mountinfo_parse(char *line, struct moat_mountinfo *e)
{
	char *tok[32], *save = NULL, *t;
	size_t n = 0, i;

	for (t = strtok_r(line, " ", &save); t != NULL && n < MOAT_ARRAY_SIZE(tok);
	     t = strtok_r(NULL, " ", &save))
		tok[n++] = t;
	for (i = 6; i < n; i++)
		if (strcmp(tok[i], "-") == 0)
			break;
	if (i + 3 >= n)
		return false;
	e->dev = tok[2];
	e->root = tok[3];
	e->mnt = tok[4];
	e->opts = tok[5];
	e->fstype = tok[i + 1];
	e->source = tok[i + 2];
	e->super = tok[i + 3];
	moat_mountinfo_unescape(e->root);
	moat_mountinfo_unescape(e->mnt);
	return true;
}
