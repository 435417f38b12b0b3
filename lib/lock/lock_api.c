/* SPDX-License-Identifier: MIT */
/*
 * The public calls on one lock, the caller's side of the client: the engine makes the
 * transition (and checks the arguments), then this file writes what it queued, so the
 * caller's next wait is for the replies. Calls go one way: here -> engine -> rounds ->
 * node, and here -> fleet (the write); never back up (CONTRIBUTING.md, "Layers"). Also
 * the queries of a hold (the state itself: lock_state.c).
 */
#include "lock_internal.h"

/* After a transition that marked the client due: write what it queued from outside a
 * poll, so that the caller's next wait is for the replies, not for a poll that would only
 * write them (the blocking API relies on it); inside a poll, the poll writes them. rc is
 * the transition's, passed through; ELK_E_INVALID_ARG means lock or its client is NULL. */
static LK_NOINLINE int lk_flushed(int rc, elk_lock_t *lock, uint64_t now)
{
    elk_client_t *client;
    uint64_t w;
    uint64_t lock_wake;
    if (rc == ELK_E_INVALID_ARG || !lock->client->due) {
        return rc;
    }
    client = lock->client;
    client->due = false;
    if (client->in_poll) {
        client->next_wake = 0;
        return rc;
    }
    /* A failed write fails its node and runs callbacks: as inside a poll (a nested poll
     * is refused, reply times use this now). */
    client->in_poll = true;
    client->now = now;
    /* The fleet only: an UNSUBSCRIBE queued on a subscriber connection makes its
     * descriptor wait for WRITE, so the next poll comes at once and sends it. */
    w = elk_fleet_flush(client->fleet, now);
    client->in_poll = false;
    if (client->dirty) {
        client->next_wake = 0; /* a callback ran: the next poll is due at once */
        return rc;
    }
    /* Nothing else changed since the last poll computed next_wake, nor (no callback
     * ran) since the transition that queued. */
    lock_wake = elk_lock__wake(lock, now);
    w = lock_wake < w ? lock_wake : w;
    client->next_wake = w < client->next_wake ? w : client->next_wake;
    return rc;
}

int elk_lock_acquire(elk_lock_t *lock, uint64_t now, uint64_t wait_deadline)
{
    return lk_flushed(elk_lock__acquire(lock, now, wait_deadline), lock, now);
}

int elk_lock_release(elk_lock_t *lock, uint64_t now)
{
    return lk_flushed(elk_lock__release(lock, now), lock, now);
}

int elk_lock_abandon(elk_lock_t *lock, uint64_t now)
{
    return lk_flushed(elk_lock__abandon(lock, now), lock, now);
}

int elk_client_release_all(elk_client_t *client, uint64_t now)
{
    int n;
    if (client == NULL || client->fleet == NULL || client->bulk_q != NULL) {
        return ELK_E_INVALID_ARG;
    }
    n = elk_lock__release_all(client, now);
    if (n == 0) {
        return 0;
    }
    client->due = false;
    client->next_wake = 0; /* the releases' rounds need a step: the next poll at once */
    if (!client->in_poll) {
        /* as lk_flushed: the write may fail a node and run callbacks, as inside a poll */
        client->in_poll = true;
        client->now = now;
        (void)elk_fleet_flush(client->fleet, now);
        client->in_poll = false;
    }
    return n;
}

/* The stored states of a hold (SUSPECT is one of them, see elk_lock_state). */
static bool lk_held_state(const elk_lock_t *lock)
{
    return lock != NULL && (lock->state == ELK_LOCK_HELD || lock->state == ELK_LOCK_RENEWING);
}

bool elk_lock_is_held(const elk_lock_t *lock, uint64_t now)
{
    return lock != NULL && (lock->state == ELK_LOCK_HELD || lock->state == ELK_LOCK_RENEWING) &&
        now < lock->deadline;
}

uint64_t elk_lock_token(const elk_lock_t *lock)
{
    return lk_held_state(lock) ? lock->token : 0u;
}

uint64_t elk_lock_deadline(const elk_lock_t *lock)
{
    return lk_held_state(lock) ? lock->deadline : 0u;
}

uint32_t elk_lock_validity(const elk_lock_t *lock, uint64_t now)
{
    if (!elk_lock_is_held(lock, now)) {
        return 0;
    }
    return lock->deadline - now > UINT32_MAX ? UINT32_MAX : (uint32_t)(lock->deadline - now);
}

uint32_t elk_lock_renewals(const elk_lock_t *lock)
{
    return lk_held_state(lock) ? lock->renewals : 0u;
}

uint32_t elk_lock_hold_count(const elk_lock_t *lock)
{
    return lk_held_state(lock) ? lock->hold_count : 0u;
}

int elk_lock_last_error(const elk_lock_t *lock)
{
    return lock != NULL ? lock->last_err : ELK_E_INVALID_ARG;
}

const char *elk_lock_key(const elk_lock_t *lock)
{
    return lock != NULL ? lock->key : "";
}

const char *elk_lock_value(const elk_lock_t *lock)
{
    return lock != NULL ? lock->value : "";
}

int elk_lock_keepalive(elk_lock_t *lock, uint64_t now)
{
    if (lock == NULL || lock->client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (!elk_lock_is_held(lock, now)) {
        return ELK_E_NOT_HELD;
    }
    /* Too late: renewal has stopped for this hold (a proof of life after the gap does not
     * undo it; the lease runs out at its deadline). */
    if (lock->renew_stopped && lock->last_err == ELK_E_KEEPALIVE_MISSED) {
        return ELK_E_KEEPALIVE_MISSED;
    }
    lock->keepalive_at = now;
    return ELK_OK;
}

int elk_lock_set_keepalive(elk_lock_t *lock, uint64_t now, uint32_t interval_ms)
{
    if (lock == NULL || lock->client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    lock->cfg.keepalive_ms = interval_ms;
    lock->keepalive_at = now;
    return ELK_OK;
}
