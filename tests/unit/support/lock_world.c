/* SPDX-License-Identifier: MIT */
/* The lease engine's test world: lock_world.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lock_world.h"

world_t W;

const elk_lock_event_t *last_ev(const ev_rec_t *r)
{
    return r->n ? &r->ev[r->n - 1] : NULL;
}

const elk_lock_event_t *find_ev(const ev_rec_t *r, elk_lock_event_type_t type)
{
    return elk_ts_events_first(r, type);
}

size_t count_ev(const ev_rec_t *r, elk_lock_event_type_t type)
{
    return elk_ts_events_count(r, type);
}

uint64_t NOW(void)
{
    return W.h.clock.now;
}

void world_setup_opts(const world_opts_t *o)
{
    size_t n = o->nodes != 0 ? o->nodes : 1;
    elk_lock_mode_t mode = n > 1 ? ELK_MODE_REDLOCK : ELK_MODE_SINGLE;
    const elk_lock_config_t *lcfg = o->lcfg;
    bool resp3 = o->resp3, two = o->two, subs = o->subs;
    elk_node_config_t nc;
    memset(&W, 0, sizeof W);
    if (lcfg == NULL && o->ttl != 0) {
        W.cfg = cfg_ttl(o->ttl);
        if (o->wait_ms != 0) {
            W.cfg.wait_min_ms = o->wait_ms;
            W.cfg.wait_max_ms = o->wait_ms;
        }
        if (o->round_ms != 0) {
            W.cfg.round_timeout_ms = o->round_ms;
        }
        lcfg = &W.cfg;
    }
    elk_node_config_defaults(&nc);
    nc.endpoint.host = "127.0.0.1";
    nc.endpoint.port = 6379;
    nc.resp3 = resp3;
    node_harness_init(&W.h, n, &nc);
    for (size_t i = 0; i < n; i++) {
        lfr_init(&W.srv[i], &W.h.clock.now);
        lfr_attach(&W.srv[i], &W.h.ft[i]);
    }
    elk_client_config_t cc;
    elk_client_config_defaults(&cc);
    cc.gateway_id = "gwA";
    cc.key_prefix = "t:";
    cc.mode = mode;
    cc.vote_hygiene = !o->no_hygiene;
    W.subs = subs;
    if (subs) {
        node_harness_init(&W.hs, n, &nc);
        for (size_t i = 0; i < n; i++) {
            lfr_attach(&W.srv[i], &W.hs.ft[i]);
        }
        cc.subscribers = &W.hs.fleet;
    }
    assert_int_equal(elk_client_init(&W.client, &cc, &W.h.fleet, &W.h.entropy_if, &W.h.log_if),
                     ELK_OK);
    cc.subscribers = NULL;
    assert_int_equal(elk_lock_init(&W.lock, &W.client, "valve", lcfg, elk_ts_events_on, &W.rec),
                     ELK_OK);
    W.two = two;
    if (two) {
        node_harness_init(&W.h2, n, &nc);
        fake_entropy_init(&W.h2.entropy, 2);
        for (size_t i = 0; i < n; i++) {
            lfr_attach(&W.srv[i], &W.h2.ft[i]);
        }
        cc.gateway_id = "gwB";
        assert_int_equal(
            elk_client_init(&W.client2, &cc, &W.h2.fleet, &W.h2.entropy_if, &W.h2.log_if), ELK_OK);
        assert_int_equal(
            elk_lock_init(&W.lock2, &W.client2, "valve", lcfg, elk_ts_events_on, &W.rec2), ELK_OK);
    }
    if (o->connect) {
        pump();
    }
}

static void check_wake(elk_lock_t *lock, uint64_t now, uint64_t next)
{
    if (elk_lock_is_held(lock, now) && next > elk_lock_deadline(lock)) {
        W.max_wake_violation = next;
    }
}

uint64_t pump(void)
{
    uint64_t next = UINT64_MAX;
    for (int round = 0; round < 200; round++) {
        size_t served = 0;
        W.h2.clock.now = W.h.clock.now;
        next = elk_client_poll(&W.client, NOW());
        check_wake(&W.lock, NOW(), next);
        if (W.two) {
            uint64_t n2 = elk_client_poll(&W.client2, NOW());
            check_wake(&W.lock2, NOW(), n2);
            next = n2 < next ? n2 : next;
        }
        for (size_t i = 0; i < W.h.count; i++) {
            served += lfr_serve(&W.srv[i]);
        }
        size_t rx = 0;
        W.hs.clock.now = W.h.clock.now;
        for (size_t i = 0; i < W.h.count; i++) {
            rx += fake_transport_rx_pending(&W.h.ft[i]);
            if (W.subs) {
                rx += fake_transport_rx_pending(&W.hs.ft[i]);
            }
            if (W.two) {
                rx += fake_transport_rx_pending(&W.h2.ft[i]);
            }
        }
        if (served == 0 && rx == 0 && next > NOW()) {
            return next;
        }
    }
    return next;
}

void run_until(uint64_t t)
{
    fake_clock_run_until(&W.h.clock, t, pump);
}

elk_lock_config_t cfg_ttl(uint32_t ttl)
{
    elk_lock_config_t c;
    elk_lock_config_defaults(&c);
    c.ttl_ms = ttl;
    c.stop_margin_ms = 50;
    return c;
}

uint64_t acquire_now(void)
{
    pump();
    uint64_t t = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t, 0), ELK_E_WOULD_BLOCK);
    pump();
    return t;
}

void acquire_served(size_t n)
{
    pump();
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    elk_client_poll(&W.client, NOW()); /* acquire requests out */
    for (size_t i = 0; i < n; i++) {
        lfr_serve(&W.srv[i]); /* acquire granted */
    }
}

uint64_t b_holds_a_waits(uint64_t wait_ms, uint64_t run_ms)
{
    assert_int_equal(elk_lock_acquire(&W.lock2, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_true(elk_lock_is_held(&W.lock2, NOW()));
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, t0 + wait_ms), ELK_E_WOULD_BLOCK);
    run_until(t0 + run_ms);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_WAITING);
    return t0;
}

uint64_t ask_and_run(uint64_t wait_ms, uint64_t run_ms)
{
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, t0 + wait_ms), ELK_E_WOULD_BLOCK);
    run_until(t0 + run_ms);
    return t0;
}

const elk_lock_event_t *last_failed(const ev_rec_t *r, int err)
{
    const elk_lock_event_t *ev = last_ev(r);
    assert_non_null(ev);
    assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(ev->err, err);
    return ev;
}
