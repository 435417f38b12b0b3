#!/bin/bash
# SPDX-License-Identifier: MIT
# The Debian packages, end to end: build edgelock, libelk0, libelk-dev and python3-edgelock
# with `dpkg-buildpackage -b -us -uc` from a copy of the source (the checkout stays clean),
# run lintian (errors and warnings fail; the README lists what remains and why), install
# them with apt-get, check the installed programs, unit, accounts, runtime directory, man
# pages, completions, conffile, shared library and API reference, run `elkd --check` on a
# config made from the installed sample, build the examples against the installed
# libelk-dev (pkg-config and find_package) and run the actuator one, run the autopkgtest
# (debian/tests/lease: elkd against a redis-server, leases through elk, Python and C),
# then purge them all and check nothing is left.
# Exit: 0 pass, 77 cannot run here (reason printed), anything else fail.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
src=$PWD

skip() { echo "deb-test: SKIP: $*"; exit 77; }
for t in dpkg-buildpackage dh lintian apt-get cmake pkg-config; do
  command -v "$t" >/dev/null || skip "$t not installed (scripts/install-deps.sh installs it)"
done
[ "$(id -u)" = 0 ] || skip "installing packages needs root"
pkgs="edgelock libelk0 libelk-dev python3-edgelock"
for p in $pkgs; do
  if dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^i'; then
    skip "$p is already installed on this machine: not replacing it"
  fi
done

version=$(sed -n 's/^project(edgelock VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
work=$(mktemp -d /tmp/elk-deb.XXXXXX)
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $pkgs >/dev/null 2>&1
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
debs=$(ls "$work"/edgelock_*.deb "$work"/libelk0_*.deb "$work"/libelk-dev_*.deb "$work"/python3-edgelock_*.deb)
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
installed=1 # from here on, the cleanup purges whatever got installed
if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $debs >"$work/apt.log" 2>&1; then
  ok "apt-get install ./edgelock ./libelk0 ./libelk-dev ./python3-edgelock ($(( $(date +%s) - t_apt )) s)"
else
  cat "$work/apt.log"; bad "apt-get install"; exit 1
fi
check_run() { # description command...
  local d=$1; shift
  if "$@" >"$work/out" 2>&1; then ok "$d"; else cat "$work/out"; bad "$d"; fi
}
check_run "/usr/bin/elk --help" /usr/bin/elk --help
check_run "/usr/sbin/elkd --version is $version" sh -c "test \"\$(/usr/sbin/elkd --version)\" = 'elkd $version'"
check_run "no elkd in /usr/bin" test ! -e /usr/bin/elkd
check_run "unit starts /usr/sbin/elkd -c /etc/elkd/elkd.conf" \
  grep -q '^ExecStart=/usr/sbin/elkd -c /etc/elkd/elkd.conf ' /lib/systemd/system/elkd.service
check_run "accounts from sysusers.d: /usr/lib/sysusers.d/edgelock.conf" test -f /usr/lib/sysusers.d/edgelock.conf
check_run "/run/elkd made from tmpfiles.d (elkd:elkd 0755)" \
  sh -c "test -f /usr/lib/tmpfiles.d/edgelock.conf && test \"\$(stat -c '%U:%G %a' /run/elkd)\" = 'elkd:elkd 755'"
check_run "/var/lib/elkd (the event record's) made from tmpfiles.d (elkd:elkd 0750)" \
  sh -c "test \"\$(stat -c '%U:%G %a' /var/lib/elkd)\" = 'elkd:elkd 750'"
check_run "bash completion for elk and elkd" \
  test -f /usr/share/bash-completion/completions/elk -a -f /usr/share/bash-completion/completions/elkd
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
check_run "libelk0: libelk.so.0 with SONAME libelk.so.0" \
  sh -c "objdump -p /usr/lib/$multiarch/libelk.so.0 | grep -q 'SONAME *libelk.so.0\$' && dpkg -S /usr/lib/$multiarch/libelk.so.0 | grep -q '^libelk0:'"
check_run "libelk0 ships its symbols file" sh -c "test -s \"\$(dpkg-query --control-path libelk0 symbols)\""
check_run "libelk.so.0 exports exactly the public headers' functions" \
  python3 scripts/check-exports.py --source . --include lib/include --include /usr/include/elk \
    --so "/usr/lib/$multiarch/libelk.so.0"
check_run "libelk-dev: static libelk.a and the libelk.so link" \
  test -f "/usr/lib/$multiarch/libelk.a" -a -L "/usr/lib/$multiarch/libelk.so"
check_run "libelk-dev: API reference (elk_lock_acquire in the HTML)" \
  sh -c "grep -rqs elk_lock_acquire /usr/share/doc/libelk-dev/html && test -f /usr/share/doc/libelk-dev/html/index.html"
check_run "libelk-dev: examples and their README" \
  test -f /usr/share/doc/libelk-dev/examples/README.md -a -f /usr/share/doc/libelk-dev/examples/agent_lease.c
check_run "python3-edgelock: import edgelock (the system python3)" /usr/bin/python3 -c "import edgelock, sys; sys.exit(not edgelock.__file__.startswith('/usr/lib/python3/dist-packages/'))"
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
check_run "elkd -c <sample-derived config> --check" /usr/sbin/elkd -c "$work/elkd.conf" --check
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
check_run "fence_actuator links the shared libelk.so.0" sh -c "objdump -p '$work/ex/fence_actuator' | grep -q 'NEEDED *libelk.so.0'"
check_run "fence_actuator accepts token 7" "$work/ex/fence_actuator" "$work/valve.state" 7
"$work/ex/fence_actuator" "$work/valve.state" 6 >/dev/null 2>&1
rc=$?
if [ "$rc" = 65 ]; then ok "fence_actuator refuses token 6 after 7 (exit 65)"; else bad "token 6 after 7: exit $rc"; fi
check_run "find_package(edgelock CONFIG) build of the examples" sh -c \
  "cmake -S '$src/examples' -B '$work/cm' && cmake --build '$work/cm'"

# 5. The autopkgtest, by script: elkd against a redis-server, leases through elk, Python, C.
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
  t_at=$(date +%s)
  if AUTOPKGTEST_TMP=$work/autopkgtest sh -c 'mkdir -p "$AUTOPKGTEST_TMP" && exec sh debian/tests/lease' \
       >"$work/autopkgtest.log" 2>&1; then
    ok "debian/tests/lease ($(( $(date +%s) - t_at )) s)"
  else
    cat "$work/autopkgtest.log"; bad "debian/tests/lease"
  fi
else
  bad "redis-server/redis-cli missing: the autopkgtest cannot run (scripts/install-deps.sh)"
fi

# 6. Purge: nothing of the packages stays, the conffile included.
# shellcheck disable=SC2086
if DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $pkgs >"$work/apt.log" 2>&1; then
  installed=0; ok "apt-get purge"
else
  cat "$work/apt.log"; bad "apt-get purge"
fi
for f in /usr/sbin/elkd /usr/bin/elk /etc/elkd/elkd.conf /lib/systemd/system/elkd.service /usr/include/elk/lock.h \
         "/usr/lib/$multiarch/libelk.so.0" /usr/share/doc/libelk-dev /usr/lib/python3/dist-packages/edgelock \
         /usr/lib/sysusers.d/edgelock.conf /usr/lib/tmpfiles.d/edgelock.conf /run/elkd /var/lib/elkd \
         /usr/share/bash-completion/completions/elk /usr/share/bash-completion/completions/elkd; do
  [ ! -e "$f" ] || bad "$f still there after purge"
done
[ -d /etc/elkd ] && bad "/etc/elkd still there after purge"
echo "deb-test: $(( $(date +%s) - t0 )) s, $fails failure(s)"
[ "$fails" -eq 0 ]
