/* SPDX-License-Identifier: MIT */
/* The checker must be able to fail: each invariant is fed a history that breaks it
 * (and one that does not), without running a whole simulation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

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
        w.gw[i].lock.cfg.stop_margin_ms = 20;
    }
    return 0;
}

static void grant(sim_gw_t *g, uint64_t token, uint64_t deadline)
{
    g->token = token;
    g->deadline = deadline;
    sim_check_acquired(&w, g, token);
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
    grant(&w.gw[1], 2, 1000);
    w.core.now_us = 20000; /* exactly when gw0's actuator is safe */
    sim_check_drive(&w, &w.gw[1], 30);
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
    w.data_lost = true; /* after a node restarted empty a drop is a liveness cost */
    grant(&w.gw[0], 2, 1000);
    assert_int_equal(w.run.violations[V_FENCE_BACKWARDS], 2);
    assert_int_equal(w.run.fence_excused, 1);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_overlapping_holds_are_one_violation, setup),
        cmocka_unit_test_setup(test_handover_after_stop_margin_is_fine, setup),
        cmocka_unit_test_setup(test_token_not_above_previous_holder, setup),
        cmocka_unit_test_setup(test_guard_that_forgets_is_caught, setup),
        cmocka_unit_test_setup(test_lost_late_and_drive_after_deadline, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
