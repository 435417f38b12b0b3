# SPDX-License-Identifier: MIT
# Cross build for 32-bit ARM Linux gateways (ARMv7-A, hard float: Debian "armhf") with
# Debian's cross compiler and Debian's own armhf libraries installed through multiarch:
#   dpkg --add-architecture armhf && apt-get update
#   apt-get install --no-install-recommends gcc-arm-linux-gnueabihf libc6-dev-armhf-cross \
#       qemu-user libmbedtls-dev:armhf libcmocka-dev:armhf libhiredis-dev:armhf
#   cmake -S . -B build-armhf -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake
# ctest runs every target program through qemu-arm (CMAKE_CROSSCOMPILING_EMULATOR).
# scripts/armhf-test.sh does all of the above and runs the unit tests; see
# docs/cross-compile.md (MIPS gateways: the same recipe with mipsel-linux-gnu).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(ELK_CROSS_TRIPLET arm-linux-gnueabihf)
set(CMAKE_C_COMPILER ${ELK_CROSS_TRIPLET}-gcc)
# Flash on a gateway is small: drop unused functions and data at link time
# (elk: 33 KB of code without, 23 KB with; docs/cross-compile.md has the figures).
set(CMAKE_C_FLAGS_INIT "-ffunction-sections -fdata-sections")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,--gc-sections")
# Debian's multiarch directory names (/usr/lib/arm-linux-gnueabihf); CMake would guess it
# from the compiler too, but a wrong guess silently finds no armhf library at all.
set(CMAKE_LIBRARY_ARCHITECTURE ${ELK_CROSS_TRIPLET})

# Libraries only from the cross libc (/usr/arm-linux-gnueabihf, package
# libc6-dev-armhf-cross) and from armhf packages (/usr/lib/arm-linux-gnueabihf), never
# the host's /usr/lib/x86_64-linux-gnu. Headers may come from /usr/include as well:
# multiarch -dev packages ("Multi-Arch: same") install identical headers there for every
# architecture. Programs (python3 for Kconfig, redis-server, openssl) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/${ELK_CROSS_TRIPLET} /usr/lib/${ELK_CROSS_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# qemu-arm (Debian qemu-user) or qemu-arm-static (qemu-user-static). -L makes the
# dynamic loader of the cross toolchain's libc (libc6-armhf-cross) the guest's. That
# loader would still take libc.so.6 from the host's ld.so.cache, i.e. multiarch
# libc6:armhf (pulled in by the armhf -dev packages, another glibc build than the
# loader's); LD_LIBRARY_PATH keeps loader and libc one build. cmocka and mbedtls,
# which the cross libc does not ship, still come from /usr/lib/arm-linux-gnueabihf.
find_program(ELK_QEMU_ARM NAMES qemu-arm qemu-arm-static)
if(NOT ELK_QEMU_ARM)
  # Still configures and builds; ctest then says qemu-arm is missing.
  set(ELK_QEMU_ARM qemu-arm)
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${ELK_QEMU_ARM} -L /usr/${ELK_CROSS_TRIPLET}
    -E LD_LIBRARY_PATH=/usr/${ELK_CROSS_TRIPLET}/lib)

# A gateway runs the posix port (and mbedtls for TLS). lwip is for Cortex-M
# (cmake/toolchain-arm-none-eabi.cmake); add sim with -DELK_PORTS="posix;mbedtls;sim"
# to cross-build the simulator too.
if(NOT DEFINED ELK_PORTS)
  set(ELK_PORTS posix mbedtls)
endif()
