/* SPDX-License-Identifier: MIT */
/* Negative control: the old SETNX + GETSET-timestamp lock found in many tutorials (docs/design.md),
 * written natively.
 *   lock:   SETNX key <wall now + timeout + 1>; on 0, GET key; if that timestamp is
 *           in the past, GETSET key <new timestamp> and win only if the old value
 *           equals what GET returned; otherwise retry after a short sleep.
 *   hold:   drive while wall now < own timestamp (the client "checks its lock").
 *   unlock: GET key; DEL it if it still holds our timestamp.
 * It trusts every gateway's wall clock and has no fencing; losers overwrite the
 * winner's value. The checker must see double grants. It talks to node 0 only (the
 * scheme is single-instance) through the real lib/node connection code. */
#include <stdlib.h>
#include <string.h>

#include "sim_world.h"

#define TICK_MS 10u

static uint64_t wall_ms(const sim_gw_t *g)
{
    return elk_sim_clock_now_ms(&g->wall);
}

static const char *key_of(const sim_gw_t *g)
{
    static const char *const keys[SIM_MAX_RESOURCES] = {"lock:valve0", "lock:valve1", "lock:valve2",
                                                        "lock:valve3"};
    return keys[g->resource];
}

static void on_reply(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    sim_gw_t *g = (sim_gw_t *)user;
    sim_setnx_reply_t *r = &g->c_reply;
    (void)node;
    memset(r, 0, sizeof *r);
    r->status = status;
    if (status == ELK_OK && reply != NULL && reply->count > 0u) {
        const elk_resp_node_t *n = &reply->nodes[0];
        if (n->type == ELK_RESP_INTEGER) {
            r->is_int = true;
            r->ival = n->integer;
        } else if (n->type == ELK_RESP_BULK && n->len < sizeof r->bulk) {
            r->is_bulk = true;
            memcpy(r->bulk, n->str, n->len);
            r->bulk[n->len] = '\0';
        }
    }
    g->c_have_reply = true;
}

static bool send_cmd(sim_gw_t *g, uint64_t now, const char *cmd, const char *val)
{
    elk_resp_arg_t argv[3];
    size_t argc = 2;
    argv[0] = elk_resp_arg_cstr(cmd);
    argv[1] = elk_resp_arg_cstr(key_of(g));
    if (val != NULL) {
        argv[2] = elk_resp_arg_cstr(val);
        argc = 3;
    }
    g->c_have_reply = false;
    return elk_node_send(&g->nodes[0], now, argv, argc, 0, on_reply, g) == ELK_OK;
}

static void retry_later(sim_gw_t *g, uint64_t now, uint64_t lo, uint64_t hi)
{
    g->phase = GW_THINK;
    g->think_until = now + elk_sim_rng_range(&g->rng, lo, hi);
}

static void acquired(sim_world_t *w, sim_gw_t *g, uint64_t now, const char *value)
{
    snprintf(g->c_value, sizeof g->c_value, "%s", value);
    g->c_hold_until = strtoull(value, NULL, 10);
    g->phase = GW_HOLD;
    g->token = 0;
    g->deadline = UINT64_MAX;
    g->work_until = now + elk_sim_rng_range(&g->rng, 20, (uint64_t)w->opt.ttl_ms * 5u / 2u);
    g->next_tick = now;
    sim_check_acquired(w, g, 0);
}

int sim_gw_setup_setnx(sim_world_t *w, sim_gw_t *g)
{
    elk_node_config_t nc;
    elk_transport_t t = elk_sim_net_transport(&w->net, g->id, 0);
    int rc = elk_pool_init(&g->pool, g->pool_mem, sizeof g->pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE,
                           SIM_POOL_BLOCKS);
    elk_node_config_defaults(&nc);
    nc.endpoint.host = "127.0.0.1";
    nc.endpoint.port = (uint16_t)ELK_SIM_PORT_BASE;
    nc.password = w->password;
    nc.resp3 = false;
    nc.backoff_min_ms = 50;
    nc.backoff_max_ms = 1000;
    if (rc == ELK_OK) {
        rc = elk_node_init(&g->nodes[0], &nc, &t, &g->pool, &g->entropy, NULL);
    }
    g->c_have_reply = false;
    if (rc != ELK_OK) {
        fprintf(stderr, "elk-sim: control gateway %u setup failed: %s\n", g->id, elk_err_name(rc));
    }
    return rc;
}

/* GW_THINK: when the pause is over and the node ready, SETNX with our expiry time. */
static bool on_think(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t wall, uint64_t *next)
{
    if (now < g->think_until) {
        *next = g->think_until;
        return false;
    }
    if (!elk_node_is_ready(&g->nodes[0])) {
        retry_later(g, now, 10, 50);
        *next = g->think_until;
        return false;
    }
    snprintf(g->c_new, sizeof g->c_new, "%llu", (unsigned long long)(wall + w->opt.ttl_ms + 1u));
    if (send_cmd(g, now, "SETNX", g->c_new)) {
        g->phase = GW_C_SETNX;
    } else {
        retry_later(g, now, 10, 50);
    }
    return true;
}

/* The replies of the acquire steps: SETNX, GET of the holder's expiry, GETSET. */
static bool on_acquire_reply(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t wall)
{
    sim_setnx_reply_t *r = &g->c_reply;
    if (g->phase == GW_C_SETNX) {
        if (r->is_int && r->ival == 1) {
            acquired(w, g, now, g->c_new);
        } else if (r->is_int && r->ival == 0 && send_cmd(g, now, "GET", NULL)) {
            g->phase = GW_C_GET;
        } else {
            retry_later(g, now, 10, 50);
        }
    } else if (g->phase == GW_C_GET) {
        if (r->is_bulk && strtoull(r->bulk, NULL, 10) < wall) {
            snprintf(g->c_seen, sizeof g->c_seen, "%s", r->bulk);
            snprintf(g->c_new, sizeof g->c_new, "%llu",
                     (unsigned long long)(wall + w->opt.ttl_ms + 1u));
            if (send_cmd(g, now, "GETSET", g->c_new)) {
                g->phase = GW_C_GETSET;
                return true;
            }
        }
        retry_later(g, now, 5, 30);
    } else if (r->is_bulk && strcmp(r->bulk, g->c_seen) == 0) {
        acquired(w, g, now, g->c_new);
    } else {
        retry_later(g, now, 5, 30);
    }
    return true;
}

/* GW_HOLD: drive until the work or our expiry ends, then stop first. */
static bool on_hold(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t wall, uint64_t *next)
{
    if (now >= g->work_until || wall >= g->c_hold_until) {
        /* Stop first; unlock once the actuator is safe, as the elk gateways do. */
        g->phase = GW_STOPPING;
        g->work_until = now + 20u;
        *next = g->work_until;
        return false;
    }
    if (now >= g->next_tick) {
        sim_check_drive(w, g, now);
        g->next_tick = now + TICK_MS;
    }
    *next = g->next_tick < g->work_until ? g->next_tick : g->work_until;
    return false;
}

/* GW_STOPPING, then the unlock's GET and DEL replies. */
static bool on_unlock(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t *next)
{
    sim_setnx_reply_t *r = &g->c_reply;
    char buf[24];
    if (g->phase == GW_STOPPING) {
        if (now < g->work_until) {
            *next = g->work_until;
            return false;
        }
        sim_check_release(w, g);
        if (send_cmd(g, now, "GET", NULL)) {
            g->phase = GW_C_UNLOCK_GET;
        } else {
            retry_later(g, now, 0, 200);
        }
        return true;
    }
    if (!g->c_have_reply) {
        return false;
    }
    if (g->phase == GW_C_UNLOCK_GET) {
        snprintf(buf, sizeof buf, "%s", g->c_value);
        if (r->is_bulk && strcmp(r->bulk, buf) == 0 && send_cmd(g, now, "DEL", NULL)) {
            g->phase = GW_C_UNLOCK_DEL;
            return true;
        }
    }
    retry_later(g, now, 0, 200);
    return true;
}

static bool behave(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t *next)
{
    uint64_t wall = wall_ms(g);
    switch (g->phase) {
    case GW_THINK:
        return on_think(w, g, now, wall, next);
    case GW_C_SETNX:
    case GW_C_GET:
    case GW_C_GETSET:
        return g->c_have_reply && on_acquire_reply(w, g, now, wall);
    case GW_HOLD:
        return on_hold(w, g, now, wall, next);
    case GW_STOPPING:
    case GW_C_UNLOCK_GET:
    case GW_C_UNLOCK_DEL:
        return on_unlock(w, g, now, next);
    default:
        return false;
    }
}

static uint64_t poll_node(sim_gw_t *g, uint64_t now)
{
    return elk_node_poll(&g->nodes[0], now);
}

void sim_gw_step_setnx(sim_world_t *w, sim_gw_t *g, uint64_t now, uint64_t *next_ms)
{
    sim_gw_step_rounds(w, g, now, next_ms, 6, poll_node, behave);
}
