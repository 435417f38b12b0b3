/* SPDX-License-Identifier: MIT */
/* The simulated Redis server: exactly the commands edgelock (and the SETNX+GETSET
 * control client) send, with Redis 7.0's replies, key expiry on the node's own wall
 * clock (a key is alive up to and including its expiry millisecond, as in Redis),
 * and edgelock's Lua scripts run as native code from the net's script table. */
#include <string.h>

#include "sim_internal.h"

void elk_sim_redis_init(elk_sim_redis_t *node, uint8_t index, const uint64_t *true_now_us)
{
    memset(node, 0, sizeof *node);
    node->index = index;
    node->up = true;
    /* A wall clock: Unix time, 2023-11-14 at true time 0, as TIME would say. */
    elk_sim_clock_init(&node->clock, true_now_us, ELK_SIM_WALL_EPOCH_US, 0);
    node->password = NULL;
    node->maxmemory_policy = "noeviction";
    node->appendonly = "yes";
    node->appendfsync = "always";
}

int64_t elk_sim_redis_now_ms(const elk_sim_redis_t *node)
{
    return elk_sim_clock_local_us_at(&node->clock, *node->clock.true_now_us) / 1000;
}

int64_t elk_sim_redis_now_us(const elk_sim_redis_t *node)
{
    return elk_sim_clock_local_us_at(&node->clock, *node->clock.true_now_us);
}

int64_t elk_sim_redis_uptime_ms(const elk_sim_redis_t *node)
{
    /* Both readings with today's offset give the elapsed wall time without steps; the
     * steps since the start are added back, as two real readings would contain them. */
    int64_t ran = elk_sim_clock_local_us_at(&node->clock, *node->clock.true_now_us) -
        elk_sim_clock_local_us_at(&node->clock, node->started_us);
    return (node->up_before_us + ran + node->jumped_us) / 1000;
}

bool elk_sim_parse_i64(const uint8_t *p, size_t len, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    uint64_t v = 0;
    if (len == 0u || len > 20u) {
        return false;
    }
    if (p[0] == '-') {
        neg = true;
        i = 1;
        if (len == 1u) {
            return false;
        }
    }
    for (; i < len; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return false;
        }
        if (v > (UINT64_C(0x7fffffffffffffff) - (uint64_t)(p[i] - '0')) / 10u) {
            return false;
        }
        v = v * 10u + (uint64_t)(p[i] - '0');
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

static bool expired(const elk_sim_redis_t *node, const elk_sim_key_t *k)
{
    return k->expire_ms != 0 && elk_sim_redis_now_ms(node) > k->expire_ms;
}

elk_sim_key_t *elk_sim_redis_lookup(elk_sim_redis_t *node, const uint8_t *key, size_t klen)
{
    size_t i;
    for (i = 0; i < ELK_SIM_KEYS; i++) {
        elk_sim_key_t *k = &node->keys[i];
        if (k->used && k->klen == klen && memcmp(k->key, key, klen) == 0) {
            if (expired(node, k)) {
                k->used = 0;
                return NULL;
            }
            return k;
        }
    }
    return NULL;
}

elk_sim_key_t *elk_sim_redis_set(elk_sim_redis_t *node, const uint8_t *key, size_t klen,
                                 const uint8_t *val, size_t vlen, int64_t px_ms)
{
    elk_sim_key_t *k;
    size_t i;
    if (klen > ELK_SIM_KEY_MAX || vlen > ELK_SIM_VAL_MAX) {
        return NULL;
    }
    k = elk_sim_redis_lookup(node, key, klen);
    for (i = 0; k == NULL && i < ELK_SIM_KEYS; i++) {
        elk_sim_key_t *e = &node->keys[i];
        if (!e->used || expired(node, e)) {
            k = e;
        }
    }
    if (k == NULL) {
        return NULL;
    }
    k->used = 1;
    k->klen = (uint8_t)klen;
    memcpy(k->key, key, klen);
    k->vlen = (uint8_t)vlen;
    memcpy(k->val, val, vlen);
    k->expire_ms = px_ms > 0 ? elk_sim_redis_now_ms(node) + px_ms : 0;
    return k;
}

bool elk_sim_redis_del(elk_sim_redis_t *node, const uint8_t *key, size_t klen)
{
    elk_sim_key_t *k = elk_sim_redis_lookup(node, key, klen);
    if (k == NULL) {
        return false;
    }
    k->used = 0;
    return true;
}

/* ------------------------------------------------------------ commands */

typedef struct cmd_ctx {
    elk_sim_net_t *net;
    elk_sim_publish_fn publish;
    elk_sim_conn_t *conn;
    elk_sim_redis_t *node;
    elk_sim_bytes_t argv[ELK_SIM_MAX_ARGS];
    size_t argc;
    elk_sim_reply_t *out;
} cmd_ctx_t;

static bool arg_is(const elk_sim_bytes_t *a, const char *s)
{
    size_t i, n = strlen(s);
    if (a->len != n) {
        return false;
    }
    for (i = 0; i < n; i++) {
        uint8_t c = a->p[i];
        if (c >= 'a' && c <= 'z') {
            c = (uint8_t)(c - 'a' + 'A');
        }
        if (c != (uint8_t)s[i]) {
            return false;
        }
    }
    return true;
}

static void wrong_args(cmd_ctx_t *x)
{
    elk_sim_reply_error(x->out, "ERR wrong number of arguments for command");
}

static void reply_value(cmd_ctx_t *x, const elk_sim_key_t *k)
{
    if (k == NULL) {
        elk_sim_reply_null(x->out);
    } else {
        elk_sim_reply_bulk(x->out, k->val, k->vlen);
    }
}

static void cmd_set(cmd_ctx_t *x)
{
    bool nx = false, xx = false;
    int64_t px = 0;
    size_t i;
    elk_sim_key_t *cur;
    if (x->argc < 3u) {
        wrong_args(x);
        return;
    }
    for (i = 3; i < x->argc; i++) {
        if (arg_is(&x->argv[i], "NX")) {
            nx = true;
        } else if (arg_is(&x->argv[i], "XX")) {
            xx = true;
        } else if ((arg_is(&x->argv[i], "PX") || arg_is(&x->argv[i], "EX")) && i + 1u < x->argc) {
            int64_t v;
            if (!elk_sim_parse_i64(x->argv[i + 1u].p, x->argv[i + 1u].len, &v) || v <= 0) {
                elk_sim_reply_error(x->out, "ERR invalid expire time in 'set' command");
                return;
            }
            px = arg_is(&x->argv[i], "EX") ? v * 1000 : v;
            i++;
        } else {
            elk_sim_reply_error(x->out, "ERR syntax error");
            return;
        }
    }
    if (nx && xx) {
        elk_sim_reply_error(x->out, "ERR syntax error");
        return;
    }
    cur = elk_sim_redis_lookup(x->node, x->argv[1].p, x->argv[1].len);
    if ((nx && cur != NULL) || (xx && cur == NULL)) {
        elk_sim_reply_null(x->out);
        return;
    }
    if (elk_sim_redis_set(x->node, x->argv[1].p, x->argv[1].len, x->argv[2].p, x->argv[2].len,
                          px) == NULL) {
        elk_sim_reply_oom(x->out);
        return;
    }
    elk_sim_reply_simple(x->out, "OK");
}

static void cmd_setnx(cmd_ctx_t *x)
{
    if (x->argc != 3u) {
        wrong_args(x);
        return;
    }
    if (elk_sim_redis_lookup(x->node, x->argv[1].p, x->argv[1].len) != NULL) {
        elk_sim_reply_int(x->out, 0);
        return;
    }
    if (elk_sim_redis_set(x->node, x->argv[1].p, x->argv[1].len, x->argv[2].p, x->argv[2].len, 0) ==
        NULL) {
        elk_sim_reply_oom(x->out);
        return;
    }
    elk_sim_reply_int(x->out, 1);
}

static void cmd_getset(cmd_ctx_t *x)
{
    elk_sim_key_t *k;
    uint8_t old[ELK_SIM_VAL_MAX];
    size_t oldlen = 0;
    bool had;
    if (x->argc != 3u) {
        wrong_args(x);
        return;
    }
    k = elk_sim_redis_lookup(x->node, x->argv[1].p, x->argv[1].len);
    had = k != NULL;
    if (had) {
        oldlen = k->vlen;
        memcpy(old, k->val, oldlen);
    }
    if (elk_sim_redis_set(x->node, x->argv[1].p, x->argv[1].len, x->argv[2].p, x->argv[2].len, 0) ==
        NULL) {
        elk_sim_reply_oom(x->out);
        return;
    }
    if (had) {
        elk_sim_reply_bulk(x->out, old, oldlen);
    } else {
        elk_sim_reply_null(x->out);
    }
}

static void cmd_get(cmd_ctx_t *x)
{
    if (x->argc != 2u) {
        wrong_args(x);
        return;
    }
    reply_value(x, elk_sim_redis_lookup(x->node, x->argv[1].p, x->argv[1].len));
}

static void cmd_del(cmd_ctx_t *x)
{
    size_t i;
    int64_t n = 0;
    if (x->argc < 2u) {
        wrong_args(x);
        return;
    }
    for (i = 1; i < x->argc; i++) {
        n += elk_sim_redis_del(x->node, x->argv[i].p, x->argv[i].len) ? 1 : 0;
    }
    elk_sim_reply_int(x->out, n);
}

static void cmd_pexpire(cmd_ctx_t *x)
{
    int64_t ms;
    elk_sim_key_t *k;
    if (x->argc != 3u) {
        wrong_args(x);
        return;
    }
    if (!elk_sim_parse_i64(x->argv[2].p, x->argv[2].len, &ms)) {
        elk_sim_reply_error(x->out, "ERR value is not an integer or out of range");
        return;
    }
    k = elk_sim_redis_lookup(x->node, x->argv[1].p, x->argv[1].len);
    if (k == NULL) {
        elk_sim_reply_int(x->out, 0);
        return;
    }
    if (ms <= 0) {
        k->used = 0;
    } else {
        k->expire_ms = elk_sim_redis_now_ms(x->node) + ms;
    }
    elk_sim_reply_int(x->out, 1);
}

static void cmd_pttl(cmd_ctx_t *x)
{
    elk_sim_key_t *k;
    if (x->argc != 2u) {
        wrong_args(x);
        return;
    }
    k = elk_sim_redis_lookup(x->node, x->argv[1].p, x->argv[1].len);
    if (k == NULL) {
        elk_sim_reply_int(x->out, -2);
    } else if (k->expire_ms == 0) {
        elk_sim_reply_int(x->out, -1);
    } else {
        elk_sim_reply_int(x->out, k->expire_ms - elk_sim_redis_now_ms(x->node));
    }
}

static void cmd_incr(cmd_ctx_t *x)
{
    elk_sim_key_t *k;
    int64_t v = 0;
    uint8_t num[20];
    size_t n;
    int64_t keep_expire = 0;
    if (x->argc != 2u) {
        wrong_args(x);
        return;
    }
    k = elk_sim_redis_lookup(x->node, x->argv[1].p, x->argv[1].len);
    if (k != NULL) {
        if (!elk_sim_parse_i64(k->val, k->vlen, &v) || v == INT64_MAX) {
            elk_sim_reply_error(x->out, "ERR value is not an integer or out of range");
            return;
        }
        keep_expire = k->expire_ms;
    }
    v++;
    n = elk_resp_format_int(v, num);
    k = elk_sim_redis_set(x->node, x->argv[1].p, x->argv[1].len, num, n, 0);
    if (k == NULL) {
        elk_sim_reply_oom(x->out);
        return;
    }
    k->expire_ms = keep_expire; /* INCR keeps a TTL */
    elk_sim_reply_int(x->out, v);
}

static void cmd_hello(cmd_ctx_t *x)
{
    size_t i = 2;
    int64_t proto = x->conn->srv.proto;
    if (x->argc >= 2u) {
        if (!elk_sim_parse_i64(x->argv[1].p, x->argv[1].len, &proto)) {
            elk_sim_reply_error(x->out, "ERR Protocol version is not an integer or out of range");
            return;
        }
        if (proto != 2 && proto != 3) {
            elk_sim_reply_error(x->out, "NOPROTO unsupported protocol version");
            return;
        }
    }
    for (; i < x->argc; i++) {
        if (arg_is(&x->argv[i], "AUTH") && i + 2u < x->argc) {
            const char *pw = x->node->password;
            const elk_sim_bytes_t *p = &x->argv[i + 2u];
            if (pw == NULL || strlen(pw) != p->len || memcmp(pw, p->p, p->len) != 0) {
                elk_sim_reply_error(
                    x->out, "WRONGPASS invalid username-password pair or user is disabled.");
                return;
            }
            x->conn->srv.authed = true;
            i += 2u;
        } else if (arg_is(&x->argv[i], "SETNAME") && i + 1u < x->argc) {
            i++;
        } else {
            elk_sim_reply_error(x->out, "ERR Syntax error in HELLO option");
            return;
        }
    }
    if (!x->conn->srv.authed) {
        elk_sim_reply_error(
            x->out,
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
            "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
            "select the RESP protocol version at the same time");
        return;
    }
    x->conn->srv.proto = (uint8_t)proto;
    x->out->proto = (uint8_t)proto;
    elk_sim_reply_map(x->out, 7);
    elk_sim_reply_cstr(x->out, "server");
    elk_sim_reply_cstr(x->out, "redis");
    elk_sim_reply_cstr(x->out, "version");
    elk_sim_reply_cstr(x->out, "7.0.15");
    elk_sim_reply_cstr(x->out, "proto");
    elk_sim_reply_int(x->out, proto);
    elk_sim_reply_cstr(x->out, "id");
    elk_sim_reply_int(x->out, (int64_t)x->conn->id + 1);
    elk_sim_reply_cstr(x->out, "mode");
    elk_sim_reply_cstr(x->out, "standalone");
    elk_sim_reply_cstr(x->out, "role");
    elk_sim_reply_cstr(x->out, "master");
    elk_sim_reply_cstr(x->out, "modules");
    elk_sim_reply_array(x->out, 0);
}

static void cmd_auth(cmd_ctx_t *x)
{
    const char *pw = x->node->password;
    const elk_sim_bytes_t *p;
    if (x->argc != 2u && x->argc != 3u) {
        wrong_args(x);
        return;
    }
    if (pw == NULL) {
        elk_sim_reply_error(x->out,
                            "ERR AUTH <password> called without any password configured for the "
                            "default user. Are you sure your configuration is correct?");
        return;
    }
    p = &x->argv[x->argc - 1u];
    if (strlen(pw) != p->len || memcmp(pw, p->p, p->len) != 0) {
        elk_sim_reply_error(x->out,
                            "WRONGPASS invalid username-password pair or user is disabled.");
        return;
    }
    x->conn->srv.authed = true;
    elk_sim_reply_simple(x->out, "OK");
}

static void cmd_config(cmd_ctx_t *x)
{
    static const char *const names[] = {"maxmemory-policy", "appendonly", "appendfsync"};
    const char *vals[3];
    size_t i, j, n = 0;
    bool want[3] = {false, false, false};
    if (x->argc < 3u || !arg_is(&x->argv[1], "GET")) {
        elk_sim_reply_error(x->out, "ERR sim: only CONFIG GET is simulated");
        return;
    }
    vals[0] = x->node->maxmemory_policy;
    vals[1] = x->node->appendonly;
    vals[2] = x->node->appendfsync;
    for (j = 2; j < x->argc; j++) {
        for (i = 0; i < 3u; i++) {
            if (x->argv[j].len == strlen(names[i]) &&
                memcmp(x->argv[j].p, names[i], x->argv[j].len) == 0 && !want[i]) {
                want[i] = true;
                n++;
            }
        }
    }
    elk_sim_reply_map(x->out, n);
    for (i = 0; i < 3u; i++) {
        if (want[i]) {
            elk_sim_reply_cstr(x->out, names[i]);
            elk_sim_reply_cstr(x->out, vals[i]);
        }
    }
}

static void cmd_subscribe(cmd_ctx_t *x)
{
    elk_sim_session_t *s = &x->conn->srv;
    size_t i;
    if (x->argc < 2u) {
        wrong_args(x);
        return;
    }
    for (i = 1; i < x->argc; i++) {
        const elk_sim_bytes_t *ch = &x->argv[i];
        uint8_t k;
        bool have = false;
        for (k = 0; k < s->nsubs; k++) {
            have = have || (s->sub_len[k] == ch->len && memcmp(s->sub[k], ch->p, ch->len) == 0);
        }
        if (!have && s->nsubs < ELK_SIM_SUBS && ch->len <= ELK_SIM_KEY_MAX) {
            memcpy(s->sub[s->nsubs], ch->p, ch->len);
            s->sub_len[s->nsubs] = (uint8_t)ch->len;
            s->nsubs++;
        }
        elk_sim_reply_push(x->out, 3);
        elk_sim_reply_cstr(x->out, "subscribe");
        elk_sim_reply_bulk(x->out, ch->p, ch->len);
        elk_sim_reply_int(x->out, s->nsubs);
    }
}

static void cmd_unsubscribe(cmd_ctx_t *x)
{
    elk_sim_session_t *s = &x->conn->srv;
    size_t i;
    for (i = 1; i < x->argc; i++) {
        const elk_sim_bytes_t *ch = &x->argv[i];
        uint8_t k;
        for (k = 0; k < s->nsubs; k++) {
            if (s->sub_len[k] == ch->len && memcmp(s->sub[k], ch->p, ch->len) == 0) {
                s->nsubs--;
                memcpy(s->sub[k], s->sub[s->nsubs], s->sub_len[s->nsubs]);
                s->sub_len[k] = s->sub_len[s->nsubs];
                break;
            }
        }
        elk_sim_reply_push(x->out, 3);
        elk_sim_reply_cstr(x->out, "unsubscribe");
        elk_sim_reply_bulk(x->out, ch->p, ch->len);
        elk_sim_reply_int(x->out, s->nsubs);
    }
    if (x->argc == 1u) {
        s->nsubs = 0;
        elk_sim_reply_push(x->out, 3);
        elk_sim_reply_cstr(x->out, "unsubscribe");
        elk_sim_reply_null(x->out);
        elk_sim_reply_int(x->out, 0);
    }
}

static bool hex_eq(const elk_sim_bytes_t *a, const char *sha)
{
    size_t i;
    if (sha == NULL || a->len != strlen(sha)) {
        return false;
    }
    for (i = 0; i < a->len; i++) {
        uint8_t c = a->p[i];
        if (c >= 'A' && c <= 'F') {
            c = (uint8_t)(c - 'A' + 'a');
        }
        if (c != (uint8_t)sha[i]) {
            return false;
        }
    }
    return true;
}

static int find_script(const elk_sim_net_t *net, const elk_sim_bytes_t *a, bool by_sha)
{
    size_t i;
    for (i = 0; i < net->n_scripts; i++) {
        const elk_sim_script_t *s = &net->scripts[i];
        if (by_sha ? hex_eq(a, s->sha1)
                   : (s->text != NULL && strlen(s->text) == a->len &&
                      memcmp(s->text, a->p, a->len) == 0)) {
            return (int)i;
        }
    }
    return -1;
}

static void cmd_eval(cmd_ctx_t *x, bool by_sha)
{
    int idx;
    int64_t numkeys;
    const elk_sim_script_t *s;
    if (x->argc < 3u) {
        wrong_args(x);
        return;
    }
    idx = find_script(x->net, &x->argv[1], by_sha);
    if (by_sha && (idx < 0 || ((x->node->script_cached >> idx) & 1u) == 0u)) {
        elk_sim_reply_error(x->out, "NOSCRIPT No matching script. Please use EVAL.");
        return;
    }
    if (idx < 0) {
        elk_sim_reply_error(x->out, "ERR sim: EVAL of a script the simulator does not implement");
        return;
    }
    if (!elk_sim_parse_i64(x->argv[2].p, x->argv[2].len, &numkeys) || numkeys < 0) {
        elk_sim_reply_error(x->out, "ERR numkeys can't be negative");
        return;
    }
    if ((size_t)numkeys > x->argc - 3u) {
        elk_sim_reply_error(x->out, "ERR Number of keys can't be greater than number of args");
        return;
    }
    x->node->script_cached |= 1u << idx; /* EVAL caches the script, as Redis does */
    s = &x->net->scripts[idx];
    s->fn(x->node, &x->argv[3], (size_t)numkeys, &x->argv[3u + (size_t)numkeys],
          x->argc - 3u - (size_t)numkeys, x->out, s->user);
}

static void cmd_script(cmd_ctx_t *x)
{
    if (x->argc >= 2u && arg_is(&x->argv[1], "FLUSH")) {
        x->node->script_cached = 0;
        elk_sim_reply_simple(x->out, "OK");
    } else if (x->argc == 3u && arg_is(&x->argv[1], "LOAD")) {
        int idx = find_script(x->net, &x->argv[2], false);
        if (idx < 0) {
            elk_sim_reply_error(
                x->out, "ERR sim: SCRIPT LOAD of a script the simulator does not implement");
            return;
        }
        x->node->script_cached |= 1u << idx;
        elk_sim_reply_cstr(x->out, x->net->scripts[idx].sha1);
    } else if (x->argc >= 3u && arg_is(&x->argv[1], "EXISTS")) {
        size_t i;
        elk_sim_reply_array(x->out, x->argc - 2u);
        for (i = 2; i < x->argc; i++) {
            int idx = find_script(x->net, &x->argv[i], true);
            elk_sim_reply_int(x->out, idx >= 0 && ((x->node->script_cached >> idx) & 1u) ? 1 : 0);
        }
    } else {
        elk_sim_reply_error(x->out,
                            "ERR unknown subcommand or wrong number of arguments for 'script'");
    }
}

static void exec_command(cmd_ctx_t *xp);

void elk_sim_redis_exec(elk_sim_net_t *net, elk_sim_conn_t *conn, const elk_resp_reply_t *cmd,
                        elk_sim_reply_t *out, elk_sim_publish_fn publish)
{
    cmd_ctx_t x;
    const elk_resp_node_t *top;
    size_t i;
    x.net = net;
    x.publish = publish;
    x.conn = conn;
    x.node = &net->nodes[conn->node];
    x.out = out;
    x.argc = 0;
    x.node->commands++;
    top = &cmd->nodes[0];
    if (top->type != ELK_RESP_ARRAY || top->integer < 1 ||
        (size_t)top->integer > ELK_SIM_MAX_ARGS || top->subtree != (uint32_t)top->integer) {
        elk_sim_reply_error(out, "ERR Protocol error: expected an array of bulk strings");
        return;
    }
    for (i = 0; i < (size_t)top->integer; i++) {
        const elk_resp_node_t *a = &cmd->nodes[1u + i];
        if (a->type != ELK_RESP_BULK && a->type != ELK_RESP_SIMPLE) {
            elk_sim_reply_error(out, "ERR Protocol error: expected bulk strings");
            return;
        }
        x.argv[i].p = a->str;
        x.argv[i].len = a->len;
    }
    x.argc = i;
    if (!conn->srv.authed && !arg_is(&x.argv[0], "AUTH") && !arg_is(&x.argv[0], "HELLO")) {
        elk_sim_reply_error(out, "NOAUTH Authentication required.");
    } else {
        exec_command(&x);
    }
    if (net->on_command != NULL) {
        net->on_command(net->cmd_user, conn->node, conn->gw, x.argv, x.argc, out->buf, out->len);
    }
}

static void exec_command(cmd_ctx_t *xp)
{
    cmd_ctx_t x = *xp;
    elk_sim_net_t *net = x.net;
    elk_sim_reply_t *out = x.out;
    if (arg_is(&x.argv[0], "SET")) {
        cmd_set(&x);
    } else if (arg_is(&x.argv[0], "GET")) {
        cmd_get(&x);
    } else if (arg_is(&x.argv[0], "EVALSHA")) {
        cmd_eval(&x, true);
    } else if (arg_is(&x.argv[0], "EVAL")) {
        cmd_eval(&x, false);
    } else if (arg_is(&x.argv[0], "DEL")) {
        cmd_del(&x);
    } else if (arg_is(&x.argv[0], "PEXPIRE")) {
        cmd_pexpire(&x);
    } else if (arg_is(&x.argv[0], "PTTL")) {
        cmd_pttl(&x);
    } else if (arg_is(&x.argv[0], "INCR")) {
        cmd_incr(&x);
    } else if (arg_is(&x.argv[0], "SETNX")) {
        cmd_setnx(&x);
    } else if (arg_is(&x.argv[0], "GETSET")) {
        cmd_getset(&x);
    } else if (arg_is(&x.argv[0], "PUBLISH")) {
        if (x.argc != 3u) {
            wrong_args(&x);
        } else {
            elk_sim_reply_int(
                out,
                x.publish(net, x.node, x.argv[1].p, x.argv[1].len, x.argv[2].p, x.argv[2].len));
        }
    } else if (arg_is(&x.argv[0], "SUBSCRIBE")) {
        cmd_subscribe(&x);
    } else if (arg_is(&x.argv[0], "UNSUBSCRIBE")) {
        cmd_unsubscribe(&x);
    } else if (arg_is(&x.argv[0], "PING")) {
        if (x.argc > 1u) {
            elk_sim_reply_bulk(out, x.argv[1].p, x.argv[1].len);
        } else {
            elk_sim_reply_simple(out, "PONG");
        }
    } else if (arg_is(&x.argv[0], "HELLO")) {
        cmd_hello(&x);
    } else if (arg_is(&x.argv[0], "AUTH")) {
        cmd_auth(&x);
    } else if (arg_is(&x.argv[0], "SELECT")) {
        int64_t db;
        if (x.argc != 2u) {
            wrong_args(&x);
        } else if (!elk_sim_parse_i64(x.argv[1].p, x.argv[1].len, &db) || db < 0 || db > 15) {
            elk_sim_reply_error(out, "ERR DB index is out of range");
        } else {
            elk_sim_reply_simple(out, "OK"); /* one key space: the sim never mixes dbs */
        }
    } else if (arg_is(&x.argv[0], "CONFIG")) {
        cmd_config(&x);
    } else if (arg_is(&x.argv[0], "SCRIPT")) {
        cmd_script(&x);
    } else if (arg_is(&x.argv[0], "CLIENT")) {
        elk_sim_reply_simple(out, "OK");
    } else {
        elk_sim_reply_error(out, "ERR unknown command");
    }
}
