/* SPDX-License-Identifier: MIT */
/*
 * The lease event record's cost (firmware/evlog.c): bytes per event and time per append
 * (format + one pwrite into the ring file), next to the plain way to log the same line in
 * the same run: fprintf of the same JSON to a FILE opened for append, flushed after every
 * line (what a log line costs elkd now). Nothing is fsynced by either.
 *
 *   bench_evlog [N]       (default N = 200000; the ring holds 2048 records, as by default)
 *
 * Prints the figures, the ratio, and the command that reproduces them.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"
#include "elkfw/evlog.h"

static elkfw_event_t sample(uint64_t i)
{
    elkfw_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = (elkfw_ev_kind_t)(i % ELKFW_EV_KINDS_);
    ev.t_ms = 1795000000000u + i;
    ev.token = 1795000000000000u + i;
    ev.deadline_ms = ev.t_ms + 9398u;
    ev.uid = 1000;
    ev.pid = 4242;
    snprintf(ev.gateway, sizeof ev.gateway, "gw-hall-3-line-2");
    snprintf(ev.resource, sizeof ev.resource, "valve-%u", (unsigned)(i % 16u));
    snprintf(ev.cmd, sizeof ev.cmd, "open-valve.sh");
    return ev;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    char dir[] = "/tmp/elk-bench-evlog-XXXXXX", ring[64], plain[64], line[ELKFW_EVLOG_RECORD];
    if (n <= 0 || !mkdtemp(dir)) {
        fprintf(stderr, "usage: bench_evlog [N > 0]\n");
        return 2;
    }
    snprintf(ring, sizeof ring, "%s/events", dir);
    snprintf(plain, sizeof plain, "%s/events.log", dir);
    elkfw_evlog_t log;
    if (elkfw_evlog_open(&log, ring, 2048u * ELKFW_EVLOG_RECORD) != 0) {
        perror("open ring");
        return 1;
    }
    FILE *f = fopen(plain, "a");
    size_t bytes = 0;
    double t0 = bench_now_s();
    for (long i = 0; i < n; i++) {
        elkfw_event_t ev = sample((uint64_t)i);
        if (!elkfw_evlog_append(&log, &ev)) {
            fprintf(stderr, "append failed\n");
            return 1;
        }
    }
    double t_ring = bench_now_s() - t0;
    t0 = bench_now_s();
    for (long i = 0; i < n; i++) {
        elkfw_event_t ev = sample((uint64_t)i);
        ev.seq = (uint64_t)i + 1u;
        bytes += elkfw_event_format(&ev, line, sizeof line) + 1u;
        fprintf(f, "%s\n", line);
        fflush(f);
    }
    double t_plain = bench_now_s() - t0;
    fclose(f);
    elkfw_evlog_close(&log);
    printf("events: %ld\n", n);
    printf("record: %u bytes per event on disk (the JSON line averages %.0f bytes; the ring "
           "holds 2048 = %u KiB)\n",
           ELKFW_EVLOG_RECORD, (double)bytes / (double)n, 2048u * ELKFW_EVLOG_RECORD / 1024u);
    printf("ring append (format + pwrite):  %.2f us per event\n", t_ring * 1e6 / (double)n);
    printf("plain log line (fprintf+fflush): %.2f us per event\n", t_plain * 1e6 / (double)n);
    printf("ratio ring/plain: %.2f\n", t_ring / t_plain);
    printf("RESULT evlog.append_us %.2f us\nRESULT evlog.plain_us %.2f us\n",
           t_ring * 1e6 / (double)n, t_plain * 1e6 / (double)n);
    printf("reproduce: build-bench/tests/bench/bench_evlog %ld\n", n);
    unlink(ring);
    unlink(plain);
    rmdir(dir);
    return 0;
}
