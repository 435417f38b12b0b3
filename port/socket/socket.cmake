# SPDX-License-Identifier: MIT
# port/socket: the TCP transport port/posix and port/lwip share. It is compiled into
# each port's own library, against that port's socket_shim.h (BSD or lwip_* calls, and
# that stack's errno values) found in shim_dir.
#   elk_port_use_socket_transport(<target> <shim_dir>)
function(elk_port_use_socket_transport target shim_dir)
  set(dir ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  target_sources(${target} PRIVATE ${dir}/src/socket_transport.c)
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${dir}/include>
                             PRIVATE ${dir}/src ${shim_dir})
endfunction()
