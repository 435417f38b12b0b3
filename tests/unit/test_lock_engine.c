/* SPDX-License-Identifier: MIT */
/*
 * Lease engine (lib/lock), the core: acquire, release, fencing tokens, commit rounds,
 * majorities, and the value every release carries.
 * Against real lib/node connections on scripted transports, answered by an in-memory
 * Redis, on a manual clock (the world of support/lock_world.h).
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
#include "lock_world.h"

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
    world_setup(.ttl = 1000);
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
    world_setup(.ttl = 1000, .connect = true);
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
    world_setup(.lcfg = &c, .connect = true);
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 5000);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    const elk_lock_event_t *ev = last_failed(&W.rec, ELK_E_LOCK_BUSY);
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
    world_setup(.ttl = 1000, .connect = true);
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
    world_setup(.nodes = 3, .ttl = 1000);
    for (size_t i = 0; i < 3; i++) {
        W.srv[i].forget_scripts = true; /* SCRIPT LOAD lost, as after SCRIPT FLUSH */
    }
    (void)acquire_now();
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
    world_setup(.nodes = 3, .ttl = 1000, .round_ms = 100, .two = true, .connect = true);
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

/* The token is the highest over the quorum's replies, whichever node answers first or has
 * the lowest index: counters (1, 5, 1) give F+2, F+6, F+2, and the token is F+6, committed
 * to every node (mutant commit.token-first-not-max: the first node's F+2). */
static void test_token_is_highest_of_the_quorum(void **state)
{
    (void)state;
    world_setup(.nodes = 3);
    pump();
    lfr_set(&W.srv[0], "t:{valve}:fence", "9000000000000001", 0);
    lfr_set(&W.srv[1], "t:{valve}:fence", "9000000000000005", 0);
    lfr_set(&W.srv[2], "t:{valve}:fence", "9000000000000001", 0);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_int_equal(ev->token, F_ + 6);
    assert_int_equal(elk_lock_token(&W.lock), F_ + 6);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(lfr_int(&W.srv[i], "t:{valve}:fence"), F_ + 6);
    }
}
#undef F_

/* Successive holders over partly overlapping majorities: tokens strictly increase. */
static void test_tokens_increase_over_overlapping_majorities(void **state)
{
    (void)state;
    world_setup(.nodes = 5, .ttl = 1000, .round_ms = 50, .two = true, .connect = true);
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
    world_setup(.nodes = 3, .ttl = 1000);
    acquire_served(3);
    W.srv[1].error_reply = "READONLY You can't write against a read only replica.";
    W.srv[2].error_reply = "READONLY You can't write against a read only replica.";
    pump();
    const elk_lock_event_t *ev = last_failed(&W.rec, ELK_E_FLEET_UNAVAILABLE);
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
    world_setup(.nodes = 3, .ttl = 1000, .round_ms = 100, .connect = true);
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
    world_setup(.nodes = 5, .ttl = 1000, .connect = true);
    for (size_t i = 0; i < 3; i++) {
        lfr_set(&W.srv[i], "t:{valve}", "other:1", 5000);
    }
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    const elk_lock_event_t *ev = last_failed(&W.rec, ELK_E_LOCK_BUSY);
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
    world_setup(.nodes = 5, .lcfg = &c, .connect = true);
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
    world_setup(.ttl = 1000);
    uint64_t t0 = acquire_now();
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
    world_setup(.nodes = 3, .ttl = 1000, .round_ms = 200, .connect = true);
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
    world_setup(.nodes = 3, .lcfg = &c, .connect = true);
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

int main(void)
{
    return ELK_RUN_TESTS(
        test_config_and_names, test_single_acquire_release, test_acquire_and_release_write_at_once,
        test_single_busy_and_fencing_off, test_reentrancy, test_noscript_fallback,
        test_fencing_commit_design_case, test_token_is_highest_of_the_quorum,
        test_tokens_increase_over_overlapping_majorities, test_commit_fails_on_majority,
        test_failed_round_releases_everywhere, test_busy_on_quorum, test_majority_late,
        test_lost_regrant_release_carries_old_value,
        test_lost_busy_regrant_release_carries_old_value, test_release_resend_after_new_value,
        test_release_after_reconnect_carries_old_value);
}
