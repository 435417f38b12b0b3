/* SPDX-License-Identifier: MIT */
/* Node connection state machine: connect, handshake and ready steps, backoff, failure
 * handling, close. The only file that changes a node's state or fails its connection. */
#include "node_internal.h"

#include <string.h>

#define ELK_NODE_DEFAULT_CONNECT_TIMEOUT_MS 2000u
#define ELK_NODE_DEFAULT_REQUEST_TIMEOUT_MS 1000u
#define ELK_NODE_DEFAULT_BACKOFF_MIN_MS 100u
#define ELK_NODE_DEFAULT_BACKOFF_MAX_MS 5000u
/* Transitions one poll may run (connect -> AUTH -> HELLO -> SELECT -> READY and a
 * little slack), so a fast server is ready after a single poll without looping forever. */
#define ELK_NODE_POLL_STEPS 8

void elk_node_config_defaults(elk_node_config_t *cfg)
{
    if (cfg == NULL) {
        return;
    }
    memset(cfg, 0, sizeof *cfg);
    cfg->connect_timeout_ms = ELK_NODE_DEFAULT_CONNECT_TIMEOUT_MS;
    cfg->request_timeout_ms = ELK_NODE_DEFAULT_REQUEST_TIMEOUT_MS;
    cfg->backoff_min_ms = ELK_NODE_DEFAULT_BACKOFF_MIN_MS;
    cfg->backoff_max_ms = ELK_NODE_DEFAULT_BACKOFF_MAX_MS;
}

int elk_node_init(elk_node_t *node, const elk_node_config_t *cfg, const elk_transport_t *transport,
                  elk_pool_t *pool, const elk_entropy_t *entropy, const elk_log_t *log)
{
    if (node == NULL || cfg == NULL || transport == NULL || pool == NULL || entropy == NULL ||
        entropy->fill == NULL || transport->open == NULL || transport->progress == NULL ||
        transport->send == NULL || transport->recv == NULL || transport->close == NULL ||
        cfg->endpoint.host == NULL) {
        return ELK_E_INVALID_ARG;
    }
    memset(node, 0, sizeof *node);
    node->cfg = *cfg;
    /* A zeroed config means "defaults", so callers that memset get sane timings
     * rather than a zero backoff that would spin. */
    if (node->cfg.connect_timeout_ms == 0u) {
        node->cfg.connect_timeout_ms = ELK_NODE_DEFAULT_CONNECT_TIMEOUT_MS;
    }
    if (node->cfg.request_timeout_ms == 0u) {
        node->cfg.request_timeout_ms = ELK_NODE_DEFAULT_REQUEST_TIMEOUT_MS;
    }
    if (node->cfg.backoff_min_ms == 0u) {
        node->cfg.backoff_min_ms = ELK_NODE_DEFAULT_BACKOFF_MIN_MS;
    }
    if (node->cfg.backoff_max_ms < node->cfg.backoff_min_ms) {
        node->cfg.backoff_max_ms = node->cfg.backoff_min_ms;
    }
    node->transport = *transport;
    node->pool = pool;
    node->entropy = entropy;
    node->log = log;
    node->state = ELK_NODE_DISCONNECTED;
    node->backoff_ms = node->cfg.backoff_min_ms;
    node->stats.last_error = ELK_OK;
    return ELK_OK;
}

/* Move to state (no-op if unchanged) and tell on_state. */
static void elk_node_set_state(elk_node_t *node, elk_node_state_t state, uint64_t now, int err)
{
    if (node->state == state) {
        return;
    }
    node->state = state;
    node->state_since = now;
    elk_node__log_line(node, ELK_LOG_DEBUG, "-> ", elk_node_state_name(state), ELK_OK);
    if (node->on_state != NULL) {
        node->on_state(node->state_user, node, state, err);
    }
}

static bool elk_node_is_open(elk_node_state_t s)
{
    return s == ELK_NODE_CONNECTING || s == ELK_NODE_AUTH || s == ELK_NODE_HELLO ||
        s == ELK_NODE_SELECT || s == ELK_NODE_READY;
}

/* Drop the connection and its buffers. Bumping epoch tells a dispatch loop further up
 * the stack (a callback closed the node) that the reader and blocks are gone. */
static void elk_node_teardown(elk_node_t *node)
{
    if (elk_node_is_open(node->state)) {
        node->transport.close(node->transport.ctx);
    }
    if (node->tx != NULL) {
        (void)elk_pool_put(node->pool, node->tx);
        node->tx = NULL;
    }
    if (node->rx != NULL) {
        (void)elk_pool_put(node->pool, node->rx);
        node->rx = NULL;
    }
    node->tx_len = 0;
    node->tx_sent = 0;
    node->unsent = 0;
    node->handshake_pending = 0;
    node->nr_count = 0; /* a new connection has no (UN)SUBSCRIBE outstanding */
    node->epoch++;
}

/* Take the oldest request off the ring into *req; false when none is left. It is off
 * before its callback runs, so a callback that sends or closes sees a consistent node
 * and a nested close simply completes what is left. */
static bool elk_node_pop(elk_node_t *node, elk_node_request_t *req)
{
    if (node->count == 0u) {
        node->head = 0;
        return false;
    }
    *req = node->inflight[node->head];
    node->head = (uint16_t)((node->head + 1u) % CONFIG_ELK_NODE_MAX_INFLIGHT);
    node->count--;
    return true;
}

static void elk_node_complete(elk_node_t *node, const elk_node_request_t *req, int status)
{
    if (req->cb != NULL) {
        req->cb(req->user, node, status, NULL);
    }
}

/* After a failure: every request in flight completes, one past its deadline with
 * ELK_E_TIMEOUT, else the oldest with head_status and the others ELK_E_DISCONNECTED. */
static void elk_node_fail_requests(elk_node_t *node, uint64_t now, int head_status)
{
    elk_node_request_t req;
    int status = head_status;
    while (elk_node_pop(node, &req)) {
        elk_node_complete(node, &req, req.deadline <= now ? ELK_E_TIMEOUT : status);
        status = ELK_E_DISCONNECTED;
    }
}

/* After elk_node_close: every request in flight completes with ELK_E_DISCONNECTED. */
static void elk_node_cancel_requests(elk_node_t *node)
{
    elk_node_request_t req;
    while (elk_node_pop(node, &req)) {
        elk_node_complete(node, &req, ELK_E_DISCONNECTED);
    }
}

/* Jittered exponential delay: d/2 + random(0..d/2), so the cap is never exceeded and
 * gateways that lost the same server do not all come back in the same millisecond. */
static uint32_t elk_node_backoff_delay(elk_node_t *node)
{
    uint32_t d = node->backoff_ms;
    uint32_t half, jitter = 0;
    uint8_t rnd[4];
    if (d < node->cfg.backoff_min_ms) {
        d = node->cfg.backoff_min_ms;
    }
    if (d > node->cfg.backoff_max_ms) {
        d = node->cfg.backoff_max_ms;
    }
    half = d / 2u;
    if (node->entropy->fill(node->entropy->ctx, rnd, sizeof rnd) == ELK_OK) {
        uint32_t r = (uint32_t)rnd[0] | ((uint32_t)rnd[1] << 8) | ((uint32_t)rnd[2] << 16) |
            ((uint32_t)rnd[3] << 24);
        jitter = r % (half + 1u); /* half < 2^31: 32-bit, no 64-bit division helper */
    } else {
        jitter = half; /* no entropy: the full delay, the safe side */
    }
    node->backoff_ms = d > node->cfg.backoff_max_ms / 2u ? node->cfg.backoff_max_ms : d * 2u;
    return d - half + jitter;
}

static void elk_node_log_down(const elk_node_t *node, int err, uint32_t delay)
{
    if (elk_node__log_on(node, ELK_LOG_WARN)) {
        char buf[ELK_NODE_LOG_LINE];
        elk_fmt_t f;
        elk_node__log_begin(node, &f, buf, sizeof buf);
        elk_fmt_str(&f, "down");
        elk_node__log_err(&f, err);
        elk_fmt_str(&f, "; retry in ");
        elk_fmt_uint(&f, delay);
        elk_fmt_str(&f, " ms");
        elk_node__log_end(node, ELK_LOG_WARN, &f);
    }
}

/* Tear the connection down, notify, fail every in-flight request, go to BACKOFF.
 * head_status: what the oldest request gets (its own error), others get
 * ELK_E_DISCONNECTED, expired ones ELK_E_TIMEOUT. The only place a connection fails. */
static void elk_node_fail(elk_node_t *node, uint64_t now, int err, int head_status)
{
    uint32_t delay;
    node->stats.failures++;
    node->stats.last_error = err;
    elk_node_teardown(node);
    delay = elk_node_backoff_delay(node);
    node->next_attempt = now + delay;
    elk_node_log_down(node, err, delay);
    elk_node_set_state(node, ELK_NODE_BACKOFF, now, err);
    elk_node_fail_requests(node, now, head_status);
}

/* A failure of the connection itself: the oldest request gets ELK_E_DISCONNECTED too. */
static ELK_NODE_NOINLINE void elk_node_down(elk_node_t *node, uint64_t now, int err)
{
    elk_node_fail(node, now, err, ELK_E_DISCONNECTED);
}

static void elk_node_connect(elk_node_t *node, uint64_t now)
{
    int r;
    node->stats.resp3 = false;
    r = elk_pool_get(node->pool, &node->tx);
    if (r == ELK_OK) {
        r = elk_pool_get(node->pool, &node->rx);
    }
    if (r != ELK_OK) {
        elk_node_down(node, now, r);
        return;
    }
    (void)elk_resp_reader_init(&node->reader, node->rx, elk_pool_block_size(node->pool),
                               node->reply_nodes, CONFIG_ELK_RESP_MAX_NODES,
                               CONFIG_ELK_RESP_MAX_DEPTH);
    node->tx_len = 0;
    node->tx_sent = 0;
    node->connect_started = now;
    elk_node_set_state(node, ELK_NODE_CONNECTING, now, ELK_OK);
    if (node->state != ELK_NODE_CONNECTING) {
        return; /* the state handler closed the node */
    }
    r = node->transport.open(node->transport.ctx, &node->cfg.endpoint);
    if (r < 0) {
        elk_node_down(node, now, r);
    }
}

/* The connect timeout covers TCP, TLS and the handshake. */
static uint64_t elk_node_connect_deadline(const elk_node_t *node)
{
    return node->connect_started + node->cfg.connect_timeout_ms;
}

/* Act on a handshake verdict: enter the state it names, or fail. */
static void elk_node_hs_apply(elk_node_t *node, uint64_t now, int verdict)
{
    if (verdict < 0) {
        elk_node_down(node, now, verdict);
    } else {
        elk_node_set_state(node, (elk_node_state_t)verdict, now, ELK_OK);
    }
}

/* Send what is queued. Returns false when a write error failed the connection. */
static bool elk_node_send_out(elk_node_t *node, uint64_t now)
{
    int r = elk_node__io_flush(node);
    if (r < 0) {
        elk_node_down(node, now, r);
        return false;
    }
    return true;
}

/* The rest of a receive pass that did not end idle: judge each handshake reply between
 * reads, fail the connection on an error. Returns as elk_node_receive. */
static ELK_NODE_NOINLINE int elk_node_receive_rest(elk_node_t *node, uint64_t now,
                                                   elk_node__rx_t *rx, int v)
{
    while (v == ELK_NODE__RX_HANDSHAKE) {
        const uint32_t epoch = node->epoch;
        elk_node_hs_apply(node, now, elk_node__hs_reply(node, &rx->reply));
        if (node->epoch != epoch) {
            return -1;
        }
        elk_resp_reader_release(&node->reader);
        v = elk_node__io_pump(node, now, rx);
    }
    if (v < 0) {
        elk_node_fail(node, now, v, rx->head_status);
        return -1;
    }
    return v == ELK_NODE__RX_CLOSED ? -1 : v;
}

/* Read what the server sent. Returns > 0 when more may be waiting (poll again now), 0
 * when not, < 0 when the node failed or a callback closed it. */
static inline int elk_node_receive(elk_node_t *node, uint64_t now)
{
    elk_node__rx_t rx;
    int v;
    elk_node__io_rx_init(&rx);
    v = elk_node__io_pump(node, now, &rx);
    if (v == ELK_NODE__RX_IDLE || v == ELK_NODE__RX_MORE) {
        return v; /* the usual end: one test */
    }
    return elk_node_receive_rest(node, now, &rx, v);
}

/* CONNECTING: the transport connects (TCP, TLS); then the handshake starts. */
static void elk_node_step_connecting(elk_node_t *node, uint64_t now)
{
    int r;
    if (now >= elk_node_connect_deadline(node)) {
        elk_node_down(node, now, ELK_E_CONNECT_TIMEOUT);
        return;
    }
    r = node->transport.progress(node->transport.ctx);
    if (r < 0) {
        elk_node_down(node, now, r);
    } else if (r > 0) {
        elk_node_hs_apply(node, now, elk_node__hs_start(node));
    }
}

/* AUTH, HELLO, SELECT: send the command, read its reply. */
static int elk_node_step_handshake(elk_node_t *node, uint64_t now)
{
    if (now >= elk_node_connect_deadline(node)) {
        elk_node_down(node, now, ELK_E_CONNECT_TIMEOUT);
        return 0;
    }
    return elk_node_send_out(node, now) ? elk_node_receive(node, now) : 0;
}

/* Deadlines first: a reply read at or after its deadline must not count as on time
 * just because the caller polled late. One scan counts them all; any expired request
 * fails the connection. Returns true then. */
static bool elk_node_expire(elk_node_t *node, uint64_t now)
{
    uint32_t expired = 0;
    size_t i;
    for (i = 0; i < node->count; i++) {
        if (node->inflight[(node->head + i) % CONFIG_ELK_NODE_MAX_INFLIGHT].deadline <= now) {
            expired++;
        }
    }
    if (expired == 0u) {
        return false;
    }
    node->stats.timeouts += expired;
    elk_node_down(node, now, ELK_E_TIMEOUT);
    return true;
}

/* READY: expire late requests, send, read replies, send what their callbacks queued. */
static int elk_node_step_ready(elk_node_t *node, uint64_t now)
{
    /* Requests written before this call may have answers waiting; if every one in
     * flight goes out only now, none can, and a read would just return "nothing yet":
     * skip it (the descriptor wakes the caller's wait). An idle connection is still
     * read, so a close or a push is seen. */
    bool answers_possible;
    int more;
    if (elk_node_expire(node, now)) {
        return 0;
    }
    answers_possible = node->count > node->unsent || node->count == 0u;
    if (!elk_node_send_out(node, now) || (!answers_possible && node->tx_len == 0u)) {
        return 0;
    }
    more = elk_node_receive(node, now);
    if (more < 0 || node->state != ELK_NODE_READY) {
        return 0;
    }
    /* Requests sent from reply callbacks go out now rather than a poll later. */
    return elk_node_send_out(node, now) ? more : 0;
}

/* One step of the state machine. Returns > 0 when it should run again at once. */
static int elk_node_step(elk_node_t *node, uint64_t now)
{
    switch (node->state) {
    case ELK_NODE_DISCONNECTED:
        elk_node_connect(node, now);
        return 0;
    case ELK_NODE_BACKOFF:
        if (now >= node->next_attempt) {
            elk_node_connect(node, now);
        }
        return 0;
    case ELK_NODE_CONNECTING:
        elk_node_step_connecting(node, now);
        return 0;
    case ELK_NODE_AUTH:
    case ELK_NODE_HELLO:
    case ELK_NODE_SELECT:
        return elk_node_step_handshake(node, now);
    case ELK_NODE_READY:
        return elk_node_step_ready(node, now);
    default:
        return 0;
    }
}

static uint64_t elk_node_next_time(const elk_node_t *node, uint64_t now)
{
    uint64_t next = UINT64_MAX;
    size_t i;
    switch (node->state) {
    case ELK_NODE_DISCONNECTED:
        return now;
    case ELK_NODE_BACKOFF:
        return node->next_attempt;
    case ELK_NODE_CONNECTING:
    case ELK_NODE_AUTH:
    case ELK_NODE_HELLO:
    case ELK_NODE_SELECT:
        return elk_node_connect_deadline(node);
    case ELK_NODE_READY:
        for (i = 0; i < node->count; i++) {
            uint64_t d = node->inflight[(node->head + i) % CONFIG_ELK_NODE_MAX_INFLIGHT].deadline;
            if (d < next) {
                next = d;
            }
        }
        return next;
    default:
        return next;
    }
}

uint64_t elk_node_poll(elk_node_t *node, uint64_t now)
{
    int i;
    bool more = false;
    if (node == NULL) {
        return UINT64_MAX;
    }
    if (node->in_poll) {
        return now;
    }
    node->in_poll = 1;
    for (i = 0; i < ELK_NODE_POLL_STEPS; i++) {
        elk_node_state_t before = node->state;
        uint32_t epoch = node->epoch;
        more = elk_node_step(node, now) > 0;
        /* Keep going only while the connection moves forward in this call; a node that
         * went down waits for its backoff (or for the next poll after a close). */
        if (node->state == before || node->state == ELK_NODE_BACKOFF ||
            node->state == ELK_NODE_DISCONNECTED || node->epoch != epoch) {
            break;
        }
    }
    node->in_poll = 0;
    return more ? now : elk_node_next_time(node, now);
}

uint64_t elk_node_flush(elk_node_t *node, uint64_t now)
{
    if (node == NULL) {
        return UINT64_MAX;
    }
    if (node->in_poll) {
        return now;
    }
    if (node->state == ELK_NODE_READY) {
        node->in_poll = 1;
        (void)elk_node_send_out(node, now);
        node->in_poll = 0;
    }
    return elk_node_next_time(node, now);
}

int elk_node_wait(const elk_node_t *node, unsigned *events)
{
    unsigned ev = ELK_WAIT_NONE;
    int fd = -1;
    if (node != NULL && elk_node_is_open(node->state)) {
        if (node->transport.wait != NULL) {
            fd = node->transport.wait(node->transport.ctx, &ev);
        }
        if (node->state != ELK_NODE_CONNECTING) {
            ev |= ELK_WAIT_READ;
            if (node->tx_sent < node->tx_len) {
                ev |= ELK_WAIT_WRITE;
            }
        }
        if (fd < 0) {
            ev = ELK_WAIT_NONE;
        }
    }
    if (events != NULL) {
        *events = ev;
    }
    return fd;
}

void elk_node_close(elk_node_t *node, uint64_t now)
{
    if (node == NULL) {
        return;
    }
    elk_node_teardown(node);
    elk_node_set_state(node, ELK_NODE_DISCONNECTED, now, ELK_OK);
    elk_node_cancel_requests(node);
}

elk_node_state_t elk_node_state(const elk_node_t *node)
{
    return node != NULL ? node->state : ELK_NODE_DISCONNECTED;
}

bool elk_node_is_ready(const elk_node_t *node)
{
    return node != NULL && node->state == ELK_NODE_READY;
}

const elk_node_stats_t *elk_node_stats(const elk_node_t *node)
{
    return node != NULL ? &node->stats : NULL;
}

size_t elk_node_inflight(const elk_node_t *node)
{
    return node != NULL ? node->count : 0u;
}

void elk_node_on_push(elk_node_t *node, elk_node_push_fn fn, void *user)
{
    if (node != NULL) {
        node->on_push = fn;
        node->push_user = user;
    }
}

void elk_node_on_state(elk_node_t *node, elk_node_state_fn fn, void *user)
{
    if (node != NULL) {
        node->on_state = fn;
        node->state_user = user;
    }
}

void elk_node_set_subscriber(elk_node_t *node, bool on)
{
    if (node != NULL) {
        node->subscriber = on;
    }
}
