/* SPDX-License-Identifier: MIT */
/* The control protocol's requests: ACQUIRE, RELEASE, KEEPALIVE, SUPERVISE, STATUS, ... */
#include "agent.h"

void elkd__drop_waiters_of(agent_t *a, int slot)
{
    size_t i;
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        if (a->waiters[i].client == slot) {
            a->waiters[i].client = -1;
        }
    }
}

static bool client_waits_for(agent_t *a, int slot, size_t ri)
{
    size_t i;
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        if (a->waiters[i].client == slot && a->waiters[i].client_id == a->clients[slot].id &&
            a->waiters[i].res == ri) {
            return true;
        }
    }
    return false;
}

/* SUPERVISE: the held lease drives through process group req->pgid (elkfw/supervise.h). */
static void request_supervise(agent_t *a, int slot, resource_t *r, const elkfw_ctl_req_t *req,
                              uint64_t now)
{
    char why_not[200];
    if (!elkd__owned_by(a, r, slot) || r->acquiring || !elk_lock_is_held(&r->lock, now)) {
        elkd__client_err(a, slot, ELK_E_NOT_HELD, r->conf->name);
    } else if (!elkfw_sup_group_allowed((pid_t)req->pgid, a->clients[slot].pid,
                                        a->clients[slot].peer.uid, why_not, sizeof why_not)) {
        elkd__log(a, ELK_LOG_WARN,
                  "%s: client %" PRIu64
                  " (uid %u, pid %d) asked to supervise process group %" PRIu32 ": refused: %s",
                  r->conf->name, a->clients[slot].id, (unsigned)a->clients[slot].peer.uid,
                  (int)a->clients[slot].pid, req->pgid, why_not);
        elkd__client_err(a, slot, ELK_E_SUPERVISE_DENIED, why_not);
    } else {
        elkfw_sup_watch(&r->sup, (pid_t)req->pgid, a->clients[slot].peer.uid);
        elkd__log(a, ELK_LOG_DEBUG, "%s: supervising process group %" PRIu32 " of client %" PRIu64,
                  r->conf->name, req->pgid, a->clients[slot].id);
        elkd__client_send(a, slot, "OK SUPERVISED %s\n", r->conf->name);
    }
}

/* KEEPALIVE: the work behind this connection's lease is alive (elk_lock_keepalive). One
 * that comes after renewal stopped for a missed keepalive is refused: it is too late. */
static void request_keepalive(agent_t *a, int slot, resource_t *r, uint64_t now)
{
    int rc = ELK_E_NOT_HELD;
    if (elkd__owned_by(a, r, slot) && !r->acquiring && elk_lock_is_held(&r->lock, now)) {
        rc = elk_lock_keepalive(&r->lock, now);
    }
    if (rc == ELK_OK && r->keepalive_missed) {
        rc = ELK_E_KEEPALIVE_MISSED;
    }
    if (rc != ELK_OK) {
        elkd__client_err(a, slot, rc, r->conf->name);
    } else {
        elkd__client_send(a, slot, "OK KEEPALIVE %s\n", r->conf->name);
    }
}

/* RELEASE: a lease, or a wait for one, of this connection. */
static void request_release(agent_t *a, int slot, resource_t *r, uint64_t now)
{
    if (elkd__owned_by(a, r, slot)) {
        /* Never let the lease go while the command may still drive. */
        if (r->sup.stage == ELKFW_SUP_WATCHING && elkfw_sup_group_alive(r->sup.pgid) &&
            elkd__stop_command(a, r, now, "its client released it while its command still runs",
                               false)) {
            r->owner = -1;
        } else {
            elkd__release_res(a, r, now, "its client asked");
        }
        elkd__client_send(a, slot, "OK RELEASED %s\n", r->conf->name);
    } else if (client_waits_for(a, slot, r->idx) || a->clients[slot].cancelled_res == r->idx + 1u) {
        elkd__drop_waiters_of(a, slot);
        a->clients[slot].cancelled_res = 0;
        elkd__client_send(a, slot, "OK RELEASED %s\n", r->conf->name);
    } else if (r->owner >= 0 && elkd__owned_by(a, r, r->owner)) {
        char detail[256];
        snprintf(detail, sizeof detail,
                 "%s is held by pid %d on this agent; a lease is released by the connection that "
                 "took it "
                 "(stop that process)",
                 r->conf->name, (int)a->clients[r->owner].pid);
        elkd__client_err(a, slot, ELK_E_NOT_HELD, detail);
    } else {
        elkd__client_err(a, slot, ELK_E_NOT_HELD, r->conf->name);
    }
}

/* ACQUIRE: start a round, or queue behind a local holder, or refuse. */
static void request_acquire(agent_t *a, int slot, resource_t *r, const elkfw_ctl_req_t *req,
                            uint64_t now)
{
    const elkfw_peer_t *peer = &a->clients[slot].peer;
    if (!elkfw_access_allowed(&a->allow[r->idx], peer)) {
        char detail[200];
        elkd__log(a, ELK_LOG_WARN,
                  "%s: refused to client %" PRIu64 " (uid %u, pid %d, %s): not in allow_users or "
                  "allow_groups",
                  r->conf->name, a->clients[slot].id, (unsigned)peer->uid, (int)peer->pid,
                  peer->exe);
        snprintf(detail, sizeof detail, "resource %s, uid %u", r->conf->name, (unsigned)peer->uid);
        elkd__record_event(a, ELKFW_EV_REFUSED, r, slot, 0, now, 0, ELK_E_FORBIDDEN);
        elkd__client_err(a, slot, ELK_E_FORBIDDEN, detail);
        return;
    }
    if (a->shutting_down) {
        elkd__client_err(a, slot, ELK_E_SHUTTING_DOWN, r->conf->name);
        return;
    }
    if (elkd__owned_by(a, r, slot) || client_waits_for(a, slot, r->idx)) {
        elkd__client_err(a, slot, ELK_E_ALREADY_HELD, r->conf->name);
        return;
    }
    if ((r->owner >= 0 && elkd__owned_by(a, r, r->owner)) || elkd__res_orphaned(a, r, now) ||
        !elkd__res_settle(a, r)) {
        /* Another client of this agent has it, or its last holder's command is still being
         * stopped: queue locally, never two rounds from one gateway. */
        size_t i;
        if (req->wait_ms == 0) {
            char detail[256];
            if (elkd__owned_by(a, r, r->owner)) {
                snprintf(detail, sizeof detail, "%s is held by pid %d on this agent", r->conf->name,
                         (int)a->clients[r->owner].pid);
            } else if (r->has_pending) {
                snprintf(detail, sizeof detail,
                         "%s: its new settings from a reload apply once the last release "
                         "round ends; retry or wait",
                         r->conf->name);
            } else {
                snprintf(detail, sizeof detail,
                         "%s: its last holder on this agent left; its command is being "
                         "stopped or its lease is running out",
                         r->conf->name);
            }
            elkd__record_event(a, ELKFW_EV_REFUSED, r, slot, 0, now, 0, ELK_E_LOCK_BUSY);
            elkd__client_err(a, slot, ELK_E_LOCK_BUSY, detail);
            r->metrics.refusals++;
            return;
        }
        for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
            if (a->waiters[i].client < 0) {
                a->waiters[i].client = slot;
                a->waiters[i].client_id = a->clients[slot].id;
                a->waiters[i].res = r->idx;
                a->waiters[i].deadline = now + req->wait_ms;
                a->waiters[i].wait_ms = req->wait_ms;
                a->waiters[i].keepalive_ms = req->keepalive_ms;
                a->waiters[i].seq = ++a->next_waiter_seq;
                elkd__record_event(a, ELKFW_EV_WAIT, r, slot, 0, now, 0, ELK_OK);
                return;
            }
        }
        elkd__client_err(a, slot, ELK_E_AGENT_FULL, "too many local waiters");
        return;
    }
    r->owner = -1;
    if (req->wait_ms > 0) {
        elkd__record_event(a, ELKFW_EV_WAIT, r, slot, 0, now, 0, ELK_OK);
    }
    elkd__start_acquire(a, r, slot, req->wait_ms, req->keepalive_ms, now);
}

void elkd__handle_request(agent_t *a, int slot, const char *line, size_t len, uint64_t now)
{
    elkfw_ctl_req_t req;
    const char *why = "";
    resource_t *r;
    int rc = elkfw_ctl_parse_request(line, len, elkfw_resource_name_max(&a->conf), &req, &why);
    if (rc != ELK_OK) {
        elkd__client_err(a, slot, rc, why);
        return;
    }
    switch (req.cmd) {
    case ELKFW_CTL_PING:
        elkd__client_send(a, slot, "OK PONG\n");
        return;
    case ELKFW_CTL_HELP:
        elkd__client_send(
            a, slot,
            "OK HELP ACQUIRE <resource|semaphore> [<wait>] [keepalive=<interval>] | RELEASE "
            "<resource> | KEEPALIVE <resource> | SUPERVISE <resource> <pgid> | "
            "STATUS [JSON|METRICS] | PING | QUIT\n");
        return;
    case ELKFW_CTL_QUIT:
        elkd__client_send(a, slot, "OK BYE\n");
        a->clients[slot].close_after_flush = true;
        return;
    case ELKFW_CTL_STATUS:
    case ELKFW_CTL_STATUS_JSON:
        elkd__send_status(a, slot, req.cmd == ELKFW_CTL_STATUS_JSON, now);
        return;
    case ELKFW_CTL_STATUS_METRICS:
        elkd__send_metrics(a, slot, now);
        return;
    case ELKFW_CTL_ACQUIRE:
    case ELKFW_CTL_RELEASE:
    case ELKFW_CTL_SUPERVISE:
    case ELKFW_CTL_KEEPALIVE:
        break;
    }
    r = elkd__find_res(a, req.resource);
    if (r == NULL && elkd__is_semaphore(a, req.resource)) {
        if (req.cmd == ELKFW_CTL_ACQUIRE) {
            elkd__sem_acquire(a, slot, &req, now);
            return;
        }
        /* NAME stands for the permit this connection has (it has one at most) */
        r = elkd__sem_permit_of(a, req.resource, slot);
        if (r == NULL && req.cmd == ELKFW_CTL_RELEASE && a->clients[slot].sem.cancelled) {
            a->clients[slot].sem.cancelled = false;
            elkd__client_send(a, slot, "OK RELEASED %s\n", req.resource);
            return;
        }
        if (r == NULL) {
            elkd__client_err(a, slot, ELK_E_NOT_HELD, req.resource);
            return;
        }
    }
    if (r == NULL) {
        elkd__client_err(a, slot, ELK_E_RESOURCE_UNKNOWN, req.resource);
        return;
    }
    if (req.cmd == ELKFW_CTL_ACQUIRE && r->own.permits != 0) {
        char detail[200];
        snprintf(detail, sizeof detail,
                 "%s is a permit of semaphore %.*s: ACQUIRE %.*s takes a free one", req.resource,
                 (int)elkfw_permit_sem_len(req.resource), req.resource,
                 (int)elkfw_permit_sem_len(req.resource), req.resource);
        elkd__client_err(a, slot, ELK_E_INVALID_ARG, detail);
        return;
    }
    if (req.cmd == ELKFW_CTL_SUPERVISE) {
        request_supervise(a, slot, r, &req, now);
    } else if (req.cmd == ELKFW_CTL_KEEPALIVE) {
        request_keepalive(a, slot, r, now);
    } else if (req.cmd == ELKFW_CTL_RELEASE) {
        request_release(a, slot, r, now);
    } else {
        request_acquire(a, slot, r, &req, now);
    }
}
