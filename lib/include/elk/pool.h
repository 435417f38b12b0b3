/* SPDX-License-Identifier: MIT */
/*
 * Fixed-block buffer pool over caller-provided memory.
 *
 * Request and reply buffers come from here so that the number and size of
 * buffers is decided at build time (Kconfig) and exhaustion is a named error,
 * never a crash or a heap call. The pool keeps an in-use bitmap so that a block
 * returned twice, or a pointer that is not one of its blocks, is refused.
 */
#ifndef ELK_POOL_H
#define ELK_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "elk/err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest number of blocks one pool can manage (bounds the bitmap). */
#define ELK_POOL_MAX_BLOCKS 1024u

/* A pool of fixed-size blocks: caller-allocated, set up by elk_pool_init. */
typedef struct elk_pool {
    uint8_t *mem; /* caller's memory: count * block_size bytes */
    size_t block_size;
    uint16_t count;
    uint16_t in_use;
    uint16_t high_water; /* most blocks ever in use at once */
    uint16_t next_hint;  /* where the next search for a free block starts */
    uint32_t used[ELK_POOL_MAX_BLOCKS / 32u];
} elk_pool_t;

/* Set up a pool of count blocks of block_size bytes carved from mem (caller-owned,
 * at least count * block_size bytes, alive as long as the pool). block_size is
 * rounded down to a multiple of 8 so every block stays 8-byte aligned if mem is.
 * Returns ELK_OK, or ELK_E_INVALID_ARG if mem is NULL, count is 0 or above
 * ELK_POOL_MAX_BLOCKS, or block_size is below 8. */
int elk_pool_init(elk_pool_t *pool, void *mem, size_t mem_size, size_t block_size, size_t count);

/* Take one block. On success stores it in *block and returns ELK_OK; the caller owns
 * the block until elk_pool_put. Returns ELK_E_POOL_EMPTY when every block is in use. */
int elk_pool_get(elk_pool_t *pool, uint8_t **block);

/* Give a block back. Returns ELK_OK, ELK_E_POOL_FOREIGN for a pointer that is not the
 * start of one of this pool's blocks, or ELK_E_POOL_DOUBLE_FREE for a free block. */
int elk_pool_put(elk_pool_t *pool, uint8_t *block);

/* Size in bytes of each block. */
size_t elk_pool_block_size(const elk_pool_t *pool);

/* Blocks currently free. */
size_t elk_pool_available(const elk_pool_t *pool);

#ifdef __cplusplus
}
#endif

#endif /* ELK_POOL_H */
