#!/bin/bash
# SPDX-License-Identifier: MIT
# The Debian packages, end to end: build edgelock and libelk-dev with
# `dpkg-buildpackage -b -us -uc` from a copy of the source (the checkout stays clean), run
# lintian (errors and warnings fail; the README lists what remains and why), install both
# with apt-get, check the installed programs, unit, man pages and conffile, run
# `elkd --check` on a config made from the installed sample, build the examples against
# the installed libelk-dev (pkg-config and find_package) and run the actuator one, then
# purge both and check nothing is left.
# Exit: 0 pass, 77 cannot run here (reason printed), anything else fail.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
src=$PWD

skip() { echo "deb-test: SKIP: $*"; exit 77; }
for t in dpkg-buildpackage dh lintian apt-get cmake pkg-config; do
  command -v "$t" >/dev/null || skip "$t not installed (scripts/install-deps.sh installs it)"
done
[ "$(id -u)" = 0 ] || skip "installing packages needs root"
for p in edgelock libelk-dev; do
  if dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^i'; then
    skip "$p is already installed on this machine: not replacing it"
  fi
done

version=$(sed -n 's/^project(edgelock VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
work=$(mktemp -d /tmp/elk-deb.XXXXXX)
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq edgelock libelk-dev >/dev/null 2>&1
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
t0=$(date +%s)

changelog_version=$(dpkg-parsechangelog -l debian/changelog -S Version)
if [ "$changelog_version" = "$version" ]; then ok "debian/changelog is at $version"
else bad "debian/changelog says $changelog_version, CMakeLists.txt project(VERSION) $version"; fi

# 1. Build from a copy: tracked and new files, without build trees or anything ignored.
tree=$work/edgelock-$version
mkdir -p "$tree"
if git rev-parse --git-dir >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$tree"
else
  tar --exclude='./build*' -cf - . | tar -xf - -C "$tree"
fi
if (cd "$tree" && DEB_BUILD_OPTIONS="noautodbgsym parallel=${JOBS:-2}" dpkg-buildpackage -b -us -uc) \
     >"$work/build.log" 2>&1; then
  ok "dpkg-buildpackage -b -us -uc ($(( $(date +%s) - t0 )) s)"
else
  tail -40 "$work/build.log"; bad "dpkg-buildpackage"; exit 1
fi
debs=$(ls "$work"/edgelock_*.deb "$work"/libelk-dev_*.deb)
for d in $debs; do
  echo "   $(basename "$d"): $(stat -c %s "$d") bytes, installed $(dpkg-deb -f "$d" Installed-Size) KiB"
done

# 2. lintian: errors and warnings fail; info tags are printed.
t_lint=$(date +%s)
lintian --display-info --tag-display-limit 0 "$work"/edgelock_*.changes >"$work/lintian.log" 2>&1
grep -v 'running with root privileges' "$work/lintian.log" | sed 's/^/   lintian: /'
if grep -qE '^[EW]: ' "$work/lintian.log"; then bad "lintian reports errors or warnings"; else ok "lintian: no errors or warnings"; fi
echo "   (lintian took $(( $(date +%s) - t_lint )) s)"

# 3. Install with apt (dependencies resolved as a user's would be).
t_apt=$(date +%s)
# shellcheck disable=SC2086
if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $debs >"$work/apt.log" 2>&1; then
  installed=1; ok "apt-get install ./edgelock ./libelk-dev ($(( $(date +%s) - t_apt )) s)"
else
  cat "$work/apt.log"; bad "apt-get install"; exit 1
fi
check_run() { # description command...
  local d=$1; shift
  if "$@" >"$work/out" 2>&1; then ok "$d"; else cat "$work/out"; bad "$d"; fi
}
check_run "/usr/bin/elk --help" /usr/bin/elk --help
check_run "/usr/bin/elkd --version is $version" sh -c "test \"\$(/usr/bin/elkd --version)\" = 'elkd $version'"
check_run "unit starts /usr/bin/elkd -c /etc/elkd/elkd.conf" \
  grep -q '^ExecStart=/usr/bin/elkd -c /etc/elkd/elkd.conf ' /lib/systemd/system/elkd.service
check_run "user elkd in group elk (the unit's User= and the socket's group)" \
  sh -c "id -nG elkd | tr ' ' '\\n' | grep -qx elk"
check_run "/etc/elkd/elkd.conf is root:elkd 0640 (it may hold a password)" \
  sh -c "test \"\$(stat -c '%U:%G %a' /etc/elkd/elkd.conf)\" = 'root:elkd 640'"
check_run "/etc/elkd/elkd.conf is a conffile" sh -c "dpkg-query -W -f='\${Conffiles}' edgelock | grep -q ' /etc/elkd/elkd.conf '"
if command -v man >/dev/null; then
  check_run "man pages elk(1) elkd(8) elkd.conf(5)" man -w elk.1 elkd.8 elkd.conf.5
fi
# The shipped config is the commented sample: make it checkable (its password file)
# and let the installed elkd judge it.
# a secret only its owner can read (elkd --check refuses one every user can read)
(umask 077 && echo "secret" >"$work/redis.password")
# and a CA certificate (--check parses it, as elkd would at start).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=deb-test-ca \
  -keyout "$work/ca.key" -out "$work/ca.pem" >/dev/null 2>&1
sed -e "s#/etc/elkd/redis.password#$work/redis.password#" -e "s#/etc/elkd/ca.pem#$work/ca.pem#" \
  /usr/share/doc/edgelock/elkd.conf.sample >"$work/elkd.conf"
check_run "elkd -c <sample-derived config> --check" /usr/bin/elkd -c "$work/elkd.conf" --check
check_run "/etc/elkd/elkd.conf is the sample" cmp /etc/elkd/elkd.conf /usr/share/doc/edgelock/elkd.conf.sample

# 4. Examples against the installed libelk-dev, as a third party builds them.
mkdir -p "$work/ex"
# shellcheck disable=SC2046
check_run "pkg-config build of fence_actuator" cc -std=c11 -Wall -Wextra -Werror \
  $(pkg-config --cflags edgelock-posix) -o "$work/ex/fence_actuator" "$src/examples/fence_actuator.c" \
  $(pkg-config --libs edgelock-posix)
# shellcheck disable=SC2046
check_run "pkg-config build of lease_tls" cc -std=c11 -Wall -Wextra -Werror \
  $(pkg-config --cflags edgelock-posix edgelock-mbedtls) -o "$work/ex/lease_tls" "$src/examples/lease_tls.c" \
  $(pkg-config --libs edgelock-posix edgelock-mbedtls)
check_run "fence_actuator accepts token 7" "$work/ex/fence_actuator" "$work/valve.state" 7
"$work/ex/fence_actuator" "$work/valve.state" 6 >/dev/null 2>&1
rc=$?
if [ "$rc" = 65 ]; then ok "fence_actuator refuses token 6 after 7 (exit 65)"; else bad "token 6 after 7: exit $rc"; fi
check_run "find_package(edgelock CONFIG) build of the examples" sh -c \
  "cmake -S '$src/examples' -B '$work/cm' && cmake --build '$work/cm'"

# 5. Purge: nothing of either package stays, the conffile included.
if DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq edgelock libelk-dev >"$work/apt.log" 2>&1; then
  installed=0; ok "apt-get purge"
else
  cat "$work/apt.log"; bad "apt-get purge"
fi
for f in /usr/bin/elkd /usr/bin/elk /etc/elkd/elkd.conf /lib/systemd/system/elkd.service /usr/include/elk/lock.h; do
  [ ! -e "$f" ] || bad "$f still there after purge"
done
[ -d /etc/elkd ] && bad "/etc/elkd still there after purge"
echo "deb-test: $(( $(date +%s) - t0 )) s, $fails failure(s)"
[ "$fails" -eq 0 ]
