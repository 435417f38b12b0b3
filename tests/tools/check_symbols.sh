#!/bin/sh
# SPDX-License-Identifier: MIT
# Reads the symbols of every object in a static library with nm and fails if
#  - any object references malloc, calloc, realloc or free (zero-heap rule), or
#  - (--core) any undefined symbol is outside the small libc subset lib/ may use
#    (so no clock, random source, stdio or socket call can creep into lib/; libgcc
#    arithmetic helpers and ABI symbols such as MIPS _gp_disp are allowed), or
#  - (--core) any object defines writable data (.data/.bss/common): lib/ keeps no
#    global mutable state.
# Usage: check_symbols.sh [--core] NM OBJDUMP LIBRARY...
set -eu
core=0
if [ "$1" = "--core" ]; then core=1; shift; fi
nm_tool=$1; objdump_tool=$2; shift 2
status=0
for lib in "$@"; do
  heap=$("$nm_tool" -A -u "$lib" | awk '{print $NF}' | grep -E '^(malloc|calloc|realloc|free|reallocarray|aligned_alloc|posix_memalign|strdup|strndup)$' || true)
  if [ -n "$heap" ]; then
    echo "FAIL: $lib references heap functions:"; "$nm_tool" -A -u "$lib" | grep -wE "$(echo $heap | tr ' ' '|')"
    status=1
  fi
  if [ $core -eq 1 ]; then
    bad=$("$nm_tool" -u "$lib" | awk '/ U /{print $2}' | sort -u | \
      grep -vE '^(elk_|memcpy$|memmove$|memset$|memcmp$|memchr$|strlen$|strcmp$|strncmp$|__stack_chk_fail$|__asan_|__ubsan_|__sanitizer_|__aeabi_|__gnu_|__udivdi3$|__umoddi3$|__divdi3$|__moddi3$|__ashldi3$|__ashrdi3$|__lshrdi3$|__muldi3$|__udivmoddi4$|__divmoddi4$|__clzsi2$|__clzdi2$|_gp_disp$|_GLOBAL_OFFSET_TABLE_$)' || true)
    if [ -n "$bad" ]; then
      echo "FAIL: $lib calls outside the allowed libc subset (time, entropy, I/O must be injected):"
      echo "$bad" | sed 's/^/  /'
      status=1
    fi
    # objdump, not nm: nm calls relocated read-only data (.data.rel.ro, RELRO under
    # PIE) "d" just like writable data; the section name tells them apart.
    data=$("$objdump_tool" -t "$lib" | awk '$0 ~ / O / {for (i = 1; i <= NF; i++) if ($i == "O") print $(i+1), $NF}' | \
      grep -E '^(\.data|\.bss|\*COM\*)' | grep -vE '^\.data\.rel\.ro' | grep -vE ' (__asan|__ubsan|__odr_asan|\.L)' || true)
    if [ -n "$data" ]; then
      echo "FAIL: $lib defines writable global data (lib/ must keep no global mutable state):"
      echo "$data" | sed 's/^/  /'
      status=1
    fi
  fi
done
if [ $status -eq 0 ]; then echo "OK: $* clean"; fi
exit $status
