#!/bin/sh
# Installs the Debian 12 packages edgelock builds, tests and demos with.
# Skips apt entirely when everything is already there. Needs root (or sudo).
set -eu
PKGS="cmake gcc clang libclang-rt-14-dev valgrind python3 python3-kconfiglib libmbedtls-dev
libcmocka-dev libhiredis-dev redis-server redis-tools openssl python3-redis faketime
liblwip-dev gcc-arm-none-eabi libnewlib-arm-none-eabi iproute2 procps binutils"
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
echo "install-deps: installing$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
# Debian starts a system redis-server on 6379 when it installs; edgelock never uses it
# (tests start their own on ephemeral ports), so stop it where systemd is not running it.
