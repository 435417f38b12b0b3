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

/* Durable storage of the highest accepted token. ctx is owned by the caller. */
typedef struct elk_fence_storage {
    void *ctx;
    /* Read the highest accepted token into *token; *token = 0 when nothing was ever
     * stored. Returns ELK_OK or a negative elk_err_t (e.g. ELK_E_FENCE_CORRUPT). */
    int (*load)(void *ctx, uint64_t *token);
    /* Replace the stored value with token and return only once it is durable (synced).
     * Returns ELK_OK or a negative elk_err_t. */
    int (*store)(void *ctx, uint64_t token);
} elk_fence_storage_t;

typedef struct elk_fence {
    /* Internal: read through the functions below. */
    elk_fence_storage_t storage;
    uint64_t highest;     /* highest token known to be durable */
    bool loaded;          /* false: must (re)load from storage before deciding */
    int storage_err;      /* last error the storage callbacks returned, ELK_OK if none */
} elk_fence_t;

/* Set up a guard over storage (copied; its ctx stays the caller's) and load the
 * highest accepted token. Returns ELK_OK, ELK_E_INVALID_ARG (NULL pointer or
 * callback), or ELK_E_FENCE_STORAGE (the guard is still usable: the next check
 * retries the load and refuses until it succeeds). */
int elk_fence_init(elk_fence_t *fence, const elk_fence_storage_t *storage);

/* Decide on one command carrying token. Returns ELK_OK (accepted; a new highest is
 * already durable), ELK_E_FENCE_STALE (lower than one accepted before),
 * ELK_E_FENCE_STORAGE (storage failed: refused; see elk_fence_storage_error),
 * ELK_E_FENCE_TOKEN (token 0: fencing tokens start at 1) or ELK_E_INVALID_ARG. */
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
