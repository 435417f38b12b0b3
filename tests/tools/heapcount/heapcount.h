/* SPDX-License-Identifier: MIT */
/*
 * heapcount: an LD_PRELOAD library that counts heap calls of any program
 * (our C benchmarks, and the peers' interpreters python3 and node).
 *
 *   LD_PRELOAD=libelk_heapcount.so HEAPCOUNT_OUT=/tmp/counts.txt program ...
 *
 * At exit it writes one line to $HEAPCOUNT_OUT (appends; nothing if unset):
 *   pid=P malloc=N calloc=N realloc=N free=N memalign=N allocs=N bytes=N
 * where allocs = malloc + calloc + realloc + memalign (posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc) and bytes is the total requested.
 *
 * A C program can read the counters while it runs, without linking against this
 * library, so the same binary works with and without the preload:
 *
 *   void (*snap)(struct heapcount *) = (void (*)(struct heapcount *))
 *       dlsym(RTLD_DEFAULT, "heapcount_snapshot");
 *   if (snap) { snap(&before); run_cycles(); snap(&after); }
 *
 * For interpreters, run the same workload with two cycle counts and report the
 * difference per cycle: (allocs(N2) - allocs(N1)) / (N2 - N1). Those are the
 * interpreter's malloc calls (pymalloc and V8 serve most small objects from their
 * own arenas, which this does not see), and are labelled so.
 */
#ifndef ELK_HEAPCOUNT_H
#define ELK_HEAPCOUNT_H

#include <stdint.h>

struct heapcount {
    uint64_t malloc_calls;
    uint64_t calloc_calls;
    uint64_t realloc_calls;
    uint64_t free_calls;     /* free(NULL) included */
    uint64_t memalign_calls; /* posix_memalign, aligned_alloc, memalign, valloc, pvalloc */
    uint64_t bytes;          /* bytes requested by all allocating calls */
};

/* Copy the counters (monotonic since process start) into *out. */
void heapcount_snapshot(struct heapcount *out);

/* Sum of the allocating calls in a snapshot. */
static inline uint64_t heapcount_allocs(const struct heapcount *h)
{
    return h->malloc_calls + h->calloc_calls + h->realloc_calls + h->memalign_calls;
}

#endif
