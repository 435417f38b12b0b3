/* SPDX-License-Identifier: MIT */
/* --fair: a gateway of gw_elk.c whose acquires go through elk_fair_t (lib/fair). Its
 * behaviour, lock configuration and events are gw_elk.c's; this file adds the queue: the
 * fair handle in place of the lock, its poll after the client's, and what the checker
 * needs to judge the order of grants (the ticket, each round a quorum answered, the round
 * that named it head, the end of its wait). The ticket TTL is the lease TTL (--ttl-ms):
 * a waiter paused longer than that drops out of the queue, as a holder paused longer than
 * its lease loses it. Control unfair: the waiter keeps its ticket but asks for the lock as
 * soon as it has one. */
#include <string.h>

#include "sim_world.h"

static unsigned bits(uint32_t m)
{
    unsigned n = 0;
    for (; m != 0u; m &= m - 1u) {
        n++;
    }
    return n;
}

static void on_fair_event(void *user, elk_fair_t *fair, const elk_lock_event_t *ev)
{
    sim_gw_t *g = (sim_gw_t *)user;
    sim_gw_elk_event(user, &fair->lock, ev); /* the grant is checked there (fair_order) */
    if (ev->type == ELK_LOCK_EV_ACQUIRED || ev->type == ELK_LOCK_EV_ACQUIRE_FAILED) {
        sim_check_fair_left(g->w, g);
    }
}

int sim_gw_fair_init(sim_gw_t *g, const char *resource, const elk_lock_config_t *lc)
{
    memset(&g->fk, 0, sizeof g->fk);
    return elk_fair_init(&g->fair, &g->client, resource, lc, g->w->opt.ttl_ms, on_fair_event, g);
}

int sim_gw_fair_acquire(sim_gw_t *g, uint64_t now, uint64_t wait_deadline)
{
    int rc = elk_fair_acquire(&g->fair, now, wait_deadline);
    if (rc == ELK_E_WOULD_BLOCK) {
        sim_check_multi_ask(g->w, g); /* the calm phase drains as with --multi */
    }
    return rc;
}

/* What the replies just read say, before elk_fair_poll acts on them: a quorum answered
 * the round out (the ticket taken, or the ticket renewed on a quorum), or a quorum named
 * this waiter head. The lib's fields are read, never written. */
static void observe(sim_world_t *w, sim_gw_t *g)
{
    const elk_fair_t *f = &g->fair;
    unsigned q = (unsigned)elk_client_quorum(&g->client);
    uint64_t sent;
    if (!f->round_open || f->phase == ELK_FAIR_IDLE) {
        return;
    }
    sent = elk_sim_clock_true_at(&g->clock, f->round_at);
    if (f->seq != g->fk.seq_seen && bits(f->ok_mask) >= q) {
        g->fk.seq_seen = f->seq;
        if (f->phase == ELK_FAIR_TAKING) {
            sim_check_fair_ticket(w, g, f->round_max); /* the max over a quorum (fair.c) */
        } else {
            sim_check_fair_round(w, g, sent);
        }
    }
    if (f->phase == ELK_FAIR_QUEUED && f->seq != g->fk.head_seq && bits(f->head_mask) >= q) {
        g->fk.head_seq = f->seq;
        sim_check_fair_head(w, g, sent);
    }
}

/* Control unfair: at the first poll with a ticket, the lock's acquire at once (what
 * fair_lock does at the head), as a waiter that ignores the queue would. */
static void jump_queue(sim_world_t *w, sim_gw_t *g, uint64_t now)
{
    elk_fair_t *f = &g->fair;
    if (w->opt.control != CTRL_UNFAIR || f->phase != ELK_FAIR_QUEUED) {
        return;
    }
    f->phase = ELK_FAIR_LOCKING;
    f->ahead = 0;
    if (elk_lock_acquire(&f->lock, now, f->wait_deadline) != ELK_E_WOULD_BLOCK) {
        f->phase = ELK_FAIR_QUEUED; /* the queue's own deadline ends the wait */
        return;
    }
    sim_check_fair_head(w, g, w->core.now_us);
}

uint64_t sim_gw_fair_poll(sim_gw_t *g, uint64_t now)
{
    uint64_t a = elk_client_poll(&g->client, now), b;
    observe(g->w, g);
    b = elk_fair_poll(&g->fair, now);
    jump_queue(g->w, g, now); /* elk_lock_acquire sends at once */
    return a < b ? a : b;
}
