/* SPDX-License-Identifier: MIT */
/* elk/agent_client.h against a scripted fake elkd (a forked child on a Unix socket): lines
 * a real elkd sends rarely, together in one write, or not at all. The real conversation
 * is tests/agent_client/ (against elkd). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include "test_main.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elk/agent_client.h"
#include "elk/err.h"
#include "elk/port_posix.h"

/* One step of the fake: the request line it expects (NULL: none), then what it writes. */
typedef struct {
    const char *expect;
    const char *answer;
} step_t;

typedef struct {
    char dir[64];
    char path[128];
    pid_t pid;
} fake_t;

static int fake_read_line(int fd, char *line, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        char c;
        if (read(fd, &c, 1) != 1) {
            return -1;
        }
        if (c == '\n') {
            break;
        }
        line[n++] = c;
    }
    line[n] = '\0';
    return 0;
}

/* The child: accept one client, play the steps, then wait for the client to close.
 * Exits 0 when every request was the expected one. */
static void fake_serve(int srv, const step_t *steps, size_t count)
{
    char line[1024];
    size_t i;
    int c = accept(srv, NULL, NULL);
    if (c < 0) {
        _exit(10);
    }
    for (i = 0; i < count; i++) {
        if (steps[i].expect != NULL &&
            (fake_read_line(c, line, sizeof line) != 0 || strcmp(line, steps[i].expect) != 0)) {
            fprintf(stderr, "fake elkd: step %zu: expected '%s', got '%s'\n", i, steps[i].expect,
                    line);
            _exit(11);
        }
        if (steps[i].answer != NULL &&
            write(c, steps[i].answer, strlen(steps[i].answer)) !=
                (ssize_t)strlen(steps[i].answer)) {
            _exit(12);
        }
    }
    while (read(c, line, sizeof line) > 0) {
    }
    _exit(0);
}

static void fake_start(fake_t *f, const step_t *steps, size_t count)
{
    struct sockaddr_un sa;
    int srv;
    strcpy(f->dir, "/tmp/elk-agent-fake.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/elkd.sock", f->dir);
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, f->path);
    srv = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(srv >= 0);
    assert_int_equal(bind(srv, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(srv, 1), 0);
    f->pid = fork();
    assert_true(f->pid >= 0);
    if (f->pid == 0) {
        fake_serve(srv, steps, count);
    }
    close(srv);
}

/* Wait for the fake (the client has closed by now); its exit says if the script held. */
static void fake_finish(fake_t *f)
{
    int status = 0;
    assert_int_equal(waitpid(f->pid, &status, 0), f->pid);
    unlink(f->path);
    rmdir(f->dir);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_lost_in_the_same_write_as_the_grant(void **state)
{
    static char grant[256];
    step_t steps[1];
    fake_t f;
    elk_agent_t a;
    (void)state;
    snprintf(grant, sizeof grant,
             "OK ACQUIRED valve-1 7 5000 500 deadline_boottime_ms=%llu\n"
             "EVENT LOST valve-1 ELK_E_LOCK_TAKEN 500\n",
             (unsigned long long)elk_posix_now_ms() + 5000u);
    steps[0].expect = "ACQUIRE valve-1 2000ms";
    steps[0].answer = grant;
    fake_start(&f, steps, 1);
    assert_int_equal(elk_agent_connect(&a, f.path), ELK_OK);
    assert_int_equal(elk_agent_acquire(&a, "valve-1", 2000, 30000), ELK_OK);
    assert_int_equal(a.token, 7);
    assert_int_equal(a.stop_margin_ms, 500);
    /* the LOST already received wins at once, before the deadline */
    assert_int_equal(elk_agent_poll(&a, 0), ELK_E_LOCK_TAKEN);
    assert_false(a.held);
    assert_int_equal(elk_agent_remaining_ms(&a), 0);
    assert_int_equal(elk_agent_release(&a, 1000), ELK_E_NOT_HELD);
    elk_agent_close(&a);
    fake_finish(&f);
}

static void test_renewals_suspect_and_other_resources(void **state)
{
    step_t steps[3] = {
        {"ACQUIRE door 0ms", "OK ACQUIRED door 3 4000 300\n"},
        /* without deadline_boottime_ms (an older elkd): counted from the read */
        {NULL,
         "EVENT LOST valve-1 ELK_E_LOCK_LOST 500\nEVENT SUSPECT door 2000 ELK_E_FLEET_UNAVAILABLE\n"
         "EVENT RENEWED door 3 60000 300 future_key=1\n"},
        {"RELEASE door", "OK RELEASED door\n"},
    };
    fake_t f;
    elk_agent_t a;
    uint64_t before;
    (void)state;
    fake_start(&f, steps, 3);
    assert_int_equal(elk_agent_connect(&a, f.path), ELK_OK);
    before = elk_posix_now_ms();
    assert_int_equal(elk_agent_acquire(&a, "door", 0, 30000), ELK_OK);
    assert_true(a.deadline_ms >= before + 4000 && a.deadline_ms <= elk_posix_now_ms() + 4000);
    /* read until the renewal moved the deadline on (bounded; the fake sends it at once) */
    for (before = elk_posix_now_ms();
         a.deadline_ms < before + 30000 && elk_posix_now_ms() < before + 30000;) {
        assert_int_equal(elk_agent_poll(&a, 100), ELK_OK);
    }
    assert_true(a.deadline_ms >= before + 30000);
    assert_false(a.suspect); /* RENEWED after SUSPECT: held again */
    assert_true(a.held);     /* another resource's LOST is not ours */
    assert_int_equal(elk_agent_release(&a, 30000), ELK_OK);
    elk_agent_close(&a);
    fake_finish(&f);
}

static void test_overlong_line_skipped_and_err_kept(void **state)
{
    static char big[3000];
    step_t steps[2];
    fake_t f;
    elk_agent_t a;
    (void)state;
    memset(big, 'x', sizeof big - 2);
    big[sizeof big - 2] = '\n';
    big[sizeof big - 1] = '\0';
    memcpy(big, "EVENT ", 6);
    steps[0].expect = "ACQUIRE valve-1 0ms";
    steps[0].answer = big;
    steps[1].expect = NULL;
    steps[1].answer = "ERR ELK_E_FROM_THE_FUTURE a code this build does not know\n";
    fake_start(&f, steps, 2);
    assert_int_equal(elk_agent_connect(&a, f.path), ELK_OK);
    assert_int_equal(elk_agent_acquire(&a, "valve-1", 0, 30000), ELK_E_INTERNAL);
    assert_string_equal(a.message, "a code this build does not know");
    assert_false(a.held);
    elk_agent_close(&a);
    fake_finish(&f);
}

static void test_elkd_going_away_is_a_loss(void **state)
{
    step_t steps[1] = {{"ACQUIRE valve-1 0ms", "OK ACQUIRED valve-1 9 60000 500\n"}};
    fake_t f;
    elk_agent_t a;
    int rc = ELK_OK;
    uint64_t end;
    (void)state;
    fake_start(&f, steps, 1);
    assert_int_equal(elk_agent_connect(&a, f.path), ELK_OK);
    assert_int_equal(elk_agent_acquire(&a, "valve-1", 0, 30000), ELK_OK);
    kill(f.pid, SIGKILL);
    for (end = elk_posix_now_ms() + 30000; rc == ELK_OK && elk_posix_now_ms() < end;) {
        rc = elk_agent_poll(&a, 100);
    }
    assert_int_equal(rc, ELK_E_CLOSED);
    waitpid(f.pid, NULL, 0);
    unlink(f.path);
    rmdir(f.dir);
    elk_agent_close(&a);
}

static void test_names_checked_before_sending(void **state)
{
    elk_agent_t a;
    char long_name[80];
    (void)state;
    memset(&a, 0, sizeof a);
    a.fd = -1;
    memset(long_name, 'v', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    assert_int_equal(elk_agent_acquire(&a, "", 0, 0), ELK_E_NAME_INVALID);
    assert_int_equal(elk_agent_acquire(&a, "a\nRELEASE b", 0, 0), ELK_E_NAME_INVALID);
    assert_int_equal(elk_agent_acquire(&a, long_name, 0, 0), ELK_E_NAME_TOO_LONG);
    assert_int_equal(elk_agent_acquire(&a, "valve-1", 0, 0), ELK_E_CLOSED);
    assert_int_equal(
        elk_agent_connect(
            &a,
            "/tmp/" /* longer than sun_path */
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/elkd.sock"),
        ELK_E_INVALID_ARG);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    return ELK_RUN_TESTS(test_lost_in_the_same_write_as_the_grant,
                         test_renewals_suspect_and_other_resources,
                         test_overlong_line_skipped_and_err_kept, test_elkd_going_away_is_a_loss,
                         test_names_checked_before_sending);
}
