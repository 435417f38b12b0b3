/* SPDX-License-Identifier: MIT */
/*
 * port/lwip clock: sys_now() is 32 bits and wraps every 49.7 days; the 64-bit
 * time handed to lib/ must keep rising straight through the wrap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include "test_main.h"

#include "elk/port_lwip.h"

/* Scripted lwIP tick: this definition takes the place of liblwip's sys_now. */
static uint32_t fake_tick;
uint32_t sys_now(void);
uint32_t sys_now(void)
{
    return fake_tick;
}

static void test_extend_counts_wraps(void **state)
{
    (void)state;
    elk_lwip_clock_t c;
    elk_clock_t clk;
    elk_lwip_clock_init(&c, &clk);

    assert_int_equal(elk_lwip_clock_extend(&c, 0xFFFFFF00u), 0xFFFFFF00ull);
    assert_int_equal(elk_lwip_clock_extend(&c, 0xFFFFFFFFu), 0xFFFFFFFFull);
    uint64_t after = elk_lwip_clock_extend(&c, 5u);
    assert_int_equal(after, 0x100000005ull);
    assert_int_equal(after - 0xFFFFFF00ull, 0x105u); /* 261 ms passed, not -4294967035 */
    /* A second wrap. */
    assert_int_equal(elk_lwip_clock_extend(&c, 0x80000000u), 0x180000000ull);
    assert_int_equal(elk_lwip_clock_extend(&c, 0x7FFFFFFFu), 0x27FFFFFFFull);
}

/* A fresh clock reads ticks[0..n) as want[0..n). */
static void check_readings(const uint32_t *ticks, const uint64_t *want, size_t n)
{
    elk_lwip_clock_t c;
    elk_lwip_clock_init(&c, NULL);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(elk_lwip_clock_extend(&c, ticks[i]), want[i]);
    }
}

static void test_equal_ticks_are_not_a_wrap(void **state)
{
    (void)state;
    check_readings((const uint32_t[]){1000u, 1000u, 1001u}, (const uint64_t[]){1000u, 1000u, 1001u},
                   3);
}

static void test_first_reading_is_not_a_wrap(void **state)
{
    (void)state;
    /* The first reading is low, but there is nothing before it to have wrapped from. */
    check_readings((const uint32_t[]){0u}, (const uint64_t[]){0u}, 1);
}

static void test_now_ms_reads_sys_now_across_the_wrap(void **state)
{
    (void)state;
    elk_lwip_clock_t c;
    elk_clock_t clk = {0};
    elk_lwip_clock_init(&c, &clk);
    assert_ptr_equal(clk.ctx, &c);
    assert_non_null(clk.now_ms);

    uint64_t prev = 0;
    /* Step the tick 7 ms at a time through the wrap: time must only rise, by 7 each step. */
    fake_tick = 0xFFFFFFFFu - 50u;
    for (int i = 0; i < 20; i++) {
        uint64_t now = clk.now_ms(clk.ctx);
        if (i > 0) {
            assert_true(now > prev);
            assert_int_equal(now - prev, 7u);
        }
        prev = now;
        fake_tick += 7u; /* wraps on the 8th step */
    }
    assert_true(prev > 0xFFFFFFFFull);
}

static void test_reinit_starts_over(void **state)
{
    (void)state;
    elk_lwip_clock_t c;
    elk_lwip_clock_init(&c, NULL);
    (void)elk_lwip_clock_extend(&c, 10u);
    (void)elk_lwip_clock_extend(&c, 5u);
    assert_int_equal(elk_lwip_clock_extend(&c, 6u), 0x100000006ull);
    elk_lwip_clock_init(&c, NULL);
    assert_int_equal(elk_lwip_clock_extend(&c, 6u), 6u);
}

int main(void)
{
    return ELK_RUN_TESTS(test_extend_counts_wraps, test_equal_ticks_are_not_a_wrap,
                         test_first_reading_is_not_a_wrap,
                         test_now_ms_reads_sys_now_across_the_wrap, test_reinit_starts_over);
}
