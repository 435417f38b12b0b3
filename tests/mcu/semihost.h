/* SPDX-License-Identifier: MIT */
/*
 * Arm semihosting (BKPT 0xAB on M-profile), the few calls the MCU test images need:
 * console output, the command line QEMU was given (-semihosting-config ...,arg=...),
 * the exit status, and a centisecond clock. QEMU (-semihosting) answers them; on a
 * board a debug probe does.
 */
#ifndef ELK_MCU_SEMIHOST_H
#define ELK_MCU_SEMIHOST_H

#include <stddef.h>
#include <stdint.h>

/* Writes len bytes to the host's stdout (fd 1) or stderr (fd 2). */
void mcu_sh_write(int fd, const char *p, size_t len);

/* Copies the command line (arguments joined by spaces, NUL-terminated) into buf.
 * Returns its length, or -1 if the host has none or it does not fit. */
int mcu_sh_cmdline(char *buf, size_t size);

/* Ends the emulation with this exit status (SYS_EXIT_EXTENDED). */
void mcu_sh_exit(int code) __attribute__((noreturn));

/* Centiseconds since the program started, host time (SYS_CLOCK). */
uint32_t mcu_sh_clock_cs(void);

#endif /* ELK_MCU_SEMIHOST_H */
