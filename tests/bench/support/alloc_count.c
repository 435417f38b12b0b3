/* SPDX-License-Identifier: MIT */
/* Counting wrappers for the linker's --wrap of the heap functions (see alloc_count.h). */
#include <stddef.h>
#include <stdint.h>

#include "alloc_count.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void __real_free(void *p);

/* Benchmarks are single-threaded; plain counters are enough. */
static uint64_t allocs;
static uint64_t frees;

void *__wrap_malloc(size_t size)
{
    allocs++;
    return __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
    allocs++;
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
    allocs++;
    return __real_realloc(p, size);
}

void __wrap_free(void *p)
{
    if (p != NULL) {
        frees++;
    }
    __real_free(p);
}

uint64_t bench_alloc_count(void)
{
    return allocs;
}

uint64_t bench_free_count(void)
{
    return frees;
}
