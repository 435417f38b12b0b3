/* SPDX-License-Identifier: MIT */
/* A fleet: several nodes driven from one loop. */
#include "node_internal.h"

int elk_fleet_init(elk_fleet_t *fleet, elk_node_t *nodes, size_t count)
{
    size_t i;
    if (fleet == NULL || nodes == NULL || count == 0u || count > CONFIG_ELK_MAX_NODES) {
        return ELK_E_INVALID_ARG;
    }
    fleet->nodes = nodes;
    fleet->count = count;
    for (i = 0; i < count; i++) {
        nodes[i].index = (uint8_t)i;
    }
    return ELK_OK;
}

/* Run fn (elk_node_poll or elk_node_flush) on every node; the earliest next time. */
static ELK_NODE_NOINLINE uint64_t elk_fleet_each(elk_fleet_t *fleet, uint64_t now,
                                                 uint64_t (*fn)(elk_node_t *node, uint64_t now))
{
    uint64_t next = UINT64_MAX;
    size_t i;
    if (fleet == NULL) {
        return next;
    }
    for (i = 0; i < fleet->count; i++) {
        uint64_t t = fn(&fleet->nodes[i], now);
        if (t < next) {
            next = t;
        }
    }
    return next;
}

uint64_t elk_fleet_poll(elk_fleet_t *fleet, uint64_t now)
{
    return elk_fleet_each(fleet, now, elk_node_poll);
}

uint64_t elk_fleet_flush(elk_fleet_t *fleet, uint64_t now)
{
    return elk_fleet_each(fleet, now, elk_node_flush);
}

size_t elk_fleet_waits(const elk_fleet_t *fleet, elk_wait_t *out, size_t max)
{
    size_t i, n = 0;
    if (fleet == NULL || out == NULL) {
        return 0;
    }
    for (i = 0; i < fleet->count && n < max; i++) {
        unsigned ev = ELK_WAIT_NONE;
        int fd = elk_node_wait(&fleet->nodes[i], &ev);
        if (fd >= 0) {
            out[n].fd = fd;
            out[n].events = ev;
            n++;
        }
    }
    return n;
}

size_t elk_fleet_ready_count(const elk_fleet_t *fleet)
{
    size_t i, n = 0;
    if (fleet == NULL) {
        return 0;
    }
    for (i = 0; i < fleet->count; i++) {
        if (elk_node_is_ready(&fleet->nodes[i])) {
            n++;
        }
    }
    return n;
}

size_t elk_fleet_quorum(const elk_fleet_t *fleet)
{
    return fleet != NULL ? fleet->count / 2u + 1u : 0u;
}
