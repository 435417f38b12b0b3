/* SPDX-License-Identifier: MIT */
/* The invariant checker: one simulated actuator per resource, watched in true time.
 * It trusts nothing the gateways say about safety: overlap is computed from the
 * moments commands were issued, tokens are compared across holders, and the guard's
 * decisions (lib/fence) are themselves checked against the tokens it saw. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sim_world.h"

static const char *const kind_names[V_KINDS] = {
    "mutual_exclusion",     "fence_backwards", "fence_accepted_lower", "late_lost",
    "drive_after_deadline", "liveness",        "lock_delay",           "heartbeat",
    "permits_exceeded",     "multi_partial",   "multi_starved",        "fair_order",
    "fair_starved",
};

static void check_wait(sim_world_t *w, sim_gw_t *g, uint64_t until);

const char *sim_violation_name(int kind)
{
    return kind >= 0 && kind < V_KINDS ? kind_names[kind] : "?";
}

void sim_violation(sim_world_t *w, int kind, const char *what)
{
    w->run.violations[kind]++;
    if (w->first_violation[0] == '\0') {
        /* what is cut so that the line always fits (-O3's -Wformat-truncation) */
        snprintf(w->first_violation, sizeof w->first_violation, "%s at t=%" PRIu64 "us: %.140s",
                 sim_violation_name(kind), w->core.now_us, what);
    }
    if (w->note != NULL) {
        w->note(w->note_ctx, w, "violation", (uint64_t)kind, 0, 0, what);
    }
    sim_trace(w, "VIOLATION", (uint64_t)kind, 0, 0);
}

static int guard_load(void *ctx, uint64_t *token)
{
    *token = *(uint64_t *)ctx;
    return ELK_OK;
}

static int guard_store(void *ctx, uint64_t token)
{
    *(uint64_t *)ctx = token;
    return ELK_OK;
}

void sim_check_reset(sim_world_t *w)
{
    uint32_t r;
    for (r = 0; r < ELK_SIM_MAX_GATEWAYS; r++) {
        sim_gw_t *g = &w->gw[r];
        g->ck_open = false;
        g->ck_delay_ms = 0;
        g->ck_valid_us = 0;
        g->ck_keepalive = 0;
        g->ck_dead_from = g->ck_dead_to = 0;
        g->m_asking = false;
        g->m_ask_since = 0;
        g->m_reported = 0;
    }
    memset(w->budget, 0, sizeof w->budget);
    for (r = 0; r < SIM_MAX_ACTUATORS; r++) {
        sim_actuator_t *a = &w->act[r];
        elk_fence_storage_t st;
        memset(a, 0, sizeof *a);
        memset(&st, 0, sizeof st); /* no lock/unlock: one simulated actuator task */
        st.ctx = &a->stored;
        st.load = guard_load;
        st.store = guard_store;
        (void)elk_fence_init(&a->guard, &st);
    }
}

static bool fenced(const sim_world_t *w)
{
    return w->opt.control != CTRL_SETNX_GETSET && w->opt.control != CTRL_NAIVE_SEMAPHORE;
}

/* The earliest true time a grant may follow hold h, which ended (or may end) without a
 * clean release: its last confirmed deadline, converted to true time with its own clock,
 * plus its lock delay. The servers count the delay on their clocks, whose rates may be off
 * by the drift bound, so that much of the delay is forgiven; nothing else is (the key and
 * marker outlive the deadline by drift + stop margin, which covers the rest). */
static uint64_t delay_end_us(const sim_world_t *w, const sim_gw_t *h)
{
    uint64_t d = (uint64_t)h->ck_delay_ms * 1000u;
    uint64_t slack = (d * w->opt.drift_ppm + 999999u) / 1000000u;
    return h->ck_valid_us + d - slack;
}

/* Lock-delay: no gateway (the old holder included) may be granted before every hold on
 * the resource that ended without a clean release is past delay_end_us. A hold still
 * running counts too: a grant inside its validity is a lease-level overlap whatever the
 * delay (with lock_delay 0 this is "no grant before the last holder's deadline"). */
static void check_lock_delay(sim_world_t *w, const sim_gw_t *g)
{
    uint32_t h;
    for (h = 0; h < w->opt.gateways; h++) {
        const sim_gw_t *o = &w->gw[h];
        uint64_t end;
        char msg[180];
        if (!o->ck_open || o->ck_act != g->act) {
            continue;
        }
        end = delay_end_us(w, o);
        if (w->core.now_us < end) {
            snprintf(msg, sizeof msg,
                     "gw%u granted at %" PRIu64 "us; gw%u's hold (token %" PRIu64
                     ", %s) was valid until %" PRIu64 "us, lock_delay %u ms: not before %" PRIu64
                     "us",
                     g->id, w->core.now_us, o->id, o->token, o->lost ? "lost" : "not released",
                     o->ck_valid_us, o->ck_delay_ms, end);
            sim_violation(w, V_LOCK_DELAY, msg);
            return;
        }
    }
}

/* A new hold (after the lock-delay check above, which also covers g's previous one). */
static void hold_begins(sim_world_t *w, sim_gw_t *g)
{
    check_lock_delay(w, g);
    g->ck_open = true;
    g->ck_act = g->act;
    g->ck_delay_ms = g->lock_delay_ms;
    g->ck_valid_us = elk_sim_clock_true_at(&g->clock, g->deadline);
    /* lib/lock counts the grant as a keepalive (design: keepalive_at set at acquire). */
    g->ck_keepalive = elk_sim_clock_now_ms(&g->clock);
    g->ck_dead_from = g->ck_dead_to = 0;
}

/* --fair. A round of h's counts for h's place when a quorum answered it: every quorum
 * that names a waiter head then holds a master with h's ticket, alive there for a ticket
 * TTL from the round's send (less what the master's clock may run fast). */
void sim_check_fair_ticket(sim_world_t *w, sim_gw_t *g, int64_t ticket)
{
    memset(&g->fk, 0, sizeof g->fk);
    g->fk.ticket = ticket;
    g->fk.waiting = true;
    g->fk.seq_seen = g->fair.seq;
    sim_trace(w, "ticket", g->id, (uint64_t)ticket, 0);
}

void sim_check_fair_round(sim_world_t *w, sim_gw_t *g, uint64_t sent_us)
{
    struct sim_fair_ck *k = &g->fk;
    memmove(&k->sent[1], &k->sent[0], sizeof k->sent - sizeof k->sent[0]);
    memmove(&k->decided[1], &k->decided[0], sizeof k->decided - sizeof k->decided[0]);
    k->sent[0] = sent_us;
    k->decided[0] = w->core.now_us;
    k->n = (uint8_t)(k->n < 8u ? k->n + 1u : 8u);
}

void sim_check_fair_head(sim_world_t *w, sim_gw_t *g, uint64_t sent_us)
{
    g->fk.head_sent = sent_us;
    g->fk.head_decided = w->core.now_us;
    g->fk.head_fault = w->master_fault_at;
    sim_trace(w, "head", g->id, (uint64_t)g->fk.ticket, sent_us);
}

void sim_check_fair_left(sim_world_t *w, sim_gw_t *g)
{
    (void)w;
    g->fk.waiting = false;
}

/* fair_order: g, granted, was named head by a round sent at head_sent and decided at
 * head_decided. A waiter h with a lower ticket, still waiting, breaks the order if a round
 * of h's that a quorum answered before head_sent keeps its ticket alive past head_decided. */
static void check_fair_order(sim_world_t *w, const sim_gw_t *g)
{
    uint32_t i, j;
    char msg[180];
    for (i = 0; i < w->opt.gateways && g->fk.head_decided != 0u; i++) {
        const sim_gw_t *h = &w->gw[i];
        uint64_t ttl = (uint64_t)h->fair.ticket_ttl_ms * 1000u;
        uint64_t win = ttl - (ttl * w->opt.drift_ppm + 999999u) / 1000000u;
        if (h == g || h->resource != g->resource || !h->fk.waiting ||
            h->fk.ticket >= g->fk.ticket) {
            continue;
        }
        for (j = 0; j < h->fk.n && h->fk.decided[j] > g->fk.head_sent; j++) {
        }
        if (j < h->fk.n && h->fk.sent[j] + win > g->fk.head_decided &&
            g->fk.head_fault >= h->fk.sent[j] && g->fk.head_fault != 0u) {
            w->run.fair_exempt++; /* that master may have lost or expired h's ticket */
            sim_trace(w, "fair_exempt", g->id, h->id, g->fk.head_fault);
            return;
        }
        if (j < h->fk.n && h->fk.sent[j] + win > g->fk.head_decided) {
            snprintf(msg, sizeof msg,
                     "gw%u (ticket %" PRId64 ", head at %" PRIu64 "us) granted while gw%u "
                     "(ticket %" PRId64 ", renewed at %" PRIu64 "us) waited",
                     g->id, g->fk.ticket, g->fk.head_decided, h->id, h->fk.ticket, h->fk.sent[j]);
            sim_violation(w, V_FAIR_ORDER, msg);
            return;
        }
    }
}

/* Tokens grow in true grant order, also after masters lost their data (counters with it):
 * the clock floor keeps them growing (design.md "Fencing tokens across a fleet"), so no loss
 * excuses a drop any more. */
static void check_grant_token(sim_world_t *w, const sim_gw_t *g, sim_actuator_t *a, uint64_t token)
{
    if (token <= a->last_grant_token) {
        char msg[120];
        snprintf(msg, sizeof msg, "gw%u got token %" PRIu64 " after a holder had %" PRIu64, g->id,
                 token, a->last_grant_token);
        sim_violation(w, V_FENCE_BACKWARDS, msg);
    }
    if (token > a->last_grant_token) {
        a->last_grant_token = token;
    }
}

void sim_check_acquired(sim_world_t *w, sim_gw_t *g, uint64_t token)
{
    sim_actuator_t *a = &w->act[g->act];
    if (w->opt.fair) {
        check_fair_order(w, g);
        check_wait(w, g, w->core.now_us);
        g->m_asking = false;
    }
    if (fenced(w)) {
        hold_begins(w, g); /* the SETNX control has no lib lease to check */
    }
    g->lease = ++w->lease_seq;
    g->lost = false;
    w->run.cycles++;
    w->last_grant_at = w->core.now_us;
    if (w->core.now_us >= w->calm_from) {
        w->calm_granted = true;
    }
    sim_trace(w, "acquired", g->id, token, g->deadline);
    if (!fenced(w)) {
        return;
    }
    check_grant_token(w, g, a, token);
}

/* --permits: at the moment g drives, no more gateways may occupy the semaphore's actuators
 * than it has permits. The most are occupied at the first drive of some hold, and every
 * drive is checked, so no moment is missed. */
static void check_budget(sim_world_t *w, const sim_gw_t *g, uint64_t t, uint64_t stop_us)
{
    struct sim_budget *b = &w->budget[g->resource];
    uint32_t h, busy = 1;
    char msg[160];
    if (b->lease_of[g->id] != g->lease) {
        b->lease_of[g->id] = g->lease;
        b->first[g->id] = t;
    }
    b->end[g->id] = t + stop_us;
    for (h = 0; h < w->opt.gateways; h++) {
        busy += h != g->id && b->first[h] <= t && t < b->end[h] ? 1u : 0u;
    }
    if (busy > w->opt.permits && b->reported[g->id] != g->lease) {
        b->reported[g->id] = g->lease;
        snprintf(msg, sizeof msg,
                 "gw%u (hold %" PRIu64 ") drove at %" PRIu64 "us while %u gateways occupied %s's "
                 "%u permits",
                 g->id, g->lease, t, busy - 1u, "the semaphore", w->opt.permits);
        sim_violation(w, V_PERMITS, msg);
    }
}

void sim_check_drive(sim_world_t *w, sim_gw_t *g, uint64_t local_now)
{
    sim_actuator_t *a = &w->act[g->act];
    uint64_t t = w->core.now_us;
    uint64_t stop_us = (uint64_t)g->stop_ms * 1000u;
    uint32_t h;
    char msg[160];
    w->run.drives++;
    if (w->opt.permits != 0u) {
        check_budget(w, g, t, stop_us);
    }
    if (w->opt.control == CTRL_NAIVE_SEMAPHORE) { /* no lease of lib/lock to check */
        sim_trace(w, "drive", g->id, g->token, local_now);
        return;
    }
    if (w->opt.control != CTRL_SETNX_GETSET && (g->lost || local_now >= g->deadline)) {
        snprintf(msg, sizeof msg, "gw%u drove at local %" PRIu64 " with deadline %" PRIu64 "%s",
                 g->id, local_now, g->deadline, g->lost ? " after LOST" : "");
        sim_violation(w, V_DRIVE_AFTER_DEADLINE, msg);
    }
    if (w->opt.control == CTRL_SETNX_GETSET) {
        stop_us = 20000u;
    }
    if (a->lease_of[g->id] != g->lease) {
        a->lease_of[g->id] = g->lease;
        a->first[g->id] = t;
    }
    a->end[g->id] = t + stop_us;
    for (h = 0; h < w->opt.gateways; h++) {
        if (h == g->id || a->end[h] == 0u) {
            continue;
        }
        if (a->first[g->id] < a->end[h] && a->first[h] < a->end[g->id] &&
            a->reported[g->id] != g->lease) {
            a->reported[g->id] = g->lease;
            snprintf(msg, sizeof msg,
                     "gw%u (hold %" PRIu64 ") drove at %" PRIu64 "us while gw%u (hold %" PRIu64
                     ") occupied [%" PRIu64 ",%" PRIu64 ")",
                     g->id, g->lease, t, h, a->lease_of[h], a->first[h], a->end[h]);
            sim_violation(w, V_MUTEX, msg);
            break;
        }
    }
    sim_trace(w, "drive", g->id, g->token, local_now);
    if (fenced(w)) {
        int rc = elk_fence_check(&a->guard, g->token);
        if (rc == ELK_OK) {
            if (g->token < a->max_accepted) {
                snprintf(msg, sizeof msg, "guard accepted token %" PRIu64 " after %" PRIu64,
                         g->token, a->max_accepted);
                sim_violation(w, V_FENCE_ACCEPTED_LOW, msg);
            } else {
                a->max_accepted = g->token;
            }
        } else {
            w->run.refused++;
            sim_trace(w, "refused", g->id, g->token, (uint64_t)(-rc));
        }
    }
}

void sim_check_release(sim_world_t *w, sim_gw_t *g)
{
    /* Clean: the gateway releases a lease it still holds (no LOST, before its deadline);
     * RELEASE deletes the keys and the lock-delay marker, so the next grant may come at
     * once. After LOST (or a hold the gateway gave up on) the delay stands. */
    if (fenced(w) && !g->lost && elk_sim_clock_now_ms(&g->clock) < g->deadline) {
        g->ck_open = false;
    }
    sim_trace(w, "release", g->id, g->token, 0);
}

/* RENEWED or RECOVERED with the new deadline in g->deadline. */
void sim_check_renewed(sim_world_t *w, sim_gw_t *g)
{
    uint64_t t_send, limit;
    char msg[180];
    if (g->ck_open) {
        g->ck_valid_us = elk_sim_clock_true_at(&g->clock, g->deadline);
    }
    if (g->keepalive_ms == 0u || g->deadline < g->span_ms) {
        return;
    }
    /* Heartbeat: the confirmed round was sent at t_send = deadline - span; lib/lock may
     * start a round only within keepalive_ms of the last keepalive before it. */
    t_send = g->deadline - g->span_ms;
    limit = g->ck_keepalive + g->keepalive_ms;
    if (t_send > limit || (t_send > g->ck_dead_from && t_send < g->ck_dead_to)) {
        snprintf(msg, sizeof msg,
                 "gw%u: renewal round sent at local %" PRIu64 " (deadline %" PRIu64
                 ") with no keepalive in the %u ms before (last %" PRIu64 ", gap %" PRIu64
                 "..%" PRIu64 ")",
                 g->id, t_send, g->deadline, g->keepalive_ms, g->ck_keepalive, g->ck_dead_from,
                 g->ck_dead_to);
        sim_violation(w, V_HEARTBEAT, msg);
    }
}

void sim_check_keepalive(sim_world_t *w, sim_gw_t *g, uint64_t local_now)
{
    (void)w;
    /* Only the latest gap is kept: a round confirmed after a later gap opened would be
     * judged against that one (the simulated work never resumes after it hangs). */
    if (g->keepalive_ms != 0u && local_now > g->ck_keepalive + g->keepalive_ms) {
        g->ck_dead_from = g->ck_keepalive + g->keepalive_ms;
        g->ck_dead_to = local_now;
    }
    if (local_now > g->ck_keepalive) {
        g->ck_keepalive = local_now;
    }
}

void sim_check_lost(sim_world_t *w, sim_gw_t *g, uint64_t ev_now)
{
    w->run.losses++;
    sim_trace(w, "lost", g->id, ev_now, g->deadline);
    if (ev_now > g->deadline && !g->in_resume_step) {
        char msg[120];
        snprintf(msg, sizeof msg, "gw%u: LOST at local %" PRIu64 ", deadline was %" PRIu64, g->id,
                 ev_now, g->deadline);
        sim_violation(w, V_LATE_LOST, msg);
    }
    g->lost = true;
}

void sim_check_lost_missing(sim_world_t *w, sim_gw_t *g, uint64_t now)
{
    char msg[120];
    snprintf(msg, sizeof msg,
             "gw%u: still held at local %" PRIu64 " with deadline %" PRIu64 " and no LOST event",
             g->id, now, g->deadline);
    sim_violation(w, V_LATE_LOST, msg);
    g->lost = true; /* report once per hold */
}

/* H + W (sim_multi_starve_bound_us): one hold ends, or one waiting attempt, within it */
static uint64_t hold_slot_us(const sim_world_t *w)
{
    return (uint64_t)w->opt.ttl_ms * 4500u + 420000u;
}

uint64_t sim_multi_starve_bound_us(const sim_world_t *w)
{
    uint64_t holds = w->opt.gateways + (w->opt.multi != 0u ? w->opt.resources / w->opt.multi : 0u);
    return holds * hold_slot_us(w);
}

uint64_t sim_fair_starve_bound_us(const sim_world_t *w)
{
    uint32_t r = w->opt.resources != 0u ? w->opt.resources : 1u;
    uint64_t per = (w->opt.gateways + r - 1u) / r;
    return (per + 1u) * hold_slot_us(w) + (uint64_t)w->opt.ttl_ms * 1000u;
}

void sim_check_multi_ask(sim_world_t *w, sim_gw_t *g)
{
    if (!g->m_asking) {
        g->m_asking = true;
        g->m_ask_since = w->core.now_us;
    }
}

/* multi_starved (fair_starved with --fair): the part of g's wait (since it asked) that lies
 * in the calm phase, up to until, against the bound. Faults may hold anyone off for as long
 * as they last; once they heal, every gateway that asks must be served. */
static void check_wait(sim_world_t *w, sim_gw_t *g, uint64_t until)
{
    uint64_t from = g->m_ask_since > w->calm_from ? g->m_ask_since : w->calm_from;
    uint64_t bound = w->opt.fair ? sim_fair_starve_bound_us(w) : sim_multi_starve_bound_us(w);
    char msg[180];
    if (!g->m_asking || g->crashed || until <= from) {
        return;
    }
    if (until - from > w->run.calm_wait_max_us) {
        w->run.calm_wait_max_us = until - from;
    }
    if (until - from > bound) {
        snprintf(msg, sizeof msg,
                 "gw%u asked at %" PRIu64 "us and had no grant at %" PRIu64 "us: %" PRIu64
                 " ms of the calm phase (from %" PRIu64 "us), bound %" PRIu64 " ms",
                 g->id, g->m_ask_since, until, (until - from) / 1000u, w->calm_from, bound / 1000u);
        sim_violation(w, w->opt.fair ? V_FAIR_STARVED : V_MULTI_STARVED, msg);
    }
}

void sim_check_multi_acquired(sim_world_t *w, sim_gw_t *g, const sim_multi_view_t *v)
{
    uint32_t k;
    check_wait(w, g, w->core.now_us);
    g->m_asking = false;
    g->lease = ++w->lease_seq;
    g->lost = false;
    w->run.cycles++;
    w->last_grant_at = w->core.now_us;
    if (w->core.now_us >= w->calm_from) {
        w->calm_granted = true;
    }
    sim_trace(w, "acquired", g->id, g->token, g->deadline);
    for (k = 0; k < v->count; k++) {
        sim_trace(w, "m_token", g->id, v->res[k], v->token[k]);
        if (v->held[k]) { /* the naive control may have lost one already */
            check_grant_token(w, g, &w->act[v->res[k]], v->token[k]);
        }
    }
}

/* multi_partial: at a drive, every resource of the lease is held by its own lock (as its
 * library says), none is past its own deadline, and the deadline the gateway goes by (the
 * multi lease's) is no later than any of theirs. Then each held resource's actuator is
 * driven and checked as a lock's is (exclusion, fencing, deadline). */
void sim_check_multi_drive(sim_world_t *w, sim_gw_t *g, uint64_t local_now,
                           const sim_multi_view_t *v)
{
    uint32_t k;
    char msg[180];
    for (k = 0; k < v->count && g->m_reported != g->lease; k++) {
        if (!v->held[k] || local_now >= v->deadline[k] || g->deadline > v->deadline[k]) {
            g->m_reported = g->lease;
            snprintf(msg, sizeof msg,
                     "gw%u (hold %" PRIu64 ") drove at local %" PRIu64 " with valve%u %s "
                     "(its deadline %" PRIu64 ", the lease's %" PRIu64 ")",
                     g->id, g->lease, local_now, v->res[k], v->held[k] ? "held" : "not held",
                     v->deadline[k], g->deadline);
            sim_violation(w, V_MULTI_PARTIAL, msg);
        }
    }
    for (k = 0; k < v->count; k++) {
        if (v->held[k]) {
            g->act = v->res[k];
            g->token = v->token[k];
            sim_check_drive(w, g, local_now);
        }
    }
}

void sim_check_multi_end(sim_world_t *w)
{
    uint32_t i;
    for (i = 0; i < w->opt.gateways; i++) {
        check_wait(w, &w->gw[i], w->core.now_us);
    }
}
