/* SPDX-License-Identifier: MIT */
/*
 * All-or-nothing leases (elk/multi.h) against real redis-server fleets of 1, 3 and 5
 * masters on 127.0.0.1, as the least-privilege lock user. Three gateways ask for
 * overlapping sets in opposite orders ({a,b}, {b,a}, {b,c}) at the same moment, round after
 * round: each is served within its wait (no deadlock, no failed acquire), no resource ever
 * has two holders (checked after every poll, and against the servers' keys at each grant),
 * and each resource's tokens grow from holder to holder. Then one resource of a held lease
 * is deleted on every server: LOST ends the whole lease once, and the other resource is not
 * released early (its key stays on the servers with the holder's value). test_multi_tls
 * includes this file with ELK_IT_TLS set.
 *
 * No assertion depends on timing: each wait is for an event with a generous bound, and the
 * servers' own keys say who holds what.
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

#include "elk/lock.h"
#include "elk/multi.h"
#include "elk/port_posix.h"
#include "acl_rules.h"
#include "fleet.h"
#include "it_env.h"
#include "stack.h"

#define GWS 3u
#define ROUNDS 8u
#define WAIT_MS 20000u /* each acquire's wait: far beyond a round's holds, even under load */
#define RES 3u         /* a, b, c */

typedef struct gw {
    elk_ts_stack_t st;
    elk_multi_t m;
    size_t acquired, failed, lost, lost_resource;
    int last_err;
    size_t n;
    bool asking, served;
    uint64_t asked_at, release_at;
} gw_t;

static gw_t GW[GWS];
static const char *IDS[GWS] = {"gwA", "gwB", "gwC"};
/* opposite orders: gwA a then b, gwB b then a; gwC shares b */
static const char *const SETS[GWS][2] = {{"a", "b"}, {"b", "a"}, {"b", "c"}};
static uint64_t LAST_TOKEN[RES];

static void on_multi(void *user, elk_multi_t *m, size_t resource, const elk_lock_event_t *ev)
{
    gw_t *g = user;
    (void)m;
    if (ev->type == ELK_LOCK_EV_ACQUIRED) {
        g->acquired++;
    } else if (ev->type == ELK_LOCK_EV_ACQUIRE_FAILED) {
        g->failed++;
        g->last_err = ev->err;
    } else if (ev->type == ELK_LOCK_EV_LOST) {
        g->lost++;
        g->lost_resource = resource;
    }
}

static void gw_init(size_t k, size_t n)
{
    gw_t *g = &GW[k];
    memset(g, 0, sizeof *g);
    g->n = n;
    elk_it_stack_open(&g->st, n, IDS[k], true);
    elk_lock_config_t c;
    elk_it_lock_config(&c);
    assert_int_equal(elk_multi_init(&g->m, &g->st.client, SETS[k], 2, &c, on_multi, g), ELK_OK);
    elk_it_stack_connect(&g->st);
}

static size_t res_index(const char *name)
{
    return (size_t)(name[0] - 'a');
}

/* After every poll: a multi-lock said held holds every lock of it, and no resource has two
 * holders. */
static void check_exclusion(uint64_t now)
{
    size_t holder[RES] = {GWS, GWS, GWS};
    for (size_t g = 0; g < GWS; g++) {
        if (!elk_multi_is_held(&GW[g].m, now)) {
            continue;
        }
        for (size_t i = 0; i < 2; i++) {
            size_t r = res_index(SETS[g][i]);
            assert_true(elk_lock_is_held(elk_multi_lock(&GW[g].m, i), now));
            assert_int_equal(holder[r], GWS);
            holder[r] = g;
        }
    }
}

/* A new grant: the servers hold the holder's value for each resource on a quorum, and each
 * resource's token is above the previous holder's. */
static void check_grant(size_t g)
{
    for (size_t i = 0; i < 2; i++) {
        const elk_lock_t *l = elk_multi_lock(&GW[g].m, i);
        size_t r = res_index(SETS[g][i]);
        uint64_t t = elk_multi_token(&GW[g].m, i);
        assert_true(elk_it_servers_with(GW[0].n, elk_lock_key(l), elk_lock_value(l)) >=
                    GW[g].n / 2u + 1u);
        assert_true(t > LAST_TOKEN[r]);
        LAST_TOKEN[r] = t;
    }
}

/* One poll of every gateway (waiting for the earliest wake or socket), then the checks. */
static void poll_all(uint64_t until)
{
    uint64_t now = elk_posix_now_ms(), next = until;
    elk_wait_t w[GWS * 2 * CONFIG_ELK_MAX_NODES];
    size_t nw = 0;
    for (size_t g = 0; g < GWS; g++) {
        uint64_t t = elk_client_poll(&GW[g].st.client, now);
        next = t < next ? t : next;
        nw += elk_client_waits(&GW[g].st.client, w + nw, 2 * CONFIG_ELK_MAX_NODES);
    }
    check_exclusion(elk_posix_now_ms());
    if (next > now) {
        elk_posix_wait(w, nw, next, NULL);
    }
}

/* One round: all three ask at once; each holds briefly when served, then releases. Every
 * one is served within its wait, none fails. */
static void round_of_three(void)
{
    uint64_t now = elk_posix_now_ms();
    for (size_t g = 0; g < GWS; g++) {
        GW[g].served = false;
        GW[g].asking = true;
        GW[g].asked_at = now;
        assert_int_equal(elk_multi_acquire(&GW[g].m, now, now + WAIT_MS), ELK_E_WOULD_BLOCK);
    }
    uint64_t end = now + WAIT_MS + 30000u;
    size_t served = 0;
    while (served < GWS) {
        now = elk_posix_now_ms();
        assert_true(now < end);
        for (size_t g = 0; g < GWS; g++) {
            gw_t *x = &GW[g];
            assert_int_equal(x->failed, 0); /* no deadlock: nobody's wait runs out */
            if (x->asking && elk_multi_is_held(&x->m, now)) {
                x->asking = false;
                x->release_at = now + 30u;
                check_grant(g);
            } else if (!x->asking && !x->served && now >= x->release_at) {
                assert_int_equal(elk_multi_release(&x->m, now), ELK_OK);
                x->served = true;
                served++;
            }
        }
        poll_all(now + 10u);
    }
}

static bool all_idle(void)
{
    for (size_t g = 0; g < GWS; g++) {
        if (elk_multi_busy(&GW[g].m)) {
            return false;
        }
    }
    return true;
}

static void poll_until(bool (*cond)(void), uint32_t ms)
{
    uint64_t end = elk_posix_now_ms() + ms;
    while (!cond()) {
        assert_true(elk_posix_now_ms() < end);
        poll_all(elk_posix_now_ms() + 10u);
    }
}

static bool a_lost(void)
{
    return GW[0].lost > 0u;
}

static bool a_abandoned_ran_out(void)
{
    return !elk_lock_is_held(elk_multi_lock(&GW[0].m, 1), elk_posix_now_ms());
}

/* gwA holds {a,b}; it:{a} is deleted on every server: LOST once, for resource a, the lease
 * is not held any more, and it:{b} still carries gwA's value where it did (abandoned, not
 * released) until it runs out. */
static void loss_of_one(void)
{
    uint64_t now = elk_posix_now_ms();
    GW[0].acquired = GW[0].failed = GW[0].lost = 0;
    assert_int_equal(elk_multi_acquire(&GW[0].m, now, now + WAIT_MS), ELK_E_WOULD_BLOCK);
    uint64_t end = now + WAIT_MS + 30000u;
    while (!elk_multi_is_held(&GW[0].m, elk_posix_now_ms())) {
        assert_true(elk_posix_now_ms() < end);
        assert_int_equal(GW[0].failed, 0);
        poll_all(elk_posix_now_ms() + 10u);
    }
    check_grant(0);
    const elk_lock_t *lb = elk_multi_lock(&GW[0].m, 1);
    char key_b[64], val_b[80];
    snprintf(key_b, sizeof key_b, "%s", elk_lock_key(lb));
    snprintf(val_b, sizeof val_b, "%s", elk_lock_value(lb));
    size_t b_before = elk_it_servers_with(GW[0].n, key_b, val_b);
    assert_true(b_before >= GW[0].n / 2u + 1u);
    for (size_t i = 0; i < GW[0].n; i++) {
        redisReply *r = elk_tf_cmd(&elk_it.tf, i, "DEL it:{a}");
        assert_non_null(r);
        freeReplyObject(r);
    }
    poll_until(a_lost, 30000);
    assert_int_equal(GW[0].lost, 1);
    assert_int_equal(GW[0].lost_resource, 0); /* "a", as given */
    assert_int_equal(elk_multi_state(&GW[0].m), ELK_MULTI_LOST);
    assert_false(elk_multi_is_held(&GW[0].m, elk_posix_now_ms()));
    /* b is abandoned: not released while the stopped actuators may still move */
    assert_int_equal(elk_it_servers_with(GW[0].n, key_b, val_b), b_before);
    poll_until(a_abandoned_ran_out, 30000);
    assert_int_equal(GW[0].lost, 1); /* said once */
    assert_int_equal(elk_multi_release(&GW[0].m, elk_posix_now_ms()), ELK_E_LOCK_LOST);
}

static void check_multi(size_t n)
{
    assert_int_equal(elk_it_fleet_up(n, true), 0);
    memset(LAST_TOKEN, 0, sizeof LAST_TOKEN);
    for (size_t g = 0; g < GWS; g++) {
        gw_init(g, n);
    }
    for (size_t r = 0; r < ROUNDS; r++) {
        round_of_three();
    }
    for (size_t g = 0; g < GWS; g++) {
        assert_int_equal(GW[g].acquired, ROUNDS);
        assert_int_equal(GW[g].lost, 0);
    }
    poll_until(all_idle, 30000);
    loss_of_one();
    poll_until(all_idle, 30000);
    for (size_t g = 0; g < GWS; g++) {
        assert_int_equal(elk_multi_deinit(&GW[g].m), ELK_OK);
        elk_ts_stack_close(&GW[g].st);
    }
    elk_tf_stop(&elk_it.tf);
}

int main(void)
{
    return elk_it_run_fleet_sizes("multi", "multi", check_multi, ELK_IT_GROUP_SETUP);
}
