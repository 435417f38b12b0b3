/* SPDX-License-Identifier: MIT */
/*
 * One round of requests across the fleet, written once for both kinds a lock runs: the
 * foreground round (acquire, commit, extend) and the background release. Sending,
 * recording what was not sent, resends (a release to a node back up, EVAL after
 * NOSCRIPT), timeouts at the limit and the wake time. What a round's replies mean is
 * decided in lock_engine.c; this file's reply callback has lock_send.c decode and record
 * them, weighed by the vote hygiene's verdict on each (lock_hygiene.c).
 */
#include <string.h>

#include "lock_internal.h"

/* A round's per-node masks are 16 bits wide (elk/lock.h). (C99 has no static_assert.) */
typedef char elk_lock_round_masks_hold_every_node[(CONFIG_ELK_MAX_NODES <= 16) ? 1 : -1];

/* Reply callback of every ticket: the wire decodes the reply, the vote hygiene judges the
 * server's clock and fleet marker in it, the wire records it in its round. */
static void lk_on_reply(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    elk_lock_ticket_t *t = (elk_lock_ticket_t *)user;
    elk_lock_t *lock = t->lock;
    elk_client_t *client = lock->client;
    uint64_t lr = elk_lock__received_at(client, node);
    elk_lock_reply_t rp;
    int clock;
    int novote;

    elk_lock__reply_decode(t, status, reply, &rp);
    /* Every reading of the server's clock, of a decided round too: a waiter whose rounds are
     * decided before this node answers would otherwise compare with an old reference. A
     * server whose clock jumped may have let our key expire early, or may let the next
     * holder's: its answer does not count (lock_hygiene.c). */
    clock = rp.server_ms != 0
        ? elk_lock__clock_ok(client, lock, t->node, rp.server_ms, t->t_send, lr)
        : ELK_OK;
    /* The fleet marker: a node that lost its data within W (FLUSHALL, an empty replica) has
     * no vote until it cannot hold a key of a lease granted before (lock_hygiene.c). */
    novote = rp.res != NULL && rp.server_ms != 0
        ? elk_lock__marker_ok(client, t->node, rp.server_ms, rp.marker_ms, lr)
        : ELK_OK;
    elk_lock__reply_record(t, &rp, clock, novote);
}

/* Reply callback of a batched renewal or release request (elk_lock__send_batch): the
 * server's clock and fleet marker (renewals only) are judged once, as for one EXTEND (its clock reading is one reading,
 * and the leases of one request share the drift terms the check uses); then each lease's
 * own result, with those verdicts, is recorded in its own round, exactly as the reply to
 * its own EXTEND would be (elk_lock__reply_record), and lock_engine.c evaluates each round
 * as ever. */
static void lk_on_batch_reply(void *user, elk_node_t *node, int status,
                              const elk_resp_reply_t *reply)
{
    elk_lock_ticket_t *head = (elk_lock_ticket_t *)user;
    elk_client_t *client = head->lock->client;
    uint64_t lr = elk_lock__received_at(client, node);
    elk_lock_reply_t batch;
    elk_lock_reply_t rp;
    elk_lock_ticket_t *t;
    elk_lock_ticket_t *next;
    size_t k = 0;
    int clock;
    int novote;

    elk_lock__batch_decode(head, status, reply, &batch);
    clock = batch.server_ms != 0
        ? elk_lock__clock_ok(client, head->lock, head->node, batch.server_ms, head->t_send, lr)
        : ELK_OK;
    novote = batch.res != NULL && batch.server_ms != 0
        ? elk_lock__marker_ok(client, head->node, batch.server_ms, batch.marker_ms, lr)
        : ELK_OK;
    for (t = head; t != NULL; t = next, k++) {
        next = t->next;
        elk_lock__batch_reply_of(t, &batch, k, &rp);
        elk_lock__reply_record(t, &rp, clock, novote);
    }
}

/* Whether node i's request of round r goes in this poll's batched write: a renewal, batching
 * on, inside the poll (which writes the batches), and no lock-delay marker to push out
 * (EXTEND_BATCH has none; such leases renew one by one). */
static bool lk_batched(const elk_lock_t *lock, const elk_lock_round_t *r)
{
    return r->kind == LK_EXTEND && lock->client->cfg.batch_renewals && lock->client->in_poll &&
        lock->cfg.lock_delay_ms == 0u;
}

/* Node i's request of round r, if the node may get it (its vote: lock_session.c). */
static int lk_send(elk_lock_t *lock, const elk_lock_round_t *r, size_t i, uint64_t now)
{
    int rc = elk_lock__node_vote(lock->client, i, r->kind, now);
    if (rc != ELK_OK) {
        return rc;
    }
    if (lk_batched(lock, r)) {
        return elk_lock__queue_batched(lock, r, i, now, lock->client->batch_q);
    }
    /* elk_client_release_all: written in bulk before it returns (no lock delay: the batch
     * script has no marker key; such a lease's RELEASE goes now, as ever) */
    if (r->kind == LK_RELEASE && lock->client->bulk_q != NULL && lock->cfg.lock_delay_ms == 0u) {
        return elk_lock__queue_batched(lock, r, i, now, lock->client->bulk_q);
    }
    return elk_lock__send_script(
        lock, r, i, now, r->kind == LK_ACQUIRE ? elk_lock__token_floor(lock->client, now) : 0,
        lk_on_reply);
}

/* Send node i its request of round r (EVAL when r's NOSCRIPT mark for i is set, else
 * EVALSHA) and record it as awaited, or why it was not sent. One copy for a round's
 * start, a release's resends and the EVAL resends. */
static void lk_round_failed(elk_lock_round_t *r, size_t i, int rc, bool eval);

static LK_NOINLINE void lk_round_send(elk_lock_t *lock, elk_lock_round_t *r, size_t i, uint64_t now)
{
    uint32_t bit = LK_BIT(i);
    bool eval = (r->eval_mask & bit) != 0u;
    elk_lock_node_result_t *res = &r->results[i];
    int rc = lk_send(lock, r, i, now);
    r->eval_mask &= ~bit;
    r->unsent_mask &= ~bit;
    if (rc == ELK_OK) {
        r->pending_mask |= bit;
        res->status = ELK_LOCK_NODE_NONE;
        res->err = ELK_OK;
        return;
    }
    lk_round_failed(r, i, rc, eval);
}

/* Node i's request of round r was not sent (rc says why); eval: it was the EVAL resend. */
static void lk_round_failed(elk_lock_round_t *r, size_t i, int rc, bool eval)
{
    uint32_t bit = LK_BIT(i);
    elk_lock_node_result_t *res = &r->results[i];
    r->pending_mask &= ~bit;
    res->status = ELK_LOCK_NODE_ERROR;
    res->err = rc;
    /* A node that is down (reset by a timeout of this very round, typically) may get it
     * when it is back; only a release waits for that (lk_resend_unsent). An EVAL resend
     * that fails is an answer: the node failed. */
    if (!eval && (rc == ELK_E_NOT_CONNECTED || rc == ELK_E_QUEUE_FULL)) {
        r->unsent_mask |= bit;
    }
}

void elk_lock__round_start(elk_lock_t *lock, elk_lock_round_t *r, uint8_t kind, uint64_t now,
                           uint64_t limit)
{
    size_t i;
    r->seq = ++lock->gen;
    r->kind = kind;
    r->t_send = now;
    r->limit = limit;
    r->pending_mask = 0;
    r->eval_mask = 0;
    r->unsent_mask = 0;
    memset(r->results, 0, sizeof(r->results));
    for (i = 0; i < lock->client->fleet->count; i++) {
        lk_round_send(lock, r, i, now);
    }
}

/* A release not yet sent to node i goes once the node is back, until the release's limit.
 * Only for the release: a foreground round does not wait for a node, it counts it as
 * failed (its unsent mask is not looked at). */
static void lk_resend_unsent(elk_lock_t *lock, elk_lock_round_t *r, size_t i, uint64_t now)
{
    if ((r->unsent_mask & LK_BIT(i)) != 0u && now < r->limit &&
        elk_node_is_ready(&lock->client->fleet->nodes[i])) {
        lk_round_send(lock, r, i, now);
    }
}

/* NOSCRIPT answered: send the script text (EVAL) instead. */
static void lk_resend_eval(elk_lock_t *lock, elk_lock_round_t *r, size_t i, uint64_t now)
{
    if ((r->eval_mask & LK_BIT(i)) != 0u) {
        lk_round_send(lock, r, i, now);
    }
}

void elk_lock__round_resend(elk_lock_t *lock, uint64_t now)
{
    size_t i;
    /* Node by node, so each node's queue gets its requests in one fixed order. */
    for (i = 0; i < lock->client->fleet->count; i++) {
        lk_resend_unsent(lock, &lock->rel, i, now);
        lk_resend_eval(lock, &lock->fg, i, now);
        lk_resend_eval(lock, &lock->rel, i, now);
    }
}

void elk_lock__round_end(elk_lock_round_t *r, uint64_t now)
{
    size_t i;
    if (now >= r->limit) {
        /* every slot: a node past the fleet's end is never awaited */
        for (i = 0; i < CONFIG_ELK_MAX_NODES; i++) {
            if ((r->pending_mask & LK_BIT(i)) != 0u && r->results[i].status == ELK_LOCK_NODE_NONE) {
                r->results[i].status = ELK_LOCK_NODE_TIMEOUT;
                r->results[i].err = ELK_E_TIMEOUT;
            }
        }
    }
    r->kind = LK_NONE;
    r->pending_mask = 0;
    r->eval_mask = 0;
    r->unsent_mask = 0;
}

/* The round a queued ticket belongs to: the release round, or the foreground (renewal). */
static elk_lock_round_t *lk_round_of(const elk_lock_ticket_t *t)
{
    return t->kind == LK_RELEASE ? &t->lock->rel : &t->lock->fg;
}

/* One request to node i for the tickets collected (n of them, chained at head): alone, the
 * ordinary EXTEND or RELEASE (the same request and reply as without batching); else
 * EXTEND_BATCH or RELEASE_BATCH. A request not queued fails each lease's node as an unsent
 * request would. */
static void lk_batch_send(elk_client_t *client, size_t i, elk_lock_ticket_t *head, size_t n,
                          uint64_t now)
{
    elk_lock_ticket_t *t;
    elk_lock_ticket_t *next;
    int rc;
    if (n == 1u) {
        elk_lock_t *lock = head->lock;
        elk_lock_round_t *r = lk_round_of(head);
        bool eval = head->eval != 0u;
        head->in_use = 0; /* elk_lock__send_script takes its own */
        r->eval_mask |= eval ? LK_BIT(i) : 0u;
        rc = elk_lock__send_script(lock, r, i, now, 0, lk_on_reply);
        r->eval_mask &= ~LK_BIT(i);
        if (rc != ELK_OK) {
            lk_round_failed(r, i, rc, eval);
        }
        return;
    }
    rc = elk_lock__send_batch(client, i, head, n, now, lk_on_batch_reply);
    if (rc == ELK_OK) {
        return;
    }
    for (t = head; t != NULL; t = next) {
        next = t->next;
        t->in_use = 0;
        lk_round_failed(lk_round_of(t), i, rc, t->eval != 0u);
    }
}

/* Whether node i takes no more requests now (CONFIG_ELK_NODE_MAX_INFLIGHT in flight). */
static bool lk_node_full(const elk_client_t *client, size_t i)
{
    return elk_node_inflight(&client->fleet->nodes[i]) >= (size_t)CONFIG_ELK_NODE_MAX_INFLIGHT;
}

/* Put the collected chain at head back in front of node i's queue. */
static void lk_batch_keep(elk_client_t *client, size_t i, elk_lock_ticket_t *head)
{
    elk_lock_ticket_t *t = head;
    while (t->next != NULL) {
        t = t->next;
    }
    t->next = client->batch_q[i];
    client->batch_q[i] = head;
}

void elk_lock__batch_flush(elk_client_t *client, uint64_t now)
{
    size_t i;
    for (i = 0; i < client->fleet->count; i++) {
        uint32_t bit = LK_BIT(i);
        bool keep;
        elk_lock_ticket_t *head;
        size_t n;
        if (client->batch_q[i] == NULL) {
            client->batch_kept &= ~bit; /* nothing queued: the common poll costs no more */
            continue;
        }
        /* Kept: the node's queue was filled by our own batches (of this poll or an earlier
         * one, still being kept). A node full before any batch went to it (a stalled one)
         * fails the requests as it would without batching. */
        keep = (client->batch_kept & bit) != 0u || !lk_node_full(client, i);
        client->batch_kept &= ~bit;
        while ((n = elk_lock__batch_collect(client, i, now, client->batch_q, &head)) != 0u) {
            if (keep && lk_node_full(client, i)) {
                /* the rest waits for a free slot (a reply frees one and wakes the caller):
                 * failing them would make healthy leases SUSPECT. Their rounds wait as
                 * for a reply; the deadline does not (lock_engine.c). */
                lk_batch_keep(client, i, head);
                client->batch_kept |= bit;
                break;
            }
            lk_batch_send(client, i, head, n, now);
        }
    }
}

void elk_lock__bulk_flush(elk_client_t *client, uint64_t now)
{
    elk_lock_ticket_t *head;
    size_t i;
    size_t n;
    /* Everything goes now, whatever the node's request queue holds: a request the node
     * does not take is an unsent release, resent to it alone once it has room (as for a
     * release without bulk). Nothing stays queued once elk_client_release_all returns. */
    for (i = 0; i < client->fleet->count; i++) {
        while ((n = elk_lock__batch_collect(client, i, now, client->bulk_q, &head)) != 0u) {
            lk_batch_send(client, i, head, n, now);
        }
    }
}
