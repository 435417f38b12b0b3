/* SPDX-License-Identifier: MIT */
/* firmware/say.c: repeated log lines, rate-limited per kind (digits ignored), with a count
 * of those left out (elkfw/say.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include "elkfw/say.h"

typedef struct said {
    unsigned n;
    int level;
    char last[512];
} said_t;

static void emit(void *ctx, int level, const char *text, size_t len)
{
    said_t *s = ctx;
    s->n++;
    s->level = level;
    snprintf(s->last, sizeof s->last, "%.*s", (int)len, text);
}

static bool admit(elkfw_lograte_t *lr, const char *text, uint64_t now, said_t *s)
{
    return elkfw_lograte_admit(lr, 2, "elkd", text, strlen(text), now, emit, s);
}

static void test_burst_then_count(void **state)
{
    elkfw_lograte_t lr;
    said_t s = {0};
    uint64_t next = UINT64_MAX;
    unsigned i, passed = 0;
    char line[80];
    (void)state;
    memset(&lr, 0, sizeof lr);
    for (i = 0; i < 1000; i++) {
        snprintf(line, sizeof line, "connection of uid %u (pid %u) refused", i, 1000 + i);
        passed += admit(&lr, line, 100 + i, &s);
    }
    assert_int_equal(passed, ELKFW_LOGRATE_BURST); /* numbers differ: one kind */
    assert_int_equal(s.n, 0);
    elkfw_lograte_flush(&lr, 5000, &next, emit, &s);
    assert_int_equal(s.n, 0); /* the interval is not over */
    assert_int_equal(next, 100 + ELKFW_LOGRATE_INTERVAL_MS);
    next = UINT64_MAX;
    elkfw_lograte_flush(&lr, 100 + ELKFW_LOGRATE_INTERVAL_MS, &next, emit, &s);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.level, 2);
    assert_non_null(strstr(s.last,
                           "990 similar lines suppressed in the last 10 s; the last: "
                           "elkd: connection of uid 999 (pid 1999) refused"));
    assert_int_equal(next, UINT64_MAX); /* nothing left to sum up */
    /* forgotten: the next line of the kind passes again */
    assert_true(admit(&lr, "connection of uid 1 (pid 2) refused", 20000, &s));
}

static void test_kinds_apart(void **state)
{
    elkfw_lograte_t lr;
    said_t s = {0};
    unsigned i;
    (void)state;
    memset(&lr, 0, sizeof lr);
    for (i = 0; i < ELKFW_LOGRATE_BURST; i++) {
        assert_true(admit(&lr, "node a down", 10, &s));
    }
    assert_false(admit(&lr, "node a down", 10, &s));
    assert_true(admit(&lr, "node b down", 10, &s)); /* another word: another kind */
    assert_true(elkfw_lograte_admit(&lr, 1, "elkd", "node a down", 11, 10, emit, &s)); /* level */
    /* the next interval of a kind that was cut: its summary first, then the line passes */
    assert_true(admit(&lr, "node a down", 10 + ELKFW_LOGRATE_INTERVAL_MS, &s));
    assert_int_equal(s.n, 1);
    assert_non_null(strstr(s.last, "1 similar line suppressed"));
}

static void test_many_kinds_displace_oldest(void **state)
{
    elkfw_lograte_t lr;
    said_t s = {0};
    unsigned i, k;
    char line[80];
    (void)state;
    memset(&lr, 0, sizeof lr);
    for (i = 0; i <= ELKFW_LOGRATE_BURST; i++) {
        (void)admit(&lr, "the first kind", 1, &s); /* one suppressed */
    }
    for (k = 0; k < ELKFW_LOGRATE_KINDS; k++) {
        snprintf(line, sizeof line, "kind %c", 'a' + (int)k);
        assert_true(admit(&lr, line, 2 + k, &s));
    }
    /* the first kind was displaced: its count was said, not lost */
    assert_int_equal(s.n, 1);
    assert_non_null(strstr(s.last, "1 similar line suppressed"));
}

int main(void)
{
    return ELK_RUN_TESTS(test_burst_then_count, test_kinds_apart, test_many_kinds_displace_oldest);
}
