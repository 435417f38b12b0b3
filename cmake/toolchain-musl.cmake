# SPDX-License-Identifier: MIT
# Static musl build for the build machine's own architecture (what OpenWrt links against),
# with Debian 12's musl-tools (musl-gcc) and cmocka, mbedTLS and hiredis built from Debian's
# source packages with musl-gcc (scripts/cross-deps.sh musl-x86_64 musl-gcc). Usage:
#   cmake -S . -B build-musl -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-musl.cmake
# scripts/musl-build.sh does it all and runs the agent end-to-end tests against the
# static elkd and elk. Not a cross build: the programs run here, tests included.
set(CMAKE_C_COMPILER musl-gcc)
set(CMAKE_C_FLAGS_INIT "-ffunction-sections -fdata-sections")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static -Wl,--gc-sections")
if(NOT ELK_MUSL_DEPS)
  if(DEFINED ENV{ELK_MUSL_DEPS})
    set(ELK_MUSL_DEPS $ENV{ELK_MUSL_DEPS})
  else()
    set(ELK_MUSL_DEPS /var/cache/edgelock/deps/musl-${CMAKE_HOST_SYSTEM_PROCESSOR})
  endif()
endif()
set(ELK_MUSL_DEPS ${ELK_MUSL_DEPS} CACHE PATH "prefix with cmocka, mbedTLS and hiredis built with musl-gcc")
# Libraries and headers from the musl prefix only (never glibc's /usr/lib, /usr/include);
# programs (python3, redis-server, openssl) are the host's.
set(CMAKE_FIND_ROOT_PATH ${ELK_MUSL_DEPS} /usr/lib/musl)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
if(NOT DEFINED ELK_PORTS)
  set(ELK_PORTS posix mbedtls)
endif()
