/* SPDX-License-Identifier: MIT */
/* lib/fence: the actuator guard, over an in-memory storage with injectable failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include "elk/fence.h"

typedef struct mem_storage {
    uint64_t value;
    int load_rc;                  /* returned by load when non-zero */
    int store_rc;                 /* returned by store when non-zero */
    bool store_writes_on_failure; /* a store that fails after the write reached the medium */
    int loads, stores;
    int lock_rc; /* returned by lock when non-zero */
    bool locked; /* the lock is held (by anyone) */
    int locks, unlocks;
    bool load_unlocked, store_unlocked; /* a load or store ran without the lock */
} mem_storage_t;

static int mem_load(void *ctx, uint64_t *token)
{
    mem_storage_t *m = ctx;
    m->loads++;
    m->load_unlocked |= !m->locked;
    if (m->load_rc != 0) {
        return m->load_rc;
    }
    *token = m->value;
    return ELK_OK;
}

static int mem_store(void *ctx, uint64_t token)
{
    mem_storage_t *m = ctx;
    m->stores++;
    m->store_unlocked |= !m->locked;
    if (m->store_rc != 0) {
        if (m->store_writes_on_failure) {
            m->value = token;
        }
        return m->store_rc;
    }
    m->value = token;
    return ELK_OK;
}

static int mem_lock(void *ctx)
{
    mem_storage_t *m = ctx;
    m->locks++;
    if (m->lock_rc != 0) {
        return m->lock_rc;
    }
    assert_false(m->locked); /* a real lock would wait here for ever: a deadlock */
    m->locked = true;
    return ELK_OK;
}

static void mem_unlock(void *ctx)
{
    mem_storage_t *m = ctx;
    m->unlocks++;
    assert_true(m->locked);
    m->locked = false;
}

static elk_fence_storage_t locked_storage_of(mem_storage_t *m)
{
    elk_fence_storage_t s = {m, mem_load, mem_store, mem_lock, mem_unlock};
    return s;
}

static elk_fence_storage_t storage_of(mem_storage_t *m)
{
    elk_fence_storage_t s = {m, mem_load, mem_store, NULL, NULL};
    return s;
}

static void test_accepts_increasing_and_equal(void **state)
{
    (void)state;
    mem_storage_t m = {0};
    elk_fence_storage_t s = storage_of(&m);
    elk_fence_t f;
    assert_int_equal(elk_fence_init(&f, &s), ELK_OK);
    assert_int_equal(elk_fence_highest(&f), 0);
    assert_int_equal(elk_fence_check(&f, 3), ELK_OK);
    assert_int_equal(m.value, 3);
    assert_int_equal(elk_fence_check(&f, 3), ELK_OK); /* same holder, next command */
    assert_int_equal(m.stores, 1);                    /* equal token: nothing to persist */
    assert_int_equal(elk_fence_check(&f, 7), ELK_OK);
    assert_int_equal(m.value, 7);
    assert_int_equal(elk_fence_highest(&f), 7);
}

static void test_refuses_lower(void **state)
{
    (void)state;
    mem_storage_t m = {.value = 10};
    elk_fence_storage_t s = storage_of(&m);
    elk_fence_t f;
    assert_int_equal(elk_fence_init(&f, &s), ELK_OK);
    assert_int_equal(elk_fence_highest(&f), 10);
    assert_int_equal(elk_fence_check(&f, 9), ELK_E_FENCE_STALE);
    assert_int_equal(elk_fence_check(&f, 1), ELK_E_FENCE_STALE);
    assert_int_equal(m.value, 10);
    assert_int_equal(m.stores, 0);
    assert_int_equal(elk_fence_check(&f, 10), ELK_OK);
    assert_int_equal(elk_fence_check(&f, UINT64_MAX), ELK_OK);
    assert_int_equal(elk_fence_check(&f, UINT64_MAX - 1), ELK_E_FENCE_STALE);
}

static void test_zero_token_refused(void **state)
{
    (void)state;
    mem_storage_t m = {0};
    elk_fence_storage_t s = storage_of(&m);
    elk_fence_t f;
    assert_int_equal(elk_fence_init(&f, &s), ELK_OK);
    assert_int_equal(elk_fence_check(&f, 0), ELK_E_FENCE_TOKEN);
    assert_int_equal(m.stores, 0);
}

static void test_store_failure_fails_closed(void **state)
{
    (void)state;
    mem_storage_t m = {.value = 5};
    elk_fence_storage_t s = storage_of(&m);
    elk_fence_t f;
    assert_int_equal(elk_fence_init(&f, &s), ELK_OK);
    m.store_rc = ELK_E_IO;
    assert_int_equal(elk_fence_check(&f, 6), ELK_E_FENCE_STORAGE);
    assert_int_equal(elk_fence_storage_error(&f), ELK_E_IO);
    /* Not accepted, so the highest must not have moved in memory. */
    assert_int_equal(elk_fence_highest(&f), 0); /* unknown until reloaded */
    /* Even an equal-to-old token is refused while the medium is unreadable. */
    m.load_rc = ELK_E_IO;
    assert_int_equal(elk_fence_check(&f, 5), ELK_E_FENCE_STORAGE);
    m.load_rc = 0;
    m.store_rc = 0;
    assert_int_equal(elk_fence_check(&f, 6), ELK_OK);
    assert_int_equal(m.value, 6);
    assert_int_equal(elk_fence_storage_error(&f), ELK_OK);
}

static void test_failed_store_that_wrote_is_reloaded(void **state)
{
    (void)state;
    /* The write reached the medium but sync reported failure: the guard must not
     * keep trusting its old cached value (5), or it would accept 6 after 8 is durable. */
    mem_storage_t m = {.value = 5, .store_rc = ELK_E_IO, .store_writes_on_failure = true};
    elk_fence_storage_t s = storage_of(&m);
    elk_fence_t f;
    assert_int_equal(elk_fence_init(&f, &s), ELK_OK);
    assert_int_equal(elk_fence_check(&f, 8), ELK_E_FENCE_STORAGE);
    m.store_rc = 0;
    assert_int_equal(elk_fence_check(&f, 6), ELK_E_FENCE_STALE);
    assert_int_equal(elk_fence_highest(&f), 8);
}

static void test_load_failure_at_init(void **state)
{
    (void)state;
    mem_storage_t m = {.value = 4, .load_rc = ELK_E_FENCE_CORRUPT};
    elk_fence_storage_t s = storage_of(&m);
    elk_fence_t f;
    assert_int_equal(elk_fence_init(&f, &s), ELK_E_FENCE_STORAGE);
    assert_int_equal(elk_fence_storage_error(&f), ELK_E_FENCE_CORRUPT);
    assert_int_equal(elk_fence_check(&f, 100), ELK_E_FENCE_STORAGE);
    assert_int_equal(m.stores, 0);
    m.load_rc = 0;
    assert_int_equal(elk_fence_check(&f, 3), ELK_E_FENCE_STALE);
    assert_int_equal(elk_fence_check(&f, 4), ELK_OK);
}

static void test_invalid_args(void **state)
{
    (void)state;
    mem_storage_t m = {0};
    elk_fence_storage_t s = storage_of(&m);
    elk_fence_storage_t bad = {&m, mem_load, NULL, NULL, NULL};
    elk_fence_t f;
    assert_int_equal(elk_fence_init(NULL, &s), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fence_init(&f, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fence_init(&f, &bad), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fence_check(NULL, 1), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fence_highest(NULL), 0);
}

static void test_parse_token(void **state)
{
    (void)state;
    uint64_t t = 0;
    assert_int_equal(elk_fence_parse_token("42", 2, &t), ELK_OK);
    assert_int_equal(t, 42);
    assert_int_equal(elk_fence_parse_token("18446744073709551615", 20, &t), ELK_OK);
    assert_true(t == UINT64_MAX);
    assert_int_equal(elk_fence_parse_token("18446744073709551616", 20, &t), ELK_E_FENCE_TOKEN);
    assert_int_equal(elk_fence_parse_token("0", 1, &t), ELK_E_FENCE_TOKEN);
    assert_int_equal(elk_fence_parse_token("", 0, &t), ELK_E_FENCE_TOKEN);
    assert_int_equal(elk_fence_parse_token("-1", 2, &t), ELK_E_FENCE_TOKEN);
    assert_int_equal(elk_fence_parse_token("12a", 3, &t), ELK_E_FENCE_TOKEN);
    assert_int_equal(elk_fence_parse_token(" 1", 2, &t), ELK_E_FENCE_TOKEN);
    assert_int_equal(elk_fence_parse_token("000000000000000000001", 21, &t), ELK_E_FENCE_TOKEN);
    assert_int_equal(elk_fence_parse_token(NULL, 1, &t), ELK_E_FENCE_TOKEN);
}

/* begin holds the lock until end; every decision is made on a load under the lock. */
static void test_begin_holds_until_end(void **state)
{
    (void)state;
    mem_storage_t m = {.value = 4};
    elk_fence_storage_t s = locked_storage_of(&m);
    elk_fence_t f;
    assert_int_equal(elk_fence_init(&f, &s), ELK_OK);
    m.load_unlocked = false; /* init's load is a hint, outside the lock by design */
    assert_int_equal(elk_fence_begin(&f, 5), ELK_OK);
    assert_true(m.locked);
    assert_int_equal(m.value, 5); /* durable before the step starts */
    assert_int_equal(elk_fence_begin(&f, 5), ELK_E_STATE);
    assert_true(m.locked);
    assert_int_equal(elk_fence_end(&f), ELK_OK);
    assert_false(m.locked);
    assert_int_equal(elk_fence_end(&f), ELK_E_STATE);
    assert_int_equal(m.unlocks, 1);
    assert_false(m.load_unlocked);
    assert_false(m.store_unlocked);
}

/* Another process moved the value since our last look: the lock forces a reload. */
static void test_reloads_under_lock(void **state)
{
    (void)state;
    mem_storage_t m = {.value = 10};
    elk_fence_storage_t s = locked_storage_of(&m);
    elk_fence_t f;
    assert_int_equal(elk_fence_init(&f, &s), ELK_OK);
    assert_int_equal(elk_fence_check(&f, 10), ELK_OK);
    m.value = 20; /* a second guard process accepted 20 */
    assert_int_equal(elk_fence_check(&f, 15), ELK_E_FENCE_STALE);
    assert_int_equal(elk_fence_highest(&f), 20);
    assert_int_equal(m.value, 20);
    assert_false(m.locked);
    assert_int_equal(m.locks, m.unlocks);
}

/* Every refusal releases the lock: nothing to end, nobody stalled. */
static void test_refusals_release_lock(void **state)
{
    (void)state;
    mem_storage_t m = {.value = 10};
    elk_fence_storage_t s = locked_storage_of(&m);
    elk_fence_t f;
    assert_int_equal(elk_fence_init(&f, &s), ELK_OK);
    assert_int_equal(elk_fence_begin(&f, 9), ELK_E_FENCE_STALE);
    assert_false(m.locked);
    m.load_rc = ELK_E_FENCE_CORRUPT;
    assert_int_equal(elk_fence_begin(&f, 11), ELK_E_FENCE_STORAGE);
    assert_false(m.locked);
    m.load_rc = 0;
    m.store_rc = ELK_E_FENCE_STORAGE;
    assert_int_equal(elk_fence_begin(&f, 11), ELK_E_FENCE_STORAGE);
    assert_false(m.locked);
    assert_int_equal(elk_fence_end(&f), ELK_E_STATE);
    assert_int_equal(m.locks, 3);
    assert_int_equal(m.unlocks, 3);
}

/* The lock's own failures: busy is its own code; anything else is a storage failure. */
static void test_lock_busy_and_failure(void **state)
{
    (void)state;
    mem_storage_t m = {.value = 3};
    elk_fence_storage_t s = locked_storage_of(&m);
    elk_fence_t f;
    assert_int_equal(elk_fence_init(&f, &s), ELK_OK);
    m.lock_rc = ELK_E_FENCE_BUSY;
    assert_int_equal(elk_fence_begin(&f, 4), ELK_E_FENCE_BUSY);
    assert_int_equal(elk_fence_storage_error(&f), ELK_E_FENCE_BUSY);
    m.lock_rc = ELK_E_IO;
    assert_int_equal(elk_fence_check(&f, 4), ELK_E_FENCE_STORAGE);
    assert_int_equal(elk_fence_storage_error(&f), ELK_E_IO);
    assert_int_equal(m.stores, 0);
    assert_int_equal(m.unlocks, 0); /* never taken, never released */
    assert_int_equal(elk_fence_end(&f), ELK_E_STATE);
    m.lock_rc = 0;
    assert_int_equal(elk_fence_check(&f, 4), ELK_OK);
    assert_int_equal(m.value, 4);
}

/* lock and unlock come as a pair; begin/end check their arguments. */
static void test_lock_pair_required(void **state)
{
    (void)state;
    mem_storage_t m = {0};
    elk_fence_storage_t half = {&m, mem_load, mem_store, mem_lock, NULL};
    elk_fence_storage_t other = {&m, mem_load, mem_store, NULL, mem_unlock};
    elk_fence_t f;
    assert_int_equal(elk_fence_init(&f, &half), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fence_init(&f, &other), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fence_begin(NULL, 1), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fence_end(NULL), ELK_E_INVALID_ARG);
}

/* A store that fails at any point, having reached the medium or not: refused, lock
 * released, and the next decision is made on what the medium really holds, so the value
 * never goes below an accepted token and the guard recovers once storage works again. */
static void test_store_fails_midway(void **state)
{
    int reached;
    (void)state;
    for (reached = 0; reached <= 1; reached++) {
        mem_storage_t m = {.value = 10};
        elk_fence_storage_t s = locked_storage_of(&m);
        elk_fence_t f;
        assert_int_equal(elk_fence_init(&f, &s), ELK_OK);
        m.store_rc = ELK_E_FENCE_STORAGE;
        m.store_writes_on_failure = reached;
        assert_int_equal(elk_fence_begin(&f, 12), ELK_E_FENCE_STORAGE);
        assert_false(m.locked);
        assert_int_equal(m.value, reached ? 12 : 10);
        m.store_rc = 0;
        /* 11 is between old and new: only accepted if the new one never reached the medium */
        assert_int_equal(elk_fence_check(&f, 11), reached ? ELK_E_FENCE_STALE : ELK_OK);
        assert_int_equal(elk_fence_check(&f, 12), ELK_OK);
        assert_int_equal(m.value, 12);
        assert_int_equal(m.locks, m.unlocks);
    }
}

int main(void)
{
    return ELK_RUN_TESTS(
        test_begin_holds_until_end, test_reloads_under_lock, test_refusals_release_lock,
        test_lock_busy_and_failure, test_lock_pair_required, test_store_fails_midway,
        test_accepts_increasing_and_equal, test_refuses_lower, test_zero_token_refused,
        test_store_failure_fails_closed, test_failed_store_that_wrote_is_reloaded,
        test_load_failure_at_init, test_invalid_args, test_parse_token);
}
