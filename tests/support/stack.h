/* SPDX-License-Identifier: MIT */
/*
 * The client stack of the integration tests over port/posix (and port/mbedtls when it is
 * built): a block pool, one TCP (or TLS over TCP) connection and node per endpoint, a
 * fleet over them, optionally a second fleet of subscriber connections (RESP2 release
 * messages), and optionally a client. One options struct instead of positional bools.
 * Also run_until: drive a node, a fleet or a client with elk_posix_wait until a
 * condition holds or a bound passes (a bound, never a check of speed).
 * Test code (C11); give elk_ts_stack_t static storage (it holds the pool memory).
 */
#ifndef ELK_TEST_STACK_H
#define ELK_TEST_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/lock.h"
#include "elk/node.h"
#include "elk/port_posix.h"
#ifdef ELK_TS_HAVE_TLS
#include "elk/port_mbedtls.h"
#endif

#define ELK_TS_POOL_BLOCKS (4u * CONFIG_ELK_MAX_NODES + 2u)

typedef struct elk_ts_stack_opts {
    size_t count;                       /* nodes, 1..CONFIG_ELK_MAX_NODES */
    const elk_endpoint_t *endpoints;    /* count endpoints (copied into each node's config) */
    const elk_node_config_t *node_cfg;  /* one config for every node (endpoint replaced), or NULL */
    const elk_node_config_t *node_cfgs; /* or count configs, used as they are */
    void *tls;              /* an elk_tls_shared_t: every connection over TLS; NULL: plain */
    bool subscribers;       /* also a subscriber fleet (for RESP2 release messages) */
    const char *gateway_id; /* NULL: no client, only the fleet */
    const char *key_prefix; /* client key prefix (NULL: the default) */
    elk_lock_mode_t mode;   /* client mode (ignored without a client) */
    size_t pool_blocks;     /* 0: ELK_TS_POOL_BLOCKS */
    elk_entropy_t *entropy; /* required */
    elk_log_t *log;         /* may be NULL */
} elk_ts_stack_opts_t;

typedef struct elk_ts_stack {
    size_t n;
    bool subs, tls, has_client;
    elk_posix_tcp_t tcp[2][CONFIG_ELK_MAX_NODES]; /* [0] main, [1] subscriber connections */
    elk_transport_t tcp_t[2][CONFIG_ELK_MAX_NODES];
#ifdef ELK_TS_HAVE_TLS
    elk_tls_conn_t tls_c[2][CONFIG_ELK_MAX_NODES];
    elk_transport_t tls_t[2][CONFIG_ELK_MAX_NODES];
#endif
    elk_node_t nodes[CONFIG_ELK_MAX_NODES];
    elk_node_t snodes[CONFIG_ELK_MAX_NODES];
    elk_fleet_t fleet;
    elk_fleet_t sfleet;
    size_t pool_blocks;
    uint8_t pool_mem[ELK_TS_POOL_BLOCKS * CONFIG_ELK_POOL_BLOCK_SIZE] __attribute__((aligned(8)));
    elk_pool_t pool;
    elk_client_t client;
} elk_ts_stack_t;

/* Build the stack s (zeroed first) as o says. Returns ELK_OK or the first error of the
 * library calls (TLS asked for in a build without port/mbedtls: ELK_E_INVALID_ARG). */
int elk_ts_stack_init(elk_ts_stack_t *s, const elk_ts_stack_opts_t *o);

/* Close every node (and free the TLS connections). Returns the pool's free blocks after:
 * all of them (pool_blocks) unless something leaked a block. */
size_t elk_ts_stack_close(elk_ts_stack_t *s);

/* A recorder of request completions (lib/node reply callbacks): give elk_ts_replies_on
 * as the callback and an elk_ts_replies_t as its user pointer. Up to 128 completions:
 * status, the top-level reply's integer, type and text (first 63 bytes), and when. */
#define ELK_TS_MAX_REPLIES 128
typedef struct elk_ts_replies {
    int n;
    int status[ELK_TS_MAX_REPLIES];
    int64_t ival[ELK_TS_MAX_REPLIES];
    int type[ELK_TS_MAX_REPLIES];
    char text[ELK_TS_MAX_REPLIES][64];
    uint64_t at[ELK_TS_MAX_REPLIES];
} elk_ts_replies_t;
void elk_ts_replies_on(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply);

/* A run_until condition: rec has recorded at least n completions (arg: elk_ts_goal_t). */
typedef struct elk_ts_goal {
    const elk_ts_replies_t *rec;
    int n;
} elk_ts_goal_t;
bool elk_ts_replies_reached(void *arg);

/* Condition for run_until; arg is passed through. */
typedef bool (*elk_ts_cond_fn)(void *arg);

/* Drive the client (its fleets), the fleet or the node until cond(arg) holds, checked
 * after every poll, or timeout_ms pass. max_wait_ms > 0 caps one wait (for conditions
 * that do not come from I/O). Returns whether cond held. */
bool elk_ts_run_client(elk_client_t *c, elk_ts_cond_fn cond, void *arg, unsigned timeout_ms,
                       unsigned max_wait_ms);
bool elk_ts_run_fleet(elk_fleet_t *f, elk_ts_cond_fn cond, void *arg, unsigned timeout_ms,
                      unsigned max_wait_ms);
bool elk_ts_run_node(elk_node_t *n, elk_ts_cond_fn cond, void *arg, unsigned timeout_ms,
                     unsigned max_wait_ms);
/* elk_ts_run_node that also stores, before each poll, the clock value it hands the node in
 * *now (for tests that stamp callbacks with the node's own clock, not the wall's). */
bool elk_ts_run_node_at(elk_node_t *n, elk_ts_cond_fn cond, void *arg, unsigned timeout_ms,
                        unsigned max_wait_ms, uint64_t *now);

#endif /* ELK_TEST_STACK_H */
