/* SPDX-License-Identifier: MIT */
/*
 * firmware/supervise.c against real processes: which groups a client may hand to elkd,
 * when a group counts as gone (zombies do not drive), and the stop sequence.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "elkfw/supervise.h"

static uint64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A child in a process group of its own that ignores SIGTERM when stubborn; returns
 * once the child is set up. */
static pid_t spawn_group(int stubborn)
{
    int ready[2];
    char b;
    assert_int_equal(pipe(ready), 0);
    pid_t p = fork();
    if (p == 0) {
        /* A failed assertion ends the test before it can kill us: die with it, and do
         * not hold ctest's output pipe open meanwhile. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        setpgid(0, 0);
        if (stubborn) {
            signal(SIGTERM, SIG_IGN);
        }
        (void)!write(ready[1], "r", 1);
        for (;;) {
            pause();
        }
    }
    assert_true(p > 0);
    setpgid(p, p);
    assert_int_equal(read(ready[0], &b, 1), 1);
    close(ready[0]);
    close(ready[1]);
    return p;
}

static void test_which_groups_a_client_may_hand_over(void **state)
{
    (void)state;
    char why[200];
    pid_t child = spawn_group(0);
    assert_true(elkfw_sup_group_allowed(child, getpid(), getuid(), why, sizeof why)); /* led by our child */
    /* A client's own group. The client is a child that leads a group of its own: qemu-user
     * fakes the reader's own /proc/PID/stat (pgrp 0), and in a PID namespace a group led from
     * outside reads as 0 too; elkd only ever reads other processes'. */
    pid_t peer = fork();
    if (peer == 0) {
        setpgid(0, 0);
        pause();
        _exit(0);
    }
    assert_true(peer > 0);
    setpgid(peer, peer);
    assert_true(elkfw_sup_group_allowed(peer, peer, getuid(), why, sizeof why));
    kill(peer, SIGKILL);
    waitpid(peer, NULL, 0);
    assert_false(elkfw_sup_group_allowed(1, getpid(), getuid(), why, sizeof why));
    assert_false(elkfw_sup_group_allowed(0, getpid(), getuid(), why, sizeof why));
    assert_false(elkfw_sup_group_allowed(child, 0, getuid(), why, sizeof why)); /* peer unknown */
    /* a group led by someone else's child: here our own child is not the peer's child */
    assert_false(elkfw_sup_group_allowed(child, getppid(), getuid(), why, sizeof why));
    assert_true(why[0] != '\0');
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
}

static void test_zombies_do_not_count(void **state)
{
    (void)state;
    pid_t child = spawn_group(0);
    assert_true(elkfw_sup_group_alive(child));
    kill(child, SIGKILL);
    /* not reaped yet: a zombie, still in the group for kill(), but it drives nothing */
    for (int i = 0; i < 500 && elkfw_sup_group_alive(child); i++) {
        usleep(2000);
    }
    assert_false(elkfw_sup_group_alive(child));
    waitpid(child, NULL, 0);
    assert_false(elkfw_sup_group_alive(child));
    assert_false(elkfw_sup_group_alive(1)); /* never "all processes" */
}

/* SIGTERM first; SIGKILL only once the stop margin is over; GONE once the group is. */
static void test_stop_sequence(void **state)
{
    (void)state;
    elkfw_sup_t sup;
    pid_t child = spawn_group(1); /* ignores SIGTERM */
    uint64_t t0 = ms_now(), next = UINT64_MAX;
    elkfw_sup_watch(&sup, child, getuid());
    assert_int_equal(elkfw_sup_step(&sup, t0, &next), ELKFW_SUP_IDLE); /* only watching */
    elkfw_sup_stop(&sup, t0, 200, true);
    assert_int_equal(sup.stage, ELKFW_SUP_TERM_SENT);
    usleep(50000);
    assert_int_equal(elkfw_sup_step(&sup, t0 + 100, &next),
                     ELKFW_SUP_STOPPING); /* stubborn: still there */
    assert_true(next <= t0 + 200);
    assert_int_equal(sup.stage, ELKFW_SUP_TERM_SENT);
    assert_int_equal(elkfw_sup_step(&sup, t0 + 200, &next), ELKFW_SUP_STOPPING);
    assert_int_equal(sup.stage, ELKFW_SUP_KILL_SENT);
    waitpid(child, NULL, 0);
    assert_int_equal(elkfw_sup_step(&sup, t0 + 210, &next), ELKFW_SUP_GONE);
    assert_int_equal(sup.stage, ELKFW_SUP_NONE);
}

/* A group that cannot be confirmed gone in time is given up on, once. */
static void test_give_up_after_the_bound(void **state)
{
    (void)state;
    elkfw_sup_t sup;
    pid_t child = spawn_group(1);
    uint64_t t0 = ms_now(), next = UINT64_MAX;
    elkfw_sup_watch(&sup, child, getuid());
    elkfw_sup_stop(&sup, t0, 100, false); /* the client sends SIGTERM itself */
    /* pretend the kernel could not take it away: stop it so SIGKILL is the only way out,
     * then ask as if the bound had passed before the group was checked again */
    sup.stage = ELKFW_SUP_KILL_SENT;
    sup.give_up_at = t0 + 100;
    kill(child, SIGSTOP);
    assert_int_equal(elkfw_sup_step(&sup, t0 + 100 + ELKFW_SUP_KILL_GRACE_MS, &next),
                     ELKFW_SUP_GIVE_UP);
    assert_int_equal(sup.stage, ELKFW_SUP_GAVE_UP);
    assert_int_equal(elkfw_sup_step(&sup, t0 + 5000, &next), ELKFW_SUP_IDLE); /* reported once */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_which_groups_a_client_may_hand_over),
        cmocka_unit_test(test_zombies_do_not_count),
        cmocka_unit_test(test_stop_sequence),
        cmocka_unit_test(test_give_up_after_the_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
