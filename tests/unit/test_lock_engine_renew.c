/* SPDX-License-Identifier: MIT */
/*
 * Lease engine (lib/lock): renewals, the deadline, the ways a lease is lost, abandon,
 * and renewal timing when replies take time.
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

static void test_renewal_keeps_lock(void **state)
{
    (void)state;
    world_setup(.nodes = 3, .ttl = 300);
    uint64_t t0 = acquire_now();
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
    world_setup(.nodes = 5, .ttl = 300, .round_ms = 30);
    uint64_t t0 = acquire_now();
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
    uint64_t t0 = acquire_now();
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
    world_setup(.ttl = 1000);
    W.h.nodes[0].cfg.request_timeout_ms = 60000; /* the node itself would wait far longer */
    uint64_t t0 = acquire_now();
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
    uint64_t t0 = acquire_now();
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
    world_setup(.nodes = 3, .ttl = 1000);
    uint64_t t0 = acquire_now();
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

static void release_on_lost(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    (void)user;
    if (ev->type == ELK_LOCK_EV_LOST) {
        assert_int_equal(elk_lock_release(lock, ev->now), ELK_E_LOCK_LOST);
    }
}

/* The same loss with the caller releasing from inside its LOST event (lib/multi and elkd
 * do): the lock ends IDLE and not busy, and still releases nothing. It stayed RELEASING
 * for good when the engine cleared the deferred release after the event had run. */
static void test_renew_value_gone_released_inside_lost(void **state)
{
    (void)state;
    world_setup(.nodes = 3, .ttl = 1000);
    W.rec.hook = release_on_lost;
    uint64_t t0 = acquire_now();
    lfr_del(&W.srv[0], "t:{valve}");
    lfr_set(&W.srv[1], "t:{valve}", "thief:1", 5000);
    run_until(t0 + 330);
    assert_non_null(find_ev(&W.rec, ELK_LOCK_EV_LOST));
    run_until(t0 + 330 + 500);
    assert_int_equal(elk_lock_state(&W.lock), ELK_LOCK_IDLE);
    assert_false(elk_lock_busy(&W.lock));
    assert_int_equal(W.srv[2].release_calls, 0);
    assert_non_null(lfr_get(&W.srv[2], "t:{valve}"));
}

static void test_caps_stop_renewal(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(300);
    c.max_renewals = 2;
    world_setup(.lcfg = &c);
    uint64_t t0 = acquire_now();
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
    world_setup(.lcfg = &c, .connect = true);
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
    world_setup(.nodes = 3, .ttl = 300);
    uint64_t t0 = acquire_now();
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
    world_setup(.nodes = 3, .lcfg = &c, .connect = true);
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
    world_setup(.nodes = 3, .ttl = 1000, .connect = true);
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
    world_setup(.nodes = 3, .lcfg = &c, .connect = true);
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
    world_setup(.nodes = 3, .ttl = 1000);
    acquire_served(3);
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
    world_setup(.nodes = 3, .lcfg = &c, .connect = true);
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
    world_setup(.ttl = 1000);
    uint64_t t0 = acquire_now();
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

/* The first renewal is due at ttl * renew_fraction / 100 after the acquire was sent, for
 * any ttl in ms: 1999 * 33 / 100 = 659 (659.67 rounded down), not the 627 that counting
 * whole hundreds only (19 * 33) would give. The next one counts from that round's send. */
static void test_renewal_time_for_ttl_not_multiple_of_100(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1999);
    c.renew_fraction_pct = 33;
    world_setup(.lcfg = &c, .connect = true);
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
        test_renewal_keeps_lock, test_renewal_fails_on_minority,
        test_renewal_fails_on_majority_lost_at_deadline, test_lost_at_deadline_silent_single,
        test_lost_release_waits_for_stop_margin, test_renew_value_gone_is_lost_at_once,
        test_renew_value_gone_released_inside_lost, test_caps_stop_renewal,
        test_lost_cause_fleet_unreachable, test_lost_causes_are_distinct,
        test_abandon_lets_the_lease_run_out, test_commit_round_states,
        test_renewal_deadline_with_reply_time, test_commit_key_gone_on_majority,
        test_stale_round_reply_not_counted, test_deadline_is_exclusive_without_poll,
        test_renewal_time_for_ttl_not_multiple_of_100);
}
