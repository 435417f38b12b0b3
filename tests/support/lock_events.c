/* SPDX-License-Identifier: MIT */
/* The lock event recorder: see lock_events.h. */
#include "lock_events.h"

#include <string.h>

void elk_ts_events_on(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    elk_ts_events_t *rec = user;
    if (rec->n < ELK_TS_MAX_EVENTS) {
        size_t k = ev->node_count <= CONFIG_ELK_MAX_NODES ? ev->node_count : CONFIG_ELK_MAX_NODES;
        rec->ev[rec->n] = *ev;
        if (ev->nodes != NULL && k > 0) {
            memcpy(rec->nodes[rec->n], ev->nodes, sizeof(elk_lock_node_result_t) * k);
        }
        rec->ev[rec->n].nodes = rec->nodes[rec->n];
        rec->n++;
    } else {
        rec->dropped++;
    }
    if (rec->hook != NULL) {
        rec->hook(rec->hook_user, lock, ev);
    }
}

size_t elk_ts_events_count(const elk_ts_events_t *rec, elk_lock_event_type_t t)
{
    size_t c = 0;
    for (size_t i = 0; i < rec->n; i++) {
        c += rec->ev[i].type == t;
    }
    return c;
}

const elk_lock_event_t *elk_ts_events_first(const elk_ts_events_t *rec, elk_lock_event_type_t t)
{
    for (size_t i = 0; i < rec->n; i++) {
        if (rec->ev[i].type == t) {
            return &rec->ev[i];
        }
    }
    return NULL;
}

const elk_lock_event_t *elk_ts_events_last(const elk_ts_events_t *rec, elk_lock_event_type_t t)
{
    for (size_t i = rec->n; i > 0; i--) {
        if (rec->ev[i - 1].type == t) {
            return &rec->ev[i - 1];
        }
    }
    return NULL;
}
