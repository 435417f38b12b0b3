#!/bin/sh
# SPDX-License-Identifier: MIT
# ctest docs.apidoc: run doxygen on the public headers (docs/Doxyfile, configured by
# cmake/ElkApidoc.cmake) and fail on any warning: a public function, type, macro or
# enumerator without a comment, or a comment doxygen cannot read. Fields of the
# caller-allocated state structs (elk_lock_t, elk_node_t, ...) are internal and not
# counted. Then check the reference has the main entry points and no internal header.
# Usage: check-apidoc.sh DOXYGEN APIDOC_DIR
doxygen=$1 dir=$2
[ -x "$doxygen" ] || command -v "$doxygen" >/dev/null 2>&1 ||
  { echo "FAIL: doxygen not found: apt-get install doxygen (scripts/install-deps.sh)"; exit 1; }
rm -rf "$dir/html" "$dir/warnings.log"
"$doxygen" "$dir/Doxyfile" || { echo "FAIL: doxygen exited $?"; exit 1; }
fail=0
bad=$(grep -v -e '(variable) of struct' -e '(variable) of union' "$dir/warnings.log" | grep -v '^ ')
if [ -n "$bad" ]; then
  echo "FAIL: doxygen warnings (document these in the header, as a comment right above):"
  echo "$bad"
  fail=1
else
  echo "ok: no undocumented public symbol ($(grep -c 'of struct' "$dir/warnings.log") internal struct fields not counted)"
fi
for sym in elk_client_init elk_lock_acquire elk_fence_begin elk_agent_acquire elk_blocking_acquire \
           elk_posix_tcp_init elk_err_name; do
  if grep -rqs "$sym" "$dir/html"; then echo "ok: $sym in the reference"; else echo "FAIL: $sym missing"; fail=1; fi
done
for f in fmt_8h.html lock__scripts_8h.html; do
  if [ -e "$dir/html/$f" ]; then echo "FAIL: internal header in the reference: $f"; fail=1; fi
done
echo "apidoc: $(ls "$dir/html" | wc -l) files in $dir/html"
exit $fail
