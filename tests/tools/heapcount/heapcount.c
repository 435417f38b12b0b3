/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD heap call counter (see heapcount.h). It forwards to glibc's
 * __libc_* entry points rather than dlsym(RTLD_NEXT): dlsym itself allocates,
 * which would recurse into us before we know where the real malloc is.
 */
#define _GNU_SOURCE
#include "heapcount.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static struct heapcount counts;

#define BUMP(field, n) __atomic_fetch_add(&counts.field, (n), __ATOMIC_RELAXED)

void *malloc(size_t n)
{
    BUMP(malloc_calls, 1);
    BUMP(bytes, n);
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    BUMP(calloc_calls, 1);
    BUMP(bytes, a * b);
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    BUMP(realloc_calls, 1);
    BUMP(bytes, n);
    return __libc_realloc(p, n);
}

void *reallocarray(void *p, size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n);
}

void free(void *p)
{
    BUMP(free_calls, 1);
    __libc_free(p);
}

void *memalign(size_t align, size_t n)
{
    BUMP(memalign_calls, 1);
    BUMP(bytes, n);
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    void *p = memalign(align, n);
    if (!p && n)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t n)
{
    return memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

void *pvalloc(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return memalign(pg, (n + pg - 1) / pg * pg);
}

void heapcount_snapshot(struct heapcount *out)
{
    out->malloc_calls = __atomic_load_n(&counts.malloc_calls, __ATOMIC_RELAXED);
    out->calloc_calls = __atomic_load_n(&counts.calloc_calls, __ATOMIC_RELAXED);
    out->realloc_calls = __atomic_load_n(&counts.realloc_calls, __ATOMIC_RELAXED);
    out->free_calls = __atomic_load_n(&counts.free_calls, __ATOMIC_RELAXED);
    out->memalign_calls = __atomic_load_n(&counts.memalign_calls, __ATOMIC_RELAXED);
    out->bytes = __atomic_load_n(&counts.bytes, __ATOMIC_RELAXED);
}

__attribute__((destructor)) static void heapcount_report(void)
{
    const char *path = getenv("HEAPCOUNT_OUT");
    if (!path || !*path)
        return;
    struct heapcount h;
    heapcount_snapshot(&h); /* before formatting, so the report's own work is not counted */
    char line[256];
    int n = snprintf(line, sizeof line,
                     "pid=%ld malloc=%llu calloc=%llu realloc=%llu free=%llu memalign=%llu "
                     "allocs=%llu bytes=%llu\n",
                     (long)getpid(), (unsigned long long)h.malloc_calls,
                     (unsigned long long)h.calloc_calls, (unsigned long long)h.realloc_calls,
                     (unsigned long long)h.free_calls, (unsigned long long)h.memalign_calls,
                     (unsigned long long)heapcount_allocs(&h), (unsigned long long)h.bytes);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || n <= 0)
        return;
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
    close(fd);
}
