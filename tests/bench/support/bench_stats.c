/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L
#include "bench_stats.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
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

void bench_die(const char *prog, const char *what, int rc, void (*stop)(void))
{
    fprintf(stderr, "%s: %s: %s (%s)\n", prog, what, elk_err_name(rc), elk_err_message(rc));
    stop();
    exit(1);
}

void bench_count_lease_events(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    bench_lease_counts_t *c = user;
    (void)lock;
    c->renewed += ev->type == ELK_LOCK_EV_RENEWED || ev->type == ELK_LOCK_EV_RECOVERED;
    c->renew_failed += ev->type == ELK_LOCK_EV_RENEW_FAILED || ev->type == ELK_LOCK_EV_SUSPECT;
    c->lost += ev->type == ELK_LOCK_EV_LOST;
}

/* What bench_begin_stop's handler calls (a signal handler takes no argument). */
static void (*bench_stop_fn)(void);

static void bench_on_signal(int sig)
{
    (void)sig;
    if (bench_stop_fn != NULL) {
        bench_stop_fn();
    }
    _exit(1);
}

bool bench_begin_stop(const char *prog, const char *tmpl, void (*stop)(void), char *dir, size_t cap)
{
    bench_stop_fn = stop;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!bench_begin(prog, tmpl, bench_on_signal, dir, cap)) {
        return false;
    }
    atexit(stop);
    return true;
}
