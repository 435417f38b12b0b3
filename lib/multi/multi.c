/* SPDX-License-Identifier: MIT */
/*
 * All or nothing over several resources (elk/multi.h): ordinary locks taken one after the
 * other in the order of their names, held together, lost together. Every promise of each
 * lease comes from lib/lock; this file orders the acquires and joins the events.
 */
#include "elk/multi.h"

#if CONFIG_ELK_MULTI

#include <string.h>

#include "elk/err.h"

static void mu_emit(elk_multi_t *m, size_t i, const elk_lock_event_t *ev)
{
    if (m->on_event != NULL) {
        m->on_event(m->user, m, i, ev);
    }
}

/* Release every lock taken or being taken (positions 0..upto of the order), but the one
 * whose LOST is being delivered (skip; SIZE_MAX: none). That one is not held any more and
 * looks after its own keys as after any loss; released from inside its own LOST event it
 * could stay RELEASING with nothing left to release, busy for ever (elk-sim --multi), so it
 * is left LOST: the next acquire clears it, and it never counts as busy. */
static void mu_release_upto(elk_multi_t *m, size_t upto, size_t skip, uint64_t now)
{
    size_t p;
    for (p = 0; p <= upto && p < m->count; p++) {
        if (m->order[p] != skip) {
            (void)elk_lock_release(&m->lock[m->order[p]], now);
        }
    }
}

static uint64_t mu_earliest(const elk_multi_t *m)
{
    uint64_t d = UINT64_MAX;
    size_t i;
    for (i = 0; i < m->count; i++) {
        uint64_t li = elk_lock_deadline(&m->lock[i]);
        d = li < d ? li : d;
    }
    return d == UINT64_MAX ? 0u : d;
}

/* The acquire ends without the multi-lock: what was taken is released at once (nothing was
 * driven under it), and ACQUIRE_FAILED names the resource. */
static void mu_fail(elk_multi_t *m, size_t i, const elk_lock_event_t *ev)
{
    elk_lock_event_t out = *ev;
    mu_release_upto(m, m->next, ev->type == ELK_LOCK_EV_LOST ? i : SIZE_MAX, ev->now);
    m->state = ELK_MULTI_IDLE;
    out.type = ELK_LOCK_EV_ACQUIRE_FAILED;
    out.err = ev->err != ELK_OK ? ev->err : ELK_E_LOCK_LOST;
    mu_emit(m, i, &out);
}

/* The lock at position next of the order was granted: take the next one, or hold all. */
static void mu_granted(elk_multi_t *m, size_t i, const elk_lock_event_t *ev)
{
    int r;
    m->next++;
    if (m->next == m->count) {
        elk_lock_event_t out = *ev;
        m->state = ELK_MULTI_HELD;
        out.deadline = mu_earliest(m);
        out.validity_ms = out.deadline > ev->now ? (uint32_t)(out.deadline - ev->now) : 0u;
        out.token = elk_lock_token(&m->lock[0]);
        mu_emit(m, i, &out);
        return;
    }
    r = elk_lock_acquire(&m->lock[m->order[m->next]], ev->now,
                         m->wait_deadline > ev->now ? m->wait_deadline : 0u);
    if (r != ELK_E_WOULD_BLOCK) {
        elk_lock_event_t out = *ev;
        out.err = r;
        mu_fail(m, m->order[m->next], &out);
    }
}

/* A lock was lost while all were held: loss of all. The others stop renewing and run out
 * at their own deadlines; none is freed while the stopped actuators may still move. */
static void mu_lost(elk_multi_t *m, size_t i, const elk_lock_event_t *ev)
{
    size_t k;
    m->state = ELK_MULTI_LOST;
    for (k = 0; k < m->count; k++) {
        if (k != i) {
            (void)elk_lock_abandon(&m->lock[k], ev->now);
        }
    }
    /* a release from inside the event leaves this one LOST (see mu_release_upto) */
    m->delivering = i;
    mu_emit(m, i, ev);
    m->delivering = SIZE_MAX;
}

static void mu_on_lock(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    elk_multi_t *m = (elk_multi_t *)user;
    size_t i = (size_t)(lock - m->lock);
    if (m->state == ELK_MULTI_ACQUIRING) {
        bool current = i == m->order[m->next];
        if (current && ev->type == ELK_LOCK_EV_ACQUIRED) {
            mu_granted(m, i, ev);
        } else if ((current && ev->type == ELK_LOCK_EV_ACQUIRE_FAILED) ||
                   ev->type == ELK_LOCK_EV_LOST) {
            mu_fail(m, i, ev); /* an earlier one lost while waiting for a later one */
        } else {
            mu_emit(m, i, ev);
        }
    } else if (m->state == ELK_MULTI_HELD && ev->type == ELK_LOCK_EV_LOST) {
        mu_lost(m, i, ev);
    } else if (!(m->state == ELK_MULTI_LOST && ev->type == ELK_LOCK_EV_LOST)) {
        mu_emit(m, i, ev); /* renewals, SUSPECT, RELEASED; a second LOST is not news */
    }
}

/* order[] gets the indexes sorted by name; no two names alike. */
static int mu_sort(elk_multi_t *m, const char *const *names, size_t count)
{
    size_t a, b;
    for (a = 0; a < count; a++) {
        if (names[a] == NULL) {
            return ELK_E_INVALID_ARG;
        }
        m->order[a] = (uint8_t)a;
    }
    for (a = 1; a < count; a++) { /* insertion sort: a handful of names */
        uint8_t x = m->order[a];
        for (b = a; b > 0u && strcmp(names[m->order[b - 1u]], names[x]) > 0; b--) {
            m->order[b] = m->order[b - 1u];
        }
        m->order[b] = x;
    }
    for (a = 1; a < count; a++) {
        if (strcmp(names[m->order[a - 1u]], names[m->order[a]]) == 0) {
            return ELK_E_INVALID_ARG;
        }
    }
    return ELK_OK;
}

int elk_multi_init(elk_multi_t *m, elk_client_t *client, const char *const *names, size_t count,
                   const elk_lock_config_t *cfg, elk_multi_event_fn on_event, void *user)
{
    size_t i;
    int r;
    if (m == NULL || client == NULL || names == NULL || count < 2u ||
        count > CONFIG_ELK_MULTI_MAX_RESOURCES) {
        return ELK_E_INVALID_ARG;
    }
    memset(m, 0, sizeof *m);
    r = mu_sort(m, names, count);
    for (i = 0; r == ELK_OK && i < count; i++) {
        r = elk_lock_init(&m->lock[i], client, names[i], cfg, mu_on_lock, m);
        if (r != ELK_OK) {
            while (i-- > 0u) {
                (void)elk_lock_deinit(&m->lock[i]);
            }
            return r;
        }
    }
    if (r != ELK_OK) {
        return r;
    }
    m->count = count;
    m->delivering = SIZE_MAX;
    m->on_event = on_event;
    m->user = user;
    m->state = ELK_MULTI_IDLE;
    return ELK_OK;
}

int elk_multi_deinit(elk_multi_t *m)
{
    size_t i;
    if (m == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (m->state == ELK_MULTI_ACQUIRING || m->state == ELK_MULTI_HELD || elk_multi_busy(m)) {
        return ELK_E_STATE;
    }
    for (i = 0; i < m->count; i++) {
        int r = elk_lock_deinit(&m->lock[i]);
        if (r != ELK_OK) {
            return r;
        }
    }
    m->count = 0;
    return ELK_OK;
}

int elk_multi_acquire(elk_multi_t *m, uint64_t now, uint64_t wait_deadline)
{
    int r;
    if (m == NULL || m->count == 0u) {
        return ELK_E_INVALID_ARG;
    }
    if (m->state != ELK_MULTI_IDLE) {
        return ELK_E_STATE;
    }
    m->wait_deadline = wait_deadline;
    m->next = 0;
    r = elk_lock_acquire(&m->lock[m->order[0]], now, wait_deadline > now ? wait_deadline : 0u);
    if (r == ELK_E_WOULD_BLOCK) {
        m->state = ELK_MULTI_ACQUIRING;
    }
    return r;
}

int elk_multi_release(elk_multi_t *m, uint64_t now)
{
    int r = ELK_OK;
    size_t i;
    if (m == NULL || m->count == 0u) {
        return ELK_E_INVALID_ARG;
    }
    switch (m->state) {
    case ELK_MULTI_IDLE:
        return ELK_E_NOT_HELD;
    case ELK_MULTI_ACQUIRING:
        mu_release_upto(m, m->next, SIZE_MAX, now);
        break;
    default: /* HELD, or LOST: every lock released, the lost one's LOST cleared (but inside its
              * own LOST event: left LOST, cleared by the next acquire) */
        r = m->state == ELK_MULTI_LOST ? ELK_E_LOCK_LOST : ELK_OK;
        for (i = 0; i < m->count; i++) {
            if (i != m->delivering && elk_lock_release(&m->lock[i], now) == ELK_E_LOCK_LOST) {
                r = ELK_E_LOCK_LOST;
            }
        }
        break;
    }
    m->state = ELK_MULTI_IDLE;
    return r;
}

elk_multi_state_t elk_multi_state(const elk_multi_t *m)
{
    return m != NULL ? m->state : ELK_MULTI_IDLE;
}

bool elk_multi_is_held(const elk_multi_t *m, uint64_t now)
{
    size_t i;
    if (m == NULL || m->state != ELK_MULTI_HELD) {
        return false;
    }
    for (i = 0; i < m->count; i++) {
        if (!elk_lock_is_held(&m->lock[i], now)) {
            return false;
        }
    }
    return true;
}

uint64_t elk_multi_deadline(const elk_multi_t *m)
{
    return m != NULL && m->state == ELK_MULTI_HELD ? mu_earliest(m) : 0u;
}

uint64_t elk_multi_token(const elk_multi_t *m, size_t i)
{
    return m != NULL && m->state == ELK_MULTI_HELD && i < m->count ? elk_lock_token(&m->lock[i])
                                                                   : 0u;
}

const elk_lock_t *elk_multi_lock(const elk_multi_t *m, size_t i)
{
    return m != NULL && i < m->count ? &m->lock[i] : NULL;
}

bool elk_multi_busy(const elk_multi_t *m)
{
    size_t i;
    if (m == NULL) {
        return false;
    }
    for (i = 0; i < m->count; i++) {
        if (elk_lock_busy(&m->lock[i])) {
            return true;
        }
    }
    return false;
}

#else
/* All-or-nothing locks left out (CONFIG_ELK_MULTI off): ISO C wants a translation unit to
 * declare something. */
typedef int elk_multi_not_built_t;
#endif /* CONFIG_ELK_MULTI */
