/* SPDX-License-Identifier: MIT */
/* What the lock engine reports for a lease (granted, renewed, suspect, lost, ...): told
 * to the holder, logged, counted in the metrics. */
#include "agent.h"

/* Per node of a round: reply times, and replies the safety check did not count. Returns
 * the slowest reply (the round's time). */
static uint32_t round_metrics(agent_t *a, const elk_lock_event_t *ev)
{
    uint32_t slowest = 0;
    size_t i;
    for (i = 0; ev->nodes != NULL && i < ev->node_count && i < a->fleet.count; i++) {
        const elk_lock_node_result_t *nr = &ev->nodes[i];
        if (nr->status == ELK_LOCK_NODE_OK || nr->status == ELK_LOCK_NODE_BUSY) {
            elkfw_hist_add(&a->node_metrics[i].rtt, nr->rtt_ms);
            slowest = nr->rtt_ms > slowest ? nr->rtt_ms : slowest;
        } else if (nr->status == ELK_LOCK_NODE_ERROR &&
                   (nr->err == ELK_E_UNSAFE_SERVER || nr->err == ELK_E_SERVER_UNCHECKED)) {
            a->node_metrics[i].votes_denied++;
        }
    }
    return slowest;
}

/* The metrics side of a lease event (elkfw/metrics.h). */
static void lease_metrics(agent_t *a, resource_t *r, const elk_lock_event_t *ev)
{
    elkfw_res_metrics_t *m = &r->metrics;
    uint32_t round = ev->type == ELK_LOCK_EV_RELEASED ? 0 : round_metrics(a, ev);
    switch (ev->type) {
    case ELK_LOCK_EV_ACQUIRED:
        m->grants++;
        elkfw_hist_add(&m->wait, ev->now - r->asked_at);
        break;
    case ELK_LOCK_EV_ACQUIRE_FAILED:
        m->refusals++;
        break;
    case ELK_LOCK_EV_SUSPECT:
        m->suspects++;
        m->renewals_failed++; /* SUSPECT stands for the spell's first failed round */
        break;
    case ELK_LOCK_EV_RENEWED:
    case ELK_LOCK_EV_RECOVERED:
        m->renewals_ok++;
        elkfw_hist_add(&m->renew_round, round);
        elkfw_hist_add(&m->validity_left, ev->validity_ms);
        break;
    case ELK_LOCK_EV_RENEW_FAILED:
        m->renewals_failed++;
        break;
    case ELK_LOCK_EV_LOST:
        elkfw_causes_add(&m->losses, ev->err);
        elkfw_hist_add(&m->hold, ev->now - r->granted_at);
        break;
    default:
        break;
    }
}

/* "n1,n3": the nodes whose positive reply counted for a grant (the log's record of who
 * voted, so a test can check no quarantined node did). */
static void grant_voters(const agent_t *a, const elk_lock_event_t *ev, char *out, size_t cap)
{
    size_t i, len = 0;
    out[0] = '\0';
    for (i = 0; i < ev->node_count && i < a->conf.n_nodes && ev->nodes != NULL; i++) {
        int n;
        if (ev->nodes[i].status != ELK_LOCK_NODE_OK) {
            continue;
        }
        n = snprintf(out + len, cap - len, "%s%s", len != 0 ? "," : "", a->conf.nodes[i].name);
        if (n < 0 || (size_t)n >= cap - len) {
            break;
        }
        len += (size_t)n;
    }
}

/* A grant: the client gets the lease with its absolute deadline (or, gone meanwhile, the
 * lease is given back at once). */
static void lease_granted(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    char voters[160];
    uint64_t next = UINT64_MAX;
    elkd__set_acquiring(a, r, false);
    elkd__sem_granted(a, slot, r);
    /* a quarantine that ended by now is logged as over before the grant it may have voted in */
    elkd__hygiene_step(a, ev->now, &next);
    grant_voters(a, ev, voters, sizeof voters);
    if (slot < 0 || a->shutting_down) {
        /* The client went away (or we are stopping) while the round ran. */
        elkd__release_res(a, r, ev->now,
                          slot < 0 ? "its client disconnected while acquiring" : "shutting down");
        return;
    }
    r->granted_at = ev->now;
    /* The hold starts now: its keepalive interval counts from here. */
    (void)elk_lock_set_keepalive(&r->lock, ev->now, r->keepalive_ms);
    elkd__log(a, ELK_LOG_INFO,
              "%s: granted to client %" PRIu64 " (uid %u, pid %d, %s), token %" PRIu64
              ", valid %" PRIu32 " ms, waited %" PRIu64 " ms, %u/%u nodes (votes %s)",
              r->conf->name, a->clients[slot].id, (unsigned)a->clients[slot].peer.uid,
              (int)a->clients[slot].pid, a->clients[slot].peer.exe, ev->token, ev->validity_ms,
              ev->now - r->asked_at, ev->ok, ev->node_count, voters);
    if (r->keepalive_ms != 0) {
        elkd__log(a, ELK_LOG_INFO,
                  "%s: renewal needs a KEEPALIVE from client %" PRIu64 " at least every %" PRIu32
                  " ms",
                  r->conf->name, a->clients[slot].id, r->keepalive_ms);
    }
    elkd__send_grant(a, slot, "OK ACQUIRED", r, ev->token, ev->validity_ms, ev->deadline);
}

/* snprintf at out + *len, *len advanced past what fitted. */
__attribute__((format(printf, 4, 5))) void elkd__counts_add(char *out, size_t cap, size_t *len,
                                                            const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(out + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        *len += (size_t)n < cap - *len ? (size_t)n : cap - *len - 1u;
    }
}

/* A round's counts that add up: "0 ok, 0 busy, 1 failed, 1 quarantined, 1 not answered of
 * 3; b quarantined: restarted 2 s ago". A node that may not vote (quarantined by the vote
 * hygiene, or its safety check unsafe or not done) is counted and named apart from those
 * that failed, so a refusal says when a quarantine is why. */
static void round_counts(agent_t *a, const elk_lock_event_t *ev, char *out, size_t cap)
{
    unsigned c[6] = {0}; /* ok, busy, failed, quarantined, no vote, no answer */
    static const char *const label[6] = {"ok",          "busy",           "failed",
                                         "quarantined", "without a vote", "not answered"};
    size_t i, len = 0, k;
    for (i = 0; i < ev->node_count && ev->nodes != NULL; i++) {
        int err = ev->nodes[i].err;
        uint8_t st = ev->nodes[i].status;
        k = st == ELK_LOCK_NODE_OK                                        ? 0
            : st == ELK_LOCK_NODE_BUSY                                    ? 1
            : st == ELK_LOCK_NODE_NONE                                    ? 5
            : err == ELK_E_NODE_QUARANTINED                               ? 3
            : err == ELK_E_SERVER_UNCHECKED || err == ELK_E_UNSAFE_SERVER ? 4
                                                                          : 2;
        c[k]++;
    }
    if (ev->nodes == NULL) {
        c[0] = ev->ok, c[1] = ev->busy, c[2] = ev->failed;
        c[5] = ev->node_count > c[0] + c[1] + c[2] ? ev->node_count - c[0] - c[1] - c[2] : 0u;
    }
    out[0] = '\0';
    for (k = 0; k < 6; k++) {
        if (k < 3 || c[k] != 0) {
            elkd__counts_add(out, cap, &len, "%s%u %s", k != 0 ? ", " : "", c[k], label[k]);
        }
    }
    elkd__counts_add(out, cap, &len, " of %u", ev->node_count);
    for (i = 0; ev->nodes != NULL && i < ev->node_count && i < a->conf.n_nodes; i++) {
        int err = ev->nodes[i].err;
        const char *why = elk_client_node_hygiene(&a->client, i);
        if (err == ELK_E_NODE_QUARANTINED) {
            /* "quarantined: restarted 2 s ago" reads "b quarantined: restarted 2 s ago" */
            elkd__counts_add(out, cap, &len, "; %s %s", a->conf.nodes[i].name, why);
        } else if (err == ELK_E_SERVER_UNCHECKED || err == ELK_E_UNSAFE_SERVER) {
            elkd__counts_add(out, cap, &len, "; %s: %s", a->conf.nodes[i].name,
                             elk_err_message(err));
        }
    }
}

static void lease_not_acquired(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    char counts[sizeof r->last_counts];
    elkd__set_acquiring(a, r, false);
    round_counts(a, ev, counts, sizeof counts);
    elkd__log(a, ELK_LOG_INFO, "%s: not acquired: %s (%s)", r->conf->name, elk_err_message(ev->err),
              counts);
    if (elkd__sem_round_failed(a, slot, r, ev->err, ev->now)) {
        return; /* one permit of a semaphore's pass: the pass goes on */
    }
    if (slot >= 0) {
        if (ev->err == ELK_E_LOCK_TIMEOUT && r->last_round_err != ELK_OK) {
            char detail[400];
            snprintf(detail, sizeof detail, "%s; last round: %s %s (%s; %zu of %zu nodes ready)",
                     r->conf->name, elk_err_name(r->last_round_err),
                     elk_err_message(r->last_round_err), r->last_counts, r->last_ready,
                     a->fleet.count);
            elkd__client_err(a, slot, ev->err, detail);
        } else if (ev->err == ELK_E_FLEET_UNAVAILABLE || ev->err == ELK_E_VALIDITY) {
            char detail[300];
            snprintf(detail, sizeof detail, "%s (%s)", r->conf->name, counts);
            elkd__client_err(a, slot, ev->err, detail);
        } else {
            elkd__client_err(a, slot, ev->err, r->conf->name);
        }
    }
    r->owner = -1;
    elkd__hand_to_next_waiter(a, r, ev->now);
}

/* A failed round of a waiting acquire: kept, so a wait that times out can say why. */
static void lease_round_failed(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    (void)slot;
    r->last_round_err = ev->err;
    round_counts(a, ev, r->last_counts, sizeof r->last_counts);
    r->last_ready = elk_fleet_ready_count(&a->fleet);
    elkd__log(a, ELK_LOG_DEBUG, "%s: round failed (%s), retrying", r->conf->name,
              elk_err_name(ev->err));
}

static void lease_renew_event(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    if (ev->type == ELK_LOCK_EV_RENEWED) {
        elkd__log(a, ELK_LOG_DEBUG, "%s: renewed (%" PRIu32 " renewal%s), valid %" PRIu32 " ms",
                  r->conf->name, ev->renewals, ev->renewals == 1 ? "" : "s", ev->validity_ms);
        if (slot >= 0) {
            elkd__send_grant(a, slot, "EVENT RENEWED", r, ev->token, ev->validity_ms, ev->deadline);
        }
    } else if (ev->type == ELK_LOCK_EV_RENEW_FAILED) {
        /* the library already logs this at warn */
        elkd__log(
            a, ELK_LOG_DEBUG,
            "%s: renewal round failed (%s: %u ok of %u, quorum %u); retrying until the deadline",
            r->conf->name, elk_err_name(ev->err), ev->ok, ev->node_count, ev->quorum);
    } else {
        r->keepalive_missed = ev->err == ELK_E_KEEPALIVE_MISSED;
        if (r->keepalive_missed) {
            elkd__log(a, ELK_LOG_WARN,
                      "%s: no KEEPALIVE from client %" PRIu64 " within %" PRIu32
                      " ms: renewal stopped, the lease runs out in %" PRIu32 " ms (%s)",
                      r->conf->name, slot >= 0 ? a->clients[slot].id : 0, r->keepalive_ms,
                      ev->validity_ms, elk_err_message(ev->err));
        } else {
            elkd__log(a, ELK_LOG_WARN, "%s: %s", r->conf->name, elk_err_message(ev->err));
        }
        if (slot >= 0) {
            elkd__client_send(a, slot, "EVENT RENEW_STOPPED %s %s\n", r->conf->name,
                              elk_err_name(ev->err));
        }
    }
}

/* SUSPECT: a renewal round missed its quorum before the deadline. Still held (and still
 * retried), but the holder may want its actuator in a safe position already. */
static void lease_suspect(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    r->suspect_since = ev->now;
    elkd__log(a, ELK_LOG_WARN,
              "%s: SUSPECT: a renewal round missed its quorum (%s: %u ok of %u, quorum %u); "
              "still valid %" PRIu32 " ms, retrying until the deadline; telling client %" PRIu64,
              r->conf->name, elk_err_name(ev->err), ev->ok, ev->node_count, ev->quorum,
              ev->validity_ms, slot >= 0 ? a->clients[slot].id : 0);
    if (slot >= 0) {
        elkd__client_send(a, slot, "EVENT SUSPECT %s %" PRIu32 " %s\n", r->conf->name,
                          ev->validity_ms, elk_err_name(ev->err));
    }
}

/* RECOVERED: a renewal confirmed the lease after SUSPECT; told like RENEWED. */
static void lease_recovered(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    elkd__log(a, ELK_LOG_INFO,
              "%s: recovered after %" PRIu64 " ms suspect: renewed (%" PRIu32
              " renewal%s), valid %" PRIu32 " ms",
              r->conf->name, r->suspect_since != 0 ? ev->now - r->suspect_since : 0, ev->renewals,
              ev->renewals == 1 ? "" : "s", ev->validity_ms);
    r->suspect_since = 0;
    if (slot >= 0) {
        elkd__send_grant(a, slot, "EVENT RECOVERED", r, ev->token, ev->validity_ms, ev->deadline);
    }
}

static void lease_lost(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    elkd__log(a, ELK_LOG_WARN,
              "%s: LOST (%s), token %" PRIu64 ", held %" PRIu64 " ms; telling client %" PRIu64
              " to stop",
              r->conf->name, elk_err_message(ev->err), ev->token, ev->now - r->granted_at,
              slot >= 0 ? a->clients[slot].id : 0);
    if (slot >= 0) {
        elkd__client_send(a, slot, "EVENT LOST %s %s %" PRIu32 "\n", r->conf->name,
                          elk_err_name(ev->err), r->conf->stop_margin_ms);
    }
    /* The client stops its command on LOST; elkd does too, in case the client itself
     * is stopped or slow (the command must be gone within the stop margin). */
    (void)elkd__stop_command(a, r, ev->now, "lease lost", slot >= 0);
    if (r->sup.stage == ELKFW_SUP_GAVE_UP) {
        elkfw_sup_clear(&r->sup);
    }
    /* Clear the LOST state so the resource can be taken again. */
    (void)elkd__lock_release(r, ev->now);
    r->owner = -1;
    elkd__set_acquiring(a, r, false);
    elkd__hand_to_next_waiter(a, r, ev->now);
}

void elkd__on_lock_event(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    resource_t *r = user;
    agent_t *a = r->agent;
    int slot = elkd__owned_by(a, r, r->owner) ? r->owner : -1;
    (void)lock;
    lease_metrics(a, r, ev);
    elkd__record_lock_event(a, r, slot, ev);
    switch (ev->type) {
    case ELK_LOCK_EV_ACQUIRED:
        lease_granted(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_ACQUIRE_FAILED:
        lease_not_acquired(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_RETRY:
        lease_round_failed(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_RENEWED:
    case ELK_LOCK_EV_RENEW_FAILED:
    case ELK_LOCK_EV_RENEW_STOPPED:
        lease_renew_event(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_SUSPECT:
        lease_suspect(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_RECOVERED:
        lease_recovered(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_LOST:
        lease_lost(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_RELEASED:
        elkd__log(a, ELK_LOG_DEBUG, "%s: release round finished (%u of %u nodes confirmed)",
                  r->conf->name, ev->ok, ev->node_count);
        break;
    }
}
