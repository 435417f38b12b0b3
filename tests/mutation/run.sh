#!/bin/bash
# SPDX-License-Identifier: MIT
# Mutation testing of the safety code (tests/mutation/README.md):
#   tests/mutation/run.sh --all                          the whole catalog
#   tests/mutation/run.sh --sample 8 --seed <commit>     a reproducible rotating sample
#   tests/mutation/run.sh --only <id>...                 chosen mutants
#   tests/mutation/run.sh --check                        snippets only, no build
# Work happens in build-mutation/ (a scratch copy of the tree and its own incremental
# build): the worktree itself is never modified.
set -euo pipefail
exec python3 "$(dirname "$0")/mutate.py" "$@"
