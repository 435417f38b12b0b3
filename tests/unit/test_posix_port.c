/* SPDX-License-Identifier: MIT */
/* port/posix: clock, entropy and elk_posix_wait, on real descriptors (pipes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include "test_main.h"

#include "elk/port_posix.h"

static void test_clock_monotonic(void **state)
{
    (void)state;
    elk_clock_t clk;
    elk_posix_clock(&clk);
    assert_non_null(clk.now_ms);
    uint64_t a = clk.now_ms(clk.ctx);
    uint64_t b = elk_posix_now_ms();
    assert_true(b >= a);
    assert_true(a > 0);
    /* A 20 ms sleep moves it forward (by at least 20; never asserting an upper bound). */
    usleep(20000);
    assert_true(clk.now_ms(clk.ctx) >= a + 20);
}

static void test_entropy(void **state)
{
    (void)state;
    elk_entropy_t e;
    uint8_t a[64], b[64], zero[64];
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    memset(zero, 0, sizeof zero);
    elk_posix_entropy(&e);
    assert_int_equal(e.fill(e.ctx, a, sizeof a), ELK_OK);
    assert_int_equal(e.fill(e.ctx, b, sizeof b), ELK_OK);
    /* 512 random bits: equal or all-zero only if the source is broken. */
    assert_memory_not_equal(a, b, sizeof a);
    assert_memory_not_equal(a, zero, sizeof a);
    /* Large requests loop over short reads. */
    static uint8_t big[1 << 20];
    assert_int_equal(e.fill(e.ctx, big, sizeof big), ELK_OK);
    assert_memory_not_equal(big + sizeof big - 64, zero, 64);
    assert_int_equal(e.fill(e.ctx, NULL, 0), ELK_OK);
    assert_int_equal(e.fill(e.ctx, NULL, 4), ELK_E_INVALID_ARG);
}

static void test_wait_deadline_and_readiness(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    elk_wait_t w[3] = {{p[0], ELK_WAIT_READ}, {-1, ELK_WAIT_READ}, {p[1], ELK_WAIT_NONE}};
    unsigned rev[3] = {99, 99, 99};

    /* Nothing readable: returns 0 once the deadline has come. */
    uint64_t start = elk_posix_now_ms();
    assert_int_equal(elk_posix_wait(w, 3, start + 30, rev), 0);
    assert_true(elk_posix_now_ms() >= start + 30);
    assert_int_equal(rev[0], ELK_WAIT_NONE);
    assert_int_equal(rev[1], ELK_WAIT_NONE);
    assert_int_equal(rev[2], ELK_WAIT_NONE);

    /* A deadline in the past only checks. */
    assert_int_equal(elk_posix_wait(w, 3, 0, rev), 0);

    /* Readable: one ready entry, reported on the right index. */
    assert_int_equal(write(p[1], "x", 1), 1);
    assert_int_equal(elk_posix_wait(w, 3, UINT64_MAX, rev), 1);
    assert_int_equal(rev[0], ELK_WAIT_READ);
    assert_int_equal(rev[1], ELK_WAIT_NONE);
    assert_int_equal(rev[2], ELK_WAIT_NONE);
    /* Without revents the count is the same: the writable end asked for nothing. */
    assert_int_equal(elk_posix_wait(w, 3, UINT64_MAX, NULL), 1);

    /* Writable end asked for WRITE: ready at once. */
    w[2].events = ELK_WAIT_WRITE;
    assert_int_equal(elk_posix_wait(w, 3, UINT64_MAX, rev), 2);
    assert_int_equal(rev[2], ELK_WAIT_WRITE);
    assert_int_equal(elk_posix_wait(w, 3, UINT64_MAX, NULL), 2);

    /* Hang-up (writer closed) is reported as READ|WRITE so the owner's call sees it. */
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[1]);
    w[2].fd = -1;
    assert_int_equal(elk_posix_wait(w, 3, UINT64_MAX, rev), 1);
    assert_int_equal(rev[0], ELK_WAIT_READ | ELK_WAIT_WRITE);
    close(p[0]);

    /* revents may be NULL. */
    assert_int_equal(elk_posix_wait(w, 1, 0, NULL), 1);
}

static void test_wait_bad_arguments(void **state)
{
    (void)state;
    elk_wait_t w[ELK_POSIX_WAIT_MAX + 1];
    for (size_t i = 0; i < ELK_POSIX_WAIT_MAX + 1; i++) {
        w[i].fd = -1;
        w[i].events = ELK_WAIT_READ;
    }
    assert_int_equal(elk_posix_wait(w, ELK_POSIX_WAIT_MAX + 1, 0, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_posix_wait(NULL, 1, 0, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_posix_wait(w, ELK_POSIX_WAIT_MAX, 0, NULL), 0);
    /* No entries: a plain sleep until the deadline. */
    uint64_t start = elk_posix_now_ms();
    assert_int_equal(elk_posix_wait(NULL, 0, start + 10, NULL), 0);
    assert_true(elk_posix_now_ms() >= start + 10);
}

int main(void)
{
    return ELK_RUN_GROUP("unit.posix_port", NULL, NULL, test_clock_monotonic, test_entropy,
                         test_wait_deadline_and_readiness, test_wait_bad_arguments);
}
