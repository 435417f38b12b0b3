/* SPDX-License-Identifier: MIT */
/*
 * Blocking convenience over the lease engine, for programs on POSIX systems that
 * have nothing else to do while they wait (scripts, tools, tests, benchmarks).
 * lib/ never blocks; these loops run elk_client_poll and sleep in elk_posix_wait on
 * the fleet's descriptors until the lock engine reaches the state asked for.
 *
 * The lock's event callback still fires from inside these calls. clock may be NULL
 * for the port's CLOCK_BOOTTIME clock (elk_posix_now_ms); pass the same clock the
 * nodes use for their deadlines.
 */
#ifndef ELK_BLOCKING_H
#define ELK_BLOCKING_H

#include <stdint.h>

#include "elk/lock.h"
#include "elk/platform.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Poll until a quorum of nodes is connected (elk_client_ready) or timeout_ms passes.
 * Returns ELK_OK or ELK_E_FLEET_UNAVAILABLE. */
int elk_blocking_connect(elk_client_t *client, uint32_t timeout_ms, const elk_clock_t *clock);

/* Acquire lock, waiting up to wait_ms for it (0: one round, no retry). Returns ELK_OK
 * once held (also for a reentrant acquire), or why not: ELK_E_LOCK_BUSY,
 * ELK_E_FLEET_UNAVAILABLE, ELK_E_LOCK_TIMEOUT, ELK_E_VALIDITY, ELK_E_ENTROPY, ELK_E_STATE
 * (an acquire already in progress). Does not connect: see elk_blocking_connect. */
int elk_blocking_acquire(elk_client_t *client, elk_lock_t *lock, uint32_t wait_ms,
                         const elk_clock_t *clock);

/* Release one hold; when it was the last, wait up to timeout_ms for the background
 * release round to finish (the lock is not held from the call on, whatever happens).
 * Returns what elk_lock_release returned (ELK_OK, ELK_E_LOCK_LOST, ELK_E_NOT_HELD). */
int elk_blocking_release(elk_client_t *client, elk_lock_t *lock, uint32_t timeout_ms,
                         const elk_clock_t *clock);

/* Keep the client running (renewals) for ms. Returns ELK_OK if lock is still held at
 * the end, or at once the reason it is not (the cause LOST reported: ELK_E_LOCK_LOST,
 * ELK_E_FLEET_LOST, ELK_E_LOCK_TAKEN, ELK_E_MAX_HOLD, ELK_E_MAX_RENEWALS, ...; or
 * ELK_E_NOT_HELD when it was not held to begin with). */
int elk_blocking_hold(elk_client_t *client, elk_lock_t *lock, uint32_t ms,
                      const elk_clock_t *clock);

/* One step of the loop the calls above use: sleep in elk_posix_wait on the fleet's
 * descriptors until elk_client_next_wake (at once after an acquire/release queued
 * requests) or `until`, whichever is first, then poll until the client is settled, so
 * states and events are current on return. Check your condition after each step.
 * Returns the time of the last poll. */
uint64_t elk_blocking_step(elk_client_t *client, uint64_t until, const elk_clock_t *clock);

#ifdef __cplusplus
}
#endif

#endif /* ELK_BLOCKING_H */
