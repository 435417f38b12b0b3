/*
 * Lease engine figures on loopback, next to the raw round-trip limit measured with
 * redis-benchmark in the same run:
 *
 *   1. single node: acquire + release cycles per second (each cycle is two round trips:
 *      acquire script, release script), against redis-benchmark -c 1 PING / 2;
 *      and the heap calls our code made during the timed cycles (target 0);
 *   2. acquire latency (mean, p50, p99) on 1 node vs 5 nodes (Redlock with the fencing
 *      commit: two round trips; and without fencing: one);
 *   3. hand-off latency between two gateways on 3 nodes: from the holder's release to
 *      the waiter's ACQUIRED event, with the release channel (RESP3 push) and without
 *      it (retry delays 50..250 ms).
 *
 *   bench_lock [N]        (default N = 5000 cycles; latency and hand-off use N/10 and 30)
 *
 * Starts its own redis-server processes (plain TCP, ephemeral ports) and stops them.
 * Reproduce:  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release &&
 *             cmake --build build-bench -j2 --target bench_lock && build-bench/tests/bench/bench_lock
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc_count.h"
#include "elk/blocking.h"
#include "elk/lock.h"
#include "elk/port_posix.h"

#define NSERV 6 /* 0: single; 1..5: the five; 1..3 also the three for hand-off */

static pid_t pids[NSERV];
static uint16_t ports[NSERV];

static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("bench_lock: free port");
        exit(2);
    }
    close(fd);
    return ntohs(a.sin_port);
}

static void stop_all(void)
{
    for (int i = 0; i < NSERV; i++) {
        if (pids[i] > 0) {
            kill(pids[i], SIGTERM);
            waitpid(pids[i], NULL, 0);
            pids[i] = 0;
        }
    }
}

static void on_signal(int sig)
{
    (void)sig;
    stop_all();
    _exit(3);
}

static void start_all(void)
{
    for (int i = 0; i < NSERV; i++) {
        char port[16];
        ports[i] = free_port();
        snprintf(port, sizeof port, "%u", ports[i]);
        pid_t pid = fork();
        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
            }
            execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--dir", "/tmp", (char *)NULL);
            _exit(127);
        }
        pids[i] = pid;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ gateway */

#define GW_POOL (2u * CONFIG_ELK_MAX_NODES + 2u)

typedef struct gw {
    elk_posix_tcp_t tcp[CONFIG_ELK_MAX_NODES];
    elk_transport_t tcp_t[CONFIG_ELK_MAX_NODES];
    elk_node_t nodes[CONFIG_ELK_MAX_NODES];
    elk_fleet_t fleet;
    _Alignas(8) uint8_t pool_mem[GW_POOL * CONFIG_ELK_POOL_BLOCK_SIZE];
    elk_pool_t pool;
    elk_client_t client;
    elk_lock_t lock;
    size_t n;
    double acquired_at; /* when the last ACQUIRED event fired */
} gw_t;

static elk_entropy_t entropy;
static gw_t ga, gb;

static void log_write(void *ctx, int level, const char *module, const char *text, size_t len)
{
    (void)ctx;
    fprintf(stderr, "  [%s %d] %.*s\n", module, level, (int)len, text);
}

static elk_log_t bench_log = {NULL, log_write, ELK_LOG_DEBUG};

static const elk_log_t *blog(void)
{
    return getenv("BENCH_VERBOSE") != NULL ? &bench_log : NULL;
}

static void on_ev(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    gw_t *g = user;
    (void)lock;
    if (ev->type == ELK_LOCK_EV_ACQUIRED) {
        g->acquired_at = now_s();
    }
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_lock: %s: %s (%s)\n", what, elk_err_name(rc), elk_err_message(rc));
    stop_all();
    exit(1);
}

static void gw_init(gw_t *g, size_t first, size_t n, const char *id, const elk_lock_config_t *lc)
{
    memset(g, 0, sizeof *g);
    g->n = n;
    int rc = elk_pool_init(&g->pool, g->pool_mem, sizeof g->pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE, GW_POOL);
    if (rc != ELK_OK) {
        die("pool", rc);
    }
    for (size_t i = 0; i < n; i++) {
        elk_node_config_t nc;
        elk_node_config_defaults(&nc);
        nc.endpoint.host = "127.0.0.1";
        nc.endpoint.port = ports[first + i];
        nc.resp3 = true;
        elk_posix_tcp_init(&g->tcp[i], NULL, &g->tcp_t[i]);
        rc = elk_node_init(&g->nodes[i], &nc, &g->tcp_t[i], &g->pool, &entropy, blog());
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
    if ((rc = elk_lock_init(&g->lock, &g->client, "res", lc, on_ev, g)) != ELK_OK) {
        die("lock init", rc);
    }
    /* all nodes up and start-up requests answered */
    uint64_t end = elk_posix_now_ms() + 10000;
    for (;;) {
        size_t busy = 0;
        for (size_t i = 0; i < n; i++) {
            busy += elk_node_inflight(&g->nodes[i]);
        }
        if (elk_fleet_ready_count(&g->fleet) == n && busy == 0) {
            break;
        }
        if (elk_posix_now_ms() >= end) {
            die("connect", ELK_E_FLEET_UNAVAILABLE);
        }
        elk_blocking_step(&g->client, end, NULL);
    }
}

static void gw_free(gw_t *g)
{
    for (size_t i = 0; i < g->n; i++) {
        elk_node_close(&g->nodes[i], elk_posix_now_ms());
    }
}

/* ------------------------------------------------------------------ figures */

static double redis_benchmark_rps(uint16_t port, unsigned n)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "redis-benchmark -h 127.0.0.1 -p %u -c 1 -n %u -t ping --csv 2>/dev/null", port, n);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        return 0;
    }
    char line[512];
    double best = 0;
    while (fgets(line, sizeof line, p) != NULL) {
        /* "PING_INLINE","12345.67",... and "PING_MBULK","...": keep the bulk one */
        char *q = strstr(line, "PING_MBULK");
        if (q != NULL) {
            char *v = strchr(q + 11, '"');
            if (v != NULL) {
                best = atof(v + 1);
            }
        }
    }
    pclose(p);
    return best;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void latency(const char *label, size_t first, size_t n, bool fencing, unsigned reps, double *mean_out)
{
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    lc.fencing = fencing;
    gw_init(&ga, first, n, "gwA", &lc);
    double *v = calloc(reps, sizeof *v);
    double sum = 0;
    for (unsigned k = 0; k < reps; k++) {
        double t0 = now_s();
        int rc = elk_blocking_acquire(&ga.client, &ga.lock, 0, NULL);
        double t1 = now_s();
        if (rc != ELK_OK) {
            die("acquire", rc);
        }
        v[k] = (t1 - t0) * 1e6;
        sum += v[k];
        elk_blocking_release(&ga.client, &ga.lock, 1000, NULL);
    }
    qsort(v, reps, sizeof *v, cmp_d);
    printf("  %-34s mean %7.1f us   p50 %7.1f us   p99 %7.1f us\n", label, sum / reps, v[reps / 2],
           v[(size_t)(reps * 0.99)]);
    *mean_out = sum / reps;
    free(v);
    gw_free(&ga);
}

static void drive_both(double until_s, bool (*stop)(void))
{
    for (;;) {
        double t = now_s();
        if (t >= until_s || (stop != NULL && stop())) {
            return;
        }
        uint64_t now = elk_posix_now_ms();
        uint64_t next = elk_client_poll(&ga.client, now);
        uint64_t nb = elk_client_poll(&gb.client, now);
        next = nb < next ? nb : next;
        elk_wait_t w[2 * CONFIG_ELK_MAX_NODES];
        size_t nw = elk_fleet_waits(&ga.fleet, w, CONFIG_ELK_MAX_NODES);
        nw += elk_fleet_waits(&gb.fleet, w + nw, CONFIG_ELK_MAX_NODES);
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

static double handoff(bool channel, unsigned reps)
{
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    lc.use_release_channel = channel;
    gw_init(&ga, 1, 3, "gwA", &lc);
    gw_init(&gb, 1, 3, "gwB", &lc);
    double sum = 0;
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
        drive_both(now_s() + 2.0, b_waiting);
        drive_both(now_s() + 0.02, NULL); /* B subscribed and settled */
        double t0 = now_s();
        elk_lock_release(&ga.lock, elk_posix_now_ms());
        drive_both(t0 + 5.0, b_held);
        if (!b_held()) {
            die("hand-off: B never acquired", elk_lock_last_error(&gb.lock));
        }
        sum += (gb.acquired_at - t0) * 1e3;
        elk_blocking_release(&gb.client, &gb.lock, 1000, NULL);
        drive_both(now_s() + 0.01, NULL);
    }
    gw_free(&ga);
    gw_free(&gb);
    return sum / reps;
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 5000u;
    if (n < 100) {
        n = 100;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    elk_posix_entropy(&entropy);
    start_all();
    atexit(stop_all);
    usleep(300 * 1000);

    printf("bench_lock: %u cycles, CONFIG build %s, loopback, redis-server 1 + 5 plain TCP, RESP3\n", n,
           ELK_BENCH_BUILD_TYPE);

    /* 1. cycles per second against the two-round-trip limit */
    double ping_rps = redis_benchmark_rps(ports[0], n * 4);
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    gw_init(&ga, 0, 1, "gwA", &lc);
    for (unsigned k = 0; k < 200; k++) { /* warm-up */
        elk_blocking_acquire(&ga.client, &ga.lock, 0, NULL);
        elk_blocking_release(&ga.client, &ga.lock, 1000, NULL);
    }
    uint64_t a0 = bench_alloc_count(), f0 = bench_free_count();
    double t0 = now_s();
    for (unsigned k = 0; k < n; k++) {
        int rc = elk_blocking_acquire(&ga.client, &ga.lock, 0, NULL);
        if (rc != ELK_OK) {
            die("acquire", rc);
        }
        rc = elk_blocking_release(&ga.client, &ga.lock, 1000, NULL);
        if (rc != ELK_OK) {
            die("release", rc);
        }
    }
    double dt = now_s() - t0;
    uint64_t allocs = bench_alloc_count() - a0, frees = bench_free_count() - f0;
    gw_free(&ga);
    double cps = n / dt;
    printf("\n1. single node, acquire + release (2 round trips each)\n");
    printf("  edgelock                           %9.0f cycles/s  (%.1f us per cycle)\n", cps, 1e6 / cps);
    if (ping_rps > 0) {
        printf("  redis-benchmark -c 1 PING          %9.0f req/s    -> 2-RTT limit %.0f cycles/s\n", ping_rps,
               ping_rps / 2);
        printf("  ratio to the limit                 %9.2f\n", cps / (ping_rps / 2));
    } else {
        printf("  redis-benchmark not available: no limit measured\n");
    }
    printf("  heap calls during the timed cycles: %llu malloc/calloc/realloc, %llu free (target 0)\n",
           (unsigned long long)allocs, (unsigned long long)frees);

    /* 2. acquire latency */
    unsigned reps = n / 10 < 100 ? 100 : n / 10;
    double l1, l5, l5nf;
    printf("\n2. acquire latency (%u acquisitions each, released in between)\n", reps);
    latency("1 node (1 round trip)", 0, 1, true, reps, &l1);
    latency("5 nodes, fencing (acquire+commit)", 1, 5, true, reps, &l5);
    latency("5 nodes, no fencing (1 round)", 1, 5, false, reps, &l5nf);
    printf("  ratio 5-node/1-node: fencing %.2f, no fencing %.2f\n", l5 / l1, l5nf / l1);

    /* 3. hand-off */
    unsigned hr = 30;
    printf("\n3. hand-off on 3 nodes, holder's release -> waiter ACQUIRED (%u hand-offs each)\n", hr);
    double with = handoff(true, hr);
    double without = handoff(false, hr);
    printf("  with release channel (RESP3 push)  %8.2f ms mean\n", with);
    printf("  retry delays 50..250 ms            %8.2f ms mean\n", without);
    printf("  ratio                              %8.1fx faster with the channel\n", without / with);
    printf("\nreproduce: cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release && "
           "cmake --build build-bench -j2 --target bench_lock && build-bench/tests/bench/bench_lock %u\n", n);
    stop_all();
    return 0;
}
