/* SPDX-License-Identifier: MIT */
/* Simulated TCP between gateways and Redis nodes. Each direction of a connection is
 * a byte ring plus a FIFO of in-flight segments; only the head segment has an event
 * queued, so bytes arrive in order whatever delays, stalls or partitions do (TCP
 * never reorders within a connection). A partition holds the head segment back and
 * retries it, like retransmission; a reset or a crashed peer fails the connection. */
#include <string.h>

#include "sim_internal.h"

static elk_sim_conn_t *conn_at(elk_sim_net_t *net, size_t gw, size_t node)
{
    return &net->conns[gw * ELK_SIM_MAX_NODES + node];
}

static void pipe_reset(elk_sim_pipe_t *p)
{
    p->rd = p->dl = p->wr = 0;
    p->seg_head = p->seg_count = 0;
    p->last_at = 0;
    p->scheduled = false;
}

static void session_reset(elk_sim_conn_t *c)
{
    elk_resp_reader_reset(&c->srv.reader);
    c->srv.proto = 2;
    c->srv.nsubs = 0;
    c->srv.authed = c->net->nodes[c->node].password == NULL;
}

static void wake(elk_sim_net_t *net, const elk_sim_conn_t *c, uint64_t at)
{
    if (net->wake != NULL) {
        net->wake(net->wake_user, c->gw, at);
    }
}

static void conn_fail(elk_sim_net_t *net, elk_sim_conn_t *c, int err)
{
    c->state = ELK_SIM_CONN_FAILED;
    c->err = err;
    c->gen++;
    pipe_reset(&c->up);
    pipe_reset(&c->down);
    session_reset(c);
    wake(net, c, net->core->now_us);
}

static uint64_t seg_delay(elk_sim_net_t *net)
{
    const elk_sim_net_params_t *p = &net->params;
    elk_sim_rng_t *rng = &net->core->rng;
    uint64_t d = elk_sim_rng_range(rng, p->delay_min_us, p->delay_max_us);
    if (elk_sim_rng_chance(rng, p->tail_ppm)) {
        d += elk_sim_rng_range(rng, 0, p->tail_max_us);
    }
    if (elk_sim_rng_chance(rng, p->stall_ppm)) {
        d += elk_sim_rng_range(rng, p->stall_min_us, p->stall_max_us);
        net->stalls++;
    }
    return d;
}

static void schedule_head(elk_sim_net_t *net, elk_sim_conn_t *c, elk_sim_pipe_t *p, uint32_t kind)
{
    uint64_t at;
    if (p->scheduled || p->seg_count == 0u) {
        return;
    }
    at = p->seg_at[p->seg_head];
    if (at < net->core->now_us) {
        at = net->core->now_us;
    }
    if (elk_sim_queue_push(&net->core->queue, at, kind, c->id, c->gen) == ELK_OK) {
        p->scheduled = true;
    } else {
        net->dropped_events++;
    }
}

/* Append up to len bytes to pipe p; returns bytes taken (0 when full). */
static size_t pipe_send(elk_sim_net_t *net, elk_sim_conn_t *c, elk_sim_pipe_t *p, uint32_t kind,
                        const uint8_t *data, size_t len)
{
    size_t space = ELK_SIM_PIPE_CAP - (size_t)(p->wr - p->rd);
    size_t n = len < space ? len : space;
    size_t i;
    uint64_t at;
    uint8_t slot;
    if (n == 0u || p->seg_count >= ELK_SIM_PIPE_SEGS) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        p->buf[(p->wr + (uint32_t)i) & (ELK_SIM_PIPE_CAP - 1u)] = data[i];
    }
    p->wr += (uint32_t)n;
    at = net->core->now_us + seg_delay(net);
    if (at < p->last_at) {
        at = p->last_at;
    }
    p->last_at = at;
    slot = (uint8_t)((p->seg_head + p->seg_count) % ELK_SIM_PIPE_SEGS);
    p->seg_at[slot] = at;
    p->seg_end[slot] = p->wr;
    p->seg_count++;
    schedule_head(net, c, p, kind);
    return n;
}

void elk_sim_net_send_down(elk_sim_net_t *net, elk_sim_conn_t *c, const uint8_t *data, size_t len)
{
    if (c->state != ELK_SIM_CONN_OPEN) {
        return;
    }
    c->bytes_down += len;
    if (pipe_send(net, c, &c->down, ELK_SIM_EV_ARRIVE_DOWN, data, len) != len) {
        /* Redis drops a client whose output buffer overflows; so does the sim. */
        conn_fail(net, c, ELK_E_CLOSED);
    }
}

/* ------------------------------------------------------------ gateway side */

static int t_open(void *ctx, const elk_endpoint_t *ep)
{
    elk_sim_conn_t *c = (elk_sim_conn_t *)ctx;
    elk_sim_net_t *net = c->net;
    if (ep == NULL) {
        return ELK_E_INVALID_ARG;
    }
    c->gen++;
    pipe_reset(&c->up);
    pipe_reset(&c->down);
    session_reset(c);
    if (ep->port != (uint16_t)(ELK_SIM_PORT_BASE + c->node)) {
        c->state = ELK_SIM_CONN_FAILED;
        c->err = ELK_E_CONNECT_REFUSED;
        return ELK_OK;
    }
    c->state = ELK_SIM_CONN_CONNECTING;
    /* SYN and SYN-ACK: one simulated round trip. */
    if (elk_sim_queue_push(&net->core->queue, net->core->now_us + seg_delay(net) + seg_delay(net),
                           ELK_SIM_EV_CONNECT, c->id, c->gen) != ELK_OK) {
        c->state = ELK_SIM_CONN_FAILED;
        c->err = ELK_E_NO_RESOURCES;
        net->dropped_events++;
    }
    return ELK_OK;
}

static int t_progress(void *ctx)
{
    elk_sim_conn_t *c = (elk_sim_conn_t *)ctx;
    switch (c->state) {
    case ELK_SIM_CONN_OPEN:
        return 1;
    case ELK_SIM_CONN_CONNECTING:
        return 0;
    case ELK_SIM_CONN_FAILED:
        return c->err;
    default:
        return ELK_E_STATE;
    }
}

static int32_t t_send(void *ctx, const uint8_t *buf, size_t len)
{
    elk_sim_conn_t *c = (elk_sim_conn_t *)ctx;
    elk_sim_net_t *net = c->net;
    size_t n;
    if (c->state == ELK_SIM_CONN_CONNECTING) {
        return 0;
    }
    if (c->state == ELK_SIM_CONN_FAILED) {
        return c->err;
    }
    if (c->state != ELK_SIM_CONN_OPEN) {
        return ELK_E_STATE;
    }
    if (buf == NULL || len == 0u) {
        return len == 0u ? 0 : ELK_E_INVALID_ARG;
    }
    if (elk_sim_rng_chance(&net->core->rng, net->params.reset_ppm)) {
        net->resets++;
        conn_fail(net, c, ELK_E_IO);
        return ELK_E_IO;
    }
    if (len > 0x7fffffffu) {
        len = 0x7fffffffu;
    }
    n = pipe_send(net, c, &c->up, ELK_SIM_EV_ARRIVE_UP, buf, len);
    c->bytes_up += n;
    return (int32_t)n;
}

static int32_t t_recv(void *ctx, uint8_t *buf, size_t len)
{
    elk_sim_conn_t *c = (elk_sim_conn_t *)ctx;
    elk_sim_pipe_t *p = &c->down;
    size_t avail, n, i;
    if (c->state == ELK_SIM_CONN_FAILED) {
        return c->err;
    }
    if (c->state != ELK_SIM_CONN_OPEN) {
        return c->state == ELK_SIM_CONN_CONNECTING ? 0 : ELK_E_STATE;
    }
    if (buf == NULL) {
        return ELK_E_INVALID_ARG;
    }
    avail = (size_t)(p->dl - p->rd);
    n = avail < len ? avail : len;
    if (n > 0x7fffffffu) {
        n = 0x7fffffffu;
    }
    for (i = 0; i < n; i++) {
        buf[i] = p->buf[(p->rd + (uint32_t)i) & (ELK_SIM_PIPE_CAP - 1u)];
    }
    p->rd += (uint32_t)n;
    return (int32_t)n;
}

static void t_close(void *ctx)
{
    elk_sim_conn_t *c = (elk_sim_conn_t *)ctx;
    c->state = ELK_SIM_CONN_CLOSED;
    c->gen++;
    pipe_reset(&c->up);
    pipe_reset(&c->down);
    session_reset(c);
}

static int t_wait(void *ctx, unsigned *events)
{
    elk_sim_conn_t *c = (elk_sim_conn_t *)ctx;
    if (events != NULL) {
        *events = ELK_WAIT_READ | (c->state == ELK_SIM_CONN_CONNECTING ? ELK_WAIT_WRITE : 0u);
    }
    return (int)c->id;
}

elk_transport_t elk_sim_net_transport(elk_sim_net_t *net, size_t gw, size_t node)
{
    elk_transport_t t;
    t.ctx = conn_at(net, gw, node);
    t.open = t_open;
    t.progress = t_progress;
    t.send = t_send;
    t.recv = t_recv;
    t.close = t_close;
    t.wait = t_wait;
    return t;
}

/* ------------------------------------------------------------ server side */

static void server_input(elk_sim_net_t *net, elk_sim_conn_t *c)
{
    elk_sim_pipe_t *p = &c->up;
    elk_resp_reply_t cmd;
    int rc;
    while (p->rd != p->dl) {
        uint32_t off = p->rd & (ELK_SIM_PIPE_CAP - 1u);
        size_t chunk = (size_t)(p->dl - p->rd);
        if (chunk > ELK_SIM_PIPE_CAP - off) {
            chunk = ELK_SIM_PIPE_CAP - off;
        }
        if (elk_resp_reader_feed(&c->srv.reader, p->buf + off, chunk) != ELK_OK) {
            /* Query larger than the server accepts: Redis closes such a client. */
            conn_fail(net, c, ELK_E_CLOSED);
            return;
        }
        p->rd += (uint32_t)chunk;
        while ((rc = elk_resp_reader_next(&c->srv.reader, &cmd)) == 1) {
            elk_sim_reply_t out;
            out.len = 0;
            out.proto = c->srv.proto;
            out.overflow = false;
            elk_sim_redis_exec(net, c, &cmd, &out, elk_sim_net_publish);
            elk_resp_reader_release(&c->srv.reader);
            if (out.overflow) {
                conn_fail(net, c, ELK_E_CLOSED);
                return;
            }
            elk_sim_net_send_down(net, c, out.buf, out.len);
            if (c->state != ELK_SIM_CONN_OPEN) {
                return;
            }
        }
        if (rc < 0) {
            static const char proto_err[] = "-ERR Protocol error\r\n";
            elk_sim_net_send_down(net, c, (const uint8_t *)proto_err, sizeof proto_err - 1u);
            conn_fail(net, c, ELK_E_CLOSED);
            return;
        }
    }
}

static void arrive(elk_sim_net_t *net, elk_sim_conn_t *c, elk_sim_pipe_t *p, uint32_t kind)
{
    p->scheduled = false;
    if (p->seg_count == 0u) {
        return;
    }
    if ((net->blocked[c->gw] >> c->node) & 1u) {
        /* Partitioned: the segment is retransmitted later; later ones queue behind it. */
        p->seg_at[p->seg_head] = net->core->now_us + net->params.retry_us;
        schedule_head(net, c, p, kind);
        return;
    }
    p->dl = p->seg_end[p->seg_head];
    p->seg_head = (uint8_t)((p->seg_head + 1u) % ELK_SIM_PIPE_SEGS);
    p->seg_count--;
    schedule_head(net, c, p, kind);
    if (kind == ELK_SIM_EV_ARRIVE_UP) {
        if (net->nodes[c->node].up) {
            server_input(net, c);
        }
    } else {
        wake(net, c, net->core->now_us);
    }
}

static void connect_done(elk_sim_net_t *net, elk_sim_conn_t *c)
{
    if (c->state != ELK_SIM_CONN_CONNECTING) {
        return;
    }
    if ((net->blocked[c->gw] >> c->node) & 1u) {
        /* SYN lost: retried until the caller's connect timeout gives up. */
        if (elk_sim_queue_push(&net->core->queue, net->core->now_us + net->params.retry_us,
                               ELK_SIM_EV_CONNECT, c->id, c->gen) != ELK_OK) {
            net->dropped_events++;
        }
        return;
    }
    if (!net->nodes[c->node].up) {
        c->state = ELK_SIM_CONN_FAILED;
        c->err = ELK_E_CONNECT_REFUSED;
    } else {
        c->state = ELK_SIM_CONN_OPEN;
    }
    wake(net, c, net->core->now_us);
}

bool elk_sim_net_handle(elk_sim_net_t *net, const elk_sim_event_t *ev)
{
    elk_sim_conn_t *c;
    if (ev->kind >= ELK_SIM_EV_USER || ev->kind == 0u) {
        return false;
    }
    if (ev->a >= ELK_SIM_MAX_CONNS) {
        return true;
    }
    c = &net->conns[ev->a];
    if (ev->b != c->gen) {
        return true; /* the connection was closed or reopened since */
    }
    switch (ev->kind) {
    case ELK_SIM_EV_ARRIVE_UP:
        if (c->state == ELK_SIM_CONN_OPEN) {
            arrive(net, c, &c->up, ELK_SIM_EV_ARRIVE_UP);
        }
        break;
    case ELK_SIM_EV_ARRIVE_DOWN:
        if (c->state == ELK_SIM_CONN_OPEN) {
            arrive(net, c, &c->down, ELK_SIM_EV_ARRIVE_DOWN);
        }
        break;
    case ELK_SIM_EV_CONNECT:
        connect_done(net, c);
        break;
    default:
        break;
    }
    return true;
}

/* ------------------------------------------------------------ setup and faults */

/* A new server process on node r: a fresh run_id from the net's rng, uptime counted from
 * now (plus up_before_us for a node that was already running when the net was set up). */
static void node_start(elk_sim_net_t *net, elk_sim_redis_t *r, int64_t up_before_us)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t bits = 0;
    size_t i;
    for (i = 0; i < ELK_SIM_RUN_ID_LEN; i++) {
        if (i % 16u == 0u) {
            bits = elk_sim_rng_next(&net->core->rng);
        }
        r->run_id[i] = hex[bits & 15u];
        bits >>= 4;
    }
    r->run_id[ELK_SIM_RUN_ID_LEN] = '\0';
    r->started_us = net->core->now_us;
    r->up_before_us = up_before_us;
    r->jumped_us = 0;
}

int elk_sim_net_init(elk_sim_net_t *net, elk_sim_core_t *core, const elk_sim_net_params_t *params,
                     size_t n_gw, size_t n_nodes, elk_sim_wake_fn wake_fn, void *wake_user)
{
    size_t g, n;
    if (net == NULL || core == NULL || params == NULL || n_gw == 0u ||
        n_gw > ELK_SIM_MAX_GATEWAYS || n_nodes == 0u || n_nodes > ELK_SIM_MAX_NODES) {
        return ELK_E_INVALID_ARG;
    }
    net->core = core;
    net->params = *params;
    net->n_gw = (uint8_t)n_gw;
    net->n_nodes = (uint8_t)n_nodes;
    net->scripts = NULL;
    net->n_scripts = 0;
    net->wake = wake_fn;
    net->wake_user = wake_user;
    net->on_command = NULL;
    net->cmd_user = NULL;
    net->resets = net->stalls = 0;
    net->dropped_events = 0;
    for (n = 0; n < ELK_SIM_MAX_NODES; n++) {
        elk_sim_redis_init(&net->nodes[n], (uint8_t)n, &core->now_us);
        node_start(net, &net->nodes[n], (int64_t)ELK_SIM_UPTIME_AT_INIT_US);
    }
    for (g = 0; g < ELK_SIM_MAX_GATEWAYS; g++) {
        net->blocked[g] = 0;
        for (n = 0; n < ELK_SIM_MAX_NODES; n++) {
            elk_sim_conn_t *c = conn_at(net, g, n);
            int rc;
            c->net = net;
            c->id = (uint16_t)(g * ELK_SIM_MAX_NODES + n);
            c->gw = (uint8_t)g;
            c->node = (uint8_t)n;
            c->state = ELK_SIM_CONN_CLOSED;
            c->err = ELK_OK;
            c->gen = 0;
            c->bytes_up = c->bytes_down = 0;
            pipe_reset(&c->up);
            pipe_reset(&c->down);
            rc = elk_resp_reader_init(&c->srv.reader, c->srv.buf, sizeof c->srv.buf, c->srv.nodes,
                                      ELK_SIM_SESSION_NODES, 4);
            if (rc != ELK_OK) {
                return rc;
            }
            session_reset(c);
        }
    }
    return ELK_OK;
}

int elk_sim_net_set_scripts(elk_sim_net_t *net, const elk_sim_script_t *scripts, size_t n)
{
    if (net == NULL || (scripts == NULL && n > 0u) || n > ELK_SIM_MAX_SCRIPTS) {
        return ELK_E_INVALID_ARG;
    }
    net->scripts = scripts;
    net->n_scripts = n;
    return ELK_OK;
}

void elk_sim_net_partition(elk_sim_net_t *net, size_t gw, size_t node, bool blocked)
{
    if (gw >= ELK_SIM_MAX_GATEWAYS || node >= ELK_SIM_MAX_NODES) {
        return;
    }
    if (blocked) {
        net->blocked[gw] |= 1u << node;
    } else {
        net->blocked[gw] &= ~(1u << node);
    }
}

void elk_sim_net_crash(elk_sim_net_t *net, size_t node)
{
    size_t g;
    if (node >= net->n_nodes || !net->nodes[node].up) {
        return;
    }
    net->nodes[node].up = false;
    for (g = 0; g < net->n_gw; g++) {
        elk_sim_conn_t *c = conn_at(net, g, node);
        if (c->state == ELK_SIM_CONN_OPEN || c->state == ELK_SIM_CONN_CONNECTING) {
            conn_fail(net, c, c->state == ELK_SIM_CONN_OPEN ? ELK_E_CLOSED : ELK_E_CONNECT_REFUSED);
        }
    }
}

void elk_sim_net_restart(elk_sim_net_t *net, size_t node, int mode)
{
    elk_sim_redis_t *r;
    if (node >= net->n_nodes) {
        return;
    }
    r = &net->nodes[node];
    if (r->up) {
        return;
    }
    r->up = true;
    r->restarts++;
    r->script_cached = 0;
    if (mode == ELK_SIM_RESTART_LOSE) {
        memset(r->keys, 0, sizeof r->keys);
    }
    r->appendonly = mode == ELK_SIM_RESTART_LOSE ? "no" : "yes";
    node_start(net, r, 0);
}

void elk_sim_net_flush(elk_sim_net_t *net, size_t node)
{
    if (node < net->n_nodes && net->nodes[node].up) {
        memset(net->nodes[node].keys, 0, sizeof net->nodes[node].keys);
    }
}

void elk_sim_net_evict(elk_sim_net_t *net, size_t node, const char *marker, bool marker_too)
{
    size_t k, mlen = strlen(marker);
    if (node >= net->n_nodes || !net->nodes[node].up) {
        return;
    }
    for (k = 0; k < ELK_SIM_KEYS; k++) {
        elk_sim_key_t *key = &net->nodes[node].keys[k];
        bool is_marker = key->klen == mlen && memcmp(key->key, marker, mlen) == 0;
        if (key->used && (key->expire_ms != 0 || (marker_too && is_marker))) {
            key->used = 0;
        }
    }
}

void elk_sim_net_failover(elk_sim_net_t *net, size_t node)
{
    elk_sim_redis_t *r;
    if (node >= net->n_nodes || !net->nodes[node].up) {
        return;
    }
    elk_sim_net_crash(net, node);
    elk_sim_net_restart(net, node, ELK_SIM_RESTART_LOSE);
    r = &net->nodes[node];
    r->up_before_us = INT64_C(3600000000);
}

void elk_sim_net_clock_jump(elk_sim_net_t *net, size_t node, int64_t delta_us)
{
    if (node >= net->n_nodes) {
        return;
    }
    elk_sim_clock_jump(&net->nodes[node].clock, delta_us);
    net->nodes[node].jumped_us += delta_us;
}

int64_t elk_sim_net_publish(elk_sim_net_t *net, elk_sim_redis_t *node, const uint8_t *ch,
                            size_t chlen, const uint8_t *msg, size_t msglen)
{
    size_t g;
    int64_t receivers = 0;
    for (g = 0; g < net->n_gw; g++) {
        elk_sim_conn_t *c = conn_at(net, g, node->index);
        uint8_t s;
        if (c->state != ELK_SIM_CONN_OPEN) {
            continue;
        }
        for (s = 0; s < c->srv.nsubs; s++) {
            if (c->srv.sub_len[s] == chlen && memcmp(c->srv.sub[s], ch, chlen) == 0) {
                elk_sim_reply_t out;
                out.len = 0;
                out.proto = c->srv.proto;
                out.overflow = false;
                elk_sim_reply_push(&out, 3);
                elk_sim_reply_cstr(&out, "message");
                elk_sim_reply_bulk(&out, ch, chlen);
                elk_sim_reply_bulk(&out, msg, msglen);
                if (!out.overflow) {
                    elk_sim_net_send_down(net, c, out.buf, out.len);
                    receivers++;
                }
                break;
            }
        }
    }
    return receivers;
}
