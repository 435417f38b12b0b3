/* SPDX-License-Identifier: MIT */
/*
 * port/lwip on a real lwIP stack: Debian's liblwip (2.1.3, NO_SYS=0, pthread
 * sys_arch) runs in this process on a TAP device (tapif) inside a network namespace
 * that tests/lwip/redis_roundtrip.sh creates; a real redis-server listens on the
 * kernel side of the TAP. Every byte below crosses lwIP's TCP, not the kernel's.
 *
 * Environment (set by the wrapper script):
 *   PRECONFIGURED_TAPIF   TAP device name (read by lwIP's tapif)
 *   ELK_LWIP_ADDR         lwIP's own IPv4 address (e.g. 192.0.2.2), /24
 *   ELK_REDIS_HOST        redis-server address on the TAP (e.g. 192.0.2.1)
 *   ELK_REDIS_PORT        its plain port
 *   ELK_REDIS_CLOSED_PORT a port nothing listens on (connection refused)
 *   ELK_REDIS_TLS_PORT    its TLS port, ELK_TLS_CA the CA file, ELK_TLS_NAME the
 *                         certificate's DNS name
 *   ELK_REDIS_FLEET_PORTS three plain ports of independent servers (Redlock fleet)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "lwip/ip4_addr.h"
#include "lwip/netif.h"
#include "lwip/sys.h"
#include "lwip/tcpip.h"
#include "netif/tapif.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "elk/port_lwip.h"
#if ELK_LWIP_HAVE_TLS
#include "elk/port_mbedtls.h"
#endif
#if ELK_LWIP_HAVE_LOCK
#include "elk/lock.h"
#include "elk/node.h"
#include "elk/pool.h"
#endif

#define OP_TIMEOUT_MS 10000u

static struct netif tap_netif;
static elk_lwip_clock_t clock_ctx;
static elk_clock_t clk;
static elk_lwip_entropy_t entropy_ctx;
static elk_entropy_t entropy;

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') {
        fprintf(stderr, "lwip_redis_roundtrip: %s is not set; run it through redis_roundtrip.sh\n",
                name);
        exit(1);
    }
    return v;
}

static uint16_t env_port(const char *name)
{
    long p = strtol(env(name), NULL, 10);
    if (p <= 0 || p > 65535) {
        fprintf(stderr, "lwip_redis_roundtrip: %s is not a port\n", name);
        exit(1);
    }
    return (uint16_t)p;
}

/* The host's stand-in for a board's hardware RNG. */
static int getrandom_word(void *user, uint32_t *word)
{
    (void)user;
    return getrandom(word, sizeof(*word), 0) == (ssize_t)sizeof(*word) ? 0 : -1;
}

static void tcpip_ready(void *arg)
{
    sys_sem_signal((sys_sem_t *)arg);
}

static int start_lwip(void **state)
{
    (void)state;
    sys_sem_t ready;
    ip4_addr_t addr, mask, gw;

    if (sys_sem_new(&ready, 0) != ERR_OK) {
        return -1;
    }
    tcpip_init(tcpip_ready, &ready);
    sys_sem_wait(&ready);
    sys_sem_free(&ready);

    if (!ip4addr_aton(env("ELK_LWIP_ADDR"), &addr) || !ip4addr_aton(env("ELK_REDIS_HOST"), &gw)) {
        fprintf(stderr, "lwip_redis_roundtrip: bad ELK_LWIP_ADDR or ELK_REDIS_HOST\n");
        return -1;
    }
    IP4_ADDR(&mask, 255, 255, 255, 0);
    (void)env("PRECONFIGURED_TAPIF");

    LOCK_TCPIP_CORE();
    struct netif *n = netif_add(&tap_netif, &addr, &mask, &gw, NULL, tapif_init, tcpip_input);
    if (n != NULL) {
        netif_set_default(&tap_netif);
        netif_set_up(&tap_netif);
    }
    UNLOCK_TCPIP_CORE();
    if (n == NULL) {
        fprintf(stderr, "lwip_redis_roundtrip: netif_add(tapif) failed\n");
        return -1;
    }
    elk_lwip_clock_init(&clock_ctx, &clk);
    return elk_lwip_entropy_init(&entropy_ctx, getrandom_word, NULL, &entropy) == ELK_OK ? 0 : -1;
}

/* ------------------------------------------------------------- helpers */

static uint64_t now_ms(void)
{
    return clk.now_ms(clk.ctx);
}

static uint32_t remaining(uint64_t deadline)
{
    uint64_t now = now_ms();
    return now >= deadline ? 0u : (uint32_t)(deadline - now);
}

/* Wait on the transport's own descriptor through lwip_poll (elk_lwip_wait). */
static void wait_transport(const elk_transport_t *t, uint64_t deadline)
{
    elk_lwip_waiter_t w;
    w.sock = t->wait(t->ctx, &w.events);
    uint32_t left = remaining(deadline);
    assert_true(left > 0); /* the operation did not finish within OP_TIMEOUT_MS */
    int rc = elk_lwip_wait(&w, w.sock >= 0 ? 1 : 0, left < 100u ? left : 100u);
    assert_true(rc >= 0);
}

/* open + progress until ready; returns 1 or the negative elk_err_t progress gave. */
static int connect_transport(const elk_transport_t *t, const char *host, uint16_t port,
                             const char *server_name)
{
    elk_endpoint_t ep = {host, port, server_name};
    int rc = t->open(t->ctx, &ep);
    if (rc != ELK_OK) {
        return rc;
    }
    uint64_t deadline = now_ms() + OP_TIMEOUT_MS;
    for (;;) {
        rc = t->progress(t->ctx);
        if (rc != 0) {
            return rc;
        }
        wait_transport(t, deadline);
    }
}

static void send_all(const elk_transport_t *t, const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t deadline = now_ms() + OP_TIMEOUT_MS;
    while (len > 0) {
        int32_t n = t->send(t->ctx, p, len);
        assert_true(n >= 0);
        assert_true((size_t)n <= len);
        p += n;
        len -= (size_t)n;
        if (n == 0) {
            wait_transport(t, deadline);
        }
    }
}

/* Receive exactly len bytes. */
static void recv_exact(const elk_transport_t *t, uint8_t *buf, size_t len)
{
    size_t got = 0;
    uint64_t deadline = now_ms() + OP_TIMEOUT_MS;
    while (got < len) {
        int32_t n = t->recv(t->ctx, buf + got, len - got);
        if (n < 0) {
            fprintf(stderr, "recv failed: %s after %zu of %zu bytes\n", elk_err_name(n), got, len);
        }
        assert_true(n >= 0);
        got += (size_t)n;
        if (n == 0) {
            wait_transport(t, deadline);
        }
    }
}

static void expect_reply(const elk_transport_t *t, const char *expected)
{
    size_t len = strlen(expected);
    uint8_t buf[512];
    assert_true(len <= sizeof(buf));
    recv_exact(t, buf, len);
    assert_memory_equal(buf, expected, len);
}

/* Read one CRLF-terminated line (CRLF kept) into out, NUL-terminated. */
static void recv_line(const elk_transport_t *t, char *out, size_t cap)
{
    size_t i = 0;
    for (;;) {
        assert_true(i + 1 < cap);
        recv_exact(t, (uint8_t *)&out[i], 1);
        i++;
        if (i >= 2 && out[i - 2] == '\r' && out[i - 1] == '\n') {
            break;
        }
    }
    out[i] = '\0';
}

/* Read a bulk string reply ("$<n>\r\n<n bytes>\r\n") into out, NUL-terminated. */
static void recv_bulk(const elk_transport_t *t, char *out, size_t cap)
{
    char hdr[24];
    recv_line(t, hdr, sizeof(hdr));
    assert_int_equal(hdr[0], '$');
    long n = strtol(hdr + 1, NULL, 10);
    assert_true(n >= 0 && (size_t)n + 1 <= cap);
    recv_exact(t, (uint8_t *)out, (size_t)n);
    out[n] = '\0';
    expect_reply(t, "\r\n");
}

static void random_hex(char *out, size_t bytes)
{
    uint8_t raw[64];
    assert_true(bytes <= sizeof(raw));
    assert_int_equal(entropy.fill(entropy.ctx, raw, bytes), ELK_OK);
    for (size_t i = 0; i < bytes; i++) {
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    }
}

/* PING, SET <random key> <random value>, GET, DEL: one at a time, then pipelined. */
static void ping_set_get(const elk_transport_t *t)
{
    char key[40] = "elk:lwip:", val[33], cmd[256], reply[128];
    random_hex(key + 9, 12);
    random_hex(val, 16);

    const char ping[] = "*1\r\n$4\r\nPING\r\n";
    send_all(t, ping, sizeof(ping) - 1);
    expect_reply(t, "+PONG\r\n");

    int n = snprintf(cmd, sizeof(cmd), "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
                     strlen(key), key, strlen(val), val);
    send_all(t, cmd, (size_t)n);
    expect_reply(t, "+OK\r\n");

    n = snprintf(cmd, sizeof(cmd), "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
    send_all(t, cmd, (size_t)n);
    snprintf(reply, sizeof(reply), "$%zu\r\n%s\r\n", strlen(val), val);
    expect_reply(t, reply);

    /* Pipelined: GET, DEL, GET in one send; replies in order. */
    n = snprintf(cmd, sizeof(cmd),
                 "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n*2\r\n$3\r\nDEL\r\n$%zu\r\n%s\r\n"
                 "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n",
                 strlen(key), key, strlen(key), key, strlen(key), key);
    send_all(t, cmd, (size_t)n);
    snprintf(reply, sizeof(reply), "$%zu\r\n%s\r\n:1\r\n$-1\r\n", strlen(val), val);
    expect_reply(t, reply);
}

/* --------------------------------------------------------------- tests */

static void test_plain_roundtrip(void **state)
{
    (void)state;
    elk_lwip_transport_t ctx;
    elk_transport_t t;
    elk_lwip_transport_init(&ctx, &t);

    uint64_t before = now_ms();
    assert_int_equal(connect_transport(&t, env("ELK_REDIS_HOST"), env_port("ELK_REDIS_PORT"), NULL),
                     1);
    ping_set_get(&t);
    assert_true(now_ms() >= before);

    /* The server must see lwIP's address: the bytes went through the TAP, not loopback. */
    const char info[] = "*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n";
    char text[1024], want[64];
    send_all(&t, info, sizeof(info) - 1);
    recv_bulk(&t, text, sizeof(text));
    snprintf(want, sizeof(want), " addr=%s:", env("ELK_LWIP_ADDR"));
    if (strstr(text, want) == NULL) {
        fprintf(stderr, "CLIENT INFO: %s\n", text);
    }
    assert_non_null(strstr(text, want));
    t.close(t.ctx);
    t.close(t.ctx); /* closing twice is harmless */
    unsigned ev = 99;
    assert_int_equal(t.wait(t.ctx, &ev), -1);
    assert_int_equal(ev, ELK_WAIT_NONE);
}

/* A value several times lwIP's send buffer: sends come back short or would-block and
 * the reply spans many segments. */
static void test_plain_large_value(void **state)
{
    (void)state;
    enum { VLEN = 256 * 1024 };
    static uint8_t value[VLEN], got[VLEN];
    static char cmd[VLEN + 128];
    char key[40] = "elk:lwip:big:", hdr[64];
    random_hex(key + 13, 8);
    assert_int_equal(entropy.fill(entropy.ctx, value, 1024), ELK_OK);
    for (size_t i = 1024; i < VLEN; i++) {
        value[i] = (uint8_t)(value[i - 1024] * 31u + (uint8_t)i);
    }

    elk_lwip_transport_t ctx;
    elk_transport_t t;
    elk_lwip_transport_init(&ctx, &t);
    assert_int_equal(connect_transport(&t, env("ELK_REDIS_HOST"), env_port("ELK_REDIS_PORT"), NULL),
                     1);

    int n = snprintf(cmd, sizeof(cmd), "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%d\r\n", strlen(key), key,
                     VLEN);
    memcpy(cmd + n, value, VLEN);
    memcpy(cmd + n + VLEN, "\r\n", 2);
    send_all(&t, cmd, (size_t)n + VLEN + 2);
    expect_reply(&t, "+OK\r\n");

    n = snprintf(cmd, sizeof(cmd), "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
    send_all(&t, cmd, (size_t)n);
    snprintf(hdr, sizeof(hdr), "$%d\r\n", VLEN);
    expect_reply(&t, hdr);
    recv_exact(&t, got, VLEN);
    assert_memory_equal(got, value, VLEN);
    expect_reply(&t, "\r\n");

    n = snprintf(cmd, sizeof(cmd), "*2\r\n$3\r\nDEL\r\n$%zu\r\n%s\r\n", strlen(key), key);
    send_all(&t, cmd, (size_t)n);
    expect_reply(&t, ":1\r\n");
    t.close(t.ctx);
}

static void test_connect_refused(void **state)
{
    (void)state;
    elk_lwip_transport_t ctx;
    elk_transport_t t;
    elk_lwip_transport_init(&ctx, &t);
    int rc = connect_transport(&t, env("ELK_REDIS_HOST"), env_port("ELK_REDIS_CLOSED_PORT"), NULL);
    assert_int_equal(rc, ELK_E_CONNECT_REFUSED);
    /* The failure sticks until the next open, and nothing is left to wait on. */
    assert_int_equal(t.progress(t.ctx), ELK_E_CONNECT_REFUSED);
    unsigned ev;
    assert_int_equal(t.wait(t.ctx, &ev), -1);
    uint8_t b[4];
    assert_int_equal(t.send(t.ctx, b, sizeof(b)), ELK_E_STATE);
    /* The same context connects fine afterwards. */
    assert_int_equal(connect_transport(&t, env("ELK_REDIS_HOST"), env_port("ELK_REDIS_PORT"), NULL),
                     1);
    t.close(t.ctx);
}

static void test_peer_close(void **state)
{
    (void)state;
    elk_lwip_transport_t ctx;
    elk_transport_t t;
    elk_lwip_transport_init(&ctx, &t);
    assert_int_equal(connect_transport(&t, env("ELK_REDIS_HOST"), env_port("ELK_REDIS_PORT"), NULL),
                     1);
    const char quit[] = "*1\r\n$4\r\nQUIT\r\n";
    send_all(&t, quit, sizeof(quit) - 1);
    expect_reply(&t, "+OK\r\n");
    uint64_t deadline = now_ms() + OP_TIMEOUT_MS;
    int32_t n;
    uint8_t b[16];
    while ((n = t.recv(t.ctx, b, sizeof(b))) == 0) {
        wait_transport(&t, deadline);
    }
    assert_int_equal(n, ELK_E_CLOSED);
    t.close(t.ctx);
}

static void test_bad_input(void **state)
{
    (void)state;
    elk_lwip_transport_t ctx;
    elk_transport_t t;
    elk_lwip_transport_init(&ctx, &t);
    uint8_t b[8] = {0};

    assert_int_equal(t.open(t.ctx, NULL), ELK_E_INVALID_ARG);
    elk_endpoint_t no_host = {NULL, 6379, NULL};
    assert_int_equal(t.open(t.ctx, &no_host), ELK_E_INVALID_ARG);
    elk_endpoint_t no_port = {"192.0.2.1", 0, NULL};
    assert_int_equal(t.open(t.ctx, &no_port), ELK_E_INVALID_ARG);
    /* Debian's lwIP has no LWIP_DNS: a name cannot be resolved, and says so. */
    elk_endpoint_t name = {"redis.invalid", 6379, NULL};
    assert_int_equal(t.open(t.ctx, &name), ELK_E_RESOLVE);
    assert_int_equal(t.progress(t.ctx), ELK_E_RESOLVE);
    elk_endpoint_t garbage = {"300.1.2.3", 6379, NULL};
    assert_int_equal(t.open(t.ctx, &garbage), ELK_E_RESOLVE);

    t.close(t.ctx);
    assert_int_equal(t.progress(t.ctx), ELK_E_STATE);
    assert_int_equal(t.send(t.ctx, b, sizeof(b)), ELK_E_STATE);
    assert_int_equal(t.recv(t.ctx, b, sizeof(b)), ELK_E_STATE);
    assert_int_equal(t.recv(t.ctx, NULL, sizeof(b)), ELK_E_INVALID_ARG);
    assert_int_equal(t.send(NULL, b, sizeof(b)), ELK_E_INVALID_ARG);
    assert_int_equal(elk_lwip_wait(NULL, 1, 0), ELK_E_INVALID_ARG);
    elk_lwip_waiter_t many[ELK_LWIP_WAIT_MAX + 1];
    assert_int_equal(elk_lwip_wait(many, ELK_LWIP_WAIT_MAX + 1, 0), ELK_E_INVALID_ARG);
    /* Nothing to wait on: it only sleeps, and reports nothing ready. */
    elk_lwip_waiter_t none = {-1, ELK_WAIT_READ, 77};
    assert_int_equal(elk_lwip_wait(&none, 1, 1), 0);
    assert_int_equal(none.ready, 0);
}

#if ELK_LWIP_HAVE_TLS
static void test_tls_roundtrip(void **state)
{
    (void)state;
    static elk_tls_shared_t shared;
    static elk_tls_conn_t conn;
    elk_tls_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.ca_file = env("ELK_TLS_CA");
    assert_int_equal(elk_tls_shared_init(&shared, &cfg, &entropy), ELK_OK);

    elk_lwip_transport_t tcp_ctx;
    elk_transport_t tcp, tls;
    elk_lwip_transport_init(&tcp_ctx, &tcp);
    assert_int_equal(elk_tls_conn_init(&conn, &shared, &tcp, &tls), ELK_OK);

    int rc = connect_transport(&tls, env("ELK_REDIS_HOST"), env_port("ELK_REDIS_TLS_PORT"),
                               env("ELK_TLS_NAME"));
    if (rc != 1) {
        char text[256];
        fprintf(stderr, "TLS connect: %s\n", elk_tls_conn_error_text(&conn, text, sizeof(text)));
    }
    assert_int_equal(rc, 1);
    /* The socket underneath is lwIP's. */
    unsigned ev;
    assert_true(tls.wait(tls.ctx, &ev) >= 0);
    ping_set_get(&tls);
    tls.close(tls.ctx);
    elk_tls_conn_free(&conn);

    /* A wrong name must fail verification over lwIP as it does over the kernel. */
    assert_int_equal(elk_tls_conn_init(&conn, &shared, &tcp, &tls), ELK_OK);
    rc = connect_transport(&tls, env("ELK_REDIS_HOST"), env_port("ELK_REDIS_TLS_PORT"),
                           "wrong.elk.test");
    assert_int_equal(rc, ELK_E_TLS_HOSTNAME);
    tls.close(tls.ctx);
    elk_tls_conn_free(&conn);
    elk_tls_shared_free(&shared);
}
#endif

#if ELK_LWIP_HAVE_LOCK
/* ---------------------------------------------------- lock cycle over lwIP */

enum { FLEET_N = 3 };

typedef struct lock_events {
    int acquired, acquire_failed, renewed, lost, released;
    int last_err;
    uint64_t token;
} lock_events_t;

static void on_lock_event(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    (void)lock;
    lock_events_t *e = user;
    switch (ev->type) {
    case ELK_LOCK_EV_ACQUIRED:
        e->acquired++;
        e->token = ev->token;
        break;
    case ELK_LOCK_EV_ACQUIRE_FAILED:
        e->acquire_failed++;
        e->last_err = ev->err;
        break;
    case ELK_LOCK_EV_RENEWED:
        e->renewed++;
        break;
    case ELK_LOCK_EV_LOST:
        e->lost++;
        e->last_err = ev->err;
        break;
    case ELK_LOCK_EV_RELEASED:
        e->released++;
        break;
    default:
        break;
    }
}

typedef struct lwip_fleet {
    elk_lwip_transport_t tctx[FLEET_N];
    elk_transport_t t[FLEET_N];
    elk_node_t nodes[FLEET_N];
    elk_fleet_t fleet;
    elk_pool_t pool;
    uint8_t pool_mem[CONFIG_ELK_POOL_BLOCK_COUNT * CONFIG_ELK_POOL_BLOCK_SIZE]
        __attribute__((aligned(8)));
    elk_client_t client;
    uint16_t ports[FLEET_N];
} lwip_fleet_t;

/* Drive the client until *flag reaches want (or OP_TIMEOUT_MS passes: failure),
 * waiting on the nodes' lwIP sockets in between. */
static void pump_until(lwip_fleet_t *f, const int *flag, int want)
{
    uint64_t deadline = now_ms() + OP_TIMEOUT_MS;
    for (;;) {
        uint64_t now = now_ms();
        uint64_t next = elk_client_poll(&f->client, now);
        if (*flag >= want) {
            return;
        }
        assert_true(now < deadline);
        elk_wait_t w[FLEET_N];
        elk_lwip_waiter_t lw[FLEET_N];
        size_t n = elk_fleet_waits(&f->fleet, w, FLEET_N);
        for (size_t i = 0; i < n; i++) {
            lw[i].sock = w[i].fd;
            lw[i].events = w[i].events;
        }
        now = now_ms();
        uint64_t sleep = next > now ? next - now : 0;
        if (sleep > 50) {
            sleep = 50;
        }
        assert_true(elk_lwip_wait(lw, n, (uint32_t)sleep) >= 0);
    }
}

/* GET key straight from one server over a fresh lwIP connection; "" for nil. */
static void server_get(uint16_t port, const char *key, char *out, size_t cap)
{
    elk_lwip_transport_t ctx;
    elk_transport_t t;
    char cmd[256], hdr[24];
    elk_lwip_transport_init(&ctx, &t);
    assert_int_equal(connect_transport(&t, env("ELK_REDIS_HOST"), port, NULL), 1);
    int n = snprintf(cmd, sizeof(cmd), "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
    send_all(&t, cmd, (size_t)n);
    recv_line(&t, hdr, sizeof(hdr));
    assert_int_equal(hdr[0], '$');
    long len = strtol(hdr + 1, NULL, 10);
    if (len < 0) {
        out[0] = '\0';
    } else {
        assert_true((size_t)len + 1 <= cap);
        recv_exact(&t, (uint8_t *)out, (size_t)len);
        out[len] = '\0';
        expect_reply(&t, "\r\n");
    }
    t.close(t.ctx);
}

static void fleet_start(lwip_fleet_t *f)
{
    char ports[64];
    snprintf(ports, sizeof(ports), "%s", env("ELK_REDIS_FLEET_PORTS"));
    char *save = NULL;
    char *tok = strtok_r(ports, ",", &save);
    for (size_t i = 0; i < FLEET_N; i++) {
        assert_non_null(tok);
        f->ports[i] = (uint16_t)strtol(tok, NULL, 10);
        tok = strtok_r(NULL, ",", &save);
    }
    assert_int_equal(elk_pool_init(&f->pool, f->pool_mem, sizeof(f->pool_mem),
                                   CONFIG_ELK_POOL_BLOCK_SIZE, CONFIG_ELK_POOL_BLOCK_COUNT),
                     ELK_OK);
    for (size_t i = 0; i < FLEET_N; i++) {
        elk_node_config_t nc;
        elk_node_config_defaults(&nc);
        nc.endpoint.host = env("ELK_REDIS_HOST");
        nc.endpoint.port = f->ports[i];
        nc.connect_timeout_ms = 5000;
        nc.request_timeout_ms = 3000;
        elk_lwip_transport_init(&f->tctx[i], &f->t[i]);
        assert_int_equal(elk_node_init(&f->nodes[i], &nc, &f->t[i], &f->pool, &entropy, NULL),
                         ELK_OK);
    }
    assert_int_equal(elk_fleet_init(&f->fleet, f->nodes, FLEET_N), ELK_OK);
    elk_client_config_t cc;
    elk_client_config_defaults(&cc);
    cc.gateway_id = "lwip-gw";
    cc.key_prefix = "elk:lwip:";
    cc.mode = ELK_MODE_REDLOCK;
    cc.safety = ELK_SAFETY_OFF; /* throwaway test servers: no persistence on purpose */
    assert_int_equal(elk_client_init(&f->client, &cc, &f->fleet, &entropy, NULL), ELK_OK);
}

/* Redlock over three independent redis-servers, every connection an lwIP socket:
 * acquire (quorum + fencing commit), the value is on the servers, a second holder is
 * refused, a renewal, release (keys gone), and a later acquire gets a larger token. */
static void test_lock_cycle(void **state)
{
    (void)state;
    static lwip_fleet_t f;
    static elk_lock_t a, b;
    lock_events_t ea = {0}, eb = {0};
    char resource[24] = "valve-", value[128];
    random_hex(resource + 6, 6);

    fleet_start(&f);
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    lc.ttl_ms = 3000; /* renewal at a third: ~1 s, so the test sees one */
    assert_int_equal(elk_lock_init(&a, &f.client, resource, &lc, on_lock_event, &ea), ELK_OK);
    assert_int_equal(elk_lock_init(&b, &f.client, resource, &lc, on_lock_event, &eb), ELK_OK);

    /* All three nodes connect (TCP through lwIP, then the RESP handshake) and vote: a
     * freshly started server is quarantined for about a TTL (vote hygiene). */
    uint64_t deadline = now_ms() + OP_TIMEOUT_MS;
    while (elk_fleet_ready_count(&f.fleet) < FLEET_N || !elk_client_node_votes(&f.client, 0) ||
           !elk_client_node_votes(&f.client, 1) || !elk_client_node_votes(&f.client, 2)) {
        assert_true(now_ms() < deadline);
        (void)elk_client_poll(&f.client, now_ms());
        (void)elk_lwip_wait(NULL, 0, 10);
    }

    uint64_t now = now_ms();
    assert_int_equal(elk_lock_acquire(&a, now, 0), ELK_E_WOULD_BLOCK);
    pump_until(&f, &ea.acquired, 1);
    assert_int_equal(ea.acquire_failed, 0);
    assert_true(ea.token > 0);
    assert_true(elk_lock_is_held(&a, now_ms()));
    uint64_t first_token = ea.token;

    /* ACQUIRED is reported once a quorum has answered, so at that moment a quorum holds
     * the value; the third server's SET may still be on its way and must land soon after
     * (every connection is an lwIP socket, so all three answered over lwIP). */
    size_t holding = 0;
    for (size_t i = 0; i < FLEET_N; i++) {
        server_get(f.ports[i], elk_lock_key(&a), value, sizeof(value));
        holding += strcmp(value, elk_lock_value(&a)) == 0 ? 1u : 0u;
    }
    assert_true(holding >= FLEET_N / 2 + 1);
    deadline = now_ms() + OP_TIMEOUT_MS;
    while (holding < FLEET_N) {
        assert_true(now_ms() < deadline);
        (void)elk_client_poll(&f.client, now_ms());
        (void)elk_lwip_wait(NULL, 0, 5);
        holding = 0;
        for (size_t i = 0; i < FLEET_N; i++) {
            server_get(f.ports[i], elk_lock_key(&a), value, sizeof(value));
            holding += strcmp(value, elk_lock_value(&a)) == 0 ? 1u : 0u;
        }
    }

    /* A second holder is refused by the quorum. */
    assert_int_equal(elk_lock_acquire(&b, now_ms(), 0), ELK_E_WOULD_BLOCK);
    pump_until(&f, &eb.acquire_failed, 1);
    assert_int_equal(eb.last_err, ELK_E_LOCK_BUSY);
    assert_false(elk_lock_is_held(&b, now_ms()));

    /* The lease is renewed while held. */
    pump_until(&f, &ea.renewed, 1);
    assert_int_equal(ea.lost, 0);
    assert_true(elk_lock_is_held(&a, now_ms()));

    /* Release: the keys are gone from every server. */
    assert_int_equal(elk_lock_release(&a, now_ms()), ELK_OK);
    assert_false(elk_lock_is_held(&a, now_ms()));
    pump_until(&f, &ea.released, 1);
    for (size_t i = 0; i < FLEET_N; i++) {
        server_get(f.ports[i], elk_lock_key(&a), value, sizeof(value));
        assert_string_equal(value, "");
    }

    /* The next holder gets a larger fencing token. */
    assert_int_equal(elk_lock_acquire(&b, now_ms(), 0), ELK_E_WOULD_BLOCK);
    pump_until(&f, &eb.acquired, 1);
    assert_true(eb.token > first_token);
    assert_int_equal(elk_lock_release(&b, now_ms()), ELK_OK);
    pump_until(&f, &eb.released, 1);
    assert_int_equal(ea.lost + eb.lost, 0);

    deadline = now_ms() + OP_TIMEOUT_MS;
    while (elk_lock_busy(&a) || elk_lock_busy(&b)) {
        assert_true(now_ms() < deadline);
        (void)elk_client_poll(&f.client, now_ms());
        (void)elk_lwip_wait(NULL, 0, 5);
    }
    assert_int_equal(elk_lock_deinit(&a), ELK_OK);
    assert_int_equal(elk_lock_deinit(&b), ELK_OK);
    for (size_t i = 0; i < FLEET_N; i++) {
        elk_node_close(&f.nodes[i], now_ms());
    }
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_roundtrip),
        cmocka_unit_test(test_plain_large_value),
        cmocka_unit_test(test_connect_refused),
        cmocka_unit_test(test_peer_close),
        cmocka_unit_test(test_bad_input),
#if ELK_LWIP_HAVE_TLS
        cmocka_unit_test(test_tls_roundtrip),
#endif
#if ELK_LWIP_HAVE_LOCK
        cmocka_unit_test(test_lock_cycle),
#endif
    };
#if !ELK_LWIP_HAVE_TLS
    fprintf(stderr, "note: port/mbedtls not built: TLS round trip over lwIP not run\n");
#endif
#if !ELK_LWIP_HAVE_LOCK
    fprintf(stderr, "note: lib/lock or lib/node not built yet: lock cycle over lwIP not run\n");
#endif
    /* No group teardown: lwIP's threads end with the process. */
    return cmocka_run_group_tests(tests, start_lwip, NULL);
}
