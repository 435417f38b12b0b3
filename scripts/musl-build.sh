#!/bin/bash
# SPDX-License-Identifier: MIT
# Static musl build of elkd and elk with TLS (what an OpenWrt image links against), and
# the agent end-to-end tests (tests/agent, real redis-server on 127.0.0.1, plain and TLS)
# run against those static programs.
#   musl-gcc from Debian 12's musl-tools; cmocka, mbedTLS and hiredis built from Debian's
#   source packages with musl-gcc (scripts/cross-deps.sh; no other downloads), cached in
#   /var/cache/edgelock/deps/musl-<arch>.
# Usage: scripts/musl-build.sh [BUILD_DIR]   (default: build-musl)
# Exit: 0 built and every agent test passed; 1 failure; 77 musl-tools cannot be had.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
b=${1:-$root/build-musl}
jobs=${JOBS:-$(nproc)}
test_jobs=${ELK_TEST_JOBS:-$jobs} # scripts/test.sh: one more than the cores (the tests mostly wait)
t0=$SECONDS
say() { echo "musl-build: $*"; }

if ! command -v musl-gcc >/dev/null; then
  [ "$(id -u)" = 0 ] || { say "SKIP: needs root to install musl-tools"; exit 77; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends musl-tools >/dev/null ||
    { say "SKIP: cannot install musl-tools"; exit 77; }
fi
deps=$("$root/scripts/cross-deps.sh" "musl-$(uname -m)" musl-gcc | tail -1)
mkdir -p "$b"
cmake -S "$root" -B "$b" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-musl.cmake" -DELK_MUSL_DEPS="$deps" \
  -DCMAKE_BUILD_TYPE=MinSizeRel >"$b/configure.log" 2>&1 || { tail -30 "$b/configure.log"; exit 1; }
nice -n 10 cmake --build "$b" -j"$jobs" --target elkd elk_cli >"$b/build.log" 2>&1 ||
  { grep -E 'error|undefined' "$b/build.log" | head -30; say "FAIL: build"; exit 1; }

# They must really be static musl programs with TLS, or the tests prove nothing about them.
for p in elkd elk; do
  f=$b/firmware/$p
  file -b "$f" 2>/dev/null | grep -q 'statically linked' || readelf -d "$f" 2>&1 | grep -q 'no dynamic section' ||
    { say "FAIL: $f is not statically linked"; exit 1; }
done
grep -q 'ELKD_TLS=1' "$b/firmware/CMakeFiles/elkd.dir/flags.make" || { say "FAIL: elkd built without TLS"; exit 1; }

# The agent tests, exactly as ctest registers them (tests/agent/CMakeLists.txt), with the
# static musl programs.
rc=0
# Issue 20's long waiting tests (scripts/test.sh, ELK_LONG_AGENT_TESTS) run in test.sh's step 1.
# agent.local_clock slows elkd with libfaketime, which an LD_PRELOAD cannot put into a static
# program; agent.agent_client tests port/posix's C helper (its own program, not built here).
(cd "$b" && ctest --output-on-failure -j"$test_jobs" -R '^agent\.' \
   -E "install_layout|${ELK_LONG_AGENT_TESTS:-^$}|agent\.orphan$|agent\.local_clock$|agent\.agent_client$") \
   >"$b/agent.log" 2>&1 || rc=1
grep -E 'tests passed|Failed|\*\*\*' "$b/agent.log" | sed 's/^/  /'
[ "$rc" = 0 ] || tail -60 "$b/agent.log"
grep -q 'Test.*agent\.tls.*Passed' "$b/agent.log" || { say "FAIL: agent.tls did not run and pass"; rc=1; }

mkdir -p "$b/stripped"
for p in elkd elk; do strip -o "$b/stripped/$p" "$b/firmware/$p"; done
say "musl $(uname -m) static, TLS: elkd $(stat -c %s "$b/stripped/elkd") B, elk $(stat -c %s "$b/stripped/elk") B (stripped)"
say "took $((SECONDS - t0)) s"
exit $rc
