/* SPDX-License-Identifier: MIT */
/* Fixed-block buffer pool: bitmap allocation over caller memory, no heap. */
#include "elk/pool.h"

static int elk_pool_bit(const elk_pool_t *pool, size_t i)
{
    return (int)((pool->used[i / 32u] >> (i % 32u)) & 1u);
}

static void elk_pool_set_bit(elk_pool_t *pool, size_t i, int on)
{
    uint32_t mask = (uint32_t)1u << (i % 32u);
    if (on) {
        pool->used[i / 32u] |= mask;
    } else {
        pool->used[i / 32u] &= ~mask;
    }
}

int elk_pool_init(elk_pool_t *pool, void *mem, size_t mem_size, size_t block_size, size_t count)
{
    size_t i;
    if (pool == NULL || mem == NULL || count == 0u || count > ELK_POOL_MAX_BLOCKS) {
        return ELK_E_INVALID_ARG;
    }
    /* Rounding down keeps every block on the same alignment as mem. */
    block_size &= ~(size_t)7u;
    if (block_size < 8u || mem_size / block_size < count) {
        return ELK_E_INVALID_ARG;
    }
    pool->mem = (uint8_t *)mem;
    pool->block_size = block_size;
    pool->count = (uint16_t)count;
    pool->in_use = 0;
    pool->high_water = 0;
    pool->next_hint = 0;
    for (i = 0; i < sizeof pool->used / sizeof pool->used[0]; i++) {
        pool->used[i] = 0;
    }
    return ELK_OK;
}

int elk_pool_get(elk_pool_t *pool, uint8_t **block)
{
    size_t n, i;
    if (pool == NULL || block == NULL) {
        return ELK_E_INVALID_ARG;
    }
    *block = NULL;
    if (pool->in_use >= pool->count) {
        return ELK_E_POOL_EMPTY;
    }
    /* Start after the last block handed out so reuse spreads over the pool, which
     * makes a use-after-put show up sooner under ASan and in tests. */
    i = pool->next_hint < pool->count ? pool->next_hint : 0u;
    for (n = 0; n < pool->count; n++) {
        size_t next = i + 1u == pool->count ? 0u : i + 1u;
        if (!elk_pool_bit(pool, i)) {
            elk_pool_set_bit(pool, i, 1);
            pool->in_use++;
            if (pool->in_use > pool->high_water) {
                pool->high_water = pool->in_use;
            }
            pool->next_hint = (uint16_t)next;
            *block = pool->mem + i * pool->block_size;
            return ELK_OK;
        }
        i = next;
    }
    return ELK_E_INTERNAL; /* in_use said a block was free but the bitmap disagrees */
}

int elk_pool_put(elk_pool_t *pool, uint8_t *block)
{
    size_t offset, i;
    if (pool == NULL || block == NULL) {
        return ELK_E_INVALID_ARG;
    }
    /* Compare as integers: relational comparison of unrelated pointers is undefined. */
    if ((uintptr_t)block < (uintptr_t)pool->mem) {
        return ELK_E_POOL_FOREIGN;
    }
    offset = (size_t)((uintptr_t)block - (uintptr_t)pool->mem);
    if (offset % pool->block_size != 0u || offset / pool->block_size >= pool->count) {
        return ELK_E_POOL_FOREIGN;
    }
    i = offset / pool->block_size;
    if (!elk_pool_bit(pool, i)) {
        return ELK_E_POOL_DOUBLE_FREE;
    }
    elk_pool_set_bit(pool, i, 0);
    pool->in_use--;
    return ELK_OK;
}

size_t elk_pool_block_size(const elk_pool_t *pool)
{
    return pool != NULL ? pool->block_size : 0u;
}

size_t elk_pool_available(const elk_pool_t *pool)
{
    return pool != NULL ? (size_t)(pool->count - pool->in_use) : 0u;
}
