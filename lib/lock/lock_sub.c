/* SPDX-License-Identifier: MIT */
/*
 * The release channel: a waiting lock SUBSCRIBEs to "<key>:released" on every node (on
 * the command connection of a RESP3 node, else on the RESP2 subscriber connection if
 * there is one), and a release message of another holder's value wakes it at once.
 */
#include <string.h>

#include "lock_internal.h"

/* argv of "<cmd> <channel>" ((UN)SUBSCRIBE, cmd_len bytes), the channel written into ch. */
static LK_NOINLINE void lk_channel_argv(const elk_lock_t *lock, elk_resp_arg_t *argv, char *ch,
                                        const char *cmd, size_t cmd_len)
{
    argv[0] = elk_resp_arg_bytes((const uint8_t *)cmd, cmd_len);
    argv[1] = elk_resp_arg_bytes((const uint8_t *)ch,
                                 elk_lock__key_with(lock, ELK_LOCK_CHANNEL_SUFFIX, ch));
}

/* SUBSCRIBE lock's channel for fleet node i where the node can take it. Records where,
 * so UNSUBSCRIBE goes to the same connection. */
static void lk_sub_one(elk_lock_t *lock, size_t i)
{
    elk_client_t *c = lock->client;
    char ch[CONFIG_ELK_MAX_KEY_LEN + 16u];
    elk_resp_arg_t argv[2];
    elk_node_t *n = &c->fleet->nodes[i];
    elk_node_t *s = c->cfg.subscribers != NULL ? &c->cfg.subscribers->nodes[i] : NULL;
    if ((lock->sub_mask | lock->sub2_mask) & LK_BIT(i)) {
        return;
    }
    lk_channel_argv(lock, argv, ch, "SUBSCRIBE", 9u);
    /* elk_node_send_noreply refuses a node that is not READY (and a NULL s). */
    if (elk_node_is_ready(n) && elk_node_stats(n)->resp3) {
        if (elk_node_send_noreply(n, argv, 2) == ELK_OK) {
            lock->sub_mask |= LK_BIT(i);
        }
    } else if (elk_node_send_noreply(s, argv, 2) == ELK_OK) {
        lock->sub2_mask |= LK_BIT(i);
    }
}

void elk_lock__subscribe(elk_lock_t *lock)
{
    size_t i;
    if (!lock->cfg.use_release_channel || lock->subscribed) {
        return;
    }
    lock->subscribed = true;
    for (i = 0; i < lock->client->fleet->count; i++) {
        lk_sub_one(lock, i);
    }
}

/* A connection (command or subscriber) of node i (re)connected: its subscriptions are
 * gone, SUBSCRIBE again if lock is still waiting on the release channel. */
void elk_lock__resubscribe(elk_lock_t *lock, size_t node)
{
    if (!lock->subscribed || lock->state != ELK_LOCK_WAITING) {
        return;
    }
    lock->sub_mask &= ~LK_BIT(node);
    lock->sub2_mask &= ~LK_BIT(node);
    lk_sub_one(lock, node);
}

/* UNSUBSCRIBE on whichever connection of each node has the subscription. */
void elk_lock__unsubscribe(elk_lock_t *lock)
{
    elk_client_t *c = lock->client;
    char ch[CONFIG_ELK_MAX_KEY_LEN + 16u];
    elk_resp_arg_t argv[2];
    size_t i;
    if (!lock->subscribed) {
        return;
    }
    lock->subscribed = false;
    lk_channel_argv(lock, argv, ch, "UNSUBSCRIBE", 11u);
    /* elk_node_send_noreply refuses a node that is not READY. */
    for (i = 0; i < c->fleet->count; i++) {
        if ((lock->sub_mask & LK_BIT(i)) != 0u) {
            (void)elk_node_send_noreply(&c->fleet->nodes[i], argv, 2);
        }
        if ((lock->sub2_mask & LK_BIT(i)) != 0u) {
            (void)elk_node_send_noreply(&c->cfg.subscribers->nodes[i], argv, 2);
        }
    }
    lock->sub_mask = 0;
    lock->sub2_mask = 0;
}

static bool lk_is_own_value(const elk_lock_t *l, const uint8_t *p, size_t n)
{
    if (p == NULL || n == 0u) {
        return false;
    }
    return (n == l->value_len && memcmp(p, l->value, n) == 0) ||
        (n == l->rel_value_len && memcmp(p, l->rel_value, n) == 0);
}

void elk_lock__release_message(elk_client_t *client, const uint8_t *channel, size_t len,
                               const uint8_t *payload, size_t plen)
{
    size_t i;
    for (i = 0; i < client->lock_count; i++) {
        elk_lock_t *l = client->locks[i];
        size_t sl = sizeof(ELK_LOCK_CHANNEL_SUFFIX) - 1u;
        /* A message during a retry round counts too: that round may have been answered
         * "busy" just before the release, and must be followed by another at once. */
        if ((l->state != ELK_LOCK_WAITING && !(l->fg.kind == LK_ACQUIRE && l->subscribed)) ||
            len != (size_t)l->key_len + sl) {
            continue;
        }
        /* Our own partial locks, deleted after a failed round, are no news: waking on
         * them would spin a waiter on its own releases. */
        if (memcmp(channel, l->key, l->key_len) == 0 &&
            memcmp(channel + l->key_len, ELK_LOCK_CHANNEL_SUFFIX, sl) == 0 &&
            !lk_is_own_value(l, payload, plen)) {
            l->wake_now = true;
            client->dirty = true;
        }
    }
}
