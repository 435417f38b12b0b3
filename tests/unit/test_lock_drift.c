/* SPDX-License-Identifier: MIT */
/* The drift allowance is safety arithmetic: it must round up, never wrap, and agree with
 * plain 64-bit division for every ttl and factor a config can hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "test_main.h"

#include "elk/lock.h"
#include "lock/lock_internal.h"

static uint64_t expected_drift(uint32_t ttl, uint32_t ppm, uint32_t fixed)
{
    uint64_t p = (uint64_t)ttl * ppm;
    return p / 1000000u + (p % 1000000u != 0u) + fixed;
}

/* The lock defaults with this ttl and drift allowance (ppm of the ttl, plus fixed ms). */
static elk_lock_config_t cfg_drift(uint32_t ttl, uint32_t ppm, uint32_t fixed)
{
    elk_lock_config_t c;
    elk_lock_config_defaults(&c);
    c.ttl_ms = ttl;
    c.drift_factor_ppm = ppm;
    c.drift_fixed_ms = fixed;
    return c;
}

static uint64_t drift_of(uint32_t ttl, uint32_t ppm, uint32_t fixed)
{
    elk_lock_config_t c = cfg_drift(ttl, ppm, fixed);
    return elk_lock__drift(&c);
}

static void test_drift_examples(void **state)
{
    (void)state;
    assert_int_equal(drift_of(10000, 10000, 2), 102); /* the design's defaults: 1% + 2 ms */
    assert_int_equal(drift_of(1, 1, 0), 1);           /* any non-zero product rounds up */
    assert_int_equal(drift_of(1000, 0, 0), 0);
    assert_int_equal(drift_of(999999, 1, 0), 1);
    assert_int_equal(drift_of(1000000, 1, 0), 1);
    assert_int_equal(drift_of(1000001, 1, 0), 2);
}

static void test_drift_matches_64bit_division(void **state)
{
    (void)state;
    const uint32_t edges[] = {0u,     1u,     2u,          999999u,     1000000u,    1000001u,
                              65535u, 65536u, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        for (size_t j = 0; j < sizeof edges / sizeof edges[0]; j++) {
            assert_int_equal(drift_of(edges[i], edges[j], 3),
                             expected_drift(edges[i], edges[j], 3));
        }
    }
    uint64_t x = 0x9E3779B97F4A7C15u; /* xorshift: deterministic, no libc rand */
    for (int n = 0; n < 200000; n++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint32_t ttl = (uint32_t)x, ppm = (uint32_t)(x >> 32);
        if (n & 1) {
            ttl %= 86400001u;
            ppm %= 500001u;
        }
        assert_int_equal(drift_of(ttl, ppm, 0), expected_drift(ttl, ppm, 0));
    }
}

/* The safety rule at its boundary: drift + stop_margin + min_validity must stay below
 * the ttl (equal leaves no usable validity), and renewal cannot be set past 90%. */
static void test_config_check_boundary(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_drift(1000, 10000, 2); /* drift 10 ms + 2 ms */
    c.stop_margin_ms = 300;
    c.min_validity_ms = 688; /* 12 + 300 + 688 = 1000: nothing left */
    assert_int_equal(elk_lock_config_check(&c), ELK_E_INVALID_ARG);
    c.min_validity_ms = 687;
    assert_int_equal(elk_lock_config_check(&c), ELK_OK);
    c.min_validity_ms = 900; /* margins alone fit; with min_validity they do not */
    assert_int_equal(elk_lock_config_check(&c), ELK_E_INVALID_ARG);
    c.min_validity_ms = 100;
    c.stop_margin_ms = 50; /* deadline at 938: a renewal at 90% still comes before it */
    c.renew_fraction_pct = 90;
    assert_int_equal(elk_lock_config_check(&c), ELK_OK);
    c.renew_fraction_pct = 91;
    assert_int_equal(elk_lock_config_check(&c), ELK_E_INVALID_ARG);
}

/* Each rule is named, so an agent can point at the key to change; and a renewal that
 * would start at or after the deadline is refused (such a lease is lost every time). */
static void test_config_explain(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_drift(1000, 10000, 2);
    elk_lock_config_fault_t f;
    c.stop_margin_ms = 300;
    c.min_validity_ms = 100; /* deadline at 1000 - 12 - 300 = 688 */
    c.renew_fraction_pct = 68;
    assert_int_equal(elk_lock_config_explain(&c, &f), ELK_OK);
    assert_int_equal(f, ELK_LOCK_CFG_OK);
    assert_int_equal(elk_lock_config_drift(&c), 12);
    c.renew_fraction_pct = 69; /* 690 >= 688 */
    assert_int_equal(elk_lock_config_explain(&c, &f), ELK_E_INVALID_ARG);
    assert_int_equal(f, ELK_LOCK_CFG_RENEW_AFTER_DEADLINE);
    c.renew_fraction_pct = 0; /* never renew: allowed */
    assert_int_equal(elk_lock_config_explain(&c, &f), ELK_OK);
    c.min_validity_ms = 688;
    assert_int_equal(elk_lock_config_explain(&c, &f), ELK_E_INVALID_ARG);
    assert_int_equal(f, ELK_LOCK_CFG_NO_VALIDITY);
    c.min_validity_ms = 100;
    c.wait_min_ms = 300;
    c.wait_max_ms = 200;
    assert_int_equal(elk_lock_config_explain(&c, &f), ELK_E_INVALID_ARG);
    assert_int_equal(f, ELK_LOCK_CFG_WAIT_RANGE);
    c.wait_min_ms = 50;
    c.ttl_ms = 0;
    assert_int_equal(elk_lock_config_explain(&c, &f), ELK_E_INVALID_ARG);
    assert_int_equal(f, ELK_LOCK_CFG_TTL_ZERO);
    assert_int_equal(elk_lock_config_explain(NULL, &f), ELK_E_INVALID_ARG);
}

int main(void)
{
    return ELK_RUN_TESTS(test_drift_examples, test_config_explain,
                         test_drift_matches_64bit_division, test_config_check_boundary);
}
