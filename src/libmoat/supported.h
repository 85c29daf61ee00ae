/* moat: what this moat supports, as the runtime-spec's features document (`moat features`). */
#ifndef MOAT_SUPPORTED_H
#define MOAT_SUPPORTED_H

#include "error.h"

/* The document, pretty-printed JSON; the caller frees it. */
int moat_features_json(char **ret, moat_error *err);

#endif
