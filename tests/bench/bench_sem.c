/* SPDX-License-Identifier: MIT */
/*
 * Permits (issue 28, elk/sem.h): acquire + release cycles per second of a semaphore permit
 * against a plain lock in the same run, on the same redis-server (127.0.0.1, ephemeral
 * port, RESP3, one client). The semaphore has PERMITS permits; in the "busy" row all but
 * one are held by the same client's other handles, so each acquire may first meet busy
 * slots (the random first slot), which is the cost of a budget nearly used up.
 *
 *   bench_sem [CYCLES]      (default 2000; CI's quick mode runs 200)
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
#include "elk/blocking.h"
#include "elk/lock.h"
#include "elk/port_posix.h"
#include "elk/sem.h"

#define PERMITS 4u
#define BLOCKS 5u

static bench_server_t srv;
static bench_one_t one; /* the client on its node */
static elk_lock_t lock;
static elk_sem_t sem, others[PERMITS - 1u];
static unsigned acquired, failed;

static void stop_all(void)
{
    bench_redis_stop_all(srv.pid, 1, srv.dir);
}

static void die(const char *what, int rc)
{
    bench_die("bench_sem", what, rc, stop_all);
}

static void on_lock(void *user, elk_lock_t *l, const elk_lock_event_t *ev)
{
    (void)user;
    (void)l;
    acquired += ev->type == ELK_LOCK_EV_ACQUIRED;
    failed += ev->type == ELK_LOCK_EV_ACQUIRE_FAILED;
}

static void on_sem(void *user, elk_sem_t *s, unsigned permit, const elk_lock_event_t *ev)
{
    (void)s;
    (void)permit;
    on_lock(user, NULL, ev);
}

static void client_up(void)
{
    elk_client_config_t cc;
    elk_lock_config_t lc;
    const char *what = "";
    elk_client_config_defaults(&cc);
    cc.gateway_id = "gwS";
    cc.key_prefix = "bs:";
    int rc = bench_one_up(&one, srv.port, &cc, &srv.entropy, &what);
    if (rc != ELK_OK) {
        die(what, rc);
    }
    elk_lock_config_defaults(&lc);
    lc.ttl_ms = 10000;
    if ((rc = elk_lock_init(&lock, &one.client, "valve", &lc, on_lock, NULL)) != ELK_OK ||
        (rc = elk_sem_init(&sem, &one.client, "pumps", PERMITS, &lc, on_sem, NULL)) != ELK_OK) {
        die("lock / semaphore init", rc);
    }
    for (size_t i = 0; i < PERMITS - 1u; i++) {
        if ((rc = elk_sem_init(&others[i], &one.client, "pumps", PERMITS, &lc, on_sem, NULL)) !=
            ELK_OK) {
            die("semaphore init", rc);
        }
    }
}

/* Poll until the acquire in progress is decided and (release) nothing is in flight. */
static void settle(unsigned want_events, bool (*busy)(void))
{
    uint64_t end = elk_posix_now_ms() + 30000;
    while (acquired + failed < want_events || busy()) {
        if (elk_posix_now_ms() > end) {
            die("a cycle did not end within 30 s", ELK_E_TIMEOUT);
        }
        elk_blocking_step(&one.client, elk_posix_now_ms() + 1000, NULL);
    }
}

static bool lock_busy(void)
{
    return elk_lock_busy(&lock);
}

static bool sem_busy(void)
{
    return elk_sem_busy(&sem);
}

static bool nothing(void)
{
    return false;
}

/* cycles acquire + release of the lock (sem NULL) or of a permit; cycles per second. */
static double run(elk_sem_t *s, unsigned cycles)
{
    double t0 = bench_now_s();
    for (unsigned i = 0; i < cycles; i++) {
        unsigned before = acquired + failed;
        uint64_t now = elk_posix_now_ms();
        int rc = s != NULL ? elk_sem_acquire(s, now, 0) : elk_lock_acquire(&lock, now, 0);
        if (rc != ELK_E_WOULD_BLOCK) {
            die("acquire", rc);
        }
        settle(before + 1u, nothing);
        if (failed != 0u) {
            die("an acquire failed", ELK_E_LOCK_BUSY);
        }
        now = elk_posix_now_ms();
        rc = s != NULL ? elk_sem_release(s, now) : elk_lock_release(&lock, now);
        if (rc != ELK_OK) {
            die("release", rc);
        }
        settle(before + 1u, s != NULL ? sem_busy : lock_busy);
    }
    return cycles / (bench_now_s() - t0);
}

int main(int argc, char **argv)
{
    unsigned cycles = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2000u;
    if (cycles == 0u) {
        fprintf(stderr, "usage: bench_sem [CYCLES]\n");
        return 2;
    }
    if (!bench_server_begin(&srv, "bench_sem", "/tmp/elk-benchsem-XXXXXX", stop_all)) {
        return 2;
    }
    printf("bench_sem: %s build, one redis-server :%u, RESP3, %u cycles, %u permits\n",
           ELK_BENCH_BUILD_TYPE, srv.port, cycles, PERMITS);
    client_up();
    /* the two sides take turns, 5 blocks each, and each side's median block counts: a
     * loaded machine's slow spells fall on both */
    double lkv[BLOCKS], smv[BLOCKS];
    for (size_t b = 0; b < BLOCKS; b++) {
        lkv[b] = run(NULL, cycles / BLOCKS + 1u);
        smv[b] = run(&sem, cycles / BLOCKS + 1u);
    }
    qsort(lkv, BLOCKS, sizeof lkv[0], bench_cmp_d);
    qsort(smv, BLOCKS, sizeof smv[0], bench_cmp_d);
    double lk = bench_pct(lkv, BLOCKS, 0.5), sm = bench_pct(smv, BLOCKS, 0.5);
    for (size_t i = 0; i < PERMITS - 1u; i++) { /* the budget nearly used up */
        unsigned before = acquired + failed;
        if (elk_sem_acquire(&others[i], elk_posix_now_ms(), 0) != ELK_E_WOULD_BLOCK) {
            die("acquire", ELK_E_STATE);
        }
        settle(before + 1u, nothing);
    }
    if (failed != 0u) {
        die("a permit was refused while one was free", ELK_E_PERMITS_TAKEN);
    }
    double busy = run(&sem, cycles);
    printf("  lock acquire+release          %10.0f cycles/s\n", lk);
    printf("  permit, every permit free     %10.0f cycles/s  (%.2f of the lock's)\n", sm, sm / lk);
    printf("  permit, %u of %u held by others %8.0f cycles/s  (%.2f of the lock's)\n", PERMITS - 1u,
           PERMITS, busy, busy / lk);
    bench_result("sem.lock_cycles_s", lk, "cycles/s", "lock acquire+release");
    bench_result("sem.permit_cycles_s", sm, "cycles/s", "permit acquire+release, all free");
    bench_result("sem.permit_busy_cycles_s", busy, "cycles/s",
                 "permit acquire+release, one free of four");
    bench_result("sem.ratio", sm / lk, "x", "permit cycles / lock cycles");
    printf("reproduce: build-bench/tests/bench/bench_sem %u\n", cycles);
    stop_all();
    return 0;
}
