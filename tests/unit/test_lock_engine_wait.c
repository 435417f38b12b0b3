/* SPDX-License-Identifier: MIT */
/*
 * Lease engine (lib/lock): waiting for a held lock (retries, the release channel over
 * RESP3 pushes and RESP2 subscribers), an unavailable fleet, the safety check, even
 * fleets.
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

static void test_wait_retry_then_timeout(void **state)
{
    (void)state;
    world_setup(.ttl = 1000, .wait_ms = 100, .connect = true);
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 0);
    uint64_t t0 = ask_and_run(450, 250);
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
    t0 = ask_and_run(450, 1000);
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
    uint64_t t0 = b_holds_a_waits(5000, 100);
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
    world_setup(.nodes = 3, .ttl = 1000, .wait_ms = 500, .resp3 = true, .two = true);
    for (size_t i = 0; i < 3; i++) {
        W.srv[i].sub_refused = true;
    }
    pump();
    uint64_t t0 = b_holds_a_waits(5000, 1200); /* retries at +500, +1000 while lock2 renews */
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
    world_setup(.ttl = 1000, .wait_ms = 500, .resp3 = true, .connect = true);
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 0);
    uint64_t t0 = ask_and_run(5000, 499);
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
    world_setup(.nodes = 3, .ttl = 1000, .wait_ms = 500, .resp3 = true, .connect = true);
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 0);
    lfr_set(&W.srv[1], "t:{valve}", "other:1", 0);
    (void)ask_and_run(1900, 1700);
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
    world_setup(.nodes = 3, .lcfg = &c, .two = true, .subs = true, .connect = true);
    assert_false(elk_node_stats(&W.h.nodes[0])->resp3);
    assert_true(W.hs.nodes[0].subscriber);
    elk_wait_t w[2 * CONFIG_ELK_MAX_NODES];
    assert_int_equal(elk_client_waits(&W.client, w, 2 * CONFIG_ELK_MAX_NODES), 6);
    uint64_t t0 = b_holds_a_waits(5000, 100);
    assert_int_equal(W.srv[0].subscribe, 1); /* on the subscriber connection only */
    assert_string_equal(W.srv[0].sub[1], "t:{valve}:released"); /* conns: h, hs, h2 */
    assert_int_equal(elk_lock_release(&W.lock2, NOW()), ELK_OK);
    pump();
    const elk_lock_event_t *ev = find_ev(&W.rec, ELK_LOCK_EV_ACQUIRED);
    assert_non_null(ev);
    assert_int_equal(ev->now, t0 + 100);      /* woken by the message, not the 500 ms retry */
    assert_string_equal(W.srv[0].sub[1], ""); /* unsubscribed once acquired */

    /* without subscriber connections a RESP2 waiter falls back to its retry delay */
    world_setup(.nodes = 3, .lcfg = &c, .two = true, .connect = true);
    assert_int_equal(elk_lock_acquire(&W.lock2, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    t0 = ask_and_run(5000, 100);
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
    world_setup(.nodes = 3, .ttl = 1000);
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
    world_setup(.nodes = 1, .connect = true);
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
    (void)b_holds_a_waits(10000, 100);
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
    world_setup(.nodes = n, .ttl = 300, .round_ms = 30, .connect = true);
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

int main(void)
{
    return ELK_RUN_TESTS(
        test_wait_retry_then_timeout, test_release_channel_handoff,
        test_refused_subscribe_keeps_connections_and_retries,
        test_release_message_during_retry_round, test_own_release_does_not_wake,
        test_release_channel_resp2_subscriber, test_fleet_unavailable_and_cancel,
        test_entropy_failure, test_safety_check, test_safety_check_sent_first_on_reconnect,
        test_safety_check_fits_before_many_resubscribes, test_even_fleet_two, test_even_fleet_four);
}
