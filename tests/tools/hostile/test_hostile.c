/* SPDX-License-Identifier: MIT */
/*
 * elk-hostile-server: each mode sends exactly the pathology it promises, so the
 * fault tests that use it (tests/faults) test what they claim to test.
 * Time is only checked from below.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "test_main.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elk_tooltest.h"

#ifndef ELK_HOSTILE_BIN
#error "ELK_HOSTILE_BIN must name the elk-hostile-server binary"
#endif

static const char PING[] = "*1\r\n$4\r\nPING\r\n";

static pid_t start(const char *mode, const char *opt1, const char *opt2, int *port)
{
    char *argv[8] = {ELK_HOSTILE_BIN, "--mode", (char *)mode, (char *)opt1, (char *)opt2, NULL};
    pid_t pid = elk_tt_spawn(argv, port, 1, 5000);
    assert_true(pid > 0);
    return pid;
}

/* A server in a mode and one connection to it. */
struct served {
    pid_t pid;
    int fd;
};

/* Starts the server in mode (options opt1, opt2 or NULL) and connects to it. */
static struct served serve(const char *mode, const char *opt1, const char *opt2)
{
    struct served v;
    int port;
    v.pid = start(mode, opt1, opt2, &port);
    v.fd = elk_tt_connect(port, 5000);
    assert_true(v.fd >= 0);
    return v;
}

static void unserve(struct served *v)
{
    close(v->fd);
    elk_tt_stop(v->pid);
}

/* PING on fd is answered +PONG (within 2 s). */
static void assert_pong(int fd)
{
    char buf[8] = {0};
    assert_int_equal(elk_tt_send_all(fd, PING, strlen(PING)), 0);
    assert_int_equal(elk_tt_recv_upto(fd, buf, 7, 2000, NULL), 7);
    assert_string_equal(buf, "+PONG\r\n");
}

/* Connect, send one command, collect up to cap bytes (stops at EOF or 500 ms of silence). */
static size_t ask(int port, const char *cmd, char *out, size_t cap, int *eof)
{
    int fd = elk_tt_connect(port, 5000);
    assert_true(fd >= 0);
    if (cmd)
        assert_int_equal(elk_tt_send_all(fd, cmd, strlen(cmd)), 0);
    size_t n = elk_tt_recv_upto(fd, out, cap, 500, eof);
    close(fd);
    return n;
}

static void expect_exact(const char *mode, const char *cmd, const char *want, int want_eof)
{
    int port;
    pid_t pid = start(mode, NULL, NULL, &port);
    char buf[256] = {0};
    int eof = 0;
    size_t n = ask(port, cmd, buf, sizeof buf - 1, &eof);
    if (n != strlen(want) || memcmp(buf, want, n))
        print_error("mode %s: got %zu bytes '%.*s'\n", mode, n, (int)n, buf);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(buf, want, n);
    if (want_eof >= 0)
        assert_int_equal(eof, want_eof);
    elk_tt_stop(pid);
}

static void test_valid(void **s)
{
    (void)s;
    expect_exact("valid", PING, "+PONG\r\n", 0);
    expect_exact("valid", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "$-1\r\n", 0);
}

static void test_huge_lengths(void **s)
{
    (void)s;
    expect_exact("huge", PING, "$9999999999999999999\r\n", 0);
    expect_exact("huge-array", PING, "*2147483648\r\n", 0);
    expect_exact("negative", PING, "$-2\r\n", 0);
}

static void test_bad_type_and_garbage(void **s)
{
    (void)s;
    expect_exact("bad-type", PING, "@what\r\n", 0);
    expect_exact("truncated", PING, "+PO", 1);
    expect_exact("truncated", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "$10\r\nhello", 1);
    expect_exact("close", PING, "", 1);
}

static void test_wrong_types(void **s)
{
    (void)s;
    expect_exact("wrong-type", PING, ":1\r\n", 0);
    expect_exact("wrong-type", "*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$1\r\np\r\n", ":1\r\n", 0);
    expect_exact("wrong-type", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", "$3\r\nabc\r\n", 0);
    expect_exact("wrong-type", "*3\r\n$4\r\nEVAL\r\n$1\r\nx\r\n$1\r\n0\r\n", "+OK\r\n", 0);
}

static void test_unsolicited(void **s)
{
    (void)s;
    /* a reply arrives before any request, and every request gets two */
    expect_exact("unsolicited", NULL, "+unsolicited\r\n", 0);
    expect_exact("unsolicited", PING, "+unsolicited\r\n+PONG\r\n:42\r\n", 0);
}

static void test_deep(void **s)
{
    (void)s;
    int port;
    pid_t pid = start("deep", NULL, NULL, &port);
    size_t want = 100000 * 4 + 4;
    char *buf = malloc(want + 16);
    int eof = 0;
    size_t n = ask(port, PING, buf, want + 16, &eof);
    assert_int_equal(n, want);
    for (size_t i = 0; i < 100000; i++)
        assert_memory_equal(buf + i * 4, "*1\r\n", 4);
    assert_memory_equal(buf + want - 4, ":1\r\n", 4);
    free(buf);
    elk_tt_stop(pid);
}

static void test_endless(void **s)
{
    (void)s;
    int port;
    pid_t pid = start("endless", NULL, NULL, &port);
    size_t cap = 1u << 20;
    char *buf = malloc(cap);
    size_t n = ask(port, PING, buf, cap, NULL);
    assert_int_equal(n, cap); /* it keeps going at least this long */
    assert_int_equal(buf[0], '+');
    assert_null(memmem(buf, n, "\r\n", 2));
    assert_null(memchr(buf, '\n', n));
    free(buf);
    elk_tt_stop(pid);
}

static void test_drip(void **s)
{
    (void)s;
    struct served v = serve("drip", "--drip-ms", "30");
    uint64_t t0 = elk_tt_now_ms();
    assert_pong(v.fd);
    /* 7 bytes, one per 30 ms: the last cannot come before 6 intervals */
    assert_true(elk_tt_now_ms() - t0 >= 180);
    unserve(&v);
}

static void test_valid_then_garbage(void **s)
{
    (void)s;
    struct served v = serve("garbage", "--after", "1");
    assert_pong(v.fd);
    char buf[64] = {0};
    elk_tt_send_all(v.fd, PING, strlen(PING));
    size_t n = elk_tt_recv_upto(v.fd, buf, sizeof buf, 500, NULL);
    assert_true(n > 6);
    assert_memory_equal(buf, "+OK\r\n\x01", 6);
    unserve(&v);
}

static void test_random_is_seeded(void **s)
{
    (void)s;
    char a[600], b[600], c[600];
    int port, eof = 0;
    pid_t pid = start("random", "--seed=7", NULL, &port);
    size_t na = ask(port, PING, a, sizeof a, &eof);
    assert_int_equal(eof, 1);
    elk_tt_stop(pid);
    pid = start("random", "--seed=7", NULL, &port);
    size_t nb = ask(port, PING, b, sizeof b, NULL);
    elk_tt_stop(pid);
    pid = start("random", "--seed=8", NULL, &port);
    size_t nc = ask(port, PING, c, sizeof c, NULL);
    elk_tt_stop(pid);
    assert_true(na > 0);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    assert_false(na == nc && memcmp(a, c, na) == 0);
}

static void test_silent(void **s)
{
    (void)s;
    expect_exact("silent", PING, "", 0);
}

static void test_after_lets_handshake_through(void **s)
{
    (void)s;
    struct served v = serve("huge", "--after", "2");
    const char *hello = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
    elk_tt_send_all(v.fd, hello, strlen(hello));
    char buf[256] = {0};
    size_t n = elk_tt_recv_upto(v.fd, buf, 3, 2000, NULL);
    assert_int_equal(n, 3);
    assert_memory_equal(buf, "%7\r", 3);
    elk_tt_recv_upto(v.fd, buf, sizeof buf, 300, NULL); /* rest of the map */
    assert_pong(v.fd);
    elk_tt_send_all(v.fd, PING, strlen(PING));
    memset(buf, 0, sizeof buf);
    elk_tt_recv_upto(v.fd, buf, 22, 2000, NULL);
    assert_string_equal(buf, "$9999999999999999999\r\n");
    unserve(&v);
}

int main(void)
{
    return ELK_RUN_TESTS(test_valid, test_huge_lengths, test_bad_type_and_garbage, test_wrong_types,
                         test_unsolicited, test_deep, test_endless, test_drip,
                         test_valid_then_garbage, test_random_is_seeded, test_silent,
                         test_after_lets_handshake_through);
}
