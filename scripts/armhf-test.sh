#!/bin/bash
# SPDX-License-Identifier: MIT
# Cross-builds edgelock for armhf (32-bit ARM Linux gateways) with Debian's
# gcc-arm-linux-gnueabihf and Debian's armhf libraries (multiarch), and runs the unit
# tests under qemu-arm (ctest -L unit, through CMAKE_CROSSCOMPILING_EMULATOR), plus the
# zero-heap / no-globals symbol checks on the ARM objects and a smoke run of elkd and
# elk; on request the integration tests too (ARM client, host redis-server).
# Builds: lib/ (libelk.a), port/posix, port/mbedtls (when libmbedtls-dev:armhf is there),
# firmware/ (elkd, elk) and every unit test. Installs what is missing first (needs root
# or sudo); fast when everything is there. docs/cross-compile.md explains the recipe.
# Usage: scripts/armhf-test.sh [BUILD_DIR]          (default: build-armhf)
#   ELK_ARMHF_BUILD_TYPE   CMake build type (default MinSizeRel, what a gateway ships)
#   ELK_ARMHF_INTEGRATION  1: also the integration tests (ARM client under qemu against
#                          real redis-server on 127.0.0.1, plain and TLS; about 2.5 more
#                          minutes, one at a time); 0 (default): not
#   JOBS                   parallel build/test jobs (default: nproc)
# Exit: 0 everything built and every test passed; 1 a build or test failed;
#       77 a needed package cannot be had (ctest SKIP), with the reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-armhf}
build_type=${ELK_ARMHF_BUILD_TYPE:-MinSizeRel}
jobs=${JOBS:-$(nproc)}
arch=armhf
triplet=arm-linux-gnueabihf
t_start=$SECONDS

say() { echo "armhf-test: $*"; }
skip() { say "SKIP: $*"; exit 77; }
fail() { say "FAIL: $*"; exit 1; }

# ------------------------------------------------------------------ packages
# Host tools (the cross compiler, its libc, qemu), then armhf libraries. mbedtls is
# optional (no TLS port without it); hiredis only because tests/bench and tests/diff
# refuse to configure without it. gcc only recommends its libc: name it.
host_pkgs="gcc-$triplet libc6-dev-$arch-cross qemu-user"
need_libs="libcmocka-dev:$arch libhiredis-dev:$arch"
opt_libs="libmbedtls-dev:$arch"

have_qemu() { command -v qemu-arm >/dev/null || command -v qemu-arm-static >/dev/null; }
missing_pkgs() { # prints the packages of "$@" that are not installed
  local p out=""
  for p in "$@"; do
    case $p in
      "gcc-$triplet") command -v "$triplet-gcc" >/dev/null && continue ;;
      qemu-user) have_qemu && continue ;;   # qemu-user-static does as well
    esac
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || out="$out $p"
  done
  echo "$out"
}

t_pkg=$SECONDS
missing=$(missing_pkgs $host_pkgs $need_libs $opt_libs)
installed_now=no
if [ -n "$missing" ]; then
  installed_now=yes
  say "missing:$missing"
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    if ! { command -v sudo >/dev/null && sudo -n true 2>/dev/null; }; then
      skip "needs root (or sudo) to install:$missing"
    fi
    sudo=(sudo -n)
  fi
  command -v apt-get >/dev/null || skip "no apt-get (not Debian?); install by hand:$missing"
  apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -q)
  foreign=$(dpkg --print-foreign-architectures)
  if ! grep -qx "$arch" <<<"$foreign"; then
    say "dpkg --add-architecture $arch"
    "${sudo[@]}" dpkg --add-architecture "$arch"
  fi
  have_lists() { compgen -G "/var/lib/apt/lists/*_binary-${arch}_Packages*" >/dev/null; }
  apt_update() {
    say "apt-get update (fetches the $arch package lists)"
    "${apt[@]}" update >/dev/null && return 0
    say "apt-get update failed; once more in 10s (a mirror may be syncing)"
    sleep 10
    "${apt[@]}" update >/dev/null && return 0
    # Partial failures (one suite's index) still leave usable lists; apt-get install
    # below says whether what we need can be had from them.
    have_lists || skip "apt-get update failed and there are no $arch package lists (no network or mirror?)"
    say "WARNING: apt-get update reported errors (above); installing from the lists it has"
  }
  # An update only when the armhf lists are not there yet (the slow part), or when
  # installing from the lists we have fails (they may be stale).
  if ! have_lists; then
    apt_update
  fi
  apt_install() { "${apt[@]}" install --no-install-recommends "$@" >/dev/null; }
  if ! apt_install $missing; then
    apt_update
    if ! apt_install $missing; then
      # Without the optional packages, if that is what cannot be had.
      required=$(missing_pkgs $host_pkgs $need_libs)
      [ -n "$required" ] && { apt_install $required || skip "cannot install$required (apt-get output above)"; }
    fi
  fi
  still=$(missing_pkgs $host_pkgs $need_libs)
  [ -z "$still" ] || skip "still missing after apt-get:$still"
fi
t_pkg=$((SECONDS - t_pkg))
if [ "$installed_now" = yes ]; then
  say "packages installed in ${t_pkg}s"
else
  say "all packages present"
fi
qemu=$(command -v qemu-arm || command -v qemu-arm-static)

# ------------------------------------------------------------------ configure
t_cfg=$SECONDS
ports="posix;mbedtls"
tls=yes
if [ -n "$(missing_pkgs $opt_libs)" ]; then
  ports="posix"; tls=no
  say "NOTE: libmbedtls-dev:$arch not installed: port/mbedtls and TLS are not built"
fi
cfg_args=(-DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-armhf.cmake"
          -DCMAKE_BUILD_TYPE="$build_type" -DELK_PORTS="$ports")
mkdir -p "$build"
say "cmake -S $root -B $build ${cfg_args[*]}"
if ! cmake -S "$root" -B "$build" "${cfg_args[@]}" >"$build/configure.log" 2>&1; then
  cat "$build/configure.log"; fail "configure failed (log: $build/configure.log)"
fi
t_cfg=$((SECONDS - t_cfg))

# ------------------------------------------------------------------ build
# Only what a gateway ships and what the unit tests need, not every tool and benchmark.
t_build=$SECONDS
all_targets=$(cmake --build "$build" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')
has_target() { grep -qx "$1" <<<"$all_targets"; }
unit_tests=$(cd "$build" && ctest -N -L unit | sed -n 's/^ *Test *#[0-9]*: unit\.\([^ ]*\)$/\1/p')
[ -n "$unit_tests" ] || fail "ctest -L unit lists no unit tests in $build"
integ_tests=""
integration=${ELK_ARMHF_INTEGRATION:-0}
if [ "$integration" = 1 ]; then
  integ_tests=$(cd "$build" && ctest -N -L integration -R '^integration\.' | \
                sed -n 's/^ *Test *#[0-9]*: integration\.\([^ ]*\)$/\1/p')
  [ -n "$integ_tests" ] || say "NOTE: no integration tests configured (redis-server, openssl on the host?)"
fi
targets=()
for t in elk elk_port_posix elk_port_mbedtls elk_port_fence_file elkfw elk_cli elkd $unit_tests $integ_tests; do
  if has_target "$t"; then targets+=("$t"); else
    case $t in
      elk_port_mbedtls) [ "$tls" = no ] || fail "target elk_port_mbedtls missing although mbedtls:$arch is installed" ;;
      elkd) say "NOTE: no elkd target (firmware/CMakeLists.txt did not define it; see configure.log)" ;;
      elk|elk_port_posix) fail "target $t missing" ;;
      elk_cli|elkfw|elk_port_fence_file)
        [ ! -f "$root/firmware/CMakeLists.txt" ] || fail "target $t missing (firmware/ is there)" ;;
      *) fail "test unit.$t / integration.$t has no target named $t" ;;
    esac
  fi
done
say "building ${#targets[@]} targets ($build_type, -j$jobs)"
# Keep going past a target that does not compile, so one broken test does not hide
# the rest; what did not build is listed and fails the run.
if [ -f "$build/build.ninja" ]; then keep=(-- -k 0); else keep=(-- -k); fi
build_rc=0
cmake --build "$build" -j"$jobs" --target "${targets[@]}" "${keep[@]}" >"$build/build.log" 2>&1 || build_rc=$?
not_built=""
if [ "$build_rc" -ne 0 ]; then
  grep -E ': (fatal )?error:|undefined reference|cannot find' "$build/build.log" | sort -u | head -40 || true
  for t in "${targets[@]}"; do
    if grep -qE "(Target '$t' not remade|\\[[^]]*[: /]$t\\] Error)" "$build/build.log"; then
      not_built="$not_built $t"
    fi
  done
  say "build FAILED for:${not_built:- (see log)} (log: $build/build.log); running the tests that built"
fi
t_build=$((SECONDS - t_build))

# Every program must really be an ARM executable, or qemu proves nothing.
not_arm=""
progs=()
while IFS= read -r f; do
  m=$(readelf -h "$f" 2>/dev/null | sed -n 's/^ *Machine: *//p') || true
  [ -n "$m" ] || continue   # not an ELF file
  progs+=("$f")
  [ "$m" = ARM ] || not_arm="$not_arm $f($m)"
done < <(find "$build" -path '*/CMakeFiles' -prune -o -type f -perm -u+x -print)
[ -z "$not_arm" ] || fail "not ARM executables:$not_arm"
grep -q "qemu-arm" "$build/tests/unit/CTestTestfile.cmake" || \
  fail "ctest would not run the unit tests through qemu-arm (CMAKE_CROSSCOMPILING_EMULATOR)"

# ------------------------------------------------------------------ test
t_test=$SECONDS
count() { # ctest log -> "passed failed"
  local line; line=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$1" | tail -1 || true)
  if [ -z "$line" ]; then echo "0 1"; return; fi
  local f t
  f=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")
  t=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/' <<<"$line")
  echo "$((t - f)) $f"
}
say "ctest -L unit (through CMAKE_CROSSCOMPILING_EMULATOR: $qemu -L /usr/$triplet ...)"
set +e
(cd "$build" && ctest --output-on-failure -j"$jobs" -L unit) 2>&1 | tee "$build/unit.log"
unit_rc=${PIPESTATUS[0]}
(cd "$build" && ctest --output-on-failure -R '^(lib_symbols_core|elk_port_[a-z_]*_no_heap)$') \
  >"$build/symbols.log" 2>&1
sym_rc=$?
integ_rc=0
if [ -n "$integ_tests" ]; then
  # The agent.* tests are left out: their scripts exec elkd directly, which needs
  # qemu registered with binfmt_misc; these start ARM test programs through ctest.
  # One at a time: the lock tests' 1 s round timeout is tight for emulated code when
  # two fleets run side by side (seen: FLEET_UNAVAILABLE with -j2 on a loaded machine).
  say "ctest -L integration -R '^integration\.' (ARM client under qemu-arm, host redis-server)"
  (cd "$build" && ctest --output-on-failure -j1 -L integration -R '^integration\.') 2>&1 | \
    tee "$build/integration.log"
  integ_rc=${PIPESTATUS[0]}
fi
set -e
# The gateway programs start on ARM: shared libraries resolve, config parsing and the
# fence state file work (exit codes as in README.md).
emu=("$qemu" -L "/usr/$triplet" -E "LD_LIBRARY_PATH=/usr/$triplet/lib")
prog_pass=0; prog_fail=0
smoke() { # expected-exit-code description command...
  local want=$1 what=$2 got=0; shift 2
  "${emu[@]}" "$@" >"$build/smoke.out" 2>&1 || got=$?
  if [ "$got" -eq "$want" ]; then prog_pass=$((prog_pass + 1)); else
    prog_fail=$((prog_fail + 1))
    say "FAIL: $what: exit $got, expected $want:"; sed 's/^/    /' "$build/smoke.out"
  fi
}
if [ -x "$build/firmware/elk" ]; then
  smoke 0 "elk --help" "$build/firmware/elk" --help
  rm -f "$build/smoke.token"
  smoke 0 "elk guard accepts token 7" "$build/firmware/elk" guard --state "$build/smoke.token" 7
  smoke 65 "elk guard refuses lower token 5" "$build/firmware/elk" guard --state "$build/smoke.token" 5
fi
if [ -x "$build/firmware/elkd" ]; then
  printf '[fleet]\nmode = single\n[node a]\nhost = 127.0.0.1\n[resource valve-1]\nttl = 10s\n' \
    >"$build/smoke-ok.conf"
  sed 's/ttl = 10s/ttl = 10x/' "$build/smoke-ok.conf" >"$build/smoke-bad.conf"
  smoke 0 "elkd --version" "$build/firmware/elkd" --version
  smoke 0 "elkd --check on a valid config" "$build/firmware/elkd" -c "$build/smoke-ok.conf" --check
  smoke 2 "elkd --check on an invalid config" "$build/firmware/elkd" -c "$build/smoke-bad.conf" --check
fi
read -r unit_pass unit_fail < <(count "$build/unit.log")
read -r sym_pass sym_fail < <(count "$build/symbols.log")
integ_pass=0; integ_fail=0
[ -z "$integ_tests" ] || read -r integ_pass integ_fail < <(count "$build/integration.log")
[ "$sym_rc" -eq 0 ] || cat "$build/symbols.log"
t_test=$((SECONDS - t_test))

# ------------------------------------------------------------------ summary
echo
echo "== armhf summary =="
echo "toolchain:   $($triplet-gcc --version | head -1); $($qemu --version | head -1)"
echo "packages:    $( [ "$installed_now" = yes ] && echo "installed this run (${t_pkg}s)" || echo present)"
echo "build:       $build ($build_type, ports: ${ports//;/ }), ${#targets[@]} targets, ${#progs[@]} ARM programs"
[ "$build_rc" -eq 0 ] || echo "NOT BUILT:  ${not_built:- (see $build/build.log)}"
echo "unit tests:  $unit_pass passed, $unit_fail failed (ctest -L unit under qemu-arm)"
if [ -n "$integ_tests" ]; then
  echo "integration: $integ_pass passed, $integ_fail failed (ARM client under qemu-arm, host redis-server)"
else
  echo "integration: not run$( [ "$integration" = 1 ] || echo " (ELK_ARMHF_INTEGRATION=1 runs them)")"
fi
echo "programs:    $prog_pass passed, $prog_fail failed (elk, elkd started under qemu-arm)"
echo "symbols:     $sym_pass passed, $sym_fail failed (zero heap, no globals, libc subset on ARM objects)"
echo "sizes:       ($triplet-size, bytes; programs dynamically linked, not stripped)"
printf '  %-28s %8s %6s %6s\n' file text data bss
size_line() { printf '  %-28s %8s %6s %6s\n' "$1" "$2" "$3" "$4"; }
sizes_of() { "$triplet-size" "$@" | tail -1 | awk '{print $1, $2, $3}'; }
if [ -f "$build/lib/libelk.a" ]; then
  read -r tx da bs < <(sizes_of -t "$build/lib/libelk.a")
  size_line "libelk.a (all objects)" "$tx" "$da" "$bs"
fi
for f in elkd elk; do
  if [ -f "$build/firmware/$f" ]; then
    read -r tx da bs < <(sizes_of "$build/firmware/$f")
    size_line "$f" "$tx" "$da" "$bs"
  fi
done
echo "times:       packages ${t_pkg}s, configure ${t_cfg}s, build ${t_build}s, tests ${t_test}s," \
     "total $((SECONDS - t_start))s"
if [ "$build_rc" -eq 0 ] && [ "$unit_rc" -eq 0 ] && [ "$sym_rc" -eq 0 ] && [ "$sym_fail" -eq 0 ] && [ "$sym_pass" -gt 0 ] && \
   [ "$integ_rc" -eq 0 ] && [ "$integ_fail" -eq 0 ] && \
   [ "$prog_fail" -eq 0 ] && [ "$unit_fail" -eq 0 ] && [ "$unit_pass" -gt 0 ]; then
  echo "armhf: PASS"
  exit 0
fi
echo "armhf: FAIL"
exit 1
