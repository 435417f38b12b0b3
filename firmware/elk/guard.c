/* SPDX-License-Identifier: MIT */
/*
 * `elk guard`: check a fencing token, or check it and hold the guard while the
 * actuator's step runs (elkfw/guard.h, docs/guard.md).
 *
 * Hold mode and the death of this process: CMD inherits the locked descriptor of
 * "<state>.lock" on purpose, so the OS lock lasts until CMD (and anything it started
 * that kept the descriptor) is gone, even when `elk guard` itself is SIGKILLed: a
 * higher token can never be accepted while the step still runs. CMD also gets
 * PR_SET_PDEATHSIG(SIGKILL): a step nobody supervises any more is stopped at once
 * rather than left holding the guard (and the actuator) for good.
 *
 * Who holds it: a guard in hold mode records its token, its pid, its step's pid and since
 * when in "<state>.holder" (replaced whole, removed when the step ends); a guard that has to
 * wait, or whose --wait runs out, says who holds the guard from it. The record is for
 * people only: no decision ever reads it (the OS lock and FILE decide).
 */
#define _GNU_SOURCE
#include "elkfw/guard.h"
#include "elkfw/say.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elk/err.h"
#include "elk/fence.h"
#include "elk/fence_file.h"
#include "elkfw/cli.h"
#include "elkfw/conf.h"
#include "elkfw/lease.h"

typedef struct guard_opts {
    const char *state;
    const char *token_arg;
    const char *lease_file; /* NULL: no lease check */
    const char *wait_arg;
    uint32_t wait_ms;
    uint64_t token;
    char **cmd; /* NULL: check only */
    bool reset; /* --reset: forget the highest token accepted (a replaced actuator) */
} guard_opts_t;

void elkfw_guard_usage(FILE *f)
{
    fprintf(
        f,
        "Usage: elk guard --state FILE [--wait DURATION] [--lease-file FILE] [TOKEN] [-- CMD "
        "[ARGS...]]\n"
        "       elk guard --state FILE --reset [--lease-file FILE]\n"
        "Actuator side of fencing: accept TOKEN (default $ELK_FENCE_TOKEN) if it is not lower "
        "than\n"
        "the highest token ever accepted, which FILE keeps durably (written atomically, fsynced).\n"
        "Every decision is serialised across processes by an OS lock on FILE.lock.\n"
        "With -- CMD: check and hold. CMD runs only if TOKEN is accepted, and the guard stays "
        "held\n"
        "until CMD exits, so no other step (a newer holder waits, an older one is refused) can\n"
        "start while it runs. Drive the actuator only from inside CMD (see docs/guard.md).\n"
        "  --wait DURATION     wait at most this long (seconds, or 500ms, 10s) for a step that "
        "holds the\n"
        "                      guard; default: as long as it takes\n"
        "  --reset             forget the highest token accepted (a replaced actuator): the next\n"
        "                      token is accepted whatever its value; refused while --lease-file\n"
        "                      (or $ELK_LEASE_FILE) says a lease is current\n"
        "  --lease-file FILE   default $ELK_LEASE_FILE (set by elk run): refuse unless FILE says\n"
        "                      the lease of TOKEN is current (deadline not passed, not ended)\n"
        "Exit: 0 accepted (with CMD: CMD's own status, 128+N if it died of signal N),\n"
        "65 refused: stale token (a newer holder drove the actuator), 66 state file unreadable,\n"
        "corrupt or not syncable (refused: fail closed), 67 refused by the lease file (deadline\n"
        "passed, lease ended, other token, unreadable or malformed), 68 guard busy for all of\n"
        "--wait, 64 bad usage or token, 126/127 CMD not executable / not found.\n");
}

/* ------------------------------------------------------------------ options */

static int guard_usage_error(const char *fmt, const char *arg)
{
    fputs("elk: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nTry 'elk guard --help' for more information.\n", stderr);
    return EXIT_USAGE;
}

/* --name VALUE or --name=VALUE at argv[*i]; advances *i past VALUE. */
static bool guard_opt(int argc, char **argv, int *i, const char *name, const char **val)
{
    size_t n = strlen(name);
    if (strcmp(argv[*i], name) == 0 && *i + 1 < argc) {
        *val = argv[++*i];
        return true;
    }
    if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=') {
        *val = argv[*i] + n + 1;
        return true;
    }
    return false;
}

static int guard_parse_args(int argc, char **argv, guard_opts_t *o)
{
    int i;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            if (i + 1 >= argc) {
                return guard_usage_error("%s needs a command after it", "--");
            }
            o->cmd = argv + i + 1;
            break;
        }
        if (strcmp(argv[i], "--reset") == 0) {
            o->reset = true;
            continue;
        }
        if (guard_opt(argc, argv, &i, "--state", &o->state) ||
            guard_opt(argc, argv, &i, "--wait", &o->wait_arg) ||
            guard_opt(argc, argv, &i, "--lease-file", &o->lease_file)) {
            continue;
        }
        if (argv[i][0] == '-' || o->token_arg != NULL) {
            return guard_usage_error("unexpected argument '%s'", argv[i]);
        }
        o->token_arg = argv[i];
    }
    if (o->state == NULL) {
        return guard_usage_error("missing --state %s", "FILE");
    }
    if (o->reset && (o->cmd != NULL || o->token_arg != NULL)) {
        return guard_usage_error("--reset takes no TOKEN and no command (got '%s')",
                                 o->cmd != NULL ? o->cmd[0] : o->token_arg);
    }
    return 0;
}

static int guard_check_args(guard_opts_t *o)
{
    o->wait_ms = ELK_FENCE_FILE_WAIT_FOREVER;
    if (o->wait_arg != NULL &&
        (!elkfw_cli_duration(o->wait_arg, &o->wait_ms) ||
         o->wait_ms == ELK_FENCE_FILE_WAIT_FOREVER)) {
        return guard_usage_error("--wait takes seconds (10, 0.5) or a duration with a unit "
                                 "(500ms, 10s, 2m) (got '%s')",
                                 o->wait_arg);
    }
    if (o->lease_file == NULL) {
        o->lease_file = getenv("ELK_LEASE_FILE");
    }
    if (o->lease_file != NULL && o->lease_file[0] == '\0') {
        elkfw_say("--lease-file (or ELK_LEASE_FILE) is empty: name the lease file elk run wrote");
        return EXIT_USAGE;
    }
    if (o->reset) {
        return 0;
    }
    if (o->token_arg == NULL) {
        o->token_arg = getenv("ELK_FENCE_TOKEN");
        if (o->token_arg == NULL) {
            elkfw_say("no TOKEN given and ELK_FENCE_TOKEN is not set");
            return EXIT_USAGE;
        }
    }
    if (elk_fence_parse_token(o->token_arg, strlen(o->token_arg), &o->token) != ELK_OK) {
        elkfw_say(
            "'%s' is not a fencing token (a decimal number from 1 up; 0 means fencing is off)",
            o->token_arg);
        return EXIT_USAGE;
    }
    return 0;
}

/* ------------------------------------------------------------------ who holds the guard */

#define GUARD_HOLDER_MAX 160

static bool guard_holder_path(const char *state, const char *suffix, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s.holder%s", state, suffix);
    return n > 0 && (size_t)n < cap;
}

static uint64_t guard_realtime_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* for people reading it: never for a decision */
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* "<state>.holder" := "token=T pid=P step=S since_ms=M": written while the guard is held,
 * through a temp file and rename, so a reader never sees half a line. Best effort. */
static void guard_holder_write(const char *state, uint64_t token, pid_t step)
{
    char path[PATH_MAX], tmp[PATH_MAX], line[GUARD_HOLDER_MAX];
    int fd, n;
    if (!guard_holder_path(state, "", path, sizeof path) ||
        !guard_holder_path(state, ".tmp", tmp, sizeof tmp)) {
        return;
    }
    n = snprintf(line, sizeof line, "token=%" PRIu64 " pid=%d step=%d since_ms=%" PRIu64 "\n",
                 token, (int)getpid(), (int)step, guard_realtime_ms());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        return;
    }
    if (n > 0 && write(fd, line, (size_t)n) == (ssize_t)n && close(fd) == 0) {
        (void)rename(tmp, path);
        return;
    }
    (void)close(fd);
    (void)unlink(tmp);
}

/* The step has ended: nobody holds the guard on this record any more. */
static void guard_holder_clear(const char *state)
{
    char path[PATH_MAX];
    if (guard_holder_path(state, "", path, sizeof path)) {
        (void)unlink(path);
    }
}

/* "token T (elk guard pid P, step pid S, since HH:MM:SS.mmmZ, N ms ago)" from the record of
 * the guard's current holder, or what is known when there is none. */
static void guard_holder_describe(const char *state, char *out, size_t cap)
{
    char path[PATH_MAX], line[GUARD_HOLDER_MAX], when[16];
    unsigned long long token = 0, since = 0;
    int pid = 0, step = 0, fd;
    ssize_t got = -1;
    time_t sec;
    struct tm tm;
    uint64_t now = guard_realtime_ms();
    if (guard_holder_path(state, "", path, sizeof path) &&
        (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
        got = read(fd, line, sizeof line - 1);
        (void)close(fd);
    }
    if (got > 0) {
        line[got] = '\0';
    }
    if (got <= 0 ||
        sscanf(line, "token=%llu pid=%d step=%d since_ms=%llu", &token, &pid, &step, &since) != 4) {
        snprintf(out, cap, "a check or a step that left no record (%s.holder)", state);
        return;
    }
    sec = (time_t)(since / 1000u);
    gmtime_r(&sec, &tm);
    strftime(when, sizeof when, "%H:%M:%S", &tm);
    snprintf(out, cap,
             "token %llu (elk guard pid %d%s, step pid %d, since %s.%03lluZ, %llu ms ago)", token,
             pid, kill((pid_t)pid, 0) != 0 && errno == ESRCH ? " gone" : "", step, when,
             since % 1000u, now > since ? (unsigned long long)(now - since) : 0ull);
}

/* ------------------------------------------------------------------ decisions */

static int guard_refused(int rc, const guard_opts_t *o, const elk_fence_t *fence,
                         const elk_fence_file_t *ff)
{
    if (rc == ELK_E_FENCE_STALE) {
        elkfw_say("token %" PRIu64 " refused: lower than token %" PRIu64
                  ", which was already accepted (a newer holder has driven the actuator)",
                  o->token, elk_fence_highest(fence));
        return ELKFW_GUARD_EXIT_STALE;
    }
    if (rc == ELK_E_FENCE_BUSY) {
        char who[GUARD_HOLDER_MAX + PATH_MAX];
        guard_holder_describe(o->state, who, sizeof who);
        elkfw_say("token %" PRIu64
                  " not decided: %s: another step held the guard for all of --wait %s: %s (%s)",
                  o->token, o->state, o->wait_arg != NULL ? o->wait_arg : "", who,
                  elk_err_message(rc));
        return ELKFW_GUARD_EXIT_BUSY;
    }
    if (rc == ELK_E_FENCE_STORAGE) {
        int se = elk_fence_storage_error(fence);
        elkfw_say("token %" PRIu64 " refused: %s: %s%s%s", o->token, o->state, elk_err_message(se),
                  ff->last_errno ? ": " : "", ff->last_errno ? strerror(ff->last_errno) : "");
        return ELKFW_GUARD_EXIT_STORAGE;
    }
    elkfw_say("token %" PRIu64 " refused: %s", o->token, elk_err_message(rc));
    return EXIT_USAGE;
}

static uint64_t guard_boottime_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* 0 when the lease file says TOKEN's lease is current, else prints why and returns
 * ELKFW_GUARD_EXIT_LEASE. Read under the guard, right before the step starts. */
static int guard_lease_check(const guard_opts_t *o)
{
    char buf[ELKFW_LEASE_LINE_MAX + 1];
    uint64_t ft, dl, now;
    ssize_t got;
    elkfw_lease_verdict_t v;
    int fd = open(o->lease_file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        elkfw_say("token %" PRIu64 " refused: lease file %s: %s", o->token, o->lease_file,
                  strerror(errno));
        return ELKFW_GUARD_EXIT_LEASE;
    }
    do {
        got = read(fd, buf, sizeof buf); /* one read: the writer replaces the file whole */
    } while (got < 0 && errno == EINTR);
    close(fd);
    if (got < 0) {
        elkfw_say("token %" PRIu64 " refused: lease file %s: %s", o->token, o->lease_file,
                  strerror(errno));
        return ELKFW_GUARD_EXIT_LEASE;
    }
    now = guard_boottime_ms();
    v = elkfw_lease_judge(buf, (size_t)got, o->token, now, &ft, &dl);
    if (v == ELKFW_LEASE_OK) {
        return 0;
    }
    if (v == ELKFW_LEASE_EXPIRED) {
        elkfw_say("token %" PRIu64 " refused: %s %" PRIu64 " ms ago (%s)", o->token,
                  elkfw_lease_verdict_text(v), now - dl, o->lease_file);
    } else if (v == ELKFW_LEASE_TOKEN) {
        elkfw_say("token %" PRIu64 " refused: %s: %" PRIu64 " (%s)", o->token,
                  elkfw_lease_verdict_text(v), ft, o->lease_file);
    } else {
        elkfw_say("token %" PRIu64 " refused: %s (%s)", o->token, elkfw_lease_verdict_text(v),
                  o->lease_file);
    }
    return ELKFW_GUARD_EXIT_LEASE;
}

/* ------------------------------------------------------------------ --reset */

/* 0 when no lease file stands in the way of a reset: none given, none there, or one that
 * says its lease ended or expired. A current lease (or a file that cannot be judged) is a
 * holder that may still drive with the tokens of now: ELKFW_GUARD_EXIT_LEASE, said. */
static int guard_reset_lease(const guard_opts_t *o)
{
    char buf[ELKFW_LEASE_LINE_MAX + 1];
    uint64_t token = 0, deadline = 0, now;
    ssize_t got = -1;
    int fd = o->lease_file != NULL ? open(o->lease_file, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) {
        if (o->lease_file == NULL || errno == ENOENT) {
            return 0;
        }
        elkfw_say("reset refused: lease file %s: %s", o->lease_file, strerror(errno));
        return ELKFW_GUARD_EXIT_LEASE;
    }
    do {
        got = read(fd, buf, sizeof buf);
    } while (got < 0 && errno == EINTR);
    close(fd);
    if (got < 0 || !elkfw_lease_parse(buf, (size_t)got, &token, &deadline)) {
        elkfw_say("reset refused: lease file %s cannot be read as a lease (fail closed)",
                  o->lease_file);
        return ELKFW_GUARD_EXIT_LEASE;
    }
    now = guard_boottime_ms();
    if (deadline != 0 && now < deadline) {
        elkfw_say("reset refused: lease file %s says the lease of token %" PRIu64
                  " is current for %" PRIu64 " ms more; stop its elk run first",
                  o->lease_file, token, deadline - now);
        return ELKFW_GUARD_EXIT_LEASE;
    }
    return 0;
}

/* --reset: a replaced actuator (or one whose own memory was reset) starts again from no
 * token, so the next holder's token is accepted whatever its value. Under the guard's
 * lock, so no step is deciding or running meanwhile. */
static int guard_reset(const guard_opts_t *o, elk_fence_file_t *ff)
{
    uint64_t had = 0;
    int rc = elk_fence_file_lock(ff);
    if (rc != ELK_OK) {
        elkfw_say("reset refused: %s: %s", o->state,
                  rc == ELK_E_FENCE_BUSY ? "a step holds the guard for all of --wait"
                                         : elk_err_message(rc));
        return rc == ELK_E_FENCE_BUSY ? ELKFW_GUARD_EXIT_BUSY : ELKFW_GUARD_EXIT_STORAGE;
    }
    rc = guard_reset_lease(o);
    if (rc == 0) {
        bool known = elk_fence_file_load(ff, &had) == ELK_OK; /* a corrupt file is reset too */
        if (unlink(o->state) != 0 && errno != ENOENT) {
            elkfw_say("reset failed: cannot remove %s: %s", o->state, strerror(errno));
            rc = ELKFW_GUARD_EXIT_STORAGE;
        } else if (known) {
            printf("reset %s: it had accepted up to token %" PRIu64
                   "; the next token is accepted whatever its value\n",
                   o->state, had);
        } else {
            printf("reset %s: its unreadable record is gone; the next token is accepted "
                   "whatever its value\n",
                   o->state);
        }
    }
    elk_fence_file_unlock(ff);
    return rc;
}

/* ------------------------------------------------------------------ hold: run CMD */

static void guard_signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGCHLD);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGQUIT);
    sigaddset(set, SIGUSR1);
    sigaddset(set, SIGUSR2);
}

static void guard_child(char **cmd, int lock_fd, pid_t parent, const sigset_t *old)
{
    char fdbuf[16];
    /* A step must not outlive its supervisor: see the top of this file. The check
     * after prctl covers a parent that died before the death signal was armed. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
        _exit(EXIT_NOEXEC);
    }
    if (fcntl(lock_fd, F_SETFD, 0) != 0) { /* keep the guard held through exec */
        _exit(EXIT_NOEXEC);
    }
    (void)snprintf(fdbuf, sizeof fdbuf, "%d", lock_fd);
    setenv("ELK_GUARD_LOCK_FD", fdbuf, 1); /* a guard inside the step must not wait for us */
    sigprocmask(SIG_SETMASK, old, NULL);
    execvp(cmd[0], cmd);
    elkfw_say("cannot run '%s': %s", cmd[0], strerror(errno));
    _exit(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

/* Forward signals to the child until it exits; returns its exit code. */
static int guard_supervise(pid_t child, const sigset_t *set)
{
    int status;
    for (;;) {
        siginfo_t si;
        pid_t w;
        int sig = sigwaitinfo(set, &si);
        if (sig < 0) {
            continue; /* EINTR: e.g. SIGSTOP/SIGCONT of elk guard itself */
        }
        if (sig != SIGCHLD) {
            (void)kill(child, sig);
            continue;
        }
        w = waitpid(child, &status, WNOHANG);
        if (w == child && (WIFEXITED(status) || WIFSIGNALED(status))) {
            break;
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int guard_run(char **cmd, int lock_fd, const guard_opts_t *o)
{
    sigset_t set, old;
    pid_t parent = getpid(), child;
    int rc;
    signal(SIGCHLD, SIG_DFL); /* an inherited SIG_IGN would reap CMD behind our back */
    guard_signal_set(&set);
    sigprocmask(SIG_BLOCK, &set, &old);
    fflush(NULL);
    child = fork();
    if (child < 0) {
        elkfw_say("cannot start '%s': fork: %s", cmd[0], strerror(errno));
        sigprocmask(SIG_SETMASK, &old, NULL);
        return EXIT_NOEXEC;
    }
    if (child == 0) {
        guard_child(cmd, lock_fd, parent, &old);
    }
    guard_holder_write(o->state, o->token, child);
    rc = guard_supervise(child, &set);
    guard_holder_clear(o->state);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* ------------------------------------------------------------------ main */

/* elk_fence_begin: a first try that does not wait; when another step holds the guard, say
 * who before waiting for it as --wait allows (the same decision, one try earlier). */
static int guard_begin(const guard_opts_t *o, elk_fence_file_t *ff, elk_fence_t *fence)
{
    char who[GUARD_HOLDER_MAX + PATH_MAX];
    int rc;
    elk_fence_file_set_wait(ff, 0);
    rc = elk_fence_begin(fence, o->token);
    if (rc != ELK_E_FENCE_BUSY || o->wait_ms == 0) {
        return rc;
    }
    guard_holder_describe(o->state, who, sizeof who);
    elkfw_say("token %" PRIu64 " waits for the guard of %s (--wait %s): held by %s", o->token,
              o->state, o->wait_arg != NULL ? o->wait_arg : "unbounded", who);
    elk_fence_file_set_wait(ff, o->wait_ms);
    return elk_fence_begin(fence, o->token);
}

/* ELK_GUARD_LOCK_FD from an enclosing `elk guard ... -- CMD`, or -1. */
static int guard_inherited_fd(void)
{
    const char *s = getenv("ELK_GUARD_LOCK_FD");
    char *end;
    long v;
    if (s == NULL || *s == '\0') {
        return -1;
    }
    v = strtol(s, &end, 10);
    return *end == '\0' && v >= 0 && v < 65536 ? (int)v : -1;
}

int elkfw_guard_main(int argc, char **argv)
{
    guard_opts_t o;
    elk_fence_file_t ff;
    elk_fence_storage_t st;
    elk_fence_t fence;
    int rc;
    memset(&o, 0, sizeof o);
    rc = guard_parse_args(argc, argv, &o);
    if (rc == 0) {
        rc = guard_check_args(&o);
    }
    if (rc != 0) {
        return rc;
    }
    if (elk_fence_file_init(&ff, o.state, &st) != ELK_OK) {
        elkfw_say("--state '%s' is not a usable path", o.state);
        return EXIT_USAGE;
    }
    elk_fence_file_set_inherited(&ff, guard_inherited_fd());
    if (o.reset) {
        elk_fence_file_set_wait(&ff, o.wait_ms);
        return guard_reset(&o, &ff);
    }
    (void)elk_fence_init(&fence, &st); /* a hint only: begin reloads under the lock */
    rc = guard_begin(&o, &ff, &fence);
    if (rc != ELK_OK) {
        return guard_refused(rc, &o, &fence, &ff);
    }
    /* The guard is held: the lease is judged now, after any wait for the lock. */
    rc = o.lease_file != NULL ? guard_lease_check(&o) : 0;
    if (rc == 0 && o.cmd != NULL) {
        rc = guard_run(o.cmd, ff.lock_fd, &o);
    }
    (void)elk_fence_end(&fence);
    return rc;
}
