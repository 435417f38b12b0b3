#!/bin/sh
# SPDX-License-Identifier: MIT
# port/ keeps no global mutable state either: fail if any object in the library
# defines writable data (.data/.bss/common). Usage: check_port_state.sh OBJDUMP LIB
set -eu
objdump_tool=$1; lib=$2
data=$("$objdump_tool" -t "$lib" | awk '$0 ~ / O / {for (i = 1; i <= NF; i++) if ($i == "O") print $(i+1), $NF}' | \
  grep -E '^(\.data|\.bss|\*COM\*)' | grep -vE '^\.data\.rel\.ro' | grep -vE ' (__asan|__ubsan|__odr_asan|\.L)' || true)
if [ -n "$data" ]; then
  echo "FAIL: $lib defines writable global data:"; echo "$data" | sed 's/^/  /'; exit 1
fi
echo "OK: $lib has no writable global data"
