#!/bin/sh
# SPDX-License-Identifier: MIT
# The C sources follow .clang-format (ctest style.clang_format). Formatting differs between
# clang-format releases, so only the major version the tree was formatted with judges it;
# another (or none) skips with 77. Reformat: clang-format -i $(scripts/check-format.sh --list)
# Usage: check-format.sh SOURCE_DIR | --list
set -u
want=14
list() { git -C "$1" ls-files '*.c' '*.h' | grep -v '^firmware/openwrt/config/'; }
if [ "${1:-}" = --list ]; then list .; exit 0; fi
src=${1:?usage: check-format.sh SOURCE_DIR}
cf=$(command -v clang-format-$want || command -v clang-format || true)
if [ -z "$cf" ]; then echo "style: no clang-format here: skipped"; exit 77; fi
major=$("$cf" --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
if [ "$major" != "$want" ]; then echo "style: clang-format $major, the tree follows $want: skipped"; exit 77; fi
if ! git -C "$src" rev-parse >/dev/null 2>&1; then echo "style: not a git checkout: skipped"; exit 77; fi
cd "$src" || exit 2
# shellcheck disable=SC2046
if "$cf" --dry-run --Werror $(list .) 2>"${TMPDIR:-/tmp}/check-format.$$"; then
  echo "style: $(list . | wc -l) files follow .clang-format"; rm -f "${TMPDIR:-/tmp}/check-format.$$"; exit 0
fi
grep -E '^[^ ].*(warning|error):' "${TMPDIR:-/tmp}/check-format.$$" | cut -d: -f1 | sort -u | sed 's/^/not formatted: /'
rm -f "${TMPDIR:-/tmp}/check-format.$$"
echo "style: run clang-format -i \$(scripts/check-format.sh --list)"
exit 1
