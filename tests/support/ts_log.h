/* SPDX-License-Identifier: MIT */
/*
 * The log sink of the tests and benchmarks: lines "  [module level] text" on stderr
 * (optionally prefixed with the monotonic time). Quiet by default so test output stays
 * readable; ELK_TEST_VERBOSE in the environment lets every line through.
 */
#ifndef ELK_TEST_TS_LOG_H
#define ELK_TEST_TS_LOG_H

#include <stdbool.h>

#include "elk/platform.h"

typedef struct elk_ts_log {
    elk_log_t log; /* hand &x.log to the library; its ctx points back here */
    int loud_upto; /* levels <= this print even without ELK_TEST_VERBOSE (0: none) */
    bool stamp;    /* prefix each line with CLOCK_MONOTONIC seconds.microseconds */
} elk_ts_log_t;

/* Set l up as a sink at ELK_LOG_DEBUG (the sink filters, not the library); returns &l->log.
 * loud_upto: ELK_LOG_ERROR to always show errors, ELK_LOG_DEBUG to show everything, 0 for
 * nothing unless ELK_TEST_VERBOSE is set. */
elk_log_t *elk_ts_log_init(elk_ts_log_t *l, int loud_upto, bool stamp);

#endif /* ELK_TEST_TS_LOG_H */
