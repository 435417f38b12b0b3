/* SPDX-License-Identifier: MIT */
/*
 * What a dropped link costs (issue 30), on loopback:
 *
 *   1. one lib/node connection behind elk-faultproxy, its link dropped (`drop rst` on
 *      the proxy's control channel) N times, over plain TCP, TLS with a full handshake
 *      every time (the kept session forgotten before each drop) and TLS resumed (the
 *      session offered, elk_tls_conn_resumed counted), each over TLS 1.2 and, when
 *      mbedTLS keeps TLS 1.3 tickets (3.x), over TLS 1.3 (servers pinned to one version
 *      with --tls-protocols): p50/p90 of "setup" (the node's
 *      CONNECTING -> READY: TCP, TLS, HELLO) and of "drop -> READY" (with the default
 *      backoff, 100 ms first delay, jittered to 50..100 ms, in it);
 *   2. a reconnect storm: G lib/node connections in this process (G simulated gateways)
 *      to one redis-server, which is killed (SIGKILL) and started again on the same
 *      port; time from the kill, and from the server answering again, until all G are
 *      READY, the connection attempts made and the most attempts in one millisecond;
 *      with the backoff jitter (entropy from the port) and without (an entropy source
 *      of zeros: jitter 0, every gateway on the same schedule).
 *
 *   bench_reconnect [--quick] [N [G]]      N drops per mode (default 50; quick 10),
 *                                          G gateways (default 200; quick 200)
 *
 * Prints "RESULT <id> <value> <unit> <name>" lines for run-all.sh's table.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"
#include "bench_redis.h"
#include "elk/node.h"
#include "elk/port_mbedtls.h"
#include "elk/port_posix.h"
#include "redis_proc.h"
#include <mbedtls/version.h>

/* The port keeps TLS 1.3 tickets under the same conditions (port/mbedtls). */
#if MBEDTLS_VERSION_NUMBER >= 0x03000000 && defined(MBEDTLS_SSL_PROTO_TLS1_3) &&                   \
    defined(MBEDTLS_SSL_SESSION_TICKETS) && defined(MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
#define HAVE_TLS13_TICKETS 1
#else
#define HAVE_TLS13_TICKETS 0
#endif

#ifndef ELK_BENCH_FAULTPROXY
#define ELK_BENCH_FAULTPROXY "elk-faultproxy"
#endif

enum { S_PLAIN, S_TLS, S_STORM, S_TLS13, S_COUNT };
enum { N_PROXIES = 3 };
static pid_t pids[S_COUNT];
static uint16_t ports[S_COUNT];
static char tmpdir[64];
static FILE *proxies[N_PROXIES];
static int proxy_ctl[N_PROXIES] = {-1, -1, -1};

/* Proxies first ("quit" on their control channel, then reap), then the servers. */
static void stop_all(void)
{
    for (int i = 0; i < N_PROXIES; i++) {
        if (proxy_ctl[i] >= 0) {
            (void)send(proxy_ctl[i], "quit\n", 5, MSG_NOSIGNAL);
            close(proxy_ctl[i]);
            proxy_ctl[i] = -1;
        }
        if (proxies[i] != NULL) {
            pclose(proxies[i]);
            proxies[i] = NULL;
        }
    }
    bench_redis_stop_all(pids, S_COUNT, tmpdir);
}

static void on_signal(int sig)
{
    (void)sig;
    bench_redis_stop_all(pids, S_COUNT, tmpdir);
    _exit(3);
}

static void die(const char *what)
{
    fprintf(stderr, "bench_reconnect: %s\n", what);
    stop_all();
    exit(1);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---------------------------------------------------------------- proxy */

typedef struct proxy {
    uint16_t listen, control;
    int ctl; /* control connection */
} proxy_t;

static int tcp_to(uint16_t port)
{
    int fd = bench_connect_loopback(port);
    if (fd < 0) {
        die("cannot reach the proxy's control port");
    }
    return fd;
}

static void proxy_start(proxy_t *p, int slot, uint16_t upstream)
{
    char cmd[600];
    unsigned l = 0, c = 0;
    snprintf(cmd, sizeof cmd, "'%s' --upstream %u", ELK_BENCH_FAULTPROXY, upstream);
    proxies[slot] = popen(cmd, "r");
    if (proxies[slot] == NULL || fscanf(proxies[slot], "%u %u", &l, &c) != 2) {
        die("elk-faultproxy did not start (build the elk-faultproxy target)");
    }
    p->listen = (uint16_t)l;
    p->control = (uint16_t)c;
    p->ctl = tcp_to(p->control);
    proxy_ctl[slot] = p->ctl;
}

/* One control command; waits for its reply line ("OK ..."). */
static void proxy_cmd(proxy_t *p, const char *line)
{
    char buf[256];
    size_t got = 0;
    if (send(p->ctl, line, strlen(line), 0) != (ssize_t)strlen(line)) {
        die("proxy control: send failed");
    }
    while (got == 0 || buf[got - 1] != '\n') {
        ssize_t r = recv(p->ctl, buf + got, sizeof buf - 1 - got, 0);
        if (r <= 0) {
            die("proxy control: no reply");
        }
        got += (size_t)r;
    }
    if (strncmp(buf, "OK", 2) != 0) {
        die("proxy control: refused");
    }
}

/* ---------------------------------------------------------------- nodes */

typedef struct gwnode {
    elk_node_t node;
    elk_posix_tcp_t tcp;
    elk_transport_t tcp_t;
    double connecting_at; /* last entry into CONNECTING */
    double ready_at;      /* last entry into READY */
    double setup_ms;      /* CONNECTING -> READY of the last connection */
    unsigned attempts;    /* entries into CONNECTING since reset */
} gwnode_t;

/* Storm: every CONNECTING entry (ms since the kill) as it happened, and every retry as
 * scheduled when the node went to BACKOFF (ms since the kill). The schedule is what
 * separate gateways would do; the attempts as run are serialised by this one process
 * (and by a loaded machine), which spreads them by itself. */
static double *attempt_log, *sched_log;
static size_t attempt_n, sched_n, attempt_cap;
static double attempt_t0;
static uint64_t attempt_t0_posix; /* the kill on elk_posix_now_ms's clock */

static void on_state(void *user, elk_node_t *n, elk_node_state_t st, int err)
{
    gwnode_t *g = user;
    (void)err;
    double t = now_ms();
    if (st == ELK_NODE_CONNECTING) {
        g->connecting_at = t;
        g->attempts++;
        if (attempt_log != NULL && attempt_n < attempt_cap) {
            attempt_log[attempt_n++] = t - attempt_t0;
        }
    } else if (st == ELK_NODE_BACKOFF && sched_log != NULL && sched_n < attempt_cap) {
        sched_log[sched_n++] = (double)(n->next_attempt - attempt_t0_posix);
    } else if (st == ELK_NODE_READY) {
        g->ready_at = t;
        g->setup_ms = t - g->connecting_at;
    }
}

static void gw_init(gwnode_t *g, uint16_t port, const elk_transport_t *t, bool tls,
                    elk_pool_t *pool, const elk_entropy_t *ent)
{
    elk_node_config_t cfg;
    bench_node_config(&cfg, port, tls, 10000);
    if (elk_node_init(&g->node, &cfg, t, pool, ent, NULL) != ELK_OK) {
        die("node init");
    }
    elk_node_on_state(&g->node, on_state, g);
}

/* Poll every node and wait on them until all are READY or bound_ms passes. */
static bool drive_until_ready(gwnode_t *gs, size_t n, double bound_ms)
{
    static struct pollfd pfd[1024];
    double end = now_ms() + bound_ms;
    for (;;) {
        uint64_t now = elk_posix_now_ms(), next = UINT64_MAX;
        size_t ready = 0, np = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t w = elk_node_poll(&gs[i].node, now);
            next = w < next ? w : next;
            ready += elk_node_is_ready(&gs[i].node);
        }
        if (ready == n) {
            return true;
        }
        if (now_ms() >= end) {
            return false;
        }
        for (size_t i = 0; i < n && np < 1024; i++) {
            unsigned ev = 0;
            int fd = elk_node_wait(&gs[i].node, &ev);
            if (fd >= 0 && ev != 0) {
                pfd[np].fd = fd;
                pfd[np].events = (short)(((ev & ELK_WAIT_READ) ? POLLIN : 0) |
                                         ((ev & ELK_WAIT_WRITE) ? POLLOUT : 0));
                pfd[np].revents = 0;
                np++;
            }
        }
        uint64_t cap = now + 100; /* state changes without I/O are seen within 100 ms */
        next = next < cap ? next : cap;
        (void)poll(pfd, np, next > now ? (int)(next - now) : 0);
    }
}

/* ---------------------------------------------------------------- 1. dropped link */

static elk_tls_shared_t tls_shared;
static elk_tls_conn_t tls_conn;

/* TLS 1.3: the server's ticket comes after the handshake, on its own; a link dropped the
 * moment the node is READY (before any reply) would drop it unread. A connection in use
 * reads it with its first reply; here, with no traffic, the node is driven until the port
 * has kept it (bounded; the bench stops if it never comes). */
static void await_ticket(gwnode_t *g)
{
    double end = now_ms() + 10000;
    while (!tls_conn.has_session && now_ms() < end) {
        elk_wait_t w;
        w.fd = elk_node_wait(&g->node, &w.events);
        elk_posix_wait(&w, w.fd >= 0 ? 1u : 0u, elk_posix_now_ms() + 5, NULL);
        (void)elk_node_poll(&g->node, elk_posix_now_ms());
    }
    if (!tls_conn.has_session) {
        die("no TLS 1.3 session ticket within 10 s");
    }
}

/* version: the TLS version the server must negotiate (NULL for plain TCP). */
static void dropped_link(const char *mode, uint16_t port, const char *version, bool resume,
                         proxy_t *px, unsigned reps)
{
    bool tls = version != NULL;
    static _Alignas(8) uint8_t mem[4 * CONFIG_ELK_POOL_BLOCK_SIZE];
    elk_pool_t pool;
    elk_entropy_t ent;
    static gwnode_t g;
    elk_transport_t tls_t;
    const elk_transport_t *t;
    memset(&g, 0, sizeof g);
    elk_posix_entropy(&ent);
    if (elk_pool_init(&pool, mem, sizeof mem, CONFIG_ELK_POOL_BLOCK_SIZE, 4) != ELK_OK) {
        die("pool");
    }
    elk_posix_tcp_init(&g.tcp, NULL, &g.tcp_t);
    t = &g.tcp_t;
    if (tls) {
        if (elk_tls_conn_init(&tls_conn, &tls_shared, &g.tcp_t, &tls_t) != ELK_OK) {
            die("tls conn");
        }
        t = &tls_t;
    }
    gw_init(&g, port, t, tls, &pool, &ent);
    if (!drive_until_ready(&g, 1, 30000)) {
        die("first connect");
    }
    if (tls && strcmp(elk_tls_conn_version(&tls_conn), version) != 0) {
        die("the server negotiated another TLS version than the mode's");
    }
    double *setup = calloc(reps, sizeof *setup), *total = calloc(reps, sizeof *total);
    unsigned resumed = 0;
    bool tls13 = tls && strcmp(version, "TLSv1.3") == 0;
    for (unsigned k = 0; k < reps; k++) {
        if (tls13) {
            await_ticket(&g); /* in both modes, so they differ only in the offer */
        }
        double t0 = now_ms();
        proxy_cmd(px, "drop rst\n");
        /* The reset reaches the node at its next read: poll until it is down and up. */
        while (elk_node_is_ready(&g.node) && now_ms() < t0 + 10000) {
            elk_wait_t w;
            w.fd = elk_node_wait(&g.node, &w.events);
            elk_posix_wait(&w, w.fd >= 0 ? 1u : 0u, elk_posix_now_ms() + 5, NULL);
            (void)elk_node_poll(&g.node, elk_posix_now_ms());
        }
        /* Forgotten once the link is down, before the reconnect (the backoff is not over):
         * a TLS 1.3 server's second ticket, read while the node was still up, is gone too. */
        if (tls && !resume) {
            elk_tls_conn_forget_session(&tls_conn);
        }
        if (!drive_until_ready(&g, 1, 30000)) {
            die("reconnect after a drop");
        }
        setup[k] = g.setup_ms;
        total[k] = g.ready_at - t0;
        resumed += tls && elk_tls_conn_resumed(&tls_conn);
    }
    elk_node_close(&g.node, elk_posix_now_ms());
    if (tls) {
        elk_tls_conn_free(&tls_conn);
    }
    qsort(setup, reps, sizeof *setup, bench_cmp_d);
    qsort(total, reps, sizeof *total, bench_cmp_d);
    printf("  %-13s setup (CONNECTING -> READY) p50 %7.2f ms  p90 %7.2f ms   drop -> READY "
           "p50 %7.1f ms  p90 %7.1f ms",
           mode, bench_pct(setup, reps, 0.5), bench_pct(setup, reps, 0.9),
           bench_pct(total, reps, 0.5), bench_pct(total, reps, 0.9));
    if (tls) {
        printf("   resumed %u/%u", resumed, reps);
    }
    printf("\n");
    char id[96], name[160];
    snprintf(id, sizeof id, "reconnect.%s_setup_p50_ms", mode);
    snprintf(name, sizeof name, "lib/node reconnect setup (TCP+TLS+HELLO), %s, p50", mode);
    bench_result(id, bench_pct(setup, reps, 0.5), "ms", name);
    snprintf(id, sizeof id, "reconnect.%s_drop_to_ready_p50_ms", mode);
    snprintf(name, sizeof name, "dropped link -> READY (default backoff), %s, p50", mode);
    bench_result(id, bench_pct(total, reps, 0.5), "ms", name);
    if (tls) {
        snprintf(id, sizeof id, "reconnect.%s_resumed", mode);
        bench_result(id, resumed, "of", "reconnects the server resumed (abbreviated handshake)");
    }
    free(setup);
    free(total);
}

/* A TLS redis-server that speaks only `protocols` ("TLSv1.2", "TLSv1.3"). */
static pid_t start_tls_server(uint16_t port, const char *protocols)
{
    static char crt[256], key[256], ca[256];
    const char *const args[] = {"--tls-protocols", protocols, NULL};
    snprintf(crt, sizeof crt, "%s/server.crt", tmpdir);
    snprintf(key, sizeof key, "%s/server.key", tmpdir);
    snprintf(ca, sizeof ca, "%s/ca.crt", tmpdir);
    elk_rp_opts_t o = {.port = port, .dir = tmpdir, .tls = true};
    o.tls_cert = crt;
    o.tls_key = key;
    o.tls_ca = ca;
    o.extra_args = args;
    return elk_rp_spawn(&o);
}

/* ---------------------------------------------------------------- 2. storm */

static int zero_fill(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    memset(buf, 0, len);
    return ELK_OK;
}

static double t_up; /* when the restarted server answered (ms, now_ms clock) */

/* Watches the restarted server (started by the main thread: a child started from a
 * thread that ends would get the launcher's parent-death signal): t_up is the first
 * moment a TCP connect to its port succeeds (it listens), tried every 0.5 ms. */
static void *restart_thread(void *arg)
{
    struct sockaddr_in a;
    double end = now_ms() + 20000;
    (void)arg;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(ports[S_STORM]);
    while (now_ms() < end) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        if (fd >= 0) {
            close(fd);
        }
        if (ok) {
            t_up = now_ms();
            break;
        }
        usleep(500);
    }
    return NULL;
}

/* The most entries of v[0..n) (ms) that fall into one millisecond (sorts v). */
static size_t peak_per_ms(double *v, size_t n)
{
    size_t peak = 0;
    qsort(v, n, sizeof *v, bench_cmp_d);
    for (size_t i = 0, j = 0; i < n; i++) {
        while (v[i] - v[j] >= 1.0) {
            j++;
        }
        peak = i - j + 1 > peak ? i - j + 1 : peak;
    }
    return peak;
}

static void storm(const char *label, bool jitter, size_t n)
{
    gwnode_t *gs = calloc(n, sizeof *gs);
    size_t blocks = 2 * n + 2;
    uint8_t *mem = aligned_alloc(8, blocks * CONFIG_ELK_POOL_BLOCK_SIZE);
    elk_pool_t pool;
    elk_entropy_t ent;
    if (gs == NULL || mem == NULL ||
        elk_pool_init(&pool, mem, blocks * CONFIG_ELK_POOL_BLOCK_SIZE, CONFIG_ELK_POOL_BLOCK_SIZE,
                      blocks) != ELK_OK) {
        die("storm: memory");
    }
    if (jitter) {
        elk_posix_entropy(&ent);
    } else {
        ent.fill = zero_fill;
        ent.ctx = NULL;
    }
    for (size_t i = 0; i < n; i++) {
        elk_posix_tcp_init(&gs[i].tcp, NULL, &gs[i].tcp_t);
        gw_init(&gs[i], ports[S_STORM], &gs[i].tcp_t, false, &pool, &ent);
    }
    if (!drive_until_ready(gs, n, 60000)) {
        die("storm: first connect of every gateway");
    }
    attempt_cap = 64 * n;
    attempt_log = calloc(attempt_cap, sizeof *attempt_log);
    sched_log = calloc(attempt_cap, sizeof *sched_log);
    attempt_n = sched_n = 0;
    for (size_t i = 0; i < n; i++) {
        gs[i].attempts = 0;
    }
    /* Kill, start again on the same port, and drive the nodes while a thread watches
     * for the server's first answer. */
    attempt_t0 = now_ms();
    attempt_t0_posix = elk_posix_now_ms();
    kill(pids[S_STORM], SIGKILL);
    waitpid(pids[S_STORM], NULL, 0);
    pids[S_STORM] = 0;
    t_up = 0;
    pids[S_STORM] = bench_redis_start(tmpdir, ports[S_STORM], false, NULL);
    pthread_t th;
    pthread_create(&th, NULL, restart_thread, NULL);
    bool all = drive_until_ready(gs, n, 60000);
    pthread_join(th, NULL);
    if (!all || t_up == 0) {
        size_t ready = 0;
        for (size_t i = 0; i < n; i++) {
            ready += elk_node_is_ready(&gs[i].node);
        }
        fprintf(stderr, "bench_reconnect: storm: %zu of %zu READY, server %s; node 0: %s (%s)\n",
                ready, n, t_up != 0 ? "answered" : "did not answer",
                elk_node_state_name(elk_node_state(&gs[0].node)),
                elk_err_name(elk_node_stats(&gs[0].node)->last_error));
        die("storm: not every gateway came back within 60 s");
    }
    double last = 0;
    unsigned attempts = 0;
    for (size_t i = 0; i < n; i++) {
        last = gs[i].ready_at > last ? gs[i].ready_at : last;
        attempts += gs[i].attempts;
    }
    size_t peak = peak_per_ms(attempt_log, attempt_n);
    size_t speak = peak_per_ms(sched_log, sched_n);
    qsort(sched_log, sched_n, sizeof *sched_log, bench_cmp_d);
    printf("  %-16s all %zu READY %7.1f ms after the kill, %7.1f ms after the server answered\n"
           "  %-16s %u attempts; scheduled: at most %zu in one ms, spread over %.0f ms; "
           "as run here: at most %zu in one ms\n",
           label, n, last - attempt_t0, last - t_up, "", attempts, speak,
           sched_n > 0 ? sched_log[sched_n - 1] - sched_log[0] : 0.0, peak);
    char id[96], name[160];
    const char *tag = jitter ? "jitter" : "nojitter";
    snprintf(id, sizeof id, "reconnect.storm_%s_sched_peak_per_ms", tag);
    snprintf(name, sizeof name, "%zu gateways, master restart, %s: most retries scheduled in 1 ms",
             n, label);
    bench_result(id, (double)speak, "connects", name);
    snprintf(id, sizeof id, "reconnect.storm_%s_peak_per_ms", tag);
    snprintf(name, sizeof name, "%zu gateways, master restart, %s: most connects run in 1 ms", n,
             label);
    bench_result(id, (double)peak, "connects", name);
    snprintf(id, sizeof id, "reconnect.storm_%s_attempts", tag);
    snprintf(name, sizeof name, "%zu gateways, master restart, %s: connection attempts", n, label);
    bench_result(id, attempts, "connects", name);
    snprintf(id, sizeof id, "reconnect.storm_%s_ms", tag);
    snprintf(name, sizeof name, "%zu gateways, master restart, %s: server up -> all READY", n,
             label);
    bench_result(id, last - t_up, "ms", name);
    for (size_t i = 0; i < n; i++) {
        elk_node_close(&gs[i].node, elk_posix_now_ms());
    }
    free(attempt_log);
    free(sched_log);
    attempt_log = sched_log = NULL;
    free(mem);
    free(gs);
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int a = quick ? 2 : 1;
    unsigned reps = (unsigned)(argc > a ? atoi(argv[a]) : (quick ? 10 : 50));
    size_t gws = (size_t)(argc > a + 1 ? atoi(argv[a + 1]) : 200);
    if (reps < 3 || gws < 1 || gws > 900) {
        fprintf(stderr, "usage: bench_reconnect [--quick] [N>=3 [G<=900]]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!bench_begin("bench_reconnect", "/tmp/elk-benchrc-XXXXXX", on_signal, tmpdir,
                     sizeof tmpdir)) {
        return 2;
    }
    atexit(stop_all);
    char gen[600];
    const char *src = __FILE__, *slash = strrchr(src, '/');
    snprintf(gen, sizeof gen, "sh '%.*s/../integration/gen-certs.sh' '%s' >/dev/null 2>&1",
             slash != NULL ? (int)(slash - src) : 1, slash != NULL ? src : ".", tmpdir);
    if (system(gen) != 0) {
        die("certificate generation failed");
    }
    for (int i = 0; i < S_COUNT; i++) {
        if (i == S_TLS13 && !HAVE_TLS13_TICKETS) {
            continue;
        }
        ports[i] = bench_free_port();
        pids[i] = i == S_TLS ? start_tls_server(ports[i], "TLSv1.2")
            : i == S_TLS13   ? start_tls_server(ports[i], "TLSv1.3")
                             : bench_redis_start(tmpdir, ports[i], false, NULL);
        if (pids[i] < 0) {
            die("redis-server could not be started");
        }
    }
    if (elk_rp_wait_tcp(pids[S_PLAIN], ports[S_PLAIN], 20000) != 0 ||
        elk_rp_wait_tcp(pids[S_STORM], ports[S_STORM], 20000) != 0) {
        die("redis-server did not start");
    }
    elk_entropy_t ent;
    elk_posix_entropy(&ent);
    elk_tls_config_t tc;
    char ca[128];
    memset(&tc, 0, sizeof tc);
    snprintf(ca, sizeof ca, "%s/ca.crt", tmpdir);
    tc.ca_file = ca;
    if (elk_tls_shared_init(&tls_shared, &tc, &ent) != ELK_OK) {
        die("TLS setup");
    }
    proxy_t px_plain, px_tls, px_tls13;
    proxy_start(&px_plain, 0, ports[S_PLAIN]);
    proxy_start(&px_tls, 1, ports[S_TLS]);
    if (HAVE_TLS13_TICKETS) {
        proxy_start(&px_tls13, 2, ports[S_TLS13]);
    }
    printf("bench_reconnect: %u drops per mode, %zu gateways, %s build, loopback, through "
           "elk-faultproxy (drop rst)\n",
           reps, gws, ELK_BENCH_BUILD_TYPE);

    printf("\n1. dropped link -> READY again, one lib/node connection (RESP3 HELLO included)\n");
    dropped_link("plain", px_plain.listen, NULL, false, &px_plain, reps);
    dropped_link("tls_full", px_tls.listen, "TLSv1.2", false, &px_tls, reps);
    dropped_link("tls_resumed", px_tls.listen, "TLSv1.2", true, &px_tls, reps);
    if (HAVE_TLS13_TICKETS) {
        dropped_link("tls13_full", px_tls13.listen, "TLSv1.3", false, &px_tls13, reps);
        dropped_link("tls13_resumed", px_tls13.listen, "TLSv1.3", true, &px_tls13, reps);
    } else {
        printf("  %-13s not available with mbedTLS %s (no TLS 1.3 session tickets)\n", "tls13_*",
               MBEDTLS_VERSION_STRING);
    }

    printf("\n2. reconnect storm: %zu lib/node connections, their redis-server killed and "
           "started again on the same port (default backoff 100..5000 ms)\n",
           gws);
    storm("without jitter", false, gws);
    storm("with jitter", true, gws);

    elk_tls_shared_free(&tls_shared);
    printf("\nreproduce: cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release && cmake --build "
           "build-bench -j2 --target bench_reconnect elk-faultproxy && "
           "build-bench/tests/bench/bench_reconnect %s%u %zu\n",
           quick ? "--quick " : "", reps, gws);
    stop_all();
    return 0;
}
