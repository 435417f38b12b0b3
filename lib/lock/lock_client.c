/* SPDX-License-Identifier: MIT */
/*
 * The lock client: registration of locks, the poll loop over fleet and locks,
 * node events (scripts preloaded and safety checked on every new connection,
 * release messages routed to waiters).
 */
#include <string.h>

#include "lock_internal.h"

/* CONFIG_ELK_POOL_BLOCK_SIZE too small for ELK_LOCK_REQUEST_MAX (elk/lock.h): raise it in
 * Kconfig. A node's transmit buffer is one block; an EVAL that cannot fit an empty one
 * is never sent, and no lease is ever granted. (C99 has no static_assert.) */
typedef char elk_pool_block_must_hold_the_longest_request
    [(CONFIG_ELK_POOL_BLOCK_SIZE >= ELK_LOCK_REQUEST_MAX) ? 1 : -1];

void elk_client_config_defaults(elk_client_config_t *cfg)
{
    if (cfg == NULL) {
        return;
    }
    memset(cfg, 0, sizeof(*cfg));
    cfg->gateway_id = "gw";
    cfg->key_prefix = "elk:";
    cfg->mode = ELK_MODE_REDLOCK;
    cfg->safety = ELK_SAFETY_WARN;
    cfg->vote_hygiene = true;
    cfg->batch_renewals = true;
}

/* Printable ASCII without space; braces would break the hash tag. */
static bool lk_name_byte_ok(char c)
{
    return c > 0x20 && c < 0x7f && c != '{' && c != '}';
}

static int lk_check_name(const char *s, size_t max, bool may_be_empty)
{
    size_t n;
    size_t i;
    if (s == NULL) {
        return ELK_E_INVALID_ARG;
    }
    n = strlen(s);
    if (n == 0u && !may_be_empty) {
        return ELK_E_NAME_INVALID;
    }
    if (n > max) {
        return ELK_E_NAME_TOO_LONG;
    }
    for (i = 0; i < n; i++) {
        if (!lk_name_byte_ok(s[i])) {
            return ELK_E_NAME_INVALID;
        }
    }
    return ELK_OK;
}

/* ------------------------------------------------------------ node events */

/* Index of node in the client's fleet (SIZE_MAX if not one of them). */
static size_t lk_node_of(const elk_client_t *client, const elk_node_t *node)
{
    size_t i;
    for (i = 0; i < client->fleet->count; i++) {
        if (&client->fleet->nodes[i] == node) {
            return i;
        }
    }
    return SIZE_MAX;
}

static void lk_on_state(void *user, elk_node_t *node, elk_node_state_t state, int err)
{
    elk_client_t *client = (elk_client_t *)user;
    size_t i = lk_node_of(client, node);
    if (i != SIZE_MAX && state == ELK_NODE_READY) {
        client->nodes[i].fresh = 1;
        /* no vote until checked: an acquire between now and the next poll must not use it */
        client->nodes[i].unsafe = client->cfg.safety == ELK_SAFETY_REFUSE ? 2u : 0u;
        client->nodes[i].hygiene.pending = client->cfg.vote_hygiene; /* until PROBE has answered */
        client->dirty = true;
    }
    if (client->cfg.on_node_state != NULL) {
        client->cfg.on_node_state(client->cfg.node_state_user, node, state, err);
    }
}

static void lk_on_sub_state(void *user, elk_node_t *node, elk_node_state_t state, int err)
{
    elk_client_t *client = (elk_client_t *)user;
    size_t i;
    (void)err;
    if (state != ELK_NODE_READY || client->cfg.subscribers == NULL) {
        return;
    }
    /* count equals the fleet's (checked in elk_client_init), which is at most
     * CONFIG_ELK_MAX_NODES; the explicit bound also lets the compiler see it. */
    for (i = 0; i < client->cfg.subscribers->count && i < (size_t)CONFIG_ELK_MAX_NODES; i++) {
        if (&client->cfg.subscribers->nodes[i] == node) {
            client->nodes[i].sub_fresh = 1;
            client->dirty = true;
        }
    }
}

static void lk_on_push(void *user, elk_node_t *node, const elk_resp_reply_t *push)
{
    elk_client_t *client = (elk_client_t *)user;
    size_t idx = 0;
    const elk_resp_node_t *top = elk_resp_reply_top(push, &idx);
    if (top != NULL && (top->type == ELK_RESP_PUSH || top->type == ELK_RESP_ARRAY) &&
        top->integer >= 1 && idx + 1u < push->count) {
        const elk_resp_node_t *kind = &push->nodes[idx + 1u];
        /* RESP3 pub/sub message: >3 "message" <channel> <payload> */
        if (top->integer == 3 && idx + 3u < push->count && elk_resp_str_eq(kind, "message")) {
            const elk_resp_node_t *ch = &push->nodes[idx + 2u];
            const elk_resp_node_t *pl = &push->nodes[idx + 3u];
            elk_lock__release_message(client, ch->str, ch->len, pl->str, pl->len);
            return;
        }
        if (elk_resp_str_eq(kind, "subscribe") || elk_resp_str_eq(kind, "unsubscribe")) {
            return; /* confirmations of our own SUBSCRIBE / UNSUBSCRIBE */
        }
    }
    if (client->cfg.on_push != NULL) {
        client->cfg.on_push(client->cfg.push_user, node, push);
    }
}

/* Preload the scripts node i has not been sent yet, as far as its send buffer takes them
 * (the four do not fit one block beside the checks): the rest go after the next flush,
 * so the first EVALSHA of a round does not cost a NOSCRIPT round trip. */
/* Scripts to preload: the four, and EXTEND_BATCH once batches can form (batching on, two
 * locks registered; a lock registered later has it sent after the next flush). */
static uint8_t lk_preload_count(const elk_client_t *client)
{
    return client->cfg.batch_renewals && client->lock_count >= 2u ? 5u : 4u;
}

static void lk_preload(elk_client_t *client, size_t i, uint64_t now)
{
    while (client->nodes[i].preloaded < lk_preload_count(client) &&
           elk_lock__send_plain(client, i, elk_lock__script_load[client->nodes[i].preloaded], 3,
                                now) == ELK_OK) {
        client->nodes[i].preloaded++;
    }
}

static void lk_node_fresh(elk_client_t *client, size_t i, uint64_t now)
{
    elk_node_t *node = &client->fleet->nodes[i];
    size_t k;

    client->nodes[i].fresh = 0;
    client->nodes[i].unsafe = 0;
    if (!elk_node_is_ready(node)) {
        return;
    }
    /* The probe and the safety check first: they decide the node's vote, and what follows
     * may not all fit the send buffer or the request queue (a preload that does not fit
     * only costs a NOSCRIPT round trip later; a check that does not fit left the node
     * without a vote). */
    elk_lock__hygiene_start(client, i, now);
    elk_lock__safety_start(client, i, now);
    for (k = 0; k < client->lock_count; k++) {
        elk_lock__resubscribe(client->locks[k], i);
    }
    client->nodes[i].preloaded = 0;
    lk_preload(client, i, now);
}

/* ------------------------------------------------------------------ client */

int elk_client_init(elk_client_t *client, const elk_client_config_t *cfg, elk_fleet_t *fleet,
                    const elk_entropy_t *entropy, const elk_log_t *log)
{
    size_t i;
    int rc;
    if (client == NULL || cfg == NULL || fleet == NULL || fleet->nodes == NULL ||
        fleet->count == 0u || fleet->count > CONFIG_ELK_MAX_NODES || entropy == NULL ||
        entropy->fill == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (cfg->mode == ELK_MODE_SINGLE && fleet->count != 1u) {
        return ELK_E_INVALID_ARG;
    }
    if (cfg->mode != ELK_MODE_SINGLE && cfg->mode != ELK_MODE_REDLOCK) {
        return ELK_E_INVALID_ARG;
    }
    rc = lk_check_name(cfg->gateway_id, CONFIG_ELK_GATEWAY_ID_MAX_LEN, false);
    if (rc != ELK_OK) {
        return rc;
    }
    rc = lk_check_name(cfg->key_prefix, CONFIG_ELK_MAX_KEY_LEN, true);
    if (rc != ELK_OK) {
        return rc;
    }
    if (cfg->subscribers != NULL &&
        (cfg->subscribers->nodes == NULL || cfg->subscribers->count != fleet->count)) {
        return ELK_E_INVALID_ARG;
    }
    memset(client, 0, sizeof(*client));
    client->cfg = *cfg;
    client->fleet = fleet;
    client->entropy = entropy;
    client->log = log;
    for (i = 0; i < fleet->count; i++) {
        elk_node_on_state(&fleet->nodes[i], lk_on_state, client);
        elk_node_on_push(&fleet->nodes[i], lk_on_push, client);
        client->nodes[i].index = (uint8_t)i;
        client->nodes[i].fresh = elk_node_is_ready(&fleet->nodes[i]) ? 1u : 0u;
        /* no vote before its probe; a node not connected says ELK_E_NOT_CONNECTED itself */
        client->nodes[i].hygiene.pending = cfg->vote_hygiene && client->nodes[i].fresh != 0u;
        if (cfg->subscribers != NULL) {
            elk_node_t *sn = &cfg->subscribers->nodes[i];
            elk_node_set_subscriber(sn, true);
            elk_node_on_state(sn, lk_on_sub_state, client);
            elk_node_on_push(sn, lk_on_push, client);
        }
    }
    return ELK_OK;
}

bool elk_client_ready(const elk_client_t *client)
{
    size_t i;
    size_t n = 0;
    if (client == NULL || client->fleet == NULL) {
        return false;
    }
    for (i = 0; i < client->fleet->count; i++) {
        /* as elk_client_node_votes says: at the last poll's time */
        if (elk_node_is_ready(&client->fleet->nodes[i]) &&
            elk_lock__node_vote(client, i, LK_ACQUIRE, client->now) == ELK_OK) {
            n++;
        }
    }
    return n >= elk_client_quorum(client);
}

/* ------------------------------------------------------------------- poll */

/* The per-node chores of the poll, each for fleet node i (its record client->nodes[i]);
 * those with a wake return when they are due next (UINT64_MAX: nothing to wait for). */

/* The node (re)connected: probe, safety check, release channels, scripts. */
static void lk_chore_fresh(elk_client_t *client, size_t i, uint64_t now)
{
    if (client->nodes[i].fresh) {
        lk_node_fresh(client, i, now);
    }
}

/* Its subscriber connection (RESP2 release channel) came back: SUBSCRIBE again. */
static void lk_chore_resubscribe(elk_client_t *client, size_t i)
{
    size_t k;
    if (client->nodes[i].sub_fresh) {
        client->nodes[i].sub_fresh = 0;
        for (k = 0; k < client->lock_count; k++) {
            elk_lock__resubscribe(client->locks[k], i);
        }
    }
}

/* After a flush: what did not fit the send buffers before it (the safety check behind the
 * probe, preloads) goes now, flushed again; that flush's wake. */
static uint64_t lk_chore_after_flush(elk_client_t *client, size_t i, uint64_t now)
{
    if ((client->nodes[i].safety_due || client->nodes[i].preloaded < lk_preload_count(client)) &&
        elk_node_is_ready(&client->fleet->nodes[i])) {
        if (client->nodes[i].safety_due) {
            elk_lock__safety_start(client, i, now); /* first: it decides the vote */
        }
        lk_preload(client, i, now); /* what did not fit before that flush */
        return elk_fleet_flush(client->fleet, now);
    }
    return UINT64_MAX;
}

/* Last: a node event still to handle makes the next poll due at once, and a quarantine
 * that ends gives a waiting round its node back: look then. */
static uint64_t lk_chore_settle(elk_client_t *client, size_t i, uint64_t now)
{
    uint64_t until = client->nodes[i].hygiene.until;
    if (client->nodes[i].fresh || client->nodes[i].sub_fresh) {
        client->dirty = true;
    }
    if (until <= now) {
        return UINT64_MAX;
    }
    if (client->quarantine_wake == 0u || until < client->quarantine_wake) {
        client->quarantine_wake = until;
    }
    return until;
}

/* The chores before the locks' steps, node by node, in this order: a new connection's
 * probe and safety check first (they decide its vote), the clock refresh, the repeated
 * safety check, the release channel. Returns next lowered by their wakes. */
static uint64_t lk_chores_before(elk_client_t *client, uint64_t now, uint64_t next)
{
    uint64_t w;
    size_t i;
    for (i = 0; i < client->fleet->count; i++) {
        lk_chore_fresh(client, i, now);
        w = elk_lock__hygiene_refresh(client, i, now);
        next = w < next ? w : next;
        w = elk_lock__safety_recheck(client, i, now);
        next = w < next ? w : next;
        lk_chore_resubscribe(client, i);
    }
    return next;
}

/* The chore after the flush of what the steps queued, node by node. */
static uint64_t lk_chores_flushed(elk_client_t *client, uint64_t now, uint64_t next)
{
    uint64_t w;
    size_t i;
    for (i = 0; i < client->fleet->count; i++) {
        w = lk_chore_after_flush(client, i, now);
        next = w < next ? w : next;
    }
    return next;
}

/* The last chore (after the subscribers' flush too), node by node. */
static uint64_t lk_chores_last(elk_client_t *client, uint64_t now, uint64_t next)
{
    uint64_t w;
    size_t i;
    for (i = 0; i < client->fleet->count; i++) {
        w = lk_chore_settle(client, i, now);
        next = w < next ? w : next;
    }
    return next;
}

uint64_t elk_client_poll(elk_client_t *client, uint64_t now)
{
    uint64_t next;
    uint64_t w;
    size_t i;
    if (client == NULL || client->in_poll) {
        return now;
    }
    client->in_poll = true;
    client->now = now;
    client->dirty = false;
    next = elk_fleet_poll(client->fleet, now);
    if (client->cfg.subscribers != NULL) {
        w = elk_fleet_poll(client->cfg.subscribers, now);
        next = w < next ? w : next;
    }
    next = lk_chores_before(client, now, next);
    if (client->quarantine_wake != 0u && now >= client->quarantine_wake) {
        /* a node's quarantine is over: a waiting acquire gets its vote back now, not at
         * its next random retry (as when a release message arrives) */
        client->quarantine_wake = 0;
        for (i = 0; i < client->lock_count; i++) {
            elk_lock__wake_waiter(client->locks[i]);
        }
    }
    /* Batched renewals: when one lease's renewal is due, those due soon join it (the
     * steps queue them; elk_lock__batch_flush writes them, per node, in as few requests
     * as fit). */
    client->renew_tick = false;
    /* (one lock alone has no one to join it) */
    for (i = 0; client->cfg.batch_renewals && client->lock_count > 1u && i < client->lock_count;
         i++) {
        if (elk_lock__renew_due(client->locks[i], now)) {
            client->renew_tick = true;
            break;
        }
    }
    for (i = 0; i < client->lock_count; i++) {
        w = elk_lock__step(client->locks[i], now);
        next = w < next ? w : next;
    }
    client->renew_tick = false;
    elk_lock__batch_flush(client, now);
    /* Send what the steps queued. Not read: answers to requests written microseconds
     * ago are not there yet, and anything that did arrive wakes the caller's wait. */
    client->dirty = false;
    w = elk_fleet_flush(client->fleet, now);
    next = w < next ? w : next;
    next = lk_chores_flushed(client, now, next);
    if (client->cfg.subscribers != NULL) {
        w = elk_fleet_flush(client->cfg.subscribers, now);
        next = w < next ? w : next;
    }
    next = lk_chores_last(client, now, next);
    if (client->dirty) {
        next = now;
    }
    client->in_poll = false;
    next = next < now ? now : next;
    client->next_wake = next;
    return next;
}

size_t elk_client_waits(const elk_client_t *client, elk_wait_t *out, size_t max)
{
    size_t n;
    if (client == NULL || client->fleet == NULL) {
        return 0;
    }
    n = elk_fleet_waits(client->fleet, out, max);
    if (client->cfg.subscribers != NULL && n < max) {
        n += elk_fleet_waits(client->cfg.subscribers, out + n, max - n);
    }
    return n;
}

uint64_t elk_client_next_wake(const elk_client_t *client)
{
    return client != NULL ? client->next_wake : 0u;
}

/* -------------------------------------------------------------- lock slots */

int elk_lock_init(elk_lock_t *lock, elk_client_t *client, const char *resource,
                  const elk_lock_config_t *cfg, elk_lock_event_fn on_event, void *user)
{
    size_t plen;
    size_t rlen;
    size_t i;
    int rc;
    if (lock == NULL || client == NULL || resource == NULL) {
        return ELK_E_INVALID_ARG;
    }
    for (i = 0; i < client->lock_count; i++) {
        if (client->locks[i] == lock) {
            return ELK_E_STATE; /* already registered */
        }
    }
    memset(lock, 0, sizeof(*lock));
    if (cfg != NULL) {
        lock->cfg = *cfg;
    } else {
        elk_lock_config_defaults(&lock->cfg);
    }
    rc = elk_lock_config_check(&lock->cfg);
    if (rc != ELK_OK) {
        return rc;
    }
    lock->span_ms = elk_lock__span(&lock->cfg);
    rc = lk_check_name(resource, CONFIG_ELK_MAX_KEY_LEN, false);
    if (rc != ELK_OK) {
        return rc;
    }
    plen = strlen(client->cfg.key_prefix);
    rlen = strlen(resource);
    if (plen + rlen + 2u + sizeof(ELK_LOCK_CHANNEL_SUFFIX) - 1u > CONFIG_ELK_MAX_KEY_LEN) {
        return ELK_E_NAME_TOO_LONG;
    }
    if (client->lock_count >= CONFIG_ELK_MAX_LOCKS) {
        return ELK_E_TOO_MANY_LOCKS;
    }
    memcpy(lock->key, client->cfg.key_prefix, plen);
    lock->key[plen] = '{';
    memcpy(lock->key + plen + 1u, resource, rlen);
    lock->key[plen + 1u + rlen] = '}';
    lock->key_len = (uint16_t)(plen + rlen + 2u);
    lock->key[lock->key_len] = '\0';
    lock->client = client;
    lock->on_event = on_event;
    lock->user = user;
    lock->state = ELK_LOCK_IDLE;
    client->locks[client->lock_count++] = lock;
    return ELK_OK;
}

int elk_lock_deinit(elk_lock_t *lock)
{
    elk_client_t *client;
    size_t i;
    if (lock == NULL || lock->client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    client = lock->client;
    if (client->in_poll || elk_lock_busy(lock)) {
        return ELK_E_STATE;
    }
    for (i = 0; i < client->lock_count; i++) {
        if (client->locks[i] == lock) {
            client->locks[i] = client->locks[client->lock_count - 1u];
            client->lock_count--;
            break;
        }
    }
    lock->client = NULL;
    return ELK_OK;
}
