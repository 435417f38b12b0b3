/* SPDX-License-Identifier: MIT */
/*
 * Semaphores ([semaphore NAME], permits = N): the configuration serves them as N resources
 * "NAME#1".."NAME#N", the names lib/sem gives its permits (same keys on the servers, so a
 * gateway and an MCU running lib/sem share one budget). Everything a resource has (local
 * release at disconnect, SUPERVISE, keepalive, metrics, reload) each permit has as it is.
 * What is here: ACQUIRE NAME takes any one free permit (docs/control-protocol.md,
 * "Semaphores"), and the names NAME and NAME#k are mapped for the other requests.
 *
 * An ACQUIRE tries each permit no local client holds once, one round each without waiting,
 * from a permit chosen at random (the agent's entropy), so gateways do not all queue on
 * permit 1. A permit held by a local client is never asked for: never two rounds from one
 * gateway on one permit, and never a held permit handed to a second local client. When
 * every permit was busy and the client may wait, the pass is tried again after a pause of
 * wait_min..wait_max (at once when a local permit comes free), until the wait ends.
 */
#include "agent.h"

/* The permits of semaphore name (len bytes) being served: out[k - 1] is permit k, or NULL
 * (removed by a reload). Returns the highest permit found (0: no such semaphore). */
static size_t sem_permits(agent_t *a, const char *name, size_t len, resource_t **out)
{
    size_t i, n = 0;
    memset(out, 0, ELKFW_MAX_PERMITS * sizeof *out);
    for (i = 0; i < a->n_res; i++) {
        resource_t *r = a->res[i];
        uint32_t k;
        if (!r->in_use || r->removing || r->own.permits == 0) {
            continue;
        }
        k = r->own.permit;
        if (k == 0 || k > ELKFW_MAX_PERMITS || elkfw_permit_sem_len(r->own.name) != len ||
            memcmp(r->own.name, name, len) != 0) {
            continue;
        }
        out[k - 1u] = r;
        n = k > n ? k : n;
    }
    return n;
}

bool elkd__is_semaphore(agent_t *a, const char *name)
{
    resource_t *p[ELKFW_MAX_PERMITS];
    return strchr(name, '#') == NULL && sem_permits(a, name, strlen(name), p) > 0;
}

/* The permit of semaphore name that slot holds or is acquiring, or NULL. */
resource_t *elkd__sem_permit_of(agent_t *a, const char *name, int slot)
{
    resource_t *p[ELKFW_MAX_PERMITS];
    size_t k, n = sem_permits(a, name, strlen(name), p);
    for (k = 0; k < n; k++) {
        if (p[k] != NULL && elkd__owned_by(a, p[k], slot)) {
            return p[k];
        }
    }
    return NULL;
}

/* A permit another local client has, or whose last holder's command is being stopped, or
 * that a reload is settling: not asked for (never two holders from one gateway). */
static bool permit_locally_busy(agent_t *a, resource_t *r, uint64_t now)
{
    return (r->owner >= 0 && elkd__owned_by(a, r, r->owner)) || r->acquiring ||
        elkd__res_orphaned(a, r, now) || !elkd__res_settle(a, r);
}

static uint32_t random_below(agent_t *a, uint32_t n)
{
    uint32_t v = 0;
    if (n <= 1u || a->entropy.fill(a->entropy.ctx, (uint8_t *)&v, sizeof v) != ELK_OK) {
        return 0;
    }
    return v % n;
}

/* The pass found every permit busy: the answer (no wait, or the wait is over), or a pause
 * before the next pass. */
static void sem_pass_over(agent_t *a, int slot, uint64_t now, const resource_t *first)
{
    elkd_sem_acq_t *s = &a->clients[slot].sem;
    char detail[400];
    if (s->deadline != 0 && now < s->deadline) {
        uint32_t lo = first->conf->wait_min_ms, hi = first->conf->wait_max_ms;
        uint64_t pause = lo + random_below(a, hi > lo ? hi - lo + 1u : 1u);
        s->next_pass = now + pause < s->deadline ? now + pause : s->deadline;
        return;
    }
    s->active = false;
    snprintf(detail, sizeof detail,
             "%s: every permit busy, %" PRIu32 " of %" PRIu32 " held on this agent%s%s", s->name,
             s->local_busy, s->seen, s->last_err != ELK_OK ? "; last round: " : "",
             s->last_err != ELK_OK ? elk_err_name(s->last_err) : "");
    if (s->deadline != 0) {
        /* as a resource's timed-out wait: the code says the wait ended, the text why */
        elkd__client_err(a, slot, ELK_E_LOCK_TIMEOUT, detail);
    } else {
        elkd__client_err(a, slot, ELK_E_PERMITS_TAKEN, detail);
    }
}

/* Go on with slot's pass: the next permit no local client has gets a round; none left
 * ends the pass. */
void elkd__sem_pass(agent_t *a, int slot, uint64_t now)
{
    elkd_sem_acq_t *s = &a->clients[slot].sem;
    resource_t *p[ELKFW_MAX_PERMITS], *first = NULL;
    size_t n = sem_permits(a, s->name, strlen(s->name), p), k;
    if (a->shutting_down) {
        s->active = false;
        elkd__client_err(a, slot, ELK_E_SHUTTING_DOWN, s->name);
        return;
    }
    for (k = n; k > 0; k--) {
        first = p[k - 1u] != NULL ? p[k - 1u] : first;
    }
    s->next_pass = 0;
    s->trying = 0;
    while (s->tried < n) {
        resource_t *r = p[(s->start + s->tried) % n];
        s->tried++;
        if (r == NULL) {
            continue;
        }
        s->seen++;
        if (permit_locally_busy(a, r, now)) {
            s->local_busy++;
            continue;
        }
        s->trying = r->idx + 1u;
        r->owner = -1;
        elkd__start_acquire(a, r, slot, 0, s->keepalive_ms, now);
        if (!r->acquiring) {
            s->active = false; /* answered at once: a grant, or an error */
        }
        return;
    }
    if (first == NULL) {
        s->active = false;
        elkd__client_err(a, slot, ELK_E_RESOURCE_UNKNOWN, s->name);
        return;
    }
    sem_pass_over(a, slot, now, first);
    if (s->active) {
        s->start = random_below(a, (uint32_t)n);
        s->tried = s->seen = s->local_busy = 0;
    }
}

/* ACQUIRE NAME [wait] of a semaphore. */
void elkd__sem_acquire(agent_t *a, int slot, const elkfw_ctl_req_t *req, uint64_t now)
{
    elkd_sem_acq_t *s = &a->clients[slot].sem;
    resource_t *p[ELKFW_MAX_PERMITS];
    size_t n = sem_permits(a, req->resource, strlen(req->resource), p), k;
    for (k = 0; k < n && p[k] == NULL; k++) {
    }
    if (k < n && !elkfw_access_allowed(&a->allow[p[k]->idx], &a->clients[slot].peer)) {
        char detail[200];
        elkd__log(a, ELK_LOG_WARN,
                  "%s: refused to client %" PRIu64 " (uid %u, pid %d): not in allow_users or "
                  "allow_groups",
                  req->resource, a->clients[slot].id, (unsigned)a->clients[slot].peer.uid,
                  (int)a->clients[slot].pid);
        snprintf(detail, sizeof detail, "semaphore %s, uid %u", req->resource,
                 (unsigned)a->clients[slot].peer.uid);
        elkd__client_err(a, slot, ELK_E_FORBIDDEN, detail);
        return;
    }
    if (a->shutting_down) {
        elkd__client_err(a, slot, ELK_E_SHUTTING_DOWN, req->resource);
        return;
    }
    if (elkd__sem_permit_of(a, req->resource, slot) != NULL) {
        /* one connection, one permit: a second would let one holder count twice */
        elkd__client_err(a, slot, ELK_E_ALREADY_HELD, req->resource);
        return;
    }
    memset(s, 0, sizeof *s);
    s->active = true;
    snprintf(s->name, sizeof s->name, "%s", req->resource);
    s->deadline = req->wait_ms > 0 ? now + req->wait_ms : 0;
    s->keepalive_ms = req->keepalive_ms;
    s->start = random_below(a, (uint32_t)n);
    elkd__sem_pass(a, slot, now);
}

/* A permit's round for slot's pass failed: not the client's answer yet, the pass goes on.
 * Returns false when r's round was not one of a pass (the caller answers as usual). */
bool elkd__sem_round_failed(agent_t *a, int slot, resource_t *r, int err, uint64_t now)
{
    elkd_sem_acq_t *s;
    if (slot < 0 || !a->clients[slot].sem.active || a->clients[slot].sem.trying != r->idx + 1u) {
        return false;
    }
    s = &a->clients[slot].sem;
    s->last_err = err;
    r->owner = -1;
    elkd__hand_to_next_waiter(a, r, now);
    elkd__sem_pass(a, slot, now);
    return true;
}

/* r was granted to slot: its pass is over. */
void elkd__sem_granted(agent_t *a, int slot, const resource_t *r)
{
    if (slot >= 0 && a->clients[slot].sem.active && a->clients[slot].sem.trying == r->idx + 1u) {
        a->clients[slot].sem.active = false;
    }
}

/* A permit came free on this agent: the passes paused on its semaphore go on now. */
void elkd__sem_permit_free(agent_t *a, const resource_t *r, uint64_t now)
{
    size_t i, len;
    if (r->own.permits == 0) {
        return;
    }
    len = elkfw_permit_sem_len(r->own.name);
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        elkd_sem_acq_t *s = &a->clients[i].sem;
        if (a->clients[i].fd >= 0 && s->active && s->next_pass != 0 && strlen(s->name) == len &&
            memcmp(s->name, r->own.name, len) == 0) {
            s->next_pass = now;
        }
    }
}

/* Every tick: passes whose pause is over go on; lowers *next to the next one. */
void elkd__sem_step(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        elkd_sem_acq_t *s = &a->clients[i].sem;
        if (a->clients[i].fd < 0 || !s->active || s->next_pass == 0) {
            continue;
        }
        if (a->shutting_down) {
            s->active = false;
            elkd__client_err(a, (int)i, ELK_E_SHUTTING_DOWN, s->name);
        } else if (now >= s->next_pass) {
            elkd__sem_pass(a, (int)i, now);
        }
        if (s->active && s->next_pass != 0 && s->next_pass < *next) {
            *next = s->next_pass;
        }
    }
}

/* A RELEASE of the semaphore whose ACQUIRE is in progress came: the ACQUIRE is answered
 * ELK_E_CANCELLED (a round running is given up), and that RELEASE, in its turn, answers
 * OK RELEASED. */
void elkd__sem_cancel(agent_t *a, int slot, uint64_t now)
{
    elkd_sem_acq_t *s = &a->clients[slot].sem;
    if (s->trying != 0 && s->trying <= a->n_res) {
        resource_t *r = a->res[s->trying - 1u];
        if (elkd__owned_by(a, r, slot) && r->acquiring) {
            elkd__release_res(a, r, now, "its client cancelled the acquire");
        }
    }
    s->active = false;
    s->cancelled = true;
    elkd__client_err(a, slot, ELK_E_CANCELLED, s->name);
}
