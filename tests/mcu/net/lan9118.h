/* SPDX-License-Identifier: MIT */
/*
 * A polled lwIP netif for the SMSC LAN9118 (the LAN9220 of Arm's MPS2 boards, which
 * QEMU's mps2-an385/an386 models at 0x40200000). No interrupts, no DMA: frames are
 * copied through the controller's 32-bit data FIFOs. Enough for one application
 * thread that polls; a product would take the RX interrupt and its PHY's link changes.
 */
#ifndef ELK_MCU_LAN9118_H
#define ELK_MCU_LAN9118_H

#include <stdint.h>

#include "lwip/err.h"
#include "lwip/netif.h"

#define MCU_LAN9118_BASE 0x40200000u

/* Driver state, caller-owned (netif->state). */
typedef struct mcu_lan9118 {
    uintptr_t base;
    uint32_t frame[1540 / 4]; /* one frame (+ FCS), word-aligned for the FIFOs */
    uint32_t rx_frames, tx_frames, rx_dropped;
} mcu_lan9118_t;

/* netif_add() init callback; netif->state must point at an mcu_lan9118_t whose base
 * is set. Resets the controller, reads its MAC address, enables TX and RX. Returns
 * ERR_IF when no LAN9118 answers at base. */
err_t mcu_lan9118_init(struct netif *netif);

/* Moves every received frame into lwIP (netif->input). Returns the number of frames. */
int mcu_lan9118_poll(struct netif *netif);

#endif /* ELK_MCU_LAN9118_H */
