/* SPDX-License-Identifier: MIT */
/* --multi K: each hold of a gateway is one all-or-nothing lease over K of the run's
 * resources (elk/multi.h), the set and the order it is asked in drawn per attempt from the
 * gateway's seeded RNG, so gateways ask for overlapping sets in different orders. It drives
 * every resource's actuator, each under its own token and guard, only while
 * elk_multi_is_held; the rest of its behaviour is gw_elk.c's.
 * The multi-naive control does the same with independent locks (elk/lock.h) taken in the
 * order asked, keeps the ones it took while it waits for the next, and takes a lost one for
 * that resource's business alone: it deadlocks and drives partial sets. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sim_world.h"

static const char *const resource_names[SIM_MAX_RESOURCES] = {"valve0", "valve1", "valve2",
                                                              "valve3"};

static bool naive(const sim_world_t *w)
{
    return w->opt.control == CTRL_MULTI_NAIVE;
}

static const elk_lock_t *m_lock_at(const sim_gw_t *g, uint32_t k)
{
    return naive(g->w) ? &g->m_lock[k] : elk_multi_lock(&g->multi, k);
}

/* What g's library says of each resource now. */
static void m_view(const sim_gw_t *g, uint64_t now, sim_multi_view_t *v)
{
    uint32_t k;
    memset(v, 0, sizeof *v);
    v->count = g->m_count;
    for (k = 0; k < g->m_count; k++) {
        const elk_lock_t *l = m_lock_at(g, k);
        v->res[k] = g->m_res[k];
        v->held[k] = elk_lock_is_held(l, now);
        v->token[k] = elk_lock_token(l);
        v->deadline[k] = elk_lock_deadline(l);
    }
}

/* The earliest deadline of the locks g's library says it holds (the naive control's idea of
 * its lease). */
static uint64_t m_naive_deadline(const sim_gw_t *g, uint64_t now)
{
    uint64_t d = UINT64_MAX;
    uint32_t k;
    for (k = 0; k < g->m_count; k++) {
        if (elk_lock_is_held(&g->m_lock[k], now) && elk_lock_deadline(&g->m_lock[k]) < d) {
            d = elk_lock_deadline(&g->m_lock[k]);
        }
    }
    return d;
}

static void m_hold_begins(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t deadline)
{
    sim_multi_view_t v;
    g->deadline = deadline;
    g->phase = GW_HOLD;
    g->work_until = g->lease_bound
        ? UINT64_MAX
        : now + elk_sim_rng_range(&g->rng, 20, (uint64_t)w->opt.ttl_ms * 5u / 2u);
    g->next_tick = now;
    g->m_done = w->core.now_us >= w->calm_from;
    m_view(g, now, &v);
    g->token = v.token[0];
    sim_check_multi_acquired(w, g, &v);
}

static void m_failed(sim_world_t *w, sim_gw_t *g, const elk_lock_event_t *ev, size_t i)
{
    w->run.acquire_failed++;
    g->phase = GW_THINK;
    g->think_until = ev->now + elk_sim_rng_range(&g->rng, 0, 200);
    sim_trace(w, "acq_fail", g->id, (uint64_t)(-ev->err), i);
}

static void m_lost(sim_world_t *w, sim_gw_t *g, const elk_lock_event_t *ev)
{
    /* Stop every actuator now; release once they are safe (gw_elk.c says why). */
    sim_check_lost(w, g, ev->now);
    g->phase = GW_STOPPING;
    g->work_until = ev->now + g->stop_ms;
}

static void on_multi_event(void *user, elk_multi_t *m, size_t i, const elk_lock_event_t *ev)
{
    sim_gw_t *g = (sim_gw_t *)user;
    sim_world_t *w = g->w;
    switch (ev->type) {
    case ELK_LOCK_EV_ACQUIRED:
        m_hold_begins(w, g, ev->now, ev->deadline);
        break;
    case ELK_LOCK_EV_ACQUIRE_FAILED:
        m_failed(w, g, ev, i);
        break;
    case ELK_LOCK_EV_RENEWED:
    case ELK_LOCK_EV_RECOVERED:
        w->run.renewals++;
        if (elk_multi_state(m) == ELK_MULTI_HELD) { /* else: an earlier lock, while waiting */
            g->deadline = elk_multi_deadline(m);
        }
        sim_trace(w, "renewed", g->id, g->deadline, i);
        break;
    case ELK_LOCK_EV_SUSPECT:
        sim_trace(w, "suspect", g->id, (uint64_t)(-ev->err), i);
        if (g->stop_on_suspect && g->phase == GW_HOLD) {
            g->phase = GW_STOPPING;
            g->work_until = ev->now + g->stop_ms;
        }
        break;
    case ELK_LOCK_EV_LOST:
        m_lost(w, g, ev);
        break;
    default:
        sim_trace(w, elk_lock_event_name(ev->type), g->id, (uint64_t)(-ev->err), i);
        break;
    }
}

/* The naive control: the next lock in the order asked, or the hold once all were granted. */
static void on_naive_event(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    sim_gw_t *g = (sim_gw_t *)user;
    sim_world_t *w = g->w;
    uint32_t k = (uint32_t)(lock - g->m_lock);
    uint64_t wait = 2u * (uint64_t)w->opt.ttl_ms;
    if (g->phase != GW_WANT || k != g->m_next) {
        /* a lost lock is that resource's business: the others stay held and driven */
        sim_trace(w, elk_lock_event_name(ev->type), g->id, (uint64_t)(-ev->err), k);
        return;
    }
    if (ev->type == ELK_LOCK_EV_ACQUIRED) {
        g->m_next++;
        if (g->m_next == g->m_count) {
            m_hold_begins(w, g, ev->now, m_naive_deadline(g, ev->now));
        } else {
            (void)elk_lock_acquire(&g->m_lock[g->m_next], ev->now, ev->now + wait);
        }
    } else if (ev->type == ELK_LOCK_EV_ACQUIRE_FAILED) {
        /* hold and wait: keep what was taken, ask again for this one */
        w->run.acquire_failed++;
        sim_trace(w, "acq_retry", g->id, (uint64_t)(-ev->err), k);
        (void)elk_lock_acquire(lock, ev->now, ev->now + wait);
    }
}

/* The last attempt's locks unregistered, once nothing of them is in flight. */
static int m_clear(sim_gw_t *g)
{
    uint32_t k;
    if (g->m_count == 0u) {
        return ELK_OK;
    }
    if (!naive(g->w)) {
        if (elk_multi_busy(&g->multi) || elk_multi_deinit(&g->multi) != ELK_OK) {
            return ELK_E_STATE;
        }
        g->m_count = 0;
        return ELK_OK;
    }
    for (k = 0; k < g->m_count; k++) {
        if (elk_lock_busy(&g->m_lock[k])) {
            return ELK_E_STATE;
        }
    }
    for (k = 0; k < g->m_count; k++) {
        if (elk_lock_deinit(&g->m_lock[k]) != ELK_OK) {
            return ELK_E_STATE;
        }
    }
    g->m_count = 0;
    return ELK_OK;
}

/* K of the run's resources in a random order (a partial shuffle). */
static void m_draw(sim_world_t *w, sim_gw_t *g)
{
    uint8_t pool[SIM_MAX_RESOURCES];
    uint32_t k;
    for (k = 0; k < w->opt.resources; k++) {
        pool[k] = (uint8_t)k;
    }
    for (k = 0; k < w->opt.multi; k++) {
        uint32_t j = (uint32_t)elk_sim_rng_range(&g->rng, k, w->opt.resources - 1u);
        uint8_t t = pool[k];
        pool[k] = pool[j];
        pool[j] = t;
        g->m_res[k] = pool[k];
    }
    sim_trace(w, "m_ask", g->id, ((uint64_t)g->m_res[0] << 8) | g->m_res[1],
              w->opt.multi > 2u ? ((uint64_t)g->m_res[2] << 8) | g->m_res[w->opt.multi - 1u] : 0);
}

static int m_register(sim_world_t *w, sim_gw_t *g)
{
    const char *names[SIM_MAX_RESOURCES];
    uint32_t k;
    int rc = ELK_OK;
    for (k = 0; k < w->opt.multi; k++) {
        names[k] = resource_names[g->m_res[k]];
    }
    if (!naive(w)) {
        rc = elk_multi_init(&g->multi, &g->client, names, w->opt.multi, &g->m_cfg, on_multi_event,
                            g);
        g->m_count = rc == ELK_OK ? w->opt.multi : 0u;
        return rc;
    }
    for (k = 0; rc == ELK_OK && k < w->opt.multi; k++) {
        rc = elk_lock_init(&g->m_lock[k], &g->client, names[k], &g->m_cfg, on_naive_event, g);
        g->m_count = rc == ELK_OK ? k + 1u : k;
    }
    return rc;
}

int sim_gw_multi_acquire(sim_world_t *w, sim_gw_t *g, uint64_t now)
{
    uint64_t until = now + 2u * (uint64_t)w->opt.ttl_ms;
    int rc = m_clear(g);
    if (rc != ELK_OK) {
        return rc; /* the last attempt's releases are still in flight */
    }
    m_draw(w, g);
    rc = m_register(w, g);
    if (rc != ELK_OK) {
        return rc;
    }
    sim_check_multi_ask(w, g);
    g->m_next = 0;
    return naive(w) ? elk_lock_acquire(&g->m_lock[0], now, until)
                    : elk_multi_acquire(&g->multi, now, until);
}

void sim_gw_multi_drive(sim_world_t *w, sim_gw_t *g, uint64_t now)
{
    sim_multi_view_t v;
    if (naive(w)) {
        g->deadline = m_naive_deadline(g, now);
        g->lost = false;
        if (g->deadline == UINT64_MAX) {
            return; /* nothing left to drive */
        }
    } else if (!elk_multi_is_held(&g->multi, now)) {
        return;
    }
    m_view(g, now, &v);
    sim_check_multi_drive(w, g, now, &v);
}

void sim_gw_multi_release(sim_world_t *w, sim_gw_t *g, uint64_t now)
{
    uint32_t k;
    (void)w;
    if (!naive(w)) {
        (void)elk_multi_release(&g->multi, now);
        return;
    }
    for (k = 0; k < g->m_count; k++) {
        (void)elk_lock_release(&g->m_lock[k], now);
    }
}
