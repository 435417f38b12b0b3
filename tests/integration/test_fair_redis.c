/* SPDX-License-Identifier: MIT */
/*
 * Fair waiting (elk/fair.h) against real redis-server fleets of 1, 3 and 5 masters on
 * 127.0.0.1: five gateways on one resource. gwA holds; gwD, gwE, gwC, gwB queue in that
 * order; gwE then stops (nothing of it runs any more: a crashed waiter). Each holder
 * releases in turn: the grants go A, D, C, B (ticket order among live waiters), gwE's
 * ticket is skipped once it ran out on the servers, and the queue is empty at the end.
 * test_fair_tls includes this file with ELK_IT_TLS set.
 *
 * No assertion depends on timing: each wait is for an event with a generous bound, the
 * order is read from the record of grants, the holders and the queue from the servers.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "elk/fair.h"
#include "elk/lock.h"
#include "elk/port_posix.h"
#include "fleet.h"
#include "it_env.h"
#include "stack.h"

#define GWS 5u
#define TICKET_TTL 1500u
#define DROPPED 4u

typedef struct gw {
    elk_ts_stack_t st;
    elk_fair_t f;
    size_t acquired, failed, lost;
    bool stopped; /* no longer driven at all */
    size_t n;
} gw_t;

static gw_t GW[GWS];
static const char *IDS[GWS] = {"gwA", "gwB", "gwC", "gwD", "gwE"};
static size_t GRANT[16];
static int64_t GRANT_TICKET[16];
static size_t NGRANT;

static void on_fair(void *user, elk_fair_t *f, const elk_lock_event_t *ev)
{
    gw_t *g = user;
    if (ev->type == ELK_LOCK_EV_ACQUIRED) {
        g->acquired++;
        if (NGRANT < 16u) {
            GRANT_TICKET[NGRANT] = elk_fair_ticket(f);
            GRANT[NGRANT++] = (size_t)(g - GW);
        }
    } else if (ev->type == ELK_LOCK_EV_ACQUIRE_FAILED) {
        g->failed++;
    } else if (ev->type == ELK_LOCK_EV_LOST) {
        g->lost++;
    }
}

static void gw_init(gw_t *g, size_t n, const char *id)
{
    memset(g, 0, sizeof *g);
    g->n = n;
    elk_it_stack_open(&g->st, n, id, false);
    elk_lock_config_t c;
    elk_it_lock_config(&c);
    assert_int_equal(elk_fair_init(&g->f, &g->st.client, "valve", &c, TICKET_TTL, on_fair, g),
                     ELK_OK);
    elk_it_stack_connect(&g->st);
}

/* Poll every gateway still running (client, then its fair layer) until cond holds (true)
 * or ms pass (false). */
static bool drive(bool (*cond)(void), uint32_t ms)
{
    uint64_t end = elk_posix_now_ms() + ms;
    for (;;) {
        uint64_t now = elk_posix_now_ms(), next = end;
        if (cond()) {
            return true;
        }
        if (now >= end) {
            return false;
        }
        elk_wait_t w[GWS * 2 * CONFIG_ELK_MAX_NODES];
        size_t nw = 0;
        for (size_t g = 0; g < GWS; g++) {
            if (GW[g].stopped) {
                continue;
            }
            uint64_t t = elk_client_poll(&GW[g].st.client, now);
            uint64_t u = elk_fair_poll(&GW[g].f, now);
            t = u < t ? u : t;
            next = t < next ? t : next;
            nw += elk_client_waits(&GW[g].st.client, w + nw, 2 * CONFIG_ELK_MAX_NODES);
        }
        if (next > now) {
            elk_posix_wait(w, nw, next, NULL);
        }
    }
}

static size_t WANT_G;
static bool g_held(void)
{
    return elk_fair_is_held(&GW[WANT_G].f, elk_posix_now_ms());
}
static bool g_ticketed(void)
{
    return elk_fair_ticket(&GW[WANT_G].f) > 0 && elk_fair_phase(&GW[WANT_G].f) != ELK_FAIR_TAKING;
}
static bool all_idle(void)
{
    for (size_t g = 0; g < GWS; g++) {
        if (!GW[g].stopped && elk_fair_busy(&GW[g].f)) {
            return false;
        }
    }
    return true;
}

/* The one holder, checked against the servers: its value stands on a quorum. */
static void one_holder_checked(size_t n, size_t want)
{
    size_t held = 0;
    for (size_t g = 0; g < GWS; g++) {
        if (!GW[g].stopped && elk_fair_is_held(&GW[g].f, elk_posix_now_ms())) {
            held++;
            assert_int_equal(g, want);
        }
    }
    assert_int_equal(held, 1u);
    const elk_lock_t *l = elk_fair_lock(&GW[want].f);
    assert_true(elk_it_servers_with(n, elk_lock_key(l), elk_lock_value(l)) >= n / 2u + 1u);
}

static void enqueue(size_t g)
{
    uint64_t now = elk_posix_now_ms();
    assert_int_equal(elk_fair_acquire(&GW[g].f, now, now + 120000u), ELK_E_WOULD_BLOCK);
    WANT_G = g;
    assert_true(drive(g_ticketed, 30000));
}

static void hand_over(size_t n, size_t from, size_t to)
{
    assert_int_equal(elk_fair_release(&GW[from].f, elk_posix_now_ms()), ELK_OK);
    WANT_G = to;
    assert_true(drive(g_held, 30000)); /* a hand-off past a dropped ticket takes one TTL */
    one_holder_checked(n, to);
}

static void check_order(size_t n)
{
    NGRANT = 0;
    assert_int_equal(elk_it_fleet_up(n, false), 0);
    for (size_t g = 0; g < GWS; g++) {
        gw_init(&GW[g], n, IDS[g]);
    }
    uint64_t now = elk_posix_now_ms();
    assert_int_equal(elk_fair_acquire(&GW[0].f, now, now + 30000u), ELK_E_WOULD_BLOCK);
    WANT_G = 0;
    assert_true(drive(g_held, 30000));
    enqueue(3);
    enqueue(DROPPED);
    enqueue(2);
    enqueue(1);
    GW[DROPPED].stopped = true; /* crashed while second in line */
    hand_over(n, 0, 3);
    hand_over(n, 3, 2); /* past the dropped ticket once it ran out */
    hand_over(n, 2, 1);
    assert_int_equal(NGRANT, 4u);
    static const size_t want[4] = {0, 3, 2, 1};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(GRANT[i], want[i]);
        if (i > 1u) {
            assert_true(GRANT_TICKET[i] > GRANT_TICKET[i - 1u]);
        }
    }
    assert_true(elk_fair_ticket(&GW[DROPPED].f) > GRANT_TICKET[1]);
    assert_true(elk_fair_ticket(&GW[DROPPED].f) < GRANT_TICKET[2]);
    assert_int_equal(GW[DROPPED].acquired, 0u);
    (void)elk_fair_release(&GW[1].f, elk_posix_now_ms());
    assert_true(drive(all_idle, 30000));
    for (size_t i = 0; i < n; i++) { /* every ticket given back or run out */
        redisReply *r = elk_tf_cmd(&elk_it.tf, i, "ZSCORE it:{valve}:q %s", GW[1].f.id);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_NIL);
        freeReplyObject(r);
    }
    for (size_t g = 0; g < GWS; g++) {
        assert_int_equal(GW[g].lost, 0);
        if (!GW[g].stopped) {
            assert_int_equal(elk_fair_deinit(&GW[g].f), ELK_OK);
        }
        elk_ts_stack_close(&GW[g].st);
    }
    elk_tf_stop(&elk_it.tf);
}

int main(void)
{
    return elk_it_run_fleet_sizes("fair", "order", check_order, ELK_IT_GROUP_SETUP);
}
