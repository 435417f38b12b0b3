/* SPDX-License-Identifier: MIT */
/*
 * Capturing log sink for unit tests: an elk_log_t that keeps the last lines lib/
 * wrote so a test can assert a failure was reported in words a person can act on.
 *
 *     fake_log_t fl;
 *     fake_log_init(&fl, ELK_LOG_DEBUG);
 *     elk_log_t log = fake_log_iface(&fl);
 *     ...
 *     assert_true(fake_log_contains(&fl, "AUTH refused"));
 *
 * Lines are stored as "<module>: <text>\n" in one buffer; when full, the oldest half is
 * dropped. Set FAKE_LOG_ECHO=1 in the environment to also print every line to stderr.
 */
#ifndef FAKE_LOG_H
#define FAKE_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "elk/platform.h"

#define FAKE_LOG_CAP 16384u

typedef struct fake_log {
    char text[FAKE_LOG_CAP + 1]; /* NUL-terminated */
    size_t len;
    unsigned lines;       /* lines written since init/clear */
    unsigned by_level[5]; /* lines per level (index = ELK_LOG_*) */
    int level;            /* handed to lib/ in elk_log_t.level */
} fake_log_t;

/* Empty capture; lib/ formats messages up to and including level. */
void fake_log_init(fake_log_t *l, int level);
/* The elk_log_t to hand to lib/ (ctx = l). */
elk_log_t fake_log_iface(fake_log_t *l);
/* True if any captured line contains s. */
bool fake_log_contains(const fake_log_t *l, const char *s);
/* Forget what was captured. */
void fake_log_clear(fake_log_t *l);

#endif /* FAKE_LOG_H */
