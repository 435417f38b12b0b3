/* SPDX-License-Identifier: MIT */
/* Reading a host file over semihosting: how the test hands the MCU image a CA
 * certificate made for the run (a device keeps its CA in flash). */
#ifndef ELK_MCU_SH_FILE_H
#define ELK_MCU_SH_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Reads the host file path into buf (at most cap bytes). Returns the bytes read, or
 * -1 if it cannot be opened or read, or is larger than cap. */
long mcu_sh_read_file(const char *path, uint8_t *buf, size_t cap);

/* Whether the host file path exists (can be opened for reading): how the test tells
 * the image that something happened on the host side, with no timing involved. */
int mcu_sh_file_exists(const char *path);

#endif /* ELK_MCU_SH_FILE_H */
