/*
 * The decoder's fast path (64-bit hosts: whole replies recognised straight from the
 * buffered bytes) must give exactly what the general state machine gives. The fast path
 * only runs when a whole reply is buffered, so parsing a stream from one buffer and
 * parsing it byte by byte (which always takes the general path) must agree on every
 * reply, every node and the final result, valid input or not.
 *
 *   1. edge cases next to the fast path's shortcuts, each alone and padded by pipelined
 *      replies so the fast path sees it;
 *   2. random streams built from valid and broken pieces, with bit flips, over several
 *      buffer sizes, node limits and depths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "elk/resp.h"

/* Everything a caller can see of a stream's replies, flattened for comparison. */
typedef struct transcript {
    uint8_t bytes[1u << 16];
    size_t len;
    int rc;         /* 0: stream consumed; < 0: the decoder's error */
    size_t replies;
} transcript_t;

static void tr_put(transcript_t *t, const void *p, size_t n)
{
    assert_true(t->len + n <= sizeof t->bytes);
    memcpy(t->bytes + t->len, p, n);
    t->len += n;
}

static void tr_reply(transcript_t *t, const elk_resp_reply_t *rep)
{
    tr_put(t, &rep->count, sizeof rep->count);
    for (size_t i = 0; i < rep->count; i++) {
        const elk_resp_node_t *n = &rep->nodes[i];
        tr_put(t, &n->type, sizeof n->type);
        tr_put(t, &n->integer, sizeof n->integer);
        tr_put(t, &n->subtree, sizeof n->subtree);
        tr_put(t, &n->len, sizeof n->len);
        tr_put(t, n->format, sizeof n->format);
        if (n->str != NULL) {
            tr_put(t, n->str, n->len);
        } else {
            tr_put(t, "-", 1);
        }
    }
    t->replies++;
}

/* Feed s in steps of `step` bytes (0: as much as fits at once) and record every reply. */
static void decode(const uint8_t *s, size_t len, size_t cap, size_t max_nodes, size_t depth,
                   size_t step, transcript_t *t)
{
    static uint8_t buf[8192];
    static elk_resp_node_t nodes[64];
    elk_resp_reader_t r;
    elk_resp_reply_t rep;
    size_t off = 0;
    int rc;
    assert_true(cap <= sizeof buf && max_nodes <= 64);
    assert_int_equal(elk_resp_reader_init(&r, buf, cap, nodes, max_nodes, depth), ELK_OK);
    t->len = 0;
    t->replies = 0;
    for (;;) {
        while ((rc = elk_resp_reader_next(&r, &rep)) == 1) {
            tr_reply(t, &rep);
            elk_resp_reader_release(&r);
        }
        if (rc < 0 || off == len) {
            break;
        }
        size_t avail = 0;
        uint8_t *space = elk_resp_reader_space(&r, &avail);
        size_t k = step != 0u ? step : len - off;
        k = k < len - off ? k : len - off;
        k = k < avail ? k : avail;
        assert_non_null(space);
        assert_true(k > 0u);
        memcpy(space, s + off, k);
        assert_int_equal(elk_resp_reader_commit(&r, k), ELK_OK);
        off += k;
    }
    t->rc = rc;
}

static transcript_t whole, bytewise;

/* Decode both ways and require identical transcripts; returns the whole-buffer one. */
static const transcript_t *agree(const uint8_t *s, size_t len, size_t cap, size_t max_nodes,
                                 size_t depth)
{
    decode(s, len, cap, max_nodes, depth, 0, &whole);
    decode(s, len, cap, max_nodes, depth, 1, &bytewise);
    if (whole.rc != bytewise.rc || whole.len != bytewise.len ||
        memcmp(whole.bytes, bytewise.bytes, whole.len) != 0) {
        print_error("whole/bytewise differ (rc %d/%d, %zu/%zu replies) on: %.*s\n", whole.rc,
                    bytewise.rc, whole.replies, bytewise.replies, (int)len, (const char *)s);
        fail();
    }
    return &whole;
}

/* Pieces that sit right next to a fast-path decision: digit counts around 1, 2, 8 and 16,
 * leading zeros, signs, missing or bare CR/LF, null forms, bulk bodies one byte off. */
static const char *const pieces[] = {
    "+OK\r\n", "+O\r\n", "+OK\r", "+OK\n", "+OKK\r\n", "+\r\n", "-ERR x\r\n",
    "-NOSCRIPT No matching script. Please use EVAL.\r\n", ":0\r\n", ":1\r\n", ":9\r\n", ":a\r\n",
    ":-\r\n", ":-1\r\n", ":-0\r\n", ":00\r\n", ":01\r\n", ":10\r\n", ":42\r\n", ":1234567\r\n",
    ":12345678\r\n", ":123456789\r\n", ":1234567890123456\r\n", ":12345678901234567\r\n",
    ":0123456789\r\n", ":9223372036854775807\r\n", ":9223372036854775808\r\n", ":1\r", ":1\n",
    ":\r\n", ":1x\r\n", "$-1\r\n", "$-2\r\n", "$-1\r", "$-10\r\n", "$0\r\n\r\n", "$1\r\nx\r\n",
    "$2\r\nxy\r\n", "$32\r\n0123456789abcdef0123456789abcdef\r\n", "$3\r\nab\r\n",
    "$3\r\nabcd\r\n", "$03\r\nabc\r\n", "$10\r\n0123456789\r\n", "$100\r\n", "*0\r\n", "*-1\r\n",
    "*1\r\n", "*2\r\n", "*3\r\n", "*10\r\n", "*01\r\n", "_\r\n", "#t\r\n", ",1.5\r\n", "%1\r\n",
    "~1\r\n", ">1\r\n", "|1\r\n", "(123\r\n", "=7\r\ntxt:abc\r\n", "\r\n", "x", "\r", "\n",
    "*2\r\n:1\r\n:12345678\r\n", "*2\r\n$-1\r\n+OK\r\n", "*1\r\n*1\r\n:1\r\n",
};
#define N_PIECES (sizeof pieces / sizeof pieces[0])

static void test_each_piece_alone_and_padded(void **state)
{
    (void)state;
    static const char pad[] = "+OK\r\n:1\r\n$-1\r\n";
    uint8_t s[256];
    for (size_t i = 0; i < N_PIECES; i++) {
        size_t n = strlen(pieces[i]);
        (void)agree((const uint8_t *)pieces[i], n, 4096, 64, 4);
        /* Replies before and after: the piece is then parsed from a full buffer. */
        memcpy(s, pad, sizeof pad - 1u);
        memcpy(s + sizeof pad - 1u, pieces[i], n);
        memcpy(s + sizeof pad - 1u + n, pad, sizeof pad - 1u);
        (void)agree(s, n + 2u * (sizeof pad - 1u), 4096, 64, 4);
    }
}

/* Values the fast path computes itself, checked against the written numbers. */
static void test_fast_path_values(void **state)
{
    (void)state;
    static const char s[] = ":1234567890123456\r\n:0\r\n:-5\r\n$-1\r\n$3\r\nabc\r\n"
                            "*2\r\n:1\r\n:98765432\r\n+OK\r\n-ERR no\r\n:+1\r\n";
    const transcript_t *t = agree((const uint8_t *)s, sizeof s - 1u, 4096, 64, 4);
    /* ":+1" is not canonical: everything before it decodes, then the stream is refused. */
    assert_int_equal(t->replies, 8);
    assert_true(t->rc < 0);

    static uint8_t buf[256];
    static elk_resp_node_t nodes[8];
    elk_resp_reader_t r;
    elk_resp_reply_t rep;
    assert_int_equal(elk_resp_reader_init(&r, buf, sizeof buf, nodes, 8, 4), ELK_OK);
    assert_int_equal(elk_resp_reader_feed(&r, (const uint8_t *)s, sizeof s - 1u), ELK_OK);
    static const int64_t ints[] = {1234567890123456, 0, -5};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(elk_resp_reader_next(&r, &rep), 1);
        assert_int_equal(rep.nodes[0].type, ELK_RESP_INTEGER);
        assert_int_equal(rep.nodes[0].integer, ints[i]);
        elk_resp_reader_release(&r);
    }
    assert_int_equal(elk_resp_reader_next(&r, &rep), 1);
    assert_int_equal(rep.nodes[0].type, ELK_RESP_NULL_BULK);
    elk_resp_reader_release(&r);
    assert_int_equal(elk_resp_reader_next(&r, &rep), 1);
    assert_int_equal(rep.nodes[0].type, ELK_RESP_BULK);
    assert_int_equal(rep.nodes[0].len, 3);
    assert_memory_equal(rep.nodes[0].str, "abc", 3);
    elk_resp_reader_release(&r);
    assert_int_equal(elk_resp_reader_next(&r, &rep), 1);
    assert_int_equal(rep.count, 3);
    assert_int_equal(rep.nodes[0].type, ELK_RESP_ARRAY);
    assert_int_equal(rep.nodes[0].subtree, 2);
    assert_int_equal(rep.nodes[2].integer, 98765432);
    elk_resp_reader_release(&r);
    assert_int_equal(elk_resp_reader_next(&r, &rep), 1);
    assert_int_equal(rep.nodes[0].type, ELK_RESP_SIMPLE);
    assert_int_equal(rep.nodes[0].len, 2);
    elk_resp_reader_release(&r);
    assert_int_equal(elk_resp_reader_next(&r, &rep), 1);
    assert_int_equal(rep.nodes[0].type, ELK_RESP_ERROR);
    assert_memory_equal(rep.nodes[0].str, "ERR no", 6);
    elk_resp_reader_release(&r);
    assert_true(elk_resp_reader_next(&r, &rep) < 0);
}

static uint64_t rng_state = 88172645463325252u;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

static void test_random_streams_agree(void **state)
{
    (void)state;
    static const size_t caps[] = {7, 16, 64, 300, 4096};
    static const size_t max_nodes[] = {1, 2, 4, 16, 64};
    uint8_t s[1024];
    size_t valid[N_PIECES];
    size_t n_valid = 0;
    size_t errors = 0, replies = 0;
    /* Mostly pieces that are whole replies on their own, so most streams run long. */
    for (size_t i = 0; i < N_PIECES; i++) {
        decode((const uint8_t *)pieces[i], strlen(pieces[i]), 4096, 64, 4, 0, &whole);
        if (whole.rc == 0 && whole.replies == 1u) {
            valid[n_valid++] = i;
        }
    }
    assert_true(n_valid > 20u && n_valid < N_PIECES);
    for (int it = 0; it < 20000; it++) {
        size_t len = 0;
        int count = 1 + (int)(rng() % 12u);
        for (int k = 0; k < count; k++) {
            const char *p = rng() % 8u != 0u ? pieces[valid[rng() % n_valid]]
                                               : pieces[rng() % N_PIECES];
            size_t n = strlen(p);
            if (len + n > sizeof s) {
                break;
            }
            memcpy(s + len, p, n);
            len += n;
        }
        if (rng() % 8u == 0u && len != 0u) {
            s[rng() % len] ^= (uint8_t)(1u << (rng() % 8u));
        }
        const transcript_t *t = agree(s, len, caps[rng() % 5u], max_nodes[rng() % 5u],
                                      1u + rng() % 4u);
        errors += t->rc < 0 ? 1u : 0u;
        replies += t->replies;
    }
    print_message("%zu streams refused, %zu replies compared\n", errors, replies);
    /* The mix must exercise both outcomes, or the comparison proves little. */
    assert_true(errors > 1000u);
    assert_true(replies > 20000u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_piece_alone_and_padded),
        cmocka_unit_test(test_fast_path_values),
        cmocka_unit_test(test_random_streams_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
