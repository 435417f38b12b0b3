/* SPDX-License-Identifier: MIT */
/*
 * The per-node session records of a client (elk_lock_session_t, one per fleet node) and
 * what they say together: whether a node may vote, and the quorum. The lowest of the
 * vote policies: the vote hygiene (lock_hygiene.c) and the safety check (lock_safety.c)
 * write a record, the round (lock_round.c) and the client ask it here. Calls nothing of
 * lib/lock.
 */
#include <stddef.h>

#include "lock_internal.h"

elk_client_t *elk_lock__session_client(elk_lock_session_t *s)
{
    /* s is client->nodes[s->index]: back to the array's start, then to the client. */
    return (elk_client_t *)(void *)((char *)(s - s->index) - offsetof(elk_client_t, nodes));
}

uint64_t elk_lock__received_at(const elk_client_t *client, const elk_node_t *node)
{
    uint64_t t = elk_node_received_at(node);
    return t > client->now ? t : client->now;
}

int elk_lock__node_vote(const elk_client_t *client, size_t i, uint8_t kind, uint64_t now)
{
    const elk_lock_session_t *s = &client->nodes[i];
    /* pending and until are only ever set with vote_hygiene on */
    if (kind != LK_RELEASE) {
        if (s->hygiene.pending) {
            return ELK_E_SERVER_UNCHECKED;
        }
        if (now < s->hygiene.until) {
            return ELK_E_NODE_QUARANTINED;
        }
    }
    if (s->unsafe) {
        return s->unsafe == 1u ? ELK_E_UNSAFE_SERVER : ELK_E_SERVER_UNCHECKED;
    }
    return ELK_OK;
}

size_t elk_client_quorum(const elk_client_t *client)
{
    if (client == NULL || client->fleet == NULL) {
        return 1;
    }
    /* One quorum rule for the whole library: the fleet's. */
    return elk_fleet_quorum(client->fleet);
}
