/* SPDX-License-Identifier: MIT */
/*
 * All or nothing (issue 28, elk/multi.h): the latency of one multi-resource acquire over
 * K = 2, 4 and 8 resources (8 when CONFIG_ELK_MULTI_MAX_RESOURCES allows it: the bench
 * defconfig does) against a single lock's acquire, in the same run, on the same
 * redis-servers (127.0.0.1, ephemeral ports, RESP3, one client): 1 server (single mode) and
 * 3 (Redlock). Nobody contends: the figure is the cost of taking the locks one after the
 * other, which lib/multi does so that overlapping sets cannot deadlock; a single lock's
 * acquire is one round, K resources are K rounds.
 *
 *   bench_multi [CYCLES]      (default 1000 per row; --quick: 60)
 *
 * Each cycle: acquire (timed, from the call to ACQUIRED), release, poll until nothing is in
 * flight. The rows take turns in blocks, so a loaded machine's slow spells fall on all.
 * Prints median and p99 per row, the ratio to the single lock's median, "RESULT <id>
 * <value> <unit> <name>" lines and the command that reproduces them.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_redis.h"
#include "bench_stats.h"
#include "elk/blocking.h"
#include "elk/lock.h"
#include "elk/multi.h"
#include "elk/port_posix.h"

#define NODES_MAX 3u
#define KS 3u
#define BLOCKS 5u
#define POOL_BLOCKS (2u * NODES_MAX + 2u)

static const unsigned K_OF[KS] = {2, 4, 8};
static const char *const NAMES[8] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"};

static pid_t pid[NODES_MAX];
static uint16_t port[NODES_MAX];
static char tmpdir[64];
static elk_entropy_t entropy;
static elk_posix_tcp_t tcp[NODES_MAX];
static elk_transport_t tcp_t[NODES_MAX];
static elk_node_t node[NODES_MAX];
static elk_fleet_t fleet;
static _Alignas(8) uint8_t pool_mem[POOL_BLOCKS * CONFIG_ELK_POOL_BLOCK_SIZE];
static elk_pool_t pool;
static elk_client_t client;
static elk_lock_t lock;
static elk_multi_t multi[KS];
static unsigned acquired, failed;
static size_t nodes;

static void stop_all(void)
{
    bench_redis_stop_all(pid, NODES_MAX, tmpdir);
}

static void die(const char *what, int rc)
{
    bench_die("bench_multi", what, rc, stop_all);
}

static void on_lock(void *user, elk_lock_t *l, const elk_lock_event_t *ev)
{
    (void)user;
    (void)l;
    acquired += ev->type == ELK_LOCK_EV_ACQUIRED;
    failed += ev->type == ELK_LOCK_EV_ACQUIRE_FAILED;
}

static void on_multi(void *user, elk_multi_t *m, size_t i, const elk_lock_event_t *ev)
{
    (void)m;
    (void)i;
    if (ev->type == ELK_LOCK_EV_ACQUIRED || ev->type == ELK_LOCK_EV_ACQUIRE_FAILED) {
        on_lock(user, NULL, ev);
    }
}

static bool k_built(size_t k)
{
    return K_OF[k] <= CONFIG_ELK_MULTI_MAX_RESOURCES;
}

/* One client on n servers; every node ready, voting (a fresh server is quarantined for
 * about a TTL) and idle. */
static void client_up(size_t n)
{
    elk_client_config_t cc;
    elk_lock_config_t lc;
    int rc =
        elk_pool_init(&pool, pool_mem, sizeof pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE, POOL_BLOCKS);
    for (size_t i = 0; rc == ELK_OK && i < n; i++) {
        elk_node_config_t nc;
        bench_node_config(&nc, port[i], false, 2000);
        nc.resp3 = true;
        elk_posix_tcp_init(&tcp[i], NULL, &tcp_t[i]);
        rc = elk_node_init(&node[i], &nc, &tcp_t[i], &pool, &entropy, NULL);
    }
    if (rc != ELK_OK || (rc = elk_fleet_init(&fleet, node, n)) != ELK_OK) {
        die("nodes", rc);
    }
    elk_client_config_defaults(&cc);
    cc.gateway_id = "gwM";
    cc.key_prefix = "bm:";
    cc.mode = n == 1u ? ELK_MODE_SINGLE : ELK_MODE_REDLOCK;
    cc.safety = ELK_SAFETY_OFF;
    if ((rc = elk_client_init(&client, &cc, &fleet, &entropy, NULL)) != ELK_OK) {
        die("client init", rc);
    }
    elk_lock_config_defaults(&lc);
    lc.ttl_ms = 10000;
    if ((rc = elk_lock_init(&lock, &client, "single", &lc, on_lock, NULL)) != ELK_OK) {
        die("lock init", rc);
    }
    for (size_t k = 0; k < KS; k++) {
        if (k_built(k) &&
            (rc = elk_multi_init(&multi[k], &client, NAMES, K_OF[k], &lc, on_multi, NULL)) !=
                ELK_OK) {
            die("multi init", rc);
        }
    }
    uint64_t end = elk_posix_now_ms() + 60000;
    for (;;) {
        size_t ok = 0;
        for (size_t i = 0; i < n; i++) {
            ok += elk_node_is_ready(&node[i]) && elk_client_node_votes(&client, i) &&
                elk_node_inflight(&node[i]) == 0;
        }
        if (ok == n) {
            break;
        }
        if (elk_posix_now_ms() > end) {
            die("servers not ready and voting within 60 s", ELK_E_FLEET_UNAVAILABLE);
        }
        elk_blocking_step(&client, elk_posix_now_ms() + 50, NULL);
    }
}

static void client_down(size_t n)
{
    for (size_t k = 0; k < KS; k++) {
        if (k_built(k)) {
            (void)elk_multi_deinit(&multi[k]);
        }
    }
    (void)elk_lock_deinit(&lock);
    for (size_t i = 0; i < n; i++) {
        elk_node_close(&node[i], elk_posix_now_ms());
    }
}

static bool busy(size_t row)
{
    return row == 0u ? elk_lock_busy(&lock) : elk_multi_busy(&multi[row - 1u]);
}

/* Poll until want events came and row has nothing in flight. */
static void settle(unsigned want, size_t row)
{
    uint64_t end = elk_posix_now_ms() + 30000;
    while (acquired + failed < want || busy(row)) {
        if (elk_posix_now_ms() > end) {
            die("a cycle did not end within 30 s", ELK_E_TIMEOUT);
        }
        elk_blocking_step(&client, elk_posix_now_ms() + 1000, NULL);
    }
}

/* cycles acquires of row (0: the lock, 1..: multi[row-1]); latencies in us into v. */
static void run(size_t row, unsigned cycles, double *v)
{
    for (unsigned c = 0; c < cycles; c++) {
        unsigned before = acquired + failed;
        double t0 = bench_now_s();
        uint64_t now = elk_posix_now_ms();
        int rc = row == 0u ? elk_lock_acquire(&lock, now, 0)
                           : elk_multi_acquire(&multi[row - 1u], now, 0);
        if (rc != ELK_E_WOULD_BLOCK) {
            die("acquire", rc);
        }
        while (acquired + failed == before) {
            elk_blocking_step(&client, elk_posix_now_ms() + 1000, NULL);
        }
        v[c] = (bench_now_s() - t0) * 1e6;
        if (failed != 0u) {
            die("an acquire failed (nobody contends)", ELK_E_LOCK_BUSY);
        }
        now = elk_posix_now_ms();
        rc = row == 0u ? elk_lock_release(&lock, now) : elk_multi_release(&multi[row - 1u], now);
        if (rc != ELK_OK) {
            die("release", rc);
        }
        settle(before + 1u, row);
    }
}

static void run_fleet(size_t n, unsigned cycles)
{
    static double lat[1 + KS][100000];
    unsigned per = cycles / BLOCKS + 1u;
    double med0 = 0;
    nodes = n;
    client_up(n);
    for (size_t b = 0; b < BLOCKS; b++) {
        for (size_t row = 0; row <= KS; row++) {
            if (row == 0u || k_built(row - 1u)) {
                run(row, per, lat[row] + b * per);
            }
        }
    }
    for (size_t row = 0; row <= KS; row++) {
        char id[48], name[96];
        unsigned total = per * BLOCKS;
        if (row != 0u && !k_built(row - 1u)) {
            printf("  %u servers, K=%u: not built (CONFIG_ELK_MULTI_MAX_RESOURCES %d)\n",
                   (unsigned)n, K_OF[row - 1u], CONFIG_ELK_MULTI_MAX_RESOURCES);
            continue;
        }
        qsort(lat[row], total, sizeof lat[row][0], bench_cmp_d);
        double p50 = bench_pct(lat[row], total, 0.5), p99 = bench_pct(lat[row], total, 0.99);
        if (row == 0u) {
            med0 = p50;
            printf("  %u servers, single lock     median %8.0f us  p99 %8.0f us\n", (unsigned)n,
                   p50, p99);
            snprintf(id, sizeof id, "multi.m%u.lock_p50_us", (unsigned)n);
            bench_result(id, p50, "us", "single lock acquire, median");
            continue;
        }
        printf("  %u servers, K=%u resources   median %8.0f us  p99 %8.0f us  (%.2f x the lock)\n",
               (unsigned)n, K_OF[row - 1u], p50, p99, p50 / med0);
        snprintf(id, sizeof id, "multi.m%u.k%u_p50_us", (unsigned)n, K_OF[row - 1u]);
        snprintf(name, sizeof name, "multi acquire of %u resources, median", K_OF[row - 1u]);
        bench_result(id, p50, "us", name);
        snprintf(id, sizeof id, "multi.m%u.k%u_p99_us", (unsigned)n, K_OF[row - 1u]);
        bench_result(id, p99, "us", "p99");
        snprintf(id, sizeof id, "multi.m%u.k%u.ratio", (unsigned)n, K_OF[row - 1u]);
        bench_result(id, p50 / med0, "x", "multi median / lock median");
    }
    client_down(n);
}

int main(int argc, char **argv)
{
    unsigned cycles = 1000;
    if (argc > 1) {
        cycles = strcmp(argv[1], "--quick") == 0 ? 60u : (unsigned)strtoul(argv[1], NULL, 10);
    }
    if (cycles == 0u || cycles > 99000u) {
        fprintf(stderr, "usage: bench_multi [CYCLES | --quick]\n");
        return 2;
    }
    if (!bench_begin_stop("bench_multi", "/tmp/elk-benchmulti-XXXXXX", stop_all, tmpdir,
                          sizeof tmpdir)) {
        return 2;
    }
    elk_posix_entropy(&entropy);
    for (size_t i = 0; i < NODES_MAX; i++) {
        port[i] = bench_free_port();
        pid[i] = bench_redis_start(tmpdir, port[i], false, NULL);
    }
    usleep(300 * 1000);
    printf("bench_multi: %s build, redis-server on :%u :%u :%u, RESP3, %u acquires per row\n",
           ELK_BENCH_BUILD_TYPE, port[0], port[1], port[2], cycles);
    run_fleet(1, cycles);
    run_fleet(3, cycles);
    printf("reproduce: build-bench/tests/bench/bench_multi %s\n", argc > 1 ? argv[1] : "");
    stop_all();
    return 0;
}
