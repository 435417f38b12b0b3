# SPDX-License-Identifier: MIT
# Cortex-M4 build of lib/ and port/sim for the emulated MCU (QEMU -M mps2-an386 with
# semihosting, scripts/mcu-test.sh): the arm-none-eabi toolchain of
# toolchain-arm-none-eabi.cmake, with the simulator's port instead of lwIP.
#   cmake -S . -B build-mcu/xlib -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-cortex-m4-qemu.cmake
set(ELK_PORTS sim)
set(ELK_LIB_ONLY ON CACHE BOOL "Build only lib/ and port/ (cross builds)" FORCE)
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-arm-none-eabi.cmake)
