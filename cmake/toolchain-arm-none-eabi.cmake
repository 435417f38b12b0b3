# SPDX-License-Identifier: MIT
# Cross build of lib/ and port/lwip for a Cortex-M4 with Debian's gcc-arm-none-eabi
# and libnewlib-arm-none-eabi (newlib-nano):
#   cmake -S . -B build-cm4 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-arm-none-eabi.cmake \
#         -DELK_LIB_ONLY=ON -DELK_DEFCONFIG=configs/cortex_m4_defconfig
# scripts/cortex-m-build.sh runs it and prints the size table.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
# No OS to run a test executable on: probe the compiler with a static library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# Soft-float ABI: links with any Cortex-M4 (with or without FPU); lib/ uses no floats.
set(CMAKE_C_FLAGS_INIT "-mcpu=cortex-m4 -mthumb -Os -ffunction-sections -fdata-sections")
set(CMAKE_EXE_LINKER_FLAGS_INIT "--specs=nano.specs -Wl,--gc-sections")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Only the lwIP port makes sense on the target (posix, mbedtls and sim are host ports).
if(NOT DEFINED ELK_PORTS)
  set(ELK_PORTS lwip)
endif()
# lwIP's own headers (Debian's liblwip-dev ships lwIP 2.1.3's) and the target's
# lwipopts.h + arch/ (a minimal one for the size build; a product points both at its own).
if(NOT ELK_LWIP_INCLUDE_DIR AND EXISTS /usr/include/lwip/lwip/sockets.h)
  set(ELK_LWIP_INCLUDE_DIR /usr/include/lwip)
endif()
if(NOT ELK_LWIP_ARCH_DIR)
  set(ELK_LWIP_ARCH_DIR ${CMAKE_CURRENT_LIST_DIR}/../port/lwip/cortex-m)
endif()
