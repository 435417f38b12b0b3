/* SPDX-License-Identifier: MIT */
/*
 * Which clock the posix port reads. CLOCK_BOOTTIME keeps counting while the gateway is
 * suspended; CLOCK_MONOTONIC does not, and a lease would then outlive a suspend on the
 * gateway's clock while the servers' TTL ran out. Nothing else would notice another id,
 * so this test links with -Wl,--wrap=clock_gettime and sees every call the port makes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>
#include "test_main.h"

#include "elk/port_posix.h"

int __wrap_clock_gettime(clockid_t id, struct timespec *ts);

static clockid_t g_ids[8];
static size_t g_calls;
static int g_boottime_fails;

int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
    if (g_calls < 8u) {
        g_ids[g_calls] = id;
    }
    g_calls++;
    if (id == CLOCK_BOOTTIME && g_boottime_fails) {
        return -1;
    }
    ts->tv_sec = id == CLOCK_BOOTTIME ? 5 : 7;
    ts->tv_nsec = 123999999; /* rounds down: 123 ms, never up */
    return 0;
}

static int reset(void **state)
{
    (void)state;
    g_calls = 0;
    g_boottime_fails = 0;
    return 0;
}

static void test_reads_boottime(void **state)
{
    reset(
        state); /* here, not only in setup: a static build wraps the runner's own clock calls too */
    assert_int_equal(elk_posix_now_ms(), 5123u);
    assert_int_equal(g_calls, 1);
    assert_int_equal(g_ids[0], CLOCK_BOOTTIME);
}

static void test_clock_interface_reads_boottime(void **state)
{
    elk_clock_t c;
    elk_posix_clock(&c);
    reset(state);
    assert_int_equal(c.now_ms(c.ctx), 5123u);
    assert_int_equal(g_calls, 1);
    assert_int_equal(g_ids[0], CLOCK_BOOTTIME);
}

/* Kernels before 2.6.39 have no CLOCK_BOOTTIME: MONOTONIC, never REALTIME, stands in. */
static void test_falls_back_to_monotonic(void **state)
{
    reset(state);
    g_boottime_fails = 1;
    assert_int_equal(elk_posix_now_ms(), 7123u);
    assert_int_equal(g_calls, 2);
    assert_int_equal(g_ids[0], CLOCK_BOOTTIME);
    assert_int_equal(g_ids[1], CLOCK_MONOTONIC);
}

int main(void)
{
    return ELK_RUN_EACH("tests", reset, NULL, test_reads_boottime,
                        test_clock_interface_reads_boottime, test_falls_back_to_monotonic);
}
