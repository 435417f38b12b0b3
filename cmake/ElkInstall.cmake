# SPDX-License-Identifier: MIT
# What `cmake --install` puts in place for programs built against edgelock:
#   <libdir>/libelk.a (.so.N with -DBUILD_SHARED_LIBS=ON; both with -DELK_SHARED_CORE=ON)
#   and one library per built port,
#   <includedir>/elk/*.h   lib/ and port headers, the generated elk_config.h and version.h,
#   <libdir>/pkgconfig/edgelock.pc + edgelock-<port>.pc,
#   <libdir>/cmake/edgelock/  find_package(edgelock CONFIG): targets edgelock::elk,
#                             edgelock::port_<name>, the version file, the Kconfig values,
#   <mandir>/man1/elk.1, man5/elkd.conf.5, man8/elkd.8.
# elk_config.h's values size the public structs: they are part of the ABI, so a program
# must be compiled with the elk_config.h of the libelk it links (docs/packaging.md).
include(CMakePackageConfigHelpers)

set(ELK_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/edgelock CACHE STRING
    "where find_package(edgelock CONFIG) files go (relative: under the prefix)")

# The SONAME's number (libelk.so.0): raised by hand with every release that changes the
# ABI (a function's signature or a public struct's layout, elk_config.h's values included),
# and with it the Debian package name (libelk0) and debian/libelk0.symbols. The symbols file
# fails the package build when an exported function disappears.
set(ELK_SOVERSION 0)

# target -> exported name (edgelock::<name>), pkg-config module, and its libraries.
set(elk_install_targets)
foreach(t elk elk_shared elk_port_posix elk_port_fence_file elk_port_mbedtls elk_port_lwip elk_port_sim)
  if(NOT TARGET ${t})
    continue()
  endif()
  string(REGEX REPLACE "^elk_" "" export_name ${t})
  if(t STREQUAL "elk_shared")
    set(export_name elk_shared) # edgelock::elk_shared: the shared core
  endif()
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${export_name}
                        VERSION ${PROJECT_VERSION} SOVERSION ${ELK_SOVERSION})
  # The same names inside this build, for projects that add edgelock as a subdirectory.
  add_library(edgelock::${export_name} ALIAS ${t})
  list(APPEND elk_install_targets ${t})
endforeach()

install(TARGETS ${elk_install_targets} EXPORT edgelock-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Headers: the core's, then each installed port's, all in <includedir>/elk.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/lib/include/elk DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
foreach(t ${elk_install_targets})
  if(t STREQUAL "elk" OR t STREQUAL "elk_shared")
    continue()
  endif()
  string(REGEX REPLACE "^elk_port_" "" port ${t})
  if(port STREQUAL "fence_file")
    install(FILES ${PROJECT_SOURCE_DIR}/port/posix/include/elk/fence_file.h
            DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/elk)
  elseif(port STREQUAL "posix")
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/port/posix/include/elk DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
            FILES_MATCHING PATTERN "*.h" PATTERN "fence_file.h" EXCLUDE)
  else()
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/port/${port}/include/elk DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
            FILES_MATCHING PATTERN "*.h")
  endif()
  # port_posix.h and port_lwip.h include the shared socket transport's header.
  if(port STREQUAL "posix" OR port STREQUAL "lwip")
    install(FILES ${PROJECT_SOURCE_DIR}/port/socket/include/elk/port_socket.h
            DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/elk)
  endif()
endforeach()
# elk/config.h includes "elk_config.h" from its own directory, so the generated header
# sits next to it once installed.
install(FILES ${ELK_CONFIG_HEADER} ${ELK_GENERATED_DIR}/elk/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/elk)

# CMake package.
install(EXPORT edgelock-targets NAMESPACE edgelock:: FILE edgelock-targets.cmake
        DESTINATION ${ELK_CMAKE_PACKAGE_DIR})
set(ELK_PACKAGE_PORTS)
foreach(t ${elk_install_targets})
  if(t MATCHES "^elk_port_(.*)$")
    list(APPEND ELK_PACKAGE_PORTS ${CMAKE_MATCH_1})
  endif()
endforeach()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/edgelock-config.cmake.in
  ${PROJECT_BINARY_DIR}/edgelock-config.cmake INSTALL_DESTINATION ${ELK_CMAKE_PACKAGE_DIR})
# Until 1.0 a minor release may break the API: only the same MAJOR.MINOR is compatible.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(elk_compat SameMinorVersion)
else()
  set(elk_compat SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/edgelock-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${elk_compat})
install(FILES ${PROJECT_BINARY_DIR}/edgelock-config.cmake
              ${PROJECT_BINARY_DIR}/edgelock-config-version.cmake
        DESTINATION ${ELK_CMAKE_PACKAGE_DIR})
install(FILES ${ELK_CONFIG_CMAKE} DESTINATION ${ELK_CMAKE_PACKAGE_DIR})

# pkg-config: edgelock.pc for the core, edgelock-<port>.pc per port (Requires: edgelock).
# A static archive does not name what it needs, so its dependencies go to Libs; a shared
# library records them itself (DT_NEEDED), so they go to Libs.private.
foreach(v INCLUDEDIR LIBDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${v}}")
    set(ELK_PC_${v} "${CMAKE_INSTALL_${v}}")
  else()
    set(ELK_PC_${v} "\${prefix}/${CMAKE_INSTALL_${v}}")
  endif()
endforeach()
function(elk_pkgconfig module description requires libs deps)
  set(ELK_PC_NAME ${module})
  set(ELK_PC_DESCRIPTION "${description}")
  set(ELK_PC_REQUIRES "${requires}")
  set(ELK_PC_LIBS "${libs}")
  if(BUILD_SHARED_LIBS)
    set(ELK_PC_LIBS_PRIVATE "${deps}")
  else()
    set(ELK_PC_LIBS "${libs} ${deps}")
    set(ELK_PC_LIBS_PRIVATE "")
  endif()
  string(STRIP "${ELK_PC_LIBS}" ELK_PC_LIBS)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/edgelock.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${module}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${module}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
elk_pkgconfig(edgelock "edgelock core: RESP codec, Redlock lease engine, fencing guard" "" "-lelk" "")
if(TARGET elk_port_posix)
  set(elk_ff "")
  if(TARGET elk_port_fence_file)
    set(elk_ff "-lelk_port_fence_file")
  endif()
  elk_pkgconfig(edgelock-posix "edgelock POSIX port: TCP, clock, entropy, poll wait, blocking API, fence state file"
                edgelock "-lelk_port_posix ${elk_ff}" "")
endif()
if(TARGET elk_port_mbedtls)
  elk_pkgconfig(edgelock-mbedtls "edgelock TLS transport over mbedTLS" edgelock "-lelk_port_mbedtls"
                "-lmbedtls -lmbedx509 -lmbedcrypto")
endif()
if(TARGET elk_port_lwip)
  elk_pkgconfig(edgelock-lwip "edgelock lwIP port" edgelock "-lelk_port_lwip" "-llwip")
endif()
if(TARGET elk_port_sim)
  elk_pkgconfig(edgelock-sim "edgelock deterministic simulator port" edgelock "-lelk_port_sim" "")
endif()

# Man pages (docs/man/), kept in step with the code by the man_pages test.
if(TARGET elk_cli)
  install(FILES ${PROJECT_SOURCE_DIR}/docs/man/elk.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()
if(TARGET elkd)
  install(FILES ${PROJECT_SOURCE_DIR}/docs/man/elkd.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
  install(FILES ${PROJECT_SOURCE_DIR}/docs/man/elkd.conf.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
endif()
