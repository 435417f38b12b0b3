/* SPDX-License-Identifier: MIT */
/*
 * Minimal lwipopts.h for a Cortex-M4 size build of port/lwip against lwIP 2.1
 * headers. It states what edgelock needs (see docs/lwip.md); a product merges these
 * lines into its own lwipopts.h, sized for its RAM and traffic.
 */
#ifndef ELK_CORTEX_M_LWIPOPTS_H
#define ELK_CORTEX_M_LWIPOPTS_H

/* Required by port/lwip (checked with #error in port/lwip/src/lwip_requirements.h). */
#define NO_SYS 0 /* an RTOS runs lwIP's tcpip thread */
#define LWIP_SOCKET 1
#define LWIP_NETCONN 1 /* the socket API is built on it */
#define LWIP_TCP 1
#define LWIP_IPV4 1
#ifndef LWIP_SOCKET_POLL
#define LWIP_SOCKET_POLL 1 /* waits use lwip_poll ... */
#endif
#ifndef LWIP_SOCKET_SELECT
#define LWIP_SOCKET_SELECT 0 /* ... or lwip_select when poll is off */
#endif

/* Not needed: the port is non-blocking, gives numeric addresses, calls lwip_* names. */
#define LWIP_COMPAT_SOCKETS 0 /* 1 would turn t->close(...) into lwip_close(...) */
#define LWIP_POSIX_SOCKETS_IO_NAMES 0
#define LWIP_SO_RCVTIMEO 0
#define LWIP_SO_SNDTIMEO 0
#define LWIP_DNS 0 /* 1 lets the port resolve names (blocking, first address) */
#define LWIP_IPV6 0
#define LWIP_UDP 1 /* DHCP */
#define LWIP_DHCP 1

/* Threading: the application thread calls sockets while the tcpip thread runs. */
#define LWIP_TCPIP_CORE_LOCKING 1
#define SYS_LIGHTWEIGHT_PROT 1

/* Memory: a fleet of three nodes plus one spare connection. */
#define MEM_ALIGNMENT 4
#define MEM_SIZE (12 * 1024)
#define MEMP_NUM_NETCONN 4
#define MEMP_NUM_TCP_PCB 4
#define TCP_MSS 536
#define TCP_SND_BUF (2 * TCP_MSS)
#define TCP_WND (4 * TCP_MSS)
#define PBUF_POOL_SIZE 8

#define LWIP_STATS 0

#endif /* ELK_CORTEX_M_LWIPOPTS_H */
