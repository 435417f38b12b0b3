/* SPDX-License-Identifier: MIT */
/*
 * RESP decoder: every RESP2/RESP3 type, every error path, every limit, pipelining,
 * and fragmentation at every split point (and byte at a time) giving the same result.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "test_main.h"

#include "elk/resp.h"

#define CAP 512
#define MAXN 64

typedef struct fixture {
    elk_resp_reader_t r;
    uint8_t buf[CAP];
    elk_resp_node_t nodes[MAXN];
    elk_resp_reply_t reply;
} fixture_t;

static fixture_t fx;

static void setup_reader(size_t cap, size_t max_nodes, size_t max_depth)
{
    memset(&fx, 0, sizeof fx);
    assert_int_equal(elk_resp_reader_init(&fx.r, fx.buf, cap, fx.nodes, max_nodes, max_depth),
                     ELK_OK);
}

/* Feed all of s at once and return what next() says. */
static int parse_all(const char *s, size_t len)
{
    assert_int_equal(elk_resp_reader_feed(&fx.r, (const uint8_t *)s, len), ELK_OK);
    return elk_resp_reader_next(&fx.r, &fx.reply);
}

#define PARSE(lit) parse_all((lit), sizeof(lit) - 1u)

/* Parse one complete reply with default limits. */
static const elk_resp_node_t *one(const char *s, size_t len)
{
    setup_reader(CAP, MAXN, 8);
    assert_int_equal(parse_all(s, len), 1);
    assert_int_equal(fx.r.pos, len); /* the reply ends exactly where its bytes end */
    return fx.reply.nodes;
}

#define ONE(lit) one((lit), sizeof(lit) - 1u)

static void expect_str(const elk_resp_node_t *n, int type, const char *s, size_t len)
{
    assert_int_equal(n->type, type);
    assert_int_equal(n->len, len);
    assert_memory_equal(n->str, s, len);
    assert_int_equal(n->subtree, 0);
}

/* ------------------------------------------------------------ every type */

static void test_simple_error_integer(void **state)
{
    (void)state;
    const elk_resp_node_t *n = ONE("+OK\r\n");
    expect_str(n, ELK_RESP_SIMPLE, "OK", 2);
    assert_int_equal(fx.reply.count, 1);
    assert_true(elk_resp_str_eq(n, "OK"));
    assert_false(elk_resp_str_eq(n, "O"));
    assert_false(elk_resp_is_error(n));

    n = ONE("+\r\n");
    expect_str(n, ELK_RESP_SIMPLE, "", 0);

    n = ONE("-ERR wrong number of arguments\r\n");
    expect_str(n, ELK_RESP_ERROR, "ERR wrong number of arguments", 29);
    assert_true(elk_resp_is_error(n));

    static const struct {
        const char *in;
        int64_t v;
    } ints[] = {{":0\r\n", 0},
                {":1\r\n", 1},
                {":-1\r\n", -1},
                {":1234567\r\n", 1234567},
                {":9223372036854775807\r\n", INT64_MAX},
                {":-9223372036854775808\r\n", INT64_MIN}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        n = one(ints[i].in, strlen(ints[i].in));
        assert_int_equal(n->type, ELK_RESP_INTEGER);
        assert_true(n->integer == ints[i].v);
        assert_false(elk_resp_str_eq(n, ""));
    }
}

/* Every digit count, both signs, with 8 or more bytes after the number and with fewer
 * (the decoder reads numbers eight bytes at a time when it can). */
static void test_integer_every_length(void **state)
{
    (void)state;
    uint64_t mag = 0;
    for (int digits = 1; digits <= 19; digits++) {
        mag = mag * 10u + (uint64_t)(digits % 9 + 1);
        for (int sign = 0; sign < 2; sign++) {
            int64_t want = sign ? -(int64_t)mag : (int64_t)mag;
            char line[64];
            int m = snprintf(line, sizeof line, ":%lld\r\n", (long long)want);
            /* Alone, then followed by another reply so 8+ bytes are always there. */
            const elk_resp_node_t *n = one(line, (size_t)m);
            assert_int_equal(n->type, ELK_RESP_INTEGER);
            assert_true(n->integer == want);
            char two[96];
            int m2 = snprintf(two, sizeof two, "%s+OK\r\n", line);
            setup_reader(CAP, MAXN, 8);
            assert_int_equal(parse_all(two, (size_t)m2), 1);
            assert_true(fx.reply.nodes[0].integer == want);
            assert_int_equal(fx.r.pos, (size_t)m);
            /* A digit too many or a stray byte before the CR is never accepted. */
            char bad[96];
            int m3 = snprintf(bad, sizeof bad, ":%lldx\r\n+OK\r\n", (long long)want);
            setup_reader(CAP, MAXN, 8);
            assert_int_equal(parse_all(bad, (size_t)m3), ELK_E_RESP_LENGTH);
        }
    }
    /* Lengths and counts of every size the buffer allows take the same path. */
    for (int len = 0; len <= 300; len += 7) {
        char msg[400];
        int m = snprintf(msg, sizeof msg, "*2\r\n$%d\r\n", len);
        memset(msg + m, 'q', (size_t)len);
        m += len;
        m += snprintf(msg + m, sizeof msg - (size_t)m, "\r\n:%d\r\n", len);
        const elk_resp_node_t *n = one(msg, (size_t)m);
        assert_int_equal(n[1].len, len);
        assert_int_equal(n[2].integer, len);
    }
}

/* Lines of every length up to several 8-byte words (the CR LF search works a word at a
 * time), and a stray CR or LF at every position in them. */
static void test_line_every_length(void **state)
{
    (void)state;
    for (size_t l = 0; l <= 40; l++) {
        char msg[96];
        memset(msg, 'a', sizeof msg);
        msg[0] = '+';
        memcpy(msg + 1 + l, "\r\n:1\r\n", 7);
        const elk_resp_node_t *n = one(msg, 1 + l + 2);
        expect_str(n, ELK_RESP_SIMPLE, msg + 1, l);
        setup_reader(CAP, MAXN, 8);
        assert_int_equal(parse_all(msg, 1 + l + 7), 1);
        assert_int_equal(fx.reply.nodes[0].len, l);
        assert_int_equal(fx.r.pos, 1 + l + 2);
        for (size_t k = 0; k < l; k++) {
            char bad[96];
            memcpy(bad, msg, sizeof bad);
            bad[1 + k] = (k & 1u) ? '\n' : '\r';
            setup_reader(CAP, MAXN, 8);
            assert_int_equal(parse_all(bad, 1 + l + 7), ELK_E_RESP_PROTOCOL);
        }
    }
}

static void test_bulk_and_nulls(void **state)
{
    (void)state;
    const elk_resp_node_t *n = ONE("$5\r\nhello\r\n");
    expect_str(n, ELK_RESP_BULK, "hello", 5);
    n = ONE("$0\r\n\r\n");
    expect_str(n, ELK_RESP_BULK, "", 0);
    assert_true(elk_resp_str_eq(n, ""));
    /* Binary bytes, CR LF and NUL included, are data: only the length counts. */
    n = ONE("$8\r\n\r\n\0\xff$1\r\n\r\n");
    expect_str(n, ELK_RESP_BULK, "\r\n\0\xff$1\r\n", 8);
    n = ONE("$-1\r\n");
    assert_int_equal(n->type, ELK_RESP_NULL_BULK);
    n = ONE("*-1\r\n");
    assert_int_equal(n->type, ELK_RESP_NULL_ARRAY);
    n = ONE("_\r\n");
    assert_int_equal(n->type, ELK_RESP_NULL);
    assert_int_equal(fx.reply.count, 1);
}

static void test_resp3_scalars(void **state)
{
    (void)state;
    static const char *doubles[] = {"1.5",     "0",    "-0.25",   "inf",
                                    "-inf",    "+inf", "nan",     "1e10",
                                    "1.23E-5", "+3",   "10.0e+3", "17976931348623157e292"};
    for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++) {
        char line[64];
        int m = snprintf(line, sizeof line, ",%s\r\n", doubles[i]);
        const elk_resp_node_t *n = one(line, (size_t)m);
        expect_str(n, ELK_RESP_DOUBLE, doubles[i], strlen(doubles[i]));
    }
    const elk_resp_node_t *n = ONE("#t\r\n");
    assert_int_equal(n->type, ELK_RESP_BOOLEAN);
    assert_int_equal(n->integer, 1);
    n = ONE("#f\r\n");
    assert_int_equal(n->type, ELK_RESP_BOOLEAN);
    assert_int_equal(n->integer, 0);

    n = ONE("!21\r\nSYNTAX invalid syntax\r\n");
    expect_str(n, ELK_RESP_BLOB_ERROR, "SYNTAX invalid syntax", 21);
    assert_true(elk_resp_is_error(n));

    n = ONE("=15\r\ntxt:Some string\r\n");
    expect_str(n, ELK_RESP_VERBATIM, "Some string", 11);
    assert_memory_equal(n->format, "txt", 3);
    n = ONE("=4\r\nmkd:\r\n");
    expect_str(n, ELK_RESP_VERBATIM, "", 0);
    assert_memory_equal(n->format, "mkd", 3);

    n = ONE("(3492890328409238509324850943850943825024385\r\n");
    expect_str(n, ELK_RESP_BIGNUM, "3492890328409238509324850943850943825024385", 43);
    n = ONE("(-12\r\n");
    expect_str(n, ELK_RESP_BIGNUM, "-12", 3);
}

static void test_aggregates(void **state)
{
    (void)state;
    /* [1, [2, "ab"], nil, []] */
    const elk_resp_node_t *n = ONE("*4\r\n:1\r\n*2\r\n:2\r\n$2\r\nab\r\n$-1\r\n*0\r\n");
    assert_int_equal(fx.reply.count, 7);
    assert_int_equal(n[0].type, ELK_RESP_ARRAY);
    assert_int_equal(n[0].integer, 4);
    assert_int_equal(n[0].subtree, 6);
    assert_int_equal(n[1].integer, 1);
    assert_int_equal(n[2].type, ELK_RESP_ARRAY);
    assert_int_equal(n[2].integer, 2);
    assert_int_equal(n[2].subtree, 2);
    assert_int_equal(n[3].integer, 2);
    expect_str(&n[4], ELK_RESP_BULK, "ab", 2);
    assert_int_equal(n[5].type, ELK_RESP_NULL_BULK);
    assert_int_equal(n[6].type, ELK_RESP_ARRAY);
    assert_int_equal(n[6].integer, 0);
    assert_int_equal(n[6].subtree, 0);

    /* A flat array of scalars, the usual script reply. */
    n = ONE("*4\r\n+a\r\n:7\r\n$1\r\nx\r\n$-1\r\n");
    assert_int_equal(fx.reply.count, 5);
    assert_int_equal(n[0].type, ELK_RESP_ARRAY);
    assert_int_equal(n[0].integer, 4);
    assert_int_equal(n[0].subtree, 4);
    expect_str(&n[1], ELK_RESP_SIMPLE, "a", 1);
    assert_int_equal(n[2].integer, 7);
    expect_str(&n[3], ELK_RESP_BULK, "x", 1);
    assert_int_equal(n[4].type, ELK_RESP_NULL_BULK);

    /* Map: integer counts keys and values. */
    n = ONE("%2\r\n+first\r\n:1\r\n+second\r\n%1\r\n+x\r\n#t\r\n");
    assert_int_equal(fx.reply.count, 7);
    assert_int_equal(n[0].type, ELK_RESP_MAP);
    assert_int_equal(n[0].integer, 4);
    assert_int_equal(n[0].subtree, 6);
    assert_int_equal(n[4].type, ELK_RESP_MAP);
    assert_int_equal(n[4].subtree, 2);

    n = ONE("~3\r\n+a\r\n+b\r\n_\r\n");
    assert_int_equal(n[0].type, ELK_RESP_SET);
    assert_int_equal(n[0].integer, 3);
    assert_int_equal(n[0].subtree, 3);

    n = ONE(">3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$5\r\nhello\r\n");
    assert_int_equal(n[0].type, ELK_RESP_PUSH);
    assert_int_equal(n[0].subtree, 3);
    expect_str(&n[3], ELK_RESP_BULK, "hello", 5);

    n = ONE("%0\r\n");
    assert_int_equal(n[0].type, ELK_RESP_MAP);
    assert_int_equal(n[0].integer, 0);
    n = ONE("~0\r\n");
    assert_int_equal(n[0].type, ELK_RESP_SET);
    n = ONE(">0\r\n");
    assert_int_equal(n[0].type, ELK_RESP_PUSH);
}

static void test_attributes(void **state)
{
    (void)state;
    /* At top level: the attribute and its pairs come first, then the value. */
    const elk_resp_node_t *n = ONE("|1\r\n+ttl\r\n:3\r\n*2\r\n:1\r\n:2\r\n");
    assert_int_equal(fx.reply.count, 6);
    assert_int_equal(n[0].type, ELK_RESP_ATTRIBUTE);
    assert_int_equal(n[0].integer, 2);
    assert_int_equal(n[0].subtree, 2);
    assert_int_equal(n[3].type, ELK_RESP_ARRAY);
    assert_int_equal(n[3].subtree, 2);

    /* Inside an aggregate it is not an element: the array still has exactly 2. */
    n = ONE("*2\r\n|1\r\n+k\r\n+v\r\n:1\r\n:2\r\n");
    assert_int_equal(fx.reply.count, 6);
    assert_int_equal(n[0].integer, 2);
    assert_int_equal(n[0].subtree, 5);
    assert_int_equal(n[1].type, ELK_RESP_ATTRIBUTE);
    assert_int_equal(n[4].integer, 1);
    assert_int_equal(n[5].integer, 2);

    /* An empty attribute, and two in a row. */
    n = ONE("|0\r\n|1\r\n+a\r\n+b\r\n+OK\r\n");
    assert_int_equal(fx.reply.count, 5);
    assert_int_equal(n[4].type, ELK_RESP_SIMPLE);

    /* An attribute alone is not a reply: wait for the value it annotates. */
    setup_reader(CAP, MAXN, 8);
    assert_int_equal(PARSE("|1\r\n+a\r\n+b\r\n"), 0);
    assert_int_equal(PARSE(":7\r\n"), 1);
    assert_int_equal(fx.reply.count, 4);
    assert_int_equal(fx.reply.nodes[3].integer, 7);
}

/* ------------------------------------------------------------ errors */

typedef struct bad_case {
    const char *in;
    size_t len;
    int rc;
} bad_case_t;

#define BAD(lit, rc)                                                                               \
    {                                                                                              \
        (lit), sizeof(lit) - 1u, (rc)                                                              \
    }

static void test_malformed(void **state)
{
    (void)state;
    static const bad_case_t cases[] = {
        BAD("?\r\n", ELK_E_RESP_PROTOCOL),
        BAD("OK\r\n", ELK_E_RESP_PROTOCOL),
        BAD("\r\n", ELK_E_RESP_PROTOCOL),
        BAD("+OK\n", ELK_E_RESP_PROTOCOL), /* bare LF */
        BAD("+O\nK\r\n", ELK_E_RESP_PROTOCOL),
        BAD("+OK\rX", ELK_E_RESP_PROTOCOL), /* CR not followed by LF */
        BAD(":\r\n", ELK_E_RESP_LENGTH),
        BAD(":01\r\n", ELK_E_RESP_LENGTH), /* leading zero */
        BAD(":-0\r\n", ELK_E_RESP_LENGTH),
        BAD(":+1\r\n", ELK_E_RESP_LENGTH),
        BAD(":-\r\n", ELK_E_RESP_LENGTH),
        BAD(": 1\r\n", ELK_E_RESP_LENGTH),
        BAD(":1a\r\n", ELK_E_RESP_LENGTH),
        BAD(":9223372036854775808\r\n", ELK_E_RESP_LENGTH),  /* INT64_MAX + 1 */
        BAD(":-9223372036854775809\r\n", ELK_E_RESP_LENGTH), /* INT64_MIN - 1 */
        BAD(":99999999999999999999\r\n", ELK_E_RESP_LENGTH),
        BAD(":123456789012345678901", ELK_E_RESP_LENGTH), /* too long for any int64, no CR yet */
        BAD("$-2\r\n", ELK_E_RESP_LENGTH),
        BAD("$01\r\na\r\n", ELK_E_RESP_LENGTH),
        BAD("$+1\r\na\r\n", ELK_E_RESP_LENGTH),
        BAD("$\r\n", ELK_E_RESP_LENGTH),
        BAD("$3\r\nabcd\r\n", ELK_E_RESP_LENGTH),   /* body longer than declared */
        BAD("$3\r\nab\r\n\r\n", ELK_E_RESP_LENGTH), /* shorter: CR LF not where declared */
        BAD("$3\r\nabc\n\r", ELK_E_RESP_LENGTH),
        BAD("!-1\r\n", ELK_E_RESP_LENGTH), /* null only where RESP has one */
        BAD("=-1\r\n", ELK_E_RESP_LENGTH),
        BAD("%-1\r\n", ELK_E_RESP_LENGTH),
        BAD("~-1\r\n", ELK_E_RESP_LENGTH),
        BAD(">-1\r\n", ELK_E_RESP_LENGTH),
        BAD("|-1\r\n", ELK_E_RESP_LENGTH),
        BAD("*-2\r\n", ELK_E_RESP_LENGTH),
        BAD("*1x\r\n", ELK_E_RESP_LENGTH),
        BAD("_x\r\n", ELK_E_RESP_PROTOCOL),
        BAD("_xy", ELK_E_RESP_PROTOCOL), /* known bad before any CR arrives */
        BAD("#x\r\n", ELK_E_RESP_PROTOCOL),
        BAD("#\r\n", ELK_E_RESP_PROTOCOL),
        BAD("#tt\r\n", ELK_E_RESP_PROTOCOL),
        BAD("#T\r\n", ELK_E_RESP_PROTOCOL),
        BAD(",\r\n", ELK_E_RESP_PROTOCOL),
        BAD(",1.\r\n", ELK_E_RESP_PROTOCOL),
        BAD(",.5\r\n", ELK_E_RESP_PROTOCOL),
        BAD(",1e\r\n", ELK_E_RESP_PROTOCOL),
        BAD(",1e+\r\n", ELK_E_RESP_PROTOCOL),
        BAD(",abc\r\n", ELK_E_RESP_PROTOCOL),
        BAD(",infinity\r\n", ELK_E_RESP_PROTOCOL),
        BAD(",-nan\r\n", ELK_E_RESP_PROTOCOL),
        BAD(",1.5 \r\n", ELK_E_RESP_PROTOCOL),
        BAD("(\r\n", ELK_E_RESP_PROTOCOL),
        BAD("(-\r\n", ELK_E_RESP_PROTOCOL),
        BAD("(12a\r\n", ELK_E_RESP_PROTOCOL),
        BAD("=3\r\ntxt\r\n", ELK_E_RESP_PROTOCOL),   /* no room for "fmt:" */
        BAD("=5\r\ntxt-x\r\n", ELK_E_RESP_PROTOCOL), /* no ':' after the format */
        BAD("=5\r\nt t:x\r\n", ELK_E_RESP_PROTOCOL),
        BAD("*2\r\n:1\r\n?\r\n", ELK_E_RESP_PROTOCOL), /* deep inside an aggregate */
        BAD("*1\r\n$2\r\nab\r\r", ELK_E_RESP_LENGTH),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setup_reader(CAP, MAXN, 8);
        int rc = parse_all(cases[i].in, cases[i].len);
        if (rc != cases[i].rc) {
            print_error("case %zu: got %d want %d\n", i, rc, cases[i].rc);
        }
        assert_int_equal(rc, cases[i].rc);
        /* Sticky: the stream cannot be trusted any more, whatever comes next. */
        assert_int_equal(elk_resp_reader_feed(&fx.r, (const uint8_t *)"+OK\r\n", 5), ELK_OK);
        assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), cases[i].rc);
        /* Reset makes it usable again. */
        elk_resp_reader_reset(&fx.r);
        assert_int_equal(PARSE("+OK\r\n"), 1);
        assert_true(elk_resp_str_eq(&fx.reply.nodes[0], "OK"));
    }
}

/* ------------------------------------------------------------ limits */

static void test_depth_limit(void **state)
{
    (void)state;
    setup_reader(CAP, MAXN, 2);
    assert_int_equal(PARSE("*1\r\n*1\r\n:1\r\n"), 1);
    elk_resp_reader_release(&fx.r);
    assert_int_equal(PARSE("*1\r\n*1\r\n*0\r\n"), ELK_E_RESP_TOO_DEEP);

    setup_reader(CAP, MAXN, 1);
    assert_int_equal(PARSE("%1\r\n+a\r\n~1\r\n"), ELK_E_RESP_TOO_DEEP);

    /* Hostile nesting far beyond any limit fails at the first level too deep. */
    setup_reader(CAP, MAXN, ELK_RESP_READER_MAX_DEPTH + 100);
    char deep[4 * 40];
    for (int i = 0; i < 40; i++) {
        memcpy(deep + 4 * i, "*1\r\n", 4);
    }
    assert_int_equal(elk_resp_reader_feed(&fx.r, (const uint8_t *)deep, sizeof deep), ELK_OK);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), ELK_E_RESP_TOO_DEEP);
    assert_int_equal(fx.r.depth, ELK_RESP_READER_MAX_DEPTH);

    /* Attributes count as nesting. */
    setup_reader(CAP, MAXN, 1);
    assert_int_equal(PARSE("*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n"), ELK_E_RESP_TOO_DEEP);
}

static void test_node_limit(void **state)
{
    (void)state;
    setup_reader(CAP, 3, 8);
    assert_int_equal(PARSE("*2\r\n:1\r\n:2\r\n"), 1);
    elk_resp_reader_release(&fx.r);
    /* Known from the header alone: 1 + 3 nodes cannot fit in 3. */
    assert_int_equal(PARSE("*3\r\n"), ELK_E_RESP_TOO_MANY_NODES);

    setup_reader(CAP, 4, 8);
    assert_int_equal(PARSE("%2\r\n"), ELK_E_RESP_TOO_MANY_NODES);

    /* Nested: each header fits on its own, the total does not. */
    setup_reader(CAP, 4, 8);
    assert_int_equal(PARSE("*2\r\n*2\r\n:1\r\n:2\r\n:3\r\n"), ELK_E_RESP_TOO_MANY_NODES);

    setup_reader(CAP, 1, 8);
    assert_int_equal(PARSE("*-1\r\n"), 1);
    elk_resp_reader_release(&fx.r);
    assert_int_equal(PARSE("*9223372036854775807\r\n"), ELK_E_RESP_TOO_MANY_NODES);
    setup_reader(CAP, MAXN, 8);
    assert_int_equal(PARSE("%9223372036854775807\r\n"), ELK_E_RESP_TOO_MANY_NODES);
}

static void test_too_large(void **state)
{
    (void)state;
    /* Absurd bulk lengths fail from the header, before any body byte. */
    setup_reader(64, MAXN, 8);
    assert_int_equal(PARSE("$9999999999999\r\n"), ELK_E_RESP_TOO_LARGE);
    setup_reader(64, MAXN, 8);
    assert_int_equal(PARSE("$9223372036854775807\r\n"), ELK_E_RESP_TOO_LARGE);
    setup_reader(64, MAXN, 8);
    assert_int_equal(PARSE("$99999999999999999999\r\n"), ELK_E_RESP_LENGTH);
    /* A bulk that ends exactly at cap fits; one byte more does not. */
    setup_reader(15, MAXN, 8);
    assert_int_equal(PARSE("$9\r\n123456789\r\n"), 1); /* 15 bytes */
    setup_reader(16, MAXN, 8);
    assert_int_equal(PARSE("*1\r\n$6\r\nabcdef\r\n"), 1); /* 16 bytes */
    setup_reader(16, MAXN, 8);
    assert_int_equal(PARSE("$10\r\n"), ELK_E_RESP_TOO_LARGE);
    /* Inside an aggregate, what came before counts too. */
    setup_reader(16, MAXN, 8);
    assert_int_equal(PARSE("*1\r\n$7\r\n"), ELK_E_RESP_TOO_LARGE);
    /* An element count that cannot fit even at 3 bytes an element. */
    setup_reader(16, MAXN, 8);
    assert_int_equal(PARSE("*5\r\n"), ELK_E_RESP_TOO_LARGE);
    setup_reader(16, MAXN, 8);
    assert_int_equal(PARSE("*4\r\n"), 0);

    /* An endless simple string: need more until the buffer is full, then too large. */
    setup_reader(32, MAXN, 8);
    assert_int_equal(PARSE("+"), 0);
    for (int i = 0; i < 30; i++) {
        assert_int_equal(PARSE("x"), 0);
        assert_int_equal(fx.r.scan, fx.r.len); /* resumes where it stopped */
    }
    assert_int_equal(PARSE("x"), ELK_E_RESP_TOO_LARGE);
    assert_int_equal(fx.r.len, 32);
    /* A CR in the last byte is no excuse: its LF cannot fit. */
    setup_reader(8, MAXN, 8);
    assert_int_equal(PARSE("+abcdef\r"), ELK_E_RESP_TOO_LARGE);
    /* feed itself refuses bytes beyond the free space, taking none of them. */
    setup_reader(8, MAXN, 8);
    assert_int_equal(elk_resp_reader_feed(&fx.r, (const uint8_t *)"+abcdefgh", 9),
                     ELK_E_RESP_TOO_LARGE);
    assert_int_equal(fx.r.len, 0);
    /* ... counting what it already holds: 5 unread bytes leave room for 3, not 8. */
    setup_reader(8, MAXN, 8);
    assert_int_equal(elk_resp_reader_feed(&fx.r, (const uint8_t *)"+abcd", 5), ELK_OK);
    assert_int_equal(elk_resp_reader_feed(&fx.r, (const uint8_t *)"efgh", 4), ELK_E_RESP_TOO_LARGE);
    assert_int_equal(fx.r.len, 5);
    assert_int_equal(elk_resp_reader_feed(&fx.r, (const uint8_t *)"e\r\n", 3), ELK_OK);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 1);
}

/* ------------------------------------------------------------ stream handling */

static void test_pipelined_and_release(void **state)
{
    (void)state;
    setup_reader(64, MAXN, 8);
    static const char in[] = "+OK\r\n:42\r\n$3\r\nabc\r\n*1\r\n$-1\r\n-ERR x\r\n+par";
    assert_int_equal(elk_resp_reader_feed(&fx.r, (const uint8_t *)in, sizeof in - 1), ELK_OK);

    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 1);
    assert_true(elk_resp_str_eq(&fx.reply.nodes[0], "OK"));
    /* The reply must be released before the next one. */
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), ELK_E_STATE);
    elk_resp_reader_release(&fx.r);
    /* Asking for room moves the rest to the front. */
    size_t avail = 0;
    assert_ptr_equal(elk_resp_reader_space(&fx.r, &avail), fx.buf + sizeof in - 1 - 5);
    assert_int_equal(avail, 64 - (sizeof in - 1 - 5));
    assert_int_equal(fx.r.len, sizeof in - 1 - 5);
    assert_memory_equal(fx.buf, in + 5, fx.r.len);

    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 1);
    assert_int_equal(fx.reply.nodes[0].integer, 42);
    elk_resp_reader_release(&fx.r);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 1);
    assert_true(elk_resp_str_eq(&fx.reply.nodes[0], "abc"));
    elk_resp_reader_release(&fx.r);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 1);
    assert_int_equal(fx.reply.count, 2);
    assert_int_equal(fx.reply.nodes[1].type, ELK_RESP_NULL_BULK);
    elk_resp_reader_release(&fx.r);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 1);
    assert_true(elk_resp_is_error(&fx.reply.nodes[0]));
    elk_resp_reader_release(&fx.r);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 0);
    assert_int_equal(fx.r.len - fx.r.start, 4);
    assert_int_equal(PARSE("tial\r\n"), 1);
    assert_true(elk_resp_str_eq(&fx.reply.nodes[0], "partial"));
    elk_resp_reader_release(&fx.r);
    assert_int_equal(fx.r.len, 0);
    /* Releasing twice, or with nothing out, changes nothing. */
    elk_resp_reader_release(&fx.r);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 0);
}

static void test_space_commit(void **state)
{
    (void)state;
    setup_reader(16, MAXN, 8);
    size_t avail = 0;
    uint8_t *p = elk_resp_reader_space(&fx.r, &avail);
    assert_ptr_equal(p, fx.buf);
    assert_int_equal(avail, 16);
    memcpy(p, ":1\r\n:", 5);
    assert_int_equal(elk_resp_reader_commit(&fx.r, 5), ELK_OK);
    p = elk_resp_reader_space(&fx.r, &avail);
    assert_ptr_equal(p, fx.buf + 5);
    assert_int_equal(avail, 11);
    assert_int_equal(elk_resp_reader_commit(&fx.r, 12), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 1);
    elk_resp_reader_release(&fx.r);
    p = elk_resp_reader_space(&fx.r, &avail);
    assert_int_equal(avail, 15);
    memcpy(p, "2\r\n", 3);
    assert_int_equal(elk_resp_reader_commit(&fx.r, 3), ELK_OK);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 1);
    assert_int_equal(fx.reply.nodes[0].integer, 2);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    elk_resp_reader_t r;
    uint8_t buf[8];
    elk_resp_node_t nodes[2];
    elk_resp_reply_t reply;
    size_t avail = 99;
    assert_int_equal(elk_resp_reader_init(NULL, buf, 8, nodes, 2, 2), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_reader_init(&r, NULL, 8, nodes, 2, 2), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_reader_init(&r, buf, 0, nodes, 2, 2), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_reader_init(&r, buf, 8, NULL, 2, 2), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_reader_init(&r, buf, 8, nodes, 0, 2), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_reader_init(&r, buf, 8, nodes, 2, 0), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_reader_init(&r, buf, 8, nodes, 2, 1000), ELK_OK);
    assert_int_equal(r.max_depth, ELK_RESP_READER_MAX_DEPTH);
    assert_int_equal(elk_resp_reader_next(&r, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_reader_next(NULL, &reply), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_reader_feed(&r, NULL, 1), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_reader_feed(NULL, buf, 1), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_reader_commit(NULL, 1), ELK_E_INVALID_ARG);
    assert_null(elk_resp_reader_space(NULL, &avail));
    assert_int_equal(avail, 0);
    elk_resp_reader_reset(NULL);
    elk_resp_reader_release(NULL);
    assert_false(elk_resp_is_error(NULL));
    assert_false(elk_resp_str_eq(NULL, "x"));
    assert_false(elk_resp_str_eq(&nodes[0], NULL));
}

/* Released bytes are reclaimed lazily: a half-parsed reply moves with its views, and a
 * buffer that is full only because of released replies is not "too large". */
static void test_lazy_compaction(void **state)
{
    (void)state;
    setup_reader(24, MAXN, 8);
    /* A 9-byte reply, then one cut inside its second element's body: 24 bytes, full. */
    assert_int_equal(PARSE(":123456\r\n*2\r\n+ab\r\n$4\r\nxy"), 1);
    assert_int_equal(fx.reply.nodes[0].integer, 123456);
    elk_resp_reader_release(&fx.r);
    assert_int_equal(fx.r.len, 24);
    /* Parses "*2", "+ab", "$4", finds the buffer full and reclaims the first 9 bytes,
     * moving the views of "+ab" and of the bulk with them. */
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 0);
    assert_int_equal(fx.r.len, 15);
    assert_int_equal(fx.r.start, 0);
    assert_int_equal(PARSE("zw\r\n"), 1);
    assert_int_equal(fx.reply.count, 3);
    assert_true(elk_resp_str_eq(&fx.reply.nodes[1], "ab"));
    assert_true(elk_resp_str_eq(&fx.reply.nodes[2], "xyzw"));
    assert_ptr_equal(fx.reply.nodes[1].str, fx.buf + 5);

    /* feed reclaims room too when the bytes would not fit otherwise, mid-reply. */
    setup_reader(32, MAXN, 8);
    assert_int_equal(PARSE(":123456\r\n*2\r\n+ab\r\n$4\r\nxy"), 1);
    elk_resp_reader_release(&fx.r);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 0);
    assert_int_equal(fx.r.len, 24);
    assert_int_equal(PARSE("zw\r\n+123456\r\n"), 1); /* 13 bytes > 8 free: moves first */
    assert_true(elk_resp_str_eq(&fx.reply.nodes[2], "xyzw"));
    assert_ptr_equal(fx.reply.nodes[2].str, fx.buf + 13);
    elk_resp_reader_release(&fx.r);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 1);
    assert_true(elk_resp_str_eq(&fx.reply.nodes[0], "123456"));

    /* Full buffer, but the unfinished reply starts after a released one: no error. */
    setup_reader(16, MAXN, 8);
    assert_int_equal(PARSE("+OK\r\n+0123456789"), 1);
    elk_resp_reader_release(&fx.r);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 0);
    assert_int_equal(fx.r.len, 11); /* next() moved it to the front itself */
    assert_int_equal(PARSE("\r\n"), 1);
    assert_true(elk_resp_str_eq(&fx.reply.nodes[0], "0123456789"));
    /* The size limit counts from the reply's own start, not from offset 0. */
    setup_reader(16, MAXN, 8);
    assert_int_equal(PARSE("+OK\r\n$9\r\n"), 1);
    elk_resp_reader_release(&fx.r);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), 0); /* 4 + 9 + 2 fits in 16 */
    setup_reader(16, MAXN, 8);
    assert_int_equal(PARSE("+OK\r\n$11\r\n"), 1);
    elk_resp_reader_release(&fx.r);
    assert_int_equal(elk_resp_reader_next(&fx.r, &fx.reply), ELK_E_RESP_TOO_LARGE);
}

/* ------------------------------------------------------------ fragmentation */

/* A stream of replies of every type, as a lock client sees them (and some more). */
static const char stream[] = "+OK\r\n"
                             ":1\r\n"
                             "$-1\r\n"
                             "$32\r\n0123456789abcdef0123456789abcdef\r\n"
                             "-NOSCRIPT No matching script. Please use EVAL.\r\n"
                             "*3\r\n:7\r\n$-1\r\n*2\r\n+a\r\n$0\r\n\r\n"
                             "*-1\r\n"
                             "_\r\n"
                             ",3.25e-2\r\n"
                             "#t\r\n"
                             "!10\r\nERR failed\r\n"
                             "=9\r\ntxt:a\r\nb\r\r\n"
                             "(-123456789012345678901234567890\r\n"
                             "%2\r\n$4\r\nrole\r\n+master\r\n+id\r\n:-9223372036854775808\r\n"
                             "~2\r\n:1\r\n:2\r\n"
                             "|1\r\n+ttl\r\n:30\r\n>3\r\n+message\r\n+ch\r\n$4\r\n\r\n\r\n\r\n"
                             "*2\r\n|0\r\n%0\r\n~0\r\n"
                             ":9223372036854775807\r\n";

/* One line per reply: every field that a reply carries, strings in hex. */
static size_t transcript(const elk_resp_reply_t *rep, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < rep->count; i++) {
        const elk_resp_node_t *n = &rep->nodes[i];
        o += (size_t)snprintf(out + o, cap - o, "[%d %lld %u %.3s ", n->type, (long long)n->integer,
                              (unsigned)n->subtree, n->type == ELK_RESP_VERBATIM ? n->format : "-");
        for (uint32_t k = 0; k < n->len && o + 3 < cap; k++) {
            o += (size_t)snprintf(out + o, cap - o, "%02x", n->str[k]);
        }
        o += (size_t)snprintf(out + o, cap - o, "]");
        assert_true(o < cap);
    }
    o += (size_t)snprintf(out + o, cap - o, "\n");
    return o;
}

/* Parse data fed in pieces whose ends are cut[0..ncut) (ascending), appending each reply's
 * transcript to out; returns the final return code of next(). */
static int run_split(const char *data, size_t len, const size_t *cut, size_t ncut, char *out,
                     size_t cap)
{
    size_t o = 0;
    size_t from = 0;
    int rc = 0;
    setup_reader(CAP, MAXN, 8);
    out[0] = 0;
    for (size_t c = 0; c <= ncut; c++) {
        size_t to = c < ncut ? cut[c] : len;
        assert_int_equal(elk_resp_reader_feed(&fx.r, (const uint8_t *)data + from, to - from),
                         ELK_OK);
        from = to;
        while ((rc = elk_resp_reader_next(&fx.r, &fx.reply)) == 1) {
            o += transcript(&fx.reply, out + o, cap - o);
            elk_resp_reader_release(&fx.r);
        }
        if (rc < 0) {
            break;
        }
    }
    return rc;
}

static char whole_out[8192];
static char split_out[8192];

static void test_every_split_point(void **state)
{
    (void)state;
    size_t len = sizeof stream - 1;
    assert_int_equal(run_split(stream, len, NULL, 0, whole_out, sizeof whole_out), 0);
    /* Every reply of the stream came out. */
    size_t lines = 0;
    for (const char *p = whole_out; *p; p++) {
        lines += *p == '\n';
    }
    assert_int_equal(lines, 18);
    assert_true(fx.r.len == 0);

    for (size_t a = 1; a < len; a++) {
        size_t cut[1] = {a};
        assert_int_equal(run_split(stream, len, cut, 1, split_out, sizeof split_out), 0);
        assert_string_equal(split_out, whole_out);
    }
    /* Two cuts close together: a piece of one to eight bytes anywhere in the stream. */
    for (size_t a = 1; a < len; a++) {
        for (size_t w = 1; w <= 8 && a + w < len; w++) {
            size_t cut[2] = {a, a + w};
            assert_int_equal(run_split(stream, len, cut, 2, split_out, sizeof split_out), 0);
            assert_string_equal(split_out, whole_out);
        }
    }
}

static void test_byte_at_a_time(void **state)
{
    (void)state;
    static size_t cut[sizeof stream];
    size_t len = sizeof stream - 1;
    assert_int_equal(run_split(stream, len, NULL, 0, whole_out, sizeof whole_out), 0);
    for (size_t i = 0; i + 1 < len; i++) {
        cut[i] = i + 1;
    }
    assert_int_equal(run_split(stream, len, cut, len - 1, split_out, sizeof split_out), 0);
    assert_string_equal(split_out, whole_out);
}

/* Errors too come out the same however the bytes arrive. */
static void test_errors_same_when_split(void **state)
{
    (void)state;
    static const bad_case_t cases[] = {
        BAD("+OK\r\n*2\r\n:1\r\n:01\r\n", ELK_E_RESP_LENGTH),
        BAD("+OK\r\n$3\r\nabcd\r\n", ELK_E_RESP_LENGTH),
        BAD(":1\r\n+a\nb\r\n", ELK_E_RESP_PROTOCOL),
        BAD(":1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
            ELK_E_RESP_TOO_DEEP),
        BAD("+OK\r\n$999999\r\n", ELK_E_RESP_TOO_LARGE),
        BAD("#t\r\n:12345678901234567890123\r\n", ELK_E_RESP_LENGTH),
    };
    static size_t cut[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = cases[i].len;
        assert_int_equal(run_split(cases[i].in, len, NULL, 0, whole_out, sizeof whole_out),
                         cases[i].rc);
        for (size_t a = 1; a < len; a++) {
            cut[0] = a;
            assert_int_equal(run_split(cases[i].in, len, cut, 1, split_out, sizeof split_out),
                             cases[i].rc);
            assert_string_equal(split_out, whole_out);
        }
        for (size_t k = 0; k + 1 < len; k++) {
            cut[k] = k + 1;
        }
        assert_int_equal(run_split(cases[i].in, len, cut, len - 1, split_out, sizeof split_out),
                         cases[i].rc);
        assert_string_equal(split_out, whole_out);
    }
}

/* Bounded work: fed byte by byte, the CR LF search never goes back over what it saw. */
static void test_scan_never_restarts(void **state)
{
    (void)state;
    setup_reader(CAP, MAXN, 8);
    assert_int_equal(PARSE("*2\r\n+"), 0);
    for (int i = 0; i < 100; i++) {
        size_t before = fx.r.scan;
        assert_int_equal(PARSE("y"), 0);
        assert_int_equal(fx.r.scan, before + 1);
        assert_int_equal(fx.r.pos, 4); /* still the start of the element */
    }
    assert_int_equal(PARSE("\r"), 0);
    assert_int_equal(fx.r.scan, fx.r.len - 1); /* parked on the CR until its LF */
    assert_int_equal(PARSE("\n:5\r\n"), 1);
    assert_int_equal(fx.reply.nodes[1].len, 100);
    /* A bulk body is waited for by length, not scanned. */
    elk_resp_reader_release(&fx.r);
    assert_int_equal(PARSE("$200\r\n"), 0);
    for (int i = 0; i < 200; i++) {
        assert_int_equal(PARSE("\r"), 0);
        assert_true(fx.r.in_body);
    }
    assert_int_equal(PARSE("\r\n"), 1);
    assert_int_equal(fx.reply.nodes[0].len, 200);
}

int main(void)
{
    return ELK_RUN_TESTS(
        test_simple_error_integer, test_integer_every_length, test_line_every_length,
        test_bulk_and_nulls, test_resp3_scalars, test_aggregates, test_attributes, test_malformed,
        test_depth_limit, test_node_limit, test_too_large, test_pipelined_and_release,
        test_space_commit, test_bad_arguments, test_lazy_compaction, test_every_split_point,
        test_byte_at_a_time, test_errors_same_when_split, test_scan_never_restarts);
}
