/* SPDX-License-Identifier: MIT */
/* Connections on the control socket: accept, read, serve in order, close. */
#include "agent.h"

/* The connection holding r ends. A plain client that exited took its actuator work
 * with it: release. But the command elk run supervises may still drive (elk run was
 * killed, or dropped for not reading): stop it first. And a client dropped for not
 * reading, with no command known, may still be driving: never release under it; let
 * the lease run out at the deadline it was given. */
static void lease_after_client(agent_t *a, resource_t *r, const client_t *c, uint64_t now,
                               const char *why)
{
    char what[160];
    if (r->acquiring) {
        /* Cancel the round; its partial locks are released by the library. */
        elkd__release_res(a, r, now, "its client disconnected while acquiring");
        return;
    }
    snprintf(what, sizeof what, "client %" PRIu64 " (pid %d) %s while holding it", c->id,
             (int)c->pid, c->unresponsive ? "stopped reading its replies" : why);
    if (elkd__stop_command(a, r, now, what, false)) {
        r->owner = -1;
        return;
    }
    if (c->unresponsive && elk_lock_is_held(&r->lock, now)) {
        elkd__log(a, ELK_LOG_WARN,
                  "%s: %s; it may still be driving: the lease is no longer renewed and runs out in "
                  "%" PRIu32 " ms instead of being released",
                  r->conf->name, what, elk_lock_validity(&r->lock, now));
        (void)elk_lock_abandon(&r->lock, now);
        r->owner = -1;
        r->shutdown_release_at = 0;
        return;
    }
    elkd__log(a, ELK_LOG_INFO, "%s: %s", r->conf->name, what);
    elkd__release_res(a, r, now, "its client disconnected");
}

void elkd__client_close(agent_t *a, int slot, uint64_t now, const char *why)
{
    client_t *c = &a->clients[slot];
    size_t i;
    if (c->fd < 0) {
        return;
    }
    for (i = 0; i < a->n_res; i++) {
        resource_t *r = a->res[i];
        if (elkd__owned_by(a, r, slot)) {
            lease_after_client(a, r, c, now, why);
        }
    }
    elkd__drop_waiters_of(a, slot);
    memset(&c->sem, 0, sizeof c->sem);
    elkd__log(a, ELK_LOG_DEBUG, "client %" PRIu64 " (pid %d) closed: %s", c->id, (int)c->pid, why);
    close(c->fd);
    c->fd = -1;
    free(c->out);
    c->out = NULL;
    c->out_len = c->out_cap = 0;
    c->out_stuck_since = 0;
    c->drop = false;
    c->unresponsive = false;
    c->close_after_flush = false;
}

/* One account must not be able to lock every other out: by default half the slots. */
static size_t max_clients_per_uid(const agent_t *a)
{
    uint32_t m = a->conf.agent.max_clients_per_uid;
    return m != 0 ? m : ELKD_MAX_CLIENTS / 2;
}

void elkd__accept_clients(agent_t *a, uint64_t now)
{
    for (;;) {
        int fd = accept4(a->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        int slot;
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                elkd__log(a, ELK_LOG_WARN, "accept on the control socket failed: %s",
                          strerror(errno));
            }
            return;
        }
        elkfw_peer_t peer;
        size_t same_uid = 0;
        const char *why = NULL;
        int free_slot = -1;
        if (elkfw_access_peer(fd, &peer) != ELK_OK) {
            elkd__log(a, ELK_LOG_WARN,
                      "control socket: no peer credentials: %s; connection refused",
                      strerror(errno));
            close(fd);
            continue;
        }
        for (slot = 0; slot < ELKD_MAX_CLIENTS; slot++) {
            if (a->clients[slot].fd < 0) {
                free_slot = free_slot < 0 ? slot : free_slot;
            } else if (a->clients[slot].peer.uid == peer.uid) {
                same_uid++;
            }
        }
        slot = free_slot;
        if (a->shutting_down) {
            why = "";
        } else if (slot < 0) {
            why = "all client slots are taken";
        } else if (same_uid >= max_clients_per_uid(a)) {
            why = "this user has its share of the client slots (max_clients_per_uid in [agent])";
        }
        if (why != NULL) {
            int code = a->shutting_down ? ELK_E_SHUTTING_DOWN : ELK_E_AGENT_FULL;
            char msg[300];
            int n = snprintf(msg, sizeof msg, "ERR %s %s%s%s\n", elk_err_name(code),
                             elk_err_message(code), why[0] ? ": " : "", why);
            /* Answered before closing: the client reads why instead of a broken pipe. */
            (void)!send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (!a->shutting_down) {
                a->full_refusals++;
                elkd__log(a, ELK_LOG_WARN, "connection of uid %u (pid %d, %s) refused: %s",
                          (unsigned)peer.uid, (int)peer.pid, peer.exe, why);
            }
            close(fd);
            continue;
        }
        client_t *c = &a->clients[slot];
        c->fd = fd;
        c->peer = peer;
        c->pid = peer.pid;
        c->id = ++a->next_client_id;
        c->out_len = 0;
        c->out_stuck_since = 0;
        c->active_at = now;
        c->drop = false;
        c->unresponsive = false;
        c->close_after_flush = false;
        c->cancelled_res = 0;
        memset(&c->sem, 0, sizeof c->sem);
        elkfw_linebuf_init(&c->in, c->in_store, sizeof c->in_store);
        elkd__log(a, ELK_LOG_DEBUG, "client %" PRIu64 " (uid %u, pid %d, %s) connected", c->id,
                  (unsigned)peer.uid, (int)c->pid, peer.exe);
    }
}

/* The ACQUIRE of this connection that has no answer yet (a round running, or queued
 * behind a local holder); its resource index in *ri (may be NULL). */
bool elkd__client_pending(agent_t *a, int slot, size_t *ri)
{
    size_t i, dummy;
    ri = ri != NULL ? ri : &dummy;
    if (a->clients[slot].sem.active) {
        *ri = SIZE_MAX; /* a semaphore's: its name is in clients[slot].sem */
        return true;
    }
    for (i = 0; a->n_acquiring > 0 && i < a->n_res; i++) {
        if (a->res[i]->acquiring && elkd__owned_by(a, a->res[i], slot)) {
            *ri = i;
            return true;
        }
    }
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        if (a->waiters[i].client == slot && a->waiters[i].client_id == a->clients[slot].id) {
            *ri = a->waiters[i].res;
            return true;
        }
    }
    return false;
}

/* A complete "RELEASE <resource ri>" among the requests not yet served? */
static bool release_queued(agent_t *a, int slot, size_t ri)
{
    const char *name = ri == SIZE_MAX ? a->clients[slot].sem.name : a->res[ri]->conf->name;
    return elkfw_linebuf_has_request(&a->clients[slot].in, ELKFW_CTL_RELEASE, name,
                                     elkfw_resource_name_max(&a->conf));
}

/* A RELEASE overtook its ACQUIRE: the ACQUIRE's answer is ELK_E_CANCELLED, the round (or
 * the local wait) is given up, and that RELEASE, in its turn, answers OK RELEASED. */
static void cancel_acquire(agent_t *a, int slot, size_t ri, uint64_t now)
{
    resource_t *r;
    if (ri == SIZE_MAX) {
        elkd__sem_cancel(a, slot, now);
        return;
    }
    r = a->res[ri];
    if (elkd__owned_by(a, r, slot) && r->acquiring) {
        elkd__release_res(a, r, now, "its client cancelled the acquire");
    } else {
        size_t i;
        for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
            if (a->waiters[i].client == slot && a->waiters[i].res == ri) {
                a->waiters[i].client = -1;
            }
        }
    }
    elkd__client_err(a, slot, ELK_E_CANCELLED, r->conf->name);
    a->clients[slot].cancelled_res = ri + 1u;
}

/* Answer the requests received, in order, one answer each: behind an ACQUIRE that has no
 * answer yet they wait (docs/control-protocol.md), but a RELEASE of its resource cancels
 * it at once. Returns true if a request was served. */
static bool serve_lines(agent_t *a, int slot, uint64_t now)
{
    client_t *c = &a->clients[slot];
    bool served = false;
    for (;;) {
        const char *line;
        size_t len, ri;
        int rc;
        if (c->fd < 0 || c->drop || c->out_len >= ELKD_OUT_SOFT) {
            return served; /* back-pressure: the rest waits until the client has read */
        }
        /* each request at its own time: a long run of them must not judge a lease (held?
         * keepalive in time?) by the time the first one was read */
        now = a->clock.now_ms(a->clock.ctx);
        if (elkd__client_pending(a, slot, &ri)) {
            if (!release_queued(a, slot, ri)) {
                return served;
            }
            cancel_acquire(a, slot, ri, now);
        }
        rc = elkfw_linebuf_next(&c->in, &line, &len);
        if (rc == 0) {
            return served;
        }
        served = true;
        if (rc == ELK_E_CTL_TOO_LONG) {
            elkd__client_err(a, slot, ELK_E_CTL_TOO_LONG, "");
        } else if (!c->close_after_flush) {
            elkd__handle_request(a, slot, line, len, now);
        }
    }
}

/* Requests that waited behind an ACQUIRE answered since: serve them now. */
bool elkd__serve_waiting_requests(agent_t *a, uint64_t now)
{
    size_t i;
    bool served = false;
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        if (a->clients[i].fd >= 0 && a->clients[i].in.len > a->clients[i].in.consumed) {
            served |= serve_lines(a, (int)i, now);
        }
    }
    return served;
}

void elkd__client_readable(agent_t *a, int slot, uint64_t now)
{
    client_t *c = &a->clients[slot];
    for (;;) {
        size_t avail;
        char *sp = elkfw_linebuf_space(&c->in, &avail);
        ssize_t n;
        const char *line;
        size_t len;
        int rc;
        if (c->out_len >= ELKD_OUT_SOFT || c->drop) {
            return; /* back-pressure: read on once the client has read its answers */
        }
        if (avail == 0 && elkd__client_pending(a, slot, NULL)) {
            return; /* full of requests waiting behind an ACQUIRE */
        }
        if (avail == 0) {
            /* linebuf_next below reports the overlong line and makes room */
            rc = elkfw_linebuf_next(&c->in, &line, &len);
            if (rc == ELK_E_CTL_TOO_LONG) {
                elkd__client_err(a, slot, ELK_E_CTL_TOO_LONG, "");
            }
            continue;
        }
        n = recv(c->fd, sp, avail, MSG_DONTWAIT);
        if (n == 0) {
            elkd__client_close(a, slot, now, "disconnected");
            return;
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                elkd__client_close(a, slot, now, strerror(errno));
            }
            return;
        }
        elkfw_linebuf_commit(&c->in, (size_t)n);
        c->active_at = now;
        serve_lines(a, slot, now);
        if (c->fd < 0 || elkd__client_pending(a, slot, NULL)) {
            return; /* requests wait in c->in behind the ACQUIRE; read more when it is answered */
        }
    }
}
