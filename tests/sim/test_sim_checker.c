/* SPDX-License-Identifier: MIT */
/* The checker must be able to fail: each invariant is fed a history that breaks it
 * (and one that does not), without running a whole simulation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include "sim_world.h"

static sim_world_t w;

static int setup(void **state)
{
    (void)state;
    memset(&w, 0, sizeof w);
    w.opt.gateways = 3;
    w.opt.control = CTRL_NONE;
    w.hash = 0xcbf29ce484222325ull;
    w.calm_from = UINT64_MAX;
    sim_check_reset(&w);
    for (uint8_t i = 0; i < 3; i++) {
        w.gw[i].w = &w;
        w.gw[i].id = i;
        w.gw[i].resource = 0;
        w.gw[i].stop_ms = 20;
        /* local ms = true us / 1000 unless a test changes the rate */
        elk_sim_clock_init(&w.gw[i].clock, &w.core.now_us, 0, 0);
    }
    return 0;
}

static void grant(sim_gw_t *g, uint64_t token, uint64_t deadline)
{
    g->token = token;
    g->deadline = deadline;
    sim_check_acquired(&w, g, token);
}

/* --permits 2: two gateways on the semaphore's two permits at once are fine; a third one
 * driving while both occupy theirs is one violation per hold; once one has stopped (its
 * last command plus the stop margin) a third may drive. */
static void test_permits_exceeded(void **state)
{
    (void)state;
    w.opt.permits = 2;
    for (uint8_t i = 0; i < 3; i++) {
        w.gw[i].act = i; /* each on a permit of its own: no actuator is shared */
        w.gw[i].lease = 0;
    }
    grant(&w.gw[0], 1, 1000);
    grant(&w.gw[1], 1, 1000);
    w.core.now_us = 1000;
    sim_check_drive(&w, &w.gw[0], 1);
    w.core.now_us = 2000;
    sim_check_drive(&w, &w.gw[1], 2);
    assert_int_equal(w.run.violations[V_PERMITS], 0);
    grant(&w.gw[2], 1, 1000);
    w.core.now_us = 15000; /* gw0 occupies until 21 ms, gw1 until 22 ms */
    sim_check_drive(&w, &w.gw[2], 15);
    assert_int_equal(w.run.violations[V_PERMITS], 1);
    w.core.now_us = 16000;
    sim_check_drive(&w, &w.gw[2], 16);
    assert_int_equal(w.run.violations[V_PERMITS], 1); /* once per hold */
    grant(&w.gw[2], 2, 1000);                         /* a new hold of gw2 */
    w.core.now_us = 21000;                            /* gw0's actuator is safe again */
    sim_check_drive(&w, &w.gw[2], 21);
    w.core.now_us = 21500;
    sim_check_drive(&w, &w.gw[1], 21);
    assert_int_equal(w.run.violations[V_PERMITS], 1);
    assert_int_equal(w.run.violations[V_MUTEX], 0);
}

/* --multi 2: a view of gateway 0's multi lease over valves 1 and 2 at local ms now. */
static sim_multi_view_t mview(bool held1, uint64_t dl1, bool held2, uint64_t dl2)
{
    sim_multi_view_t v;
    memset(&v, 0, sizeof v);
    v.count = 2;
    v.res[0] = 1;
    v.res[1] = 2;
    v.held[0] = held1;
    v.held[1] = held2;
    v.token[0] = 5;
    v.token[1] = 7;
    v.deadline[0] = dl1;
    v.deadline[1] = dl2;
    return v;
}

/* multi_partial: driving while every resource is held under its own deadline is fine; a
 * drive with one of them lost, past its own deadline, or under a lease deadline later than
 * one of theirs is one violation per hold; only the held ones' actuators are driven. */
static void test_multi_partial(void **state)
{
    (void)state;
    sim_gw_t *g = &w.gw[0];
    w.opt.multi = 2;
    sim_multi_view_t v = mview(true, 1000, true, 900);
    g->deadline = 900; /* the earliest: right */
    sim_check_multi_acquired(&w, g, &v);
    w.core.now_us = 10000;
    sim_check_multi_drive(&w, g, 10, &v);
    assert_int_equal(w.run.violations[V_MULTI_PARTIAL], 0);
    assert_int_equal(w.run.drives, 2);
    v = mview(false, 0, true, 900); /* valve1 lost, valve2 still driven */
    sim_check_multi_drive(&w, g, 20, &v);
    assert_int_equal(w.run.violations[V_MULTI_PARTIAL], 1);
    assert_int_equal(w.run.drives, 3);
    sim_check_multi_drive(&w, g, 30, &v);
    assert_int_equal(w.run.violations[V_MULTI_PARTIAL], 1); /* once per hold */
    v = mview(true, 1000, true, 900);
    g->deadline = 1000; /* the latest: the gateway believes in 100 ms valve2 does not have */
    sim_check_multi_acquired(&w, g, &(sim_multi_view_t){.count = 0});
    sim_check_multi_drive(&w, g, 40, &v);
    assert_int_equal(w.run.violations[V_MULTI_PARTIAL], 2);
    g->deadline = 900;
    sim_check_multi_acquired(&w, g, &(sim_multi_view_t){.count = 0});
    sim_check_multi_drive(&w, g, 950, &v); /* past valve2's own deadline */
    assert_int_equal(w.run.violations[V_MULTI_PARTIAL], 3);
    assert_int_equal(w.run.violations[V_MUTEX], 0);
}

/* multi_starved: waits in the fault phase do not count; in the calm phase a gateway must be
 * granted within the bound, and one still asking when the run ends is judged then. */
static void test_multi_starved(void **state)
{
    (void)state;
    w.opt.multi = 2;
    w.opt.resources = 4;
    w.opt.ttl_ms = 1000;
    w.calm_from = 100000000; /* 100 s */
    uint64_t bound = sim_multi_starve_bound_us(&w);
    assert_int_equal(bound, (3u + 2u) * 4920000u);
    sim_multi_view_t none = {.count = 0};
    w.core.now_us = 1000;
    sim_check_multi_ask(&w, &w.gw[0]); /* asks in the fault phase */
    sim_check_multi_ask(&w, &w.gw[1]);
    w.core.now_us = 99000000;
    sim_check_multi_acquired(&w, &w.gw[1], &none); /* 99 s, all of it faults */
    w.core.now_us = w.calm_from + bound;
    sim_check_multi_acquired(&w, &w.gw[0], &none); /* exactly the bound */
    assert_int_equal(w.run.violations[V_MULTI_STARVED], 0);
    sim_check_multi_ask(&w, &w.gw[2]);
    w.core.now_us += 1000;
    sim_check_multi_ask(&w, &w.gw[1]);
    sim_check_multi_ask(&w, &w.gw[1]); /* still the first ask */
    w.core.now_us += bound;
    sim_check_multi_end(&w); /* gw2: bound + 1 ms; gw1: exactly the bound */
    assert_int_equal(w.run.violations[V_MULTI_STARVED], 1);
    assert_int_equal(w.run.calm_wait_max_us, bound + 1000u);
}

/* --fair: g and h wait on one resource, h (ticket 5) ahead of g (ticket 6); h's round
 * sent at 1 ms is answered by a quorum at 2 ms. */
static void fair_queue(sim_gw_t *h, sim_gw_t *g)
{
    w.opt.fair = true;
    h->fair.ticket_ttl_ms = g->fair.ticket_ttl_ms = 1000;
    w.core.now_us = 1000;
    sim_check_fair_ticket(&w, h, 5);
    sim_check_fair_ticket(&w, g, 6);
    w.core.now_us = 2000;
    sim_check_fair_round(&w, h, 1000);
}

/* g granted (and released at once: each history's grants are independent) */
static void fair_grant(sim_gw_t *g, uint64_t token)
{
    grant(g, token, w.core.now_us / 1000u + 1000u);
    sim_check_release(&w, g);
}

/* fair_order: a grant to g, named head by a round sent after a quorum knew h, while h's
 * ticket still lives (1 ms + 1 s) and h still waits, is one violation. */
static void test_fair_grant_past_a_live_lower_ticket(void **state)
{
    (void)state;
    fair_queue(&w.gw[0], &w.gw[1]);
    w.core.now_us = 4000;
    sim_check_fair_head(&w, &w.gw[1], 3000);
    w.core.now_us = 5000;
    fair_grant(&w.gw[1], 1);
    assert_int_equal(w.run.violations[V_FAIR_ORDER], 1);
}

/* ... and not one when h had left, when h's ticket had expired by the head decision, when
 * h's round was answered only after g's head round was sent, or when a master lost its
 * data (or jumped forward) after h's renewal: then it is counted as excused. */
static void test_fair_order_exceptions(void **state)
{
    sim_gw_t *h = &w.gw[0], *g = &w.gw[1];
    (void)state;
    fair_queue(h, g);
    sim_check_fair_left(&w, h);
    w.core.now_us = 4000;
    sim_check_fair_head(&w, g, 3000);
    fair_grant(g, 1);
    fair_queue(h, g);
    w.core.now_us = 1002000; /* h's ticket lived until 1 ms + 1 s */
    sim_check_fair_head(&w, g, 1001500);
    fair_grant(g, 2);
    fair_queue(h, g);
    w.core.now_us = 4000;
    sim_check_fair_head(&w, g, 1500); /* sent before a quorum had answered h */
    fair_grant(g, 3);
    assert_int_equal(w.run.violations[V_FAIR_ORDER], 0);
    fair_queue(h, g);
    w.master_fault_at = 2500;
    w.core.now_us = 4000;
    sim_check_fair_head(&w, g, 3000);
    fair_grant(g, 4);
    assert_int_equal(w.run.violations[V_FAIR_ORDER], 0);
    assert_int_equal(w.run.fair_exempt, 1);
    /* a fault before h's renewal excuses nothing */
    fair_queue(h, g);
    w.master_fault_at = 500;
    w.core.now_us = 4000;
    sim_check_fair_head(&w, g, 3000);
    fair_grant(g, 5);
    assert_int_equal(w.run.violations[V_FAIR_ORDER], 1);
}

static void test_overlapping_holds_are_one_violation(void **state)
{
    (void)state;
    grant(&w.gw[0], 1, 1000);
    w.core.now_us = 0;
    sim_check_drive(&w, &w.gw[0], 10);
    w.core.now_us = 30000; /* gw0's last command keeps the actuator busy until 50 ms */
    sim_check_drive(&w, &w.gw[0], 40);
    grant(&w.gw[1], 2, 1000);
    w.core.now_us = 45000;
    sim_check_drive(&w, &w.gw[1], 50);
    assert_int_equal(w.run.violations[V_MUTEX], 1);
    w.core.now_us = 46000;
    sim_check_drive(&w, &w.gw[1], 51);
    assert_int_equal(w.run.violations[V_MUTEX], 1); /* counted once per hold */
    assert_true(w.first_violation[0] != '\0');
}

static void test_handover_after_stop_margin_is_fine(void **state)
{
    (void)state;
    grant(&w.gw[0], 1, 1000);
    w.core.now_us = 0;
    sim_check_drive(&w, &w.gw[0], 10);
    sim_check_release(&w, &w.gw[0]); /* clean: before its deadline */
    grant(&w.gw[1], 2, 1000);
    w.core.now_us = 20000; /* exactly when gw0's actuator is safe */
    sim_check_drive(&w, &w.gw[1], 30);
    sim_check_release(&w, &w.gw[1]);
    grant(&w.gw[2], 3, 1000);
    w.core.now_us = 40000;
    sim_check_drive(&w, &w.gw[2], 50);
    for (int k = 0; k < V_KINDS; k++) {
        assert_int_equal(w.run.violations[k], 0);
    }
    assert_int_equal(w.run.cycles, 3);
}

static void test_token_not_above_previous_holder(void **state)
{
    (void)state;
    grant(&w.gw[0], 7, 1000);
    grant(&w.gw[1], 7, 1000);
    assert_int_equal(w.run.violations[V_FENCE_BACKWARDS], 1);
    grant(&w.gw[2], 3, 1000);
    assert_int_equal(w.run.violations[V_FENCE_BACKWARDS], 2);
    /* after a node lost its data too: the clock floor keeps tokens growing (issue 26) */
    w.data_lost = true;
    grant(&w.gw[0], 2, 1000);
    assert_int_equal(w.run.violations[V_FENCE_BACKWARDS], 3);
}

static void test_guard_that_forgets_is_caught(void **state)
{
    (void)state;
    grant(&w.gw[0], 9, 1000);
    w.core.now_us = 0;
    sim_check_drive(&w, &w.gw[0], 1);
    grant(&w.gw[1], 10, 1000);
    w.core.now_us = 100000;
    sim_check_drive(&w, &w.gw[1], 100);
    w.core.now_us = 200000;
    sim_check_drive(&w, &w.gw[0], 200); /* stale: the real guard refuses it */
    assert_int_equal(w.run.refused, 1);
    assert_int_equal(w.run.violations[V_FENCE_ACCEPTED_LOW], 0);
    /* A guard whose storage lost its value accepts the stale token: caught. */
    w.act[0].stored = 0;
    w.act[0].guard.loaded = false;
    w.core.now_us = 300000;
    sim_check_drive(&w, &w.gw[0], 300);
    assert_int_equal(w.run.violations[V_FENCE_ACCEPTED_LOW], 1);
}

static void test_lost_late_and_drive_after_deadline(void **state)
{
    (void)state;
    grant(&w.gw[0], 1, 500);
    sim_check_lost(&w, &w.gw[0], 500);
    assert_int_equal(w.run.violations[V_LATE_LOST], 0);
    grant(&w.gw[0], 2, 500);
    sim_check_lost(&w, &w.gw[0], 501);
    assert_int_equal(w.run.violations[V_LATE_LOST], 1);
    grant(&w.gw[0], 3, 500);
    w.gw[0].in_resume_step = true; /* paused across the deadline: first wake after it */
    sim_check_lost(&w, &w.gw[0], 900);
    assert_int_equal(w.run.violations[V_LATE_LOST], 1);
    w.gw[0].in_resume_step = false;
    grant(&w.gw[1], 4, 800);
    sim_check_drive(&w, &w.gw[1], 799);
    assert_int_equal(w.run.violations[V_DRIVE_AFTER_DEADLINE], 0);
    sim_check_drive(&w, &w.gw[1], 800);
    assert_int_equal(w.run.violations[V_DRIVE_AFTER_DEADLINE], 1);
    grant(&w.gw[2], 5, 900);
    sim_check_lost(&w, &w.gw[2], 600);
    sim_check_drive(&w, &w.gw[2], 601); /* before the deadline but after LOST */
    assert_int_equal(w.run.violations[V_DRIVE_AFTER_DEADLINE], 2);
    sim_check_lost_missing(&w, &w.gw[1], 801);
    assert_int_equal(w.run.violations[V_LATE_LOST], 2);
}

/* ---------------------------------------------------------------- lock-delay */

static void at_ms(uint64_t ms)
{
    w.core.now_us = ms * 1000u;
}

static void lose(sim_gw_t *g)
{
    sim_check_lost(&w, g, elk_sim_clock_now_ms(&g->clock));
}

static void test_grant_inside_lock_delay_is_caught(void **state)
{
    (void)state;
    w.opt.drift_ppm = 10000; /* 1 %: 5 ms of a 500 ms delay are forgiven */
    w.gw[0].lock_delay_ms = 500;
    at_ms(0);
    grant(&w.gw[0], 1, 1000);
    at_ms(1000);
    lose(&w.gw[0]); /* ended without a release: no grant before 1000 + 500 - 5 ms */
    w.core.now_us = 1494999;
    grant(&w.gw[1], 2, 2400);
    assert_int_equal(w.run.violations[V_LOCK_DELAY], 1);
    assert_non_null(strstr(w.first_violation, "lock_delay 500 ms"));
    sim_check_release(&w, &w.gw[1]); /* gw1 hands over cleanly */
    w.core.now_us = 1495000;
    grant(&w.gw[2], 3, 2400);
    assert_int_equal(w.run.violations[V_LOCK_DELAY], 1);
    for (int k = 0; k < V_KINDS; k++) {
        if (k != V_LOCK_DELAY) {
            assert_int_equal(w.run.violations[k], 0);
        }
    }
}

static void test_lock_delay_of_a_paused_holder(void **state)
{
    (void)state;
    /* A holder stopped (SIGSTOP) past its deadline has no LOST yet when the next grant
     * comes: its open hold still counts. */
    w.gw[0].lock_delay_ms = 300;
    at_ms(0);
    grant(&w.gw[0], 1, 1000);
    at_ms(1100);
    grant(&w.gw[1], 2, 2000);
    assert_int_equal(w.run.violations[V_LOCK_DELAY], 1);
    /* and the old holder itself may not come back inside its own window either */
    sim_check_release(&w, &w.gw[1]);
    w.gw[0].lost = true;
    sim_check_release(&w, &w.gw[0]); /* after LOST: not clean, the delay stands */
    at_ms(1200);
    grant(&w.gw[0], 3, 2200);
    assert_int_equal(w.run.violations[V_LOCK_DELAY], 2);
}

static void test_clean_release_resets_lock_delay(void **state)
{
    (void)state;
    w.gw[0].lock_delay_ms = 500;
    w.gw[1].lock_delay_ms = 500;
    at_ms(0);
    grant(&w.gw[0], 1, 1000);
    at_ms(600);
    sim_check_release(&w, &w.gw[0]); /* held, before the deadline */
    grant(&w.gw[1], 2, 1600);
    assert_int_equal(w.run.violations[V_LOCK_DELAY], 0);
    at_ms(1600);
    lose(&w.gw[1]);
    at_ms(1620);
    sim_check_release(&w, &w.gw[1]); /* the release after LOST does not count */
    at_ms(2000);
    grant(&w.gw[2], 3, 3000);
    assert_int_equal(w.run.violations[V_LOCK_DELAY], 1);
}

static void test_renewal_moves_the_lock_delay_window(void **state)
{
    (void)state;
    w.opt.drift_ppm = 10000;
    w.gw[0].lock_delay_ms = 200;
    at_ms(0);
    grant(&w.gw[0], 1, 1000);
    at_ms(400);
    w.gw[0].deadline = 1800;
    sim_check_renewed(&w, &w.gw[0]);
    at_ms(1800);
    lose(&w.gw[0]);
    at_ms(1900); /* past the first deadline + delay, not the renewed one's */
    grant(&w.gw[1], 2, 2900);
    assert_int_equal(w.run.violations[V_LOCK_DELAY], 1);
    sim_check_release(&w, &w.gw[1]);
    at_ms(1998); /* 1800 + 200 - 2 (1 % of the delay) */
    grant(&w.gw[2], 3, 2900);
    assert_int_equal(w.run.violations[V_LOCK_DELAY], 1);
}

static void test_lock_delay_zero_still_forbids_overlapping_leases(void **state)
{
    (void)state;
    at_ms(0);
    grant(&w.gw[0], 1, 1000);
    at_ms(999);
    grant(&w.gw[1], 2, 2000); /* gw0's lease is valid until 1000 */
    assert_int_equal(w.run.violations[V_LOCK_DELAY], 1);
    sim_check_release(&w, &w.gw[1]);
    at_ms(1000);
    grant(&w.gw[2], 3, 2000);
    assert_int_equal(w.run.violations[V_LOCK_DELAY], 1);
}

static void test_lock_delay_counts_in_the_holders_clock(void **state)
{
    (void)state;
    /* gw0's clock runs 2 % fast: its local deadline 1000 comes at true 980.393 ms. */
    elk_sim_clock_init(&w.gw[0].clock, &w.core.now_us, 0, 20000);
    at_ms(0);
    grant(&w.gw[0], 1, 1000);
    w.core.now_us = 980393;
    grant(&w.gw[1], 2, 2000);
    assert_int_equal(w.run.violations[V_LOCK_DELAY], 0);
    /* with an exact clock that grant would have been inside the lease */
    sim_check_release(&w, &w.gw[1]);
    w.core.now_us = 0; /* start over (both holds released cleanly) */
    sim_check_release(&w, &w.gw[0]);
    grant(&w.gw[2], 3, 1000);
    w.core.now_us = 980393;
    grant(&w.gw[1], 4, 2000);
    assert_int_equal(w.run.violations[V_LOCK_DELAY], 1);
}

/* ---------------------------------------------------------------- heartbeat */

static void renew(sim_gw_t *g, uint64_t t_send)
{
    g->deadline = t_send + g->span_ms;
    sim_check_renewed(&w, g);
}

/* gw0 holds from 0 with keepalive_ms 300 and span 960, and proved it alive at 200. */
static sim_gw_t *keepalive_hold(void)
{
    sim_gw_t *g = &w.gw[0];
    g->keepalive_ms = 300;
    g->span_ms = 960;
    at_ms(0);
    grant(g, 1, 960); /* the grant counts as a keepalive */
    sim_check_keepalive(&w, g, 200);
    return g;
}

static void test_renewal_after_a_missed_keepalive_is_caught(void **state)
{
    (void)state;
    sim_gw_t *g = keepalive_hold();
    renew(g, 450);
    renew(g, 500); /* exactly keepalive_ms after the last keepalive: allowed */
    assert_int_equal(w.run.violations[V_HEARTBEAT], 0);
    renew(g, 501);
    assert_int_equal(w.run.violations[V_HEARTBEAT], 1);
    assert_non_null(strstr(w.first_violation, "heartbeat"));
}

static void test_keepalive_gap_is_remembered(void **state)
{
    (void)state;
    sim_gw_t *g = keepalive_hold();
    sim_check_keepalive(&w, g, 900); /* 700 ms without one: (500, 900) was dead */
    renew(g, 600);                   /* a round sent in the gap, confirmed after 900 */
    assert_int_equal(w.run.violations[V_HEARTBEAT], 1);
    renew(g, 900);
    renew(g, 1200);
    assert_int_equal(w.run.violations[V_HEARTBEAT], 1);
    renew(g, 1201);
    assert_int_equal(w.run.violations[V_HEARTBEAT], 2);
    /* a new hold starts afresh: the grant is a keepalive and the old gap is gone */
    at_ms(5000);
    sim_check_release(&w, g);
    grant(g, 2, 5960);
    renew(g, 5300);
    assert_int_equal(w.run.violations[V_HEARTBEAT], 2);
}

static void test_no_keepalive_no_heartbeat_rule(void **state)
{
    (void)state;
    sim_gw_t *g = &w.gw[0];
    g->span_ms = 960;
    at_ms(0);
    grant(g, 1, 960);
    renew(g, 5000);
    assert_int_equal(w.run.violations[V_HEARTBEAT], 0);
}

/* fair_starved: with --fair the calm-phase wait is judged against the fair bound, (P + 1)
 * holds of H + W plus one ticket TTL for the crashed waiter; one ms over it is one
 * violation, exactly it is none, a wait begun in the fault phase counts from the calm
 * phase, and the crashed gateway, never served, is not judged at the end. */
static void test_fair_starved(void **state)
{
    (void)state;
    w.opt.fair = true;
    w.opt.resources = 1;
    w.opt.ttl_ms = 1000;
    w.calm_from = 100000000; /* 100 s */
    uint64_t bound = sim_fair_starve_bound_us(&w);
    assert_int_equal(bound, (3u + 1u) * 4920000u + 1000000u);
    w.core.now_us = 1000;
    sim_check_multi_ask(&w, &w.gw[1]); /* asks in the fault phase */
    w.core.now_us = w.calm_from;
    sim_check_multi_ask(&w, &w.gw[0]);
    sim_check_multi_ask(&w, &w.gw[2]);
    w.gw[2].crashed = true;
    w.core.now_us = w.calm_from + bound;
    fair_grant(&w.gw[1], 1); /* exactly the bound */
    assert_int_equal(w.run.violations[V_FAIR_STARVED], 0);
    w.core.now_us += 1000;
    fair_grant(&w.gw[0], 2); /* one ms over */
    assert_int_equal(w.run.violations[V_FAIR_STARVED], 1);
    w.core.now_us += 10u * bound;
    sim_check_multi_end(&w); /* gw2 crashed: not judged */
    assert_int_equal(w.run.violations[V_FAIR_STARVED], 1);
    assert_int_equal(w.run.violations[V_MULTI_STARVED], 0);
    assert_int_equal(w.run.calm_wait_max_us, bound + 1000u);
}

int main(void)
{
    return ELK_RUN_EACH(
        "tests", setup, NULL, test_overlapping_holds_are_one_violation,
        test_handover_after_stop_margin_is_fine, test_token_not_above_previous_holder,
        test_permits_exceeded, test_guard_that_forgets_is_caught,
        test_lost_late_and_drive_after_deadline, test_grant_inside_lock_delay_is_caught,
        test_lock_delay_of_a_paused_holder, test_clean_release_resets_lock_delay,
        test_renewal_moves_the_lock_delay_window,
        test_lock_delay_zero_still_forbids_overlapping_leases,
        test_lock_delay_counts_in_the_holders_clock,
        test_renewal_after_a_missed_keepalive_is_caught, test_keepalive_gap_is_remembered,
        test_no_keepalive_no_heartbeat_rule, test_multi_partial, test_multi_starved,
        test_fair_grant_past_a_live_lower_ticket, test_fair_order_exceptions, test_fair_starved);
}
