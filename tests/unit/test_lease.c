/* SPDX-License-Identifier: MIT */
/* firmware/lease.c: the lease file's line (elkfw/lease.h), parsed, judged, formatted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include "elkfw/lease.h"

static bool parse(const char *s, uint64_t *t, uint64_t *d)
{
    return elkfw_lease_parse(s, strlen(s), t, d);
}

static void test_parse_valid(void **state)
{
    uint64_t t = 1, d = 1;
    (void)state;
    assert_true(parse("elklease 1 42 123456\n", &t, &d));
    assert_int_equal(t, 42);
    assert_int_equal(d, 123456);
    assert_true(parse("elklease 1 0 0\n", &t, &d)); /* fencing off, lease ended */
    assert_int_equal(t, 0);
    assert_int_equal(d, 0);
    assert_true(parse("elklease 1 18446744073709551615 18446744073709551615\n", &t, &d));
    assert_true(t == UINT64_MAX && d == UINT64_MAX);
    assert_true(elkfw_lease_parse("elklease 1 5 6\n", 15, NULL, NULL));
}

static void test_parse_rejects(void **state)
{
    static const char *bad[] = {
        "",
        "elklease 1 5 6",     /* no newline */
        "elklease 1 5 6\n\n", /* two lines */
        "elklease 1 5 6 \n",  /* trailing space */
        "elklease 1 5  6\n",  /* two spaces */
        "elklease 1 5\n",     /* no deadline */
        "elklease 2 5 6\n",   /* other version */
        "elklease 1 05 6\n",  /* leading zero */
        "elklease 1 5 06\n",
        "elklease 1 -5 6\n",
        "elklease 1 +5 6\n",
        "elklease 1 5 6x\n",
        "elklease 1 5 6\r\n",
        "elklease 1 18446744073709551616 6\n", /* overflow */
        "elklease 1 5 99999999999999999999\n",
        "ELKLEASE 1 5 6\n",
        " elklease 1 5 6\n",
        "elkfence 1 5 6\n",
    };
    size_t i;
    uint64_t t = 7, d = 7;
    (void)state;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(parse(bad[i], &t, &d));
    }
    assert_int_equal(t, 7); /* untouched on failure */
    assert_false(elkfw_lease_parse(NULL, 3, &t, &d));
    /* a NUL inside is not a valid byte either */
    assert_false(elkfw_lease_parse("elklease 1 5\0 6\n", 16, &t, &d));
}

static void test_judge(void **state)
{
    const char *l = "elklease 1 9 1000\n";
    size_t n = strlen(l);
    uint64_t t, d;
    (void)state;
    assert_int_equal(elkfw_lease_judge(l, n, 9, 999, &t, &d), ELKFW_LEASE_OK);
    assert_int_equal(t, 9);
    assert_int_equal(d, 1000);
    assert_int_equal(elkfw_lease_judge(l, n, 9, 1000, NULL, NULL),
                     ELKFW_LEASE_EXPIRED); /* now >= deadline */
    assert_int_equal(elkfw_lease_judge(l, n, 9, 5000, NULL, NULL), ELKFW_LEASE_EXPIRED);
    assert_int_equal(elkfw_lease_judge(l, n, 8, 10, &t, NULL), ELKFW_LEASE_TOKEN);
    assert_int_equal(t, 9);
    assert_int_equal(elkfw_lease_judge(l, n, 10, 10, NULL, NULL), ELKFW_LEASE_TOKEN);
    assert_int_equal(elkfw_lease_judge("elklease 1 9 0\n", 15, 9, 0, NULL, NULL),
                     ELKFW_LEASE_ENDED);
    assert_int_equal(elkfw_lease_judge("elklease 1 0 1000\n", 18, 9, 0, NULL, NULL),
                     ELKFW_LEASE_TOKEN);
    /* an ended lease is ended whichever token it names (checks in order: ended first),
     * and at any time: elk run writes deadline 0 when it stops the command on a loss */
    assert_int_equal(elkfw_lease_judge("elklease 1 8 0\n", 15, 9, 0, NULL, NULL),
                     ELKFW_LEASE_ENDED);
    assert_int_equal(elkfw_lease_judge("elklease 1 9 0\n", 15, 9, UINT64_MAX, NULL, NULL),
                     ELKFW_LEASE_ENDED);
    assert_int_equal(elkfw_lease_judge("junk", 4, 9, 0, &t, &d), ELKFW_LEASE_MALFORMED);
    assert_int_equal(t, 0);
    assert_int_equal(d, 0);
    assert_string_equal(elkfw_lease_verdict_text(ELKFW_LEASE_EXPIRED), "lease deadline passed");
}

static void test_format_roundtrip(void **state)
{
    char buf[ELKFW_LEASE_LINE_MAX];
    uint64_t t, d;
    size_t n;
    (void)state;
    n = elkfw_lease_format(buf, sizeof buf, UINT64_MAX, UINT64_MAX);
    assert_int_equal(n, strlen(buf));
    assert_true(n < ELKFW_LEASE_LINE_MAX);
    assert_true(elkfw_lease_parse(buf, n, &t, &d));
    assert_true(t == UINT64_MAX && d == UINT64_MAX);
    n = elkfw_lease_format(buf, sizeof buf, 3, 0);
    assert_string_equal(buf, "elklease 1 3 0\n");
    assert_int_equal(elkfw_lease_format(buf, 10, 3, 0), 0); /* too small */
    assert_int_equal(elkfw_lease_format(NULL, 10, 3, 0), 0);
}

int main(void)
{
    return ELK_RUN_TESTS(test_parse_valid, test_parse_rejects, test_judge, test_format_roundtrip);
}
