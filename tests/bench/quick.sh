#!/bin/sh
# SPDX-License-Identifier: MIT
# One benchmark program in its quick mode, as a test of completion (ctest label bench):
# it must exit 0 and print the figure line matching PATTERN (its last section's, so
# every section ran). Speed is never judged: the figures are printed for the log.
#   quick.sh PATTERN PROGRAM [ARGS...]
set -u
pattern=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ $rc -ne 0 ]; then
  echo "quick.sh: $* exited with $rc" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -qE "$pattern"; then
  echo "quick.sh: $* printed no line matching '$pattern' (a section did not run)" >&2
  exit 1
fi
echo "quick.sh: $* completed"
