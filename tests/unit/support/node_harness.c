/* SPDX-License-Identifier: MIT */
/* Node/fleet test harness (see node_harness.h). */
#include "node_harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void nh_check(int rc, const char *what)
{
    if (rc != ELK_OK) {
        fprintf(stderr, "node_harness: %s failed: %s\n", what, elk_err_name(rc));
        abort();
    }
}

void node_harness_init(node_harness_t *h, size_t count, const elk_node_config_t *cfg)
{
    if (count == 0 || count > CONFIG_ELK_MAX_NODES) {
        fprintf(stderr, "node_harness: bad node count %zu\n", count);
        abort();
    }
    memset(h, 0, sizeof *h);
    h->count = count;
    fake_clock_init(&h->clock, 1000);
    fake_entropy_init(&h->entropy, 1);
    h->entropy_if = fake_entropy_iface(&h->entropy);
    fake_log_init(&h->log, ELK_LOG_DEBUG);
    h->log_if = fake_log_iface(&h->log);
    nh_check(elk_pool_init(&h->pool, h->pool_mem, sizeof h->pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE,
                           NODE_HARNESS_POOL_BLOCKS),
             "elk_pool_init");
    if (cfg != NULL) {
        h->cfg = *cfg;
    } else {
        elk_node_config_defaults(&h->cfg);
        h->cfg.endpoint.host = "127.0.0.1";
    }
    for (size_t i = 0; i < count; i++) {
        elk_node_config_t c = h->cfg;
        if (cfg == NULL) {
            c.endpoint.port = (uint16_t)(6379 + i);
        }
        fake_transport_init(&h->ft[i]);
        h->ft[i].fd = (int)(100 + i);
        h->tr[i] = fake_transport_iface(&h->ft[i]);
        nh_check(elk_node_init(&h->nodes[i], &c, &h->tr[i], &h->pool, &h->entropy_if, &h->log_if),
                 "elk_node_init");
    }
    nh_check(elk_fleet_init(&h->fleet, h->nodes, count), "elk_fleet_init");
}

uint64_t node_harness_poll(node_harness_t *h)
{
    return elk_fleet_poll(&h->fleet, h->clock.now);
}

uint64_t node_harness_advance(node_harness_t *h, uint64_t ms)
{
    fake_clock_advance(&h->clock, ms);
    return node_harness_poll(h);
}

void reply_rec_init(reply_rec_t *rec)
{
    memset(rec, 0, sizeof *rec);
}

void reply_rec_cb(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    reply_rec_t *rec = user;
    if (rec->n >= REPLY_REC_MAX) {
        fprintf(stderr, "reply_rec: more than %u completions\n", REPLY_REC_MAX);
        abort();
    }
    size_t i = rec->n++;
    rec->status[i] = status;
    rec->type[i] = 0;
    rec->integer[i] = 0;
    rec->text[i][0] = '\0';
    if (reply != NULL && reply->count > 0) {
        const elk_resp_node_t *top = &reply->nodes[0];
        rec->type[i] = top->type;
        rec->integer[i] = top->integer;
        if (top->str != NULL) {
            size_t n = top->len < REPLY_REC_TEXT - 1 ? top->len : REPLY_REC_TEXT - 1;
            memcpy(rec->text[i], top->str, n);
            rec->text[i][n] = '\0';
        }
    }
    if (rec->then != NULL) {
        rec->then(rec, node, status);
    }
}

void assert_last_reply(const reply_rec_t *rec, size_t n, int status, const char *text)
{
    assert_int_equal(rec->n, n);
    assert_int_equal(rec->status[n - 1], status);
    assert_string_equal(rec->text[n - 1], text);
}
