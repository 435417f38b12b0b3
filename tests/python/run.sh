#!/bin/sh
# SPDX-License-Identifier: MIT
# The Python client's pytest suite as one ctest: run.sh PYTEST ELKD.
# pytest's exit 5 (no test collected) is a failure here, like any other non-zero exit.
# No cache or bytecode is written into the source tree.
pytest=$1
ELKD=$2
export ELKD PYTHONDONTWRITEBYTECODE=1
cd "$(dirname "$0")" || exit 1
"$pytest" -p no:cacheprovider -q -rs .
rc=$?
if [ "$rc" = 5 ]; then
  echo "run.sh: pytest collected no test: failing"
  exit 1
fi
exit "$rc"
