/* SPDX-License-Identifier: MIT */
/*
 * Runtime of the MCU test images (tests/mcu): stack painting, stdio over semihosting.
 * Also force-included (-include mcu.h) into the simulator's sources, whose main.c
 * asks for CLOCK_MONOTONIC, which newlib defines only for POSIX targets.
 */
#ifndef ELK_MCU_H
#define ELK_MCU_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifndef CLOCK_MONOTONIC
#define CLOCK_MONOTONIC ((clockid_t)4)
int clock_gettime(clockid_t id, struct timespec *ts);
#endif

#define MCU_STACK_PAINT 0xC5AC5AC5u

/* Repaints the free stack below the caller's frame (what was used before is forgotten). */
void mcu_stack_paint(void);
/* Bytes of stack between top and the deepest word ever overwritten since the paint. */
size_t mcu_stack_used_below(uintptr_t top);
/* The same for the whole stack, and the stack's size (the linker script's STACK_SIZE). */
size_t mcu_stack_used(void);
size_t mcu_stack_size(void);

/* Flushes stdout/stderr and ends the emulation with this status. */
void mcu_stdio_exit(int code) __attribute__((noreturn));

#endif /* ELK_MCU_H */
