/* SPDX-License-Identifier: MIT */
/* One run of the simulated world: set it up from a seed, inject faults, dispatch
 * events in true-time order until the end, and hash everything that happened. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sim_world.h"

enum {
    EV_GW = ELK_SIM_EV_USER,
    EV_PART_TICK,
    EV_HEAL,
    EV_CRASH_TICK,
    EV_RESTART,
    EV_PAUSE_TICK,
    EV_JUMP_TICK,
    EV_FLUSH_TICK,
    EV_CALM,
    EV_END
};

#define FNV_PRIME 0x100000001b3ull

static void hash_bytes(sim_world_t *w, const void *p, size_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    size_t i;
    for (i = 0; i < n; i++) {
        w->hash = (w->hash ^ b[i]) * FNV_PRIME;
    }
}

static void hash_u64(sim_world_t *w, uint64_t v)
{
    uint8_t b[8];
    int i;
    for (i = 0; i < 8; i++) {
        b[i] = (uint8_t)(v >> (8 * i));
    }
    hash_bytes(w, b, 8);
}

void sim_trace(sim_world_t *w, const char *what, uint64_t a, uint64_t b, uint64_t c)
{
    hash_bytes(w, what, strlen(what));
    hash_u64(w, w->core.now_us);
    hash_u64(w, a);
    hash_u64(w, b);
    hash_u64(w, c);
    if (w->note != NULL) {
        w->note(w->note_ctx, w, what, a, b, c, NULL);
    }
    if (w->trace != NULL) {
        fprintf(w->trace,
                "%10" PRIu64 ".%03" PRIu64 " ms  %-10s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
                w->core.now_us / 1000u, w->core.now_us % 1000u, what, a, b, c);
    }
}

static void push(sim_world_t *w, uint64_t at, uint32_t kind, uint32_t a, uint64_t b)
{
    if (elk_sim_queue_push(&w->core.queue, at, kind, a, b) != ELK_OK) {
        w->queue_overflow = true;
    }
}

void sim_gw_wake(sim_world_t *w, sim_gw_t *g, uint64_t at_us)
{
    if (at_us < w->core.now_us) {
        at_us = w->core.now_us;
    }
    if (at_us < g->wake_at) {
        g->wake_at = at_us;
        push(w, at_us, EV_GW, g->id, at_us);
    }
}

void sim_gw_step_rounds(sim_world_t *w, sim_gw_t *g, uint64_t now_ms, uint64_t *next_ms, int rounds,
                        sim_gw_poll_fn poll, sim_gw_behave_fn behave)
{
    int i;
    uint64_t next = UINT64_MAX;
    for (i = 0; i < rounds; i++) {
        uint64_t b = UINT64_MAX;
        uint64_t p = poll(g, now_ms);
        bool acted = behave(w, g, now_ms, &b);
        next = p < b ? p : b;
        if (!acted) {
            break;
        }
    }
    *next_ms = next;
}

static void net_wake(void *user, uint8_t gw, uint64_t at_us)
{
    sim_world_t *w = (sim_world_t *)user;
    sim_gw_wake(w, &w->gw[gw], at_us);
}

/* Bytes as a person reads them in a trace: CR dropped, LF as a space, the rest of
 * the non-printable bytes as '.'. */
static void put_printable(FILE *f, const uint8_t *p, size_t n)
{
    size_t j;
    for (j = 0; j < n; j++) {
        if (p[j] != '\r') {
            fputc(p[j] == '\n' ? ' ' : (p[j] >= 32u && p[j] < 127u ? (int)p[j] : '.'), f);
        }
    }
}

/* --trace only: every command a node runs, with its reply. */
static void print_command(void *user, uint8_t node, uint8_t gw, const elk_sim_bytes_t *argv,
                          size_t argc, const uint8_t *reply, size_t reply_len)
{
    sim_world_t *w = (sim_world_t *)user;
    size_t i;
    fprintf(w->trace, "%10" PRIu64 ".%03" PRIu64 " ms  node%u <- gw%u:", w->core.now_us / 1000u,
            w->core.now_us % 1000u, node, gw);
    for (i = 0; i < argc; i++) {
        fputc(' ', w->trace);
        put_printable(w->trace, argv[i].p, argv[i].len > 48u ? 48u : argv[i].len);
    }
    fputs("  ->  ", w->trace);
    put_printable(w->trace, reply, reply_len > 60u ? 60u : reply_len);
    fputc('\n', w->trace);
}

static uint64_t every(sim_world_t *w, uint32_t mean_ms)
{
    return w->core.now_us +
        elk_sim_rng_range(&w->core.rng, (uint64_t)mean_ms * 500u, (uint64_t)mean_ms * 1500u);
}

static uint32_t pick_mask(sim_world_t *w, uint32_t count)
{
    uint32_t m = 0;
    while (m == 0u) {
        m = (uint32_t)elk_sim_rng_next(&w->core.rng) & ((1u << count) - 1u);
    }
    return m;
}

static void fault_partition(sim_world_t *w)
{
    const sim_profile_t *p = &w->prof;
    uint32_t gm = pick_mask(w, w->opt.gateways), nm = pick_mask(w, w->opt.nodes);
    uint32_t g, n;
    uint64_t len =
        elk_sim_rng_range(&w->core.rng, p->partition_min_ms, p->partition_max_ms) * 1000u;
    for (g = 0; g < w->opt.gateways; g++) {
        for (n = 0; n < w->opt.nodes; n++) {
            if (((gm >> g) & 1u) && ((nm >> n) & 1u)) {
                w->block_count[g][n]++;
                elk_sim_net_partition(&w->net, g, n, true);
            }
        }
    }
    sim_trace(w, "partition", gm, nm, len);
    push(w, w->core.now_us + len, EV_HEAL, gm, nm);
}

static void heal(sim_world_t *w, uint32_t gm, uint32_t nm)
{
    uint32_t g, n;
    for (g = 0; g < w->opt.gateways; g++) {
        for (n = 0; n < w->opt.nodes; n++) {
            if (((gm >> g) & 1u) && ((nm >> n) & 1u) && w->block_count[g][n] > 0u) {
                if (--w->block_count[g][n] == 0u) {
                    elk_sim_net_partition(&w->net, g, n, false);
                }
            }
        }
    }
    sim_trace(w, "heal", gm, nm, 0);
}

static void fault_crash(sim_world_t *w)
{
    const sim_profile_t *p = &w->prof;
    uint32_t n = (uint32_t)elk_sim_rng_range(&w->core.rng, 0, w->opt.nodes - 1u);
    uint64_t delay = elk_sim_rng_range(&w->core.rng, p->restart_min_ms, p->restart_max_ms) * 1000u;
    int mode = ELK_SIM_RESTART_KEEP;
    if (!w->net.nodes[n].up) {
        return;
    }
    if (elk_sim_rng_chance(&w->core.rng, p->lose_ppm)) {
        /* Without persistence a node may come back only after every key it could
         * have held has expired (it cannot be renewed while down): the delayed
         * restart Redlock requires. Then it never forgets a live lease. Profiles with
         * lose_at_once leave that to the clients' vote hygiene (issue 20). */
        mode = ELK_SIM_RESTART_LOSE;
        if (!p->lose_at_once) {
            delay += (uint64_t)w->opt.ttl_ms * 1500u;
        }
    }
    elk_sim_net_crash(&w->net, n);
    w->run.crashes++;
    w->run.empty_restarts += mode == ELK_SIM_RESTART_LOSE ? 1u : 0u;
    sim_trace(w, "crash", n, (uint64_t)mode, delay);
    push(w, w->core.now_us + delay, EV_RESTART, n, (uint64_t)mode);
}

static void fault_pause(sim_world_t *w)
{
    const sim_profile_t *p = &w->prof;
    uint32_t gi = (uint32_t)elk_sim_rng_range(&w->core.rng, 0, w->opt.gateways - 1u);
    sim_gw_t *g = &w->gw[gi];
    uint64_t len = elk_sim_rng_range(&w->core.rng, p->pause_min_ms, p->pause_max_ms) * 1000u;
    if (g->paused_until > w->core.now_us) {
        return;
    }
    g->pause_start = w->core.now_us;
    g->paused_until = w->core.now_us + len;
    g->resume_pending = true;
    sim_trace(w, "pause", gi, len, 0);
    sim_gw_wake(w, g, g->paused_until);
}

/* A forward jump of the jumper's wall clock (forward_jumps profiles), in us: 1..jump_ttl_max
 * TTLs, or (small_jump_ppm) 1..4 times just over the lease's drift margin, ttl * drift + the
 * 2 ms fixed allowance gw_elk.c gives every lock. */
static int64_t forward_jump_us(sim_world_t *w)
{
    const sim_profile_t *p = &w->prof;
    uint64_t ttl = w->opt.ttl_ms;
    uint64_t margin = ttl * w->opt.drift_ppm / 1000000u + 2u;
    if (elk_sim_rng_chance(&w->core.rng, p->small_jump_ppm)) {
        return (int64_t)elk_sim_rng_range(&w->core.rng, margin + 1u, 4u * margin + 4u) * 1000;
    }
    return (int64_t)elk_sim_rng_range(&w->core.rng, ttl, ttl * p->jump_ttl_max) * 1000;
}

static void fault_jump(sim_world_t *w)
{
    const sim_profile_t *p = &w->prof;
    uint32_t n = p->forward_jumps ? w->jumper
                                  : (uint32_t)elk_sim_rng_range(&w->core.rng, 0, w->opt.nodes - 1u);
    int64_t delta = (int64_t)elk_sim_rng_range(&w->core.rng, 1, p->jump_max_ms) * 1000;
    /* A forward jump shortens every lease on that node beyond any drift margin; with
     * a holder on a bare majority one such node is enough for a second grant
     * (Redlock's known limit). So forward jumps belong to the drift-beyond-bound
     * control and to profiles that test the clients' clock check (forward_jumps);
     * backward jumps lengthen leases (safe, costs liveness). */
    if (p->forward_jumps && elk_sim_rng_chance(&w->core.rng, p->forward_ppm)) {
        delta = forward_jump_us(w);
    } else if (w->opt.control != CTRL_DRIFT_BEYOND ||
               !elk_sim_rng_chance(&w->core.rng, p->forward_ppm)) {
        delta = -delta;
    }
    elk_sim_net_clock_jump(&w->net, n, delta);
    w->run.jumps++;
    w->run.forward_jumps += delta > 0 ? 1u : 0u;
    if (delta > 0) {
        /* expires queued tickets early; the clients' clock check sees it only in lease
         * replies (fair_order excuses what follows) */
        w->master_fault_at = w->core.now_us;
    }
    sim_trace(w, "jump", n, (uint64_t)delta, 0);
}

/* Issue 26: a master (or a majority, or all) loses its data with its connections open:
 * FLUSHALL, an eviction of the lease keys and the fleet marker, or (one node) a failover to
 * an empty replica behind the same address. Nothing restarts: only the clients' amnesia
 * check (the fleet marker's age in ACQUIRE/EXTEND replies) can see the first two. */
static void fault_flush(sim_world_t *w)
{
    const sim_profile_t *p = &w->prof;
    uint32_t n = w->opt.nodes;
    uint32_t count = elk_sim_rng_chance(&w->core.rng, p->flush_all_ppm) ? n : n / 2u + 1u;
    uint32_t first = (uint32_t)elk_sim_rng_range(&w->core.rng, 0, n - 1u);
    uint32_t mode = elk_sim_rng_chance(&w->core.rng, p->failover_ppm) ? 2u
        : elk_sim_rng_chance(&w->core.rng, p->evict_ppm)              ? 1u
                                                                      : 0u;
    uint32_t k;
    if (mode == 2u) {
        elk_sim_net_failover(&w->net, first);
        w->run.failovers++;
        count = 1u;
    }
    for (k = 0; mode != 2u && k < count; k++) {
        uint32_t i = (first + k) % n;
        if (mode == 1u) {
            elk_sim_net_evict(&w->net, i, "elk:marker", true);
        } else {
            elk_sim_net_flush(&w->net, i);
        }
    }
    w->run.flushes += mode == 0u ? 1u : 0u;
    w->run.evictions += mode == 1u ? 1u : 0u;
    w->data_lost = true;
    w->master_fault_at = w->core.now_us;
    sim_trace(w, "flush", first, mode, count);
}

static void calm(sim_world_t *w)
{
    uint32_t g, n;
    for (g = 0; g < w->opt.gateways; g++) {
        for (n = 0; n < w->opt.nodes; n++) {
            w->block_count[g][n] = 0;
            elk_sim_net_partition(&w->net, g, n, false);
        }
        if (w->gw[g].paused_until > w->core.now_us) {
            w->gw[g].paused_until = w->core.now_us;
            sim_gw_wake(w, &w->gw[g], w->core.now_us);
        }
    }
    sim_trace(w, "calm", 0, 0, 0);
}

/* --fair, calm phase: the first waiter of a resource seen queued behind someone (its ticket
 * known to a quorum) crashes for good: it never polls, renews or leaves again. Its ticket
 * must expire within the ticket TTL and the queue go on (fair_starved); it is not checked. */
static bool fair_crash(sim_world_t *w, sim_gw_t *g)
{
    uint32_t bit = 1u << g->resource;
    if (!w->opt.fair || w->core.now_us < w->calm_from || (w->fair_crashed & bit) != 0u ||
        g->fair.phase != ELK_FAIR_QUEUED || !g->fk.waiting || g->fair.ahead == 0u) {
        return false;
    }
    w->fair_crashed |= bit;
    g->crashed = true;
    g->m_asking = false;
    w->run.fair_crashes++;
    sim_trace(w, "gw_crash", g->id, (uint64_t)g->fk.ticket, g->fair.ahead);
    return true;
}

static void gw_event(sim_world_t *w, sim_gw_t *g, uint64_t at)
{
    uint64_t now_ms, next_ms = UINT64_MAX;
    if (at != g->wake_at) {
        return; /* superseded by an earlier wake that already ran */
    }
    g->wake_at = UINT64_MAX;
    if (g->crashed) {
        return; /* --fair: crashed for good, never runs again */
    }
    if (w->core.now_us < g->paused_until) {
        sim_gw_wake(w, g, g->paused_until); /* stopped: its code does not run */
        return;
    }
    g->in_resume_step = g->resume_pending;
    g->resume_pending = false;
    now_ms = elk_sim_clock_now_ms(&g->clock);
    if (w->opt.control == CTRL_SETNX_GETSET) {
        sim_gw_step_setnx(w, g, now_ms, &next_ms);
    } else if (w->opt.control == CTRL_NAIVE_SEMAPHORE) {
        sim_gw_step_naive_sem(w, g, now_ms, &next_ms);
    } else {
        sim_gw_step_elk(w, g, now_ms, &next_ms);
    }
    g->in_resume_step = false;
    if (fair_crash(w, g)) {
        return;
    }
    if (next_ms != UINT64_MAX) {
        uint64_t t;
        if (next_ms <= now_ms) {
            next_ms = now_ms + 1u; /* never spin at one instant */
        }
        t = elk_sim_clock_true_at(&g->clock, next_ms);
        sim_gw_wake(w, g, t);
    }
}

static void setup_clocks(sim_world_t *w, uint64_t *seeder)
{
    elk_sim_rng_t r;
    uint32_t bound = w->opt.drift_ppm;
    uint32_t i;
    if (w->opt.control == CTRL_DRIFT_BEYOND) {
        bound *= 20u;
        if (bound > 500000u) {
            bound = 500000u; /* +-25 %: clocks still run forwards */
        }
    }
    elk_sim_rng_seed(&r, elk_sim_splitmix64(seeder));
    for (i = 0; i < w->opt.nodes; i++) {
        int32_t rate = (int32_t)elk_sim_rng_range(&r, 0, bound) - (int32_t)(bound / 2u);
        int64_t off = INT64_C(1700000000000000) + (int64_t)elk_sim_rng_range(&r, 0, 1000000000u);
        elk_sim_clock_init(&w->net.nodes[i].clock, &w->core.now_us, off, rate);
    }
    for (i = 0; i < w->opt.gateways; i++) {
        sim_gw_t *g = &w->gw[i];
        int32_t rate = (int32_t)elk_sim_rng_range(&r, 0, bound) - (int32_t)(bound / 2u);
        /* A monotonic clock starts anywhere (boot time); a wall clock is NTP-close. */
        int64_t off = (int64_t)elk_sim_rng_range(&r, 0, 1000000000000u);
        int64_t skew = (int64_t)elk_sim_rng_range(&r, 0, 200000u) - 100000;
        elk_sim_clock_init(&g->clock, &w->core.now_us, off, rate);
        elk_sim_clock_init(&g->wall, &w->core.now_us, INT64_C(1700000000000000) + skew, rate);
    }
}

/* The first tick of each kind of fault the profile has, and the one master whose clock
 * jumps forward (forward_jumps profiles). */
static void schedule_faults(sim_world_t *w)
{
    const sim_profile_t *p = &w->prof;
    if (p->partition_every_ms) {
        push(w, every(w, p->partition_every_ms), EV_PART_TICK, 0, 0);
    }
    if (p->crash_every_ms) {
        push(w, every(w, p->crash_every_ms), EV_CRASH_TICK, 0, 0);
    }
    if (p->pause_every_ms) {
        push(w, every(w, p->pause_every_ms), EV_PAUSE_TICK, 0, 0);
    }
    if (p->jump_every_ms) {
        push(w, every(w, p->jump_every_ms), EV_JUMP_TICK, 0, 0);
    }
    if (p->flush_every_ms) {
        push(w, every(w, p->flush_every_ms), EV_FLUSH_TICK, 0, 0);
    }
    w->jumper = 0;
    if (p->forward_jumps) {
        w->jumper = (uint8_t)elk_sim_rng_range(&w->core.rng, 0, w->opt.nodes - 1u);
    }
}

/* A fresh run: the world's state reset, the core, net and scripts set up, the clocks and
 * the nodes' password drawn from seeder. */
static int run_reset(sim_world_t *w, uint64_t seed, uint64_t *seeder)
{
    uint32_t i;
    int rc;
    w->run_seed = seed;
    memset(&w->run, 0, sizeof w->run);
    w->first_violation[0] = '\0';
    w->hash = 0xcbf29ce484222325ull;
    memset(w->block_count, 0, sizeof w->block_count);
    w->data_lost = false;
    w->master_fault_at = 0;
    w->queue_overflow = false;
    w->calm_granted = false;
    w->lease_seq = 0;
    w->last_grant_at = 0;
    w->core.now_us = 0;
    elk_sim_rng_seed(&w->core.rng, elk_sim_splitmix64(seeder));
    rc = elk_sim_queue_init(&w->core.queue, w->events, SIM_EVENTS);
    if (rc == ELK_OK) {
        rc = elk_sim_net_init(&w->net, &w->core, &w->prof.net, w->opt.gateways, w->opt.nodes,
                              net_wake, w);
    }
    if (rc != ELK_OK) {
        return rc;
    }
    if (w->trace != NULL) {
        w->net.on_command = print_command;
        w->net.cmd_user = w;
    }
    elk_sim_scripts_init(&w->scripts, &w->net, w->opt.control == CTRL_NAIVE_FENCE);
    w->scripts.no_amnesia = w->opt.control == CTRL_NO_AMNESIA;
    /* the naive scheme is the counters' max alone: the clock floor (issue 26) would hide
     * what the missing commit round does to them */
    w->scripts.no_floor = w->opt.control == CTRL_NAIVE_FENCE;
    w->scripts.no_queue_expiry = w->opt.control == CTRL_FAIR_NO_EXPIRY;
    (void)elk_sim_net_set_scripts(&w->net, w->scripts.entry, ELK_SIM_EDGELOCK_SCRIPTS);
    setup_clocks(w, seeder);
    /* One run in four has password-protected nodes, so AUTH is on the path too. */
    w->password = (elk_sim_splitmix64(seeder) & 3u) == 0u ? "sim-secret" : NULL;
    for (i = 0; i < w->opt.nodes; i++) {
        w->net.nodes[i].password = w->password;
    }
    sim_check_reset(w);
    w->calm_from = (uint64_t)w->opt.duration_ms * 1000u;
    /* 4 TTL + 4 s for a grant after the faults healed, plus the quarantine (vote hygiene) a
     * master restarted empty late in the fault phase sits out once it is back: TTL + drift +
     * lock delay (at most TTL/2 in gw_elk.c), under 2 TTL. */
    w->end_at = w->calm_from + ((uint64_t)w->opt.ttl_ms * 6u + 4000u) * 1000u;
    if (w->opt.multi != 0u) {
        /* long enough for a gateway asking from the start of the calm phase to exceed the
         * multi_starved bound: a deadlock then shows */
        w->end_at = w->calm_from + sim_multi_starve_bound_us(w) + (uint64_t)w->opt.ttl_ms * 4000u;
    }
    w->fair_crashed = 0;
    if (w->opt.fair) {
        w->end_at = w->calm_from + sim_fair_starve_bound_us(w) + (uint64_t)w->opt.ttl_ms * 4000u;
    }
    return ELK_OK;
}

int sim_gw_nodes_init(sim_world_t *w, sim_gw_t *g, bool resp3, const elk_log_t *log)
{
    uint32_t n;
    int rc = elk_pool_init(&g->pool, g->pool_mem, sizeof g->pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE,
                           SIM_POOL_BLOCKS);
    for (n = 0; rc == ELK_OK && n < w->opt.nodes; n++) {
        elk_node_config_t nc;
        elk_transport_t t = elk_sim_net_transport(&w->net, g->id, n);
        elk_node_config_defaults(&nc);
        nc.endpoint.host = "127.0.0.1";
        nc.endpoint.port = (uint16_t)(ELK_SIM_PORT_BASE + n);
        nc.password = w->password;
        nc.resp3 = resp3;
        nc.connect_timeout_ms = 1000;
        nc.request_timeout_ms = 1000;
        nc.backoff_min_ms = 50;
        nc.backoff_max_ms = 1000;
        rc = elk_node_init(&g->nodes[n], &nc, &t, &g->pool, &g->entropy, log);
    }
    return rc;
}

/* Every gateway set up (its randomness drawn from seeder) and woken at a random start. */
static int setup_gateways(sim_world_t *w, uint64_t *seeder)
{
    uint32_t i;
    for (i = 0; i < w->opt.gateways; i++) {
        sim_gw_t *g = &w->gw[i];
        int rc;
        g->w = w;
        g->id = (uint8_t)i;
        g->resource = (uint8_t)(i % w->opt.resources);
        g->act = g->resource; /* with --permits, set at each grant (gw_elk.c) */
        g->stop_ms = 20;      /* the elk gateways' lock config says the same */
        snprintf(g->name, sizeof g->name, "gw%u", i);
        elk_sim_rng_seed(&g->rng_entropy, elk_sim_splitmix64(seeder));
        elk_sim_rng_seed(&g->rng, elk_sim_splitmix64(seeder));
        g->entropy = elk_sim_rng_entropy(&g->rng_entropy);
        g->phase = GW_THINK;
        g->think_until = 0;
        g->lease = 0;
        g->token = 0;
        g->deadline = 0;
        g->lost = false;
        g->m_done = false;
        g->crashed = false;
        g->paused_until = 0;
        g->pause_start = 0;
        g->resume_pending = g->in_resume_step = false;
        g->wake_at = UINT64_MAX;
        rc = w->opt.control == CTRL_SETNX_GETSET     ? sim_gw_setup_setnx(w, g)
            : w->opt.control == CTRL_NAIVE_SEMAPHORE ? sim_gw_setup_naive_sem(w, g)
                                                     : sim_gw_setup_elk(w, g);
        if (rc != ELK_OK) {
            return rc;
        }
        sim_gw_wake(w, g, elk_sim_rng_range(&g->rng, 0, 100000u));
    }
    return ELK_OK;
}

/* One event that is not the net's own; true at the end of the run. */
static bool dispatch(sim_world_t *w, const elk_sim_event_t *ev)
{
    bool faulting = w->core.now_us < w->calm_from;
    switch (ev->kind) {
    case EV_GW:
        gw_event(w, &w->gw[ev->a], ev->b);
        break;
    case EV_PART_TICK:
        if (faulting) {
            fault_partition(w);
            push(w, every(w, w->prof.partition_every_ms), EV_PART_TICK, 0, 0);
        }
        break;
    case EV_HEAL:
        heal(w, ev->a, (uint32_t)ev->b);
        break;
    case EV_CRASH_TICK:
        if (faulting) {
            fault_crash(w);
            push(w, every(w, w->prof.crash_every_ms), EV_CRASH_TICK, 0, 0);
        }
        break;
    case EV_RESTART:
        elk_sim_net_restart(&w->net, ev->a, (int)ev->b);
        if ((int)ev->b == ELK_SIM_RESTART_LOSE) {
            w->data_lost = true;
        }
        sim_trace(w, "restart", ev->a, ev->b, 0);
        break;
    case EV_PAUSE_TICK:
        if (faulting) {
            fault_pause(w);
            push(w, every(w, w->prof.pause_every_ms), EV_PAUSE_TICK, 0, 0);
        }
        break;
    case EV_JUMP_TICK:
        if (faulting) {
            fault_jump(w);
            push(w, every(w, w->prof.jump_every_ms), EV_JUMP_TICK, 0, 0);
        }
        break;
    case EV_FLUSH_TICK:
        if (faulting) {
            fault_flush(w);
            push(w, every(w, w->prof.flush_every_ms), EV_FLUSH_TICK, 0, 0);
        }
        break;
    case EV_CALM:
        calm(w);
        break;
    case EV_END:
        return true;
    default:
        break;
    }
    return false;
}

int sim_run(sim_world_t *w, uint64_t seed)
{
    uint64_t seeder = seed;
    elk_sim_event_t ev;
    int rc;
    bool done = false;

    rc = run_reset(w, seed, &seeder);
    if (rc == ELK_OK) {
        rc = setup_gateways(w, &seeder);
    }
    if (rc != ELK_OK) {
        return rc;
    }
    schedule_faults(w);
    push(w, w->calm_from, EV_CALM, 0, 0);
    push(w, w->end_at, EV_END, 0, 0);

    while (!done && elk_sim_queue_pop(&w->core.queue, &ev)) {
        w->core.now_us = ev.at_us;
        w->run.events++;
        hash_u64(w, ev.at_us);
        hash_u64(w, ((uint64_t)ev.kind << 32) | ev.a);
        hash_u64(w, ev.b);
        if (!elk_sim_net_handle(&w->net, &ev)) {
            done = dispatch(w, &ev);
        }
    }
    if (w->queue_overflow || w->net.dropped_events > 0u) {
        return ELK_E_SIM_QUEUE_FULL; /* an event was dropped: the run proves nothing */
    }
    if (w->opt.multi != 0u || w->opt.fair) {
        sim_check_multi_end(w);
    }
    if (!w->calm_granted) {
        sim_violation(w, V_LIVENESS, "no gateway acquired the lock after the faults healed");
    }
    w->run.sim_us = w->core.now_us;
    w->run.runs = 1;
    return ELK_OK;
}
