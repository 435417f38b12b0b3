/* SPDX-License-Identifier: MIT */
/*
 * The server safety check: on every new connection, read the settings that make locks
 * unsafe and record the node's result (elk_client_node_check).
 *
 * What is checked, and what it costs (docs/redis-acl.md). A short script
 * (ELK_LOCK_SCRIPT_SAFETY) reads two INFO fields:
 *   maxmemory_policy   other than noeviction: eviction can delete a lock key before its
 *                      TTL. The one check that refuses (policy REFUSE).
 *   aof_enabled        0: a restart loses every lease; warning only (the design asks for
 *                      restarts delayed by one TTL instead, docs/design.md).
 *   CONFIG GET appendfsync   not "always": a crash can lose the last second; warning only,
 *                      and only when the ACL grants +config|get (otherwise a debug line).
 * INFO needs no CONFIG permission, so a least-privilege user can be checked. Under REFUSE
 * the node has no vote from the moment it connects until the script proved it safe: a
 * node that fails the check, or cannot be checked (NOPERM, error, timeout, field missing),
 * never votes. Fail closed.
 *
 * Settings change while connected (CONFIG SET maxmemory-policy allkeys-lru leaves no trace
 * a client could watch), so the script runs again every recheck interval on each connected
 * node (elk_client_safety_recheck_ms): one request per node per interval, not per lease. A
 * node that became unsafe loses its vote when that reply is in, at most the interval plus
 * the node's request timeout after the change (a reply later than that resets the
 * connection, and a new connection is checked before it votes). A recheck logs only what
 * changed; its transport failures decide nothing (the reconnect checks again).
 */
#include <string.h>

#include "../util/fmt.h"
#include "elk/lock_scripts.h"
#include "lock_internal.h"

/* Record node i's check result: "<head><p[0..n)>" (cut to ELK_LOCK_CHECK_TEXT_MAX - 1). */
static void lk_check_text(elk_client_t *client, size_t i, const char *head, const uint8_t *p,
                          size_t n)
{
    elk_fmt_t f;
    elk_fmt_init(&f, client->nodes[i].check, sizeof client->nodes[i].check);
    elk_fmt_str(&f, head);
    if (p != NULL) {
        elk_fmt_bytes(&f, p, n);
    }
    (void)elk_fmt_cstr(&f);
}

/* What a result logs, one line through one call (each log call site costs flash): by
 * the policy (+0 noeviction, +2 another) and AOF (+0 on, +1 off); 4: not checkable. */
static const char *const lk_safety_says[] = {
    "",
    "no AOF persistence: a restart loses locks; delay restarts by one TTL",
    "eviction can delete lock keys; set maxmemory-policy noeviction, now ",
    ("no AOF persistence (a restart loses locks; delay restarts by one TTL) and eviction can "
     "delete lock keys; set maxmemory-policy noeviction, now "),
    "safety check impossible (grant +info, docs/redis-acl.md): ",
    "safe again (maxmemory-policy noeviction): it may vote",
};

/* What heads a check's log line: by the verdict (0 none, 1 unsafe under WARN, 2 refused)
 * and whether a recheck found it (+3). */
static const char *const lk_safety_heads[] = {
    "",
    "unsafe: ",
    "refused, no vote: ",
    "changed while connected: ",
    "changed while connected: unsafe: ",
    "changed while connected: refused, no vote: ",
};

/* The SAFETY script's reply (or its failure, status) for node i: its check text, its vote
 * under REFUSE, one log line. The script's reply {policy, aof} decides the node's vote
 * (eviction) and warns (persistence); any other reply means the node cannot be checked:
 * NOPERM (the script's INFO), another error, a timeout, the policy field missing. A
 * recheck logs only a result that differs from the last one. */
static void lk_verdict(elk_client_t *client, size_t i, int status, const elk_resp_reply_t *reply,
                       bool recheck)
{
    bool refuse = client->cfg.safety == ELK_SAFETY_REFUSE;
    size_t idx = 0;
    const elk_resp_node_t *top = status == ELK_OK ? elk_resp_reply_top(reply, &idx) : NULL;
    const elk_resp_node_t *val = NULL;
    const char *why = elk_err_name(status != ELK_OK ? status : ELK_E_UNEXPECTED_REPLY);
    const char *after = "";
    bool error = elk_resp_is_error(top);
    size_t says = 4u; /* not checkable */
    size_t head = 0;
    size_t was = client->nodes[i].safety_says;
    char old[ELK_LOCK_CHECK_TEXT_MAX];
    memcpy(old, client->nodes[i].check, sizeof old);
    /* {policy, aof}: an aggregate of two (an error has no subtree; the subtree's nodes are
     * in the reply, elk/resp.h), a policy not empty */
    if (top != NULL && top->subtree >= 2u && reply->nodes[idx + 1u].len != 0u) {
        val = &reply->nodes[idx + 1u];
        says = (elk_resp_str_eq(val, "noeviction") ? 0u : 2u) +
            (elk_resp_str_eq(val + 1, "1") ? 0u : 1u);
        lk_check_text(client, i, says < 2u ? "ok" : "unsafe: maxmemory-policy ", val->str,
                      says < 2u ? 0u : val->len);
    } else {
        lk_check_text(client, i, "unchecked: ", error ? top->str : (const uint8_t *)why,
                      error ? top->len : strlen(why));
        after = client->nodes[i].check + sizeof("unchecked: ") - 1u;
    }
    if (says < 2u) {
        val = NULL;
        client->nodes[i].unsafe = 0;
        client->dirty = true; /* a waiting round may now reach its quorum */
    } else {
        head = refuse ? 2u : val != NULL ? 1u : 0u;
        if (refuse) {
            client->nodes[i].unsafe = 1;
        }
    }
    client->nodes[i].safety_says = (uint8_t)(says + 1u);
    if (recheck && was == says + 1u && strcmp(old, client->nodes[i].check) == 0) {
        return; /* the same as last time: said then */
    }
    if (recheck && says < 2u && was >= 3u) {
        says = 5u; /* unsafe or unchecked before: the vote is back */
    }
    if (says != 0u) {
        /* "safe again" a warning too: it ends one, and an agent may keep lock infos quiet */
        elk_lock__log(client, refuse && says >= 2u && says < 5u ? ELK_LOG_ERROR : ELK_LOG_WARN,
                      NULL, i, lk_safety_heads[head + (recheck ? 3u : 0u)], lk_safety_says[says],
                      val, after, ELK_OK);
    }
}

/* Both replies of the check come here, in the order they were sent: the SAFETY script's
 * while the check is pending (node_check empty), then CONFIG GET appendfsync's. (One
 * callback: each costs flash.)
 * CONFIG GET's reply is [name, value] (RESP2 array) or {name: value} (RESP3 map); an
 * error (no +config|get) is a debug line, a value other than "always" a warning. */
static void lk_on_check(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    elk_lock_session_t *s = (elk_lock_session_t *)user;
    elk_client_t *client = elk_lock__session_client(s);
    size_t i = s->index;
    size_t idx = 0;
    const elk_resp_node_t *top = status == ELK_OK ? elk_resp_reply_top(reply, &idx) : NULL;
    (void)node;
    if (client->nodes[i].check[0] == '\0') {
        lk_verdict(client, i, status, reply, false);
    } else if (elk_resp_is_error(top)) {
        elk_lock__log(client, ELK_LOG_DEBUG, NULL, i, "",
                      "appendfsync not checked (needs +config|get, docs/redis-acl.md): ", top, "",
                      ELK_OK);
    } else if (top != NULL && top->subtree >= 2u &&
               !elk_resp_str_eq(&reply->nodes[idx + 2u], "always")) {
        elk_lock__log(client, ELK_LOG_WARN, NULL, i, "",
                      "appendfsync is not always: a crash can lose recent locks; delay "
                      "restarts by one TTL "
                      "(appendfsync ",
                      &reply->nodes[idx + 2u], ")", ELK_OK);
    }
}

/* A recheck's reply for node i. A transport failure (the connection closed, or the reply
 * late: that resets it) decides nothing: the new connection is checked before it votes.
 * A recheck overtaken by a new connection's check (flag cleared) is not this one's. */
static void lk_on_recheck(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    elk_lock_session_t *s = (elk_lock_session_t *)user;
    elk_client_t *client = elk_lock__session_client(s);
    size_t i = s->index;
    (void)node;
    if (!s->safety_rechecking) {
        return;
    }
    client->nodes[i].safety_rechecking = 0;
    if (status == ELK_OK) {
        lk_verdict(client, i, status, reply, true);
    }
}

void elk_lock__safety_start(elk_client_t *client, size_t i, uint64_t now)
{
    /* Built at compile time (no strlen of the script per connection), sent by one call. */
    static const elk_resp_arg_t argv[2][3] = {
        {ELK_RESP_ARG_STR("EVAL"), ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_SAFETY), ELK_RESP_ARG_STR("0")},
        {ELK_RESP_ARG_STR("CONFIG"), ELK_RESP_ARG_STR("GET"), ELK_RESP_ARG_STR("appendfsync")}};
    const char *text = "off";
    size_t k;
    int rc;
    client->nodes[i].safety_due = 0;
    client->nodes[i].safety_rechecking = 0; /* a reply of the old connection is not this one's */
    client->nodes[i].safety_says = 0;
    client->nodes[i].safety_at = now;
    if (client->cfg.safety != ELK_SAFETY_OFF) {
        text = ""; /* pending: elk_client_node_check says so, lk_on_check waits for the script */
        if (client->cfg.safety == ELK_SAFETY_REFUSE) {
            client->nodes[i].unsafe = 2; /* no vote until the script has answered "noeviction" */
        }
        for (k = 0; k < 2u; k++) {
            rc = elk_node_send(&client->fleet->nodes[i], now, argv[k], 3, 0, lk_on_check,
                               &client->nodes[i]);
            if (rc != ELK_OK) {
                /* Behind the probe a small send buffer (an MCU's 768-byte block) is full:
                 * the check goes after the next flush (elk_client_poll), still pending. */
                client->nodes[i].safety_due = k == 0u && rc == ELK_E_QUEUE_FULL ? 1u : 0u;
                text =
                    k != 0u || client->nodes[i].safety_due ? text : "unchecked: request not sent";
                break;
            }
        }
    }
    /* After the sends: elk_node_send never calls back from inside. */
    lk_check_text(client, i, text, NULL, 0);
}

uint32_t elk_client_safety_recheck_ms(const elk_client_t *client)
{
    elk_lock_config_t d;
    uint32_t ttl;
    size_t k;
    if (client == NULL) {
        return 0;
    }
    if (client->cfg.safety_recheck_ms != 0u) {
        return client->cfg.safety_recheck_ms;
    }
    elk_lock_config_defaults(&d);
    ttl = d.ttl_ms;
    for (k = 0; k < client->lock_count; k++) {
        uint32_t t = client->locks[k]->cfg.ttl_ms;
        ttl = k == 0u || t < ttl ? t : ttl;
    }
    return ttl / 2u > 0u ? ttl / 2u : 1u;
}

uint64_t elk_client_safety_bound_ms(const elk_client_t *client)
{
    uint64_t most = 0;
    size_t k;
    if (client == NULL || client->fleet == NULL || client->cfg.safety == ELK_SAFETY_OFF) {
        return 0;
    }
    for (k = 0; k < client->fleet->count; k++) {
        uint32_t t = client->fleet->nodes[k].cfg.request_timeout_ms;
        most = t > most ? t : most;
    }
    return elk_client_safety_recheck_ms(client) + most;
}

uint64_t elk_lock__safety_recheck(elk_client_t *client, size_t i, uint64_t now)
{
    static const elk_resp_arg_t argv[3] = {
        ELK_RESP_ARG_STR("EVAL"), ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_SAFETY), ELK_RESP_ARG_STR("0")};
    uint64_t due = client->nodes[i].safety_at + elk_client_safety_recheck_ms(client);
    /* not while the connection's own check is pending (or waits for room) or one runs */
    if (client->cfg.safety == ELK_SAFETY_OFF || client->nodes[i].check[0] == '\0' ||
        client->nodes[i].safety_due || client->nodes[i].safety_rechecking ||
        !elk_node_is_ready(&client->fleet->nodes[i])) {
        return UINT64_MAX;
    }
    if (now < due) {
        return due;
    }
    /* not sent (send buffer or request queue full behind a round): the next poll tries
     * again, after the requests in flight have answered or timed out */
    if (elk_node_send(&client->fleet->nodes[i], now, argv, 3, 0, lk_on_recheck,
                      &client->nodes[i]) == ELK_OK) {
        client->nodes[i].safety_at = now;
        client->nodes[i].safety_rechecking = 1;
    }
    return UINT64_MAX;
}

const char *elk_client_node_check(const elk_client_t *client, size_t node)
{
    if (client == NULL || client->fleet == NULL || node >= client->fleet->count) {
        return "";
    }
    return client->nodes[node].check[0] != '\0' ? client->nodes[node].check : "pending";
}

bool elk_client_node_votes(const elk_client_t *client, size_t node)
{
    /* elk_client_node_check is "" exactly for a node that is not one of the fleet's. The
     * vote as a round would get it at the last poll's time (elk_client_ready agrees). */
    return elk_client_node_check(client, node)[0] != '\0' &&
        elk_lock__node_vote(client, node, LK_ACQUIRE, client->now) == ELK_OK;
}
