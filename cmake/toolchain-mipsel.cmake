# SPDX-License-Identifier: MIT
# 32-bit little-endian MIPS (OpenWrt ramips: MT7621, MT7628).
# Debian 12: apt-get install gcc-mipsel-linux-gnu libc6-dev-mipsel-cross qemu-user; cmocka and mbedTLS
# from scripts/cross-deps.sh mipsel mipsel-linux-gnu-gcc. Usage:
#   cmake -S . -B build-mipsel -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-mipsel.cmake
# (scripts/cross-test.sh mipsel does it all and runs the unit tests under qemu-mipsel.)
set(ELK_CROSS_NAME mipsel)
set(ELK_CROSS_TRIPLET mipsel-linux-gnu)
set(ELK_CROSS_PROCESSOR mipsel)
set(ELK_CROSS_QEMU qemu-mipsel)
include(${CMAKE_CURRENT_LIST_DIR}/ElkCrossLinux.cmake)
