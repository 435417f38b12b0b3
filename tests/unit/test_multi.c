/* SPDX-License-Identifier: MIT */
/*
 * All-or-nothing locks over several resources (elk/multi.h, lib/multi): taken in the order
 * of their names, held and lost together. Several gateways on the same in-memory Redis
 * servers (support/gw_world.h). After every poll of every client: no resource is held by
 * two gateways, and a multi-lock that says it is held holds every one of its locks.
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
#include "elk/multi.h"
#include "gw_world.h"
#include "test_main.h"

#define GWS GW_WORLD_MAX
#define REC_MAX 256u

typedef struct multi_rec {
    size_t n;
    size_t resource[REC_MAX];
    elk_lock_event_type_t type[REC_MAX];
    int err[REC_MAX];
} multi_rec_t;

typedef struct gw {
    elk_multi_t m;
    multi_rec_t rec;
    const char *names[4];
    size_t count;
} gw_t;

static gw_t GW[GWS];

static uint64_t NOW(void)
{
    return gw_world_now();
}

static void on_multi(void *user, elk_multi_t *m, size_t resource, const elk_lock_event_t *ev)
{
    multi_rec_t *r = (multi_rec_t *)user;
    (void)m;
    if (r->n < REC_MAX) {
        r->resource[r->n] = resource;
        r->type[r->n] = ev->type;
        r->err[r->n] = ev->err;
        r->n++;
    }
}

static size_t count_type(const multi_rec_t *r, elk_lock_event_type_t t)
{
    size_t c = 0;
    for (size_t i = 0; i < r->n; i++) {
        c += r->type[i] == t ? 1u : 0u;
    }
    return c;
}

static size_t last_of(const multi_rec_t *r, elk_lock_event_type_t t)
{
    for (size_t i = r->n; i-- > 0;) {
        if (r->type[i] == t) {
            return i;
        }
    }
    fail_msg("no event of type %s", elk_lock_event_name(t));
    return 0;
}

/* The safety properties, after every poll. */
static void check_all_or_nothing(void)
{
    const char *holder_of[3 * GWS];
    size_t n = 0;
    for (size_t g = 0; g < GWW.n; g++) {
        const elk_multi_t *m = &GW[g].m;
        if (!elk_multi_is_held(m, NOW())) {
            continue;
        }
        for (size_t i = 0; i < GW[g].count; i++) {
            const elk_lock_t *l = elk_multi_lock(m, i);
            assert_true(elk_lock_is_held(l, NOW())); /* all of them */
            assert_true(elk_multi_deadline(m) <= elk_lock_deadline(l));
            for (size_t k = 0; k < n; k++) { /* and nobody else on any of them */
                assert_string_not_equal(holder_of[k], elk_lock_key(l));
            }
            holder_of[n++] = elk_lock_key(l);
        }
    }
}

/* Gateway g's multi-lock over the names (count of them). */
static void gw_multi(size_t g, size_t count, const char *a, const char *b, const char *c)
{
    elk_lock_config_t cfg = gw_world_lock_cfg();
    GW[g].names[0] = a;
    GW[g].names[1] = b;
    GW[g].names[2] = c;
    GW[g].count = count;
    assert_int_equal(
        elk_multi_init(&GW[g].m, &GWW.client[g], GW[g].names, count, &cfg, on_multi, &GW[g].rec),
        ELK_OK);
}

static void world(size_t n)
{
    gw_world_setup(n);
    memset(GW, 0, sizeof GW);
    GWW.after_poll = check_all_or_nothing;
}

static void ask(size_t g, uint64_t wait_ms)
{
    assert_int_equal(elk_multi_acquire(&GW[g].m, NOW(), wait_ms ? NOW() + wait_ms : 0),
                     ELK_E_WOULD_BLOCK);
    gw_world_pump();
}

/* Servers that hold value under key. */
static size_t servers_with(const char *key, const char *value)
{
    size_t c = 0;
    for (size_t i = 0; i < GW_WORLD_NODES; i++) {
        const char *v = lfr_get(&GWW.srv[i], key);
        c += v != NULL && strcmp(v, value) == 0 ? 1u : 0u;
    }
    return c;
}

static void test_init_checks(void **state)
{
    (void)state;
    world(1);
    static elk_multi_t m;
    const char *one[] = {"a"};
    const char *twice[] = {"b", "a", "b"};
    const char *bad[] = {"a", "b{c"};
    const char *many[CONFIG_ELK_MULTI_MAX_RESOURCES + 1];
    char names[CONFIG_ELK_MULTI_MAX_RESOURCES + 1][8];
    for (size_t i = 0; i <= CONFIG_ELK_MULTI_MAX_RESOURCES; i++) {
        snprintf(names[i], sizeof names[i], "r%zu", i % 100u);
        many[i] = names[i];
    }
    elk_client_t *c = &GWW.client[0];
    assert_int_equal(elk_multi_init(&m, c, one, 1, NULL, NULL, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(
        elk_multi_init(&m, c, many, CONFIG_ELK_MULTI_MAX_RESOURCES + 1u, NULL, NULL, NULL),
        ELK_E_INVALID_ARG);
    assert_int_equal(elk_multi_init(&m, c, twice, 3, NULL, NULL, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_multi_init(&m, c, bad, 2, NULL, NULL, NULL), ELK_E_NAME_INVALID);
    assert_int_equal(c->lock_count, 0); /* a failed init leaves nothing registered */
    assert_int_equal(elk_multi_init(&m, c, twice, 2, NULL, NULL, NULL), ELK_OK);
    assert_int_equal(c->lock_count, 2);
    assert_string_equal(elk_lock_key(elk_multi_lock(&m, 0)), "t:{b}");
    assert_null(elk_multi_lock(&m, 2));
    assert_int_equal(elk_multi_state(&m), ELK_MULTI_IDLE);
    assert_int_equal(elk_multi_release(&m, NOW()), ELK_E_NOT_HELD);
    assert_int_equal(elk_multi_deinit(&m), ELK_OK);
    assert_int_equal(c->lock_count, 0);
}

/* Every resource held, each with its own token; the deadline is the earliest. */
static void test_all_held(void **state)
{
    (void)state;
    world(1);
    gw_multi(0, 3, "valve-2", "valve-1", "gate");
    gw_world_connect();
    ask(0, 0);
    assert_int_equal(count_type(&GW[0].rec, ELK_LOCK_EV_ACQUIRED), 1);
    assert_int_equal(elk_multi_state(&GW[0].m), ELK_MULTI_HELD);
    assert_true(elk_multi_is_held(&GW[0].m, NOW()));
    uint64_t earliest = UINT64_MAX;
    for (size_t i = 0; i < 3; i++) {
        const elk_lock_t *l = elk_multi_lock(&GW[0].m, i);
        assert_true(elk_multi_token(&GW[0].m, i) > 0u);
        assert_int_equal(elk_multi_token(&GW[0].m, i), elk_lock_token(l));
        assert_true(servers_with(elk_lock_key(l), elk_lock_value(l)) >= 2u);
        earliest = elk_lock_deadline(l) < earliest ? elk_lock_deadline(l) : earliest;
    }
    assert_int_equal(elk_multi_deadline(&GW[0].m), earliest);
}

/* The locks are asked for in the order of their names, whatever order they were given in. */
static void test_canonical_order(void **state)
{
    (void)state;
    world(1);
    gw_multi(0, 3, "c", "a", "b");
    gw_world_connect();
    size_t before = GWW.srv[0].nops;
    ask(0, 0);
    const char *want[] = {"t:{a}", "t:{b}", "t:{c}"};
    size_t seen = 0;
    for (size_t k = before; k < GWW.srv[0].nops && seen < 3; k++) {
        if (strcmp(GWW.srv[0].ops[k].which, "acquire") == 0) {
            assert_string_equal(GWW.srv[0].ops[k].key, want[seen]);
            seen++;
        }
    }
    assert_int_equal(seen, 3);
}

/* One resource is taken by another gateway: the acquire fails naming it, and the resource
 * already taken is given back at once. */
static void test_nothing_when_one_is_busy(void **state)
{
    (void)state;
    world(2);
    gw_multi(0, 2, "valve-1", "valve-2", NULL);
    gw_multi(1, 2, "valve-2", "valve-3", NULL);
    gw_world_connect();
    ask(1, 0);
    assert_true(elk_multi_is_held(&GW[1].m, NOW()));
    ask(0, 0);
    gw_world_run_until(NOW() + 500);
    size_t i = last_of(&GW[0].rec, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(GW[0].rec.resource[i], 1); /* valve-2, as given */
    assert_int_equal(GW[0].rec.err[i], ELK_E_LOCK_BUSY);
    assert_int_equal(elk_multi_state(&GW[0].m), ELK_MULTI_IDLE);
    assert_false(elk_lock_is_held(elk_multi_lock(&GW[0].m, 0), NOW()));
    for (size_t n = 0; n < GW_WORLD_NODES; n++) {
        assert_null(lfr_get(&GWW.srv[n], "t:{valve-1}")); /* given back */
    }
    assert_false(elk_multi_busy(&GW[0].m));
}

/* Two gateways ask for the same two resources in opposite orders, waiting: both are served
 * in turn (no deadlock), never at once. */
static void test_opposite_orders_do_not_deadlock(void **state)
{
    (void)state;
    world(2);
    gw_multi(0, 2, "a", "b", NULL);
    gw_multi(1, 2, "b", "a", NULL);
    gw_world_connect();
    assert_int_equal(elk_multi_acquire(&GW[0].m, NOW(), NOW() + 5000), ELK_E_WOULD_BLOCK);
    assert_int_equal(elk_multi_acquire(&GW[1].m, NOW(), NOW() + 5000), ELK_E_WOULD_BLOCK);
    uint64_t end = NOW() + 5000;
    bool served[2] = {false, false};
    while (NOW() < end && !(served[0] && served[1])) {
        gw_world_run_until(NOW() + 20);
        for (size_t g = 0; g < 2; g++) {
            if (elk_multi_is_held(&GW[g].m, NOW())) {
                served[g] = true;
                assert_int_equal(elk_multi_release(&GW[g].m, NOW()), ELK_OK);
            }
        }
    }
    assert_true(served[0] && served[1]);
    assert_int_equal(count_type(&GW[0].rec, ELK_LOCK_EV_ACQUIRE_FAILED), 0);
    assert_int_equal(count_type(&GW[1].rec, ELK_LOCK_EV_ACQUIRE_FAILED), 0);
}

/* One lease taken over: LOST fires once, for the whole, and nothing counts as held; the
 * other lock stops renewing and runs out (its key is not deleted early); the release says
 * the loss once. */
static void test_loss_of_one_is_loss_of_all(void **state)
{
    (void)state;
    world(1);
    gw_multi(0, 2, "valve-1", "valve-2", NULL);
    gw_world_connect();
    ask(0, 0);
    const elk_lock_t *other = elk_multi_lock(&GW[0].m, 1);
    uint32_t renewals = elk_lock_renewals(other);
    for (size_t n = 0; n < GW_WORLD_NODES; n++) {
        lfr_set(&GWW.srv[n], "t:{valve-1}", "intruder:1", 5000);
    }
    gw_world_run_until(NOW() + 1500);
    assert_int_equal(count_type(&GW[0].rec, ELK_LOCK_EV_LOST), 1);
    size_t i = last_of(&GW[0].rec, ELK_LOCK_EV_LOST);
    assert_int_equal(GW[0].rec.resource[i], 0);
    assert_int_equal(elk_multi_state(&GW[0].m), ELK_MULTI_LOST);
    assert_false(elk_multi_is_held(&GW[0].m, NOW()));
    assert_int_equal(elk_multi_deadline(&GW[0].m), 0);
    assert_true(elk_lock_renewals(other) <= renewals + 1u); /* abandoned: no more renewals */
    gw_world_run_until(NOW() + 3000);
    assert_int_equal(count_type(&GW[0].rec, ELK_LOCK_EV_LOST), 1); /* said once */
    assert_int_equal(elk_multi_release(&GW[0].m, NOW()), ELK_E_LOCK_LOST);
    assert_int_equal(elk_multi_state(&GW[0].m), ELK_MULTI_IDLE);
}

/* Release during the acquire cancels it: nothing held, nothing left on the servers. */
static void test_release_cancels_an_acquire(void **state)
{
    (void)state;
    world(1);
    gw_multi(0, 2, "a", "b", NULL);
    gw_world_connect();
    assert_int_equal(elk_multi_acquire(&GW[0].m, NOW(), 0), ELK_E_WOULD_BLOCK);
    assert_int_equal(elk_multi_acquire(&GW[0].m, NOW(), 0), ELK_E_STATE);
    assert_int_equal(elk_multi_release(&GW[0].m, NOW()), ELK_OK);
    gw_world_run_until(NOW() + 1000);
    assert_int_equal(count_type(&GW[0].rec, ELK_LOCK_EV_ACQUIRED), 0);
    assert_false(elk_multi_busy(&GW[0].m));
    assert_null(lfr_get(&GWW.srv[0], "t:{a}"));
    assert_null(lfr_get(&GWW.srv[0], "t:{b}"));
    assert_int_equal(elk_multi_deinit(&GW[0].m), ELK_OK);
}

/* deinit refuses while held. */
static void test_deinit_only_when_idle(void **state)
{
    (void)state;
    world(1);
    gw_multi(0, 2, "a", "b", NULL);
    gw_world_connect();
    ask(0, 0);
    assert_int_equal(elk_multi_deinit(&GW[0].m), ELK_E_STATE);
    assert_int_equal(elk_multi_release(&GW[0].m, NOW()), ELK_OK);
    gw_world_run_until(NOW() + 1000);
    assert_int_equal(elk_multi_deinit(&GW[0].m), ELK_OK);
}

/* The lock taken first is taken over (a quorum holds another value) while the multi-lock
 * waits for the next one: the acquire fails, and the lock that was lost must not stay busy
 * for ever, or the multi-lock could never be unregistered. (elk-sim --multi found it: the
 * lost lock released from inside its own LOST event stayed RELEASING with nothing left to
 * release, and the gateway could not take its next set.) */
static void test_lost_while_waiting_ends_clean(void **state)
{
    (void)state;
    world(2);
    gw_multi(0, 2, "valve-1", "valve-2", NULL);
    gw_multi(1, 2, "valve-2", "valve-3", NULL);
    gw_world_connect();
    ask(1, 0);
    assert_true(elk_multi_is_held(&GW[1].m, NOW()));
    ask(0, 5000); /* valve-1 taken, waiting for valve-2 */
    gw_world_run_until(NOW() + 100);
    assert_true(elk_lock_is_held(elk_multi_lock(&GW[0].m, 0), NOW()));
    for (size_t n = 0; n < GW_WORLD_NODES; n++) {
        lfr_set(&GWW.srv[n], "t:{valve-1}", "intruder:1", 5000);
    }
    gw_world_run_until(NOW() + 1500);
    size_t i = last_of(&GW[0].rec, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(GW[0].rec.resource[i], 0);
    assert_int_equal(elk_multi_state(&GW[0].m), ELK_MULTI_IDLE);
    gw_world_run_until(NOW() + 3000);
    assert_false(elk_multi_busy(&GW[0].m));
    assert_int_equal(elk_multi_deinit(&GW[0].m), ELK_OK);
}

/* The caller may release from inside the LOST event (elk/multi.h): the lock that was lost
 * must not stay busy for ever either. */
static void on_multi_release_at_lost(void *user, elk_multi_t *m, size_t resource,
                                     const elk_lock_event_t *ev)
{
    on_multi(user, m, resource, ev);
    if (ev->type == ELK_LOCK_EV_LOST) {
        assert_int_equal(elk_multi_release(m, ev->now), ELK_E_LOCK_LOST);
    }
}

static void test_release_inside_lost_ends_clean(void **state)
{
    (void)state;
    world(1);
    elk_lock_config_t cfg = gw_world_lock_cfg();
    GW[0].names[0] = "valve-1";
    GW[0].names[1] = "valve-2";
    GW[0].count = 2;
    assert_int_equal(elk_multi_init(&GW[0].m, &GWW.client[0], GW[0].names, 2, &cfg,
                                    on_multi_release_at_lost, &GW[0].rec),
                     ELK_OK);
    gw_world_connect();
    ask(0, 0);
    assert_true(elk_multi_is_held(&GW[0].m, NOW()));
    for (size_t n = 0; n < GW_WORLD_NODES; n++) {
        lfr_set(&GWW.srv[n], "t:{valve-1}", "intruder:1", 5000);
    }
    gw_world_run_until(NOW() + 1500);
    assert_int_equal(count_type(&GW[0].rec, ELK_LOCK_EV_LOST), 1);
    assert_int_equal(elk_multi_state(&GW[0].m), ELK_MULTI_IDLE);
    gw_world_run_until(NOW() + 3000);
    assert_false(elk_multi_busy(&GW[0].m));
    assert_int_equal(elk_multi_deinit(&GW[0].m), ELK_OK);
}

/* Four gateways on overlapping pairs of three resources, taking and giving back at random
 * for a simulated minute with waits: the checks after every poll hold, and everybody is
 * served. */
static void test_random_overlapping_sets(void **state)
{
    (void)state;
    world(4);
    gw_multi(0, 2, "A", "B", NULL);
    gw_multi(1, 2, "C", "B", NULL);
    gw_multi(2, 2, "A", "C", NULL);
    gw_multi(3, 3, "C", "A", "B");
    gw_world_connect();
    uint64_t end = NOW() + 60000, seed = 777;
    while (NOW() < end) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        size_t g = (size_t)(seed >> 33) % 4u;
        elk_multi_t *m = &GW[g].m;
        if (elk_multi_state(m) == ELK_MULTI_HELD || elk_multi_state(m) == ELK_MULTI_LOST) {
            if ((seed >> 20) % 3u == 0u || elk_multi_state(m) == ELK_MULTI_LOST) {
                (void)elk_multi_release(m, NOW());
            }
        } else if (elk_multi_state(m) == ELK_MULTI_IDLE) {
            assert_int_equal(elk_multi_acquire(m, NOW(), (seed >> 40) % 2u ? NOW() + 800 : 0),
                             ELK_E_WOULD_BLOCK);
        }
        gw_world_run_until(NOW() + 50 + (seed >> 50) % 200u);
    }
    for (size_t g = 0; g < 4; g++) {
        assert_true(count_type(&GW[g].rec, ELK_LOCK_EV_ACQUIRED) > 0u);
        assert_int_equal(count_type(&GW[g].rec, ELK_LOCK_EV_LOST), 0);
    }
}

int main(void)
{
    return ELK_RUN_TESTS(test_init_checks, test_all_held, test_canonical_order,
                         test_nothing_when_one_is_busy, test_opposite_orders_do_not_deadlock,
                         test_loss_of_one_is_loss_of_all, test_release_cancels_an_acquire,
                         test_deinit_only_when_idle, test_random_overlapping_sets,
                         test_lost_while_waiting_ends_clean, test_release_inside_lost_ends_clean);
}
