# SPDX-License-Identifier: MIT
# Kconfig -> <build>/generated/elk_config.h and CMake variables, as Zephyr and ESP-IDF do.
# ELK_PREGENERATED_CONFIG: a directory holding elk_config.h and elk_config.cmake made
# earlier (firmware/openwrt/config/: the Kconfig defaults), used as they are, so a build
# host needs neither Python nor kconfiglib (the OpenWrt SDK).
set(ELK_PREGENERATED_CONFIG "" CACHE PATH "directory with a pre-generated elk_config.h and elk_config.cmake")
set(ELK_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
set(ELK_CONFIG_HEADER ${ELK_GENERATED_DIR}/elk_config.h)
set(ELK_CONFIG_CMAKE ${ELK_GENERATED_DIR}/elk_config.cmake)
if(ELK_PREGENERATED_CONFIG)
  file(MAKE_DIRECTORY ${ELK_GENERATED_DIR})
  configure_file(${ELK_PREGENERATED_CONFIG}/elk_config.h ${ELK_CONFIG_HEADER} COPYONLY)
  configure_file(${ELK_PREGENERATED_CONFIG}/elk_config.cmake ${ELK_CONFIG_CMAKE} COPYONLY)
else()
  # Debian's python3-kconfiglib installs for /usr/bin/python3, so prefer that interpreter.
  find_program(ELK_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
  if(NOT ELK_PYTHON)
    find_program(ELK_PYTHON NAMES python3 REQUIRED)
  endif()

  set(ELK_KCONFIG ${CMAKE_SOURCE_DIR}/Kconfig)
  set(ELK_DOT_CONFIG ${CMAKE_BINARY_DIR}/.config)

  # A changed defconfig starts over from it rather than from an older .config.
  if(ELK_DEFCONFIG AND NOT "${ELK_DEFCONFIG}" STREQUAL "${ELK_DEFCONFIG_APPLIED}")
    file(REMOVE ${ELK_DOT_CONFIG})
    set(ELK_DEFCONFIG_APPLIED "${ELK_DEFCONFIG}" CACHE INTERNAL "")
  endif()

  execute_process(
    COMMAND ${ELK_PYTHON} ${CMAKE_SOURCE_DIR}/cmake/kconfig.py ${ELK_KCONFIG} "${ELK_DEFCONFIG}"
            ${ELK_DOT_CONFIG} ${ELK_CONFIG_HEADER} ${ELK_CONFIG_CMAKE}
    RESULT_VARIABLE elk_kconfig_rc)
  if(NOT elk_kconfig_rc EQUAL 0)
    message(FATAL_ERROR "Kconfig generation failed (see above). Install python3-kconfiglib.")
  endif()
endif()
include(${ELK_CONFIG_CMAKE})
# <build>/generated/elk/version.h from project(VERSION): the one source of the version.
configure_file(${CMAKE_SOURCE_DIR}/cmake/elk_version.h.in ${ELK_GENERATED_DIR}/elk/version.h @ONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ELK_KCONFIG} ${ELK_DOT_CONFIG})
if(ELK_DEFCONFIG)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ELK_DEFCONFIG})
endif()

# `cmake --build build --target menuconfig` edits <build>/.config; the next build
# regenerates the header because .config is a configure dependency.
add_custom_target(menuconfig
  COMMAND ${CMAKE_COMMAND} -E env KCONFIG_CONFIG=${ELK_DOT_CONFIG}
          ${ELK_PYTHON} -m menuconfig ${ELK_KCONFIG}
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  USES_TERMINAL)
