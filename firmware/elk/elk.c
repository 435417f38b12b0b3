/* SPDX-License-Identifier: MIT */
/*
 * elk: command-line client of elkd, and the actuator-side fencing guard.
 *
 *   elk run [-w SECS|-n] [-E CODE] [--on-suspect/--on-lost HOOK] [--heartbeat D]
 *           RESOURCE -- CMD... | -c STRING       flock(1) across the fleet
 *   elk acquire [-w SECS|-n] [-E CODE] RESOURCE   hold until SIGINT/SIGTERM
 *   elk status [--json]
 *   elk guard --state FILE [TOKEN] [-- CMD...]        accept or refuse a fencing token;
 *                                                     with CMD, run it holding the guard
 *
 * Exit codes: one cause each, elkfw/cli.h (the enum) and firmware/elk/cli.c (elkd's refusal
 * to the code); README "Exit codes" and elk(1) list them.
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
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elk/err.h"
#include "elk/fence.h"
#include "elk/fence_file.h"
#include "elkfw/cli.h"
#include "elkfw/ctl.h"
#include "elkfw/guard.h"
#include "elkfw/heartbeat.h"
#include "elkfw/history.h"
#include "elkfw/hooks.h"
#include "elkfw/lease.h"
#include "elkfw/say.h"
#include "elkfw/suggest.h"
#include "elkfw/supervise.h"
#include "elkfw/watch.h"

#include "elk/version.h"

/* What a step of a waiting loop returns to say: no exit code yet, keep going. */
#define STEP_ON (-1)

#define ELK_DEFAULT_SOCKET "/run/elkd/elkd.sock"
/* Where the packaged configuration keeps the lease event record (events_file). */
#define ELK_DEFAULT_EVENTS_FILE "/var/lib/elkd/events"
/* One whole line from elkd, the longest being the STATUS JSON answer. */
#define REPLY_BUF ELK_CTL_REPLY_MAX

/* The connection to elkd: one per elk process, owned by main and passed down. */
typedef struct agent_link {
    const char *sock_path;
    int fd;             /* -1 until agent_connect */
    bool full;          /* elkd answered ELK_E_AGENT_FULL: every command exits EXIT_AGENT_FULL */
    int held_code;      /* exit code for "held by another holder" (elk run/acquire -E) */
    elkfw_linebuf_t lb; /* lines received, over store */
    char store[REPLY_BUF];
} agent_link_t;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------------ connection */

static int agent_connect(agent_link_t *ak)
{
    struct sockaddr_un sa;
    int fd;
    if (strlen(ak->sock_path) >= sizeof sa.sun_path) {
        elkfw_say("socket path '%s' is too long", ak->sock_path);
        return -1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, ak->sock_path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        /* Each cause has its own remedy. */
        const char *hint = e == EACCES
            ? "elkd is running but this user may not use its socket: ask for "
              "membership of the socket's group ([agent] socket_group)"
            : e == ENOENT ? "no socket there: is elkd running, and is this its socket? Name it "
                            "with --socket or ELK_SOCKET"
            : e == ECONNREFUSED ? "nobody listens there: elkd is not running (or crashed and left "
                                  "its socket behind); start it"
                                : "is elkd running? Name its socket with --socket or ELK_SOCKET";
        elkfw_say("cannot reach elkd at %s: %s; %s", ak->sock_path, strerror(e), hint);
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    ak->fd = fd;
    elkfw_linebuf_init(&ak->lb, ak->store, sizeof ak->store);
    return fd;
}

/* The connection broke while sending: elkd may have said why before closing it (agent
 * full, shutting down); print that rather than "Broken pipe". */
static void agent_say_refusal(agent_link_t *ak, const char *err)
{
    char buf[400];
    ssize_t n = recv(ak->fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    if (n > 4 && memcmp(buf, "ERR ", 4) == 0) {
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        ak->full = ak->full || strncmp(buf + 4, "ELK_E_AGENT_FULL ", 17) == 0;
        elkfw_say("elkd refused the connection: %s", buf + 4);
    } else {
        elkfw_say("lost the connection to elkd: %s", err);
    }
}

__attribute__((format(printf, 2, 3))) static int agent_send(agent_link_t *ak, const char *fmt, ...)
{
    char line[ELK_CTL_LINE_MAX];
    va_list ap;
    int n;
    size_t off = 0;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line) {
        elkfw_say("request too long");
        return -1;
    }
    while (off < (size_t)n) {
        ssize_t w = send(ak->fd, line + off, (size_t)n - off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            agent_say_refusal(ak, strerror(errno));
            return -1;
        }
        off += (size_t)w;
    }
    return 0;
}

/* Read whatever is available (blocking once unless nonblock). Returns 1 if bytes
 * arrived, 0 on EOF, -1 on error. */
static int agent_fill(agent_link_t *ak)
{
    size_t avail;
    char *sp = elkfw_linebuf_space(&ak->lb, &avail);
    ssize_t n;
    do {
        n = recv(ak->fd, sp, avail, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return -1;
    }
    if (n == 0) {
        return 0;
    }
    elkfw_linebuf_commit(&ak->lb, (size_t)n);
    return 1;
}

/* Take in whatever elkd has already written, without blocking. Returns 1 if the
 * connection is still open, 0 on EOF, -1 on error. Lines read here but not yet handled
 * stay in reply_lb: callers must go through every buffered line afterwards. */
static int agent_fill_now(agent_link_t *ak)
{
    for (;;) {
        size_t avail;
        char *sp = elkfw_linebuf_space(&ak->lb, &avail);
        ssize_t n;
        if (avail == 0) {
            return 1; /* buffer full: the caller drains it and comes back */
        }
        n = recv(ak->fd, sp, avail, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return (errno == EAGAIN || errno == EWOULDBLOCK) ? 1 : -1;
        }
        if (n == 0) {
            return 0;
        }
        elkfw_linebuf_commit(&ak->lb, (size_t)n);
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
    bool lost;       /* LOST for this resource, or SHUTDOWN, or the connection closed */
    const char *why; /* the cause of LOST, "elkd is shutting down", ... */
    char why_buf[192];
    uint32_t margin;      /* LOST: ms before the lease can have expired anywhere */
    bool print;           /* elk acquire: one stdout line per event */
    bool stopped_already; /* run: the command was already told to stop (own deadline) */
    bool suspect_new;     /* run: a SUSPECT came that the --on-suspect hook has not seen */
} lease_watch_t;

/* RENEWED: the deadline moves (unless the lease is already gone). */
static void watch_renewed(lease_watch_t *w, const elkfw_ctl_msg_t *m)
{
    if (!w->lost) {
        w->deadline = lease_deadline(m, now_ms());
    }
    if (w->print) {
        printf("renewed %s token=%" PRIu64 " validity_ms=%" PRIu32 "\n", m->resource, m->token,
               m->deadline_ms);
    }
}

/* LOST: the lease is gone, and why. */
static void watch_lost(lease_watch_t *w, const elkfw_ctl_msg_t *m)
{
    int cause;
    if (w->lost) {
        return;
    }
    /* Say what really ended it (deadline without quorum, another holder's value,
     * a cap, the fleet out of reach): the person reading the log acts on it. */
    cause = elkfw_err_from_name(m->code);
    w->lost = true;
    snprintf(w->why_buf, sizeof w->why_buf, "%s [%s]",
             cause == ELK_E_INTERNAL ? "lease lost" : elk_err_message(cause), m->code);
    w->why = w->why_buf;
    w->margin = m->stop_margin_ms;
    if (w->print) {
        printf("lost %s %s\n", m->resource, m->code);
    }
    if (w->stopped_already) {
        /* we stopped on our own copy of the deadline; now say why it came */
        elkfw_say("%s: elkd reports: %s", m->resource, w->why);
    }
}

/* RENEW_STOPPED: no more renewals; the lease runs to its deadline. */
static void watch_renew_stopped(lease_watch_t *w, const elkfw_ctl_msg_t *m)
{
    int cause = elkfw_err_from_name(m->code);
    elkfw_say("%s: %s [%s]; the lease ends at its deadline unless released first", m->resource,
              cause == ELK_E_INTERNAL ? "renewal stopped" : elk_err_message(cause), m->code);
    if (w->print) {
        printf("renew_stopped %s %s\n", m->resource, m->code);
    }
}

/* SHUTDOWN: elkd is going away, and every lease with it. */
static void watch_shutdown(lease_watch_t *w)
{
    if (!w->lost) {
        w->lost = true;
        w->why = "elkd is shutting down";
        w->margin = 0;
        if (w->print) {
            printf("shutdown %s\n", w->resource);
        }
    }
}

/* The resource an event names. SUSPECT and RECOVERED (issue 20) may reach a reply
 * parser that does not know them yet: then their fields are in the free text, the
 * resource first. */
static void event_resource(const elkfw_ctl_msg_t *m, char *out, size_t cap)
{
    size_t n = 0;
    if (m->resource[0] != '\0' || m->text == NULL) {
        snprintf(out, cap, "%s", m->resource);
        return;
    }
    while (n < m->text_len && m->text[n] != ' ') {
        n++;
    }
    snprintf(out, cap, "%.*s", (int)n, m->text);
}

/* SUSPECT: a renewal missed its quorum; the lease holds until its deadline unless a later
 * renewal recovers it. The deadline does not move. */
static void watch_suspect(lease_watch_t *w)
{
    if (w->lost) {
        return;
    }
    w->suspect_new = true;
    if (w->print) {
        printf("suspect %s validity_ms=%" PRIu64 "\n", w->resource,
               w->deadline > now_ms() ? w->deadline - now_ms() : 0);
    }
}

/* RECOVERED: a renewal after SUSPECT; the same fields as RENEWED. */
static void watch_recovered(lease_watch_t *w, const elkfw_ctl_msg_t *m)
{
    elkfw_ctl_msg_t r;
    char line[ELK_CTL_LINE_MAX];
    if (m->resource[0] == '\0' && m->text != NULL) {
        /* free text (see event_resource): read it as the RENEWED it equals */
        int n = snprintf(line, sizeof line, "EVENT RENEWED %.*s", (int)m->text_len, m->text);
        if (n < 0 || (size_t)n >= sizeof line ||
            elkfw_ctl_parse_reply(line, (size_t)n, &r) != ELK_OK) {
            return;
        }
        m = &r;
    }
    if (w->print) {
        printf("recovered %s\n", w->resource);
    }
    watch_renewed(w, m);
}

/* One event: RENEWED moves the deadline, LOST / SHUTDOWN end the lease. Events that do
 * not concern us are skipped. */
static void watch_msg(lease_watch_t *w, const elkfw_ctl_msg_t *m)
{
    char res[ELKFW_NAME_MAX];
    bool ours;
    event_resource(m, res, sizeof res);
    ours = strcmp(res, w->resource) == 0;
    if (strcmp(m->word, "RENEWED") == 0 && ours) {
        watch_renewed(w, m);
    } else if (strcmp(m->word, "SUSPECT") == 0 && ours) {
        watch_suspect(w);
    } else if (strcmp(m->word, "RECOVERED") == 0 && ours) {
        watch_recovered(w, m);
    } else if (strcmp(m->word, "LOST") == 0 && ours) {
        watch_lost(w, m);
    } else if (strcmp(m->word, "RENEW_STOPPED") == 0 && ours) {
        watch_renew_stopped(w, m);
    } else if (strcmp(m->word, "SHUTDOWN") == 0) {
        watch_shutdown(w);
    }
}

/* Handle every complete line in the buffer. */
static void watch_lines(agent_link_t *ak, lease_watch_t *w)
{
    const char *line;
    size_t len;
    elkfw_ctl_msg_t m;
    int rc;
    while ((rc = elkfw_linebuf_next(&ak->lb, &line, &len)) != 0) {
        if (rc > 0 && elkfw_ctl_parse_reply(line, len, &m) == ELK_OK && m.kind == ELKFW_MSG_EVENT) {
            watch_msg(w, &m);
        } else if (rc > 0 && m.kind == ELKFW_MSG_ERR) {
            /* only KEEPALIVE is sent while a lease is watched */
            elkfw_say("%s: elkd refused a request: %.*s [%s]", w->resource, (int)m.text_len, m.text,
                      m.code);
        }
    }
    if (w->print) {
        fflush(stdout);
    }
}

/* Next line from elkd, blocking. Returns 1 with the line, 0 on EOF, -1 on error. */
static int agent_line(agent_link_t *ak, const char **line, size_t *len)
{
    for (;;) {
        int rc = elkfw_linebuf_next(&ak->lb, line, len);
        if (rc == 1) {
            ak->full = ak->full || (*len > 21 && memcmp(*line, "ERR ELK_E_AGENT_FULL ", 21) == 0);
            return 1;
        }
        if (rc < 0) {
            elkfw_say("reply from elkd too long; ignored");
            continue;
        }
        rc = agent_fill(ak);
        if (rc <= 0) {
            return rc;
        }
    }
}

static void print_err_reply(const elkfw_ctl_msg_t *m, const char *what)
{
    elkfw_say("%s: %.*s [%s]", what, (int)m->text_len, m->text, m->code);
}

/* elkd's refusal (an ERR line in m) as elk's exit code: the table in firmware/elk/cli.c. */
static int exit_for_err(const agent_link_t *ak, const elkfw_ctl_msg_t *m)
{
    return elkfw_cli_exit_for(m->code, m->text, m->text_len, ak->held_code);
}

/* While a wait runs on a terminal: one line on stderr, rewritten every second, saying
 * who holds the resource (from STATUS over a second connection) and how long we waited. */
/* Why the wait goes on, from the resource's STATUS row (copy): into who. */
static void wait_who(char *copy, char *who, size_t cap)
{
    char holder[64], err[64], self[32];
    snprintf(self, sizeof self, "pid:%d", (int)getpid());
    (void)elkfw_watch_field(copy, "holder", holder, sizeof holder);
    (void)elkfw_watch_field(copy, "last_error", err, sizeof err);
    if (strcmp(holder, self) == 0 || strcmp(holder, "-") == 0) {
        snprintf(who, cap, "held on another gateway or the fleet is short%s%s",
                 strcmp(err, "-") != 0 ? ", last round " : "", strcmp(err, "-") != 0 ? err : "");
    } else if (strncmp(holder, "pid:", 4) == 0) {
        snprintf(who, cap, "held by pid %s on this agent", holder + 4);
    } else {
        snprintf(who, cap, "its last holder's command is being stopped (%s)", holder);
    }
}

static void wait_show(const char *sock_path, const char *resource, uint64_t waited_ms)
{
    static agent_link_t st; /* the first connection is busy waiting for the grant */
    static bool st_open;
    elkfw_ctl_msg_t m;
    const char *line;
    size_t len;
    uint32_t k;
    char who[160] = "", row[ELKFW_NAME_MAX + 16];
    if (!st_open) {
        st.sock_path = sock_path;
        st.fd = -1;
        st_open = agent_connect(&st) >= 0;
    }
    snprintf(row, sizeof row, "resource name=%s ", resource);
    if (st_open && agent_send(&st, "STATUS\n") == 0 && agent_line(&st, &line, &len) > 0 &&
        elkfw_ctl_parse_reply(line, len, &m) == ELK_OK && m.kind == ELKFW_MSG_OK) {
        for (k = 0; k < m.count && agent_line(&st, &line, &len) > 0; k++) {
            char copy[ELK_CTL_LINE_MAX];
            snprintf(copy, sizeof copy, "%.*s", (int)len, line);
            if (strncmp(copy, row, strlen(row)) == 0) {
                wait_who(copy, who, sizeof who);
            }
        }
    }
    fprintf(stderr, "\rwaiting for %s: %s, waited %" PRIu64 " s\033[K", resource,
            who[0] ? who : "?", waited_ms / 1000u);
    fflush(stderr);
}

/* Ask for the lease and wait for the answer; events that are not for us are skipped.
 * SIGINT/SIGTERM/SIGHUP on sfd abandon the wait (closing the connection cancels the
 * acquire in elkd). Returns EXIT_OK with the grant in *m, or the exit code. */
static int acquire_lease_wait(agent_link_t *ak, const char *resource, uint32_t wait_ms,
                              uint32_t keepalive_ms, int sfd, elkfw_ctl_msg_t *m, bool show);

/* keepalive_ms != 0: the lease is renewed only while KEEPALIVEs come (elk run --heartbeat). */
static int acquire_lease(agent_link_t *ak, const char *resource, uint32_t wait_ms,
                         uint32_t keepalive_ms, int sfd, elkfw_ctl_msg_t *m)
{
    bool show = wait_ms > 0 && isatty(STDERR_FILENO);
    int rc = acquire_lease_wait(ak, resource, wait_ms, keepalive_ms, sfd, m, show);
    if (show) {
        fputs("\r\033[K", stderr); /* the wait line goes; what follows starts clean */
    }
    return rc;
}

/* One line from elkd while waiting for the grant of resource: an exit code (EXIT_OK for
 * the grant, in *m), or STEP_ON for a line that does not answer us. */
static int acquire_reply(const agent_link_t *ak, const char *line, size_t len, const char *resource,
                         elkfw_ctl_msg_t *m)
{
    if (elkfw_ctl_parse_reply(line, len, m) != ELK_OK) {
        elkfw_say("unexpected reply from elkd: %.*s", (int)len, line);
        return EXIT_FAIL;
    }
    if (m->kind == ELKFW_MSG_ERR) {
        char what[128];
        snprintf(what, sizeof what, "cannot acquire %s", resource);
        print_err_reply(m, what);
        return exit_for_err(ak, m);
    }
    if (m->kind == ELKFW_MSG_OK && strcmp(m->word, "ACQUIRED") == 0 &&
        strcmp(m->resource, resource) == 0) {
        return EXIT_OK;
    }
    if (m->kind == ELKFW_MSG_EVENT && strcmp(m->word, "SHUTDOWN") == 0) {
        elkfw_say("cannot acquire %s: elkd is shutting down", resource);
        return EXIT_UNREACHABLE;
    }
    return STEP_ON;
}

/* Signals while waiting: any but SIGCHLD and SIGTTOU ends the wait (128 + the signal). */
static int acquire_signal(int sfd, const char *resource)
{
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo != SIGCHLD && si.ssi_signo != SIGTTOU) {
            elkfw_say("interrupted while waiting for %s", resource);
            return 128 + (int)si.ssi_signo;
        }
    }
    return STEP_ON;
}

static int acquire_lease_wait(agent_link_t *ak, const char *resource, uint32_t wait_ms,
                              uint32_t keepalive_ms, int sfd, elkfw_ctl_msg_t *m, bool show)
{
    uint64_t started = now_ms();
    int sent = keepalive_ms != 0 ? agent_send(ak, "ACQUIRE %s %" PRIu32 " keepalive=%" PRIu32 "\n",
                                              resource, wait_ms, keepalive_ms)
                                 : agent_send(ak, "ACQUIRE %s %" PRIu32 "\n", resource, wait_ms);
    if (sent != 0) {
        return EXIT_UNREACHABLE;
    }
    for (;;) {
        struct pollfd p[2] = {{ak->fd, POLLIN, 0}, {sfd, POLLIN, 0}};
        const char *line;
        size_t len;
        int rc;
        if (elkfw_linebuf_next(&ak->lb, &line, &len) == 1) {
            rc = acquire_reply(ak, line, len, resource, m);
            if (rc != STEP_ON) {
                return rc;
            }
            continue;
        }
        int pr = poll(p, 2, show ? 1000 - (int)((now_ms() - started) % 1000u) : -1);
        if (pr < 0 && errno != EINTR) {
            return EXIT_FAIL;
        }
        if (pr == 0) {
            wait_show(ak->sock_path, resource, now_ms() - started);
            continue;
        }
        if ((p[1].revents & POLLIN) && (rc = acquire_signal(sfd, resource)) != STEP_ON) {
            return rc;
        }
        if (p[0].revents && agent_fill(ak) <= 0) {
            elkfw_say("elkd closed the connection before answering (is it shutting down?)");
            return EXIT_UNREACHABLE;
        }
    }
}

/* After RELEASE: wait (briefly) for the confirmation so the next holder is not kept waiting. */
static void release_and_wait(agent_link_t *ak, const char *resource)
{
    uint64_t until = now_ms() + 2000;
    if (agent_send(ak, "RELEASE %s\n", resource) != 0) {
        return;
    }
    while (now_ms() < until) {
        const char *line;
        size_t len;
        elkfw_ctl_msg_t m;
        struct pollfd p = {ak->fd, POLLIN, 0};
        int rc = elkfw_linebuf_next(&ak->lb, &line, &len);
        if (rc == 1) {
            if (elkfw_ctl_parse_reply(line, len, &m) == ELK_OK &&
                ((m.kind == ELKFW_MSG_OK && strcmp(m.word, "RELEASED") == 0) ||
                 m.kind == ELKFW_MSG_ERR)) {
                return;
            }
            continue;
        }
        if (poll(&p, 1, (int)(until - now_ms())) <= 0 || agent_fill(ak) <= 0) {
            return;
        }
    }
}

/* ------------------------------------------------------------------ options */

static void usage_main(FILE *f)
{
    fprintf(
        f,
        "Usage: elk [--socket PATH] COMMAND [OPTIONS] ...\n"
        "Leases on shared actuators through elkd (the edgelock agent).\n"
        "\n"
        "Commands:\n"
        "  run [-w SECS|-n] [-E CODE] RESOURCE -- CMD [ARGS...]  run CMD while holding RESOURCE\n"
        "  run [-w SECS|-n] [-E CODE] RESOURCE -c STRING       the same, STRING run by /bin/sh\n"
        "                                             (as flock(1); hooks, heartbeat: elk run "
        "--help)\n"
        "  acquire [-w SECS|-n] [-E CODE] RESOURCE    take RESOURCE and hold it until "
        "SIGINT/SIGTERM\n"
        "  status [--json|--metrics|--watch]          leases and nodes of this agent\n"
        "  reload                                     make elkd re-read its configuration\n"
        "  guard --state FILE [TOKEN] [-- CMD...]     actuator side: accept or refuse a fencing "
        "token;\n"
        "                                             with CMD: run CMD holding the guard\n"
        "  events [--since WHEN] [--resource R] [--json]  the lease event record\n"
        "  timeline [-o OUT] RECORD...                 the records of gateways as an HTML page\n"
        "\n"
        "  --socket PATH   elkd's control socket (default $ELK_SOCKET or " ELK_DEFAULT_SOCKET ")\n"
        "  --help          help (also after any command), --version\n"
        "\n"
        "Durations on the command line: a bare number is seconds (10, 0.5), or give a unit:\n"
        "500ms, 10s, 2m, 1h.\n"
        "\n"
        "Exit codes: 0 ok, 1 other error from elkd, 64 usage, 65 stale token (guard), 66 guard\n"
        "storage error, 67 guard: lease ended/expired/other token, 68 guard busy (--wait ran "
        "out),\n"
        "69 elkd unreachable or shutting down, 73 held by another holder (or -E CODE), 74 elkd\n"
        "full, 75 lease lost / run: heartbeat missed, 76 fleet unreachable (too few servers for a\n"
        "quorum), 77 not allowed (allow_users / allow_groups), 78 configuration refused (reload),\n"
        "126/127 CMD not executable / not found; run passes on CMD's own exit status.\n");
}

static void usage_run(FILE *f)
{
    fprintf(
        f,
        "Usage: elk run [-w SECS | -n] [-E CODE] [--on-suspect HOOK] [--on-lost HOOK]\n"
        "               [--hook-timeout D] [--heartbeat D] RESOURCE -- CMD [ARGS...]\n"
        "       elk run [OPTIONS] RESOURCE -c STRING\n"
        "Acquire RESOURCE through elkd, run CMD while the lease holds, release when CMD and\n"
        "everything it started in its process group have exited.\n"
        "CMD gets ELK_RESOURCE, ELK_FENCE_TOKEN, ELK_DEADLINE_MS (validity left at start) and\n"
        "ELK_LEASE_FILE (a file rewritten after every renewal: 'elklease 1 TOKEN DEADLINE_MS', "
        "the\n"
        "deadline in CLOCK_BOOTTIME ms, 0 once lost) in its environment; pass ELK_FENCE_TOKEN "
        "with\n"
        "every actuator step (elk guard checks both token and lease file).\n"
        "CMD runs in a process group of its own, which elkd is told before CMD starts. If the "
        "lease\n"
        "is lost, the group gets SIGTERM at once and SIGKILL when the resource's stop margin runs\n"
        "out; elk then exits 75 and says why (the cause elkd reports). If elk itself dies (any\n"
        "signal, even SIGKILL) or stops reading, CMD dies with it (parent-death signal) and elkd\n"
        "stops the rest of the group before it releases the lease; if it cannot confirm the group\n"
        "gone, it lets the lease run out instead. Processes that leave the group (setsid) escape.\n"
        "  -w, --wait SECS  wait up to SECS seconds (as flock -w; or 500ms, 10s, 2m) for the\n"
        "              lease; default: try once\n"
        "  -n, --nonblock   try once, fail at once if the resource is held (the default; wins\n"
        "              over --wait, as in flock)\n"
        "  -E, --conflict-exit-code CODE  exit CODE (0..255) when the resource is held by\n"
        "              another holder; default 73\n"
        "  -c, --command STRING  run STRING with /bin/sh -c instead of CMD after '--'\n"
        "  --on-suspect HOOK  run HOOK (/bin/sh -c, own process group, output on stderr) when a\n"
        "              renewal misses its quorum while the lease still holds (SUSPECT)\n"
        "  --on-lost HOOK     run HOOK when the lease is lost (or the command is stopped for a\n"
        "              missed heartbeat), before the command gets SIGTERM: a safe-position step.\n"
        "              Hooks get ELK_EVENT (suspect|lost), ELK_RESOURCE, ELK_TOKEN and\n"
        "              ELK_TIME_LEFT_MS; the lease is not released while one runs\n"
        "  --hook-timeout D  SIGTERM to a hook still running after D (SIGKILL 1 s later);\n"
        "              default 5s. A hook that fails or times out is reported on stderr\n"
        "  --heartbeat D  CMD must write to the fd in ELK_HEARTBEAT_FD at least once every D\n"
        "              (at least 100ms); elkd renews only while it does. A missed heartbeat:\n"
        "              SIGTERM to CMD's group, SIGKILL after the stop margin (at least 1 s),\n"
        "              release, exit 75. Closing the fd is no miss by itself\n"
        "Durations: a bare number is seconds; or 500ms, 10s, 2m.\n"
        "Exit: CMD's status, or 73 held by another holder (-E), 76 fleet unreachable, 75 lost\n"
        "(or heartbeat missed), 69 elkd unreachable, 74 elkd full, 77 not allowed, 64 usage,\n"
        "126/127 exec failed.\n");
}

static void usage_acquire(FILE *f)
{
    fprintf(
        f,
        "Usage: elk acquire [-w SECS | -n] [-E CODE] RESOURCE\n"
        "Acquire RESOURCE and hold it until this process gets SIGINT or SIGTERM (then release,\n"
        "exit 0). Prints 'acquired RESOURCE token=T validity_ms=V' and one line per event.\n"
        "  -w, --wait SECS  wait up to SECS seconds (or 500ms, 10s, 2m); default: try once\n"
        "  -n, --nonblock   try once (the default; wins over --wait)\n"
        "  -E, --conflict-exit-code CODE  exit CODE when held by another holder (default 73)\n"
        "Exit: 0 released, 73 held by another holder (-E), 76 fleet unreachable, 75 lease lost,\n"
        "69 elkd unreachable or shutting down, 74 elkd full, 77 not allowed.\n");
}

static void usage_status(FILE *f)
{
    fprintf(f,
            "Usage: elk status [--json | --metrics | --watch [--count N]]\n"
            "Show each resource (state, holder, token, validity left, renewals) and each node\n"
            "(state, TLS, last round trip, failures, last error) of the local elkd.\n"
            "  --json      the same as one JSON object\n"
            "  --metrics   elkd's counters and histograms in the Prometheus text format\n"
            "  --watch     redraw every second (validity bars, holders, node round trips) until\n"
            "              Ctrl-C; plain frames when stdout is not a terminal; --count N frames\n");
}

static void usage_reload(FILE *f)
{
    fprintf(
        f,
        "Usage: elk reload\n"
        "Make elkd re-read its configuration (the same as SIGHUP) and say whether it applied it.\n"
        "Held leases go on; elkd's log tells what changed and what needs a restart.\n");
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

static bool resource_ok(const char *r)
{
    if (!elkfw_name_valid(r, strlen(r), ELKFW_NAME_MAX - 1)) {
        elkfw_say(
            "'%s' is not a valid resource name (letters, digits and . _ - : / @, at most %d bytes)",
            r, ELKFW_NAME_MAX - 1);
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
    /* tcsetpgrp from a background group (after handing the terminal to CMD) */
    sigaddset(&mask, SIGTTOU);
    sigprocmask(SIG_BLOCK, &mask, old);
    return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* The lease as the command sees it (format: elkfw/lease.h), replaced atomically (write
 * a temp file, rename) after the grant, every renewal and the loss (deadline 0). A
 * command, or `elk guard`, reads it before each step; ELK_DEADLINE_MS is only the
 * validity at start. */
typedef struct lease_file {
    char dir[256];
    char path[300];
    char tmp[300];
    bool made;
} lease_file_t;

static bool lease_file_create(lease_file_t *lf)
{
    const char *base = getenv("TMPDIR");
    if (base == NULL || base[0] == '\0') {
        base = "/tmp";
    }
    if ((size_t)snprintf(lf->dir, sizeof lf->dir, "%s/elk-run.XXXXXX", base) >= sizeof lf->dir ||
        mkdtemp(lf->dir) == NULL) {
        elkfw_say("cannot create a directory for the lease file under %s: %s (set TMPDIR)", base,
                  strerror(errno));
        return false;
    }
    snprintf(lf->path, sizeof lf->path, "%s/lease", lf->dir);
    snprintf(lf->tmp, sizeof lf->tmp, "%s/lease.tmp", lf->dir);
    lf->made = true;
    return true;
}

static bool lease_file_write(lease_file_t *lf, uint64_t token, uint64_t deadline)
{
    char line[ELKFW_LEASE_LINE_MAX];
    size_t n = elkfw_lease_format(line, sizeof line, token, deadline);
    int fd;
    bool ok;
    if (!lf->made || n == 0) {
        return false;
    }
    fd = open(lf->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return false;
    }
    ok = write(fd, line, n) == (ssize_t)n;
    ok = close(fd) == 0 && ok;
    return ok && rename(lf->tmp, lf->path) == 0;
}

static void lease_file_remove(lease_file_t *lf)
{
    if (lf->made) {
        unlink(lf->tmp);
        unlink(lf->path);
        rmdir(lf->dir);
        lf->made = false;
    }
}

typedef enum run_stage { RUN_DRIVING, RUN_TERM_SENT, RUN_KILLED } run_stage_t;

/* elk run as a small supervisor: CMD drives while the lease holds; when the lease is
 * lost (or elkd goes away, or the deadline passes without word) CMD's process group
 * gets SIGTERM, and SIGKILL once the stop margin is over. */
typedef struct run_sup {
    agent_link_t *ak;
    const char *resource;
    lease_watch_t w;
    uint64_t token;
    uint32_t stop_margin;
    int sfd;
    pid_t child; /* CMD; also its process group id */
    int go_pipe; /* write end: CMD execs once elkd supervises its group */
    int tty;     /* terminal handed to CMD's group, -1 if none */
    bool conn_open, child_done;
    int status;
    run_stage_t stage;
    uint64_t kill_at;
    lease_file_t lf;
    const char *cmd_name;             /* CMD's argv[0], for messages */
    elkfw_hook_t on_suspect, on_lost; /* --on-suspect / --on-lost */
    elkfw_hb_t hb;                    /* --heartbeat */
    int hb_fd;                        /* the pipe's read end (-1: none, or closed at EOF) */
    int hb_wfd;                       /* its write end (closed here once CMD has it) */
    int hb_cmd_fd;                    /* that fd's number in CMD: ELK_HEARTBEAT_FD */
} run_sup_t;

static void run_signal_group(run_sup_t *rs, int sig)
{
    (void)kill(-rs->child, sig);
}

/* Start a hook for this lease; time_left_ms goes to ELK_TIME_LEFT_MS. */
static void run_hook(run_sup_t *rs, elkfw_hook_t *h, uint64_t time_left_ms, uint64_t now)
{
    elkfw_hook_lease_t hl = {rs->resource, rs->token, time_left_ms};
    (void)elkfw_hook_start(h, &hl, now);
}

/* Tell CMD (the whole group) to stop; SIGKILL follows at kill_at. The --on-lost hook goes
 * first: it is the early safe-position step, and the command may take the whole margin. */
static void run_stop(run_sup_t *rs, uint64_t now, const char *why, uint32_t margin)
{
    if (rs->stage != RUN_DRIVING) {
        return;
    }
    /* Time left: what LOST says remains before another holder may get the resource; while
     * the lease still holds (heartbeat missed), its validity; 0 when nothing is known. */
    run_hook(rs, &rs->on_lost,
             rs->w.lost ? rs->w.margin : (rs->w.deadline > now ? rs->w.deadline - now : 0), now);
    elkfw_say("%s: %s; sending SIGTERM to the command (SIGKILL in %" PRIu32 " ms)", rs->resource,
              why, margin);
    rs->w.stopped_already = true;
    (void)lease_file_write(&rs->lf, rs->token, 0);
    run_signal_group(rs, SIGTERM);
    rs->stage = RUN_TERM_SENT;
    rs->kill_at = now + margin;
}

/* No heartbeat within the interval: the command is taken for hung. No more KEEPALIVEs
 * (elkd stops renewing on its own a moment later), stop it, release once it is gone. */
static void run_heartbeat_missed(run_sup_t *rs, uint64_t now)
{
    char why[256];
    uint32_t grace =
        rs->stop_margin > ELKFW_SUP_KILL_GRACE_MS ? rs->stop_margin : ELKFW_SUP_KILL_GRACE_MS;
    snprintf(why, sizeof why, "heartbeat missed: %s wrote nothing to fd %d for %" PRIu32 " ms%s",
             rs->cmd_name, rs->hb_cmd_fd, rs->hb.interval_ms,
             rs->hb.eof ? " (it closed the pipe: no heartbeat could come any more)" : "");
    run_stop(rs, now, why, grace);
}

/* The heartbeat pipe is readable: every read with data is a beat; EOF closes it (not a
 * miss by itself, but no beat can come any more). */
static void run_heartbeat_read(run_sup_t *rs, uint64_t now)
{
    char buf[256];
    ssize_t n;
    while ((n = read(rs->hb_fd, buf, sizeof buf)) > 0) {
        elkfw_hb_beat(&rs->hb, now);
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(rs->hb_fd);
        rs->hb_fd = -1;
        rs->hb.eof = true;
    }
}

/* What runs beside the lease handling: the --on-suspect hook on a new SUSPECT, the
 * KEEPALIVEs the heartbeat asks for, the hooks' timeouts. Returns the earlier of wake and
 * when it must run again. */
static uint64_t run_step_extras(run_sup_t *rs, uint64_t now, uint64_t wake)
{
    if (rs->w.suspect_new) {
        rs->w.suspect_new = false;
        if (rs->stage == RUN_DRIVING && !rs->w.lost) {
            run_hook(rs, &rs->on_suspect, rs->w.deadline > now ? rs->w.deadline - now : 0, now);
        }
    }
    if (rs->stage == RUN_DRIVING && !rs->w.lost && rs->conn_open &&
        elkfw_hb_keepalive_due(&rs->hb, now) &&
        agent_send(rs->ak, "KEEPALIVE %s\n", rs->resource) != 0) {
        rs->conn_open = false;
        rs->w.lost = true;
        rs->w.why = "lost the connection to elkd; the lease can no longer be trusted";
        wake = now; /* stop the command at once, not at the next timeout */
    }
    if (rs->stage == RUN_DRIVING && elkfw_hb_next(&rs->hb) < wake) {
        wake = elkfw_hb_next(&rs->hb);
    }
    elkfw_hook_step(&rs->on_suspect, now, &wake);
    elkfw_hook_step(&rs->on_lost, now, &wake);
    return wake;
}

/* One step by the clock and by what elkd said. Returns the next time to step. */
static uint64_t run_step(run_sup_t *rs, uint64_t now)
{
    agent_link_t *ak = rs->ak;
    uint64_t old_deadline = rs->w.deadline;
    watch_lines(ak, &rs->w);
    if (rs->stage == RUN_DRIVING && !rs->w.lost && rs->conn_open && now >= rs->w.deadline) {
        /* A RENEWED may be waiting in the socket: take it in before giving up. */
        if (agent_fill_now(ak) <= 0) {
            rs->conn_open = false;
            rs->w.lost = true;
            rs->w.why = "lost the connection to elkd; the lease can no longer be trusted";
        }
        watch_lines(ak, &rs->w);
        now = now_ms();
    }
    if (rs->w.deadline != old_deadline && !rs->w.lost) {
        (void)lease_file_write(&rs->lf, rs->token, rs->w.deadline);
    }
    if (rs->w.lost) {
        run_stop(rs, now, rs->w.why, rs->w.margin ? rs->w.margin : rs->stop_margin);
    } else if (now >= rs->w.deadline) {
        /* Belt and braces: if elkd hangs, our own copy of the deadline still stops CMD. */
        run_stop(rs, now, "lease deadline passed without word from elkd", rs->stop_margin);
    } else if (rs->stage == RUN_DRIVING && elkfw_hb_check_missed(&rs->hb, now)) {
        run_heartbeat_missed(rs, now);
    }
    if (rs->stage == RUN_TERM_SENT && now >= rs->kill_at) {
        elkfw_say("%s: stop margin over; killing the command", rs->resource);
        run_signal_group(rs, SIGKILL);
        rs->stage = RUN_KILLED;
    }
    return run_step_extras(rs, now,
                           rs->stage == RUN_DRIVING         ? rs->w.deadline
                               : rs->stage == RUN_TERM_SENT ? rs->kill_at
                                                            : UINT64_MAX);
}

static void run_on_signals(run_sup_t *rs)
{
    struct signalfd_siginfo si;
    while (read(rs->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGCHLD) {
            if (!rs->child_done && waitpid(rs->child, &rs->status, WNOHANG) == rs->child) {
                rs->child_done = true;
            }
            (void)elkfw_hook_reap(&rs->on_suspect);
            (void)elkfw_hook_reap(&rs->on_lost);
        } else if (si.ssi_signo != SIGTTOU) {
            /* Pass SIGINT/SIGTERM/SIGHUP on; we release when CMD has exited. */
            run_signal_group(rs, (int)si.ssi_signo);
        }
    }
}

/* CMD in a process group of its own, so one signal reaches everything it starts, and
 * with the kernel's parent-death signal, so it dies with elk run. It execs only once
 * the parent writes to the go pipe, i.e. once elkd knows the group and can stop it. */
static pid_t run_fork(run_sup_t *rs, char **cmd, const sigset_t *old)
{
    int go[2];
    pid_t parent = getpid(), child;
    char tokbuf[32], dlbuf[32];
    if (pipe2(go, O_CLOEXEC) != 0) {
        elkfw_say("pipe: %s", strerror(errno));
        return -1;
    }
    snprintf(tokbuf, sizeof tokbuf, "%" PRIu64, rs->token);
    snprintf(dlbuf, sizeof dlbuf, "%" PRIu64,
             rs->w.deadline > now_ms() ? rs->w.deadline - now_ms() : 0);
    child = fork();
    if (child < 0) {
        elkfw_say("fork: %s", strerror(errno));
        close(go[0]);
        close(go[1]);
        return -1;
    }
    if (child == 0) {
        char b;
        close(go[1]);
        setpgid(0, 0);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
            _exit(EXIT_LOST); /* elk run is already gone */
        }
        if (read(go[0], &b, 1) != 1) {
            _exit(EXIT_LOST); /* elk run gave up (or died) before the command could start */
        }
        sigprocmask(SIG_SETMASK, old, NULL);
        signal(SIGPIPE, SIG_DFL);
        setenv("ELK_RESOURCE", rs->resource, 1);
        setenv("ELK_FENCE_TOKEN", tokbuf, 1);
        setenv("ELK_DEADLINE_MS", dlbuf, 1);
        setenv("ELK_LEASE_FILE", rs->lf.path, 1);
        if (rs->hb_wfd >= 0) {
            /* the write end only, and only to CMD: elk's other children get neither */
            char fdbuf[16];
            close(rs->hb_fd);
            if (fcntl(rs->hb_wfd, F_SETFD, 0) != 0) {
                _exit(EXIT_NOEXEC);
            }
            snprintf(fdbuf, sizeof fdbuf, "%d", rs->hb_wfd);
            setenv("ELK_HEARTBEAT_FD", fdbuf, 1);
        }
        execvp(cmd[0], cmd);
        fprintf(stderr, "elk: cannot run '%s': %s\n", cmd[0], strerror(errno));
        _exit(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
    }
    close(go[0]);
    if (rs->hb_wfd >= 0) {
        /* only CMD's group may hold the write end: its EOF then means CMD closed it */
        rs->hb_cmd_fd = rs->hb_wfd;
        close(rs->hb_wfd);
        rs->hb_wfd = -1;
    }
    setpgid(child, child);
    rs->go_pipe = go[1];
    rs->child = child;
    /* Interactive: CMD's group takes the terminal, as a shell's job would. */
    if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp() &&
        tcsetpgrp(STDIN_FILENO, child) == 0) {
        rs->tty = STDIN_FILENO;
    }
    return child;
}

/* Next reply (OK/ERR) to a request; events on the way update the watch. Returns 1 with
 * the reply in *m, 0 if the connection closed. */
static int run_reply(run_sup_t *rs, elkfw_ctl_msg_t *m)
{
    agent_link_t *ak = rs->ak;
    for (;;) {
        const char *line;
        size_t len;
        int rc = agent_line(ak, &line, &len);
        if (rc <= 0) {
            return 0;
        }
        if (elkfw_ctl_parse_reply(line, len, m) != ELK_OK) {
            continue;
        }
        if (m->kind != ELKFW_MSG_EVENT) {
            return 1;
        }
        watch_msg(&rs->w, m);
    }
}

/* Ask elkd to supervise CMD's group, then let CMD exec. Returns 0, or elk's exit code
 * when CMD never ran: a command elkd cannot stop must not drive under a lease. */
static int run_hand_over(run_sup_t *rs)
{
    agent_link_t *ak = rs->ak;
    elkfw_ctl_msg_t m;
    if (agent_send(ak, "SUPERVISE %s %ld\n", rs->resource, (long)rs->child) != 0 ||
        run_reply(rs, &m) == 0) {
        elkfw_say("%s: lost the connection to elkd before the command could start; not starting it",
                  rs->resource);
        return rs->w.lost ? EXIT_LOST : EXIT_FAIL;
    }
    if (m.kind == ELKFW_MSG_ERR) {
        elkfw_say("%s: elkd refused to supervise the command: %.*s [%s]; not starting it",
                  rs->resource, (int)m.text_len, m.text, m.code);
        return elkfw_err_from_name(m.code) == ELK_E_SUPERVISE_DENIED ? EXIT_NOPERM : EXIT_FAIL;
    }
    if (rs->w.lost || now_ms() >= rs->w.deadline) {
        elkfw_say("%s: %s before the command could start; not starting it", rs->resource,
                  rs->w.lost ? rs->w.why : "the lease deadline passed");
        return rs->w.lost ? EXIT_LOST : EXIT_FAIL;
    }
    if (write(rs->go_pipe, "g", 1) != 1) {
        elkfw_say("%s: cannot start the command: %s", rs->resource, strerror(errno));
        return EXIT_FAIL;
    }
    close(rs->go_pipe);
    rs->go_pipe = -1;
    return 0;
}

/* CMD has exited: what it started in its group must not outlive the lease either.
 * Stop what is left (SIGTERM, SIGKILL after the stop margin) and wait for it. Returns
 * false if the group could not be confirmed gone: then the lease must not be released
 * by us; elkd, which knows the group, stops it or lets the lease run out. */
static bool run_reap_group(run_sup_t *rs)
{
    uint64_t kill_at, give_up;
    if (!elkfw_sup_group_alive(rs->child)) {
        return true;
    }
    elkfw_say("%s: the command exited but left processes in its group %ld; stopping them before "
              "releasing",
              rs->resource, (long)rs->child);
    run_signal_group(rs, SIGTERM);
    kill_at = now_ms() + rs->stop_margin;
    give_up = kill_at + ELKFW_SUP_KILL_GRACE_MS;
    while (elkfw_sup_group_alive(rs->child)) {
        uint64_t now = now_ms();
        if (now >= give_up) {
            elkfw_say(
                "%s: process group %ld is still there after SIGKILL; leaving the lease to run out",
                rs->resource, (long)rs->child);
            return false;
        }
        if (kill_at != 0 && now >= kill_at) {
            run_signal_group(rs, SIGKILL);
            kill_at = 0;
        }
        poll(NULL, 0, 10);
    }
    return true;
}

static void run_supervise(run_sup_t *rs)
{
    agent_link_t *ak = rs->ak;
    while (!rs->child_done) {
        struct pollfd p[3] = {{rs->sfd, POLLIN, 0},
                              {rs->conn_open ? ak->fd : -1, POLLIN, 0},
                              {rs->stage == RUN_DRIVING ? rs->hb_fd : -1, POLLIN, 0}};
        uint64_t now = now_ms();
        uint64_t wake = run_step(rs, now);
        int timeout = wake == UINT64_MAX
            ? -1
            : (wake <= now ? 0 : (int)(wake - now > 60000 ? 60000 : wake - now));
        if (poll(p, 3, timeout) < 0 && errno != EINTR) {
            break;
        }
        if (p[0].revents & POLLIN) {
            run_on_signals(rs);
        }
        if (p[2].revents) {
            run_heartbeat_read(rs, now_ms());
        }
        if (rs->conn_open && p[1].revents) {
            if (agent_fill_now(ak) <= 0) {
                rs->conn_open = false;
                if (!rs->w.lost) {
                    rs->w.lost = true;
                    rs->w.why = "lost the connection to elkd; the lease can no longer be trusted";
                }
            }
        }
    }
    /* A LOST that came with CMD's exit still counts (elkd may have stopped CMD for it). */
    if (rs->conn_open && agent_fill_now(ak) <= 0) {
        rs->conn_open = false;
    }
    (void)run_step(rs, now_ms());
}

/* We stopped CMD on our own copy of the deadline, a moment before elkd's LOST (same
 * deadline, same clock) could say why. CMD is gone; wait a little for that word so the
 * person reading this gets the cause, not only "deadline passed" (elkd's log has it in
 * any case). Briefly: whoever waits for this exit (a shell, a supervisor) must not be
 * kept long by an elkd that is paused. */
static void run_wait_cause(run_sup_t *rs)
{
    agent_link_t *ak = rs->ak;
    uint64_t until = now_ms() + 50u;
    while (rs->conn_open && !rs->w.lost && now_ms() < until) {
        struct pollfd p = {ak->fd, POLLIN, 0};
        if (poll(&p, 1, (int)(until - now_ms())) <= 0) {
            break;
        }
        if (agent_fill_now(ak) <= 0) {
            rs->conn_open = false;
        }
        watch_lines(ak, &rs->w);
    }
}

static int run_exit_code(const run_sup_t *rs)
{
    if (rs->w.lost || rs->stage != RUN_DRIVING) {
        return EXIT_LOST;
    }
    if (WIFEXITED(rs->status)) {
        return WEXITSTATUS(rs->status);
    }
    if (WIFSIGNALED(rs->status)) {
        return 128 + WTERMSIG(rs->status);
    }
    return EXIT_FAIL;
}

/* What the grant and the lines behind it say: is the lease still usable now? */
static bool lease_usable(agent_link_t *ak, lease_watch_t *w, const elkfw_ctl_msg_t *grant,
                         bool *conn_open)
{
    w->deadline = lease_deadline(grant, now_ms());
    /* Whatever elkd wrote after the grant may already say the lease is gone (this process
     * may have been stopped or slow while it sat in the socket): read it all first. */
    if (agent_fill_now(ak) <= 0) {
        w->lost = true;
        w->why = "lost the connection to elkd";
        *conn_open = false;
    }
    watch_lines(ak, w);
    return !w->lost && now_ms() < w->deadline;
}

/* elk run's arguments into o, and the command into *cmd: CMD after "--", or sh (filled
 * here) for -c STRING. Returns false when they are wrong (said in one line). */
static bool run_args(agent_link_t *ak, int argc, char **argv, elkfw_lock_opts_t *o, char **sh,
                     char ***cmd)
{
    int next = elkfw_cli_lock_args(argc, argv, true, ELKFW_HOOK_TIMEOUT_MS, o);
    if (next < 0) {
        return false;
    }
    ak->sock_path = o->sock_path != NULL ? o->sock_path : ak->sock_path;
    ak->held_code = o->held_code;
    if (o->command != NULL && next < argc) {
        elkfw_cli_usage_error("run",
                              "give the command either with -c STRING or after '--', not "
                              "both (got '%s' after it)",
                              argv[next]);
        return false;
    }
    if (o->command == NULL && (next >= argc || strcmp(argv[next], "--") != 0 || next + 1 >= argc)) {
        elkfw_cli_usage_error("run",
                              "missing the command: RESOURCE -- CMD [ARGS...], or RESOURCE "
                              "-c 'SHELL COMMAND'");
        return false;
    }
    if (!resource_ok(o->resource)) {
        return false;
    }
    if (o->command != NULL) {
        /* as flock -c: the string goes to the shell */
        sh[0] = (char *)"/bin/sh";
        sh[1] = (char *)"-c";
        sh[2] = (char *)o->command;
        sh[3] = NULL;
        *cmd = sh;
    } else {
        *cmd = &argv[next + 1];
    }
    return true;
}

/* Before the lease goes (released, or left to elkd) and before elk exits (its hooks die
 * with it): a hook still running may be driving the actuator to its safe position, and
 * nobody else may drive meanwhile. Wait for it, bounded by its timeout, still reading
 * elkd's events. */
static void run_wait_hooks(run_sup_t *rs)
{
    while (elkfw_hook_running(&rs->on_suspect) || elkfw_hook_running(&rs->on_lost)) {
        struct pollfd p[2] = {{rs->sfd, POLLIN, 0}, {rs->conn_open ? rs->ak->fd : -1, POLLIN, 0}};
        uint64_t now = now_ms(), wake = UINT64_MAX;
        elkfw_hook_step(&rs->on_suspect, now, &wake);
        elkfw_hook_step(&rs->on_lost, now, &wake);
        if (poll(p, 2, wake <= now ? 0 : (int)(wake - now)) < 0 && errno != EINTR) {
            return;
        }
        if (p[0].revents & POLLIN) {
            run_on_signals(rs);
        }
        if (rs->conn_open && p[1].revents) {
            rs->conn_open = agent_fill_now(rs->ak) > 0;
            watch_lines(rs->ak, &rs->w);
        }
    }
}

/* --heartbeat: the pipe CMD writes its heartbeats to. Both ends close-on-exec; CMD's
 * child side clears it on the write end only. */
static bool run_heartbeat_pipe(run_sup_t *rs)
{
    int hb[2];
    if (rs->hb.interval_ms == 0) {
        return true;
    }
    if (pipe2(hb, O_CLOEXEC) != 0 || fcntl(hb[0], F_SETFL, O_NONBLOCK) != 0) {
        elkfw_say("cannot make the heartbeat pipe: %s", strerror(errno));
        return false;
    }
    rs->hb_fd = hb[0];
    rs->hb_wfd = hb[1];
    return true;
}

/* With the lease granted: start cmd, drive it, stop it, release; elk run's exit code. */
static int run_command(run_sup_t *rs, char **cmd, const sigset_t *old)
{
    agent_link_t *ak = rs->ak;
    bool released_ok;
    int rc;
    if (!lease_file_create(&rs->lf) || !lease_file_write(&rs->lf, rs->token, rs->w.deadline) ||
        !run_heartbeat_pipe(rs) || run_fork(rs, cmd, old) < 0) {
        lease_file_remove(&rs->lf);
        release_and_wait(ak, rs->resource);
        return EXIT_FAIL;
    }
    if ((rc = run_hand_over(rs)) != 0) {
        /* CMD never ran: closing the pipe ends the child, which is gone before we release. */
        close(rs->go_pipe);
        waitpid(rs->child, NULL, 0);
        lease_file_remove(&rs->lf);
        if (rs->conn_open && !rs->w.lost) {
            release_and_wait(ak, rs->resource);
        }
        return rc;
    }
    /* CMD starts now: that counts as its first beat */
    elkfw_hb_start(&rs->hb, rs->hb.interval_ms, now_ms());
    run_supervise(rs);
    if (rs->stage != RUN_DRIVING && !rs->hb.missed) {
        run_wait_cause(rs);
    }
    if (rs->tty >= 0) {
        (void)tcsetpgrp(rs->tty, getpgrp());
    }
    released_ok = run_reap_group(rs);
    run_wait_hooks(rs);
    lease_file_remove(&rs->lf);
    /* After a missed heartbeat the lease is still ours: CMD is gone, so give it back at once
     * rather than let it run out. */
    if (rs->conn_open && !rs->w.lost && (rs->stage == RUN_DRIVING || rs->hb.missed) &&
        released_ok) {
        release_and_wait(ak, rs->resource);
    }
    return run_exit_code(rs);
}

static int cmd_run(agent_link_t *ak, int argc, char **argv)
{
    elkfw_ctl_msg_t m;
    sigset_t old;
    run_sup_t rs;
    elkfw_lock_opts_t ro;
    char *sh[4], **cmd;
    int rc;

    memset(&rs, 0, sizeof rs);
    rs.ak = ak;
    rs.go_pipe = -1;
    rs.tty = -1;
    rs.hb_fd = rs.hb_wfd = -1;
    rs.conn_open = true;
    if (!run_args(ak, argc, argv, &ro, sh, &cmd)) {
        return EXIT_USAGE;
    }
    rs.resource = ro.resource;
    rs.cmd_name = ro.command != NULL ? "sh -c" : cmd[0];
    elkfw_hook_init(&rs.on_suspect, "suspect", ro.on_suspect, ro.hook_timeout_ms);
    elkfw_hook_init(&rs.on_lost, "lost", ro.on_lost, ro.hook_timeout_ms);
    elkfw_hb_start(&rs.hb, ro.heartbeat_ms, now_ms());
    rs.sfd = make_signalfd(&old);
    if (agent_connect(ak) < 0) {
        return EXIT_UNREACHABLE;
    }
    rc = acquire_lease(ak, rs.resource, ro.wait_ms, ro.heartbeat_ms, rs.sfd, &m);
    if (rc != EXIT_OK) {
        return rc;
    }
    rs.w.resource = rs.resource;
    rs.token = m.token;
    rs.stop_margin = m.stop_margin_ms;
    if (!lease_usable(ak, &rs.w, &m, &rs.conn_open)) {
        elkfw_say("%s: %s before the command could start (token %" PRIu64
                  " is stale); not starting it",
                  rs.resource, rs.w.lost ? rs.w.why : "the lease deadline passed", m.token);
        if (rs.conn_open && !rs.w.lost) {
            release_and_wait(ak, rs.resource);
        }
        return EXIT_LOST;
    }
    return run_command(&rs, cmd, &old);
}

/* ------------------------------------------------------------------ acquire / release */

static int hold_lost_connection(const char *resource)
{
    printf("lost %s connection-closed\n", resource);
    elkfw_say("%s: lost the connection to elkd; the lease is gone", resource);
    return EXIT_LOST;
}

/* The deadline has come (*now, updated): elkd says LOST at the deadline; take in what it wrote (a
 * RENEWED, or that LOST) before deciding on our own. */
static int hold_at_deadline(agent_link_t *ak, lease_watch_t *w, uint64_t *now)
{
    if (agent_fill_now(ak) <= 0) {
        return hold_lost_connection(w->resource);
    }
    watch_lines(ak, w);
    if (w->lost) {
        return EXIT_LOST;
    }
    *now = now_ms();
    if (*now >= w->deadline) {
        printf("lost %s deadline-passed\n", w->resource);
        fflush(stdout);
        elkfw_say("%s: lease deadline passed without word from elkd; the lease is gone",
                  w->resource);
        return EXIT_LOST;
    }
    return STEP_ON;
}

/* A signal other than SIGCHLD ends the hold with a release (unless the lease is gone). */
static int hold_on_signal(agent_link_t *ak, lease_watch_t *w, int sfd)
{
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo != SIGCHLD) {
            watch_lines(ak, w);
            if (w->lost) {
                return EXIT_LOST;
            }
            release_and_wait(ak, w->resource);
            printf("released %s\n", w->resource);
            return EXIT_OK;
        }
    }
    return STEP_ON;
}

/* elkd wrote something, or closed the connection. */
static int hold_on_agent(agent_link_t *ak, lease_watch_t *w)
{
    int rc = agent_fill_now(ak);
    watch_lines(ak, w);
    if (w->lost) {
        return EXIT_LOST;
    }
    return rc <= 0 ? hold_lost_connection(w->resource) : STEP_ON;
}

/* Hold the lease, printing its events, until a signal, its loss or elkd's end. */
static int acquire_hold(agent_link_t *ak, lease_watch_t *w, int sfd)
{
    int rc = STEP_ON;
    while (rc == STEP_ON) {
        struct pollfd p[2] = {{sfd, POLLIN, 0}, {ak->fd, POLLIN, 0}};
        uint64_t now = now_ms();
        int timeout;
        watch_lines(ak, w);
        if (w->lost) {
            return EXIT_LOST;
        }
        if (now >= w->deadline) {
            rc = hold_at_deadline(ak, w, &now);
            if (rc != STEP_ON) {
                return rc;
            }
        }
        timeout = w->deadline - now > 60000 ? 60000 : (int)(w->deadline - now);
        if (poll(p, 2, timeout) < 0 && errno != EINTR) {
            return EXIT_FAIL;
        }
        if (p[0].revents & POLLIN) {
            rc = hold_on_signal(ak, w, sfd);
        }
        if (rc == STEP_ON && p[1].revents) {
            rc = hold_on_agent(ak, w);
        }
    }
    return rc;
}

static int cmd_acquire(agent_link_t *ak, int argc, char **argv)
{
    elkfw_lock_opts_t o;
    const char *resource;
    elkfw_ctl_msg_t m;
    int next = elkfw_cli_lock_args(argc, argv, false, 0, &o);
    int sfd, rc;
    lease_watch_t w;
    bool conn_open = true;
    if (next < 0) {
        return EXIT_USAGE;
    }
    if (next != argc) {
        return elkfw_cli_usage_error("acquire", "unexpected argument '%s' after the resource",
                                     argv[next]);
    }
    resource = o.resource;
    ak->sock_path = o.sock_path != NULL ? o.sock_path : ak->sock_path;
    ak->held_code = o.held_code;
    if (!resource_ok(resource)) {
        return EXIT_USAGE;
    }
    sfd = make_signalfd(NULL);
    if (agent_connect(ak) < 0) {
        return EXIT_UNREACHABLE;
    }
    rc = acquire_lease(ak, resource, o.wait_ms, 0, sfd, &m);
    if (rc != EXIT_OK) {
        return rc;
    }
    memset(&w, 0, sizeof w);
    w.resource = resource;
    /* As in run: a LOST or SHUTDOWN already waiting behind the grant means there is no
     * lease to report. */
    if (!lease_usable(ak, &w, &m, &conn_open)) {
        printf("lost %s %s\n", resource, w.lost ? "before-start" : "deadline-passed");
        fflush(stdout);
        elkfw_say("%s: %s right after the grant (token %" PRIu64 " is stale)", resource,
                  w.lost ? w.why : "the lease deadline passed", m.token);
        if (conn_open && !w.lost) {
            release_and_wait(ak, resource);
        }
        return EXIT_LOST;
    }
    printf("acquired %s token=%" PRIu64 " validity_ms=%" PRIu64 "\n", resource, m.token,
           w.deadline - now_ms());
    fflush(stdout);
    w.print = true;
    return acquire_hold(ak, &w, sfd);
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

/* What `elk status` shows: the two tables and copies of the lines their cells point into. */
typedef struct status_view {
    table_t tables[2];
    char store[ELK_CTL_REPLY_MAX];
    size_t used;
} status_view_t;

/* Keep a copy of one status line; NULL when the store is full (the row is left out). */
static char *status_keep(status_view_t *v, const char *line, size_t len)
{
    char *copy;
    if (len + 1 > sizeof v->store - v->used) {
        return NULL;
    }
    copy = v->store + v->used;
    memcpy(copy, line, len);
    copy[len] = '\0';
    v->used += len + 1;
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
        if (strcmp(tok, "hygiene") == 0) {
            /* the protocol keeps the value one word ("quarantined:_restarted_1_s_ago;..."):
             * a person reads it with its spaces */
            for (char *u = eq + 1; *u != '\0'; u++) {
                *u = *u == '_' ? ' ' : *u;
            }
        }
        /* musl's strtok_r leaves save NULL after the last token (glibc: at the end). */
        if (strcmp(tok, "check") == 0 && save != NULL && *save != '\0') {
            /* the safety check's text has spaces: it is the last field, up to the end */
            (eq + 1)[strlen(eq + 1)] = ' ';
            break;
        }
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
            up[k] = (char)(t->head[c][k] >= 'a' && t->head[c][k] <= 'z' ? t->head[c][k] - 32
                                                                        : t->head[c][k]);
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

/* elk status --watch: the status redrawn every second (plain frames when stdout is not a
 * terminal) until SIGINT/SIGTERM, elkd goes away, or count frames (0: no limit). */
static int status_watch(agent_link_t *ak, unsigned long count)
{
    static status_view_t view; /* the lines of one answer: too large for the stack twice */
    const char *rows[1 + ST_MAX_ROWS];
    bool tty = isatty(STDOUT_FILENO) != 0;
    unsigned long frame;
    for (frame = 0; count == 0 || frame < count; frame++) {
        elkfw_ctl_msg_t m;
        const char *line;
        size_t len, n = 0;
        uint32_t k;
        char clock_text[16];
        time_t t = time(NULL);
        struct tm tm;
        if (frame > 0) {
            sleep(1);
        }
        if (agent_send(ak, "STATUS\n") != 0 || agent_line(ak, &line, &len) <= 0 ||
            elkfw_ctl_parse_reply(line, len, &m) != ELK_OK || m.kind != ELKFW_MSG_OK) {
            elkfw_say("lost elkd at %s", ak->sock_path);
            return EXIT_UNREACHABLE;
        }
        view.used = 0;
        for (k = 0; k < m.count; k++) {
            char *copy;
            if (agent_line(ak, &line, &len) <= 0) {
                elkfw_say("elkd closed the connection in the middle of the status");
                return EXIT_UNREACHABLE;
            }
            if ((copy = status_keep(&view, line, len)) != NULL &&
                n < sizeof rows / sizeof rows[0]) {
                rows[n++] = copy;
            }
        }
        localtime_r(&t, &tm);
        strftime(clock_text, sizeof clock_text, "%H:%M:%S", &tm);
        elkfw_watch_render(stdout, rows, n, tty, clock_text);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            /* the reader left (| head, a closed pager): SIGPIPE is ignored, so without this
             * check every next frame failed unseen and elk went on forever */
            return errno == EPIPE ? EXIT_OK : EXIT_FAIL;
        }
    }
    return EXIT_OK;
}

/* elk status --metrics: elkd's metrics in the Prometheus text format, as they come. */
static int status_metrics(agent_link_t *ak)
{
    elkfw_ctl_msg_t m;
    const char *line;
    size_t len;
    unsigned long n, k;
    if (agent_send(ak, "STATUS METRICS\n") != 0 || agent_line(ak, &line, &len) <= 0) {
        return EXIT_UNREACHABLE;
    }
    if (elkfw_ctl_parse_reply(line, len, &m) != ELK_OK || m.kind != ELKFW_MSG_OK ||
        strcmp(m.word, "METRICS") != 0) {
        elkfw_say("unexpected reply from elkd (does it know STATUS METRICS?): %.*s", (int)len,
                  line);
        return EXIT_FAIL;
    }
    n = strtoul(m.text, NULL, 10);
    for (k = 0; k < n; k++) {
        if (agent_line(ak, &line, &len) <= 0) {
            elkfw_say("elkd closed the connection in the middle of the metrics");
            return EXIT_FAIL;
        }
        printf("%.*s\n", (int)len, line);
    }
    return EXIT_OK;
}

/* elk status's options. */
typedef struct status_opts {
    bool json, metrics, watch;
    unsigned long count;
} status_opts_t;

/* Reads the options into *o (and --socket into ak); false on anything else. */
static bool status_args(agent_link_t *ak, int argc, char **argv, status_opts_t *o)
{
    int i;
    memset(o, 0, sizeof *o);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            o->json = true;
        } else if (strcmp(argv[i], "--metrics") == 0) {
            o->metrics = true;
        } else if (strcmp(argv[i], "--watch") == 0) {
            o->watch = true;
        } else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            o->count = strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            ak->sock_path = argv[++i];
        } else {
            elkfw_cli_usage_error("status", "unexpected argument '%s'", argv[i]);
            return false;
        }
    }
    return true;
}

/* Sends STATUS [JSON] and reads the answer's first line into *m: EXIT_OK, or the exit
 * code of a refusal or a failure. */
static int status_request(agent_link_t *ak, bool json, elkfw_ctl_msg_t *m)
{
    const char *line;
    size_t len;
    if (agent_send(ak, json ? "STATUS JSON\n" : "STATUS\n") != 0 ||
        agent_line(ak, &line, &len) <= 0) {
        return EXIT_UNREACHABLE;
    }
    if (elkfw_ctl_parse_reply(line, len, m) == ELK_OK && m->kind == ELKFW_MSG_ERR) {
        /* refused at connect (agent full, shutting down): the same words as agent_send's */
        elkfw_say("elkd refused the connection: %s %.*s", m->code, (int)m->text_len, m->text);
        return exit_for_err(ak, m);
    }
    if (elkfw_ctl_parse_reply(line, len, m) != ELK_OK || m->kind != ELKFW_MSG_OK) {
        elkfw_say("unexpected reply from elkd: %.*s", (int)len, line);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

/* The count status lines after "OK STATUS <count>", printed as two tables. */
static int status_tables(agent_link_t *ak, status_view_t *view, uint32_t count)
{
    const char *line;
    size_t len;
    uint32_t k;
    memset(view, 0, sizeof *view);
    view->tables[0].kind = "RESOURCES";
    view->tables[1].kind = "NODES";
    for (k = 0; k < count; k++) {
        char *copy;
        if (agent_line(ak, &line, &len) <= 0) {
            elkfw_say("elkd closed the connection in the middle of the status");
            return EXIT_FAIL;
        }
        if (len > 6 && strncmp(line, "agent ", 6) == 0) {
            printf("%.*s\n", (int)len - 6, line + 6);
        } else if ((copy = status_keep(view, line, len)) == NULL) {
            continue;
        } else if (strncmp(copy, "resource ", 9) == 0) {
            table_add(&view->tables[0], copy);
        } else if (strncmp(copy, "node ", 5) == 0) {
            table_add(&view->tables[1], copy);
        }
    }
    table_print(&view->tables[0]);
    table_print(&view->tables[1]);
    return EXIT_OK;
}

static int cmd_status(agent_link_t *ak, int argc, char **argv)
{
    status_view_t sv;
    status_opts_t o;
    elkfw_ctl_msg_t m;
    int rc;
    if (!status_args(ak, argc, argv, &o)) {
        return EXIT_USAGE;
    }
    if (agent_connect(ak) < 0) {
        return EXIT_UNREACHABLE;
    }
    if (o.metrics) {
        return status_metrics(ak);
    }
    if (o.watch) {
        return status_watch(ak, o.count);
    }
    rc = status_request(ak, o.json, &m);
    if (rc != EXIT_OK) {
        return rc;
    }
    if (o.json) {
        printf("%.*s\n", (int)m.text_len, m.text);
        return EXIT_OK;
    }
    return status_tables(ak, &sv, m.count);
}

/* ------------------------------------------------------------------ reload */

/* One STATUS JSON answer's number after "key": (0 if absent). */
static uint64_t json_number(const char *text, size_t len, const char *key)
{
    char pat[48];
    const char *p;
    int n = snprintf(pat, sizeof pat, "\"%s\":", key);
    p = memmem(text, len, pat, (size_t)n);
    return p != NULL ? strtoull(p + n, NULL, 10) : 0;
}

static int status_json(agent_link_t *ak, elkfw_ctl_msg_t *m)
{
    const char *line;
    size_t len;
    if (agent_send(ak, "STATUS JSON\n") != 0 || agent_line(ak, &line, &len) <= 0) {
        return EXIT_UNREACHABLE;
    }
    if (elkfw_ctl_parse_reply(line, len, m) != ELK_OK || m->kind != ELKFW_MSG_OK) {
        elkfw_say("unexpected reply from elkd: %.*s", (int)len, line);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

/* elk reload: SIGHUP to the elkd behind the socket (its pid from STATUS), then wait for
 * its reload counters to move and say how it went. */
static int cmd_reload(agent_link_t *ak, int argc, char **argv)
{
    elkfw_ctl_msg_t m;
    uint64_t pid, ok0, failed0, until;
    int rc;
    if (argc > 1) {
        return elkfw_cli_usage_error("reload", "unexpected argument '%s'", argv[1]);
    }
    if (agent_connect(ak) < 0) {
        return EXIT_UNREACHABLE;
    }
    if ((rc = status_json(ak, &m)) != EXIT_OK) {
        return rc;
    }
    pid = json_number(m.text, m.text_len, "pid");
    ok0 = json_number(m.text, m.text_len, "reloads");
    failed0 = json_number(m.text, m.text_len, "reload_failures");
    if (pid <= 1 || kill((pid_t)pid, SIGHUP) != 0) {
        elkfw_say("cannot signal elkd (pid %" PRIu64 "): %s (run as elkd's user or root)", pid,
                  strerror(errno));
        return EXIT_FAIL;
    }
    for (until = now_ms() + 10000u; now_ms() < until; usleep(50000)) {
        if ((rc = status_json(ak, &m)) != EXIT_OK) {
            return rc;
        }
        if (json_number(m.text, m.text_len, "reload_failures") != failed0) {
            elkfw_say("reload failed; elkd keeps its running configuration (its log says why)");
            return EXIT_CONFIG;
        }
        if (json_number(m.text, m.text_len, "reloads") != ok0) {
            printf("reloaded\n");
            return EXIT_OK;
        }
    }
    elkfw_say("elkd (pid %" PRIu64 ") did not report a reload within 10 s", pid);
    return EXIT_FAIL;
}

/* ------------------------------------------------------------------ guard */

static int cmd_guard(int argc, char **argv)
{
    return elkfw_guard_main(argc, argv); /* firmware/elk/guard.c */
}

/* ------------------------------------------------------------------ main */

static int cmd_guard_any(agent_link_t *ak, int argc, char **argv)
{
    (void)ak; /* the guard works on the actuator's side, without elkd */
    return cmd_guard(argc, argv);
}

typedef struct command {
    const char *name;
    void (*usage)(FILE *f);
    int (*run)(agent_link_t *ak, int argc, char **argv);
} command_t;

static int cmd_events(agent_link_t *ak, int argc, char **argv)
{
    (void)ak;
    return elkfw_history_events(argc, argv, ELK_DEFAULT_EVENTS_FILE);
}

static int cmd_timeline(agent_link_t *ak, int argc, char **argv)
{
    (void)ak;
    return elkfw_history_timeline(argc, argv);
}

static const command_t commands[] = {
    {"run", usage_run, cmd_run},
    {"acquire", usage_acquire, cmd_acquire},
    {"status", usage_status, cmd_status},
    {"reload", usage_reload, cmd_reload},
    {"guard", usage_guard, cmd_guard_any},
    {"events", elkfw_history_usage_events, cmd_events},
    {"timeline", elkfw_history_usage_timeline, cmd_timeline},
};

/* A command elk does not know: said in one line, with the closest one if it looks like a
 * slip. */
static int unknown_command(const char *cmd)
{
    const char *names[sizeof commands / sizeof commands[0] + 1];
    const char *guess;
    size_t k;
    for (k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        names[k] = commands[k].name;
    }
    names[k] = "help";
    guess = elkfw_suggest(cmd, strlen(cmd), names, k + 1);
    if (guess != NULL) {
        return elkfw_cli_usage_error(NULL, "unknown command '%s' (did you mean '%s'?)", cmd, guess);
    }
    return elkfw_cli_usage_error(NULL, "unknown command '%s'", cmd);
}

/* The options before the command (from argv[*i], which ends at the command): STEP_ON,
 * or the exit code of --help, --version or a wrong option. */
static int main_options(agent_link_t *ak, int argc, char **argv, int *i)
{
    while (*i < argc && argv[*i][0] == '-') {
        const char *a = argv[*i];
        if (strcmp(a, "--socket") == 0 && *i + 1 < argc) {
            ak->sock_path = argv[*i + 1];
            *i += 2;
        } else if (strncmp(a, "--socket=", 9) == 0) {
            ak->sock_path = a + 9;
            (*i)++;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage_main(stdout);
            return EXIT_OK;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            printf("elk %s\n", ELK_VERSION_STRING);
            return EXIT_OK;
        } else {
            return elkfw_cli_usage_error(NULL,
                                         "unknown option '%s' (elk's own options: --socket, "
                                         "--help, --version; a command's come after it)",
                                         a);
        }
    }
    return STEP_ON;
}

int main(int argc, char **argv)
{
    agent_link_t link; /* holds one STATUS answer: tens of KiB, well within a process stack */
    agent_link_t *ak = &link;
    int i = 1, rc;
    size_t k;
    const char *cmd;
    signal(SIGPIPE, SIG_IGN);
    ak->fd = -1;
    ak->full = false;
    ak->held_code = EXIT_NOT_ACQUIRED;
    ak->sock_path = getenv("ELK_SOCKET") ? getenv("ELK_SOCKET") : ELK_DEFAULT_SOCKET;
    rc = main_options(ak, argc, argv, &i);
    if (rc != STEP_ON) {
        return rc;
    }
    if (i >= argc) {
        return elkfw_cli_usage_error(NULL,
                                     "missing COMMAND (run, acquire, status, reload, guard, "
                                     "events, timeline)");
    }
    cmd = argv[i];
    argc -= i;
    argv += i;
    for (k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        if (strcmp(cmd, commands[k].name) == 0) {
            if (want_help(argc, argv)) {
                commands[k].usage(stdout);
                return EXIT_OK;
            }
            rc = commands[k].run(ak, argc, argv);
            /* refused for want of a slot, whichever step saw it: one exit code, neither
             * "elkd unreachable" (69) nor "lease not acquired" (73) */
            return ak->full && rc != EXIT_OK ? EXIT_AGENT_FULL : rc;
        }
    }
    if (strcmp(cmd, "help") == 0) {
        usage_main(stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "release") == 0) {
        /* Removed: a lease belongs to the connection that took it; another connection
         * that could drop it could stop someone else's actuator mid-step. */
        elkfw_say("there is no 'elk release': a lease is released by the process holding it; stop "
                  "that 'elk "
                  "acquire' or 'elk run' (its pid is the holder in 'elk status')");
        return EXIT_USAGE;
    }
    return unknown_command(cmd);
}
