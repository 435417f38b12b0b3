/* SPDX-License-Identifier: MIT */
/*
 * Counting semaphores (elk/sem.h, lib/sem): permits as slot leases. Up to GWS gateways,
 * each its own lib/lock client with one semaphore handle, on the same in-memory Redis
 * servers (support/lock_fake_redis.c) over scripted transports, on one manual clock.
 * The property that matters is checked after every step of every test: never more
 * holders than permits, and never two holders of one permit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "elk/err.h"
#include "elk/lock.h"
#include "elk/sem.h"
#include "gw_world.h"
#include "test_main.h"

#define NODES GW_WORLD_NODES
#define GWS GW_WORLD_MAX
#define REC_MAX 512u

typedef struct sem_rec {
    size_t n;
    unsigned permit[REC_MAX];
    elk_lock_event_type_t type[REC_MAX];
    int err[REC_MAX];
    uint64_t token[REC_MAX];
} sem_rec_t;

/* Each gateway's semaphore handle and what it reported. */
typedef struct gw {
    elk_sem_t sem;
    sem_rec_t rec;
} gw_t;

static gw_t GW[GWS];
static uint32_t PERMITS;
static size_t MAX_HELD; /* most holders seen at once */

static uint64_t NOW(void)
{
    return gw_world_now();
}

static void on_sem(void *user, elk_sem_t *sem, unsigned permit, const elk_lock_event_t *ev)
{
    sem_rec_t *r = (sem_rec_t *)user;
    (void)sem;
    if (r->n < REC_MAX) {
        r->permit[r->n] = permit;
        r->type[r->n] = ev->type;
        r->err[r->n] = ev->err;
        r->token[r->n] = ev->token;
        r->n++;
    }
}

static size_t count_type(const sem_rec_t *r, elk_lock_event_type_t t)
{
    size_t c = 0;
    for (size_t i = 0; i < r->n; i++) {
        c += r->type[i] == t ? 1u : 0u;
    }
    return c;
}

/* The last event of type t (its index), asserting there is one. */
static size_t last_of(const sem_rec_t *r, elk_lock_event_type_t t)
{
    for (size_t i = r->n; i-- > 0;) {
        if (r->type[i] == t) {
            return i;
        }
    }
    fail_msg("no event of type %s", elk_lock_event_name(t));
    return 0;
}

/* The safety property, from the handles' own view: at most `permits` holders, each
 * permit at most once. */
static void check_exclusion(void)
{
    size_t held = 0;
    bool taken[CONFIG_ELK_SEM_MAX_PERMITS + 1] = {false};
    for (size_t g = 0; g < GWW.n; g++) {
        if (elk_sem_is_held(&GW[g].sem, NOW())) {
            unsigned p = elk_sem_permit(&GW[g].sem);
            assert_true(p >= 1u && p <= PERMITS);
            assert_false(taken[p]);
            taken[p] = true;
            held++;
        }
    }
    assert_true(held <= PERMITS);
    MAX_HELD = held > MAX_HELD ? held : MAX_HELD;
}

static uint64_t pump(void)
{
    return gw_world_pump();
}

static void run_until(uint64_t t)
{
    gw_world_run_until(t);
}

/* n gateways, each with a semaphore "pumps" of permits, on NODES servers; connected. The
 * exclusion check runs after every poll of every client. */
static void setup(size_t n, uint32_t permits)
{
    elk_lock_config_t c = gw_world_lock_cfg();
    gw_world_setup(n);
    memset(GW, 0, sizeof GW);
    PERMITS = permits;
    MAX_HELD = 0;
    for (size_t g = 0; g < n; g++) {
        assert_int_equal(
            elk_sem_init(&GW[g].sem, &GWW.client[g], "pumps", permits, &c, on_sem, &GW[g].rec),
            ELK_OK);
    }
    GWW.after_poll = check_exclusion;
    gw_world_connect();
}

static gw_t *G(size_t g)
{
    return &GW[g];
}

/* Gateway g asks for a permit (one pass, or waiting until now + wait_ms) and the world
 * runs until nothing moves. */
static void ask(size_t g, uint64_t wait_ms)
{
    assert_int_equal(elk_sem_acquire(&G(g)->sem, NOW(), wait_ms ? NOW() + wait_ms : 0),
                     ELK_E_WOULD_BLOCK);
    pump();
}

static void test_init_checks(void **state)
{
    (void)state;
    static node_harness_t h;
    static elk_client_t client;
    static elk_sem_t sem;
    elk_client_config_t cc;
    char longname[CONFIG_ELK_MAX_KEY_LEN + 8];
    node_harness_init(&h, 1, NULL);
    elk_client_config_defaults(&cc);
    assert_int_equal(elk_client_init(&client, &cc, &h.fleet, &h.entropy_if, &h.log_if), ELK_OK);
    assert_int_equal(elk_sem_init(&sem, &client, "p", 0, NULL, NULL, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(
        elk_sem_init(&sem, &client, "p", CONFIG_ELK_SEM_MAX_PERMITS + 1u, NULL, NULL, NULL),
        ELK_E_INVALID_ARG);
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(elk_sem_init(&sem, &client, longname, 2, NULL, NULL, NULL),
                     ELK_E_NAME_TOO_LONG);
    assert_int_equal(elk_sem_init(&sem, &client, "bad{name", 2, NULL, NULL, NULL),
                     ELK_E_NAME_INVALID);
    assert_int_equal(client.lock_count, 0); /* a failed init leaves nothing registered */
    assert_int_equal(elk_sem_init(&sem, &client, "pumps", 3, NULL, NULL, NULL), ELK_OK);
    assert_int_equal(client.lock_count, 3);
    assert_int_equal(elk_sem_permits(&sem), 3);
    assert_string_equal(elk_lock_key(elk_sem_slot(&sem, 1)), "elk:{pumps#1}");
    assert_string_equal(elk_lock_key(elk_sem_slot(&sem, 3)), "elk:{pumps#3}");
    assert_null(elk_sem_slot(&sem, 0));
    assert_null(elk_sem_slot(&sem, 4));
    assert_int_equal(elk_sem_permit(&sem), 0);
    assert_null(elk_sem_lock(&sem));
    assert_int_equal(elk_sem_release(&sem, 0), ELK_E_NOT_HELD);
    assert_int_equal(elk_sem_deinit(&sem), ELK_OK);
    assert_int_equal(client.lock_count, 0);
}

static void test_one_holder_gets_a_permit(void **state)
{
    (void)state;
    setup(1, 3);
    ask(0, 0);
    size_t i = last_of(&G(0)->rec, ELK_LOCK_EV_ACQUIRED);
    unsigned p = G(0)->rec.permit[i];
    assert_int_equal(p, elk_sem_permit(&G(0)->sem));
    assert_true(p >= 1u && p <= 3u);
    assert_true(elk_sem_is_held(&G(0)->sem, NOW()));
    elk_lock_t *l = elk_sem_lock(&G(0)->sem);
    assert_non_null(l);
    assert_int_equal(G(0)->rec.token[i], elk_lock_token(l));
    assert_true(elk_lock_token(l) > 0u);
    /* the permit is the lock of its slot, on every server */
    char key[64];
    snprintf(key, sizeof key, "t:{pumps#%u}", p);
    for (size_t n = 0; n < NODES; n++) {
        const char *v = lfr_get(&GWW.srv[n], key);
        assert_non_null(v);
        assert_string_equal(v, elk_lock_value(l));
    }
}

/* Four gateways, two permits, everybody asks once: two holders on two different permits,
 * the others told every permit is taken. */
static void test_never_more_than_permits(void **state)
{
    (void)state;
    setup(4, 2);
    for (size_t g = 0; g < 4; g++) {
        ask(g, 0);
    }
    size_t held = 0, refused = 0;
    for (size_t g = 0; g < 4; g++) {
        if (elk_sem_is_held(&G(g)->sem, NOW())) {
            held++;
        } else {
            size_t i = last_of(&G(g)->rec, ELK_LOCK_EV_ACQUIRE_FAILED);
            assert_int_equal(G(g)->rec.err[i], ELK_E_PERMITS_TAKEN);
            assert_int_equal(count_type(&G(g)->rec, ELK_LOCK_EV_ACQUIRE_FAILED), 1);
            refused++;
        }
    }
    assert_int_equal(held, 2);
    assert_int_equal(refused, 2);
    check_exclusion();
}

static size_t first_holder(size_t n)
{
    for (size_t g = 0; g < n; g++) {
        if (elk_sem_is_held(&G(g)->sem, NOW())) {
            return g;
        }
    }
    fail_msg("nobody holds a permit");
    return 0;
}

static size_t first_waiter(size_t n)
{
    for (size_t g = 0; g < n; g++) {
        if (!elk_sem_is_held(&G(g)->sem, NOW())) {
            return g;
        }
    }
    fail_msg("everybody holds a permit");
    return 0;
}

/* A released permit is free at once for the next gateway, which gets that same permit. */
static void test_release_frees_a_permit(void **state)
{
    (void)state;
    setup(3, 2);
    for (size_t g = 0; g < 3; g++) {
        ask(g, 0);
    }
    size_t holder = first_holder(3), other = first_waiter(3);
    unsigned p = elk_sem_permit(&G(holder)->sem);
    assert_int_equal(elk_sem_release(&G(holder)->sem, NOW()), ELK_OK);
    assert_int_equal(elk_sem_permit(&G(holder)->sem), 0);
    pump();
    assert_int_equal(count_type(&G(holder)->rec, ELK_LOCK_EV_RELEASED), 1);
    ask(other, 0);
    assert_true(elk_sem_is_held(&G(other)->sem, NOW()));
    assert_int_equal(elk_sem_permit(&G(other)->sem), p);
}

/* One permit of two held: every acquire of another gateway gets the free one, whichever
 * slot it happens to try first. */
static void test_a_free_permit_is_found(void **state)
{
    (void)state;
    setup(2, 2);
    ask(0, 0);
    unsigned busy = elk_sem_permit(&G(0)->sem);
    for (int i = 0; i < 12; i++) {
        ask(1, 0);
        assert_true(elk_sem_is_held(&G(1)->sem, NOW()));
        assert_int_equal(elk_sem_permit(&G(1)->sem), 3u - busy);
        assert_int_equal(elk_sem_release(&G(1)->sem, NOW()), ELK_OK);
        pump();
    }
    assert_int_equal(count_type(&G(1)->rec, ELK_LOCK_EV_ACQUIRE_FAILED), 0);
}

/* A waiter gets the first permit released, before its wait deadline. */
static void test_waiter_gets_a_freed_permit(void **state)
{
    (void)state;
    setup(3, 2);
    ask(0, 0);
    ask(1, 0);
    assert_true(elk_sem_is_held(&G(0)->sem, NOW()) && elk_sem_is_held(&G(1)->sem, NOW()));
    uint64_t asked = NOW();
    ask(2, 10000);
    run_until(asked + 1500); /* longer than a pass and a wait window: still waiting */
    assert_false(elk_sem_is_held(&G(2)->sem, NOW()));
    assert_int_equal(count_type(&G(2)->rec, ELK_LOCK_EV_ACQUIRE_FAILED), 0);
    unsigned p = elk_sem_permit(&G(1)->sem);
    assert_int_equal(elk_sem_release(&G(1)->sem, NOW()), ELK_OK);
    run_until(asked + 10000);
    assert_true(elk_sem_is_held(&G(2)->sem, NOW()));
    assert_int_equal(elk_sem_permit(&G(2)->sem), p);
    assert_int_equal(count_type(&G(2)->rec, ELK_LOCK_EV_ACQUIRE_FAILED), 0);
}

/* Every permit stays held: the waiter gives up at its deadline, not before, and leaves no
 * request or key of its own behind. */
static void test_wait_ends_at_the_deadline(void **state)
{
    (void)state;
    setup(3, 2);
    ask(0, 0);
    ask(1, 0);
    uint64_t asked = NOW();
    ask(2, 2000);
    run_until(asked + 4000);
    size_t i = last_of(&G(2)->rec, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(G(2)->rec.err[i], ELK_E_LOCK_TIMEOUT);
    assert_int_equal(count_type(&G(2)->rec, ELK_LOCK_EV_ACQUIRE_FAILED), 1);
    assert_false(elk_sem_is_held(&G(2)->sem, NOW()));
    assert_false(elk_sem_busy(&G(2)->sem));
    assert_true(elk_sem_is_held(&G(0)->sem, NOW()) && elk_sem_is_held(&G(1)->sem, NOW()));
    /* both permits still carry their holders' values, nobody else's */
    for (unsigned p = 1; p <= 2; p++) {
        char key[64];
        snprintf(key, sizeof key, "t:{pumps#%u}", p);
        const char *v = lfr_get(&GWW.srv[0], key);
        assert_non_null(v);
        assert_true(strncmp(v, "gw2:", 4) != 0);
    }
}

/* The permit's lease is taken over on every server: LOST reaches the semaphore's callback
 * with the permit's number, and the release reports the loss once. */
static void test_lost_permit_is_reported(void **state)
{
    (void)state;
    setup(1, 2);
    ask(0, 0);
    unsigned p = elk_sem_permit(&G(0)->sem);
    char key[64];
    snprintf(key, sizeof key, "t:{pumps#%u}", p);
    for (size_t n = 0; n < NODES; n++) {
        lfr_set(&GWW.srv[n], key, "intruder:1", 5000);
    }
    run_until(NOW() + 1500);
    size_t i = last_of(&G(0)->rec, ELK_LOCK_EV_LOST);
    assert_int_equal(G(0)->rec.permit[i], p);
    assert_false(elk_sem_is_held(&G(0)->sem, NOW()));
    assert_int_equal(elk_sem_permit(&G(0)->sem), p); /* until released */
    assert_int_equal(elk_sem_acquire(&G(0)->sem, NOW(), 0), ELK_E_LOCK_LOST);
    assert_int_equal(elk_sem_release(&G(0)->sem, NOW()), ELK_E_LOCK_LOST);
    assert_int_equal(elk_sem_permit(&G(0)->sem), 0);
}

/* Release during an acquire cancels it: no permit, no event of a grant, nothing left. */
static void test_release_cancels_an_acquire(void **state)
{
    (void)state;
    setup(1, 2);
    assert_int_equal(elk_sem_acquire(&G(0)->sem, NOW(), 0), ELK_E_WOULD_BLOCK);
    assert_int_equal(elk_sem_acquire(&G(0)->sem, NOW(), 0), ELK_E_STATE);
    assert_int_equal(elk_sem_release(&G(0)->sem, NOW()), ELK_OK);
    run_until(NOW() + 1000);
    assert_false(elk_sem_is_held(&G(0)->sem, NOW()));
    assert_int_equal(count_type(&G(0)->rec, ELK_LOCK_EV_ACQUIRED), 0);
    assert_false(elk_sem_busy(&G(0)->sem));
    assert_null(lfr_get(&GWW.srv[0], "t:{pumps#1}"));
    assert_null(lfr_get(&GWW.srv[0], "t:{pumps#2}"));
}

/* A second acquire on the handle that holds a permit is a second hold of it. */
static void test_reentrant_hold(void **state)
{
    (void)state;
    setup(1, 2);
    ask(0, 0);
    unsigned p = elk_sem_permit(&G(0)->sem);
    assert_int_equal(elk_sem_acquire(&G(0)->sem, NOW(), 0), ELK_OK);
    assert_int_equal(elk_lock_hold_count(elk_sem_lock(&G(0)->sem)), 2);
    assert_int_equal(elk_sem_release(&G(0)->sem, NOW()), ELK_OK);
    assert_true(elk_sem_is_held(&G(0)->sem, NOW()));
    assert_int_equal(elk_sem_permit(&G(0)->sem), p);
    assert_int_equal(elk_sem_release(&G(0)->sem, NOW()), ELK_OK);
    assert_false(elk_sem_is_held(&G(0)->sem, NOW()));
}

/* deinit refuses while a permit is held or released in the background. */
static void test_deinit_only_when_idle(void **state)
{
    (void)state;
    setup(1, 2);
    ask(0, 0);
    assert_int_equal(elk_sem_deinit(&G(0)->sem), ELK_E_STATE);
    assert_int_equal(elk_sem_release(&G(0)->sem, NOW()), ELK_OK);
    run_until(NOW() + 1000);
    assert_false(elk_sem_busy(&G(0)->sem));
    assert_int_equal(elk_sem_deinit(&G(0)->sem), ELK_OK);
    assert_int_equal(GWW.client[0].lock_count, 0);
}

/* Five gateways take and give back two permits at random for a simulated minute, with
 * renewals running: never more than two holders (checked after every poll), both permits
 * in use at times, and everybody served. */
static void test_random_contention(void **state)
{
    (void)state;
    setup(GWS, 2);
    uint64_t end = NOW() + 60000, seed = 12345;
    size_t grants[GWS] = {0};
    while (NOW() < end) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        size_t g = (size_t)(seed >> 33) % GWS;
        elk_sem_t *s = &G(g)->sem;
        if (elk_sem_is_held(s, NOW())) {
            if ((seed >> 20) % 3u == 0u) {
                assert_int_equal(elk_sem_release(s, NOW()), ELK_OK);
            }
        } else if (s->trying < 0) {
            if (elk_sem_permit(s) != 0u) {
                (void)elk_sem_release(s, NOW()); /* a LOST permit */
            }
            assert_int_equal(elk_sem_acquire(s, NOW(), (seed >> 40) % 2u ? NOW() + 800 : 0),
                             ELK_E_WOULD_BLOCK);
        }
        run_until(NOW() + 50 + (seed >> 50) % 200u);
    }
    size_t total = 0;
    for (size_t g = 0; g < GWS; g++) {
        grants[g] = count_type(&G(g)->rec, ELK_LOCK_EV_ACQUIRED);
        assert_true(grants[g] > 0u);
        assert_int_equal(count_type(&G(g)->rec, ELK_LOCK_EV_LOST), 0);
        total += grants[g];
    }
    assert_true(total >= 20u);
    assert_int_equal(MAX_HELD, 2);
}

int main(void)
{
    return ELK_RUN_TESTS(test_init_checks, test_one_holder_gets_a_permit,
                         test_never_more_than_permits, test_a_free_permit_is_found,
                         test_release_frees_a_permit, test_waiter_gets_a_freed_permit,
                         test_wait_ends_at_the_deadline, test_lost_permit_is_reported,
                         test_release_cancels_an_acquire, test_reentrant_hold,
                         test_deinit_only_when_idle, test_random_contention);
}
