/* SPDX-License-Identifier: MIT */
/*
 * Stub OS types for lwIP's headers in the Cortex-M size build (NO_SYS=0 needs them
 * declared). A product takes its RTOS port's sys_arch.h instead (FreeRTOS, Zephyr,
 * ThreadX, ...); port/lwip never touches these types itself.
 */
#ifndef ELK_CORTEX_M_ARCH_SYS_ARCH_H
#define ELK_CORTEX_M_ARCH_SYS_ARCH_H

#include <stddef.h>

typedef void *sys_sem_t;
typedef void *sys_mutex_t;
typedef void *sys_mbox_t;
typedef void *sys_thread_t;

#define SYS_MBOX_NULL NULL
#define SYS_SEM_NULL NULL

#define sys_sem_valid(sem) ((sem) != NULL && *(sem) != NULL)
#define sys_sem_set_invalid(sem)                                                                   \
    do {                                                                                           \
        if ((sem) != NULL) {                                                                       \
            *(sem) = NULL;                                                                         \
        }                                                                                          \
    } while (0)
#define sys_mutex_valid(mutex) sys_sem_valid(mutex)
#define sys_mutex_set_invalid(mutex) sys_sem_set_invalid(mutex)
#define sys_mbox_valid(mbox) sys_sem_valid(mbox)
#define sys_mbox_set_invalid(mbox) sys_sem_set_invalid(mbox)

#endif /* ELK_CORTEX_M_ARCH_SYS_ARCH_H */
