/* SPDX-License-Identifier: MIT */
/* The main loop: the poll set, the tick (waiters, shutdown, flushing, notify) and signals. */
#include "agent.h"

static void begin_shutdown(agent_t *a, uint64_t now, const char *why)
{
    size_t i;
    if (a->shutting_down) {
        return;
    }
    a->shutting_down = true;
    a->shutdown_started = now;
    (void)elkfw_notify_send(&a->notify, "STOPPING=1");
    elkd__log(a, ELK_LOG_INFO,
              "%s: stopping: no new leases, telling holders, releasing every lease", why);
    if (a->listen_fd >= 0) {
        close(a->listen_fd);
        a->listen_fd = -1;
        unlink(a->conf.agent.socket_path);
    }
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        if (a->clients[i].fd >= 0) {
            elkd__client_send(a, (int)i, "EVENT SHUTDOWN\n");
        }
    }
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        if (a->waiters[i].client >= 0) {
            elkd__client_err(a, a->waiters[i].client, ELK_E_SHUTTING_DOWN,
                             a->res[a->waiters[i].res]->conf->name);
            a->waiters[i].client = -1;
        }
    }
    for (i = 0; i < a->n_res; i++) {
        resource_t *r = a->res[i];
        if (r->owner >= 0 && elkd__owned_by(a, r, r->owner) && !r->acquiring) {
            /* The holder gets its stop margin to bring the actuator to its safe state
             * (the lease stays valid and renewed meanwhile); then we release. */
            r->shutdown_release_at = now + r->conf->stop_margin_ms;
            (void)elkd__stop_command(a, r, now, "shutting down", true);
            if (r->shutdown_release_at == now) {
                elkd__release_when_stopped(a, r, now, "shutting down");
            }
        } else if (r->acquiring || elk_lock_state(&r->lock) != ELK_LOCK_IDLE) {
            elkd__release_res(a, r, now, "shutting down");
        }
    }
}

static bool shutdown_done(agent_t *a, uint64_t now)
{
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        if (a->res[i]->shutdown_release_at != 0) {
            return false; /* a holder still has its stop margin */
        }
        if (elkfw_sup_stopping(&a->res[i]->sup)) {
            return false; /* a holder's command is still being stopped */
        }
        if (elkd__lock_busy(a->res[i]) && now - a->shutdown_started < ELKD_SHUTDOWN_GRACE_MS) {
            return false; /* background release rounds still in flight */
        }
    }
    return true;
}

static void handle_signals(agent_t *a, uint64_t now)
{
    struct signalfd_siginfo si;
    while (read(a->signal_fd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            begin_shutdown(a, now, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        } else if (si.ssi_signo == SIGHUP && !a->shutting_down) {
            elkd__reload_config(a, now);
        }
    }
}

/* Local waiters that ran out of time get their answer; lowers *next to the next one. */
static void expire_waiters(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        waiter_t *w = &a->waiters[i];
        if (w->client < 0) {
            continue;
        }
        if (a->clients[w->client].fd < 0 || a->clients[w->client].id != w->client_id) {
            w->client = -1;
        } else if (now >= w->deadline) {
            /* say what stood in the way: another client of this agent */
            const resource_t *r = a->res[w->res];
            char detail[160];
            if (r->owner >= 0 && elkd__owned_by(a, r, r->owner)) {
                snprintf(detail, sizeof detail, "%s; held by pid %d on this agent", r->conf->name,
                         (int)a->clients[r->owner].pid);
            } else {
                snprintf(detail, sizeof detail, "%s", r->conf->name);
            }
            elkd__record_event(a, ELKFW_EV_REFUSED, r, w->client, 0, now, 0, ELK_E_LOCK_TIMEOUT);
            elkd__client_err(a, w->client, ELK_E_LOCK_TIMEOUT, detail);
            a->res[w->res]->metrics.refusals++;
            w->client = -1;
        } else if (w->deadline < *next) {
            *next = w->deadline;
        }
    }
}

/* Shutdown releases once holders had their stop margin; supervised commands being
 * stopped are stepped. */
static void step_resources(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        resource_t *r = a->res[i];
        if (r->shutdown_release_at != 0) {
            if (now >= r->shutdown_release_at || !elkd__owned_by(a, r, r->owner)) {
                elkd__release_when_stopped(a, r, now, "shutting down");
            } else if (r->shutdown_release_at < *next) {
                *next = r->shutdown_release_at;
            }
        }
        elkd__supervise_step(a, r, now, next);
    }
}

/* Holds, takes or waits for nothing (a supervised command's lease stays owned by the
 * connection until it ends): a connection the idle bound may close. */
static bool client_holds_nothing(agent_t *a, int slot)
{
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        if (elkd__owned_by(a, a->res[i], slot)) {
            return false;
        }
    }
    return !elkd__client_pending(a, slot, NULL);
}

/* A complete request line read but not served yet (back-pressure held it). */
static bool client_has_line(const client_t *c)
{
    return c->in.len > c->in.consumed &&
        memchr(c->in.buf + c->in.consumed, '\n', c->in.len - c->in.consumed) != NULL;
}

/* The stall and idle bounds of one client, after its flush: true if it is to be closed
 * (*why says why); lowers *next to when a bound next runs out. */
static bool client_bounds(agent_t *a, int slot, uint64_t now, uint64_t *next, const char **why)
{
    client_t *c = &a->clients[slot];
    uint32_t stall = a->conf.agent.client_stall_timeout_ms;
    uint32_t idle = a->conf.agent.client_idle_timeout_ms;
    if (c->out_stuck_since != 0) {
        uint64_t at = c->out_stuck_since + stall;
        if (now >= at) {
            elkd__client_stalled(a, c, now - c->out_stuck_since, "[agent] client_stall_timeout");
            *why = "stalled";
            return true;
        }
        *next = at < *next ? at : *next;
        return false;
    }
    if (idle == 0 || c->out_len > 0 || c->close_after_flush || !client_holds_nothing(a, slot)) {
        return false;
    }
    if (now >= c->active_at + idle) {
        elkd__log(a, ELK_LOG_INFO,
                  "client %" PRIu64
                  " (uid %u, pid %d, %s) closed: it held nothing and sent nothing "
                  "for %" PRIu64 " ms ([agent] client_idle_timeout)",
                  c->id, (unsigned)c->peer.uid, (int)c->pid, c->peer.exe, now - c->active_at);
        *why = "idle";
        return true;
    }
    *next = c->active_at + idle < *next ? c->active_at + idle : *next;
    return false;
}

/* Write what is queued for each client; close those dropped, stalled, idle or done. */
static void flush_clients(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        client_t *c = &a->clients[i];
        const char *why = "dropped";
        if (c->fd < 0) {
            continue;
        }
        elkd__client_flush(a, (int)i, now);
        if (c->drop || client_bounds(a, (int)i, now, next, &why)) {
            elkd__client_close(a, (int)i, now, why);
        } else if (c->close_after_flush && c->out_len == 0) {
            elkd__client_close(a, (int)i, now, "QUIT");
        } else if (c->out_len < ELKD_OUT_SOFT && client_has_line(c) &&
                   !elkd__client_pending(a, (int)i, NULL)) {
            *next = now; /* room again: serve the requests back-pressure held */
        }
    }
}

/* The service manager's view: READY=1 once the fleet has a quorum, or once the wait for it
 * is over (STATUS= says what is missing); STATUS= whenever the summary changes. The wait
 * covers a fresh fleet's vote-hygiene quarantine too (about a TTL: a server just started
 * cannot be told from one that restarted empty). */
static void notify_state(agent_t *a, uint64_t now, uint64_t *next)
{
    char msg[sizeof a->sd_status + 16];
    size_t i, held = 0, ready = elk_fleet_ready_count(&a->fleet);
    bool quorum = elk_client_ready(&a->client);
    uint64_t by = a->ready_by;
    if (a->notify.fd < 0 || a->shutting_down) {
        return;
    }
    for (i = 0; i < a->fleet.count; i++) {
        uint64_t q = elk_client_node_quarantine(&a->client, i);
        by = q > by ? q : by;
    }
    if (!a->ready_sent && !quorum && now < by) {
        if (by < *next) {
            *next = by;
        }
        return;
    }
    for (i = 0; i < a->n_res; i++) {
        held += a->res[i]->in_use && elk_lock_is_held(&a->res[i]->lock, now);
    }
    snprintf(msg, sizeof msg, "%s%zu/%zu nodes ready%s, %zu lease%s held, %zu client%s",
             a->ready_sent ? "STATUS=" : "READY=1\nSTATUS=", ready, a->fleet.count,
             quorum ? "" : " (no quorum: waiting for the fleet)", held, held == 1 ? "" : "s",
             elkd__clients_connected(a), elkd__clients_connected(a) == 1 ? "" : "s");
    if (strcmp(strstr(msg, "STATUS=") + 7, a->sd_status) != 0 || !a->ready_sent) {
        snprintf(a->sd_status, sizeof a->sd_status, "%s", strstr(msg, "STATUS=") + 7);
        (void)elkfw_notify_send(&a->notify, msg);
        a->ready_sent = true;
    }
}

/* The local clock suspect: the library says once when a spell begins (all connected nodes'
 * clocks jump alike: this gateway's own clock is the likely cause); elkd says when it ends. */
static void local_clock_step(agent_t *a)
{
    bool on = elk_client_local_clock_suspect(&a->client, NULL, NULL) == ELK_E_LOCAL_CLOCK;
    if (a->local_clock_suspect && !on) {
        elkd__log(a, ELK_LOG_INFO,
                  "local clock: the nodes' clocks no longer jump alike (the clock check's "
                  "quarantines still run out as they stand)");
    }
    a->local_clock_suspect = on;
}

/* One step of the agent by the clock: the lock engine, local waiters, resources,
 * client output. Returns the time of the next step, or 0 once a shutdown is complete. */
/* Vote hygiene: the library warns when it quarantines a node; elkd says when the
 * quarantine is over, and wakes up for that moment. */
void elkd__hygiene_step(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    for (i = 0; i < a->fleet.count; i++) {
        uint64_t until = elk_client_node_quarantine(&a->client, i);
        if (until > now) {
            if (a->quarantine_until[i] == 0) {
                elkd__log(a, ELK_LOG_INFO,
                          "node %s (%s:%u): quarantined, no vote for %" PRIu64 " ms (%s)",
                          a->conf.nodes[i].name, a->conf.nodes[i].host,
                          (unsigned)a->conf.nodes[i].port, until - now,
                          elk_client_node_hygiene(&a->client, i));
            }
            a->quarantine_until[i] = until;
            *next = until < *next ? until : *next;
        } else if (a->quarantine_until[i] != 0) {
            a->quarantine_until[i] = 0;
            elkd__log(a, ELK_LOG_INFO, "node %s (%s:%u): quarantine over, it may vote again (%s)",
                      a->conf.nodes[i].name, a->conf.nodes[i].host, (unsigned)a->conf.nodes[i].port,
                      elk_client_node_hygiene(&a->client, i));
        }
    }
    local_clock_step(a);
}

static uint64_t agent_tick(agent_t *a, uint64_t now)
{
    uint64_t next = elk_client_poll(&a->client, now);
    size_t i;
    now = a->clock.now_ms(a->clock.ctx);
    elkd__fair_step(a, now, &next);
    expire_waiters(a, now, &next);
    elkd__sem_step(a, now, &next);
    step_resources(a, now, &next);
    elkd__settle_reloaded(a, now, &next);
    notify_state(a, now, &next);
    elkd__node_summaries(a, now, &next);
    elkd__hygiene_step(a, now, &next);
    elkd__metrics_step(a, now, &next);
    elkfw_lograte_flush(&a->lograte, now, &next, elkd__log_summary, a);
    if (elkd__serve_waiting_requests(a, now)) {
        next = now; /* an ACQUIRE among them queued requests the next poll sends */
    }
    flush_clients(a, now, &next);
    if (a->shutting_down && shutdown_done(a, now)) {
        for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
            if (a->clients[i].fd >= 0) {
                elkd__client_flush(a, (int)i, now);
                elkd__client_close(a, (int)i, now, "agent stopped");
            }
        }
        elkd__log(a, ELK_LOG_INFO, "stopped");
        return 0;
    }
    if (a->shutting_down && next > now + 50) {
        next = now + 50; /* watch the release rounds finish */
    }
    return next;
}

/* What each descriptor in the poll set is. */
typedef enum poll_kind { POLL_SIGNALS, POLL_LISTEN, POLL_CLIENT, POLL_NODE } poll_kind_t;

#define ELKD_POLL_MAX (2 + ELKD_MAX_CLIENTS + CONFIG_ELK_MAX_NODES)

typedef struct poll_set {
    struct pollfd pfd[ELKD_POLL_MAX];
    poll_kind_t kind[ELKD_POLL_MAX];
    int slot[ELKD_POLL_MAX]; /* POLL_CLIENT: the client slot */
    size_t n;
} poll_set_t;

static void poll_add(poll_set_t *ps, int fd, short events, poll_kind_t kind, int slot)
{
    ps->pfd[ps->n].fd = fd;
    ps->pfd[ps->n].events = events;
    ps->pfd[ps->n].revents = 0;
    ps->kind[ps->n] = kind;
    ps->slot[ps->n] = slot;
    ps->n++;
}

static void poll_build(const agent_t *a, poll_set_t *ps)
{
    elk_wait_t waits[CONFIG_ELK_MAX_NODES];
    size_t i, nw;
    ps->n = 0;
    poll_add(ps, a->signal_fd, POLLIN, POLL_SIGNALS, -1);
    if (a->listen_fd >= 0) {
        poll_add(ps, a->listen_fd, POLLIN, POLL_LISTEN, -1);
    }
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        const client_t *c = &a->clients[i];
        /* A buffer full of requests behind an unanswered ACQUIRE: not read (a hang-up is
         * seen once the ACQUIRE is answered, at the latest when its wait ends). */
        bool full = c->in.len == c->in.cap && c->in.consumed == 0;
        /* back-pressure: no reading while its answers wait to be read (a hang-up shows as
         * a failed send) */
        bool read = c->out_len < ELKD_OUT_SOFT &&
            !(full && elkd__client_pending((agent_t *)a, (int)i, NULL));
        short ev = (short)((read ? POLLIN : 0) | (c->out_len > 0 ? POLLOUT : 0));
        if (c->fd >= 0 && ev != 0) {
            poll_add(ps, c->fd, ev, POLL_CLIENT, (int)i);
        }
    }
    nw = elk_fleet_waits(&a->fleet, waits, CONFIG_ELK_MAX_NODES);
    for (i = 0; i < nw; i++) {
        if (waits[i].fd >= 0) {
            poll_add(ps, waits[i].fd,
                     (short)(((waits[i].events & ELK_WAIT_READ) ? POLLIN : 0) |
                             ((waits[i].events & ELK_WAIT_WRITE) ? POLLOUT : 0)),
                     POLL_NODE, -1);
        }
    }
}

static void poll_dispatch(agent_t *a, const poll_set_t *ps, uint64_t now)
{
    size_t i;
    for (i = 0; i < ps->n; i++) {
        const struct pollfd *p = &ps->pfd[i];
        if (p->revents == 0) {
            continue;
        }
        switch (ps->kind[i]) {
        case POLL_SIGNALS:
            handle_signals(a, now);
            break;
        case POLL_LISTEN:
            if (a->listen_fd >= 0) {
                elkd__accept_clients(a, now);
            }
            break;
        case POLL_CLIENT:
            /* the slot may have been closed (and reused) by an earlier entry */
            if (a->clients[ps->slot[i]].fd == p->fd &&
                (p->revents & (POLLIN | POLLHUP | POLLERR))) {
                elkd__client_readable(a, ps->slot[i], now);
            }
            break;
        case POLL_NODE:
            break; /* the next elk_client_poll does the I/O */
        }
    }
}

int elkd__run_loop(agent_t *a)
{
    poll_set_t ps;
    for (;;) {
        uint64_t now = a->clock.now_ms(a->clock.ctx);
        uint64_t next = agent_tick(a, now), wd;
        int timeout;
        if (next == 0) {
            return ELKD_EXIT_OK;
        }
        now = a->clock.now_ms(a->clock.ctx);
        wd = elkfw_notify_watchdog(&a->notify, now); /* pinged only while this loop turns */
        next = wd < next ? wd : next;
        poll_build(a, &ps);
        timeout = next <= now ? 0 : (next - now > 60000u ? 60000 : (int)(next - now));
        if (poll(ps.pfd, ps.n, timeout) < 0 && errno != EINTR) {
            elkd__log(a, ELK_LOG_ERROR, "poll: %s", strerror(errno));
            return ELKD_EXIT_RUNTIME;
        }
        poll_dispatch(a, &ps, a->clock.now_ms(a->clock.ctx));
    }
}
