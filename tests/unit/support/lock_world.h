/* SPDX-License-Identifier: MIT */
/*
 * The lease engine's test world (tests/unit/test_lock_engine*.c): one or two gateways'
 * lib/lock clients on real lib/node connections over scripted transports, answered by
 * in-memory Redis servers (lock_fake_redis.h), on one manual clock. One world, W, a
 * test program: world_setup() makes it afresh for each test.
 */
#ifndef LOCK_WORLD_H
#define LOCK_WORLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/lock.h"
#include "lock_events.h"
#include "lock_fake_redis.h"
#include "node_harness.h"

typedef elk_ts_events_t ev_rec_t; /* the shared recorder of tests/support */

typedef struct world {
    node_harness_t h;
    lfr_server_t srv[CONFIG_ELK_MAX_NODES];
    elk_client_t client;
    elk_lock_t lock;
    ev_rec_t rec;
    /* RESP2 subscriber connections of the first gateway (optional) */
    bool subs;
    node_harness_t hs;
    /* a second gateway on the same servers */
    bool two;
    node_harness_t h2;
    elk_client_t client2;
    elk_lock_t lock2;
    ev_rec_t rec2;
    uint64_t max_wake_violation; /* non-zero if a poll returned a wake after a held deadline */
    elk_lock_config_t cfg;       /* the locks' config when world_opts_t.ttl set it */
} world_t;

extern world_t W;

/* What a test's world is made of; a field left out is the common case. */
typedef struct world_opts {
    size_t nodes; /* fake servers, 0 meaning 1; mode SINGLE for one, else REDLOCK */
    const elk_lock_config_t *lcfg; /* NULL: cfg_ttl(ttl), or the lock defaults (ttl 0) */
    uint32_t ttl;                  /* without lcfg: the locks' config is cfg_ttl(ttl) */
    uint32_t wait_ms;  /* with ttl: the retry delay (wait_min_ms = wait_max_ms), 0: default */
    uint32_t round_ms; /* with ttl: round_timeout_ms, 0: the default */
    bool resp3;        /* the nodes speak RESP3 (else RESP2) */
    bool two;          /* a second gateway (gwB, W.lock2) on the same servers */
    bool subs;         /* RESP2 subscriber connections for the first gateway */
    /* vote_hygiene off: for tests that acquire again after more than a TTL without a reply
     * (the clock check gives no vote on a reference that old: lock_hygiene.c) */
    bool no_hygiene;
    bool connect; /* pump once when made: the fake transports connect at once */
} world_opts_t;

/* world_setup(.nodes = 3, .lcfg = &c, .two = true): designated initialisers. Asserts
 * (cmocka) that both gateways' client and lock start. */
#define world_setup(...) world_setup_opts(&(const world_opts_t){__VA_ARGS__})
void world_setup_opts(const world_opts_t *o);

/* The last event recorded (NULL: none), the first of a type (NULL: none), how many. */
const elk_lock_event_t *last_ev(const ev_rec_t *r);
const elk_lock_event_t *find_ev(const ev_rec_t *r, elk_lock_event_type_t type);
size_t count_ev(const ev_rec_t *r, elk_lock_event_type_t type);

/* The world's clock. */
uint64_t NOW(void);

/* Poll the client(s) and serve the fake servers until nothing moves at this time.
 * Returns the earliest next wake; a wake past a held lease's deadline is kept in
 * W.max_wake_violation. */
uint64_t pump(void);

/* Run the world until time t, jumping from wake to wake. */
void run_until(uint64_t t);

/* The lock defaults with this ttl and a 50 ms stop margin. */
elk_lock_config_t cfg_ttl(uint32_t ttl);

/* Connect (first pump), then acquire W.lock at once and take the replies: returns the
 * hold's start (the acquire's send time). */
uint64_t acquire_now(void);

/* Connect, send W.lock's acquire, and let the first n servers grant it: the replies are
 * not read yet (the next elk_client_poll reads them and sends the COMMITs). */
void acquire_served(size_t n);

/* W.lock asks now, willing to wait wait_ms (the answer is not known yet), and the world
 * runs run_ms. Returns the time it asked. */
uint64_t ask_and_run(uint64_t wait_ms, uint64_t run_ms);

/* Asserts that the last event of r is a failed acquire with err; returns it. */
const elk_lock_event_t *last_failed(const ev_rec_t *r, int err);

/* The second gateway's W.lock2 acquires and holds; then W.lock asks with wait_ms to wait
 * and the world runs run_ms: W.lock is WAITING. Returns the time W.lock asked. */
uint64_t b_holds_a_waits(uint64_t wait_ms, uint64_t run_ms);

#endif
