/* SPDX-License-Identifier: MIT */
/*
 * The lock's state: the one function that changes it, the transitions allowed (one
 * table, checked in a debug build), and the state as reported. The state is what it
 * says: ACQUIRING and COMMITTING are stored while their round runs; only SUSPECT is a
 * flag over HELD and RENEWING (the engine and every other query keep treating it as
 * held). Calls nothing of lib/lock.
 */
#include "lock_internal.h"

#ifndef NDEBUG
#define LK_TO(s) (1u << (unsigned)(s))

/* For each state, the states the engine may move it to (lock_engine.c says why each
 * happens). Staying in a state is always allowed. */
static const uint16_t lk_allowed[] = {
    /* IDLE: acquire */
    [ELK_LOCK_IDLE] = LK_TO(ELK_LOCK_ACQUIRING),
    /* ACQUIRING: a fencing commit; held; failed (a wait retries, or gives up); cancelled */
    [ELK_LOCK_ACQUIRING] = LK_TO(ELK_LOCK_COMMITTING) | LK_TO(ELK_LOCK_HELD) |
        LK_TO(ELK_LOCK_WAITING) | LK_TO(ELK_LOCK_IDLE) | LK_TO(ELK_LOCK_RELEASING),
    [ELK_LOCK_COMMITTING] = LK_TO(ELK_LOCK_HELD) | LK_TO(ELK_LOCK_WAITING) | LK_TO(ELK_LOCK_IDLE) |
        LK_TO(ELK_LOCK_RELEASING),
    /* HELD: renewal round; deadline or taken; release */
    [ELK_LOCK_HELD] = LK_TO(ELK_LOCK_RENEWING) | LK_TO(ELK_LOCK_LOST) | LK_TO(ELK_LOCK_RELEASING),
    /* RENEWING: renewed, or renewal stopped (cap, keepalive, abandon) */
    [ELK_LOCK_RENEWING] = LK_TO(ELK_LOCK_HELD) | LK_TO(ELK_LOCK_LOST) | LK_TO(ELK_LOCK_RELEASING),
    /* RELEASING: the release round ended; acquire again */
    [ELK_LOCK_RELEASING] = LK_TO(ELK_LOCK_IDLE) | LK_TO(ELK_LOCK_ACQUIRING),
    /* WAITING: retry round; wait over; cancelled */
    [ELK_LOCK_WAITING] =
        LK_TO(ELK_LOCK_ACQUIRING) | LK_TO(ELK_LOCK_IDLE) | LK_TO(ELK_LOCK_RELEASING),
    /* LOST: release (background keys or not); acquire again */
    [ELK_LOCK_LOST] = LK_TO(ELK_LOCK_RELEASING) | LK_TO(ELK_LOCK_IDLE) | LK_TO(ELK_LOCK_ACQUIRING),
    /* SUSPECT is never stored */
    [ELK_LOCK_SUSPECT] = 0u,
};
#endif

void elk_lock__set_state(elk_lock_t *lock, elk_lock_state_t to)
{
#ifndef NDEBUG
    /* A transition outside the table is a bug in the engine: stop here, where it happens
     * (a trap, not assert(): lib/ may not call the C library's abort). */
    if (to != lock->state &&
        ((size_t)lock->state >= sizeof lk_allowed / sizeof lk_allowed[0] ||
         (lk_allowed[lock->state] & LK_TO(to)) == 0u)) {
#if defined(__GNUC__)
        __builtin_trap();
#endif
    }
#endif
    lock->state = to;
}

/* The stored states of a hold (SUSPECT is one of them, see elk_lock_state). */
static bool lk_held_state(const elk_lock_t *lock)
{
    return lock->state == ELK_LOCK_HELD || lock->state == ELK_LOCK_RENEWING;
}

elk_lock_state_t elk_lock_state(const elk_lock_t *lock)
{
    if (lock == NULL) {
        return ELK_LOCK_IDLE;
    }
    return lock->suspect && lk_held_state(lock) ? ELK_LOCK_SUSPECT : lock->state;
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
