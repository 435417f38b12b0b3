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

int elk_fence_init(elk_fence_t *fence, const elk_fence_storage_t *storage)
{
    if (fence == NULL || storage == NULL || storage->load == NULL || storage->store == NULL) {
        return ELK_E_INVALID_ARG;
    }
    fence->storage = *storage;
    fence->highest = 0;
    fence->loaded = false;
    fence->storage_err = ELK_OK;
    return elk_fence_load(fence);
}

int elk_fence_check(elk_fence_t *fence, uint64_t token)
{
    int rc;
    if (fence == NULL || fence->storage.load == NULL || fence->storage.store == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (token == 0) {
        return ELK_E_FENCE_TOKEN;
    }
    /* After any storage failure the cached value may disagree with what is on the
     * medium (a store can fail after writing), so decide only on a fresh load. */
    if (!fence->loaded) {
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
