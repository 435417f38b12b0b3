/* SPDX-License-Identifier: MIT */
/*
 * port/lwip entropy: words from the board's RNG callback become bytes; a faulty or
 * stuck generator is refused, never passed on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include "elk/port_lwip.h"

typedef struct script {
    const uint32_t *words;
    size_t n, next;
    size_t fail_at; /* call index that reports a fault; SIZE_MAX: never */
    size_t calls;
} script_t;

static int scripted_rng(void *user, uint32_t *word)
{
    script_t *s = user;
    size_t i = s->calls++;
    if (i == s->fail_at) {
        return -1;
    }
    assert_true(s->next < s->n);
    *word = s->words[s->next++];
    return 0;
}

/* With the generator scripted by s, a fill of len bytes is refused and leaves zeros:
 * nothing half-random left behind. */
static void assert_fill_refused(script_t *s, size_t len)
{
    elk_lwip_entropy_t e;
    elk_entropy_t ent;
    assert_int_equal(elk_lwip_entropy_init(&e, scripted_rng, s, &ent), ELK_OK);
    uint8_t buf[32];
    const uint8_t zero[32] = {0};
    assert_true(len <= sizeof buf);
    memset(buf, 0xEE, sizeof buf);
    assert_int_equal(ent.fill(ent.ctx, buf, len), ELK_E_ENTROPY);
    assert_memory_equal(buf, zero, len);
}

static void test_fill_assembles_words_after_baseline(void **state)
{
    (void)state;
    const uint32_t words[] = {0xAAAAAAAAu, 0x03020100u, 0x07060504u,
                              0x0B0A0908u, 0x0F0E0D0Cu, 0x13121110u};
    script_t s = {words, 6, 0, SIZE_MAX, 0};
    elk_lwip_entropy_t e;
    elk_entropy_t ent;
    assert_int_equal(elk_lwip_entropy_init(&e, scripted_rng, &s, &ent), ELK_OK);
    assert_ptr_equal(ent.ctx, &e);

    uint8_t buf[18];
    memset(buf, 0xEE, sizeof(buf));
    assert_int_equal(ent.fill(ent.ctx, buf, sizeof(buf)), ELK_OK);
    /* The first word is only the continuous test's baseline; then 5 words (18 bytes). */
    assert_int_equal(s.calls, 6);
    uint8_t expect[18];
    for (size_t i = 0; i < 4; i++) {
        uint32_t w = words[1 + i];
        memcpy(expect + 4 * i, &w, 4);
    }
    memcpy(expect + 16, &words[5], 2);
    assert_memory_equal(buf, expect, sizeof(buf));
}

static void test_stuck_generator_is_refused(void **state)
{
    (void)state;
    const uint32_t words[] = {0x12345678u, 0x9ABCDEF0u, 0x9ABCDEF0u, 0x1u};
    script_t s = {words, 4, 0, SIZE_MAX, 0};
    assert_fill_refused(&s, 16);
}

static void test_stuck_from_the_start_is_refused(void **state)
{
    (void)state;
    const uint32_t words[] = {0u, 0u};
    script_t s = {words, 2, 0, SIZE_MAX, 0};
    elk_lwip_entropy_t e;
    elk_entropy_t ent;
    assert_int_equal(elk_lwip_entropy_init(&e, scripted_rng, &s, &ent), ELK_OK);
    uint8_t b[4];
    assert_int_equal(ent.fill(ent.ctx, b, sizeof(b)), ELK_E_ENTROPY);
}

static void test_rng_fault_is_refused(void **state)
{
    (void)state;
    const uint32_t words[] = {1u, 2u, 3u, 4u, 5u};
    script_t s = {words, 5, 0, 2, 0};
    assert_fill_refused(&s, 12);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    elk_lwip_entropy_t e;
    elk_entropy_t ent;
    script_t s = {NULL, 0, 0, SIZE_MAX, 0};
    assert_int_equal(elk_lwip_entropy_init(NULL, scripted_rng, &s, &ent), ELK_E_INVALID_ARG);
    assert_int_equal(elk_lwip_entropy_init(&e, NULL, &s, &ent), ELK_E_INVALID_ARG);
    assert_int_equal(elk_lwip_entropy_init(&e, scripted_rng, &s, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_lwip_entropy_init(&e, scripted_rng, &s, &ent), ELK_OK);
    assert_int_equal(ent.fill(ent.ctx, NULL, 4), ELK_E_INVALID_ARG);
    assert_int_equal(ent.fill(NULL, (uint8_t[4]){0}, 4), ELK_E_INVALID_ARG);
    /* Zero bytes asked: nothing drawn. */
    assert_int_equal(ent.fill(ent.ctx, NULL, 0), ELK_OK);
    assert_int_equal(s.calls, 0);
}

int main(void)
{
    return ELK_RUN_TESTS(test_fill_assembles_words_after_baseline, test_stuck_generator_is_refused,
                         test_stuck_from_the_start_is_refused, test_rng_fault_is_refused,
                         test_bad_arguments);
}
