/* SPDX-License-Identifier: MIT */
/* CLOCK_BOOTTIME, not CLOCK_MONOTONIC: a gateway that suspends must not come back
 * believing less time passed than the servers saw, or a lease would look alive. */
#include <time.h>

#include "elk/port_posix.h"

uint64_t elk_posix_now_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0) {
        /* Only fails on kernels older than 2.6.39; MONOTONIC is the closest safe stand-in. */
        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    }
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t clock_now(void *ctx)
{
    (void)ctx;
    return elk_posix_now_ms();
}

void elk_posix_clock(elk_clock_t *out)
{
    if (out == NULL) {
        return;
    }
    out->ctx = NULL;
    out->now_ms = clock_now;
}
