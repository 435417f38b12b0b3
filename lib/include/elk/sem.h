/* SPDX-License-Identifier: MIT */
/*
 * Counting semaphores: at most N holders of a shared budget ("3 of the 10 pumps may run"),
 * each holding one permit as a lease with everything a lock lease has (quorum, renewal,
 * local deadline, stop margin, fencing token, release channel, LOST).
 *
 * Why slots and not a counter: a counter of holders per master, taken on a Redlock
 * majority, admits more than N holders when N > 1 (each master admits N, each holder needs
 * only q of n masters: 3 masters, 2 permits, q = 2 let 3 holders in). So permit k of
 * semaphore NAME is an ordinary lock on resource "NAME#k" (k = 1..N), and a holder takes
 * one free slot: the count of permits held can never exceed N while no slot has two
 * holders, which is the lock's own guarantee. An expired permit frees itself as any lease
 * does. docs/design.md "Permits".
 *
 * An acquire tries the slots one round each, from a slot chosen at random (so gateways do
 * not all queue on slot 1); when every slot was busy and the caller may wait, it waits on
 * one slot (the lock's own retry and release channel) for at most wait_max_ms, then tries
 * every slot again, until the wait deadline. No fairness is promised between waiters.
 *
 * Caller-owned, no heap: an elk_sem_t holds CONFIG_ELK_SEM_MAX_PERMITS locks, each
 * registered with the client (they count against CONFIG_ELK_MAX_LOCKS). Built only with
 * CONFIG_ELK_SEM.
 */
#ifndef ELK_SEM_H
#define ELK_SEM_H

#include <stdbool.h>
#include <stdint.h>

#include "elk/lock.h"

#ifdef __cplusplus
extern "C" {
#endif

struct elk_sem;

/* Event callback: ev is the event of the lock behind permit (1..N), as elk_lock_event_fn
 * describes it, except that ACQUIRE_FAILED fires once for the whole acquire (err
 * ELK_E_PERMITS_TAKEN when every slot answered busy, else the last slot's reason) and a
 * slot's own failed round is not reported. Runs from inside elk_client_poll only; it may
 * call elk_sem_release / elk_sem_acquire (not elk_client_poll). */
typedef void (*elk_sem_event_fn)(void *user, struct elk_sem *sem, unsigned permit,
                                 const elk_lock_event_t *ev);

/* A semaphore handle of one holder (it holds at most one permit). Fields are internal. */
typedef struct elk_sem {
    elk_lock_t slot[CONFIG_ELK_SEM_MAX_PERMITS];
    elk_sem_event_fn on_event;
    void *user;
    uint64_t wait_deadline; /* of the acquire in progress */
    uint32_t permits;
    uint32_t start; /* the slot this pass of the acquire began with */
    uint32_t tried; /* slots tried in this pass */
    uint32_t busy;  /* of those, slots that answered busy */
    int32_t held;   /* index of the slot held (or LOST, until released), -1: none */
    int32_t trying; /* index of the slot being acquired, -1: none */
    bool waiting;   /* the slot being acquired waits (the pass found every slot busy) */
    int last_err;   /* the last slot's reason, for ACQUIRE_FAILED */
} elk_sem_t;

/* Prepare sem for semaphore name with permits (1..CONFIG_ELK_SEM_MAX_PERMITS), registering
 * one lock per permit with client (resources "name#1".."name#N"). name is copied; cfg is
 * copied (NULL: the lock defaults) and applies to every permit; on_event may be NULL.
 * Returns ELK_OK, ELK_E_INVALID_ARG (NULL, permits out of range, bad cfg),
 * ELK_E_NAME_INVALID, ELK_E_NAME_TOO_LONG (a permit's key too long),
 * ELK_E_TOO_MANY_LOCKS (the client has no room for N more locks); on error nothing stays
 * registered. */
int elk_sem_init(elk_sem_t *sem, elk_client_t *client, const char *name, uint32_t permits,
                 const elk_lock_config_t *cfg, elk_sem_event_fn on_event, void *user);

/* Unregister every permit's lock. Returns ELK_OK, or ELK_E_STATE while a permit is held,
 * being acquired or has requests in flight (release it and poll until elk_sem_busy() is
 * false); then nothing was unregistered. */
int elk_sem_deinit(elk_sem_t *sem);

/* Start taking a permit. wait_deadline as for elk_lock_acquire (0 or <= now: every slot
 * once, no waiting). Returns ELK_E_WOULD_BLOCK when started (ACQUIRED with the permit, or
 * ACQUIRE_FAILED, follows from elk_client_poll), ELK_OK if a permit is already held by
 * this handle (its hold count + 1), ELK_E_STATE while an acquire is in progress,
 * ELK_E_LOCK_LOST if the held permit's deadline passed (release it first), or the first
 * slot's error from elk_lock_acquire (ELK_E_ENTROPY). */
int elk_sem_acquire(elk_sem_t *sem, uint64_t now, uint64_t wait_deadline);

/* Release the permit held (one hold), or cancel an acquire in progress (partial slots are
 * released). Stop the actuator before calling. Returns as elk_lock_release: ELK_OK,
 * ELK_E_LOCK_LOST (the permit had been lost; cleared), ELK_E_NOT_HELD (nothing held or
 * being acquired). */
int elk_sem_release(elk_sem_t *sem, uint64_t now);

/* The permit held, 1..N (also while LOST, until released), or 0. */
unsigned elk_sem_permit(const elk_sem_t *sem);
/* Whether the actuator may be driven now on the permit held (elk_lock_is_held). */
bool elk_sem_is_held(const elk_sem_t *sem, uint64_t now);
/* The lock behind the permit held (token, deadline, state, keepalive), or NULL. Owned by
 * sem. The fencing token is per permit: a guard keys it by "name#k". */
elk_lock_t *elk_sem_lock(elk_sem_t *sem);
/* The lock of permit k (1..N) for status displays, or NULL when k is out of range. */
const elk_lock_t *elk_sem_slot(const elk_sem_t *sem, unsigned k);
/* Number of permits N. */
uint32_t elk_sem_permits(const elk_sem_t *sem);
/* Requests or background rounds still in flight on any permit (keep the object alive). */
bool elk_sem_busy(const elk_sem_t *sem);

#ifdef __cplusplus
}
#endif

#endif /* ELK_SEM_H */
