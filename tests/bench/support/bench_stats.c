/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L
#include "bench_stats.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int bench_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_pct(const double *v, size_t n, double p)
{
    size_t i = (size_t)((double)n * p);
    return v[i < n ? i : n - 1];
}

void bench_result(const char *id, double v, const char *unit, const char *name)
{
    printf("RESULT %s %.6g %s %s\n", id, v, unit, name);
}

bool bench_begin(const char *prog, const char *tmpl, void (*on_signal)(int), char *dir, size_t cap)
{
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    snprintf(dir, cap, "%s", tmpl);
    if (mkdtemp(dir) == NULL) {
        char what[64];
        snprintf(what, sizeof what, "%s: mkdtemp", prog);
        perror(what);
        return false;
    }
    return true;
}
