/* SPDX-License-Identifier: MIT */
/* edgelock's Lua scripts (elk/lock_scripts.h) as native code for the simulated
 * Redis. Each function does what its Lua text does, atomically, with the same
 * replies (TIME is the node's wall clock); the table matches a script by its exact text (EVAL) or SHA1
 * (EVALSHA). A test program may ask for the COMMIT script to leave counters alone,
 * which turns the fleet into the naive "max over the quorum" fencing scheme: a
 * negative control that must let a token go backwards. The fair-waiting scripts
 * (elk/fair_scripts.h) keep each queue member as a key of its own, "<queue key>\x1f<id>"
 * holding "<ticket> <expiry ms>" and expiring with the queue: what the two ZSETs hold,
 * as the replies show it. */
#include <string.h>

#include "elk/fair_scripts.h"
#include "elk/lock_scripts.h"
#include "elk/sim_scripts.h"

static bool val_eq(const elk_sim_key_t *k, const elk_sim_bytes_t *v)
{
    return k != NULL && k->vlen == v->len && memcmp(k->val, v->p, v->len) == 0;
}

static int64_t counter_of(elk_sim_redis_t *node, const elk_sim_bytes_t *key)
{
    int64_t c = 0;
    elk_sim_key_t *k = elk_sim_redis_lookup(node, key->p, key->len);
    if (k != NULL && !elk_sim_parse_i64(k->val, k->vlen, &c)) {
        c = 0;
    }
    return c;
}

/* The fleet marker as ACQUIRE and EXTEND read it: created as "@<ms>" when missing (SET
 * without expiry); its creation time is tonumber of '@(%d+)$' of the value, 0 without one
 * (or, under the no-amnesia control, always). false: out of memory. */
static bool fleet_marker(elk_sim_redis_t *node, const elk_sim_bytes_t *key, bool blind,
                         int64_t *made)
{
    elk_sim_key_t *k = elk_sim_redis_lookup(node, key->p, key->len);
    uint8_t v[24];
    size_t at, n;
    *made = 0;
    if (k == NULL) {
        v[0] = '@';
        n = 1u + elk_resp_format_int(elk_sim_redis_now_ms(node), v + 1);
        k = elk_sim_redis_set(node, key->p, key->len, v, n, 0);
        if (k == NULL) {
            return false;
        }
    }
    for (at = k->vlen; at > 0u && k->val[at - 1u] >= '0' && k->val[at - 1u] <= '9'; at--) {
    }
    if (!blind && at > 0u && at < k->vlen && k->val[at - 1u] == '@' &&
        !elk_sim_parse_i64(k->val + at, k->vlen - at, made)) {
        *made = 0;
    }
    return true;
}

/* {result, TIME in us (t[1] * 1e6 + t[2]), the fleet marker's creation ms}. */
static void reply_triple(elk_sim_redis_t *node, elk_sim_reply_t *out, int64_t result, int64_t made)
{
    elk_sim_reply_array(out, 3);
    elk_sim_reply_int(out, result);
    elk_sim_reply_int(out, elk_sim_redis_now_us(node));
    elk_sim_reply_int(out, made);
}

static bool is_zero(const elk_sim_bytes_t *a)
{
    return a->len == 1u && a->p[0] == '0';
}

/* The lock-delay marker's PX: ttl + lock_delay, as the Lua adds ARGV[2] + ARGV[n]. Redis
 * refuses SET with an expiry <= 0, so a bad sum is an error, as the script's would be. */
static bool delay_px(const elk_sim_bytes_t *delay, int64_t ttl, int64_t *px)
{
    int64_t d;
    if (!elk_sim_parse_i64(delay->p, delay->len, &d) || d < 0 || d > INT64_MAX - ttl) {
        return false;
    }
    *px = ttl + d;
    return *px > 0;
}

static void s_acquire(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                      const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out, void *user)
{
    const elk_sim_scripts_t *tbl = (const elk_sim_scripts_t *)user;
    int64_t ttl, px = 0, c, made, floor;
    uint8_t num[20];
    size_t n;
    bool mark;
    if (nkeys < 4u || nargs < 4u || !elk_sim_parse_i64(args[1].p, args[1].len, &ttl) || ttl <= 0) {
        elk_sim_reply_error(out, "ERR Error running script: bad arguments to ACQUIRE");
        return;
    }
    mark = !is_zero(&args[3]);
    if (mark && !delay_px(&args[3], ttl, &px)) {
        elk_sim_reply_error(out, "ERR Error running script: bad lock delay to ACQUIRE");
        return;
    }
    if (!fleet_marker(node, &keys[3], tbl->no_amnesia, &made)) {
        elk_sim_reply_oom(out);
        return;
    }
    if (elk_sim_redis_lookup(node, keys[0].p, keys[0].len) != NULL) {
        reply_triple(node, out, ELK_LOCK_ACQUIRE_BUSY, made);
        return;
    }
    if (elk_sim_redis_lookup(node, keys[2].p, keys[2].len) != NULL) {
        reply_triple(node, out, ELK_LOCK_ACQUIRE_DELAYED, made);
        return;
    }
    if (elk_sim_redis_set(node, keys[0].p, keys[0].len, args[0].p, args[0].len, ttl) == NULL ||
        (mark &&
         elk_sim_redis_set(node, keys[2].p, keys[2].len, args[0].p, args[0].len, px) == NULL)) {
        elk_sim_reply_oom(out);
        return;
    }
    if (!(args[2].len == 1u && args[2].p[0] == '1')) {
        reply_triple(node, out, 0, made);
        return;
    }
    /* the token: max(counter + 1, TIME in us, ARGV[5] as tonumber reads it, else 0), SET as
     * Redis formats a Lua number (%.17g: plain digits below 1e17) */
    c = counter_of(node, &keys[1]) + 1;
    if (!tbl->no_amnesia && !tbl->no_floor && c < elk_sim_redis_now_us(node)) {
        c = elk_sim_redis_now_us(node);
    }
    if (!tbl->no_amnesia && !tbl->no_floor && nargs > 4u &&
        elk_sim_parse_i64(args[4].p, args[4].len, &floor) && c < floor) {
        c = floor;
    }
    n = elk_resp_format_int(c, num);
    if (elk_sim_redis_set(node, keys[1].p, keys[1].len, num, n, 0) == NULL) {
        elk_sim_reply_oom(out);
        return;
    }
    reply_triple(node, out, c, made);
}

static void s_extend(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                     const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out, void *user)
{
    const elk_sim_scripts_t *tbl = (const elk_sim_scripts_t *)user;
    int64_t ttl, px = 0, made;
    elk_sim_key_t *k;
    bool mark;
    if (nkeys < 3u || nargs < 3u || !elk_sim_parse_i64(args[1].p, args[1].len, &ttl)) {
        elk_sim_reply_error(out, "ERR Error running script: bad arguments to EXTEND");
        return;
    }
    mark = !is_zero(&args[2]);
    if (mark && !delay_px(&args[2], ttl, &px)) {
        elk_sim_reply_error(out, "ERR Error running script: bad lock delay to EXTEND");
        return;
    }
    if (!fleet_marker(node, &keys[2], tbl->no_amnesia, &made)) {
        elk_sim_reply_oom(out);
        return;
    }
    k = elk_sim_redis_lookup(node, keys[0].p, keys[0].len);
    if (!val_eq(k, &args[0])) {
        reply_triple(node, out, 0, made);
        return;
    }
    if (ttl <= 0) {
        k->used = 0; /* PEXPIRE with a non-positive time deletes, as in Redis */
    } else {
        k->expire_ms = elk_sim_redis_now_ms(node) + ttl;
    }
    if (mark &&
        elk_sim_redis_set(node, keys[1].p, keys[1].len, args[0].p, args[0].len, px) == NULL) {
        elk_sim_reply_oom(out);
        return;
    }
    reply_triple(node, out, 1, made);
}

static void s_release(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                      const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out, void *user)
{
    elk_sim_key_t *k;
    elk_sim_net_t *net = (elk_sim_net_t *)user;
    if (nkeys < 2u || nargs < 2u) {
        elk_sim_reply_error(out, "ERR Error running script: bad arguments to RELEASE");
        return;
    }
    /* A clean release ends the lock delay: our own marker goes first, whether or not the
     * lease key still holds our value (it may have expired). */
    k = elk_sim_redis_lookup(node, keys[1].p, keys[1].len);
    if (val_eq(k, &args[0])) {
        k->used = 0;
    }
    k = elk_sim_redis_lookup(node, keys[0].p, keys[0].len);
    if (!val_eq(k, &args[0])) {
        elk_sim_reply_int(out, 0);
        return;
    }
    k->used = 0;
    if (net != NULL) {
        (void)elk_sim_net_publish(net, node, args[1].p, args[1].len, args[0].p, args[0].len);
    }
    elk_sim_reply_int(out, 1);
}

static void s_commit(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                     const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out, void *user)
{
    const elk_sim_scripts_t *tbl = (const elk_sim_scripts_t *)user;
    int64_t t, c;
    if (nkeys < 2u || nargs < 2u || !elk_sim_parse_i64(args[1].p, args[1].len, &t)) {
        elk_sim_reply_error(out, "ERR Error running script: bad arguments to COMMIT");
        return;
    }
    if (!val_eq(elk_sim_redis_lookup(node, keys[0].p, keys[0].len), &args[0])) {
        elk_sim_reply_int(out, ELK_LOCK_COMMIT_NOT_HELD);
        return;
    }
    c = counter_of(node, &keys[1]);
    if (t > c) {
        if (!tbl->commit_noop &&
            elk_sim_redis_set(node, keys[1].p, keys[1].len, args[1].p, args[1].len, 0) == NULL) {
            elk_sim_reply_oom(out);
            return;
        }
        elk_sim_reply_int(out, t);
        return;
    }
    elk_sim_reply_int(out, c);
}

/* The error a script gets from redis.call('INFO') when the ACL lacks +info. */
#define SIM_NOPERM_INFO                                                                            \
    "ERR Error running script: NOPERM User has no permissions to run the 'info' command"

static const char *aof_field(const elk_sim_redis_t *node)
{
    return strcmp(node->appendonly, "yes") == 0 ? "1" : "0";
}

/* SAFETY (the server safety check): the Lua reads two INFO fields; here the node's
 * settings answer, {maxmemory_policy, aof_enabled}, as a server set up that way would
 * (a simulated node is noeviction with AOF on unless a test or a restart that lost the
 * data changes it). redis.call fails without +info, and so does the script. */
static void s_safety(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                     const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out, void *user)
{
    (void)keys;
    (void)nkeys;
    (void)args;
    (void)nargs;
    (void)user;
    if (node->info_denied) {
        elk_sim_reply_error(out, SIM_NOPERM_INFO);
        return;
    }
    elk_sim_reply_array(out, 2);
    elk_sim_reply_cstr(out, node->maxmemory_policy);
    elk_sim_reply_cstr(out, aof_field(node));
}

/* PROBE (vote hygiene): {run_id, uptime_in_seconds, marker, aof_enabled, server_ms}. INFO
 * through pcall: without +info the three INFO fields are "". The marker (no expiry) is
 * created when missing, holding the run_id, or ARGV[1] when INFO told none, then "@" and
 * server_ms; the reply then says "" for it. uptime is Redis's: wall-clock seconds since the start, "" when negative
 * (a backward step: Redis prints "-N", which the script's (%d+) does not match). */
static void s_probe(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                    const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out, void *user)
{
    elk_sim_key_t *m;
    uint8_t marker[ELK_SIM_VAL_MAX], up[20], made[ELK_SIM_VAL_MAX];
    size_t mlen = 0, uplen = 0;
    int64_t uptime = elk_sim_redis_uptime_ms(node);
    bool info = !node->info_denied;
    const uint8_t *id = (const uint8_t *)(info ? node->run_id : "");
    size_t idlen = info ? ELK_SIM_RUN_ID_LEN : 0u;
    const elk_sim_scripts_t *tbl = (const elk_sim_scripts_t *)user;
    if (nkeys < 1u || (!info && nargs < 1u)) {
        /* The Lua would SET the marker to nil: Redis refuses that argument. */
        elk_sim_reply_error(out, "ERR Error running script: bad arguments to PROBE");
        return;
    }
    m = elk_sim_redis_lookup(node, keys[0].p, keys[0].len);
    if (m != NULL) {
        mlen = m->vlen;
        memcpy(marker, m->val, mlen);
    } else {
        /* "<id>@<ms>": the id, then the TIME the reply carries (the id alone under the
         * no-amnesia control: a marker as the PROBE wrote it before issue 26) */
        const elk_sim_bytes_t *a = info ? NULL : &args[0];
        size_t n = a != NULL ? a->len : idlen;
        if (n + 22u > sizeof made) {
            elk_sim_reply_error(out, "ERR Error running script: bad arguments to PROBE");
            return;
        }
        memcpy(made, a != NULL ? a->p : id, n);
        if (!tbl->no_amnesia) {
            made[n++] = '@';
            n += elk_resp_format_int(elk_sim_redis_now_ms(node), made + n);
        }
        if (elk_sim_redis_set(node, keys[0].p, keys[0].len, made, n, 0) == NULL) {
            elk_sim_reply_oom(out);
            return;
        }
    }
    if (info && uptime >= 0) {
        uplen = elk_resp_format_int(uptime / 1000, up);
    }
    elk_sim_reply_array(out, 5);
    elk_sim_reply_bulk(out, id, idlen);
    elk_sim_reply_bulk(out, up, uplen);
    elk_sim_reply_bulk(out, marker, mlen);
    elk_sim_reply_cstr(out, info ? aof_field(node) : "");
    elk_sim_reply_int(out, elk_sim_redis_now_ms(node));
}

/* EXTEND_BATCH: KEYS fleet marker, lock keys; ARGV ttl, values (ARGV[i] with KEYS[i]).
 * {server_us, marker_ms, r_1 .. r_n}, each r_j what EXTEND with no lock delay returns. */
static void s_extend_batch(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                           const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out,
                           void *user)
{
    const elk_sim_scripts_t *tbl = (const elk_sim_scripts_t *)user;
    int64_t ttl, made;
    size_t i;
    if (nkeys < 1u || nargs != nkeys || !elk_sim_parse_i64(args[0].p, args[0].len, &ttl)) {
        elk_sim_reply_error(out, "ERR Error running script: bad arguments to EXTEND_BATCH");
        return;
    }
    if (!fleet_marker(node, &keys[0], tbl->no_amnesia, &made)) {
        elk_sim_reply_oom(out);
        return;
    }
    elk_sim_reply_array(out, nkeys + 1u);
    elk_sim_reply_int(out, elk_sim_redis_now_us(node));
    elk_sim_reply_int(out, made);
    for (i = 1; i < nkeys; i++) {
        elk_sim_key_t *k = elk_sim_redis_lookup(node, keys[i].p, keys[i].len);
        if (!val_eq(k, &args[i])) {
            elk_sim_reply_int(out, 0);
            continue;
        }
        if (ttl <= 0) {
            k->used = 0;
        } else {
            k->expire_ms = elk_sim_redis_now_ms(node) + ttl;
        }
        elk_sim_reply_int(out, 1);
    }
}

/* RELEASE_BATCH: KEYS lock keys, ARGV values (ARGV[i] with KEYS[i]). {r_1 .. r_n}: 1 when the
 * key held the value (deleted, the value published on <key>:released), else 0. */
static void s_release_batch(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                            const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out,
                            void *user)
{
    elk_sim_net_t *net = (elk_sim_net_t *)user;
    static const char suffix[] = ELK_LOCK_CHANNEL_SUFFIX;
    size_t i;
    if (nkeys < 1u || nargs != nkeys) {
        elk_sim_reply_error(out, "ERR Error running script: bad arguments to RELEASE_BATCH");
        return;
    }
    elk_sim_reply_array(out, nkeys);
    for (i = 0; i < nkeys; i++) {
        elk_sim_key_t *k = elk_sim_redis_lookup(node, keys[i].p, keys[i].len);
        uint8_t ch[ELK_SIM_KEY_MAX + sizeof suffix];
        if (!val_eq(k, &args[i]) || keys[i].len > ELK_SIM_KEY_MAX) {
            elk_sim_reply_int(out, 0);
            continue;
        }
        k->used = 0;
        memcpy(ch, keys[i].p, keys[i].len);
        memcpy(ch + keys[i].len, suffix, sizeof suffix - 1u);
        if (net != NULL) {
            (void)elk_sim_net_publish(net, node, ch, keys[i].len + sizeof suffix - 1u, args[i].p,
                                      args[i].len);
        }
        elk_sim_reply_int(out, 1);
    }
}

/* ---------------------------------------------------------------- fair waiting */

/* One queue member: its key's entry, id (a view into it), ticket and expiry (server ms). */
typedef struct q_member {
    elk_sim_key_t *k;
    const uint8_t *id;
    size_t id_len;
    int64_t ticket, expiry;
} q_member_t;

/* Whether k is a live member of queue q; fills m. */
static bool q_member_of(elk_sim_redis_t *node, elk_sim_key_t *k, const elk_sim_bytes_t *q,
                        q_member_t *m)
{
    size_t sp;
    if (!k->used || k->klen <= q->len + 1u || memcmp(k->key, q->p, q->len) != 0 ||
        k->key[q->len] != 0x1f) {
        return false;
    }
    if (k->expire_ms != 0 && elk_sim_redis_now_ms(node) > k->expire_ms) {
        k->used = 0;
        return false;
    }
    for (sp = 0; sp < k->vlen && k->val[sp] != ' '; sp++) {
    }
    m->k = k;
    m->id = k->key + q->len + 1u;
    m->id_len = k->klen - q->len - 1u;
    return sp < k->vlen && elk_sim_parse_i64(k->val, sp, &m->ticket) &&
        elk_sim_parse_i64(k->val + sp + 1u, k->vlen - sp - 1u, &m->expiry);
}

/* ZSET order: by score, then by member bytes. */
static bool q_before(const q_member_t *a, const q_member_t *b)
{
    size_t n = a->id_len < b->id_len ? a->id_len : b->id_len;
    int c = memcmp(a->id, b->id, n);
    if (a->ticket != b->ticket) {
        return a->ticket < b->ticket;
    }
    return c < 0 || (c == 0 && a->id_len < b->id_len);
}

/* The ticket sequence: INCR for a new ticket, else raised to the one given. */
static bool q_ticket(elk_sim_redis_t *node, const elk_sim_bytes_t *seq, int64_t *t)
{
    int64_t cur = counter_of(node, seq);
    uint8_t v[20];
    elk_sim_key_t *k = elk_sim_redis_lookup(node, seq->p, seq->len);
    int64_t keep = k != NULL ? k->expire_ms : 0;
    if (*t == 0) {
        *t = cur + 1;
    } else if (cur >= *t) {
        return true;
    }
    k = elk_sim_redis_set(node, seq->p, seq->len, v, elk_resp_format_int(*t, v), 0);
    if (k != NULL) {
        k->expire_ms = keep; /* INCR and SET from a script: SET drops it, then PEXPIREAT */
    }
    return k != NULL;
}

/* QUEUE_KEEP: KEYS queue, expiries, sequence; ARGV id, ticket (0: new), ttl ms. */
static void s_queue_keep(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                         const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out,
                         void *user)
{
    uint8_t key[ELK_SIM_KEY_MAX], val[44];
    int64_t now = elk_sim_redis_now_ms(node), t = 0, ttl = 0, until = 0, rank = 0;
    q_member_t m, me, head;
    size_t i, n;
    elk_sim_key_t *seq;
    const elk_sim_scripts_t *tbl = (const elk_sim_scripts_t *)user;
    if (nkeys < 3u || nargs < 3u || keys[0].len + 1u + args[0].len > ELK_SIM_KEY_MAX ||
        !elk_sim_parse_i64(args[1].p, args[1].len, &t) ||
        !elk_sim_parse_i64(args[2].p, args[2].len, &ttl) || t < 0 || ttl <= 0) {
        elk_sim_reply_error(out, "ERR bad QUEUE_KEEP arguments");
        return;
    }
    for (i = 0; i < ELK_SIM_KEYS && (tbl == NULL || !tbl->no_queue_expiry); i++) {
        /* expired tickets leave */
        if (q_member_of(node, &node->keys[i], &keys[0], &m) && m.expiry <= now) {
            node->keys[i].used = 0;
        }
    }
    if (!q_ticket(node, &keys[2], &t)) {
        elk_sim_reply_oom(out);
        return;
    }
    memcpy(key, keys[0].p, keys[0].len);
    key[keys[0].len] = 0x1f;
    memcpy(key + keys[0].len + 1u, args[0].p, args[0].len);
    n = elk_resp_format_int(t, val);
    val[n++] = ' ';
    n += elk_resp_format_int(now + ttl, val + n);
    if (elk_sim_redis_set(node, key, keys[0].len + 1u + args[0].len, val, n, 0) == NULL) {
        elk_sim_reply_oom(out);
        return;
    }
    memset(&head, 0, sizeof head);
    memset(&me, 0, sizeof me);
    for (i = 0; i < ELK_SIM_KEYS; i++) { /* the latest expiry, this member, the head */
        if (q_member_of(node, &node->keys[i], &keys[0], &m)) {
            until = m.expiry > until ? m.expiry : until;
            if (m.id_len == args[0].len && memcmp(m.id, args[0].p, m.id_len) == 0) {
                me = m;
            }
            if (head.k == NULL || q_before(&m, &head)) {
                head = m;
            }
        }
    }
    for (i = 0; i < ELK_SIM_KEYS; i++) { /* PEXPIREAT on the queue; its rank */
        if (q_member_of(node, &node->keys[i], &keys[0], &m)) {
            node->keys[i].expire_ms = until;
            rank += q_before(&m, &me) ? 1 : 0;
        }
    }
    seq = elk_sim_redis_lookup(node, keys[2].p, keys[2].len);
    if (seq != NULL) {
        seq->expire_ms = until;
    }
    elk_sim_reply_array(out, 3);
    elk_sim_reply_int(out, t);
    elk_sim_reply_int(out, rank);
    elk_sim_reply_bulk(out, head.id, head.id_len);
}

/* QUEUE_LEAVE: KEYS queue, expiries; ARGV id. 1 if the member was there. */
static void s_queue_leave(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                          const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out,
                          void *user)
{
    uint8_t key[ELK_SIM_KEY_MAX];
    (void)user;
    if (nkeys < 2u || nargs < 1u || keys[0].len + 1u + args[0].len > ELK_SIM_KEY_MAX) {
        elk_sim_reply_error(out, "ERR bad QUEUE_LEAVE arguments");
        return;
    }
    memcpy(key, keys[0].p, keys[0].len);
    key[keys[0].len] = 0x1f;
    memcpy(key + keys[0].len + 1u, args[0].p, args[0].len);
    elk_sim_reply_int(out, elk_sim_redis_del(node, key, keys[0].len + 1u + args[0].len) ? 1 : 0);
}

void elk_sim_scripts_init(elk_sim_scripts_t *tbl, elk_sim_net_t *net, bool commit_noop)
{
    tbl->commit_noop = commit_noop;
    tbl->no_amnesia = false;
    tbl->no_floor = false;
    tbl->no_queue_expiry = false;
    tbl->entry[0].sha1 = ELK_LOCK_SCRIPT_ACQUIRE_SHA1;
    tbl->entry[0].text = ELK_LOCK_SCRIPT_ACQUIRE;
    tbl->entry[0].fn = s_acquire;
    tbl->entry[0].user = tbl;
    tbl->entry[1].sha1 = ELK_LOCK_SCRIPT_EXTEND_SHA1;
    tbl->entry[1].text = ELK_LOCK_SCRIPT_EXTEND;
    tbl->entry[1].fn = s_extend;
    tbl->entry[1].user = tbl;
    tbl->entry[2].sha1 = ELK_LOCK_SCRIPT_RELEASE_SHA1;
    tbl->entry[2].text = ELK_LOCK_SCRIPT_RELEASE;
    tbl->entry[2].fn = s_release;
    tbl->entry[2].user = net;
    tbl->entry[3].sha1 = ELK_LOCK_SCRIPT_COMMIT_SHA1;
    tbl->entry[3].text = ELK_LOCK_SCRIPT_COMMIT;
    tbl->entry[3].fn = s_commit;
    tbl->entry[3].user = tbl;
    tbl->entry[4].sha1 = ELK_LOCK_SCRIPT_SAFETY_SHA1;
    tbl->entry[4].text = ELK_LOCK_SCRIPT_SAFETY;
    tbl->entry[4].fn = s_safety;
    tbl->entry[4].user = NULL;
    tbl->entry[5].sha1 = ELK_LOCK_SCRIPT_PROBE_SHA1;
    tbl->entry[5].text = ELK_LOCK_SCRIPT_PROBE;
    tbl->entry[5].fn = s_probe;
    tbl->entry[5].user = tbl;
    tbl->entry[6].sha1 = ELK_LOCK_SCRIPT_EXTEND_BATCH_SHA1;
    tbl->entry[6].text = ELK_LOCK_SCRIPT_EXTEND_BATCH;
    tbl->entry[6].fn = s_extend_batch;
    tbl->entry[6].user = tbl;
    tbl->entry[7].sha1 = ELK_LOCK_SCRIPT_RELEASE_BATCH_SHA1;
    tbl->entry[7].text = ELK_LOCK_SCRIPT_RELEASE_BATCH;
    tbl->entry[7].fn = s_release_batch;
    tbl->entry[7].user = net;
    tbl->entry[8].sha1 = ELK_FAIR_SCRIPT_KEEP_SHA1;
    tbl->entry[8].text = ELK_FAIR_SCRIPT_KEEP;
    tbl->entry[8].fn = s_queue_keep;
    tbl->entry[8].user = tbl;
    tbl->entry[9].sha1 = ELK_FAIR_SCRIPT_LEAVE_SHA1;
    tbl->entry[9].text = ELK_FAIR_SCRIPT_LEAVE;
    tbl->entry[9].fn = s_queue_leave;
    tbl->entry[9].user = NULL;
}
