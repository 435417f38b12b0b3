/* SPDX-License-Identifier: MIT */
/*
 * RESP codec throughput: ours against hiredis (Debian libhiredis-dev) in the same run.
 *
 * Decoder: one byte stream of lock-client traffic (+OK, integers, nil, 32-byte bulk
 * tokens, small arrays, error replies) fed to both readers in 16 KiB chunks, as recv()
 * would hand it over. Encoder: SET ... NX PX and EVALSHA commands, ours into a fixed
 * buffer, hiredis's redisFormatCommandArgv. Best of several rounds; heap calls are
 * counted by the --wrap wrappers in support/alloc_count.c.
 *
 * Usage: bench_resp [replies] [rounds] [only]
 *   only = "ours" or "hiredis": run just that decoder, for a profiler (perf, callgrind).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "bench_stats.h"
#include "alloc_count.h"
#include "elk/resp.h"

#ifndef ELK_BENCH_BUILD_TYPE
#define ELK_BENCH_BUILD_TYPE ""
#endif

#define CHUNK (16u * 1024u)

static uint32_t lcg = 12345u;
static uint32_t rnd(void)
{
    lcg = lcg * 1664525u + 1013904223u;
    return lcg >> 8;
}

static void append(uint8_t **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n > *cap) {
        *cap = (*len + n) * 2;
        *buf = realloc(*buf, *cap);
        if (*buf == NULL) {
            abort();
        }
    }
    memcpy(*buf + *len, s, n);
    *len += n;
}

/* Lock traffic, per 20 replies: 6 +OK (SET NX won), 5 integers (release/renew 0/1,
 * fencing tokens), 3 nil (SET NX lost), 3 bulk tokens (GET of a lock value), 2 small
 * arrays (acquire script: {1, token}), 1 error reply. */
static uint8_t *build_stream(size_t replies, size_t *out_len)
{
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    char line[128];
    for (size_t i = 0; i < replies; i++) {
        uint32_t k = rnd() % 20u;
        int n;
        if (k < 6) {
            n = snprintf(line, sizeof line, "+OK\r\n");
        } else if (k < 11) {
            n = (k & 1u) ? snprintf(line, sizeof line, ":%u\r\n", rnd() & 1u)
                         : snprintf(line, sizeof line, ":%u%06u\r\n", 1700u + (rnd() % 100u),
                                    rnd() % 1000000u);
        } else if (k < 14) {
            n = snprintf(line, sizeof line, "$-1\r\n");
        } else if (k < 17) {
            n = snprintf(line, sizeof line, "$32\r\n%08x%08x%08x%08x\r\n", rnd(), rnd(), rnd(),
                         rnd());
        } else if (k < 19) {
            n = snprintf(line, sizeof line, "*2\r\n:1\r\n:%u\r\n", rnd() % 100000000u);
        } else {
            n = (rnd() & 1u)
                ? snprintf(line, sizeof line, "-NOSCRIPT No matching script. Please use EVAL.\r\n")
                : snprintf(
                      line, sizeof line,
                      "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
        }
        append(&buf, &len, &cap, line, (size_t)n);
    }
    *out_len = len;
    return buf;
}

typedef struct result {
    double secs;     /* best round */
    uint64_t allocs; /* heap calls in one round */
    size_t replies;  /* replies seen in one round */
    uint64_t sink;   /* keeps the work observable */
} result_t;

/* One row of a comparison: MB/s, items/s and heap calls per item of the best round r,
 * which handled bytes bytes in items items. */
static void print_rates(const char *name, double bytes, double items, const result_t *r)
{
    printf("  %-24s %10.1f %14.0f %14.3f\n", name, bytes / r->secs / 1e6, items / r->secs,
           (double)r->allocs / items);
}

/* Close one timed round started at t0 with the heap count a0: keep the best time, and
 * this round's heap calls, replies and sink (the clock is read first). */
static void res_round(result_t *res, double t0, uint64_t a0, size_t replies, uint64_t sink)
{
    double t = bench_now_s() - t0;
    if (res->secs == 0 || t < res->secs) {
        res->secs = t;
    }
    res->allocs = bench_alloc_count() - a0;
    res->replies = replies;
    res->sink += sink;
}

static uint8_t reader_buf[64u * 1024u];
static elk_resp_node_t reader_nodes[64];

static void run_ours(const uint8_t *s, size_t len, result_t *res)
{
    elk_resp_reader_t r;
    elk_resp_reply_t rep;
    size_t replies = 0;
    uint64_t sink = 0;
    uint64_t a0 = bench_alloc_count();
    double t0 = bench_now_s();
    elk_resp_reader_init(&r, reader_buf, sizeof reader_buf, reader_nodes, 64, 8);
    for (size_t off = 0; off < len;) {
        size_t chunk = len - off < CHUNK ? len - off : CHUNK;
        if (elk_resp_reader_feed(&r, s + off, chunk) != ELK_OK) {
            fprintf(stderr, "ours: feed failed\n");
            exit(1);
        }
        off += chunk;
        int rc;
        while ((rc = elk_resp_reader_next(&r, &rep)) == 1) {
            sink += rep.nodes[0].type + rep.count + (uint64_t)rep.nodes[rep.count - 1].integer +
                rep.nodes[0].len;
            replies++;
            elk_resp_reader_release(&r);
        }
        if (rc < 0) {
            fprintf(stderr, "ours: %s\n", elk_err_name(rc));
            exit(1);
        }
    }
    res_round(res, t0, a0, replies, sink);
}

static void run_hiredis(const uint8_t *s, size_t len, result_t *res)
{
    size_t replies = 0;
    uint64_t sink = 0;
    uint64_t a0 = bench_alloc_count();
    double t0 = bench_now_s();
    redisReader *h = redisReaderCreate();
    for (size_t off = 0; off < len;) {
        size_t chunk = len - off < CHUNK ? len - off : CHUNK;
        if (redisReaderFeed(h, (const char *)s + off, chunk) != REDIS_OK) {
            fprintf(stderr, "hiredis: feed failed\n");
            exit(1);
        }
        off += chunk;
        void *p;
        while (redisReaderGetReply(h, &p) == REDIS_OK && p != NULL) {
            redisReply *rep = p;
            long long last = rep->type == REDIS_REPLY_ARRAY
                ? rep->element[rep->elements - 1]->integer
                : rep->integer;
            sink += (uint64_t)rep->type + (rep->type == REDIS_REPLY_ARRAY ? rep->elements + 1 : 1) +
                (uint64_t)last + rep->len;
            replies++;
            freeReplyObject(rep);
        }
        if (h->err) {
            fprintf(stderr, "hiredis: %s\n", h->errstr);
            exit(1);
        }
    }
    redisReaderFree(h);
    res_round(res, t0, a0, replies, sink);
}

/* ---------------------------------------------------------------- encoder */

static const char value[] = "gw-0042:7f3a9c1e5b2d4f60a1c3e5f7";
static const char sha[] = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";

static void run_enc_ours(size_t cmds, result_t *res, size_t *bytes)
{
    static uint8_t out[512];
    uint64_t sink = 0;
    size_t total = 0;
    uint64_t a0 = bench_alloc_count();
    double t0 = bench_now_s();
    for (size_t i = 0; i < cmds; i++) {
        size_t n = 0;
        int rc;
        if (i & 1u) {
            const elk_resp_arg_t argv[] = {
                ELK_RESP_ARG_STR("SET"), ELK_RESP_ARG_STR("elk:{valve-7}"),
                ELK_RESP_ARG_STR(value), ELK_RESP_ARG_STR("NX"),
                ELK_RESP_ARG_STR("PX"),  elk_resp_arg_int(30000 + (int64_t)(i & 255u))};
            rc = elk_resp_encode_command(out, sizeof out, argv, 6, &n);
        } else {
            const elk_resp_arg_t argv[] = {
                ELK_RESP_ARG_STR("EVALSHA"), ELK_RESP_ARG_STR(sha),
                ELK_RESP_ARG_STR("1"),       ELK_RESP_ARG_STR("elk:{valve-7}"),
                ELK_RESP_ARG_STR(value),     elk_resp_arg_int(30000 + (int64_t)(i & 255u))};
            rc = elk_resp_encode_command(out, sizeof out, argv, 6, &n);
        }
        if (rc != ELK_OK) {
            fprintf(stderr, "ours: encode failed\n");
            exit(1);
        }
        sink += out[n - 3];
        total += n;
    }
    res_round(res, t0, a0, cmds, sink);
    *bytes = total;
}

static void run_enc_hiredis(size_t cmds, result_t *res, size_t *bytes)
{
    uint64_t sink = 0;
    size_t total = 0;
    uint64_t a0 = bench_alloc_count();
    double t0 = bench_now_s();
    for (size_t i = 0; i < cmds; i++) {
        char ttl[24];
        /* The caller has to format the integer itself: hiredis takes only strings. */
        int tl = snprintf(ttl, sizeof ttl, "%d", 30000 + (int)(i & 255u));
        const char *argv[6];
        size_t argvlen[6];
        if (i & 1u) {
            const char *a[6] = {"SET", "elk:{valve-7}", value, "NX", "PX", ttl};
            memcpy(argv, a, sizeof a);
        } else {
            const char *a[6] = {"EVALSHA", sha, "1", "elk:{valve-7}", value, ttl};
            memcpy(argv, a, sizeof a);
        }
        for (int k = 0; k < 5; k++) {
            argvlen[k] = strlen(argv[k]);
        }
        argvlen[5] = (size_t)tl;
        char *cmd = NULL;
        int n = redisFormatCommandArgv(&cmd, 6, argv, argvlen);
        if (n <= 0) {
            fprintf(stderr, "hiredis: format failed\n");
            exit(1);
        }
        sink += (uint8_t)cmd[n - 3];
        total += (size_t)n;
        redisFreeCommand(cmd);
    }
    res_round(res, t0, a0, cmds, sink);
    *bytes = total;
}

int main(int argc, char **argv)
{
    size_t replies = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    const char *only = argc > 3 ? argv[3] : NULL;
    size_t len = 0;
    uint8_t *stream = build_stream(replies, &len);
    result_t ours = {0}, hi = {0};
    if (only != NULL) {
        for (int i = 0; i < rounds; i++) {
            if (strcmp(only, "ours") == 0) {
                run_ours(stream, len, &ours);
            } else {
                run_hiredis(stream, len, &hi);
            }
        }
        result_t *x = strcmp(only, "ours") == 0 ? &ours : &hi;
        printf("%s: %.1f MB/s, %.0f replies/s\n", only, (double)len / x->secs / 1e6,
               (double)replies / x->secs);
        free(stream);
        return 0;
    }

    printf("bench_resp: build type \"%s\", bench compiled with -O2\n", ELK_BENCH_BUILD_TYPE);
    if (strcmp(ELK_BENCH_BUILD_TYPE, "Release") != 0) {
        printf("  WARNING: libelk is not a Release build; figures understate it\n");
    }
    printf(
        "decoder: %zu replies, %.1f MB of lock traffic, fed in %u KiB chunks, best of %d rounds\n",
        replies, (double)len / 1e6, CHUNK / 1024u, rounds);
    for (int i = 0; i < rounds; i++) {
        run_ours(stream, len, &ours);
        run_hiredis(stream, len, &hi);
    }
    if (ours.replies != replies || hi.replies != replies) {
        fprintf(stderr, "reply counts differ: ours %zu hiredis %zu of %zu\n", ours.replies,
                hi.replies, replies);
        return 1;
    }
    printf("  %-24s %10s %14s %14s\n", "", "MB/s", "replies/s", "allocs/reply");
    print_rates("elk_resp_reader", (double)len, (double)replies, &ours);
    print_rates("hiredis redisReader", (double)len, (double)replies, &hi);
    printf("  ratio elk/hiredis throughput: %.2fx\n", hi.secs / ours.secs);

    size_t cmds = replies / 2;
    size_t ob = 0, hb = 0;
    result_t eo = {0}, eh = {0};
    for (int i = 0; i < rounds; i++) {
        run_enc_ours(cmds, &eo, &ob);
        run_enc_hiredis(cmds, &eh, &hb);
    }
    if (ob != hb) {
        fprintf(stderr, "encoders wrote different sizes: %zu vs %zu\n", ob, hb);
        return 1;
    }
    printf("encoder: %zu commands (SET NX PX / EVALSHA, 6 args), %.1f MB, best of %d rounds\n",
           cmds, (double)ob / 1e6, rounds);
    printf("  %-24s %10s %14s %14s\n", "", "MB/s", "commands/s", "allocs/cmd");
    print_rates("elk_resp_encode_command", (double)ob, (double)cmds, &eo);
    print_rates("redisFormatCommandArgv", (double)hb, (double)cmds, &eh);
    printf("  ratio elk/hiredis throughput: %.2fx\n", eh.secs / eo.secs);
    printf("(checksums %llu %llu %llu %llu)\n", (unsigned long long)ours.sink,
           (unsigned long long)hi.sink, (unsigned long long)eo.sink, (unsigned long long)eh.sink);
    printf("reproduce: cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release && "
           "cmake --build build-bench -j2 --target bench_resp && "
           "build-bench/tests/bench/bench_resp %zu %d\n",
           replies, rounds);
    free(stream);
    return 0;
}
