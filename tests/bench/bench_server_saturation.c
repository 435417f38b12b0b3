/* SPDX-License-Identifier: MIT */
/*
 * A redis-server core at saturation (issue 30): how many lease renewals per second one core
 * runs when nothing else limits it, per-lease (EXTEND, one script call per lease: today's
 * peers, Redisson and node-redlock, renew this way) against batched (EXTEND_BATCH carrying 61
 * leases, lib/lock's batched renewals), side by side in one run on one server.
 *
 * bench_fleet_capacity drives the server with real lib clients, and on one machine those
 * clients saturate before the server does. Here the load is redis-benchmark (the field's
 * own tool: C, 50 connections, 16 requests pipelined on each), which keeps the server's core
 * busy with the renewal scripts themselves. The leases exist (100,000 keys holding their
 * values), so every call extends a real key. The server's CPU over the run says whether it
 * really was saturated.
 *
 *   bench_server_saturation [--quick]     (--quick: fewer requests, for CI)
 *
 * Prints, for each side, renewals per second, the server's CPU share, and the leases one
 * core keeps alive with the default lease (TTL 10 s, renewed every 3.3 s) at saturation and
 * at 50% of the core; then the ratio. "RESULT <id> <value> <unit> <name>" lines, and the
 * command that reproduces them.
 */
#define _GNU_SOURCE
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_redis.h"
#include "bench_stats.h"
#include "elk/lock_scripts.h"

#define KEYS 100000u      /* leases that exist on the server */
#define BATCH 61u         /* leases per EXTEND_BATCH call, lib/lock's most */
#define RENEW_EVERY_S 3.3 /* the default lease: TTL 10 s, renewed at a third */

static pid_t pid[1];
static uint16_t port;
static char tmpdir[64];

static void stop_all(void)
{
    bench_redis_stop_all(pid, 1, tmpdir);
}

static void die(const char *what)
{
    fprintf(stderr, "bench_server_saturation: %s\n", what);
    stop_all();
    exit(1);
}

/* The server's CPU seconds so far (utime + stime of /proc/<pid>/stat). */
static double server_cpu_s(void)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid[0]);
    FILE *f = fopen(path, "r");
    if (f == NULL || fgets(buf, sizeof buf, f) == NULL) {
        if (f != NULL) {
            fclose(f);
        }
        return 0;
    }
    fclose(f);
    const char *p = strrchr(buf, ')'); /* fields after the command name */
    unsigned long ut = 0, st = 0;
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) {
        return 0;
    }
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* KEYS lease keys "sat:{<12 digits>}" (redis-benchmark's __rand_int__ spelling) holding
 * "v", and the fleet marker; the two scripts loaded. */
static void populate(redisContext *c, char *sha_one, char *sha_batch)
{
    for (unsigned i = 0; i < KEYS; i++) {
        redisAppendCommand(c, "SET sat:{%012u} v PX 86400000", i);
    }
    redisAppendCommand(c, "SET sat:marker 1@1 PX 86400000");
    for (unsigned i = 0; i <= KEYS; i++) {
        redisReply *r = NULL;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || r == NULL) {
            die("populating the keys failed");
        }
        freeReplyObject(r);
    }
    const char *scripts[2] = {ELK_LOCK_SCRIPT_EXTEND, ELK_LOCK_SCRIPT_EXTEND_BATCH};
    char *out[2] = {sha_one, sha_batch};
    for (int k = 0; k < 2; k++) {
        redisReply *r = redisCommand(c, "SCRIPT LOAD %s", scripts[k]);
        if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40) {
            die("SCRIPT LOAD failed");
        }
        memcpy(out[k], r->str, 41);
        freeReplyObject(r);
    }
}

typedef struct side {
    double calls_s, renewals_s, cpu_share;
} side_t;

/* redis-benchmark running cmd_args for n requests; the server's CPU share over the run. */
static side_t run(const char *args, unsigned n, unsigned leases_per_call)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "redis-benchmark -h 127.0.0.1 -p %u -c 50 -P 16 -n %u -r %u --csv %s 2>/dev/null",
             port, n, KEYS, args);
    double c0 = server_cpu_s(), t0 = bench_now_s();
    side_t s;
    s.calls_s = bench_rb_rps(cmd);
    double wall = bench_now_s() - t0, cpu = server_cpu_s() - c0;
    s.renewals_s = s.calls_s * leases_per_call;
    s.cpu_share = wall > 0 ? cpu / wall : 0;
    if (s.calls_s <= 0) {
        die("redis-benchmark printed no figure (is redis-tools installed?)");
    }
    return s;
}

static void print_side(const char *name, const side_t *s, double cpu_us)
{
    printf("  %-30s %10.0f renewals/s  server CPU %3.0f%%  %6.2f us/renewal  "
           "leases kept alive: %9.0f at saturation, %9.0f at 50%%\n",
           name, s->renewals_s, 100.0 * s->cpu_share, cpu_us, s->renewals_s * RENEW_EVERY_S,
           s->renewals_s * RENEW_EVERY_S / 2.0);
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    unsigned n_one = quick ? 50000u : 2000000u, n_batch = quick ? 2000u : 60000u;
    char sha_one[41], sha_batch[41];
    if (!bench_begin_stop("bench_server_saturation", "/tmp/elk-benchsat-XXXXXX", stop_all, tmpdir,
                          sizeof tmpdir)) {
        return 2;
    }
    port = bench_free_port();
    pid[0] = bench_redis_start(tmpdir, port, false, NULL);
    redisContext *c = NULL;
    for (int i = 0; i < 50 && (c == NULL || c->err); i++) {
        if (c != NULL) {
            redisFree(c);
        }
        usleep(100 * 1000);
        c = redisConnect("127.0.0.1", port);
    }
    if (c == NULL || c->err) {
        die("cannot connect to the redis-server it started");
    }
    populate(c, sha_one, sha_batch);
    redisFree(c);
    printf("bench_server_saturation: one redis-server :%u, %u leases, redis-benchmark -c 50 -P "
           "16%s\n",
           port, KEYS, quick ? " (--quick)" : "");

    char args[8192];
    snprintf(args, sizeof args,
             "EVALSHA %s 3 sat:{__rand_int__} sat:{__rand_int__}:delay "
             "sat:marker v 86400000 0",
             sha_one);
    side_t one = run(args, n_one, 1);
    int len = snprintf(args, sizeof args, "EVALSHA %s %u sat:marker", sha_batch, BATCH + 1u);
    for (unsigned k = 0; k < BATCH; k++) {
        len += snprintf(args + len, sizeof args - (size_t)len, " sat:{__rand_int__}");
    }
    len += snprintf(args + len, sizeof args - (size_t)len, " 86400000");
    for (unsigned k = 0; k < BATCH; k++) {
        len += snprintf(args + len, sizeof args - (size_t)len, " v");
    }
    side_t batch = run(args, n_batch, BATCH);

    double us_one = one.renewals_s > 0 ? 1e6 * one.cpu_share / one.renewals_s : 0;
    double us_batch = batch.renewals_s > 0 ? 1e6 * batch.cpu_share / batch.renewals_s : 0;
    print_side("per-lease EXTEND", &one, us_one);
    print_side("batched EXTEND_BATCH (61)", &batch, us_batch);
    printf("  ratio batched / per-lease: %.1fx the renewals a core runs\n",
           batch.renewals_s / one.renewals_s);
    bench_result("sat.per_lease_renewals_s", one.renewals_s, "renewals/s",
                 "per-lease renewals one redis core runs at saturation");
    bench_result("sat.batched_renewals_s", batch.renewals_s, "renewals/s",
                 "batched renewals one redis core runs at saturation");
    bench_result("sat.per_lease_cpu", 100.0 * one.cpu_share, "%", "server CPU, per-lease run");
    bench_result("sat.batched_cpu", 100.0 * batch.cpu_share, "%", "server CPU, batched run");
    bench_result("sat.ratio", batch.renewals_s / one.renewals_s, "x",
                 "batched / per-lease renewals at saturation");
    printf("reproduce: build-bench/tests/bench/bench_server_saturation%s\n",
           quick ? " --quick" : "");
    stop_all();
    return 0;
}
