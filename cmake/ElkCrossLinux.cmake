# SPDX-License-Identifier: MIT
# Shared part of the Linux cross toolchain files (toolchain-mips, -mipsel, -aarch64,
# -s390x.cmake). The including file sets ELK_CROSS_TRIPLET, ELK_CROSS_PROCESSOR and
# ELK_CROSS_QEMU before including this.
#   - compiler: Debian 12's gcc-<triplet> (apt-get install gcc-mips-linux-gnu ...);
#   - cmocka and mbedTLS: static libraries built from Debian's source packages by
#     scripts/cross-deps.sh into ELK_CROSS_DEPS (default /var/cache/edgelock/deps/<name>);
#   - programs are linked statically, so qemu-user runs them without a guest sysroot and
#     ctest runs every test program through it (CMAKE_CROSSCOMPILING_EMULATOR).
# scripts/cross-test.sh does all of this; docs/cross-compile.md explains it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${ELK_CROSS_PROCESSOR})
set(CMAKE_C_COMPILER ${ELK_CROSS_TRIPLET}-gcc)
# Flash is small on a gateway: drop unused functions and data at link time.
set(CMAKE_C_FLAGS_INIT "-ffunction-sections -fdata-sections")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static -Wl,--gc-sections")

if(NOT ELK_CROSS_DEPS)
  if(DEFINED ENV{ELK_CROSS_DEPS})
    set(ELK_CROSS_DEPS $ENV{ELK_CROSS_DEPS})
  else()
    set(ELK_CROSS_DEPS /var/cache/edgelock/deps/${ELK_CROSS_NAME})
  endif()
endif()
set(ELK_CROSS_DEPS ${ELK_CROSS_DEPS} CACHE PATH "prefix with cmocka and mbedTLS for this target")
# Libraries only from the cross libc and the deps prefix, never the host's; headers from
# the deps prefix first (its mbedTLS, not the host's /usr/include/mbedtls).
set(CMAKE_FIND_ROOT_PATH ${ELK_CROSS_DEPS} /usr/${ELK_CROSS_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

find_program(ELK_CROSS_QEMU_PROGRAM NAMES ${ELK_CROSS_QEMU} ${ELK_CROSS_QEMU}-static)
if(NOT ELK_CROSS_QEMU_PROGRAM)
  set(ELK_CROSS_QEMU_PROGRAM ${ELK_CROSS_QEMU}) # ctest then says it is missing
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${ELK_CROSS_QEMU_PROGRAM})

if(NOT DEFINED ELK_PORTS)
  set(ELK_PORTS posix mbedtls)
endif()
