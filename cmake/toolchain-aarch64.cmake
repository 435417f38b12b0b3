# SPDX-License-Identifier: MIT
# 64-bit ARM Linux gateways (OpenWrt mediatek/filogic, Raspberry Pi 4/5).
# Debian 12: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user; cmocka and mbedTLS
# from scripts/cross-deps.sh aarch64 aarch64-linux-gnu-gcc. Usage:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
# (scripts/cross-test.sh aarch64 does it all and runs the unit tests under qemu-aarch64.)
set(ELK_CROSS_NAME aarch64)
set(ELK_CROSS_TRIPLET aarch64-linux-gnu)
set(ELK_CROSS_PROCESSOR aarch64)
set(ELK_CROSS_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/ElkCrossLinux.cmake)
