#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A file includes another folder's *-internal.h only by naming the folder
# ("cgroup/cgroup-internal.h"): a bare name must be a header of the file's own folder.
# Prints each offence as FILE:LINE: and exits 1 when there is one. .ci/run runs it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

bad=0
while IFS=: read -r file line text; do
	header=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$text")
	if [[ ! -e $(dirname "$file")/$header ]]; then
		echo "$file:$line: includes $header by its bare name; name its folder"
		bad=1
	fi
done < <(grep -rn --include='*.c' --include='*.h' -E '#include "[a-z0-9-]+-internal\.h"' src tests || true)
if ((bad)); then
	exit 1
fi
echo "check-includes: every *-internal.h is its own folder's or named with its folder"
