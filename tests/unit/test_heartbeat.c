/* SPDX-License-Identifier: MIT */
/*
 * firmware/heartbeat.c: when `elk run --heartbeat` sends a KEEPALIVE (every beat carried,
 * at most one per interval/4) and when a heartbeat counts as missed (strictly more than
 * one interval without a beat; EOF changes nothing by itself). Times are injected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include "test_main.h"

#include "elkfw/heartbeat.h"

/* A heartbeat of interval_ms started at now. */
static elkfw_hb_t started(uint32_t interval_ms, uint64_t now)
{
    elkfw_hb_t hb;
    elkfw_hb_start(&hb, interval_ms, now);
    return hb;
}

/* At t no KEEPALIVE is due and none will be: no wake planned. */
static void assert_quiet(elkfw_hb_t *hb, uint64_t t)
{
    assert_false(elkfw_hb_keepalive_due(hb, t));
    assert_true(elkfw_hb_next(hb) == UINT64_MAX);
}

static void test_no_heartbeat_does_nothing(void **state)
{
    (void)state;
    elkfw_hb_t hb = started(0, 1000);
    elkfw_hb_beat(&hb, 1001);
    assert_quiet(&hb, 1002);
    assert_false(elkfw_hb_check_missed(&hb, 1000000));
}

static void test_first_beat_is_sent_at_once(void **state)
{
    (void)state;
    elkfw_hb_t hb = started(1000, 5000);
    assert_false(elkfw_hb_keepalive_due(&hb, 5000)); /* the start is no proof of life */
    elkfw_hb_beat(&hb, 5010);
    assert_true(elkfw_hb_keepalive_due(&hb, 5010));
    assert_false(elkfw_hb_keepalive_due(&hb, 5011)); /* carried once */
}

static void test_keepalives_are_rate_limited_but_no_beat_is_dropped(void **state)
{
    (void)state;
    elkfw_hb_t hb = started(1000, 0);
    elkfw_hb_beat(&hb, 10);
    assert_true(elkfw_hb_keepalive_due(&hb, 10));
    /* a beat 50 ms later waits for interval/4 after the last KEEPALIVE */
    elkfw_hb_beat(&hb, 60);
    assert_false(elkfw_hb_keepalive_due(&hb, 60));
    assert_false(elkfw_hb_keepalive_due(&hb, 259));
    assert_int_equal(elkfw_hb_next(&hb), 260);
    assert_true(elkfw_hb_keepalive_due(&hb, 260));
    /* a flood of beats: one KEEPALIVE per 250 ms */
    unsigned sent = 0;
    for (uint64_t t = 261; t <= 1260; t++) {
        elkfw_hb_beat(&hb, t);
        sent += elkfw_hb_keepalive_due(&hb, t);
    }
    assert_int_equal(sent, 4);
    assert_false(elkfw_hb_check_missed(&hb, 1260));
}

static void test_missed_after_more_than_one_interval(void **state)
{
    (void)state;
    elkfw_hb_t hb = started(1000, 100);
    assert_false(elkfw_hb_check_missed(&hb, 1100)); /* exactly one interval: still in time */
    assert_int_equal(elkfw_hb_next(&hb), 1101);
    elkfw_hb_beat(&hb, 1100);
    assert_false(elkfw_hb_check_missed(&hb, 2100));
    assert_true(elkfw_hb_check_missed(&hb, 2101));
    /* terminal: a late beat neither revives it nor sends a KEEPALIVE */
    elkfw_hb_beat(&hb, 2102);
    assert_true(elkfw_hb_check_missed(&hb, 2102));
    assert_quiet(&hb, 5000);
}

static void test_pending_beat_is_not_sent_after_a_miss(void **state)
{
    (void)state;
    elkfw_hb_t hb = started(400, 0);
    elkfw_hb_beat(&hb, 1);
    assert_true(elkfw_hb_keepalive_due(&hb, 1));
    elkfw_hb_beat(&hb, 2); /* pending until 101 */
    assert_true(elkfw_hb_check_missed(&hb, 403));
    assert_false(elkfw_hb_keepalive_due(&hb, 403));
}

static void test_eof_is_no_miss_by_itself(void **state)
{
    (void)state;
    elkfw_hb_t hb = started(1000, 0);
    elkfw_hb_beat(&hb, 500);
    hb.eof = true; /* the command closed its end */
    assert_false(elkfw_hb_check_missed(&hb, 1500));
    assert_true(elkfw_hb_check_missed(&hb, 1501));
}

int main(void)
{
    return ELK_RUN_TESTS(test_no_heartbeat_does_nothing, test_first_beat_is_sent_at_once,
                         test_keepalives_are_rate_limited_but_no_beat_is_dropped,
                         test_missed_after_more_than_one_interval,
                         test_pending_beat_is_not_sent_after_a_miss, test_eof_is_no_miss_by_itself);
}
