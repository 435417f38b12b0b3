/* SPDX-License-Identifier: MIT */
/* elk acquire: hold a lease until a signal, printing its events. */
#include "elk.h"

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
    if (elk__agent_fill_now(ak) <= 0) {
        return hold_lost_connection(w->resource);
    }
    elk__watch_lines(ak, w);
    if (w->lost) {
        return EXIT_LOST;
    }
    *now = elk__now_ms();
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
            elk__watch_lines(ak, w);
            if (w->lost) {
                return EXIT_LOST;
            }
            elk__release_and_wait(ak, w->resource);
            printf("released %s\n", w->resource);
            return EXIT_OK;
        }
    }
    return STEP_ON;
}

/* elkd wrote something, or closed the connection. */
static int hold_on_agent(agent_link_t *ak, lease_watch_t *w)
{
    int rc = elk__agent_fill_now(ak);
    elk__watch_lines(ak, w);
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
        uint64_t now = elk__now_ms();
        int timeout;
        elk__watch_lines(ak, w);
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

int elk__cmd_acquire(agent_link_t *ak, int argc, char **argv)
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
    if (!elk__resource_ok(resource)) {
        return EXIT_USAGE;
    }
    sfd = elk__make_signalfd(NULL);
    if (elk__agent_connect(ak) < 0) {
        return EXIT_UNREACHABLE;
    }
    rc = elk__acquire_lease(ak, resource, o.wait_ms, 0, sfd, &m);
    if (rc != EXIT_OK) {
        return rc;
    }
    if (strcmp(m.resource, resource) != 0) {
        static char permit[ELKFW_NAME_MAX]; /* a semaphore's: the lease is the permit's */
        snprintf(permit, sizeof permit, "%s", m.resource);
        resource = permit;
    }
    memset(&w, 0, sizeof w);
    w.resource = resource;
    /* As in run: a LOST or SHUTDOWN already waiting behind the grant means there is no
     * lease to report. */
    if (!elk__lease_usable(ak, &w, &m, &conn_open)) {
        printf("lost %s %s\n", resource, w.lost ? "before-start" : "deadline-passed");
        fflush(stdout);
        elkfw_say("%s: %s right after the grant (token %" PRIu64 " is stale)", resource,
                  w.lost ? w.why : "the lease deadline passed", m.token);
        if (conn_open && !w.lost) {
            elk__release_and_wait(ak, resource);
        }
        return EXIT_LOST;
    }
    printf("acquired %s token=%" PRIu64 " validity_ms=%" PRIu64 "\n", resource, m.token,
           w.deadline - elk__now_ms());
    fflush(stdout);
    w.print = true;
    return acquire_hold(ak, &w, sfd);
}
