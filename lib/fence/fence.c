/* SPDX-License-Identifier: MIT */
/* Actuator-side fencing guard: accept tokens that never go down, persist first. */
#include "elk/fence.h"

static int elk_fence_load(elk_fence_t *fence)
{
    uint64_t stored = 0;
    int rc = fence->storage.load(fence->storage.ctx, &stored);
    if (rc != ELK_OK) {
        fence->storage_err = rc;
        fence->loaded = false;
        return ELK_E_FENCE_STORAGE;
    }
    fence->highest = stored;
    fence->loaded = true;
    fence->storage_err = ELK_OK;
    return ELK_OK;
}

static bool elk_fence_usable(const elk_fence_storage_t *st)
{
    /* lock and unlock come as a pair: a lock nobody releases would stall every caller. */
    return st->load != NULL && st->store != NULL && (st->lock == NULL) == (st->unlock == NULL);
}

int elk_fence_init(elk_fence_t *fence, const elk_fence_storage_t *storage)
{
    if (fence == NULL || storage == NULL || !elk_fence_usable(storage)) {
        return ELK_E_INVALID_ARG;
    }
    fence->storage = *storage;
    fence->highest = 0;
    fence->loaded = false;
    fence->held = false;
    fence->storage_err = ELK_OK;
    return elk_fence_load(fence);
}

static int elk_fence_lock(elk_fence_t *fence)
{
    int rc;
    if (fence->storage.lock == NULL) {
        return ELK_OK;
    }
    rc = fence->storage.lock(fence->storage.ctx);
    if (rc == ELK_OK) {
        return ELK_OK;
    }
    fence->storage_err = rc;
    return rc == ELK_E_FENCE_BUSY ? ELK_E_FENCE_BUSY : ELK_E_FENCE_STORAGE;
}

static void elk_fence_unlock(elk_fence_t *fence)
{
    if (fence->storage.unlock != NULL) {
        fence->storage.unlock(fence->storage.ctx);
    }
}

/* The decision itself, with the lock (if any) held by the caller. */
static int elk_fence_decide(elk_fence_t *fence, uint64_t token)
{
    int rc;
    /* Under a lock another process may have moved the value since our last look, so
     * decide on a fresh load. Without one, reload only after a failure: a store can
     * fail after writing, so the cache may disagree with the medium. */
    if (fence->storage.lock != NULL || !fence->loaded) {
        rc = elk_fence_load(fence);
        if (rc != ELK_OK) {
            return rc;
        }
    }
    if (token < fence->highest) {
        return ELK_E_FENCE_STALE;
    }
    if (token == fence->highest) {
        return ELK_OK;
    }
    rc = fence->storage.store(fence->storage.ctx, token);
    if (rc != ELK_OK) {
        fence->storage_err = rc;
        fence->loaded = false;
        return ELK_E_FENCE_STORAGE;
    }
    fence->highest = token;
    return ELK_OK;
}

int elk_fence_begin(elk_fence_t *fence, uint64_t token)
{
    int rc;
    if (fence == NULL || !elk_fence_usable(&fence->storage)) {
        return ELK_E_INVALID_ARG;
    }
    if (fence->held) {
        return ELK_E_STATE;
    }
    if (token == 0) {
        return ELK_E_FENCE_TOKEN;
    }
    rc = elk_fence_lock(fence);
    if (rc != ELK_OK) {
        return rc;
    }
    rc = elk_fence_decide(fence, token);
    if (rc != ELK_OK) {
        elk_fence_unlock(fence);
        return rc;
    }
    fence->held = true;
    return ELK_OK;
}

int elk_fence_end(elk_fence_t *fence)
{
    if (fence == NULL || !fence->held) {
        return fence == NULL ? ELK_E_INVALID_ARG : ELK_E_STATE;
    }
    fence->held = false;
    elk_fence_unlock(fence);
    return ELK_OK;
}

int elk_fence_check(elk_fence_t *fence, uint64_t token)
{
    int rc = elk_fence_begin(fence, token);
    if (rc == ELK_OK) {
        (void)elk_fence_end(fence);
    }
    return rc;
}

uint64_t elk_fence_highest(const elk_fence_t *fence)
{
    if (fence == NULL || !fence->loaded) {
        return 0;
    }
    return fence->highest;
}

int elk_fence_storage_error(const elk_fence_t *fence)
{
    return fence != NULL ? fence->storage_err : ELK_E_INVALID_ARG;
}

int elk_fence_parse_token(const char *s, size_t len, uint64_t *token)
{
    uint64_t v = 0;
    size_t i;
    if (s == NULL || token == NULL || len == 0 || len > 20) {
        return ELK_E_FENCE_TOKEN;
    }
    for (i = 0; i < len; i++) {
        uint64_t d;
        if (s[i] < '0' || s[i] > '9') {
            return ELK_E_FENCE_TOKEN;
        }
        d = (uint64_t)(s[i] - '0');
        /* v * 10 + d <= UINT64_MAX, with constants only (no 64-bit division). */
        if (v > UINT64_MAX / 10u || (v == UINT64_MAX / 10u && d > UINT64_MAX % 10u)) {
            return ELK_E_FENCE_TOKEN;
        }
        v = v * 10u + d;
    }
    if (v == 0) {
        return ELK_E_FENCE_TOKEN;
    }
    *token = v;
    return ELK_OK;
}
