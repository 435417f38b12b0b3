/* SPDX-License-Identifier: MIT */
/* Connection handshake after the transport is up: AUTH, HELLO 3, SELECT. One command
 * at a time, so the state always names the reply being waited for. */
#include "node_internal.h"

#include <string.h>

/* Queue one handshake command, its words a, b, c (NULL: absent). Returns state (the
 * verdict: enter it) or why the connection fails. One argv built here rather than one
 * per command in the caller (smaller on Cortex-M). */
static int elk_node_hs_send(elk_node_t *node, elk_node_state_t state, const char *a, const char *b,
                            const char *c)
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
    r = elk_node__io_encode(node, argv, argc);
    if (r != ELK_OK) {
        return r; /* only a password or user name longer than a pool block */
    }
    node->handshake_pending = 1;
    return (int)state;
}

static int elk_node_hs_ready(elk_node_t *node)
{
    node->stats.connects++;
    node->backoff_ms = node->cfg.backoff_min_ms;
    node->handshake_pending = 0;
    if (elk_node__log_on(node, ELK_LOG_INFO)) {
        char buf[ELK_NODE_LOG_LINE];
        elk_fmt_t f;
        elk_node__log_begin(node, &f, buf, sizeof buf);
        elk_fmt_str(&f, "ready (");
        elk_fmt_str(&f, node->stats.resp3 ? "RESP3" : "RESP2");
        if (node->cfg.db != 0u) {
            elk_fmt_str(&f, ", db ");
            elk_fmt_uint(&f, node->cfg.db);
        }
        elk_fmt_str(&f, ")");
        elk_node__log_end(node, ELK_LOG_INFO, &f);
    }
    return ELK_NODE_READY;
}

/* The first step after `done` that this configuration needs. */
static int elk_node_hs_after(elk_node_t *node, elk_node_state_t done)
{
    if (done == ELK_NODE_CONNECTING && node->cfg.password != NULL) {
        /* AUTH [user] password */
        return elk_node_hs_send(node, ELK_NODE_AUTH, "AUTH", node->cfg.username,
                                node->cfg.password);
    }
    if ((done == ELK_NODE_CONNECTING || done == ELK_NODE_AUTH) && node->cfg.resp3) {
        return elk_node_hs_send(node, ELK_NODE_HELLO, "HELLO", "3", NULL);
    }
    if (done != ELK_NODE_SELECT && node->cfg.db != 0u) {
        /* The same bulk string as an integer argument would be. */
        char db[21];
        db[elk_fmt_u64(node->cfg.db, db)] = '\0';
        return elk_node_hs_send(node, ELK_NODE_SELECT, "SELECT", db, NULL);
    }
    return elk_node_hs_ready(node);
}

int elk_node__hs_start(elk_node_t *node)
{
    return elk_node_hs_after(node, ELK_NODE_CONNECTING);
}

/* Log the server's own words after "<what><why>: ": they say which of user, password or
 * ACL rule is wrong. */
static void elk_node_hs_log_refusal(const elk_node_t *node, int level, const char *what,
                                    const char *why, const elk_resp_node_t *top)
{
    if (elk_node__log_on(node, level)) {
        char buf[ELK_NODE_LOG_LINE];
        elk_fmt_t f;
        elk_node__log_begin(node, &f, buf, sizeof buf);
        elk_fmt_str(&f, what);
        elk_fmt_str(&f, why);
        elk_fmt_str(&f, ": ");
        elk_fmt_bytes(&f, top->str, top->len);
        elk_node__log_end(node, level, &f);
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
 * confused server answering :1 must not count as authenticated. Returns ELK_OK,
 * `refused` for an error reply, ELK_E_UNEXPECTED_REPLY for anything else. */
static int elk_node_hs_judge_ok(const elk_node_t *node, const elk_resp_node_t *top, bool err,
                                const char *what, int refused)
{
    if (err) {
        elk_node_hs_log_refusal(node, ELK_LOG_ERROR, what, " refused", top);
        return refused;
    }
    if (top->type != ELK_RESP_SIMPLE || !elk_resp_str_eq(top, "OK")) {
        elk_node_hs_log_refusal(node, ELK_LOG_ERROR, what,
                                " answered with something other than +OK", top);
        return ELK_E_UNEXPECTED_REPLY;
    }
    return ELK_OK;
}

/* HELLO 3 succeeds with a map of server properties (RESP3 from then on). Servers before
 * Redis 6 (or with HELLO renamed away) refuse it: RESP2 then. A RESP2 server that
 * somehow accepted HELLO would send a flat array; anything else is a reply we cannot
 * trust to have switched the protocol. */
static int elk_node_hs_judge_hello(elk_node_t *node, const elk_resp_node_t *top, bool err)
{
    node->stats.resp3 = !err;
    if (err) {
        elk_node_hs_log_refusal(node, ELK_LOG_INFO, "HELLO", " 3 refused, using RESP2", top);
    } else if (top->type != ELK_RESP_MAP && top->type != ELK_RESP_ARRAY) {
        node->stats.resp3 = false;
        elk_node_hs_log_refusal(node, ELK_LOG_ERROR, "HELLO",
                                " answered with something other than a map", top);
        return ELK_E_UNEXPECTED_REPLY;
    }
    return ELK_OK;
}

int elk_node__hs_reply(elk_node_t *node, const elk_resp_reply_t *reply)
{
    const elk_resp_node_t *top = elk_resp_reply_top(reply, NULL);
    bool err;
    int r;
    if (node->handshake_pending == 0u) {
        return ELK_E_UNEXPECTED_REPLY; /* nothing was asked */
    }
    if (top == NULL) {
        top = &reply->nodes[0]; /* only attributes: judged as they are */
    }
    err = elk_resp_is_error(top);
    node->handshake_pending = 0;
    if (err && elk_node_hs_is_noauth(top)) {
        elk_node_hs_log_refusal(node, ELK_LOG_ERROR, "server requires AUTH (configure a password)",
                                "", top);
        return ELK_E_AUTH;
    }
    switch (node->state) {
    case ELK_NODE_AUTH:
        r = elk_node_hs_judge_ok(node, top, err, "AUTH", ELK_E_AUTH);
        break;
    case ELK_NODE_HELLO:
        r = elk_node_hs_judge_hello(node, top, err);
        break;
    case ELK_NODE_SELECT:
        r = elk_node_hs_judge_ok(node, top, err, "SELECT", ELK_E_SELECT);
        break;
    default:
        return ELK_E_UNEXPECTED_REPLY;
    }
    return r != ELK_OK ? r : elk_node_hs_after(node, node->state);
}
