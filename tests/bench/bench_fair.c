/* SPDX-License-Identifier: MIT */
/*
 * Fair waiting (issue 28, elk/fair.h): six gateways (six clients in one process, each its
 * own TCP connection to one redis-server on 127.0.0.1, ephemeral port, RESP3) contend for
 * one valve. Each loops: acquire (waiting) - hold HOLD_MS - release - think THINK_MS. The
 * same run measures the plain lock with its release channel (fair off) and lib/fair (fair
 * on), one after the other for SECONDS each: every acquire's wait (median, max, their
 * ratio: the spread), the grants per gateway, and the hand-off latency (a release to the
 * next grant, for a waiter that was already waiting at the release, in us).
 *
 *   bench_fair [SECONDS]    (default 30 per side; CI's quick mode runs --quick: 3)
 *
 * Prints "RESULT <id> <value> <unit> <name>" lines and the command that reproduces them.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_redis.h"
#include "bench_stats.h"
#include "elk/fair.h"
#include "elk/lock.h"
#include "elk/port_posix.h"

#define GWS 6u
#define HOLD_MS 20u
#define THINK_MS 5u
#define MAXW 200000u

typedef enum { THINK, WAIT, HOLD } gw_state_t;

typedef struct gw {
    elk_lock_t lock; /* fair off */
    elk_fair_t fair; /* fair on */
    gw_state_t st;
    uint64_t at; /* THINK/HOLD: until; WAIT: since */
    unsigned grants;
    char id[8];
} gw_t;

static bench_server_t srv;
static bench_one_t one[GWS];
static gw_t GW[GWS];
static bool fair_on;
static uint64_t last_release;  /* ms; 0: none yet */
static double last_release_s;  /* the same in s, at us precision (hand-off) */
static bool waiter_at_release; /* someone was waiting when it happened */
static double waits[MAXW], handoffs[MAXW];
static size_t nwaits, nhandoffs;
static unsigned failures;

static void stop_all(void)
{
    bench_redis_stop_all(srv.pid, 1, srv.dir);
}

static void die(const char *what, int rc)
{
    bench_die("bench_fair", what, rc, stop_all);
}

static void on_grant(gw_t *g, const elk_lock_event_t *ev)
{
    if (ev->type == ELK_LOCK_EV_ACQUIRED && g->st == WAIT) {
        if (nwaits < MAXW) {
            waits[nwaits++] = (double)(ev->now - g->at);
        }
        if (last_release != 0u && waiter_at_release && g->at <= last_release && nhandoffs < MAXW) {
            handoffs[nhandoffs++] = (bench_now_s() - last_release_s) * 1e6;
        }
        waiter_at_release = false;
        g->grants++;
        g->st = HOLD;
        g->at = ev->now + HOLD_MS;
    } else if (ev->type == ELK_LOCK_EV_ACQUIRE_FAILED && g->st == WAIT) {
        failures++;
        g->st = THINK;
        g->at = ev->now + THINK_MS;
    }
}

static void on_lock(void *user, elk_lock_t *l, const elk_lock_event_t *ev)
{
    (void)l;
    on_grant(user, ev);
}

static void on_fair(void *user, elk_fair_t *f, const elk_lock_event_t *ev)
{
    (void)f;
    on_grant(user, ev);
}

static void clients_up(void)
{
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    lc.ttl_ms = 5000;
    lc.wait_min_ms = 10;
    lc.wait_max_ms = 100;
    for (size_t g = 0; g < GWS; g++) {
        elk_client_config_t cc;
        const char *what = "";
        elk_client_config_defaults(&cc);
        snprintf(GW[g].id, sizeof GW[g].id, "gw%zu", g);
        cc.gateway_id = GW[g].id;
        cc.key_prefix = "bf:";
        int rc = bench_one_up(&one[g], srv.port, &cc, &srv.entropy, &what);
        if (rc != ELK_OK) {
            die(what, rc);
        }
        if ((rc = elk_lock_init(&GW[g].lock, &one[g].client, "valve-plain", &lc, on_lock,
                                &GW[g])) != ELK_OK ||
            (rc = elk_fair_init(&GW[g].fair, &one[g].client, "valve-fair", &lc, 3000, on_fair,
                                &GW[g])) != ELK_OK) {
            die("lock / fair init", rc);
        }
    }
}

static bool any_waiting(void)
{
    for (size_t g = 0; g < GWS; g++) {
        if (GW[g].st == WAIT) {
            return true;
        }
    }
    return false;
}

/* One gateway's step at now: its timers (ask, release). */
static void step(gw_t *g, uint64_t now)
{
    int rc;
    if (g->st == THINK && now >= g->at) {
        g->st = WAIT;
        g->at = now;
        rc = fair_on ? elk_fair_acquire(&g->fair, now, now + 60000u)
                     : elk_lock_acquire(&g->lock, now, now + 60000u);
        if (rc != ELK_E_WOULD_BLOCK) {
            die("acquire", rc);
        }
    } else if (g->st == HOLD && now >= g->at) {
        g->st = THINK;
        g->at = now + THINK_MS;
        last_release = now;
        last_release_s = bench_now_s();
        waiter_at_release = any_waiting();
        rc = fair_on ? elk_fair_release(&g->fair, now) : elk_lock_release(&g->lock, now);
        if (rc != ELK_OK) {
            die("release", rc);
        }
    }
}

/* Drive every gateway until `end`; with stopping, until every one is idle. */
static void drive(uint64_t end, bool stopping)
{
    for (;;) {
        uint64_t now = elk_posix_now_ms(), next = now + 1000u;
        bool busy = false;
        if (!stopping && now >= end) {
            return;
        }
        elk_wait_t w[GWS * 2u];
        size_t nw = 0;
        for (size_t g = 0; g < GWS; g++) {
            if (!stopping) {
                step(&GW[g], now);
            }
            uint64_t t = elk_client_poll(&one[g].client, now);
            uint64_t u = elk_fair_poll(&GW[g].fair, now);
            t = u < t ? u : t;
            if (!stopping && GW[g].st != WAIT && GW[g].at < t) {
                t = GW[g].at;
            }
            next = t < next ? t : next;
            nw += elk_client_waits(&one[g].client, w + nw, 2u);
            busy = busy || elk_fair_busy(&GW[g].fair) || elk_lock_busy(&GW[g].lock);
        }
        if (stopping && (!busy || now >= end)) {
            return;
        }
        if (next > now) {
            elk_posix_wait(w, nw, next, NULL);
        }
    }
}

typedef struct side {
    double p50, max, spread, hand50, hand90;
    unsigned grants[GWS];
    size_t n;
} side_t;

static side_t run(bool fair, unsigned seconds)
{
    side_t s;
    memset(&s, 0, sizeof s);
    fair_on = fair;
    nwaits = nhandoffs = 0;
    last_release = 0;
    failures = 0;
    uint64_t now = elk_posix_now_ms();
    for (size_t g = 0; g < GWS; g++) {
        GW[g].st = THINK;
        GW[g].at = now + g; /* all ask within a few ms */
        GW[g].grants = 0;
    }
    drive(now + seconds * 1000u, false);
    now = elk_posix_now_ms();
    for (size_t g = 0; g < GWS; g++) { /* stop: give back holds and waits */
        s.grants[g] = GW[g].grants;
        if (GW[g].st != THINK) {
            (void)(fair ? elk_fair_release(&GW[g].fair, now) : elk_lock_release(&GW[g].lock, now));
        }
        GW[g].st = THINK;
        GW[g].at = UINT64_MAX;
    }
    drive(now + 30000u, true);
    if (nwaits == 0u || nhandoffs == 0u) {
        die("no grant measured", ELK_E_TIMEOUT);
    }
    qsort(waits, nwaits, sizeof waits[0], bench_cmp_d);
    qsort(handoffs, nhandoffs, sizeof handoffs[0], bench_cmp_d);
    s.n = nwaits;
    s.p50 = bench_pct(waits, nwaits, 0.5);
    s.max = waits[nwaits - 1u];
    s.spread = s.max / (s.p50 > 0.0 ? s.p50 : 1.0);
    s.hand50 = bench_pct(handoffs, nhandoffs, 0.5);
    s.hand90 = bench_pct(handoffs, nhandoffs, 0.9);
    if (failures != 0u) {
        die("an acquire failed within its 60 s wait", ELK_E_LOCK_TIMEOUT);
    }
    return s;
}

static void grants_line(const char *name, const side_t *s)
{
    unsigned lo = UINT32_MAX, hi = 0;
    printf("  %-26s", name);
    for (size_t g = 0; g < GWS; g++) {
        printf(" %5u", s->grants[g]);
        lo = s->grants[g] < lo ? s->grants[g] : lo;
        hi = s->grants[g] > hi ? s->grants[g] : hi;
    }
    printf("   (max/min %.2f)\n", lo ? (double)hi / lo : 0.0);
}

int main(int argc, char **argv)
{
    unsigned seconds = 30;
    if (argc > 1) {
        seconds = strcmp(argv[1], "--quick") == 0 ? 3u : (unsigned)strtoul(argv[1], NULL, 10);
    }
    if (seconds == 0u) {
        fprintf(stderr, "usage: bench_fair [SECONDS | --quick]\n");
        return 2;
    }
    if (!bench_server_begin(&srv, "bench_fair", "/tmp/elk-benchfair-XXXXXX", stop_all)) {
        return 2;
    }
    printf("bench_fair: %s build, one redis-server :%u, RESP3, %u gateways, hold %u ms, think "
           "%u ms, %u s a side\n",
           ELK_BENCH_BUILD_TYPE, srv.port, GWS, HOLD_MS, THINK_MS, seconds);
    clients_up();
    side_t off = run(false, seconds);
    side_t on = run(true, seconds);
    printf("  %-26s %14s %14s\n", "", "fair off", "fair on");
    printf("  %-26s %14zu %14zu\n", "grants", off.n, on.n);
    printf("  %-26s %11.1f ms %11.1f ms\n", "median wait", off.p50, on.p50);
    printf("  %-26s %11.1f ms %11.1f ms\n", "longest wait", off.max, on.max);
    printf("  %-26s %14.2f %14.2f\n", "spread (max/median)", off.spread, on.spread);
    printf("  %-26s %11.0f us %11.0f us\n", "hand-off p50", off.hand50, on.hand50);
    printf("  %-26s %11.0f us %11.0f us\n", "hand-off p90", off.hand90, on.hand90);
    printf("  grants per gateway:\n");
    grants_line("fair off", &off);
    grants_line("fair on", &on);
    bench_result("fair.off.wait_p50_ms", off.p50, "ms",
                 "median wait, plain lock + release channel");
    bench_result("fair.off.wait_max_ms", off.max, "ms", "longest wait, plain lock");
    bench_result("fair.off.spread", off.spread, "x", "max/median wait, plain lock");
    bench_result("fair.on.wait_p50_ms", on.p50, "ms", "median wait, fair");
    bench_result("fair.on.wait_max_ms", on.max, "ms", "longest wait, fair");
    bench_result("fair.on.spread", on.spread, "x", "max/median wait, fair");
    bench_result("fair.off.handoff_p50_us", off.hand50, "us",
                 "release to next grant, release channel");
    bench_result("fair.on.handoff_p50_us", on.hand50, "us", "release to next grant, fair");
    bench_result("fair.handoff.ratio", on.hand50 / (off.hand50 > 0.0 ? off.hand50 : 1.0), "x",
                 "fair hand-off / release channel hand-off (p50)");
    printf("reproduce: build-bench/tests/bench/bench_fair %u\n", seconds);
    stop_all();
    return 0;
}
