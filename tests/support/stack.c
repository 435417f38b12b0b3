/* SPDX-License-Identifier: MIT */
/* The client stack and run_until of the integration tests: see stack.h. */
#include "stack.h"

#include <string.h>

/* The transport for connection i of set k (0 main, 1 subscriber): TCP, or TLS over it. */
static int ts_transport(elk_ts_stack_t *s, size_t k, size_t i, void *tls,
                        const elk_transport_t **out)
{
    int rc = elk_posix_tcp_init(&s->tcp[k][i], NULL, &s->tcp_t[k][i]);
    *out = &s->tcp_t[k][i];
    if (rc != ELK_OK || tls == NULL) {
        return rc;
    }
#ifdef ELK_TS_HAVE_TLS
    rc = elk_tls_conn_init(&s->tls_c[k][i], tls, &s->tcp_t[k][i], &s->tls_t[k][i]);
    *out = &s->tls_t[k][i];
    return rc;
#else
    return ELK_E_INVALID_ARG;
#endif
}

static int ts_nodes(elk_ts_stack_t *s, const elk_ts_stack_opts_t *o, size_t k, elk_node_t *nodes)
{
    for (size_t i = 0; i < o->count; i++) {
        elk_node_config_t nc;
        if (o->node_cfgs != NULL) {
            nc = o->node_cfgs[i];
        } else {
            if (o->node_cfg != NULL) {
                nc = *o->node_cfg;
            } else {
                elk_node_config_defaults(&nc);
            }
            nc.endpoint = o->endpoints[i];
        }
        const elk_transport_t *t;
        int rc = ts_transport(s, k, i, o->tls, &t);
        if (rc == ELK_OK) {
            rc = elk_node_init(&nodes[i], &nc, t, &s->pool, o->entropy, o->log);
        }
        if (rc != ELK_OK) {
            return rc;
        }
        nodes[i].stats.tls = o->tls != NULL;
    }
    return ELK_OK;
}

int elk_ts_stack_init(elk_ts_stack_t *s, const elk_ts_stack_opts_t *o)
{
    memset(s, 0, sizeof *s);
    size_t blocks = o->pool_blocks != 0 ? o->pool_blocks : ELK_TS_POOL_BLOCKS;
    if (o->count == 0 || o->count > CONFIG_ELK_MAX_NODES || blocks > ELK_TS_POOL_BLOCKS ||
        (o->endpoints == NULL && o->node_cfgs == NULL)) {
        return ELK_E_INVALID_ARG;
    }
    s->n = o->count;
    s->subs = o->subscribers;
    s->tls = o->tls != NULL;
    s->pool_blocks = blocks;
    int rc = elk_pool_init(&s->pool, s->pool_mem, blocks * CONFIG_ELK_POOL_BLOCK_SIZE,
                           CONFIG_ELK_POOL_BLOCK_SIZE, blocks);
    if (rc == ELK_OK) {
        rc = ts_nodes(s, o, 0, s->nodes);
    }
    if (rc == ELK_OK && o->subscribers) {
        rc = ts_nodes(s, o, 1, s->snodes);
    }
    if (rc == ELK_OK) {
        rc = elk_fleet_init(&s->fleet, s->nodes, o->count);
    }
    if (rc == ELK_OK && o->subscribers) {
        rc = elk_fleet_init(&s->sfleet, s->snodes, o->count);
    }
    if (rc != ELK_OK || o->gateway_id == NULL) {
        return rc;
    }
    elk_client_config_t cc;
    elk_client_config_defaults(&cc);
    cc.gateway_id = o->gateway_id;
    if (o->key_prefix != NULL) {
        cc.key_prefix = o->key_prefix;
    }
    cc.mode = o->mode;
    cc.subscribers = o->subscribers ? &s->sfleet : NULL;
    rc = elk_client_init(&s->client, &cc, &s->fleet, o->entropy, o->log);
    s->has_client = rc == ELK_OK;
    return rc;
}

size_t elk_ts_stack_close(elk_ts_stack_t *s)
{
    uint64_t now = elk_posix_now_ms();
    for (size_t k = 0; k < (s->subs ? 2u : 1u); k++) {
        for (size_t i = 0; i < s->n; i++) {
            elk_node_close(k == 0 ? &s->nodes[i] : &s->snodes[i], now);
#ifdef ELK_TS_HAVE_TLS
            if (s->tls) {
                elk_tls_conn_free(&s->tls_c[k][i]);
            }
#endif
        }
    }
    return elk_pool_available(&s->pool);
}

/* ------------------------------------------------------------ replies */

void elk_ts_replies_on(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    (void)node;
    elk_ts_replies_t *d = user;
    if (d->n >= ELK_TS_MAX_REPLIES) {
        return;
    }
    int i = d->n++;
    d->status[i] = status;
    d->at[i] = elk_posix_now_ms();
    d->text[i][0] = '\0';
    d->ival[i] = 0;
    d->type[i] = 0;
    if (reply != NULL) {
        const elk_resp_node_t *top = &reply->nodes[0];
        d->ival[i] = top->integer;
        d->type[i] = top->type;
        if (top->str != NULL) {
            size_t len = top->len < 63 ? top->len : 63;
            memcpy(d->text[i], top->str, len);
            d->text[i][len] = '\0';
        }
    }
}

bool elk_ts_replies_reached(void *arg)
{
    const elk_ts_goal_t *g = arg;
    return g->rec->n >= g->n;
}

/* ------------------------------------------------------------ run_until */

/* What one loop turn polls: exactly one of the three is set. */
typedef struct ts_target {
    elk_client_t *client;
    elk_fleet_t *fleet;
    elk_node_t *node;
    uint64_t *now; /* optional: gets each poll's clock value */
} ts_target_t;

static uint64_t ts_poll(const ts_target_t *t, uint64_t now, elk_wait_t *w, size_t cap, size_t *nw)
{
    uint64_t next;
    if (t->client != NULL) {
        next = elk_client_poll(t->client, now);
        *nw = elk_client_waits(t->client, w, cap);
    } else if (t->fleet != NULL) {
        next = elk_fleet_poll(t->fleet, now);
        *nw = elk_fleet_waits(t->fleet, w, cap);
    } else {
        next = elk_node_poll(t->node, now);
        w[0].fd = elk_node_wait(t->node, &w[0].events);
        *nw = w[0].fd >= 0 ? 1u : 0u;
    }
    return next;
}

static bool ts_run(const ts_target_t *t, elk_ts_cond_fn cond, void *arg, unsigned timeout_ms,
                   unsigned max_wait_ms)
{
    uint64_t end = elk_posix_now_ms() + timeout_ms;
    for (;;) {
        uint64_t now = elk_posix_now_ms();
        if (t->now != NULL) {
            *t->now = now;
        }
        elk_wait_t w[4 * CONFIG_ELK_MAX_NODES];
        size_t nw = 0;
        uint64_t next = ts_poll(t, now, w, sizeof w / sizeof w[0], &nw);
        if (cond(arg)) {
            return true;
        }
        if (now >= end) {
            return false;
        }
        uint64_t until = next < end ? next : end;
        if (max_wait_ms > 0 && until > now + max_wait_ms) {
            until = now + max_wait_ms;
        }
        elk_posix_wait(w, nw, until, NULL);
    }
}

bool elk_ts_run_client(elk_client_t *c, elk_ts_cond_fn cond, void *arg, unsigned timeout_ms,
                       unsigned max_wait_ms)
{
    ts_target_t t = {.client = c};
    return ts_run(&t, cond, arg, timeout_ms, max_wait_ms);
}

bool elk_ts_run_fleet(elk_fleet_t *f, elk_ts_cond_fn cond, void *arg, unsigned timeout_ms,
                      unsigned max_wait_ms)
{
    ts_target_t t = {.fleet = f};
    return ts_run(&t, cond, arg, timeout_ms, max_wait_ms);
}

bool elk_ts_run_node(elk_node_t *n, elk_ts_cond_fn cond, void *arg, unsigned timeout_ms,
                     unsigned max_wait_ms)
{
    return elk_ts_run_node_at(n, cond, arg, timeout_ms, max_wait_ms, NULL);
}

bool elk_ts_run_node_at(elk_node_t *n, elk_ts_cond_fn cond, void *arg, unsigned timeout_ms,
                        unsigned max_wait_ms, uint64_t *now)
{
    ts_target_t t = {.node = n, .now = now};
    return ts_run(&t, cond, arg, timeout_ms, max_wait_ms);
}
