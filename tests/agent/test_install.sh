#!/bin/sh
# SPDX-License-Identifier: MIT
# `cmake --install` must lay out what a gateway package needs: both programs (elkd in sbin,
# elk in bin), bash completions for both, the sample
# and the live config under <sysconfdir>/elkd, the systemd unit starting the installed
# elkd with that config, man pages, docs, and the library side (headers with the
# generated elk_config.h, .pc files, the CMake package).
# Then the prefix rules alone (configure only): /usr -> /etc, /usr/local -> /usr/local/etc.
# Usage: test_install.sh BUILD_DIR
set -eu
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
prefix=$(cache CMAKE_INSTALL_PREFIX)
libdir=$(cache CMAKE_INSTALL_LIBDIR)
case $prefix in /usr) etc=/etc ;; *) etc=$prefix/etc ;; esac
DESTDIR=$dest cmake --install "$build" >/dev/null
fail=0
for f in sbin/elkd bin/elk share/bash-completion/completions/elk share/bash-completion/completions/elkd \
         share/doc/edgelock/elkd.conf.sample lib/systemd/system/elkd.service \
         share/doc/edgelock/README.md share/doc/edgelock/control-protocol.md \
         share/man/man1/elk.1 share/man/man8/elkd.8 share/man/man5/elkd.conf.5 \
         include/elk/lock.h include/elk/elk_config.h include/elk/version.h include/elk/blocking.h \
         "$libdir/libelk.a" "$libdir/pkgconfig/edgelock.pc" "$libdir/cmake/edgelock/edgelock-config.cmake" \
         "$libdir/cmake/edgelock/edgelock-config-version.cmake"; do
  if [ -f "$dest$prefix/$f" ]; then echo "ok: $prefix/$f"; else echo "FAIL: $prefix/$f not installed"; fail=1; fi
done
if [ -f "$dest$etc/elkd/elkd.conf" ]; then echo "ok: $etc/elkd/elkd.conf"; else echo "FAIL: no $etc/elkd/elkd.conf"; fail=1; fi
for p in sbin/elkd bin/elk; do
  if "$dest$prefix/$p" --help >/dev/null 2>&1; then echo "ok: $p --help runs"; else echo "FAIL: $p --help"; fail=1; fi
done
unit=$dest$prefix/lib/systemd/system/elkd.service
grep -q "^ExecStart=$prefix/sbin/elkd -c $etc/elkd/elkd.conf " "$unit" ||
  { echo "FAIL: unit does not start $prefix/sbin/elkd -c $etc/elkd/elkd.conf:"; grep Exec "$unit"; fail=1; }
[ ! -e "$dest$prefix/bin/elkd" ] || { echo "FAIL: elkd also in $prefix/bin"; fail=1; }
# A person's edits survive a second install.
echo "# edited" >>"$dest$etc/elkd/elkd.conf"
DESTDIR=$dest cmake --install "$build" >/dev/null
if grep -q '^# edited$' "$dest$etc/elkd/elkd.conf"; then echo "ok: reinstall keeps an edited elkd.conf"
else echo "FAIL: reinstall replaced the edited elkd.conf"; fail=1; fi

# Prefix rules, from a configure of the same sources (no build).
for case in "/usr /usr/sbin /etc/elkd" "/usr/local /usr/local/sbin /usr/local/etc/elkd" \
            "/opt/edgelock /opt/edgelock/sbin /etc/opt/edgelock/elkd"; do
  # shellcheck disable=SC2086 # three words: prefix, sbindir, config dir
  set -- $case
  rm -rf "$dest/cfg"
  cmake -S "$src" -B "$dest/cfg" -DCMAKE_INSTALL_PREFIX="$1" -DELK_BUILD_TESTS=OFF >/dev/null 2>&1 ||
    { echo "FAIL: configure with prefix $1"; fail=1; continue; }
  # under the prefix the config destination stays relative (follows --prefix)
  conf_dest=$3
  # shellcheck disable=SC2016 # the literal CMake variable
  [ "$3" = "$1/etc/elkd" ] && conf_dest='${CMAKE_INSTALL_PREFIX}/etc/elkd'
  if grep -q "^ExecStart=$2/elkd -c $3/elkd.conf " "$dest/cfg/firmware/elkd.service" &&
     grep -qF "set(conf_dir \"$conf_dest\")" "$dest/cfg/firmware/cmake_install.cmake"; then
    echo "ok: prefix $1: unit runs $2/elkd -c $3/elkd.conf, config installed to $3"
  else
    echo "FAIL: prefix $1:"; grep Exec "$dest/cfg/firmware/elkd.service"; fail=1
  fi
done

# -DELK_SHARED_CORE=ON (the Debian build): libelk.so.0 beside libelk.a, the port archives
# unchanged, and the CMake package exports the shared core as edgelock::elk_shared.
rm -rf "$dest/shared" "$dest/sroot"
if cmake -S "$src" -B "$dest/shared" -DELK_SHARED_CORE=ON -DELK_LIB_ONLY=ON -DELK_PORTS=posix \
     -DCMAKE_INSTALL_PREFIX=/usr >/dev/null 2>&1 &&
   cmake --build "$dest/shared" -j2 >/dev/null 2>&1 &&
   DESTDIR=$dest/sroot cmake --install "$dest/shared" >/dev/null 2>&1; then
  sl=$(cd "$dest/shared" && sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' CMakeCache.txt)
  so=$dest/sroot/usr/$sl/libelk.so.0
  if [ -f "$dest/sroot/usr/$sl/libelk.a" ] && [ -e "$so" ] && [ -L "$dest/sroot/usr/$sl/libelk.so" ] &&
     objdump -p "$so" | grep -q 'SONAME *libelk.so.0$' &&
     grep -q 'edgelock::elk_shared' "$dest/sroot/usr/$sl/cmake/edgelock/edgelock-targets.cmake"; then
    echo "ok: -DELK_SHARED_CORE=ON installs libelk.a, libelk.so.0 (SONAME libelk.so.0), edgelock::elk_shared"
  else
    echo "FAIL: -DELK_SHARED_CORE=ON install:"; ls -l "$dest/sroot/usr/$sl"; fail=1
  fi
else
  echo "FAIL: configure/build/install with -DELK_SHARED_CORE=ON"; fail=1
fi
exit $fail
