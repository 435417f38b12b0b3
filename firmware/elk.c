/*
 * elk: command-line client of elkd, and the actuator-side fencing guard.
 *
 *   elk run [--wait MS] RESOURCE -- CMD [ARGS...]   flock(1) across the fleet
 *   elk acquire [--wait MS] RESOURCE                 hold until SIGINT/SIGTERM
 *   elk release RESOURCE
 *   elk status [--json]
 *   elk guard --state FILE [TOKEN] [-- CMD...]        accept or refuse a fencing token;
 *                                                     with CMD, run it holding the guard
 *
 * Exit codes (README "Exit codes"): 0 ok; 1 other failure reported by elkd; 64 usage;
 * 65 guard refused a stale token; 66 guard storage error (unreadable, corrupt, sync
 * failed); 67 guard refused by the lease file; 68 guard busy for all of --wait;
 * 69 elkd unreachable; 73 lock not acquired (busy, timed out, fleet unavailable);
 * 75 lease lost while held, or elkd shut down (run: CMD was stopped);
 * 126/127 run: CMD could not be executed / not found; otherwise run passes on CMD's
 * exit status (128+N if it died of signal N).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elk/err.h"
#include "elk/fence.h"
#include "elk/fence_file.h"
#include "elkfw/ctl.h"
#include "elkfw/guard.h"

#ifndef ELK_VERSION
#define ELK_VERSION "0.1.0"
#endif

enum {
    EXIT_OK = 0,
    EXIT_FAIL = 1,
    EXIT_USAGE = 64,
    EXIT_STALE = 65,
    EXIT_STORAGE = 66,
    EXIT_UNREACHABLE = 69,
    EXIT_NOT_ACQUIRED = 73,
    EXIT_LOST = 75,
    EXIT_NOEXEC = 126,
    EXIT_NOTFOUND = 127
};

#define ELK_DEFAULT_SOCKET "/run/elkd.sock"
/* One whole line from elkd, the longest being the STATUS JSON answer. */
#define REPLY_BUF ELK_CTL_REPLY_MAX

static const char *sock_path;
static char reply_store[REPLY_BUF];
static elkfw_linebuf_t reply_lb;
static int conn_fd = -1;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    va_list ap;
    fputs("elk: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ------------------------------------------------------------------ connection */

static int agent_connect(void)
{
    struct sockaddr_un sa;
    int fd;
    if (strlen(sock_path) >= sizeof sa.sun_path) {
        say("socket path '%s' is too long", sock_path);
        return -1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, sock_path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        say("cannot reach elkd at %s: %s (is elkd running? use --socket or ELK_SOCKET)", sock_path,
            strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    conn_fd = fd;
    elkfw_linebuf_init(&reply_lb, reply_store, sizeof reply_store);
    return fd;
}

static int agent_send(const char *fmt, ...)
{
    char line[ELK_CTL_LINE_MAX];
    va_list ap;
    int n;
    size_t off = 0;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line) {
        say("request too long");
        return -1;
    }
    while (off < (size_t)n) {
        ssize_t w = send(conn_fd, line + off, (size_t)n - off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            say("lost the connection to elkd: %s", strerror(errno));
            return -1;
        }
        off += (size_t)w;
    }
    return 0;
}

/* Read whatever is available (blocking once unless nonblock). Returns 1 if bytes
 * arrived, 0 on EOF, -1 on error. */
static int agent_fill(void)
{
    size_t avail;
    char *sp = elkfw_linebuf_space(&reply_lb, &avail);
    ssize_t n;
    do {
        n = recv(conn_fd, sp, avail, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return -1;
    }
    if (n == 0) {
        return 0;
    }
    elkfw_linebuf_commit(&reply_lb, (size_t)n);
    return 1;
}

/* Take in whatever elkd has already written, without blocking. Returns 1 if the
 * connection is still open, 0 on EOF, -1 on error. Lines read here but not yet handled
 * stay in reply_lb: callers must go through every buffered line afterwards. */
static int agent_fill_now(void)
{
    for (;;) {
        size_t avail;
        char *sp = elkfw_linebuf_space(&reply_lb, &avail);
        ssize_t n;
        if (avail == 0) {
            return 1; /* buffer full: the caller drains it and comes back */
        }
        n = recv(conn_fd, sp, avail, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return (errno == EAGAIN || errno == EWOULDBLOCK) ? 1 : -1;
        }
        if (n == 0) {
            return 0;
        }
        elkfw_linebuf_commit(&reply_lb, (size_t)n);
    }
}

/* The lease's local deadline in CLOCK_BOOTTIME ms. elkd sends it as an absolute value
 * (same clock, same host), so the time this reply spent in the socket is not added to
 * the lease. An older elkd sends only the validity left when it wrote the line; then
 * the best we can do is count it from now. */
static uint64_t lease_deadline(const elkfw_ctl_msg_t *m, uint64_t now)
{
    uint64_t relative = now + m->deadline_ms;
    if (m->deadline_boottime_ms != 0 && m->deadline_boottime_ms < relative) {
        return m->deadline_boottime_ms;
    }
    return relative;
}

/* What the events buffered so far say about our lease. */
typedef struct lease_watch {
    const char *resource;
    uint64_t deadline;
    bool lost;             /* LOST for this resource, or SHUTDOWN, or the connection closed */
    const char *why;       /* "lease LOST", "elkd is shutting down", ... */
    uint32_t margin;       /* LOST: ms before the lease can have expired anywhere */
    bool print;            /* elk acquire: one stdout line per event */
} lease_watch_t;

/* Handle every complete line in the buffer: RENEWED moves the deadline, LOST / SHUTDOWN
 * end the lease. Lines that do not concern us are skipped. */
static void watch_lines(lease_watch_t *w)
{
    const char *line;
    size_t len;
    elkfw_ctl_msg_t m;
    int rc;
    while ((rc = elkfw_linebuf_next(&reply_lb, &line, &len)) != 0) {
        if (rc < 0 || elkfw_ctl_parse_reply(line, len, &m) != ELK_OK || m.kind != ELKFW_MSG_EVENT) {
            continue;
        }
        if (strcmp(m.word, "RENEWED") == 0 && strcmp(m.resource, w->resource) == 0) {
            if (!w->lost) {
                w->deadline = lease_deadline(&m, now_ms());
            }
            if (w->print) {
                printf("renewed %s token=%" PRIu64 " validity_ms=%" PRIu32 "\n", m.resource, m.token, m.deadline_ms);
            }
        } else if (strcmp(m.word, "LOST") == 0 && strcmp(m.resource, w->resource) == 0) {
            if (!w->lost) {
                w->lost = true;
                w->why = "lease LOST";
                w->margin = m.stop_margin_ms;
                if (w->print) {
                    printf("lost %s %s\n", m.resource, m.code);
                }
            }
        } else if (strcmp(m.word, "SHUTDOWN") == 0) {
            if (!w->lost) {
                w->lost = true;
                w->why = "elkd is shutting down";
                w->margin = 0;
                if (w->print) {
                    printf("shutdown %s\n", w->resource);
                }
            }
        }
    }
    if (w->print) {
        fflush(stdout);
    }
}

/* Next line from elkd, blocking. Returns 1 with the line, 0 on EOF, -1 on error. */
static int agent_line(const char **line, size_t *len)
{
    for (;;) {
        int rc = elkfw_linebuf_next(&reply_lb, line, len);
        if (rc == 1) {
            return 1;
        }
        if (rc < 0) {
            say("reply from elkd too long; ignored");
            continue;
        }
        rc = agent_fill();
        if (rc <= 0) {
            return rc;
        }
    }
}

static void print_err_reply(const elkfw_ctl_msg_t *m, const char *what)
{
    say("%s: %.*s [%s]", what, (int)m->text_len, m->text, m->code);
}

static int exit_for_err(const char *code)
{
    int e = elkfw_err_from_name(code);
    if (e == ELK_E_LOCK_BUSY || e == ELK_E_LOCK_TIMEOUT || e == ELK_E_FLEET_UNAVAILABLE || e == ELK_E_VALIDITY ||
        e == ELK_E_SHUTTING_DOWN || e == ELK_E_AGENT_FULL) {
        return EXIT_NOT_ACQUIRED;
    }
    if (e == ELK_E_RESOURCE_UNKNOWN || e == ELK_E_NAME_INVALID || e == ELK_E_NAME_TOO_LONG ||
        e == ELK_E_CTL_SYNTAX) {
        return EXIT_USAGE;
    }
    return EXIT_FAIL;
}

/* Wait for the answer to ACQUIRE; events that are not for us are skipped. */
static int wait_acquired(const char *resource, elkfw_ctl_msg_t *m)
{
    for (;;) {
        const char *line;
        size_t len;
        int rc = agent_line(&line, &len);
        if (rc <= 0) {
            say("elkd closed the connection before answering (is it shutting down?)");
            return EXIT_NOT_ACQUIRED;
        }
        if (elkfw_ctl_parse_reply(line, len, m) != ELK_OK) {
            say("unexpected reply from elkd: %.*s", (int)len, line);
            return EXIT_FAIL;
        }
        if (m->kind == ELKFW_MSG_ERR) {
            char what[128];
            snprintf(what, sizeof what, "cannot acquire %s", resource);
            print_err_reply(m, what);
            return exit_for_err(m->code);
        }
        if (m->kind == ELKFW_MSG_OK && strcmp(m->word, "ACQUIRED") == 0 && strcmp(m->resource, resource) == 0) {
            return EXIT_OK;
        }
        if (m->kind == ELKFW_MSG_EVENT && strcmp(m->word, "SHUTDOWN") == 0) {
            say("cannot acquire %s: elkd is shutting down", resource);
            return EXIT_NOT_ACQUIRED;
        }
    }
}

/* After RELEASE: wait (briefly) for the confirmation so the next holder is not kept waiting. */
static void release_and_wait(const char *resource)
{
    uint64_t until = now_ms() + 2000;
    if (agent_send("RELEASE %s\n", resource) != 0) {
        return;
    }
    while (now_ms() < until) {
        const char *line;
        size_t len;
        elkfw_ctl_msg_t m;
        struct pollfd p = {conn_fd, POLLIN, 0};
        int rc = elkfw_linebuf_next(&reply_lb, &line, &len);
        if (rc == 1) {
            if (elkfw_ctl_parse_reply(line, len, &m) == ELK_OK &&
                ((m.kind == ELKFW_MSG_OK && strcmp(m.word, "RELEASED") == 0) || m.kind == ELKFW_MSG_ERR)) {
                return;
            }
            continue;
        }
        if (poll(&p, 1, (int)(until - now_ms())) <= 0 || agent_fill() <= 0) {
            return;
        }
    }
}

/* ------------------------------------------------------------------ options */

static int parse_wait(const char *s, uint32_t *ms)
{
    if (!elkfw_parse_duration(s, strlen(s), ms)) {
        say("--wait takes a duration: milliseconds, or e.g. 500ms, 10s, 2m (got '%s')", s);
        return -1;
    }
    return 0;
}

static void usage_main(FILE *f)
{
    fprintf(f,
            "Usage: elk [--socket PATH] COMMAND [OPTIONS] ...\n"
            "Leases on shared actuators through elkd (the edgelock agent).\n"
            "\n"
            "Commands:\n"
            "  run [--wait MS] RESOURCE -- CMD [ARGS...]  run CMD while holding RESOURCE\n"
            "  acquire [--wait MS] RESOURCE               take RESOURCE and hold it until SIGINT/SIGTERM\n"
            "  release RESOURCE                           release RESOURCE held by this connection's owner\n"
            "  status [--json]                            leases and nodes of this agent\n"
            "  guard --state FILE [TOKEN] [-- CMD...]     actuator side: accept or refuse a fencing token;\n"
            "                                             with CMD: run CMD holding the guard\n"
            "\n"
            "  --socket PATH   elkd's control socket (default $ELK_SOCKET or " ELK_DEFAULT_SOCKET ")\n"
            "  --help          help (also after any command), --version\n"
            "\n"
            "Exit codes: 0 ok, 1 other error from elkd, 64 usage, 65 stale token (guard), 66 guard\n"
            "storage error, 67 guard: lease ended/expired/other token, 68 guard busy (--wait ran out),\n"
            "69 elkd unreachable, 73 lock not acquired, 75 lease lost / elkd stopped,\n"
            "126/127 CMD not executable / not found; run passes on CMD's own exit status.\n");
}

static void usage_run(FILE *f)
{
    fprintf(f,
            "Usage: elk run [--wait MS] RESOURCE -- CMD [ARGS...]\n"
            "Acquire RESOURCE through elkd, run CMD while the lease holds, release when CMD exits.\n"
            "CMD gets ELK_RESOURCE, ELK_FENCE_TOKEN and ELK_DEADLINE_MS (validity left at start) in its\n"
            "environment; pass ELK_FENCE_TOKEN with every actuator command (see elk guard).\n"
            "If the lease is lost, CMD (its whole process group) gets SIGTERM at once and SIGKILL when\n"
            "the resource's stop margin runs out; elk then exits 75.\n"
            "  --wait MS   wait up to MS (or 500ms, 10s, 2m) for the lease; default: try once\n"
            "Exit: CMD's status, or 73 not acquired, 75 lost, 69 elkd unreachable, 126/127 exec failed.\n");
}

static void usage_acquire(FILE *f)
{
    fprintf(f,
            "Usage: elk acquire [--wait MS] RESOURCE\n"
            "Acquire RESOURCE and hold it until this process gets SIGINT or SIGTERM (then release,\n"
            "exit 0). Prints 'acquired RESOURCE token=T validity_ms=V' and one line per event.\n"
            "Exit: 0 released, 73 not acquired, 75 lease lost or elkd stopped, 69 elkd unreachable.\n");
}

static void usage_release(FILE *f)
{
    fprintf(f,
            "Usage: elk release RESOURCE\n"
            "Ask elkd to release RESOURCE. A lease belongs to the connection that took it, so this\n"
            "succeeds only for leases of this connection; elkd answers with the holder's pid\n"
            "otherwise (stop that process to release it).\n");
}

static void usage_status(FILE *f)
{
    fprintf(f,
            "Usage: elk status [--json]\n"
            "Show each resource (state, holder, token, validity left, renewals) and each node\n"
            "(state, TLS, last round trip, failures, last error) of the local elkd.\n");
}

static void usage_guard(FILE *f)
{
    elkfw_guard_usage(f);
}

static bool want_help(int argc, char **argv)
{
    int i;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            return false;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return true;
        }
    }
    return false;
}

/* Options shared by run and acquire: [--wait MS] [--socket PATH] RESOURCE. Returns the
 * index of the first argument after RESOURCE, or -1. */
static int parse_lock_args(int argc, char **argv, uint32_t *wait_ms, const char **resource)
{
    int i;
    *wait_ms = 0;
    *resource = NULL;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--wait") == 0 || strcmp(argv[i], "-w") == 0) {
            if (i + 1 >= argc || parse_wait(argv[i + 1], wait_ms) != 0) {
                if (i + 1 >= argc) {
                    say("--wait needs a value");
                }
                return -1;
            }
            i++;
        } else if (strncmp(argv[i], "--wait=", 7) == 0) {
            if (parse_wait(argv[i] + 7, wait_ms) != 0) {
                return -1;
            }
        } else if (strcmp(argv[i], "--socket") == 0) {
            if (i + 1 >= argc) {
                say("--socket needs a path");
                return -1;
            }
            sock_path = argv[++i];
        } else if (argv[i][0] == '-' && strcmp(argv[i], "--") != 0) {
            say("unknown option '%s'", argv[i]);
            return -1;
        } else {
            *resource = argv[i];
            return i + 1;
        }
    }
    say("missing RESOURCE");
    return -1;
}

static bool resource_ok(const char *r)
{
    if (!elkfw_name_valid(r, strlen(r), ELKFW_NAME_MAX - 1)) {
        say("'%s' is not a valid resource name (letters, digits and . _ - : / @, at most %d bytes)", r,
            ELKFW_NAME_MAX - 1);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ run */

static int make_signalfd(sigset_t *old)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, old);
    return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

static int cmd_run(int argc, char **argv)
{
    uint32_t wait_ms;
    const char *resource;
    elkfw_ctl_msg_t m;
    int next = parse_lock_args(argc, argv, &wait_ms, &resource);
    int sfd, rc, status = 0;
    sigset_t old;
    pid_t child, target;
    /* A separate process group lets one signal reach everything CMD started; on a
     * terminal it would stop CMD from reading it, so interactive runs signal CMD only. */
    bool own_group = !isatty(STDIN_FILENO);
    uint64_t kill_at = 0, now;
    uint32_t stop_margin;
    bool lost = false, child_done = false, conn_open = true;
    char tokbuf[32], dlbuf[32];
    lease_watch_t w;

    if (next < 0) {
        usage_run(stderr);
        return EXIT_USAGE;
    }
    if (next >= argc || strcmp(argv[next], "--") != 0 || next + 1 >= argc) {
        say("missing '-- CMD [ARGS...]' after the resource");
        usage_run(stderr);
        return EXIT_USAGE;
    }
    if (!resource_ok(resource)) {
        return EXIT_USAGE;
    }
    sfd = make_signalfd(&old);
    if (agent_connect() < 0) {
        return EXIT_UNREACHABLE;
    }
    if (agent_send("ACQUIRE %s %" PRIu32 "\n", resource, wait_ms) != 0) {
        return EXIT_UNREACHABLE;
    }
    /* Wait for the answer, but let SIGINT/SIGTERM abandon the wait (closing the
     * connection cancels the acquire in elkd). */
    for (;;) {
        struct pollfd p[2] = {{conn_fd, POLLIN, 0}, {sfd, POLLIN, 0}};
        const char *line;
        size_t len;
        if (elkfw_linebuf_next(&reply_lb, &line, &len) == 1) {
            /* push the line back through the common parser */
            if (elkfw_ctl_parse_reply(line, len, &m) == ELK_OK) {
                if (m.kind == ELKFW_MSG_ERR) {
                    char what[128];
                    snprintf(what, sizeof what, "cannot acquire %s", resource);
                    print_err_reply(&m, what);
                    return exit_for_err(m.code);
                }
                if (m.kind == ELKFW_MSG_OK && strcmp(m.word, "ACQUIRED") == 0) {
                    break;
                }
                if (m.kind == ELKFW_MSG_EVENT && strcmp(m.word, "SHUTDOWN") == 0) {
                    say("cannot acquire %s: elkd is shutting down", resource);
                    return EXIT_NOT_ACQUIRED;
                }
            }
            continue;
        }
        if (poll(p, 2, -1) < 0 && errno != EINTR) {
            return EXIT_FAIL;
        }
        if (p[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo != SIGCHLD) {
                    say("interrupted while waiting for %s", resource);
                    return 128 + (int)si.ssi_signo;
                }
            }
        }
        if (p[0].revents) {
            rc = agent_fill();
            if (rc <= 0) {
                say("elkd closed the connection before answering");
                return EXIT_NOT_ACQUIRED;
            }
        }
    }
    memset(&w, 0, sizeof w);
    w.resource = resource;
    w.deadline = lease_deadline(&m, now_ms());
    stop_margin = m.stop_margin_ms;
    snprintf(tokbuf, sizeof tokbuf, "%" PRIu64, m.token);
    /* Whatever elkd wrote after the grant may already say the lease is gone (this process
     * may have been stopped or slow while it sat in the socket): read it all first. */
    if (agent_fill_now() <= 0) {
        w.lost = true;
        w.why = "lost the connection to elkd";
        conn_open = false;
    }
    watch_lines(&w);
    now = now_ms();
    if (w.lost || now >= w.deadline) {
        say("%s: %s before the command could start (token %" PRIu64 " is stale); not starting it", resource,
            w.lost ? w.why : "the lease deadline passed", m.token);
        if (conn_open && !w.lost) {
            release_and_wait(resource);
        }
        return EXIT_LOST;
    }
    snprintf(dlbuf, sizeof dlbuf, "%" PRIu64, w.deadline - now);

    child = fork();
    if (child < 0) {
        say("fork: %s", strerror(errno));
        release_and_wait(resource);
        return EXIT_FAIL;
    }
    if (child == 0) {
        if (own_group) {
            setpgid(0, 0); /* its own group, so SIGTERM reaches everything CMD started */
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        signal(SIGPIPE, SIG_DFL);
        setenv("ELK_RESOURCE", resource, 1);
        setenv("ELK_FENCE_TOKEN", tokbuf, 1);
        setenv("ELK_DEADLINE_MS", dlbuf, 1);
        execvp(argv[next + 1], &argv[next + 1]);
        fprintf(stderr, "elk: cannot run '%s': %s\n", argv[next + 1], strerror(errno));
        _exit(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
    }
    if (own_group) {
        setpgid(child, child);
        target = -child;
    } else {
        target = child;
    }

    while (!child_done) {
        struct pollfd p[2] = {{sfd, POLLIN, 0}, {conn_open ? conn_fd : -1, POLLIN, 0}};
        uint64_t wake = UINT64_MAX;
        int timeout;

        /* Every pass handles every buffered line, not only those that came with new bytes. */
        watch_lines(&w);
        now = now_ms();
        if (!lost && !w.lost && conn_open && now >= w.deadline) {
            /* A RENEWED may be waiting in the socket: take it in before giving up. */
            if (agent_fill_now() <= 0) {
                conn_open = false;
                w.lost = true;
                w.why = "lost the connection to elkd; the lease can no longer be trusted";
            }
            watch_lines(&w);
            now = now_ms();
        }
        if (!lost && w.lost) {
            uint32_t margin = w.margin ? w.margin : stop_margin;
            say("%s: %s; sending SIGTERM to the command (SIGKILL in %" PRIu32 " ms)", resource, w.why, margin);
            lost = true;
            kill(target, SIGTERM);
            kill_at = now + margin;
        }
        /* Belt and braces: if elkd hangs, our own copy of the deadline still stops CMD. */
        if (!lost && now >= w.deadline) {
            say("%s: lease deadline passed without word from elkd; stopping the command", resource);
            lost = true;
            kill(target, SIGTERM);
            kill_at = now + stop_margin;
        }
        if (lost && kill_at != 0 && now >= kill_at) {
            say("%s: stop margin over; killing the command", resource);
            kill(target, SIGKILL);
            kill_at = 0;
        }
        if (!lost) {
            wake = w.deadline;
        } else if (kill_at != 0) {
            wake = kill_at;
        }
        timeout = wake == UINT64_MAX ? -1 : (wake <= now ? 0 : (int)(wake - now > 60000 ? 60000 : wake - now));
        if (poll(p, 2, timeout) < 0 && errno != EINTR) {
            break;
        }
        if (p[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo == SIGCHLD) {
                    pid_t wp = waitpid(child, &status, WNOHANG);
                    if (wp == child) {
                        child_done = true;
                    }
                } else {
                    /* Pass SIGINT/SIGTERM/SIGHUP on; we release when CMD has exited. */
                    kill(target, (int)si.ssi_signo);
                }
            }
        }
        if (conn_open && p[1].revents) {
            rc = agent_fill_now();
            watch_lines(&w);
            if (rc <= 0) {
                conn_open = false;
                if (!w.lost) {
                    w.lost = true;
                    w.why = "lost the connection to elkd; the lease can no longer be trusted, stopping the command";
                }
            }
            if (w.lost && !lost) {
                uint32_t margin = w.margin ? w.margin : stop_margin;
                say("%s: %s; sending SIGTERM to the command (SIGKILL in %" PRIu32 " ms)", resource, w.why, margin);
                lost = true;
                kill(target, SIGTERM);
                kill_at = now_ms() + margin;
            }
        }
    }
    watch_lines(&w); /* a LOST that came with CMD's exit still counts */
    if (w.lost) {
        lost = true;
    }
    if (conn_open && !lost) {
        release_and_wait(resource);
    }
    if (lost) {
        return EXIT_LOST;
    }
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return EXIT_FAIL;
}

/* ------------------------------------------------------------------ acquire / release */

static int cmd_acquire(int argc, char **argv)
{
    uint32_t wait_ms;
    const char *resource;
    elkfw_ctl_msg_t m;
    int next = parse_lock_args(argc, argv, &wait_ms, &resource);
    int sfd, rc;
    lease_watch_t w;
    bool conn_open = true;
    if (next < 0) {
        usage_acquire(stderr);
        return EXIT_USAGE;
    }
    if (next != argc) {
        say("unexpected argument '%s'", argv[next]);
        return EXIT_USAGE;
    }
    if (!resource_ok(resource)) {
        return EXIT_USAGE;
    }
    sfd = make_signalfd(NULL);
    if (agent_connect() < 0) {
        return EXIT_UNREACHABLE;
    }
    if (agent_send("ACQUIRE %s %" PRIu32 "\n", resource, wait_ms) != 0) {
        return EXIT_UNREACHABLE;
    }
    rc = wait_acquired(resource, &m);
    if (rc != EXIT_OK) {
        return rc;
    }
    memset(&w, 0, sizeof w);
    w.resource = resource;
    w.deadline = lease_deadline(&m, now_ms());
    /* As in run: a LOST or SHUTDOWN already waiting behind the grant means there is no
     * lease to report. */
    if (agent_fill_now() <= 0) {
        w.lost = true;
        w.why = "lost the connection to elkd";
        conn_open = false;
    }
    watch_lines(&w);
    if (w.lost || now_ms() >= w.deadline) {
        printf("lost %s %s\n", resource, w.lost ? "before-start" : "deadline-passed");
        fflush(stdout);
        say("%s: %s right after the grant (token %" PRIu64 " is stale)", resource,
            w.lost ? w.why : "the lease deadline passed", m.token);
        if (conn_open && !w.lost) {
            release_and_wait(resource);
        }
        return EXIT_LOST;
    }
    printf("acquired %s token=%" PRIu64 " validity_ms=%" PRIu64 "\n", resource, m.token, w.deadline - now_ms());
    fflush(stdout);
    w.print = true;
    for (;;) {
        struct pollfd p[2] = {{sfd, POLLIN, 0}, {conn_fd, POLLIN, 0}};
        uint64_t now = now_ms();
        int timeout;
        watch_lines(&w);
        if (w.lost) {
            return EXIT_LOST;
        }
        if (now >= w.deadline) {
            /* elkd says LOST at the deadline; take in what it wrote (a RENEWED, or that
             * LOST) before deciding on our own. */
            if (agent_fill_now() <= 0) {
                printf("lost %s connection-closed\n", resource);
                say("%s: lost the connection to elkd; the lease is gone", resource);
                return EXIT_LOST;
            }
            watch_lines(&w);
            if (w.lost) {
                return EXIT_LOST;
            }
            now = now_ms();
            if (now >= w.deadline) {
                printf("lost %s deadline-passed\n", resource);
                fflush(stdout);
                say("%s: lease deadline passed without word from elkd; the lease is gone", resource);
                return EXIT_LOST;
            }
        }
        timeout = w.deadline - now > 60000 ? 60000 : (int)(w.deadline - now);
        if (poll(p, 2, timeout) < 0 && errno != EINTR) {
            return EXIT_FAIL;
        }
        if (p[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo != SIGCHLD) {
                    watch_lines(&w);
                    if (w.lost) {
                        return EXIT_LOST;
                    }
                    release_and_wait(resource);
                    printf("released %s\n", resource);
                    return EXIT_OK;
                }
            }
        }
        if (p[1].revents) {
            rc = agent_fill_now();
            watch_lines(&w);
            if (w.lost) {
                return EXIT_LOST;
            }
            if (rc <= 0) {
                printf("lost %s connection-closed\n", resource);
                say("%s: lost the connection to elkd; the lease is gone", resource);
                return EXIT_LOST;
            }
        }
    }
}

static int cmd_release(int argc, char **argv)
{
    const char *resource = NULL, *line;
    size_t len;
    elkfw_ctl_msg_t m;
    int i;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            sock_path = argv[++i];
        } else if (argv[i][0] == '-' || resource != NULL) {
            say("unexpected argument '%s'", argv[i]);
            usage_release(stderr);
            return EXIT_USAGE;
        } else {
            resource = argv[i];
        }
    }
    if (resource == NULL) {
        say("missing RESOURCE");
        usage_release(stderr);
        return EXIT_USAGE;
    }
    if (!resource_ok(resource)) {
        return EXIT_USAGE;
    }
    if (agent_connect() < 0) {
        return EXIT_UNREACHABLE;
    }
    if (agent_send("RELEASE %s\n", resource) != 0 || agent_line(&line, &len) <= 0) {
        return EXIT_UNREACHABLE;
    }
    if (elkfw_ctl_parse_reply(line, len, &m) != ELK_OK) {
        say("unexpected reply from elkd: %.*s", (int)len, line);
        return EXIT_FAIL;
    }
    if (m.kind == ELKFW_MSG_ERR) {
        char what[128];
        snprintf(what, sizeof what, "cannot release %s", resource);
        print_err_reply(&m, what);
        return exit_for_err(m.code);
    }
    printf("released %s\n", resource);
    return EXIT_OK;
}

/* ------------------------------------------------------------------ status */

/* Rows are at most the resources a file may configure plus the fleet; cells point into
 * the copies of the status lines kept in status_store (one STATUS answer fits in it). */
#define ST_MAX_ROWS (ELKFW_MAX_RESOURCES + CONFIG_ELK_MAX_NODES)
#define ST_MAX_COLS 12

typedef struct table {
    const char *kind;
    int rows, cols;
    const char *head[ST_MAX_COLS];
    const char *cell[ST_MAX_ROWS][ST_MAX_COLS];
} table_t;

static table_t tables[2];
static char status_store[ELK_CTL_REPLY_MAX];
static size_t status_used;

/* Keep a copy of one status line; NULL when the store is full (the row is left out). */
static char *status_keep(const char *line, size_t len)
{
    char *copy;
    if (len + 1 > sizeof status_store - status_used) {
        return NULL;
    }
    copy = status_store + status_used;
    memcpy(copy, line, len);
    copy[len] = '\0';
    status_used += len + 1;
    return copy;
}

static void table_add(table_t *t, char *line)
{
    char *save = NULL, *tok;
    int col = 0;
    if (t->rows >= ST_MAX_ROWS) {
        return;
    }
    strtok_r(line, " ", &save); /* kind */
    while ((tok = strtok_r(NULL, " ", &save)) != NULL && col < ST_MAX_COLS) {
        char *eq = strchr(tok, '=');
        if (eq == NULL) {
            continue;
        }
        *eq = '\0';
        if (t->rows == 0) {
            t->head[col] = tok;
        }
        t->cell[t->rows][col] = eq + 1;
        col++;
    }
    while (col < ST_MAX_COLS) {
        t->cell[t->rows][col++] = "";
    }
    if (t->rows == 0) {
        int c;
        for (c = 0; c < ST_MAX_COLS; c++) {
            if (t->head[c] == NULL) {
                break;
            }
        }
        t->cols = c;
    }
    t->rows++;
}

static void table_print(const table_t *t)
{
    int w[ST_MAX_COLS], r, c;
    if (t->rows == 0) {
        return;
    }
    for (c = 0; c < t->cols; c++) {
        w[c] = (int)strlen(t->head[c]);
        for (r = 0; r < t->rows; r++) {
            int l = (int)strlen(t->cell[r][c]);
            if (l > w[c]) {
                w[c] = l;
            }
        }
    }
    printf("%s:\n", t->kind);
    for (c = 0; c < t->cols; c++) {
        char up[24];
        size_t k;
        for (k = 0; k + 1 < sizeof up && t->head[c][k]; k++) {
            up[k] = (char)(t->head[c][k] >= 'a' && t->head[c][k] <= 'z' ? t->head[c][k] - 32 : t->head[c][k]);
        }
        up[k] = '\0';
        printf("  %-*s", w[c], up);
    }
    printf("\n");
    for (r = 0; r < t->rows; r++) {
        for (c = 0; c < t->cols; c++) {
            printf("  %-*s", w[c], t->cell[r][c]);
        }
        printf("\n");
    }
}

static int cmd_status(int argc, char **argv)
{
    bool json = false;
    const char *line;
    size_t len;
    elkfw_ctl_msg_t m;
    int i;
    uint32_t k;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            sock_path = argv[++i];
        } else {
            say("unexpected argument '%s'", argv[i]);
            usage_status(stderr);
            return EXIT_USAGE;
        }
    }
    if (agent_connect() < 0) {
        return EXIT_UNREACHABLE;
    }
    if (agent_send(json ? "STATUS JSON\n" : "STATUS\n") != 0 || agent_line(&line, &len) <= 0) {
        return EXIT_UNREACHABLE;
    }
    if (elkfw_ctl_parse_reply(line, len, &m) != ELK_OK || m.kind != ELKFW_MSG_OK) {
        say("unexpected reply from elkd: %.*s", (int)len, line);
        return EXIT_FAIL;
    }
    if (json) {
        printf("%.*s\n", (int)m.text_len, m.text);
        return EXIT_OK;
    }
    tables[0].kind = "RESOURCES";
    tables[1].kind = "NODES";
    for (k = 0; k < m.count; k++) {
        char *copy;
        if (agent_line(&line, &len) <= 0) {
            say("elkd closed the connection in the middle of the status");
            return EXIT_FAIL;
        }
        if (len > 6 && strncmp(line, "agent ", 6) == 0) {
            printf("%.*s\n", (int)len - 6, line + 6);
        } else if ((copy = status_keep(line, len)) == NULL) {
            continue;
        } else if (strncmp(copy, "resource ", 9) == 0) {
            table_add(&tables[0], copy);
        } else if (strncmp(copy, "node ", 5) == 0) {
            table_add(&tables[1], copy);
        }
    }
    table_print(&tables[0]);
    table_print(&tables[1]);
    return EXIT_OK;
}

/* ------------------------------------------------------------------ guard */

static int cmd_guard(int argc, char **argv)
{
    return elkfw_guard_main(argc, argv); /* firmware/guard.c */
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    int i = 1;
    const char *cmd;
    signal(SIGPIPE, SIG_IGN);
    sock_path = getenv("ELK_SOCKET") ? getenv("ELK_SOCKET") : ELK_DEFAULT_SOCKET;
    while (i < argc && argv[i][0] == '-') {
        if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            sock_path = argv[i + 1];
            i += 2;
        } else if (strncmp(argv[i], "--socket=", 9) == 0) {
            sock_path = argv[i] + 9;
            i++;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage_main(stdout);
            return EXIT_OK;
        } else if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
            printf("elk %s\n", ELK_VERSION);
            return EXIT_OK;
        } else {
            say("unknown option '%s'", argv[i]);
            usage_main(stderr);
            return EXIT_USAGE;
        }
    }
    if (i >= argc) {
        usage_main(stderr);
        return EXIT_USAGE;
    }
    cmd = argv[i];
    argc -= i;
    argv += i;
    if (strcmp(cmd, "run") == 0) {
        if (want_help(argc, argv)) {
            usage_run(stdout);
            return EXIT_OK;
        }
        return cmd_run(argc, argv);
    }
    if (strcmp(cmd, "acquire") == 0) {
        if (want_help(argc, argv)) {
            usage_acquire(stdout);
            return EXIT_OK;
        }
        return cmd_acquire(argc, argv);
    }
    if (strcmp(cmd, "release") == 0) {
        if (want_help(argc, argv)) {
            usage_release(stdout);
            return EXIT_OK;
        }
        return cmd_release(argc, argv);
    }
    if (strcmp(cmd, "status") == 0) {
        if (want_help(argc, argv)) {
            usage_status(stdout);
            return EXIT_OK;
        }
        return cmd_status(argc, argv);
    }
    if (strcmp(cmd, "guard") == 0) {
        if (want_help(argc, argv)) {
            usage_guard(stdout);
            return EXIT_OK;
        }
        return cmd_guard(argc, argv);
    }
    if (strcmp(cmd, "help") == 0) {
        usage_main(stdout);
        return EXIT_OK;
    }
    say("unknown command '%s'", cmd);
    usage_main(stderr);
    return EXIT_USAGE;
}
