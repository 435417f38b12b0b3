#!/bin/bash
# SPDX-License-Identifier: MIT
# Cortex-M4 build of lib/ and port/lwip with arm-none-eabi-gcc + newlib-nano, for the
# Kconfig defaults and for configs/cortex_m4_defconfig; links tests/lwip/cm4_link.c
# with no heap (any malloc/calloc/realloc/free fails the link) and prints the sizes.
# Usage: scripts/cortex-m-build.sh [OUT_DIR]   (default: build-cm4)
# Exits 77 (ctest SKIP) when the ARM toolchain or newlib is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build-cm4}
cc=arm-none-eabi-gcc
jobs=${JOBS:-2}

command -v "$cc" >/dev/null || { echo "SKIP: $cc not found (apt-get install gcc-arm-none-eabi)"; exit 77; }
if [ ! -f "$($cc -mcpu=cortex-m4 -mthumb --specs=nano.specs -print-file-name=libc_nano.a)" ]; then
  echo "SKIP: newlib-nano not found (apt-get install libnewlib-arm-none-eabi)"; exit 77
fi
toolchain=$root/cmake/toolchain-arm-none-eabi.cmake
arch=(-mcpu=cortex-m4 -mthumb -Os -ffunction-sections -fdata-sections)
strict=(-std=c99 -Wall -Wextra -Werror -pedantic)

# "text data bss" totals of one archive or ELF.
totals() { arm-none-eabi-size -t "$1" | tail -1 | awk '{print $1, $2, $3}'; }

mkdir -p "$out"
declare -A summary ram
status=0
for cfg in default cortex_m4; do
  dir=$out/$cfg
  args=(-DCMAKE_TOOLCHAIN_FILE="$toolchain" -DELK_LIB_ONLY=ON -DCMAKE_BUILD_TYPE=)
  if [ "$cfg" = cortex_m4 ]; then
    args+=(-DELK_DEFCONFIG="$root/configs/cortex_m4_defconfig")
  fi
  echo "== $cfg config: cmake ${args[*]}"
  cmake -S "$root" -B "$dir" "${args[@]}" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
  cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1 || { cat "$dir.build.log"; exit 1; }
  libelk=$dir/lib/libelk.a
  port=$dir/port/lwip/libelk_port_lwip.a

  echo "-- arm-none-eabi-size -t libelk.a ($cfg)"
  arm-none-eabi-size -t "$libelk"
  # Same zero-heap / no-globals / libc-subset rules as the host build, on ARM objects.
  "$root/tests/tools/check_symbols.sh" --core arm-none-eabi-nm arm-none-eabi-objdump "$libelk" || status=1

  link_libs=("$libelk")
  if [ -f "$port" ]; then
    echo "-- arm-none-eabi-size -t libelk_port_lwip.a ($cfg)"
    arm-none-eabi-size -t "$port"
    "$root/tests/tools/check_symbols.sh" arm-none-eabi-nm arm-none-eabi-objdump "$port" || status=1
    "$root/tests/lwip/check_port_state.sh" arm-none-eabi-objdump "$port" || status=1
    link_libs=("$port" "$libelk")
  else
    echo "NOTE: port/lwip not built for $cfg (no lwIP headers: apt-get install liblwip-dev)"
  fi

  # Link proof: no heap. --wrap turns any heap call into an undefined __wrap_* symbol,
  # and no _sbrk is provided, so newlib's malloc could not link either.
  elf=$dir/cm4_link.elf
  "$cc" "${arch[@]}" -std=c11 -Wall -Wextra -Werror \
    -I"$root/lib/include" -I"$dir/generated" -I"$root/port/lwip/include" -I"$root/port/socket/include" \
    "$root/tests/lwip/cm4_link.c" "${link_libs[@]}" \
    --specs=nano.specs -nostartfiles -Wl,-e,Reset_Handler -Wl,--gc-sections \
    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,--wrap=_malloc_r,--wrap=_free_r \
    -Wl,-Map,"$dir/cm4_link.map" -o "$elf"
  heap=$(arm-none-eabi-nm "$elf" | awk '{print $NF}' | grep -E '^(malloc|calloc|realloc|free|_malloc_r|_free_r|_sbrk|_sbrk_r)$' || true)
  if [ -n "$heap" ]; then
    echo "FAIL: cm4_link.elf contains heap symbols: $heap"; status=1
  else
    echo "OK: cm4_link.elf links with no heap (no malloc/free/_sbrk)"
  fi
  echo "-- arm-none-eabi-size cm4_link.elf ($cfg)"
  arm-none-eabi-size "$elf"

  # RAM the caller allocates for this config (sizeof of the objects, on the target).
  cat >"$dir/ram_sizes.c" <<'C'
#include "elk/lock.h"
#include "elk/port_lwip.h"
char sz_node[sizeof(elk_node_t)];
char sz_client[sizeof(elk_client_t)];
char sz_lock[sizeof(elk_lock_t)];
char sz_pool[sizeof(elk_pool_t)];
char sz_pool_mem[CONFIG_ELK_POOL_BLOCK_COUNT * CONFIG_ELK_POOL_BLOCK_SIZE];
char sz_lwip_transport[sizeof(elk_lwip_transport_t)];
char sz_lwip_clock_entropy[sizeof(elk_lwip_clock_t) + sizeof(elk_lwip_entropy_t)];
C
  if [ -f "$root/lib/include/elk/lock.h" ] && \
     "$cc" "${arch[@]}" -std=c99 -I"$root/lib/include" -I"$dir/generated" -I"$root/port/lwip/include" -I"$root/port/socket/include" \
       -c "$dir/ram_sizes.c" -o "$dir/ram_sizes.o" 2>"$dir/ram_sizes.log"; then
    declare -A sz=()
    while read -r _ size _ name; do sz[${name#sz_}]=$((16#$size)); done \
      < <(arm-none-eabi-nm -S --defined-only "$dir/ram_sizes.o" | grep ' sz_')
    fleet=$((3 * (sz[node] + sz[lwip_transport]) + sz[client] + sz[lock] + sz[pool] + sz[pool_mem] + sz[lwip_clock_entropy]))
    echo "-- RAM of caller-allocated objects ($cfg), bytes: elk_node_t ${sz[node]}, elk_client_t ${sz[client]}," \
         "elk_lock_t ${sz[lock]}, elk_pool_t ${sz[pool]} + blocks ${sz[pool_mem]}, elk_lwip_transport_t ${sz[lwip_transport]}"
    ram[$cfg]=$fleet
  else
    ram[$cfg]="-"
  fi

  summary[$cfg]="$(totals "$libelk") | $( [ -f "$port" ] && totals "$port" || echo "- - -") | $(totals "$elf")"
done

# The select() path of port/lwip (lwIP builds without LWIP_SOCKET_POLL) and the
# lwipopts #error check, compiled once against the Cortex-M lwipopts.
if [ -f "$out/cortex_m4/port/lwip/libelk_port_lwip.a" ]; then
  inc=(-I"$root/lib/include" -I"$out/cortex_m4/generated" -I"$root/port/lwip/include" -I"$root/port/socket/include"
       -I"$root/port/lwip/src" -I"$root/port/lwip/cortex-m" -isystem /usr/include/lwip)
  "$cc" "${arch[@]}" "${strict[@]}" "${inc[@]}" -DLWIP_SOCKET_POLL=0 -DLWIP_SOCKET_SELECT=1 \
    -c "$root/port/lwip/src/wait.c" -o "$out/wait_select.o"
  echo "OK: port/lwip wait.c compiles on the lwip_select path too"
  if "$cc" "${arch[@]}" "${strict[@]}" "${inc[@]}" -DLWIP_SOCKET_POLL=0 -DLWIP_SOCKET_SELECT=0 \
       -c "$root/port/lwip/src/wait.c" -o /dev/null 2>"$out/error_check.log"; then
    echo "FAIL: port/lwip compiled without poll or select"; status=1
  elif grep -q 'needs LWIP_SOCKET_POLL=1' "$out/error_check.log"; then
    echo "OK: an lwipopts.h without poll/select stops the build with the #error message"
  else
    echo "FAIL: unexpected compiler output:"; cat "$out/error_check.log"; status=1
  fi
fi

echo
echo "Cortex-M4 (-mcpu=cortex-m4 -mthumb -Os, newlib-nano), bytes: text data bss"
printf '%-10s | %-18s | %-18s | %-18s | %s\n' config libelk.a libelk_port_lwip.a cm4_link.elf \
  "RAM: 3 nodes + client + 1 lock + pool"
for cfg in default cortex_m4; do
  IFS='|' read -r a b c <<<"${summary[$cfg]}"
  printf '%-10s | %-18s | %-18s | %-18s | %s\n' "$cfg" "$(echo $a)" "$(echo $b)" "$(echo $c)" "${ram[$cfg]}"
done
exit $status
