/* SPDX-License-Identifier: MIT */
/*
 * Lease engine (lib/lock) against real lib/node connections on scripted transports,
 * answered by an in-memory Redis (support/lock_fake_redis.c), with a manual clock.
 * Every state transition and the safety rule's arithmetic are checked here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include "elk/lock.h"
#include "elk/lock_scripts.h"
#include "lock_fake_redis.h"
#include "node_harness.h"

#include "lock_events.h"

typedef elk_ts_events_t ev_rec_t; /* the shared recorder of tests/support */

typedef struct world {
    node_harness_t h;
    lfr_server_t srv[CONFIG_ELK_MAX_NODES];
    elk_client_t client;
    elk_lock_t lock;
    ev_rec_t rec;
    /* RESP2 subscriber connections of the first gateway (optional) */
    bool subs;
    node_harness_t hs;
    /* a second gateway on the same servers */
    bool two;
    node_harness_t h2;
    elk_client_t client2;
    elk_lock_t lock2;
    ev_rec_t rec2;
    uint64_t max_wake_violation; /* non-zero if a poll returned a wake after a held deadline */
} world_t;

static world_t W;

static const elk_lock_event_t *last_ev(const ev_rec_t *r)
{
    return r->n ? &r->ev[r->n - 1] : NULL;
}

static const elk_lock_event_t *find_ev(const ev_rec_t *r, elk_lock_event_type_t type)
{
    return elk_ts_events_first(r, type);
}

static size_t count_ev(const ev_rec_t *r, elk_lock_event_type_t type)
{
    return elk_ts_events_count(r, type);
}

static uint64_t NOW(void)
{
    return W.h.clock.now;
}

/* What a test's world is made of; a field left out is the common case. */
typedef struct world_opts {
    size_t nodes; /* fake servers, 0 meaning 1; mode SINGLE for one, else REDLOCK */
    const elk_lock_config_t *lcfg; /* NULL: the lock defaults */
    bool resp3;                    /* the nodes speak RESP3 (else RESP2) */
    bool two;                      /* a second gateway (gwB, W.lock2) on the same servers */
    bool subs;                     /* RESP2 subscriber connections for the first gateway */
    /* vote_hygiene off: for tests that acquire again after more than a TTL without a reply
     * (the clock check gives no vote on a reference that old: lock_hygiene.c) */
    bool no_hygiene;
} world_opts_t;

/* world_setup(.nodes = 3, .lcfg = &c, .two = true): designated initialisers. */
#define world_setup(...) world_setup_opts(&(const world_opts_t){__VA_ARGS__})

static void world_setup_opts(const world_opts_t *o)
{
    size_t n = o->nodes != 0 ? o->nodes : 1;
    elk_lock_mode_t mode = n > 1 ? ELK_MODE_REDLOCK : ELK_MODE_SINGLE;
    const elk_lock_config_t *lcfg = o->lcfg;
    bool resp3 = o->resp3, two = o->two, subs = o->subs;
    elk_node_config_t nc;
    memset(&W, 0, sizeof W);
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
}

static void check_wake(elk_lock_t *lock, uint64_t now, uint64_t next)
{
    if (elk_lock_is_held(lock, now) && next > elk_lock_deadline(lock)) {
        W.max_wake_violation = next;
    }
}

/* Poll the client(s) and serve the fake servers until nothing moves at this time.
 * Returns the earliest next wake. */
static uint64_t pump(void)
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

/* Run the world until time t, jumping from wake to wake. */
static void run_until(uint64_t t)
{
    while (NOW() < t) {
        uint64_t next = pump();
        if (next <= NOW()) {
            next = NOW() + 1;
        }
        W.h.clock.now = next < t ? next : t;
    }
    pump();
}

static elk_lock_config_t cfg_ttl(uint32_t ttl)
{
    elk_lock_config_t c;
    elk_lock_config_defaults(&c);
    c.ttl_ms = ttl;
    c.stop_margin_ms = 50;
    return c;
}

/* ---------------------------------------------------------------- tests */

static void test_config_and_names(void **state)
{
    (void)state;
    elk_lock_config_t c;
    elk_lock_config_defaults(&c);
    assert_int_equal(c.ttl_ms, CONFIG_ELK_DEFAULT_TTL_MS);
    assert_int_equal(c.renew_fraction_pct, CONFIG_ELK_RENEW_FRACTION_PCT);
    assert_true(c.fencing);
    assert_int_equal(c.max_hold_ms, CONFIG_ELK_DEFAULT_MAX_HOLD_MS); /* finite by default */
    assert_true(c.max_hold_ms > 0);
    assert_int_equal(c.lock_delay_ms, 0);
    assert_int_equal(c.keepalive_ms, 0);
    assert_int_equal(elk_lock_config_check(&c), ELK_OK);
    c.lock_delay_ms = 5000; /* free: they touch no margin */
    c.keepalive_ms = 1;
    assert_int_equal(elk_lock_config_check(&c), ELK_OK);
    elk_lock_config_defaults(&c);
    c.ttl_ms = 10;
    c.stop_margin_ms = 8; /* drift 3 + 8 >= 10 */
    assert_int_equal(elk_lock_config_check(&c), ELK_E_INVALID_ARG);
    elk_lock_config_defaults(&c);
    c.wait_min_ms = 10;
    c.wait_max_ms = 5;
    assert_int_equal(elk_lock_config_check(&c), ELK_E_INVALID_ARG);

    world_setup(.nodes = 1);
    elk_lock_t l2;
    assert_int_equal(elk_lock_init(&l2, &W.client, "", NULL, NULL, NULL), ELK_E_NAME_INVALID);
    assert_int_equal(elk_lock_init(&l2, &W.client, "a{b", NULL, NULL, NULL), ELK_E_NAME_INVALID);
    assert_int_equal(elk_lock_init(&l2, &W.client, "a b", NULL, NULL, NULL), ELK_E_NAME_INVALID);
    char longname[CONFIG_ELK_MAX_KEY_LEN + 2];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(elk_lock_init(&l2, &W.client, longname, NULL, NULL, NULL),
                     ELK_E_NAME_TOO_LONG);
    assert_string_equal(elk_lock_key(&W.lock), "t:{valve}");
    assert_string_equal(elk_lock_state_name(ELK_LOCK_RENEWING), "renewing");
    assert_string_equal(elk_lock_event_name(ELK_LOCK_EV_LOST), "lost");

    /* SINGLE needs exactly one node */
    static node_harness_t h3;
    node_harness_init(&h3, 3, NULL);
    elk_client_config_t cc;
    elk_client_config_defaults(&cc);
    cc.mode = ELK_MODE_SINGLE;
    elk_client_t c3;
    assert_int_equal(elk_client_init(&c3, &cc, &h3.fleet, &h3.entropy_if, NULL), ELK_E_INVALID_ARG);
    cc.mode = ELK_MODE_REDLOCK;
    cc.gateway_id = "bad id";
    assert_int_equal(elk_client_init(&c3, &cc, &h3.fleet, &h3.entropy_if, NULL),
                     ELK_E_NAME_INVALID);
}

static void test_single_acquire_release(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.lcfg = &c);
    pump(); /* connect, preload scripts */
    assert_true(elk_client_ready(&W.client));
    assert_int_equal(W.srv[0].script_load, 4);

    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_ACQUIRING);
    W.h.clock.now += 3; /* the reply takes 3 ms */
    pump();
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_non_null(ev);
    assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRED);
    /* the token: max(counter + 1, the server's TIME in us) = its clock when served */
    uint64_t tok1 = (uint64_t)((int64_t)NOW() + W.srv[0].wall_offset_ms) * 1000u;
    assert_int_equal(ev->token, tok1);
    /* deadline = t_send + ttl - (ttl*1% + 2) - stop_margin = t0 + 1000 - 12 - 50 */
    assert_int_equal(ev->deadline, t0 + 938);
    assert_int_equal(elk_lock_deadline(&W.lock), t0 + 938);
    assert_int_equal(ev->validity_ms, 935);
    assert_int_equal(ev->ok, 1);
    assert_int_equal(W.srv[0].commit_calls, 0); /* one node: one round trip, no commit */
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    assert_int_equal(elk_lock_token(&W.lock), tok1);
    assert_int_equal(elk_lock_hold_count(&W.lock), 1);

    /* the value: gateway id, ':', 32 hex digits (128 bits) */
    const char *v = lfr_get(&W.srv[0], "t:{valve}");
    assert_non_null(v);
    assert_string_equal(v, elk_lock_value(&W.lock));
    assert_int_equal(strlen(v), 4 + 32);
    assert_memory_equal(v, "gwA:", 4);
    for (size_t i = 4; i < strlen(v); i++) {
        assert_non_null(strchr("0123456789abcdef", v[i]));
    }
    assert_int_equal(lfr_pttl(&W.srv[0], "t:{valve}"), 1000); /* set when served, at t0 + 3 */
    assert_int_equal(lfr_int(&W.srv[0], "t:{valve}:fence"), (int64_t)tok1);

    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    assert_false(elk_lock_is_held(&W.lock, NOW()));
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_RELEASING);
    pump();
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_IDLE);
    assert_null(lfr_get(&W.srv[0], "t:{valve}"));
    assert_int_equal(last_ev(&W.rec)->type, ELK_LOCK_EV_RELEASED);
    assert_int_equal(last_ev(&W.rec)->ok, 1);
    assert_false(elk_lock_busy(&W.lock));
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_E_NOT_HELD);

    /* the next acquisition has a new value and a larger token (the same ms on the server's
     * clock: the counter + 1) */
    char old[128];
    snprintf(old, sizeof old, "%s", v == NULL ? "" : elk_lock_value(&W.lock));
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_int_equal(elk_lock_token(&W.lock), tok1 + 1u);
    assert_string_not_equal(old, elk_lock_value(&W.lock));
    assert_int_equal(elk_lock_deinit(&W.lock), ELK_E_STATE);
}

/* acquire and release write their requests at once (no poll needed to send them), so
 * the caller's next wait is for the replies: the client's next wake is the round's
 * limit, not "now". A write that fails runs its callbacks and asks for a poll at once. */
static void test_acquire_and_release_write_at_once(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.lcfg = &c);
    pump();
    assert_true(elk_client_ready(&W.client));

    unsigned sends = W.h.ft[0].send_calls;
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    assert_true(W.h.ft[0].send_calls > sends);
    assert_true(elk_client_next_wake(&W.client) > NOW());
    assert_true(elk_client_next_wake(&W.client) <= NOW() + 1000);
    W.h.clock.now += 2;
    pump();
    assert_true(elk_lock_is_held(&W.lock, NOW()));

    sends = W.h.ft[0].send_calls;
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    assert_true(W.h.ft[0].send_calls > sends);
    assert_true(elk_client_next_wake(&W.client) > NOW());
    pump();
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_IDLE);

    /* The node refuses the write: the request fails from inside acquire, and the client
     * wants a poll now, which reports the failed round. */
    fake_transport_script_send(&W.h.ft[0], ELK_E_IO);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    assert_int_equal(elk_client_next_wake(&W.client), 0);
    assert_int_not_equal(elk_node_state(&W.h.nodes[0]), ELK_NODE_READY);
    pump();
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_IDLE);
    assert_int_equal(last_ev(&W.rec)->type, ELK_LOCK_EV_ACQUIRE_FAILED);
}

static void test_single_busy_and_fencing_off(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.fencing = false;
    world_setup(.lcfg = &c);
    pump();
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 5000);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(ev->err, ELK_E_LOCK_BUSY);
    assert_int_equal(ev->busy, 1);
    assert_int_equal(ev->nodes[0].status, ELK_LOCK_NODE_BUSY);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_IDLE);
    assert_int_equal(elk_lock_last_error(&W.lock), ELK_E_LOCK_BUSY);
    assert_string_equal(lfr_get(&W.srv[0], "t:{valve}"), "other:1"); /* not ours: untouched */

    lfr_del(&W.srv[0], "t:{valve}");
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_int_equal(last_ev(&W.rec)->type, ELK_LOCK_EV_ACQUIRED);
    assert_int_equal(elk_lock_token(&W.lock), 0); /* fencing off: no token */
    assert_null(lfr_get(&W.srv[0], "t:{valve}:fence"));
}

static void test_reentrancy(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.lcfg = &c);
    pump();
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_STATE); /* still acquiring */
    pump();
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_OK);
    assert_int_equal(elk_lock_hold_count(&W.lock), 2);
    assert_int_equal(W.srv[0].acquire_calls, 1);
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    pump();
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    assert_int_equal(elk_lock_hold_count(&W.lock), 1);
    assert_non_null(lfr_get(&W.srv[0], "t:{valve}"));
    assert_int_equal(W.srv[0].release_calls, 0);
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    pump();
    assert_false(elk_lock_is_held(&W.lock, NOW()));
    assert_null(lfr_get(&W.srv[0], "t:{valve}"));
    assert_int_equal(W.srv[0].release_calls, 1);
}

static void test_noscript_fallback(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.nodes = 3, .lcfg = &c);
    for (size_t i = 0; i < 3; i++) {
        W.srv[i].forget_scripts = true; /* SCRIPT LOAD lost, as after SCRIPT FLUSH */
    }
    pump();
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_int_equal(last_ev(&W.rec)->type, ELK_LOCK_EV_ACQUIRED);
    for (size_t i = 0; i < 3; i++) {
        assert_true(W.srv[i].noscript >= 2); /* acquire and commit both fell back */
        assert_true(W.srv[i].eval >= 2);
        assert_non_null(lfr_get(&W.srv[i], "t:{valve}"));
    }
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    pump();
    for (size_t i = 0; i < 3; i++) {
        assert_null(lfr_get(&W.srv[i], "t:{valve}"));
    }
}

/* design.md: counters (5,1,1); A locks nodes 1,2 -> 6; B then locks nodes 2,3. The counters
 * are F + those, F above the servers' clocks in us (the token's floor), so the counters
 * decide as in the design's table: counters ahead of the clock need the commit too. */
#define F_ 9000000000000000
static void test_fencing_commit_design_case(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.round_timeout_ms = 100;
    world_setup(.nodes = 3, .lcfg = &c, .two = true);
    pump();
    lfr_set(&W.srv[0], "t:{valve}:fence", "9000000000000005", 0);
    lfr_set(&W.srv[1], "t:{valve}:fence", "9000000000000001", 0);
    lfr_set(&W.srv[2], "t:{valve}:fence", "9000000000000001", 0);

    /* A: node 3 does not answer */
    W.srv[2].silent = true;
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_int_equal(ev->token, F_ + 6);
    assert_int_equal(lfr_int(&W.srv[0], "t:{valve}:fence"), F_ + 6);
    assert_int_equal(lfr_int(&W.srv[1], "t:{valve}:fence"), F_ + 6); /* committed: was 2 */
    assert_int_equal(lfr_int(&W.srv[2], "t:{valve}:fence"), F_ + 1);
    assert_int_equal(W.srv[1].commit_calls, 1);

    /* Without the commit node 2 would read 2 and B's token would be max(3, 2) = 3 < 6. */
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    run_until(NOW() + 200); /* A's silent request times out; node 3 reconnects */
    W.srv[2].silent = false;
    W.srv[0].silent = true; /* B: node 1 does not answer */
    assert_int_equal(elk_lock_acquire(&W.lock2, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    ev = find_ev(&W.rec2, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_int_equal(ev->token, F_ + 7);
    assert_true(ev->token > F_ + 6);
    assert_int_equal(lfr_int(&W.srv[1], "t:{valve}:fence"), F_ + 7);
    assert_int_equal(lfr_int(&W.srv[2], "t:{valve}:fence"), F_ + 7);
}
#undef F_

/* Successive holders over partly overlapping majorities: tokens strictly increase. */
static void test_tokens_increase_over_overlapping_majorities(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.round_timeout_ms = 50;
    world_setup(.nodes = 5, .lcfg = &c, .two = true);
    pump();
    uint64_t last = 0;
    for (int k = 0; k < 12; k++) {
        /* a different pair of nodes is silent each time */
        for (size_t i = 0; i < 5; i++) {
            W.srv[i].silent = (i == (size_t)k % 5u) || (i == ((size_t)k * 3u + 1u) % 5u);
        }
        elk_lock_t *l = (k % 2) ? &W.lock2 : &W.lock;
        ev_rec_t *r = (k % 2) ? &W.rec2 : &W.rec;
        size_t before = count_ev(r, ELK_LOCK_EV_ACQUIRED);
        assert_int_equal(elk_lock_acquire(l, NOW(), 0), ELK_E_WOULD_BLOCK);
        pump();
        assert_int_equal(count_ev(r, ELK_LOCK_EV_ACQUIRED), before + 1);
        uint64_t tok = elk_lock_token(l);
        assert_true(tok > last);
        last = tok;
        assert_int_equal(elk_lock_release(l, NOW()), ELK_OK);
        for (size_t i = 0; i < 5; i++) {
            W.srv[i].silent = false;
        }
        run_until(NOW() + 120); /* timeouts, reconnects, releases delivered */
        for (size_t i = 0; i < 5; i++) {
            assert_null(lfr_get(&W.srv[i], "t:{valve}"));
        }
    }
}

static void test_commit_fails_on_majority(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    elk_client_poll(&W.client, NOW()); /* acquire requests out */
    for (size_t i = 0; i < 3; i++) {
        lfr_serve(&W.srv[i]); /* acquire succeeds everywhere */
    }
    W.srv[1].error_reply = "READONLY You can't write against a read only replica.";
    W.srv[2].error_reply = "READONLY You can't write against a read only replica.";
    pump();
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(ev->err, ELK_E_FLEET_UNAVAILABLE);
    assert_int_equal(ev->ok, 1);
    assert_int_equal(ev->nodes[1].status, ELK_LOCK_NODE_ERROR);
    assert_int_equal(ev->nodes[1].err, ELK_E_SERVER_ERROR);
    assert_string_equal(ev->nodes[1].text, "READONLY You can't write against a read only re");
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED));
    /* the partial locks were released on every node */
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(W.srv[i].release_calls, 1);
    }
    assert_null(lfr_get(&W.srv[0], "t:{valve}"));
    assert_false(elk_lock_is_held(&W.lock, NOW()));
}

static void test_failed_round_releases_everywhere(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.round_timeout_ms = 100;
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    lfr_set(&W.srv[1], "t:{valve}", "other:1", 5000);
    W.srv[2].silent = true;
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    /* node 1 ok, node 2 busy, node 3 silent: undecided until the round limit */
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_ACQUIRING);
    run_until(NOW() + 100);
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_non_null(ev);
    assert_int_equal(ev->err, ELK_E_FLEET_UNAVAILABLE);
    assert_int_equal(ev->nodes[0].status, ELK_LOCK_NODE_OK);
    assert_int_equal(ev->nodes[1].status, ELK_LOCK_NODE_BUSY);
    assert_int_equal(ev->nodes[2].status, ELK_LOCK_NODE_TIMEOUT);
    W.srv[2].silent = false;
    run_until(NOW() + 300); /* node 3 reconnects and gets its release too */
    assert_null(lfr_get(&W.srv[0], "t:{valve}"));
    assert_string_equal(lfr_get(&W.srv[1], "t:{valve}"), "other:1");
    assert_int_equal(W.srv[0].release_calls, 1);
    assert_int_equal(W.srv[1].release_calls, 1);
    assert_int_equal(W.srv[2].release_calls, 1);
}

static void test_busy_on_quorum(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.nodes = 5, .lcfg = &c);
    pump();
    for (size_t i = 0; i < 3; i++) {
        lfr_set(&W.srv[i], "t:{valve}", "other:1", 5000);
    }
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(ev->err, ELK_E_LOCK_BUSY);
    assert_int_equal(ev->busy, 3);
    assert_int_equal(ev->quorum, 3);
    assert_null(lfr_get(&W.srv[3], "t:{valve}")); /* partial lock on 4 and 5 released */
    assert_null(lfr_get(&W.srv[4], "t:{valve}"));
}

static void test_majority_late(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.min_validity_ms = 100;
    world_setup(.nodes = 5, .lcfg = &c);
    pump();
    for (size_t i = 0; i < 3; i++) {
        W.srv[i].hold = true;
    }
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_ACQUIRING);
    /* late, but in time: released 500 ms later, validity still >= min_validity */
    run_until(t0 + 500);
    for (size_t i = 0; i < 3; i++) {
        W.srv[i].hold = false;
        lfr_flush(&W.srv[i]);
    }
    pump();
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_int_equal(ev->deadline, t0 + 938); /* from t_send, not from the reply */
    assert_int_equal(ev->validity_ms, 438);
    assert_int_equal(ev->now, t0 + 500);
    assert_int_equal(W.srv[0].commit_calls, 1); /* the event reports the commit round */

    /* too late: the majority answers after the last useful moment */
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    pump();
    W.rec.n = 0;
    for (size_t i = 0; i < 3; i++) {
        W.srv[i].hold = true;
    }
    t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    run_until(t0 + 838); /* deadline 938 - min_validity 100 */
    ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_non_null(ev);
    assert_int_equal(ev->now, t0 + 838);
    assert_int_equal(ev->err, ELK_E_FLEET_UNAVAILABLE);
    assert_int_equal(ev->ok, 2);
    assert_int_equal(ev->nodes[0].status, ELK_LOCK_NODE_TIMEOUT);
    for (size_t i = 0; i < 3; i++) {
        W.srv[i].hold = false;
        lfr_flush(&W.srv[i]); /* the late replies must change nothing */
    }
    run_until(NOW() + 300);
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED));
    assert_false(elk_lock_is_held(&W.lock, NOW()));
    for (size_t i = 0; i < 5; i++) {
        assert_null(lfr_get(&W.srv[i], "t:{valve}"));
    }
}

static void test_renewal_keeps_lock(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(300);
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    uint64_t tok = elk_lock_token(&W.lock);
    /* renewal starts at t_send + ttl * 33% = t0 + 99 */
    run_until(t0 + 98);
    assert_int_equal(W.srv[0].extend_calls, 0);
    run_until(t0 + 99);
    assert_int_equal(W.srv[0].extend_calls, 1);
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_RENEWED);
    /* deadline from the renewal round's own t_send: 99 + 300 - (3 + 2) - 50 */
    assert_int_equal(ev->deadline, t0 + 99 + 245);
    run_until(t0 + 3 * 300);
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    assert_true(elk_lock_renewals(&W.lock) >= 8);
    assert_int_equal(elk_lock_token(&W.lock), tok);
    for (size_t i = 0; i < 3; i++) {
        assert_non_null(lfr_get(&W.srv[i], "t:{valve}"));
    }
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_LOST));
    assert_int_equal(W.max_wake_violation, 0);
}

static void test_renewal_fails_on_minority(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(300);
    c.round_timeout_ms = 30;
    world_setup(.nodes = 5, .lcfg = &c);
    pump();
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    W.srv[3].silent = true;
    W.srv[4].error_reply = "ERR boom";
    run_until(t0 + 900);
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    assert_true(count_ev(&W.rec, ELK_LOCK_EV_RENEWED) >= 8);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEW_FAILED), 0);
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_LOST));
}

static void test_renewal_fails_on_majority_lost_at_deadline(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(300);
    c.round_timeout_ms = 30; /* rounds fail fast and are retried until the deadline */
    world_setup(.nodes = 5, .lcfg = &c);
    pump();
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    uint64_t deadline = elk_lock_deadline(&W.lock);
    assert_int_equal(deadline, t0 + 245);
    W.srv[0].silent = true;
    W.srv[2].error_reply = "ERR boom";
    W.srv[4].silent = true;
    run_until(t0 + 2000);
    assert_true(count_ev(&W.rec, ELK_LOCK_EV_RENEW_FAILED) >= 1);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEWED), 0);
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_LOST);
    assert_non_null(ev);
    assert_int_equal(ev->now, deadline); /* exactly at the deadline, not later */
    assert_int_equal(ev->err, ELK_E_LOCK_LOST);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_LOST);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_LOST), 1);
    assert_int_equal(W.max_wake_violation, 0);
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_E_LOCK_LOST);
    assert_int_not_equal(elk_lock_state(&W.lock), ELK_LOCK_LOST);
}

static void test_lost_at_deadline_silent_single(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.lcfg = &c);
    W.h.nodes[0].cfg.request_timeout_ms = 60000; /* the node itself would wait far longer */
    pump();
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    W.srv[0].hold = true; /* the renewal reply will come, but only after the deadline */
    run_until(t0 + 937);
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_LOST));
    run_until(t0 + 938);
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_LOST);
    assert_non_null(ev);
    assert_int_equal(ev->now, t0 + 938);
    assert_false(elk_lock_is_held(&W.lock, NOW()));
    W.srv[0].hold = false;
    lfr_flush(&W.srv[0]); /* a renewal reply after the deadline resurrects nothing */
    run_until(NOW() + 50);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEWED), 0);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_LOST);
    assert_int_equal(W.max_wake_violation, 0);
}

/* After LOST the actuator still needs stop_margin to stop: our key must not be deleted
 * (letting the next holder in) before that. */
static void test_lost_release_waits_for_stop_margin(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000); /* stop_margin 50 */
    world_setup(.lcfg = &c);
    pump();
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    W.srv[0].error_reply = "ERR renewals refused"; /* the connection stays up */
    run_until(t0 + 938);
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_LOST);
    assert_non_null(ev);
    assert_int_equal(ev->now, t0 + 938);
    assert_true(count_ev(&W.rec, ELK_LOCK_EV_RENEW_FAILED) >= 1);
    W.srv[0].error_reply = NULL;
    run_until(t0 + 938 + 49);
    assert_int_equal(W.srv[0].release_calls, 0);
    assert_non_null(lfr_get(&W.srv[0], "t:{valve}"));
    assert_true(elk_lock_busy(&W.lock));
    run_until(t0 + 938 + 50); /* the actuator has stopped: now it goes */
    assert_int_equal(W.srv[0].release_calls, 1);
    assert_null(lfr_get(&W.srv[0], "t:{valve}"));
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_E_LOCK_LOST);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_IDLE);
}

static void test_renew_value_gone_is_lost_at_once(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    lfr_del(&W.srv[0], "t:{valve}");
    lfr_set(&W.srv[1], "t:{valve}", "thief:1", 5000);
    run_until(t0 + 330);
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_LOST);
    assert_non_null(ev);
    assert_int_equal(ev->now, t0 + 330); /* long before the deadline */
    assert_int_equal(ev->busy, 2);
    assert_int_equal(ev->err, ELK_E_LOCK_TAKEN); /* not "deadline passed": it did not */
    assert_int_equal(elk_lock_last_error(&W.lock), ELK_E_LOCK_TAKEN);
    assert_string_equal(lfr_get(&W.srv[1], "t:{valve}"), "thief:1");
    /* node 2 still had our value (the renewal extended it there): it is not released, so
     * nobody (we included) gets a quorum through it before it runs out */
    char ours[128];
    snprintf(ours, sizeof ours, "%s", lfr_get(&W.srv[2], "t:{valve}"));
    assert_true(strncmp(ours, "thief", 5) != 0);
    run_until(t0 + 330 + 500);
    assert_int_equal(W.srv[2].release_calls, 0);
    assert_string_equal(lfr_get(&W.srv[2], "t:{valve}"), ours);
    /* LOST until the caller releases or acquires */
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_LOST);
}

static void test_caps_stop_renewal(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(300);
    c.max_renewals = 2;
    world_setup(.lcfg = &c);
    pump();
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    run_until(t0 + 2000);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEWED), 2);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEW_STOPPED), 1);
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_LOST);
    assert_non_null(ev);
    assert_int_equal(ev->err, ELK_E_MAX_RENEWALS);
    assert_int_equal(find_ev(&W.rec, ELK_LOCK_EV_RENEW_STOPPED)->err, ELK_E_MAX_RENEWALS);
    /* second renewal at t0 + 99 + 99, its deadline 245 later */
    assert_int_equal(ev->now, t0 + 198 + 245);

    c.max_renewals = 0;
    c.max_hold_ms = 500;
    world_setup(.lcfg = &c);
    pump();
    t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    run_until(t0 + 2000);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEWED), 5); /* at 99..495 */
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEW_STOPPED), 1);
    ev = find_ev(&W.rec, ELK_LOCK_EV_LOST);
    assert_non_null(ev);
    assert_int_equal(ev->now, t0 + 495 + 245);
    assert_int_equal(ev->err, ELK_E_MAX_HOLD);
    assert_int_equal(find_ev(&W.rec, ELK_LOCK_EV_RENEW_STOPPED)->err, ELK_E_MAX_HOLD);
}

/* The deadline passes with too few nodes even connected: the cause is the fleet, not a
 * slow quorum. */
static void test_lost_cause_fleet_unreachable(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(300);
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    uint64_t deadline = elk_lock_deadline(&W.lock);
    for (size_t i = 0; i < 2; i++) {
        for (size_t k = 0; k < 20; k++) {
            fake_transport_script_open(&W.h.ft[i], ELK_E_CONNECT_REFUSED);
        }
        fake_transport_push_rx_result(&W.h.ft[i], ELK_E_CLOSED);
    }
    run_until(t0 + 1000);
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_LOST);
    assert_non_null(ev);
    assert_int_equal(ev->now, deadline);
    assert_int_equal(ev->err, ELK_E_FLEET_LOST);
    assert_int_equal(elk_lock_last_error(&W.lock), ELK_E_FLEET_LOST);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_LOST), 1);
}

/* Each way a lease ends has its own code, its own name and its own message, so the
 * holder's log says what really happened. */
static void test_lost_causes_are_distinct(void **state)
{
    (void)state;
    const int causes[] = {ELK_E_LOCK_LOST, ELK_E_FLEET_LOST,   ELK_E_LOCK_TAKEN,
                          ELK_E_MAX_HOLD,  ELK_E_MAX_RENEWALS, ELK_E_LOCK_ABANDONED};
    const size_t n = sizeof causes / sizeof causes[0];
    for (size_t i = 0; i < n; i++) {
        for (size_t k = i + 1; k < n; k++) {
            assert_int_not_equal(causes[i], causes[k]);
            assert_string_not_equal(elk_err_name(causes[i]), elk_err_name(causes[k]));
            assert_string_not_equal(elk_err_message(causes[i]), elk_err_message(causes[k]));
        }
    }
}

/* A supervisor that cannot confirm its holder stopped gives the lease up: no renewal
 * goes out any more (not even one in flight counts), LOST fires at the deadline already
 * reached with its own cause, and the keys are deleted only stop_margin after that. */
static void test_abandon_lets_the_lease_run_out(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(300); /* deadline t_send + 245, renew every 99 */
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    assert_int_equal(elk_lock_abandon(&W.lock, NOW()), ELK_E_NOT_HELD);
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    /* a renewal in flight whose replies would move the deadline */
    for (size_t i = 0; i < 3; i++) {
        W.srv[i].hold = true;
    }
    run_until(t0 + 100);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_RENEWING);
    uint64_t deadline = elk_lock_deadline(&W.lock);
    assert_int_equal(elk_lock_abandon(&W.lock, NOW()), ELK_OK);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_HELD);
    for (size_t i = 0; i < 3; i++) {
        W.srv[i].hold = false;
        lfr_flush(&W.srv[i]);
    }
    size_t extends_before = 0;
    for (size_t i = 0; i < 3; i++) {
        extends_before += W.srv[i].extend_calls;
    }
    run_until(deadline - 1);
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    assert_int_equal(elk_lock_deadline(&W.lock), deadline); /* the late replies moved nothing */
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEWED), 0);
    run_until(deadline);
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_LOST);
    assert_non_null(ev);
    assert_int_equal(ev->now, deadline);
    assert_int_equal(ev->err, ELK_E_LOCK_ABANDONED);
    size_t extends_after = 0;
    for (size_t i = 0; i < 3; i++) {
        extends_after += W.srv[i].extend_calls;
    }
    assert_int_equal(extends_after, extends_before); /* no renewal was sent after abandon */
    run_until(deadline + 49);
    for (size_t i = 0; i < 3; i++) {
        assert_non_null(lfr_get(&W.srv[i], "t:{valve}"));
    }
    run_until(deadline + 50);
    for (size_t i = 0; i < 3; i++) {
        assert_null(lfr_get(&W.srv[i], "t:{valve}"));
    }
    assert_int_equal(W.max_wake_violation, 0);
}

static void test_wait_retry_then_timeout(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.wait_min_ms = 100;
    c.wait_max_ms = 100;
    world_setup(.lcfg = &c);
    pump();
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 0);
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, t0 + 450), ELK_E_WOULD_BLOCK);
    run_until(t0 + 250);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_WAITING);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RETRY), 3); /* t0, +100, +200 */
    assert_int_equal(W.rec.ev[0].err, ELK_E_LOCK_BUSY);
    lfr_del(&W.srv[0], "t:{valve}");
    run_until(t0 + 300);
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_int_equal(ev->now, t0 + 300);
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    pump();

    /* never free: timed out at the wait deadline */
    W.rec.n = 0;
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 0);
    t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, t0 + 450), ELK_E_WOULD_BLOCK);
    run_until(t0 + 1000);
    ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_non_null(ev);
    assert_int_equal(ev->err, ELK_E_LOCK_TIMEOUT);
    assert_int_equal(ev->now, t0 + 450);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_IDLE);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_ACQUIRE_FAILED), 1);
}

static void test_release_channel_handoff(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.wait_min_ms = 500;
    c.wait_max_ms = 500;
    world_setup(.nodes = 3, .lcfg = &c, .resp3 = true, .two = true); /* RESP3 */
    pump();
    assert_true(elk_node_stats(&W.h.nodes[0])->resp3);
    assert_int_equal(elk_lock_acquire(&W.lock2, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_true(elk_lock_is_held(&W.lock2, NOW()));
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, t0 + 5000), ELK_E_WOULD_BLOCK);
    run_until(t0 + 100);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_WAITING);
    assert_true(W.srv[0].subscribe >= 1);
    /* B releases at t0+100: A must get it at once, not at its retry 500 ms later */
    assert_int_equal(elk_lock_release(&W.lock2, NOW()), ELK_OK);
    pump();
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_int_equal(ev->now, t0 + 100);
    assert_true(W.srv[0].publish >= 1);
    assert_true(elk_lock_token(&W.lock) > elk_lock_token(&W.lock2) || elk_lock_token(&W.lock) == 2);
}

/* An ACL user without the channel permission: every SUBSCRIBE is refused (-NOPERM, an
 * in-order error). The refusal must not be taken for the answer to a request (the
 * connection would fail on the reply left over, reconnect, resubscribe, fail again):
 * the waiter keeps its connections and falls back to its retry delay. */
static void test_refused_subscribe_keeps_connections_and_retries(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.wait_min_ms = 500;
    c.wait_max_ms = 500;
    world_setup(.nodes = 3, .lcfg = &c, .resp3 = true, .two = true);
    for (size_t i = 0; i < 3; i++) {
        W.srv[i].sub_refused = true;
    }
    pump();
    assert_int_equal(elk_lock_acquire(&W.lock2, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_true(elk_lock_is_held(&W.lock2, NOW()));
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, t0 + 5000), ELK_E_WOULD_BLOCK);
    run_until(t0 + 1200); /* retries at +500, +1000 while lock2 renews */
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_WAITING);
    assert_true(elk_lock_is_held(&W.lock2, NOW()));
    for (size_t i = 0; i < 3; i++) {
        assert_true(W.srv[i].subscribe >= 1);
        assert_int_equal(elk_node_stats(&W.h.nodes[i])->failures, 0);
        assert_int_equal(elk_node_stats(&W.h.nodes[i])->connects, 1);
        assert_true(elk_node_is_ready(&W.h.nodes[i]));
    }
    assert_int_equal(elk_lock_release(&W.lock2, NOW()), ELK_OK);
    run_until(t0 + 2100);
    assert_non_null(find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED));
    assert_true(elk_lock_is_held(&W.lock, NOW()));
}

/* The release message arrives while a retry round is in flight (and is answered
 * "busy"): the waiter must retry at once, not after its retry delay. */
static void test_release_message_during_retry_round(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.wait_min_ms = 500;
    c.wait_max_ms = 500;
    world_setup(.lcfg = &c, .resp3 = true);
    pump();
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 0);
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, t0 + 5000), ELK_E_WOULD_BLOCK);
    run_until(t0 + 499);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_WAITING);
    W.srv[0].hold = true; /* the retry at t0+500 gets its "busy" late */
    run_until(t0 + 500);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_ACQUIRING);
    lfr_del(&W.srv[0], "t:{valve}");
    const char *msg = ">3\r\n$7\r\nmessage\r\n$18\r\nt:{valve}:released\r\n$7\r\nother:1\r\n";
    fake_transport_push_rx_str(&W.h.ft[0], msg);
    pump();
    W.srv[0].hold = false;
    lfr_flush(&W.srv[0]);
    pump();
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_int_equal(ev->now, t0 + 500); /* not t0 + 1000 */
}

/* A waiter whose failed round got a partial lock releases it, and the release script
 * publishes: that message is its own and must not wake it (it would spin). */
static void test_own_release_does_not_wake(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.wait_min_ms = 500;
    c.wait_max_ms = 500;
    world_setup(.nodes = 3, .lcfg = &c, .resp3 = true);
    pump();
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 0);
    lfr_set(&W.srv[1], "t:{valve}", "other:1", 0);
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, t0 + 1900), ELK_E_WOULD_BLOCK);
    run_until(t0 + 1700);
    assert_true(W.srv[2].publish >= 3); /* its own partial releases published */
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RETRY), 4); /* t0, +500, +1000, +1500 only */
    assert_int_equal(W.srv[2].acquire_calls, 4);
}

/* RESP2 servers: the release message comes on the subscriber connections. */
static void test_release_channel_resp2_subscriber(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.wait_min_ms = 500;
    c.wait_max_ms = 500;
    world_setup(.nodes = 3, .lcfg = &c, .two = true, .subs = true);
    pump();
    assert_false(elk_node_stats(&W.h.nodes[0])->resp3);
    assert_true(W.hs.nodes[0].subscriber);
    elk_wait_t w[2 * CONFIG_ELK_MAX_NODES];
    assert_int_equal(elk_client_waits(&W.client, w, 2 * CONFIG_ELK_MAX_NODES), 6);
    assert_int_equal(elk_lock_acquire(&W.lock2, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_true(elk_lock_is_held(&W.lock2, NOW()));
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, t0 + 5000), ELK_E_WOULD_BLOCK);
    run_until(t0 + 100);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_WAITING);
    assert_int_equal(W.srv[0].subscribe, 1); /* on the subscriber connection only */
    assert_string_equal(W.srv[0].sub[1], "t:{valve}:released"); /* conns: h, hs, h2 */
    assert_int_equal(elk_lock_release(&W.lock2, NOW()), ELK_OK);
    pump();
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_int_equal(ev->now, t0 + 100);      /* woken by the message, not the 500 ms retry */
    assert_string_equal(W.srv[0].sub[1], ""); /* unsubscribed once acquired */

    /* without subscriber connections a RESP2 waiter falls back to its retry delay */
    world_setup(.nodes = 3, .lcfg = &c, .two = true);
    pump();
    assert_int_equal(elk_lock_acquire(&W.lock2, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, t0 + 5000), ELK_E_WOULD_BLOCK);
    run_until(t0 + 100);
    assert_int_equal(W.srv[0].subscribe, 0);
    assert_int_equal(elk_lock_release(&W.lock2, NOW()), ELK_OK);
    run_until(t0 + 1000);
    ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_int_equal(ev->now, t0 + 500);
}

static void test_fleet_unavailable_and_cancel(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.nodes = 3, .lcfg = &c);
    /* no poll yet: nodes are not connected */
    assert_false(elk_client_ready(&W.client));
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_non_null(ev);
    assert_int_equal(ev->err, ELK_E_FLEET_UNAVAILABLE);
    assert_int_equal(ev->nodes[0].err, ELK_E_NOT_CONNECTED);

    /* cancel an acquire in flight: nothing held afterwards, keys removed */
    pump();
    assert_true(elk_client_ready(&W.client));
    W.rec.n = 0;
    for (size_t i = 0; i < 3; i++) {
        W.srv[i].hold = true;
    }
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    for (size_t i = 0; i < 3; i++) {
        W.srv[i].hold = false;
        lfr_flush(&W.srv[i]);
    }
    run_until(NOW() + 50);
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED));
    for (size_t i = 0; i < 3; i++) {
        assert_null(lfr_get(&W.srv[i], "t:{valve}"));
    }
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_IDLE);
    assert_false(elk_lock_busy(&W.lock));
    assert_int_equal(elk_lock_deinit(&W.lock), ELK_OK);
}

static void test_entropy_failure(void **state)
{
    (void)state;
    world_setup(.nodes = 1);
    pump();
    fake_entropy_fail_next(&W.h.entropy, 1);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_ENTROPY);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_IDLE);
    assert_int_equal(W.srv[0].acquire_calls, 0);
}

static void test_safety_check(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.lcfg = &c);
    W.srv[0].maxmemory_policy = "allkeys-lru";
    pump();
    assert_true(W.srv[0].info >= 1);
    assert_true(fake_log_contains(&W.h.log, "maxmemory-policy"));
    assert_true(fake_log_contains(&W.h.log, "allkeys-lru"));
    assert_true(fake_log_contains(&W.h.log, "appendfsync"));
    assert_true(fake_log_contains(&W.h.log, "no AOF persistence"));
    assert_string_equal(elk_client_node_check(&W.client, 0),
                        "unsafe: maxmemory-policy allkeys-lru");
    assert_true(elk_client_ready(&W.client)); /* WARN: still used */

    /* REFUSE: the node counts as failed */
    world_setup(.lcfg = &c);
    W.client.cfg.safety = ELK_SAFETY_REFUSE;
    W.srv[0].maxmemory_policy = "volatile-lru";
    pump();
    assert_false(elk_client_ready(&W.client));
    assert_false(elk_client_node_votes(&W.client, 0));
    assert_string_equal(elk_client_node_check(&W.client, 0),
                        "unsafe: maxmemory-policy volatile-lru");
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(ev->nodes[0].err, ELK_E_UNSAFE_SERVER);

    /* REFUSE and INFO refused (NOPERM): cannot be checked, so no vote (fail closed) */
    world_setup(.lcfg = &c);
    W.client.cfg.safety = ELK_SAFETY_REFUSE;
    W.srv[0].info_disabled = true;
    W.srv[0].config_disabled = true;
    pump();
    assert_true(fake_log_contains(&W.h.log, "safety check impossible"));
    assert_false(elk_client_ready(&W.client));
    assert_int_equal(
        strncmp(elk_client_node_check(&W.client, 0), "unchecked: ERR The user executing", 33), 0);

    /* REFUSE with CONFIG refused but INFO allowed: checked from INFO, the node votes */
    world_setup(.lcfg = &c);
    W.client.cfg.safety = ELK_SAFETY_REFUSE;
    W.srv[0].config_disabled = true;
    pump();
    assert_true(elk_client_ready(&W.client));
    assert_true(elk_client_node_votes(&W.client, 0));
    assert_string_equal(elk_client_node_check(&W.client, 0), "ok");
}

/* A fresh connection sends the safety check before anything else. Behind a waiter's
 * SUBSCRIBE and the four SCRIPT LOADs it no longer fitted the node's send buffer, was never
 * sent, and under REFUSE the node had no vote again until its next reconnect. */
static void test_safety_check_sent_first_on_reconnect(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.use_release_channel = true;
    c.wait_min_ms = 500;
    c.wait_max_ms = 500;
    world_setup(.lcfg = &c, .resp3 = true, .two = true);
    W.client.cfg.safety = ELK_SAFETY_REFUSE;
    W.client.cfg.safety_recheck_ms = 60000; /* INFO counts the reconnect's check alone */
    W.client2.cfg.safety_recheck_ms = 60000;
    pump();
    assert_true(elk_client_node_votes(&W.client, 0));
    assert_int_equal(elk_lock_acquire(&W.lock2, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_true(elk_lock_is_held(&W.lock2, NOW()));
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, t0 + 10000), ELK_E_WOULD_BLOCK);
    run_until(t0 + 100);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_WAITING);
    unsigned info = W.srv[0].info;
    /* the first gateway's connection drops; it reconnects with a waiter to resubscribe */
    fake_transport_push_rx_result(&W.h.ft[0], ELK_E_CLOSED);
    run_until(NOW() + 1500);
    assert_true(elk_node_is_ready(&W.h.nodes[0]));
    assert_int_equal(W.srv[0].info, info + 1u);
    assert_string_equal(elk_client_node_check(&W.client, 0), "ok");
    assert_true(elk_client_node_votes(&W.client, 0));
}

/* Many waiters on a reconnect: one SUBSCRIBE each and the script preloads queue more
 * requests than a node takes in flight (CONFIG_ELK_NODE_MAX_INFLIGHT). The safety check
 * goes before them, so under refuse the node votes as soon as it answers, not at the next
 * recheck a minute later. */
static void test_safety_check_fits_before_many_resubscribes(void **state)
{
    (void)state;
    enum { EXTRA = CONFIG_ELK_NODE_MAX_INFLIGHT };
    static elk_lock_t extra[EXTRA];
    static elk_ts_events_t extra_rec[EXTRA];
    char name[EXTRA][16], key[40];
    elk_lock_config_t c = cfg_ttl(1000);
    c.use_release_channel = true;
    c.wait_min_ms = 500;
    c.wait_max_ms = 500;
#if CONFIG_ELK_MAX_LOCKS <= CONFIG_ELK_NODE_MAX_INFLIGHT
    /* a build whose client takes fewer locks than a node takes requests in flight cannot
     * queue more SUBSCRIBEs than fit: nothing to show */
    (void)c;
    (void)name;
    (void)key;
    return;
#endif
    world_setup(.lcfg = &c, .resp3 = true);
    W.client.cfg.safety = ELK_SAFETY_REFUSE;
    W.client.cfg.safety_recheck_ms = 60000; /* only the reconnect's own check can restore it */
    for (size_t k = 0; k < EXTRA; k++) {
        snprintf(name[k], sizeof name[k], "v%zu", k);
        assert_int_equal(
            elk_lock_init(&extra[k], &W.client, name[k], &c, elk_ts_events_on, &extra_rec[k]),
            ELK_OK);
        snprintf(key, sizeof key, "t:{%.15s}", name[k]);
        lfr_set(&W.srv[0], key, "other:1", 600000); /* held elsewhere: they wait */
    }
    pump();
    uint64_t t0 = NOW();
    for (size_t k = 0; k < EXTRA; k++) {
        assert_int_equal(elk_lock_acquire(&extra[k], t0, t0 + 60000), ELK_E_WOULD_BLOCK);
    }
    run_until(t0 + 200);
    for (size_t k = 0; k < EXTRA; k++) {
        assert_int_equal(elk_lock_state(&extra[k]), ELK_LOCK_WAITING);
    }
    fake_transport_push_rx_result(&W.h.ft[0], ELK_E_CLOSED);
    run_until(NOW() + 1500);
    assert_true(elk_node_is_ready(&W.h.nodes[0]));
    assert_string_equal(elk_client_node_check(&W.client, 0), "ok");
    assert_true(elk_client_node_votes(&W.client, 0));
}

/* ------------------------------------------- even fleets, one quorum rule (issue 14) */

/* Two and four nodes: a quorum is n/2 + 1 (2 and 3), the fleet's rule, not (n+1)/2 (1
 * and 2), which agrees with it on every odd size the other tests use. Half the fleet
 * held by someone else must stop us, and half the fleet silent must lose a held lease. */
static void check_even_fleet(size_t n)
{
    elk_lock_config_t c = cfg_ttl(300);
    c.round_timeout_ms = 30;
    world_setup(.nodes = n, .lcfg = &c);
    pump();
    assert_int_equal(elk_client_quorum(&W.client), n / 2 + 1);
    assert_int_equal(elk_client_quorum(&W.client), elk_fleet_quorum(&W.h.fleet));
    for (size_t i = 0; i < n / 2; i++) {
        lfr_set(&W.srv[i], "t:{valve}", "other:1", 5000);
    }
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    run_until(NOW() + 100);
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(ev->quorum, n / 2 + 1);
    assert_int_equal(ev->ok, n / 2);
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED));
    for (size_t i = n / 2; i < n; i++) {
        assert_null(lfr_get(&W.srv[i], "t:{valve}")); /* our partial locks went */
    }
    /* one node more is a quorum */
    lfr_del(&W.srv[0], "t:{valve}");
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    run_until(NOW() + 50);
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    /* renewals answered by half the fleet only: lost at the deadline */
    uint64_t deadline = elk_lock_deadline(&W.lock);
    for (size_t i = 0; i < n / 2; i++) {
        W.srv[i].silent = true;
    }
    run_until(deadline + 10);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEWED), 0);
    ev = find_ev(&W.rec, ELK_LOCK_EV_LOST);
    assert_non_null(ev);
    assert_int_equal(ev->now, deadline);
}

static void test_even_fleet_two(void **state)
{
    (void)state;
    check_even_fleet(2);
}

static void test_even_fleet_four(void **state)
{
    (void)state;
    check_even_fleet(4);
}

/* ------------------------------------------------ the value every release carries */

/* Every release call any server saw carries `want`, and at least one was seen. */
static void assert_releases_carry(const lfr_server_t *s, const char *want)
{
    size_t seen = 0;
    for (size_t k = 0; k < s->nlog; k++) {
        if (strcmp(s->log[k].which, "release") == 0) {
            assert_string_equal(s->log[k].value, want);
            seen++;
        }
    }
    assert_true(seen > 0);
}

/* One node, ttl 1000, stop_margin 50: a lease acquired at the returned time and lost at
 * its deadline (+938) as renewals are refused; v1 gets its value. */
static uint64_t lose_one_lease(char *v1, size_t cap)
{
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.lcfg = &c);
    pump();
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    snprintf(v1, cap, "%s", elk_lock_value(&W.lock));
    W.srv[0].error_reply = "ERR renewals refused";
    run_until(t0 + 938);
    assert_non_null(find_ev(&W.rec, ELK_LOCK_EV_LOST));
    W.srv[0].error_reply = NULL;
    return t0;
}

/* LOST, then (inside stop_margin) the same lock is taken again with a new value: the
 * deferred release must delete the lost lease's value, never the new lease's. Here the
 * servers forgot the old key (a restart), so the new acquisition succeeds at once. */
static void test_lost_regrant_release_carries_old_value(void **state)
{
    (void)state;
    char v1[128];
    uint64_t t0 = lose_one_lease(v1, sizeof v1);
    lfr_del(&W.srv[0], "t:{valve}");
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_E_LOCK_LOST);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    char v2[128];
    snprintf(v2, sizeof v2, "%s", elk_lock_value(&W.lock));
    assert_string_not_equal(v1, v2);
    run_until(t0 + 938 + 50 + 20); /* the deferred release has run */
    assert_releases_carry(&W.srv[0], v1);
    assert_string_equal(lfr_get(&W.srv[0], "t:{valve}"), v2);
    assert_true(elk_lock_is_held(&W.lock, NOW()));
}

/* LOST, then a new acquisition inside stop_margin that finds the old key still there
 * (busy) and waits: its own partial release must not replace the value the deferred
 * release deletes, or the lost lease stays until its TTL and the waiter with it. */
static void test_lost_busy_regrant_release_carries_old_value(void **state)
{
    (void)state;
    char v1[128];
    uint64_t t0 = lose_one_lease(v1, sizeof v1);
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_E_LOCK_LOST);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), NOW() + 5000), ELK_E_WOULD_BLOCK);
    pump();
    assert_false(elk_lock_is_held(&W.lock, NOW())); /* the old key is still there */
    assert_string_equal(lfr_get(&W.srv[0], "t:{valve}"), v1);
    run_until(t0 + 938 + 49);
    assert_string_equal(lfr_get(&W.srv[0], "t:{valve}"), v1); /* kept for stop_margin */
    run_until(t0 + 938 + 50);
    const char *now_v = lfr_get(&W.srv[0], "t:{valve}");
    assert_true(now_v == NULL || strcmp(now_v, v1) != 0); /* the lost lease is gone */
    run_until(t0 + 938 + 400); /* woken by the release, the waiter gets the lock */
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    assert_string_not_equal(elk_lock_value(&W.lock), v1);
}

/* A partial release resent as EVAL (NOSCRIPT) after the retry drew a new value: the
 * resend carries the released value, not the new one it would delete. Node 2 forgets
 * scripts and holds its replies until the retry round is under way. */
static void test_release_resend_after_new_value(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.round_timeout_ms = 200;
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 5000);
    lfr_set(&W.srv[1], "t:{valve}", "other:1", 5000);
    W.srv[2].forget_scripts = true;
    W.srv[2].scripts_loaded = false;
    W.srv[2].hold = true;
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), NOW() + 5000), ELK_E_WOULD_BLOCK);
    pump();
    assert_non_null(find_ev(&W.rec, ELK_LOCK_EV_RETRY)); /* busy quorum: round 1 over */
    char v1[128];
    snprintf(v1, sizeof v1, "%s", elk_lock_value(&W.lock));
    W.srv[0].hold = true;
    W.srv[1].hold = true;
    uint64_t limit = NOW() + 2000;
    while (W.srv[0].acquire_calls < 2 && NOW() < limit) {
        run_until(NOW() + 1);
    }
    assert_int_equal(W.srv[0].acquire_calls, 2); /* the retry is under way */
    assert_string_not_equal(elk_lock_value(&W.lock), v1);
    W.srv[2].hold = false;
    lfr_flush(&W.srv[2]); /* NOSCRIPT for round 1's release and round 2's acquire */
    pump();
    pump();
    size_t evals = 0;
    for (size_t k = 0; k < W.srv[2].nlog; k++) {
        evals += strcmp(W.srv[2].log[k].which, "release") == 0 && W.srv[2].log[k].eval;
    }
    assert_true(evals >= 1);
    assert_releases_carry(&W.srv[2], v1);
}

/* A partial release held back for a node that was down, sent when it reconnects after
 * the retry drew a new value: it carries the released value, not the new one. */
static void test_release_after_reconnect_carries_old_value(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(10000);
    c.round_timeout_ms = 5000; /* rounds and releases wait that long for node 3 */
    c.wait_min_ms = 1;         /* the retry comes before node 3's reconnect backoff ends */
    c.wait_max_ms = 5;
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    lfr_set(&W.srv[1], "t:{valve}", "other:1", 60000);
    W.srv[2].silent = true;
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), NOW() + 60000), ELK_E_WOULD_BLOCK);
    uint64_t limit = NOW() + 60000;
    while (find_ev(&W.rec, ELK_LOCK_EV_RETRY) == NULL && NOW() < limit) {
        run_until(NOW() + 1); /* node 3 times out: round 1 over, its release held back */
    }
    char v1[128];
    snprintf(v1, sizeof v1, "%s", elk_lock_value(&W.lock));
    W.srv[1].hold = true; /* keeps round 2 open while node 3 comes back */
    W.srv[2].silent = false;
    unsigned calls = W.srv[0].acquire_calls;
    while (W.srv[0].acquire_calls == calls && NOW() < limit) {
        run_until(NOW() + 1);
    }
    assert_string_not_equal(elk_lock_value(&W.lock), v1); /* the retry drew a new value */
    assert_int_equal(W.srv[2].release_calls, 0);          /* before node 3 was back */
    while (W.srv[2].release_calls == 0 && NOW() < limit) {
        run_until(NOW() + 1);
    }
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_ACQUIRING); /* round 2 still open */
    assert_releases_carry(&W.srv[2], v1);
}

/* ------------------------------------------ renewal timing with a nonzero reply time */

/* Servers 0..n-1 keep their replies (on), or send what they kept and answer again (off). */
static void hold_replies(size_t n, bool on)
{
    for (size_t i = 0; i < n; i++) {
        W.srv[i].hold = on;
        if (!on) {
            lfr_flush(&W.srv[i]);
        }
    }
}

/* Hold every reply for `d` ms: a round sent now is answered at now + d. */
static void answer_after(size_t n, uint64_t d)
{
    hold_replies(n, true);
    pump();
    W.h.clock.now += d;
    hold_replies(n, false);
    pump();
}

/* ACQUIRING and COMMITTING are not stored: they come from the kind of the round in flight
 * (lib/lock/lock_api.c). While the commit round runs the lock reports COMMITTING, is busy,
 * refuses a second acquire, and a release cancels it (RELEASED follows). */
static void test_commit_round_states(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    hold_replies(3, true);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_ACQUIRING);
    assert_true(elk_lock_busy(&W.lock));
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_STATE);
    pump(); /* the servers read the acquires and hold the replies */
    /* the acquire replies arrive; the commit's are held */
    lfr_flush(&W.srv[0]);
    lfr_flush(&W.srv[1]);
    lfr_flush(&W.srv[2]);
    pump();
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_COMMITTING);
    assert_true(elk_lock_busy(&W.lock));
    assert_false(elk_lock_is_held(&W.lock, NOW()));
    assert_int_equal(elk_lock_token(&W.lock), 0);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_STATE);
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_RELEASING);
    hold_replies(3, false);
    pump();
    assert_non_null(find_ev(&W.rec, ELK_LOCK_EV_RELEASED));
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED));
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_IDLE);
    assert_false(elk_lock_busy(&W.lock));
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_E_NOT_HELD);
}

/* Deadlines and the next renewal count from the round's send time, never from the reply:
 * a reply that takes 40 ms must not move the deadline 40 ms later. */
static void test_renewal_deadline_with_reply_time(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000); /* deadline = send + 938, renew at send + 330 */
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    answer_after(3, 7); /* acquire */
    if (elk_lock_state(&W.lock) == ELK_LOCK_COMMITTING) {
        answer_after(3, 5); /* commit */
    }
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_int_equal(ev->deadline, t0 + 938);
    uint64_t t_renew = t0 + 330;
    run_until(t_renew - 1);
    assert_int_equal(W.srv[0].extend_calls, 0);
    hold_replies(3, true);
    run_until(t_renew);
    assert_int_equal(W.srv[0].extend_calls, 1);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_RENEWING);
    W.h.clock.now += 40;
    hold_replies(3, false);
    pump();
    ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_RENEWED);
    assert_int_equal(ev->now, t_renew + 40);
    assert_int_equal(ev->deadline, t_renew + 938);
    assert_int_equal(elk_lock_deadline(&W.lock), t_renew + 938);
    assert_int_equal(elk_lock_validity(&W.lock, NOW()), 938 - 40);
    /* the next renewal from the second round's send time too */
    run_until(t_renew + 329);
    assert_int_equal(W.srv[0].extend_calls, 1);
    /* a renewal answered after the deadline resurrects nothing */
    hold_replies(3, true);
    run_until(t_renew + 330);
    assert_int_equal(W.srv[0].extend_calls, 2);
    run_until(t_renew + 937);
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    run_until(t_renew + 938);
    assert_non_null(find_ev(&W.rec, ELK_LOCK_EV_LOST));
    hold_replies(3, false);
    pump();
    assert_false(elk_lock_is_held(&W.lock, NOW()));
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEWED), 1);
}

/* A commit that finds our key gone (-1: another holder or expiry) is not a commit: with
 * a majority of those, the acquisition fails and the token is never handed out. */
static void test_commit_key_gone_on_majority(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    elk_client_poll(&W.client, NOW()); /* acquire requests out */
    for (size_t i = 0; i < 3; i++) {
        lfr_serve(&W.srv[i]); /* acquire succeeds everywhere */
    }
    lfr_del(&W.srv[1], "t:{valve}");
    lfr_del(&W.srv[2], "t:{valve}");
    pump();
    assert_true(W.srv[1].commit_calls >= 1);
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED));
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_non_null(ev);
    assert_int_equal(ev->nodes[1].status, ELK_LOCK_NODE_BUSY);
    assert_false(elk_lock_is_held(&W.lock, NOW()));
}

/* A reply of an earlier round, read late (queued behind a node's other replies), never
 * counts for the current round, even when both rounds are ACQUIREs: here it would make a
 * quorum out of one real "ok" and a stale one. */
static void test_stale_round_reply_not_counted(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.fencing = false;
    c.round_timeout_ms = 500;
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 5000);
    lfr_set(&W.srv[1], "t:{valve}", "other:1", 5000);
    W.srv[2].hold = true; /* node 3 runs everything, answers only when flushed */
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), NOW() + 5000), ELK_E_WOULD_BLOCK);
    pump();
    assert_non_null(find_ev(&W.rec, ELK_LOCK_EV_RETRY)); /* round 1: busy quorum */
    /* before the retry: node 1 is free, node 2 still taken, node 3 taken by a third */
    lfr_del(&W.srv[0], "t:{valve}");
    lfr_set(&W.srv[2], "t:{valve}", "third:1", 5000);
    uint64_t limit = NOW() + 2000;
    while (W.srv[0].acquire_calls < 2 && NOW() < limit) {
        run_until(NOW() + 1);
    }
    assert_int_equal(W.srv[2].acquire_calls, 2); /* round 2 ran on node 3: busy */
    W.srv[2].hold = false;
    lfr_flush(&W.srv[2]); /* round 1's "ok", its release, round 2's "busy" */
    pump();
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED));
    assert_false(elk_lock_is_held(&W.lock, NOW()));
    assert_string_equal(lfr_get(&W.srv[1], "t:{valve}"), "other:1");
}

/* At the deadline itself the lease is over, whether or not a poll has run since: not
 * held, no validity, and a re-entrant acquire is refused. */
static void test_deadline_is_exclusive_without_poll(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.lcfg = &c);
    pump();
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    uint64_t d = elk_lock_deadline(&W.lock);
    assert_int_equal(d, t0 + 938);
    assert_true(elk_lock_is_held(&W.lock, d - 1));
    assert_int_equal(elk_lock_validity(&W.lock, d - 1), 1);
    assert_false(elk_lock_is_held(&W.lock, d));
    assert_int_equal(elk_lock_validity(&W.lock, d), 0);
    assert_int_equal(elk_lock_acquire(&W.lock, d, 0), ELK_E_LOCK_LOST);
    assert_int_equal(elk_lock_hold_count(&W.lock), 1);
    assert_int_equal(elk_lock_acquire(&W.lock, d - 1, 0), ELK_OK); /* still valid: re-entered */
    assert_int_equal(elk_lock_hold_count(&W.lock), 2);
}

/* ------------------------------------------- issue 20: SUSPECT, keepalive, lock-delay */

/* Connect (first call), then acquire at once and take the replies: the hold's start. */
static uint64_t acquire_now(void)
{
    pump();
    uint64_t t = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t, 0), ELK_E_WOULD_BLOCK);
    pump();
    return t;
}

/* Every server of the first n answers its scripts with an error (or, msg NULL, normally
 * again). The connections stay up: rounds fail at once, not at their limit. */
static void servers_fail(size_t first, size_t n, const char *msg)
{
    for (size_t i = first; i < first + n; i++) {
        W.srv[i].error_reply = msg;
    }
}

static size_t extends_total(size_t n)
{
    size_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += W.srv[i].extend_calls;
    }
    return sum;
}

/* A renewal round that misses its quorum before the deadline makes the lease SUSPECT:
 * one SUSPECT event in place of the spell's first RENEW_FAILED, later misses are
 * RENEW_FAILED, the lease stays held for every query, and the next confirmed renewal is
 * RECOVERED (not RENEWED). A second spell fires SUSPECT again. */
static void test_suspect_then_recovered(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(300); /* span 245, renew every 99, retry every 15 */
    world_setup(.nodes = 3, .lcfg = &c);
    uint64_t t0 = acquire_now();
    uint64_t tok = elk_lock_token(&W.lock);
    servers_fail(1, 2, "ERR boom");
    run_until(t0 + 98);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_HELD);
    run_until(t0 + 99);
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_SUSPECT);
    assert_int_equal(ev->now, t0 + 99);
    assert_int_equal(ev->err, ELK_E_FLEET_UNAVAILABLE);
    assert_int_equal(ev->validity_ms, 245 - 99);
    assert_int_equal(ev->ok, 1);
    assert_int_equal(ev->failed, 2);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEW_FAILED), 0);
    /* SUSPECT is held for everything but elk_lock_state */
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_SUSPECT);
    assert_string_equal(elk_lock_state_name(elk_lock_state(&W.lock)), "suspect");
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    assert_int_equal(elk_lock_token(&W.lock), tok);
    assert_int_equal(elk_lock_deadline(&W.lock), t0 + 245);
    assert_int_equal(elk_lock_validity(&W.lock, NOW()), 245 - 99);
    assert_int_equal(elk_lock_renewals(&W.lock), 0);
    assert_int_equal(elk_lock_hold_count(&W.lock), 1);
    assert_true(elk_lock_busy(&W.lock));
    assert_int_equal(elk_lock_keepalive(&W.lock, NOW()), ELK_OK);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_OK); /* re-entered */
    assert_int_equal(elk_lock_hold_count(&W.lock), 2);
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_SUSPECT);
    assert_int_equal(elk_lock_deinit(&W.lock), ELK_E_STATE);
    /* the retry misses again: RENEW_FAILED, still one SUSPECT */
    run_until(t0 + 114);
    assert_int_equal(last_ev(&W.rec)->type, ELK_LOCK_EV_RENEW_FAILED);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_SUSPECT), 1);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_SUSPECT);
    /* the next retry is confirmed: RECOVERED with RENEWED's fields */
    servers_fail(1, 2, NULL);
    run_until(t0 + 129);
    ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_RECOVERED);
    assert_int_equal(ev->err, ELK_OK);
    assert_int_equal(ev->deadline, t0 + 129 + 245);
    assert_int_equal(ev->validity_ms, 245);
    assert_int_equal(ev->renewals, 1);
    assert_int_equal(ev->token, tok);
    assert_int_equal(ev->ok, 3);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEWED), 0);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_HELD);
    /* back to plain renewals */
    run_until(t0 + 129 + 99);
    assert_int_equal(last_ev(&W.rec)->type, ELK_LOCK_EV_RENEWED);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RECOVERED), 1);
    /* a second spell is SUSPECT again */
    servers_fail(1, 2, "ERR boom");
    run_until(t0 + 129 + 2 * 99);
    assert_int_equal(last_ev(&W.rec)->type, ELK_LOCK_EV_SUSPECT);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_SUSPECT), 2);
    /* abandon ends the spell: held, renewal stopped, not suspect */
    assert_int_equal(elk_lock_abandon(&W.lock, NOW()), ELK_OK);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_HELD);
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_LOST));
    assert_int_equal(W.max_wake_violation, 0);
}

/* A spell that lasts to the deadline: SUSPECT first (before any RENEW_FAILED, before the
 * deadline), then LOST at the deadline, which ends the spell. A round whose failure only
 * shows at the deadline is LOST, never SUSPECT. Release and a new acquisition clear it. */
static void test_suspect_until_lost(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(300);
    world_setup(.nodes = 3, .lcfg = &c, .no_hygiene = true);
    uint64_t t0 = acquire_now();
    servers_fail(0, 2, "ERR boom");
    run_until(t0 + 245);
    assert_int_equal(W.rec.ev[1].type, ELK_LOCK_EV_SUSPECT); /* right after ACQUIRED */
    assert_true(W.rec.ev[1].now < t0 + 245);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_SUSPECT), 1);
    assert_true(count_ev(&W.rec, ELK_LOCK_EV_RENEW_FAILED) >= 5);
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_LOST);
    assert_int_equal(ev->now, t0 + 245);
    assert_int_equal(ev->err, ELK_E_LOCK_LOST);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_LOST);
    assert_false(elk_lock_is_held(&W.lock, NOW()));
    assert_int_equal(elk_lock_keepalive(&W.lock, NOW()), ELK_E_NOT_HELD);
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_E_LOCK_LOST);
    servers_fail(0, 2, NULL);
    run_until(NOW() + 100);
    /* a fresh hold starts plain, and a miss of its own is a new spell */
    size_t suspects = count_ev(&W.rec, ELK_LOCK_EV_SUSPECT);
    uint64_t t1 = acquire_now();
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_HELD);
    servers_fail(0, 2, "ERR boom");
    run_until(t1 + 99);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_SUSPECT), suspects + 1);
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_RELEASING);

    /* single node, a renewal due so late (90 % of the TTL) that a retry pause (ttl/20)
     * into its round is past the deadline, its reply held back: LOST at the deadline,
     * never SUSPECT */
    c = cfg_ttl(1000);
    c.renew_fraction_pct = 90;
    world_setup(.lcfg = &c);
    W.h.nodes[0].cfg.request_timeout_ms = 60000;
    t0 = acquire_now();
    W.srv[0].hold = true;
    run_until(t0 + 938);
    assert_int_equal(W.srv[0].extend_calls, 1);
    assert_non_null(find_ev(&W.rec, ELK_LOCK_EV_LOST));
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_SUSPECT), 0);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEW_FAILED), 0);
}

/* Silent nodes (stopped, partitioned) time a renewal round out only at its limit, the
 * deadline: a round still short of its quorum ttl/20 after it was sent makes the lease
 * SUSPECT then, on time (the poll's wake includes it), while it keeps running; its late
 * quorum is RECOVERED. */
static void test_suspect_while_round_silent(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000); /* renew at 330, pause 50, deadline t_send + 938 */
    world_setup(.nodes = 3, .lcfg = &c);
    for (size_t i = 0; i < 3; i++) {
        W.h.nodes[i].cfg.request_timeout_ms = 60000;
    }
    uint64_t t0 = acquire_now();
    W.srv[1].hold = true;
    W.srv[2].hold = true;
    run_until(t0 + 379);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_RENEWING);
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_SUSPECT));
    assert_int_equal(pump(), t0 + 380); /* the poll asks to be called then */
    W.h.clock.now = t0 + 380;
    pump();
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_SUSPECT);
    assert_int_equal(ev->now, t0 + 380);
    assert_int_equal(ev->ok, 1);
    assert_int_equal(ev->validity_ms, 938 - 380);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_SUSPECT);
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    run_until(t0 + 600); /* one spell, one SUSPECT; the round is still the same */
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_SUSPECT), 1);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEW_FAILED), 0);
    assert_int_equal(W.srv[1].extend_calls, 1);
    for (size_t i = 1; i < 3; i++) {
        W.srv[i].hold = false;
        lfr_flush(&W.srv[i]);
    }
    pump();
    ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_RECOVERED);
    assert_int_equal(ev->deadline, t0 + 330 + 938); /* from the round's own t_send */
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_HELD);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEWED), 0);
    assert_int_equal(W.max_wake_violation, 0);
}

/* Renewal needs proof of life: the keepalive of the hold's start and of each
 * elk_lock_keepalive lasts keepalive_ms (the boundary included); a renewal due after it
 * stops renewal (RENEW_STOPPED ELK_E_KEEPALIVE_MISSED), nothing more is sent, a late
 * keepalive revives nothing, and LOST comes at the deadline with that cause. */
static void test_keepalive_missed_stops_renewal(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(300); /* span 245, renew every 99 */
    c.keepalive_ms = 150;
    world_setup(.lcfg = &c);
    pump();
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_keepalive(&W.lock, t0), ELK_E_NOT_HELD);
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    run_until(t0 + 47);
    assert_int_equal(elk_lock_keepalive(&W.lock, NOW()), ELK_OK); /* good until 197 */
    run_until(t0 + 197);
    assert_int_equal(W.srv[0].extend_calls, 1); /* at 99 */
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEWED), 1);
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_RENEW_STOPPED));
    run_until(t0 + 198); /* due one millisecond too late */
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_RENEW_STOPPED);
    assert_int_equal(ev->err, ELK_E_KEEPALIVE_MISSED);
    assert_int_equal(ev->now, t0 + 198);
    assert_int_equal(W.srv[0].extend_calls, 1);
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_HELD);
    assert_int_equal(elk_lock_keepalive(&W.lock, NOW()), ELK_E_KEEPALIVE_MISSED);
    run_until(t0 + 99 + 245);
    ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_LOST);
    assert_int_equal(ev->now, t0 + 99 + 245);
    assert_int_equal(ev->err, ELK_E_KEEPALIVE_MISSED);
    assert_int_equal(elk_lock_last_error(&W.lock), ELK_E_KEEPALIVE_MISSED);
    assert_int_equal(W.srv[0].extend_calls, 1);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEW_STOPPED), 1);
    assert_int_equal(W.max_wake_violation, 0);

    /* the boundary: a renewal due exactly keepalive_ms after the hold began still runs */
    c.keepalive_ms = 99;
    world_setup(.lcfg = &c);
    t0 = acquire_now();
    run_until(t0 + 99);
    assert_int_equal(W.srv[0].extend_calls, 1);
    assert_int_equal(last_ev(&W.rec)->type, ELK_LOCK_EV_RENEWED);
    run_until(t0 + 198);
    assert_int_equal(W.srv[0].extend_calls, 1);
    assert_int_equal(last_ev(&W.rec)->type, ELK_LOCK_EV_RENEW_STOPPED);
}

/* Keepalives in time keep the lease renewed for as long as they come (the interval set
 * at run time with elk_lock_set_keepalive, before the hold); when they stop, so does
 * renewal, and a new hold starts with a fresh keepalive. */
static void test_keepalive_kept_renews(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(300);
    world_setup(.nodes = 3, .lcfg = &c, .no_hygiene = true);
    pump();
    assert_int_equal(elk_lock_set_keepalive(NULL, NOW(), 60), ELK_E_INVALID_ARG);
    assert_int_equal(elk_lock_set_keepalive(&W.lock, NOW(), 60), ELK_OK);
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    for (uint64_t t = t0 + 50; t <= t0 + 2000; t += 50) {
        run_until(t);
        assert_int_equal(elk_lock_keepalive(&W.lock, NOW()), ELK_OK);
    }
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    assert_true(count_ev(&W.rec, ELK_LOCK_EV_RENEWED) >= 19);
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_RENEW_STOPPED));
    assert_null(find_ev(&W.rec, ELK_LOCK_EV_LOST));
    uint64_t last_ka = NOW();
    run_until(NOW() + 1000);
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_RENEW_STOPPED);
    assert_non_null(ev);
    assert_int_equal(ev->err, ELK_E_KEEPALIVE_MISSED);
    assert_true(ev->now > last_ka + 60);
    ev = find_ev(&W.rec, ELK_LOCK_EV_LOST);
    assert_non_null(ev);
    assert_int_equal(ev->err, ELK_E_KEEPALIVE_MISSED);
    for (size_t i = 0; i < LFR_LOG && i < W.srv[0].nlog; i++) {
        if (strcmp(W.srv[0].log[i].which, "extend") == 0) {
            /* keepalives every 50 ms: a renewal never starts more than 60 ms after one */
            assert_true(W.srv[0].log[i].at <= last_ka + 60);
        }
    }
    /* a new hold: the interval stays, the keepalive starts afresh, renewal runs again */
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_E_LOCK_LOST);
    run_until(NOW() + 100);
    size_t renewed = count_ev(&W.rec, ELK_LOCK_EV_RENEWED);
    uint64_t t1 = acquire_now();
    run_until(t1 + 99);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEWED), renewed); /* 99 > 60: stopped */
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEW_STOPPED), 2);
    assert_int_equal(elk_lock_set_keepalive(&W.lock, NOW(), 0), ELK_OK); /* off again */
}

/* The proof the issue asks for: no renewal round starts after keepalive_at +
 * keepalive_ms, retries of a failing spell included (counted on the servers). */
static void test_keepalive_stops_retries_too(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(300); /* renew at 99, retries every 15 ms */
    c.keepalive_ms = 120;
    world_setup(.nodes = 3, .lcfg = &c);
    uint64_t t0 = acquire_now();
    servers_fail(1, 2, "ERR boom");
    run_until(t0 + 244);
    /* rounds at 99 (SUSPECT) and 114 (RENEW_FAILED); the retry due at 129 > 120 stops */
    assert_int_equal(extends_total(3), 2 * 3);
    for (size_t s = 0; s < 3; s++) {
        for (size_t i = 0; i < W.srv[s].nlog; i++) {
            if (strcmp(W.srv[s].log[i].which, "extend") == 0) {
                assert_true(W.srv[s].log[i].at <= t0 + 120);
            }
        }
    }
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_SUSPECT), 1);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEW_FAILED), 1);
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_RENEW_STOPPED);
    assert_non_null(ev);
    assert_int_equal(ev->now, t0 + 129);
    assert_int_equal(ev->err, ELK_E_KEEPALIVE_MISSED);
    assert_int_equal(count_ev(&W.rec, ELK_LOCK_EV_RENEW_STOPPED), 1);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_SUSPECT); /* still held, still suspect */
    run_until(t0 + 245);
    assert_int_equal(extends_total(3), 2 * 3);
    ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_LOST);
    assert_int_equal(ev->now, t0 + 245);
    assert_int_equal(ev->err, ELK_E_KEEPALIVE_MISSED);
    assert_int_equal(W.max_wake_violation, 0);
}

/* ------------------------------------- the scripts' replies and the lock-delay marker */

/* ACQUIRE and EXTEND answer {result, server_us, marker_ms}; any other shape is a failed
 * node, never a grant: the old bare integer, the old pair, an array of four, a string where
 * an integer belongs. */
static void test_reply_shape_is_checked(void **state)
{
    (void)state;
    static const char *const bad[] = {":1\r\n",
                                      "*2\r\n:1\r\n:2\r\n",
                                      "*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n",
                                      "*3\r\n$1\r\n1\r\n:5\r\n:1\r\n",
                                      "*3\r\n:1\r\n$1\r\n5\r\n:1\r\n",
                                      "*3\r\n:1\r\n:5\r\n$1\r\n1\r\n",
                                      "*1\r\n:1\r\n"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        elk_lock_config_t c = cfg_ttl(1000);
        world_setup(.lcfg = &c);
        pump();
        W.srv[0].raw_reply = bad[k];
        assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
        pump();
        const elk_lock_event_t *ev = last_ev(&W.rec);
        assert_non_null(ev);
        assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRE_FAILED);
        assert_int_equal(ev->nodes[0].status, ELK_LOCK_NODE_ERROR);
        assert_int_equal(ev->nodes[0].err, ELK_E_UNEXPECTED_REPLY);
        assert_false(elk_lock_is_held(&W.lock, NOW()));
    }
}

/* The server's TIME reaches the round's results (what the clock check reads). */
static void test_server_time_recorded(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.lcfg = &c);
    pump();
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRED);
    assert_int_equal(ev->nodes[0].server_ms, (int64_t)NOW() + W.srv[0].wall_offset_ms);
    /* the token, first element of the reply: the server's clock in us (its floor) */
    assert_int_equal(ev->nodes[0].value, ((int64_t)NOW() + W.srv[0].wall_offset_ms) * 1000);
}

/* lock_delay_ms reaches the scripts: the marker outlives the lease by it, a renewal
 * pushes it out, another holder is refused while it stands (the node says so), and a
 * clean release deletes it. */
static void test_lock_delay_marker(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    c.lock_delay_ms = 700;
    world_setup(.lcfg = &c, .two = true);
    pump();
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_int_equal(last_ev(&W.rec)->type, ELK_LOCK_EV_ACQUIRED);
    assert_string_equal(lfr_get(&W.srv[0], "t:{valve}:delay"), elk_lock_value(&W.lock));
    assert_int_equal(lfr_pttl(&W.srv[0], "t:{valve}:delay"), 1700);
    run_until(NOW() + 400); /* past the renewal (33 % of the TTL) */
    assert_true(count_ev(&W.rec, ELK_LOCK_EV_RENEWED) >= 1);
    assert_true(lfr_pttl(&W.srv[0], "t:{valve}:delay") > 1700 - 100);

    /* the holder vanishes: its key goes, the marker stands */
    lfr_del(&W.srv[0], "t:{valve}");
    assert_int_equal(elk_lock_acquire(&W.lock2, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    const elk_lock_event_t *ev = last_ev(&W.rec2);
    assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(ev->nodes[0].status, ELK_LOCK_NODE_BUSY);
    assert_int_equal(ev->nodes[0].err, ELK_E_LOCK_DELAY);
    assert_int_equal(ev->nodes[0].value, ELK_LOCK_ACQUIRE_DELAYED);
    assert_null(lfr_get(&W.srv[0], "t:{valve}")); /* nothing taken */

    /* a clean release deletes the marker (our key is already gone: still deleted) */
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_OK);
    pump();
    assert_null(lfr_get(&W.srv[0], "t:{valve}:delay"));
    assert_int_equal(elk_lock_acquire(&W.lock2, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_int_equal(last_ev(&W.rec2)->type, ELK_LOCK_EV_ACQUIRED);
}

/* Without a lock delay no marker is written, and the request says 0. */
static void test_no_lock_delay_no_marker(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.lcfg = &c);
    pump();
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_int_equal(last_ev(&W.rec)->type, ELK_LOCK_EV_ACQUIRED);
    assert_null(lfr_get(&W.srv[0], "t:{valve}:delay"));
}

/* An acquire refused by a busy quorum says ELK_E_LOCK_DELAY when any busy reply was a
 * lock-delay marker (last_err, ACQUIRE_FAILED, each RETRY of a waiter), ELK_E_LOCK_BUSY
 * when none was. */
static void test_lock_delay_reported(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    lfr_set(&W.srv[0], "t:{valve}:delay", "gone:1", 5000); /* an unclean end's marker */
    lfr_set(&W.srv[1], "t:{valve}", "other:1", 5000);      /* an ordinary holder */
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(ev->err, ELK_E_LOCK_DELAY);
    assert_int_equal(ev->busy, 2);
    assert_int_equal(ev->nodes[1].err, ELK_OK); /* one delay among the busy is enough */
    assert_int_equal(elk_lock_last_error(&W.lock), ELK_E_LOCK_DELAY);
    /* the same quorum busy with no marker: plain busy */
    lfr_del(&W.srv[0], "t:{valve}:delay");
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 5000);
    run_until(NOW() + 10);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(ev->err, ELK_E_LOCK_BUSY);
    assert_int_equal(elk_lock_last_error(&W.lock), ELK_E_LOCK_BUSY);

    /* a waiter: every round refused by the markers says so, then the grant comes once
     * they are gone */
    world_setup(.nodes = 3, .lcfg = &c);
    pump();
    lfr_set(&W.srv[0], "t:{valve}:delay", "gone:1", 300);
    lfr_set(&W.srv[1], "t:{valve}:delay", "gone:1", 300);
    uint64_t t0 = NOW();
    assert_int_equal(elk_lock_acquire(&W.lock, t0, t0 + 2000), ELK_E_WOULD_BLOCK);
    run_until(t0 + 1000);
    ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_true(ev->now >= t0 + 300);
    assert_true(count_ev(&W.rec, ELK_LOCK_EV_RETRY) >= 1);
    for (size_t i = 0; i < W.rec.n; i++) {
        if (W.rec.ev[i].type == ELK_LOCK_EV_RETRY) {
            assert_int_equal(W.rec.ev[i].err, ELK_E_LOCK_DELAY);
        }
    }
}

/* An unclean end (here abandon, LOST at the deadline) with lock_delay: no release is sent
 * after the loss (RELEASE would delete the marker), so the next holder is refused with
 * ELK_E_LOCK_DELAY until lock_delay after the lease could last have been valid on the
 * server, and granted after that. */
static void test_lock_delay_survives_loss(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000); /* deadline t_send + 938, key ttl 1000 */
    c.lock_delay_ms = 700;
    world_setup(.lcfg = &c, .two = true);
    uint64_t t0 = acquire_now();
    assert_int_equal(elk_lock_abandon(&W.lock, NOW()), ELK_OK);
    run_until(t0 + 938);
    const elk_lock_event_t *ev = last_ev(&W.rec);
    assert_int_equal(ev->type, ELK_LOCK_EV_LOST);
    assert_int_equal(ev->err, ELK_E_LOCK_ABANDONED);
    assert_false(elk_lock_busy(&W.lock)); /* nothing deferred */
    run_until(t0 + 1000);                 /* the key expires on the server; the marker stands */
    assert_int_equal(W.srv[0].release_calls, 0);
    assert_null(lfr_get(&W.srv[0], "t:{valve}"));
    assert_non_null(lfr_get(&W.srv[0], "t:{valve}:delay"));
    assert_int_equal(elk_lock_acquire(&W.lock2, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    ev = last_ev(&W.rec2);
    assert_int_equal(ev->type, ELK_LOCK_EV_ACQUIRE_FAILED);
    assert_int_equal(ev->err, ELK_E_LOCK_DELAY);
    assert_int_equal(elk_lock_acquire(&W.lock2, NOW(), t0 + 3000), ELK_E_WOULD_BLOCK);
    run_until(t0 + 3000);
    ev = find_ev(&W.rec2, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_true(ev->now >= t0 + 1700);
    assert_int_equal(elk_lock_release(&W.lock, NOW()), ELK_E_LOCK_LOST);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_IDLE);
}

/* COMMIT answers the node's counter after the commit, which is >= the token sent
 * (elk/lock_scripts.h). A node answering the token sent minus one did not commit it and
 * must not count: with two such nodes of three the acquisition fails. The same replies
 * carrying the token itself are a commit (the boundary, and a check that the token read
 * off the servers is the one sent). */
static void test_commit_reply_below_token_not_counted(void **state)
{
    (void)state;
    static char reply[2][48];
    for (int below = 1; below >= 0; below--) {
        elk_lock_config_t c = cfg_ttl(1000);
        world_setup(.nodes = 3, .lcfg = &c);
        pump();
        assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
        elk_client_poll(&W.client, NOW()); /* acquire requests out */
        for (size_t i = 0; i < 3; i++) {
            lfr_serve(&W.srv[i]); /* acquire succeeds everywhere */
        }
        elk_client_poll(&W.client, NOW()); /* acquire replies read, COMMIT requests out */
        assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_COMMITTING);
        uint64_t sent = W.lock.token; /* what the COMMIT carries (lock_send.c) */
        assert_true(sent >= 1u);
        snprintf(reply[below], sizeof reply[below], ":%llu\r\n",
                 (unsigned long long)(sent - (uint64_t)below));
        W.srv[1].raw_reply = reply[below];
        W.srv[2].raw_reply = reply[below];
        pump();
        assert_int_equal(W.srv[0].commit_calls, 1); /* the commit round ran */
        if (below) {
            assert_null(find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED));
            const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRE_FAILED);
            assert_non_null(ev);
            assert_int_equal(ev->nodes[1].status, ELK_LOCK_NODE_ERROR);
            assert_int_equal(ev->nodes[2].status, ELK_LOCK_NODE_ERROR);
            assert_false(elk_lock_is_held(&W.lock, NOW()));
        } else {
            const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED);
            assert_non_null(ev);
            assert_int_equal(ev->token, sent);
            assert_true(elk_lock_is_held(&W.lock, NOW()));
        }
    }
}

/* The first renewal is due at ttl * renew_fraction / 100 after the acquire was sent, for
 * any ttl in ms: 1999 * 33 / 100 = 659 (659.67 rounded down), not the 627 that counting
 * whole hundreds only (19 * 33) would give. The next one counts from that round's send. */
static void test_renewal_time_for_ttl_not_multiple_of_100(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1999);
    c.renew_fraction_pct = 33;
    world_setup(.lcfg = &c);
    pump();
    uint64_t t0 = NOW();
    uint64_t at = (uint64_t)c.ttl_ms * c.renew_fraction_pct / 100u;
    assert_int_not_equal(at, (uint64_t)(c.ttl_ms / 100u) * c.renew_fraction_pct);
    assert_int_equal(elk_lock_acquire(&W.lock, t0, 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_true(elk_lock_is_held(&W.lock, NOW()));
    run_until(t0 + at - 1u);
    assert_int_equal(W.srv[0].extend_calls, 0);
    run_until(t0 + at);
    assert_int_equal(W.srv[0].extend_calls, 1);
    assert_int_equal(last_ev(&W.rec)->type, ELK_LOCK_EV_RENEWED);
    run_until(t0 + 2u * at - 1u);
    assert_int_equal(W.srv[0].extend_calls, 1);
    run_until(t0 + 2u * at);
    assert_int_equal(W.srv[0].extend_calls, 2);
}

int main(void)
{
    return ELK_RUN_TESTS(
        test_reply_shape_is_checked, test_server_time_recorded, test_lock_delay_marker,
        test_no_lock_delay_no_marker, test_config_and_names, test_single_acquire_release,
        test_acquire_and_release_write_at_once, test_single_busy_and_fencing_off, test_reentrancy,
        test_noscript_fallback, test_fencing_commit_design_case,
        test_tokens_increase_over_overlapping_majorities, test_commit_fails_on_majority,
        test_failed_round_releases_everywhere, test_busy_on_quorum, test_majority_late,
        test_renewal_keeps_lock, test_renewal_fails_on_minority,
        test_renewal_fails_on_majority_lost_at_deadline, test_lost_at_deadline_silent_single,
        test_lost_release_waits_for_stop_margin, test_renew_value_gone_is_lost_at_once,
        test_caps_stop_renewal, test_wait_retry_then_timeout, test_release_channel_handoff,
        test_refused_subscribe_keeps_connections_and_retries,
        test_release_message_during_retry_round, test_own_release_does_not_wake,
        test_release_channel_resp2_subscriber, test_fleet_unavailable_and_cancel,
        test_entropy_failure, test_safety_check, test_safety_check_sent_first_on_reconnect,
        test_safety_check_fits_before_many_resubscribes, test_lost_cause_fleet_unreachable,
        test_lost_causes_are_distinct, test_abandon_lets_the_lease_run_out, test_even_fleet_two,
        test_even_fleet_four, test_lost_regrant_release_carries_old_value,
        test_lost_busy_regrant_release_carries_old_value, test_release_resend_after_new_value,
        test_release_after_reconnect_carries_old_value, test_renewal_deadline_with_reply_time,
        test_commit_round_states, test_commit_key_gone_on_majority,
        test_stale_round_reply_not_counted, test_deadline_is_exclusive_without_poll,
        test_suspect_then_recovered, test_suspect_until_lost, test_suspect_while_round_silent,
        test_keepalive_missed_stops_renewal, test_keepalive_kept_renews,
        test_keepalive_stops_retries_too, test_lock_delay_reported, test_lock_delay_survives_loss,
        test_commit_reply_below_token_not_counted, test_renewal_time_for_ttl_not_multiple_of_100);
}
