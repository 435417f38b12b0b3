#!/bin/bash
# Footprint of edgelock's core (issue 7):
#  - .text/.data/.bss of lib/ for a Cortex-M4 (arm-none-eabi-gcc -Os -mcpu=cortex-m4
#    -mthumb), for the default Kconfig, configs/cortex_m4_defconfig (if present) and
#    configs/minimal_defconfig. Uses cmake/toolchain-arm-none-eabi.cmake with
#    ELK_LIB_ONLY=ON when it exists, else compiles lib/*/*.c directly.
#  - RAM per lock, per node, per client: sizeof the structs, on the Cortex-M4 and on
#    this host (read from symbol sizes, so no target program has to run).
#  - instructions per lock cycle with valgrind --tool=callgrind, if bench_lock exists
#    (built by run-all.sh in build-bench/); "not built" otherwise.
# Usage: tests/bench/footprint.sh [--json]    (prints a table, or JSON lines with --json)
# Nothing here is a test; it only prints figures and the commands that give them.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
JSON=0
[ "${1:-}" = "--json" ] && JSON=1
WORK=${ELK_FOOTPRINT_DIR:-$ROOT/build-bench/footprint}
mkdir -p "$WORK"
PY=/usr/bin/python3
CC=arm-none-eabi-gcc
CFLAGS="-std=c99 -Os -mcpu=cortex-m4 -mthumb -ffunction-sections -fdata-sections -Wall -Wextra -pedantic"

rows=()   # name, value, unit, command separated by US (0x1f): fields may be empty
US=$'\x1f'
row() { rows+=("$1$US$2$US$3$US$4"); }

if ! command -v $CC >/dev/null; then
  echo "footprint: $CC not found (apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi)" >&2
  exit 1
fi

configs=("default:")
[ -f "$ROOT/configs/cortex_m4_defconfig" ] && configs+=("cortex_m4:$ROOT/configs/cortex_m4_defconfig")
[ -f "$ROOT/configs/minimal_defconfig" ] && configs+=("minimal:$ROOT/configs/minimal_defconfig")

# Generated header for one defconfig (empty = Kconfig defaults), in $1/generated.
gen_config() { # dir defconfig
  mkdir -p "$1/generated"
  rm -f "$1/.config"
  "$PY" "$ROOT/cmake/kconfig.py" "$ROOT/Kconfig" "$2" "$1/.config" "$1/generated/elk_config.h" \
    "$1/generated/elk_config.cmake" >/dev/null
}

# libelk.a for the Cortex-M4 in $1: through the lwip engineer's toolchain file if it
# builds, else one arm-none-eabi-gcc call per lib/ source.
build_arm_lib() { # dir defconfig -> prints the archive path and how it was made
  local dir=$1 def=$2
  if [ -f "$ROOT/cmake/toolchain-arm-none-eabi.cmake" ]; then
    local defarg=""
    [ -n "$def" ] && defarg="-DELK_DEFCONFIG=$def"
    if cmake -S "$ROOT" -B "$dir/cm" -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchain-arm-none-eabi.cmake" \
         -DELK_LIB_ONLY=ON -DCMAKE_BUILD_TYPE=MinSizeRel $defarg >"$dir/cmake.log" 2>&1 &&
       cmake --build "$dir/cm" -j2 --target elk >>"$dir/cmake.log" 2>&1; then
      local a; a=$(find "$dir/cm" -name libelk.a | head -1)
      if [ -n "$a" ]; then
        echo "$a|cmake -S . -B build-cm4 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-arm-none-eabi.cmake -DELK_LIB_ONLY=ON ${defarg:+$defarg }&& cmake --build build-cm4 --target elk && arm-none-eabi-size -t build-cm4/lib/libelk.a"
        return
      fi
    fi
  fi
  gen_config "$dir" "$def"
  rm -rf "$dir/obj"; mkdir -p "$dir/obj"
  for src in "$ROOT"/lib/*/*.c; do
    local o; o="$dir/obj/$(basename "$(dirname "$src")")_$(basename "$src" .c).o"
    $CC $CFLAGS -I"$ROOT/lib/include" -I"$dir/generated" -c "$src" -o "$o"
  done
  rm -f "$dir/libelk.a"
  arm-none-eabi-ar rcs "$dir/libelk.a" "$dir"/obj/*.o
  echo "$dir/libelk.a|for f in lib/*/*.c; do arm-none-eabi-gcc $CFLAGS -Ilib/include -I<generated> -c \$f; done; arm-none-eabi-size -t *.o"
}

# sizeof() of the main structs: symbol sizes of arrays of that size, read with nm -S.
struct_sizes() { # compiler nm dir cflags... -> "lock node client pool tcp"
  local cc=$1 nm=$2 dir=$3; shift 3
  local extra="" hdrs='#include "elk/node.h"'
  [ -f "$ROOT/lib/include/elk/lock.h" ] && hdrs="$hdrs
#include \"elk/lock.h\""
  cat > "$dir/sizes.c" <<EOF
$hdrs
char sz_node[sizeof(elk_node_t)];
char sz_pool[sizeof(elk_pool_t)];
char sz_fleet[sizeof(elk_fleet_t)];
#ifdef ELK_LOCK_H
char sz_lock[sizeof(elk_lock_t)];
char sz_client[sizeof(elk_client_t)];
#endif
EOF
  $cc "$@" -I"$ROOT/lib/include" -I"$dir/generated" -c "$dir/sizes.c" -o "$dir/sizes.o"
  local addr size type sym
  $nm -S "$dir/sizes.o" | while read -r addr size type sym; do echo "$sym $((16#$size))"; done
}

for entry in "${configs[@]}"; do
  name=${entry%%:*}; def=${entry#*:}
  dir="$WORK/$name"; mkdir -p "$dir"
  res=$(build_arm_lib "$dir" "$def")
  lib=${res%%|*}; how=${res#*|}
  gen_config "$dir" "$def"
  read -r text data bss total < <(arm-none-eabi-size -t "$lib" | awk '/\(TOTALS\)/{print $1, $2, $3, $4}')
  label="lib/ Cortex-M4 -Os, ${name} config"
  row "$label .text" "$text" bytes "$how"
  row "$label .data" "$data" bytes "$how"
  row "$label .bss" "$bss" bytes "$how"
  blocks=$(sed -n 's/^#define CONFIG_ELK_POOL_BLOCK_COUNT \([0-9]*\)/\1/p' "$dir/generated/elk_config.h")
  bsize=$(sed -n 's/^#define CONFIG_ELK_POOL_BLOCK_SIZE \([0-9]*\)/\1/p' "$dir/generated/elk_config.h")
  nodes=$(sed -n 's/^#define CONFIG_ELK_MAX_NODES \([0-9]*\)/\1/p' "$dir/generated/elk_config.h")
  sizecmd="arm-none-eabi-nm -S of sizeof() arrays (tests/bench/footprint.sh, struct_sizes)"
  while read -r sym val; do
    case $sym in
      sz_lock) row "RAM per lock (elk_lock_t), Cortex-M4, ${name}" "$val" bytes "$sizecmd" ;;
      sz_node) row "RAM per node (elk_node_t, without its 2 pool blocks of ${bsize} B), Cortex-M4, ${name}" "$val" bytes "$sizecmd" ;;
      sz_client) row "RAM per client (elk_client_t), Cortex-M4, ${name}" "$val" bytes "$sizecmd" ;;
    esac
  done < <(struct_sizes $CC arm-none-eabi-nm "$dir" -std=c99 -mcpu=cortex-m4 -mthumb -Os)
  row "pool memory (CONFIG_ELK_POOL_BLOCK_COUNT x BLOCK_SIZE = ${blocks} x ${bsize}), ${name}" \
      "$((blocks * bsize))" bytes "grep POOL $dir/generated/elk_config.h"
  row "max nodes (CONFIG_ELK_MAX_NODES), ${name}" "$nodes" nodes "grep MAX_NODES $dir/generated/elk_config.h"
  if [ "$name" = default ]; then
    while read -r sym val; do
      case $sym in
        sz_lock) row "RAM per lock (elk_lock_t), host x86_64, default" "$val" bytes "gcc + nm -S (footprint.sh)" ;;
        sz_node) row "RAM per node (elk_node_t), host x86_64, default" "$val" bytes "gcc + nm -S (footprint.sh)" ;;
      esac
    done < <(struct_sizes gcc nm "$dir" -std=c99 -O2)
  fi
done

# Instructions per lock cycle: callgrind on bench_lock at two cycle counts, difference
# divided by the extra cycles (so start-up, connects and server start cancel out).
BL="$ROOT/build-bench/tests/bench/bench_lock"
if [ -x "$BL" ] && command -v valgrind >/dev/null; then
  ir() { # cycles -> total Ir of the bench_lock process
    local out="$WORK/callgrind.$1.out"
    rm -f "$out"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$BL" "$1" >/dev/null 2>&1 || return 1
    callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1; exit}'
  }
  n1=${ELK_FOOTPRINT_CYCLES1:-200}; n2=${ELK_FOOTPRINT_CYCLES2:-1200}
  if i1=$(ir "$n1") && i2=$(ir "$n2") && [ -n "$i1" ] && [ -n "$i2" ]; then
    row "instructions per lock cycle (bench_lock, all code in the process incl. kernel-call stubs)" \
        "$(( (i2 - i1) / (n2 - n1) ))" instr \
        "valgrind --tool=callgrind build-bench/tests/bench/bench_lock N for N=$n1,$n2; (Ir2-Ir1)/(N2-N1)"
  else
    row "instructions per lock cycle" "failed" "" "valgrind --tool=callgrind $BL N (see $WORK)"
  fi
else
  row "instructions per lock cycle" "not built" "" "needs tests/bench/bench_lock.c (by lock) and valgrind; run tests/bench/run-all.sh first"
fi

if [ $JSON = 1 ]; then
  for r in "${rows[@]}"; do
    IFS=$US read -r n v u c <<<"$r"
    "$PY" -c 'import json,sys; n,v,u,c=sys.argv[1:5]; print(json.dumps({"group":"footprint","name":n,"value":(float(v) if v.replace(".","",1).isdigit() else v),"unit":u,"command":c}))' "$n" "$v" "$u" "$c"
  done
else
  printf '%-92s %12s %-6s\n' "footprint" "value" "unit"
  for r in "${rows[@]}"; do
    IFS=$US read -r n v u c <<<"$r"
    printf '%-92s %12s %-6s\n' "$n" "$v" "$u"
    printf '    reproduce: %s\n' "$c"
  done
fi
