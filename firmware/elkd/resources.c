/* SPDX-License-Identifier: MIT */
/* Resources and their leases: grants, the event record, hand-over to the next waiter,
 * release and the supervision of the holder's command. */
#include "agent.h"

/* Room for n resource slots (the table of pointers and the allow lists grow; the slots
 * themselves never move, as the lock client points at their locks). False: no memory. */
bool elkd__res_reserve(agent_t *a, size_t n)
{
    resource_t **res;
    elkfw_allow_t *allow;
    if (n <= a->res_cap) {
        return true;
    }
    res = realloc(a->res, n * sizeof *res);
    if (res == NULL) {
        return false;
    }
    memset(res + a->res_cap, 0, (n - a->res_cap) * sizeof *res);
    a->res = res;
    allow = realloc(a->allow, n * sizeof *allow);
    if (allow == NULL) {
        return false;
    }
    memset(allow + a->res_cap, 0, (n - a->res_cap) * sizeof *allow);
    a->allow = allow;
    a->res_cap = n;
    return true;
}

/* Slot k zeroed for a resource, taken from the heap the first time; NULL: no memory, or
 * k is beyond the room elkd__res_reserve made. */
resource_t *elkd__res_slot(agent_t *a, size_t k)
{
    resource_t *r;
    if (k >= a->res_cap) {
        return NULL;
    }
    r = a->res[k];
    if (r == NULL && (r = malloc(sizeof *r)) == NULL) {
        return NULL;
    }
    memset(r, 0, sizeof *r);
    r->idx = k;
    a->res[k] = r;
    return r;
}

/* Every slot given back (their locks are no longer the client's): the fleet is set up
 * again, or elkd ends. The tables keep their room. */
void elkd__res_free_all(agent_t *a)
{
    size_t i;
    for (i = 0; i < a->res_cap; i++) {
        free(a->res[i]);
        a->res[i] = NULL;
    }
    a->n_res = 0;
    a->n_acquiring = 0;
}

/* r->acquiring, and the count of resources with it set (elkd__client_pending looks
 * through the resources only while there is one: not on every turn of the loop). */
void elkd__set_acquiring(agent_t *a, resource_t *r, bool on)
{
    if (r->acquiring != on) {
        a->n_acquiring += on ? 1u : (size_t)-1;
        r->acquiring = on;
    }
}

#if CONFIG_ELK_FAIR
/* resource_t's union: &r->lock must be the lock behind r->fair. */
_Static_assert(offsetof(elk_fair_t, lock) == 0, "elk_fair_t no longer starts with its lock");

/* The fair layer's events are the lock's (plus ACQUIRE_FAILED when a wait ends in the
 * queue): one handler serves both. */
static void on_fair_event(void *user, elk_fair_t *fair, const elk_lock_event_t *ev)
{
    elkd__on_lock_event(user, elk_fair_lock(fair), ev);
}
#endif

/* r's lock registered with the client for r->own (fair = on: behind a fair handle, the
 * ticket's lease CONFIG_ELK_FAIR_TICKET_TTL_MS). Returns as elk_lock_init. */
int elkd__lock_init(agent_t *a, resource_t *r, const elk_lock_config_t *lc)
{
    r->fair_on = false;
#if CONFIG_ELK_FAIR
    if (r->own.fair) {
        int rc = elk_fair_init(&r->fair, &a->client, r->own.name, lc, 0u, on_fair_event, r);
        r->fair_on = rc == ELK_OK;
        return rc;
    }
#endif
    return elk_lock_init(&r->lock, &a->client, r->own.name, lc, elkd__on_lock_event, r);
}

/* Unregister r's lock (ELK_E_STATE while it waits, holds or has requests in flight). */
int elkd__lock_deinit(resource_t *r)
{
#if CONFIG_ELK_FAIR
    if (r->fair_on) {
        return elk_fair_deinit(&r->fair);
    }
#endif
    return elk_lock_deinit(&r->lock);
}

/* Requests in flight on r (the queue's too): its slot must stay. */
bool elkd__lock_busy(const resource_t *r)
{
#if CONFIG_ELK_FAIR
    if (r->fair_on) {
        return elk_fair_busy(&r->fair);
    }
#endif
    return elk_lock_busy(&r->lock);
}

/* Release r's hold or cancel its acquire (a fair wait gives its ticket back). Returns as
 * elk_lock_release. */
int elkd__lock_release(resource_t *r, uint64_t now)
{
#if CONFIG_ELK_FAIR
    if (r->fair_on) {
        return elk_fair_release(&r->fair, now);
    }
#endif
    return elk_lock_release(&r->lock, now);
}

/* The fair layer of every fair resource driven (after elk_client_poll, whose replies it
 * reads); *next lowered to its next timer. */
void elkd__fair_step(agent_t *a, uint64_t now, uint64_t *next)
{
#if CONFIG_ELK_FAIR
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        resource_t *r = a->res[i];
        if (r->in_use && r->fair_on) {
            uint64_t at = elk_fair_poll(&r->fair, now);
            *next = at < *next ? at : *next;
        }
    }
#else
    (void)a;
    (void)now;
    (void)next;
#endif
}

resource_t *elkd__find_res(agent_t *a, const char *name)
{
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        if (a->res[i]->in_use && !a->res[i]->removing && strcmp(a->res[i]->conf->name, name) == 0) {
            return a->res[i];
        }
    }
    return NULL;
}

bool elkd__owned_by(agent_t *a, const resource_t *r, int slot)
{
    return r->owner == slot && slot >= 0 && a->clients[slot].fd >= 0 &&
        a->clients[slot].id == r->owner_id;
}

/* A holder's command is being stopped (its client left), or a lease nobody supervises
 * is left to run out: no one else on this gateway may take the resource yet. */
bool elkd__res_orphaned(agent_t *a, const resource_t *r, uint64_t now)
{
    if (elkfw_sup_stopping(&r->sup)) {
        return true;
    }
    return !elkd__owned_by(a, r, r->owner) && elk_lock_is_held(&r->lock, now);
}

/* The grant line: OK ACQUIRED, EVENT RENEWED and EVENT RECOVERED have one shape. */
void elkd__send_grant(agent_t *a, int slot, const char *what, const resource_t *r, uint64_t token,
                      uint32_t validity_ms, uint64_t deadline)
{
    /* The absolute deadline (our clock is CLOCK_BOOTTIME, which every process on this
     * host shares) lets the client stop in time however late it reads this line. */
    elkd__client_send(
        a, slot, "%s %s %" PRIu64 " %" PRIu32 " %" PRIu32 " deadline_boottime_ms=%" PRIu64 "\n",
        what, r->conf->name, token, validity_ms, r->conf->stop_margin_ms, deadline);
}

/* ------------------------------------------------------------------ event record */

/* One record of the lease event log (events_file): who (slot's peer, if connected), what,
 * when; deadline on our clock, 0 when none; err ELK_OK when no cause. */
void elkd__record_event(agent_t *a, elkfw_ev_kind_t kind, const resource_t *r, int slot,
                        uint64_t token, uint64_t now, uint64_t deadline, int err)
{
    elkfw_event_t ev;
    if (a->evlog.fd < 0) {
        return;
    }
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.token = token;
    ev.uid = -1;
    ev.pid = -1;
    snprintf(ev.gateway, sizeof ev.gateway, "%.63s", a->gateway_id);
    snprintf(ev.resource, sizeof ev.resource, "%.63s", r->conf->name);
    if (slot >= 0 && a->clients[slot].fd >= 0) {
        const char *exe = a->clients[slot].peer.exe, *base = strrchr(exe, '/');
        ev.uid = (int64_t)a->clients[slot].peer.uid;
        ev.pid = (int64_t)a->clients[slot].pid;
        snprintf(ev.cmd, sizeof ev.cmd, "%.63s", base ? base + 1 : exe);
    }
    if (err != ELK_OK) {
        snprintf(ev.cause, sizeof ev.cause, "%s", elk_err_name(err));
    }
    elkfw_event_stamp(&ev, now, deadline);
    if (!elkfw_evlog_append(&a->evlog, &ev) && a->evlog.dropped == 1) {
        elkd__log(a, ELK_LOG_WARN, "events_file %s: cannot write a record: %s (counted, said once)",
                  a->conf.agent.events_file, strerror(errno));
    }
}

/* The library's lease events that go into the record (renewals that succeed do not: one
 * per TTL/3 would push the interesting ones out of the ring). */
void elkd__record_lock_event(agent_t *a, const resource_t *r, int slot, const elk_lock_event_t *ev)
{
    static const int8_t kinds[] = {
        [ELK_LOCK_EV_ACQUIRED] = ELKFW_EV_GRANT,
        [ELK_LOCK_EV_ACQUIRE_FAILED] = ELKFW_EV_REFUSED,
        [ELK_LOCK_EV_RENEW_FAILED] = ELKFW_EV_RENEW_FAILED,
        [ELK_LOCK_EV_RENEW_STOPPED] = ELKFW_EV_RENEW_FAILED,
        [ELK_LOCK_EV_SUSPECT] = ELKFW_EV_SUSPECT,
        [ELK_LOCK_EV_RECOVERED] = ELKFW_EV_RECOVERED,
        [ELK_LOCK_EV_LOST] = ELKFW_EV_LOST,
        [ELK_LOCK_EV_RETRY] = -1,
        [ELK_LOCK_EV_RENEWED] = -1,
        [ELK_LOCK_EV_RELEASED] = -1,
    };
    if ((size_t)ev->type >= sizeof kinds || kinds[ev->type] < 0) {
        return;
    }
    elkd__record_event(a, (elkfw_ev_kind_t)kinds[ev->type], r, slot, ev->token, ev->now,
                       ev->type == ELK_LOCK_EV_LOST ? 0 : ev->deadline, ev->err);
}

/* events_file as configured now: opened, reopened when it changed, closed when removed. */
void elkd__evlog_apply(agent_t *a, const char *old_path, uint32_t old_max)
{
    const elkfw_agent_conf_t *c = &a->conf.agent;
    if (a->evlog.fd >= 0 && strcmp(old_path, c->events_file) == 0 && old_max == c->events_max) {
        return;
    }
    elkfw_evlog_close(&a->evlog);
    if (c->events_file[0] == '\0') {
        return;
    }
    int rc =
        elkfw_evlog_open(&a->evlog, c->events_file, (uint64_t)c->events_max * ELKFW_EVLOG_RECORD);
    if (rc < 0) {
        elkd__log(a, ELK_LOG_WARN,
                  "events_file %s: cannot open: %s; running without a lease event record",
                  c->events_file, strerror(-rc));
    } else {
        elkd__log(a, ELK_LOG_INFO,
                  "lease event record: %s (%" PRIu64 " records, next #%" PRIu64 ")", c->events_file,
                  a->evlog.slots, a->evlog.seq + 1u);
    }
}

/* keepalive_ms: this hold's keepalive interval asked for (0: the resource's setting). */
void elkd__start_acquire(agent_t *a, resource_t *r, int slot, uint32_t wait_ms,
                         uint32_t keepalive_ms, uint64_t now)
{
    int rc;
    uint64_t wd = wait_ms > 0 ? now + wait_ms : 0;
    r->keepalive_ms = keepalive_ms != 0 ? keepalive_ms : r->conf->keepalive_ms;
    r->keepalive_missed = false;
    r->suspect_since = 0;
    (void)elk_lock_set_keepalive(&r->lock, now, r->keepalive_ms);
    r->owner = slot;
    r->owner_id = a->clients[slot].id;
    elkd__set_acquiring(a, r, true);
    r->last_round_err = ELK_OK;
    r->asked_at = now;
#if CONFIG_ELK_FAIR
    if (r->fair_on) {
        rc = elk_fair_acquire(&r->fair, now, wd);
    } else
#endif
    {
        rc = elk_lock_acquire(&r->lock, now, wd);
    }
    if (rc == ELK_E_WOULD_BLOCK) {
        elkd__log(a, ELK_LOG_DEBUG,
                  "%s: acquire round started for client %" PRIu64 " (wait %" PRIu32 " ms)",
                  r->conf->name, a->clients[slot].id, wait_ms);
        return;
    }
    elkd__set_acquiring(a, r, false);
    if (rc == ELK_OK) {
        /* Already held by this handle: cannot happen as the agent holds once per resource;
         * answer truthfully anyway. */
        elkd__send_grant(a, slot, "OK ACQUIRED", r, elk_lock_token(&r->lock),
                         elk_lock_validity(&r->lock, now), elk_lock_deadline(&r->lock));
        return;
    }
    r->owner = -1;
    elkd__client_err(a, slot, rc, r->conf->name);
}

/* Give the resource to the oldest local waiter, if any. */

void elkd__hand_to_next_waiter(agent_t *a, resource_t *r, uint64_t now)
{
    size_t i, best = SIZE_MAX;
    size_t ri = r->idx;
    if (r->owner >= 0 || a->shutting_down || elkd__res_orphaned(a, r, now) ||
        !elkd__res_settle(a, r)) {
        return; /* a reload's new settings wait for the release round: the tick hands over */
    }
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        waiter_t *w = &a->waiters[i];
        if (w->client >= 0 && w->res == ri && (best == SIZE_MAX || w->seq < a->waiters[best].seq)) {
            best = i;
        }
    }
    if (best != SIZE_MAX) {
        waiter_t w = a->waiters[best];
        a->waiters[best].client = -1;
        if (a->clients[w.client].fd >= 0 && a->clients[w.client].id == w.client_id) {
            uint32_t left = w.deadline > now ? (uint32_t)(w.deadline - now) : 0;
            elkd__start_acquire(a, r, w.client, left, w.keepalive_ms, now);
        }
    }
    if (r->owner < 0) {
        elkd__sem_permit_free(a, r, now);
    }
}

void elkd__release_res(agent_t *a, resource_t *r, uint64_t now, const char *why)
{
    uint64_t token = elk_lock_token(&r->lock);
    uint32_t renewals = elk_lock_renewals(&r->lock);
    bool held = elk_lock_is_held(&r->lock, now);
    int rc = elkd__lock_release(r, now);
    if (held) {
        elkd__record_event(a, ELKFW_EV_RELEASE, r, r->owner, token, now, 0, ELK_OK);
        elkfw_hist_add(&r->metrics.hold, now - r->granted_at);
        elkd__log(
            a, ELK_LOG_INFO,
            "%s: released (%s), token %" PRIu64 ", held %" PRIu64 " ms, %" PRIu32 " renewal%s",
            r->conf->name, why, token, now - r->granted_at, renewals, renewals == 1 ? "" : "s");
    } else {
        elkd__log(a, rc == ELK_E_NOT_HELD ? ELK_LOG_DEBUG : ELK_LOG_INFO, "%s: released (%s)%s",
                  r->conf->name, why,
                  rc == ELK_E_LOCK_LOST ? "; the lease had already been lost" : "");
    }
    r->owner = -1;
    elkd__set_acquiring(a, r, false);
    r->shutdown_release_at = 0;
    elkfw_sup_clear(&r->sup);
    elkd__hand_to_next_waiter(a, r, now);
}

/* Release unless the holder's command is still being stopped: then the supervision
 * step releases once the group is gone (or lets the lease run out). */
void elkd__release_when_stopped(agent_t *a, resource_t *r, uint64_t now, const char *why)
{
    if (elkfw_sup_stopping(&r->sup)) {
        r->shutdown_release_at = 0;
        return;
    }
    elkd__release_res(a, r, now, why);
}

/* The supervised group cannot be stopped (still there after SIGKILL, or a process of
 * another user in it, which elkd must not signal): the command may still drive, so the
 * lease is never released early; it is no longer renewed and runs out at its deadline. */
static void supervise_gave_up(agent_t *a, resource_t *r, uint64_t now)
{
    if (elk_lock_is_held(&r->lock, now)) {
        elkd__log(a, ELK_LOG_ERROR,
                  "%s: giving up on process group %d (%s); not releasing the lease: it is no "
                  "longer renewed and runs out in %" PRIu32 " ms",
                  r->conf->name, (int)r->sup.pgid, r->sup.why, elk_lock_validity(&r->lock, now));
        (void)elk_lock_abandon(&r->lock, now);
        r->owner = -1;
        r->shutdown_release_at = 0;
    } else {
        elkd__log(a, ELK_LOG_ERROR,
                  "%s: giving up on process group %d (%s); its lease has already ended",
                  r->conf->name, (int)r->sup.pgid, r->sup.why);
        elkfw_sup_clear(&r->sup);
        elkd__hand_to_next_waiter(a, r, now);
    }
}

/* Stop the holder's command before its lease goes: SIGTERM now (unless its client,
 * still connected, was just told and does that itself), SIGKILL after the stop margin
 * (elkfw/supervise.h). Returns false if there is no supervised command. A group that
 * is no longer the client's alone is not signalled: the lease is left to run out. */
bool elkd__stop_command(agent_t *a, resource_t *r, uint64_t now, const char *why, bool client_told)
{
    if (r->sup.stage != ELKFW_SUP_WATCHING) {
        return false;
    }
    elkd__log(a, client_told ? ELK_LOG_INFO : ELK_LOG_WARN,
              "%s: %s; stopping its command (process group %d: %s, SIGKILL in %" PRIu32
              " ms if still there) before the lease is released",
              r->conf->name, why, (int)r->sup.pgid,
              client_told ? "its client sends SIGTERM" : "SIGTERM now", r->conf->stop_margin_ms);
    if (!elkfw_sup_stop(&r->sup, now, r->conf->stop_margin_ms, !client_told)) {
        supervise_gave_up(a, r, now);
    }
    return true;
}

/* A supervised command being stopped: release once it is gone; if that cannot be
 * confirmed in time, stop renewing and let the lease run out at its deadline. */
void elkd__supervise_step(agent_t *a, resource_t *r, uint64_t now, uint64_t *next)
{
    switch (elkfw_sup_step(&r->sup, now, next)) {
    case ELKFW_SUP_GONE:
        if (r->shutdown_release_at != 0 && now < r->shutdown_release_at) {
            break; /* shutdown keeps the lease for the stop margin; it releases then */
        }
        if (elk_lock_is_held(&r->lock, now) &&
            (!elkd__owned_by(a, r, r->owner) || a->shutting_down)) {
            elkd__release_res(a, r, now, "its command has stopped");
        } else {
            elkd__hand_to_next_waiter(a, r, now);
        }
        break;
    case ELKFW_SUP_GIVE_UP:
        supervise_gave_up(a, r, now);
        break;
    case ELKFW_SUP_IDLE:
    case ELKFW_SUP_STOPPING:
        break;
    }
}
