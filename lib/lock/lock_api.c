/*
 * The public calls on one lock: the engine makes the transition (and checks the
 * arguments), then the client writes what it queued, so the caller's next wait is for
 * the replies. Calls go one way: here -> engine -> rounds -> node, and here -> client.
 * Also the state queries.
 */
#include "lock_internal.h"

/* After a transition: requests it queued from outside a poll are written now (see
 * elk_client__flush_queued); inside a poll, the poll does. rc is the transition's, passed
 * through; ELK_E_INVALID_ARG means lock or its client is NULL (nothing was queued). */
static LK_NOINLINE int lk_flushed(int rc, elk_lock_t *lock, uint64_t now)
{
    if (rc != ELK_E_INVALID_ARG) {
        elk_client__flush_queued(lock, now);
    }
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

/* ACQUIRING and COMMITTING are not stored: the foreground round's kind says so (the
 * stored state is then IDLE). */
elk_lock_state_t elk_lock_state(const elk_lock_t *lock)
{
    if (lock == NULL) {
        return ELK_LOCK_IDLE;
    }
    switch (lock->fg.kind) {
    case LK_ACQUIRE:
        return ELK_LOCK_ACQUIRING;
    case LK_COMMIT:
        return ELK_LOCK_COMMITTING;
    default:
        return lock->state;
    }
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
    st = elk_lock_state(lock);
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
