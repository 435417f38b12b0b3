# SPDX-License-Identifier: MIT
# 64-bit BIG-endian (s390x): no gateway, but the one 64-bit big-endian target Debian has, so the RESP decoder's 64-bit fast path runs big-endian here.
# Debian 12: apt-get install gcc-s390x-linux-gnu libc6-dev-s390x-cross qemu-user; cmocka and mbedTLS
# from scripts/cross-deps.sh s390x s390x-linux-gnu-gcc. Usage:
#   cmake -S . -B build-s390x -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-s390x.cmake
# (scripts/cross-test.sh s390x does it all and runs the unit tests under qemu-s390x.)
set(ELK_CROSS_NAME s390x)
set(ELK_CROSS_TRIPLET s390x-linux-gnu)
set(ELK_CROSS_PROCESSOR s390x)
set(ELK_CROSS_QEMU qemu-s390x)
include(${CMAKE_CURRENT_LIST_DIR}/ElkCrossLinux.cmake)
