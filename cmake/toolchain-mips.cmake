# SPDX-License-Identifier: MIT
# 32-bit big-endian MIPS (OpenWrt ath79: MIPS 24Kc and 74Kc).
# Debian 12: apt-get install gcc-mips-linux-gnu libc6-dev-mips-cross qemu-user; cmocka and mbedTLS
# from scripts/cross-deps.sh mips mips-linux-gnu-gcc. Usage:
#   cmake -S . -B build-mips -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-mips.cmake
# (scripts/cross-test.sh mips does it all and runs the unit tests under qemu-mips.)
set(ELK_CROSS_NAME mips)
set(ELK_CROSS_TRIPLET mips-linux-gnu)
set(ELK_CROSS_PROCESSOR mips)
set(ELK_CROSS_QEMU qemu-mips)
include(${CMAKE_CURRENT_LIST_DIR}/ElkCrossLinux.cmake)
