/* SPDX-License-Identifier: MIT */
/*
 * The heap counter sees what a program allocates: run under LD_PRELOAD of
 * libelk_heapcount.so (ctest sets it), it must count at least the calls made
 * here, read through dlsym as the benchmarks do, and write HEAPCOUNT_OUT at exit.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "test_main.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heapcount.h"

typedef void (*snap_fn)(struct heapcount *);

static void test_counts_calls(void **s)
{
    (void)s;
    snap_fn snap = (snap_fn)dlsym(RTLD_DEFAULT, "heapcount_snapshot");
    assert_non_null(snap); /* the test runs only under LD_PRELOAD */
    struct heapcount a, b;
    snap(&a);
    void *volatile p[100];
    for (int i = 0; i < 100; i++)
        p[i] = malloc(16 + (size_t)i);
    void *volatile q = calloc(10, 10);
    q = realloc(q, 1000);
    void *al = NULL;
    assert_int_equal(posix_memalign(&al, 64, 128), 0);
    void *volatile al2 = aligned_alloc(64, 128);
    for (int i = 0; i < 100; i++)
        free(p[i]);
    free(q);
    free(al);
    free(al2);
    snap(&b);
    assert_true(b.malloc_calls - a.malloc_calls >= 100);
    assert_true(b.calloc_calls - a.calloc_calls >= 1);
    assert_true(b.realloc_calls - a.realloc_calls >= 1);
    assert_true(b.memalign_calls - a.memalign_calls >= 2);
    assert_true(b.free_calls - a.free_calls >= 103);
    assert_true(heapcount_allocs(&b) - heapcount_allocs(&a) >= 104);
}

static void test_no_calls_counted_when_none_made(void **s)
{
    (void)s;
    snap_fn snap = (snap_fn)dlsym(RTLD_DEFAULT, "heapcount_snapshot");
    assert_non_null(snap);
    struct heapcount a, b;
    snap(&a);
    volatile uint64_t sum = 0;
    for (int i = 0; i < 100000; i++)
        sum += (uint64_t)i;
    snap(&b);
    assert_true(sum > 0);
    assert_int_equal(heapcount_allocs(&b), heapcount_allocs(&a));
    assert_int_equal(b.free_calls, a.free_calls);
}

static void test_writes_report_at_exit(void **s)
{
    (void)s;
    char path[] = "/tmp/elk-heapcount-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("HEAPCOUNT_OUT", path, 1);
        for (int i = 0; i < 50; i++)
            free(malloc(8));
        exit(0); /* runs the library's destructor */
    }
    int st;
    waitpid(pid, &st, 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512] = {0};
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    unlink(path);
    unsigned long long m = 0, fr = 0;
    const char *pm = strstr(line, " malloc="), *pf = strstr(line, " free=");
    assert_non_null(pm);
    assert_non_null(pf);
    m = strtoull(pm + 8, NULL, 10);
    fr = strtoull(pf + 6, NULL, 10);
    assert_true(m >= 50);
    assert_true(fr >= 50);
}

int main(void)
{
    return ELK_RUN_TESTS(test_counts_calls, test_no_calls_counted_when_none_made,
                         test_writes_report_at_exit);
}
