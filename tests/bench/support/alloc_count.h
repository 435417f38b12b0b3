/* SPDX-License-Identifier: MIT */
/*
 * Heap-call counter for benchmarks. Every bench is linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free, so calls from objects
 * linked statically (the bench, lib/, static hiredis) go through these counters.
 * Calls made inside shared libraries are not seen.
 */
#ifndef ELK_BENCH_ALLOC_COUNT_H
#define ELK_BENCH_ALLOC_COUNT_H

#include <stdint.h>

/* malloc + calloc + realloc calls since the program started. */
uint64_t bench_alloc_count(void);

/* free calls (of non-NULL pointers) since the program started. */
uint64_t bench_free_count(void);

#endif
