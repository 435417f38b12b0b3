# SPDX-License-Identifier: MIT
# API reference (docs/Doxyfile): target `apidoc` writes <build>/apidoc/html from the public
# headers; ctest docs.apidoc fails on a public function, type, macro or enumerator without
# a comment. -DELK_INSTALL_APIDOC=ON builds it with `all` and installs the HTML
# (ELK_APIDOC_INSTALL_DIR; the Debian package libelk-dev ships it).
find_program(ELK_DOXYGEN doxygen)
find_program(ELK_APIDOC_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT ELK_APIDOC_PYTHON3)
  find_program(ELK_APIDOC_PYTHON3 python3)
endif()
option(ELK_INSTALL_APIDOC "Build the API reference (doxygen) with all and install it" OFF)
set(ELK_APIDOC_INSTALL_DIR ${CMAKE_INSTALL_DOCDIR}/html CACHE STRING
    "where the API reference's HTML goes (relative: under the prefix)")

set(ELK_APIDOC_DIR ${PROJECT_BINARY_DIR}/apidoc)
set(ELK_APIDOC_FILTER "${ELK_APIDOC_PYTHON3} ${PROJECT_SOURCE_DIR}/docs/doxygen-filter.py")
# The installed headers of the core and of the ports (fmt.h and lock_scripts.h are
# internals, not under lib/include; sim is the test harness's port).
set(ELK_APIDOC_INPUT)
foreach(d lib/include/elk port/posix/include/elk port/mbedtls/include/elk port/socket/include/elk
          port/lwip/include/elk)
  string(APPEND ELK_APIDOC_INPUT " ${PROJECT_SOURCE_DIR}/${d}")
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile ${ELK_APIDOC_DIR}/Doxyfile @ONLY)

if(ELK_DOXYGEN)
  if(ELK_INSTALL_APIDOC)
    set(elk_apidoc_all ALL)
  else()
    set(elk_apidoc_all)
  endif()
  add_custom_target(apidoc ${elk_apidoc_all}
    COMMAND ${CMAKE_COMMAND} -E remove_directory ${ELK_APIDOC_DIR}/html
    COMMAND ${ELK_DOXYGEN} ${ELK_APIDOC_DIR}/Doxyfile
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    COMMENT "API reference: ${ELK_APIDOC_DIR}/html/index.html" VERBATIM)
  if(ELK_INSTALL_APIDOC)
    install(DIRECTORY ${ELK_APIDOC_DIR}/html/ DESTINATION ${ELK_APIDOC_INSTALL_DIR})
  endif()
elseif(ELK_INSTALL_APIDOC)
  message(FATAL_ERROR "ELK_INSTALL_APIDOC needs doxygen: apt-get install doxygen (scripts/install-deps.sh)")
endif()
