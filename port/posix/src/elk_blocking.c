/* SPDX-License-Identifier: MIT */
/*
 * Blocking convenience API (see elk/blocking.h): poll + elk_posix_wait loops.
 */
#include "elk/blocking.h"

#include "elk/port_posix.h"

static uint64_t blk_now(const elk_clock_t *clock)
{
    if (clock != NULL && clock->now_ms != NULL) {
        return clock->now_ms(clock->ctx);
    }
    return elk_posix_now_ms();
}

/* Poll until the client has nothing more to do at this moment (a poll returns "now"
 * when replies arrived while it flushed). Bounded: a busy fleet cannot pin us here.
 * now: read by the caller after its last blocking call, so polling at it is polling at
 * the current time; each poll does I/O, so the clock is read again after every one. */
static uint64_t blk_settle(elk_client_t *client, const elk_clock_t *clock, uint64_t now)
{
    int k;
    for (k = 0; k < 16; k++) {
        uint64_t next = elk_client_poll(client, now);
        uint64_t t = blk_now(clock);
        if (next > t) {
            return t;
        }
        now = t;
    }
    return now;
}

/* One step from a time the caller has just read (nothing blocked since): the clock is
 * read only where time can have passed, after the wait and after each poll. A cycle
 * read it 18 times before, 10 now (callgrind, bench_lock). */
static uint64_t blk_step(elk_client_t *client, uint64_t until, const elk_clock_t *clock,
                         uint64_t now)
{
    elk_wait_t waits[2u * CONFIG_ELK_MAX_NODES];
    size_t n;
    uint64_t next = elk_client_next_wake(client);
    if (next > until) {
        next = until;
    }
    if (next > now) {
        uint64_t deadline = next;
        n = elk_client_waits(client, waits, sizeof(waits) / sizeof(waits[0]));
        /* The wait uses the port's clock; with another clock only the length matters. */
        if (clock != NULL && clock->now_ms != NULL && next != UINT64_MAX) {
            deadline = elk_posix_now_ms() + (next - now);
        }
        (void)elk_posix_wait(waits, n, deadline, NULL);
        now = blk_now(clock);
    }
    /* Handle what woke us now, so the caller sees current states on return. */
    return blk_settle(client, clock, now);
}

uint64_t elk_blocking_step(elk_client_t *client, uint64_t until, const elk_clock_t *clock)
{
    return blk_step(client, until, clock, blk_now(clock));
}

int elk_blocking_connect(elk_client_t *client, uint32_t timeout_ms, const elk_clock_t *clock)
{
    uint64_t now;
    uint64_t end;
    if (client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    now = blk_now(clock);
    end = now + timeout_ms;
    for (;;) {
        now = blk_step(client, end, clock, now);
        if (elk_client_ready(client)) {
            return ELK_OK;
        }
        if (now >= end) {
            return ELK_E_FLEET_UNAVAILABLE;
        }
    }
}

int elk_blocking_acquire(elk_client_t *client, elk_lock_t *lock, uint32_t wait_ms,
                         const elk_clock_t *clock)
{
    uint64_t now;
    int rc;
    if (client == NULL || lock == NULL) {
        return ELK_E_INVALID_ARG;
    }
    now = blk_now(clock);
    rc = elk_lock_acquire(lock, now, wait_ms != 0u ? now + wait_ms : 0u);
    if (rc != ELK_E_WOULD_BLOCK) {
        return rc;
    }
    for (;;) {
        elk_lock_state_t st;
        now = blk_step(client, UINT64_MAX, clock, now);
        st = elk_lock_state(lock);
        if (st == ELK_LOCK_HELD || st == ELK_LOCK_RENEWING) {
            return ELK_OK;
        }
        if (st == ELK_LOCK_IDLE || st == ELK_LOCK_LOST || st == ELK_LOCK_RELEASING) {
            rc = elk_lock_last_error(lock);
            return rc != ELK_OK ? rc : ELK_E_NOT_HELD;
        }
        (void)now;
    }
}

int elk_blocking_release(elk_client_t *client, elk_lock_t *lock, uint32_t timeout_ms,
                         const elk_clock_t *clock)
{
    uint64_t now;
    uint64_t end;
    int rc;
    if (client == NULL || lock == NULL) {
        return ELK_E_INVALID_ARG;
    }
    now = blk_now(clock);
    rc = elk_lock_release(lock, now);
    end = now + timeout_ms;
    while (elk_lock_state(lock) == ELK_LOCK_RELEASING && now < end) {
        now = blk_step(client, end, clock, now);
    }
    return rc;
}

int elk_blocking_hold(elk_client_t *client, elk_lock_t *lock, uint32_t ms, const elk_clock_t *clock)
{
    uint64_t now;
    uint64_t end;
    if (client == NULL || lock == NULL) {
        return ELK_E_INVALID_ARG;
    }
    now = blk_now(clock);
    end = now + ms;
    if (!elk_lock_is_held(lock, now)) {
        return ELK_E_NOT_HELD;
    }
    for (;;) {
        now = blk_step(client, end, clock, now);
        if (!elk_lock_is_held(lock, now)) {
            int rc;
            /* Let the engine see the same time, so LOST has fired before we return. */
            (void)elk_client_poll(client, now);
            rc = elk_lock_last_error(lock);
            return rc != ELK_OK ? rc : ELK_E_LOCK_LOST;
        }
        if (now >= end) {
            return ELK_OK;
        }
    }
}
