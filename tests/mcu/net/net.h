/* SPDX-License-Identifier: MIT */
/* The network of the MCU image: lwIP on the LAN9118, static IPv4, polled. */
#ifndef ELK_MCU_NET_H
#define ELK_MCU_NET_H

#include <stdint.h>

#include "lan9118.h"

/* lwip_init(), then the LAN9118 netif with addr/mask/gw (dotted quads), up and the
 * default. Returns 0, or -1 with a message on stderr. */
int mcu_net_init(const char *addr, const char *mask, const char *gw);

/* One round: received frames into lwIP, then lwIP's due timers. What the tcpip thread
 * would do; the cooperative sys_arch calls it from every wait. Rounds that moved a
 * frame or ran a timer count as work (board.h). */
void mcu_net_poll(void);

/* The driver's counters. */
const mcu_lan9118_t *mcu_net_driver(void);

/* Fatal lwIP assertion: message on stderr, exit status 71. */
void mcu_lwip_assert(const char *msg, const char *file, int line) __attribute__((noreturn));

#endif /* ELK_MCU_NET_H */
