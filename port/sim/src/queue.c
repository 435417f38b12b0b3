/* SPDX-License-Identifier: MIT */
/* Event queue: a binary min-heap on (time, insertion sequence). The sequence makes
 * simultaneous events pop in the order they were scheduled, so a run never depends
 * on heap layout details. */
#include "elk/sim.h"

static bool ev_less(const elk_sim_event_t *x, const elk_sim_event_t *y)
{
    if (x->at_us != y->at_us) {
        return x->at_us < y->at_us;
    }
    return x->seq < y->seq;
}

int elk_sim_queue_init(elk_sim_queue_t *q, elk_sim_event_t *storage, size_t cap)
{
    if (q == NULL || storage == NULL || cap == 0u) {
        return ELK_E_INVALID_ARG;
    }
    q->ev = storage;
    q->cap = cap;
    q->len = 0;
    q->next_seq = 0;
    return ELK_OK;
}

int elk_sim_queue_push(elk_sim_queue_t *q, uint64_t at_us, uint32_t kind, uint32_t a, uint64_t b)
{
    size_t i;
    elk_sim_event_t e;
    if (q->len >= q->cap) {
        return ELK_E_SIM_QUEUE_FULL;
    }
    e.at_us = at_us;
    e.seq = q->next_seq++;
    e.kind = kind;
    e.a = a;
    e.b = b;
    i = q->len++;
    while (i > 0u) {
        size_t parent = (i - 1u) / 2u;
        if (!ev_less(&e, &q->ev[parent])) {
            break;
        }
        q->ev[i] = q->ev[parent];
        i = parent;
    }
    q->ev[i] = e;
    return ELK_OK;
}

bool elk_sim_queue_pop(elk_sim_queue_t *q, elk_sim_event_t *out)
{
    elk_sim_event_t last;
    size_t i = 0;
    if (q->len == 0u) {
        return false;
    }
    *out = q->ev[0];
    last = q->ev[--q->len];
    for (;;) {
        size_t l = 2u * i + 1u;
        size_t r = l + 1u;
        size_t m = i;
        const elk_sim_event_t *best = &last;
        if (l < q->len && ev_less(&q->ev[l], best)) {
            m = l;
            best = &q->ev[l];
        }
        if (r < q->len && ev_less(&q->ev[r], best)) {
            m = r;
        }
        if (m == i) {
            break;
        }
        q->ev[i] = q->ev[m];
        i = m;
    }
    if (q->len > 0u) {
        q->ev[i] = last;
    }
    return true;
}

uint64_t elk_sim_queue_peek_time(const elk_sim_queue_t *q)
{
    return q->len == 0u ? UINT64_MAX : q->ev[0].at_us;
}
