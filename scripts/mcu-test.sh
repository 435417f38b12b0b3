#!/bin/bash
# SPDX-License-Identifier: MIT
# The core on an emulated Cortex-M4 (QEMU -M mps2-an386, semihosting): builds lib/ +
# port/sim + the simulator (tests/sim) for the MCU with arm-none-eabi-gcc and
# newlib-nano (no heap), runs seeds of the mild and harsh profiles on it, and checks
# per seed that elk-sim's summary (counts, violations, events, trace hash) and exit
# status equal the host build's. Any difference fails. See docs/mcu.md.
#
# Usage: scripts/mcu-test.sh --elk-sim HOST_ELK_SIM [--config DOT_CONFIG | --defconfig FILE] [--out DIR]
#   --config: the host build's .config (what ctest passes), so both run one Kconfig;
#   --defconfig: a defconfig, for a host elk-sim built from the same one.
#   MCU_MILD_SEEDS (default 1-50), MCU_HARSH_SEEDS (default 100001-100020) and
#   MCU_CONTROL_SEEDS (default 1-5, the setnx-getset control) override the seed ranges
#   (FIRST-LAST).
# Exit: 0 all equal, 1 a difference or a build failure, 77 (ctest SKIP) only when
# qemu-system-arm is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build-mcu
host_sim=""
defconfig=""
dot_config=""
while [ $# -gt 0 ]; do
  case $1 in
    --elk-sim) host_sim=$2; shift 2 ;;
    --defconfig) defconfig=$2; shift 2 ;;
    --config) dot_config=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 --elk-sim HOST_ELK_SIM [--config DOT_CONFIG | --defconfig FILE] [--out DIR]" >&2; exit 1 ;;
  esac
done
command -v qemu-system-arm >/dev/null ||
  { echo "SKIP: qemu-system-arm not found (apt-get install qemu-system-arm)"; exit 77; }
[ -x "$host_sim" ] || { echo "FAIL: host elk-sim '$host_sim' not found (--elk-sim)"; exit 1; }
command -v arm-none-eabi-gcc >/dev/null ||
  { echo "FAIL: arm-none-eabi-gcc not found (scripts/install-deps.sh)"; exit 1; }

mkdir -p "$out"
cc=arm-none-eabi-gcc
arch=(-mcpu=cortex-m4 -mthumb -Os -ffunction-sections -fdata-sections)
xlib=$out/xlib
inc=(-I"$root/lib/include" -I"$root/lib/lock/include" -I"$root/port/sim/include" -I"$xlib/generated" -I"$root/tests/sim"
     -I"$root/tests/mcu")

# lib/ and port/sim for the M4, same Kconfig as the host build being compared.
build_libs() {
  if [ -n "$dot_config" ]; then   # an existing .config wins over any defconfig
    mkdir -p "$xlib"
    cmp -s "$dot_config" "$xlib/.config" || cp "$dot_config" "$xlib/.config"
  fi
  local args=(-DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-cortex-m4-qemu.cmake" -DCMAKE_BUILD_TYPE=
              -DELK_DEFCONFIG="$defconfig")
  cmake -S "$root" -B "$xlib" "${args[@]}" >"$out/xlib.configure.log" 2>&1 ||
    { cat "$out/xlib.configure.log"; return 1; }
  nice -n 10 cmake --build "$xlib" -j2 >"$out/xlib.build.log" 2>&1 ||
    { cat "$out/xlib.build.log"; return 1; }
}

# obj SRC OUT [extra cflags...]: the simulator's sources are C11 and print uint32_t
# with %u (unsigned long on arm-none-eabi, same size and passing as unsigned int), so
# -Wformat is off for them only; tests/mcu/mcu.h is force-included for newlib.
obj() {
  local src=$1 o=$2; shift 2
  "$cc" "${arch[@]}" -std=c11 -Wall -Wextra -Werror "$@" "${inc[@]}" -include "$root/tests/mcu/mcu.h" \
    -c "$src" -o "$o"
}

# link ELF OBJS...: no crt0, no heap (any malloc/free is an undefined __wrap_* symbol).
link() {
  local elf=$1; shift
  "$cc" "${arch[@]}" "$@" "$xlib/port/sim/libelk_port_sim.a" "$xlib/lib/libelk.a" \
    --specs=nano.specs -nostartfiles -T "$root/tests/mcu/mps2_an386.ld" -Wl,--gc-sections \
    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,--wrap=_malloc_r,--wrap=_free_r \
    -Wl,-Map,"${elf%.elf}.map" -o "$elf"
  if arm-none-eabi-nm "$elf" | awk '{print $NF}' | grep -qE '^(malloc|free|_malloc_r|_sbrk|_sbrk_r)$'; then
    echo "FAIL: $elf links a heap"; return 1
  fi
}

build_sim_image() {
  local o=$out/obj objs=() f
  mkdir -p "$o"
  for f in world checker profiles gw_elk gw_multi gw_setnx gw_naive_sem gw_fair; do
    obj "$root/tests/sim/$f.c" "$o/sim_$f.o" -Wno-format; objs+=("$o/sim_$f.o")
  done
  obj "$root/tests/sim/main.c" "$o/sim_main.o" -Wno-format -Dmain=elk_sim_main
  objs+=("$o/sim_main.o")
  for f in sim_mcu startup semihost mcu_stdio; do
    obj "$root/tests/mcu/$f.c" "$o/$f.o"; objs+=("$o/$f.o")
  done
  link "$out/sim_mcu.elf" "${objs[@]}"
}

# Lock-cycle figures (stack high-water, instructions per cycle, RAM): docs/footprint.md.
build_cycle_image() {
  local o=$out/obj f objs=()
  for f in cycle startup semihost mcu_stdio; do
    obj "$root/tests/mcu/$f.c" "$o/$f.o"; objs+=("$o/$f.o")
  done
  link "$out/cycle.elf" "${objs[@]}"
}

# The unit tests that need no OS, each its own image, on a heap-free subset of cmocka's
# API (tests/mcu/cmocka/cmocka.h: cmocka allocates its test states with malloc).
unit_tests=(test_resp_decode test_resp_encode test_pool test_fence test_lock_engine test_lock_engine_renew
            test_lock_engine_wait test_lock_engine_suspect test_lock_drift
            test_lock_scripts test_node_io test_node_conn test_node_fmt)
build_unit_images() {
  local o=$out/uobj f t support=()
  local uinc=(-I"$root/lib" -I"$root/tests/unit/support" -I"$root/tests/support" -I"$root/tests/mcu/cmocka")
  mkdir -p "$o"
  # tests/support/lock_events.c: the lock event recorder the unit tests share (no OS in it)
  for f in "$root"/tests/unit/support/*.c "$root/tests/support/lock_events.c" "$root/tests/mcu/cmocka_mcu.c"; do
    obj "$f" "$o/$(basename "$f" .c).o" -Wno-format "${uinc[@]}"; support+=("$o/$(basename "$f" .c).o")
  done
  for t in "${unit_tests[@]}"; do
    obj "$root/tests/unit/$t.c" "$o/$t.o" -Wno-format "${uinc[@]}"
    link "$out/$t.elf" "$o/$t.o" "${support[@]}" "$out/obj/startup.o" "$out/obj/semihost.o" "$out/obj/mcu_stdio.o"
  done
}

run_unit_tests() {
  local t rc log
  for t in "${unit_tests[@]}"; do
    log=$out/$t.txt
    rc=0
    qemu "$out/$t.elf" >"$log" || rc=$?
    if [ "$rc" -eq 0 ] && grep -q '^\[  PASSED  \]' "$log" && ! grep -q '^\[  FAILED  \]' "$log"; then
      echo "OK: $t on the MCU: $(grep '^\[  PASSED  \]' "$log")"
    else
      echo "FAIL: $t on the MCU (exit $rc):"; grep -E 'LINE|FAILED|mcu:' "$log" | head -20
      status=1
    fi
  done
}

# qemu ELF ARGS...: runs the image; its semihosting console (stdout and stderr of the
# program, in order) is QEMU's stderr. Bounded, so a hung image cannot hang ctest.
qemu() {
  local elf=$1; shift
  local sh="enable=on,target=native,arg=$(basename "$elf" .elf)" a
  for a in "$@"; do sh="$sh,arg=$a"; done
  timeout 1200 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
    ${QEMU_EXTRA:-} -semihosting-config "$sh" -kernel "$elf" 2>&1 >/dev/null
}

# The wall-clock part of elk-sim's "simulated ... h in ... s wall" line is the only
# output that may differ between two runs of one seed.
mask_wall() { sed -E 's/ in [0-9.]+ s wall: [0-9.]+ simulated hours per wall second//'; }

# host_runs SEEDS OPTS...: the host's elk-sim, one process per seed, in the MCU's format.
host_runs() {
  local first=${1%-*} last=${1#*-} s rc; shift
  for ((s = first; s <= last; s++)); do
    echo "== seed $s"
    rc=0
    stdbuf -oL "$host_sim" --seed "$s" --runs 1 "$@" 2>&1 || rc=$?
    echo "== exit $rc"
  done
}

# Seed blocks: "seed exit hash" per seed, for the report.
hashes() { awk '/^== seed /{s=$3} /trace hash/{h=$3} /^== exit /{print s, $3, h}' "$1"; }

# compare NAME SEEDS OPTS...: MCU and host, seed by seed.
compare() {
  local name=$1 seeds=$2; shift 2
  local mcu=$out/$name.mcu.txt host=$out/$name.host.txt t0 t1
  t0=$(date +%s)
  qemu "$out/sim_mcu.elf" --seeds "$seeds" "$@" | mask_wall >"$mcu" &
  local qpid=$!
  host_runs "$seeds" "$@" | mask_wall >"$host"
  wait "$qpid" || true
  t1=$(date +%s)
  grep -v '^== stack high-water' "$mcu" >"$mcu.cmp"
  hashes "$host" >"$out/$name.host.hashes"
  hashes "$mcu.cmp" >"$out/$name.mcu.hashes"
  local n; n=$(wc -l <"$out/$name.host.hashes")
  echo "-- $name: seeds $seeds, elk-sim $*: $n seeds in $((t1 - t0)) s; $(grep '^== stack' "$mcu" || echo 'no stack line')"
  if cmp -s "$host" "$mcu.cmp"; then
    echo "OK: $name: every seed's summary, trace hash and exit status equal the host's"
    echo "   seed exit trace-hash (host = MCU): $out/$name.host.hashes"
    return 0
  fi
  echo "FAIL: $name: the MCU's output differs from the host's (host -, MCU +):"
  diff -u "$host" "$mcu.cmp" | head -60
  echo "   replay one seed: $host_sim --seed S --runs 1 $* --trace, and on the MCU"
  echo "   qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none -kernel $out/sim_mcu.elf \\"
  echo "     -semihosting-config enable=on,target=native,arg=sim_mcu,arg=--seeds,arg=S-S,arg=...,arg=--trace"
  return 1
}

status=0
echo "== build lib/ + port/sim + tests/sim for Cortex-M4 (Kconfig: ${dot_config:-${defconfig:-defaults}})"
build_libs
build_sim_image
build_cycle_image
build_unit_images
arm-none-eabi-size "$out/sim_mcu.elf" "$out/cycle.elf"
# Instructions are counted by QEMU's virtual clock: -icount shift=10 is 1024 ns per
# instruction (tests/mcu/cycle.c). Figures only; nothing here is a timed assertion.
QEMU_EXTRA="-icount shift=10" qemu "$out/cycle.elf" --cycles 200 --icount-shift 10 | tee "$out/cycle.txt"
grep -q 'instructions per cycle' "$out/cycle.txt" || { echo "FAIL: the lock-cycle image did not run"; status=1; }
run_unit_tests
common=(--duration-ms 6000 --quiet)
compare mild "${MCU_MILD_SEEDS:-1-50}" --faults mild "${common[@]}" || status=1
compare harsh "${MCU_HARSH_SEEDS:-100001-100020}" --faults harsh "${common[@]}" || status=1
# The seeds' SETNX+GETSET control: its violations (stderr lines) and the 64-bit timestamps
# it formats with %llu and sends to Redis must come out the same too.
compare setnx "${MCU_CONTROL_SEEDS:-1-5}" --faults mild --duration-ms 6000 --control setnx-getset \
  --expect-violations || status=1
exit $status
