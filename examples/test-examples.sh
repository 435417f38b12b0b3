#!/bin/bash
# SPDX-License-Identifier: MIT
# The examples as a third party builds them: install this build into a temporary root
# (DESTDIR), build both examples out of tree once through pkg-config and once through
# find_package(edgelock CONFIG), and run each against three TLS redis-servers (Redlock)
# on 127.0.0.1 ephemeral ports, then the actuator side with the tokens they were given.
# Usage: test-examples.sh BUILD_DIR SOURCE_DIR
set -u
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
. "$src/tests/agent/lib.sh"

cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
prefix=$(cache CMAKE_INSTALL_PREFIX)
libdir=$(cache CMAKE_INSTALL_LIBDIR)
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
root=$ELK_T_DIR/root
DESTDIR=$root cmake --install "$build" >"$ELK_T_DIR/install.log" 2>&1 ||
  { cat "$ELK_T_DIR/install.log"; echo "FAIL: cmake --install"; exit 1; }
# A shared libelk is found through the install tree (a static one needs nothing).
export LD_LIBRARY_PATH=$root$libdir

# 1. pkg-config, with the sysroot the DESTDIR install calls for.
pc() {
  PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root$libdir/pkgconfig pkg-config "$@"
}
mkdir -p "$ELK_T_DIR/pc"
for ex in "lease_tls:edgelock-posix edgelock-mbedtls" "fence_actuator:edgelock-posix" "agent_lease:edgelock-posix"; do
  name=${ex%%:*} mods=${ex#*:}
  # shellcheck disable=SC2046,SC2086
  if cc -std=c11 -Wall -Wextra -Werror $(pc --cflags $mods) -o "$ELK_T_DIR/pc/$name" \
       "$src/examples/$name.c" $(pc --libs $mods) 2>"$ELK_T_DIR/pc-$name.log"; then
    ok "pkg-config build of $name ($(pc --libs $mods | tr -s ' '))"
  else
    cat "$ELK_T_DIR/pc-$name.log"; bad "pkg-config build of $name"
  fi
done

# 2. find_package(edgelock CONFIG), pointed at exactly this install.
if cmake -S "$src/examples" -B "$ELK_T_DIR/cm" -Dedgelock_DIR="$root$libdir/cmake/edgelock" \
     >"$ELK_T_DIR/cm.log" 2>&1 && cmake --build "$ELK_T_DIR/cm" >>"$ELK_T_DIR/cm.log" 2>&1; then
  ok "find_package build of the examples"
else
  cat "$ELK_T_DIR/cm.log"; bad "find_package build"
fi
if [ "$SUP_FAILS" -ne 0 ]; then finish; fi

# 3. Run them: three TLS masters, a lease each way, then the actuator with the tokens.
gen_certs
start_redis_tls a; start_redis_tls b; start_redis_tls c
# shellcheck disable=SC2154 # REDIS_PORT_x, REDIS_SOCK_x: set by start_redis_tls (eval)
nodes="127.0.0.1:$REDIS_PORT_a 127.0.0.1:$REDIS_PORT_b 127.0.0.1:$REDIS_PORT_c"
tokens=""
for variant in pc cm; do
  # shellcheck disable=SC2086
  out=$("$ELK_T_DIR/$variant/lease_tls" "$ELK_T_DIR/ca.pem" valve $nodes 2>&1)
  rc=$?
  check "$variant/lease_tls exits 0" 0 "$rc"
  check_contains "$variant/lease_tls drove every step" "step 5: valve moves" "$out"
  check_contains "$variant/lease_tls released" "released valve (ELK_OK)" "$out"
  token=$(printf '%s\n' "$out" | sed -n 's/^held valve token=\([0-9]*\)$/\1/p')
  if [ -n "$token" ]; then ok "$variant/lease_tls got token $token"; else bad "$variant: no token in: $out"; fi
  tokens="$tokens $token"
  for s in a b c; do
    eval "sock=\$REDIS_SOCK_$s"
    # shellcheck disable=SC2154
    check "key gone from node $s after release" 0 "$(redis-cli -s "$sock" exists 'example:{valve}')"
  done
done
read -r t1 t2 <<<"$tokens"
if [ -n "$t1" ] && [ -n "$t2" ] && [ "$t2" -gt "$t1" ]; then ok "tokens grow ($t1 < $t2)"; else bad "tokens '$t1' '$t2'"; fi
state=$ELK_T_DIR/valve.state
for step in "pc $t1 0" "cm $t2 0" "pc $t1 65" "cm $t2 0"; do
  read -r variant tok want <<<"$step"
  out=$("$ELK_T_DIR/$variant/fence_actuator" "$state" "$tok" 2>&1); rc=$?
  check "$variant/fence_actuator token $tok -> exit $want ($out)" "$want" "$rc"
done
finish
