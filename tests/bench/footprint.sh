#!/bin/bash
# SPDX-License-Identifier: MIT
# Footprint of edgelock's core (issue 7):
#  - .text/.data/.bss of lib/ for a Cortex-M4 (arm-none-eabi-gcc -Os -mcpu=cortex-m4
#    -mthumb), for the default Kconfig, configs/cortex_m4_defconfig (if present) and
#    configs/minimal_defconfig. Uses cmake/toolchain-arm-none-eabi.cmake with
#    ELK_LIB_ONLY=ON when it exists, else compiles lib/*/*.c directly.
#  - RAM per lock, per node, per client: sizeof the structs, on the Cortex-M4 and on
#    this host (read from symbol sizes, so no target program has to run).
#  - per module (lib/<module>/) .text (code) and .rodata (constants) apart, and totals;
#  - stack: largest -fstack-usage frame, an upper bound for a lock cycle's lib/ stack,
#    and the high-water mark bench_lock measured (if run-all.sh ran it);
#  - comparison points: coreMQTT's published ~19 KB at -Os, hiredis's read.o (host x86_64
#    from Debian's libhiredis.a, labelled as such). Instructions per cycle: run-all.sh.
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
  # Per module (lib/<module>/): code (.text*) and constants (.rodata*) apart; size -A
  # per archive member, the member mapped back to its lib/<module>/ folder.
  permod=$(arm-none-eabi-size -A "$lib" | awk '
    / \(ex / { m = $1; next }
    $1 ~ /^\.text/ { t[m] += $2 }
    $1 ~ /^\.rodata/ { r[m] += $2 }
    END { for (k in t) print k, t[k], r[k] + 0; for (k in r) if (!(k in t)) print k, 0, r[k] }')
  declare -A mt=() mr=()
  while read -r obj tx ro; do
    src=${obj%.obj}; src=${src%.o}; src=${src%.c}
    mod=$(for f in "$ROOT"/lib/*/"$src".c; do [ -e "$f" ] && basename "$(dirname "$f")"; done | head -1)
    mod=${mod:-other}
    mt[$mod]=$(( ${mt[$mod]:-0} + tx )); mr[$mod]=$(( ${mr[$mod]:-0} + ro ))
  done <<<"$permod"
  tt=0; tr=0
  for mod in $(printf '%s\n' "${!mt[@]}" | sort); do
    row "$label, lib/$mod .text (code)" "${mt[$mod]}" bytes "arm-none-eabi-size -A <libelk.a>: .text* of lib/$mod/*.c"
    row "$label, lib/$mod .rodata (constants)" "${mr[$mod]}" bytes "arm-none-eabi-size -A <libelk.a>: .rodata* of lib/$mod/*.c"
    tt=$((tt + mt[$mod])); tr=$((tr + mr[$mod]))
  done
  row "$label, total .text (code)" "$tt" bytes "sum of the rows above"
  row "$label, total .rodata (constants)" "$tr" bytes "sum of the rows above"
  unset mt mr
  row "$label .text (size -t: code + constants)" "$text" bytes "$how"
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

# Stack: the largest frames from -fstack-usage (Cortex-M4 -Os, default config; static
# frames, no call graph), and the high-water mark bench_lock measures on the host.
su=$WORK/stack; rm -rf "$su"; mkdir -p "$su"; gen_config "$su" ""
for src in "$ROOT"/lib/*/*.c; do
  $CC $CFLAGS -fstack-usage -I"$ROOT/lib/include" -I"$su/generated" -c "$src" \
    -o "$su/$(basename "$(dirname "$src")")_$(basename "$src" .c).o" 2>/dev/null || true
done
if ls "$su"/*.su >/dev/null 2>&1; then
  read -r fsz fname < <(cat "$su"/*.su | awk -F'\t' '{print $2, $1}' | sort -rn | head -1)
  row "largest stack frame in lib/ (-fstack-usage, Cortex-M4 -Os): ${fname##*:}" "$fsz" bytes \
      "arm-none-eabi-gcc $CFLAGS -fstack-usage -c lib/*/*.c; sort -k2 -n *.su"
  read -r cyc < <(cat "$su"/*.su | awk -F'\t' '$1 ~ /:(elk_client_poll|elk_lock__step|elk_fleet_poll|elk_node_poll|elk_node_receive|elk_node__io_pump|elk_lock__on_reply|elk_lock__send_script|elk_node_send|elk_resp_encode_command|elk_resp_reader_next|elk_lock_acquire|elk_lock_release)$/ {s += $2} END {print s + 0}')
  row "stack of a lock cycle in lib/, upper bound: sum of the -fstack-usage frames of every function on its two call chains (send and reply), Cortex-M4 -Os" \
      "$cyc" bytes "sum of those functions' -fstack-usage frames (static, Cortex-M4 -Os)"
fi
BRES=${ELK_BENCH_BUILD:-$ROOT/build-bench}/results/bench_lock.txt
if [ -f "$BRES" ]; then
  hw=$(sed -n 's/^RESULT elk.stack_hwm_bytes \([0-9.e+]*\) .*/\1/p' "$BRES" | tail -1)
  [ -n "$hw" ] && row "stack high-water of a lock cycle, measured (host x86_64 -O2, lib + posix port + libc)" \
    "$hw" bytes "build-bench/tests/bench/bench_lock (painted thread stack, 1,000 cycles)"
fi

# Comparison points (other projects; different scopes, read with care).
row "coreMQTT, published footprint at -Os (its docs: ~19 KB, Cortex-M class; MQTT client, not comparable 1:1)" \
    "19000" bytes "published figure (coreMQTT README / FreeRTOS memory table), not measured here"
HR=/usr/lib/x86_64-linux-gnu/libhiredis.a
if [ -f "$HR" ]; then
  ( cd "$WORK" && ar x "$HR" read.o ) 2>/dev/null
  read -r htext hdata hbss < <(size "$WORK/read.o" | awk 'NR==2{print $1, $2, $3}')
  row "hiredis reply reader read.o, HOST x86_64 (Debian libhiredis.a, its build flags; not Cortex-M4)" \
      "$htext" bytes "ar x $HR read.o && size read.o  (.text incl. rodata)"
fi
# Instructions per lock cycle: tests/bench/run-all.sh (callgrind on bench_lock --cycles).

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
