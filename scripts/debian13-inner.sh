#!/bin/bash
# SPDX-License-Identifier: MIT
# Helper of scripts/debian13-test.sh (not run by hand): started in fresh mount and PID
# namespaces, mounts what the trixie root needs, runs the build and the two test passes
# in it (chroot), and unmounts on every way out.
# Usage: debian13-inner.sh ROOT SRC BUILD_REL JOBS [TEST_JOBS]
set -euo pipefail
root=$1 src=$2 build_rel=$3 jobs=$4 test_jobs=${5:-$4}

if [ "${ELK_IN_ROOT:-0}" = 1 ]; then
  # ------------------------------------------------------------ inside the chroot
  cd /src
  build=/src/$build_rel
  mb=$(sed -n 's/^#define MBEDTLS_VERSION_STRING *"\(.*\)"/\1/p' /usr/include/mbedtls/build_info.h)
  echo "debian13: $(. /etc/os-release; echo "$PRETTY_NAME"), $(gcc-14 --version | head -1), mbedTLS $mb"
  echo "debian13: $(redis-server --version)"
  echo "debian13: $(valkey-server --version)"
  t=$SECONDS
  mkdir -p "$build"
  cmake -S /src -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=gcc-14 >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }
  nice -n 10 cmake --build "$build" -j"$jobs" >"$build/build.log" 2>&1 ||
    { grep -E 'error|Error' "$build/build.log" | head -40; exit 1; }
  echo "debian13: build (gcc 14, mbedTLS $mb) took $((SECONDS - t)) s"
  rc=0
  t=$SECONDS
  echo "debian13: pass 1: redis-server $(redis-server --version | grep -o 'v=[^ ]*')" \
       "- unit, integration, agent, lwIP"
  (cd "$build" && ctest --output-on-failure -j"$test_jobs" -L 'unit|integration' \
     -R '^(unit|integration|agent|lwip)\.' -E "${ELK_LONG_AGENT_TESTS:-^$}|agent\.(orphan|keep_key)$") || rc=1
  echo "debian13: pass 1 took $((SECONDS - t)) s"
  # Pass 2: every test starts "redis-server" (and agent tests "redis-cli") from PATH;
  # here those names run Valkey's programs.
  shim=$(mktemp -d)
  ln -s /usr/bin/valkey-server "$shim/redis-server"
  ln -s /usr/bin/valkey-cli "$shim/redis-cli"
  t=$SECONDS
  echo "debian13: pass 2: $(PATH=$shim:$PATH redis-server --version)" \
       "- integration, the server-facing agent tests, lwIP"
  # The lease engine's TLS reruns (test_lock_tls, test_sem_tls, test_multi_tls,
  # test_fair_tls: the plain cases again over TLS) are left to pass 1: here the scripts run in
  # test_lock_redis, test_sem_redis, test_multi_redis and test_fair_redis, and
  # TLS against Valkey in test_node_tls and test_tls_resume.
  # Of the agent tests, the ones whose outcome depends on the server: TLS, the server safety
  # check (CONFIG GET, INFO), ACL users and channel permissions, what a server says when a
  # lease is lost, the release channel, and the primitives' scripts. The others drive elkd's
  # own socket, supervision and logs: pass 1 and step 1 run them (they would only repeat here).
  server_agent='tls|reload_tls|safety|safety_recheck|preflight|channel_perm|loss_causes|wait|semaphore|fair|multi'
  (cd "$build" && PATH=$shim:$PATH ctest --output-on-failure -j"$test_jobs" -L integration \
     -R "^(integration|lwip)\.|^agent\.($server_agent)\$" \
     -E "integration\.test_(lock|sem|multi|fair)_tls\$") || rc=1
  echo "debian13: pass 2 took $((SECONDS - t)) s"
  exit "$rc"
fi

# -------------------------------------------------------------- namespace set-up
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mnt() { # target, mount arguments...
  local target=$1; shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounted+=("$target")
}
# The root must be a mount point of its own: ip netns exec (lwIP test) remounts "/".
mnt "$root" --bind "$root"
mnt "$root/proc" -t proc proc
mnt "$root/sys" -t sysfs sys
mnt "$root/dev" --rbind /dev
mount --make-rslave "$root/dev"
mnt "$root/tmp" -t tmpfs tmpfs
mnt "$root/run" -t tmpfs tmpfs
mnt "$root/src" --bind "$src"
ELK_IN_ROOT=1 chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root TERM=dumb ELK_IN_ROOT=1 ELK_LONG_AGENT_TESTS="${ELK_LONG_AGENT_TESTS:-}" /bin/bash "/src/scripts/$(basename "$0")" / /src "$build_rel" "$jobs" "$test_jobs"
