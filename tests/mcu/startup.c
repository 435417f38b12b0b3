/* SPDX-License-Identifier: MIT */
/*
 * Reset handler and C runtime for the MCU test images on QEMU's mps2-an386: copy
 * .data, zero .bss, paint the stack, read argv from semihosting, run main, and hand
 * its status to QEMU. No crt0, no heap: nothing here or in newlib-nano's string and
 * conversion functions the images use allocates (the link wraps malloc to prove it).
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "mcu.h"
#include "semihost.h"

extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];
extern uint32_t __stack_limit[], __stack_top[];

int main(int argc, char **argv);
void Reset_Handler(void) __attribute__((noreturn));
void mcu_fault_handler(void) __attribute__((noreturn));

enum { MCU_MAX_ARGS = 64 };

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)__stack_top,
    Reset_Handler,
    mcu_fault_handler,
    mcu_fault_handler,
    mcu_fault_handler,
    mcu_fault_handler,
    mcu_fault_handler,
    0,
    0,
    0,
    0,
    mcu_fault_handler,
    mcu_fault_handler,
    0,
    mcu_fault_handler,
    mcu_fault_handler,
};

void mcu_fault_handler(void)
{
    static const char msg[] = "mcu: fault (HardFault/MemManage/BusFault/UsageFault)\n";
    mcu_sh_write(2, msg, sizeof msg - 1u);
    mcu_sh_exit(70);
}

/* Fills [__stack_limit, sp - margin) with the paint word; what the program later
 * overwrites is its stack use. */
void mcu_stack_paint(void)
{
    uint32_t *p = __stack_limit;
    uint32_t *end = (uint32_t *)((uintptr_t)__builtin_frame_address(0) - 64u);
    while (p < end) {
        *p++ = MCU_STACK_PAINT;
    }
}

size_t mcu_stack_used_below(uintptr_t top)
{
    const uint32_t *p = __stack_limit;
    while ((uintptr_t)p < top && *p == MCU_STACK_PAINT) {
        p++;
    }
    return (uintptr_t)p < top ? (size_t)(top - (uintptr_t)p) : 0u;
}

size_t mcu_stack_used(void)
{
    return mcu_stack_used_below((uintptr_t)__stack_top);
}

size_t mcu_stack_size(void)
{
    return (size_t)((uintptr_t)__stack_top - (uintptr_t)__stack_limit);
}

/* Splits the semihosting command line at spaces (QEMU joins its arg= values with
 * single spaces; no argument may contain one). */
static int split_args(char *line, char **argv)
{
    int argc = 0;
    char *p = line;
    while (*p != '\0' && argc < MCU_MAX_ARGS - 1) {
        while (*p == ' ') {
            *p++ = '\0';
        }
        if (*p == '\0') {
            break;
        }
        argv[argc++] = p;
        while (*p != '\0' && *p != ' ') {
            p++;
        }
    }
    argv[argc] = NULL;
    return argc;
}

void Reset_Handler(void)
{
    static char cmdline[1024];
    static char *argv[MCU_MAX_ARGS];
    static char progname[] = "mcu";
    int argc;
    memcpy(__data_start, __data_load, (size_t)((uintptr_t)__data_end - (uintptr_t)__data_start));
    memset(__bss_start, 0, (size_t)((uintptr_t)__bss_end - (uintptr_t)__bss_start));
    mcu_stack_paint();
    argc = mcu_sh_cmdline(cmdline, sizeof cmdline) > 0 ? split_args(cmdline, argv) : 0;
    if (argc == 0) {
        argv[0] = progname;
        argv[1] = NULL;
        argc = 1;
    }
    mcu_stdio_exit(main(argc, argv));
}

/* newlib's abort() raises SIGABRT through its signal table, which it allocates with
 * malloc; the test harnesses abort on a broken script, so this one just reports it. */
void abort(void)
{
    static const char msg[] = "mcu: abort()\n";
    mcu_sh_write(2, msg, sizeof msg - 1u);
    mcu_stdio_exit(134);
}

/* newlib's exit() ends here, after its atexit handlers. */
void _exit(int code)
{
    mcu_stdio_exit(code);
}

/* elk-sim's main reports simulated hours per wall second; the host's clock is all
 * the semihosting console offers. */
int clock_gettime(clockid_t id, struct timespec *ts)
{
    uint32_t cs = mcu_sh_clock_cs();
    (void)id;
    ts->tv_sec = (time_t)(cs / 100u);
    ts->tv_nsec = (long)(cs % 100u) * 10000000L;
    return 0;
}
