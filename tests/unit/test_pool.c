/* SPDX-License-Identifier: MIT */
/* Buffer pool: normal use, exhaustion, and every misuse the pool must refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "test_main.h"

#include "elk/pool.h"

#define BLOCKS 4
#define BLOCK 64

static _Alignas(8) uint8_t mem[BLOCKS * BLOCK];

static void test_init_rejects_bad_arguments(void **state)
{
    (void)state;
    elk_pool_t p;
    assert_int_equal(elk_pool_init(NULL, mem, sizeof mem, BLOCK, BLOCKS), ELK_E_INVALID_ARG);
    assert_int_equal(elk_pool_init(&p, NULL, sizeof mem, BLOCK, BLOCKS), ELK_E_INVALID_ARG);
    assert_int_equal(elk_pool_init(&p, mem, sizeof mem, BLOCK, 0), ELK_E_INVALID_ARG);
    assert_int_equal(elk_pool_init(&p, mem, sizeof mem, 4, BLOCKS), ELK_E_INVALID_ARG);
    assert_int_equal(elk_pool_init(&p, mem, sizeof mem - 1, BLOCK, BLOCKS), ELK_E_INVALID_ARG);
    assert_int_equal(elk_pool_init(&p, mem, sizeof mem, BLOCK, ELK_POOL_MAX_BLOCKS + 1),
                     ELK_E_INVALID_ARG);
}

static void test_get_until_empty_then_reuse(void **state)
{
    (void)state;
    elk_pool_t p;
    uint8_t *b[BLOCKS + 1];
    assert_int_equal(elk_pool_init(&p, mem, sizeof mem, BLOCK, BLOCKS), ELK_OK);
    assert_int_equal(elk_pool_block_size(&p), BLOCK);
    for (int i = 0; i < BLOCKS; i++) {
        assert_int_equal(elk_pool_get(&p, &b[i]), ELK_OK);
        assert_non_null(b[i]);
        assert_true(b[i] >= mem && b[i] + BLOCK <= mem + sizeof mem);
        for (int j = 0; j < i; j++) {
            assert_ptr_not_equal(b[i], b[j]);
        }
    }
    assert_int_equal(elk_pool_available(&p), 0);
    assert_int_equal(elk_pool_get(&p, &b[BLOCKS]), ELK_E_POOL_EMPTY);
    assert_null(b[BLOCKS]);
    assert_int_equal(elk_pool_put(&p, b[2]), ELK_OK);
    assert_int_equal(elk_pool_available(&p), 1);
    assert_int_equal(elk_pool_get(&p, &b[BLOCKS]), ELK_OK);
    assert_ptr_equal(b[BLOCKS], b[2]);
    assert_int_equal(p.high_water, BLOCKS);
}

static void test_put_refuses_misuse(void **state)
{
    (void)state;
    elk_pool_t p;
    uint8_t *b;
    uint8_t other[BLOCK];
    assert_int_equal(elk_pool_init(&p, mem, sizeof mem, BLOCK, BLOCKS), ELK_OK);
    assert_int_equal(elk_pool_get(&p, &b), ELK_OK);
    assert_int_equal(elk_pool_put(&p, b + 1), ELK_E_POOL_FOREIGN);
    assert_int_equal(elk_pool_put(&p, other), ELK_E_POOL_FOREIGN);
    assert_int_equal(elk_pool_put(&p, mem + BLOCKS * BLOCK), ELK_E_POOL_FOREIGN);
    assert_int_equal(elk_pool_put(&p, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_pool_put(&p, b), ELK_OK);
    assert_int_equal(elk_pool_put(&p, b), ELK_E_POOL_DOUBLE_FREE);
    assert_int_equal(elk_pool_available(&p), BLOCKS);
}

static void test_block_size_rounded_for_alignment(void **state)
{
    (void)state;
    elk_pool_t p;
    uint8_t *a, *b;
    assert_int_equal(elk_pool_init(&p, mem, sizeof mem, BLOCK - 3, BLOCKS), ELK_OK);
    assert_int_equal(elk_pool_block_size(&p) % 8, 0);
    assert_int_equal(elk_pool_get(&p, &a), ELK_OK);
    assert_int_equal(elk_pool_get(&p, &b), ELK_OK);
    assert_int_equal(((uintptr_t)a) % 8, 0);
    assert_int_equal(((uintptr_t)b) % 8, 0);
}

static void test_error_names_and_messages(void **state)
{
    (void)state;
    assert_string_equal(elk_err_name(ELK_E_POOL_EMPTY), "ELK_E_POOL_EMPTY");
    assert_non_null(strstr(elk_err_message(ELK_E_POOL_EMPTY), "CONFIG_ELK_POOL_BLOCK_COUNT"));
    assert_string_equal(elk_err_name(ELK_OK), "ELK_OK");
    assert_string_equal(elk_err_name(-999), "ELK_E_UNKNOWN");
    assert_string_equal(elk_err_message(-999), "unknown error code");
}

int main(void)
{
    return ELK_RUN_TESTS(test_init_rejects_bad_arguments, test_get_until_empty_then_reuse,
                         test_put_refuses_misuse, test_block_size_rounded_for_alignment,
                         test_error_names_and_messages);
}
