/* SPDX-License-Identifier: MIT */
/*
 * Several gateways on the same in-memory Redis servers: each gateway its own lib/lock
 * client over real lib/node connections on scripted transports (node_harness.h), all on
 * one manual clock. For the primitives built on locks (semaphores, multi-locks), where what
 * matters is what several holders see. One world, GWW, a test program.
 */
#ifndef GW_WORLD_H
#define GW_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "elk/lock.h"
#include "lock_fake_redis.h"
#include "node_harness.h"

#define GW_WORLD_NODES 3u
#define GW_WORLD_MAX 5u

typedef struct gw_world {
    lfr_server_t srv[GW_WORLD_NODES];
    node_harness_t h[GW_WORLD_MAX];
    elk_client_t client[GW_WORLD_MAX];
    char id[GW_WORLD_MAX][8]; /* "gw0".. : the clients keep the pointers */
    size_t n;
    void (*after_poll)(void); /* called after every poll of every client (a safety check) */
} gw_world_t;

extern gw_world_t GWW;

/* n gateways (1..GW_WORLD_MAX), ids "gw0".., key prefix "t:", on GW_WORLD_NODES servers.
 * The clients exist; the caller registers its locks, then calls gw_world_connect. */
void gw_world_setup(size_t n);

/* Attach the servers and pump until every client is ready (asserted). */
void gw_world_connect(void);

/* The world's clock (ms). */
uint64_t gw_world_now(void);

/* Poll every client and serve the servers until nothing moves at this time; returns the
 * earliest next wake. */
uint64_t gw_world_pump(void);

/* Run the world until time t, from wake to wake. */
void gw_world_run_until(uint64_t t);

/* The lock defaults with ttl 1000 ms, stop margin 50 ms, retries every 50-100 ms. */
elk_lock_config_t gw_world_lock_cfg(void);

#endif /* GW_WORLD_H */
