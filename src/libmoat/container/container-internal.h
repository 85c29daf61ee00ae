/* moat: what the container*.c files share. Not part of libmoat's interface. */
#ifndef MOAT_CONTAINER_INTERNAL_H
#define MOAT_CONTAINER_INTERNAL_H

#include "error.h"
#include "state.h"

/* A container opened for an operation: its locked directory and state. */
struct moat_opened {
	int dirfd;
	struct moat_state *st;
	enum moat_status status;
};

/* Lock the container's directory and read its state and status. */
int moat_opened_open(const char *root, const char *id, struct moat_opened *c, moat_error *err);
void moat_opened_close(struct moat_opened *c);

#endif
