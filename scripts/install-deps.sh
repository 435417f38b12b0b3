#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages edgelock builds, tests and demos with.
# Skips apt entirely when everything is already there. Needs root (or sudo).
set -eu
PKGS="cmake gcc clang libclang-rt-14-dev valgrind python3 python3-kconfiglib libmbedtls-dev
libcmocka-dev libhiredis-dev redis-server redis-tools openssl python3-redis faketime
liblwip-dev gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm iproute2 procps binutils nodejs
debootstrap musl-tools dpkg-dev qemu-user gcc-mips-linux-gnu gcc-mipsel-linux-gnu gcc-aarch64-linux-gnu
gcc-s390x-linux-gnu libc6-dev-mips-cross libc6-dev-mipsel-cross libc6-dev-arm64-cross libc6-dev-s390x-cross
debhelper lintian pkgconf make man-db prometheus chromium
doxygen python3-pytest dh-python stress-ng"
# doxygen: the API reference and its check (ctest docs.apidoc); python3-pytest: the Python
# client's suite (ctest python.client); dh-python: packaging python3-edgelock.
# prometheus: only for promtool (elkd's metrics text, the alert rules: tests/monitoring).
# chromium: headless, renders elk timeline's page (tests/timeline).
# stress-ng: the CPU hog beside the agent and scenario tests in scripts/test.sh (they must pass
# on a loaded machine).
# Ask for the native (or arch-independent) instance: once a foreign architecture such as
# armhf is added (scripts/armhf-test.sh), a bare `dpkg -s libmbedtls-dev` is ambiguous.
arch=$(dpkg --print-architecture)
installed() {
  dpkg-query -W -f='${Architecture} ${db:Status-Abbrev}\n' "$1" 2>/dev/null |
    grep -qE "^($arch|all) ii"
}
missing=""
for p in $PKGS; do
  installed "$p" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
echo "install-deps: installing$missing"
# Another apt or dpkg (unattended-upgrades, a second terminal) holds its lock: say who, and
# wait for it (up to 10 min) rather than fail with apt's "Could not get lock".
dpkg_lock_holder() {
  local f ino line pid
  for f in ${DPKG_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock}; do
    [ -e "$f" ] || continue
    ino=$(stat -c %i "$f") || continue
    # /proc/locks: "1: POSIX ADVISORY WRITE <pid> <maj>:<min>:<inode> 0 EOF"
    line=$(awk -v ino="$ino" '{ n = split($6, d, ":"); if (d[n] == ino) { print $5; exit } }' /proc/locks)
    pid=${line:-}
    if [ -n "$pid" ]; then
      echo "$f is held by pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || echo gone))"
      return 0
    fi
  done
  return 1
}
if holder=$(dpkg_lock_holder); then
  echo "install-deps: another package manager is running: $holder; waiting for it (up to 10 min)"
fi
# A mirror mid-sync can fail one index (seen with the armhf security index); what we
# need may still install from the lists that did download, so let apt-get install decide.
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq || echo "install-deps: apt-get update reported errors; trying the install anyway"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >/dev/null
# Debian starts a system redis-server on 6379 when it installs; edgelock never uses it
# (tests start their own on ephemeral ports), so stop it where systemd is not running it.
