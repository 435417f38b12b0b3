/* SPDX-License-Identifier: MIT */
/*
 * Lease engine (lib/lock), issue 20: SUSPECT, keepalives, the scripts' replies and the
 * lock-delay marker.
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

/* ------------------------------------------- issue 20: SUSPECT, keepalive, lock-delay */

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
    world_setup(.lcfg = &c, .connect = true);
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
    world_setup(.nodes = 3, .ttl = 300, .no_hygiene = true, .connect = true);
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
        world_setup(.ttl = 1000, .connect = true);
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
    world_setup(.ttl = 1000);
    (void)acquire_now();
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
    (void)acquire_now();
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
    world_setup(.ttl = 1000);
    (void)acquire_now();
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
    world_setup(.nodes = 3, .lcfg = &c, .connect = true);
    lfr_set(&W.srv[0], "t:{valve}:delay", "gone:1", 5000); /* an unclean end's marker */
    lfr_set(&W.srv[1], "t:{valve}", "other:1", 5000);      /* an ordinary holder */
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    const elk_lock_event_t *ev = last_failed(&W.rec, ELK_E_LOCK_DELAY);
    assert_int_equal(ev->busy, 2);
    assert_int_equal(ev->nodes[1].err, ELK_OK); /* one delay among the busy is enough */
    assert_int_equal(elk_lock_last_error(&W.lock), ELK_E_LOCK_DELAY);
    /* the same quorum busy with no marker: plain busy */
    lfr_del(&W.srv[0], "t:{valve}:delay");
    lfr_set(&W.srv[0], "t:{valve}", "other:1", 5000);
    run_until(NOW() + 10);
    assert_int_equal(elk_lock_acquire(&W.lock, NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    ev = last_failed(&W.rec, ELK_E_LOCK_BUSY);
    assert_int_equal(elk_lock_last_error(&W.lock), ELK_E_LOCK_BUSY);

    /* a waiter: every round refused by the markers says so, then the grant comes once
     * they are gone */
    world_setup(.nodes = 3, .lcfg = &c, .connect = true);
    lfr_set(&W.srv[0], "t:{valve}:delay", "gone:1", 300);
    lfr_set(&W.srv[1], "t:{valve}:delay", "gone:1", 300);
    uint64_t t0 = ask_and_run(2000, 1000);
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
    ev = last_failed(&W.rec2, ELK_E_LOCK_DELAY);
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
        acquire_served(3);
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

int main(void)
{
    return ELK_RUN_TESTS(
        test_suspect_then_recovered, test_suspect_until_lost, test_suspect_while_round_silent,
        test_keepalive_missed_stops_renewal, test_keepalive_kept_renews,
        test_keepalive_stops_retries_too, test_reply_shape_is_checked, test_server_time_recorded,
        test_lock_delay_marker, test_no_lock_delay_no_marker, test_lock_delay_reported,
        test_lock_delay_survives_loss, test_commit_reply_below_token_not_counted);
}
