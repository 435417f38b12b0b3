/* SPDX-License-Identifier: MIT */
/* Asking elkd for a lease and waiting for the answer (with a "who holds it" line on a
 * terminal), and giving it back. */
#include "elk.h"

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
        st_open = elk__agent_connect(&st) >= 0;
    }
    snprintf(row, sizeof row, "resource name=%s ", resource);
    if (st_open && elk__agent_send(&st, "STATUS\n") == 0 && elk__agent_line(&st, &line, &len) > 0 &&
        elkfw_ctl_parse_reply(line, len, &m) == ELK_OK && m.kind == ELKFW_MSG_OK) {
        for (k = 0; k < m.count && elk__agent_line(&st, &line, &len) > 0; k++) {
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

/* keepalive_ms != 0: the lease is renewed only while KEEPALIVEs come (elk run --heartbeat). */
int elk__acquire_lease(agent_link_t *ak, const char *resource, uint32_t wait_ms,
                       uint32_t keepalive_ms, int sfd, elkfw_ctl_msg_t *m)
{
    bool show = wait_ms > 0 && isatty(STDERR_FILENO);
    int rc = elk__acquire_lease_wait(ak, resource, wait_ms, keepalive_ms, sfd, m, show);
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
        elk__print_err_reply(m, what);
        return elk__exit_for_err(ak, m);
    }
    if (m->kind == ELKFW_MSG_OK && strcmp(m->word, "ACQUIRED") == 0 &&
        (strcmp(m->resource, resource) == 0 || elk__is_permit_of(m->resource, resource))) {
        return EXIT_OK; /* a semaphore's grant names the permit: "pumps#2" */
    }
    if (m->kind == ELKFW_MSG_EVENT && strcmp(m->word, "SHUTDOWN") == 0) {
        elkfw_say("cannot acquire %s: elkd is shutting down", resource);
        return EXIT_UNREACHABLE;
    }
    return STEP_ON;
}

bool elk__is_permit_of(const char *permit, const char *semaphore)
{
    size_t len = elkfw_permit_sem_len(permit);
    return len != 0 && len == strlen(semaphore) && memcmp(permit, semaphore, len) == 0;
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

int elk__acquire_lease_wait(agent_link_t *ak, const char *resource, uint32_t wait_ms,
                            uint32_t keepalive_ms, int sfd, elkfw_ctl_msg_t *m, bool show)
{
    uint64_t started = elk__now_ms();
    int sent = keepalive_ms != 0
        ? elk__agent_send(ak, "ACQUIRE %s %" PRIu32 " keepalive=%" PRIu32 "\n", resource, wait_ms,
                          keepalive_ms)
        : elk__agent_send(ak, "ACQUIRE %s %" PRIu32 "\n", resource, wait_ms);
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
        int pr = poll(p, 2, show ? 1000 - (int)((elk__now_ms() - started) % 1000u) : -1);
        if (pr < 0 && errno != EINTR) {
            return EXIT_FAIL;
        }
        if (pr == 0) {
            wait_show(ak->sock_path, resource, elk__now_ms() - started);
            continue;
        }
        if ((p[1].revents & POLLIN) && (rc = acquire_signal(sfd, resource)) != STEP_ON) {
            return rc;
        }
        if (p[0].revents && elk__agent_fill(ak) <= 0) {
            elkfw_say("elkd closed the connection before answering (is it shutting down?)");
            return EXIT_UNREACHABLE;
        }
    }
}

/* After RELEASE: wait (briefly) for the confirmation so the next holder is not kept waiting. */
void elk__release_and_wait(agent_link_t *ak, const char *resource)
{
    uint64_t until = elk__now_ms() + 2000;
    if (elk__agent_send(ak, "RELEASE %s\n", resource) != 0) {
        return;
    }
    while (elk__now_ms() < until) {
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
        if (poll(&p, 1, (int)(until - elk__now_ms())) <= 0 || elk__agent_fill(ak) <= 0) {
            return;
        }
    }
}
