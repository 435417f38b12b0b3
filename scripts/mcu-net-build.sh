#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the network image of docs/mcu.md ("A lease from a microcontroller"):
# lib/ + port/lwip + port/mbedtls + lwIP + mbedTLS + the LAN9118 netif + the lease
# program (tests/mcu/net), for QEMU's mps2-an386 (Cortex-M4), no heap.
# lwIP and mbedTLS come from Debian 12's source packages (apt-get source, deb-src of
# the mirror apt already uses, the way scripts/cross-deps.sh gets its sources), cached
# in /var/cache/edgelock/src; their objects are cached under OUT and rebuilt only when
# a source or the configuration changes.
# Usage: scripts/mcu-net-build.sh --config DOT_CONFIG --out DIR
#   prints the image's sizes; the ELF is DIR/lease_mcu.elf, its map DIR/lease_mcu.map.
# Exit: 0 built, 1 failed, 77 when the ARM toolchain is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build-mcu-net
dot_config=""
while [ $# -gt 0 ]; do
  case $1 in
    --config) dot_config=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 --config DOT_CONFIG [--out DIR]" >&2; exit 1 ;;
  esac
done
cc=arm-none-eabi-gcc
command -v "$cc" >/dev/null || { echo "SKIP: $cc not found (scripts/install-deps.sh)"; exit 77; }
jobs=${JOBS:-2}
arch=(-mcpu=cortex-m4 -mthumb -Os -ffunction-sections -fdata-sections -g)
net=$root/tests/mcu/net
mkdir -p "$out"

# ------------------------------------------------------------------ sources
cache=${ELK_DEPS_CACHE:-/var/cache/edgelock}
src=$cache/src
source_dir() { # package: its unpacked Debian source directory, fetched once
  local d mirror
  d=$(find "$src" -maxdepth 1 -type d -name "$1-[0-9]*" 2>/dev/null | head -1)
  if [ -n "$d" ] && [ -f "$d/.complete" ]; then echo "$d"; return 0; fi
  [ -z "$d" ] || rm -rf "$d"
  mirror=$({ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
           grep -oE 'https?://[^ ]+/debian/?( |$)' | { grep -v security || true; } | head -1 | tr -d ' ')
  mirror=${mirror:-http://deb.debian.org/debian}
  command -v dpkg-source >/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dpkg-dev >/dev/null
  mkdir -p "$src/lists/partial"
  echo "deb-src $mirror bookworm main" >"$src/sources.list"
  local apt=(apt-get -q -o Dir::Etc::SourceList="$src/sources.list" -o Dir::Etc::SourceParts=/dev/null
             -o Dir::State::Lists="$src/lists" -o APT::Sandbox::User=root)
  if [ ! -f "$src/.updated" ]; then
    "${apt[@]}" update >"$src/apt.log" 2>&1 || { cat "$src/apt.log" >&2; return 1; }
    touch "$src/.updated"
  fi
  echo "mcu-net-build: apt-get source $1 (deb-src bookworm)" >&2
  (cd "$src" && "${apt[@]}" source "$1" >>"$src/apt.log" 2>&1) || { tail -20 "$src/apt.log" >&2; return 1; }
  d=$(find "$src" -maxdepth 1 -type d -name "$1-[0-9]*" | head -1)
  touch "$d/.complete"
  echo "$d"
}
have_sources() { local p; for p in lwip mbedtls; do
  find "$src" -maxdepth 2 -path "$src/$p-[0-9]*/.complete" 2>/dev/null | grep -q . || return 1; done; }
mkdir -p "$cache"
if ! have_sources; then
  exec 8>"$cache/deps.lock"
  flock 8 # one fetcher at a time (shared with scripts/cross-deps.sh)
fi
lwip=$(source_dir lwip)
mbedtls=$(source_dir mbedtls)
exec 8>&- 2>/dev/null || true

# ------------------------------------------------------------ compilation
# compile_all NAME CFLAGS-ARRAY-NAME SOURCES...: objects into $out/NAME, then
# $out/libNAME.a. An object is rebuilt when its source, the flags or a header in
# the listed include folders changed (make, with a generated rule file).
compile_all() {
  local name=$1 flags_var=$2; shift 2
  local -n flags=$flags_var
  local dir=$out/obj/$name mk
  mkdir -p "$dir"
  mk=$dir/Makefile
  {
    echo "CC := $cc"
    printf 'CFLAGS := %s\n' "${flags[*]}"
    echo "OBJS :="
    local s o
    for s in "$@"; do
      o=$dir/$(echo "${s#"$root"/}" | tr '/+' '__' | sed 's/\.c$/.o/')
      echo "OBJS += $o"
      printf '%s: %s %s\n\t$(CC) $(CFLAGS) -MD -c $< -o $@\n' "$o" "$s" "$mk"
    done
    printf '%s: $(OBJS)\n\trm -f $@ && arm-none-eabi-ar rcs $@ $(OBJS)\n' "$out/lib$name.a"
    echo '-include $(OBJS:.o=.d)'
  } >"$mk.new"
  cmp -s "$mk.new" "$mk" || mv "$mk.new" "$mk"
  rm -f "$mk.new"
  nice -n 10 make -s -j"$jobs" -f "$mk" "$out/lib$name.a" >"$dir.log" 2>&1 ||
    { echo "FAIL: building $name:"; tail -40 "$dir.log"; return 1; }
}

# lib/ for the M4 with the host build's Kconfig (as scripts/mcu-test.sh does).
xlib=$out/xlib
mkdir -p "$xlib"
if [ -n "$dot_config" ]; then
  cmp -s "$dot_config" "$xlib/.config" || cp "$dot_config" "$xlib/.config"
fi
cmake -S "$root" -B "$xlib" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-cortex-m4-qemu.cmake" \
  -DCMAKE_BUILD_TYPE= >"$out/xlib.configure.log" 2>&1 || { cat "$out/xlib.configure.log"; exit 1; }
nice -n 10 cmake --build "$xlib" -j"$jobs" --target elk >"$out/xlib.build.log" 2>&1 ||
  { tail -40 "$out/xlib.build.log"; exit 1; }

lwip_inc=(-I"$net" -isystem "$lwip/src/include")
# (quoted for the shell that make runs the compiler in)
mbed_inc=(-I"$net" -isystem "$mbedtls/include" "-DMBEDTLS_CONFIG_FILE='\"mbedtls_config_mcu.h\"'")
elk_inc=(-I"$root/lib/include" -I"$xlib/generated" -I"$root/port/lwip/include"
         -I"$root/port/socket/include" -I"$root/port/mbedtls/include")

# lwIP itself (its own code, its own warnings: not held to -Werror).
lwip_flags=("${arch[@]}" -std=gnu11 -w "${lwip_inc[@]}")
compile_all lwip lwip_flags "$lwip"/src/core/*.c "$lwip"/src/core/ipv4/*.c "$lwip"/src/api/*.c \
  "$lwip/src/netif/ethernet.c"

# mbedTLS (its library/ folder; what the configuration leaves out compiles to nothing).
mbed_flags=("${arch[@]}" -std=gnu11 -w "${mbed_inc[@]}")
compile_all mbedtls mbed_flags "$mbedtls"/library/*.c

# The ports, as strict as in the host build (-std=c99 -pedantic -Werror).
port_flags=("${arch[@]}" -std=c99 -Wall -Wextra -Werror -pedantic "${elk_inc[@]}" -I"$root/port/lwip/src"
            -I"$root/port/socket/src" "${lwip_inc[@]}" "${mbed_inc[@]}")
compile_all port_lwip port_flags "$root"/port/lwip/src/{transport,wait,clock,entropy}.c \
  "$root/port/socket/src/socket_transport.c"
# mbedTLS without MBEDTLS_FS_IO does not declare the file loaders port/mbedtls names.
mbed_port_flags=("${port_flags[@]}" -include "$net/mbedtls_nofs.h")
compile_all port_mbedtls mbed_port_flags "$root"/port/mbedtls/src/*.c

# The board: the LAN9118 netif, the cooperative sys_arch, the timer, semihosting files.
drv_flags=("${arch[@]}" -std=c11 -Wall -Wextra -Werror "${elk_inc[@]}" -I"$root/tests/mcu" "${lwip_inc[@]}"
           "${mbed_inc[@]}")
compile_all driver drv_flags "$net"/{lan9118,sys_arch,net,board}.c

# The program and the MCU runtime of tests/mcu (startup, semihosting, stdio).
app_flags=("${drv_flags[@]}" -DMCU_TLS=1)
compile_all app app_flags "$net"/{lease_mcu,sh_file,mbedtls_mcu}.c "$root"/tests/mcu/{startup,semihost,mcu_stdio}.c

elf=$out/lease_mcu.elf
"$cc" "${arch[@]}" -Wl,--whole-archive "$out/libapp.a" -Wl,--no-whole-archive \
  "$out/libport_mbedtls.a" "$out/libport_lwip.a" "$xlib/lib/libelk.a" "$out/libdriver.a" \
  "$out/liblwip.a" "$out/libmbedtls.a" "$out/libdriver.a" \
  --specs=nano.specs -nostartfiles -T "$root/tests/mcu/mps2_an386.ld" -Wl,--gc-sections \
  -Wl,--defsym=STACK_SIZE=32768 \
  -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,--wrap=_malloc_r,--wrap=_free_r \
  -Wl,-Map,"${elf%.elf}.map" -o "$elf"
if arm-none-eabi-nm "$elf" | awk '{print $NF}' | grep -qE '^(malloc|calloc|free|_malloc_r|_sbrk|_sbrk_r)$'; then
  echo "FAIL: $elf links a heap"; exit 1
fi
python3 "$net/size_by_part.py" "${elf%.elf}.map" >"$out/size_by_part.md"
cat "$out/size_by_part.md"
arm-none-eabi-size "$elf"
