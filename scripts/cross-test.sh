#!/bin/bash
# SPDX-License-Identifier: MIT
# Cross builds for OpenWrt-class and big-endian targets, tested under qemu-user:
#   mips    32-bit big-endian MIPS (OpenWrt ath79)       cmake/toolchain-mips.cmake
#   mipsel  32-bit little-endian MIPS (OpenWrt ramips)   cmake/toolchain-mipsel.cmake
#   aarch64 64-bit ARM                                   cmake/toolchain-aarch64.cmake
#   s390x   64-bit big-endian: the RESP decoder's 64-bit fast path on big-endian
# For each: cmocka, mbedTLS and hiredis from Debian's source packages (scripts/cross-deps.sh,
# cached in /var/cache/edgelock/deps), a static MinSizeRel build of lib/, the posix and
# mbedtls ports, elkd, elk and every unit test; ctest -L unit under qemu-<arch>; elk and
# elkd start-up checks under qemu; the stripped sizes of elkd and elk.
# Usage: scripts/cross-test.sh [TARGET...]   (default: all four; build dirs build-cross-<t>)
# Exit: 0 all passed; 1 something failed; 77 the cross compilers or qemu cannot be had.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${JOBS:-$(nproc)}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(mips mipsel aarch64 s390x)
t0=$SECONDS
say() { echo "cross-test: $*"; }

declare -A triplet=([mips]=mips-linux-gnu [mipsel]=mipsel-linux-gnu [aarch64]=aarch64-linux-gnu
                    [s390x]=s390x-linux-gnu)
declare -A debarch=([mips]=mips [mipsel]=mipsel [aarch64]=arm64 [s390x]=s390x)
declare -A qemu=([mips]=qemu-mips [mipsel]=qemu-mipsel [aarch64]=qemu-aarch64 [s390x]=qemu-s390x)
declare -A machine=([mips]=MIPS [mipsel]=MIPS [aarch64]=AArch64 [s390x]="IBM S/390")
declare -A endian=([mips]=big [mipsel]=little [aarch64]=little [s390x]=big)

# ------------------------------------------------------------------ packages
need=""
for t in "${targets[@]}"; do
  [ -n "${triplet[$t]:-}" ] || { say "unknown target $t (mips mipsel aarch64 s390x)"; exit 1; }
  command -v "${triplet[$t]}-gcc" >/dev/null || need="$need gcc-${triplet[$t]} libc6-dev-${debarch[$t]}-cross"
  command -v "${qemu[$t]}" >/dev/null || need="$need qemu-user"
done
if [ -n "$need" ]; then
  [ "$(id -u)" = 0 ] || { say "SKIP: needs root to install:$need"; exit 77; }
  say "installing$need"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null ||
    { say "SKIP: cannot install$need"; exit 77; }
fi

# ------------------------------------------------------------------ per target
summary=()
fail=0
smoke() { # target build expected-exit description command...
  local t=$1 b=$2 want=$3 what=$4 got=0; shift 4
  "${qemu[$t]}" "$@" >"$b/smoke.out" 2>&1 || got=$?
  if [ "$got" -ne "$want" ]; then
    say "$t: FAIL: $what: exit $got, expected $want:"; sed 's/^/    /' "$b/smoke.out"; return 1
  fi
}
startup_checks() { # target build: elk and elkd start on the target (exit codes as in README.md)
  local t=$1 b=$2 fw=$2/firmware rc=0
  rm -f "$b/smoke.token"
  printf '[fleet]\nmode = single\n[node a]\nhost = 127.0.0.1\n[resource valve-1]\nttl = 10s\n' >"$b/smoke-ok.conf"
  sed 's/ttl = 10s/ttl = 10x/' "$b/smoke-ok.conf" >"$b/smoke-bad.conf"
  smoke "$t" "$b" 0 "elk --help" "$fw/elk" --help || rc=1
  smoke "$t" "$b" 0 "elk guard accepts token 7" "$fw/elk" guard --state "$b/smoke.token" 7 || rc=1
  smoke "$t" "$b" 65 "elk guard refuses lower token 5" "$fw/elk" guard --state "$b/smoke.token" 5 || rc=1
  smoke "$t" "$b" 0 "elkd --version" "$fw/elkd" --version || rc=1
  smoke "$t" "$b" 0 "elkd --check on a valid config" "$fw/elkd" -c "$b/smoke-ok.conf" --check || rc=1
  smoke "$t" "$b" 2 "elkd --check on an invalid config" "$fw/elkd" -c "$b/smoke-bad.conf" --check || rc=1
  return $rc
}
# The RESP decoder's 64-bit path: compiled in where pointers are 64-bit (resp_lex.h).
resp_path() { # target build
  local cc=${triplet[$1]}-gcc
  printf '#include <stdint.h>\n#include "resp_lex.h"\nwide=ELK_RESP_WIDE order=__BYTE_ORDER__ big=__ORDER_BIG_ENDIAN__\n' |
    "$cc" -E -P -I"$root/lib/resp" -I"$root/lib/include" -I"$2/generated" - 2>/dev/null | grep '^wide=' |
    sed -E 's/wide=([01]) order=([0-9]+) big=([0-9]+)/\1 \2 \3/'
}

for t in "${targets[@]}"; do
  tt=$SECONDS
  b=$root/build-cross-$t
  tri=${triplet[$t]}
  deps=$("$root/scripts/cross-deps.sh" "$t" "$tri-gcc" | tail -1) || { say "$t: FAIL: deps"; fail=1; continue; }
  mkdir -p "$b"
  if ! cmake -S "$root" -B "$b" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-$t.cmake" \
       -DELK_CROSS_DEPS="$deps" -DCMAKE_BUILD_TYPE=MinSizeRel >"$b/configure.log" 2>&1; then
    tail -30 "$b/configure.log"; say "$t: FAIL: configure"; fail=1; continue
  fi
  units=$(cd "$b" && ctest -N -L unit | sed -n 's/^ *Test *#[0-9]*: unit\.\([^ ]*\)$/\1/p')
  if ! nice -n 10 cmake --build "$b" -j"$jobs" --target elk elk_port_posix elk_port_mbedtls elkd elk_cli $units \
       >"$b/build.log" 2>&1; then
    grep -E 'error|undefined' "$b/build.log" | head -30; say "$t: FAIL: build"; fail=1; continue
  fi
  # Programs must really be for the target (else qemu proves nothing).
  hdr=$(readelf -h "$b/firmware/elkd")
  grep -q "Machine: *${machine[$t]}" <<<"$hdr" && grep -q "${endian[$t]} endian" <<<"$hdr" ||
    { say "$t: FAIL: elkd is not ${machine[$t]} ${endian[$t]}-endian"; fail=1; continue; }
  ok=PASS
  (cd "$b" && ctest --output-on-failure -j"$jobs" -L unit) >"$b/unit.log" 2>&1 || ok=FAIL
  units_line=$(grep -E 'tests passed' "$b/unit.log" | tail -1)
  [ "$ok" = PASS ] || { grep -E 'Failed|\*\*\*' "$b/unit.log" | head; tail -40 "$b/unit.log"; }
  startup_checks "$t" "$b" || ok=FAIL
  read -r wide order big < <(resp_path "$t" "$b") || true
  resp="RESP 64-bit fast path: $([ "${wide:-?}" = 1 ] && echo "compiled in" || echo "compiled out (32-bit)")"
  if [ "$t" = s390x ]; then
    # The one 64-bit big-endian target: the fast path must be in, and its test must have run.
    [ "${wide:-}" = 1 ] && [ "${order:-}" = "${big:-x}" ] || { say "$t: FAIL: 64-bit path not compiled in"; ok=FAIL; }
    if grep -qE 'unit\.test_resp_fastpath .*Passed' "$b/unit.log"; then
      resp="$resp, big-endian, unit.test_resp_fastpath passed under qemu-s390x"
    else
      say "$t: FAIL: test_resp_fastpath did not pass"; ok=FAIL
      resp="$resp, big-endian, unit.test_resp_fastpath FAILED under qemu-s390x"
    fi
  fi
  mkdir -p "$b/stripped"
  sizes=""
  for p in elkd elk; do
    "$tri-strip" -o "$b/stripped/$p" "$b/firmware/$p"
    sizes="$sizes $p $(stat -c %s "$b/stripped/$p") B"
  done
  [ "$ok" = PASS ] || fail=1
  summary+=("$(printf '%-8s %s  unit: %s  start-up: elk, elkd  stripped (static, TLS):%s  %s  (%d s)' \
    "$t" "$ok" "${units_line:-none}" "$sizes" "$resp" $((SECONDS - tt)))")
done

echo
echo "== cross summary ($(date -u +%F)) =="
for l in "${summary[@]}"; do echo "$l"; done
say "took $((SECONDS - t0)) s"
exit $fail
