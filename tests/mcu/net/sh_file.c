/* SPDX-License-Identifier: MIT */
#include "sh_file.h"

#include <string.h>

enum { SYS_OPEN = 0x01, SYS_CLOSE = 0x02, SYS_READ = 0x06, SYS_FLEN = 0x0c };

static int sh_call(int op, void *arg)
{
    register int r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

long mcu_sh_read_file(const char *path, uint8_t *buf, size_t cap)
{
    uint32_t open_args[3] = {(uint32_t)(uintptr_t)path, 1u /* "rb" */, (uint32_t)strlen(path)};
    int h = sh_call(SYS_OPEN, open_args);
    if (h < 0) {
        return -1;
    }
    uint32_t handle = (uint32_t)h;
    int len = sh_call(SYS_FLEN, &handle);
    long rc = -1;
    if (len >= 0 && (size_t)len <= cap) {
        uint32_t read_args[3] = {handle, (uint32_t)(uintptr_t)buf, (uint32_t)len};
        /* SYS_READ returns the number of bytes NOT read */
        rc = sh_call(SYS_READ, read_args) == 0 ? (long)len : -1;
    }
    (void)sh_call(SYS_CLOSE, &handle);
    return rc;
}

int mcu_sh_file_exists(const char *path)
{
    uint32_t open_args[3] = {(uint32_t)(uintptr_t)path, 1u, (uint32_t)strlen(path)};
    int h = sh_call(SYS_OPEN, open_args);
    if (h < 0) {
        return 0;
    }
    uint32_t handle = (uint32_t)h;
    (void)sh_call(SYS_CLOSE, &handle);
    return 1;
}
