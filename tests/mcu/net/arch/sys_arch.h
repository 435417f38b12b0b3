/* SPDX-License-Identifier: MIT */
/*
 * A cooperative sys_arch for lwIP's socket API on bare metal (tests/mcu/net/sys_arch.c):
 * one thread, no scheduler, no tcpip thread. Semaphores and mailboxes are counters and
 * rings; a wait that cannot be satisfied at once polls the Ethernet controller and runs
 * lwIP's timers until it can (or its timeout passes). That is what the tcpip thread
 * would have done while the application thread slept.
 */
#ifndef ELK_MCU_ARCH_SYS_ARCH_H
#define ELK_MCU_ARCH_SYS_ARCH_H

#include <stdint.h>

#define MCU_MBOX_SIZE 16

typedef struct {
    volatile uint32_t count;
    uint8_t valid;
} sys_sem_t;

typedef struct {
    uint32_t depth;
    uint8_t valid;
} sys_mutex_t;

typedef struct {
    void *msg[MCU_MBOX_SIZE];
    uint32_t head, used;
    uint8_t valid;
} sys_mbox_t;

typedef uint32_t sys_thread_t;

#define sys_sem_valid(s) ((s) != NULL && (s)->valid)
#define sys_sem_set_invalid(s) ((s)->valid = 0)
#define sys_mutex_valid(m) ((m) != NULL && (m)->valid)
#define sys_mutex_set_invalid(m) ((m)->valid = 0)
#define sys_mbox_valid(m) ((m) != NULL && (m)->valid)
#define sys_mbox_set_invalid(m) ((m)->valid = 0)

#endif /* ELK_MCU_ARCH_SYS_ARCH_H */
