/* SPDX-License-Identifier: MIT */
/*
 * lwipopts.h settings this port depends on, checked where the port is compiled so
 * a misconfigured lwIP fails the build with a sentence rather than with missing
 * symbols at link time or silent blocking at run time. See docs/lwip.md.
 */
#ifndef ELK_PORT_LWIP_REQUIREMENTS_H
#define ELK_PORT_LWIP_REQUIREMENTS_H

#include "lwip/opt.h"

#if NO_SYS
#error                                                                                             \
    "edgelock port/lwip needs NO_SYS=0 in lwipopts.h: the socket API needs lwIP's tcpip thread (an RTOS)"
#endif
#if !LWIP_SOCKET
#error                                                                                             \
    "edgelock port/lwip needs LWIP_SOCKET=1 in lwipopts.h (it uses lwip_socket/lwip_connect/lwip_send/lwip_recv)"
#endif
#if !LWIP_TCP
#error "edgelock port/lwip needs LWIP_TCP=1 in lwipopts.h (Redis speaks TCP)"
#endif
#if !LWIP_SOCKET_POLL && !LWIP_SOCKET_SELECT
#error                                                                                             \
    "edgelock port/lwip needs LWIP_SOCKET_POLL=1 (preferred) or LWIP_SOCKET_SELECT=1 in lwipopts.h to wait for readiness"
#endif
#if !LWIP_IPV4 && !LWIP_IPV6
#error "edgelock port/lwip needs LWIP_IPV4=1 or LWIP_IPV6=1 in lwipopts.h"
#endif

#endif /* ELK_PORT_LWIP_REQUIREMENTS_H */
