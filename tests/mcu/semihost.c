/* SPDX-License-Identifier: MIT */
/* Arm semihosting calls (see semihost.h). Every call is "r0 = operation, r1 = pointer
 * to its parameter block, BKPT 0xAB, r0 = result". */
#include "semihost.h"

#include <string.h>

enum {
    SYS_OPEN = 0x01,
    SYS_WRITE = 0x05,
    SYS_CLOCK = 0x10,
    SYS_GET_CMDLINE = 0x15,
    SYS_EXIT_EXTENDED = 0x20,
    ADP_STOPPED_APPLICATION_EXIT = 0x20026
};

static int sh_call(int op, void *arg)
{
    register int r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

/* ":tt" is the host console; mode 4 ("w") is its stdout, mode 8 ("a") its stderr. */
static int sh_console(int fd)
{
    static int handles[3] = {-1, -1, -1}; /* host handles, opened on first use */
    if (handles[fd] < 0) {
        uint32_t block[3] = {(uint32_t)(uintptr_t) ":tt", fd == 2 ? 8u : 4u, 3u};
        handles[fd] = sh_call(SYS_OPEN, block);
    }
    return handles[fd];
}

void mcu_sh_write(int fd, const char *p, size_t len)
{
    uint32_t block[3];
    int h = sh_console(fd == 2 ? 2 : 1);
    if (h < 0 || len == 0u) {
        return;
    }
    block[0] = (uint32_t)h;
    block[1] = (uint32_t)(uintptr_t)p;
    block[2] = (uint32_t)len;
    (void)sh_call(SYS_WRITE, block);
}

int mcu_sh_cmdline(char *buf, size_t size)
{
    uint32_t block[2] = {(uint32_t)(uintptr_t)buf, (uint32_t)size};
    if (size == 0u || sh_call(SYS_GET_CMDLINE, block) != 0) {
        return -1;
    }
    buf[size - 1u] = '\0';
    return (int)strlen(buf);
}

void mcu_sh_exit(int code)
{
    uint32_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, (uint32_t)code};
    for (;;) {
        (void)sh_call(SYS_EXIT_EXTENDED, block);
    }
}

uint32_t mcu_sh_clock_cs(void)
{
    return (uint32_t)sh_call(SYS_CLOCK, NULL);
}
