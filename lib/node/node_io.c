/* SPDX-License-Identifier: MIT */
/* Node I/O: encode requests into the tx block, send, receive into the reply reader,
 * match replies to requests in order, route pushes. */
#include "node_internal.h"

#include <string.h>

/* recv calls one pump may make. Bounded so one chatty server cannot hold the loop;
 * high enough that TLS records buffered inside the transport (which would not wake
 * the descriptor again) are normally drained in the same poll. When it is hit, poll
 * returns "now" so the caller comes straight back. */
#define ELK_NODE_PUMP_RECVS 256

int elk_node__io_encode(elk_node_t *node, const elk_resp_arg_t *argv, size_t argc)
{
    size_t cap, len = 0;
    int r;
    if (node->tx == NULL) {
        return ELK_E_NOT_CONNECTED;
    }
    cap = elk_pool_block_size(node->pool);
    if (node->tx_sent == node->tx_len) {
        node->tx_sent = 0;
        node->tx_len = 0;
    }
    for (;;) {
        r = elk_resp_encode_command(node->tx + node->tx_len, cap - node->tx_len, argv, argc, &len);
        if (r != ELK_E_BUF_TOO_SMALL || len > cap || node->tx_sent == 0u) {
            break;
        }
        /* Room exists behind bytes already sent: slide the unsent tail to the front and
         * encode again (at most once: tx_sent is 0 from here). */
        memmove(node->tx, node->tx + node->tx_sent, node->tx_len - node->tx_sent);
        node->tx_len -= node->tx_sent;
        node->tx_sent = 0;
    }
    if (r == ELK_E_BUF_TOO_SMALL) {
        return len > cap ? ELK_E_BUF_TOO_SMALL : ELK_E_QUEUE_FULL;
    }
    if (r != ELK_OK) {
        return r;
    }
    node->tx_len += len;
    return ELK_OK;
}

/* Write tx bytes until the transport takes no more. Returns ELK_OK or its error. */
static ELK_NODE_NOINLINE int elk_node_io_write(elk_node_t *node)
{
    while (node->tx != NULL && node->tx_sent < node->tx_len) {
        size_t left = node->tx_len - node->tx_sent;
        int32_t n = node->transport.send(node->transport.ctx, node->tx + node->tx_sent, left);
        if (n == 0) {
            break;
        }
        if (n < 0) {
            return (int)n;
        }
        node->tx_sent += (size_t)n > left ? left : (size_t)n;
    }
    return ELK_OK;
}

int elk_node__io_flush(elk_node_t *node)
{
    /* Most calls find nothing to send: they return without setting up the loop. */
    if (node->tx_sent != node->tx_len) {
        int r = elk_node_io_write(node);
        if (r < 0) {
            return r;
        }
    }
    if (node->tx_sent == node->tx_len) {
        node->tx_sent = 0;
        node->tx_len = 0;
        node->unsent = 0;
    }
    return ELK_OK;
}

/* The pub/sub kind of reply element ti + 1 (the first of the array at ti): its index in
 * kinds (from ELK_NODE_KIND_CONFIRM on a (un)subscribe confirmation), or -1 if none. */
#define ELK_NODE_KIND_CONFIRM 3
static int elk_node_pubsub_kind(const elk_resp_reply_t *reply, size_t ti)
{
    static const char *const kinds[] = {"message",      "pmessage",    "smessage",
                                        "subscribe",    "unsubscribe", "psubscribe",
                                        "punsubscribe", "ssubscribe",  "sunsubscribe"};
    const elk_resp_node_t *n;
    int i;
    if (ti + 1u >= reply->count) {
        return -1;
    }
    n = &reply->nodes[ti + 1u];
    if (n->type != ELK_RESP_BULK && n->type != ELK_RESP_SIMPLE) {
        return -1;
    }
    for (i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++) {
        if (elk_resp_str_eq(n, kinds[i])) {
            return i;
        }
    }
    return -1;
}

/* A reply where none may come: the stream is out of step and every later match would
 * be wrong. */
static int elk_node_io_unexpected(elk_node_t *node)
{
    elk_node__log_line(node, ELK_LOG_ERROR, "reply with no request pending", "", ELK_OK);
    return ELK_E_UNEXPECTED_REPLY;
}

/* The in-order reply due to the oldest no-reply command, an error: the server refused
 * it. Logged with the server's text; the caller hands it to on_push. */
static void elk_node_io_log_refused(elk_node_t *node, const elk_resp_node_t *top)
{
    if (elk_node__log_on(node, ELK_LOG_WARN)) {
        char buf[ELK_NODE_LOG_LINE];
        elk_fmt_t f;
        elk_node__log_begin(node, &f, buf, sizeof buf);
        /* The advice first: a long server text is cut at the end of the line. */
        elk_fmt_str(&f,
                    "(UN)SUBSCRIBE refused (grant the channel pattern &<prefix>* or set "
                    "release_channel = off): ");
        elk_fmt_bytes(&f, top->str, top->len);
        elk_node__log_end(node, ELK_LOG_WARN, &f);
    }
}

/* Hand a reply to the oldest request in flight. Returns ELK_OK or
 * ELK_E_UNEXPECTED_REPLY (none was waiting). */
static int elk_node_io_answer(elk_node_t *node, uint64_t now, const elk_resp_reply_t *reply)
{
    elk_node_request_t req;
    if (node->count == 0u) {
        return elk_node_io_unexpected(node); /* a reply nobody asked for */
    }
    req = node->inflight[node->head];
    {
        uint64_t sent = node->sent_at[node->head];
        uint64_t rtt = now >= sent ? now - sent : 0u;
        node->stats.last_rtt_ms = rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt;
    }
    node->head = (uint16_t)((node->head + 1u) % CONFIG_ELK_NODE_MAX_INFLIGHT);
    node->count--;
    if (node->unsent > node->count) {
        node->unsent = node->count; /* answered, so it was written after all */
    }
    if (req.cb != NULL) {
        req.cb(req.user, node, ELK_OK, reply);
    }
    return ELK_OK;
}

/* Route rx->reply: a push to on_push, a handshake reply back to the caller, a refused
 * no-reply command to on_push, any other reply to its request. Returns ELK_OK,
 * ELK_NODE__RX_HANDSHAKE or a negative code. Callbacks may close the node; the caller
 * checks epoch. */
static int elk_node_io_route(elk_node_t *node, uint64_t now, elk_node__rx_t *rx)
{
    size_t ti = 0;
    const elk_resp_node_t *top = elk_resp_reply_top(&rx->reply, &ti);
    int kind;
    if (top == NULL) {
        rx->head_status = ELK_E_UNEXPECTED_REPLY; /* only attributes: the head's reply is bad */
        return ELK_E_UNEXPECTED_REPLY;
    }
    kind = top->type == ELK_RESP_PUSH || (node->subscriber && top->type == ELK_RESP_ARRAY)
        ? elk_node_pubsub_kind(&rx->reply, ti)
        : -1;
    /* A RESP3 push, or in subscriber mode a RESP2 pub/sub array: a confirmation answers
     * the oldest no-reply command, a message leaves them be. */
    if (top->type != ELK_RESP_PUSH && (top->integer < 1 || kind < 0)) {
        if (node->state == ELK_NODE_AUTH || node->state == ELK_NODE_HELLO ||
            node->state == ELK_NODE_SELECT) {
            return ELK_NODE__RX_HANDSHAKE;
        }
        /* nr_answered counts modulo 2^16 (no-reply commands queued are never more than
         * CONFIG_ELK_NODE_MAX_INFLIGHT replies apart). */
        if (node->nr_count == 0u || node->nr_due[node->nr_head] != node->nr_answered) {
            node->nr_answered++;
            return elk_node_io_answer(node, now, &rx->reply);
        }
        /* Its answer is due: only a refusal (an error) can be one. Never a request's:
         * every later reply would go to the request before its own. */
        if (!elk_resp_is_error(top)) {
            return elk_node_io_unexpected(node);
        }
        elk_node_io_log_refused(node, top);
        kind = ELK_NODE_KIND_CONFIRM;
    }
    if (kind >= ELK_NODE_KIND_CONFIRM && node->nr_count != 0u) {
        node->nr_head = (uint8_t)((node->nr_head + 1u) % ELK_NODE_MAX_NOREPLY);
        node->nr_count--;
    }
    if (node->on_push != NULL) {
        node->on_push(node->push_user, node, &rx->reply);
    }
    return ELK_OK;
}

/* Route every complete reply already read. Returns ELK_NODE__RX_IDLE when none is
 * left, another verdict or a negative code. */
static int elk_node_io_route_all(elk_node_t *node, uint64_t now, elk_node__rx_t *rx)
{
    const uint32_t epoch = node->epoch;
    for (;;) {
        int r = elk_resp_reader_next(&node->reader, &rx->reply);
        if (r == 0) {
            return ELK_NODE__RX_IDLE;
        }
        if (r < 0) {
            elk_node__log_line(node, ELK_LOG_ERROR, "bad reply, dropping the connection", "", r);
            rx->head_status = r;
            return r;
        }
        r = elk_node_io_route(node, now, rx);
        if (r != ELK_OK) {
            return r;
        }
        if (node->epoch != epoch) {
            return ELK_NODE__RX_CLOSED;
        }
        elk_resp_reader_release(&node->reader);
    }
}

/* One recv into the reader. Returns > 0 after bytes came in, 0 when none were waiting,
 * or a negative code. */
static int elk_node_io_recv(elk_node_t *node, uint64_t now, elk_node__rx_t *rx)
{
    size_t avail = 0;
    uint8_t *space = elk_resp_reader_space(&node->reader, &avail);
    int32_t n;
    if (space == NULL || avail == 0u) {
        elk_node__log_line(node, ELK_LOG_ERROR, "bad reply, dropping the connection", "",
                           ELK_E_RESP_TOO_LARGE);
        rx->head_status = ELK_E_RESP_TOO_LARGE;
        return ELK_E_RESP_TOO_LARGE;
    }
    n = node->transport.recv(node->transport.ctx, space, avail);
    if (n <= 0) {
        return (int)n;
    }
    if (elk_resp_reader_commit(&node->reader, (size_t)n > avail ? avail : (size_t)n) != ELK_OK) {
        return ELK_E_INTERNAL;
    }
    /* The caller's now may predate a preemption between its clock read and this recv: a
     * reply read late would look received early, and its server clock run ahead. */
    node->rx_at = now;
    if (node->cfg.clock != NULL && node->cfg.clock->now_ms != NULL) {
        uint64_t t = node->cfg.clock->now_ms(node->cfg.clock->ctx);
        node->rx_at = t > now ? t : now;
    }
    /* A short read took everything the transport had (platform.h): asking again would
     * only return "nothing yet" and cost a system call per poll. */
    rx->drained = (size_t)n < avail;
    return 1;
}

int elk_node__io_pump(elk_node_t *node, uint64_t now, elk_node__rx_t *rx)
{
    for (; rx->recvs < ELK_NODE_PUMP_RECVS; rx->recvs++) {
        int r = elk_node_io_route_all(node, now, rx);
        if (r != ELK_NODE__RX_IDLE || rx->drained) {
            return r;
        }
        r = elk_node_io_recv(node, now, rx);
        if (r <= 0) {
            return r;
        }
    }
    return ELK_NODE__RX_MORE;
}

size_t elk_node_tx_room(const elk_node_t *node)
{
    if (node == NULL || node->state != ELK_NODE_READY || node->tx == NULL) {
        return 0;
    }
    return elk_pool_block_size(node->pool) - (node->tx_len - node->tx_sent);
}

uint64_t elk_node_received_at(const elk_node_t *node)
{
    return node != NULL ? node->rx_at : 0u;
}

/* The checks and the encoding elk_node_send (noreply false) and elk_node_send_noreply
 * share. Returns ELK_OK or the error they return. */
static ELK_NODE_NOINLINE int elk_node_io_queue(elk_node_t *node, const elk_resp_arg_t *argv,
                                               size_t argc, bool noreply)
{
    if (node == NULL || argv == NULL || argc == 0u) {
        return ELK_E_INVALID_ARG;
    }
    if (node->state != ELK_NODE_READY) {
        return ELK_E_NOT_CONNECTED;
    }
    if (noreply ? node->nr_count >= ELK_NODE_MAX_NOREPLY
                : node->count >= CONFIG_ELK_NODE_MAX_INFLIGHT) {
        return ELK_E_QUEUE_FULL;
    }
    return elk_node__io_encode(node, argv, argc);
}

int elk_node_send(elk_node_t *node, uint64_t now, const elk_resp_arg_t *argv, size_t argc,
                  uint64_t deadline, elk_node_reply_fn cb, void *user)
{
    size_t slot;
    int r = elk_node_io_queue(node, argv, argc, false);
    if (r != ELK_OK) {
        return r;
    }
    slot = (node->head + node->count) % CONFIG_ELK_NODE_MAX_INFLIGHT;
    node->inflight[slot].cb = cb;
    node->inflight[slot].user = user;
    node->inflight[slot].deadline = deadline != 0u ? deadline : now + node->cfg.request_timeout_ms;
    node->sent_at[slot] = now;
    node->count++;
    node->unsent++;
    return ELK_OK;
}

int elk_node_send_noreply(elk_node_t *node, const elk_resp_arg_t *argv, size_t argc)
{
    int r = elk_node_io_queue(node, argv, argc, true);
    if (r == ELK_OK) {
        /* Its answer is due after those of every request queued so far. */
        node->nr_due[(node->nr_head + node->nr_count) % ELK_NODE_MAX_NOREPLY] =
            (uint16_t)(node->nr_answered + node->count);
        node->nr_count++;
    }
    return r;
}
