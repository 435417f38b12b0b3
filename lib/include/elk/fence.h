/* SPDX-License-Identifier: MIT */
/*
 * Actuator-side fencing guard.
 *
 * The program that drives an actuator keeps the highest fencing token it ever
 * accepted in durable storage and refuses any command that carries a lower one.
 * A holder whose lease ended without it noticing (a long pause, a partition) then
 * cannot drive the actuator after a newer holder has, because the newer holder's
 * token is larger (design.md, "Fencing tokens across a fleet").
 *
 * Rules:
 *  - token >= highest accepted: accepted. Equal tokens are accepted because one
 *    holder sends many commands under the same lease.
 *  - a higher token is written to storage and synced BEFORE acceptance is reported,
 *    so a crash right after "accepted" cannot forget it;
 *  - token < highest: refused with ELK_E_FENCE_STALE;
 *  - any storage failure: refused with ELK_E_FENCE_STORAGE (fail closed), and the
 *    guard reloads from storage before it accepts anything again.
 *
 * Several processes (or tasks) on one actuator: the storage may offer lock/unlock.
 * Then every decision is made under that lock on a value reloaded inside it, so the
 * decisions form one total order that agrees with real time (linearisable): a call
 * that returned "accepted T" is followed only by acceptances of tokens >= T, and the
 * stored value never goes down. Without lock/unlock (one task owns the storage, as on
 * most MCUs) the caller must not decide from two places at once.
 *
 * Check, then act, is not enough: a step that passed its check just before a newer
 * holder's first check would still be running while the newer holder drives. So the
 * actuator checks AND acts under the guard: elk_fence_begin(token), drive the step,
 * elk_fence_end(). While one step holds the guard no other check can decide, so no
 * step with a lower token can start or continue once a higher one was accepted.
 *
 * Liveness, not safety: a Redis node restarted without its data can hand out a
 * counter value lower than one already used. The guard then refuses the new
 * holder's (lower) token until the counters catch up: the actuator stays stopped,
 * which costs availability but can never let two holders drive it.
 *
 * No heap and no globals: the guard is a small caller-owned struct; storage is
 * reached only through the callbacks the caller supplies (a file with fsync on
 * Linux: port/posix/include/elk/fence_file.h; flash on a device).
 */
#ifndef ELK_FENCE_H
#define ELK_FENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Durable storage of the highest accepted token. ctx is owned by the caller.
 *
 * Cross-process serialisation is a lock rather than a compare-and-store: the guard
 * must stay held for a whole actuator step (begin ... end), which a single atomic
 * store cannot express. Any backend can implement it: an OS file lock (POSIX port),
 * an RTOS mutex around a flash sector, or nothing (NULL) when one task owns it. */
typedef struct elk_fence_storage {
    void *ctx;
    /* Read the highest accepted token into *token; *token = 0 when nothing was ever
     * stored. Returns ELK_OK or a negative elk_err_t (e.g. ELK_E_FENCE_CORRUPT). */
    int (*load)(void *ctx, uint64_t *token);
    /* Replace the stored value with token and return only once it is durable (synced).
     * Must be atomic across power loss: afterwards load yields the old or the new value,
     * never anything else. Returns ELK_OK or a negative elk_err_t. */
    int (*store)(void *ctx, uint64_t token);
    /* Optional (NULL: no serialisation; then unlock must be NULL too). Take the lock
     * that serialises every user of this storage, waiting as long as the backend was
     * told to (its own setting, e.g. elk_fence_file_set_wait). Returns ELK_OK (held),
     * ELK_E_FENCE_BUSY (another user held it for the whole wait) or another negative
     * elk_err_t (the lock itself failed; not held). */
    int (*lock)(void *ctx);
    /* Release the lock lock() took. Never fails from the guard's point of view. */
    void (*unlock)(void *ctx);
} elk_fence_storage_t;

/* The guard of one actuator: caller-allocated, set up by elk_fence_init. */
typedef struct elk_fence {
    /* Internal: read through the functions below. */
    elk_fence_storage_t storage;
    uint64_t highest; /* highest token known to be durable */
    bool loaded;      /* false: must (re)load from storage before deciding */
    bool held;        /* between a successful elk_fence_begin and elk_fence_end */
    int storage_err;  /* last error the storage callbacks returned, ELK_OK if none */
} elk_fence_t;

/* Set up a guard over storage (copied; its ctx stays the caller's) and load the
 * highest accepted token (without the lock: this value is only a hint, every decision
 * reloads under the lock). Returns ELK_OK, ELK_E_INVALID_ARG (NULL pointer or
 * callback, or only one of lock/unlock), or ELK_E_FENCE_STORAGE (the guard is still
 * usable: the next check retries the load and refuses until it succeeds). */
int elk_fence_init(elk_fence_t *fence, const elk_fence_storage_t *storage);

/* Decide on one step carrying token and, if accepted, keep the guard held. In order:
 * take the storage lock (if any), reload the highest token from storage (another
 * process may have moved it; without a lock only after a failure), compare, and for a
 * higher token store it and wait until it is durable.
 * Returns ELK_OK: accepted, the guard is HELD: run the step, then call elk_fence_end
 * (exactly once). Any other return: refused and NOT held (nothing to end):
 * ELK_E_FENCE_STALE (lower than one accepted before; elk_fence_highest says which),
 * ELK_E_FENCE_BUSY (the lock wait ran out), ELK_E_FENCE_STORAGE (lock, load or store
 * failed: refused, see elk_fence_storage_error), ELK_E_FENCE_TOKEN (token 0: tokens
 * start at 1), ELK_E_STATE (this guard is already held) or ELK_E_INVALID_ARG. */
int elk_fence_begin(elk_fence_t *fence, uint64_t token);

/* Release the guard a successful elk_fence_begin took (unlock the storage).
 * Returns ELK_OK, ELK_E_STATE if it was not held (nothing done), or
 * ELK_E_INVALID_ARG (NULL). */
int elk_fence_end(elk_fence_t *fence);

/* Decide on one command carrying token without holding the guard afterwards:
 * elk_fence_begin + elk_fence_end. Same returns as elk_fence_begin; on ELK_OK the
 * guard is already released. Use begin/end instead when the command acts afterwards
 * (see the top of this file). */
int elk_fence_check(elk_fence_t *fence, uint64_t token);

/* Highest token known to be durably accepted (0 if none or not loaded). */
uint64_t elk_fence_highest(const elk_fence_t *fence);

/* The error the storage callbacks last returned (for a precise message, e.g.
 * ELK_E_FENCE_CORRUPT), or ELK_OK. */
int elk_fence_storage_error(const elk_fence_t *fence);

/* Parse a decimal token ("1".."18446744073709551615", no sign, no spaces) from
 * len bytes at s into *token. Returns ELK_OK or ELK_E_FENCE_TOKEN (empty, not
 * decimal, zero or overflowing). */
int elk_fence_parse_token(const char *s, size_t len, uint64_t *token);

#ifdef __cplusplus
}
#endif

#endif /* ELK_FENCE_H */
