/* SPDX-License-Identifier: MIT */
/*
 * Node/fleet test harness: up to CONFIG_ELK_MAX_NODES elk_node_t, each on its own
 * scripted transport (fake_transport.h), sharing one manual clock, one deterministic
 * entropy source, one capturing log and one pool. Plus a reply recorder to use as
 * the elk_node_reply_fn of requests.
 *
 *     static node_harness_t h;                      // large: keep it static
 *     node_harness_init(&h, 3, NULL);               // 3 nodes, default config
 *     node_harness_poll(&h);                        // fake transports connect at once
 *     assert_int_equal(elk_fleet_ready_count(&h.fleet), 3);
 *     ... elk_node_send(&h.nodes[0], h.clock.now, argv, 2, 0, reply_rec_cb, &rec);
 *     node_harness_poll(&h);                        // request bytes now in h.ft[0]
 *     fake_transport_push_rx_str(&h.ft[0], "+OK\r\n");
 *     node_harness_poll(&h);                        // rec.n == 1, rec.status[0] == ELK_OK
 *
 * With the default config (no password, resp3 off, db 0) a node is READY after the
 * first poll and sends nothing during connect, so h.ft[i] records only requests.
 */
#ifndef NODE_HARNESS_H
#define NODE_HARNESS_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/node.h"
#include "fake_clock.h"
#include "fake_entropy.h"
#include "fake_log.h"
#include "fake_transport.h"

/* Two blocks per node (tx, rx) plus spare ones a test can take to exhaust the pool. */
#define NODE_HARNESS_POOL_BLOCKS (2u * CONFIG_ELK_MAX_NODES + 4u)

typedef struct node_harness {
    fake_transport_t ft[CONFIG_ELK_MAX_NODES];
    elk_transport_t tr[CONFIG_ELK_MAX_NODES];
    fake_clock_t clock;
    fake_entropy_t entropy;
    elk_entropy_t entropy_if;
    fake_log_t log;
    elk_log_t log_if;
    alignas(8) uint8_t pool_mem[NODE_HARNESS_POOL_BLOCKS * CONFIG_ELK_POOL_BLOCK_SIZE];
    elk_pool_t pool;
    elk_node_config_t cfg;
    elk_node_t nodes[CONFIG_ELK_MAX_NODES];
    elk_fleet_t fleet;
    size_t count;
} node_harness_t;

/* Set up count nodes (1..CONFIG_ELK_MAX_NODES) with cfg (NULL: elk_node_config_defaults
 * on 127.0.0.1:6379+i, resp3 off). The clock starts at 1000, entropy seed 1, log level
 * DEBUG. No I/O yet. Aborts on a setup error (a broken test, not a finding). */
void node_harness_init(node_harness_t *h, size_t count, const elk_node_config_t *cfg);

/* elk_fleet_poll at the current clock time; returns its next-time. */
uint64_t node_harness_poll(node_harness_t *h);

/* Advance the clock by ms, then poll. */
uint64_t node_harness_advance(node_harness_t *h, uint64_t ms);

/* Records request completions. Use reply_rec_cb as the callback and the recorder as
 * user. Text of simple strings, errors, bulk strings and integers is kept (cut to
 * REPLY_REC_TEXT-1 bytes). */
#define REPLY_REC_MAX 256u
#define REPLY_REC_TEXT 64u

typedef struct reply_rec {
    size_t n;                       /* completions so far */
    int status[REPLY_REC_MAX];      /* status of each completion, in order */
    int type[REPLY_REC_MAX];        /* top-level elk_resp_type_t, 0 if no reply */
    int64_t integer[REPLY_REC_MAX]; /* INTEGER value / aggregate child count */
    char text[REPLY_REC_MAX][REPLY_REC_TEXT];
    /* optional hook run after recording (e.g. send again, close the node) */
    void (*then)(struct reply_rec *rec, elk_node_t *node, int status);
    void *then_user;
} reply_rec_t;

void reply_rec_init(reply_rec_t *rec);
void reply_rec_cb(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply);
/* Asserts (cmocka) that rec holds n completions, the last with status and text. */
void assert_last_reply(const reply_rec_t *rec, size_t n, int status, const char *text);

#endif /* NODE_HARNESS_H */
