/* SPDX-License-Identifier: MIT */
/*
 * Differential test: our RESP decoder and hiredis's reader parse the same stream of
 * random, valid RESP2 replies (deterministic from a seed), fed in random chunks, and
 * must agree on every reply: types, integers, string bytes, array sizes and order.
 *
 * Usage: diff_resp_hiredis [replies] [seed]
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "elk/resp.h"

#define MAX_DEPTH 6
#define READER_CAP (256u * 1024u)
#define READER_NODES 4096u

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* xorshift64*: fixed, portable, reproducible from the seed */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static uint32_t below(uint32_t n)
{
    return (uint32_t)(rnd() % n);
}

typedef struct out {
    uint8_t *p;
    size_t len, cap;
} out_t;

static void emit(out_t *o, const void *p, size_t n)
{
    if (o->len + n > o->cap) {
        o->cap = (o->len + n) * 2;
        o->p = realloc(o->p, o->cap);
        if (o->p == NULL) {
            abort();
        }
    }
    memcpy(o->p + o->len, p, n);
    o->len += n;
}

static void emit_str(out_t *o, const char *s)
{
    emit(o, s, strlen(s));
}

static void emit_line(out_t *o, char prefix, long long v)
{
    char line[32];
    int n = snprintf(line, sizeof line, "%c%lld\r\n", prefix, v);
    emit(o, line, (size_t)n);
}

enum { K_STATUS, K_ERROR, K_INT, K_BULK, K_NILBULK, K_NILARRAY, K_ARRAY, K_KINDS };
static unsigned long seen[K_KINDS];

static int64_t random_int(void)
{
    switch (below(10)) {
    case 8:
    case 9: {
        /* Every digit count from 1 to 19 equally often, either sign. */
        uint64_t mod = 10;
        for (uint32_t d = below(18); d > 0; d--) {
            mod *= 10;
        }
        int64_t v = (int64_t)(rnd() % mod % (uint64_t)INT64_MAX); /* so -v is defined */
        return below(2) ? v : -v;
    }
    case 0:
        return INT64_MAX;
    case 1:
        return INT64_MIN;
    case 2:
        return 0;
    case 3:
        return -1;
    case 4:
        return (int64_t)below(1000);
    case 5:
        return -(int64_t)below(1000000);
    default:
        return (int64_t)rnd();
    }
}

static void gen(out_t *o, int depth)
{
    /* Arrays more often near the top, so replies nest as deep as MAX_DEPTH. */
    int kind =
        depth < 2 && below(3) == 0 ? K_ARRAY : (int)below(depth < MAX_DEPTH ? K_KINDS : K_ARRAY);
    char text[64];
    seen[kind]++;
    switch (kind) {
    case K_STATUS:
    case K_ERROR: {
        static const char *errs[] = {"ERR unknown command", "WRONGTYPE Operation against a key",
                                     "NOSCRIPT No matching script. Please use EVAL.", "BUSY", ""};
        size_t n;
        if (kind == K_ERROR && below(2) == 0) {
            snprintf(text, sizeof text, "%s", errs[below(5)]);
            n = strlen(text);
        } else {
            n = below(48);
            for (size_t i = 0; i < n; i++) {
                text[i] = (char)(' ' + below(95)); /* printable: no CR or LF in a line */
            }
            text[n] = 0;
        }
        emit(o, kind == K_STATUS ? "+" : "-", 1);
        emit(o, text, n);
        emit(o, "\r\n", 2);
        break;
    }
    case K_INT:
        emit_line(o, ':', (long long)random_int());
        break;
    case K_BULK: {
        uint32_t n = below(8) == 0 ? below(2000) : below(40);
        emit_line(o, '$', n);
        for (uint32_t i = 0; i < n; i++) {
            /* Binary on purpose: CR, LF, NUL and '$' inside a bulk are data. */
            static const uint8_t tricky[] = {'\r', '\n', 0, '$', '*', 0xff};
            uint8_t b = below(4) == 0 ? tricky[below(sizeof tricky)] : (uint8_t)rnd();
            emit(o, &b, 1);
        }
        emit(o, "\r\n", 2);
        break;
    }
    case K_NILBULK:
        emit_str(o, "$-1\r\n");
        break;
    case K_NILARRAY:
        emit_str(o, "*-1\r\n");
        break;
    default: {
        uint32_t n = below(7);
        emit_line(o, '*', n);
        for (uint32_t i = 0; i < n; i++) {
            gen(o, depth + 1);
        }
        break;
    }
    }
}

static unsigned long compared_nodes;

/* Compares hiredis's reply with our nodes from *i on; returns 0 if they agree. */
static int compare(const redisReply *h, const elk_resp_node_t *nodes, size_t count, size_t *i)
{
    if (*i >= count) {
        fprintf(stderr, "ours has fewer nodes\n");
        return -1;
    }
    const elk_resp_node_t *n = &nodes[(*i)++];
    compared_nodes++;
    switch (h->type) {
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
    case REDIS_REPLY_STRING: {
        int want = h->type == REDIS_REPLY_STATUS ? ELK_RESP_SIMPLE
            : h->type == REDIS_REPLY_ERROR       ? ELK_RESP_ERROR
                                                 : ELK_RESP_BULK;
        if (n->type != want || n->len != h->len ||
            (h->len && memcmp(n->str, h->str, h->len) != 0)) {
            fprintf(stderr, "string mismatch: type %d/%d len %u/%zu\n", n->type, h->type, n->len,
                    (size_t)h->len);
            return -1;
        }
        return 0;
    }
    case REDIS_REPLY_INTEGER:
        if (n->type != ELK_RESP_INTEGER || n->integer != h->integer) {
            fprintf(stderr, "integer mismatch: %" PRId64 " vs %lld\n", n->integer, h->integer);
            return -1;
        }
        return 0;
    case REDIS_REPLY_NIL:
        if (n->type != ELK_RESP_NULL_BULK && n->type != ELK_RESP_NULL_ARRAY) {
            fprintf(stderr, "nil mismatch: our type %d\n", n->type);
            return -1;
        }
        return 0;
    case REDIS_REPLY_ARRAY: {
        size_t start = *i;
        if (n->type != ELK_RESP_ARRAY || (size_t)n->integer != h->elements) {
            fprintf(stderr, "array mismatch: type %d, %" PRId64 " vs %zu elements\n", n->type,
                    n->integer, (size_t)h->elements);
            return -1;
        }
        for (size_t k = 0; k < h->elements; k++) {
            if (compare(h->element[k], nodes, count, i) != 0) {
                return -1;
            }
        }
        if (*i - start != n->subtree) {
            fprintf(stderr, "subtree %u, walked %zu\n", n->subtree, *i - start);
            return -1;
        }
        return 0;
    }
    default:
        fprintf(stderr, "hiredis type %d unexpected\n", h->type);
        return -1;
    }
}

int main(int argc, char **argv)
{
    unsigned long replies = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    rng_state = rng_state * 0x9E3779B97F4A7C15ULL + 1; /* never 0 */

    out_t o = {0};
    for (unsigned long k = 0; k < replies; k++) {
        gen(&o, 0);
    }

    static uint8_t buf[READER_CAP];
    static elk_resp_node_t nodes[READER_NODES];
    elk_resp_reader_t r;
    if (elk_resp_reader_init(&r, buf, sizeof buf, nodes, READER_NODES, MAX_DEPTH + 1) != ELK_OK) {
        return 2;
    }
    redisReader *h = redisReaderCreate();
    unsigned long matched = 0;
    size_t off = 0;
    while (off < o.len) {
        size_t chunk = below(4) == 0 ? 1 + below(16) : 1 + below(8192);
        if (chunk > o.len - off) {
            chunk = o.len - off;
        }
        if (redisReaderFeed(h, (const char *)o.p + off, chunk) != REDIS_OK) {
            fprintf(stderr, "hiredis feed failed\n");
            return 1;
        }
        size_t end = off + chunk;
        while (off < end) {
            size_t avail = 0;
            elk_resp_reader_space(&r, &avail);
            size_t n = end - off < avail ? end - off : avail;
            if (elk_resp_reader_feed(&r, o.p + off, n) != ELK_OK) {
                fprintf(stderr, "our feed failed\n");
                return 1;
            }
            off += n;
            elk_resp_reply_t rep;
            int rc;
            while ((rc = elk_resp_reader_next(&r, &rep)) == 1) {
                void *hr = NULL;
                if (redisReaderGetReply(h, &hr) != REDIS_OK || hr == NULL) {
                    fprintf(stderr, "reply %lu: ours complete, hiredis not (%s)\n", matched,
                            h->errstr);
                    return 1;
                }
                size_t i = 0;
                if (compare(hr, rep.nodes, rep.count, &i) != 0 || i != rep.count) {
                    fprintf(stderr, "reply %lu differs (walked %zu of %zu nodes)\n", matched, i,
                            rep.count);
                    return 1;
                }
                freeReplyObject(hr);
                elk_resp_reader_release(&r);
                matched++;
            }
            if (rc < 0) {
                fprintf(stderr, "reply %lu: our decoder failed: %s\n", matched, elk_err_name(rc));
                return 1;
            }
        }
    }
    void *extra = NULL;
    if (redisReaderGetReply(h, &extra) != REDIS_OK || extra != NULL || r.len != 0) {
        fprintf(stderr, "leftover replies or bytes at the end\n");
        return 1;
    }
    redisReaderFree(h);
    free(o.p);

    printf("diff.resp_hiredis: %lu replies (%lu nodes, %zu bytes) agree; kinds:", matched,
           compared_nodes, o.len);
    for (int k = 0; k < K_KINDS; k++) {
        printf(" %lu", seen[k]);
        if (seen[k] == 0) {
            fprintf(stderr, "\nkind %d never generated: the test lost coverage\n", k);
            return 1;
        }
    }
    printf("\n");
    return matched == replies ? 0 : 1;
}
