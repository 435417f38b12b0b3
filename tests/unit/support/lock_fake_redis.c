/* SPDX-License-Identifier: MIT */
/* A tiny in-memory Redis for lease-engine unit tests (see lock_fake_redis.h). */
#include "lock_fake_redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elk/err.h"
#include "elk/fair_scripts.h"
#include "elk/lock_scripts.h"

static void lfr_old_marker(lfr_server_t *s, const char *key);

void lfr_init(lfr_server_t *s, const uint64_t *now)
{
    memset(s, 0, sizeof *s);
    s->now = now;
    s->scripts_loaded = false;
    s->maxmemory_policy = "noeviction";
    s->wall_offset_ms = 1700000000000; /* a wall clock, as TIME gives it */
    s->old_marker = true;
}

void lfr_flushall(lfr_server_t *s)
{
    memset(s->kv, 0, sizeof s->kv);
    memset(s->q, 0, sizeof s->q);
    s->old_marker = false;
}

/* A fleet in use for a day: whatever the key prefix, its marker was written by run 1's first
 * probe then, until the data is lost. */
static void lfr_old_marker(lfr_server_t *s, const char *key)
{
    if (s->old_marker && lfr_get(s, key) == NULL) {
        lfr_set(s, key, "0000000000000000000000000000000000000001@1699913600000", 0);
    }
}

size_t lfr_attach(lfr_server_t *s, fake_transport_t *ft)
{
    if (s->nconn >= LFR_CONNS) {
        abort();
    }
    s->conn[s->nconn] = ft;
    return s->nconn++;
}

static lfr_entry_t *lfr_find(lfr_server_t *s, const char *key)
{
    for (size_t i = 0; i < LFR_KEYS; i++) {
        lfr_entry_t *e = &s->kv[i];
        if (!e->used) {
            continue;
        }
        if (e->expire_at != 0 && *s->now >= e->expire_at) {
            e->used = false;
            continue;
        }
        if (strcmp(e->key, key) == 0) {
            return e;
        }
    }
    return NULL;
}

const char *lfr_get(lfr_server_t *s, const char *key)
{
    lfr_entry_t *e = lfr_find(s, key);
    return e ? e->val : NULL;
}

void lfr_set(lfr_server_t *s, const char *key, const char *val, uint64_t ttl_ms)
{
    lfr_entry_t *e = lfr_find(s, key);
    if (e == NULL) {
        for (size_t i = 0; i < LFR_KEYS && e == NULL; i++) {
            if (!s->kv[i].used) {
                e = &s->kv[i];
            }
        }
        if (e == NULL) {
            abort();
        }
    }
    e->used = true;
    snprintf(e->key, sizeof e->key, "%s", key);
    snprintf(e->val, sizeof e->val, "%s", val);
    e->expire_at = ttl_ms ? *s->now + ttl_ms : 0;
}

void lfr_del(lfr_server_t *s, const char *key)
{
    lfr_entry_t *e = lfr_find(s, key);
    if (e) {
        e->used = false;
    }
}

int64_t lfr_pttl(lfr_server_t *s, const char *key)
{
    lfr_entry_t *e = lfr_find(s, key);
    if (e == NULL) {
        return -2;
    }
    return e->expire_at ? (int64_t)(e->expire_at - *s->now) : -1;
}

int64_t lfr_int(lfr_server_t *s, const char *key)
{
    const char *v = lfr_get(s, key);
    return v ? strtoll(v, NULL, 10) : 0;
}

/* ---------------------------------------------------------------- replies */

static void lfr_out(lfr_server_t *s, size_t c, const char *txt, size_t len)
{
    if (s->hold) {
        if (s->held_len[c] + len > LFR_HELD) {
            abort();
        }
        memcpy(s->held[c] + s->held_len[c], txt, len);
        s->held_len[c] += len;
        return;
    }
    fake_transport_push_rx(s->conn[c], txt, len);
}

static void lfr_int_reply(lfr_server_t *s, size_t c, long long v)
{
    char b[32];
    int n = snprintf(b, sizeof b, ":%lld\r\n", v);
    lfr_out(s, c, b, (size_t)n);
}

/* The server's TIME in ms: the test clock, moved by the server's wall-clock offset. */
static long long lfr_time_ms(const lfr_server_t *s)
{
    return (long long)((int64_t)*s->now + s->wall_offset_ms);
}

/* The fleet marker's creation time in server ms, as ACQUIRE and EXTEND read it
 * ('@(%d+)$' of its value, 0 without), creating it ("@<ms>") when missing. */
static long long lfr_marker(lfr_server_t *s, const char *key)
{
    const char *m;
    const char *at;
    char v[32];
    lfr_old_marker(s, key);
    m = lfr_get(s, key);
    if (m == NULL) {
        snprintf(v, sizeof v, "@%lld", lfr_time_ms(s));
        lfr_set(s, key, v, 0);
        m = lfr_get(s, key);
    }
    at = strrchr(m, '@');
    if (at == NULL || at[1] == '\0' || strspn(at + 1, "0123456789") != strlen(at + 1)) {
        return 0;
    }
    return atoll(at + 1);
}

/* {result, server_us, marker_ms}: the reply of ACQUIRE and EXTEND (the test clock is in ms:
 * the microseconds are ms * 1000). */
static void lfr_pair_reply(lfr_server_t *s, size_t c, long long v, long long marker_ms)
{
    char b[96];
    int n = snprintf(b, sizeof b, "*3\r\n:%lld\r\n:%lld\r\n:%lld\r\n", v, lfr_time_ms(s) * 1000,
                     marker_ms);
    lfr_out(s, c, b, (size_t)n);
}

static void lfr_str_reply(lfr_server_t *s, size_t c, const char *prefix, const char *text)
{
    char b[256];
    int n = snprintf(b, sizeof b, "%s%s\r\n", prefix, text);
    lfr_out(s, c, b, (size_t)n);
}

static void lfr_bulk(char *b, size_t cap, size_t *len, const char *s)
{
    *len += (size_t)snprintf(b + *len, cap - *len, "$%zu\r\n%s\r\n", strlen(s), s);
}

void lfr_flush(lfr_server_t *s)
{
    for (size_t c = 0; c < s->nconn; c++) {
        if (s->held_len[c]) {
            fake_transport_push_rx(s->conn[c], s->held[c], s->held_len[c]);
            s->held_len[c] = 0;
        }
    }
}

/* ---------------------------------------------------------------- scripts */

static void lfr_arg(const fake_cmd_t *cmd, size_t i, char *out)
{
    size_t n = i < cmd->argc ? cmd->len[i] : 0;
    if (n >= LFR_STR) {
        n = LFR_STR - 1;
    }
    if (n) {
        memcpy(out, cmd->argv[i], n);
    }
    out[n] = '\0';
}

static void lfr_publish(lfr_server_t *s, const char *channel, const char *payload)
{
    s->publish++;
    for (size_t c = 0; c < s->nconn; c++) {
        if (s->sub[c][0] != '\0' && strcmp(s->sub[c], channel) == 0) {
            char b[512];
            size_t len = (size_t)snprintf(b, sizeof b, s->resp3[c] ? ">3\r\n" : "*3\r\n");
            lfr_bulk(b, sizeof b, &len, "message");
            lfr_bulk(b, sizeof b, &len, channel);
            lfr_bulk(b, sizeof b, &len, payload);
            fake_transport_push_rx(s->conn[c], b, len);
        }
    }
}

static void lfr_record(lfr_server_t *s, const char *which, const char *value, bool eval)
{
    if (s->nlog < LFR_LOG) {
        lfr_call_t *l = &s->log[s->nlog++];
        snprintf(l->which, sizeof l->which, "%s", which);
        snprintf(l->value, sizeof l->value, "%s", value);
        l->eval = eval;
        l->at = *s->now;
    }
}

/* The reply a test set in place of every script's (error_reply, then raw_reply): true when
 * one was sent, and the script's own reply must not be. */
static bool lfr_canned(lfr_server_t *s, size_t c)
{
    if (s->error_reply) {
        lfr_str_reply(s, c, "-", s->error_reply);
        return true;
    }
    if (s->raw_reply) {
        lfr_out(s, c, s->raw_reply, strlen(s->raw_reply));
        return true;
    }
    return false;
}

static void lfr_op(lfr_server_t *s, size_t c, const char *which, const char *key, const char *value)
{
    if (s->nops < LFR_OPS) {
        lfr_op_t *o = &s->ops[s->nops++];
        snprintf(o->which, sizeof o->which, "%s", which);
        /* cut to the record's size (a key or value longer than it is not a case the tests
         * ask about) */
        snprintf(o->key, sizeof o->key, "%.*s", (int)sizeof o->key - 1, key);
        snprintf(o->value, sizeof o->value, "%.*s", (int)sizeof o->value - 1, value);
        o->conn = c;
    }
}

/* A script call's KEYS (k[0..3], "" past numkeys) and ARGV (a[0..4]). */
typedef struct lfr_script_args {
    char k[4][LFR_STR];
    char a[5][LFR_STR];
} lfr_script_args_t;

/* KEYS: lock, fence, delay marker, fleet marker; ARGV: value, ttl, fencing, delay, the
 * client's token floor */
static void lfr_acquire(lfr_server_t *s, size_t c, const lfr_script_args_t *x)
{
    long long mk = lfr_marker(s, x->k[3]);
    s->last_floor = atoll(x->a[4]);
    if (lfr_get(s, x->k[0]) != NULL) {
        lfr_pair_reply(s, c, -1, mk);
        return;
    }
    if (lfr_get(s, x->k[2]) != NULL) {
        lfr_pair_reply(s, c, -2, mk);
        return;
    }
    lfr_set(s, x->k[0], x->a[0], (uint64_t)atoll(x->a[1]));
    if (strcmp(x->a[3], "0") != 0) {
        lfr_set(s, x->k[2], x->a[0], (uint64_t)(atoll(x->a[1]) + atoll(x->a[3])));
    }
    if (strcmp(x->a[2], "1") == 0) {
        /* max(counter + 1, TIME in us, ARGV[5]), unless the test turned the floor off */
        char v[32];
        long long n = lfr_int(s, x->k[1]) + 1;
        if (!s->no_token_floor && n < lfr_time_ms(s) * 1000) {
            n = lfr_time_ms(s) * 1000;
        }
        if (!s->no_token_floor && n < atoll(x->a[4])) {
            n = atoll(x->a[4]);
        }
        snprintf(v, sizeof v, "%lld", n);
        lfr_set(s, x->k[1], v, 0);
        lfr_pair_reply(s, c, n, mk);
        return;
    }
    lfr_pair_reply(s, c, 0, mk);
}

/* KEYS: lock, delay marker, fleet marker; ARGV: value, ttl, lock delay */
static void lfr_extend(lfr_server_t *s, size_t c, const lfr_script_args_t *x)
{
    long long mk = lfr_marker(s, x->k[2]);
    const char *v = lfr_get(s, x->k[0]);
    if (v != NULL && strcmp(v, x->a[0]) == 0) {
        lfr_set(s, x->k[0], x->a[0], (uint64_t)atoll(x->a[1]));
        if (strcmp(x->a[2], "0") != 0) {
            lfr_set(s, x->k[1], x->a[0], (uint64_t)(atoll(x->a[1]) + atoll(x->a[2])));
        }
        lfr_pair_reply(s, c, 1, mk);
        return;
    }
    lfr_pair_reply(s, c, 0, mk);
}

/* KEYS: lock, delay marker; ARGV: value, channel */
static void lfr_release(lfr_server_t *s, size_t c, const lfr_script_args_t *x)
{
    const char *v = lfr_get(s, x->k[1]);
    if (v != NULL && strcmp(v, x->a[0]) == 0) {
        lfr_del(s, x->k[1]);
    }
    v = lfr_get(s, x->k[0]);
    if (v != NULL && strcmp(v, x->a[0]) == 0) {
        lfr_del(s, x->k[0]);
        lfr_publish(s, x->a[1], x->a[0]);
        lfr_int_reply(s, c, 1);
        return;
    }
    lfr_int_reply(s, c, 0);
}

/* KEYS: lock, fence; ARGV: value, token */
static void lfr_commit(lfr_server_t *s, size_t c, const lfr_script_args_t *x)
{
    const char *v = lfr_get(s, x->k[0]);
    if (v == NULL || strcmp(v, x->a[0]) != 0) {
        lfr_int_reply(s, c, -1);
        return;
    }
    long long cur = lfr_int(s, x->k[1]);
    long long t = atoll(x->a[1]);
    if (t > cur) {
        lfr_set(s, x->k[1], x->a[1], 0);
        lfr_int_reply(s, c, t);
        return;
    }
    lfr_int_reply(s, c, cur);
}

/* EXTEND_BATCH: KEYS fleet marker, lock keys 1..n; ARGV ttl, values 1..n. Replies
 * {server_us, marker_ms, r_1 .. r_n}, each r_j as EXTEND's (no lock-delay marker). */
static void lfr_extend_batch(lfr_server_t *s, size_t c, const fake_cmd_t *cmd, size_t first)
{
    char nk[16], key[LFR_STR], val[LFR_STR], ttl[32];
    char b[4096];
    lfr_arg(cmd, first, nk);
    size_t numkeys = (size_t)atoi(nk);
    size_t n = numkeys > 0 ? numkeys - 1 : 0;
    lfr_arg(cmd, first + 1, key);
    long long mk = lfr_marker(s, key);
    lfr_arg(cmd, first + 1 + numkeys, ttl);
    lfr_arg(cmd, first + 2 + numkeys, val);
    lfr_record(s, "extendb", val, fake_cmd_is(cmd, "EVAL"));
    s->extend_batch_calls++;
    s->extend_batch_leases += (unsigned)n;
    if (lfr_canned(s, c)) {
        return;
    }
    size_t len = (size_t)snprintf(b, sizeof b, "*%zu\r\n:%lld\r\n:%lld\r\n", n + 2,
                                  lfr_time_ms(s) * 1000, mk);
    for (size_t j = 0; j < n; j++) {
        lfr_arg(cmd, first + 2 + j, key);
        lfr_arg(cmd, first + 2 + numkeys + j, val);
        const char *v = lfr_get(s, key);
        int ok = v != NULL && strcmp(v, val) == 0;
        lfr_op(s, c, "extendb", key, val);
        if (ok) {
            lfr_set(s, key, val, (uint64_t)atoll(ttl));
        }
        len += (size_t)snprintf(b + len, sizeof b - len, ":%d\r\n", ok);
    }
    lfr_out(s, c, b, len);
}

/* RELEASE_BATCH: KEYS lock keys 1..n; ARGV values 1..n. Replies {r_1 .. r_n}, each r_j as
 * RELEASE's (no lock-delay marker), publishing each released value on <key>:released. */
static void lfr_release_batch(lfr_server_t *s, size_t c, const fake_cmd_t *cmd, size_t first)
{
    char nk[16], key[LFR_STR], val[LFR_STR], ch[LFR_STR + 16];
    char b[4096];
    lfr_arg(cmd, first, nk);
    size_t n = (size_t)atoi(nk);
    lfr_arg(cmd, first + 1 + n, val);
    lfr_record(s, "releaseb", val, fake_cmd_is(cmd, "EVAL"));
    s->release_batch_calls++;
    s->release_batch_leases += (unsigned)n;
    if (lfr_canned(s, c)) {
        return;
    }
    size_t len = (size_t)snprintf(b, sizeof b, "*%zu\r\n", n);
    for (size_t j = 0; j < n; j++) {
        lfr_arg(cmd, first + 1 + j, key);
        lfr_arg(cmd, first + 1 + n + j, val);
        lfr_op(s, c, "releaseb", key, val);
        const char *v = lfr_get(s, key);
        int ok = v != NULL && strcmp(v, val) == 0;
        if (ok) {
            lfr_del(s, key);
            snprintf(ch, sizeof ch, "%s%s", key, ELK_LOCK_CHANNEL_SUFFIX);
            lfr_publish(s, ch, val);
        }
        len += (size_t)snprintf(b + len, sizeof b - len, ":%d\r\n", ok);
    }
    lfr_out(s, c, b, len);
}

static void lfr_queue_keep(lfr_server_t *s, size_t c, const lfr_script_args_t *x);
static void lfr_queue_leave(lfr_server_t *s, size_t c, const lfr_script_args_t *x);

/* Run script `which` with KEYS/ARGV starting at argument `first` of cmd. */
static void lfr_run(lfr_server_t *s, size_t c, const char *which, const fake_cmd_t *cmd,
                    size_t first)
{
    lfr_script_args_t x;
    char nk[16];
    size_t i;
    if (strcmp(which, "extendb") == 0) {
        lfr_extend_batch(s, c, cmd, first);
        return;
    }
    if (strcmp(which, "releaseb") == 0) {
        lfr_release_batch(s, c, cmd, first);
        return;
    }
    lfr_arg(cmd, first, nk);
    size_t numkeys = (size_t)atoi(nk);
    for (i = 0; i < 4; i++) {
        lfr_arg(cmd, first + 1 + i, x.k[i]);
        if (i > 0 && numkeys < i + 1) {
            x.k[i][0] = '\0';
        }
    }
    for (i = 0; i < 5; i++) {
        lfr_arg(cmd, first + 1 + i + numkeys, x.a[i]);
    }
    if (strncmp(which, "q", 1) == 0) { /* fair waiting: not a lease's call */
        if (strcmp(which, "qkeep") == 0) {
            lfr_queue_keep(s, c, &x);
        } else {
            lfr_queue_leave(s, c, &x);
        }
        return;
    }
    lfr_record(s, which, x.a[0], fake_cmd_is(cmd, "EVAL"));
    lfr_op(s, c, which, x.k[0], x.a[0]);
    if (strcmp(which, "acquire") == 0) {
        s->acquire_calls++;
    } else if (strcmp(which, "extend") == 0) {
        s->extend_calls++;
    } else if (strcmp(which, "release") == 0) {
        s->release_calls++;
    } else {
        s->commit_calls++;
    }
    if (lfr_canned(s, c)) {
        return;
    }
    if (strcmp(which, "acquire") == 0) {
        lfr_acquire(s, c, &x);
    } else if (strcmp(which, "extend") == 0) {
        lfr_extend(s, c, &x);
    } else if (strcmp(which, "release") == 0) {
        lfr_release(s, c, &x);
    } else {
        lfr_commit(s, c, &x);
    }
}

/* ---------------------------------------------------------------- fair waiting */

const lfr_qmember_t *lfr_queue_find(lfr_server_t *s, const char *qkey, const char *id)
{
    for (size_t i = 0; i < LFR_QMEMBERS; i++) {
        const lfr_qmember_t *m = &s->q[i];
        if (m->used && strcmp(m->qkey, qkey) == 0 && strcmp(m->id, id) == 0) {
            return m;
        }
    }
    return NULL;
}

size_t lfr_queue_len(lfr_server_t *s, const char *qkey)
{
    size_t n = 0;
    for (size_t i = 0; i < LFR_QMEMBERS; i++) {
        const lfr_qmember_t *m = &s->q[i];
        n += m->used && strcmp(m->qkey, qkey) == 0 && m->expire_ms > lfr_time_ms(s) ? 1u : 0u;
    }
    return n;
}

/* ZRANK order: by ticket, then by id. */
static bool lfr_q_before(const lfr_qmember_t *a, const lfr_qmember_t *b)
{
    return a->ticket < b->ticket || (a->ticket == b->ticket && strcmp(a->id, b->id) < 0);
}

/* QUEUE_KEEP. KEYS: queue, expiries, sequence; ARGV: id, ticket (0: new), ttl. */
static void lfr_queue_keep(lfr_server_t *s, size_t c, const lfr_script_args_t *x)
{
    long long now = lfr_time_ms(s), t = atoll(x->a[1]), rank = 0;
    lfr_qmember_t *me = NULL, *head = NULL;
    char v[32];
    s->keep_calls++;
    for (size_t i = 0; i < LFR_QMEMBERS; i++) { /* expired members leave */
        if (s->q[i].used && strcmp(s->q[i].qkey, x->k[0]) == 0 && s->q[i].expire_ms <= now) {
            s->q[i].used = false;
        }
    }
    if (t == 0) {
        t = lfr_int(s, x->k[2]) + 1; /* INCR */
    }
    if (lfr_int(s, x->k[2]) < t) { /* a given ticket raises the sequence */
        snprintf(v, sizeof v, "%lld", t);
        lfr_set(s, x->k[2], v, 0);
    }
    me = (lfr_qmember_t *)lfr_queue_find(s, x->k[0], x->a[0]);
    for (size_t i = 0; i < LFR_QMEMBERS && me == NULL; i++) {
        me = s->q[i].used ? NULL : &s->q[i];
    }
    if (me == NULL) {
        abort();
    }
    me->used = true;
    snprintf(me->qkey, sizeof me->qkey, "%.*s", (int)sizeof me->qkey - 1, x->k[0]);
    snprintf(me->id, sizeof me->id, "%.*s", (int)sizeof me->id - 1, x->a[0]);
    me->ticket = t;
    me->expire_ms = now + atoll(x->a[2]);
    for (size_t i = 0; i < LFR_QMEMBERS; i++) {
        lfr_qmember_t *m = &s->q[i];
        if (!m->used || strcmp(m->qkey, x->k[0]) != 0) {
            continue;
        }
        rank += lfr_q_before(m, me) ? 1 : 0;
        head = head == NULL || lfr_q_before(m, head) ? m : head;
    }
    char b[160];
    size_t len = (size_t)snprintf(b, sizeof b, "*3\r\n:%lld\r\n:%lld\r\n", t, rank);
    lfr_bulk(b, sizeof b, &len, head->id);
    lfr_out(s, c, b, len);
}

/* QUEUE_LEAVE. KEYS: queue, expiries; ARGV: id. */
static void lfr_queue_leave(lfr_server_t *s, size_t c, const lfr_script_args_t *x)
{
    lfr_qmember_t *m = (lfr_qmember_t *)lfr_queue_find(s, x->k[0], x->a[0]);
    s->leave_calls++;
    if (m != NULL) {
        m->used = false;
    }
    lfr_int_reply(s, c, m != NULL ? 1 : 0);
}

static const char *lfr_by_sha(const char *sha)
{
    if (strcmp(sha, ELK_FAIR_SCRIPT_KEEP_SHA1) == 0)
        return "qkeep";
    if (strcmp(sha, ELK_FAIR_SCRIPT_LEAVE_SHA1) == 0)
        return "qleave";
    if (strcmp(sha, ELK_LOCK_SCRIPT_ACQUIRE_SHA1) == 0)
        return "acquire";
    if (strcmp(sha, ELK_LOCK_SCRIPT_EXTEND_SHA1) == 0)
        return "extend";
    if (strcmp(sha, ELK_LOCK_SCRIPT_RELEASE_SHA1) == 0)
        return "release";
    if (strcmp(sha, ELK_LOCK_SCRIPT_COMMIT_SHA1) == 0)
        return "commit";
    if (strcmp(sha, ELK_LOCK_SCRIPT_EXTEND_BATCH_SHA1) == 0)
        return "extendb";
    if (strcmp(sha, ELK_LOCK_SCRIPT_RELEASE_BATCH_SHA1) == 0)
        return "releaseb";
    return NULL;
}

static const char *lfr_by_text(const fake_cmd_t *cmd, size_t i)
{
    static const struct {
        const char *text;
        const char *name;
    } t[] = {
        {ELK_LOCK_SCRIPT_ACQUIRE, "acquire"},      {ELK_LOCK_SCRIPT_EXTEND, "extend"},
        {ELK_LOCK_SCRIPT_RELEASE, "release"},      {ELK_LOCK_SCRIPT_COMMIT, "commit"},
        {ELK_LOCK_SCRIPT_EXTEND_BATCH, "extendb"}, {ELK_LOCK_SCRIPT_RELEASE_BATCH, "releaseb"},
        {ELK_FAIR_SCRIPT_KEEP, "qkeep"},           {ELK_FAIR_SCRIPT_LEAVE, "qleave"},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        if (cmd->len[i] == strlen(t[k].text) && memcmp(cmd->argv[i], t[k].text, cmd->len[i]) == 0) {
            return t[k].name;
        }
    }
    return NULL;
}

/* The safety check's INFO script (not a lock script): maxmemory-policy and AOF. */
static void lfr_safety(lfr_server_t *s, size_t c)
{
    s->info++;
    if (s->info_disabled) {
        lfr_str_reply(s, c, "-",
                      "ERR The user executing the script can't run this command or subcommand");
        return;
    }
    char b[256];
    size_t len = (size_t)snprintf(b, sizeof b, "*2\r\n");
    lfr_bulk(b, sizeof b, &len, s->maxmemory_policy);
    lfr_bulk(b, sizeof b, &len, s->aof ? "1" : "0");
    lfr_out(s, c, b, len);
}

/* SCRIPT LOAD: the known scripts' SHA1s ("0" for any other). */
static void lfr_script_load(lfr_server_t *s, size_t c, const fake_cmd_t *cmd)
{
    s->script_load++;
    if (!s->forget_scripts) {
        s->scripts_loaded = true;
    }
    const char *which = cmd->argc > 2 ? lfr_by_text(cmd, 2) : NULL;
    const char *sha = which == NULL      ? "0"
        : strcmp(which, "acquire") == 0  ? ELK_LOCK_SCRIPT_ACQUIRE_SHA1
        : strcmp(which, "extend") == 0   ? ELK_LOCK_SCRIPT_EXTEND_SHA1
        : strcmp(which, "release") == 0  ? ELK_LOCK_SCRIPT_RELEASE_SHA1
        : strcmp(which, "extendb") == 0  ? ELK_LOCK_SCRIPT_EXTEND_BATCH_SHA1
        : strcmp(which, "releaseb") == 0 ? ELK_LOCK_SCRIPT_RELEASE_BATCH_SHA1
        : strcmp(which, "qkeep") == 0    ? ELK_FAIR_SCRIPT_KEEP_SHA1
        : strcmp(which, "qleave") == 0   ? ELK_FAIR_SCRIPT_LEAVE_SHA1
                                         : ELK_LOCK_SCRIPT_COMMIT_SHA1;
    char b[64];
    size_t len = 0;
    lfr_bulk(b, sizeof b, &len, sha);
    lfr_out(s, c, b, len);
}

/* CONFIG GET of the safety check's settings. */
static void lfr_config_get(lfr_server_t *s, size_t c, const fake_cmd_t *cmd)
{
    char a[LFR_STR];
    s->config_get++;
    if (s->config_disabled) {
        lfr_str_reply(s, c, "-", "ERR unknown command 'CONFIG'");
        return;
    }
    lfr_arg(cmd, 2, a);
    const char *val = strcmp(a, "maxmemory-policy") == 0 ? s->maxmemory_policy
        : strcmp(a, "appendonly") == 0                   ? "no"
                                                         : "everysec";
    char b[256];
    size_t len = (size_t)snprintf(b, sizeof b, "*2\r\n");
    lfr_bulk(b, sizeof b, &len, a);
    lfr_bulk(b, sizeof b, &len, val);
    lfr_out(s, c, b, len);
}

static void lfr_exec(lfr_server_t *s, size_t c, const fake_cmd_t *cmd)
{
    char a[LFR_STR];
    if (fake_cmd_is(cmd, "EVALSHA")) {
        s->evalsha++;
        lfr_arg(cmd, 1, a);
        const char *which = lfr_by_sha(a);
        if (!s->scripts_loaded || which == NULL) {
            s->noscript++;
            lfr_str_reply(s, c, "-", "NOSCRIPT No matching script. Please use EVAL.");
            return;
        }
        lfr_run(s, c, which, cmd, 2);
    } else if (fake_cmd_is(cmd, "EVAL") && cmd->argc > 1 &&
               cmd->len[1] == strlen(ELK_LOCK_SCRIPT_SAFETY) &&
               memcmp(cmd->argv[1], ELK_LOCK_SCRIPT_SAFETY, cmd->len[1]) == 0) {
        lfr_safety(s, c);
    } else if (fake_cmd_is(cmd, "EVAL")) {
        s->eval++;
        const char *which = lfr_by_text(cmd, 1);
        if (which == NULL) {
            lfr_str_reply(s, c, "-", "ERR unknown script in fake");
            return;
        }
        if (!s->forget_scripts) {
            s->scripts_loaded = true; /* EVAL caches the script, as Redis does */
        }
        lfr_run(s, c, which, cmd, 2);
    } else if (fake_cmd_is(cmd, "SCRIPT")) {
        lfr_script_load(s, c, cmd);
    } else if (fake_cmd_is(cmd, "CONFIG")) {
        lfr_config_get(s, c, cmd);
    } else if (fake_cmd_is(cmd, "HELLO")) {
        s->resp3[c] = true;
        lfr_out(s, c, "%1\r\n$5\r\nproto\r\n:3\r\n", strlen("%1\r\n$5\r\nproto\r\n:3\r\n"));
    } else if (fake_cmd_is(cmd, "SUBSCRIBE") || fake_cmd_is(cmd, "UNSUBSCRIBE")) {
        bool sub = fake_cmd_is(cmd, "SUBSCRIBE");
        s->subscribe += sub ? 1u : 0u;
        if (sub && s->sub_refused) {
            lfr_str_reply(s, c, "-",
                          "NOPERM this user has no permissions to access one of the "
                          "channels used as arguments");
            return;
        }
        lfr_arg(cmd, 1, a);
        snprintf(s->sub[c], sizeof s->sub[c], "%s", sub ? a : "");
        char b[256];
        size_t len = (size_t)snprintf(b, sizeof b, s->resp3[c] ? ">3\r\n" : "*3\r\n");
        lfr_bulk(b, sizeof b, &len, sub ? "subscribe" : "unsubscribe");
        lfr_bulk(b, sizeof b, &len, a);
        len += (size_t)snprintf(b + len, sizeof b - len, ":%d\r\n", sub ? 1 : 0);
        fake_transport_push_rx(s->conn[c], b, len);
    } else {
        lfr_str_reply(s, c, "-", "ERR unknown command in fake");
    }
}

/* ---------------------------------------------------------------- vote hygiene */

void lfr_restart(lfr_server_t *s, bool keep_data)
{
    s->run++;
    s->restarted = true;
    s->restarted_at = *s->now;
    s->scripts_loaded = false;
    if (!keep_data) {
        memset(s->kv, 0, sizeof s->kv);
        memset(s->q, 0, sizeof s->q);
        s->old_marker = false;
    }
    for (size_t c = 0; c < s->nconn; c++) {
        s->resp3[c] = false;
        s->sub[c][0] = '\0';
        s->held_len[c] = 0;
        fake_cmd_t cmd;
        while (fake_transport_pop_command(s->conn[c], &cmd) == 1) {
            /* sent to the old process: lost */
        }
        if (s->conn[c]->is_open) {
            fake_transport_clear_rx(s->conn[c]);
            fake_transport_push_rx_result(s->conn[c], ELK_E_CLOSED);
        }
    }
}

/* EVAL of ELK_LOCK_SCRIPT_PROBE (KEYS[1] marker, ARGV[1] random id): returns true when cmd
 * was the probe (and is answered). */
static bool lfr_probe(lfr_server_t *s, size_t c, const fake_cmd_t *cmd)
{
    if (!fake_cmd_is(cmd, "EVAL") || cmd->argc != 5 ||
        cmd->len[1] != strlen(ELK_LOCK_SCRIPT_PROBE) ||
        memcmp(cmd->argv[1], ELK_LOCK_SCRIPT_PROBE, cmd->len[1]) != 0) {
        return false;
    }
    s->probe++;
    if (s->probe_raw != NULL) {
        lfr_out(s, c, s->probe_raw, strlen(s->probe_raw));
        return true;
    }
    char key[LFR_STR], id[LFR_STR], run_id[48] = "", uptime[24] = "", marker[LFR_STR] = "";
    lfr_arg(cmd, 3, key);
    lfr_arg(cmd, 4, id);
    if (!s->probe_no_info) {
        uint64_t up = (*s->now - s->restarted_at) / 1000u + (s->restarted ? 0u : 86400u);
        snprintf(run_id, sizeof run_id, "%040u", s->run + 1u);
        snprintf(uptime, sizeof uptime, "%llu", (unsigned long long)up);
    }
    lfr_old_marker(s, key);
    const char *m = lfr_get(s, key);
    if (m != NULL) {
        snprintf(marker, sizeof marker, "%s", m);
    } else {
        char made[LFR_STR];
        snprintf(made, sizeof made, "%.60s@%lld", run_id[0] != '\0' ? run_id : id, lfr_time_ms(s));
        lfr_set(s, key, made, 0);
    }
    char b[512];
    size_t len = (size_t)snprintf(b, sizeof b, "*5\r\n");
    lfr_bulk(b, sizeof b, &len, run_id);
    lfr_bulk(b, sizeof b, &len, uptime);
    lfr_bulk(b, sizeof b, &len, marker);
    lfr_bulk(b, sizeof b, &len, s->probe_no_info ? "" : s->aof ? "1" : "0");
    len += (size_t)snprintf(b + len, sizeof b - len, ":%lld\r\n", (long long)lfr_time_ms(s));
    lfr_out(s, c, b, len);
    return true;
}

size_t lfr_serve(lfr_server_t *s)
{
    size_t n = 0;
    for (size_t c = 0; c < s->nconn; c++) {
        fake_cmd_t cmd;
        int r;
        while ((r = fake_transport_pop_command(s->conn[c], &cmd)) == 1) {
            n++;
            if (!s->silent && !lfr_probe(s, c, &cmd)) {
                lfr_exec(s, c, &cmd);
            }
        }
        if (r < 0) {
            fprintf(stderr, "lock_fake_redis: malformed RESP from the client\n");
            abort();
        }
    }
    return n;
}
