/* Connection handshake after the transport is up: AUTH, HELLO 3, SELECT. One command
 * at a time, so the state always names the reply being waited for. */
#include "node_internal.h"

#include <string.h>

/* Queue one handshake command, its words a, b, c (NULL: absent), and enter state.
 * One argv built here rather than one per command in the caller (smaller on Cortex-M). */
static void elk_node_hs_send(elk_node_t *node, uint64_t now, elk_node_state_t state,
                             const char *a, const char *b, const char *c)
{
    const char *words[3];
    elk_resp_arg_t argv[3];
    size_t argc = 0;
    size_t i;
    int r;
    words[0] = a;
    words[1] = b;
    words[2] = c;
    memset(argv, 0, sizeof argv);
    for (i = 0; i < 3u; i++) {
        if (words[i] != NULL) {
            argv[argc].ptr = (const uint8_t *)words[i];
            argv[argc++].len = strlen(words[i]);
        }
    }
    r = elk_node_io_encode(node, argv, argc);
    if (r != ELK_OK) {
        /* Only a password or user name longer than a pool block gets here. */
        elk_node_conn_fail(node, now, r, ELK_E_DISCONNECTED);
        return;
    }
    node->handshake_pending = 1;
    elk_node_conn_set_state(node, state, now, ELK_OK);
}

static void elk_node_hs_ready(elk_node_t *node, uint64_t now)
{
    node->stats.connects++;
    node->backoff_ms = node->cfg.backoff_min_ms;
    node->handshake_pending = 0;
    if (elk_node_log_on(node, ELK_LOG_INFO)) {
        char buf[ELK_NODE_LOG_LINE];
        elk_fmt_t f;
        elk_node_log_begin(node, &f, buf, sizeof buf);
        elk_fmt_str(&f, "ready (");
        elk_fmt_str(&f, node->stats.resp3 ? "RESP3" : "RESP2");
        if (node->cfg.db != 0u) {
            elk_fmt_str(&f, ", db ");
            elk_fmt_uint(&f, node->cfg.db);
        }
        elk_fmt_str(&f, ")");
        elk_node_log_end(node, ELK_LOG_INFO, &f);
    }
    elk_node_conn_set_state(node, ELK_NODE_READY, now, ELK_OK);
}

/* Go to the first step after `done` that this configuration needs. */
static void elk_node_hs_after(elk_node_t *node, uint64_t now, elk_node_state_t done)
{
    if (done == ELK_NODE_CONNECTING && node->cfg.password != NULL) {
        /* AUTH [user] password */
        elk_node_hs_send(node, now, ELK_NODE_AUTH, "AUTH", node->cfg.username, node->cfg.password);
        return;
    }
    if ((done == ELK_NODE_CONNECTING || done == ELK_NODE_AUTH) && node->cfg.resp3) {
        elk_node_hs_send(node, now, ELK_NODE_HELLO, "HELLO", "3", NULL);
        return;
    }
    if (done != ELK_NODE_SELECT && node->cfg.db != 0u) {
        /* The same bulk string as an integer argument would be. */
        char db[21];
        db[elk_fmt_u64(node->cfg.db, db)] = '\0';
        elk_node_hs_send(node, now, ELK_NODE_SELECT, "SELECT", db, NULL);
        return;
    }
    elk_node_hs_ready(node, now);
}

void elk_node_hs_start(elk_node_t *node, uint64_t now)
{
    elk_node_hs_after(node, now, ELK_NODE_CONNECTING);
}

/* Log the server's own words: they say which of user, password or ACL rule is wrong. */
static void elk_node_hs_log_refusal(elk_node_t *node, int level, const char *what,
                                    const elk_resp_node_t *top)
{
    if (elk_node_log_on(node, level)) {
        char buf[ELK_NODE_LOG_LINE];
        elk_fmt_t f;
        elk_node_log_begin(node, &f, buf, sizeof buf);
        elk_fmt_str(&f, what);
        elk_fmt_str(&f, ": ");
        elk_fmt_bytes(&f, top->str, top->len);
        elk_node_log_end(node, level, &f);
    }
}

/* "-NOAUTH Authentication required.": the server has a password and none was given
 * (or HELLO came before AUTH). Falling back to RESP2 would only defer the failure to
 * every later command, so it is an AUTH failure now. */
static bool elk_node_hs_is_noauth(const elk_resp_node_t *top)
{
    return top->str != NULL && top->len >= 6u && memcmp(top->str, "NOAUTH", 6) == 0;
}

/* AUTH and SELECT succeed only with +OK. "Not an error" is not enough: a hostile or
 * confused server answering :1 must not count as authenticated. */
static bool elk_node_hs_is_ok(const elk_resp_node_t *top)
{
    return top->type == ELK_RESP_SIMPLE && elk_resp_str_eq(top, "OK");
}

/* HELLO 3 succeeds with a map of server properties (RESP3 from then on). A RESP2
 * server that somehow accepted HELLO would send a flat array; anything else is a
 * reply we cannot trust to have switched the protocol. */
static bool elk_node_hs_is_hello_reply(const elk_resp_node_t *top)
{
    return top->type == ELK_RESP_MAP || top->type == ELK_RESP_ARRAY;
}

void elk_node_hs_reply(elk_node_t *node, uint64_t now, const elk_resp_reply_t *reply)
{
    const elk_resp_node_t *top = elk_resp_reply_top(reply, NULL);
    bool err;
    if (top == NULL) {
        top = &reply->nodes[0]; /* only attributes: judged as they are */
    }
    err = elk_resp_is_error(top);
    node->handshake_pending = 0;
    if (err && elk_node_hs_is_noauth(top)) {
        elk_node_hs_log_refusal(node, ELK_LOG_ERROR, "server requires AUTH (configure a password)", top);
        elk_node_conn_fail(node, now, ELK_E_AUTH, ELK_E_DISCONNECTED);
        return;
    }
    switch (node->state) {
    case ELK_NODE_AUTH:
        if (err) {
            elk_node_hs_log_refusal(node, ELK_LOG_ERROR, "AUTH refused", top);
            elk_node_conn_fail(node, now, ELK_E_AUTH, ELK_E_DISCONNECTED);
            return;
        }
        if (!elk_node_hs_is_ok(top)) {
            elk_node_hs_log_refusal(node, ELK_LOG_ERROR, "AUTH answered with something other than +OK", top);
            elk_node_conn_fail(node, now, ELK_E_UNEXPECTED_REPLY, ELK_E_DISCONNECTED);
            return;
        }
        elk_node_hs_after(node, now, ELK_NODE_AUTH);
        return;
    case ELK_NODE_HELLO:
        /* Servers before Redis 6 (or with HELLO renamed away) refuse it: RESP2 then. */
        node->stats.resp3 = !err;
        if (err) {
            elk_node_hs_log_refusal(node, ELK_LOG_INFO, "HELLO 3 refused, using RESP2", top);
        } else if (!elk_node_hs_is_hello_reply(top)) {
            node->stats.resp3 = false;
            elk_node_hs_log_refusal(node, ELK_LOG_ERROR, "HELLO answered with something other than a map", top);
            elk_node_conn_fail(node, now, ELK_E_UNEXPECTED_REPLY, ELK_E_DISCONNECTED);
            return;
        }
        elk_node_hs_after(node, now, ELK_NODE_HELLO);
        return;
    case ELK_NODE_SELECT:
        if (err) {
            elk_node_hs_log_refusal(node, ELK_LOG_ERROR, "SELECT refused", top);
            elk_node_conn_fail(node, now, ELK_E_SELECT, ELK_E_DISCONNECTED);
            return;
        }
        if (!elk_node_hs_is_ok(top)) {
            elk_node_hs_log_refusal(node, ELK_LOG_ERROR, "SELECT answered with something other than +OK", top);
            elk_node_conn_fail(node, now, ELK_E_UNEXPECTED_REPLY, ELK_E_DISCONNECTED);
            return;
        }
        elk_node_hs_after(node, now, ELK_NODE_SELECT);
        return;
    default:
        elk_node_conn_fail(node, now, ELK_E_UNEXPECTED_REPLY, ELK_E_DISCONNECTED);
        return;
    }
}
