/* SPDX-License-Identifier: MIT */
/*
 * Round-trip time of one command through lib/node (PING, one at a time: send, poll,
 * wait, reply), over plain TCP and over TLS on loopback, next to redis-benchmark
 * -c 1 -t ping against the same servers in the same run; plus the heap calls our code
 * makes during the timed commands (target 0) and, separately, mbedTLS's.
 *
 *   bench_node_rtt [N]          (default N = 10000)
 *
 * It starts its own redis-server processes (plain and TLS, ephemeral ports, certificates
 * from tests/integration/gen-certs.sh in a temp dir) and stops them at the end.
 *
 * Heap accounting: objects linked statically (lib/, port/, this program) are counted by
 * the --wrap counters of support/alloc_count.c. mbedTLS is a shared library that calls
 * calloc/free itself (Debian builds it without MBEDTLS_PLATFORM_MEMORY), so this program
 * also defines calloc/free, which the dynamic linker lets interpose for the shared
 * libraries; their calls during the handshake and during the timed loop are reported
 * on their own line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"
#include "alloc_count.h"
#include "bench_redis.h"
#include "elk/node.h"
#include "elk/port_mbedtls.h"
#include "elk/port_posix.h"

/* ---------------------------------------------------------------- shared-lib heap calls */

extern void *__libc_calloc(size_t n, size_t size);
extern void __libc_free(void *p);
static uint64_t dyn_calloc_calls;

/* Interposes calloc for every shared library (mbedTLS allocates only with calloc).
 * Static callers reach here too, through __wrap_calloc -> __real_calloc; the report
 * subtracts those using the --wrap counter. */
void *calloc(size_t n, size_t size)
{
    dyn_calloc_calls++;
    return __libc_calloc(n, size);
}

void free(void *p)
{
    __libc_free(p);
}

/* ---------------------------------------------------------------- servers */

static char tmpdir[128];
static pid_t servers[2];

static void stop_all(void)
{
    bench_redis_stop_all(servers, 2, tmpdir);
}

static void on_signal(int sig)
{
    (void)sig;
    stop_all();
    _exit(3);
}

/* ---------------------------------------------------------------- node loop */

static elk_node_t node;
static _Alignas(8) uint8_t pool_mem[4 * CONFIG_ELK_POOL_BLOCK_SIZE];
static elk_pool_t pool;
static int done_status;
static bool done;

static void on_reply(void *user, elk_node_t *n, int status, const elk_resp_reply_t *reply)
{
    (void)user;
    (void)n;
    done = true;
    done_status = status;
    if (status == ELK_OK &&
        !(reply->nodes[0].type == ELK_RESP_SIMPLE && elk_resp_str_eq(&reply->nodes[0], "PONG"))) {
        done_status = ELK_E_UNEXPECTED_REPLY;
    }
}

static void run_loop(bool (*cond)(void), unsigned timeout_ms)
{
    uint64_t end = elk_posix_now_ms() + timeout_ms;
    for (;;) {
        uint64_t now = elk_posix_now_ms();
        uint64_t next = elk_node_poll(&node, now);
        if (cond()) {
            return;
        }
        if (now >= end) {
            fprintf(stderr, "bench: timed out (node state %s, last error %s)\n",
                    elk_node_state_name(node.state), elk_err_name(node.stats.last_error));
            stop_all();
            exit(1);
        }
        elk_wait_t w;
        w.fd = elk_node_wait(&node, &w.events);
        elk_posix_wait(&w, w.fd >= 0 ? 1 : 0, next < end ? next : end, NULL);
    }
}

static bool is_ready(void)
{
    return elk_node_is_ready(&node);
}

static bool is_done(void)
{
    return done;
}

typedef struct result {
    double us_per_op;
    uint64_t our_allocs, our_frees; /* static code during the timed loop */
    uint64_t dyn_callocs_loop;      /* shared libraries during the timed loop */
    uint64_t dyn_callocs_connect;   /* shared libraries during connect + handshake */
} result_t;

static result_t measure(const elk_transport_t *t, uint16_t port, bool tls, int n)
{
    result_t r;
    memset(&r, 0, sizeof r);
    elk_entropy_t ent;
    elk_posix_entropy(&ent);
    elk_node_config_t cfg;
    bench_node_config(&cfg, port, tls, 5000);
    cfg.backoff_min_ms = 50;
    cfg.backoff_max_ms = 200;
    if (elk_pool_init(&pool, pool_mem, sizeof pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE, 4) != ELK_OK ||
        elk_node_init(&node, &cfg, t, &pool, &ent, NULL) != ELK_OK) {
        fprintf(stderr, "bench: init failed\n");
        stop_all();
        exit(1);
    }
    uint64_t d0 = dyn_calloc_calls, w0 = bench_alloc_count();
    run_loop(is_ready, 10000);
    r.dyn_callocs_connect = (dyn_calloc_calls - d0) - (bench_alloc_count() - w0);
    elk_resp_arg_t ping[] = {ELK_RESP_ARG_STR("PING")};
    for (int phase = 0; phase < 2; phase++) {
        int count = phase == 0 ? n / 10 + 1 : n; /* warm-up, then timed */
        uint64_t a0 = bench_alloc_count(), f0 = bench_free_count(), c0 = dyn_calloc_calls;
        double t0 = bench_now_s();
        for (int i = 0; i < count; i++) {
            done = false;
            int rc = elk_node_send(&node, elk_posix_now_ms(), ping, 1, 0, on_reply, NULL);
            if (rc != ELK_OK) {
                fprintf(stderr, "bench: send: %s\n", elk_err_name(rc));
                stop_all();
                exit(1);
            }
            run_loop(is_done, 5000);
            if (done_status != ELK_OK) {
                fprintf(stderr, "bench: reply: %s\n", elk_err_name(done_status));
                stop_all();
                exit(1);
            }
        }
        double t1 = bench_now_s();
        if (phase == 1) {
            r.us_per_op = (t1 - t0) * 1e6 / count;
            r.our_allocs = bench_alloc_count() - a0;
            r.our_frees = bench_free_count() - f0;
            r.dyn_callocs_loop = (dyn_calloc_calls - c0) - r.our_allocs;
        }
    }
    elk_node_close(&node, elk_posix_now_ms());
    return r;
}

/* redis-benchmark's PING_MBULK (the same multibulk PING we send) in requests/s. */
static double redis_benchmark(uint16_t port, bool tls, int n, char *cmd, size_t cmdcap)
{
    if (tls) {
        snprintf(cmd, cmdcap,
                 "redis-benchmark -h 127.0.0.1 -p %u -c 1 -n %d -t ping --csv --tls --cacert "
                 "%s/ca.crt --sni localhost",
                 port, n, tmpdir);
    } else {
        snprintf(cmd, cmdcap, "redis-benchmark -h 127.0.0.1 -p %u -c 1 -n %d -t ping --csv", port,
                 n);
    }
    return bench_rb_rps(cmd);
}

static const char *self_path = "bench_node_rtt";

static void report(const char *name, const result_t *r, double rb_rps, const char *rb_cmd, int n)
{
    double rb_us = rb_rps > 0 ? 1e6 / rb_rps : 0;
    printf("%-5s lib/node PING round trip:      %8.1f us/op (%d sequential commands)\n", name,
           r->us_per_op, n);
    if (rb_us > 0) {
        printf("%-5s redis-benchmark -c 1 PING_MBULK: %8.1f us/op (%.0f req/s)\n", name, rb_us,
               rb_rps);
        printf("%-5s ratio lib/node / redis-benchmark: %.2f\n", name, r->us_per_op / rb_us);
    } else {
        printf("%-5s redis-benchmark: no figure (command failed)\n", name);
    }
    printf("%-5s   reproduce: %s %d   (peer alone, on a server of this run: %s)\n", name, self_path,
           n, rb_cmd);
    printf("%-5s heap calls by lib/ + port/ during the %d commands: %llu allocations, %llu frees "
           "(target 0)\n",
           name, n, (unsigned long long)r->our_allocs, (unsigned long long)r->our_frees);
    printf("%-5s heap calls by shared libraries (mbedTLS): %llu callocs during connect+handshake, "
           "%llu during the "
           "%d commands\n",
           name, (unsigned long long)r->dyn_callocs_connect,
           (unsigned long long)r->dyn_callocs_loop, n);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    if (n <= 0) {
        fprintf(stderr, "usage: %s [N]\n", argv[0]);
        return 2;
    }
    self_path = argv[0];
    if (!bench_begin("bench", "/tmp/elk-bench-XXXXXX", on_signal, tmpdir, sizeof tmpdir)) {
        return 2;
    }
    char gen[600];
    const char *src = __FILE__; /* .../tests/bench/bench_node_rtt.c */
    const char *slash = strrchr(src, '/');
    int dirlen = slash != NULL ? (int)(slash - src) : 1;
    snprintf(gen, sizeof gen, "sh '%.*s/../integration/gen-certs.sh' '%s' >/dev/null 2>&1", dirlen,
             slash != NULL ? src : ".", tmpdir);
    bool have_certs = system(gen) == 0;
    if (!have_certs) {
        fprintf(stderr, "bench: certificate generation failed (%s); TLS part skipped\n", gen);
    }
    uint16_t plain_port = bench_free_port(), tls_port = bench_free_port();
    char plain_log[256], tls_log[256];
    snprintf(plain_log, sizeof plain_log, "%s/redis-%u.log", tmpdir, plain_port);
    snprintf(tls_log, sizeof tls_log, "%s/redis-%u.log", tmpdir, tls_port);
    servers[0] = bench_redis_start(tmpdir, plain_port, false, plain_log);
    if (have_certs) {
        servers[1] = bench_redis_start(tmpdir, tls_port, true, tls_log);
    }
    printf("bench_node_rtt: N=%d, build %s, loopback, redis-server %s\n", n, ELK_BENCH_BUILD_TYPE,
           "(started by this program)");

    elk_posix_tcp_t tcp;
    elk_transport_t t;
    elk_posix_tcp_init(&tcp, NULL, &t);
    result_t plain = measure(&t, plain_port, false, n);
    char cmd[400];
    double rb = redis_benchmark(plain_port, false, n, cmd, sizeof cmd);
    report("tcp", &plain, rb, cmd, n);

    int status = plain.our_allocs == 0 ? 0 : 1;
    if (have_certs) {
        static elk_tls_shared_t shared;
        static elk_tls_conn_t conn;
        elk_tls_config_t tc;
        memset(&tc, 0, sizeof tc);
        char ca[256];
        snprintf(ca, sizeof ca, "%s/ca.crt", tmpdir);
        tc.ca_file = ca;
        elk_entropy_t ent;
        elk_posix_entropy(&ent);
        uint64_t d0 = dyn_calloc_calls, w0 = bench_alloc_count();
        elk_transport_t tls_t;
        elk_posix_tcp_t tcp2;
        elk_transport_t t2;
        elk_posix_tcp_init(&tcp2, NULL, &t2);
        if (elk_tls_shared_init(&shared, &tc, &ent) != ELK_OK ||
            elk_tls_conn_init(&conn, &shared, &t2, &tls_t) != ELK_OK) {
            fprintf(stderr, "bench: TLS setup failed\n");
            stop_all();
            return 1;
        }
        uint64_t setup_callocs = (dyn_calloc_calls - d0) - (bench_alloc_count() - w0);
        result_t tr = measure(&tls_t, tls_port, true, n);
        rb = redis_benchmark(tls_port, true, n, cmd, sizeof cmd);
        report("tls", &tr, rb, cmd, n);
        printf("tls   heap calls by mbedTLS for CA loading + DRBG + record buffers "
               "(elk_tls_*_init): %llu callocs\n",
               (unsigned long long)setup_callocs);
        elk_tls_conn_free(&conn);
        elk_tls_shared_free(&shared);
        if (tr.our_allocs != 0) {
            status = 1;
        }
    }
    stop_all();
    return status;
}
