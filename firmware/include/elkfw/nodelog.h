/* SPDX-License-Identifier: MIT */
/*
 * How much elkd says about a node that is down: one warning when it goes down (the
 * library's own line), then at most one summary per interval ("still down, 12 attempts,
 * last error ..."), and one line when it is back. Every reconnect attempt in between goes
 * to debug. Pure (the caller passes the time), so the policy is tested alone.
 */
#ifndef ELKFW_NODELOG_H
#define ELKFW_NODELOG_H

#include <stdbool.h>
#include <stdint.h>

typedef struct elkfw_nodelog {
    bool down; /* a failure was reported and the node has not been ready since */
    uint64_t down_since;
    uint64_t next_summary;
    uint32_t attempts;   /* failed attempts since it went down */
    uint32_t summarized; /* attempts already in a summary */
    int last_err;
} elkfw_nodelog_t;

/* A connection attempt or connection failed with err at now. */
void elkfw_nodelog_failed(elkfw_nodelog_t *n, int err, uint64_t now, uint32_t interval_ms);

/* The node is ready. Returns true if it had been down: the caller logs that it is back
 * (attempts and down_since still tell for how long), then the record is reset. */
bool elkfw_nodelog_ready(elkfw_nodelog_t *n);

/* True if the node's own lines should go to debug now (it is down and that was said). */
bool elkfw_nodelog_quiet(const elkfw_nodelog_t *n);

/* True if a "still down" summary is due at now (new attempts since the last one and the
 * interval passed); marks it given. Lowers *next to the next time to ask. */
bool elkfw_nodelog_summary_due(elkfw_nodelog_t *n, uint64_t now, uint32_t interval_ms,
                               uint64_t *next);

#endif /* ELKFW_NODELOG_H */
