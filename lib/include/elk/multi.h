/* SPDX-License-Identifier: MIT */
/*
 * All or nothing: one lease over several resources ("valve-1 and valve-2", a conveyor and
 * its gate). Each resource is an ordinary lock (quorum, renewal, deadline, fencing token,
 * release channel); a multi-lock is held only while every one of them is.
 *
 * - Acquired in one canonical order (the resource names sorted), one after the other, so
 *   two gateways asking for overlapping sets in different orders cannot wait on each other
 *   in a circle: whoever gets the lowest common resource first gets on. A resource that
 *   cannot be had before the wait deadline ends the acquire: the ones already taken are
 *   released at once (nothing was driven under them), and ACQUIRE_FAILED says which. One
 *   taken earlier and lost while waiting ends the acquire too; it is left LOST (it looks
 *   after its own keys as after any loss; the next acquire clears it).
 * - One deadline: the earliest of the locks' (elk_multi_deadline); the actuators may be
 *   driven only while elk_multi_is_held. The locks renew on the same client, so their
 *   renewals travel together (batched renewals, lock.h).
 * - Loss of any is loss of all: LOST fires once, for the multi-lock, at the first loss;
 *   the other locks stop renewing and run out at their own deadlines (elk_lock_abandon),
 *   so none of them is freed while the stopped actuators may still be moving.
 * - One fencing token per resource (elk_multi_token): each actuator's guard checks its own.
 *
 * Caller-owned, no heap: an elk_multi_t holds CONFIG_ELK_MULTI_MAX_RESOURCES locks, each
 * registered with the client. Built only with CONFIG_ELK_MULTI. docs/design.md "All or
 * nothing".
 */
#ifndef ELK_MULTI_H
#define ELK_MULTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/lock.h"

#ifdef __cplusplus
extern "C" {
#endif

struct elk_multi;

/* Event callback: ev as elk_lock_event_fn describes it, for the multi-lock as a whole:
 * ACQUIRED once every resource is held (ev->deadline the earliest; ev->token the first
 * resource's: use elk_multi_token for each), ACQUIRE_FAILED with the failing resource's
 * index in `resource` (its reason in ev->err), LOST once with the resource lost first.
 * RENEWED, SUSPECT, RECOVERED and RELEASED of each lock are passed on with its index. Runs from inside elk_client_poll only; it may call
 * elk_multi_release / elk_multi_acquire (not elk_client_poll). `resource` indexes the
 * names as given to elk_multi_init. */
typedef void (*elk_multi_event_fn)(void *user, struct elk_multi *m, size_t resource,
                                   const elk_lock_event_t *ev);

/* Where a multi-lock stands (elk_multi_state). */
typedef enum elk_multi_state {
    ELK_MULTI_IDLE = 0,
    ELK_MULTI_ACQUIRING, /* taking the locks in order */
    ELK_MULTI_HELD,      /* every lock held (until elk_multi_deadline) */
    ELK_MULTI_LOST       /* one was lost: stop now; release to clear */
} elk_multi_state_t;

/* A multi-lock of one holder. Fields are internal. */
typedef struct elk_multi {
    elk_lock_t lock[CONFIG_ELK_MULTI_MAX_RESOURCES]; /* in the order given */
    uint8_t order[CONFIG_ELK_MULTI_MAX_RESOURCES];   /* indexes of lock[], names sorted */
    elk_multi_event_fn on_event;
    void *user;
    uint64_t wait_deadline;
    size_t count;
    size_t next;       /* position in order[] being acquired */
    size_t delivering; /* lock whose LOST is being passed on, or SIZE_MAX */
    elk_multi_state_t state;
} elk_multi_t;

/* Prepare m for the count resources names[0..count) (2..CONFIG_ELK_MULTI_MAX_RESOURCES,
 * each a valid lock resource name, no two alike), registering one lock per resource with
 * client. The names are copied; cfg (NULL: the lock defaults) applies to every lock;
 * on_event may be NULL. Returns ELK_OK, ELK_E_INVALID_ARG (NULL, count out of range, a name
 * given twice, bad cfg), ELK_E_NAME_INVALID, ELK_E_NAME_TOO_LONG, ELK_E_TOO_MANY_LOCKS; on
 * error nothing stays registered. */
int elk_multi_init(elk_multi_t *m, elk_client_t *client, const char *const *names, size_t count,
                   const elk_lock_config_t *cfg, elk_multi_event_fn on_event, void *user);

/* Unregister every lock. ELK_OK, or ELK_E_STATE while any is held, being acquired or has
 * requests in flight (release, then poll until elk_multi_busy() is false). */
int elk_multi_deinit(elk_multi_t *m);

/* Start taking every resource, in the canonical order, waiting for each until
 * wait_deadline (as elk_lock_acquire: 0 or <= now, one round each). Returns
 * ELK_E_WOULD_BLOCK (ACQUIRED or ACQUIRE_FAILED follows from elk_client_poll), ELK_E_STATE
 * unless idle, or the first lock's error from elk_lock_acquire. */
int elk_multi_acquire(elk_multi_t *m, uint64_t now, uint64_t wait_deadline);

/* Release every resource (stop the actuators first), or cancel an acquire in progress.
 * Returns ELK_OK, ELK_E_LOCK_LOST (the multi-lock had been lost; cleared), ELK_E_NOT_HELD
 * (idle). */
int elk_multi_release(elk_multi_t *m, uint64_t now);

/* The state, and whether the actuators may be driven now: every lock held (is_held). */
elk_multi_state_t elk_multi_state(const elk_multi_t *m);
bool elk_multi_is_held(const elk_multi_t *m, uint64_t now);
/* The earliest deadline of the locks while held, else 0. */
uint64_t elk_multi_deadline(const elk_multi_t *m);
/* Fencing token of resource i (the index given at init) while held, else 0. */
uint64_t elk_multi_token(const elk_multi_t *m, size_t i);
/* The lock of resource i (its key, state, renewals), or NULL when i is out of range. */
const elk_lock_t *elk_multi_lock(const elk_multi_t *m, size_t i);
/* Requests or background rounds still in flight on any lock. */
bool elk_multi_busy(const elk_multi_t *m);

#ifdef __cplusplus
}
#endif

#endif /* ELK_MULTI_H */
