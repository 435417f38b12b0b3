/* SPDX-License-Identifier: MIT */
/* firmware/nodelog.c: one warning when a node goes down, at most one summary per interval,
 * one line when it is back (elkfw/nodelog.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include "test_main.h"

#include "elkfw/nodelog.h"

#define IV 60000u

static void test_first_failure_then_quiet(void **state)
{
    elkfw_nodelog_t n = {0};
    uint64_t next = UINT64_MAX;
    (void)state;
    assert_false(elkfw_nodelog_quiet(&n)); /* the library's first "down" line goes out */
    elkfw_nodelog_failed(&n, -41, 1000, IV);
    assert_true(elkfw_nodelog_quiet(&n)); /* every later attempt goes to debug */
    assert_false(elkfw_nodelog_summary_due(&n, 2000, IV, &next));
    assert_int_equal(next, 1000 + IV);
}

static void test_summary_at_most_once_per_interval(void **state)
{
    elkfw_nodelog_t n = {0};
    uint64_t t, next;
    unsigned summaries = 0;
    (void)state;
    elkfw_nodelog_failed(&n, -41, 0, IV);
    /* an attempt every 100 ms for 10 minutes */
    for (t = 100; t <= 600000; t += 100) {
        elkfw_nodelog_failed(&n, -42, t, IV);
        next = UINT64_MAX;
        summaries += elkfw_nodelog_summary_due(&n, t, IV, &next);
        assert_true(next > t);
    }
    assert_int_equal(summaries, 10);
    assert_int_equal(n.last_err, -42);
}

static void test_no_summary_without_new_attempts(void **state)
{
    elkfw_nodelog_t n = {0};
    uint64_t next = UINT64_MAX;
    (void)state;
    elkfw_nodelog_failed(&n, -41, 0, IV);
    assert_false(
        elkfw_nodelog_summary_due(&n, IV, IV, &next)); /* only the first failure: said already */
    elkfw_nodelog_failed(&n, -41, IV + 1, IV);
    assert_true(elkfw_nodelog_summary_due(&n, 2 * IV, IV, &next));
    assert_int_equal(n.attempts, 2);
}

static void test_back_once(void **state)
{
    elkfw_nodelog_t n = {0};
    uint64_t next = UINT64_MAX;
    (void)state;
    assert_false(elkfw_nodelog_ready(&n)); /* first connection: nothing was down */
    elkfw_nodelog_failed(&n, -41, 0, IV);
    elkfw_nodelog_failed(&n, -41, 10, IV);
    assert_true(elkfw_nodelog_ready(&n));
    assert_int_equal(n.attempts, 2); /* still there for the caller's line */
    assert_false(elkfw_nodelog_ready(&n));
    assert_false(elkfw_nodelog_quiet(&n));
    assert_false(elkfw_nodelog_summary_due(&n, 10 * IV, IV, &next));
    elkfw_nodelog_failed(&n, -43, 20 * IV, IV); /* down again: a fresh record */
    assert_int_equal(n.attempts, 1);
    assert_int_equal(n.down_since, 20 * IV);
}

int main(void)
{
    return ELK_RUN_TESTS(test_first_failure_then_quiet, test_summary_at_most_once_per_interval,
                         test_no_summary_without_new_attempts, test_back_once);
}
