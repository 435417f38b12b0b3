/* SPDX-License-Identifier: MIT */
/*
 * lwipopts.h of the network image (QEMU mps2-an386, LAN9118): port/lwip's socket API
 * (NO_SYS=0, core locking, lwip_poll) on the cooperative sys_arch, static IPv4, and
 * buffers sized for three Redis connections of which each may carry a 16 KB TLS record.
 */
#ifndef ELK_MCU_LWIPOPTS_H
#define ELK_MCU_LWIPOPTS_H

#define NO_SYS 0
#define LWIP_TIMERS 1
#define LWIP_SOCKET 1
#define LWIP_NETCONN 1
#define LWIP_TCP 1
#define LWIP_IPV4 1
#define LWIP_IPV6 0
#define LWIP_UDP 0
#define LWIP_RAW 0
#define LWIP_ICMP 1
#define LWIP_ARP 1
#define LWIP_ETHERNET 1
#define LWIP_DHCP 0
#define LWIP_DNS 0
#define LWIP_IGMP 0
#define LWIP_SOCKET_POLL 1
#define LWIP_SOCKET_SELECT 0
#define LWIP_COMPAT_SOCKETS 0
#define LWIP_POSIX_SOCKETS_IO_NAMES 0
#define LWIP_SO_RCVTIMEO 0
#define LWIP_SO_SNDTIMEO 0
#define LWIP_NETIF_API 0
#define LWIP_NETCONN_SEM_PER_THREAD 0
#define LWIP_NETIF_LINK_CALLBACK 0
#define LWIP_HAVE_LOOPIF 0

/* One thread, no interrupts: the core lock is a counter (sys_arch.c). */
#define LWIP_TCPIP_CORE_LOCKING 1
#define SYS_LIGHTWEIGHT_PROT 1

/* Mailboxes are fixed rings of MCU_MBOX_SIZE (arch/sys_arch.h). */
#define DEFAULT_TCP_RECVMBOX_SIZE 16
#define DEFAULT_ACCEPTMBOX_SIZE 4
#define TCPIP_MBOX_SIZE 16

/* Memory: lwIP's own static heap and pools (no malloc). */
#define MEM_ALIGNMENT 4
#define MEM_SIZE (16 * 1024)
#define MEMP_NUM_NETCONN 6
#define MEMP_NUM_TCP_PCB 6
#define MEMP_NUM_TCP_SEG 32
#define PBUF_POOL_SIZE 24
#define TCP_MSS 1460
#define TCP_WND (4 * TCP_MSS)
#define TCP_SND_BUF (4 * TCP_MSS)
#define TCP_SND_QUEUELEN 16
#define LWIP_RANDOMIZE_INITIAL_LOCAL_PORTS 1

/* Peak use of lwIP's heap and pools, for the figures. */
#define LWIP_STATS 1
#define MEM_STATS 1
#define MEMP_STATS 1
#define LINK_STATS 0
#define IP_STATS 0
#define TCP_STATS 0
#define ETHARP_STATS 0
#define ICMP_STATS 0
#define SYS_STATS 0
#define LWIP_STATS_DISPLAY 0

/* Debian's lwIP source (its "port" patch, for the Hurd) has sockets.c call these, and
 * defines them only in its POSIX port headers; lwIP's own sockaddr has the length
 * fields, so set them as upstream lwIP does. */
#define IP4ADDR_SOCKADDR_SET_LEN(sin) ((sin)->sin_len = sizeof(struct sockaddr_in))
#define IP6ADDR_SOCKADDR_SET_LEN(sin6) ((sin6)->sin6_len = sizeof(struct sockaddr_in6))
#define IPADDR_SOCKADDR_GET_LEN(addr) ((addr)->sa.sa_len)

#endif /* ELK_MCU_LWIPOPTS_H */
