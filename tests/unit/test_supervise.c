/* SPDX-License-Identifier: MIT */
/*
 * firmware/supervise.c against real processes: which groups a client may hand to elkd,
 * when a group counts as gone (zombies do not drive), and the stop sequence.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include "test_main.h"

#include "elkfw/supervise.h"

static uint64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Forks a child that runs setup(arg) (false: it exits 1), says it is ready and waits
 * for signals; returns once it said so. */
static pid_t spawn_ready(bool (*setup)(pid_t arg), pid_t arg)
{
    int ready[2];
    char b;
    assert_int_equal(pipe(ready), 0);
    pid_t p = fork();
    if (p == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        if (!setup(arg)) {
            _exit(1);
        }
        (void)!write(ready[1], "r", 1);
        for (;;) {
            pause();
        }
    }
    assert_true(p > 0);
    assert_int_equal(read(ready[0], &b, 1), 1);
    close(ready[0]);
    close(ready[1]);
    return p;
}

static bool group_child(pid_t stubborn)
{
    /* A failed assertion ends the test before it can kill us: die with it, and do not
     * hold ctest's output pipe open meanwhile (spawn_ready's /dev/null). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setpgid(0, 0);
    if (stubborn) {
        signal(SIGTERM, SIG_IGN);
    }
    return true;
}

/* A child in a process group of its own that ignores SIGTERM when stubborn; returns
 * once the child is set up. */
static pid_t spawn_group(int stubborn)
{
    pid_t p = spawn_ready(group_child, stubborn);
    setpgid(p, p); /* also done by the child: whoever runs first */
    return p;
}

static bool foreign_child(pid_t pgid)
{
    if (setpgid(0, pgid) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0) {
        return false;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* after setresuid: a change of user clears it */
    signal(SIGTERM, SIG_IGN);
    return true;
}

/* A process that joins group pgid and then runs as uid 65534 (nobody): another user's
 * member. Needs root. Returns once it is in the group under that uid. */
static pid_t spawn_foreign_member(pid_t pgid)
{
    return spawn_ready(foreign_child, pgid);
}

/* A group of our own (stubborn: it ignores SIGTERM) that sup watches; returns its leader. */
static pid_t watched(elkfw_sup_t *sup, int stubborn)
{
    pid_t child = spawn_group(stubborn);
    elkfw_sup_watch(sup, child, getuid());
    return child;
}

/* Which signal ended p? Ours (END_SIGNAL) if nothing else had killed it before. It is
 * numbered above every signal the supervisor sends: of several pending signals the kernel
 * (and qemu-user) deliver the lowest first, so a SIGTERM or SIGKILL sent earlier is what
 * the child dies of, however late it is scheduled (SIGINT lost that race under qemu). */
#define END_SIGNAL SIGPROF

static int end_and_reap(pid_t p)
{
    int st = 0;
    kill(p, SIGCONT);
    kill(p, END_SIGNAL);
    assert_int_equal(waitpid(p, &st, 0), p);
    return WIFSIGNALED(st) ? WTERMSIG(st) : -1;
}

static void test_which_groups_a_client_may_hand_over(void **state)
{
    (void)state;
    char why[200];
    pid_t child = spawn_group(0);
    assert_true(
        elkfw_sup_group_allowed(child, getpid(), getuid(), why, sizeof why)); /* led by our child */
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
    pid_t child = watched(&sup, 1); /* ignores SIGTERM */
    uint64_t t0 = ms_now(), next = UINT64_MAX;
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
    pid_t child = watched(&sup, 1);
    uint64_t t0 = ms_now(), next = UINT64_MAX;
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

/* A group with a process of another user is refused at SUPERVISE, whichever user asks
 * (root too), and a group with no live process is refused as well. */
static void test_group_of_two_users_refused(void **state)
{
    (void)state;
    char why[200];
    if (geteuid() != 0) {
        skip(); /* needs a second user */
    }
    pid_t leader = spawn_group(0);
    assert_true(elkfw_sup_group_owned(leader, 0, why, sizeof why));
    assert_true(elkfw_sup_group_allowed(leader, getpid(), 0, why, sizeof why));
    assert_false(elkfw_sup_group_owned(leader, 65534, why, sizeof why)); /* not nobody's */
    pid_t nobody = spawn_foreign_member(leader);
    assert_false(elkfw_sup_group_allowed(leader, getpid(), 0, why, sizeof why));
    assert_non_null(strstr(why, "runs as uid 65534"));
    assert_false(elkfw_sup_group_allowed(leader, getpid(), 65534, why, sizeof why));
    assert_non_null(strstr(why, "runs as uid 0"));
    assert_int_equal(end_and_reap(nobody), END_SIGNAL);
    assert_int_equal(end_and_reap(leader), END_SIGNAL);
    assert_false(elkfw_sup_group_owned(leader, 0, why, sizeof why)); /* gone */
    assert_non_null(strstr(why, "no live process"));
}

/* A process of another user joins after a valid SUPERVISE, while the stop is under way:
 * the SIGKILL that is due is sent to nobody in the group, and the stop gives up (the lease
 * is left to run out). Neither member was killed by the step. */
static void test_member_of_another_user_stops_the_escalation(void **state)
{
    (void)state;
    elkfw_sup_t sup;
    if (geteuid() != 0) {
        skip();
    }
    pid_t leader = spawn_group(1); /* ignores SIGTERM */
    uint64_t t0 = ms_now(), next = UINT64_MAX;
    elkfw_sup_watch(&sup, leader, 0);
    assert_true(elkfw_sup_stop(&sup, t0, 200, true));
    assert_int_equal(sup.stage, ELKFW_SUP_TERM_SENT);
    pid_t nobody = spawn_foreign_member(leader);
    assert_int_equal(elkfw_sup_step(&sup, t0 + 200, &next), ELKFW_SUP_GIVE_UP);
    assert_int_equal(sup.stage, ELKFW_SUP_GAVE_UP);
    assert_non_null(strstr(sup.why, "runs as uid 65534"));
    assert_int_equal(end_and_reap(nobody), END_SIGNAL);
    assert_int_equal(end_and_reap(leader), END_SIGNAL);

    /* and a SIGTERM that is due is not sent either: stop() says so */
    leader = spawn_group(0);
    nobody = spawn_foreign_member(leader);
    elkfw_sup_watch(&sup, leader, 0);
    assert_false(elkfw_sup_stop(&sup, t0, 200, true));
    assert_int_equal(sup.stage, ELKFW_SUP_GAVE_UP);
    assert_int_equal(end_and_reap(nobody), END_SIGNAL);
    assert_int_equal(end_and_reap(leader), END_SIGNAL);
}

/* The leader's number now names a process that started at another time: the group we
 * were told of was emptied and the number reused. Nothing is signalled; ours is gone. */
static void test_reused_group_number_not_signalled(void **state)
{
    (void)state;
    elkfw_sup_t sup;
    pid_t child = watched(&sup, 0);
    uint64_t t0 = ms_now(), next = UINT64_MAX;
    assert_true(sup.leader_start != 0);
    sup.leader_start += 1; /* as if the process now numbered `child` were a newer one */
    assert_true(elkfw_sup_stop(&sup, t0, 0, true));
    assert_int_equal(elkfw_sup_step(&sup, t0, &next), ELKFW_SUP_GONE);
    assert_int_equal(end_and_reap(child), END_SIGNAL); /* neither SIGTERM nor SIGKILL reached it */
}

/* The stop's signals reach the group's members (each by its own pidfd), SIGKILL too. */
static void test_stop_signals_every_member(void **state)
{
    (void)state;
    elkfw_sup_t sup;
    pid_t leader = spawn_group(0);
    uint64_t t0 = ms_now(), next = UINT64_MAX;
    elkfw_sup_watch(&sup, leader, getuid());
    assert_true(elkfw_sup_stop(&sup, t0, 100, true));
    assert_int_equal(end_and_reap(leader), SIGTERM);
    leader = spawn_group(1);
    elkfw_sup_watch(&sup, leader, getuid());
    assert_true(elkfw_sup_stop(&sup, t0, 100, true));
    assert_int_equal(elkfw_sup_step(&sup, t0 + 100, &next), ELKFW_SUP_STOPPING);
    assert_int_equal(end_and_reap(leader), SIGKILL);
}

int main(void)
{
    return ELK_RUN_TESTS(test_which_groups_a_client_may_hand_over, test_group_of_two_users_refused,
                         test_member_of_another_user_stops_the_escalation,
                         test_reused_group_number_not_signalled, test_stop_signals_every_member,
                         test_zombies_do_not_count, test_stop_sequence,
                         test_give_up_after_the_bound);
}
