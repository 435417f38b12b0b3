/*
 * The public calls on one lock: check the arguments, let the engine make the transition,
 * then have the client write what it queued, so the caller's next wait is for the
 * replies. Calls go one way: here -> engine -> rounds -> node, and here -> client.
 * Also the state queries.
 */
#include "lock_internal.h"

/* Requests queued from outside a poll: the client writes them now (see
 * elk_client__flush_queued); inside a poll, the poll does. */
static LK_NOINLINE void lk_flush_due(elk_lock_t *lock, uint64_t now)
{
    elk_client_t *client = lock->client;
    if (client->due) {
        client->due = false;
        elk_client__flush_queued(client, now, elk_lock__wake(lock, now));
    }
}

int elk_lock_acquire(elk_lock_t *lock, uint64_t now, uint64_t wait_deadline)
{
    int rc;
    if (lock == NULL || lock->client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    rc = elk_lock__acquire(lock, now, wait_deadline);
    lk_flush_due(lock, now);
    return rc;
}

int elk_lock_release(elk_lock_t *lock, uint64_t now)
{
    int rc;
    if (lock == NULL || lock->client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    rc = elk_lock__release(lock, now);
    lk_flush_due(lock, now);
    return rc;
}

int elk_lock_abandon(elk_lock_t *lock, uint64_t now)
{
    int rc;
    if (lock == NULL || lock->client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    rc = elk_lock__abandon(lock, now);
    lk_flush_due(lock, now);
    return rc;
}

elk_lock_state_t elk_lock_state(const elk_lock_t *lock)
{
    return lock != NULL ? elk_lock__state(lock) : ELK_LOCK_IDLE;
}

bool elk_lock_is_held(const elk_lock_t *lock, uint64_t now)
{
    return lock != NULL && (lock->state == ELK_LOCK_HELD || lock->state == ELK_LOCK_RENEWING) &&
           now < lock->deadline;
}

bool elk_lock_busy(const elk_lock_t *lock)
{
    size_t i;
    elk_lock_state_t st;
    if (lock == NULL) {
        return false;
    }
    st = elk_lock__state(lock);
    if (st != ELK_LOCK_IDLE && st != ELK_LOCK_LOST) {
        return true;
    }
    if (lock->rel.kind != LK_NONE || lock->lost_release_at != 0u) {
        return true;
    }
    for (i = 0; i < ELK_LOCK_TICKETS; i++) {
        if (lock->tickets[i].in_use) {
            return true;
        }
    }
    return false;
}

static bool lk_held_state(const elk_lock_t *lock)
{
    return lock != NULL && (lock->state == ELK_LOCK_HELD || lock->state == ELK_LOCK_RENEWING);
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
