/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: lists of strings (strv.h). */
#include "strv.h"

#include <stdlib.h>

#include "utils.h"

char **strv_copy(const char *const *v, size_t n)
{
	char **r = xcalloc(n + 1, sizeof(*r));

	for (size_t i = 0; i < n; i++)
		r[i] = xstrdup(v[i]);
	return r;
}

void strv_push(char ***v, size_t *n, const char *s)
{
	*v = xrealloc(*v, (*n + 2) * sizeof(**v));
	(*v)[(*n)++] = xstrdup(s);
	(*v)[*n] = NULL;
}

void strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

void strv_free_n(char **v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++)
		free(v[i]);
	free(v);
}
