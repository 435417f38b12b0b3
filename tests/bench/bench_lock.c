/* SPDX-License-Identifier: MIT */
/*
 * Lease engine figures on loopback, next to the raw round-trip limit measured with
 * redis-benchmark on the same servers in the same run (issue 7):
 *
 *   1. limits: redis-benchmark -c 1 PING and the lock's own two scripts (EVALSHA acquire
 *      on fresh keys + EVALSHA release), so the limit has the same command types as a cycle;
 *   2. single node: acquire + release cycles/s and cycle p50/p99, plain TCP and TLS, and the
 *      heap calls our code made over the timed cycles (target 0);
 *   3. Redlock acquire latency: 1 node vs 5 nodes, fencing on (acquire + commit round) and
 *      off (one round), directly and through elk-faultproxy with a delay per node;
 *   4. many locks held with renewal (1, 64, 1024 if CONFIG_ELK_MAX_LOCKS allows): CPU per
 *      second (getrusage) and requests/s the server received (INFO commandstats);
 *   5. hand-off: holder's release -> waiter's ACQUIRED, release channel vs polling, on 1
 *      node and on 3 nodes (fencing on and off).
 *
 *   bench_lock [N]            N cycles (default 10000); latency N/10, hand-off 40 / 8 rounds
 *   bench_lock --cycles N     connect, then only N cycles in bench_cycles() (for callgrind:
 *                             valgrind --tool=callgrind --toggle-collect=bench_cycles ...)
 *
 * Servers: ELK_BENCH_PORT (single) and ELK_BENCH_PORTS (5, comma-separated) when set (by
 * tests/bench/run-all.sh, so peers use the same servers), else it starts its own; the TLS
 * server is always its own. ELK_BENCH_PROXY_PORTS: 5 delayed proxies (optional).
 * Prints "RESULT <id> <value> <unit> <name>" lines for run-all.sh's table.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"
#include "alloc_count.h"
#include "bench_redis.h"
#include "elk/blocking.h"
#include "elk/lock.h"
#include "elk/lock_scripts.h"
#include "elk/port_mbedtls.h"
#include "elk/port_posix.h"
#include "ts_log.h"

#define NSERV 6 /* 0: single; 1..5: the fleet (1..3 also the hand-off trio) */

static pid_t pids[NSERV + 1];
static uint16_t ports[NSERV];
static uint16_t proxy_ports[NSERV]; /* 1..5 */
static bool have_proxies;
static uint16_t tls_port;
static char tmpdir[64];

static void stop_all(void)
{
    bench_redis_stop_all(pids, NSERV + 1, tmpdir);
}

static void on_signal(int sig)
{
    (void)sig;
    stop_all();
    _exit(3);
}

/* "a,b,c" -> out[first..]; returns how many */
static size_t parse_ports(const char *s, uint16_t *out, size_t max)
{
    size_t n = 0;
    while (s != NULL && *s != '\0' && n < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v <= 0 || v > 65535) {
            break;
        }
        out[n++] = (uint16_t)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static bool start_servers(bool want_tls, bool own)
{
    const char *p1 = getenv("ELK_BENCH_PORT"), *pf = getenv("ELK_BENCH_PORTS");
    const char *pp = getenv("ELK_BENCH_PROXY_PORTS");
    if (!own && p1 != NULL && pf != NULL && parse_ports(p1, ports, 1) == 1 &&
        parse_ports(pf, ports + 1, 5) == 5) {
        printf("servers: run-all's (single :%u, fleet :%u..)\n", ports[0], ports[1]);
    } else {
        for (int i = 0; i < NSERV; i++) {
            ports[i] = bench_free_port();
            pids[i] = bench_redis_start(tmpdir, ports[i], false, NULL);
        }
        printf("servers: started by bench_lock (single :%u)\n", ports[0]);
    }
    have_proxies = pp != NULL && parse_ports(pp, proxy_ports + 1, 5) == 5;
    bool tls = false;
    if (want_tls) {
        char gen[600];
        const char *src = __FILE__;
        const char *slash = strrchr(src, '/');
        int dirlen = slash != NULL ? (int)(slash - src) : 1;
        snprintf(gen, sizeof gen, "sh '%.*s/../integration/gen-certs.sh' '%s' >/dev/null 2>&1",
                 dirlen, slash != NULL ? src : ".", tmpdir);
        if (system(gen) == 0) {
            tls_port = bench_free_port();
            pids[NSERV] = bench_redis_start(tmpdir, tls_port, true, NULL);
            tls = true;
        } else {
            fprintf(stderr, "bench_lock: certificate generation failed (%s): TLS rows skipped\n",
                    gen);
        }
    }
    usleep(300 * 1000);
    return tls;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
        ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

/* ------------------------------------------------------------------ gateway */

#define GW_POOL (2u * CONFIG_ELK_MAX_NODES + 2u)

typedef struct gw {
    elk_posix_tcp_t tcp[CONFIG_ELK_MAX_NODES];
    elk_transport_t tcp_t[CONFIG_ELK_MAX_NODES];
    elk_transport_t tls_t;
    elk_node_t nodes[CONFIG_ELK_MAX_NODES];
    elk_fleet_t fleet;
    _Alignas(8) uint8_t pool_mem[GW_POOL * CONFIG_ELK_POOL_BLOCK_SIZE];
    elk_pool_t pool;
    elk_client_t client;
    elk_lock_t lock;
    size_t n;
    bool tls;
    double acquired_at; /* when the last ACQUIRED event fired */
} gw_t;

static elk_entropy_t entropy;
static gw_t ga, gb;
static elk_tls_shared_t tls_shared;
static elk_tls_conn_t tls_conn;
static bool tls_shared_up;

static elk_ts_log_t bench_log; /* every line, stamped: gated by BENCH_VERBOSE below */

static const elk_log_t *blog(void)
{
    return getenv("BENCH_VERBOSE") != NULL ? elk_ts_log_init(&bench_log, ELK_LOG_DEBUG, true)
                                           : NULL;
}

static void on_ev(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    gw_t *g = user;
    (void)lock;
    if (ev->type == ELK_LOCK_EV_ACQUIRED) {
        g->acquired_at = bench_now_s();
    }
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_lock: %s: %s (%s)\n", what, elk_err_name(rc), elk_err_message(rc));
    stop_all();
    exit(1);
}

static double hygiene_waited_s; /* time spent waiting for fresh servers' quarantine */

/* Every node connected, voting and idle. Vote hygiene (docs/design.md "Masters that
 * restart or jump") keeps a server that started less than a quarantine window (the
 * default TTL + drift, 10.1 s) ago from voting: the bench's own fresh servers are out
 * for about that long after they start. The bench waits for the votes (default
 * configuration, nothing shortened) rather than measuring refused rounds; the wait is
 * printed at the end. Bound: 60 s, generous against a loaded machine. */
static void gw_wait_ready(gw_t *g)
{
    double t0 = bench_now_s();
    uint64_t end = elk_posix_now_ms() + 60000;
    for (;;) {
        size_t busy = 0, votes = 0;
        for (size_t i = 0; i < g->n; i++) {
            busy += elk_node_inflight(&g->nodes[i]);
            votes += elk_node_is_ready(&g->nodes[i]) && elk_client_node_votes(&g->client, i);
        }
        if (votes == g->n && busy == 0) {
            hygiene_waited_s += bench_now_s() - t0;
            return;
        }
        if (elk_posix_now_ms() >= end) {
            for (size_t i = 0; i < g->n; i++) {
                fprintf(stderr, "bench_lock: node %zu: %s, hygiene %s\n", i,
                        elk_node_is_ready(&g->nodes[i]) ? "ready" : "not connected",
                        elk_client_node_hygiene(&g->client, i));
            }
            die("connect and wait for votes", ELK_E_FLEET_UNAVAILABLE);
        }
        elk_blocking_step(&g->client, end, NULL);
    }
}

/* Connects to pl[0..n-1]; tls: one node over TLS to pl[0]. Locks: the caller's. */
static void gw_init(gw_t *g, const uint16_t *pl, size_t n, const char *id, bool tls)
{
    memset(g, 0, sizeof *g);
    g->n = n;
    g->tls = tls;
    int rc = elk_pool_init(&g->pool, g->pool_mem, sizeof g->pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE,
                           GW_POOL);
    if (rc != ELK_OK) {
        die("pool", rc);
    }
    for (size_t i = 0; i < n; i++) {
        elk_node_config_t nc;
        elk_node_config_defaults(&nc);
        nc.endpoint.host = "127.0.0.1";
        nc.endpoint.port = pl[i];
        nc.resp3 = true;
        elk_posix_tcp_init(&g->tcp[i], NULL, &g->tcp_t[i]);
        const elk_transport_t *t = &g->tcp_t[i];
        if (tls && i == 0) {
            nc.endpoint.server_name = "localhost";
            if (elk_tls_conn_init(&tls_conn, &tls_shared, &g->tcp_t[0], &g->tls_t) != ELK_OK) {
                die("tls conn", ELK_E_IO);
            }
            t = &g->tls_t;
        }
        rc = elk_node_init(&g->nodes[i], &nc, t, &g->pool, &entropy, blog());
        if (rc != ELK_OK) {
            die("node init", rc);
        }
    }
    elk_fleet_init(&g->fleet, g->nodes, n);
    elk_client_config_t cc;
    elk_client_config_defaults(&cc);
    cc.gateway_id = id;
    cc.key_prefix = "bench:";
    cc.mode = n == 1 ? ELK_MODE_SINGLE : ELK_MODE_REDLOCK;
    cc.safety = ELK_SAFETY_OFF;
    if ((rc = elk_client_init(&g->client, &cc, &g->fleet, &entropy, blog())) != ELK_OK) {
        die("client init", rc);
    }
}

static void gw_lock(gw_t *g, const elk_lock_config_t *lc)
{
    int rc = elk_lock_init(&g->lock, &g->client, "res", lc, on_ev, g);
    if (rc != ELK_OK) {
        die("lock init", rc);
    }
    gw_wait_ready(g);
}

static void gw_free(gw_t *g)
{
    for (size_t i = 0; i < g->n; i++) {
        elk_node_close(&g->nodes[i], elk_posix_now_ms());
    }
    if (g->tls) {
        elk_tls_conn_free(&tls_conn);
    }
}

/* ------------------------------------------------------------------ figures */

/* redis-benchmark -c 1 on port; args: -t ping, or a command line. Returns req/s (0: failed). */
static double redis_benchmark(uint16_t port, unsigned n, const char *args)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "redis-benchmark -h 127.0.0.1 -p %u -c 1 -n %u --csv %s 2>/dev/null",
             port, n, args);
    /* best of 3: the machine is shared, and a limit should not be lowered by a neighbour */
    double best = 0;
    for (int r = 0; r < 3; r++) {
        double v = bench_rb_rps(cmd);
        best = v > best ? v : best;
    }
    return best;
}

/* Our acquire (fencing or not) and release scripts on key bench:{name} as fixed RESP text,
 * the bytes lib/lock sends (name: 5 characters; the key and argument lists of
 * elk/lock_scripts.h: ACQUIRE has the fleet marker as its 4th key and no lock delay or
 * token floor); acq and rel hold 400 bytes each. */
static void raw_scripts(const char *name, const char *val, bool fencing, char *acq, int *al,
                        char *rel, int *rl)
{
    size_t vl = strlen(val);
    *al = snprintf(acq, 400,
                   "*12\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n4\r\n$13\r\nbench:{%s}\r\n$"
                   "19\r\nbench:{%s}:fence\r\n$19\r\nbench:{%s}:delay\r\n$12\r\nbench:marker\r\n"
                   "$%zu\r\n%s\r\n$5\r\n10000\r\n$1\r\n%d\r\n$1\r\n0\r\n$1\r\n0\r\n",
                   ELK_LOCK_SCRIPT_ACQUIRE_SHA1, name, name, name, vl, val, fencing ? 1 : 0);
    *rl = snprintf(rel, 400,
                   "*7\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n2\r\n$13\r\nbench:{%s}\r\n$"
                   "19\r\nbench:{%s}:delay\r\n$%zu\r\n%s\r\n"
                   "$22\r\nbench:{%s}:released\r\n",
                   ELK_LOCK_SCRIPT_RELEASE_SHA1, name, name, vl, val, name);
}

/* Peer measurements that failed (a raw loop's error reply, redis-benchmark's 0 req/s): the
 * ratios against them would be wrong, so the run exits 1 (quick mode in CI fails). */
static unsigned peer_failures;

/* Reads one reply of our scripts: an integer line, or an array of integer lines (ACQUIRE
 * and EXTEND answer {result, server_ms}, since vote hygiene reads the server's clock).
 * One recv() may bring several lines, or the whole array, at once: read until the
 * buffer holds every line the reply has (one, or 1 + the array's count), never past it
 * (one request is outstanding, so nothing follows). buf gets the reply, the first line
 * an integer line (":<n>", or "-ERR ..."): for an array the first element is moved to
 * the front. Returns that line's length, 0 on EOF or error. */
static size_t raw_reply(int fd, char *buf, size_t cap)
{
    size_t got = 0, lines = 0, want = 1;
    while (lines < want) {
        if (got + 1 >= cap) {
            return 0;
        }
        ssize_t r = recv(fd, buf + got, cap - 1 - got, 0);
        if (r <= 0) {
            return 0;
        }
        for (ssize_t k = 0; k < r; k++) {
            lines += buf[got + (size_t)k] == '\n';
        }
        got += (size_t)r;
        if (buf[0] == '*' && want == 1 && memchr(buf, '\n', got) != NULL) {
            long n = strtol(buf + 1, NULL, 10);
            want = n >= 1 ? 1 + (size_t)n : 1;
        }
    }
    buf[got] = '\0';
    if (buf[0] == '*') {
        char *first = strchr(buf, '\n') + 1;
        size_t len = (size_t)(strchr(first, '\n') + 1 - first);
        memmove(buf, first, len);
        return len;
    }
    return got;
}

/* The physical limit for the same command bytes: one blocking socket, TCP_NODELAY, our
 * acquire and release scripts written as fixed RESP text, each reply read up to its
 * CRLF, nothing else. Returns cycles/s over n cycles (0: failed). */
static int raw_fd = -1;

static double raw_cycles(uint16_t port, unsigned n)
{
    static const char val[] = "gwR:00112233445566778899aabbccddeeff";
    char acq[400], rel[400];
    if (raw_fd < 0 && (raw_fd = bench_connect_loopback(port)) < 0) {
        return 0;
    }
    int al, rl;
    raw_scripts("rawlk", val, true, acq, &al, rel, &rl);
    double t0 = bench_now_s();
    for (unsigned k = 0; k < 2 * n; k++) {
        const char *req = (k & 1u) ? rel : acq;
        size_t len = (size_t)((k & 1u) ? rl : al);
        char buf[256];
        if (send(raw_fd, req, len, 0) != (ssize_t)len) {
            return 0;
        }
        size_t got = raw_reply(
            raw_fd, buf, sizeof buf); /* ":<n>\r\n" (or an error line: then the figure is wrong) */
        if (got == 0) {
            return 0;
        }
        if (buf[0] != ':') {
            fprintf(stderr, "bench_lock: raw loop: unexpected reply %.*s\n", (int)got, buf);
            peer_failures++;
            return 0;
        }
    }
    return n / (bench_now_s() - t0);
}

/* The same-bytes floor of one Redlock round on this machine: blocking sockets to n
 * servers, our acquire script written to all, then one reply read from each (timed),
 * then the release script to all (untimed). Returns the p50 of the timed part in us. */
static double raw_fanout_p50(const uint16_t *pl, size_t n, unsigned reps)
{
    static const char val[] = "gwF:00112233445566778899aabbccddeeff";
    int fd[CONFIG_ELK_MAX_NODES];
    char acq[400], rel[400];
    double *v = calloc(reps, sizeof *v);
    int al, rl;
    raw_scripts("rawfo", val, false, acq, &al, rel, &rl);
    for (size_t i = 0; i < n; i++) {
        if ((fd[i] = bench_connect_loopback(pl[i])) < 0) {
            free(v);
            return 0;
        }
    }
    for (unsigned k = 0; k < reps + 10; k++) {
        double t0 = bench_now_s(), t1 = 0;
        for (int round = 0; round < 2; round++) {
            const char *req = round ? rel : acq;
            size_t len = (size_t)(round ? rl : al);
            for (size_t i = 0; i < n; i++) {
                if (send(fd[i], req, len, 0) != (ssize_t)len) {
                    goto out;
                }
            }
            for (size_t i = 0; i < n; i++) {
                char buf[256];
                if (raw_reply(fd[i], buf, sizeof buf) == 0 || buf[0] != ':') {
                    fprintf(stderr, "bench_lock: same-bytes fan-out: no integer reply\n");
                    peer_failures++;
                    goto out;
                }
            }
            if (round == 0) {
                t1 = bench_now_s();
            }
        }
        if (k >= 10) {
            v[k - 10] = (t1 - t0) * 1e6;
        }
    }
out:
    for (size_t i = 0; i < n; i++) {
        close(fd[i]);
    }
    qsort(v, reps, sizeof *v, bench_cmp_d);
    double p50 = bench_pct(v, reps, 0.5);
    free(v);
    return p50;
}

/* noinline: callgrind's --toggle-collect=bench_cycles counts exactly these cycles. */
__attribute__((noinline)) void bench_cycles(gw_t *g, unsigned n, double *lat_us)
{
    for (unsigned k = 0; k < n; k++) {
        double t0 = lat_us != NULL ? bench_now_s() : 0;
        int rc = elk_blocking_acquire(&g->client, &g->lock, 0, NULL);
        if (rc != ELK_OK) {
            die("acquire", rc);
        }
        rc = elk_blocking_release(&g->client, &g->lock, 1000, NULL);
        if (rc != ELK_OK) {
            die("release", rc);
        }
        if (lat_us != NULL) {
            lat_us[k] = (bench_now_s() - t0) * 1e6;
        }
    }
}

static double cycles(const char *tag, bool tls, unsigned n, double limit, double *raw_limit)
{
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    gw_init(&ga, tls ? &tls_port : &ports[0], 1, "gwA", tls);
    gw_lock(&ga, &lc);
    bench_cycles(&ga, 300, NULL); /* warm-up: scripts cached, pool blocks touched */
    double *lat = calloc(n, sizeof *lat);
    /* Three chunks, each next to a chunk of the raw same-bytes loop on the same server:
     * the machine is shared, so compare best chunk with best chunk. */
    uint64_t a0 = bench_alloc_count(), f0 = bench_free_count();
    double dt = 0, best = 0;
    unsigned chunk = n / 3, done = 0;
    for (int c = 0; c < 3; c++) {
        unsigned m = c == 2 ? n - done : chunk;
        if (!tls && raw_limit != NULL) {
            double r = raw_cycles(ports[0], m);
            *raw_limit = r > *raw_limit ? r : *raw_limit;
        }
        double t0 = bench_now_s();
        bench_cycles(&ga, m, lat + done);
        double d = bench_now_s() - t0;
        dt += d;
        best = m / d > best ? m / d : best;
        done += m;
    }
    uint64_t allocs = bench_alloc_count() - a0, frees = bench_free_count() - f0;
    gw_free(&ga);
    double cps = n / dt;
    qsort(lat, n, sizeof *lat, bench_cmp_d);
    double p50 = bench_pct(lat, n, 0.5), p99 = bench_pct(lat, n, 0.99);
    free(lat);
    printf("  edgelock %-5s %9.0f cycles/s (best third %.0f)  p50 %6.1f us  p99 %6.1f us\n",
           tls ? "TLS" : "plain", cps, best, p50, p99);
    if (limit > 0) {
        printf("  %.2f of the redis-benchmark EVALSHA 2-RTT limit\n", cps / limit);
    }
    if (!tls && raw_limit != NULL && *raw_limit > 0) {
        printf("  raw blocking loop, same command bytes: %.0f cycles/s (best third) -> edgelock "
               "best third / raw = %.2f\n",
               *raw_limit, best / *raw_limit);
        bench_result(
            "raw.same_bytes_cycle_limit", *raw_limit, "cycles/s",
            "2-RTT limit: blocking socket loop sending our exact acquire+release EVALSHA bytes "
            "(best third)");
        bench_result("elk.best_cycles_per_s", best, "cycles/s",
                     "edgelock acquire+release, best third (interleaved with the raw loop)");
        bench_result("elk.ratio_same_bytes_limit", best / *raw_limit, "x",
                     "edgelock / same-bytes raw limit (best thirds)");
    }
    char id[64];
    snprintf(id, sizeof id, "%s.cycles_per_s", tag);
    bench_result(id, cps, "cycles/s",
                 tls ? "edgelock TLS acquire+release, 1 node" : "edgelock acquire+release, 1 node");
    snprintf(id, sizeof id, "%s.p50_us", tag);
    bench_result(id, p50, "us", tls ? "edgelock TLS cycle p50" : "edgelock cycle p50");
    snprintf(id, sizeof id, "%s.p99_us", tag);
    bench_result(id, p99, "us", tls ? "edgelock TLS cycle p99" : "edgelock cycle p99");
    if (!tls) {
        printf("  heap calls over %u cycles after connect: %llu malloc/calloc/realloc, %llu free "
               "(target 0)\n",
               n, (unsigned long long)allocs, (unsigned long long)frees);
        bench_result("elk.heap_per_cycle", (double)allocs / n, "calls",
                     "edgelock heap calls per cycle (lib+port, --wrap)");
        bench_result("elk.heap_calls_total", (double)(allocs + frees), "calls",
                     "edgelock heap calls over the timed cycles");
    }
    return cps;
}

static unsigned latency_idle_ms; /* sleep before each timed acquire (cold wake-ups) */

static double latency(const char *label, const char *id, const uint16_t *pl, size_t n, bool fencing,
                      unsigned reps)
{
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    lc.fencing = fencing;
    gw_init(&ga, pl, n, "gwA", false);
    gw_lock(&ga, &lc);
    double *v = calloc(reps, sizeof *v);
    for (unsigned k = 0; k < reps + 10; k++) {
        if (latency_idle_ms > 0) {
            usleep(latency_idle_ms * 1000u);
        }
        double t0 = bench_now_s();
        int rc = elk_blocking_acquire(&ga.client, &ga.lock, 0, NULL);
        double t1 = bench_now_s();
        if (rc != ELK_OK) {
            die("acquire", rc);
        }
        if (k >= 10) {
            v[k - 10] = (t1 - t0) * 1e6;
        }
        elk_blocking_release(&ga.client, &ga.lock, 1000, NULL);
    }
    qsort(v, reps, sizeof *v, bench_cmp_d);
    double p50 = bench_pct(v, reps, 0.5), p99 = bench_pct(v, reps, 0.99);
    printf("  %-46s p50 %8.1f us   p99 %8.1f us\n", label, p50, p99);
    char rid[64], name[160];
    snprintf(rid, sizeof rid, "%s.acq_p50_us", id);
    snprintf(name, sizeof name, "edgelock acquire p50, %s", label);
    bench_result(rid, p50, "us", name);
    snprintf(rid, sizeof rid, "%s.acq_p99_us", id);
    snprintf(name, sizeof name, "edgelock acquire p99, %s", label);
    bench_result(rid, p99, "us", name);
    free(v);
    gw_free(&ga);
    return p50;
}

/* -------------------------------------------------------- stack high-water */

#define STACK_BYTES (256u * 1024u)

static unsigned stack_cycles;

static void *stack_thread(void *arg)
{
    if (stack_cycles > 0) {
        bench_cycles(arg, stack_cycles, NULL);
    }
    return NULL;
}

/* Bytes of a painted thread stack that running `cycles` cycles touched. */
static size_t stack_touched(gw_t *g, unsigned cycles)
{
    uint8_t *stk = aligned_alloc(4096, STACK_BYTES);
    pthread_attr_t at;
    pthread_t th;
    size_t i = 0;
    if (stk == NULL) {
        return 0;
    }
    memset(stk, 0xA5, STACK_BYTES);
    pthread_attr_init(&at);
    pthread_attr_setstack(&at, stk, STACK_BYTES);
    stack_cycles = cycles;
    if (pthread_create(&th, &at, stack_thread, g) != 0) {
        free(stk);
        return 0;
    }
    pthread_join(th, NULL);
    while (i < STACK_BYTES && stk[i] == 0xA5) { /* the stack grows down from the top */
        i++;
    }
    free(stk);
    return STACK_BYTES - i;
}

static void stack_hwm(void)
{
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    gw_init(&ga, &ports[0], 1, "gwS", false);
    gw_lock(&ga, &lc);
    size_t base = stack_touched(&ga, 0); /* thread start-up and glibc's TLS block */
    size_t used = stack_touched(&ga, 1000);
    gw_free(&ga);
    printf("  stack high-water of 1,000 lock cycles (elk_blocking_* + lib + posix port + libc): "
           "%zu bytes\n"
           "  (painted pthread stack, minus an empty thread's %zu bytes)\n",
           used - base, base);
    bench_result(
        "elk.stack_hwm_bytes", (double)(used - base), "bytes",
        "stack high-water of a lock cycle, host x86_64 -O2 (blocking API + lib + port + libc)");
}

/* ---------------------------------------------------------------- many locks */

/* Requests our client sent, as the server counts them: EVALSHA/EVAL + PING calls from
 * INFO commandstats (total_commands_processed would also count the GET/PEXPIRE/... run
 * inside each script, three per renewal). */
static long server_commands(uint16_t port)
{
    return bench_redis_requests(port);
}

#define MANY_MAX (CONFIG_ELK_MAX_LOCKS < 1024 ? CONFIG_ELK_MAX_LOCKS : 1024)
static elk_lock_t many[MANY_MAX];
static char many_names[MANY_MAX][16];
static unsigned many_renewed, many_renew_failed, many_lost;

static void many_ev(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    (void)user;
    (void)lock;
    many_renewed += ev->type == ELK_LOCK_EV_RENEWED;
    many_renew_failed += ev->type == ELK_LOCK_EV_RENEW_FAILED;
    many_lost += ev->type == ELK_LOCK_EV_LOST;
}

/* Acquire every one of the count locks; a full queue (ELK_E_QUEUE_FULL) only means:
 * drive and try again. */
static void many_acquire_all(size_t count)
{
    size_t next = 0, held = 0;
    uint64_t end = elk_posix_now_ms() + 20000;
    while (held < count) {
        uint64_t now = elk_posix_now_ms();
        if (now > end) {
            die("many: acquire all", ELK_E_TIMEOUT);
        }
        /* At most 4 acquisitions in flight: a node queues requests in one pool block (tx)
         * and a round it cannot send fails (FLEET_UNAVAILABLE) rather than waiting. */
        size_t inflight = 0;
        for (size_t i = 0; i < next; i++) {
            elk_lock_state_t st = elk_lock_state(&many[i]);
            inflight += st == ELK_LOCK_ACQUIRING || st == ELK_LOCK_COMMITTING;
        }
        while (next < count && inflight < 4) {
            inflight++;
            int rc = elk_lock_acquire(&many[next], now, 0);
            if (rc == ELK_E_QUEUE_FULL) {
                break;
            }
            if (rc != ELK_OK && rc != ELK_E_WOULD_BLOCK) {
                die("many: acquire", rc);
            }
            next++;
        }
        elk_blocking_step(&ga.client, now + 5, NULL);
        held = 0;
        for (size_t i = 0; i < next; i++) {
            held += elk_lock_is_held(&many[i], elk_posix_now_ms());
        }
        if (next == count && held < count) {
            for (size_t i = 0; i < count; i++) {
                elk_lock_state_t st = elk_lock_state(&many[i]);
                if (st == ELK_LOCK_IDLE || st == ELK_LOCK_LOST) {
                    die("many: a lock failed", elk_lock_last_error(&many[i]));
                }
            }
        }
    }
}

/* Hold count locks for window_s and print what renewing them costs. */
static void many_measure(size_t count, uint32_t ttl_ms, double window_s,
                         const elk_lock_config_t *lc)
{
    /* Renewals are spread by the acquisition order; measure whole renewal periods. */
    long c0 = server_commands(ports[0]);
    many_renewed = many_renew_failed = many_lost = 0;
    double cpu0 = cpu_s(), t0 = bench_now_s();
    uint64_t stop = elk_posix_now_ms() + (uint64_t)(window_s * 1000);
    while (elk_posix_now_ms() < stop) {
        elk_blocking_step(&ga.client, stop, NULL);
    }
    double cpu = cpu_s() - cpu0, dt = bench_now_s() - t0;
    long c1 = server_commands(ports[0]);
    size_t still = 0;
    for (size_t i = 0; i < count; i++) {
        still += elk_lock_is_held(&many[i], elk_posix_now_ms());
    }
    double cmds = c0 >= 0 && c1 >= 0 ? (double)(c1 - c0) / dt : -1;
    double renew_expect = (double)count / (ttl_ms * lc->renew_fraction_pct / 100.0 / 1000.0);
    printf("  %5zu locks: CPU %7.3f ms/s (%.4f%% of a core)  %8.1f requests/s (renewal schedule: "
           "%.1f/s)  "
           "still held %zu/%zu, renewed %u, renew failed %u, lost %u\n",
           count, cpu * 1e3 / dt, cpu * 100 / dt, cmds, renew_expect, still, count, many_renewed,
           many_renew_failed, many_lost);
    char id[64], name[128];
    snprintf(id, sizeof id, "elk.many%zu.cpu_ms_per_s", count);
    snprintf(name, sizeof name, "%zu locks held, renewing (ttl %u ms): CPU (getrusage)", count,
             ttl_ms);
    bench_result(id, cpu * 1e3 / dt, "ms/s", name);
    snprintf(id, sizeof id, "elk.many%zu.cmds_per_s", count);
    snprintf(name, sizeof name,
             "%zu locks held, renewing (ttl %u ms): requests/s (EVALSHA+PING at the server)", count,
             ttl_ms);
    bench_result(id, cmds, "req/s", name);
}

/* Release every lock, wait (5 s at most) until none is busy, deinit them. */
static void many_release_all(size_t count)
{
    for (size_t i = 0; i < count; i++) {
        elk_lock_release(&many[i], elk_posix_now_ms());
    }
    uint64_t end = elk_posix_now_ms() + 5000;
    while (elk_posix_now_ms() < end) {
        size_t busy = 0;
        for (size_t i = 0; i < count; i++) {
            busy += elk_lock_state(&many[i]) == ELK_LOCK_RELEASING || elk_lock_busy(&many[i]);
        }
        if (busy == 0) {
            break;
        }
        elk_blocking_step(&ga.client, elk_posix_now_ms() + 5, NULL);
    }
    for (size_t i = 0; i < count; i++) {
        elk_lock_deinit(&many[i]);
    }
}

static void many_locks(size_t count, uint32_t ttl_ms, double window_s)
{
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    lc.ttl_ms = ttl_ms;
    gw_init(&ga, &ports[0], 1, "gwM", false);
    for (size_t i = 0; i < count; i++) {
        snprintf(many_names[i], sizeof many_names[i], "m%zu", i);
        int rc = elk_lock_init(&many[i], &ga.client, many_names[i], &lc, many_ev, NULL);
        if (rc != ELK_OK) {
            die("many: lock init", rc);
        }
    }
    gw_wait_ready(&ga);
    many_acquire_all(count);
    many_measure(count, ttl_ms, window_s, &lc);
    many_release_all(count);
    gw_free(&ga);
}

/* ------------------------------------------------------------------ hand-off */

static void drive_both(double until_s, bool (*stop)(void))
{
    for (;;) {
        double t = bench_now_s();
        if (t >= until_s || (stop != NULL && stop())) {
            return;
        }
        uint64_t now = elk_posix_now_ms();
        uint64_t next = elk_client_poll(&ga.client, now);
        uint64_t nb = elk_client_poll(&gb.client, now);
        next = nb < next ? nb : next;
        elk_wait_t w[2 * CONFIG_ELK_MAX_NODES + 2];
        size_t nw = elk_client_waits(&ga.client, w, CONFIG_ELK_MAX_NODES + 1);
        nw += elk_client_waits(&gb.client, w + nw, CONFIG_ELK_MAX_NODES + 1);
        uint64_t cap = now + 5;
        elk_posix_wait(w, nw, next < cap ? next : cap, NULL);
    }
}

static bool b_held(void)
{
    return elk_lock_is_held(&gb.lock, elk_posix_now_ms());
}

static bool b_waiting(void)
{
    return elk_lock_state(&gb.lock) == ELK_LOCK_WAITING;
}

static double ping_rtt_us;
static double handoff_rel_us; /* sum: time inside elk_lock_release() */

static double handoff(const uint16_t *pl, size_t n, bool channel, bool fencing, unsigned reps)
{
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    lc.use_release_channel = channel;
    lc.fencing = fencing;
    gw_init(&ga, pl, n, "gwA", false);
    gw_lock(&ga, &lc);
    gw_init(&gb, pl, n, "gwB", false);
    gw_lock(&gb, &lc);
    double *v = calloc(reps, sizeof *v);
    handoff_rel_us = 0;
    for (unsigned k = 0; k < reps; k++) {
        int rc = elk_blocking_acquire(&ga.client, &ga.lock, 0, NULL);
        if (rc != ELK_OK) {
            die("hand-off: A acquire", rc);
        }
        uint64_t now = elk_posix_now_ms();
        rc = elk_lock_acquire(&gb.lock, now, now + 5000);
        if (rc != ELK_E_WOULD_BLOCK) {
            die("hand-off: B acquire", rc);
        }
        drive_both(bench_now_s() + 2.0, b_waiting);
        drive_both(bench_now_s() + 0.02, NULL); /* B subscribed and settled */
        double t0 = bench_now_s();
        if (blog() != NULL) {
            fprintf(stderr, "  %.6f hand-off: A releases\n", t0);
        }
        elk_lock_release(&ga.lock, elk_posix_now_ms());
        handoff_rel_us += (bench_now_s() - t0) * 1e6;
        drive_both(t0 + 5.0, b_held);
        if (!b_held()) {
            die("hand-off: B never acquired", elk_lock_last_error(&gb.lock));
        }
        v[k] = (gb.acquired_at - t0) * 1e6;
        elk_blocking_release(&gb.client, &gb.lock, 1000, NULL);
        drive_both(bench_now_s() + 0.01, NULL);
    }
    gw_free(&ga);
    gw_free(&gb);
    qsort(v, reps, sizeof *v, bench_cmp_d);
    double p50 = bench_pct(v, reps, 0.5);
    printf("    (hand-off on %zu node(s), %s: min %.1f p50 %.1f p90 %.1f us; inside "
           "elk_lock_release(): mean %.1f us)\n",
           n, channel ? "channel" : "polling", v[0], p50, bench_pct(v, reps, 0.9),
           handoff_rel_us / reps);
    free(v);
    return p50;
}

/* --cycles N: only the cycle loop on one plain server (for profiling). */
static int run_cycles_only(unsigned n)
{
    start_servers(false, false);
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    gw_init(&ga, &ports[0], 1, "gwA", false);
    gw_lock(&ga, &lc);
    bench_cycles(&ga, 200, NULL);
    bench_cycles(&ga, n, NULL);
    gw_free(&ga);
    printf("bench_lock --cycles: %u cycles done\n", n);
    return 0;
}

/* The servers, plain and TLS; false when the TLS rows are to be skipped. */
static bool start_all(void)
{
    bool tls = start_servers(true, false);
    if (tls) {
        char ca[128];
        snprintf(ca, sizeof ca, "%s/ca.crt", tmpdir);
        const elk_tls_config_t tc = {.ca_file = ca};
        if (elk_tls_shared_init(&tls_shared, &tc, &entropy) != ELK_OK) {
            fprintf(stderr, "bench_lock: TLS setup failed: TLS rows skipped\n");
            tls = false;
        } else {
            tls_shared_up = true;
        }
    }
    return tls;
}

/* 1. limits with the same command types as a cycle: *lim_ping and *lim_eval. */
static void section_limits(double *lim_ping_out, double *lim_eval_out)
{
    char args[400];
    double ping = redis_benchmark(ports[0], 20000, "-t ping");
    ping_rtt_us = ping > 0 ? 1e6 / ping : 0;
    bench_result("raw.ping_rtt_us", ping_rtt_us, "us",
                 "1 PING round trip (1e6 / redis-benchmark -c 1 PING req/s)");
    /* The client loads the scripts at connect; make sure they are there for redis-benchmark. */
    gw_init(&ga, &ports[0], 1, "gwL", false);
    elk_lock_config_t lc0;
    elk_lock_config_defaults(&lc0);
    gw_lock(&ga, &lc0);
    gw_free(&ga);
    /* acquire on fresh keys (the SET NX succeeds, the fence counter is incremented), the
     * release script's compare-and-delete (+ publish) on a key with our value absent. */
    snprintf(args, sizeof args,
             "-r 100000000 EVALSHA %s 4 bench:lim{__rand_int__} bench:lim{__rand_int__}:fence "
             "bench:lim{__rand_int__}:delay bench:marker gwL:0123456789abcdef "
             "10000 1 0 0",
             ELK_LOCK_SCRIPT_ACQUIRE_SHA1);
    double acq = redis_benchmark(ports[0], 20000, args);
    snprintf(args, sizeof args,
             "-r 100000000 EVALSHA %s 2 bench:lim{__rand_int__} bench:lim{__rand_int__}:delay "
             "gwL:0123456789abcdef bench:lim{__rand_int__}:released",
             ELK_LOCK_SCRIPT_RELEASE_SHA1);
    double rel = redis_benchmark(ports[0], 20000, args);
    if (ping <= 0 || acq <= 0 || rel <= 0) {
        fprintf(stderr,
                "bench_lock: redis-benchmark measured 0 req/s (PING %.0f, acquire %.0f, "
                "release %.0f): is redis-benchmark installed, do the scripts' keys match?\n",
                ping, acq, rel);
        peer_failures++;
    }
    double lim_ping = ping / 2, lim_eval = acq > 0 && rel > 0 ? 1.0 / (1.0 / acq + 1.0 / rel) : 0;
    printf("\n1. limits: redis-benchmark -c 1 on the same server\n");
    printf("  PING %.0f req/s -> 2-RTT limit %.0f cycles/s\n", ping, lim_ping);
    printf("  EVALSHA acquire %.0f req/s + EVALSHA release %.0f req/s -> limit %.0f cycles/s\n",
           acq, rel, lim_eval);
    bench_result("raw.ping_rps", ping, "req/s", "redis-benchmark -c 1 PING_MBULK");
    bench_result("raw.ping_cycle_limit", lim_ping, "cycles/s", "2-RTT limit from PING (req/s / 2)");
    bench_result("raw.evalsha_acquire_rps", acq, "req/s",
                 "redis-benchmark -c 1 EVALSHA <acquire sha> (fresh keys)");
    bench_result("raw.evalsha_release_rps", rel, "req/s",
                 "redis-benchmark -c 1 EVALSHA <release sha>");
    bench_result("raw.evalsha_cycle_limit", lim_eval, "cycles/s",
                 "2-RTT limit, same scripts: 1/(1/acq + 1/rel)");

    *lim_ping_out = lim_ping;
    *lim_eval_out = lim_eval;
}

static void section_cycles(unsigned n, double lim_ping, double lim_eval, bool tls)
{
    /* 2. cycles */
    printf("\n2. single node, acquire + release (2 round trips each), %u cycles\n", n);
    double raw_lim = 0;
    double cps = cycles("elk", false, n, lim_eval, &raw_lim);
    if (lim_eval > 0) {
        bench_result("elk.ratio_evalsha_limit", cps / lim_eval, "x",
                     "edgelock / EVALSHA 2-RTT limit");
    }
    if (lim_ping > 0) {
        bench_result("elk.ratio_ping_limit", cps / lim_ping, "x", "edgelock / PING 2-RTT limit");
    }
    if (tls) {
        cycles("elk_tls", true, n / 2, 0, NULL);
    }
}

static void section_latency(unsigned n)
{
    /* 3. acquire latency */
    unsigned reps = n / 10 < 200 ? 200 : n / 10;
    printf("\n3. acquire latency (%u acquisitions each, released in between)\n", reps);
    double l1 = latency("1 node", "elk1", &ports[0], 1, true, reps);
    double l5 =
        latency("5 nodes, fencing (acquire + commit round)", "elk5", &ports[1], 5, true, reps);
    double l5nf = latency("5 nodes, no fencing (one round)", "elk5nf", &ports[1], 5, false, reps);
    printf("  ratio 5-node/1-node: fencing %.2f, no fencing %.2f\n", l5 / l1, l5nf / l1);
    double r1 = raw_fanout_p50(&ports[0], 1, reps), r5 = raw_fanout_p50(&ports[1], 5, reps);
    printf("  same-bytes floor (blocking sockets, acquire script to all, read all): 1 node %.1f "
           "us, 5 nodes %.1f us "
           "(%.2fx: 5 servers share %ld cores here)\n",
           r1, r5, r1 > 0 ? r5 / r1 : 0, sysconf(_SC_NPROCESSORS_ONLN));
    bench_result("raw1.acq_p50_us", r1, "us",
                 "same-bytes floor of one acquire round, 1 node (blocking sockets)");
    bench_result("raw5.acq_p50_us", r5, "us",
                 "same-bytes floor of one acquire round, 5 nodes in parallel (blocking sockets)");
    bench_result("elk5.ratio_1node", l5 / l1, "x", "5-node acquire (fencing) / 1-node acquire");
    bench_result("elk5nf.ratio_1node", l5nf / l1, "x",
                 "5-node acquire (no fencing) / 1-node acquire");
    if (have_proxies) {
        unsigned dr = 60;
        const char *d = getenv("ELK_BENCH_DELAY_MS");
        char lab[96];
        double p1, p5, p5nf;
        snprintf(lab, sizeof lab, "1 node via proxy (+%s ms each way)", d ? d : "?");
        p1 = latency(lab, "elk1d", &proxy_ports[1], 1, true, dr);
        snprintf(lab, sizeof lab, "5 nodes via proxies, fencing (+%s ms)", d ? d : "?");
        p5 = latency(lab, "elk5d", &proxy_ports[1], 5, true, dr);
        snprintf(lab, sizeof lab, "5 nodes via proxies, no fencing (+%s ms)", d ? d : "?");
        p5nf = latency(lab, "elk5dnf", &proxy_ports[1], 5, false, dr);
        printf("  delayed: ratio 5-node/1-node: fencing %.2f, no fencing %.2f\n", p5 / p1,
               p5nf / p1);
        bench_result("elk5d.ratio_1node", p5 / p1, "x", "delayed: 5-node (fencing) / 1-node");
        bench_result("elk5dnf.ratio_1node", p5nf / p1, "x",
                     "delayed: 5-node (no fencing) / 1-node");
    }
}

static void section_many_locks(void)
{
    /* 4. many locks */
    printf(
        "\n4. many locks held on 1 node, renewing (ttl 3000 ms, renew every ~1 s), 3.0 s window\n");
    many_locks(1, 3000, 3.0);
    many_locks(MANY_MAX < 64 ? MANY_MAX : 64, 3000, 3.0);
    if (MANY_MAX >= 1024) {
        many_locks(1024, 3000, 3.0);
    } else {
        printf("  1024 locks: needs CONFIG_ELK_MAX_LOCKS >= 1024 (build with "
               "-DELK_DEFCONFIG=tests/bench/"
               "bench_defconfig)\n");
    }
}

/* 5. hand-off */
static void section_handoff(void)
{
    printf("\n5. hand-off: holder's release -> waiter's ACQUIRED (p50)\n");
    double h1c = handoff(&ports[0], 1, true, true, 40);
    double h1p = handoff(&ports[0], 1, false, true, 8);
    double h3c = handoff(&ports[1], 3, true, true, 40);
    double h3cn = handoff(&ports[1], 3, true, false, 40);
    double h3p = handoff(&ports[1], 3, false, true, 8);
    double rtt = ping_rtt_us;
    /* The hand-off starts after 20 ms of quiet (the waiter settled), so every process on
     * its path wakes from sleep: the fair yardstick is a round trip after the same quiet. */
    latency_idle_ms = 20;
    double cold1 = latency("1 node, acquire after 20 ms idle (cold round trip)", "elk1cold",
                           &ports[0], 1, true, 40);
    latency_idle_ms = 0;
    printf("  hand-off with channel = %.1f cold acquire round trips\n",
           cold1 > 0 ? h1c / cold1 : 0);
    bench_result("elk.handoff_cold_rtts", cold1 > 0 ? h1c / cold1 : 0, "x",
                 "edgelock hand-off (1 node, channel) / 1-node acquire after 20 ms idle");
    printf("  1 node,  release channel          %9.1f us (%.1f PING round trips)\n", h1c,
           rtt > 0 ? h1c / rtt : 0);
    printf("  1 node,  polling (50..250 ms)     %9.1f us\n", h1p);
    printf("  3 nodes, channel, fencing         %9.1f us (includes the commit round)\n", h3c);
    printf("  3 nodes, channel, no fencing      %9.1f us\n", h3cn);
    printf("  3 nodes, polling, fencing         %9.1f us\n", h3p);
    bench_result("elk.handoff_rtts", rtt > 0 ? h1c / rtt : 0, "RTT",
                 "edgelock hand-off, 1 node, in PING round trips");
    /* the hand-off p50s, in us: what each row measured */
    const struct {
        const char *id, *what;
        double us;
    } p50[] = {{"elk.handoff_p50_us", "1 node, release channel", h1c},
               {"elk.handoff_poll_p50_us", "1 node, polling 50..250 ms", h1p},
               {"elk3.handoff_p50_us", "3 nodes, channel, fencing (+commit)", h3c},
               {"elk3nf.handoff_p50_us", "3 nodes, channel, no fencing", h3cn},
               {"elk3.handoff_poll_p50_us", "3 nodes, polling", h3p}};
    for (size_t i = 0; i < sizeof p50 / sizeof p50[0]; i++) {
        char name[96];
        snprintf(name, sizeof name, "edgelock hand-off p50, %s", p50[i].what);
        bench_result(p50[i].id, p50[i].us, "us", name);
    }
}

int main(int argc, char **argv)
{
    bool cycles_only = argc > 2 && strcmp(argv[1], "--cycles") == 0;
    unsigned n = (unsigned)atoi(argc > 2 && cycles_only ? argv[2] : argc > 1 ? argv[1] : "10000");
    if (n < 100) {
        n = 100;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!bench_begin("bench_lock", "/tmp/elk-benchlock-XXXXXX", on_signal, tmpdir, sizeof tmpdir)) {
        return 2;
    }
    elk_posix_entropy(&entropy);
    atexit(stop_all);
    if (cycles_only) {
        return run_cycles_only(n);
    }
    bool tls = start_all();
    printf("bench_lock: %u cycles, %s build, loopback, RESP3, CONFIG_ELK_MAX_LOCKS=%d\n", n,
           ELK_BENCH_BUILD_TYPE, CONFIG_ELK_MAX_LOCKS);

    /* BENCH_ONLY=handoff: section 5 only (for strace / perf of the hand-off path) */
    const char *only = getenv("BENCH_ONLY");
    if (only == NULL || strcmp(only, "handoff") != 0) {
        double lim_ping, lim_eval;
        section_limits(&lim_ping, &lim_eval);
        section_cycles(n, lim_ping, lim_eval, tls);
        stack_hwm();
        section_latency(n);
        section_many_locks();
    }
    section_handoff();

    if (tls_shared_up) {
        elk_tls_shared_free(&tls_shared);
    }
    printf("\nwaited %.1f s in all for fresh servers' vote quarantine (vote hygiene, default "
           "window; not timed)\n",
           hygiene_waited_s);
    printf("\nreproduce: cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release && "
           "cmake --build build-bench -j2 --target bench_lock && "
           "build-bench/tests/bench/bench_lock %u\n",
           n);
    stop_all();
    if (peer_failures > 0) {
        fprintf(stderr, "bench_lock: %u peer measurement(s) failed (above): the ratios are wrong\n",
                peer_failures);
        return 1;
    }
    return 0;
}
