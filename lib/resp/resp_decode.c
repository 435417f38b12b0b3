/* SPDX-License-Identifier: MIT */
/*
 * RESP reader: its buffer and its entry point.
 *
 * The reply being parsed starts at r->start; release only moves r->start (and
 * r->scan) past the reply, and the bytes still unparsed are moved to the front once,
 * when room is next asked for (space, feed) or the buffer is full. A burst of
 * pipelined replies then costs one memmove of its tail, not one per reply.
 * Where the fast path is built (resp_decode_fast.c), elk_resp_reader_next is its entry
 * and hands whatever it declines to elk_resp__next_slow, and so to the general parser
 * (resp_parse.c); elsewhere the elk_resp_reader_next below goes there directly.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elk/resp.h"
#include "resp_internal.h"

int elk_resp_reader_init(elk_resp_reader_t *r, uint8_t *buf, size_t cap, elk_resp_node_t *nodes,
                         size_t max_nodes, size_t max_depth)
{
    if (r == NULL || buf == NULL || cap == 0u || nodes == NULL || max_nodes == 0u ||
        max_depth == 0u) {
        return ELK_E_INVALID_ARG;
    }
    memset(r, 0, sizeof *r);
    r->buf = buf;
    r->cap = cap;
    r->nodes = nodes;
    /* frame.node and node.subtree are 32-bit. */
    r->max_nodes = max_nodes > UINT32_MAX ? UINT32_MAX : max_nodes;
    r->max_depth = max_depth > ELK_RESP_READER_MAX_DEPTH ? ELK_RESP_READER_MAX_DEPTH : max_depth;
    return ELK_OK;
}

void elk_resp_reader_reset(elk_resp_reader_t *r)
{
    if (r == NULL) {
        return;
    }
    r->len = 0;
    r->pos = 0;
    r->scan = 0;
    r->n_nodes = 0;
    r->depth = 0;
    r->error = ELK_OK;
    r->reply_out = false;
    r->in_body = false;
    r->body_end = 0;
    r->start = 0;
}

static bool elk_resp_is_string(uint8_t type)
{
    return type == ELK_RESP_SIMPLE || type == ELK_RESP_ERROR || type == ELK_RESP_BULK ||
        type == ELK_RESP_DOUBLE || type == ELK_RESP_BLOB_ERROR || type == ELK_RESP_VERBATIM ||
        type == ELK_RESP_BIGNUM;
}

/* Move the current reply (its parsed part and the bytes after it) to offset 0, and
 * the views of the nodes parsed so far with it. Not while a reply is out: the
 * caller still reads its views. */
static void elk_resp_compact(elk_resp_reader_t *r)
{
    size_t shift = r->start;
    size_t i;
    if (shift == 0u || r->reply_out) {
        return;
    }
    memmove(r->buf, r->buf + shift, r->len - shift);
    r->len -= shift;
    r->pos -= shift;
    r->scan -= shift;
    if (r->in_body) {
        r->body_end -= shift;
    }
    for (i = 0; i < r->n_nodes; i++) {
        elk_resp_node_t *n = &r->nodes[i];
        if (elk_resp_is_string(n->type) && n->str != NULL) {
            n->str -= shift;
        }
    }
    r->start = 0;
}

uint8_t *elk_resp_reader_space(elk_resp_reader_t *r, size_t *avail)
{
    if (r == NULL || avail == NULL) {
        if (avail != NULL) {
            *avail = 0;
        }
        return NULL;
    }
    elk_resp_compact(r);
    *avail = r->cap - r->len;
    return r->buf + r->len;
}

int elk_resp_reader_commit(elk_resp_reader_t *r, size_t n)
{
    if (r == NULL || n > r->cap - r->len) {
        return ELK_E_INVALID_ARG;
    }
    r->len += n;
    return ELK_OK;
}

int elk_resp_reader_feed(elk_resp_reader_t *r, const uint8_t *data, size_t len)
{
    if (r == NULL || (data == NULL && len != 0u)) {
        return ELK_E_INVALID_ARG;
    }
    /* Reclaim released bytes now, not only when out of room: the buffer then stays at
     * its front, in cache, and the move is only the tail of an unfinished reply. */
    elk_resp_compact(r);
    if (len > r->cap - r->len) {
        return ELK_E_RESP_TOO_LARGE;
    }
    if (len != 0u) {
        memcpy(r->buf + r->len, data, len);
        r->len += len;
    }
    return ELK_OK;
}

void elk_resp_reader_release(elk_resp_reader_t *r)
{
    /* Called once per reply, so it stores as little as it can: n_nodes and depth are
     * already 0 while a reply is out, and pos stands at its end (scan may lag: the
     * fast path leaves it). */
    if (r == NULL || !r->reply_out) {
        return;
    }
    r->reply_out = false;
    if (r->pos == r->len) {
        /* Nothing after the reply: start over at 0 with nothing to move. */
        r->len = 0;
        r->start = 0;
        r->pos = 0;
        r->scan = 0;
    } else {
        r->start = r->pos;
        r->scan = r->pos;
    }
}

int elk_resp__next_slow(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
    int rc;
    if (r->error != ELK_OK) {
        return r->error;
    }
    if (r->reply_out) {
        return ELK_E_STATE;
    }
    rc = elk_resp__parse(r);
    if (rc == 1) {
        out->nodes = r->nodes;
        out->count = r->n_nodes;
        /* The nodes are the caller's until release: none is being parsed. */
        r->n_nodes = 0;
        r->reply_out = true;
        return 1;
    }
    if (rc == 0 && r->len == r->cap) {
        if (r->start == 0u) {
            /* The whole buffer holds one unfinished reply: it cannot fit. */
            rc = ELK_E_RESP_TOO_LARGE;
        } else {
            elk_resp_compact(r);
        }
    }
    if (rc < 0) {
        r->error = rc;
    }
    return rc;
}

#if !ELK_RESP_FAST
/* Without the fast path every call goes the general way. With it, elk_resp_reader_next
 * is the fast path's own entry (resp_decode_fast.c): a call layer here cost about 3%
 * of decoder throughput (tests/bench/bench_resp). */
int elk_resp_reader_next(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
    if (r == NULL || out == NULL) {
        return ELK_E_INVALID_ARG;
    }
    return elk_resp__next_slow(r, out);
}
#endif
