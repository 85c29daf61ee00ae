#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The launcher (src/launcher/launcher.c) finds moat's command by skipping the global options
# and the values of those that take one, so it must know every global option of
# src/moat.c's parse_globals that takes a value, and no other: one it does not know makes it
# misread the command (and a create pays the runtime's re-exec, docs/launcher.md).
# Exits 1 and names the difference when the two lists differ. .ci/run runs it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# the long options of parse_globals with required_argument
runtime=$(sed -n '/^static int parse_globals(/,/^}/p' src/moat.c |
	sed -nE 's/.*\{ "([a-z-]+)", required_argument,.*/\1/p' | sort)
# the launcher's value_options table, up to its NULL
launcher=$(sed -n '/value_options\[\] = {/,/};/p' src/launcher/launcher.c |
	grep -oE '"[a-z-]+"' | tr -d '"' | sort)
if [[ -z $runtime ]]; then
	echo "check-launcher-options: no global option with a value found in src/moat.c parse_globals"
	exit 1
fi
if [[ $runtime != "$launcher" ]]; then
	echo "check-launcher-options: src/launcher/launcher.c value_options differs from src/moat.c parse_globals:"
	diff <(echo "$launcher") <(echo "$runtime") | sed -n 's/^</  only the launcher:/p; s/^>/  only moat.c:/p'
	exit 1
fi
echo "check-launcher-options: the launcher skips the values of the $(wc -l <<<"$runtime") global options that take one"
