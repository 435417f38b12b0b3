/* SPDX-License-Identifier: MIT */
/*
 * Differential test of the lease scripts: elk/lock_scripts.h (and fair waiting's,
 * elk/fair_scripts.h) as a real redis-server runs them (Lua) against port/sim's native
 * versions, on the same random sequence of calls.
 * The simulator's safety verdicts are only worth what its natives are: a native that
 * differs from the Lua (a lock-delay marker not honoured, a release that forgets it, a
 * counter raised where Redis would not) would let the simulator prove the wrong thing.
 *
 *     diff_scripts_sim OPS SEED
 *
 * After each call both replies are compared (the server's clock, the token's clock floor,
 * the fleet marker's creation time, run ids, uptimes and aof_enabled by shape only), then
 * the state of every key of the resource and the fleet marker: value, and expiry in
 * 30-second classes (no expiry, ~TTL, ~TTL + lock delay; nothing expires during a run).
 * A real redis-server on 127.0.0.1 (ephemeral port) is started and stopped here.
 * Exit 0 when all OPS calls agree; 1 with the first difference and a replay command.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "elk/fair_scripts.h"
#include "elk/lock_scripts.h"
#include "elk/resp.h"
#include "elk/sim.h"
#include "elk/sim_scripts.h"
#include "redis_proc.h"

#define TTL_MS 60000
#define DELAY_MS 30000

static elk_sim_core_t core;
static elk_sim_event_t evs[4096];
static elk_sim_net_t net;
static elk_sim_scripts_t scripts;
static elk_transport_t sim_t;

static void on_wake(void *user, uint8_t gw, uint64_t at)
{
    (void)user;
    (void)gw;
    (void)at;
}

static void sim_run_until(uint64_t t)
{
    elk_sim_event_t e;
    while (elk_sim_queue_peek_time(&core.queue) <= t && elk_sim_queue_pop(&core.queue, &e)) {
        core.now_us = e.at_us;
        (void)elk_sim_net_handle(&net, &e);
    }
    if (core.now_us < t) {
        core.now_us = t;
    }
}

static bool sim_setup(void)
{
    elk_sim_net_params_t p;
    elk_endpoint_t ep = {"127.0.0.1", (uint16_t)ELK_SIM_PORT_BASE, NULL};
    memset(&p, 0, sizeof p);
    p.delay_min_us = 10;
    p.delay_max_us = 10;
    p.retry_us = 50000;
    elk_sim_rng_seed(&core.rng, 1);
    if (elk_sim_queue_init(&core.queue, evs, 4096) != ELK_OK ||
        elk_sim_net_init(&net, &core, &p, 1, 1, on_wake, NULL) != ELK_OK) {
        return false;
    }
    elk_sim_scripts_init(&scripts, &net, false);
    if (elk_sim_net_set_scripts(&net, scripts.entry, ELK_SIM_EDGELOCK_SCRIPTS) != ELK_OK) {
        return false;
    }
    sim_t = elk_sim_net_transport(&net, 0, 0);
    if (sim_t.open(sim_t.ctx, &ep) != ELK_OK) {
        return false;
    }
    sim_run_until(core.now_us + 1000);
    return sim_t.progress(sim_t.ctx) == 1;
}

/* One command to the simulated node; its reply parsed by hiredis's reader (the caller
 * frees it), NULL if none came. */
static redisReply *sim_call(int argc, const char **argv)
{
    elk_resp_arg_t a[16];
    uint8_t buf[2048];
    size_t len;
    redisReader *rd = redisReaderCreate();
    void *reply = NULL;
    for (int i = 0; i < argc; i++) {
        a[i] = elk_resp_arg_cstr(argv[i]);
    }
    if (elk_resp_encode_command(buf, sizeof buf, a, (size_t)argc, &len) != ELK_OK ||
        sim_t.send(sim_t.ctx, buf, len) != (int32_t)len) {
        redisReaderFree(rd);
        return NULL;
    }
    for (int k = 0; k < 100 && reply == NULL; k++) {
        char in[2048];
        sim_run_until(core.now_us + 1000);
        int32_t n = sim_t.recv(sim_t.ctx, (uint8_t *)in, sizeof in);
        if (n > 0) {
            redisReaderFeed(rd, in, (size_t)n);
        }
        if (redisReaderGetReply(rd, &reply) != REDIS_OK) {
            break;
        }
    }
    redisReaderFree(rd);
    return reply;
}

/* ------------------------------------------------------------ canonical replies */

static bool all_digits(const char *s, size_t n, size_t min)
{
    if (n < min) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)s[i])) {
            return false;
        }
    }
    return true;
}

static void put(char *out, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(out);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + n, cap - n, fmt, ap);
    va_end(ap);
}

/* A clock reading: ms (about 1.7e12 on both servers) or us (about 1.7e15, ACQUIRE's TIME
 * and its token floor). Counters the calls raised above the clocks (COMMIT of tokens near
 * 9e15) stay exact. */
static bool is_clock(long long v)
{
    return v > 1000000000000LL && v < 5000000000000000LL;
}

/* A string with what differs between the servers replaced: a run of 40 hex digits (a run
 * id) "ID", a clock in decimal digits "T" (a fleet marker's "<id>@<ms>", a counter that
 * holds the token floor). */
static void canon_str(const char *s, size_t len, char *out, size_t cap)
{
    size_t i = 0;
    put(out, cap, "'");
    while (i < len) {
        size_t n = 0;
        while (i + n < len && isxdigit((unsigned char)s[i + n])) {
            n++;
        }
        if (n == 40) {
            put(out, cap, "ID");
        } else if (n > 0 && strspn(s + i, "0123456789") >= n && n <= 18 &&
                   is_clock(strtoll(s + i, NULL, 10))) {
            put(out, cap, "T");
        } else if (n > 0) {
            put(out, cap, "%.*s", (int)n, s + i);
        } else {
            put(out, cap, "%c", s[i]);
            n = 1;
        }
        i += n;
    }
    put(out, cap, "'");
}

/* The reply as text, with what legitimately differs between the two servers replaced by
 * its shape: a clock (is_clock) "T", a run id (40 hex digits) "ID" (in a marker too), an
 * uptime (digits, second element of PROBE) "UP". */
static void canon(const redisReply *r, char *out, size_t cap, bool probe)
{
    out[0] = '\0';
    if (r == NULL) {
        put(out, cap, "no reply");
        return;
    }
    switch (r->type) {
    case REDIS_REPLY_INTEGER:
        put(out, cap, is_clock(r->integer) ? "T" : "%lld", r->integer);
        break;
    case REDIS_REPLY_NIL:
        put(out, cap, "nil");
        break;
    case REDIS_REPLY_ERROR:
        put(out, cap, "err:%.*s", (int)strcspn(r->str, " "), r->str);
        break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
        canon_str(r->str, r->len, out, cap);
        break;
    case REDIS_REPLY_ARRAY:
        put(out, cap, "[");
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *e = r->element[i];
            char sub[256];
            bool id = probe && e->type == REDIS_REPLY_STRING && e->len == 40 &&
                all_digits(e->str, e->len, 40);
            bool up = probe && i == 1 && e->type == REDIS_REPLY_STRING && e->len > 0;
            if (probe && i == 3) {
                snprintf(sub, sizeof sub, "AOF"); /* how each server was started */
            } else if (id) {
                snprintf(sub, sizeof sub, "ID");
            } else if (up) {
                snprintf(sub, sizeof sub, "UP");
            } else {
                canon(e, sub, sizeof sub, false);
            }
            put(out, cap, "%s%s", i ? "," : "", sub);
        }
        put(out, cap, "]");
        break;
    default:
        put(out, cap, "type%d", r->type);
        break;
    }
}

/* ------------------------------------------------------------ the run */

typedef struct call {
    int argc;
    const char *argv[12];
    char num[4][24];
    bool probe;
    char what[160];
} call_t;

static const char *const values[] = {"gwA:01", "gwB:02", "gwC:03"};
/* fair waiters' ids (the last two equal in length, ordered by bytes on equal tickets) */
static const char *const waiters[] = {"gwA:q1", "gwB:q2", "gwC:q3", "gwB:q1"};
static const char *const K = "d:{r}";
static const char *const KF = "d:{r}:fence";
static const char *const KD = "d:{r}:delay";
static const char *const KC = "d:{r}:released";
static const char *const KM = "d:marker";
/* fleet marker values a server may hold: old format (no time), malformed times, a time
 * long ago, and an odd one with two "@" */
static const char *const markers[] = {
    "00112233445566778899aabbccddeeff", "x@", "x@12y", "x@1000", "@@1000", "id@1700000000000"};

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33) % n;
}

static void arg(call_t *c, const char *s)
{
    c->argv[c->argc++] = s;
}

static void num(call_t *c, long long v)
{
    int k = 0;
    while (k < 4 && c->num[k][0] != '\0') {
        k++;
    }
    snprintf(c->num[k], sizeof c->num[k], "%lld", v);
    arg(c, c->num[k]);
}

/* A random call: one of the lease scripts with random arguments, or a key lost the way
 * a crash or an expiry loses it. */
static void make_call(call_t *c)
{
    const char *v = values[rnd(3)];
    memset(c, 0, sizeof *c);
    switch (rnd(13)) {
    case 0:
    case 1:
        arg(c, "EVALSHA"), arg(c, ELK_LOCK_SCRIPT_ACQUIRE_SHA1), arg(c, "4");
        arg(c, K), arg(c, KF), arg(c, KD), arg(c, KM), arg(c, v), num(c, TTL_MS);
        arg(c, rnd(2) ? "1" : "0"), num(c, rnd(2) ? DELAY_MS : 0);
        /* the client's floor: none, one below the counters, one above every clock (all below 2^53, where Lua is exact) */
        num(c, rnd(3) == 0 ? 0 : rnd(2) ? 5 : 8900000000000000LL + rnd(1000));
        break;
    case 2:
        arg(c, "EVALSHA"), arg(c, ELK_LOCK_SCRIPT_EXTEND_SHA1), arg(c, "3");
        arg(c, K), arg(c, KD), arg(c, KM), arg(c, v), num(c, TTL_MS);
        num(c, rnd(2) ? DELAY_MS : 0);
        break;
    case 3:
        arg(c, "EVALSHA"), arg(c, ELK_LOCK_SCRIPT_RELEASE_SHA1), arg(c, "2");
        arg(c, K), arg(c, KD), arg(c, v), arg(c, KC);
        break;
    case 4:
        arg(c, "EVALSHA"), arg(c, ELK_LOCK_SCRIPT_COMMIT_SHA1), arg(c, "2");
        /* small tokens (below the counters' clock floor) or ones above every clock, so
         * that the next ACQUIRE's counter + 1 beats its floor */
        arg(c, K), arg(c, KF), arg(c, v);
        num(c, rnd(2) ? 1 + (long long)rnd(12) : 9000000000000000LL + rnd(1000));
        break;
    case 5:
        arg(c, "DEL"), arg(c, rnd(2) ? K : KD); /* the lease or its marker expired */
        break;
    case 6:
        arg(c, "EVAL"), arg(c, ELK_LOCK_SCRIPT_PROBE), arg(c, "1"), arg(c, "d:marker");
        arg(c, "00112233445566778899aabbccddeeff");
        c->probe = true;
        break;
    case 7:
        arg(c, "DEL"), arg(c, KM); /* a FLUSHALL, an eviction, an empty replica */
        break;
    case 8:
        /* EXTEND_BATCH: the lease twice, with two values (one may be the holder's, both,
         * or none), so each result is the key's own */
        arg(c, "EVALSHA"), arg(c, ELK_LOCK_SCRIPT_EXTEND_BATCH_SHA1), arg(c, "3");
        arg(c, KM), arg(c, K), arg(c, K), num(c, TTL_MS), arg(c, v), arg(c, values[rnd(3)]);
        break;
    case 9:
        /* RELEASE_BATCH: the lease and then the lease again or its marker, with two values
         * (the holder's or not), so each result is its own key's at that point */
        arg(c, "EVALSHA"), arg(c, ELK_LOCK_SCRIPT_RELEASE_BATCH_SHA1), arg(c, "2");
        arg(c, K), arg(c, rnd(2) ? K : KD), arg(c, v), arg(c, values[rnd(3)]);
        break;
    case 11:
        /* QUEUE_KEEP: a new ticket or a given one (below or above the sequence); the queue's
         * order shows in the rank and the head's id */
        arg(c, "EVALSHA"), arg(c, ELK_FAIR_SCRIPT_KEEP_SHA1), arg(c, "3");
        arg(c, "d:{r}:q"), arg(c, "d:{r}:qx"), arg(c, "d:{r}:qseq"), arg(c, waiters[rnd(4)]);
        num(c, rnd(2) ? 0 : 1 + (long long)rnd(12)), num(c, TTL_MS);
        break;
    case 12:
        arg(c, "EVALSHA"), arg(c, ELK_FAIR_SCRIPT_LEAVE_SHA1), arg(c, "2");
        arg(c, "d:{r}:q"), arg(c, "d:{r}:qx"), arg(c, waiters[rnd(4)]);
        break;
    default:
        arg(c, "SET"), arg(c, KM), arg(c, markers[rnd(6)]);
        break;
    }
    for (int i = 0; i < c->argc; i++) {
        const char *a = c->argv[i];
        put(c->what, sizeof c->what, "%s%.*s", i ? " " : "", strlen(a) > 20 ? 12 : (int)strlen(a),
            a);
    }
}

/* Expiry class of a key: -2 none, -1 no expiry, else the nearest multiple of 30 s. */
static long long pttl_class(long long p)
{
    return p < 0 ? p : (p + 15000) / 30000 * 30;
}

static void state_of(redisContext *rc, bool sim, char *out, size_t cap)
{
    static const char *const keys[] = {"d:{r}", "d:{r}:fence", "d:{r}:delay", "d:marker",
                                       "d:{r}:qseq"};
    out[0] = '\0';
    for (size_t k = 0; k < 5; k++) {
        const char *get[2] = {"GET", keys[k]};
        const char *pttl[2] = {"PTTL", keys[k]};
        redisReply *g = sim ? sim_call(2, get) : redisCommandArgv(rc, 2, get, NULL);
        redisReply *p = sim ? sim_call(2, pttl) : redisCommandArgv(rc, 2, pttl, NULL);
        char gv[128];
        canon(g, gv, sizeof gv, false);
        put(out, cap, "%s=%s/%lld ", keys[k], gv,
            p != NULL && p->type == REDIS_REPLY_INTEGER ? pttl_class(p->integer) : -99LL);
        freeReplyObject(g);
        freeReplyObject(p);
    }
}

int main(int argc, char **argv)
{
    long ops = argc > 1 ? atol(argv[1]) : 2000;
    unsigned long long seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    uint16_t port = elk_rp_free_port();
    elk_rp_opts_t o;
    memset(&o, 0, sizeof o);
    o.port = port;
    pid_t pid = elk_rp_spawn(&o);
    if (pid <= 0 || elk_rp_wait_tcp(pid, port, 10000) != 0) {
        fprintf(stderr, "diff_scripts_sim: redis-server did not start on port %u\n", port);
        return 1;
    }
    redisContext *rc = redisConnect("127.0.0.1", port);
    if (rc == NULL || rc->err || !sim_setup()) {
        fprintf(stderr, "diff_scripts_sim: setup failed\n");
        elk_rp_stop(pid, 2000);
        return 1;
    }
    const char *loads[] = {ELK_LOCK_SCRIPT_ACQUIRE,      ELK_LOCK_SCRIPT_EXTEND,
                           ELK_LOCK_SCRIPT_RELEASE,      ELK_LOCK_SCRIPT_COMMIT,
                           ELK_LOCK_SCRIPT_EXTEND_BATCH, ELK_LOCK_SCRIPT_RELEASE_BATCH,
                           ELK_FAIR_SCRIPT_KEEP,         ELK_FAIR_SCRIPT_LEAVE};
    for (size_t i = 0; i < sizeof loads / sizeof loads[0]; i++) {
        const char *a[3] = {"SCRIPT", "LOAD", loads[i]};
        freeReplyObject(redisCommandArgv(rc, 3, a, NULL));
        freeReplyObject(sim_call(3, a));
    }
    rng_state = seed;
    int rcode = 0;
    long i;
    for (i = 0; i < ops && rcode == 0; i++) {
        call_t c;
        char a[512], b[512], sa[512], sb[512];
        make_call(&c);
        redisReply *real = redisCommandArgv(rc, c.argc, c.argv, NULL);
        redisReply *sim = sim_call(c.argc, c.argv);
        canon(real, a, sizeof a, c.probe);
        canon(sim, b, sizeof b, c.probe);
        freeReplyObject(real);
        freeReplyObject(sim);
        state_of(rc, false, sa, sizeof sa);
        state_of(rc, true, sb, sizeof sb);
        if (strcmp(a, b) != 0 || strcmp(sa, sb) != 0) {
            printf("diff_scripts_sim: call %ld differs: %s\n  redis: %s  %s\n  sim:   %s  %s\n"
                   "replay: diff_scripts_sim %ld %llu\n",
                   i + 1, c.what, a, sa, b, sb, i + 1, seed);
            rcode = 1;
        }
    }
    if (rcode == 0) {
        printf("diff_scripts_sim: %ld calls, redis-server and port/sim agree (seed %llu)\n", ops,
               seed);
    }
    redisFree(rc);
    elk_rp_stop(pid, 2000);
    return rcode;
}
