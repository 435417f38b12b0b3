/* SPDX-License-Identifier: MIT */
/* lwIP compiler/platform glue for the network image on QEMU's mps2-an386
 * (arm-none-eabi-gcc, newlib-nano): diagnostics and assertions go to the semihosting
 * console, and a failed assertion ends the run with status 71. */
#ifndef ELK_MCU_ARCH_CC_H
#define ELK_MCU_ARCH_CC_H

#include <stdint.h>

#define BYTE_ORDER LITTLE_ENDIAN
#define LWIP_ERRNO_STDINCLUDE 1
#define LWIP_TIMEVAL_PRIVATE 0
#include <sys/time.h>

typedef uint32_t sys_prot_t;

void mcu_lwip_assert(const char *msg, const char *file, int line) __attribute__((noreturn));
uint32_t mcu_lwip_rand(void);

#define LWIP_PLATFORM_DIAG(x)                                                                      \
    do {                                                                                           \
    } while (0)
#define LWIP_PLATFORM_ASSERT(x) mcu_lwip_assert((x), __FILE__, __LINE__)
#define LWIP_RAND() mcu_lwip_rand()

#endif /* ELK_MCU_ARCH_CC_H */
