/* SPDX-License-Identifier: MIT */
/*
 * Requests of the lease engine on the wire: the four scripts as EVALSHA (or EVAL
 * after NOSCRIPT), request tickets, the keys, and the classification of each node's reply
 * (ACQUIRE and EXTEND also carry the server's clock). The wire knows no policy: whether a
 * node may vote, the token floor and what the clock check says of a reply are the
 * caller's (lock_round.c asks lock_session.c and lock_hygiene.c), passed in as arguments.
 */
#include <string.h>

#include "lock_internal.h"

/* elk/lock.h sizes the longest request with these lengths (the scripts are not public). */
#define LK_MAX_(a, b) ((a) > (b) ? (a) : (b))
typedef char elk_lock_script_len_max_is_the_longest_script
    [(ELK_LOCK_SCRIPT_LEN_MAX ==
      LK_MAX_(LK_MAX_(sizeof(ELK_LOCK_SCRIPT_ACQUIRE), sizeof(ELK_LOCK_SCRIPT_EXTEND)),
              LK_MAX_(sizeof(ELK_LOCK_SCRIPT_RELEASE), sizeof(ELK_LOCK_SCRIPT_COMMIT))) -
          1u)
         ? 1
         : -1];
typedef char elk_lock_marker_name_len_is_its_length
    [(ELK_LOCK_MARKER_NAME_LEN == sizeof(ELK_LOCK_MARKER_NAME) - 1u) ? 1 : -1];

/* Longest key with a suffix appended: the lock key plus ":released". */
#define LK_KEY_BUF (CONFIG_ELK_MAX_KEY_LEN + 16u)

/* A free ticket of lock for node's request of round r sent now (its kind, and EVAL when r's
 * NOSCRIPT mark for node is set); NULL when every ticket is in use. */
static elk_lock_ticket_t *ticket_take(elk_lock_t *lock, const elk_lock_round_t *r, size_t node,
                                      uint64_t now)
{
    size_t i;
    for (i = 0; i < ELK_LOCK_TICKETS; i++) {
        elk_lock_ticket_t *t = &lock->tickets[i];
        if (!t->in_use) {
            t->in_use = 1;
            t->lock = lock;
            t->seq = r->seq;
            t->node = (uint8_t)node;
            t->kind = r->kind;
            t->eval = (r->eval_mask & LK_BIT(node)) != 0u ? 1u : 0u;
            t->t_send = now;
            return t;
        }
    }
    return NULL;
}

size_t elk_lock__key_with(const elk_lock_t *lock, const char *suffix, char *out)
{
    size_t n = strlen(suffix);
    memcpy(out, lock->key, lock->key_len);
    memcpy(out + lock->key_len, suffix, n);
    return lock->key_len + n;
}

size_t elk_lock__marker_key(const elk_client_t *client, char *out)
{
    size_t plen = strlen(client->cfg.key_prefix); /* <= CONFIG_ELK_MAX_KEY_LEN (init) */
    memcpy(out, client->cfg.key_prefix, plen);
    memcpy(out + plen, ELK_LOCK_MARKER_NAME, sizeof(ELK_LOCK_MARKER_NAME) - 1u);
    return plen + sizeof(ELK_LOCK_MARKER_NAME) - 1u;
}

static void lk_arg(elk_resp_arg_t *a, const void *p, size_t len)
{
    a->ptr = (const uint8_t *)p;
    a->len = len;
}

/* SCRIPT LOAD of the four scripts, in the order the client preloads them; [2], the
 * text, is also EVAL's argument. Lengths known at compile time: no strlen of a script
 * per request. */
const elk_resp_arg_t elk_lock__script_load[5][3] = {
    {ELK_RESP_ARG_STR("SCRIPT"), ELK_RESP_ARG_STR("LOAD"),
     ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_ACQUIRE)},
    {ELK_RESP_ARG_STR("SCRIPT"), ELK_RESP_ARG_STR("LOAD"),
     ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_EXTEND)},
    {ELK_RESP_ARG_STR("SCRIPT"), ELK_RESP_ARG_STR("LOAD"),
     ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_RELEASE)},
    {ELK_RESP_ARG_STR("SCRIPT"), ELK_RESP_ARG_STR("LOAD"),
     ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_COMMIT)},
    {ELK_RESP_ARG_STR("SCRIPT"), ELK_RESP_ARG_STR("LOAD"),
     ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_EXTEND_BATCH)}};
/* The batched renewal is never the longest request: a pool block holds its EVAL with one
 * lease (more go as fit, elk_lock__batch_collect). */
typedef char elk_lock_batch_script_is_not_the_longest
    [(sizeof(ELK_LOCK_SCRIPT_EXTEND_BATCH) - 1u <= ELK_LOCK_SCRIPT_LEN_MAX) ? 1 : -1];
/* Nor is the release in bulk (sent as EVAL: it is not preloaded). */
typedef char elk_lock_release_batch_script_is_not_the_longest
    [(sizeof(ELK_LOCK_SCRIPT_RELEASE_BATCH) - 1u <= ELK_LOCK_SCRIPT_LEN_MAX) ? 1 : -1];
static const elk_resp_arg_t lk_sha[4] = {
    ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_ACQUIRE_SHA1), ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_EXTEND_SHA1),
    ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_RELEASE_SHA1), ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_COMMIT_SHA1)};

/* A round kind's script in elk_lock__script_load and lk_sha: anything else than ACQUIRE, COMMIT or
 * EXTEND is RELEASE. */
static const uint8_t lk_script_of[] = {2u, 0u, 3u, 1u,
                                       2u}; /* NONE, ACQUIRE, COMMIT, EXTEND, RELEASE */
typedef char elk_lock_script_kinds_in_order
    [(LK_ACQUIRE == 1 && LK_COMMIT == 2 && LK_EXTEND == 3 && LK_RELEASE == 4) ? 1 : -1];

int elk_lock__send_script(elk_lock_t *lock, const elk_lock_round_t *r, size_t node, uint64_t now,
                          int64_t floor, elk_node_reply_fn on_reply)
{
    elk_client_t *client = lock->client;
    uint8_t kind = r->kind;
    bool eval = (r->eval_mask & LK_BIT(node)) != 0u;
    elk_resp_arg_t argv[12];
    char key2[LK_KEY_BUF];
    char key3[LK_KEY_BUF];
    char key4[CONFIG_ELK_MAX_KEY_LEN + sizeof(ELK_LOCK_MARKER_NAME)];
    size_t argc = 0;
    static const elk_resp_arg_t verb[2] = {ELK_RESP_ARG_STR("EVALSHA"), ELK_RESP_ARG_STR("EVAL")};
    size_t script;
    static const elk_resp_arg_t flag[2] = {ELK_RESP_ARG_STR("0"), ELK_RESP_ARG_STR("1")};
    elk_lock_ticket_t *t;
    bool fence;
    bool release;
    int rc;

    if (!elk_node_is_ready(&client->fleet->nodes[node])) {
        return ELK_E_NOT_CONNECTED;
    }
    /* The four argument lists share most of their items; built in one pass, not one
     * list per script, as that was a third of this module's flash. Anything else than
     * ACQUIRE, COMMIT or EXTEND is RELEASE. Zeroed once, then only the fields that
     * differ are set: the elk_resp_arg_* initialisers write every field each time.
     * Keys: the lock key; the fence counter (ACQUIRE, COMMIT); the lock-delay marker
     * (all but COMMIT); the fleet marker (ACQUIRE, EXTEND), elk/lock_scripts.h. */
    fence = (kind == LK_ACQUIRE || kind == LK_COMMIT);
    release = !fence && kind != LK_EXTEND;
    memset(argv, 0, sizeof(argv));
    argv[argc++] = verb[eval];
    script = lk_script_of[kind <= LK_RELEASE ? kind : LK_RELEASE];
    argv[argc++] = eval ? elk_lock__script_load[script][2] : lk_sha[script];
    argv[argc].is_int = true;
    argv[argc++].ival = kind == LK_ACQUIRE ? 4 : kind == LK_EXTEND ? 3 : 2; /* numkeys */
    lk_arg(&argv[argc++], lock->key, lock->key_len);
    if (fence) {
        lk_arg(&argv[argc++], key2, elk_lock__key_with(lock, ELK_LOCK_FENCE_SUFFIX, key2));
    }
    if (kind != LK_COMMIT) {
        lk_arg(&argv[argc++], key3, elk_lock__key_with(lock, ELK_LOCK_DELAY_SUFFIX, key3));
    }
    if (kind == LK_ACQUIRE || kind == LK_EXTEND) {
        lk_arg(&argv[argc++], key4, elk_lock__marker_key(client, key4));
    }
    if (release) {
        lk_arg(&argv[argc++], lock->rel_value, lock->rel_value_len);
        lk_arg(&argv[argc++], key2, elk_lock__key_with(lock, ELK_LOCK_CHANNEL_SUFFIX, key2));
    } else {
        lk_arg(&argv[argc++], lock->value, lock->value_len);
        argv[argc].is_int = true;
        argv[argc++].ival = kind == LK_COMMIT ? (int64_t)lock->token : (int64_t)lock->cfg.ttl_ms;
        if (kind == LK_ACQUIRE) {
            argv[argc++] = flag[lock->cfg.fencing];
        }
        if (kind != LK_COMMIT) {
            argv[argc].is_int = true;
            argv[argc++].ival = (int64_t)lock->cfg.lock_delay_ms;
        }
        if (kind == LK_ACQUIRE) { /* the token's floor: the fleet's clock as we know it */
            argv[argc].is_int = true;
            argv[argc++].ival = floor;
        }
    }
    t = ticket_take(lock, r, node, now);
    if (t == NULL) {
        return ELK_E_QUEUE_FULL;
    }
    rc = elk_node_send(&client->fleet->nodes[node], now, argv, argc, r->limit, on_reply, t);
    if (rc != ELK_OK) {
        t->in_use = 0;
    }
    return rc;
}

static void ignore_reply(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    (void)user;
    (void)node;
    (void)status;
    (void)reply;
}

int elk_lock__send_plain(elk_client_t *client, size_t node, const elk_resp_arg_t *argv, size_t argc,
                         uint64_t now)
{
    /* elk_node_send refuses a node that is not READY with ELK_E_NOT_CONNECTED itself. */
    return elk_node_send(&client->fleet->nodes[node], now, argv, argc, 0, ignore_reply, client);
}

static void copy_text(elk_lock_node_result_t *r, const elk_resp_node_t *n)
{
    size_t len = n->len < ELK_LOCK_NODE_TEXT_MAX - 1u ? n->len : ELK_LOCK_NODE_TEXT_MAX - 1u;
    size_t i;
    for (i = 0; i < len; i++) {
        uint8_t c = n->str[i];
        /* A hostile server must not put control bytes into our logs. */
        r->text[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    r->text[len] = '\0';
}

/* The script's result in a reply: an integer for COMMIT and RELEASE, {result, server_us,
 * marker_ms} for ACQUIRE and EXTEND (*server_ms gets the second / 1000, 0 if it is not a
 * positive integer; *marker_ms the third, 0 unless positive). NULL when the reply does not
 * have that shape. top is the reply's top value; an aggregate's nodes follow it
 * (elk/resp.h). */
static const elk_resp_node_t *lk_result_of(uint8_t kind, const elk_resp_node_t *top,
                                           int64_t *server_ms, int64_t *marker_ms)
{
    const elk_resp_node_t *n;
    *server_ms = 0;
    *marker_ms = 0;
    if (kind != LK_ACQUIRE && kind != LK_EXTEND) {
        return top->type == ELK_RESP_INTEGER ? top : NULL;
    }
    /* {result, server_us, marker_ms}: an array of exactly three integers, its nodes after it */
    if (top->type != ELK_RESP_ARRAY || top->integer != 3 || top->subtree != 3u) {
        return NULL;
    }
    n = top + 1;
    if (n[0].type != ELK_RESP_INTEGER || n[1].type != ELK_RESP_INTEGER ||
        n[2].type != ELK_RESP_INTEGER) {
        return NULL;
    }
    *server_ms = n[1].integer > 0 ? n[1].integer / 1000 : 0;
    *marker_ms = n[2].integer > 0 ? n[2].integer : 0;
    return n;
}

static bool is_noscript(const elk_resp_node_t *n)
{
    return n->len >= 8u && memcmp(n->str, "NOSCRIPT", 8) == 0;
}

/* Positive, busy or unexpected, from the script's integer reply. */
static uint8_t classify(uint8_t kind, int64_t v, uint64_t token)
{
    switch (kind) {
    case LK_ACQUIRE:
        return v >= 0
            ? ELK_LOCK_NODE_OK
            : (v == ELK_LOCK_ACQUIRE_BUSY || v == ELK_LOCK_ACQUIRE_DELAYED ? ELK_LOCK_NODE_BUSY
                                                                           : ELK_LOCK_NODE_ERROR);
    case LK_COMMIT:
        if (v == ELK_LOCK_COMMIT_NOT_HELD) {
            return ELK_LOCK_NODE_BUSY;
        }
        return (v >= 0 && (uint64_t)v >= token) ? ELK_LOCK_NODE_OK : ELK_LOCK_NODE_ERROR;
    default: /* EXTEND, RELEASE */
        return v == 1 ? ELK_LOCK_NODE_OK : (v == 0 ? ELK_LOCK_NODE_BUSY : ELK_LOCK_NODE_ERROR);
    }
}

/* What an answer st (err) of a node is worth: none when the node's clock jumped (clock: it
 * counts as ERROR); from a node without a vote (novote: amnesic) no positive vote, but its
 * "value gone" (BUSY) still counts, as it only ends a hold sooner; err then says it came from
 * such a node (no release follows, lock_engine.c). */
static uint8_t lk_weigh(uint8_t st, int *err, int clock, int novote)
{
    if (clock != ELK_OK) {
        *err = clock;
        return ELK_LOCK_NODE_ERROR;
    }
    if (novote == ELK_OK || st == ELK_LOCK_NODE_ERROR || *err == ELK_E_LOCK_DELAY) {
        return st;
    }
    *err = novote;
    return st == ELK_LOCK_NODE_OK ? ELK_LOCK_NODE_ERROR : st;
}

void elk_lock__reply_decode(elk_lock_ticket_t *t, int status, const elk_resp_reply_t *reply,
                            elk_lock_reply_t *out)
{
    out->status = status;
    out->top = status == ELK_OK ? elk_resp_reply_top(reply, NULL) : NULL;
    out->server_ms = 0;
    out->marker_ms = 0;
    out->res =
        out->top != NULL ? lk_result_of(t->kind, out->top, &out->server_ms, &out->marker_ms) : NULL;
    t->in_use = 0;
}

void elk_lock__reply_record(const elk_lock_ticket_t *t, const elk_lock_reply_t *rp, int clock,
                            int novote)
{
    elk_lock_t *lock = t->lock;
    elk_client_t *client = lock->client;
    size_t i = t->node;
    uint8_t kind = t->kind;
    /* A release ticket belongs to the release round, any other to the foreground one. */
    elk_lock_round_t *round = kind == LK_RELEASE ? &lock->rel : &lock->fg;
    elk_lock_node_result_t *r = &round->results[i];
    const elk_resp_node_t *top = rp->top;
    const elk_resp_node_t *res = rp->res;
    uint8_t st = ELK_LOCK_NODE_ERROR;
    int err = ELK_E_UNEXPECTED_REPLY;

    if (t->seq != round->seq || kind != round->kind) {
        return; /* a reply of a round already decided or abandoned */
    }
    if ((round->pending_mask & LK_BIT(i)) == 0u) {
        return;
    }
    client->dirty = true;
    r->rtt_ms = client->now > round->t_send ? (uint32_t)(client->now - round->t_send) : 0u;
    /* Every outcome but a NOSCRIPT to resend ends the same way: one copy of the stores. */
    if (rp->status != ELK_OK) {
        st = rp->status == ELK_E_TIMEOUT ? ELK_LOCK_NODE_TIMEOUT : ELK_LOCK_NODE_ERROR;
        err = rp->status;
    } else if (top == NULL) {
        /* no value at all: unexpected */
    } else if (elk_resp_is_error(top)) {
        bool noscript = is_noscript(top);
        if (noscript && !t->eval) {
            /* Script cache flushed or server restarted: resend the text from the engine
             * step (not from inside the node's poll). The node stays pending. */
            round->eval_mask |= LK_BIT(i);
            return;
        }
        err = noscript ? ELK_E_NOSCRIPT : ELK_E_SERVER_ERROR;
        copy_text(r, top);
    } else if (res != NULL) {
        r->server_ms = rp->server_ms;
        r->value = res->integer;
        st = classify(kind, res->integer, lock->token);
        if (st != ELK_LOCK_NODE_ERROR) {
            err = res->integer == ELK_LOCK_ACQUIRE_DELAYED && kind == LK_ACQUIRE ? ELK_E_LOCK_DELAY
                                                                                 : ELK_OK;
        }
        st = lk_weigh(st, &err, clock, novote);
    }
    r->status = st;
    r->err = err;
    round->pending_mask &= ~LK_BIT(i);
}

/* ------------------------------------------- batched renewals and releases */

/* Bytes of a bulk string of len bytes: "$<len>\r\n<bytes>\r\n". */
static size_t lk_bulk_size(size_t len)
{
    size_t d = 1;
    size_t v = len;
    while (v >= 10u) {
        v /= 10u;
        d++;
    }
    return 1u + d + 2u + len + 2u;
}

/* The arguments one batch request shares (verb, script, numkeys, marker key, ttl) and
 * the array header, bounded from above: numkeys and argc have at most 3 digits (at most
 * ELK_LOCK_BATCH_MAX + 1 keys, 2 ELK_LOCK_BATCH_MAX + 5 arguments), the ttl at most 10.
 * A release in bulk shares only EVAL, its text and numkeys (fewer keys and arguments). */
static size_t lk_batch_fixed(const elk_client_t *client, const elk_lock_ticket_t *t)
{
    bool eval = t->eval != 0u;
    if (t->kind == LK_RELEASE) {
        return 6u + lk_bulk_size(sizeof(ELK_LOCK_SCRIPT_RELEASE_BATCH) - 1u) + lk_bulk_size(4u) +
            lk_bulk_size(3u);
    }
    return 6u + lk_bulk_size(eval ? sizeof(ELK_LOCK_SCRIPT_EXTEND_BATCH) - 1u : 40u) +
        lk_bulk_size(eval ? 4u : 7u) + lk_bulk_size(3u) +
        lk_bulk_size(strlen(client->cfg.key_prefix) + sizeof(ELK_LOCK_MARKER_NAME) - 1u) +
        lk_bulk_size(10u);
}

/* What one lease adds: its key and the value it renews (or releases). */
static size_t lk_batch_item(const elk_lock_ticket_t *t)
{
    const elk_lock_t *lock = t->lock;
    return lk_bulk_size(lock->key_len) +
        lk_bulk_size(t->kind == LK_RELEASE ? lock->rel_value_len : lock->value_len);
}

typedef char elk_lock_batch_max_fits_three_digits
    [(ELK_LOCK_BATCH_MAX >= 1 && 2 * ELK_LOCK_BATCH_MAX + 5 < 1000) ? 1 : -1];

int elk_lock__queue_batched(elk_lock_t *lock, const elk_lock_round_t *r, size_t node, uint64_t now,
                            elk_lock_ticket_t **queue)
{
    elk_client_t *client = lock->client;
    elk_lock_ticket_t *t;
    if (!elk_node_is_ready(&client->fleet->nodes[node])) {
        return ELK_E_NOT_CONNECTED;
    }
    t = ticket_take(lock, r, node, now);
    if (t == NULL) {
        return ELK_E_QUEUE_FULL;
    }
    /* in front: O(1) whatever the number of leases; the order is fixed all the same */
    t->next = queue[node];
    queue[node] = t;
    return ELK_OK;
}

/* Whether b may share a request with a: the same script; for renewals the same verb, ttl
 * (ARGV[1]) and drift terms (the clock check judges the one reading of the reply by a's
 * config for all). Releases in bulk always go as EVAL and share nothing else. */
static bool lk_batch_fits(const elk_lock_ticket_t *a, const elk_lock_ticket_t *b)
{
    const elk_lock_config_t *x = &a->lock->cfg;
    const elk_lock_config_t *y = &b->lock->cfg;
    if (a->kind != b->kind) {
        return false;
    }
    return a->kind == LK_RELEASE ||
        (a->eval == b->eval && x->ttl_ms == y->ttl_ms &&
         x->drift_factor_ppm == y->drift_factor_ppm && x->drift_fixed_ms == y->drift_fixed_ms);
}

/* A ticket still of its lock's running round (a callback of another lock's event may have
 * ended it since it was queued, in the same poll): the renewal, or the release. */
static bool lk_batch_live(const elk_lock_ticket_t *t)
{
    const elk_lock_round_t *r = t->kind == LK_RELEASE ? &t->lock->rel : &t->lock->fg;
    return r->kind == t->kind && r->seq == t->seq;
}

size_t elk_lock__batch_collect(elk_client_t *client, size_t node, uint64_t now,
                               elk_lock_ticket_t **queue, elk_lock_ticket_t **out)
{
    elk_node_t *nd = &client->fleet->nodes[node];
    elk_lock_ticket_t **pp = &queue[node];
    elk_lock_ticket_t *head = NULL;
    elk_lock_ticket_t **tail = &head;
    size_t room;
    size_t used = 0;
    size_t n = 0;

    *out = NULL;
    while (*pp != NULL && !lk_batch_live(*pp)) {
        elk_lock_ticket_t *t = *pp;
        *pp = t->next;
        t->in_use = 0;
    }
    if (*pp == NULL) {
        return 0;
    }
    room = elk_node_tx_room(nd);
    used = lk_batch_fixed(client, *pp);
    if ((*pp)->next != NULL && room < used + (size_t)ELK_LOCK_BATCH_MAX * lk_batch_item(*pp)) {
        /* a batch, and what is queued and not written yet leaves less than a full request's
         * room: write that first, so that the batch goes in as few requests as the block
         * holds (one lease alone is sent as without batching) */
        (void)elk_node_flush(nd, now);
        room = elk_node_tx_room(nd);
    }
    while (*pp != NULL && n < (size_t)ELK_LOCK_BATCH_MAX) {
        elk_lock_ticket_t *t = *pp;
        size_t item = lk_batch_item(t);
        if (!lk_batch_live(t)) {
            *pp = t->next;
            t->in_use = 0;
        } else if (n == 0u || (lk_batch_fits(head, t) && used + item <= room)) {
            /* the first always goes: alone, it is the ordinary EXTEND or RELEASE */
            *pp = t->next;
            t->next = NULL;
            *tail = t;
            tail = &t->next;
            used += item;
            n++;
        } else {
            pp = &t->next;
        }
    }
    *out = head;
    return n;
}

/* RELEASE_BATCH's arguments after EVAL and its text: numkeys, the lock keys, then the values
 * released, in chain order (the order of the reply's results). Returns argc; *limit gets
 * the latest limit (each release round still ends at its own, lock_engine.c). */
static size_t lk_release_args(elk_resp_arg_t *argv, const elk_lock_ticket_t *head, size_t n,
                              uint64_t *limit)
{
    const elk_lock_ticket_t *t;
    size_t k = 0;
    argv[2].is_int = true;
    argv[2].ival = (int64_t)n;
    for (t = head; t != NULL; t = t->next, k++) {
        const elk_lock_t *lock = t->lock;
        lk_arg(&argv[3 + k], lock->key, lock->key_len);
        lk_arg(&argv[3 + n + k], lock->rel_value, lock->rel_value_len);
        *limit = lock->rel.limit > *limit ? lock->rel.limit : *limit;
    }
    return 3u + 2u * n;
}

int elk_lock__send_batch(elk_client_t *client, size_t node, elk_lock_ticket_t *head, size_t n,
                         uint64_t now, elk_node_reply_fn on_reply)
{
    static const elk_resp_arg_t verb[2] = {ELK_RESP_ARG_STR("EVALSHA"), ELK_RESP_ARG_STR("EVAL")};
    static const elk_resp_arg_t script[2] = {ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_EXTEND_BATCH_SHA1),
                                             ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_EXTEND_BATCH)};
    static const elk_resp_arg_t release[2] = {ELK_RESP_ARG_STR("EVAL"),
                                              ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_RELEASE_BATCH)};
    elk_resp_arg_t argv[5u + 2u * (size_t)ELK_LOCK_BATCH_MAX];
    char marker[CONFIG_ELK_MAX_KEY_LEN + sizeof(ELK_LOCK_MARKER_NAME)];
    elk_lock_ticket_t *t;
    uint64_t limit = 0;
    size_t k = 0;

    if (n < 2u || n > (size_t)ELK_LOCK_BATCH_MAX) {
        return ELK_E_INVALID_ARG;
    }
    memset(argv, 0, sizeof(argv));
    if (head->kind == LK_RELEASE) {
        /* always the text: the script is not preloaded (a release in bulk is rare, and a
         * SCRIPT LOAD on every connection would change every client's requests) */
        argv[0] = release[0];
        argv[1] = release[1];
        k = lk_release_args(argv, head, n, &limit);
        return elk_node_send(&client->fleet->nodes[node], now, argv, k, limit, on_reply, head);
    }
    argv[0] = verb[head->eval != 0u];
    argv[1] = script[head->eval != 0u];
    argv[2].is_int = true;
    argv[2].ival = (int64_t)n + 1;
    lk_arg(&argv[3], marker, elk_lock__marker_key(client, marker));
    argv[4 + n].is_int = true;
    argv[4 + n].ival = (int64_t)head->lock->cfg.ttl_ms;
    for (t = head; t != NULL; t = t->next, k++) {
        /* KEYS[k + 2] and ARGV[k + 2]: lease k's key and value, in chain order, which is
         * the order of the reply's results */
        lk_arg(&argv[4 + k], t->lock->key, t->lock->key_len);
        lk_arg(&argv[5 + n + k], t->lock->value, t->lock->value_len);
        /* the latest limit: each round still ends at its own (lock_engine.c) */
        limit = t->lock->fg.limit > limit ? t->lock->fg.limit : limit;
        /* sent now: the lower bound of the reply's server TIME (a renewal kept queued for
         * a free slot goes out after its round's t_send, which the deadline counts from:
         * that is only earlier, never later) */
        t->t_send = now;
    }
    return elk_node_send(&client->fleet->nodes[node], now, argv, 5u + 2u * n, limit, on_reply,
                         head);
}

void elk_lock__batch_decode(const elk_lock_ticket_t *head, int status,
                            const elk_resp_reply_t *reply, elk_lock_reply_t *out)
{
    const elk_lock_ticket_t *t;
    const elk_resp_node_t *top = status == ELK_OK ? elk_resp_reply_top(reply, NULL) : NULL;
    const elk_resp_node_t *v;
    size_t n = 0;
    size_t m;
    size_t i;

    out->status = status;
    out->top = top;
    out->res = NULL;
    out->server_ms = 0;
    out->marker_ms = 0;
    for (t = head; t != NULL; t = t->next) {
        n++;
    }
    /* EXTEND_BATCH: {server_us, marker_ms, r_1 .. r_n}, an array of exactly n + 2 integers;
     * RELEASE_BATCH: {r_1 .. r_n}, n integers (no clock, no marker) */
    m = head->kind == LK_RELEASE ? n : n + 2u;
    if (top == NULL || top->type != ELK_RESP_ARRAY || top->integer != (int64_t)m ||
        top->subtree != m) {
        return;
    }
    v = top + 1;
    for (i = 0; i < m; i++) {
        if (v[i].type != ELK_RESP_INTEGER) {
            return;
        }
    }
    if (head->kind == LK_RELEASE) {
        out->res = v;
        return;
    }
    out->server_ms = v[0].integer > 0 ? v[0].integer / 1000 : 0;
    out->marker_ms = v[1].integer > 0 ? v[1].integer : 0;
    out->res = v + 2;
}

void elk_lock__batch_reply_of(elk_lock_ticket_t *t, const elk_lock_reply_t *batch, size_t k,
                              elk_lock_reply_t *out)
{
    *out = *batch;
    out->res = batch->res != NULL ? batch->res + k : NULL;
    t->in_use = 0;
}
