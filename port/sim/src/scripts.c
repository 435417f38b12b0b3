/* SPDX-License-Identifier: MIT */
/* edgelock's Lua scripts (elk/lock_scripts.h) as native code for the simulated
 * Redis. Each function does what its Lua text does, atomically, with the same
 * replies (TIME is the node's wall clock); the table matches a script by its exact text (EVAL) or SHA1
 * (EVALSHA). A test program may ask for the COMMIT script to leave counters alone,
 * which turns the fleet into the naive "max over the quorum" fencing scheme: a
 * negative control that must let a token go backwards. */
#include <string.h>

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

void elk_sim_scripts_init(elk_sim_scripts_t *tbl, elk_sim_net_t *net, bool commit_noop)
{
    tbl->commit_noop = commit_noop;
    tbl->no_amnesia = false;
    tbl->no_floor = false;
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
}
