/* SPDX-License-Identifier: MIT */
/*
 * The few board services of QEMU's mps2-an386 that the network image needs: a 64-bit
 * tick from the CMSDK APB timer 0 (25 MHz), milliseconds for lwIP's sys_now(), and the
 * count of ticks the CPU spent working rather than waiting for the network (so a figure
 * can say how much of an operation was work and how much was waiting for a reply).
 */
#ifndef ELK_MCU_BOARD_H
#define ELK_MCU_BOARD_H

#include <stdint.h>

#define MCU_TICK_HZ 25000000u /* the MPS2 peripheral clock, which drives the APB timers */

/* Starts the free-running timer; call once before anything reads the clock. */
void mcu_board_init(void);

/* Timer ticks since mcu_board_init (64 bits, extended from the 32-bit counter, which
 * wraps every 171 s: read it more often than that, which any poll loop does). */
uint64_t mcu_ticks(void);

/* Milliseconds since mcu_board_init. */
uint64_t mcu_ms(void);

/* Ticks of work (inside lib/, or a network round that moved a frame or ran a due lwIP
 * timer), as opposed to waiting for the servers: the figures' notion of CPU cost. */
uint64_t mcu_work_ticks(void);
void mcu_work_add(uint64_t ticks);

#endif /* ELK_MCU_BOARD_H */
