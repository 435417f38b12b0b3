/* SPDX-License-Identifier: MIT */
/* A lease from the local elkd over its control socket (elk/agent_client.h). The wire is
 * docs/control-protocol.md: one request, one answer line, EVENT lines at any time. */
#include "elk/agent_client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "elk/err.h"
#include "elk/port_posix.h"

/* The code of a name elkd sent (ELK_E_INTERNAL for one this build does not know). */
static int agent_code(const char *name, size_t len)
{
    int code;
    for (code = -1; code >= -999; code--) {
        const char *n = elk_err_name(code);
        if (strlen(n) == len && memcmp(n, name, len) == 0 && strcmp(n, "ELK_E_UNKNOWN") != 0) {
            return code;
        }
    }
    return ELK_E_INTERNAL;
}

/* The next space-separated word of [*p, end): its start and length, or false at the end. */
static bool agent_word(const char **p, const char *end, const char **w, size_t *wl)
{
    const char *s = *p;
    while (s < end && (*s == ' ' || *s == '\t')) {
        s++;
    }
    if (s == end) {
        return false;
    }
    *w = s;
    while (s < end && *s != ' ' && *s != '\t') {
        s++;
    }
    *wl = (size_t)(s - *w);
    *p = s;
    return true;
}

static bool agent_is(const char *w, size_t wl, const char *lit)
{
    return strlen(lit) == wl && memcmp(w, lit, wl) == 0;
}

static bool agent_u64(const char *w, size_t wl, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;
    if (wl == 0 || wl > 19) {
        return false;
    }
    for (i = 0; i < wl; i++) {
        if (w[i] < '0' || w[i] > '9') {
            return false;
        }
        v = v * 10u + (uint64_t)(w[i] - '0');
    }
    *out = v;
    return true;
}

/* <resource> <token> <validity_ms> <stop_margin_ms> [deadline_boottime_ms=<t>] [k=v...]
 * of ACQUIRED, RENEWED and RECOVERED, for this connection's resource. */
static bool agent_grant(elk_agent_t *a, const char *p, const char *end, uint64_t now)
{
    const char *w;
    size_t wl;
    uint64_t token, validity, margin, deadline;
    static const char key[] = "deadline_boottime_ms=";
    if (!agent_word(&p, end, &w, &wl) || !agent_is(w, wl, a->resource) ||
        !agent_word(&p, end, &w, &wl) || !agent_u64(w, wl, &token) ||
        !agent_word(&p, end, &w, &wl) || !agent_u64(w, wl, &validity) ||
        !agent_word(&p, end, &w, &wl) || !agent_u64(w, wl, &margin)) {
        return false;
    }
    /* An elkd without the absolute deadline: count the validity from when it was read. */
    deadline = now + validity;
    while (agent_word(&p, end, &w, &wl)) {
        if (wl > sizeof key - 1 && memcmp(w, key, sizeof key - 1) == 0) {
            if (!agent_u64(w + sizeof key - 1, wl - (sizeof key - 1), &deadline)) {
                return false;
            }
        }
    }
    a->token = token;
    a->deadline_ms = deadline;
    a->stop_margin_ms = (uint32_t)(margin > UINT32_MAX ? UINT32_MAX : margin);
    return true;
}

static void agent_lose(elk_agent_t *a, int cause)
{
    if (a->held) {
        a->held = false;
        a->lost_cause = cause;
    }
}

/* EVENT <word> ...: apply it to the lease. Events of other resources are not ours. */
static void agent_event(elk_agent_t *a, const char *p, const char *end)
{
    const char *w, *r, *c;
    size_t wl, rl, cl;
    if (!agent_word(&p, end, &w, &wl)) {
        return;
    }
    if (agent_is(w, wl, "SHUTDOWN")) {
        agent_lose(a, ELK_E_SHUTTING_DOWN);
        return;
    }
    if (agent_is(w, wl, "RENEWED") || agent_is(w, wl, "RECOVERED")) {
        if (a->held && agent_grant(a, p, end, elk_posix_now_ms())) {
            a->suspect = false;
        }
        return;
    }
    if (!agent_word(&p, end, &r, &rl) || !agent_is(r, rl, a->resource)) {
        return;
    }
    if (agent_is(w, wl, "SUSPECT")) {
        a->suspect = a->held;
    } else if (agent_is(w, wl, "LOST")) {
        /* the cause is the word after the resource; without one, the plain loss */
        agent_lose(a, agent_word(&p, end, &c, &cl) ? agent_code(c, cl) : ELK_E_LOCK_LOST);
    }
}

static int agent_send(elk_agent_t *a, const char *line, size_t len)
{
    while (len > 0) {
        ssize_t n = send(a->fd, line, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno == EPIPE || errno == ECONNRESET ? ELK_E_CLOSED : ELK_E_IO;
        }
        line += n;
        len -= (size_t)n;
    }
    return ELK_OK;
}

/* Receive once, waiting until `until` (CLOCK_BOOTTIME ms). ELK_OK with new bytes,
 * ELK_E_TIMEOUT, or ELK_E_CLOSED / ELK_E_IO (the lease is then lost with that cause). */
static int agent_recv(elk_agent_t *a, uint64_t until)
{
    struct pollfd pfd;
    ssize_t n;
    uint64_t now = elk_posix_now_ms();
    int rc;
    if (now >= until) {
        return ELK_E_TIMEOUT;
    }
    pfd.fd = a->fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    rc = poll(&pfd, 1, (until - now) > 60000u ? 60000 : (int)(until - now));
    if (rc == 0 || (rc < 0 && errno == EINTR)) {
        return elk_posix_now_ms() >= until ? ELK_E_TIMEOUT : ELK_OK;
    }
    if (a->len == sizeof a->buf) { /* a line longer than the buffer: drop what we have */
        a->len = 0;
        a->skipping = true;
    }
    n = rc < 0 ? -1 : recv(a->fd, a->buf + a->len, sizeof a->buf - a->len, 0);
    if (n < 0 && errno == EINTR) {
        return ELK_OK;
    }
    if (n <= 0) {
        rc = n == 0 ? ELK_E_CLOSED : ELK_E_IO;
        agent_lose(a, rc);
        return rc;
    }
    a->len += (size_t)n;
    return ELK_OK;
}

/* Copy the first whole line into line[cap] (without its newline and \r), drop it from
 * the buffer. False if there is none yet. Events are applied here and not returned. */
static bool agent_take_line(elk_agent_t *a, char *line, size_t cap)
{
    for (;;) {
        char *nl = memchr(a->buf, '\n', a->len);
        size_t l, keep;
        bool skip;
        if (nl == NULL) {
            return false;
        }
        l = (size_t)(nl - a->buf);
        skip = a->skipping;
        a->skipping = false;
        keep = l < cap ? l : cap - 1;
        memcpy(line, a->buf, keep);
        if (keep > 0 && line[keep - 1] == '\r') {
            keep--;
        }
        line[keep] = '\0';
        memmove(a->buf, nl + 1, a->len - l - 1);
        a->len -= l + 1;
        if (skip) {
            continue;
        }
        if (strncmp(line, "EVENT ", 6) == 0) {
            agent_event(a, line + 6, line + keep);
            continue;
        }
        return true;
    }
}

/* The next answer line (not an EVENT) before `until`, into line[cap]. */
static int agent_answer(elk_agent_t *a, char *line, size_t cap, uint64_t until)
{
    for (;;) {
        int rc;
        if (agent_take_line(a, line, cap)) {
            return ELK_OK;
        }
        rc = agent_recv(a, until);
        if (rc != ELK_OK) {
            return rc;
        }
    }
}

/* ERR <CODE> <text>: the code, and the text kept for people. */
static int agent_err(elk_agent_t *a, const char *line)
{
    const char *p = line + 4, *end = line + strlen(line), *w;
    size_t wl;
    if (!agent_word(&p, end, &w, &wl)) {
        return ELK_E_INTERNAL;
    }
    while (p < end && *p == ' ') {
        p++;
    }
    (void)snprintf(a->message, sizeof a->message, "%s", p);
    return agent_code(w, wl);
}

/* Send one request and read its answer into line[cap]; a silent or broken connection
 * is closed, since later answers could no longer be matched to their requests. */
static int agent_request(elk_agent_t *a, const char *req, size_t len, char *line, size_t cap,
                         uint64_t until)
{
    int rc = agent_send(a, req, len);
    if (rc == ELK_OK) {
        rc = agent_answer(a, line, cap, until);
    }
    if (rc != ELK_OK) {
        agent_lose(a, rc == ELK_E_TIMEOUT ? ELK_E_CLOSED : rc);
        elk_agent_close(a);
        return rc;
    }
    if (strncmp(line, "ERR ", 4) == 0) {
        return agent_err(a, line);
    }
    return ELK_OK;
}

int elk_agent_connect(elk_agent_t *a, const char *path)
{
    struct sockaddr_un sa;
    memset(a, 0, sizeof *a);
    a->fd = -1;
    a->lost_cause = ELK_E_NOT_HELD;
    if (path == NULL) {
        path = ELK_AGENT_DEFAULT_SOCKET;
    }
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) {
        (void)snprintf(a->message, sizeof a->message, "socket path longer than %u bytes",
                       (unsigned)sizeof sa.sun_path - 1u);
        return ELK_E_INVALID_ARG;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    a->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (a->fd < 0 || connect(a->fd, (const struct sockaddr *)&sa, sizeof sa) != 0) {
        (void)snprintf(a->message, sizeof a->message,
                       "cannot connect to elkd at %s: %s (is elkd running, and may this user "
                       "open its socket?)",
                       path, strerror(errno));
        elk_agent_close(a);
        return ELK_E_AGENT_UNREACHABLE;
    }
    return ELK_OK;
}

static int agent_check_name(const char *resource)
{
    size_t i, n = resource == NULL ? 0 : strlen(resource);
    if (n == 0) {
        return ELK_E_NAME_INVALID;
    }
    if (n > ELK_AGENT_NAME_MAX) {
        return ELK_E_NAME_TOO_LONG;
    }
    for (i = 0; i < n; i++) { /* a space or newline would change the request itself */
        if ((unsigned char)resource[i] <= ' ' || resource[i] == 0x7f) {
            return ELK_E_NAME_INVALID;
        }
    }
    return ELK_OK;
}

int elk_agent_acquire(elk_agent_t *a, const char *resource, uint32_t wait_ms, uint32_t timeout_ms)
{
    char req[128], line[ELK_AGENT_BUF_SIZE];
    int n, rc = agent_check_name(resource);
    if (rc != ELK_OK) {
        return rc;
    }
    if (a->fd < 0) {
        return ELK_E_CLOSED;
    }
    if (a->held) {
        return ELK_E_ALREADY_HELD;
    }
    n = snprintf(req, sizeof req, "ACQUIRE %s %lums\n", resource, (unsigned long)wait_ms);
    memcpy(a->resource, resource, strlen(resource) + 1);
    a->suspect = false;
    rc = agent_request(a, req, (size_t)n, line, sizeof line,
                       elk_posix_now_ms() + (uint64_t)wait_ms + (uint64_t)timeout_ms);
    if (rc != ELK_OK) {
        return rc;
    }
    if (strncmp(line, "OK ACQUIRED ", 12) != 0 ||
        !agent_grant(a, line + 12, line + strlen(line), elk_posix_now_ms())) {
        (void)snprintf(a->message, sizeof a->message, "unexpected answer to ACQUIRE: %.100s", line);
        return ELK_E_CTL_SYNTAX;
    }
    a->held = true;
    a->lost_cause = ELK_OK;
    return ELK_OK;
}

int elk_agent_poll(elk_agent_t *a, uint32_t timeout_ms)
{
    uint64_t until = elk_posix_now_ms() + timeout_ms;
    char line[ELK_AGENT_BUF_SIZE];
    for (;;) {
        /* No request is outstanding: a line that is no EVENT is stray, and dropped. */
        while (agent_take_line(a, line, sizeof line)) {
        }
        if (!a->held) {
            return a->lost_cause;
        }
        if (elk_posix_now_ms() >= a->deadline_ms) {
            agent_lose(a, ELK_E_LOCK_LOST); /* no renewal read in time: stop driving */
            return a->lost_cause;
        }
        if (a->fd < 0 ||
            agent_recv(a, until < a->deadline_ms ? until : a->deadline_ms) == ELK_E_TIMEOUT) {
            if (elk_posix_now_ms() >= until) {
                return a->held ? ELK_OK : a->lost_cause;
            }
        }
    }
}

uint64_t elk_agent_remaining_ms(const elk_agent_t *a)
{
    uint64_t now = elk_posix_now_ms();
    return a->held && now < a->deadline_ms ? a->deadline_ms - now : 0;
}

int elk_agent_release(elk_agent_t *a, uint32_t timeout_ms)
{
    char req[96], line[ELK_AGENT_BUF_SIZE];
    int n, rc;
    while (agent_take_line(a, line, sizeof line)) { /* a LOST already received counts */
    }
    if (!a->held) {
        return ELK_E_NOT_HELD;
    }
    a->held = false;
    a->lost_cause = ELK_E_NOT_HELD;
    n = snprintf(req, sizeof req, "RELEASE %s\n", a->resource);
    rc = agent_request(a, req, (size_t)n, line, sizeof line, elk_posix_now_ms() + timeout_ms);
    /* ERR NOT_HELD: a LOST was on its way; either way nothing is held now. */
    return rc == ELK_E_NOT_HELD ? ELK_OK : rc;
}

void elk_agent_close(elk_agent_t *a)
{
    if (a->fd >= 0) {
        (void)close(a->fd);
        a->fd = -1;
    }
    agent_lose(a, ELK_E_CLOSED);
}
