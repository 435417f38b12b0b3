#!/bin/sh
# SPDX-License-Identifier: MIT
# Fails when a source file lacks "SPDX-License-Identifier: MIT" in its first 10 lines.
# Source files: *.c *.h *.sh *.py *.js *.ld *.cmake and CMakeLists.txt (data, corpora,
# generated config headers, docs and the npm peers' node_modules are not).
# Usage: check-spdx.sh SOURCE_DIR [DIR ...]   (default dirs: lib port firmware tests examples)
set -u
src=${1:?usage: check-spdx.sh SOURCE_DIR [DIR ...]}
shift
cd "$src" || exit 2
[ $# -gt 0 ] || set -- lib port firmware tests examples scripts cmake .ci CMakeLists.txt Kconfig
missing=0 checked=0
for f in $(find "$@" -type f \( -name '*.[ch]' -o -name '*.sh' -o -name '*.py' -o -name '*.js' \
             -o -name '*.ld' -o -name "*.cmake" -o -name CMakeLists.txt -o -name Kconfig -o -name run \) \
             -not -path '*/corpus/*' -not -path 'firmware/openwrt/config/*' -not -path '*/node_modules/*' | sort); do
  checked=$((checked + 1))
  if ! head -n 10 "$f" | grep -q 'SPDX-License-Identifier: MIT'; then
    echo "no SPDX-License-Identifier: MIT in the first 10 lines: $f"
    missing=$((missing + 1))
  fi
done
echo "check-spdx: $checked files checked, $missing without the MIT SPDX line"
[ "$missing" -eq 0 ] && [ "$checked" -gt 0 ]
