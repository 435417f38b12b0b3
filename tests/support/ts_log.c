/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L
#include "ts_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void ts_log_write(void *ctx, int level, const char *module, const char *text, size_t len)
{
    const elk_ts_log_t *l = ctx;
    if (level > l->loud_upto && getenv("ELK_TEST_VERBOSE") == NULL) {
        return;
    }
    if (l->stamp) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        fprintf(stderr, "  %ld.%06ld [%s %d] %.*s\n", (long)ts.tv_sec, ts.tv_nsec / 1000, module,
                level, (int)len, text);
    } else {
        fprintf(stderr, "  [%s %d] %.*s\n", module, level, (int)len, text);
    }
}

elk_log_t *elk_ts_log_init(elk_ts_log_t *l, int loud_upto, bool stamp)
{
    l->loud_upto = loud_upto;
    l->stamp = stamp;
    l->log.ctx = l;
    l->log.write = ts_log_write;
    l->log.level = ELK_LOG_DEBUG;
    return &l->log;
}
