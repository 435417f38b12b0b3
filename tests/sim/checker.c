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
    "mutual_exclusion", "fence_backwards",      "fence_accepted_lower",
    "late_lost",        "drive_after_deadline", "liveness",
};

const char *sim_violation_name(int kind)
{
    return kind >= 0 && kind < V_KINDS ? kind_names[kind] : "?";
}

void sim_violation(sim_world_t *w, int kind, const char *what)
{
    w->run.violations[kind]++;
    if (w->first_violation[0] == '\0') {
        snprintf(w->first_violation, sizeof w->first_violation, "%s at t=%" PRIu64 "us: %s",
                 sim_violation_name(kind), w->core.now_us, what);
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
    for (r = 0; r < SIM_MAX_RESOURCES; r++) {
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
    return w->opt.control != CTRL_SETNX_GETSET;
}

void sim_check_acquired(sim_world_t *w, sim_gw_t *g, uint64_t token)
{
    sim_actuator_t *a = &w->act[g->resource];
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
    if (token <= a->last_grant_token) {
        if (w->data_lost) {
            /* A node restarted empty can lower its counter: a liveness cost the guard
             * absorbs (design.md), not a safety failure. */
            w->run.fence_excused++;
        } else {
            char msg[120];
            snprintf(msg, sizeof msg, "gw%u got token %" PRIu64 " after a holder had %" PRIu64,
                     g->id, token, a->last_grant_token);
            sim_violation(w, V_FENCE_BACKWARDS, msg);
        }
    }
    if (token > a->last_grant_token) {
        a->last_grant_token = token;
    }
}

void sim_check_drive(sim_world_t *w, sim_gw_t *g, uint64_t local_now)
{
    sim_actuator_t *a = &w->act[g->resource];
    uint64_t t = w->core.now_us;
    uint64_t stop_us = (uint64_t)g->lock.cfg.stop_margin_ms * 1000u;
    uint32_t h;
    char msg[160];
    w->run.drives++;
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
    sim_trace(w, "release", g->id, g->token, 0);
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
