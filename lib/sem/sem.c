/* SPDX-License-Identifier: MIT */
/*
 * Counting semaphores as slot leases (elk/sem.h): permit k of "name" is the lock of
 * resource "name#k". Everything a lease promises comes from lib/lock; this file only
 * chooses which slot to ask for next and turns the slots' events into the semaphore's.
 */
#include "elk/sem.h"

#if CONFIG_ELK_SEM

#include <stddef.h>
#include <string.h>

#include "elk/err.h"

/* "name#k" into out (room for CONFIG_ELK_MAX_KEY_LEN + 1 bytes); k is 1..64. */
static void sem_slot_name(char *out, const char *name, size_t len, uint32_t k)
{
    memcpy(out, name, len);
    out[len++] = '#';
    if (k >= 10u) {
        out[len++] = (char)('0' + k / 10u);
    }
    out[len++] = (char)('0' + k % 10u);
    out[len] = '\0';
}

static void sem_emit(elk_sem_t *sem, int32_t k, const elk_lock_event_t *ev)
{
    if (sem->on_event != NULL) {
        sem->on_event(sem->user, sem, (unsigned)k + 1u, ev);
    }
}

/* The acquire ends without a permit: one ACQUIRE_FAILED for the whole semaphore. */
static void sem_fail(elk_sem_t *sem, int32_t k, uint64_t now)
{
    elk_lock_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ELK_LOCK_EV_ACQUIRE_FAILED;
    ev.now = now;
    if (sem->last_err != ELK_OK) {
        ev.err = sem->last_err; /* a reason other than "busy" says more */
    } else {
        ev.err = sem->wait_deadline != 0u ? ELK_E_LOCK_TIMEOUT : ELK_E_PERMITS_TAKEN;
    }
    sem->trying = -1;
    sem->waiting = false;
    sem_emit(sem, k, &ev);
}

/* Ask slot k, one round (until 0) or waiting until `until`. Returns ELK_E_WOULD_BLOCK when
 * the round started, else elk_lock_acquire's error (trying is then -1). */
static int sem_try(elk_sem_t *sem, int32_t k, uint64_t now, uint64_t until)
{
    int r;
    sem->trying = k;
    r = elk_lock_acquire(&sem->slot[k], now, until);
    if (r != ELK_E_WOULD_BLOCK) {
        sem->trying = -1; /* ELK_OK cannot happen: no other slot of this handle is held */
    }
    return r;
}

/* A pass: every slot once, one round each, from slot `from`. */
static int sem_pass(elk_sem_t *sem, int32_t from, uint64_t now)
{
    sem->start = (uint32_t)from;
    sem->tried = 0;
    sem->busy = 0;
    sem->waiting = false;
    sem->last_err = ELK_OK;
    return sem_try(sem, from, now, 0);
}

/* Every slot was busy in this pass and the caller may wait: wait on the slot the pass
 * began with, through the lock's own retries and release channel, for about two retry
 * delays, then try every slot again. */
static int sem_wait(elk_sem_t *sem, uint64_t now)
{
    const elk_lock_t *l = &sem->slot[sem->start];
    uint64_t until = now + 2u * (uint64_t)l->cfg.wait_max_ms + 1u;
    if (until > sem->wait_deadline) {
        until = sem->wait_deadline;
    }
    sem->waiting = true;
    return sem_try(sem, (int32_t)sem->start, now, until);
}

static bool sem_is_busy_err(int err)
{
    return err == ELK_E_LOCK_BUSY || err == ELK_E_LOCK_DELAY || err == ELK_E_LOCK_TIMEOUT;
}

/* The next step after slot k's round failed with err at now. */
static void sem_after_failure(elk_sem_t *sem, int32_t k, int err, uint64_t now)
{
    int32_t next = (int32_t)(((uint32_t)k + 1u) % sem->permits);
    int r;
    if (sem_is_busy_err(err)) {
        sem->busy++;
    } else {
        sem->last_err = err;
    }
    sem->tried++;
    if (sem->waiting) { /* the wait window ended */
        r = now < sem->wait_deadline ? sem_pass(sem, next, now) : ELK_E_LOCK_TIMEOUT;
    } else if (sem->tried < sem->permits) {
        r = sem_try(sem, next, now, 0);
    } else if (now < sem->wait_deadline) {
        r = sem_wait(sem, now);
    } else {
        r = ELK_E_PERMITS_TAKEN;
    }
    if (r != ELK_E_WOULD_BLOCK) {
        if (!sem_is_busy_err(r) && r != ELK_E_PERMITS_TAKEN) {
            sem->last_err = r;
        }
        sem_fail(sem, k, now);
    }
}

static void sem_on_slot(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    elk_sem_t *sem = (elk_sem_t *)user;
    int32_t k = (int32_t)(lock - sem->slot);
    if (k != sem->trying) {
        sem_emit(sem, k, ev); /* the permit held, or a slot's background release */
        return;
    }
    if (ev->type == ELK_LOCK_EV_ACQUIRED) {
        sem->trying = -1;
        sem->waiting = false;
        sem->held = k;
        sem_emit(sem, k, ev);
    } else if (ev->type == ELK_LOCK_EV_ACQUIRE_FAILED) {
        sem_after_failure(sem, k, ev->err, ev->now);
    } else {
        sem_emit(sem, k, ev); /* RETRY while waiting on this slot */
    }
}

int elk_sem_init(elk_sem_t *sem, elk_client_t *client, const char *name, uint32_t permits,
                 const elk_lock_config_t *cfg, elk_sem_event_fn on_event, void *user)
{
    char res[CONFIG_ELK_MAX_KEY_LEN + 1u];
    size_t len;
    uint32_t k;
    if (sem == NULL || client == NULL || name == NULL || permits == 0u ||
        permits > CONFIG_ELK_SEM_MAX_PERMITS) {
        return ELK_E_INVALID_ARG;
    }
    len = strlen(name);
    if (len + 3u > CONFIG_ELK_MAX_KEY_LEN) { /* "#k" and the NUL */
        return ELK_E_NAME_TOO_LONG;
    }
    memset(sem, 0, sizeof *sem);
    for (k = 0; k < permits; k++) {
        int r;
        sem_slot_name(res, name, len, k + 1u);
        r = elk_lock_init(&sem->slot[k], client, res, cfg, sem_on_slot, sem);
        if (r != ELK_OK) {
            while (k-- > 0u) {
                (void)elk_lock_deinit(&sem->slot[k]);
            }
            return r;
        }
    }
    sem->permits = permits;
    sem->on_event = on_event;
    sem->user = user;
    sem->held = -1;
    sem->trying = -1;
    return ELK_OK;
}

int elk_sem_deinit(elk_sem_t *sem)
{
    uint32_t k;
    if (sem == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (sem->trying >= 0 || elk_sem_busy(sem) ||
        (sem->held >= 0 && elk_lock_state(&sem->slot[sem->held]) != ELK_LOCK_LOST)) {
        return ELK_E_STATE;
    }
    for (k = 0; k < sem->permits; k++) {
        int r = elk_lock_deinit(&sem->slot[k]);
        if (r != ELK_OK) {
            return r;
        }
    }
    sem->permits = 0;
    sem->held = -1;
    return ELK_OK;
}

/* The first slot of an acquire, at random, so that gateways do not all queue on slot 1. */
static int32_t sem_first_slot(const elk_sem_t *sem)
{
    const elk_entropy_t *e = sem->slot[0].client->entropy;
    uint8_t b[2] = {0, 0};
    if (e == NULL || e->fill == NULL || e->fill(e->ctx, b, sizeof b) != 0) {
        return 0;
    }
    return (int32_t)((((uint32_t)b[0] << 8) | b[1]) % sem->permits);
}

int elk_sem_acquire(elk_sem_t *sem, uint64_t now, uint64_t wait_deadline)
{
    int r;
    if (sem == NULL || sem->permits == 0u) {
        return ELK_E_INVALID_ARG;
    }
    if (sem->trying >= 0) {
        return ELK_E_STATE;
    }
    if (sem->held >= 0) {
        if (elk_lock_state(&sem->slot[sem->held]) == ELK_LOCK_LOST) {
            return ELK_E_LOCK_LOST;
        }
        return elk_lock_acquire(&sem->slot[sem->held], now, wait_deadline);
    }
    sem->wait_deadline = wait_deadline > now ? wait_deadline : 0u;
    r = sem_pass(sem, sem_first_slot(sem), now);
    return r;
}

int elk_sem_release(elk_sem_t *sem, uint64_t now)
{
    int32_t k;
    int r;
    if (sem == NULL || sem->permits == 0u) {
        return ELK_E_INVALID_ARG;
    }
    if (sem->trying >= 0) { /* cancel: the lock releases what the round took */
        k = sem->trying;
        sem->trying = -1;
        sem->waiting = false;
        (void)elk_lock_release(&sem->slot[k], now);
        return ELK_OK;
    }
    if (sem->held < 0) {
        return ELK_E_NOT_HELD;
    }
    k = sem->held;
    r = elk_lock_release(&sem->slot[k], now);
    if (elk_lock_hold_count(&sem->slot[k]) == 0u) {
        sem->held = -1;
    }
    return r;
}

unsigned elk_sem_permit(const elk_sem_t *sem)
{
    return sem != NULL && sem->held >= 0 ? (unsigned)sem->held + 1u : 0u;
}

bool elk_sem_is_held(const elk_sem_t *sem, uint64_t now)
{
    return sem != NULL && sem->held >= 0 && elk_lock_is_held(&sem->slot[sem->held], now);
}

elk_lock_t *elk_sem_lock(elk_sem_t *sem)
{
    return sem != NULL && sem->held >= 0 ? &sem->slot[sem->held] : NULL;
}

const elk_lock_t *elk_sem_slot(const elk_sem_t *sem, unsigned k)
{
    return sem != NULL && k >= 1u && k <= sem->permits ? &sem->slot[k - 1u] : NULL;
}

uint32_t elk_sem_permits(const elk_sem_t *sem)
{
    return sem != NULL ? sem->permits : 0u;
}

bool elk_sem_busy(const elk_sem_t *sem)
{
    uint32_t k;
    if (sem == NULL) {
        return false;
    }
    for (k = 0; k < sem->permits; k++) {
        if (elk_lock_busy(&sem->slot[k])) {
            return true;
        }
    }
    return false;
}

#else
/* Semaphores left out (CONFIG_ELK_SEM off): ISO C wants a translation unit to declare
 * something. */
typedef int elk_sem_not_built_t;
#endif /* CONFIG_ELK_SEM */
