/* SPDX-License-Identifier: MIT */
/*
 * Fair waiting (elk/fair.h, lib/fair): grants in ticket order, a crashed waiter skipped once
 * its ticket's TTL passed on server time, a queue rebuilt on a master that lost its data, a
 * wait deadline that gives the ticket back. Several gateways on the same in-memory Redis
 * servers (support/gw_world.h); after every poll of every client: never two holders.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "elk/err.h"
#include "elk/fair.h"
#include "elk/lock.h"
#include "gw_world.h"
#include "test_main.h"

#define GWS GW_WORLD_MAX
#define TICKET_TTL 600u

typedef struct gw {
    elk_fair_t f;
    bool crashed; /* its fair layer is no longer polled: no renewal, no step */
    unsigned acquired, failed;
    int last_err;
    uint64_t acquired_at;
} gw_t;

static gw_t GW[GWS];
static size_t GRANT[64]; /* gateways in the order they were granted */
static int64_t GRANT_TICKET[64];
static size_t NGRANT;

static uint64_t NOW(void)
{
    return gw_world_now();
}

static bool CHECK_ORDER; /* the random test: check each grant against the live waiters */

/* Whether waiter a's place is before b's: by ticket, then by id (the servers' ZRANK). */
static bool ahead_of(const elk_fair_t *a, const elk_fair_t *b)
{
    return a->ticket < b->ticket || (a->ticket == b->ticket && strcmp(a->id, b->id) < 0);
}

/* At a grant: no live waiter holding a ticket was ahead of the one granted. */
static void check_ticket_order(const gw_t *granted)
{
    for (size_t h = 0; h < GWW.n; h++) {
        const gw_t *o = &GW[h];
        elk_fair_phase_t ph = elk_fair_phase(&o->f);
        if (o == granted || o->crashed || (ph != ELK_FAIR_QUEUED && ph != ELK_FAIR_LOCKING)) {
            continue;
        }
        if (ahead_of(&o->f, &granted->f)) {
            fail_msg("gw%zu granted with ticket %lld while gw%zu waits with ticket %lld",
                     (size_t)(granted - GW), (long long)granted->f.ticket, h,
                     (long long)o->f.ticket);
        }
    }
}

static void on_fair(void *user, elk_fair_t *f, const elk_lock_event_t *ev)
{
    gw_t *g = (gw_t *)user;
    if (ev->type == ELK_LOCK_EV_ACQUIRED && CHECK_ORDER) {
        check_ticket_order(g);
    }
    if (ev->type == ELK_LOCK_EV_ACQUIRED) {
        g->acquired++;
        g->acquired_at = ev->now;
        if (NGRANT < 64u) {
            GRANT_TICKET[NGRANT] = elk_fair_ticket(f);
            GRANT[NGRANT++] = (size_t)(g - GW);
        }
    } else if (ev->type == ELK_LOCK_EV_ACQUIRE_FAILED) {
        g->failed++;
        g->last_err = ev->err;
    }
}

/* After every poll: at most one holder. */
static void check_one_holder(void)
{
    unsigned held = 0;
    for (size_t g = 0; g < GWW.n; g++) {
        held += elk_fair_is_held(&GW[g].f, NOW()) ? 1u : 0u;
    }
    assert_true(held <= 1u);
}

/* The world's pump, and each live gateway's fair layer after it. */
static uint64_t pump(void)
{
    uint64_t next = UINT64_MAX;
    for (int round = 0; round < 50; round++) {
        size_t served = 0;
        next = gw_world_pump();
        for (size_t g = 0; g < GWW.n; g++) {
            if (!GW[g].crashed) {
                uint64_t w = elk_fair_poll(&GW[g].f, NOW());
                next = w < next ? w : next;
            }
        }
        for (size_t i = 0; i < GW_WORLD_NODES; i++) {
            served += lfr_serve(&GWW.srv[i]);
        }
        if (served == 0u) {
            break;
        }
    }
    return next;
}

static void run_until(uint64_t t)
{
    fake_clock_run_until(&GWW.h[0].clock, t, pump);
}

/* Run until gateway g is granted (at most `bound` ms). */
static void run_until_granted(size_t g, unsigned before, uint64_t bound)
{
    uint64_t end = NOW() + bound;
    while (GW[g].acquired == before && NOW() < end) {
        run_until(NOW() + 10u);
    }
    assert_int_equal(GW[g].acquired, before + 1u);
}

static void setup_fair(size_t n)
{
    elk_lock_config_t cfg = gw_world_lock_cfg();
    memset(GW, 0, sizeof GW);
    NGRANT = 0;
    CHECK_ORDER = false;
    gw_world_setup(n);
    for (size_t g = 0; g < n; g++) {
        assert_int_equal(
            elk_fair_init(&GW[g].f, &GWW.client[g], "valve", &cfg, TICKET_TTL, on_fair, &GW[g]),
            ELK_OK);
    }
    GWW.after_poll = check_one_holder;
    gw_world_connect();
}

/* Gateway g starts waiting (deadline far) and has its ticket before the next one comes. */
static void enqueue(size_t g)
{
    assert_int_equal(elk_fair_acquire(&GW[g].f, NOW(), NOW() + 60000u), ELK_E_WOULD_BLOCK);
    for (int i = 0; i < 100 && elk_fair_ticket(&GW[g].f) == 0; i++) {
        run_until(NOW() + 5u);
    }
    assert_true(elk_fair_ticket(&GW[g].f) > 0);
}

static void test_init_checks(void **state)
{
    (void)state;
    setup_fair(1);
    assert_int_equal(elk_fair_init(NULL, &GWW.client[0], "x", NULL, 0, NULL, NULL),
                     ELK_E_INVALID_ARG);
    elk_fair_t f;
    assert_int_equal(elk_fair_init(&f, &GWW.client[0], "x", NULL, 2u, NULL, NULL),
                     ELK_E_INVALID_ARG);
    assert_int_equal(elk_fair_init(&f, &GWW.client[0], "bad name", NULL, 0, NULL, NULL),
                     ELK_E_NAME_INVALID);
    assert_int_equal(elk_fair_phase(&GW[0].f), ELK_FAIR_IDLE);
    assert_int_equal(elk_fair_release(&GW[0].f, NOW()), ELK_E_NOT_HELD);
    assert_int_equal(elk_fair_deinit(&GW[0].f), ELK_OK);
}

/* Waiters come in the order 4, 3, 2, 1 while 0 holds: the plain lock's race would favour the
 * gateway polled first (1), the queue grants 4, 3, 2, 1, tickets increasing. */
static void test_grants_in_ticket_order(void **state)
{
    (void)state;
    setup_fair(5);
    assert_int_equal(elk_fair_acquire(&GW[0].f, NOW(), NOW() + 5000u), ELK_E_WOULD_BLOCK);
    run_until_granted(0, 0, 5000);
    for (size_t g = 4; g >= 1; g--) {
        enqueue(g);
    }
    run_until(NOW() + 300u);
    /* nobody but the head asks for the lock */
    assert_int_equal(elk_fair_phase(&GW[4].f), ELK_FAIR_LOCKING);
    for (size_t g = 1; g <= 3; g++) {
        assert_int_equal(elk_fair_phase(&GW[g].f), ELK_FAIR_QUEUED);
        assert_int_equal(elk_lock_state(elk_fair_lock(&GW[g].f)), ELK_LOCK_IDLE);
    }
    assert_int_equal(elk_fair_ahead(&GW[1].f), 3u);
    size_t holder = 0;
    for (size_t next = 4; next >= 1; next--) {
        run_until(NOW() + 100u);
        assert_int_equal(elk_fair_release(&GW[holder].f, NOW()), ELK_OK);
        run_until_granted(next, 0, 5000);
        holder = next;
    }
    assert_int_equal(elk_fair_release(&GW[holder].f, NOW()), ELK_OK);
    assert_int_equal(NGRANT, 5u);
    static const size_t want[5] = {0, 4, 3, 2, 1};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(GRANT[i], want[i]);
        if (i > 1) {
            assert_true(GRANT_TICKET[i] > GRANT_TICKET[i - 1]);
        }
    }
    /* each left the queue when granted: nothing is left on any server */
    run_until(NOW() + 50u);
    for (size_t i = 0; i < GW_WORLD_NODES; i++) {
        assert_int_equal(lfr_queue_len(&GWW.srv[i], "t:{valve}:q"), 0u);
    }
}

/* A waiter that stops renewing its ticket (crashed) blocks the queue no longer than its
 * ticket TTL: the one behind it is granted, the crashed one never. */
static void test_crashed_waiter_is_skipped(void **state)
{
    (void)state;
    setup_fair(4);
    assert_int_equal(elk_fair_acquire(&GW[0].f, NOW(), NOW() + 5000u), ELK_E_WOULD_BLOCK);
    run_until_granted(0, 0, 5000);
    enqueue(1);
    enqueue(2); /* crashes below, while second in line */
    enqueue(3);
    run_until(NOW() + 200u);
    GW[2].crashed = true;
    uint64_t crashed_at = NOW();
    assert_int_equal(elk_fair_release(&GW[0].f, NOW()), ELK_OK);
    run_until_granted(1, 0, 5000);
    assert_int_equal(elk_fair_release(&GW[1].f, NOW()), ELK_OK);
    uint64_t released_at = NOW();
    run_until_granted(3, 0, 10000);
    /* gateway 3 waited for the crashed ticket to run out, and not much longer */
    assert_true(GW[3].acquired_at >= crashed_at + TICKET_TTL - 10u);
    assert_true(GW[3].acquired_at <= released_at + TICKET_TTL + 500u);
    assert_int_equal(GW[2].acquired, 0u);
    assert_int_equal(NGRANT, 3u);
    assert_int_equal(GRANT[2], 3u);
    (void)elk_fair_release(&GW[3].f, NOW());
}

/* A master that lost its data (FLUSHALL) has the queue back, same tickets, after the next
 * renewal of each ticket; one that lost only the queue's keys (its sequence restarts at 1)
 * does not let a newcomer in ahead (the ticket is the max over a quorum); the grants keep
 * their order. */
static void test_queue_rebuilt_after_data_loss(void **state)
{
    (void)state;
    setup_fair(5);
    assert_int_equal(elk_fair_acquire(&GW[0].f, NOW(), NOW() + 5000u), ELK_E_WOULD_BLOCK);
    run_until_granted(0, 0, 5000);
    enqueue(3);
    enqueue(2);
    enqueue(1);
    run_until(NOW() + 100u);
    lfr_flushall(&GWW.srv[1]);
    assert_null(lfr_queue_find(&GWW.srv[1], "t:{valve}:q", GW[3].f.id));
    run_until(NOW() + TICKET_TTL / 3u + 100u);
    for (size_t g = 1; g <= 3; g++) {
        const lfr_qmember_t *m = lfr_queue_find(&GWW.srv[1], "t:{valve}:q", GW[g].f.id);
        assert_non_null(m);
        assert_int_equal(m->ticket, elk_fair_ticket(&GW[g].f));
    }
    /* the sequence came back too */
    assert_true(lfr_int(&GWW.srv[1], "t:{valve}:qseq") >= elk_fair_ticket(&GW[1].f));
    /* server 0 loses the queue's keys alone (it keeps its vote): a newcomer still goes last */
    memset(GWW.srv[0].q, 0, sizeof GWW.srv[0].q);
    lfr_del(&GWW.srv[0], "t:{valve}:qseq");
    enqueue(4);
    assert_true(elk_fair_ticket(&GW[4].f) > elk_fair_ticket(&GW[1].f));
    size_t holder = 0;
    static const size_t order[4] = {3, 2, 1, 4};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(elk_fair_release(&GW[holder].f, NOW()), ELK_OK);
        run_until_granted(order[i], 0, 5000);
        holder = order[i];
    }
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(GRANT[i + 1u], order[i]);
    }
    (void)elk_fair_release(&GW[holder].f, NOW());
}

/* A wait that reaches its deadline while others are ahead gives its ticket back on every
 * server at once (not when the ticket runs out), and whoever is behind it moves up; so does
 * the head whose lock acquire reaches its deadline. */
static void test_deadline_leaves_the_queue(void **state)
{
    (void)state;
    setup_fair(4);
    assert_int_equal(elk_fair_acquire(&GW[0].f, NOW(), NOW() + 5000u), ELK_E_WOULD_BLOCK);
    run_until_granted(0, 0, 5000);
    assert_int_equal(elk_fair_acquire(&GW[2].f, NOW(), NOW() + 1200u), ELK_E_WOULD_BLOCK);
    run_until(NOW() + 50u);
    assert_int_equal(elk_fair_acquire(&GW[1].f, NOW(), NOW() + 400u), ELK_E_WOULD_BLOCK);
    run_until(NOW() + 50u);
    enqueue(3);
    run_until(NOW() + 200u);
    assert_int_equal(elk_fair_phase(&GW[2].f), ELK_FAIR_LOCKING);
    assert_int_equal(elk_fair_ahead(&GW[3].f), 2u);
    uint64_t until = NOW() + 400u;
    while (GW[1].failed == 0u && NOW() < until) {
        run_until(NOW() + 10u);
    }
    assert_int_equal(GW[1].failed, 1u);
    assert_int_equal(GW[1].last_err, ELK_E_LOCK_TIMEOUT);
    assert_int_equal(elk_fair_phase(&GW[1].f), ELK_FAIR_IDLE);
    run_until(NOW() + 20u); /* far less than the ticket TTL */
    for (size_t i = 0; i < GW_WORLD_NODES; i++) {
        assert_null(lfr_queue_find(&GWW.srv[i], "t:{valve}:q", GW[1].f.id));
    }
    run_until(NOW() + 100u);
    assert_int_equal(elk_fair_ahead(&GW[3].f), 1u);
    /* the head's lock acquire times out too (0 still holds): it leaves, 3 is the head */
    until = NOW() + 1500u;
    while (GW[2].failed == 0u && NOW() < until) {
        run_until(NOW() + 10u);
    }
    assert_int_equal(GW[2].failed, 1u);
    run_until(NOW() + 20u);
    for (size_t i = 0; i < GW_WORLD_NODES; i++) {
        assert_null(lfr_queue_find(&GWW.srv[i], "t:{valve}:q", GW[2].f.id));
    }
    run_until(NOW() + 100u);
    assert_int_equal(elk_fair_phase(&GW[3].f), ELK_FAIR_LOCKING);
    assert_int_equal(elk_fair_release(&GW[0].f, NOW()), ELK_OK);
    run_until_granted(3, 0, 5000);
    assert_int_equal(GW[1].acquired + GW[2].acquired, 0u);
    /* a wait without a deadline, behind a holder, fails at once as busy */
    assert_int_equal(elk_fair_acquire(&GW[0].f, NOW(), 0), ELK_E_WOULD_BLOCK);
    run_until(NOW() + 200u);
    assert_int_equal(GW[0].failed, 1u);
    assert_int_equal(GW[0].last_err, ELK_E_LOCK_BUSY);
    (void)elk_fair_release(&GW[3].f, NOW());
    run_until(NOW() + 100u);
    assert_false(elk_fair_busy(&GW[3].f));
    assert_int_equal(elk_fair_deinit(&GW[3].f), ELK_OK);
}

/* Release while queued cancels: the ticket is given back, nothing is granted later. */
static void test_release_while_queued(void **state)
{
    (void)state;
    setup_fair(2);
    assert_int_equal(elk_fair_acquire(&GW[0].f, NOW(), NOW() + 5000u), ELK_E_WOULD_BLOCK);
    run_until_granted(0, 0, 5000);
    enqueue(1);
    assert_int_equal(elk_fair_deinit(&GW[1].f), ELK_E_STATE);
    assert_int_equal(elk_fair_release(&GW[1].f, NOW()), ELK_OK);
    run_until(NOW() + 50u);
    for (size_t i = 0; i < GW_WORLD_NODES; i++) {
        assert_int_equal(lfr_queue_len(&GWW.srv[i], "t:{valve}:q"), 0u);
    }
    assert_int_equal(elk_fair_release(&GW[0].f, NOW()), ELK_OK);
    run_until(NOW() + 1000u);
    assert_int_equal(GW[1].acquired, 0u);
}

/* A master that stops answering (its requests time out only after the node's request
 * timeout, longer than the ticket TTL here) holds up neither the renewals nor the order. */
static void test_silent_master(void **state)
{
    (void)state;
    setup_fair(4);
    assert_int_equal(elk_fair_acquire(&GW[0].f, NOW(), NOW() + 5000u), ELK_E_WOULD_BLOCK);
    run_until_granted(0, 0, 5000);
    enqueue(3);
    enqueue(2);
    enqueue(1);
    GWW.srv[2].silent = true;
    run_until(NOW() + 3u * TICKET_TTL);
    for (size_t g = 1; g <= 3; g++) { /* still queued: the tickets were renewed */
        assert_int_equal(GW[g].failed, 0u);
        const lfr_qmember_t *m = lfr_queue_find(&GWW.srv[0], "t:{valve}:q", GW[g].f.id);
        assert_non_null(m);
        assert_true(m->expire_ms > (long long)NOW() + GWW.srv[0].wall_offset_ms);
    }
    size_t holder = 0;
    static const size_t order[3] = {3, 2, 1};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(elk_fair_release(&GW[holder].f, NOW()), ELK_OK);
        run_until_granted(order[i], 0, 10000);
        holder = order[i];
    }
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(GRANT[i + 1u], order[i]);
    }
    (void)elk_fair_release(&GW[holder].f, NOW());
}

/* A random minute of five gateways: acquires with and without deadlines, releases, waiters
 * that crash while queued (and come back later, giving the ticket back). Every grant goes to
 * the live waiter with the lowest ticket; never two holders. */
static void test_random_minute(void **state)
{
    (void)state;
    setup_fair(5);
    CHECK_ORDER = true;
    uint64_t seed = 0x9e3779b97f4a7c15u, end = NOW() + 60000u;
    unsigned grants = 0, crashes = 0;
    while (NOW() < end) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        size_t g = (size_t)(seed >> 33) % 5u;
        gw_t *w = &GW[g];
        elk_fair_phase_t ph = elk_fair_phase(&w->f);
        if (w->crashed) {
            if ((seed >> 20) % 4u == 0u) { /* back: the ticket is given back */
                w->crashed = false;
                (void)elk_fair_release(&w->f, NOW());
            }
        } else if (elk_fair_is_held(&w->f, NOW())) {
            if ((seed >> 20) % 2u == 0u) {
                assert_int_equal(elk_fair_release(&w->f, NOW()), ELK_OK);
            }
        } else if (ph == ELK_FAIR_QUEUED && (seed >> 24) % 8u == 0u) {
            w->crashed = true;
            crashes++;
        } else if (ph == ELK_FAIR_IDLE && !elk_fair_busy(&w->f)) {
            uint64_t dl = (seed >> 40) % 4u == 0u ? 0u : NOW() + 300u + (seed >> 44) % 3000u;
            assert_int_equal(elk_fair_acquire(&w->f, NOW(), dl), ELK_E_WOULD_BLOCK);
        }
        run_until(NOW() + 20u + (seed >> 50) % 150u);
    }
    for (size_t g = 0; g < 5; g++) {
        grants += GW[g].acquired;
    }
    assert_true(grants >= 20u);
    assert_true(crashes >= 3u);
}

int main(void)
{
    return ELK_RUN_TESTS(test_init_checks, test_grants_in_ticket_order,
                         test_crashed_waiter_is_skipped, test_queue_rebuilt_after_data_loss,
                         test_deadline_leaves_the_queue, test_release_while_queued,
                         test_silent_master, test_random_minute);
}
