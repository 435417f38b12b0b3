#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the libraries edgelock's cross and musl builds need, cmocka, mbedTLS and hiredis,
# from Debian 12's own source packages (apt-get source, from the mirror apt already uses;
# nothing downloaded from anywhere else) with a given C compiler, as static libraries,
# into a prefix kept OUTSIDE the clone and reused while its stamp matches:
#   /var/cache/edgelock/deps/NAME/{include,lib}
# Why not multiarch: mips (big-endian) is no Debian 12 architecture, and musl has no
# Debian libraries at all; one recipe serves every target.
# Usage: scripts/cross-deps.sh NAME CC [CFLAGS]    prints the prefix on its last line
#   e.g. scripts/cross-deps.sh mips mips-linux-gnu-gcc
#        scripts/cross-deps.sh musl-x86_64 musl-gcc
# Needs root for the cache directory; dpkg-dev for apt-get source.
set -euo pipefail
name=$1 cc=$2 cflags=${3:-}
cache=${ELK_DEPS_CACHE:-/var/cache/edgelock}
src=$cache/src
prefix=$cache/deps/$name
jobs=${JOBS:-$(nproc)}
say() { echo "cross-deps[$name]: $*" >&2; }

mkdir -p "$cache/deps"
exec 8>"$cache/deps.lock"
flock 8   # one builder at a time (sources and prefixes are shared)

# ---------------------------------------------------------------- sources
# A private apt configuration with only deb-src for bookworm: the system's sources are
# left alone. The mirror is the first Debian (not security) archive apt is set up with.
apt_src() {
  local mirror
  mirror=$({ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
           grep -oE 'https?://[^ ]+/debian/?( |$)' | { grep -v security || true; } | head -1 | tr -d ' ')
  mirror=${mirror:-http://deb.debian.org/debian}
  command -v dpkg-source >/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dpkg-dev >/dev/null
  mkdir -p "$src/lists/partial"
  echo "deb-src $mirror bookworm main" >"$src/sources.list"
  apt=(apt-get -q -o Dir::Etc::SourceList="$src/sources.list" -o Dir::Etc::SourceParts=/dev/null
       -o Dir::State::Lists="$src/lists" -o APT::Sandbox::User=root)
  if [ ! -f "$src/.updated" ]; then
    "${apt[@]}" update >"$src/apt.log" 2>&1 || { cat "$src/apt.log"; return 1; }
    touch "$src/.updated"
  fi
}
source_dir() { # package: prints its unpacked source directory, fetching it once
  local d
  d=$(find "$src" -maxdepth 1 -type d -name "$1-[0-9]*" | head -1)
  if [ -z "$d" ] || [ ! -f "$d/.complete" ]; then
    [ -z "$d" ] || rm -rf "$d"
    apt_src
    say "apt-get source $1 (deb-src bookworm)"
    (cd "$src" && "${apt[@]}" source "$1" >>"$src/apt.log" 2>&1) || { tail -20 "$src/apt.log" >&2; return 1; }
    d=$(find "$src" -maxdepth 1 -type d -name "$1-[0-9]*" | head -1)
    touch "$d/.complete"
  fi
  echo "$d"
}
mkdir -p "$src"
mbedtls_dir=$(source_dir mbedtls)
cmocka_dir=$(source_dir cmocka)
hiredis_dir=$(source_dir hiredis)

# ---------------------------------------------------------------- build
# One stamp per library: source version, compiler, flags.
cc_id="cc=$("$cc" -dumpmachine) $("$cc" -dumpversion) cflags=$cflags"
common=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="-O2 $cflags"
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib)
build_lib() { # name source-dir cmake-args...
  local lib=$1 dir=$2; shift 2
  local stamp="$(basename "$dir") $cc_id"
  if [ -f "$prefix/.stamp-$lib" ] && [ "$(cat "$prefix/.stamp-$lib")" = "$stamp" ]; then
    return 0
  fi
  local t=$SECONDS b="$cache/deps/$name.build-$lib"
  rm -rf "$b"
  say "building $(basename "$dir") with $cc"
  { cmake -S "$dir" -B "$b" "${common[@]}" "$@" && nice -n 10 cmake --build "$b" -j"$jobs" &&
    cmake --install "$b"; } >"$b.log" 2>&1 || { tail -30 "$b.log" >&2; say "FAILED (log: $b.log)"; exit 1; }
  # Only static libraries may be found (the programs are linked statically).
  rm -f "$prefix"/lib/*.so*
  rm -rf "$b" "$b.log"
  echo "$stamp" >"$prefix/.stamp-$lib"
  say "$lib built in $((SECONDS - t)) s"
}
mkdir -p "$prefix"
[ ! -f "$prefix/.stamp" ] || mv "$prefix/.stamp" "$prefix/.stamp-cmocka-mbedtls.old"
build_lib cmocka "$cmocka_dir" -DWITH_STATIC_LIB=ON -DBUILD_SHARED_LIBS=OFF -DUNIT_TESTING=OFF -DWITH_EXAMPLES=OFF
build_lib mbedtls "$mbedtls_dir" -DENABLE_TESTING=OFF -DENABLE_PROGRAMS=OFF -DUSE_SHARED_MBEDTLS_LIBRARY=OFF \
  -DUSE_STATIC_MBEDTLS_LIBRARY=ON -DMBEDTLS_FATAL_WARNINGS=OFF
# hiredis (0.14 in Debian 12: a plain Makefile): only because tests/diff and tests/bench
# refuse to configure without it.
build_hiredis() {
  local stamp="$(basename "$hiredis_dir") $cc_id" b="$cache/deps/$name.build-hiredis" ar=ar
  if [ -f "$prefix/.stamp-hiredis" ] && [ "$(cat "$prefix/.stamp-hiredis")" = "$stamp" ]; then
    return 0
  fi
  command -v "${cc%gcc}ar" >/dev/null && ar=${cc%gcc}ar
  rm -rf "$b"; cp -a "$hiredis_dir" "$b"
  make -C "$b" CC="$cc" AR="$ar rcs" OPTIMIZATION="-O2 $cflags" libhiredis.a >"$b.log" 2>&1 ||
    { tail -20 "$b.log" >&2; say "FAILED (log: $b.log)"; exit 1; }
  mkdir -p "$prefix/include/hiredis/adapters" "$prefix/lib"
  cp "$b"/*.h "$prefix/include/hiredis/"
  cp "$b"/adapters/*.h "$prefix/include/hiredis/adapters/"
  cp "$b/libhiredis.a" "$prefix/lib/"
  rm -rf "$b" "$b.log"
  echo "$stamp" >"$prefix/.stamp-hiredis"
}
build_hiredis
# cmocka 1.1.5 names its static library libcmocka-static.a; find_library looks for cmocka.
[ ! -f "$prefix/lib/libcmocka-static.a" ] || cp -f "$prefix/lib/libcmocka-static.a" "$prefix/lib/libcmocka.a"
say "ready: $prefix"
echo "$prefix"
