/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the RESP decoder.
 *
 * Input: 4 parameter bytes, then the byte stream.
 *   in[0]: bits 0-2 buffer capacity (table below), bits 3-6 max_depth - 1
 *   in[1]: bits 0-2 max_nodes (table below)
 *   in[2], in[3]: seed of the split points
 * The stream is parsed three ways: fed as far as the buffer allows (space + commit),
 * fed in pieces whose sizes come from the seed (feed), and one byte at a time. All
 * three must give the same replies (every node field and string byte) and end with
 * the same return code. Every reply is also checked for a well-formed preorder tree
 * with all views inside the buffer. The buffer is heap memory of exactly cap bytes
 * so ASan sees any read or write past it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elk/resp.h"

static const size_t caps[8] = {7, 16, 64, 300, 1024, 4096, 16384, 65536};
static const size_t node_limits[8] = {1, 2, 4, 16, 64, 256, 1024, 4096};

#define TRANSCRIPT_MAX (4u << 20)

typedef struct transcript {
    uint8_t *buf;
    size_t len;
    int rc;
    size_t replies;
} transcript_t;

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_resp_decode: %s\n", what);
    abort();
}

static void put(transcript_t *t, const void *p, size_t n)
{
    if (t->len + n > TRANSCRIPT_MAX) {
        fail("transcript overflow");
    }
    memcpy(t->buf + t->len, p, n);
    t->len += n;
}

static int is_string_type(uint8_t type)
{
    return type == ELK_RESP_SIMPLE || type == ELK_RESP_ERROR || type == ELK_RESP_BULK ||
        type == ELK_RESP_DOUBLE || type == ELK_RESP_BLOB_ERROR || type == ELK_RESP_VERBATIM ||
        type == ELK_RESP_BIGNUM;
}

static int is_aggregate(uint8_t type)
{
    return type == ELK_RESP_ARRAY || type == ELK_RESP_MAP || type == ELK_RESP_SET ||
        type == ELK_RESP_ATTRIBUTE || type == ELK_RESP_PUSH;
}

/* Checks the subtree rooted at i; returns the index after it. */
static size_t check_tree(const elk_resp_reply_t *rep, size_t i, const elk_resp_reader_t *r)
{
    if (i >= rep->count) {
        fail("tree runs past the node count");
    }
    const elk_resp_node_t *n = &rep->nodes[i];
    if (n->type < ELK_RESP_SIMPLE || n->type > ELK_RESP_PUSH) {
        fail("bad node type");
    }
    if (is_string_type(n->type)) {
        if (n->len != 0 && (n->str < r->buf || n->str + n->len > r->buf + r->len)) {
            fail("string view outside the buffer");
        }
    }
    if (!is_aggregate(n->type)) {
        if (n->subtree != 0) {
            fail("scalar with a subtree");
        }
        return i + 1;
    }
    if (n->integer < 0) {
        fail("negative child count");
    }
    if ((n->type == ELK_RESP_MAP || n->type == ELK_RESP_ATTRIBUTE) && (n->integer & 1) != 0) {
        fail("odd map size");
    }
    size_t j = i + 1;
    for (int64_t k = 0; k < n->integer;) {
        if (j >= rep->count) {
            fail("aggregate misses children");
        }
        int attr = rep->nodes[j].type == ELK_RESP_ATTRIBUTE;
        j = check_tree(rep, j, r);
        if (!attr) {
            k++;
        }
    }
    if (j - i - 1 != n->subtree) {
        fail("subtree count wrong");
    }
    return j;
}

static void record(transcript_t *t, const elk_resp_reply_t *rep, const elk_resp_reader_t *r)
{
    size_t i = 0;
    while (i < rep->count && rep->nodes[i].type == ELK_RESP_ATTRIBUTE) {
        i = check_tree(rep, i, r);
    }
    if (check_tree(rep, i, r) != rep->count) {
        fail("reply has nodes after its value");
    }
    put(t, &rep->count, sizeof rep->count);
    for (i = 0; i < rep->count; i++) {
        const elk_resp_node_t *n = &rep->nodes[i];
        uint8_t fmt[3] = {0, 0, 0};
        if (n->type == ELK_RESP_VERBATIM) {
            memcpy(fmt, n->format, 3);
        }
        put(t, &n->type, 1);
        put(t, &n->integer, sizeof n->integer);
        put(t, &n->subtree, sizeof n->subtree);
        put(t, &n->len, sizeof n->len);
        put(t, fmt, 3);
        if (is_string_type(n->type)) {
            put(t, n->str, n->len);
        }
    }
    t->replies++;
}

typedef enum { MODE_WHOLE, MODE_PIECES, MODE_BYTES } mode_t_;

static void run(transcript_t *t, const uint8_t *data, size_t size, size_t cap, size_t max_nodes,
                size_t max_depth, uint32_t seed, mode_t_ mode)
{
    uint8_t *buf = malloc(cap);
    elk_resp_node_t *nodes = malloc(max_nodes * sizeof *nodes);
    elk_resp_reader_t r;
    elk_resp_reply_t rep;
    size_t off = 0;
    int rc;
    if (buf == NULL || nodes == NULL) {
        fail("out of memory");
    }
    if (elk_resp_reader_init(&r, buf, cap, nodes, max_nodes, max_depth) != ELK_OK) {
        fail("init refused valid arguments");
    }
    t->len = 0;
    t->replies = 0;
    for (;;) {
        while ((rc = elk_resp_reader_next(&r, &rep)) == 1) {
            record(t, &rep, &r);
            if (elk_resp_reader_next(&r, &rep) != ELK_E_STATE) {
                fail("next without release was not refused");
            }
            elk_resp_reader_release(&r);
        }
        if (rc < 0) {
            if (elk_resp_reader_next(&r, &rep) != rc) {
                fail("error not sticky");
            }
            break;
        }
        if (rc != 0 || r.pos > r.len || r.scan > r.len || r.len >= cap) {
            fail("bad state after need-more");
        }
        if (off == size) {
            break;
        }
        size_t avail = 0;
        uint8_t *space = elk_resp_reader_space(&r, &avail);
        size_t n = size - off;
        if (mode == MODE_BYTES) {
            n = 1;
        } else if (mode == MODE_PIECES) {
            seed = seed * 1103515245u + 12345u;
            uint32_t x = seed >> 16;
            /* Mostly tiny pieces (where state is resumed), sometimes large ones. */
            n = (x & 3u) != 0u ? 1u + (x >> 2) % 8u : 1u + (x >> 2) % 512u;
        }
        if (n > avail) {
            n = avail;
        }
        if (n > size - off) {
            n = size - off;
        }
        if (mode == MODE_WHOLE) {
            memcpy(space, data + off, n);
            if (elk_resp_reader_commit(&r, n) != ELK_OK) {
                fail("commit refused");
            }
        } else if (elk_resp_reader_feed(&r, data + off, n) != ELK_OK) {
            fail("feed refused bytes that fit");
        }
        off += n;
    }
    t->rc = rc;
    free(nodes);
    free(buf);
}

static transcript_t whole, other;

/* The whole check on one input; aborts on any disagreement. Returns how many replies the
 * stream gave and stores the decoder's final return code in *rc (0: all consumed). Also
 * called by tests/unit/test_resp_fastpath.c with chosen streams. */
size_t fuzz_resp_decode_check(const uint8_t *in, size_t size, int *rc);

size_t fuzz_resp_decode_check(const uint8_t *in, size_t size, int *rc)
{
    *rc = 0;
    if (size < 4) {
        return 0;
    }
    if (whole.buf == NULL) {
        whole.buf = malloc(TRANSCRIPT_MAX);
        other.buf = malloc(TRANSCRIPT_MAX);
        if (whole.buf == NULL || other.buf == NULL) {
            fail("out of memory");
        }
    }
    size_t cap = caps[in[0] & 7u];
    size_t max_depth = 1u + ((in[0] >> 3) & 15u);
    size_t max_nodes = node_limits[in[1] & 7u];
    uint32_t seed = (uint32_t)in[2] | ((uint32_t)in[3] << 8);
    const uint8_t *data = in + 4;
    size -= 4;

    run(&whole, data, size, cap, max_nodes, max_depth, seed, MODE_WHOLE);
    run(&other, data, size, cap, max_nodes, max_depth, seed, MODE_PIECES);
    if (other.rc != whole.rc || other.replies != whole.replies || other.len != whole.len ||
        memcmp(other.buf, whole.buf, whole.len) != 0) {
        fail("pieces and whole disagree");
    }
    if (size <= 2048) {
        run(&other, data, size, cap, max_nodes, max_depth, seed, MODE_BYTES);
        if (other.rc != whole.rc || other.replies != whole.replies || other.len != whole.len ||
            memcmp(other.buf, whole.buf, whole.len) != 0) {
            fail("byte at a time and whole disagree");
        }
    }
    *rc = whole.rc;
    return whole.replies;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    int rc;
    (void)fuzz_resp_decode_check(in, size, &rc);
    return 0;
}
