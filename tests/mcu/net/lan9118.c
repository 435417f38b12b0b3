/* SPDX-License-Identifier: MIT */
/* Polled LAN9118 netif (see lan9118.h). Register layout from SMSC's LAN9118 data
 * sheet, as QEMU's hw/net/lan9118.c models it. */
#include "lan9118.h"

#include <stdbool.h>
#include <string.h>

#include "lwip/etharp.h"
#include "lwip/pbuf.h"
#include "netif/ethernet.h"

/* Register offsets: the FIFO ports, then the control and status registers. */
enum { RX_DATA_FIFO = 0x00, TX_DATA_FIFO = 0x20, RX_STATUS_FIFO = 0x40, TX_STATUS_FIFO = 0x48 };
enum { BYTE_TEST = 0x64, RX_CFG = 0x6c, TX_CFG = 0x70, HW_CFG = 0x74 };
enum { RX_FIFO_INF = 0x7c, TX_FIFO_INF = 0x80, MAC_CSR_CMD = 0xa4, MAC_CSR_DATA = 0xa8 };
enum { MAC_CR = 1, MAC_ADDRH = 2, MAC_ADDRL = 3, MAC_MII_ACC = 6, MAC_MII_DATA = 7 };

#define BYTE_TEST_VALUE 0x87654321u
#define HW_CFG_SRST 0x1u
#define TX_CFG_TX_ON 0x2u
#define MAC_CSR_BUSY 0x80000000u
#define MAC_CSR_READ 0x40000000u
#define MAC_CR_TXEN 0x8u
#define MAC_CR_RXEN 0x4u
#define MAC_CR_FDPX 0x00100000u
#define TX_CMD_A_FIRST 0x2000u
#define TX_CMD_A_LAST 0x1000u
#define RX_STS_ERROR 0x8000u
#define PHY_ADDR 1u
#define PHY_BSR 1u
#define PHY_BSR_LINK 0x4u
#define SPIN_LIMIT 100000u

static volatile uint32_t *reg(const mcu_lan9118_t *d, uint32_t off)
{
    return (volatile uint32_t *)(d->base + off);
}

static int mac_wait(const mcu_lan9118_t *d)
{
    for (uint32_t i = 0; i < SPIN_LIMIT; i++) {
        if ((*reg(d, MAC_CSR_CMD) & MAC_CSR_BUSY) == 0u) {
            return 0;
        }
    }
    return -1;
}

static uint32_t mac_read(const mcu_lan9118_t *d, uint32_t r)
{
    *reg(d, MAC_CSR_CMD) = MAC_CSR_BUSY | MAC_CSR_READ | r;
    (void)mac_wait(d);
    return *reg(d, MAC_CSR_DATA);
}

static void mac_write(const mcu_lan9118_t *d, uint32_t r, uint32_t v)
{
    *reg(d, MAC_CSR_DATA) = v;
    *reg(d, MAC_CSR_CMD) = MAC_CSR_BUSY | r;
    (void)mac_wait(d);
}

static uint32_t phy_read(const mcu_lan9118_t *d, uint32_t r)
{
    mac_write(d, MAC_MII_ACC, (PHY_ADDR << 11) | (r << 6) | 1u);
    for (uint32_t i = 0; i < SPIN_LIMIT && (mac_read(d, MAC_MII_ACC) & 1u) != 0u; i++) {
    }
    return mac_read(d, MAC_MII_DATA) & 0xffffu;
}

static err_t lan9118_output(struct netif *netif, struct pbuf *p)
{
    mcu_lan9118_t *d = netif->state;
    uint16_t len = p->tot_len;
    if (len > sizeof d->frame - 4u) {
        return ERR_BUF;
    }
    if ((*reg(d, TX_FIFO_INF) & 0xffffu) < (uint32_t)len + 8u) {
        return ERR_MEM; /* FIFO full: lwIP's TCP retransmits */
    }
    (void)pbuf_copy_partial(p, d->frame, len, 0);
    *reg(d, TX_DATA_FIFO) = TX_CMD_A_FIRST | TX_CMD_A_LAST | len;
    *reg(d, TX_DATA_FIFO) = ((uint32_t)len << 16) | len; /* tag = length */
    for (uint32_t i = 0; i < ((uint32_t)len + 3u) / 4u; i++) {
        *reg(d, TX_DATA_FIFO) = d->frame[i];
    }
    while ((*reg(d, TX_FIFO_INF) >> 16) & 0xffu) {
        (void)*reg(d, TX_STATUS_FIFO); /* drain: the status is not needed */
    }
    d->tx_frames++;
    return ERR_OK;
}

err_t mcu_lan9118_init(struct netif *netif)
{
    mcu_lan9118_t *d = netif->state;
    if (d == NULL || *reg(d, BYTE_TEST) != BYTE_TEST_VALUE) {
        return ERR_IF;
    }
    *reg(d, HW_CFG) = HW_CFG_SRST;
    for (uint32_t i = 0; i < SPIN_LIMIT && (*reg(d, HW_CFG) & HW_CFG_SRST) != 0u; i++) {
    }
    uint32_t lo = mac_read(d, MAC_ADDRL), hi = mac_read(d, MAC_ADDRH);
    netif->hwaddr_len = ETH_HWADDR_LEN;
    for (unsigned i = 0; i < 4u; i++) {
        netif->hwaddr[i] = (uint8_t)(lo >> (8u * i));
    }
    netif->hwaddr[4] = (uint8_t)hi;
    netif->hwaddr[5] = (uint8_t)(hi >> 8);
    netif->mtu = 1500;
    netif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET;
    netif->name[0] = 'e';
    netif->name[1] = 'n';
    netif->output = etharp_output;
    netif->linkoutput = lan9118_output;
    *reg(d, RX_CFG) = 0u; /* no offset, no end padding */
    *reg(d, TX_CFG) = TX_CFG_TX_ON;
    mac_write(d, MAC_CR, MAC_CR_TXEN | MAC_CR_RXEN | MAC_CR_FDPX);
    if (phy_read(d, PHY_BSR) & PHY_BSR_LINK) {
        netif->flags |= NETIF_FLAG_LINK_UP;
    }
    return ERR_OK;
}

int mcu_lan9118_poll(struct netif *netif)
{
    mcu_lan9118_t *d = netif->state;
    int n = 0;
    while ((*reg(d, RX_FIFO_INF) >> 16) & 0xffu) {
        uint32_t status = *reg(d, RX_STATUS_FIFO);
        uint32_t len = (status >> 16) & 0x3fffu; /* frame + 4-byte FCS */
        uint32_t words = (len + 3u) / 4u;
        bool keep = (status & RX_STS_ERROR) == 0u && len > 4u && words <= sizeof d->frame / 4u;
        for (uint32_t i = 0; i < words; i++) {
            uint32_t w = *reg(d, RX_DATA_FIFO);
            if (keep) {
                d->frame[i] = w;
            }
        }
        struct pbuf *p = keep ? pbuf_alloc(PBUF_RAW, (u16_t)(len - 4u), PBUF_POOL) : NULL;
        if (p == NULL) {
            d->rx_dropped++;
            continue;
        }
        (void)pbuf_take(p, d->frame, (u16_t)(len - 4u));
        if (netif->input(p, netif) != ERR_OK) {
            pbuf_free(p);
        }
        d->rx_frames++;
        n++;
    }
    return n;
}
