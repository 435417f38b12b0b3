#!/bin/bash
# SPDX-License-Identifier: MIT
# Debian 13 (trixie) stage: builds edgelock inside a debootstrap root of trixie with gcc 14
# and mbedTLS 3.6, and runs the unit, integration, agent and lwIP tests against
# redis-server 8, then the integration tests, the agent tests that depend on the server and
# the lwIP tests once more against valkey-server 8 (plain, TLS 1.2, TLS 1.3, mutual TLS,
# ACL users in each).
#
# The root comes from Debian's archive (the mirror /etc/apt/sources.list* names) and is
# kept OUTSIDE the clone, in $ELK_DEBIAN13_ROOT (default /var/cache/edgelock/trixie-root),
# reused while its stamp (suite, mirror, package set) matches and the packages are
# installed; otherwise it is built again next to it and swapped in.
# Everything runs in a mount and PID namespace of its own (unshare): every mount the root
# needs (proc, sys, dev, the source tree) and every process started in it end with the
# stage, whatever way it exits; the trap below also unmounts explicitly.
# Usage: scripts/debian13-test.sh [BUILD_DIR]   (default: build-debian13, inside the clone)
#   ELK_DEBIAN13_ROOT   where the root is kept
#   JOBS                parallel build jobs (default: nproc)
#   ELK_TEST_JOBS       parallel test jobs (default: JOBS; scripts/test.sh sets one more)
# Exit: 0 all passed; 1 a build or test failed; 77 cannot run here (not root, no network
#       for a first root), with the reason.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build_rel=${1:-build-debian13}
root=${ELK_DEBIAN13_ROOT:-/var/cache/edgelock/trixie-root}
jobs=${JOBS:-$(nproc)}
test_jobs=${ELK_TEST_JOBS:-$jobs}
suite=trixie
t0=$SECONDS
say() { echo "debian13: $*"; }
skip() { say "SKIP: $*"; exit 77; }

# What the root holds; changing this list rebuilds it on the next run.
pkgs="gcc libc6-dev make cmake binutils libmbedtls-dev libcmocka-dev libhiredis-dev liblwip-dev
python3 python3-kconfiglib python3-redis redis-server redis-tools valkey-server valkey-tools
openssl iproute2 procps faketime"

[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot, namespaces)"
command -v unshare >/dev/null || skip "no unshare(1) (util-linux)"
if ! command -v debootstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
    skip "cannot install debootstrap"
fi

# The project's package source: the first Debian (not security) archive apt is set up with.
mirror() {
  local m
  m=$({ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
      grep -oE 'https?://[^ ]+/debian/?( |$)' | { grep -v security || true; } | head -1 | tr -d ' ')
  echo "${m:-http://deb.debian.org/debian}"
}
mirror_url=$(mirror)
stamp_text() { printf 'suite %s\nmirror %s\npackages %s\n' "$suite" "$mirror_url" "$(echo $pkgs | tr ' ' '\n' | sort | tr '\n' ' ')"; }

# Intact: the stamp names this suite, mirror and package set, and dpkg in the root says
# every package is installed (a half-finished or damaged root fails that).
root_intact() { # dir
  local d=$1
  [ -f "$d/.edgelock-stamp" ] && [ "$(cat "$d/.edgelock-stamp")" = "$(stamp_text)" ] || return 1
  local st
  # shellcheck disable=SC2086
  st=$(chroot "$d" dpkg-query -W -f='${db:Status-Abbrev}\n' $pkgs 2>/dev/null) || return 1
  [ "$(grep -c '^ii' <<<"$st")" -eq "$(echo $pkgs | wc -w)" ]
}

build_root() { # dir: debootstrap + the packages, inside a private mount namespace
  local d=$1
  rm -rf "$d"
  say "debootstrap --variant=minbase $suite $d $mirror_url"
  debootstrap --variant=minbase "$suite" "$d" "$mirror_url" >"$d.log" 2>&1 ||
    { tail -20 "$d.log"; return 1; }
  # No service may start inside the root while packages install.
  printf '#!/bin/sh\nexit 101\n' >"$d/usr/sbin/policy-rc.d"
  chmod +x "$d/usr/sbin/policy-rc.d"
  # shellcheck disable=SC2086
  unshare --mount --propagation private -- sh -c '
    mount -t proc proc "$1/proc" && shift && d=$1 && shift &&
    chroot "$d" apt-get update -qq && chroot "$d" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends "$@" && chroot "$d" apt-get clean' \
    sh "$d" "$d" $pkgs >>"$d.log" 2>&1 || { tail -20 "$d.log"; return 1; }
  stamp_text >"$d/.edgelock-stamp"
}

t_root=$SECONDS
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9   # one builder at a time; others wait, then find it intact
if root_intact "$root"; then
  say "reusing $root ($(head -c 200 "$root/etc/debian_version"), stamp matches)"
  root_state=reused
else
  [ -e "$root" ] && say "$root is not intact or not current: building it again"
  build_root "$root.new" || skip "could not build the $suite root (network? log: $root.new.log)"
  root_intact "$root.new" || { say "FAIL: new root not intact"; exit 1; }
  rm -rf "$root.old"; [ -e "$root" ] && mv "$root" "$root.old"
  mv "$root.new" "$root"; rm -rf "$root.old"
  root_state="built in $((SECONDS - t_root)) s"
fi
flock -u 9
t_root=$((SECONDS - t_root))
say "root: $root_state"

# The stage proper, in new mount and PID namespaces: when it ends, the kernel unmounts
# everything and kills anything left (redis-server, valkey-server, elkd).
# If this script alone is stopped (SIGTERM/SIGINT), it kills the namespace's first
# process (unshare itself ignores those signals): the kernel then kills every other
# process in the namespace, and its mounts go with it. --kill-child does the same if
# unshare is killed.
rc=0
unshare --mount --pid --fork --kill-child --propagation private -- \
  bash "$src/scripts/debian13-inner.sh" "$root" "$src" "$build_rel" "$jobs" "$test_jobs" &
upid=$!
stop_ns() {
  local init
  init=$(cat "/proc/$upid/task/$upid/children" 2>/dev/null || true)
  [ -z "$init" ] || kill -KILL $init 2>/dev/null || true
  wait "$upid" 2>/dev/null || true
  say "stopped"
  exit 130
}
trap stop_ns INT TERM
wait "$upid" || rc=$?
trap - INT TERM

# Belt and braces: nothing of ours may be left mounted under the root.
if grep -q " $root/" /proc/self/mounts; then
  say "FAIL: mounts left under $root:"; grep " $root/" /proc/self/mounts; rc=1
fi
say "stage took $((SECONDS - t0)) s (root: $root_state)"
exit "$rc"
