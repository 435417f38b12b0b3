/* SPDX-License-Identifier: MIT */
/* lib/util text builder (lib/util/fmt.h) used for node log lines: strings, integers at
 * their limits, unprintable bytes, truncation that never writes past the buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "test_main.h"

#include "util/fmt.h"

static void test_builds_text(void **state)
{
    (void)state;
    char buf[128];
    elk_fmt_t f;
    elk_fmt_init(&f, buf, sizeof buf);
    elk_fmt_str(&f, "port ");
    elk_fmt_uint(&f, 6379);
    elk_fmt_str(&f, " delta ");
    elk_fmt_int(&f, -42);
    elk_fmt_str(&f, " zero ");
    elk_fmt_int(&f, 0);
    elk_fmt_str(&f, " ");
    elk_fmt_str(&f, NULL);
    assert_string_equal(elk_fmt_cstr(&f), "port 6379 delta -42 zero 0 (null)");
    assert_false(f.truncated);
}

static void test_integer_limits(void **state)
{
    (void)state;
    char buf[64];
    elk_fmt_t f;
    elk_fmt_init(&f, buf, sizeof buf);
    elk_fmt_int(&f, INT64_MIN);
    elk_fmt_str(&f, "|");
    elk_fmt_int(&f, INT64_MAX);
    elk_fmt_str(&f, "|");
    elk_fmt_uint(&f, UINT64_MAX);
    assert_string_equal(elk_fmt_cstr(&f),
                        "-9223372036854775808|9223372036854775807|18446744073709551615");
}

static void test_unprintable_bytes_are_masked(void **state)
{
    (void)state;
    char buf[32];
    elk_fmt_t f;
    elk_fmt_init(&f, buf, sizeof buf);
    const uint8_t evil[] = {'o', 'k', '\r', '\n', 0x1b, '[', 0x00, 0xff, '!'};
    elk_fmt_bytes(&f, evil, sizeof evil);
    assert_string_equal(elk_fmt_cstr(&f),
                        "ok???[?"
                        "?!");
}

static void test_truncates_without_overflow(void **state)
{
    (void)state;
    char buf[16];
    memset(buf, 'X', sizeof buf);
    elk_fmt_t f;
    elk_fmt_init(&f, buf, 8);
    elk_fmt_str(&f, "abcdef");
    elk_fmt_uint(&f, 12345);
    assert_true(f.truncated);
    assert_int_equal(f.len, 8);
    assert_memory_equal(buf, "abcdef12", 8);
    assert_int_equal(buf[8], 'X'); /* nothing written past cap */
    assert_string_equal(elk_fmt_cstr(&f), "abcdef1");
    elk_fmt_bytes(&f, (const uint8_t *)"zz", 2);
    assert_int_equal(buf[8], 'X');
    /* No buffer at all: everything truncates, cstr is "". */
    elk_fmt_init(&f, NULL, 100);
    elk_fmt_str(&f, "x");
    elk_fmt_int(&f, -1);
    assert_true(f.truncated);
    assert_string_equal(elk_fmt_cstr(&f), "");
}

int main(void)
{
    return ELK_RUN_TESTS(test_builds_text, test_integer_limits, test_unprintable_bytes_are_masked,
                         test_truncates_without_overflow);
}
