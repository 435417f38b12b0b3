/* SPDX-License-Identifier: MIT */
/*
 * A lock event recorder for tests: pass elk_ts_events_on as the lock's callback with an
 * elk_ts_events_t as its user pointer, then count what fired. Platform-free (no clock,
 * no I/O), so unit tests over fakes can use it as well as the integration tests.
 */
#ifndef ELK_TEST_LOCK_EVENTS_H
#define ELK_TEST_LOCK_EVENTS_H

#include <stddef.h>

#include "elk/lock.h"

#define ELK_TS_MAX_EVENTS 256

typedef struct elk_ts_events {
    size_t n;                               /* events recorded (at most ELK_TS_MAX_EVENTS) */
    size_t dropped;                         /* events that did not fit */
    elk_lock_event_t ev[ELK_TS_MAX_EVENTS]; /* copies; ev[i].nodes points into nodes[i] */
    elk_lock_node_result_t nodes[ELK_TS_MAX_EVENTS][CONFIG_ELK_MAX_NODES];
    /* Optional: called after recording, with hook_user (e.g. to look at the servers the
     * moment LOST fires). */
    void (*hook)(void *hook_user, elk_lock_t *lock, const elk_lock_event_t *ev);
    void *hook_user;
} elk_ts_events_t;

/* The lock callback: user is the elk_ts_events_t. */
void elk_ts_events_on(void *user, elk_lock_t *lock, const elk_lock_event_t *ev);

/* How many events of type t were recorded. */
size_t elk_ts_events_count(const elk_ts_events_t *rec, elk_lock_event_type_t t);

/* The first event of type t, or NULL when there was none. */
const elk_lock_event_t *elk_ts_events_first(const elk_ts_events_t *rec, elk_lock_event_type_t t);

/* The last event of type t, or NULL when there was none. */
const elk_lock_event_t *elk_ts_events_last(const elk_ts_events_t *rec, elk_lock_event_type_t t);

#endif /* ELK_TEST_LOCK_EVENTS_H */
