#!/bin/bash
# SPDX-License-Identifier: MIT
# Compiles every lib/ source and the posix port with nothing but -I flags: no
# generated elk_config.h, no CMake, strict C99. Proves elk/config.h falls back to
# elk/elk_config_defaults.h, and that a build dir's header is not needed.
# Usage: standalone_build.sh CC ROOT OUTDIR
set -u
CC=$1 ROOT=$2 OUT=$3
FLAGS=(-std=c99 -Wall -Wextra -Werror -pedantic)
rm -rf "$OUT" && mkdir -p "$OUT"
fail=0 n=0
compile() { # src obj extra-flags...
  local src=$1 obj=$2
  shift 2
  n=$((n + 1))
  if ! "$CC" "${FLAGS[@]}" "$@" -c "$src" -o "$obj" 2>"$obj.log"; then
    echo "FAIL: $src"; cat "$obj.log"; fail=$((fail + 1))
  fi
}
# lib/lock/include: lib's internal headers (elk/lock_scripts.h), on lib's own path only
for src in "$ROOT"/lib/*/*.c; do
  compile "$src" "$OUT/lib_$(basename "$(dirname "$src")")_$(basename "$src" .c).o" \
    -I "$ROOT/lib/include" -I "$ROOT/lib/lock/include"
done
# The decoder without its fast path (CONFIG_ELK_RESP_FAST_PATH off) builds too.
for src in "$ROOT"/lib/resp/*.c; do
  compile "$src" "$OUT/nofast_$(basename "$src" .c).o" -I "$ROOT/lib/include" -DCONFIG_ELK_RESP_FAST_PATH=0
done
# _GNU_SOURCE: the port's own feature macro (CLOCK_BOOTTIME, getrandom), as its CMakeLists sets.
# The port includes the shared socket transport's header; that transport is compiled
# against the port's own shim (port/socket/socket.cmake does the same).
POSIX_INC=(-I "$ROOT/port/posix/include" -I "$ROOT/port/socket/include" -I "$ROOT/lib/include"
           -I "$ROOT/port/socket/src" -I "$ROOT/port/posix/src")
for src in "$ROOT"/port/posix/src/*.c; do
  compile "$src" "$OUT/posix_$(basename "$src" .c).o" -D_GNU_SOURCE "${POSIX_INC[@]}"
done
compile "$ROOT/port/socket/src/socket_transport.c" "$OUT/posix_socket_transport.o" -D_GNU_SOURCE \
  "${POSIX_INC[@]}"
# And the defaults are the ones in effect: no elk_config.h was found on the way.
printf '#include "elk/config.h"\n#include "elk/elk_config_defaults.h"\ntypedef char elk_max_nodes_is_default[CONFIG_ELK_MAX_NODES == 5 ? 1 : -1];\n' >"$OUT/probe.c"
compile "$OUT/probe.c" "$OUT/probe.o" -I "$ROOT/lib/include"
echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
