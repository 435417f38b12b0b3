/* SPDX-License-Identifier: MIT */
/* edgelock's Lua scripts (elk/lock_scripts.h) as native code for the simulated
 * Redis. Each function does what its Lua text does, atomically, with the same
 * integer replies; the table matches a script by its exact text (EVAL) or SHA1
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

static void s_acquire(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                      const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out, void *user)
{
    int64_t ttl, c;
    uint8_t num[20];
    size_t n;
    (void)user;
    if (nkeys < 2u || nargs < 3u || !elk_sim_parse_i64(args[1].p, args[1].len, &ttl) || ttl <= 0) {
        elk_sim_reply_error(out, "ERR Error running script: bad arguments to ACQUIRE");
        return;
    }
    if (elk_sim_redis_lookup(node, keys[0].p, keys[0].len) != NULL) {
        elk_sim_reply_int(out, ELK_LOCK_ACQUIRE_BUSY);
        return;
    }
    if (elk_sim_redis_set(node, keys[0].p, keys[0].len, args[0].p, args[0].len, ttl) == NULL) {
        elk_sim_reply_oom(out);
        return;
    }
    if (!(args[2].len == 1u && args[2].p[0] == '1')) {
        elk_sim_reply_int(out, 0);
        return;
    }
    c = counter_of(node, &keys[1]) + 1;
    n = elk_resp_format_int(c, num);
    if (elk_sim_redis_set(node, keys[1].p, keys[1].len, num, n, 0) == NULL) {
        elk_sim_reply_oom(out);
        return;
    }
    elk_sim_reply_int(out, c);
}

static void s_extend(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                     const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out, void *user)
{
    int64_t ttl;
    elk_sim_key_t *k;
    (void)user;
    if (nkeys < 1u || nargs < 2u || !elk_sim_parse_i64(args[1].p, args[1].len, &ttl)) {
        elk_sim_reply_error(out, "ERR Error running script: bad arguments to EXTEND");
        return;
    }
    k = elk_sim_redis_lookup(node, keys[0].p, keys[0].len);
    if (!val_eq(k, &args[0])) {
        elk_sim_reply_int(out, 0);
        return;
    }
    if (ttl <= 0) {
        k->used = 0; /* PEXPIRE with a non-positive time deletes, as in Redis */
    } else {
        k->expire_ms = elk_sim_redis_now_ms(node) + ttl;
    }
    elk_sim_reply_int(out, 1);
}

static void s_release(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                      const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out, void *user)
{
    elk_sim_key_t *k;
    elk_sim_net_t *net = (elk_sim_net_t *)user;
    if (nkeys < 1u || nargs < 2u) {
        elk_sim_reply_error(out, "ERR Error running script: bad arguments to RELEASE");
        return;
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

/* SAFETY (the server safety check): the Lua reads two INFO fields; here the node's
 * settings answer, {maxmemory_policy, aof_enabled}, as a server set up that way would
 * (a simulated node is noeviction with AOF on unless a test changes it). */
static void s_safety(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                     const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out, void *user)
{
    (void)keys;
    (void)nkeys;
    (void)args;
    (void)nargs;
    (void)user;
    elk_sim_reply_array(out, 2);
    elk_sim_reply_cstr(out, node->maxmemory_policy);
    elk_sim_reply_cstr(out, strcmp(node->appendonly, "yes") == 0 ? "1" : "0");
}

void elk_sim_scripts_init(elk_sim_scripts_t *tbl, elk_sim_net_t *net, bool commit_noop)
{
    tbl->commit_noop = commit_noop;
    tbl->entry[0].sha1 = ELK_LOCK_SCRIPT_ACQUIRE_SHA1;
    tbl->entry[0].text = ELK_LOCK_SCRIPT_ACQUIRE;
    tbl->entry[0].fn = s_acquire;
    tbl->entry[0].user = NULL;
    tbl->entry[1].sha1 = ELK_LOCK_SCRIPT_EXTEND_SHA1;
    tbl->entry[1].text = ELK_LOCK_SCRIPT_EXTEND;
    tbl->entry[1].fn = s_extend;
    tbl->entry[1].user = NULL;
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
}
