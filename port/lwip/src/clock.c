/* SPDX-License-Identifier: MIT */
/*
 * Monotonic 64-bit milliseconds from lwIP's sys_now(), a 32-bit count that wraps
 * every 2^32 ms (49.7 days). A device that runs for months must not see time go
 * backwards at the wrap: a lease deadline computed before it would never come.
 */
#include <string.h>

#include "lwip_requirements.h"

#include "lwip/sys.h"

#include "elk/port_lwip.h"

uint64_t elk_lwip_clock_extend(elk_lwip_clock_t *ctx, uint32_t tick)
{
    if (ctx == NULL) {
        return tick;
    }
    if (!ctx->started) {
        ctx->started = true;
    } else if (tick < ctx->last) {
        /* Unsigned difference: a step from 0xFFFFFFF0 to 0x10 is 32 ms forward. */
        ctx->wraps++;
    }
    ctx->last = tick;
    return ((uint64_t)ctx->wraps << 32) | (uint64_t)tick;
}

static uint64_t clock_now(void *ctx)
{
    return elk_lwip_clock_extend((elk_lwip_clock_t *)ctx, (uint32_t)sys_now());
}

void elk_lwip_clock_init(elk_lwip_clock_t *ctx, elk_clock_t *out)
{
    if (ctx != NULL) {
        memset(ctx, 0, sizeof(*ctx));
    }
    if (out != NULL) {
        out->ctx = ctx;
        out->now_ms = clock_now;
    }
}
