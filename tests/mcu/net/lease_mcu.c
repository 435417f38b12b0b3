/* SPDX-License-Identifier: MIT */
/*
 * A lease from a microcontroller: lib/ + port/lwip (+ port/mbedtls) on QEMU's
 * mps2-an386 (Cortex-M4), over lwIP on the board's LAN9118, to real redis-servers on
 * the other end of a TAP device (scripts/mcu-net-test.sh). Joins the fleet, takes a
 * lease with fencing, renews it across several TTLs, releases it, and reports what
 * it saw with its own clock, one line per event, for the script to check:
 *
 *   mcu: t=MS acquired token=T validity_ms=V ok=O/N key=KEY
 *   mcu: t=MS renewed n=R validity_ms=V ok=O/N
 *   mcu: t=MS releasing
 *   mcu: t=MS released ok=O/N
 *   mcu: figure NAME VALUE [UNIT]
 *
 * Arguments (QEMU -semihosting-config ...,arg=...):
 *   --addr A --mask M --gw G   this board's IPv4 set-up (static)
 *   --node HOST:PORT           a Redis master (1..3 times)
 *   --resource NAME --ttl MS --renewals N --gateway-id ID --prefix P
 *   --seed HEX64               stands in for the board's TRNG (see mcu_rng)
 *   --tls --ca FILE --server-name NAME   TLS to every node, CA read over semihosting
 *   --hold-until-file PATH     after the renewals, keep the lease (renewing) until the
 *                              host file PATH exists (the contention run: the test
 *                              creates it once the host gateway has been refused)
 *   --icount-figures           a run under QEMU -icount for instruction counts only: the
 *                              emulated clock then runs at its own rate, not the servers',
 *                              so the vote-hygiene clock check is off and the timeouts long
 *                              (nothing about safety is asserted from such a run). After
 *                              the release, node 0's connection is dropped and lib/node
 *                              reconnects it (over TLS: a resumed handshake), for the
 *                              reconnect figure:
 *     mcu: t=MS reconnected node0 progress_ticks=P full_ticks=F resumed=0|1 full/reconnect=R
 *     mcu: node0 TLSv1.2 SUITE           (over TLS: what the reconnect negotiated)
 *
 * Figures (ticks of the 25 MHz timer; under -icount shift=S one tick is 40 / 2^S
 * instructions): work = time inside elk_client_poll and in network polls that moved a
 * frame or ran a due lwIP timer; the rest is waiting for the servers.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "board.h"
#include "elk/lock.h"
#include "elk/node.h"
#include "elk/pool.h"
#include "elk/port_lwip.h"
#include "lwip/stats.h"
#include "mcu.h"
#include "net.h"
#include "sh_file.h"

#if MCU_TLS
#include "elk/port_mbedtls.h"
#include "mbedtls/memory_buffer_alloc.h"
#include "mbedtls/platform.h"
#include "mbedtls/platform_time.h"
#endif

enum { MAX_NODES = 3, OP_TIMEOUT_MS = 60000 };

typedef struct opts {
    const char *addr, *mask, *gw;
    char node_host[MAX_NODES][20];
    uint16_t node_port[MAX_NODES];
    size_t n_nodes;
    const char *resource, *gateway_id, *prefix, *seed;
    uint32_t ttl_ms, renewals;
    bool tls, figures_only;
    const char *ca, *server_name, *hold_file;
} opts_t;

typedef struct lease_events {
    uint32_t acquired, acquire_failed, renewed, lost, released;
    uint64_t token;
    int last_err;
    uint64_t t_acquired, t_renewed;
} lease_events_t;

static opts_t o = {.addr = "10.0.0.2",
                   .mask = "255.255.255.0",
                   .gw = "10.0.0.1",
                   .resource = "mcu-valve",
                   .gateway_id = "mcu-gw",
                   .prefix = "elk:",
                   .ttl_ms = 2000,
                   .renewals = 3};

/* ------------------------------------------------------------ randomness */

/* The MPS2 board has no TRNG. The test passes a fresh 256-bit seed from the host's
 * /dev/urandom and this xoshiro256** stretches it: a stand-in for the board's TRNG
 * for this test only (a product reads its TRNG here; see docs/mcu.md). */
static uint64_t rng_s[4];

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(void)
{
    uint64_t r = rotl(rng_s[1] * 5u, 7) * 9u, t = rng_s[1] << 17;
    rng_s[2] ^= rng_s[0];
    rng_s[3] ^= rng_s[1];
    rng_s[1] ^= rng_s[2];
    rng_s[0] ^= rng_s[3];
    rng_s[2] ^= t;
    rng_s[3] = rotl(rng_s[3], 45);
    return r;
}

static int rng_seed(const char *hex)
{
    if (hex == NULL || strlen(hex) != 64u) {
        return -1;
    }
    for (size_t i = 0; i < 4u; i++) {
        char part[17];
        memcpy(part, hex + 16u * i, 16u);
        part[16] = '\0';
        rng_s[i] = strtoull(part, NULL, 16);
    }
    return (rng_s[0] | rng_s[1] | rng_s[2] | rng_s[3]) != 0u ? 0 : -1;
}

static int mcu_rng(void *user, uint32_t *word)
{
    (void)user;
    *word = (uint32_t)(rng_next() >> 32);
    return 0;
}

uint32_t mcu_lwip_rand(void)
{
    return (uint32_t)(rng_next() >> 32);
}

/* --------------------------------------------------------------- options */

static int add_node(const char *spec)
{
    const char *colon = strrchr(spec, ':');
    if (o.n_nodes == MAX_NODES || colon == NULL ||
        (size_t)(colon - spec) >= sizeof o.node_host[0]) {
        return -1;
    }
    memcpy(o.node_host[o.n_nodes], spec, (size_t)(colon - spec));
    o.node_host[o.n_nodes][colon - spec] = '\0';
    o.node_port[o.n_nodes] = (uint16_t)strtoul(colon + 1, NULL, 10);
    o.n_nodes++;
    return 0;
}

static int parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(k, "--tls") == 0 || strcmp(k, "--icount-figures") == 0) {
            *(k[2] == 't' ? &o.tls : &o.figures_only) = true;
            continue;
        }
        if (v == NULL) {
            return -1;
        }
        i++;
        if (strcmp(k, "--addr") == 0) {
            o.addr = v;
        } else if (strcmp(k, "--mask") == 0) {
            o.mask = v;
        } else if (strcmp(k, "--gw") == 0) {
            o.gw = v;
        } else if (strcmp(k, "--node") == 0) {
            if (add_node(v) != 0) {
                return -1;
            }
        } else if (strcmp(k, "--resource") == 0) {
            o.resource = v;
        } else if (strcmp(k, "--gateway-id") == 0) {
            o.gateway_id = v;
        } else if (strcmp(k, "--prefix") == 0) {
            o.prefix = v;
        } else if (strcmp(k, "--seed") == 0) {
            o.seed = v;
        } else if (strcmp(k, "--ttl") == 0) {
            o.ttl_ms = (uint32_t)strtoul(v, NULL, 10);
        } else if (strcmp(k, "--renewals") == 0) {
            o.renewals = (uint32_t)strtoul(v, NULL, 10);
        } else if (strcmp(k, "--hold-until-file") == 0) {
            o.hold_file = v;
        } else if (strcmp(k, "--ca") == 0) {
            o.ca = v;
        } else if (strcmp(k, "--server-name") == 0) {
            o.server_name = v;
        } else {
            return -1;
        }
    }
    return o.n_nodes > 0u && rng_seed(o.seed) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------- metering */

/* A transport that forwards to another and times its progress() calls: on a TLS
 * transport those run the handshake (mbedtls_ssl_handshake). */
typedef struct meter {
    elk_transport_t inner;
    uint64_t progress_ticks;
    uint64_t done_at_ticks; /* progress_ticks when progress() first reported ready */
    uint64_t first_ticks;   /* done_at_ticks of the first connection (the full handshake) */
    uint32_t connects;      /* connections that reached ready */
    bool done;
} meter_t;

static int meter_open(void *ctx, const elk_endpoint_t *ep)
{
    meter_t *m = ctx;
    m->done = false;
    m->progress_ticks = 0;
    return m->inner.open(m->inner.ctx, ep);
}

static int meter_progress(void *ctx)
{
    meter_t *m = ctx;
    uint64_t t0 = mcu_ticks();
    int rc = m->inner.progress(m->inner.ctx);
    m->progress_ticks += mcu_ticks() - t0;
    if (rc == 1 && !m->done) {
        m->done = true;
        m->done_at_ticks = m->progress_ticks;
        if (m->connects++ == 0u) {
            m->first_ticks = m->done_at_ticks;
        }
    }
    return rc;
}

static int32_t meter_send(void *ctx, const uint8_t *buf, size_t len)
{
    meter_t *m = ctx;
    return m->inner.send(m->inner.ctx, buf, len);
}

static int32_t meter_recv(void *ctx, uint8_t *buf, size_t len)
{
    meter_t *m = ctx;
    return m->inner.recv(m->inner.ctx, buf, len);
}

static void meter_close(void *ctx)
{
    meter_t *m = ctx;
    m->inner.close(m->inner.ctx);
}

static int meter_wait(void *ctx, unsigned *events)
{
    meter_t *m = ctx;
    return m->inner.wait(m->inner.ctx, events);
}

static void meter_init(meter_t *m, const elk_transport_t *inner, elk_transport_t *out)
{
    memset(m, 0, sizeof *m);
    m->inner = *inner;
    out->ctx = m;
    out->open = meter_open;
    out->progress = meter_progress;
    out->send = meter_send;
    out->recv = meter_recv;
    out->close = meter_close;
    out->wait = meter_wait;
}

/* ------------------------------------------------------------ the fleet */

typedef struct mcu_fleet {
    elk_lwip_transport_t tcp_ctx[MAX_NODES];
    elk_transport_t tcp[MAX_NODES];
#if MCU_TLS
    elk_tls_conn_t tls_conn[MAX_NODES];
    elk_transport_t tls[MAX_NODES];
#endif
    meter_t meter[MAX_NODES];
    elk_transport_t metered[MAX_NODES];
    elk_node_t nodes[MAX_NODES];
    elk_fleet_t fleet;
    elk_pool_t pool;
    uint8_t pool_mem[CONFIG_ELK_POOL_BLOCK_COUNT * CONFIG_ELK_POOL_BLOCK_SIZE]
        __attribute__((aligned(8)));
    elk_client_t client;
    elk_lock_t lock;
} mcu_fleet_t;

static mcu_fleet_t f;
static lease_events_t ev;
static elk_lwip_clock_t clock_ctx;
static elk_clock_t clk;
static elk_lwip_entropy_t entropy_ctx;
static elk_entropy_t entropy;

#if MCU_TLS
static elk_tls_shared_t tls_shared;
static uint8_t tls_arena[112 * 1024] __attribute__((aligned(8)));
static uint8_t ca_pem[8192];
#endif

static uint64_t now_ms(void)
{
    return clk.now_ms(clk.ctx);
}

/* The per-node integer replies of a round (release: 1 = this node still held our value
 * and deleted it), comma-separated, then the end of the line. */
static void print_values(const elk_lock_event_t *e)
{
    for (size_t i = 0; i < e->node_count; i++) {
        printf("%s%lld", i == 0u ? "" : ",", (long long)e->nodes[i].value);
    }
    printf("\n");
}

static void on_event(void *user, elk_lock_t *lock, const elk_lock_event_t *e)
{
    lease_events_t *s = user;
    switch (e->type) {
    case ELK_LOCK_EV_ACQUIRED:
        s->acquired++;
        s->token = e->token;
        s->t_acquired = e->now;
        printf("mcu: t=%llu acquired token=%llu validity_ms=%lu ok=%u/%u key=%s\n",
               (unsigned long long)e->now, (unsigned long long)e->token,
               (unsigned long)e->validity_ms, e->ok, e->node_count, elk_lock_key(lock));
        break;
    case ELK_LOCK_EV_ACQUIRE_FAILED:
        s->acquire_failed++;
        s->last_err = e->err;
        printf("mcu: t=%llu acquire failed: %s\n", (unsigned long long)e->now,
               elk_err_name(e->err));
        break;
    case ELK_LOCK_EV_RENEWED:
    case ELK_LOCK_EV_RECOVERED: /* a renewal that ended a suspect spell (RENEWED does not fire) */
        s->renewed++;
        s->t_renewed = e->now;
        printf("mcu: t=%llu renewed n=%lu validity_ms=%lu ok=%u/%u%s\n", (unsigned long long)e->now,
               (unsigned long)e->renewals, (unsigned long)e->validity_ms, e->ok, e->node_count,
               e->type == ELK_LOCK_EV_RECOVERED ? " (recovered)" : "");
        break;
    case ELK_LOCK_EV_SUSPECT:
        printf("mcu: t=%llu suspect: a renewal round short of a quorum (%s), validity_ms=%lu\n",
               (unsigned long long)e->now, elk_err_name(e->err), (unsigned long)e->validity_ms);
        break;
    case ELK_LOCK_EV_LOST:
        s->lost++;
        s->last_err = e->err;
        printf("mcu: t=%llu LOST: %s\n", (unsigned long long)e->now, elk_err_name(e->err));
        break;
    case ELK_LOCK_EV_RELEASED:
        s->released++;
        printf("mcu: t=%llu released ok=%u/%u deleted=", (unsigned long long)e->now, e->ok,
               e->node_count);
        print_values(e);
        break;
    default:
        printf("mcu: t=%llu event %d err %s\n", (unsigned long long)e->now, (int)e->type,
               elk_err_name(e->err));
        break;
    }
}

/* One turn of the event loop: lib/ first, then wait on the nodes' lwIP sockets (which
 * polls the Ethernet controller and lwIP's timers) until lib/ wants to run again. */
static void turn(void)
{
    elk_wait_t w[MAX_NODES];
    elk_lwip_waiter_t lw[MAX_NODES];
    uint64_t now = now_ms(), t0 = mcu_ticks();
    uint64_t next = elk_client_poll(&f.client, now);
    mcu_work_add(mcu_ticks() - t0);
    size_t n = elk_fleet_waits(&f.fleet, w, MAX_NODES);
    for (size_t i = 0; i < n; i++) {
        lw[i].sock = w[i].fd;
        lw[i].events = w[i].events;
    }
    now = now_ms();
    uint64_t sleep = next > now ? next - now : 0u;
    /* lwip_poll returns as soon as a socket is ready; otherwise sleep until lib/'s next
     * deadline (at most a second, so the hold-file check stays responsive). */
    (void)elk_lwip_wait(lw, n, (uint32_t)(sleep > 1000u ? 1000u : sleep));
}

/* Turns until *count reaches want; gives up (false) after OP_TIMEOUT_MS. */
static bool pump_until(const uint32_t *count, uint32_t want, const char *what)
{
    uint64_t deadline = now_ms() + OP_TIMEOUT_MS;
    while (*count < want) {
        if (now_ms() > deadline || ev.lost != 0u) {
            printf("mcu: FAIL: no %s within %u ms (lost %lu, last error %s)\n", what,
                   (unsigned)OP_TIMEOUT_MS, (unsigned long)ev.lost, elk_err_name(ev.last_err));
            return false;
        }
        turn();
    }
    return true;
}

static bool fleet_voting(void)
{
    if (elk_fleet_ready_count(&f.fleet) < o.n_nodes) {
        return false;
    }
    for (size_t i = 0; i < o.n_nodes; i++) {
        if (!elk_client_node_votes(&f.client, i)) {
            return false;
        }
    }
    return true;
}

static int setup_tls(void)
{
#if MCU_TLS
    static elk_tls_config_t cfg;
    mbedtls_memory_buffer_alloc_init(tls_arena, sizeof tls_arena);
    (void)mbedtls_platform_set_time(mcu_mbedtls_time);
    long n = mcu_sh_read_file(o.ca, ca_pem, sizeof ca_pem - 1u);
    if (n <= 0) {
        printf("mcu: FAIL: cannot read the CA %s over semihosting\n", o.ca);
        return -1;
    }
    ca_pem[n] = '\0';
    cfg.ca_pem = ca_pem;
    cfg.ca_pem_len = (size_t)n + 1u;
    int rc = elk_tls_shared_init(&tls_shared, &cfg, &entropy);
    if (rc != ELK_OK) {
        printf("mcu: FAIL: elk_tls_shared_init: %s\n", elk_err_name(rc));
        return -1;
    }
    return 0;
#else
    printf("mcu: FAIL: --tls given to an image built without TLS\n");
    return -1;
#endif
}

static int setup_fleet(void)
{
    if (o.tls && setup_tls() != 0) {
        return -1;
    }
    int rc = elk_pool_init(&f.pool, f.pool_mem, sizeof f.pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE,
                           CONFIG_ELK_POOL_BLOCK_COUNT);
    for (size_t i = 0; rc == ELK_OK && i < o.n_nodes; i++) {
        elk_node_config_t nc;
        elk_node_config_defaults(&nc);
        nc.endpoint.host = o.node_host[i];
        nc.endpoint.port = o.node_port[i];
        nc.endpoint.server_name = o.server_name;
        nc.connect_timeout_ms = o.figures_only ? 120000 : 20000; /* an emulated M4's handshake */
        nc.request_timeout_ms = o.figures_only ? 60000 : 5000;
        elk_lwip_transport_init(&f.tcp_ctx[i], &f.tcp[i]);
        elk_transport_t *t = &f.tcp[i];
#if MCU_TLS
        if (o.tls) {
            rc = elk_tls_conn_init(&f.tls_conn[i], &tls_shared, &f.tcp[i], &f.tls[i]);
            t = &f.tls[i];
        }
#endif
        meter_init(&f.meter[i], t, &f.metered[i]);
        if (rc == ELK_OK) {
            rc = elk_node_init(&f.nodes[i], &nc, &f.metered[i], &f.pool, &entropy, NULL);
        }
    }
    if (rc == ELK_OK) {
        rc = elk_fleet_init(&f.fleet, f.nodes, o.n_nodes);
    }
    elk_client_config_t cc;
    elk_client_config_defaults(&cc);
    cc.gateway_id = o.gateway_id;
    cc.key_prefix = o.prefix;
    cc.mode = o.n_nodes > 1u ? ELK_MODE_REDLOCK : ELK_MODE_SINGLE;
    cc.safety = ELK_SAFETY_OFF; /* throwaway servers without persistence, on purpose */
    cc.vote_hygiene = !o.figures_only;
    if (rc == ELK_OK) {
        rc = elk_client_init(&f.client, &cc, &f.fleet, &entropy, NULL);
    }
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    lc.ttl_ms = o.ttl_ms;
    if (rc == ELK_OK) {
        rc = elk_lock_init(&f.lock, &f.client, o.resource, &lc, on_event, &ev);
    }
    if (rc != ELK_OK) {
        printf("mcu: FAIL: fleet set-up: %s\n", elk_err_name(rc));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- figures */

static void figure(const char *name, unsigned long long value, const char *unit)
{
    printf("mcu: figure %s %llu %s\n", name, value, unit);
}

typedef struct marks {
    uint64_t boot, lease, work_at_lease, renew_work, renew_ticks;
} marks_t;

static marks_t mk;

static void report_figures(void)
{
    figure("stack_high_water", mcu_stack_used(), "bytes");
    figure("stack_size", mcu_stack_size(), "bytes");
    figure("boot_to_first_lease", mk.lease - mk.boot, "ticks");
    figure("boot_to_first_lease_work", mk.work_at_lease, "ticks");
    figure("renewal_cycle_work", mk.renew_work, "ticks");
    figure("renewal_cycle", mk.renew_ticks, "ticks");
    for (size_t i = 0; i < o.n_nodes; i++) {
        printf("mcu: figure connect_progress_node%u %llu ticks\n", (unsigned)i,
               (unsigned long long)f.meter[i].first_ticks);
    }
    figure("lwip_heap_peak", lwip_stats.mem.max, "bytes");
    figure("lwip_heap_size", lwip_stats.mem.avail, "bytes");
    figure("eth_rx_frames", mcu_net_driver()->rx_frames, "frames");
    figure("eth_tx_frames", mcu_net_driver()->tx_frames, "frames");
#if MCU_TLS
    if (o.tls) {
        size_t max_used = 0, max_blocks = 0;
        mbedtls_memory_buffer_alloc_max_get(&max_used, &max_blocks);
        figure("mbedtls_heap_peak", max_used, "bytes");
        figure("mbedtls_heap_arena", sizeof tls_arena, "bytes");
    }
#endif
}

/* ------------------------------------------------------------ reconnect */

/* Drops node 0's connection the way lib/node drops a lost one (the transport's close(),
 * in-flight requests failed) and lets elk_node_poll reconnect it at once. The new
 * connection's progress() is metered exactly as the first one's: over TLS the port
 * offers the session it kept from the first handshake, and the server decides whether
 * the handshake is abbreviated (elk_tls_conn_resumed). */
static int reconnect_node0(void)
{
    meter_t *m = &f.meter[0];
    uint32_t before = m->connects;
    uint64_t deadline = now_ms() + OP_TIMEOUT_MS;
    elk_node_close(&f.nodes[0], now_ms());
    while (m->connects == before || !fleet_voting()) {
        if (now_ms() > deadline) {
            printf("mcu: FAIL: node0 did not reconnect within %u ms\n", (unsigned)OP_TIMEOUT_MS);
            return -1;
        }
        turn();
    }
    int resumed = 0;
#if MCU_TLS
    resumed = o.tls && elk_tls_conn_resumed(&f.tls_conn[0]) ? 1 : 0;
    if (o.tls) {
        /* What one copy of the session costs (the port makes one in progress() after
         * every handshake, to keep it): with MBEDTLS_SSL_KEEP_PEER_CERTIFICATE the copy
         * parses the server's certificate again. Measured alone, for docs/mcu.md. */
        mbedtls_ssl_session copy;
        mbedtls_ssl_session_init(&copy);
        uint64_t t0 = mcu_ticks();
        int rc = mbedtls_ssl_get_session(&f.tls_conn[0].ssl, &copy);
        uint64_t t1 = mcu_ticks();
        mbedtls_ssl_session_free(&copy);
        figure("session_copy", rc == 0 ? t1 - t0 : 0u, "ticks");
        printf("mcu: node0 %s %s\n", elk_tls_conn_version(&f.tls_conn[0]),
               mbedtls_ssl_get_ciphersuite(&f.tls_conn[0].ssl));
    }
#endif
    /* full/reconnect in tenths, rounded (the image's printf has no floating point) */
    uint64_t again = m->done_at_ticks > 0u ? m->done_at_ticks : 1u;
    uint64_t tenths = (m->first_ticks * 10u + again / 2u) / again;
    printf("mcu: t=%llu reconnected node0 progress_ticks=%llu full_ticks=%llu resumed=%d "
           "full/reconnect=%llu.%llu\n",
           (unsigned long long)now_ms(), (unsigned long long)m->done_at_ticks,
           (unsigned long long)m->first_ticks, resumed, (unsigned long long)(tenths / 10u),
           (unsigned long long)(tenths % 10u));
    figure("reconnect_progress_node0", m->done_at_ticks, "ticks");
    figure("reconnect_resumed_node0", (unsigned long long)resumed, "bool");
    return 0;
}

/* ---------------------------------------------------------------- main */

/* Waits (turning the loop, so renewals go on) until the host creates o.hold_file;
 * checked every 100 ms, for at most OP_TIMEOUT_MS. */
static int hold_until_file(void)
{
    uint64_t deadline = now_ms() + OP_TIMEOUT_MS, next_check = 0;
    printf("mcu: t=%llu holding until %s exists\n", (unsigned long long)now_ms(), o.hold_file);
    for (;;) {
        if (ev.lost != 0u || now_ms() > deadline) {
            printf("mcu: FAIL: %s while holding for %s\n", ev.lost ? "lease lost" : "timed out",
                   o.hold_file);
            return -1;
        }
        if (now_ms() >= next_check) {
            if (mcu_sh_file_exists(o.hold_file)) {
                return 0;
            }
            next_check = now_ms() + 100u;
        }
        turn();
    }
}

static int hold_and_renew(void)
{
    for (uint32_t r = 1; r <= o.renewals; r++) {
        uint64_t work0 = mcu_work_ticks(), t0 = mcu_ticks();
        if (!pump_until(&ev.renewed, r, "renewal")) {
            return -1;
        }
        if (r == 1u) {
            /* The first renewal's whole cycle, from the grant to RENEWED: lib/'s polls
             * while it waits for the renewal time, the round, lwIP both ways. */
            mk.renew_work = mcu_work_ticks() - work0;
            mk.renew_ticks = mcu_ticks() - t0;
        }
    }
    return o.hold_file != NULL ? hold_until_file() : 0;
}

int main(int argc, char **argv)
{
    mcu_board_init();
    mk.boot = mcu_ticks();
    if (parse_args(argc, argv) != 0) {
        printf("mcu: usage: --node HOST:PORT [--node ...] --seed HEX64 [--addr A --gw G "
               "--resource R --ttl MS --renewals N --tls --ca FILE --server-name NAME]\n");
        return 2;
    }
    if (mcu_net_init(o.addr, o.mask, o.gw) != 0) {
        return 1;
    }
    elk_lwip_clock_init(&clock_ctx, &clk);
    if (elk_lwip_entropy_init(&entropy_ctx, mcu_rng, NULL, &entropy) != ELK_OK ||
        setup_fleet() != 0) {
        return 1;
    }
    printf("mcu: t=%llu joining %u node(s)%s\n", (unsigned long long)now_ms(), (unsigned)o.n_nodes,
           o.tls ? " over TLS" : "");
    uint64_t deadline = now_ms() + OP_TIMEOUT_MS;
    while (!fleet_voting()) {
        if (now_ms() > deadline) {
            printf("mcu: FAIL: fleet not ready and voting within %u ms\n", (unsigned)OP_TIMEOUT_MS);
            return 1;
        }
        turn();
    }
    printf("mcu: t=%llu fleet ready\n", (unsigned long long)now_ms());
    int rc = elk_lock_acquire(&f.lock, now_ms(), OP_TIMEOUT_MS);
    if (rc != ELK_OK && rc != ELK_E_WOULD_BLOCK) {
        printf("mcu: FAIL: elk_lock_acquire: %s\n", elk_err_name(rc));
        return 1;
    }
    if (!pump_until(&ev.acquired, 1, "grant")) {
        return 1;
    }
    mk.lease = mcu_ticks();
    mk.work_at_lease = mcu_work_ticks();
    if (hold_and_renew() != 0) {
        return 1;
    }
    printf("mcu: t=%llu releasing\n", (unsigned long long)now_ms());
    rc = elk_lock_release(&f.lock, now_ms());
    if (rc != ELK_OK || !pump_until(&ev.released, 1, "release")) {
        printf("mcu: FAIL: release: %s\n", elk_err_name(rc));
        return 1;
    }
    deadline = now_ms() + OP_TIMEOUT_MS;
    while (elk_lock_busy(&f.lock) && now_ms() < deadline) {
        turn();
    }
    if (o.figures_only && reconnect_node0() != 0) {
        return 1;
    }
    for (size_t i = 0; i < o.n_nodes; i++) {
        elk_node_close(&f.nodes[i], now_ms());
    }
    report_figures();
    printf("mcu: done: acquired %lu, renewed %lu, lost %lu, released %lu\n",
           (unsigned long)ev.acquired, (unsigned long)ev.renewed, (unsigned long)ev.lost,
           (unsigned long)ev.released);
    return ev.lost == 0u && ev.released == 1u ? 0 : 1;
}
