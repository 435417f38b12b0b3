/* SPDX-License-Identifier: MIT */
/*
 * Compiler/platform glue for lwIP on Cortex-M with arm-none-eabi-gcc and newlib:
 * just enough for lwIP's headers in the size build. A product uses its vendor's
 * or its RTOS port's cc.h.
 */
#ifndef ELK_CORTEX_M_ARCH_CC_H
#define ELK_CORTEX_M_ARCH_CC_H

#include <stdint.h>

#define BYTE_ORDER LITTLE_ENDIAN

/* errno and its values come from newlib, where lwIP's sockets store them. */
#define LWIP_ERRNO_STDINCLUDE 1

/* lwIP defines its own struct timeval for lwip_select; newlib's is hidden at -std=c99. */
#define LWIP_TIMEVAL_PRIVATE 1

typedef uint32_t sys_prot_t;

#define LWIP_PLATFORM_DIAG(x)                                                                      \
    do {                                                                                           \
    } while (0)
#define LWIP_PLATFORM_ASSERT(x)                                                                    \
    do {                                                                                           \
        for (;;) {                                                                                 \
        }                                                                                          \
    } while (0)

#endif /* ELK_CORTEX_M_ARCH_CC_H */
