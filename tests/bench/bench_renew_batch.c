/* SPDX-License-Identifier: MIT */
/*
 * Batched renewals (issue 30): requests per node per second that renewing N leases held
 * by one client costs, with batching (one EXTEND_BATCH request per node per renewal tick,
 * split to fit the send buffer) and without (one EXTEND per lease: the peer, today's
 * per-lease path, in the same run on the same server), side by side with the ratio.
 *
 *   bench_renew_batch [--quick]
 *
 * Counts 1, 64, 512 and 4096 leases (those above CONFIG_ELK_MAX_LOCKS are skipped: the
 * bench build's tests/bench/bench_defconfig raises it to 4096). Each side: one client on
 * its own redis-server (127.0.0.1, ephemeral port), the leases acquired, one renewal
 * period to settle, then requests counted by the server (INFO commandstats: EVALSHA, EVAL,
 * PING) over whole renewal periods. TTL 3 s (renewal every 990 ms), 3 periods; --quick:
 * TTL 1 s, 2 periods, counts up to 512. Then every lease is released, as at a shutdown:
 * per lease (elk_lock_release on each) on the per-lease side, elk_client_release_all (one
 * RELEASE_BATCH per node, docs/design.md "Releases in bulk") on the batched side, and the
 * requests the server received for it are printed side by side. Prints "RESULT <id> <value> <unit> <name>" lines.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench_redis.h"
#include "bench_stats.h"
#include "elk/blocking.h"
#include "elk/lock.h"
#include "elk/port_posix.h"

static bench_server_t srv;

static bench_one_t one; /* the client on its node */
static elk_lock_t locks[CONFIG_ELK_MAX_LOCKS];
static char names[CONFIG_ELK_MAX_LOCKS][24];
static bench_lease_counts_t counts;
static unsigned acquire_retries;

static void stop_all(void)
{
    bench_redis_stop_all(srv.pid, 1, srv.dir);
}

static void die(const char *what, int rc)
{
    bench_die("bench_renew_batch", what, rc, stop_all);
}

/* Requests the server received (EVALSHA + EVAL + PING calls), as bench_lock counts them. */
static long server_requests(void)
{
    return bench_redis_requests(srv.port);
}

/* Drive the client until `until` (ms, the posix clock). */
static void drive_until(uint64_t until)
{
    while (elk_posix_now_ms() < until) {
        elk_blocking_step(&one.client, until, NULL);
    }
}

static void client_up(bool batch)
{
    elk_client_config_t cc;
    const char *what = "";
    elk_client_config_defaults(&cc);
    cc.gateway_id = batch ? "gwB" : "gwP";
    cc.key_prefix = "rb:";
    cc.batch_renewals = batch;
    int rc = bench_one_up(&one, srv.port, &cc, &srv.entropy, &what);
    if (rc != ELK_OK) {
        die(what, rc);
    }
}

/* Acquire every lock, a few at a time (a round the send buffer cannot take fails). */
static void acquire_all(size_t count)
{
    size_t next = 0, held = 0;
    uint64_t end = elk_posix_now_ms() + 60000;
    while (held < count) {
        uint64_t now = elk_posix_now_ms();
        size_t inflight = 0;
        if (now > end) {
            die("acquire all", ELK_E_TIMEOUT);
        }
        for (size_t i = 0; i < next; i++) {
            inflight += elk_lock_state(&locks[i]) == ELK_LOCK_ACQUIRING;
        }
        while (next < count && inflight < 8) {
            int rc = elk_lock_acquire(&locks[next], now, 0);
            if (rc != ELK_E_WOULD_BLOCK && rc != ELK_OK) {
                die("acquire", rc);
            }
            inflight++;
            next++;
        }
        elk_blocking_step(&one.client, now + 5, NULL);
        held = 0;
        for (size_t i = 0; i < next; i++) {
            elk_lock_state_t st = elk_lock_state(&locks[i]);
            held += elk_lock_is_held(&locks[i], elk_posix_now_ms());
            if ((st == ELK_LOCK_IDLE || st == ELK_LOCK_LOST) && !elk_lock_busy(&locks[i])) {
                /* refused for our own full queue (renewals of the leases already held
                 * compete with the acquisitions): try it again */
                int rc = elk_lock_acquire(&locks[i], elk_posix_now_ms(), 0);
                if (rc != ELK_E_WOULD_BLOCK && rc != ELK_OK) {
                    die("acquire again", rc);
                }
                acquire_retries++;
            }
        }
    }
}

/* Release every lease, as at a shutdown: per lease (elk_lock_release on each) or in bulk
 * (elk_client_release_all); returns the requests the server received for it (resends of
 * releases our own full queue refused included). */
static long release_all(size_t count, bool bulk)
{
    uint64_t end = elk_posix_now_ms() + 30000;
    long r0 = server_requests();
    if (bulk) {
        (void)elk_client_release_all(&one.client, elk_posix_now_ms());
    }
    for (size_t i = 0; !bulk && i < count; i++) {
        (void)elk_lock_release(&locks[i], elk_posix_now_ms());
    }
    while (elk_posix_now_ms() < end) {
        size_t busy = 0;
        for (size_t i = 0; i < count; i++) {
            busy += elk_lock_busy(&locks[i]) || elk_lock_state(&locks[i]) == ELK_LOCK_RELEASING;
        }
        if (busy == 0) {
            break;
        }
        elk_blocking_step(&one.client, elk_posix_now_ms() + 5, NULL);
    }
    long r1 = server_requests();
    for (size_t i = 0; i < count; i++) {
        elk_lock_deinit(&locks[i]);
    }
    elk_node_close(&one.node, elk_posix_now_ms());
    return r0 >= 0 && r1 >= 0 ? r1 - r0 : -1;
}

typedef struct side {
    double rps;      /* requests per second the server received */
    double renew_ps; /* lease renewals confirmed per second */
    double per_tick; /* requests per renewal of every lease (requests / (renewals / count)) */
    size_t held;     /* still held at the end */
    unsigned failed, lost;
    unsigned retries; /* acquisitions tried again (our own queue was full) */
    long release;     /* requests of releasing every lease at the end (bulk on the batched side) */
} side_t;

static side_t run_side(size_t count, bool batch, uint32_t ttl_ms, unsigned periods)
{
    elk_lock_config_t lc;
    side_t s;
    uint32_t period = ttl_ms * 33u / 100u;
    client_up(batch);
    elk_lock_config_defaults(&lc);
    lc.ttl_ms = ttl_ms;
    for (size_t i = 0; i < count; i++) {
        snprintf(names[i], sizeof names[i], "l%zu", i);
        int rc =
            elk_lock_init(&locks[i], &one.client, names[i], &lc, bench_count_lease_events, &counts);
        if (rc != ELK_OK) {
            die("lock init", rc);
        }
    }
    acquire_retries = 0;
    acquire_all(count);
    s.retries = acquire_retries;
    drive_until(elk_posix_now_ms() + period); /* every lease renewed once: settled */
    memset(&counts, 0, sizeof counts);
    long r0 = server_requests();
    double t0 = bench_now_s();
    drive_until(elk_posix_now_ms() + (uint64_t)period * periods);
    double dt = bench_now_s() - t0;
    long r1 = server_requests();
    s.rps = r0 >= 0 && r1 >= 0 ? (double)(r1 - r0) / dt : -1.0;
    s.renew_ps = counts.renewed / dt;
    s.per_tick = counts.renewed > 0 ? (double)(r1 - r0) * (double)count / counts.renewed : -1.0;
    s.failed = counts.renew_failed;
    s.lost = counts.lost;
    s.held = 0;
    for (size_t i = 0; i < count; i++) {
        s.held += elk_lock_is_held(&locks[i], elk_posix_now_ms());
    }
    s.release = release_all(count, batch);
    return s;
}

static void compare(size_t count, uint32_t ttl_ms, unsigned periods, bool quick)
{
    side_t per = run_side(count, false, ttl_ms, periods);
    side_t bat = run_side(count, true, ttl_ms, periods);
    double ratio = bat.rps > 0 ? per.rps / bat.rps : 0;
    double tick_ratio = bat.per_tick > 0 ? per.per_tick / bat.per_tick : 0;
    char id[64], name[160];
    printf("  %4zu leases: per-lease %9.1f req/s/node  batched %8.1f req/s/node  ratio %6.1fx;"
           "  per renewal tick %7.1f vs %5.1f req/node, ratio %6.1fx\n"
           "              (renewals/s %.0f vs %.0f; held %zu/%zu and %zu/%zu; renew failed %u/%u, "
           "lost %u/%u, acquisitions retried %u/%u)\n",
           count, per.rps, bat.rps, ratio, per.per_tick, bat.per_tick, tick_ratio, per.renew_ps,
           bat.renew_ps, per.held, count, bat.held, count, per.failed, bat.failed, per.lost,
           bat.lost, per.retries, bat.retries);
    printf("              shutdown (every lease released): per-lease %ld req/node, bulk %ld "
           "req/node, ratio %.1fx\n",
           per.release, bat.release,
           bat.release > 0 ? (double)per.release / (double)bat.release : 0.0);
    printf("        reproduce: bench_renew_batch%s\n", quick ? " --quick" : "");
    snprintf(id, sizeof id, "bulk.release%zu.per_lease_req", count);
    snprintf(name, sizeof name, "%zu leases released at shutdown, per-lease: requests per node",
             count);
    bench_result(id, (double)per.release, "req", name);
    snprintf(id, sizeof id, "bulk.release%zu.bulk_req", count);
    snprintf(name, sizeof name,
             "%zu leases released at shutdown, elk_client_release_all: requests per node", count);
    bench_result(id, (double)bat.release, "req", name);
    snprintf(id, sizeof id, "batch.renew%zu.per_lease_rps", count);
    snprintf(name, sizeof name, "%zu leases renewing (ttl %u ms), per-lease: requests/s per node",
             count, ttl_ms);
    bench_result(id, per.rps, "req/s", name);
    snprintf(id, sizeof id, "batch.renew%zu.batched_rps", count);
    snprintf(name, sizeof name, "%zu leases renewing (ttl %u ms), batched: requests/s per node",
             count, ttl_ms);
    bench_result(id, bat.rps, "req/s", name);
    snprintf(id, sizeof id, "batch.renew%zu.per_tick_ratio", count);
    snprintf(name, sizeof name,
             "%zu leases: per-lease / batched requests per renewal of every lease", count);
    bench_result(id, tick_ratio, "x", name);
    snprintf(id, sizeof id, "batch.renew%zu.ratio", count);
    snprintf(name, sizeof name, "%zu leases: per-lease requests / batched requests", count);
    bench_result(id, ratio, "x", name);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {1, 64, 512, 4096};
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    uint32_t ttl_ms = quick ? 1000u : 3000u;
    unsigned periods = quick ? 2u : 3u;
    if (!bench_server_begin(&srv, "bench_renew_batch", "/tmp/elk-benchbatch-XXXXXX", stop_all)) {
        return 2;
    }
    printf("bench_renew_batch: %s build, one redis-server :%u, RESP3, ttl %u ms, %u renewal "
           "periods, CONFIG_ELK_MAX_LOCKS=%d, pool block %d B, ELK_LOCK_BATCH_MAX=%d\n",
           ELK_BENCH_BUILD_TYPE, srv.port, ttl_ms, periods, CONFIG_ELK_MAX_LOCKS,
           CONFIG_ELK_POOL_BLOCK_SIZE, ELK_LOCK_BATCH_MAX);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        if (sizes[k] > (size_t)CONFIG_ELK_MAX_LOCKS || (quick && sizes[k] > 512u)) {
            printf("  %4zu leases: skipped (%s)\n", sizes[k],
                   quick ? "--quick" : "above CONFIG_ELK_MAX_LOCKS");
            continue;
        }
        compare(sizes[k], ttl_ms, periods, quick);
    }
    return 0;
}
