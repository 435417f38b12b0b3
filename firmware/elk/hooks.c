/* SPDX-License-Identifier: MIT */
/*
 * The --on-suspect / --on-lost hooks of `elk run`: see elkfw/hooks.h.
 */
#define _GNU_SOURCE
#include "elkfw/hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elkfw/say.h"

void elkfw_hook_init(elkfw_hook_t *h, const char *event, const char *cmd, uint32_t timeout_ms)
{
    memset(h, 0, sizeof *h);
    h->event = event;
    h->cmd = cmd;
    h->timeout_ms = timeout_ms;
}

/* In the child: its environment and descriptors, then the shell. Never returns. */
static void hook_exec(const elkfw_hook_t *h, const elkfw_hook_lease_t *lease, pid_t parent)
{
    char tok[32], left[32];
    sigset_t none;
    int null;
    setpgid(0, 0);
    /* A hook outlives neither its timeout nor elk: a safe-position step that elk no
     * longer watches must not go on driving. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
        _exit(127);
    }
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
    }
    /* The hook speaks on elk's stderr: elk's stdout may be the command's data. */
    dup2(STDERR_FILENO, STDOUT_FILENO);
    snprintf(tok, sizeof tok, "%" PRIu64, lease->token);
    snprintf(left, sizeof left, "%" PRIu64, lease->time_left_ms);
    setenv("ELK_EVENT", h->event, 1);
    setenv("ELK_RESOURCE", lease->resource, 1);
    setenv("ELK_TOKEN", tok, 1);
    setenv("ELK_FENCE_TOKEN", tok, 1);
    setenv("ELK_TIME_LEFT_MS", left, 1);
    execl("/bin/sh", "sh", "-c", h->cmd, (char *)NULL);
    fprintf(stderr, "elk: cannot run /bin/sh for the --on-%s hook: %s\n", h->event,
            strerror(errno));
    _exit(127);
}

bool elkfw_hook_start(elkfw_hook_t *h, const elkfw_hook_lease_t *lease, uint64_t now)
{
    pid_t parent = getpid(), pid;
    if (h->cmd == NULL) {
        return false;
    }
    if (elkfw_hook_running(h)) {
        elkfw_say("%s: the --on-%s hook from before is still running; not starting it again "
                  "(it is stopped at its --hook-timeout)",
                  lease->resource, h->event);
        return false;
    }
    fflush(NULL); /* nothing buffered in elk is written twice by the child */
    pid = fork();
    if (pid < 0) {
        elkfw_say("%s: cannot start the --on-%s hook: fork: %s", lease->resource, h->event,
                  strerror(errno));
        return false;
    }
    if (pid == 0) {
        hook_exec(h, lease, parent);
    }
    setpgid(pid, pid); /* both sides: the group exists before any signal is sent to it */
    h->pid = pid;
    h->resource = lease->resource;
    h->stage = ELKFW_HOOK_RUNNING;
    h->term_at = now + h->timeout_ms;
    h->kill_at = 0;
    h->runs++;
    return true;
}

/* Report how a run ended, with what to do about it. */
static void hook_report(const elkfw_hook_t *h, int status)
{
    if (h->last_timed_out) {
        elkfw_say("%s: the --on-%s hook did not finish within --hook-timeout (%" PRIu32
                  " ms) and was stopped (%s): make it finish sooner or raise --hook-timeout; "
                  "the actuator may not have reached its safe position",
                  h->resource, h->event, h->timeout_ms,
                  h->stage == ELKFW_HOOK_KILL_SENT ? "SIGKILL" : "SIGTERM");
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        elkfw_say("%s: the --on-%s hook exited %d: the actuator may not have reached its safe "
                  "position; try it by hand (ELK_EVENT=%s ELK_RESOURCE=%s /bin/sh -c '%s')",
                  h->resource, h->event, WEXITSTATUS(status), h->event, h->resource, h->cmd);
    } else if (WIFSIGNALED(status)) {
        elkfw_say("%s: the --on-%s hook died of signal %d: the actuator may not have reached "
                  "its safe position",
                  h->resource, h->event, WTERMSIG(status));
    }
}

bool elkfw_hook_reap(elkfw_hook_t *h)
{
    int status;
    pid_t r;
    if (!elkfw_hook_running(h)) {
        return false;
    }
    do {
        r = waitpid(h->pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
        return false;
    }
    if (r < 0) {
        status = 0; /* reaped elsewhere: nothing to report */
    }
    h->last_status = status;
    h->last_timed_out = h->stage == ELKFW_HOOK_TERM_SENT || h->stage == ELKFW_HOOK_KILL_SENT;
    hook_report(h, status);
    h->pid = 0;
    h->stage = ELKFW_HOOK_IDLE;
    return true;
}

void elkfw_hook_step(elkfw_hook_t *h, uint64_t now, uint64_t *next)
{
    uint64_t due;
    if (!elkfw_hook_running(h)) {
        return;
    }
    if (h->stage == ELKFW_HOOK_RUNNING && now >= h->term_at) {
        (void)kill(-h->pid, SIGTERM);
        h->stage = ELKFW_HOOK_TERM_SENT;
        h->kill_at = now + ELKFW_HOOK_KILL_GRACE_MS;
    }
    if (h->stage == ELKFW_HOOK_TERM_SENT && now >= h->kill_at) {
        (void)kill(-h->pid, SIGKILL);
        h->stage = ELKFW_HOOK_KILL_SENT;
    }
    /* After SIGKILL only SIGCHLD is awaited; poll now and then in case it was missed. */
    due = h->stage == ELKFW_HOOK_RUNNING   ? h->term_at
        : h->stage == ELKFW_HOOK_TERM_SENT ? h->kill_at
                                           : now + 100u;
    if (due < *next) {
        *next = due;
    }
}
