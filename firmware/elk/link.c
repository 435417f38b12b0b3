/* SPDX-License-Identifier: MIT */
/* The connection to elkd: connect, read its lines, say its refusals. */
#include "elk.h"

uint64_t elk__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------------ connection */

int elk__agent_connect(agent_link_t *ak)
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
    if (ak->store == NULL && (ak->store = malloc(REPLY_BUF)) == NULL) {
        elkfw_say("no memory for elkd's answers (%zu bytes)", (size_t)REPLY_BUF);
        close(fd);
        return -1;
    }
    ak->fd = fd;
    elkfw_linebuf_init(&ak->lb, ak->store, REPLY_BUF);
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

__attribute__((format(printf, 2, 3))) int elk__agent_send(agent_link_t *ak, const char *fmt, ...)
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
int elk__agent_fill(agent_link_t *ak)
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
int elk__agent_fill_now(agent_link_t *ak)
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

/* Wait until deadline (elk__now_ms) unless the connection to elkd has something to read
 * first: a line, or its end (elkd went away). Returns 1 readable, 0 at the deadline, -1
 * when poll failed. */
int elk__agent_wait(const agent_link_t *ak, uint64_t deadline)
{
    for (;;) {
        struct pollfd p = {ak->fd, POLLIN, 0};
        uint64_t now = elk__now_ms();
        int rc;
        if (now >= deadline) {
            return 0;
        }
        rc = poll(&p, 1, deadline - now > INT_MAX ? INT_MAX : (int)(deadline - now));
        if (rc > 0) {
            return 1;
        }
        if (rc < 0 && errno != EINTR) {
            return -1;
        }
    }
}

/* The lease's local deadline in CLOCK_BOOTTIME ms. elkd sends it as an absolute value
 * (same clock, same host), so the time this reply spent in the socket is not added to
 * the lease. An older elkd sends only the validity left when it wrote the line; then
 * the best we can do is count it from now. */
uint64_t elk__lease_deadline(const elkfw_ctl_msg_t *m, uint64_t now)
{
    uint64_t relative = now + m->deadline_ms;
    if (m->deadline_boottime_ms != 0 && m->deadline_boottime_ms < relative) {
        return m->deadline_boottime_ms;
    }
    return relative;
}

/* Next line from elkd, blocking. Returns 1 with the line, 0 on EOF, -1 on error. */
int elk__agent_line(agent_link_t *ak, const char **line, size_t *len)
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
        rc = elk__agent_fill(ak);
        if (rc <= 0) {
            return rc;
        }
    }
}

void elk__print_err_reply(const elkfw_ctl_msg_t *m, const char *what)
{
    elkfw_say("%s: %.*s [%s]", what, (int)m->text_len, m->text, m->code);
}

/* elkd's refusal (an ERR line in m) as elk's exit code: the table in firmware/elk/cli.c. */
int elk__exit_for_err(const agent_link_t *ak, const elkfw_ctl_msg_t *m)
{
    return elkfw_cli_exit_for(m->code, m->text, m->text_len, ak->held_code);
}
