/* SPDX-License-Identifier: MIT */
#include "net.h"

#include <stdio.h>

#include "board.h"
#include "lwip/init.h"
#include "lwip/ip4_addr.h"
#include "lwip/netif.h"
#include "lwip/tcpip.h"
#include "lwip/timeouts.h"
#include "netif/ethernet.h"
#include "mcu.h"

static struct netif eth_netif;
static mcu_lan9118_t eth = {.base = MCU_LAN9118_BASE};

int mcu_net_init(const char *addr, const char *mask, const char *gw)
{
    ip4_addr_t a, m, g;
    if (!ip4addr_aton(addr, &a) || !ip4addr_aton(mask, &m) || !ip4addr_aton(gw, &g)) {
        fprintf(stderr, "mcu: bad address %s/%s via %s\n", addr, mask, gw);
        return -1;
    }
    lwip_init();
    /* No tcpip thread: frames go straight to ethernet_input from mcu_net_poll. */
    if (netif_add(&eth_netif, &a, &m, &g, &eth, mcu_lan9118_init, ethernet_input) == NULL) {
        fprintf(stderr, "mcu: no LAN9118 at 0x%08lx (BYTE_TEST did not answer)\n",
                (unsigned long)eth.base);
        return -1;
    }
    netif_set_default(&eth_netif);
    netif_set_up(&eth_netif);
    netif_set_link_up(&eth_netif);
    printf("mcu: net up: %s/%s gw %s mac %02x:%02x:%02x:%02x:%02x:%02x\n", addr, mask, gw,
           eth_netif.hwaddr[0], eth_netif.hwaddr[1], eth_netif.hwaddr[2], eth_netif.hwaddr[3],
           eth_netif.hwaddr[4], eth_netif.hwaddr[5]);
    return 0;
}

void mcu_net_poll(void)
{
    uint64_t t0 = mcu_ticks();
    LOCK_TCPIP_CORE();
    int frames = mcu_lan9118_poll(&eth_netif);
    uint32_t before = sys_timeouts_sleeptime();
    sys_check_timeouts();
    UNLOCK_TCPIP_CORE();
    if (frames != 0 || before == 0u) {
        mcu_work_add(mcu_ticks() - t0);
    }
}

const mcu_lan9118_t *mcu_net_driver(void)
{
    return &eth;
}

void mcu_lwip_assert(const char *msg, const char *file, int line)
{
    fprintf(stderr, "mcu: lwIP assertion \"%s\" failed at %s:%d\n", msg, file, line);
    mcu_stdio_exit(71);
}
