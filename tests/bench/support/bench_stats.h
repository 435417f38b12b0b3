/* SPDX-License-Identifier: MIT */
/* What every benchmark here starts, measures and prints with: its signals and temporary
 * directory, a monotonic clock in seconds, percentiles of a sorted sample, and the RESULT
 * lines run-all.sh collects. */
#ifndef ELK_BENCH_STATS_H
#define ELK_BENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "elk/lock.h"

/* SIGPIPE ignored, on_signal for SIGINT and SIGTERM (it removes what the benchmark made),
 * and a fresh directory from the mkdtemp template `tmpl` copied into dir (cap bytes).
 * false, with "<prog>: mkdtemp" and the reason on stderr, if it could not be made. */
bool bench_begin(const char *prog, const char *tmpl, void (*on_signal)(int), char *dir, size_t cap);
/* bench_begin with a handler of its own for SIGINT and SIGTERM that calls stop (what the
 * benchmark started) and exits 1; stop also runs at exit, and stdout is line-buffered (a
 * figure is printed whole as soon as it is known, even into a pipe). */
bool bench_begin_stop(const char *prog, const char *tmpl, void (*stop)(void), char *dir,
                      size_t cap);
/* CLOCK_MONOTONIC in seconds. */
double bench_now_s(void);
/* qsort comparison of doubles, ascending. */
int bench_cmp_d(const void *a, const void *b);
/* The p-quantile (0..1) of v[0..n), sorted ascending (n > 0). */
double bench_pct(const double *v, size_t n, double p);
/* "RESULT <id> <v> <unit> <name>" on stdout (tests/bench/run-all.sh reads these). */
void bench_result(const char *id, double v, const char *unit, const char *name);
/* "<prog>: <what>: <error name> (<message>)" on stderr, then stop() (what the benchmark
 * started) and exit(1). */
void bench_die(const char *prog, const char *what, int rc, void (*stop)(void));

/* The lease events a benchmark counts: bench_count_lease_events, an elk_lock event callback
 * whose user pointer is one of these, adds RENEWED and RECOVERED, RENEW_FAILED and SUSPECT,
 * and LOST. */
typedef struct bench_lease_counts {
    unsigned renewed, renew_failed, lost;
} bench_lease_counts_t;
void bench_count_lease_events(void *user, elk_lock_t *lock, const elk_lock_event_t *ev);

#endif
