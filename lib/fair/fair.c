/* SPDX-License-Identifier: MIT */
/*
 * Fair waiting (elk/fair.h): a ticket queue on the fleet in front of an ordinary lock.
 * The queue only decides who may ask for the lock; the lock alone decides who holds it.
 */
#include "elk/fair.h"

#if CONFIG_ELK_FAIR

#include <stddef.h>
#include <string.h>

#include "elk/err.h"
#include "elk/fair_scripts.h"

/* QUEUE_KEEP's EVAL (nine arguments: the script, three keys no longer than the lock's with
 * ":released", the id and three numbers, with their framing) is shorter than the lease
 * engine's longest request, which a pool block holds (lock.h). */
typedef char elk_fair_request_fits_t[sizeof(ELK_FAIR_SCRIPT_KEEP) + 3u * CONFIG_ELK_MAX_KEY_LEN +
                                                 ELK_FAIR_ID_MAX + 200u <=
                                             ELK_LOCK_REQUEST_MAX
                                         ? 1
                                         : -1];

static elk_node_t *fair_node(const elk_fair_t *f, size_t i)
{
    return &f->lock.client->fleet->nodes[i];
}

static size_t fair_nodes(const elk_fair_t *f)
{
    return f->lock.client->fleet->count;
}

static unsigned fair_bits(uint32_t m)
{
    unsigned n = 0;
    for (; m != 0u; m &= m - 1u) {
        n++;
    }
    return n;
}

static void fair_emit(elk_fair_t *f, const elk_lock_event_t *ev)
{
    if (f->on_event != NULL) {
        f->on_event(f->user, f, ev);
    }
}

/* Requests written from an API call go out at once; from inside a poll, at its end. */
static void fair_written(elk_fair_t *f, uint64_t now)
{
    if (f->lock.client->in_poll) {
        f->flush_due = true;
    } else {
        (void)elk_fleet_flush(f->lock.client->fleet, now);
    }
}

/* Give the ticket back on every ready node. Sent as EVAL without a reply callback: nothing
 * waits for it (a node that misses it drops the ticket within its TTL), and the handle may
 * be gone before the answer. Later replies of the rounds before it are ignored (seq). */
static void fair_leave(elk_fair_t *f, uint64_t now)
{
    size_t i;
    f->seq++;
    f->pending_mask = 0;
    f->round_open = false;
    for (i = 0; i < fair_nodes(f); i++) {
        elk_resp_arg_t argv[6];
        elk_node_t *n = fair_node(f, i);
        if (!elk_node_is_ready(n)) {
            continue;
        }
        argv[0] = elk_resp_arg_cstr("EVAL");
        argv[1] = elk_resp_arg_cstr(ELK_FAIR_SCRIPT_LEAVE);
        argv[2] = elk_resp_arg_int(2);
        argv[3] = elk_resp_arg_cstr(f->qkey);
        argv[4] = elk_resp_arg_cstr(f->qxkey);
        argv[5] = elk_resp_arg_cstr(f->id);
        (void)elk_node_send(n, now, argv, 6, 0, NULL, NULL);
    }
    fair_written(f, now);
}

/* The wait ends without the lock. */
static void fair_fail(elk_fair_t *f, int err, uint64_t now)
{
    elk_lock_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ELK_LOCK_EV_ACQUIRE_FAILED;
    ev.err = err;
    ev.now = now;
    ev.quorum = (uint8_t)elk_client_quorum(f->lock.client);
    ev.ok = (uint8_t)fair_bits(f->ok_mask);
    f->phase = ELK_FAIR_IDLE;
    f->ahead = 0;
    fair_leave(f, now);
    fair_emit(f, &ev);
}

static void fair_on_reply(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply);

static int fair_send_keep(elk_fair_slot_t *s, uint64_t now)
{
    elk_fair_t *f = s->fair;
    elk_resp_arg_t argv[9];
    argv[0] = elk_resp_arg_cstr(s->eval ? "EVAL" : "EVALSHA");
    argv[1] = elk_resp_arg_cstr(s->eval ? ELK_FAIR_SCRIPT_KEEP : ELK_FAIR_SCRIPT_KEEP_SHA1);
    argv[2] = elk_resp_arg_int(3);
    argv[3] = elk_resp_arg_cstr(f->qkey);
    argv[4] = elk_resp_arg_cstr(f->qxkey);
    argv[5] = elk_resp_arg_cstr(f->seqkey);
    argv[6] = elk_resp_arg_cstr(f->id);
    argv[7] = elk_resp_arg_int(s->value);
    argv[8] = elk_resp_arg_int((int64_t)f->ticket_ttl_ms);
    return elk_node_send(fair_node(f, s->node), now, argv, 9, 0, fair_on_reply, s);
}

/* One QUEUE_KEEP on every ready node whose last one has answered: a new ticket (ticket 0)
 * or the renewal of ours, which also puts it back on a master that lost it. */
static void fair_round(elk_fair_t *f, uint64_t now)
{
    size_t i;
    f->seq++;
    f->pending_mask = 0;
    f->ok_mask = 0;
    f->head_mask = 0;
    f->round_max = 0;
    f->round_ahead = UINT32_MAX;
    for (i = 0; i < fair_nodes(f); i++) {
        elk_fair_slot_t *s = &f->slot[i];
        if (s->in_use || !elk_node_is_ready(fair_node(f, i))) {
            continue;
        }
        s->seq = f->seq;
        s->eval = false;
        s->value = f->ticket;
        if (fair_send_keep(s, now) == ELK_OK) {
            s->in_use = true;
            f->pending_mask |= (uint16_t)(1u << i);
        }
    }
    f->round_open = true;
    f->round_at = now;
    f->next_keep = now + (f->phase == ELK_FAIR_LOCKING ? f->ticket_ttl_ms / 3u : f->poll_ms);
    fair_written(f, now);
}

/* {ticket, ahead, head} from one node: false for anything else (an error reply). */
static bool fair_parse(const elk_resp_reply_t *r, int64_t *ticket, int64_t *ahead)
{
    const elk_resp_node_t *n = r->nodes;
    if (r->count < 3u || n[0].type != ELK_RESP_ARRAY || n[0].integer < 2 ||
        n[1].type != ELK_RESP_INTEGER || n[2].type != ELK_RESP_INTEGER) {
        return false;
    }
    *ticket = n[1].integer;
    *ahead = n[2].integer;
    return *ticket > 0 && *ahead >= 0;
}

static bool fair_is_noscript(const elk_resp_reply_t *r)
{
    const elk_resp_node_t *n = r->nodes;
    return r->count > 0u && n[0].type == ELK_RESP_ERROR && n[0].len >= 8u &&
        memcmp(n[0].str, "NOSCRIPT", 8) == 0;
}

static void fair_on_reply(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    elk_fair_slot_t *s = (elk_fair_slot_t *)user;
    elk_fair_t *f = s->fair;
    uint16_t bit = (uint16_t)(1u << s->node);
    int64_t ticket = 0, ahead = 0;
    (void)node;
    s->in_use = false;
    if (s->seq != f->seq || (f->pending_mask & bit) == 0u) {
        return; /* a round already decided, or given up by a leave */
    }
    if (status == ELK_OK && !s->eval && fair_is_noscript(reply)) {
        s->eval = true; /* the script cache was flushed or the server restarted */
        if (fair_send_keep(s, f->lock.client->now) == ELK_OK) {
            s->in_use = true;
            return;
        }
    }
    f->pending_mask = (uint16_t)(f->pending_mask & ~bit);
    if (status != ELK_OK || !fair_parse(reply, &ticket, &ahead) ||
        !elk_client_node_votes(f->lock.client, s->node)) {
        return; /* counted as no answer */
    }
    f->ok_mask |= bit;
    f->round_max = ticket > f->round_max ? ticket : f->round_max;
    if (ahead == 0) {
        f->head_mask |= bit;
    }
    if ((uint64_t)ahead < f->round_ahead) {
        f->round_ahead = (uint32_t)ahead;
    }
}

/* At the head: the lock's own acquire (retries, release channel) for the rest of the wait. */
static void fair_lock(elk_fair_t *f, uint64_t now)
{
    int r;
    f->phase = ELK_FAIR_LOCKING;
    f->ahead = 0;
    f->next_keep = now + f->ticket_ttl_ms / 3u;
    r = elk_lock_acquire(&f->lock, now, f->wait_deadline);
    if (r != ELK_E_WOULD_BLOCK) {
        fair_fail(f, r == ELK_OK ? ELK_E_STATE : r, now);
    }
}

/* A round is decided once every node asked has answered, or earlier once the answers
 * settle it (tickets: a quorum answered; the head: a quorum said nobody live is ahead, or
 * too many said someone is for that to happen), or a third of the ticket TTL after it was
 * sent: a node that hangs until its request times out must not hold up the renewal. */
static bool fair_decided(const elk_fair_t *f, unsigned q, uint64_t now)
{
    unsigned ok = fair_bits(f->ok_mask), head = fair_bits(f->head_mask);
    if (f->pending_mask == 0u || now >= f->round_at + f->ticket_ttl_ms / 3u) {
        return true;
    }
    if (f->phase == ELK_FAIR_TAKING) {
        return ok >= q;
    }
    return head >= q || ok - head > fair_nodes(f) - q;
}

static void fair_evaluate(elk_fair_t *f, uint64_t now)
{
    unsigned q = (unsigned)elk_client_quorum(f->lock.client);
    bool late = now >= f->wait_deadline;
    f->round_open = false;
    if (f->phase == ELK_FAIR_TAKING) {
        if (fair_bits(f->ok_mask) >= q) {
            /* the max over a quorum: the same on every master, whichever answered */
            f->ticket = f->round_max;
            f->phase = ELK_FAIR_QUEUED;
            fair_round(f, now);
        } else if (late) {
            fair_fail(f, ELK_E_FLEET_UNAVAILABLE, now);
        }
        return;
    }
    if (f->phase != ELK_FAIR_QUEUED) {
        return; /* LOCKING: the round only renewed the ticket */
    }
    if (fair_bits(f->head_mask) >= q) {
        fair_lock(f, now);
    } else {
        if (fair_bits(f->ok_mask) >= q) {
            f->ahead = f->round_ahead;
        }
        if (late) {
            fair_fail(f, f->wait_deadline != 0u ? ELK_E_LOCK_TIMEOUT : ELK_E_LOCK_BUSY, now);
        }
    }
}

/* When the queue needs a step: the next round, the wait deadline, or, while a round is out
 * (its replies wake the caller through elk_client_poll), the moment it is decided anyway. */
static uint64_t fair_next(const elk_fair_t *f, uint64_t now)
{
    uint64_t next = f->round_open ? f->round_at + f->ticket_ttl_ms / 3u : f->next_keep;
    if (f->phase != ELK_FAIR_LOCKING && f->wait_deadline > now && f->wait_deadline < next) {
        next = f->wait_deadline;
    }
    return next > now ? next : now + 1u;
}

uint64_t elk_fair_poll(elk_fair_t *fair, uint64_t now)
{
    uint64_t next = UINT64_MAX;
    if (fair == NULL || fair->lock.client == NULL) {
        return next;
    }
    if (fair->phase != ELK_FAIR_IDLE) {
        if (fair->round_open &&
            fair_decided(fair, (unsigned)elk_client_quorum(fair->lock.client), now)) {
            fair_evaluate(fair, now);
        }
    }
    if (fair->phase != ELK_FAIR_IDLE && !fair->round_open) {
        bool queued = fair->phase != ELK_FAIR_LOCKING;
        if (queued && fair->wait_deadline != 0u && now >= fair->wait_deadline) {
            fair_fail(fair,
                      fair->phase == ELK_FAIR_TAKING ? ELK_E_FLEET_UNAVAILABLE : ELK_E_LOCK_TIMEOUT,
                      now);
        } else if (now >= fair->next_keep) {
            fair_round(fair, now);
        }
    }
    if (fair->flush_due) {
        fair->flush_due = false;
        (void)elk_fleet_flush(fair->lock.client->fleet, now);
    }
    return fair->phase != ELK_FAIR_IDLE ? fair_next(fair, now) : next;
}

static void fair_on_lock(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    elk_fair_t *f = (elk_fair_t *)user;
    (void)lock;
    if (f->phase == ELK_FAIR_LOCKING &&
        (ev->type == ELK_LOCK_EV_ACQUIRED || ev->type == ELK_LOCK_EV_ACQUIRE_FAILED)) {
        /* granted or given up: either way the ticket goes back now */
        f->phase = ELK_FAIR_IDLE;
        fair_leave(f, ev->now);
    }
    fair_emit(f, ev);
}

/* "<lock key><suffix>" into out; the lock's own check (":released" fits) covers these. */
static void fair_key(char *out, const char *key, const char *suffix)
{
    size_t k = strlen(key), s = strlen(suffix);
    memcpy(out, key, k);
    memcpy(out + k, suffix, s + 1u);
}

int elk_fair_init(elk_fair_t *fair, elk_client_t *client, const char *resource,
                  const elk_lock_config_t *cfg, uint32_t ticket_ttl_ms, elk_fair_event_fn on_event,
                  void *user)
{
    size_t i;
    int r;
    if (fair == NULL || client == NULL || (ticket_ttl_ms != 0u && ticket_ttl_ms < 3u)) {
        return ELK_E_INVALID_ARG;
    }
    memset(fair, 0, sizeof *fair);
    r = elk_lock_init(&fair->lock, client, resource, cfg, fair_on_lock, fair);
    if (r != ELK_OK) {
        return r;
    }
    fair->on_event = on_event;
    fair->user = user;
    fair->ticket_ttl_ms = ticket_ttl_ms != 0u ? ticket_ttl_ms : CONFIG_ELK_FAIR_TICKET_TTL_MS;
    fair->poll_ms = fair->lock.cfg.wait_min_ms;
    if (fair->poll_ms > fair->ticket_ttl_ms / 3u) {
        fair->poll_ms = fair->ticket_ttl_ms / 3u;
    }
    if (fair->poll_ms == 0u) {
        fair->poll_ms = 1u;
    }
    for (i = 0; i < CONFIG_ELK_MAX_NODES; i++) {
        fair->slot[i].fair = fair;
        fair->slot[i].node = (uint8_t)i;
    }
    fair_key(fair->qkey, fair->lock.key, ELK_FAIR_QUEUE_SUFFIX);
    fair_key(fair->qxkey, fair->lock.key, ELK_FAIR_EXPIRY_SUFFIX);
    fair_key(fair->seqkey, fair->lock.key, ELK_FAIR_SEQ_SUFFIX);
    return ELK_OK;
}

int elk_fair_deinit(elk_fair_t *fair)
{
    if (fair == NULL || fair->lock.client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (fair->phase != ELK_FAIR_IDLE || elk_fair_busy(fair)) {
        return ELK_E_STATE;
    }
    return elk_lock_deinit(&fair->lock);
}

/* A fresh waiter id for each acquire, "<gateway id>:<16 hex>", so that a ticket of an
 * earlier wait can never stand for this one. */
static int fair_make_id(elk_fair_t *f)
{
    static const char hex[] = "0123456789abcdef";
    const elk_client_t *c = f->lock.client;
    uint8_t b[8];
    size_t g = strlen(c->cfg.gateway_id), i;
    if (c->entropy == NULL || c->entropy->fill == NULL ||
        c->entropy->fill(c->entropy->ctx, b, sizeof b) != 0) {
        return ELK_E_ENTROPY;
    }
    memcpy(f->id, c->cfg.gateway_id, g);
    f->id[g++] = ':';
    for (i = 0; i < sizeof b; i++) {
        f->id[g++] = hex[b[i] >> 4];
        f->id[g++] = hex[b[i] & 15u];
    }
    f->id[g] = '\0';
    return ELK_OK;
}

int elk_fair_acquire(elk_fair_t *fair, uint64_t now, uint64_t wait_deadline)
{
    elk_lock_state_t st;
    int r;
    if (fair == NULL || fair->lock.client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (fair->phase != ELK_FAIR_IDLE) {
        return ELK_E_STATE;
    }
    st = elk_lock_state(&fair->lock);
    if (st != ELK_LOCK_IDLE && st != ELK_LOCK_RELEASING && st != ELK_LOCK_LOST) {
        return elk_lock_acquire(&fair->lock, now, wait_deadline); /* held: one more hold */
    }
    r = fair_make_id(fair);
    if (r != ELK_OK) {
        return r;
    }
    fair->wait_deadline = wait_deadline > now ? wait_deadline : 0u;
    fair->ticket = 0;
    fair->ahead = 0;
    fair->phase = ELK_FAIR_TAKING;
    fair_round(fair, now);
    return ELK_E_WOULD_BLOCK;
}

int elk_fair_release(elk_fair_t *fair, uint64_t now)
{
    elk_fair_phase_t was;
    if (fair == NULL || fair->lock.client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    was = fair->phase;
    if (was == ELK_FAIR_IDLE) {
        return elk_lock_release(&fair->lock, now);
    }
    fair->phase = ELK_FAIR_IDLE;
    fair->round_open = false;
    fair->ahead = 0;
    if (was == ELK_FAIR_LOCKING) {
        (void)elk_lock_release(&fair->lock, now); /* cancels the acquire */
    }
    fair_leave(fair, now);
    return ELK_OK;
}

elk_fair_phase_t elk_fair_phase(const elk_fair_t *fair)
{
    return fair != NULL ? fair->phase : ELK_FAIR_IDLE;
}

int64_t elk_fair_ticket(const elk_fair_t *fair)
{
    return fair != NULL ? fair->ticket : 0;
}

uint32_t elk_fair_ahead(const elk_fair_t *fair)
{
    return fair != NULL ? fair->ahead : 0u;
}

elk_lock_t *elk_fair_lock(elk_fair_t *fair)
{
    return fair != NULL ? &fair->lock : NULL;
}

bool elk_fair_is_held(const elk_fair_t *fair, uint64_t now)
{
    return fair != NULL && elk_lock_is_held(&fair->lock, now);
}

bool elk_fair_busy(const elk_fair_t *fair)
{
    size_t i;
    if (fair == NULL || fair->lock.client == NULL) {
        return false;
    }
    for (i = 0; i < CONFIG_ELK_MAX_NODES; i++) {
        if (fair->slot[i].in_use) {
            return true;
        }
    }
    return elk_lock_busy(&fair->lock);
}

#else
/* Fair waiting left out (CONFIG_ELK_FAIR off): ISO C wants a translation unit to declare
 * something. */
typedef int elk_fair_not_built_t;
#endif /* CONFIG_ELK_FAIR */
