/* SPDX-License-Identifier: MIT */
/*
 * Vote hygiene: masters that restarted (empty, or maybe) or whose clock jumped ahead get
 * no vote until the longest lease could have expired (docs/design.md "Masters that
 * restart or jump").
 *
 * SKELETON (lead): the interface only; the probe, the quarantine and the clock check are
 * being written (issue 20). Until then a node votes as the safety check says.
 */
#include "lock_internal.h"

void elk_lock__hygiene_start(elk_client_t *client, size_t i, uint64_t now)
{
    (void)client;
    (void)i;
    (void)now;
}

int elk_lock__node_vote(const elk_client_t *client, size_t i, uint8_t kind, uint64_t now)
{
    (void)kind;
    (void)now;
    if (client->node_unsafe[i]) {
        return client->node_unsafe[i] == 1u ? ELK_E_UNSAFE_SERVER : ELK_E_SERVER_UNCHECKED;
    }
    return ELK_OK;
}

bool elk_lock__clock_ok(elk_client_t *client, const elk_lock_t *lock, size_t i, int64_t server_ms,
                        uint64_t t_send, uint64_t now)
{
    (void)client;
    (void)lock;
    (void)i;
    (void)server_ms;
    (void)t_send;
    (void)now;
    return true;
}

uint64_t elk_client_node_quarantine(const elk_client_t *client, size_t node)
{
    (void)client;
    (void)node;
    return 0;
}

const char *elk_client_node_hygiene(const elk_client_t *client, size_t node)
{
    if (client == NULL || client->fleet == NULL || node >= client->fleet->count) {
        return "";
    }
    return "off";
}
