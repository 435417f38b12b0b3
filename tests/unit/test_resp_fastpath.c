/* SPDX-License-Identifier: MIT */
/*
 * The decoder's fast path (64-bit hosts: whole replies recognised straight from the
 * buffered bytes) must give exactly what the general state machine gives. The fast path
 * only runs when a whole reply is buffered, so parsing a stream from one buffer and
 * parsing it byte by byte (which always takes the general path) must agree on every
 * reply, every node and the final result, valid input or not. The comparison is the
 * fuzz target's own (linked in); this test feeds it chosen streams.
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
#include "test_main.h"

#include "elk/resp.h"

/* The fuzz target's check (tests/fuzz/fuzz_resp_decode.c, linked in): the stream parsed
 * as far as the buffer allows, in seeded pieces and byte by byte must give the same
 * replies, node for node, and the same end; every reply a well-formed tree inside the
 * buffer. It aborts, naming the disagreement, on any difference. */
size_t fuzz_resp_decode_check(const uint8_t *in, size_t size, int *rc);

/* Its parameter bytes: buffer capacity index (7, 16, 64, 300, 1024, 4096, ...), node limit
 * index (1, 2, 4, 16, 64, ...), depth 1..16. Returns the replies; *rc the final code. */
static size_t agree(const uint8_t *s, size_t len, unsigned cap_i, unsigned nodes_i, unsigned depth,
                    int *rc)
{
    static uint8_t in[4 + 4096];
    assert_true(len <= sizeof in - 4u && cap_i < 8u && nodes_i < 8u && depth >= 1u && depth <= 16u);
    in[0] = (uint8_t)(cap_i | ((depth - 1u) << 3));
    in[1] = (uint8_t)nodes_i;
    in[2] = (uint8_t)len;
    in[3] = (uint8_t)(len >> 8);
    memcpy(in + 4, s, len);
    return fuzz_resp_decode_check(in, len + 4u, rc);
}

#define CAP_4096 5u
#define NODES_64 4u

/* Pieces that sit right next to a fast-path decision: digit counts around 1, 2, 8 and 16,
 * leading zeros, signs, missing or bare CR/LF, null forms, bulk bodies one byte off. */
static const char *const pieces[] = {
    "+OK\r\n",
    "+O\r\n",
    "+OK\r",
    "+OK\n",
    "+OKK\r\n",
    "+\r\n",
    "-ERR x\r\n",
    "-NOSCRIPT No matching script. Please use EVAL.\r\n",
    ":0\r\n",
    ":1\r\n",
    ":9\r\n",
    ":a\r\n",
    ":-\r\n",
    ":-1\r\n",
    ":-0\r\n",
    ":00\r\n",
    ":01\r\n",
    ":10\r\n",
    ":42\r\n",
    ":1234567\r\n",
    ":12345678\r\n",
    ":123456789\r\n",
    ":1234567890123456\r\n",
    ":12345678901234567\r\n",
    ":0123456789\r\n",
    ":9223372036854775807\r\n",
    ":9223372036854775808\r\n",
    ":1\r",
    ":1\n",
    ":\r\n",
    ":1x\r\n",
    "$-1\r\n",
    "$-2\r\n",
    "$-1\r",
    "$-10\r\n",
    "$0\r\n\r\n",
    "$1\r\nx\r\n",
    "$2\r\nxy\r\n",
    "$32\r\n0123456789abcdef0123456789abcdef\r\n",
    "$3\r\nab\r\n",
    "$3\r\nabcd\r\n",
    "$03\r\nabc\r\n",
    "$10\r\n0123456789\r\n",
    "$100\r\n",
    "*0\r\n",
    "*-1\r\n",
    "*1\r\n",
    "*2\r\n",
    "*3\r\n",
    "*10\r\n",
    "*01\r\n",
    "_\r\n",
    "#t\r\n",
    ",1.5\r\n",
    "%1\r\n",
    "~1\r\n",
    ">1\r\n",
    "|1\r\n",
    "(123\r\n",
    "=7\r\ntxt:abc\r\n",
    "\r\n",
    "x",
    "\r",
    "\n",
    "*2\r\n:1\r\n:12345678\r\n",
    "*2\r\n$-1\r\n+OK\r\n",
    "*1\r\n*1\r\n:1\r\n",
};
#define N_PIECES (sizeof pieces / sizeof pieces[0])

static void test_each_piece_alone_and_padded(void **state)
{
    (void)state;
    static const char pad[] = "+OK\r\n:1\r\n$-1\r\n";
    uint8_t s[256];
    for (size_t i = 0; i < N_PIECES; i++) {
        size_t n = strlen(pieces[i]);
        int rc;
        (void)agree((const uint8_t *)pieces[i], n, CAP_4096, NODES_64, 4, &rc);
        /* Replies before and after: the piece is then parsed from a full buffer. */
        memcpy(s, pad, sizeof pad - 1u);
        memcpy(s + sizeof pad - 1u, pieces[i], n);
        memcpy(s + sizeof pad - 1u + n, pad, sizeof pad - 1u);
        (void)agree(s, n + 2u * (sizeof pad - 1u), CAP_4096, NODES_64, 4, &rc);
    }
}

/* Values the fast path computes itself, checked against the written numbers. */
static void test_fast_path_values(void **state)
{
    (void)state;
    static const char s[] = ":1234567890123456\r\n:0\r\n:-5\r\n$-1\r\n$3\r\nabc\r\n"
                            "*2\r\n:1\r\n:98765432\r\n+OK\r\n-ERR no\r\n:+1\r\n";
    int rc;
    /* ":+1" is not canonical: everything before it decodes, then the stream is refused. */
    assert_int_equal(agree((const uint8_t *)s, sizeof s - 1u, CAP_4096, NODES_64, 4, &rc), 8);
    assert_true(rc < 0);

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
    static const unsigned caps[] = {0, 1, 2, 3, CAP_4096}; /* 7, 16, 64, 300, 4096 bytes */
    uint8_t s[1024];
    size_t valid[N_PIECES];
    size_t n_valid = 0;
    size_t errors = 0, replies = 0;
    int rc;
    /* Mostly pieces that are whole replies on their own, so most streams run long. */
    for (size_t i = 0; i < N_PIECES; i++) {
        if (agree((const uint8_t *)pieces[i], strlen(pieces[i]), CAP_4096, NODES_64, 4, &rc) ==
                1u &&
            rc == 0) {
            valid[n_valid++] = i;
        }
    }
    assert_true(n_valid > 20u && n_valid < N_PIECES);
    for (int it = 0; it < 20000; it++) {
        size_t len = 0;
        int count = 1 + (int)(rng() % 12u);
        for (int k = 0; k < count; k++) {
            const char *p =
                rng() % 8u != 0u ? pieces[valid[rng() % n_valid]] : pieces[rng() % N_PIECES];
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
        replies += agree(s, len, caps[rng() % 5u], rng() % 5u, 1u + rng() % 4u, &rc);
        errors += rc < 0 ? 1u : 0u;
    }
    print_message("%zu streams refused, %zu replies compared\n", errors, replies);
    /* The mix must exercise both outcomes, or the comparison proves little. */
    assert_true(errors > 1000u);
    assert_true(replies > 20000u);
}

int main(void)
{
    return ELK_RUN_TESTS(test_each_piece_alone_and_padded, test_fast_path_values,
                         test_random_streams_agree);
}
