/* SPDX-License-Identifier: MIT */
/*
 * firmware/hooks.c against real processes: the --on-suspect / --on-lost hooks of
 * `elk run` see the lease in their environment, report their exit status, run one at a
 * time, and are stopped at their timeout (SIGTERM, then SIGKILL if they ignore it).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include "test_main.h"

#include "elkfw/hooks.h"

static uint64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Step and reap until the hook has ended; false if it is still there after limit_ms. */
static bool run_to_end(elkfw_hook_t *h, uint64_t limit_ms)
{
    uint64_t end = ms_now() + limit_ms;
    while (ms_now() < end) {
        uint64_t next = UINT64_MAX;
        if (elkfw_hook_reap(h)) {
            return true;
        }
        elkfw_hook_step(h, ms_now(), &next);
        poll(NULL, 0, 10);
    }
    return false;
}

static const elkfw_hook_lease_t lease = {"valve-1", 42, 1234};

static void test_hook_sees_the_lease_and_its_status_is_kept(void **state)
{
    elkfw_hook_t h;
    (void)state;
    elkfw_hook_init(&h, "lost",
                    "test \"$ELK_EVENT\" = lost && test \"$ELK_RESOURCE\" = valve-1 && "
                    "test \"$ELK_TOKEN\" = 42 && test \"$ELK_FENCE_TOKEN\" = 42 && "
                    "test \"$ELK_TIME_LEFT_MS\" = 1234 && exit 3",
                    5000);
    assert_true(elkfw_hook_start(&h, &lease, ms_now()));
    assert_true(elkfw_hook_running(&h));
    assert_true(run_to_end(&h, 10000));
    assert_false(elkfw_hook_running(&h));
    assert_true(WIFEXITED(h.last_status));
    assert_int_equal(WEXITSTATUS(h.last_status), 3); /* 3: every variable was right */
    assert_false(h.last_timed_out);
    assert_int_equal(h.runs, 1);
}

static void test_hook_runs_in_its_own_process_group(void **state)
{
    elkfw_hook_t h;
    (void)state;
    elkfw_hook_init(&h, "suspect", "sleep 5", 5000);
    assert_true(elkfw_hook_start(&h, &lease, ms_now()));
    assert_int_equal(getpgid(h.pid), h.pid);
    kill(-h.pid, SIGKILL);
    assert_true(run_to_end(&h, 10000));
}

static void test_one_run_at_a_time_and_none_without_a_command(void **state)
{
    elkfw_hook_t h, none;
    (void)state;
    elkfw_hook_init(&none, "suspect", NULL, 5000);
    assert_false(elkfw_hook_start(&none, &lease, ms_now()));
    elkfw_hook_init(&h, "suspect", "sleep 5", 5000);
    assert_true(elkfw_hook_start(&h, &lease, ms_now()));
    assert_false(elkfw_hook_start(&h, &lease, ms_now()));
    assert_int_equal(h.runs, 1);
    kill(-h.pid, SIGKILL);
    assert_true(run_to_end(&h, 10000));
    assert_true(elkfw_hook_start(&h, &lease, ms_now())); /* the next spell may run it again */
    kill(-h.pid, SIGKILL);
    assert_true(run_to_end(&h, 10000));
}

/* A "lost" hook running `setup; <it is ready>; body` is ended by signal sig once its
 * timeout is reached. The timeout is made due only after the hook said it is ready (its
 * setup done, e.g. a trap set): a signal that came while the child was still on its way to
 * the shell would test the start-up, not the timeout (under valgrind on a loaded machine a
 * 100 ms timeout ended before the shell ran, and the SIGTERM was lost on the way). */
static void check_hook_timed_out(const char *setup, const char *body, int sig)
{
    elkfw_hook_t h;
    char ready[64], cmd[256];
    snprintf(ready, sizeof ready, "/tmp/elk-test-hook-ready.%d", (int)getpid());
    unlink(ready);
    snprintf(cmd, sizeof cmd, "%s%s: > %s; %s", setup, setup[0] != '\0' ? "; " : "", ready, body);
    elkfw_hook_init(&h, "lost", cmd, 60000);
    assert_true(elkfw_hook_start(&h, &lease, ms_now()));
    uint64_t end = ms_now() + 30000;
    while (access(ready, F_OK) != 0 && ms_now() < end) {
        poll(NULL, 0, 10);
    }
    assert_int_equal(access(ready, F_OK), 0);
    unlink(ready);
    h.term_at = ms_now(); /* the timeout is reached now */
    assert_true(run_to_end(&h, 20000));
    assert_true(h.last_timed_out);
    assert_true(WIFSIGNALED(h.last_status));
    assert_int_equal(WTERMSIG(h.last_status), sig);
}

static void test_hanging_hook_gets_sigterm_at_its_timeout(void **state)
{
    (void)state;
    check_hook_timed_out("", "sleep 30", SIGTERM);
}

static void test_hook_that_ignores_sigterm_gets_sigkill(void **state)
{
    (void)state;
    check_hook_timed_out("trap '' TERM", "sleep 30; sleep 30", SIGKILL);
}

int main(void)
{
    return ELK_RUN_TESTS(
        test_hook_sees_the_lease_and_its_status_is_kept, test_hook_runs_in_its_own_process_group,
        test_one_run_at_a_time_and_none_without_a_command,
        test_hanging_hook_gets_sigterm_at_its_timeout, test_hook_that_ignores_sigterm_gets_sigkill);
}
