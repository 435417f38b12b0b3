/* SPDX-License-Identifier: MIT */
/* A gateway running the real lib/ (node, lock): it acquires a lease, drives its
 * actuator on a tick only while elk_lock_is_held() says so, renews through the
 * library, releases when its work is done, and treats LOST as "stop now". This is
 * how a careful user of the API behaves; the checker watches the result.
 * Drawn from the run seed: a lock delay per resource; per gateway a keepalive interval
 * (its work proves it is alive; in some holds the work hangs, keepalives stop while the
 * gateway still thinks it holds) and whether it stops early on SUSPECT. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sim_world.h"

#define TICK_MS 10u

static const char *const resource_names[SIM_MAX_RESOURCES] = {"valve0", "valve1", "valve2",
                                                              "valve3"};

/* The lock of the lease held: g->lock, or with --permits the permit's (the first permit's
 * before any grant: every permit has the same configuration). */
static elk_lock_t *gw_lock(sim_gw_t *g)
{
    elk_lock_t *l;
    if (g->w->opt.fair) {
        return elk_fair_lock(&g->fair);
    }
    if (g->w->opt.permits == 0u) {
        return &g->lock;
    }
    l = elk_sem_lock(&g->sem);
    return l != NULL ? l : &g->sem.slot[0];
}

static uint64_t think_ms(sim_gw_t *g)
{
    return elk_sim_rng_range(&g->rng, 0, 200);
}

/* lock_delay is kept per resource by the servers' marker, so every gateway on a resource
 * uses the same value (and the quarantine each client computes covers it): drawn from the
 * run seed and the resource, not from a gateway. Half the resources have none; at most
 * ttl/2, so a node restarted empty after the delayed restart (1.5 TTL) has no marker left
 * to forget. */
static uint32_t resource_lock_delay(const sim_world_t *w, uint8_t resource)
{
    uint64_t s = w->run_seed ^ (0x5e1f0ddc0ffee000ull + resource);
    uint64_t x = elk_sim_splitmix64(&s);
    uint32_t half = w->opt.ttl_ms / 2u;
    switch (x & 3u) {
    case 0:
        return half;
    case 1:
        return 1u + (uint32_t)((x >> 8) % half);
    default:
        return 0;
    }
}

/* The work of a hold: proves it is alive every keepalive_every ms, unless it hangs (then
 * it never finishes either; the gateway keeps driving while the lock says held). */
static void work_keepalive(sim_world_t *w, sim_gw_t *g, uint64_t now)
{
    if (g->keepalive_ms == 0u || g->hung || now < g->next_keepalive) {
        return;
    }
    if (g->hang_at != 0u && now >= g->hang_at) {
        g->hung = true;
        g->work_until = UINT64_MAX;
        sim_trace(w, "hang", g->id, now, g->deadline);
        return;
    }
    if (elk_lock_keepalive(gw_lock(g), now) == ELK_OK) {
        sim_check_keepalive(w, g, now);
    }
    g->next_keepalive = now + g->keepalive_every;
}

void sim_gw_elk_event(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    sim_gw_t *g = (sim_gw_t *)user;
    sim_world_t *w = g->w;
    switch (ev->type) {
    case ELK_LOCK_EV_ACQUIRED:
        g->token = ev->token;
        g->deadline = ev->deadline;
        g->phase = GW_HOLD;
        g->work_until = g->lease_bound
            ? UINT64_MAX
            : ev->now + elk_sim_rng_range(&g->rng, 20, (uint64_t)w->opt.ttl_ms * 5u / 2u);
        g->next_tick = ev->now;
        g->hung = false;
        g->hang_at = 0;
        g->next_keepalive = ev->now + g->keepalive_every;
        if (g->hangs && elk_sim_rng_range(&g->rng, 0, 1) == 0u) {
            g->hang_at = ev->now + elk_sim_rng_range(&g->rng, 0, (uint64_t)w->opt.ttl_ms * 2u);
        }
        sim_check_acquired(w, g, ev->token);
        if (w->opt.fair && w->core.now_us >= w->calm_from) {
            g->m_done = true; /* served in the calm phase: asks no more */
        }
        if (w->opt.companion && !elk_lock_is_held(&g->companion, ev->now) &&
            elk_lock_state(&g->companion) != ELK_LOCK_ACQUIRING &&
            elk_lock_state(&g->companion) != ELK_LOCK_COMMITTING) {
            /* its renewals then join the lease's (batched renewals, lib/lock) */
            (void)elk_lock_acquire(&g->companion, ev->now, 0);
        }
        break;
    case ELK_LOCK_EV_ACQUIRE_FAILED:
        w->run.acquire_failed++;
        g->phase = GW_THINK;
        g->think_until = ev->now + think_ms(g);
        sim_trace(w, "acq_fail", g->id, (uint64_t)(-ev->err), ev->ok);
        break;
    case ELK_LOCK_EV_RENEWED:
    case ELK_LOCK_EV_RECOVERED:
        w->run.renewals++;
        g->deadline = ev->deadline;
        sim_trace(w, ev->type == ELK_LOCK_EV_RENEWED ? "renewed" : "recovered", g->id, ev->deadline,
                  ev->ok);
        sim_check_renewed(w, g);
        break;
    case ELK_LOCK_EV_SUSPECT:
        /* Still held until the deadline; a careful actuator may go safe early. */
        sim_trace(w, "suspect", g->id, (uint64_t)(-ev->err), ev->validity_ms);
        if (g->stop_on_suspect && g->phase == GW_HOLD) {
            g->phase = GW_STOPPING;
            g->work_until = ev->now + lock->cfg.stop_margin_ms;
        }
        break;
    case ELK_LOCK_EV_LOST:
        /* Stop the actuator now; release (which also clears LOST) only after it has
         * reached its safe state: releasing at once would delete keys that still
         * protect the stop window, and the next holder could start inside it. */
        sim_check_lost(w, g, ev->now);
        g->phase = GW_STOPPING;
        g->work_until = ev->now + lock->cfg.stop_margin_ms;
        break;
    default:
        sim_trace(w, elk_lock_event_name(ev->type), g->id, (uint64_t)(-ev->err), ev->ok);
        break;
    }
}

/* --permits: the semaphore's events are its permits' lock events; a grant also says which
 * permit's actuator the gateway drives from now on. */
static void on_sem_event(void *user, elk_sem_t *sem, unsigned permit, const elk_lock_event_t *ev)
{
    sim_gw_t *g = (sim_gw_t *)user;
    elk_lock_t *l = (elk_lock_t *)elk_sem_slot(sem, permit);
    if (l == NULL) {
        l = &sem->slot[0]; /* ACQUIRE_FAILED of the whole semaphore */
    }
    if (ev->type == ELK_LOCK_EV_ACQUIRED) {
        g->act = (uint8_t)(g->resource * g->w->opt.permits + (permit - 1u));
    }
    sim_gw_elk_event(user, l, ev);
}

static void gw_log_write(void *ctx, int level, const char *module, const char *text, size_t len)
{
    const sim_gw_t *g = ctx;
    (void)level;
    fprintf(g->w->trace, "%10" PRIu64 ".%03" PRIu64 " ms  log        %s %s: %.*s\n",
            g->w->core.now_us / 1000u, g->w->core.now_us % 1000u, g->name, module, (int)len, text);
}

/* --multi: one configuration for every lock of a multi lease (elk/multi.h): one lock delay
 * for all the run's resources, and no keepalive (lib/multi has none to pass on). */
static void multi_behaviour(const sim_world_t *w, sim_gw_t *g)
{
    g->lock_delay_ms = resource_lock_delay(w, 0);
    g->keepalive_ms = 0;
    g->keepalive_every = 0;
    g->hangs = false;
    if (w->opt.control == CTRL_MULTI_NAIVE) {
        g->lease_bound = false; /* renews what it took while it waits for the rest */
        g->stop_on_suspect = false;
    }
}

int sim_gw_setup_elk(sim_world_t *w, sim_gw_t *g)
{
    elk_client_config_t cc;
    elk_lock_config_t lc;
    bool resp3 = (elk_sim_rng_next(&g->rng) & 1u) != 0u;
    /* One gateway in four uses a single lease without renewal and works right up to
     * its deadline: the hold ends in LOST, the most demanding case for the margins. */
    g->lease_bound = elk_sim_rng_range(&g->rng, 0, 3) == 0u;
    g->lock_delay_ms = resource_lock_delay(w, g->resource);
    g->keepalive_ms = 0;
    g->keepalive_every = 0;
    g->hangs = g->hung = false;
    g->hang_at = 0;
    g->next_keepalive = UINT64_MAX;
    if (!g->lease_bound && elk_sim_rng_range(&g->rng, 0, 1) == 0u) {
        /* Half the renewing gateways hold with a keepalive; half of those hang sometimes. */
        g->keepalive_ms = (uint32_t)elk_sim_rng_range(&g->rng, w->opt.ttl_ms / 4u, w->opt.ttl_ms);
        g->keepalive_every = (uint32_t)elk_sim_rng_range(&g->rng, g->keepalive_ms / 5u,
                                                         g->keepalive_ms * 9u / 10u - TICK_MS);
        g->hangs = elk_sim_rng_range(&g->rng, 0, 1) == 0u;
    }
    g->stop_on_suspect = elk_sim_rng_range(&g->rng, 0, 1) == 0u;
    if (w->opt.multi != 0u) {
        multi_behaviour(w, g);
    }
    /* --trace shows why a gateway decided what it did: the library's log lines, at the true
     * time they were written. Without --trace nothing is formatted (write NULL). */
    g->log.ctx = g;
    g->log.write = w->trace != NULL ? gw_log_write : NULL;
    g->log.level = ELK_LOG_DEBUG;
    int rc = sim_gw_nodes_init(w, g, resp3, &g->log);
    if (rc == ELK_OK) {
        rc = elk_fleet_init(&g->fleet, g->nodes, w->opt.nodes);
    }
    if (rc == ELK_OK) {
        elk_client_config_defaults(&cc);
        cc.gateway_id = g->name;
        cc.key_prefix = "elk:";
        cc.mode = w->opt.nodes == 1u ? ELK_MODE_SINGLE : ELK_MODE_REDLOCK;
        cc.safety = ELK_SAFETY_WARN;
        /* Off in the controls that must show what happens without it, and in the two drift
         * controls: its clock check (which allows the lock's drift) takes node clocks running
         * faster than the lock was told for jumps and quarantines them, hiding the overlaps
         * those controls exist to show about the lease margin. */
        cc.vote_hygiene = w->opt.control != CTRL_NO_VOTE_HYGIENE &&
            w->opt.control != CTRL_NO_DRIFT_MARGIN && w->opt.control != CTRL_DRIFT_BEYOND;
        rc = elk_client_init(&g->client, &cc, &g->fleet, &g->entropy, &g->log);
    }
    if (rc == ELK_OK) {
        elk_lock_config_defaults(&lc);
        lc.ttl_ms = w->opt.ttl_ms;
        lc.drift_factor_ppm = w->opt.drift_ppm;
        lc.drift_fixed_ms = 2;
        if (g->lease_bound) {
            lc.renew_fraction_pct = 0;
        }
        if (w->opt.control == CTRL_NO_DRIFT_MARGIN) {
            lc.drift_factor_ppm = 0;
            lc.drift_fixed_ms = 0;
        }
        lc.stop_margin_ms = 20;
        lc.lock_delay_ms = g->lock_delay_ms;
        lc.keepalive_ms = g->keepalive_ms;
        lc.min_validity_ms = 50;
        lc.wait_min_ms = 20;
        lc.wait_max_ms = 150;
        lc.fencing = true;
        lc.use_release_channel = true;
        g->stop_ms = lc.stop_margin_ms;
        g->m_cfg = lc;
        g->m_count = 0;
        g->m_done = false;
        rc = w->opt.multi != 0u ? ELK_OK /* registered per attempt (gw_multi.c) */
            : w->opt.fair       ? sim_gw_fair_init(g, resource_names[g->resource], &lc)
            : w->opt.permits != 0u
            ? elk_sem_init(&g->sem, &g->client, resource_names[g->resource], w->opt.permits, &lc,
                           on_sem_event, g)
            : elk_lock_init(&g->lock, &g->client, resource_names[g->resource], &lc,
                            sim_gw_elk_event, g);
        if (rc == ELK_OK && w->opt.companion) {
            /* a resource of its own (nobody contends), renewed in the same batches */
            char own[32];
            elk_lock_config_t oc = lc;
            oc.lock_delay_ms = 0;
            oc.keepalive_ms = 0;
            oc.renew_fraction_pct = CONFIG_ELK_RENEW_FRACTION_PCT;
            memcpy(own, "own-", 4);
            memcpy(own + 4, g->name, strlen(g->name) + 1u);
            rc = elk_lock_init(&g->companion, &g->client, own, &oc, NULL, NULL);
        }
        /* The deadline a round confirms is its t_send + span (lock.h): the heartbeat check
         * recovers t_send from it. */
        g->span_ms = (uint32_t)(lc.ttl_ms - elk_lock_config_drift(&lc) - lc.stop_margin_ms);
    }
    if (rc != ELK_OK) {
        fprintf(stderr, "elk-sim: gateway %u setup failed: %s (%s)\n", g->id, elk_err_name(rc),
                elk_err_message(rc));
    }
    return rc;
}

/* --fair: how long a waiter waits. In the calm phase long enough for the queue ahead of it
 * (the fair_starved bound), so that the draining calm phase never loses a place to a
 * timeout; before it, 2 TTL as every other acquire. */
static uint64_t fair_wait_ms(const sim_world_t *w)
{
    if (w->core.now_us >= w->calm_from) {
        return sim_fair_starve_bound_us(w) / 1000u;
    }
    return 2u * (uint64_t)w->opt.ttl_ms;
}

/* What the gateway's application does at local time now; returns true when it called
 * into the lock API (so the client must be polled again to send). */
static bool behave(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t *next)
{
    int rc;
    switch (g->phase) {
    case GW_THINK:
        if (now < g->think_until) {
            *next = g->think_until;
            return false;
        }
        rc = w->opt.multi != 0u    ? sim_gw_multi_acquire(w, g, now)
            : w->opt.fair          ? sim_gw_fair_acquire(g, now, now + fair_wait_ms(w))
            : w->opt.permits != 0u ? elk_sem_acquire(&g->sem, now, now + 2u * w->opt.ttl_ms)
                                   : elk_lock_acquire(&g->lock, now, now + 2u * w->opt.ttl_ms);
        if (rc == ELK_E_WOULD_BLOCK) {
            g->phase = GW_WANT;
        } else if (rc == ELK_E_STATE && w->opt.multi != 0u) {
            g->think_until = now + TICK_MS; /* the last attempt's releases are in flight */
            *next = g->think_until;
        } else {
            sim_trace(w, "acq_err", g->id, (uint64_t)(-rc), 0);
            g->think_until = now + think_ms(g) + 1u;
            *next = g->think_until;
        }
        return true;
    case GW_HOLD:
        if (now >= g->deadline && !g->lost && w->opt.control != CTRL_MULTI_NAIVE) {
            /* The poll just made at now >= deadline must have fired LOST. */
            sim_check_lost_missing(w, g, now);
        }
        work_keepalive(w, g, now);
        if (now >= g->work_until) {
            /* Stop the actuator first, and release only once it has reached its safe
             * state (stop_margin later): the next holder may start at once. */
            g->phase = GW_STOPPING;
            g->work_until = now + g->stop_ms;
            *next = g->work_until;
            return false;
        }
        if (now >= g->next_tick && w->opt.multi != 0u) {
            sim_gw_multi_drive(w, g, now); /* every resource, each under its own guard */
            g->next_tick = now + TICK_MS;
        } else if (now >= g->next_tick) {
            /* Re-checked on every wake, including the first one after a pause. */
            bool held = w->opt.fair    ? elk_fair_is_held(&g->fair, now)
                : w->opt.permits != 0u ? elk_sem_is_held(&g->sem, now)
                                       : elk_lock_is_held(&g->lock, now);
            if (held) {
                sim_check_drive(w, g, now);
            }
            g->next_tick = now + TICK_MS;
        }
        *next = g->next_tick < g->work_until ? g->next_tick : g->work_until;
        if (g->keepalive_ms != 0u && !g->hung && g->next_keepalive < *next) {
            *next = g->next_keepalive;
        }
        return false;
    case GW_STOPPING:
        if (now < g->work_until) {
            *next = g->work_until;
            return false;
        }
        sim_check_release(w, g);
        if (w->opt.multi != 0u) {
            sim_gw_multi_release(w, g, now);
        } else if (w->opt.fair) {
            (void)elk_fair_release(&g->fair, now);
        } else if (w->opt.permits != 0u) {
            (void)elk_sem_release(&g->sem, now);
        } else {
            (void)elk_lock_release(&g->lock, now);
        }
        g->phase = GW_THINK;
        g->think_until = now + think_ms(g);
        if (g->m_done) {
            g->think_until = UINT64_MAX; /* served in the calm phase: asks no more */
        }
        *next = g->think_until;
        return true;
    default:
        return false;
    }
}

static uint64_t poll_client(sim_gw_t *g, uint64_t now)
{
    return elk_client_poll(&g->client, now);
}

void sim_gw_step_elk(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t *next_ms)
{
    sim_gw_step_rounds(w, g, now, next_ms, 4, w->opt.fair ? sim_gw_fair_poll : poll_client, behave);
}
