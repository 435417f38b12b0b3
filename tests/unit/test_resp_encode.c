/* SPDX-License-Identifier: MIT */
/* RESP encoder: exact bytes, bounds at every capacity, integer formatting, bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "test_main.h"

#include "elk/resp.h"

#define SENTINEL 0xA5u

/* argv encodes to exactly want (len bytes). */
static void assert_encodes(const elk_resp_arg_t *argv, size_t argc, const char *want, size_t len)
{
    uint8_t buf[128];
    size_t n = 0;
    assert_int_equal(elk_resp_encode_command(buf, sizeof buf, argv, argc, &n), ELK_OK);
    assert_int_equal(n, len);
    assert_memory_equal(buf, want, n);
}

static void test_format_int_limits(void **state)
{
    (void)state;
    static const struct {
        int64_t v;
        const char *text;
    } cases[] = {
        {0, "0"},
        {1, "1"},
        {-1, "-1"},
        {9, "9"},
        {10, "10"},
        {-10, "-10"},
        {30000, "30000"},
        {INT64_MAX, "9223372036854775807"},
        {INT64_MIN, "-9223372036854775808"},
        {INT64_MAX - 1, "9223372036854775806"},
        {INT64_MIN + 1, "-9223372036854775807"},
        {1000000000000000000LL, "1000000000000000000"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t out[21];
        memset(out, SENTINEL, sizeof out);
        size_t n = elk_resp_format_int(cases[i].v, out);
        assert_int_equal(n, strlen(cases[i].text));
        assert_memory_equal(out, cases[i].text, n);
        assert_int_equal(out[20], SENTINEL); /* never beyond the 20 bytes it promises */
    }
}

static void test_format_int_matches_printf(void **state)
{
    (void)state;
    /* Powers of ten and their neighbours cover every digit count and carry. */
    int64_t p = 1;
    for (int k = 0; k < 19; k++, p = k < 19 ? p * 10 : p) {
        int64_t vals[6] = {p, p - 1, p + 1, -p, -(p - 1), -(p + 1)};
        for (int j = 0; j < 6; j++) {
            uint8_t out[20];
            char ref[32];
            size_t n = elk_resp_format_int(vals[j], out);
            int m = snprintf(ref, sizeof ref, "%lld", (long long)vals[j]);
            assert_int_equal(n, (size_t)m);
            assert_memory_equal(out, ref, n);
        }
    }
}

static void test_encode_command_exact(void **state)
{
    (void)state;
    const elk_resp_arg_t argv[] = {ELK_RESP_ARG_STR("SET"),
                                   elk_resp_arg_cstr("lock{valve}"),
                                   elk_resp_arg_bytes((const uint8_t *)"a\r\nb\0c", 6),
                                   ELK_RESP_ARG_STR("NX"),
                                   ELK_RESP_ARG_STR("PX"),
                                   elk_resp_arg_int(30000)};
    static const char want[] = "*6\r\n$3\r\nSET\r\n$11\r\nlock{valve}\r\n$6\r\na\r\nb\0c\r\n"
                               "$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n";
    assert_encodes(argv, 6, want, sizeof want - 1);
}

static void test_encode_empty_and_int_args(void **state)
{
    (void)state;
    const elk_resp_arg_t argv[] = {elk_resp_arg_bytes(NULL, 0), elk_resp_arg_cstr(""),
                                   elk_resp_arg_int(INT64_MIN), elk_resp_arg_int(0),
                                   elk_resp_arg_int(-7)};
    static const char want[] = "*5\r\n$0\r\n\r\n$0\r\n\r\n$20\r\n-9223372036854775808\r\n"
                               "$1\r\n0\r\n$2\r\n-7\r\n";
    assert_encodes(argv, 5, want, sizeof want - 1);
    /* A command with no arguments is still a well-formed empty array. */
    assert_encodes(NULL, 0, "*0\r\n", 4);
}

/* Every capacity from 0 to the size needed: never a byte past cap, the size needed is
 * reported, and what was written is the prefix of the full encoding. */
static void test_encode_every_cap(void **state)
{
    (void)state;
    uint8_t big[300];
    for (size_t i = 0; i < sizeof big; i++) {
        big[i] = (uint8_t)(i * 7u);
    }
    const elk_resp_arg_t argv[] = {ELK_RESP_ARG_STR("EVALSHA"), elk_resp_arg_bytes(big, sizeof big),
                                   elk_resp_arg_int(1), elk_resp_arg_int(INT64_MAX),
                                   elk_resp_arg_cstr("x")};
    uint8_t full[512];
    size_t need = 0;
    assert_int_equal(elk_resp_encode_command(NULL, 0, argv, 5, &need), ELK_E_BUF_TOO_SMALL);
    assert_true(need > sizeof big);
    size_t got = 0;
    assert_int_equal(elk_resp_encode_command(full, sizeof full, argv, 5, &got), ELK_OK);
    assert_int_equal(got, need);

    uint8_t buf[512 + 16];
    for (size_t cap = 0; cap <= need; cap++) {
        memset(buf, SENTINEL, sizeof buf);
        size_t n = 0;
        int rc = elk_resp_encode_command(buf, cap, argv, 5, &n);
        assert_int_equal(rc, cap < need ? ELK_E_BUF_TOO_SMALL : ELK_OK);
        assert_int_equal(n, need);
        assert_memory_equal(buf, full, cap);
        for (size_t k = cap; k < sizeof buf; k++) {
            assert_int_equal(buf[k], SENTINEL);
        }
    }
}

/* encode_command writes common arguments straight into the buffer on 64-bit hosts;
 * the writer calls are the reference: same bytes for every body length around the
 * header-width changes, integers of every width, at every capacity near the end. */
static void test_encode_command_matches_writer(void **state)
{
    (void)state;
    static uint8_t body[1100];
    static const int64_t ints[] = {0,   7,         -7,         9,           10,        99,
                                   100, 123456789, 1234567890, -1234567890, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof body; i++) {
        body[i] = (uint8_t)('a' + i % 26u);
    }
    for (size_t len = 0; len < sizeof body; len += len < 120u ? 1u : 97u) {
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
            const elk_resp_arg_t argv[] = {ELK_RESP_ARG_STR("EVALSHA"),
                                           elk_resp_arg_bytes(body, len), elk_resp_arg_int(ints[k]),
                                           elk_resp_arg_bytes(body, len % 13u),
                                           elk_resp_arg_int(ints[(k + 5u) % 12u])};
            static uint8_t want[1400];
            static uint8_t got[1400 + 8];
            elk_resp_writer_t w;
            size_t want_len = 0, n = 0;
            elk_resp_writer_init(&w, want, sizeof want);
            elk_resp_write_array_header(&w, 5);
            elk_resp_write_bulk(&w, (const uint8_t *)"EVALSHA", 7);
            elk_resp_write_bulk(&w, body, len);
            elk_resp_write_bulk_int(&w, ints[k]);
            elk_resp_write_bulk(&w, body, len % 13u);
            elk_resp_write_bulk_int(&w, ints[(k + 5u) % 12u]);
            assert_int_equal(elk_resp_writer_finish(&w, &want_len), ELK_OK);
            /* Roomy, exact, and short by 1..60 bytes (the fast path hands over mid-way). */
            for (size_t cut = 0; cut <= 60u && cut <= want_len; cut += cut < 4u ? 1u : 7u) {
                size_t cap = want_len - cut;
                memset(got, SENTINEL, sizeof got);
                assert_int_equal(elk_resp_encode_command(got, cap, argv, 5, &n),
                                 cut == 0u ? ELK_OK : ELK_E_BUF_TOO_SMALL);
                assert_int_equal(n, want_len);
                assert_memory_equal(got, want, cap);
                assert_int_equal(got[cap], SENTINEL);
            }
            assert_int_equal(elk_resp_encode_command(got, sizeof got, argv, 5, &n), ELK_OK);
            assert_int_equal(n, want_len);
            assert_memory_equal(got, want, n);
        }
    }
}

static void test_writer_incremental_and_measure(void **state)
{
    (void)state;
    elk_resp_writer_t w;
    size_t n = 0;
    elk_resp_writer_init(&w, NULL, 100); /* NULL buffer: measure only, whatever cap says */
    elk_resp_write_array_header(&w, 2);
    elk_resp_write_bulk(&w, (const uint8_t *)"GET", 3);
    elk_resp_write_bulk_int(&w, -42);
    assert_int_equal(elk_resp_writer_finish(&w, &n), ELK_E_BUF_TOO_SMALL);
    assert_int_equal(n, strlen("*2\r\n$3\r\nGET\r\n$3\r\n-42\r\n"));

    uint8_t buf[64];
    elk_resp_writer_init(&w, buf, sizeof buf);
    /* A count above 2^31 exercises the unsigned path; 4000000000 still fits a 32-bit
     * size_t (armhf, Cortex-M). */
    elk_resp_write_array_header(&w, (size_t)4000000000UL);
    assert_int_equal(elk_resp_writer_finish(&w, &n), ELK_OK);
    assert_int_equal(n, 13);
    assert_memory_equal(buf, "*4000000000\r\n", 13);
#if SIZE_MAX > 0xFFFFFFFFu
    elk_resp_writer_init(&w, buf, sizeof buf);
    elk_resp_write_array_header(&w, (size_t)12345678901ULL);
    assert_int_equal(elk_resp_writer_finish(&w, &n), ELK_OK);
    assert_int_equal(n, 14);
    assert_memory_equal(buf, "*12345678901\r\n", 14);
#endif
}

static void test_bad_arguments(void **state)
{
    (void)state;
    uint8_t buf[64];
    size_t n = 0;
    const elk_resp_arg_t bad[] = {ELK_RESP_ARG_STR("GET"), elk_resp_arg_bytes(NULL, 3)};
    assert_int_equal(elk_resp_encode_command(buf, sizeof buf, bad, 2, &n), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_encode_command(buf, sizeof buf, NULL, 1, &n), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_encode_command(NULL, 10, bad, 1, &n), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_encode_command(buf, sizeof buf, bad, 1, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_resp_writer_finish(NULL, &n), ELK_E_INVALID_ARG);

    elk_resp_writer_t w;
    elk_resp_writer_init(&w, buf, sizeof buf);
    elk_resp_write_bulk(&w, NULL, 5);
    assert_int_equal(elk_resp_writer_finish(&w, &n), ELK_E_INVALID_ARG);
    /* NULL writers are ignored rather than crashing. */
    elk_resp_writer_init(NULL, buf, sizeof buf);
    elk_resp_write_array_header(NULL, 1);
    elk_resp_write_bulk(NULL, buf, 1);
    elk_resp_write_bulk_int(NULL, 1);

    elk_resp_arg_t a = elk_resp_arg_cstr(NULL);
    assert_null(a.ptr);
    assert_int_equal(a.len, 0);
    assert_false(a.is_int);
}

/* What the encoder writes, the decoder reads back unchanged. */
static void test_round_trip_through_decoder(void **state)
{
    (void)state;
    uint8_t bin[40];
    for (size_t i = 0; i < sizeof bin; i++) {
        bin[i] = (uint8_t)(255u - i * 5u);
    }
    const elk_resp_arg_t argv[] = {ELK_RESP_ARG_STR("SET"), elk_resp_arg_bytes(bin, sizeof bin),
                                   elk_resp_arg_int(INT64_MIN), elk_resp_arg_cstr("")};
    uint8_t buf[256];
    size_t n = 0;
    assert_int_equal(elk_resp_encode_command(buf, sizeof buf, argv, 4, &n), ELK_OK);

    uint8_t rbuf[256];
    elk_resp_node_t nodes[8];
    elk_resp_reader_t r;
    elk_resp_reply_t reply;
    assert_int_equal(elk_resp_reader_init(&r, rbuf, sizeof rbuf, nodes, 8, 4), ELK_OK);
    assert_int_equal(elk_resp_reader_feed(&r, buf, n), ELK_OK);
    assert_int_equal(elk_resp_reader_next(&r, &reply), 1);
    assert_int_equal(reply.count, 5);
    assert_int_equal(nodes[0].type, ELK_RESP_ARRAY);
    assert_int_equal(nodes[0].integer, 4);
    assert_int_equal(nodes[0].subtree, 4);
    assert_true(elk_resp_str_eq(&nodes[1], "SET"));
    assert_int_equal(nodes[2].len, sizeof bin);
    assert_memory_equal(nodes[2].str, bin, sizeof bin);
    assert_true(elk_resp_str_eq(&nodes[3], "-9223372036854775808"));
    assert_int_equal(nodes[4].type, ELK_RESP_BULK);
    assert_int_equal(nodes[4].len, 0);
}

int main(void)
{
    return ELK_RUN_TESTS(
        test_format_int_limits, test_format_int_matches_printf, test_encode_command_exact,
        test_encode_empty_and_int_args, test_encode_every_cap, test_encode_command_matches_writer,
        test_writer_incremental_and_measure, test_bad_arguments, test_round_trip_through_decoder);
}
