/* SPDX-License-Identifier: MIT */
/*
 * Link proof for Cortex-M4: a bare-metal program (own reset handler, no crt0) that
 * runs a pool cycle, a RESP encode and decode, the lwIP port's clock and entropy,
 * and a lock client over a three-node fleet whose transport is offline (so the
 * whole core, node + lock engine included, is linked), linked
 * against newlib-nano with NO heap: scripts/cortex-m-build.sh links it with
 * --wrap=malloc/calloc/realloc/free and no _sbrk, so any heap call anywhere in
 * lib/ or port/lwip fails the link. It is linked, not run (no board in CI).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elk/config.h"
#include "elk/err.h"
#include "elk/lock.h"
#include "elk/node.h"
#include "elk/pool.h"
#include "elk/port_lwip.h"
#include "elk/resp.h"

/* Stands in for lwIP's sys_now (the RTOS tick on a board). */
static volatile uint32_t board_tick;
uint32_t sys_now(void);
uint32_t sys_now(void)
{
    return board_tick;
}

static uint8_t pool_mem[CONFIG_ELK_POOL_BLOCK_COUNT * CONFIG_ELK_POOL_BLOCK_SIZE]
    __attribute__((aligned(8)));
static elk_resp_node_t nodes[CONFIG_ELK_RESP_MAX_NODES];
static volatile int result;

static int run(void)
{
    elk_pool_t pool;
    uint8_t *tx = NULL;
    uint8_t *rx = NULL;
    size_t len = 0;

    if (elk_pool_init(&pool, pool_mem, sizeof(pool_mem), CONFIG_ELK_POOL_BLOCK_SIZE,
                      CONFIG_ELK_POOL_BLOCK_COUNT) != ELK_OK ||
        elk_pool_get(&pool, &tx) != ELK_OK || elk_pool_get(&pool, &rx) != ELK_OK) {
        return 1;
    }

    const elk_resp_arg_t argv[] = {ELK_RESP_ARG_STR("SET"), ELK_RESP_ARG_STR("elk:{valve}"),
                                   elk_resp_arg_int(42)};
    if (elk_resp_encode_command(tx, elk_pool_block_size(&pool), argv, 3, &len) != ELK_OK ||
        len != 37 || memcmp(tx, "*3\r\n$3\r\nSET\r\n", 13) != 0) {
        return 2;
    }

    elk_resp_reader_t reader;
    elk_resp_reply_t reply;
    static const char wire[] = "*2\r\n+OK\r\n:42\r\n";
    if (elk_resp_reader_init(&reader, rx, elk_pool_block_size(&pool), nodes,
                             CONFIG_ELK_RESP_MAX_NODES, CONFIG_ELK_RESP_MAX_DEPTH) != ELK_OK ||
        elk_resp_reader_feed(&reader, (const uint8_t *)wire, sizeof(wire) - 1u) != ELK_OK ||
        elk_resp_reader_next(&reader, &reply) != 1 || reply.count != 3 ||
        !elk_resp_str_eq(&reply.nodes[1], "OK") || reply.nodes[2].integer != 42) {
        return 3;
    }
    elk_resp_reader_release(&reader);

    if (elk_pool_put(&pool, tx) != ELK_OK || elk_pool_put(&pool, rx) != ELK_OK ||
        elk_pool_put(&pool, rx) != ELK_E_POOL_DOUBLE_FREE) {
        return 4;
    }

    elk_lwip_clock_t clock_ctx;
    elk_clock_t clock;
    elk_lwip_clock_init(&clock_ctx, &clock);
    board_tick = 0xFFFFFFF0u;
    uint64_t before = clock.now_ms(clock.ctx);
    board_tick = 0x10u;
    if (clock.now_ms(clock.ctx) - before != 0x20u) {
        return 5;
    }
    return 0;
}

/* A transport whose network is down: every connect is refused. */
static int off_open(void *ctx, const elk_endpoint_t *ep)
{
    (void)ctx;
    (void)ep;
    return ELK_E_CONNECT_REFUSED;
}
static int off_progress(void *ctx)
{
    (void)ctx;
    return ELK_E_CONNECT_REFUSED;
}
static int32_t off_send(void *ctx, const uint8_t *buf, size_t len)
{
    (void)ctx;
    (void)buf;
    (void)len;
    return ELK_E_NOT_CONNECTED;
}
static int32_t off_recv(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    (void)buf;
    (void)len;
    return ELK_E_NOT_CONNECTED;
}
static void off_close(void *ctx)
{
    (void)ctx;
}
static int off_wait(void *ctx, unsigned *events)
{
    (void)ctx;
    *events = ELK_WAIT_NONE;
    return -1;
}

/* Stands in for the board's TRNG (xorshift: only for this link proof). */
static int fake_trng(void *user, uint32_t *word)
{
    uint32_t *x = user;
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    *word = *x;
    return 0;
}

enum { NODES = 3 };
static elk_node_t fleet_nodes[NODES];
static elk_client_t client;
static elk_lock_t lock;
static uint8_t client_pool_mem[CONFIG_ELK_POOL_BLOCK_COUNT * CONFIG_ELK_POOL_BLOCK_SIZE]
    __attribute__((aligned(8)));

static int run_client(void)
{
    static const elk_transport_t off = {NULL,     off_open,  off_progress, off_send,
                                        off_recv, off_close, off_wait};
    static uint32_t trng_state = 0x2545F491u;
    elk_lwip_entropy_t entropy_ctx;
    elk_entropy_t entropy;
    elk_pool_t pool;
    elk_fleet_t fleet;
    elk_client_config_t cc;
    uint64_t now = 1000;

    if (elk_lwip_entropy_init(&entropy_ctx, fake_trng, &trng_state, &entropy) != ELK_OK ||
        elk_pool_init(&pool, client_pool_mem, sizeof(client_pool_mem), CONFIG_ELK_POOL_BLOCK_SIZE,
                      CONFIG_ELK_POOL_BLOCK_COUNT) != ELK_OK) {
        return 10;
    }
    for (size_t i = 0; i < NODES; i++) {
        elk_node_config_t nc;
        elk_node_config_defaults(&nc);
        nc.endpoint.host = "192.0.2.1";
        nc.endpoint.port = (uint16_t)(6379u + i);
        if (elk_node_init(&fleet_nodes[i], &nc, &off, &pool, &entropy, NULL) != ELK_OK) {
            return 11;
        }
    }
    elk_client_config_defaults(&cc);
    cc.gateway_id = "cm4";
    if (elk_fleet_init(&fleet, fleet_nodes, NODES) != ELK_OK ||
        elk_client_init(&client, &cc, &fleet, &entropy, NULL) != ELK_OK ||
        elk_lock_init(&lock, &client, "valve", NULL, NULL, NULL) != ELK_OK) {
        return 12;
    }
    for (int i = 0; i < 10; i++) {
        now = elk_client_poll(&client, now) > now ? now + 10u : now + 1u;
    }
    (void)elk_lock_acquire(&lock, now, 0);
    for (int i = 0; i < 10; i++) {
        (void)elk_client_poll(&client, now);
        now += 100u;
    }
    /* Every node refused: the lock must not be held. */
    return elk_lock_is_held(&lock, now) ? 13 : 0;
}

int main(void);
int main(void)
{
    result = run();
    if (result == 0) {
        result = run_client();
    }
    return result;
}

void Reset_Handler(void);
void Reset_Handler(void)
{
    (void)main();
    for (;;) {
    }
}

/* Initial stack pointer (top of a 64 KiB SRAM at 0x20000000) and reset vector. */
__attribute__((section(".isr_vector"), used)) static const uintptr_t vectors[2] = {
    0x20010000u, (uintptr_t)&Reset_Handler};
