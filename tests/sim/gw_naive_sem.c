/* SPDX-License-Identifier: MIT */
/* Negative control for --permits (issue 28's trap): a counting semaphore that admits a
 * holder on each master while that master has fewer than N holders, and grants when a
 * quorum of masters admitted it, as a Redlock of counters would.
 *   ask:     on every master, SET nsem:{valveR}:k <value> NX PX ttl for k = 1, 2, ... until
 *            one is free (admitted on that master) or all N are taken (refused there);
 *   grant:   admitted on a quorum, with validity ttl - elapsed - drift - stop margin left;
 *            else DEL what it got and try again later;
 *   hold:    drive until the work or the validity ends, stop, then DEL its slots.
 * Each master alone never has more than N holders, yet with 3 masters and 2 permits three
 * holders can each have a different pair of masters: the checker's permits_exceeded must
 * fire. Real lib/node connections to every master; no lib/lock. */
#include <string.h>

#include "sim_world.h"

#define TICK_MS 10u

static void on_reply(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    sim_gw_t *g = (sim_gw_t *)user;
    uint32_t n = (uint32_t)(node - g->nodes);
    if (g->phase != GW_N_ASK || (g->n_pending & (1u << n)) == 0u) {
        return; /* a DEL's answer, or an ask given up on */
    }
    g->n_pending &= ~(1u << n);
    if (status == ELK_OK && reply != NULL && reply->count > 0u &&
        reply->nodes[0].type == ELK_RESP_SIMPLE) {
        g->n_slot[n] = g->n_try[n]; /* admitted: this master had a free slot */
        g->n_try[n] = 0;
    } else if (status == ELK_OK && g->n_try[n] < g->w->opt.permits) {
        g->n_try[n]++; /* that slot is taken here: the next one (sent from behave) */
    } else {
        g->n_try[n] = 0; /* every slot taken on this master, or no answer */
    }
}

static void slot_key(const sim_gw_t *g, uint32_t slot, char *out, size_t cap)
{
    snprintf(out, cap, "nsem:{valve%u}:%u", g->resource, slot);
}

static bool send_set(sim_world_t *w, sim_gw_t *g, uint32_t n, uint64_t now)
{
    char key[40], px[16];
    elk_resp_arg_t argv[6];
    slot_key(g, g->n_try[n], key, sizeof key);
    snprintf(px, sizeof px, "%u", w->opt.ttl_ms);
    argv[0] = elk_resp_arg_cstr("SET");
    argv[1] = elk_resp_arg_cstr(key);
    argv[2] = elk_resp_arg_cstr(g->c_value);
    argv[3] = elk_resp_arg_cstr("NX");
    argv[4] = elk_resp_arg_cstr("PX");
    argv[5] = elk_resp_arg_cstr(px);
    if (elk_node_send(&g->nodes[n], now, argv, 6, 0, on_reply, g) != ELK_OK) {
        return false;
    }
    g->n_pending |= 1u << n;
    return true;
}

/* DEL every slot it was admitted to (the answers are not waited for). */
static void release_slots(sim_gw_t *g, uint64_t now)
{
    uint32_t n;
    for (n = 0; n < g->w->opt.nodes; n++) {
        if (g->n_slot[n] != 0u) {
            char key[40];
            elk_resp_arg_t argv[2];
            slot_key(g, g->n_slot[n], key, sizeof key);
            argv[0] = elk_resp_arg_cstr("DEL");
            argv[1] = elk_resp_arg_cstr(key);
            (void)elk_node_send(&g->nodes[n], now, argv, 2, 0, on_reply, g);
            g->n_slot[n] = 0;
        }
    }
}

int sim_gw_setup_naive_sem(sim_world_t *w, sim_gw_t *g)
{
    int rc = sim_gw_nodes_init(w, g, false, NULL);
    memset(g->n_slot, 0, sizeof g->n_slot);
    memset(g->n_try, 0, sizeof g->n_try);
    g->n_pending = 0;
    if (rc != ELK_OK) {
        fprintf(stderr, "elk-sim: control gateway %u setup failed: %s\n", g->id, elk_err_name(rc));
    }
    return rc;
}

static void think(sim_gw_t *g, uint64_t now, uint64_t *next)
{
    g->phase = GW_THINK;
    g->think_until = now + elk_sim_rng_range(&g->rng, 10, 200);
    *next = g->think_until;
}

/* GW_THINK over: ask every master for a slot, from slot 1. */
static bool ask(sim_world_t *w, sim_gw_t *g, uint64_t now)
{
    uint32_t n;
    snprintf(g->c_value, sizeof g->c_value, "%s:%llu", g->name, (unsigned long long)g->lease);
    g->n_sent = now;
    g->n_pending = 0;
    g->phase = GW_N_ASK;
    for (n = 0; n < w->opt.nodes; n++) {
        g->n_slot[n] = 0;
        g->n_try[n] = elk_node_is_ready(&g->nodes[n]) ? 1u : 0u;
    }
    return true;
}

/* Every master has answered: a quorum admitted it with validity left, or it gives up. */
static void decide(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t *next)
{
    uint32_t n, admitted = 0;
    uint64_t drift = (uint64_t)w->opt.ttl_ms * w->opt.drift_ppm / 1000000u + 2u;
    uint64_t deadline = g->n_sent + w->opt.ttl_ms - drift - g->stop_ms;
    for (n = 0; n < w->opt.nodes; n++) {
        admitted += g->n_slot[n] != 0u ? 1u : 0u;
    }
    if (admitted < w->opt.nodes / 2u + 1u || now + 50u > deadline) {
        release_slots(g, now);
        think(g, now, next);
        return;
    }
    g->phase = GW_HOLD;
    g->token = 0;
    g->deadline = deadline;
    g->lost = false;
    g->work_until = now + elk_sim_rng_range(&g->rng, 20, (uint64_t)w->opt.ttl_ms);
    if (g->work_until > deadline) {
        g->work_until = deadline;
    }
    g->next_tick = now;
    sim_check_acquired(w, g, 0);
    *next = now;
}

static bool on_ask(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t *next)
{
    uint32_t n;
    bool sent = false;
    for (n = 0; n < w->opt.nodes; n++) {
        if (g->n_try[n] != 0u && (g->n_pending & (1u << n)) == 0u) {
            if (send_set(w, g, n, now)) {
                sent = true;
            } else {
                g->n_try[n] = 0;
            }
        }
    }
    if (g->n_pending == 0u) {
        decide(w, g, now, next);
        return true;
    }
    return sent;
}

static bool behave(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t *next)
{
    switch (g->phase) {
    case GW_THINK:
        if (now < g->think_until) {
            *next = g->think_until;
            return false;
        }
        return ask(w, g, now);
    case GW_N_ASK:
        return on_ask(w, g, now, next);
    case GW_HOLD:
        if (now >= g->work_until) {
            g->phase = GW_STOPPING;
            g->work_until = now + g->stop_ms;
            *next = g->work_until;
            return false;
        }
        if (now >= g->next_tick) {
            sim_check_drive(w, g, now);
            g->next_tick = now + TICK_MS;
        }
        *next = g->next_tick < g->work_until ? g->next_tick : g->work_until;
        return false;
    case GW_STOPPING:
        if (now < g->work_until) {
            *next = g->work_until;
            return false;
        }
        sim_check_release(w, g);
        release_slots(g, now);
        think(g, now, next);
        return true;
    default:
        return false;
    }
}

static uint64_t poll_nodes(sim_gw_t *g, uint64_t now)
{
    uint64_t next = UINT64_MAX;
    uint32_t n;
    for (n = 0; n < g->w->opt.nodes; n++) {
        uint64_t t = elk_node_poll(&g->nodes[n], now);
        next = t < next ? t : next;
    }
    return next;
}

void sim_gw_step_naive_sem(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t *next_ms)
{
    sim_gw_step_rounds(w, g, now, next_ms, 8, poll_nodes, behave);
}
